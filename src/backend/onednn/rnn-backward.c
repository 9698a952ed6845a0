/* Training backward of the recurrent layers on oneDNN (docs/train.md):
 * LSTM, GRU and vanilla RNN (tanh, relu), forward, reverse and
 * bidirectional (concat or sum), every step or the last step, through
 * oneDNN's RNN backward primitives (dnnl_lstm_backward,
 * dnnl_lbr_gru_backward, dnnl_vanilla_rnn_backward) in f32.
 *
 * The backward reads the forward's workspace (the gates and states of
 * every step); the trainer's forward ran on its reference engine, so each
 * call first runs oneDNN's forward-training primitive on the layer's input
 * for it. One call gives everything: dX, dW, dR and the biases.
 *
 * ntprof's layers are ONNX's (src/train/train-rnn.c): W [D, G·H, I],
 * R [D, G·H, H] with LSTM gates i, o, f, c and GRU z, r, h, B [D, 2·G·H]
 * (Wb, then Rb), zero initial state. They are rearranged here into
 * oneDNN's gate order (ntp__dnnl_rnn_gate_map) as ldgoi, then reordered
 * into the formats each primitive chose; the gradients come back the same
 * way. ntprof's GRU is linear_before_reset (PyTorch's), oneDNN's lbr_gru,
 * whose bias has a fourth gate: the candidate's recurrent bias, which the
 * reset gate multiplies. oneDNN's other GRU (the reset gate applied before
 * the recurrent product) is not ntprof's and is not used. LSTM and RNN
 * add the two biases: both halves of B take the same gradient.
 *
 * sequence="last": the layer's output is each direction's final state,
 * dst_iter; its gradient enters as diff_dst_iter (both directions the
 * same for a sum), with a zero diff_dst_layer (and diff_dst_iter_c).
 *
 * The initial state is zero, as in the reference engine, and is given to
 * both primitives as a zero src_iter (src_iter_c), not left out: without
 * it, oneDNN 2.6's backward of a left-to-right LSTM or RNN (whose output
 * doubles as its workspace) pairs each step with its own state instead of
 * the previous one in the product over all steps that gives dR, and dR
 * is wrong (test_onednn_rnn_backward's 'r' and 'lf' fail; GRU, reverse and
 * bidirectional layers take another path and do not).
 *
 * oneDNN accumulates the weight gradients into diff_weights and diff_bias:
 * they are zeroed before every call. */
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "onednn-impl.h"

typedef struct rb_geom {
    int64_t T, N, I, H, G, Gb, D, C;
    bool last, sum;
} rb_geom;

/* The memory objects of one layer: user-side (ldgoi weights in oneDNN's
 * gate order, host-filled), the formats the forward and the backward
 * chose (the same object where the format is the user's), the states and
 * the gradients. */
enum {
    M_X,     /* src_layer: the layer's input (a->x) */
    M_WL,    /* W, ldgoi */
    M_WI,    /* R, ldgoi */
    M_WL_F,  /* W as the forward wants it */
    M_WI_F,  /* R as the forward wants it */
    M_WL_B,  /* W as the backward wants it */
    M_WI_B,  /* R as the backward wants it */
    M_BIAS,  /* ldgo, Gb gates */
    M_Y,     /* dst_layer (the forward's, scratch) */
    M_HT,    /* dst_iter (last step) */
    M_CT,    /* dst_iter_c (LSTM, last step) */
    M_WS,    /* the workspace */
    M_DX,    /* diff_src_layer: a->dx, or scratch */
    M_DWL_B, /* diff_weights_layer as the backward gives it */
    M_DWI_B, /* diff_weights_iter as the backward gives it */
    M_DWL,   /* dW, ldgoi */
    M_DWI,   /* dR, ldgoi */
    M_DB,    /* diff_bias, ldgo */
    M_DY,    /* diff_dst_layer: a->dy, or zeros (last step) */
    M_DHT,   /* diff_dst_iter (last step), from a->dy */
    M_DCT,   /* diff_dst_iter_c (LSTM, last step): zeros */
    M_HI,    /* src_iter: zeros */
    M_CI,    /* src_iter_c (LSTM): zeros */
    M_DHI,   /* diff_src_iter: scratch */
    M_DCI,   /* diff_src_iter_c (LSTM): scratch */
    M_COUNT
};

