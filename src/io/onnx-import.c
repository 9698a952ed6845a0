/* ONNX models into the graph IR (docs/onnx.md).
 *
 * The importer walks the graph's nodes in a topological order. Every ONNX
 * value is either a constant known at load time (initializers, Constant
 * nodes, everything computed from them and from static shapes) or an IR
 * tensor computed at run time; a value may be both once a constant has been
 * materialised for a layer that reads it as an activation. Nodes whose
 * inputs are all constants and whose op only shapes or indexes (Shape,
 * Gather, Concat, Unsqueeze, ... see onnx-fold.c) are evaluated here, which
 * folds the shape computations PyTorch exports are full of; every other node
 * goes to its mapper (onnx-map-*.c), which adds one or more IR nodes and
 * infers their shapes at once, so that later Shape nodes see them.
 *
 * Before any of that, every node is checked against the mappers, and the
 * ones that cannot be mapped are refused together in one message. After it,
 * layers nothing reads are dropped and the graph is finalized like markup. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "graph/op-onnx-impl.h"
#include "onnx-impl.h"

/* A name not yet in `used`, made from base (base, base_1, base_2, ...),
 * into buf, and record it. */
static bool unique_name(ntp_onnx_names *used, const char *base, char *buf, size_t len)
{
    /* A base longer than buf is cut; the suffixes below keep it unique. */
    snprintf(buf, len, "%.*s", (int)(len - 1), base);
    for (int k = 1; ntp__onnx_names_get(used, buf) >= 0; k++)
        snprintf(buf, len, "%.*s_%d", (int)(len - 16), base, k);
    return ntp__onnx_names_put(used, buf, 1);
}

/* --- errors and attributes ----------------------------------------------------------- */

ntp_status ntp__onnx_err(ntp_onnx_importer *x, ntp_status st, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ntp__error(x->ctx, st, "%s: node '%s' (%s, opset %d): %s", x->src, x->node_name,
                      x->np->op_type, x->opset, msg);
}

const Onnx__AttributeProto *ntp__onnx_attr(const ntp_onnx_importer *x, const char *name)
{
    for (size_t i = 0; i < x->np->n_attribute; i++)
        if (x->np->attribute[i]->name && strcmp(x->np->attribute[i]->name, name) == 0)
            return x->np->attribute[i];
    return NULL;
}

int64_t ntp__onnx_attr_i(const ntp_onnx_importer *x, const char *name, int64_t dflt)
{
    const Onnx__AttributeProto *a = ntp__onnx_attr(x, name);
    return a && a->has_i ? a->i : dflt;
}

double ntp__onnx_attr_f(const ntp_onnx_importer *x, const char *name, double dflt)
{
    const Onnx__AttributeProto *a = ntp__onnx_attr(x, name);
    if (a && a->has_f)
        return ntp__onnx_float_value(a->f);
    return a && a->has_i ? (double)a->i : dflt;
}

void ntp__onnx_read_attrs(const ntp_onnx_importer *x, ntp_attrs *a, ntp_op op)
{
    int n;
    const ntp_onnx_attr *d = ntp__onnx_attrs(op, &n);
    for (int i = 0; i < n; i++)
        switch (d[i].type) {
        case NTP_ONNX_ATTR_FLOAT:
            ntp__onnx_attr_set_f(a, &d[i], ntp__onnx_attr_f(x, d[i].name, d[i].dflt));
            break;
        case NTP_ONNX_ATTR_INT:
            ntp__onnx_attr_set_i(a, &d[i], ntp__onnx_attr_i(x, d[i].name, (int64_t)d[i].dflt));
            break;
        case NTP_ONNX_ATTR_BOOL:
            ntp__onnx_attr_set_b(a, &d[i], ntp__onnx_attr_i(x, d[i].name, (int64_t)d[i].dflt) != 0);
            break;
        }
}

const char *ntp__onnx_attr_s(const ntp_onnx_importer *x, const char *name, const char *dflt,
                             char *buf, size_t len)
{
    const Onnx__AttributeProto *a = ntp__onnx_attr(x, name);
    if (!a || !a->has_s)
        return dflt;
    size_t n = a->s.len < len ? a->s.len : len - 1;
    memcpy(buf, a->s.data, n);
    buf[n] = '\0';
    return buf;
}

int ntp__onnx_attr_ints(ntp_onnx_importer *x, const char *name, int64_t *vals, int max)
{
    const Onnx__AttributeProto *a = ntp__onnx_attr(x, name);
    if (!a)
        return 0;
    if (a->n_ints > (size_t)max) {
        ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                      "attribute '%s' has %zu values; at most %d are "
                      "supported",
                      name, a->n_ints, max);
        return -1;
    }
    for (size_t i = 0; i < a->n_ints; i++)
        vals[i] = a->ints[i];
    return (int)a->n_ints;
}

int ntp__onnx_attr_floats(ntp_onnx_importer *x, const char *name, double *vals, int max)
{
    const Onnx__AttributeProto *a = ntp__onnx_attr(x, name);
    if (!a)
        return 0;
    if (a->n_floats > (size_t)max) {
        ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                      "attribute '%s' has %zu values; at most %d are "
                      "supported",
                      name, a->n_floats, max);
        return -1;
    }
    for (size_t i = 0; i < a->n_floats; i++)
        vals[i] = a->floats[i];
    return (int)a->n_floats;
}

/* --- attribute types ------------------------------------------------------------------- */

/* The type an attribute's payload has (UNDEFINED when it holds none, or
 * values of more than one kind). */
static int attr_payload_type(const Onnx__AttributeProto *a)
{
    int t = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED, kinds = 0;
// clang-format off
#define KIND(cond, ty)                                                                             \
    if (cond) {                                                                                    \
        t = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__##ty;                                           \
        kinds++;                                                                                   \
    }
    // clang-format on
    KIND(a->has_f, FLOAT)
    KIND(a->has_i, INT)
    KIND(a->has_s, STRING)
    KIND(a->t, TENSOR)
    KIND(a->g, GRAPH)
    KIND(a->sparse_tensor, SPARSE_TENSOR)
    KIND(a->tp, TYPE_PROTO)
    KIND(a->n_floats, FLOATS)
    KIND(a->n_ints, INTS)
    KIND(a->n_strings, STRINGS)
    KIND(a->n_tensors, TENSORS)
    KIND(a->n_graphs, GRAPHS)
    KIND(a->n_sparse_tensors, SPARSE_TENSORS)
    KIND(a->n_type_protos, TYPE_PROTOS)
#undef KIND
    return kinds == 1 ? t : ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

static const char *attr_type_name(int t)
{
    switch (t) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: return "FLOAT";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: return "INT";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: return "STRING";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: return "TENSOR";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: return "GRAPH";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: return "FLOATS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: return "INTS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: return "STRINGS";
    default: return "another type";
    }
}

/* Attributes whose type is the same in every ONNX op that has them. The
 * readers (ntp__onnx_attr_i, _ints, ...) look only at the field of their
 * type, so a value of another type would read as absent: the default. */
static const struct {
    const char *name;
    int type;
} attr_types[] = {
#define T_(n, ty)                                      \
    {                                                  \
        n, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__##ty \
    }
    T_("strides", INTS),
    T_("dilations", INTS),
    T_("pads", INTS),
    T_("kernel_shape", INTS),
    T_("output_padding", INTS),
    T_("output_shape", INTS),
    T_("perm", INTS),
    T_("axes", INTS),
    T_("group", INT),
    T_("axis", INT),
    T_("keepdims", INT),
    T_("ceil_mode", INT),
    T_("count_include_pad", INT),
    T_("transA", INT),
    T_("transB", INT),
    T_("to", INT),
    T_("storage_order", INT),
    T_("hidden_size", INT),
    T_("layout", INT),
    T_("linear_before_reset", INT),
    T_("noop_with_empty_axes", INT),
    T_("blocksize", INT),
    T_("alpha", FLOAT),
    T_("beta", FLOAT),
    T_("epsilon", FLOAT),
    T_("momentum", FLOAT),
    T_("gamma", FLOAT),
    T_("lambd", FLOAT),
    T_("clip", FLOAT),
    T_("cubic_coeff_a", FLOAT),
    T_("extrapolation_value", FLOAT),
    T_("auto_pad", STRING),
    T_("mode", STRING),
    T_("direction", STRING),
    T_("coordinate_transformation_mode", STRING),
    T_("nearest_mode", STRING),
    T_("approximate", STRING),
    T_("activations", STRINGS),
    T_("activation_alpha", FLOATS),
    T_("activation_beta", FLOATS),
#undef T_
};

