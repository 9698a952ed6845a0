/* Pooling on XNNPACK: max and average pooling (NHWC), global average
 * pooling (NWC, or NCW straight from a plain input), and global max pooling
 * as a max pooling whose window is the whole image (this snapshot has no
 * global max operator).
 *
 * XNNPACK computes pooling output sizes with floor division and has no
 * ceil mode; a ceil-mode layer gets the extra bottom/right padding that
 * makes floor give the same size. Max pooling ignores padding, and average
 * pooling with any padding divides each window by the number of real
 * elements in it, which is PyTorch's count_include_pad=false (and, with no
 * explicit padding, also what PyTorch does for the ceil-mode overhang); a
 * count_include_pad layer with explicit padding stays on another backend.
 * XNNPACK refuses 1x1 windows, and reads a padded tap as the nearest border
 * pixel, so dilated max pooling is taken only without padding. */
#include <limits.h>
#include <math.h>
#include <stdio.h>

#include "xnnpack-impl.h"

typedef struct pgeom {
    int64_t N, C, H, W, OH, OW;
    int64_t kh, kw, sh, sw, dh, dw;
    int64_t pt, pl, pb, pr;
} pgeom;

static int64_t out_size(int64_t in, int64_t pb, int64_t pe, int64_t k, int64_t s, int64_t d)
{
    int64_t eff = (k - 1) * d + 1, padded = in + pb + pe;
    return padded < eff ? 0 : (padded - eff) / s + 1;
}

static bool get_pgeom(const ntp_node *n, const ntp_shape *x, const ntp_shape *y, pgeom *g)
{
    const ntp_attrs *a = &n->a;
    int nk = x->ndim - 2;
    if ((nk != 1 && nk != 2) || y->ndim != x->ndim || a->nk != nk || y->dim[1] != x->dim[1] ||
        y->dim[0] != x->dim[0])
        return false;
    int h = nk == 2 ? 0 : -1, w = nk - 1;
    g->N = x->dim[0];
    g->C = x->dim[1];
    g->H = h >= 0 ? x->dim[2] : 1;
    g->W = x->dim[2 + w];
    g->OH = h >= 0 ? y->dim[2] : 1;
    g->OW = y->dim[2 + w];
    g->kh = h >= 0 ? a->kernel[h] : 1;
    g->kw = a->kernel[w];
    g->sh = h >= 0 ? a->stride[h] : 1;
    g->sw = a->stride[w];
    g->dh = h >= 0 && n->op == NTP_OP_MAXPOOL ? a->dilation[h] : 1;
    g->dw = n->op == NTP_OP_MAXPOOL ? a->dilation[w] : 1;
    g->pt = h >= 0 ? a->pad[h] : 0;
    g->pb = h >= 0 ? a->pad[nk + h] : 0;
    g->pl = a->pad[w];
    g->pr = a->pad[nk + w];
    if (g->kh < 1 || g->kw < 1 || g->sh < 1 || g->sw < 1 || g->dh < 1 || g->dw < 1 ||
        g->kh * g->kw < 2)
        return false;
    if (n->op == NTP_OP_AVGPOOL) {
        if (a->count_include_pad && (g->pt || g->pb || g->pl || g->pr))
            return false;
        for (int i = 0; i < nk; i++)
            if (a->dilation[i] != 1)
                return false;
    }
    /* Ceil mode: pad the end so that floor division gives the same size. */
    int64_t eh = (g->OH - 1) * g->sh + (g->kh - 1) * g->dh + 1 - (g->H + g->pt + g->pb);
    int64_t ew = (g->OW - 1) * g->sw + (g->kw - 1) * g->dw + 1 - (g->W + g->pl + g->pr);
    if (eh > 0)
        g->pb += eh;
    if (ew > 0)
        g->pr += ew;
    /* XNNPACK reads a padded tap as the nearest border pixel, which is in
     * the window only when the taps are adjacent. */
    if ((g->dh > 1 || g->dw > 1) && (g->pt || g->pb || g->pl || g->pr))
        return false;
    if (out_size(g->H, g->pt, g->pb, g->kh, g->sh, g->dh) != g->OH ||
        out_size(g->W, g->pl, g->pr, g->kw, g->sw, g->dw) != g->OW)
        return false;
    int64_t v[] = {g->N,  g->C,  g->H,  g->W,  g->kh, g->kw, g->sh,
                   g->sw, g->dh, g->dw, g->pt, g->pl, g->pb, g->pr};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (v[i] < 0 || v[i] > (int64_t)UINT32_MAX)
            return false;
    return true;
}

static bool spatial_supports(const ntp_node *n, const ntp_shape *x, const ntp_shape *y, bool f16)
{
    pgeom p;
    /* No f16 average pooling in this snapshot. */
    return get_pgeom(n, x, y, &p) && !(f16 && n->op == NTP_OP_AVGPOOL);
}

