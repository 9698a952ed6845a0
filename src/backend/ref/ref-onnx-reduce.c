/* Reference kernels of the reductions, instancenorm and lrn added for ONNX
 * models. Sums are taken in double and rounded once. */
#include <math.h>

#include "graph/op-onnx-impl.h"
#include "ref-onnx-impl.h"

/* Row-major strides of s, in elements. */
static void strides_of(const ntp_shape *s, int64_t *st)
{
    int64_t v = 1;
    for (int d = s->ndim - 1; d >= 0; d--) {
        st[d] = v;
        v *= s->dim[d];
    }
}

/* The reductions' arithmetic: the accumulator's start, one step per input
 * element and the result from the accumulator. log_sum_exp's steps add
 * exp(v - shift), shift being the maximum found by a first pass. */
static double step_sum(double acc, double v, double shift)
{
    return acc + v;
}
static double step_prod(double acc, double v, double shift)
{
    return acc * v;
}
static double step_max(double acc, double v, double shift)
{
    return isnan(acc) || acc >= v ? acc : v;
}
static double step_min(double acc, double v, double shift)
{
    return isnan(acc) || acc <= v ? acc : v;
}
static double step_abs(double acc, double v, double shift)
{
    return acc + fabs(v);
}
static double step_square(double acc, double v, double shift)
{
    return acc + v * v;
}
static double step_exp(double acc, double v, double shift)
{
    return acc + exp(v - shift);
}

static double final_acc(double acc, int64_t count, double shift)
{
    return acc;
}
static double final_mean(double acc, int64_t count, double shift)
{
    return acc / (double)count;
}
static double final_sqrt(double acc, int64_t count, double shift)
{
    return sqrt(acc);
}
static double final_log(double acc, int64_t count, double shift)
{
    return log(acc);
}
static double final_shift_log(double acc, int64_t count, double shift)
{
    return shift + log(acc);
}

typedef struct reducer {
    double init;
    double (*step)(double acc, double v, double shift);
    double (*final)(double acc, int64_t count, double shift);
} reducer;

/* One line a reduction. */
static const reducer reducers[NTP_OP_COUNT] = {
    [NTP_OP_REDUCE_MEAN] = {0.0, step_sum, final_mean},
    [NTP_OP_REDUCE_SUM] = {0.0, step_sum, final_acc},
    [NTP_OP_REDUCE_MAX] = {-INFINITY, step_max, final_acc},
    [NTP_OP_REDUCE_MIN] = {INFINITY, step_min, final_acc},
    [NTP_OP_REDUCE_PROD] = {1.0, step_prod, final_acc},
    [NTP_OP_REDUCE_L1] = {0.0, step_abs, final_acc},
    [NTP_OP_REDUCE_L2] = {0.0, step_square, final_sqrt},
    [NTP_OP_REDUCE_SUM_SQUARE] = {0.0, step_square, final_acc},
    [NTP_OP_REDUCE_LOG_SUM] = {0.0, step_sum, final_log},
    [NTP_OP_REDUCE_LOG_SUM_EXP] = {0.0, step_exp, final_shift_log},
};

/* Every output element walks the box of input elements that reduce into it
 * (the reduced dims), so no scratch is needed. log_sum_exp walks it twice:
 * first for the maximum, which it subtracts before exponentiating. */
static ntp_status reduce(ntp_ctx *ctx, const ntp_kargs *k)
{
    ntp_status st = ntp__ref_expect(ctx, k, 1, 0, 0, 1);
    if (st)
        return st;
    const ntp_shape *in = &k->in[0].shape, *out = &k->out[0].shape;
    bool ok = in->ndim == out->ndim;
    bool red[NTP_MAX_DIMS] = {false};
    int na = ntp__reduce_n_axes(&k->node->a);
    for (int i = 0; ok && i < na; i++) {
        int64_t ax = ntp__reduce_axes(&k->node->a)[i];
        if (ax < 0)
            ax += in->ndim;
        ok = ax >= 0 && ax < in->ndim;
        if (ok)
            red[ax] = true;
    }
    for (int d = 0; ok && d < in->ndim; d++) {
        if (na == 0)
            red[d] = true;
        ok = out->dim[d] == (red[d] ? 1 : in->dim[d]);
    }
    if (!ok) {
        char a[128], b[128];
        return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "axes do not reduce %s to %s",
                              ntp_shape_str(in, a, sizeof a), ntp_shape_str(out, b, sizeof b));
    }
    int64_t ist[NTP_MAX_DIMS], count = 1;
    strides_of(in, ist);
    int rd[NTP_MAX_DIMS], nr = 0;
    for (int d = 0; d < in->ndim; d++)
        if (red[d]) {
            rd[nr++] = d;
            count *= in->dim[d];
        }
    ntp_op op = k->node->op;
    const reducer *r = &reducers[op];
    const float *x = k->in[0].data;
    float *y = k->out[0].data;
    int64_t n = ntp_shape_numel(out), oidx[NTP_MAX_DIMS] = {0};
    for (int64_t j = 0; j < n; j++) {
        int64_t base = 0;
        for (int d = 0; d < out->ndim; d++)
            base += oidx[d] * ist[d];
        double shift = 0.0;
        for (int pass = op == NTP_OP_REDUCE_LOG_SUM_EXP ? 0 : 1; pass < 2; pass++) {
            double acc = pass == 0 ? -INFINITY : r->init;
            int64_t ridx[NTP_MAX_DIMS] = {0}, off = base;
            for (int64_t c = 0; c < count; c++) {
                double v = x[off];
                acc = pass == 0 ? (acc >= v ? acc : v) : r->step(acc, v, shift);
                for (int q = nr - 1; q >= 0; q--) {
                    int d = rd[q];
                    off += ist[d];
                    if (++ridx[q] < in->dim[d])
                        break;
                    off -= ist[d] * ridx[q];
                    ridx[q] = 0;
                }
            }
            if (pass == 0)
                shift = isinf(acc) ? 0.0 : acc;
            else
                y[j] = (float)r->final(acc, count, shift);
        }
        for (int d = out->ndim - 1; d >= 0; d--) {
            if (++oidx[d] < out->dim[d])
                break;
            oidx[d] = 0;
        }
    }
    return NTP_STATUS_OK;
}

