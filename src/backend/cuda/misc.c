/* Every other layer the CUDA backend runs:
 *
 *   maxpool, avgpool, global pools   cudnnPoolingForward where its rules are
 *                      the layer's (f32 and f16, no dilation, symmetric
 *                      padding, no ceil-mode window past the padding); the
 *                      pool kernel otherwise (bf16, dilation, ceil mode),
 *                      which follows the reference backend exactly.
 *   batchnorm          folded at prepare into a per-channel multiply-add
 *                      (scale/√(var+ε), bias − mean·that), one epilogue pass;
 *                      cudnnBatchNormalizationForwardInference would refuse
 *                      ε < 1e-5 and bf16.
 *   layernorm          the layer-norm kernel (one block per row).
 *   activations and unary math  the epilogue kernel.
 *   softmax            cudnnSoftmaxForward (accurate, channel mode over a
 *                      [outer, axis, inner, 1] view) for f32 and f16; the
 *                      softmax kernel for bf16.
 *   add, mul           a copy of an input that has the output's shape, then
 *                      cudnnAddTensor / cudnnOpTensor for each other input
 *                      (each broadcast where its dims are 1), f32 and f16 up
 *                      to rank 5; otherwise (bf16, no input of the output's
 *                      shape, sub, div, max, min) the broadcasting kernel.
 *   concat, split      cudaMemcpy2DAsync per input (output), the axis's rows
 *                      as the 2-d copy's pitch.
 *   reshape, flatten, dropout, memcpy  cudaMemcpyAsync device to device.
 *   transpose          the gather kernel with permuted strides.
 *   pad                the pad kernel (constant, reflect, edge).
 *   embedding          the gather kernel for tables (i32 or i64 indices). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "core/numeric-impl.h"
#include "cuda-impl.h"
#include "graph/op-onnx-impl.h"

typedef enum {
    M_POOL_DNN,
    M_POOL_K,
    M_AFFINE,
    M_LAYERNORM,
    M_ACT,
    M_SOFTMAX_DNN,
    M_SOFTMAX_K,
    M_BINARY_DNN,
    M_BINARY_K,
    M_CONCAT,
    M_SPLIT,
    M_COPY,
    M_TRANSPOSE,
    M_PAD,
    M_EMBEDDING
} misc_kind;

typedef struct misc_priv {
    misc_kind kind;
    ntp_dtype t;
    int64_t n; /* output elements */
    cudnnTensorDescriptor_t x, y;
    cudnnPoolingDescriptor_t pool;
    cudnnOpTensorDescriptor_t op;
    cudnnTensorDescriptor_t in_desc[NTP_MAX_INPUTS];
    cudak_pool pg;
    cudak_post act;
    int64_t channels, inner, rows, len, outer;
    float eps;
    /* binary */
    int full; /* the input with the output's shape */
    int nd;
    int64_t dims[NTP_MAX_DIMS];
    int64_t st[NTP_MAX_INPUTS][NTP_MAX_DIMS];
    cudak_op bop;
    /* concat, split */
    int64_t chunk[NTP_MAX_OUTPUTS > NTP_MAX_INPUTS ? NTP_MAX_OUTPUTS : NTP_MAX_INPUTS];
    int64_t pitch;
    /* pad */
    int64_t in_dims[NTP_MAX_DIMS], begin[NTP_MAX_DIMS];
    int mode;
    float value;
    /* embedding */
    int64_t vocab, units;
    bool idx64;
} misc_priv;

static void misc_free(cudab_node *nd)
{
    misc_priv *p = nd->priv;
    if (!p)
        return;
    if (p->x)
        cudnnDestroyTensorDescriptor(p->x);
    if (p->y)
        cudnnDestroyTensorDescriptor(p->y);
    if (p->pool)
        cudnnDestroyPoolingDescriptor(p->pool);
    if (p->op)
        cudnnDestroyOpTensorDescriptor(p->op);
    for (int i = 0; i < NTP_MAX_INPUTS; i++)
        if (p->in_desc[i])
            cudnnDestroyTensorDescriptor(p->in_desc[i]);
    free(p);
    nd->priv = NULL;
}

/* The ops of this family by what prepares them; MISC_ACT (0) for every
 * other op: a unary element-wise op act_map maps, or none. */
typedef enum misc_op {
    MISC_ACT,
    MISC_POOL,
    MISC_GPOOL,
    MISC_BATCHNORM,
    MISC_LAYERNORM,
    MISC_SOFTMAX,
    MISC_BINARY,
    MISC_CONCAT_SPLIT,
    MISC_COPY,
    MISC_TRANSPOSE,
    MISC_PAD,
    MISC_EMBEDDING
} misc_op;

