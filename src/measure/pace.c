/* The CPUs' pace: how fast each CPU of the process runs a short kernel
 * right now (docs/predict.md#passes).
 *
 * On a virtual machine a vCPU shares its physical core with whatever the
 * host runs beside it, and neither the load average nor the steal time
 * says so: the vCPU is running, only slower. On the 2-vCPU Zen 5 VM
 * (2026-12-05) one vCPU at a time ran a 128x512 by 512 fc of the reference
 * backend in 2.0-2.3 ms instead of 1.6-1.7, for seconds to minutes. What
 * the neighbour takes is the core's load/store side, not its arithmetic:
 * the ceilings' multiply-add kernel (registers only, ntp__fma_run) read
 * 215-255 GFLOP/s on either state, a chain of dependent adds (the clock)
 * 3.7-4.0 GHz on either, while this kernel, whose accumulators live in
 * L1 (each step loads one, multiplies-adds and stores it back), read
 * 31-36 GFLOP/s on the slowed vCPU against 40-45 on the other, step for
 * step with the fc. A look reads one CPU at a time, on a thread pinned to
 * it, the best of a few short trials: a calibration keeps the reading of
 * the CPU its timing ended on, a run every CPU's (docs/run.md#pace). */
#include <pthread.h>
#include <immintrin.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine-impl.h"
#include "counters-impl.h"
#include "measure-impl.h"
#include "ntprof/stats.h"

enum {
    PACE_TRIALS = 5, /* timed trials per CPU, the best kept, after one untimed */
};
/* Operations per trial: about 0.1 ms at the 2-vCPU Zen 5 VM's 43 GFLOP/s. */
#define PACE_OPS 4e6

/* Accumulators per kernel step: each is a store-to-load chain of its own. */
#define PACE_SLOTS 10

typedef struct pace_job {
    int cpu;
    double gflops; /* 0: could not pin or run */
} pace_job;

/* iters rounds over the slots of acc (PACE_SLOTS x 8 floats, 32-byte
 * aligned): each slot loaded, multiplied-added and stored back; returns
 * the operations done. The barrier keeps every slot in memory. */
__attribute__((target("avx2,fma"))) static double pace_avx2(float *acc, int64_t iters)
{
    const __m256 m = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(0.001f);
    for (int64_t k = 0; k < iters; k++) {
        for (int i = 0; i < PACE_SLOTS; i++)
            _mm256_store_ps(acc + 8 * i, _mm256_fmadd_ps(_mm256_load_ps(acc + 8 * i), m, c));
        __asm__ volatile("" ::: "memory");
    }
    return (double)iters * PACE_SLOTS * 16;
}

static double pace_scalar(float *acc, int64_t iters)
{
    for (int64_t k = 0; k < iters; k++) {
        for (int i = 0; i < PACE_SLOTS; i++)
            acc[8 * i] = acc[8 * i] * 0.999f + 0.001f;
        __asm__ volatile("" ::: "memory");
    }
    return (double)iters * PACE_SLOTS * 2;
}

bool ntp__pin_self(int cpu)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
}

static void *pace_thread(void *arg)
{
    pace_job *j = arg;
    if (!ntp__pin_self(j->cpu))
        return NULL;
    _Alignas(32) float acc[PACE_SLOTS * 8];
    for (int i = 0; i < PACE_SLOTS * 8; i++)
        acc[i] = 0.5f + 0.01f * (float)i;
    const bool avx2 = ntp__isa_best() != NTP_ISA_SCALAR;
    const int64_t iters = (int64_t)(PACE_OPS / (PACE_SLOTS * (avx2 ? 16 : 2)));
    double best = 0;
    for (int t = 0; t <= PACE_TRIALS; t++) {
        double t0 = ntp__now_us();
        double ops = avx2 ? pace_avx2(acc, iters) : pace_scalar(acc, iters);
        double us = ntp__now_us() - t0;
        if (t > 0 && us > 0 && ops / (us * 1e3) > best)
            best = ops / (us * 1e3);
    }
    j->gflops = acc[0] == acc[0] ? best : 0; /* the slots stay live */
    return NULL;
}

