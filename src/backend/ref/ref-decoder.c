/* Reference kernels of the decoder-transformer ops (docs/decoders.md).
 *
 * rmsnorm   y = x / sqrt(mean(x²) + eps) · scale, over the last dim.
 * rope      rotary position embedding in the "rotate half" form of GPT-NeoX
 *           and HuggingFace's Llama: in each head of hd values, element i
 *           (i < hd/2) pairs with i + hd/2 and both turn by the angle
 *           pos · theta^(-2i/hd), pos read from the positions input.
 * kv_attention  causal attention of S new queries, heads of them sharing
 *           each of kv_heads key/value heads (query head h reads kv head
 *           h / (heads / kv_heads)); with a cache (k->kv) the new keys and
 *           values are appended at positions len .. len+S-1 and query i
 *           sees positions 0 .. len+i; without one, only its own S tokens.
 *           Scores are scaled by 1/√hd. An optional 4th input [N,S]
 *           (i32/i64) masks padding: a 0 is a key no query sees (kept in
 *           the cache's flags for later passes); a query that sees no key
 *           gets 0. The cache is f32, bf16, f16 or i8
 *           (one scale per position and kv head, max|row| / 127), widened
 *           to f32 before the products.
 * lm_head   y = x · Wᵀ, W [vocab, D] (its own, or the token embedding's).
 * argmax    the index of the first largest value of the last dim, as i32.
 *
 * Angles, norms and softmax sums are computed in double. */
#include <math.h>
#include <string.h>

#include "core/numeric-impl.h"
#include "ref-impl.h"

static ntp_status bad_shape(ntp_ctx *ctx, const ntp_kargs *k, const char *what)
{
    char a[128];
    return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "input %s does not fit: %s",
                          ntp_shape_str(&k->in[0].shape, a, sizeof a), what);
}

static ntp_status rmsnorm(ntp_ctx *ctx, const ntp_kargs *k)
{
    ntp_status st = ntp__ref_expect(ctx, k, 1, 1, 1, 1);
    if (st)
        return st;
    const ntp_shape *s = &k->in[0].shape;
    int64_t D = s->dim[s->ndim - 1], rows = ntp_shape_numel(s) / (D > 0 ? D : 1);
    if ((st = ntp__ref_expect_weight(ctx, k, 0, D)))
        return st;
    if (ntp_shape_numel(&k->out[0].shape) != rows * D)
        return bad_shape(ctx, k, "output size differs");
    const float *x = k->in[0].data, *w = k->w[0].data;
    float *y = k->out[0].data;
    for (int64_t r = 0; r < rows; r++) {
        double ss = 0;
        for (int64_t j = 0; j < D; j++)
            ss += (double)x[r * D + j] * x[r * D + j];
        double inv = 1.0 / sqrt(ss / (double)D + k->node->a.epsilon);
        for (int64_t j = 0; j < D; j++)
            y[r * D + j] = (float)((double)x[r * D + j] * inv * w[j]);
    }
    return NTP_STATUS_OK;
}

static ntp_status rope(ntp_ctx *ctx, const ntp_kargs *k)
{
    if (k->n_in != 2 || k->n_out != 1 || k->in[0].dtype != NTP_DTYPE_F32 ||
        k->out[0].dtype != NTP_DTYPE_F32 ||
        (k->in[1].dtype != NTP_DTYPE_I32 && k->in[1].dtype != NTP_DTYPE_I64))
        return ntp__ref_error(ctx, k, NTP_STATUS_UNSUPPORTED,
                              "rope takes f32 data and i32 or i64 positions");
    const ntp_shape *s = &k->in[0].shape, *ps = &k->in[1].shape;
    int64_t hd = k->node->a.head_dim;
    if (s->ndim != 3 || ps->ndim != 2 || ps->dim[0] != s->dim[0] || ps->dim[1] != s->dim[1] ||
        hd < 2 || hd % 2 || s->dim[2] % hd || !ntp_shape_equal(s, &k->out[0].shape))
        return bad_shape(ctx, k, "[N,S,heads*head_dim] with [N,S] positions");
    int64_t rows = s->dim[0] * s->dim[1], C = s->dim[2], half = hd / 2;
    const float *x = k->in[0].data;
    float *y = k->out[0].data;
    for (int64_t r = 0; r < rows; r++) {
        double pos = k->in[1].dtype == NTP_DTYPE_I32 ? (double)((const int32_t *)k->in[1].data)[r]
                                                     : (double)((const int64_t *)k->in[1].data)[r];
        for (int64_t i = 0; i < half; i++) {
            double ang = pos * pow(k->node->a.theta, -2.0 * (double)i / (double)hd);
            double c = cos(ang), sn = sin(ang);
            for (int64_t h0 = 0; h0 < C; h0 += hd) {
                double x1 = x[r * C + h0 + i], x2 = x[r * C + h0 + i + half];
                y[r * C + h0 + i] = (float)(x1 * c - x2 * sn);
                y[r * C + h0 + i + half] = (float)(x2 * c + x1 * sn);
            }
        }
    }
    return NTP_STATUS_OK;
}