static const misc_op misc_ops[NTP_OP_COUNT] = {
    [NTP_OP_MAXPOOL] = MISC_POOL,
    [NTP_OP_AVGPOOL] = MISC_POOL,
    [NTP_OP_GLOBAL_MAXPOOL] = MISC_GPOOL,
    [NTP_OP_GLOBAL_AVGPOOL] = MISC_GPOOL,
    [NTP_OP_BATCHNORM] = MISC_BATCHNORM,
    [NTP_OP_LAYERNORM] = MISC_LAYERNORM,
    [NTP_OP_SOFTMAX] = MISC_SOFTMAX,
    [NTP_OP_ADD] = MISC_BINARY,
    [NTP_OP_MUL] = MISC_BINARY,
    [NTP_OP_SUB] = MISC_BINARY,
    [NTP_OP_DIV] = MISC_BINARY,
    [NTP_OP_MAX] = MISC_BINARY,
    [NTP_OP_MIN] = MISC_BINARY,
    [NTP_OP_CONCAT] = MISC_CONCAT_SPLIT,
    [NTP_OP_SPLIT] = MISC_CONCAT_SPLIT,
    [NTP_OP_RESHAPE] = MISC_COPY,
    [NTP_OP_FLATTEN] = MISC_COPY,
    [NTP_OP_DROPOUT] = MISC_COPY,
    [NTP_OP_MEMCPY] = MISC_COPY,
    [NTP_OP_TRANSPOSE] = MISC_TRANSPOSE,
    [NTP_OP_PAD] = MISC_PAD,
    [NTP_OP_EMBEDDING] = MISC_EMBEDDING,
};

static misc_op misc_op_of(ntp_op op)
{
    return (unsigned)op < NTP_OP_COUNT ? misc_ops[op] : MISC_ACT;
}

/* Where an element-wise function's parameters a and b come from. */
typedef enum act_param {
    ACT_NONE,    /* none */
    ACT_PARAM,   /* a = the op's parameter (ntp__unary_param 0) */
    ACT_MIN_MAX, /* a = min, b = max (clip) */
    ACT_CEILING  /* relu: a ceiling makes it RELU_MAX with b = max */
} act_param;

/* op -> device function (CUDAK_FN_TABLE): one line per unary element-wise
 * op this backend runs; 0 (CUDAK_IDENTITY) means not mapped, and the op
 * stays on the reference backend. */
static const struct {
    cudak_fn fn;
    act_param param;
} act_map[NTP_OP_COUNT] = {
    [NTP_OP_RELU] = {CUDAK_RELU, ACT_CEILING},
    [NTP_OP_LEAKY_RELU] = {CUDAK_LEAKY_RELU, ACT_PARAM},
    [NTP_OP_SIGMOID] = {CUDAK_SIGMOID, ACT_NONE},
    [NTP_OP_TANH] = {CUDAK_TANH, ACT_NONE},
    [NTP_OP_GELU] = {CUDAK_GELU, ACT_NONE},
    [NTP_OP_SILU] = {CUDAK_SILU, ACT_NONE},
    [NTP_OP_HARDSWISH] = {CUDAK_HARDSWISH, ACT_NONE},
    [NTP_OP_CLIP] = {CUDAK_CLIP, ACT_MIN_MAX},
    [NTP_OP_ABS] = {CUDAK_ABS, ACT_NONE},
    [NTP_OP_NEG] = {CUDAK_NEG, ACT_NONE},
    [NTP_OP_EXP] = {CUDAK_EXP, ACT_NONE},
    [NTP_OP_LOG] = {CUDAK_LOG, ACT_NONE},
    [NTP_OP_SQRT] = {CUDAK_SQRT, ACT_NONE},
    [NTP_OP_RECIPROCAL] = {CUDAK_RECIPROCAL, ACT_NONE},
    [NTP_OP_ERF] = {CUDAK_ERF, ACT_NONE},
    [NTP_OP_SOFTPLUS] = {CUDAK_SOFTPLUS, ACT_NONE},
    [NTP_OP_ELU] = {CUDAK_ELU, ACT_PARAM},
    [NTP_OP_MISH] = {CUDAK_MISH, ACT_NONE},
    [NTP_OP_LOG_SIGMOID] = {CUDAK_LOG_SIGMOID, ACT_NONE},
};

bool ntp__cuda_act_fn(const ntp_node *n, cudak_post *p)
{
    const ntp_attrs *a = &n->a;
    memset(p, 0, sizeof *p);
    if ((unsigned)n->op >= NTP_OP_COUNT || act_map[n->op].fn == CUDAK_IDENTITY)
        return false;
    p->fn = act_map[n->op].fn;
    switch (act_map[n->op].param) {
    case ACT_NONE: break;
    case ACT_PARAM: p->a = (float)ntp__unary_param(a, n->op, 0); break;
    case ACT_MIN_MAX:
        p->a = (float)a->min;
        p->b = (float)a->max;
        break;
    case ACT_CEILING:
        p->fn = a->has_max ? CUDAK_RELU_MAX : CUDAK_RELU;
        p->b = (float)a->max;
        break;
    }
    return true;
}

