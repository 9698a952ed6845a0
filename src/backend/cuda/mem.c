/* Device memory of the CUDA backend: accounting, descriptors, weights, the
 * buffers of internal and staged tensors, and binding them into one arena
 * (cuda-impl.h describes the model). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/ctx-impl.h"
#include "core/numeric-impl.h"
#include "cuda-impl.h"

/* Device buffers start on 256-byte boundaries, as cudaMalloc's do: cuDNN
 * and cuBLAS pick vectorised kernels by the alignment of their pointers. */
#define CUDAB_ALIGN 256

static int64_t align_up(int64_t v)
{
    return (v + CUDAB_ALIGN - 1) / CUDAB_ALIGN * CUDAB_ALIGN;
}

bool ntp__cuda_float_type(ntp_dtype t)
{
    return t == NTP_DTYPE_F32 || t == NTP_DTYPE_F16 || t == NTP_DTYPE_BF16;
}

cudnnDataType_t ntp__cuda_dnn_type(ntp_dtype t)
{
    switch (t) {
    case NTP_DTYPE_F16: return CUDNN_DATA_HALF;
    case NTP_DTYPE_BF16: return CUDNN_DATA_BFLOAT16;
    case NTP_DTYPE_I8: return CUDNN_DATA_INT8;
    case NTP_DTYPE_U8: return CUDNN_DATA_UINT8;
    case NTP_DTYPE_I32: return CUDNN_DATA_INT32;
    case NTP_DTYPE_I64: return CUDNN_DATA_INT64;
    case NTP_DTYPE_F32:
    case NTP_DTYPE_COUNT: break;
    }
    return CUDNN_DATA_FLOAT;
}

cudaDataType_t ntp__cuda_blas_type(ntp_dtype t)
{
    switch (t) {
    case NTP_DTYPE_F16: return CUDA_R_16F;
    case NTP_DTYPE_BF16: return CUDA_R_16BF;
    case NTP_DTYPE_I8: return CUDA_R_8I;
    case NTP_DTYPE_F32:
    case NTP_DTYPE_U8:
    case NTP_DTYPE_I32:
    case NTP_DTYPE_I64:
    case NTP_DTYPE_COUNT: break;
    }
    return CUDA_R_32F;
}

cudak_type ntp__cuda_k_type(ntp_dtype t)
{
    return t == NTP_DTYPE_F16 ? CUDAK_F16 : t == NTP_DTYPE_BF16 ? CUDAK_BF16 : CUDAK_F32;
}

ntp_status ntp__cuda_desc(ntp_ctx *ctx, const ntp_kargs *k, cudnnTensorDescriptor_t *d, ntp_dtype t,
                          int nd, const int64_t *dims, const int64_t *strides)
{
    /* Most cuDNN calls want 4 or more dims: trailing 1s change nothing. */
    int dm[CUDNN_DIM_MAX], st[CUDNN_DIM_MAX];
    int n = nd < 4 ? 4 : nd;
    if (nd < 1 || nd > CUDNN_DIM_MAX)
        return ntp__cuda_error(ctx, k, NTP_STATUS_UNSUPPORTED,
                               "a tensor of rank %d (cuDNN takes 1 to %d)", nd, CUDNN_DIM_MAX);
    for (int i = 0; i < n; i++) {
        int64_t v = i < nd ? dims[i] : 1;
        if (v < 1 || v > 0x7fffffff)
            return ntp__cuda_error(ctx, k, NTP_STATUS_UNSUPPORTED,
                                   "dimension %lld does not fit cuDNN's int", (long long)v);
        dm[i] = (int)v;
    }
    int64_t acc = 1;
    for (int i = n - 1; i >= 0; i--) {
        int64_t v = strides && i < nd ? strides[i] : acc;
        if (v < 0 || v > 0x7fffffff)
            return ntp__cuda_error(ctx, k, NTP_STATUS_UNSUPPORTED,
                                   "stride %lld does not fit cuDNN's int", (long long)v);
        st[i] = (int)v;
        acc *= dm[i];
    }
    cudnnStatus_t e = cudnnCreateTensorDescriptor(d);
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnSetTensorNdDescriptor(*d, ntp__cuda_dnn_type(t), n, dm, st);
    if (e != CUDNN_STATUS_SUCCESS) {
        if (*d)
            cudnnDestroyTensorDescriptor(*d);
        *d = NULL;
        return ntp__cuda_dnn(ctx, k, e, "tensor descriptor");
    }
    return NTP_STATUS_OK;
}

