/* LSTM, GRU and vanilla RNN on BLAS, time-major [T, N, I] with ONNX weights
 * and gate orders (docs/ops.md): LSTM gates i, o, f, c; GRU gates z, r, h
 * with linear_before_reset; RNN with tanh or relu.
 *
 * Per direction, the input part of every gate at every step is one SGEMM,
 * Xg [T·N, G·H] = X · Wᵀ + Wb: the bulk of the arithmetic, at full GEMM
 * efficiency. The recurrent part is one product per step,
 * Rg [N, G·H] = h · Rᵀ + Rb, an SGEMV when the batch is 1; it streams the
 * whole of R every step, which is what bounds recurrent layers at small
 * batches. Rb stays apart from Wb for GRU's r ⊙ (Rh·h + Rbh).
 *
 * Workspace: Xg (T·N·G·H), Rg (N·G·H), h and c (N·H each) floats, reused by
 * the second direction. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "blas-impl.h"

typedef struct rgeom {
    int64_t T, N, I, H, G, dirs;
    bool last, sum;
} rgeom;

static int64_t gates(ntp_op op)
{
    return op == NTP_OP_LSTM ? 4 : op == NTP_OP_GRU ? 3 : 1;
}

static bool get_rgeom(const ntp_node *n, const ntp_shape *x, const ntp_shape *y, rgeom *g)
{
    if (x->ndim != 3 || n->a.units <= 0)
        return false;
    g->T = x->dim[0];
    g->N = x->dim[1];
    g->I = x->dim[2];
    g->H = n->a.units;
    g->G = gates(n->op);
    g->dirs = n->a.direction == NTP_DIR_BIDIRECTIONAL ? 2 : 1;
    g->last = n->a.last_step;
    g->sum = g->dirs == 2 && n->a.merge == NTP_MERGE_SUM;
    int64_t width = g->dirs == 2 && !g->sum ? 2 * g->H : g->H;
    if (g->last)
        return y->ndim == 2 && y->dim[0] == g->N && y->dim[1] == width;
    return y->ndim == 3 && y->dim[0] == g->T && y->dim[1] == g->N && y->dim[2] == width;
}

bool ntp__blas_rnn_supports(const ntp_graph *gr, const ntp_node *n)
{
    rgeom g;
    return n->n_w >= 2 && get_rgeom(n, &ntp__cin(gr, n, 0)->shape, &ntp__cout(gr, n, 0)->shape, &g) &&
           ntp__blas_fits(g.T * g.N) && ntp__blas_fits(g.G * g.H) && ntp__blas_fits(g.I);
}

ntp_status ntp__blas_rnn_prepare(ntp_ctx *ctx, const ntp_kargs *k, blasb_node *nd)
{
    rgeom g;
    if (!get_rgeom(k->node, &k->in[0].shape, &k->out[0].shape, &g))
        return ntp__blas_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "input and output do not fit the layer");
    int64_t GH = g.G * g.H;
    bool bias = k->n_w == 3;
    if (ntp_shape_numel(&k->w[0].shape) != g.dirs * GH * g.I ||
        ntp_shape_numel(&k->w[1].shape) != g.dirs * GH * g.H ||
        (bias && ntp_shape_numel(&k->w[2].shape) != g.dirs * 2 * GH))
        return ntp__blas_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "weights do not fit the layer");
    nd->n_steps = 1;
    nd->main_step = 0;
    nd->ws = (size_t)(g.T * g.N * GH + g.N * GH + 2 * g.N * g.H) * sizeof(float);
    snprintf(nd->impl, sizeof nd->impl, "openblas:sgemm+%s", g.N == 1 ? "sgemv" : "sgemm");
    return NTP_STATUS_OK;
}

static float sigm(float v) { return 1.0f / (1.0f + expf(-v)); }

static void cell(const ntp_node *n, const rgeom *g, const float *xg, const float *rg, float *h,
                 float *c)
{
    int64_t H = g->H, GH = g->G * H;
    for (int64_t b = 0; b < g->N; b++) {
        const float *x = xg + b * GH, *r = rg + b * GH;
        float *hb = h + b * H, *cb = c + b * H;
        if (n->op == NTP_OP_LSTM) {
            for (int64_t j = 0; j < H; j++) {
                float i = sigm(x[j] + r[j]), o = sigm(x[H + j] + r[H + j]);
                float f = sigm(x[2 * H + j] + r[2 * H + j]), ct = tanhf(x[3 * H + j] + r[3 * H + j]);
                cb[j] = f * cb[j] + i * ct;
                hb[j] = o * tanhf(cb[j]);
            }
        } else if (n->op == NTP_OP_GRU) {
            for (int64_t j = 0; j < H; j++) {
                float z = sigm(x[j] + r[j]), rr = sigm(x[H + j] + r[H + j]);
                float ht = tanhf(x[2 * H + j] + rr * r[2 * H + j]);
                hb[j] = (1.0f - z) * ht + z * hb[j];
            }
        } else {
            bool relu = n->a.rnn_act == NTP_RNN_ACT_RELU;
            for (int64_t j = 0; j < H; j++) {
                float v = x[j] + r[j];
                hb[j] = relu ? (v > 0.0f ? v : 0.0f) : tanhf(v);
            }
        }
    }
}

/* This direction's state as the output of step t, or as the final state. */
static void emit(const rgeom *g, float *y, const float *h, int64_t t, int64_t dir)
{
    int64_t width = g->dirs == 2 && !g->sum ? 2 * g->H : g->H;
    float *base = g->last ? y : y + t * g->N * width;
    for (int64_t b = 0; b < g->N; b++) {
        float *dst = base + b * width + (g->sum ? 0 : dir * g->H);
        const float *src = h + b * g->H;
        if (g->sum && dir == 1)
            for (int64_t j = 0; j < g->H; j++)
                dst[j] += src[j];
        else
            memcpy(dst, src, (size_t)g->H * sizeof *dst);
    }
}

