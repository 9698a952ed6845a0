/* Max and average pooling (with dilation, asymmetric padding, ceil_mode,
 * count_include_pad) and global pooling, on oneDNN's pooling_v2 primitive.
 *
 * oneDNN has no ceil_mode: its output size is always floor((in + pl + pr -
 * ext) / stride) + 1. The shape function already sized the output with
 * PyTorch's rule, so the end padding is recomputed to give that size:
 * pr = (out - 1) * stride + ext - in - pl. That reproduces PyTorch exactly
 * for max pooling and for averages that exclude padding (oneDNN divides by
 * the real elements). Averages that include padding divide by the whole
 * window in oneDNN, while PyTorch does not count the part of a ceil-mode
 * window that lies past the end padding, so that one case is left to the
 * reference backend.
 *
 * Pooling follows its input's layout (a blocked tensor from a convolution
 * stays blocked). */
#include <string.h>

#include "onednn-impl.h"

typedef struct pdims {
    int nk;
    dnnl_dims_t kernel, strides, dil, pl, pr;
    bool extended; /* pr > the declared end padding somewhere */
} pdims;

static bool is_global(ntp_op op)
{
    return op == NTP_OP_GLOBAL_MAXPOOL || op == NTP_OP_GLOBAL_AVGPOOL;
}

static bool pool_dims(const ntp_node *n, const ntp_shape *x, const ntp_shape *y, pdims *p)
{
    const ntp_attrs *a = &n->a;
    memset(p, 0, sizeof *p);
    p->nk = x->ndim - 2;
    if (p->nk < 1 || p->nk > 3 || y->ndim != x->ndim)
        return false;
    for (int d = 0; d < p->nk; d++) {
        int64_t in = x->dim[2 + d], out = y->dim[2 + d];
        if (is_global(n->op)) {
            p->kernel[d] = in;
            p->strides[d] = 1;
            continue;
        }
        if (a->nk != p->nk)
            return false;
        int64_t dil = n->op == NTP_OP_MAXPOOL ? a->dilation[d] : 1;
        int64_t ext = dil * (a->kernel[d] - 1) + 1;
        p->kernel[d] = a->kernel[d];
        p->strides[d] = a->stride[d];
        p->dil[d] = dil - 1;
        p->pl[d] = a->pad[d];
        p->pr[d] = (out - 1) * a->stride[d] + ext - in - a->pad[d];
        /* Floor mode with unused end padding: keep the declared one. */
        if (p->pr[d] < a->pad[p->nk + d] &&
            (in + a->pad[d] + a->pad[p->nk + d] - ext) / a->stride[d] + 1 == out)
            p->pr[d] = a->pad[p->nk + d];
        if (p->pr[d] > a->pad[p->nk + d])
            p->extended = true;
        if (p->pr[d] < 0)
            return false;
    }
    return true;
}

bool ntp__dnnl_pool_supports(const ntp_graph *g, const ntp_node *n)
{
    pdims p;
    if (!pool_dims(n, &g->tensors[n->in[0]].shape, &g->tensors[n->out[0]].shape, &p))
        return false;
    return !(n->op == NTP_OP_AVGPOOL && n->a.count_include_pad && p.extended);
}

bool ntp__dnnl_pool_geometry(const ntp_graph *g, const ntp_node *n, dnnl_dim_t *kernel,
                             dnnl_dim_t *strides, dnnl_dim_t *dil, dnnl_dim_t *pl, dnnl_dim_t *pr)
{
    pdims p;
    if (!ntp__dnnl_pool_supports(g, n) ||
        !pool_dims(n, &g->tensors[n->in[0]].shape, &g->tensors[n->out[0]].shape, &p))
        return false;
    for (int d = 0; d < p.nk; d++) {
        kernel[d] = p.kernel[d];
        strides[d] = p.strides[d];
        dil[d] = p.dil[d];
        pl[d] = p.pl[d];
        pr[d] = p.pr[d];
    }
    return true;
}

ntp_status ntp__dnnl_pool_build(odnn_build *b)
{
    ntp_kargs *k = b->k;
    const ntp_node *n = b->n;
    pdims p;
    if (k->n_in != 1 || !pool_dims(n, &k->in[0].shape, &k->out[0].shape, &p))
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "inconsistent pooling arguments");
    dnnl_alg_kind_t alg;
    if (n->op == NTP_OP_MAXPOOL || n->op == NTP_OP_GLOBAL_MAXPOOL)
        alg = dnnl_pooling_max;
    else if (n->op == NTP_OP_AVGPOOL && n->a.count_include_pad)
        alg = dnnl_pooling_avg_include_padding;
    else
        alg = dnnl_pooling_avg_exclude_padding;
    /* int8 max pooling stays in s8: the maximum of integers in one grid is
     * exact, so the output keeps the input's scale (the calibration gives
     * the output that scale; a different one costs a reorder). */
    bool q8 = b->int8 && alg == dnnl_pooling_max && k->in[0].dtype == NTP_DTYPE_I8 &&
              k->out[0].dtype == NTP_DTYPE_I8;
    dnnl_data_type_t dt = q8 ? dnnl_s8 : b->cdt;
    float scale = 1.0f;
    ntp_status s;
    if (q8 && (s = ntp__dnnl_act_scale(b, NTP_DTYPE_I8, k->in_scale[0], 0, false, &scale)))
        return s;
    dnnl_memory_desc_t src_md, dst_md;
    if ((s = ntp__dnnl_follow_md(b, 0, dt, &src_md)))
        return s;
    dnnl_dims_t yd;
    for (int i = 0; i < k->out[0].shape.ndim; i++)
        yd[i] = k->out[0].shape.dim[i];
    dnnl_memory_desc_init_by_tag(&dst_md, k->out[0].shape.ndim, yd, dt, dnnl_format_tag_any);
    dnnl_pooling_v2_desc_t d;
    dnnl_status_t st = dnnl_pooling_v2_forward_desc_init(
        &d, dnnl_forward_inference, alg, &src_md, &dst_md, p.strides, p.kernel, p.dil, p.pl, p.pr);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "pooling descriptor");
    dnnl_primitive_desc_t pd;
    if ((s = ntp__dnnl_pd(b, &pd, &d, NULL, "pooling")))
        return s;
    int args[3], mems[3], n_args = 0, mi;
    if ((s = ntp__dnnl_input(b, 0, ntp__dnnl_query(pd, dnnl_query_src_md, 0), scale, &mi)))
        return s;
    args[n_args] = DNNL_ARG_SRC;
    mems[n_args++] = mi;
    if ((s = ntp__dnnl_output(b, 0, ntp__dnnl_query(pd, dnnl_query_dst_md, 0), scale, &mi)))
        return s;
    args[n_args] = DNNL_ARG_DST;
    mems[n_args++] = mi;
    /* Max pooling for inference has no workspace; check rather than assume. */
    const dnnl_memory_desc_t *ws = ntp__dnnl_query(pd, dnnl_query_workspace_md, 0);
    if (ws && dnnl_memory_desc_get_size(ws) > 0) {
        if ((s = ntp__dnnl_ws_mem(b, ws, &mi)))
            return s;
        args[n_args] = DNNL_ARG_WORKSPACE;
        mems[n_args++] = mi;
    }
    if ((s = ntp__dnnl_step(b, pd, "", NULL, n_args, args, mems)))
        return s;
    ntp__dnnl_set_main(b, pd);
    return NTP_STATUS_OK;
}
