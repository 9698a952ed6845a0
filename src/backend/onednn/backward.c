/* Training backward on oneDNN (docs/train.md): convolution backward data
 * and backward weights (1-3 spatial dims, stride, padding, dilation,
 * groups) and inner product backward data and weights, in f32 and plain
 * row-major layouts (ntp_backward_args). Each call builds its forward hint,
 * the backward primitive and the memory objects, runs it on the backend's
 * stream, waits and destroys them: the trainer calls once per layer and
 * phase, and the primitives' creation is part of the time it reports. */
#include <oneapi/dnnl/dnnl_debug.h>
#include <string.h>

#include "onednn-impl.h"

/* A failed dnnl call, as one line naming the layer. */
static ntp_status fail(ntp_ctx *ctx, const ntp_backward_args *a, dnnl_status_t st, const char *what)
{
    return ntp__node_error(ctx, a->g, a->n,
                           st == dnnl_out_of_memory ? NTP_STATUS_OUT_OF_MEMORY
                                                    : NTP_STATUS_BACKEND_ERROR,
                           "onednn backward: %s failed: dnnl_%s", what, dnnl_status2str(st));
}

bool ntp__odnn_supports_backward(const ntp_graph *g, const ntp_node *n)
{
    if (n->op == NTP_OP_FC)
        return n->n_in == 1 && n->n_w >= 1;
    if (n->op != NTP_OP_CONV || n->n_in != 1 || n->n_w < 1)
        return false;
    int nd = g->tensors[n->in[0]].shape.ndim;
    return nd >= 3 && nd <= 5;
}

/* The descriptors of one layer: src, weights, bias, dst, and for a conv
 * its geometry (oneDNN counts dilation from 0). */
typedef struct bwd_desc {
    dnnl_memory_desc_t src, wei, bias, dst;
    bool conv, has_bias;
    dnnl_dims_t strides, dil, pl, pr;
} bwd_desc;

