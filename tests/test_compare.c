/* Comparing runs: the significance rule on hand-made intervals, speedups
 * and their interval bounds computed by hand, layer alignment (matched,
 * renamed, added, missing, duplicate names), marker alignment, what differs
 * between runs, the writers, and run reports read back from JSON (a round
 * trip, and malformed reports with the exact error each gives). Fused and
 * unfused runs: by hand (a group's time against the sum of its layers',
 * never a fused layer's own time) and from real runs of models/tiny-cnn.xml
 * with and without --fuse, their reports validated against the schema;
 * layers whose type, backend or implementation changed are flagged. */
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
#include <sys/wait.h>
#include <unistd.h>

#include "measure/run-result-impl.h"
#include "ntprof/ntprof.h"
#include "support/models.h"

static ntp_stats timing(double median, double lo, double hi)
{
    ntp_stats s = {.n = 20,
                   .min = lo * 0.9,
                   .max = hi * 1.1,
                   .mean = median,
                   .median = median,
                   .p90 = hi,
                   .p99 = hi * 1.05,
                   .stddev = (hi - lo) / 4,
                   .ci95_lo = lo,
                   .ci95_hi = hi,
                   .cv = 0.05};
    return s;
}

static void test_significance(void **state)
{
    (void)state;
    ntp_stats a = timing(2.0, 1.8, 2.2);
    ntp_stats overlap = timing(2.1, 2.0, 2.4);
    ntp_stats lower = timing(1.0, 0.9, 1.1);
    ntp_stats higher = timing(3.0, 2.5, 3.5);
    ntp_stats touching = timing(2.5, 2.2, 2.8); /* lo == a.hi: still overlapping */
    assert_int_equal(ntp_compare_stats(&a, &overlap), NTP_VERDICT_SAME);
    assert_int_equal(ntp_compare_stats(&a, &lower), NTP_VERDICT_FASTER);
    assert_int_equal(ntp_compare_stats(&a, &higher), NTP_VERDICT_SLOWER);
    assert_int_equal(ntp_compare_stats(&a, &touching), NTP_VERDICT_SAME);
    assert_int_equal(ntp_compare_stats(&a, &a), NTP_VERDICT_SAME);
    ntp_stats none = {0};
    assert_int_equal(ntp_compare_stats(&a, &none), NTP_VERDICT_NA);
    assert_int_equal(ntp_compare_stats(&none, &a), NTP_VERDICT_NA);
    ntp_stats nan = timing(2.0, NAN, 2.2);
    assert_int_equal(ntp_compare_stats(&a, &nan), NTP_VERDICT_NA);
    assert_int_equal(ntp_compare_stats(&a, NULL), NTP_VERDICT_NA);
    assert_string_equal(ntp_verdict_name(NTP_VERDICT_SAME), "no significant difference");
    assert_string_equal(ntp_align_name(NTP_ALIGN_RENAMED), "renamed");
}

/* --- two hand-made runs ------------------------------------------------------------------ */

typedef struct run {
    ntp_run_result r;
    ntp_layer_result layers[8];
    ntp_marker_result markers[2];
    const char *pn[2], *pv[2];
} run;

static ntp_layer_result layer(const char *name, const char *type, int64_t flops, int d0, int d1,
                              ntp_stats t, double share)
{
    ntp_layer_result l = {.name = name,
                          .type = type,
                          .kind = "layer",
                          .backend = "ref",
                          .output_shape = {2, {d0, d1}},
                          .time_ms = t,
                          .share = share,
                          .flops = flops,
                          .bytes = 100,
                          .gflops = 1,
                          .gbps = 1,
                          .intensity = (double)flops / 100};
    return l;
}

static void base_run(run *x)
{
    memset(x, 0, sizeof *x);
    ntp_run_result *r = &x->r;
    r->topology = "net";
    r->source = "net.xml";
    r->backend = "ref";
    r->precision = NTP_DTYPE_F32;
    r->batch = 1;
    r->threads = 1;
    r->seed = 1;
    r->iterations = 20;
    x->pn[0] = "batch", x->pv[0] = "1";
    x->pn[1] = "hidden", x->pv[1] = "32";
    r->n_params = 2;
    r->param_names = x->pn;
    r->param_values = x->pv;
    x->layers[0] = layer("conv1", "conv", 1000, 1, 64, timing(4.0, 3.8, 4.2), 0.4);
    x->layers[1] = layer("relu1", "relu", 64, 1, 64, timing(1.0, 0.95, 1.05), 0.1);
    x->layers[2] = layer("fc", "fc", 500, 1, 32, timing(2.0, 1.9, 2.1), 0.2);
    x->layers[3] = layer("old_head", "fc", 320, 1, 10, timing(2.0, 1.9, 2.1), 0.2);
    x->layers[4] = layer("dropped", "mul", 10, 1, 10, timing(1.0, 0.9, 1.1), 0.1);
    r->n_layers = 5;
    r->layers = x->layers;
    x->markers[0] = (ntp_marker_result){
        .name = "body", .first = 0, .last = 2, .time_ms = timing(7.0, 6.8, 7.2), .share = 0.7};
    x->markers[1] = (ntp_marker_result){
        .name = "head", .first = 3, .last = 4, .time_ms = timing(3.0, 2.9, 3.1), .share = 0.3};
    r->n_markers = 2;
    r->markers = x->markers;
    r->end_to_end_ms = timing(10.0, 9.8, 10.2);
    r->layer_sum_ms = timing(10.0, 9.8, 10.2);
    r->throughput = 100;
    r->latency_ms = 10;
    ntp_env_collect(&r->env);
}

/* The other run: conv1 twice as fast, relu1 the same within noise, fc
 * slower, old_head renamed new_head (same type, shape, FLOPs), dropped
 * gone, an added layer, a different backend and hidden size. */
static void other_run(run *x)
{
    base_run(x);
    ntp_run_result *r = &x->r;
    r->backend = "onednn";
    x->pv[1] = "64";
    x->layers[0] = layer("conv1", "conv", 1000, 1, 64, timing(2.0, 1.9, 2.1), 0.25);
    x->layers[1] = layer("relu1", "relu", 64, 1, 64, timing(1.02, 0.97, 1.08), 0.125);
    x->layers[2] = layer("fc", "fc", 500, 1, 32, timing(3.0, 2.9, 3.1), 0.375);
    x->layers[3] = layer("extra", "add", 32, 1, 32, timing(0.5, 0.45, 0.55), 0.0625);
    x->layers[4] = layer("new_head", "fc", 320, 1, 10, timing(1.5, 1.4, 1.6), 0.1875);
    r->n_layers = 5;
    x->markers[1].name = "tail";
    r->end_to_end_ms = timing(8.0, 7.9, 8.1);
    r->throughput = 125;
}

static const ntp_compare_row *find(const ntp_compare_pair *p, const char *name)
{
    for (int i = 0; i < p->n_rows; i++)
        if (strcmp(p->rows[i].name, name) == 0)
            return &p->rows[i];
    fail_msg("no row '%s'", name);
    return NULL;
}

