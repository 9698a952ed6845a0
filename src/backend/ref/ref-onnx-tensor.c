/* Reference kernels of the data-movement ops added for ONNX models:
 * constant, slice, expand and resize. The index arithmetic is shared with
 * shape inference (src/graph/op-onnx-tensor.c), so kernel and shapes agree
 * by construction; each kernel still checks the output shape it is given. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "graph/op-onnx-impl.h"
#include "ref-onnx-impl.h"

static ntp_status mismatch(ntp_ctx *ctx, const ntp_kargs *k, const char *what, const ntp_shape *x,
                           const ntp_shape *y)
{
    char a[128], b[128];
    return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "%s: %s and %s", what,
                          ntp_shape_str(x, a, sizeof a), ntp_shape_str(y, b, sizeof b));
}

static void strides_of(const ntp_shape *s, int64_t *st)
{
    int64_t v = 1;
    for (int d = s->ndim - 1; d >= 0; d--) {
        st[d] = v;
        v *= s->dim[d];
    }
}

/* out[i] = in[base + sum(idx[d] * istride[d])] over the output shape.
 * The innermost dims the input holds contiguously (stride 1, each outer
 * one the product of those inside; a dim of 1 whatever its stride) are
 * copied as runs of that length, one memcpy each: a channel split of a
 * batch-1 NCHW tensor is one run. Element by element, the index carry
 * cost more than the copy (ShuffleNetV2's 58-channel 28x28 split: 85 us,
 * 1.7 ns an element). */
static void strided_copy(const float *in, float *out, const ntp_shape *os, int64_t base,
                         const int64_t *istride)
{
    int64_t n = ntp_shape_numel(os), run = 1, idx[NTP_MAX_DIMS] = {0}, off = base;
    int nd = os->ndim;
    if (n <= 0)
        return;
    while (nd > 0 && (os->dim[nd - 1] == 1 || istride[nd - 1] == run)) {
        run *= os->dim[nd - 1];
        nd--;
    }
    for (int64_t j = 0; j < n; j += run) {
        if (run == 1)
            out[j] = in[off];
        else
            memcpy(out + j, in + off, (size_t)run * sizeof *out);
        for (int d = nd - 1; d >= 0; d--) {
            idx[d]++;
            off += istride[d];
            if (idx[d] < os->dim[d])
                break;
            off -= istride[d] * idx[d];
            idx[d] = 0;
        }
    }
}

static ntp_status constant(ntp_ctx *ctx, const ntp_kargs *k)
{
    /* The input a markup chain wires in is not read. */
    if (k->n_in > 1 || k->n_w != 1 || k->n_out != 1 || !k->w[0].data || !k->out[0].data ||
        k->w[0].dtype != NTP_DTYPE_F32 || k->out[0].dtype != NTP_DTYPE_F32)
        return ntp__ref_error(ctx, k, NTP_STATUS_INTERNAL, "constant takes one f32 value");
    int64_t n = ntp_shape_numel(&k->out[0].shape);
    if (ntp_shape_numel(&k->w[0].shape) != n)
        return mismatch(ctx, k, "value and output differ", &k->w[0].shape, &k->out[0].shape);
    memcpy(k->out[0].data, k->w[0].data, (size_t)n * sizeof(float));
    return NTP_STATUS_OK;
}

static ntp_status slice(ntp_ctx *ctx, const ntp_kargs *k)
{
    ntp_status st = ntp__ref_expect(ctx, k, 1, 0, 0, 1);
    if (st)
        return st;
    const ntp_shape *in = &k->in[0].shape;
    int64_t start[NTP_MAX_DIMS], step[NTP_MAX_DIMS], ist[NTP_MAX_DIMS], base = 0;
    ntp_shape want;
    const char *why = ntp__slice_resolve(&k->node->a, in, false, start, step, &want);
    if (why)
        return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "%s", why);
    if (!ntp_shape_equal(&want, &k->out[0].shape))
        return mismatch(ctx, k, "the slice does not give the output", in, &k->out[0].shape);
    strides_of(in, ist);
    for (int d = 0; d < in->ndim; d++) {
        base += start[d] * ist[d];
        ist[d] *= step[d];
    }
    strided_copy(k->in[0].data, k->out[0].data, &want, base, ist);
    return NTP_STATUS_OK;
}

