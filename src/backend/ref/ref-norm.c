/* Batch normalisation (inference) and layer normalisation.
 *
 * Both evaluate the documented formula in double and round once, so they
 * are as exact as f32 outputs can be; an optimised backend folds batchnorm
 * into one multiply-add per element and is compared against this within a
 * tolerance. */
#include <math.h>

#include "ref-impl.h"

/* y = scale·(x − mean)/sqrt(var + ε) + bias over channel dim 1. */
static ntp_status batchnorm(ntp_ctx *ctx, const ntp_kargs *k)
{
    ntp_status st = ntp__ref_expect(ctx, k, 1, 4, 4, 1);
    if (st)
        return st;
    const ntp_shape *xs = &k->in[0].shape;
    char a[128], b[128];
    if (xs->ndim < 2 || ntp_shape_numel(&k->out[0].shape) != ntp_shape_numel(xs))
        return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "batchnorm of %s cannot give %s",
                              ntp_shape_str(xs, a, sizeof a),
                              ntp_shape_str(&k->out[0].shape, b, sizeof b));
    int64_t N = xs->dim[0], C = xs->dim[1], inner = ntp_shape_numel(xs) / (N * C);
    for (int i = 0; i < 4; i++)
        if ((st = ntp__ref_expect_weight(ctx, k, i, C)))
            return st;
    const float *x = k->in[0].data, *scale = k->w[0].data, *bias = k->w[1].data;
    const float *mean = k->w[2].data, *var = k->w[3].data;
    float *y = k->out[0].data;
    double eps = k->node->a.epsilon;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) {
            double inv = 1.0 / sqrt((double)var[c] + eps);
            double sc = scale[c], mu = mean[c], bi = bias[c];
            const float *xp = x + (n * C + c) * inner;
            float *yp = y + (n * C + c) * inner;
            for (int64_t i = 0; i < inner; i++)
                yp[i] = (float)(sc * (((double)xp[i] - mu) * inv) + bi);
        }
    return NTP_STATUS_OK;
}

/* y = (x − mean)/sqrt(var + ε)·γ + β over dims axis..last, with the biased
 * (population) variance, as torch.nn.LayerNorm. */
static ntp_status layernorm(ntp_ctx *ctx, const ntp_kargs *k)
{
    ntp_status st = ntp__ref_expect(ctx, k, 1, 2, 2, 1);
    if (st)
        return st;
    const ntp_shape *xs = &k->in[0].shape;
    int64_t axis = k->node->a.axis;
    if (axis < 0)
        axis += xs->ndim;
    char a[128];
    if (axis < 0 || axis >= xs->ndim || ntp_shape_numel(&k->out[0].shape) != ntp_shape_numel(xs))
        return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                              "layernorm axis %lld does not fit input %s",
                              (long long)k->node->a.axis, ntp_shape_str(xs, a, sizeof a));
    int64_t D = 1;
    for (int d = (int)axis; d < xs->ndim; d++)
        D *= xs->dim[d];
    int64_t rows = ntp_shape_numel(xs) / D;
    if ((st = ntp__ref_expect_weight(ctx, k, 0, D)) || (st = ntp__ref_expect_weight(ctx, k, 1, D)))
        return st;
    const float *x = k->in[0].data, *gamma = k->w[0].data, *beta = k->w[1].data;
    float *y = k->out[0].data;
    double eps = k->node->a.epsilon;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * D;
        float *yr = y + r * D;
        double mean = 0.0, var = 0.0;
        for (int64_t i = 0; i < D; i++)
            mean += xr[i];
        mean /= (double)D;
        for (int64_t i = 0; i < D; i++) {
            double d = xr[i] - mean;
            var += d * d;
        }
        var /= (double)D;
        double inv = 1.0 / sqrt(var + eps);
        for (int64_t i = 0; i < D; i++)
            yr[i] = (float)(((double)xr[i] - mean) * inv * gamma[i] + beta[i]);
    }
    return NTP_STATUS_OK;
}

ntp_status ntp__ref_norm(ntp_ctx *ctx, const ntp_kargs *k)
{
    return k->node->op == NTP_OP_BATCHNORM ? batchnorm(ctx, k) : layernorm(ctx, k);
}
