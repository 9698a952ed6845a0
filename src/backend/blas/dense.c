/* Fully connected layers, batched matrix products and multi-head attention
 * on BLAS (blas-impl.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "blas-impl.h"

/* --- support ---------------------------------------------------------------- */

static bool fc_supports(const ntp_graph *g, const ntp_node *n)
{
    const ntp_shape *x = &ntp__cin(g, n, 0)->shape;
    int64_t K = x->dim[x->ndim - 1];
    return n->n_w >= 1 && ntp__blas_fits(K) && ntp__blas_fits(n->a.units) &&
           ntp__blas_fits(K > 0 ? ntp_shape_numel(x) / K : 0);
}

static bool matmul_supports(const ntp_graph *g, const ntp_node *n)
{
    const ntp_shape *a = &ntp__cin(g, n, 0)->shape, *b = &ntp__cin(g, n, 1)->shape;
    return a->ndim >= 2 && b->ndim >= 2 && ntp_shape_numel(a) < INT32_MAX &&
           ntp_shape_numel(b) < INT32_MAX &&
           ntp_shape_numel(&ntp__cout(g, n, 0)->shape) < INT32_MAX;
}

static bool attention_supports(const ntp_graph *g, const ntp_node *n)
{
    const ntp_shape *q = &ntp__cin(g, n, 0)->shape;
    if (q->ndim != 3 || n->a.heads <= 0 || q->dim[2] % n->a.heads || (n->n_w != 2 && n->n_w != 4))
        return false;
    int64_t rows = q->dim[0] * q->dim[1];
    for (int i = 1; i < n->n_in; i++) {
        const ntp_shape *s = &ntp__cin(g, n, i)->shape;
        if (s->ndim != 3)
            return false;
        if (s->dim[0] * s->dim[1] > rows)
            rows = s->dim[0] * s->dim[1];
    }
    return ntp__blas_fits(rows) && ntp__blas_fits(3 * q->dim[2]) && ntp__blas_fits(q->dim[1]) &&
           (n->n_in == 1 || ntp__blas_fits(ntp__cin(g, n, 1)->shape.dim[1]));
}

bool ntp__blas_dense_supports(const ntp_graph *g, const ntp_node *n)
{
    static bool (*const supports[NTP_OP_COUNT])(const ntp_graph *, const ntp_node *) = {
        [NTP_OP_FC] = fc_supports,
        [NTP_OP_MATMUL] = matmul_supports,
        [NTP_OP_ATTENTION] = attention_supports,
    };
    return (unsigned)n->op < NTP_OP_COUNT && supports[n->op] && supports[n->op](g, n);
}

/* --- geometry of attention ------------------------------------------------- */

typedef struct ageom {
    int64_t N, S, Skv, D, heads, hd;
    bool self; /* one input: q = k = v */
} ageom;

static bool get_ageom(const ntp_kargs *k, ageom *g)
{
    const ntp_shape *q = &k->in[0].shape, *y = &k->out[0].shape;
    if ((k->n_in != 1 && k->n_in != 3) || q->ndim != 3 || k->node->a.heads <= 0)
        return false;
    g->N = q->dim[0];
    g->S = q->dim[1];
    g->D = q->dim[2];
    g->heads = k->node->a.heads;
    if (g->D % g->heads)
        return false;
    g->hd = g->D / g->heads;
    g->Skv = g->S;
    g->self = k->n_in == 1;
    if (!g->self) {
        const ntp_shape *ks = &k->in[1].shape, *vs = &k->in[2].shape;
        if (ks->ndim != 3 || vs->ndim != 3 || ks->dim[0] != g->N || vs->dim[0] != g->N ||
            ks->dim[2] != g->D || vs->dim[2] != g->D || ks->dim[1] != vs->dim[1])
            return false;
        g->Skv = ks->dim[1];
    }
    if (k->node->a.causal && g->Skv != g->S)
        return false;
    return y->ndim == 3 && y->dim[0] == g->N && y->dim[1] == g->S && y->dim[2] == g->D;
}

/* --- prepare ---------------------------------------------------------------- */