/* Every attribute of the current node holds one kind of value, the kind
 * its declared type says, and the kind its name always has. */
static ntp_status check_attr_types(ntp_onnx_importer *x)
{
    for (size_t i = 0; i < x->np->n_attribute; i++) {
        const Onnx__AttributeProto *a = x->np->attribute[i];
        const char *nm = a->name ? a->name : "";
        int have = attr_payload_type(a);
        bool empty_list = have == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
        if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED &&
            !empty_list && have != (int)a->type)
            return ntp__onnx_err(x, NTP_STATUS_PARSE_ERROR,
                                 "attribute '%.64s' is declared %s but holds %s", nm,
                                 attr_type_name(a->type), attr_type_name(have));
        int got = !empty_list ? have : a->has_type ? (int)a->type : have;
        for (size_t k = 0; k < sizeof attr_types / sizeof attr_types[0]; k++)
            if (!strcmp(attr_types[k].name, nm) && got != attr_types[k].type &&
                got != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
                return ntp__onnx_err(x, NTP_STATUS_PARSE_ERROR,
                                     "attribute '%.64s' is %s; it must be %s", nm,
                                     attr_type_name(got), attr_type_name(attr_types[k].type));
    }
    return NTP_STATUS_OK;
}

/* --- values ------------------------------------------------------------------------------ */

static ntp_onnx_value *value_of(ntp_onnx_importer *x, const char *name)
{
    int i = ntp__onnx_names_get(x->values, name);
    return i < 0 ? NULL : &x->v[i];
}

static ntp_onnx_value *value_add(ntp_onnx_importer *x, const char *name)
{
    if (x->n_v == x->cap_v) {
        int cap = x->cap_v ? 2 * x->cap_v : 256;
        ntp_onnx_value *v = realloc(x->v, (size_t)cap * sizeof *v);
        if (!v)
            return NULL;
        x->v = v;
        x->cap_v = cap;
    }
    if (!ntp__onnx_names_put(x->values, name, x->n_v))
        return NULL;
    ntp_onnx_value *v = &x->v[x->n_v++];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->tensor = -1;
    return v;
}

bool ntp__onnx_has_in(const ntp_onnx_importer *x, int k)
{
    return k >= 0 && (size_t)k < x->np->n_input && x->np->input[k] && x->np->input[k][0];
}

bool ntp__onnx_has_out(const ntp_onnx_importer *x, int k)
{
    return k >= 0 && (size_t)k < x->np->n_output && x->np->output[k] && x->np->output[k][0];
}

bool ntp__onnx_out_used(const ntp_onnx_importer *x, int k)
{
    if (!ntp__onnx_has_out(x, k))
        return false;
    int i = ntp__onnx_names_get(x->values, x->np->output[k]);
    return i >= 0 && (x->v[i].consumers > 0 || x->v[i].is_output);
}

bool ntp__onnx_value_used(const ntp_onnx_importer *x, const char *name)
{
    if (!name || !name[0])
        return false;
    int i = ntp__onnx_names_get(x->values, name);
    return i >= 0 && (x->v[i].consumers > 0 || x->v[i].is_output);
}

bool ntp__onnx_out_is_graph_output(const ntp_onnx_importer *x, int k)
{
    if (!ntp__onnx_has_out(x, k))
        return false;
    int i = ntp__onnx_names_get(x->values, x->np->output[k]);
    return i >= 0 && x->v[i].is_output;
}

ntp_onnx_value *ntp__onnx_in_value(ntp_onnx_importer *x, int k)
{
    return ntp__onnx_has_in(x, k) ? value_of(x, x->np->input[k]) : NULL;
}

ntp_status ntp__onnx_value_const(ntp_onnx_importer *x, ntp_onnx_value *v)
{
    if (v->c || !v->init)
        return NTP_STATUS_OK;
    ntp_onnx_tensor *t = calloc(1, sizeof *t);
    if (!t)
        return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    char what[320];
    snprintf(what, sizeof what, "initializer '%.256s'", v->name);
    ntp_status st = ntp__onnx_tensor_decode(x->ctx, x->src, x->base_dir, v->init, what, true, t);
    if (st) {
        free(t);
        return st;
    }
    v->c = t;
    return NTP_STATUS_OK;
}

bool ntp__onnx_in_is_const(ntp_onnx_importer *x, int k)
{
    ntp_onnx_value *v = ntp__onnx_in_value(x, k);
    return v && (v->init || (v->c && !v->bound));
}

ntp_status ntp__onnx_in_const(ntp_onnx_importer *x, int k, const ntp_onnx_tensor **c)
{
    *c = NULL;
    ntp_onnx_value *v = ntp__onnx_in_value(x, k);
    if (!v)
        return ntp__onnx_err(x, NTP_STATUS_GRAPH_ERROR, "input %d is missing", k);
    ntp_status st = ntp__onnx_value_const(x, v);
    if (st)
        return st;
    if (!v->c)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                             "input %d ('%s') must be known at load time (an initializer or "
                             "computed from initializers and shapes), but it is computed at run "
                             "time",
                             k, v->name);
    *c = v->c;
    return NTP_STATUS_OK;
}

/* Add a node named `base` (made unique); its outputs take the current ONNX
 * node's output names when onnx_outputs, else made-up ones (a constant's:
 * the name of the value it holds). */
static int add_node(ntp_onnx_importer *x, ntp_op op, const char *base, bool onnx_outputs,
                    const int *in, int n_in, int n_out);

/* f32 data for a constant's values (ints and bools become their values). */
static float *const_f32(const ntp_onnx_tensor *c)
{
    float *f = malloc((size_t)c->n * sizeof *f + 1);
    if (f)
        for (int64_t k = 0; k < c->n; k++)
            f[k] = (float)ntp__onnx_get_f(c, k);
    return f;
}

