/* Element-wise layers, softmax, batch normalisation, padding and copies on
 * XNNPACK, and the ONNX ops this snapshot has operators for (abs, neg, sqrt,
 * floor, ceil, round, elu, prelu, sub, div, max, min; f32 only).
 *
 * Element-wise layers compute in whatever layout their input arrives in, so
 * a chain conv -> batchnorm -> relu -> add stays NHWC throughout. add and
 * mul use XNNPACK's N-d operators with numpy broadcasting (up to 6 dims): in
 * NHWC when an operand arrives NHWC and every other operand either has the
 * output's rank (converted to NHWC if needed) or is constant over the
 * spatial dims (a [N, C, 1, 1] gate, whose bytes are the same in both
 * layouts); otherwise in plain layout. More than two inputs are folded in
 * order, the running result read and written in place.
 *
 * Batch normalisation has no XNNPACK operator; it runs as a 1x1 depthwise
 * convolution with weight scale/sqrt(var + eps) and bias
 * bias - mean * scale/sqrt(var + eps), for which XNNPACK selects its
 * per-channel multiply-add kernel (vmulcaddc): one pass over the data. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/numeric-impl.h"
#include "xnnpack-impl.h"

static bool is_float(ntp_dtype t)
{
    return t == NTP_DTYPE_F32 || t == NTP_DTYPE_F16 || t == NTP_DTYPE_BF16;
}

static int64_t norm_axis(int64_t axis, int ndim)
{
    return axis < 0 ? axis + ndim : axis;
}

/* The broadcast shape of a and b, numpy-style; false if they do not
 * broadcast. */
static bool broadcast(const ntp_shape *a, const ntp_shape *b, ntp_shape *out)
{
    int r = a->ndim > b->ndim ? a->ndim : b->ndim;
    out->ndim = r;
    for (int d = 0; d < r; d++) {
        int da = d - (r - a->ndim), db = d - (r - b->ndim);
        int64_t x = da >= 0 ? a->dim[da] : 1, y = db >= 0 ? b->dim[db] : 1;
        if (x != y && x != 1 && y != 1)
            return false;
        out->dim[d] = x == 1 ? y : x;
    }
    return true;
}

/* The channel count of a prelu whose slope is one value or one per channel
 * (dim 1 of the input, the only dim of a vector): XNNPACK's prelu takes a
 * slope per channel of channels-last data. 0 for any other slope shape. */
static int64_t prelu_channels(const ntp_graph *g, const ntp_node *n)
{
    const ntp_shape *x = &ntp__cin(g, n, 0)->shape, *w = &g->tensors[n->w[0]].shape;
    if (x->ndim < 1 || x->ndim > 4 || w->ndim > x->ndim)
        return 0;
    int cdim = x->ndim >= 2 ? 1 : 0;
    int64_t C = x->dim[cdim];
    if (ntp_shape_numel(w) == 1)
        return C;
    for (int d = 0; d < w->ndim; d++) {
        int xd = d + (x->ndim - w->ndim);
        if (w->dim[d] != (xd == cdim ? C : 1))
            return 0;
    }
    return x->ndim - w->ndim <= cdim ? C : 0;
}

/* The unary element-wise ops (op-table.h's NTP_UNARY_TABLE) that are one
 * XNNPACK operator without parameters: one line per op. f16 NULL: f32 only.
 * relu, clip, leaky_relu and elu take parameters (below); an op mapped
 * nowhere stays on the reference backend. */
typedef enum xnn_status (*create_nc)(size_t channels, size_t in_stride, size_t out_stride,
                                     uint32_t flags, xnn_operator_t *op);
