/* Activations, softmax and broadcasting add / mul.
 *
 * Transcendental activations are evaluated in double and rounded once to
 * f32, so the reference is within half an ulp of the exact value and other
 * backends' f32 approximations are measured against something better than
 * themselves. */
#include <math.h>
#include "ref-impl.h"

float ntp__ref_sigmoid(float x)
{
    return (float)(1.0 / (1.0 + exp(-(double)x)));
}

float ntp__ref_tanh(float x)
{
    return (float)tanh((double)x);
}

static float relu6(double v)
{
    return (float)(v < 0.0 ? 0.0 : v > 6.0 ? 6.0 : v);
}

static ntp_status activation(ntp_ctx *ctx, const ntp_kargs *k)
{
    ntp_status st = ntp__ref_expect(ctx, k, 1, 0, 0, 1);
    if (st)
        return st;
    int64_t n = ntp_shape_numel(&k->in[0].shape);
    if (ntp_shape_numel(&k->out[0].shape) != n) {
        char a[128], b[128];
        return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "input %s and output %s differ",
                              ntp_shape_str(&k->in[0].shape, a, sizeof a),
                              ntp_shape_str(&k->out[0].shape, b, sizeof b));
    }
    const ntp_attrs *a = &k->node->a;
    const float *x = k->in[0].data;
    float *y = k->out[0].data;
    switch (k->node->op) {
    case NTP_OP_RELU: {
        float hi = a->has_max ? (float)a->max : INFINITY;
        for (int64_t i = 0; i < n; i++) {
            float v = x[i] > 0.0f ? x[i] : isnan(x[i]) ? x[i] : 0.0f;
            y[i] = v > hi ? hi : v;
        }
        break;
    }
    case NTP_OP_LEAKY_RELU: {
        float alpha = (float)a->alpha;
        for (int64_t i = 0; i < n; i++)
            y[i] = x[i] >= 0.0f ? x[i] : alpha * x[i];
        break;
    }
    case NTP_OP_SIGMOID:
        for (int64_t i = 0; i < n; i++)
            y[i] = ntp__ref_sigmoid(x[i]);
        break;
    case NTP_OP_TANH:
        for (int64_t i = 0; i < n; i++)
            y[i] = ntp__ref_tanh(x[i]);
        break;
    case NTP_OP_GELU:
        /* The exact form with erf, not the tanh approximation. */
        for (int64_t i = 0; i < n; i++) {
            double v = x[i];
            y[i] = (float)(0.5 * v * (1.0 + erf(v * 0.70710678118654752440)));
        }
        break;
    case NTP_OP_SILU:
        for (int64_t i = 0; i < n; i++) {
            double v = x[i];
            y[i] = (float)(v / (1.0 + exp(-v)));
        }
        break;
    case NTP_OP_HARDSWISH:
        for (int64_t i = 0; i < n; i++) {
            double v = x[i];
            y[i] = (float)(v * relu6(v + 3.0) / 6.0);
        }
        break;
    case NTP_OP_CLIP: {
        float lo = (float)a->min, hi = (float)a->max;
        for (int64_t i = 0; i < n; i++) {
            float v = x[i] < lo ? lo : x[i];
            y[i] = v > hi ? hi : v;
        }
        break;
    }
    default:
        return ntp__ref_error(ctx, k, NTP_STATUS_INTERNAL, "not an activation");
    }
    return NTP_STATUS_OK;
}

/* Softmax of len values q[j*stride] into p[j*stride] (p may be q): the
 * maximum is subtracted, exponentials and their sum are taken in double and
 * each result is rounded once. NaN in the input propagates. A line that is
 * all -Inf (everything masked) gives zeros rather than NaN. */
static void softmax_line(const float *q, float *p, int64_t len, int64_t stride)
{
    float m = -INFINITY;
    for (int64_t j = 0; j < len; j++) {
        float v = q[j * stride];
        if (!isnan(m) && (v > m || isnan(v)))
            m = v;
    }
    bool masked = isinf(m) && m < 0;
    double sum = 0.0;
    for (int64_t j = 0; j < len; j++)
        sum += masked ? 0.0 : exp((double)q[j * stride] - (double)m);
    double inv = sum > 0.0 ? 1.0 / sum : 0.0;
    for (int64_t j = 0; j < len; j++)
        p[j * stride] = masked ? 0.0f : (float)(exp((double)q[j * stride] - (double)m) * inv);
}

void ntp__ref_softmax_strided(float *x, int64_t n, int64_t stride)
{
    softmax_line(x, x, n, stride);
}

