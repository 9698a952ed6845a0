/* Building a layer's steps: memory objects bound to the engine's buffers,
 * reorder steps at the edges, weights packed once, errors that name the
 * layer and oneDNN's status. */
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "core/numeric-impl.h"
#include "onednn-impl.h"

#define ODNN_ALIGN 64

ntp_status ntp__dnnl_fail(odnn_build *b, ntp_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ntp_status r = ntp__be_verror(b->ctx, "onednn", b->k->g, b->n, st, fmt, ap);
    va_end(ap);
    return r;
}

ntp_status ntp__dnnl_status_error(ntp_ctx *ctx, const char *who, const ntp_graph *g,
                                  const ntp_node *n, dnnl_status_t st, const char *what)
{
    ntp_status s = st == dnnl_out_of_memory ? NTP_STATUS_OUT_OF_MEMORY : NTP_STATUS_BACKEND_ERROR;
    return ntp__be_error(ctx, who, g, n, s, "%s failed: dnnl_%s", what, dnnl_status2str(st));
}

ntp_status ntp__dnnl_error(odnn_build *b, dnnl_status_t st, const char *what)
{
    return ntp__dnnl_status_error(b->ctx, "onednn", b->k->g, b->n, st, what);
}

dnnl_data_type_t ntp__dnnl_dt(ntp_dtype t)
{
    switch (t) {
    case NTP_DTYPE_F32: return dnnl_f32;
    case NTP_DTYPE_BF16: return dnnl_bf16;
    case NTP_DTYPE_F16: return dnnl_f16;
    case NTP_DTYPE_I8: return dnnl_s8;
    case NTP_DTYPE_U8: return dnnl_u8;
    case NTP_DTYPE_I32: return dnnl_s32;
    case NTP_DTYPE_I64:
    case NTP_DTYPE_COUNT: break;
    }
    return dnnl_data_type_undef;
}

dnnl_status_t ntp__dnnl_plain_dims(dnnl_memory_desc_t *md, int nd, const int64_t *dims,
                                   dnnl_data_type_t dt)
{
    dnnl_dims_t d, s;
    if (nd <= 0) {
        d[0] = 1;
        s[0] = 1;
        return dnnl_memory_desc_init_by_strides(md, 1, d, dt, s);
    }
    if (nd > DNNL_MAX_NDIMS)
        return dnnl_invalid_arguments;
    int64_t stride = 1;
    for (int i = nd - 1; i >= 0; i--) {
        d[i] = dims[i];
        s[i] = stride;
        stride *= dims[i] > 0 ? dims[i] : 1;
    }
    return dnnl_memory_desc_init_by_strides(md, nd, d, dt, s);
}

dnnl_status_t ntp__dnnl_plain_md(dnnl_memory_desc_t *md, const ntp_shape *s, dnnl_data_type_t dt)
{
    return ntp__dnnl_plain_dims(md, s->ndim, s->dim, dt);
}

bool ntp__dnnl_md_is_plain(const dnnl_memory_desc_t *md)
{
    if (md->format_kind != dnnl_blocked || md->format_desc.blocking.inner_nblks != 0)
        return false;
    int64_t stride = 1;
    for (int i = md->ndims - 1; i >= 0; i--) {
        if (md->dims[i] != 1 && md->format_desc.blocking.strides[i] != stride)
            return false;
        stride *= md->dims[i];
    }
    return md->extra.flags == 0;
}

bool ntp__dnnl_md_with_dt(const dnnl_memory_desc_t *md, dnnl_data_type_t dt,
                          dnnl_memory_desc_t *out)
{
    if (md->format_kind != dnnl_blocked || md->extra.flags != 0)
        return false;
    *out = *md;
    out->data_type = dt;
    return true;
}

ntp_status ntp__dnnl_attr(odnn_build *b, dnnl_primitive_attr_t *attr)
{
    if (b->n_attrs == ODNN_MAX_PDS)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "too many primitive attributes");
    dnnl_status_t st = dnnl_primitive_attr_create(attr);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "dnnl_primitive_attr_create");
    b->attrs[b->n_attrs++] = *attr;
    /* The scratchpad comes from the engine's workspace, so executing never
     * allocates. */
    st = dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "dnnl_primitive_attr_set_scratchpad_mode");
    return NTP_STATUS_OK;
}