/* Strides of input shape s read at every index of output shape y (0 where
 * s broadcasts); false when it does not broadcast. */
static bool bcast_strides(const ntp_shape *s, const ntp_shape *y, int64_t *st)
{
    int r = y->ndim;
    if (s->ndim > r)
        return false;
    int64_t stride = 1;
    for (int d = r - 1; d >= 0; d--) {
        int ds = d - (r - s->ndim);
        int64_t dim = ds >= 0 ? s->dim[ds] : 1;
        if (dim != y->dim[d] && dim != 1)
            return false;
        st[d] = dim == 1 ? 0 : stride;
        stride *= dim;
    }
    return true;
}

static int64_t norm_axis(int64_t axis, int rank)
{
    return axis < 0 ? axis + rank : axis;
}

bool ntp__cuda_misc_supports(const ntp_graph *g, const ntp_node *n, ntp_dtype p)
{
    if (n->n_in < 1)
        return false;
    const ntp_shape *x = &ntp__cin(g, n, 0)->shape, *y = &ntp__cout(g, n, 0)->shape;
    if (x->ndim > CUDAK_MAX_DIMS || y->ndim > CUDAK_MAX_DIMS)
        return false;
    cudak_post act;
    switch (misc_op_of(n->op)) {
    case MISC_POOL: return n->n_out == 1 && x->ndim >= 3 && x->ndim <= 5 && n->a.nk == x->ndim - 2;
    case MISC_GPOOL:
    case MISC_BATCHNORM: return n->n_out == 1 && x->ndim >= (n->op == NTP_OP_BATCHNORM ? 2 : 3);
    case MISC_LAYERNORM: {
        int64_t ax = norm_axis(n->a.axis, x->ndim);
        return ax >= 0 && ax < x->ndim && n->n_w == 2;
    }
    case MISC_SOFTMAX: {
        int64_t ax = norm_axis(n->a.axis, x->ndim);
        return ax >= 0 && ax < x->ndim;
    }
    case MISC_BINARY: {
        int64_t st[NTP_MAX_DIMS];
        for (int i = 0; i < n->n_in; i++)
            if (!bcast_strides(&ntp__cin(g, n, i)->shape, y, st))
                return false;
        return n->n_out == 1;
    }
    case MISC_CONCAT_SPLIT: return n->a.axis >= 0 && n->a.axis < x->ndim;
    case MISC_COPY:
    case MISC_TRANSPOSE: return n->n_out == 1 && ntp_shape_numel(x) == ntp_shape_numel(y);
    case MISC_PAD:
        return n->a.n_pads == 2 * x->ndim && n->a.pad_mode >= NTP_PADMODE_CONSTANT &&
               n->a.pad_mode <= NTP_PADMODE_EDGE;
    case MISC_EMBEDDING: {
        ntp_dtype it = ntp__cin(g, n, 0)->dtype;
        return (it == NTP_DTYPE_I32 || it == NTP_DTYPE_I64) && n->n_w == 1;
    }
    case MISC_ACT: (void)p; return ntp__cuda_act_fn(n, &act);
    }
    return false;
}

/* --- run ---------------------------------------------------------------------------- */

static ntp_status kerr(ntp_ctx *ctx, const ntp_kargs *k, int r, const char *what)
{
    return r ? ntp__cuda_rt(ctx, k, (cudaError_t)r, what) : NTP_STATUS_OK;
}

static ntp_status binary_dnn(ntp_ctx *ctx, cudab_state *s, cudab_node *nd, const ntp_kargs *k)
{
    misc_priv *p = nd->priv;
    const float one = 1.0f, zero = 0.0f;
    void *out = nd->out[0].d;
    cudnnStatus_t e = CUDNN_STATUS_SUCCESS;
    if (k->node->op == NTP_OP_ADD) {
        /* out = the full-shape input, then out += each other (broadcast). */
        cudaError_t ce = cudaMemcpyAsync(out, nd->in[p->full].d, (size_t)nd->out[0].bytes,
                                         cudaMemcpyDeviceToDevice, s->stream);
        if (ce != cudaSuccess)
            return ntp__cuda_rt(ctx, k, ce, "copying the first addend");
        for (int i = 0; i < k->n_in && e == CUDNN_STATUS_SUCCESS; i++)
            if (i != p->full)
                e = cudnnAddTensor(s->dnn, &one, p->in_desc[i], nd->in[i].d, &one, p->y, out);
        return e == CUDNN_STATUS_SUCCESS ? NTP_STATUS_OK : ntp__cuda_dnn(ctx, k, e, "add");
    }
    /* Products in order; results alternate between the workspace and the
     * output so no operation reads the buffer it writes, the last one
     * landing in the output. */
    int m = k->n_in - 1, j = 0;
    const void *src = nd->in[p->full].d;
    for (int i = 0; i < k->n_in && e == CUDNN_STATUS_SUCCESS; i++) {
        if (i == p->full)
            continue;
        j++;
        void *dst = (m - j) % 2 == 0 ? out : s->ws;
        e = cudnnOpTensor(s->dnn, p->op, &one, p->y, src, &one, p->in_desc[i], nd->in[i].d, &zero,
                          p->y, dst);
        src = dst;
    }
    return e == CUDNN_STATUS_SUCCESS ? NTP_STATUS_OK : ntp__cuda_dnn(ctx, k, e, "multiply");
}

