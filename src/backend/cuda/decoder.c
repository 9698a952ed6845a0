/* The decoder-transformer ops on the GPU (docs/decoders.md): rmsnorm, rope,
 * kv_attention and argmax by the kernels of kernels.cu (lm_head is an fc
 * of dense.c, on cuBLAS).
 *
 * kv_attention's key/value cache belongs to the driver (ntp_generate), in
 * host memory, and outlives every plan; the prefill and the decode plans
 * are two plans (two states of this backend) that share it. The layer
 * keeps a copy of it on the device, hung on the cache itself
 * (ntp_kv_state.mirror, freed with the cache), whose first `valid`
 * positions equal the host's. A pass of S tokens after len cached ones:
 *   1. the host's positions valid .. len-1 are uploaded (the synthetic
 *      context of --context-depth; nothing after the first pass), and a
 *      reset cache (len below valid) only lowers valid;
 *   2. the append kernel writes the pass's keys and values at len ..
 *      len+S-1 of the device copy (converted to the cache's type, i8 with
 *      a scale per row, as the reference kernel does) and the padding
 *      mask's flags;
 *   3. the attention kernel: one block per query, scores over its visible
 *      positions in a workspace, softmax, P·V;
 *   4. the new positions are copied back into the host's cache, which stays
 *      the one every backend reads, and valid becomes len+S.
 * The host side of 1 and 4 makes the layer unfit for graph replay
 * (--cuda-graph): a pass with it runs eagerly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "cuda-impl.h"

typedef struct dec_priv {
    int64_t rows, len; /* rmsnorm, rope, argmax: rows of len */
    int64_t hd;        /* rope */
    double theta;
    float eps;
    int idx64;  /* rope's positions, kv_attention's mask: i64 */
    cudak_kv g; /* kv_attention's geometry */
} dec_priv;

/* The device copy of one cache (see above). */
typedef struct kv_mirror {
    void *k, *v;
    float *ks, *vs;
    uint8_t *keep;
    int64_t batch, kv_heads, head_dim, capacity, valid;
    ntp_dtype dtype;
} kv_mirror;

static void mirror_free(void *p)
{
    kv_mirror *m = p;
    if (!m)
        return;
    cudaFree(m->k);
    cudaFree(m->v);
    cudaFree(m->ks);
    cudaFree(m->vs);
    cudaFree(m->keep);
    free(m);
}

static bool is_index(ntp_dtype t)
{
    return t == NTP_DTYPE_I32 || t == NTP_DTYPE_I64;
}

bool ntp__cuda_decoder_supports(const ntp_graph *g, const ntp_node *n)
{
    const ntp_shape *x = &ntp__cin(g, n, 0)->shape;
    if (n->n_out != 1 || x->ndim < 1 || !ntp__cuda_float_type(ntp__cin(g, n, 0)->dtype))
        return false;
    switch ((int)n->op) {
    case NTP_OP_RMSNORM: return n->n_in == 1 && n->n_w == 1 && x->dim[x->ndim - 1] > 0;
    case NTP_OP_ROPE:
        return n->n_in == 2 && is_index(ntp__cin(g, n, 1)->dtype) && x->ndim == 3 &&
               n->a.head_dim >= 2 && n->a.head_dim % 2 == 0 && x->dim[2] % n->a.head_dim == 0;
    case NTP_OP_ARGMAX:
        return n->n_in == 1 && ntp__cout(g, n, 0)->dtype == NTP_DTYPE_I32 &&
               x->dim[x->ndim - 1] > 0;
    case NTP_OP_KV_ATTENTION: {
        int64_t H = n->a.heads, KVH = n->a.kv_heads > 0 ? n->a.kv_heads : H;
        if ((n->n_in != 3 && n->n_in != 4) || x->ndim != 3 || H <= 0 || KVH <= 0 || H % KVH ||
            x->dim[2] % H || (x->dim[2] / H) * (int64_t)sizeof(float) > 48 * 1024)
            return false;
        for (int i = 1; i < 3; i++)
            if (ntp__cin(g, n, i)->dtype != ntp__cin(g, n, 0)->dtype)
                return false;
        return n->n_in == 3 || is_index(ntp__cin(g, n, 3)->dtype);
    }
    }
    return false;
}

static ntp_status kerr(ntp_ctx *ctx, const ntp_kargs *k, int r, const char *what)
{
    return r ? ntp__cuda_rt(ctx, k, (cudaError_t)r, what) : NTP_STATUS_OK;
}

