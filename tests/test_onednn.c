/* The oneDNN backend's own behaviour, beyond op conformance
 * (test_backend_ops.c): the implementation it reports names this CPU's
 * ISA; weights are packed once at prepare and never read again; a blocked
 * layout handed from one convolution to the next gives what plain layouts
 * give; conv + relu + residual add fused as post-ops equals the three
 * layers run apart, and so does batchnorm + relu; int8 honours the calibrated scales; sub-steps add
 * up to the layer; oneDNN's failures become one-line errors naming the layer. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#ifdef NTP_HAVE_ONEDNN
#include "backend/onednn/onednn-impl.h"
#include "core/numeric-impl.h"
#include "exec/exec-impl.h"
#include "ntprof/ntprof.h"

static const ntp_backend_i *be;
static ntp_ctx *ctx;

static int setup(void **state)
{
    (void)state;
    be = ntp__backend_find("onednn");
    ctx = ntp_ctx_init();
    return be && ctx ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    ntp_ctx_free(ctx);
    return 0;
}

static ntp_graph *load(const char *body, const char *precision)
{
    char xml[4096];
    snprintf(xml, sizeof xml, "<topology name='t' precision='f32'>%s</topology>", body);
    ntp_load_opts lo = {0};
    lo.set_precision = precision && ntp_dtype_parse(precision, &lo.precision) == NTP_STATUS_OK;
    ntp_graph *g = NULL;
    if (ntp_graph_load_xml_memory(ctx, xml, strlen(xml), "t.xml", &lo, &g) != NTP_STATUS_OK)
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

static uint64_t rng = 12345;

static float rnd(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static float *random_f32(int64_t n)
{
    float *p = malloc((size_t)n * sizeof *p + 4);
    for (int64_t i = 0; i < n; i++)
        p[i] = rnd();
    return p;
}

/* A layer's kernel arguments with f32 buffers: inputs random (or given),
 * weights random, outputs allocated. Everything is freed by kfree. */
typedef struct kbuf {
    ntp_kargs k;
    void *ws;
    void *state, *nstate;
} kbuf;

static void kinit(kbuf *b, const ntp_graph *g, const ntp_node *n, float *const *inputs)
{
    memset(b, 0, sizeof *b);
    ntp_kargs *k = &b->k;
    k->g = g;
    k->node = n;
    k->threads = 2;
    k->n_in = n->n_in;
    k->n_w = n->n_w;
    k->n_out = n->n_out;
    for (int i = 0; i < n->n_in; i++) {
        const ntp_tensor *t = &g->tensors[n->in[i]];
        k->in[i] = (ntp_buf){inputs[i], t->shape, NTP_DTYPE_F32};
    }
    for (int i = 0; i < n->n_w; i++) {
        const ntp_tensor *t = &g->tensors[n->w[i]];
        float *w = random_f32(ntp_shape_numel(&t->shape));
        /* Positive variances for batch normalisation. */
        if (n->op == NTP_OP_BATCHNORM && i == 3)
            for (int64_t j = 0; j < ntp_shape_numel(&t->shape); j++)
                w[j] = 1.0f + 0.5f * w[j];
        k->w[i] = (ntp_buf){w, t->shape, NTP_DTYPE_F32};
    }
    for (int i = 0; i < n->n_out; i++) {
        const ntp_tensor *t = &g->tensors[n->out[i]];
        k->out[i] = (ntp_buf){NULL, t->shape, NTP_DTYPE_F32};
        k->out_bytes[i] = ntp_shape_numel(&t->shape) * 4;
    }
}

/* Prepare on the oneDNN backend, then allocate outputs (out_bytes may
 * have grown) and the workspace. */
static ntp_status kprepare(kbuf *b)
{
    ntp_backend_opts o = {.threads = 2, .precision = b->k.node->precision};
    ntp_status st = be->init(ctx, &o, &b->state);
    if (st)
        return st;
    size_t ws = 0;
    if ((st = be->prepare(ctx, b->state, &b->k, &b->nstate, &ws)))
        return st;
    for (int i = 0; i < b->k.n_out; i++) {
        b->k.out[i].data = malloc((size_t)b->k.out_bytes[i] + 4);
        memset(b->k.out[i].data, 0xFF, (size_t)b->k.out_bytes[i]); /* NaN */
    }
    b->ws = ws ? malloc(ws) : NULL;
    b->k.workspace = b->ws;
    b->k.workspace_bytes = ws;
    return NTP_STATUS_OK;
}

static void kfree(kbuf *b, bool own_inputs)
{
    if (b->nstate)
        be->release_node(b->state, b->nstate);
    if (b->state)
        be->release(b->state);
    for (int i = 0; i < b->k.n_w; i++)
        free(b->k.w[i].data);
    for (int i = 0; i < b->k.n_out; i++)
        free(b->k.out[i].data);
    if (own_inputs)
        for (int i = 0; i < b->k.n_in; i++)
            free(b->k.in[i].data);
    free(b->ws);
}

static double rel_l2(const float *a, const float *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(b[i]))
            return INFINITY;
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return sqrt(num / (den > 0 ? den : 1));
}

/* The same layer on the reference backend with the same weights. */
static float *run_ref(const kbuf *onednn, float *const *inputs)
{
    const ntp_backend_i *ref = ntp__backend_find("ref");
    ntp_kargs k = onednn->k;
    for (int i = 0; i < k.n_in; i++)
        k.in[i].data = inputs[i];
    memset(k.in_internal, 0, sizeof k.in_internal);
    memset(k.out_internal, 0, sizeof k.out_internal);
    int64_t n = ntp_shape_numel(&k.out[0].shape);
    float *y = malloc((size_t)n * sizeof *y + 4);
    k.out[0].data = y;
    void *ns = NULL;
    size_t ws = 0;
    assert_int_equal(ref->prepare(ctx, NULL, &k, &ns, &ws), NTP_STATUS_OK);
    void *w = ws ? malloc(ws) : NULL;
    k.workspace = w;
    k.workspace_bytes = ws;
    assert_int_equal(ref->execute(ctx, NULL, ns, &k), NTP_STATUS_OK);
    free(w);
    return y;
}