ntp_status ntp__onnx_in_tensor(ntp_onnx_importer *x, int k, int *tensor)
{
    ntp_onnx_value *v = ntp__onnx_in_value(x, k);
    if (!v)
        return ntp__onnx_err(x, NTP_STATUS_GRAPH_ERROR, "input %d is missing", k);
    if (v->tensor >= 0) {
        ntp_dtype dt = x->g->tensors[v->tensor].dtype;
        /* At --precision i8 every computed activation is stored as i8: that
         * is quantised floating-point data, not ONNX integers. Only a value
         * ONNX types as an integer, or an i8 tensor outside an i8 graph (a
         * graph input), is integer data. */
        bool quantised = dt == NTP_DTYPE_I8 && x->g->precision == NTP_DTYPE_I8 && !v->is_input;
        bool onnx_int = v->dtype != NTP_ONNX_UNDEFINED && !ntp__onnx_is_float(v->dtype);
        if (onnx_int || (!quantised && (dt == NTP_DTYPE_I64 || dt == NTP_DTYPE_I32 ||
                                        dt == NTP_DTYPE_I8 || dt == NTP_DTYPE_U8)))
            return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                                 "input '%s' is %s at run time; this layer computes on "
                                 "floating-point data",
                                 v->name,
                                 onnx_int ? ntp__onnx_dtype_name(v->dtype) : ntp_dtype_name(dt));
        *tensor = v->tensor;
        return NTP_STATUS_OK;
    }
    if (v->is_input)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                             "graph input '%s' is %s: ntprof's run-time inputs are FLOAT (or "
                             "integer indices for embeddings)",
                             v->name, ntp__onnx_dtype_name(v->dtype));
    ntp_status st = ntp__onnx_value_const(x, v);
    if (st)
        return st;
    if (!v->c)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "input '%s' is not computed by ntprof",
                             v->name);
    if (v->c->n == 0)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "input '%s' is an empty constant", v->name);
    /* A constant read as an activation: a <constant> layer named after the
     * value carries it. */
    int ni = add_node(x, NTP_OP_CONSTANT, v->name, false, NULL, 0, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    ntp_node *n = &x->g->nodes[ni];
    n->a.n_shape = v->c->shape.ndim;
    for (int d = 0; d < v->c->shape.ndim; d++)
        n->a.shape[d] = v->c->shape.dim[d];
    n->a.constant.trainable =
        v->init != NULL; /* initializers are parameters, folded values buffers */
    if (v->c->f && !v->weight_taken) {
        st = ntp__onnx_add_weight_value(x, ni, v, &v->c->shape);
    } else {
        float *f = const_f32(v->c);
        st = f ? ntp__onnx_add_weight(x, ni, v->name, f, &v->c->shape)
               : ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    if (st || (st = ntp__onnx_infer(x, ni)))
        return st;
    v->tensor = x->g->nodes[ni].out[0];
    *tensor = v->tensor;
    return NTP_STATUS_OK;
}

ntp_shape ntp__onnx_in_shape(ntp_onnx_importer *x, int k)
{
    ntp_shape s = {0};
    ntp_onnx_value *v = ntp__onnx_in_value(x, k);
    if (!v)
        return s;
    if (v->tensor >= 0)
        return x->g->tensors[v->tensor].shape;
    if (v->c)
        return v->c->shape;
    if (v->has_shape)
        return v->shape;
    if (v->init) {
        s.ndim = (int)(v->init->n_dims <= NTP_MAX_DIMS ? v->init->n_dims : NTP_MAX_DIMS);
        for (int d = 0; d < s.ndim; d++)
            s.dim[d] = v->init->dims[d];
    }
    return s;
}

static ntp_onnx_value *out_value(ntp_onnx_importer *x, int k)
{
    return ntp__onnx_has_out(x, k) ? value_of(x, x->np->output[k]) : NULL;
}

ntp_status ntp__onnx_out_tensor(ntp_onnx_importer *x, int k, int tensor)
{
    ntp_onnx_value *v = out_value(x, k);
    if (v)
        v->tensor = tensor;
    return NTP_STATUS_OK;
}

ntp_status ntp__onnx_out_const(ntp_onnx_importer *x, int k, ntp_onnx_tensor *c)
{
    ntp_onnx_value *v = out_value(x, k);
    if (!v) {
        ntp__onnx_tensor_free(c);
        return NTP_STATUS_OK;
    }
    ntp__onnx_tensor_free(v->c);
    v->c = c;
    v->dtype = c->dtype;
    return NTP_STATUS_OK;
}

/* --- building IR nodes ----------------------------------------------------------------- */

static int add_tensor(ntp_onnx_importer *x, const char *base, ntp_tensor_kind kind);

int ntp__onnx_add_tensor(ntp_onnx_importer *x, const char *base, ntp_tensor_kind kind)
{
    return add_tensor(x, base, kind);
}

static int add_tensor(ntp_onnx_importer *x, const char *base, ntp_tensor_kind kind)
{
    char name[512];
    if (!unique_name(x->used, base, name, sizeof name))
        return -1;
    return ntp__graph_add_tensor(x->g, name, kind);
}

static int add_node(ntp_onnx_importer *x, ntp_op op, const char *base, bool onnx_outputs,
                    const int *in, int n_in, int n_out)
{
    char name[512];
    if (!unique_name(x->used_nodes, base, name, sizeof name))
        goto oom;
    int ni = ntp__graph_add_node(x->g, name, op, 0);
    if (ni < 0)
        goto oom;
    ntp_node *n = &x->g->nodes[ni];
    n->precision = x->g->precision;
    for (int i = 0; i < n_in; i++)
        n->in[n->n_in++] = in[i];
    for (int k = 0; k < n_out; k++) {
        /* The main node's outputs carry the ONNX value names; the helper
         * nodes of a lowering get names of their own. */
        char tb[600];
        if (op == NTP_OP_CONSTANT && !onnx_outputs)
            snprintf(tb, sizeof tb, "%s", base); /* named after the value it holds */
        else if (onnx_outputs && ntp__onnx_has_out(x, k))
            snprintf(tb, sizeof tb, "%s", x->np->output[k]);
        else
            snprintf(tb, sizeof tb, "%s:%d", name, k);
        int t = add_tensor(x, tb, NTP_TENSOR_ACTIVATION);
        if (t < 0)
            goto oom;
        n = &x->g->nodes[ni];
        x->g->tensors[t].producer = ni;
        x->g->tensors[t].producer_slot = k;
        n->out[n->n_out++] = t;
    }
    return ni;
oom:
    ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory adding a layer", x->src);
    return -1;
}

int ntp__onnx_add_node(ntp_onnx_importer *x, ntp_op op, const char *suffix, const int *in, int n_in,
                       int n_out)
{
    char base[512];
    if (suffix)
        snprintf(base, sizeof base, "%.250s/%.250s", x->node_name, suffix);
    else
        snprintf(base, sizeof base, "%s", x->node_name);
    return add_node(x, op, base, !suffix, in, n_in, n_out);
}

ntp_status ntp__onnx_add_weight(ntp_onnx_importer *x, int ni, const char *name, float *data,
                                const ntp_shape *shape)
{
    if (x->g->nodes[ni].n_w >= NTP_MAX_WEIGHTS) {
        free(data);
        return ntp__onnx_err(x, NTP_STATUS_INTERNAL, "too many weights");
    }
    int t = add_tensor(x, name, NTP_TENSOR_WEIGHT);
    if (t < 0) {
        free(data);
        return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory", x->src);
    }
    ntp_tensor *tt = &x->g->tensors[t];
    tt->shape = *shape;
    tt->dtype = x->g->precision;
    tt->data = data;
    tt->data_dtype = NTP_DTYPE_F32;
    ntp_node *n = &x->g->nodes[ni];
    n->w[n->n_w++] = t;
    return NTP_STATUS_OK;
}

ntp_status ntp__onnx_add_weight_value(ntp_onnx_importer *x, int ni, ntp_onnx_value *v,
                                      const ntp_shape *shape)
{
    ntp_status st = ntp__onnx_value_const(x, v);
    if (st)
        return st;
    if (!v->c)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                             "'%s' must be a constant (an initializer): ntprof's layers keep "
                             "their weights",
                             v->name);
    if (ntp_shape_numel(shape) != v->c->n)
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "'%s' has %lld values, expected %lld",
                             v->name, (long long)v->c->n, (long long)ntp_shape_numel(shape));
    float *data;
    if (v->c->f && !v->weight_taken) {
        /* The first layer to use an initializer takes its buffer. */
        data = v->c->f;
        v->weight_taken = true;
    } else if (!(data = const_f32(v->c))) {
        return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory", x->src);
    }
    st = ntp__onnx_add_weight(x, ni, v->name, data, shape);
    if (st && data == v->c->f)
        v->c->f = NULL; /* freed by ntp__onnx_add_weight */
    return st;
}

ntp_status ntp__onnx_infer(ntp_onnx_importer *x, int ni)
{
    ntp_node *n = &x->g->nodes[ni];
    ntp_status st = ntp__op_infer_shape(x->ctx, x->g, n);
    return st;
}

ntp_status ntp__onnx_scalar(ntp_onnx_importer *x, float v, const char *suffix, int *t)
{
    float *f = malloc(sizeof *f);
    if (!f)
        return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    *f = v;
    int ni = ntp__onnx_add_node(x, NTP_OP_CONSTANT, suffix, NULL, 0, 1);
    if (ni < 0) {
        free(f);
        return ntp_ctx_status(x->ctx);
    }
    x->g->nodes[ni].a.n_shape = 0;
    x->g->nodes[ni].a.constant.trainable = false;
    char name[300];
    snprintf(name, sizeof name, "%.250s/%s", x->node_name, suffix);
    ntp_shape one = {0};
    ntp_status st = ntp__onnx_add_weight(x, ni, name, f, &one);
    if (st || (st = ntp__onnx_infer(x, ni)))
        return st;
    *t = x->g->nodes[ni].out[0];
    return NTP_STATUS_OK;
}

ntp_node *ntp__onnx_producer(ntp_onnx_importer *x, int t)
{
    int p = x->g->tensors[t].producer;
    return p >= 0 ? &x->g->nodes[p] : NULL;
}

