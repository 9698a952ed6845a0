/* The BLAS backend's own behaviour, beyond op conformance
 * (test_backend_ops.c): hand-computed im2col convolution, col2im
 * deconvolution, broadcast matmul and a one-row fc (the SGEMV path); the
 * im2col / col2im passes as their own rows whose time adds up with the
 * GEMM's; the switch to interleaved lowering for batches whose columns
 * would not fit; OpenBLAS's thread count; activation and residual fusion;
 * errors name the layer. */
#include <math.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#ifdef NTP_HAVE_BLAS
#include <cblas.h>

#include "backend/blas/blas-impl.h"
#include "exec/exec-impl.h"
#include "ntprof/ntprof.h"

static const ntp_backend_i *be;
static ntp_ctx *ctx;

static int setup(void **state)
{
    (void)state;
    be = ntp__backend_find("blas");
    ctx = ntp_ctx_init();
    return be && ctx ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    ntp_ctx_free(ctx);
    return 0;
}

static ntp_graph *load(const char *body)
{
    char xml[8192];
    snprintf(xml, sizeof xml, "<topology name='t' precision='f32'>%s</topology>", body);
    ntp_graph *g = NULL;
    if (ntp_graph_load_xml_memory(ctx, xml, strlen(xml), "t.xml", NULL, &g) != NTP_STATUS_OK)
        fail_msg("load: %s", ntp_ctx_errmsg(ctx));
    return g;
}

static const ntp_node *node(const ntp_graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i].name, name) == 0)
            return &g->nodes[i];
    fail_msg("no layer %s", name);
    return NULL;
}

/* Run layer `name` on BLAS with the given inputs and weights, every
 * sub-step in order through execute_step; returns the output. The node
 * state is handed back in *nd_copy when non-NULL. */
static float *run_layer(const ntp_graph *g, const char *name, const float *const *x,
                        const float *const *w, blasb_node *nd_copy)
{
    const ntp_node *n = node(g, name);
    ntp_kargs k;
    memset(&k, 0, sizeof k);
    k.g = g;
    k.node = n;
    k.threads = 2;
    k.n_in = n->n_in;
    k.n_w = n->n_w;
    k.n_out = 1;
    for (int i = 0; i < n->n_in; i++)
        k.in[i] = (ntp_buf){(void *)x[i], g->tensors[n->in[i]].shape, NTP_DTYPE_F32};
    for (int i = 0; i < n->n_w; i++)
        k.w[i] = (ntp_buf){(void *)w[i], g->tensors[n->w[i]].shape, NTP_DTYPE_F32};
    k.out[0] = (ntp_buf){NULL, g->tensors[n->out[0]].shape, NTP_DTYPE_F32};
    int64_t ny = ntp_shape_numel(&k.out[0].shape);
    ntp_backend_opts o = {.threads = 2, .precision = NTP_DTYPE_F32};
    void *bs = NULL, *ns = NULL;
    size_t ws = 0;
    assert_int_equal(be->init(ctx, &o, &bs), NTP_STATUS_OK);
    if (be->prepare(ctx, bs, &k, &ns, &ws) != NTP_STATUS_OK)
        fail_msg("prepare: %s", ntp_ctx_errmsg(ctx));
    float *y = malloc((size_t)ny * sizeof *y + 4);
    for (int64_t i = 0; i < ny; i++)
        y[i] = NAN;
    void *wsp = malloc(ws + 4);
    memset(wsp, 0xFF, ws); /* NaN: the workspace is not zeroed */
    k.out[0].data = y;
    k.workspace = wsp;
    k.workspace_bytes = ws;
    int main_step, steps = be->n_steps(bs, ns, &main_step);
    for (int s = 0; s < steps; s++)
        if (be->execute_step(ctx, bs, ns, &k, s) != NTP_STATUS_OK)
            fail_msg("step %d: %s", s, ntp_ctx_errmsg(ctx));
    if (nd_copy)
        *nd_copy = *(blasb_node *)ns;
    free(wsp);
    be->release_node(bs, ns);
    be->release(bs);
    return y;
}

