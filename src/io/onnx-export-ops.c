/* One IR layer as ONNX nodes (opset 17). The node that produces the layer's
 * output carries the layer's name, so that loading the model back gives the
 * same layer names; helper nodes are named "<layer>/<what>". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "graph/op-onnx-impl.h"
#include "onnx-export-impl.h"

typedef struct em {
    ntp_xw *w;
    const ntp_graph *g;
    const ntp_node *n;
    float *const *wd;
} em;

static const char *in_name(const em *e, int k)
{
    int t = e->n->in[k];
    return e->w->tname && e->w->tname[t] ? e->w->tname[t] : e->g->tensors[t].name;
}
static const char *out_name(const em *e, int k)
{
    int t = e->n->out[k];
    return e->w->tname && e->w->tname[t] ? e->w->tname[t] : e->g->tensors[t].name;
}
static const ntp_shape *in_shape(const em *e, int k)
{
    return &e->g->tensors[e->n->in[k]].shape;
}
static const ntp_shape *out_shape(const em *e, int k)
{
    return &e->g->tensors[e->n->out[k]].shape;
}

/* Weight k as an initializer named after the IR tensor, with shape s (NULL:
 * its own). */
static const char *weight(const em *e, int k, const ntp_shape *s)
{
    const ntp_tensor *t = &e->g->tensors[e->n->w[k]];
    return ntp__xw_f32(e->w, t->name, e->wd[k], s ? s : &t->shape);
}

static const char *tmp(const em *e, const char *what)
{
    char b[600];
    snprintf(b, sizeof b, "%.400s/%s", e->n->name, what);
    return ntp__xw_name(e->w, b);
}

static const char *helper_name(const em *e, const char *what)
{
    return ntp__xw_str(e->w, "%.400s/%s", e->n->name, what);
}

/* A node; `main` names it after the layer. */
static Onnx__NodeProto *node(const em *e, const char *op, const char *what, int n_in,
                             const char *const *in, const char *out)
{
    const char *outs[1] = {out};
    return ntp__xw_node(e->w, op, what ? helper_name(e, what) : e->n->name, n_in, in, 1, outs);
}

static Onnx__NodeProto *node1(const em *e, const char *op, const char *what, const char *a,
                              const char *out)
{
    const char *in[1] = {a};
    return node(e, op, what, 1, in, out);
}

static Onnx__NodeProto *node2(const em *e, const char *op, const char *what, const char *a,
                              const char *b, const char *out)
{
    const char *in[2] = {a, b};
    return node(e, op, what, 2, in, out);
}

static const char *shape_init(const em *e, const ntp_shape *s)
{
    return ntp__xw_i64(e->w, helper_name(e, "shape"), s->dim, s->ndim);
}

static Onnx__NodeProto *reshape(const em *e, const char *what, const char *a, const ntp_shape *to,
                                const char *out)
{
    return node2(e, "Reshape", what, a, shape_init(e, to), out);
}

static Onnx__NodeProto *transpose(const em *e, const char *what, const char *a, const int64_t *perm,
                                  int r, const char *out)
{
    Onnx__NodeProto *t = node1(e, "Transpose", what, a, out);
    ntp__xw_attr_ints(e->w, t, "perm", perm, r);
    return t;
}

static void spatial(const em *e, Onnx__NodeProto *o, bool dilations)
{
    const ntp_attrs *a = &e->n->a;
    ntp__xw_attr_ints(e->w, o, "kernel_shape", a->kernel, a->nk);
    ntp__xw_attr_ints(e->w, o, "strides", a->stride, a->nk);
    ntp__xw_attr_ints(e->w, o, "pads", a->pad, 2 * a->nk);
    if (dilations)
        ntp__xw_attr_ints(e->w, o, "dilations", a->dilation, a->nk);
}

/* --- dense ---------------------------------------------------------------------------- */

