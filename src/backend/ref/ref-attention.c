/* Multi-head attention with torch.nn.MultiheadAttention's weights
 * (batch-first [N, S, D]): in_proj [3D, D] holds the q, k and v projections
 * in that order, in_bias [3D], out_proj [D, D], out_bias [D].
 *
 * For each batch element: Q = xq·Wqᵀ + bq, K = xk·Wkᵀ + bk, V = xv·Wvᵀ + bv
 * ([S or S_kv, D]; head h owns columns h·hd .. h·hd+hd-1, hd = D/heads);
 * per head P = softmax(Q_h·K_hᵀ / √hd + mask) and C_h = P·V_h; finally
 * y = C·Woᵀ + bo. Q is scaled before the product, as PyTorch does. The
 * causal mask hides key j from query i when j > i.
 *
 * Workspace per batch element, reused: Q, C (S·D each), K, V (S_kv·D each)
 * and P (S·S_kv) floats. */
#include <math.h>
#include <string.h>

#include "ref-impl.h"

typedef struct ageom {
    int64_t N, S, Skv, D, heads, hd;
} ageom;

static bool get_ageom(const ntp_kargs *k, ageom *g)
{
    const ntp_shape *q = &k->in[0].shape;
    if ((k->n_in != 1 && k->n_in != 3) || q->ndim != 3)
        return false;
    g->N = q->dim[0];
    g->S = q->dim[1];
    g->D = q->dim[2];
    g->heads = k->node->a.heads;
    if (g->heads <= 0 || g->D % g->heads)
        return false;
    g->hd = g->D / g->heads;
    g->Skv = g->S;
    if (k->n_in == 3) {
        const ntp_shape *ks = &k->in[1].shape, *vs = &k->in[2].shape;
        if (ks->ndim != 3 || vs->ndim != 3 || ks->dim[0] != g->N || vs->dim[0] != g->N ||
            ks->dim[2] != g->D || vs->dim[2] != g->D || ks->dim[1] != vs->dim[1])
            return false;
        g->Skv = ks->dim[1];
    }
    const ntp_shape *y = &k->out[0].shape;
    if (y->ndim != 3 || y->dim[0] != g->N || y->dim[1] != g->S || y->dim[2] != g->D)
        return false;
    return !k->node->a.causal || g->Skv == g->S;
}

size_t ntp__ref_attention_workspace(const ntp_kargs *k)
{
    ageom g;
    if (!get_ageom(k, &g))
        return 0; /* the kernel reports the inconsistency */
    size_t w = ntp__ref_floats(2 * g.S, g.D);
    w = ntp__ref_size_add(w, ntp__ref_floats(2 * g.Skv, g.D));
    return ntp__ref_size_add(w, ntp__ref_floats(g.S, g.Skv));
}

/* out [rows, D] = x [rows, D] · Wᵀ + b with W [D, D] (b may be NULL). */
static void project(const float *x, int64_t rows, int64_t D, const float *W, const float *b,
                    float *out)
{
    if (b)
        ntp__ref_bias_rows(out, b, rows, D);
    ntp__ref_gemm(false, true, rows, D, D, 1.0f, x, D, W, D, b ? 1.0f : 0.0f, out, D);
}

ntp_status ntp__ref_attention(ntp_ctx *ctx, const ntp_kargs *k)
{
    ntp_status st = ntp__ref_expect(ctx, k, k->n_in, 2, 4, 1);
    if (st)
        return st;
    ageom g;
    if (!get_ageom(k, &g)) {
        char a[128], b[128];
        return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                              "query %s and output %s do not fit %lld heads (with %d inputs%s)",
                              ntp_shape_str(&k->in[0].shape, a, sizeof a),
                              ntp_shape_str(&k->out[0].shape, b, sizeof b),
                              (long long)k->node->a.heads, k->n_in,
                              k->node->a.causal ? ", causal" : "");
    }
    int64_t S = g.S, Skv = g.Skv, D = g.D, hd = g.hd;
    bool bias = k->n_w == 4;
    if (k->n_w != 2 && k->n_w != 4)
        return ntp__ref_error(ctx, k, NTP_STATUS_INTERNAL, "attention takes 2 or 4 weights, got %d",
                              k->n_w);
    const float *in_proj = k->w[0].data;
    const float *in_bias = bias ? k->w[1].data : NULL;
    const float *out_proj = k->w[bias ? 2 : 1].data;
    const float *out_bias = bias ? k->w[3].data : NULL;
    if ((st = ntp__ref_expect_weight(ctx, k, 0, 3 * D * D)) ||
        (bias && (st = ntp__ref_expect_weight(ctx, k, 1, 3 * D))) ||
        (st = ntp__ref_expect_weight(ctx, k, bias ? 2 : 1, D * D)) ||
        (bias && (st = ntp__ref_expect_weight(ctx, k, 3, D))))
        return st;
    float *Q = k->workspace, *C = Q + S * D, *K = C + S * D, *V = K + Skv * D, *P = V + Skv * D;
    float scale = (float)(1.0 / sqrt((double)hd));
    const float *xq = k->in[0].data;
    const float *xk = k->n_in == 3 ? k->in[1].data : xq;
    const float *xv = k->n_in == 3 ? k->in[2].data : xq;
    float *Y = k->out[0].data;
    for (int64_t n = 0; n < g.N; n++) {
        project(xq + n * S * D, S, D, in_proj, in_bias, Q);
        project(xk + n * Skv * D, Skv, D, in_proj + D * D, in_bias ? in_bias + D : NULL, K);
        project(xv + n * Skv * D, Skv, D, in_proj + 2 * D * D, in_bias ? in_bias + 2 * D : NULL, V);
        for (int64_t h = 0; h < g.heads; h++) {
            ntp__ref_gemm(false, true, S, Skv, hd, scale, Q + h * hd, D, K + h * hd, D, 0.0f, P,
                          Skv);
            for (int64_t i = 0; i < S; i++) {
                if (k->node->a.causal)
                    for (int64_t j = i + 1; j < Skv; j++)
                        P[i * Skv + j] = -INFINITY;
                ntp__ref_softmax_strided(P + i * Skv, Skv, 1);
            }
            ntp__ref_gemm(false, false, S, hd, Skv, 1.0f, P, Skv, V + h * hd, D, 0.0f, C + h * hd,
                          D);
        }
        project(C, S, D, out_proj, out_bias, Y + n * S * D);
    }
    return NTP_STATUS_OK;
}
