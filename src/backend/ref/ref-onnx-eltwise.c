/* Reference kernels of the element-wise ops added for ONNX models: prelu,
 * log_softmax, hardmax, where, and the broadcasting binary family
 * (NTP_BINARY_TABLE: sub, div, pow, max, min, mean, fmod, ...), whose scalar
 * functions are here. (Their unary math and activations are ref-eltwise.c's,
 * from the op table.)
 *
 * As in ref-eltwise.c, functions are evaluated in double and rounded once to
 * f32, so the reference is within half an ulp of the exact value. */
#include <math.h>

#include "graph/op-onnx-impl.h"
#include "ref-onnx-impl.h"

static ntp_status same_count(ntp_ctx *ctx, const ntp_kargs *k)
{
    if (ntp_shape_numel(&k->out[0].shape) != ntp_shape_numel(&k->in[0].shape)) {
        char a[128], b[128];
        return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "input %s and output %s differ",
                              ntp_shape_str(&k->in[0].shape, a, sizeof a),
                              ntp_shape_str(&k->out[0].shape, b, sizeof b));
    }
    return NTP_STATUS_OK;
}

/* --- broadcasting ---------------------------------------------------------------- */

/* Strides of input shape s read at every index of output shape y: 0 along
 * the dims where s broadcasts. False when s does not broadcast to y. */
static bool bcast_strides(const ntp_shape *s, const ntp_shape *y, int64_t *st)
{
    int r = y->ndim;
    if (s->ndim > r)
        return false;
    int64_t stride = 1;
    for (int d = r - 1; d >= 0; d--) {
        int ds = d - (r - s->ndim);
        int64_t dim = ds >= 0 ? s->dim[ds] : 1;
        if (dim != y->dim[d] && dim != 1)
            return false;
        st[d] = dim == 1 ? 0 : stride;
        stride *= dim;
    }
    return true;
}

/* Walks the output in order, keeping each input's offset. */
typedef struct bcast {
    int r, n_in;
    int64_t st[NTP_MAX_INPUTS][NTP_MAX_DIMS];
    int64_t idx[NTP_MAX_DIMS];
    int64_t off[NTP_MAX_INPUTS];
    const ntp_shape *y;
} bcast;

static void bcast_next(bcast *b)
{
    for (int d = b->r - 1; d >= 0; d--) {
        b->idx[d]++;
        for (int i = 0; i < b->n_in; i++)
            b->off[i] += b->st[i][d];
        if (b->idx[d] < b->y->dim[d])
            return;
        for (int i = 0; i < b->n_in; i++)
            b->off[i] -= b->st[i][d] * b->idx[d];
        b->idx[d] = 0;
    }
}

static ntp_status bcast_init(ntp_ctx *ctx, const ntp_kargs *k, bcast *b)
{
    b->r = k->out[0].shape.ndim;
    b->n_in = k->n_in;
    b->y = &k->out[0].shape;
    for (int d = 0; d < NTP_MAX_DIMS; d++)
        b->idx[d] = 0;
    for (int i = 0; i < k->n_in; i++) {
        b->off[i] = 0;
        if (!bcast_strides(&k->in[i].shape, b->y, b->st[i])) {
            char s1[128], s2[128];
            return ntp__ref_error(
                ctx, k, NTP_STATUS_SHAPE_ERROR, "input %d %s does not broadcast to %s", i,
                ntp_shape_str(&k->in[i].shape, s1, sizeof s1), ntp_shape_str(b->y, s2, sizeof s2));
        }
    }
    return NTP_STATUS_OK;
}

/* The binary family's scalar functions, ref_binary_<fn> of NTP_BINARY_TABLE
 * (graph/op-table.h), in double. */
static double ref_binary_add(double a, double b)
{
    return a + b; /* mean: the sum, divided at the end */
}
static double ref_binary_sub(double a, double b)
{
    return a - b;
}
static double ref_binary_div(double a, double b)
{
    return a / b;
}
static double ref_binary_pow(double a, double b)
{
    return pow(a, b);
}
/* C's fmod: a - b·trunc(a/b), exact, with the sign of a (ONNX's Mod with
 * fmod=1, torch.fmod); NaN where b is 0. */
static double ref_binary_fmod(double a, double b)
{
    return fmod(a, b);
}
/* NaN wins, as numpy.maximum and numpy.minimum. */
static double ref_binary_max(double a, double b)
{
    return isnan(a) || a >= b ? a : b;
}
static double ref_binary_min(double a, double b)
{
    return isnan(a) || a <= b ? a : b;
}

/* a > b: 1 or 0 (false where either is NaN, as numpy.greater). */
static double ref_binary_greater(double a, double b)
{
    return a > b ? 1.0 : 0.0;
}

/* How each binary op combines two values, from the table; where selects
 * instead. */
static double (*const combines[NTP_OP_COUNT])(double a, double b) = {
#define REF_BINARY_(e, fn, onnx, attrs, commutes, out, flops, post) [NTP_OP_##e] = ref_binary_##fn,
    NTP_BINARY_TABLE(REF_BINARY_)
#undef REF_BINARY_
};

