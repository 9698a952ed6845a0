/* ntprof: summary statistics of repeated measurements. */
#ifndef NTPROF_STATS_H
#define NTPROF_STATS_H

#include <stddef.h>
#include "ntprof/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ntp_stats {
    size_t n;
    double min, max, mean, median, p90, p99, stddev;
    /* 95% confidence interval of the median, from order statistics
     * (distribution-free: binomial ranks, normal approximation for large n). */
    double ci95_lo, ci95_hi;
    double cv; /* coefficient of variation: stddev / mean */
} ntp_stats;

/* Summarise n samples (not modified). n == 0 gives all zeros. Quantiles use
 * linear interpolation between order statistics (numpy's default). */
NTP_API void ntp_stats_compute(const double *samples, size_t n, ntp_stats *out);
/* Quantile q in [0,1] of sorted samples. */
NTP_API double ntp_stats_quantile_sorted(const double *sorted, size_t n, double q);

#ifdef __cplusplus
}
#endif
#endif
