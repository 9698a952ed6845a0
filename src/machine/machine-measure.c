/* Measuring the ceilings: the FMA micro-kernels and the triad on every CPU
 * the process may use (one pinned thread per CPU), and each built backend's
 * GEMM through the public ntp_run on a one-layer topology.
 *
 * Every figure is the best of several rounds: a ceiling is what the machine
 * can reach, and anything that slows one round (an interrupt, another
 * process) only makes it look lower. Rounds are synchronised with a barrier
 * and timed from the first thread's start to the last thread's end. */
#include <math.h>
#include <stdarg.h>
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
#include "core/writers-impl.h"
#include "ntprof/ntprof.h"
#include "machine-cuda-impl.h"
#include "measure/machine-impl.h"
#include "measure/measure-impl.h"

/* Trials per ceiling; the ceiling is the best, the spread all of them. */
#define ROUNDS 7

void ntp_machine_opts_default(ntp_machine_opts *o)
{
    memset(o, 0, sizeof *o);
    o->seconds = 0.25;
    o->gemm = true;
}

/* The team of pinned threads and the triad's rounds are in measure/triad.c,
 * which a run's bandwidth probe shares. */
typedef ntp__team team;

/* --- the load around a measurement ---------------------------------------------------- */

static double cputime_s(clockid_t id)
{
    struct timespec ts;
    return clock_gettime(id, &ts) == 0 ? (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 : 0;
}

/* Share of the CPUs' time other processes (and the hypervisor's steal)
 * took over a window sampled by a contention probe (contention.c, the
 * same reading a run's environment gets), 0..1; -1 when unknown. */
static double other_busy(const ntp__contention_probe *p)
{
    ntp_contention c;
    ntp__contention_end(p, &c);
    if (!c.measured)
        return -1;
    double other = c.other + c.steal;
    return other < 0 ? 0 : other > 1 ? 1 : other;
}

/* Other processes above this share of the CPUs during a measurement make
 * its ceiling untrustworthy: with every CPU running a kernel thread, any
 * other runnable process takes time from one of them. */
#define CONTENDED_OTHER 0.10
#define CLEAN_RATIO NTP__TRIAD_CLEAN_RATIO

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Best (of the clean rounds when any), slowest and median of n rounds. */
static void spread_of(const double *v, const bool *clean, int n, double *best,
                      ntp_ceiling_spread *sp)
{
    double sorted[ROUNDS];
    int k = 0;
    double bc = 0, ba = 0;
    for (int i = 0; i < n; i++) {
        if (!(v[i] > 0))
            continue;
        sorted[k++] = v[i];
        if (v[i] > ba)
            ba = v[i];
        if (clean[i] && v[i] > bc)
            bc = v[i];
    }
    qsort(sorted, (size_t)k, sizeof *sorted, cmp_double);
    sp->trials = n;
    sp->min = k ? sorted[0] : 0;
    sp->median = k == 0 ? 0 : k % 2 ? sorted[k / 2] : (sorted[k / 2 - 1] + sorted[k / 2]) / 2;
    *best = bc > 0 ? bc : ba;
}

/* --- peak FLOP/s ------------------------------------------------------------------------- */

typedef struct fma_job {
    ntp_isa isa;
    ntp_kernel_prec prec;
    int64_t iters; /* per thread per round */
    double ops;    /* per thread per round */
    double t0;
    bool smt;              /* threads of the team may share a core */
    double gflops[ROUNDS]; /* per round, all threads */
    bool clean[ROUNDS];    /* no thread lost its CPU during the round */
    double *rate;          /* [thread * ROUNDS + round]: ops / thread CPU time */
    double *ratio;         /* [thread * ROUNDS + round]: CPU time / wall time */
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
        double w0 = ntp__now_us(), c0 = cputime_s(CLOCK_THREAD_CPUTIME_ID);
        double ops = ntp__fma_run(j->isa, j->prec, j->iters, &sink);
        double w = (ntp__now_us() - w0) / 1e6, c = cputime_s(CLOCK_THREAD_CPUTIME_ID) - c0;
        j->ratio[id * ROUNDS + r] = w > 0 ? c / w : 0;
        j->rate[id * ROUNDS + r] = c > 0 ? ops / c / 1e9 : 0;
        pthread_barrier_wait(&tm->barrier);
        if (id == 0) {
            double s = (ntp__now_us() - j->t0) / 1e6;
            j->ops = ops;
            j->clean[r] = true;
            double sum = 0;
            for (int t = 0; t < tm->n; t++) {
                j->clean[r] &= j->ratio[t * ROUNDS + r] >= CLEAN_RATIO;
                sum += j->rate[t * ROUNDS + r];
            }
            /* The FMA units are a core's own: without SMT siblings in the
             * team, each thread's rate over its own CPU time is what its
             * core does while it runs, preempted or not, and the machine's
             * is their sum. Siblings share the units, so with SMT only the
             * round's wall time is honest. */
            j->gflops[r] = j->smt ? (s > 0 ? ops * tm->n / s / 1e9 : 0) : sum;
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
        double t0 = cputime_s(CLOCK_THREAD_CPUTIME_ID);
        ntp__fma_run(isa, p, iters, &sink);
        double s = cputime_s(CLOCK_THREAD_CPUTIME_ID) - t0;
        if (s > 0.02 || iters > ((int64_t)1 << 40)) {
            double want = (double)iters * seconds / (s > 0 ? s : 1e-9);
            return want < 1000 ? 1000 : (int64_t)want;
        }
        iters *= 4;
    }
}

/* One measurement of a kernel on a team: best, spread, load. */
static ntp_status fma_measure(ntp_ctx *ctx, team *tm, bool smt, ntp_isa isa, ntp_kernel_prec p,
                              int64_t iters, double *best, ntp_ceiling_spread *sp)
{
    fma_job j = {.isa = isa, .prec = p, .iters = iters, .smt = smt};
    j.ratio = calloc((size_t)tm->n * ROUNDS, sizeof *j.ratio);
    j.rate = calloc((size_t)tm->n * ROUNDS, sizeof *j.rate);
    if (!j.ratio || !j.rate) {
        free(j.ratio);
        free(j.rate);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    ntp__contention_probe probe;
    ntp__contention_begin(&probe);
    ntp_status st = ntp__team_run(ctx, tm, fma_worker, &j);
    double other = other_busy(&probe);
    free(j.ratio);
    free(j.rate);
    if (st)
        return st;
    spread_of(j.gflops, j.clean, ROUNDS, best, sp);
    sp->other_busy = other;
    bool any_clean = false;
    for (int r = 0; r < ROUNDS; r++)
        any_clean |= j.clean[r];
    sp->contended = !any_clean || sp->other_busy > CONTENDED_OTHER;
    return NTP_STATUS_OK;
}

/* Attempts at a whole-machine peak while it reads as contended. */
#define PEAK_ATTEMPTS 3

static void append_note(ntp_ceilings *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void append_note(ntp_ceilings *c, const char *fmt, ...)
{
    size_t u = strlen(c->note);
    if (u + 3 >= sizeof c->note)
        return;
    if (u > 0) {
        memcpy(c->note + u, "; ", 3);
        u += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->note + u, sizeof c->note - u, fmt, ap);
    va_end(ap);
}

static ntp_status measure_peaks(ntp_ctx *ctx, team *tm, bool smt, const ntp_machine_opts *o,
                                ntp_ceilings *c)
{
    team *one = calloc(1, sizeof *one);
    if (!one)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    ntp__team_cpus(one, 1);
    ntp_status st = NTP_STATUS_OK;
    for (int p = 0; p < NTP_KPREC_COUNT && c->n_peaks < NTP_MACHINE_MAX_PEAKS && !st; p++) {
        /* The best instruction set that has a kernel for p (AVX-512
         * without VNNI still has AVX2's int8 sequence, or AVX-VNNI). */
        ntp_isa isa = ntp__isa_best();
        while (isa != NTP_ISA_SCALAR && !ntp__fma_supported(isa, (ntp_kernel_prec)p))
            isa = (ntp_isa)(isa + 1);
        if (!ntp__fma_supported(isa, (ntp_kernel_prec)p))
            continue;
        int64_t iters = calibrate_fma(isa, (ntp_kernel_prec)p, o->seconds / ROUNDS);
        /* One thread first: a whole machine below it is a busy machine. */
        double best1 = 0, best = 0;
        ntp_ceiling_spread sp1 = {0}, sp = {0};
        if (tm->n > 1 &&
            (st = fma_measure(ctx, one, smt, isa, (ntp_kernel_prec)p, iters, &best1, &sp1)))
            break;
        for (int attempt = 0; attempt < PEAK_ATTEMPTS; attempt++) {
            double b = 0;
            ntp_ceiling_spread s = {0};
            if ((st = fma_measure(ctx, tm, smt, isa, (ntp_kernel_prec)p, iters, &b, &s)))
                break;
            bool below = tm->n > 1 && b < best1;
            s.contended |= below;
            if (attempt == 0 || b > best) {
                best = b;
                sp = s;
            }
            if (!sp.contended)
                break;
        }
        if (st)
            break;
        if (!(best > 0))
            continue;
        int i = c->n_peaks++;
        ntp_peak *pk = &c->peaks[i];
        snprintf(pk->precision, sizeof pk->precision, "%s", ntp__kprec_name((ntp_kernel_prec)p));
        sp.one_thread = tm->n > 1 ? best1 : best;
        if (tm->n > 1 && best < best1) {
            append_note(c,
                        "%s peak at %d threads (%.4g GFLOP/s) below one thread's (%.4g): "
                        "another process held a CPU; the one-thread figure is kept",
                        pk->precision, tm->n, best, best1);
            best = best1;
        } else if (sp.contended) {
            append_note(c, "%s peak: other processes took %.0f%% of the CPUs", pk->precision,
                        100 * (sp.other_busy > 0 ? sp.other_busy : 0));
        }
        pk->gflops = best;
        c->peak_spread[i] = sp;
        snprintf(pk->method, sizeof pk->method, "%s micro-kernel, %s, %d thread%s",
                 ntp__fma_insn(isa, (ntp_kernel_prec)p), ntp__isa_name(isa), tm->n,
                 tm->n == 1 ? "" : "s");
    }
    free(one);
    return st;
}

/* Whether pk was measured on AMX's tile unit (its kernel's name says so,
 * "tdpbf16ps tmm (AMX) micro-kernel, ..."). */
static bool on_amx(const ntp_peak *pk)
{
    return strstr(pk->method, "(AMX)") != NULL;
}

/* The physical ratios of the dot-product units to the FMA units: a
 * vdpbf16ps does twice an FMA's operations per lane and a vpdpbusd four
 * times, and no core issues them faster than its FMAs; AMX's tile unit
 * does 16x and 32x what the FMAs do (NTP_MACHINE_AMX_*). Ceilings above
 * that (with a margin for noise) mean the f32 peak was measured low. */
static void check_ratios(ntp_ceilings *c)
{
    const ntp_peak *f32 = NULL;
    for (int i = 0; i < c->n_peaks; i++)
        if (strcmp(c->peaks[i].precision, "f32") == 0)
            f32 = &c->peaks[i];
    if (!f32 || !(f32->gflops > 0))
        return;
    for (int i = 0; i < c->n_peaks; i++) {
        bool amx = on_amx(&c->peaks[i]);
        double limit = strcmp(c->peaks[i].precision, "bf16") == 0
                           ? (amx ? NTP_MACHINE_AMX_BF16_RATIO : NTP_MACHINE_BF16_RATIO)
                       : strcmp(c->peaks[i].precision, "i8") == 0
                           ? (amx ? NTP_MACHINE_AMX_I8_RATIO : NTP_MACHINE_I8_RATIO)
                           : 0;
        double ratio = c->peaks[i].gflops / f32->gflops;
        if (limit > 0 && ratio > limit) {
            c->peak_spread[f32 - c->peaks].contended = true;
            append_note(c,
                        "%s peak %.1fx the f32 peak, above the %.1fx the units can do: the "
                        "f32 peak was measured low",
                        c->peaks[i].precision, ratio, limit);
        }
    }
}

bool ntp_ceilings_outdated(const ntp_ceilings *c, char *why, size_t len)
{
    for (int p = NTP_KPREC_BF16; c && p <= NTP_KPREC_I8; p++) {
        if (!ntp__fma_supported(NTP_ISA_AMX, (ntp_kernel_prec)p))
            continue;
        const char *name = ntp__kprec_name((ntp_kernel_prec)p);
        for (int i = 0; i < c->n_peaks; i++) {
            const ntp_peak *pk = &c->peaks[i];
            if (strcmp(pk->precision, name) != 0 || on_amx(pk))
                continue;
            /* The method starts with the instruction: "vdpbf16ps zmm
             * micro-kernel, ...". */
            const char *end = strstr(pk->method, " micro-kernel");
            int n = end ? (int)(end - pk->method) : (int)strlen(pk->method);
            snprintf(why, len,
                     "its %s peak was measured with %.*s, this ntprof measures it with %s", name, n,
                     pk->method, ntp__fma_insn(NTP_ISA_AMX, (ntp_kernel_prec)p));
            return true;
        }
    }
    return false;
}

/* --- bandwidth ----------------------------------------------------------------------------- */

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
    int64_t n = ntp__triad_elems(per_thread_bytes);
    /* Passes per round for about seconds / ROUNDS at a guessed 10 GB/s per
     * thread in DRAM and faster in caches: close enough, rounds only need
     * to be long against the clock and the barrier. */
    double pass_s = 24.0 * (double)n / 10e9;
    double want = o->seconds / ROUNDS / pass_s;
    int reps = want < 1 ? 1 : want > 1e7 ? 10000000 : (int)want;
    double best = 0;
    ntp_ceiling_spread sp = {0};
    /* Where the CPUs sat while it ran (docs/run.md#the-memory-bus): a look
     * before and after each attempt. */
    ntp_handoff_check looks;
    ntp__handoff_plan(NTP_BANDWIDTH_PROBE_ON, tm->n, &looks);
    /* A second attempt when the first read as contended. */
    for (int attempt = 0; attempt < 2; attempt++) {
        double look0 = ntp__handoff_look(&looks);
        ntp__contention_probe probe;
        ntp__contention_begin(&probe);
        ntp__triad_rounds tr;
        ntp_status st = ntp__triad_measure(ctx, tm, per_thread_bytes, reps, true, ROUNDS, 0, &tr);
        double other = other_busy(&probe);
        double look1 = ntp__handoff_look(&looks);
        if (st)
            return st;
        double b = 0;
        bool any_clean = false;
        for (int r = 0; r < tr.rounds; r++)
            any_clean |= tr.clean[r];
        ntp_ceiling_spread s = {0};
        spread_of(tr.gbps, tr.clean, tr.rounds, &b, &s);
        s.other_busy = other;
        s.contended = !any_clean || s.other_busy > CONTENDED_OTHER;
        s.handoff_ratio = fmax(look0, look1);
        if (attempt == 0 || b > best) {
            best = b;
            sp = s;
        }
        if (!sp.contended)
            break;
    }
    if (!(best > 0) || c->n_levels >= NTP_MACHINE_MAX_LEVELS)
        return NTP_STATUS_OK;
    int i = c->n_levels++;
    ntp_bandwidth *bw = &c->levels[i];
    snprintf(bw->level, sizeof bw->level, "%s", name);
    bw->working_set_bytes = 24 * n * tm->n;
    bw->gbps = best;
    c->level_spread[i] = sp;
    if (sp.contended)
        append_note(c, "%s bandwidth: other processes took %.0f%% of the CPUs", name,
                    100 * (sp.other_busy > 0 ? sp.other_busy : 0));
    return NTP_STATUS_OK;
}

int ntp__cache_knee(const double *gbps, int n, double dram_gbps)
{
    for (int k = 0; k + 1 < n; k++) {
        if (!(gbps[k] >= NTP_CACHE_KNEE_OVER_DRAM * dram_gbps &&
              gbps[k + 1] <= NTP_CACHE_PLATEAU * gbps[k]))
            continue;
        bool rises = false;
        for (int j = k + 1; j < n; j++)
            rises |= gbps[j] >= NTP_CACHE_KNEE_OVER_DRAM * gbps[k];
        if (!rises)
            return k;
    }
    return -1;
}

/* The last cache level where its triad read no faster than DRAM's: the
 * size reported for it was not held (ntp__cache_knee). Measured again at
 * halved sizes down to twice the level before's, and replaced by the knee
 * where one is found, with a note either way. */
static ntp_status check_last_cache(ntp_ctx *ctx, team *tm, const ntp_machine_opts *o,
                                   ntp_ceilings *c)
{
    int li = ntp__ceilings_level(c, "L3"), di = ntp__ceilings_level(c, "DRAM"),
        pi = ntp__ceilings_level(c, "L2");
    if (li < 0 || di < 0 || tm->n < 1)
        return NTP_STATUS_OK;
    const double dram = c->levels[di].gbps, was = c->levels[li].gbps;
    if (!(dram > 0) || was >= NTP_CACHE_OVER_DRAM * dram)
        return NTP_STATUS_OK;
    const int64_t reported = c->levels[li].working_set_bytes / tm->n;
    const int64_t lowest = pi >= 0 ? 2 * c->levels[pi].working_set_bytes / tm->n : 0;
    enum { MAX_TRIES = 12 };
    ntp_ceilings *tmp = calloc(1, sizeof *tmp);
    if (!tmp)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    double gbps[MAX_TRIES];
    int64_t ws[MAX_TRIES];
    ntp_ceiling_spread sp[MAX_TRIES];
    int n = 0;
    /* Every size down to the floor: a knee is judged against the smaller
     * sizes' readings too (ntp__cache_knee). */
    for (int64_t per = reported / 2; per > lowest && n < MAX_TRIES; per /= 2) {
        tmp->n_levels = 0;
        ntp_status st = measure_level(ctx, tm, o, "L3", per, tmp);
        if (st || tmp->n_levels < 1) {
            free(tmp);
            return st;
        }
        gbps[n] = tmp->levels[0].gbps;
        ws[n] = tmp->levels[0].working_set_bytes;
        sp[n++] = tmp->level_spread[0];
    }
    free(tmp);
    const int knee = ntp__cache_knee(gbps, n, dram);
    char was_s[32];
    ntp__human_bytes((double)reported, was_s, sizeof was_s);
    if (knee >= 0) {
        c->levels[li].working_set_bytes = ws[knee];
        c->levels[li].gbps = gbps[knee];
        c->level_spread[li] = sp[knee];
    }
    snprintf(c->level_spread[li].detail, sizeof c->level_spread[li].detail,
             "at %s a thread, half its share as reported, %.1f GB/s, no faster than DRAM: %s",
             was_s, was, knee >= 0 ? "measured at halved sizes" : "nor at any halved size; kept");
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
    int64_t total = ntp__triad_dram_bytes(llc_total, m->memory_bytes);
    ntp_status st = measure_level(ctx, tm, o, "DRAM", total / tm->n, c);
    return st ? st : check_last_cache(ctx, tm, o, c);
}

/* --- GEMM through the backends ------------------------------------------------------------ */

/* One fc layer without bias: [M, K] x [K, N] with M = N = K = size. The
 * layer's best iteration (GFLOP/s of its fastest time) and its spread;
 * *ran_on is set to the backend that ran it, which is not `backend` when
 * that one does not run fc at this precision and the engine fell back. */
typedef struct gemm_result {
    double best, min, median;
    int trials;
    char ran_on[32];
} gemm_result;

static ntp_status gemm_run(ntp_ctx *ctx, const char *backend, const char *prec, int size,
                           int threads, int iterations, double min_time, gemm_result *out)
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
    memset(out, 0, sizeof *out);
    ntp_status st = ntp_graph_load_xml_memory(ctx, xml, strlen(xml), "ceiling-gemm", NULL, &g);
    if (!st)
        st = ntp_run(ctx, g, &ro, &r);
    for (int i = 0; !st && i < r->n_layers; i++) {
        const ntp_layer_result *l = &r->layers[i];
        if (strcmp(l->name, "gemm") != 0 || l->flops <= 0 || !(l->time_ms.min > 0))
            continue;
        out->best = (double)l->flops / (l->time_ms.min / 1e3) / 1e9;
        out->min = (double)l->flops / (l->time_ms.max / 1e3) / 1e9;
        out->median = (double)l->flops / (l->time_ms.median / 1e3) / 1e9;
        out->trials = (int)l->time_ms.n;
        snprintf(out->ran_on, sizeof out->ran_on, "%s", l->backend ? l->backend : "");
    }
    ntp_run_result_free(r);
    ntp_graph_free(g);
    return st;
}

/* Rounds over the backends: each backend is timed once per round,
 * interleaved with the others, and keeps its best round, so a busy moment
 * cannot hand the ceiling to the wrong backend. */
#define GEMM_ROUNDS 2
#define GEMM_MAX_BACKENDS 8

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
        char names[256];
        memcpy(names, list, sizeof names);
        const char *be[GEMM_MAX_BACKENDS];
        int sizes[GEMM_MAX_BACKENDS], n_be = 0;
        gemm_result res[GEMM_MAX_BACKENDS];
        char *save = NULL;
        for (char *b = strtok_r(names, ", ", &save); b && n_be < GEMM_MAX_BACKENDS;
             b = strtok_r(NULL, ", ", &save)) {
            /* The reference backend computes bf16 and i8 in f32 arithmetic
             * on converted values: no ceiling of those precisions. */
            if (strcmp(b, "ref") == 0 && strcmp(precs[p], "f32") != 0)
                continue;
            /* Size the problem to the backend: a 256^3 probe, then the
             * largest of 256, 512, 1024 whose pass fits a quarter of the
             * measurement time. A backend the engine had to replace (it
             * lacks fc at this precision: BLAS is f32 only) has no
             * ceiling here. */
            gemm_result probe;
            if (gemm_run(gctx, b, precs[p], 256, threads, 1, 0, &probe) || probe.best <= 0 ||
                strcmp(probe.ran_on, b) != 0)
                continue;
            int size = 256;
            for (int s = 512; s <= 1024; s *= 2)
                if (2.0 * s * s * s / (probe.best * 1e9) < o->seconds / 4)
                    size = s;
            be[n_be] = b;
            sizes[n_be] = size;
            memset(&res[n_be], 0, sizeof res[n_be]);
            n_be++;
        }
        for (int round = 0; round < GEMM_ROUNDS; round++)
            for (int i = 0; i < n_be; i++) {
                gemm_result g;
                if (gemm_run(gctx, be[i], precs[p], sizes[i], threads, 3,
                             o->seconds / (2 * GEMM_ROUNDS), &g) == NTP_STATUS_OK &&
                    strcmp(g.ran_on, be[i]) == 0 && g.best > res[i].best) {
                    int trials = res[i].trials + g.trials;
                    double lo = res[i].min > 0 && res[i].min < g.min ? res[i].min : g.min;
                    res[i] = g;
                    res[i].trials = trials;
                    res[i].min = lo;
                }
            }
        int best = -1;
        for (int i = 0; i < n_be; i++)
            if (res[i].best > 0 && (best < 0 || res[i].best > res[best].best))
                best = i;
        if (best < 0 || c->n_gemm >= NTP_MACHINE_MAX_PEAKS)
            continue;
        int k = c->n_gemm++;
        ntp_peak *pk = &c->gemm[k];
        ntp_ceiling_spread *sp = &c->gemm_spread[k];
        snprintf(pk->precision, sizeof pk->precision, "%s", precs[p]);
        pk->gflops = res[best].best;
        snprintf(pk->method, sizeof pk->method, "GEMM on %s (%dx%dx%d)", be[best], sizes[best],
                 sizes[best], sizes[best]);
        sp->trials = res[best].trials;
        sp->min = res[best].min;
        sp->median = res[best].median;
        sp->other_busy = -1;
        size_t u = 0;
        for (int i = 0; i < n_be && u < sizeof sp->detail; i++)
            if (res[i].best > 0)
                u += (size_t)snprintf(sp->detail + u, sizeof sp->detail - u, "%s%s %.4g",
                                      u ? ", " : "", be[i], res[i].best);
    }
    ntp_ctx_free(gctx);
}

