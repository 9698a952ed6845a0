/* ONNX data-movement ops -> IR nodes: reshapes, transposes, concat and
 * split, slices and gathers, pads, expand and tile, resizes, depth/space
 * rearrangements, and the identities (Identity, Dropout, Cast to FLOAT).
 * What the IR has no op for is lowered: Squeeze and Unsqueeze are
 * reshapes, Gather with constant indices is slices and a concat, Tile is a
 * reshape, an expand and a reshape, DepthToSpace a reshape, a transpose and
 * a reshape. */
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

/* An integer list from constant input k, or from attribute `attr` when the
 * opset predates the input (k < 0 or opset < since). Returns the count or
 * -1 with an error recorded; *given says whether either was present. */
static int ints_of(ntp_onnx_importer *x, int k, int since, const char *attr, int64_t *v, int max,
                   bool *given)
{
    *given = false;
    if (k >= 0 && x->opset >= since) {
        if (!ntp__onnx_has_in(x, k))
            return 0;
        const ntp_onnx_tensor *c;
        if (ntp__onnx_in_const(x, k, &c))
            return -1;
        if (c->shape.ndim > 1 || c->n > max || c->f) {
            ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "input %d must be at most %d integers", k,
                          max);
            return -1;
        }
        for (int64_t i = 0; i < c->n; i++)
            v[i] = c->i[i];
        *given = true;
        return (int)c->n;
    }
    *given = ntp__onnx_attr(x, attr) != NULL;
    return ntp__onnx_attr_ints(x, attr, v, max);
}

static ntp_status alias(ntp_onnx_importer *x)
{
    int t;
    ntp_status st = ntp__onnx_in_tensor(x, 0, &t);
    return st ? st : ntp__onnx_out_tensor(x, 0, t);
}

/* Identity of a run-time tensor is a copy, as ONNX defines it (<memcpy>);
 * Identity of a constant was folded before it got here. */
static ntp_status map_identity(ntp_onnx_importer *x)
{
    int t;
    ntp_status st = ntp__onnx_in_tensor(x, 0, &t);
    if (st)
        return st;
    int ni = ntp__onnx_add_node(x, NTP_OP_MEMCPY, NULL, &t, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    return finish(x, ni);
}

static const char *check_dropout(const ntp_onnx_importer *x, const Onnx__NodeProto *np)
{
    if (np->n_output > 1 && ntp__onnx_value_used(x, np->output[1]))
        return "its mask output";
    return NULL;
}

static ntp_status map_dropout(ntp_onnx_importer *x)
{
    ntp_status st;
    if (ntp__onnx_has_in(x, 2)) {
        const ntp_onnx_tensor *c;
        if ((st = ntp__onnx_in_const(x, 2, &c)))
            return st;
        if (c->n > 0 && ntp__onnx_get_i(c, 0))
            return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "training_mode is true");
    }
    int t;
    if ((st = ntp__onnx_in_tensor(x, 0, &t)))
        return st;
    int ni = ntp__onnx_add_node(x, NTP_OP_DROPOUT, NULL, &t, 1, 1);
    return ni < 0 ? ntp_ctx_status(x->ctx) : finish(x, ni);
}

/* Cast between floating-point types of run-time tensors is the identity
 * (ntprof computes in f32 whatever the precision); other casts are only
 * evaluated at load time. */
static ntp_status map_cast(ntp_onnx_importer *x)
{
    int32_t to;
    if (!strcmp(x->np->op_type, "Cast")) {
        to = (int32_t)ntp__onnx_attr_i(x, "to", NTP_ONNX_UNDEFINED);
    } else {
        ntp_onnx_value *v = ntp__onnx_in_value(x, 1);
        to = v ? v->dtype : NTP_ONNX_UNDEFINED;
        if (v && v->c)
            to = v->c->dtype;
        if (v && v->tensor >= 0 && !v->c)
            to = NTP_ONNX_FLOAT;
    }
    /* A float cast to BOOL that only Where reads as its condition: the IR's
     * where takes any non-zero value as true, which is what the cast does. */
    if (to == NTP_ONNX_BOOL && ntp__onnx_has_out(x, 0) && !ntp__onnx_out_is_graph_output(x, 0)) {
        int n = ntp__onnx_readers(x, x->np->output[0]), where = 0;
        for (int i = 0; i < n; i++) {
            int slot, r = ntp__onnx_reader(x, x->np->output[0], i, &slot);
            const char *op = x->gp->node[r]->op_type;
            where += slot == 0 && op && !strcmp(op, "Where");
        }
        if (n > 0 && where == n)
            return alias(x);
    }
    /* Integer run-time data (an image of bytes, token counts) to FLOAT: the
     * IR's convert. */
    ntp_onnx_value *iv = ntp__onnx_in_value(x, 0);
    if (to == NTP_ONNX_FLOAT && iv && iv->tensor >= 0 &&
        x->g->tensors[iv->tensor].dtype != NTP_DTYPE_F32) {
        int t = iv->tensor;
        int ni = ntp__onnx_add_node(x, NTP_OP_CONVERT, NULL, &t, 1, 1);
        if (ni < 0)
            return ntp_ctx_status(x->ctx);
        x->g->nodes[ni].a.has_to_dtype = true;
        x->g->nodes[ni].a.to_dtype = NTP_DTYPE_F32;
        ntp_status st = ntp__onnx_infer(x, ni);
        return st ? st : ntp__onnx_out_tensor(x, 0, x->g->nodes[ni].out[0]);
    }
    if (to != NTP_ONNX_FLOAT)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                             "a cast to %s at run time: ntprof's layers compute in floating point",
                             ntp__onnx_dtype_name(to));
    return alias(x);
}

