/* Subgraphs that stand for one IR layer.
 *
 * Exporters write some layers as formulas because ONNX (before opset 17 or
 * 20) has no operator for them: PyTorch's GELU as 0.5·x·(1 + erf(x/√2)),
 * SiLU as x·sigmoid(x), LayerNorm as mean, variance, square root and
 * division. Recognising them gives the profile the layer the model author
 * wrote (one gelu row, not five) and lets ntprof's own export round-trip.
 * Each pattern is matched from its first node; every intermediate value
 * must be read only inside the pattern, and constants must already be
 * known, or the nodes are mapped one by one as usual. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "onnx-impl.h"

/* Node i, or NULL for an index a failed lookup gave (-1). */
static const Onnx__NodeProto *node(const ntp_onnx_importer *x, int i)
{
    return i >= 0 && (size_t)i < x->gp->n_node ? x->gp->node[i] : NULL;
}

static bool is_op(const Onnx__NodeProto *np, const char *op)
{
    return np && np->op_type && !strcmp(np->op_type, op) &&
           (!np->domain || !np->domain[0] || !strcmp(np->domain, "ai.onnx"));
}

/* The one-value constant named `name`, if it is one. */
static bool scalar_of(ntp_onnx_importer *x, const char *name, double *v)
{
    int i = name && name[0] ? ntp__onnx_names_get(x->values, name) : -1;
    if (i < 0)
        return false;
    ntp_onnx_value *val = &x->v[i];
    if (val->bound || (!val->init && !val->c) || ntp__onnx_value_const(x, val) || !val->c ||
        val->c->n != 1 || !val->c->f)
        return false;
    *v = val->c->f[0];
    return true;
}

static bool same(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}

/* Input and output names of any node, NULL where the node has fewer: a
 * pattern looks at nodes other than the one being mapped, and a malformed
 * model may give any of them fewer inputs or outputs than its op takes. */
static const char *in_name(const Onnx__NodeProto *np, size_t k)
{
    return np && k < np->n_input ? np->input[k] : NULL;
}
static const char *out_name(const Onnx__NodeProto *np, size_t k)
{
    return np && k < np->n_output ? np->output[k] : NULL;
}

/* The node reading value `name` alone, with op `op`: its index or -1. */
static int next(const ntp_onnx_importer *x, const char *name, const char *op, int *slot)
{
    if (!name || !name[0])
        return -1;
    int i = ntp__onnx_sole_reader(x, name, slot);
    return i >= 0 && !x->done[i] && is_op(node(x, i), op) ? i : -1;
}

/* The other input of a binary node than `slot`. */
static const char *other(const Onnx__NodeProto *np, int slot)
{
    return np && np->n_input == 2 && (slot == 0 || slot == 1) ? np->input[1 - slot] : NULL;
}

/* Add a one-input layer for the pattern ending at node `last`, named and
 * bound as that node. */
static ntp_status emit(ntp_onnx_importer *x, ntp_op op, int input_tensor, int last, int *ni)
{
    char name[300];
    ntp__onnx_set_node(x, last, name, sizeof name);
    *ni = ntp__onnx_add_node(x, op, NULL, &input_tensor, 1, 1);
    return *ni < 0 ? ntp_ctx_status(x->ctx) : NTP_STATUS_OK;
}

static ntp_status finish(ntp_onnx_importer *x, int ni)
{
    ntp_status st = ntp__onnx_infer(x, ni);
    return st ? st : ntp__onnx_out_tensor(x, 0, x->g->nodes[ni].out[0]);
}

/* Div(x, √2) -> Erf -> Add(1) -> Mul(x, .) -> Mul(., 0.5). */
static ntp_status gelu(ntp_onnx_importer *x, bool *matched)
{
    const Onnx__NodeProto *d = x->np;
    double c;
    int s, e, a, m1, m2;
    if (d->n_input != 2 || !scalar_of(x, in_name(d, 1), &c) || fabs(c - sqrt(2.0)) > 1e-4 ||
        (e = next(x, out_name(d, 0), "Erf", &s)) < 0 ||
        (a = next(x, out_name(node(x, e), 0), "Add", &s)) < 0 ||
        !scalar_of(x, other(node(x, a), s), &c) || c != 1.0 ||
        (m1 = next(x, out_name(node(x, a), 0), "Mul", &s)) < 0 ||
        !same(other(node(x, m1), s), in_name(d, 0)) ||
        (m2 = next(x, out_name(node(x, m1), 0), "Mul", &s)) < 0 ||
        !scalar_of(x, other(node(x, m2), s), &c) || c != 0.5)
        return NTP_STATUS_OK;
    int t, ni;
    ntp_status st = ntp__onnx_in_tensor(x, 0, &t);
    if (st || (st = emit(x, NTP_OP_GELU, t, m2, &ni)) || (st = finish(x, ni)))
        return st;
    x->done[e] = x->done[a] = x->done[m1] = x->done[m2] = true;
    *matched = true;
    return NTP_STATUS_OK;
}

