/* Measuring the ceilings: the FMA micro-kernels and the triad on every CPU
 * the process may use (one pinned thread per CPU), and each built backend's
 * GEMM through the public ntp_run on a one-layer topology.
 *
 * Every figure is the best of several rounds: a ceiling is what the machine
 * can reach, and anything that slows one round (an interrupt, another
 * process) only makes it look lower. Rounds are synchronised with a barrier
 * and timed from the first thread's start to the last thread's end. */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend-impl.h"
#include "core/ctx-impl.h"
#include "ntprof/ntprof.h"
#include "machine-cuda-impl.h"
#include "machine-impl.h"
#include "measure-impl.h"

#define ROUNDS 5

void ntp_machine_opts_default(ntp_machine_opts *o)
{
    memset(o, 0, sizeof *o);
    o->seconds = 0.25;
    o->gemm = true;
}

/* --- a team of pinned threads ---------------------------------------------------------- */

typedef struct team team;
typedef void (*team_fn)(team *tm, int id);

struct team {
    int n;
    int cpus[CPU_SETSIZE];
    pthread_barrier_t barrier;
    team_fn fn;
    void *arg;
    atomic_bool failed;         /* a worker could not allocate */
    /* Workers wait for `go` before touching the barrier, so a team whose
     * last thread failed to start can be sent home instead of waiting at
     * a barrier that would never open. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go;                     /* 0 wait, 1 run, -1 abandon */
};

typedef struct worker {
    team *tm;
    int id;
} worker;

static void *worker_main(void *p)
{
    worker *w = p;
    team *tm = w->tm;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(tm->cpus[w->id], &set);
    /* Pinning may be refused (a restricted container); the measurement
     * then runs unpinned, which can only make it look lower. */
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    pthread_mutex_lock(&tm->mu);
    while (tm->go == 0)
        pthread_cond_wait(&tm->cv, &tm->mu);
    int go = tm->go;
    pthread_mutex_unlock(&tm->mu);
    if (go > 0)
        tm->fn(tm, w->id);
    return NULL;
}

/* The CPUs this process may run on, at most `limit` of them (0: all). */
static int team_cpus(team *tm, int limit)
{
    cpu_set_t set;
    tm->n = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        for (int c = 0; c < CPU_SETSIZE && (limit <= 0 || tm->n < limit); c++)
            if (CPU_ISSET(c, &set))
                tm->cpus[tm->n++] = c;
    }
    if (tm->n == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        for (int c = 0; c < (n > 0 ? n : 1) && c < CPU_SETSIZE && (limit <= 0 || tm->n < limit); c++)
            tm->cpus[tm->n++] = c;
    }
    return tm->n;
}

static void team_release(team *tm, int go)
{
    pthread_mutex_lock(&tm->mu);
    tm->go = go;
    pthread_cond_broadcast(&tm->cv);
    pthread_mutex_unlock(&tm->mu);
}

static ntp_status team_run(ntp_ctx *ctx, team *tm, team_fn fn, void *arg)
{
    tm->fn = fn;
    tm->arg = arg;
    tm->failed = false;
    tm->go = 0;
    pthread_t *th = calloc((size_t)tm->n, sizeof *th);
    worker *ws = calloc((size_t)tm->n, sizeof *ws);
    if (!th || !ws) {
        free(th);
        free(ws);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    if (pthread_barrier_init(&tm->barrier, NULL, (unsigned)tm->n) != 0) {
        free(th);
        free(ws);
        return ntp__error(ctx, NTP_STATUS_INTERNAL, "machine: cannot create a barrier");
    }
    pthread_mutex_init(&tm->mu, NULL);
    pthread_cond_init(&tm->cv, NULL);
    /* Worker 0 runs on this thread, so a team of one starts nothing. */
    int started = 1;
    for (int i = 1; i < tm->n; i++) {
        ws[i] = (worker){tm, i};
        if (pthread_create(&th[i], NULL, worker_main, &ws[i]) != 0)
            break;
        started++;
    }
    ntp_status st = NTP_STATUS_OK;
    if (started < tm->n) {
        team_release(tm, -1);
        st = ntp__error(ctx, NTP_STATUS_INTERNAL, "machine: cannot start %d threads", tm->n);
    } else {
        team_release(tm, 1);
        cpu_set_t old, set;
        bool restore = sched_getaffinity(0, sizeof old, &old) == 0;
        CPU_ZERO(&set);
        CPU_SET(tm->cpus[0], &set);
        sched_setaffinity(0, sizeof set, &set);
        fn(tm, 0);
        if (restore)
            sched_setaffinity(0, sizeof old, &old);
    }
    for (int i = 1; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&tm->barrier);
    pthread_mutex_destroy(&tm->mu);
    pthread_cond_destroy(&tm->cv);
    free(th);
    free(ws);
    if (st == NTP_STATUS_OK && tm->failed)
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "machine: out of memory for the triad arrays");
    return st;
}

