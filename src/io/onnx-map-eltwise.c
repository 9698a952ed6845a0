/* ONNX element-wise ops, softmaxes and reductions -> IR nodes. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "graph/op-onnx-impl.h"
#include "onnx-impl.h"

/* Add node `op` reading input 0; returns its index (or -1). */
static int unary_node(ntp_onnx_importer *x, ntp_op op, ntp_status *st)
{
    int t;
    if ((*st = ntp__onnx_in_tensor(x, 0, &t)))
        return -1;
    int ni = ntp__onnx_add_node(x, op, NULL, &t, 1, 1);
    if (ni < 0)
        *st = ntp_ctx_status(x->ctx);
    return ni;
}

static ntp_status finish(ntp_onnx_importer *x, int ni)
{
    ntp_status st = ntp__onnx_infer(x, ni);
    return st ? st : ntp__onnx_out_tensor(x, 0, x->g->nodes[ni].out[0]);
}

/* Unary element-wise ops (the op table's ONNX column), their parameters by
 * the ONNX attribute table, with ONNX's defaults. */
static ntp_status map_unary(ntp_onnx_importer *x)
{
    ntp_op op = ntp__op_unary_from_onnx(x->np->op_type);
    ntp_status st;
    int ni = unary_node(x, op, &st);
    if (ni < 0)
        return st;
    ntp__onnx_read_attrs(x, &x->g->nodes[ni].a, op);
    return finish(x, ni);
}

static ntp_status map_prelu(ntp_onnx_importer *x)
{
    ntp_onnx_value *sv = ntp__onnx_in_value(x, 1);
    ntp_status st = sv ? ntp__onnx_value_const(x, sv) : NTP_STATUS_OK;
    if (st)
        return st;
    if (!sv || !sv->c)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "the slope must be an initializer");
    int ni = unary_node(x, NTP_OP_PRELU, &st);
    if (ni < 0)
        return st;
    ntp_shape xs = x->g->tensors[x->g->nodes[ni].in[0]].shape, ws = sv->c->shape;
    /* Before opset 7 a [C] slope applies along dim 1, not the last dim. */
    if (x->opset < 7 && ws.ndim == 1 && xs.ndim >= 2 && ws.dim[0] == xs.dim[1] && ws.dim[0] > 1) {
        ws.ndim = xs.ndim - 1;
        for (int d = 1; d < ws.ndim; d++)
            ws.dim[d] = 1;
    }
    ntp_node *n = &x->g->nodes[ni];
    n->a.n_shape = ws.ndim;
    for (int d = 0; d < ws.ndim; d++)
        n->a.shape[d] = ws.dim[d];
    if ((st = ntp__onnx_add_weight_value(x, ni, sv, &ws)))
        return st;
    return finish(x, ni);
}

static ntp_status map_clip(ntp_onnx_importer *x)
{
    double lo = -INFINITY, hi = INFINITY;
    ntp_status st;
    if (x->opset < 11) {
        lo = ntp__onnx_attr_f(x, "min", -INFINITY);
        hi = ntp__onnx_attr_f(x, "max", INFINITY);
    } else {
        const ntp_onnx_tensor *c;
        if (ntp__onnx_has_in(x, 1)) {
            if ((st = ntp__onnx_in_const(x, 1, &c)))
                return st;
            if (c->n != 1)
                return ntp__onnx_err(x, NTP_STATUS_INVALID_ARGUMENT, "min must be a scalar");
            lo = c->f ? ntp__onnx_float_value(c->f[0]) : ntp__onnx_get_f(c, 0);
        }
        if (ntp__onnx_has_in(x, 2)) {
            if ((st = ntp__onnx_in_const(x, 2, &c)))
                return st;
            if (c->n != 1)
                return ntp__onnx_err(x, NTP_STATUS_INVALID_ARGUMENT, "max must be a scalar");
            hi = c->f ? ntp__onnx_float_value(c->f[0]) : ntp__onnx_get_f(c, 0);
        }
    }
    /* Clip(0, max) is a ReLU with a ceiling (ReLU6 is the common one). */
    bool relu = lo == 0.0 && hi > 0.0;
    int ni = unary_node(x, relu ? NTP_OP_RELU : NTP_OP_CLIP, &st);
    if (ni < 0)
        return st;
    ntp_attrs *a = &x->g->nodes[ni].a;
    if (relu) {
        a->has_max = isfinite(hi);
        a->max = hi;
    } else {
        a->min = lo;
        a->max = hi;
    }
    return finish(x, ni);
}

