/* The CUDA backend's own kernels (cuda-kernels.h says what each computes
 * and why it exists). Every kernel loads f32, f16 or bf16, computes in f32
 * registers and rounds once when it stores, like the reference backend's
 * emulation of reduced precisions. Loops are grid-strided so any size fits
 * the launch limits; rows (softmax, layer normalisation) get one block. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "cuda-kernels.h"

namespace {

const int kThreads = 256;

template <typename T> struct io;
template <> struct io<float> {
    __device__ static float ld(const float *p, int64_t i)
    {
        return p[i];
    }
    __device__ static void st(float *p, int64_t i, float v)
    {
        p[i] = v;
    }
};
template <> struct io<__half> {
    __device__ static float ld(const __half *p, int64_t i)
    {
        return __half2float(p[i]);
    }
    __device__ static void st(__half *p, int64_t i, float v)
    {
        p[i] = __float2half_rn(v);
    }
};
template <> struct io<__nv_bfloat16> {
    __device__ static float ld(const __nv_bfloat16 *p, int64_t i)
    {
        return __bfloat162float(p[i]);
    }
    __device__ static void st(__nv_bfloat16 *p, int64_t i, float v)
    {
        p[i] = __float2bfloat16_rn(v);
    }
};

/* Blocks for a grid-strided loop over n elements. */
unsigned blocks_for(int64_t n)
{
    int64_t b = (n + kThreads - 1) / kThreads;
    if (b < 1)
        b = 1;
    return (unsigned)(b > 65536 ? 65536 : b);
}

/* One case per row of CUDAK_FN_TABLE (cuda-kernels.h). */
__device__ float apply_fn(int fn, float a, float b, float x)
{
    (void)a;
    (void)b;
    switch (fn) {
#define CUDAK_FN_CASE_(name, expr) \
    case CUDAK_##name: return expr;
        CUDAK_FN_TABLE(CUDAK_FN_CASE_)
#undef CUDAK_FN_CASE_
    default: return x;
    }
}

__device__ float apply_op(int op, float x, float y)
{
    switch (op) {
    case CUDAK_ADD: return x + y;
    case CUDAK_MUL: return x * y;
    case CUDAK_SUB: return x - y;
    case CUDAK_DIV: return x / y;
    /* numpy.maximum / minimum: NaN wins. */
    case CUDAK_MAX: return isnan(x) || isnan(y) ? x + y : fmaxf(x, y);
    case CUDAK_MIN: return isnan(x) || isnan(y) ? x + y : fminf(x, y);
    default: return x;
    }
}

template <typename T> __global__ void epilogue_k(const T *x, T *y, int64_t n, cudak_epilogue e)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float v = io<T>::ld(x, i);
        if (e.scale || e.bias) {
            int64_t c = (i / e.inner) % e.channels;
            if (e.scale)
                v *= e.scale[c];
            if (e.bias)
                v += e.bias[c];
        }
        for (int k = 0; k < e.n_post; k++) {
            const cudak_post &p = e.post[k];
            v = p.is_binary ? apply_op(p.fn, v, io<T>::ld((const T *)p.operand, i))
                            : apply_fn(p.fn, p.a, p.b, v);
        }
        io<T>::st(y, i, v);
    }
}

/* Dims and per-operand strides, passed by value. */
struct geom {
    int nd;
    int64_t dims[CUDAK_MAX_DIMS];
    int64_t sa[CUDAK_MAX_DIMS];
    int64_t sb[CUDAK_MAX_DIMS];
};

__device__ void offsets(const geom &g, int64_t i, int64_t *oa, int64_t *ob)
{
    int64_t a = 0, b = 0;
    for (int d = g.nd - 1; d >= 0; d--) {
        int64_t q = i % g.dims[d];
        i /= g.dims[d];
        a += q * g.sa[d];
        b += q * g.sb[d];
    }
    *oa = a;
    *ob = b;
}

template <typename T>
__global__ void binary_k(const T *a, const T *b, T *y, int64_t n, geom g, int op)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t oa, ob;
        offsets(g, i, &oa, &ob);
        io<T>::st(y, i, apply_op(op, io<T>::ld(a, oa), io<T>::ld(b, ob)));
    }
}

template <typename E> __global__ void gather_k(const E *x, E *y, int64_t n, geom g)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ox, unused;
        offsets(g, i, &ox, &unused);
        y[i] = x[ox];
    }
}

