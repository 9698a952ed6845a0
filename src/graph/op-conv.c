/* Shapes and costs of spatial layers: convolution, transposed convolution,
 * pooling and global pooling, on [N, C, spatial...] (1 to 3 spatial dims). */
#include "op-common.h"

/* Expand a spatial list written with `count` values to nk values: one value
 * applies to every dim; 0 values keeps `dflt`. */
static ntp_status expand(ntp_ctx *ctx, ntp_graph *g, ntp_node *n, int64_t *v, int count, int nk,
                         int64_t dflt, const char *what)
{
    if (count == 0) {
        for (int i = 0; i < nk; i++)
            v[i] = dflt;
    } else if (count == 1) {
        for (int i = 1; i < nk; i++)
            v[i] = v[0];
    } else if (count != nk) {
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                        "'%s' has %d values but the input has %d spatial dim%s", what, count, nk,
                        nk == 1 ? "" : "s");
    }
    return NTP_STATUS_OK;
}

/* Expand explicit padding: 1 value, nk symmetric values, or 2*nk values
 * (all begins, then all ends). */
static ntp_status expand_pad(ntp_ctx *ctx, ntp_graph *g, ntp_node *n, int nk)
{
    ntp_attrs *a = &n->a;
    if (a->pad_kind != NTP_PAD_EXPLICIT) {
        for (int i = 0; i < 2 * nk; i++)
            a->pad[i] = 0;
        return NTP_STATUS_OK;
    }
    if (a->n_pad == 0) {
        for (int i = 0; i < 2 * nk; i++)
            a->pad[i] = 0;
    } else if (a->n_pad == 1) {
        for (int i = 1; i < 2 * nk; i++)
            a->pad[i] = a->pad[0];
    } else if (a->n_pad == nk) {
        for (int i = 0; i < nk; i++)
            a->pad[nk + i] = a->pad[i];
    } else if (a->n_pad != 2 * nk) {
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                        "'pad' has %d values; expected 1, %d (symmetric) or %d (begins, then ends)",
                        a->n_pad, nk, 2 * nk);
    }
    for (int i = 0; i < 2 * nk; i++)
        if (a->pad[i] < 0)
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "padding must not be negative, got %lld",
                            (long long)a->pad[i]);
    return NTP_STATUS_OK;
}

/* Common set-up: rank, nk, kernel/stride/dilation/pad expansion and checks. */
static ntp_status spatial_setup(ntp_ctx *ctx, ntp_graph *g, ntp_node *n, bool stride_is_kernel)
{
    ntp_status st = ntp__need_rank(ctx, g, n, 0, 3, 5, "[N,C,spatial...]");
    if (st)
        return st;
    ntp_attrs *a = &n->a;
    int nk = ntp__in(g, n, 0)->shape.ndim - 2;
    a->nk = nk;
    if ((st = expand(ctx, g, n, a->kernel, a->n_kernel, nk, 1, "kernel")) ||
        (st = expand(ctx, g, n, a->dilation, a->n_dilation, nk, 1, "dilation")) ||
        (st = expand_pad(ctx, g, n, nk)))
        return st;
    if (a->n_stride == 0 && stride_is_kernel) {
        for (int i = 0; i < nk; i++)
            a->stride[i] = a->kernel[i];
    } else if ((st = expand(ctx, g, n, a->stride, a->n_stride, nk, 1, "stride"))) {
        return st;
    }
    a->n_kernel = a->n_stride = a->n_dilation = nk;
    for (int i = 0; i < nk; i++) {
        if (a->kernel[i] <= 0 || a->stride[i] <= 0 || a->dilation[i] <= 0)
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                            "kernel, stride and dilation must be positive (got %lld, %lld, %lld)",
                            (long long)a->kernel[i], (long long)a->stride[i],
                            (long long)a->dilation[i]);
    }
    return NTP_STATUS_OK;
}

/* The extent of a dilated kernel, dilation * (kernel - 1) + 1; false on
 * overflow. Kernel and dilation are positive (spatial_setup). */
static bool kernel_extent(const ntp_attrs *a, int d, int64_t *ext)
{
    return ck_mul(a->dilation[d], a->kernel[d] - 1, ext) && ck_add(*ext, 1, ext);
}

/* Output size of a window sliding over one dim; SAME padding is resolved into
 * explicit begins and ends. Returns 0 when the window does not fit, -1 when
 * the sizes overflow 64 bits (stride, kernel and dilation are positive, the
 * pads non-negative: spatial_setup checked). */