static void test_alignment(void **state)
{
    (void)state;
    static run a, b;
    base_run(&a);
    other_run(&b);
    ntp_ctx *ctx = ntp_ctx_init();
    const ntp_run_result *runs[2] = {&a.r, &b.r};
    ntp_comparison *c;
    assert_int_equal(ntp_compare(ctx, runs, NULL, 2, &c), NTP_STATUS_OK);
    assert_int_equal(ntp_comparison_pair_count(c), 1);
    assert_string_equal(ntp_comparison_label(c, 0), "A");
    assert_string_equal(ntp_comparison_label(c, 1), "B");
    const ntp_compare_pair *p = ntp_comparison_pair(c, 0);
    assert_int_equal(p->n_rows, 6);

    const ntp_compare_row *r = find(p, "conv1");
    assert_int_equal(r->align, NTP_ALIGN_MATCHED);
    assert_int_equal(r->base_index, 0);
    assert_int_equal(r->other_index, 0);
    assert_float_equal(r->speedup, 2.0, 1e-12);
    assert_float_equal(r->speedup_lo, 3.8 / 2.1, 1e-12);
    assert_float_equal(r->speedup_hi, 4.2 / 1.9, 1e-12);
    assert_float_equal(r->delta_ms, -2.0, 1e-12);
    assert_int_equal(r->verdict, NTP_VERDICT_FASTER);
    assert_float_equal(r->base_share, 0.4, 1e-12);
    assert_float_equal(r->other_share, 0.25, 1e-12);

    r = find(p, "relu1");
    assert_int_equal(r->verdict, NTP_VERDICT_SAME);
    r = find(p, "fc");
    assert_int_equal(r->verdict, NTP_VERDICT_SLOWER);
    assert_float_equal(r->delta_ms, 1.0, 1e-12);

    r = find(p, "old_head");
    assert_int_equal(r->align, NTP_ALIGN_RENAMED);
    assert_string_equal(r->other_name, "new_head");
    assert_int_equal(r->other_index, 4);
    assert_int_equal(r->verdict, NTP_VERDICT_FASTER);

    r = find(p, "dropped");
    assert_int_equal(r->align, NTP_ALIGN_MISSING);
    assert_int_equal(r->other_index, -1);
    assert_float_equal(r->delta_ms, -1.0, 1e-12);
    assert_int_equal(r->verdict, NTP_VERDICT_NA);

    r = find(p, "extra");
    assert_int_equal(r->align, NTP_ALIGN_ADDED);
    assert_int_equal(r->base_index, -1);
    assert_int_equal(r->other_index, 3);
    assert_float_equal(r->delta_ms, 0.5, 1e-12);

    /* Largest regression first: fc (+1), extra (+0.5), relu1 (+0.02),
     * old_head (-0.5), dropped (-1), conv1 (-2). */
    const char *order[] = {"fc", "extra", "relu1", "old_head", "dropped", "conv1"};
    for (int i = 0; i < 6; i++)
        assert_string_equal(p->rows[i].name, order[i]);

    assert_int_equal(p->end_to_end.verdict, NTP_VERDICT_FASTER);
    assert_float_equal(p->end_to_end.speedup, 1.25, 1e-12);
    assert_float_equal(p->throughput_ratio, 1.25, 1e-12);

    /* Markers by name: body matched, head missing, tail added. */
    assert_int_equal(p->n_markers, 3);
    assert_string_equal(p->markers[0].name, "body");
    assert_int_equal(p->markers[0].align, NTP_ALIGN_MATCHED);
    assert_int_equal(p->markers[0].verdict, NTP_VERDICT_SAME);
    assert_string_equal(p->markers[1].name, "head");
    assert_int_equal(p->markers[1].align, NTP_ALIGN_MISSING);
    assert_string_equal(p->markers[2].name, "tail");
    assert_int_equal(p->markers[2].align, NTP_ALIGN_ADDED);

    /* What differs: the backend and the hidden size, nothing else. */
    assert_int_equal(p->n_diffs, 2);
    assert_string_equal(p->diffs[0], "backend: ref -> onednn");
    assert_string_equal(p->diffs[1], "param hidden: 32 -> 64");
    ntp_comparison_free(c);
    ntp_ctx_free(ctx);
}

static void test_duplicates_and_many(void **state)
{
    (void)state;
    static run a, b;
    base_run(&a);
    base_run(&b);
    /* Two rows named "x" in each run pair up in order. */
    a.layers[1].name = a.layers[2].name = "x";
    b.layers[1].name = b.layers[2].name = "x";
    b.layers[2].time_ms = timing(5.0, 4.9, 5.1);
    ntp_ctx *ctx = ntp_ctx_init();
    const ntp_run_result *runs[3] = {&a.r, &b.r, &a.r};
    const char *labels[3] = {"first", "second", "third"};
    ntp_comparison *c;
    assert_int_equal(ntp_compare(ctx, runs, labels, 3, &c), NTP_STATUS_OK);
    assert_int_equal(ntp_comparison_pair_count(c), 2);
    assert_int_equal(ntp_comparison_run_count(c), 3);
    assert_ptr_equal(ntp_comparison_run(c, 1), &b.r);
    assert_string_equal(ntp_comparison_label(c, 2), "third");
    assert_null(ntp_comparison_label(c, 3));
    assert_null(ntp_comparison_run(c, -1));
    assert_null(ntp_comparison_pair(c, 2));
    const ntp_compare_pair *p = ntp_comparison_pair(c, 0);
    assert_string_equal(p->rows[0].name, "x");
    assert_int_equal(p->rows[0].base_index, 2);
    assert_int_equal(p->rows[0].other_index, 2);
    assert_float_equal(p->rows[0].delta_ms, 3.0, 1e-12);
    for (int i = 0; i < p->n_rows; i++)
        assert_int_equal(p->rows[i].align, NTP_ALIGN_MATCHED);
    assert_int_equal(p->n_diffs, 0);
    /* A run against itself: every row the same. */
    const ntp_compare_pair *self = ntp_comparison_pair(c, 1);
    assert_int_equal(self->other, 2);
    for (int i = 0; i < self->n_rows; i++) {
        assert_int_equal(self->rows[i].verdict, NTP_VERDICT_SAME);
        assert_float_equal(self->rows[i].speedup, 1.0, 1e-12);
    }
    ntp_comparison_free(c);
    assert_int_equal(ntp_compare(ctx, runs, NULL, 1, &c), NTP_STATUS_INVALID_ARGUMENT);
    assert_null(c);

    /* 20,000 rows each, reversed in the other run: alignment by name stays
     * linear (this would take minutes if it were quadratic). */
    enum { N = 20000 };
    ntp_layer_result *la = calloc(N, sizeof *la), *lb = calloc(N, sizeof *lb);
    char(*names)[16] = calloc(N, sizeof *names);
    assert_non_null(la);
    assert_non_null(lb);
    assert_non_null(names);
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "L%d", i);
        la[i] = layer(names[i], "fc", i, 1, 1, timing(1, 0.9, 1.1), 1.0 / N);
        lb[N - 1 - i] = layer(names[i], "fc", i, 1, 1,
                              timing(1 + (i == 77), 0.9 + (i == 77), 1.1 + (i == 77)), 1.0 / N);
    }
    a.r.layers = la;
    a.r.n_layers = N;
    b.r.layers = lb;
    b.r.n_layers = N;
    assert_int_equal(ntp_compare(ctx, runs, NULL, 2, &c), NTP_STATUS_OK);
    assert_int_equal(ntp_comparison_pair(c, 0)->n_rows, N);
    assert_string_equal(ntp_comparison_pair(c, 0)->rows[0].name, "L77");
    assert_int_equal(ntp_comparison_pair(c, 0)->rows[0].other_index, N - 1 - 77);
    assert_int_equal(ntp_comparison_pair(c, 0)->rows[0].verdict, NTP_VERDICT_SLOWER);
    ntp_comparison_free(c);
    free(la);
    free(lb);
    free(names);
    ntp_ctx_free(ctx);
}

