/* Multi-head attention in training, in double (docs/train.md), with
 * torch.nn.MultiheadAttention's weights as the reference backend runs it
 * (src/backend/ref/ref-attention.c): in_proj [3D, D] (q, k, v rows),
 * in_bias [3D], out_proj [D, D], out_bias [D]; inputs one (self-attention)
 * or three (query, key, value), batch-first [N, S, D].
 *
 * The forward keeps Q, K, V, every head's probabilities P and the context
 * C. The backward, per head and query row, with s = 1/√hd:
 *   dC = dY·Wo, dP = dC_h·V_hᵀ, dS = P ⊙ (dP − Σ dP⊙P)·s,
 *   dQ_h = dS·K_h, dK_h = dSᵀ·Q_h, dV_h = Pᵀ·dC_h;
 * backward-data then adds dQ·Wq, dK·Wk and dV·Wv into the inputs' gradients
 * (all three into the one input of self-attention), backward-weights takes
 * dWq = dQᵀ·xq (and k, v alike), dWo = dYᵀ·C and the biases. Masked
 * (causal) scores have P = 0 and so no gradient. As for the recurrent
 * layers, whichever backward runs first computes dQ, dK and dV. */
#include <math.h>
#include <string.h>

#include "train-impl.h"

typedef struct ageom {
    int64_t N, S, Skv, D, heads, hd;
    bool bias;
} ageom;

static void geom(const ntp_graph *gr, const ntp_node *n, ageom *g)
{
    const ntp_shape *q = &gr->tensors[n->in[0]].shape;
    g->N = q->dim[0];
    g->S = q->dim[1];
    g->D = q->dim[2];
    g->heads = n->a.heads;
    g->hd = g->D / g->heads;
    g->Skv = n->n_in == 3 ? gr->tensors[n->in[1]].shape.dim[1] : g->S;
    g->bias = n->n_w == 4;
}

int64_t ntp__train_attention_saved(const ntp_graph *gr, const ntp_node *n)
{
    ageom g;
    geom(gr, n, &g);
    /* Q, C, dQ, dC [N, S, D]; K, V, dK, dV [N, Skv, D]; P; a dP row; the flag. */
    return g.N * (4 * g.S * g.D + 4 * g.Skv * g.D + g.heads * g.S * g.Skv) + g.Skv + 1;
}

typedef struct abufs {
    double *Q, *C, *dQ, *dC, *K, *V, *dK, *dV, *P, *dP, *flag;
} abufs;

static void bufs(const ntp_train_state *s, const ntp_node *n, const ageom *g, abufs *b)
{
    int64_t sd = g->N * g->S * g->D, kd = g->N * g->Skv * g->D;
    b->Q = s->saved[n - s->g->nodes];
    b->C = b->Q + sd;
    b->dQ = b->C + sd;
    b->dC = b->dQ + sd;
    b->K = b->dC + sd;
    b->V = b->K + kd;
    b->dK = b->V + kd;
    b->dV = b->dK + kd;
    b->P = b->dV + kd;
    b->dP = b->P + g->N * g->heads * g->S * g->Skv;
    b->flag = b->dP + g->Skv;
}

/* y[r, :] = x[r, :]·Wᵀ + b over rows of D. */
static void project(const double *x, int64_t rows, int64_t D, const double *W, const double *b,
                    double *y)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t o = 0; o < D; o++) {
            double a = b ? b[o] : 0.0;
            for (int64_t i = 0; i < D; i++)
                a += x[r * D + i] * W[o * D + i];
            y[r * D + o] = a;
        }
}

static void forward(ntp_train_state *s, const ntp_node *n, const ageom *g, const abufs *b)
{
    int64_t S = g->S, Skv = g->Skv, D = g->D, hd = g->hd;
    const double *Wi = s->val[n->w[0]], *bi = g->bias ? s->val[n->w[1]] : NULL;
    const double *Wo = s->val[n->w[g->bias ? 2 : 1]], *bo = g->bias ? s->val[n->w[3]] : NULL;
    const double *xq = s->val[n->in[0]];
    const double *xk = n->n_in == 3 ? s->val[n->in[1]] : xq;
    const double *xv = n->n_in == 3 ? s->val[n->in[2]] : xq;
    double scale = 1.0 / sqrt((double)hd);
    *b->flag = 0.0;
    project(xq, g->N * S, D, Wi, bi, b->Q);
    project(xk, g->N * Skv, D, Wi + D * D, bi ? bi + D : NULL, b->K);
    project(xv, g->N * Skv, D, Wi + 2 * D * D, bi ? bi + 2 * D : NULL, b->V);
    for (int64_t im = 0; im < g->N; im++)
        for (int64_t h = 0; h < g->heads; h++)
            for (int64_t i = 0; i < S; i++) {
                double *p = b->P + ((im * g->heads + h) * S + i) * Skv, mx = -INFINITY, sum = 0.0;
                const double *q = b->Q + (im * S + i) * D + h * hd;
                for (int64_t j = 0; j < Skv; j++) {
                    const double *k = b->K + (im * Skv + j) * D + h * hd;
                    double a = 0.0;
                    for (int64_t c = 0; c < hd; c++)
                        a += q[c] * k[c];
                    p[j] = n->a.causal && j > i ? -INFINITY : a * scale;
                    mx = p[j] > mx ? p[j] : mx;
                }
                for (int64_t j = 0; j < Skv; j++) {
                    p[j] = p[j] == -INFINITY ? 0.0 : exp(p[j] - mx);
                    sum += p[j];
                }
                double *ctx = b->C + (im * S + i) * D + h * hd;
                memset(ctx, 0, (size_t)hd * sizeof *ctx);
                for (int64_t j = 0; j < Skv; j++) {
                    p[j] /= sum;
                    const double *v = b->V + (im * Skv + j) * D + h * hd;
                    for (int64_t c = 0; c < hd; c++)
                        ctx[c] += p[j] * v[c];
                }
            }
    project(b->C, g->N * S, D, Wo, bo, s->val[n->out[0]]);
}