static int64_t window_out(ntp_attrs *a, int d, int64_t in, bool ceil_mode)
{
    int nk = a->nk;
    int64_t ext, s = a->stride[d], t;
    if (!kernel_extent(a, d, &ext))
        return -1;
    if (a->pad_kind == NTP_PAD_SAME_UPPER || a->pad_kind == NTP_PAD_SAME_LOWER) {
        int64_t out = in / s + (in % s != 0);
        int64_t total;
        if (!ck_mul(out - 1, s, &total) || !ck_add(total, ext, &total))
            return -1;
        total -= in;
        if (total < 0)
            total = 0;
        int64_t small = total / 2, big = total - small;
        a->pad[d] = a->pad_kind == NTP_PAD_SAME_UPPER ? small : big;
        a->pad[nk + d] = total - a->pad[d];
        return out;
    }
    int64_t span;
    if (!ck_add(in, a->pad[d], &span) || !ck_add(span, a->pad[nk + d], &span))
        return -1;
    span -= ext;
    if (span < 0)
        return 0;
    int64_t out = ceil_mode ? span / s + (span % s != 0) + 1 : span / s + 1;
    /* PyTorch and ONNX: the last window must start inside the input or the
     * begin padding (in + pad did not overflow above). */
    if (ceil_mode && (!ck_mul(out - 1, s, &t) || t >= in + a->pad[d]))
        out--;
    return out;
}

static ntp_status spatial_out(ntp_ctx *ctx, ntp_graph *g, ntp_node *n, int64_t channels,
                              ntp_shape *out)
{
    const ntp_shape *s = &ntp__in(g, n, 0)->shape;
    ntp_attrs *a = &n->a;
    *out = *s;
    out->dim[1] = channels;
    for (int d = 0; d < a->nk; d++) {
        out->dim[2 + d] = window_out(a, d, s->dim[2 + d], a->ceil_mode);
        if (out->dim[2 + d] < 0) {
            char b[NTP_SHAPE_STR_MAX];
            return NODE_ERR(NTP_STATUS_OVERFLOW,
                            "kernel %lld, stride %lld, dilation %lld and padding %lld+%lld on "
                            "spatial dim %d of input %s overflow 64-bit sizes",
                            (long long)a->kernel[d], (long long)a->stride[d],
                            (long long)a->dilation[d], (long long)a->pad[d],
                            (long long)a->pad[a->nk + d], d, shp(s, b));
        }
        if (out->dim[2 + d] == 0) {
            char b[NTP_SHAPE_STR_MAX];
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                            "kernel %lld (dilation %lld) does not fit spatial dim %d of input %s "
                            "with padding %lld+%lld",
                            (long long)a->kernel[d], (long long)a->dilation[d], d, shp(s, b),
                            (long long)a->pad[d], (long long)a->pad[a->nk + d]);
        }
    }
    if (a->pad_kind != NTP_PAD_EXPLICIT)
        a->pad_kind = NTP_PAD_EXPLICIT;
    a->n_pad = 2 * a->nk;
    return NTP_STATUS_OK;
}

static ntp_status check_groups(ntp_ctx *ctx, ntp_graph *g, ntp_node *n, int64_t c, int64_t f)
{
    ntp_attrs *a = &n->a;
    if (a->groups == -1) /* depthwise: the reader's marker for groups = C */
        a->groups = c;
    if (a->groups <= 0)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT, "groups must be positive, got %lld",
                        (long long)a->groups);
    if (c % a->groups != 0)
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                        "input channels %lld are not divisible by groups %lld", (long long)c,
                        (long long)a->groups);
    if (f % a->groups != 0)
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "filters %lld are not divisible by groups %lld",
                        (long long)f, (long long)a->groups);
    return NTP_STATUS_OK;
}

static ntp_status conv_weights(ntp_ctx *ctx, ntp_graph *g, ntp_node *n, int64_t d0, int64_t d1)
{
    ntp_shape w = {2 + n->a.nk, {d0, d1}};
    for (int d = 0; d < n->a.nk; d++)
        w.dim[2 + d] = n->a.kernel[d];
    ntp_status st = ntp__node_add_weight(ctx, g, n, "W", NTP_TENSOR_WEIGHT, &w);
    if (st == NTP_STATUS_OK && n->a.bias) {
        ntp_shape b = shape1(n->a.filters);
        st = ntp__node_add_weight(ctx, g, n, "b", NTP_TENSOR_WEIGHT, &b);
    }
    return st;
}

ntp_status ntp__shape_conv(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    ntp_status st = spatial_setup(ctx, g, n, false);
    if (st)
        return st;
    int64_t c = ntp__in(g, n, 0)->shape.dim[1], f = n->a.filters;
    if (f <= 0)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT, "filters must be positive, got %lld",
                        (long long)f);
    if ((st = check_groups(ctx, g, n, c, f)))
        return st;
    ntp_shape out;
    if ((st = spatial_out(ctx, g, n, f, &out)))
        return st;
    set_out(g, n, 0, &out);
    return conv_weights(ctx, g, n, f, c / n->a.groups);
}

void ntp__cost_conv(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    const ntp_shape *in = &ntp__cin(g, n, 0)->shape;
    int64_t outs = numel(&ntp__cout(g, n, 0)->shape);
    int64_t per = in->dim[1] / n->a.groups;
    for (int d = 0; d < n->a.nk; d++)
        per = smul(per, n->a.kernel[d]);
    c->macs = smul(outs, per);
    c->flops = sadd(smul(2, c->macs), n->a.bias ? outs : 0);
}