static ntp_status binary_op(ntp_ctx *ctx, const ntp_kargs *k)
{
    if (k->n_in < 2 || k->n_in > NTP_MAX_INPUTS)
        return ntp__ref_error(ctx, k, NTP_STATUS_INTERNAL, "called with %d inputs", k->n_in);
    ntp_status st = ntp__ref_expect(ctx, k, k->n_in, 0, 0, 1);
    bcast b;
    if (st || (st = bcast_init(ctx, k, &b)))
        return st;
    ntp_op op = k->node->op;
    double (*combine)(double a, double b) = combines[op];
    if (op != NTP_OP_WHERE && !combine)
        return ntp__ref_error(ctx, k, NTP_STATUS_INTERNAL, "not a binary op");
    int64_t n = ntp_shape_numel(b.y);
    float *y = k->out[0].data;
    for (int64_t j = 0; j < n; j++, bcast_next(&b)) {
        if (op == NTP_OP_WHERE) {
            float c = ((const float *)k->in[0].data)[b.off[0]];
            y[j] = c != 0.0f ? ((const float *)k->in[1].data)[b.off[1]]
                             : ((const float *)k->in[2].data)[b.off[2]];
            continue;
        }
        /* Combined in input order, each step rounded to f32 as a chain of
         * binary ONNX ops would be. */
        float acc = ((const float *)k->in[0].data)[b.off[0]];
        for (int i = 1; i < k->n_in; i++)
            acc = (float)combine(acc, ((const float *)k->in[i].data)[b.off[i]]);
        y[j] = op == NTP_OP_MEAN ? (float)((double)acc / k->n_in) : acc;
    }
    return NTP_STATUS_OK;
}

static ntp_status prelu(ntp_ctx *ctx, const ntp_kargs *k)
{
    ntp_status st = ntp__ref_expect(ctx, k, 1, 1, 1, 1);
    if (st || (st = same_count(ctx, k)))
        return st;
    int64_t sst[NTP_MAX_DIMS];
    const ntp_shape *y = &k->out[0].shape;
    if (!bcast_strides(&k->w[0].shape, y, sst)) {
        char s1[128], s2[128];
        return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "slope %s does not broadcast to %s",
                              ntp_shape_str(&k->w[0].shape, s1, sizeof s1),
                              ntp_shape_str(y, s2, sizeof s2));
    }
    const float *x = k->in[0].data, *slope = k->w[0].data;
    float *out = k->out[0].data;
    int64_t n = ntp_shape_numel(y), idx[NTP_MAX_DIMS] = {0}, off = 0;
    for (int64_t j = 0; j < n; j++) {
        out[j] = x[j] < 0 ? slope[off] * x[j] : x[j];
        for (int d = y->ndim - 1; d >= 0; d--) {
            idx[d]++;
            off += sst[d];
            if (idx[d] < y->dim[d])
                break;
            off -= sst[d] * idx[d];
            idx[d] = 0;
        }
    }
    return NTP_STATUS_OK;
}

/* log_softmax and hardmax along one axis: rows of `len` values `inner`
 * apart. */
static ntp_status along_axis(ntp_ctx *ctx, const ntp_kargs *k)
{
    ntp_status st = ntp__ref_expect(ctx, k, 1, 0, 0, 1);
    if (st || (st = same_count(ctx, k)))
        return st;
    const ntp_shape *s = &k->in[0].shape;
    int64_t axis = k->node->a.axis;
    if (axis < 0)
        axis += s->ndim;
    if (axis < 0 || axis >= s->ndim)
        return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "axis %lld is out of range",
                              (long long)k->node->a.axis);
    int64_t len = s->dim[axis], inner = 1, n = ntp_shape_numel(s);
    for (int d = (int)axis + 1; d < s->ndim; d++)
        inner *= s->dim[d];
    const float *x = k->in[0].data;
    float *y = k->out[0].data;
    for (int64_t o = 0; o < n / (len * inner); o++)
        for (int64_t i = 0; i < inner; i++) {
            const float *xr = x + o * len * inner + i;
            float *yr = y + o * len * inner + i;
            int64_t arg = 0;
            double m = xr[0];
            for (int64_t j = 1; j < len; j++)
                if (xr[j * inner] > m || (isnan(xr[j * inner]) && !isnan(m))) {
                    m = xr[j * inner];
                    arg = j;
                }
            if (k->node->op == NTP_OP_HARDMAX) {
                for (int64_t j = 0; j < len; j++)
                    yr[j * inner] = j == arg ? 1.0f : 0.0f;
                continue;
            }
            double sum = 0.0;
            for (int64_t j = 0; j < len; j++)
                sum += exp((double)xr[j * inner] - m);
            double lse = m + log(sum);
            for (int64_t j = 0; j < len; j++)
                yr[j * inner] = (float)((double)xr[j * inner] - lse);
        }
    return NTP_STATUS_OK;
}

/* Called by ref-run.c for NTP_REF_ONNX_ELTWISE_CASES only. */
ntp_status ntp__ref_onnx_eltwise(ntp_ctx *ctx, const ntp_kargs *k)
{
    ntp_op op = k->node->op;
    if (op == NTP_OP_PRELU)
        return prelu(ctx, k);
    if (op == NTP_OP_LOG_SOFTMAX || op == NTP_OP_HARDMAX)
        return along_axis(ctx, k);
    return binary_op(ctx, k);
}
