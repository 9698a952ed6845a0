/* Convolution and transposed convolution, 1-d to 3-d, grouped and dilated.
 *
 * conv:   im2col into the workspace, then one GEMM per (image, group):
 *         y_g [F/g, out] = W_g [F/g, C/g·Πk] · col [C/g·Πk, out] + bias,
 *         the bias as C's starting value (beta 1), not a pass of its own.
 *         A 1x1 convolution with stride 1 and no padding reads its input
 *         directly, without im2col.
 * deconv: one GEMM per (image, group) into the workspace, then col2im:
 *         col [F/g·Πk, in] = W_gᵀ · x_g with W_g [C/g, F/g·Πk], and every
 *         column is added into the output positions it reaches, which
 *         start at the bias.
 *
 * 1-d and 2-d layers run as 3-d ones with leading spatial dims of size 1,
 * so there is one code path to get right. The rows of the im2col matrix are
 * filled one output row (contiguous ow) at a time. */
#include <string.h>

#include "ref-impl.h"

typedef ntp_ref_conv_geom geom;

bool ntp__ref_conv_geom(const ntp_node *n, const ntp_shape *x, const ntp_shape *y, geom *g)
{
    const ntp_attrs *a = &n->a;
    int nk = x->ndim - 2;
    if (nk < 1 || nk > 3 || y->ndim != x->ndim || a->nk != nk || x->dim[0] != y->dim[0] ||
        a->groups <= 0)
        return false;
    g->N = x->dim[0];
    g->C = x->dim[1];
    g->F = y->dim[1];
    g->G = a->groups;
    if (g->C % g->G || g->F % g->G)
        return false;
    g->Cg = g->C / g->G;
    g->Fg = g->F / g->G;
    g->in_sz = g->out_sz = g->k_sz = 1;
    for (int i = 0; i < 3; i++) {
        int j = i - (3 - nk); /* the attribute and shape index of geometry dim i */
        g->in[i] = j >= 0 ? x->dim[2 + j] : 1;
        g->out[i] = j >= 0 ? y->dim[2 + j] : 1;
        g->k[i] = j >= 0 ? a->kernel[j] : 1;
        g->s[i] = j >= 0 ? a->stride[j] : 1;
        g->d[i] = j >= 0 ? a->dilation[j] : 1;
        g->p[i] = j >= 0 ? a->pad[j] : 0;
        if (g->k[i] <= 0 || g->s[i] <= 0 || g->d[i] <= 0 || g->p[i] < 0)
            return false;
        g->in_sz *= g->in[i];
        g->out_sz *= g->out[i];
        g->k_sz *= g->k[i];
    }
    return true;
}

static bool get_geom(const ntp_kargs *k, geom *g)
{
    return ntp__ref_conv_geom(k->node, &k->in[0].shape, &k->out[0].shape, g);
}

bool ntp__ref_conv_pointwise(const geom *g)
{
    for (int i = 0; i < 3; i++)
        if (g->k[i] != 1 || g->s[i] != 1 || g->p[i] != 0 || g->in[i] != g->out[i])
            return false;
    return true;
}

size_t ntp__ref_conv_workspace(const ntp_kargs *k)
{
    geom g;
    if (!get_geom(k, &g))
        return 0; /* the kernel reports the inconsistency */
    if (k->node->op == NTP_OP_CONV)
        return ntp__ref_conv_pointwise(&g) ? 0 : ntp__ref_floats(g.Cg * g.k_sz, g.out_sz);
    return ntp__ref_floats(g.Fg * g.k_sz, g.in_sz);
}

int64_t ntp__ref_conv_col_floats(ntp_op op, const geom *g)
{
    return op == NTP_OP_CONV ? g->Cg * g->k_sz * g->out_sz : g->Fg * g->k_sz * g->in_sz;
}

/* Range [*lo, *hi) of o in [0, n_out) with 0 <= o*s + off < n_in. */
static void valid_range(int64_t n_out, int64_t s, int64_t off, int64_t n_in, int64_t *lo,
                        int64_t *hi)
{
    /* o*s + off >= 0  <=>  o >= ceil(-off / s). */
    int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
    /* o*s + off <= n_in - 1  <=>  o <= floor((n_in - 1 - off) / s). */
    int64_t top = n_in - 1 - off;
    int64_t h = top < 0 ? 0 : top / s + 1;
    *lo = l < n_out ? l : n_out;
    *hi = h < n_out ? h : n_out;
    if (*hi < *lo)
        *hi = *lo;
}

/* dst[i] = src[i * s] for i < n. gcc's -O2 cost model vectorises no loop
 * of open count (it would need a scalar remainder), so the stems' stride
 * (2) and the fill below go eight or sixteen at a time in blocks of fixed
 * count. In the 3->24 3x3 stride-2 stem at 224 (perf, 2026-12-04) the
 * scalar stride-2 loop, a stack reload an element, took two thirds of the
 * time outside the GEMM, and the bias's own pass then (scalar too) 15% of
 * the layer. */
