/* Convolution, transposed convolution and fully connected layers on
 * XNNPACK.
 *
 * XNNPACK wants convolution kernels as [groups][out/group][kh][kw][in/group]
 * (channels last, like its activations) where ONNX gives conv weights as
 * [F][C/g][kh][kw] and deconv weights as [C][F/g][kh][kw]; prepare rewrites
 * them once and XNNPACK then packs them into its own blocked format when the
 * operator is created. A 1-d layer ([N, C, L]) runs as a 2-d one with height
 * 1. Depthwise layers need nothing special: XNNPACK picks its depthwise
 * kernels itself when a group has one input channel. Fully connected
 * weights [units, K] are already in XNNPACK's layout. An activation folded
 * into the layer (--fuse) becomes the operator's output range. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xnnpack-impl.h"

typedef struct cgeom {
    int64_t N, C, F, G, Cg, Fg;
    int64_t H, W, OH, OW; /* input and output spatial dims (H = 1 for 1-d) */
    int64_t kh, kw, sh, sw, dh, dw;
    int64_t pt, pl, pb, pr; /* padding: top, left, bottom, right */
    int64_t ah, aw;         /* deconv output adjustment */
} cgeom;

static bool fits_u32(int64_t v)
{
    return v >= 0 && v <= (int64_t)UINT32_MAX;
}

/* Geometry of a conv or deconv from its input and output shapes; false
 * when XNNPACK cannot express it. */
static bool get_cgeom(const ntp_node *n, const ntp_shape *x, const ntp_shape *y, cgeom *g)
{
    const ntp_attrs *a = &n->a;
    int nk = x->ndim - 2;
    if ((nk != 1 && nk != 2) || y->ndim != x->ndim || a->nk != nk || a->groups <= 0)
        return false;
    g->N = x->dim[0];
    g->C = x->dim[1];
    g->F = y->dim[1];
    g->G = a->groups;
    if (g->C % g->G || g->F % g->G)
        return false;
    g->Cg = g->C / g->G;
    g->Fg = g->F / g->G;
    int h = nk == 2 ? 0 : -1, w = nk - 1; /* attribute index of height and width */
    g->H = h >= 0 ? x->dim[2] : 1;
    g->W = x->dim[2 + w];
    g->OH = h >= 0 ? y->dim[2] : 1;
    g->OW = y->dim[2 + w];
    g->kh = h >= 0 ? a->kernel[h] : 1;
    g->kw = a->kernel[w];
    g->sh = h >= 0 ? a->stride[h] : 1;
    g->sw = a->stride[w];
    g->dh = h >= 0 ? a->dilation[h] : 1;
    g->dw = a->dilation[w];
    g->pt = h >= 0 ? a->pad[h] : 0;
    g->pb = h >= 0 ? a->pad[nk + h] : 0;
    g->pl = a->pad[w];
    g->pr = a->pad[nk + w];
    g->ah = h >= 0 && n->op == NTP_OP_DECONV ? a->output_padding[h] : 0;
    g->aw = n->op == NTP_OP_DECONV ? a->output_padding[w] : 0;
    int64_t v[] = {g->N,  g->C,  g->F,  g->G,  g->H,  g->W,  g->kh, g->kw, g->sh,
                   g->sw, g->dh, g->dw, g->pt, g->pl, g->pb, g->pr, g->ah, g->aw};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (!fits_u32(v[i]))
            return false;
    if (g->kh < 1 || g->kw < 1 || g->sh < 1 || g->sw < 1 || g->dh < 1 || g->dw < 1)
        return false;
    /* XNNPACK's output adjustment must stay below the stride. */
    if (n->op == NTP_OP_DECONV && (g->ah >= g->sh || g->aw >= g->sw))
        return false;
    return true;
}

bool ntp__xnn_conv_supports(const ntp_graph *g, const ntp_node *n, bool f16)
{
    (void)f16; /* both operators exist at f16; the caller probed f16 itself */
    if (n->n_in != 1 || n->n_out != 1 || n->n_w < 1)
        return false;
    cgeom c;
    return get_cgeom(n, &ntp__cin(g, n, 0)->shape, &ntp__cout(g, n, 0)->shape, &c);
}

/* An fc's output units; an lm_head (docs/decoders.md) is an fc of `vocab`
 * units without a bias, its weight [vocab, D] its own or the embedding's. */
static int64_t fc_units(const ntp_node *n)
{
    return n->op == NTP_OP_LM_HEAD ? n->a.vocab : n->a.units;
}

