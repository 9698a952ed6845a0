/* The framework comparison (ntp_run_compare and its writers): every
 * backend runs the same weights and inputs, the reference backend's outputs
 * are the oracle (deviation 0 for itself, tiny for the others, the same
 * whether or not "ref" is listed), every row of every run lands on exactly
 * one layer or on the conversions, fallbacks and fusion are counted per
 * backend, partial runs and saved outputs behave, bad lists are refused with
 * a suggestion, and the table, JSON and CSV hold what the structure holds. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "backend/backend-impl.h"
#include "ntprof/ntprof.h"

static ntp_ctx *ctx;
static char tmpdir[256];

static int setup(void **state)
{
    (void)state;
    ctx = ntp_ctx_init();
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ntp-test-frameworks-XXXXXX");
    return ctx && mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    ntp_ctx_free(ctx);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static bool have(const char *backend)
{
    return ntp__backend_find(backend) != NULL;
}

static ntp_graph *load_model(const char *file, const char *precision)
{
    char path[512];
    snprintf(path, sizeof path, "%s/models/%s", NTP_SOURCE_DIR, file);
    ntp_load_opts lo = {0};
    lo.set_precision = precision && ntp_dtype_parse(precision, &lo.precision) == NTP_STATUS_OK;
    ntp_graph *g = NULL;
    if (ntp_graph_load(ctx, path, &lo, &g) != NTP_STATUS_OK)
        fail_msg("load %s: %s", path, ntp_ctx_errmsg(ctx));
    return g;
}

static void quick(ntp_run_opts *o)
{
    ntp_run_opts_default(o);
    o->warmup = 0;
    o->iterations = 3;
    o->min_time_s = 0;
    o->threads = 1;
}

static ntp_backend_comparison *compare(const ntp_graph *g, const ntp_run_opts *o,
                                       const char *const *be, int n)
{
    ntp_backend_comparison *c = NULL;
    if (ntp_run_compare(ctx, g, o, be, n, &c) != NTP_STATUS_OK)
        fail_msg("compare: %s", ntp_ctx_errmsg(ctx));
    return c;
}

static const ntp_backend_run *run_of(const ntp_backend_comparison *c, const char *backend)
{
    for (int i = 0; i < ntp_backend_comparison_run_count(c); i++)
        if (strcmp(ntp_backend_comparison_run(c, i)->backend, backend) == 0)
            return ntp_backend_comparison_run(c, i);
    fail_msg("no run of %s", backend);
    return NULL;
}

static int layer_index(const ntp_backend_comparison *c, const char *name)
{
    for (int l = 0; l < ntp_backend_comparison_layer_count(c); l++)
        if (strcmp(ntp_backend_comparison_layer_name(c, l), name) == 0)
            return l;
    fail_msg("no layer %s", name);
    return -1;
}

/* tiny-cnn on XNNPACK, BLAS and the reference backend. The fallbacks follow
 * from what each backend supports: XNNPACK lacks the u8 -> f32 convert, the
 * reflect padding and concat; BLAS also leaves the five pooling layers. */