static char *capture(ntp_ctx *ctx, const ntp_comparison *c, ntp_format fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(ntp_report_write_comparison(ctx, c, fmt, f), NTP_STATUS_OK);
    fclose(f);
    return buf;
}

/* Validate a JSON file against schema/<schema> with python3-jsonschema. */
static int validate_file(const char *path, const char *schema)
{
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
    assert_true(rc != -1 && WIFEXITED(rc));
    int code = WEXITSTATUS(rc);
    if (code != 0 && code != 1)
        fail_msg("python3 jsonschema validation could not run (exit %d)", code);
    return code;
}

/* The same for text: 0 valid, 1 invalid. */
static int validate_text(const char *text, const char *schema)
{
    char path[] = "/tmp/ntp-test-compare-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    int code = validate_file(path, schema);
    unlink(path);
    return code;
}

static void test_writers(void **state)
{
    (void)state;
    static run a, b;
    base_run(&a);
    other_run(&b);
    ntp_ctx *ctx = ntp_ctx_init();
    const ntp_run_result *runs[2] = {&a.r, &b.r};
    const char *labels[2] = {"before.json", "run 7"};
    ntp_comparison *c;
    assert_int_equal(ntp_compare(ctx, runs, labels, 2, &c), NTP_STATUS_OK);

    char *t = capture(ctx, c, NTP_FORMAT_TABLE);
    fputs(t, stdout);
    assert_non_null(strstr(t, "A = before.json: net on ref, f32, batch 1, threads 1, no --fuse;"));
    assert_null(strstr(t, "fusion:")); /* both ran without --fuse */
    assert_non_null(strstr(t, "B = run 7: net on onednn"));
    assert_non_null(strstr(t, "differences: backend: ref -> onednn; param hidden: 32 -> 64\n"));
    assert_non_null(strstr(t, "B is 1.25x faster than A (speedup 1.25x"));
    assert_non_null(strstr(t, "\nfc                       matched    2.0000    3.0000   +1.0000"
                              "   0.67x slower    20.0   37.5\n"));
    assert_non_null(strstr(t, "\nold_head -> new_head     renamed    2.0000    1.5000   -0.5000"
                              "   1.33x faster    20.0   18.8\n"));
    assert_non_null(strstr(t, "\ndropped                  missing    1.0000         -   -1.0000"
                              "       - n/a       10.0      -\n"));
    assert_non_null(strstr(t, "\nextra                    added           -    0.5000   +0.5000"
                              "       - n/a          -    6.2\n"));
    assert_non_null(strstr(t, "layers: 3 matched, 1 renamed, 1 added in B, 1 missing from B\n"));
    assert_null(strstr(t, "device memory")); /* neither run had an accelerator */
    for (char *p = t; *p;) {
        size_t n = strcspn(p, "\n"), cols = 0;
        for (size_t i = 0; i < n; i++)
            cols += ((unsigned char)p[i] & 0xC0) != 0x80;
        if (cols > 100)
            fail_msg("line of %zu columns: %.*s", cols, (int)n, p);
        p += n + (p[n] == '\n');
    }
    free(t);

    t = capture(ctx, c, NTP_FORMAT_JSON);
    assert_int_equal(validate_text(t, "compare.schema.json"), 0);
    json_error_t err;
    json_t *j = json_loads(t, 0, &err);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "kind")), "comparison");
    json_t *pair = json_array_get(json_object_get(j, "pairs"), 0);
    json_t *first = json_array_get(json_object_get(pair, "layers"), 0);
    assert_string_equal(json_string_value(json_object_get(first, "name")), "fc");
    assert_string_equal(json_string_value(json_object_get(first, "verdict")), "slower");
    json_t *renamed = json_array_get(json_object_get(pair, "layers"), 3);
    assert_string_equal(json_string_value(json_object_get(renamed, "status")), "renamed");
    assert_string_equal(json_string_value(json_object_get(renamed, "other_name")), "new_head");
    json_t *added = json_array_get(json_object_get(pair, "layers"), 1);
    assert_true(json_is_null(json_object_get(added, "base")));
    assert_true(json_is_null(json_object_get(added, "speedup")));
    json_t *e2e = json_object_get(pair, "end_to_end");
    assert_float_equal(json_number_value(json_object_get(e2e, "speedup")), 1.25, 1e-12);
    assert_float_equal(json_number_value(json_array_get(json_object_get(e2e, "speedup_ci95"), 0)),
                       9.8 / 8.1, 1e-12);
    json_decref(j);
    free(t);

    t = capture(ctx, c, NTP_FORMAT_CSV);
    int lines = 0;
    for (char *p = t; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 1 + 1 + 6 + 3); /* header, end to end, 6 rows, 3 markers */
    assert_non_null(strstr(t, "\nbefore.json,run 7,layer,fc,fc,fc,matched,2,1.9,2.1,3,2.9,3.1,1,"
                              "0.6666666667,"));
    free(t);
    ntp_comparison_free(c);
    ntp_ctx_free(ctx);
}

/* --- fused and unfused runs ------------------------------------------------------------- */

static ntp_layer_result fused_layer(const char *name, const char *type, const char *into)
{
    /* What a fused row's own time is: the cost of the clock reads around
     * nothing, far below any layer's. Compared as a time it read "666x
     * faster". */
    ntp_layer_result l = layer(name, type, 64, 1, 64, timing(0.0015, 0.0014, 0.0016), 0.0001);
    l.kind = "fused";
    l.fused = true;
    l.fused_into = into;
    l.backend = "onednn";
    l.impl = "gemm:jit";
    return l;
}

/* A: conv1, bn1, relu1 each on its own, fc, head; B: bn1 and relu1 fused
 * into conv1 (which falls to another implementation), fc now a matmul,
 * head on another backend. */
static void unfused_run(run *x)
{
    base_run(x);
    ntp_run_result *r = &x->r;
    r->backend = "onednn";
    x->layers[0] = layer("conv1", "conv", 1000, 1, 64, timing(4.0, 3.8, 4.2), 0.4);
    x->layers[1] = layer("bn1", "batchnorm", 128, 1, 64, timing(1.0, 0.9, 1.1), 0.1);
    x->layers[2] = layer("relu1", "relu", 64, 1, 64, timing(1.0, 0.95, 1.05), 0.1);
    x->layers[3] = layer("fc", "fc", 500, 1, 32, timing(2.0, 1.9, 2.1), 0.2);
    x->layers[4] = layer("head", "fc", 320, 1, 10, timing(2.0, 1.9, 2.1), 0.2);
    for (int i = 0; i < 5; i++) {
        x->layers[i].backend = "onednn";
        x->layers[i].impl = "jit:avx512_core";
    }
    x->layers[0].impl = "brg:avx512_core";
    r->n_layers = 5;
}