/* Softmax, LogSoftmax, Hardmax. Before opset 13 they flatten the input to
 * 2-d at `axis` (default 1) and normalise each row: a flatten, the op on
 * the last axis and a reshape back, unless the axis is already the last. */
static ntp_status map_softmax(ntp_onnx_importer *x)
{
    const char *t = x->np->op_type;
    ntp_op op = !strcmp(t, "Softmax")      ? NTP_OP_SOFTMAX
                : !strcmp(t, "LogSoftmax") ? NTP_OP_LOG_SOFTMAX
                                           : NTP_OP_HARDMAX;
    int in;
    ntp_status st = ntp__onnx_in_tensor(x, 0, &in);
    if (st)
        return st;
    ntp_shape s = x->g->tensors[in].shape;
    int64_t axis = ntp__onnx_attr_i(x, "axis", x->opset < 13 ? 1 : -1), ax;
    if (s.ndim == 0 || !ntp__onnx_axis(axis, s.ndim, &ax))
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "axis %lld is out of range",
                             (long long)axis);
    int src = in;
    bool coerce = x->opset < 13 && ax != s.ndim - 1;
    if (coerce) {
        int fi = ntp__onnx_add_node(x, NTP_OP_FLATTEN, "flatten", &in, 1, 1);
        if (fi < 0)
            return ntp_ctx_status(x->ctx);
        x->g->nodes[fi].a.axis = ax;
        if ((st = ntp__onnx_infer(x, fi)))
            return st;
        src = x->g->nodes[fi].out[0];
    }
    int ni = ntp__onnx_add_node(x, op, coerce ? "rows" : NULL, &src, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    x->g->nodes[ni].a.axis = coerce ? 1 : ax;
    if ((st = ntp__onnx_infer(x, ni)))
        return st;
    int out = x->g->nodes[ni].out[0];
    if (coerce && (st = ntp__onnx_reshape(x, out, &s, NULL, &out)))
        return st;
    return ntp__onnx_out_tensor(x, 0, out);
}

/* ArgMax over the last axis without keeping it, the first largest winning
 * (select_last_index 0): the IR's argmax (i32 indices where ONNX's are
 * INT64; a decoder's greedy choice, docs/decoders.md), as ntprof's export
 * writes it. */
static ntp_status map_argmax(ntp_onnx_importer *x)
{
    int in;
    ntp_status st = ntp__onnx_in_tensor(x, 0, &in);
    if (st)
        return st;
    ntp_shape s = x->g->tensors[in].shape;
    int64_t axis = ntp__onnx_attr_i(x, "axis", 0), ax;
    if (s.ndim == 0 || !ntp__onnx_axis(axis, s.ndim, &ax))
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "axis %lld is out of range",
                             (long long)axis);
    if (ax != s.ndim - 1)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                             "ArgMax over axis %lld of %d: the IR's argmax takes the last axis",
                             (long long)axis, s.ndim);
    if (ntp__onnx_attr_i(x, "select_last_index", 0) != 0)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                             "select_last_index 1: the IR's argmax takes the first largest");
    if (ntp__onnx_attr_i(x, "keepdims", 1) != 0)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                             "keepdims 1 (the default): the IR's argmax drops the axis, and its "
                             "i32 indices do not reshape");
    int ni = ntp__onnx_add_node(x, NTP_OP_ARGMAX, NULL, &in, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    return finish(x, ni);
}

/* --- binary ops ------------------------------------------------------------------------ */

/* A bias add after a bias-free fc or conv folds into it: the MatMul + Add
 * and Conv + Add that exporters write become the layer they came from.
 * Only when the layer's output has no other reader. */