/* The reorders around the primitives: weights in, gradients out. */
enum { R_WL_F, R_WI_F, R_WL_B, R_WI_B, R_DWL, R_DWI, R_COUNT };
static const int re_from[R_COUNT] = {M_WL, M_WI, M_WL, M_WI, M_DWL_B, M_DWI_B};
static const int re_to[R_COUNT] = {M_WL_F, M_WI_F, M_WL_B, M_WI_B, M_DWL, M_DWI};

struct odnn_rbwd {
    const ntp_node *n;
    rb_geom g;
    dnnl_primitive_t fwd, bwd, re[R_COUNT];
    dnnl_memory_t mem[M_COUNT];
    bool own[M_COUNT]; /* created here (the others alias one of these) */
    float *dx_scratch; /* M_DX's buffer for a call without dx (oneDNN frees
                        * a memory's own buffer when its handle is set) */
    int n_fargs, n_bargs;
    dnnl_exec_arg_t fargs[12], bargs[24];
    /* The training forward ran (ntp__odnn_rnn_forward): its workspace and
     * output are there for the backward, which then skips its own. */
    bool fwd_done;
};

static bool recurrent(ntp_op op)
{
    return op == NTP_OP_LSTM || op == NTP_OP_GRU || op == NTP_OP_RNN;
}

static void geometry(const ntp_graph *gr, const ntp_node *n, rb_geom *g)
{
    const ntp_shape *x = &gr->tensors[n->in[0]].shape;
    g->T = x->dim[0];
    g->N = x->dim[1];
    g->I = x->dim[2];
    g->H = n->a.units;
    g->G = n->op == NTP_OP_LSTM ? 4 : n->op == NTP_OP_GRU ? 3 : 1;
    g->Gb = n->op == NTP_OP_GRU ? 4 : g->G;
    g->D = n->a.direction == NTP_DIR_BIDIRECTIONAL ? 2 : 1;
    g->last = n->a.last_step;
    g->sum = g->D == 2 && n->a.merge == NTP_MERGE_SUM;
    g->C = g->D == 2 && !g->sum ? 2 * g->H : g->H;
}

bool ntp__odnn_rnn_supports_backward(const ntp_graph *gr, const ntp_node *n)
{
    if (!recurrent(n->op) || n->n_in != 1 || n->n_out != 1 || n->n_w < 2 || n->n_w > 3 ||
        n->a.units <= 0 || gr->tensors[n->in[0]].shape.ndim != 3)
        return false;
    if (n->op == NTP_OP_RNN && n->a.rnn_act != NTP_RNN_ACT_TANH && n->a.rnn_act != NTP_RNN_ACT_RELU)
        return false;
    rb_geom g;
    geometry(gr, n, &g);
    const ntp_shape *ys = &gr->tensors[n->out[0]].shape;
    int64_t want_y = g.last ? g.N * g.C : g.T * g.N * g.C;
    return ntp_shape_numel(&gr->tensors[n->w[0]].shape) == g.D * g.G * g.H * g.I &&
           ntp_shape_numel(&gr->tensors[n->w[1]].shape) == g.D * g.G * g.H * g.H &&
           (n->n_w < 3 || ntp_shape_numel(&gr->tensors[n->w[2]].shape) == g.D * 2 * g.G * g.H) &&
           ntp_shape_numel(ys) == want_y;
}

static ntp_status fail(ntp_ctx *ctx, const ntp_backward_args *a, dnnl_status_t st, const char *what)
{
    return ntp__dnnl_status_error(ctx, "onednn recurrent backward", a->g, a->n, st, what);
}

/* The descriptors both primitives are made of. */
typedef struct rb_mds {
    dnnl_memory_desc_t x, w_any, i_any, wl, wi, bias, y, ht, ct;
} rb_mds;

