/* The run report (table, JSON, CSV) and the Chrome trace, from a run result
 * built by hand with known numbers. JSON is parsed back field by field and
 * validated against schema/report.schema.json with python3-jsonschema (a
 * missing jsonschema module fails the test); the trace is checked for what
 * Perfetto needs: every layer of every iteration, sorted timestamps, and
 * slices properly nested in their iteration. */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "measure/run-result-impl.h"
#include "ntprof/ntprof.h"

#define N_LAYERS 4
#define N_ITERS 3
#define ODD_NAME "glu \"gate\", part 2"
#define LONG_WARNING                                                                        \
    "the coefficient of variation of layer 'conv1' is 12.50%, above the 5% threshold: the " \
    "machine was busy or frequency scaling is active; pin the run with --pin and retry"

typedef struct fixture {
    ntp_ctx *ctx;
    ntp_run_result r;
    ntp_layer_result layers[N_LAYERS];
    ntp_marker_result markers[2];
    const char *pnames[2], *pvalues[2];
    char *warnings[2];
    ntp_trace_iter trace[N_ITERS];
    ntp_accuracy accuracy[2];
    double start[N_ITERS][N_LAYERS], end[N_ITERS][N_LAYERS];
} fixture;

/* Statistics with a distinct value in every field, so a field written
 * under the wrong name shows. Multiplying by k gives another distinct set. */
static ntp_stats stats(double k, size_t n)
{
    ntp_stats s = {.n = n,
                   .min = 1.25 * k,
                   .max = 2.5 * k,
                   .mean = 1.625 * k,
                   .median = 1.5 * k,
                   .p90 = 2.0 * k,
                   .p99 = 2.25 * k,
                   .stddev = 0.375 * k,
                   .ci95_lo = 1.375 * k,
                   .ci95_hi = 1.875 * k,
                   .cv = 0.25};
    return s;
}

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    if (!fx || !(fx->ctx = ntp_ctx_init()))
        return -1;
    ntp_run_result *r = &fx->r;
    r->topology = "tiny-run";
    r->source = "models/tiny-run.xml";
    r->backend = "ref";
    r->precision = NTP_DTYPE_BF16;
    r->batch = 2;
    r->threads = 4;
    r->seed = 42;
    r->warmup = 3;
    r->iterations = 50;
    r->only_marker = NULL;
    fx->pnames[0] = "batch";
    fx->pvalues[0] = "2";
    fx->pnames[1] = "hidden";
    fx->pvalues[1] = "32";
    r->n_params = 2;
    r->param_names = fx->pnames;
    r->param_values = fx->pvalues;

    ntp_layer_result *l = fx->layers;
    l[0] = (ntp_layer_result){.name = "conv1",
                              .type = "conv",
                              .backend = "ref",
                              .output_shape = {4, {2, 16, 32, 32}},
                              .time_ms = stats(1.0, 50),
                              .share = 0.5,
                              .flops = 3000000000,
                              .bytes = 600000000,
                              .gflops = 2000.0,
                              .gbps = 400.0,
                              .intensity = 5.0,
                              .prepare_ms = 0.75,
                              .workspace_bytes = 4096};
    l[1] = (ntp_layer_result){.name = "relu1",
                              .type = "relu",
                              .backend = "ref",
                              .fused = true,
                              .fused_into = "conv1",
                              .output_shape = {4, {2, 16, 32, 32}},
                              .flops = 32768,
                              .bytes = 262144,
                              .intensity = 0.125};
    l[2] = (ntp_layer_result){.name = ODD_NAME,
                              .type = "mul",
                              .backend = "ref",
                              .output_shape = {2, {2, 32}},
                              .time_ms = stats(0.5, 50),
                              .share = 0.25,
                              .flops = 64,
                              .bytes = 768,
                              .gflops = 8.533e-5,
                              .gbps = 1.024e-3,
                              .intensity = 0.0833,
                              .prepare_ms = 0.0};
    l[3] = (ntp_layer_result){.name = "a_layer_name_much_longer_than_its_column",
                              .type = "mfcc",
                              .backend = "ref",
                              .inlay = true,
                              .output_shape = {3, {98, 2, 494}},
                              .time_ms = stats(0.5, 50),
                              .share = 0.25,
                              .flops = 1500000,
                              .bytes = 200000,
                              .gflops = 2.0,
                              .gbps = 0.2667,
                              .intensity = 7.5,
                              .prepare_ms = 1.5,
                              .workspace_bytes = 65536};
    r->n_layers = N_LAYERS;
    r->layers = l;
    fx->markers[0] = (ntp_marker_result){.name = "body",
                                         .first = 0,
                                         .last = 2,
                                         .time_ms = stats(2.0, 50),
                                         .share = 0.75,
                                         .flops = 3000032832,
                                         .bytes = 600262912,
                                         .gflops = 1000.0};
    fx->markers[1] = (ntp_marker_result){.name = "gate",
                                         .first = 3,
                                         .last = 3,
                                         .time_ms = stats(1.0, 50),
                                         .share = 0.5,
                                         .flops = 1500064,
                                         .bytes = 200768,
                                         .gflops = 1.0};
    r->n_markers = 2;
    r->markers = fx->markers;
    r->end_to_end_ms = stats(4.0, 50);
    r->layer_sum_ms = stats(4.016, 50);
    r->overhead_fraction = 0.004;
    r->overhead_per_layer_us = 1.1;
    r->throughput = 333.3;
    r->latency_ms = 6.0;
    r->prepare_ms = 2.25;
    r->flops = 3001532832;
    r->memory = (ntp_memory_result){.weight_bytes = 102400000,
                                    .arena_bytes = 12300000,
                                    .workspace_bytes = 65536,
                                    .peak_rss_bytes = 230000000,
                                    .minor_faults = 12,
                                    .major_faults = 0};
    ntp_env_collect(&r->env);
    fx->warnings[0] = LONG_WARNING;
    fx->warnings[1] = "short run";
    r->n_warnings = 2;
    r->warnings = fx->warnings;

    /* Three iterations of four layers laid end to end, with gaps between
     * iterations; layer 1 (fused) has no time of its own. Times in µs with
     * sub-nanosecond parts, to exercise rounding. */
    double t = 0.0;
    for (int i = 0; i < N_ITERS; i++) {
        for (int k = 0; k < N_LAYERS; k++) {
            double dur = k == 1 ? NAN : 100.0 * (k + 1) + 0.1234 * i;
            fx->start[i][k] = k == 1 ? NAN : t;
            fx->end[i][k] = k == 1 ? NAN : t + dur;
            if (k != 1)
                t += dur;
        }
        t += 50.0;
        fx->trace[i].start_us = fx->start[i];
        fx->trace[i].end_us = fx->end[i];
    }
    r->n_trace = N_ITERS;
    r->trace = fx->trace;
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    ntp_ctx_free(fx->ctx);
    free(fx);
    return 0;
}

typedef ntp_status (*writer)(fixture *fx, FILE *f, ntp_format fmt);

static ntp_status write_run(fixture *fx, FILE *f, ntp_format fmt)
{
    return ntp_report_write_run(fx->ctx, &fx->r, fmt, f);
}

static ntp_status write_trace(fixture *fx, FILE *f, ntp_format fmt)
{
    (void)fmt;
    return ntp_report_write_run_trace(fx->ctx, &fx->r, f);
}

static ntp_status write_html(fixture *fx, FILE *f, ntp_format fmt)
{
    (void)fmt;
    return ntp_report_write_run_html(fx->ctx, &fx->r, f);
}

static char *capture(fixture *fx, writer w, ntp_format fmt)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    ntp_status st = w(fx, f, fmt);
    if (st != NTP_STATUS_OK)
        fail_msg("write: %s: %s", ntp_status_name(st), ntp_ctx_errmsg(fx->ctx));
    long n = ftell(f);
    assert_true(n > 0);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    rewind(f);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static json_t *parse(const char *text)
{
    json_error_t err;
    json_t *j = json_loads(text, 0, &err);
    if (!j)
        fail_msg("invalid JSON at line %d: %s", err.line, err.text);
    return j;
}

/* Validate against schema/<schema> with python3-jsonschema: 0 valid,
 * 1 invalid; the test fails when the validator cannot run. */
static int validate(const char *json, const char *schema)
{
    char path[] = "/tmp/ntp-test-report-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(json, f);
    fclose(f);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c '\n"
             "import json, sys\n"
             "import jsonschema\n"
             "schema = json.load(open(sys.argv[1]))\n"
             "cls = jsonschema.validators.validator_for(schema)\n"
             "cls.check_schema(schema)\n"
             "errors = list(cls(schema).iter_errors(json.load(open(sys.argv[2]))))\n"
             "for e in errors: print(\"schema:\", list(e.absolute_path), e.message[:200])\n"
             "sys.exit(1 if errors else 0)\n"
             "' '%s/schema/%s' '%s'",
             NTP_SOURCE_DIR, schema, path);
    int rc = system(cmd);
    unlink(path);
    assert_true(rc != -1 && WIFEXITED(rc));
    int code = WEXITSTATUS(rc);
    if (code != 0 && code != 1)
        fail_msg("python3 jsonschema validation could not run (exit %d): is python3-jsonschema "
                 "installed?",
                 code);
    return code;
}

static double num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        fail_msg("'%s' is not a number", key);
    return json_number_value(v);
}

static void check_stats(json_t *o, double k)
{
    assert_int_equal(json_integer_value(json_object_get(o, "n")), 50);
    assert_float_equal(num(o, "median_ms"), 1.5 * k, 1e-12);
    assert_float_equal(num(o, "min_ms"), 1.25 * k, 1e-12);
    assert_float_equal(num(o, "mean_ms"), 1.625 * k, 1e-12);
    assert_float_equal(num(o, "p90_ms"), 2.0 * k, 1e-12);
    assert_float_equal(num(o, "p99_ms"), 2.25 * k, 1e-12);
    assert_float_equal(num(o, "max_ms"), 2.5 * k, 1e-12);
    assert_float_equal(num(o, "stddev_ms"), 0.375 * k, 1e-12);
    assert_float_equal(num(o, "cv"), 0.25, 1e-12);
    json_t *ci = json_object_get(o, "ci95_ms");
    assert_int_equal(json_array_size(ci), 2);
    assert_float_equal(json_number_value(json_array_get(ci, 0)), 1.375 * k, 1e-12);
    assert_float_equal(json_number_value(json_array_get(ci, 1)), 1.875 * k, 1e-12);
}

