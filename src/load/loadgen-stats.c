/* The load generator's statistics: LoadGen's percentiles and its
 * early-stopping rule (docs/load.md#early-stopping). */
#include <math.h>
#include <stdlib.h>

#include "loadgen-impl.h"
#include "measure/measure-impl.h"

/* log(exp(a) + exp(b)) without overflow; -INFINITY is the empty sum. */
static double log_add(double a, double b)
{
    if (a == -INFINITY)
        return b;
    if (b == -INFINITY)
        return a;
    double m = a > b ? a : b;
    return m + log1p(exp(-fabs(a - b)));
}

/* P(X <= k) for X ~ Binomial(n, q), summed in log space so that n in the
 * hundreds of thousands neither underflows nor loses the tail. */
static double binom_cdf(int64_t n, int64_t k, double q)
{
    if (k >= n)
        return 1.0;
    double lq = log(q), lr = log1p(-q);
    double lp = (double)n * lr; /* log P(X = 0) */
    double acc = lp;
    for (int64_t x = 0; x < k; x++) {
        lp += log((double)(n - x) / (double)(x + 1)) + lq - lr;
        acc = log_add(acc, lp);
    }
    double p = exp(acc);
    return p > 1.0 ? 1.0 : p;
}

/* LoadGen's odds: with h queries under the latency and t over it, the
 * probability of seeing at most t over it if the true share over it were
 * 1 - p, i.e. if the p-th percentile were just at the latency. */
static double odds(int64_t h, int64_t t, double p)
{
    return binom_cdf(h + t, t, 1.0 - p);
}

int64_t ntp_loadgen_min_passing(int64_t over, double p, double c)
{
    if (!(p > 0 && p < 1) || !(c > 0 && c < 1) || over < 0)
        return -1;
    double target = 1.0 - c;
    int64_t lo = 1, hi = 1;
    while (odds(hi, over, p) >= target) {
        lo = hi + 1;
        if (hi > INT64_MAX / 4)
            return -1;
        hi *= 2;
    }
    while (lo < hi) { /* the smallest h in [lo, hi] with odds < target */
        int64_t mid = lo + (hi - lo) / 2;
        if (odds(mid, over, p) < target)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

void ntp__lg_early_stopping(const double *sorted, int64_t n, double p, ntp__lg_es *out)
{
    const double c = NTP_LOADGEN_CONFIDENCE;
    out->needed = ntp_loadgen_min_passing(1, p, c) + 1;
    out->met = n >= out->needed;
    out->estimate = n > 0 ? sorted[n - 1] : 0;
    if (!out->met)
        return;
    /* The largest t with n >= h(t) + t (h(t) + t grows with t): the run may
     * then discard its t - 1 highest latencies and still claim p, and its
     * estimate is the t-th highest. */
    int64_t lo = 1, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (n >= ntp_loadgen_min_passing(mid, p, c) + mid)
            lo = mid;
        else
            hi = mid - 1;
    }
    out->estimate = sorted[n - lo];
}

void ntp__lg_early_stopping_bound(int64_t n, int64_t over, double p, ntp__lg_es *out)
{
    int64_t h = ntp_loadgen_min_passing(over, p, NTP_LOADGEN_CONFIDENCE);
    out->needed = h + over;
    out->met = n >= out->needed;
    out->estimate = 0;
}

void ntp__lg_sort(double *v, int64_t n)
{
    qsort(v, (size_t)n, sizeof *v, ntp__cmp_double);
}

double ntp__lg_percentile(const double *sorted, int64_t n, double p)
{
    if (n <= 0)
        return 0;
    int64_t i = (int64_t)((double)n * p);
    return sorted[i < n ? i : n - 1];
}
