/* The graph IR as an ONNX model (opset 17): ntprof export.
 *
 * Every layer becomes the ONNX operator of the same meaning, or a few of
 * them where ONNX has none (gelu and silu as their formulas, attention as
 * projections, matmuls and a softmax, the recurrent layers' outputs
 * reshaped between ONNX's [T, dirs, N, H] and the IR's [T, N, dirs·H]). The
 * weights are the ones ntp_run generates for the same seed
 * (ntp__gen_weights), or the model's own. The reader (onnx-import.c) maps
 * every pattern written here back to the layer it came from, so a model
 * exported and loaded again runs the same layers on the same weights.
 *
 * The message is built with protobuf-c's structs in memory this file owns
 * (xw_mem), packed once and written atomically (a temporary file renamed
 * into place). Weight data is referenced, not copied, until the pack. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/ctx-impl.h"
#include "graph/gen-impl.h"
#include "graph/op-onnx-impl.h"
#include "ntprof/ntprof.h"
#include "ntprof/onnx.h"
#include "onnx-export-impl.h"

/* --- memory and names ------------------------------------------------------------- */

void *ntp__xw_mem(ntp_xw *w, size_t n)
{
    if (w->failed)
        return NULL;
    if (w->n_mem == w->cap_mem) {
        size_t cap = w->cap_mem ? 2 * w->cap_mem : 256;
        void **m = realloc(w->mem, cap * sizeof *m);
        if (!m)
            goto oom;
        w->mem = m;
        w->cap_mem = cap;
    }
    void *p = calloc(1, n ? n : 1);
    if (!p)
        goto oom;
    w->mem[w->n_mem++] = p;
    return p;
oom:
    w->failed = true;
    ntp__error(w->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory writing ONNX");
    return NULL;
}

char *ntp__xw_str(ntp_xw *w, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *s = ntp__xw_mem(w, strlen(buf) + 1);
    if (s)
        strcpy(s, buf);
    return s;
}

const char *ntp__xw_name(ntp_xw *w, const char *base)
{
    char buf[600];
    snprintf(buf, sizeof buf, "%s", base);
    for (int k = 1; ntp__onnx_names_get(w->names, buf) >= 0; k++)
        snprintf(buf, sizeof buf, "%.500s_%d", base, k);
    if (!ntp__onnx_names_put(w->names, buf, 1)) {
        w->failed = true;
        ntp__error(w->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory writing ONNX");
        return NULL;
    }
    return ntp__xw_str(w, "%s", buf);
}

static bool grow(ntp_xw *w, void ***arr, size_t n, size_t *cap)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? 2 * *cap : 64;
    void **a = realloc(*arr, c * sizeof *a);
    if (!a) {
        w->failed = true;
        ntp__error(w->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory writing ONNX");
        return false;
    }
    *arr = a;
    *cap = c;
    return true;
}

/* --- nodes, attributes, initializers -------------------------------------------------- */

Onnx__NodeProto *ntp__xw_node(ntp_xw *w, const char *op, const char *name, int n_in,
                              const char *const *in, int n_out, const char *const *out)
{
    Onnx__NodeProto *n = ntp__xw_mem(w, sizeof *n);
    char **ins = ntp__xw_mem(w, (size_t)(n_in + 1) * sizeof *ins);
    char **outs = ntp__xw_mem(w, (size_t)(n_out + 1) * sizeof *outs);
    if (!n || !ins || !outs || !grow(w, (void ***)&w->nodes, w->n_nodes, &w->cap_nodes))
        return NULL;
    onnx__node_proto__init(n);
    for (int i = 0; i < n_in; i++)
        ins[i] = ntp__xw_str(w, "%s", in[i] ? in[i] : "");
    for (int i = 0; i < n_out; i++)
        outs[i] = ntp__xw_str(w, "%s", out[i]);
    n->n_input = (size_t)n_in;
    n->input = ins;
    n->n_output = (size_t)n_out;
    n->output = outs;
    n->op_type = ntp__xw_str(w, "%s", op);
    /* Node names have a namespace of their own (a layer and its output
     * tensor share a name in the markup). */
    char nb[600];
    snprintf(nb, sizeof nb, "%s", name);
    for (int k = 1; ntp__onnx_names_get(w->node_names, nb) >= 0; k++)
        snprintf(nb, sizeof nb, "%.500s_%d", name, k);
    if (!ntp__onnx_names_put(w->node_names, nb, 1)) {
        w->failed = true;
        ntp__error(w->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory writing ONNX");
        return NULL;
    }
    n->name = ntp__xw_str(w, "%s", nb);
    n->domain = ntp__xw_str(w, "%s", "");
    w->nodes[w->n_nodes++] = n;
    return w->failed ? NULL : n;
}

static Onnx__AttributeProto *attr(ntp_xw *w, Onnx__NodeProto *n, const char *name,
                                  Onnx__AttributeProto__AttributeType type)
{
    if (!n)
        return NULL;
    Onnx__AttributeProto *a = ntp__xw_mem(w, sizeof *a);
    Onnx__AttributeProto **arr = ntp__xw_mem(w, (n->n_attribute + 1) * sizeof *arr);
    if (!a || !arr)
        return NULL;
    onnx__attribute_proto__init(a);
    a->name = ntp__xw_str(w, "%s", name);
    a->has_type = 1;
    a->type = type;
    for (size_t i = 0; i < n->n_attribute; i++)
        arr[i] = n->attribute[i];
    arr[n->n_attribute++] = a;
    n->attribute = arr;
    return a;
}

void ntp__xw_attr_i(ntp_xw *w, Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = attr(w, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (a) {
        a->has_i = 1;
        a->i = v;
    }
}

void ntp__xw_attr_f(ntp_xw *w, Onnx__NodeProto *n, const char *name, double v)
{
    Onnx__AttributeProto *a = attr(w, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (a) {
        a->has_f = 1;
        a->f = (float)v;
    }
}

void ntp__xw_attr_ints(ntp_xw *w, Onnx__NodeProto *n, const char *name, const int64_t *v, int k)
{
    Onnx__AttributeProto *a = attr(w, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int64_t *c = ntp__xw_mem(w, (size_t)(k + 1) * sizeof *c);
    if (a && c) {
        memcpy(c, v, (size_t)k * sizeof *c);
        a->n_ints = (size_t)k;
        a->ints = c;
    }
}

void ntp__xw_attr_s(ntp_xw *w, Onnx__NodeProto *n, const char *name, const char *s)
{
    Onnx__AttributeProto *a = attr(w, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    char *c = ntp__xw_str(w, "%s", s);
    if (a && c) {
        a->has_s = 1;
        a->s.data = (uint8_t *)c;
        a->s.len = strlen(c);
    }
}

void ntp__xw_attr_strings(ntp_xw *w, Onnx__NodeProto *n, const char *name, const char *const *s,
                          int k)
{
    Onnx__AttributeProto *a = attr(w, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    ProtobufCBinaryData *b = ntp__xw_mem(w, (size_t)(k + 1) * sizeof *b);
    if (!a || !b)
        return;
    for (int i = 0; i < k; i++) {
        b[i].data = (uint8_t *)ntp__xw_str(w, "%s", s[i]);
        b[i].len = strlen(s[i]);
    }
    a->n_strings = (size_t)k;
    a->strings = b;
}

/* An initializer of `bytes` raw bytes at data (kept by reference). */
static const char *init(ntp_xw *w, const char *base, int32_t dt, const void *data, size_t bytes,
                        const ntp_shape *s)
{
    Onnx__TensorProto *t = ntp__xw_mem(w, sizeof *t);
    int64_t *dims = ntp__xw_mem(w, (size_t)(s->ndim + 1) * sizeof *dims);
    const char *name = base ? ntp__xw_str(w, "%s", base) : NULL;
    if (!t || !dims || !name || !grow(w, (void ***)&w->inits, w->n_inits, &w->cap_inits))
        return NULL;
    onnx__tensor_proto__init(t);
    for (int d = 0; d < s->ndim; d++)
        dims[d] = s->dim[d];
    t->n_dims = (size_t)s->ndim;
    t->dims = dims;
    t->has_data_type = 1;
    t->data_type = dt;
    t->name = (char *)name;
    t->has_raw_data = 1;
    t->raw_data.data = (uint8_t *)data;
    t->raw_data.len = bytes;
    w->inits[w->n_inits++] = t;
    return name;
}

const char *ntp__xw_f32(ntp_xw *w, const char *base, const float *data, const ntp_shape *s)
{
    return init(w, base, NTP_ONNX_FLOAT, data, (size_t)ntp_shape_numel(s) * sizeof(float), s);
}

/* A copy of n floats, owned by the message. */
const char *ntp__xw_f32_copy(ntp_xw *w, const char *base, const float *data, const ntp_shape *s)
{
    int64_t n = ntp_shape_numel(s);
    float *c = ntp__xw_mem(w, (size_t)n * sizeof *c);
    if (!c)
        return NULL;
    memcpy(c, data, (size_t)n * sizeof *c);
    return ntp__xw_f32(w, ntp__xw_name(w, base), c, s);
}

const char *ntp__xw_const(ntp_xw *w, const char *base, const float *data, const ntp_shape *s)
{
    /* A Constant node rather than an initializer: the reader counts
     * initializers as trainable parameters, Constant values as buffers. */
    int64_t n = ntp_shape_numel(s);
    float *c = ntp__xw_mem(w, (size_t)n * sizeof *c);
    Onnx__TensorProto *t = ntp__xw_mem(w, sizeof *t);
    int64_t *dims = ntp__xw_mem(w, (size_t)(s->ndim + 1) * sizeof *dims);
    const char *name = ntp__xw_name(w, base);
    if (!c || !t || !dims || !name)
        return NULL;
    memcpy(c, data, (size_t)n * sizeof *c);
    onnx__tensor_proto__init(t);
    for (int d = 0; d < s->ndim; d++)
        dims[d] = s->dim[d];
    t->n_dims = (size_t)s->ndim;
    t->dims = dims;
    t->has_data_type = 1;
    t->data_type = NTP_ONNX_FLOAT;
    t->has_raw_data = 1;
    t->raw_data.data = (uint8_t *)c;
    t->raw_data.len = (size_t)n * sizeof *c;
    const char *outs[1] = {name};
    Onnx__NodeProto *node = ntp__xw_node(w, "Constant", base, 0, NULL, 1, outs);
    Onnx__AttributeProto *a = attr(w, node, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    if (!a)
        return NULL;
    a->t = t;
    return name;
}

const char *ntp__xw_scalar(ntp_xw *w, const char *base, float v)
{
    ntp_shape s = {0};
    return ntp__xw_const(w, base, &v, &s);
}

const char *ntp__xw_i64(ntp_xw *w, const char *base, const int64_t *v, int n)
{
    int64_t *c = ntp__xw_mem(w, (size_t)(n + 1) * sizeof *c);
    if (!c)
        return NULL;
    memcpy(c, v, (size_t)n * sizeof *c);
    ntp_shape s = {1, {n}};
    return init(w, ntp__xw_name(w, base), NTP_ONNX_INT64, c, (size_t)n * sizeof *c, &s);
}

/* --- the graph -------------------------------------------------------------------------- */

static Onnx__ValueInfoProto *value_info(ntp_xw *w, const char *name, int32_t dt, const ntp_shape *s)
{
    Onnx__ValueInfoProto *v = ntp__xw_mem(w, sizeof *v);
    Onnx__TypeProto *tp = ntp__xw_mem(w, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = ntp__xw_mem(w, sizeof *tt);
    Onnx__TensorShapeProto *sp = ntp__xw_mem(w, sizeof *sp);
    Onnx__TensorShapeProto__Dimension **dims = ntp__xw_mem(w, (size_t)(s->ndim + 1) * sizeof *dims);
    if (!v || !tp || !tt || !sp || !dims)
        return NULL;
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sp);
    for (int d = 0; d < s->ndim; d++) {
        if (!(dims[d] = ntp__xw_mem(w, sizeof *dims[d])))
            return NULL;
        onnx__tensor_shape_proto__dimension__init(dims[d]);
        dims[d]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dims[d]->dim_value = s->dim[d];
    }
    sp->n_dim = (size_t)s->ndim;
    sp->dim = dims;
    tt->has_elem_type = 1;
    tt->elem_type = dt;
    tt->shape = sp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->name = ntp__xw_str(w, "%s", name);
    v->type = tp;
    return v;
}

static int32_t onnx_dtype(ntp_dtype t);

/* value_info with the dims named in sym (NULL entries: static). */
static Onnx__ValueInfoProto *value_info_sym(ntp_xw *w, const char *name, int32_t dt,
                                            const ntp_shape *s, const char *const *sym)
{
    Onnx__ValueInfoProto *v = value_info(w, name, dt, s);
    for (int d = 0; v && d < s->ndim; d++) {
        if (!sym[d])
            continue;
        Onnx__TensorShapeProto__Dimension *dm = v->type->tensor_type->shape->dim[d];
        dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
        dm->dim_param = ntp__xw_str(w, "%s", sym[d]);
    }
    return v;
}

/* A decoder (kv_attention layers; docs/onnx.md): tokens and positions are
 * written as input_ids and position_ids (INT64, their batch and sequence
 * dims symbolic), the lm_head's output as logits, each kv_attention adds
 * past_key_values.<i>.key/.value inputs and present.<i>.key/.value
 * outputs, and an argmax of the logits is written as ArgMax with the
 * output next_token (INT64, [batch, seq_len]), after the presents.
 * Returns the number of
 * kv_attention layers (0: not a decoder). */
static int decoder_layers(const ntp_graph *g)
{
    int l = 0;
    for (int i = 0; i < g->n_nodes; i++)
        l += g->nodes[i].op == NTP_OP_KV_ATTENTION;
    return l;
}

static ntp_status decoder_plan(ntp_xw *w, bool *skip, int *outs, int *n_outs)
{
    const ntp_graph *g = w->g;
    if (!(w->tname = ntp__xw_mem(w, ((size_t)g->n_tensors + 1) * sizeof *w->tname)))
        return ntp_ctx_status(w->ctx);
    int lm = -1;
    for (int i = 0; i < g->n_inputs; i++) {
        const char *nm = g->tensors[g->inputs[i]].name;
        if (strcmp(nm, "tokens") == 0)
            w->tname[g->inputs[i]] = "input_ids";
        else if (strcmp(nm, "positions") == 0)
            w->tname[g->inputs[i]] = "position_ids";
        else if (strcmp(nm, "attention_mask") == 0) /* the kv_attention layers' padding mask */
            w->tname[g->inputs[i]] = "attention_mask";
    }
    int next = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].op == NTP_OP_LM_HEAD)
            lm = g->nodes[i].out[0];
    }
    /* The greedy choice: an argmax of the logits is written as ArgMax, its
     * output next_token; any other argmax is left out. */
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == NTP_OP_ARGMAX) {
            if (lm >= 0 && g->nodes[i].in[0] == lm && next < 0)
                next = g->nodes[i].out[0];
            else
                skip[i] = true;
        }
    if (lm < 0)
        return ntp__error(w->ctx, NTP_STATUS_UNSUPPORTED,
                          "%s: a decoder exports with its lm_head's output as logits, and this "
                          "one has no lm_head",
                          g->source);
    w->tname[lm] = "logits";
    *n_outs = 0;
    outs[(*n_outs)++] = lm;
    for (int i = 0; i < 4; i++)
        if (!ntp__onnx_names_put(w->names,
                                 i == 0   ? "input_ids"
                                 : i == 1 ? "position_ids"
                                 : i == 2 ? "attention_mask"
                                          : "logits",
                                 1))
            return ntp__error(w->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    w->next_token = next;
    if (next >= 0) {
        w->tname[next] = "next_token";
        if (!ntp__onnx_names_put(w->names, "next_token", 1))
            return ntp__error(w->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    return NTP_STATUS_OK;
}

static ntp_status decoder_values(ntp_xw *w, const int *ins, int n_ins, int lm,
                                 Onnx__ValueInfoProto ***vin, size_t *n_vin,
                                 Onnx__ValueInfoProto ***vout, size_t *n_vout)
{
    const ntp_graph *g = w->g;
    int L = decoder_layers(g);
    Onnx__ValueInfoProto **in = ntp__xw_mem(w, (size_t)(n_ins + 2 * L + 1) * sizeof *in);
    Onnx__ValueInfoProto **out = ntp__xw_mem(w, (size_t)(2 + 2 * L + 1) * sizeof *out);
    if (!in || !out)
        return ntp_ctx_status(w->ctx);
    size_t ni = 0, no = 0;
    const char *seq[2] = {"batch", "seq_len"}, *lseq[3] = {"batch", "seq_len", NULL};
    /* The padding mask is Hugging Face's: over the past and the new tokens. */
    const char *total[2] = {"batch", "total"};
    for (int i = 0; i < n_ins; i++) {
        const ntp_tensor *t = &g->tensors[ins[i]];
        bool ids = w->tname[ins[i]] != NULL;
        bool mask = ids && strcmp(w->tname[ins[i]], "attention_mask") == 0;
        in[ni++] =
            ids && t->shape.ndim == 2
                ? value_info_sym(w, w->tname[ins[i]], NTP_ONNX_INT64, &t->shape, mask ? total : seq)
                : value_info(w, t->name, onnx_dtype(t->dtype), &t->shape);
    }
    out[no++] = value_info_sym(w, "logits", NTP_ONNX_FLOAT, &g->tensors[lm].shape, lseq);
    int l = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const ntp_node *n = &g->nodes[g->order[i]];
        if (n->op != NTP_OP_KV_ATTENTION)
            continue;
        const ntp_shape *qs = &g->tensors[n->in[0]].shape;
        int64_t kvh = n->a.kv_heads > 0 ? n->a.kv_heads : n->a.heads;
        ntp_shape s = {4, {qs->dim[0], kvh, 1, qs->dim[2] / n->a.heads}};
        const char *ps[4] = {"batch", NULL, "past", NULL}, *ts[4] = {"batch", NULL, "total", NULL};
        for (int kv = 0; kv < 2; kv++) {
            const char *which = kv ? "value" : "key";
            in[ni++] = value_info_sym(w, ntp__xw_str(w, "past_key_values.%d.%s", l, which),
                                      NTP_ONNX_FLOAT, &s, ps);
            out[no++] = value_info_sym(w, ntp__xw_str(w, "present.%d.%s", l, which), NTP_ONNX_FLOAT,
                                       &s, ts);
        }
        l++;
    }
    if (w->next_token >= 0) /* INT64, as ONNX's ArgMax gives */
        out[no++] =
            value_info_sym(w, "next_token", NTP_ONNX_INT64, &g->tensors[w->next_token].shape, seq);
    *vin = in;
    *vout = out;
    *n_vin = ni;
    *n_vout = no;
    return w->failed ? ntp_ctx_status(w->ctx) : NTP_STATUS_OK;
}

static int32_t onnx_dtype(ntp_dtype t)
{
    switch (t) {
    case NTP_DTYPE_I64: return NTP_ONNX_INT64;
    case NTP_DTYPE_I32: return NTP_ONNX_INT32;
    case NTP_DTYPE_I8: return NTP_ONNX_INT8;
    case NTP_DTYPE_U8: return NTP_ONNX_UINT8;
    /* Reduced-precision staging has no meaning in the exported model. */
    case NTP_DTYPE_F32:
    case NTP_DTYPE_BF16:
    case NTP_DTYPE_F16:
    case NTP_DTYPE_COUNT: break;
    }
    return NTP_ONNX_FLOAT;
}

/* Weights of node n: the model's data or the seed's, f32 (owned by w). */
static ntp_status node_weights(ntp_xw *w, const ntp_node *n, float **out)
{
    const ntp_graph *g = w->g;
    for (int k = 0; k < n->n_w; k++) {
        int64_t cnt = ntp_shape_numel(&g->tensors[n->w[k]].shape);
        if (!(out[k] = ntp__xw_mem(w, (size_t)cnt * sizeof(float))))
            return ntp_ctx_status(w->ctx);
    }
    ntp__gen_weights(g, n, out, w->seed);
    for (int k = 0; k < n->n_w; k++) {
        const ntp_tensor *t = &g->tensors[n->w[k]];
        if (!t->data)
            continue;
        if (t->data_dtype != NTP_DTYPE_F32)
            return ntp__error(w->ctx, NTP_STATUS_UNSUPPORTED, "weight '%s' holds %s data", t->name,
                              ntp_dtype_name(t->data_dtype));
        memcpy(out[k], t->data, (size_t)ntp_shape_numel(&t->shape) * sizeof(float));
    }
    return NTP_STATUS_OK;
}

/* Which layers take part: with network_only, a leading mfcc and a trailing
 * ctc_decode are dropped and their tensors become the graph's ends. */
static ntp_status plan(ntp_xw *w, bool network_only, bool *skip, int *ins, int *n_ins, int *outs,
                       int *n_outs)
{
    const ntp_graph *g = w->g;
    char names[600] = "";
    int n_inlays = 0;
    *n_ins = *n_outs = 0;
    for (int i = 0; i < g->n_inputs; i++)
        ins[(*n_ins)++] = g->inputs[i];
    for (int i = 0; i < g->n_outputs; i++)
        outs[(*n_outs)++] = g->outputs[i];
    for (int i = 0; i < g->n_nodes; i++) {
        const ntp_node *n = &g->nodes[i];
        if (n->op != NTP_OP_MFCC && n->op != NTP_OP_CTC_DECODE)
            continue;
        bool edge = false;
        if (network_only && n->op == NTP_OP_MFCC && g->tensors[n->in[0]].kind == NTP_TENSOR_INPUT &&
            g->tensors[n->in[0]].n_consumers == 1) {
            for (int k = 0; k < *n_ins; k++)
                if (ins[k] == n->in[0]) {
                    ins[k] = n->out[0];
                    edge = true;
                }
        }
        if (network_only && n->op == NTP_OP_CTC_DECODE && g->tensors[n->out[0]].is_output &&
            g->tensors[n->out[0]].n_consumers == 0) {
            for (int k = 0; k < *n_outs; k++)
                if (outs[k] == n->out[0]) {
                    outs[k] = n->in[0];
                    edge = true;
                }
        }
        if (edge) {
            skip[i] = true;
            continue;
        }
        size_t l = strlen(names);
        snprintf(names + l, sizeof names - l, "%s'%s' (%s)", n_inlays ? ", " : "", n->name,
                 ntp__op_name(n->op));
        n_inlays++;
    }
    if (n_inlays)
        return ntp__error(w->ctx, NTP_STATUS_UNSUPPORTED, "%s: %s ha%s no ONNX operator%s",
                          g->source, names, n_inlays == 1 ? "s" : "ve",
                          network_only ? " (only a leading mfcc and a trailing ctc_decode can be "
                                         "left out)"
                                       : "; ntp_onnx_export_opts.network_only exports the network "
                                         "between a leading "
                                         "mfcc and a trailing ctc_decode");
    return NTP_STATUS_OK;
}

static ntp_status build(ntp_xw *w, bool network_only, Onnx__ModelProto *m)
{
    const ntp_graph *g = w->g;
    bool *skip = calloc((size_t)g->n_nodes + 1, sizeof *skip);
    int *ins = malloc(((size_t)g->n_inputs + 1) * sizeof *ins);
    int *outs = malloc(((size_t)g->n_outputs + 1) * sizeof *outs);
    int n_ins, n_outs;
    ntp_status st = NTP_STATUS_OK;
    if (!skip || !ins || !outs) {
        st = ntp__error(w->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    if ((st = plan(w, network_only, skip, ins, &n_ins, outs, &n_outs)))
        goto done;
    bool decoder = decoder_layers(g) > 0;
    if (decoder && (st = decoder_plan(w, skip, outs, &n_outs)))
        goto done;
    /* Every IR tensor keeps its name. */
    for (int i = 0; i < g->n_tensors; i++)
        if (!ntp__onnx_names_put(w->names, g->tensors[i].name, 1)) {
            st = ntp__error(w->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            goto done;
        }
    for (int p = 0; p < g->n_nodes && !st; p++) {
        const ntp_node *n = &g->nodes[g->order[p]];
        if (skip[g->order[p]])
            continue;
        float *wd[NTP_MAX_WEIGHTS] = {0};
        if ((st = node_weights(w, n, wd)) || (st = ntp__xw_emit(w, n, wd)))
            break;
        if (w->failed)
            st = ntp_ctx_status(w->ctx);
    }
    if (st)
        goto done;
    Onnx__GraphProto *gp = ntp__xw_mem(w, sizeof *gp);
    Onnx__ValueInfoProto **vin = ntp__xw_mem(w, (size_t)(n_ins + 1) * sizeof *vin);
    Onnx__ValueInfoProto **vout = ntp__xw_mem(w, (size_t)(n_outs + 1) * sizeof *vout);
    if (!gp || !vin || !vout) {
        st = ntp_ctx_status(w->ctx);
        goto done;
    }
    onnx__graph_proto__init(gp);
    for (int i = 0; i < n_ins; i++) {
        const ntp_tensor *t = &g->tensors[ins[i]];
        vin[i] = value_info(w, t->name,
                            onnx_dtype(t->kind == NTP_TENSOR_INPUT ? t->dtype : NTP_DTYPE_F32),
                            &t->shape);
    }
    for (int i = 0; i < n_outs; i++) {
        /* ArgMax writes INT64 (the IR's argmax i32). */
        int pr = g->tensors[outs[i]].producer;
        bool am = pr >= 0 && g->nodes[pr].op == NTP_OP_ARGMAX;
        vout[i] = value_info(w, g->tensors[outs[i]].name, am ? NTP_ONNX_INT64 : NTP_ONNX_FLOAT,
                             &g->tensors[outs[i]].shape);
    }
    size_t n_vin = (size_t)n_ins, n_vout = (size_t)n_outs;
    if (decoder && (st = decoder_values(w, ins, n_ins, outs[0], &vin, &n_vin, &vout, &n_vout)))
        goto done;
    gp->name = ntp__xw_str(w, "%s", g->name);
    gp->n_node = w->n_nodes;
    gp->node = w->nodes;
    gp->n_initializer = w->n_inits;
    gp->initializer = w->inits;
    gp->n_input = n_vin;
    gp->input = vin;
    gp->n_output = n_vout;
    gp->output = vout;
    Onnx__OperatorSetIdProto *os = ntp__xw_mem(w, sizeof *os);
    Onnx__OperatorSetIdProto **osa = ntp__xw_mem(w, sizeof *osa);
    if (!os || !osa || w->failed) {
        st = ntp_ctx_status(w->ctx);
        goto done;
    }
    onnx__operator_set_id_proto__init(os);
    os->domain = ntp__xw_str(w, "%s", "");
    os->has_version = 1;
    os->version = NTP_ONNX_EXPORT_OPSET;
    osa[0] = os;
    m->has_ir_version = 1;
    m->ir_version = 8; /* the IR version of ONNX 1.12, which defines opset 17 */
    m->n_opset_import = 1;
    m->opset_import = osa;
    m->producer_name = ntp__xw_str(w, "ntprof");
    m->producer_version = ntp__xw_str(w, "%s", ntp_version());
    m->graph = gp;
    st = w->failed ? ntp_ctx_status(w->ctx) : NTP_STATUS_OK;
done:
    free(skip);
    free(ins);
    free(outs);
    return st;
}

ntp_status ntp_graph_export_onnx(ntp_ctx *ctx, const ntp_graph *g, const char *path,
                                 const ntp_onnx_export_opts *opts)
{
    static const ntp_onnx_export_opts none = {0};
    if (!g || !path)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "export: no graph or no path");
    if (!opts)
        opts = &none;
    ntp_xw w = {.ctx = ctx, .g = g, .seed = opts->seed ? opts->seed : 1};
    Onnx__ModelProto m;
    onnx__model_proto__init(&m);
    ntp_status st;
    if (!(w.names = ntp__onnx_names_new()) || !(w.node_names = ntp__onnx_names_new()))
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    else
        st = build(&w, opts->network_only, &m);
    uint8_t *buf = NULL;
    size_t len = 0;
    if (st == NTP_STATUS_OK) {
        len = onnx__model_proto__get_packed_size(&m);
        if (!(buf = malloc(len + 1)))
            st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory for %zu bytes", len);
        else
            onnx__model_proto__pack(&m, buf);
    }
    if (st == NTP_STATUS_OK) {
        /* Written as every output is (src/io/output.c): a regular file
         * is replaced atomically (a reader never sees half a model), a
         * device or FIFO written through, never replaced. */
        ntp_output *o = NULL;
        if ((st = ntp_output_open(ctx, path, &o)) == NTP_STATUS_OK) {
            if (fwrite(buf, 1, len, ntp_output_file(o)) != len) {
                st = ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: %s", path, strerror(errno));
                ntp_output_abort(o);
            } else {
                st = ntp_output_commit(ctx, o);
            }
        }
    }
    free(buf);
    for (size_t i = 0; i < w.n_mem; i++)
        free(w.mem[i]);
    free(w.mem);
    free(w.nodes);
    free(w.inits);
    ntp__onnx_names_free(w.names);
    ntp__onnx_names_free(w.node_names);
    return st;
}