ntp_status ntp__dnnl_pd(odnn_build *b, dnnl_primitive_desc_t *pd, const void *desc,
                        const_dnnl_primitive_attr_t attr, const char *what)
{
    if (b->n_pds == ODNN_MAX_PDS)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "too many primitive descriptors");
    dnnl_primitive_attr_t own = NULL;
    ntp_status s;
    if (!attr) {
        if ((s = ntp__dnnl_attr(b, &own)))
            return s;
        attr = own;
    }
    dnnl_status_t st = dnnl_primitive_desc_create(pd, desc, attr, b->s->eng, NULL);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, what);
    b->pds[b->n_pds++] = *pd;
    return NTP_STATUS_OK;
}

ntp_status ntp__dnnl_reorder_pd(odnn_build *b, dnnl_primitive_desc_t *pd,
                                const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst,
                                float scale)
{
    if (b->n_pds == ODNN_MAX_PDS)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "too many primitive descriptors");
    dnnl_primitive_attr_t attr;
    ntp_status s = ntp__dnnl_attr(b, &attr);
    if (s)
        return s;
    dnnl_status_t st;
    if (scale != 1.0f && (st = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &scale)))
        return ntp__dnnl_error(b, st, "reorder output scale");
    st = dnnl_reorder_primitive_desc_create(pd, src, b->s->eng, dst, b->s->eng, attr);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "reorder");
    b->pds[b->n_pds++] = *pd;
    return NTP_STATUS_OK;
}

const dnnl_memory_desc_t *ntp__dnnl_query(const_dnnl_primitive_desc_t pd, dnnl_query_t q, int i)
{
    return dnnl_primitive_desc_query_md(pd, q, i);
}

const dnnl_memory_desc_t *ntp__dnnl_arg_md(const_dnnl_primitive_desc_t pd, int arg)
{
    return dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
}

ntp_status ntp__dnnl_mem(odnn_build *b, const dnnl_memory_desc_t *md, odnn_bind bind, int i,
                         size_t off, int *idx)
{
    odnn_node *nd = b->nd;
    if (nd->n_mems == ODNN_MAX_MEMS)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "too many memory objects");
    odnn_mem *m = &nd->mems[nd->n_mems];
    memset(m, 0, sizeof *m);
    dnnl_status_t st = dnnl_memory_create(&m->m, md, b->s->eng, DNNL_MEMORY_NONE);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "dnnl_memory_create");
    m->bind = bind;
    m->idx = i;
    m->off = off;
    *idx = nd->n_mems++;
    return NTP_STATUS_OK;
}

ntp_status ntp__dnnl_ws_mem(odnn_build *b, const dnnl_memory_desc_t *md, int *idx)
{
    size_t sz = dnnl_memory_desc_get_size(md);
    size_t off = b->nd->ws_used;
    b->nd->ws_used += (sz + ODNN_ALIGN - 1) / ODNN_ALIGN * ODNN_ALIGN;
    return ntp__dnnl_mem(b, md, ODNN_BIND_WS, 0, off, idx);
}

ntp_status ntp__dnnl_own_mem(odnn_build *b, const dnnl_memory_desc_t *md, int *idx)
{
    size_t sz = dnnl_memory_desc_get_size(md);
    void *p =
        aligned_alloc(ODNN_ALIGN, (sz + ODNN_ALIGN - 1) / ODNN_ALIGN * ODNN_ALIGN + ODNN_ALIGN);
    if (!p)
        return ntp__dnnl_fail(b, NTP_STATUS_OUT_OF_MEMORY, "out of memory for %zu bytes of weights",
                              sz);
    memset(p, 0, sz);
    ntp_status s = ntp__dnnl_mem(b, md, ODNN_BIND_OWN, 0, 0, idx);
    if (s) {
        free(p);
        return s;
    }
    odnn_mem *m = &b->nd->mems[*idx];
    m->own = p;
    dnnl_memory_set_data_handle(m->m, p);
    return NTP_STATUS_OK;
}

