/* The execution engine end to end on the reference backend: hand-computed
 * outputs through given .npy inputs, determinism of generated data, the
 * statistics a run reports, partial runs (--only) and errors. */
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

#include "io/io-impl.h"
#include "ntprof/ntprof.h"
#include "support/models.h"
#include "support/tmpdir.h"

static ntp_graph *load_mem(ntp_ctx *ctx, const char *xml, const char *precision)
{
    ntp_load_opts lo = {0};
    lo.set_precision = precision && ntp_dtype_parse(precision, &lo.precision) == NTP_STATUS_OK;
    ntp_graph *g = NULL;
    ntp_status st = ntp_graph_load_xml_memory(ctx, xml, strlen(xml), "test.xml", &lo, &g);
    if (st != NTP_STATUS_OK)
        fail_msg("load: %s", ntp_ctx_errmsg(ctx));
    return g;
}

/* The reference backend: one row per layer, no conversions. */
static void quick_opts(ntp_run_opts *o)
{
    ntp_run_opts_default(o);
    o->backend = "ref";
    o->warmup = 1;
    o->iterations = 5;
    o->min_time_s = 0;
}

static const char weightless[] = "<topology name='w' precision='f32'>"
                                 "<input name='x' shape='1,4' dtype='f32'/>"
                                 "<relu name='r'/>"
                                 "<add name='twice' inputs='r,r'/>"
                                 "<softmax name='p'/>"
                                 "</topology>";

/* relu -> x+x -> softmax, computed by hand from a given input. */
static void test_given_input_hand_computed(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load_mem(ctx, weightless, NULL);
    char in[512], outdir[512], out[600];
    snprintf(in, sizeof in, "%s/x.npy", test_tmpdir);
    snprintf(outdir, sizeof outdir, "%s/out-hand", test_tmpdir);
    const float x[4] = {-1.0f, 0.0f, 0.5f, 1.0f};
    ntp_shape s = {2, {1, 4}};
    assert_int_equal(ntp__npy_write(ctx, in, NTP_DTYPE_F32, &s, x), NTP_STATUS_OK);
    char spec[600];
    snprintf(spec, sizeof spec, "x=%s", in);
    const char *inputs[] = {spec};
    ntp_run_opts o;
    quick_opts(&o);
    o.inputs = inputs;
    o.n_inputs = 1;
    o.save_outputs_dir = outdir;
    ntp_run_result *r = NULL;
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_OK);
    snprintf(out, sizeof out, "%s/output_0.npy", outdir);
    ntp_npy a;
    assert_int_equal(ntp__npy_read(ctx, out, &a), NTP_STATUS_OK);
    assert_int_equal(a.dtype, NTP_DTYPE_F32);
    assert_int_equal(a.shape.ndim, 2);
    assert_int_equal(a.shape.dim[1], 4);
    /* relu: 0, 0, 0.5, 1; doubled: 0, 0, 1, 2; softmax over e^0, e^0, e^1, e^2. */
    double z = 2.0 + exp(1.0) + exp(2.0);
    const double want[4] = {1.0 / z, 1.0 / z, exp(1.0) / z, exp(2.0) / z};
    for (int i = 0; i < 4; i++)
        assert_float_equal(((float *)a.data)[i], want[i], 1e-6);
    ntp__npy_free(&a);
    ntp_run_result_free(r);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* At bf16 every layer's output is rounded to bf16 (round to nearest even). */
static void test_bf16_outputs_are_bf16_values(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load_mem(ctx, weightless, "bf16");
    char outdir[512], out[600];
    snprintf(outdir, sizeof outdir, "%s/out-bf16", test_tmpdir);
    ntp_run_opts o;
    quick_opts(&o);
    o.save_outputs_dir = outdir;
    ntp_run_result *r = NULL;
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_OK);
    snprintf(out, sizeof out, "%s/output_0.npy", outdir);
    ntp_npy a;
    assert_int_equal(ntp__npy_read(ctx, out, &a), NTP_STATUS_OK);
    for (int i = 0; i < 4; i++) {
        uint32_t bits;
        memcpy(&bits, &((float *)a.data)[i], 4);
        assert_int_equal(bits & 0xffff, 0); /* the low 16 bits of a bf16 value are zero */
    }
    ntp__npy_free(&a);
    ntp_run_result_free(r);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