static const char *conv_net = "<input name='x' shape='1,16,14,14'/>"
                              "<conv name='c1' filters='32' kernel='3' pad='1'/>"
                              "<conv name='c2' filters='16' kernel='3' pad='1' stride='2'/>";

static void test_impl_name_names_the_isa(void **state)
{
    (void)state;
    ntp_graph *g = load(conv_net, NULL);
    const ntp_node *c1 = node(g, "c1");
    float *x = random_f32(16 * 14 * 14);
    kbuf b;
    kinit(&b, g, c1, &x);
    assert_int_equal(kprepare(&b), NTP_STATUS_OK);
    const char *impl = be->impl_name(b.state, b.nstate);
    assert_non_null(impl);
    printf("conv implementation: %s\n", impl);
    /* oneDNN names its JIT kernels after the ISA they were generated for
     * ("jit:avx2", "brg:avx512_core", "brg:avx512_core_amx"). */
    unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
    if ((isa & (unsigned)dnnl_cpu_isa_avx512_core_amx) == (unsigned)dnnl_cpu_isa_avx512_core_amx)
        assert_true(strstr(impl, "avx512") || strstr(impl, "amx"));
    else if ((isa & (unsigned)dnnl_cpu_isa_avx512_core) == (unsigned)dnnl_cpu_isa_avx512_core)
        assert_non_null(strstr(impl, "avx512"));
    else if ((isa & (unsigned)dnnl_cpu_isa_avx2) == (unsigned)dnnl_cpu_isa_avx2)
        assert_non_null(strstr(impl, "avx2"));
    else
        assert_true(strlen(impl) > 0);
    kfree(&b, true);
    ntp_graph_free(g);
}

/* The weights are packed into the primitive's layout at prepare: after it
 * the engine's copy may change (here: NaN) without changing the result. */
static void test_weights_packed_once(void **state)
{
    (void)state;
    ntp_graph *g = load(conv_net, NULL);
    const ntp_node *c1 = node(g, "c1");
    float *x = random_f32(16 * 14 * 14);
    kbuf b;
    kinit(&b, g, c1, &x);
    assert_int_equal(kprepare(&b), NTP_STATUS_OK);
    odnn_node *nd = b.nstate;
    assert_int_equal(nd->weight_reorders, 2); /* weights and bias */
    float *want = run_ref(&b, &x);
    for (int i = 0; i < b.k.n_w; i++)
        for (int64_t j = 0; j < ntp_shape_numel(&b.k.w[i].shape); j++)
            ((float *)b.k.w[i].data)[j] = NAN;
    for (int it = 0; it < 3; it++)
        assert_int_equal(be->execute(ctx, b.state, b.nstate, &b.k), NTP_STATUS_OK);
    assert_int_equal(nd->weight_reorders, 2);
    double e = rel_l2(b.k.out[0].data, want, ntp_shape_numel(&b.k.out[0].shape));
    printf("conv after the weights were overwritten: rel_l2 %.2e\n", e);
    assert_true(e < 1e-5);
    /* No row of the layer is a weight reorder: every extra row is an
     * activation reorder named after an input or output. */
    int main_row, n = be->n_steps(b.state, b.nstate, &main_row);
    for (int r = 0; r < n; r++) {
        const char *suffix, *type;
        int64_t bytes = 0;
        be->step_info(b.state, b.nstate, r, &suffix, &type, &bytes);
        if (r != main_row) {
            assert_string_equal(type, "reorder");
            /* A reorder reads and writes at least the plain tensor: the
             * input (16x14x14) or the output, in f32. */
            int64_t least =
                2 * 4 *
                (strncmp(suffix, "reorder_in", 10) == 0 ? 16 * 14 * 14
                                                        : ntp_shape_numel(&b.k.out[0].shape));
            assert_true(bytes >= least);
            assert_true(strncmp(suffix, "reorder_in", 10) == 0 ||
                        strncmp(suffix, "reorder_out", 11) == 0);
        }
    }
    free(want);
    kfree(&b, true);
    ntp_graph_free(g);
}

/* c1 -> c2 with the tensor between them internal (oneDNN's blocked layout)
 * equals c1 -> c2 through plain memory, and needs no reorder between. */
