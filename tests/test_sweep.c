/* Sweeps: expansion of factors into configurations one factor at a time
 * (baseline first) and in full (odometer order), the `ntprof run` options
 * of each configuration, every refusal with its message, and the table,
 * JSON and CSV of results with a failed configuration among them. Running
 * configurations in child processes is tested through the CLI
 * (test_sweep_cli.sh). */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "measure/run-result-impl.h"
#include "ntprof/ntprof.h"

typedef struct fixture {
    ntp_ctx *ctx;
    ntp_graph *g;
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    if (!fx || !(fx->ctx = ntp_ctx_init()))
        return -1;
    if (ntp_graph_load(fx->ctx, NTP_SOURCE_DIR "/models/tiny-mlp.xml", NULL, &fx->g) !=
        NTP_STATUS_OK) {
        fprintf(stderr, "%s\n", ntp_ctx_errmsg(fx->ctx));
        return -1;
    }
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    ntp_graph_free(fx->g);
    ntp_ctx_free(fx->ctx);
    free(fx);
    return 0;
}

static ntp_sweep *make(fixture *fx, ntp_sweep_design d, const char *const *specs, int n)
{
    ntp_sweep *s;
    assert_int_equal(ntp_sweep_init(fx->ctx, fx->g, "models/tiny-mlp.xml", d, &s), NTP_STATUS_OK);
    for (int i = 0; i < n; i++)
        if (ntp_sweep_add_factor(fx->ctx, s, specs[i]) != NTP_STATUS_OK)
            fail_msg("%s: %s", specs[i], ntp_ctx_errmsg(fx->ctx));
    assert_int_equal(ntp_sweep_expand(fx->ctx, s), NTP_STATUS_OK);
    return s;
}

static void test_ofat(void **state)
{
    fixture *fx = *state;
    const char *specs[] = {"batch=1,2,4", "hidden=16,32", "threads=1"};
    ntp_sweep *s = make(fx, NTP_SWEEP_OFAT, specs, 3);
    /* The baseline, then batch 2 and 4, then hidden 32: 1 + 2 + 1 + 0. */
    assert_int_equal(ntp_sweep_config_count(s), 4);
    static const char *const labels[] = {
        "batch=1 hidden=16 threads=1", "batch=2 hidden=16 threads=1", "batch=4 hidden=16 threads=1",
        "batch=1 hidden=32 threads=1"};
    for (int c = 0; c < 4; c++)
        assert_string_equal(ntp_sweep_config_label(s, c), labels[c]);
    assert_int_equal(ntp_sweep_config_value(s, 2, 0), 2);
    assert_int_equal(ntp_sweep_config_value(s, 2, 1), 0);
    assert_int_equal(ntp_sweep_config_value(s, 3, 1), 1);
    /* Configuration 3 as a struct: batch 1, threads 1, hidden=32; backend
     * and precision are not varied. */
    ntp_sweep_config cfg;
    assert_int_equal(ntp_sweep_config_get(fx->ctx, s, 3, &cfg), NTP_STATUS_OK);
    assert_null(cfg.backend);
    assert_false(cfg.set_precision);
    assert_int_equal(cfg.batch, 1);
    assert_int_equal(cfg.threads, 1);
    assert_int_equal(cfg.n_set, 1);
    assert_string_equal(cfg.set[0], "hidden=32");
    assert_int_equal(ntp_sweep_config_get(fx->ctx, s, 1, &cfg), NTP_STATUS_OK);
    assert_int_equal(cfg.batch, 2);
    assert_string_equal(cfg.set[0], "hidden=16");
    assert_int_equal(ntp_sweep_config_get(fx->ctx, s, 4, &cfg), NTP_STATUS_INVALID_ARGUMENT);
    assert_string_equal(ntp_ctx_errmsg(fx->ctx), "no configuration 4");
    ntp_ctx_clear(fx->ctx);
    assert_int_equal(ntp_sweep_factor_count(s), 3);
    assert_string_equal(ntp_sweep_factor_name(s, 1), "hidden");
    assert_int_equal(ntp_sweep_value_count(s, 0), 3);
    assert_string_equal(ntp_sweep_value(s, 0, 2), "4");
    assert_null(ntp_sweep_value(s, 0, 3));
    assert_null(ntp_sweep_config_label(s, 4));
    ntp_sweep_free(s);
}