static void test_json(void **state)
{
    fixture *fx = *state;
    char *text = capture(fx, write_run, NTP_FORMAT_JSON);
    json_t *root = parse(text);
    assert_int_equal(json_integer_value(json_object_get(root, "schema_version")), 1);
    assert_string_equal(json_string_value(json_object_get(root, "kind")), "run");
    assert_string_equal(json_string_value(json_object_get(root, "topology")), "tiny-run");
    assert_string_equal(json_string_value(json_object_get(root, "source")), "models/tiny-run.xml");

    json_t *cfg = json_object_get(root, "config");
    assert_string_equal(json_string_value(json_object_get(cfg, "backend")), "ref");
    assert_string_equal(json_string_value(json_object_get(cfg, "precision")), "bf16");
    assert_int_equal(json_integer_value(json_object_get(cfg, "batch")), 2);
    assert_int_equal(json_integer_value(json_object_get(cfg, "threads")), 4);
    assert_int_equal(json_integer_value(json_object_get(cfg, "seed")), 42);
    assert_int_equal(json_integer_value(json_object_get(cfg, "warmup")), 3);
    assert_int_equal(json_integer_value(json_object_get(cfg, "iterations")), 50);
    assert_true(json_is_null(json_object_get(cfg, "only_marker")));
    json_t *params = json_object_get(cfg, "params");
    assert_string_equal(json_string_value(json_object_get(params, "batch")), "2");
    assert_string_equal(json_string_value(json_object_get(params, "hidden")), "32");

    json_t *env = json_object_get(root, "environment");
    const ntp_env *e = &fx->r.env;
    assert_string_equal(json_string_value(json_object_get(env, "cpu_model")), e->cpu_model);
    assert_int_equal(json_integer_value(json_object_get(env, "cores")), e->cores);
    assert_int_equal(json_integer_value(json_object_get(env, "memory_bytes")), e->memory_bytes);
    assert_string_equal(json_string_value(json_object_get(env, "os")), e->os);
    assert_string_equal(json_string_value(json_object_get(env, "compiler")), e->compiler);
    assert_string_equal(json_string_value(json_object_get(env, "libraries")), e->libraries);
    assert_string_equal(json_string_value(json_object_get(env, "ntprof_version")), ntp_version());
    assert_string_equal(json_string_value(json_object_get(env, "git_revision")),
                        ntp_git_revision());
    assert_string_equal(json_string_value(json_object_get(env, "hostname")), e->hostname);
    assert_string_equal(json_string_value(json_object_get(env, "timestamp")), e->timestamp);
    /* cpu_flags is the space-separated field split into an array. */
    json_t *flags = json_object_get(env, "cpu_flags");
    assert_true(json_is_array(flags));
    char joined[1024] = "";
    for (size_t i = 0; i < json_array_size(flags); i++)
        snprintf(joined + strlen(joined), sizeof joined - strlen(joined), "%s%s", i ? " " : "",
                 json_string_value(json_array_get(flags, i)));
    if (strcmp(e->cpu_flags, "unknown") != 0)
        assert_string_equal(joined, e->cpu_flags);

    json_t *layers = json_object_get(root, "layers");
    assert_int_equal(json_array_size(layers), N_LAYERS);
    json_t *l0 = json_array_get(layers, 0);
    assert_string_equal(json_string_value(json_object_get(l0, "name")), "conv1");
    assert_string_equal(json_string_value(json_object_get(l0, "type")), "conv");
    assert_string_equal(json_string_value(json_object_get(l0, "backend")), "ref");
    assert_string_equal(json_string_value(json_object_get(l0, "kind")), "layer");
    assert_true(json_is_null(json_object_get(l0, "impl")));
    /* Without ceilings there is no roofline and no row is placed on one;
     * without a reduced precision there is no accuracy section. */
    assert_null(json_object_get(l0, "attainable_gflops"));
    assert_null(json_object_get(l0, "roof_share"));
    assert_null(json_object_get(root, "roofline"));
    assert_null(json_object_get(root, "accuracy"));
    assert_true(json_is_false(json_object_get(l0, "inlay")));
    assert_true(json_is_false(json_object_get(l0, "fused")));
    assert_true(json_is_null(json_object_get(l0, "fused_into")));
    json_t *shape = json_object_get(l0, "output_shape");
    assert_int_equal(json_array_size(shape), 4);
    assert_int_equal(json_integer_value(json_array_get(shape, 1)), 16);
    check_stats(l0, 1.0);
    assert_float_equal(num(l0, "share"), 0.5, 1e-12);
    assert_int_equal(json_integer_value(json_object_get(l0, "flops")), 3000000000);
    assert_int_equal(json_integer_value(json_object_get(l0, "bytes")), 600000000);
    assert_float_equal(num(l0, "gflops"), 2000.0, 1e-9);
    assert_float_equal(num(l0, "gbps"), 400.0, 1e-9);
    assert_float_equal(num(l0, "intensity"), 5.0, 1e-12);
    assert_float_equal(num(l0, "prepare_ms"), 0.75, 1e-12);
    assert_int_equal(json_integer_value(json_object_get(l0, "workspace_bytes")), 4096);
    json_t *l1 = json_array_get(layers, 1);
    assert_true(json_is_true(json_object_get(l1, "fused")));
    assert_string_equal(json_string_value(json_object_get(l1, "fused_into")), "conv1");
    assert_string_equal(json_string_value(json_object_get(l1, "kind")), "fused");
    json_t *l2 = json_array_get(layers, 2);
    assert_string_equal(json_string_value(json_object_get(l2, "name")), ODD_NAME);
    check_stats(l2, 0.5);
    assert_true(json_is_true(json_object_get(json_array_get(layers, 3), "inlay")));

    json_t *markers = json_object_get(root, "markers");
    assert_int_equal(json_array_size(markers), 2);
    json_t *m = json_array_get(markers, 0);
    assert_string_equal(json_string_value(json_object_get(m, "name")), "body");
    assert_int_equal(json_integer_value(json_object_get(m, "first")), 0);
    assert_int_equal(json_integer_value(json_object_get(m, "last")), 2);
    check_stats(m, 2.0);
    assert_float_equal(num(m, "share"), 0.75, 1e-12);
    assert_int_equal(json_integer_value(json_object_get(m, "flops")), 3000032832);
    assert_int_equal(json_integer_value(json_object_get(m, "bytes")), 600262912);
    assert_float_equal(num(m, "gflops"), 1000.0, 1e-9);
    /* Derived here: 600262912 bytes in 3 ms = 200.087637 GB/s. */
    assert_float_equal(num(m, "gbps"), 600262912.0 / 3e-3 / 1e9, 1e-9);
    assert_float_equal(num(m, "intensity"), 3000032832.0 / 600262912.0, 1e-12);

    json_t *e2e = json_object_get(root, "end_to_end");
    check_stats(e2e, 4.0);
    assert_float_equal(num(e2e, "throughput_per_s"), 333.3, 1e-9);
    assert_float_equal(num(e2e, "latency_ms"), 6.0, 1e-12);
    assert_float_equal(num(e2e, "gflops"), 3001532832.0 / 6e-3 / 1e9, 1e-9);
    check_stats(json_object_get(root, "layer_sum"), 4.016);
    assert_float_equal(num(root, "overhead_fraction"), 0.004, 1e-15);
    assert_float_equal(num(root, "overhead_per_layer_us"), 1.1, 1e-15);
    assert_float_equal(num(root, "prepare_ms"), 2.25, 1e-15);
    assert_int_equal(json_integer_value(json_object_get(root, "flops")), 3001532832);
    json_t *mem = json_object_get(root, "memory");
    assert_int_equal(json_integer_value(json_object_get(mem, "weight_bytes")), 102400000);
    assert_int_equal(json_integer_value(json_object_get(mem, "arena_bytes")), 12300000);
    assert_int_equal(json_integer_value(json_object_get(mem, "workspace_bytes")), 65536);
    assert_int_equal(json_integer_value(json_object_get(mem, "peak_rss_bytes")), 230000000);
    assert_int_equal(json_integer_value(json_object_get(mem, "minor_faults")), 12);
    assert_int_equal(json_integer_value(json_object_get(mem, "major_faults")), 0);
    json_t *w = json_object_get(root, "warnings");
    assert_int_equal(json_array_size(w), 2);
    assert_string_equal(json_string_value(json_array_get(w, 0)), LONG_WARNING);

    assert_int_equal(validate(text, "report.schema.json"), 0);
    /* The schema is strict: an unknown field, a missing statistic or a
     * string where a count belongs is refused. */
    json_t *bad = json_deep_copy(root);
    json_object_set_new(json_array_get(json_object_get(bad, "layers"), 0), "colour",
                        json_string("red"));
    char *bad_text = json_dumps(bad, 0);
    assert_int_equal(validate(bad_text, "report.schema.json"), 1);
    free(bad_text);
    json_decref(bad);
    bad = json_deep_copy(root);
    json_object_del(json_object_get(bad, "end_to_end"), "p99_ms");
    bad_text = json_dumps(bad, 0);
    assert_int_equal(validate(bad_text, "report.schema.json"), 1);
    free(bad_text);
    json_decref(bad);
    bad = json_deep_copy(root);
    json_object_set_new(json_object_get(bad, "memory"), "arena_bytes", json_string("12 MB"));
    bad_text = json_dumps(bad, 0);
    assert_int_equal(validate(bad_text, "report.schema.json"), 1);
    free(bad_text);
    json_decref(bad);

    json_decref(root);
    free(text);
}

static void test_json_edge_values(void **state)
{
    fixture *fx = *state;
    /* A rate over zero time is not a number JSON can hold: it is null, and
     * the report still validates. A seed above INT64_MAX is a string. */
    fx->layers[0].gflops = INFINITY;
    fx->layers[0].gbps = NAN;
    fx->r.seed = UINT64_MAX;
    fx->r.only_marker = "body";
    char *text = capture(fx, write_run, NTP_FORMAT_JSON);
    json_t *root = parse(text);
    json_t *l0 = json_array_get(json_object_get(root, "layers"), 0);
    assert_true(json_is_null(json_object_get(l0, "gflops")));
    assert_true(json_is_null(json_object_get(l0, "gbps")));
    json_t *cfg = json_object_get(root, "config");
    assert_string_equal(json_string_value(json_object_get(cfg, "seed")), "18446744073709551615");
    assert_string_equal(json_string_value(json_object_get(cfg, "only_marker")), "body");
    assert_int_equal(validate(text, "report.schema.json"), 0);
    json_decref(root);
    free(text);
}

/* Split one CSV record (RFC 4180) into fields; returns the count. */
static int csv_split(const char *line, char fields[][128], int max)
{
    int n = 0;
    const char *p = line;
    for (;;) {
        assert_true(n < max);
        size_t k = 0;
        if (*p == '"') {
            p++;
            for (;;) {
                assert_true(*p != '\0');
                if (*p == '"' && p[1] == '"') {
                    fields[n][k++] = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    fields[n][k++] = *p++;
                }
            }
        } else {
            while (*p && *p != ',' && *p != '\n')
                fields[n][k++] = *p++;
        }
        fields[n++][k] = '\0';
        if (*p != ',')
            break;
        p++;
    }
    return n;
}

static int column(char header[][128], int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(header[i], name) == 0)
            return i;
    fail_msg("no CSV column '%s'", name);
    return -1;
}

static void test_csv(void **state)
{
    fixture *fx = *state;
    char *text = capture(fx, write_run, NTP_FORMAT_CSV);
    char *lines[16] = {0};
    int n = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && n < 16;
         l = strtok_r(NULL, "\n", &save))
        lines[n++] = l;
    /* Header, 4 layers, 2 markers, end to end. */
    assert_int_equal(n, 1 + N_LAYERS + 2 + 1);
    assert_string_equal(lines[0],
                        "kind,name,type,backend,inlay,fused,fused_into,output_shape,first,last,n,"
                        "median_ms,min_ms,mean_ms,p90_ms,p99_ms,max_ms,stddev_ms,ci95_lo_ms,"
                        "ci95_hi_ms,cv,share,flops,bytes,gflops,gbps,intensity,prepare_ms,"
                        "workspace_bytes,impl,attainable_gflops,roof_share,roof_ceiling,"
                        "attainable_gbps,device_weight_bytes,device_activation_bytes,"
                        "device_workspace_bytes,device_peak_bytes,fuse_note,fuse,warmup,"
                        "max_abs_error,rel_l2");
    static char head[48][128], row[48][128];
    int nh = csv_split(lines[0], head, 48);
    assert_int_equal(nh, 43);
    for (int i = 1; i < n; i++) {
        int nf = csv_split(lines[i], row, 48);
        if (nf != nh)
            fail_msg("row %d has %d fields, the header %d: %s", i, nf, nh, lines[i]);
    }
    assert_string_equal(lines[1], "layer,conv1,conv,ref,false,false,,2x16x32x32,,,50,1.5,1.25,"
                                  "1.625,2,2.25,2.5,0.375,1.375,1.875,0.25,0.5,3000000000,"
                                  "600000000,2000,400,5,0.75,4096,,,,,,,,,,,,,,");
    csv_split(lines[2], row, 48);
    assert_string_equal(row[column(head, nh, "fused")], "true");
    assert_string_equal(row[column(head, nh, "fused_into")], "conv1");
    csv_split(lines[3], row, 48);
    assert_string_equal(row[column(head, nh, "name")], ODD_NAME);
    assert_string_equal(row[column(head, nh, "median_ms")], "0.75");
    csv_split(lines[5], row, 48);
    assert_string_equal(row[column(head, nh, "kind")], "marker");
    assert_string_equal(row[column(head, nh, "name")], "body");
    assert_string_equal(row[column(head, nh, "first")], "0");
    assert_string_equal(row[column(head, nh, "last")], "2");
    assert_string_equal(row[column(head, nh, "median_ms")], "3");
    assert_string_equal(row[column(head, nh, "flops")], "3000032832");
    assert_string_equal(row[column(head, nh, "gflops")], "1000");
    assert_string_equal(row[column(head, nh, "type")], "");
    csv_split(lines[7], row, 48);
    assert_string_equal(row[column(head, nh, "kind")], "end_to_end");
    assert_string_equal(row[column(head, nh, "name")], "tiny-run");
    assert_string_equal(row[column(head, nh, "backend")], "ref");
    assert_string_equal(row[column(head, nh, "median_ms")], "6");
    assert_string_equal(row[column(head, nh, "ci95_hi_ms")], "7.5");
    assert_string_equal(row[column(head, nh, "flops")], "3001532832");
    assert_string_equal(row[column(head, nh, "gflops")], "500.255472");
    assert_string_equal(row[column(head, nh, "prepare_ms")], "2.25");
    /* No accelerator ran: the device memory columns are empty, not 0. */
    assert_string_equal(row[column(head, nh, "device_peak_bytes")], "");
    assert_string_equal(row[column(head, nh, "device_weight_bytes")], "");
    /* --fuse is the end-to-end row's, and said either way. */
    assert_string_equal(row[column(head, nh, "fuse")], "false");
    free(text);
}

/* --fuse and each row's implementation, in every format: a run with one
 * fused layer, three implementations (one a backend that names none) and
 * a fusion the backend declined with its reason. */
static void set_fusion(fixture *fx)
{
    fx->r.fused = true;
    fx->layers[0].impl = "brg:avx512_core";
    fx->layers[1].impl = "brg:avx512_core"; /* fused: ran in conv1's primitive */
    fx->layers[2].impl = "gemm:jit";
    fx->layers[2].fuse_note = "fusion declined: mul + add would run on ref:any";
    fx->layers[3].impl = "ref";
}

