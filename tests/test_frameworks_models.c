/* Every bundled model on the XNNPACK and BLAS backends against the
 * reference backend: the same weights and inputs (seed 1), outputs compared
 * by relative L2 norm, f32 within 1e-4. Each backend runs through ntp_run
 * (placement with fallback to the reference backend for the layers it
 * lacks, internal NHWC layouts on XNNPACK, im2col sub-steps on BLAS), once
 * unfused and once with --fuse; the reference side runs the plan once per
 * model. XNNPACK's f16 is checked on the convolutional models against the
 * f32 reference (f16 arithmetic: reported, bounded at 3e-2). Large models
 * run with small params (DeepSpeech n_hidden=256 time_steps=50, BERT
 * layers=2 seq_len=32). VGG16 is left out: it has no size params, its layer
 * types are AlexNet's, and the reference backend alone needs over a minute
 * for it on a two-core machine. Backends run on one thread here, so that a
 * busy machine cannot stall their thread pools; test_xnnpack, test_blas and
 * the conformance driver run them on two. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "exec/exec-impl.h"
#include "io/io-impl.h"
#include "ntprof/ntprof.h"
#include "support/tmpdir.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static ntp_graph *load_model(ntp_ctx *ctx, const char *file, const char *const *set, int n_set,
                             const char *precision)
{
    char path[512];
    snprintf(path, sizeof path, "%s/models/%s", NTP_SOURCE_DIR, file);
    ntp_load_opts lo = {0};
    lo.set = set;
    lo.n_set = n_set;
    lo.precision = precision;
    ntp_graph *g = NULL;
    if (ntp_graph_load(ctx, path, &lo, &g) != NTP_STATUS_OK)
        fail_msg("load %s: %s", path, ntp_ctx_errmsg(ctx));
    return g;
}

static void run_ref(ntp_ctx *ctx, const ntp_graph *g, const char *dir)
{
    ntp_exec x;
    ntp_exec_opts o;
    memset(&o, 0, sizeof o);
    o.backend = ntp__backend_find("ref");
    o.seed = 1;
    o.first = 0;
    o.last = g->n_nodes - 1;
    ntp_status st = ntp__exec_init(ctx, &x, g, &o);
    if (st)
        fail_msg("reference plan: %s", ntp_ctx_errmsg(ctx));
    st = ntp__exec_steps(ctx, &x, 0, x.n_steps - 1);
    if (st == NTP_STATUS_OK)
        st = ntp__exec_save_outputs(ctx, &x, dir);
    ntp__exec_free(&x);
    if (st)
        fail_msg("reference run: %s", ntp_ctx_errmsg(ctx));
}

/* One backend through ntp_run; returns the rows it ran itself. */
static int run_backend(ntp_ctx *ctx, const ntp_graph *g, const char *backend, const char *dir,
                       bool fuse)
{
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    o.backend = backend;
    o.warmup = 0;
    o.iterations = 1;
    o.min_time_s = 0;
    o.threads = 1;
    o.fuse = fuse;
    o.accuracy = false;
    o.save_outputs_dir = dir;
    ntp_run_result *r = NULL;
    if (ntp_run(ctx, g, &o, &r) != NTP_STATUS_OK)
        fail_msg("%s run: %s", backend, ntp_ctx_errmsg(ctx));
    int on = 0, fused = 0, total = 0;
    for (int i = 0; i < r->n_layers; i++) {
        on += r->layers[i].backend && strcmp(r->layers[i].backend, backend) == 0;
        fused += r->layers[i].fused;
        total++;
    }
    printf("    %s%s: %d rows, %d on %s, %d fused\n", backend, fuse ? " --fuse" : "", total, on,
           backend, fused);
    ntp_run_result_free(r);
    ntp_ctx_clear_warnings(ctx);
    return on;
}

/* The worst relative L2 over the float outputs of two runs; integer outputs
 * (decoded labels) are reported as the share of bytes that differ. */