static const struct unary_op {
    create_nc f32, f16; /* f32 NULL: not mapped */
    xnnb_fn fn;
    const char *name;
} unary_ops[NTP_OP_COUNT] = {
    [NTP_OP_SIGMOID] = {xnn_create_sigmoid_nc_f32, NULL, XNNB_FN_SIGMOID, "sigmoid_nc"},
    [NTP_OP_HARDSWISH] = {xnn_create_hardswish_nc_f32, xnn_create_hardswish_nc_f16,
                          XNNB_FN_HARDSWISH, "hardswish_nc"},
    [NTP_OP_ABS] = {xnn_create_abs_nc_f32, NULL, XNNB_FN_ABS, "abs_nc"},
    [NTP_OP_NEG] = {xnn_create_negate_nc_f32, NULL, XNNB_FN_NEG, "negate_nc"},
    [NTP_OP_SQRT] = {xnn_create_square_root_nc_f32, NULL, XNNB_FN_SQRT, "square_root_nc"},
    [NTP_OP_FLOOR] = {xnn_create_floor_nc_f32, NULL, XNNB_FN_FLOOR, "floor_nc"},
    [NTP_OP_CEIL] = {xnn_create_ceiling_nc_f32, NULL, XNNB_FN_CEIL, "ceiling_nc"},
    /* ONNX rounds halves to even: XNNPACK's bankers' rounding. */
    [NTP_OP_ROUND] = {xnn_create_bankers_rounding_nc_f32, NULL, XNNB_FN_ROUND,
                      "bankers_rounding_nc"},
};

/* How the ops that are not a plain mapping above run; ELT_NONE for the
 * ops this family does not run (and the mapped ones). */
typedef enum elt_kind {
    ELT_NONE,
    ELT_CLAMP, /* relu, clip */
    ELT_COPY,  /* dropout (identity at inference), memcpy, reshape, flatten */
    ELT_LEAKY_RELU,
    ELT_ELU,
    ELT_SOFTMAX,
    ELT_BATCHNORM,
    ELT_PAD,
    ELT_PRELU,
    ELT_BINARY_F32, /* sub, div, max, min: f32 only */
    ELT_BINARY      /* add, mul */
} elt_kind;

static const elt_kind elt_kinds[NTP_OP_COUNT] = {
    [NTP_OP_RELU] = ELT_CLAMP,
    [NTP_OP_CLIP] = ELT_CLAMP,
    [NTP_OP_DROPOUT] = ELT_COPY,
    [NTP_OP_MEMCPY] = ELT_COPY,
    [NTP_OP_RESHAPE] = ELT_COPY,
    [NTP_OP_FLATTEN] = ELT_COPY,
    [NTP_OP_LEAKY_RELU] = ELT_LEAKY_RELU,
    [NTP_OP_ELU] = ELT_ELU,
    [NTP_OP_SOFTMAX] = ELT_SOFTMAX,
    [NTP_OP_BATCHNORM] = ELT_BATCHNORM,
    [NTP_OP_PAD] = ELT_PAD,
    [NTP_OP_PRELU] = ELT_PRELU,
    [NTP_OP_SUB] = ELT_BINARY_F32,
    [NTP_OP_DIV] = ELT_BINARY_F32,
    [NTP_OP_MAX] = ELT_BINARY_F32,
    [NTP_OP_MIN] = ELT_BINARY_F32,
    [NTP_OP_ADD] = ELT_BINARY,
    [NTP_OP_MUL] = ELT_BINARY,
};

static elt_kind kind_of(ntp_op op)
{
    return (unsigned)op < NTP_OP_COUNT ? elt_kinds[op] : ELT_NONE;
}