/* --- peak FLOP/s ------------------------------------------------------------------------- */

typedef struct fma_job {
    ntp_isa isa;
    ntp_kernel_prec prec;
    int64_t iters;              /* per thread per round */
    double ops;                 /* per thread per round */
    double best_s;              /* fastest round */
    double t0;
    double sink;
} fma_job;

static void fma_worker(team *tm, int id)
{
    fma_job *j = tm->arg;
    double sink = 0;
    for (int r = 0; r < ROUNDS; r++) {
        pthread_barrier_wait(&tm->barrier);
        if (id == 0)
            j->t0 = ntp__now_us();
        double ops = ntp__fma_run(j->isa, j->prec, j->iters, &sink);
        pthread_barrier_wait(&tm->barrier);
        if (id == 0) {
            double s = (ntp__now_us() - j->t0) / 1e6;
            if (s > 0 && s < j->best_s)
                j->best_s = s;
            j->ops = ops;
            j->sink += sink;
        }
    }
}

/* Iterations that take about `seconds` on one thread. */
static int64_t calibrate_fma(ntp_isa isa, ntp_kernel_prec p, double seconds)
{
    double sink;
    int64_t iters = 1000;
    for (;;) {
        double t0 = ntp__now_us();
        ntp__fma_run(isa, p, iters, &sink);
        double s = (ntp__now_us() - t0) / 1e6;
        if (s > 0.02 || iters > ((int64_t)1 << 40)) {
            double want = (double)iters * seconds / (s > 0 ? s : 1e-9);
            return want < 1000 ? 1000 : (int64_t)want;
        }
        iters *= 4;
    }
}

static ntp_status measure_peaks(ntp_ctx *ctx, team *tm, const ntp_machine_opts *o, ntp_ceilings *c)
{
    ntp_isa isa = ntp__isa_best();
    for (int p = 0; p < NTP_KPREC_COUNT && c->n_peaks < NTP_MACHINE_MAX_PEAKS; p++) {
        if (!ntp__fma_supported(isa, (ntp_kernel_prec)p))
            continue;
        fma_job j = {.isa = isa, .prec = (ntp_kernel_prec)p, .best_s = INFINITY};
        j.iters = calibrate_fma(isa, j.prec, o->seconds / ROUNDS);
        ntp_status st = team_run(ctx, tm, fma_worker, &j);
        if (st)
            return st;
        if (!isfinite(j.best_s))
            continue;
        ntp_peak *pk = &c->peaks[c->n_peaks++];
        snprintf(pk->precision, sizeof pk->precision, "%s", ntp__kprec_name(j.prec));
        pk->gflops = j.ops * tm->n / j.best_s / 1e9;
        snprintf(pk->method, sizeof pk->method, "%s micro-kernel, %s, %d thread%s",
                 p == NTP_KPREC_F64 || p == NTP_KPREC_F32 ? "FMA" : "dot-product",
                 ntp__isa_name(isa), tm->n, tm->n == 1 ? "" : "s");
    }
    return NTP_STATUS_OK;
}

/* --- bandwidth ----------------------------------------------------------------------------- */

typedef struct triad_job {
    ntp_isa isa;
    int64_t n;                  /* doubles per array per thread */
    int reps;                   /* passes per round */
    double best_s;
    double t0;
} triad_job;

static void triad_worker(team *tm, int id)
{
    triad_job *j = tm->arg;
    size_t bytes = (size_t)j->n * sizeof(double);
    /* Each thread allocates and first touches its own arrays, so they live
     * on its NUMA node and in its caches. */
    double *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes), *c = aligned_alloc(64, bytes);
    bool ok = a && b && c;
    if (!ok)
        tm->failed = true;
    for (int64_t i = 0; ok && i < j->n; i++) {
        a[i] = 0;
        b[i] = 1.0;
        c[i] = 2.0;
    }
    for (int r = 0; r < ROUNDS + 1; r++) {
        pthread_barrier_wait(&tm->barrier);
        if (id == 0)
            j->t0 = ntp__now_us();
        if (ok && !tm->failed)
            ntp__triad_run(j->isa, a, b, c, j->n, j->reps);
        pthread_barrier_wait(&tm->barrier);
        /* Round 0 warms the caches and the TLB; it is not counted. */
        if (id == 0 && r > 0) {
            double s = (ntp__now_us() - j->t0) / 1e6;
            if (s > 0 && s < j->best_s)
                j->best_s = s;
        }
    }
    free(a);
    free(b);
    free(c);
}

/* The capacity one thread may use of a data/unified cache at `level`:
 * its instance's size shared among the threads that run under it. */