static void test_blocked_between_convs(void **state)
{
    (void)state;
    ntp_graph *g = load(conv_net, NULL);
    const ntp_node *c1 = node(g, "c1"), *c2 = node(g, "c2");
    float *x = random_f32(16 * 14 * 14);
    float *y_plain;
    /* Plain: each conv reads and writes nchw. */
    kbuf p1, p2;
    kinit(&p1, g, c1, &x);
    assert_int_equal(kprepare(&p1), NTP_STATUS_OK);
    assert_int_equal(be->execute(ctx, p1.state, p1.nstate, &p1.k), NTP_STATUS_OK);
    float *mid = p1.k.out[0].data;
    kinit(&p2, g, c2, &mid);
    assert_int_equal(kprepare(&p2), NTP_STATUS_OK);
    assert_int_equal(be->execute(ctx, p2.state, p2.nstate, &p2.k), NTP_STATUS_OK);
    y_plain = p2.k.out[0].data;

    /* Internal: the same weights, one backend state, the layout handed on. */
    kbuf b1, b2;
    memset(&b1, 0, sizeof b1);
    memset(&b2, 0, sizeof b2);
    b1.k = p1.k;
    b2.k = p2.k;
    void *layout = NULL;
    b1.k.out_internal[0] = true;
    b1.k.out_layout[0] = &layout;
    b1.k.out_bytes[0] = ntp_shape_numel(&b1.k.out[0].shape) * 4;
    b2.k.in_internal[0] = true;
    b2.k.in_layout[0] = &layout;
    ntp_backend_opts o = {.threads = 2, .precision = NTP_DTYPE_F32};
    void *st = NULL, *n1 = NULL, *n2 = NULL;
    size_t ws1 = 0, ws2 = 0;
    assert_int_equal(be->init(ctx, &o, &st), NTP_STATUS_OK);
    assert_int_equal(be->prepare(ctx, st, &b1.k, &n1, &ws1), NTP_STATUS_OK);
    /* oneDNN chose a layout of its own and c1 handed it on: blocked
     * (nChw8c) on AVX2, channels-last (acdb, no inner blocks) from
     * AVX-512 on. What holds everywhere: it is not the plain layout, and
     * c2 reads it as it is (no reorder rows, below). */
    assert_non_null(layout);
    const dnnl_memory_desc_t *md = layout;
    assert_true(md->format_kind == dnnl_blocked);
    assert_false(ntp__dnnl_md_is_plain(md));
    int nblks = md->format_desc.blocking.inner_nblks;
    printf("layout between the convolutions: %d inner blocks of %lld channels, %lld bytes\n", nblks,
           nblks > 0 ? (long long)md->format_desc.blocking.inner_blks[0] : 0LL,
           (long long)b1.k.out_bytes[0]);
    /* Held to AVX2 (a CPU without AVX-512, or ONEDNN_MAX_CPU_ISA=AVX2 as
     * the test_onednn_avx2 entry runs it), the blocked path is taken:
     * 8-channel blocks of the 32 channels. */
    unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
    if ((isa & (unsigned)dnnl_cpu_isa_avx512_core) != (unsigned)dnnl_cpu_isa_avx512_core &&
        (isa & (unsigned)dnnl_cpu_isa_avx2) == (unsigned)dnnl_cpu_isa_avx2) {
        assert_int_equal(nblks, 1);
        assert_int_equal(md->format_desc.blocking.inner_blks[0], 8);
    }
    /* The layout c2's primitive reads is the one c1 wrote. */
    assert_true(b1.k.out_bytes[0] >= ntp_shape_numel(&b1.k.out[0].shape) * 4);
    assert_int_equal(be->prepare(ctx, st, &b2.k, &n2, &ws2), NTP_STATUS_OK);
    /* Neither side reorders the internal tensor. */
    int m1, m2;
    int rows1 = be->n_steps(st, n1, &m1), rows2 = be->n_steps(st, n2, &m2);
    for (int r = m1 + 1; r < rows1; r++) {
        const char *suffix, *type;
        int64_t bytes = 0;
        be->step_info(st, n1, r, &suffix, &type, &bytes);
        fail_msg("c1 reorders its internal output (row %s)", suffix);
    }
    for (int r = 0; r < m2; r++) {
        const char *suffix, *type;
        int64_t bytes = 0;
        be->step_info(st, n2, r, &suffix, &type, &bytes);
        fail_msg("c2 reorders its internal input (row %s)", suffix);
    }
    odnn_node *nd2 = n2;
    const dnnl_memory_desc_t *c2_src = NULL;
    for (int a = 0; a < nd2->steps[nd2->main_step].n_args; a++)
        if (nd2->steps[nd2->main_step].arg[a] == DNNL_ARG_SRC)
            assert_int_equal(dnnl_memory_get_memory_desc(
                                 nd2->mems[nd2->steps[nd2->main_step].mem[a]].m, &c2_src),
                             dnnl_success);
    assert_non_null(c2_src);
    assert_true(dnnl_memory_desc_equal(c2_src, md));
    (void)rows2;
    void *blocked = malloc((size_t)b1.k.out_bytes[0]);
    float *y = malloc((size_t)b2.k.out_bytes[0]);
    size_t wsz = ws1 > ws2 ? ws1 : ws2;
    void *ws = malloc(wsz + 1);
    b1.k.out[0].data = blocked;
    b1.k.workspace = ws;
    b1.k.workspace_bytes = ws1;
    b2.k.in[0].data = blocked;
    b2.k.out[0].data = y;
    b2.k.workspace = ws;
    b2.k.workspace_bytes = ws2;
    assert_int_equal(be->execute(ctx, st, n1, &b1.k), NTP_STATUS_OK);
    assert_int_equal(be->execute(ctx, st, n2, &b2.k), NTP_STATUS_OK);
    double e = rel_l2(y, y_plain, ntp_shape_numel(&b2.k.out[0].shape));
    printf("blocked vs plain: rel_l2 %.2e\n", e);
    assert_true(e < 1e-6);
    be->release_node(st, n1);
    be->release_node(st, n2);
    be->release(st);
    free(blocked);
    free(y);
    free(ws);
    kfree(&p2, false);
    kfree(&p1, true);
    ntp_graph_free(g);
}

static const char *res_net =
    "<input name='x' shape='2,8,10,10'/><input name='r' shape='2,8,10,10'/>"
    "<conv name='c' inputs='x' filters='8' kernel='3' pad='1'/>"
    "<relu name='a'/>"
    "<add name='s' inputs='a,r'/>"
    "<maxpool name='p' kernel='2'/>";

static void test_fusable(void **state)
{
    (void)state;
    ntp_graph *g = load(res_net, NULL);
    const ntp_node *c = node(g, "c"), *a = node(g, "a"), *s = node(g, "s"), *p = node(g, "p");
    assert_true(be->fusable(g, c, 0, a));
    assert_true(be->fusable(g, c, 1, s));
    assert_false(be->fusable(g, c, 2, p)); /* pooling is no post-op */
    assert_false(be->fusable(g, a, 0, s)); /* relu heads nothing */
    assert_false(be->fusable(g, c, NTP_MAX_FUSED, a));
    ntp_graph_free(g);
    /* A dropout (the identity) folds, so that the residual add behind it
     * can fold too, after fc and after attention's output projection. */
    g = load("<input name='x' shape='2,4,8'/><attention name='at' heads='2'/><dropout name='d'/>"
             "<add name='s' inputs='d,x'/><fc name='f' units='8'/><dropout name='d2'/>",
             NULL);
    assert_true(be->fusable(g, node(g, "at"), 0, node(g, "d")));
    assert_true(be->fusable(g, node(g, "at"), 1, node(g, "s")));
    assert_true(be->fusable(g, node(g, "f"), 0, node(g, "d2")));
    ntp_graph_free(g);
    /* int8: activations fold, and so does a residual add (its operand's
     * scale arrives in k->post_scale). */
    g = load(res_net, "i8");
    assert_true(be->fusable(g, node(g, "c"), 0, node(g, "a")));
    assert_true(be->fusable(g, node(g, "c"), 1, node(g, "s")));
    ntp_graph_free(g);
}