bool ntp__xnn_eltwise_supports(const ntp_graph *g, const ntp_node *n, bool f16)
{
    const ntp_tensor *x = ntp__cin(g, n, 0), *y = ntp__cout(g, n, 0);
    if (!is_float(x->dtype) || n->n_out != 1)
        return false;
    if (unary_ops[n->op].f32)
        return !f16 || unary_ops[n->op].f16;
    switch (kind_of(n->op)) {
    case ELT_CLAMP:
    case ELT_COPY: return true;
    case ELT_LEAKY_RELU: return isfinite(n->a.leaky_relu.slope);
    case ELT_SOFTMAX:
        return !f16 && x->shape.ndim >= 1 &&
               norm_axis(n->a.axis, x->shape.ndim) == x->shape.ndim - 1;
    case ELT_BATCHNORM: return x->shape.ndim >= 2 && x->shape.ndim <= 4 && n->n_w == 4;
    case ELT_PAD:
        return n->a.pad_mode == NTP_PADMODE_CONSTANT && x->shape.ndim >= 1 &&
               x->shape.ndim <= XNN_MAX_TENSOR_DIMS;
    case ELT_ELU: return !f16 && isfinite(n->a.elu.alpha);
    case ELT_PRELU: return !f16 && n->n_w == 1 && prelu_channels(g, n) > 0;
    case ELT_BINARY_F32:
        if (f16)
            return false;
        /* fall through */
    case ELT_BINARY: {
        if (y->shape.ndim > XNN_MAX_TENSOR_DIMS || n->n_in < 2)
            return false;
        for (int i = 0; i < n->n_in; i++) {
            const ntp_shape *s = &ntp__cin(g, n, i)->shape;
            if (s->ndim > XNN_MAX_TENSOR_DIMS || !is_float(ntp__cin(g, n, i)->dtype) ||
                ntp_shape_numel(s) == 0)
                return false;
        }
        /* The running result must have the output's shape from the first
         * operator on, so that the later ones can work in place. */
        ntp_shape s01;
        return broadcast(&ntp__cin(g, n, 0)->shape, &ntp__cin(g, n, 1)->shape, &s01) &&
               (n->n_in == 2 || ntp_shape_equal(&s01, &y->shape));
    }
    case ELT_NONE: return false;
    }
    return false;
}

/* An element-wise unary operator over the whole tensor, in the layout its
 * input arrives in. */
static ntp_status unary(xnnb_build *b)
{
    ntp_kargs *k = b->k;
    const ntp_attrs *a = &b->n->a;
    size_t n = (size_t)ntp_shape_numel(&k->in[0].shape);
    uint32_t fl = ntp__xnn_flags(b);
    xnn_operator_t op = NULL;
    enum xnn_status xs = xnn_status_unsupported_parameter;
    xnnb_fn fn = XNNB_FN_COPY; /* every kind below sets both */
    const char *name = "";
    bool plain = b->n->op == NTP_OP_RESHAPE || b->n->op == NTP_OP_FLATTEN;
    const struct unary_op *u = &unary_ops[b->n->op];
    if (u->f32) {
        /* A mapped op without parameters. */
        fn = u->fn;
        name = u->name;
        xs = b->f16 && u->f16 ? u->f16(n, n, n, fl, &op) : u->f32(n, n, n, fl, &op);
    } else
        switch (kind_of(b->n->op)) {
        case ELT_CLAMP: {
            float lo = b->n->op == NTP_OP_RELU ? 0.0f : (float)a->min;
            float hi =
                b->n->op == NTP_OP_RELU ? (a->has_max ? (float)a->max : INFINITY) : (float)a->max;
            /* A fused clip or relu after this one narrows the range further. */
            lo = lo > b->out_min ? lo : b->out_min;
            hi = hi < b->out_max ? hi : b->out_max;
            if (lo > hi)
                lo = hi;
            fn = XNNB_FN_CLAMP;
            name = "clamp_nc";
            xs = b->f16 ? xnn_create_clamp_nc_f16(n, n, n, lo, hi, fl, &op)
                        : xnn_create_clamp_nc_f32(n, n, n, lo, hi, fl, &op);
            break;
        }
        case ELT_LEAKY_RELU:
            fn = XNNB_FN_LEAKY_RELU;
            name = "leaky_relu_nc";
            xs = b->f16
                     ? xnn_create_leaky_relu_nc_f16(n, n, n, (float)a->leaky_relu.slope, fl, &op)
                     : xnn_create_leaky_relu_nc_f32(n, n, n, (float)a->leaky_relu.slope, fl, &op);
            break;
        case ELT_ELU:
            fn = XNNB_FN_ELU;
            name = "elu_nc";
            xs = xnn_create_elu_nc_f32(n, n, n, (float)a->elu.alpha, fl, &op);
            break;
        case ELT_COPY:
        case ELT_NONE:
        case ELT_SOFTMAX:
        case ELT_BATCHNORM:
        case ELT_PAD:
        case ELT_PRELU:
        case ELT_BINARY_F32:
        case ELT_BINARY:
            /* dropout (identity at inference), memcpy, reshape, flatten;
             * the others have builders of their own. */
            fn = XNNB_FN_COPY;
            name = b->f16 ? "copy_nc_x16" : "copy_nc_x32";
            xs = b->f16 ? xnn_create_copy_nc_x16(n, n, n, fl, &op)
                        : xnn_create_copy_nc_x32(n, n, n, fl, &op);
            break;
        }
    ntp_status st = ntp__xnn_check(b, xs, "creating the operator");
    xnnb_call *c;
    if (st || (st = ntp__xnn_call(b, op, fn, &c)))
        return st;
    c->batch = 1;
    int fmt;
    /* A reshape sees the tensor in its logical (plain) order. */
    if ((st = ntp__xnn_input(b, 0, plain ? XNNB_PLAIN : XNNB_ANY, &c->x, &fmt)) ||
        (st = ntp__xnn_output(b, 0, fmt, &c->y)))
        return st;
    if (fn == XNNB_FN_COPY)
        snprintf(b->nd->impl, sizeof b->nd->impl, "xnnpack:%s", name);
    else
        snprintf(b->nd->impl, sizeof b->nd->impl, "xnnpack:%s_%s", name, b->f16 ? "f16" : "f32");
    return NTP_STATUS_OK;
}

