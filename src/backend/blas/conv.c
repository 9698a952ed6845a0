/* Convolution and transposed convolution on BLAS: im2col + SGEMM and
 * SGEMM + col2im, 1-d to 3-d, grouped and dilated (blas-impl.h).
 *
 * 1-d and 2-d layers run as 3-d ones with leading spatial dims of size 1.
 * Staged layers (the columns of the whole batch fit BLASB_STAGED_MAX) lower
 * every (image, group) first, as their own sub-step, then multiply; the
 * others interleave lowering and products per (image, group) in one step
 * with a single column buffer. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "blas-impl.h"

typedef struct geom {
    int64_t N, C, F, G, Cg, Fg;
    int64_t in[3], out[3], k[3], s[3], d[3], p[3];
    int64_t in_sz, out_sz, k_sz;
} geom;

static bool get_geom(const ntp_node *n, const ntp_shape *x, const ntp_shape *y, geom *g)
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
        int j = i - (3 - nk);
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

static bool pointwise(const geom *g)
{
    for (int i = 0; i < 3; i++)
        if (g->k[i] != 1 || g->s[i] != 1 || g->p[i] != 0 || g->in[i] != g->out[i])
            return false;
    return true;
}

/* Rows x columns of one (image, group) column matrix. */
static int64_t col_floats(const ntp_node *n, const geom *g)
{
    return n->op == NTP_OP_CONV ? g->Cg * g->k_sz * g->out_sz : g->Fg * g->k_sz * g->in_sz;
}

bool ntp__blas_conv_supports(const ntp_graph *gr, const ntp_node *n)
{
    geom g;
    if (n->n_in != 1 || n->n_w < 1 ||
        !get_geom(n, &ntp__cin(gr, n, 0)->shape, &ntp__cout(gr, n, 0)->shape, &g))
        return false;
    /* GEMM dimensions and leading dimensions go to CBLAS as int. */
    return ntp__blas_fits(g.Cg * g.k_sz) && ntp__blas_fits(g.Fg * g.k_sz) &&
           ntp__blas_fits(g.out_sz) && ntp__blas_fits(g.in_sz) && ntp__blas_fits(g.F);
}

/* First o in [0, n_out) with o*s + off >= 0, and one past the last with
 * o*s + off < n_in. */
static void valid(int64_t n_out, int64_t s, int64_t off, int64_t n_in, int64_t *lo, int64_t *hi)
{
    int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t top = n_in - 1 - off;
    int64_t h = top < 0 ? 0 : top / s + 1;
    *lo = l < n_out ? l : n_out;
    *hi = h < n_out ? h : n_out;
    if (*hi < *lo)
        *hi = *lo;
}

/* col[(c, kd, kh, kw), (od, oh, ow)] = x[c, od*s - p + kd*d, ...], 0 outside. */
static void im2col(const geom *g, const float *x, float *col)
{
    for (int64_t c = 0; c < g->Cg; c++)
        for (int64_t kd = 0; kd < g->k[0]; kd++)
            for (int64_t kh = 0; kh < g->k[1]; kh++)
                for (int64_t kw = 0; kw < g->k[2]; kw++) {
                    float *row = col + (((c * g->k[0] + kd) * g->k[1] + kh) * g->k[2] + kw) * g->out_sz;
                    int64_t off = kw * g->d[2] - g->p[2], lo, hi;
                    valid(g->out[2], g->s[2], off, g->in[2], &lo, &hi);
                    for (int64_t od = 0; od < g->out[0]; od++) {
                        int64_t id = od * g->s[0] - g->p[0] + kd * g->d[0];
                        for (int64_t oh = 0; oh < g->out[1]; oh++) {
                            int64_t ih = oh * g->s[1] - g->p[1] + kh * g->d[1];
                            float *dst = row + (od * g->out[1] + oh) * g->out[2];
                            if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1]) {
                                memset(dst, 0, (size_t)g->out[2] * sizeof *dst);
                                continue;
                            }
                            const float *src = x + ((c * g->in[0] + id) * g->in[1] + ih) * g->in[2];
                            memset(dst, 0, (size_t)lo * sizeof *dst);
                            if (g->s[2] == 1)
                                memcpy(dst + lo, src + lo + off, (size_t)(hi - lo) * sizeof *dst);
                            else
                                for (int64_t ow = lo; ow < hi; ow++)
                                    dst[ow] = src[ow * g->s[2] + off];
                            memset(dst + hi, 0, (size_t)(g->out[2] - hi) * sizeof *dst);
                        }
                    }
                }
}

/* y[f, id*s - p + kd*d, ...] += col[(f, kd, kh, kw), (id, ih, iw)]. */
static void col2im(const geom *g, const float *col, float *y)
{
    for (int64_t f = 0; f < g->Fg; f++)
        for (int64_t kd = 0; kd < g->k[0]; kd++)
            for (int64_t kh = 0; kh < g->k[1]; kh++)
                for (int64_t kw = 0; kw < g->k[2]; kw++) {
                    const float *row = col + (((f * g->k[0] + kd) * g->k[1] + kh) * g->k[2] + kw) * g->in_sz;
                    int64_t off = kw * g->d[2] - g->p[2], lo, hi;
                    valid(g->in[2], g->s[2], off, g->out[2], &lo, &hi);
                    for (int64_t id = 0; id < g->in[0]; id++) {
                        int64_t od = id * g->s[0] - g->p[0] + kd * g->d[0];
                        if (od < 0 || od >= g->out[0])
                            continue;
                        for (int64_t ih = 0; ih < g->in[1]; ih++) {
                            int64_t oh = ih * g->s[1] - g->p[1] + kh * g->d[1];
                            if (oh < 0 || oh >= g->out[1])
                                continue;
                            const float *src = row + (id * g->in[1] + ih) * g->in[2];
                            float *dst = y + ((f * g->out[0] + od) * g->out[1] + oh) * g->out[2];
                            for (int64_t iw = lo; iw < hi; iw++)
                                dst[iw * g->s[2] + off] += src[iw];
                        }
                    }
                }
}