static ntp_status binary_k(ntp_ctx *ctx, cudab_state *s, cudab_node *nd, const ntp_kargs *k)
{
    misc_priv *p = nd->priv;
    cudak_type kt = ntp__cuda_k_type(p->t);
    int64_t full[NTP_MAX_DIMS], acc = 1;
    for (int d = p->nd - 1; d >= 0; d--) {
        full[d] = acc;
        acc *= p->dims[d];
    }
    int r = ntp__cudak_binary(s->stream, kt, p->bop, p->nd, p->dims, nd->in[0].d, p->st[0],
                              nd->in[1].d, p->st[1], nd->out[0].d);
    /* Further inputs fold into the output in order (each element is read
     * and written by the same thread). */
    for (int i = 2; i < k->n_in && !r; i++)
        r = ntp__cudak_binary(s->stream, kt, p->bop, p->nd, p->dims, nd->out[0].d, full,
                              nd->in[i].d, p->st[i], nd->out[0].d);
    return kerr(ctx, k, r, "the broadcasting kernel");
}

static ntp_status misc_run(ntp_ctx *ctx, cudab_state *s, cudab_node *nd, const ntp_kargs *k)
{
    misc_priv *p = nd->priv;
    cudak_type kt = ntp__cuda_k_type(p->t);
    const float one = 1.0f, zero = 0.0f;
    const void *x = nd->in[0].d;
    void *y = nd->out[0].d;
    size_t es = ntp_dtype_size(p->t);
    cudnnStatus_t e;
    cudaError_t ce;
    switch (p->kind) {
    case M_POOL_DNN:
        e = cudnnPoolingForward(s->dnn, p->pool, &one, p->x, x, &zero, p->y, y);
        return e == CUDNN_STATUS_SUCCESS ? NTP_STATUS_OK : ntp__cuda_dnn(ctx, k, e, "pooling");
    case M_POOL_K:
        return kerr(ctx, k, ntp__cudak_pool(s->stream, kt, &p->pg, x, y), "the pooling kernel");
    case M_AFFINE: {
        cudak_epilogue ep;
        memset(&ep, 0, sizeof ep);
        ep.scale = (const float *)nd->w;
        ep.bias = (const float *)nd->w + p->channels;
        ep.channels = p->channels;
        ep.inner = p->inner;
        return kerr(ctx, k, ntp__cudak_epilogue(s->stream, kt, x, y, p->n, &ep),
                    "the batchnorm kernel");
    }
    case M_LAYERNORM:
        return kerr(ctx, k,
                    ntp__cudak_layernorm(s->stream, kt, x, y, p->rows, p->len,
                                         ntp__cuda_weight_f32(nd, 0), ntp__cuda_weight_f32(nd, 1),
                                         p->eps),
                    "the layer-norm kernel");
    case M_ACT: {
        cudak_epilogue ep;
        memset(&ep, 0, sizeof ep);
        ep.channels = ep.inner = 1;
        ep.n_post = 1;
        ep.post[0] = p->act;
        return kerr(ctx, k, ntp__cudak_epilogue(s->stream, kt, x, y, p->n, &ep),
                    "the activation kernel");
    }
    case M_SOFTMAX_DNN:
        e = cudnnSoftmaxForward(s->dnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &one,
                                p->x, x, &zero, p->x, y);
        return e == CUDNN_STATUS_SUCCESS ? NTP_STATUS_OK : ntp__cuda_dnn(ctx, k, e, "softmax");
    case M_SOFTMAX_K:
        return kerr(ctx, k,
                    ntp__cudak_softmax(s->stream, kt, x, y, p->outer, p->len, p->inner, 1.0f, 0),
                    "the softmax kernel");
    case M_BINARY_DNN: return binary_dnn(ctx, s, nd, k);
    case M_BINARY_K: return binary_k(ctx, s, nd, k);
    case M_CONCAT: {
        int64_t off = 0;
        for (int i = 0; i < k->n_in; i++) {
            ce = cudaMemcpy2DAsync((char *)y + off, (size_t)p->pitch, nd->in[i].d,
                                   (size_t)p->chunk[i], (size_t)p->chunk[i], (size_t)p->outer,
                                   cudaMemcpyDeviceToDevice, s->stream);
            if (ce != cudaSuccess)
                return ntp__cuda_rt(ctx, k, ce, "concatenating");
            off += p->chunk[i];
        }
        return NTP_STATUS_OK;
    }
    case M_SPLIT: {
        int64_t off = 0;
        for (int i = 0; i < k->n_out; i++) {
            ce = cudaMemcpy2DAsync(nd->out[i].d, (size_t)p->chunk[i], (const char *)x + off,
                                   (size_t)p->pitch, (size_t)p->chunk[i], (size_t)p->outer,
                                   cudaMemcpyDeviceToDevice, s->stream);
            if (ce != cudaSuccess)
                return ntp__cuda_rt(ctx, k, ce, "splitting");
            off += p->chunk[i];
        }
        return NTP_STATUS_OK;
    }
    case M_COPY:
        ce = cudaMemcpyAsync(y, x, (size_t)nd->out[0].bytes, cudaMemcpyDeviceToDevice, s->stream);
        return ce == cudaSuccess ? NTP_STATUS_OK : ntp__cuda_rt(ctx, k, ce, "copying");
    case M_TRANSPOSE:
        return kerr(ctx, k, ntp__cudak_gather(s->stream, es, p->nd, p->dims, x, p->st[0], y),
                    "the transpose kernel");
    case M_PAD:
        return kerr(ctx, k,
                    ntp__cudak_pad(s->stream, kt, p->nd, p->in_dims, p->dims, p->begin, p->mode,
                                   p->value, x, y),
                    "the pad kernel");
    case M_EMBEDDING:
        return kerr(ctx, k,
                    ntp__cudak_embedding(s->stream, kt, x, p->idx64, nd->wp[0], p->vocab, p->units,
                                         p->n / p->units, y),
                    "the embedding kernel");
    }
    return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL, "unknown layer kind");
}