static bool global_supports(const ntp_node *n, const ntp_shape *x, const ntp_shape *y, bool f16)
{
    if (x->ndim != 3 && x->ndim != 4)
        return false;
    int64_t h = x->ndim == 4 ? x->dim[2] : 1, w = x->dim[x->ndim - 1];
    return h <= (int64_t)UINT32_MAX && w <= (int64_t)UINT32_MAX;
}

static ntp_status spatial_pool(xnnb_build *b);
static ntp_status global_avg(xnnb_build *b);
static ntp_status global_max(xnnb_build *b);

/* Each pooling op's check and builder; the other ops have none. */
static const struct {
    bool (*supports)(const ntp_node *n, const ntp_shape *x, const ntp_shape *y, bool f16);
    ntp_status (*build)(xnnb_build *b);
} pools[NTP_OP_COUNT] = {
    [NTP_OP_MAXPOOL] = {spatial_supports, spatial_pool},
    [NTP_OP_AVGPOOL] = {spatial_supports, spatial_pool},
    [NTP_OP_GLOBAL_AVGPOOL] = {global_supports, global_avg},
    [NTP_OP_GLOBAL_MAXPOOL] = {global_supports, global_max},
};

bool ntp__xnn_pool_supports(const ntp_graph *g, const ntp_node *n, bool f16)
{
    const ntp_shape *x = &ntp__cin(g, n, 0)->shape, *y = &ntp__cout(g, n, 0)->shape;
    if (n->n_in != 1 || n->n_out != 1 || (unsigned)n->op >= NTP_OP_COUNT || !pools[n->op].supports)
        return false;
    return pools[n->op].supports(n, x, y, f16);
}

static ntp_status spatial_pool(xnnb_build *b)
{
    ntp_kargs *k = b->k;
    pgeom g;
    if (!get_pgeom(b->n, &k->in[0].shape, &k->out[0].shape, &g))
        return ntp__xnn_fail(b, NTP_STATUS_SHAPE_ERROR, "input and output do not fit the layer");
    bool is_max = b->n->op == NTP_OP_MAXPOOL;
    uint32_t fl = ntp__xnn_flags(b);
    xnn_operator_t op = NULL;
    enum xnn_status xs;
    if (is_max && b->f16)
        xs = xnn_create_max_pooling2d_nhwc_f16(
            (uint32_t)g.pt, (uint32_t)g.pr, (uint32_t)g.pb, (uint32_t)g.pl, (uint32_t)g.kh,
            (uint32_t)g.kw, (uint32_t)g.sh, (uint32_t)g.sw, (uint32_t)g.dh, (uint32_t)g.dw,
            (size_t)g.C, (size_t)g.C, (size_t)g.C, b->out_min, b->out_max, fl, &op);
    else if (is_max)
        xs = xnn_create_max_pooling2d_nhwc_f32(
            (uint32_t)g.pt, (uint32_t)g.pr, (uint32_t)g.pb, (uint32_t)g.pl, (uint32_t)g.kh,
            (uint32_t)g.kw, (uint32_t)g.sh, (uint32_t)g.sw, (uint32_t)g.dh, (uint32_t)g.dw,
            (size_t)g.C, (size_t)g.C, (size_t)g.C, b->out_min, b->out_max, fl, &op);
    else
        xs = xnn_create_average_pooling2d_nhwc_f32(
            (uint32_t)g.pt, (uint32_t)g.pr, (uint32_t)g.pb, (uint32_t)g.pl, (uint32_t)g.kh,
            (uint32_t)g.kw, (uint32_t)g.sh, (uint32_t)g.sw, (size_t)g.C, (size_t)g.C, (size_t)g.C,
            b->out_min, b->out_max, fl, &op);
    ntp_status st =
        ntp__xnn_check(b, xs, is_max ? "creating max pooling" : "creating average pooling");
    xnnb_call *c;
    if (st || (st = ntp__xnn_call(b, op, is_max ? XNNB_FN_MAXPOOL : XNNB_FN_AVGPOOL, &c)))
        return st;
    c->batch = (size_t)g.N;
    c->height = (size_t)g.H;
    c->width = (size_t)g.W;
    if ((st = ntp__xnn_input(b, 0, XNNB_NHWC, &c->x, NULL)) ||
        (st = ntp__xnn_output(b, 0, XNNB_NHWC, &c->y)))
        return st;
    snprintf(b->nd->impl, sizeof b->nd->impl, "xnnpack:%s_pooling2d_nhwc_%s",
             is_max ? "max" : "average", b->f16 ? "f16" : "f32");
    return NTP_STATUS_OK;
}