ntp_status ntp__blas_rnn_run(ntp_ctx *ctx, const ntp_kargs *k, const blasb_node *nd)
{
    rgeom g;
    if (!get_rgeom(k->node, &k->in[0].shape, &k->out[0].shape, &g))
        return ntp__blas_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "input and output do not fit the layer");
    int64_t T = g.T, N = g.N, I = g.I, H = g.H, GH = g.G * g.H;
    const float *X = k->in[0].data, *W = k->w[0].data, *R = k->w[1].data;
    const float *B = k->n_w == 3 ? k->w[2].data : NULL;
    float *Y = k->out[0].data;
    float *xg = k->workspace, *rg = xg + T * N * GH, *h = rg + N * GH, *c = h + N * H;
    bool reverse_only = k->node->a.direction == NTP_DIR_REVERSE;
    for (int64_t dir = 0; dir < g.dirs; dir++) {
        bool reverse = reverse_only || dir == 1;
        const float *Wd = W + dir * GH * I, *Rd = R + dir * GH * H;
        const float *Wb = B ? B + dir * 2 * GH : NULL, *Rb = B ? Wb + GH : NULL;
        ntp__blas_gemm(false, true, T * N, GH, I, 1.0f, X, I, Wd, I, 0.0f, xg, GH);
        if (Wb)
            for (int64_t row = 0; row < T * N; row++)
                for (int64_t j = 0; j < GH; j++)
                    xg[row * GH + j] += Wb[j];
        memset(h, 0, (size_t)(2 * N * H) * sizeof *h);
        for (int64_t s = 0; s < T; s++) {
            int64_t t = reverse ? T - 1 - s : s;
            for (int64_t b = 0; b < N; b++) {
                if (Rb)
                    memcpy(rg + b * GH, Rb, (size_t)GH * sizeof *rg);
                else
                    memset(rg + b * GH, 0, (size_t)GH * sizeof *rg);
            }
            /* The initial state is zero: no recurrent product at the first step. */
            if (s > 0) {
                if (N == 1)
                    ntp__blas_gemv(GH, H, 1.0f, Rd, H, h, 1.0f, rg);
                else
                    ntp__blas_gemm(false, true, N, GH, H, 1.0f, h, H, Rd, H, 1.0f, rg, GH);
            }
            cell(k->node, &g, xg + t * N * GH, rg, h, c);
            if (!g.last)
                emit(&g, Y, h, t, dir);
        }
        if (g.last)
            emit(&g, Y, h, 0, dir);
    }
    ntp__blas_post_ops(k, nd);
    return NTP_STATUS_OK;
}