static ntp_status expand(ntp_ctx *ctx, const ntp_kargs *k)
{
    ntp_status st = ntp__ref_expect(ctx, k, 1, 0, 0, 1);
    if (st)
        return st;
    const ntp_shape *in = &k->in[0].shape, *out = &k->out[0].shape;
    int r = out->ndim;
    int64_t st_in[NTP_MAX_DIMS], ist[NTP_MAX_DIMS];
    if (in->ndim > r)
        return mismatch(ctx, k, "the input does not broadcast to the output", in, out);
    strides_of(in, st_in);
    for (int d = 0; d < r; d++) {
        int ds = d - (r - in->ndim);
        int64_t dim = ds >= 0 ? in->dim[ds] : 1;
        if (dim != out->dim[d] && dim != 1)
            return mismatch(ctx, k, "the input does not broadcast to the output", in, out);
        ist[d] = dim == 1 ? 0 : st_in[ds];
    }
    strided_copy(k->in[0].data, k->out[0].data, out, 0, ist);
    return NTP_STATUS_OK;
}

/* --- resize -------------------------------------------------------------------------- */

/* One neighbour an output coordinate reads along a dim. */
typedef struct tap {
    int64_t index;
    double weight;
} tap;

static int taps_of(int mode)
{
    return mode == NTP_RESIZE_CUBIC ? 4 : mode == NTP_RESIZE_LINEAR ? 2 : 1;
}

/* Whether dim d is left alone (same size, scale 1), so it needs no table. */
static bool dim_kept(const ntp_attrs *a, const ntp_shape *in, const ntp_shape *out, int d)
{
    return in->dim[d] == out->dim[d] && ntp__resize_scale(a, in, out, d) == 1.0;
}

size_t ntp__ref_onnx_tensor_workspace(const ntp_kargs *k)
{
    if (k->node->op != NTP_OP_RESIZE || k->n_in != 1 || k->n_out != 1)
        return 0;
    const ntp_shape *in = &k->in[0].shape, *out = &k->out[0].shape;
    size_t total = 0;
    if (in->ndim != out->ndim)
        return 0; /* the kernel refuses it */
    for (int d = 0; d < out->ndim; d++) {
        int64_t cnt;
        if (__builtin_mul_overflow(out->dim[d], (int64_t)taps_of(ntp__resize_mode(&k->node->a)),
                                   &cnt))
            return SIZE_MAX;
        total = ntp__ref_size_add(total, ntp__ref_floats(cnt, 4)); /* a tap is 4 floats wide */
    }
    return total;
}

/* Keys cubic convolution (ONNX's coefficients for A = cubic_coeff_a) at
 * distance ratio in [0, 1) from the left neighbour. */
