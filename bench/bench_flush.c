/* Does the run's flush (ntp_run_opts.flush_bytes, the calibration's
 * network conditions) leave a layer's weights in memory? Reads a buffer
 * the size of a large layer's weights, one load per 64-byte line, after
 * each of: nothing (warm), the flush ntprof writes (ntp__flush_caches),
 * memset over the same buffer (what ntprof wrote before 2026-12-04), and
 * a read of it; interleaved, rounds times, medians printed with the ratio
 * to the warm read. A flush that evicts reads at memory's speed (ratio
 * well above 1); one that does not, at the cache's (near 1). Then the same
 * for a buffer a worker thread read on another CPU of the set (a
 * backend's pool) and reads back there: nothing between, the caller's
 * writes alone (ntp__flush_caches_here, the flush before 2026-12-06) and
 * the flush from every CPU; where the two CPUs do not share a cache, the
 * caller's writes leave the worker's copy warm (the placement, by the run's
 * hand-off probe, printed before and after). Prints and never fails on
 * time.
 *
 * Usage: bench_flush [WEIGHTS_MB [FLUSH_MB [ROUNDS]]] (default 9.6 64 31) */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/measure-impl.h"
#include "ntprof/stats.h"

enum { WARM, FLUSH, MEMSET, READ, W_WARM, W_HERE, W_FLUSH, KINDS };
static const char *const kind_name[KINDS] = {
    "warm (nothing between)",   "ntp__flush_caches",      "memset",
    "read of the flush buffer", "warm (nothing between)", "the caller's writes alone",
    "ntp__flush_caches"};

static volatile double sink;

/* One load per line of w; seconds. */
static double read_lines(const double *w, size_t n)
{
    uint64_t t0 = ntp__now_ns();
    double s = 0;
    for (size_t i = 0; i < n; i += NTP__FLUSH_STRIDE / sizeof *w)
        s += w[i];
    sink += s;
    return (double)(ntp__now_ns() - t0) / 1e9;
}

/* A reader pinned to another CPU that stays awake between reads (a
 * backend's spinning pool thread): an idle vCPU woken for each read would
 * time its wake, not its cache. */
typedef struct reader {
    const double *w;
    size_t n;
    int cpu;
    _Atomic int go;   /* 1: read once; -1: stop */
    _Atomic int done; /* reads finished */
    double s;
    bool pinned;
} reader;

static void *reader_main(void *arg)
{
    reader *r = arg;
    r->pinned = ntp__pin_self(r->cpu);
    for (;;) {
        int g = atomic_load(&r->go);
        if (g < 0)
            return NULL;
        if (g == 1) {
            r->s = read_lines(r->w, r->n);
            atomic_store(&r->go, 0);
            atomic_fetch_add(&r->done, 1);
        }
    }
}

/* One read by r's thread; its seconds. */
static double read_on(reader *r)
{
    int d = atomic_load(&r->done);
    atomic_store(&r->go, 1);
    while (atomic_load(&r->done) == d)
        ;
    return r->s;
}

/* The CPUs' placement now: the hand-off probe's ratio (docs/run.md#handoff). */
static void placement(const char *when)
{
    ntp_handoff_check h;
    ntp__handoff_plan(NTP_BANDWIDTH_PROBE_ON, 2, &h);
    if (h.measured)
        ntp__handoff_before(&h);
    if (h.measured)
        printf("  the CPUs %s: hand-off ratio %.2f (%s)\n", when, h.before.ratio,
               h.before.ratio >= NTP_HANDOFF_APART_RATIO ? "apart" : "together");
    else
        printf("  the CPUs %s: n/a (%s)\n", when, h.reason);
}

int main(int argc, char **argv)
{
    double wmb = argc > 1 ? atof(argv[1]) : 9.6, fmb = argc > 2 ? atof(argv[2]) : 64;
    int rounds = argc > 3 ? atoi(argv[3]) : 31;
    if (wmb <= 0 || fmb <= 0 || rounds < 3) {
        fprintf(stderr, "usage: bench_flush [WEIGHTS_MB [FLUSH_MB [ROUNDS >= 3]]]\n");
        return 2;
    }
    size_t wb = (size_t)(wmb * 1e6), fb = (size_t)(fmb * 1048576);
    double *w = malloc(wb);
    unsigned char *f = malloc(fb);
    double *t = malloc((size_t)rounds * KINDS * sizeof *t);
    if (!w || !f || !t) {
        fprintf(stderr, "bench_flush: out of memory\n");
        return 1;
    }
    memset(w, 1, wb);
    memset(f, 1, fb);
    double load[3] = {-1, -1, -1};
    getloadavg(load, 3);
    printf("a %.1f MB buffer read back after writing over %.0f MiB, %d interleaved rounds "
           "(load %.2f %.2f %.2f)\n",
           wmb, fmb, rounds, load[0], load[1], load[2]);
    size_t n = wb / sizeof *w;
    /* The caller on the first CPU of the set, the worker on the second. */
    cpu_set_t set;
    int cpus[2];
    const bool set_read = sched_getaffinity(0, sizeof set, &set) == 0;
    const int nc = set_read ? ntp__set_cpus(cpus, 2) : 0;
    reader rd = {w, n, nc == 2 ? cpus[1] : 0, 0, 0, 0, false};
    pthread_t th;
    if (nc == 2)
        placement("before"); /* over the whole set, before the caller is pinned */
    const bool worker =
        nc == 2 && ntp__pin_self(cpus[0]) && pthread_create(&th, NULL, reader_main, &rd) == 0;
    const int kinds = worker ? KINDS : W_WARM;
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < kinds; k++) {
            if (k >= W_WARM) {
                read_on(&rd); /* in the worker CPU's cache */
                if (k == W_HERE)
                    ntp__flush_caches_here(f, (int64_t)fb, r);
                else if (k == W_FLUSH)
                    ntp__flush_caches(f, (int64_t)fb, r);
                t[k * rounds + r] = read_on(&rd);
                continue;
            }
            read_lines(w, n); /* in cache, whatever came before */
            if (k == FLUSH)
                ntp__flush_caches(f, (int64_t)fb, r);
            else if (k == MEMSET)
                memset(f, r & 0xff, fb);
            else if (k == READ)
                sink += read_lines((const double *)f, fb / sizeof(double));
            t[k * rounds + r] = read_lines(w, n);
        }
    double warm = 0;
    for (int k = 0; k < kinds; k++) {
        ntp_stats st;
        ntp_stats_compute(&t[k * rounds], (size_t)rounds, &st);
        double med = st.median;
        if (k == W_WARM)
            printf("read on CPU %d, the caller on CPU %d:\n", cpus[1], cpus[0]);
        if (k == WARM || k == W_WARM)
            warm = med;
        printf("  after %-26s %8.3f ms  %6.1f GB/s  x%.2f of warm\n", kind_name[k], med * 1e3,
               (double)wb / med / 1e9, med / warm);
    }
    if (worker) {
        atomic_store(&rd.go, -1);
        pthread_join(th, NULL);
        if (sched_setaffinity(0, sizeof set, &set) == 0)
            placement("after");
        if (!rd.pinned)
            printf("  (the reader could not be pinned: it ran where the kernel put it)\n");
    } else {
        printf("read on another CPU: n/a (%s)\n",
               nc < 2 ? "one CPU in the process's set" : "the caller or a thread cannot be pinned");
    }
    free(t);
    free(f);
    free(w);
    return 0;
}
