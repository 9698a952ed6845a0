/* Activations and unary math, softmax and broadcasting add / mul.
 *
 * Transcendental activations are evaluated in double and rounded once to
 * f32, so the reference is within half an ulp of the exact value and other
 * backends' f32 approximations are measured against something better than
 * themselves. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/numeric-impl.h"
#include "graph/op-onnx-impl.h"
#include "ref-impl.h"

float ntp__ref_sigmoid(float x)
{
    return (float)(1.0 / (1.0 + exp(-(double)x)));
}

float ntp__ref_tanh(float x)
{
    return (float)tanh((double)x);
}

/* --- the unary element-wise ops ------------------------------------------------------------ *
 *
 * One function per row of NTP_UNARY_TABLE (op-table.h), named ref_<fn>: y as
 * a double from x and the node's attributes. The per-op loops and the table
 * that dispatches to them are generated from the op table below, so a new
 * op needs its function here and nothing else in this backend. */
#define ATTRS const ntp_attrs *a __attribute__((unused))

static double ref_relu(double x, ATTRS)
{
    double v = x > 0.0 ? x : isnan(x) ? x : 0.0;
    double hi = a->has_max ? (double)(float)a->max : INFINITY;
    return v > hi ? hi : v;
}
/* The slope is rounded to f32 first, as the layer's parameter is. */
static double ref_leaky_relu(double x, ATTRS)
{
    return x >= 0.0 ? x : (double)(float)a->leaky_relu.slope * x;
}
static double ref_sigmoid(double x, ATTRS)
{
    return 1.0 / (1.0 + exp(-x));
}
static double ref_tanh(double x, ATTRS)
{
    return tanh(x);
}
/* The exact form with erf, not the tanh approximation. */
static double ref_gelu(double x, ATTRS)
{
    return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440));
}
static double ref_silu(double x, ATTRS)
{
    return x / (1.0 + exp(-x));
}
/* relu6(x + 3) is rounded to f32 before the product, as it always was. */
static double ref_hardswish(double x, ATTRS)
{
    double r = x + 3.0;
    return x * (double)(float)(r < 0.0 ? 0.0 : r > 6.0 ? 6.0 : r) / 6.0;
}
static double ref_clip(double x, ATTRS)
{
    double lo = (float)a->min, hi = (float)a->max, v = x < lo ? lo : x;
    return v > hi ? hi : v;
}
static double ref_abs(double x, ATTRS)
{
    return fabs(x);
}
static double ref_neg(double x, ATTRS)
{
    return -x;
}
static double ref_exp(double x, ATTRS)
{
    return exp(x);
}
static double ref_log(double x, ATTRS)
{
    return log(x);
}
static double ref_sqrt(double x, ATTRS)
{
    return sqrt(x);
}
static double ref_reciprocal(double x, ATTRS)
{
    return 1.0 / x;
}
static double ref_erf(double x, ATTRS)
{
    return erf(x);
}
static double ref_floor(double x, ATTRS)
{
    return floor(x);
}
static double ref_ceil(double x, ATTRS)
{
    return ceil(x);
}
/* ONNX rounds halves to even. */
static double ref_round(double x, ATTRS)
{
    return ntp__round_half_even(x);
}
/* Keeps 0 and NaN. */
static double ref_sign(double x, ATTRS)
{
    return x > 0 ? 1.0 : x < 0 ? -1.0 : x;
}
static double ref_sin(double x, ATTRS)
{
    return sin(x);
}
static double ref_cos(double x, ATTRS)
{
    return cos(x);
}
static double ref_tan(double x, ATTRS)
{
    return tan(x);
}
static double ref_asin(double x, ATTRS)
{
    return asin(x);
}
static double ref_acos(double x, ATTRS)
{
    return acos(x);
}
static double ref_atan(double x, ATTRS)
{
    return atan(x);
}
static double ref_sinh(double x, ATTRS)
{
    return sinh(x);
}
static double ref_cosh(double x, ATTRS)
{
    return cosh(x);
}
static double ref_asinh(double x, ATTRS)
{
    return asinh(x);
}
static double ref_acosh(double x, ATTRS)
{
    return acosh(x);
}
static double ref_atanh(double x, ATTRS)
{
    return atanh(x);
}
/* log(1 + e^x) without overflow for large x. */
static double ref_softplus(double x, ATTRS)
{
    return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}
static double ref_softsign(double x, ATTRS)
{
    return x / (1.0 + fabs(x));
}
static double ref_elu(double x, ATTRS)
{
    return x < 0 ? a->elu.alpha * expm1(x) : x;
}
static double ref_selu(double x, ATTRS)
{
    double al = a->selu.alpha, ga = a->selu.gamma;
    return x <= 0 ? ga * (al * exp(x) - al) : ga * x;
}
static double ref_celu(double x, ATTRS)
{
    double al = a->elu.alpha;
    return fmax(0.0, x) + fmin(0.0, al * expm1(x / al));
}
static double ref_hard_sigmoid(double x, ATTRS)
{
    return fmax(0.0, fmin(1.0, a->hard_sigmoid.slope * x + a->hard_sigmoid.offset));
}
static double ref_thresholded_relu(double x, ATTRS)
{
    return x > a->thresholded_relu.threshold ? x : 0.0;
}
static double ref_shrink(double x, ATTRS)
{
    double la = a->shrink.lambd, bi = a->shrink.bias;
    return x < -la ? x + bi : x > la ? x - bi : 0.0;
}
/* x·tanh(softplus(x)), softplus without overflow: mish(-1000) is -0. */
static double ref_mish(double x, ATTRS)
{
    return x * tanh(x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)));
}
/* log(1 / (1 + e^-x)) = -softplus(-x), without overflow for large |x|. */
static double ref_log_sigmoid(double x, ATTRS)
{
    return x < 0 ? x - log1p(exp(x)) : -log1p(exp(-x));
}

