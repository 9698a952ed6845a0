/* Recurrent layers in training: forward and backward through time, in
 * double (docs/train.md). Time-major [T, N, I], ONNX weights and gate
 * orders as the reference backend runs them (src/backend/ref/ref-rnn.c):
 * W [dirs, G·H, I], R [dirs, G·H, H], B [dirs, 2·G·H] (Wb then Rb); LSTM
 * gates i, o, f, c; GRU gates z, r, h with linear_before_reset (PyTorch's
 * GRU); vanilla RNN with tanh or relu. The initial state is zero.
 *
 * The forward keeps, per direction and step, the gates after their
 * activation, the GRU's recurrent candidate Rh·h + Rbh, the cell state and
 * the hidden state. The backward walks each direction's steps in reverse
 * processing order, carrying dh and dc to the previous step, and keeps the
 * gradient of every gate's pre-activation (dG) of every step: backward-data
 * reads it for dX = dG·W, backward-weights for dW = dGᵀ·X, dR = dGᵣᵀ·h₋₁ and
 * the biases. Whichever of the two runs first walks the recurrence (the
 * first layer of a model has no backward-data), so its time holds the
 * walk. */
#include <math.h>
#include <string.h>

#include "train-impl.h"

typedef struct rnn_geom {
    int64_t T, N, I, H, G, GH, dirs, width, per;
    bool last, sum, reverse_only;
} rnn_geom;

static void geom(const ntp_train_state *s, const ntp_node *n, rnn_geom *g)
{
    const ntp_shape *x = &s->g->tensors[n->in[0]].shape;
    g->T = x->dim[0];
    g->N = x->dim[1];
    g->I = x->dim[2];
    g->H = n->a.units;
    g->G = n->op == NTP_OP_LSTM ? 4 : n->op == NTP_OP_GRU ? 3 : 1;
    g->GH = g->G * g->H;
    g->dirs = n->a.direction == NTP_DIR_BIDIRECTIONAL ? 2 : 1;
    g->last = n->a.last_step;
    g->sum = g->dirs == 2 && n->a.merge == NTP_MERGE_SUM;
    g->width = g->dirs == 2 && !g->sum ? 2 * g->H : g->H;
    g->reverse_only = n->a.direction == NTP_DIR_REVERSE;
    g->per = g->N * (g->GH + 3 * g->H); /* gates, GRU candidate, c, h */
}

int64_t ntp__train_rnn_saved(const ntp_graph *gr, const ntp_node *n)
{
    const ntp_shape *x = &gr->tensors[n->in[0]].shape;
    int64_t T = x->dim[0], N = x->dim[1], H = n->a.units;
    int64_t G = n->op == NTP_OP_LSTM ? 4 : n->op == NTP_OP_GRU ? 3 : 1;
    int64_t dirs = n->a.direction == NTP_DIR_BIDIRECTIONAL ? 2 : 1;
    /* Per step: gates and states; dG of every step; dh, dc, dh₋₁, dc₋₁;
     * the flag that the walk is done. */
    return dirs * T * N * (G * H + 3 * H) + dirs * T * N * G * H + 4 * N * H + 1;
}

static double sigm(double x)
{
    return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}

/* Where step st (in processing order) of direction dir is kept. */
static int64_t step_at(const rnn_geom *g, int64_t dir, int64_t st)
{
    return (dir * g->T + st) * g->per;
}

/* The column of the output this direction writes. */
static double *out_at(const rnn_geom *g, double *y, int64_t t, int64_t dir)
{
    return (g->last ? y : y + t * g->N * g->width) + (g->sum ? 0 : dir * g->H);
}