static void fused_run(run *x)
{
    unfused_run(x);
    ntp_run_result *r = &x->r;
    r->fused = true;
    x->layers[0].time_ms = timing(3.0, 2.9, 3.1);
    x->layers[0].share = 0.6;
    x->layers[0].impl = "gemm:jit";
    x->layers[1] = fused_layer("bn1", "batchnorm", "conv1");
    x->layers[2] = fused_layer("relu1", "relu", "conv1");
    x->layers[3].type = "matmul";
    x->layers[4].backend = "ref";
    x->layers[4].impl = "ref";
    r->end_to_end_ms = timing(7.0, 6.9, 7.1);
}

static const ntp_compare_row *find_status(const ntp_compare_pair *p, ntp_align a, int k)
{
    for (int i = 0; i < p->n_rows; i++)
        if (p->rows[i].align == a && k-- == 0)
            return &p->rows[i];
    fail_msg("no row of status %s", ntp_align_name(a));
    return NULL;
}

/* No row compares a fused layer's own time: every row with a speedup is a
 * group or pairs layers that were not fused in either run. */
static void check_no_fused_time(const ntp_compare_pair *p, const ntp_run_result *A,
                                const ntp_run_result *B)
{
    for (int i = 0; i < p->n_rows; i++) {
        const ntp_compare_row *r = &p->rows[i];
        if (r->align == NTP_ALIGN_FUSED)
            continue;
        if (r->base_index >= 0 && A->layers[r->base_index].fused)
            fail_msg("row '%s' holds base row %d, a fused layer", r->name, r->base_index);
        if (r->other_index >= 0 && B->layers[r->other_index].fused)
            fail_msg("row '%s' holds other row %d, a fused layer", r->name, r->other_index);
    }
}

static char *html_text(ntp_ctx *ctx, const ntp_comparison *c)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(ntp_report_write_comparison_html(ctx, c, f), NTP_STATUS_OK);
    fclose(f);
    return buf;
}

static void test_fused_groups(void **state)
{
    (void)state;
    static run a, b;
    unfused_run(&a);
    fused_run(&b);
    ntp_ctx *ctx = ntp_ctx_init();
    const ntp_run_result *runs[2] = {&a.r, &b.r};
    ntp_comparison *c;
    assert_int_equal(ntp_compare(ctx, runs, NULL, 2, &c), NTP_STATUS_OK);
    const ntp_compare_pair *p = ntp_comparison_pair(c, 0);
    /* One row for conv1 + bn1 + relu1, then fc and head. */
    assert_int_equal(p->n_rows, 3);
    assert_int_equal(p->n_fused_groups, 1);
    const ntp_compare_row *g = find_status(p, NTP_ALIGN_FUSED, 0);
    assert_string_equal(g->name, "conv1");
    assert_string_equal(g->other_name, "conv1");
    assert_string_equal(g->type, "conv");
    assert_int_equal(g->n_members, 3);
    assert_string_equal(g->members[0], "conv1");
    assert_string_equal(g->members[1], "bn1");
    assert_string_equal(g->members[2], "relu1");
    assert_int_equal(g->base_rows, 3);
    assert_int_equal(g->other_rows, 1);
    assert_int_equal(g->base_index, 0);
    assert_int_equal(g->other_index, 0);
    /* A: 4 + 1 + 1 ms, interval [3.8 + 0.9 + 0.95, 4.2 + 1.1 + 1.05]; B:
     * the group's 3 ms [2.9, 3.1]. */
    assert_float_equal(g->base.median, 6.0, 1e-12);
    assert_float_equal(g->base.ci95_lo, 5.65, 1e-12);
    assert_float_equal(g->base.ci95_hi, 6.35, 1e-12);
    assert_float_equal(g->other.median, 3.0, 1e-12);
    assert_float_equal(g->speedup, 2.0, 1e-12);
    assert_float_equal(g->speedup_lo, 5.65 / 3.1, 1e-12);
    assert_float_equal(g->speedup_hi, 6.35 / 2.9, 1e-12);
    assert_float_equal(g->delta_ms, -3.0, 1e-12);
    assert_int_equal(g->verdict, NTP_VERDICT_FASTER);
    assert_float_equal(g->base_share, 0.6, 1e-12);
    assert_float_equal(g->other_share, 0.6, 1e-12); /* the fused rows' own share is not counted */
    /* The group's first layer changed implementation. */
    assert_int_equal(g->changes, NTP_CHANGE_IMPL);
    assert_string_equal(g->base_impl, "brg:avx512_core");
    assert_string_equal(g->other_impl, "gemm:jit");
    check_no_fused_time(p, &a.r, &b.r);
    for (int i = 0; i < p->n_rows; i++)
        assert_true(p->rows[i].speedup <= 2.0 + 1e-12);
    /* fc: the same name, another type; head: another backend and
     * implementation. */
    const ntp_compare_row *r = find(p, "fc");
    assert_int_equal(r->align, NTP_ALIGN_MATCHED);
    assert_int_equal(r->changes, NTP_CHANGE_TYPE);
    assert_string_equal(r->type, "fc");
    assert_string_equal(r->other_type, "matmul");
    r = find(p, "head");
    assert_int_equal(r->changes, NTP_CHANGE_BACKEND | NTP_CHANGE_IMPL);
    assert_string_equal(r->base_backend, "onednn");
    assert_string_equal(r->other_backend, "ref");
    assert_int_equal(p->n_changed, 3);
    /* The runs differ in --fuse, and nothing else of their configuration. */
    assert_int_equal(p->n_diffs, 1);
    assert_string_equal(p->diffs[0], "fuse: off -> on");

    char *t = capture(ctx, c, NTP_FORMAT_TABLE);
    fputs(t, stdout);
    assert_non_null(strstr(t, "A = A: net on onednn, f32, batch 1, threads 1, no --fuse;"));
    assert_non_null(strstr(t, "B = B: net on onednn, f32, batch 1, threads 1, --fuse;"));
    assert_non_null(strstr(t, "\ndifferences: fuse: off -> on\n"));
    assert_non_null(strstr(t, "\nfusion: the runs differ in --fuse (A without, B with): a fused "
                              "layer has no time of its own, so each\n"));
    assert_non_null(strstr(t, "\nconv1 + bn1 + relu1      fused      6.0000    3.0000   -3.0000"
                              "   2.00x faster    60.0   60.0 I\n"));
    assert_non_null(strstr(t, "\nfc                       matched    2.0000    2.0000    0.0000"
                              "   1.00x same      20.0   20.0 T\n"));
    assert_non_null(strstr(t, "\nhead                     matched    2.0000    2.0000    0.0000"
                              "   1.00x same      20.0   20.0 BI\n"));
    /* The fused layers have no row of their own. */
    assert_null(strstr(t, "\nbn1 "));
    assert_null(strstr(t, "\nrelu1 "));
    assert_non_null(strstr(t, "layers: 2 matched, 0 renamed, 0 added in B, 0 missing from B, "
                              "1 fused group\n"
                              "fused groups (status fused), in the order listed above:\n"
                              "  conv1 + bn1 + relu1 (A: 3 rows summed, B: 1 row)\n"));
    assert_non_null(strstr(t, "\n  type fc -> matmul: fc\n"
                              "  backend onednn -> ref: head\n"
                              "  implementation jit:avx512_core -> ref: head\n"
                              "  implementation brg:avx512_core -> gemm:jit: conv1\n"));
    for (char *q = t; *q;) {
        size_t n = strcspn(q, "\n"), cols = 0;
        for (size_t i = 0; i < n; i++)
            cols += ((unsigned char)q[i] & 0xC0) != 0x80;
        if (cols > 100)
            fail_msg("line of %zu columns: %.*s", cols, (int)n, q);
        if (n > 0 && q[n - 1] == ' ')
            fail_msg("trailing space: %.*s", (int)n, q);
        q += n + (q[n] == '\n');
    }
    free(t);

    t = capture(ctx, c, NTP_FORMAT_JSON);
    assert_int_equal(validate_text(t, "compare.schema.json"), 0);
    json_t *j = json_loads(t, 0, NULL);
    assert_non_null(j);
    json_t *jruns = json_object_get(j, "runs");
    assert_true(json_is_false(json_object_get(json_array_get(jruns, 0), "fuse")));
    assert_true(json_is_true(json_object_get(json_array_get(jruns, 1), "fuse")));
    json_t *pair = json_array_get(json_object_get(j, "pairs"), 0);
    assert_int_equal(json_integer_value(json_object_get(pair, "fused_groups")), 1);
    json_t *rows = json_object_get(pair, "layers");
    json_t *jg = NULL;
    for (size_t i = 0; i < json_array_size(rows); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(rows, i), "status")),
                   "fused") == 0)
            jg = json_array_get(rows, i);
    assert_non_null(jg);
    json_t *mem = json_object_get(jg, "members");
    assert_int_equal(json_array_size(mem), 3);
    assert_string_equal(json_string_value(json_array_get(mem, 2)), "relu1");
    assert_int_equal(json_integer_value(json_object_get(jg, "base_rows")), 3);
    assert_int_equal(json_integer_value(json_object_get(jg, "other_rows")), 1);
    assert_float_equal(json_number_value(json_object_get(json_object_get(jg, "base"), "median_ms")),
                       6.0, 1e-12);
    assert_string_equal(json_string_value(json_array_get(json_object_get(jg, "changes"), 0)),
                        "impl");
    assert_string_equal(json_string_value(json_object_get(jg, "other_impl")), "gemm:jit");
    /* The schema is strict: a fused row without its layers, or a change it
     * does not know, is refused. */
    json_object_set_new(jg, "members", json_null());
    char *bad = json_dumps(j, 0);
    assert_int_equal(validate_text(bad, "compare.schema.json"), 1);
    free(bad);
    json_object_set_new(jg, "members", json_array());
    json_array_append_new(json_object_get(jg, "members"), json_string("conv1"));
    json_array_append_new(json_object_get(jg, "changes"), json_string("colour"));
    bad = json_dumps(j, 0);
    assert_int_equal(validate_text(bad, "compare.schema.json"), 1);
    free(bad);
    json_decref(j);
    free(t);

    t = capture(ctx, c, NTP_FORMAT_CSV);
    assert_non_null(strstr(t, ",speedup_lo,speedup_hi,verdict,base_share,other_share,members,"
                              "base_rows,other_rows,changes,other_type,base_backend,"
                              "other_backend,base_impl,other_impl,base_predicted_ms,"
                              "base_prediction_error,other_predicted_ms,"
                              "other_prediction_error\n"));
    assert_non_null(strstr(t, "\nA,B,layer,conv1,conv1,conv,fused,6,5.65,6.35,3,2.9,3.1,-3,2,"));
    assert_non_null(strstr(t, ",conv1;bn1;relu1,3,1,impl,conv,onednn,onednn,brg:avx512_core,"
                              "gemm:jit,,,,\n"));
    assert_non_null(strstr(t, ",,1,1,backend;impl,fc,onednn,ref,jit:avx512_core,ref,,,,\n"));
    free(t);

    t = html_text(ctx, c);
    assert_non_null(strstr(t, "The runs differ in --fuse (A without, B with)"));
    assert_non_null(
        strstr(t, "<td class=\"l\">conv1 + bn1 + relu1</td><td class=\"l\">fused</td>"));
    assert_non_null(
        strstr(t, "fused group: the base run&#39;s time sums 3 rows, the other&#39;s 1"));
    assert_non_null(strstr(t, "<td class=\"l\">type fc -&gt; matmul</td>"));
    assert_non_null(strstr(t, "<td class=\"l\">--fuse</td>"));
    free(t);
    ntp_comparison_free(c);

    /* The other way round: the fused run is the base; its group against
     * the sum of the same layers, half as fast. */
    const ntp_run_result *rev[2] = {&b.r, &a.r};
    assert_int_equal(ntp_compare(ctx, rev, NULL, 2, &c), NTP_STATUS_OK);
    p = ntp_comparison_pair(c, 0);
    assert_int_equal(p->n_rows, 3);
    g = find_status(p, NTP_ALIGN_FUSED, 0);
    assert_int_equal(g->base_rows, 1);
    assert_int_equal(g->other_rows, 3);
    assert_float_equal(g->speedup, 0.5, 1e-12);
    assert_int_equal(g->verdict, NTP_VERDICT_SLOWER);
    assert_string_equal(p->diffs[0], "fuse: on -> off");
    check_no_fused_time(p, &b.r, &a.r);
    ntp_comparison_free(c);
    ntp_ctx_free(ctx);
}