static void cubic_weights(double r, double A, double *c)
{
    double s = r + 1, t = 1 - r, u = t + 1;
    c[0] = ((A * s - 5 * A) * s + 8 * A) * s - 4 * A;
    c[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
    c[2] = ((A + 2) * t - (A + 3)) * t * t + 1;
    c[3] = ((A * u - 5 * A) * u + 8 * A) * u - 4 * A;
}

/* The taps of every output coordinate of dim d, as ONNX's reference
 * computes them: the source coordinate, its neighbours (clamped to the
 * edge), their weights, with those outside the input dropped and the rest
 * renormalised when exclude_outside is set. */
static void dim_taps(const ntp_attrs *a, int64_t in, int64_t out, double scale, tap *t)
{
    int mode = ntp__resize_mode(a), n = taps_of(mode);
    for (int64_t o = 0; o < out; o++, t += n) {
        double x = ntp__resize_coord_of(ntp__resize_coord(a), (double)o, scale, in);
        double fl = floor(x), r = x - fl;
        int64_t i0 = (int64_t)fl;
        double w[4];
        if (mode == NTP_RESIZE_NEAREST) {
            bool up;
            switch (ntp__resize_nearest(a)) {
            case NTP_RESIZE_ROUND_PREFER_CEIL: up = r >= 0.5; break;
            case NTP_RESIZE_FLOOR: up = false; break;
            case NTP_RESIZE_CEIL: up = r > 0.0; break;
            default: up = r > 0.5; break;
            }
            t[0].index = up ? i0 + 1 : i0;
            w[0] = 1.0;
        } else if (mode == NTP_RESIZE_LINEAR) {
            t[0].index = i0;
            t[1].index = i0 + 1;
            w[0] = 1.0 - r;
            w[1] = r;
        } else {
            cubic_weights(r, ntp__resize_cubic_a(a), w);
            for (int q = 0; q < 4; q++)
                t[q].index = i0 - 1 + q;
        }
        double sum = 0.0;
        for (int q = 0; q < n; q++) {
            if (ntp__resize_exclude_outside(a) && (t[q].index < 0 || t[q].index >= in))
                w[q] = 0.0;
            sum += w[q];
        }
        for (int q = 0; q < n; q++) {
            t[q].weight = ntp__resize_exclude_outside(a) && sum != 0.0 ? w[q] / sum : w[q];
            t[q].index = t[q].index < 0 ? 0 : t[q].index >= in ? in - 1 : t[q].index;
        }
    }
}

static ntp_status resize(ntp_ctx *ctx, const ntp_kargs *k)
{
    ntp_status st = ntp__ref_expect(ctx, k, 1, 0, 0, 1);
    if (st)
        return st;
    const ntp_attrs *a = &k->node->a;
    const ntp_shape *in = &k->in[0].shape, *out = &k->out[0].shape;
    ntp_shape want;
    const char *why = ntp__resize_shape(a, in, &want);
    if (why)
        return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "%s", why);
    if (!ntp_shape_equal(&want, out))
        return mismatch(ctx, k, "the resize does not give the output", in, out);
    size_t need = ntp__ref_onnx_tensor_workspace(k);
    if (need == SIZE_MAX || (need > 0 && (!k->workspace || k->workspace_bytes < need)))
        return ntp__ref_error(ctx, k, NTP_STATUS_INTERNAL, "resize needs %zu bytes of workspace",
                              need);
    int r = in->ndim, n = taps_of(ntp__resize_mode(a));
    tap *table[NTP_MAX_DIMS];
    int ntaps[NTP_MAX_DIMS];
    tap *p = k->workspace;
    int64_t ist[NTP_MAX_DIMS];
    strides_of(in, ist);
    for (int d = 0; d < r; d++) {
        table[d] = p;
        p += out->dim[d] * n;
        if (dim_kept(a, in, out, d)) {
            ntaps[d] = 1;
            for (int64_t o = 0; o < out->dim[d]; o++)
                table[d][o] = (tap){o, 1.0};
        } else {
            ntaps[d] = n;
            dim_taps(a, in->dim[d], out->dim[d], ntp__resize_scale(a, in, out, d), table[d]);
        }
    }
    const float *x = k->in[0].data;
    float *y = k->out[0].data;
    int64_t total = ntp_shape_numel(out), idx[NTP_MAX_DIMS] = {0};
    for (int64_t j = 0; j < total; j++) {
        /* Sum over every combination of the dims' taps. */
        int q[NTP_MAX_DIMS] = {0};
        double acc = 0.0;
        for (;;) {
            double w = 1.0;
            int64_t off = 0;
            for (int d = 0; d < r; d++) {
                const tap *t = &table[d][idx[d] * (ntaps[d] == 1 ? 1 : n) + q[d]];
                w *= t->weight;
                off += t->index * ist[d];
            }
            if (w != 0.0)
                acc += w * x[off];
            int d = r - 1;
            while (d >= 0 && ++q[d] == ntaps[d])
                q[d--] = 0;
            if (d < 0)
                break;
        }
        y[j] = (float)acc;
        for (int d = r - 1; d >= 0; d--) {
            if (++idx[d] < out->dim[d])
                break;
            idx[d] = 0;
        }
    }
    return NTP_STATUS_OK;
}

static const ntp_ref_kernel_fn kernels[NTP_OP_COUNT] = {
    [NTP_OP_CONSTANT] = constant,
    [NTP_OP_SLICE] = slice,
    [NTP_OP_EXPAND] = expand,
    [NTP_OP_RESIZE] = resize,
};

ntp_status ntp__ref_onnx_tensor(ntp_ctx *ctx, const ntp_kargs *k)
{
    return ntp__ref_dispatch(ctx, k, kernels, "tensor");
}