static void describe(const rb_geom *g, rb_mds *m)
{
    dnnl_dims_t xd = {g->T, g->N, g->I}, yd = {g->T, g->N, g->C};
    dnnl_dims_t wl = {1, g->D, g->I, g->G, g->H}, wi = {1, g->D, g->H, g->G, g->H};
    dnnl_dims_t bd = {1, g->D, g->Gb, g->H}, id = {1, g->D, g->N, g->H};
    dnnl_memory_desc_init_by_tag(&m->x, 3, xd, dnnl_f32, dnnl_tnc);
    dnnl_memory_desc_init_by_tag(&m->y, 3, yd, dnnl_f32, dnnl_tnc);
    dnnl_memory_desc_init_by_tag(&m->w_any, 5, wl, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&m->i_any, 5, wi, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&m->wl, 5, wl, dnnl_f32, dnnl_ldgoi);
    dnnl_memory_desc_init_by_tag(&m->wi, 5, wi, dnnl_f32, dnnl_ldgoi);
    dnnl_memory_desc_init_by_tag(&m->bias, 4, bd, dnnl_f32, dnnl_ldgo);
    dnnl_memory_desc_init_by_tag(&m->ht, 4, id, dnnl_f32, dnnl_ldnc);
    dnnl_memory_desc_init_by_tag(&m->ct, 4, id, dnnl_f32, dnnl_ldnc);
}

/* The forward-training descriptor (bwd false) or the backward one. */
static dnnl_status_t rnn_desc(const ntp_node *n, const rb_geom *g, const rb_mds *m, bool bwd,
                              dnnl_rnn_desc_t *d)
{
    dnnl_rnn_direction_t dir = n->a.direction == NTP_DIR_FORWARD   ? dnnl_unidirectional_left2right
                               : n->a.direction == NTP_DIR_REVERSE ? dnnl_unidirectional_right2left
                               : g->sum                            ? dnnl_bidirectional_sum
                                                                   : dnnl_bidirectional_concat;
    const dnnl_memory_desc_t *ht = g->last ? &m->ht : NULL, *ct = g->last ? &m->ct : NULL;
    /* The initial state, zero, is given (see the file's comment). */
    const dnnl_memory_desc_t *hi = &m->ht, *ci = &m->ct;
    const dnnl_prop_kind_t fw = dnnl_forward_training;
    if (n->op == NTP_OP_LSTM)
        return bwd ? dnnl_lstm_backward_desc_init(d, dnnl_backward, dir, &m->x, hi, ci, &m->w_any,
                                                  &m->i_any, &m->bias, &m->y, ht, ct, &m->x, hi, ci,
                                                  &m->w_any, &m->i_any, &m->bias, &m->y, ht, ct, 0)
                   : dnnl_lstm_forward_desc_init(d, fw, dir, &m->x, hi, ci, &m->w_any, &m->i_any,
                                                 &m->bias, &m->y, ht, ct, 0);
    if (n->op == NTP_OP_GRU)
        return bwd ? dnnl_lbr_gru_backward_desc_init(d, dnnl_backward, dir, &m->x, hi, &m->w_any,
                                                     &m->i_any, &m->bias, &m->y, ht, &m->x, hi,
                                                     &m->w_any, &m->i_any, &m->bias, &m->y, ht, 0)
                   : dnnl_lbr_gru_forward_desc_init(d, fw, dir, &m->x, hi, &m->w_any, &m->i_any,
                                                    &m->bias, &m->y, ht, 0);
    dnnl_alg_kind_t act = n->a.rnn_act == NTP_RNN_ACT_RELU ? dnnl_eltwise_relu : dnnl_eltwise_tanh;
    return bwd ? dnnl_vanilla_rnn_backward_desc_init(
                     d, dnnl_backward, act, dir, &m->x, hi, &m->w_any, &m->i_any, &m->bias, &m->y,
                     ht, &m->x, hi, &m->w_any, &m->i_any, &m->bias, &m->y, ht, 0, 0.0f, 0.0f)
               : dnnl_vanilla_rnn_forward_desc_init(d, fw, act, dir, &m->x, hi, &m->w_any,
                                                    &m->i_any, &m->bias, &m->y, ht, 0, 0.0f, 0.0f);
}

/* Memory object k of e for md, allocated here (own) or fed a handle at
 * each call. */
static void new_mem(odnn_state *s, struct odnn_rbwd *e, int k, const dnnl_memory_desc_t *md,
                    bool own, dnnl_status_t *st)
{
    if (*st)
        return;
    *st = dnnl_memory_create(&e->mem[k], md, s->eng, own ? DNNL_MEMORY_ALLOCATE : DNNL_MEMORY_NONE);
    if (!*st)
        e->own[k] = true;
}

