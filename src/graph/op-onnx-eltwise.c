/* Shapes and costs of the element-wise ops added for ONNX models: unary
 * math and activations, prelu, log_softmax and hardmax, the binary ops
 * beyond add and mul, where, the reductions, instancenorm and lrn. Shapes of
 * the plain unary and broadcasting ops are the lead ops' own (ntp__shape_unary,
 * ntp__shape_binary, ntp__shape_softmax); what is here is what differs. */
#include "op-common.h"
#include "op-onnx-impl.h"

/* prelu: a comparison and a multiplication per element; log_softmax:
 * softmax's 5 with the log folded into the subtraction, plus one log per
 * row; hardmax: one comparison. The plain unary ops' counts are in the op
 * table (NTP_UNARY_TABLE). */
void ntp__cost_onnx_prelu(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    c->flops = smul(2, numel(&ntp__cout(g, n, 0)->shape));
}

void ntp__cost_onnx_log_softmax(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    c->flops = smul(6, numel(&ntp__cout(g, n, 0)->shape));
}

void ntp__cost_onnx_hardmax(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    c->flops = numel(&ntp__cout(g, n, 0)->shape);
}

/* The binary family's ops (sub, div, pow, max, min, mean, fmod, ...): the
 * FLOPs per output element of their row in NTP_BINARY_TABLE, per input
 * after the first and once (mean's division); where: one selection. */
void ntp__cost_onnx_binary(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    c->flops = smul(ntp__op_binary_flops(n->op, n->n_in), numel(&ntp__cout(g, n, 0)->shape));
}

void ntp__cost_onnx_where(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    c->flops = numel(&ntp__cout(g, n, 0)->shape);
}

/* Whether `w` broadcasts to `x` in one direction (ONNX's unidirectional
 * broadcasting: w's dims, aligned right, are 1 or equal x's). */
static bool broadcasts_to(const ntp_shape *w, const ntp_shape *x)
{
    if (w->ndim > x->ndim)
        return false;
    for (int d = 0; d < w->ndim; d++) {
        int64_t a = w->dim[w->ndim - 1 - d], b = x->dim[x->ndim - 1 - d];
        if (a != 1 && a != b)
            return false;
    }
    return true;
}

ntp_status ntp__shape_onnx_prelu(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    const ntp_shape x = ntp__in(g, n, 0)->shape;
    ntp_shape w;
    char b1[NTP_SHAPE_STR_MAX], b2[NTP_SHAPE_STR_MAX];
    if (n->a.n_shape > 0) {
        w.ndim = n->a.n_shape;
        for (int d = 0; d < w.ndim; d++)
            w.dim[d] = n->a.shape[d];
    } else {
        /* One slope per channel: dim 1 of [N, C, ...], the only dim of a
         * vector. It is shaped [C, 1, ...] (rank - 1 dims) so that it
         * broadcasts along dim 1, the form PyTorch exports. */
        if (x.ndim < 1)
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "needs an input of rank 1 or more");
        w = shape1(x.ndim >= 2 ? x.dim[1] : x.dim[0]);
        if (x.ndim >= 2) {
            w.ndim = x.ndim - 1;
            for (int d = 1; d < w.ndim; d++)
                w.dim[d] = 1;
        }
    }
    if (!broadcasts_to(&w, &x))
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "slope %s does not broadcast to input %s",
                        shp(&w, b1), shp(&x, b2));
    ntp_status st = ntp__node_add_weight(ctx, g, n, "slope", NTP_TENSOR_WEIGHT, &w);
    if (st)
        return st;
    set_out(g, n, 0, &x);
    return NTP_STATUS_OK;
}

/* --- reductions -------------------------------------------------------------- */