/* g.dims: output dims; g.sa: input dims; g.sb: begin pads. */
template <typename T>
__global__ void pad_k(const T *x, T *y, int64_t n, geom g, int mode, float value)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i, src = 0, stride = 1;
        bool outside = false;
        for (int d = g.nd - 1; d >= 0; d--) {
            int64_t q = r % g.dims[d] - g.sb[d], in = g.sa[d];
            r /= g.dims[d];
            if (q < 0 || q >= in) {
                if (mode == 0) {
                    outside = true;
                } else if (mode == 1 && in > 1) {
                    /* Reflection without repeating the edge: period 2(n-1),
                     * as the reference backend. */
                    int64_t period = 2 * (in - 1);
                    q %= period;
                    if (q < 0)
                        q += period;
                    if (q >= in)
                        q = period - q;
                } else {
                    q = q < 0 ? 0 : in - 1;
                }
            }
            src += q * stride;
            stride *= in;
        }
        io<T>::st(y, i, outside ? value : io<T>::ld(x, src));
    }
}

__device__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* The sum (or maximum) over the block, returned to every thread. The
 * leading barrier keeps a second call from overwriting the shared word
 * before every thread has read the first one's result. */
__device__ float block_reduce(float v, bool max)
{
    __shared__ float sh[32];
    v = max ? warp_max(v) : warp_sum(v);
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    __syncthreads();
    if (lane == 0)
        sh[w] = v;
    __syncthreads();
    if (w == 0) {
        v = lane < nw ? sh[lane] : (max ? -INFINITY : 0.0f);
        v = max ? warp_max(v) : warp_sum(v);
        if (lane == 0)
            sh[0] = v;
    }
    __syncthreads();
    return sh[0];
}

template <typename T>
__global__ void layernorm_k(const T *x, T *y, int64_t D, const float *gamma, const float *beta,
                            float eps)
{
    const T *xr = x + (int64_t)blockIdx.x * D;
    T *yr = y + (int64_t)blockIdx.x * D;
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x)
        s += io<T>::ld(xr, i);
    float mean = block_reduce(s, false) / (float)D;
    float v = 0.0f;
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
        float d = io<T>::ld(xr, i) - mean;
        v += d * d;
    }
    float inv = rsqrtf(block_reduce(v, false) / (float)D + eps);
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x)
        io<T>::st(yr, i, (io<T>::ld(xr, i) - mean) * inv * gamma[i] + beta[i]);
}

template <typename T>
__global__ void softmax_k(const T *x, T *y, int64_t len, int64_t inner, float scale,
                          int64_t causal_s)
{
    int64_t r = blockIdx.x, o = r / inner, in = r % inner;
    int64_t base = o * len * inner + in;
    /* Keys after the query are masked in a causal attention. */
    int64_t valid = causal_s > 0 ? r % causal_s + 1 : len;
    if (valid > len)
        valid = len;
    float m = -INFINITY;
    for (int64_t j = threadIdx.x; j < valid; j += blockDim.x)
        m = fmaxf(m, scale * io<T>::ld(x, base + j * inner));
    m = block_reduce(m, true);
    float s = 0.0f;
    for (int64_t j = threadIdx.x; j < valid; j += blockDim.x)
        s += expf(scale * io<T>::ld(x, base + j * inner) - m);
    s = block_reduce(s, false);
    /* A row that is all -Inf (everything masked) gives zeros, not NaN. */
    bool empty = m == -INFINITY;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
        int64_t at = base + j * inner;
        io<T>::st(y, at, j < valid && !empty ? expf(scale * io<T>::ld(x, at) - m) / s : 0.0f);
    }
}

template <typename T>
__global__ void embedding_k(const void *idx, int idx64, const T *table, int64_t vocab,
                            int64_t units, int64_t n, T *y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n * units;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / units, c = i % units;
        int64_t k = idx64 ? ((const int64_t *)idx)[r] : (int64_t)((const int32_t *)idx)[r];
        y[i] = k >= 0 && k < vocab ? table[k * units + c] : T(0.0f);
    }
}

/* Taps of a window along one dim: the first inside the input, how many
 * are inside it, and how many inside the padded input. */
