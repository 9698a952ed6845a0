/* The triad's rounds on a team of pinned threads: what `ntprof machine`
 * measures its bandwidth ceilings with (machine-measure.c), and what a run
 * probes the memory bus with before and after its measured window
 * (bandwidth.c, docs/run.md#contention). One function for both, so a
 * probe's GB/s and the ceiling it is compared to come from the same code.
 *
 * Rounds are synchronised with a barrier and timed from the first thread's
 * start to the last thread's end. */
#include <pthread.h>
#include <sys/mman.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/ctx-impl.h"
#include "machine-impl.h"
#include "measure-impl.h"

/* --- a team of pinned threads ---------------------------------------------------------- */

typedef struct worker {
    ntp__team *tm;
    int id;
} worker;

static void *worker_main(void *p)
{
    worker *w = p;
    ntp__team *tm = w->tm;
    /* Pinning may be refused (a restricted container); the measurement
     * then runs unpinned, which can only make it look lower. */
    (void)ntp__pin_self(tm->cpus[w->id]);
    pthread_mutex_lock(&tm->mu);
    while (tm->go == 0)
        pthread_cond_wait(&tm->cv, &tm->mu);
    int go = tm->go;
    pthread_mutex_unlock(&tm->mu);
    if (go > 0)
        tm->fn(tm, w->id);
    return NULL;
}

int ntp__team_cpus(ntp__team *tm, int limit)
{
    tm->n = ntp__set_cpus(tm->cpus, limit > 0 && limit < CPU_SETSIZE ? limit : CPU_SETSIZE);
    if (tm->n == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        for (int c = 0; c < (n > 0 ? n : 1) && c < CPU_SETSIZE && (limit <= 0 || tm->n < limit);
             c++)
            tm->cpus[tm->n++] = c;
    }
    return tm->n;
}

static void team_release(ntp__team *tm, int go)
{
    pthread_mutex_lock(&tm->mu);
    tm->go = go;
    pthread_cond_broadcast(&tm->cv);
    pthread_mutex_unlock(&tm->mu);
}

ntp_status ntp__team_run(ntp_ctx *ctx, ntp__team *tm, ntp__team_fn fn, void *arg)
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
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY,
                        "machine: out of memory for the triad arrays");
    return st;
}

/* --- the triad's rounds -------------------------------------------------------------------- */

typedef struct triad_job {
    ntp_isa isa;
    int64_t n; /* doubles per array per thread */
    int reps;  /* passes per round */
    int first; /* 0: round 0 warms up and is not counted; 1: no warm-up */
    int max_rounds;
    double budget_us; /* 0: none */
    double start_us;  /* the first timed round's start, for the budget */
    double t0;
    double *span; /* [2 * thread]: this round's start and end on the thread, us */
    int rounds;
    bool stop;
    double secs[NTP__TRIAD_MAX_ROUNDS];
    bool clean[NTP__TRIAD_MAX_ROUNDS];
    double *ratio; /* [thread * NTP__TRIAD_MAX_ROUNDS + round] */
    double *delay; /* [thread * NTP__TRIAD_MAX_ROUNDS + round]: s on a run queue, -1 unknown */
} triad_job;

static double thread_cpu_s(void)
{
    struct timespec ts;
    return clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0
               ? (double)ts.tv_sec + (double)ts.tv_nsec / 1e9
               : 0;
}