ntp_status ntp__cuda_alloc(ntp_ctx *ctx, cudab_state *s, const ntp_kargs *k, void **p,
                           int64_t bytes, const char *what)
{
    *p = NULL;
    if (bytes <= 0)
        return NTP_STATUS_OK;
    cudaError_t e = cudaMalloc(p, (size_t)bytes);
    if (e != cudaSuccess) {
        *p = NULL;
        cudaGetLastError(); /* an allocation failure is not sticky: clear it */
        size_t free_b = 0, total = 0;
        cudaMemGetInfo(&free_b, &total);
        return ntp__cuda_error(
            ctx, k,
            e == cudaErrorMemoryAllocation ? NTP_STATUS_OUT_OF_MEMORY : NTP_STATUS_BACKEND_ERROR,
            "cudaMalloc of %.1f MiB for %s: %s (%.1f of %.1f MiB free)", (double)bytes / 1048576.0,
            what, cudaGetErrorString(e), (double)free_b / 1048576.0, (double)total / 1048576.0);
    }
    s->held += bytes;
    if (s->held > s->peak)
        s->peak = s->held;
    return NTP_STATUS_OK;
}

void ntp__cuda_free(cudab_state *s, void *p, int64_t bytes)
{
    if (!p)
        return;
    cudaFree(p);
    s->held -= bytes;
}

ntp_status ntp__cuda_upload(ntp_ctx *ctx, cudab_state *s, const ntp_kargs *k, void **d,
                            const void *host, int64_t bytes, const char *what)
{
    ntp_status st = ntp__cuda_alloc(ctx, s, k, d, bytes, what);
    if (st || bytes <= 0)
        return st;
    cudaError_t e = cudaMemcpy(*d, host, (size_t)bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
        ntp__cuda_free(s, *d, bytes);
        *d = NULL;
        return ntp__cuda_rt(ctx, k, e, "uploading weights");
    }
    return NTP_STATUS_OK;
}

int ntp__cuda_request(cudab_state *s, int64_t bytes, int birth, int death)
{
    if (s->n_bufs == s->cap_bufs) {
        int cap = s->cap_bufs ? 2 * s->cap_bufs : 64;
        cudab_buf *b = realloc(s->bufs, (size_t)cap * sizeof *b);
        if (!b)
            return -1;
        s->bufs = b;
        s->cap_bufs = cap;
    }
    /* Partial runs (--only) run the layers before the range once and then
     * repeat the range: a tensor made before it and read inside it must
     * outlive every repetition, as the engine's host slots do. */
    if (birth < s->first && death >= s->first)
        death = 0x3fffffff;
    cudab_buf *b = &s->bufs[s->n_bufs];
    b->bytes = align_up(bytes > 0 ? bytes : 1);
    b->birth = birth;
    b->death = death < birth ? birth : death;
    b->offset = -1;
    return s->n_bufs++;
}

/* The last execution position that reads tensor t. */
static int last_reader(const ntp_graph *g, int t, int pos)
{
    int last = pos;
    for (int i = 0; i < g->n_nodes; i++) {
        const ntp_node *n = &g->nodes[i];
        for (int j = 0; j < n->n_in; j++)
            if (n->in[j] == t && g->position[i] > last)
                last = g->position[i];
    }
    return last;
}

static ntp_status track_graph(ntp_ctx *ctx, cudab_state *s, const ntp_kargs *k)
{
    if (s->g == k->g)
        return NTP_STATUS_OK;
    if (s->bound || s->n_nodes > 0)
        return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL,
                               "one backend state was given layers of two graphs");
    free(s->table);
    s->table = calloc((size_t)k->g->n_tensors + 1, sizeof *s->table);
    if (!s->table) {
        s->g = NULL;
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    }
    s->g = k->g;
    s->n_tensors = k->g->n_tensors;
    return NTP_STATUS_OK;
}