/* --- reshapes ----------------------------------------------------------------------------- */

static ntp_status map_reshape(ntp_onnx_importer *x)
{
    int in;
    ntp_status st = ntp__onnx_in_tensor(x, 0, &in);
    if (st)
        return st;
    const ntp_shape s = x->g->tensors[in].shape;
    int64_t v[NTP_MAX_DIMS + 1];
    bool given;
    int n = ints_of(x, 1, 5, "shape", v, NTP_MAX_DIMS, &given);
    if (n < 0)
        return ntp_ctx_status(x->ctx);
    bool allowzero = ntp__onnx_attr_i(x, "allowzero", 0) != 0;
    ntp_shape to = {n, {0}};
    int infer = -1;
    int64_t known = 1;
    for (int d = 0; d < n; d++) {
        to.dim[d] = v[d];
        if (v[d] == 0 && !allowzero) {
            if (d >= s.ndim)
                return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR,
                                     "shape entry %d copies a dim the "
                                     "input lacks",
                                     d);
            to.dim[d] = s.dim[d];
        }
        if (to.dim[d] == -1 && infer < 0) {
            infer = d;
            continue;
        }
        if (to.dim[d] <= 0)
            return ntp__onnx_err(x,
                                 to.dim[d] == 0 ? NTP_STATUS_UNSUPPORTED : NTP_STATUS_SHAPE_ERROR,
                                 "shape entry %d is %lld", d, (long long)to.dim[d]);
        if (!ntp__mul_ok(known, to.dim[d], &known))
            return ntp__onnx_err(x, NTP_STATUS_OVERFLOW, "reshape target overflows 64-bit sizes");
    }
    if (infer >= 0)
        to.dim[infer] = known > 0 ? ntp_shape_numel(&s) / known : 0;
    if (ntp_shape_numel(&to) != ntp_shape_numel(&s))
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR,
                             "cannot reshape %lld elements to that "
                             "shape",
                             (long long)ntp_shape_numel(&s));
    int out;
    if ((st = ntp__onnx_reshape(x, in, &to, NULL, &out)))
        return st;
    return ntp__onnx_out_tensor(x, 0, out);
}

static ntp_status map_flatten(ntp_onnx_importer *x)
{
    int in;
    ntp_status st = ntp__onnx_in_tensor(x, 0, &in);
    if (st)
        return st;
    int ni = ntp__onnx_add_node(x, NTP_OP_FLATTEN, NULL, &in, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    ntp__onnx_read_attrs(x, &x->g->nodes[ni].a, NTP_OP_FLATTEN);
    return finish(x, ni);
}

static ntp_status map_squeeze(ntp_onnx_importer *x)
{
    bool unsq = !strcmp(x->np->op_type, "Unsqueeze");
    int in;
    ntp_status st = ntp__onnx_in_tensor(x, 0, &in);
    if (st)
        return st;
    const ntp_shape s = x->g->tensors[in].shape;
    int64_t v[NTP_MAX_DIMS];
    bool given;
    int n = ints_of(x, 1, 13, "axes", v, NTP_MAX_DIMS, &given);
    if (n < 0)
        return ntp_ctx_status(x->ctx);
    int r = unsq ? s.ndim + n : s.ndim;
    if (r > NTP_MAX_DIMS)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "more than %d dims", NTP_MAX_DIMS);
    bool mark[NTP_MAX_DIMS] = {false};
    for (int i = 0; i < n; i++) {
        int64_t a;
        if (!ntp__onnx_axis(v[i], r, &a) || mark[a])
            return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR,
                                 "axis %lld is out of range or "
                                 "repeated",
                                 (long long)v[i]);
        mark[a] = true;
    }
    ntp_shape to = {0};
    for (int d = 0, j = 0; d < r; d++) {
        if (unsq)
            to.dim[to.ndim++] = mark[d] ? 1 : s.dim[j++];
        else if (n == 0 ? s.dim[d] != 1 : !mark[d])
            to.dim[to.ndim++] = s.dim[d];
        else if (s.dim[d] != 1)
            return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "dim %d has size %lld, not 1", d,
                                 (long long)s.dim[d]);
    }
    int out;
    if ((st = ntp__onnx_reshape(x, in, &to, NULL, &out)))
        return st;
    return ntp__onnx_out_tensor(x, 0, out);
}