static void forward(ntp_train_state *s, const ntp_node *n, const rnn_geom *g)
{
    const double *X = s->val[n->in[0]], *W = s->val[n->w[0]], *R = s->val[n->w[1]];
    const double *B = n->n_w > 2 ? s->val[n->w[2]] : NULL;
    double *Y = s->val[n->out[0]], *sv = s->saved[n - s->g->nodes];
    int64_t T = g->T, N = g->N, I = g->I, H = g->H, GH = g->GH;
    /* The gates' input and recurrent parts of one row, [2·GH], in the dG
     * area (dirs·T·N·GH + 4·N·H >= 2·GH since G <= 4). */
    double *pre = sv + g->dirs * T * g->per;
    pre[g->dirs * T * N * GH + 4 * N * H] = 0.0; /* no walk done for this forward */
    for (int64_t dir = 0; dir < g->dirs; dir++) {
        bool rev = g->reverse_only || dir == 1;
        const double *Wd = W + dir * GH * I, *Rd = R + dir * GH * H;
        const double *Wb = B ? B + dir * 2 * GH : NULL, *Rb = B ? Wb + GH : NULL;
        for (int64_t st = 0; st < T; st++) {
            int64_t t = rev ? T - 1 - st : st;
            double *cur = sv + step_at(g, dir, st);
            const double *prev = st > 0 ? cur - g->per : NULL;
            double *act = cur, *rh = cur + N * GH, *c = rh + N * H, *h = c + N * H;
            const double *cp = prev ? prev + N * GH + N * H : NULL, *hp = cp ? cp + N * H : NULL;
            for (int64_t b = 0; b < N; b++) {
                double *xg = pre, *rg = pre + GH;
                const double *x = X + (t * N + b) * I;
                for (int64_t j = 0; j < GH; j++) {
                    double a = Wb ? Wb[j] : 0.0, r = Rb ? Rb[j] : 0.0;
                    for (int64_t i = 0; i < I; i++)
                        a += Wd[j * I + i] * x[i];
                    if (hp)
                        for (int64_t k = 0; k < H; k++)
                            r += Rd[j * H + k] * hp[b * H + k];
                    xg[j] = a;
                    rg[j] = r;
                }
                double *ab = act + b * GH;
                for (int64_t j = 0; j < H; j++) {
                    double hprev = hp ? hp[b * H + j] : 0.0, cprev = cp ? cp[b * H + j] : 0.0;
                    double *hj = &h[b * H + j];
                    if (n->op == NTP_OP_LSTM) {
                        double gi = sigm(xg[j] + rg[j]), go = sigm(xg[H + j] + rg[H + j]);
                        double gf = sigm(xg[2 * H + j] + rg[2 * H + j]);
                        double gc = tanh(xg[3 * H + j] + rg[3 * H + j]);
                        ab[j] = gi;
                        ab[H + j] = go;
                        ab[2 * H + j] = gf;
                        ab[3 * H + j] = gc;
                        c[b * H + j] = gf * cprev + gi * gc;
                        *hj = go * tanh(c[b * H + j]);
                    } else if (n->op == NTP_OP_GRU) {
                        double z = sigm(xg[j] + rg[j]), r = sigm(xg[H + j] + rg[H + j]);
                        double ht = tanh(xg[2 * H + j] + r * rg[2 * H + j]);
                        ab[j] = z;
                        ab[H + j] = r;
                        ab[2 * H + j] = ht;
                        rh[b * H + j] = rg[2 * H + j];
                        *hj = (1.0 - z) * ht + z * hprev;
                    } else {
                        double v = xg[j] + rg[j];
                        *hj = n->a.rnn_act == NTP_RNN_ACT_RELU ? (v > 0 ? v : 0.0) : tanh(v);
                        ab[j] = *hj;
                    }
                }
            }
            if (!g->last || st == T - 1) {
                for (int64_t b = 0; b < N; b++) {
                    double *dst = out_at(g, Y, t, dir) + b * g->width;
                    for (int64_t j = 0; j < H; j++)
                        dst[j] = g->sum && dir == 1 ? dst[j] + h[b * H + j] : h[b * H + j];
                }
            }
        }
    }
}

/* The walk back through time: dG of every step, per direction. */
static void walk(ntp_train_state *s, const ntp_node *n, const rnn_geom *g)
{
    const double *R = s->val[n->w[1]], *dY = s->grad[n->out[0]];
    double *sv = s->saved[n - s->g->nodes];
    int64_t T = g->T, N = g->N, H = g->H, GH = g->GH;
    double *dG = sv + g->dirs * T * g->per;
    double *dh = dG + g->dirs * T * N * GH, *dc = dh + N * H, *dhp = dc + N * H, *dcp = dhp + N * H;
    for (int64_t dir = 0; dir < g->dirs; dir++) {
        bool rev = g->reverse_only || dir == 1;
        const double *Rd = R + dir * GH * H;
        memset(dhp, 0, (size_t)(2 * N * H) * sizeof *dhp); /* dh₋₁ and dc₋₁ of the step after */
        for (int64_t st = T - 1; st >= 0; st--) {
            int64_t t = rev ? T - 1 - st : st;
            const double *cur = sv + step_at(g, dir, st);
            const double *prev = st > 0 ? cur - g->per : NULL;
            const double *act = cur, *rh = cur + N * GH, *c = rh + N * H;
            const double *cp = prev ? prev + N * GH + N * H : NULL, *hp = cp ? cp + N * H : NULL;
            double *dg = dG + (dir * T + t) * N * GH;
            for (int64_t b = 0; b < N; b++) {
                const double *dy =
                    !g->last || st == T - 1 ? out_at(g, (double *)dY, t, dir) + b * g->width : NULL;
                const double *ab = act + b * GH;
                double *db = dg + b * GH;
                for (int64_t j = 0; j < H; j++) {
                    double gh = dhp[b * H + j] + (dy ? dy[j] : 0.0);
                    double hprev = hp ? hp[b * H + j] : 0.0, cprev = cp ? cp[b * H + j] : 0.0;
                    if (n->op == NTP_OP_LSTM) {
                        double gi = ab[j], go = ab[H + j], gf = ab[2 * H + j], gc = ab[3 * H + j];
                        double tc = tanh(c[b * H + j]);
                        double gcell = dcp[b * H + j] + gh * go * (1.0 - tc * tc);
                        db[j] = gcell * gc * gi * (1.0 - gi);
                        db[H + j] = gh * tc * go * (1.0 - go);
                        db[2 * H + j] = gcell * cprev * gf * (1.0 - gf);
                        db[3 * H + j] = gcell * gi * (1.0 - gc * gc);
                        dc[b * H + j] = gcell * gf;
                        dh[b * H + j] = 0.0;
                    } else if (n->op == NTP_OP_GRU) {
                        double z = ab[j], r = ab[H + j], ht = ab[2 * H + j];
                        double dah = gh * (1.0 - z) * (1.0 - ht * ht);
                        db[j] = gh * (hprev - ht) * z * (1.0 - z);
                        db[H + j] = dah * rh[b * H + j] * r * (1.0 - r);
                        db[2 * H + j] = dah;
                        dh[b * H + j] = gh * z;
                    } else {
                        double hv = ab[j];
                        double d =
                            n->a.rnn_act == NTP_RNN_ACT_RELU ? (hv > 0 ? 1.0 : 0.0) : 1.0 - hv * hv;
                        db[j] = gh * d;
                        dh[b * H + j] = 0.0;
                    }
                }
                /* dh₋₁ += dGᵣ·R, with dGᵣ = dG but r ⊙ dG on the GRU's candidate. */
                if (hp)
                    for (int64_t j = 0; j < GH; j++) {
                        double d = db[j];
                        if (n->op == NTP_OP_GRU && j >= 2 * H)
                            d *= ab[H + (j - 2 * H)];
                        for (int64_t k = 0; k < H; k++)
                            dh[b * H + k] += d * Rd[j * H + k];
                    }
            }
            memcpy(dhp, dh, (size_t)(N * H) * sizeof *dh);
            memcpy(dcp, dc, (size_t)(N * H) * sizeof *dc);
        }
    }
    dh[4 * N * H] = 1.0;
}