__device__ void taps(int64_t o, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, int64_t in,
                     int64_t *first, int64_t *real, int64_t *padded)
{
    int64_t start = o * s - pb, lo = -1, nr = 0, np = 0;
    for (int64_t q = 0; q < k; q++) {
        int64_t p = start + q * d;
        if (p < in + pe)
            np++;
        if (p >= 0 && p < in) {
            if (lo < 0)
                lo = q;
            nr++;
        }
    }
    *first = start + (lo < 0 ? 0 : lo) * d;
    *real = nr;
    *padded = np;
}

template <typename T> __global__ void pool_k(const T *x, T *y, cudak_pool g)
{
    int64_t out_sz = g.out[0] * g.out[1] * g.out[2], in_sz = g.in[0] * g.in[1] * g.in[2];
    int64_t n = g.planes * out_sz;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t pl = i / out_sz, r = i % out_sz;
        int64_t ow = r % g.out[2], oh = (r / g.out[2]) % g.out[1], od = r / (g.out[2] * g.out[1]);
        int64_t f0, f1, f2, r0, r1, r2, p0, p1, p2;
        taps(od, g.k[0], g.s[0], g.d[0], g.pb[0], g.pe[0], g.in[0], &f0, &r0, &p0);
        taps(oh, g.k[1], g.s[1], g.d[1], g.pb[1], g.pe[1], g.in[1], &f1, &r1, &p1);
        taps(ow, g.k[2], g.s[2], g.d[2], g.pb[2], g.pe[2], g.in[2], &f2, &r2, &p2);
        const T *xp = x + pl * in_sz;
        float m = -INFINITY, sum = 0.0f;
        for (int64_t a = 0; a < r0; a++)
            for (int64_t b = 0; b < r1; b++) {
                int64_t row = ((f0 + a * g.d[0]) * g.in[1] + f1 + b * g.d[1]) * g.in[2];
                for (int64_t c = 0; c < r2; c++) {
                    float v = io<T>::ld(xp, row + f2 + c * g.d[2]);
                    if (!isnan(m) && (v > m || isnan(v)))
                        m = v;
                    sum += v;
                }
            }
        int64_t real = r0 * r1 * r2, div = g.include_pad ? p0 * p1 * p2 : real;
        io<T>::st(y, i, g.is_max ? m : real > 0 && div > 0 ? sum / (float)div : 0.0f);
    }
}

template <typename S, typename D> __global__ void convert_k(const S *x, D *y, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        io<D>::st(y, i, io<S>::ld(x, i));
}

int last_error(void)
{
    return (int)cudaGetLastError();
}

geom make_geom(int nd, const int64_t *dims, const int64_t *sa, const int64_t *sb, int64_t *n)
{
    geom g;
    g.nd = nd;
    *n = 1;
    for (int d = 0; d < CUDAK_MAX_DIMS; d++) {
        g.dims[d] = d < nd ? dims[d] : 1;
        g.sa[d] = d < nd && sa ? sa[d] : 0;
        g.sb[d] = d < nd && sb ? sb[d] : 0;
        if (d < nd)
            *n *= dims[d];
    }
    return g;
}

template <typename T>
int launch_epilogue(cudaStream_t s, const void *x, void *y, int64_t n, const cudak_epilogue *e)
{
    epilogue_k<T><<<blocks_for(n), kThreads, 0, s>>>((const T *)x, (T *)y, n, *e);
    return last_error();
}

template <typename T>
int launch_binary(cudaStream_t s, const void *a, const void *b, void *y, int64_t n, geom g, int op)
{
    binary_k<T><<<blocks_for(n), kThreads, 0, s>>>((const T *)a, (const T *)b, (T *)y, n, g, op);
    return last_error();
}

template <typename T>
int launch_pad(cudaStream_t s, const void *x, void *y, int64_t n, geom g, int mode, float value)
{
    pad_k<T><<<blocks_for(n), kThreads, 0, s>>>((const T *)x, (T *)y, n, g, mode, value);
    return last_error();
}

template <typename T>
int launch_layernorm(cudaStream_t s, const void *x, void *y, int64_t rows, int64_t D,
                     const float *gamma, const float *beta, float eps)
{
    layernorm_k<T><<<(unsigned)rows, kThreads, 0, s>>>((const T *)x, (T *)y, D, gamma, beta, eps);
    return last_error();
}