static ntp_status fc(const em *e)
{
    const ntp_tensor *wt = &e->g->tensors[e->n->w[0]];
    int64_t units = wt->shape.dim[0], k = wt->shape.dim[1];
    if (in_shape(e, 0)->ndim == 2) {
        /* Gemm with transB: W as it is. */
        const char *in[3] = {in_name(e, 0), weight(e, 0, NULL),
                             e->n->a.bias ? weight(e, 1, NULL) : ""};
        Onnx__NodeProto *o = node(e, "Gemm", NULL, e->n->a.bias ? 3 : 2, in, out_name(e, 0));
        ntp__xw_attr_i(e->w, o, "transB", 1);
        return NTP_STATUS_OK;
    }
    /* Any other rank: MatMul with Wᵀ, then the bias. */
    float *t = ntp__xw_mem(e->w, (size_t)(units * k) * sizeof *t);
    if (!t)
        return ntp_ctx_status(e->w->ctx);
    for (int64_t i = 0; i < units; i++)
        for (int64_t j = 0; j < k; j++)
            t[j * units + i] = e->wd[0][i * k + j];
    ntp_shape ts = {2, {k, units}};
    const char *wn = ntp__xw_f32(e->w, ntp__xw_name(e->w, wt->name), t, &ts);
    if (!e->n->a.bias) {
        node2(e, "MatMul", NULL, in_name(e, 0), wn, out_name(e, 0));
        return NTP_STATUS_OK;
    }
    const char *mm = tmp(e, "matmul");
    node2(e, "MatMul", NULL, in_name(e, 0), wn, mm);
    node2(e, "Add", "bias", mm, weight(e, 1, NULL), out_name(e, 0));
    return NTP_STATUS_OK;
}

static const char *swap_last(const em *e, const char *what, const char *a, int r)
{
    int64_t perm[NTP_MAX_DIMS];
    for (int d = 0; d < r; d++)
        perm[d] = d;
    perm[r - 2] = r - 1;
    perm[r - 1] = r - 2;
    const char *o = tmp(e, what);
    transpose(e, what, a, perm, r, o);
    return o;
}

static ntp_status matmul(const em *e)
{
    const char *a = in_name(e, 0), *b = in_name(e, 1);
    if (e->n->a.transpose_a)
        a = swap_last(e, "transpose_a", a, in_shape(e, 0)->ndim);
    if (e->n->a.transpose_b)
        b = swap_last(e, "transpose_b", b, in_shape(e, 1)->ndim);
    node2(e, "MatMul", NULL, a, b, out_name(e, 0));
    return NTP_STATUS_OK;
}

/* Multi-head attention as the operators PyTorch exports it with:
 * projections, heads split by reshapes and transposes, scaled scores, a
 * softmax (with an additive mask when causal), the weighted sum, and the
 * output projection. */
static ntp_status attention(const em *e)
{
    const ntp_attrs *a = &e->n->a;
    const ntp_shape *qs = in_shape(e, 0);
    int64_t N = qs->dim[0], S = qs->dim[1], D = qs->dim[2], h = a->heads, dh = D / h;
    int64_t Skv = e->n->n_in == 3 ? in_shape(e, 1)->dim[1] : S;
    int wo = a->bias ? 2 : 1, bo = 3;
    const float *win = e->wd[0], *bin = a->bias ? e->wd[1] : NULL;
    const char *proj[3];
    for (int p = 0; p < 3; p++) {
        /* Wᵀ of the q, k or v rows of in_proj. */
        float *t = ntp__xw_mem(e->w, (size_t)(D * D) * sizeof *t);
        if (!t)
            return ntp_ctx_status(e->w->ctx);
        for (int64_t i = 0; i < D; i++)
            for (int64_t j = 0; j < D; j++)
                t[j * D + i] = win[(p * D + i) * D + j];
        ntp_shape ts = {2, {D, D}};
        static const char *const qkv[3] = {"q", "k", "v"};
        char what[32];
        snprintf(what, sizeof what, "%s_proj", qkv[p]);
        const char *src = e->n->n_in == 3 ? in_name(e, p) : in_name(e, 0);
        const char *mm = tmp(e, what);
        node2(e, "MatMul", what, src, ntp__xw_f32(e->w, tmp(e, what), t, &ts), mm);
        proj[p] = mm;
        if (bin) {
            ntp_shape bs = {1, {D}};
            snprintf(what, sizeof what, "%s_bias", qkv[p]);
            const char *o = tmp(e, what);
            node2(e, "Add", what, mm, ntp__xw_f32_copy(e->w, what, bin + p * D, &bs), o);
            proj[p] = o;
        }
    }
    ntp_shape q4 = {4, {N, S, h, dh}}, kv4 = {4, {N, Skv, h, dh}};
    int64_t heads_first[4] = {0, 2, 1, 3}, keys_t[4] = {0, 2, 3, 1};
    const char *q = tmp(e, "q_heads"), *k = tmp(e, "k_heads"), *v = tmp(e, "v_heads");
    const char *q1 = tmp(e, "q_split"), *k1 = tmp(e, "k_split"), *v1 = tmp(e, "v_split");
    reshape(e, "q_split", proj[0], &q4, q1);
    reshape(e, "k_split", proj[1], &kv4, k1);
    reshape(e, "v_split", proj[2], &kv4, v1);
    transpose(e, "q_heads", q1, heads_first, 4, q);
    transpose(e, "k_heads", k1, keys_t, 4, k);
    transpose(e, "v_heads", v1, heads_first, 4, v);
    const char *scores = tmp(e, "scores"), *scaled = tmp(e, "scaled");
    node2(e, "MatMul", "scores", q, k, scores);
    node2(e, "Mul", "scale", scores,
          ntp__xw_scalar(e->w, helper_name(e, "scale"), (float)(1.0 / sqrt((double)dh))), scaled);
    if (a->causal) {
        float *m = ntp__xw_mem(e->w, (size_t)(S * Skv) * sizeof *m);
        if (!m)
            return ntp_ctx_status(e->w->ctx);
        for (int64_t i = 0; i < S; i++)
            for (int64_t j = 0; j < Skv; j++)
                m[i * Skv + j] = j > i ? -INFINITY : 0.0f;
        ntp_shape ms = {2, {S, Skv}};
        const char *masked = tmp(e, "masked");
        node2(e, "Add", "mask", scaled, ntp__xw_const(e->w, helper_name(e, "mask"), m, &ms),
              masked);
        scaled = masked;
    }
    const char *p = tmp(e, "weights"), *ctxh = tmp(e, "context"), *ctxt = tmp(e, "context_t"),
               *ctx = tmp(e, "context_merged"), *mm = tmp(e, "out_proj");
    Onnx__NodeProto *sm = node1(e, "Softmax", "softmax", scaled, p);
    ntp__xw_attr_i(e->w, sm, "axis", -1);
    node2(e, "MatMul", "context", p, v, ctxh);
    transpose(e, "context_t", ctxh, heads_first, 4, ctxt);
    ntp_shape s3 = {3, {N, S, D}};
    reshape(e, "context_merged", ctxt, &s3, ctx);
    float *t = ntp__xw_mem(e->w, (size_t)(D * D) * sizeof *t);
    if (!t)
        return ntp_ctx_status(e->w->ctx);
    for (int64_t i = 0; i < D; i++)
        for (int64_t j = 0; j < D; j++)
            t[j * D + i] = e->wd[wo][i * D + j];
    ntp_shape ts = {2, {D, D}};
    const char *wot = ntp__xw_f32(e->w, tmp(e, "out_proj_weight"), t, &ts);
    if (!a->bias) {
        node2(e, "MatMul", NULL, ctx, wot, out_name(e, 0));
        return NTP_STATUS_OK;
    }
    node2(e, "MatMul", "out_proj", ctx, wot, mm);
    node2(e, "Add", NULL, mm, weight(e, bo, NULL), out_name(e, 0));
    return NTP_STATUS_OK;
}

