/* The XNNPACK backend's method table (docs/backends.md).
 *
 * init() creates the thread pool every operator of the plan runs on;
 * prepare() turns a layer or fusion group into steps (layout conversions
 * and XNNPACK operators, created and their weights packed here, once);
 * execute() sets the operators up with the engine's buffers and runs them.
 * Layers this snapshot of XNNPACK cannot run (recurrent layers, attention,
 * concat, layer normalisation, tanh, GELU, ...) are left to the reference
 * backend by supports(). */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/ctx-impl.h"
#include "xnnpack-impl.h"

/* --- library initialisation and f16 probes --------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static bool init_ok;

static void init_library(void)
{
    /* xnn_initialize fills XNNPACK's kernel tables for this CPU once per
     * process; it is never undone (xnn_deinitialize would pull the tables
     * from under plans still alive in other threads). */
    init_ok = xnn_initialize(NULL) == xnn_status_success;
}

bool ntp__xnn_available(void)
{
    pthread_once(&init_once, init_library);
    return init_ok;
}

/* The f16 operator that stands for each op's family in probe_f16();
 * PROBE_NONE for the ops that have none. */
typedef enum probe_kind {
    PROBE_NONE,
    PROBE_FC,
    PROBE_CONV,
    PROBE_BATCHNORM,
    PROBE_DECONV,
    PROBE_MAXPOOL,
    PROBE_GAP,
    PROBE_CLAMP,
    PROBE_LEAKY_RELU,
    PROBE_HARDSWISH,
    PROBE_ADD,
    PROBE_MUL,
    PROBE_PAD,
    PROBE_COPY
} probe_kind;

static const probe_kind probes[NTP_OP_COUNT] = {
    [NTP_OP_FC] = PROBE_FC,
    [NTP_OP_LM_HEAD] = PROBE_FC,
    [NTP_OP_CONV] = PROBE_CONV,
    [NTP_OP_BATCHNORM] = PROBE_BATCHNORM,
    [NTP_OP_DECONV] = PROBE_DECONV,
    [NTP_OP_MAXPOOL] = PROBE_MAXPOOL,
    [NTP_OP_GLOBAL_MAXPOOL] = PROBE_MAXPOOL,
    [NTP_OP_GLOBAL_AVGPOOL] = PROBE_GAP,
    [NTP_OP_RELU] = PROBE_CLAMP,
    [NTP_OP_CLIP] = PROBE_CLAMP,
    [NTP_OP_LEAKY_RELU] = PROBE_LEAKY_RELU,
    [NTP_OP_HARDSWISH] = PROBE_HARDSWISH,
    [NTP_OP_ADD] = PROBE_ADD,
    [NTP_OP_MUL] = PROBE_MUL,
    [NTP_OP_PAD] = PROBE_PAD,
    [NTP_OP_DROPOUT] = PROBE_COPY,
    [NTP_OP_MEMCPY] = PROBE_COPY,
    [NTP_OP_RESHAPE] = PROBE_COPY,
    [NTP_OP_FLATTEN] = PROBE_COPY,
};

static probe_kind probe_of(ntp_op op)
{
    return (unsigned)op < NTP_OP_COUNT ? probes[op] : PROBE_NONE;
}

/* Create a small f16 operator of the family of `op`: true when this CPU
 * has f16 kernels for it (XNNPACK answers unsupported_hardware otherwise). */
