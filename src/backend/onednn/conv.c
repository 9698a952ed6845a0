/* Convolution and transposed convolution (1-d to 3-d; grouped, depthwise,
 * dilated, asymmetric padding) on oneDNN's convolution and deconvolution
 * primitives.
 *
 * Source, weights and destination are created with format_tag_any so that
 * oneDNN picks its blocked layouts (nChw8c on AVX2, nChw16c on AVX-512);
 * the weights are reordered into the chosen layout once, here, and the
 * destination stays blocked when its consumers are ours (internal). The
 * ONNX weight layouts map onto oneDNN's without copying: conv W [F, C/g, k]
 * is goihw, deconv W [C, F/g, k] is giohw, described by strides.
 *
 * int8: s8 source with the calibrated scale s_in, s8 weights quantised per
 * output channel (w_s[oc] = max|W[oc]| / 127), output scales
 * s_in * w_s[oc] / div, the bias as s32 in the accumulator's units
 * b / (s_in w_s[oc]) (see the build). div is 1 (post-ops see real values,
 * and a final linear post-op scales into the output's grid) unless the
 * post-ops could absorb that scaling (fuse.c): ResNet's conv + relu has
 * div = s_out and no linear post-op at all. */
#include <stdlib.h>
#include <string.h>

#include "core/numeric-impl.h"
#include "onednn-impl.h"

bool ntp__dnnl_conv_supports(const ntp_graph *g, const ntp_node *n)
{
    const ntp_attrs *a = &n->a;
    const ntp_shape *x = &g->tensors[n->in[0]].shape;
    int nk = x->ndim - 2;
    /* A deconvolution's output padding becomes a smaller end padding
     * (geometry), negative where the output padding exceeds the end
     * padding; oneDNN takes a negative end padding as extra output rows
     * that only the start of the window reaches, which is what output
     * padding means (the ONNX tests test_convtranspose_pad, _kernel_shape,
     * _output_shape and _with_kernel, and test_onednn). */
    return nk >= 1 && nk <= 3 && a->nk == nk && a->groups >= 1;
}

typedef struct cgeom {
    int nk;
    int64_t N, C, F, G; /* batch, in channels, out channels, groups */
    int64_t K;          /* kernel elements */
    dnnl_dims_t src, wei, dst, bias;
    dnnl_dims_t strides, dil, pl, pr;
    int wnd;
    bool deconv, grouped;
} cgeom;

static void geometry(const ntp_kargs *k, cgeom *c)
{
    const ntp_attrs *a = &k->node->a;
    const ntp_shape *x = &k->in[0].shape, *y = &k->out[0].shape;
    memset(c, 0, sizeof *c);
    c->nk = x->ndim - 2;
    c->deconv = k->node->op == NTP_OP_DECONV;
    c->N = x->dim[0];
    c->C = x->dim[1];
    c->F = y->dim[1];
    c->G = a->groups;
    c->grouped = c->G > 1;
    c->K = 1;
    for (int i = 0; i < x->ndim; i++) {
        c->src[i] = x->dim[i];
        c->dst[i] = y->dim[i];
    }
    int off = 0;
    if (c->grouped)
        c->wei[off++] = c->G;
    c->wei[off++] = c->F / c->G;
    c->wei[off++] = c->C / c->G;
    for (int d = 0; d < c->nk; d++) {
        c->wei[off++] = a->kernel[d];
        c->K *= a->kernel[d];
        c->strides[d] = a->stride[d];
        c->dil[d] = a->dilation[d] - 1; /* oneDNN counts the gaps */
        c->pl[d] = a->pad[d];
        c->pr[d] = a->pad[c->nk + d] - (c->deconv ? a->output_padding[d] : 0);
    }
    c->wnd = off;
    c->bias[0] = c->F;
}