ntp_status ntp__onnx_reshape(ntp_onnx_importer *x, int in, const ntp_shape *to, const char *suffix,
                             int *out)
{
    /* A reshape of a reshape reads the first one's input: the intermediate
     * layer is dropped when nothing else reads it. */
    ntp_node *p = ntp__onnx_producer(x, in);
    if (p && (p->op == NTP_OP_RESHAPE || p->op == NTP_OP_FLATTEN))
        in = p->in[0];
    if (ntp_shape_equal(&x->g->tensors[in].shape, to)) {
        *out = in;
        return NTP_STATUS_OK;
    }
    int ni = ntp__onnx_add_node(x, NTP_OP_RESHAPE, suffix, &in, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    ntp_node *n = &x->g->nodes[ni];
    n->a.n_shape = to->ndim;
    for (int d = 0; d < to->ndim; d++)
        n->a.shape[d] = to->dim[d];
    if (to->ndim == 0) {
        /* The IR's reshape needs a non-empty shape: a scalar is [1] there,
         * which holds the same one value. */
        n->a.n_shape = 1;
        n->a.shape[0] = 1;
    }
    ntp_status st = ntp__onnx_infer(x, ni);
    if (st)
        return st;
    *out = x->g->nodes[ni].out[0];
    return NTP_STATUS_OK;
}

ntp_status ntp__onnx_transpose(ntp_onnx_importer *x, int in, const int64_t *perm, int r,
                               const char *suffix, int *out)
{
    int64_t p[NTP_MAX_DIMS];
    for (int d = 0; d < r; d++)
        p[d] = perm[d];
    /* A transpose of a transpose is one transpose of the first's input. */
    ntp_node *pn = ntp__onnx_producer(x, in);
    if (pn && pn->op == NTP_OP_TRANSPOSE && pn->a.n_perm == r) {
        for (int d = 0; d < r; d++)
            p[d] = pn->a.perm[perm[d]];
        in = pn->in[0];
    }
    bool identity = true;
    for (int d = 0; d < r; d++)
        identity = identity && p[d] == d;
    if (identity) {
        *out = in;
        return NTP_STATUS_OK;
    }
    int ni = ntp__onnx_add_node(x, NTP_OP_TRANSPOSE, suffix, &in, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    ntp_node *n = &x->g->nodes[ni];
    n->a.n_perm = r;
    for (int d = 0; d < r; d++)
        n->a.perm[d] = p[d];
    ntp_status st = ntp__onnx_infer(x, ni);
    if (st)
        return st;
    *out = x->g->nodes[ni].out[0];
    return NTP_STATUS_OK;
}

/* --- the mapper registry ------------------------------------------------------------------ */

const ntp_onnx_map *ntp__onnx_find_map(const char *op_type)
{
    const ntp_onnx_map *tables[] = {ntp__onnx_map_nn, ntp__onnx_map_tensor, ntp__onnx_map_eltwise};
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        for (const ntp_onnx_map *m = tables[t]; m->op_type; m++)
            if (strcmp(m->op_type, op_type) == 0)
                return m;
    return ntp__onnx_find_family_map(op_type);
}

/* Whether name is in the comma-separated list. */
static bool in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *c = strchr(p, ',');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        if (l == n && strncmp(p, name, n) == 0)
            return true;
        p = c ? c + 1 : NULL;
    }
    return false;
}

/* Why the node cannot be loaded, or NULL: an op without a mapper, another
 * domain, an opset out of range, an attribute the mapper does not know, or
 * what the mapper's check says. */
static const char *unsupported_reason(const ntp_onnx_importer *x, const Onnx__NodeProto *np,
                                      char *buf, size_t len)
{
    if (np->domain && np->domain[0] && strcmp(np->domain, "ai.onnx") != 0) {
        snprintf(buf, len, "domain '%.64s'", np->domain);
        return buf;
    }
    if (x->opset < NTP_ONNX_MIN_OPSET || x->opset > NTP_ONNX_MAX_OPSET)
        return "";
    const ntp_onnx_map *m = ntp__onnx_find_map(np->op_type);
    if (!m && !ntp__onnx_foldable(np->op_type))
        return "";
    if (m) {
        for (size_t i = 0; i < np->n_attribute; i++) {
            const char *an = np->attribute[i]->name ? np->attribute[i]->name : "";
            if (!in_list(m->attrs, an)) {
                snprintf(buf, len, "attribute '%.64s'", an);
                return buf;
            }
        }
        if (m->check)
            return m->check(x, np);
    }
    return NULL;
}

/* --- the graph ---------------------------------------------------------------------------------
 */

static const char *op_name_of(const Onnx__NodeProto *np)
{
    return np->op_type ? np->op_type : "?";
}

static void set_node(ntp_onnx_importer *x, const Onnx__NodeProto *np, int index, char *buf,
                     size_t len);

void ntp__onnx_set_node(ntp_onnx_importer *x, int i, char *buf, size_t len)
{
    set_node(x, x->gp->node[i], i, buf, len);
}

int ntp__onnx_readers(const ntp_onnx_importer *x, const char *name)
{
    int v = name && name[0] ? ntp__onnx_names_get(x->values, name) : -1;
    return v < 0 ? 0 : x->cons_start[v + 1] - x->cons_start[v];
}

int ntp__onnx_reader(const ntp_onnx_importer *x, const char *name, int i, int *slot)
{
    int v = name && name[0] ? ntp__onnx_names_get(x->values, name) : -1;
    if (v < 0 || i < 0 || i >= x->cons_start[v + 1] - x->cons_start[v])
        return -1;
    int e = x->cons_start[v] + i;
    if (slot)
        *slot = x->cons_slot[e];
    return x->cons_node[e];
}

int ntp__onnx_sole_reader(const ntp_onnx_importer *x, const char *name, int *slot)
{
    int v = name && name[0] ? ntp__onnx_names_get(x->values, name) : -1;
    if (v < 0 || x->v[v].is_output || x->cons_start[v + 1] - x->cons_start[v] != 1)
        return -1;
    return ntp__onnx_reader(x, name, 0, slot);
}

static void set_node(ntp_onnx_importer *x, const Onnx__NodeProto *np, int index, char *buf,
                     size_t len)
{
    x->np = np;
    x->node_index = index;
    if (np->name && np->name[0])
        x->node_name = np->name;
    else {
        snprintf(buf, len, "%s_%d", op_name_of(np), index);
        x->node_name = buf;
    }
}

/* Values: initializers, then graph inputs, then node outputs, each defined
 * once; consumers counted; graph outputs marked. */
