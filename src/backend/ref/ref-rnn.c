/* Recurrent layers, time-major [T, N, I], with ONNX weights and gate orders
 * (docs/ops.md): LSTM gates i, o, f, c; GRU gates z, r, h with
 * linear_before_reset (PyTorch's GRU); vanilla RNN with tanh or relu.
 *
 * Per direction, the input part of every gate for every time step is one
 * GEMM, Xg [T·N, G·H] = X [T·N, I] · Wᵀ + Wb, which is where most of the
 * work is. The recurrent part is then one small GEMM per step,
 * Rg [N, G·H] = h · Rᵀ + Rb, followed by the cell's element-wise update.
 * Keeping Rb apart from Wb is what GRU's linear_before_reset needs
 * (r ⊙ (Rh·h + Rbh)); LSTM and RNN simply add both.
 *
 * Workspace: Xg (T·N·G·H), Rg (N·G·H), h (N·H) and c (N·H, LSTM) floats,
 * reused by the second direction.
 *
 * The GEMM and the gate functions come in an ntp_ref_rnn_math, so that the
 * BLAS backend runs this same kernel on SGEMM (ntp__ref_rnn_run). */
#include <string.h>

#include "ref-impl.h"

static int64_t gate_count(ntp_op op)
{
    return op == NTP_OP_LSTM ? 4 : op == NTP_OP_GRU ? 3 : 1;
}

typedef ntp_ref_rnn_geom rgeom;

bool ntp__ref_rnn_geom(const ntp_node *n, const ntp_shape *x, const ntp_shape *y, rgeom *g)
{
    const ntp_attrs *a = &n->a;
    if (x->ndim != 3)
        return false;
    g->T = x->dim[0];
    g->N = x->dim[1];
    g->I = x->dim[2];
    g->H = a->units;
    g->G = gate_count(n->op);
    g->dirs = a->direction == NTP_DIR_BIDIRECTIONAL ? 2 : 1;
    g->last = a->last_step;
    g->sum = g->dirs == 2 && a->merge == NTP_MERGE_SUM;
    int64_t width = g->dirs == 2 && !g->sum ? 2 * g->H : g->H;
    if (g->H <= 0)
        return false;
    if (g->last)
        return y->ndim == 2 && y->dim[0] == g->N && y->dim[1] == width;
    return y->ndim == 3 && y->dim[0] == g->T && y->dim[1] == g->N && y->dim[2] == width;
}

static bool get_rgeom(const ntp_kargs *k, rgeom *g)
{
    return ntp__ref_rnn_geom(k->node, &k->in[0].shape, &k->out[0].shape, g);
}

size_t ntp__ref_rnn_workspace(const ntp_kargs *k)
{
    rgeom g;
    if (!get_rgeom(k, &g))
        return 0; /* the kernel reports the inconsistency */
    size_t w = ntp__ref_floats(g.T * g.N, g.G * g.H);
    w = ntp__ref_size_add(w, ntp__ref_floats(g.N, g.G * g.H));
    w = ntp__ref_size_add(w, ntp__ref_floats(g.N, 2 * g.H));
    return w;
}

/* Write this direction's hidden state h [N, H] as the output of time step t
 * (full sequence) or as the final state (last step). */
static void emit(const rgeom *g, float *y, const float *h, int64_t t, int64_t dir)
{
    int64_t width = g->dirs == 2 && !g->sum ? 2 * g->H : g->H;
    int64_t col = g->sum ? 0 : dir * g->H;
    float *base = g->last ? y : y + t * g->N * width;
    for (int64_t n = 0; n < g->N; n++) {
        float *dst = base + n * width + col;
        const float *src = h + n * g->H;
        if (g->sum && dir == 1)
            for (int64_t j = 0; j < g->H; j++)
                dst[j] += src[j];
        else
            memcpy(dst, src, (size_t)g->H * sizeof *dst);
    }
}

/* One step of the cell for every batch row: xg and rg hold the input and
 * recurrent parts of the gates ([N, G·H] each), h and c are updated. */