static void test_full(void **state)
{
    fixture *fx = *state;
    const char *specs[] = {"precision=f32,bf16", "backend=ref", "hidden=8,16,24"};
    ntp_sweep *s = make(fx, NTP_SWEEP_FULL, specs, 3);
    assert_int_equal(ntp_sweep_config_count(s), 6);
    /* The last factor changes fastest. */
    static const char *const labels[] = {
        "precision=f32 backend=ref hidden=8",   "precision=f32 backend=ref hidden=16",
        "precision=f32 backend=ref hidden=24",  "precision=bf16 backend=ref hidden=8",
        "precision=bf16 backend=ref hidden=16", "precision=bf16 backend=ref hidden=24"};
    for (int c = 0; c < 6; c++)
        assert_string_equal(ntp_sweep_config_label(s, c), labels[c]);
    ntp_sweep_config cfg;
    assert_int_equal(ntp_sweep_config_get(fx->ctx, s, 4, &cfg), NTP_STATUS_OK);
    assert_true(cfg.set_precision);
    assert_int_equal(cfg.precision, NTP_DTYPE_BF16);
    assert_string_equal(cfg.backend, "ref");
    assert_int_equal(cfg.batch, 0);
    assert_int_equal(cfg.threads, 0);
    assert_int_equal(cfg.n_set, 1);
    assert_string_equal(cfg.set[0], "hidden=16");
    ntp_sweep_free(s);
    ntp_sweep_design d;
    assert_int_equal(ntp_sweep_design_parse("full", &d), NTP_STATUS_OK);
    assert_int_equal(d, NTP_SWEEP_FULL);
    assert_int_equal(ntp_sweep_design_parse("ofat", &d), NTP_STATUS_OK);
    assert_int_equal(d, NTP_SWEEP_OFAT);
    assert_int_equal(ntp_sweep_design_parse("random", &d), NTP_STATUS_UNKNOWN_NAME);
}