/* --- prepare ------------------------------------------------------------------------- */

/* cuDNN pooling when its rules are the layer's: no dilation, symmetric
 * padding, and every window inside the padded input (floor mode, or a ceil
 * mode that adds no window). */
static bool dnn_pool_fits(const ntp_kargs *k, ntp_dtype t)
{
    const ntp_node *n = k->node;
    if (t == NTP_DTYPE_BF16)
        return false;
    if (n->op == NTP_OP_GLOBAL_MAXPOOL || n->op == NTP_OP_GLOBAL_AVGPOOL)
        return k->in[0].shape.ndim <= 5;
    const ntp_attrs *a = &n->a;
    int nk = a->nk;
    for (int d = 0; d < nk; d++) {
        int64_t in = k->in[0].shape.dim[2 + d], out = k->out[0].shape.dim[2 + d];
        if (a->dilation[d] != 1 || a->pad[d] != a->pad[nk + d] || a->pad[d] >= a->kernel[d] ||
            (in + 2 * a->pad[d] - a->kernel[d]) / a->stride[d] + 1 != out)
            return false;
    }
    return true;
}

static ntp_status prepare_pool(ntp_ctx *ctx, cudab_state *s, ntp_kargs *k, cudab_node *nd,
                               misc_priv *p)
{
    const ntp_node *n = k->node;
    const ntp_attrs *a = &n->a;
    const ntp_shape *xs = &k->in[0].shape, *ys = &k->out[0].shape;
    bool global = n->op == NTP_OP_GLOBAL_MAXPOOL || n->op == NTP_OP_GLOBAL_AVGPOOL;
    bool is_max = n->op == NTP_OP_MAXPOOL || n->op == NTP_OP_GLOBAL_MAXPOOL;
    bool incl = n->op == NTP_OP_AVGPOOL && a->count_include_pad;
    int nk = xs->ndim - 2;
    if (dnn_pool_fits(k, p->t)) {
        int sk = nk == 1 ? 2 : nk, lead = nk == 1 ? 1 : 0;
        int win[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, str[3] = {1, 1, 1};
        int64_t xd[5], yd[5];
        xd[0] = yd[0] = xs->dim[0];
        xd[1] = yd[1] = xs->dim[1];
        xd[2] = yd[2] = 1;
        for (int d = 0; d < nk; d++) {
            xd[2 + lead + d] = xs->dim[2 + d];
            yd[2 + lead + d] = ys->dim[2 + d];
            win[lead + d] = (int)(global ? xs->dim[2 + d] : a->kernel[d]);
            pad[lead + d] = global ? 0 : (int)a->pad[d];
            str[lead + d] = global ? 1 : (int)a->stride[d];
        }
        ntp_status st;
        if ((st = ntp__cuda_desc(ctx, k, &p->x, p->t, 2 + sk, xd, NULL)) ||
            (st = ntp__cuda_desc(ctx, k, &p->y, p->t, 2 + sk, yd, NULL)))
            return st;
        cudnnStatus_t e = cudnnCreatePoolingDescriptor(&p->pool);
        if (e == CUDNN_STATUS_SUCCESS)
            e = cudnnSetPoolingNdDescriptor(p->pool,
                                            is_max ? CUDNN_POOLING_MAX
                                            : incl ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                   : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
                                            CUDNN_PROPAGATE_NAN, sk, win, pad, str);
        if (e != CUDNN_STATUS_SUCCESS)
            return ntp__cuda_dnn(ctx, k, e, "pooling descriptor");
        p->kind = M_POOL_DNN;
        snprintf(nd->impl, sizeof nd->impl, "cudnn:pooling_%s", is_max ? "max" : "avg");
        return NTP_STATUS_OK;
    }
    /* The kernel: up to 3 spatial dims (leading ones 1); a global pool
     * over more is one flattened dim. */
    cudak_pool *g = &p->pg;
    memset(g, 0, sizeof *g);
    g->planes = xs->dim[0] * xs->dim[1];
    g->is_max = is_max;
    g->include_pad = incl;
    for (int i = 0; i < 3; i++) {
        g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
        g->pb[i] = g->pe[i] = 0;
    }
    if (global) {
        g->in[2] = g->k[2] = ntp_shape_numel(xs) / g->planes;
    } else {
        for (int i = 0; i < 3; i++) {
            int j = i - (3 - nk);
            if (j < 0)
                continue;
            g->in[i] = xs->dim[2 + j];
            g->out[i] = ys->dim[2 + j];
            g->k[i] = a->kernel[j];
            g->s[i] = a->stride[j];
            g->d[i] = a->dilation[j];
            g->pb[i] = a->pad[j];
            g->pe[i] = a->pad[nk + j];
        }
    }
    p->kind = M_POOL_K;
    (void)s;
    snprintf(nd->impl, sizeof nd->impl, "cuda:pool_kernel_%s", is_max ? "max" : "avg");
    return NTP_STATUS_OK;
}

/* Batch normalisation as y = a[c]·x + b[c], a = scale/√(var+ε) and
 * b = bias − mean·a, computed in double from the stored weights. */
static ntp_status prepare_affine(ntp_ctx *ctx, cudab_state *s, ntp_kargs *k, cudab_node *nd,
                                 misc_priv *p)
{
    const ntp_shape *xs = &k->in[0].shape;
    int64_t C = xs->dim[1];
    if (k->n_w != 4)
        return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL, "batchnorm takes 4 weights, got %d",
                               k->n_w);
    float *host = malloc((size_t)(2 * C) * sizeof *host);
    double *v[4];
    for (int i = 0; i < 4; i++)
        v[i] = malloc((size_t)C * sizeof(double));
    ntp_status st = NTP_STATUS_OK;
    if (!host || !v[0] || !v[1] || !v[2] || !v[3]) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
        goto done;
    }
    for (int i = 0; i < 4; i++) {
        if (ntp_shape_numel(&k->w[i].shape) != C) {
            st = ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL, "batchnorm weight %d is not [%lld]",
                                 i, (long long)C);
            goto done;
        }
        const void *w = k->w[i].data;
        for (int64_t c = 0; c < C; c++)
            v[i][c] = k->w[i].dtype == NTP_DTYPE_F16    ? ntp__f16_to_f32(((const uint16_t *)w)[c])
                      : k->w[i].dtype == NTP_DTYPE_BF16 ? ntp__bf16_to_f32(((const uint16_t *)w)[c])
                                                        : ((const float *)w)[c];
    }
    for (int64_t c = 0; c < C; c++) {
        double a = v[0][c] / sqrt(v[3][c] + k->node->a.epsilon);
        host[c] = (float)a;
        host[C + c] = (float)(v[1][c] - v[2][c] * a);
    }
    st = ntp__cuda_upload(ctx, s, k, &nd->w, host, 2 * C * (int64_t)sizeof(float),
                          "batchnorm factors");
    if (!st) {
        nd->w_bytes = 2 * C * (int64_t)sizeof(float);
        s->weight_bytes += nd->w_bytes;
        p->kind = M_AFFINE;
        p->channels = C;
        p->inner = ntp_shape_numel(xs) / (xs->dim[0] * C);
        snprintf(nd->impl, sizeof nd->impl, "cuda:affine_kernel");
    }