/* --- the GPU ------------------------------------------------------------------------------ */

/* GPU 0's ceilings when a device backend (kind NTP_BACKEND_DEVICE: cuda,
 * the only one ntprof has) is built and can run here; else none, with the
 * reason in gpu_note. A GPU that fails to measure does not cost the CPU's
 * ceilings: its error becomes the note. */
static void measure_gpus(const ntp_machine_opts *o, ntp_ceilings *c)
{
    const ntp_backend_i *be = ntp__backend_device();
    char why[192];
    if (!be) {
        snprintf(c->gpu_note, sizeof c->gpu_note, "built without the CUDA backend");
        return;
    }
    if (!ntp__be_available(be, why, sizeof why)) {
        snprintf(c->gpu_note, sizeof c->gpu_note, "backend '%s': %s", be->name, why);
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
    ntp__team_cpus(tm, opts->threads);
    snprintf(out->machine_key, sizeof out->machine_key, "%s", m->key);
    snprintf(out->ntprof_version, sizeof out->ntprof_version, "%s", ntp_version());
    out->threads = tm->n;
    time_t now = time(NULL);
    struct tm utc;
    if (gmtime_r(&now, &utc))
        strftime(out->measured_at, sizeof out->measured_at, "%Y-%m-%dT%H:%M:%SZ", &utc);
    ntp__contention_probe probe;
    ntp__contention_begin(&probe);
    out->loadavg = probe.load1;
    ntp_status st = measure_peaks(ctx, tm, m->pus > m->cores, opts, out);
    if (!st)
        check_ratios(out);
    if (!st)
        st = measure_bandwidth(ctx, tm, m, opts, out);
    if (!st && opts->gemm)
        measure_gemm(opts, tm->n, out);
    /* The CPU's ceilings' load: over all of them, and flagged when any
     * one of them read as contended. */
    out->other_busy = other_busy(&probe);
    for (int i = 0; i < out->n_peaks; i++)
        out->contended |= out->peak_spread[i].contended;
    for (int i = 0; i < out->n_levels; i++)
        out->contended |= out->level_spread[i].contended;
    if (!st)
        measure_gpus(opts, out);
    free(tm);
    return st;
}