/* --- recurrent layers ---------------------------------------------------------------------- */

static ntp_status rnn(const em *e)
{
    const ntp_attrs *a = &e->n->a;
    const char *op = ntp__op_onnx_name(e->n->op);
    int64_t dirs = a->direction == NTP_DIR_BIDIRECTIONAL ? 2 : 1, H = a->units;
    const char *in[4] = {in_name(e, 0), weight(e, 0, NULL), weight(e, 1, NULL),
                         a->bias ? weight(e, 2, NULL) : ""};
    const char *y = tmp(e, a->last_step ? "Y_h" : "Y");
    const char *outs[2] = {a->last_step ? "" : y, a->last_step ? y : ""};
    Onnx__NodeProto *o =
        ntp__xw_node(e->w, op, e->n->name, a->bias ? 4 : 3, in, a->last_step ? 2 : 1, outs);
    ntp__xw_attr_i(e->w, o, "hidden_size", H);
    ntp__xw_attr_s(e->w, o, "direction",
                   a->direction == NTP_DIR_FORWARD   ? "forward"
                   : a->direction == NTP_DIR_REVERSE ? "reverse"
                                                     : "bidirectional");
    if (e->n->op == NTP_OP_GRU)
        ntp__xw_attr_i(e->w, o, "linear_before_reset", 1);
    if (e->n->op == NTP_OP_RNN) {
        const char *act = a->rnn_act == NTP_RNN_ACT_RELU ? "Relu" : "Tanh";
        const char *acts[2] = {act, act};
        ntp__xw_attr_strings(e->w, o, "activations", acts, (int)dirs);
    }
    /* ONNX's Y [T, dirs, N, H] / Y_h [dirs, N, H] to the IR's [T, N, dirs·H]
     * / [N, dirs·H], or their sum over the directions. */
    const ntp_shape *os = out_shape(e, 0);
    int dir_axis = a->last_step ? 0 : 1;
    if (dirs == 2 && a->merge == NTP_MERGE_SUM) {
        const char *axes = ntp__xw_i64(e->w, helper_name(e, "axes"), (int64_t[]){dir_axis}, 1);
        Onnx__NodeProto *r = node2(e, "ReduceSum", "merge", y, axes, out_name(e, 0));
        ntp__xw_attr_i(e->w, r, "keepdims", 0);
        return NTP_STATUS_OK;
    }
    if (dirs == 2) {
        const char *t = tmp(e, "directions_last");
        int64_t full[4] = {0, 2, 1, 3}, last[3] = {1, 0, 2};
        transpose(e, "directions_last", y, a->last_step ? last : full, a->last_step ? 3 : 4, t);
        y = t;
    }
    reshape(e, "merge", y, os, out_name(e, 0));
    return NTP_STATUS_OK;
}