static void expect(const float *got, const float *want, int n, float tol)
{
    for (int i = 0; i < n; i++)
        if (!(fabsf(got[i] - want[i]) <= tol))
            fail_msg("element %d: got %.7g, want %.7g", i, (double)got[i], (double)want[i]);
}

/* 1..9 in a 3x3 image, kernel [[1, 0], [0, -1]], bias 0.5: every output is
 * x[i][j] - x[i+1][j+1] + 0.5 = -3.5; through a separate im2col step. */
static void test_conv_hand_computed(void **state)
{
    (void)state;
    ntp_graph *g = load("<input name='x' shape='1,1,3,3'/><conv name='L' filters='1' kernel='2'/>");
    float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, W[4] = {1, 0, 0, -1}, b[1] = {0.5f};
    const float *in[1] = {x}, *w[2] = {W, b};
    blasb_node nd;
    float *y = run_layer(g, "L", in, w, &nd);
    float want[4] = {-3.5f, -3.5f, -3.5f, -3.5f};
    expect(y, want, 4, 0);
    assert_true(nd.staged);
    assert_int_equal(nd.n_steps, 2);
    assert_int_equal(nd.main_step, 1);
    /* [C/g·kh·kw, out] = [4, 4] floats of columns. */
    assert_int_equal(nd.ws, 4 * 4 * sizeof(float));
    free(y);
    ntp_graph_free(g);
}

/* Two groups, stride 2, padding 1 on a 1-d signal: group 0 (channel 0 =
 * 1..6) sums each window of 3, group 1 (channel 1 = 10..60) takes the
 * right tap. Windows start at -1, 1, 3. */
static void test_grouped_conv1d_hand_computed(void **state)
{
    (void)state;
    ntp_graph *g =
        load("<input name='x' shape='1,2,6'/>"
             "<conv name='L' filters='2' kernel='3' stride='2' pad='1' groups='2' bias='false'/>");
    float x[12] = {1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60}, W[6] = {1, 1, 1, 0, 0, 1};
    const float *in[1] = {x}, *w[1] = {W};
    float *y = run_layer(g, "L", in, w, NULL);
    float want[6] = {0 + 1 + 2, 2 + 3 + 4, 4 + 5 + 6, 20, 40, 60};
    expect(y, want, 6, 0);
    free(y);
    ntp_graph_free(g);
}

/* A 2x2 stride-2 transposed convolution places x[i][j] * W in block (i, j);
 * the col2im pass is the second step. */
static void test_deconv_hand_computed(void **state)
{
    (void)state;
    ntp_graph *g = load("<input name='x' shape='1,1,2,2'/>"
                        "<deconv name='L' filters='1' kernel='2' stride='2' bias='false'/>");
    float x[4] = {1, 2, 3, 4}, W[4] = {1, 10, 100, 1000};
    const float *in[1] = {x}, *w[1] = {W};
    blasb_node nd;
    float *y = run_layer(g, "L", in, w, &nd);
    float want[16] = {1, 10, 2, 20, 100, 1000, 200, 2000, 3, 30, 4, 40, 300, 3000, 400, 4000};
    expect(y, want, 16, 0);
    assert_int_equal(nd.n_steps, 2);
    assert_int_equal(nd.main_step, 0);
    free(y);
    ntp_graph_free(g);
}

/* A [2, 2, 3] batch times one shared [3, 2] matrix (one GEMM over 4 rows),
 * and a one-row fc (SGEMV from the bias). */
