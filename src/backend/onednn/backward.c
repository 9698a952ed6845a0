/* Training backward on oneDNN (docs/train.md), in f32 and plain row-major
 * layouts (ntp_backward_args): convolution and transposed convolution
 * backward data and backward weights (1-3 spatial dims, stride, padding,
 * dilation, groups), inner product backward data and weights, matmul
 * (both inputs' gradients as two matmul primitives over strided views:
 * dA = dC·Bᵀ, dB = Aᵀ·dC, the transposes as strides; a B shared over the
 * batch takes its gradient as one product over the batch folded into the
 * rows), pooling (max and average, global
 * too), the element-wise activations, softmax and log-softmax, and batch
 * and layer normalisation (the backward with the scale's and shift's
 * gradients); the recurrent layers' backward is in rnn-backward.c. The
 * first call for a layer and phase builds its
 * forward hint, the backward primitive and its memory objects, and keeps
 * them in the backend's state; later calls (the next steps) set the memory
 * objects' data handles and run it on the backend's stream. The first
 * step's time thus includes the primitive's creation.
 *
 * Max pooling's backward reads the forward's workspace (where each window's
 * maximum was); the trainer's forward ran on its reference engine, so the
 * backward-data call runs oneDNN's forward-training pooling on the layer's
 * input first, for the workspace, and its time includes it. oneDNN 2.6
 * has neither a weights-only backward for the norms nor (on the CPU) a
 * backward-data with a scale: a norm runs the whole backward (prop kind
 * backward) once, for whichever of diff_src, diff_scale and diff_shift the
 * caller gives, the others going to scratch memory of its own. */
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "core/numeric-impl.h"
#include "onednn-impl.h"

/* Where a memory object's data handle comes from at each call: one of
 * ntp_backward_args' buffers, or its own allocation (a workspace, a
 * scratch output). */
enum { H_OWN, H_X, H_W, H_DY, H_DX, H_DW, H_DB, H_Y, H_MEAN, H_VAR, H_X2, H_DX2, H_FWS };
/* The training forward's (mode 0): input k, weight k, its output and a
 * norm's statistics. */
enum { H_FIN = 32, H_FW = 48, H_FOUT = 64, H_FMEAN, H_FVAR };
enum { ODNN_BWD_MEMS = 16 };
/* A handle with H_OPT: the caller's buffer where it gives one, else
 * scratch memory of the primitive's own (a norm's outputs). */
enum { H_OPT = 0x100 };

/* One layer's backward primitive for one phase (mode 1 data, 2 weights, 3
 * a matmul's second input; 0 the training forward), its memory objects and
 * its arguments; fwd, when set, runs first (max pooling's workspace when
 * the forward ran elsewhere). ws: the forward's workspace memory, -1 none. */
struct odnn_bwd {
    const ntp_node *n;
    int mode;
    int ws;
    dnnl_primitive_t fwd, prim;
    int n_mem;
    dnnl_memory_t mem[ODNN_BWD_MEMS];
    int handle[ODNN_BWD_MEMS];
    int n_fargs, n_args;
    dnnl_exec_arg_t fargs[ODNN_BWD_MEMS], args[ODNN_BWD_MEMS];
    /* bf16 (mixed precision): the bf16 copy of each f32 buffer a bf16
     * memory reads (x, w, dy), converted at every call; NULL elsewhere. */
    uint16_t *cvt[ODNN_BWD_MEMS];
    int64_t cvt_n[ODNN_BWD_MEMS];
    /* The scratch of an H_OPT memory, allocated here (oneDNN would free a
     * buffer of its own once a handle replaced it). */
    void *own[ODNN_BWD_MEMS];
    /* A conv's blocked layouts (bridge): reorder k copies re_from into
     * re_to, before the primitive (an input into its blocked memory) or
     * after it (re_out: an output back into the caller's plain buffer).
     * The blocked memories, tmp, lie in the state's arena at tmp_off. */
    int n_re, n_tmp;
    dnnl_primitive_t re[ODNN_BWD_MEMS];
    dnnl_memory_t re_from[ODNN_BWD_MEMS], re_to[ODNN_BWD_MEMS];
    bool re_out[ODNN_BWD_MEMS];
    bool re_first[ODNN_BWD_MEMS]; /* an input reordered to the arena's start */
    dnnl_memory_t tmp[ODNN_BWD_MEMS];
    size_t tmp_off[ODNN_BWD_MEMS], tmp_bytes;
};

/* A failed dnnl call, as one line naming the layer. */
static ntp_status fail(ntp_ctx *ctx, const ntp_backward_args *a, dnnl_status_t st, const char *what)
{
    return ntp__dnnl_status_error(ctx, "onednn backward", a->g, a->n, st, what);
}

/* The families of layers with a backward here. */
typedef enum bwd_kind {
    BK_NONE,
    BK_CONV,
    BK_FC,
    BK_POOL,
    BK_ELTWISE,
    BK_SOFTMAX,
    BK_BNORM,
    BK_LNORM,
    BK_DECONV,
    BK_MATMUL,
} bwd_kind;

/* The family of each op with a backward here; BK_NONE (0) for the others.
 * The activations are those whose oneDNN backward matches the reference
 * engine's derivative everywhere, kinks included (relu'(0) = 0; a clipped
 * relu passes on (0, max], as oneDNN's clip does). Clip and hardswish take
 * their kinks differently and stay on ref. */
static const bwd_kind kinds[NTP_OP_COUNT] = {
    [NTP_OP_CONV] = BK_CONV,           [NTP_OP_FC] = BK_FC,
    [NTP_OP_MAXPOOL] = BK_POOL,        [NTP_OP_AVGPOOL] = BK_POOL,
    [NTP_OP_GLOBAL_MAXPOOL] = BK_POOL, [NTP_OP_GLOBAL_AVGPOOL] = BK_POOL,
    [NTP_OP_SOFTMAX] = BK_SOFTMAX,     [NTP_OP_LOG_SOFTMAX] = BK_SOFTMAX,
    [NTP_OP_BATCHNORM] = BK_BNORM,     [NTP_OP_LAYERNORM] = BK_LNORM,
    [NTP_OP_RELU] = BK_ELTWISE,        [NTP_OP_LEAKY_RELU] = BK_ELTWISE,
    [NTP_OP_SIGMOID] = BK_ELTWISE,     [NTP_OP_TANH] = BK_ELTWISE,
    [NTP_OP_GELU] = BK_ELTWISE,        [NTP_OP_SILU] = BK_ELTWISE,
    [NTP_OP_SOFTPLUS] = BK_ELTWISE,    [NTP_OP_EXP] = BK_ELTWISE,
    [NTP_OP_NEG] = BK_ELTWISE,         [NTP_OP_ABS] = BK_ELTWISE,
    [NTP_OP_DECONV] = BK_DECONV,       [NTP_OP_MATMUL] = BK_MATMUL,
};

static bwd_kind kind_of(ntp_op op)
{
    return (unsigned)op < NTP_OP_COUNT ? kinds[op] : BK_NONE;
}

/* The layer norm's rows and row length: the dims from its axis on. */
static void lnorm_rows(const ntp_shape *xs, const ntp_node *n, int64_t *R, int64_t *D)
{
    int64_t axis = n->a.axis < 0 ? n->a.axis + xs->ndim : n->a.axis;
    *D = 1;
    for (int d = (int)axis; d < xs->ndim; d++)
        *D *= xs->dim[d];
    *R = ntp_shape_numel(xs) / *D;
}

/* A matmul's operands as its backward reads them: A, B and C at C's rank r
 * (leading 1s), every batch dim of A C's; B's all C's or all 1 (shared
 * over the batch: then, with more than one batch, the batch folds into
 * the rows of A and C, rank 2, which needs an A that is not transposed).
 * Other broadcasts stay on ref. */
typedef struct mm_geom {
    int r;
    int64_t a[DNNL_MAX_NDIMS], b[DNNL_MAX_NDIMS], c[DNNL_MAX_NDIMS];
} mm_geom;

