/* fc (dense) and matmul.
 *
 * fc: an input [..., K] of any rank is a 2-d GEMM of rows x K (rows = the
 * product of the leading dims), so DeepSpeech's [T, N, K] input is one
 * [T*N, K] product rather than a batch of small ones. It runs on oneDNN's
 * inner product primitive, whose weights take format_tag_any and are
 * packed once here; the 2-d source and destination are views of the plain
 * tensors, so no activation is copied.
 *
 * matmul: oneDNN's matmul primitive with numpy broadcasting of the batch
 * dims (a dim of 1 broadcasts) and the optional transposes expressed as
 * strides, so no transposed copy is made either.
 *
 * int8: fc quantises its weights per output unit; matmul multiplies two s8
 * activations with the product of their scales. Both then scale into the
 * output's grid after the post-ops, as conv does. */
#include <stdlib.h>
#include <string.h>

#include "core/numeric-impl.h"
#include "onednn-impl.h"

bool ntp__dnnl_matmul_supports(const ntp_graph *g, const ntp_node *n)
{
    if (n->op == NTP_OP_FC || n->op == NTP_OP_LM_HEAD)
        return g->tensors[n->in[0]].shape.ndim >= 1;
    const ntp_shape *a = &g->tensors[n->in[0]].shape, *b = &g->tensors[n->in[1]].shape;
    const ntp_shape *y = &g->tensors[n->out[0]].shape;
    if (a->ndim < 2 || b->ndim < 2 || y->ndim > DNNL_MAX_NDIMS)
        return false;
    /* oneDNN broadcasts a batch dim of 1 in either operand. */
    for (int d = 0; d < y->ndim - 2; d++) {
        int da = d - (y->ndim - a->ndim), db = d - (y->ndim - b->ndim);
        if (da >= 0 && a->dim[da] != 1 && a->dim[da] != y->dim[d])
            return false;
        if (db >= 0 && b->dim[db] != 1 && b->dim[db] != y->dim[d])
            return false;
    }
    return true;
}

/* int8 scales of the activations, and whether the output is s8. */
static ntp_status int8_scales(odnn_build *b, int n_in, float *s_in, float *s_out, bool *s8_out)
{
    const ntp_kargs *k = b->k;
    ntp_status s;
    *s_out = 1.0f;
    *s8_out = false;
    for (int i = 0; i < n_in; i++)
        if ((s = ntp__dnnl_act_scale(b, NTP_DTYPE_I8, k->in_scale[i], i, false, &s_in[i])))
            return s;
    if (k->out[0].dtype == NTP_DTYPE_I8) {
        *s8_out = true;
        return ntp__dnnl_act_scale(b, NTP_DTYPE_I8, k->out_scale[0], 0, true, s_out);
    }
    return NTP_STATUS_OK;
}