/* Both runs fused, differently: A fused bn1 only, B bn1 and relu1; a fused
 * row whose group is not in the report has no time; two runs with the
 * same fusion pair up group for group. */
static void test_fused_groups_differ(void **state)
{
    (void)state;
    static run a, b;
    fused_run(&a);
    fused_run(&b);
    a.layers[2] = layer("relu1", "relu", 64, 1, 64, timing(1.0, 0.95, 1.05), 0.1);
    a.layers[2].backend = "onednn";
    a.layers[2].impl = "gemm:jit";
    b.layers[3].type = "fc";
    b.layers[4].backend = "onednn";
    b.layers[4].impl = "jit:avx512_core";
    ntp_ctx *ctx = ntp_ctx_init();
    const ntp_run_result *runs[2] = {&a.r, &b.r};
    ntp_comparison *c;
    assert_int_equal(ntp_compare(ctx, runs, NULL, 2, &c), NTP_STATUS_OK);
    const ntp_compare_pair *p = ntp_comparison_pair(c, 0);
    assert_int_equal(p->n_rows, 3);
    const ntp_compare_row *g = find_status(p, NTP_ALIGN_FUSED, 0);
    assert_int_equal(g->n_members, 3);
    assert_int_equal(g->base_rows, 2); /* conv1's group and relu1 */
    assert_int_equal(g->other_rows, 1);
    assert_float_equal(g->base.median, 4.0, 1e-12);
    assert_float_equal(g->speedup, 4.0 / 3.0, 1e-12);
    assert_int_equal(g->changes, 0);
    assert_int_equal(p->n_diffs, 0);
    check_no_fused_time(p, &a.r, &b.r);
    ntp_comparison_free(c);

    /* The same fusion in both: the group's time against the group's. */
    fused_run(&a);
    assert_int_equal(ntp_compare(ctx, runs, NULL, 2, &c), NTP_STATUS_OK);
    p = ntp_comparison_pair(c, 0);
    g = find_status(p, NTP_ALIGN_FUSED, 0);
    assert_int_equal(g->base_rows, 1);
    assert_int_equal(g->other_rows, 1);
    assert_int_equal(g->verdict, NTP_VERDICT_SAME);
    assert_float_equal(g->speedup, 1.0, 1e-12);
    ntp_comparison_free(c);

    /* A fused row whose group is not in the report (an --only range that
     * starts inside a group): no time on its side, no speedup. */
    fused_run(&a);
    a.layers[1].fused_into = "gone";
    a.layers[2].fused_into = "gone";
    unfused_run(&b);
    assert_int_equal(ntp_compare(ctx, runs, NULL, 2, &c), NTP_STATUS_OK);
    p = ntp_comparison_pair(c, 0);
    assert_int_equal(p->n_fused_groups, 2);
    for (int k = 0; k < 2; k++) {
        g = find_status(p, NTP_ALIGN_FUSED, k);
        assert_int_equal(g->base_rows, 0);
        assert_int_equal(g->base_index, -1);
        assert_int_equal(g->other_rows, 1);
        assert_int_equal(g->verdict, NTP_VERDICT_NA);
        assert_float_equal(g->speedup, 0, 0);
    }
    char *t = capture(ctx, c, NTP_FORMAT_TABLE);
    assert_non_null(strstr(t, "\nbn1                      fused           -    1.0000   +1.0000"
                              "       - n/a          -   10.0\n"));
    free(t);
    ntp_comparison_free(c);
    ntp_ctx_free(ctx);
}