static bool fold_bias(ntp_onnx_importer *x, int act_k, int const_k, ntp_status *st)
{
    ntp_onnx_value *av = ntp__onnx_in_value(x, act_k), *bv = ntp__onnx_in_value(x, const_k);
    *st = NTP_STATUS_OK;
    if (!av || !bv || av->tensor < 0 || av->consumers != 1 || av->is_output ||
        !ntp__onnx_in_is_const(x, const_k) || ntp__onnx_value_const(x, bv) || !bv->c || !bv->c->f)
        return false;
    ntp_node *p = ntp__onnx_producer(x, av->tensor);
    if (!p || p->a.bias || p->n_out != 1 ||
        (p->op != NTP_OP_FC && p->op != NTP_OP_CONV && p->op != NTP_OP_DECONV))
        return false;
    const ntp_shape *os = &x->g->tensors[av->tensor].shape, *bs = &bv->c->shape;
    int64_t units = p->op == NTP_OP_FC ? p->a.units : p->a.filters;
    int ch = p->op == NTP_OP_FC ? os->ndim - 1 : 1;
    if (bs->ndim > os->ndim || bv->c->n != units)
        return false;
    for (int d = 0; d < bs->ndim; d++) {
        int od = d + os->ndim - bs->ndim;
        if (bs->dim[d] != (od == ch ? units : 1))
            return false;
    }
    int ni = (int)(p - x->g->nodes);
    ntp_shape b = {1, {units}};
    p->a.bias = true;
    if ((*st = ntp__onnx_add_weight_value(x, ni, bv, &b)) || (*st = ntp__onnx_infer(x, ni)))
        return true;
    *st = ntp__onnx_out_tensor(x, 0, av->tensor);
    return true;
}

/* Before opset 7, a binary op broadcasts only with broadcast=1, aligning the
 * second input at `axis` (default: at the end, as numpy). */
static ntp_status legacy_operand(ntp_onnx_importer *x, int t0, int *t1)
{
    if (x->opset >= 7 || !ntp__onnx_attr_i(x, "broadcast", 0) || !ntp__onnx_attr(x, "axis"))
        return NTP_STATUS_OK;
    const ntp_shape *a = &x->g->tensors[t0].shape, *b = &x->g->tensors[*t1].shape;
    int64_t axis;
    if (!ntp__onnx_axis(ntp__onnx_attr_i(x, "axis", 0), a->ndim, &axis) || axis + b->ndim > a->ndim)
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "axis does not align the inputs");
    ntp_shape to = {(int)(a->ndim - axis), {0}};
    for (int d = 0; d < to.ndim; d++)
        to.dim[d] = d < b->ndim ? b->dim[d] : 1;
    return ntp__onnx_reshape(x, *t1, &to, "align", t1);
}

/* The op whose ONNX operator is op_type: a binary op's (NTP_BINARY_TABLE)
 * or add's and mul's (NTP_OP_TABLE); NTP_OP_COUNT if none. */
static ntp_op op_of_onnx(const char *op_type)
{
    ntp_op b = ntp__op_binary_from_onnx(op_type);
    if (b < NTP_OP_COUNT)
        return b;
    for (int op = 0; op < NTP_OP_COUNT; op++) {
        const char *o = ntp__op_onnx_name((ntp_op)op);
        if (o && !strcmp(o, op_type))
            return (ntp_op)op;
    }
    return NTP_OP_COUNT;
}

/* Add, Mul, Sum and the binary family (NTP_BINARY_TABLE: Sub, Div, Pow,
 * Max, Min, Mean, Mod, ...): the op of that ONNX operator in the op tables
 * (Sum is add). Variadic ones with more inputs than a layer takes are
 * chained. */