static bool files_equal(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    bool eq = fa && fb;
    while (eq) {
        int ca = fgetc(fa), cb = fgetc(fb);
        if (ca != cb)
            eq = false;
        if (ca == EOF || cb == EOF)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return eq;
}

static void run_saving(ntp_ctx *ctx, ntp_graph *g, uint64_t seed, const char *dir)
{
    ntp_run_opts o;
    quick_opts(&o);
    o.iterations = 1;
    o.warmup = 0;
    o.seed = seed;
    o.backend = NULL; /* the default backend: determinism holds there too */
    o.save_outputs_dir = dir;
    ntp_run_result *r = NULL;
    if (ntp_run(ctx, g, &o, &r) != NTP_STATUS_OK)
        fail_msg("run: %s", ntp_ctx_errmsg(ctx));
    ntp_run_result_free(r);
}

static void test_seed_determinism(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = test_load_model(ctx, "tiny-cnn.xml", NULL, 0, NULL);
    char a[512], b[512], c[512], fa[600], fb[600], fc[600];
    snprintf(a, sizeof a, "%s/seed7a", test_tmpdir);
    snprintf(b, sizeof b, "%s/seed7b", test_tmpdir);
    snprintf(c, sizeof c, "%s/seed8", test_tmpdir);
    run_saving(ctx, g, 7, a);
    run_saving(ctx, g, 7, b);
    run_saving(ctx, g, 8, c);
    snprintf(fa, sizeof fa, "%s/output_0.npy", a);
    snprintf(fb, sizeof fb, "%s/output_0.npy", b);
    snprintf(fc, sizeof fc, "%s/output_0.npy", c);
    assert_true(files_equal(fa, fb));
    assert_false(files_equal(fa, fc));
    /* Outputs are finite. */
    ntp_npy x;
    assert_int_equal(ntp__npy_read(ctx, fa, &x), NTP_STATUS_OK);
    for (int64_t i = 0; i < x.nbytes / 4; i++)
        assert_true(isfinite(((float *)x.data)[i]));
    ntp__npy_free(&x);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

static void check_stats(const ntp_stats *s, size_t n)
{
    assert_int_equal(s->n, n);
    assert_true(s->min <= s->median && s->median <= s->max);
    assert_true(s->ci95_lo <= s->median && s->median <= s->ci95_hi);
    assert_true(s->min >= 0);
}

static void test_result_figures(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = test_load_model(ctx, "tiny-mlp.xml", NULL, 0, NULL);
    ntp_analysis *an = NULL;
    assert_int_equal(ntp_graph_analyze(ctx, g, &an), NTP_STATUS_OK);
    ntp_run_opts o;
    quick_opts(&o);
    o.iterations = 7;
    o.keep_trace = true;
    ntp_run_result *r = NULL;
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_OK);
    assert_int_equal(ntp_run_result_layer_count(r), ntp_graph_layer_count(g));
    assert_true(ntp_run_result_iterations(r) >= 7);
    assert_string_equal(ntp_run_result_backend(r), "ref");
    assert_int_equal(ntp_run_result_batch(r), 2);
    check_stats(ntp_run_result_end_to_end_ms(r), (size_t)ntp_run_result_iterations(r));
    double share = 0;
    int64_t flops = 0;
    for (int i = 0; i < ntp_run_result_layer_count(r); i++) {
        check_stats(&ntp_run_result_layer(r, i)->time_ms, (size_t)ntp_run_result_iterations(r));
        assert_string_equal(ntp_run_result_layer(r, i)->name, ntp_graph_layer_name(g, i));
        assert_int_equal(ntp_run_result_layer(r, i)->flops, an->layers[i].flops);
        share += ntp_run_result_layer(r, i)->share;
        flops += ntp_run_result_layer(r, i)->flops;
    }
    assert_float_equal(share, 1.0, 1e-9);
    assert_int_equal(ntp_run_result_flops(r), flops);
    assert_int_equal(ntp_run_result_marker_count(r), 1);
    assert_string_equal(ntp_run_result_marker(r, 0)->name, "body");
    int64_t mflops = 0;
    for (int i = ntp_run_result_marker(r, 0)->first; i <= ntp_run_result_marker(r, 0)->last; i++)
        mflops += ntp_run_result_layer(r, i)->flops;
    assert_int_equal(ntp_run_result_marker(r, 0)->flops, mflops);
    assert_true(isfinite(ntp_run_result_overhead_fraction(r)));
    assert_true(ntp_run_result_throughput(r) > 0);
    assert_int_equal(ntp_run_result_trace_count(r), ntp_run_result_iterations(r));
    for (int i = 0; i < ntp_run_result_trace_count(r); i++)
        for (int l = 0; l < ntp_run_result_layer_count(r); l++) {
            assert_true(ntp_run_result_trace(r, i)->end_us[l] >=
                        ntp_run_result_trace(r, i)->start_us[l]);
            if (l > 0)
                assert_true(ntp_run_result_trace(r, i)->start_us[l] >=
                            ntp_run_result_trace(r, i)->end_us[l - 1]);
        }
    assert_true(ntp_run_result_memory(r)->arena_bytes > 0);
    assert_true(ntp_run_result_memory(r)->peak_rss_bytes > 0);
    ntp_run_result_free(r);
    ntp_analysis_free(an);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* The accessors answer what the options asked for, NULL or 0 outside the
 * result, and ntp_run_opts.run_uuid names the run (checked by the library). */
static void test_result_accessors(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = test_load_model(ctx, "tiny-mlp.xml", NULL, 0, NULL);
    ntp_run_opts o;
    quick_opts(&o);
    o.seed = 42;
    o.threads = 1;
    o.run_uuid = "0f8fad5b-d9cb-469f-a165-70867728950e";
    ntp_run_result *r = NULL;
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_OK);
    assert_string_equal(ntp_run_result_env(r)->run_uuid, o.run_uuid);
    assert_string_equal(ntp_run_result_topology(r), "tiny-mlp");
    assert_non_null(strstr(ntp_run_result_source(r), "tiny-mlp.xml"));
    assert_int_equal(ntp_run_result_precision(r), NTP_DTYPE_F32);
    assert_int_equal(ntp_run_result_seed(r), 42);
    assert_int_equal(ntp_run_result_threads(r), 1);
    assert_int_equal(ntp_run_result_warmup(r), 1);
    assert_true(ntp_run_result_iterations(r) >= 5);
    assert_false(ntp_run_result_fused(r));
    assert_null(ntp_run_result_only_marker(r));
    assert_null(ntp_run_result_torch_script(r));
    assert_int_equal(ntp_run_result_sweep_id(r), 0);
    assert_true(ntp_run_result_latency_ms(r) == ntp_run_result_end_to_end_ms(r)->median);
    /* tiny-mlp's params: batch (2) and hidden (32), in the topology's order. */
    int np = ntp_run_result_param_count(r);
    assert_true(np >= 2);
    bool hidden = false;
    for (int i = 0; i < np; i++)
        if (strcmp(ntp_run_result_param_name(r, i), "hidden") == 0)
            hidden = strcmp(ntp_run_result_param_value(r, i), "32") == 0;
    assert_true(hidden);
    /* f32: nothing compared; no trace asked for. */
    assert_int_equal(ntp_run_result_accuracy_count(r), 0);
    assert_null(ntp_run_result_accuracy_baseline(r));
    assert_int_equal(ntp_run_result_trace_count(r), 0);
    int n = ntp_run_result_layer_count(r);
    assert_non_null(ntp_run_result_layer(r, n - 1));
    assert_null(ntp_run_result_layer(r, n));
    assert_null(ntp_run_result_layer(r, -1));
    assert_null(ntp_run_result_marker(r, ntp_run_result_marker_count(r)));
    assert_null(ntp_run_result_warning(r, ntp_run_result_warning_count(r)));
    assert_null(ntp_run_result_param_name(r, np));
    assert_null(ntp_run_result_trace(r, 0));
    assert_null(ntp_run_result_accuracy(r, 0));
    assert_null(ntp_run_result_counter_note(r, 0));
    assert_int_equal(ntp_run_result_layer_count(NULL), 0);
    assert_null(ntp_run_result_topology(NULL));
    assert_null(ntp_run_result_end_to_end_ms(NULL));
    assert_null(ntp_run_result_env(NULL));
    ntp_run_result_free(r);
    /* Another UUID gives another identity; a malformed one is refused. */
    o.run_uuid = "1f8fad5b-d9cb-469f-a165-70867728950e";
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_OK);
    assert_string_equal(ntp_run_result_env(r)->run_uuid, o.run_uuid);
    ntp_run_result_free(r);
    o.run_uuid = "0F8FAD5B-d9cb-469f-a165-70867728950e";
    r = NULL;
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_INVALID_ARGUMENT);
    assert_null(r);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "ntp_run_opts.run_uuid"));
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