/* The user's weights as a oneDNN descriptor over their own memory. */
static dnnl_status_t user_weights_md(const cgeom *c, dnnl_memory_desc_t *md)
{
    dnnl_dims_t s;
    int64_t ksz = c->K, og = c->F / c->G, ig = c->C / c->G;
    int i = c->wnd - 1;
    int64_t stride = 1;
    for (int d = c->nk - 1; d >= 0; d--, i--) {
        s[i] = stride;
        stride *= c->wei[i];
    }
    /* i now indexes the in-channel dim, i - 1 the out-channel dim. */
    if (!c->deconv) {
        s[i] = ksz; /* W [F, C/g, k]: o, then i */
        s[i - 1] = ig * ksz;
        if (c->grouped)
            s[0] = og * ig * ksz;
    } else {
        s[i - 1] = ksz; /* W [C, F/g, k]: i, then o */
        s[i] = og * ksz;
        if (c->grouped)
            s[0] = ig * og * ksz;
    }
    return dnnl_memory_desc_init_by_strides(md, c->wnd, c->wei, dnnl_f32, s);
}

/* Per-output-channel int8 scales of the weights (max|W| / 127 over
 * everything that feeds the channel). */
static void weight_scales(const cgeom *c, const float *w, float *sc)
{
    int64_t og = c->F / c->G, ig = c->C / c->G;
    if (!c->deconv) {
        ntp__i8_scales_per_channel(w, c->F, ig * c->K, sc);
        return;
    }
    for (int64_t f = 0; f < c->F; f++) {
        int64_t grp = f / og, o = f % og;
        float m = 0.0f;
        for (int64_t i = 0; i < ig; i++) {
            const float *p = w + ((grp * ig + i) * og + o) * c->K;
            for (int64_t q = 0; q < c->K; q++) {
                float v = p[q] < 0 ? -p[q] : p[q];
                if (v > m)
                    m = v;
            }
        }
        sc[f] = m > 0.0f ? m / 127.0f : 1.0f;
    }
}

/* The primitive descriptor with k->fused[0 .. n_post) as post-ops (and,
 * at int8, the output scales s_in w_s / div; wsc holds w_s), the post-op
 * operands' arguments in args/mems from *n = 0. */
static ntp_status conv_pd(odnn_build *b, const void *d, const cgeom *c, int n_post, float s_in,
                          float out_scale, const float *wsc, float *osc, dnnl_primitive_desc_t *pd,
                          int *n, int *args, int *mems)
{
    dnnl_primitive_attr_t attr;
    ntp_status s = ntp__dnnl_attr(b, &attr);
    if (s)
        return s;
    /* Post-ops first: at int8 they may fold a change of scale into the
     * output scales (div). */
    float div = 1.0f;
    *n = 0;
    b->po_end = n_post;
    s = ntp__dnnl_post_ops(b, attr, n_post == b->k->n_fused ? out_scale : 1.0f,
                           b->int8 ? &div : NULL, 0, NULL, n, args, mems);
    b->po_end = -1;
    if (s)
        return s;
    if (b->int8) {
        for (int64_t f = 0; f < c->F; f++)
            osc[f] = s_in * wsc[f] / div;
        dnnl_status_t st = dnnl_primitive_attr_set_output_scales(attr, c->F, 1 << 1, osc);
        if (st)
            return ntp__dnnl_error(b, st, "output scales");
    }
    return ntp__dnnl_pd(b, pd, d, attr, c->deconv ? "deconvolution" : "convolution");
}