template <typename T>
int launch_softmax(cudaStream_t s, const void *x, void *y, int64_t rows, int64_t len, int64_t inner,
                   float scale, int64_t causal_s)
{
    softmax_k<T>
        <<<(unsigned)rows, kThreads, 0, s>>>((const T *)x, (T *)y, len, inner, scale, causal_s);
    return last_error();
}

template <typename T>
int launch_embedding(cudaStream_t s, const void *idx, int idx64, const void *table, int64_t vocab,
                     int64_t units, int64_t n, void *y)
{
    embedding_k<T><<<blocks_for(n * units), kThreads, 0, s>>>(idx, idx64, (const T *)table, vocab,
                                                              units, n, (T *)y);
    return last_error();
}

template <typename T> int launch_pool(cudaStream_t s, const cudak_pool *g, const void *x, void *y)
{
    int64_t n = g->planes * g->out[0] * g->out[1] * g->out[2];
    pool_k<T><<<blocks_for(n), kThreads, 0, s>>>((const T *)x, (T *)y, *g);
    return last_error();
}

template <typename S>
int launch_convert_from(cudaStream_t s, cudak_type to, const void *x, void *y, int64_t n)
{
    unsigned b = blocks_for(n);
    switch (to) {
    case CUDAK_F32: convert_k<S, float><<<b, kThreads, 0, s>>>((const S *)x, (float *)y, n); break;
    case CUDAK_F16:
        convert_k<S, __half><<<b, kThreads, 0, s>>>((const S *)x, (__half *)y, n);
        break;
    case CUDAK_BF16:
        convert_k<S, __nv_bfloat16><<<b, kThreads, 0, s>>>((const S *)x, (__nv_bfloat16 *)y, n);
        break;
    }
    return last_error();
}

} // namespace

/* Type dispatch: F is a launcher template, called with the element type. */
// clang-format off
#define NTP_CUDAK_DISPATCH(t, F, ...)                                                    \
    ((t) == CUDAK_F32 ? F<float>(__VA_ARGS__)                                            \
     : (t) == CUDAK_F16 ? F<__half>(__VA_ARGS__)                                         \
                        : F<__nv_bfloat16>(__VA_ARGS__))
// clang-format on

extern "C" int ntp__cudak_epilogue(void *stream, cudak_type t, const void *x, void *y, int64_t n,
                                   const cudak_epilogue *e)
{
    if (n <= 0)
        return 0;
    return NTP_CUDAK_DISPATCH(t, launch_epilogue, (cudaStream_t)stream, x, y, n, e);
}

extern "C" int ntp__cudak_binary(void *stream, cudak_type t, cudak_op op, int nd,
                                 const int64_t *dims, const void *a, const int64_t *astride,
                                 const void *b, const int64_t *bstride, void *y)
{
    if (nd < 0 || nd > CUDAK_MAX_DIMS)
        return (int)cudaErrorInvalidValue;
    int64_t n;
    geom g = make_geom(nd, dims, astride, bstride, &n);
    if (n <= 0)
        return 0;
    return NTP_CUDAK_DISPATCH(t, launch_binary, (cudaStream_t)stream, a, b, y, n, g, (int)op);
}