ntp_status ntp__dnnl_step(odnn_build *b, const_dnnl_primitive_desc_t pd, const char *suffix,
                          const char *type, int n, const int *args, const int *mems)
{
    odnn_node *nd = b->nd;
    if (nd->n_steps == ODNN_MAX_STEPS || n + 1 > ODNN_MAX_ARGS)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "too many steps or arguments");
    odnn_step *s = &nd->steps[nd->n_steps];
    memset(s, 0, sizeof *s);
    for (int i = 0; i < n; i++) {
        s->arg[i] = args[i];
        s->mem[i] = mems[i];
    }
    s->n_args = n;
    const dnnl_memory_desc_t *sp = ntp__dnnl_query(pd, dnnl_query_scratchpad_md, 0);
    size_t sp_bytes = sp ? dnnl_memory_desc_get_size(sp) : 0;
    if (sp_bytes > 0) {
        int mi;
        ntp_status st = ntp__dnnl_mem(b, sp, ODNN_BIND_SCRATCH, 0, 0, &mi);
        if (st)
            return st;
        s->arg[s->n_args] = DNNL_ARG_SCRATCHPAD;
        s->mem[s->n_args++] = mi;
        if (sp_bytes > nd->scratch_bytes)
            nd->scratch_bytes = sp_bytes;
    }
    dnnl_status_t st = dnnl_primitive_create(&s->prim, pd);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "dnnl_primitive_create");
    snprintf(s->suffix, sizeof s->suffix, "%s", suffix ? suffix : "");
    s->type = type;
    nd->n_steps++;
    return NTP_STATUS_OK;
}

ntp_status ntp__dnnl_host_step(odnn_build *b, odnn_host_fn fn, void *data, const char *suffix)
{
    odnn_node *nd = b->nd;
    if (nd->n_steps == ODNN_MAX_STEPS) {
        free(data);
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "too many steps or arguments");
    }
    odnn_step *s = &nd->steps[nd->n_steps++];
    memset(s, 0, sizeof *s);
    s->host = fn;
    s->host_data = data;
    snprintf(s->suffix, sizeof s->suffix, "%s", suffix ? suffix : "");
    return NTP_STATUS_OK;
}

void ntp__dnnl_set_main(odnn_build *b, const_dnnl_primitive_desc_t pd)
{
    odnn_node *nd = b->nd;
    nd->main_step = nd->n_steps - 1;
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl)
        impl = "onednn";
    snprintf(nd->impl, sizeof nd->impl, "%s", impl);
    /* The layout its source is read in: one kernel name runs plain NCHW
     * and a conv's blocked output at several times apart. */
    nd->src_layout = ntp__dnnl_md_layout(ntp__dnnl_query(pd, dnnl_query_src_md, 0));
}

const char *ntp__dnnl_md_layout(const dnnl_memory_desc_t *md)
{
    if (!md || md->format_kind != dnnl_blocked || md->ndims < 1)
        return NULL;
    if (md->format_desc.blocking.inner_nblks > 0)
        return "blocked";
    if (ntp__dnnl_md_is_plain(md))
        return "plain";
    /* Channels last (nhwc, what a brgemm conv writes): the channel dim
     * is the innermost. */
    const dnnl_dims_t *st = &md->format_desc.blocking.strides;
    return md->ndims >= 3 && (*st)[1] == 1 ? "nspc" : "strided";
}

ntp_status ntp__dnnl_act_scale(odnn_build *b, ntp_dtype storage, float calibrated, int which,
                               bool is_out, float *scale)
{
    *scale = 1.0f;
    if (storage != NTP_DTYPE_I8)
        return NTP_STATUS_OK;
    if (!(calibrated > 0.0f))
        return ntp__dnnl_fail(b, NTP_STATUS_INVALID_ARGUMENT,
                              "int8 %s %d has no calibrated scale (run the calibration pass)",
                              is_out ? "output" : "input", which);
    *scale = calibrated;
    return NTP_STATUS_OK;
}

ntp_status ntp__dnnl_in_md(odnn_build *b, int i, dnnl_memory_desc_t *md)
{
    const ntp_kargs *k = b->k;
    if (k->in_internal[i] && k->in_layout[i] && *k->in_layout[i]) {
        *md = *(const dnnl_memory_desc_t *)*k->in_layout[i];
        return NTP_STATUS_OK;
    }
    dnnl_data_type_t dt = ntp__dnnl_dt(k->in[i].dtype);
    if (dt == dnnl_data_type_undef)
        return ntp__dnnl_fail(b, NTP_STATUS_UNSUPPORTED, "input %d is %s", i,
                              ntp_dtype_name(k->in[i].dtype));
    dnnl_status_t st = ntp__dnnl_plain_md(md, &k->in[i].shape, dt);
    return st == dnnl_success ? NTP_STATUS_OK : ntp__dnnl_error(b, st, "input descriptor");
}

