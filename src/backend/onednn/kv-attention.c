/* kv_attention (docs/decoders.md) on oneDNN at f32: causal attention of S
 * new queries over a key/value cache, grouped-query heads, an optional
 * padding mask. At bf16 (--precision bf16) the same steps run at f32
 * between a reorder of each input to f32 (oneDNN reorders, rows of their
 * own) and one of the output back to bf16, as oneDNN's own normalisations
 * compute bf16 data in f32; the cache keeps its own type (--kv-dtype).
 * The steps, one row in reports:
 *
 *   ":append"   host: the new keys and values written into the cache at
 *               positions len .. len+S-1 (converted to its type; i8 with a
 *               scale per row), the padding flags kept, the context bucket
 *               of this pass chosen (below) and its additive mask
 *               [N|1, 1, 1, S, lb] filled: 0 where query i sees key j
 *               (j <= len+i, the key holds a token), -inf elsewhere. A
 *               cache of another type than f32 is widened into an f32 copy
 *               of its first len+S positions (zero up to lb).
 *   ""          scores P = Q·Kᵀ / √hd: a 5-d batched matmul over
 *               [N, kv_heads, heads/kv_heads] reading Q through a strided
 *               view of its [N, S, heads·hd] input and K through a view of
 *               the cache [N, kv_heads, capacity, hd] (its first lb
 *               positions) broadcast over the query heads of its group
 *   ":mask"     P += the mask, a binary add broadcast over the heads (as a
 *               post-op of the 5-d matmul, oneDNN 2.6 picks its reference
 *               matmul, ref:any; apart, both are JIT kernels)
 *   ":softmax"  oneDNN's softmax over the keys, in place
 *   ":context"  C = P·V, written through a strided view straight into the
 *               [N, S, heads·hd] output
 *   ":fixup"    host, with a padding mask only: a query that sees no key
 *               gets 0 (its mask row was left at 0, so the softmax stayed
 *               finite)
 *
 * Context buckets: oneDNN 2.6's softmax and binary take no runtime
 * dimensions, so the four primitives (scores, mask, softmax, context) are
 * built at prepare for each of a few context lengths lb (kv_buckets():
 * powers of two from 16, the capacity L the last), and a pass of context
 * c = len+S runs those of the smallest lb >= c, the positions c .. lb-1
 * masked: fewer than 2c positions (or 16), rather than the capacity. The
 * other buckets' steps are skipped (odnn_step.gate). The cache holds finite
 * values beyond what was written (calloc, or earlier passes), so the
 * masked products stay finite. Without a cache (a plain run) L = S, one
 * bucket, and the keys and values are read from the inputs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "core/numeric-impl.h"
#include "onednn-impl.h"

/* At most this many context buckets (ODNN_MAX_STEPS bounds the steps: 4
 * per bucket). */
#define KV_MAX_BUCKETS 12
/* The smallest bucket, in positions. */
#define KV_MIN_BUCKET 16

typedef struct kv_host {
    int64_t N, S, H, KVH, hd, L;
    int q, kin, vin;  /* input memories (plain f32) */
    int kw, vw;       /* f32 copies of a non-f32 cache, or -1 */
    int mask;         /* the additive mask, [N|1, 1, 1, S, lb] of this pass */
    int out;          /* the output as the context matmul writes it */
    bool mask_per_n;  /* a padding mask: one mask per sequence */
    uint8_t *visible; /* [N, S]: the query sees some key (owned by the mask step) */
    int nb;           /* context buckets: primitives for lb[0] < lb[1] < ... = L */
    int64_t lb[KV_MAX_BUCKETS];
    int active; /* the bucket this pass runs (the steps' gate) */
} kv_host;

/* The context lengths primitives are built for: powers of two from
 * KV_MIN_BUCKET (larger when L would need more than KV_MAX_BUCKETS of
 * them), the first at least S (a pass attends over at least its own S
 * positions), the last the capacity L. A pass over a context of c
 * positions runs the smallest bucket >= c: fewer than 2c positions, or
 * KV_MIN_BUCKET. */
