/* The CUDA backend's own kernels (kernels.cu), private to libntprof.
 *
 * cuDNN and cuBLAS cover convolutions, GEMMs, pooling, softmax, recurrent
 * layers and tensor arithmetic; these few kernels cover what they lack or
 * restrict (GELU, hard-swish and the other activations, layer normalisation,
 * numpy broadcasting where neither operand has the output's shape, gathers,
 * padding, permutations, bf16 everywhere, the decoder ops) and the epilogue that applies a
 * layer's bias, a batch normalisation folded to a per-channel affine, and
 * the layers folded into a group (--fuse) in one pass.
 *
 * This header is shared by C (the backend) and CUDA C++ (kernels.cu), so it
 * uses plain C types only. Every launcher enqueues on `stream` and returns
 * the cudaError_t of the launch as an int (0: cudaSuccess); none of them
 * synchronises or allocates. */
#ifndef NTPROF_CUDA_KERNELS_H
#define NTPROF_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types the kernels compute on (always in f32 registers). */
typedef enum cudak_type { CUDAK_F32, CUDAK_F16, CUDAK_BF16 } cudak_type;

/* Element-wise functions: activations and unary math, each a device
 * expression of x and the parameters a and b, in f32. The enum and
 * kernels.cu's apply_fn() are generated from this one list; misc.c maps
 * the ops of the unary element-wise family (op-table.h) onto it.
 *   F(NAME, expression) */
// clang-format off
#define CUDAK_FN_TABLE(F)                                                        \
    F(IDENTITY, x)                                                               \
    F(RELU, x > 0.0f ? x : 0.0f)                                                 \
    F(RELU_MAX, fminf(fmaxf(x, 0.0f), b))                                        \
    F(LEAKY_RELU, x >= 0.0f ? x : a * x)                                         \
    F(SIGMOID, 1.0f / (1.0f + expf(-x)))                                         \
    F(TANH, tanhf(x))                                                            \
    F(GELU, 0.5f * x * (1.0f + erff(x * 0.70710678118654752f))) /* exact form */ \
    F(SILU, x / (1.0f + expf(-x)))                                               \
    F(HARDSWISH, x * fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) / 6.0f)                  \
    F(CLIP, fminf(fmaxf(x, a), b))                                               \
    F(ABS, fabsf(x))                                                             \
    F(NEG, -x)                                                                   \
    F(EXP, expf(x))                                                              \
    F(LOG, logf(x))                                                              \
    F(SQRT, sqrtf(x))                                                            \
    F(RECIPROCAL, 1.0f / x)                                                      \
    F(ERF, erff(x))                                                              \
    F(SOFTPLUS, x > 20.0f ? x : log1pf(expf(x)))                                 \
    F(ELU, x < 0.0f ? a * (expf(x) - 1.0f) : x)                                  \
    F(MISH, x * tanhf(x > 20.0f ? x : log1pf(expf(x))))                          \
    F(LOG_SIGMOID, x < 0.0f ? x - log1pf(expf(x)) : -log1pf(expf(-x)))
// clang-format on

typedef enum cudak_fn {
#define CUDAK_FN_ENUM_(name, expr) CUDAK_##name,
    CUDAK_FN_TABLE(CUDAK_FN_ENUM_)
#undef CUDAK_FN_ENUM_
        CUDAK_FN_COUNT
} cudak_fn;

/* Binary operations, numpy broadcasting. */
typedef enum cudak_op { CUDAK_ADD, CUDAK_MUL, CUDAK_SUB, CUDAK_DIV, CUDAK_MAX, CUDAK_MIN } cudak_op;

#define CUDAK_MAX_DIMS 8
#define CUDAK_MAX_POST 5

/* One step of an epilogue: an element-wise function (operand NULL) or a
 * binary operation with an operand of the output's shape and type. */
typedef struct cudak_post {
    int is_binary;
    int fn;     /* cudak_fn or cudak_op */
    float a, b; /* the function's parameters */
    const void *operand;
} cudak_post;

/* y[i] = post_n(...post_1(scale[c]·x[i] + bias[c])) with c = (i / inner) %
 * channels; scale and bias may be NULL (1 and 0). x may be y. */
typedef struct cudak_epilogue {
    const float *scale;
    const float *bias;
    int64_t channels, inner;
    int n_post;
    cudak_post post[CUDAK_MAX_POST];
} cudak_epilogue;

int ntp__cudak_epilogue(void *stream, cudak_type t, const void *x, void *y, int64_t n,
                        const cudak_epilogue *e);

/* y = a op b over the output dims; astride and bstride are element strides
 * per output dim (0 where that operand is broadcast). */
int ntp__cudak_binary(void *stream, cudak_type t, cudak_op op, int nd, const int64_t *dims,
                      const void *a, const int64_t *astride, const void *b, const int64_t *bstride,
                      void *y);

/* y (contiguous, dims) [i0..] = x[Σ i_d · xstride_d]: transposes, crops,
 * interleavings; any element size of 1, 2, 4 or 8 bytes. */