static ntp_status softmax(xnnb_build *b)
{
    ntp_kargs *k = b->k;
    const ntp_shape *x = &k->in[0].shape;
    size_t len = (size_t)x->dim[x->ndim - 1];
    size_t rows = len ? (size_t)ntp_shape_numel(x) / len : 0;
    xnn_operator_t op = NULL;
    ntp_status st = ntp__xnn_check(
        b, xnn_create_softmax_nc_f32(len, len, len, ntp__xnn_flags(b), &op), "creating softmax");
    xnnb_call *c;
    if (st || (st = ntp__xnn_call(b, op, XNNB_FN_SOFTMAX, &c)))
        return st;
    c->batch = rows;
    if ((st = ntp__xnn_input(b, 0, XNNB_PLAIN, &c->x, NULL)) ||
        (st = ntp__xnn_output(b, 0, XNNB_PLAIN, &c->y)))
        return st;
    snprintf(b->nd->impl, sizeof b->nd->impl, "xnnpack:softmax_nc_f32");
    return NTP_STATUS_OK;
}

/* Shape s (rank <= r) right-aligned to rank r, then permuted to NHWC order
 * when nhwc: [n, c, s...] -> [n, s..., c]. */
static void xnn_shape(const ntp_shape *s, int r, bool nhwc, size_t *out)
{
    size_t full[NTP_MAX_DIMS] = {0};
    for (int d = 0; d < r; d++) {
        int ds = d - (r - s->ndim);
        full[d] = ds >= 0 ? (size_t)s->dim[ds] : 1;
    }
    if (!nhwc) {
        memcpy(out, full, (size_t)r * sizeof *out);
        return;
    }
    out[0] = full[0];
    for (int d = 2; d < r; d++)
        out[d - 1] = full[d];
    out[r - 1] = full[1];
}

/* Is operand s (right-aligned to rank r) constant over the spatial dims,
 * so that its bytes read the same in NCHW and NHWC? */
static bool spatially_constant(const ntp_shape *s, int r)
{
    for (int d = 2; d < r; d++) {
        int ds = d - (r - s->ndim);
        if (ds >= 0 && s->dim[ds] != 1)
            return false;
    }
    /* Dim 1 may be C; nothing else of the operand may vary. */
    return true;
}