static ntp_status build_values(ntp_onnx_importer *x)
{
    Onnx__GraphProto *gp = x->gp;
    for (size_t i = 0; i < gp->n_initializer; i++) {
        Onnx__TensorProto *tp = gp->initializer[i];
        if (!tp->name || !tp->name[0])
            return ntp__error(x->ctx, NTP_STATUS_PARSE_ERROR, "%s: initializer %zu has no name",
                              x->src, i);
        if (value_of(x, tp->name))
            return ntp__error(x->ctx, NTP_STATUS_PARSE_ERROR,
                              "%s: initializer '%s' is defined twice", x->src, tp->name);
        ntp_onnx_value *v = value_add(x, tp->name);
        if (!v)
            goto oom;
        v->init = tp;
        v->dtype = tp->has_data_type ? tp->data_type : NTP_ONNX_UNDEFINED;
    }
    for (size_t i = 0; i < gp->n_input; i++) {
        const char *nm = gp->input[i]->name;
        if (!nm || !nm[0])
            return ntp__error(x->ctx, NTP_STATUS_PARSE_ERROR, "%s: graph input %zu has no name",
                              x->src, i);
        ntp_onnx_value *v = value_of(x, nm);
        if (v && v->init)
            continue; /* IR < 4 lists initializers among the inputs: a constant */
        if (v)
            return ntp__error(x->ctx, NTP_STATUS_PARSE_ERROR,
                              "%s: graph input '%s' is listed "
                              "twice",
                              x->src, nm);
        if (!(v = value_add(x, nm)))
            goto oom;
        v->is_input = true;
    }
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        if (!np->op_type || !np->op_type[0])
            return ntp__error(x->ctx, NTP_STATUS_PARSE_ERROR, "%s: node %zu has no op_type", x->src,
                              i);
        /* Every reader of node fields (mappers, patterns, folding) may then
         * take output 0 as there: a node without outputs computes nothing
         * anyone can read, and is malformed. */
        if (np->n_output == 0 || !np->output[0])
            return ntp__error(
                x->ctx, NTP_STATUS_PARSE_ERROR, "%s: node %zu (%s%s%s%s) has no outputs", x->src, i,
                np->op_type, np->name && np->name[0] ? " '" : "",
                np->name && np->name[0] ? np->name : "", np->name && np->name[0] ? "'" : "");
        for (size_t k = 0; k < np->n_output; k++) {
            const char *nm = np->output[k];
            if (!nm || !nm[0])
                continue;
            if (value_of(x, nm))
                return ntp__error(x->ctx, NTP_STATUS_PARSE_ERROR,
                                  "%s: value '%s' is produced twice (by node %zu, %s, and "
                                  "before)",
                                  x->src, nm, i, np->op_type);
            if (!value_add(x, nm))
                goto oom;
        }
    }
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        for (size_t k = 0; k < np->n_input; k++) {
            const char *nm = np->input[k];
            if (!nm || !nm[0])
                continue;
            ntp_onnx_value *v = value_of(x, nm);
            if (!v)
                return ntp__error(x->ctx, NTP_STATUS_GRAPH_ERROR,
                                  "%s: node %zu (%s%s%s%s) reads '%s', which no node, input or "
                                  "initializer defines",
                                  x->src, i, np->op_type, np->name && np->name[0] ? " '" : "",
                                  np->name && np->name[0] ? np->name : "",
                                  np->name && np->name[0] ? "'" : "", nm);
            v->consumers++;
        }
    }
    /* Readers of each value, as CSR. */
    x->cons_start = calloc((size_t)x->n_v + 2, sizeof *x->cons_start);
    x->done = calloc(gp->n_node + 1, sizeof *x->done);
    int n_edges = 0;
    for (int i = 0; i < x->n_v; i++)
        n_edges += x->v[i].consumers;
    x->cons_node = malloc(((size_t)n_edges + 1) * sizeof *x->cons_node);
    x->cons_slot = malloc(((size_t)n_edges + 1) * sizeof *x->cons_slot);
    if (!x->cons_start || !x->done || !x->cons_node || !x->cons_slot)
        goto oom;
    for (int i = 0; i < x->n_v; i++)
        x->cons_start[i + 1] = x->cons_start[i] + x->v[i].consumers;
    for (int i = 0; i < x->n_v; i++)
        x->v[i].consumers = 0; /* recounted as the readers are placed */
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        for (size_t k = 0; k < np->n_input; k++) {
            if (!np->input[k] || !np->input[k][0])
                continue;
            int v = ntp__onnx_names_get(x->values, np->input[k]);
            int e = x->cons_start[v] + x->v[v].consumers++;
            x->cons_node[e] = (int)i;
            x->cons_slot[e] = (int)k;
        }
    }
    if (gp->n_output == 0)
        return ntp__error(x->ctx, NTP_STATUS_GRAPH_ERROR, "%s: the graph has no outputs", x->src);
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *nm = gp->output[i]->name;
        ntp_onnx_value *v = nm ? value_of(x, nm) : NULL;
        if (!v)
            return ntp__error(x->ctx, NTP_STATUS_GRAPH_ERROR,
                              "%s: graph output '%s' is not defined by any node, input or "
                              "initializer",
                              x->src, nm ? nm : "");
        v->is_output = true;
    }
    return NTP_STATUS_OK;
oom:
    return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory", x->src);
}

/* Kahn's algorithm over value dependencies, ties in file order. */
static ntp_status order_nodes(ntp_onnx_importer *x, int *order)
{
    Onnx__GraphProto *gp = x->gp;
    int nn = (int)gp->n_node;
    int *indeg = calloc((size_t)nn + 1, sizeof *indeg);
    int *prod = malloc(((size_t)x->n_v + 1) * sizeof *prod);
    int *start = calloc((size_t)x->n_v + 2, sizeof *start);
    int n_edges = 0;
    for (int i = 0; i < nn; i++)
        n_edges += (int)gp->node[i]->n_input;
    int *adj = malloc(((size_t)n_edges + 1) * sizeof *adj);
    int *fill = calloc((size_t)x->n_v + 1, sizeof *fill);
    ntp_status st = NTP_STATUS_OK;
    if (!indeg || !prod || !start || !adj || !fill) {
        st = ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory", x->src);
        goto done;
    }
    for (int i = 0; i < x->n_v; i++)
        prod[i] = -1;
    for (int i = 0; i < nn; i++)
        for (size_t k = 0; k < gp->node[i]->n_output; k++) {
            const char *nm = gp->node[i]->output[k];
            if (nm && nm[0])
                prod[ntp__onnx_names_get(x->values, nm)] = i;
        }
    /* Edges from each value to its readers, as CSR. */
    for (int i = 0; i < nn; i++)
        for (size_t k = 0; k < gp->node[i]->n_input; k++) {
            const char *nm = gp->node[i]->input[k];
            if (!nm || !nm[0])
                continue;
            int v = ntp__onnx_names_get(x->values, nm);
            if (prod[v] >= 0) {
                start[v + 1]++;
                indeg[i]++;
            }
        }
    for (int v = 0; v < x->n_v; v++)
        start[v + 1] += start[v];
    for (int i = 0; i < nn; i++)
        for (size_t k = 0; k < gp->node[i]->n_input; k++) {
            const char *nm = gp->node[i]->input[k];
            if (!nm || !nm[0])
                continue;
            int v = ntp__onnx_names_get(x->values, nm);
            if (prod[v] >= 0)
                adj[start[v] + fill[v]++] = i;
        }
    int head = 0, tail = 0;
    for (int i = 0; i < nn; i++)
        if (indeg[i] == 0)
            order[tail++] = i;
    while (head < tail) {
        const Onnx__NodeProto *np = gp->node[order[head++]];
        for (size_t k = 0; k < np->n_output; k++) {
            const char *nm = np->output[k];
            if (!nm || !nm[0])
                continue;
            int v = ntp__onnx_names_get(x->values, nm);
            for (int e = start[v]; e < start[v + 1]; e++)
                if (--indeg[adj[e]] == 0)
                    order[tail++] = adj[e];
        }
    }
    if (tail != nn) {
        for (int i = 0; i < nn; i++)
            if (indeg[i] > 0) {
                char name[300];
                set_node(x, gp->node[i], i, name, sizeof name);
                st = ntp__error(x->ctx, NTP_STATUS_GRAPH_ERROR,
                                "%s: node '%s' (%s) is part of a cycle: its inputs depend on its "
                                "own outputs",
                                x->src, x->node_name, op_name_of(gp->node[i]));
                break;
            }
    }
done:
    free(indeg);
    free(prod);
    free(start);
    free(adj);
    free(fill);
    return st;
}

/* One message naming every node that cannot be loaded. A list too long
 * for one line names as many as fit, then counts the rest by op type; each
 * node is also a warning (ntp_ctx_warning), for callers that want them all. */
static ntp_status check_supported(ntp_onnx_importer *x)
{
    char msg[900] = "", buf[128], name[300];
    size_t used = 0;
    int count = 0, listed = 0;
    /* The op types of the nodes left out of the list, with counts. */
    enum { MAX_TYPES = 8 };
    const char *types[MAX_TYPES];
    int type_count[MAX_TYPES], n_types = 0, other_types = 0;
    for (size_t i = 0; i < x->gp->n_node; i++) {
        const Onnx__NodeProto *np = x->gp->node[i];
        const char *why = unsupported_reason(x, np, buf, sizeof buf);
        if (!why)
            continue;
        count++;
        set_node(x, np, (int)i, name, sizeof name);
        char one[512];
        snprintf(one, sizeof one, "'%.200s' (%.64s, opset %d%s%.128s)", x->node_name, np->op_type,
                 x->opset, why[0] ? ": " : "", why);
        ntp__warn(x->ctx, "%s: unsupported node %s", x->src, one);
        size_t l = strlen(one);
        if (used + l + 200 < sizeof msg && listed == count - 1) {
            used +=
                (size_t)snprintf(msg + used, sizeof msg - used, "%s%s", listed ? ", " : "", one);
            listed++;
            continue;
        }
        int t = 0;
        while (t < n_types && strcmp(types[t], np->op_type) != 0)
            t++;
        if (t == n_types && n_types < MAX_TYPES) {
            types[n_types] = np->op_type;
            type_count[n_types++] = 0;
        }
        if (t < n_types)
            type_count[t]++;
        else
            other_types++;
    }
    if (count == 0)
        return NTP_STATUS_OK;
    if (listed < count) {
        used += (size_t)snprintf(msg + used, sizeof msg - used, " and %d more (", count - listed);
        for (int t = 0; t < n_types && used < sizeof msg; t++)
            used += (size_t)snprintf(msg + used, sizeof msg - used, "%s%.64s x%d", t ? ", " : "",
                                     types[t], type_count[t]);
        if (other_types && used < sizeof msg)
            used +=
                (size_t)snprintf(msg + used, sizeof msg - used, ", %d of other types", other_types);
        if (used < sizeof msg)
            snprintf(msg + used, sizeof msg - used, ")");
    }
    return ntp__error(x->ctx, NTP_STATUS_UNSUPPORTED, "%s: %d unsupported node%s: %s", x->src,
                      count, count == 1 ? "" : "s", msg);
}