/* Memory k in the format `want` a primitive chose: the user-side memory
 * `user` itself when the formats agree, else its own (filled or read by a
 * reorder). */
static void chosen_mem(odnn_state *s, struct odnn_rbwd *e, int k, int user,
                       const dnnl_memory_desc_t *want, dnnl_status_t *st)
{
    if (*st)
        return;
    const dnnl_memory_desc_t *um;
    if ((*st = dnnl_memory_get_memory_desc(e->mem[user], &um)))
        return;
    if (!want) {
        *st = dnnl_runtime_error;
        return;
    }
    if (dnnl_memory_desc_equal(um, want)) {
        e->mem[k] = e->mem[user];
        return;
    }
    new_mem(s, e, k, want, true, st);
}

static void add_arg(struct odnn_rbwd *e, bool fwd, int arg, int k)
{
    if (!e->mem[k])
        return;
    if (fwd)
        e->fargs[e->n_fargs++] = (dnnl_exec_arg_t){arg, e->mem[k]};
    else
        e->bargs[e->n_bargs++] = (dnnl_exec_arg_t){arg, e->mem[k]};
}

static void release_one(struct odnn_rbwd *e)
{
    dnnl_primitive_destroy(e->fwd);
    dnnl_primitive_destroy(e->bwd);
    for (int r = 0; r < R_COUNT; r++)
        dnnl_primitive_destroy(e->re[r]);
    for (int k = 0; k < M_COUNT; k++)
        if (e->own[k])
            dnnl_memory_destroy(e->mem[k]);
    free(e->dx_scratch);
}

void ntp__odnn_rnn_backward_release(odnn_state *s)
{
    for (int i = 0; i < s->n_rbwd; i++)
        release_one(&s->rbwd[i]);
    free(s->rbwd);
    s->rbwd = NULL;
    s->n_rbwd = 0;
}