/* Byte size of a buffer as the engine sized it (plain storage). */
static size_t plain_bytes(const ntp_buf *buf)
{
    int64_t n = ntp_shape_numel(&buf->shape);
    return n > 0 ? (size_t)n * ntp_dtype_size(buf->dtype) : 0;
}

ntp_status ntp__dnnl_convert(odnn_build *b, int src_idx, const dnnl_memory_desc_t *src_md,
                             float src_scale, const dnnl_memory_desc_t *want, float want_scale,
                             const char *suffix, int *idx)
{
    if (dnnl_memory_desc_equal(src_md, want) && src_scale == want_scale) {
        *idx = src_idx;
        return NTP_STATUS_OK;
    }
    /* The output scale turns src values into want values: real = q * scale
     * on both sides. */
    float scale = src_scale / want_scale;
    dnnl_primitive_desc_t pd;
    ntp_status s = ntp__dnnl_reorder_pd(b, &pd, src_md, want, scale);
    if (s)
        return s;
    int dst;
    if ((s = ntp__dnnl_ws_mem(b, want, &dst)))
        return s;
    int args[2] = {DNNL_ARG_FROM, DNNL_ARG_TO}, mems[2] = {src_idx, dst};
    if ((s = ntp__dnnl_step(b, pd, suffix, "reorder", 2, args, mems)))
        return s;
    *idx = dst;
    return NTP_STATUS_OK;
}

ntp_status ntp__dnnl_input(odnn_build *b, int i, const dnnl_memory_desc_t *want, float want_scale,
                           int *idx)
{
    dnnl_memory_desc_t have;
    ntp_status s = ntp__dnnl_in_md(b, i, &have);
    if (s)
        return s;
    const ntp_kargs *k = b->k;
    if (!k->in_internal[i] && dnnl_memory_desc_get_size(&have) > plain_bytes(&k->in[i]))
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "input %d is smaller than its shape", i);
    float scale;
    if ((s = ntp__dnnl_act_scale(b, k->in[i].dtype, k->in_scale[i], i, false, &scale)))
        return s;
    int mi;
    if ((s = ntp__dnnl_mem(b, &have, ODNN_BIND_IN, i, 0, &mi)))
        return s;
    char suffix[32];
    snprintf(suffix, sizeof suffix, "reorder_in%d", i);
    return ntp__dnnl_convert(b, mi, &have, scale, want, want_scale, suffix, idx);
}

void ntp__dnnl_record_layout(odnn_build *b, int out_slot, const dnnl_memory_desc_t *md)
{
    odnn_state *s = b->s;
    const ntp_kargs *k = b->k;
    if (!k->g || s->g != k->g || !s->tensor_layout)
        return;
    const ntp_node *last = k->n_fused > 0 ? k->fused[k->n_fused - 1] : k->node;
    if (out_slot < last->n_out && last->out[out_slot] >= 0 && last->out[out_slot] < s->n_tensors) {
        s->tensor_layout[last->out[out_slot]] = md;
        b->nd->rec_tensor[out_slot] = last->out[out_slot] + 1;
    }
}

const dnnl_memory_desc_t *ntp__dnnl_tensor_layout(odnn_state *s, const ntp_graph *g, int tensor)
{
    if (!g || s->g != g || !s->tensor_layout || tensor < 0 || tensor >= s->n_tensors)
        return NULL;
    return s->tensor_layout[tensor];
}