/* Run models/tiny-cnn.xml on `backend` with or without --fuse, write its
 * JSON report to path (validated against the schema) and read it back. */
static ntp_run_result *real_run(ntp_ctx *ctx, const ntp_graph *g, const char *backend, bool fuse,
                                const char *path)
{
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    o.backend = backend;
    o.warmup = 1;
    o.iterations = 10;
    o.min_time_s = 0;
    o.threads = 1;
    o.fuse = fuse;
    o.accuracy = false;
    ntp_run_result *r = NULL;
    if (ntp_run(ctx, g, &o, &r) != NTP_STATUS_OK)
        fail_msg("run on %s: %s", backend, ntp_ctx_errmsg(ctx));
    assert_int_equal(r->fused, fuse);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(ntp_report_write_run(ctx, r, NTP_FORMAT_JSON, f), NTP_STATUS_OK);
    fclose(f);
    ntp_run_result_free(r);
    assert_int_equal(validate_file(path, "report.schema.json"), 0);
    assert_int_equal(ntp_run_result_load(ctx, path, &r), NTP_STATUS_OK);
    assert_int_equal(r->fused, fuse);
    return r;
}

/* The row of `name` in r, -1 if none. */
static int row_of(const ntp_run_result *r, const char *name)
{
    for (int i = 0; i < r->n_layers; i++)
        if (strcmp(r->layers[i].name, name) == 0)
            return i;
    return -1;
}

static void test_real_fused_runs(void **state)
{
    (void)state;
    /* A backend that fuses: oneDNN where it is built, else BLAS. */
    const char *avail = ntp_backends_available();
    const char *backend = strstr(avail, "onednn") ? "onednn"
                          : strstr(avail, "blas") ? "blas"
                                                  : NULL;
    if (!backend)
        skip();
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = test_load_model(ctx, "tiny-cnn.xml", NULL, 0, NULL);
    char dir[] = "/tmp/ntp-test-compare-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char pa[64], pb[64];
    snprintf(pa, sizeof pa, "%s/plain.json", dir);
    snprintf(pb, sizeof pb, "%s/fused.json", dir);
    ntp_run_result *A = real_run(ctx, g, backend, false, pa);
    ntp_run_result *B = real_run(ctx, g, backend, true, pb);
    int n_fused = 0;
    for (int i = 0; i < B->n_layers; i++)
        n_fused += B->layers[i].fused;
    printf("%s: %d of %d rows fused\n", backend, n_fused, B->n_layers);
    assert_true(n_fused > 0);
    for (int i = 0; i < A->n_layers; i++) {
        assert_false(A->layers[i].fused);
        assert_non_null(A->layers[i].impl); /* every row names its implementation */
    }

    const ntp_run_result *runs[2] = {A, B};
    ntp_comparison *c;
    assert_int_equal(ntp_compare(ctx, runs, NULL, 2, &c), NTP_STATUS_OK);
    const ntp_compare_pair *p = ntp_comparison_pair(c, 0);
    assert_true(p->n_fused_groups > 0);
    check_no_fused_time(p, A, B);
    bool found_fuse = false;
    for (int i = 0; i < p->n_diffs; i++)
        found_fuse |= strcmp(p->diffs[i], "fuse: off -> on") == 0;
    assert_true(found_fuse);
    /* Every fused layer of B is a member of exactly one group row, and each
     * group holds B's one timed row against the sum of its members' own
     * rows in A, computed here from A's rows by name. */
    int members_seen = 0;
    for (int k = 0; k < p->n_rows; k++) {
        const ntp_compare_row *r = &p->rows[k];
        if (r->align != NTP_ALIGN_FUSED)
            continue;
        assert_true(r->n_members >= 2);
        assert_int_equal(r->other_rows, 1);
        assert_int_equal(r->base_rows, r->n_members);
        double sum = 0, lo = 0, hi = 0;
        for (int m = 0; m < r->n_members; m++) {
            int i = row_of(A, r->members[m]);
            assert_true(i >= 0);
            sum += A->layers[i].time_ms.median;
            lo += A->layers[i].time_ms.ci95_lo;
            hi += A->layers[i].time_ms.ci95_hi;
            int j = row_of(B, r->members[m]);
            assert_true(j >= 0);
            members_seen += B->layers[j].fused;
            if (B->layers[j].fused)
                assert_string_equal(B->layers[j].fused_into, r->other_name);
        }
        assert_float_equal(r->base.median, sum, 1e-9 * sum);
        assert_float_equal(r->base.ci95_lo, lo, 1e-9 * lo);
        assert_float_equal(r->base.ci95_hi, hi, 1e-9 * hi);
        int h = row_of(B, r->other_name);
        assert_false(B->layers[h].fused);
        assert_float_equal(r->other.median, B->layers[h].time_ms.median, 0);
        assert_float_equal(r->speedup, sum / B->layers[h].time_ms.median, 1e-9);
    }
    assert_int_equal(members_seen, n_fused);
    /* In the table no fused layer has a row of its own, and every fused
     * group is named with its layers. */
    char *t = capture(ctx, c, NTP_FORMAT_TABLE);
    fputs(t, stdout);
    assert_non_null(strstr(t, "fusion: the runs differ in --fuse (A without, B with)"));
    for (int i = 0; i < B->n_layers; i++) {
        if (!B->layers[i].fused)
            continue;
        char line[64];
        snprintf(line, sizeof line, "\n%-24s ", B->layers[i].name);
        if (strstr(t, line))
            fail_msg("the fused layer %s has a row of its own", B->layers[i].name);
    }
    assert_non_null(strstr(t, "\nconv1 + bn1 + relu1      fused   "));
    free(t);
    t = capture(ctx, c, NTP_FORMAT_JSON);
    assert_int_equal(validate_text(t, "compare.schema.json"), 0);
    free(t);
    ntp_comparison_free(c);
    ntp_run_result_free(A);
    ntp_run_result_free(B);
    ntp_graph_free(g);
    unlink(pa);
    unlink(pb);
    rmdir(dir);
    ntp_ctx_free(ctx);
}

/* --- reports read back ------------------------------------------------------------------- */

static char *report_text(ntp_ctx *ctx, const ntp_run_result *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(ntp_report_write_run(ctx, r, NTP_FORMAT_JSON, f), NTP_STATUS_OK);
    fclose(f);
    return buf;
}