/* The primitives and memory objects of layer a->n, into *e. */
static ntp_status build(ntp_ctx *ctx, odnn_state *s, const ntp_backward_args *a,
                        struct odnn_rbwd *e)
{
    const ntp_node *n = a->n;
    memset(e, 0, sizeof *e);
    e->n = n;
    geometry(a->g, n, &e->g);
    rb_mds m;
    describe(&e->g, &m);
    dnnl_rnn_desc_t fd, bd;
    dnnl_primitive_desc_t fpd = NULL, bpd = NULL;
    const char *what = "the forward-training descriptor";
    dnnl_status_t st = rnn_desc(n, &e->g, &m, false, &fd);
    if (!st)
        st = dnnl_primitive_desc_create(&fpd, &fd, NULL, s->eng, NULL);
    if (!st) {
        what = "the backward descriptor";
        st = rnn_desc(n, &e->g, &m, true, &bd);
    }
    if (!st)
        st = dnnl_primitive_desc_create(&bpd, &bd, NULL, s->eng, fpd);
    if (!st) {
        what = "dnnl_memory_create";
        const dnnl_memory_desc_t *ws = ntp__dnnl_query(fpd, dnnl_query_workspace_md, 0);
        bool last = e->g.last, lstm = n->op == NTP_OP_LSTM;
        new_mem(s, e, M_X, &m.x, false, &st);
        new_mem(s, e, M_WL, &m.wl, true, &st);
        new_mem(s, e, M_WI, &m.wi, true, &st);
        chosen_mem(s, e, M_WL_F, M_WL, ntp__dnnl_arg_md(fpd, DNNL_ARG_WEIGHTS_LAYER), &st);
        chosen_mem(s, e, M_WI_F, M_WI, ntp__dnnl_arg_md(fpd, DNNL_ARG_WEIGHTS_ITER), &st);
        chosen_mem(s, e, M_WL_B, M_WL, ntp__dnnl_arg_md(bpd, DNNL_ARG_WEIGHTS_LAYER), &st);
        chosen_mem(s, e, M_WI_B, M_WI, ntp__dnnl_arg_md(bpd, DNNL_ARG_WEIGHTS_ITER), &st);
        new_mem(s, e, M_BIAS, &m.bias, true, &st);
        new_mem(s, e, M_Y, &m.y, true, &st);
        if (last)
            new_mem(s, e, M_HT, &m.ht, true, &st);
        if (last && lstm)
            new_mem(s, e, M_CT, &m.ct, true, &st);
        if (ws && dnnl_memory_desc_get_size(ws) > 0)
            new_mem(s, e, M_WS, ws, true, &st);
        new_mem(s, e, M_DX, &m.x, false, &st);
        if (!st && !(e->dx_scratch = malloc((size_t)(e->g.T * e->g.N * e->g.I) * sizeof(float))))
            st = dnnl_out_of_memory;
        new_mem(s, e, M_DWL, &m.wl, true, &st);
        new_mem(s, e, M_DWI, &m.wi, true, &st);
        chosen_mem(s, e, M_DWL_B, M_DWL, ntp__dnnl_arg_md(bpd, DNNL_ARG_DIFF_WEIGHTS_LAYER), &st);
        chosen_mem(s, e, M_DWI_B, M_DWI, ntp__dnnl_arg_md(bpd, DNNL_ARG_DIFF_WEIGHTS_ITER), &st);
        new_mem(s, e, M_DB, &m.bias, true, &st);
        new_mem(s, e, M_DY, &m.y, !!last, &st);
        if (last)
            new_mem(s, e, M_DHT, &m.ht, true, &st);
        if (last && lstm)
            new_mem(s, e, M_DCT, &m.ct, true, &st);
        new_mem(s, e, M_HI, &m.ht, true, &st);
        new_mem(s, e, M_DHI, &m.ht, true, &st);
        if (lstm) {
            new_mem(s, e, M_CI, &m.ct, true, &st);
            new_mem(s, e, M_DCI, &m.ct, true, &st);
        }
    }
    for (int r = 0; r < R_COUNT && !st; r++) {
        if (e->mem[re_to[r]] == e->mem[re_from[r]])
            continue;
        what = "a weights reorder";
        const dnnl_memory_desc_t *from, *to;
        dnnl_primitive_desc_t rpd = NULL;
        if (!(st = dnnl_memory_get_memory_desc(e->mem[re_from[r]], &from)) &&
            !(st = dnnl_memory_get_memory_desc(e->mem[re_to[r]], &to)) &&
            !(st = dnnl_reorder_primitive_desc_create(&rpd, from, s->eng, to, s->eng, NULL)))
            st = dnnl_primitive_create(&e->re[r], rpd);
        if (rpd)
            dnnl_primitive_desc_destroy(rpd);
    }
    if (!st) {
        what = "dnnl_primitive_create";
        add_arg(e, true, DNNL_ARG_SRC_LAYER, M_X);
        add_arg(e, true, DNNL_ARG_SRC_ITER, M_HI);
        add_arg(e, true, DNNL_ARG_SRC_ITER_C, M_CI);
        add_arg(e, true, DNNL_ARG_WEIGHTS_LAYER, M_WL_F);
        add_arg(e, true, DNNL_ARG_WEIGHTS_ITER, M_WI_F);
        add_arg(e, true, DNNL_ARG_BIAS, M_BIAS);
        add_arg(e, true, DNNL_ARG_DST_LAYER, M_Y);
        add_arg(e, true, DNNL_ARG_DST_ITER, M_HT);
        add_arg(e, true, DNNL_ARG_DST_ITER_C, M_CT);
        add_arg(e, true, DNNL_ARG_WORKSPACE, M_WS);
        add_arg(e, false, DNNL_ARG_SRC_LAYER, M_X);
        add_arg(e, false, DNNL_ARG_SRC_ITER, M_HI);
        add_arg(e, false, DNNL_ARG_SRC_ITER_C, M_CI);
        add_arg(e, false, DNNL_ARG_DIFF_SRC_ITER, M_DHI);
        add_arg(e, false, DNNL_ARG_DIFF_SRC_ITER_C, M_DCI);
        add_arg(e, false, DNNL_ARG_WEIGHTS_LAYER, M_WL_B);
        add_arg(e, false, DNNL_ARG_WEIGHTS_ITER, M_WI_B);
        add_arg(e, false, DNNL_ARG_BIAS, M_BIAS);
        add_arg(e, false, DNNL_ARG_DST_LAYER, M_Y);
        add_arg(e, false, DNNL_ARG_DST_ITER, M_HT);
        add_arg(e, false, DNNL_ARG_DST_ITER_C, M_CT);
        add_arg(e, false, DNNL_ARG_WORKSPACE, M_WS);
        add_arg(e, false, DNNL_ARG_DIFF_SRC_LAYER, M_DX);
        add_arg(e, false, DNNL_ARG_DIFF_WEIGHTS_LAYER, M_DWL_B);
        add_arg(e, false, DNNL_ARG_DIFF_WEIGHTS_ITER, M_DWI_B);
        add_arg(e, false, DNNL_ARG_DIFF_BIAS, M_DB);
        add_arg(e, false, DNNL_ARG_DIFF_DST_LAYER, M_DY);
        add_arg(e, false, DNNL_ARG_DIFF_DST_ITER, M_DHT);
        add_arg(e, false, DNNL_ARG_DIFF_DST_ITER_C, M_DCT);
        st = dnnl_primitive_create(&e->fwd, fpd);
    }
    if (!st)
        st = dnnl_primitive_create(&e->bwd, bpd);
    if (bpd)
        dnnl_primitive_desc_destroy(bpd);
    if (fpd)
        dnnl_primitive_desc_destroy(fpd);
    if (st) {
        release_one(e);
        memset(e, 0, sizeof *e);
        return fail(ctx, a, st, what);
    }
    return NTP_STATUS_OK;
}