static void test_matmul_and_fc_hand_computed(void **state)
{
    (void)state;
    ntp_graph *g = load("<input name='a' shape='2,2,3'/><input name='b' shape='3,2'/>"
                        "<matmul name='M' inputs='a,b'/>"
                        "<input name='v' shape='1,3'/><fc name='F' inputs='v' units='2'/>");
    float A[12] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}, B[6] = {1, 2, 3, 4, 5, 6};
    const float *in[2] = {A, B};
    float *y = run_layer(g, "M", in, NULL, NULL);
    float want[8] = {1, 2, 3, 4, 5, 6, 9, 12};
    expect(y, want, 8, 0);
    free(y);
    float v[3] = {1, 2, 3}, W[6] = {1, 1, 1, 0, 1, -1}, bias[2] = {0.5f, -0.5f};
    const float *vin[1] = {v}, *fw[2] = {W, bias};
    blasb_node nd;
    y = run_layer(g, "F", vin, fw, &nd);
    float want_fc[2] = {6.5f, -1.5f};
    expect(y, want_fc, 2, 0);
    assert_string_equal(nd.impl, "openblas:sgemv");
    free(y);
    ntp_graph_free(g);
}

/* Columns for a whole batch beyond BLASB_STAGED_MAX: im2col interleaved
 * with the GEMMs in one step, one image's columns of workspace. A 1x1
 * convolution needs no columns at all. */
static void test_interleaved_for_large_batches(void **state)
{
    (void)state;
    ntp_graph *g = load("<input name='x' shape='64,64,56,56'/>"
                        "<conv name='L' filters='64' kernel='3' pad='1'/>"
                        "<conv name='P' filters='32' kernel='1'/>");
    const ntp_node *n = node(g, "L");
    ntp_kargs k;
    memset(&k, 0, sizeof k);
    k.g = g;
    k.node = n;
    k.n_in = 1;
    k.n_w = n->n_w;
    k.n_out = 1;
    k.in[0] = (ntp_buf){NULL, g->tensors[n->in[0]].shape, NTP_DTYPE_F32};
    for (int i = 0; i < n->n_w; i++)
        k.w[i] = (ntp_buf){NULL, g->tensors[n->w[i]].shape, NTP_DTYPE_F32};
    k.out[0] = (ntp_buf){NULL, g->tensors[n->out[0]].shape, NTP_DTYPE_F32};
    void *ns = NULL;
    size_t ws = 0;
    assert_int_equal(be->prepare(ctx, NULL, &k, &ns, &ws), NTP_STATUS_OK);
    blasb_node *nd = ns;
    assert_false(nd->staged);
    assert_int_equal(nd->n_steps, 1);
    assert_int_equal(ws, (size_t)(64 * 9) * (56 * 56) * sizeof(float));
    be->release_node(NULL, ns);
    n = node(g, "P");
    k.node = n;
    k.in[0].shape = g->tensors[n->in[0]].shape;
    k.w[0].shape = g->tensors[n->w[0]].shape;
    k.w[1].shape = g->tensors[n->w[1]].shape;
    k.out[0].shape = g->tensors[n->out[0]].shape;
    assert_int_equal(be->prepare(ctx, NULL, &k, &ns, &ws), NTP_STATUS_OK);
    assert_true(((blasb_node *)ns)->direct);
    assert_int_equal(ws, 0);
    be->release_node(NULL, ns);
    ntp_graph_free(g);
}

/* Through ntp_run: the im2col rows are reported beside their convolution,
 * type "im2col", on the BLAS backend, and time adds up. */