typedef struct kvgeom {
    int64_t N, S, H, KVH, hd, L; /* L: keys attended over at most */
} kvgeom;

static bool get_kvgeom(const ntp_kargs *k, kvgeom *g)
{
    if ((k->n_in != 3 && k->n_in != 4) || k->n_out != 1)
        return false;
    const ntp_shape *q = &k->in[0].shape, *ks = &k->in[1].shape, *vs = &k->in[2].shape;
    if (q->ndim != 3 || ks->ndim != 3 || vs->ndim != 3 || !ntp_shape_equal(ks, vs) ||
        !ntp_shape_equal(q, &k->out[0].shape))
        return false;
    g->N = q->dim[0];
    g->S = q->dim[1];
    g->H = k->node->a.heads;
    g->KVH = k->node->a.kv_heads > 0 ? k->node->a.kv_heads : g->H;
    if (g->H <= 0 || q->dim[2] % g->H || g->H % g->KVH)
        return false;
    g->hd = q->dim[2] / g->H;
    if (ks->dim[0] != g->N || ks->dim[1] != g->S || ks->dim[2] != g->KVH * g->hd)
        return false;
    if (k->n_in == 4 && (k->in[3].shape.ndim != 2 || k->in[3].shape.dim[0] != g->N ||
                         k->in[3].shape.dim[1] != g->S))
        return false;
    g->L = g->S;
    if (k->kv) {
        const ntp_kv_state *c = k->kv;
        if (c->batch != g->N || c->kv_heads != g->KVH || c->head_dim != g->hd || c->capacity < 1)
            return false;
        g->L = c->capacity;
    }
    return true;
}

size_t ntp__ref_decoder_workspace(const ntp_kargs *k)
{
    kvgeom g;
    if (k->node->op != NTP_OP_KV_ATTENTION || !get_kvgeom(k, &g))
        return 0;
    size_t w = ntp__ref_floats(g.S, g.L); /* scores */
    if (k->kv && k->kv->dtype != NTP_DTYPE_F32)
        w = ntp__ref_size_add(w, ntp__ref_floats(2 * g.L, g.hd)); /* widened K, V */
    return w;
}

/* Store n f32 values (one row of a head) as cache type t; i8 rows get
 * their own scale in *scale. */
static void to_cache(void *dst, ntp_dtype t, const float *src, int64_t n, float *scale)
{
    if (t == NTP_DTYPE_F32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    }
    if (t == NTP_DTYPE_I8) {
        *scale = ntp__i8_scale(src, n);
        ntp__quantize_i8_n(dst, src, n, *scale);
        return;
    }
    uint16_t *d = dst;
    for (int64_t i = 0; i < n; i++)
        d[i] = t == NTP_DTYPE_BF16 ? ntp__f32_to_bf16(src[i]) : ntp__f32_to_f16(src[i]);
}

/* Widen `rows` rows of hd cached values to f32; i8 rows by their scales. */
static void from_cache(float *dst, ntp_dtype t, const void *src, int64_t rows, int64_t hd,
                       const float *scale)
{
    int64_t n = rows * hd;
    if (t == NTP_DTYPE_I8) {
        const int8_t *s = src;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t d = 0; d < hd; d++)
                dst[r * hd + d] = ntp__dequantize_i8(s[r * hd + d], scale[r]);
        return;
    }
    const uint16_t *s = src;
    for (int64_t i = 0; i < n; i++)
        dst[i] = t == NTP_DTYPE_BF16 ? ntp__bf16_to_f32(s[i]) : ntp__f16_to_f32(s[i]);
}

/* Padding mask value t of the pass (i32 or i64): nonzero keeps the token. */
static bool mask_keeps(const ntp_buf *m, int64_t t)
{
    return m->dtype == NTP_DTYPE_I32 ? ((const int32_t *)m->data)[t] != 0
                                     : ((const int64_t *)m->data)[t] != 0;
}

