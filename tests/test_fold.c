/* Batch-norm folding (--fuse, src/exec/plan.c): hand-computed folded
 * weights and outputs of a tiny conv + batchnorm, the rows a folded run
 * reports, deconv and fc folds, and bundled models folded against unfused
 * on the reference backend and on oneDNN (f32 within 1e-5 relative L2),
 * int8 calibration of the folded graph included. */
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

#include "exec/exec-impl.h"
#include "io/io-impl.h"
#include "ntprof/ntprof.h"
#include "support/models.h"
#include "support/tmpdir.h"

static ntp_graph *load_mem(ntp_ctx *ctx, const char *xml, const char *precision)
{
    ntp_load_opts lo = {0};
    lo.set_precision = precision && ntp_dtype_parse(precision, &lo.precision) == NTP_STATUS_OK;
    ntp_graph *g = NULL;
    if (ntp_graph_load_xml_memory(ctx, xml, strlen(xml), "test.xml", &lo, &g) != NTP_STATUS_OK)
        fail_msg("load: %s", ntp_ctx_errmsg(ctx));
    return g;
}

/* Give weight tensor `name` the model data v (as an ONNX initialiser). */
static void set_weight(ntp_graph *g, const char *name, const float *v, int n)
{
    int t = ntp__graph_find_tensor(g, name);
    if (t < 0)
        fail_msg("no tensor '%s'", name);
    assert_int_equal(ntp_shape_numel(&g->tensors[t].shape), n);
    float *d = malloc((size_t)n * sizeof *d);
    assert_non_null(d);
    memcpy(d, v, (size_t)n * sizeof *d);
    g->tensors[t].data = d;
    g->tensors[t].data_dtype = NTP_DTYPE_F32;
}

static int pos_of(const ntp_graph *g, const char *name)
{
    return g->position[ntp__graph_find_node(g, name)];
}

/* conv (1x1, 2 filters) then batchnorm with epsilon 1 and variances 3 and
 * 0, so that s = gamma / sqrt(var + eps) = {0.5/2, 2/1} = {0.25, 2}:
 *   W' = {2 * 0.25, -1 * 2} = {0.5, -2}
 *   without bias: b' = (0 - mean) s + beta = {-1*0.25 + 1, 0*2 - 1} = {0.75, -1}
 *   with bias {1, 2}: b' = {(1-1)*0.25 + 1, (2-0)*2 - 1} = {1, 3}
 * For x = {1, 2, 3, 4}: channel 0 is 0.5x + b'0, channel 1 is -2x + b'1. */
