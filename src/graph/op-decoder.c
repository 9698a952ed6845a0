/* Shapes and costs of the decoder-transformer ops: rmsnorm, rope,
 * kv_attention, lm_head, argmax (docs/decoders.md). */
#include "op-common.h"

ntp_status ntp__shape_rmsnorm(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    const ntp_shape s = ntp__in(g, n, 0)->shape;
    if (n->a.epsilon <= 0)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT, "epsilon must be positive, got %g",
                        n->a.epsilon);
    ntp_shape w = shape1(s.dim[s.ndim - 1]);
    ntp_status st = ntp__node_add_weight(ctx, g, n, "scale", NTP_TENSOR_WEIGHT, &w);
    if (st)
        return st;
    set_out(g, n, 0, &s);
    return NTP_STATUS_OK;
}

/* Square and add per element, then scale by the reciprocal RMS and the
 * weight: 4 FLOPs per element (the per-row square root is not counted). */
void ntp__cost_rmsnorm(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    c->flops = smul(4, numel(&ntp__cout(g, n, 0)->shape));
}

ntp_status ntp__shape_rope(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    ntp_status st;
    if ((st = ntp__need_rank(ctx, g, n, 0, 3, 3, "[N,S,heads*head_dim]")) ||
        (st = ntp__need_rank(ctx, g, n, 1, 2, 2, "[N,S] positions")))
        return st;
    const ntp_tensor *x = ntp__in(g, n, 0), *p = ntp__in(g, n, 1);
    char b1[NTP_SHAPE_STR_MAX], b2[NTP_SHAPE_STR_MAX];
    if (p->dtype != NTP_DTYPE_I32 && p->dtype != NTP_DTYPE_I64)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT,
                        "positions '%s' must be integers (i32 or i64), got %s", p->name,
                        ntp_dtype_name(p->dtype));
    if (p->shape.dim[0] != x->shape.dim[0] || p->shape.dim[1] != x->shape.dim[1])
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "positions %s do not match input %s [N,S,...]",
                        shp(&p->shape, b1), shp(&x->shape, b2));
    if (n->a.head_dim % 2 || x->shape.dim[2] % n->a.head_dim)
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                        "head_dim %lld must be even and divide the input's last dim %lld",
                        (long long)n->a.head_dim, (long long)x->shape.dim[2]);
    ntp_shape s = x->shape;
    set_out(g, n, 0, &s);
    return NTP_STATUS_OK;
}

/* A rotation per pair of elements: 4 multiplies and 2 adds, 3 FLOPs per
 * element (the angles' sines and cosines are a table in real engines). */
void ntp__cost_rope(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    c->flops = smul(3, numel(&ntp__cout(g, n, 0)->shape));
}

ntp_status ntp__shape_kv_attention(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    ntp_status st;
    for (int i = 0; i < 3; i++)
        if ((st = ntp__need_rank(ctx, g, n, i, 3, 3, "[N,S,heads*head_dim]")))
            return st;
    const ntp_shape *q = &ntp__in(g, n, 0)->shape, *k = &ntp__in(g, n, 1)->shape,
                    *v = &ntp__in(g, n, 2)->shape;
    char b1[NTP_SHAPE_STR_MAX], b2[NTP_SHAPE_STR_MAX], b3[NTP_SHAPE_STR_MAX];
    int64_t h = n->a.heads;
    if (n->a.kv_heads == 0)
        n->a.kv_heads = h;
    int64_t kvh = n->a.kv_heads;
    if (h <= 0 || q->dim[2] % h)
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "query dim %lld is not divisible by heads %lld",
                        (long long)q->dim[2], (long long)h);
    if (kvh <= 0 || h % kvh)
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                        "kv_heads %lld must divide heads %lld (grouped-query attention)",
                        (long long)kvh, (long long)h);
    int64_t hd = q->dim[2] / h;
    if (k->dim[0] != q->dim[0] || v->dim[0] != q->dim[0] || k->dim[1] != q->dim[1] ||
        v->dim[1] != q->dim[1] || k->dim[2] != kvh * hd || v->dim[2] != kvh * hd)
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                        "key %s and value %s must be [N,S,kv_heads*head_dim] = [%lld,%lld,%lld] "
                        "for query %s",
                        shp(k, b1), shp(v, b2), (long long)q->dim[0], (long long)q->dim[1],
                        (long long)(kvh * hd), shp(q, b3));
    if (n->n_in == 4) {
        /* A padding mask of the new tokens (nonzero: a token; 0: padding
         * no query may attend to), as ONNX decoders' attention_mask. */
        if ((st = ntp__need_rank(ctx, g, n, 3, 2, 2, "[N,S] mask")))
            return st;
        const ntp_tensor *m = ntp__in(g, n, 3);
        if (m->dtype != NTP_DTYPE_I32 && m->dtype != NTP_DTYPE_I64)
            return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT,
                            "mask '%s' must be integers (i32 or i64), got %s", m->name,
                            ntp_dtype_name(m->dtype));
        if (m->shape.dim[0] != q->dim[0] || m->shape.dim[1] != q->dim[1])
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "mask %s does not match query %s [N,S,...]",
                            shp(&m->shape, b1), shp(q, b2));
    }
    ntp_shape s = *q;
    set_out(g, n, 0, &s);
    return NTP_STATUS_OK;
}