/* Hand an internal output on in layout md (owned by the node). */
static ntp_status keep_layout(odnn_build *b, int i, const dnnl_memory_desc_t *md)
{
    ntp_kargs *k = b->k;
    odnn_node *nd = b->nd;
    dnnl_memory_desc_t *keep = malloc(sizeof *keep);
    if (!keep)
        return ntp__dnnl_fail(b, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    *keep = *md;
    free(nd->out_md[i]);
    nd->out_md[i] = keep;
    *k->out_layout[i] = keep;
    int64_t need = (int64_t)dnnl_memory_desc_get_size(md);
    if (need > k->out_bytes[i])
        k->out_bytes[i] = need;
    ntp__dnnl_record_layout(b, i, keep);
    return NTP_STATUS_OK;
}

ntp_status ntp__dnnl_output(odnn_build *b, int i, const dnnl_memory_desc_t *have, float have_scale,
                            int *idx)
{
    ntp_kargs *k = b->k;
    float scale;
    ntp_status s = ntp__dnnl_act_scale(b, k->out[i].dtype, k->out_scale[i], i, true, &scale);
    if (s)
        return s;
    dnnl_data_type_t odt = ntp__dnnl_dt(k->out[i].dtype);
    if (odt == dnnl_data_type_undef)
        return ntp__dnnl_fail(b, NTP_STATUS_UNSUPPORTED, "output %d is %s", i,
                              ntp_dtype_name(k->out[i].dtype));
    dnnl_memory_desc_t plain;
    dnnl_status_t st = ntp__dnnl_plain_md(&plain, &k->out[i].shape, odt);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "output descriptor");
    if (dnnl_memory_desc_get_size(&plain) > plain_bytes(&k->out[i]))
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "output %d is smaller than its shape", i);
    bool same_values = have->data_type == odt && have_scale == scale;
    if (same_values && dnnl_memory_desc_equal(have, &plain))
        return ntp__dnnl_mem(b, &plain, ODNN_BIND_OUT, i, 0, idx);
    if (same_values && k->out_internal[i] && k->out_layout[i] && !ntp__dnnl_md_is_plain(have)) {
        /* Keep oneDNN's layout for the consumers, which are ours. */
        if ((s = keep_layout(b, i, have)))
            return s;
        return ntp__dnnl_mem(b, have, ODNN_BIND_OUT, i, 0, idx);
    }
    if ((s = ntp__dnnl_ws_mem(b, have, idx)))
        return s;
    if (b->n_pending == NTP_MAX_OUTPUTS)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "too many outputs");
    b->pending_from[b->n_pending] = *idx;
    b->pending_out[b->n_pending] = i;
    b->pending_scale[b->n_pending] = have_scale;
    b->n_pending++;
    return NTP_STATUS_OK;
}

ntp_status ntp__dnnl_finish(odnn_build *b)
{
    ntp_kargs *k = b->k;
    odnn_node *nd = b->nd;
    for (int p = 0; p < b->n_pending; p++) {
        int i = b->pending_out[p], from = b->pending_from[p];
        float scale;
        ntp_status s = ntp__dnnl_act_scale(b, k->out[i].dtype, k->out_scale[i], i, true, &scale);
        if (s)
            return s;
        const dnnl_memory_desc_t *have;
        dnnl_status_t st = dnnl_memory_get_memory_desc(nd->mems[from].m, &have);
        if (st != dnnl_success)
            return ntp__dnnl_error(b, st, "dnnl_memory_get_memory_desc");
        dnnl_data_type_t odt = ntp__dnnl_dt(k->out[i].dtype);
        dnnl_memory_desc_t target;
        bool internal = false;
        /* An internal output only changes type here (int8 requantisation):
         * its layout can stay oneDNN's. */
        if (k->out_internal[i] && k->out_layout[i] && !ntp__dnnl_md_is_plain(have) &&
            ntp__dnnl_md_with_dt(have, odt, &target))
            internal = true;
        else if ((st = ntp__dnnl_plain_md(&target, &k->out[i].shape, odt)) != dnnl_success)
            return ntp__dnnl_error(b, st, "output descriptor");
        if (internal && (s = keep_layout(b, i, &target)))
            return s;
        int to;
        if ((s = ntp__dnnl_mem(b, &target, ODNN_BIND_OUT, i, 0, &to)))
            return s;
        dnnl_primitive_desc_t pd;
        if ((s = ntp__dnnl_reorder_pd(b, &pd, have, &target, b->pending_scale[p] / scale)))
            return s;
        char suffix[32];
        snprintf(suffix, sizeof suffix, "reorder_out%d", i);
        int args[2] = {DNNL_ARG_FROM, DNNL_ARG_TO}, mems[2] = {from, to};
        if ((s = ntp__dnnl_step(b, pd, suffix, "reorder", 2, args, mems)))
            return s;
    }
    b->n_pending = 0;
    return NTP_STATUS_OK;
}