/* Sigmoid(x) -> Mul(x, .). */
static ntp_status silu(ntp_onnx_importer *x, bool *matched)
{
    const Onnx__NodeProto *sg = x->np;
    int s, m;
    if (sg->n_input != 1 || (m = next(x, out_name(sg, 0), "Mul", &s)) < 0 ||
        !same(other(node(x, m), s), in_name(sg, 0)))
        return NTP_STATUS_OK;
    int t, ni;
    ntp_status st = ntp__onnx_in_tensor(x, 0, &t);
    if (st || (st = emit(x, NTP_OP_SILU, t, m, &ni)) || (st = finish(x, ni)))
        return st;
    x->done[m] = true;
    *matched = true;
    return NTP_STATUS_OK;
}

/* The axes of a ReduceMean (attribute before opset 18), normalised; false
 * unless they are the trailing dims from some axis on. */
static bool trailing_axes(const Onnx__NodeProto *np, int r, int64_t *first)
{
    const Onnx__AttributeProto *ax = NULL;
    int64_t keep = 1;
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *a = np->attribute[i];
        if (a->name && !strcmp(a->name, "axes"))
            ax = a;
        else if (a->name && !strcmp(a->name, "keepdims"))
            keep = a->i;
        else
            return false;
    }
    if (!ax || ax->n_ints == 0 || keep != 1 || np->n_input != 1)
        return false;
    bool seen[NTP_MAX_DIMS] = {false};
    int64_t lo = r;
    for (size_t i = 0; i < ax->n_ints; i++) {
        int64_t a;
        if (!ntp__onnx_axis(ax->ints[i], r, &a) || seen[a])
            return false;
        seen[a] = true;
        lo = a < lo ? a : lo;
    }
    for (int64_t d = lo; d < r; d++)
        if (!seen[d])
            return false;
    *first = lo;
    return true;
}

static bool same_axes(const Onnx__NodeProto *a, const Onnx__NodeProto *b, int r)
{
    int64_t fa, fb;
    return trailing_axes(a, r, &fa) && trailing_axes(b, r, &fb) && fa == fb;
}

/* A scale or shift of the normalised dims (D values, or one). */
static float *norm_param(ntp_onnx_importer *x, const char *name, int64_t d)
{
    int i = ntp__onnx_names_get(x->values, name);
    if (i < 0)
        return NULL;
    ntp_onnx_value *v = &x->v[i];
    if (v->bound || (!v->init && !v->c) || ntp__onnx_value_const(x, v) || !v->c || !v->c->f ||
        (v->c->n != d && v->c->n != 1))
        return NULL;
    float *f = malloc((size_t)d * sizeof *f + 1);
    for (int64_t k = 0; f && k < d; k++)
        f[k] = v->c->f[v->c->n == 1 ? 0 : k];
    return f;
}

/* ReduceMean -> Sub -> Pow(2) -> ReduceMean -> Add(eps) -> Sqrt -> Div,
 * then optionally Mul(gamma) and Add(beta): PyTorch's LayerNorm before
 * opset 17. */