/* --- the rest ------------------------------------------------------------------------------ */

/* The node's attributes that map one to one onto its fields (the ONNX
 * attribute table, graph/op-onnx-impl.h), in the table's order. */
static void write_attrs(const em *e, Onnx__NodeProto *o)
{
    int n;
    const ntp_onnx_attr *d = ntp__onnx_attrs(e->n->op, &n);
    for (int i = 0; i < n; i++)
        switch (d[i].type) {
        case NTP_ONNX_ATTR_FLOAT:
            ntp__xw_attr_f(e->w, o, d[i].name, ntp__onnx_attr_get_f(&e->n->a, &d[i]));
            break;
        case NTP_ONNX_ATTR_INT:
            ntp__xw_attr_i(e->w, o, d[i].name, ntp__onnx_attr_get_i(&e->n->a, &d[i]));
            break;
        case NTP_ONNX_ATTR_BOOL:
            ntp__xw_attr_i(e->w, o, d[i].name, ntp__onnx_attr_get_b(&e->n->a, &d[i]));
            break;
        }
}

/* The attributes of the ops that simple() writes beyond their inputs and
 * those of the ONNX attribute table, one line an op. */
static void attr_axis(const em *e, Onnx__NodeProto *o)
{
    ntp__xw_attr_i(e->w, o, "axis", e->n->a.axis);
}
static void attr_perm(const em *e, Onnx__NodeProto *o)
{
    ntp__xw_attr_ints(e->w, o, "perm", e->n->a.perm, e->n->a.n_perm);
}
static void attr_fmod(const em *e, Onnx__NodeProto *o)
{
    ntp__xw_attr_i(e->w, o, "fmod", 1);
}

static void (*const simple_attrs[NTP_OP_COUNT])(const em *e, Onnx__NodeProto *o) = {
    [NTP_OP_SOFTMAX] = attr_axis, [NTP_OP_LOG_SOFTMAX] = attr_axis, [NTP_OP_HARDMAX] = attr_axis,
    [NTP_OP_CONCAT] = attr_axis,  [NTP_OP_TRANSPOSE] = attr_perm,   [NTP_OP_FMOD] = attr_fmod,
};

/* Ops that are one ONNX node reading the layer's inputs, then its weights;
 * attributes after. A reduction (emitter REDUCE or REDUCE_AXES_IN) keeps its
 * dims and gives its axes as an attribute or an input. */
static ntp_status simple_to(const em *e, const char *op, const char *out);

static ntp_status simple(const em *e, const char *op)
{
    return simple_to(e, op, out_name(e, 0));
}

/* An op of the binary family (NTP_BINARY_TABLE) is its ONNX operator; a
 * predicate's bool is cast to the float the IR's tensor is. */
static ntp_status binary(const em *e)
{
    const char *op = ntp__op_binary_onnx(e->n->op);
    if (!ntp__op_binary_predicate(e->n->op))
        return simple(e, op);
    const char *t = tmp(e, "predicate");
    ntp_status st = simple_to(e, op, t);
    if (!st)
        ntp__xw_attr_i(e->w, node1(e, "Cast", "float", t, out_name(e, 0)), "to", NTP_ONNX_FLOAT);
    return st;
}

static ntp_status simple_to(const em *e, const char *op, const char *out)
{
    const ntp_node *n = e->n;
    const ntp_attrs *a = &n->a;
    const char *in[NTP_MAX_INPUTS + NTP_MAX_WEIGHTS + 1];
    int k = 0;
    for (int i = 0; i < n->n_in; i++)
        in[k++] = in_name(e, i);
    for (int i = 0; i < n->n_w; i++)
        in[k++] = weight(e, i, NULL);
    ntp_op_onnx how = ntp__op_onnx(n->op);
    bool reduce = how == NTP_OP_ONNX_REDUCE || how == NTP_OP_ONNX_REDUCE_AXES_IN;
    if (how == NTP_OP_ONNX_REDUCE_AXES_IN && ntp__reduce_n_axes(a) > 0)
        in[k++] =
            ntp__xw_i64(e->w, helper_name(e, "axes"), ntp__reduce_axes(a), ntp__reduce_n_axes(a));
    Onnx__NodeProto *o = node(e, op, NULL, k, in, out);
    write_attrs(e, o);
    if (simple_attrs[n->op])
        simple_attrs[n->op](e, o);
    if (reduce) {
        ntp__xw_attr_i(e->w, o, "keepdims", 1);
        if (how == NTP_OP_ONNX_REDUCE && ntp__reduce_n_axes(a) > 0)
            ntp__xw_attr_ints(e->w, o, "axes", ntp__reduce_axes(a), ntp__reduce_n_axes(a));
    }
    return NTP_STATUS_OK;
}