ntp_status ntp__shape_onnx_reduce(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    const ntp_shape *s = &ntp__in(g, n, 0)->shape;
    ntp_shape out = *s;
    int na = ntp__reduce_n_axes(&n->a);
    bool seen[NTP_MAX_DIMS] = {false};
    if (na == 0) {
        for (int d = 0; d < out.ndim; d++)
            out.dim[d] = 1;
    }
    for (int i = 0; i < na; i++) {
        int64_t ax;
        if (!norm_axis(n->a.reduce.axes[i], s->ndim, &ax))
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "axis %lld is out of range for rank %d",
                            (long long)n->a.reduce.axes[i], s->ndim);
        if (seen[ax])
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "axis %lld is given twice", (long long)ax);
        seen[ax] = true;
        n->a.reduce.axes[i] = ax;
        out.dim[ax] = 1;
    }
    set_out(g, n, 0, &out);
    return NTP_STATUS_OK;
}

/* One operation per input element (the accumulation: sum, max, min, prod),
 * plus per output: a division for the mean, a square root or logarithm for
 * l2 and log_sum; the squares of l2 and sum_square and the exponentials of
 * log_sum_exp per input element. Each is the op's cost column in the op
 * table. */
static int64_t reduce_in(const ntp_graph *g, const ntp_node *n)
{
    return numel(&ntp__cin(g, n, 0)->shape);
}
static int64_t reduce_out(const ntp_graph *g, const ntp_node *n)
{
    return numel(&ntp__cout(g, n, 0)->shape);
}

void ntp__cost_onnx_reduce(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    c->flops = reduce_in(g, n);
}

void ntp__cost_onnx_reduce_mean(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    c->flops = sadd(reduce_in(g, n), reduce_out(g, n));
}

void ntp__cost_onnx_reduce_l1(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    c->flops = smul(2, reduce_in(g, n));
}

void ntp__cost_onnx_reduce_l2(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    c->flops = sadd(smul(2, reduce_in(g, n)), reduce_out(g, n));
}

void ntp__cost_onnx_reduce_sum_square(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    c->flops = smul(2, reduce_in(g, n));
}

void ntp__cost_onnx_reduce_log_sum(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    c->flops = sadd(reduce_in(g, n), smul(4, reduce_out(g, n)));
}

void ntp__cost_onnx_reduce_log_sum_exp(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    c->flops = sadd(smul(6, reduce_in(g, n)), smul(4, reduce_out(g, n)));
}

/* --- instancenorm, lrn ----------------------------------------------------------- */

ntp_status ntp__shape_onnx_instancenorm(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    ntp_status st = ntp__need_rank(ctx, g, n, 0, 3, NTP_MAX_DIMS, "[N,C,spatial...]");
    if (st)
        return st;
    const ntp_shape s = ntp__in(g, n, 0)->shape; /* a copy: weights may move tensors */
    if (n->a.epsilon <= 0)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT, "epsilon must be positive, got %g",
                        n->a.epsilon);
    ntp_shape c = shape1(s.dim[1]);
    if ((st = ntp__node_add_weight(ctx, g, n, "scale", NTP_TENSOR_WEIGHT, &c)) ||
        (st = ntp__node_add_weight(ctx, g, n, "bias", NTP_TENSOR_WEIGHT, &c)))
        return st;
    set_out(g, n, 0, &s);
    return NTP_STATUS_OK;
}

ntp_status ntp__shape_onnx_lrn(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    ntp_status st = ntp__need_rank(ctx, g, n, 0, 3, NTP_MAX_DIMS, "[N,C,spatial...]");
    if (st)
        return st;
    int64_t size = ntp__lrn_size(&n->a);
    if (size <= 0)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT, "size must be positive, got %lld",
                        (long long)size);
    set_out(g, n, 0, &ntp__in(g, n, 0)->shape);
    return NTP_STATUS_OK;
}

/* Per element: size squares and additions over the channel window, then
 * bias, scale, power (4) and division. */
void ntp__cost_onnx_lrn(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    int64_t per = sadd(smul(2, ntp__lrn_size(&n->a)), 7);
    c->flops = smul(per, numel(&ntp__cout(g, n, 0)->shape));
}
