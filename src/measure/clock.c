/* The clock every measurement in ntprof reads. */
#include <stdlib.h>
#include <time.h>

#include "measure-impl.h"

/* CLOCK_MONOTONIC_RAW is Linux-specific; where it is missing the slewed
 * monotonic clock is the best portable substitute. */
#ifdef CLOCK_MONOTONIC_RAW
#define NTP_CLOCK CLOCK_MONOTONIC_RAW
#else
#define NTP_CLOCK CLOCK_MONOTONIC
#endif

uint64_t ntp__now_ns(void)
{
    struct timespec ts;
    if (clock_gettime(NTP_CLOCK, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

double ntp__now_us(void)
{
    return (double)ntp__now_ns() / 1000.0;
}

/* Reads are timed in batches because one read costs about as much as the
 * clock's resolution: a batch of NTP_BATCH reads divided by NTP_BATCH gives
 * the per-read cost with sub-nanosecond granularity. The median over
 * NTP_TRIALS batches ignores batches hit by an interrupt or a migration. */
enum { NTP_TRIALS = 51, NTP_BATCH = 64 };

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double ntp__clock_overhead_ns(void)
{
    double per_read[NTP_TRIALS];
    for (int t = 0; t < NTP_TRIALS; t++) {
        /* volatile keeps the compiler from dropping reads it sees unused. */
        volatile uint64_t sink = 0;
        uint64_t t0 = ntp__now_ns();
        for (int i = 0; i < NTP_BATCH; i++)
            sink += ntp__now_ns();
        uint64_t t1 = ntp__now_ns();
        (void)sink;
        /* The batch includes the closing read, hence NTP_BATCH + 1. */
        per_read[t] = (double)(t1 - t0) / (NTP_BATCH + 1);
    }
    qsort(per_read, NTP_TRIALS, sizeof per_read[0], cmp_double);
    return per_read[NTP_TRIALS / 2];
}