static void test_fusion_and_impl(void **state)
{
    fixture *fx = *state;
    /* Without --fuse every format says so; a row without an implementation
     * name (a report from before they were recorded) says that. */
    char *text = capture(fx, write_run, NTP_FORMAT_JSON);
    json_t *root = parse(text);
    assert_true(json_is_false(json_object_get(json_object_get(root, "config"), "fuse")));
    assert_true(json_is_null(
        json_object_get(json_array_get(json_object_get(root, "layers"), 0), "fuse_note")));
    json_decref(root);
    free(text);
    text = capture(fx, write_run, NTP_FORMAT_TABLE);
    assert_non_null(strstr(text, "\nfusion: off (no --fuse): every layer timed on its own\n"));
    assert_non_null(
        strstr(text, "\n  ref (implementation not recorded): 3 rows, 100.0%: conv1, " ODD_NAME ",\n"
                     "                                     "
                     "a_layer_name_much_longer_than_its_column\n"));
    free(text);

    set_fusion(fx);
    text = capture(fx, write_run, NTP_FORMAT_JSON);
    assert_int_equal(validate(text, "report.schema.json"), 0);
    root = parse(text);
    assert_true(json_is_true(json_object_get(json_object_get(root, "config"), "fuse")));
    json_t *layers = json_object_get(root, "layers");
    json_t *l2 = json_array_get(layers, 2);
    assert_string_equal(json_string_value(json_object_get(l2, "impl")), "gemm:jit");
    assert_string_equal(json_string_value(json_object_get(l2, "fuse_note")),
                        "fusion declined: mul + add would run on ref:any");
    assert_string_equal(json_string_value(json_object_get(json_array_get(layers, 0), "impl")),
                        "brg:avx512_core");
    /* The schema knows the types: a fuse that is not a boolean is refused. */
    json_object_set_new(json_object_get(root, "config"), "fuse", json_string("yes"));
    char *bad = json_dumps(root, 0);
    assert_int_equal(validate(bad, "report.schema.json"), 1);
    free(bad);
    json_decref(root);

    /* Read back: the same --fuse, implementations and note. */
    ntp_run_result *back = NULL;
    assert_int_equal(ntp_run_result_parse(fx->ctx, text, strlen(text), "f.json", &back),
                     NTP_STATUS_OK);
    assert_true(back->fused);
    assert_string_equal(back->layers[2].impl, "gemm:jit");
    assert_string_equal(back->layers[2].fuse_note,
                        "fusion declined: mul + add would run on ref:any");
    assert_null(back->layers[0].fuse_note);
    ntp_run_result_free(back);
    /* A report from before config.fuse was written: a fused row says it was
     * on; without one it was off. A fuse that is not a boolean is an error
     * naming it. */
    root = parse(text);
    json_object_del(json_object_get(root, "config"), "fuse");
    bad = json_dumps(root, 0);
    assert_int_equal(ntp_run_result_parse(fx->ctx, bad, strlen(bad), "old.json", &back),
                     NTP_STATUS_OK);
    assert_true(back->fused);
    ntp_run_result_free(back);
    free(bad);
    json_object_set_new(json_array_get(json_object_get(root, "layers"), 1), "fused", json_false());
    bad = json_dumps(root, 0);
    assert_int_equal(ntp_run_result_parse(fx->ctx, bad, strlen(bad), "old.json", &back),
                     NTP_STATUS_OK);
    assert_false(back->fused);
    ntp_run_result_free(back);
    free(bad);
    json_object_set_new(json_object_get(root, "config"), "fuse", json_integer(1));
    bad = json_dumps(root, 0);
    assert_int_equal(ntp_run_result_parse(fx->ctx, bad, strlen(bad), "x.json", &back),
                     NTP_STATUS_PARSE_ERROR);
    assert_string_equal(ntp_ctx_errmsg(fx->ctx), "x.json: run report config: 'fuse' is not true "
                                                 "or false");
    free(bad);
    json_decref(root);
    free(text);

    /* The table: --fuse in the heading, every implementation with its rows
     * (the largest share first; a tie in execution order), the note. */
    text = capture(fx, write_run, NTP_FORMAT_TABLE);
    fputs(text, stdout);
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n"), cols = 0;
        for (size_t i = 0; i < len; i++)
            cols += ((unsigned char)p[i] & 0xC0) != 0x80;
        if (cols > 100)
            fail_msg("line has %zu columns: %.*s", cols, (int)len, p);
        p += len + (p[len] == '\n');
    }
    assert_non_null(strstr(text, "\nfusion: on (--fuse): 1 layer fused into 1 group, timed in "
                                 "each group's first layer; 1 declined\n"));
    free(text);
    /* --fuse on a backend that fused nothing says so. */
    fx->layers[1].fused = false;
    fx->layers[2].fuse_note = NULL;
    text = capture(fx, write_run, NTP_FORMAT_TABLE);
    assert_non_null(strstr(text, "\nfusion: on (--fuse), but no backend fused any layer\n"));
    free(text);
    set_fusion(fx);
    fx->layers[1].fused = true;
    text = capture(fx, write_run, NTP_FORMAT_TABLE);
    assert_non_null(strstr(text, "\nimplementations (the backend's choice per row, by share of "
                                 "layer time):\n"
                                 "  brg:avx512_core on ref: 1 row, 50.0%: conv1\n"
                                 "  gemm:jit on ref: 1 row, 25.0%: " ODD_NAME "\n"
                                 "  ref: 1 row, 25.0%: a_layer_name_much_longer_than_its_column\n"
                                 "fusion note: " ODD_NAME ": fusion declined: mul + add would run "
                                 "on ref:any\n"));
    free(text);

    text = capture(fx, write_run, NTP_FORMAT_CSV);
    static char head[48][128], row[48][128];
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    int nh = csv_split(line, head, 48);
    for (int i = 0; i < 3; i++)
        line = strtok_r(NULL, "\n", &save);
    assert_int_equal(csv_split(line, row, 48), nh); /* the mul row */
    assert_string_equal(row[column(head, nh, "impl")], "gemm:jit");
    assert_string_equal(row[column(head, nh, "fuse_note")],
                        "fusion declined: mul + add would run on ref:any");
    assert_string_equal(row[column(head, nh, "fuse")], "");
    for (int i = 0; i < 4; i++)
        line = strtok_r(NULL, "\n", &save);
    assert_int_equal(csv_split(line, row, 48), nh);
    assert_string_equal(row[column(head, nh, "kind")], "end_to_end");
    assert_string_equal(row[column(head, nh, "fuse")], "true");
    free(text);

    char *html = capture(fx, write_html, NTP_FORMAT_TABLE);
    assert_non_null(strstr(html, " · fusion on (--fuse)</p>"));
    assert_non_null(strstr(html, "<th class=\"l\">implementation</th>"));
    assert_non_null(strstr(html, "<td class=\"l\">brg:avx512_core</td>"));
    assert_non_null(strstr(html, "<td class=\"l\">gemm:jit<br><span class=\"note\">fusion "
                                 "declined: mul + add would run on ref:any</span></td>"));
    /* The fused row: no implementation of its own. */
    assert_non_null(strstr(html, "<td class=\"l\">-</td><td colspan=\"5\">fused into conv1"));
    free(html);
}

static void test_table(void **state)
{
    fixture *fx = *state;
    char *text = capture(fx, write_run, NTP_FORMAT_TABLE);
    fputs(text, stdout); /* print_message() cuts long messages */
    int n_lines = 0;
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n"), cols = 0;
        for (size_t i = 0; i < len; i++)
            cols += ((unsigned char)p[i] & 0xC0) != 0x80;
        if (cols > 100)
            fail_msg("line %d has %zu columns: %.*s", n_lines + 1, cols, (int)len, p);
        n_lines++;
        p += len + (p[len] == '\n');
    }
    assert_non_null(strstr(text,
                           "\nlayer                  type           shape          median ms      %"
                           "  GFLOP/s    GB/s  FLOP/B\n"));
    assert_non_null(strstr(text, "\nconv1                  conv           2x16x32x32        1.5000"
                                 "   50.0  2000.00  400.00    5.00\n"));
    assert_non_null(strstr(text, "\nrelu1                  relu           2x16x32x32         fused"
                                 "      -        -       -    0.12\n"));
    assert_non_null(strstr(text, "\na_layer_name_much_lon\xE2\x80\xA6 mfcc "));
    /* A rate too small for two decimals is not shown as 0.00. */
    assert_non_null(strstr(text,
                           "\nglu \"gate\", part 2     mul            2x32              0.7500"
                           "   25.0 8.53e-05 1.0e-03    0.08\n"));
    assert_non_null(strstr(text, "\nbody                   marker         layers 0..2       3.0000"
                                 "   75.0  1000.00  200.09    5.00\n"));
    assert_non_null(strstr(text, "\nend-to-end: median 6 ms, 95% CI [5.5, 7.5] ms, n 50\n"
                                 "  min 5, p90 8, p99 9, max 10, cv 25.0%\n"));
    assert_non_null(strstr(text, "\nlayer sum: median 6.024 ms, 95% CI [5.522, 7.53] ms, n 50\n"));
    assert_non_null(strstr(text, "\nthroughput 333.3 samples/s, latency 6 ms, 3.00G FLOPs per pass "
                                 "(500.3 GFLOP/s)\n"));
    /* The layer sum (6.024 ms) lies inside end-to-end's CI [5.5, 7.5]. */
    assert_non_null(strstr(text, "per-layer timing overhead: within noise (layer "
                                 "sum +0.4% of end-to-end, inside its 95% CI)\n"));
    assert_non_null(strstr(text, "prepare 2.25 ms"));
    assert_non_null(strstr(text, "memory: weights 102 MB, arena 12.3 MB, workspace 65.5 kB, "
                                 "peak RSS 230 MB\n"));
    assert_non_null(
        strstr(text, "page faults during the measured iterations: 12 minor, 0 major\n"));
    assert_non_null(strstr(text, "backend ref, precision bf16, batch 2, threads 4, seed 42, "
                                 "3 warmup + 50 measured iterations\n"));
    /* The long warning is wrapped, not cut: every word is there, and the
     * continuation is indented under the text. */
    const char *w = strstr(text, "\nwarning: the coefficient of variation");
    assert_non_null(w);
    /* Rejoin the first line and its indented continuations: the result is
     * the warning exactly, so no word was split or dropped. */
    char joined[1024] = "";
    const char *line = w + 1 + strlen("warning: ");
    for (int k = 0;; k++) {
        size_t len = strcspn(line, "\n");
        snprintf(joined + strlen(joined), sizeof joined - strlen(joined), "%s%.*s", k ? " " : "",
                 (int)len, line);
        line += len + 1;
        if (strncmp(line, "         ", 9) != 0)
            break;
        assert_true(line[9] != ' ');
        line += 9;
    }
    assert_string_equal(joined, LONG_WARNING);
    assert_non_null(strstr(text, "warning: short run\n"));
    assert_non_null(strstr(text, "\nroofline: not available (no ceilings for this machine: run "
                                 "`ntprof machine`)\n"));
    assert_null(strstr(text, "accuracy"));
    free(text);

    /* A peak /proc could not tell is n/a with why, not 0 B; the line
     * wraps under its prefix. */
    int64_t peak = fx->r.memory.peak_rss_bytes;
    fx->r.memory.peak_rss_bytes = 0;
    text = capture(fx, write_run, NTP_FORMAT_TABLE);
    assert_non_null(strstr(text, "memory: weights 102 MB, arena 12.3 MB, workspace 65.5 kB, "
                                 "peak RSS n/a (/proc/self could not read or\n        set back "
                                 "the resident set's high-water mark)\n"));
    assert_null(strstr(text, "peak RSS 0"));
    free(text);
    fx->r.memory.peak_rss_bytes = peak;

    /* Outside the interval the overhead is a measurement, with its sign. */
    fx->r.layer_sum_ms.median = 8.0;
    fx->r.overhead_fraction = (8.0 - 6.0) / 6.0;
    fx->r.overhead_per_layer_us = 2000.0 / 3;
    text = capture(fx, write_run, NTP_FORMAT_TABLE);
    assert_non_null(strstr(text, "per-layer timing overhead: +33.3% of end-to-end, +6.7e+02 "
                                 "\xC2\xB5s per layer\n"));
    free(text);
}

/* A run placed on a roofline, at a reduced precision with an accuracy
 * comparison, with the backend's implementation names. */
static void set_roofline(fixture *fx)
{
    ntp_run_result *r = &fx->r;
    r->roofline.available = true;
    snprintf(r->roofline.machine, sizeof r->roofline.machine, "epyc-2c");
    snprintf(r->roofline.measured_at, sizeof r->roofline.measured_at, "2025-01-02T03:04:05Z");
    r->roofline.peak_gflops = 3000.0;
    snprintf(r->roofline.peak_source, sizeof r->roofline.peak_source, "f32 FMA micro-kernel");
    r->roofline.bandwidth_gbps = 500.0;
    r->roofline.ridge_intensity = 6.0;
    r->roofline.n_levels = 2;
    snprintf(r->roofline.levels[0].name, sizeof r->roofline.levels[0].name, "L1");
    r->roofline.levels[0].gbps = 2000.0;
    snprintf(r->roofline.levels[1].name, sizeof r->roofline.levels[1].name, "DRAM");
    r->roofline.levels[1].gbps = 500.0;
    /* conv1: intensity 5 x 500 GB/s = 2500 GFLOP/s attainable; 2000 is 80%. */
    fx->layers[0].attainable_gflops = 2500.0;
    fx->layers[0].roof_share = 0.8;
    fx->layers[0].kind = "layer";
    fx->layers[0].impl = "gemm:avx2";
    fx->layers[3].attainable_gflops = 3000.0;
    fx->layers[3].roof_share = 2.0 / 3000.0;
    fx->markers[0].attainable_gflops = 2500.0;
    fx->markers[0].roof_share = 0.4;
    fx->accuracy[0] = (ntp_accuracy){
        .output = "probs", .max_abs_error = 0.0125, .rel_l2 = 0.0025, .top1 = 0.5, .top5 = 1.0};
    fx->accuracy[1] = (ntp_accuracy){
        .output = "features", .max_abs_error = 0.25, .rel_l2 = 0.125, .top1 = -1, .top5 = -1};
    r->n_accuracy = 2;
    r->accuracy = fx->accuracy;
    r->accuracy_baseline = "f32 on ref";
}