static bool mm_geometry(const ntp_graph *g, const ntp_node *n, mm_geom *m)
{
    const ntp_shape *as = &g->tensors[n->in[0]].shape, *bs = &g->tensors[n->in[1]].shape;
    const ntp_shape *cs = &g->tensors[n->out[0]].shape;
    int r = cs->ndim;
    if (r < 2 || r > DNNL_MAX_NDIMS || as->ndim < 2 || as->ndim > r || bs->ndim < 2 || bs->ndim > r)
        return false;
    int64_t batch = 1;
    bool b_full = true, b_shared = true;
    for (int i = 0; i < r; i++) {
        m->a[i] = i < r - as->ndim ? 1 : as->dim[i - (r - as->ndim)];
        m->b[i] = i < r - bs->ndim ? 1 : bs->dim[i - (r - bs->ndim)];
        m->c[i] = cs->dim[i];
        if (i >= r - 2)
            continue;
        batch *= m->c[i];
        if (m->a[i] != m->c[i])
            return false;
        b_full = b_full && m->b[i] == m->c[i];
        b_shared = b_shared && m->b[i] == 1;
    }
    m->r = r;
    if (b_full || batch == 1)
        return true;
    if (!b_shared || n->a.transpose_a)
        return false;
    int64_t rows = batch * m->c[r - 2];
    m->a[0] = rows;
    m->a[1] = m->a[r - 1];
    m->c[0] = rows;
    m->c[1] = m->c[r - 1];
    m->b[0] = m->b[r - 2];
    m->b[1] = m->b[r - 1];
    m->r = 2;
    return true;
}

/* The end padding of a conv (or a deconv, whose dst is the bigger side)
 * in spatial dim i: what the bigger side's size implies. */
static int64_t end_pad(const ntp_node *n, int i, int64_t small, int64_t big)
{
    int64_t k = n->a.kernel[i], s = n->a.stride[i], dl = n->a.dilation[i];
    return (small - 1) * s + (k - 1) * dl + 1 - big - n->a.pad[i];
}

bool ntp__odnn_supports_backward(const ntp_graph *g, const ntp_node *n)
{
    mm_geom mm;
    if (n->op == NTP_OP_LSTM || n->op == NTP_OP_GRU || n->op == NTP_OP_RNN)
        return ntp__odnn_rnn_supports_backward(g, n);
    if (n->op == NTP_OP_MATMUL)
        return n->n_in == 2 && n->n_out == 1 && mm_geometry(g, n, &mm);
    if (n->n_in != 1 || n->n_out != 1)
        return false;
    const ntp_shape *xs = &g->tensors[n->in[0]].shape;
    int nd = xs->ndim;
    dnnl_dims_t k, st, dl, pl, pr;
    switch (kind_of(n->op)) {
    case BK_FC: return n->n_w >= 1;
    case BK_CONV: return n->n_w >= 1 && nd >= 3 && nd <= 5;
    case BK_DECONV: {
        /* An output padding beyond the end padding would need a negative
         * end padding: ref. */
        const ntp_shape *ys = &g->tensors[n->out[0]].shape;
        if (n->n_w < 1 || nd < 3 || nd > 5)
            return false;
        for (int i = 0; i < nd - 2; i++)
            if (end_pad(n, i, xs->dim[2 + i], ys->dim[2 + i]) < 0)
                return false;
        return true;
    }
    case BK_POOL:
        if (nd < 3 || nd > 5 || !ntp__dnnl_pool_geometry(g, n, k, st, dl, pl, pr))
            return false;
        /* The reference engine dilates average windows too; oneDNN's
         * geometry only max pooling's. */
        for (int d = 0; n->op == NTP_OP_AVGPOOL && d < nd - 2; d++)
            if (n->a.dilation[d] > 1)
                return false;
        return true;
    case BK_ELTWISE: return nd >= 1 && nd <= DNNL_MAX_NDIMS;
    case BK_SOFTMAX: {
        int64_t axis = n->a.axis < 0 ? n->a.axis + nd : n->a.axis;
        return nd >= 1 && nd <= DNNL_MAX_NDIMS && axis >= 0 && axis < nd;
    }
    case BK_BNORM: return n->n_w >= 2 && nd >= 2 && nd <= 5;
    case BK_LNORM: {
        int64_t axis = n->a.axis < 0 ? n->a.axis + nd : n->a.axis;
        return n->n_w >= 2 && nd >= 1 && axis >= 0 && axis < nd;
    }
    case BK_MATMUL: /* handled before the switch */
    case BK_NONE: return false;
    }
    return false;
}

/* The descriptors of one layer: src (its input), weights (a norm's
 * scale), bias, dst (its output), stat (a norm's mean and variance), and
 * the geometry of a conv or a pooling (oneDNN counts dilation from 0). */
typedef struct bwd_desc {
    bwd_kind kind;
    dnnl_memory_desc_t src, wei, bias, dst, stat;
    /* diff_src and diff_weights: src and wei, but f32 where those are bf16
     * (a->bf16: conv and fc read bf16 and write f32 gradients). */
    dnnl_memory_desc_t dsrc, dwei;
    bool bf16;
    bool has_bias;
    dnnl_dims_t kernel, strides, dil, pl, pr;
    dnnl_alg_kind_t alg;
    float alpha, beta, eps;
    int axis;
    unsigned flags;
    int h_src, h_wei, h_dst; /* matmul: where its three memories come from */
} bwd_desc;

/* A matmul operand of rank r, stored row-major with dims `dims`, as oneDNN
 * reads it: transposed (the last two dims swapped, as strides) or not. */
static dnnl_status_t mm_view(dnnl_memory_desc_t *md, int r, const int64_t *dims, bool tr)
{
    dnnl_dims_t d, st;
    int64_t stride = 1;
    for (int i = r - 1; i >= 0; i--) {
        d[i] = dims[i];
        st[i] = stride;
        stride *= dims[i];
    }
    if (tr) {
        int64_t t = d[r - 2], u = st[r - 2];
        d[r - 2] = d[r - 1];
        st[r - 2] = st[r - 1];
        d[r - 1] = t;
        st[r - 1] = u;
    }
    return dnnl_memory_desc_init_by_strides(md, r, d, dnnl_f32, st);
}

/* A matmul's backward as a product src·wei = dst: mode 1 the gradient of
 * A (dA = dC·Bᵀ; transposed A: Aᵀ's gradient B·dCᵀ), mode 3 that of B
 * (dB = Aᵀ·dC; transposed B: dCᵀ·A). */
static dnnl_status_t describe_matmul(const ntp_backward_args *a, int mode, bwd_desc *d)
{
    mm_geom m;
    if (!mm_geometry(a->g, a->n, &m))
        return dnnl_unimplemented;
    bool ta = a->n->a.transpose_a, tb = a->n->a.transpose_b;
    dnnl_status_t st;
    const int64_t *P, *Q;
    bool tp, tq;
    if (mode == 1) {
        P = ta ? m.b : m.c;
        tp = ta ? tb : false;
        Q = ta ? m.c : m.b;
        tq = ta ? true : !tb;
        d->h_src = ta ? H_X2 : H_DY;
        d->h_wei = ta ? H_DY : H_X2;
        d->h_dst = H_DX;
    } else {
        P = tb ? m.c : m.a;
        tp = tb ? true : !ta;
        Q = tb ? m.a : m.c;
        tq = tb ? ta : false;
        d->h_src = tb ? H_DY : H_X;
        d->h_wei = tb ? H_X : H_DY;
        d->h_dst = H_DX2;
    }
    if ((st = mm_view(&d->src, m.r, P, tp)) || (st = mm_view(&d->wei, m.r, Q, tq)))
        return st;
    return mm_view(&d->dst, m.r, mode == 1 ? m.a : m.b, false);
}