static ntp_status map_transpose(ntp_onnx_importer *x)
{
    int in;
    ntp_status st = ntp__onnx_in_tensor(x, 0, &in);
    if (st)
        return st;
    int r = x->g->tensors[in].shape.ndim;
    int64_t perm[NTP_MAX_DIMS];
    int n = ntp__onnx_attr_ints(x, "perm", perm, NTP_MAX_DIMS);
    if (n < 0)
        return ntp_ctx_status(x->ctx);
    if (n == 0)
        for (int d = 0; d < r; d++)
            perm[d] = r - 1 - d;
    else if (n != r)
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "perm has %d entries for rank %d", n, r);
    bool seen[NTP_MAX_DIMS] = {false};
    for (int d = 0; d < r; d++) {
        if (perm[d] < 0 || perm[d] >= r || seen[perm[d]])
            return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "perm is not a permutation");
        seen[perm[d]] = true;
    }
    int out;
    if ((st = ntp__onnx_transpose(x, in, perm, r, NULL, &out)))
        return st;
    return ntp__onnx_out_tensor(x, 0, out);
}

/* --- concat, split --------------------------------------------------------------------------- */

/* Concatenate n tensors along axis, in groups of at most NTP_MAX_INPUTS. */
static ntp_status concat(ntp_onnx_importer *x, int *in, int n, int64_t axis, const char *suffix,
                         int *out)
{
    ntp_status st;
    int step = 0;
    while (n > 1) {
        int m = 0;
        for (int i = 0; i < n; i += NTP_MAX_INPUTS, m++) {
            int take = n - i < NTP_MAX_INPUTS ? n - i : NTP_MAX_INPUTS;
            if (take == 1) {
                in[m] = in[i];
                continue;
            }
            char sfx[64];
            snprintf(sfx, sizeof sfx, "concat%d", step++);
            bool last = n <= NTP_MAX_INPUTS;
            int ni = ntp__onnx_add_node(x, NTP_OP_CONCAT, last ? suffix : sfx, in + i, take, 1);
            if (ni < 0)
                return ntp_ctx_status(x->ctx);
            x->g->nodes[ni].a.axis = axis;
            if ((st = ntp__onnx_infer(x, ni)))
                return st;
            in[m] = x->g->nodes[ni].out[0];
        }
        n = m;
    }
    *out = in[0];
    return NTP_STATUS_OK;
}

static ntp_status map_concat(ntp_onnx_importer *x)
{
    int n = 0, in[256];
    ntp_status st;
    if (x->np->n_input > 256)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "more than 256 inputs");
    for (size_t k = 0; k < x->np->n_input; k++) {
        if (!ntp__onnx_has_in(x, (int)k))
            continue;
        /* Empty constants (a 0-length piece) add nothing. */
        ntp_onnx_value *v = ntp__onnx_in_value(x, (int)k);
        if (v->tensor < 0 && (v->c || v->init) && !ntp__onnx_value_const(x, v) && v->c &&
            v->c->n == 0)
            continue;
        if ((st = ntp__onnx_in_tensor(x, (int)k, &in[n++])))
            return st;
    }
    if (n == 0)
        return ntp__onnx_err(x, NTP_STATUS_GRAPH_ERROR, "has no inputs");
    int64_t axis = ntp__onnx_attr_i(x, "axis", 1), ax;
    if (!ntp__onnx_axis(axis, x->g->tensors[in[0]].shape.ndim, &ax))
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "axis %lld is out of range",
                             (long long)axis);
    int out;
    if ((st = concat(x, in, n, ax, NULL, &out)))
        return st;
    return ntp__onnx_out_tensor(x, 0, out);
}