/* The class of an implementation name oneDNN reports, of the group's
 * head: 0 reference ("ref:any"), 1 GEMM ("x64:gemm:jit"), 2 a direct JIT
 * kernel ("brgconv:avx512_core"); "brgconv:avx512_core + jit:uni (add not
 * fused: ...)" is its head's, brgconv. */
static int impl_rank(const char *impl)
{
    if (!impl || strncmp(impl, "ref", 3) == 0)
        return 0;
    const char *plus = strstr(impl, " + "), *gemm = strstr(impl, "gemm");
    return gemm && (!plus || gemm < plus) ? 1 : 2;
}

/* conv + relu + residual add as one group equals the three layers, and
 * the group never runs a worse class of implementation than the conv
 * alone: on oneDNN 2.6 with AVX-512 the fused primitive would fall from
 * brgconv to x64:gemm:jit (ResNet-50 with --fuse took 220 ms against 48),
 * so the add runs after the conv instead and the impl says why. At bf16
 * too where oneDNN has it. */
static void fused_conv_relu_add(ntp_dtype prec)
{
    ntp_graph *g = load(res_net, prec == NTP_DTYPE_BF16 ? "bf16" : NULL);
    const ntp_node *c = node(g, "c"), *a = node(g, "a"), *s = node(g, "s");
    int64_t n = 2 * 8 * 10 * 10;
    float *x = random_f32(n), *r = random_f32(n);
    /* Apart: conv, relu, add, each on oneDNN. */
    kbuf bc, ba, bs;
    kinit(&bc, g, c, &x);
    assert_int_equal(kprepare(&bc), NTP_STATUS_OK);
    assert_int_equal(be->execute(ctx, bc.state, bc.nstate, &bc.k), NTP_STATUS_OK);
    float *cy = bc.k.out[0].data;
    kinit(&ba, g, a, &cy);
    assert_int_equal(kprepare(&ba), NTP_STATUS_OK);
    assert_int_equal(be->execute(ctx, ba.state, ba.nstate, &ba.k), NTP_STATUS_OK);
    float *sin[2] = {ba.k.out[0].data, r};
    kbuf bsum;
    kinit(&bsum, g, s, sin);
    assert_int_equal(kprepare(&bsum), NTP_STATUS_OK);
    assert_int_equal(be->execute(ctx, bsum.state, bsum.nstate, &bsum.k), NTP_STATUS_OK);
    /* Fused: the conv's arguments, relu and add folded, add's output. */
    memset(&bs, 0, sizeof bs);
    bs.k = bc.k;
    bs.k.n_fused = 2;
    bs.k.fused[0] = a;
    bs.k.fused[1] = s;
    bs.k.post_in[1] = (ntp_buf){r, g->tensors[s->in[1]].shape, NTP_DTYPE_F32};
    bs.k.out[0] = (ntp_buf){NULL, g->tensors[s->out[0]].shape, NTP_DTYPE_F32};
    ntp_backend_opts o = {.threads = 2, .precision = prec, .fuse = true};
    size_t ws = 0;
    assert_int_equal(be->init(ctx, &o, &bs.state), NTP_STATUS_OK);
    assert_int_equal(be->prepare(ctx, bs.state, &bs.k, &bs.nstate, &ws), NTP_STATUS_OK);
    float *y = malloc((size_t)n * sizeof *y);
    void *w = malloc(ws + 1);
    bs.k.out[0].data = y;
    bs.k.workspace = w;
    bs.k.workspace_bytes = ws;
    assert_int_equal(be->execute(ctx, bs.state, bs.nstate, &bs.k), NTP_STATUS_OK);
    double e = rel_l2(y, bsum.k.out[0].data, n);
    const char *fi = be->impl_name(bs.state, bs.nstate), *ci = be->impl_name(bc.state, bc.nstate);
    printf("%s fused conv+relu+add vs apart: rel_l2 %.2e\n  group: %s\n  conv alone: %s\n",
           ntp_dtype_name(prec), e, fi, ci);
    /* bf16: the group rounds once, the layers apart after each. */
    assert_true(e < (prec == NTP_DTYPE_F32 ? 1e-6 : 1e-2));
    assert_true(impl_rank(fi) >= impl_rank(ci));
    /* A declined fusion runs two primitives and says why, once. */
    const char *why = be->fuse_note ? be->fuse_note(bs.state, bs.nstate) : NULL;
    if (strstr(fi, " + ")) {
        assert_non_null(why);
        assert_non_null(strstr(why, "add not fused: "));
        assert_null(strstr(fi, "not fused"));
    } else {
        assert_null(why);
    }
    assert_null(be->fuse_note(bc.state, bc.nstate));
    /* The residual really was added: without it the result differs. */
    double apart = rel_l2(ba.k.out[0].data, bsum.k.out[0].data, n);
    assert_true(apart > 0.1);
    be->release_node(bs.state, bs.nstate);
    be->release(bs.state);
    free(y);
    free(w);
    kfree(&bsum, false);
    kfree(&ba, false);
    kfree(&bc, false);
    free(x);
    free(r);
    ntp_graph_free(g);
}

static void test_fused_conv_relu_add(void **state)
{
    (void)state;
    fused_conv_relu_add(NTP_DTYPE_F32);
    if (!ntp__dnnl_dtype_ok(NTP_OP_CONV, dnnl_bf16)) {
        printf("bf16: oneDNN has no bf16 convolution on this CPU\n");
        return;
    }
    fused_conv_relu_add(NTP_DTYPE_BF16);
}

