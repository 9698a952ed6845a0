/* The layers around the GEMMs on the BLAS backend: activations, batch
 * normalisation, softmax, add and mul with numpy broadcasting, and the
 * identities (dropout, reshape, flatten, memcpy), as simple loops in f32,
 * and the layers folded into a GEMM layer (--fuse). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas-impl.h"

static bool is_float(ntp_dtype t) { return t == NTP_DTYPE_F32; }

static int64_t norm_axis(int64_t axis, int ndim) { return axis < 0 ? axis + ndim : axis; }

bool ntp__blas_eltwise_supports(const ntp_graph *g, const ntp_node *n)
{
    for (int i = 0; i < n->n_in; i++)
        if (!is_float(ntp__cin(g, n, i)->dtype))
            return false;
    const ntp_shape *x = &ntp__cin(g, n, 0)->shape;
    switch (n->op) {
    case NTP_OP_RELU:
    case NTP_OP_LEAKY_RELU:
    case NTP_OP_SIGMOID:
    case NTP_OP_TANH:
    case NTP_OP_GELU:
    case NTP_OP_SILU:
    case NTP_OP_HARDSWISH:
    case NTP_OP_CLIP:
    case NTP_OP_DROPOUT:
    case NTP_OP_RESHAPE:
    case NTP_OP_FLATTEN:
    case NTP_OP_MEMCPY:
    case NTP_OP_ADD:
    case NTP_OP_MUL:
        return true;
    case NTP_OP_SOFTMAX: {
        int64_t a = norm_axis(n->a.axis, x->ndim);
        return a >= 0 && a < x->ndim;
    }
    case NTP_OP_BATCHNORM:
        return x->ndim >= 2 && n->n_w == 4;
    default:
        return false;
    }
}

void ntp__blas_activate(const ntp_node *n, const float *x, float *y, int64_t count)
{
    const ntp_attrs *a = &n->a;
    switch (n->op) {
    case NTP_OP_RELU: {
        float hi = a->has_max ? (float)a->max : INFINITY;
        for (int64_t i = 0; i < count; i++) {
            float v = x[i] > 0.0f ? x[i] : isnan(x[i]) ? x[i] : 0.0f;
            y[i] = v > hi ? hi : v;
        }
        break;
    }
    case NTP_OP_LEAKY_RELU: {
        float alpha = (float)a->alpha;
        for (int64_t i = 0; i < count; i++)
            y[i] = x[i] >= 0.0f ? x[i] : alpha * x[i];
        break;
    }
    case NTP_OP_SIGMOID:
        for (int64_t i = 0; i < count; i++)
            y[i] = 1.0f / (1.0f + expf(-x[i]));
        break;
    case NTP_OP_TANH:
        for (int64_t i = 0; i < count; i++)
            y[i] = tanhf(x[i]);
        break;
    case NTP_OP_GELU:
        for (int64_t i = 0; i < count; i++)
            y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678f));
        break;
    case NTP_OP_SILU:
        for (int64_t i = 0; i < count; i++)
            y[i] = x[i] / (1.0f + expf(-x[i]));
        break;
    case NTP_OP_HARDSWISH:
        for (int64_t i = 0; i < count; i++) {
            float r = x[i] + 3.0f;
            r = r < 0.0f ? 0.0f : r > 6.0f ? 6.0f : r;
            y[i] = x[i] * r / 6.0f;
        }
        break;
    case NTP_OP_CLIP: {
        float lo = (float)a->min, hi = (float)a->max;
        for (int64_t i = 0; i < count; i++) {
            float v = x[i] < lo ? lo : x[i];
            y[i] = v > hi ? hi : v;
        }
        break;
    }
    default:
        /* dropout, reshape, flatten, memcpy: identities. */
        if (y != x)
            memcpy(y, x, (size_t)count * sizeof *y);
        break;
    }
}

void ntp__blas_softmax(float *x, int64_t len, int64_t stride)
{
    float m = -INFINITY;
    for (int64_t j = 0; j < len; j++)
        if (x[j * stride] > m || isnan(x[j * stride]))
            m = x[j * stride];
    if (isinf(m) && m < 0) {
        /* Every position masked: zeros rather than NaN. */
        for (int64_t j = 0; j < len; j++)
            x[j * stride] = 0.0f;
        return;
    }
    float sum = 0.0f;
    for (int64_t j = 0; j < len; j++) {
        float e = expf(x[j * stride] - m);
        x[j * stride] = e;
        sum += e;
    }
    float inv = 1.0f / sum;
    for (int64_t j = 0; j < len; j++)
        x[j * stride] *= inv;
}

/* y = x0 op x1 op ... with numpy broadcasting: each input walked with
 * per-dim strides that are 0 where it broadcasts. */
