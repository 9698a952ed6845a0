/* LSTM, GRU and vanilla RNN on oneDNN's RNN primitives (time-major, one
 * layer, forward / reverse / bidirectional with concat or sum).
 *
 * Gate orders differ: ONNX stores LSTM gates as i, o, f, c and oneDNN
 * expects i, f, c, o; GRU's z, r, h are oneDNN's u, r, o. The weights are
 * rearranged once here into oneDNN's ldgoi order (per direction, per gate,
 * the output rows with their input columns, which is ONNX's own row layout)
 * and reordered into the packed format the primitive chose. GRU is
 * PyTorch's linear_before_reset variant, oneDNN's lbr_gru, whose bias has a
 * fourth gate: the recurrent bias of the candidate, kept apart because the
 * reset gate multiplies it. LSTM and RNN add the input and recurrent biases.
 *
 * sequence="last" outputs come from dst_iter, the final state of each
 * direction (for a reverse direction: after step 0), copied into the
 * [N, H·dirs] output through a strided view (concat) or reduced over the
 * directions (sum), as a step of the layer itself.
 *
 * At i8 the recurrent layers compute in f32 (oneDNN 2.6's int8 RNNs want
 * u8 inputs with a shift and only cover LSTM); the inputs are dequantised
 * and the outputs quantised by reorder steps. */
#include <stdlib.h>
#include <string.h>

#include "onednn-impl.h"

bool ntp__dnnl_rnn_supports(const ntp_graph *g, const ntp_node *n)
{
    const ntp_shape *x = &g->tensors[n->in[0]].shape;
    return x->ndim == 3 && n->a.units > 0;
}

typedef struct rgeom {
    int64_t T, N, I, H, G, Gb, D;
    bool last, sum, bias;
} rgeom;

static const int lstm_map[4] = {0, 2, 3, 1}; /* oneDNN gate <- ONNX gate */
static const int same_map[4] = {0, 1, 2, 3};

const int *ntp__dnnl_rnn_gate_map(ntp_op op)
{
    return op == NTP_OP_LSTM ? lstm_map : same_map;
}

/* ONNX [D, G·H, cols] -> ldgoi [1, D, G, H, cols] with oneDNN's gate order. */
static void regate(const rgeom *g, const int *map, const float *src, int64_t cols, float *dst)
{
    for (int64_t d = 0; d < g->D; d++)
        for (int64_t gd = 0; gd < g->G; gd++) {
            const float *s = src + (d * g->G + map[gd]) * g->H * cols;
            memcpy(dst + (d * g->G + gd) * g->H * cols, s, (size_t)(g->H * cols) * sizeof *dst);
        }
}

/* ONNX B [D, 2·G·H] (Wb then Rb) -> oneDNN bias [1, D, Gb, H]. */
static void rebias(const rgeom *g, ntp_op op, const int *map, const float *B, float *dst)
{
    int64_t H = g->H, GH = g->G * H;
    for (int64_t d = 0; d < g->D; d++) {
        const float *wb = B + d * 2 * GH, *rb = wb + GH;
        float *o = dst + d * g->Gb * H;
        for (int64_t gd = 0; gd < g->G; gd++) {
            int64_t go = map[gd];
            for (int64_t h = 0; h < H; h++) {
                /* lbr_gru: the candidate's recurrent bias is the 4th gate. */
                bool split = op == NTP_OP_GRU && gd == 2;
                o[gd * H + h] = wb[go * H + h] + (split ? 0.0f : rb[go * H + h]);
                if (split)
                    o[3 * H + h] = rb[go * H + h];
            }
        }
    }
}