static void test_only_marker(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = test_load_model(ctx, "tiny-mlp.xml", NULL, 0, NULL);
    ntp_run_opts o;
    quick_opts(&o);
    o.only_marker = "body";
    ntp_run_result *r = NULL;
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_OK);
    int first, last;
    ntp_graph_marker_range(g, 0, &first, &last);
    assert_int_equal(ntp_run_result_layer_count(r), last - first + 1);
    assert_string_equal(ntp_run_result_layer(r, 0)->name, "fc1");
    assert_string_equal(ntp_run_result_layer(r, ntp_run_result_layer_count(r) - 1)->name, "skip");
    ntp_run_result_free(r);

    o.only_marker = "bdy";
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_UNKNOWN_NAME);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "did you mean 'body'?"));
    o.only_marker = NULL;
    o.backend = "reff";
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_UNKNOWN_NAME);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "unknown backend 'reff'; did you mean 'ref'?"));
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

static void test_input_errors(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load_mem(ctx, weightless, NULL);
    char in[512], spec[600];
    snprintf(in, sizeof in, "%s/wrong.npy", test_tmpdir);
    const float x[3] = {1, 2, 3};
    ntp_shape s = {2, {1, 3}};
    assert_int_equal(ntp__npy_write(ctx, in, NTP_DTYPE_F32, &s, x), NTP_STATUS_OK);
    ntp_run_opts o;
    quick_opts(&o);
    const char *inputs[] = {spec};
    o.inputs = inputs;
    o.n_inputs = 1;
    ntp_run_result *r = NULL;
    snprintf(spec, sizeof spec, "x=%s", in);
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_SHAPE_ERROR);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "holds f32 [1,3]; input 'x' is f32 [1,4]"));
    snprintf(spec, sizeof spec, "y=%s", in);
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_UNKNOWN_NAME);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "no input 'y'"));
    snprintf(spec, sizeof spec, "%s/missing.npy", test_tmpdir);
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_IO_ERROR);
    assert_null(r);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* DeepSpeech at a small size: every segment of the NTP paper is reported,
 * and the BiLSTM takes its share. */