static bool probe_f16(ntp_op op)
{
    static const uint16_t w[64]; /* zeros: weights and biases of the probes */
    xnn_operator_t o = NULL;
    enum xnn_status st = xnn_status_unsupported_parameter;
    switch (probe_of(op)) {
    case PROBE_FC:
        st = xnn_create_fully_connected_nc_f16(4, 4, 4, 4, w, w, -INFINITY, INFINITY, 0, &o);
        break;
    case PROBE_CONV:
        st = xnn_create_convolution2d_nhwc_f16(1, 1, 1, 1, 3, 3, 1, 1, 1, 1, 1, 4, 4, 4, 4, w, w,
                                               -INFINITY, INFINITY, 0, &o);
        if (st == xnn_status_success) {
            /* Depthwise layers use their own kernels. */
            xnn_delete_operator(o);
            o = NULL;
            st = xnn_create_convolution2d_nhwc_f16(1, 1, 1, 1, 3, 3, 1, 1, 1, 1, 4, 1, 1, 4, 4, w,
                                                   w, -INFINITY, INFINITY, 0, &o);
        }
        break;
    case PROBE_BATCHNORM:
        st = xnn_create_convolution2d_nhwc_f16(0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 4, 1, 1, 4, 4, w, w,
                                               -INFINITY, INFINITY, 0, &o);
        break;
    case PROBE_DECONV:
        st = xnn_create_deconvolution2d_nhwc_f16(0, 0, 0, 0, 2, 2, 2, 2, 1, 1, 1, 4, 4, 4, 4, w, w,
                                                 -INFINITY, INFINITY, 0, &o);
        break;
    case PROBE_MAXPOOL:
        st = xnn_create_max_pooling2d_nhwc_f16(0, 0, 0, 0, 2, 2, 2, 2, 1, 1, 4, 4, 4, -INFINITY,
                                               INFINITY, 0, &o);
        break;
    case PROBE_GAP:
        st = xnn_create_global_average_pooling_nwc_f16(4, 4, 4, -INFINITY, INFINITY, 0, &o);
        break;
    case PROBE_CLAMP: st = xnn_create_clamp_nc_f16(4, 4, 4, 0.0f, 6.0f, 0, &o); break;
    case PROBE_LEAKY_RELU: st = xnn_create_leaky_relu_nc_f16(4, 4, 4, 0.1f, 0, &o); break;
    case PROBE_HARDSWISH: st = xnn_create_hardswish_nc_f16(4, 4, 4, 0, &o); break;
    case PROBE_ADD: st = xnn_create_add_nd_f16(-INFINITY, INFINITY, 0, &o); break;
    case PROBE_MUL: st = xnn_create_multiply_nd_f16(-INFINITY, INFINITY, 0, &o); break;
    case PROBE_PAD: st = xnn_create_constant_pad_nd_x16(w, 0, &o); break;
    case PROBE_COPY: st = xnn_create_copy_nc_x16(4, 4, 4, 0, &o); break;
    case PROBE_NONE:
        /* avgpool, sigmoid, softmax: no f16 operator in this snapshot. */
        return false;
    }
    if (o)
        xnn_delete_operator(o);
    return st == xnn_status_success;
}

/* 0 unknown, 1 yes, 2 no; per op. */
static _Atomic int f16_cache[NTP_OP_COUNT];

static bool f16_ok(ntp_op op)
{
    if ((unsigned)op >= NTP_OP_COUNT || !ntp__xnn_available())
        return false;
    int v = atomic_load(&f16_cache[op]);
    if (v == 0) {
        v = probe_f16(op) ? 1 : 2;
        atomic_store(&f16_cache[op], v);
    }
    return v == 1;
}

/* --- support ---------------------------------------------------------------- */

/* Which file's functions an op goes to; XF_NONE for the ops this backend
 * leaves to others. */
typedef enum xnnb_family { XF_NONE, XF_CONV, XF_FC, XF_POOL, XF_ELTWISE } xnnb_family;