static dnnl_status_t describe_f32(const ntp_backward_args *a, int mode, bwd_desc *d)
{
    const ntp_graph *g = a->g;
    const ntp_node *n = a->n;
    const ntp_shape *xs = &g->tensors[n->in[0]].shape, *ys = &g->tensors[n->out[0]].shape;
    dnnl_status_t st;
    memset(d, 0, sizeof *d);
    d->kind = kind_of(n->op);
    d->has_bias = n->n_w > 1;
    d->eps = (float)n->a.epsilon;
    d->flags = dnnl_use_scale | dnnl_use_shift;
    if (d->kind == BK_MATMUL)
        return describe_matmul(a, mode, d);
    switch (d->kind) {
    case BK_FC: {
        int64_t K = xs->dim[xs->ndim - 1], F = n->a.units, R = ntp_shape_numel(xs) / K;
        int64_t sd[2] = {R, K}, wd[2] = {F, K}, dd[2] = {R, F}, bd[1] = {F};
        if ((st = ntp__dnnl_plain_dims(&d->src, 2, sd, dnnl_f32)) ||
            (st = ntp__dnnl_plain_dims(&d->wei, 2, wd, dnnl_f32)) ||
            (st = ntp__dnnl_plain_dims(&d->dst, 2, dd, dnnl_f32)))
            return st;
        return d->has_bias ? ntp__dnnl_plain_dims(&d->bias, 1, bd, dnnl_f32) : dnnl_success;
    }
    case BK_CONV: {
        int nk = xs->ndim - 2;
        int64_t G = n->a.groups > 0 ? n->a.groups : 1, C = xs->dim[1], F = ys->dim[1];
        int64_t wd[6], nw = 0;
        if (G > 1)
            wd[nw++] = G;
        wd[nw++] = F / G;
        wd[nw++] = C / G;
        for (int i = 0; i < nk; i++) {
            int64_t k = n->a.kernel[i], s = n->a.stride[i], dl = n->a.dilation[i];
            wd[nw++] = k;
            d->strides[i] = s;
            d->dil[i] = dl - 1;
            d->pl[i] = n->a.pad[i];
            /* The end padding the output's size implies. */
            d->pr[i] = (ys->dim[2 + i] - 1) * s + (k - 1) * dl + 1 - xs->dim[2 + i] - d->pl[i];
        }
        int64_t bd[1] = {F};
        if ((st = ntp__dnnl_plain_md(&d->src, xs, dnnl_f32)) ||
            (st = ntp__dnnl_plain_dims(&d->wei, (int)nw, wd, dnnl_f32)) ||
            (st = ntp__dnnl_plain_md(&d->dst, ys, dnnl_f32)))
            return st;
        return d->has_bias ? ntp__dnnl_plain_dims(&d->bias, 1, bd, dnnl_f32) : dnnl_success;
    }
    case BK_DECONV: {
        /* ONNX's W [C, F/G, k...] is oneDNN's [G, F/G, C/G, k...] with
         * the two channel dims' strides swapped. */
        int nk = xs->ndim - 2;
        int64_t G = n->a.groups > 0 ? n->a.groups : 1, C = xs->dim[1], F = ys->dim[1], ks = 1;
        dnnl_dims_t wd, ws;
        int nw = G > 1 ? 3 : 2;
        for (int i = nk - 1; i >= 0; i--) {
            wd[nw + i] = n->a.kernel[i];
            ws[nw + i] = ks;
            ks *= n->a.kernel[i];
            d->strides[i] = n->a.stride[i];
            d->dil[i] = n->a.dilation[i] - 1;
            d->pl[i] = n->a.pad[i];
            d->pr[i] = end_pad(n, i, xs->dim[2 + i], ys->dim[2 + i]);
        }
        wd[nw - 2] = F / G;
        ws[nw - 2] = ks;
        wd[nw - 1] = C / G;
        ws[nw - 1] = (F / G) * ks;
        if (G > 1) {
            wd[0] = G;
            ws[0] = (C / G) * (F / G) * ks;
        }
        int64_t bd[1] = {F};
        if ((st = ntp__dnnl_plain_md(&d->src, xs, dnnl_f32)) ||
            (st = dnnl_memory_desc_init_by_strides(&d->wei, nw + nk, wd, dnnl_f32, ws)) ||
            (st = ntp__dnnl_plain_md(&d->dst, ys, dnnl_f32)))
            return st;
        return d->has_bias ? ntp__dnnl_plain_dims(&d->bias, 1, bd, dnnl_f32) : dnnl_success;
    }
    case BK_POOL:
        if (!ntp__dnnl_pool_geometry(g, n, d->kernel, d->strides, d->dil, d->pl, d->pr))
            return dnnl_unimplemented;
        if (n->op == NTP_OP_MAXPOOL || n->op == NTP_OP_GLOBAL_MAXPOOL)
            d->alg = dnnl_pooling_max;
        else if (n->op == NTP_OP_AVGPOOL && n->a.count_include_pad)
            d->alg = dnnl_pooling_avg_include_padding;
        else
            d->alg = dnnl_pooling_avg_exclude_padding;
        if ((st = ntp__dnnl_plain_md(&d->src, xs, dnnl_f32)))
            return st;
        return ntp__dnnl_plain_md(&d->dst, ys, dnnl_f32);
    case BK_ELTWISE:
        if (!ntp__dnnl_eltwise_alg(n, &d->alg, &d->alpha, &d->beta))
            return dnnl_unimplemented;
        return ntp__dnnl_plain_md(&d->src, xs, dnnl_f32);
    case BK_SOFTMAX:
        d->axis = (int)(n->a.axis < 0 ? n->a.axis + xs->ndim : n->a.axis);
        return ntp__dnnl_plain_md(&d->src, xs, dnnl_f32);
    case BK_BNORM: {
        int64_t cd[1] = {xs->dim[1]};
        if ((st = ntp__dnnl_plain_md(&d->src, xs, dnnl_f32)) ||
            (st = ntp__dnnl_plain_dims(&d->wei, 1, cd, dnnl_f32)))
            return st;
        return ntp__dnnl_plain_dims(&d->stat, 1, cd, dnnl_f32);
    }
    case BK_LNORM: {
        int64_t R, D;
        lnorm_rows(xs, n, &R, &D);
        int64_t sd[2] = {R, D}, wd[1] = {D}, rd[1] = {R};
        if ((st = ntp__dnnl_plain_dims(&d->src, 2, sd, dnnl_f32)) ||
            (st = ntp__dnnl_plain_dims(&d->wei, 1, wd, dnnl_f32)))
            return st;
        return ntp__dnnl_plain_dims(&d->stat, 1, rd, dnnl_f32);
    }
    case BK_MATMUL: /* described by describe_matmul */
    case BK_NONE: return dnnl_unimplemented;
    }
    return dnnl_unimplemented;
}

/* The layer's descriptors; with a->bf16 a conv's or an fc's src, weights
 * and dst (diff_dst) are bf16, as oneDNN's bf16 training takes them, and
 * its diff_src, diff_weights and bias f32. */
static dnnl_status_t describe(const ntp_backward_args *a, int mode, bwd_desc *d)
{
    dnnl_status_t st = describe_f32(a, mode, d);
    d->dsrc = d->src;
    d->dwei = d->wei;
    if (!st && a->bf16) {
        if (d->kind != BK_CONV && d->kind != BK_FC)
            return dnnl_unimplemented;
        d->bf16 = true;
        d->src.data_type = d->wei.data_type = d->dst.data_type = dnnl_bf16;
    }
    return st;
}

/* The op descriptors oneDNN takes, by kind. */
typedef union bwd_op_desc {
    dnnl_convolution_desc_t conv;
    dnnl_deconvolution_desc_t deconv;
    dnnl_matmul_desc_t mm;
    dnnl_inner_product_desc_t ip;
    dnnl_pooling_v2_desc_t pool;
    dnnl_eltwise_desc_t elt;
    dnnl_softmax_desc_t sm;
    dnnl_logsoftmax_desc_t lsm;
    dnnl_batch_normalization_desc_t bn;
    dnnl_layer_normalization_desc_t ln;
} bwd_op_desc;

/* A conv's descriptors with the layouts left to oneDNN (format_tag_any):
 * its blocked formats run its direct (jit) kernels, where plain ones take
 * im2col and a gemm. bridge() reorders the plain buffers in and out. */