static void gather(float *restrict dst, const float *restrict src, int64_t n, int64_t s)
{
    int64_t i = 0;
    if (s == 1) {
        memcpy(dst, src, (size_t)n * sizeof *dst);
        return;
    }
    /* Spelt out: a loop of eight is not unrolled before the vectoriser
     * looks, and stays scalar; eight statements it stores as two vectors. */
    for (; s == 2 && i + 8 <= n; i += 8) {
        const float *a = src + 2 * i;
        float *d = dst + i;
        d[0] = a[0];
        d[1] = a[2];
        d[2] = a[4];
        d[3] = a[6];
        d[4] = a[8];
        d[5] = a[10];
        d[6] = a[12];
        d[7] = a[14];
    }
    for (; i < n; i++)
        dst[i] = src[i * s];
}

/* p[i] = v for i < n, sixteen at a time (gather). */
static void fill(float *restrict p, float v, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int u = 0; u < 16; u++)
            p[i + u] = v;
    for (; i < n; i++)
        p[i] = v;
}

/* col[(c, kd, kh, kw), (od, oh, ow)] = x[c, od*s - p + kd*d, ...] or 0. */
static void im2col(const geom *g, const float *x, float *col)
{
    for (int64_t c = 0; c < g->Cg; c++) {
        const float *xc = x + c * g->in_sz;
        for (int64_t kd = 0; kd < g->k[0]; kd++)
            for (int64_t kh = 0; kh < g->k[1]; kh++)
                for (int64_t kw = 0; kw < g->k[2]; kw++) {
                    float *row =
                        col + (((c * g->k[0] + kd) * g->k[1] + kh) * g->k[2] + kw) * g->out_sz;
                    int64_t w_off = kw * g->d[2] - g->p[2], lo, hi;
                    valid_range(g->out[2], g->s[2], w_off, g->in[2], &lo, &hi);
                    for (int64_t od = 0; od < g->out[0]; od++) {
                        int64_t id = od * g->s[0] - g->p[0] + kd * g->d[0];
                        for (int64_t oh = 0; oh < g->out[1]; oh++) {
                            int64_t ih = oh * g->s[1] - g->p[1] + kh * g->d[1];
                            float *dst = row + (od * g->out[1] + oh) * g->out[2];
                            if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1]) {
                                memset(dst, 0, (size_t)g->out[2] * sizeof *dst);
                                continue;
                            }
                            const float *src = xc + (id * g->in[1] + ih) * g->in[2];
                            for (int64_t ow = 0; ow < lo; ow++)
                                dst[ow] = 0.0f;
                            if (hi > lo)
                                gather(dst + lo, src + lo * g->s[2] + w_off, hi - lo, g->s[2]);
                            for (int64_t ow = hi; ow < g->out[2]; ow++)
                                dst[ow] = 0.0f;
                        }
                    }
                }
    }
}

/* y[f, id*s - p + kd*d, ...] += col[(f, kd, kh, kw), (id, ih, iw)]. */
static void col2im(const geom *g, const float *col, float *y)
{
    for (int64_t f = 0; f < g->Fg; f++) {
        float *yf = y + f * g->out_sz;
        for (int64_t kd = 0; kd < g->k[0]; kd++)
            for (int64_t kh = 0; kh < g->k[1]; kh++)
                for (int64_t kw = 0; kw < g->k[2]; kw++) {
                    const float *row =
                        col + (((f * g->k[0] + kd) * g->k[1] + kh) * g->k[2] + kw) * g->in_sz;
                    int64_t w_off = kw * g->d[2] - g->p[2], lo, hi;
                    /* iw*s + w_off must land inside the output width. */
                    valid_range(g->in[2], g->s[2], w_off, g->out[2], &lo, &hi);
                    for (int64_t id = 0; id < g->in[0]; id++) {
                        int64_t od = id * g->s[0] - g->p[0] + kd * g->d[0];
                        if (od < 0 || od >= g->out[0])
                            continue;
                        for (int64_t ih = 0; ih < g->in[1]; ih++) {
                            int64_t oh = ih * g->s[1] - g->p[1] + kh * g->d[1];
                            if (oh < 0 || oh >= g->out[1])
                                continue;
                            const float *src = row + (id * g->in[1] + ih) * g->in[2];
                            float *dst = yf + (od * g->out[1] + oh) * g->out[2];
                            for (int64_t iw = lo; iw < hi; iw++)
                                dst[iw * g->s[2] + w_off] += src[iw];
                        }
                    }
                }
    }
}