static ntp_status softmax(ntp_ctx *ctx, const ntp_kargs *k)
{
    ntp_status st = ntp__ref_expect(ctx, k, 1, 0, 0, 1);
    if (st)
        return st;
    const ntp_shape *xs = &k->in[0].shape;
    int64_t axis = k->node->a.axis;
    if (axis < 0)
        axis += xs->ndim;
    char b[128];
    if (axis < 0 || axis >= xs->ndim || ntp_shape_numel(&k->out[0].shape) != ntp_shape_numel(xs))
        return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "softmax axis %lld does not fit %s",
                              (long long)k->node->a.axis, ntp_shape_str(xs, b, sizeof b));
    int64_t len = xs->dim[axis], inner = 1, n = ntp_shape_numel(xs);
    for (int d = (int)axis + 1; d < xs->ndim; d++)
        inner *= xs->dim[d];
    const float *x = k->in[0].data;
    float *y = k->out[0].data;
    int64_t outer = n / (len * inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++)
            softmax_line(x + o * len * inner + i, y + o * len * inner + i, len, inner);
    return NTP_STATUS_OK;
}

/* y = x0 (+|*) x1 (+|*) ... with numpy broadcasting, combined in input
 * order. Each input is walked with per-dim strides that are 0 where it
 * broadcasts; the innermost output dim is a plain loop. */
static ntp_status binary(ntp_ctx *ctx, const ntp_kargs *k)
{
    if (k->n_in < 2 || k->n_in > NTP_MAX_INPUTS)
        return ntp__ref_error(ctx, k, NTP_STATUS_INTERNAL, "add/mul with %d inputs", k->n_in);
    ntp_status st = ntp__ref_expect(ctx, k, k->n_in, 0, 0, 1);
    if (st)
        return st;
    const ntp_shape *ys = &k->out[0].shape;
    int r = ys->ndim;
    int64_t strides[NTP_MAX_INPUTS][NTP_MAX_DIMS];
    for (int i = 0; i < k->n_in; i++) {
        const ntp_shape *s = &k->in[i].shape;
        if (s->ndim > r)
            goto bad;
        int64_t stride = 1;
        for (int d = r - 1; d >= 0; d--) {
            int ds = d - (r - s->ndim);
            int64_t dim = ds >= 0 ? s->dim[ds] : 1;
            if (dim != ys->dim[d] && dim != 1)
                goto bad;
            strides[i][d] = dim == 1 ? 0 : stride;
            stride *= dim;
        }
    }
    bool is_add = k->node->op == NTP_OP_ADD;
    float *y = k->out[0].data;
    int64_t n = ntp_shape_numel(ys);
    if (n == 0)
        return NTP_STATUS_OK;
    int64_t last = r > 0 ? ys->dim[r - 1] : 1;
    int64_t idx[NTP_MAX_DIMS] = {0};
    int64_t off[NTP_MAX_INPUTS] = {0};
    for (int64_t row = 0; row < n / last; row++) {
        float *yr = y + row * last;
        for (int i = 0; i < k->n_in; i++) {
            const float *xr = (const float *)k->in[i].data + off[i];
            int64_t s = r > 0 ? strides[i][r - 1] : 0;
            if (i == 0) {
                for (int64_t j = 0; j < last; j++)
                    yr[j] = xr[j * s];
            } else if (is_add) {
                for (int64_t j = 0; j < last; j++)
                    yr[j] += xr[j * s];
            } else {
                for (int64_t j = 0; j < last; j++)
                    yr[j] *= xr[j * s];
            }
        }
        /* Advance the odometer over the leading dims. */
        for (int d = r - 2; d >= 0; d--) {
            idx[d]++;
            for (int i = 0; i < k->n_in; i++)
                off[i] += strides[i][d];
            if (idx[d] < ys->dim[d])
                break;
            for (int i = 0; i < k->n_in; i++)
                off[i] -= strides[i][d] * idx[d];
            idx[d] = 0;
        }
    }
    return NTP_STATUS_OK;
bad:;
    char a[128], b[128];
    return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "inputs such as %s do not broadcast to %s",
                          ntp_shape_str(&k->in[0].shape, a, sizeof a), ntp_shape_str(ys, b, sizeof b));
}

ntp_status ntp__ref_eltwise(ntp_ctx *ctx, const ntp_kargs *k)
{
    switch (k->node->op) {
    case NTP_OP_SOFTMAX:
        return softmax(ctx, k);
    case NTP_OP_ADD:
    case NTP_OP_MUL:
        return binary(ctx, k);
    default:
        return activation(ctx, k);
    }
}