static void test_lowering_rows(void **state)
{
    (void)state;
    ntp_graph *g = load("<input name='x' shape='1,8,32,32'/>"
                        "<conv name='c1' filters='16' kernel='3' pad='1'/>"
                        "<relu name='r'/>"
                        "<conv name='c2' filters='16' kernel='1'/>"
                        "<deconv name='d' filters='4' kernel='2' stride='2'/>");
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    o.backend = "blas";
    o.warmup = 1;
    o.iterations = 3;
    o.min_time_s = 0;
    o.threads = 1;
    ntp_run_result *r = NULL;
    if (ntp_run(ctx, g, &o, &r) != NTP_STATUS_OK)
        fail_msg("run: %s", ntp_ctx_errmsg(ctx));
    /* c1:im2col, c1, r, c2 (1x1: no im2col), d, d:col2im. */
    const char *names[] = {"c1:im2col", "c1", "r", "c2", "d", "d:col2im"};
    const char *types[] = {"im2col", "conv", "relu", "conv", "deconv", "col2im"};
    assert_int_equal(r->n_layers, 6);
    double sum = 0;
    for (int i = 0; i < 6; i++) {
        assert_string_equal(r->layers[i].name, names[i]);
        assert_string_equal(r->layers[i].type, types[i]);
        assert_string_equal(r->layers[i].backend, "blas");
        sum += r->layers[i].time_ms.median;
    }
    assert_string_equal(r->layers[1].impl, "openblas:im2col+sgemm");
    assert_string_equal(r->layers[3].impl, "openblas:sgemm (1x1)");
    assert_true(r->layers[0].time_ms.median > 0);
    /* The rows are the layers' whole cost, each counted once: the layer sum
     * of every iteration is the sum of its rows, so the means add exactly.
     * (Medians need not add: on a loaded machine three iterations gave a
     * sum of medians more than 50% off the median of sums.) */
    double mean_sum = 0;
    for (int i = 0; i < 6; i++)
        mean_sum += r->layers[i].time_ms.mean;
    assert_true(fabs(mean_sum - r->layer_sum_ms.mean) <= 1e-9 * r->layer_sum_ms.mean);
    assert_true(sum > 0);
    ntp_run_result_free(r);
    ntp_graph_free(g);
}

/* OpenBLAS's pool is the pthreads build here, sized by the plan. */
static void test_threads(void **state)
{
    (void)state;
    int par = openblas_get_parallel();
    printf("openblas_get_parallel() = %d (%s), config: %s\n", par,
           par == 1   ? "pthreads"
           : par == 2 ? "OpenMP"
                      : "sequential",
           openblas_get_config());
    assert_true(par == 1 || par == 2);
    ntp_backend_opts o = {.threads = 1, .precision = NTP_DTYPE_F32};
    void *s = NULL;
    assert_int_equal(be->init(ctx, &o, &s), NTP_STATUS_OK);
    assert_int_equal(openblas_get_num_threads(), 1);
    be->release(s);
    o.threads = 2;
    assert_int_equal(be->init(ctx, &o, &s), NTP_STATUS_OK);
    assert_int_equal(openblas_get_num_threads(), 2);
    be->release(s);
    o.threads = 0;
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    assert_int_equal(be->init(ctx, &o, &s), NTP_STATUS_OK);
    assert_int_equal(((blasb_state *)s)->threads, CPU_COUNT(&set));
    be->release(s);
}

static void plan(ntp_exec *x, const ntp_graph *g, const char *backend, bool fuse)
{
    ntp_exec_opts o;
    memset(&o, 0, sizeof o);
    o.backend = ntp__backend_find(backend);
    o.seed = 3;
    o.first = 0;
    o.last = g->n_nodes - 1;
    o.fuse = fuse;
    o.threads = 2;
    if (ntp__exec_init(ctx, x, g, &o) != NTP_STATUS_OK)
        fail_msg("plan on %s: %s", backend, ntp_ctx_errmsg(ctx));
}

static float *run_plan(ntp_exec *x, int64_t *n)
{
    if (ntp__exec_steps(ctx, x, 0, x->n_steps - 1) != NTP_STATUS_OK)
        fail_msg("run: %s", ntp_ctx_errmsg(ctx));
    *n = ntp_shape_numel(&x->g->tensors[x->g->outputs[0]].shape);
    float *y = malloc((size_t)*n * 8 + 8);
    ntp_dtype dt;
    assert_true(ntp__exec_output(x, 0, y, &dt));
    return y;
}

/* conv + leaky_relu + residual add + sigmoid as one step equals the four
 * layers apart and the reference backend. */