static void test_tiny_cnn_side_by_side(void **state)
{
    (void)state;
    if (!have("xnnpack") || !have("blas")) {
        printf("XNNPACK or BLAS not built: skipped\n");
        return;
    }
    ntp_graph *g = load_model("tiny-cnn.xml", NULL);
    ntp_run_opts o;
    quick(&o);
    const char *be[] = {"xnnpack", "blas", "ref"};
    ntp_backend_comparison *c = compare(g, &o, be, 3);
    assert_int_equal(ntp_backend_comparison_run_count(c), 3);
    assert_int_equal(ntp_backend_comparison_layer_count(c), ntp_graph_layer_count(g));
    assert_string_equal(ntp_backend_comparison_reference(c), "ref");
    assert_null(ntp_backend_comparison_run(c, 3));
    assert_null(ntp_backend_comparison_layer_name(c, -1));
    assert_null(ntp_backend_comparison_layer_type(c, ntp_graph_layer_count(g)));
    const ntp_backend_run *x = run_of(c, "xnnpack"), *b = run_of(c, "blas"), *r = run_of(c, "ref");
    /* The reference against itself: exactly nothing. */
    assert_int_equal(r->n_deviation, 1);
    assert_true(r->max_abs_error == 0 && r->rel_l2 == 0);
    assert_true(r->deviation[0].top1 == 1.0);
    for (int i = 0; i < 2; i++) {
        const ntp_backend_run *e = i ? b : x;
        printf("%s: max abs %.3g, rel l2 %.3g, top-1 %.2f\n", e->backend, e->max_abs_error,
               e->rel_l2, e->deviation[0].top1);
        assert_true(e->rel_l2 >= 0 && e->rel_l2 <= 1e-4);
        assert_true(e->max_abs_error >= 0 && e->max_abs_error <= 1e-3);
        assert_true(e->deviation[0].top1 == 1.0);
        assert_string_equal(e->deviation[0].output, "fc");
    }
    assert_int_equal(x->layers_fallback, 3);
    assert_int_equal(x->layers_own, ntp_backend_comparison_layer_count(c) - 3);
    assert_int_equal(b->layers_fallback, 7);
    assert_int_equal(b->layers_own, ntp_backend_comparison_layer_count(c) - 7);
    assert_int_equal(r->layers_fallback, 0);
    assert_int_equal(r->layers_own, ntp_backend_comparison_layer_count(c));
    assert_string_equal(x->layers[layer_index(c, "pooled")].ran_on, "ref");
    assert_string_equal(b->layers[layer_index(c, "pool1")].ran_on, "ref");
    /* conv1 reads the plain graph input: a reorder on XNNPACK, an im2col
     * pass on BLAS, nothing extra on the reference backend. */
    int conv1 = layer_index(c, "conv1");
    assert_int_equal(x->layers[conv1].sub_rows, 1);
    assert_int_equal(b->layers[conv1].sub_rows, 1);
    assert_int_equal(r->layers[conv1].sub_rows, 0);
    assert_string_equal(b->layers[conv1].impl, "openblas:im2col+sgemm");
    /* Every row is on exactly one layer or among the conversions. */
    for (int i = 0; i < ntp_backend_comparison_run_count(c); i++) {
        const ntp_backend_run *e = ntp_backend_comparison_run(c, i);
        double rows = 0, folded = e->convert_ms;
        for (int k = 0; k < ntp_run_result_layer_count(e->result); k++)
            rows += ntp_run_result_layer(e->result, k)->time_ms.median;
        for (int l = 0; l < ntp_backend_comparison_layer_count(c); l++) {
            assert_true(e->layers[l].ms >= 0);
            folded += e->layers[l].ms;
        }
        if (fabs(rows - folded) > 1e-9 * (rows > 1 ? rows : 1))
            fail_msg("%s: rows sum to %.9g ms, layers to %.9g", e->backend, rows, folded);
    }
    double best = INFINITY;
    for (int i = 0; i < ntp_backend_comparison_run_count(c); i++)
        if (ntp_run_result_end_to_end_ms(ntp_backend_comparison_run(c, i)->result)->median < best)
            best = ntp_run_result_end_to_end_ms(ntp_backend_comparison_run(c, i)->result)->median;
    const ntp_backend_run *fast = ntp_backend_comparison_run(c, ntp_backend_comparison_fastest(c));
    assert_true(fast->speed_ratio == 1.0);
    assert_true(ntp_run_result_end_to_end_ms(fast->result)->median == best);
    ntp_backend_comparison_free(c);
    ntp_graph_free(g);
}

/* Without "ref" in the list the reference still runs (unmeasured) for its
 * outputs: the deviations are the same numbers. */
static void test_reference_not_listed(void **state)
{
    (void)state;
    if (!have("blas")) {
        printf("BLAS not built: skipped\n");
        return;
    }
    ntp_graph *g = load_model("tiny-mlp.xml", NULL);
    ntp_run_opts o;
    quick(&o);
    const char *with[] = {"blas", "ref"}, *without[] = {"blas"};
    ntp_backend_comparison *a = compare(g, &o, with, 2), *b = compare(g, &o, without, 1);
    assert_int_equal(ntp_backend_comparison_run_count(b), 1);
    assert_string_equal(ntp_backend_comparison_reference(b), "ref");
    const ntp_backend_run *ra = ntp_backend_comparison_run(a, 0),
                          *rb = ntp_backend_comparison_run(b, 0);
    assert_int_equal(rb->n_deviation, ra->n_deviation);
    assert_true(rb->rel_l2 == ra->rel_l2);
    assert_true(rb->max_abs_error == ra->max_abs_error);
    assert_true(rb->rel_l2 > 0); /* a GEMM does not round like the reference */
    ntp_backend_comparison_free(a);
    ntp_backend_comparison_free(b);
    ntp_graph_free(g);
}

/* --fuse: folded layers point at their head and cost nothing of their own;
 * --only: the layers outside the marker are not measured and outputs are
 * not compared; saved outputs go to one directory per backend. */