static ntp_status layernorm(ntp_onnx_importer *x, bool *matched)
{
    const Onnx__NodeProto *m1 = x->np;
    ntp_onnx_value *xv = ntp__onnx_in_value(x, 0);
    if (!xv || xv->tensor < 0)
        return NTP_STATUS_OK;
    const ntp_shape xs = x->g->tensors[xv->tensor].shape;
    int64_t axis;
    double c, eps;
    int s, sub, pw, m2, ad, sq, dv, mul = -1, bias = -1;
    if (!trailing_axes(m1, xs.ndim, &axis) || (sub = next(x, out_name(m1, 0), "Sub", &s)) < 0 ||
        s != 1 || !same(in_name(node(x, sub), 0), in_name(m1, 0)) ||
        ntp__onnx_readers(x, out_name(node(x, sub), 0)) != 2 ||
        x->v[ntp__onnx_names_get(x->values, out_name(node(x, sub), 0))].is_output)
        return NTP_STATUS_OK;
    /* The centred values feed the Pow and the Div. */
    const char *centred = out_name(node(x, sub), 0);
    int r0 = ntp__onnx_reader(x, centred, 0, &s), r1 = ntp__onnx_reader(x, centred, 1, NULL);
    pw = is_op(node(x, r0), "Pow") ? r0 : r1;
    dv = pw == r0 ? r1 : r0;
    if (!is_op(node(x, pw), "Pow") || !is_op(node(x, dv), "Div") ||
        !same(in_name(node(x, pw), 0), centred) || !scalar_of(x, in_name(node(x, pw), 1), &c) ||
        c != 2.0 || !same(in_name(node(x, dv), 0), centred) ||
        (m2 = next(x, out_name(node(x, pw), 0), "ReduceMean", &s)) < 0 ||
        !same_axes(m1, node(x, m2), xs.ndim) ||
        (ad = next(x, out_name(node(x, m2), 0), "Add", &s)) < 0 ||
        !scalar_of(x, other(node(x, ad), s), &eps) || !(eps > 0) ||
        (sq = next(x, out_name(node(x, ad), 0), "Sqrt", &s)) < 0 ||
        next(x, out_name(node(x, sq), 0), "Div", &s) != dv || s != 1)
        return NTP_STATUS_OK;
    int64_t d = 1;
    for (int k = (int)axis; k < xs.ndim; k++)
        d *= xs.dim[k];
    float *gamma = NULL, *beta = NULL;
    int last = dv;
    if ((mul = next(x, out_name(node(x, dv), 0), "Mul", &s)) >= 0 &&
        (gamma = norm_param(x, other(node(x, mul), s), d))) {
        last = mul;
        if ((bias = next(x, out_name(node(x, mul), 0), "Add", &s)) >= 0 &&
            (beta = norm_param(x, other(node(x, bias), s), d)))
            last = bias;
        else
            bias = -1;
    } else {
        mul = -1;
    }
    float *ones = gamma ? NULL : malloc((size_t)d * sizeof *ones + 1);
    float *zeros = beta ? NULL : calloc((size_t)d + 1, sizeof *zeros);
    if ((!gamma && !ones) || (!beta && !zeros)) {
        free(gamma);
        free(beta);
        free(ones);
        free(zeros);
        return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    for (int64_t k = 0; ones && k < d; k++)
        ones[k] = 1.0f;
    int ni;
    ntp_status st = emit(x, NTP_OP_LAYERNORM, xv->tensor, last, &ni);
    if (st) {
        free(gamma ? gamma : ones);
        free(beta ? beta : zeros);
        return st;
    }
    x->g->nodes[ni].a.axis = axis;
    x->g->nodes[ni].a.epsilon = ntp__onnx_float_value((float)eps);
    ntp_shape ws = {1, {d}};
    char gname[320], bname[320];
    snprintf(gname, sizeof gname, "%.300s.gamma", x->node_name);
    snprintf(bname, sizeof bname, "%.300s.beta", x->node_name);
    if ((st = ntp__onnx_add_weight(x, ni, gname, gamma ? gamma : ones, &ws)) ||
        (st = ntp__onnx_add_weight(x, ni, bname, beta ? beta : zeros, &ws)) || (st = finish(x, ni)))
        return st;
    int nodes[] = {sub, pw, m2, ad, sq, dv, mul, bias};
    for (size_t k = 0; k < sizeof nodes / sizeof nodes[0]; k++)
        if (nodes[k] >= 0)
            x->done[nodes[k]] = true;
    *matched = true;
    return NTP_STATUS_OK;
}

ntp_status ntp__onnx_patterns(ntp_onnx_importer *x, bool *matched)
{
    *matched = false;
    const Onnx__NodeProto *np = x->np;
    if (np->domain && np->domain[0] && strcmp(np->domain, "ai.onnx") != 0)
        return NTP_STATUS_OK;
    if (!strcmp(np->op_type, "Div"))
        return gelu(x, matched);
    if (!strcmp(np->op_type, "Sigmoid"))
        return silu(x, matched);
    if (!strcmp(np->op_type, "ReduceMean") && x->opset < 18)
        return layernorm(x, matched);
    return NTP_STATUS_OK;
}