static dnnl_status_t any_layouts(const bwd_desc *d, bwd_desc *a)
{
    *a = *d;
    const dnnl_memory_desc_t *from[4] = {&d->src, &d->wei, &d->dst, &d->dsrc};
    dnnl_memory_desc_t *to[4] = {&a->src, &a->wei, &a->dst, &a->dsrc};
    dnnl_status_t st = dnnl_success;
    for (int i = 0; i < 4 && !st; i++)
        st = dnnl_memory_desc_init_by_tag(to[i], from[i]->ndims, from[i]->dims, from[i]->data_type,
                                          dnnl_format_tag_any);
    a->dwei = d->dwei;
    if (!st)
        st = dnnl_memory_desc_init_by_tag(&a->dwei, d->dwei.ndims, d->dwei.dims, d->dwei.data_type,
                                          dnnl_format_tag_any);
    return st;
}

/* The forward training descriptor, the hint of every backward one. */
static dnnl_status_t forward_pd(odnn_state *s, const ntp_node *n, const bwd_desc *d,
                                dnnl_primitive_desc_t *pd)
{
    bwd_op_desc od;
    bwd_desc any;
    dnnl_status_t st = dnnl_unimplemented;
    const dnnl_prop_kind_t fw = dnnl_forward_training;
    switch (d->kind) {
    case BK_CONV:
        if ((st = any_layouts(d, &any)))
            break;
        st = dnnl_dilated_convolution_forward_desc_init(
            &od.conv, fw, dnnl_convolution_direct, &any.src, &any.wei,
            d->has_bias ? &d->bias : NULL, &any.dst, d->strides, d->dil, d->pl, d->pr);
        break;
    case BK_DECONV:
        st = dnnl_dilated_deconvolution_forward_desc_init(
            &od.deconv, fw, dnnl_deconvolution_direct, &d->src, &d->wei,
            d->has_bias ? &d->bias : NULL, &d->dst, d->strides, d->dil, d->pl, d->pr);
        break;
    case BK_FC:
        st = dnnl_inner_product_forward_desc_init(&od.ip, fw, &d->src, &d->wei,
                                                  d->has_bias ? &d->bias : NULL, &d->dst);
        break;
    case BK_POOL:
        st = dnnl_pooling_v2_forward_desc_init(&od.pool, fw, d->alg, &d->src, &d->dst, d->strides,
                                               d->kernel, d->dil, d->pl, d->pr);
        break;
    case BK_ELTWISE:
        st = dnnl_eltwise_forward_desc_init(&od.elt, fw, d->alg, &d->src, d->alpha, d->beta);
        break;
    case BK_SOFTMAX:
        st = n->op == NTP_OP_LOG_SOFTMAX
                 ? dnnl_logsoftmax_forward_desc_init(&od.lsm, fw, &d->src, d->axis)
                 : dnnl_softmax_forward_desc_init(&od.sm, fw, &d->src, d->axis);
        break;
    case BK_BNORM:
        st = dnnl_batch_normalization_forward_desc_init(&od.bn, fw, &d->src, d->eps, d->flags);
        break;
    case BK_LNORM:
        st = dnnl_layer_normalization_forward_desc_init(&od.ln, fw, &d->src, &d->stat, d->eps,
                                                        d->flags);
        break;
    case BK_MATMUL: /* no forward hint: its backward is a matmul */
    case BK_NONE: break;
    }
    return st ? st : dnnl_primitive_desc_create(pd, &od, NULL, s->eng, NULL);
}

static dnnl_status_t backward_pd(odnn_state *s, const ntp_node *n, const bwd_desc *d, int mode,
                                 const_dnnl_primitive_desc_t hint, dnnl_primitive_desc_t *pd)
{
    bwd_op_desc od;
    bwd_desc any;
    dnnl_status_t st = dnnl_unimplemented;
    /* Norms: oneDNN 2.6 has no backward-data with a scale (unimplemented
     * on the CPU), so the whole backward runs, once for both phases. */
    const dnnl_prop_kind_t prop = dnnl_backward;
    switch (d->kind) {
    case BK_CONV:
        if ((st = any_layouts(d, &any)))
            break;
        st = mode == 1
                 ? dnnl_dilated_convolution_backward_data_desc_init(
                       &od.conv, dnnl_convolution_direct, &any.dsrc, &any.wei, &any.dst, d->strides,
                       d->dil, d->pl, d->pr)
                 : dnnl_dilated_convolution_backward_weights_desc_init(
                       &od.conv, dnnl_convolution_direct, &any.src, &any.dwei,
                       d->has_bias ? &d->bias : NULL, &any.dst, d->strides, d->dil, d->pl, d->pr);
        break;
    case BK_DECONV:
        st = mode == 1
                 ? dnnl_dilated_deconvolution_backward_data_desc_init(
                       &od.deconv, dnnl_deconvolution_direct, &d->src, &d->wei, &d->dst, d->strides,
                       d->dil, d->pl, d->pr)
                 : dnnl_dilated_deconvolution_backward_weights_desc_init(
                       &od.deconv, dnnl_deconvolution_direct, &d->src, &d->wei,
                       d->has_bias ? &d->bias : NULL, &d->dst, d->strides, d->dil, d->pl, d->pr);
        break;
    case BK_MATMUL: st = dnnl_matmul_desc_init(&od.mm, &d->src, &d->wei, NULL, &d->dst); break;
    case BK_FC:
        st = mode == 1
                 ? dnnl_inner_product_backward_data_desc_init(&od.ip, &d->dsrc, &d->wei, &d->dst)
                 : dnnl_inner_product_backward_weights_desc_init(
                       &od.ip, &d->src, &d->dwei, d->has_bias ? &d->bias : NULL, &d->dst);
        break;
    case BK_POOL:
        st = dnnl_pooling_v2_backward_desc_init(&od.pool, d->alg, &d->src, &d->dst, d->strides,
                                                d->kernel, d->dil, d->pl, d->pr);
        break;
    case BK_ELTWISE:
        st = dnnl_eltwise_backward_desc_init(&od.elt, d->alg, &d->src, &d->src, d->alpha, d->beta);
        break;
    case BK_SOFTMAX:
        st = n->op == NTP_OP_LOG_SOFTMAX
                 ? dnnl_logsoftmax_backward_desc_init(&od.lsm, &d->src, &d->src, d->axis)
                 : dnnl_softmax_backward_desc_init(&od.sm, &d->src, &d->src, d->axis);
        break;
    case BK_BNORM:
        st = dnnl_batch_normalization_backward_desc_init(&od.bn, prop, &d->src, &d->src, d->eps,
                                                         d->flags);
        break;
    case BK_LNORM:
        st = dnnl_layer_normalization_backward_desc_init(&od.ln, prop, &d->src, &d->src, &d->stat,
                                                         d->eps, d->flags);
        break;
    case BK_NONE: break;
    }
    return st ? st : dnnl_primitive_desc_create(pd, &od, NULL, s->eng, hint);
}

void ntp__odnn_backward_release(odnn_state *s)
{
    for (int i = 0; i < s->n_bwd; i++) {
        dnnl_primitive_destroy(s->bwd[i].prim);
        dnnl_primitive_destroy(s->bwd[i].fwd);
        for (int k = 0; k < s->bwd[i].n_mem; k++) {
            dnnl_memory_destroy(s->bwd[i].mem[k]);
            free(s->bwd[i].cvt[k]);
            free(s->bwd[i].own[k]);
        }
        for (int k = 0; k < s->bwd[i].n_re; k++)
            dnnl_primitive_destroy(s->bwd[i].re[k]);
        for (int k = 0; k < s->bwd[i].n_tmp; k++)
            dnnl_memory_destroy(s->bwd[i].tmp[k]);
    }
    free(s->bwd);
    s->bwd = NULL;
    s->n_bwd = 0;
    free(s->arena);
    s->arena = NULL;
    s->arena_bytes = 0;
    s->held = false;
    ntp__odnn_rnn_backward_release(s);
}