static void test_roofline_and_accuracy(void **state)
{
    fixture *fx = *state;
    set_roofline(fx);
    char *text = capture(fx, write_run, NTP_FORMAT_JSON);
    json_t *root = parse(text);
    json_t *rl = json_object_get(root, "roofline");
    assert_string_equal(json_string_value(json_object_get(rl, "machine")), "epyc-2c");
    assert_string_equal(json_string_value(json_object_get(rl, "measured_at")),
                        "2025-01-02T03:04:05Z");
    assert_float_equal(num(rl, "peak_gflops"), 3000.0, 0.0);
    assert_string_equal(json_string_value(json_object_get(rl, "peak_source")),
                        "f32 FMA micro-kernel");
    assert_float_equal(num(rl, "bandwidth_gbps"), 500.0, 0.0);
    assert_float_equal(num(rl, "ridge_intensity"), 6.0, 0.0);
    json_t *levels = json_object_get(rl, "levels");
    assert_int_equal(json_array_size(levels), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(levels, 1), "name")),
                        "DRAM");
    assert_float_equal(num(json_array_get(levels, 0), "gbps"), 2000.0, 0.0);
    /* Ceilings that hold: reliable, no reason. */
    assert_true(json_is_false(json_object_get(rl, "unreliable")));
    assert_true(json_is_null(json_object_get(rl, "stale_reason")));
    json_t *layers = json_object_get(root, "layers");
    json_t *l0 = json_array_get(layers, 0);
    assert_string_equal(json_string_value(json_object_get(l0, "impl")), "gemm:avx2");
    assert_float_equal(num(l0, "attainable_gflops"), 2500.0, 0.0);
    assert_float_equal(num(l0, "roof_share"), 0.8, 1e-15);
    /* A row that was not placed (no time of its own) has nulls. */
    json_t *l1 = json_array_get(layers, 1);
    assert_true(json_is_null(json_object_get(l1, "attainable_gflops")));
    assert_true(json_is_null(json_object_get(l1, "roof_share")));
    json_t *m0 = json_array_get(json_object_get(root, "markers"), 0);
    assert_float_equal(num(m0, "roof_share"), 0.4, 1e-15);
    json_t *acc = json_object_get(root, "accuracy");
    assert_string_equal(json_string_value(json_object_get(acc, "baseline")), "f32 on ref");
    json_t *outs = json_object_get(acc, "outputs");
    assert_int_equal(json_array_size(outs), 2);
    json_t *a0 = json_array_get(outs, 0), *a1 = json_array_get(outs, 1);
    assert_string_equal(json_string_value(json_object_get(a0, "output")), "probs");
    assert_float_equal(num(a0, "max_abs_error"), 0.0125, 0.0);
    assert_float_equal(num(a0, "rel_l2"), 0.0025, 0.0);
    assert_float_equal(num(a0, "top1"), 0.5, 0.0);
    assert_float_equal(num(a0, "top5"), 1.0, 0.0);
    assert_true(json_is_null(json_object_get(a1, "top1")));
    assert_true(json_is_null(json_object_get(a1, "top5")));
    assert_int_equal(validate(text, "report.schema.json"), 0);
    json_decref(root);
    free(text);

    text = capture(fx, write_run, NTP_FORMAT_TABLE);
    fputs(text, stdout);
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n"), cols = 0;
        for (size_t i = 0; i < len; i++)
            cols += ((unsigned char)p[i] & 0xC0) != 0x80;
        if (cols > 100)
            fail_msg("line has %zu columns: %.*s", cols, (int)len, p);
        p += len + (p[len] == '\n');
    }
    assert_non_null(strstr(text, "  FLOP/B  roof\n"));
    assert_non_null(strstr(text, "\nconv1                  conv           2x16x32x32        1.5000"
                                 "   50.0  2000.00  400.00    5.00   80%\n"));
    assert_non_null(strstr(text, "\nrelu1                  relu           2x16x32x32         fused"
                                 "      -        -       -    0.12     -\n"));
    assert_non_null(strstr(text, "   0.27    7.50   <1%\n")); /* 2 of 3000 GFLOP/s */
    assert_non_null(strstr(text, "  5.00   40%\n"));          /* the body marker */
    assert_non_null(strstr(text, "\nroofline: peak 3000 GFLOP/s, DRAM 500 GB/s, ridge 6 FLOP/B\n"
                                 "  peak from f32 FMA micro-kernel; ceilings measured "
                                 "2025-01-02T03:04:05Z\n"
                                 "  roof = GFLOP/s as a share of min(peak, FLOP/B x DRAM GB/s)\n"));
    assert_non_null(strstr(text, "\naccuracy against f32 on ref:\n"
                                 "  probs: max |error| 0.0125, relative L2 0.0025, top-1 50.0%, "
                                 "top-5 100.0% agree\n"
                                 "  features: max |error| 0.25, relative L2 0.125\n"));
    free(text);

    text = capture(fx, write_run, NTP_FORMAT_CSV);
    static char head[48][128], row[48][128];
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    int nh = csv_split(line, head, 48);
    line = strtok_r(NULL, "\n", &save);
    assert_int_equal(csv_split(line, row, 48), nh);
    assert_string_equal(row[column(head, nh, "impl")], "gemm:avx2");
    assert_string_equal(row[column(head, nh, "attainable_gflops")], "2500");
    assert_string_equal(row[column(head, nh, "roof_share")], "0.8");
    line = strtok_r(NULL, "\n", &save); /* relu1, not placed */
    assert_int_equal(csv_split(line, row, 48), nh);
    assert_string_equal(row[column(head, nh, "roof_share")], "");
    for (int i = 0; i < 3; i++)
        line = strtok_r(NULL, "\n", &save);
    assert_int_equal(csv_split(line, row, 48), nh);
    assert_string_equal(row[column(head, nh, "kind")], "marker");
    assert_string_equal(row[column(head, nh, "roof_share")], "0.4");
    free(text);
}

/* A run with rows on a GPU: conv1 on the GPU's f16 roof, the mul row a
 * host-to-device copy on the link, the mfcc inlay on the CPU's roof, and
 * the device memory a cuda run collects. */
static void set_gpu(fixture *fx)
{
    set_roofline(fx);
    ntp_run_result *r = &fx->r;
    r->backend = "cuda";
    r->precision = NTP_DTYPE_F16;
    ntp_roofline *rl = &r->roofline;
    rl->gpu_rows = true;
    rl->gpu_available = true;
    snprintf(rl->gpu_name, sizeof rl->gpu_name, "NVIDIA H100 80GB HBM3");
    snprintf(rl->gpu_math, sizeof rl->gpu_math, "f16");
    rl->gpu_peak_gflops = 989000;
    rl->gpu_bandwidth_gbps = 3350;
    rl->gpu_ridge_intensity = 989000.0 / 3350.0;
    rl->gpu_h2d_gbps = 25;
    rl->gpu_d2h_gbps = 26;
    fx->layers[0].backend = "cuda";
    fx->layers[0].roof_ceiling = "gpu f16";
    fx->layers[1].backend = "cuda";
    fx->layers[2].backend = "cuda";
    fx->layers[2].type = "h2d";
    fx->layers[2].flops = 0;
    fx->layers[2].gflops = 0;
    fx->layers[2].attainable_gbps = 0.002048;
    fx->layers[2].roof_share = 0.5;
    fx->layers[2].roof_ceiling = "gpu h2d";
    fx->layers[3].roof_ceiling = "cpu f32";
    fx->markers[0].roof_ceiling = "gpu f16";
    r->memory.device_weight_bytes = 102760448;
    r->memory.device_activation_bytes = 25165824;
    r->memory.device_workspace_bytes = 37748736;
    r->memory.device_peak_bytes = 165675008;
}

/* Ceilings a row ran above (or measured under load) make the roofline
 * unreliable: the JSON says so and why, as the warnings do, and a report
 * read back keeps it (compare reads reports). */
/* A report written to a temporary file and read back (ntp_run_result_load). */
static ntp_run_result *load_text(const char *text)
{
    char path[] = "/tmp/ntp-test-bandwidth-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_run_result *back = NULL;
    ntp_status st = ntp_run_result_load(ctx, path, &back);
    unlink(path);
    if (st != NTP_STATUS_OK)
        fail_msg("reading the report back: %s", ntp_ctx_errmsg(ctx));
    ntp_ctx_free(ctx);
    return back;
}

/* fx's run written as JSON, valid against the schema, and read back
 * (freed by the caller). */
static ntp_run_result *written_back(fixture *fx)
{
    char *json = capture(fx, write_run, NTP_FORMAT_JSON);
    assert_int_equal(validate(json, "report.schema.json"), 0);
    ntp_run_result *back = load_text(json);
    free(json);
    return back;
}

static void test_roofline_unreliable(void **state)
{
    fixture *fx = *state;
    set_roofline(fx);
    fx->r.roofline.unreliable = true;
    snprintf(fx->r.roofline.stale_reason, sizeof fx->r.roofline.stale_reason,
             "layer conv1 ran at 137%% of the f32 peak");
    char *text = capture(fx, write_run, NTP_FORMAT_JSON);
    json_t *root = parse(text);
    json_t *rl = json_object_get(root, "roofline");
    assert_true(json_is_true(json_object_get(rl, "unreliable")));
    assert_string_equal(json_string_value(json_object_get(rl, "stale_reason")),
                        "layer conv1 ran at 137% of the f32 peak");
    assert_int_equal(validate(text, "report.schema.json"), 0);
    /* The schema requires both and knows their types. */
    json_object_del(rl, "stale_reason");
    char *bad = json_dumps(root, 0);
    assert_int_equal(validate(bad, "report.schema.json"), 1);
    free(bad);
    json_object_set_new(rl, "stale_reason", json_null());
    json_object_set_new(rl, "unreliable", json_string("yes"));
    bad = json_dumps(root, 0);
    assert_int_equal(validate(bad, "report.schema.json"), 1);
    free(bad);
    json_decref(root);
    /* Read back. */
    ntp_run_result *back = load_text(text);
    assert_true(back->roofline.available);
    assert_true(back->roofline.unreliable);
    assert_string_equal(back->roofline.stale_reason, "layer conv1 ran at 137% of the f32 peak");
    ntp_run_result_free(back);
    free(text);
}