static ntp_status binary(xnnb_build *b)
{
    ntp_kargs *k = b->k;
    const ntp_shape *ys = &k->out[0].shape;
    int r = ys->ndim;
    bool any_nhwc = false, nhwc = ntp__xnn_spatial(ys);
    for (int i = 0; i < k->n_in; i++)
        any_nhwc |= ntp__xnn_in_fmt(b, i) == XNNB_NHWC;
    for (int i = 0; i < k->n_in && any_nhwc && nhwc; i++) {
        const ntp_shape *s = &k->in[i].shape;
        if (s->ndim != r && !spatially_constant(s, r))
            nhwc = false;
    }
    nhwc = nhwc && any_nhwc;
    xnnb_buf in[NTP_MAX_INPUTS];
    ntp_status st;
    for (int i = 0; i < k->n_in; i++) {
        int want = !nhwc ? XNNB_PLAIN : k->in[i].shape.ndim == r ? XNNB_NHWC : XNNB_ANY;
        if ((st = ntp__xnn_input(b, i, want, &in[i], NULL)))
            return st;
    }
    xnnb_buf y;
    if ((st = ntp__xnn_output(b, 0, nhwc ? XNNB_NHWC : XNNB_PLAIN, &y)))
        return st;
    ntp_op kind = b->n->op;
    const char *name = kind == NTP_OP_ADD   ? "add"
                       : kind == NTP_OP_MUL ? "multiply"
                       : kind == NTP_OP_SUB ? "subtract"
                       : kind == NTP_OP_DIV ? "divide"
                       : kind == NTP_OP_MAX ? "maximum"
                                            : "minimum";
    xnnb_fn fn = kind == NTP_OP_ADD   ? XNNB_FN_ADD
                 : kind == NTP_OP_MUL ? XNNB_FN_MUL
                 : kind == NTP_OP_SUB ? XNNB_FN_SUB
                 : kind == NTP_OP_DIV ? XNNB_FN_DIV
                 : kind == NTP_OP_MAX ? XNNB_FN_MAX
                                      : XNNB_FN_MIN;
    for (int i = 1; i < k->n_in; i++) {
        /* Only the last operator applies a fused activation's range. */
        bool last = i == k->n_in - 1;
        float lo = last ? b->out_min : -INFINITY, hi = last ? b->out_max : INFINITY;
        uint32_t fl = ntp__xnn_flags(b);
        xnn_operator_t op = NULL;
        enum xnn_status xs;
        switch (fn) {
        case XNNB_FN_ADD:
            xs = b->f16 ? xnn_create_add_nd_f16(lo, hi, fl, &op)
                        : xnn_create_add_nd_f32(lo, hi, fl, &op);
            break;
        case XNNB_FN_MUL:
            xs = b->f16 ? xnn_create_multiply_nd_f16(lo, hi, fl, &op)
                        : xnn_create_multiply_nd_f32(lo, hi, fl, &op);
            break;
        case XNNB_FN_SUB: xs = xnn_create_subtract_nd_f32(lo, hi, fl, &op); break;
        case XNNB_FN_DIV: xs = xnn_create_divide_nd_f32(lo, hi, fl, &op); break;
        case XNNB_FN_MAX: xs = xnn_create_maximum_nd_f32(fl, &op); break;
        case XNNB_FN_MIN: xs = xnn_create_minimum_nd_f32(fl, &op); break;
        case XNNB_FN_CONV:
        case XNNB_FN_DECONV:
        case XNNB_FN_FC:
        case XNNB_FN_MAXPOOL:
        case XNNB_FN_AVGPOOL:
        case XNNB_FN_GAP_NWC:
        case XNNB_FN_GAP_NCW:
        case XNNB_FN_CLAMP:
        case XNNB_FN_LEAKY_RELU:
        case XNNB_FN_SIGMOID:
        case XNNB_FN_HARDSWISH:
        case XNNB_FN_SOFTMAX:
        case XNNB_FN_COPY:
        case XNNB_FN_PAD:
        case XNNB_FN_ABS:
        case XNNB_FN_NEG:
        case XNNB_FN_SQRT:
        case XNNB_FN_FLOOR:
        case XNNB_FN_CEIL:
        case XNNB_FN_ROUND:
        case XNNB_FN_ELU:
        case XNNB_FN_PRELU:
            /* fn is one of the binary ones above. */
            xs = xnn_status_invalid_parameter;
            break;
        }
        char what[48];
        snprintf(what, sizeof what, "creating %s", name);
        xnnb_call *c;
        if ((st = ntp__xnn_check(b, xs, what)) || (st = ntp__xnn_call(b, op, fn, &c)))
            return st;
        const ntp_shape *first = i == 1 ? &k->in[0].shape : ys;
        int r0 = nhwc ? r : first->ndim, r1 = nhwc ? r : k->in[i].shape.ndim;
        c->nd_x = (size_t)r0;
        c->nd_x2 = (size_t)r1;
        xnn_shape(first, r0, nhwc, c->shape_x);
        xnn_shape(&k->in[i].shape, r1, nhwc, c->shape_x2);
        c->x = i == 1 ? in[0] : y;
        c->x2 = in[i];
        c->y = y;
    }
    snprintf(b->nd->impl, sizeof b->nd->impl, "xnnpack:%s_nd_%s%s", name, b->f16 ? "f16" : "f32",
             k->n_in > 2 ? " (chained)" : "");
    return NTP_STATUS_OK;
}