done:
    free(host);
    for (int i = 0; i < 4; i++)
        free(v[i]);
    return st;
}

static ntp_status prepare_binary(ntp_ctx *ctx, cudab_state *s, ntp_kargs *k, cudab_node *nd,
                                 misc_priv *p)
{
    const ntp_node *n = k->node;
    const ntp_shape *ys = &k->out[0].shape;
    p->nd = ys->ndim;
    for (int d = 0; d < ys->ndim; d++)
        p->dims[d] = ys->dim[d];
    for (int i = 0; i < k->n_in; i++)
        if (!bcast_strides(&k->in[i].shape, ys, p->st[i]))
            return ntp__cuda_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "input %d does not broadcast",
                                   i);
    p->bop = n->op == NTP_OP_ADD   ? CUDAK_ADD
             : n->op == NTP_OP_MUL ? CUDAK_MUL
             : n->op == NTP_OP_SUB ? CUDAK_SUB
             : n->op == NTP_OP_DIV ? CUDAK_DIV
             : n->op == NTP_OP_MAX ? CUDAK_MAX
                                   : CUDAK_MIN;
    p->full = -1;
    for (int i = 0; i < k->n_in && p->full < 0; i++)
        if (ntp_shape_equal(&k->in[i].shape, ys))
            p->full = i;
    bool dnn = (n->op == NTP_OP_ADD || n->op == NTP_OP_MUL) && p->t != NTP_DTYPE_BF16 &&
               p->full >= 0 && ys->ndim <= 5;
    if (!dnn) {
        p->kind = M_BINARY_K;
        snprintf(nd->impl, sizeof nd->impl, "cuda:broadcast_kernel");
        return NTP_STATUS_OK;
    }
    /* cuDNN's view: every input right-aligned to the output's rank, padded
     * to 4 or 5 dims (trailing 1s change nothing). */
    int r = ys->ndim < 4 ? 4 : ys->ndim;
    int64_t yd[5], id[5];
    for (int d = 0; d < r; d++)
        yd[d] = d < ys->ndim ? ys->dim[d] : 1;
    ntp_status st = ntp__cuda_desc(ctx, k, &p->y, p->t, r, yd, NULL);
    for (int i = 0; i < k->n_in && !st; i++) {
        const ntp_shape *is = &k->in[i].shape;
        for (int d = 0; d < r; d++) {
            int ds = d - (ys->ndim - is->ndim);
            id[d] = d < ys->ndim && ds >= 0 ? is->dim[ds] : 1;
        }
        st = ntp__cuda_desc(ctx, k, &p->in_desc[i], p->t, r, id, NULL);
    }
    if (st)
        return st;
    if (n->op == NTP_OP_MUL) {
        cudnnStatus_t e = cudnnCreateOpTensorDescriptor(&p->op);
        if (e == CUDNN_STATUS_SUCCESS)
            e = cudnnSetOpTensorDescriptor(p->op, CUDNN_OP_TENSOR_MUL, CUDNN_DATA_FLOAT,
                                           CUDNN_PROPAGATE_NAN);
        if (e != CUDNN_STATUS_SUCCESS)
            return ntp__cuda_dnn(ctx, k, e, "op-tensor descriptor");
        /* The ping-pong buffer of a product of 3 or more inputs. */
        if (k->n_in > 2)
            nd->ws = (size_t)nd->out[0].bytes;
    }
    (void)s;
    p->kind = M_BINARY_DNN;
    snprintf(nd->impl, sizeof nd->impl, "cudnn:%s",
             n->op == NTP_OP_ADD ? "add_tensor" : "op_tensor_mul");
    return NTP_STATUS_OK;
}