ntp_status ntp__dnnl_conv_build(odnn_build *b)
{
    ntp_kargs *k = b->k;
    cgeom c;
    geometry(k, &c);
    int nd = c.nk + 2;
    bool has_bias = k->n_w >= 2;
    if (k->n_in != 1 || k->n_w < 1 || c.G <= 0 || c.C % c.G || c.F % c.G)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "inconsistent convolution arguments");
    dnnl_data_type_t adt = b->int8 ? dnnl_s8 : b->cdt;
    dnnl_data_type_t ddt = adt;
    float s_in = 1.0f, s_out = 1.0f;
    ntp_status s;
    if (b->int8) {
        if ((s = ntp__dnnl_act_scale(b, NTP_DTYPE_I8, k->in_scale[0], 0, false, &s_in)))
            return s;
        if (k->out[0].dtype == NTP_DTYPE_I8) {
            if ((s = ntp__dnnl_act_scale(b, NTP_DTYPE_I8, k->out_scale[0], 0, true, &s_out)))
                return s;
        } else {
            ddt = dnnl_f32;
        }
    }
    dnnl_data_type_t bdt = b->cdt == dnnl_f16 ? dnnl_f16 : dnnl_f32;
    dnnl_memory_desc_t src_md, wei_md, dst_md, bias_md;
    dnnl_memory_desc_init_by_tag(&src_md, nd, c.src, adt, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&wei_md, c.wnd, c.wei, b->int8 ? dnnl_s8 : b->cdt,
                                 dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&dst_md, nd, c.dst, ddt, dnnl_format_tag_any);
    /* int8: an s32 bias in the accumulator's units (below). */
    dnnl_memory_desc_init_by_tag(&bias_md, 1, c.bias, b->int8 ? dnnl_s32 : bdt, dnnl_a);
    union {
        dnnl_convolution_desc_t conv;
        dnnl_deconvolution_desc_t deconv;
    } d;
    dnnl_status_t st;
    if (!c.deconv)
        st = dnnl_dilated_convolution_forward_desc_init(
            &d.conv, dnnl_forward_inference, dnnl_convolution_direct, &src_md, &wei_md,
            has_bias ? &bias_md : NULL, &dst_md, c.strides, c.dil, c.pl, c.pr);
    else
        st = dnnl_dilated_deconvolution_forward_desc_init(
            &d.deconv, dnnl_forward_inference, dnnl_deconvolution_direct, &src_md, &wei_md,
            has_bias ? &bias_md : NULL, &dst_md, c.strides, c.dil, c.pl, c.pr);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st,
                               c.deconv ? "deconvolution descriptor" : "convolution descriptor");

    /* Weights (and int8 scales) first: the attribute needs the scales. */
    float *w = NULL, *bias = NULL, *wsc = NULL, *osc = NULL;
    if ((s = ntp__dnnl_weight_f32(b, 0, &w)) ||
        (k->n_w >= 2 && (s = ntp__dnnl_weight_f32(b, 1, &bias))))
        goto done;
    if (b->int8) {
        wsc = malloc((size_t)c.F * sizeof *wsc);
        osc = malloc((size_t)c.F * sizeof *osc);
        if (!wsc || !osc) {
            s = ntp__dnnl_fail(b, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            goto done;
        }
        weight_scales(&c, w, wsc);
    }
    int args[ODNN_MAX_ARGS], mems[ODNN_MAX_ARGS], n = 0;
    dnnl_primitive_desc_t pd;
    if ((s = conv_pd(b, &d, &c, k->n_fused, s_in, ddt == dnnl_s8 ? 1.0f / s_out : 1.0f, wsc, osc,
                     &pd, &n, args, mems)))
        goto done;
    /* The reorder's scale adjustment that keeps oneDNN's direct int8
     * convolutions exact without VNNI is missing on its GEMM-based ones
     * (x64:gemm_s8s8s32:jit, which a grouped deconv gets on AVX2): full-range
     * s8 weights saturate there as on the GEMM of fc and matmul (probe.c),
     * measured 0.15 relative L2 and 25 quantisation steps on
     * test_backend_ops's grouped deconv. Such a convolution gets 7-bit
     * weights, as fc does. */
    const char *impl = NULL;
    if (b->int8 && ntp__dnnl_int8_needs_7bit() &&
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
        strstr(impl, "gemm")) {
        for (int64_t f = 0; f < c.F; f++)
            wsc[f] *= 127.0f / 63.0f;
        if ((s = conv_pd(b, &d, &c, k->n_fused, s_in, ddt == dnnl_s8 ? 1.0f / s_out : 1.0f, wsc,
                         osc, &pd, &n, args, mems)))
            goto done;
    }
    /* Fusion that never loses: a group with a residual add or product is
     * compared with the conv that keeps only the layers before it; when
     * the whole group would run worse, the add (and what follows it) runs
     * as a binary primitive after the conv instead (fuse.c). */
    int cut = k->n_fused;
    char why[96] = "";
    int first_bin = b->int8 ? -1 : ntp__dnnl_first_binary(k, 0);
    if (first_bin >= 0) {
        int n0 = 0, args0[ODNN_MAX_ARGS], mems0[ODNN_MAX_ARGS];
        dnnl_primitive_desc_t pd0;
        s = conv_pd(b, &d, &c, first_bin, s_in, 1.0f, wsc, osc, &pd0, &n0, args0, mems0);
        if (s)
            goto done;
        if (ntp__dnnl_decline_fusion(b, pd, pd0, first_bin, why, sizeof why)) {
            pd = pd0;
            n = n0;
            memcpy(args, args0, sizeof args);
            memcpy(mems, mems0, sizeof mems);
            cut = first_bin;
        }
    }
    if (b->int8)
        for (int64_t f = 0; f < c.F; f++) {
            /* Measured: oneDNN 2.6's int8 convolutions here (jit_uni_int8,
             * jit_uni_deconv; s8 source, AVX2 without VNNI) do not add an
             * f32 bias as b / oscale: a 1x1 conv with bias ended 0.12
             * relative L2 from f32 (0.40 with inputs 10x smaller) against
             * 0.017 without bias. An s32 bias in the accumulator's units,
             * b / (s_in w_s), rounded by the packing reorder, is exact
             * (0.017 and 0.011). It went unnoticed while the bundled int8
             * convs had no bias; folded batch norms give them one. */
            if (bias)
                bias[f] /= s_in * wsc[f];
            wsc[f] = 1.0f / wsc[f]; /* the reorder multiplies */
        }

    int mi;
    if ((s = ntp__dnnl_input(b, 0, ntp__dnnl_query(pd, dnnl_query_src_md, 0), s_in, &mi)))
        goto done;
    args[n] = DNNL_ARG_SRC;
    mems[n++] = mi;
    dnnl_memory_desc_t uw;
    if ((st = user_weights_md(&c, &uw))) {
        s = ntp__dnnl_error(b, st, "weights descriptor");
        goto done;
    }
    /* Weight scales: per output channel, which is dim 0 of oihw and dims
     * 0 and 1 of goihw. */
    int wmask = c.grouped ? 3 : 1;
    if ((s = ntp__dnnl_pack(b, w, &uw, ntp__dnnl_query(pd, dnnl_query_weights_md, 0), wsc,
                            b->int8 ? (int)c.F : 0, wmask, &mi)))
        goto done;
    args[n] = DNNL_ARG_WEIGHTS;
    mems[n++] = mi;
    if (has_bias) {
        dnnl_memory_desc_t ub;
        dnnl_memory_desc_init_by_tag(&ub, 1, c.bias, dnnl_f32, dnnl_a);
        if ((s = ntp__dnnl_pack(b, bias, &ub, ntp__dnnl_query(pd, dnnl_query_weights_md, 1), NULL,
                                0, 0, &mi)))
            goto done;
        args[n] = DNNL_ARG_BIAS;
        mems[n++] = mi;
    }
    const dnnl_memory_desc_t *dst = ntp__dnnl_query(pd, dnnl_query_dst_md, 0);
    if (cut < k->n_fused)
        s = ntp__dnnl_ws_mem(b, dst, &mi);
    else
        s = ntp__dnnl_output(b, 0, dst, ddt == dnnl_s8 ? s_out : 1.0f, &mi);
    if (s)
        goto done;
    args[n] = DNNL_ARG_DST;
    mems[n++] = mi;
    if ((s = ntp__dnnl_step(b, pd, "", NULL, n, args, mems)))
        goto done;
    ntp__dnnl_set_main(b, pd);
    if (cut < k->n_fused)
        s = ntp__dnnl_post_tail(b, cut, mi, dst, why);
done:
    free(w);
    free(bias);
    free(wsc);
    free(osc);
    return s;
}