/* --- graph inputs and symbolic dims ------------------------------------------------------- */

static bool batch_like(const char *name)
{
    static const char *const names[] = {"batch", "batch_size", "batchsize", "n", "bs", "b", "N"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(name, names[i]) == 0)
            return true;
    for (const char *p = name; *p; p++)
        if (strncasecmp(p, "batch", 5) == 0)
            return true;
    return false;
}

/* The value --set gives a symbolic dim, or 0. */
static ntp_status set_value(ntp_onnx_importer *x, const char *dim, int64_t *val, bool *found)
{
    *found = false;
    for (int i = 0; i < x->opts->n_set; i++) {
        const char *s = x->opts->set[i], *eq = s ? strchr(s, '=') : NULL;
        if (!eq || (size_t)(eq - s) != strlen(dim) || strncmp(s, dim, (size_t)(eq - s)) != 0)
            continue;
        char *end;
        errno = 0;
        long long v = strtoll(eq + 1, &end, 10);
        if (end == eq + 1 || *end || errno || v <= 0)
            return ntp__opt_error(x->ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_load_opts.set",
                                  "%s: expected a positive integer for the symbolic dim '%s'", s,
                                  dim);
        *val = v;
        *found = true;
    }
    return NTP_STATUS_OK;
}

static ntp_status add_param(ntp_onnx_importer *x, const char *name, int64_t value)
{
    ntp_graph *g = x->g;
    for (int i = 0; i < g->n_params; i++)
        if (strcmp(g->params[i].name, name) == 0)
            return NTP_STATUS_OK;
    ntp_param *p = realloc(g->params, ((size_t)g->n_params + 1) * sizeof *p);
    if (!p)
        return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    g->params = p;
    char val[32];
    snprintf(val, sizeof val, "%lld", (long long)value);
    ntp_param *q = &g->params[g->n_params];
    q->name = ntp__strdup(name);
    q->value = ntp__strdup(val);
    q->line = 0;
    if (!q->name || !q->value) {
        free(q->name);
        free(q->value);
        return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    g->n_params++;
    return NTP_STATUS_OK;
}

static ntp_dtype input_dtype(int32_t dt, bool *ok)
{
    *ok = true;
    switch (dt) {
    case NTP_ONNX_FLOAT: return NTP_DTYPE_F32;
    case NTP_ONNX_INT64: return NTP_DTYPE_I64;
    case NTP_ONNX_INT32: return NTP_DTYPE_I32;
    case NTP_ONNX_INT8: return NTP_DTYPE_I8;
    case NTP_ONNX_UINT8: return NTP_DTYPE_U8;
    default: *ok = false; return NTP_DTYPE_F32;
    }
}

/* Graph inputs with their shapes; symbolic dims bound by --set or, when
 * batch-like, --batch (docs/onnx.md). Inputs that only feed load-time
 * computations are dropped with the unused layers at the end. */
static ntp_status make_inputs(ntp_onnx_importer *x)
{
    bool batch_used = false;
    /* Inputs whose batch was assumed 1: one warning for them all. */
    int n_assumed = 0;
    char assumed[256] = "", assumed_sym[64] = "batch";
    for (size_t i = 0; i < x->gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = x->gp->input[i];
        ntp_onnx_value *v = value_of(x, vi->name);
        /* A constant given at load time (onnx-kv.c's stand-in for a decoder's
         * attention_mask) is not a run-time input. */
        if (!v || v->init || (v->c && !v->bound))
            continue;
        const Onnx__TypeProto *tp = vi->type;
        if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type ||
            !tp->tensor_type->has_elem_type)
            return ntp__error(x->ctx, NTP_STATUS_UNSUPPORTED,
                              "%s: graph input '%s' is not a tensor with an element type", x->src,
                              vi->name);
        v->dtype = tp->tensor_type->elem_type;
        const Onnx__TensorShapeProto *sp = tp->tensor_type->shape;
        ntp_shape s = {0};
        if (!sp)
            return ntp__error(x->ctx, NTP_STATUS_UNSUPPORTED,
                              "%s: graph input '%s' has no shape: ntprof needs static shapes",
                              x->src, vi->name);
        if (sp->n_dim > NTP_MAX_DIMS)
            return ntp__error(x->ctx, NTP_STATUS_UNSUPPORTED,
                              "%s: graph input '%s' has %zu dims; at most %d are supported", x->src,
                              vi->name, sp->n_dim, NTP_MAX_DIMS);
        s.ndim = (int)sp->n_dim;
        for (int d = 0; d < s.ndim; d++) {
            const Onnx__TensorShapeProto__Dimension *dm = sp->dim[d];
            if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
                if (dm->dim_value <= 0)
                    return ntp__error(x->ctx, NTP_STATUS_UNSUPPORTED,
                                      "%s: graph input '%s' dim %d is %lld: ntprof tensors have "
                                      "positive dims",
                                      x->src, vi->name, d, (long long)dm->dim_value);
                s.dim[d] = dm->dim_value;
                continue;
            }
            const char *sym =
                dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                        dm->dim_param && dm->dim_param[0]
                    ? dm->dim_param
                    : NULL;
            int64_t val = 0;
            bool found = false;
            ntp_status st;
            if (sym && (st = set_value(x, sym, &val, &found)))
                return st;
            bool batch = sym ? batch_like(sym) : d == 0;
            if (!found && batch && x->opts->batch > 0) {
                val = x->opts->batch;
                found = true;
            }
            if (!found && batch) {
                val = 1;
                if (n_assumed++ == 0 && sym)
                    snprintf(assumed_sym, sizeof assumed_sym, "%s", sym);
                size_t used = strlen(assumed);
                if (n_assumed <= 3)
                    snprintf(assumed + used, sizeof assumed - used, "%s'%s' dim %d",
                             n_assumed > 1 ? ", " : "", vi->name, d);
                found = true;
            }
            if (!found)
                return ntp__error(x->ctx, NTP_STATUS_INVALID_ARGUMENT,
                                  "%s: input '%s' dim %d is symbolic ('%s'): give its value with "
                                  "ntp_load_opts.set %s=N",
                                  x->src, vi->name, d, sym ? sym : "unnamed", sym ? sym : "NAME");
            if (batch) {
                batch_used = true;
                /* The first batch-like dim is the graph's batch, as it is
                 * the value of its param "batch". */
                if (x->g->batch == 0)
                    x->g->batch = val;
                if ((st = add_param(x, "batch", val)))
                    return st;
            }
            if (sym && (st = add_param(x, sym, val)))
                return st;
            s.dim[d] = val;
        }
        v->shape = s;
        v->has_shape = true;
        bool ok;
        ntp_dtype dt = input_dtype(v->dtype, &ok);
        if (!ok) {
            /* Inputs of other types (bool masks, doubles) are loadable only
             * when nothing reads them at run time: they stay without a tensor
             * and a layer that needs one says so. */
            continue;
        }
        int t = add_tensor(x, vi->name, NTP_TENSOR_INPUT);
        if (t < 0)
            return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        x->g->tensors[t].shape = s;
        x->g->tensors[t].dtype = dt;
        x->g->tensors[t].layout = s.ndim >= 3 && s.ndim <= 5 ? NTP_LAYOUT_NCHW : NTP_LAYOUT_ANY;
        int *in = realloc(x->g->inputs, ((size_t)x->g->n_inputs + 1) * sizeof *in);
        if (!in)
            return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        x->g->inputs = in;
        in[x->g->n_inputs++] = t;
        v->tensor = t;
    }
    if (n_assumed > 0)
        ntp__warn(x->ctx,
                  "%s: %d input%s %s a symbolic batch dim (%s%s): batch 1 assumed "
                  "(ntp_load_opts.batch or ntp_load_opts.set %s=N to choose)",
                  x->src, n_assumed, n_assumed == 1 ? "" : "s", n_assumed == 1 ? "has" : "have",
                  assumed, n_assumed > 3 ? ", ..." : "", assumed_sym);
    if (x->opts->batch > 0 && !batch_used)
        return ntp__opt_error(x->ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_load_opts.batch",
                              "%lld: %s has no symbolic batch dim (its inputs have static "
                              "shapes)",
                              (long long)x->opts->batch, x->src);
    /* Every --set must name a symbolic dim. */
    for (int i = 0; i < x->opts->n_set; i++) {
        const char *s = x->opts->set[i], *eq = s ? strchr(s, '=') : NULL;
        if (!eq)
            return ntp__error_at(
                x->ctx, NTP_STATUS_INVALID_ARGUMENT,
                &(ntp__where){.option = "ntp_load_opts.set", .expected = "NAME=VALUE"},
                "%s: expected NAME=VALUE", s ? s : "");
        bool known = false;
        for (int p = 0; p < x->g->n_params && !known; p++)
            known = strlen(x->g->params[p].name) == (size_t)(eq - s) &&
                    strncmp(x->g->params[p].name, s, (size_t)(eq - s)) == 0;
        if (!known)
            return ntp__opt_error(x->ctx, NTP_STATUS_UNKNOWN_NAME, "ntp_load_opts.set",
                                  "%s: %s has no symbolic dim '%.*s'", s, x->src, (int)(eq - s), s);
    }
    return NTP_STATUS_OK;
}