static ntp_status resize(const em *e)
{
    const ntp_attrs *a = &e->n->a;
    const char *in[4] = {in_name(e, 0), "", "", ""};
    int r = in_shape(e, 0)->ndim;
    if (a->n_shape > 0) {
        in[3] = ntp__xw_i64(e->w, helper_name(e, "sizes"), a->shape, a->n_shape);
    } else {
        float sc[NTP_MAX_DIMS];
        for (int d = 0; d < r; d++)
            sc[d] = (float)((double)a->resize.scale_num[d] / (double)a->resize.scale_den[d]);
        ntp_shape s = {1, {r}};
        in[2] = ntp__xw_f32_copy(e->w, helper_name(e, "scales"), sc, &s);
    }
    Onnx__NodeProto *o = node(e, "Resize", NULL, a->n_shape > 0 ? 4 : 3, in, out_name(e, 0));
    ntp__xw_attr_s(e->w, o, "mode", ntp__resize_mode_names[ntp__resize_mode(a)]);
    ntp__xw_attr_s(e->w, o, "coordinate_transformation_mode",
                   ntp__resize_coord_names[ntp__resize_coord(a)]);
    ntp__xw_attr_s(e->w, o, "nearest_mode", ntp__resize_nearest_names[ntp__resize_nearest(a)]);
    ntp__xw_attr_f(e->w, o, "cubic_coeff_a", ntp__resize_cubic_a(a));
    ntp__xw_attr_i(e->w, o, "exclude_outside", ntp__resize_exclude_outside(a));
    return NTP_STATUS_OK;
}

/* The unary element-wise ops that no ONNX operator is one to one: a pattern
 * of nodes the reader maps back. */
static ntp_status relu_max(const em *e)
{
    /* A relu with a ceiling (the others are Relu): Clip(0, max), which the
     * reader maps back to relu. */
    const char *in[3] = {in_name(e, 0), ntp__xw_scalar(e->w, helper_name(e, "min"), 0.0f),
                         ntp__xw_scalar(e->w, helper_name(e, "max"), (float)e->n->a.max)};
    node(e, "Clip", NULL, 3, in, out_name(e, 0));
    return NTP_STATUS_OK;
}

static ntp_status clip(const em *e)
{
    const ntp_attrs *a = &e->n->a;
    const char *in[3] = {
        in_name(e, 0),
        isinf(a->min) ? "" : ntp__xw_scalar(e->w, helper_name(e, "min"), (float)a->min),
        isinf(a->max) ? "" : ntp__xw_scalar(e->w, helper_name(e, "max"), (float)a->max)};
    node(e, "Clip", NULL, isinf(a->max) ? 2 : 3, in, out_name(e, 0));
    return NTP_STATUS_OK;
}

static ntp_status gelu(const em *e)
{
    /* 0.5·x·(1 + erf(x/√2)), as PyTorch exports it; the reader maps the
     * pattern back to gelu. */
    const char *d = tmp(e, "div"), *f = tmp(e, "erf"), *p = tmp(e, "add"), *m = tmp(e, "mul");
    node2(e, "Div", "div", in_name(e, 0),
          ntp__xw_scalar(e->w, helper_name(e, "sqrt2"), 1.41421353816986083984375f), d);
    node1(e, "Erf", "erf", d, f);
    node2(e, "Add", "add", f, ntp__xw_scalar(e->w, helper_name(e, "one"), 1.0f), p);
    node2(e, "Mul", "mul", in_name(e, 0), p, m);
    node2(e, "Mul", NULL, m, ntp__xw_scalar(e->w, helper_name(e, "half"), 0.5f), out_name(e, 0));
    return NTP_STATUS_OK;
}

static ntp_status silu(const em *e)
{
    const char *s = tmp(e, "sigmoid");
    node1(e, "Sigmoid", "sigmoid", in_name(e, 0), s);
    node2(e, "Mul", NULL, in_name(e, 0), s, out_name(e, 0));
    return NTP_STATUS_OK;
}