/* batchnorm + relu folded (oneDNN's fuse_norm_relu) equals the two apart. */
static void test_fused_batchnorm_relu(void **state)
{
    (void)state;
    ntp_graph *g = load("<input name='x' shape='2,16,6,6'/><batchnorm name='bn'/><relu name='r'/>"
                        "<relu name='r6' inputs='bn' max='6'/>",
                        NULL);
    const ntp_node *bn = node(g, "bn"), *r = node(g, "r"), *r6 = node(g, "r6");
    assert_true(be->fusable(g, bn, 0, r));
    assert_false(be->fusable(g, bn, 0, r6)); /* clipped: not a plain relu */
    assert_false(be->fusable(g, bn, 1, r));
    int64_t n = 2 * 16 * 36;
    float *x = random_f32(n);
    kbuf a, b2, f;
    kinit(&a, g, bn, &x);
    assert_int_equal(kprepare(&a), NTP_STATUS_OK);
    assert_int_equal(be->execute(ctx, a.state, a.nstate, &a.k), NTP_STATUS_OK);
    float *mid = a.k.out[0].data;
    kinit(&b2, g, r, &mid);
    assert_int_equal(kprepare(&b2), NTP_STATUS_OK);
    assert_int_equal(be->execute(ctx, b2.state, b2.nstate, &b2.k), NTP_STATUS_OK);
    memset(&f, 0, sizeof f);
    f.k = a.k;
    f.k.n_fused = 1;
    f.k.fused[0] = r;
    f.k.out[0] = (ntp_buf){NULL, g->tensors[r->out[0]].shape, NTP_DTYPE_F32};
    ntp_backend_opts o = {.threads = 2, .precision = NTP_DTYPE_F32, .fuse = true};
    size_t ws = 0;
    assert_int_equal(be->init(ctx, &o, &f.state), NTP_STATUS_OK);
    assert_int_equal(be->prepare(ctx, f.state, &f.k, &f.nstate, &ws), NTP_STATUS_OK);
    float *y = malloc((size_t)n * sizeof *y);
    void *w = malloc(ws + 1);
    f.k.out[0].data = y;
    f.k.workspace = w;
    f.k.workspace_bytes = ws;
    assert_int_equal(be->execute(ctx, f.state, f.nstate, &f.k), NTP_STATUS_OK);
    double e = rel_l2(y, b2.k.out[0].data, n);
    printf("fused batchnorm+relu vs apart: rel_l2 %.2e\n", e);
    assert_true(e < 1e-6);
    int negatives = 0;
    for (int64_t i = 0; i < n; i++)
        negatives += y[i] < 0;
    assert_int_equal(negatives, 0);
    be->release_node(f.state, f.nstate);
    be->release(f.state);
    free(y);
    free(w);
    kfree(&b2, false);
    kfree(&a, true);
    ntp_graph_free(g);
}

/* int8 conv: s8 in, s8 out with the calibrated scales. */
static void run_int8(const ntp_graph *g, const ntp_node *c, const int8_t *xq, float in_scale,
                     float out_scale, const float *w, int8_t *yq, ntp_status want)
{
    kbuf b;
    float *x0 = NULL;
    kinit(&b, g, c, &x0);
    b.k.in[0].data = (void *)xq;
    b.k.in[0].dtype = NTP_DTYPE_I8;
    b.k.out[0].dtype = NTP_DTYPE_I8;
    b.k.out_bytes[0] = ntp_shape_numel(&b.k.out[0].shape);
    b.k.in_scale[0] = in_scale;
    b.k.out_scale[0] = out_scale;
    for (int i = 0; i < b.k.n_w; i++)
        memcpy(b.k.w[i].data, w + (i ? ntp_shape_numel(&b.k.w[0].shape) : 0),
               (size_t)ntp_shape_numel(&b.k.w[i].shape) * sizeof(float));
    ntp_status st = kprepare(&b);
    assert_int_equal(st, want);
    if (st == NTP_STATUS_OK) {
        assert_int_equal(be->execute(ctx, b.state, b.nstate, &b.k), NTP_STATUS_OK);
        memcpy(yq, b.k.out[0].data, (size_t)b.k.out_bytes[0]);
    }
    kfree(&b, false);
}

static void test_int8_scales(void **state)
{
    (void)state;
    ntp_graph *g = load(
        "<input name='x' shape='1,16,8,8'/><conv name='c' filters='16' kernel='3' pad='1'/>", "i8");
    const ntp_node *c = node(g, "c");
    assert_true(be->supports(g, c, NTP_DTYPE_I8));
    int64_t nx = 16 * 64, ny = 16 * 64, nw = 16 * 16 * 9 + 16;
    float *x = random_f32(nx), *w = random_f32(nw);
    float in_scale = ntp__i8_scale(x, nx);
    int8_t *xq = malloc((size_t)nx);
    for (int64_t i = 0; i < nx; i++) {
        xq[i] = ntp__quantize_i8(x[i], in_scale);
        x[i] = ntp__dequantize_i8(xq[i], in_scale);
    }
    /* The f32 answer from the reference backend on the dequantised input. */
    kbuf rb;
    kinit(&rb, g, c, &x);
    for (int i = 0; i < rb.k.n_w; i++)
        memcpy(rb.k.w[i].data, w + (i ? 16 * 16 * 9 : 0),
               (size_t)ntp_shape_numel(&rb.k.w[i].shape) * 4);
    float *want = run_ref(&rb, &x);
    float out_scale = ntp__i8_scale(want, ny);
    int8_t *y1 = malloc((size_t)ny), *y2 = malloc((size_t)ny);
    run_int8(g, c, xq, in_scale, out_scale, w, y1, NTP_STATUS_OK);
    run_int8(g, c, xq, in_scale, 2 * out_scale, w, y2, NTP_STATUS_OK);
    float *got = malloc((size_t)ny * sizeof *got);
    int off_by_more = 0, used = 0;
    for (int64_t i = 0; i < ny; i++) {
        got[i] = ntp__dequantize_i8(y1[i], out_scale);
        /* Twice the scale: half the integers. */
        if (abs((int)y1[i] - 2 * (int)y2[i]) > 2)
            off_by_more++;
        if (abs(y1[i]) > 100)
            used++;
    }
    double e = rel_l2(got, want, ny);
    printf("int8 conv vs f32: rel_l2 %.2e, %d values above 100 in magnitude\n", e, used);
    assert_true(e < 3e-2);
    assert_int_equal(off_by_more, 0);
    assert_true(used > 0); /* the output scale spreads values over the range */
    /* Without calibrated scales int8 cannot run. */
    ntp_ctx_clear(ctx);
    run_int8(g, c, xq, 0.0f, out_scale, w, y1, NTP_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "no calibrated scale"));
    free(want);
    free(got);
    free(y1);
    free(y2);
    free(xq);
    free(w);
    kfree(&rb, true);
    ntp_graph_free(g);
}