/* The data buffer of memory k (an own one). */
static float *buf(const struct odnn_rbwd *e, int k)
{
    void *p = NULL;
    return dnnl_memory_get_data_handle(e->mem[k], &p) ? NULL : p;
}

/* Zero memory k (an own one), whatever its format. */
static void zero(const struct odnn_rbwd *e, int k)
{
    const dnnl_memory_desc_t *md;
    float *p = buf(e, k);
    if (p && !dnnl_memory_get_memory_desc(e->mem[k], &md))
        memset(p, 0, dnnl_memory_desc_get_size(md));
}

/* ONNX [D, G·H, cols] in ONNX's gate order into ldgoi in oneDNN's
 * (to_onednn), or back. */
static void regate(const rb_geom *g, const int *map, const float *src, float *dst, int64_t cols,
                   bool to_onednn)
{
    size_t bytes = (size_t)(g->H * cols) * sizeof *dst;
    for (int64_t d = 0; d < g->D; d++)
        for (int64_t gd = 0; gd < g->G; gd++) {
            int64_t o = (d * g->G + map[gd]) * g->H * cols, l = (d * g->G + gd) * g->H * cols;
            memcpy(dst + (to_onednn ? l : o), src + (to_onednn ? o : l), bytes);
        }
}

/* ONNX B [D, 2·G·H] (Wb, Rb) into oneDNN's bias [D, Gb, H]: the two
 * added, but for the GRU candidate's Rb, oneDNN's fourth gate. */
static void to_bias(const rb_geom *g, ntp_op op, const int *map, const float *B, float *o)
{
    int64_t H = g->H, GH = g->G * H;
    for (int64_t d = 0; d < g->D; d++) {
        const float *wb = B + d * 2 * GH, *rb = wb + GH;
        float *od = o + d * g->Gb * H;
        for (int64_t gd = 0; gd < g->G; gd++)
            for (int64_t h = 0; h < H; h++) {
                int64_t j = map[gd] * H + h;
                bool split = op == NTP_OP_GRU && gd == 2;
                od[gd * H + h] = wb[j] + (split ? 0.0f : rb[j]);
                if (split)
                    od[3 * H + h] = rb[j];
            }
    }
}

/* oneDNN's diff_bias back into ONNX's dB: Wb's part the gate's gradient,
 * Rb's the same (its own for the GRU candidate). */
static void from_bias(const rb_geom *g, ntp_op op, const int *map, const float *o, float *dB)
{
    int64_t H = g->H, GH = g->G * H;
    for (int64_t d = 0; d < g->D; d++) {
        float *wb = dB + d * 2 * GH, *rb = wb + GH;
        const float *od = o + d * g->Gb * H;
        for (int64_t gd = 0; gd < g->G; gd++)
            for (int64_t h = 0; h < H; h++) {
                int64_t j = map[gd] * H + h;
                bool split = op == NTP_OP_GRU && gd == 2;
                wb[j] = od[gd * H + h];
                rb[j] = split ? od[3 * H + h] : od[gd * H + h];
            }
    }
}