static ntp_status check(ntp_ctx *ctx, const ntp_kargs *k, geom *g)
{
    ntp_status st = ntp__ref_expect(ctx, k, 1, 1, 2, 1);
    if (st)
        return st;
    if (!get_geom(k, g)) {
        char a[128], b[128];
        return ntp__ref_error(
            ctx, k, NTP_STATUS_SHAPE_ERROR,
            "input %s and output %s do not fit the attributes (nk %d, groups %lld)",
            ntp_shape_str(&k->in[0].shape, a, sizeof a),
            ntp_shape_str(&k->out[0].shape, b, sizeof b), k->node->a.nk,
            (long long)k->node->a.groups);
    }
    /* conv W [F, C/g, k...]; deconv W [C, F/g, k...]: the same count. */
    int64_t wn = k->node->op == NTP_OP_CONV ? g->F * g->Cg * g->k_sz : g->C * g->Fg * g->k_sz;
    if ((st = ntp__ref_expect_weight(ctx, k, 0, wn)))
        return st;
    if (k->n_w == 2 && (st = ntp__ref_expect_weight(ctx, k, 1, g->F)))
        return st;
    return NTP_STATUS_OK;
}

/* A bias as the output's starting value: rows rows of n floats, row f set
 * to b[f]. conv's GEMM takes it as C (beta 1; it clears C for beta 0
 * anyway), deconv's col2im adds into it: the bias costs no pass of its own
 * over the output. */
static void preset_bias(float *y, const float *b, int64_t rows, int64_t n)
{
    for (int64_t f = 0; f < rows; f++)
        fill(y + f * n, b[f], n);
}

/* Column matrix of (image n, group grp): its own in a staged workspace,
 * else the one shared buffer. */
static float *columns(const ntp_kargs *k, const geom *g, bool staged, int64_t n, int64_t grp)
{
    float *ws = k->workspace;
    return staged ? ws + (n * g->G + grp) * ntp__ref_conv_col_floats(k->node->op, g) : ws;
}

static ntp_status conv(ntp_ctx *ctx, const ntp_kargs *k, ntp_gemm_fn *gemm, bool staged, int passes)
{
    geom g;
    ntp_status st = check(ctx, k, &g);
    if (st)
        return st;
    const float *x = k->in[0].data, *W = k->w[0].data;
    const float *bias = k->n_w == 2 ? k->w[1].data : NULL;
    float *y = k->out[0].data;
    bool direct = ntp__ref_conv_pointwise(&g);
    int64_t K = g.Cg * g.k_sz;
    for (int64_t n = 0; n < g.N; n++)
        for (int64_t grp = 0; grp < g.G; grp++) {
            const float *xg = x + (n * g.C + grp * g.Cg) * g.in_sz;
            float *col = columns(k, &g, staged, n, grp);
            const float *b = direct ? xg : col;
            float *yg = y + (n * g.F + grp * g.Fg) * g.out_sz;
            if (!direct && (passes & NTP_REF_CONV_LOWER))
                im2col(&g, xg, col);
            if (!(passes & NTP_REF_CONV_GEMM))
                continue;
            if (bias)
                preset_bias(yg, bias + grp * g.Fg, g.Fg, g.out_sz);
            gemm(false, false, g.Fg, g.out_sz, K, 1.0f, W + grp * g.Fg * K, K, b, g.out_sz,
                 bias ? 1.0f : 0.0f, yg, g.out_sz);
        }
    return NTP_STATUS_OK;
}

static ntp_status deconv(ntp_ctx *ctx, const ntp_kargs *k, ntp_gemm_fn *gemm, bool staged,
                         int passes)
{
    geom g;
    ntp_status st = check(ctx, k, &g);
    if (st)
        return st;
    const float *x = k->in[0].data, *W = k->w[0].data;
    float *y = k->out[0].data;
    int64_t Mk = g.Fg * g.k_sz;
    /* col2im adds into the output: it starts at the bias (or zero), so the
     * bias costs no pass of its own. */
    if (passes & NTP_REF_CONV_LOWER) {
        if (k->n_w == 2)
            for (int64_t n = 0; n < g.N; n++)
                preset_bias(y + n * g.F * g.out_sz, k->w[1].data, g.F, g.out_sz);
        else
            memset(y, 0, (size_t)(g.N * g.F * g.out_sz) * sizeof *y);
    }
    for (int64_t n = 0; n < g.N; n++)
        for (int64_t grp = 0; grp < g.G; grp++) {
            const float *xg = x + (n * g.C + grp * g.Cg) * g.in_sz;
            float *col = columns(k, &g, staged, n, grp);
            if (passes & NTP_REF_CONV_GEMM)
                gemm(true, false, Mk, g.in_sz, g.Cg, 1.0f, W + grp * g.Cg * Mk, Mk, xg, g.in_sz,
                     0.0f, col, g.in_sz);
            if (passes & NTP_REF_CONV_LOWER)
                col2im(&g, col, y + (n * g.F + grp * g.Fg) * g.out_sz);
        }
    return NTP_STATUS_OK;
}

ntp_status ntp__ref_conv_run(ntp_ctx *ctx, const ntp_kargs *k, ntp_gemm_fn *gemm, bool staged,
                             int passes)
{
    return k->node->op == NTP_OP_CONV ? conv(ctx, k, gemm, staged, passes)
                                      : deconv(ctx, k, gemm, staged, passes);
}

ntp_status ntp__ref_conv(ntp_ctx *ctx, const ntp_kargs *k)
{
    return ntp__ref_conv_run(ctx, k, ntp__ref_gemm, false, NTP_REF_CONV_ALL);
}