static void test_refusals(void **state)
{
    fixture *fx = *state;
    static const struct {
        const char *spec;
        ntp_status st;
        const char *msg;
    } cases[] = {
        {"hiden=1,2", NTP_STATUS_UNKNOWN_NAME,
         "ntp_sweep_add_factor hiden: not backend, precision, batch, threads or a param of models/tiny-mlp.xml; "
         "did you mean 'hidden'?"},
        {"batch=1,0", NTP_STATUS_INVALID_ARGUMENT,
         "ntp_sweep_add_factor batch: '0' is not a positive integer"},
        {"threads=two", NTP_STATUS_INVALID_ARGUMENT,
         "ntp_sweep_add_factor threads: 'two' is not a positive integer"},
        {"precision=f32,f64", NTP_STATUS_INVALID_ARGUMENT,
         "ntp_sweep_add_factor precision: 'f64' is not f32, bf16, f16 or i8"},
        {"backend=ref,rfe", NTP_STATUS_UNKNOWN_NAME,
         "ntp_sweep_add_factor backend: unknown backend 'rfe'; did you mean 'ref'?"},
        {"hidden=16,16", NTP_STATUS_INVALID_ARGUMENT,
         "ntp_sweep_add_factor hidden: '16' given twice"},
        {"hidden=16,,32", NTP_STATUS_INVALID_ARGUMENT,
         "ntp_sweep_add_factor hidden: an empty value"},
        {"hidden", NTP_STATUS_INVALID_ARGUMENT,
         "ntp_sweep_add_factor expects NAME=V1,V2,..., got 'hidden'"},
        {"=1,2", NTP_STATUS_INVALID_ARGUMENT,
         "ntp_sweep_add_factor expects NAME=V1,V2,..., got '=1,2'"},
        {"hidden=", NTP_STATUS_INVALID_ARGUMENT,
         "ntp_sweep_add_factor expects NAME=V1,V2,..., got 'hidden='"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ntp_sweep *s;
        assert_int_equal(ntp_sweep_init(fx->ctx, fx->g, "models/tiny-mlp.xml", NTP_SWEEP_OFAT, &s),
                         NTP_STATUS_OK);
        ntp_status st = ntp_sweep_add_factor(fx->ctx, s, cases[i].spec);
        /* The backend message goes on to list this build's backends. */
        if (st != cases[i].st ||
            strncmp(ntp_ctx_errmsg(fx->ctx), cases[i].msg, strlen(cases[i].msg)) != 0)
            fail_msg("'%s': got %s '%s', want %s '%s'", cases[i].spec, ntp_status_name(st),
                     ntp_ctx_errmsg(fx->ctx), ntp_status_name(cases[i].st), cases[i].msg);
        assert_int_equal(ntp_sweep_factor_count(s), 0);
        ntp_sweep_free(s);
    }
    ntp_sweep *s;
    assert_int_equal(ntp_sweep_init(fx->ctx, fx->g, "t.xml", NTP_SWEEP_FULL, &s), NTP_STATUS_OK);
    assert_int_equal(ntp_sweep_expand(fx->ctx, s), NTP_STATUS_INVALID_ARGUMENT);
    assert_string_equal(ntp_ctx_errmsg(fx->ctx), "a sweep needs at least one ntp_sweep_add_factor");
    assert_int_equal(ntp_sweep_add_factor(fx->ctx, s, "hidden=1,2"), NTP_STATUS_OK);
    assert_int_equal(ntp_sweep_add_factor(fx->ctx, s, "hidden=3"), NTP_STATUS_INVALID_ARGUMENT);
    assert_string_equal(ntp_ctx_errmsg(fx->ctx), "ntp_sweep_add_factor hidden given twice");
    /* 2 x 100 x 100 = 20,000 configurations in full is too many... */
    char spec[1024];
    size_t used = (size_t)snprintf(spec, sizeof spec, "batch=");
    for (int v = 1; v <= 100; v++)
        used += (size_t)snprintf(spec + used, sizeof spec - used, "%s%d", v > 1 ? "," : "", v);
    assert_int_equal(ntp_sweep_add_factor(fx->ctx, s, spec), NTP_STATUS_OK);
    spec[0] = 't';
    memmove(spec + 7, spec + 5, strlen(spec + 5) + 1);
    memcpy(spec, "threads", 7);
    assert_int_equal(ntp_sweep_add_factor(fx->ctx, s, spec), NTP_STATUS_OK);
    assert_int_equal(ntp_sweep_expand(fx->ctx, s), NTP_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ntp_ctx_errmsg(fx->ctx), "more than 10000 configurations"));
    ntp_sweep_free(s);
    /* ... while one factor at a time, 1 + 1 + 99 = 101, is fine. */
    assert_int_equal(ntp_sweep_init(fx->ctx, fx->g, "t.xml", NTP_SWEEP_OFAT, &s), NTP_STATUS_OK);
    assert_int_equal(ntp_sweep_add_factor(fx->ctx, s, "hidden=1,2"), NTP_STATUS_OK);
    assert_int_equal(ntp_sweep_add_factor(fx->ctx, s, spec), NTP_STATUS_OK);
    assert_int_equal(ntp_sweep_expand(fx->ctx, s), NTP_STATUS_OK);
    assert_int_equal(ntp_sweep_config_count(s), 101);
    ntp_sweep_free(s);
}

/* A finished run result, as a child's report would give, with an
 * end-to-end median of `ms`. */
static ntp_run_result *fake_result(double ms, int64_t batch)
{
    ntp_run_result *r = calloc(1, sizeof *r);
    assert_non_null(r);
    r->topology = "tiny-mlp";
    r->backend = "ref";
    r->batch = batch;
    r->flops = 2000000;
    ntp_stats e = {.n = 10,
                   .median = ms,
                   .min = 0.9 * ms,
                   .mean = ms,
                   .p90 = 1.1 * ms,
                   .p99 = 1.2 * ms,
                   .max = 1.3 * ms,
                   .stddev = 0.05 * ms,
                   .ci95_lo = 0.95 * ms,
                   .ci95_hi = 1.05 * ms,
                   .cv = 0.05};
    r->end_to_end_ms = e;
    r->layer_sum_ms = e;
    r->latency_ms = ms;
    r->throughput = (double)batch / (ms / 1000);
    ntp_env_collect(&r->env);
    return r;
}

static char *capture(ntp_ctx *ctx, const ntp_sweep *s, ntp_format fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(ntp_report_write_sweep(ctx, s, fmt, f), NTP_STATUS_OK);
    fclose(f);
    return buf;
}