/* A memory object of e for descriptor md, its handle from h (H_OWN:
 * allocated here); its index, or -1 with *st set. */
static int add_mem(odnn_state *s, struct odnn_bwd *e, const dnnl_memory_desc_t *md, int h,
                   dnnl_status_t *st)
{
    if (*st)
        return -1;
    if (e->n_mem == ODNN_BWD_MEMS) {
        *st = dnnl_runtime_error;
        return -1;
    }
    *st = dnnl_memory_create(&e->mem[e->n_mem], md, s->eng,
                             h == H_OWN ? DNNL_MEMORY_ALLOCATE : DNNL_MEMORY_NONE);
    if (*st)
        return -1;
    if (h & H_OPT) {
        if (!(e->own[e->n_mem] = malloc(dnnl_memory_desc_get_size(md) + 1))) {
            dnnl_memory_destroy(e->mem[e->n_mem]);
            *st = dnnl_out_of_memory;
            return -1;
        }
    } else if (md->data_type == dnnl_bf16 && h != H_OWN) {
        e->cvt_n[e->n_mem] = (int64_t)(dnnl_memory_desc_get_size(md) / sizeof(uint16_t));
        if (!(e->cvt[e->n_mem] = malloc((size_t)e->cvt_n[e->n_mem] * sizeof(uint16_t) + 1))) {
            *st = dnnl_out_of_memory;
            return -1;
        }
    }
    e->handle[e->n_mem] = h;
    return e->n_mem++;
}

/* Argument `arg` of the backward primitive (or of the forward, fwd) is
 * memory m. */
static void add_arg(struct odnn_bwd *e, bool fwd, int arg, int m)
{
    if (m < 0)
        return;
    if (fwd)
        e->fargs[e->n_fargs++] = (dnnl_exec_arg_t){arg, e->mem[m]};
    else
        e->args[e->n_args++] = (dnnl_exec_arg_t){arg, e->mem[m]};
}

/* Layer n's primitive for phase mode, or NULL when not built yet. */
static struct odnn_bwd *find_entry(odnn_state *s, const ntp_node *n, int mode)
{
    for (int i = 0; i < s->n_bwd; i++)
        if (s->bwd[i].n == n && s->bwd[i].mode == mode)
            return &s->bwd[i];
    return NULL;
}

/* Room for one more primitive in s's table, or NULL (ctx says why, in the
 * words of `what`): the caller builds into it, then counts it. */
static struct odnn_bwd *grow_entries(ntp_ctx *ctx, odnn_state *s, const char *what)
{
    struct odnn_bwd *grown = realloc(s->bwd, (size_t)(s->n_bwd + 1) * sizeof *grown);
    if (!grown) {
        (void)ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory", what);
        return NULL;
    }
    s->bwd = grown;
    return &s->bwd[s->n_bwd];
}

/* The memory objects and arguments of each kind and phase. Data:
 * diff_src from diff_dst and what the layer's derivative reads; weights:
 * diff_weights and diff_bias (a norm's diff_scale and diff_shift). */
static dnnl_status_t wire(odnn_state *s, const bwd_desc *d, int mode,
                          const_dnnl_primitive_desc_t fpd, struct odnn_bwd *e)
{
    dnnl_status_t st = dnnl_success;
    if (d->kind == BK_MATMUL) {
        add_arg(e, false, DNNL_ARG_SRC, add_mem(s, e, &d->src, d->h_src, &st));
        add_arg(e, false, DNNL_ARG_WEIGHTS, add_mem(s, e, &d->wei, d->h_wei, &st));
        add_arg(e, false, DNNL_ARG_DST, add_mem(s, e, &d->dst, d->h_dst, &st));
        return st;
    }
    bool own_dst =
        d->kind == BK_CONV || d->kind == BK_FC || d->kind == BK_POOL || d->kind == BK_DECONV;
    add_arg(e, false, DNNL_ARG_DIFF_DST, add_mem(s, e, own_dst ? &d->dst : &d->src, H_DY, &st));
    switch (d->kind) {
    case BK_CONV:
    case BK_DECONV:
    case BK_FC:
        if (mode == 1) {
            add_arg(e, false, DNNL_ARG_WEIGHTS, add_mem(s, e, &d->wei, H_W, &st));
            add_arg(e, false, DNNL_ARG_DIFF_SRC, add_mem(s, e, &d->dsrc, H_DX, &st));
        } else {
            add_arg(e, false, DNNL_ARG_SRC, add_mem(s, e, &d->src, H_X, &st));
            add_arg(e, false, DNNL_ARG_DIFF_WEIGHTS, add_mem(s, e, &d->dwei, H_DW, &st));
            if (d->has_bias)
                add_arg(e, false, DNNL_ARG_DIFF_BIAS, add_mem(s, e, &d->bias, H_DB, &st));
        }
        break;
    case BK_POOL: {
        add_arg(e, false, DNNL_ARG_DIFF_SRC, add_mem(s, e, &d->src, H_DX, &st));
        if (d->alg != dnnl_pooling_max)
            break;
        const dnnl_memory_desc_t *ws =
            dnnl_primitive_desc_query_md(fpd, dnnl_query_workspace_md, 0);
        if (!ws || dnnl_memory_desc_get_size(ws) == 0)
            return st ? st : dnnl_unimplemented;
        /* The training forward ran on oneDNN: its workspace, as it left it. */
        const struct odnn_bwd *f = find_entry(s, e->n, 0);
        if (f && f->ws >= 0) {
            const dnnl_memory_desc_t *fws = NULL;
            if (!st)
                st = dnnl_memory_get_memory_desc(f->mem[f->ws], &fws);
            if (!st && dnnl_memory_desc_equal(fws, ws)) {
                add_arg(e, false, DNNL_ARG_WORKSPACE, add_mem(s, e, ws, H_FWS, &st));
                break;
            }
        }
        int w = add_mem(s, e, ws, H_OWN, &st);
        add_arg(e, true, DNNL_ARG_SRC, add_mem(s, e, &d->src, H_X, &st));
        add_arg(e, true, DNNL_ARG_DST, add_mem(s, e, &d->dst, H_OWN, &st));
        add_arg(e, true, DNNL_ARG_WORKSPACE, w);
        add_arg(e, false, DNNL_ARG_WORKSPACE, w);
        break;
    }
    case BK_ELTWISE:
        add_arg(e, false, DNNL_ARG_SRC, add_mem(s, e, &d->src, H_X, &st));
        add_arg(e, false, DNNL_ARG_DIFF_SRC, add_mem(s, e, &d->src, H_DX, &st));
        break;
    case BK_SOFTMAX:
        add_arg(e, false, DNNL_ARG_DST, add_mem(s, e, &d->src, H_Y, &st));
        add_arg(e, false, DNNL_ARG_DIFF_SRC, add_mem(s, e, &d->src, H_DX, &st));
        break;
    case BK_BNORM:
    case BK_LNORM:
        add_arg(e, false, DNNL_ARG_SRC, add_mem(s, e, &d->src, H_X, &st));
        add_arg(e, false, DNNL_ARG_MEAN, add_mem(s, e, &d->stat, H_MEAN, &st));
        add_arg(e, false, DNNL_ARG_VARIANCE, add_mem(s, e, &d->stat, H_VAR, &st));
        add_arg(e, false, DNNL_ARG_SCALE, add_mem(s, e, &d->wei, H_W, &st));
        /* oneDNN asks for the shift, which no gradient reads: scratch. */
        add_arg(e, false, DNNL_ARG_SHIFT, add_mem(s, e, &d->wei, H_OWN, &st));
        /* One call gives all three; what the caller does not ask for
         * goes to scratch. */
        add_arg(e, false, DNNL_ARG_DIFF_SRC, add_mem(s, e, &d->src, H_DX | H_OPT, &st));
        add_arg(e, false, DNNL_ARG_DIFF_SCALE, add_mem(s, e, &d->wei, H_DW | H_OPT, &st));
        add_arg(e, false, DNNL_ARG_DIFF_SHIFT, add_mem(s, e, &d->wei, H_DB | H_OPT, &st));
        break;
    case BK_MATMUL: /* wired before the switch */
    case BK_NONE: st = dnnl_unimplemented; break;
    }
    return st;
}

