/* Clocks and measurement helpers, private to libntprof.
 *
 * Timing code calls these instead of clock_gettime() directly so that every
 * measurement in a run reads the same clock. */
#ifndef NTPROF_MEASURE_IMPL_H
#define NTPROF_MEASURE_IMPL_H

#include <stdint.h>

/* Monotonic time in nanoseconds, from CLOCK_MONOTONIC_RAW where the system
 * has it (not slewed by NTP, so intervals are not stretched while a run is
 * measured), else CLOCK_MONOTONIC. The origin is arbitrary: use differences. */
uint64_t ntp__now_ns(void);
/* The same clock as a double in microseconds. */
double ntp__now_us(void);
/* Median cost of one ntp__now_ns() call in nanoseconds, measured now over
 * many back-to-back reads. Takes about a millisecond. */
double ntp__clock_overhead_ns(void);

#endif