static int kv_buckets(int64_t S, int64_t L, int64_t *lb)
{
    int64_t b = KV_MIN_BUCKET;
    while ((L + b - 1) / b > ((int64_t)1 << (KV_MAX_BUCKETS - 2)))
        b *= 2;
    while (b < S)
        b *= 2;
    int n = 0;
    for (; b < L; b *= 2)
        lb[n++] = b;
    lb[n++] = L;
    return n;
}

bool ntp__dnnl_kv_attention_supports(const ntp_graph *g, const ntp_node *n)
{
    const ntp_shape *q = &g->tensors[n->in[0]].shape, *k = &g->tensors[n->in[1]].shape;
    int64_t H = n->a.heads, KVH = n->a.kv_heads > 0 ? n->a.kv_heads : H;
    return (n->n_in == 3 || n->n_in == 4) && q->ndim == 3 && k->ndim == 3 && H > 0 && KVH > 0 &&
           H % KVH == 0 && q->dim[2] % H == 0;
}

static bool mask_keeps(const ntp_buf *m, int64_t t)
{
    return m->dtype == NTP_DTYPE_I32 ? ((const int32_t *)m->data)[t] != 0
                                     : ((const int64_t *)m->data)[t] != 0;
}

static ntp_status host_error(ntp_ctx *ctx, const ntp_kargs *k, ntp_status st, const char *what)
{
    return ntp__error(ctx, st, "onednn: <kv_attention name='%s'>: %s",
                      k->node && k->node->name ? k->node->name : "?", what);
}

/* Write n floats into a cache row of type t (the reference kernel's
 * conversions: round to nearest even; i8 with the row's scale). */
static void to_cache(void *dst, ntp_dtype t, const float *src, int64_t n, float *scale)
{
    if (t == NTP_DTYPE_F32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
    } else if (t == NTP_DTYPE_I8) {
        *scale = ntp__i8_scale(src, n);
        ntp__quantize_i8_n(dst, src, n, *scale);
    } else {
        uint16_t *d = dst;
        for (int64_t i = 0; i < n; i++)
            d[i] = t == NTP_DTYPE_BF16 ? ntp__f32_to_bf16(src[i]) : ntp__f32_to_f16(src[i]);
    }
}

static float from_cache(const void *src, ntp_dtype t, int64_t i, float scale)
{
    if (t == NTP_DTYPE_I8)
        return ntp__dequantize_i8(((const int8_t *)src)[i], scale);
    uint16_t h = ((const uint16_t *)src)[i];
    return t == NTP_DTYPE_BF16 ? ntp__bf16_to_f32(h) : ntp__f16_to_f32(h);
}

