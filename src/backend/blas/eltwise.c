/* The layers around the GEMMs on the BLAS backend: the unary element-wise
 * ops, softmax and add and mul with numpy broadcasting on the reference
 * backend's kernels (the same functions, in double rounded once to f32, so
 * the two backends agree exactly); batch normalisation folded to one
 * multiply-add per element; the identities (dropout, reshape, flatten,
 * memcpy); and the layers folded into a GEMM layer (--fuse). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ref/ref-impl.h"
#include "blas-impl.h"

static bool is_float(ntp_dtype t)
{
    return t == NTP_DTYPE_F32;
}

static int64_t norm_axis(int64_t axis, int ndim)
{
    return axis < 0 ? axis + ndim : axis;
}

static bool is_identity(ntp_op op)
{
    return op == NTP_OP_DROPOUT || op == NTP_OP_RESHAPE || op == NTP_OP_FLATTEN ||
           op == NTP_OP_MEMCPY;
}

bool ntp__blas_eltwise_supports(const ntp_graph *g, const ntp_node *n)
{
    for (int i = 0; i < n->n_in; i++)
        if (!is_float(ntp__cin(g, n, i)->dtype))
            return false;
    const ntp_shape *x = &ntp__cin(g, n, 0)->shape;
    /* Every unary element-wise op: the reference kernel covers the family. */
    if (ntp__op_is_unary(n->op) || is_identity(n->op) || n->op == NTP_OP_ADD || n->op == NTP_OP_MUL)
        return true;
    if (n->op == NTP_OP_SOFTMAX) {
        int64_t a = norm_axis(n->a.axis, x->ndim);
        return a >= 0 && a < x->ndim;
    }
    if (n->op == NTP_OP_BATCHNORM)
        return x->ndim >= 2 && n->n_w == 4;
    return false;
}

void ntp__blas_activate(const ntp_node *n, const float *x, float *y, int64_t count)
{
    /* dropout, reshape, flatten, memcpy: identities. */
    if (!ntp__ref_unary(n->op, &n->a, x, y, count) && y != x)
        memcpy(y, x, (size_t)count * sizeof *y);
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
                return ntp__blas_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "input %d has a higher rank",
                                       i);
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
            return ntp__blas_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                                   "weight %d does not have %lld values", i, (long long)C);
    if (!(nd->own = malloc((size_t)(2 * C) * sizeof *nd->own + 1)))
        return ntp__blas_error(ctx, k, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    const float *scale = k->w[0].data, *bias = k->w[1].data, *mean = k->w[2].data,
                *var = k->w[3].data;
    for (int64_t c = 0; c < C; c++) {
        double m = (double)scale[c] / sqrt((double)var[c] + k->node->a.epsilon);
        nd->own[c] = (float)m;
        nd->own[C + c] = (float)((double)bias[c] - (double)mean[c] * m);
    }
    return NTP_STATUS_OK;
}

ntp_status ntp__blas_eltwise_run(ntp_ctx *ctx, const ntp_kargs *k, const blasb_node *nd)
{
    const ntp_node *n = k->node;
    const ntp_shape *xs = &k->in[0].shape;
    const float *x = k->in[0].data;
    float *y = k->out[0].data;
    if (n->op == NTP_OP_BATCHNORM) {
        int64_t N = xs->dim[0], C = xs->dim[1], inner = ntp_shape_numel(xs) / (N * C);
        const float *mul = nd->own, *add = nd->own + C;
        for (int64_t b = 0; b < N; b++)
            for (int64_t c = 0; c < C; c++) {
                const float *xp = x + (b * C + c) * inner;
                float *yp = y + (b * C + c) * inner;
                for (int64_t i = 0; i < inner; i++)
                    yp[i] = xp[i] * mul[c] + add[c];
            }
    } else if (is_identity(n->op)) {
        if (y != x)
            memcpy(y, x, (size_t)ntp_shape_numel(xs) * sizeof *y);
    } else {
        /* The unary ops, softmax, add and mul: the reference kernels. */
        ntp_status st = ntp__ref_eltwise(ctx, k);
        if (st)
            return st;
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