static int64_t buf_bytes(const ntp_buf *b)
{
    int64_t n = ntp_shape_numel(&b->shape), r;
    return n >= 0 && ntp__mul_ok(n, (int64_t)ntp_dtype_size(b->dtype), &r) ? r : -1;
}

ntp_status ntp__cuda_plan_io(ntp_ctx *ctx, cudab_state *s, ntp_kargs *k, cudab_node *nd)
{
    const ntp_graph *g = k->g;
    if (!g)
        return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL, "kernel arguments without a graph");
    ntp_status st = track_graph(ctx, s, k);
    if (st)
        return st;
    if (s->bound)
        return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL,
                               "a layer was prepared after the first execute");
    const ntp_node *n = k->node;
    int pos = g->position[n - g->nodes];
    nd->pos = pos;
    for (int i = 0; i < k->n_in; i++) {
        cudab_io *io = &nd->in[i];
        io->bytes = buf_bytes(&k->in[i]);
        int t = n->in[i];
        if (io->bytes < 0)
            return ntp__cuda_error(ctx, k, NTP_STATUS_OVERFLOW, "input %d is too large", i);
        if (k->in_internal[i]) {
            const cudab_tensor *rec = t >= 0 && t < s->n_tensors ? s->table[t] : NULL;
            if (!rec || rec->dtype != k->in[i].dtype)
                return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL,
                                       "internal input '%s' has no device buffer of type %s",
                                       g->tensors[t].name, ntp_dtype_name(k->in[i].dtype));
            io->buf = rec->buf;
            io->staged = false;
        } else {
            io->staged = true;
            io->buf = ntp__cuda_request(s, io->bytes, pos, pos);
        }
        if (io->buf < 0)
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    }
    /* The other operand of each folded binary layer: on the device when its
     * producer here kept it internal, else staged from the host slot. */
    for (int f = 0; f < k->n_fused; f++) {
        cudab_io *io = &nd->post[f];
        io->buf = -1;
        if (!k->post_in[f].data && k->post_in[f].shape.ndim == 0)
            continue;
        const ntp_node *c = k->fused[f];
        int prev = f == 0 ? n->out[0] : k->fused[f - 1]->out[0], t = -1;
        for (int j = 0; j < c->n_in; j++)
            if (c->in[j] != prev)
                t = c->in[j];
        if (t < 0)
            continue;
        io->bytes = buf_bytes(&k->post_in[f]);
        if (io->bytes < 0)
            return ntp__cuda_error(ctx, k, NTP_STATUS_OVERFLOW, "operand of '%s' is too large",
                                   c->name);
        const cudab_tensor *rec = s->table[t];
        if (rec && rec->dtype == k->post_in[f].dtype) {
            io->buf = rec->buf;
            io->staged = false;
        } else {
            io->staged = true;
            io->buf = ntp__cuda_request(s, io->bytes, pos, pos);
            if (io->buf < 0)
                return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
        }
    }
    const ntp_node *tail = k->n_fused > 0 ? k->fused[k->n_fused - 1] : n;
    for (int i = 0; i < k->n_out; i++) {
        cudab_io *io = &nd->out[i];
        int t = tail->out[i];
        io->bytes = buf_bytes(&k->out[i]);
        if (io->bytes < 0)
            return ntp__cuda_error(ctx, k, NTP_STATUS_OVERFLOW, "output %d is too large", i);
        if (k->out_internal[i]) {
            io->staged = false;
            io->buf = ntp__cuda_request(s, io->bytes, pos, last_reader(g, t, pos));
            if (io->buf < 0)
                return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
            nd->rec[i].buf = io->buf;
            nd->rec[i].dtype = k->out[i].dtype;
            nd->has_rec[i] = true;
            s->table[t] = &nd->rec[i];
            if (k->out_layout[i])
                *k->out_layout[i] = &nd->rec[i];
        } else {
            io->staged = true;
            io->buf = ntp__cuda_request(s, io->bytes, pos, pos);
            if (io->buf < 0)
                return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
        }
    }
    return NTP_STATUS_OK;
}