ntp_status ntp__dnnl_reorder_now(odnn_build *b, const dnnl_memory_desc_t *src_md, void *src,
                                 const dnnl_memory_desc_t *dst_md, void *dst, const float *scales,
                                 int n_scales, int mask)
{
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_memory_t ms = NULL, md = NULL;
    ntp_status s = NTP_STATUS_OK;
    dnnl_status_t st;
    /* The default scratchpad mode: this reorder runs once, at prepare. */
    if ((st = dnnl_primitive_attr_create(&attr)) ||
        (scales && (st = dnnl_primitive_attr_set_output_scales(attr, n_scales, mask, scales))) ||
        (st =
             dnnl_reorder_primitive_desc_create(&pd, src_md, b->s->eng, dst_md, b->s->eng, attr)) ||
        (st = dnnl_primitive_create(&prim, pd)) ||
        (st = dnnl_memory_create(&ms, src_md, b->s->eng, src)) ||
        (st = dnnl_memory_create(&md, dst_md, b->s->eng, dst))) {
        s = ntp__dnnl_error(b, st, "weight reorder");
        goto done;
    }
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, ms}, {DNNL_ARG_TO, md}};
    if ((st = dnnl_primitive_execute(prim, b->s->stream, 2, args)) ||
        (st = dnnl_stream_wait(b->s->stream)))
        s = ntp__dnnl_error(b, st, "weight reorder");
done:
    if (ms)
        dnnl_memory_destroy(ms);
    if (md)
        dnnl_memory_destroy(md);
    if (prim)
        dnnl_primitive_destroy(prim);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return s;
}

ntp_status ntp__dnnl_pack(odnn_build *b, const void *data, const dnnl_memory_desc_t *user_md,
                          const dnnl_memory_desc_t *want, const float *scales, int n_scales,
                          int mask, int *idx)
{
    ntp_status s = ntp__dnnl_own_mem(b, want, idx);
    if (s)
        return s;
    s = ntp__dnnl_reorder_now(b, user_md, (void *)data, want, b->nd->mems[*idx].own, scales,
                              n_scales, mask);
    if (s == NTP_STATUS_OK)
        b->nd->weight_reorders++;
    return s;
}

ntp_status ntp__dnnl_weight_f32(odnn_build *b, int i, float **out)
{
    const ntp_buf *w = &b->k->w[i];
    int64_t n = ntp_shape_numel(&w->shape);
    *out = NULL;
    if (n < 0 || !w->data)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "weight %d has no data", i);
    float *f = malloc((size_t)n * sizeof *f + 1);
    if (!f)
        return ntp__dnnl_fail(b, NTP_STATUS_OUT_OF_MEMORY, "out of memory for weight %d", i);
    switch (w->dtype) {
    case NTP_DTYPE_F32: memcpy(f, w->data, (size_t)n * sizeof *f); break;
    case NTP_DTYPE_BF16:
        for (int64_t j = 0; j < n; j++)
            f[j] = ntp__bf16_to_f32(((const uint16_t *)w->data)[j]);
        break;
    case NTP_DTYPE_F16:
        for (int64_t j = 0; j < n; j++)
            f[j] = ntp__f16_to_f32(((const uint16_t *)w->data)[j]);
        break;
    case NTP_DTYPE_I8:
    case NTP_DTYPE_U8:
    case NTP_DTYPE_I32:
    case NTP_DTYPE_I64:
    case NTP_DTYPE_COUNT:
        free(f);
        /* int8 weights are quantised here, per output channel, from the
         * real values; pre-quantised weights come without their scales. */
        return ntp__dnnl_fail(b, NTP_STATUS_UNSUPPORTED,
                              "weight %d is stored as %s; the oneDNN backend reads f32, bf16 or "
                              "f16 weights and quantises them itself",
                              i, ntp_dtype_name(w->dtype));
    }
    *out = f;
    return NTP_STATUS_OK;
}

void *ntp__dnnl_bound_ptr(const odnn_node *nd, const odnn_mem *m, const ntp_kargs *k)
{
    switch (m->bind) {
    case ODNN_BIND_IN: return (char *)k->in[m->idx].data + m->off;
    case ODNN_BIND_OUT: return (char *)k->out[m->idx].data + m->off;
    case ODNN_BIND_POST: return k->post_in[m->idx].data;
    case ODNN_BIND_WS: return (char *)k->workspace + m->off;
    case ODNN_BIND_SCRATCH: return (char *)k->workspace + nd->scratch_off;
    case ODNN_BIND_OWN: return m->own;
    case ODNN_BIND_KV: return k->kv ? (char *)(m->idx ? k->kv->v : k->kv->k) + m->off : NULL;
    }
    return NULL;
}