/* dC, then dQ, dK and dV. */
static void walk(ntp_train_state *s, const ntp_node *n, const ageom *g, const abufs *b)
{
    int64_t S = g->S, Skv = g->Skv, D = g->D, hd = g->hd;
    const double *Wo = s->val[n->w[g->bias ? 2 : 1]], *dY = s->grad[n->out[0]];
    double scale = 1.0 / sqrt((double)hd);
    memset(b->dQ, 0, (size_t)(g->N * S * D) * sizeof(double));
    memset(b->dK, 0, (size_t)(2 * g->N * Skv * D) * sizeof(double)); /* dK and dV */
    for (int64_t r = 0; r < g->N * S; r++)
        for (int64_t d = 0; d < D; d++) {
            double a = 0.0;
            for (int64_t e = 0; e < D; e++)
                a += dY[r * D + e] * Wo[e * D + d];
            b->dC[r * D + d] = a;
        }
    for (int64_t im = 0; im < g->N; im++)
        for (int64_t h = 0; h < g->heads; h++)
            for (int64_t i = 0; i < S; i++) {
                const double *p = b->P + ((im * g->heads + h) * S + i) * Skv;
                const double *dc = b->dC + (im * S + i) * D + h * hd;
                const double *q = b->Q + (im * S + i) * D + h * hd;
                double *dq = b->dQ + (im * S + i) * D + h * hd, dot = 0.0;
                for (int64_t j = 0; j < Skv; j++) {
                    const double *v = b->V + (im * Skv + j) * D + h * hd;
                    double *dv = b->dV + (im * Skv + j) * D + h * hd, a = 0.0;
                    for (int64_t c = 0; c < hd; c++) {
                        a += dc[c] * v[c];
                        dv[c] += p[j] * dc[c];
                    }
                    b->dP[j] = a;
                    dot += a * p[j];
                }
                for (int64_t j = 0; j < Skv; j++) {
                    double ds = p[j] * (b->dP[j] - dot) * scale;
                    const double *k = b->K + (im * Skv + j) * D + h * hd;
                    double *dk = b->dK + (im * Skv + j) * D + h * hd;
                    for (int64_t c = 0; c < hd; c++) {
                        dq[c] += ds * k[c];
                        dk[c] += ds * q[c];
                    }
                }
            }
    *b->flag = 1.0;
}

void ntp__train_attention(ntp_train_state *s, const ntp_node *n, int mode)
{
    ageom g;
    abufs b;
    geom(s->g, n, &g);
    bufs(s, n, &g, &b);
    if (mode == 0) {
        forward(s, n, &g, &b);
        return;
    }
    if (*b.flag == 0.0)
        walk(s, n, &g, &b);
    int64_t D = g.D, rows[3] = {g.N * g.S, g.N * g.Skv, g.N * g.Skv};
    const double *dG[3] = {b.dQ, b.dK, b.dV}, *Wi = s->val[n->w[0]];
    if (mode == 1) {
        for (int p = 0; p < 3; p++) {
            double *dx = s->grad[n->in[n->n_in == 3 ? p : 0]];
            if (!dx)
                continue;
            const double *W = Wi + p * D * D;
            for (int64_t r = 0; r < rows[p]; r++)
                for (int64_t d = 0; d < D; d++) {
                    double gd = dG[p][r * D + d];
                    for (int64_t i = 0; i < D; i++)
                        dx[r * D + i] += gd * W[d * D + i];
                }
        }
        return;
    }
    double *dWi = s->grad[n->w[0]], *dbi = g.bias ? s->grad[n->w[1]] : NULL;
    double *dWo = s->grad[n->w[g.bias ? 2 : 1]], *dbo = g.bias ? s->grad[n->w[3]] : NULL;
    memset(dWi, 0, (size_t)(3 * D * D) * sizeof *dWi);
    memset(dWo, 0, (size_t)(D * D) * sizeof *dWo);
    if (dbi) {
        memset(dbi, 0, (size_t)(3 * D) * sizeof *dbi);
        memset(dbo, 0, (size_t)D * sizeof *dbo);
    }
    for (int p = 0; p < 3; p++) {
        const double *x = s->val[n->in[n->n_in == 3 ? p : 0]];
        for (int64_t r = 0; r < rows[p]; r++)
            for (int64_t d = 0; d < D; d++) {
                double gd = dG[p][r * D + d];
                if (dbi)
                    dbi[p * D + d] += gd;
                for (int64_t i = 0; i < D; i++)
                    dWi[(p * D + d) * D + i] += gd * x[r * D + i];
            }
    }
    const double *dY = s->grad[n->out[0]];
    for (int64_t r = 0; r < rows[0]; r++)
        for (int64_t e = 0; e < D; e++) {
            if (dbo)
                dbo[e] += dY[r * D + e];
            for (int64_t d = 0; d < D; d++)
                dWo[e * D + d] += dY[r * D + e] * b.C[r * D + d];
        }
    *b.flag = 0.0;
}