/* Running every row with execute_step gives what execute gives. */
static void test_sub_steps_add_up(void **state)
{
    (void)state;
    ntp_graph *g = load(conv_net, NULL);
    const ntp_node *c1 = node(g, "c1");
    float *x = random_f32(16 * 14 * 14);
    kbuf b;
    kinit(&b, g, c1, &x);
    assert_int_equal(kprepare(&b), NTP_STATUS_OK);
    int main_row, n = be->n_steps(b.state, b.nstate, &main_row);
    assert_true(n >= 1 && main_row >= 0 && main_row < n);
    int64_t ny = ntp_shape_numel(&b.k.out[0].shape);
    assert_int_equal(be->execute(ctx, b.state, b.nstate, &b.k), NTP_STATUS_OK);
    float *whole = malloc((size_t)ny * sizeof *whole);
    memcpy(whole, b.k.out[0].data, (size_t)ny * sizeof *whole);
    memset(b.k.out[0].data, 0xFF, (size_t)ny * sizeof *whole);
    for (int r = 0; r < n; r++)
        assert_int_equal(be->execute_step(ctx, b.state, b.nstate, &b.k, r), NTP_STATUS_OK);
    assert_memory_equal(whole, b.k.out[0].data, (size_t)ny * sizeof *whole);
    assert_int_equal(be->execute_step(ctx, b.state, b.nstate, &b.k, n), NTP_STATUS_INTERNAL);
    printf("conv rows: %d (main %d)\n", n, main_row);
    free(whole);
    kfree(&b, true);
    ntp_graph_free(g);
}

/* A failure inside oneDNN is BACKEND_ERROR, one line naming the layer and
 * oneDNN's status. */
static void test_dnnl_error_names_layer(void **state)
{
    (void)state;
    ntp_graph *g = load(conv_net, NULL);
    const ntp_node *c1 = node(g, "c1");
    float *x = random_f32(16 * 14 * 14);
    kbuf b;
    kinit(&b, g, c1, &x);
    /* An output of the wrong size: oneDNN refuses the descriptor. */
    b.k.out[0].shape.dim[2] = 5;
    ntp_ctx_clear(ctx);
    assert_int_equal(kprepare(&b), NTP_STATUS_BACKEND_ERROR);
    const char *msg = ntp_ctx_errmsg(ctx);
    printf("%s\n", msg);
    assert_non_null(strstr(msg, "name='c1'"));
    assert_non_null(strstr(msg, "dnnl_invalid_arguments"));
    assert_null(strchr(msg, '\n'));
    kfree(&b, true);
    ntp_graph_free(g);
}

/* bf16 and f16 are offered exactly when oneDNN implements them here. */
static void test_reduced_precision_probe(void **state)
{
    (void)state;
    ntp_graph *g = load(conv_net, "bf16");
    const ntp_node *c1 = node(g, "c1");
    unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
    bool avx512 = (isa & (unsigned)dnnl_cpu_isa_avx512_core) == (unsigned)dnnl_cpu_isa_avx512_core;
    printf("bf16 conv supported: %s (AVX-512: %s)\n",
           be->supports(g, c1, NTP_DTYPE_BF16) ? "yes" : "no", avx512 ? "yes" : "no");
    assert_int_equal(be->supports(g, c1, NTP_DTYPE_BF16), avx512);
    assert_int_equal(be->storage_dtype(NTP_DTYPE_BF16), NTP_DTYPE_BF16);
    assert_int_equal(be->storage_dtype(NTP_DTYPE_I8), NTP_DTYPE_I8);
    ntp_graph_free(g);
}

/* Can oneDNN here create a bf16 pooling primitive (alg) on a
 * channels-last source? Asked directly, not through the backend. */
static bool dnnl_pools_bf16(dnnl_alg_kind_t alg, int64_t k)
{
    dnnl_engine_t eng;
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success)
        return false;
    dnnl_dims_t x = {1, 16, 8, 8}, y = {1, 16, 8 / k, 8 / k}, kk = {k, k}, z = {0, 0};
    dnnl_memory_desc_t a, c;
    dnnl_memory_desc_init_by_tag(&a, 4, x, dnnl_bf16, dnnl_acdb);
    dnnl_memory_desc_init_by_tag(&c, 4, y, dnnl_bf16, dnnl_format_tag_any);
    dnnl_pooling_v2_desc_t d;
    dnnl_primitive_desc_t pd = NULL;
    bool ok = dnnl_pooling_v2_forward_desc_init(&d, dnnl_forward_inference, alg, &a, &c, kk, kk, z,
                                                z, z) == dnnl_success &&
              dnnl_primitive_desc_create(&pd, &d, NULL, eng, NULL) == dnnl_success;
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    dnnl_engine_destroy(eng);
    return ok;
}

/* bf16 max and global-average pooling run on oneDNN wherever oneDNN
 * pools bf16 (AVX-512 on): the probe once gave its pooling source
 * format_tag_any, which pooling refuses, and sent them to ref. */
static void test_bf16_pooling(void **state)
{
    (void)state;
    ntp_graph *g = load("<input name='x' shape='1,16,8,8'/><maxpool name='m' kernel='2'/>"
                        "<global_avgpool name='ga' inputs='x'/>",
                        "bf16");
    bool max = dnnl_pools_bf16(dnnl_pooling_max, 2);
    bool avg = dnnl_pools_bf16(dnnl_pooling_avg_exclude_padding, 8);
    printf("oneDNN pools bf16 here: max %s, average %s\n", max ? "yes" : "no", avg ? "yes" : "no");
    assert_int_equal(be->supports(g, node(g, "m"), NTP_DTYPE_BF16), max);
    assert_int_equal(be->supports(g, node(g, "ga"), NTP_DTYPE_BF16), avg);
    /* And a bf16 max pooling that is offered runs, against the reference. */
    if (max) {
        float *x = random_f32(16 * 64);
        kbuf b;
        kinit(&b, g, node(g, "m"), &x);
        assert_int_equal(kprepare(&b), NTP_STATUS_OK);
        assert_int_equal(be->execute(ctx, b.state, b.nstate, &b.k), NTP_STATUS_OK);
        float *want = run_ref(&b, &x);
        double e = rel_l2(b.k.out[0].data, want, 16 * 16);
        printf("bf16 maxpool vs ref: rel_l2 %.2e (%s)\n", e, be->impl_name(b.state, b.nstate));
        assert_true(e < 1e-2);
        free(want);
        kfree(&b, true);
    }
    ntp_graph_free(g);
}