bool ntp__xnn_fc_supports(const ntp_graph *g, const ntp_node *n, bool f16)
{
    (void)f16;
    const ntp_shape *x = &ntp__cin(g, n, 0)->shape;
    return n->n_in == 1 && n->n_w >= 1 && x->ndim >= 1 && fc_units(n) > 0;
}

/* ONNX weights to XNNPACK's [G][Fg][kh][kw][Cg]. */
static void pack_kernel(const cgeom *g, bool deconv, const float *w, float *dst)
{
    int64_t kk = g->kh * g->kw;
    for (int64_t grp = 0; grp < g->G; grp++)
        for (int64_t o = 0; o < g->Fg; o++)
            for (int64_t p = 0; p < kk; p++)
                for (int64_t i = 0; i < g->Cg; i++) {
                    int64_t src = deconv ? ((grp * g->Cg + i) * g->Fg + o) * kk + p
                                         : ((grp * g->Fg + o) * g->Cg + i) * kk + p;
                    dst[((grp * g->Fg + o) * kk + p) * g->Cg + i] = w[src];
                }
}

static ntp_status create_conv(xnnb_build *b, const cgeom *g, bool deconv, const void *kernel,
                              const void *bias, xnn_operator_t *op)
{
    uint32_t fl = ntp__xnn_flags(b);
    enum xnn_status st;
    if (deconv && b->f16)
        st = xnn_create_deconvolution2d_nhwc_f16(
            (uint32_t)g->pt, (uint32_t)g->pr, (uint32_t)g->pb, (uint32_t)g->pl, (uint32_t)g->kh,
            (uint32_t)g->kw, (uint32_t)g->sh, (uint32_t)g->sw, (uint32_t)g->dh, (uint32_t)g->dw,
            (uint32_t)g->G, (size_t)g->Cg, (size_t)g->Fg, (size_t)g->C, (size_t)g->F, kernel, bias,
            b->out_min, b->out_max, fl, op);
    else if (deconv)
        st = xnn_create_deconvolution2d_nhwc_f32(
            (uint32_t)g->pt, (uint32_t)g->pr, (uint32_t)g->pb, (uint32_t)g->pl, (uint32_t)g->kh,
            (uint32_t)g->kw, (uint32_t)g->sh, (uint32_t)g->sw, (uint32_t)g->dh, (uint32_t)g->dw,
            (uint32_t)g->G, (size_t)g->Cg, (size_t)g->Fg, (size_t)g->C, (size_t)g->F, kernel, bias,
            b->out_min, b->out_max, fl, op);
    else if (b->f16)
        st = xnn_create_convolution2d_nhwc_f16(
            (uint32_t)g->pt, (uint32_t)g->pr, (uint32_t)g->pb, (uint32_t)g->pl, (uint32_t)g->kh,
            (uint32_t)g->kw, (uint32_t)g->sh, (uint32_t)g->sw, (uint32_t)g->dh, (uint32_t)g->dw,
            (uint32_t)g->G, (size_t)g->Cg, (size_t)g->Fg, (size_t)g->C, (size_t)g->F, kernel, bias,
            b->out_min, b->out_max, fl, op);
    else
        st = xnn_create_convolution2d_nhwc_f32(
            (uint32_t)g->pt, (uint32_t)g->pr, (uint32_t)g->pb, (uint32_t)g->pl, (uint32_t)g->kh,
            (uint32_t)g->kw, (uint32_t)g->sh, (uint32_t)g->sw, (uint32_t)g->dh, (uint32_t)g->dw,
            (uint32_t)g->G, (size_t)g->Cg, (size_t)g->Fg, (size_t)g->C, (size_t)g->F, kernel, bias,
            b->out_min, b->out_max, fl, op);
    return ntp__xnn_check(b, st,
                          deconv ? "creating the deconvolution" : "creating the convolution");
}