extern "C" int ntp__cudak_gather(void *stream, size_t esize, int nd, const int64_t *dims,
                                 const void *x, const int64_t *xstride, void *y)
{
    if (nd < 0 || nd > CUDAK_MAX_DIMS)
        return (int)cudaErrorInvalidValue;
    int64_t n;
    geom g = make_geom(nd, dims, xstride, NULL, &n);
    if (n <= 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned b = blocks_for(n);
    switch (esize) {
    case 1: gather_k<uint8_t><<<b, kThreads, 0, s>>>((const uint8_t *)x, (uint8_t *)y, n, g); break;
    case 2:
        gather_k<uint16_t><<<b, kThreads, 0, s>>>((const uint16_t *)x, (uint16_t *)y, n, g);
        break;
    case 4:
        gather_k<uint32_t><<<b, kThreads, 0, s>>>((const uint32_t *)x, (uint32_t *)y, n, g);
        break;
    case 8:
        gather_k<uint64_t><<<b, kThreads, 0, s>>>((const uint64_t *)x, (uint64_t *)y, n, g);
        break;
    default: return (int)cudaErrorInvalidValue;
    }
    return last_error();
}

extern "C" int ntp__cudak_pad(void *stream, cudak_type t, int nd, const int64_t *in_dims,
                              const int64_t *out_dims, const int64_t *begin, int mode, float value,
                              const void *x, void *y)
{
    if (nd < 1 || nd > CUDAK_MAX_DIMS)
        return (int)cudaErrorInvalidValue;
    int64_t n;
    geom g = make_geom(nd, out_dims, in_dims, begin, &n);
    if (n <= 0)
        return 0;
    return NTP_CUDAK_DISPATCH(t, launch_pad, (cudaStream_t)stream, x, y, n, g, mode, value);
}

extern "C" int ntp__cudak_layernorm(void *stream, cudak_type t, const void *x, void *y,
                                    int64_t rows, int64_t D, const float *gamma, const float *beta,
                                    float eps)
{
    if (rows <= 0 || D <= 0)
        return 0;
    if (rows > 0x7fffffff)
        return (int)cudaErrorInvalidConfiguration;
    return NTP_CUDAK_DISPATCH(t, launch_layernorm, (cudaStream_t)stream, x, y, rows, D, gamma, beta,
                              eps);
}

extern "C" int ntp__cudak_softmax(void *stream, cudak_type t, const void *x, void *y, int64_t outer,
                                  int64_t len, int64_t inner, float scale, int64_t causal_s)
{
    int64_t rows = outer * inner;
    if (rows <= 0 || len <= 0)
        return 0;
    if (rows > 0x7fffffff || (causal_s > 0 && inner != 1))
        return (int)cudaErrorInvalidConfiguration;
    return NTP_CUDAK_DISPATCH(t, launch_softmax, (cudaStream_t)stream, x, y, rows, len, inner,
                              scale, causal_s);
}

extern "C" int ntp__cudak_embedding(void *stream, cudak_type t, const void *idx, int idx64,
                                    const void *table, int64_t vocab, int64_t units, int64_t n,
                                    void *y)
{
    if (n <= 0 || units <= 0)
        return 0;
    return NTP_CUDAK_DISPATCH(t, launch_embedding, (cudaStream_t)stream, idx, idx64, table, vocab,
                              units, n, y);
}

extern "C" int ntp__cudak_pool(void *stream, cudak_type t, const cudak_pool *g, const void *x,
                               void *y)
{
    if (g->planes <= 0)
        return 0;
    return NTP_CUDAK_DISPATCH(t, launch_pool, (cudaStream_t)stream, g, x, y);
}

extern "C" int ntp__cudak_convert(void *stream, cudak_type from, cudak_type to, const void *x,
                                  void *y, int64_t n)
{
    if (n <= 0)
        return 0;
    return NTP_CUDAK_DISPATCH(from, launch_convert_from, (cudaStream_t)stream, to, x, y, n);
}

extern "C" int ntp__cudak_probe(void)
{
    cudaFuncAttributes attr;
    return (int)cudaFuncGetAttributes(&attr, (const void *)epilogue_k<float>);
}

/* --- decoder ops (docs/decoders.md) ----------------------------------------------------
 *
 * The reference kernels' arithmetic (ref-decoder.c), one block per row or
 * per query: rmsnorm's sum of squares and rope's angles as the reference
 * computes them (angles and their sines in double), kv_attention's scores
 * in f32 with the softmax's maximum and sum over the block. */

namespace {

/* The cache's element c of a row with scale sc (i8), widened to f32. */
__device__ float ld_cache(cudak_cache ct, const void *p, int64_t i, float sc)
{
    switch (ct) {
    case CUDAK_CACHE_F16: return __half2float(((const __half *)p)[i]);
    case CUDAK_CACHE_BF16: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    case CUDAK_CACHE_I8: return (float)((const int8_t *)p)[i] * sc;
    case CUDAK_CACHE_F32: break;
    }
    return ((const float *)p)[i];
}

__device__ bool mask_at(const void *m, int mask64, int64_t i)
{
    return mask64 ? ((const int64_t *)m)[i] != 0 : ((const int32_t *)m)[i] != 0;
}

template <typename T>
__global__ void rmsnorm_k(const T *x, T *y, int64_t D, const float *scale, float eps)
{
    const T *xr = x + (int64_t)blockIdx.x * D;
    T *yr = y + (int64_t)blockIdx.x * D;
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
        float v = io<T>::ld(xr, i);
        s += v * v;
    }
    float inv = rsqrtf(block_reduce(s, false) / (float)D + eps);
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x)
        io<T>::st(yr, i, io<T>::ld(xr, i) * inv * scale[i]);
}