/* The last step's output gradient dY [N, C] into diff_dst_iter [D, N, H]:
 * direction d's columns (concat), or all of dY for each (sum). */
static void last_grad(const rb_geom *g, const float *dy, float *dht)
{
    for (int64_t d = 0; d < g->D; d++)
        for (int64_t b = 0; b < g->N; b++)
            memcpy(dht + (d * g->N + b) * g->H, dy + b * g->C + (g->sum ? 0 : d * g->H),
                   (size_t)g->H * sizeof *dht);
}

static dnnl_status_t run_prim(odnn_state *s, dnnl_primitive_t p, dnnl_memory_t from,
                              dnnl_memory_t to)
{
    if (!p)
        return dnnl_success;
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    return dnnl_primitive_execute(p, s->stream, 2, args);
}

/* Layer a->n's primitives, built at the first call. */
static ntp_status entry(ntp_ctx *ctx, odnn_state *s, const ntp_backward_args *a,
                        struct odnn_rbwd **out)
{
    for (int i = 0; i < s->n_rbwd; i++)
        if (s->rbwd[i].n == a->n) {
            *out = &s->rbwd[i];
            return NTP_STATUS_OK;
        }
    struct odnn_rbwd *grown = realloc(s->rbwd, (size_t)(s->n_rbwd + 1) * sizeof *grown);
    if (!grown)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "onednn backward: out of memory");
    s->rbwd = grown;
    ntp_status r = build(ctx, s, a, &s->rbwd[s->n_rbwd]);
    if (r)
        return r;
    *out = &s->rbwd[s->n_rbwd++];
    return NTP_STATUS_OK;
}

/* The weights in oneDNN's gate order (w, r, b as ONNX lays them out; b
 * NULL: none) and a zero initial state. */
static bool set_weights(struct odnn_rbwd *e, ntp_op op, const float *w, const float *r,
                        const float *b)
{
    const rb_geom *g = &e->g;
    const int *map = ntp__dnnl_rnn_gate_map(op);
    float *wl = buf(e, M_WL), *wi = buf(e, M_WI), *bias = buf(e, M_BIAS);
    if (!wl || !wi || !bias)
        return false;
    regate(g, map, w, wl, g->I, true);
    regate(g, map, r, wi, g->H, true);
    if (b)
        to_bias(g, op, map, b, bias);
    else
        zero(e, M_BIAS);
    zero(e, M_HI);
    if (e->mem[M_CI])
        zero(e, M_CI);
    return true;
}

ntp_status ntp__odnn_rnn_forward(ntp_ctx *ctx, odnn_state *s, const ntp_train_fwd_args *a)
{
    ntp_backward_args ba = {.g = a->g, .n = a->n};
    struct odnn_rbwd *e = NULL;
    ntp_status r = entry(ctx, s, &ba, &e);
    if (r)
        return r;
    if (!a->in[0] || !a->w[0] || !a->w[1] || !a->out)
        return ntp__be_error(ctx, "onednn training forward", a->g, a->n, NTP_STATUS_INTERNAL,
                             "a buffer the layer reads or writes was not given");
    const rb_geom *g = &e->g;
    e->fwd_done = false;
    const char *what = "dnnl_memory_get_data_handle";
    dnnl_status_t st = set_weights(e, a->n->op, a->w[0], a->w[1], a->n->n_w > 2 ? a->w[2] : NULL)
                           ? dnnl_success
                           : dnnl_runtime_error;
    if (!st) {
        what = "dnnl_memory_set_data_handle";
        st = dnnl_memory_set_data_handle(e->mem[M_X], (void *)a->in[0]);
    }
    for (int k = R_WL_F; k <= R_WI_F && !st; k++) {
        what = "a weights reorder";
        st = run_prim(s, e->re[k], e->mem[re_from[k]], e->mem[re_to[k]]);
    }
    if (!st) {
        what = "the forward-training dnnl_primitive_execute";
        st = dnnl_primitive_execute(e->fwd, s->stream, e->n_fargs, e->fargs);
    }
    if (!st) {
        what = "dnnl_stream_wait";
        st = dnnl_stream_wait(s->stream);
    }
    const float *y = st ? NULL : buf(e, g->last ? M_HT : M_Y);
    if (!st && !y)
        st = dnnl_runtime_error;
    if (st)
        return ntp__dnnl_status_error(ctx, "onednn training forward", a->g, a->n, st, what);
    if (!g->last) {
        /* dst_layer [T, N, C]: the layer's output (a sum already summed). */
        memcpy(a->out, y, (size_t)(g->T * g->N * g->C) * sizeof *a->out);
    } else {
        /* dst_iter [D, N, H]: each direction's final state, concatenated
         * or summed into [N, C]. */
        for (int64_t b = 0; b < g->N; b++)
            for (int64_t h = 0; h < g->C; h++) {
                float v = 0.0f;
                for (int64_t d = 0; d < g->D; d++)
                    if (g->sum || h / g->H == d)
                        v += y[(d * g->N + b) * g->H + h % g->H];
                a->out[b * g->C + h] = v;
            }
    }
    e->fwd_done = true;
    return NTP_STATUS_OK;
}