bool ntp__pace_read(const int *cpus, int n, double *out)
{
    for (int i = 0; i < n; i++) {
        pace_job j = {cpus[i], 0};
        pthread_t th;
        if (pthread_create(&th, NULL, pace_thread, &j) != 0)
            return false;
        pthread_join(th, NULL);
        if (!(j.gflops > 0))
            return false;
        out[i] = j.gflops;
    }
    return n > 0;
}

int ntp__set_cpus(int *cpu, int max)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 0;
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < max; c++)
        if (CPU_ISSET(c, &set))
            cpu[n++] = c;
    return n;
}

bool ntp__pace_look_all(ntp__pace_cpus *a)
{
    a->n = ntp__set_cpus(a->cpu, NTP_PACE_MAX_CPUS);
    return ntp__pace_read(a->cpu, a->n, a->gflops);
}

/* The reading g[i] of CPU cpu among cpus[0..n); the slowest where it is
 * not among them. */
static double reading_of(const int *cpus, const double *g, int n, int cpu)
{
    double slowest = g[0];
    for (int i = 0; i < n; i++) {
        if (cpus[i] == cpu)
            return g[i];
        if (g[i] < slowest)
            slowest = g[i];
    }
    return slowest;
}

double ntp__pace_of(const ntp__pace_cpus *a, int cpu)
{
    return reading_of(a->cpu, a->gflops, a->n, cpu);
}

void ntp__pace_plan(ntp_bandwidth_probe mode, int threads, ntp_pace_check *p)
{
    memset(p, 0, sizeof *p);
    if (mode == NTP_BANDWIDTH_PROBE_OFF) {
        snprintf(p->reason, sizeof p->reason, "off (ntp_run_opts.bandwidth_probe)");
        return;
    }
    if (ntp__valgrind_running()) {
        snprintf(p->reason, sizeof p->reason,
                 "under valgrind, which runs one thread at a time on one CPU");
        return;
    }
    p->n_cpus = ntp__set_cpus(p->cpu, NTP_PACE_MAX_CPUS);
    if (p->n_cpus == 0) {
        snprintf(p->reason, sizeof p->reason, "the process's CPU set could not be read");
        return;
    }
    p->one_thread = threads == 1;
    p->measured = true;
}

/* One look into w, before iteration iter; false when it could not run
 * (out of memory, a CPU that would not take the thread): the looks end
 * there, those taken stand. */
static bool take_look(ntp_pace_check *p, ntp__pace_window *w, int iter)
{
    double t0 = ntp__now_us();
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 32;
        int *it = realloc(w->iter, (size_t)cap * sizeof *it);
        if (it)
            w->iter = it;
        double *g = it ? realloc(w->gflops, (size_t)cap * NTP_PACE_MAX_CPUS * sizeof *g) : NULL;
        if (!g)
            return false;
        w->gflops = g;
        w->cap = cap;
    }
    bool ok = ntp__pace_read(p->cpu, p->n_cpus, w->gflops + (size_t)w->n * NTP_PACE_MAX_CPUS);
    if (ok)
        w->iter[w->n++] = iter;
    double end = ntp__now_us();
    p->cost_s += (end - t0) / 1e6;
    w->last_us = end;
    return ok;
}

void ntp__pace_window_begin(ntp_pace_check *p, ntp__pace_window *w)
{
    memset(w, 0, sizeof *w);
    w->on = p->measured;
    if (w->on && !take_look(p, w, 0)) {
        snprintf(p->reason, sizeof p->reason,
                 "a look could not run (out of memory, or a CPU of the run's set would not take "
                 "its thread)");
        p->measured = w->on = false;
    }
}

void ntp__pace_window_tick(ntp_pace_check *p, ntp__pace_window *w, int iter)
{
    if (!w->on)
        return;
    if (iter > w->cpu_cap) {
        int cap = w->cpu_cap ? 2 * w->cpu_cap : 64;
        while (cap < iter)
            cap *= 2;
        int *c = realloc(w->iter_cpu, (size_t)cap * sizeof *c);
        if (!c) { /* out of memory: no more looks, those taken stand */
            w->on = false;
            return;
        }
        w->iter_cpu = c;
        w->cpu_cap = cap;
    }
    /* The thread that ran iteration iter - 1 is still on its CPU. */
    w->iter_cpu[iter - 1] = sched_getcpu();
    w->cpu_n = iter;
    if (ntp__now_us() - w->last_us >= 1e6 * NTP_HANDOFF_SAMPLE_S && !take_look(p, w, iter))
        w->on = false;
}