/* Whether exec argument `arg` is one the primitive writes. */
static bool writes_arg(int arg, bool fwd)
{
    return arg == DNNL_ARG_DIFF_SRC || arg == DNNL_ARG_DIFF_WEIGHTS || arg == DNNL_ARG_DIFF_BIAS ||
           (fwd && arg == DNNL_ARG_DST);
}

/* Where primitive pd wants another layout than the caller's plain buffer
 * (a conv's blocked formats), the argument becomes a memory of that layout
 * in the arena, with a reorder from the buffer before the primitive (an
 * input) or back into it after (an output). */
static dnnl_status_t bridge(odnn_state *s, struct odnn_bwd *e, const_dnnl_primitive_desc_t pd,
                            bool fwd)
{
    dnnl_status_t st = dnnl_success;
    for (int i = 0; i < e->n_args && !st; i++) {
        const dnnl_memory_desc_t *want =
            dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, e->args[i].arg);
        const dnnl_memory_desc_t *have = NULL;
        if (!want || (st = dnnl_memory_get_memory_desc(e->args[i].memory, &have)) ||
            dnnl_memory_desc_equal(want, have))
            continue;
        if (e->n_tmp == ODNN_BWD_MEMS)
            return dnnl_runtime_error;
        bool out = writes_arg(e->args[i].arg, fwd);
        dnnl_primitive_desc_t rpd = NULL;
        if ((st = dnnl_memory_create(&e->tmp[e->n_tmp], want, s->eng, DNNL_MEMORY_NONE)))
            break;
        dnnl_memory_t tmp = e->tmp[e->n_tmp];
        e->tmp_off[e->n_tmp++] = e->tmp_bytes;
        e->tmp_bytes += (dnnl_memory_desc_get_size(want) + 63) / 64 * 64;
        st = dnnl_reorder_primitive_desc_create(&rpd, out ? want : have, s->eng, out ? have : want,
                                                s->eng, NULL);
        if (!st && !(st = dnnl_primitive_create(&e->re[e->n_re], rpd))) {
            e->re_from[e->n_re] = out ? tmp : e->args[i].memory;
            e->re_to[e->n_re] = out ? e->args[i].memory : tmp;
            e->re_first[e->n_re] = !out && e->n_tmp == 1;
            e->re_out[e->n_re++] = out;
            e->args[i].memory = tmp;
        }
        if (rpd)
            dnnl_primitive_desc_destroy(rpd);
    }
    return st;
}

/* The primitive of entry e with its reorders (bridge): the blocked
 * memories placed in the arena, the inputs reordered in, the primitive,
 * the outputs reordered back. The input reordered to the arena's start is
 * left out where the call before, the backward-data of the same layer
 * (a backward-weights reads the same diff_dst), left it there. */
static dnnl_status_t execute(odnn_state *s, struct odnn_bwd *e)
{
    dnnl_status_t st = dnnl_success;
    bool held = s->held && s->held_n == e->n && e->mode == 2;
    s->held = false;
    if (e->tmp_bytes > s->arena_bytes) {
        free(s->arena);
        s->arena_bytes = 0;
        held = false;
        if (!(s->arena = aligned_alloc(64, e->tmp_bytes)))
            return dnnl_out_of_memory;
        s->arena_bytes = e->tmp_bytes;
    }
    for (int k = 0; k < e->n_tmp && !st; k++)
        st = dnnl_memory_set_data_handle(e->tmp[k], (char *)s->arena + e->tmp_off[k]);
    void *first = NULL;
    const dnnl_memory_desc_t *first_md = NULL;
    for (int pass = 0; pass < 3 && !st; pass++) {
        if (pass == 1) {
            st = dnnl_primitive_execute(e->prim, s->stream, e->n_args, e->args);
            continue;
        }
        for (int k = 0; k < e->n_re && !st; k++) {
            dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, e->re_from[k]}, {DNNL_ARG_TO, e->re_to[k]}};
            if (e->re_out[k] != (pass == 2))
                continue;
            if (e->re_first[k] &&
                (st = dnnl_memory_get_data_handle(e->re_from[k], &first)) == dnnl_success &&
                (st = dnnl_memory_get_memory_desc(e->re_to[k], &first_md)) == dnnl_success &&
                held && s->held_src == first && dnnl_memory_desc_equal(&s->held_md, first_md))
                continue;
            if (!st)
                st = dnnl_primitive_execute(e->re[k], s->stream, 2, ra);
        }
    }
    if (!st && first && first_md && e->mode == 1) {
        s->held = true;
        s->held_n = e->n;
        s->held_src = first;
        s->held_md = *first_md;
    }
    return st;
}

/* Build layer a->n's primitive for phase `mode` (a->mode; 3: a matmul's
 * second input's gradient) into *e. */
static ntp_status build(ntp_ctx *ctx, odnn_state *s, const ntp_backward_args *a, int mode,
                        struct odnn_bwd *e)
{
    bwd_desc d;
    dnnl_primitive_desc_t fpd = NULL, bpd = NULL;
    const char *what = "describing the layer";
    memset(e, 0, sizeof *e);
    e->n = a->n;
    e->mode = mode;
    e->ws = -1;
    dnnl_status_t st = describe(a, mode, &d);
    if (!st && d.kind != BK_MATMUL) { /* a matmul's backward is a matmul: no hint */
        what = "the forward hint";
        st = forward_pd(s, a->n, &d, &fpd);
    }
    if (!st) {
        what = mode == 2 ? "the backward-weights primitive descriptor"
                         : "the backward-data primitive descriptor";
        st = backward_pd(s, a->n, &d, mode, fpd, &bpd);
    }
    if (!st) {
        what = "dnnl_memory_create";
        st = wire(s, &d, mode, fpd, e);
    }
    if (!st && d.kind == BK_CONV) {
        what = "the reorders to the convolution's layouts";
        st = bridge(s, e, bpd, false);
    }
    if (!st) {
        what = "dnnl_primitive_create";
        st = dnnl_primitive_create(&e->prim, bpd);
    }
    if (!st && e->n_fargs > 0)
        st = dnnl_primitive_create(&e->fwd, fpd);
    if (bpd)
        dnnl_primitive_desc_destroy(bpd);
    if (fpd)
        dnnl_primitive_desc_destroy(fpd);
    if (st) {
        dnnl_primitive_destroy(e->prim);
        for (int k = 0; k < e->n_mem; k++) {
            dnnl_memory_destroy(e->mem[k]);
            free(e->cvt[k]);
            free(e->own[k]);
        }
        for (int k = 0; k < e->n_re; k++)
            dnnl_primitive_destroy(e->re[k]);
        for (int k = 0; k < e->n_tmp; k++)
            dnnl_memory_destroy(e->tmp[k]);
        return fail(ctx, a, st, what);
    }
    return NTP_STATUS_OK;
}

/* The buffer of a's that handle h names. */
static void *handle_ptr(const ntp_backward_args *a, int h)
{
    switch (h) {
    case H_X: return (void *)a->x;
    case H_W: return (void *)a->w;
    case H_DY: return (void *)a->dy;
    case H_DX: return a->dx;
    case H_DW: return a->dw;
    case H_DB: return a->db;
    case H_Y: return (void *)a->y;
    case H_MEAN: return (void *)a->mean;
    case H_VAR: return (void *)a->var;
    case H_X2: return (void *)a->x2;
    case H_DX2: return a->dx2;
    default: return NULL;
    }
}

