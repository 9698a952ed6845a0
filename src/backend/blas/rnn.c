/* LSTM, GRU and vanilla RNN on BLAS: the reference backend's recurrent
 * kernel (ref-rnn.c: time-major [T, N, I], ONNX weights and gate orders,
 * docs/ops.md) with its products on BLAS and its gates in float.
 *
 * Per direction, the input part of every gate at every step is one SGEMM,
 * Xg [T·N, G·H] = X · Wᵀ + Wb: the bulk of the arithmetic, at full GEMM
 * efficiency. The recurrent part is one product per step,
 * Rg [N, G·H] = h · Rᵀ + Rb, an SGEMV when the batch is 1; it streams the
 * whole of R every step, which is what bounds recurrent layers at small
 * batches.
 *
 * Workspace: Xg (T·N·G·H), Rg (N·G·H), h and c (N·H each) floats, reused by
 * the second direction. */
#include <math.h>
#include <stdio.h>

#include "backend/ref/ref-impl.h"
#include "blas-impl.h"

bool ntp__blas_rnn_supports(const ntp_graph *gr, const ntp_node *n)
{
    ntp_ref_rnn_geom g;
    return n->n_w >= 2 &&
           ntp__ref_rnn_geom(n, &ntp__cin(gr, n, 0)->shape, &ntp__cout(gr, n, 0)->shape, &g) &&
           ntp__blas_fits(g.T * g.N) && ntp__blas_fits(g.G * g.H) && ntp__blas_fits(g.I);
}

ntp_status ntp__blas_rnn_prepare(ntp_ctx *ctx, const ntp_kargs *k, blasb_node *nd)
{
    ntp_ref_rnn_geom g;
    if (!ntp__ref_rnn_geom(k->node, &k->in[0].shape, &k->out[0].shape, &g))
        return ntp__blas_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                               "input and output do not fit the layer");
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

/* The reference kernel's GEMM hook: a single row times a transposed
 * matrix (the recurrent product at batch 1) is an SGEMV, y = R · h. */
static void rnn_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                     int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    if (m == 1 && !ta && tb)
        ntp__blas_gemv(n, k, alpha, b, ldb, a, beta, c);
    else
        ntp__blas_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static float sigm(float v)
{
    return 1.0f / (1.0f + expf(-v));
}

ntp_status ntp__blas_rnn_run(ntp_ctx *ctx, const ntp_kargs *k, const blasb_node *nd)
{
    /* The gates in float, as Caffe and Darknet compute them (the reference
     * computes them in double). */
    static const ntp_ref_rnn_math math = {rnn_gemm, sigm, tanhf};
    ntp_status st = ntp__ref_rnn_run(ctx, k, &math);
    if (!st)
        ntp__blas_post_ops(k, nd);
    return st;
}