static ntp_status no_onnx(const em *e)
{
    return ntp__error(e->w->ctx, NTP_STATUS_UNSUPPORTED, "%s: <%s name='%s'> has no ONNX operator",
                      e->g->source, ntp__op_name(e->n->op), e->n->name);
}

/* --- Darknet's heads ------------------------------------------------------------------ */

/* darknet_head (ref-darknet.c): per anchor, the channels x, y through a
 * Sigmoid, w, h as they are, the objectness and classes through a Sigmoid
 * (or [region]'s Softmax over the classes, on axis 1: per cell), each a
 * Slice of the input on the channel axis; one Concat puts them back in
 * order. */
static ntp_status darknet_head(const em *e)
{
    const ntp_attrs *a = &e->n->a;
    int64_t per = a->coords + 1 + a->classes, c = a->coords;
    bool obj = !a->background;
    /* The pieces of one anchor: [from, to) and the operator, NULL: none. */
    struct {
        int64_t from, to;
        const char *op;
    } p[5];
    int np = 0;
#define PIECE(f, t, o) (p[np].from = (f), p[np].to = (t), p[np++].op = (o))
    PIECE(0, 2, "Sigmoid");
    if (c > 2)
        PIECE(2, c, NULL);
    if (obj)
        PIECE(c, c + 1, "Sigmoid");
    else if (!a->head_softmax)
        PIECE(c, c + 1, NULL);
    if (a->head_softmax)
        PIECE(c + obj, per, "Softmax");
    else if (a->classes > 0)
        PIECE(c + 1, per, "Sigmoid");
#undef PIECE
    int64_t n_parts = a->anchors * np;
    if (n_parts > INT32_MAX / 2)
        return no_onnx(e);
    const char **parts = ntp__xw_mem(e->w, (size_t)n_parts * sizeof *parts);
    if (!parts)
        return ntp_ctx_status(e->w->ctx);
    const int64_t axis[1] = {1};
    const char *axes = ntp__xw_i64(e->w, helper_name(e, "axes"), axis, 1);
    for (int64_t i = 0; i < a->anchors; i++)
        for (int k = 0; k < np; k++) {
            char what[96];
            int64_t from = i * per + p[k].from, to = i * per + p[k].to;
            snprintf(what, sizeof what, "a%lld_%lld", (long long)i, (long long)p[k].from);
            const char *in[4] = {in_name(e, 0),
                                 ntp__xw_i64(e->w, helper_name(e, "starts"), &from, 1),
                                 ntp__xw_i64(e->w, helper_name(e, "ends"), &to, 1), axes};
            const char *sl = tmp(e, what);
            node(e, "Slice", what, 4, in, sl);
            if (p[k].op) {
                char w2[112];
                snprintf(w2, sizeof w2, "%s_%s", what, p[k].op);
                const char *o = tmp(e, w2);
                Onnx__NodeProto *nd = node1(e, p[k].op, w2, sl, o);
                if (p[k].op[1] == 'o') /* Softmax: over the classes of each cell */
                    ntp__xw_attr_i(e->w, nd, "axis", 1);
                sl = o;
            }
            parts[i * np + k] = sl;
        }
    ntp__xw_attr_i(e->w, node(e, "Concat", NULL, (int)n_parts, parts, out_name(e, 0)), "axis", 1);
    return NTP_STATUS_OK;
}

static ntp_status (*const unary_pattern[NTP_OP_COUNT])(const em *e) = {
    [NTP_OP_RELU] = relu_max,
    [NTP_OP_CLIP] = clip,
    [NTP_OP_GELU] = gelu,
    [NTP_OP_SILU] = silu,
};

/* A unary element-wise op with an ONNX operator of its own (NTP_UNARY_TABLE)
 * is that operator; a relu with a ceiling, and the ops without one, are the
 * pattern above or have none. */
static ntp_status unary(const em *e)
{
    const char *onnx = ntp__op_unary_onnx(e->n->op);
    if (onnx && !(e->n->op == NTP_OP_RELU && e->n->a.has_max))
        return simple(e, onnx);
    return unary_pattern[e->n->op] ? unary_pattern[e->n->op](e) : no_onnx(e);
}