#define XNNB_UNARY_(e, fn, onnx, attrs, flops) [NTP_OP_##e] = XF_ELTWISE,
static const xnnb_family families[NTP_OP_COUNT] = {
    [NTP_OP_CONV] = XF_CONV,
    [NTP_OP_DECONV] = XF_CONV,
    [NTP_OP_FC] = XF_FC,
    [NTP_OP_LM_HEAD] = XF_FC, /* an fc of vocab units, no bias */
    [NTP_OP_MAXPOOL] = XF_POOL,
    [NTP_OP_AVGPOOL] = XF_POOL,
    [NTP_OP_GLOBAL_MAXPOOL] = XF_POOL,
    [NTP_OP_GLOBAL_AVGPOOL] = XF_POOL,
    [NTP_OP_SOFTMAX] = XF_ELTWISE,
    [NTP_OP_ADD] = XF_ELTWISE,
    [NTP_OP_MUL] = XF_ELTWISE,
    [NTP_OP_BATCHNORM] = XF_ELTWISE,
    [NTP_OP_PAD] = XF_ELTWISE,
    [NTP_OP_DROPOUT] = XF_ELTWISE,
    [NTP_OP_MEMCPY] = XF_ELTWISE,
    [NTP_OP_RESHAPE] = XF_ELTWISE,
    [NTP_OP_FLATTEN] = XF_ELTWISE,
    [NTP_OP_PRELU] = XF_ELTWISE,
    [NTP_OP_SUB] = XF_ELTWISE,
    [NTP_OP_DIV] = XF_ELTWISE,
    [NTP_OP_MAX] = XF_ELTWISE,
    [NTP_OP_MIN] = XF_ELTWISE,
    NTP_UNARY_TABLE(XNNB_UNARY_) /* by eltwise.c's mapping */
};
#undef XNNB_UNARY_

static xnnb_family family(ntp_op op)
{
    return (unsigned)op < NTP_OP_COUNT ? families[op] : XF_NONE;
}

static bool family_supports(const ntp_graph *g, const ntp_node *n, bool f16)
{
    switch (family(n->op)) {
    case XF_CONV: return ntp__xnn_conv_supports(g, n, f16);
    case XF_FC: return ntp__xnn_fc_supports(g, n, f16);
    case XF_POOL: return ntp__xnn_pool_supports(g, n, f16);
    case XF_ELTWISE: return ntp__xnn_eltwise_supports(g, n, f16); /* by eltwise.c's mapping */
    case XF_NONE:
        /* Not in this snapshot: matmul, recurrent layers, attention,
         * layernorm, tanh, gelu, silu, concat, split, transpose, embedding,
         * the decoder ops but lm_head (no RMS normalisation, rotary
         * embedding, attention or argmax operator in Debian's XNNPACK),
         * reflect/edge padding, 3-d layers, the ONNX ops other than the
         * ones above, and the inlays. */
        return false;
    }
    return false;
}

static bool xnnpack_supports(const ntp_graph *g, const ntp_node *n, ntp_dtype p)
{
    if (!g || !n || (unsigned)n->op >= NTP_OP_COUNT || n->n_in < 1 || n->n_out < 1)
        return false;
    if (p != NTP_DTYPE_F32 && !(p == NTP_DTYPE_F16 && f16_ok(n->op)))
        return false;
    return ntp__xnn_available() && family_supports(g, n, p == NTP_DTYPE_F16);
}

/* Activations and weights are stored as f16 for f16 layers (XNNPACK's f16
 * operators read and write IEEE half precision), as f32 otherwise. */
static ntp_dtype xnnpack_storage(ntp_dtype p)
{
    return p == NTP_DTYPE_F16 ? NTP_DTYPE_F16 : NTP_DTYPE_F32;
}

/* --- lifetime ------------------------------------------------------------------ */

/* The CPUs this process may run on (what --pin left it), at least 1. */
static int usable_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static ntp_status xnnpack_init(ntp_ctx *ctx, const ntp_backend_opts *opts, void **state)
{
    if (!ntp__xnn_available())
        return ntp__error(ctx, NTP_STATUS_BACKEND_ERROR,
                          "xnnpack: xnn_initialize failed (this CPU lacks what XNNPACK needs)");
    xnnb_state *s = calloc(1, sizeof *s);
    if (!s)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "xnnpack: out of memory");
    s->threads = opts && opts->threads > 0 ? opts->threads : usable_cpus();
    /* One thread needs no pool: operators then run on the calling thread. */
    if (s->threads > 1 && !(s->pool = pthreadpool_create((size_t)s->threads))) {
        int n = s->threads;
        free(s);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY,
                          "xnnpack: cannot create a pool of %d threads", n);
    }
    *state = s;
    return NTP_STATUS_OK;
}

static void xnnpack_release(void *state)
{
    xnnb_state *s = state;
    if (!s)
        return;
    if (s->pool)
        pthreadpool_destroy(s->pool);
    free(s);
}

/* --- prepare ------------------------------------------------------------------ */

