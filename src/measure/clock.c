/* The clock every measurement in ntprof reads. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

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

double ntp__thread_run_delay_s(void)
{
    /* "run time, run-queue wait, timeslices" in ns (Linux 2.6.23, with
     * CONFIG_SCHED_INFO; /proc/thread-self since 3.17). The wait is added
     * when the thread gets its CPU back, so a read while running counts
     * every wait that ended before it. */
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[96];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    unsigned long long run, wait;
    if (sscanf(buf, "%llu %llu", &run, &wait) != 2)
        return -1;
    return (double)wait / 1e9;
}