/* One thread per (row, head, i < hd/2): the pair (i, i + hd/2) turns by
 * pos · theta^(-2i/hd). */
template <typename T>
__global__ void rope_k(const T *x, const void *pos, int pos64, T *y, int64_t rows, int64_t C,
                       int64_t hd, double theta)
{
    int64_t half = hd / 2, n = rows * (C / 2);
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = e / (C / 2), rest = e % (C / 2), h0 = (rest / half) * hd, i = rest % half;
        double p = pos64 ? (double)((const int64_t *)pos)[r] : (double)((const int32_t *)pos)[r];
        double ang = p * pow(theta, -2.0 * (double)i / (double)hd);
        double c = cos(ang), s = sin(ang);
        int64_t a = r * C + h0 + i, b = a + half;
        double x1 = io<T>::ld(x, a), x2 = io<T>::ld(x, b);
        io<T>::st(y, a, (float)(x1 * c - x2 * s));
        io<T>::st(y, b, (float)(x2 * c + x1 * s));
    }
}

/* The first largest of a row; a NaN never wins over a number. */
__device__ bool argmax_better(float v, int64_t i, float bv, int64_t bi)
{
    if (bi < 0)
        return i >= 0;
    if (i < 0)
        return false;
    if (isnan(bv) != isnan(v))
        return isnan(bv);
    if (!isnan(v) && v != bv)
        return v > bv;
    return i < bi;
}

template <typename T> __global__ void argmax_k(const T *x, int32_t *y, int64_t C)
{
    __shared__ float sv[kThreads];
    __shared__ int64_t si[kThreads];
    const T *xr = x + (int64_t)blockIdx.x * C;
    float bv = 0.0f;
    int64_t bi = -1;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) {
        float v = io<T>::ld(xr, j);
        if (argmax_better(v, j, bv, bi)) {
            bv = v;
            bi = j;
        }
    }
    sv[threadIdx.x] = bv;
    si[threadIdx.x] = bi;
    __syncthreads();
    for (unsigned o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o && argmax_better(sv[threadIdx.x + o], si[threadIdx.x + o],
                                             sv[threadIdx.x], si[threadIdx.x])) {
            sv[threadIdx.x] = sv[threadIdx.x + o];
            si[threadIdx.x] = si[threadIdx.x + o];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0)
        y[blockIdx.x] = (int32_t)(si[0] < 0 ? 0 : si[0]);
}

/* One block per new row (sequence n, kv head g, token t): its keys and
 * values converted into the cache at position past + t (i8: the row's
 * scale max|x| / 127 over its finite values, 1 for a row of zeros, then
 * round-half-even(x / s) in [-127, 127] with the division in double, as
 * ntp__quantize_i8), and with a padding mask the position's flag. */
template <typename T> __global__ void kv_append_k(const T *kin, const T *vin, cudak_kv g)
{
    int64_t row = blockIdx.x, t = row % g.S, nk = row / g.S, kh = nk % g.KVH, n = nk / g.KVH;
    int64_t src = (n * g.S + t) * g.KVH * g.hd + kh * g.hd;
    int64_t crow = (n * g.KVH + kh) * g.L + g.past + t, dst = crow * g.hd;
    for (int side = 0; side < 2; side++) {
        const T *x = side ? vin : kin;
        void *c = side ? g.v : g.k;
        if (g.ct == CUDAK_CACHE_I8) {
            float m = 0.0f;
            for (int64_t d = threadIdx.x; d < g.hd; d += blockDim.x) {
                float a = fabsf(io<T>::ld(x, src + d));
                if (isfinite(a))
                    m = fmaxf(m, a);
            }
            m = block_reduce(m, true);
            float sc = m > 0.0f ? m / 127.0f : 1.0f;
            for (int64_t d = threadIdx.x; d < g.hd; d += blockDim.x) {
                float v = io<T>::ld(x, src + d);
                double q = isnan(v) ? 0.0 : rint((double)v / (double)sc);
                q = q > 127.0 ? 127.0 : q < -127.0 ? -127.0 : q;
                ((int8_t *)c)[dst + d] = (int8_t)q;
            }
            if (threadIdx.x == 0)
                (side ? g.vs : g.ks)[crow] = sc;
            continue;
        }
        for (int64_t d = threadIdx.x; d < g.hd; d += blockDim.x) {
            float v = io<T>::ld(x, src + d);
            if (g.ct == CUDAK_CACHE_F32)
                ((float *)c)[dst + d] = v;
            else if (g.ct == CUDAK_CACHE_F16)
                ((__half *)c)[dst + d] = __float2half_rn(v);
            else
                ((__nv_bfloat16 *)c)[dst + d] = __float2bfloat16_rn(v);
        }
    }
    if (g.keep && g.mask && kh == 0 && threadIdx.x == 0)
        g.keep[n * g.L + g.past + t] = mask_at(g.mask, g.mask64, n * g.S + t) ? 1 : 0;
}