static ntp_status append(ntp_ctx *ctx, const odnn_node *nd, const odnn_step *sp, const ntp_kargs *k)
{
    kv_host *h = sp->host_data;
    ntp_kv_state *c = k->kv;
    int64_t N = h->N, S = h->S, KVH = h->KVH, hd = h->hd, L = h->L;
    int64_t past = c ? c->len : 0, kvrow = KVH * hd;
    const ntp_buf *pm = k->n_in == 4 ? &k->in[3] : NULL;
    if (pm && ((pm->dtype != NTP_DTYPE_I32 && pm->dtype != NTP_DTYPE_I64) || !pm->data))
        return host_error(ctx, k, NTP_STATUS_UNSUPPORTED, "the padding mask must be i32 or i64");
    if (c) {
        if (c->batch != N || c->kv_heads != KVH || c->head_dim != hd || c->capacity != L)
            return host_error(ctx, k, NTP_STATUS_INVALID_ARGUMENT,
                              "the key/value cache is not the one the layer was prepared for");
        if (past + S > L) {
            char msg[160];
            snprintf(msg, sizeof msg,
                     "%lld cached positions and %lld new ones exceed the cache's %lld",
                     (long long)past, (long long)S, (long long)L);
            return host_error(ctx, k, NTP_STATUS_INVALID_ARGUMENT, msg);
        }
        if (pm && !c->keep)
            return host_error(ctx, k, NTP_STATUS_INVALID_ARGUMENT,
                              "a padding mask with a key/value cache that keeps none");
        if (c->dtype == NTP_DTYPE_I8 && (!c->k_scale || !c->v_scale))
            return host_error(ctx, k, NTP_STATUS_INVALID_ARGUMENT,
                              "an i8 key/value cache without its scales");
    }
    /* The bucket of this pass's context: the smallest that holds it. */
    int64_t ctx_len = past + S;
    int bk = 0;
    while (bk < h->nb - 1 && h->lb[bk] < ctx_len)
        bk++;
    h->active = bk;
    int64_t LB = h->lb[bk];
    if (c) {
        const float *kin = ntp__dnnl_bound_ptr(nd, &nd->mems[h->kin], k);
        const float *vin = ntp__dnnl_bound_ptr(nd, &nd->mems[h->vin], k);
        size_t esz = ntp_dtype_size(c->dtype);
        for (int64_t n = 0; n < N; n++)
            for (int64_t g = 0; g < KVH; g++)
                for (int64_t t = 0; t < S; t++) {
                    int64_t row = (n * KVH + g) * L + past + t, src = (n * S + t) * kvrow + g * hd;
                    float ks = 0, vs = 0;
                    to_cache((char *)c->k + (size_t)(row * hd) * esz, c->dtype, kin + src, hd, &ks);
                    to_cache((char *)c->v + (size_t)(row * hd) * esz, c->dtype, vin + src, hd, &vs);
                    if (c->dtype == NTP_DTYPE_I8) {
                        c->k_scale[row] = ks;
                        c->v_scale[row] = vs;
                    }
                }
        if (pm)
            for (int64_t n = 0; n < N; n++)
                for (int64_t t = 0; t < S; t++)
                    c->keep[n * L + past + t] = mask_keeps(pm, n * S + t);
        if (h->kw >= 0) { /* widen the cache's first past+S rows, zero the bucket's rest */
            float *kw = ntp__dnnl_bound_ptr(nd, &nd->mems[h->kw], k);
            float *vw = ntp__dnnl_bound_ptr(nd, &nd->mems[h->vw], k);
            for (int64_t r = 0; r < N * KVH; r++) {
                for (int64_t p = 0; p < LB; p++) {
                    int64_t row = r * L + p;
                    for (int64_t d = 0; d < hd; d++) {
                        bool in = p < past + S;
                        kw[row * hd + d] = in ? from_cache(c->k, c->dtype, row * hd + d,
                                                           c->k_scale ? c->k_scale[row] : 1.0f)
                                              : 0.0f;
                        vw[row * hd + d] = in ? from_cache(c->v, c->dtype, row * hd + d,
                                                           c->v_scale ? c->v_scale[row] : 1.0f)
                                              : 0.0f;
                    }
                }
            }
        }
    }
    /* The additive mask of this pass, [N|1, 1, 1, S, LB]. */
    float *m = ntp__dnnl_bound_ptr(nd, &nd->mems[h->mask], k);
    int64_t NM = h->mask_per_n ? N : 1;
    for (int64_t n = 0; n < NM; n++)
        for (int64_t i = 0; i < S; i++) {
            float *row = m + (n * S + i) * LB;
            bool any = false;
            for (int64_t j = 0; j < LB; j++) {
                bool see = j <= past + i;
                if (see && pm)
                    see = c ? c->keep[n * L + j] != 0 : mask_keeps(pm, n * S + j);
                row[j] = see ? 0.0f : -INFINITY;
                any |= see;
            }
            h->visible[n * S + i] = any;
            if (!any) /* no key: keep the softmax finite, zeroed by :fixup */
                memset(row, 0, (size_t)LB * sizeof *row);
        }
    return NTP_STATUS_OK;
}

static ntp_status fixup(ntp_ctx *ctx, const odnn_node *nd, const odnn_step *sp, const ntp_kargs *k)
{
    (void)ctx;
    const kv_host *h = *(kv_host *const *)sp->host_data;
    float *y = ntp__dnnl_bound_ptr(nd, &nd->mems[h->out], k);
    int64_t row = h->H * h->hd;
    for (int64_t r = 0; r < h->N * h->S; r++)
        if (!h->visible[r])
            memset(y + r * row, 0, (size_t)row * sizeof *y);
    return NTP_STATUS_OK;
}