static double compare(ntp_ctx *ctx, const ntp_graph *g, const char *a, const char *b)
{
    double worst = 0;
    for (int i = 0; i < ntp_graph_output_count(g); i++) {
        char pa[600], pb[600];
        snprintf(pa, sizeof pa, "%s/output_%d.npy", a, i);
        snprintf(pb, sizeof pb, "%s/output_%d.npy", b, i);
        ntp_npy x, y;
        if (ntp__npy_read(ctx, pa, &x) || ntp__npy_read(ctx, pb, &y))
            fail_msg("%s", ntp_ctx_errmsg(ctx));
        assert_int_equal(x.dtype, y.dtype);
        assert_int_equal(x.nbytes, y.nbytes);
        int64_t n = ntp_shape_numel(&x.shape);
        if (x.dtype == NTP_DTYPE_F32) {
            double num = 0, den = 0;
            for (int64_t j = 0; j < n; j++) {
                double d = (double)((float *)x.data)[j] - ((float *)y.data)[j];
                num += d * d;
                den += (double)((float *)y.data)[j] * ((float *)y.data)[j];
            }
            double e = den > 0 ? sqrt(num / den) : sqrt(num);
            if (isnan(e))
                e = INFINITY;
            printf("      output %d (%s): rel_l2 %.2e\n", i, ntp_graph_output_name(g, i), e);
            if (e > worst)
                worst = e;
        } else {
            int64_t diff = 0;
            for (int64_t j = 0; j < (int64_t)x.nbytes; j++)
                diff += ((char *)x.data)[j] != ((char *)y.data)[j];
            printf("      output %d (%s): %s, %lld of %lld bytes differ\n", i,
                   ntp_graph_output_name(g, i), ntp_dtype_name(x.dtype), (long long)diff,
                   (long long)x.nbytes);
        }
        ntp__npy_free(&x);
        ntp__npy_free(&y);
    }
    return worst;
}

static const char *const backends[] = {"xnnpack", "blas"};

static void check_model(const char *file, const char *const *set, int n_set, bool f16)
{
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load_model(ctx, file, set, n_set, NULL);
    double t0 = now_s();
    char ref[512];
    snprintf(ref, sizeof ref, "%s/%s-ref", test_tmpdir, file);
    run_ref(ctx, g, ref);
    printf("  %s f32 (reference %.1f s)\n", file, now_s() - t0);
    int tested = 0;
    for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++) {
        if (!ntp__backend_find(backends[b])) {
            printf("    %s not built: skipped\n", backends[b]);
            continue;
        }
        for (int fuse = 0; fuse < 2; fuse++) {
            char dir[512];
            snprintf(dir, sizeof dir, "%s/%s-%s-%d", test_tmpdir, file, backends[b], fuse);
            int on = run_backend(ctx, g, backends[b], dir, fuse);
            double e = compare(ctx, g, dir, ref);
            printf("    %s%s: %s (worst rel_l2 %.2e, tolerance 1e-4)\n", backends[b],
                   fuse ? " --fuse" : "", e <= 1e-4 ? "PASSED" : "FAILED", e);
            assert_true(on > 0);
            assert_true(e <= 1e-4);
            tested++;
        }
    }
    if (f16 && ntp__backend_find("xnnpack")) {
        ntp_graph *h = load_model(ctx, file, set, n_set, "f16");
        char dir[512];
        snprintf(dir, sizeof dir, "%s/%s-xnnpack-f16", test_tmpdir, file);
        int on = run_backend(ctx, h, "xnnpack", dir, true);
        double e = compare(ctx, g, dir, ref);
        printf("    xnnpack f16 --fuse vs f32 reference: worst rel_l2 %.2e (bound 3e-2)\n", e);
        if (on > 0)
            assert_true(e <= 3e-2);
        ntp_graph_free(h);
    }
    printf("  %s: %d backend runs in %.1f s\n", file, tested, now_s() - t0);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

static void test_tiny_cnn(void **state)
{
    (void)state;
    check_model("tiny-cnn.xml", NULL, 0, true);
}

static void test_tiny_mlp(void **state)
{
    (void)state;
    check_model("tiny-mlp.xml", NULL, 0, false);
}

static void test_tiny_rnn(void **state)
{
    (void)state;
    check_model("tiny-rnn.xml", NULL, 0, false);
}

static void test_tiny_attention(void **state)
{
    (void)state;
    check_model("tiny-attention.xml", NULL, 0, false);
}

static void test_lstm_lm(void **state)
{
    (void)state;
    check_model("lstm-lm.xml", NULL, 0, false);
}

static void test_deepspeech(void **state)
{
    (void)state;
    const char *set[] = {"n_hidden=256", "time_steps=50"};
    check_model("deepspeech.xml", set, 2, false);
}

static void test_bert(void **state)
{
    (void)state;
    const char *set[] = {"layers=2", "seq_len=32"};
    check_model("bert-base.xml", set, 2, false);
}

static void test_mobilenetv2(void **state)
{
    (void)state;
    check_model("mobilenetv2.xml", NULL, 0, true);
}

static void test_alexnet(void **state)
{
    (void)state;
    check_model("alexnet.xml", NULL, 0, false);
}

static void test_resnet50(void **state)
{
    (void)state;
    check_model("resnet50.xml", NULL, 0, true);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_cnn),     cmocka_unit_test(test_tiny_mlp),
        cmocka_unit_test(test_tiny_rnn),     cmocka_unit_test(test_tiny_attention),
        cmocka_unit_test(test_lstm_lm),      cmocka_unit_test(test_deepspeech),
        cmocka_unit_test(test_bert),         cmocka_unit_test(test_mobilenetv2),
        cmocka_unit_test(test_alexnet),      cmocka_unit_test(test_resnet50),
    };
    return cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown);
}
