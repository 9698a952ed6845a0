/* Shapes of data-movement layers: concat, split, reshape, flatten,
 * transpose, pad, convert. Their cost is bytes, not FLOPs. */
#include <string.h>

#include "op-common.h"

ntp_status ntp__shape_concat(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    ntp_shape out = ntp__in(g, n, 0)->shape;
    int64_t axis;
    if (!norm_axis(n->a.axis, out.ndim, &axis))
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "axis %lld is out of range for rank %d",
                        (long long)n->a.axis, out.ndim);
    n->a.axis = axis;
    for (int i = 1; i < n->n_in; i++) {
        const ntp_shape *s = &ntp__in(g, n, i)->shape;
        bool ok = s->ndim == out.ndim;
        for (int d = 0; ok && d < s->ndim; d++)
            ok = d == axis || s->dim[d] == out.dim[d];
        if (!ok) {
            char b1[NTP_SHAPE_STR_MAX], b2[NTP_SHAPE_STR_MAX];
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                            "input '%s' %s does not match input '%s' %s outside axis %lld",
                            ntp__in(g, n, i)->name, shp(s, b1), ntp__in(g, n, 0)->name,
                            shp(&ntp__in(g, n, 0)->shape, b2), (long long)axis);
        }
        if (!ntp__add_ok(out.dim[axis], s->dim[axis], &out.dim[axis]))
            return NODE_ERR(NTP_STATUS_OVERFLOW, "concatenated size overflows");
    }
    set_out(g, n, 0, &out);
    return NTP_STATUS_OK;
}

ntp_status ntp__shape_split(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    const ntp_shape *s = &ntp__in(g, n, 0)->shape;
    char b[NTP_SHAPE_STR_MAX];
    int64_t axis;
    if (!norm_axis(n->a.axis, s->ndim, &axis))
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "axis %lld is out of range for rank %d",
                        (long long)n->a.axis, s->ndim);
    n->a.axis = axis;
    int64_t dim = s->dim[axis];
    if (n->a.n_sizes < 0) {
        /* parts="k": equal parts (the reader stores -k). */
        int64_t parts = -n->a.n_sizes;
        if (dim % parts != 0)
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                            "dim %lld of input %s (axis %lld) does not split into %lld equal parts",
                            (long long)dim, shp(s, b), (long long)axis, (long long)parts);
        n->a.n_sizes = (int)parts;
        for (int i = 0; i < n->a.n_sizes; i++)
            n->a.sizes[i] = dim / parts;
    }
    if (n->a.n_sizes != n->n_out)
        return NODE_ERR(NTP_STATUS_INTERNAL, "%d sizes for %d outputs", n->a.n_sizes, n->n_out);
    int64_t sum = 0;
    for (int i = 0; i < n->a.n_sizes; i++) {
        if (n->a.sizes[i] <= 0)
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "split sizes must be positive, got %lld",
                            (long long)n->a.sizes[i]);
        if (!ck_add(sum, n->a.sizes[i], &sum))
            return NODE_ERR(NTP_STATUS_OVERFLOW, "split sizes overflow 64-bit sizes");
    }
    if (sum != dim)
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                        "split sizes add up to %lld but dim %lld of input %s is %lld",
                        (long long)sum, (long long)axis, shp(s, b), (long long)dim);
    for (int i = 0; i < n->n_out; i++) {
        ntp_shape o = *s;
        o.dim[axis] = n->a.sizes[i];
        set_out(g, n, i, &o);
    }
    return NTP_STATUS_OK;
}

ntp_status ntp__shape_reshape(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    const ntp_shape *s = &ntp__in(g, n, 0)->shape;
    char b1[NTP_SHAPE_STR_MAX], b2[NTP_SHAPE_STR_MAX];
    ntp_shape out = {n->a.n_shape, {0}};
    if (n->a.n_shape <= 0)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT, "needs a non-empty 'shape'");
    int infer = -1;
    int64_t known = 1;
    for (int d = 0; d < out.ndim; d++) {
        int64_t v = n->a.shape[d];
        if (v == 0) {
            if (d >= s->ndim)
                return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                                "shape entry %d is 0 (copy) but input %s has no dim %d", d,
                                shp(s, b1), d);
            v = s->dim[d];
        } else if (v == -1) {
            if (infer >= 0)
                return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "'shape' has more than one -1");
            infer = d;
            continue;
        } else if (v < -1) {
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "shape entry %d is %lld", d, (long long)v);
        }
        out.dim[d] = v;
        if (!ntp__mul_ok(known, v, &known))
            return NODE_ERR(NTP_STATUS_OVERFLOW, "'shape' overflows");
    }
    int64_t total = numel(s);
    if (infer >= 0) {
        if (known == 0 || total % known != 0) {
            out.dim[infer] = 1;
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                            "cannot reshape input %s (%lld elements) to %s with -1 inferred",
                            shp(s, b1), (long long)total, shp(&out, b2));
        }
        out.dim[infer] = total / known;
    } else if (known != total) {
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                        "cannot reshape input %s (%lld elements) to %s (%lld elements)", shp(s, b1),
                        (long long)total, shp(&out, b2), (long long)known);
    }
    for (int d = 0; d < out.ndim; d++)
        n->a.shape[d] = out.dim[d];
    set_out(g, n, 0, &out);
    ntp__out(g, n, 0)->layout = NTP_LAYOUT_ANY;
    return NTP_STATUS_OK;
}

