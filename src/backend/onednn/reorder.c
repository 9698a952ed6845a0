/* Data movement on oneDNN's reorder primitive: reshape, flatten, dropout
 * and memcpy (a copy that also brings a blocked input back to plain),
 * transpose (a reorder from a permuted-stride view of the input) and split
 * (one reorder per output from a sub-memory view).
 *
 * These layers keep their storage type, s8 included: the copy rescales by
 * in_scale / out_scale when the calibration gave the two tensors different
 * scales, so no int8 data is widened to move it. Embedding and pad have no
 * oneDNN primitive and stay on the reference backend. */
#include <stdio.h>

#include "onednn-impl.h"

/* How each data-movement op this backend runs is built. */
typedef enum move_kind { MOVE_NONE, MOVE_COPY, MOVE_TRANSPOSE, MOVE_SPLIT } move_kind;

static const move_kind moves[NTP_OP_COUNT] = {
    [NTP_OP_RESHAPE] = MOVE_COPY, [NTP_OP_FLATTEN] = MOVE_COPY,        [NTP_OP_DROPOUT] = MOVE_COPY,
    [NTP_OP_MEMCPY] = MOVE_COPY,  [NTP_OP_TRANSPOSE] = MOVE_TRANSPOSE, [NTP_OP_SPLIT] = MOVE_SPLIT,
};

static move_kind move_of(ntp_op op)
{
    return (unsigned)op < NTP_OP_COUNT ? moves[op] : MOVE_NONE;
}

bool ntp__dnnl_move_supports(const ntp_graph *g, const ntp_node *n)
{
    const ntp_shape *x = &g->tensors[n->in[0]].shape;
    switch (move_of(n->op)) {
    case MOVE_COPY: return true;
    case MOVE_TRANSPOSE: return x->ndim >= 1 && x->ndim <= DNNL_MAX_NDIMS;
    case MOVE_SPLIT: {
        int r = x->ndim;
        int64_t axis = n->a.axis < 0 ? n->a.axis + r : n->a.axis;
        return axis >= 0 && axis < r && n->n_out <= NTP_MAX_OUTPUTS;
    }
    case MOVE_NONE: return false;
    }
    return false;
}

/* Scale of storage `t` at this layer: calibrated for s8, else 1. */
static ntp_status scale_of(odnn_build *b, ntp_dtype t, float cal, int i, bool out, float *s)
{
    return ntp__dnnl_act_scale(b, t, cal, i, out, s);
}

/* Input 0 as a plain tensor in its own storage type (and scale). */
static ntp_status plain_native(odnn_build *b, dnnl_memory_desc_t *md, float *scale, int *mi)
{
    const ntp_kargs *k = b->k;
    ntp_status s = scale_of(b, k->in[0].dtype, k->in_scale[0], 0, false, scale);
    if (s)
        return s;
    dnnl_status_t st = ntp__dnnl_plain_md(md, &k->in[0].shape, ntp__dnnl_dt(k->in[0].dtype));
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "input descriptor");
    return ntp__dnnl_input(b, 0, md, *scale, mi);
}

/* One reorder step from memory `from` (descriptor src) to output j viewed
 * through dst_shape's plain descriptor. */
static ntp_status copy_to_output(odnn_build *b, int from, const dnnl_memory_desc_t *src,
                                 float src_scale, int j, int dnd, const int64_t *dst_dims, int part)
{
    const ntp_kargs *k = b->k;
    float out_scale;
    ntp_status s = scale_of(b, k->out[j].dtype, k->out_scale[j], j, true, &out_scale);
    if (s)
        return s;
    dnnl_memory_desc_t dst;
    dnnl_status_t st = ntp__dnnl_plain_dims(&dst, dnd, dst_dims, ntp__dnnl_dt(k->out[j].dtype));
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "output descriptor");
    if (dnnl_memory_desc_get_size(&dst) >
        (size_t)ntp_shape_numel(&k->out[j].shape) * ntp_dtype_size(k->out[j].dtype))
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "output %d is smaller than the copy", j);
    int to;
    if ((s = ntp__dnnl_mem(b, &dst, ODNN_BIND_OUT, j, 0, &to)))
        return s;
    dnnl_primitive_desc_t pd;
    if ((s = ntp__dnnl_reorder_pd(b, &pd, src, &dst, src_scale / out_scale)))
        return s;
    int args[2] = {DNNL_ARG_FROM, DNNL_ARG_TO}, mems[2] = {from, to};
    char suffix[16] = "";
    if (part > 0)
        snprintf(suffix, sizeof suffix, ":%d", part);
    if ((s = ntp__dnnl_step(b, pd, suffix, NULL, 2, args, mems)))
        return s;
    if (part == 0)
        ntp__dnnl_set_main(b, pd);
    return NTP_STATUS_OK;
}