static void test_deepspeech_segments(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    const char *set[] = {"n_hidden=128", "time_steps=40"};
    ntp_graph *g = test_load_model(ctx, "deepspeech.xml", set, 2, NULL);
    ntp_run_opts o;
    quick_opts(&o);
    o.iterations = 3;
    ntp_run_result *r = NULL;
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_OK);
    bool seen_lstm = false;
    for (int i = 0; i < ntp_run_result_marker_count(r); i++)
        if (strstr(ntp_run_result_marker(r, i)->name, "lstm")) {
            seen_lstm = true;
            assert_true(ntp_run_result_marker(r, i)->share > 0.0 &&
                        ntp_run_result_marker(r, i)->share < 1.0);
        }
    assert_true(seen_lstm);
    assert_true(ntp_run_result_marker_count(r) >= 3);
    ntp_run_result_free(r);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

static int count_kind(const ntp_run_result *r, const char *kind)
{
    int n = 0;
    for (int i = 0; i < ntp_run_result_layer_count(r); i++)
        n += strcmp(ntp_run_result_layer(r, i)->kind, kind) == 0;
    return n;
}

/* A layer pinned to the reference backend inside a network on the default
 * backend: at int8 the default backend's storage differs from the
 * reference backend's f32, so the engine converts at both boundaries and
 * shows each conversion as its own row. On a build with only the reference
 * backend there is nothing to convert. */