static ntp_status map_split(ntp_onnx_importer *x)
{
    int in;
    ntp_status st = ntp__onnx_in_tensor(x, 0, &in);
    if (st)
        return st;
    const ntp_shape s = x->g->tensors[in].shape;
    int64_t ax;
    if (!ntp__onnx_axis(ntp__onnx_attr_i(x, "axis", 0), s.ndim, &ax))
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "axis out of range");
    int nout = (int)x->np->n_output;
    if (nout < 1 || nout > NTP_MAX_OUTPUTS)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "%d outputs (1 to %d supported)", nout,
                             NTP_MAX_OUTPUTS);
    int64_t sizes[NTP_MAX_OUTPUTS];
    bool given;
    int n = ints_of(x, 1, 13, "split", sizes, NTP_MAX_OUTPUTS, &given);
    if (n < 0)
        return ntp_ctx_status(x->ctx);
    if (n == 0) {
        if (s.dim[ax] % nout)
            return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR,
                                 "dim %lld does not split into %d "
                                 "equal parts",
                                 (long long)s.dim[ax], nout);
        for (n = 0; n < nout; n++)
            sizes[n] = s.dim[ax] / nout;
    }
    if (n != nout)
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "%d sizes for %d outputs", n, nout);
    if (nout == 1)
        return ntp__onnx_out_tensor(x, 0, in);
    int ni = ntp__onnx_add_node(x, NTP_OP_SPLIT, NULL, &in, 1, nout);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    ntp_attrs *a = &x->g->nodes[ni].a;
    a->axis = ax;
    a->n_sizes = nout;
    for (int k = 0; k < nout; k++)
        a->sizes[k] = sizes[k];
    if ((st = ntp__onnx_infer(x, ni)))
        return st;
    for (int k = 0; k < nout; k++)
        ntp__onnx_out_tensor(x, k, x->g->nodes[ni].out[k]);
    return NTP_STATUS_OK;
}

/* --- slice, gather ---------------------------------------------------------------------------- */

static ntp_status slice_node(ntp_onnx_importer *x, int in, const int64_t *starts,
                             const int64_t *ends, const int64_t *axes, const int64_t *steps, int n,
                             const char *suffix, int *out)
{
    int ni = ntp__onnx_add_node(x, NTP_OP_SLICE, suffix, &in, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    ntp_attrs *a = &x->g->nodes[ni].a;
    ntp__slice_set(a, n, starts, ends, axes, steps);
    int64_t start[NTP_MAX_DIMS], step[NTP_MAX_DIMS];
    ntp_shape ys;
    const char *why = ntp__slice_resolve(a, &x->g->tensors[in].shape, false, start, step, &ys);
    if (why && strstr(why, "empty"))
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "%s", why);
    ntp_status st = ntp__onnx_infer(x, ni);
    if (!st)
        *out = x->g->nodes[ni].out[0];
    return st;
}

static ntp_status map_slice(ntp_onnx_importer *x)
{
    int in;
    ntp_status st = ntp__onnx_in_tensor(x, 0, &in);
    if (st)
        return st;
    int64_t starts[NTP_MAX_DIMS], ends[NTP_MAX_DIMS], axes[NTP_MAX_DIMS], steps[NTP_MAX_DIMS];
    bool g1, g2, g3, g4;
    int ns = ints_of(x, 1, 10, "starts", starts, NTP_MAX_DIMS, &g1);
    int ne = ints_of(x, 2, 10, "ends", ends, NTP_MAX_DIMS, &g2);
    int na = ints_of(x, 3, 10, "axes", axes, NTP_MAX_DIMS, &g3);
    int nst = x->opset >= 10 ? ints_of(x, 4, 10, "steps", steps, NTP_MAX_DIMS, &g4) : 0;
    if (ns < 0 || ne < 0 || na < 0 || nst < 0)
        return ntp_ctx_status(x->ctx);
    if (ns != ne || (na && na != ns) || (nst && nst != ns) || ns == 0)
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR,
                             "starts, ends, axes and steps differ in "
                             "length");
    int out;
    if ((st =
             slice_node(x, in, starts, ends, na ? axes : NULL, nst ? steps : NULL, ns, NULL, &out)))
        return st;
    return ntp__onnx_out_tensor(x, 0, out);
}

/* Gather: from an initializer with run-time integer indices along axis 0 of
 * a matrix, an embedding; from a run-time tensor with constant indices,
 * one slice per run of consecutive indices, a concat and a reshape. */
