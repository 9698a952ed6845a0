/* Activations and unary math on oneDNN's eltwise primitive, and softmax.
 *
 * The unary element-wise ops (NTP_UNARY_TABLE) run by the mapping below,
 * also used for post-ops (src/backend/onednn/fuse.c); an op it does not map
 * stays on the reference backend. Worth knowing about the mapping:
 *   relu max=m       eltwise_clip [0, m] (DeepSpeech's clipped ReLU)
 *   leaky_relu       eltwise_relu, alpha = slope
 *   gelu             eltwise_gelu_erf (the exact form, as the op defines)
 *   silu             eltwise_swish, alpha 1
 *   neg              eltwise_linear, alpha -1
 *   reciprocal       eltwise_pow, alpha 1, beta -1
 *   round            eltwise_round (half to even)
 *   softplus         eltwise_soft_relu (ln(1 + eˣ))
 * Activations follow their input's layout (blocked stays blocked); prelu
 * runs on oneDNN's prelu primitive with the slope broadcast numpy-style;
 * softmax and log_softmax run on the plain tensor along their axis. */
#include <stdlib.h>

#include "graph/op-onnx-impl.h"
#include "onednn-impl.h"

/* Where alpha and beta come from: the row's constants, or the node's
 * attributes. */
typedef enum param_from {
    FROM_ROW,     /* alpha and beta as given */
    FROM_PARAM,   /* alpha = the op's parameter (ntp__unary_param 0) */
    FROM_MIN_MAX, /* alpha = min, beta = max (clip) */
    FROM_CEILING  /* relu: a ceiling makes it eltwise_clip [0, max] */
} param_from;

typedef struct unary_map {
    dnnl_alg_kind_t alg; /* dnnl_alg_kind_undef (0): not mapped */
    float alpha, beta;
    param_from from;
} unary_map;

/* op -> oneDNN eltwise algorithm: one line per op this backend runs. */
static const unary_map unary_maps[NTP_OP_COUNT] = {
    [NTP_OP_RELU] = {dnnl_eltwise_relu, 0.0f, 0.0f, FROM_CEILING},
    [NTP_OP_LEAKY_RELU] = {dnnl_eltwise_relu, 0.0f, 0.0f, FROM_PARAM},
    [NTP_OP_SIGMOID] = {dnnl_eltwise_logistic, 0.0f, 0.0f, FROM_ROW},
    [NTP_OP_TANH] = {dnnl_eltwise_tanh, 0.0f, 0.0f, FROM_ROW},
    [NTP_OP_GELU] = {dnnl_eltwise_gelu_erf, 0.0f, 0.0f, FROM_ROW},
    [NTP_OP_SILU] = {dnnl_eltwise_swish, 1.0f, 0.0f, FROM_ROW},
    [NTP_OP_HARDSWISH] = {dnnl_eltwise_hardswish, 0.0f, 0.0f, FROM_ROW},
    [NTP_OP_CLIP] = {dnnl_eltwise_clip, 0.0f, 0.0f, FROM_MIN_MAX},
    [NTP_OP_ABS] = {dnnl_eltwise_abs, 0.0f, 0.0f, FROM_ROW},
    [NTP_OP_NEG] = {dnnl_eltwise_linear, -1.0f, 0.0f, FROM_ROW},
    [NTP_OP_EXP] = {dnnl_eltwise_exp, 0.0f, 0.0f, FROM_ROW},
    [NTP_OP_LOG] = {dnnl_eltwise_log, 0.0f, 0.0f, FROM_ROW},
    [NTP_OP_SQRT] = {dnnl_eltwise_sqrt, 0.0f, 0.0f, FROM_ROW},
    [NTP_OP_RECIPROCAL] = {dnnl_eltwise_pow, 1.0f, -1.0f, FROM_ROW},
    [NTP_OP_ROUND] = {dnnl_eltwise_round, 0.0f, 0.0f, FROM_ROW},
    [NTP_OP_SOFTPLUS] = {dnnl_eltwise_soft_relu, 0.0f, 0.0f, FROM_ROW},
    [NTP_OP_ELU] = {dnnl_eltwise_elu, 0.0f, 0.0f, FROM_PARAM},
    [NTP_OP_MISH] = {dnnl_eltwise_mish, 0.0f, 0.0f, FROM_ROW},
    [NTP_OP_LOG_SIGMOID] = {dnnl_eltwise_logsigmoid, 0.0f, 0.0f, FROM_ROW},
};