void ntp__pace_window_end(ntp_pace_check *p, ntp__pace_window *w, const double *e2e, int n)
{
    if (p->measured && n > 0) {
        if (w->on)
            take_look(p, w, n);
        /* Iterations after the CPUs' record ran out: on no CPU known. */
        int *cpu = malloc((size_t)n * sizeof *cpu);
        if (cpu) {
            for (int i = 0; i < n; i++)
                cpu[i] = i < w->cpu_n ? w->iter_cpu[i] : -1;
            ntp__pace_judge(p, w->gflops, w->iter, w->n, e2e, cpu, n);
        }
        free(cpu);
    }
    free(w->gflops);
    free(w->iter);
    free(w->iter_cpu);
    memset(w, 0, sizeof *w);
}

void ntp__pace_judge(ntp_pace_check *p, const double *gflops, const int *look_iter, int looks,
                     const double *e2e, const int *iter_cpu, int n)
{
    p->looks = looks;
    p->best = 0;
    p->slow_looks = 0;
    for (int c = 0; c < p->n_cpus; c++)
        p->low[c] = p->high[c] = 0;
    for (int k = 0; k < looks; k++)
        for (int c = 0; c < p->n_cpus; c++) {
            double g = gflops[(size_t)k * NTP_PACE_MAX_CPUS + c];
            if (k == 0 || g < p->low[c])
                p->low[c] = g;
            if (g > p->high[c])
                p->high[c] = g;
            if (g > p->best)
                p->best = g;
        }
    const double bar = NTP_PACE_SLOW_SHARE * p->best;
    for (int k = 0; k < looks; k++) {
        bool slow = false;
        for (int c = 0; c < p->n_cpus; c++)
            slow |= gflops[(size_t)k * NTP_PACE_MAX_CPUS + c] < bar;
        p->slow_looks += slow;
    }
    /* Each iteration under the latest look before it. */
    unsigned char *flag = n > 0 ? malloc((size_t)n) : NULL;
    int k = 0;
    for (int i = 0; flag && i < n; i++) {
        while (k + 1 < looks && look_iter[k + 1] <= i)
            k++;
        /* A one-thread run under the CPU it ended on (where known and
         * looked at), any other under the slowest CPU. */
        const double *look = gflops + (size_t)k * NTP_PACE_MAX_CPUS;
        flag[i] = looks > 0 &&
                  reading_of(p->cpu, look, p->n_cpus, p->one_thread ? iter_cpu[i] : -1) < bar;
    }
    ntp__split s;
    memset(&s, 0, sizeof s);
    if (flag)
        ntp__split_iterations(e2e, flag, n, &s);
    free(flag);
    p->clear_ms = s.ms[0], p->clear_n = s.n[0], p->clear_lo = s.lo[0], p->clear_hi = s.hi[0];
    p->slow_ms = s.ms[1], p->slow_n = s.n[1], p->slow_lo = s.lo[1], p->slow_hi = s.hi[1];
    bool both = p->clear_n > 0 && p->slow_n > 0;
    p->slowed = both && ntp_split_followed(p->slow_ms, p->slow_lo, p->clear_ms, p->clear_hi);
    p->unconfirmed = both && !p->slowed;
    /* A threaded run's workers may still spin on the CPUs when a look
     * follows an iteration, and read every look low: only a one-thread
     * run is judged slowed throughout. */
    p->throughout = p->one_thread && p->slow_n > 0 && p->clear_n == 0;
}

/* "CPU 0 29.8-41.7, CPU 1 38.5-42.0" */
static void per_cpu(const ntp_pace_check *p, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int c = 0; c < p->n_cpus && used < len; c++)
        used += (size_t)snprintf(buf + used, len - used, "%sCPU %d %.1f-%.1f", c ? ", " : "",
                                 p->cpu[c], p->low[c], p->high[c]);
}