ntp_status ntp__odnn_rnn_backward(ntp_ctx *ctx, odnn_state *s, const ntp_backward_args *a)
{
    struct odnn_rbwd *e = NULL;
    ntp_status r = entry(ctx, s, a, &e);
    if (r)
        return r;
    if (!a->x || !a->w || !a->r || !a->dy)
        return ntp__be_error(ctx, "onednn backward", a->g, a->n, NTP_STATUS_INTERNAL,
                             "a buffer the layer reads was not given");
    const rb_geom *g = &e->g;
    const int *map = ntp__dnnl_rnn_gate_map(a->n->op);
    float *dwl = buf(e, M_DWL), *dwi = buf(e, M_DWI), *db = buf(e, M_DB);
    /* After the training forward, its workspace stands (the weights and
     * input it read are these); else this call runs it. */
    bool fwd = !e->fwd_done;
    e->fwd_done = false;
    if (!dwl || !dwi || !db || (fwd && !set_weights(e, a->n->op, a->w, a->r, a->b)))
        return fail(ctx, a, dnnl_runtime_error, "dnnl_memory_get_data_handle");
    zero(e, M_DWL_B);
    zero(e, M_DWI_B);
    zero(e, M_DB);
    const char *what = "dnnl_memory_set_data_handle";
    dnnl_status_t st = dnnl_memory_set_data_handle(e->mem[M_X], (void *)a->x);
    if (!st)
        st = dnnl_memory_set_data_handle(e->mem[M_DX], a->dx ? a->dx : e->dx_scratch);
    if (!st && g->last) {
        float *dht = buf(e, M_DHT);
        zero(e, M_DY);
        if (e->mem[M_DCT])
            zero(e, M_DCT);
        if (dht)
            last_grad(g, a->dy, dht);
        else
            st = dnnl_runtime_error;
    } else if (!st) {
        st = dnnl_memory_set_data_handle(e->mem[M_DY], (void *)a->dy);
    }
    for (int k = fwd ? R_WL_F : R_WL_B; k <= R_WI_B && !st; k++) {
        what = "a weights reorder";
        st = run_prim(s, e->re[k], e->mem[re_from[k]], e->mem[re_to[k]]);
    }
    if (!st && fwd) {
        what = "the forward-training dnnl_primitive_execute (the workspace)";
        st = dnnl_primitive_execute(e->fwd, s->stream, e->n_fargs, e->fargs);
    }
    if (!st) {
        what = "the backward dnnl_primitive_execute";
        st = dnnl_primitive_execute(e->bwd, s->stream, e->n_bargs, e->bargs);
    }
    for (int k = R_DWL; k <= R_DWI && !st; k++) {
        what = "a gradient reorder";
        st = run_prim(s, e->re[k], e->mem[re_from[k]], e->mem[re_to[k]]);
    }
    if (!st) {
        what = "dnnl_stream_wait";
        st = dnnl_stream_wait(s->stream);
    }
    if (st)
        return fail(ctx, a, st, what);
    if (a->dw)
        regate(g, map, dwl, a->dw, g->I, false);
    if (a->dr)
        regate(g, map, dwi, a->dr, g->H, false);
    if (a->db)
        from_bias(g, a->n->op, map, db, a->db);
    return NTP_STATUS_OK;
}