int ntp__cudak_gather(void *stream, size_t esize, int nd, const int64_t *dims, const void *x,
                      const int64_t *xstride, void *y);

/* Pad x (in_dims) into y (out_dims) with begin[d] elements before each dim:
 * mode 0 constant `value`, 1 reflect, 2 edge. */
int ntp__cudak_pad(void *stream, cudak_type t, int nd, const int64_t *in_dims,
                   const int64_t *out_dims, const int64_t *begin, int mode, float value,
                   const void *x, void *y);

/* Layer normalisation of `rows` rows of D elements: population variance,
 * statistics in f32, gamma and beta f32 [D]. */
int ntp__cudak_layernorm(void *stream, cudak_type t, const void *x, void *y, int64_t rows,
                         int64_t D, const float *gamma, const float *beta, float eps);

/* Softmax over `len` elements spaced `inner` apart, for each of outer·inner
 * rows, after multiplying by `scale`. causal_s > 0: row r (r = o·inner + i
 * with inner == 1) is query r % causal_s of a causal attention and keys
 * j > query get probability 0. y may be x. */
int ntp__cudak_softmax(void *stream, cudak_type t, const void *x, void *y, int64_t outer,
                       int64_t len, int64_t inner, float scale, int64_t causal_s);

/* y [n, units] = table[idx[i]] (idx i32, or i64 when idx64); an index
 * outside [0, vocab) gives a row of zeros. */
int ntp__cudak_embedding(void *stream, cudak_type t, const void *idx, int idx64, const void *table,
                         int64_t vocab, int64_t units, int64_t n, void *y);

/* Max or average pooling of `planes` planes of up to 3 spatial dims (unused
 * leading dims are 1), with PyTorch's and the reference backend's rules:
 * windows start at o·stride − pad_begin and are clipped to the input; max
 * ignores padding and propagates NaN; average divides by the real taps, or
 * with include_pad by the taps inside the padded input. */
typedef struct cudak_pool {
    int64_t planes;
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
    int is_max, include_pad;
} cudak_pool;

int ntp__cudak_pool(void *stream, cudak_type t, const cudak_pool *g, const void *x, void *y);

/* Convert n elements between f32, f16 and bf16 (y may not be x unless the
 * types have the same size). */
int ntp__cudak_convert(void *stream, cudak_type from, cudak_type to, const void *x, void *y,
                       int64_t n);

/* --- decoder ops (docs/decoders.md; the reference kernels' arithmetic) --- */

/* y = x / sqrt(mean(x²) + eps) · scale over rows of D (scale f32 [D]). */
int ntp__cudak_rmsnorm(void *stream, cudak_type t, const void *x, void *y, int64_t rows, int64_t D,
                       const float *scale, float eps);

/* Rotary embedding, "rotate half" form, of rows of C = heads · hd values at
 * positions pos[row] (i32, or i64 when pos64); angles in double. */
int ntp__cudak_rope(void *stream, cudak_type t, const void *x, const void *pos, int pos64, void *y,
                    int64_t rows, int64_t C, int64_t hd, double theta);

/* y[r] = the index of the first largest of row r (C values); a NaN never
 * wins over a number. */
int ntp__cudak_argmax(void *stream, cudak_type t, const void *x, int32_t *y, int64_t rows,
                      int64_t C);

/* The key/value cache's element type on the device. */
typedef enum cudak_cache {
    CUDAK_CACHE_F32,
    CUDAK_CACHE_F16,
    CUDAK_CACHE_BF16,
    CUDAK_CACHE_I8
} cudak_cache;

/* One kv_attention pass: S new queries [N, S, H·hd] after `past` cached
 * positions; k and v [N, KVH, L, hd] in type ct (NULL: no cache, the keys
 * and values are the pass's own [N, S, KVH·hd] and L is S), ks and vs the
 * i8 rows' scales [N, KVH, L]; mask [N, S] (i32, or i64 when mask64) or
 * NULL; keep [N, L], the positions that hold a token, kept with a cache
 * and a mask. */
typedef struct cudak_kv {
    int64_t N, S, H, KVH, hd, L, past;
    cudak_cache ct;
    void *k, *v;
    float *ks, *vs;
    uint8_t *keep;
    const void *mask;
    int mask64;
    float scale; /* 1 / sqrt(hd) */
} cudak_kv;

/* Write the pass's keys and values (type t) into the cache at positions
 * past .. past+S-1 (i8: a scale per row), and the mask's flags into keep. */
int ntp__cudak_kv_append(void *stream, cudak_type t, const void *kin, const void *vin,
                         const cudak_kv *g);

/* y [N, S, H·hd] = causal, grouped-query attention; scores is a workspace
 * of N·H·S·(past + S) floats. */
int ntp__cudak_kv_attention(void *stream, cudak_type t, const void *q, const void *kin,
                            const void *vin, const cudak_kv *g, float *scores, void *y);

/* Can this device run the kernels of this build? 0 when it can, else the
 * cudaError_t (cudaErrorNoKernelImageForDevice on an architecture the
 * build did not compile for). */
int ntp__cudak_probe(void);

#ifdef __cplusplus
}
#endif
#endif