bool ntp__pace_warning(const ntp_pace_check *p, char *buf, size_t len)
{
    buf[0] = '\0';
    const int k = ntp_pace_slowest(p);
    if (p->throughout && k >= 0) {
        /* The CPU whose look set the best: where to pin the run again
         * (none to name where that is the slowed one, a run on one CPU). */
        int b = 0;
        for (int c = 1; c < p->n_cpus; c++)
            if (p->high[c] > p->high[b])
                b = c;
        char pin[96] = "";
        if (b != k)
            snprintf(pin, sizeof pin, "; --pin %d runs it again on the CPU that read the best",
                     p->cpu[b]);
        snprintf(buf, len,
                 "CPU %d ran slowed throughout: each of the run's %d iteration%s ran under a look "
                 "of its CPU under %.2fx the run's best (CPU %d read %.1f-%.1f GFLOP/s, the best "
                 "look %.1f, CPU %d's); nothing in the run ran clear to time against, but a "
                 "one-thread run on such a CPU has read up to 1.6x slower: its figures may be "
                 "the neighbour's, not the model's%s (docs/run.md#pace)",
                 p->cpu[k], p->slow_n, p->slow_n == 1 ? "" : "s", NTP_PACE_SLOW_SHARE, p->cpu[k],
                 p->low[k], p->high[k], p->best, p->cpu[b], pin);
        return true;
    }
    if (!p->slowed || k < 0)
        return false;
    snprintf(buf, len,
             "CPU %d ran slowed: its pace read down to %.2fx the run's best look (%.1f GFLOP/s "
             "against %.1f), and the %d iteration%s under looks under %.2fx took %.4g ms "
             "end-to-end median (95%% interval %.4g-%.4g) against %.4g ms (%.4g-%.4g) over the "
             "%d other%s; on a virtual machine, presumably a guest beside the vCPU on its core; "
             "the run's median mixes the two (docs/run.md#pace)",
             p->cpu[k], p->low[k] / p->best, p->low[k], p->best, p->slow_n,
             p->slow_n == 1 ? "" : "s", NTP_PACE_SLOW_SHARE, p->slow_ms, p->slow_lo, p->slow_hi,
             p->clear_ms, p->clear_lo, p->clear_hi, p->clear_n, p->clear_n == 1 ? "" : "s");
    return true;
}

bool ntp__pace_line(const ntp_pace_check *p, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!p->measured) {
        if (!p->reason[0])
            return false;
        snprintf(buf, len, "n/a (%s)", p->reason);
        return true;
    }
    char cpus[NTP_PACE_MAX_CPUS * 32], split[320] = "";
    per_cpu(p, cpus, sizeof cpus);
    if (p->slow_n > 0 && p->clear_n > 0)
        snprintf(split, sizeof split,
                 "; the %d iteration%s under them took %.4g ms (end-to-end median, 95%% "
                 "interval %.4g-%.4g), the %d other%s %.4g ms (%.4g-%.4g)%s",
                 p->slow_n, p->slow_n == 1 ? "" : "s", p->slow_ms, p->slow_lo, p->slow_hi,
                 p->clear_n, p->clear_n == 1 ? "" : "s", p->clear_ms, p->clear_lo, p->clear_hi,
                 p->slowed ? "" : ": the run's time did not follow the looks, no warning");
    else if (p->slow_n > 0)
        snprintf(split, sizeof split, "; every iteration ran under them%s",
                 p->throughout ? " (a one-thread run: slowed throughout, warned)" : "");
    snprintf(buf, len,
             "%s GFLOP/s, slowest to fastest look of an L1 load/multiply-add/store kernel "
             "(%d look%s: at the window's start, every %.1f s between iterations, after; %s); "
             "%d read a CPU under %.2fx the best%s; the looks took %.0f ms",
             cpus, p->looks, p->looks == 1 ? "" : "s", NTP_HANDOFF_SAMPLE_S,
             p->one_thread ? "each iteration under the CPU it ended on"
                           : "each iteration under the slowest CPU",
             p->slow_looks, NTP_PACE_SLOW_SHARE, split, 1e3 * p->cost_s);
    return true;
}