static cudak_cache cache_type(ntp_dtype t)
{
    return t == NTP_DTYPE_F16    ? CUDAK_CACHE_F16
           : t == NTP_DTYPE_BF16 ? CUDAK_CACHE_BF16
           : t == NTP_DTYPE_I8   ? CUDAK_CACHE_I8
                                 : CUDAK_CACHE_F32;
}

/* The cache's device copy, made at the layer's first pass. */
static ntp_status get_mirror(ntp_ctx *ctx, const ntp_kargs *k, ntp_kv_state *c, kv_mirror **out)
{
    kv_mirror *m = c->mirror;
    if (m) {
        if (c->mirror_free != mirror_free || m->batch != c->batch || m->kv_heads != c->kv_heads ||
            m->head_dim != c->head_dim || m->capacity != c->capacity || m->dtype != c->dtype)
            return ntp__cuda_error(ctx, k, NTP_STATUS_INVALID_ARGUMENT,
                                   "the key/value cache has another backend's copy, or changed");
        *out = m;
        return NTP_STATUS_OK;
    }
    if (!(m = calloc(1, sizeof *m)))
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    m->batch = c->batch;
    m->kv_heads = c->kv_heads;
    m->head_dim = c->head_dim;
    m->capacity = c->capacity;
    m->dtype = c->dtype;
    size_t rows = (size_t)(c->batch * c->kv_heads * c->capacity);
    size_t bytes = rows * (size_t)c->head_dim * ntp_dtype_size(c->dtype);
    cudaError_t e = cudaMalloc(&m->k, bytes);
    if (e == cudaSuccess)
        e = cudaMalloc(&m->v, bytes);
    if (e == cudaSuccess && c->dtype == NTP_DTYPE_I8)
        e = cudaMalloc((void **)&m->ks, rows * sizeof(float));
    if (e == cudaSuccess && c->dtype == NTP_DTYPE_I8)
        e = cudaMalloc((void **)&m->vs, rows * sizeof(float));
    if (e == cudaSuccess && c->keep)
        e = cudaMalloc((void **)&m->keep, (size_t)(c->batch * c->capacity));
    if (e != cudaSuccess) {
        mirror_free(m);
        return ntp__cuda_rt(ctx, k, e, "allocating the key/value cache on the device");
    }
    c->mirror = m;
    c->mirror_free = mirror_free;
    *out = m;
    return NTP_STATUS_OK;
}

/* Copy positions a .. b-1 of every row block between the host's cache and
 * its device copy (to the device when up). */