static void cell(const ntp_ref_rnn_math *m, ntp_op op, int rnn_act, const rgeom *g, const float *xg,
                 const float *rg, float *h, float *c)
{
    int64_t H = g->H, GH = g->G * H;
    for (int64_t n = 0; n < g->N; n++) {
        const float *x = xg + n * GH, *r = rg + n * GH;
        float *hn = h + n * H, *cn = c + n * H;
        for (int64_t j = 0; j < H; j++) {
            if (op == NTP_OP_LSTM) {
                float i = m->sigmoid(x[j] + r[j]);
                float o = m->sigmoid(x[H + j] + r[H + j]);
                float f = m->sigmoid(x[2 * H + j] + r[2 * H + j]);
                float ct = m->tanh(x[3 * H + j] + r[3 * H + j]);
                cn[j] = f * cn[j] + i * ct;
                hn[j] = o * m->tanh(cn[j]);
            } else if (op == NTP_OP_GRU) {
                float z = m->sigmoid(x[j] + r[j]);
                float rr = m->sigmoid(x[H + j] + r[H + j]);
                float ht = m->tanh(x[2 * H + j] + rr * r[2 * H + j]);
                hn[j] = (1.0f - z) * ht + z * hn[j];
            } else {
                float v = x[j] + r[j];
                hn[j] = rnn_act == NTP_RNN_ACT_RELU ? (v > 0.0f ? v : 0.0f) : m->tanh(v);
            }
        }
    }
}

ntp_status ntp__ref_rnn_run(ntp_ctx *ctx, const ntp_kargs *k, const ntp_ref_rnn_math *m)
{
    ntp_status st = ntp__ref_expect(ctx, k, 1, 2, 3, 1);
    if (st)
        return st;
    rgeom g;
    if (!get_rgeom(k, &g)) {
        char a[128], b[128];
        return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                              "input %s and output %s do not fit units %lld and the direction",
                              ntp_shape_str(&k->in[0].shape, a, sizeof a),
                              ntp_shape_str(&k->out[0].shape, b, sizeof b),
                              (long long)k->node->a.units);
    }
    int64_t T = g.T, N = g.N, I = g.I, H = g.H, GH = g.G * g.H;
    bool bias = k->n_w == 3;
    if ((st = ntp__ref_expect_weight(ctx, k, 0, g.dirs * GH * I)) ||
        (st = ntp__ref_expect_weight(ctx, k, 1, g.dirs * GH * H)) ||
        (bias && (st = ntp__ref_expect_weight(ctx, k, 2, g.dirs * 2 * GH))))
        return st;
    const float *X = k->in[0].data, *W = k->w[0].data, *R = k->w[1].data;
    const float *B = bias ? k->w[2].data : NULL;
    float *Y = k->out[0].data;
    float *xg = k->workspace, *rg = xg + T * N * GH, *h = rg + N * GH, *c = h + N * H;
    bool reverse_only = k->node->a.direction == NTP_DIR_REVERSE;
    for (int64_t dir = 0; dir < g.dirs; dir++) {
        bool reverse = reverse_only || dir == 1;
        const float *Wd = W + dir * GH * I, *Rd = R + dir * GH * H;
        const float *Wb = B ? B + dir * 2 * GH : NULL, *Rb = B ? Wb + GH : NULL;
        if (Wb)
            ntp__ref_bias_rows(xg, Wb, T * N, GH);
        m->gemm(false, true, T * N, GH, I, 1.0f, X, I, Wd, I, Wb ? 1.0f : 0.0f, xg, GH);
        memset(h, 0, (size_t)(2 * N * H) * sizeof *h); /* h and c */
        for (int64_t s = 0; s < T; s++) {
            int64_t t = reverse ? T - 1 - s : s;
            if (Rb)
                ntp__ref_bias_rows(rg, Rb, N, GH);
            else
                memset(rg, 0, (size_t)(N * GH) * sizeof *rg);
            /* The initial state is zero, so the first step has no
             * recurrent product. */
            if (s > 0)
                m->gemm(false, true, N, GH, H, 1.0f, h, H, Rd, H, 1.0f, rg, GH);
            cell(m, k->node->op, k->node->a.rnn_act, &g, xg + t * N * GH, rg, h, c);
            if (!g.last)
                emit(&g, Y, h, t, dir);
        }
        /* Forward: the state after step T-1; reverse: after step 0. Either
         * way the state the loop ended with. */
        if (g.last)
            emit(&g, Y, h, 0, dir);
    }
    return NTP_STATUS_OK;
}

ntp_status ntp__ref_rnn(ntp_ctx *ctx, const ntp_kargs *k)
{
    static const ntp_ref_rnn_math ref = {ntp__ref_gemm, ntp__ref_sigmoid, ntp__ref_tanh};
    return ntp__ref_rnn_run(ctx, k, &ref);
}
