/* Summary statistics of repeated measurements.
 *
 * Timings are skewed (a floor set by the hardware, a long tail from
 * interrupts and frequency changes), so the median is the headline number
 * and its confidence interval is distribution-free: it comes from order
 * statistics, not from a normal model of the samples. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "measure-impl.h"
#include "ntprof/stats.h"

/* NaN sorts after every number so the order is total and qsort is well
 * defined even on bad input. */
int ntp__cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    if (isnan(x) || isnan(y))
        return isnan(x) - isnan(y);
    return (x > y) - (x < y);
}

double ntp_stats_quantile_sorted(const double *sorted, size_t n, double q)
{
    if (n == 0 || !sorted)
        return 0.0;
    if (!(q > 0.0)) /* also catches NaN */
        return sorted[0];
    if (q >= 1.0)
        return sorted[n - 1];
    /* numpy's default ("linear", Hyndman & Fan type 7): the quantile sits at
     * 0-based position h = (n - 1) q between two order statistics. */
    double h = (double)(n - 1) * q;
    size_t lo = (size_t)floor(h);
    if (lo >= n - 1)
        return sorted[n - 1];
    double t = h - (double)lo;
    return sorted[lo] + t * (sorted[lo + 1] - sorted[lo]);
}

/* Exact ranks are used up to this many samples; beyond it the normal
 * approximation of the binomial is within one rank of the exact answer. */
#define NTP_CI_EXACT_MAX 100

/* 1-based ranks [j, k] of the order statistics that bound a 95% confidence
 * interval of the median. The number of samples below the true median is
 * Binomial(n, 1/2), so [x(j), x(n+1-j)] covers it with probability
 * 1 - 2 P(B <= j - 1); the largest j that keeps this >= 95% gives the
 * shortest such interval. For n <= 5 even [min, max] covers the median
 * with less than 95% (93.75% at n = 5, 50% at n = 2): min..max is then the
 * best the data can say, and docs/report-format.md says so. */
static void median_ci_ranks(size_t n, size_t *j, size_t *k)
{
    *j = 1;
    if (n <= NTP_CI_EXACT_MAX) {
        /* pmf(m) = C(n, m) / 2^n, built up term by term; 2^-100 is far from
         * underflow. */
        double pmf = ldexp(1.0, -(int)n), cdf = pmf;
        size_t m = 0;
        if (cdf > 0.025) {
            *k = n;
            return;
        }
        while (m + 1 < n) {
            double next = pmf * (double)(n - m) / (double)(m + 1);
            if (cdf + next > 0.025)
                break;
            pmf = next;
            cdf += next;
            m++;
        }
        *j = m + 1;
    } else {
        double lo = (double)n / 2.0 - 1.96 * sqrt((double)n) / 2.0;
        *j = lo < 1.0 ? 1 : (size_t)floor(lo);
    }
    /* The interval is symmetric in rank: k = n + 1 - j. */
    *k = n + 1 - *j;
    if (*k < *j)
        *k = *j;
}

void ntp_stats_compute(const double *samples, size_t n, ntp_stats *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0 || !samples)
        return;
    double *s = malloc(n * sizeof *s);
    out->n = n;
    double sum = 0.0;
    out->min = out->max = samples[0];
    for (size_t i = 0; i < n; i++) {
        sum += samples[i];
        out->min = fmin(out->min, samples[i]);
        out->max = fmax(out->max, samples[i]);
    }
    out->mean = sum / (double)n;
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = samples[i] - out->mean;
        ss += d * d;
    }
    /* Sample standard deviation (Bessel's n - 1), as numpy's ddof=1. */
    out->stddev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
    out->cv = out->mean != 0.0 ? out->stddev / fabs(out->mean) : 0.0;
    if (!s) {
        /* Without memory for a sorted copy the quantiles cannot be had;
         * the summary degrades to the mean with a [min, max] interval
         * rather than failing a whole run over its summary. */
        out->median = out->p90 = out->p99 = out->mean;
        out->ci95_lo = out->min;
        out->ci95_hi = out->max;
        return;
    }
    memcpy(s, samples, n * sizeof *s);
    qsort(s, n, sizeof *s, ntp__cmp_double);
    out->median = ntp_stats_quantile_sorted(s, n, 0.5);
    out->p90 = ntp_stats_quantile_sorted(s, n, 0.90);
    out->p99 = ntp_stats_quantile_sorted(s, n, 0.99);
    size_t j, k;
    median_ci_ranks(n, &j, &k);
    out->ci95_lo = s[j - 1];
    out->ci95_hi = s[k - 1];
    free(s);
}

double ntp__median_inplace(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, ntp__cmp_double);
    return ntp_stats_quantile_sorted(v, (size_t)n, 0.5);
}