/* Run layer a->n's primitive for phase `mode`, built at its first call. */
static ntp_status run_phase(ntp_ctx *ctx, odnn_state *s, const ntp_backward_args *a, int mode)
{
    struct odnn_bwd *e = find_entry(s, a->n, mode);
    if (!e) {
        struct odnn_bwd *slot = grow_entries(ctx, s, "onednn backward");
        if (!slot)
            return NTP_STATUS_OUT_OF_MEMORY;
        ntp_status r = build(ctx, s, a, mode, slot);
        if (r)
            return r;
        e = &s->bwd[s->n_bwd++];
    }
    dnnl_status_t st = dnnl_success;
    const char *what = "dnnl_memory_set_data_handle";
    for (int k = 0; k < e->n_mem && !st; k++) {
        if (e->handle[k] == H_OWN)
            continue;
        void *p = handle_ptr(a, e->handle[k] & ~H_OPT);
        if (!p && (e->handle[k] & H_OPT))
            p = e->own[k];
        if (e->handle[k] == H_FWS) { /* the training forward's workspace */
            const struct odnn_bwd *f = find_entry(s, a->n, 0);
            p = NULL;
            if (f && f->ws >= 0 && (st = dnnl_memory_get_data_handle(f->mem[f->ws], &p)))
                break;
        }
        if (!p)
            return ntp__be_error(ctx, "onednn backward", a->g, a->n, NTP_STATUS_INTERNAL,
                                 "a buffer the layer reads was not given");
        if (e->cvt[k]) { /* a bf16 memory: the f32 buffer's values as bf16 */
            for (int64_t i = 0; i < e->cvt_n[k]; i++)
                e->cvt[k][i] = ntp__f32_to_bf16(((const float *)p)[i]);
            p = e->cvt[k];
        }
        st = dnnl_memory_set_data_handle(e->mem[k], p);
    }
    if (!st && e->fwd) {
        what = "the forward's dnnl_primitive_execute (max pooling's workspace)";
        st = dnnl_primitive_execute(e->fwd, s->stream, e->n_fargs, e->fargs);
    }
    if (!st) {
        what = "dnnl_primitive_execute";
        st = execute(s, e);
    }
    if (!st) {
        what = "dnnl_stream_wait";
        st = dnnl_stream_wait(s->stream);
    }
    return st ? fail(ctx, a, st, what) : NTP_STATUS_OK;
}

ntp_status ntp__odnn_backward(ntp_ctx *ctx, void *state, const ntp_backward_args *a)
{
    odnn_state *s = state;
    if (a->n->op == NTP_OP_LSTM || a->n->op == NTP_OP_GRU || a->n->op == NTP_OP_RNN) {
        s->held = false; /* a call that is not execute()'s */
        return ntp__odnn_rnn_backward(ctx, s, a);
    }
    /* A norm: one primitive for both phases (each output where given). */
    bwd_kind k = kind_of(a->n->op);
    if (k == BK_BNORM || k == BK_LNORM)
        return run_phase(ctx, s, a, 1);
    if (a->n->op != NTP_OP_MATMUL)
        return run_phase(ctx, s, a, a->mode);
    /* A matmul has no weights: its backward-data gives both inputs'
     * gradients, each where it is asked for. */
    ntp_status st = NTP_STATUS_OK;
    if (a->mode == 1 && a->dx)
        st = run_phase(ctx, s, a, 1);
    if (!st && a->mode == 1 && a->dx2)
        st = run_phase(ctx, s, a, 3);
    return st;
}

/* --- the training forward ------------------------------------------------------ */

/* A binary layer oneDNN's binary primitive runs here: two inputs, the
 * first of the output's shape, the second the same or broadcast (dims of
 * 1, right-aligned). */
static bool binary_fits(const ntp_graph *g, const ntp_node *n)
{
    if (n->n_in != 2 || n->n_out != 1)
        return false;
    const ntp_shape *y = &g->tensors[n->out[0]].shape, *a = &g->tensors[n->in[0]].shape;
    const ntp_shape *b = &g->tensors[n->in[1]].shape;
    if (!ntp_shape_equal(a, y) || b->ndim > y->ndim || y->ndim < 1 || y->ndim > DNNL_MAX_NDIMS)
        return false;
    for (int d = 0; d < b->ndim; d++) {
        int64_t yd = y->dim[d + y->ndim - b->ndim];
        if (b->dim[d] != yd && b->dim[d] != 1)
            return false;
    }
    return true;
}

static dnnl_alg_kind_t binary_alg(ntp_op op)
{
    return op == NTP_OP_ADD   ? dnnl_binary_add
           : op == NTP_OP_SUB ? dnnl_binary_sub
           : op == NTP_OP_MUL ? dnnl_binary_mul
                              : dnnl_alg_kind_undef;
}

bool ntp__odnn_supports_train_forward(const ntp_graph *g, const ntp_node *n)
{
    dnnl_alg_kind_t alg;
    float al, be;
    if (binary_alg(n->op) != dnnl_alg_kind_undef)
        return binary_fits(g, n);
    if (n->op == NTP_OP_CONCAT) {
        const ntp_shape *y = &g->tensors[n->out[0]].shape;
        int64_t axis = n->a.axis < 0 ? n->a.axis + y->ndim : n->a.axis;
        return n->n_in >= 1 && n->n_in < ODNN_BWD_MEMS && y->ndim >= 1 &&
               y->ndim <= DNNL_MAX_NDIMS && axis >= 0 && axis < y->ndim;
    }
    /* Clip and hardswish: the forward matches the reference's (only
     * their derivatives' kinks differ, so their backward stays on ref). */
    if (n->op == NTP_OP_CLIP || n->op == NTP_OP_HARDSWISH)
        return n->n_in == 1 && n->n_out == 1 && ntp__dnnl_eltwise_alg(n, &alg, &al, &be) &&
               g->tensors[n->in[0]].shape.ndim <= DNNL_MAX_NDIMS;
    /* The recurrent layers too: ntp__odnn_supports_backward sends them
     * to rnn-backward.c's. */
    return ntp__odnn_supports_backward(g, n);
}

/* The buffer of a's that forward handle h names. */
static void *fwd_ptr(const ntp_train_fwd_args *a, int h)
{
    if (h >= H_FIN && h < H_FIN + NTP_MAX_INPUTS)
        return (void *)a->in[h - H_FIN];
    if (h >= H_FW && h < H_FW + NTP_MAX_WEIGHTS)
        return (void *)a->w[h - H_FW];
    switch (h) {
    case H_FOUT: return a->out;
    case H_FMEAN: return a->mean;
    case H_FVAR: return a->var;
    default: return NULL;
    }
}

/* A matmul's forward: C = op(A)·op(B) over strided views, with a B shared
 * over the batch folded as its backward folds it. */
static dnnl_status_t matmul_forward_pd(odnn_state *s, const ntp_graph *g, const ntp_node *n,
                                       bwd_desc *d, dnnl_primitive_desc_t *pd)
{
    mm_geom m;
    dnnl_matmul_desc_t od;
    dnnl_status_t st;
    if (!mm_geometry(g, n, &m))
        return dnnl_unimplemented;
    if ((st = mm_view(&d->src, m.r, m.a, n->a.transpose_a)) ||
        (st = mm_view(&d->wei, m.r, m.b, n->a.transpose_b)) ||
        (st = mm_view(&d->dst, m.r, m.c, false)) ||
        (st = dnnl_matmul_desc_init(&od, &d->src, &d->wei, NULL, &d->dst)))
        return st;
    return dnnl_primitive_desc_create(pd, &od, NULL, s->eng, NULL);
}