static ntp_status build(xnnb_build *b)
{
    switch (family(b->n->op)) {
    case XF_CONV: return ntp__xnn_conv_build(b);
    case XF_FC: return ntp__xnn_fc_build(b);
    case XF_POOL: return ntp__xnn_pool_build(b);
    case XF_ELTWISE:
    case XF_NONE: break;
    }
    return ntp__xnn_eltwise_build(b);
}

/* The output range of the activations folded into the group. */
static void fused_range(const ntp_kargs *k, float *lo, float *hi)
{
    *lo = -INFINITY;
    *hi = INFINITY;
    for (int f = 0; f < k->n_fused; f++) {
        const ntp_node *n = k->fused[f];
        float a = n->op == NTP_OP_RELU ? 0.0f : (float)n->a.min;
        float c =
            n->op == NTP_OP_RELU ? (n->a.has_max ? (float)n->a.max : INFINITY) : (float)n->a.max;
        *lo = a > *lo ? a : *lo;
        *hi = c < *hi ? c : *hi;
    }
    if (*lo > *hi)
        *lo = *hi;
}

/* Order the steps: input conversions, the operators, output conversions. */
static ntp_status finish(xnnb_build *b)
{
    xnnb_node *nd = b->nd;
    if (b->n_pre + 1 + b->n_post > XNNB_MAX_STEPS)
        return ntp__xnn_fail(b, NTP_STATUS_INTERNAL, "too many steps");
    nd->n_steps = 0;
    for (int i = 0; i < b->n_pre; i++)
        nd->steps[nd->n_steps++] = b->pre[i];
    nd->main_step = nd->n_steps;
    xnnb_step *m = &nd->steps[nd->n_steps++];
    memset(m, 0, sizeof *m);
    m->first_call = 0;
    m->n_calls = nd->n_calls;
    for (int i = 0; i < b->n_post; i++) {
        nd->steps[nd->n_steps] = b->post[i];
        nd->steps[nd->n_steps++].yield = b->yield;
    }
    return NTP_STATUS_OK;
}

static ntp_status xnnpack_prepare(ntp_ctx *ctx, void *state, ntp_kargs *k, void **node_state,
                                  size_t *workspace)
{
    *node_state = NULL;
    *workspace = 0;
    if (!k->node)
        return ntp__error(ctx, NTP_STATUS_INTERNAL, "xnnpack: kernel arguments without a node");
    xnnb_node *nd = calloc(1, sizeof *nd);
    xnnb_build *b = calloc(1, sizeof *b);
    if (!nd || !b) {
        free(nd);
        free(b);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "xnnpack: out of memory");
    }
    b->ctx = ctx;
    b->s = state;
    b->k = k;
    b->nd = nd;
    b->n = k->node;
    b->f16 = k->node->precision == NTP_DTYPE_F16;
    /* A copy moves its input's own type (the engine plans it so): an f16
     * memcpy staging an f32 graph input copies 32-bit elements. */
    if (b->f16 && k->node->op == NTP_OP_MEMCPY && k->n_in == 1 && k->n_out == 1 &&
        k->in[0].dtype == NTP_DTYPE_F32 && k->out[0].dtype == NTP_DTYPE_F32)
        b->f16 = false;
    b->esize = b->f16 ? 2 : 4;
    fused_range(k, &b->out_min, &b->out_max);
    ntp_status st = NTP_STATUS_OK;
    for (int i = 0; i < k->n_in && !st; i++)
        if (k->in[i].dtype != (b->f16 ? NTP_DTYPE_F16 : NTP_DTYPE_F32))
            st = ntp__xnn_fail(b, NTP_STATUS_UNSUPPORTED, "input %d is stored as %s", i,
                               ntp_dtype_name(k->in[i].dtype));
    if (!st)
        st = build(b);
    if (!st)
        st = finish(b);
    free(b);
    if (st) {
        ntp__xnn_node_free(nd);
        return st;
    }
    *workspace = nd->ws;
    *node_state = nd;
    return NTP_STATUS_OK;
}

/* --- execute ------------------------------------------------------------------ */