static ntp_status batchnorm(xnnb_build *b)
{
    ntp_kargs *k = b->k;
    const ntp_shape *x = &k->in[0].shape;
    int64_t N = x->dim[0], C = x->dim[1];
    int64_t H = x->ndim == 4 ? x->dim[2] : 1, W = x->ndim >= 3 ? x->dim[x->ndim - 1] : 1;
    float *bw[4] = {NULL, NULL, NULL, NULL}, *f = malloc((size_t)(2 * C) * sizeof *f + 1);
    void *mul = NULL, *add = NULL;
    ntp_status st = f ? NTP_STATUS_OK : ntp__xnn_fail(b, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < 4 && !st; i++) {
        if (k->n_w != 4 || ntp_shape_numel(&k->w[i].shape) != C)
            st = ntp__xnn_fail(b, NTP_STATUS_SHAPE_ERROR, "weight %d does not have %lld values", i,
                               (long long)C);
        else
            st = ntp__xnn_weight_f32(b, i, &bw[i]);
    }
    if (!st) {
        ntp__xnn_bn_factors(b->n, (const float *const *)bw, C, f, f + C);
        if (!(st = ntp__xnn_store(b, f, C, &mul)))
            st = ntp__xnn_store(b, f + C, C, &add);
    }
    xnn_operator_t op = NULL;
    if (!st) {
        uint32_t fl = ntp__xnn_flags(b);
        enum xnn_status xs =
            b->f16 ? xnn_create_convolution2d_nhwc_f16(0, 0, 0, 0, 1, 1, 1, 1, 1, 1, (uint32_t)C, 1,
                                                       1, (size_t)C, (size_t)C, mul, add,
                                                       b->out_min, b->out_max, fl, &op)
                   : xnn_create_convolution2d_nhwc_f32(0, 0, 0, 0, 1, 1, 1, 1, 1, 1, (uint32_t)C, 1,
                                                       1, (size_t)C, (size_t)C, mul, add,
                                                       b->out_min, b->out_max, fl, &op);
        st = ntp__xnn_check(b, xs, "creating the per-channel multiply-add");
    }
    for (int i = 0; i < 4; i++)
        free(bw[i]);
    free(f);
    free(mul);
    free(add);
    xnnb_call *c;
    if (st || (st = ntp__xnn_call(b, op, XNNB_FN_CONV, &c)))
        return st;
    c->batch = (size_t)N;
    c->height = (size_t)H;
    c->width = (size_t)W;
    if ((st = ntp__xnn_input(b, 0, XNNB_NHWC, &c->x, NULL)) ||
        (st = ntp__xnn_output(b, 0, XNNB_NHWC, &c->y)))
        return st;
    snprintf(b->nd->impl, sizeof b->nd->impl, "xnnpack:vmulcaddc_%s (1x1 depthwise)",
             b->f16 ? "f16" : "f32");
    return NTP_STATUS_OK;
}

