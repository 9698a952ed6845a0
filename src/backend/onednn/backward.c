/* Training backward on oneDNN (docs/train.md): convolution backward data
 * and backward weights (1-3 spatial dims, stride, padding, dilation,
 * groups) and inner product backward data and weights, in f32 and plain
 * row-major layouts (ntp_backward_args). The first call for a layer and
 * phase builds its forward hint, the backward primitive and its memory
 * objects, and keeps them in the backend's state; later calls (the next
 * steps) set the memory objects' data handles and run it on the backend's
 * stream. The first step's time thus includes the primitive's creation. */
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "onednn-impl.h"

/* One layer's backward primitive for one phase, with its memory objects
 * in the order of its arguments. */
struct odnn_bwd {
    const ntp_node *n;
    int mode;
    dnnl_primitive_t prim;
    int n_args;
    dnnl_exec_arg_t args[4];
};

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

void ntp__odnn_backward_release(odnn_state *s)
{
    for (int i = 0; i < s->n_bwd; i++) {
        dnnl_primitive_destroy(s->bwd[i].prim);
        for (int k = 0; k < s->bwd[i].n_args; k++)
            dnnl_memory_destroy(s->bwd[i].args[k].memory);
    }
    free(s->bwd);
    s->bwd = NULL;
    s->n_bwd = 0;
}

/* Build layer a->n's primitive for phase a->mode into *e. */
static ntp_status build(ntp_ctx *ctx, odnn_state *s, const ntp_backward_args *a, struct odnn_bwd *e)
{
    bwd_desc d;
    dnnl_primitive_desc_t fpd = NULL, bpd = NULL;
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
     * diff_bias from src and diff_dst. The handles are set at each call. */
    bwd_io io[4] = {{DNNL_ARG_DIFF_DST, &d.dst, NULL}};
    int n_io = 1;
    if (a->mode == 1) {
        io[n_io++] = (bwd_io){DNNL_ARG_WEIGHTS, &d.wei, NULL};
        io[n_io++] = (bwd_io){DNNL_ARG_DIFF_SRC, &d.src, NULL};
    } else {
        io[n_io++] = (bwd_io){DNNL_ARG_SRC, &d.src, NULL};
        io[n_io++] = (bwd_io){DNNL_ARG_DIFF_WEIGHTS, &d.wei, NULL};
        if (d.has_bias)
            io[n_io++] = (bwd_io){DNNL_ARG_DIFF_BIAS, &d.bias, NULL};
    }
    memset(e, 0, sizeof *e);
    e->n = a->n;
    e->mode = a->mode;
    for (int i = 0; i < n_io && !st; i++) {
        what = "dnnl_memory_create";
        st = dnnl_memory_create(&e->args[i].memory, io[i].md, s->eng, DNNL_MEMORY_NONE);
        e->args[i].arg = io[i].arg;
        e->n_args += st == dnnl_success;
    }
    if (!st) {
        what = "dnnl_primitive_create";
        st = dnnl_primitive_create(&e->prim, bpd);
    }
    if (bpd)
        dnnl_primitive_desc_destroy(bpd);
    if (fpd)
        dnnl_primitive_desc_destroy(fpd);
    if (st) {
        for (int k = 0; k < e->n_args; k++)
            dnnl_memory_destroy(e->args[k].memory);
        return fail(ctx, a, st, what);
    }
    return NTP_STATUS_OK;
}

ntp_status ntp__odnn_backward(ntp_ctx *ctx, void *state, const ntp_backward_args *a)
{
    odnn_state *s = state;
    struct odnn_bwd *e = NULL;
    for (int i = 0; i < s->n_bwd && !e; i++)
        if (s->bwd[i].n == a->n && s->bwd[i].mode == a->mode)
            e = &s->bwd[i];
    if (!e) {
        struct odnn_bwd *grown = realloc(s->bwd, (size_t)(s->n_bwd + 1) * sizeof *grown);
        if (!grown)
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "onednn backward: out of memory");
        s->bwd = grown;
        ntp_status r = build(ctx, s, a, &s->bwd[s->n_bwd]);
        if (r)
            return r;
        e = &s->bwd[s->n_bwd++];
    }
    dnnl_status_t st = dnnl_success;
    const char *what = "dnnl_memory_set_data_handle";
    for (int k = 0; k < e->n_args && !st; k++) {
        void *p = NULL;
        switch (e->args[k].arg) {
        case DNNL_ARG_DIFF_DST: p = (void *)a->dy; break;
        case DNNL_ARG_WEIGHTS: p = (void *)a->w; break;
        case DNNL_ARG_DIFF_SRC: p = a->dx; break;
        case DNNL_ARG_SRC: p = (void *)a->x; break;
        case DNNL_ARG_DIFF_WEIGHTS: p = a->dw; break;
        default: p = a->db; break;
        }
        st = dnnl_memory_set_data_handle(e->args[k].memory, p);
    }
    if (!st) {
        what = "dnnl_primitive_execute";
        st = dnnl_primitive_execute(e->prim, s->stream, e->n_args, e->args);
    }
    if (!st) {
        what = "dnnl_stream_wait";
        st = dnnl_stream_wait(s->stream);
    }
    return st ? fail(ctx, a, st, what) : NTP_STATUS_OK;
}