static int64_t cache_share(const ntp_machine_info *m, int level, int threads)
{
    for (int i = 0; i < m->n_caches; i++) {
        const ntp_cache_info *ci = &m->caches[i];
        if (ci->level != level || strcmp(ci->type, "instruction") == 0)
            continue;
        int per = ci->count > 0 ? (threads + ci->count - 1) / ci->count : threads;
        if (per > ci->shared_by)
            per = ci->shared_by;
        if (per < 1)
            per = 1;
        return ci->size_bytes / per;
    }
    return 0;
}

static ntp_status measure_level(ntp_ctx *ctx, team *tm, const ntp_machine_opts *o, const char *name,
                                int64_t per_thread_bytes, ntp_ceilings *c)
{
    triad_job j = {.isa = ntp__isa_best(), .best_s = INFINITY};
    j.n = per_thread_bytes / 24;
    j.n -= j.n % 8;
    if (j.n < 64)
        j.n = 64;
    /* Passes per round for about seconds / ROUNDS at a guessed 10 GB/s per
     * thread in DRAM and faster in caches: close enough, rounds only need
     * to be long against the clock and the barrier. */
    double pass_s = 24.0 * (double)j.n / 10e9;
    double want = o->seconds / ROUNDS / pass_s;
    j.reps = want < 1 ? 1 : want > 1e7 ? 10000000 : (int)want;
    ntp_status st = team_run(ctx, tm, triad_worker, &j);
    if (st)
        return st;
    if (!isfinite(j.best_s) || c->n_levels >= NTP_MACHINE_MAX_LEVELS)
        return NTP_STATUS_OK;
    ntp_bandwidth *b = &c->levels[c->n_levels++];
    snprintf(b->level, sizeof b->level, "%s", name);
    b->working_set_bytes = 24 * j.n * tm->n;
    b->gbps = 24.0 * (double)j.n * j.reps * tm->n / j.best_s / 1e9;
    return NTP_STATUS_OK;
}

static ntp_status measure_bandwidth(ntp_ctx *ctx, team *tm, const ntp_machine_info *m,
                                    const ntp_machine_opts *o, ntp_ceilings *c)
{
    /* Half of each level's per-thread share: well inside it, well outside
     * the level before. Without cache information, common sizes. */
    static const char *const names[] = {"L1", "L2", "L3"};
    int64_t prev = 0, llc_total = 0;
    for (int level = 1; level <= 3; level++) {
        int64_t share = cache_share(m, level, tm->n);
        if (share <= 0 || share / 2 <= prev)
            continue;
        ntp_status st = measure_level(ctx, tm, o, names[level - 1], share / 2, c);
        if (st)
            return st;
        prev = share / 2;
        for (int i = 0; i < m->n_caches; i++)
            if (m->caches[i].level == level && strcmp(m->caches[i].type, "instruction") != 0)
                llc_total = m->caches[i].size_bytes * m->caches[i].count;
    }
    /* DRAM: four times every last-level cache together, at least 128 MiB,
     * and no more than an eighth of memory. */
    int64_t total = 4 * llc_total;
    if (total < ((int64_t)128 << 20))
        total = (int64_t)128 << 20;
    if (m->memory_bytes > 0 && total > m->memory_bytes / 8)
        total = m->memory_bytes / 8;
    return measure_level(ctx, tm, o, "DRAM", total / tm->n, c);
}

/* --- GEMM through the backends ------------------------------------------------------------ */

/* One fc layer without bias: [M, K] x [K, N] with M = N = K = size. */
static ntp_status gemm_run(ntp_ctx *ctx, const char *backend, const char *prec, int size,
                           int threads, int iterations, double min_time, double *gflops)
{
    char xml[512];
    snprintf(xml, sizeof xml,
             "<topology name=\"ceiling-gemm\" precision=\"%s\" batch=\"%d\">"
             "<input name=\"x\" shape=\"${batch},%d\" dtype=\"f32\"/>"
             "<fc name=\"gemm\" units=\"%d\" bias=\"false\"/></topology>",
             prec, size, size, size);
    ntp_graph *g = NULL;
    ntp_run_result *r = NULL;
    ntp_run_opts ro;
    ntp_run_opts_default(&ro);
    ro.backend = backend;
    ro.threads = threads;
    ro.warmup = 1;
    ro.iterations = iterations;
    ro.min_time_s = min_time;
    ro.accuracy = false;
    ntp_status st = ntp_graph_load_xml_memory(ctx, xml, strlen(xml), "ceiling-gemm", NULL, &g);
    if (!st)
        st = ntp_run(ctx, g, &ro, &r);
    *gflops = 0;
    for (int i = 0; !st && i < r->n_layers; i++)
        if (strcmp(r->layers[i].name, "gemm") == 0 && r->layers[i].gflops > *gflops)
            *gflops = r->layers[i].gflops;
    ntp_run_result_free(r);
    ntp_graph_free(g);
    return st;
}

