/* ONNX layers with weights -> IR nodes: convolutions, pools, normalisations,
 * Gemm and MatMul, and the recurrent layers. The IR's weight layouts are
 * ONNX's (docs/ops.md), so weights are attached as they are, sharing the
 * initializer's buffer; only Gemm/MatMul transpose B into fc's [N, K]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "graph/op-onnx-impl.h"
#include "onnx-impl.h"

static ntp_status finish(ntp_onnx_importer *x, int ni)
{
    ntp_status st = ntp__onnx_infer(x, ni);
    return st ? st : ntp__onnx_out_tensor(x, 0, x->g->nodes[ni].out[0]);
}

/* A weight input, decoded: it must be known at load time (an initializer,
 * or a value given for a graph input: ntprof's layers own their weights). */
static ntp_status weight(ntp_onnx_importer *x, int k, ntp_onnx_value **v)
{
    *v = ntp__onnx_in_value(x, k);
    ntp_status st = *v ? ntp__onnx_value_const(x, *v) : NTP_STATUS_OK;
    if (st)
        return st;
    if (!*v || !(*v)->c)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                             "input %d ('%s') must be an initializer: ntprof's layers own their "
                             "weights",
                             k, *v ? (*v)->name : "");
    return NTP_STATUS_OK;
}

/* --- spatial attributes ----------------------------------------------------------------- */

/* kernel_shape, strides, dilations, pads and auto_pad into a's spatial
 * fields for nk spatial dims. Strides and dilations default to 1 (the IR's
 * pools would take the kernel). */
static ntp_status spatial(ntp_onnx_importer *x, ntp_attrs *a, int nk, const int64_t *kernel)
{
    int64_t v[2 * NTP_MAX_DIMS];
    int n;
    if (nk < 1 || nk > 3)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "%d spatial dims (1 to 3 supported)", nk);
    if ((n = ntp__onnx_attr_ints(x, "kernel_shape", v, NTP_MAX_DIMS)) < 0)
        return ntp_ctx_status(x->ctx);
    if (n == 0 && !kernel)
        return ntp__onnx_err(x, NTP_STATUS_PARSE_ERROR, "needs kernel_shape");
    if (n != 0 && n != nk)
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR,
                             "kernel_shape has %d values for %d "
                             "spatial dims",
                             n, nk);
    for (int d = 0; d < nk; d++)
        a->kernel[d] = n ? v[d] : kernel[d];
    if (n && kernel)
        for (int d = 0; d < nk; d++)
            if (v[d] != kernel[d])
                return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR,
                                     "kernel_shape differs from the weights' kernel");
    a->n_kernel = nk;
    const char *names[2] = {"strides", "dilations"};
    int64_t *dst[2] = {a->stride, a->dilation};
    for (int i = 0; i < 2; i++) {
        if ((n = ntp__onnx_attr_ints(x, names[i], v, NTP_MAX_DIMS)) < 0)
            return ntp_ctx_status(x->ctx);
        if (n != 0 && n != nk)
            return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR,
                                 "%s has %d values for %d spatial "
                                 "dims",
                                 names[i], n, nk);
        for (int d = 0; d < nk; d++)
            dst[i][d] = n ? v[d] : 1;
    }
    a->n_stride = a->n_dilation = nk;
    char buf[32];
    const char *ap = ntp__onnx_attr_s(x, "auto_pad", "NOTSET", buf, sizeof buf);
    if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
        a->pad_kind = !strcmp(ap, "SAME_UPPER") ? NTP_PAD_SAME_UPPER : NTP_PAD_SAME_LOWER;
        a->n_pad = 0;
        return NTP_STATUS_OK;
    }
    a->pad_kind = NTP_PAD_EXPLICIT;
    if (!strcmp(ap, "VALID")) {
        a->n_pad = 0;
        return NTP_STATUS_OK;
    }
    if (strcmp(ap, "NOTSET") != 0)
        return ntp__onnx_err(x, NTP_STATUS_PARSE_ERROR, "unknown auto_pad '%s'", ap);
    if ((n = ntp__onnx_attr_ints(x, "pads", v, 2 * NTP_MAX_DIMS)) < 0)
        return ntp_ctx_status(x->ctx);
    if (n != 0 && n != 2 * nk)
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "pads has %d values for %d spatial dims", n,
                             nk);
    for (int i = 0; i < n; i++)
        a->pad[i] = v[i];
    a->n_pad = n;
    return NTP_STATUS_OK;
}

