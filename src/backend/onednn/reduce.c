/* Reductions (ONNX ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd,
 * ReduceL1, ReduceL2, ReduceSumSquare) on oneDNN's reduction primitive: the
 * output keeps every reduced dim as 1, which is exactly how oneDNN
 * describes a reduction's destination. L1 and L2 are oneDNN's
 * norm_lp_sum with p = 1 and 2, SumSquare its norm_lp_power_p_sum with
 * p = 2. ReduceLogSum and ReduceLogSumExp have no oneDNN form and stay on
 * the reference backend. */
#include "onednn-impl.h"

/* oneDNN's reduction for each reduction op, and its p where it is a norm;
 * the ops without a row (alg 0, dnnl_alg_kind_undef) have none. */
static const struct {
    dnnl_alg_kind_t alg;
    float p;
} reductions[NTP_OP_COUNT] = {
    [NTP_OP_REDUCE_MEAN] = {dnnl_reduction_mean, 0.0f},
    [NTP_OP_REDUCE_SUM] = {dnnl_reduction_sum, 0.0f},
    [NTP_OP_REDUCE_MAX] = {dnnl_reduction_max, 0.0f},
    [NTP_OP_REDUCE_MIN] = {dnnl_reduction_min, 0.0f},
    [NTP_OP_REDUCE_PROD] = {dnnl_reduction_mul, 0.0f},
    [NTP_OP_REDUCE_L1] = {dnnl_reduction_norm_lp_sum, 1.0f},
    [NTP_OP_REDUCE_L2] = {dnnl_reduction_norm_lp_sum, 2.0f},
    [NTP_OP_REDUCE_SUM_SQUARE] = {dnnl_reduction_norm_lp_power_p_sum, 2.0f},
};

static bool reduce_alg(ntp_op op, dnnl_alg_kind_t *alg, float *p)
{
    *p = 0.0f;
    if ((unsigned)op >= NTP_OP_COUNT || reductions[op].alg == dnnl_alg_kind_undef)
        return false;
    *alg = reductions[op].alg;
    *p = reductions[op].p;
    return true;
}

bool ntp__dnnl_reduce_supports(const ntp_graph *g, const ntp_node *n)
{
    dnnl_alg_kind_t alg;
    float p;
    const ntp_shape *x = &g->tensors[n->in[0]].shape, *y = &g->tensors[n->out[0]].shape;
    return reduce_alg(n->op, &alg, &p) && x->ndim == y->ndim && x->ndim <= DNNL_MAX_NDIMS;
}

ntp_status ntp__dnnl_reduce_build(odnn_build *b)
{
    ntp_kargs *k = b->k;
    dnnl_alg_kind_t alg;
    float p;
    if (k->n_in != 1 || !reduce_alg(b->n->op, &alg, &p) ||
        k->in[0].shape.ndim != k->out[0].shape.ndim)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "inconsistent reduction arguments");
    dnnl_memory_desc_t src, dst;
    dnnl_status_t st = ntp__dnnl_plain_md(&src, &k->in[0].shape, b->cdt);
    if (st == dnnl_success)
        st = ntp__dnnl_plain_md(&dst, &k->out[0].shape, b->cdt);
    dnnl_reduction_desc_t d;
    if (st == dnnl_success)
        st = dnnl_reduction_desc_init(&d, alg, &src, &dst, p, 0.0f);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "reduction descriptor");
    dnnl_primitive_desc_t pd;
    ntp_status s = ntp__dnnl_pd(b, &pd, &d, NULL, "reduction");
    if (s)
        return s;
    int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, mems[2];
    if ((s = ntp__dnnl_input(b, 0, &src, 1.0f, &mems[0])) ||
        (s = ntp__dnnl_output(b, 0, &dst, 1.0f, &mems[1])) ||
        (s = ntp__dnnl_step(b, pd, "", NULL, 2, args, mems)))
        return s;
    ntp__dnnl_set_main(b, pd);
    return NTP_STATUS_OK;
}