bool ntp__dnnl_eltwise_alg(const ntp_node *n, dnnl_alg_kind_t *alg, float *alpha, float *beta)
{
    if ((unsigned)n->op >= NTP_OP_COUNT || unary_maps[n->op].alg == dnnl_alg_kind_undef)
        return false;
    const unary_map *m = &unary_maps[n->op];
    const ntp_attrs *a = &n->a;
    *alg = m->alg;
    *alpha = m->alpha;
    *beta = m->beta;
    switch (m->from) {
    case FROM_ROW: break;
    case FROM_PARAM: *alpha = (float)ntp__unary_param(a, n->op, 0); break;
    case FROM_MIN_MAX:
        *alpha = (float)a->min;
        *beta = (float)a->max;
        break;
    case FROM_CEILING:
        if (a->has_max) {
            *alg = dnnl_eltwise_clip;
            *beta = (float)a->max;
        }
        break;
    }
    return true;
}

bool ntp__dnnl_eltwise_supports(const ntp_graph *g, const ntp_node *n)
{
    dnnl_alg_kind_t alg;
    float alpha, beta;
    if (n->op == NTP_OP_PRELU) {
        const ntp_shape *x = &g->tensors[n->in[0]].shape, *w = &g->tensors[n->w[0]].shape;
        if (n->n_w != 1 || w->ndim > x->ndim || x->ndim > DNNL_MAX_NDIMS)
            return false;
        for (int d = 0; d < w->ndim; d++) {
            int64_t wd = w->dim[d], xd = x->dim[d + x->ndim - w->ndim];
            if (wd != 1 && wd != xd)
                return false;
        }
        return true;
    }
    if (n->op == NTP_OP_SOFTMAX || n->op == NTP_OP_LOG_SOFTMAX) {
        int r = g ? g->tensors[n->in[0]].shape.ndim : 0;
        int64_t axis = n->a.axis < 0 ? n->a.axis + r : n->a.axis;
        return axis >= 0 && axis < r;
    }
    return ntp__dnnl_eltwise_alg(n, &alg, &alpha, &beta);
}

static ntp_status softmax(odnn_build *b)
{
    ntp_kargs *k = b->k;
    const ntp_shape *xs = &k->in[0].shape;
    int64_t axis = b->n->a.axis < 0 ? b->n->a.axis + xs->ndim : b->n->a.axis;
    if (k->n_in != 1 || axis < 0 || axis >= xs->ndim)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "inconsistent softmax arguments");
    dnnl_memory_desc_t md;
    dnnl_status_t st = ntp__dnnl_plain_md(&md, xs, b->cdt);
    dnnl_softmax_v2_desc_t d;
    if (st == dnnl_success)
        st = dnnl_softmax_v2_forward_desc_init(
            &d, dnnl_forward_inference,
            b->n->op == NTP_OP_LOG_SOFTMAX ? dnnl_softmax_log : dnnl_softmax_accurate, &md, &md,
            (int)axis);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "softmax descriptor");
    dnnl_primitive_desc_t pd;
    ntp_status s = ntp__dnnl_pd(b, &pd, &d, NULL, "softmax");
    if (s)
        return s;
    int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, mems[2];
    if ((s = ntp__dnnl_input(b, 0, &md, 1.0f, &mems[0])) ||
        (s = ntp__dnnl_output(b, 0, &md, 1.0f, &mems[1])) ||
        (s = ntp__dnnl_step(b, pd, "", NULL, 2, args, mems)))
        return s;
    ntp__dnnl_set_main(b, pd);
    return NTP_STATUS_OK;
}

