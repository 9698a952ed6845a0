/* The load generator's statistics and its refusals of bad input
 * (docs/load.md). LoadGen's early-stopping numbers are checked against the
 * exact binomial sums, computed with Python's fractions
 * (sum of C(h+t, x) (1-p)^x p^(h+t-x) for x <= t, below 1 - 0.99), which
 * also give LoadGen's published minimums: 64 queries for a single-stream
 * p90, 662 for a multi-stream p99. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "load/loadgen-impl.h"
#include "ntprof/ntprof.h"

#define MODEL NTP_SOURCE_DIR "/models/serve-delay.xml"

static void test_min_passing(void **state)
{
    (void)state;
    assert_int_equal(ntp_loadgen_min_passing(1, 0.90, 0.99), 63);
    assert_int_equal(ntp_loadgen_min_passing(2, 0.90, 0.99), 79);
    assert_int_equal(ntp_loadgen_min_passing(1, 0.99, 0.99), 661);
    assert_int_equal(ntp_loadgen_min_passing(0, 0.99, 0.99), 459);
    assert_int_equal(ntp_loadgen_min_passing(10, 0.99, 0.99), 2000);
    assert_int_equal(ntp_loadgen_min_passing(1, 1.5, 0.99), -1);
}

/* Latencies 1..n: the estimate is the value at LoadGen's index n - t. */
static void test_early_stopping_estimate(void **state)
{
    (void)state;
    double v[1000];
    for (int i = 0; i < 1000; i++)
        v[i] = i + 1;
    ntp__lg_es es;
    ntp__lg_early_stopping(v, 100, 0.90, &es);
    assert_true(es.met);
    assert_int_equal(es.needed, 64);
    assert_float_equal(es.estimate, 98, 0);
    ntp__lg_early_stopping(v, 1000, 0.90, &es);
    assert_float_equal(es.estimate, 923, 0);
    ntp__lg_early_stopping(v, 63, 0.90, &es);
    assert_false(es.met);
    assert_int_equal(es.needed, 64);
    ntp__lg_early_stopping(v, 661, 0.99, &es);
    assert_false(es.met);
    assert_int_equal(es.needed, 662);
    /* Server: 10 queries over the bound need 2000 under it. */
    ntp__lg_early_stopping_bound(2009, 10, 0.99, &es);
    assert_false(es.met);
    assert_int_equal(es.needed, 2010);
    ntp__lg_early_stopping_bound(2010, 10, 0.99, &es);
    assert_true(es.met);
}