void ntp__train_rnn(ntp_train_state *s, const ntp_node *n, int mode)
{
    rnn_geom g;
    geom(s, n, &g);
    if (mode == 0) {
        forward(s, n, &g);
        return;
    }
    double *sv = s->saved[n - s->g->nodes];
    int64_t T = g.T, N = g.N, I = g.I, H = g.H, GH = g.GH;
    double *dG = sv + g.dirs * T * g.per, *flag = dG + g.dirs * T * N * GH + 4 * N * H;
    if (*flag == 0.0)
        walk(s, n, &g);
    const double *X = s->val[n->in[0]], *W = s->val[n->w[0]];
    if (mode == 1) {
        double *dX = s->grad[n->in[0]];
        for (int64_t dir = 0; dir < g.dirs; dir++)
            for (int64_t r = 0; r < T * N; r++) {
                const double *dg = dG + (dir * T * N + r) * GH;
                for (int64_t j = 0; j < GH; j++)
                    for (int64_t i = 0; i < I; i++)
                        dX[r * I + i] += dg[j] * W[(dir * GH + j) * I + i];
            }
        return;
    }
    double *dW = s->grad[n->w[0]], *dR = s->grad[n->w[1]];
    double *dB = n->n_w > 2 ? s->grad[n->w[2]] : NULL;
    memset(dW, 0, (size_t)(g.dirs * GH * I) * sizeof *dW);
    memset(dR, 0, (size_t)(g.dirs * GH * H) * sizeof *dR);
    if (dB)
        memset(dB, 0, (size_t)(g.dirs * 2 * GH) * sizeof *dB);
    for (int64_t dir = 0; dir < g.dirs; dir++) {
        bool rev = g.reverse_only || dir == 1;
        for (int64_t st = 0; st < T; st++) {
            int64_t t = rev ? T - 1 - st : st;
            const double *cur = sv + step_at(&g, dir, st);
            const double *hp = st > 0 ? cur - g.per + N * GH + 2 * N * H : NULL;
            for (int64_t b = 0; b < N; b++) {
                const double *dg = dG + ((dir * T + t) * N + b) * GH, *ab = cur + b * GH;
                const double *x = X + (t * N + b) * I;
                for (int64_t j = 0; j < GH; j++) {
                    double d = dg[j], dr = d;
                    if (n->op == NTP_OP_GRU && j >= 2 * H)
                        dr = d * ab[H + (j - 2 * H)];
                    for (int64_t i = 0; i < I; i++)
                        dW[(dir * GH + j) * I + i] += d * x[i];
                    if (hp)
                        for (int64_t k = 0; k < H; k++)
                            dR[(dir * GH + j) * H + k] += dr * hp[b * H + k];
                    if (dB) {
                        dB[dir * 2 * GH + j] += d;
                        dB[dir * 2 * GH + GH + j] += dr;
                    }
                }
            }
        }
    }
    *flag = 0.0;
}