static ntp_status fc_build(odnn_build *b)
{
    ntp_kargs *k = b->k;
    const ntp_shape *xs = &k->in[0].shape, *ys = &k->out[0].shape;
    int64_t K = xs->dim[xs->ndim - 1], units = ys->dim[ys->ndim - 1];
    int64_t rows = K > 0 ? ntp_shape_numel(xs) / K : 0;
    bool has_bias = k->n_w >= 2;
    if (k->n_in != 1 || k->n_w < 1 || ntp_shape_numel(&k->w[0].shape) != units * K)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "inconsistent fc arguments");
    float s_in = 1.0f, s_out = 1.0f;
    bool s8_out = false;
    ntp_status s;
    if (b->int8 && (s = int8_scales(b, 1, &s_in, &s_out, &s8_out)))
        return s;
    dnnl_data_type_t adt = b->int8 ? dnnl_s8 : b->cdt;
    dnnl_data_type_t ddt = b->int8 ? (s8_out ? dnnl_s8 : dnnl_f32) : b->cdt;
    dnnl_data_type_t bdt = b->cdt == dnnl_f16 ? dnnl_f16 : dnnl_f32;
    dnnl_dims_t xd = {rows, K}, wd = {units, K}, yd = {rows, units}, bd = {units};
    dnnl_memory_desc_t src_md, wei_md, dst_md, bias_md;
    dnnl_memory_desc_init_by_tag(&src_md, 2, xd, adt, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&wei_md, 2, wd, adt, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&dst_md, 2, yd, ddt, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&bias_md, 1, bd, bdt, dnnl_a);
    dnnl_inner_product_desc_t d;
    dnnl_status_t st = dnnl_inner_product_forward_desc_init(
        &d, dnnl_forward_inference, &src_md, &wei_md, has_bias ? &bias_md : NULL, &dst_md);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "inner product descriptor");
    float *w = NULL, *bias = NULL, *wsc = NULL, *osc = NULL;
    if ((s = ntp__dnnl_weight_f32(b, 0, &w)) ||
        (has_bias && (s = ntp__dnnl_weight_f32(b, 1, &bias))))
        goto done;
    if (b->int8) {
        wsc = malloc((size_t)units * sizeof *wsc);
        osc = malloc((size_t)units * sizeof *osc);
        if (!wsc || !osc) {
            s = ntp__dnnl_fail(b, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            goto done;
        }
        ntp__i8_scales_per_channel(w, units, K, wsc);
        float widen = ntp__dnnl_int8_needs_7bit() ? 127.0f / 63.0f : 1.0f;
        for (int64_t u = 0; u < units; u++) {
            wsc[u] *= widen;
            osc[u] = s_in * wsc[u];
            if (bias)
                bias[u] /= osc[u];
            wsc[u] = 1.0f / wsc[u];
        }
    }
    dnnl_primitive_attr_t attr;
    if ((s = ntp__dnnl_attr(b, &attr)))
        goto done;
    if (b->int8 && (st = dnnl_primitive_attr_set_output_scales(attr, units, 1 << 1, osc))) {
        s = ntp__dnnl_error(b, st, "output scales");
        goto done;
    }
    int args[ODNN_MAX_ARGS], mems[ODNN_MAX_ARGS], n = 0, mi, view;
    if ((s = ntp__dnnl_post_ops(b, attr, s8_out ? 1.0f / s_out : 1.0f, NULL, 2, yd, &n, args,
                                mems)))
        goto done;
    dnnl_primitive_desc_t pd;
    if ((s = ntp__dnnl_pd(b, &pd, &d, attr, "inner product")))
        goto done;
    /* The source as a plain tensor of its own shape, then a 2-d view. */
    dnnl_memory_desc_t plain;
    ntp__dnnl_plain_md(&plain, xs, adt);
    if ((s = ntp__dnnl_input(b, 0, &plain, s_in, &mi)) ||
        (s = ntp__dnnl_alias(b, mi, ntp__dnnl_query(pd, dnnl_query_src_md, 0), &view)))
        goto done;
    args[n] = DNNL_ARG_SRC;
    mems[n++] = view;
    dnnl_memory_desc_t uw, ub;
    dnnl_memory_desc_init_by_tag(&uw, 2, wd, dnnl_f32, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&ub, 1, bd, dnnl_f32, dnnl_a);
    if ((s = ntp__dnnl_pack(b, w, &uw, ntp__dnnl_query(pd, dnnl_query_weights_md, 0), wsc,
                            b->int8 ? (int)units : 0, 1, &mi)))
        goto done;
    args[n] = DNNL_ARG_WEIGHTS;
    mems[n++] = mi;
    if (has_bias) {
        if ((s = ntp__dnnl_pack(b, bias, &ub, ntp__dnnl_query(pd, dnnl_query_weights_md, 1), NULL,
                                0, 0, &mi)))
            goto done;
        args[n] = DNNL_ARG_BIAS;
        mems[n++] = mi;
    }
    ntp__dnnl_plain_md(&plain, ys, ddt);
    if ((s = ntp__dnnl_output(b, 0, &plain, s8_out ? s_out : 1.0f, &mi)) ||
        (s = ntp__dnnl_alias(b, mi, ntp__dnnl_query(pd, dnnl_query_dst_md, 0), &view)))
        goto done;
    args[n] = DNNL_ARG_DST;
    mems[n++] = view;
    if ((s = ntp__dnnl_step(b, pd, "", NULL, n, args, mems)))
        goto done;
    ntp__dnnl_set_main(b, pd);
done:
    free(w);
    free(bias);
    free(wsc);
    free(osc);
    return s;
}

/* A matmul operand of shape s, padded with leading 1s to rank nd, its last
 * two dims swapped when transposed: dims and strides over plain memory. */