ntp_status ntp__shape_deconv(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    ntp_status st = spatial_setup(ctx, g, n, false);
    if (st)
        return st;
    ntp_attrs *a = &n->a;
    if (a->pad_kind != NTP_PAD_EXPLICIT)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT, "'pad' must be explicit numbers for deconv");
    if ((st =
             expand(ctx, g, n, a->output_padding, a->n_output_padding, a->nk, 0, "output_padding")))
        return st;
    a->n_output_padding = a->nk;
    const ntp_shape *s = &ntp__in(g, n, 0)->shape;
    int64_t c = s->dim[1], f = a->filters;
    if (f <= 0)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT, "filters must be positive, got %lld",
                        (long long)f);
    if ((st = check_groups(ctx, g, n, c, f)))
        return st;
    ntp_shape out = *s;
    out.dim[1] = f;
    for (int d = 0; d < a->nk; d++) {
        /* PyTorch's rule: smaller than either the stride or the dilation. */
        if (a->output_padding[d] < 0 ||
            (a->output_padding[d] >= a->stride[d] && a->output_padding[d] >= a->dilation[d]))
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                            "output_padding %lld must be smaller than stride %lld or dilation %lld",
                            (long long)a->output_padding[d], (long long)a->stride[d],
                            (long long)a->dilation[d]);
        int64_t o, ext;
        if (!ck_mul(s->dim[2 + d] - 1, a->stride[d], &o) || !ck_sub(o, a->pad[d], &o) ||
            !ck_sub(o, a->pad[a->nk + d], &o) || !kernel_extent(a, d, &ext) ||
            !ck_add(o, ext, &o) || !ck_add(o, a->output_padding[d], &o)) {
            char b[NTP_SHAPE_STR_MAX];
            return NODE_ERR(NTP_STATUS_OVERFLOW,
                            "stride %lld, kernel %lld, dilation %lld and padding on spatial dim "
                            "%d of input %s overflow 64-bit sizes",
                            (long long)a->stride[d], (long long)a->kernel[d],
                            (long long)a->dilation[d], d, shp(s, b));
        }
        out.dim[2 + d] = o;
        if (out.dim[2 + d] <= 0) {
            char b[NTP_SHAPE_STR_MAX];
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "padding leaves no output for input %s",
                            shp(s, b));
        }
    }
    a->n_pad = 2 * a->nk;
    set_out(g, n, 0, &out);
    return conv_weights(ctx, g, n, c, f / a->groups);
}

void ntp__cost_deconv(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    const ntp_shape *in = &ntp__cin(g, n, 0)->shape;
    int64_t per = n->a.filters / n->a.groups;
    for (int d = 0; d < n->a.nk; d++)
        per = smul(per, n->a.kernel[d]);
    c->macs = smul(numel(in), per);
    c->flops = sadd(smul(2, c->macs), n->a.bias ? numel(&ntp__cout(g, n, 0)->shape) : 0);
}

ntp_status ntp__shape_pool(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    ntp_status st = spatial_setup(ctx, g, n, true);
    if (st)
        return st;
    for (int d = 0; d < n->a.nk; d++) {
        /* PyTorch's rule: padding at most half the (dilated) window, so that
         * every window sees at least one real element. */
        int64_t ext;
        if (!kernel_extent(&n->a, d, &ext))
            return NODE_ERR(NTP_STATUS_OVERFLOW,
                            "kernel %lld with dilation %lld overflows "
                            "64-bit sizes",
                            (long long)n->a.kernel[d], (long long)n->a.dilation[d]);
        if (n->a.pad_kind == NTP_PAD_EXPLICIT &&
            (n->a.pad[d] > ext / 2 || n->a.pad[n->a.nk + d] > ext / 2))
            return NODE_ERR(
                NTP_STATUS_SHAPE_ERROR, "padding %lld/%lld exceeds half the kernel extent %lld",
                (long long)n->a.pad[d], (long long)n->a.pad[n->a.nk + d], (long long)ext);
    }
    ntp_shape out;
    if ((st = spatial_out(ctx, g, n, ntp__in(g, n, 0)->shape.dim[1], &out)))
        return st;
    set_out(g, n, 0, &out);
    return NTP_STATUS_OK;
}

void ntp__cost_pool(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    int64_t outs = numel(&ntp__cout(g, n, 0)->shape), k = 1;
    for (int d = 0; d < n->a.nk; d++)
        k = smul(k, n->a.kernel[d]);
    c->flops = smul(outs, k);
    if (n->op == NTP_OP_AVGPOOL)
        c->flops = sadd(c->flops, outs);
}

ntp_status ntp__shape_gpool(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    ntp_status st = ntp__need_rank(ctx, g, n, 0, 3, 5, "[N,C,spatial...]");
    if (st)
        return st;
    ntp_shape out = ntp__in(g, n, 0)->shape;
    n->a.nk = out.ndim - 2;
    for (int d = 2; d < out.ndim; d++)
        out.dim[d] = 1;
    set_out(g, n, 0, &out);
    return NTP_STATUS_OK;
}

void ntp__cost_gpool(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    const ntp_shape *in = &ntp__cin(g, n, 0)->shape;
    c->flops = numel(in);
    if (n->op == NTP_OP_GLOBAL_AVGPOOL)
        c->flops = sadd(c->flops, in->dim[0] * in->dim[1]);
}