ntp_status ntp__shape_flatten(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    const ntp_shape *s = &ntp__in(g, n, 0)->shape;
    int64_t axis = n->a.axis;
    if (axis < 0)
        axis += s->ndim;
    if (axis < 0 || axis > s->ndim)
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "axis %lld is out of range for rank %d",
                        (long long)n->a.axis, s->ndim);
    n->a.axis = axis;
    ntp_shape out = shape2(1, 1);
    for (int d = 0; d < s->ndim; d++)
        out.dim[d < axis ? 0 : 1] *= s->dim[d];
    set_out(g, n, 0, &out);
    ntp__out(g, n, 0)->layout = NTP_LAYOUT_ANY;
    return NTP_STATUS_OK;
}

ntp_status ntp__shape_transpose(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    const ntp_shape *s = &ntp__in(g, n, 0)->shape;
    ntp_attrs *a = &n->a;
    if (a->n_perm == 0) {
        a->n_perm = s->ndim;
        for (int d = 0; d < s->ndim; d++)
            a->perm[d] = s->ndim - 1 - d;
    }
    char b[NTP_SHAPE_STR_MAX];
    if (a->n_perm != s->ndim)
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "'perm' has %d entries for input %s of rank %d",
                        a->n_perm, shp(s, b), s->ndim);
    bool seen[NTP_MAX_DIMS] = {false};
    ntp_shape out = {s->ndim, {0}};
    for (int d = 0; d < s->ndim; d++) {
        int64_t p = a->perm[d];
        if (p < 0 || p >= s->ndim || seen[p])
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "'perm' is not a permutation of 0..%d",
                            s->ndim - 1);
        seen[p] = true;
        out.dim[d] = s->dim[p];
    }
    set_out(g, n, 0, &out);
    ntp__out(g, n, 0)->layout = NTP_LAYOUT_ANY;
    return NTP_STATUS_OK;
}

ntp_status ntp__shape_pad(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    const ntp_shape *s = &ntp__in(g, n, 0)->shape;
    char b[NTP_SHAPE_STR_MAX];
    int r = s->ndim;
    if (n->a.n_pads != 2 * r)
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                        "'pads' has %d values; input %s needs %d (begins, then ends)", n->a.n_pads,
                        shp(s, b), 2 * r);
    ntp_shape out = *s;
    for (int d = 0; d < r; d++) {
        int64_t lo = n->a.pads[d], hi = n->a.pads[r + d];
        if (lo < 0 || hi < 0)
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "'pads' must not be negative");
        if (n->a.pad_mode == NTP_PADMODE_REFLECT && (lo >= s->dim[d] || hi >= s->dim[d]))
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                            "reflect padding %lld/%lld must be smaller than dim %d of %s",
                            (long long)lo, (long long)hi, d, shp(s, b));
        if (!ck_add(s->dim[d], lo, &out.dim[d]) || !ck_add(out.dim[d], hi, &out.dim[d]))
            return NODE_ERR(NTP_STATUS_OVERFLOW,
                            "'pads' %lld/%lld on dim %d of %s overflow 64-bit sizes", (long long)lo,
                            (long long)hi, d, shp(s, b));
    }
    set_out(g, n, 0, &out);
    return NTP_STATUS_OK;
}

ntp_status ntp__shape_convert(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    const ntp_tensor *x = ntp__in(g, n, 0);
    ntp_tensor *y = ntp__out(g, n, 0);
    ntp_shape out = x->shape;
    if (!n->a.has_to_dtype && !n->a.has_to_layout)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT, "needs 'to' (a dtype) or 'layout'");
    y->dtype = n->a.has_to_dtype ? n->a.to_dtype : x->dtype;
    y->layout = x->layout;
    if (n->a.has_to_layout) {
        char b[NTP_SHAPE_STR_MAX];
        if (x->shape.ndim < 3 || x->shape.ndim > 5)
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                            "a layout change needs a rank 3 to 5 input, got %s", shp(&x->shape, b));
        ntp_layout from = x->layout == NTP_LAYOUT_NHWC ? NTP_LAYOUT_NHWC : NTP_LAYOUT_NCHW;
        int r = x->shape.ndim;
        if (from == NTP_LAYOUT_NCHW && n->a.to_layout == NTP_LAYOUT_NHWC) {
            for (int d = 1; d < r - 1; d++)
                out.dim[d] = x->shape.dim[d + 1];
            out.dim[r - 1] = x->shape.dim[1];
        } else if (from == NTP_LAYOUT_NHWC && n->a.to_layout == NTP_LAYOUT_NCHW) {
            out.dim[1] = x->shape.dim[r - 1];
            for (int d = 2; d < r; d++)
                out.dim[d] = x->shape.dim[d - 1];
        }
        y->layout = n->a.to_layout;
    }
    set_out(g, n, 0, &out);
    return NTP_STATUS_OK;
}