/* One block per query (sequence n, head h, new token i): it sees keys
 * 0 .. past + i (and, with a padding mask, only those that hold a token),
 * from the cache when there is one, else from the pass's own k and v.
 * The scores go to the row's slice of `scores` (past + S floats), then the
 * softmax, then y = P·V. A query that sees no key gets 0. The query is
 * staged in shared memory (hd floats). */
template <typename T>
__global__ void kv_attention_k(const T *q, const T *kin, const T *vin, cudak_kv g, float *scores,
                               T *y)
{
    extern __shared__ float qs[];
    int64_t b = blockIdx.x, i = b % g.S, nh = b / g.S, h = nh % g.H, n = nh / g.H;
    int64_t kh = h / (g.H / g.KVH), ctx = g.past + i + 1, span = g.past + g.S;
    const T *qr = q + (n * g.S + i) * g.H * g.hd + h * g.hd;
    float *p = scores + b * span;
    for (int64_t d = threadIdx.x; d < g.hd; d += blockDim.x)
        qs[d] = io<T>::ld(qr, d);
    __syncthreads();
    float m = -INFINITY;
    for (int64_t j = threadIdx.x; j < ctx; j += blockDim.x) {
        bool kept = true;
        if (g.mask)
            kept = g.keep ? g.keep[n * g.L + j] != 0 : mask_at(g.mask, g.mask64, n * g.S + j);
        float s = -INFINITY;
        if (kept) {
            float acc = 0.0f;
            if (g.k) {
                int64_t row = (n * g.KVH + kh) * g.L + j;
                float sc = g.ks ? g.ks[row] : 1.0f;
                for (int64_t d = 0; d < g.hd; d++)
                    acc += qs[d] * ld_cache(g.ct, g.k, row * g.hd + d, sc);
            } else {
                const T *kr = kin + (n * g.S + j) * g.KVH * g.hd + kh * g.hd;
                for (int64_t d = 0; d < g.hd; d++)
                    acc += qs[d] * io<T>::ld(kr, d);
            }
            s = acc * g.scale;
        }
        p[j] = s;
        m = fmaxf(m, s);
    }
    m = block_reduce(m, true);
    T *yr = y + (n * g.S + i) * g.H * g.hd + h * g.hd;
    if (m == -INFINITY) { /* no key to see (left padding): 0 */
        for (int64_t d = threadIdx.x; d < g.hd; d += blockDim.x)
            io<T>::st(yr, d, 0.0f);
        return;
    }
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < ctx; j += blockDim.x) {
        float e = expf(p[j] - m);
        p[j] = e;
        sum += e;
    }
    sum = block_reduce(sum, false); /* its barriers also publish p[] to the block */
    float inv = 1.0f / sum;
    for (int64_t d = threadIdx.x; d < g.hd; d += blockDim.x) {
        float acc = 0.0f;
        for (int64_t j = 0; j < ctx; j++) {
            float v;
            if (g.v) {
                int64_t row = (n * g.KVH + kh) * g.L + j;
                v = ld_cache(g.ct, g.v, row * g.hd + d, g.vs ? g.vs[row] : 1.0f);
            } else {
                v = io<T>::ld(vin, (n * g.S + j) * g.KVH * g.hd + kh * g.hd + d);
            }
            acc += p[j] * v;
        }
        io<T>::st(yr, d, acc * inv);
    }
}