/* Build layer a->n's training forward into *e. */
static ntp_status build_forward(ntp_ctx *ctx, odnn_state *s, const ntp_train_fwd_args *a,
                                struct odnn_bwd *e)
{
    const ntp_graph *g = a->g;
    const ntp_node *n = a->n;
    ntp_backward_args ba = {.g = g, .n = n};
    bwd_desc d;
    dnnl_primitive_desc_t pd = NULL;
    const char *what = "describing the layer";
    memset(e, 0, sizeof *e);
    memset(&d, 0, sizeof d);
    e->n = n;
    e->mode = 0;
    e->ws = -1;
    dnnl_status_t st = dnnl_success;
    const dnnl_memory_desc_t *dst = NULL;
    if (n->op == NTP_OP_CONCAT) {
        const ntp_shape *y = &g->tensors[n->out[0]].shape;
        int axis = (int)(n->a.axis < 0 ? n->a.axis + y->ndim : n->a.axis);
        dnnl_memory_desc_t src[NTP_MAX_INPUTS];
        for (int i = 0; i < n->n_in && !st; i++)
            st = ntp__dnnl_plain_md(&src[i], &g->tensors[n->in[i]].shape, dnnl_f32);
        if (!st)
            st = ntp__dnnl_plain_md(&d.dst, y, dnnl_f32);
        what = "the concat primitive descriptor";
        if (!st)
            st = dnnl_concat_primitive_desc_create(&pd, &d.dst, n->n_in, axis, src, NULL, s->eng);
        for (int i = 0; i < n->n_in; i++)
            add_arg(e, false, DNNL_ARG_MULTIPLE_SRC + i, add_mem(s, e, &src[i], H_FIN + i, &st));
        dst = &d.dst;
    } else if (binary_alg(n->op) != dnnl_alg_kind_undef) {
        const ntp_shape *y = &g->tensors[n->out[0]].shape, *b = &g->tensors[n->in[1]].shape;
        int64_t bd[DNNL_MAX_NDIMS];
        for (int i = 0; i < y->ndim; i++)
            bd[i] = i < y->ndim - b->ndim ? 1 : b->dim[i - (y->ndim - b->ndim)];
        dnnl_binary_desc_t od;
        if (!(st = ntp__dnnl_plain_md(&d.src, y, dnnl_f32)) &&
            !(st = ntp__dnnl_plain_dims(&d.wei, y->ndim, bd, dnnl_f32)) &&
            !(st = dnnl_binary_desc_init(&od, binary_alg(n->op), &d.src, &d.wei, &d.src))) {
            what = "the binary primitive descriptor";
            st = dnnl_primitive_desc_create(&pd, &od, NULL, s->eng, NULL);
        }
        add_arg(e, false, DNNL_ARG_SRC_0, add_mem(s, e, &d.src, H_FIN, &st));
        add_arg(e, false, DNNL_ARG_SRC_1, add_mem(s, e, &d.wei, H_FIN + 1, &st));
        dst = &d.src;
    } else if (n->op == NTP_OP_MATMUL) {
        what = "the matmul primitive descriptor";
        st = matmul_forward_pd(s, g, n, &d, &pd);
        add_arg(e, false, DNNL_ARG_SRC, add_mem(s, e, &d.src, H_FIN, &st));
        add_arg(e, false, DNNL_ARG_WEIGHTS, add_mem(s, e, &d.wei, H_FIN + 1, &st));
        dst = &d.dst;
    } else if (n->op == NTP_OP_CLIP || n->op == NTP_OP_HARDSWISH) {
        dnnl_eltwise_desc_t od;
        if (!ntp__dnnl_eltwise_alg(n, &d.alg, &d.alpha, &d.beta))
            st = dnnl_unimplemented;
        if (!st && !(st = ntp__dnnl_plain_md(&d.src, &g->tensors[n->in[0]].shape, dnnl_f32)) &&
            !(st = dnnl_eltwise_forward_desc_init(&od, dnnl_forward_training, d.alg, &d.src,
                                                  d.alpha, d.beta))) {
            what = "the eltwise primitive descriptor";
            st = dnnl_primitive_desc_create(&pd, &od, NULL, s->eng, NULL);
        }
        add_arg(e, false, DNNL_ARG_SRC, add_mem(s, e, &d.src, H_FIN, &st));
        dst = &d.src;
    } else {
        /* The backward's own descriptors, in forward training. */
        st = describe_f32(&ba, 1, &d);
        if (!st) {
            what = "the forward-training primitive descriptor";
            st = forward_pd(s, n, &d, &pd);
        }
        add_arg(e, false, DNNL_ARG_SRC, add_mem(s, e, &d.src, H_FIN, &st));
        switch (d.kind) {
        case BK_CONV:
        case BK_DECONV:
        case BK_FC:
            add_arg(e, false, DNNL_ARG_WEIGHTS, add_mem(s, e, &d.wei, H_FW, &st));
            if (d.has_bias)
                add_arg(e, false, DNNL_ARG_BIAS, add_mem(s, e, &d.bias, H_FW + 1, &st));
            dst = &d.dst;
            break;
        case BK_POOL: {
            dst = &d.dst;
            const dnnl_memory_desc_t *ws =
                pd ? dnnl_primitive_desc_query_md(pd, dnnl_query_workspace_md, 0) : NULL;
            if (!st && ws && dnnl_memory_desc_get_size(ws) > 0) {
                e->ws = add_mem(s, e, ws, H_OWN, &st);
                add_arg(e, false, DNNL_ARG_WORKSPACE, e->ws);
            }
            break;
        }
        case BK_BNORM:
        case BK_LNORM:
            add_arg(e, false, DNNL_ARG_SCALE, add_mem(s, e, &d.wei, H_FW, &st));
            add_arg(e, false, DNNL_ARG_SHIFT, add_mem(s, e, &d.wei, H_FW + 1, &st));
            add_arg(e, false, DNNL_ARG_MEAN, add_mem(s, e, &d.stat, H_FMEAN, &st));
            add_arg(e, false, DNNL_ARG_VARIANCE, add_mem(s, e, &d.stat, H_FVAR, &st));
            dst = &d.src;
            break;
        case BK_ELTWISE:
        case BK_SOFTMAX: dst = &d.src; break;
        case BK_MATMUL:
        case BK_NONE: st = st ? st : dnnl_unimplemented; break;
        }
    }
    if (dst)
        add_arg(e, false, DNNL_ARG_DST, add_mem(s, e, dst, H_FOUT, &st));
    if (!st && d.kind == BK_CONV) {
        what = "the reorders to the convolution's layouts";
        st = bridge(s, e, pd, true);
    }
    if (!st) {
        what = "dnnl_primitive_create";
        st = dnnl_primitive_create(&e->prim, pd);
    }
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (st) {
        for (int k = 0; k < e->n_mem; k++)
            dnnl_memory_destroy(e->mem[k]);
        for (int k = 0; k < e->n_re; k++)
            dnnl_primitive_destroy(e->re[k]);
        for (int k = 0; k < e->n_tmp; k++)
            dnnl_memory_destroy(e->tmp[k]);
        return ntp__dnnl_status_error(ctx, "onednn training forward", g, n, st, what);
    }
    return NTP_STATUS_OK;
}

ntp_status ntp__odnn_train_forward(ntp_ctx *ctx, void *state, const ntp_train_fwd_args *a)
{
    odnn_state *s = state;
    if (a->n->op == NTP_OP_LSTM || a->n->op == NTP_OP_GRU || a->n->op == NTP_OP_RNN) {
        s->held = false;
        return ntp__odnn_rnn_forward(ctx, s, a);
    }
    struct odnn_bwd *e = find_entry(s, a->n, 0);
    if (!e) {
        struct odnn_bwd *slot = grow_entries(ctx, s, "onednn training forward");
        if (!slot)
            return NTP_STATUS_OUT_OF_MEMORY;
        ntp_status r = build_forward(ctx, s, a, slot);
        if (r)
            return r;
        e = &s->bwd[s->n_bwd++];
    }
    dnnl_status_t st = dnnl_success;
    const char *what = "dnnl_memory_set_data_handle";
    for (int k = 0; k < e->n_mem && !st; k++) {
        if (e->handle[k] == H_OWN)
            continue;
        void *p = fwd_ptr(a, e->handle[k]);
        if (!p)
            return ntp__be_error(ctx, "onednn training forward", a->g, a->n, NTP_STATUS_INTERNAL,
                                 "a buffer the layer reads or writes was not given");
        st = dnnl_memory_set_data_handle(e->mem[k], p);
    }
    if (!st) {
        what = "dnnl_primitive_execute";
        st = execute(s, e);
    }
    if (!st) {
        what = "dnnl_stream_wait";
        st = dnnl_stream_wait(s->stream);
    }
    return st ? ntp__dnnl_status_error(ctx, "onednn training forward", a->g, a->n, st, what)
              : NTP_STATUS_OK;
}