static void test_fused_partial_and_saved(void **state)
{
    (void)state;
    if (!have("xnnpack")) {
        printf("XNNPACK not built: skipped\n");
        return;
    }
    ntp_graph *g = load_model("tiny-cnn.xml", NULL);
    ntp_run_opts o;
    quick(&o);
    o.fuse = true;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/saved", tmpdir);
    o.save_outputs_dir = dir;
    const char *be[] = {"xnnpack", "ref"};
    ntp_backend_comparison *c = compare(g, &o, be, 2);
    const ntp_backend_run *x = run_of(c, "xnnpack");
    assert_true(ntp_run_result_fused(ntp_backend_comparison_run(c, 0)->result));
    assert_true(x->layers_fused > 0);
    int relu3 = layer_index(c, "relu3");
    assert_string_equal(x->layers[relu3].fused_into, "residual");
    assert_true(x->layers[relu3].ms == 0);
    ntp_backend_comparison_free(c);
    for (int i = 0; i < 2; i++) {
        char path[700];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s/output_0.npy", dir, be[i]);
        assert_int_equal(stat(path, &sb), 0);
    }
    quick(&o);
    o.only_marker = "block";
    c = compare(g, &o, be, 2);
    assert_null(ntp_backend_comparison_reference(c)); /* a partial run: no outputs compared */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(ntp_backend_comparison_run(c, i)->n_deviation, 0);
        assert_true(ntp_backend_comparison_run(c, i)->max_abs_error < 0);
        assert_true(ntp_backend_comparison_run(c, i)->layers[layer_index(c, "conv1")].ms < 0);
        assert_true(ntp_backend_comparison_run(c, i)->layers[layer_index(c, "conv2")].ms >= 0);
    }
    ntp_backend_comparison_free(c);
    ntp_graph_free(g);
}

/* f16 on XNNPACK against the f16-emulating reference: conversions at the
 * boundaries are counted and timed apart from the layers. */
static void test_conversions(void **state)
{
    (void)state;
    if (!have("xnnpack")) {
        printf("XNNPACK not built: skipped\n");
        return;
    }
    ntp_graph *g = load_model("tiny-cnn.xml", "f16");
    const ntp_backend_i *x = ntp__backend_find("xnnpack");
    bool f16 = false;
    for (int i = 0; i < ntp_graph_layer_count(g) && !f16; i++)
        f16 = x->supports(g, &g->nodes[i], NTP_DTYPE_F16);
    if (!f16) {
        printf("no f16 kernels on this CPU: skipped\n");
        ntp_graph_free(g);
        return;
    }
    ntp_run_opts o;
    quick(&o);
    o.accuracy = false;
    const char *be[] = {"xnnpack", "ref"};
    ntp_backend_comparison *c = compare(g, &o, be, 2);
    const ntp_backend_run *xr = run_of(c, "xnnpack");
    printf("f16: %d conversions, %.4f ms; rel l2 vs f16 ref %.3g\n", xr->n_convert, xr->convert_ms,
           xr->rel_l2);
    assert_true(xr->n_convert >= 2);
    assert_true(xr->convert_ms > 0);
    assert_int_equal(run_of(c, "ref")->n_convert, 0);
    assert_true(xr->rel_l2 <= 1e-2);
    ntp_backend_comparison_free(c);
    ntp_graph_free(g);
}

static void test_bad_lists(void **state)
{
    (void)state;
    char buf[256];
    const char *names[8];
    int n = 0;
    assert_int_equal(ntp_backend_list_parse(ctx, "ref", buf, sizeof buf, names, 8, &n),
                     NTP_STATUS_OK);
    assert_int_equal(n, 1);
    assert_string_equal(names[0], "ref");
    assert_int_equal(ntp_backend_list_parse(ctx, "ref,,ref", buf, sizeof buf, names, 8, &n),
                     NTP_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "empty name"));
    assert_int_equal(ntp_backend_list_parse(ctx, "ref,ref", buf, sizeof buf, names, 8, &n),
                     NTP_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "'ref' twice"));
    assert_int_equal(ntp_backend_list_parse(ctx, "ref,reff", buf, sizeof buf, names, 8, &n),
                     NTP_STATUS_UNKNOWN_NAME);
    printf("%s\n", ntp_ctx_errmsg(ctx));
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "did you mean 'ref'?"));
    assert_int_equal(ntp_backend_list_parse(ctx, "ref", buf, 3, names, 8, &n),
                     NTP_STATUS_INVALID_ARGUMENT);
    ntp_graph *g = load_model("tiny-mlp.xml", NULL);
    ntp_backend_comparison *c = (ntp_backend_comparison *)1;
    const char *dup[] = {"ref", "ref"};
    assert_int_equal(ntp_run_compare(ctx, g, NULL, dup, 2, &c), NTP_STATUS_INVALID_ARGUMENT);
    assert_null(c);
    const char *none[] = {"nope"};
    assert_int_equal(ntp_run_compare(ctx, g, NULL, none, 1, &c), NTP_STATUS_UNKNOWN_NAME);
    assert_int_equal(ntp_run_compare(ctx, g, NULL, none, 0, &c), NTP_STATUS_INVALID_ARGUMENT);
    ntp_graph_free(g);
}

