/* Batch normalisation (inference: the stored mean and variance, with scale
 * and shift), layer normalisation over the trailing dims, and local
 * response normalisation across channels.
 *
 * Batch normalisation follows its input's layout, so it runs on a
 * convolution's blocked output directly. Layer normalisation normalises the
 * last logical dim in oneDNN, so the dims axis..last are viewed as one:
 * [rows, D] over the plain tensor. The statistics and affine parameters are
 * f32 at every precision (oneDNN's bf16 normalisations take f32 scale and
 * shift). */
#include <stdlib.h>

#include "graph/op-onnx-impl.h"
#include "onednn-impl.h"

bool ntp__dnnl_norm_supports(const ntp_graph *g, const ntp_node *n)
{
    const ntp_shape *x = &g->tensors[n->in[0]].shape;
    /* oneDNN's window is centred, c ± (size-1)/2; ONNX puts the extra
     * channel of an even size after c. */
    if (n->op == NTP_OP_LRN)
        return x->ndim >= 3 && x->ndim <= 5 && ntp__lrn_size(&n->a) % 2 == 1;
    if (n->op == NTP_OP_BATCHNORM)
        return x->ndim >= 2 && x->ndim <= 5;
    int64_t axis = n->a.axis < 0 ? n->a.axis + x->ndim : n->a.axis;
    return axis >= 0 && axis < x->ndim;
}

/* Pack f32 weight i as a 1-d vector of `count` values for arg. */
static ntp_status vector(odnn_build *b, int i, int64_t count, const dnnl_memory_desc_t *want,
                         int *mi)
{
    if (ntp_shape_numel(&b->k->w[i].shape) != count)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "weight %d does not have %lld values", i,
                              (long long)count);
    float *v;
    ntp_status s = ntp__dnnl_weight_f32(b, i, &v);
    if (s)
        return s;
    dnnl_memory_desc_t md;
    dnnl_dims_t d = {count};
    dnnl_memory_desc_init_by_tag(&md, 1, d, dnnl_f32, dnnl_a);
    s = ntp__dnnl_pack(b, v, &md, want && want->ndims > 0 ? want : &md, NULL, 0, 0, mi);
    free(v);
    return s;
}

static ntp_status batchnorm(odnn_build *b)
{
    ntp_kargs *k = b->k;
    if (k->n_in != 1 || k->n_w != 4)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "inconsistent batchnorm arguments");
    int64_t C = k->in[0].shape.dim[1];
    dnnl_memory_desc_t md;
    ntp_status s = ntp__dnnl_follow_md(b, 0, b->cdt, &md);
    if (s)
        return s;
    /* A ReLU folded into the group (--fuse) is oneDNN's fuse_norm_relu. */
    unsigned flags = dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift;
    if (k->n_fused == 1 && k->fused[0]->op == NTP_OP_RELU && !k->fused[0]->a.has_max)
        flags |= dnnl_fuse_norm_relu;
    else if (k->n_fused > 0)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "batchnorm folds only a plain relu");
    dnnl_batch_normalization_desc_t d;
    dnnl_status_t st = dnnl_batch_normalization_forward_desc_init(&d, dnnl_forward_inference, &md,
                                                                  (float)b->n->a.epsilon, flags);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "batch normalization descriptor");
    dnnl_primitive_desc_t pd;
    if ((s = ntp__dnnl_pd(b, &pd, &d, NULL, "batch normalization")))
        return s;
    int args[8], mems[8], n = 0, mi;
    if ((s = ntp__dnnl_input(b, 0, ntp__dnnl_query(pd, dnnl_query_src_md, 0), 1.0f, &mi)))
        return s;
    args[n] = DNNL_ARG_SRC;
    mems[n++] = mi;
    /* Weights in the op's order: scale, bias, mean, var. */
    const int arg_of[4] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
    for (int i = 0; i < 4; i++) {
        if ((s = vector(b, i, C, ntp__dnnl_arg_md(pd, arg_of[i]), &mi)))
            return s;
        args[n] = arg_of[i];
        mems[n++] = mi;
    }
    if ((s = ntp__dnnl_output(b, 0, ntp__dnnl_query(pd, dnnl_query_dst_md, 0), 1.0f, &mi)))
        return s;
    args[n] = DNNL_ARG_DST;
    mems[n++] = mi;
    const dnnl_memory_desc_t *ws = ntp__dnnl_query(pd, dnnl_query_workspace_md, 0);
    if (ws && dnnl_memory_desc_get_size(ws) > 0) {
        if ((s = ntp__dnnl_ws_mem(b, ws, &mi)))
            return s;
        args[n] = DNNL_ARG_WORKSPACE;
        mems[n++] = mi;
    }
    if ((s = ntp__dnnl_step(b, pd, "", NULL, n, args, mems)))
        return s;
    ntp__dnnl_set_main(b, pd);
    return NTP_STATUS_OK;
}