/* Rank-1 weights as f32 (biases and normalisation parameters, which the
 * kernels read in f32 whatever the storage type). */
static bool as_f32(const ntp_buf *w, float *dst, int64_t n)
{
    switch (w->dtype) {
    case NTP_DTYPE_F32: memcpy(dst, w->data, (size_t)n * sizeof(float)); return true;
    case NTP_DTYPE_F16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = ntp__f16_to_f32(((const uint16_t *)w->data)[i]);
        return true;
    case NTP_DTYPE_BF16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = ntp__bf16_to_f32(((const uint16_t *)w->data)[i]);
        return true;
    case NTP_DTYPE_I8:
    case NTP_DTYPE_U8:
    case NTP_DTYPE_I32:
    case NTP_DTYPE_I64:
    case NTP_DTYPE_COUNT: break;
    }
    return false;
}

ntp_status ntp__cuda_upload_weights(ntp_ctx *ctx, cudab_state *s, const ntp_kargs *k,
                                    cudab_node *nd, bool f32_vectors)
{
    int64_t off[NTP_MAX_WEIGHTS], total = 0, size[NTP_MAX_WEIGHTS];
    bool conv[NTP_MAX_WEIGHTS];
    for (int i = 0; i < k->n_w; i++) {
        int64_t n = ntp_shape_numel(&k->w[i].shape);
        conv[i] = f32_vectors && k->w[i].shape.ndim == 1 && k->w[i].dtype != NTP_DTYPE_F32;
        size[i] = n * (int64_t)(conv[i] ? sizeof(float) : ntp_dtype_size(k->w[i].dtype));
        if (n < 0 || !k->w[i].data)
            return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL, "weight %d has no data", i);
        off[i] = total;
        total += align_up(size[i]);
    }
    if (total == 0)
        return NTP_STATUS_OK;
    char *host = malloc((size_t)total);
    if (!host)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda: out of memory staging weights");
    for (int i = 0; i < k->n_w; i++) {
        if (conv[i]) {
            if (!as_f32(&k->w[i], (float *)(void *)(host + off[i]),
                        ntp_shape_numel(&k->w[i].shape))) {
                free(host);
                return ntp__cuda_error(ctx, k, NTP_STATUS_UNSUPPORTED, "weight %d is stored as %s",
                                       i, ntp_dtype_name(k->w[i].dtype));
            }
        } else {
            memcpy(host + off[i], k->w[i].data, (size_t)size[i]);
        }
    }
    ntp_status st = ntp__cuda_upload(ctx, s, k, &nd->w, host, total, "weights");
    free(host);
    if (st)
        return st;
    nd->w_bytes = total;
    s->weight_bytes += total;
    for (int i = 0; i < k->n_w; i++)
        nd->wp[i] = (char *)nd->w + off[i];
    return NTP_STATUS_OK;
}

const float *ntp__cuda_weight_f32(const cudab_node *nd, int i)
{
    return i >= 0 && i < NTP_MAX_WEIGHTS ? nd->wp[i] : NULL;
}

/* Pin the pages under a host buffer the layers copy from or to, so that
 * the copy is truly asynchronous and can be captured in a graph. The
 * engine's arena reuses memory, so buffers overlap: a page may be
 * registered only once, so only the pages no earlier range covers are
 * registered, and the ranges are kept sorted and disjoint. */