static void test_results_and_writers(void **state)
{
    fixture *fx = *state;
    const char *specs[] = {"batch=1,2,4", "hidden=16,32"};
    ntp_sweep *s = make(fx, NTP_SWEEP_OFAT, specs, 2);
    ntp_sweep_set_result(s, 0, fake_result(2.0, 1));
    ntp_sweep_set_result(s, 1, fake_result(2.5, 2));
    assert_int_equal(ntp_sweep_set_error(fx->ctx, s, 2, "exit 1: tiny-mlp.xml:7: out of memory"),
                     NTP_STATUS_OK);
    ntp_sweep_set_result(s, 3, fake_result(4.0, 1));
    assert_int_equal(ntp_sweep_set_error(fx->ctx, s, 9, "x"), NTP_STATUS_INVALID_ARGUMENT);
    assert_null(ntp_sweep_result(s, 2));
    assert_string_equal(ntp_sweep_error(s, 2), "exit 1: tiny-mlp.xml:7: out of memory");
    assert_float_equal(ntp_sweep_result(s, 3)->end_to_end_ms.median, 4.0, 1e-12);

    char *t = capture(fx->ctx, s, NTP_FORMAT_TABLE);
    fputs(t, stdout);
    assert_non_null(
        strstr(t, "sweep of models/tiny-mlp.xml: one factor at a time, 4 configurations\n"));
    assert_non_null(strstr(t, "baseline (configuration 0): batch=1 hidden=16\n"
                              "fusion: off (no --fuse)\n"));
    assert_non_null(strstr(t,
                           "\n  # batch hidden status  median ms  ci95 lo  ci95 hi   p90 ms  cv %"
                           "  samples/s  GFLOP/s\n"));
    assert_non_null(strstr(t,
                           "\n  1 2     16     ok         2.5000   2.3750   2.6250   2.7500   5.0"
                           "      800.0     0.80\n"));
    assert_non_null(strstr(t, "\n  2 4     16     failed\n"));
    assert_non_null(strstr(t, "configuration 2 failed: batch=4 hidden=16: exit 1: tiny-mlp.xml:7: "
                              "out of memory\n"));
    assert_non_null(strstr(t, "3 of 4 configurations ran"));
    free(t);
    /* A sweep with --fuse says so. */
    for (int c = 0; c < 4; c++)
        if (c != 2)
            ((ntp_run_result *)ntp_sweep_result(s, c))->fused = true;
    t = capture(fx->ctx, s, NTP_FORMAT_TABLE);
    assert_non_null(strstr(t, "\nfusion: on (--fuse)\n"));
    free(t);
    for (int c = 0; c < 4; c++)
        if (c != 2)
            ((ntp_run_result *)ntp_sweep_result(s, c))->fused = false;

    t = capture(fx->ctx, s, NTP_FORMAT_CSV);
    assert_non_null(strstr(t, "config,label,batch,hidden,status,error,n,median_ms,"));
    assert_non_null(strstr(t, "\n2,batch=4 hidden=16,4,16,failed,exit 1: tiny-mlp.xml:7: out of "
                              "memory,,,,,,,,,,,,,\n"));
    assert_non_null(strstr(t, "\n3,batch=1 hidden=32,1,32,ok,,10,4,3.6,4,4.4,4.8,5.2,0.2,3.8,4.2,"
                              "0.05,250,0.5\n"));
    free(t);

    t = capture(fx->ctx, s, NTP_FORMAT_JSON);
    json_t *j = json_loads(t, 0, NULL);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "design")), "ofat");
    json_t *cfgs = json_object_get(j, "configurations");
    assert_int_equal(json_array_size(cfgs), 4);
    json_t *c2 = json_array_get(cfgs, 2);
    assert_string_equal(json_string_value(json_object_get(c2, "status")), "failed");
    assert_true(json_is_null(json_object_get(c2, "end_to_end")));
    json_t *c1 = json_array_get(cfgs, 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(c1, "values"), "batch")),
                        "2");
    assert_float_equal(
        json_number_value(json_object_get(json_object_get(c1, "end_to_end"), "median_ms")), 2.5,
        1e-12);
    assert_string_equal(json_string_value(json_object_get(json_object_get(c1, "report"), "kind")),
                        "run");
    json_decref(j);
    free(t);
    ntp_sweep_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ofat),
        cmocka_unit_test(test_full),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_results_and_writers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