static void test_fusion(void **state)
{
    (void)state;
    ntp_graph *g = load("<input name='x' shape='2,4,8,8'/>"
                        "<conv name='c1' filters='4' kernel='3' pad='1'/>"
                        "<leaky_relu name='l' alpha='0.2'/>"
                        "<add name='a' inputs='l,x'/>"
                        "<sigmoid name='s'/>"
                        "<maxpool name='p' kernel='2'/>");
    assert_true(be->fusable(g, node(g, "c1"), 0, node(g, "l")));
    assert_true(be->fusable(g, node(g, "c1"), 1, node(g, "a")));
    assert_false(be->fusable(g, node(g, "l"), 0, node(g, "a")));
    ntp_exec xu, xf, xr;
    plan(&xu, g, "blas", false);
    plan(&xf, g, "blas", true);
    plan(&xr, g, "ref", false);
    int fused = 0;
    for (int s = 0; s < xf.n_steps; s++)
        fused += xf.steps[s].kind == NTP_STEP_FUSED;
    assert_int_equal(fused, 3);
    int64_t n;
    float *yu = run_plan(&xu, &n), *yf = run_plan(&xf, &n), *yr = run_plan(&xr, &n);
    for (int64_t i = 0; i < n; i++) {
        if (fabsf(yu[i] - yf[i]) > 1e-6f || fabsf(yu[i] - yr[i]) > 1e-5f)
            fail_msg("element %lld: fused %.7g, unfused %.7g, ref %.7g", (long long)i,
                     (double)yf[i], (double)yu[i], (double)yr[i]);
    }
    free(yu);
    free(yf);
    free(yr);
    ntp__exec_free(&xu);
    ntp__exec_free(&xf);
    ntp__exec_free(&xr);
    ntp_graph_free(g);
}

static void test_support_and_errors(void **state)
{
    (void)state;
    ntp_graph *g = load("<input name='x' shape='2,4,8,8'/><maxpool name='p' kernel='2'/>"
                        "<layernorm name='n'/><conv name='L' filters='2' kernel='3'/>");
    assert_false(be->supports(g, node(g, "p"), NTP_DTYPE_F32));
    assert_false(be->supports(g, node(g, "n"), NTP_DTYPE_F32));
    assert_true(be->supports(g, node(g, "L"), NTP_DTYPE_F32));
    assert_false(be->supports(g, node(g, "L"), NTP_DTYPE_F16));
    assert_false(be->supports(g, node(g, "L"), NTP_DTYPE_BF16));
    const ntp_node *n = node(g, "L");
    ntp_kargs k;
    memset(&k, 0, sizeof k);
    k.g = g;
    k.node = n;
    k.n_in = 1;
    k.n_w = 1;
    k.n_out = 1;
    k.in[0] = (ntp_buf){NULL, g->tensors[n->in[0]].shape, NTP_DTYPE_F32};
    k.w[0] = (ntp_buf){NULL, {.ndim = 1, .dim = {5}}, NTP_DTYPE_F32};
    k.out[0] = (ntp_buf){NULL, g->tensors[n->out[0]].shape, NTP_DTYPE_F32};
    void *ns = NULL;
    size_t ws = 0;
    assert_int_equal(be->prepare(ctx, NULL, &k, &ns, &ws), NTP_STATUS_SHAPE_ERROR);
    assert_null(ns);
    const char *msg = ntp_ctx_errmsg(ctx);
    printf("%s\n", msg);
    assert_non_null(strstr(msg, "<conv name='L'>"));
    assert_non_null(strstr(msg, "blas"));
    ntp_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_hand_computed),
        cmocka_unit_test(test_grouped_conv1d_hand_computed),
        cmocka_unit_test(test_deconv_hand_computed),
        cmocka_unit_test(test_matmul_and_fc_hand_computed),
        cmocka_unit_test(test_interleaved_for_large_batches),
        cmocka_unit_test(test_lowering_rows),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_fusion),
        cmocka_unit_test(test_support_and_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
#else
int main(void)
{
    /* 77: ctest reports the test as skipped (SKIP_RETURN_CODE), not passed. */
    printf("BLAS backend not built: skipped\n");
    return 77;
}
#endif