static ntp_status layernorm(odnn_build *b)
{
    ntp_kargs *k = b->k;
    const ntp_shape *xs = &k->in[0].shape;
    int64_t axis = b->n->a.axis < 0 ? b->n->a.axis + xs->ndim : b->n->a.axis;
    if (k->n_in != 1 || k->n_w != 2 || axis < 0 || axis >= xs->ndim)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "inconsistent layernorm arguments");
    int64_t D = 1;
    for (int d = (int)axis; d < xs->ndim; d++)
        D *= xs->dim[d];
    int64_t rows = D > 0 ? ntp_shape_numel(xs) / D : 0;
    dnnl_dims_t dims = {rows, D};
    dnnl_memory_desc_t md;
    dnnl_memory_desc_init_by_tag(&md, 2, dims, b->cdt, dnnl_ab);
    dnnl_layer_normalization_desc_t d;
    dnnl_status_t st = dnnl_layer_normalization_forward_desc_init(&d, dnnl_forward_inference, &md,
                                                                  NULL, (float)b->n->a.epsilon,
                                                                  dnnl_use_scale | dnnl_use_shift);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "layer normalization descriptor");
    dnnl_primitive_desc_t pd;
    ntp_status s = ntp__dnnl_pd(b, &pd, &d, NULL, "layer normalization");
    if (s)
        return s;
    int args[8], mems[8], n = 0, mi, view;
    if ((s = ntp__dnnl_plain_input(b, 0, b->cdt, &mi)) || (s = ntp__dnnl_alias(b, mi, &md, &view)))
        return s;
    args[n] = DNNL_ARG_SRC;
    mems[n++] = view;
    const int arg_of[2] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT};
    for (int i = 0; i < 2; i++) {
        if ((s = vector(b, i, D, ntp__dnnl_arg_md(pd, arg_of[i]), &mi)))
            return s;
        args[n] = arg_of[i];
        mems[n++] = mi;
    }
    /* Statistics computed on the fly: scratch, when oneDNN exposes them. */
    const int stat[2] = {DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
    for (int i = 0; i < 2; i++) {
        const dnnl_memory_desc_t *sm = ntp__dnnl_arg_md(pd, stat[i]);
        if (sm && dnnl_memory_desc_get_size(sm) > 0) {
            if ((s = ntp__dnnl_ws_mem(b, sm, &mi)))
                return s;
            args[n] = stat[i];
            mems[n++] = mi;
        }
    }
    dnnl_memory_desc_t plain;
    ntp__dnnl_plain_md(&plain, &k->out[0].shape, b->cdt);
    if ((s = ntp__dnnl_output(b, 0, &plain, 1.0f, &mi)) || (s = ntp__dnnl_alias(b, mi, &md, &view)))
        return s;
    args[n] = DNNL_ARG_DST;
    mems[n++] = view;
    if ((s = ntp__dnnl_step(b, pd, "", NULL, n, args, mems)))
        return s;
    ntp__dnnl_set_main(b, pd);
    return NTP_STATUS_OK;
}

/* ONNX LRN across channels: x / (bias + α/size · Σ x²)^β, which is
 * oneDNN's formula with k = bias. */
static ntp_status lrn(odnn_build *b)
{
    const ntp_attrs *a = &b->n->a;
    dnnl_memory_desc_t md;
    ntp_status s = ntp__dnnl_follow_md(b, 0, b->cdt, &md);
    if (s)
        return s;
    dnnl_lrn_desc_t d;
    dnnl_status_t st = dnnl_lrn_forward_desc_init(
        &d, dnnl_forward_inference, dnnl_lrn_across_channels, &md, ntp__lrn_size(a),
        (float)ntp__lrn_alpha(a), (float)ntp__lrn_beta(a), (float)ntp__lrn_bias(a));
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "lrn descriptor");
    dnnl_primitive_desc_t pd;
    if ((s = ntp__dnnl_pd(b, &pd, &d, NULL, "lrn")))
        return s;
    int args[3] = {DNNL_ARG_SRC, DNNL_ARG_DST, DNNL_ARG_WORKSPACE}, mems[3], n = 2;
    if ((s = ntp__dnnl_input(b, 0, ntp__dnnl_query(pd, dnnl_query_src_md, 0), 1.0f, &mems[0])) ||
        (s = ntp__dnnl_output(b, 0, ntp__dnnl_query(pd, dnnl_query_dst_md, 0), 1.0f, &mems[1])))
        return s;
    const dnnl_memory_desc_t *ws = ntp__dnnl_query(pd, dnnl_query_workspace_md, 0);
    if (ws && dnnl_memory_desc_get_size(ws) > 0 && (s = ntp__dnnl_ws_mem(b, ws, &mems[n++])))
        return s;
    if ((s = ntp__dnnl_step(b, pd, "", NULL, n, args, mems)))
        return s;
    ntp__dnnl_set_main(b, pd);
    return NTP_STATUS_OK;
}

ntp_status ntp__dnnl_norm_build(odnn_build *b)
{
    static ntp_status (*const builders[NTP_OP_COUNT])(odnn_build *) = {
        [NTP_OP_BATCHNORM] = batchnorm,
        [NTP_OP_LAYERNORM] = layernorm,
        [NTP_OP_LRN] = lrn,
    };
    ntp_op op = b->n->op;
    if ((unsigned)op >= NTP_OP_COUNT || !builders[op])
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "not a normalisation op");
    return builders[op](b);
}