bool ntp__cuda_pin(cudab_state *s, const void *p, int64_t bytes)
{
    if (!p || bytes <= 0)
        return true;
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t pg = page > 0 ? (uintptr_t)page : 4096;
    uintptr_t lo = (uintptr_t)p / pg * pg,
              hi = ((uintptr_t)p + (uintptr_t)bytes + pg - 1) / pg * pg;
    while (lo < hi) {
        /* The first registered range that ends after lo. */
        int i = 0;
        while (i < s->n_pinned && s->pin_hi[i] <= lo)
            i++;
        uintptr_t end = i < s->n_pinned && s->pin_lo[i] < hi ? s->pin_lo[i] : hi;
        if (i < s->n_pinned && s->pin_lo[i] <= lo) {
            lo = s->pin_hi[i]; /* already pinned up to there */
            continue;
        }
        if (s->n_pinned == s->cap_pinned) {
            int cap = s->cap_pinned ? 2 * s->cap_pinned : 16;
            uintptr_t *a = realloc(s->pin_lo, (size_t)cap * sizeof *a);
            if (a)
                s->pin_lo = a;
            uintptr_t *b = a ? realloc(s->pin_hi, (size_t)cap * sizeof *b) : NULL;
            if (b)
                s->pin_hi = b;
            if (!a || !b)
                return false;
            s->cap_pinned = cap;
        }
        if (cudaHostRegister((void *)lo, (size_t)(end - lo), cudaHostRegisterDefault) !=
            cudaSuccess) {
            cudaGetLastError();
            return false;
        }
        memmove(&s->pin_lo[i + 1], &s->pin_lo[i], (size_t)(s->n_pinned - i) * sizeof *s->pin_lo);
        memmove(&s->pin_hi[i + 1], &s->pin_hi[i], (size_t)(s->n_pinned - i) * sizeof *s->pin_hi);
        s->pin_lo[i] = lo;
        s->pin_hi[i] = end;
        s->n_pinned++;
        lo = end;
    }
    return true;
}

ntp_status ntp__cuda_bind(ntp_ctx *ctx, cudab_state *s, const ntp_kargs *k)
{
    if (s->bound)
        return NTP_STATUS_OK;
    int n = s->n_bufs;
    /* calloc: gcc -O2 cannot see that the loop below fills them. */
    int64_t *size = calloc((size_t)n + 1, sizeof *size), *off = calloc((size_t)n + 1, sizeof *off);
    int *birth = calloc((size_t)n + 1, sizeof *birth),
        *death = calloc((size_t)n + 1, sizeof *death);
    bool ok = size && off && birth && death;
    for (int i = 0; ok && i < n; i++) {
        size[i] = s->bufs[i].bytes;
        birth[i] = s->bufs[i].birth;
        death[i] = s->bufs[i].death;
        off[i] = -1;
    }
    int64_t arena = 0;
    ok = ok && ntp__plan_intervals(n, size, birth, death, off, &arena);
    for (int i = 0; ok && i < n; i++)
        s->bufs[i].offset = off[i];
    free(size);
    free(off);
    free(birth);
    free(death);
    if (!ok)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY,
                          "cuda: out of memory planning device buffers");
    ntp_status st = ntp__cuda_alloc(ctx, s, k, &s->arena, arena, "the activation arena");
    if (st)
        return st;
    s->arena_bytes = arena;
    if ((st = ntp__cuda_alloc(ctx, s, k, &s->ws, (int64_t)s->ws_bytes, "the workspace"))) {
        ntp__cuda_free(s, s->arena, s->arena_bytes);
        s->arena = NULL;
        s->arena_bytes = 0;
        return st;
    }
    for (int i = 0; i < s->n_nodes; i++) {
        cudab_node *nd = s->nodes[i];
        cudab_io *ios[] = {nd->in, nd->out, nd->post};
        int counts[] = {NTP_MAX_INPUTS, NTP_MAX_OUTPUTS, NTP_MAX_FUSED};
        for (int a = 0; a < 3; a++)
            for (int j = 0; j < counts[a]; j++) {
                cudab_io *io = &ios[a][j];
                io->d = io->bytes > 0 && io->buf >= 0 && io->buf < s->n_bufs
                            ? (char *)s->arena + s->bufs[io->buf].offset
                            : NULL;
            }
    }
    s->bound = true;
    return NTP_STATUS_OK;
}

void ntp__cuda_unbind(cudab_state *s)
{
    for (int i = 0; i < s->n_pinned; i++)
        cudaHostUnregister((void *)s->pin_lo[i]);
    free(s->pin_lo);
    free(s->pin_hi);
    s->pin_lo = s->pin_hi = NULL;
    s->n_pinned = s->cap_pinned = 0;
    ntp__cuda_free(s, s->arena, s->arena_bytes);
    ntp__cuda_free(s, s->ws, (int64_t)s->ws_bytes);
    s->arena = s->ws = NULL;
    s->arena_bytes = 0;
    s->bound = false;
}