static ntp_status map_gather(ntp_onnx_importer *x)
{
    ntp_onnx_value *dv = ntp__onnx_in_value(x, 0), *iv = ntp__onnx_in_value(x, 1);
    ntp_status st;
    int64_t axis = ntp__onnx_attr_i(x, "axis", 0);
    if (!dv || !iv)
        return ntp__onnx_err(x, NTP_STATUS_GRAPH_ERROR, "needs data and indices");
    if (ntp__onnx_in_is_const(x, 0) && iv->tensor >= 0 && !ntp__onnx_in_is_const(x, 1)) {
        if ((st = ntp__onnx_value_const(x, dv)))
            return st;
        const ntp_tensor *it = &x->g->tensors[iv->tensor];
        if (dv->c->shape.ndim != 2 || (axis != 0 && axis != -2) ||
            (it->dtype != NTP_DTYPE_I64 && it->dtype != NTP_DTYPE_I32))
            return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                                 "a run-time Gather is supported as an embedding: integer indices "
                                 "into rows of a matrix initializer");
        int t = iv->tensor;
        int ni = ntp__onnx_add_node(x, NTP_OP_EMBEDDING, NULL, &t, 1, 1);
        if (ni < 0)
            return ntp_ctx_status(x->ctx);
        x->g->nodes[ni].a.vocab = dv->c->shape.dim[0];
        x->g->nodes[ni].a.units = dv->c->shape.dim[1];
        if ((st = ntp__onnx_add_weight_value(x, ni, dv, &dv->c->shape)))
            return st;
        return finish(x, ni);
    }
    const ntp_onnx_tensor *idx;
    int in;
    if ((st = ntp__onnx_in_const(x, 1, &idx)) || (st = ntp__onnx_in_tensor(x, 0, &in)))
        return st;
    const ntp_shape s = x->g->tensors[in].shape;
    int64_t ax;
    if (!ntp__onnx_axis(axis, s.ndim, &ax))
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "axis out of range");
    if (s.ndim - 1 + idx->shape.ndim > NTP_MAX_DIMS || idx->n == 0)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                             "the result would have more than %d dims "
                             "or no elements",
                             NTP_MAX_DIMS);
    int parts[64], n = 0;
    for (int64_t k = 0; k < idx->n;) {
        int64_t a = ntp__onnx_get_i(idx, k);
        if (a < 0)
            a += s.dim[ax];
        if (a < 0 || a >= s.dim[ax])
            return ntp__onnx_err(x, NTP_STATUS_INVALID_ARGUMENT,
                                 "index %lld is out of range "
                                 "for dim %lld",
                                 (long long)ntp__onnx_get_i(idx, k), (long long)s.dim[ax]);
        int64_t b = a + 1;
        for (k++; k < idx->n; k++) {
            int64_t c = ntp__onnx_get_i(idx, k);
            if ((c < 0 ? c + s.dim[ax] : c) != b)
                break;
            b++;
        }
        if (n == 64)
            return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "more than 64 runs of indices");
        char sfx[32];
        snprintf(sfx, sizeof sfx, "rows%d", n);
        if ((st = slice_node(x, in, &a, &b, &ax, NULL, 1, sfx, &parts[n++])))
            return st;
    }
    int cat;
    if ((st = concat(x, parts, n, ax, "rows", &cat)))
        return st;
    ntp_shape to = {0};
    for (int d = 0; d < ax; d++)
        to.dim[to.ndim++] = s.dim[d];
    for (int d = 0; d < idx->shape.ndim; d++)
        to.dim[to.ndim++] = idx->shape.dim[d];
    for (int d = (int)ax + 1; d < s.ndim; d++)
        to.dim[to.ndim++] = s.dim[d];
    int out;
    if ((st = ntp__onnx_reshape(x, cat, &to, NULL, &out)))
        return st;
    return ntp__onnx_out_tensor(x, 0, out);
}

/* --- pad, expand, tile --------------------------------------------------------------------------
 */

