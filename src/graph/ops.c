/* Op tables and dispatch, all generated from NTP_OP_TABLE. */
#include <string.h>

#include "graph-impl.h"

typedef struct op_info {
    const char *name;
    ntp_op_kind kind;
    int min_in, max_in;
    ntp_shape_fn shape;
    ntp_cost_fn cost;
    ntp_op_init init;
    ntp_op_predict predict;
    ntp_op_backward backward;
    ntp_op_torch torch;
    ntp_op_onnx onnx;
    const char *onnx_name;
} op_info;

static const op_info ops[] = {
#define NTP_OP_INFO_(e, s, k, mi, ma, sh, co, in, pr, bw, tc, ox, on) \
    [NTP_OP_##e] = {s,                                                \
                    NTP_OP_KIND_##k,                                  \
                    mi,                                               \
                    ma,                                               \
                    ntp__shape_##sh,                                  \
                    ntp__cost_##co,                                   \
                    NTP_OP_INIT_##in,                                 \
                    NTP_OP_PREDICT_##pr,                              \
                    NTP_OP_BACKWARD_##bw,                             \
                    NTP_OP_TORCH_##tc,                                \
                    NTP_OP_ONNX_##ox,                                 \
                    on},
    NTP_OP_TABLE(NTP_OP_INFO_)
#undef NTP_OP_INFO_
};

_Static_assert(sizeof ops / sizeof ops[0] == NTP_OP_COUNT, "op table out of step with the enum");

const char *ntp__op_name(ntp_op op)
{
    return (unsigned)op < NTP_OP_COUNT ? ops[op].name : "?";
}
ntp_op_kind ntp__op_kind(ntp_op op)
{
    return ops[op].kind;
}
int ntp__op_min_inputs(ntp_op op)
{
    return ops[op].min_in;
}
int ntp__op_max_inputs(ntp_op op)
{
    return ops[op].max_in;
}

ntp_op_init ntp__op_init(ntp_op op)
{
    return ops[op].init;
}

ntp_op_predict ntp__op_predict(ntp_op op)
{
    return ops[op].predict;
}
ntp_op_backward ntp__op_backward(ntp_op op)
{
    return ops[op].backward;
}
ntp_op_torch ntp__op_torch(ntp_op op)
{
    return (unsigned)op < NTP_OP_COUNT ? ops[op].torch : NTP_OP_TORCH_NONE;
}
ntp_op_onnx ntp__op_onnx(ntp_op op)
{
    return (unsigned)op < NTP_OP_COUNT ? ops[op].onnx : NTP_OP_ONNX_NONE;
}
const char *ntp__op_onnx_name(ntp_op op)
{
    return (unsigned)op < NTP_OP_COUNT ? ops[op].onnx_name : NULL;
}

ntp_op ntp__op_from_name(const char *name)
{
    for (int i = 0; i < NTP_OP_COUNT; i++)
        if (strcmp(ops[i].name, name) == 0)
            return (ntp_op)i;
    return NTP_OP_COUNT;
}

/* The unary element-wise family, from NTP_UNARY_TABLE. An op without a row
 * has a zero entry (is_unary false). */
typedef struct unary_info {
    bool is_unary;
    const char *onnx, *onnx_attrs;
    int flops;
} unary_info;

static const unary_info unary_ops[NTP_OP_COUNT] = {
#define NTP_UNARY_INFO_(e, fn, onnx, attrs, flops) [NTP_OP_##e] = {true, onnx, attrs, flops},
    NTP_UNARY_TABLE(NTP_UNARY_INFO_)
#undef NTP_UNARY_INFO_
};

bool ntp__op_is_unary(ntp_op op)
{
    return (unsigned)op < NTP_OP_COUNT && unary_ops[op].is_unary;
}
const char *ntp__op_unary_onnx(ntp_op op)
{
    return ntp__op_is_unary(op) ? unary_ops[op].onnx : NULL;
}
const char *ntp__op_unary_onnx_attrs(ntp_op op)
{
    return ntp__op_is_unary(op) ? unary_ops[op].onnx_attrs : "";
}
int ntp__op_unary_flops(ntp_op op)
{
    return ntp__op_is_unary(op) ? unary_ops[op].flops : 0;
}

ntp_op ntp__op_unary_from_onnx(const char *op_type)
{
    for (int i = 0; i < NTP_OP_COUNT; i++)
        if (unary_ops[i].onnx && strcmp(unary_ops[i].onnx, op_type) == 0)
            return (ntp_op)i;
    return NTP_OP_COUNT;
}

/* The binary element-wise family, from NTP_BINARY_TABLE. An op without a
 * row has a zero entry (is_binary false). */
typedef struct binary_info {
    bool is_binary, commutes, predicate;
    const char *onnx, *onnx_attrs;
    int flops, post;
} binary_info;