template <typename T>
int launch_rmsnorm(cudaStream_t s, const void *x, void *y, int64_t rows, int64_t D,
                   const float *scale, float eps)
{
    rmsnorm_k<T><<<(unsigned)rows, kThreads, 0, s>>>((const T *)x, (T *)y, D, scale, eps);
    return last_error();
}

template <typename T>
int launch_rope(cudaStream_t s, const void *x, const void *pos, int pos64, void *y, int64_t rows,
                int64_t C, int64_t hd, double theta)
{
    rope_k<T><<<blocks_for(rows * (C / 2)), kThreads, 0, s>>>((const T *)x, pos, pos64, (T *)y,
                                                              rows, C, hd, theta);
    return last_error();
}

template <typename T>
int launch_argmax(cudaStream_t s, const void *x, int32_t *y, int64_t rows, int64_t C)
{
    argmax_k<T><<<(unsigned)rows, kThreads, 0, s>>>((const T *)x, y, C);
    return last_error();
}

template <typename T>
int launch_kv_append(cudaStream_t s, const void *kin, const void *vin, const cudak_kv *g)
{
    kv_append_k<T>
        <<<(unsigned)(g->N * g->KVH * g->S), 64, 0, s>>>((const T *)kin, (const T *)vin, *g);
    return last_error();
}

template <typename T>
int launch_kv_attention(cudaStream_t s, const void *q, const void *kin, const void *vin,
                        const cudak_kv *g, float *scores, void *y)
{
    kv_attention_k<T><<<(unsigned)(g->N * g->H * g->S), 128, (size_t)g->hd * sizeof(float), s>>>(
        (const T *)q, (const T *)kin, (const T *)vin, *g, scores, (T *)y);
    return last_error();
}

} // namespace

extern "C" int ntp__cudak_rmsnorm(void *stream, cudak_type t, const void *x, void *y, int64_t rows,
                                  int64_t D, const float *scale, float eps)
{
    if (rows <= 0 || D <= 0)
        return 0;
    if (rows > 0x7fffffff)
        return (int)cudaErrorInvalidConfiguration;
    return NTP_CUDAK_DISPATCH(t, launch_rmsnorm, (cudaStream_t)stream, x, y, rows, D, scale, eps);
}

extern "C" int ntp__cudak_rope(void *stream, cudak_type t, const void *x, const void *pos,
                               int pos64, void *y, int64_t rows, int64_t C, int64_t hd,
                               double theta)
{
    if (rows <= 0 || C <= 0)
        return 0;
    if (hd < 2 || hd % 2 || C % hd)
        return (int)cudaErrorInvalidValue;
    return NTP_CUDAK_DISPATCH(t, launch_rope, (cudaStream_t)stream, x, pos, pos64, y, rows, C, hd,
                              theta);
}

extern "C" int ntp__cudak_argmax(void *stream, cudak_type t, const void *x, int32_t *y,
                                 int64_t rows, int64_t C)
{
    if (rows <= 0 || C <= 0)
        return 0;
    if (rows > 0x7fffffff)
        return (int)cudaErrorInvalidConfiguration;
    return NTP_CUDAK_DISPATCH(t, launch_argmax, (cudaStream_t)stream, x, y, rows, C);
}

extern "C" int ntp__cudak_kv_append(void *stream, cudak_type t, const void *kin, const void *vin,
                                    const cudak_kv *g)
{
    if (!g->k || g->N * g->KVH * g->S <= 0)
        return 0;
    if (g->N * g->KVH * g->S > 0x7fffffff)
        return (int)cudaErrorInvalidConfiguration;
    return NTP_CUDAK_DISPATCH(t, launch_kv_append, (cudaStream_t)stream, kin, vin, g);
}

extern "C" int ntp__cudak_kv_attention(void *stream, cudak_type t, const void *q, const void *kin,
                                       const void *vin, const cudak_kv *g, float *scores, void *y)
{
    if (g->N * g->H * g->S <= 0)
        return 0;
    if (g->N * g->H * g->S > 0x7fffffff || g->hd * (int64_t)sizeof(float) > 48 * 1024 ||
        g->H % g->KVH)
        return (int)cudaErrorInvalidConfiguration;
    return NTP_CUDAK_DISPATCH(t, launch_kv_attention, (cudaStream_t)stream, q, kin, vin, g, scores,
                              y);
}