static ntp_status xnnpack_execute(ntp_ctx *ctx, void *state, void *node_state, const ntp_kargs *k)
{
    xnnb_node *nd = node_state;
    if (!nd)
        return ntp__error(ctx, NTP_STATUS_INTERNAL, "xnnpack: layer '%s' was not prepared",
                          k->node && k->node->name ? k->node->name : "?");
    for (int i = 0; i < nd->n_steps; i++) {
        ntp_status st = ntp__xnn_run_step(ctx, state, nd, k, i);
        if (st)
            return st;
    }
    return NTP_STATUS_OK;
}

static void xnnpack_release_node(void *state, void *node_state)
{
    (void)state;
    ntp__xnn_node_free(node_state);
}

static const char *xnnpack_impl_name(void *state, void *node_state)
{
    xnnb_node *nd = node_state;
    /* The engine interns it (ntp__be_impl_name): the name outlives nd. */
    return nd && nd->impl[0] ? nd->impl : "xnnpack";
}

static int xnnpack_n_steps(void *state, void *node_state, int *main_step)
{
    xnnb_node *nd = node_state;
    if (!nd) {
        *main_step = 0;
        return 1;
    }
    *main_step = nd->main_step;
    return nd->n_steps;
}

static void xnnpack_step_info(void *state, void *node_state, int step, const char **suffix,
                              const char **type, int64_t *bytes)
{
    xnnb_node *nd = node_state;
    *suffix = "";
    *type = NULL;
    if (nd && step >= 0 && step < nd->n_steps && nd->steps[step].reorder) {
        const xnnb_step *sp = &nd->steps[step];
        *suffix = sp->suffix;
        *type = "reorder";
        /* The tensor read in one layout and written in the other. */
        *bytes = 2 * sp->n * sp->c * sp->s * (int64_t)sp->esize;
    }
}

static ntp_status xnnpack_execute_step(ntp_ctx *ctx, void *state, void *node_state,
                                       const ntp_kargs *k, int step)
{
    xnnb_node *nd = node_state;
    if (!nd || step < 0 || step >= nd->n_steps)
        return ntp__error(ctx, NTP_STATUS_INTERNAL, "xnnpack: layer '%s' has no step %d",
                          k->node && k->node->name ? k->node->name : "?", step);
    return ntp__xnn_run_step(ctx, state, nd, k, step);
}

/* --- fusion -------------------------------------------------------------------- */

/* An activation that is a clamp (relu, clipped relu, clip) folds into the
 * output range every XNNPACK operator has, as TensorFlow Lite's fused
 * activations do; one per group, after a conv, deconv, fc, batchnorm, add
 * or mul. */
static bool xnnpack_fusable(const ntp_graph *g, const ntp_node *head, int n_fused,
                            const ntp_node *next)
{
    if (!g || !head || !next || n_fused != 0 || next->precision != head->precision)
        return false;
    if (head->op != NTP_OP_CONV && head->op != NTP_OP_DECONV && head->op != NTP_OP_FC &&
        head->op != NTP_OP_BATCHNORM && head->op != NTP_OP_ADD && head->op != NTP_OP_MUL)
        return false;
    return next->op == NTP_OP_RELU || next->op == NTP_OP_CLIP;
}

const ntp_backend_i ntp__backend_xnnpack = {
    .api_version = NTP_BACKEND_API_VERSION,
    .name = "xnnpack",
    .description = "XNNPACK (the engine under TensorFlow Lite's CPU delegate), Debian snapshot "
                   "2022-02-16: NHWC operators, weights packed at creation; f32 and f16",
    .kind = NTP_BACKEND_HOST,
    .priority = NTP_BACKEND_PRIORITY_REF + 200,
    .supports = xnnpack_supports,
    .storage_dtype = xnnpack_storage,
    .init = xnnpack_init,
    .prepare = xnnpack_prepare,
    .execute = xnnpack_execute,
    .release_node = xnnpack_release_node,
    .release = xnnpack_release,
    .fusable = xnnpack_fusable,
    .impl_name = xnnpack_impl_name,
    .n_steps = xnnpack_n_steps,
    .step_info = xnnpack_step_info,
    .execute_step = xnnpack_execute_step,
};