/* A strided view of memory base (f32) at byte offset off. */
static ntp_status view5(odnn_build *b, int base, size_t off, const int64_t *dims,
                        const int64_t *strides, int *idx)
{
    dnnl_memory_desc_t md;
    dnnl_status_t st = dnnl_memory_desc_init_by_strides(&md, 5, dims, dnnl_f32, strides);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "kv_attention view");
    const odnn_mem *m = &b->nd->mems[base];
    return ntp__dnnl_mem(b, &md, m->bind, m->idx, m->off + off, idx);
}

/* scores += mask, broadcast over the heads: a binary primitive (a mask
 * post-op on the 5-d matmul falls to oneDNN 2.6's reference matmul). */
static ntp_status add_mask(odnn_build *b, int p, int mask)
{
    const dnnl_memory_desc_t *pm, *mm;
    dnnl_memory_get_memory_desc(b->nd->mems[p].m, &pm);
    dnnl_memory_get_memory_desc(b->nd->mems[mask].m, &mm);
    dnnl_binary_desc_t d;
    dnnl_status_t st = dnnl_binary_desc_init(&d, dnnl_binary_add, pm, mm, pm);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "kv_attention mask descriptor");
    dnnl_primitive_attr_t attr;
    dnnl_primitive_desc_t pd;
    ntp_status s;
    int args[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST}, mems[3] = {p, mask, p};
    if ((s = ntp__dnnl_attr(b, &attr)) || (s = ntp__dnnl_pd(b, &pd, &d, attr, "kv_attention mask")))
        return s;
    return ntp__dnnl_step(b, pd, ":mask", NULL, 3, args, mems);
}