static ntp_status map_pad(ntp_onnx_importer *x)
{
    int in;
    ntp_status st = ntp__onnx_in_tensor(x, 0, &in);
    if (st)
        return st;
    const ntp_shape s = x->g->tensors[in].shape;
    int r = s.ndim;
    int64_t pads[2 * NTP_MAX_DIMS];
    bool given;
    int n = ints_of(x, 1, 11, x->opset < 2 ? "paddings" : "pads", pads, 2 * NTP_MAX_DIMS, &given);
    if (n < 0)
        return ntp_ctx_status(x->ctx);
    if (n != 2 * r)
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "%d pads for rank %d", n, r);
    /* A negative pad crops; one that crops the whole dim or more (down to
     * INT64_MIN, whose negation overflows) leaves nothing. */
    for (int i = 0; i < 2 * r; i++)
        if (pads[i] < 0 && pads[i] <= -s.dim[i % r])
            return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "pad %lld crops all of dim %d (%lld)",
                                 (long long)pads[i], i % r, (long long)s.dim[i % r]);
    double value = ntp__onnx_attr_f(x, "value", 0.0);
    if (x->opset >= 11 && ntp__onnx_has_in(x, 2)) {
        const ntp_onnx_tensor *c;
        if ((st = ntp__onnx_in_const(x, 2, &c)))
            return st;
        value = c->n && c->f ? ntp__onnx_float_value(c->f[0]) : c->n ? ntp__onnx_get_f(c, 0) : 0.0;
    }
    char buf[32];
    const char *mode = ntp__onnx_attr_s(x, "mode", "constant", buf, sizeof buf);
    int pm = !strcmp(mode, "constant")  ? NTP_PADMODE_CONSTANT
             : !strcmp(mode, "reflect") ? NTP_PADMODE_REFLECT
             : !strcmp(mode, "edge")    ? NTP_PADMODE_EDGE
                                        : -1;
    if (pm < 0)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "mode '%s'", mode);
    /* Negative pads crop: a slice first. */
    bool crop = false, grow = false;
    int64_t starts[NTP_MAX_DIMS], ends[NTP_MAX_DIMS];
    for (int d = 0; d < r; d++) {
        starts[d] = pads[d] < 0 ? -pads[d] : 0;
        ends[d] = s.dim[d] - (pads[r + d] < 0 ? -pads[r + d] : 0);
        crop = crop || pads[d] < 0 || pads[r + d] < 0;
        grow = grow || pads[d] > 0 || pads[r + d] > 0;
    }
    if (crop && (st = slice_node(x, in, starts, ends, NULL, NULL, r, grow ? "crop" : NULL, &in)))
        return st;
    if (!grow)
        return ntp__onnx_out_tensor(x, 0, in);
    int ni = ntp__onnx_add_node(x, NTP_OP_PAD, NULL, &in, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    ntp_attrs *a = &x->g->nodes[ni].a;
    a->n_pads = 2 * r;
    for (int i = 0; i < 2 * r; i++)
        a->pads[i] = pads[i] > 0 ? pads[i] : 0;
    a->pad_mode = pm;
    a->value = value;
    return finish(x, ni);
}

static ntp_status map_expand(ntp_onnx_importer *x)
{
    int in;
    int64_t v[NTP_MAX_DIMS];
    bool given;
    ntp_status st = ntp__onnx_in_tensor(x, 0, &in);
    if (st)
        return st;
    int n = ints_of(x, 1, 8, "shape", v, NTP_MAX_DIMS, &given);
    if (n < 0)
        return ntp_ctx_status(x->ctx);
    int ni = ntp__onnx_add_node(x, NTP_OP_EXPAND, NULL, &in, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    ntp_attrs *a = &x->g->nodes[ni].a;
    a->n_shape = n;
    for (int d = 0; d < n; d++)
        a->shape[d] = v[d];
    if ((st = ntp__onnx_infer(x, ni)))
        return st;
    int out = x->g->nodes[ni].out[0];
    /* An expand that changes nothing is the identity. */
    if (ntp_shape_numel(&x->g->tensors[out].shape) == ntp_shape_numel(&x->g->tensors[in].shape)) {
        if ((st = ntp__onnx_reshape(x, in, &x->g->tensors[out].shape, NULL, &out)))
            return st;
    }
    return ntp__onnx_out_tensor(x, 0, out);
}

/* Tile: insert a 1 before every repeated dim, expand it to the repeat
 * count, and merge each pair. */
static ntp_status map_tile(ntp_onnx_importer *x)
{
    int in;
    int64_t rep[NTP_MAX_DIMS];
    bool given;
    ntp_status st = ntp__onnx_in_tensor(x, 0, &in);
    if (st)
        return st;
    const ntp_shape s = x->g->tensors[in].shape;
    int n = ints_of(x, 1, 6, "repeats", rep, NTP_MAX_DIMS, &given);
    if (n < 0)
        return ntp_ctx_status(x->ctx);
    if (n != s.ndim)
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "repeats must have one value per dim");
    ntp_shape wide = {0}, big = {0}, to = s;
    for (int d = 0; d < s.ndim; d++) {
        if (rep[d] <= 0)
            return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "repeats must be positive");
        if (rep[d] > 1) {
            if (wide.ndim + 2 > NTP_MAX_DIMS)
                return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "too many repeated dims");
            wide.dim[wide.ndim] = 1;
            big.dim[big.ndim++] = rep[d];
            wide.ndim++;
        }
        wide.dim[wide.ndim++] = s.dim[d];
        big.dim[big.ndim++] = s.dim[d];
        if (!ntp__mul_ok(s.dim[d], rep[d], &to.dim[d]))
            return ntp__onnx_err(x, NTP_STATUS_OVERFLOW, "repeats overflow 64-bit sizes");
    }
    int t;
    if ((st = ntp__onnx_reshape(x, in, &wide, "unfold", &t)))
        return st;
    int ni = ntp__onnx_add_node(x, NTP_OP_EXPAND, "repeat", &t, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    x->g->nodes[ni].a.n_shape = big.ndim;
    for (int d = 0; d < big.ndim; d++)
        x->g->nodes[ni].a.shape[d] = big.dim[d];
    if ((st = ntp__onnx_infer(x, ni)) ||
        (st = ntp__onnx_reshape(x, x->g->nodes[ni].out[0], &to, NULL, &t)))
        return st;
    return ntp__onnx_out_tensor(x, 0, t);
}