/* Device memory: side by side for two runs on an accelerator, the one that
 * had it otherwise, nothing for two CPU runs (test_writers). */
static void test_device_memory(void **state)
{
    (void)state;
    static run a, b;
    base_run(&a);
    other_run(&b);
    a.r.backend = b.r.backend = "cuda";
    a.r.memory = (ntp_memory_result){.device_weight_bytes = 100000000,
                                     .device_activation_bytes = 20000000,
                                     .device_workspace_bytes = 40000000,
                                     .device_peak_bytes = 160000000};
    b.r.memory = (ntp_memory_result){.device_weight_bytes = 50000000,
                                     .device_activation_bytes = 30000000,
                                     .device_workspace_bytes = 40000000,
                                     .device_peak_bytes = 120000000};
    ntp_ctx *ctx = ntp_ctx_init();
    const ntp_run_result *runs[2] = {&a.r, &b.r};
    ntp_comparison *c;
    assert_int_equal(ntp_compare(ctx, runs, NULL, 2, &c), NTP_STATUS_OK);
    char *t = capture(ctx, c, NTP_FORMAT_TABLE);
    fputs(t, stdout);
    assert_non_null(strstr(t, "\ndevice memory peak: A 160 MB, B 120 MB (x0.75)\n"
                              "device memory weights: A 100 MB, B 50.0 MB (x0.5)\n"
                              "device memory activations: A 20.0 MB, B 30.0 MB (x1.5)\n"
                              "device memory workspace: A 40.0 MB, B 40.0 MB (x1)\n"));
    free(t);
    t = capture(ctx, c, NTP_FORMAT_JSON);
    assert_int_equal(validate_text(t, "compare.schema.json"), 0);
    json_t *j = json_loads(t, 0, NULL);
    assert_non_null(j);
    json_t *dev = json_object_get(json_array_get(json_object_get(j, "runs"), 1), "device_memory");
    assert_int_equal(json_integer_value(json_object_get(dev, "peak_bytes")), 120000000);
    assert_int_equal(json_integer_value(json_object_get(dev, "weight_bytes")), 50000000);
    json_decref(j);
    free(t);
    ntp_comparison_free(c);
    /* Only B on the device. */
    memset(&a.r.memory, 0, sizeof a.r.memory);
    assert_int_equal(ntp_compare(ctx, runs, NULL, 2, &c), NTP_STATUS_OK);
    t = capture(ctx, c, NTP_FORMAT_TABLE);
    assert_non_null(strstr(t, "\ndevice memory: only B ran on a device (peak 120 MB)\n"));
    free(t);
    t = capture(ctx, c, NTP_FORMAT_JSON);
    j = json_loads(t, 0, NULL);
    assert_null(json_object_get(json_array_get(json_object_get(j, "runs"), 0), "device_memory"));
    json_decref(j);
    free(t);
    ntp_comparison_free(c);
    ntp_ctx_free(ctx);
}

/* The machine line (docs/compare.md): each run the machine may have moved,
 * with what was seen around it; nothing when neither was flagged. */
static void test_machine_note(void **state)
{
    (void)state;
    static run a, b;
    base_run(&a);
    other_run(&b);
    ntp_ctx *ctx = ntp_ctx_init();
    const ntp_run_result *runs[2] = {&a.r, &b.r};
    ntp_comparison *c;
    assert_int_equal(ntp_compare(ctx, runs, NULL, 2, &c), NTP_STATUS_OK);
    char *t = capture(ctx, c, NTP_FORMAT_TABLE);
    assert_null(strstr(t, "machine:"));
    free(t);
    ntp_comparison_free(c);
    /* A contended, B's CPUs apart in a sample (3.6x); a look below the
     * threshold is not flagged. */
    a.r.env.contention =
        (ntp_contention){.measured = true, .other = 0.375, .steal = 0.125, .distorted = true};
    ntp_handoff_check *h = &b.r.env.contention.handoff;
    memset(h, 0, sizeof *h);
    h->measured = true;
    h->before.ratio = h->after.ratio = 1.1;
    h->window_ratio = 3.6;
    assert_int_equal(ntp_compare(ctx, runs, NULL, 2, &c), NTP_STATUS_OK);
    t = capture(ctx, c, NTP_FORMAT_TABLE);
    if (!strstr(t, "\nmachine: A: other processes and steal took 50% of its CPUs; B: its CPUs did "
                   "not share a cache\n         (hand-off 3.6x): a difference may be the "
                   "machine's, not the runs'\n"))
        fail_msg("no machine line:\n%s", t);
    free(t);
    t = html_text(ctx, c);
    if (!strstr(t, "<p class=\"warn\">machine: A: other processes and steal took 50% of its "
                   "CPUs; B: its CPUs did not share a cache (hand-off 3.6x): a difference may "
                   "be the machine&#39;s, not the runs&#39;</p>"))
        fail_msg("no machine line on the page:\n%s", t);
    free(t);
    ntp_comparison_free(c);
    /* B's looks split iterations that ran alike (unconfirmed): A alone. */
    h->unconfirmed = true;
    assert_int_equal(ntp_compare(ctx, runs, NULL, 2, &c), NTP_STATUS_OK);
    t = capture(ctx, c, NTP_FORMAT_TABLE);
    if (!strstr(t, "\nmachine: A: other processes and steal took 50% of its CPUs: a difference "
                   "may be the machine's, not\n"))
        fail_msg("B's unconfirmed looks flagged:\n%s", t);
    free(t);
    ntp_comparison_free(c);
    h->unconfirmed = false;
    h->window_ratio = 1.9;
    a.r.env.contention.distorted = false;
    assert_int_equal(ntp_compare(ctx, runs, NULL, 2, &c), NTP_STATUS_OK);
    t = capture(ctx, c, NTP_FORMAT_TABLE);
    assert_null(strstr(t, "machine:"));
    free(t);
    ntp_comparison_free(c);
    /* B's CPU 3 slowed (docs/run.md#pace): its slowest look 30.5 of the
     * best 43.5, 0.70x; looks that split iterations which ran alike
     * (unconfirmed, slowed false) are not flagged. */
    ntp_pace_check *p = &b.r.env.contention.pace;
    memset(p, 0, sizeof *p);
    p->measured = true;
    p->n_cpus = 2;
    p->cpu[0] = 0, p->cpu[1] = 3;
    p->low[0] = 41.25, p->low[1] = 30.5;
    p->best = 43.5;
    p->slowed = true;
    assert_int_equal(ntp_compare(ctx, runs, NULL, 2, &c), NTP_STATUS_OK);
    t = capture(ctx, c, NTP_FORMAT_TABLE);
    if (!strstr(t, "\nmachine: B: CPU 3 ran slowed (pace 0.70x): a difference may be the "
                   "machine's, not the runs'\n"))
        fail_msg("no slowed CPU on the machine line:\n%s", t);
    free(t);
    ntp_comparison_free(c);
    p->slowed = false;
    p->unconfirmed = true;
    assert_int_equal(ntp_compare(ctx, runs, NULL, 2, &c), NTP_STATUS_OK);
    t = capture(ctx, c, NTP_FORMAT_TABLE);
    assert_null(strstr(t, "machine:"));
    free(t);
    ntp_comparison_free(c);
    /* Slowed throughout (a one-thread run, no clear iteration): named. */
    p->unconfirmed = false;
    p->throughout = true;
    assert_int_equal(ntp_compare(ctx, runs, NULL, 2, &c), NTP_STATUS_OK);
    t = capture(ctx, c, NTP_FORMAT_TABLE);
    if (!strstr(t, "\nmachine: B: CPU 3 ran slowed throughout (pace 0.70x): a difference"))
        fail_msg("no slowed-throughout CPU on the machine line:\n%s", t);
    free(t);
    ntp_comparison_free(c);
    ntp_ctx_free(ctx);
}