/* Does oneDNN here create a bf16 recurrent primitive of this kind (0
 * LSTM, 1 GRU (linear before reset), 2 vanilla RNN) with an f32 bias?
 * Asked directly, not through the backend. */
static bool dnnl_recurs_bf16(int kind)
{
    dnnl_engine_t eng;
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success)
        return false;
    int64_t g = kind == 0 ? 4 : kind == 1 ? 3 : 1;
    dnnl_dims_t x = {4, 2, 6}, wl = {1, 1, 6, g, 5}, wi = {1, 1, 5, g, 5}, y = {4, 2, 5};
    dnnl_dims_t bd = {1, 1, kind == 1 ? 4 : g, 5};
    dnnl_memory_desc_t a, w, r, c, bias;
    dnnl_memory_desc_init_by_tag(&a, 3, x, dnnl_bf16, dnnl_tnc);
    dnnl_memory_desc_init_by_tag(&w, 5, wl, dnnl_bf16, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&r, 5, wi, dnnl_bf16, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&c, 3, y, dnnl_bf16, dnnl_tnc);
    dnnl_memory_desc_init_by_tag(&bias, 4, bd, dnnl_f32, dnnl_ldgo);
    dnnl_rnn_desc_t d;
    dnnl_rnn_direction_t dir = dnnl_unidirectional_left2right;
    dnnl_status_t st =
        kind == 0 ? dnnl_lstm_forward_desc_init(&d, dnnl_forward_inference, dir, &a, NULL, NULL, &w,
                                                &r, &bias, &c, NULL, NULL, 0)
        : kind == 1
            ? dnnl_lbr_gru_forward_desc_init(&d, dnnl_forward_inference, dir, &a, NULL, &w, &r,
                                             &bias, &c, NULL, 0)
            : dnnl_vanilla_rnn_forward_desc_init(&d, dnnl_forward_inference, dnnl_eltwise_tanh, dir,
                                                 &a, NULL, &w, &r, &bias, &c, NULL, 0, 0.f, 0.f);
    dnnl_primitive_desc_t pd = NULL;
    bool ok =
        st == dnnl_success && dnnl_primitive_desc_create(&pd, &d, NULL, eng, NULL) == dnnl_success;
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    dnnl_engine_destroy(eng);
    return ok;
}

/* bf16 LSTM, GRU and RNN run on oneDNN wherever oneDNN has them: the
 * probe once asked without a bias descriptor, which oneDNN 2.6 refuses
 * for GRU and RNN at bf16, and every bf16 GRU and RNN went to ref. */
static void test_bf16_recurrent(void **state)
{
    (void)state;
    ntp_graph *g = load("<input name='x' shape='4,2,6'/><lstm name='l' units='5'/>"
                        "<gru name='g' inputs='x' units='5'/><rnn name='r' inputs='x' units='5'/>",
                        "bf16");
    static const char *const names[3] = {"l", "g", "r"};
    for (int kind = 0; kind < 3; kind++) {
        const ntp_node *n = node(g, names[kind]);
        bool has = dnnl_recurs_bf16(kind);
        printf("oneDNN bf16 %s here: %s\n", names[kind], has ? "yes" : "no");
        assert_int_equal(be->supports(g, n, NTP_DTYPE_BF16), has);
        if (!has)
            continue;
        float *x = random_f32(4 * 2 * 6);
        kbuf b;
        kinit(&b, g, n, &x);
        assert_int_equal(kprepare(&b), NTP_STATUS_OK);
        assert_int_equal(be->execute(ctx, b.state, b.nstate, &b.k), NTP_STATUS_OK);
        float *want = run_ref(&b, &x);
        double e = rel_l2(b.k.out[0].data, want, 4 * 2 * 5);
        printf("bf16 %s vs ref: rel_l2 %.2e (%s)\n", names[kind], e,
               be->impl_name(b.state, b.nstate));
        assert_true(e < 2e-2);
        free(want);
        kfree(&b, true);
    }
    ntp_graph_free(g);
}

/* An eltwise op offered at bf16 can be prepared there: round, which
 * oneDNN 2.6 computes in f32 only, was offered and failed at prepare with
 * "eltwise descriptor failed: dnnl_invalid_arguments" instead of falling
 * back to ref. */
static void test_bf16_eltwise_offered_prepares(void **state)
{
    (void)state;
    static const char *const ops[] = {"abs",
                                      "neg",
                                      "exp",
                                      "log",
                                      "sqrt",
                                      "reciprocal",
                                      "round",
                                      "softplus",
                                      "elu",
                                      "relu",
                                      "leaky_relu",
                                      "sigmoid",
                                      "tanh",
                                      "gelu",
                                      "silu",
                                      "hardswish",
                                      "clip min='-1' max='1'"};
    int offered = 0;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        char body[256];
        snprintf(body, sizeof body, "<input name='x' shape='2,16'/><%s name='L'/>", ops[i]);
        ntp_graph *g = load(body, "bf16");
        const ntp_node *l = node(g, "L");
        if (be->supports(g, l, NTP_DTYPE_BF16)) {
            float *x = random_f32(32);
            for (int j = 0; j < 32; j++)
                x[j] = 0.2f + fabsf(x[j]); /* log, sqrt: positive */
            kbuf b;
            kinit(&b, g, l, &x);
            ntp_ctx_clear(ctx);
            if (kprepare(&b) != NTP_STATUS_OK)
                fail_msg("bf16 <%s> offered but not prepared: %s", ops[i], ntp_ctx_errmsg(ctx));
            assert_int_equal(be->execute(ctx, b.state, b.nstate, &b.k), NTP_STATUS_OK);
            kfree(&b, true);
            offered++;
        }
        ntp_graph_free(g);
    }
    printf("bf16 activations offered on oneDNN: %d of %zu\n", offered, sizeof ops / sizeof ops[0]);
    assert_int_equal(offered > 0, ntp__dnnl_dtype_ok(NTP_OP_RELU, dnnl_bf16));
}