/* LoadGen's percentile: the sorted value at floor(n p). */
static void test_percentile(void **state)
{
    (void)state;
    double v[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    assert_float_equal(ntp__lg_percentile(v, 10, 0.5), 6, 0);
    assert_float_equal(ntp__lg_percentile(v, 10, 0.9), 10, 0);
    assert_float_equal(ntp__lg_percentile(v, 10, 0.99), 10, 0);
    assert_float_equal(ntp__lg_percentile(v, 10, 0.0), 1, 0);
}

static void test_scenario_names(void **state)
{
    (void)state;
    ntp_loadgen_scenario s;
    for (int i = 0; i < NTP_LOADGEN_SCENARIO_COUNT; i++) {
        assert_int_equal(ntp_loadgen_scenario_parse(ntp_loadgen_scenario_name(i), &s), 0);
        assert_int_equal(s, i);
    }
    assert_int_equal(ntp_loadgen_scenario_parse("serverr", &s), NTP_STATUS_UNKNOWN_NAME);
}

static ntp_loadgen_opts quick(ntp_loadgen_scenario sc)
{
    ntp_loadgen_opts o;
    ntp_loadgen_opts_default(&o);
    o.scenario = sc;
    o.backend = "ref";
    o.duration_s = 0;
    o.min_queries = 20;
    o.warmup = 2;
    return o;
}

static ntp_load_opts with(const char **set, int n)
{
    ntp_load_opts lo = {0};
    lo.set = set;
    lo.n_set = n;
    return lo;
}

static void expect_error(const ntp_loadgen_opts *o, const ntp_load_opts *lo, const char *path,
                         const char *want)
{
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_loadgen_result *r = (ntp_loadgen_result *)1;
    ntp_status st = ntp_loadgen_run(ctx, path, lo, o, &r);
    assert_int_not_equal(st, NTP_STATUS_OK);
    assert_null(r);
    if (!strstr(ntp_ctx_errmsg(ctx), want))
        fail_msg("error '%s' does not say '%s'", ntp_ctx_errmsg(ctx), want);
    ntp_ctx_free(ctx);
}

static void test_bad_input(void **state)
{
    (void)state;
    const char *set[] = {"base_us=2000"};
    ntp_load_opts lo = with(set, 1);
    ntp_loadgen_opts o = quick(NTP_LOADGEN_SERVER);
    o.latency_bound_ms = 10;
    o.qps = 0;
    expect_error(&o, &lo, MODEL, "qps must be positive");
    o.qps = -5;
    expect_error(&o, &lo, MODEL, "got -5");
    o.qps = 100;
    o.latency_bound_ms = 0;
    expect_error(&o, &lo, MODEL, "latency_bound_ms must be positive");
    /* A bound below one query's 2 ms: said, with the latency measured
     * (at least the 2 ms busy wait; more on a busy machine). */
    o.latency_bound_ms = 1.5;
    expect_error(&o, &lo, MODEL, "1.5 ms is below one query's latency: ");
    {
        ntp_ctx *ctx = ntp_ctx_init();
        ntp_loadgen_result *r = NULL;
        assert_int_not_equal(ntp_loadgen_run(ctx, MODEL, &lo, &o, &r), NTP_STATUS_OK);
        const char *at = strstr(ntp_ctx_errmsg(ctx), "latency: ");
        assert_non_null(at);
        double ms = strtod(at + strlen("latency: "), NULL);
        if (!(ms >= 2.0 && ms < 1000))
            fail_msg("one query's latency said as %g ms, the delay is 2 ms", ms);
        ntp_ctx_free(ctx);
    }
    o = quick(NTP_LOADGEN_OFFLINE);
    o.find_max_qps = true;
    expect_error(&o, &lo, MODEL, "find_max_qps is for the server scenario");
    o = quick(NTP_LOADGEN_OFFLINE);
    o.max_batch = 0;
    expect_error(&o, &lo, MODEL, "max_batch expects 1 to 256");
    /* Dynamic batching needs a param "batch" to set. */
    o.max_batch = 2;
    ntp_load_opts none = {0};
    expect_error(&o, &none, NTP_SOURCE_DIR "/tests/data/load-nobatch.xml",
                 "declares no 'batch' param");
}

/* Instances x threads beyond the CPUs: the run goes on, unpinned, warned. */
static void test_oversubscribed_warns(void **state)
{
    (void)state;
    const char *set[] = {"base_us=50"};
    ntp_load_opts lo = with(set, 1);
    ntp_loadgen_opts o = quick(NTP_LOADGEN_SINGLE_STREAM);
    o.instances = 64;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_loadgen_result *r = NULL;
    assert_int_equal(ntp_loadgen_run(ctx, MODEL, &lo, &o, &r), NTP_STATUS_OK);
    assert_false(ntp_loadgen_result_pinned(r));
    bool seen = false;
    for (int i = 0; i < ntp_loadgen_result_warning_count(r); i++)
        seen = seen || strstr(ntp_loadgen_result_warning(r, i),
                              "64 instances x 1 threads = 64 threads") != NULL;
    assert_true(seen);
    /* Too short for its p90: 20 queries, and early stopping says 64. */
    assert_false(ntp_loadgen_result_validity(r).early_stopping_met);
    assert_int_equal(ntp_loadgen_result_validity(r).early_stopping_needed, 64);
    assert_false(ntp_loadgen_result_validity(r).valid);
    assert_true(ntp_loadgen_result_queries(r) >= 20);
    ntp_loadgen_result_free(r);
    ntp_ctx_free(ctx);
}

/* A stop flag set before the run: nothing issued, a result that says so. */
static void test_stop(void **state)
{
    (void)state;
    const char *set[] = {"base_us=100"};
    ntp_load_opts lo = with(set, 1);
    ntp_loadgen_opts o = quick(NTP_LOADGEN_SERVER);
    o.qps = 1000;
    o.latency_bound_ms = 50;
    o.min_queries = 100000;
    volatile int stop = 1;
    o.stop = (const volatile int *)&stop;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_loadgen_result *r = NULL;
    assert_int_equal(ntp_loadgen_run(ctx, MODEL, &lo, &o, &r), NTP_STATUS_OK);
    assert_true(ntp_loadgen_result_interrupted(r));
    assert_false(ntp_loadgen_result_validity(r).valid);
    assert_int_equal(ntp_loadgen_result_queries(r), 0);
    ntp_loadgen_result_free(r);
    ntp_ctx_free(ctx);
}

/* The accessors against each other and against the queries' own records:
 * the samples of the queries, of the batches and the total agree; the
 * percentiles are LoadGen's (floor(n p)) of the queries' own latencies;
 * NULL and indices out of range answer 0 or NULL. */
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void test_accessors(void **state)
{
    (void)state;
    const char *set[] = {"base_us=50", "per_sample_us=10"};
    ntp_load_opts lo = with(set, 2);
    ntp_loadgen_opts o = quick(NTP_LOADGEN_MULTI_STREAM);
    o.samples_per_query = 3;
    o.max_batch = 4;
    o.seed = 5;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_loadgen_result *r = NULL;
    assert_int_equal(ntp_loadgen_run(ctx, MODEL, &lo, &o, &r), NTP_STATUS_OK);
    assert_int_equal(ntp_loadgen_result_scenario(r), NTP_LOADGEN_MULTI_STREAM);
    assert_string_equal(ntp_loadgen_result_backend(r), "ref");
    assert_int_equal(ntp_loadgen_result_instances(r), 1);
    assert_int_equal(ntp_loadgen_result_max_batch(r), 4);
    assert_int_equal(ntp_loadgen_result_samples_per_query(r), 3);
    assert_int_equal(ntp_loadgen_result_seed(r), 5);
    assert_int_equal(ntp_loadgen_result_min_queries(r), 20);
    assert_false(ntp_loadgen_result_interrupted(r));

    int64_t n = ntp_loadgen_result_queries(r);
    assert_true(n >= 20 && n < 4096);
    double lat[4096];
    int64_t samples = 0;
    for (int64_t i = 0; i < n; i++) {
        const ntp_loadgen_query *q = ntp_loadgen_result_query(r, i);
        assert_non_null(q);
        assert_int_equal(q->samples, 3);
        samples += q->samples;
        lat[i] = (q->done_us - q->scheduled_us) / 1e3;
    }
    assert_null(ntp_loadgen_result_query(r, n));
    assert_null(ntp_loadgen_result_query(r, -1));
    assert_int_equal(ntp_loadgen_result_samples(r), samples);
    int64_t batched = 0;
    for (int b = 0; b <= 4; b++)
        batched += b * ntp_loadgen_result_batch_count(r, b);
    assert_int_equal(batched, samples);
    assert_int_equal(ntp_loadgen_result_batch_count(r, 5), 0);

    qsort(lat, (size_t)n, sizeof *lat, cmp_double);
    ntp_loadgen_latency l = ntp_loadgen_result_latency_ms(r);
    assert_float_equal(l.min, lat[0], 1e-9);
    assert_float_equal(l.p50, lat[n / 2], 1e-9);
    assert_float_equal(l.p99, lat[(int64_t)((double)n * 0.99)], 1e-9);
    assert_float_equal(l.max, lat[n - 1], 1e-9);
    assert_float_equal(ntp_loadgen_result_percentile(r), 0.99, 0);
    assert_float_equal(ntp_loadgen_result_metric_ms(r), l.p99, 0);

    ntp_loadgen_validity v = ntp_loadgen_result_validity(r);
    assert_false(v.early_stopping_met); /* 20 queries; the p99 needs 662 */
    assert_int_equal(v.early_stopping_needed, 662);
    assert_false(v.valid);
    double u = ntp_loadgen_result_utilisation(r, 0);
    assert_true(u > 0 && u <= 1);
    assert_float_equal(ntp_loadgen_result_utilisation(r, 1), 0, 0);
    int nd = ntp_loadgen_result_depth_count(r);
    assert_true(nd > 0);
    assert_true(ntp_loadgen_result_depth(r, 0) >= 1);
    assert_int_equal(ntp_loadgen_result_depth(r, nd), 0);
    assert_null(ntp_loadgen_result_point(r, 0)); /* no search */
    assert_non_null(ntp_loadgen_result_contention(r));
    assert_null(ntp_loadgen_result_warning(r, ntp_loadgen_result_warning_count(r)));

    assert_null(ntp_loadgen_result_topology(NULL));
    assert_int_equal(ntp_loadgen_result_queries(NULL), 0);
    assert_null(ntp_loadgen_result_query(NULL, 0));
    assert_null(ntp_loadgen_result_contention(NULL));
    assert_float_equal(ntp_loadgen_result_latency_ms(NULL).max, 0, 0);
    assert_int_equal(ntp_loadgen_result_generator(NULL).wakes, 0);
    ntp_loadgen_result_free(r);
    ntp_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_min_passing), cmocka_unit_test(test_early_stopping_estimate),
        cmocka_unit_test(test_percentile),  cmocka_unit_test(test_scenario_names),
        cmocka_unit_test(test_bad_input),   cmocka_unit_test(test_oversubscribed_warns),
        cmocka_unit_test(test_stop),        cmocka_unit_test(test_accessors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