/* Bound values for graph inputs (the conformance driver's). */
static ntp_status apply_binds(ntp_onnx_importer *x, const ntp_onnx_bind *binds, int n)
{
    for (int i = 0; i < n; i++) {
        ntp_onnx_value *v = value_of(x, binds[i].name);
        if (!v || !v->is_input)
            continue;
        const ntp_onnx_tensor *b = binds[i].value;
        ntp_onnx_tensor *c = ntp__onnx_tensor_new(b->dtype, &b->shape);
        if (!c)
            return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        if (b->f)
            memcpy(c->f, b->f, (size_t)b->n * sizeof *c->f);
        else
            memcpy(c->i, b->i, (size_t)b->n * sizeof *c->i);
        ntp__onnx_tensor_free(v->c);
        v->c = c;
        v->bound = true;
    }
    return NTP_STATUS_OK;
}

/* --- outputs, unused layers ------------------------------------------------------------------ */

/* Graph outputs in ONNX order. An output that is a constant becomes a
 * <constant> layer; one that is a graph input, or a tensor already given
 * another output's name, gets a copy (<memcpy>); otherwise the tensor takes
 * the output's name. */
static ntp_status make_outputs(ntp_onnx_importer *x)
{
    ntp_graph *g = x->g;
    g->outputs = malloc((x->gp->n_output + 1) * sizeof *g->outputs);
    if (!g->outputs)
        return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    static const Onnx__NodeProto none = ONNX__NODE_PROTO__INIT;
    for (size_t i = 0; i < x->gp->n_output; i++) {
        const char *nm = x->gp->output[i]->name;
        ntp_onnx_value *v = value_of(x, nm);
        x->np = &none;
        x->node_name = nm;
        if (v->tensor < 0) {
            if (v->c && !ntp__onnx_is_float(v->c->dtype))
                return ntp__error(x->ctx, NTP_STATUS_UNSUPPORTED,
                                  "%s: graph output '%s' is a constant %s tensor: ntprof's "
                                  "graphs compute floating-point outputs",
                                  x->src, nm, ntp__onnx_dtype_name(v->c->dtype));
            if (!v->c && !v->init)
                return ntp__error(x->ctx, NTP_STATUS_UNSUPPORTED,
                                  "%s: graph output '%s' (%s) is not computed by ntprof", x->src,
                                  nm, ntp__onnx_dtype_name(v->dtype));
            /* A made-up node reading the value as its input 0. */
            Onnx__NodeProto fake = ONNX__NODE_PROTO__INIT;
            char *inputs[1] = {(char *)nm};
            fake.n_input = 1;
            fake.input = inputs;
            fake.op_type = (char *)"Constant";
            x->np = &fake;
            int t;
            ntp_status st = ntp__onnx_in_tensor(x, 0, &t);
            x->np = &none;
            if (st)
                return st;
        }
        int t = v->tensor;
        bool taken = false;
        for (int j = 0; j < g->n_outputs; j++)
            taken = taken || g->outputs[j] == t;
        if (g->tensors[t].kind == NTP_TENSOR_INPUT || taken ||
            (strcmp(g->tensors[t].name, nm) != 0 && ntp__onnx_names_get(x->used, nm) >= 0)) {
            int ni = ntp__onnx_add_node(x, NTP_OP_MEMCPY, "copy", &t, 1, 1);
            if (ni < 0)
                return ntp_ctx_status(x->ctx);
            ntp_status st = ntp__onnx_infer(x, ni);
            if (st)
                return st;
            t = g->nodes[ni].out[0];
        }
        if (strcmp(g->tensors[t].name, nm) != 0) {
            char *dup = ntp__strdup(nm);
            if (!dup || !ntp__onnx_names_put(x->used, nm, 1)) {
                free(dup);
                return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            }
            free(g->tensors[t].name);
            g->tensors[t].name = dup;
        }
        g->outputs[g->n_outputs++] = t;
    }
    return NTP_STATUS_OK;
}

/* Drop the layers nothing reads (the intermediates of folded patterns, the
 * unused outputs of a model) and the inputs and weights only they used,
 * then renumber. */
static ntp_status prune(ntp_onnx_importer *x)
{
    ntp_graph *g = x->g;
    int nt = g->n_tensors, nn = g->n_nodes;
    bool *live_t = calloc((size_t)nt + 1, 1), *live_n = calloc((size_t)nn + 1, 1);
    int *tmap = malloc(((size_t)nt + 1) * sizeof *tmap),
        *nmap = malloc(((size_t)nn + 1) * sizeof *nmap);
    if (!live_t || !live_n || !tmap || !nmap) {
        free(live_t);
        free(live_n);
        free(tmap);
        free(nmap);
        return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 0; i < g->n_outputs; i++)
        live_t[g->outputs[i]] = true;
    /* Nodes were added in an order where producers come first, except the
     * layers a rewrite added after mapping (onnx-kv.c): sweep until
     * nothing changes (once more than the usual one pass). */
    for (bool changed = true; changed;) {
        changed = false;
        for (int i = nn - 1; i >= 0; i--) {
            const ntp_node *n = &g->nodes[i];
            if (live_n[i])
                continue;
            for (int k = 0; k < n->n_out && !live_n[i]; k++)
                live_n[i] = live_t[n->out[k]];
            if (!live_n[i])
                continue;
            changed = true;
            for (int k = 0; k < n->n_out; k++)
                live_t[n->out[k]] = true;
            for (int k = 0; k < n->n_in; k++)
                live_t[n->in[k]] = true;
            for (int k = 0; k < n->n_w; k++)
                live_t[n->w[k]] = true;
        }
    }
    int t2 = 0, n2 = 0;
    for (int i = 0; i < nt; i++) {
        tmap[i] = live_t[i] ? t2 : -1;
        if (live_t[i])
            g->tensors[t2++] = g->tensors[i];
        else {
            free(g->tensors[i].name);
            free(g->tensors[i].data);
        }
    }
    for (int i = 0; i < nn; i++) {
        nmap[i] = live_n[i] ? n2 : -1;
        if (live_n[i])
            g->nodes[n2++] = g->nodes[i];
        else {
            free(g->nodes[i].name);
            free(g->nodes[i].backend);
            free(g->nodes[i].a.alphabet);
        }
    }
    g->n_tensors = t2;
    g->n_nodes = n2;
    for (int i = 0; i < t2; i++)
        if (g->tensors[i].producer >= 0)
            g->tensors[i].producer = nmap[g->tensors[i].producer];
    for (int i = 0; i < n2; i++) {
        ntp_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_in; k++)
            n->in[k] = tmap[n->in[k]];
        for (int k = 0; k < n->n_out; k++)
            n->out[k] = tmap[n->out[k]];
        for (int k = 0; k < n->n_w; k++)
            n->w[k] = tmap[n->w[k]];
    }
    int ni = 0;
    for (int i = 0; i < g->n_inputs; i++)
        if (tmap[g->inputs[i]] >= 0)
            g->inputs[ni++] = tmap[g->inputs[i]];
    g->n_inputs = ni;
    for (int i = 0; i < g->n_outputs; i++)
        g->outputs[i] = tmap[g->outputs[i]];
    for (int i = 0; i < x->n_v; i++)
        if (x->v[i].tensor >= 0)
            x->v[i].tensor = tmap[x->v[i].tensor];
    free(live_t);
    free(live_n);
    free(tmap);
    free(nmap);
    return NTP_STATUS_OK;
}