static ntp_status kv_attention_on(ntp_ctx *ctx, const ntp_kargs *k, ntp_gemm_fn *gemm)
{
    /* The padding mask, when there is one, is checked here; the rest as
     * ever (f32). */
    ntp_kargs k3 = *k;
    const ntp_buf *mask = NULL;
    if (k->n_in == 4) {
        mask = &k->in[3];
        if ((mask->dtype != NTP_DTYPE_I32 && mask->dtype != NTP_DTYPE_I64) || !mask->data)
            return ntp__ref_error(ctx, k, NTP_STATUS_UNSUPPORTED,
                                  "the padding mask is %s; the reference kernel reads i32 or i64",
                                  ntp_dtype_name(mask->dtype));
        if (k->kv && !k->kv->keep)
            return ntp__ref_error(ctx, k, NTP_STATUS_INVALID_ARGUMENT,
                                  "a padding mask with a key/value cache that keeps none");
        k3.n_in = 3;
    }
    ntp_status st = ntp__ref_expect(ctx, &k3, 3, 0, 0, 1);
    if (st)
        return st;
    kvgeom g;
    if (!get_kvgeom(k, &g))
        return bad_shape(ctx, k,
                         "query [N,S,heads*hd], key and value [N,S,kv_heads*hd], the mask [N,S] "
                         "and the cache's [N,kv_heads,capacity,hd] must agree");
    ntp_kv_state *c = k->kv;
    int64_t past = c ? c->len : 0, L = past + g.S, hd = g.hd, group = g.H / g.KVH;
    if (c && (c->dtype != NTP_DTYPE_F32 && c->dtype != NTP_DTYPE_BF16 &&
              c->dtype != NTP_DTYPE_F16 && c->dtype != NTP_DTYPE_I8))
        return ntp__ref_error(
            ctx, k, NTP_STATUS_UNSUPPORTED,
            "a %s key/value cache; the reference kernel keeps f32, bf16, f16 or i8",
            ntp_dtype_name(c->dtype));
    if (c && c->dtype == NTP_DTYPE_I8 && (!c->k_scale || !c->v_scale))
        return ntp__ref_error(ctx, k, NTP_STATUS_INVALID_ARGUMENT,
                              "an i8 key/value cache without its scales");
    if (c && L > c->capacity)
        return ntp__ref_error(ctx, k, NTP_STATUS_INVALID_ARGUMENT,
                              "%lld cached positions and %lld new ones exceed the cache's %lld",
                              (long long)past, (long long)g.S, (long long)c->capacity);
    size_t esz = c ? ntp_dtype_size(c->dtype) : sizeof(float);
    float *P = k->workspace;
    float *Kw = P + g.S * g.L, *Vw = Kw + g.L * hd;
    float scale = (float)(1.0 / sqrt((double)hd));
    const float *q = k->in[0].data, *kin = k->in[1].data, *vin = k->in[2].data;
    float *Y = k->out[0].data;
    int64_t qrow = g.H * hd, kvrow = g.KVH * hd;
    /* Which keys hold tokens: the cache's flags (the new positions' written
     * first), else the pass's mask. */
    if (mask && c)
        for (int64_t n = 0; n < g.N; n++)
            for (int64_t t = 0; t < g.S; t++)
                c->keep[n * c->capacity + past + t] = mask_keeps(mask, n * g.S + t);
    for (int64_t n = 0; n < g.N; n++)
        for (int64_t kh = 0; kh < g.KVH; kh++) {
            const float *K, *V;
            int64_t ld;
            if (c) {
                /* Append the new keys and values, then read all of them. */
                int64_t base = ((n * g.KVH + kh) * c->capacity) * hd;
                for (int64_t t = 0; t < g.S; t++) {
                    int64_t src = (n * g.S + t) * kvrow + kh * hd;
                    int64_t row = base / hd + past + t;
                    float ks = 0, vs = 0;
                    to_cache((char *)c->k + (size_t)(base + (past + t) * hd) * esz, c->dtype,
                             kin + src, hd, &ks);
                    to_cache((char *)c->v + (size_t)(base + (past + t) * hd) * esz, c->dtype,
                             vin + src, hd, &vs);
                    if (c->dtype == NTP_DTYPE_I8) {
                        c->k_scale[row] = ks;
                        c->v_scale[row] = vs;
                    }
                }
                if (c->dtype == NTP_DTYPE_F32) {
                    K = (const float *)c->k + base;
                    V = (const float *)c->v + base;
                } else {
                    const float *ksc = c->k_scale ? c->k_scale + base / hd : NULL;
                    const float *vsc = c->v_scale ? c->v_scale + base / hd : NULL;
                    from_cache(Kw, c->dtype, (const char *)c->k + (size_t)base * esz, L, hd, ksc);
                    from_cache(Vw, c->dtype, (const char *)c->v + (size_t)base * esz, L, hd, vsc);
                    K = Kw;
                    V = Vw;
                }
                ld = hd;
            } else {
                K = kin + n * g.S * kvrow + kh * hd;
                V = vin + n * g.S * kvrow + kh * hd;
                ld = kvrow;
            }
            for (int64_t h = kh * group; h < (kh + 1) * group; h++) {
                const float *Q = q + n * g.S * qrow + h * hd;
                gemm(false, true, g.S, L, hd, scale, Q, qrow, K, ld, 0.0f, P, L);
                for (int64_t i = 0; i < g.S; i++) {
                    for (int64_t j = past + i + 1; j < L; j++)
                        P[i * L + j] = -INFINITY;
                    bool any = true;
                    if (mask) {
                        any = false;
                        for (int64_t j = 0; j <= past + i; j++) {
                            bool kept = c ? c->keep[n * c->capacity + j] != 0
                                          : mask_keeps(mask, n * g.S + j);
                            if (!kept)
                                P[i * L + j] = -INFINITY;
                            any |= kept;
                        }
                    }
                    if (any)
                        ntp__ref_softmax_strided(P + i * L, L, 1);
                    else /* a query with no token to see (left padding): 0 */
                        memset(P + i * L, 0, (size_t)L * sizeof *P);
                }
                gemm(false, false, g.S, hd, L, 1.0f, P, L, V, ld, 0.0f, Y + n * g.S * qrow + h * hd,
                     qrow);
            }
        }
    return NTP_STATUS_OK;
}