static void binary(const ntp_kargs *k)
{
    const ntp_shape *ys = &k->out[0].shape;
    int r = ys->ndim;
    int64_t strides[NTP_MAX_INPUTS][NTP_MAX_DIMS];
    for (int i = 0; i < k->n_in; i++) {
        const ntp_shape *s = &k->in[i].shape;
        int64_t stride = 1;
        for (int d = r - 1; d >= 0; d--) {
            int ds = d - (r - s->ndim);
            int64_t dim = ds >= 0 ? s->dim[ds] : 1;
            strides[i][d] = dim == 1 ? 0 : stride;
            stride *= dim;
        }
    }
    bool add = k->node->op == NTP_OP_ADD;
    float *y = k->out[0].data;
    int64_t n = ntp_shape_numel(ys), last = r > 0 ? ys->dim[r - 1] : 1;
    if (n == 0 || last == 0)
        return;
    int64_t idx[NTP_MAX_DIMS] = {0}, off[NTP_MAX_INPUTS] = {0};
    for (int64_t row = 0; row < n / last; row++) {
        float *yr = y + row * last;
        for (int i = 0; i < k->n_in; i++) {
            const float *xr = (const float *)k->in[i].data + off[i];
            int64_t s = r > 0 ? strides[i][r - 1] : 0;
            if (i == 0)
                for (int64_t j = 0; j < last; j++)
                    yr[j] = xr[j * s];
            else if (add)
                for (int64_t j = 0; j < last; j++)
                    yr[j] += xr[j * s];
            else
                for (int64_t j = 0; j < last; j++)
                    yr[j] *= xr[j * s];
        }
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
}

ntp_status ntp__blas_eltwise_prepare(ntp_ctx *ctx, const ntp_kargs *k, blasb_node *nd)
{
    nd->n_steps = 1;
    nd->main_step = 0;
    snprintf(nd->impl, sizeof nd->impl, "blas:loop");
    if (k->node->op == NTP_OP_ADD || k->node->op == NTP_OP_MUL) {
        const ntp_shape *ys = &k->out[0].shape;
        for (int i = 0; i < k->n_in; i++) {
            const ntp_shape *s = &k->in[i].shape;
            if (s->ndim > ys->ndim)
                return ntp__blas_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "input %d has a higher rank", i);
            for (int d = 0; d < s->ndim; d++) {
                int64_t o = ys->dim[d + ys->ndim - s->ndim];
                if (s->dim[d] != o && s->dim[d] != 1)
                    return ntp__blas_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                                           "input %d does not broadcast to the output", i);
            }
        }
        return NTP_STATUS_OK;
    }
    if (ntp_shape_numel(&k->in[0].shape) != ntp_shape_numel(&k->out[0].shape))
        return ntp__blas_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "input and output sizes differ");
    if (k->node->op != NTP_OP_BATCHNORM)
        return NTP_STATUS_OK;
    /* Batch normalisation folded once into y = x · mul[c] + add[c]. */
    int64_t C = k->in[0].shape.dim[1];
    for (int i = 0; i < 4; i++)
        if (k->n_w != 4 || ntp_shape_numel(&k->w[i].shape) != C)
            return ntp__blas_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "weight %d does not have %lld values",
                                   i, (long long)C);
    if (!(nd->own = malloc((size_t)(2 * C) * sizeof *nd->own + 1)))
        return ntp__blas_error(ctx, k, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    const float *scale = k->w[0].data, *bias = k->w[1].data, *mean = k->w[2].data, *var = k->w[3].data;
    for (int64_t c = 0; c < C; c++) {
        double m = (double)scale[c] / sqrt((double)var[c] + k->node->a.epsilon);
        nd->own[c] = (float)m;
        nd->own[C + c] = (float)((double)bias[c] - (double)mean[c] * m);
    }
    return NTP_STATUS_OK;
}

ntp_status ntp__blas_eltwise_run(ntp_ctx *ctx, const ntp_kargs *k, const blasb_node *nd)
{
    (void)ctx;
    const ntp_node *n = k->node;
    const ntp_shape *xs = &k->in[0].shape;
    const float *x = k->in[0].data;
    float *y = k->out[0].data;
    switch (n->op) {
    case NTP_OP_ADD:
    case NTP_OP_MUL:
        binary(k);
        break;
    case NTP_OP_SOFTMAX: {
        int64_t axis = norm_axis(n->a.axis, xs->ndim), len = xs->dim[axis], inner = 1;
        for (int d = (int)axis + 1; d < xs->ndim; d++)
            inner *= xs->dim[d];
        int64_t total = ntp_shape_numel(xs), outer = len * inner != 0 ? total / (len * inner) : 0;
        if (y != x)
            memcpy(y, x, (size_t)total * sizeof *y);
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++)
                ntp__blas_softmax(y + o * len * inner + i, len, inner);
        break;
    }
    case NTP_OP_BATCHNORM: {
        int64_t N = xs->dim[0], C = xs->dim[1], inner = ntp_shape_numel(xs) / (N * C);
        const float *mul = nd->own, *add = nd->own + C;
        for (int64_t b = 0; b < N; b++)
            for (int64_t c = 0; c < C; c++) {
                const float *xp = x + (b * C + c) * inner;
                float *yp = y + (b * C + c) * inner;
                for (int64_t i = 0; i < inner; i++)
                    yp[i] = xp[i] * mul[c] + add[c];
            }
        break;
    }
    default:
        ntp__blas_activate(n, x, y, ntp_shape_numel(xs));
        break;
    }
    ntp__blas_post_ops(k, nd);
    return NTP_STATUS_OK;
}

void ntp__blas_post_ops(const ntp_kargs *k, const blasb_node *nd)
{
    if (nd->n_post == 0)
        return;
    float *y = k->out[0].data;
    int64_t count = ntp_shape_numel(&k->out[0].shape);
    for (int f = 0; f < nd->n_post; f++) {
        const blasb_post *p = &nd->post[f];
        if (p->operand < 0) {
            ntp__blas_activate(p->node, y, y, count);
            continue;
        }
        /* A folded add or mul whose other operand has the result's shape
         * (fusable() checks it); both are commutative, so the order of the
         * operands does not matter. */
        const float *o = k->post_in[p->operand].data;
        if (p->node->op == NTP_OP_ADD)
            for (int64_t i = 0; i < count; i++)
                y[i] += o[i];
        else
            for (int64_t i = 0; i < count; i++)
                y[i] *= o[i];
    }
}