static ntp_status map_conv(ntp_onnx_importer *x)
{
    bool transposed = !strcmp(x->np->op_type, "ConvTranspose");
    ntp_onnx_value *wv, *bv = NULL;
    int in;
    ntp_status st;
    if ((st = ntp__onnx_in_tensor(x, 0, &in)) || (st = weight(x, 1, &wv)) ||
        (ntp__onnx_has_in(x, 2) && (st = weight(x, 2, &bv))))
        return st;
    ntp_shape xs = x->g->tensors[in].shape, ws = wv->c->shape;
    int nk = xs.ndim - 2;
    if (nk < 1 || ws.ndim != xs.ndim)
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR,
                             "input rank %d and weight rank %d do not "
                             "make a convolution",
                             xs.ndim, ws.ndim);
    ntp_op kind = transposed ? NTP_OP_DECONV : NTP_OP_CONV;
    int ni = ntp__onnx_add_node(x, kind, NULL, &in, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    ntp_attrs *a = &x->g->nodes[ni].a;
    if ((st = spatial(x, a, nk, ws.dim + 2)))
        return st;
    ntp__onnx_read_attrs(x, a, kind); /* group */
    a->filters = transposed ? ws.dim[1] * a->groups : ws.dim[0];
    a->bias = bv != NULL;
    if (transposed) {
        int64_t op[NTP_MAX_DIMS], os[NTP_MAX_DIMS];
        int nop = ntp__onnx_attr_ints(x, "output_padding", op, NTP_MAX_DIMS);
        int nos = ntp__onnx_attr_ints(x, "output_shape", os, NTP_MAX_DIMS);
        if (nop < 0 || nos < 0)
            return ntp_ctx_status(x->ctx);
        if ((nop && nop != nk) || (nos && nos != nk && nos != nk + 2))
            return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR,
                                 "output_padding or output_shape has "
                                 "the wrong length");
        for (int d = 0; d < nk; d++)
            a->output_padding[d] = nop ? op[d] : 0;
        a->n_output_padding = nk;
        bool same = a->pad_kind != NTP_PAD_EXPLICIT;
        if (nos || same) {
            /* ONNX: the total padding that gives the asked output shape,
             * split with the odd unit at the end for SAME_UPPER and at the
             * beginning otherwise. */
            for (int d = 0; d < nk; d++) {
                int64_t want = nos ? os[nos - nk + d] : xs.dim[2 + d] * a->stride[d];
                int64_t total = a->stride[d] * (xs.dim[2 + d] - 1) + a->output_padding[d] +
                                (a->kernel[d] - 1) * a->dilation[d] + 1 - want;
                if (total < 0) {
                    /* A larger output than the input gives: ONNX adds the
                     * difference at the end, as output padding. */
                    a->output_padding[d] -= total;
                    total = 0;
                }
                bool upper = a->pad_kind == NTP_PAD_SAME_UPPER;
                a->pad[d] = upper ? total / 2 : total - total / 2;
                a->pad[nk + d] = total - a->pad[d];
            }
            a->pad_kind = NTP_PAD_EXPLICIT;
            a->n_pad = 2 * nk;
        }
    }
    if ((st = ntp__onnx_add_weight_value(x, ni, wv, &ws)))
        return st;
    if (bv) {
        ntp_shape b = {1, {a->filters}};
        if ((st = ntp__onnx_add_weight_value(x, ni, bv, &b)))
            return st;
    }
    return finish(x, ni);
}

static const char *check_pool(const ntp_onnx_importer *x, const Onnx__NodeProto *np)
{
    if (np->n_output > 1 && ntp__onnx_value_used(x, np->output[1]))
        return "its Indices output";
    return NULL;
}

static ntp_status map_pool(ntp_onnx_importer *x)
{
    const char *t = x->np->op_type;
    bool global = !strncmp(t, "Global", 6), is_max = strstr(t, "Max") != NULL;
    int in;
    ntp_status st = ntp__onnx_in_tensor(x, 0, &in);
    if (st)
        return st;
    ntp_op op = global ? (is_max ? NTP_OP_GLOBAL_MAXPOOL : NTP_OP_GLOBAL_AVGPOOL)
                       : (is_max ? NTP_OP_MAXPOOL : NTP_OP_AVGPOOL);
    int ni = ntp__onnx_add_node(x, op, NULL, &in, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    if (!global) {
        ntp_attrs *a = &x->g->nodes[ni].a;
        if ((st = spatial(x, a, x->g->tensors[in].shape.ndim - 2, NULL)))
            return st;
        ntp__onnx_read_attrs(x, a, op); /* ceil_mode, count_include_pad */
        /* The IR's pools follow PyTorch: padding at most half the window. */
        for (int d = 0; a->pad_kind == NTP_PAD_EXPLICIT && d < a->n_pad; d++) {
            int64_t k = d % (a->n_pad / 2), ext = a->dilation[k] * (a->kernel[k] - 1) + 1;
            if (2 * a->pad[d] > ext)
                return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                                     "padding %lld is more than half the window %lld (ntprof's "
                                     "pools follow PyTorch's limit)",
                                     (long long)a->pad[d], (long long)ext);
        }
    }
    return finish(x, ni);
}

/* --- normalisation ---------------------------------------------------------------------- */

static const char *check_batchnorm(const ntp_onnx_importer *x, const Onnx__NodeProto *np)
{
    for (size_t k = 1; k < np->n_output; k++)
        if (ntp__onnx_value_used(x, np->output[k]))
            return "training outputs";
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *a = np->attribute[i];
        if (a->name && !strcmp(a->name, "training_mode") && a->i != 0)
            return "training_mode=1";
        if (a->name && !strcmp(a->name, "spatial") && a->i == 0)
            return "spatial=0";
    }
    return NULL;
}

