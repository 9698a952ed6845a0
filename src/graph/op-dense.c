/* Shapes and costs of dense layers: fc, matmul, attention, embedding. */
#include "op-common.h"

ntp_status ntp__shape_fc(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    ntp_status st = ntp__need_rank(ctx, g, n, 0, 1, NTP_MAX_DIMS, "[..., features]");
    if (st)
        return st;
    if (n->a.units <= 0)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT, "units must be positive, got %lld",
                        (long long)n->a.units);
    ntp_shape out = ntp__in(g, n, 0)->shape;
    int64_t k = out.dim[out.ndim - 1];
    out.dim[out.ndim - 1] = n->a.units;
    set_out(g, n, 0, &out);
    ntp_shape w = shape2(n->a.units, k), b = shape1(n->a.units);
    if ((st = ntp__node_add_weight(ctx, g, n, "W", NTP_TENSOR_WEIGHT, &w)))
        return st;
    if (n->a.bias)
        st = ntp__node_add_weight(ctx, g, n, "b", NTP_TENSOR_WEIGHT, &b);
    return st;
}

void ntp__cost_fc(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    const ntp_shape *in = &ntp__cin(g, n, 0)->shape;
    int64_t k = in->dim[in->ndim - 1];
    int64_t outs = numel(&ntp__cout(g, n, 0)->shape);
    c->macs = smul(outs, k);
    c->flops = sadd(smul(2, c->macs), n->a.bias ? outs : 0);
}

ntp_status ntp__shape_matmul(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    ntp_status st;
    if ((st = ntp__need_rank(ctx, g, n, 0, 2, NTP_MAX_DIMS, "[..., M, K]")) ||
        (st = ntp__need_rank(ctx, g, n, 1, 2, NTP_MAX_DIMS, "[..., K, N]")))
        return st;
    const ntp_shape *A = &ntp__in(g, n, 0)->shape, *B = &ntp__in(g, n, 1)->shape;
    int64_t m = A->dim[A->ndim - 2], ka = A->dim[A->ndim - 1];
    int64_t kb = B->dim[B->ndim - 2], nn = B->dim[B->ndim - 1];
    if (n->a.transpose_a) {
        int64_t t = m;
        m = ka;
        ka = t;
    }
    if (n->a.transpose_b) {
        int64_t t = kb;
        kb = nn;
        nn = t;
    }
    char b1[NTP_SHAPE_STR_MAX], b2[NTP_SHAPE_STR_MAX];
    if (ka != kb)
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                        "inner dimensions differ: '%s' %s has K=%lld, '%s' %s has K=%lld",
                        ntp__in(g, n, 0)->name, shp(A, b1), (long long)ka, ntp__in(g, n, 1)->name,
                        shp(B, b2), (long long)kb);
    int ba = A->ndim - 2, bb = B->ndim - 2, r = ba > bb ? ba : bb;
    ntp_shape out = {r + 2, {0}};
    for (int d = 0; d < r; d++) {
        int da = d - (r - ba), db = d - (r - bb);
        int64_t x = da >= 0 ? A->dim[da] : 1, y = db >= 0 ? B->dim[db] : 1;
        if (x != y && x != 1 && y != 1)
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "cannot broadcast batch dims of %s and %s",
                            shp(A, b1), shp(B, b2));
        out.dim[d] = x == 1 ? y : x;
    }
    out.dim[r] = m;
    out.dim[r + 1] = nn;
    set_out(g, n, 0, &out);
    return NTP_STATUS_OK;
}

void ntp__cost_matmul(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    const ntp_shape *A = &ntp__cin(g, n, 0)->shape;
    int64_t k = n->a.transpose_a ? A->dim[A->ndim - 2] : A->dim[A->ndim - 1];
    c->macs = smul(numel(&ntp__cout(g, n, 0)->shape), k);
    c->flops = smul(2, c->macs);
}