/* Causal attention of S new queries over `past` cached positions and
 * themselves: query i sees past + i + 1 keys, so the score and weighted-
 * sum products cover ctx = S·past + S(S+1)/2 (query, key) pairs per head,
 * each hd MACs twice (QKᵀ and PV), plus 5 FLOPs of softmax per pair. */
void ntp__cost_kv_attention(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    const ntp_shape *q = &ntp__cin(g, n, 0)->shape;
    int64_t N = q->dim[0], S = q->dim[1], h = n->a.heads > 0 ? n->a.heads : 1;
    int64_t hd = q->dim[2] / h;
    int64_t pairs = sadd(smul(S, n->a.past), smul(S, S + 1) / 2);
    int64_t nh_pairs = smul(smul(N, h), pairs);
    c->macs = smul(2, smul(nh_pairs, hd));
    c->flops = sadd(smul(2, c->macs), smul(5, nh_pairs));
}

/* The first embedding whose table is [vocab, d]: the token embedding a
 * tied head shares. */
static int tied_table(const ntp_graph *g, int64_t vocab, int64_t d)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const ntp_node *e = &g->nodes[i];
        if (e->op == NTP_OP_EMBEDDING && e->a.vocab == vocab && e->a.units == d && e->n_w == 1)
            return e->w[0];
    }
    return -1;
}

ntp_status ntp__shape_lm_head(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    const ntp_shape s = ntp__in(g, n, 0)->shape;
    int64_t d = s.dim[s.ndim - 1];
    ntp_shape out = s;
    out.dim[out.ndim - 1] = n->a.vocab;
    set_out(g, n, 0, &out);
    ntp_shape w = shape2(n->a.vocab, d);
    if (!n->a.tied)
        return ntp__node_add_weight(ctx, g, n, "W", NTP_TENSOR_WEIGHT, &w);
    /* Tied: the weight is the token embedding's table, one tensor that both
     * layers list (analyze counts it once). */
    int t = tied_table(g, n->a.vocab, d);
    if (t < 0)
        return NODE_ERR(NTP_STATUS_GRAPH_ERROR,
                        "tied: no embedding with vocab %lld and units %lld to share a table with",
                        (long long)n->a.vocab, (long long)d);
    if (n->n_w == 0)
        n->w[n->n_w++] = t;
    else if (n->w[0] != t)
        return NODE_ERR(NTP_STATUS_GRAPH_ERROR, "tied, but the model gives a weight of its own");
    n->w_decl = 1;
    return NTP_STATUS_OK;
}

void ntp__cost_lm_head(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    const ntp_shape *in = &ntp__cin(g, n, 0)->shape;
    c->macs = smul(numel(&ntp__cout(g, n, 0)->shape), in->dim[in->ndim - 1]);
    c->flops = smul(2, c->macs);
}

ntp_status ntp__shape_argmax(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    ntp_status st = ntp__need_rank(ctx, g, n, 0, 2, NTP_MAX_DIMS, "[..., classes]");
    if (st)
        return st;
    ntp_shape s = ntp__in(g, n, 0)->shape;
    s.ndim--;
    set_out(g, n, 0, &s);
    ntp_tensor *y = ntp__out(g, n, 0);
    y->dtype = NTP_DTYPE_I32;
    y->layout = NTP_LAYOUT_ANY;
    return NTP_STATUS_OK;
}

/* One comparison per input element. */
void ntp__cost_argmax(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    c->flops = numel(&ntp__cin(g, n, 0)->shape);
}