ntp_status ntp__cuda_misc_prepare(ntp_ctx *ctx, cudab_state *s, ntp_kargs *k, cudab_node *nd)
{
    const ntp_node *n = k->node;
    misc_priv *p = calloc(1, sizeof *p);
    if (!p)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    nd->priv = p;
    nd->free_priv = misc_free;
    nd->run = misc_run;
    p->t = k->out[0].dtype;
    p->n = ntp_shape_numel(&k->out[0].shape);
    if (!ntp__cuda_float_type(p->t))
        return ntp__cuda_error(ctx, k, NTP_STATUS_UNSUPPORTED, "output stored as %s",
                               ntp_dtype_name(p->t));
    for (int i = 0; i < k->n_in; i++)
        if (n->op != NTP_OP_EMBEDDING && k->in[i].dtype != p->t)
            return ntp__cuda_error(ctx, k, NTP_STATUS_UNSUPPORTED, "input %d is %s, output %s", i,
                                   ntp_dtype_name(k->in[i].dtype), ntp_dtype_name(p->t));
    const ntp_shape *xs = &k->in[0].shape, *ys = &k->out[0].shape;
    size_t es = ntp_dtype_size(p->t);
    switch (misc_op_of(n->op)) {
    case MISC_POOL:
    case MISC_GPOOL: return prepare_pool(ctx, s, k, nd, p);
    case MISC_BATCHNORM: return prepare_affine(ctx, s, k, nd, p);
    case MISC_LAYERNORM: {
        int64_t ax = norm_axis(n->a.axis, xs->ndim);
        p->len = 1;
        for (int d = (int)ax; d < xs->ndim; d++)
            p->len *= xs->dim[d];
        p->rows = p->n / p->len;
        p->eps = (float)n->a.epsilon;
        p->kind = M_LAYERNORM;
        snprintf(nd->impl, sizeof nd->impl, "cuda:layernorm_kernel");
        return ntp__cuda_upload_weights(ctx, s, k, nd, true);
    }
    case MISC_SOFTMAX: {
        int64_t ax = norm_axis(n->a.axis, xs->ndim);
        p->len = xs->dim[ax];
        p->inner = 1;
        for (int d = (int)ax + 1; d < xs->ndim; d++)
            p->inner *= xs->dim[d];
        p->outer = p->n / (p->len * p->inner);
        if (p->t == NTP_DTYPE_BF16) {
            p->kind = M_SOFTMAX_K;
            snprintf(nd->impl, sizeof nd->impl, "cuda:softmax_kernel");
            return NTP_STATUS_OK;
        }
        int64_t d4[4] = {p->outer, p->len, p->inner, 1};
        p->kind = M_SOFTMAX_DNN;
        snprintf(nd->impl, sizeof nd->impl, "cudnn:softmax_accurate");
        return ntp__cuda_desc(ctx, k, &p->x, p->t, 4, d4, NULL);
    }
    case MISC_BINARY: return prepare_binary(ctx, s, k, nd, p);
    case MISC_CONCAT_SPLIT: {
        int64_t ax = n->a.axis, inner = 1;
        const ntp_shape *whole = n->op == NTP_OP_CONCAT ? ys : xs;
        for (int d = (int)ax + 1; d < whole->ndim; d++)
            inner *= whole->dim[d];
        p->outer = 1;
        for (int d = 0; d < (int)ax; d++)
            p->outer *= whole->dim[d];
        p->pitch = whole->dim[ax] * inner * (int64_t)es;
        int parts = n->op == NTP_OP_CONCAT ? k->n_in : k->n_out;
        for (int i = 0; i < parts; i++) {
            const ntp_shape *sh = n->op == NTP_OP_CONCAT ? &k->in[i].shape : &k->out[i].shape;
            p->chunk[i] = sh->dim[ax] * inner * (int64_t)es;
        }
        p->kind = n->op == NTP_OP_CONCAT ? M_CONCAT : M_SPLIT;
        snprintf(nd->impl, sizeof nd->impl, "cuda:memcpy2d");
        return NTP_STATUS_OK;
    }
    case MISC_COPY:
        p->kind = M_COPY;
        snprintf(nd->impl, sizeof nd->impl, "cuda:memcpy");
        return NTP_STATUS_OK;
    case MISC_TRANSPOSE: {
        int64_t st[NTP_MAX_DIMS], acc = 1;
        for (int d = xs->ndim - 1; d >= 0; d--) {
            st[d] = acc;
            acc *= xs->dim[d];
        }
        p->nd = ys->ndim;
        for (int d = 0; d < ys->ndim; d++) {
            int64_t pd = n->a.n_perm == 0 ? xs->ndim - 1 - d : n->a.perm[d];
            if (pd < 0 || pd >= xs->ndim || ys->dim[d] != xs->dim[pd])
                return ntp__cuda_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                                       "perm does not fit the shapes");
            p->dims[d] = ys->dim[d];
            p->st[0][d] = st[pd];
        }
        p->kind = M_TRANSPOSE;
        snprintf(nd->impl, sizeof nd->impl, "cuda:gather_kernel");
        return NTP_STATUS_OK;
    }
    case MISC_PAD:
        p->nd = xs->ndim;
        for (int d = 0; d < xs->ndim; d++) {
            p->in_dims[d] = xs->dim[d];
            p->dims[d] = ys->dim[d];
            p->begin[d] = n->a.pads[d];
        }
        p->mode = n->a.pad_mode == NTP_PADMODE_CONSTANT  ? 0
                  : n->a.pad_mode == NTP_PADMODE_REFLECT ? 1
                                                         : 2;
        p->value = (float)n->a.value;
        p->kind = M_PAD;
        snprintf(nd->impl, sizeof nd->impl, "cuda:pad_kernel");
        return NTP_STATUS_OK;
    case MISC_EMBEDDING:
        if (k->n_w != 1 || k->w[0].shape.ndim != 2 || k->w[0].dtype != p->t)
            return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL, "embedding table");
        p->vocab = k->w[0].shape.dim[0];
        p->units = k->w[0].shape.dim[1];
        p->idx64 = k->in[0].dtype == NTP_DTYPE_I64;
        p->kind = M_EMBEDDING;
        snprintf(nd->impl, sizeof nd->impl, "cuda:embedding_kernel");
        return ntp__cuda_upload_weights(ctx, s, k, nd, false);
    case MISC_ACT:
        if (!ntp__cuda_act_fn(n, &p->act))
            return ntp__cuda_error(ctx, k, NTP_STATUS_UNSUPPORTED, "no CUDA implementation");
        p->kind = M_ACT;
        snprintf(nd->impl, sizeof nd->impl, "cuda:eltwise_kernel");
        return NTP_STATUS_OK;
    }
    return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL, "not an op of this family");
}