/* --- the whole load ------------------------------------------------------------------------------
 */

static void importer_free(ntp_onnx_importer *x)
{
    for (int i = 0; i < x->n_v; i++) {
        ntp_onnx_tensor *c = x->v[i].c;
        if (c && x->v[i].weight_taken)
            c->f = NULL; /* the graph owns it now */
        ntp__onnx_tensor_free(c);
    }
    free(x->v);
    free(x->cons_start);
    free(x->cons_node);
    free(x->cons_slot);
    free(x->done);
    ntp__onnx_names_free(x->values);
    ntp__onnx_names_free(x->used);
    ntp__onnx_names_free(x->used_nodes);
    free(x->base_dir);
    if (x->model)
        protobuf_c_message_free_unpacked(&x->model->base, NULL);
}

/* A graph name from the path: its file name without the extension. */
static void stem(const char *path, char *buf, size_t len)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    snprintf(buf, len, "%s", b);
    char *dot = strrchr(buf, '.');
    if (dot && dot != buf)
        *dot = '\0';
}

static ntp_status import(ntp_onnx_importer *x, const ntp_onnx_bind *binds, int n_binds)
{
    Onnx__ModelProto *m = x->model;
    if (!m->graph)
        return ntp__error(x->ctx, NTP_STATUS_PARSE_ERROR,
                          "%s: the model has no graph (is it an ONNX model?)", x->src);
    if (!m->has_ir_version || m->ir_version < 1)
        return ntp__error(x->ctx, NTP_STATUS_PARSE_ERROR,
                          "%s: the model has no IR version (is it an ONNX model?)", x->src);
    x->gp = m->graph;
    /* Models before IR 3 have no imports and mean opset 1; a model that
     * imports only other domains has no default-domain ops (opset 0: any it
     * has are refused with the unsupported nodes). */
    x->opset = m->n_opset_import == 0 ? 1 : 0;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if ((!o->domain || !o->domain[0] || strcmp(o->domain, "ai.onnx") == 0) && o->has_version)
            x->opset = o->version > 1000 ? 1000 : o->version < 0 ? 0 : (int)o->version;
    }
    if (x->opset != 0 && (x->opset < NTP_ONNX_MIN_OPSET || x->opset > NTP_ONNX_MAX_OPSET))
        return ntp__error(x->ctx, NTP_STATUS_UNSUPPORTED,
                          "%s: opset %d is not supported: ntprof reads opsets %d to %d", x->src,
                          x->opset, NTP_ONNX_MIN_OPSET, NTP_ONNX_MAX_OPSET);
    if (x->gp->n_sparse_initializer > 0)
        return ntp__error(x->ctx, NTP_STATUS_UNSUPPORTED,
                          "%s: sparse initializers are not "
                          "supported",
                          x->src);
    ntp_status st;
    if ((st = ntp__onnx_kv_prepare(x)) || (st = build_values(x)) || (st = check_supported(x)))
        return st;
    int *order = malloc((x->gp->n_node + 1) * sizeof *order);
    if (!order)
        return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    if ((st = order_nodes(x, order))) {
        free(order);
        return st;
    }
    char gname[256];
    if (x->gp->name && x->gp->name[0])
        snprintf(gname, sizeof gname, "%s", x->gp->name);
    else
        stem(x->src, gname, sizeof gname);
    x->g = ntp__graph_new(gname, x->src);
    if (!x->g) {
        free(order);
        return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    /* The override was checked by the loader (load.c). */
    if (x->opts->set_precision)
        x->g->precision = x->opts->precision;
    if ((st = ntp__onnx_kv_params(x)) || (st = make_inputs(x)) ||
        (st = apply_binds(x, binds, n_binds))) {
        free(order);
        return st;
    }
    char name[300];
    for (size_t i = 0; i < x->gp->n_node && !st; i++) {
        const Onnx__NodeProto *np = x->gp->node[order[i]];
        if (x->done[order[i]])
            continue;
        set_node(x, np, order[i], name, sizeof name);
        bool matched = false;
        if ((st = check_attr_types(x)) || (st = ntp__onnx_patterns(x, &matched)) || matched)
            continue;
        /* Shape-computation nodes on constants are evaluated now. */
        bool fold = ntp__onnx_foldable(np->op_type);
        for (size_t k = 0; fold && k < np->n_input; k++) {
            if (!np->input[k] || !np->input[k][0])
                continue;
            ntp_onnx_value *v = value_of(x, np->input[k]);
            bool shape_only =
                (strcmp(np->op_type, "Shape") == 0 || strcmp(np->op_type, "Size") == 0) && k == 0;
            fold = v->init || (v->c && !v->bound) ||
                   (shape_only && (v->tensor >= 0 || v->c || v->has_shape));
        }
        const ntp_onnx_map *mp = ntp__onnx_find_map(np->op_type);
        if (fold || !mp)
            st = ntp__onnx_fold(x);
        else
            st = mp->map(x);
    }
    free(order);
    if (st || (st = ntp__onnx_kv_rewrite(x)) || (st = make_outputs(x)) ||
        (st = ntp__onnx_kv_outputs(x)) || (st = prune(x)))
        return st;
    return ntp__graph_finalize(x->ctx, x->g, x->opts->max_memory);
}

/* Import an unpacked model (taking it and base_dir over). */
static ntp_status load_model(ntp_ctx *ctx, const char *src, char *base_dir, Onnx__ModelProto *m,
                             const ntp_load_opts *opts, const ntp_onnx_bind *binds, int n_binds,
                             ntp_graph **out)
{
    static const ntp_load_opts none = {0};
    ntp_onnx_importer x = {
        .ctx = ctx, .src = src, .base_dir = base_dir, .opts = opts ? opts : &none, .model = m};
    x.values = ntp__onnx_names_new();
    x.used = ntp__onnx_names_new();
    x.used_nodes = ntp__onnx_names_new();
    ntp_status st = !x.values || !x.used || !x.used_nodes
                        ? ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory")
                        : import(&x, binds, n_binds);
    ntp_graph *g = x.g;
    importer_free(&x);
    if (st) {
        ntp_graph_free(g);
        return st;
    }
    *out = g;
    return NTP_STATUS_OK;
}

ntp_status ntp__onnx_load_file(ntp_ctx *ctx, const char *path, const ntp_load_opts *opts,
                               const ntp_onnx_bind *binds, int n_binds, ntp_graph **out)
{
    *out = NULL;
    const uint8_t *buf;
    size_t len;
    ntp_status st = ntp__onnx_map_file(ctx, path, &buf, &len);
    if (st)
        return st;
    /* The memory budget covers parsing too: unpacking copies what the file
     * holds, so a file over the budget is refused unread. */
    if (opts && opts->max_memory > 0 && (uint64_t)len > (uint64_t)opts->max_memory) {
        ntp__onnx_unmap_file(buf, len);
        return ntp__error(ctx, NTP_STATUS_MEMORY_BUDGET,
                          "%s: the file is %zu bytes, more than the memory budget of %lld bytes",
                          path, len, (long long)opts->max_memory);
    }
    /* Unpacking copies everything it keeps: the mapping goes right after. */
    Onnx__ModelProto *m = NULL;
    st = ntp__onnx_unpack_model(ctx, path, buf, len, &m);
    ntp__onnx_unmap_file(buf, len);
    if (st)
        return st;
    /* External data is looked up next to the model. */
    const char *slash = strrchr(path, '/');
    char *dir =
        slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : ntp__strdup(".");
    if (!dir) {
        protobuf_c_message_free_unpacked(&m->base, NULL);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    return load_model(ctx, path, dir, m, opts, binds, n_binds, out);
}

ntp_status ntp__onnx_load_memory(ntp_ctx *ctx, const void *buf, size_t len, const char *name,
                                 const ntp_load_opts *opts, const ntp_onnx_bind *binds, int n_binds,
                                 ntp_graph **out)
{
    *out = NULL;
    const char *src = name ? name : "<memory>";
    Onnx__ModelProto *m = NULL;
    ntp_status st = ntp__onnx_unpack_model(ctx, src, buf, len, &m);
    if (st)
        return st;
    return load_model(ctx, src, NULL, m, opts, binds, n_binds, out);
}
