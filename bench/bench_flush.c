/* Does the run's flush (ntp_run_opts.flush_bytes, the calibration's
 * network conditions) leave a layer's weights in memory? Reads a buffer
 * the size of a large layer's weights, one load per 64-byte line, after
 * each of: nothing (warm), the flush ntprof writes (ntp__flush_caches),
 * memset over the same buffer (what ntprof wrote before 2026-12-04), and
 * a read of it; interleaved, rounds times, medians printed with the ratio
 * to the warm read. A flush that evicts reads at memory's speed (ratio
 * well above 1); one that does not, at the cache's (near 1). Prints and
 * never fails on time.
 *
 * Usage: bench_flush [WEIGHTS_MB [FLUSH_MB [ROUNDS]]] (default 9.6 64 31) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/measure-impl.h"
#include "ntprof/stats.h"

enum { WARM, FLUSH, MEMSET, READ, KINDS };
static const char *const kind_name[KINDS] = {"warm (nothing between)", "ntp__flush_caches",
                                             "memset", "read of the flush buffer"};

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
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < KINDS; k++) {
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
    for (int k = 0; k < KINDS; k++) {
        ntp_stats st;
        ntp_stats_compute(&t[k * rounds], (size_t)rounds, &st);
        double med = st.median;
        if (k == WARM)
            warm = med;
        printf("  after %-26s %8.3f ms  %6.1f GB/s  x%.2f of warm\n", kind_name[k], med * 1e3,
               (double)wb / med / 1e9, med / warm);
    }
    free(t);
    free(f);
    free(w);
    return 0;
}