/* y = x < 0 ? slope·x : x, the slope right-aligned against the input. */
static ntp_status prelu(odnn_build *b)
{
    ntp_kargs *k = b->k;
    const ntp_shape *x = &k->in[0].shape, *ws = &k->w[0].shape;
    if (k->n_in != 1 || k->n_w != 1 || ws->ndim > x->ndim)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "inconsistent prelu arguments");
    int64_t wd[NTP_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) {
        int dw = d - (x->ndim - ws->ndim);
        wd[d] = dw >= 0 ? ws->dim[dw] : 1;
    }
    dnnl_memory_desc_t md, wmd, uw;
    ntp_status s = ntp__dnnl_follow_md(b, 0, b->cdt, &md);
    if (s)
        return s;
    dnnl_status_t st = ntp__dnnl_plain_dims(&wmd, x->ndim, wd, b->cdt);
    if (st == dnnl_success)
        st = ntp__dnnl_plain_dims(&uw, x->ndim, wd, dnnl_f32);
    dnnl_prelu_desc_t d;
    if (st == dnnl_success)
        st = dnnl_prelu_forward_desc_init(&d, dnnl_forward_inference, &md, &wmd);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "prelu descriptor");
    dnnl_primitive_desc_t pd;
    if ((s = ntp__dnnl_pd(b, &pd, &d, NULL, "prelu")))
        return s;
    float *slope;
    if ((s = ntp__dnnl_weight_f32(b, 0, &slope)))
        return s;
    int args[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST}, mems[3];
    s = ntp__dnnl_pack(b, slope, &uw, ntp__dnnl_query(pd, dnnl_query_weights_md, 0), NULL, 0, 0,
                       &mems[1]);
    free(slope);
    if (s ||
        (s = ntp__dnnl_input(b, 0, ntp__dnnl_query(pd, dnnl_query_src_md, 0), 1.0f, &mems[0])) ||
        (s = ntp__dnnl_output(b, 0, ntp__dnnl_query(pd, dnnl_query_dst_md, 0), 1.0f, &mems[2])) ||
        (s = ntp__dnnl_step(b, pd, "", NULL, 3, args, mems)))
        return s;
    ntp__dnnl_set_main(b, pd);
    return NTP_STATUS_OK;
}

ntp_status ntp__dnnl_eltwise_build(odnn_build *b)
{
    if (b->n->op == NTP_OP_SOFTMAX || b->n->op == NTP_OP_LOG_SOFTMAX)
        return softmax(b);
    if (b->n->op == NTP_OP_PRELU)
        return prelu(b);
    dnnl_alg_kind_t alg;
    float alpha, beta;
    if (b->k->n_in != 1 || !ntp__dnnl_eltwise_alg(b->n, &alg, &alpha, &beta))
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "not an activation");
    /* int8 relu stays in s8 (max(0, q) keeps the grid exactly); the other
     * activations compute in f32. */
    const ntp_kargs *k = b->k;
    bool q8 = b->int8 && alg == dnnl_eltwise_relu && alpha == 0.0f &&
              k->in[0].dtype == NTP_DTYPE_I8 && k->out[0].dtype == NTP_DTYPE_I8;
    float scale = 1.0f;
    ntp_status s;
    if (q8 && (s = ntp__dnnl_act_scale(b, NTP_DTYPE_I8, k->in_scale[0], 0, false, &scale)))
        return s;
    dnnl_memory_desc_t md;
    if ((s = ntp__dnnl_follow_md(b, 0, q8 ? dnnl_s8 : b->cdt, &md)))
        return s;
    dnnl_eltwise_desc_t d;
    dnnl_status_t st =
        dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, alg, &md, alpha, beta);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "eltwise descriptor");
    dnnl_primitive_desc_t pd;
    if ((s = ntp__dnnl_pd(b, &pd, &d, NULL, "eltwise")))
        return s;
    int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, mems[2];
    if ((s = ntp__dnnl_input(b, 0, &md, scale, &mems[0])) ||
        (s = ntp__dnnl_output(b, 0, ntp__dnnl_query(pd, dnnl_query_dst_md, 0), scale, &mems[1])) ||
        (s = ntp__dnnl_step(b, pd, "", NULL, 2, args, mems)))
        return s;
    ntp__dnnl_set_main(b, pd);
    return NTP_STATUS_OK;
}