static void tiny_case(const char *backend, bool bias)
{
    char xml[1024];
    snprintf(xml, sizeof xml,
             "<topology name='t' precision='f32'>"
             "<input name='x' shape='1,1,2,2' dtype='f32'/>"
             "<conv name='c' filters='2' kernel='1' bias='%s'/>"
             "<batchnorm name='bn' epsilon='1'/>"
             "</topology>",
             bias ? "true" : "false");
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load_mem(ctx, xml, NULL);
    const float W[2] = {2, -1}, b[2] = {1, 2};
    const float gamma[2] = {0.5f, 2}, beta[2] = {1, -1}, mean[2] = {1, 0}, var[2] = {3, 0};
    set_weight(g, "c.W", W, 2);
    if (bias)
        set_weight(g, "c.b", b, 2);
    set_weight(g, "bn.scale", gamma, 2);
    set_weight(g, "bn.bias", beta, 2);
    set_weight(g, "bn.mean", mean, 2);
    set_weight(g, "bn.var", var, 2);
    const float want_w[2] = {0.5f, -2};
    const float want_b[2] = {bias ? 1.0f : 0.75f, bias ? 3.0f : -1.0f};
    for (int fuse = 0; fuse <= 1; fuse++) {
        ntp_exec_opts o = {0};
        o.backend = ntp__backend_find(backend);
        o.threads = 1;
        o.fuse = fuse;
        o.seed = 1;
        o.first = 0;
        o.last = g->n_nodes - 1;
        ntp_exec x;
        if (ntp__exec_init(ctx, &x, g, &o) != NTP_STATUS_OK)
            fail_msg("%s fuse=%d: %s", backend, fuse, ntp_ctx_errmsg(ctx));
        int pc = pos_of(g, "c"), pb = pos_of(g, "bn");
        if (fuse) {
            /* The plan runs a copy in which c has a bias and writes bn's
             * output; bn is a fused step of c's group. */
            assert_true(x.g != g);
            const ntp_node *c = &x.g->nodes[x.g->order[pc]];
            assert_int_equal(c->n_w, 2);
            assert_int_equal(c->out[0], g->nodes[g->order[pb]].out[0]);
            assert_int_equal(x.fold[pc], pb);
            assert_int_equal(x.fold[pb], -1 - pc);
            assert_int_equal(x.steps[x.pos_step[pb]].kind, NTP_STEP_FUSED);
            assert_int_equal(x.steps[x.pos_step[pb]].head, x.pos_step[pc]);
            assert_int_equal(x.steps[x.pos_step[pc]].last, pb);
            assert_int_equal(x.steps[x.pos_step[pc]].k.n_fused, 0);
            const float *fw = x.wdata[c->w[0]], *fb = x.wdata[c->w[1]];
            for (int i = 0; i < 2; i++) {
                assert_float_equal(fw[i], want_w[i], 1e-7);
                assert_float_equal(fb[i], want_b[i], 1e-7);
            }
            /* The batch norm's other weights are not held. */
            assert_null(x.wdata[g->nodes[g->order[pb]].w[0]]);
        } else {
            assert_true(x.g == g);
            assert_int_equal(x.fold[pc], 0);
        }
        float *in = x.slots[x.tslot[g->inputs[0]]].data;
        for (int i = 0; i < 4; i++)
            in[i] = (float)(i + 1);
        assert_int_equal(ntp__exec_steps(ctx, &x, 0, x.n_steps - 1), NTP_STATUS_OK);
        float y[8];
        ntp_dtype dt;
        assert_true(ntp__exec_output(&x, 0, y, &dt));
        for (int i = 0; i < 4; i++) {
            double xi = i + 1;
            assert_float_equal(y[i], 0.5 * xi + want_b[0], 1e-5);
            assert_float_equal(y[4 + i], -2 * xi + want_b[1], 1e-5);
        }
        ntp__exec_free(&x);
    }
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

static void test_tiny_ref(void **state)
{
    (void)state;
    tiny_case("ref", false);
    tiny_case("ref", true);
}

static void test_tiny_onednn(void **state)
{
    (void)state;
    if (!ntp__backend_find("onednn"))
        skip();
    tiny_case("onednn", false);
    tiny_case("onednn", true);
}

static double rel_l2(const ntp_npy *a, const ntp_npy *b)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < a->nbytes / 4; i++) {
        double d = (double)((float *)a->data)[i] - ((float *)b->data)[i];
        num += d * d;
        den += (double)((float *)b->data)[i] * ((float *)b->data)[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* The implementation class of each conv row of the last two runs of
 * fused_vs_unfused ([0] unfused, [1] fused), in row order: 0 reference, 1
 * GEMM, 2 direct JIT (ntp__dnnl_impl_rank, of the group's head). */
#define MAX_CONVS 128
static int conv_rank[2][MAX_CONVS], n_conv_rank[2];

static int impl_rank(const char *impl)
{
    if (!impl || strncmp(impl, "ref", 3) == 0)
        return 0;
    const char *plus = strstr(impl, " + "), *gemm = strstr(impl, "gemm");
    return gemm && (!plus || gemm < plus) ? 1 : 2;
}

/* Run g unfused and fused on `backend`, save both outputs and return their
 * relative L2 distance; *fused_bn counts batchnorm rows reported fused. */
static double fused_vs_unfused(ntp_ctx *ctx, const ntp_graph *g, const char *backend,
                               const char *tag, int *fused_bn)
{
    char dir[2][512], f[2][600];
    ntp_npy y[2];
    *fused_bn = 0;
    for (int fuse = 0; fuse <= 1; fuse++) {
        snprintf(dir[fuse], sizeof dir[fuse], "%s/%s-%s-%d", test_tmpdir, tag, backend, fuse);
        ntp_run_opts o;
        ntp_run_opts_default(&o);
        o.backend = backend;
        o.warmup = 0;
        o.iterations = 1;
        o.min_time_s = 0;
        o.threads = 2;
        o.accuracy = false;
        o.fuse = fuse;
        o.save_outputs_dir = dir[fuse];
        ntp_run_result *r = NULL;
        if (ntp_run(ctx, g, &o, &r) != NTP_STATUS_OK)
            fail_msg("%s on %s fuse=%d: %s", tag, backend, fuse, ntp_ctx_errmsg(ctx));
        n_conv_rank[fuse] = 0;
        for (int i = 0; i < r->n_layers; i++) {
            const ntp_layer_result *L = &r->layers[i];
            if (strcmp(L->kind, "layer") == 0 && strcmp(L->type, "conv") == 0 &&
                n_conv_rank[fuse] < MAX_CONVS)
                conv_rank[fuse][n_conv_rank[fuse]++] = impl_rank(L->impl);
            /* A group that runs two primitives (a declined fusion) says why
             * in its fuse note; nothing else has one, and unfused nothing. */
            bool two = L->impl && strstr(L->impl, " + ") != NULL;
            if (fuse && two && strcmp(L->backend, "onednn") == 0)
                assert_non_null(L->fuse_note && strstr(L->fuse_note, " not fused: "));
            else
                assert_null(L->fuse_note);
        }
        for (int i = 0; i < r->n_layers; i++)
            if (r->layers[i].fused && strcmp(r->layers[i].type, "batchnorm") == 0) {
                assert_non_null(r->layers[i].fused_into);
                (*fused_bn)++;
            }
        assert_true(fuse || *fused_bn == 0);
        ntp_run_result_free(r);
        snprintf(f[fuse], sizeof f[fuse], "%s/output_0.npy", dir[fuse]);
        assert_int_equal(ntp__npy_read(ctx, f[fuse], &y[fuse]), NTP_STATUS_OK);
    }
    assert_int_equal(y[0].nbytes, y[1].nbytes);
    double e = rel_l2(&y[1], &y[0]);
    ntp__npy_free(&y[0]);
    ntp__npy_free(&y[1]);
    return e;
}

/* deconv and fc folds (other weight layouts), and a conv whose batch norm
 * does not come right after it (the downsample branch of ResNet), with a
 * ReLU and a residual add behind it. */
static void test_layouts_ref(void **state)
{
    (void)state;
    static const char xml[] =
        "<topology name='l' precision='f32'>"
        "<input name='x' shape='2,4,5,5' dtype='f32'/>"
        "<deconv name='d' filters='6' kernel='3' stride='2' groups='2'/>"
        "<batchnorm name='dbn'/>"
        "<conv name='a' inputs='dbn' filters='6' kernel='3' pad='same' bias='false'/>"
        "<conv name='b' inputs='dbn' filters='6' kernel='1' bias='false'/>"
        "<batchnorm name='abn' inputs='a'/>"
        "<batchnorm name='bbn' inputs='b'/>"
        "<relu name='ar' inputs='abn'/>"
        "<add name='sum' inputs='ar,bbn'/>"
        "<global_avgpool name='gap'/>"
        "<flatten name='fl'/>"
        "<fc name='f' units='7'/>"
        "<batchnorm name='fbn'/>"
        "</topology>";
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load_mem(ctx, xml, NULL);
    int n_bn;
    double e = fused_vs_unfused(ctx, g, "ref", "layouts", &n_bn);
    print_message("layouts on ref: rel L2 %.3g, %d batchnorms folded\n", e, n_bn);
    assert_int_equal(n_bn, 4);
    assert_true(e < 1e-5);
    if (ntp__backend_find("onednn")) {
        e = fused_vs_unfused(ctx, g, "onednn", "layouts", &n_bn);
        print_message("layouts on onednn: rel L2 %.3g, %d batchnorms folded\n", e, n_bn);
        assert_int_equal(n_bn, 4);
        assert_true(e < 1e-5);
    }
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* A narrow ResNet-50 (every block kind, 1 block per stage) on ref, and
 * MobileNetV2 and the whole ResNet-50 on oneDNN. */
static void test_models(void **state)
{
    (void)state;
    static const char *const narrow[] = {"width=8",   "blocks1=1", "blocks2=1",
                                         "blocks3=1", "blocks4=1", "classes=10"};
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = test_load_model(ctx, "resnet50.xml", narrow, 6, NULL);
    int n_bn;
    /* conv1's and every block's three, plus each stage's downsample. */
    double e = fused_vs_unfused(ctx, g, "ref", "resnet-narrow", &n_bn);
    print_message("narrow resnet50 on ref: rel L2 %.3g, %d batchnorms folded\n", e, n_bn);
    assert_int_equal(n_bn, 1 + 4 * 3 + 4);
    assert_true(e < 1e-5);
    ntp_graph_free(g);
    if (ntp__backend_find("onednn")) {
        const char *models[2] = {"mobilenetv2.xml", "resnet50.xml"};
        const int bns[2] = {52, 53};
        for (int m = 0; m < 2; m++) {
            g = test_load_model(ctx, models[m], NULL, 0, NULL);
            e = fused_vs_unfused(ctx, g, "onednn", models[m], &n_bn);
            print_message("%s on onednn: rel L2 %.3g, %d batchnorms folded\n", models[m], e, n_bn);
            assert_int_equal(n_bn, bns[m]);
            assert_true(e < 1e-5);
            /* Fusion never loses: the same convs, each fused group on an
             * implementation of at least the class its conv has alone
             * (ResNet-50's conv + residual add once fell to GEMM). */
            assert_int_equal(n_conv_rank[1], n_conv_rank[0]);
            assert_int_equal(n_conv_rank[0], bns[m]);
            for (int i = 0; i < n_conv_rank[0]; i++)
                if (conv_rank[1][i] < conv_rank[0][i])
                    fail_msg("%s conv row %d: fused implementation class %d < unfused %d",
                             models[m], i, conv_rank[1][i], conv_rank[0][i]);
            ntp_graph_free(g);
        }
    }
    ntp_ctx_free(ctx);
}

/* int8 with --fuse: the calibration pass folds the same batch norms, so
 * every tensor the fused run materialises has a scale, and the run stays
 * close to its f32 baseline. */
static void test_int8_calibrates_folded(void **state)
{
    (void)state;
    if (!ntp__backend_find("onednn"))
        skip();
    static const char *const narrow[] = {"width=16", "blocks1=1", "blocks2=1", "blocks3=1",
                                         "blocks4=1"};
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = test_load_model(ctx, "resnet50.xml", narrow, 5, "i8");
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    o.backend = "onednn";
    o.warmup = 0;
    o.iterations = 1;
    o.min_time_s = 0;
    o.threads = 2;
    o.fuse = true;
    ntp_run_result *r = NULL;
    if (ntp_run(ctx, g, &o, &r) != NTP_STATUS_OK)
        fail_msg("i8 fused: %s", ntp_ctx_errmsg(ctx));
    assert_int_equal(r->n_accuracy, 1);
    print_message("i8 narrow resnet50 folded: rel L2 %.3g, top-1 %.2f\n", r->accuracy[0].rel_l2,
                  r->accuracy[0].top1);
    assert_true(r->accuracy[0].rel_l2 < 0.06);
    assert_true(r->accuracy[0].top1 == 1.0);
    ntp_run_result_free(r);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* oneDNN int8 on a conv + batchnorm + residual add + relu chain: one
 * group per conv (the batch norms folded, the add and relus post-ops), no
 * reorder rows between convs, and outputs near f32. Before the s32 bias
 * (src/backend/onednn/conv.c), this graph ended about 2 relative L2 from
 * f32 fused and 0.18 unfused; the reference backend's int8 emulation
 * gives 0.018. */
static void test_int8_residual_onednn(void **state)
{
    (void)state;
    if (!ntp__backend_find("onednn"))
        skip();
    static const char xml[] = "<topology name='q' precision='f32'>"
                              "<input name='x' shape='1,16,8,8' dtype='f32'/>"
                              "<conv name='c0' filters='16' kernel='1'/>"
                              "<batchnorm name='b0'/>"
                              "<relu name='r0'/>"
                              "<conv name='c1' filters='16' kernel='3' pad='same' bias='false'/>"
                              "<batchnorm name='b1'/>"
                              "<add name='a' inputs='b1,r0'/>"
                              "<relu name='r1'/>"
                              "<conv name='c2' filters='16' kernel='1'/>"
                              "</topology>";
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load_mem(ctx, xml, "i8");
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    o.backend = "onednn";
    o.warmup = 0;
    o.iterations = 1;
    o.min_time_s = 0;
    o.threads = 2;
    o.fuse = true;
    ntp_run_result *r = NULL;
    if (ntp_run(ctx, g, &o, &r) != NTP_STATUS_OK)
        fail_msg("i8 fused: %s", ntp_ctx_errmsg(ctx));
    int fused = 0, reorders = 0, convs = 0;
    for (int i = 0; i < r->n_layers; i++) {
        const ntp_layer_result *L = &r->layers[i];
        fused += L->fused;
        reorders += strcmp(L->kind, "reorder") == 0;
        convs += !L->fused && strcmp(L->type, "conv") == 0;
    }
    assert_int_equal(convs, 3);
    assert_int_equal(fused, 5); /* b0, r0, b1, a, r1 */
    /* Into c0 (plain s8 to oneDNN's layout) and out of c2 (the graph's
     * output, plain): nothing between the convs. */
    assert_true(reorders <= 2);
    assert_int_equal(r->n_accuracy, 1);
    print_message("i8 residual chain: rel L2 %.3g, %d reorders\n", r->accuracy[0].rel_l2, reorders);
    assert_true(r->accuracy[0].rel_l2 < 0.05);
    ntp_run_result_free(r);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* bf16 with --fuse on a conv + batchnorm + residual add + relu chain,
 * against the reference backend at bf16. The residual operand arrives in
 * the layout its producer chose (channels-last on AVX-512); oneDNN 2.6's
 * GEMM convolution, which the fused group fell to, read it in its own
 * destination order: 0.81 relative L2 here, 0.69 on ResNet-50. Runs
 * where oneDNN has bf16 convolutions (AVX-512), skipped elsewhere. */
static void test_bf16_residual_onednn(void **state)
{
    (void)state;
    const ntp_backend_i *be = ntp__backend_find("onednn");
    if (!be)
        skip();
    static const char xml[] = "<topology name='q' precision='f32'>"
                              "<input name='x' shape='1,16,8,8' dtype='f32'/>"
                              "<conv name='c0' filters='16' kernel='1'/>"
                              "<batchnorm name='b0'/>"
                              "<relu name='r0'/>"
                              "<conv name='c1' filters='16' kernel='3' pad='same' bias='false'/>"
                              "<batchnorm name='b1'/>"
                              "<add name='a' inputs='b1,r0'/>"
                              "<relu name='r1'/>"
                              "<conv name='c2' filters='16' kernel='1'/>"
                              "<add name='a2' inputs='c2,a'/>"
                              "</topology>";
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load_mem(ctx, xml, "bf16");
    if (!be->supports(g, &g->nodes[ntp__graph_find_node(g, "c1")], NTP_DTYPE_BF16)) {
        print_message("oneDNN has no bf16 convolution on this CPU: skipped\n");
        ntp_graph_free(g);
        ntp_ctx_free(ctx);
        skip();
    }
    char ref[512], fused[512], plain[512];
    snprintf(ref, sizeof ref, "%s/bf16res-ref", test_tmpdir);
    snprintf(fused, sizeof fused, "%s/bf16res-fused", test_tmpdir);
    snprintf(plain, sizeof plain, "%s/bf16res-plain", test_tmpdir);
    test_run_ref_save(ctx, g, ref);
    assert_true(test_run_backend_save(ctx, g, "onednn", 2, false, plain) >= 3);
    assert_true(test_run_backend_save(ctx, g, "onednn", 2, true, fused) >= 3);
    double e0 = test_compare_outputs(ctx, g, plain, ref);
    double e1 = test_compare_outputs(ctx, g, fused, ref);
    print_message("bf16 residual chain against ref: unfused %.3g, fused %.3g\n", e0, e1);
    assert_true(e0 < 2e-2);
    assert_true(e1 < 2e-2);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_ref),
        cmocka_unit_test(test_tiny_onednn),
        cmocka_unit_test(test_layouts_ref),
        cmocka_unit_test(test_models),
        cmocka_unit_test(test_int8_calibrates_folded),
        cmocka_unit_test(test_int8_residual_onednn),
        cmocka_unit_test(test_bf16_residual_onednn),
    };
    return cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown);
}
