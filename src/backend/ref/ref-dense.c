/* fc and matmul on the reference GEMM. */
#include <string.h>

#include "ref-impl.h"

void ntp__ref_bias_rows(float *y, const float *b, int64_t rows, int64_t n)
{
    for (int64_t r = 0; r < rows; r++)
        memcpy(y + r * n, b, (size_t)n * sizeof *y);
}

static ntp_status shape_error(ntp_ctx *ctx, const ntp_kargs *k, const char *what)
{
    char a[128], b[128];
    return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "%s: input %s, output %s", what,
                          ntp_shape_str(&k->in[0].shape, a, sizeof a),
                          ntp_shape_str(&k->out[0].shape, b, sizeof b));
}

/* y[rows, units] = x[rows, K] · Wᵀ + b with W [units, K]. */
static ntp_status fc(ntp_ctx *ctx, const ntp_kargs *k)
{
    ntp_status st = ntp__ref_expect(ctx, k, 1, 1, 2, 1);
    if (st)
        return st;
    const ntp_shape *xs = &k->in[0].shape, *ys = &k->out[0].shape;
    if (xs->ndim < 1 || ys->ndim != xs->ndim)
        return shape_error(ctx, k, "fc needs input and output of the same rank");
    int64_t K = xs->dim[xs->ndim - 1], units = ys->dim[ys->ndim - 1];
    for (int d = 0; d + 1 < xs->ndim; d++)
        if (xs->dim[d] != ys->dim[d])
            return shape_error(ctx, k, "fc keeps the leading dims");
    int64_t rows = K > 0 ? ntp_shape_numel(xs) / K : 0;
    if ((st = ntp__ref_expect_weight(ctx, k, 0, units * K)))
        return st;
    bool bias = k->n_w == 2;
    if (bias && (st = ntp__ref_expect_weight(ctx, k, 1, units)))
        return st;
    const float *x = k->in[0].data, *W = k->w[0].data;
    float *y = k->out[0].data;
    if (bias)
        ntp__ref_bias_rows(y, k->w[1].data, rows, units);
    ntp__ref_gemm(false, true, rows, units, K, 1.0f, x, K, W, K, bias ? 1.0f : 0.0f, y, units);
    return NTP_STATUS_OK;
}

/* Offset of batch element `idx` (an index into the output's batch dims) in
 * an operand whose batch dims are right-aligned against the output's and
 * broadcast where they are 1. */
static int64_t batch_offset(const ntp_shape *out, int out_batch, const ntp_shape *s, int64_t idx,
                            int64_t matrix)
{
    int sb = s->ndim - 2;
    int64_t off = 0, stride = matrix;
    for (int d = out_batch - 1; d >= 0; d--) {
        int64_t i = idx % out->dim[d];
        idx /= out->dim[d];
        int ds = d - (out_batch - sb);
        if (ds < 0)
            continue;
        if (s->dim[ds] != 1)
            off += i * stride;
        stride *= s->dim[ds];
    }
    return off;
}

static ntp_status matmul(ntp_ctx *ctx, const ntp_kargs *k)
{
    ntp_status st = ntp__ref_expect(ctx, k, 2, 0, 0, 1);
    if (st)
        return st;
    const ntp_attrs *at = &k->node->a;
    const ntp_shape *as = &k->in[0].shape, *bs = &k->in[1].shape, *ys = &k->out[0].shape;
    if (as->ndim < 2 || bs->ndim < 2 || ys->ndim != (as->ndim > bs->ndim ? as->ndim : bs->ndim))
        return shape_error(ctx, k, "matmul needs operands of rank >= 2");
    int64_t ar = as->dim[as->ndim - 2], ac = as->dim[as->ndim - 1];
    int64_t br = bs->dim[bs->ndim - 2], bc = bs->dim[bs->ndim - 1];
    int64_t M = at->transpose_a ? ac : ar, K = at->transpose_a ? ar : ac;
    int64_t Kb = at->transpose_b ? bc : br, N = at->transpose_b ? br : bc;
    int ob = ys->ndim - 2;
    if (K != Kb || ys->dim[ob] != M || ys->dim[ob + 1] != N)
        return shape_error(ctx, k, "matmul operand and output shapes disagree");
    int64_t batch = 1;
    for (int d = 0; d < ob; d++) {
        int da = d - (ob - (as->ndim - 2)), db = d - (ob - (bs->ndim - 2));
        int64_t x = da >= 0 ? as->dim[da] : 1, y = db >= 0 ? bs->dim[db] : 1;
        if ((x != ys->dim[d] && x != 1) || (y != ys->dim[d] && y != 1))
            return shape_error(ctx, k, "matmul batch dims do not broadcast to the output");
        batch *= ys->dim[d];
    }
    const float *A = k->in[0].data, *B = k->in[1].data;
    float *Y = k->out[0].data;
    for (int64_t i = 0; i < batch; i++) {
        const float *a = A + batch_offset(ys, ob, as, i, ar * ac);
        const float *b = B + batch_offset(ys, ob, bs, i, br * bc);
        ntp__ref_gemm(at->transpose_a, at->transpose_b, M, N, K, 1.0f, a, ac, b, bc, 0.0f,
                      Y + i * M * N, N);
    }
    return NTP_STATUS_OK;
}

ntp_status ntp__ref_dense(ntp_ctx *ctx, const ntp_kargs *k)
{
    return k->node->op == NTP_OP_FC ? fc(ctx, k) : matmul(ctx, k);
}