/* --- resize
 * ----------------------------------------------------------------------------------------- */

static const char *check_resize(const ntp_onnx_importer *x, const Onnx__NodeProto *np)
{
    (void)x;
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *a = np->attribute[i];
        if (a->name && !strcmp(a->name, "coordinate_transformation_mode") && a->has_s &&
            a->s.len == 18 && !strncmp((const char *)a->s.data, "tf_crop_and_resize", 18))
            return "coordinate_transformation_mode tf_crop_and_resize";
    }
    return NULL;
}

static int enum_of(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

/* Resize (10+) and Upsample (7-9). Before opset 11, coordinates are
 * asymmetric and nearest rounds down (as Upsample's reference does). */
static ntp_status map_resize(ntp_onnx_importer *x)
{
    bool upsample = !strcmp(x->np->op_type, "Upsample");
    int in;
    ntp_status st = ntp__onnx_in_tensor(x, 0, &in);
    if (st)
        return st;
    const ntp_shape s = x->g->tensors[in].shape;
    double scales[NTP_MAX_DIMS];
    int64_t sizes[NTP_MAX_DIMS];
    int ns = 0, nz = 0;
    int scales_k = upsample ? (x->opset >= 9 ? 1 : -1) : x->opset >= 11 ? 2 : 1;
    if (scales_k < 0) {
        if ((ns = ntp__onnx_attr_floats(x, "scales", scales, NTP_MAX_DIMS)) < 0)
            return ntp_ctx_status(x->ctx);
    } else if (ntp__onnx_has_in(x, scales_k)) {
        const ntp_onnx_tensor *c;
        if ((st = ntp__onnx_in_const(x, scales_k, &c)))
            return st;
        if (c->n > NTP_MAX_DIMS)
            return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "too many scales");
        ns = (int)c->n;
        for (int i = 0; i < ns; i++)
            scales[i] = ntp__onnx_get_f(c, i);
    }
    if (!upsample && x->opset >= 11 && ntp__onnx_has_in(x, 3)) {
        const ntp_onnx_tensor *c;
        if ((st = ntp__onnx_in_const(x, 3, &c)))
            return st;
        if (c->n > NTP_MAX_DIMS)
            return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "too many sizes");
        nz = (int)c->n;
        for (int i = 0; i < nz; i++)
            sizes[i] = ntp__onnx_get_i(c, i);
    }
    if ((ns > 0) == (nz > 0) || (ns && ns != s.ndim) || (nz && nz != s.ndim))
        return ntp__onnx_err(x, NTP_STATUS_INVALID_ARGUMENT,
                             "needs one of scales and sizes, with "
                             "one value per dim");
    char b1[64], b2[64], b3[64];
    const char *mode = ntp__onnx_attr_s(x, "mode", "nearest", b1, sizeof b1);
    const char *coord =
        ntp__onnx_attr_s(x, "coordinate_transformation_mode",
                         x->opset >= 11 ? "half_pixel" : "asymmetric", b2, sizeof b2);
    const char *nearest = ntp__onnx_attr_s(
        x, "nearest_mode", x->opset >= 11 ? "round_prefer_floor" : "floor", b3, sizeof b3);
    if (!strcmp(mode, "bilinear") || !strcmp(mode, "trilinear"))
        mode = "linear";
    int m = enum_of(mode, ntp__resize_mode_names, 3),
        c = enum_of(coord, ntp__resize_coord_names, 5),
        nm = enum_of(nearest, ntp__resize_nearest_names, 4);
    if (m < 0 || c < 0 || nm < 0)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                             "mode '%s', coordinates '%s', nearest "
                             "mode '%s'",
                             mode, coord, nearest);
    int ni = ntp__onnx_add_node(x, NTP_OP_RESIZE, NULL, &in, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    ntp_attrs *a = &x->g->nodes[ni].a;
    a->resize.mode = m;
    a->resize.coord = c;
    a->resize.nearest = nm;
    a->resize.cubic_a = ntp__onnx_attr_f(x, "cubic_coeff_a", -0.75);
    a->resize.exclude_outside = ntp__onnx_attr_i(x, "exclude_outside", 0) != 0;
    a->resize.extrapolation = ntp__onnx_attr_f(x, "extrapolation_value", 0.0);
    a->n_shape = nz;
    for (int i = 0; i < nz; i++)
        a->shape[i] = sizes[i];
    a->resize.n_scales = ns;
    for (int i = 0; i < ns; i++)
        if (!ntp__resize_scale_rational(scales[i], &a->resize.scale_num[i],
                                        &a->resize.scale_den[i]))
            return ntp__onnx_err(x, NTP_STATUS_INVALID_ARGUMENT, "scale %g is not positive",
                                 scales[i]);
    return finish(x, ni);
}