static ntp_status shapes_agree(ntp_ctx *ctx, const ntp_kargs *k, int64_t c)
{
    const ntp_shape *in = &k->in[0].shape, *out = &k->out[0].shape;
    bool ok = in->ndim >= 3 && in->ndim == out->ndim;
    for (int d = 0; ok && d < in->ndim; d++)
        ok = in->dim[d] == out->dim[d];
    for (int i = 0; ok && i < k->n_w; i++)
        ok = ntp_shape_numel(&k->w[i].shape) == c;
    if (!ok) {
        char a[128], b[128];
        return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                              "input %s, output %s and weights "
                              "do not agree",
                              ntp_shape_str(in, a, sizeof a), ntp_shape_str(out, b, sizeof b));
    }
    return NTP_STATUS_OK;
}

/* y = scale[c] (x - mean) / sqrt(var + eps) + bias[c], with the mean and the
 * (population) variance of each sample's channel. */
static ntp_status instancenorm(ntp_ctx *ctx, const ntp_kargs *k)
{
    ntp_status st = ntp__ref_expect(ctx, k, 1, 2, 2, 1);
    if (st || (st = shapes_agree(ctx, k, k->in[0].shape.ndim >= 2 ? k->in[0].shape.dim[1] : 0)))
        return st;
    const ntp_shape *s = &k->in[0].shape;
    int64_t N = s->dim[0], C = s->dim[1], inner = ntp_shape_numel(s) / (N * C);
    const float *x = k->in[0].data, *scale = k->w[0].data, *bias = k->w[1].data;
    float *y = k->out[0].data;
    double eps = k->node->a.epsilon;
    for (int64_t nc = 0; nc < N * C; nc++) {
        const float *xr = x + nc * inner;
        float *yr = y + nc * inner;
        double sum = 0.0, sq = 0.0;
        for (int64_t i = 0; i < inner; i++)
            sum += xr[i];
        double mean = sum / (double)inner;
        for (int64_t i = 0; i < inner; i++)
            sq += ((double)xr[i] - mean) * ((double)xr[i] - mean);
        double inv = 1.0 / sqrt(sq / (double)inner + eps);
        int64_t c = nc % C;
        for (int64_t i = 0; i < inner; i++)
            yr[i] = (float)(((double)xr[i] - mean) * inv * scale[c] + bias[c]);
    }
    return NTP_STATUS_OK;
}

/* ONNX LRN: y = x / (bias + alpha / size * sum of x^2 over the channels
 * c - floor((size-1)/2) .. c + ceil((size-1)/2))^beta. */
static ntp_status lrn(ntp_ctx *ctx, const ntp_kargs *k)
{
    ntp_status st = ntp__ref_expect(ctx, k, 1, 0, 0, 1);
    if (st || (st = shapes_agree(ctx, k, 0)))
        return st;
    const ntp_attrs *a = &k->node->a;
    const ntp_shape *s = &k->in[0].shape;
    int64_t N = s->dim[0], C = s->dim[1], inner = ntp_shape_numel(s) / (N * C);
    int64_t size = ntp__lrn_size(a), lo = (size - 1) / 2, hi = size / 2;
    if (size <= 0)
        return ntp__ref_error(ctx, k, NTP_STATUS_INVALID_ARGUMENT, "size must be positive");
    const float *x = k->in[0].data;
    float *y = k->out[0].data;
    double alpha = ntp__lrn_alpha(a) / (double)size, beta = ntp__lrn_beta(a),
           bias = ntp__lrn_bias(a);
    for (int64_t b = 0; b < N; b++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < inner; i++) {
                double sq = 0.0;
                int64_t c0 = c - lo < 0 ? 0 : c - lo, c1 = c + hi > C - 1 ? C - 1 : c + hi;
                for (int64_t q = c0; q <= c1; q++) {
                    double v = x[(b * C + q) * inner + i];
                    sq += v * v;
                }
                int64_t at = (b * C + c) * inner + i;
                y[at] = (float)((double)x[at] / pow(bias + alpha * sq, beta));
            }
    return NTP_STATUS_OK;
}

static const ntp_ref_kernel_fn kernels[NTP_OP_COUNT] = {
    [NTP_OP_REDUCE_MEAN] = reduce,        [NTP_OP_REDUCE_SUM] = reduce,
    [NTP_OP_REDUCE_MAX] = reduce,         [NTP_OP_REDUCE_MIN] = reduce,
    [NTP_OP_REDUCE_PROD] = reduce,        [NTP_OP_REDUCE_L1] = reduce,
    [NTP_OP_REDUCE_L2] = reduce,          [NTP_OP_REDUCE_SUM_SQUARE] = reduce,
    [NTP_OP_REDUCE_LOG_SUM] = reduce,     [NTP_OP_REDUCE_LOG_SUM_EXP] = reduce,
    [NTP_OP_INSTANCENORM] = instancenorm, [NTP_OP_LRN] = lrn,
};

ntp_status ntp__ref_onnx_reduce(ntp_ctx *ctx, const ntp_kargs *k)
{
    return ntp__ref_dispatch(ctx, k, kernels, "reduction");
}