ntp_status ntp__blas_dense_prepare(ntp_ctx *ctx, const ntp_kargs *k, blasb_node *nd)
{
    const ntp_node *n = k->node;
    nd->n_steps = 1;
    nd->main_step = 0;
    if (n->op == NTP_OP_FC) {
        const ntp_shape *x = &k->in[0].shape;
        int64_t K = x->dim[x->ndim - 1], units = n->a.units;
        int64_t rows = K > 0 ? ntp_shape_numel(x) / K : 0;
        if (ntp_shape_numel(&k->w[0].shape) != units * K ||
            ntp_shape_numel(&k->out[0].shape) != rows * units ||
            (k->n_w > 1 && ntp_shape_numel(&k->w[1].shape) != units))
            return ntp__blas_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                                   "input, weights and output do not fit");
        snprintf(nd->impl, sizeof nd->impl, "openblas:%s", rows == 1 ? "sgemv" : "sgemm");
        return NTP_STATUS_OK;
    }
    if (n->op == NTP_OP_MATMUL) {
        snprintf(nd->impl, sizeof nd->impl, "openblas:sgemm (batched)");
        return NTP_STATUS_OK;
    }
    ageom g;
    if (!get_ageom(k, &g))
        return ntp__blas_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                               "inputs and output do not fit %lld heads", (long long)n->a.heads);
    int64_t D = g.D;
    bool bias = k->n_w == 4;
    if (ntp_shape_numel(&k->w[0].shape) != 3 * D * D ||
        ntp_shape_numel(&k->w[bias ? 2 : 1].shape) != D * D ||
        (bias &&
         (ntp_shape_numel(&k->w[1].shape) != 3 * D || ntp_shape_numel(&k->w[3].shape) != D)))
        return ntp__blas_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                               "weights do not fit model width %lld", (long long)D);
    /* Q, K, V for every row (self-attention: one [N·S, 3D] block), the
     * context C [N·S, D] and one head's scores P [S, S_kv]. */
    int64_t floats = g.N * g.S * 3 * D + 2 * g.N * g.Skv * D + g.N * g.S * D + g.S * g.Skv;
    nd->ws = (size_t)floats * sizeof(float);
    snprintf(nd->impl, sizeof nd->impl, "openblas:sgemm");
    return NTP_STATUS_OK;
}

/* --- fc ---------------------------------------------------------------------- */

static void fc(const ntp_kargs *k)
{
    const ntp_shape *x = &k->in[0].shape;
    int64_t K = x->dim[x->ndim - 1], units = k->node->a.units;
    int64_t rows = K > 0 ? ntp_shape_numel(x) / K : 0;
    const float *X = k->in[0].data, *W = k->w[0].data, *b = k->n_w > 1 ? k->w[1].data : NULL;
    float *Y = k->out[0].data;
    if (rows == 1) {
        /* One row: a matrix-vector product that starts from the bias. */
        if (b)
            memcpy(Y, b, (size_t)units * sizeof *Y);
        ntp__blas_gemv(units, K, 1.0f, W, K, X, b ? 1.0f : 0.0f, Y);
        return;
    }
    ntp__blas_gemm(false, true, rows, units, K, 1.0f, X, K, W, K, 0.0f, Y, units);
    if (b)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t j = 0; j < units; j++)
                Y[r * units + j] += b[j];
}

/* --- matmul ------------------------------------------------------------------- */

static void matmul(const ntp_kargs *k)
{
    const ntp_shape *as = &k->in[0].shape, *bs = &k->in[1].shape, *ys = &k->out[0].shape;
    bool ta = k->node->a.transpose_a, tb = k->node->a.transpose_b;
    int64_t M = ys->dim[ys->ndim - 2], N = ys->dim[ys->ndim - 1];
    int64_t K = ta ? as->dim[as->ndim - 2] : as->dim[as->ndim - 1];
    int64_t lda = as->dim[as->ndim - 1], ldb = bs->dim[bs->ndim - 1];
    int rb = ys->ndim - 2;
    /* Per batch dim: the output's extent and each operand's stride (0
     * where it broadcasts). */
    int64_t ext[NTP_MAX_DIMS], sa[NTP_MAX_DIMS], sb[NTP_MAX_DIMS];
    int64_t stride_a = M * K, stride_b = K * N, batches = 1;
    bool b_fixed = true;
    for (int d = rb - 1; d >= 0; d--) {
        int da = d - (rb - (as->ndim - 2)), db = d - (rb - (bs->ndim - 2));
        int64_t ea = da >= 0 ? as->dim[da] : 1, eb = db >= 0 ? bs->dim[db] : 1;
        ext[d] = ys->dim[d];
        sa[d] = ea == 1 ? 0 : stride_a;
        sb[d] = eb == 1 ? 0 : stride_b;
        stride_a *= ea;
        stride_b *= eb;
        batches *= ext[d];
        b_fixed &= sb[d] == 0;
    }
    const float *A = k->in[0].data, *B = k->in[1].data;
    float *Y = k->out[0].data;
    if (b_fixed && !ta && batches > 0) {
        /* B is shared by every batch element and A's rows are consecutive
         * (A broadcasts only if its batch is 1, then every block is the same
         * rows; the general loop handles that). */
        bool a_full = true;
        for (int d = 0; d < rb; d++)
            a_full &= sa[d] != 0 || ext[d] == 1;
        if (a_full) {
            ntp__blas_gemm(false, tb, batches * M, N, K, 1.0f, A, lda, B, ldb, 0.0f, Y, N);
            return;
        }
    }
    int64_t idx[NTP_MAX_DIMS] = {0};
    for (int64_t i = 0; i < batches; i++) {
        int64_t oa = 0, ob = 0;
        for (int d = 0; d < rb; d++) {
            oa += idx[d] * sa[d];
            ob += idx[d] * sb[d];
        }
        ntp__blas_gemm(ta, tb, M, N, K, 1.0f, A + oa, lda, B + ob, ldb, 0.0f, Y + i * M * N, N);
        for (int d = rb - 1; d >= 0; d--) {
            if (++idx[d] < ext[d])
                break;
            idx[d] = 0;
        }
    }
}