ntp_status ntp__blas_conv_prepare(ntp_ctx *ctx, const ntp_kargs *k, blasb_node *nd)
{
    geom g;
    const ntp_node *n = k->node;
    if (k->n_in != 1 || k->n_w < 1 || !get_geom(n, &k->in[0].shape, &k->out[0].shape, &g))
        return ntp__blas_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "input and output do not fit the layer");
    int64_t wn = n->op == NTP_OP_CONV ? g.F * g.Cg * g.k_sz : g.C * g.Fg * g.k_sz;
    if (ntp_shape_numel(&k->w[0].shape) != wn || (k->n_w > 1 && ntp_shape_numel(&k->w[1].shape) != g.F))
        return ntp__blas_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "weights do not fit the layer");
    bool conv = n->op == NTP_OP_CONV;
    nd->direct = conv && pointwise(&g);
    size_t one = (size_t)col_floats(n, &g) * sizeof(float);
    size_t all = one * (size_t)(g.N * g.G);
    nd->staged = !nd->direct && g.N * g.G > 0 && all / (size_t)(g.N * g.G) == one &&
                 all <= BLASB_STAGED_MAX;
    nd->ws = nd->direct ? 0 : nd->staged ? all : one;
    nd->n_steps = nd->staged ? 2 : 1;
    nd->main_step = nd->staged && conv ? 1 : 0;
    nd->step_suffix = conv ? ":im2col" : ":col2im";
    nd->step_type = conv ? "im2col" : "col2im";
    /* im2col reads the input and writes the columns; col2im reads the
     * columns and writes the output. */
    nd->step_bytes = (int64_t)all + 4 * ntp_shape_numel(conv ? &k->in[0].shape : &k->out[0].shape);
    snprintf(nd->impl, sizeof nd->impl, "openblas:%s", nd->direct ? "sgemm (1x1)"
                                                       : conv ? "im2col+sgemm" : "sgemm+col2im");
    return NTP_STATUS_OK;
}

static void add_bias(const ntp_kargs *k, const geom *g, float *y)
{
    if (k->n_w < 2)
        return;
    const float *b = k->w[1].data;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t f = 0; f < g->F; f++) {
            float *p = y + (n * g->F + f) * g->out_sz;
            for (int64_t i = 0; i < g->out_sz; i++)
                p[i] += b[f];
        }
}

static void conv_gemm(const ntp_kargs *k, const geom *g, int64_t n, int64_t grp, const float *col)
{
    int64_t K = g->Cg * g->k_sz;
    const float *W = k->w[0].data;
    float *y = k->out[0].data;
    ntp__blas_gemm(false, false, g->Fg, g->out_sz, K, 1.0f, W + grp * g->Fg * K, K, col, g->out_sz,
                   0.0f, y + (n * g->F + grp * g->Fg) * g->out_sz, g->out_sz);
}

static void deconv_gemm(const ntp_kargs *k, const geom *g, int64_t n, int64_t grp, float *col)
{
    int64_t M = g->Fg * g->k_sz;
    const float *x = k->in[0].data, *W = k->w[0].data;
    ntp__blas_gemm(true, false, M, g->in_sz, g->Cg, 1.0f, W + grp * g->Cg * M, M,
                   x + (n * g->C + grp * g->Cg) * g->in_sz, g->in_sz, 0.0f, col, g->in_sz);
}

ntp_status ntp__blas_conv_run(ntp_ctx *ctx, const ntp_kargs *k, const blasb_node *nd, int step)
{
    geom g;
    if (!get_geom(k->node, &k->in[0].shape, &k->out[0].shape, &g))
        return ntp__blas_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "input and output do not fit the layer");
    const float *x = k->in[0].data;
    float *y = k->out[0].data, *ws = k->workspace;
    int64_t col = col_floats(k->node, &g);
    bool conv = k->node->op == NTP_OP_CONV;
    /* Which passes this call does: lowering (im2col / col2im) and GEMMs. */
    bool lower = !nd->staged || step == (conv ? 0 : 1);
    bool gemm = !nd->staged || step == (conv ? 1 : 0);
    if (conv) {
        for (int64_t n = 0; n < g.N; n++)
            for (int64_t grp = 0; grp < g.G; grp++) {
                const float *xg = x + (n * g.C + grp * g.Cg) * g.in_sz;
                float *c = nd->staged ? ws + (n * g.G + grp) * col : ws;
                if (nd->direct) {
                    conv_gemm(k, &g, n, grp, xg);
                    continue;
                }
                if (lower)
                    im2col(&g, xg, c);
                if (gemm)
                    conv_gemm(k, &g, n, grp, c);
            }
        if (gemm) {
            add_bias(k, &g, y);
            ntp__blas_post_ops(k, nd);
        }
        return NTP_STATUS_OK;
    }
    if (lower)
        memset(y, 0, (size_t)(g.N * g.F * g.out_sz) * sizeof *y);
    for (int64_t n = 0; n < g.N; n++)
        for (int64_t grp = 0; grp < g.G; grp++) {
            float *c = nd->staged ? ws + (n * g.G + grp) * col : ws;
            if (gemm)
                deconv_gemm(k, &g, n, grp, c);
            if (lower)
                col2im(&g, c, y + (n * g.F + grp * g.Fg) * g.out_sz);
        }
    if (lower) {
        add_bias(k, &g, y);
        ntp__blas_post_ops(k, nd);
    }
    return NTP_STATUS_OK;
}