static void test_gpu_rows_and_device_memory(void **state)
{
    fixture *fx = *state;
    /* Without an accelerator there is no device memory object at all. */
    char *text = capture(fx, write_run, NTP_FORMAT_JSON);
    json_t *root = parse(text);
    assert_null(json_object_get(json_object_get(root, "memory"), "device"));
    json_decref(root);
    free(text);
    text = capture(fx, write_run, NTP_FORMAT_TABLE);
    assert_null(strstr(text, "device memory"));
    free(text);

    set_gpu(fx);
    text = capture(fx, write_run, NTP_FORMAT_JSON);
    assert_int_equal(validate(text, "report.schema.json"), 0);
    root = parse(text);
    json_t *dev = json_object_get(json_object_get(root, "memory"), "device");
    assert_int_equal(json_integer_value(json_object_get(dev, "weight_bytes")), 102760448);
    assert_int_equal(json_integer_value(json_object_get(dev, "activation_bytes")), 25165824);
    assert_int_equal(json_integer_value(json_object_get(dev, "workspace_bytes")), 37748736);
    assert_int_equal(json_integer_value(json_object_get(dev, "peak_bytes")), 165675008);
    json_t *layers = json_object_get(root, "layers");
    json_t *l0 = json_array_get(layers, 0), *l2 = json_array_get(layers, 2);
    assert_string_equal(json_string_value(json_object_get(l0, "roof_ceiling")), "gpu f16");
    assert_null(json_object_get(l0, "attainable_gbps"));
    assert_true(json_is_null(json_object_get(l2, "attainable_gflops")));
    assert_float_equal(num(l2, "attainable_gbps"), 0.002048, 0);
    assert_float_equal(num(l2, "roof_share"), 0.5, 0);
    assert_string_equal(json_string_value(json_object_get(l2, "roof_ceiling")), "gpu h2d");
    assert_true(json_is_null(json_object_get(json_array_get(layers, 1), "roof_ceiling")));
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(layers, 3), "roof_ceiling")), "cpu f32");
    json_t *g = json_object_get(json_object_get(root, "roofline"), "gpu");
    assert_true(json_is_true(json_object_get(g, "available")));
    assert_string_equal(json_string_value(json_object_get(g, "name")), "NVIDIA H100 80GB HBM3");
    assert_string_equal(json_string_value(json_object_get(g, "math")), "f16");
    assert_float_equal(num(g, "peak_gflops"), 989000, 0);
    assert_float_equal(num(g, "bandwidth_gbps"), 3350, 0);
    assert_float_equal(num(g, "h2d_gbps"), 25, 0);
    assert_float_equal(num(g, "d2h_gbps"), 26, 0);
    json_decref(root);
    /* Read back, as compare and the history do. */
    ntp_run_result *back = NULL;
    assert_int_equal(ntp_run_result_parse(fx->ctx, text, strlen(text), "gpu.json", &back),
                     NTP_STATUS_OK);
    assert_true(ntp_memory_has_device(&back->memory));
    assert_int_equal(back->memory.device_weight_bytes, 102760448);
    assert_int_equal(back->memory.device_activation_bytes, 25165824);
    assert_int_equal(back->memory.device_workspace_bytes, 37748736);
    assert_int_equal(back->memory.device_peak_bytes, 165675008);
    assert_string_equal(back->layers[0].roof_ceiling, "gpu f16");
    assert_string_equal(back->layers[2].roof_ceiling, "gpu h2d");
    assert_float_equal(back->layers[2].attainable_gbps, 0.002048, 0);
    assert_null(back->layers[1].roof_ceiling);
    assert_string_equal(back->markers[0].roof_ceiling, "gpu f16");
    assert_true(back->roofline.gpu_available);
    assert_string_equal(back->roofline.gpu_name, "NVIDIA H100 80GB HBM3");
    assert_float_equal(back->roofline.gpu_peak_gflops, 989000, 0);
    ntp_run_result_free(back);
    free(text);

    text = capture(fx, write_run, NTP_FORMAT_TABLE);
    fputs(text, stdout);
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n"), cols = 0;
        for (size_t i = 0; i < len; i++)
            cols += ((unsigned char)p[i] & 0xC0) != 0x80;
        if (cols > 100)
            fail_msg("line has %zu columns: %.*s", cols, (int)len, p);
        p += len + (p[len] == '\n');
    }
    /* Several roofs: the shape column gives one column to the roof column,
     * whose cells say which roof: g(PU), l(ink), c(PU). */
    assert_non_null(strstr(text, "\nconv1                  conv           2x16x32x32       1.5000"
                                 "   50.0  2000.00  400.00    5.00   g80%\n"));
    assert_non_null(strstr(text, "    0.08   l50%\n")); /* the h2d copy */
    assert_non_null(strstr(text, "    7.50   c<1%\n")); /* the mfcc inlay, on the CPU */
    assert_non_null(strstr(text, "    5.00   g40%\n")); /* the body marker */
    assert_non_null(strstr(text, "\nGPU roofline: NVIDIA H100 80GB HBM3, f16 GEMM 989000 GFLOP/s, "
                                 "DRAM 3350 GB/s, ridge 295 FLOP/B;\n"
                                 "              host->device 25 GB/s, device->host 26 GB/s\n"));
    assert_non_null(strstr(text, "\ndevice memory: weights 103 MB, activations 25.2 MB, "
                                 "workspace 37.7 MB, peak 166 MB\n"));
    free(text);

    text = capture(fx, write_run, NTP_FORMAT_CSV);
    static char head[48][128], row[48][128];
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    int nh = csv_split(line, head, 48);
    line = strtok_r(NULL, "\n", &save);
    assert_int_equal(csv_split(line, row, 48), nh);
    assert_string_equal(row[column(head, nh, "roof_ceiling")], "gpu f16");
    assert_string_equal(row[column(head, nh, "device_peak_bytes")], "");
    line = strtok_r(NULL, "\n", &save);
    line = strtok_r(NULL, "\n", &save); /* the h2d copy */
    assert_int_equal(csv_split(line, row, 48), nh);
    assert_string_equal(row[column(head, nh, "attainable_gflops")], "");
    assert_string_equal(row[column(head, nh, "attainable_gbps")], "0.002048");
    assert_string_equal(row[column(head, nh, "roof_share")], "0.5");
    assert_string_equal(row[column(head, nh, "roof_ceiling")], "gpu h2d");
    for (int i = 0; i < 4; i++)
        line = strtok_r(NULL, "\n", &save);
    assert_int_equal(csv_split(line, row, 48), nh);
    assert_string_equal(row[column(head, nh, "kind")], "end_to_end");
    assert_string_equal(row[column(head, nh, "device_weight_bytes")], "102760448");
    assert_string_equal(row[column(head, nh, "device_activation_bytes")], "25165824");
    assert_string_equal(row[column(head, nh, "device_workspace_bytes")], "37748736");
    assert_string_equal(row[column(head, nh, "device_peak_bytes")], "165675008");
    free(text);

    /* The HTML report: a ceiling column and the device memory card. */
    char *html = capture(fx, write_html, NTP_FORMAT_TABLE);
    assert_non_null(strstr(html, "<th class=\"l\">ceiling</th></tr>"));
    assert_non_null(strstr(html, "<td class=\"l\">gpu f16</td></tr>"));
    assert_non_null(strstr(html, "<td class=\"l\">gpu h2d</td></tr>"));
    assert_non_null(strstr(html, "<b>166 MB</b><span>device memory peak: weights 103 MB, "
                                 "activations 25.2 MB, workspace 37.7 MB</span>"));
    assert_non_null(strstr(html, "Rows on the GPU are placed on NVIDIA H100 80GB HBM3"));
    free(html);

    /* No GPU ceilings: the GPU rows say so, the CPU rows keep their roof. */
    ntp_roofline *rl = &fx->r.roofline;
    rl->gpu_available = false;
    rl->gpu_name[0] = rl->gpu_math[0] = '\0';
    rl->gpu_peak_gflops = rl->gpu_bandwidth_gbps = rl->gpu_ridge_intensity = 0;
    rl->gpu_h2d_gbps = rl->gpu_d2h_gbps = 0;
    for (int i = 0; i < 3; i += 2) {
        fx->layers[i].roof_ceiling = NTP_ROOF_NO_GPU;
        fx->layers[i].attainable_gflops = fx->layers[i].attainable_gbps = 0;
        fx->layers[i].roof_share = 0;
    }
    fx->markers[0].roof_ceiling = NTP_ROOF_NO_GPU;
    fx->markers[0].attainable_gflops = fx->markers[0].roof_share = 0;
    text = capture(fx, write_run, NTP_FORMAT_JSON);
    assert_int_equal(validate(text, "report.schema.json"), 0);
    root = parse(text);
    g = json_object_get(json_object_get(root, "roofline"), "gpu");
    assert_true(json_is_false(json_object_get(g, "available")));
    assert_string_equal(json_string_value(json_object_get(g, "note")),
                        "n/a (no GPU ceilings: run `ntprof machine` on this machine)");
    l0 = json_array_get(json_object_get(root, "layers"), 0);
    assert_string_equal(json_string_value(json_object_get(l0, "roof_ceiling")),
                        "n/a (no GPU ceilings: run `ntprof machine` on this machine)");
    assert_true(json_is_null(json_object_get(l0, "attainable_gflops")));
    json_decref(root);
    free(text);
    text = capture(fx, write_run, NTP_FORMAT_TABLE);
    assert_non_null(strstr(text, "    5.00    n/a\n"));
    assert_non_null(strstr(text, "    7.50   c<1%\n"));
    assert_non_null(strstr(text, "\nGPU rows: n/a (no GPU ceilings: run `ntprof machine` on this "
                                 "machine)\n"));
    free(text);
}

/* --- trace ------------------------------------------------------------------------- */

static int64_t ns(json_t *ev, const char *key)
{
    json_t *v = json_object_get(ev, key);
    assert_true(json_is_number(v));
    return llround(json_number_value(v) * 1000.0);
}

static void test_trace(void **state)
{
    fixture *fx = *state;
    char *text = capture(fx, write_trace, NTP_FORMAT_JSON);
    json_t *root = parse(text);
    assert_string_equal(json_string_value(json_object_get(root, "displayTimeUnit")), "ms");
    json_t *other = json_object_get(root, "otherData");
    assert_string_equal(json_string_value(json_object_get(other, "topology")), "tiny-run");
    assert_string_equal(json_string_value(json_object_get(other, "backend")), "ref");
    json_t *events = json_object_get(root, "traceEvents");
    assert_true(json_is_array(events));

    int n_meta = 0, seen[N_ITERS][N_LAYERS] = {{0}}, iter_seen[N_ITERS] = {0};
    int marker_seen[N_ITERS][2] = {{0}};
    int64_t iter_ts[N_ITERS], iter_end[N_ITERS];
    int64_t prev_ts = INT64_MIN, last_ts[8], last_dur[8];
    for (int t = 0; t < 8; t++)
        last_ts[t] = INT64_MIN, last_dur[t] = 0;
    bool meta_done = false;
    /* First pass: order, names, iteration slices. */
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *ev = json_array_get(events, i);
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        assert_non_null(ph);
        assert_int_equal(json_integer_value(json_object_get(ev, "pid")), 1);
        if (strcmp(ph, "M") == 0) {
            assert_false(meta_done); /* metadata first */
            n_meta++;
            continue;
        }
        meta_done = true;
        assert_string_equal(ph, "X");
        int64_t ts = ns(ev, "ts"), dur = ns(ev, "dur");
        int tid = (int)json_integer_value(json_object_get(ev, "tid"));
        assert_true(tid >= 1 && tid < 8);
        assert_true(ts >= prev_ts); /* sorted by ts */
        /* At equal ts on one thread the enclosing (longer) slice comes
         * first, as a viewer builds the nesting in file order. */
        if (ts == last_ts[tid])
            assert_true(dur <= last_dur[tid]);
        prev_ts = last_ts[tid] = ts;
        last_dur[tid] = dur;
        int it = (int)json_integer_value(json_object_get(json_object_get(ev, "args"), "iteration"));
        assert_true(it >= 0 && it < N_ITERS);
        const char *cat = json_string_value(json_object_get(ev, "cat"));
        const char *name = json_string_value(json_object_get(ev, "name"));
        if (strcmp(cat, "iteration") == 0) {
            char want[32];
            snprintf(want, sizeof want, "iteration %d", it);
            assert_string_equal(name, want);
            assert_int_equal(json_integer_value(json_object_get(ev, "tid")), 1);
            iter_seen[it]++;
            iter_ts[it] = ts;
            iter_end[it] = ts + ns(ev, "dur");
        }
    }
    assert_int_equal(n_meta, 3); /* process name, layers thread, markers thread */
    for (int it = 0; it < N_ITERS; it++)
        assert_int_equal(iter_seen[it], 1);
    /* Second pass: every timed layer once per iteration, inside its
     * iteration, at the time it was given (rounded to ns); markers span
     * their layers. */
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *ev = json_array_get(events, i);
        if (strcmp(json_string_value(json_object_get(ev, "ph")), "X") != 0)
            continue;
        json_t *args = json_object_get(ev, "args");
        int it = (int)json_integer_value(json_object_get(args, "iteration"));
        const char *cat = json_string_value(json_object_get(ev, "cat"));
        const char *name = json_string_value(json_object_get(ev, "name"));
        int64_t ts = ns(ev, "ts"), end = ts + ns(ev, "dur");
        if (strcmp(cat, "iteration") == 0)
            continue;
        if (strcmp(cat, "marker") == 0) {
            assert_int_equal(json_integer_value(json_object_get(ev, "tid")), 2);
            int m = strcmp(name, "body") == 0 ? 0 : 1;
            marker_seen[it][m]++;
            int first = m == 0 ? 0 : 3, last = m == 0 ? 2 : 3;
            assert_int_equal(ts, llround(fx->start[it][first] * 1000.0));
            assert_int_equal(end, llround(fx->end[it][last] * 1000.0));
            continue;
        }
        assert_int_equal(json_integer_value(json_object_get(ev, "tid")), 1);
        int k = -1;
        for (int l = 0; l < N_LAYERS; l++)
            if (strcmp(name, fx->layers[l].name) == 0)
                k = l;
        if (k < 0)
            fail_msg("unknown layer event '%s'", name);
        assert_string_equal(cat, fx->layers[k].type);
        assert_string_equal(json_string_value(json_object_get(args, "type")), fx->layers[k].type);
        char shape[64];
        const ntp_shape *s = &fx->layers[k].output_shape;
        int used = 0;
        for (int d = 0; d < s->ndim; d++)
            used += snprintf(shape + used, sizeof shape - (size_t)used, d ? "x%lld" : "%lld",
                             (long long)s->dim[d]);
        assert_string_equal(json_string_value(json_object_get(args, "shape")), shape);
        seen[it][k]++;
        assert_int_equal(ts, llround(fx->start[it][k] * 1000.0));
        assert_int_equal(end, llround(fx->end[it][k] * 1000.0));
        if (ts < iter_ts[it] || end > iter_end[it])
            fail_msg("layer %s [%lld, %lld] escapes iteration %d [%lld, %lld]", name, (long long)ts,
                     (long long)end, it, (long long)iter_ts[it], (long long)iter_end[it]);
    }
    for (int it = 0; it < N_ITERS; it++) {
        for (int k = 0; k < N_LAYERS; k++)
            assert_int_equal(seen[it][k], k == 1 ? 0 : 1); /* the fused layer has no slice */
        assert_int_equal(marker_seen[it][0], 1);
        assert_int_equal(marker_seen[it][1], 1);
        /* The iteration spans exactly its first and last layer. */
        assert_int_equal(iter_ts[it], llround(fx->start[it][0] * 1000.0));
        assert_int_equal(iter_end[it], llround(fx->end[it][3] * 1000.0));
    }
    json_decref(root);
    free(text);
}