/* --- attention ------------------------------------------------------------------ */

/* out [rows, cols] = x [rows, D] · Wᵀ + b, W [cols, D]. */
static void project(const float *x, int64_t rows, int64_t D, const float *W, int64_t cols,
                    const float *b, float *out)
{
    ntp__blas_gemm(false, true, rows, cols, D, 1.0f, x, D, W, D, 0.0f, out, cols);
    if (b)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t j = 0; j < cols; j++)
                out[r * cols + j] += b[j];
}

static ntp_status attention(ntp_ctx *ctx, const ntp_kargs *k)
{
    ageom g;
    if (!get_ageom(k, &g))
        return ntp__blas_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "inputs and output do not fit");
    int64_t N = g.N, S = g.S, Skv = g.Skv, D = g.D, hd = g.hd;
    bool bias = k->n_w == 4;
    const float *in_proj = k->w[0].data, *in_bias = bias ? k->w[1].data : NULL;
    const float *out_proj = k->w[bias ? 2 : 1].data, *out_bias = bias ? k->w[3].data : NULL;
    float *ws = k->workspace;
    float *QKV = ws, *Kb = QKV + N * S * 3 * D, *Vb = Kb + N * Skv * D, *C = Vb + N * Skv * D;
    float *P = C + N * S * D;
    /* Row strides and bases of Q, K and V. */
    const float *Q, *Km, *Vm;
    int64_t ldq, ldk, ldv;
    if (g.self) {
        project(k->in[0].data, N * S, D, in_proj, 3 * D, in_bias, QKV);
        Q = QKV;
        Km = QKV + D;
        Vm = QKV + 2 * D;
        ldq = ldk = ldv = 3 * D;
    } else {
        project(k->in[0].data, N * S, D, in_proj, D, in_bias, QKV);
        project(k->in[1].data, N * Skv, D, in_proj + D * D, D, in_bias ? in_bias + D : NULL, Kb);
        project(k->in[2].data, N * Skv, D, in_proj + 2 * D * D, D, in_bias ? in_bias + 2 * D : NULL,
                Vb);
        Q = QKV;
        Km = Kb;
        Vm = Vb;
        ldq = ldk = ldv = D;
    }
    float scale = 1.0f / sqrtf((float)hd);
    for (int64_t n = 0; n < N; n++)
        for (int64_t h = 0; h < g.heads; h++) {
            const float *q = Q + n * S * ldq + h * hd, *kk = Km + n * Skv * ldk + h * hd;
            const float *v = Vm + n * Skv * ldv + h * hd;
            ntp__blas_gemm(false, true, S, Skv, hd, scale, q, ldq, kk, ldk, 0.0f, P, Skv);
            for (int64_t i = 0; i < S; i++) {
                if (k->node->a.causal)
                    for (int64_t j = i + 1; j < Skv; j++)
                        P[i * Skv + j] = -INFINITY;
                ntp__blas_softmax(P + i * Skv, Skv, 1);
            }
            ntp__blas_gemm(false, false, S, hd, Skv, 1.0f, P, Skv, v, ldv, 0.0f,
                           C + n * S * D + h * hd, D);
        }
    project(C, N * S, D, out_proj, D, out_bias, k->out[0].data);
    return NTP_STATUS_OK;
}

static ntp_status fc_run(ntp_ctx *ctx, const ntp_kargs *k)
{
    (void)ctx;
    fc(k);
    return NTP_STATUS_OK;
}

static ntp_status matmul_run(ntp_ctx *ctx, const ntp_kargs *k)
{
    (void)ctx;
    matmul(k);
    return NTP_STATUS_OK;
}

ntp_status ntp__blas_dense_run(ntp_ctx *ctx, const ntp_kargs *k, const blasb_node *nd)
{
    static ntp_status (*const runs[NTP_OP_COUNT])(ntp_ctx *, const ntp_kargs *) = {
        [NTP_OP_FC] = fc_run,
        [NTP_OP_MATMUL] = matmul_run,
        [NTP_OP_ATTENTION] = attention,
    };
    ntp_op op = k->node->op;
    if ((unsigned)op >= NTP_OP_COUNT || !runs[op])
        return ntp__blas_error(ctx, k, NTP_STATUS_INTERNAL, "not a dense op");
    ntp_status st = runs[op](ctx, k);
    if (st)
        return st;
    ntp__blas_post_ops(k, nd);
    return NTP_STATUS_OK;
}