ntp_status ntp__dnnl_run_step(ntp_ctx *ctx, odnn_state *s, odnn_node *nd, const ntp_kargs *k,
                              int step)
{
    const odnn_step *sp = &nd->steps[step];
    if (sp->gate && *sp->gate != sp->gate_val)
        return NTP_STATUS_OK;
    if (sp->host)
        return sp->host(ctx, nd, sp, k);
    dnnl_exec_arg_t args[ODNN_MAX_ARGS];
    dnnl_status_t st = dnnl_success;
    for (int a = 0; a < sp->n_args && st == dnnl_success; a++) {
        odnn_mem *m = &nd->mems[sp->mem[a]];
        if (m->bind != ODNN_BIND_OWN)
            st = dnnl_memory_set_data_handle(m->m, ntp__dnnl_bound_ptr(nd, m, k));
        args[a].arg = sp->arg[a];
        args[a].memory = m->m;
    }
    if (st == dnnl_success)
        st = dnnl_primitive_execute(sp->prim, s->stream, sp->n_args, args);
    if (st == dnnl_success)
        st = dnnl_stream_wait(s->stream);
    if (st != dnnl_success) {
        odnn_build b = {
            .ctx = ctx, .s = s, .k = (ntp_kargs *)k, .nd = nd, .n = k->node, .po_end = -1};
        char what[96];
        snprintf(what, sizeof what, "executing step %d%s%s", step, sp->suffix[0] ? " " : "",
                 sp->suffix);
        return ntp__dnnl_error(&b, st, what);
    }
    return NTP_STATUS_OK;
}

void ntp__dnnl_make_rows(odnn_node *nd)
{
    int first = -1, last = -1;
    for (int i = 0; i < nd->n_steps; i++)
        if (!nd->steps[i].type || i == nd->main_step) {
            if (first < 0)
                first = i;
            last = i;
        }
    if (first < 0)
        first = last = nd->main_step >= 0 ? nd->main_step : 0;
    nd->n_rows = 0;
    for (int i = 0; i < nd->n_steps; i++) {
        int r = nd->n_rows++;
        nd->row_first[r] = i;
        if (i == first) {
            nd->main_row = r;
            i = last;
        }
        nd->row_last[r] = i;
    }
}

void ntp__dnnl_node_free(odnn_node *nd)
{
    if (!nd)
        return;
    for (int i = 0; i < nd->n_steps; i++) {
        if (nd->steps[i].prim)
            dnnl_primitive_destroy(nd->steps[i].prim);
        free(nd->steps[i].host_data);
    }
    for (int i = 0; i < nd->n_mems; i++) {
        if (nd->mems[i].m)
            dnnl_memory_destroy(nd->mems[i].m);
        free(nd->mems[i].own);
    }
    for (int i = 0; i < NTP_MAX_OUTPUTS; i++)
        free(nd->out_md[i]);
    free(nd);
}

ntp_status ntp__dnnl_alias(odnn_build *b, int idx, const dnnl_memory_desc_t *md, int *out)
{
    const odnn_mem *m = &b->nd->mems[idx];
    if (m->bind == ODNN_BIND_OWN || m->bind == ODNN_BIND_SCRATCH)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "cannot alias an owned buffer");
    return ntp__dnnl_mem(b, md, m->bind, m->idx, m->off, out);
}

ntp_status ntp__dnnl_follow_md(odnn_build *b, int i, dnnl_data_type_t dt, dnnl_memory_desc_t *md)
{
    dnnl_memory_desc_t have;
    ntp_status s = ntp__dnnl_in_md(b, i, &have);
    if (s)
        return s;
    if (have.data_type == dt) {
        *md = have;
        return NTP_STATUS_OK;
    }
    if (ntp__dnnl_md_with_dt(&have, dt, md))
        return NTP_STATUS_OK;
    dnnl_status_t st = ntp__dnnl_plain_md(md, &b->k->in[i].shape, dt);
    return st == dnnl_success ? NTP_STATUS_OK : ntp__dnnl_error(b, st, "input descriptor");
}

ntp_status ntp__dnnl_plain_input(odnn_build *b, int i, dnnl_data_type_t dt, int *idx)
{
    dnnl_memory_desc_t md;
    dnnl_status_t st = ntp__dnnl_plain_md(&md, &b->k->in[i].shape, dt);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "input descriptor");
    return ntp__dnnl_input(b, i, &md, 1.0f, idx);
}