static ntp_status map_binary(ntp_onnx_importer *x)
{
    const char *t = x->np->op_type;
    ntp_op op = !strcmp(t, "Sum") ? NTP_OP_ADD : op_of_onnx(t);
    if (op == NTP_OP_COUNT)
        return ntp__onnx_err(x, NTP_STATUS_INTERNAL, "no op of the op table is %s", t);
    /* Mod with fmod=0 is an integer modulo (the sign of the divisor), which
     * ONNX allows on integers only. */
    if (op == NTP_OP_FMOD && ntp__onnx_attr_i(x, "fmod", 0) != 1)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                             "fmod=0 (an integer modulo); the IR's fmod is fmod=1");
    int n = (int)x->np->n_input;
    ntp_status st;
    if (n < 1)
        return ntp__onnx_err(x, NTP_STATUS_GRAPH_ERROR, "needs inputs");
    if (!strcmp(t, "Add") && n == 2) {
        for (int k = 0; k < 2; k++)
            if (fold_bias(x, k, 1 - k, &st))
                return st;
    }
    int in[64];
    if (n > 64)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "more than 64 inputs");
    for (int k = 0; k < n; k++)
        if ((st = ntp__onnx_in_tensor(x, k, &in[k])))
            return st;
    if (n == 1) /* Sum, Max, Min, Mean of one input: the input */
        return ntp__onnx_out_tensor(x, 0, in[0]);
    if (n == 2 && (st = legacy_operand(x, in[0], &in[1])))
        return st;
    if (op == NTP_OP_MEAN && n > NTP_MAX_INPUTS)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "a mean of more than %d inputs",
                             NTP_MAX_INPUTS);
    int max_in = ntp__op_max_inputs(op), acc = in[0], used = 1, step = 0;
    while (used < n) {
        int take = n - used + 1 > max_in ? max_in : n - used + 1, args[NTP_MAX_INPUTS];
        args[0] = acc;
        for (int k = 1; k < take; k++)
            args[k] = in[used++];
        char suffix[32];
        snprintf(suffix, sizeof suffix, "part%d", step++);
        int ni = ntp__onnx_add_node(x, op, used == n ? NULL : suffix, args, take, 1);
        if (ni < 0)
            return ntp_ctx_status(x->ctx);
        /* Attributes of the ONNX attribute table (none of today's binary
         * ops has one; a new one needs only its rows). */
        ntp__onnx_read_attrs(x, &x->g->nodes[ni].a, op);
        if ((st = ntp__onnx_infer(x, ni)))
            return st;
        acc = x->g->nodes[ni].out[0];
    }
    return ntp__onnx_out_tensor(x, 0, acc);
}

static ntp_status map_where(ntp_onnx_importer *x)
{
    int in[3];
    ntp_status st;
    for (int k = 0; k < 3; k++)
        if ((st = ntp__onnx_in_tensor(x, k, &in[k])))
            return st;
    int ni = ntp__onnx_add_node(x, NTP_OP_WHERE, NULL, in, 3, 1);
    return ni < 0 ? ntp_ctx_status(x->ctx) : finish(x, ni);
}

/* --- reductions -------------------------------------------------------------------------- */

static const struct {
    const char *onnx;
    ntp_op op;
} reduce_ops[] = {
    {"ReduceMean", NTP_OP_REDUCE_MEAN},      {"ReduceSum", NTP_OP_REDUCE_SUM},
    {"ReduceMax", NTP_OP_REDUCE_MAX},        {"ReduceMin", NTP_OP_REDUCE_MIN},
    {"ReduceProd", NTP_OP_REDUCE_PROD},      {"ReduceL1", NTP_OP_REDUCE_L1},
    {"ReduceL2", NTP_OP_REDUCE_L2},          {"ReduceSumSquare", NTP_OP_REDUCE_SUM_SQUARE},
    {"ReduceLogSum", NTP_OP_REDUCE_LOG_SUM}, {"ReduceLogSumExp", NTP_OP_REDUCE_LOG_SUM_EXP},
};