/* DepthToSpace (DCR or CRD) and SpaceToDepth on [N, C, H, W]. */
static ntp_status map_depth_space(ntp_onnx_importer *x)
{
    bool d2s = !strcmp(x->np->op_type, "DepthToSpace");
    int in;
    ntp_status st = ntp__onnx_in_tensor(x, 0, &in);
    if (st)
        return st;
    const ntp_shape s = x->g->tensors[in].shape;
    int64_t b = ntp__onnx_attr_i(x, "blocksize", 0);
    char buf[16];
    bool crd = !strcmp(ntp__onnx_attr_s(x, "mode", "DCR", buf, sizeof buf), "CRD");
    if (s.ndim != 4 || b <= 0 || (d2s && s.dim[1] % (b * b)) ||
        (!d2s && (s.dim[2] % b || s.dim[3] % b)))
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "input and blocksize %lld do not fit",
                             (long long)b);
    int64_t N = s.dim[0], C = s.dim[1], H = s.dim[2], W = s.dim[3];
    ntp_shape six, to;
    int64_t perm[6];
    if (d2s) {
        int64_t c2 = C / (b * b);
        six = crd ? (ntp_shape){6, {N, c2, b, b, H, W}} : (ntp_shape){6, {N, b, b, c2, H, W}};
        int64_t p_crd[6] = {0, 1, 4, 2, 5, 3}, p_dcr[6] = {0, 3, 4, 1, 5, 2};
        memcpy(perm, crd ? p_crd : p_dcr, sizeof perm);
        to = (ntp_shape){4, {N, c2, H * b, W * b}};
    } else {
        six = (ntp_shape){6, {N, C, H / b, b, W / b, b}};
        int64_t p[6] = {0, 3, 5, 1, 2, 4};
        memcpy(perm, p, sizeof perm);
        to = (ntp_shape){4, {N, C * b * b, H / b, W / b}};
    }
    int t;
    if ((st = ntp__onnx_reshape(x, in, &six, "blocks", &t)) ||
        (st = ntp__onnx_transpose(x, t, perm, 6, "move", &t)) ||
        (st = ntp__onnx_reshape(x, t, &to, NULL, &t)))
        return st;
    return ntp__onnx_out_tensor(x, 0, t);
}

const ntp_onnx_map ntp__onnx_map_tensor[] = {
    {"Identity", map_identity, NULL, ""},
    {"Dropout", map_dropout, check_dropout, "ratio,seed,is_test,consumed_inputs"},
    {"Cast", map_cast, NULL, "to,saturate"},
    {"CastLike", map_cast, NULL, "saturate"},
    {"Reshape", map_reshape, NULL, "shape,allowzero,consumed_inputs"},
    {"Flatten", map_flatten, NULL, "axis"},
    {"Squeeze", map_squeeze, NULL, "axes"},
    {"Unsqueeze", map_squeeze, NULL, "axes"},
    {"Transpose", map_transpose, NULL, "perm"},
    {"Concat", map_concat, NULL, "axis"},
    {"Split", map_split, NULL, "axis,split"},
    {"Slice", map_slice, NULL, "starts,ends,axes"},
    {"Gather", map_gather, NULL, "axis"},
    {"Pad", map_pad, NULL, "pads,paddings,mode,value"},
    {"Expand", map_expand, NULL, ""},
    {"Tile", map_tile, NULL, ""},
    {"Resize", map_resize, check_resize,
     "mode,coordinate_transformation_mode,nearest_mode,cubic_coeff_a,exclude_outside,"
     "extrapolation_value"},
    {"Upsample", map_resize, NULL, "mode,scales"},
    {"DepthToSpace", map_depth_space, NULL, "blocksize,mode"},
    {"SpaceToDepth", map_depth_space, NULL, "blocksize"},
    {NULL, NULL, NULL, NULL},
};
