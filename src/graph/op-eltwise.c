/* Shapes and costs of element-wise layers: activations, softmax, add/mul,
 * and normalisation. */
#include <string.h>

#include "op-common.h"

ntp_status ntp__need_rank(ntp_ctx *ctx, const ntp_graph *g, const ntp_node *n, int input, int lo,
                          int hi, const char *layout)
{
    const ntp_tensor *t = ntp__cin(g, n, input);
    char b[NTP_SHAPE_STR_MAX];
    if (t->shape.ndim >= lo && t->shape.ndim <= hi)
        return NTP_STATUS_OK;
    if (lo == hi)
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "expects input '%s' of rank %d %s, got %s", t->name,
                        lo, layout, shp(&t->shape, b));
    return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "expects input '%s' of rank %d to %d %s, got %s",
                    t->name, lo, hi, layout, shp(&t->shape, b));
}

ntp_status ntp__shape_unary(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    if (n->op == NTP_OP_CLIP && n->a.min > n->a.max)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT, "min %g is greater than max %g", n->a.min,
                        n->a.max);
    if (n->op == NTP_OP_RELU && n->a.has_max && n->a.max <= 0)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT, "max must be positive, got %g", n->a.max);
    set_out(g, n, 0, &ntp__in(g, n, 0)->shape);
    if (n->op == NTP_OP_MEMCPY)
        ntp__out(g, n, 0)->dtype = ntp__in(g, n, 0)->dtype;
    return NTP_STATUS_OK;
}

/* delay (docs/ops.md): its input passed through unchanged after a busy
 * wait of `us` microseconds; like an activation, it computes at its
 * layer's precision. */
ntp_status ntp__shape_delay(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    (void)ctx;
    set_out(g, n, 0, &ntp__in(g, n, 0)->shape);
    return NTP_STATUS_OK;
}

/* FLOPs per element of a unary element-wise op, from the op table
 * (docs/ops.md); a relu with a ceiling also takes the minimum. */
void ntp__cost_unary(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    int64_t per = ntp__op_unary_flops(n->op) + (n->op == NTP_OP_RELU && n->a.has_max);
    c->flops = smul(per, numel(&ntp__cout(g, n, 0)->shape));
}

void ntp__cost_none(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    (void)g, (void)n, (void)c;
}
void ntp__cost_move(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    (void)g, (void)n, (void)c;
}

ntp_status ntp__shape_softmax(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    const ntp_shape *s = &ntp__in(g, n, 0)->shape;
    if (!norm_axis(n->a.axis, s->ndim, &n->a.axis))
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "axis %lld is out of range for rank %d",
                        (long long)n->a.axis, s->ndim);
    set_out(g, n, 0, s);
    return NTP_STATUS_OK;
}

void ntp__cost_softmax(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    c->flops = smul(5, numel(&ntp__cout(g, n, 0)->shape));
}

/* Numpy broadcasting of all inputs; the message names the two that clash. */
ntp_status ntp__shape_binary(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    ntp_shape out = ntp__in(g, n, 0)->shape;
    for (int i = 1; i < n->n_in; i++) {
        const ntp_shape *s = &ntp__in(g, n, i)->shape;
        int r = out.ndim > s->ndim ? out.ndim : s->ndim;
        ntp_shape res = {r, {0}};
        for (int d = 0; d < r; d++) {
            int da = d - (r - out.ndim), db = d - (r - s->ndim);
            int64_t a = da >= 0 ? out.dim[da] : 1, b = db >= 0 ? s->dim[db] : 1;
            if (a != b && a != 1 && b != 1) {
                char b1[NTP_SHAPE_STR_MAX], b2[NTP_SHAPE_STR_MAX];
                return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                                "cannot broadcast input '%s' %s with input '%s' %s",
                                ntp__in(g, n, 0)->name, shp(&ntp__in(g, n, 0)->shape, b1),
                                ntp__in(g, n, i)->name, shp(s, b2));
            }
            res.dim[d] = a == 1 ? b : a;
        }
        out = res;
    }
    set_out(g, n, 0, &out);
    return NTP_STATUS_OK;
}

void ntp__cost_binary(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    c->flops = smul(n->n_in - 1, numel(&ntp__cout(g, n, 0)->shape));
}

ntp_status ntp__shape_batchnorm(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    ntp_status st = ntp__need_rank(ctx, g, n, 0, 2, NTP_MAX_DIMS, "[N,C,...]");
    if (st)
        return st;
    /* A copy: declaring weights may move g->tensors. */
    const ntp_shape s = ntp__in(g, n, 0)->shape;
    ntp_shape c = shape1(s.dim[1]);
    if (n->a.epsilon <= 0)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT, "epsilon must be positive, got %g",
                        n->a.epsilon);
    if ((st = ntp__node_add_weight(ctx, g, n, "scale", NTP_TENSOR_WEIGHT, &c)) ||
        (st = ntp__node_add_weight(ctx, g, n, "bias", NTP_TENSOR_WEIGHT, &c)) ||
        (st = ntp__node_add_weight(ctx, g, n, "mean", NTP_TENSOR_BUFFER, &c)) ||
        (st = ntp__node_add_weight(ctx, g, n, "var", NTP_TENSOR_BUFFER, &c)))
        return st;
    set_out(g, n, 0, &s);
    return NTP_STATUS_OK;
}

void ntp__cost_batchnorm(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    c->flops = smul(2, numel(&ntp__cout(g, n, 0)->shape));
}

ntp_status ntp__shape_layernorm(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    /* A copy: declaring weights may move g->tensors. */
    const ntp_shape shape = ntp__in(g, n, 0)->shape, *s = &shape;
    if (!norm_axis(n->a.axis, s->ndim, &n->a.axis))
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "axis %lld is out of range for rank %d",
                        (long long)n->a.axis, s->ndim);
    if (n->a.epsilon <= 0)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT, "epsilon must be positive, got %g",
                        n->a.epsilon);
    int64_t d = 1;
    for (int i = (int)n->a.axis; i < s->ndim; i++)
        d *= s->dim[i];
    ntp_shape w = shape1(d);
    ntp_status st;
    if ((st = ntp__node_add_weight(ctx, g, n, "gamma", NTP_TENSOR_WEIGHT, &w)) ||
        (st = ntp__node_add_weight(ctx, g, n, "beta", NTP_TENSOR_WEIGHT, &w)))
        return st;
    set_out(g, n, 0, s);
    return NTP_STATUS_OK;
}

void ntp__cost_layernorm(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    c->flops = smul(8, numel(&ntp__cout(g, n, 0)->shape));
}