static cudaError_t copy_span(cudab_state *s, const ntp_kv_state *c, kv_mirror *m, int64_t a,
                             int64_t b, bool up)
{
    if (b <= a)
        return cudaSuccess;
    enum cudaMemcpyKind kind = up ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    size_t es = ntp_dtype_size(c->dtype), L = (size_t)c->capacity, hd = (size_t)c->head_dim;
    size_t blocks = (size_t)(c->batch * c->kv_heads), off = (size_t)a, w = (size_t)(b - a);
    struct {
        void *host, *dev;
        size_t elem, height;
    } parts[5] = {
        {c->k, m->k, hd * es, blocks},
        {c->v, m->v, hd * es, blocks},
        {c->k_scale, m->ks, sizeof(float), blocks},
        {c->v_scale, m->vs, sizeof(float), blocks},
        {c->keep, m->keep, 1, (size_t)c->batch},
    };
    for (int i = 0; i < 5; i++) {
        if (!parts[i].host || !parts[i].dev)
            continue;
        char *h = (char *)parts[i].host + off * parts[i].elem;
        char *d = (char *)parts[i].dev + off * parts[i].elem;
        size_t pitch = L * parts[i].elem;
        cudaError_t e = up ? cudaMemcpy2DAsync(d, pitch, h, pitch, w * parts[i].elem,
                                               parts[i].height, kind, s->stream)
                           : cudaMemcpy2DAsync(h, pitch, d, pitch, w * parts[i].elem,
                                               parts[i].height, kind, s->stream);
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

static ntp_status kv_run(ntp_ctx *ctx, cudab_state *s, cudab_node *nd, const ntp_kargs *k)
{
    dec_priv *p = nd->priv;
    cudak_kv g = p->g;
    cudak_type kt = ntp__cuda_k_type(k->in[0].dtype);
    g.mask = k->n_in == 4 ? nd->in[3].d : NULL;
    g.mask64 = p->idx64;
    ntp_kv_state *c = k->kv;
    if (!c) { /* attention over the pass's own tokens */
        g.L = g.S;
        return kerr(ctx, k,
                    ntp__cudak_kv_attention(s->stream, kt, nd->in[0].d, nd->in[1].d, nd->in[2].d,
                                            &g, s->ws, nd->out[0].d),
                    "the attention kernel");
    }
    if (c->batch != g.N || c->kv_heads != g.KVH || c->head_dim != g.hd || c->capacity != g.L)
        return ntp__cuda_error(ctx, k, NTP_STATUS_INVALID_ARGUMENT,
                               "the key/value cache is not the one the layer was prepared for");
    if (c->len < 0 || c->len + g.S > c->capacity)
        return ntp__cuda_error(ctx, k, NTP_STATUS_INVALID_ARGUMENT,
                               "%lld cached positions and %lld new ones exceed the cache's %lld",
                               (long long)c->len, (long long)g.S, (long long)c->capacity);
    if (g.mask && !c->keep)
        return ntp__cuda_error(ctx, k, NTP_STATUS_INVALID_ARGUMENT,
                               "a padding mask with a key/value cache that keeps none");
    if (c->dtype == NTP_DTYPE_I8 && (!c->k_scale || !c->v_scale))
        return ntp__cuda_error(ctx, k, NTP_STATUS_INVALID_ARGUMENT,
                               "an i8 key/value cache without its scales");
    kv_mirror *m = NULL;
    ntp_status st = get_mirror(ctx, k, c, &m);
    if (st)
        return st;
    if (m->valid > c->len)
        m->valid = c->len;
    cudaError_t e = copy_span(s, c, m, m->valid, c->len, true);
    if (e != cudaSuccess)
        return ntp__cuda_rt(ctx, k, e, "copying the key/value cache to the device");
    m->valid = c->len;
    g.past = c->len;
    g.ct = cache_type(c->dtype);
    g.k = m->k;
    g.v = m->v;
    g.ks = m->ks;
    g.vs = m->vs;
    g.keep = g.mask ? m->keep : NULL;
    if ((st = kerr(ctx, k, ntp__cudak_kv_append(s->stream, kt, nd->in[1].d, nd->in[2].d, &g),
                   "the key/value append kernel")) ||
        (st = kerr(ctx, k,
                   ntp__cudak_kv_attention(s->stream, kt, nd->in[0].d, NULL, NULL, &g, s->ws,
                                           nd->out[0].d),
                   "the attention kernel")))
        return st;
    if ((e = copy_span(s, c, m, c->len, c->len + g.S, false)) != cudaSuccess)
        return ntp__cuda_rt(ctx, k, e, "copying the new keys and values to the host");
    m->valid = c->len + g.S;
    return NTP_STATUS_OK;
}

static ntp_status dec_run(ntp_ctx *ctx, cudab_state *s, cudab_node *nd, const ntp_kargs *k)
{
    dec_priv *p = nd->priv;
    cudak_type kt = ntp__cuda_k_type(k->in[0].dtype);
    switch ((int)k->node->op) {
    case NTP_OP_RMSNORM:
        return kerr(ctx, k,
                    ntp__cudak_rmsnorm(s->stream, kt, nd->in[0].d, nd->out[0].d, p->rows, p->len,
                                       ntp__cuda_weight_f32(nd, 0), p->eps),
                    "the rmsnorm kernel");
    case NTP_OP_ROPE:
        return kerr(ctx, k,
                    ntp__cudak_rope(s->stream, kt, nd->in[0].d, nd->in[1].d, p->idx64, nd->out[0].d,
                                    p->rows, p->len, p->hd, p->theta),
                    "the rope kernel");
    case NTP_OP_ARGMAX:
        return kerr(ctx, k,
                    ntp__cudak_argmax(s->stream, kt, nd->in[0].d, nd->out[0].d, p->rows, p->len),
                    "the argmax kernel");
    case NTP_OP_KV_ATTENTION: return kv_run(ctx, s, nd, k);
    }
    return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL, "not a decoder op");
}

static void dec_free(cudab_node *nd)
{
    free(nd->priv);
    nd->priv = NULL;
}

ntp_status ntp__cuda_decoder_prepare(ntp_ctx *ctx, cudab_state *s, ntp_kargs *k, cudab_node *nd)
{
    const ntp_node *n = k->node;
    dec_priv *p = calloc(1, sizeof *p);
    if (!p)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    nd->priv = p;
    nd->free_priv = dec_free;
    nd->run = dec_run;
    const ntp_shape *xs = &k->in[0].shape;
    if (!ntp__cuda_float_type(k->in[0].dtype) || xs->ndim < 1)
        return ntp__cuda_error(ctx, k, NTP_STATUS_UNSUPPORTED, "input stored as %s",
                               ntp_dtype_name(k->in[0].dtype));
    p->len = xs->dim[xs->ndim - 1];
    p->rows = p->len > 0 ? ntp_shape_numel(xs) / p->len : 0;
    switch ((int)n->op) {
    case NTP_OP_RMSNORM:
        if (k->n_w != 1 || ntp_shape_numel(&k->w[0].shape) != p->len ||
            k->out[0].dtype != k->in[0].dtype)
            return ntp__cuda_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                                   "the scale is not [%lld] or the output's type differs",
                                   (long long)p->len);
        p->eps = (float)n->a.epsilon;
        snprintf(nd->impl, sizeof nd->impl, "cuda:rmsnorm_kernel");
        return ntp__cuda_upload_weights(ctx, s, k, nd, true);
    case NTP_OP_ROPE:
        p->hd = n->a.head_dim;
        p->theta = n->a.theta;
        p->idx64 = k->in[1].dtype == NTP_DTYPE_I64;
        if (xs->ndim != 3 || p->hd < 2 || p->hd % 2 || p->len % p->hd ||
            ntp_shape_numel(&k->in[1].shape) != p->rows || k->out[0].dtype != k->in[0].dtype)
            return ntp__cuda_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                                   "[N,S,heads*head_dim] with [N,S] positions");
        snprintf(nd->impl, sizeof nd->impl, "cuda:rope_kernel");
        return NTP_STATUS_OK;
    case NTP_OP_ARGMAX:
        if (k->out[0].dtype != NTP_DTYPE_I32 || ntp_shape_numel(&k->out[0].shape) != p->rows)
            return ntp__cuda_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                                   "the output is not the input's rows as i32");
        snprintf(nd->impl, sizeof nd->impl, "cuda:argmax_kernel");
        return NTP_STATUS_OK;
    case NTP_OP_KV_ATTENTION: {
        cudak_kv *g = &p->g;
        g->N = xs->dim[0];
        g->S = xs->dim[1];
        g->H = n->a.heads;
        g->KVH = n->a.kv_heads > 0 ? n->a.kv_heads : g->H;
        if (xs->ndim != 3 || g->H <= 0 || xs->dim[2] % g->H || g->H % g->KVH)
            return ntp__cuda_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                                   "query [N,S,heads*hd] does not fit %lld heads on %lld",
                                   (long long)g->H, (long long)g->KVH);
        g->hd = xs->dim[2] / g->H;
        const ntp_shape *ks = &k->in[1].shape;
        if (ks->ndim != 3 || ks->dim[0] != g->N || ks->dim[1] != g->S ||
            ks->dim[2] != g->KVH * g->hd || !ntp_shape_equal(ks, &k->in[2].shape) ||
            (k->n_in == 4 && ntp_shape_numel(&k->in[3].shape) != g->N * g->S) ||
            k->in[1].dtype != k->in[0].dtype || k->in[2].dtype != k->in[0].dtype ||
            k->out[0].dtype != k->in[0].dtype)
            return ntp__cuda_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                                   "key and value [N,S,kv_heads*hd], the mask [N,S] and the "
                                   "query must agree");
        p->idx64 = k->n_in == 4 && k->in[3].dtype == NTP_DTYPE_I64;
        g->scale = (float)(1.0 / sqrt((double)g->hd));
        const ntp_kv_state *c = k->kv;
        g->L = c ? c->capacity : g->S;
        if (c &&
            (c->batch != g->N || c->kv_heads != g->KVH || c->head_dim != g->hd || c->capacity < 1))
            return ntp__cuda_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                                   "the key/value cache does not fit the layer");
        /* Scores: every query's row over the positions it may see. */
        nd->ws = (size_t)(g->N * g->H * g->S * g->L) * sizeof(float);
        nd->host_state = c != NULL;
        snprintf(nd->impl, sizeof nd->impl, "cuda:kv_attention_kernel%s",
                 c ? (c->dtype == NTP_DTYPE_F32 ? "+cache_f32" : "+cache") : "");
        return NTP_STATUS_OK;
    }
    }
    return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL, "not a decoder op");
}
