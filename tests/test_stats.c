/* Summary statistics: quantiles as numpy computes them, sample standard
 * deviation, and the order-statistic confidence interval of the median
 * checked against exact binomial ranks. Expected values are worked out by
 * hand or with numpy (noted where). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ntprof/stats.h"

#define EPS 1e-12

static void test_one_to_ten(void **state)
{
    (void)state;
    const double x[] = {7, 3, 10, 1, 5, 2, 9, 4, 8, 6};
    double copy[10];
    memcpy(copy, x, sizeof x);
    ntp_stats s;
    ntp_stats_compute(copy, 10, &s);
    assert_int_equal(s.n, 10);
    assert_float_equal(s.min, 1.0, EPS);
    assert_float_equal(s.max, 10.0, EPS);
    assert_float_equal(s.mean, 5.5, EPS);
    /* Even n: the median is halfway between x(5) = 5 and x(6) = 6. */
    assert_float_equal(s.median, 5.5, EPS);
    /* p90: position 0.9 * 9 = 8.1, so x[8] + 0.1 (x[9] - x[8]) = 9.1. */
    assert_float_equal(s.p90, 9.1, EPS);
    /* p99: position 8.91, so 9 + 0.91 = 9.91. */
    assert_float_equal(s.p99, 9.91, EPS);
    /* Sum of squared deviations 82.5, divided by n - 1 = 9. */
    assert_float_equal(s.stddev, sqrt(82.5 / 9.0), EPS);
    assert_float_equal(s.stddev, 3.0276503540974917, EPS);
    assert_float_equal(s.cv, 3.0276503540974917 / 5.5, EPS);
    /* n = 10: P(B <= 1) = 11/1024 <= 0.025 < P(B <= 2) = 56/1024, so the
     * interval is [x(2), x(9)] (coverage 1 - 22/1024 = 97.9%). */
    assert_float_equal(s.ci95_lo, 2.0, EPS);
    assert_float_equal(s.ci95_hi, 9.0, EPS);
    /* The input is not modified (the function sorts a copy). */
    assert_memory_equal(copy, x, sizeof x);
}

static void test_numpy_values(void **state)
{
    (void)state;
    /* numpy: np.percentile(x, [50, 90, 99]) = [2.25, 5.3, 7.73],
     * x.mean() = 2.7142857142857144, x.std(ddof=1) = 2.6864962134277994. */
    const double x[] = {0.5, 2.25, 1.0, 8.0, 3.5, 3.5, 0.25};
    ntp_stats s;
    ntp_stats_compute(x, 7, &s);
    assert_float_equal(s.median, 2.25, EPS);
    assert_float_equal(s.p90, 5.3, EPS);
    assert_float_equal(s.p99, 7.73, EPS);
    assert_float_equal(s.mean, 2.7142857142857144, EPS);
    assert_float_equal(s.stddev, 2.6864962134277994, EPS);
    assert_float_equal(s.cv, 0.9897617628418208, 1e-12);
    /* n = 7: P(B <= 0) = 1/128 is the only tail under 2.5%: [x(1), x(7)]. */
    assert_float_equal(s.ci95_lo, 0.25, EPS);
    assert_float_equal(s.ci95_hi, 8.0, EPS);
}

static void test_single_value(void **state)
{
    (void)state;
    const double x[] = {4.25};
    ntp_stats s;
    ntp_stats_compute(x, 1, &s);
    assert_int_equal(s.n, 1);
    assert_float_equal(s.min, 4.25, EPS);
    assert_float_equal(s.max, 4.25, EPS);
    assert_float_equal(s.mean, 4.25, EPS);
    assert_float_equal(s.median, 4.25, EPS);
    assert_float_equal(s.p90, 4.25, EPS);
    assert_float_equal(s.p99, 4.25, EPS);
    assert_float_equal(s.stddev, 0.0, EPS);
    assert_float_equal(s.cv, 0.0, EPS);
    assert_float_equal(s.ci95_lo, 4.25, EPS);
    assert_float_equal(s.ci95_hi, 4.25, EPS);
}

static void test_two_values(void **state)
{
    (void)state;
    const double x[] = {3.0, 1.0};
    ntp_stats s;
    ntp_stats_compute(x, 2, &s);
    assert_float_equal(s.median, 2.0, EPS);
    assert_float_equal(s.p90, 2.8, EPS);  /* 1 + 0.9 * 2 */
    assert_float_equal(s.p99, 2.98, EPS); /* 1 + 0.99 * 2 */
    assert_float_equal(s.stddev, sqrt(2.0), EPS);
    assert_float_equal(s.cv, sqrt(2.0) / 2.0, EPS);
    /* Too few samples for 95%: min..max (documented). */
    assert_float_equal(s.ci95_lo, 1.0, EPS);
    assert_float_equal(s.ci95_hi, 3.0, EPS);
}