/* reshape, flatten, dropout, memcpy: the input in whatever layout it has,
 * written plain into the output (same elements, same order). */
static ntp_status copy_layer(odnn_build *b)
{
    const ntp_kargs *k = b->k;
    dnnl_memory_desc_t md;
    float scale;
    ntp_status s = ntp__dnnl_in_md(b, 0, &md);
    if (s || (s = scale_of(b, k->in[0].dtype, k->in_scale[0], 0, false, &scale)))
        return s;
    if (ntp_shape_numel(&k->in[0].shape) != ntp_shape_numel(&k->out[0].shape))
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "input and output sizes differ");
    int mi;
    if ((s = ntp__dnnl_mem(b, &md, ODNN_BIND_IN, 0, 0, &mi)))
        return s;
    return copy_to_output(b, mi, &md, scale, 0, k->in[0].shape.ndim, k->in[0].shape.dim, 0);
}

static ntp_status transpose(odnn_build *b)
{
    const ntp_kargs *k = b->k;
    const ntp_attrs *a = &b->n->a;
    const ntp_shape *x = &k->in[0].shape, *y = &k->out[0].shape;
    int r = x->ndim;
    int64_t perm[NTP_MAX_DIMS];
    for (int d = 0; d < r; d++)
        perm[d] = a->n_perm == r ? a->perm[d] : r - 1 - d;
    dnnl_memory_desc_t md;
    float scale;
    int mi, view;
    ntp_status s = plain_native(b, &md, &scale, &mi);
    if (s)
        return s;
    /* Output dim d walks input dim perm[d]. */
    dnnl_dims_t dims, strides;
    int64_t xs[NTP_MAX_DIMS], stride = 1;
    for (int d = r - 1; d >= 0; d--) {
        xs[d] = stride;
        stride *= x->dim[d];
    }
    for (int d = 0; d < r; d++) {
        if (perm[d] < 0 || perm[d] >= r || y->dim[d] != x->dim[perm[d]])
            return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "permutation does not fit the shapes");
        dims[d] = x->dim[perm[d]];
        strides[d] = xs[perm[d]];
    }
    dnnl_memory_desc_t vmd;
    dnnl_status_t st = dnnl_memory_desc_init_by_strides(&vmd, r, dims, md.data_type, strides);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "transposed view");
    if ((s = ntp__dnnl_alias(b, mi, &vmd, &view)))
        return s;
    return copy_to_output(b, view, &vmd, scale, 0, y->ndim, y->dim, 0);
}

static ntp_status split(odnn_build *b)
{
    const ntp_kargs *k = b->k;
    const ntp_shape *x = &k->in[0].shape;
    int r = x->ndim;
    int64_t axis = b->n->a.axis < 0 ? b->n->a.axis + r : b->n->a.axis;
    dnnl_memory_desc_t md;
    float scale;
    int mi;
    ntp_status s = plain_native(b, &md, &scale, &mi);
    if (s)
        return s;
    int64_t at = 0;
    for (int j = 0; j < k->n_out; j++) {
        const ntp_shape *ys = &k->out[j].shape;
        if (ys->ndim != r)
            return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "split output %d has another rank", j);
        dnnl_dims_t dims, offs;
        for (int d = 0; d < r; d++) {
            dims[d] = ys->dim[d];
            offs[d] = d == axis ? at : 0;
        }
        if (at + ys->dim[axis] > x->dim[axis])
            return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "split outputs exceed the input");
        dnnl_memory_desc_t sub;
        dnnl_status_t st = dnnl_memory_desc_init_submemory(&sub, &md, dims, offs);
        if (st != dnnl_success)
            return ntp__dnnl_error(b, st, "split view");
        int view;
        if ((s = ntp__dnnl_alias(b, mi, &sub, &view)) ||
            (s = copy_to_output(b, view, &sub, scale, j, r, ys->dim, j)))
            return s;
        at += ys->dim[axis];
    }
    return NTP_STATUS_OK;
}

ntp_status ntp__dnnl_move_build(odnn_build *b)
{
    if (b->k->n_in != 1)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "data movement with %d inputs", b->k->n_in);
    switch (move_of(b->n->op)) {
    case MOVE_TRANSPOSE: return transpose(b);
    case MOVE_SPLIT: return split(b);
    case MOVE_COPY:
    case MOVE_NONE: break;
    }
    return copy_layer(b);
}