/* log at f32 runs on the reference backend: oneDNN's jit log is off by a
 * few 1e-6 absolute, which near x = 1 misses ONNX's tolerance (the ONNX
 * test test_log_example: log(1) came out as -1.43e-6). The engine places it
 * on ref, and the neighbouring exp stays on oneDNN; reduced precisions
 * keep log on oneDNN wherever oneDNN has the type. */
static void test_log_f32_on_ref(void **state)
{
    (void)state;
    ntp_graph *g = load("<input name='x' shape='2,9'/><log name='l'/><exp name='e'/>", NULL);
    const ntp_node *l = node(g, "l"), *e = node(g, "e");
    assert_false(be->supports(g, l, NTP_DTYPE_F32));
    assert_true(be->supports(g, e, NTP_DTYPE_F32));
    assert_int_equal(be->supports(g, l, NTP_DTYPE_BF16), ntp__dnnl_dtype_ok(NTP_OP_LOG, dnnl_bf16));
    assert_int_equal(be->supports(g, l, NTP_DTYPE_F16), ntp__dnnl_dtype_ok(NTP_OP_LOG, dnnl_f16));
    assert_true(be->supports(g, l, NTP_DTYPE_I8));

    /* What oneDNN itself gives for log(1) on this machine (shown, not
     * judged: a later oneDNN may be exact). */
    float x[18];
    for (int i = 0; i < 18; i++)
        x[i] = 1.0f + (float)(i - 9) * 1e-3f;
    float *xp = x;
    kbuf b;
    kinit(&b, g, l, &xp);
    assert_int_equal(kprepare(&b), NTP_STATUS_OK);
    assert_int_equal(be->execute(ctx, b.state, b.nstate, &b.k), NTP_STATUS_OK);
    printf("oneDNN log(1) = %.9g (exact: 0)\n", ((float *)b.k.out[0].data)[9]);
    kfree(&b, false);

    ntp_exec x_plan;
    ntp_exec_opts eo = {.backend = be, .threads = 1, .seed = 1, .first = 0, .last = 1};
    assert_int_equal(ntp__exec_init(ctx, &x_plan, g, &eo), NTP_STATUS_OK);
    assert_string_equal(x_plan.be[x_plan.node_be[g->position[l - g->nodes]]]->name, "ref");
    assert_string_equal(x_plan.be[x_plan.node_be[g->position[e - g->nodes]]]->name, "onednn");
    ntp__exec_free(&x_plan);
    ntp_ctx_clear_warnings(ctx);
    ntp_graph_free(g);
}

/* A transposed convolution whose output padding exceeds its end padding
 * (ONNX's test_convtranspose_pad: strides 3,2, output_padding 1,1, no pads)
 * runs on oneDNN with a negative end padding and equals the reference, in
 * 1-d grouped, 2-d and 3-d. */
static void test_deconv_output_padding_beyond_pad(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        int64_t nx;
    } cases[] = {
        {"<input name='x' shape='1,1,3,3'/><deconv name='d' filters='2' kernel='3' stride='3,2' "
         "output_padding='1,1' bias='false'/>",
         9},
        {"<input name='x' shape='2,4,5'/><deconv name='d' filters='6' kernel='3' stride='2' "
         "pad='1,0' output_padding='1' groups='2'/>",
         40},
        {"<input name='x' shape='1,2,3,4,3'/><deconv name='d' filters='3' kernel='2' stride='2' "
         "output_padding='1,0,1'/>",
         72},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ntp_graph *g = load(cases[i].body, NULL);
        const ntp_node *d = node(g, "d");
        assert_true(d->a.output_padding[0] > d->a.pad[d->a.nk]);
        assert_true(be->supports(g, d, NTP_DTYPE_F32));
        float *x = random_f32(cases[i].nx);
        kbuf b;
        kinit(&b, g, d, &x);
        assert_int_equal(kprepare(&b), NTP_STATUS_OK);
        assert_int_equal(be->execute(ctx, b.state, b.nstate, &b.k), NTP_STATUS_OK);
        float *want = run_ref(&b, &x);
        int64_t n = ntp_shape_numel(&b.k.out[0].shape);
        /* The last output row is reached by the window's start only: it
         * must hold real values, not the poison. */
        assert_false(isnan(((float *)b.k.out[0].data)[n - 1]));
        double e = rel_l2(b.k.out[0].data, want, n);
        char sh[64];
        printf("deconv %s: rel_l2 %.2e\n", ntp_shape_str(&b.k.out[0].shape, sh, sizeof sh), e);
        assert_true(e < 1e-5);
        free(want);
        kfree(&b, true);
        ntp_graph_free(g);
    }
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_impl_name_names_the_isa),
        cmocka_unit_test(test_weights_packed_once),
        cmocka_unit_test(test_blocked_between_convs),
        cmocka_unit_test(test_fusable),
        cmocka_unit_test(test_fused_conv_relu_add),
        cmocka_unit_test(test_fused_batchnorm_relu),
        cmocka_unit_test(test_int8_scales),
        cmocka_unit_test(test_sub_steps_add_up),
        cmocka_unit_test(test_dnnl_error_names_layer),
        cmocka_unit_test(test_reduced_precision_probe),
        cmocka_unit_test(test_log_f32_on_ref),
        cmocka_unit_test(test_bf16_pooling),
        cmocka_unit_test(test_bf16_recurrent),
        cmocka_unit_test(test_bf16_eltwise_offered_prepares),
        cmocka_unit_test(test_deconv_output_padding_beyond_pad),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
#else
int main(void)
{
    /* 77: ctest reports the test as skipped (SKIP_RETURN_CODE), not passed. */
    printf("oneDNN backend not built: skipped\n");
    return 77;
}
#endif