static void test_trace_overlapping_markers(void **state)
{
    fixture *fx = *state;
    /* body = layers 0..2 and gate = 2..3 overlap without nesting: slices on
     * one thread must nest, so gate moves to a second marker thread. */
    fx->markers[0].last = 2;
    fx->markers[1].first = 2;
    fx->markers[1].last = 3;
    char *text = capture(fx, write_trace, NTP_FORMAT_JSON);
    json_t *root = parse(text);
    json_t *events = json_object_get(root, "traceEvents");
    int tids[2] = {0, 0};
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *ev = json_array_get(events, i);
        const char *cat = json_string_value(json_object_get(ev, "cat"));
        if (!cat || strcmp(cat, "marker") != 0)
            continue;
        int m = strcmp(json_string_value(json_object_get(ev, "name")), "body") == 0 ? 0 : 1;
        tids[m] = (int)json_integer_value(json_object_get(ev, "tid"));
    }
    assert_int_equal(tids[0], 2);
    assert_int_equal(tids[1], 3);
    /* Nested markers share a thread. */
    fx->markers[1].first = 1;
    fx->markers[1].last = 2;
    json_decref(root);
    free(text);
    text = capture(fx, write_trace, NTP_FORMAT_JSON);
    root = parse(text);
    events = json_object_get(root, "traceEvents");
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *ev = json_array_get(events, i);
        const char *cat = json_string_value(json_object_get(ev, "cat"));
        if (cat && strcmp(cat, "marker") == 0)
            assert_int_equal(json_integer_value(json_object_get(ev, "tid")), 2);
    }
    json_decref(root);
    free(text);
}

static void test_trace_without_timings(void **state)
{
    fixture *fx = *state;
    fx->r.n_trace = 0;
    fx->r.trace = NULL;
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(ntp_report_write_run_trace(fx->ctx, &fx->r, f), NTP_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ntp_ctx_errmsg(fx->ctx), "keep_trace"));
    assert_int_equal(ftell(f), 0); /* nothing written */
    fclose(f);
}

/* --torch-script's figure (ntp_run_result.torch_script) in every format,
 * each value where docs/report-format.md puts it, the same in all three,
 * and read back. */
static void test_torch_script(void **state)
{
    fixture *fx = *state;
    ntp_torch_script_result s = {.build_ms = 131.25,
                                 .threads = 2,
                                 .warmup = 3,
                                 .iterations = 50,
                                 .end_to_end_ms = stats(2.0, 50),
                                 .latency_ms = 3.0,
                                 .max_abs_error = 2.5e-6,
                                 .rel_l2 = 4.25e-7};
    fx->r.torch_script = &s;
    char *text = capture(fx, write_run, NTP_FORMAT_JSON);
    assert_int_equal(validate(text, "report.schema.json"), 0);
    json_t *root = parse(text), *o = json_object_get(root, "torch_script");
    assert_non_null(o);
    assert_int_equal(json_integer_value(json_object_get(o, "threads")), 2);
    assert_int_equal(json_integer_value(json_object_get(o, "warmup")), 3);
    assert_int_equal(json_integer_value(json_object_get(o, "iterations")), 50);
    assert_true(num(o, "build_ms") == 131.25);
    assert_true(num(o, "latency_ms") == 3.0);
    assert_true(num(o, "max_abs_error") == 2.5e-6);
    assert_true(num(o, "rel_l2") == 4.25e-7);
    check_stats(json_object_get(o, "end_to_end"), 2.0);
    /* The schema knows it: a negative deviation is refused. */
    json_object_set_new(o, "rel_l2", json_real(-1));
    char *bad = json_dumps(root, 0);
    assert_int_equal(validate(bad, "report.schema.json"), 1);
    free(bad);
    json_decref(root);
    ntp_run_result *back = NULL;
    assert_int_equal(ntp_run_result_parse(fx->ctx, text, strlen(text), "t.json", &back),
                     NTP_STATUS_OK);
    assert_non_null(back->torch_script);
    const ntp_torch_script_result *b = back->torch_script;
    assert_true(b->build_ms == s.build_ms && b->latency_ms == s.latency_ms);
    assert_true(b->threads == 2 && b->warmup == 3 && b->iterations == 50);
    assert_true(b->max_abs_error == s.max_abs_error && b->rel_l2 == s.rel_l2);
    assert_memory_equal(&b->end_to_end_ms, &s.end_to_end_ms, sizeof s.end_to_end_ms);
    ntp_run_result_free(back);
    free(text);

    text = capture(fx, write_run, NTP_FORMAT_CSV);
    char *lines[16] = {0};
    int n = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && n < 16;
         l = strtok_r(NULL, "\n", &save))
        lines[n++] = l;
    /* Header, 4 layers, 2 markers, end to end, then the module's row. */
    assert_int_equal(n, 1 + N_LAYERS + 2 + 2);
    static char head[48][128], row[48][128];
    int nh = csv_split(lines[0], head, 48);
    assert_int_equal(csv_split(lines[7], row, 48), nh);
    assert_string_equal(row[column(head, nh, "warmup")], "3"); /* the eager run's */
    assert_string_equal(row[column(head, nh, "rel_l2")], "");
    assert_int_equal(csv_split(lines[8], row, 48), nh);
    assert_string_equal(lines[8], "torch_script,tiny-run,,torch,,,,,,,50,3,2.5,3.25,4,4.5,5,0.75,"
                                  "2.75,3.75,0.25,1,3001532832,,1000.510944,,,131.25,,,,,,,,,,,"
                                  ",,3,2.5e-06,4.25e-07");
    free(text);

    text = capture(fx, write_run, NTP_FORMAT_TABLE);
    assert_non_null(strstr(
        text, "\nTorchScript (one module: torch::jit::freeze, optimize_for_inference; 2 threads)\n"
              "  build 131.2 ms (compile, freeze, optimise); 3 warmup + 50 measured iterations\n"
              "  end to end median 3 ms (95% CI 2.75..3.75; p90 4, cv 0.250)\n"
              "  eager (per layer, the run above) 6 ms: script / eager 0.500\n"
              "  outputs vs ref: max abs error 2.5e-06, rel L2 4.25e-07\n"));
    free(text);
    fx->r.torch_script = NULL;
}

static ntp_status write_task(fixture *fx, FILE *f, ntp_format fmt)
{
    (void)fmt;
    ntp_sweep_record rec = {.id = 12, .created_at = "2026-12-02T07:00:00Z"};
    ntp_sweep_task t = {.index = 3, .job = "12_3"};
    return ntp_report_write_run_sweep_task(fx->ctx, &fx->r, &rec, &t, f);
}

/* A Slurm task's kept report: the run's JSON marked with the sweep and the
 * task, read back through the accessors; the result itself unchanged. */
static void test_sweep_task(void **state)
{
    fixture *fx = *state;
    char *text = capture(fx, write_task, NTP_FORMAT_JSON);
    assert_int_equal(validate(text, "report.schema.json"), 0);
    ntp_run_result *back = NULL;
    assert_int_equal(ntp_run_result_parse(fx->ctx, text, strlen(text), "k.json", &back),
                     NTP_STATUS_OK);
    assert_int_equal(ntp_run_result_sweep_id(back), 12);
    assert_int_equal(ntp_run_result_sweep_index(back), 3);
    assert_string_equal(ntp_run_result_sweep_created_at(back), "2026-12-02T07:00:00Z");
    assert_string_equal(ntp_run_result_sweep_job(back), "12_3");
    assert_string_equal(ntp_run_result_topology(back), "tiny-run");
    assert_int_equal(ntp_run_result_layer_count(back), N_LAYERS);
    ntp_run_result_free(back);
    free(text);
    assert_int_equal(fx->r.sweep_id, 0);
    assert_string_equal(fx->r.sweep_job, "");
    /* Without the sweep: no "sweep" object, and no accessor invents one. */
    text = capture(fx, write_run, NTP_FORMAT_JSON);
    assert_null(strstr(text, "\"sweep\""));
    assert_int_equal(ntp_run_result_parse(fx->ctx, text, strlen(text), "r.json", &back),
                     NTP_STATUS_OK);
    assert_int_equal(ntp_run_result_sweep_id(back), 0);
    ntp_run_result_free(back);
    free(text);
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(ntp_report_write_run_sweep_task(fx->ctx, &fx->r, NULL, NULL, f),
                     NTP_STATUS_INVALID_ARGUMENT);
    fclose(f);
}

/* A report from before environment.contention.KEY: text without it, read
 * back (returned for the caller's checks, freed by it) and written again
 * without it. */
static ntp_run_result *without_contention(fixture *fx, const char *text, const char *key)
{
    json_t *root = parse(text);
    json_object_del(json_object_get(json_object_get(root, "environment"), "contention"), key);
    char *old = json_dumps(root, 0);
    ntp_run_result *back = load_text(old);
    char *again = NULL, quoted[64];
    size_t len = 0;
    FILE *f = open_memstream(&again, &len);
    assert_int_equal(ntp_report_write_run(fx->ctx, back, NTP_FORMAT_JSON, f), NTP_STATUS_OK);
    fclose(f);
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    assert_null(strstr(again, quoted));
    free(again);
    free(old);
    json_decref(root);
    return back;
}

/* environment.contention.pace (docs/report-format.md): written, valid,
 * read back field by field; the header's line; a report from before the
 * looks. */
/* The verdict fx's run report writes as prediction.below_calibration_pace
 * (the report valid against its schema). */
static bool below_pace_in_json(fixture *fx)
{
    char *text = capture(fx, write_run, NTP_FORMAT_JSON);
    assert_int_equal(validate(text, "report.schema.json"), 0);
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    json_t *v = json_object_get(json_object_get(j, "prediction"), "below_calibration_pace");
    assert_true(json_is_boolean(v));
    bool below = json_is_true(v);
    json_decref(j);
    free(text);
    return below;
}