static ntp_status pad(xnnb_build *b)
{
    ntp_kargs *k = b->k;
    const ntp_attrs *a = &b->n->a;
    const ntp_shape *x = &k->in[0].shape;
    int r = x->ndim;
    xnn_operator_t op = NULL;
    enum xnn_status xs;
    uint32_t fl = ntp__xnn_flags(b);
    if (b->f16) {
        uint16_t v = ntp__f32_to_f16((float)a->value);
        xs = xnn_create_constant_pad_nd_x16(&v, fl, &op);
    } else {
        float v = (float)a->value;
        xs = xnn_create_constant_pad_nd_x32(&v, fl, &op);
    }
    ntp_status st = ntp__xnn_check(b, xs, "creating constant padding");
    xnnb_call *c;
    if (st || (st = ntp__xnn_call(b, op, XNNB_FN_PAD, &c)))
        return st;
    int fmt;
    if ((st = ntp__xnn_input(b, 0, XNNB_ANY, &c->x, &fmt)))
        return st;
    bool nhwc = fmt == XNNB_NHWC;
    c->nd_x = (size_t)r;
    xnn_shape(x, r, nhwc, c->shape_x);
    ntp_shape pre = {.ndim = r}, post = {.ndim = r};
    for (int d = 0; d < r; d++) {
        pre.dim[d] = a->pads[d];
        post.dim[d] = a->pads[r + d];
    }
    xnn_shape(&pre, r, nhwc, c->pre);
    xnn_shape(&post, r, nhwc, c->post);
    if ((st = ntp__xnn_output(b, 0, nhwc ? XNNB_NHWC : XNNB_PLAIN, &c->y)))
        return st;
    snprintf(b->nd->impl, sizeof b->nd->impl, "xnnpack:constant_pad_nd_%s", b->f16 ? "x16" : "x32");
    return NTP_STATUS_OK;
}

/* prelu on channels-last data: NHWC for rank 3 and 4, [N, C] as it is. */
static ntp_status prelu(xnnb_build *b)
{
    ntp_kargs *k = b->k;
    int64_t C = k->g ? prelu_channels(k->g, b->n) : 0;
    int64_t total = ntp_shape_numel(&k->in[0].shape);
    if (C <= 0 || total % C)
        return ntp__xnn_fail(b, NTP_STATUS_SHAPE_ERROR, "slope is neither shared nor per channel");
    float *w = NULL, *slope = malloc((size_t)C * sizeof *slope + XNN_EXTRA_BYTES);
    ntp_status st = slope ? ntp__xnn_weight_f32(b, 0, &w)
                          : ntp__xnn_fail(b, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    xnn_operator_t op = NULL;
    if (!st) {
        bool shared = ntp_shape_numel(&k->w[0].shape) == 1;
        for (int64_t c = 0; c < C; c++)
            slope[c] = shared ? w[0] : w[c];
        st = ntp__xnn_check(
            b,
            xnn_create_prelu_nc_f32((size_t)C, (size_t)C, (size_t)C, slope, ntp__xnn_flags(b), &op),
            "creating prelu");
    }
    free(w);
    free(slope);
    xnnb_call *c;
    if (st || (st = ntp__xnn_call(b, op, XNNB_FN_PRELU, &c)))
        return st;
    c->batch = (size_t)(total / C);
    /* A rank-1 input is one row of C channels. */
    if (k->in[0].shape.ndim == 1)
        c->batch = 1;
    if ((st = ntp__xnn_input(b, 0, XNNB_NHWC, &c->x, NULL)) ||
        (st = ntp__xnn_output(b, 0, XNNB_NHWC, &c->y)))
        return st;
    snprintf(b->nd->impl, sizeof b->nd->impl, "xnnpack:prelu_nc_f32");
    return NTP_STATUS_OK;
}

ntp_status ntp__xnn_eltwise_build(xnnb_build *b)
{
    switch (kind_of(b->n->op)) {
    case ELT_PRELU: return prelu(b);
    case ELT_BINARY_F32:
    case ELT_BINARY: return binary(b);
    case ELT_SOFTMAX: return softmax(b);
    case ELT_BATCHNORM: return batchnorm(b);
    case ELT_PAD: return pad(b);
    case ELT_NONE: /* the mapped unary ops */
    case ELT_CLAMP:
    case ELT_COPY:
    case ELT_LEAKY_RELU:
    case ELT_ELU: break;
    }
    return unary(b);
}