static dnnl_status_t describe(const ntp_backward_args *a, bwd_desc *d)
{
    const ntp_graph *g = a->g;
    const ntp_node *n = a->n;
    const ntp_shape *xs = &g->tensors[n->in[0]].shape, *ys = &g->tensors[n->out[0]].shape;
    dnnl_status_t st;
    memset(d, 0, sizeof *d);
    d->has_bias = n->n_w > 1;
    if (n->op == NTP_OP_FC) {
        int64_t K = xs->dim[xs->ndim - 1], F = n->a.units, R = ntp_shape_numel(xs) / K;
        int64_t sd[2] = {R, K}, wd[2] = {F, K}, dd[2] = {R, F}, bd[1] = {F};
        if ((st = ntp__dnnl_plain_dims(&d->src, 2, sd, dnnl_f32)) ||
            (st = ntp__dnnl_plain_dims(&d->wei, 2, wd, dnnl_f32)) ||
            (st = ntp__dnnl_plain_dims(&d->dst, 2, dd, dnnl_f32)))
            return st;
        return d->has_bias ? ntp__dnnl_plain_dims(&d->bias, 1, bd, dnnl_f32) : dnnl_success;
    }
    d->conv = true;
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

/* The forward training descriptor, the hint of both backward ones. */
static dnnl_status_t forward_pd(odnn_state *s, const bwd_desc *d, dnnl_primitive_desc_t *pd)
{
    dnnl_status_t st;
    if (d->conv) {
        dnnl_convolution_desc_t cd;
        st = dnnl_dilated_convolution_forward_desc_init(
            &cd, dnnl_forward_training, dnnl_convolution_direct, &d->src, &d->wei,
            d->has_bias ? &d->bias : NULL, &d->dst, d->strides, d->dil, d->pl, d->pr);
        return st ? st : dnnl_primitive_desc_create(pd, &cd, NULL, s->eng, NULL);
    }
    dnnl_inner_product_desc_t id;
    st = dnnl_inner_product_forward_desc_init(&id, dnnl_forward_training, &d->src, &d->wei,
                                              d->has_bias ? &d->bias : NULL, &d->dst);
    return st ? st : dnnl_primitive_desc_create(pd, &id, NULL, s->eng, NULL);
}

static dnnl_status_t backward_pd(odnn_state *s, const bwd_desc *d, int mode,
                                 const_dnnl_primitive_desc_t hint, dnnl_primitive_desc_t *pd)
{
    dnnl_status_t st;
    if (d->conv) {
        dnnl_convolution_desc_t cd;
        st = mode == 1
                 ? dnnl_dilated_convolution_backward_data_desc_init(
                       &cd, dnnl_convolution_direct, &d->src, &d->wei, &d->dst, d->strides, d->dil,
                       d->pl, d->pr)
                 : dnnl_dilated_convolution_backward_weights_desc_init(
                       &cd, dnnl_convolution_direct, &d->src, &d->wei,
                       d->has_bias ? &d->bias : NULL, &d->dst, d->strides, d->dil, d->pl, d->pr);
        return st ? st : dnnl_primitive_desc_create(pd, &cd, NULL, s->eng, hint);
    }
    dnnl_inner_product_desc_t id;
    st = mode == 1 ? dnnl_inner_product_backward_data_desc_init(&id, &d->src, &d->wei, &d->dst)
                   : dnnl_inner_product_backward_weights_desc_init(
                         &id, &d->src, &d->wei, d->has_bias ? &d->bias : NULL, &d->dst);
    return st ? st : dnnl_primitive_desc_create(pd, &id, NULL, s->eng, hint);
}

/* One memory argument of the backward primitive. */
typedef struct bwd_io {
    int arg;
    const dnnl_memory_desc_t *md;
    void *ptr;
} bwd_io;

ntp_status ntp__odnn_backward(ntp_ctx *ctx, void *state, const ntp_backward_args *a)
{
    odnn_state *s = state;
    bwd_desc d;
    dnnl_primitive_desc_t fpd = NULL, bpd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_memory_t mem[4] = {NULL, NULL, NULL, NULL};
    dnnl_exec_arg_t args[4];
    int n_args = 0;
    const char *what = "describing the layer";
    dnnl_status_t st = describe(a, &d);
    if (!st) {
        what = "the forward hint";
        st = forward_pd(s, &d, &fpd);
    }
    if (!st) {
        what = a->mode == 1 ? "the backward-data primitive descriptor"
                            : "the backward-weights primitive descriptor";
        st = backward_pd(s, &d, a->mode, fpd, &bpd);
    }
    /* Data: diff_src from weights and diff_dst; weights: diff_weights and
     * diff_bias from src and diff_dst. */
    bwd_io io[4] = {{DNNL_ARG_DIFF_DST, &d.dst, (void *)a->dy}};
    int n_io = 1;
    if (a->mode == 1) {
        io[n_io++] = (bwd_io){DNNL_ARG_WEIGHTS, &d.wei, (void *)a->w};
        io[n_io++] = (bwd_io){DNNL_ARG_DIFF_SRC, &d.src, a->dx};
    } else {
        io[n_io++] = (bwd_io){DNNL_ARG_SRC, &d.src, (void *)a->x};
        io[n_io++] = (bwd_io){DNNL_ARG_DIFF_WEIGHTS, &d.wei, a->dw};
        if (d.has_bias && a->db)
            io[n_io++] = (bwd_io){DNNL_ARG_DIFF_BIAS, &d.bias, a->db};
    }
    for (int i = 0; i < n_io && !st; i++) {
        what = "dnnl_memory_create";
        st = dnnl_memory_create(&mem[i], io[i].md, s->eng, io[i].ptr);
        args[n_args++] = (dnnl_exec_arg_t){io[i].arg, mem[i]};
    }
    if (!st) {
        what = "dnnl_primitive_create";
        st = dnnl_primitive_create(&prim, bpd);
    }
    if (!st) {
        what = "dnnl_primitive_execute";
        st = dnnl_primitive_execute(prim, s->stream, n_args, args);
    }
    if (!st) {
        what = "dnnl_stream_wait";
        st = dnnl_stream_wait(s->stream);
    }
    if (prim)
        dnnl_primitive_destroy(prim);
    for (int i = 0; i < 4; i++)
        if (mem[i])
            dnnl_memory_destroy(mem[i]);
    if (bpd)
        dnnl_primitive_desc_destroy(bpd);
    if (fpd)
        dnnl_primitive_desc_destroy(fpd);
    return st ? fail(ctx, a, st, what) : NTP_STATUS_OK;
}