static ntp_status lm_head_on(ntp_ctx *ctx, const ntp_kargs *k, ntp_gemm_fn *gemm)
{
    ntp_status st = ntp__ref_expect(ctx, k, 1, 1, 1, 1);
    if (st)
        return st;
    const ntp_shape *s = &k->in[0].shape;
    int64_t D = s->dim[s->ndim - 1], V = k->node->a.vocab;
    int64_t rows = ntp_shape_numel(s) / (D > 0 ? D : 1);
    if ((st = ntp__ref_expect_weight(ctx, k, 0, V * D)))
        return st;
    if (ntp_shape_numel(&k->out[0].shape) != rows * V)
        return bad_shape(ctx, k, "output is not [..., vocab]");
    gemm(false, true, rows, V, D, 1.0f, k->in[0].data, D, k->w[0].data, D, 0.0f, k->out[0].data, V);
    return NTP_STATUS_OK;
}

static ntp_status argmax(ntp_ctx *ctx, const ntp_kargs *k)
{
    if (k->n_in != 1 || k->n_out != 1 || k->in[0].dtype != NTP_DTYPE_F32 ||
        k->out[0].dtype != NTP_DTYPE_I32)
        return ntp__ref_error(ctx, k, NTP_STATUS_UNSUPPORTED, "argmax reads f32, writes i32");
    const ntp_shape *s = &k->in[0].shape;
    int64_t C = s->dim[s->ndim - 1], rows = ntp_shape_numel(s) / (C > 0 ? C : 1);
    if (C < 1 || ntp_shape_numel(&k->out[0].shape) != rows)
        return bad_shape(ctx, k, "output is not the input without its last dim");
    const float *x = k->in[0].data;
    int32_t *y = k->out[0].data;
    for (int64_t r = 0; r < rows; r++) {
        int64_t best = 0;
        for (int64_t j = 1; j < C; j++)
            if (x[r * C + j] > x[r * C + best] || (isnan(x[r * C + best]) && !isnan(x[r * C + j])))
                best = j;
        y[r] = (int32_t)best;
    }
    return NTP_STATUS_OK;
}

static ntp_status kv_attention(ntp_ctx *ctx, const ntp_kargs *k)
{
    return kv_attention_on(ctx, k, ntp__ref_gemm);
}

static ntp_status lm_head(ntp_ctx *ctx, const ntp_kargs *k)
{
    return lm_head_on(ctx, k, ntp__ref_gemm);
}

ntp_status ntp__ref_decoder(ntp_ctx *ctx, const ntp_kargs *k)
{
    static const ntp_ref_kernel_fn kernels[NTP_OP_COUNT] = {
        [NTP_OP_RMSNORM] = rmsnorm, [NTP_OP_ROPE] = rope,     [NTP_OP_KV_ATTENTION] = kv_attention,
        [NTP_OP_LM_HEAD] = lm_head, [NTP_OP_ARGMAX] = argmax,
    };
    return ntp__ref_dispatch(ctx, k, kernels, "decoder");
}

ntp_status ntp__ref_decoder_run(ntp_ctx *ctx, const ntp_kargs *k, ntp_gemm_fn *gemm)
{
    if (k->node->op == NTP_OP_KV_ATTENTION)
        return kv_attention_on(ctx, k, gemm);
    if (k->node->op == NTP_OP_LM_HEAD)
        return lm_head_on(ctx, k, gemm);
    return ntp__ref_decoder(ctx, k);
}