ntp_status ntp__dnnl_kv_attention_build(odnn_build *b)
{
    ntp_kargs *k = b->k;
    const ntp_node *node = b->n;
    if ((k->n_in != 3 && k->n_in != 4) || k->n_out != 1 ||
        (b->cdt != dnnl_f32 && b->cdt != dnnl_bf16))
        return ntp__dnnl_fail(b, NTP_STATUS_UNSUPPORTED, "kv_attention runs at f32 and bf16 only");
    const ntp_shape *qs = &k->in[0].shape, *ks = &k->in[1].shape;
    int64_t N = qs->dim[0], S = qs->dim[1], H = node->a.heads;
    int64_t KVH = node->a.kv_heads > 0 ? node->a.kv_heads : H;
    if (qs->ndim != 3 || H <= 0 || qs->dim[2] % H || H % KVH ||
        !ntp_shape_equal(ks, &k->in[2].shape))
        return ntp__dnnl_fail(b, NTP_STATUS_SHAPE_ERROR, "inconsistent kv_attention arguments");
    int64_t hd = qs->dim[2] / H, rep = H / KVH;
    if (ks->ndim != 3 || ks->dim[0] != N || ks->dim[1] != S || ks->dim[2] != KVH * hd ||
        (k->n_in == 4 &&
         (k->in[3].shape.ndim != 2 || k->in[3].shape.dim[0] != N || k->in[3].shape.dim[1] != S)))
        return ntp__dnnl_fail(b, NTP_STATUS_SHAPE_ERROR,
                              "query [N,S,heads*hd], key and value [N,S,kv_heads*hd] and the "
                              "mask [N,S] must agree");
    const ntp_kv_state *c = k->kv;
    if (c && (c->batch != N || c->kv_heads != KVH || c->head_dim != hd || c->capacity < 1))
        return ntp__dnnl_fail(b, NTP_STATUS_SHAPE_ERROR,
                              "the key/value cache [%lld,%lld,%lld,%lld] does not fit the layer",
                              (long long)c->batch, (long long)c->kv_heads, (long long)c->capacity,
                              (long long)c->head_dim);
    int64_t L = c ? c->capacity : S;
    kv_host *h = calloc(1, sizeof *h + (size_t)(N * S) + 1);
    if (!h)
        return ntp__dnnl_fail(b, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    h->visible = (uint8_t *)(h + 1);
    *h = (kv_host){.N = N,
                   .S = S,
                   .H = H,
                   .KVH = KVH,
                   .hd = hd,
                   .L = L,
                   .kw = -1,
                   .vw = -1,
                   .mask_per_n = k->n_in == 4,
                   .visible = h->visible};
    ntp_status s;
    if ((s = ntp__dnnl_plain_input(b, 0, dnnl_f32, &h->q)) ||
        (s = ntp__dnnl_plain_input(b, 1, dnnl_f32, &h->kin)) ||
        (s = ntp__dnnl_plain_input(b, 2, dnnl_f32, &h->vin))) {
        free(h);
        return s;
    }
    /* Keys and values as the matmuls read them: the cache (f32), its f32
     * copy, or the inputs. */
    int kbase, vbase;
    dnnl_dims_t kst = {0}, vst = {0};
    if (c) {
        dnnl_dims_t cd = {N, KVH, L, hd};
        dnnl_memory_desc_t cm;
        dnnl_memory_desc_init_by_tag(&cm, 4, cd, dnnl_f32, dnnl_abcd);
        if (c->dtype == NTP_DTYPE_F32) {
            if ((s = ntp__dnnl_mem(b, &cm, ODNN_BIND_KV, 0, 0, &kbase)) ||
                (s = ntp__dnnl_mem(b, &cm, ODNN_BIND_KV, 1, 0, &vbase))) {
                free(h);
                return s;
            }
        } else if ((s = ntp__dnnl_ws_mem(b, &cm, &h->kw)) ||
                   (s = ntp__dnnl_ws_mem(b, &cm, &h->vw))) {
            free(h);
            return s;
        } else {
            kbase = h->kw;
            vbase = h->vw;
        }
        const int64_t a[5] = {KVH * L * hd, L * hd, L * hd, 1, hd};
        const int64_t v[5] = {KVH * L * hd, L * hd, L * hd, hd, 1};
        memcpy(kst, a, sizeof a);
        memcpy(vst, v, sizeof v);
    } else {
        kbase = h->kin;
        vbase = h->vin;
        const int64_t a[5] = {S * KVH * hd, hd, hd, 1, KVH * hd};
        const int64_t v[5] = {S * KVH * hd, hd, hd, KVH * hd, 1};
        memcpy(kst, a, sizeof a);
        memcpy(vst, v, sizeof v);
    }
    /* Per context bucket lb: the additive mask [N|1, 1, 1, S, lb] and the
     * scores [N, kv_heads, heads/kv_heads, S, lb], views of one workspace
     * region each, sized for the largest bucket (L). */
    h->nb = kv_buckets(S, L, h->lb);
    int mws, pws, y;
    {
        dnnl_dims_t md = {h->mask_per_n ? N : 1, 1, 1, S, L}, pd = {N, KVH, rep, S, L};
        dnnl_memory_desc_t mm, pm;
        dnnl_memory_desc_init_by_tag(&mm, 5, md, dnnl_f32, dnnl_abcde);
        dnnl_memory_desc_init_by_tag(&pm, 5, pd, dnnl_f32, dnnl_abcde);
        if ((s = ntp__dnnl_ws_mem(b, &mm, &mws)) || (s = ntp__dnnl_ws_mem(b, &pm, &pws))) {
            free(h);
            return s;
        }
    }
    h->mask = mws;
    dnnl_dims_t qd = {N, KVH, rep, S, hd}, qst = {S * H * hd, rep * hd, hd, H * hd, 1};
    int q, cview;
    dnnl_memory_desc_t plain;
    ntp__dnnl_plain_md(&plain, &k->out[0].shape, dnnl_f32);
    if ((s = ntp__dnnl_output(b, 0, &plain, 1.0f, &y))) {
        free(h);
        return s;
    }
    h->out = y;
    bool has_mask = h->mask_per_n;
    /* From here the node owns h. */
    if ((s = ntp__dnnl_host_step(b, append, h, ":append")) ||
        (s = view5(b, h->q, 0, qd, qst, &q)) || (s = view5(b, y, 0, qd, qst, &cview)))
        return s;
    for (int bk = 0; bk < h->nb; bk++) {
        int64_t LB = h->lb[bk];
        dnnl_dims_t ktd = {N, KVH, 1, hd, LB}, vd = {N, KVH, 1, LB, hd};
        dnnl_dims_t pd = {N, KVH, rep, S, LB},
                    pst = {KVH * rep * S * LB, rep * S * LB, S * LB, LB, 1};
        dnnl_dims_t md = {h->mask_per_n ? N : 1, 1, 1, S, LB};
        dnnl_dims_t mst = {S * LB, S * LB, S * LB, LB, 1};
        int kt, v, p, mask, first = b->nd->n_steps;
        dnnl_memory_desc_t pm;
        dnnl_memory_desc_init_by_tag(&pm, 5, pd, dnnl_f32, dnnl_abcde);
        dnnl_softmax_v2_desc_t sd;
        dnnl_primitive_desc_t spd;
        dnnl_status_t st;
        int sargs[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, smems[2];
        if ((s = view5(b, kbase, 0, ktd, kst, &kt)) || (s = view5(b, vbase, 0, vd, vst, &v)) ||
            (s = view5(b, pws, 0, pd, pst, &p)) || (s = view5(b, mws, 0, md, mst, &mask)) ||
            (s = ntp__dnnl_matmul_step(b, "kv_attention", q, kt, p, (float)(1.0 / sqrt((double)hd)),
                                       -1, "", bk == h->nb - 1)) ||
            (s = add_mask(b, p, mask)))
            return s;
        if ((st = dnnl_softmax_v2_forward_desc_init(&sd, dnnl_forward_inference,
                                                    dnnl_softmax_accurate, &pm, &pm, 4)))
            return ntp__dnnl_error(b, st, "kv_attention softmax descriptor");
        smems[0] = smems[1] = p;
        if ((s = ntp__dnnl_pd(b, &spd, &sd, NULL, "kv_attention softmax")) ||
            (s = ntp__dnnl_step(b, spd, ":softmax", NULL, 2, sargs, smems)) ||
            (s = ntp__dnnl_matmul_step(b, "kv_attention", p, v, cview, 1.0f, -1, ":context",
                                       false)))
            return s;
        for (int i = first; i < b->nd->n_steps; i++) {
            b->nd->steps[i].gate = &h->active;
            b->nd->steps[i].gate_val = bk;
        }
    }
    if (has_mask) {
        kv_host **ref = malloc(sizeof *ref);
        if (!ref)
            return ntp__dnnl_fail(b, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        *ref = h;
        if ((s = ntp__dnnl_host_step(b, fixup, ref, ":fixup")))
            return s;
    }
    return NTP_STATUS_OK;
}

/* rmsnorm (docs/decoders.md) at f32 (bf16: between reorders, as
 * kv_attention), from oneDNN pieces (2.6 has no RMS normalisation): s = x² (eltwise square), r =
 * (mean(s) + eps)^-1/2 (a mean reduction over the last dim with linear and pow post-ops), y = x · r
 * · scale (a binary mul broadcast over the rows with the scale as a binary
 * mul post-op). The reference kernel sums in double; these in f32. */
bool ntp__dnnl_rmsnorm_supports(const ntp_graph *g, const ntp_node *n)
{
    const ntp_shape *x = &g->tensors[n->in[0]].shape;
    return n->n_in == 1 && n->n_w == 1 && x->ndim >= 1 && x->dim[x->ndim - 1] > 0;
}

ntp_status ntp__dnnl_rmsnorm_build(odnn_build *b)
{
    ntp_kargs *k = b->k;
    if (k->n_in != 1 || k->n_out != 1 || k->n_w != 1 || (b->cdt != dnnl_f32 && b->cdt != dnnl_bf16))
        return ntp__dnnl_fail(b, NTP_STATUS_UNSUPPORTED, "rmsnorm runs at f32 and bf16 only");
    const ntp_shape *xs = &k->in[0].shape;
    int64_t D = xs->dim[xs->ndim - 1], rows = ntp_shape_numel(xs) / D;
    if (ntp_shape_numel(&k->w[0].shape) != D || ntp_shape_numel(&k->out[0].shape) != rows * D)
        return ntp__dnnl_fail(b, NTP_STATUS_SHAPE_ERROR, "inconsistent rmsnorm arguments");
    dnnl_dims_t xd = {rows, D}, rd = {rows, 1}, sd = {1, D};
    dnnl_memory_desc_t xm, rm, sm, plain;
    dnnl_memory_desc_init_by_tag(&xm, 2, xd, dnnl_f32, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&rm, 2, rd, dnnl_f32, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&sm, 2, sd, dnnl_f32, dnnl_ab);
    ntp__dnnl_plain_md(&plain, &k->out[0].shape, dnnl_f32);
    float *scale = NULL;
    int x, x2, sq, r, sc, y, y2;
    ntp_status s;
    dnnl_status_t st;
    if ((s = ntp__dnnl_weight_f32(b, 0, &scale)))
        return s;
    s = ntp__dnnl_pack(b, scale, &sm, &sm, NULL, 0, 0, &sc);
    free(scale);
    if (s || (s = ntp__dnnl_plain_input(b, 0, dnnl_f32, &x)) ||
        (s = ntp__dnnl_alias(b, x, &xm, &x2)) || (s = ntp__dnnl_ws_mem(b, &xm, &sq)) ||
        (s = ntp__dnnl_ws_mem(b, &rm, &r)) || (s = ntp__dnnl_output(b, 0, &plain, 1.0f, &y)) ||
        (s = ntp__dnnl_alias(b, y, &xm, &y2)))
        return s;
    /* s = x² */
    dnnl_eltwise_desc_t ed;
    dnnl_primitive_desc_t pd;
    if ((st = dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, dnnl_eltwise_square, &xm,
                                             0.0f, 0.0f)))
        return ntp__dnnl_error(b, st, "rmsnorm square");
    int a2[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, m2[2] = {x2, sq};
    if ((s = ntp__dnnl_pd(b, &pd, &ed, NULL, "rmsnorm square")) ||
        (s = ntp__dnnl_step(b, pd, ":square", NULL, 2, a2, m2)))
        return s;
    /* r = (mean(s) + eps)^-1/2 */
    dnnl_reduction_desc_t rdsc;
    if ((st = dnnl_reduction_desc_init(&rdsc, dnnl_reduction_mean, &xm, &rm, 0.0f, 0.0f)))
        return ntp__dnnl_error(b, st, "rmsnorm mean");
    dnnl_primitive_attr_t attr;
    dnnl_post_ops_t po;
    if ((s = ntp__dnnl_attr(b, &attr)))
        return s;
    if ((st = dnnl_post_ops_create(&po)))
        return ntp__dnnl_error(b, st, "dnnl_post_ops_create");
    st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, 1.0f, (float)b->n->a.epsilon);
    if (st == dnnl_success)
        st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_pow, 1.0f, -0.5f);
    if (st == dnnl_success)
        st = dnnl_primitive_attr_set_post_ops(attr, po);
    dnnl_post_ops_destroy(po);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "rmsnorm post-ops");
    m2[0] = sq;
    m2[1] = r;
    if ((s = ntp__dnnl_pd(b, &pd, &rdsc, attr, "rmsnorm mean")) ||
        (s = ntp__dnnl_step(b, pd, ":mean", NULL, 2, a2, m2)))
        return s;
    /* y = x · r · scale */
    dnnl_binary_desc_t bd;
    if ((st = dnnl_binary_desc_init(&bd, dnnl_binary_mul, &xm, &rm, &xm)))
        return ntp__dnnl_error(b, st, "rmsnorm product");
    if ((s = ntp__dnnl_attr(b, &attr)))
        return s;
    if ((st = dnnl_post_ops_create(&po)))
        return ntp__dnnl_error(b, st, "dnnl_post_ops_create");
    st = dnnl_post_ops_append_binary(po, dnnl_binary_mul, &sm);
    if (st == dnnl_success)
        st = dnnl_primitive_attr_set_post_ops(attr, po);
    dnnl_post_ops_destroy(po);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "rmsnorm scale post-op");
    int a4[4] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST,
                 DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1};
    int m4[4] = {x2, r, y2, sc};
    if ((s = ntp__dnnl_pd(b, &pd, &bd, attr, "rmsnorm product")) ||
        (s = ntp__dnnl_step(b, pd, "", NULL, 4, a4, m4)))
        return s;
    ntp__dnnl_set_main(b, pd);
    return NTP_STATUS_OK;
}