static void test_pace_check(void **state)
{
    fixture *fx = *state;
    ntp_contention *c = &fx->r.env.contention;
    ntp_pace_check *p = &c->pace;
    memset(p, 0, sizeof *p);
    p->measured = true;
    p->n_cpus = 2;
    p->cpu[0] = 0, p->cpu[1] = 3;
    p->low[0] = 41.25, p->high[0] = 43.5;
    p->low[1] = 30.5, p->high[1] = 42.75;
    p->best = 43.5;
    p->looks = 12;
    p->slow_looks = 4;
    p->one_thread = true;
    p->cost_s = 0.015625;
    p->slow_ms = 2.375, p->slow_n = 30, p->slow_lo = 2.25, p->slow_hi = 2.5;
    p->clear_ms = 1.75, p->clear_n = 90, p->clear_lo = 1.625, p->clear_hi = 1.875;
    p->slowed = true;

    char *text = capture(fx, write_run, NTP_FORMAT_JSON);
    assert_int_equal(validate(text, "report.schema.json"), 0);
    json_t *root = parse(text);
    json_t *pj = json_object_get(
        json_object_get(json_object_get(root, "environment"), "contention"), "pace");
    assert_non_null(pj);
    assert_float_equal(num(pj, "best_gflops"), 43.5, 0);
    assert_float_equal(num(pj, "slow_share"), NTP_PACE_SLOW_SHARE, 0);
    assert_float_equal(num(pj, "sample_s"), NTP_HANDOFF_SAMPLE_S, 0);
    assert_float_equal(num(json_array_get(json_object_get(pj, "cpus"), 1), "low_gflops"), 30.5, 0);
    assert_true(json_is_true(json_object_get(pj, "slowed")));
    /* The schema is strict about it. */
    json_object_set_new(pj, "looks", json_string("many"));
    char *bad = json_dumps(root, 0);
    assert_int_equal(validate(bad, "report.schema.json"), 1);
    free(bad);
    json_decref(root);

    ntp_run_result *back = load_text(text);
    const ntp_pace_check *rp = &back->env.contention.pace;
    assert_true(rp->measured && rp->slowed && rp->one_thread);
    assert_false(rp->unconfirmed);
    assert_int_equal(rp->n_cpus, 2);
    assert_int_equal(rp->cpu[1], 3);
    assert_float_equal(rp->low[0], 41.25, 0);
    assert_float_equal(rp->high[1], 42.75, 0);
    assert_float_equal(rp->best, 43.5, 0);
    assert_int_equal(rp->looks, 12);
    assert_int_equal(rp->slow_looks, 4);
    assert_float_equal(rp->cost_s, 0.015625, 0);
    assert_float_equal(rp->slow_ms, 2.375, 0);
    assert_int_equal(rp->slow_n, 30);
    assert_float_equal(rp->slow_lo, 2.25, 0);
    assert_float_equal(rp->slow_hi, 2.5, 0);
    assert_float_equal(rp->clear_ms, 1.75, 0);
    assert_int_equal(rp->clear_n, 90);
    assert_float_equal(rp->clear_lo, 1.625, 0);
    assert_float_equal(rp->clear_hi, 1.875, 0);
    ntp_run_result_free(back);
    /* A hand-edited report whose looks list no CPU: read as not looked
     * (no CPU to name), not trusted. */
    root = parse(text);
    json_object_set_new(
        json_object_get(json_object_get(json_object_get(root, "environment"), "contention"),
                        "pace"),
        "cpus", json_array());
    bad = json_dumps(root, 0);
    json_decref(root);
    back = load_text(bad);
    free(bad);
    assert_false(back->env.contention.pace.measured);
    assert_string_equal(back->env.contention.pace.reason, "the report lists no CPU the looks read");

    /* The header's line, on the table and the page. */
    char *table = capture(fx, write_run, NTP_FORMAT_TABLE);
    if (!strstr(table, "cpu pace: CPU 0 41.2-43.5, CPU 3 30.5-42.8 GFLOP/s, slowest to fastest"))
        fail_msg("no pace line in the header:\n%s", table);
    free(table);
    char *page = capture(fx, write_html, NTP_FORMAT_TABLE);
    assert_non_null(strstr(page, "<b>cpu pace</b>: CPU 0 41.2-43.5"));
    free(page);
    /* Beside a prediction, the note: against the 90 iterations under
     * unslowed looks (1.75 ms), 1.925 ms is +10.0%. */
    fx->r.prediction.available = true;
    snprintf(fx->r.prediction.calibration, sizeof fx->r.prediction.calibration, "test");
    fx->r.prediction.predicted_ms = 1.925;
    table = capture(fx, write_run, NTP_FORMAT_TABLE);
    if (!strstr(table, "prediction: CPU 3 ran slowed under 30 of the run's iterations (its pace "
                       "down to 0.70x the run's\n"))
        fail_msg("no pace note beside the prediction:\n%s", table);
    if (!strstr(table, "over the 90 others, 1.75 ms, the prediction is +10.0%;"))
        fail_msg("no prediction against the unslowed iterations:\n%s", table);
    free(table);
    /* Not confirmed by the run's time: no note. */
    p->slowed = false;
    p->unconfirmed = true;
    table = capture(fx, write_run, NTP_FORMAT_TABLE);
    assert_null(strstr(table, "ran slowed under"));
    free(table);
    /* Slowed throughout (a one-thread run with no clear iteration): its
     * note, the JSON field read back. CPU 3 read 30.5-42.75 of the best
     * 43.5: 0.70-0.98x. */
    p->unconfirmed = false;
    p->throughout = true;
    p->clear_n = 0;
    p->slow_n = 120;
    table = capture(fx, write_run, NTP_FORMAT_TABLE);
    if (!strstr(table, "prediction: CPU 3 ran slowed throughout the run (its looks 0.70-0.98x the "
                       "run's best,"))
        fail_msg("no slowed-throughout note beside the prediction:\n%s", table);
    free(table);
    ntp_run_result *thr = written_back(fx);
    assert_true(thr->env.contention.pace.throughout);
    assert_false(thr->env.contention.pace.slowed);
    ntp_run_result_free(thr);
    p->throughout = false;
    /* Every CPU under the calibration's pace: the run's best 43.5 is
     * 0.8529x 51 (under 0.87), no note at 50 (0.87x exactly is not
     * under). The field written and read back; 0 writes null. */
    fx->r.prediction.calibration_pace_gflops = 51;
    table = capture(fx, write_run, NTP_FORMAT_TABLE);
    if (!strstr(table, "prediction: the run's best pace look read 0.85x the calibration's (43.5 "
                       "GFLOP/s against 51.0, under\n            0.87x: every CPU ran slowed "
                       "throughout,"))
        fail_msg("no calibration-pace note beside the prediction:\n%s", table);
    free(table);
    thr = written_back(fx);
    assert_float_equal(thr->prediction.calibration_pace_gflops, 51, 0);
    ntp_run_result_free(thr);
    assert_true(below_pace_in_json(fx));
    /* A threaded backend's run, its pace from ref's calibration: named in
     * the note, written and read back. */
    fx->r.backend = "onednn";
    snprintf(fx->r.prediction.calibration_pace_backend,
             sizeof fx->r.prediction.calibration_pace_backend, "ref");
    table = capture(fx, write_run, NTP_FORMAT_TABLE);
    if (!strstr(table, "prediction: the run's best pace look read 0.85x ref's calibration's (43.5 "
                       "GFLOP/s against 51.0,"))
        fail_msg("no ref's calibration's pace in the note:\n%s", table);
    free(table);
    thr = written_back(fx);
    assert_string_equal(thr->prediction.calibration_pace_backend, "ref");
    ntp_run_result_free(thr);
    fx->r.backend = "ref";
    fx->r.prediction.calibration_pace_backend[0] = '\0';
    fx->r.prediction.calibration_pace_gflops = 50;
    table = capture(fx, write_run, NTP_FORMAT_TABLE);
    assert_null(strstr(table, "the calibration's ("));
    free(table);
    assert_false(below_pace_in_json(fx));
    fx->r.prediction.calibration_pace_gflops = 0;
    thr = written_back(fx);
    assert_float_equal(thr->prediction.calibration_pace_gflops, 0, 0);
    ntp_run_result_free(thr);
    p->slowed = true;
    p->unconfirmed = false;
    p->clear_n = 90;
    p->slow_n = 30;
    fx->r.prediction.available = false;
    ntp_run_result_free(back);

    /* Not looked: measured false and why; an older report without the
     * field reads as not looked and is written without it again. */
    memset(p, 0, sizeof *p);
    snprintf(p->reason, sizeof p->reason, "off (ntp_run_opts.bandwidth_probe)");
    free(text);
    text = capture(fx, write_run, NTP_FORMAT_JSON);
    assert_int_equal(validate(text, "report.schema.json"), 0);
    back = load_text(text);
    assert_false(back->env.contention.pace.measured);
    assert_string_equal(back->env.contention.pace.reason, "off (ntp_run_opts.bandwidth_probe)");
    ntp_run_result_free(back);
    back = without_contention(fx, text, "pace");
    assert_false(back->env.contention.pace.measured);
    assert_string_equal(back->env.contention.pace.reason, "");
    ntp_run_result_free(back);
    free(text);
}

/* environment.contention.handoff (docs/report-format.md): written,
 * valid, read back field by field; the header's line, the note beside a
 * prediction, and a report from before the probe. */
static void test_handoff_check(void **state)
{
    fixture *fx = *state;
    ntp_contention *c = &fx->r.env.contention;
    c->measured = true;
    c->window_s = 1.5;
    c->cpus = 2;
    c->load_average = 0.5;
    ntp_handoff_check *h = &c->handoff;
    h->measured = true;
    h->bytes = (int64_t)2 << 20;
    h->pairs = 1;
    h->cost_s = 0.03125;
    h->before = (ntp_handoff_probe){.ratio = 1.125,
                                    .remote_gbps = 85.5,
                                    .own_gbps = 96.25,
                                    .cpu_from = 0,
                                    .cpu_to = 1,
                                    .sysfs_level = 3,
                                    .sysfs_bytes = (int64_t)32 << 20};
    h->after = (ntp_handoff_probe){.ratio = 3.5,
                                   .remote_gbps = 27.5,
                                   .own_gbps = 96.25,
                                   .cpu_from = 0,
                                   .cpu_to = 1,
                                   .sysfs_level = 3,
                                   .sysfs_bytes = (int64_t)32 << 20,
                                   .pairs_apart = 1};
    h->samples = 8;
    h->samples_apart = 3;
    h->window_ratio = 3.75;
    h->together_ms = 5.25;
    h->together_n = 100;
    h->apart_ms = 8.5;
    h->apart_n = 40;
    h->together_lo = 5.125, h->together_hi = 5.375;
    h->apart_lo = 8.25, h->apart_hi = 9.0;
    h->apart = true;
    /* The rows under each placement: conv1 4.125x slower apart, ODD_NAME
     * twice as fast, the long one within 1.1x (not named), relu1 under 1%
     * of the time. */
    fx->layers[0].together_ms = 2.0, fx->layers[0].apart_ms = 8.25;
    fx->layers[1].together_ms = 0.5, fx->layers[1].apart_ms = 5.0;
    fx->layers[2].together_ms = 1.0, fx->layers[2].apart_ms = 0.5;
    fx->layers[3].together_ms = 1.0, fx->layers[3].apart_ms = 1.05;

    char *text = capture(fx, write_run, NTP_FORMAT_JSON);
    assert_int_equal(validate(text, "report.schema.json"), 0);
    json_t *root = parse(text);
    json_t *l0 = json_array_get(json_object_get(root, "layers"), 0);
    assert_float_equal(num(l0, "together_ms"), 2.0, 0);
    assert_float_equal(num(l0, "apart_ms"), 8.25, 0);
    json_t *ho = json_object_get(
        json_object_get(json_object_get(root, "environment"), "contention"), "handoff");
    assert_non_null(ho);
    assert_float_equal(num(ho, "cost_s"), 0.03125, 0);
    assert_float_equal(num(ho, "apart_ratio"), NTP_HANDOFF_APART_RATIO, 0);
    assert_float_equal(num(ho, "sample_s"), 0.2, 0);
    assert_float_equal(num(json_object_get(ho, "after"), "ratio"), 3.5, 0);
    assert_true(json_is_true(json_object_get(ho, "apart")));
    assert_float_equal(json_number_value(json_array_get(json_object_get(ho, "apart_ci95_ms"), 1)),
                       9.0, 0);
    /* The schema is strict about it. */
    json_object_set_new(ho, "samples", json_string("many"));
    char *bad = json_dumps(root, 0);
    assert_int_equal(validate(bad, "report.schema.json"), 1);
    free(bad);

    ntp_run_result *back = load_text(text);
    const ntp_handoff_check *rh = &back->env.contention.handoff;
    assert_true(rh->measured && rh->apart);
    assert_int_equal(rh->bytes, (int64_t)2 << 20);
    assert_int_equal(rh->pairs, 1);
    assert_float_equal(rh->before.ratio, 1.125, 0);
    assert_float_equal(rh->before.remote_gbps, 85.5, 0);
    assert_float_equal(rh->after.own_gbps, 96.25, 0);
    assert_int_equal(rh->after.cpu_to, 1);
    assert_int_equal(rh->after.sysfs_level, 3);
    assert_int_equal(rh->after.sysfs_bytes, (int64_t)32 << 20);
    assert_int_equal(rh->after.pairs_apart, 1);
    assert_int_equal(rh->samples, 8);
    assert_int_equal(rh->samples_apart, 3);
    assert_float_equal(rh->window_ratio, 3.75, 0);
    assert_float_equal(rh->together_ms, 5.25, 0);
    assert_int_equal(rh->together_n, 100);
    assert_float_equal(rh->apart_ms, 8.5, 0);
    assert_int_equal(rh->apart_n, 40);
    assert_float_equal(rh->together_lo, 5.125, 0);
    assert_float_equal(rh->together_hi, 5.375, 0);
    assert_float_equal(rh->apart_lo, 8.25, 0);
    assert_float_equal(rh->apart_hi, 9.0, 0);
    assert_float_equal(back->layers[0].together_ms, 2.0, 0);
    assert_float_equal(back->layers[2].apart_ms, 0.5, 0);
    ntp_run_result_free(back);

    /* The header's line; beside a prediction, a note. */
    char *table = capture(fx, write_run, NTP_FORMAT_TABLE);
    if (!strstr(table, "hand-off moved: 100 iterations together, 40 apart; rows over 1% of the "
                       "time, median apart /\n                together: slower conv1 4.12x; "
                       "faster " ODD_NAME " 0.50x\n"))
        fail_msg("no hand-off moved line in the header:\n%s", table);
    if (!strstr(table, "cpu hand-off: reading another CPU's writes took 1.12x the time of"))
        fail_msg("no hand-off line in the header:\n%s", table);
    free(table);
    fx->r.prediction.available = true;
    snprintf(fx->r.prediction.calibration, sizeof fx->r.prediction.calibration, "test");
    fx->r.prediction.predicted_ms = 5.5;
    table = capture(fx, write_run, NTP_FORMAT_TABLE);
    if (!strstr(table, "prediction: the run's CPUs did not share a cache around it (one read the"))
        fail_msg("no hand-off note beside the prediction:\n%s", table);
    /* The prediction against each placement: 5.5 against 5.25 is +4.8%,
     * against 8.5 -35.3%. */
    if (!strstr(table, "prediction: while the CPUs shared a cache, measured 5.25 ms over 100 "
                       "iterations (predicted +4.8%);\n            while apart, 8.5 ms over 40 "
                       "(-35.3%)\n"))
        fail_msg("no placement line beside the prediction:\n%s", table);
    free(table);
    char *page = capture(fx, write_html, NTP_FORMAT_TABLE);
    assert_non_null(strstr(page, "while the CPUs shared a cache, measured 5.25 ms over 100"));
    assert_non_null(strstr(page, "<b>hand-off moved</b>: 100 iterations together"));
    /* The page carries the table's environment lines. */
    if (!strstr(page, "<p class=\"meta\"><b>cpu hand-off</b>: reading another CPU&#39;s writes "
                      "took 1.12x the time of") ||
        !strstr(page, "<p class=\"meta\"><b>contention</b>: other processes 0%, steal 0%, "
                      "this run 0% of 2 CPUs over 1.50 s"))
        fail_msg("no environment lines on the page:\n%s", page);
    free(page);
    /* One placement throughout: no split to show. */
    h->apart_n = 0;
    table = capture(fx, write_run, NTP_FORMAT_TABLE);
    assert_null(strstr(table, "while the CPUs shared a cache, measured"));
    assert_null(strstr(table, "hand-off moved"));
    free(table);
    h->apart_n = 40;
    /* Looks that split iterations which ran alike (ntp_handoff_check.
     * unconfirmed): neither the split nor the note beside the prediction,
     * and the JSON says so. */
    h->apart = false;
    h->unconfirmed = true;
    table = capture(fx, write_run, NTP_FORMAT_TABLE);
    assert_null(strstr(table, "while the CPUs shared a cache, measured"));
    assert_null(strstr(table, "hand-off moved"));
    assert_null(strstr(table, "did not share a cache"));
    free(table);
    char *alike = capture(fx, write_run, NTP_FORMAT_JSON);
    assert_int_equal(validate(alike, "report.schema.json"), 0);
    back = load_text(alike);
    assert_true(back->env.contention.handoff.unconfirmed);
    assert_false(back->env.contention.handoff.apart);
    ntp_run_result_free(back);
    free(alike);
    h->apart = true;
    h->unconfirmed = false;
    /* Together throughout: no note. */
    h->after.ratio = 1.25;
    h->window_ratio = 1.5;
    table = capture(fx, write_run, NTP_FORMAT_TABLE);
    assert_null(strstr(table, "did not share a cache"));
    free(table);
    fx->r.prediction.available = false;

    /* Not probed: measured false and why; an older report without the
     * field reads as not probed and is written without it again. */
    memset(h, 0, sizeof *h);
    snprintf(h->reason, sizeof h->reason,
             "one thread: no layer hands data from one CPU to another");
    free(text);
    text = capture(fx, write_run, NTP_FORMAT_JSON);
    assert_int_equal(validate(text, "report.schema.json"), 0);
    back = load_text(text);
    assert_false(back->env.contention.handoff.measured);
    assert_string_equal(back->env.contention.handoff.reason,
                        "one thread: no layer hands data from one CPU to another");
    ntp_run_result_free(back);
    json_decref(root);
    back = without_contention(fx, text, "handoff");
    assert_false(back->env.contention.handoff.measured);
    assert_string_equal(back->env.contention.handoff.reason, "");
    ntp_run_result_free(back);
    free(text);
}