static ntp_status pack_weights(odnn_build *b, const rgeom *g, const int *map, int wi, int64_t cols,
                               const dnnl_memory_desc_t *want, int *mi)
{
    float *w = NULL;
    ntp_status s = ntp__dnnl_weight_f32(b, wi, &w);
    if (s)
        return s;
    float *t = malloc((size_t)(g->D * g->G * g->H * cols) * sizeof *t + 1);
    if (!t) {
        free(w);
        return ntp__dnnl_fail(b, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    regate(g, map, w, cols, t);
    dnnl_memory_desc_t user;
    dnnl_dims_t dims = {1, g->D, cols, g->G, g->H};
    dnnl_memory_desc_init_by_tag(&user, 5, dims, dnnl_f32, dnnl_ldgoi);
    s = ntp__dnnl_pack(b, t, &user, want, NULL, 0, 0, mi);
    free(t);
    free(w);
    return s;
}

/* sequence="last": dst_iter [1, D, N, H] into the [N, H·D] or [N, H]
 * output. */
static ntp_status last_step(odnn_build *b, const rgeom *g, int iter)
{
    const ntp_kargs *k = b->k;
    dnnl_data_type_t odt = ntp__dnnl_dt(k->out[0].dtype);
    const dnnl_memory_desc_t *im;
    dnnl_status_t st = dnnl_memory_get_memory_desc(b->nd->mems[iter].m, &im);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "dst_iter descriptor");
    float out_scale;
    ntp_status s = ntp__dnnl_act_scale(b, k->out[0].dtype, k->out_scale[0], 0, true, &out_scale);
    if (s)
        return s;
    dnnl_memory_desc_t view;
    dnnl_primitive_desc_t pd;
    int to;
    if (!g->sum) {
        /* out[n][d·H + h] = dst_iter[0][d][n][h]. */
        dnnl_dims_t dims = {1, g->D, g->N, g->H},
                    strides = {g->D * g->N * g->H, g->H, g->D * g->H, 1};
        if ((st = dnnl_memory_desc_init_by_strides(&view, 4, dims, odt, strides)))
            return ntp__dnnl_error(b, st, "last-step view");
        if ((s = ntp__dnnl_mem(b, &view, ODNN_BIND_OUT, 0, 0, &to)) ||
            (s = ntp__dnnl_reorder_pd(b, &pd, im, &view, 1.0f / out_scale)))
            return s;
    } else {
        dnnl_dims_t dims = {1, 1, g->N, g->H};
        dnnl_reduction_desc_t d;
        dnnl_memory_desc_t sum_md;
        /* Reduce in the compute type; a reorder quantises at i8. */
        dnnl_memory_desc_init_by_tag(&sum_md, 4, dims, b->cdt, dnnl_abcd);
        dnnl_memory_desc_init_by_tag(&view, 4, dims, odt, dnnl_abcd);
        if ((st = dnnl_reduction_desc_init(&d, dnnl_reduction_sum, im, &sum_md, 0.0f, 0.0f)))
            return ntp__dnnl_error(b, st, "direction sum descriptor");
        int sum;
        bool direct = odt == b->cdt && out_scale == 1.0f;
        if ((s = ntp__dnnl_pd(b, &pd, &d, NULL, "direction sum")) ||
            (s = direct ? ntp__dnnl_mem(b, &view, ODNN_BIND_OUT, 0, 0, &sum)
                        : ntp__dnnl_ws_mem(b, &sum_md, &sum)))
            return s;
        int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, mems[2] = {iter, sum};
        if ((s = ntp__dnnl_step(b, pd, ":last", NULL, 2, args, mems)))
            return s;
        if (direct)
            return NTP_STATUS_OK;
        if ((s = ntp__dnnl_mem(b, &view, ODNN_BIND_OUT, 0, 0, &to)) ||
            (s = ntp__dnnl_reorder_pd(b, &pd, &sum_md, &view, 1.0f / out_scale)))
            return s;
        iter = sum;
    }
    int args[2] = {DNNL_ARG_FROM, DNNL_ARG_TO}, mems[2] = {iter, to};
    return ntp__dnnl_step(b, pd, ":last_out", NULL, 2, args, mems);
}

ntp_status ntp__dnnl_rnn_build(odnn_build *b)
{
    ntp_kargs *k = b->k;
    const ntp_node *n = b->n;
    const ntp_attrs *a = &n->a;
    rgeom g;
    g.T = k->in[0].shape.dim[0];
    g.N = k->in[0].shape.dim[1];
    g.I = k->in[0].shape.dim[2];
    g.H = a->units;
    g.G = n->op == NTP_OP_LSTM ? 4 : n->op == NTP_OP_GRU ? 3 : 1;
    g.Gb = n->op == NTP_OP_GRU ? 4 : g.G;
    g.D = a->direction == NTP_DIR_BIDIRECTIONAL ? 2 : 1;
    g.last = a->last_step;
    g.sum = g.D == 2 && a->merge == NTP_MERGE_SUM;
    g.bias = k->n_w >= 3;
    if (k->n_in != 1 || k->n_w < 2 || ntp_shape_numel(&k->w[0].shape) != g.D * g.G * g.H * g.I ||
        ntp_shape_numel(&k->w[1].shape) != g.D * g.G * g.H * g.H ||
        (g.bias && ntp_shape_numel(&k->w[2].shape) != g.D * 2 * g.G * g.H))
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "inconsistent recurrent arguments");
    dnnl_rnn_direction_t dir = a->direction == NTP_DIR_FORWARD   ? dnnl_unidirectional_left2right
                               : a->direction == NTP_DIR_REVERSE ? dnnl_unidirectional_right2left
                               : g.sum                           ? dnnl_bidirectional_sum
                                                                 : dnnl_bidirectional_concat;
    dnnl_data_type_t t = b->cdt;
    int64_t C = g.D == 2 && !g.sum ? 2 * g.H : g.H;
    dnnl_dims_t xd = {g.T, g.N, g.I}, yd = {g.T, g.N, C};
    dnnl_dims_t wl = {1, g.D, g.I, g.G, g.H}, wi = {1, g.D, g.H, g.G, g.H};
    dnnl_dims_t bd = {1, g.D, g.Gb, g.H}, id = {1, g.D, g.N, g.H};
    dnnl_memory_desc_t x_md, wl_md, wi_md, b_md, y_md, hi_md, ci_md;
    dnnl_memory_desc_init_by_tag(&x_md, 3, xd, t, dnnl_tnc);
    dnnl_memory_desc_init_by_tag(&wl_md, 5, wl, t, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&wi_md, 5, wi, t, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&b_md, 4, bd, dnnl_f32, dnnl_ldgo);
    dnnl_memory_desc_init_by_tag(&y_md, 3, yd, t, dnnl_tnc);
    dnnl_memory_desc_init_by_tag(&hi_md, 4, id, t, dnnl_ldnc);
    dnnl_memory_desc_init_by_tag(&ci_md, 4, id, dnnl_f32, dnnl_ldnc);
    /* A layer without bias gets a zero bias: oneDNN 2.6 has no LSTM
     * implementation for a missing bias descriptor. */
    const dnnl_memory_desc_t *bias = &b_md;
    const dnnl_memory_desc_t *hi = g.last ? &hi_md : NULL;
    dnnl_rnn_desc_t d;
    dnnl_status_t st;
    const int *map = ntp__dnnl_rnn_gate_map(n->op);
    if (n->op == NTP_OP_LSTM) {
        st = dnnl_lstm_forward_desc_init(&d, dnnl_forward_inference, dir, &x_md, NULL, NULL, &wl_md,
                                         &wi_md, bias, &y_md, hi, g.last ? &ci_md : NULL, 0);
    } else if (n->op == NTP_OP_GRU) {
        st = dnnl_lbr_gru_forward_desc_init(&d, dnnl_forward_inference, dir, &x_md, NULL, &wl_md,
                                            &wi_md, bias, &y_md, hi, 0);
    } else {
        dnnl_alg_kind_t act =
            a->rnn_act == NTP_RNN_ACT_RELU ? dnnl_eltwise_relu : dnnl_eltwise_tanh;
        st = dnnl_vanilla_rnn_forward_desc_init(&d, dnnl_forward_inference, act, dir, &x_md, NULL,
                                                &wl_md, &wi_md, bias, &y_md, hi, 0, 0.0f, 0.0f);
    }
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "recurrent descriptor");
    dnnl_primitive_desc_t pd;
    ntp_status s = ntp__dnnl_pd(b, &pd, &d, NULL, "recurrent layer");
    if (s)
        return s;
    int args[12], mems[12], na = 0, mi;
    if ((s = ntp__dnnl_input(b, 0, &x_md, 1.0f, &mi)))
        return s;
    args[na] = DNNL_ARG_SRC_LAYER;
    mems[na++] = mi;
    if ((s = pack_weights(b, &g, map, 0, g.I, ntp__dnnl_arg_md(pd, DNNL_ARG_WEIGHTS_LAYER), &mi)))
        return s;
    args[na] = DNNL_ARG_WEIGHTS_LAYER;
    mems[na++] = mi;
    if ((s = pack_weights(b, &g, map, 1, g.H, ntp__dnnl_arg_md(pd, DNNL_ARG_WEIGHTS_ITER), &mi)))
        return s;
    args[na] = DNNL_ARG_WEIGHTS_ITER;
    mems[na++] = mi;
    {
        float *B = NULL, *ob = calloc((size_t)(g.D * g.Gb * g.H) + 1, sizeof *ob);
        if (!ob)
            return ntp__dnnl_fail(b, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        if (g.bias && (s = ntp__dnnl_weight_f32(b, 2, &B))) {
            free(ob);
            return s;
        }
        if (g.bias)
            rebias(&g, n->op, map, B, ob);
        s = ntp__dnnl_pack(b, ob, &b_md, ntp__dnnl_arg_md(pd, DNNL_ARG_BIAS), NULL, 0, 0, &mi);
        free(B);
        free(ob);
        if (s)
            return s;
        args[na] = DNNL_ARG_BIAS;
        mems[na++] = mi;
    }
    int iter = -1;
    if (g.last) {
        /* Every step's output is scratch; the final states are the result. */
        if ((s = ntp__dnnl_ws_mem(b, &y_md, &mi)))
            return s;
        args[na] = DNNL_ARG_DST_LAYER;
        mems[na++] = mi;
        if ((s = ntp__dnnl_ws_mem(b, &hi_md, &iter)))
            return s;
        args[na] = DNNL_ARG_DST_ITER;
        mems[na++] = iter;
        if (n->op == NTP_OP_LSTM) {
            if ((s = ntp__dnnl_ws_mem(b, &ci_md, &mi)))
                return s;
            args[na] = DNNL_ARG_DST_ITER_C;
            mems[na++] = mi;
        }
    } else {
        if ((s = ntp__dnnl_output(b, 0, &y_md, 1.0f, &mi)))
            return s;
        args[na] = DNNL_ARG_DST_LAYER;
        mems[na++] = mi;
    }
    const dnnl_memory_desc_t *wsm = ntp__dnnl_query(pd, dnnl_query_workspace_md, 0);
    if (wsm && dnnl_memory_desc_get_size(wsm) > 0) {
        if ((s = ntp__dnnl_ws_mem(b, wsm, &mi)))
            return s;
        args[na] = DNNL_ARG_WORKSPACE;
        mems[na++] = mi;
    }
    if ((s = ntp__dnnl_step(b, pd, "", NULL, na, args, mems)))
        return s;
    ntp__dnnl_set_main(b, pd);
    return g.last ? last_step(b, &g, iter) : NTP_STATUS_OK;
}