ntp_status ntp__shape_attention(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    if (n->n_in != 1 && n->n_in != 3)
        return NODE_ERR(NTP_STATUS_GRAPH_ERROR,
                        "takes 1 input (self-attention) or 3 (query, key, value), got %d", n->n_in);
    ntp_status st;
    for (int i = 0; i < n->n_in; i++)
        if ((st = ntp__need_rank(ctx, g, n, i, 3, 3, "[N,S,D]")))
            return st;
    const ntp_shape *q = &ntp__in(g, n, 0)->shape;
    int64_t d = q->dim[2];
    char b1[NTP_SHAPE_STR_MAX], b2[NTP_SHAPE_STR_MAX];
    if (n->a.heads <= 0 || d % n->a.heads != 0)
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "model dim %lld is not divisible by heads %lld",
                        (long long)d, (long long)n->a.heads);
    if (n->n_in == 3) {
        const ntp_shape *k = &ntp__in(g, n, 1)->shape, *v = &ntp__in(g, n, 2)->shape;
        if (k->dim[0] != q->dim[0] || k->dim[2] != d || v->dim[0] != q->dim[0] || v->dim[2] != d ||
            v->dim[1] != k->dim[1])
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                            "key %s and value %s must be [N,S_kv,D] with N and D of query %s",
                            shp(k, b1), shp(v, b2), shp(q, b1));
    }
    if (n->a.causal && n->n_in == 3 && ntp__in(g, n, 1)->shape.dim[1] != q->dim[1])
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "a causal mask needs as many keys as queries");
    set_out(g, n, 0, q);
    ntp_shape in_proj = shape2(3 * d, d), in_bias = shape1(3 * d);
    ntp_shape out_proj = shape2(d, d), out_bias = shape1(d);
    if ((st = ntp__node_add_weight(ctx, g, n, "in_proj", NTP_TENSOR_WEIGHT, &in_proj)))
        return st;
    if (n->a.bias && (st = ntp__node_add_weight(ctx, g, n, "in_bias", NTP_TENSOR_WEIGHT, &in_bias)))
        return st;
    if ((st = ntp__node_add_weight(ctx, g, n, "out_proj", NTP_TENSOR_WEIGHT, &out_proj)))
        return st;
    if (n->a.bias &&
        (st = ntp__node_add_weight(ctx, g, n, "out_bias", NTP_TENSOR_WEIGHT, &out_bias)))
        return st;
    return NTP_STATUS_OK;
}

void ntp__cost_attention(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    const ntp_shape *q = &ntp__cin(g, n, 0)->shape;
    int64_t N = q->dim[0], S = q->dim[1], D = q->dim[2];
    int64_t Skv = n->n_in == 3 ? ntp__cin(g, n, 1)->shape.dim[1] : S;
    int64_t proj = smul(N, smul(D, sadd(smul(2, S), smul(2, Skv)))); /* q, k, v, out */
    proj = smul(proj, D);
    int64_t attn = smul(smul(2, N), smul(smul(S, Skv), D)); /* QK^T and PV */
    c->macs = sadd(proj, attn);
    int64_t softmax = smul(5, smul(smul(N, n->a.heads), smul(S, Skv)));
    int64_t bias = n->a.bias ? smul(N, smul(D, sadd(smul(2, S), smul(2, Skv)))) : 0;
    c->flops = sadd(sadd(smul(2, c->macs), softmax), bias);
}

ntp_status ntp__shape_embedding(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    const ntp_tensor *x = ntp__in(g, n, 0);
    if (x->dtype != NTP_DTYPE_I32 && x->dtype != NTP_DTYPE_I64)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT,
                        "input '%s' must hold integer indices (i32 or i64), got %s", x->name,
                        ntp_dtype_name(x->dtype));
    if (n->a.vocab <= 0 || n->a.units <= 0)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT,
                        "vocab and units must be positive (got %lld, %lld)", (long long)n->a.vocab,
                        (long long)n->a.units);
    if (x->shape.ndim + 1 > NTP_MAX_DIMS)
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "input rank %d is too large", x->shape.ndim);
    ntp_shape out = x->shape;
    out.dim[out.ndim++] = n->a.units;
    set_out(g, n, 0, &out);
    ntp__out(g, n, 0)->layout = NTP_LAYOUT_ANY;
    ntp_shape t = shape2(n->a.vocab, n->a.units);
    return ntp__node_add_weight(ctx, g, n, "table", NTP_TENSOR_WEIGHT, &t);
}