static double *map_array(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void unmap_array(double *p, size_t bytes)
{
    if (p)
        munmap(p, bytes);
}

static void triad_worker(ntp__team *tm, int id)
{
    triad_job *j = tm->arg;
    size_t bytes = (size_t)j->n * sizeof(double);
    /* Each thread maps and first touches its own arrays, so they live on
     * its NUMA node and in its caches. Mapped, not malloc'd: unmapped at
     * the end they leave the process (a heap would keep them resident and
     * in a run's peak resident set) and every measurement faults in fresh
     * pages, as the ceiling's did. */
    double *a = map_array(bytes), *b = map_array(bytes), *c = map_array(bytes);
    bool ok = a && b && c;
    if (!ok)
        tm->failed = true;
    for (int64_t i = 0; ok && i < j->n; i++) {
        a[i] = 0;
        b[i] = 1.0;
        c[i] = 2.0;
    }
    for (int r = j->first;; r++) {
        /* Read before the round's barrier: the wait to wake from it counts
         * (a thread that gets its CPU late stretches the round). */
        double d0 = ntp__thread_run_delay_s();
        pthread_barrier_wait(&tm->barrier);
        if (id == 0) {
            j->t0 = ntp__now_us();
            /* The budget is the timed rounds': the arrays' first touch
             * and the warm-up take what they take. */
            if (r == 1)
                j->start_us = j->t0;
        }
        double w0 = ntp__now_us(), c0 = thread_cpu_s();
        if (ok && !tm->failed)
            ntp__triad_run(j->isa, a, b, c, j->n, j->reps);
        double w1 = ntp__now_us(), cpu = thread_cpu_s() - c0, w = (w1 - w0) / 1e6;
        j->span[2 * id] = w0;
        j->span[2 * id + 1] = w1;
        double d1 = ntp__thread_run_delay_s();
        if (r > 0) {
            j->ratio[id * NTP__TRIAD_MAX_ROUNDS + r - 1] = w > 0 ? cpu / w : 0;
            j->delay[id * NTP__TRIAD_MAX_ROUNDS + r - 1] = d0 >= 0 && d1 >= 0 ? d1 - d0 : -1;
        }
        pthread_barrier_wait(&tm->barrier);
        /* Round 0 warms the caches and the TLB; it is not counted. */
        if (id == 0) {
            double now = ntp__now_us();
            if (r > 0) {
                /* From the first thread's start to the last one's end: a
                 * thread that started late stretches the round, as it
                 * would stretch a layer. */
                double lo = j->span[0], hi = j->span[1];
                for (int t = 1; t < tm->n; t++) {
                    lo = j->span[2 * t] < lo ? j->span[2 * t] : lo;
                    hi = j->span[2 * t + 1] > hi ? j->span[2 * t + 1] : hi;
                }
                double secs = (hi - lo) / 1e6;
                j->secs[r - 1] = secs;
                /* Clean: every thread on its CPU for its share of the
                 * round's work, and kept off it for at most the rest of
                 * the round (waits to start and to finish included). */
                j->clean[r - 1] = true;
                for (int t = 0; t < tm->n; t++) {
                    int k = t * NTP__TRIAD_MAX_ROUNDS + r - 1;
                    j->clean[r - 1] &= j->ratio[k] >= NTP__TRIAD_CLEAN_RATIO &&
                                       !(j->delay[k] > (1 - NTP__TRIAD_CLEAN_RATIO) * secs);
                }
                j->rounds = r;
            }
            j->stop = tm->failed || r >= j->max_rounds ||
                      (r > 0 && j->budget_us > 0 && now - j->start_us >= j->budget_us);
        }
        /* Every thread reads the decision worker 0 made for this round. */
        pthread_barrier_wait(&tm->barrier);
        if (j->stop)
            break;
    }
    unmap_array(a, bytes);
    unmap_array(b, bytes);
    unmap_array(c, bytes);
}

int64_t ntp__triad_elems(int64_t per_thread_bytes)
{
    int64_t n = per_thread_bytes / 24;
    n -= n % 8;
    return n < 64 ? 64 : n;
}

ntp_status ntp__triad_measure(ntp_ctx *ctx, ntp__team *tm, int64_t per_thread_bytes, int reps,
                              bool warm, int max_rounds, double budget_s, ntp__triad_rounds *out)
{
    memset(out, 0, sizeof *out);
    triad_job j = {.isa = ntp__isa_best(),
                   .n = ntp__triad_elems(per_thread_bytes),
                   .reps = reps < 1 ? 1 : reps,
                   .first = warm ? 0 : 1,
                   .max_rounds = max_rounds < 1                       ? 1
                                 : max_rounds > NTP__TRIAD_MAX_ROUNDS ? NTP__TRIAD_MAX_ROUNDS
                                                                      : max_rounds,
                   .budget_us = budget_s > 0 ? budget_s * 1e6 : 0,
                   .start_us = ntp__now_us()};
    j.ratio = calloc((size_t)tm->n * NTP__TRIAD_MAX_ROUNDS, sizeof *j.ratio);
    j.delay = calloc((size_t)tm->n * NTP__TRIAD_MAX_ROUNDS, sizeof *j.delay);
    j.span = calloc((size_t)tm->n * 2, sizeof *j.span);
    if (!j.ratio || !j.delay || !j.span) {
        free(j.ratio);
        free(j.delay);
        free(j.span);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    ntp_status st = ntp__team_run(ctx, tm, triad_worker, &j);
    free(j.ratio);
    free(j.delay);
    free(j.span);
    out->wall_s = (ntp__now_us() - j.start_us) / 1e6;
    out->n = j.n;
    out->threads = tm->n;
    if (st)
        return st;
    out->rounds = j.rounds;
    for (int r = 0; r < j.rounds; r++) {
        out->gbps[r] = j.secs[r] > 0 ? 24.0 * (double)j.n * j.reps * tm->n / j.secs[r] / 1e9 : 0;
        out->clean[r] = j.clean[r];
    }
    return NTP_STATUS_OK;
}

int64_t ntp__triad_dram_bytes(int64_t llc_total_bytes, int64_t memory_bytes)
{
    int64_t total = 4 * llc_total_bytes;
    if (total < ((int64_t)128 << 20))
        total = (int64_t)128 << 20;
    if (memory_bytes > 0 && total > memory_bytes / 8)
        total = memory_bytes / 8;
    return total;
}