static void test_placement_conversions(void **state)
{
    (void)state;
    static const char xml[] = "<topology name='p' precision='i8'>"
                              "<input name='x' shape='4,64' dtype='f32'/>"
                              "<fc name='fc1' units='64'/>"
                              "<tanh name='t' backend='ref'/>"
                              "<fc name='fc2' units='8'/>"
                              "</topology>";
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load_mem(ctx, xml, NULL);
    ntp_run_opts o;
    quick_opts(&o);
    o.backend = NULL;
    ntp_run_result *r = NULL;
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_OK);
    int layers = count_kind(r, "layer");
    assert_int_equal(layers, 3);
    const char *fc1_backend = NULL;
    for (int i = 0; i < ntp_run_result_layer_count(r); i++) {
        if (strcmp(ntp_run_result_layer(r, i)->name, "t") == 0)
            assert_string_equal(ntp_run_result_layer(r, i)->backend, "ref");
        if (strcmp(ntp_run_result_layer(r, i)->name, "fc1") == 0)
            fc1_backend = ntp_run_result_layer(r, i)->backend;
        if (strcmp(ntp_run_result_layer(r, i)->kind, "convert") == 0)
            assert_non_null(strchr(ntp_run_result_layer(r, i)->name, '>')); /* "tensor:from>to" */
    }
    assert_non_null(fc1_backend);
    if (strcmp(fc1_backend, "ref") == 0) {
        /* Everything on the reference backend (only it is built, or the
         * default backend declined int8 here): nothing to convert. */
        assert_int_equal(count_kind(r, "convert"), 0);
    } else {
        /* The f32 input into fc1's storage, fc1's output to ref's f32, and
         * t's output back for fc2. */
        assert_int_equal(count_kind(r, "convert"), 3);
    }
    /* The reduced-precision run is compared with f32. */
    assert_int_equal(ntp_run_result_accuracy_count(r), 1);
    assert_true(ntp_run_result_accuracy(r, 0)->rel_l2 > 0 &&
                ntp_run_result_accuracy(r, 0)->rel_l2 < 0.1);
    ntp_run_result_free(r);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* --fuse on the default backend: folded layers are rows of kind "fused"
 * that name their head, and the outputs equal the unfused run's. */
static void test_fusion_rows(void **state)
{
    (void)state;
    static const char xml[] = "<topology name='f' precision='f32'>"
                              "<input name='x' shape='1,8,16,16' dtype='f32'/>"
                              "<conv name='c1' filters='8' kernel='3' pad='same'/>"
                              "<relu name='r1'/>"
                              "<conv name='c2' filters='8' kernel='3' pad='same'/>"
                              "<add name='res' inputs='c2,r1'/>"
                              "<relu name='r2'/>"
                              "</topology>";
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load_mem(ctx, xml, NULL);
    char a[512], b[512], fa[600], fb[600];
    snprintf(a, sizeof a, "%s/unfused", test_tmpdir);
    snprintf(b, sizeof b, "%s/fused", test_tmpdir);
    ntp_run_opts o;
    quick_opts(&o);
    o.backend = NULL;
    o.save_outputs_dir = a;
    ntp_run_result *r = NULL;
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_OK);
    assert_int_equal(count_kind(r, "fused"), 0);
    ntp_run_result_free(r);
    o.fuse = true;
    o.save_outputs_dir = b;
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_OK);
    int fused = count_kind(r, "fused");
    for (int i = 0; i < ntp_run_result_layer_count(r); i++)
        if (ntp_run_result_layer(r, i)->fused)
            assert_non_null(ntp_run_result_layer(r, i)->fused_into);
    if (strcmp(ntp_run_result_backend(r), "ref") == 0)
        assert_int_equal(fused, 0); /* the reference backend never fuses */
    else
        assert_true(fused >= 2); /* r1 into c1; res and r2 into c2 */
    ntp_run_result_free(r);
    snprintf(fa, sizeof fa, "%s/output_0.npy", a);
    snprintf(fb, sizeof fb, "%s/output_0.npy", b);
    ntp_npy x, y;
    assert_int_equal(ntp__npy_read(ctx, fa, &x), NTP_STATUS_OK);
    assert_int_equal(ntp__npy_read(ctx, fb, &y), NTP_STATUS_OK);
    for (int64_t i = 0; i < x.nbytes / 4; i++)
        assert_float_equal(((float *)x.data)[i], ((float *)y.data)[i], 1e-4);
    ntp__npy_free(&x);
    ntp__npy_free(&y);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_given_input_hand_computed),
        cmocka_unit_test(test_bf16_outputs_are_bf16_values),
        cmocka_unit_test(test_seed_determinism),
        cmocka_unit_test(test_result_figures),
        cmocka_unit_test(test_result_accessors),
        cmocka_unit_test(test_only_marker),
        cmocka_unit_test(test_input_errors),
        cmocka_unit_test(test_deepspeech_segments),
        cmocka_unit_test(test_placement_conversions),
        cmocka_unit_test(test_fusion_rows),
    };
    return cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown);
}