static void measure_gemm(const ntp_machine_opts *o, int threads, ntp_ceilings *c)
{
    /* A context of its own: a backend that cannot run a precision is
     * skipped, and its error or warnings are none of the caller's. */
    ntp_ctx *gctx = ntp_ctx_init();
    if (!gctx)
        return;
    static const char *const precs[] = {"f32", "bf16", "i8"};
    char list[256];
    snprintf(list, sizeof list, "%s", ntp_backends());
    for (size_t p = 0; p < sizeof precs / sizeof precs[0]; p++) {
        double best = 0;
        char best_backend[64] = "";
        char *save = NULL;
        char names[256];
        memcpy(names, list, sizeof names);
        for (char *b = strtok_r(names, ", ", &save); b; b = strtok_r(NULL, ", ", &save)) {
            /* Size the problem to the backend: a 256^3 probe, then the
             * largest of 256, 512, 1024 whose pass fits a quarter of the
             * measurement time. */
            double probe = 0;
            if (gemm_run(gctx, b, precs[p], 256, threads, 1, 0, &probe) || probe <= 0)
                continue;
            int size = 256;
            for (int s = 512; s <= 1024; s *= 2)
                if (2.0 * s * s * s / (probe * 1e9) < o->seconds / 4)
                    size = s;
            double gf = 0;
            if (gemm_run(gctx, b, precs[p], size, threads, 3, o->seconds / 2, &gf) == NTP_STATUS_OK &&
                gf > best) {
                best = gf;
                snprintf(best_backend, sizeof best_backend, "%s (%dx%dx%d)", b, size, size, size);
            }
        }
        if (best > 0 && c->n_gemm < NTP_MACHINE_MAX_PEAKS) {
            ntp_peak *pk = &c->gemm[c->n_gemm++];
            snprintf(pk->precision, sizeof pk->precision, "%s", precs[p]);
            pk->gflops = best;
            snprintf(pk->method, sizeof pk->method, "GEMM on %s", best_backend);
        }
    }
    ntp_ctx_free(gctx);
}

/* --- the GPU ------------------------------------------------------------------------------ */

/* GPU 0's ceilings when the cuda backend is built and can run here; else
 * none, with the reason in gpu_note. A GPU that fails to measure does not
 * cost the CPU's ceilings: its error becomes the note. */
static void measure_gpus(const ntp_machine_opts *o, ntp_ceilings *c)
{
    const ntp_backend_i *be = ntp__backend_find("cuda");
    char why[192];
    if (!be) {
        snprintf(c->gpu_note, sizeof c->gpu_note, "built without the CUDA backend");
        return;
    }
    if (be->available && !be->available(why, sizeof why)) {
        snprintf(c->gpu_note, sizeof c->gpu_note, "backend 'cuda': %s", why);
        return;
    }
    ntp_ctx *gctx = ntp_ctx_init();
    if (!gctx) {
        snprintf(c->gpu_note, sizeof c->gpu_note, "out of memory");
        return;
    }
    ntp_gpu_ceilings g;
    if (ntp__gpu_ceilings_measure(gctx, o->seconds, &g) == NTP_STATUS_OK)
        c->gpus[c->n_gpus++] = g;
    else
        snprintf(c->gpu_note, sizeof c->gpu_note, "%s", ntp_ctx_errmsg(gctx));
    ntp_ctx_free(gctx);
}

ntp_status ntp_machine_measure(ntp_ctx *ctx, const ntp_machine_info *m,
                               const ntp_machine_opts *opts, ntp_ceilings *out)
{
    ntp_machine_opts def;
    if (!opts) {
        ntp_machine_opts_default(&def);
        opts = &def;
    }
    memset(out, 0, sizeof *out);
    if (!m)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_machine_measure: no machine");
    if (!(opts->seconds > 0) || opts->seconds > 600 || opts->threads < 0)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "machine: seconds must be in (0, 600] and threads not negative");
    team *tm = calloc(1, sizeof *tm);
    if (!tm)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    team_cpus(tm, opts->threads);
    snprintf(out->machine_key, sizeof out->machine_key, "%s", m->key);
    snprintf(out->ntprof_version, sizeof out->ntprof_version, "%s", ntp_version());
    out->threads = tm->n;
    time_t now = time(NULL);
    struct tm utc;
    if (gmtime_r(&now, &utc))
        strftime(out->measured_at, sizeof out->measured_at, "%Y-%m-%dT%H:%M:%SZ", &utc);
    ntp_status st = measure_peaks(ctx, tm, opts, out);
    if (!st)
        st = measure_bandwidth(ctx, tm, m, opts, out);
    if (!st && opts->gemm)
        measure_gemm(opts, tm->n, out);
    if (!st)
        measure_gpus(opts, out);
    free(tm);
    return st;
}