ntp_status ntp__xnn_conv_build(xnnb_build *b)
{
    ntp_kargs *k = b->k;
    bool deconv = b->n->op == NTP_OP_DECONV;
    cgeom g;
    if (k->n_in != 1 || k->n_w < 1 || !get_cgeom(b->n, &k->in[0].shape, &k->out[0].shape, &g))
        return ntp__xnn_fail(b, NTP_STATUS_SHAPE_ERROR, "input and output do not fit the layer");
    int64_t wn = ntp_shape_numel(&k->w[0].shape);
    if (wn != g.F * g.Cg * g.kh * g.kw)
        return ntp__xnn_fail(b, NTP_STATUS_SHAPE_ERROR, "weight has %lld values, expected %lld",
                             (long long)wn, (long long)(g.F * g.Cg * g.kh * g.kw));
    float *w = NULL, *packed = malloc((size_t)wn * sizeof *packed + 1), *bias = NULL;
    void *kernel = NULL, *bias_st = NULL;
    ntp_status st = packed ? ntp__xnn_weight_f32(b, 0, &w)
                           : ntp__xnn_fail(b, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!st) {
        pack_kernel(&g, deconv, w, packed);
        st = ntp__xnn_store(b, packed, wn, &kernel);
    }
    if (!st && k->n_w > 1) {
        if (ntp_shape_numel(&k->w[1].shape) != g.F)
            st = ntp__xnn_fail(b, NTP_STATUS_SHAPE_ERROR, "bias does not have %lld values",
                               (long long)g.F);
        else if (!(st = ntp__xnn_weight_f32(b, 1, &bias)))
            st = ntp__xnn_store(b, bias, g.F, &bias_st);
    }
    xnn_operator_t op = NULL;
    if (!st)
        st = create_conv(b, &g, deconv, kernel, bias_st, &op);
    free(w);
    free(packed);
    free(bias);
    free(kernel);
    free(bias_st);
    if (st)
        return st;
    xnnb_call *c;
    if ((st = ntp__xnn_call(b, op, deconv ? XNNB_FN_DECONV : XNNB_FN_CONV, &c)))
        return st;
    c->batch = (size_t)g.N;
    c->height = (size_t)g.H;
    c->width = (size_t)g.W;
    c->adj_h = (uint32_t)g.ah;
    c->adj_w = (uint32_t)g.aw;
    if ((st = ntp__xnn_input(b, 0, XNNB_NHWC, &c->x, NULL)) ||
        (st = ntp__xnn_output(b, 0, XNNB_NHWC, &c->y)))
        return st;
    const char *kind = deconv                              ? "deconvolution"
                       : g.Cg == 1 && g.Fg == 1 && g.G > 1 ? "convolution(depthwise)"
                                                           : "convolution";
    snprintf(b->nd->impl, sizeof b->nd->impl, "xnnpack:%s_nhwc_%s", kind, b->f16 ? "f16" : "f32");
    return NTP_STATUS_OK;
}

ntp_status ntp__xnn_fc_build(xnnb_build *b)
{
    ntp_kargs *k = b->k;
    const ntp_shape *x = &k->in[0].shape;
    int64_t K = x->dim[x->ndim - 1], units = fc_units(b->n);
    int64_t rows = K > 0 ? ntp_shape_numel(x) / K : 0;
    if (ntp_shape_numel(&k->w[0].shape) != units * K ||
        ntp_shape_numel(&k->out[0].shape) != rows * units)
        return ntp__xnn_fail(b, NTP_STATUS_SHAPE_ERROR, "input, weight and output do not fit");
    if (k->n_w > 1 && ntp_shape_numel(&k->w[1].shape) != units)
        return ntp__xnn_fail(b, NTP_STATUS_SHAPE_ERROR, "bias does not have %lld values",
                             (long long)units);
    /* Weights and bias are already stored in the operator's type and
     * layout; XNNPACK copies them into its packed form. */
    const void *bias = k->n_w > 1 ? k->w[1].data : NULL;
    xnn_operator_t op = NULL;
    enum xnn_status xs =
        b->f16 ? xnn_create_fully_connected_nc_f16((size_t)K, (size_t)units, (size_t)K,
                                                   (size_t)units, k->w[0].data, bias, b->out_min,
                                                   b->out_max, ntp__xnn_flags(b), &op)
               : xnn_create_fully_connected_nc_f32((size_t)K, (size_t)units, (size_t)K,
                                                   (size_t)units, k->w[0].data, bias, b->out_min,
                                                   b->out_max, ntp__xnn_flags(b), &op);
    ntp_status st = ntp__xnn_check(b, xs, "creating the fully connected operator");
    if (st)
        return st;
    xnnb_call *c;
    if ((st = ntp__xnn_call(b, op, XNNB_FN_FC, &c)))
        return st;
    c->batch = (size_t)rows;
    if ((st = ntp__xnn_input(b, 0, XNNB_PLAIN, &c->x, NULL)) ||
        (st = ntp__xnn_output(b, 0, XNNB_PLAIN, &c->y)))
        return st;
    snprintf(b->nd->impl, sizeof b->nd->impl, "xnnpack:fully_connected_nc_%s",
             b->f16 ? "f16" : "f32");
    return NTP_STATUS_OK;
}