static ntp_status global_avg(xnnb_build *b)
{
    ntp_kargs *k = b->k;
    int64_t N, C, S;
    ntp__xnn_ncs(&k->in[0].shape, &N, &C, &S);
    uint32_t fl = ntp__xnn_flags(b);
    xnn_operator_t op = NULL;
    ntp_status st;
    xnnb_call *c;
    /* A plain input is read as NCW directly where XNNPACK has that kernel,
     * which saves converting the whole feature map to NHWC first. */
    if (!b->f16 && ntp__xnn_in_fmt(b, 0) == XNNB_PLAIN && ntp__xnn_spatial(&k->in[0].shape)) {
        enum xnn_status xs =
            xnn_create_global_average_pooling_ncw_f32((size_t)C, b->out_min, b->out_max, fl, &op);
        if (xs == xnn_status_success) {
            if ((st = ntp__xnn_call(b, op, XNNB_FN_GAP_NCW, &c)))
                return st;
            c->batch = (size_t)N;
            c->width = (size_t)S;
            if ((st = ntp__xnn_input(b, 0, XNNB_PLAIN, &c->x, NULL)) ||
                (st = ntp__xnn_output(b, 0, XNNB_PLAIN, &c->y)))
                return st;
            snprintf(b->nd->impl, sizeof b->nd->impl, "xnnpack:global_average_pooling_ncw_f32");
            return NTP_STATUS_OK;
        }
    }
    enum xnn_status xs =
        b->f16 ? xnn_create_global_average_pooling_nwc_f16((size_t)C, (size_t)C, (size_t)C,
                                                           b->out_min, b->out_max, fl, &op)
               : xnn_create_global_average_pooling_nwc_f32((size_t)C, (size_t)C, (size_t)C,
                                                           b->out_min, b->out_max, fl, &op);
    if ((st = ntp__xnn_check(b, xs, "creating global average pooling")) ||
        (st = ntp__xnn_call(b, op, XNNB_FN_GAP_NWC, &c)))
        return st;
    c->batch = (size_t)N;
    c->width = (size_t)S;
    if ((st = ntp__xnn_input(b, 0, XNNB_NHWC, &c->x, NULL)) ||
        (st = ntp__xnn_output(b, 0, XNNB_PLAIN, &c->y)))
        return st;
    snprintf(b->nd->impl, sizeof b->nd->impl, "xnnpack:global_average_pooling_nwc_%s",
             b->f16 ? "f16" : "f32");
    return NTP_STATUS_OK;
}

static ntp_status global_max(xnnb_build *b)
{
    ntp_kargs *k = b->k;
    const ntp_shape *x = &k->in[0].shape;
    int64_t N = x->dim[0], C = x->dim[1], H = x->ndim == 4 ? x->dim[2] : 1, W = x->dim[x->ndim - 1];
    uint32_t fl = ntp__xnn_flags(b);
    xnn_operator_t op = NULL;
    enum xnn_status xs;
    xnnb_fn fn = XNNB_FN_MAXPOOL;
    ntp_status st;
    if (H * W == 1) {
        /* A 1x1 image: the maximum is the value itself. */
        fn = XNNB_FN_COPY;
        xs = b->f16 ? xnn_create_copy_nc_x16((size_t)C, (size_t)C, (size_t)C, fl, &op)
                    : xnn_create_copy_nc_x32((size_t)C, (size_t)C, (size_t)C, fl, &op);
    } else if (b->f16) {
        xs = xnn_create_max_pooling2d_nhwc_f16(0, 0, 0, 0, (uint32_t)H, (uint32_t)W, 1, 1, 1, 1,
                                               (size_t)C, (size_t)C, (size_t)C, b->out_min,
                                               b->out_max, fl, &op);
    } else {
        xs = xnn_create_max_pooling2d_nhwc_f32(0, 0, 0, 0, (uint32_t)H, (uint32_t)W, 1, 1, 1, 1,
                                               (size_t)C, (size_t)C, (size_t)C, b->out_min,
                                               b->out_max, fl, &op);
    }
    xnnb_call *c;
    if ((st = ntp__xnn_check(b, xs, "creating the global max pooling")) ||
        (st = ntp__xnn_call(b, op, fn, &c)))
        return st;
    c->batch = (size_t)N;
    c->height = (size_t)H;
    c->width = (size_t)W;
    if ((st = ntp__xnn_input(b, 0, XNNB_NHWC, &c->x, NULL)) ||
        (st = ntp__xnn_output(b, 0, XNNB_PLAIN, &c->y)))
        return st;
    snprintf(b->nd->impl, sizeof b->nd->impl, "xnnpack:%s_%s",
             fn == XNNB_FN_COPY ? "copy_nc" : "max_pooling2d_nhwc(whole image)",
             b->f16 ? "f16" : "f32");
    return NTP_STATUS_OK;
}

ntp_status ntp__xnn_pool_build(xnnb_build *b)
{
    if ((unsigned)b->n->op >= NTP_OP_COUNT || !pools[b->n->op].build)
        return ntp__xnn_fail(b, NTP_STATUS_INTERNAL, "not a pooling op");
    return pools[b->n->op].build(b);
}