/* The writers: the table names every backend and fits 100 columns; JSON
 * holds the structure and each backend's own run report; CSV has a row per
 * backend and layer plus the end-to-end and conversion rows. */
static void test_writers(void **state)
{
    (void)state;
    const char *be[3];
    int n = 0;
    if (have("xnnpack"))
        be[n++] = "xnnpack";
    if (have("blas"))
        be[n++] = "blas";
    be[n++] = "ref";
    ntp_graph *g = load_model("tiny-cnn.xml", NULL);
    ntp_run_opts o;
    quick(&o);
    ntp_backend_comparison *c = compare(g, &o, be, n);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(ntp_report_write_backend_comparison(ctx, c, NTP_FORMAT_TABLE, f),
                     NTP_STATUS_OK);
    fclose(f);
    for (int i = 0; i < n; i++)
        assert_non_null(strstr(text, be[i]));
    assert_non_null(strstr(text, "rel L2 vs ref"));
    assert_non_null(strstr(text, "marker segment"));
    for (char *line = text, *end; *line; line = end + 1) {
        end = strchr(line, '\n');
        assert_non_null(end);
        *end = '\0';
        /* Columns are code points: a '…' is three bytes. */
        size_t cols = 0;
        for (const unsigned char *p = (const unsigned char *)line; *p; p++)
            cols += (*p & 0xC0) != 0x80;
        if (cols > 100)
            fail_msg("line of %zu columns: %s", cols, line);
    }
    free(text);
    f = open_memstream(&text, &len);
    assert_int_equal(ntp_report_write_backend_comparison(ctx, c, NTP_FORMAT_JSON, f),
                     NTP_STATUS_OK);
    fclose(f);
    json_error_t err;
    json_t *root = json_loadb(text, len, 0, &err);
    if (!root)
        fail_msg("JSON: %s", err.text);
    assert_string_equal(json_string_value(json_object_get(root, "kind")), "backend_comparison");
    json_t *runs = json_object_get(root, "backends");
    assert_int_equal(json_array_size(runs), (size_t)n);
    for (int i = 0; i < n; i++) {
        json_t *r = json_array_get(runs, (size_t)i);
        assert_string_equal(json_string_value(json_object_get(r, "backend")), be[i]);
        json_t *rep = json_object_get(r, "report");
        assert_string_equal(json_string_value(json_object_get(rep, "kind")), "run");
        json_t *cfg = json_object_get(rep, "config");
        assert_string_equal(json_string_value(json_object_get(cfg, "backend")), be[i]);
        /* JSON carries 15 significant digits. */
        double got =
            json_real_value(json_object_get(json_object_get(r, "end_to_end_ms"), "median"));
        double want =
            ntp_run_result_end_to_end_ms(ntp_backend_comparison_run(c, i)->result)->median;
        if (fabs(got - want) > 1e-13 * want)
            fail_msg("%s end-to-end: JSON %.17g, result %.17g", be[i], got, want);
    }
    json_t *layers = json_object_get(root, "layers");
    assert_int_equal(json_array_size(layers), (size_t)ntp_backend_comparison_layer_count(c));
    json_t *l0 = json_object_get(json_object_get(json_array_get(layers, 2), "backends"), "ref");
    assert_string_equal(json_string_value(json_object_get(l0, "ran_on")), "ref");
    json_decref(root);
    free(text);
    f = open_memstream(&text, &len);
    assert_int_equal(ntp_report_write_backend_comparison(ctx, c, NTP_FORMAT_CSV, f), NTP_STATUS_OK);
    fclose(f);
    int lines = 0;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 1 + n * (ntp_backend_comparison_layer_count(c) + 2));
    assert_true(strncmp(text, "backend,layer,type,ran_on,impl,median_ms", 40) == 0);
    free(text);
    ntp_backend_comparison_free(c);
    ntp_graph_free(g);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_cnn_side_by_side),
        cmocka_unit_test(test_reference_not_listed),
        cmocka_unit_test(test_fused_partial_and_saved),
        cmocka_unit_test(test_conversions),
        cmocka_unit_test(test_bad_lists),
        cmocka_unit_test(test_writers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