static void test_read_back(void **state)
{
    (void)state;
    static run a;
    base_run(&a);
    ntp_accuracy acc[2] = {
        {.output = "probs", .max_abs_error = 0.125, .rel_l2 = 0.01, .top1 = 0.75, .top5 = 1.0},
        {.output = "hidden", .max_abs_error = 0.5, .rel_l2 = 0.02, .top1 = -1, .top5 = -1}};
    a.r.accuracy = acc;
    a.r.n_accuracy = 2;
    a.r.accuracy_baseline = "f32 on ref";
    a.layers[1].fused = true;
    a.layers[1].fused_into = "conv1";
    a.layers[1].kind = "fused";
    ntp_ctx *ctx = ntp_ctx_init();
    char *text = report_text(ctx, &a.r);
    ntp_run_result *r = NULL;
    assert_int_equal(ntp_run_result_parse(ctx, text, strlen(text), "a.json", &r), NTP_STATUS_OK);
    assert_string_equal(r->topology, "net");
    assert_string_equal(r->backend, "ref");
    assert_int_equal(r->n_layers, 5);
    assert_string_equal(r->layers[3].name, "old_head");
    assert_float_equal(r->layers[3].time_ms.ci95_hi, 2.1, 1e-12);
    assert_int_equal(r->layers[0].output_shape.ndim, 2);
    assert_int_equal(r->layers[0].output_shape.dim[1], 64);
    assert_true(r->layers[1].fused);
    assert_string_equal(r->layers[1].fused_into, "conv1");
    assert_string_equal(r->layers[1].kind, "fused");
    assert_int_equal(r->n_markers, 2);
    assert_string_equal(r->markers[1].name, "head");
    assert_int_equal(r->markers[1].first, 3);
    assert_float_equal(r->end_to_end_ms.median, 10.0, 1e-12);
    assert_string_equal(r->param_values[1], "32");
    assert_string_equal(r->env.hostname, a.r.env.hostname);
    assert_int_equal(r->n_accuracy, 2);
    assert_string_equal(r->accuracy_baseline, "f32 on ref");
    assert_string_equal(r->accuracy[0].output, "probs");
    assert_float_equal(r->accuracy[0].top1, 0.75, 0);
    assert_float_equal(r->accuracy[1].top5, -1, 0);
    assert_float_equal(r->accuracy[1].max_abs_error, 0.5, 0);
    /* Compared with the original: the same run. */
    const ntp_run_result *runs[2] = {&a.r, r};
    ntp_comparison *c;
    assert_int_equal(ntp_compare(ctx, runs, NULL, 2, &c), NTP_STATUS_OK);
    assert_int_equal(ntp_comparison_pair(c, 0)->n_diffs, 0);
    assert_int_equal(ntp_comparison_pair(c, 0)->end_to_end.verdict, NTP_VERDICT_SAME);
    ntp_comparison_free(c);
    ntp_run_result_free(r);
    free(text);
    ntp_ctx_free(ctx);
}

/* Malformed reports and the exact message each gives. */
static void test_read_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        ntp_status st;
        const char *msg;
    } cases[] = {
        {"{\"kind\": \"run\",", NTP_STATUS_PARSE_ERROR, "x.json:1:15: not valid JSON"},
        {"[1, 2]", NTP_STATUS_PARSE_ERROR, "x.json: run report: is not a JSON object"},
        {"{\"kind\": \"analysis\"}", NTP_STATUS_PARSE_ERROR,
         "x.json: run report: is not a run report (\"kind\": \"run\")"},
        {"{\"kind\": \"run\", \"schema_version\": 2}", NTP_STATUS_UNSUPPORTED,
         "x.json: run report: schema_version 2 (this ntprof reads 1)"},
        {"{\"kind\": \"run\", \"schema_version\": 1}", NTP_STATUS_PARSE_ERROR,
         "x.json: run report: missing 'topology'"},
    };
    ntp_ctx *ctx = ntp_ctx_init();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ntp_run_result *r = (ntp_run_result *)1;
        assert_int_equal(
            ntp_run_result_parse(ctx, cases[i].text, strlen(cases[i].text), "x.json", &r),
            cases[i].st);
        assert_null(r);
        if (strncmp(ntp_ctx_errmsg(ctx), cases[i].msg, strlen(cases[i].msg)) != 0)
            fail_msg("case %zu: got '%s', want '%s'", i, ntp_ctx_errmsg(ctx), cases[i].msg);
    }
    /* A field missing deep inside names where. */
    static run a;
    base_run(&a);
    char *text = report_text(ctx, &a.r);
    json_t *j = json_loads(text, 0, NULL);
    json_object_del(json_array_get(json_object_get(j, "layers"), 2), "median_ms");
    char *bad = json_dumps(j, 0);
    ntp_run_result *r;
    assert_int_equal(ntp_run_result_parse(ctx, bad, strlen(bad), "x.json", &r),
                     NTP_STATUS_PARSE_ERROR);
    assert_string_equal(ntp_ctx_errmsg(ctx), "x.json: run report layers[2]: missing 'median_ms'");
    free(bad);
    json_object_set_new(json_array_get(json_object_get(j, "markers"), 0), "last", json_integer(9));
    json_object_set_new(json_array_get(json_object_get(j, "layers"), 2), "median_ms",
                        json_real(1.0));
    bad = json_dumps(j, 0);
    assert_int_equal(ntp_run_result_parse(ctx, bad, strlen(bad), "x.json", &r),
                     NTP_STATUS_PARSE_ERROR);
    assert_string_equal(ntp_ctx_errmsg(ctx), "x.json: run report markers[0]: a marker needs a "
                                             "name and 0 <= first <= last < layers");
    free(bad);
    /* Unknown fields are ignored. */
    json_object_set_new(json_array_get(json_object_get(j, "markers"), 0), "last", json_integer(2));
    json_object_set_new(j, "something_new", json_string("ignored"));
    bad = json_dumps(j, 0);
    assert_int_equal(ntp_run_result_parse(ctx, bad, strlen(bad), "x.json", &r), NTP_STATUS_OK);
    ntp_run_result_free(r);
    free(bad);
    json_decref(j);
    free(text);
    assert_int_equal(ntp_run_result_load(ctx, "/nonexistent/report.json", &r), NTP_STATUS_IO_ERROR);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "/nonexistent/report.json: cannot open"));
    ntp_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_significance),        cmocka_unit_test(test_alignment),
        cmocka_unit_test(test_duplicates_and_many), cmocka_unit_test(test_writers),
        cmocka_unit_test(test_device_memory),       cmocka_unit_test(test_machine_note),
        cmocka_unit_test(test_fused_groups),        cmocka_unit_test(test_fused_groups_differ),
        cmocka_unit_test(test_real_fused_runs),     cmocka_unit_test(test_read_back),
        cmocka_unit_test(test_read_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