static dnnl_status_t operand_md(const ntp_shape *s, int nd, bool transpose, dnnl_data_type_t dt,
                                dnnl_memory_desc_t *md)
{
    dnnl_dims_t dims, strides;
    int pad = nd - s->ndim;
    int64_t stride = 1;
    for (int d = nd - 1; d >= 0; d--) {
        dims[d] = d >= pad ? s->dim[d - pad] : 1;
        strides[d] = stride;
        stride *= dims[d];
    }
    if (transpose) {
        int64_t t = dims[nd - 1];
        dims[nd - 1] = dims[nd - 2];
        dims[nd - 2] = t;
        t = strides[nd - 1];
        strides[nd - 1] = strides[nd - 2];
        strides[nd - 2] = t;
    }
    return dnnl_memory_desc_init_by_strides(md, nd, dims, dt, strides);
}

static ntp_status matmul_build(odnn_build *b)
{
    ntp_kargs *k = b->k;
    const ntp_attrs *a = &k->node->a;
    const ntp_shape *ys = &k->out[0].shape;
    int nd = ys->ndim;
    if (k->n_in != 2 || nd < 2)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "inconsistent matmul arguments");
    float s_in[2] = {1.0f, 1.0f}, s_out = 1.0f;
    bool s8_out = false;
    ntp_status s;
    if (b->int8 && (s = int8_scales(b, 2, s_in, &s_out, &s8_out)))
        return s;
    dnnl_data_type_t adt = b->int8 ? dnnl_s8 : b->cdt;
    dnnl_data_type_t ddt = b->int8 ? (s8_out ? dnnl_s8 : dnnl_f32) : b->cdt;
    dnnl_memory_desc_t amd, bmd, ymd;
    dnnl_status_t st;
    if ((st = operand_md(&k->in[0].shape, nd, a->transpose_a, adt, &amd)) ||
        (st = operand_md(&k->in[1].shape, nd, a->transpose_b, adt, &bmd)) ||
        (st = ntp__dnnl_plain_md(&ymd, ys, ddt)))
        return ntp__dnnl_error(b, st, "matmul descriptors");
    dnnl_matmul_desc_t d;
    if ((st = dnnl_matmul_desc_init(&d, &amd, &bmd, NULL, &ymd)))
        return ntp__dnnl_error(b, st, "matmul descriptor");
    dnnl_primitive_attr_t attr;
    if ((s = ntp__dnnl_attr(b, &attr)))
        return s;
    /* The second operand plays the weights: halved into 7 bits without
     * VNNI (a reorder step), see ntp__dnnl_int8_needs_7bit. */
    float want_scale[2] = {s_in[0], s_in[1]};
    if (b->int8 && ntp__dnnl_int8_needs_7bit())
        want_scale[1] *= 2.0f;
    float osc = want_scale[0] * want_scale[1];
    if (b->int8 && (st = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &osc)))
        return ntp__dnnl_error(b, st, "output scales");
    int args[ODNN_MAX_ARGS], mems[ODNN_MAX_ARGS], n = 0, mi, view;
    if ((s = ntp__dnnl_post_ops(b, attr, s8_out ? 1.0f / s_out : 1.0f, NULL, 0, NULL, &n, args,
                                mems)))
        return s;
    dnnl_primitive_desc_t pd;
    if ((s = ntp__dnnl_pd(b, &pd, &d, attr, "matmul")))
        return s;
    const int arg_of[2] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS};
    const dnnl_memory_desc_t *view_md[2] = {&amd, &bmd};
    for (int i = 0; i < 2; i++) {
        dnnl_memory_desc_t plain;
        ntp__dnnl_plain_md(&plain, &k->in[i].shape, adt);
        if ((s = ntp__dnnl_input(b, i, &plain, want_scale[i], &mi)) ||
            (s = ntp__dnnl_alias(b, mi, view_md[i], &view)))
            return s;
        args[n] = arg_of[i];
        mems[n++] = view;
    }
    if ((s = ntp__dnnl_output(b, 0, &ymd, s8_out ? s_out : 1.0f, &mi)))
        return s;
    args[n] = DNNL_ARG_DST;
    mems[n++] = mi;
    if ((s = ntp__dnnl_step(b, pd, "", NULL, n, args, mems)))
        return s;
    ntp__dnnl_set_main(b, pd);
    return NTP_STATUS_OK;
}

ntp_status ntp__dnnl_matmul_build(odnn_build *b)
{
    return b->n->op == NTP_OP_FC || b->n->op == NTP_OP_LM_HEAD ? fc_build(b) : matmul_build(b);
}