#undef ATTRS

typedef void (*unary_loop)(const ntp_attrs *a, const float *x, float *y, int64_t n);

// clang-format off
#define NTP_REF_UNARY_LOOP_(e, fn, onnx, attrs, flops)                                 \
    static void loop_##fn(const ntp_attrs *a, const float *x, float *y, int64_t n) \
    {                                                                               \
        for (int64_t i = 0; i < n; i++)                                             \
            y[i] = (float)ref_##fn(x[i], a);                                        \
    }
// clang-format on
NTP_UNARY_TABLE(NTP_REF_UNARY_LOOP_)
#undef NTP_REF_UNARY_LOOP_

static const unary_loop unary_loops[NTP_OP_COUNT] = {
#define NTP_REF_UNARY_ENTRY_(e, fn, onnx, attrs, flops) [NTP_OP_##e] = loop_##fn,
    NTP_UNARY_TABLE(NTP_REF_UNARY_ENTRY_)
#undef NTP_REF_UNARY_ENTRY_
};

/* relu, clip and leaky relu without a branch on each element's value: the
 * table's ref_relu (x > 0 ? ...), ref_clip and ref_leaky_relu compile to a
 * jump per element, mispredicted on half the elements of an input of
 * random signs and on few of one whose channels keep their sign, so the
 * layer's time followed its data: 6.8 ns an element of random signs, 1.2
 * in runs of one sign (2026-12-04, the Zen 4 VM, bench/bench_ref_relu;
 * DenseNet-121's later relus ran at the runs' speed, the calibration's at
 * the random one's). Each test becomes a mask that picks x or the other
 * value, as the table's functions give: relu keeps x where it is not <= 0
 * (positive or NaN) and +0 elsewhere, then its upper bound where x is
 * above it; clip the lower bound where x is below it, then the upper; leaky
 * relu x where x >= 0 and slope x elsewhere (the f32 product of two f32
 * values is the double product rounded once). NaN passes every test. */
static inline float select_f32(bool keep, float x, float other)
{
    uint32_t a, b, m = -(uint32_t)keep;
    memcpy(&a, &x, sizeof a);
    memcpy(&b, &other, sizeof b);
    a = (a & m) | (b & ~m);
    memcpy(&x, &a, sizeof x);
    return x;
}

static void loop_relu_masked(const ntp_attrs *a, const float *x, float *y, int64_t n)
{
    if (!a->has_max) {
        for (int64_t i = 0; i < n; i++)
            y[i] = select_f32(!(x[i] <= 0.0f), x[i], 0.0f);
        return;
    }
    float hi = (float)a->max;
    for (int64_t i = 0; i < n; i++) {
        float v = select_f32(!(x[i] <= 0.0f), x[i], 0.0f);
        y[i] = select_f32(!(v > hi), v, hi);
    }
}

static void loop_clip_masked(const ntp_attrs *a, const float *x, float *y, int64_t n)
{
    float lo = (float)a->min, hi = (float)a->max;
    for (int64_t i = 0; i < n; i++) {
        float v = select_f32(!(x[i] < lo), x[i], lo);
        y[i] = select_f32(!(v > hi), v, hi);
    }
}

static void loop_leaky_relu_masked(const ntp_attrs *a, const float *x, float *y, int64_t n)
{
    float slope = (float)a->leaky_relu.slope;
    for (int64_t i = 0; i < n; i++)
        y[i] = select_f32(x[i] >= 0.0f, x[i], slope * x[i]);
}

bool ntp__ref_unary(ntp_op op, const ntp_attrs *a, const float *x, float *y, int64_t n)
{
    if ((unsigned)op >= NTP_OP_COUNT || !unary_loops[op])
        return false;
    if (op == NTP_OP_RELU)
        loop_relu_masked(a, x, y, n);
    else if (op == NTP_OP_CLIP)
        loop_clip_masked(a, x, y, n);
    else if (op == NTP_OP_LEAKY_RELU)
        loop_leaky_relu_masked(a, x, y, n);
    else
        unary_loops[op](a, x, y, n);
    return true;
}

static ntp_status unary(ntp_ctx *ctx, const ntp_kargs *k)
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
    if (!ntp__ref_unary(k->node->op, &k->node->a, k->in[0].data, k->out[0].data, n))
        return ntp__ref_error(ctx, k, NTP_STATUS_INTERNAL, "not a unary element-wise op");
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
    return ntp__ref_error(
        ctx, k, NTP_STATUS_SHAPE_ERROR, "inputs such as %s do not broadcast to %s",
        ntp_shape_str(&k->in[0].shape, a, sizeof a), ntp_shape_str(ys, b, sizeof b));
}

ntp_status ntp__ref_eltwise(ntp_ctx *ctx, const ntp_kargs *k)
{
    if (k->node->op == NTP_OP_SOFTMAX)
        return softmax(ctx, k);
    if (k->node->op == NTP_OP_ADD || k->node->op == NTP_OP_MUL)
        return binary(ctx, k);
    return unary(ctx, k);
}
