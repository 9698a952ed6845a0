/* Does the reference backend's relu take a time that follows its input's
 * signs? Times ntp__ref_unary(relu) on one input of random signs and one
 * of signs that stay the same over long runs (a channel of a network's
 * activations often keeps its sign), each through the masked loop ntprof
 * runs for a relu and through the loop ref ran before 2026-12-04 (the op
 * table's ref_relu, copied below: a branch per element); interleaved,
 * rounds times,
 * medians printed in ns per element with the ratio random / runs. A loop
 * whose time does not follow the data prints a ratio near 1. Prints and
 * never fails on time.
 *
 * Usage: bench_ref_relu [ELEMENTS [ROUNDS]] (default 802816 = 64x112x112, 31) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/ref/ref-impl.h"
#include "measure/measure-impl.h"
#include "ntprof/stats.h"

enum { MASKED_RANDOM, MASKED_RUNS, TABLE_RANDOM, TABLE_RUNS, KINDS };
static const char *const kind_name[KINDS] = {"masked, random signs", "masked, runs of one sign",
                                             "table,  random signs", "table,  runs of one sign"};

/* The op table's relu as ref ran it before 2026-12-04 (ref-eltwise.c):
 * in double, a branch on the sign, then the bound. */
static double table_relu(double x, double hi)
{
    double v = x > 0.0 ? x : isnan(x) ? x : 0.0;
    return v > hi ? hi : v;
}

static void table_loop(const float *x, float *y, long n)
{
    for (long i = 0; i < n; i++)
        y[i] = (float)table_relu(x[i], INFINITY);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 802816;
    int rounds = argc > 2 ? atoi(argv[2]) : 31;
    if (n < 1 || rounds < 3) {
        fprintf(stderr, "usage: bench_ref_relu [ELEMENTS >= 1 [ROUNDS >= 3]]\n");
        return 2;
    }
    float *random = malloc((size_t)n * sizeof *random), *runs = malloc((size_t)n * sizeof *runs);
    float *y = malloc((size_t)n * sizeof *y);
    double *t = malloc((size_t)rounds * KINDS * sizeof *t);
    if (!random || !runs || !y || !t) {
        fprintf(stderr, "bench_ref_relu: out of memory\n");
        return 1;
    }
    /* Runs of 3136 (a 56x56 channel) of one sign, alternating. */
    srand(1);
    for (long i = 0; i < n; i++) {
        float v = (float)rand() / (float)RAND_MAX + 0.01f;
        random[i] = rand() & 1 ? v : -v;
        runs[i] = (i / 3136) & 1 ? -v : v;
    }
    ntp_attrs masked = {0};
    double load[3] = {-1, -1, -1};
    getloadavg(load, 3);
    printf("ref relu over %ld floats, %d interleaved rounds (load %.2f %.2f %.2f)\n", n, rounds,
           load[0], load[1], load[2]);
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < KINDS; k++) {
            const float *x = k == MASKED_RANDOM || k == TABLE_RANDOM ? random : runs;
            uint64_t t0 = ntp__now_ns();
            if (k < TABLE_RANDOM)
                ntp__ref_unary(NTP_OP_RELU, &masked, x, y, n);
            else
                table_loop(x, y, n);
            t[k * rounds + r] = (double)(ntp__now_ns() - t0) / (double)n;
        }
    double med[KINDS];
    for (int k = 0; k < KINDS; k++) {
        ntp_stats st;
        ntp_stats_compute(&t[k * rounds], (size_t)rounds, &st);
        med[k] = st.median;
        printf("  %-26s %7.3f ns/element\n", kind_name[k], med[k]);
    }
    printf("  random / runs: masked x%.2f, table x%.2f; table / masked on random signs x%.2f\n",
           med[MASKED_RANDOM] / med[MASKED_RUNS], med[TABLE_RANDOM] / med[TABLE_RUNS],
           med[TABLE_RANDOM] / med[MASKED_RANDOM]);
    free(t);
    free(y);
    free(runs);
    free(random);
    return 0;
}