static void test_empty(void **state)
{
    (void)state;
    ntp_stats s;
    memset(&s, 0x5A, sizeof s); /* garbage that must be overwritten */
    ntp_stats_compute(NULL, 0, &s);
    assert_int_equal(s.n, 0);
    const double *v[] = {&s.min, &s.max,    &s.mean,    &s.median,  &s.p90,
                         &s.p99, &s.stddev, &s.ci95_lo, &s.ci95_hi, &s.cv};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        assert_float_equal(*v[i], 0.0, 0.0);
    const double one = 1.0;
    ntp_stats_compute(&one, 0, &s);
    assert_int_equal(s.n, 0);
    assert_float_equal(s.median, 0.0, 0.0);
}

/* The samples 1..n in a scrambled order, so sorting is exercised. */
static double *scrambled(size_t n)
{
    double *x = malloc(n * sizeof *x);
    assert_non_null(x);
    for (size_t i = 0; i < n; i++)
        x[i] = (double)i + 1.0;
    /* A fixed shuffle (LCG) so the test is reproducible. */
    uint64_t r = 12345;
    for (size_t i = n - 1; i > 0; i--) {
        r = r * 6364136223846793005ULL + 1442695040888963407ULL;
        size_t j = (size_t)((r >> 33) % (i + 1));
        double t = x[i];
        x[i] = x[j];
        x[j] = t;
    }
    return x;
}

struct ci_case {
    size_t n;
    double lo, hi; /* 1-based ranks, which equal the values for 1..n */
};

static void test_median_ci_ranks(void **state)
{
    (void)state;
    /* Exact ranks from the binomial table (largest j with
     * P(Binomial(n, 1/2) <= j - 1) <= 0.025, k = n + 1 - j), computed with
     * math.comb; for n = 20 the classic table gives [x(6), x(15)]. Beyond
     * n = 100 the normal approximation floor(n/2 - 1.96 sqrt(n)/2) is used:
     * equal to the exact rank at n = 1000, one rank wider (conservative) at
     * n = 101 (exact: 41) and n = 5000 (exact: 2431). */
    const struct ci_case cases[] = {
        {3, 1, 3},   {5, 1, 5},     {6, 1, 6},     {9, 2, 8},        {10, 2, 9},
        {20, 6, 15}, {100, 40, 61}, {101, 40, 62}, {1000, 469, 532}, {5000, 2430, 2571},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        double *x = scrambled(cases[c].n);
        ntp_stats s;
        ntp_stats_compute(x, cases[c].n, &s);
        print_message("n=%zu: ci [%g, %g], expected [%g, %g]\n", cases[c].n, s.ci95_lo, s.ci95_hi,
                      cases[c].lo, cases[c].hi);
        assert_float_equal(s.ci95_lo, cases[c].lo, 0.0);
        assert_float_equal(s.ci95_hi, cases[c].hi, 0.0);
        assert_true(s.ci95_lo <= s.median && s.median <= s.ci95_hi);
        free(x);
    }
}

static void test_quantile_sorted(void **state)
{
    (void)state;
    const double x[] = {10, 20, 30, 40, 50};
    assert_float_equal(ntp_stats_quantile_sorted(x, 5, 0.0), 10.0, EPS);
    assert_float_equal(ntp_stats_quantile_sorted(x, 5, 1.0), 50.0, EPS);
    assert_float_equal(ntp_stats_quantile_sorted(x, 5, 0.25), 20.0, EPS);
    assert_float_equal(ntp_stats_quantile_sorted(x, 5, 0.3), 22.0, EPS);   /* pos 1.2 */
    assert_float_equal(ntp_stats_quantile_sorted(x, 5, 0.875), 45.0, EPS); /* pos 3.5 */
    /* Out-of-range q clamps instead of reading outside the array. */
    assert_float_equal(ntp_stats_quantile_sorted(x, 5, -1.0), 10.0, EPS);
    assert_float_equal(ntp_stats_quantile_sorted(x, 5, 2.0), 50.0, EPS);
    assert_float_equal(ntp_stats_quantile_sorted(x, 5, NAN), 10.0, EPS);
    assert_float_equal(ntp_stats_quantile_sorted(x, 0, 0.5), 0.0, EPS);
}

static void test_constant_samples(void **state)
{
    (void)state;
    double x[50];
    for (int i = 0; i < 50; i++)
        x[i] = 0.125;
    ntp_stats s;
    ntp_stats_compute(x, 50, &s);
    assert_float_equal(s.median, 0.125, 0.0);
    assert_float_equal(s.stddev, 0.0, 0.0);
    assert_float_equal(s.cv, 0.0, 0.0);
    assert_float_equal(s.ci95_lo, 0.125, 0.0);
    assert_float_equal(s.ci95_hi, 0.125, 0.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_to_ten),      cmocka_unit_test(test_numpy_values),
        cmocka_unit_test(test_single_value),    cmocka_unit_test(test_two_values),
        cmocka_unit_test(test_empty),           cmocka_unit_test(test_median_ci_ranks),
        cmocka_unit_test(test_quantile_sorted), cmocka_unit_test(test_constant_samples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