static ntp_status map_batchnorm(ntp_onnx_importer *x)
{
    int in;
    ntp_onnx_value *w[4];
    ntp_status st = ntp__onnx_in_tensor(x, 0, &in);
    for (int k = 0; k < 4 && !st; k++)
        st = weight(x, 1 + k, &w[k]);
    if (st)
        return st;
    int ni = ntp__onnx_add_node(x, NTP_OP_BATCHNORM, NULL, &in, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    ntp__onnx_read_attrs(x, &x->g->nodes[ni].a, NTP_OP_BATCHNORM);
    const ntp_shape *xs = &x->g->tensors[in].shape;
    ntp_shape c = {1, {xs->ndim >= 2 ? xs->dim[1] : 1}};
    for (int k = 0; k < 4; k++)
        if ((st = ntp__onnx_add_weight_value(x, ni, w[k], &c)))
            return st;
    return finish(x, ni);
}

static ntp_status map_instancenorm(ntp_onnx_importer *x)
{
    int in;
    ntp_onnx_value *sv, *bv;
    ntp_status st;
    if ((st = ntp__onnx_in_tensor(x, 0, &in)) || (st = weight(x, 1, &sv)) ||
        (st = weight(x, 2, &bv)))
        return st;
    int ni = ntp__onnx_add_node(x, NTP_OP_INSTANCENORM, NULL, &in, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    ntp__onnx_read_attrs(x, &x->g->nodes[ni].a, NTP_OP_INSTANCENORM);
    const ntp_shape *xs = &x->g->tensors[in].shape;
    ntp_shape c = {1, {xs->ndim >= 2 ? xs->dim[1] : 1}};
    if ((st = ntp__onnx_add_weight_value(x, ni, sv, &c)) ||
        (st = ntp__onnx_add_weight_value(x, ni, bv, &c)))
        return st;
    return finish(x, ni);
}

/* One-input and two-input helper layers of a lowering. */
static ntp_status node1(ntp_onnx_importer *x, ntp_op op, int a, const char *suffix, int *out)
{
    int ni = ntp__onnx_add_node(x, op, suffix, &a, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    ntp_status st = ntp__onnx_infer(x, ni);
    if (!st)
        *out = x->g->nodes[ni].out[0];
    return st;
}

static ntp_status node2(ntp_onnx_importer *x, ntp_op op, int a, int b, const char *suffix, int *out)
{
    int ins[2] = {a, b};
    int ni = ntp__onnx_add_node(x, op, suffix, ins, 2, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    ntp_status st = ntp__onnx_infer(x, ni);
    if (!st)
        *out = x->g->nodes[ni].out[0];
    return st;
}

static ntp_status reduce_mean(ntp_onnx_importer *x, int a, const int64_t *axes, int na,
                              const char *suffix, int *out)
{
    int ni = ntp__onnx_add_node(x, NTP_OP_REDUCE_MEAN, suffix, &a, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    ntp__reduce_set(&x->g->nodes[ni].a, na, axes);
    ntp_status st = ntp__onnx_infer(x, ni);
    if (!st)
        *out = x->g->nodes[ni].out[0];
    return st;
}

/* gamma / beta of D values from a constant that is D values or one. */
static ntp_status flat_param(ntp_onnx_importer *x, int ni, int k, int64_t d, float fill)
{
    ntp_shape s = {1, {d}};
    if (ntp__onnx_has_in(x, k)) {
        ntp_onnx_value *v;
        ntp_status st = weight(x, k, &v);
        if (st)
            return st;
        if (v->c->n == d)
            return ntp__onnx_add_weight_value(x, ni, v, &s);
        if (v->c->n != 1)
            return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                                 "input %d has %lld values; %lld or 1 "
                                 "are supported",
                                 k, (long long)v->c->n, (long long)d);
        fill = (float)ntp__onnx_get_f(v->c, 0);
    }
    float *f = malloc((size_t)d * sizeof *f + 1);
    if (!f)
        return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int64_t i = 0; i < d; i++)
        f[i] = fill;
    char name[300];
    snprintf(name, sizeof name, "%.250s.%s", x->node_name, k == 1 ? "gamma" : "beta");
    return ntp__onnx_add_weight(x, ni, name, f, &s);
}

static ntp_status map_layernorm(ntp_onnx_importer *x)
{
    int in;
    ntp_status st = ntp__onnx_in_tensor(x, 0, &in);
    if (st)
        return st;
    const ntp_shape xs = x->g->tensors[in].shape;
    int64_t axis;
    if (!ntp__onnx_axis(ntp__onnx_attr_i(x, "axis", -1), xs.ndim, &axis))
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "axis out of range");
    int64_t d = 1;
    for (int i = (int)axis; i < xs.ndim; i++)
        d *= xs.dim[i];
    int ni = ntp__onnx_add_node(x, NTP_OP_LAYERNORM, NULL, &in, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    x->g->nodes[ni].a.axis = axis;
    ntp__onnx_read_attrs(x, &x->g->nodes[ni].a, NTP_OP_LAYERNORM);
    if ((st = flat_param(x, ni, 1, d, 1.0f)) || (st = flat_param(x, ni, 2, d, 0.0f)) ||
        (st = finish(x, ni)))
        return st;
    if (!ntp__onnx_out_used(x, 1) && !ntp__onnx_out_used(x, 2))
        return NTP_STATUS_OK;
    /* Mean and InvStdDev, asked for: computed by their own layers (the
     * normalisation is the IR's one layer, which keeps neither). */
    int mean = -1, c = -1, sq = -1, var = -1, eps = -1, inv = -1;
    int64_t axes[NTP_MAX_DIMS];
    int na = 0;
    for (int i = (int)axis; i < xs.ndim; i++)
        axes[na++] = i;
    if ((st = reduce_mean(x, in, axes, na, "Mean", &mean)) ||
        (st = node2(x, NTP_OP_SUB, in, mean, "centered", &c)) ||
        (st = node2(x, NTP_OP_MUL, c, c, "squared", &sq)) ||
        (st = reduce_mean(x, sq, axes, na, "variance", &var)) ||
        (st = ntp__onnx_scalar(x, ntp__onnx_attr_f(x, "epsilon", 1e-5), "epsilon", &eps)) ||
        (st = node2(x, NTP_OP_ADD, var, eps, "variance_eps", &var)) ||
        (st = node1(x, NTP_OP_SQRT, var, "stddev", &inv)) ||
        (st = node1(x, NTP_OP_RECIPROCAL, inv, "InvStdDev", &inv)))
        return st;
    ntp__onnx_out_tensor(x, 1, mean);
    return ntp__onnx_out_tensor(x, 2, inv);
}

static ntp_status map_lrn(ntp_onnx_importer *x)
{
    int in;
    ntp_status st = ntp__onnx_in_tensor(x, 0, &in);
    if (st)
        return st;
    int ni = ntp__onnx_add_node(x, NTP_OP_LRN, NULL, &in, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    ntp__onnx_read_attrs(x, &x->g->nodes[ni].a, NTP_OP_LRN);
    return finish(x, ni);
}

/* --- Gemm, MatMul -------------------------------------------------------------------------- */

/* B [K, N] (or [N, K] when tb) scaled by alpha, as fc's W [N, K]. */
static float *fc_weight(const ntp_onnx_tensor *b, bool tb, double alpha, int64_t *k, int64_t *n)
{
    *k = tb ? b->shape.dim[1] : b->shape.dim[0];
    *n = tb ? b->shape.dim[0] : b->shape.dim[1];
    float *w = malloc((size_t)(*k * *n) * sizeof *w + 1);
    if (!w)
        return NULL;
    for (int64_t i = 0; i < *n; i++)
        for (int64_t j = 0; j < *k; j++) {
            double v = ntp__onnx_get_f(b, tb ? i * *k + j : j * *n + i);
            w[i * *k + j] = (float)(alpha == 1.0 ? v : alpha * v);
        }
    return w;
}

/* The input tensor of a transpose that swaps the last two dims, or -1. */
static int swapped_source(ntp_onnx_importer *x, int t)
{
    ntp_node *p = ntp__onnx_producer(x, t);
    if (!p || p->op != NTP_OP_TRANSPOSE || p->a.n_perm < 2)
        return -1;
    int r = p->a.n_perm;
    for (int d = 0; d < r - 2; d++)
        if (p->a.perm[d] != d)
            return -1;
    return p->a.perm[r - 2] == r - 1 && p->a.perm[r - 1] == r - 2 ? p->in[0] : -1;
}

/* A matmul of two run-time tensors (rank-1 operands made rank 2 and the
 * extra dim dropped after, as numpy does), folding transposes of the last
 * two dims into the layer's flags. */
static ntp_status run_matmul(ntp_onnx_importer *x, int a, int b, bool ta, bool tb,
                             const char *suffix, int *out)
{
    ntp_status st;
    ntp_shape as = x->g->tensors[a].shape, bs = x->g->tensors[b].shape;
    bool a1 = as.ndim == 1, b1 = bs.ndim == 1;
    if (a1) {
        ntp_shape to = {2, {1, as.dim[0]}};
        if ((st = ntp__onnx_reshape(x, a, &to, "row", &a)))
            return st;
    }
    if (b1) {
        ntp_shape to = {2, {bs.dim[0], 1}};
        if ((st = ntp__onnx_reshape(x, b, &to, "column", &b)))
            return st;
    }
    int s;
    if (!a1 && (s = swapped_source(x, a)) >= 0) {
        a = s;
        ta = !ta;
    }
    if (!b1 && (s = swapped_source(x, b)) >= 0) {
        b = s;
        tb = !tb;
    }
    int ins[2] = {a, b};
    int ni = ntp__onnx_add_node(x, NTP_OP_MATMUL, a1 || b1 ? "matmul" : suffix, ins, 2, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    x->g->nodes[ni].a.transpose_a = ta;
    x->g->nodes[ni].a.transpose_b = tb;
    if ((st = ntp__onnx_infer(x, ni)))
        return st;
    *out = x->g->nodes[ni].out[0];
    if (a1 || b1) {
        ntp_shape ys = x->g->tensors[*out].shape, to = {0};
        for (int d = 0; d < ys.ndim; d++)
            if (!((a1 && d == ys.ndim - 2) || (b1 && d == ys.ndim - 1)))
                to.dim[to.ndim++] = ys.dim[d];
        if ((st = ntp__onnx_reshape(x, *out, &to, suffix, out)))
            return st;
    }
    return NTP_STATUS_OK;
}

static ntp_status map_matmul(ntp_onnx_importer *x)
{
    ntp_status st;
    int a, b;
    if ((st = ntp__onnx_in_tensor(x, 0, &a)))
        return st;
    ntp_onnx_value *bv = ntp__onnx_in_value(x, 1);
    if (bv && ntp__onnx_in_is_const(x, 1) && !(st = ntp__onnx_value_const(x, bv)) && bv->c &&
        bv->c->shape.ndim == 2 && bv->tensor < 0) {
        /* x @ B with B an initializer is an fc layer with W = Bᵀ. */
        int64_t k, n;
        float *w = fc_weight(bv->c, false, 1.0, &k, &n);
        if (!w)
            return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        int ni = ntp__onnx_add_node(x, NTP_OP_FC, NULL, &a, 1, 1);
        if (ni < 0) {
            free(w);
            return ntp_ctx_status(x->ctx);
        }
        x->g->nodes[ni].a.units = n;
        x->g->nodes[ni].a.bias = false;
        ntp_shape ws = {2, {n, k}};
        if ((st = ntp__onnx_add_weight(x, ni, bv->name, w, &ws)))
            return st;
        return finish(x, ni);
    }
    if (st || (st = ntp__onnx_in_tensor(x, 1, &b)))
        return st;
    int out;
    if ((st = run_matmul(x, a, b, false, false, NULL, &out)))
        return st;
    return ntp__onnx_out_tensor(x, 0, out);
}

/* *t times a constant: a one-value <constant> layer and a <mul>. */
static ntp_status scale(ntp_onnx_importer *x, int *t, double by, const char *suffix)
{
    char sfx[64];
    snprintf(sfx, sizeof sfx, "%s_value", suffix ? suffix : "scale");
    int c;
    ntp_status st = ntp__onnx_scalar(x, (float)by, sfx, &c);
    if (st)
        return st;
    int ins[2] = {*t, c};
    int mi = ntp__onnx_add_node(x, NTP_OP_MUL, suffix, ins, 2, 1);
    if (mi < 0)
        return ntp_ctx_status(x->ctx);
    if ((st = ntp__onnx_infer(x, mi)))
        return st;
    *t = x->g->nodes[mi].out[0];
    return NTP_STATUS_OK;
}

/* Gemm: Y = alpha·op(A)·op(B) + beta·C. With B an initializer, an fc layer
 * (alpha folded into W, beta·C its bias when C is a vector; otherwise an
 * add of the constant); with B computed, a matmul with the scalings as
 * layers. */
static ntp_status map_gemm(ntp_onnx_importer *x)
{
    double alpha = ntp__onnx_attr_f(x, "alpha", 1.0), beta = ntp__onnx_attr_f(x, "beta", 1.0);
    bool ta = ntp__onnx_attr_i(x, "transA", 0) != 0, tb = ntp__onnx_attr_i(x, "transB", 0) != 0;
    int a, out;
    ntp_status st;
    if ((st = ntp__onnx_in_tensor(x, 0, &a)))
        return st;
    if (x->g->tensors[a].shape.ndim != 2)
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "A must be a matrix");
    if (ta) {
        int64_t perm[2] = {1, 0};
        if ((st = ntp__onnx_transpose(x, a, perm, 2, "transA", &a)))
            return st;
    }
    ntp_onnx_value *bv = ntp__onnx_in_value(x, 1), *cv = ntp__onnx_in_value(x, 2);
    bool has_c = cv && beta != 0.0;
    const ntp_onnx_tensor *c = NULL;
    if (has_c && ntp__onnx_in_is_const(x, 2) && (st = ntp__onnx_in_const(x, 2, &c)))
        return st;
    if (bv && ntp__onnx_in_is_const(x, 1)) {
        if ((st = ntp__onnx_value_const(x, bv)))
            return st;
        if (bv->c->shape.ndim != 2)
            return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "B must be a matrix");
        int64_t k, n;
        float *w;
        ntp_shape ws = {2, {0}};
        if (tb && alpha == 1.0 && !bv->weight_taken && bv->c->f) {
            w = NULL; /* W is B itself: shared, not copied */
            k = bv->c->shape.dim[1];
            n = bv->c->shape.dim[0];
        } else if (!(w = fc_weight(bv->c, tb, alpha, &k, &n))) {
            return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        }
        ws.dim[0] = n;
        ws.dim[1] = k;
        /* C as fc's bias when it is one value per output ([N], [1, N] or a
         * scalar). */
        bool c_vec = c && (c->n == n || c->n == 1) &&
                     (c->shape.ndim < 2 || c->shape.dim[c->shape.ndim - 2] == 1);
        int ni = ntp__onnx_add_node(x, NTP_OP_FC, c && !c_vec ? "fc" : NULL, &a, 1, 1);
        if (ni < 0) {
            free(w);
            return ntp_ctx_status(x->ctx);
        }
        x->g->nodes[ni].a.units = n;
        x->g->nodes[ni].a.bias = c_vec;
        st = w ? ntp__onnx_add_weight(x, ni, bv->name, w, &ws)
               : ntp__onnx_add_weight_value(x, ni, bv, &ws);
        if (st)
            return st;
        if (c_vec) {
            ntp_shape bs = {1, {n}};
            if (c->n == n && beta == 1.0 && c->f && !cv->weight_taken) {
                st = ntp__onnx_add_weight_value(x, ni, cv, &bs);
            } else {
                float *bf = malloc((size_t)n * sizeof *bf + 1);
                if (!bf)
                    return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
                for (int64_t i = 0; i < n; i++)
                    bf[i] = (float)(beta * ntp__onnx_get_f(c, c->n == 1 ? 0 : i));
                st = ntp__onnx_add_weight(x, ni, cv->name, bf, &bs);
            }
            if (st)
                return st;
        }
        if ((st = ntp__onnx_infer(x, ni)))
            return st;
        out = x->g->nodes[ni].out[0];
        if (!has_c || c_vec)
            return ntp__onnx_out_tensor(x, 0, out);
    } else {
        int b;
        if ((st = ntp__onnx_in_tensor(x, 1, &b)) ||
            (st = run_matmul(x, a, b, false, tb, has_c || alpha != 1.0 ? "matmul" : NULL, &out)) ||
            (alpha != 1.0 && (st = scale(x, &out, alpha, has_c ? "alpha" : NULL))))
            return st;
        if (!has_c)
            return ntp__onnx_out_tensor(x, 0, out);
    }
    int ct;
    if ((st = ntp__onnx_in_tensor(x, 2, &ct)) ||
        (beta != 1.0 && (st = scale(x, &ct, beta, "beta"))))
        return st;
    int ins[2] = {out, ct};
    int ai = ntp__onnx_add_node(x, NTP_OP_ADD, NULL, ins, 2, 1);
    return ai < 0 ? ntp_ctx_status(x->ctx) : finish(x, ai);
}

/* --- recurrent layers ----------------------------------------------------------------------- */

static bool all_zero(const ntp_onnx_tensor *c)
{
    for (int64_t k = 0; k < c->n; k++)
        if (ntp__onnx_get_f(c, k) != 0.0)
            return false;
    return true;
}

static const char *check_rnn(const ntp_onnx_importer *x, const Onnx__NodeProto *np)
{
    bool lstm = !strcmp(np->op_type, "LSTM"), gru = !strcmp(np->op_type, "GRU");
    (void)x;
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *a = np->attribute[i];
        if (!a->name)
            continue;
        if (!strcmp(a->name, "clip"))
            return "clip";
        if (!strcmp(a->name, "input_forget") && a->i)
            return "input_forget=1";
        if (!strcmp(a->name, "activation_alpha") || !strcmp(a->name, "activation_beta"))
            return "activation parameters";
        if (!strcmp(a->name, "activations")) {
            for (size_t k = 0; k < a->n_strings; k++) {
                const char *want = lstm  ? (k % 3 == 0 ? "Sigmoid" : "Tanh")
                                   : gru ? (k % 2 == 0 ? "Sigmoid" : "Tanh")
                                         : NULL;
                size_t l = a->strings[k].len;
                const char *s = (const char *)a->strings[k].data;
                bool ok =
                    want ? strlen(want) == l && !strncmp(s, want, l)
                         : (l == 4 && !strncmp(s, "Tanh", 4)) || (l == 4 && !strncmp(s, "Relu", 4));
                if (!ok)
                    return "activations other than the default";
                if (!want && k > 0 &&
                    (a->strings[0].len != l || strncmp(s, (const char *)a->strings[0].data, l)))
                    return "different activations per direction";
            }
        }
    }
    if (gru) {
        bool lbr = false;
        for (size_t i = 0; i < np->n_attribute; i++)
            if (np->attribute[i]->name && !strcmp(np->attribute[i]->name, "linear_before_reset"))
                lbr = np->attribute[i]->i != 0;
        if (!lbr)
            return "linear_before_reset=0 (ntprof's gru is PyTorch's, linear_before_reset=1)";
    }
    if (lstm && np->n_output > 2 && ntp__onnx_value_used(x, np->output[2]))
        return "its Y_c output";
    return NULL;
}

/* Slice [lo, hi) of axis 0 and [clo, chi) of axis 2 of a [T, N, W] tensor. */
static ntp_status rnn_slice(ntp_onnx_importer *x, int t, int64_t lo, int64_t clo, int64_t chi,
                            const char *suffix, int *out)
{
    int ni = ntp__onnx_add_node(x, NTP_OP_SLICE, suffix, &t, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    const int64_t starts[2] = {lo, clo}, ends[2] = {lo + 1, chi}, axes[2] = {0, 2};
    ntp__slice_set(&x->g->nodes[ni].a, 2, starts, ends, axes, NULL);
    ntp_status st = ntp__onnx_infer(x, ni);
    if (!st)
        *out = x->g->nodes[ni].out[0];
    return st;
}

static ntp_status map_rnn(ntp_onnx_importer *x)
{
    const char *t = x->np->op_type;
    bool lstm = !strcmp(t, "LSTM"), gru = !strcmp(t, "GRU");
    int64_t G = lstm ? 4 : gru ? 3 : 1;
    ntp_onnx_value *wv, *rv, *bv = NULL;
    int in;
    ntp_status st;
    if ((st = ntp__onnx_in_tensor(x, 0, &in)) || (st = weight(x, 1, &wv)) ||
        (st = weight(x, 2, &rv)) || (ntp__onnx_has_in(x, 3) && (st = weight(x, 3, &bv))))
        return st;
    /* Initial states and peepholes must be absent or zero, and every
     * sequence full length: the IR's layers start from zero states. */
    for (int k = 4; k < (lstm ? 8 : 6); k++) {
        if (!ntp__onnx_has_in(x, k))
            continue;
        const ntp_onnx_tensor *c;
        if ((st = ntp__onnx_in_const(x, k, &c)))
            return st;
        if (k == 4) {
            const ntp_shape *xs = &x->g->tensors[in].shape;
            int64_t T = ntp__onnx_attr_i(x, "layout", 0) ? xs->dim[1] : xs->dim[0];
            for (int64_t i = 0; i < c->n; i++)
                if (ntp__onnx_get_i(c, i) != T)
                    return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                                         "sequence_lens shorter than the input (%lld of %lld)",
                                         (long long)ntp__onnx_get_i(c, i), (long long)T);
        } else if (!all_zero(c)) {
            return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "a non-zero %s",
                                 k == 7 ? "peephole input P" : "initial state");
        }
    }
    char buf[32];
    const char *dir = ntp__onnx_attr_s(x, "direction", "forward", buf, sizeof buf);
    int direction = !strcmp(dir, "forward")   ? NTP_DIR_FORWARD
                    : !strcmp(dir, "reverse") ? NTP_DIR_REVERSE
                                              : NTP_DIR_BIDIRECTIONAL;
    if (strcmp(dir, "forward") && strcmp(dir, "reverse") && strcmp(dir, "bidirectional"))
        return ntp__onnx_err(x, NTP_STATUS_PARSE_ERROR, "unknown direction '%s'", dir);
    int64_t dirs = direction == NTP_DIR_BIDIRECTIONAL ? 2 : 1;
    const ntp_shape ws = wv->c->shape, rs = rv->c->shape;
    int64_t H = ntp__onnx_attr_i(x, "hidden_size", rs.ndim == 3 ? rs.dim[2] : 0);
    if (ws.ndim != 3 || rs.ndim != 3 || ws.dim[0] != dirs || ws.dim[1] != G * H ||
        rs.dim[1] != G * H || rs.dim[2] != H)
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR,
                             "W and R do not match hidden_size %lld "
                             "and %lld direction(s)",
                             (long long)H, (long long)dirs);
    bool batch_first = ntp__onnx_attr_i(x, "layout", 0) != 0;
    if (batch_first) {
        int64_t perm[3] = {1, 0, 2};
        if ((st = ntp__onnx_transpose(x, in, perm, 3, "time_major", &in)))
            return st;
    }
    bool want_y = ntp__onnx_out_used(x, 0), want_h = ntp__onnx_out_used(x, 1);
    int ni = ntp__onnx_add_node(x,
                                lstm  ? NTP_OP_LSTM
                                : gru ? NTP_OP_GRU
                                      : NTP_OP_RNN,
                                want_y ? "cell" : "last", &in, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    ntp_attrs *a = &x->g->nodes[ni].a;
    a->units = H;
    a->direction = direction;
    a->merge = NTP_MERGE_CONCAT;
    a->last_step = !want_y;
    a->bias = bv != NULL;
    const Onnx__AttributeProto *acts = ntp__onnx_attr(x, "activations");
    a->rnn_act = !lstm && !gru && acts && acts->n_strings > 0 && acts->strings[0].len == 4 &&
                         !strncmp((const char *)acts->strings[0].data, "Relu", 4)
                     ? NTP_RNN_ACT_RELU
                     : NTP_RNN_ACT_TANH;
    ntp_shape bs = {2, {dirs, 2 * G * H}};
    if ((st = ntp__onnx_add_weight_value(x, ni, wv, &ws)) ||
        (st = ntp__onnx_add_weight_value(x, ni, rv, &rs)) ||
        (bv && (st = ntp__onnx_add_weight_value(x, ni, bv, &bs))) || (st = ntp__onnx_infer(x, ni)))
        return st;
    int out = x->g->nodes[ni].out[0];
    const ntp_shape os = x->g->tensors[out].shape;
    int64_t T = want_y ? os.dim[0] : 0, N = want_y ? os.dim[1] : os.dim[0];
    /* Y: [T, N, dirs·H] -> [T, dirs, N, H] (batch-first: [N, T, dirs, H]). */
    if (want_y) {
        ntp_shape s4 = {4, {T, N, dirs, H}};
        int y;
        if ((st = ntp__onnx_reshape(x, out, &s4, "split_dirs", &y)))
            return st;
        int64_t perm[4] = {0, 2, 1, 3}, perm_bf[4] = {1, 0, 2, 3};
        if (dirs > 1 && !batch_first && (st = ntp__onnx_transpose(x, y, perm, 4, "Y", &y)))
            return st;
        if (batch_first && (st = ntp__onnx_transpose(x, y, perm_bf, 4, "Y", &y)))
            return st;
        if (dirs == 1 && !batch_first) {
            ntp_shape s = {4, {T, 1, N, H}};
            if ((st = ntp__onnx_reshape(x, out, &s, "Y", &y)))
                return st;
        }
        if ((st = ntp__onnx_out_tensor(x, 0, y)))
            return st;
    }
    if (!want_h)
        return NTP_STATUS_OK;
    /* Y_h: [dirs, N, H] (batch-first [N, dirs, H]): the last step of each
     * direction, sliced from Y, or the layer's own last-step output. */
    int h;
    if (want_y) {
        int parts[2];
        for (int64_t d = 0; d < dirs; d++) {
            bool rev = direction == NTP_DIR_REVERSE || d == 1;
            if ((st = rnn_slice(x, out, rev ? 0 : T - 1, d * H, (d + 1) * H,
                                d ? "Y_h_reverse" : "Y_h_forward", &parts[d])))
                return st;
        }
        h = parts[0];
        if (dirs == 2) {
            int ci = ntp__onnx_add_node(x, NTP_OP_CONCAT, "Y_h", parts, 2, 1);
            if (ci < 0)
                return ntp_ctx_status(x->ctx);
            x->g->nodes[ci].a.axis = 0;
            if ((st = ntp__onnx_infer(x, ci)))
                return st;
            h = x->g->nodes[ci].out[0];
        }
        /* [dirs, N, H] already, as [1 or 2, N, H]. */
    } else {
        ntp_shape s3 = {3, {N, dirs, H}};
        int64_t perm[3] = {1, 0, 2};
        if ((st = ntp__onnx_reshape(x, out, &s3, "split_dirs", &h)) ||
            (!batch_first && (st = ntp__onnx_transpose(x, h, perm, 3, "Y_h", &h))))
            return st;
    }
    if (batch_first && want_y) {
        int64_t perm[3] = {1, 0, 2};
        if ((st = ntp__onnx_transpose(x, h, perm, 3, "Y_h_batch_first", &h)))
            return st;
    }
    return ntp__onnx_out_tensor(x, 1, h);
}

#define SPATIAL "auto_pad,kernel_shape,pads,strides,dilations"
const ntp_onnx_map ntp__onnx_map_nn[] = {
    {"Conv", map_conv, NULL, SPATIAL ",group"},
    {"ConvTranspose", map_conv, NULL, SPATIAL ",group,output_padding,output_shape"},
    {"MaxPool", map_pool, check_pool, SPATIAL ",ceil_mode,storage_order"},
    {"AveragePool", map_pool, NULL, SPATIAL ",ceil_mode,count_include_pad"},
    {"GlobalMaxPool", map_pool, NULL, ""},
    {"GlobalAveragePool", map_pool, NULL, ""},
    {"BatchNormalization", map_batchnorm, check_batchnorm,
     "epsilon,momentum,spatial,is_test,consumed_inputs,training_mode"},
    {"InstanceNormalization", map_instancenorm, NULL, "epsilon"},
    {"LayerNormalization", map_layernorm, NULL, "axis,epsilon,stash_type"},
    {"LRN", map_lrn, NULL, "alpha,beta,bias,size"},
    {"Gemm", map_gemm, NULL, "alpha,beta,transA,transB,broadcast"},
    {"MatMul", map_matmul, NULL, ""},
    {"LSTM", map_rnn, check_rnn,
     "activation_alpha,activation_beta,activations,clip,direction,hidden_size,input_forget,"
     "layout"},
    {"GRU", map_rnn, check_rnn,
     "activation_alpha,activation_beta,activations,clip,direction,hidden_size,"
     "linear_before_reset,layout"},
    {"RNN", map_rnn, check_rnn,
     "activation_alpha,activation_beta,activations,clip,direction,hidden_size,layout"},
    {NULL, NULL, NULL, NULL},
};