/* The IR's reductions keep the reduced dims; keepdims=0 adds a reshape. */
static ntp_status map_reduce(ntp_onnx_importer *x)
{
    ntp_op op = NTP_OP_COUNT;
    for (size_t i = 0; i < sizeof reduce_ops / sizeof reduce_ops[0]; i++)
        if (!strcmp(reduce_ops[i].onnx, x->np->op_type))
            op = reduce_ops[i].op;
    int64_t axes[NTP_MAX_DIMS];
    int na;
    ntp_status st;
    if (ntp__onnx_has_in(x, 1)) {
        const ntp_onnx_tensor *c;
        if ((st = ntp__onnx_in_const(x, 1, &c)))
            return st;
        if (c->n > NTP_MAX_DIMS)
            return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "too many axes");
        na = (int)c->n;
        for (int i = 0; i < na; i++)
            axes[i] = ntp__onnx_get_i(c, i);
    } else if ((na = ntp__onnx_attr_ints(x, "axes", axes, NTP_MAX_DIMS)) < 0) {
        return ntp_ctx_status(x->ctx);
    }
    int in;
    if ((st = ntp__onnx_in_tensor(x, 0, &in)))
        return st;
    if (na == 0 && ntp__onnx_attr_i(x, "noop_with_empty_axes", 0))
        return ntp__onnx_out_tensor(x, 0, in);
    bool keep = ntp__onnx_attr_i(x, "keepdims", 1) != 0;
    int ni = ntp__onnx_add_node(x, op, keep ? NULL : "reduce", &in, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    ntp_node *n = &x->g->nodes[ni];
    ntp__reduce_set(&n->a, na, axes);
    if ((st = ntp__onnx_infer(x, ni)))
        return st;
    int out = x->g->nodes[ni].out[0];
    if (!keep) {
        const ntp_shape *s = &x->g->tensors[in].shape;
        bool red[NTP_MAX_DIMS] = {false};
        for (int i = 0; i < na; i++)
            red[ntp__reduce_axes(&x->g->nodes[ni].a)[i]] = true;
        ntp_shape to = {0};
        for (int d = 0; d < s->ndim; d++)
            if (na > 0 && !red[d])
                to.dim[to.ndim++] = s->dim[d];
        if ((st = ntp__onnx_reshape(x, out, &to, NULL, &out)))
            return st;
    }
    return ntp__onnx_out_tensor(x, 0, out);
}

/* The unary and binary element-wise ops' mappers, one per op with an ONNX
 * operator in its family's table, which also gives the attributes each
 * understands. */
static const ntp_onnx_map unary_maps[NTP_OP_COUNT] = {
#define NTP_ONNX_UNARY_MAP_(e, fn, onnx, attrs, flops) \
    [NTP_OP_##e] = {onnx, map_unary, NULL, attrs},
    NTP_UNARY_TABLE(NTP_ONNX_UNARY_MAP_)
#undef NTP_ONNX_UNARY_MAP_
};

static const ntp_onnx_map binary_maps[NTP_OP_COUNT] = {
#define NTP_ONNX_BINARY_MAP_(e, fn, onnx, attrs, commutes, out, flops, post) \
    [NTP_OP_##e] = {onnx, map_binary, NULL, attrs},
    NTP_BINARY_TABLE(NTP_ONNX_BINARY_MAP_)
#undef NTP_ONNX_BINARY_MAP_
};

const ntp_onnx_map *ntp__onnx_find_family_map(const char *op_type)
{
    ntp_op op = ntp__op_unary_from_onnx(op_type);
    if (op < NTP_OP_COUNT)
        return &unary_maps[op];
    op = ntp__op_binary_from_onnx(op_type);
    return op < NTP_OP_COUNT ? &binary_maps[op] : NULL;
}

#define LEGACY "consumed_inputs"
const ntp_onnx_map ntp__onnx_map_eltwise[] = {
    {"PRelu", map_prelu, NULL, LEGACY},
    {"Clip", map_clip, NULL, "min,max," LEGACY},
    {"Softmax", map_softmax, NULL, "axis"},
    {"LogSoftmax", map_softmax, NULL, "axis"},
    {"Hardmax", map_softmax, NULL, "axis"},
    {"Add", map_binary, NULL, "broadcast,axis," LEGACY},
    {"Mul", map_binary, NULL, "broadcast,axis," LEGACY},
    {"Sum", map_binary, NULL, LEGACY},
    {"Where", map_where, NULL, ""},
    {"ReduceMean", map_reduce, NULL, "axes,keepdims"},
    {"ReduceSum", map_reduce, NULL, "axes,keepdims,noop_with_empty_axes"},
    {"ReduceMax", map_reduce, NULL, "axes,keepdims"},
    {"ReduceMin", map_reduce, NULL, "axes,keepdims"},
    {"ReduceProd", map_reduce, NULL, "axes,keepdims"},
    {"ReduceL1", map_reduce, NULL, "axes,keepdims"},
    {"ReduceL2", map_reduce, NULL, "axes,keepdims"},
    {"ReduceSumSquare", map_reduce, NULL, "axes,keepdims"},
    {"ReduceLogSum", map_reduce, NULL, "axes,keepdims"},
    {"ReduceLogSumExp", map_reduce, NULL, "axes,keepdims"},
    {"ArgMax", map_argmax, NULL, "axis,keepdims,select_last_index"},
    {NULL, NULL, NULL, NULL},
};