ntp_status ntp__xw_emit(ntp_xw *w, const ntp_node *n, float *const *wd)
{
    em e = {.w = w, .g = w->g, .n = n, .wd = wd};
    const ntp_attrs *a = &n->a;
    /* By the op's emitter (op-table.h, ONNX) and its ONNX operator. */
    const char *op = ntp__op_onnx_name(n->op);
    switch (ntp__op_onnx(n->op)) {
    case NTP_OP_ONNX_UNARY: return unary(&e);
    case NTP_OP_ONNX_BINARY: return binary(&e);
    case NTP_OP_ONNX_SIMPLE:
    case NTP_OP_ONNX_REDUCE:
    case NTP_OP_ONNX_REDUCE_AXES_IN: return simple(&e, op);
    case NTP_OP_ONNX_FC: return fc(&e);
    case NTP_OP_ONNX_MATMUL: return matmul(&e);
    case NTP_OP_ONNX_ATTENTION: return attention(&e);
    case NTP_OP_ONNX_CONV: {
        const char *in[3] = {in_name(&e, 0), weight(&e, 0, NULL),
                             a->bias ? weight(&e, 1, NULL) : ""};
        Onnx__NodeProto *o = node(&e, op, NULL, a->bias ? 3 : 2, in, out_name(&e, 0));
        spatial(&e, o, true);
        write_attrs(&e, o); /* group */
        if (!strcmp(op, "ConvTranspose"))
            ntp__xw_attr_ints(w, o, "output_padding", a->output_padding, a->nk);
        return NTP_STATUS_OK;
    }
    case NTP_OP_ONNX_POOL: {
        bool is_max = !strcmp(op, "MaxPool");
        Onnx__NodeProto *o = node1(&e, op, NULL, in_name(&e, 0), out_name(&e, 0));
        spatial(&e, o, is_max);
        write_attrs(&e, o); /* ceil_mode, count_include_pad */
        return NTP_STATUS_OK;
    }
    case NTP_OP_ONNX_BATCHNORM: {
        const char *in[5] = {in_name(&e, 0), weight(&e, 0, NULL), weight(&e, 1, NULL),
                             weight(&e, 2, NULL), weight(&e, 3, NULL)};
        write_attrs(&e, node(&e, op, NULL, 5, in, out_name(&e, 0))); /* epsilon */
        return NTP_STATUS_OK;
    }
    case NTP_OP_ONNX_LAYERNORM: {
        /* ONNX's Scale and B have the normalised dims' shape. */
        const ntp_shape *s = in_shape(&e, 0);
        ntp_shape ns = {0};
        for (int d = (int)a->axis; d < s->ndim; d++)
            ns.dim[ns.ndim++] = s->dim[d];
        const char *in[3] = {in_name(&e, 0), weight(&e, 0, &ns), weight(&e, 1, &ns)};
        Onnx__NodeProto *o = node(&e, op, NULL, 3, in, out_name(&e, 0));
        ntp__xw_attr_i(w, o, "axis", a->axis);
        write_attrs(&e, o); /* epsilon */
        return NTP_STATUS_OK;
    }
    case NTP_OP_ONNX_NARY: {
        /* Two inputs: the operator; more: Sum for Add, else a chain. */
        const char *in[NTP_MAX_INPUTS];
        for (int i = 0; i < n->n_in; i++)
            in[i] = in_name(&e, i);
        bool add = !strcmp(op, "Add");
        if (n->n_in == 2 || add) {
            node(&e, n->n_in == 2 ? op : "Sum", NULL, n->n_in, in, out_name(&e, 0));
            return NTP_STATUS_OK;
        }
        const char *acc = in[0];
        for (int i = 1; i < n->n_in; i++) {
            char what[16];
            snprintf(what, sizeof what, "mul%d", i);
            const char *o = i == n->n_in - 1 ? out_name(&e, 0) : tmp(&e, what);
            node2(&e, op, i == n->n_in - 1 ? NULL : what, acc, in[i], o);
            acc = o;
        }
        return NTP_STATUS_OK;
    }
    case NTP_OP_ONNX_WHERE: {
        /* The IR's condition is a float (non-zero is true); ONNX's a bool. */
        const char *c = tmp(&e, "condition");
        ntp__xw_attr_i(w, node1(&e, "Cast", "condition", in_name(&e, 0), c), "to", NTP_ONNX_BOOL);
        const char *in[3] = {c, in_name(&e, 1), in_name(&e, 2)};
        node(&e, op, NULL, 3, in, out_name(&e, 0));
        return NTP_STATUS_OK;
    }
    case NTP_OP_ONNX_SPLIT: {
        const char *in[2] = {in_name(&e, 0),
                             ntp__xw_i64(w, helper_name(&e, "split"), a->sizes, a->n_sizes)};
        const char *outs[NTP_MAX_OUTPUTS];
        for (int i = 0; i < n->n_out; i++)
            outs[i] = out_name(&e, i);
        Onnx__NodeProto *o = ntp__xw_node(w, op, n->name, 2, in, n->n_out, outs);
        ntp__xw_attr_i(w, o, "axis", a->axis);
        return NTP_STATUS_OK;
    }
    case NTP_OP_ONNX_RESHAPE:
        reshape(&e, NULL, in_name(&e, 0), out_shape(&e, 0), out_name(&e, 0));
        return NTP_STATUS_OK;
    case NTP_OP_ONNX_PAD: {
        const char *in[3] = {in_name(&e, 0),
                             ntp__xw_i64(w, helper_name(&e, "pads"), a->pads, a->n_pads),
                             ntp__xw_scalar(w, helper_name(&e, "value"), (float)a->value)};
        Onnx__NodeProto *o = node(&e, op, NULL, 3, in, out_name(&e, 0));
        ntp__xw_attr_s(w, o, "mode",
                       a->pad_mode == NTP_PADMODE_REFLECT ? "reflect"
                       : a->pad_mode == NTP_PADMODE_EDGE  ? "edge"
                                                          : "constant");
        return NTP_STATUS_OK;
    }
    case NTP_OP_ONNX_EMBEDDING: {
        ntp__xw_attr_i(w, node2(&e, op, NULL, weight(&e, 0, NULL), in_name(&e, 0), out_name(&e, 0)),
                       "axis", 0);
        return NTP_STATUS_OK;
    }
    case NTP_OP_ONNX_RNN: return rnn(&e);
    case NTP_OP_ONNX_CONSTANT: {
        /* The value itself: an initializer named after the output. */
        ntp__xw_f32(w, out_name(&e, 0), wd[0], out_shape(&e, 0));
        return NTP_STATUS_OK;
    }
    case NTP_OP_ONNX_SLICE: {
        const ntp_slice_attrs *sl = &a->slice;
        int k = sl->n;
        int64_t axes[NTP_MAX_DIMS], steps[NTP_MAX_DIMS];
        for (int i = 0; i < k; i++) {
            axes[i] = sl->n_axes ? sl->axes[i] : i;
            steps[i] = sl->n_steps ? sl->steps[i] : 1;
        }
        const char *in[5] = {in_name(&e, 0),
                             ntp__xw_i64(w, helper_name(&e, "starts"), sl->starts, k),
                             ntp__xw_i64(w, helper_name(&e, "ends"), sl->ends, k),
                             ntp__xw_i64(w, helper_name(&e, "axes"), axes, k),
                             ntp__xw_i64(w, helper_name(&e, "steps"), steps, k)};
        node(&e, op, NULL, 5, in, out_name(&e, 0));
        return NTP_STATUS_OK;
    }
    case NTP_OP_ONNX_EXPAND:
        node2(&e, op, NULL, in_name(&e, 0),
              ntp__xw_i64(w, helper_name(&e, "shape"), a->shape, a->n_shape), out_name(&e, 0));
        return NTP_STATUS_OK;
    case NTP_OP_ONNX_RESIZE: return resize(&e);
    case NTP_OP_ONNX_DECODER: return ntp__xw_emit_decoder(w, n, wd);
    case NTP_OP_ONNX_CONVERT:
        /* To f32 (from integer inputs) is a Cast; a layout change a
         * Transpose. Reduced-precision staging has no ONNX meaning. */
        if (a->has_to_dtype && a->to_dtype == NTP_DTYPE_F32 && !a->has_to_layout) {
            ntp__xw_attr_i(w, node1(&e, "Cast", NULL, in_name(&e, 0), out_name(&e, 0)), "to",
                           NTP_ONNX_FLOAT);
            return NTP_STATUS_OK;
        }
        if (!a->has_to_dtype && a->has_to_layout && in_shape(&e, 0)->ndim >= 3) {
            int r = in_shape(&e, 0)->ndim;
            int64_t perm[NTP_MAX_DIMS] = {0};
            bool to_nhwc = a->to_layout == NTP_LAYOUT_NHWC;
            for (int d = 1; d < r; d++)
                perm[d] = to_nhwc ? (d == r - 1 ? 1 : d + 1) : (d == 1 ? r - 1 : d - 1);
            transpose(&e, NULL, in_name(&e, 0), perm, r, out_name(&e, 0));
            return NTP_STATUS_OK;
        }
        return ntp__error(w->ctx, NTP_STATUS_UNSUPPORTED,
                          "%s: <convert name='%s'> to %s has no ONNX operator", w->g->source,
                          n->name, a->has_to_dtype ? ntp_dtype_name(a->to_dtype) : "a layout");
    case NTP_OP_ONNX_DARKNET_HEAD: return darknet_head(&e);
    /* Ops with no ONNX operator. */
    case NTP_OP_ONNX_NONE: break;
    }
    return no_onnx(&e);
}
