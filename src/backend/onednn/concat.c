/* concat on oneDNN's concat primitive. Each input is read in its own layout
 * (oneDNN concatenates blocked and plain sources) and the destination takes
 * the layout oneDNN prefers for them. */
#include "onednn-impl.h"

bool ntp__dnnl_concat_supports(const ntp_graph *g, const ntp_node *n)
{
    int r = g->tensors[n->out[0]].shape.ndim;
    int64_t axis = n->a.axis < 0 ? n->a.axis + r : n->a.axis;
    return r >= 1 && r <= DNNL_MAX_NDIMS && axis >= 0 && axis < r && n->n_in <= NTP_MAX_INPUTS;
}

ntp_status ntp__dnnl_concat_build(odnn_build *b)
{
    ntp_kargs *k = b->k;
    const ntp_shape *y = &k->out[0].shape;
    int64_t axis = b->n->a.axis < 0 ? b->n->a.axis + y->ndim : b->n->a.axis;
    if (k->n_in < 1 || axis < 0 || axis >= y->ndim)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "inconsistent concat arguments");
    dnnl_memory_desc_t src[NTP_MAX_INPUTS], dst;
    ntp_status s;
    for (int i = 0; i < k->n_in; i++)
        if ((s = ntp__dnnl_follow_md(b, i, b->cdt, &src[i])))
            return s;
    dnnl_dims_t yd;
    for (int d = 0; d < y->ndim; d++)
        yd[d] = y->dim[d];
    dnnl_memory_desc_init_by_tag(&dst, y->ndim, yd, b->cdt, dnnl_format_tag_any);
    dnnl_primitive_attr_t attr;
    if ((s = ntp__dnnl_attr(b, &attr)))
        return s;
    if (b->n_pds == ODNN_MAX_PDS)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "too many primitive descriptors");
    dnnl_primitive_desc_t pd;
    dnnl_status_t st =
        dnnl_concat_primitive_desc_create(&pd, &dst, k->n_in, (int)axis, src, attr, b->s->eng);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "concat");
    b->pds[b->n_pds++] = pd;
    int args[NTP_MAX_INPUTS + 1], mems[NTP_MAX_INPUTS + 1], n = 0;
    for (int i = 0; i < k->n_in; i++) {
        if ((s = ntp__dnnl_input(b, i, &src[i], 1.0f, &mems[n])))
            return s;
        args[n++] = DNNL_ARG_MULTIPLE_SRC + i;
    }
    if ((s = ntp__dnnl_output(b, 0, ntp__dnnl_query(pd, dnnl_query_dst_md, 0), 1.0f, &mems[n])))
        return s;
    args[n++] = DNNL_ARG_DST;
    if ((s = ntp__dnnl_step(b, pd, "", NULL, n, args, mems)))
        return s;
    ntp__dnnl_set_main(b, pd);
    return NTP_STATUS_OK;
}