#define NTP_BINARY_OUT_SAME false
#define NTP_BINARY_OUT_PREDICATE true
static const binary_info binary_ops[NTP_OP_COUNT] = {
#define NTP_BINARY_INFO_(e, fn, onnx, attrs, commutes, out, flops, post) \
    [NTP_OP_##e] = {true, commutes, NTP_BINARY_OUT_##out, onnx, attrs, flops, post},
    NTP_BINARY_TABLE(NTP_BINARY_INFO_)
#undef NTP_BINARY_INFO_
};

bool ntp__op_is_binary(ntp_op op)
{
    return (unsigned)op < NTP_OP_COUNT && binary_ops[op].is_binary;
}
const char *ntp__op_binary_onnx(ntp_op op)
{
    return ntp__op_is_binary(op) ? binary_ops[op].onnx : NULL;
}
const char *ntp__op_binary_onnx_attrs(ntp_op op)
{
    return ntp__op_is_binary(op) ? binary_ops[op].onnx_attrs : "";
}
bool ntp__op_binary_commutes(ntp_op op)
{
    return ntp__op_is_binary(op) && binary_ops[op].commutes;
}
bool ntp__op_binary_predicate(ntp_op op)
{
    return ntp__op_is_binary(op) && binary_ops[op].predicate;
}
int64_t ntp__op_binary_flops(ntp_op op, int n_in)
{
    if (!ntp__op_is_binary(op))
        return 0;
    return (int64_t)binary_ops[op].flops * (n_in - 1) + binary_ops[op].post;
}

ntp_op ntp__op_binary_from_onnx(const char *op_type)
{
    for (int i = 0; i < NTP_OP_COUNT; i++)
        if (binary_ops[i].onnx && strcmp(binary_ops[i].onnx, op_type) == 0)
            return (ntp_op)i;
    return NTP_OP_COUNT;
}

ntp_status ntp__op_infer_shape(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    const op_info *oi = &ops[n->op];
    if (n->n_in < oi->min_in || n->n_in > oi->max_in) {
        if (oi->min_in == oi->max_in)
            return ntp__node_error(ctx, g, n, NTP_STATUS_GRAPH_ERROR, "takes %d input%s, got %d",
                                   oi->min_in, oi->min_in == 1 ? "" : "s", n->n_in);
        return ntp__node_error(ctx, g, n, NTP_STATUS_GRAPH_ERROR, "takes %d to %d inputs, got %d",
                               oi->min_in, oi->max_in, n->n_in);
    }
    /* Only embedding (and rope's positions) read integers; a copy or conversion moves any type. */
    if (n->op != NTP_OP_EMBEDDING && n->op != NTP_OP_MEMCPY && n->op != NTP_OP_CONVERT)
        for (int i = 0; i < n->n_in; i++) {
            const ntp_tensor *t = ntp__in(g, n, i);
            if (n->op == NTP_OP_ROPE && i == 1)
                continue; /* rope's positions (op-decoder.c checks them) */
            if (n->op == NTP_OP_KV_ATTENTION && i == 3)
                continue; /* kv_attention's padding mask (op-decoder.c) */
            if (t->dtype == NTP_DTYPE_I32 || t->dtype == NTP_DTYPE_I64 || t->dtype == NTP_DTYPE_U8)
                return ntp__node_error(ctx, g, n, NTP_STATUS_INVALID_ARGUMENT,
                                       "input '%s' is %s; this layer takes floating-point data",
                                       t->name, ntp_dtype_name(t->dtype));
        }
    /* Outputs default to the layer's precision and the first input's layout;
     * a shape function overrides what differs (indices, decoded labels). */
    for (int i = 0; i < n->n_out; i++) {
        ntp_tensor *t = ntp__out(g, n, i);
        t->dtype = n->precision;
        t->layout = ntp__in(g, n, 0)->layout;
    }
    n->w_decl = 0;
    ntp_status st = oi->shape(ctx, g, n);
    if (st != NTP_STATUS_OK)
        return st;
    if (n->w_decl != n->n_w)
        return ntp__node_error(ctx, g, n, NTP_STATUS_GRAPH_ERROR,
                               "the model gives %d constant inputs, the layer takes %d", n->n_w,
                               n->w_decl);
    for (int i = 0; i < n->n_out; i++) {
        const ntp_tensor *t = ntp__out(g, n, i);
        char buf[128];
        for (int d = 0; d < t->shape.ndim; d++)
            if (t->shape.dim[d] <= 0)
                return ntp__node_error(ctx, g, n, NTP_STATUS_SHAPE_ERROR,
                                       "output %s has a non-positive dimension",
                                       ntp_shape_str(&t->shape, buf, sizeof buf));
        if (ntp__tensor_bytes(t) < 0)
            return ntp__node_error(ctx, g, n, NTP_STATUS_OVERFLOW,
                                   "output %s overflows 64-bit sizes",
                                   ntp_shape_str(&t->shape, buf, sizeof buf));
    }
    return NTP_STATUS_OK;
}

void ntp__op_cost(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    c->macs = 0;
    c->flops = 0;
    ops[n->op].cost(g, n, c);
}