/* environment.contention.bandwidth (docs/report-format.md): written,
 * valid, read back field by field; a report without it (older) reads as
 * not probed and writes none again; a probe that did not run says why. */
static void test_bandwidth_check(void **state)
{
    fixture *fx = *state;
    ntp_contention *c = &fx->r.env.contention;
    c->measured = true;
    c->window_s = 1.5;
    c->cpus = 2;
    c->other = 0.25;
    c->resolution = 0.0125;
    c->load_average = 0.75;
    ntp_bandwidth_check *b = &c->bandwidth;
    b->measured = true;
    b->before_gbps = 14.25;
    b->after_gbps = 10.75;
    b->working_set_bytes = 134217600;
    b->threads = 2;
    b->cost_s = 0.0875;
    b->ceiling_gbps = 20.5;
    b->ceiling_min_gbps = 17.25;
    b->before_share = 14.25 / 20.5;
    b->after_share = 10.75 / 20.5;
    b->low = true;
    b->after_contended = true;
    b->before_handoff = 1.125; /* the looks next to the probes; the ceiling's not looked */
    b->after_handoff = 1.25;

    char *text = capture(fx, write_run, NTP_FORMAT_JSON);
    json_t *root = parse(text);
    json_t *bo = json_object_get(
        json_object_get(json_object_get(root, "environment"), "contention"), "bandwidth");
    assert_non_null(bo);
    assert_true(json_is_true(json_object_get(bo, "measured")));
    assert_float_equal(num(bo, "before_gbps"), 14.25, 1e-12);
    assert_float_equal(num(bo, "after_gbps"), 10.75, 1e-12);
    assert_float_equal(num(bo, "ceiling_gbps"), 20.5, 1e-12);
    assert_float_equal(num(bo, "ceiling_min_gbps"), 17.25, 1e-12);
    assert_float_equal(num(bo, "before_share"), 14.25 / 20.5, 1e-12);
    assert_float_equal(num(bo, "after_share"), 10.75 / 20.5, 1e-12);
    assert_float_equal(num(bo, "low_share"), 0.8, 1e-12);
    assert_float_equal(num(bo, "cost_s"), 0.0875, 1e-12);
    assert_float_equal(num(bo, "before_handoff_ratio"), 1.125, 0);
    assert_true(json_is_null(json_object_get(bo, "ceiling_handoff_ratio")));
    assert_int_equal(json_integer_value(json_object_get(bo, "working_set_bytes")), 134217600);
    assert_int_equal(json_integer_value(json_object_get(bo, "threads")), 2);
    assert_true(json_is_true(json_object_get(bo, "low")));
    assert_float_equal(num(bo, "high_share"), 1.25, 1e-12);
    assert_true(json_is_false(json_object_get(bo, "high")));
    assert_true(json_is_false(json_object_get(bo, "before_contended")));
    assert_true(json_is_true(json_object_get(bo, "after_contended")));
    assert_null(json_object_get(bo, "share_reason"));
    assert_int_equal(validate(text, "report.schema.json"), 0);
    /* The schema is strict about it. */
    json_object_set_new(bo, "before_gbps", json_string("fast"));
    char *bad = json_dumps(root, 0);
    assert_int_equal(validate(bad, "report.schema.json"), 1);
    free(bad);

    ntp_run_result *back = load_text(text);
    const ntp_bandwidth_check *rb = &back->env.contention.bandwidth;
    assert_true(rb->measured && rb->low && !rb->high);
    assert_true(!rb->before_contended && rb->after_contended);
    assert_float_equal(rb->before_gbps, 14.25, 1e-12);
    assert_float_equal(rb->after_gbps, 10.75, 1e-12);
    assert_float_equal(rb->ceiling_gbps, 20.5, 1e-12);
    assert_float_equal(rb->ceiling_min_gbps, 17.25, 1e-12);
    assert_float_equal(rb->before_share, 14.25 / 20.5, 1e-12);
    assert_float_equal(rb->after_share, 10.75 / 20.5, 1e-12);
    assert_float_equal(rb->cost_s, 0.0875, 1e-12);
    assert_float_equal(rb->after_handoff, 1.25, 0);
    assert_true(rb->ceiling_handoff == 0);
    assert_int_equal(rb->working_set_bytes, 134217600);
    assert_int_equal(rb->threads, 2);
    assert_string_equal(rb->reason, "");
    ntp_run_result_free(back);

    /* The table's header line. */
    char *table = capture(fx, write_run, NTP_FORMAT_TABLE);
    /* (The header wraps its lines at the terminal's width.) */
    if (!strstr(table, "memory bandwidth: 14.2 GB/s before, 10.8 after: 70% and 52% of this"))
        fail_msg("no bandwidth line in the header:\n%s", table);
    assert_null(strstr(table, "memory bandwidth read low"));
    free(table);
    /* Beside a prediction, the low share is a note: the error of a
     * memory-bound layer may be the machine's (docs/predict.md). */
    fx->r.prediction.available = true;
    snprintf(fx->r.prediction.calibration, sizeof fx->r.prediction.calibration, "test");
    static const char note[] = "memory bandwidth read low around this run (52% of this";
    table = capture(fx, write_run, NTP_FORMAT_TABLE);
    if (!strstr(table, "prediction: memory bandwidth read low around this run (52% of this"))
        fail_msg("no bandwidth note beside the prediction:\n%s", table);
    free(table);
    char *html = capture(fx, write_html, NTP_FORMAT_TABLE);
    assert_non_null(strstr(html, note));
    free(html);
    b->low = false;
    table = capture(fx, write_run, NTP_FORMAT_TABLE);
    assert_null(strstr(table, "memory bandwidth read low"));
    free(table);
    /* A probe well above the ceiling: the note blames the stored ceilings,
     * and high reads back. */
    b->before_gbps = 27.5;
    b->before_share = 27.5 / 20.5;
    b->high = true;
    table = capture(fx, write_run, NTP_FORMAT_TABLE);
    if (!strstr(table, "prediction: memory bandwidth read 1.3x the stored DRAM triad ceiling"))
        fail_msg("no stale-ceiling note beside the prediction:\n%s", table);
    free(table);
    char *json = capture(fx, write_run, NTP_FORMAT_JSON);
    assert_int_equal(validate(json, "report.schema.json"), 0);
    back = load_text(json);
    assert_true(back->env.contention.bandwidth.high);
    ntp_run_result_free(back);
    free(json);
    b->high = false;
    b->before_gbps = 14.25;
    b->before_share = 14.25 / 20.5;
    /* The calibration's bus read low: said beside the run's, in JSON and
     * read back (docs/predict.md#the-calibrations-memory-bus). */
    fx->r.prediction.calibration_bus_share = 0.5625;
    fx->r.prediction.calibration_bus_low = true;
    b->low = true;
    table = capture(fx, write_run, NTP_FORMAT_TABLE);
    if (!strstr(table, "memory-bus probes read 56% of this machine's DRAM triad: memory-bound"))
        fail_msg("no calibration-bus note beside the prediction:\n%s", table);
    free(table);
    json = capture(fx, write_run, NTP_FORMAT_JSON);
    assert_int_equal(validate(json, "report.schema.json"), 0);
    back = load_text(json);
    assert_float_equal(back->prediction.calibration_bus_share, 0.5625, 0);
    assert_true(back->prediction.calibration_bus_low);
    ntp_run_result_free(back);
    free(json);
    /* Not low: no note; n/a writes null and reads back as -1. */
    fx->r.prediction.calibration_bus_low = false;
    fx->r.prediction.calibration_bus_share = -1;
    b->low = false;
    table = capture(fx, write_run, NTP_FORMAT_TABLE);
    assert_null(strstr(table, "the calibration's memory-bus probes"));
    free(table);
    json = capture(fx, write_run, NTP_FORMAT_JSON);
    assert_int_equal(validate(json, "report.schema.json"), 0);
    back = load_text(json);
    assert_float_equal(back->prediction.calibration_bus_share, -1, 0);
    ntp_run_result_free(back);
    free(json);
    b->low = true;
    fx->r.prediction.available = false;

    /* Without ceilings: shares null with their reason, read back as n/a. */
    b->ceiling_gbps = b->ceiling_min_gbps = 0;
    b->before_share = b->after_share = -1;
    b->low = false;
    snprintf(b->share_reason, sizeof b->share_reason,
             "no ceilings for this machine (run ntprof machine)");
    free(text);
    text = capture(fx, write_run, NTP_FORMAT_JSON);
    assert_int_equal(validate(text, "report.schema.json"), 0);
    back = load_text(text);
    rb = &back->env.contention.bandwidth;
    assert_true(rb->measured && !rb->low);
    assert_true(rb->before_share == -1 && rb->after_share == -1 && rb->ceiling_gbps == 0);
    assert_string_equal(rb->share_reason, "no ceilings for this machine (run ntprof machine)");
    ntp_run_result_free(back);

    /* Skipped: measured false and why. */
    memset(b, 0, sizeof *b);
    snprintf(b->reason, sizeof b->reason, "off (ntp_run_opts.bandwidth_probe)");
    free(text);
    text = capture(fx, write_run, NTP_FORMAT_JSON);
    assert_int_equal(validate(text, "report.schema.json"), 0);
    back = load_text(text);
    rb = &back->env.contention.bandwidth;
    assert_false(rb->measured);
    assert_string_equal(rb->reason, "off (ntp_run_opts.bandwidth_probe)");
    ntp_run_result_free(back);

    /* An older report, without the field: reads, not probed, and is
     * written without it again. */
    json_decref(root);
    root = parse(text);
    json_object_del(json_object_get(json_object_get(root, "environment"), "contention"),
                    "bandwidth");
    char *old = json_dumps(root, 0);
    back = load_text(old);
    rb = &back->env.contention.bandwidth;
    assert_false(rb->measured);
    assert_string_equal(rb->reason, "");
    assert_true(back->env.contention.measured);
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(ntp_report_write_run(fx->ctx, back, NTP_FORMAT_JSON, f), NTP_STATUS_OK);
    long n = ftell(f);
    char *again = calloc(1, (size_t)n + 1);
    assert_non_null(again);
    rewind(f);
    assert_int_equal(fread(again, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    assert_null(strstr(again, "\"bandwidth\""));
    assert_non_null(strstr(again, "\"contention\""));
    free(again);
    ntp_run_result_free(back);
    free(old);
    json_decref(root);
    free(text);
}

static void test_bad_arguments(void **state)
{
    fixture *fx = *state;
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(ntp_report_write_run(fx->ctx, NULL, NTP_FORMAT_JSON, f),
                     NTP_STATUS_INVALID_ARGUMENT);
    fx->r.layers = NULL;
    assert_int_equal(ntp_report_write_run(fx->ctx, &fx->r, NTP_FORMAT_TABLE, f),
                     NTP_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ntp_report_write_run_trace(fx->ctx, &fx->r, f), NTP_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ftell(f), 0);
    fclose(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_edge_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_csv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fusion_and_impl, setup, teardown),
        cmocka_unit_test_setup_teardown(test_roofline_and_accuracy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_roofline_unreliable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpu_rows_and_device_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trace_overlapping_markers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trace_without_timings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bandwidth_check, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handoff_check, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pace_check, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torch_script, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sweep_task, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
