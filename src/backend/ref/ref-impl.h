/* The reference backend's kernels, private to libntprof.
 *
 * Plain portable C, f32 arithmetic on f32 storage; clarity before speed. The
 * backend (ref-backend.c) emulates bf16, f16 and int8 storage by rounding
 * every output and weight through the storage type (round to nearest even),
 * which gives exactly the values true reduced-precision storage would hold.
 * Each kernel reads k->in/k->w and writes k->out as docs/ops.md specifies.
 *
 * Kernels read only k->node->op, k->node->a and (for messages) k->node->name
 * from the node, so a test can build an ntp_kargs by hand without a graph.
 * k->g, when set, only adds the source position to messages and settles the
 * one case the shapes cannot: a layout convert whose input has C equal to
 * every spatial dim (ref-move.c). Shapes in k->in/k->w/k->out are trusted to be the ones
 * shape inference produced, but every dimension a kernel indexes with is
 * checked against the others first, so inconsistent arguments give a status
 * and a message, never an out-of-bounds access.
 *
 * The backend is single-threaded: k->threads is ignored. It is the oracle
 * other backends are compared with, so its results must not depend on the
 * thread count; it is fast enough (cache-blocked GEMM, im2col convolution)
 * to run ResNet-50 or DeepSpeech at batch 1 in seconds. */
#ifndef NTPROF_REF_IMPL_H
#define NTPROF_REF_IMPL_H

#include <stdbool.h>
#include "backend/backend-impl.h"

/* Scratch bytes a node needs on this backend (0 for most); SIZE_MAX when the
 * size does not fit a size_t, so that allocating it fails cleanly. */
size_t ntp__ref_workspace(const ntp_kargs *k);

/* Run one node: checks the workspace is large enough, then dispatches on
 * k->node->op. Outputs are left in f32, not rounded to the node's precision
 * (ref-backend.c does that). */
ntp_status ntp__ref_run(ntp_ctx *ctx, const ntp_kargs *k);

/* Record "<op name='node'>: message" (with the source and line when k->g is
 * set) in ctx and return st. */
#define ntp__ref_error(ctx, k, st, ...) ntp__be_kerror(ctx, NULL, k, st, __VA_ARGS__)

/* A reference kernel. A family's file maps each of its ops to its kernel in
 * a table indexed by op (one line an op, no switch over the op enum);
 * ntp__ref_dispatch() runs the node's entry, and an op without one is an
 * internal error naming the family ("not a <family> op"). */
typedef ntp_status (*ntp_ref_kernel_fn)(ntp_ctx *ctx, const ntp_kargs *k);
ntp_status ntp__ref_dispatch(ntp_ctx *ctx, const ntp_kargs *k,
                             const ntp_ref_kernel_fn table[NTP_OP_COUNT], const char *family);

/* Check the counts and dtypes of a kernel's operands: n_in inputs, at least
 * min_w and at most max_w weights, n_out outputs, all f32. */
ntp_status ntp__ref_expect(ntp_ctx *ctx, const ntp_kargs *k, int n_in, int min_w, int max_w,
                           int n_out);
/* Check that weight i has numel elements. */
ntp_status ntp__ref_expect_weight(ntp_ctx *ctx, const ntp_kargs *k, int i, int64_t numel);

/* C = alpha * op(A) * op(B) + beta * C, row-major, with op(X) = X or Xᵀ.
 * op(A) is m x k, op(B) is k x n, C is m x n; lda, ldb, ldc are the row
 * strides of A, B and C as stored. beta == 0 overwrites C without reading
 * it (so C may hold garbage or NaN). Each C element is summed in the order
 * of k, with alpha scaling the elements of A before they are multiplied,
 * except when m < 4 with op(B) = Bᵀ and op(A) = A (the shape of a recurrent
 * step or a batch-1 fc): then it is a dot product with eight partial sums,
 * scaled by alpha after. */
void ntp__ref_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                   int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

/* Each of rows rows of y [rows, n] set to b [n]: a bias as the starting C
 * of the GEMM that follows (beta 1), so that it costs no pass of its own
 * over the output (fc, attention's projections, the recurrent layers' two
 * products; conv's bias is one value a row instead, ref-conv.c). */
void ntp__ref_bias_rows(float *y, const float *b, int64_t rows, int64_t n);

/* A GEMM with ntp__ref_gemm's contract. The kernels that lower a layer to
 * GEMMs (conv, deconv, the recurrent layers) take one as their hook, so a
 * backend with a faster GEMM (blas) runs the same lowering on its own GEMM
 * instead of keeping a copy of the loops around it. */
typedef void ntp_gemm_fn(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                         const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                         float *c, int64_t ldc);

/* Element-wise functions shared by the activation layers and the recurrent
 * cells, evaluated in double and rounded once to f32. */
float ntp__ref_sigmoid(float x);
float ntp__ref_tanh(float x);

/* y[i] = f(x[i]) for i < n, f the reference function of a unary
 * element-wise op (NTP_UNARY_TABLE) with the node's attributes a, in double
 * and rounded once to f32; y may be x. False, writing nothing, when op is not
 * of that family. Other backends call it for the ops they do not map. */
bool ntp__ref_unary(ntp_op op, const ntp_attrs *a, const float *x, float *y, int64_t n);

/* Softmax in place over n values spaced `stride` apart: max subtracted, exp
 * and sum in double. */
void ntp__ref_softmax_strided(float *x, int64_t n, int64_t stride);

/* --- kernel families (one file each) ------------------------------------- */
/* ref-dense.c: fc, matmul. */
ntp_status ntp__ref_dense(ntp_ctx *ctx, const ntp_kargs *k);
/* ref-conv.c: conv, deconv (im2col / col2im + GEMM). */
ntp_status ntp__ref_conv(ntp_ctx *ctx, const ntp_kargs *k);
size_t ntp__ref_conv_workspace(const ntp_kargs *k);

/* A convolution's geometry, 1-d and 2-d as 3-d with leading sizes 1:
 * batch N, channels C in and F out, G groups of Cg and Fg, and per spatial
 * dim the input, output, kernel, stride, dilation and padding. */
typedef struct ntp_ref_conv_geom {
    int64_t N, C, F, G, Cg, Fg;
    int64_t in[3], out[3], k[3], s[3], d[3], p[3];
    int64_t in_sz, out_sz, k_sz;
} ntp_ref_conv_geom;

/* Fill g for conv or deconv node n with input shape x and output shape y;
 * false when they do not fit its attributes. */
bool ntp__ref_conv_geom(const ntp_node *n, const ntp_shape *x, const ntp_shape *y,
                        ntp_ref_conv_geom *g);
/* A conv with 1x1 kernels, stride 1 and no padding: its input is its
 * im2col matrix already, so it has no lowering. */
bool ntp__ref_conv_pointwise(const ntp_ref_conv_geom *g);
/* Floats of one (image, group)'s column matrix: conv's im2col rows x
 * output positions, deconv's GEMM result before col2im. */
int64_t ntp__ref_conv_col_floats(ntp_op op, const ntp_ref_conv_geom *g);

/* The two passes of a convolution: lowering (im2col before conv's GEMMs,
 * col2im after deconv's) and the GEMMs. */
enum { NTP_REF_CONV_LOWER = 1, NTP_REF_CONV_GEMM = 2, NTP_REF_CONV_ALL = 3 };

/* ntp__ref_conv on `gemm`, running the passes in `passes`; the pass that
 * finishes the output (conv's GEMMs, deconv's col2im) adds the bias.
 * staged: the workspace holds the column matrices of every (image, group)
 * one after the other (N·G·col_floats floats), so that each pass can run as
 * a step of its own; else one column matrix, lowered and multiplied in
 * turn (passes must then be NTP_REF_CONV_ALL). */
ntp_status ntp__ref_conv_run(ntp_ctx *ctx, const ntp_kargs *k, ntp_gemm_fn *gemm, bool staged,
                             int passes);
/* ref-pool.c: maxpool, avgpool, global_maxpool, global_avgpool. */
ntp_status ntp__ref_pool(ntp_ctx *ctx, const ntp_kargs *k);
/* ref-norm.c: batchnorm, layernorm. */
ntp_status ntp__ref_norm(ntp_ctx *ctx, const ntp_kargs *k);
/* ref-eltwise.c: the unary element-wise ops (activations and unary math),
 * softmax, add, mul. */
ntp_status ntp__ref_eltwise(ntp_ctx *ctx, const ntp_kargs *k);
/* ref-move.c: concat, split, reshape, flatten, transpose, pad, embedding,
 * dropout, memcpy, convert. */
ntp_status ntp__ref_move(ntp_ctx *ctx, const ntp_kargs *k);
/* delay: busy-waits its `us`, then copies its input to its output. */
ntp_status ntp__ref_delay(ntp_ctx *ctx, const ntp_kargs *k);
/* ref-darknet.c: darknet_head, Darknet's [yolo] and [region] at inference. */
ntp_status ntp__ref_darknet_head(ntp_ctx *ctx, const ntp_kargs *k);
/* ref-rnn.c: lstm, gru, rnn. */
ntp_status ntp__ref_rnn(ntp_ctx *ctx, const ntp_kargs *k);
size_t ntp__ref_rnn_workspace(const ntp_kargs *k);

/* A recurrent layer's geometry: T steps of N rows of I inputs, H units, G
 * gates (4 LSTM, 3 GRU, 1 RNN), 1 or 2 directions; last: only the final
 * state is output; sum: two directions are added, not concatenated. */
typedef struct ntp_ref_rnn_geom {
    int64_t T, N, I, H, G, dirs;
    bool last, sum;
} ntp_ref_rnn_geom;

/* Fill g for recurrent node n with input shape x and output shape y; false
 * when they do not fit its attributes. */
bool ntp__ref_rnn_geom(const ntp_node *n, const ntp_shape *x, const ntp_shape *y,
                       ntp_ref_rnn_geom *g);
/* The arithmetic a recurrent layer is made of: the GEMM of its input-gate
 * and recurrent products and the cell's gate functions. The reference
 * kernel's are ntp__ref_gemm, ntp__ref_sigmoid and ntp__ref_tanh (computed
 * in double); a backend may bring its own (blas: SGEMM and expf/tanhf). */
typedef struct ntp_ref_rnn_math {
    ntp_gemm_fn *gemm;
    float (*sigmoid)(float);
    float (*tanh)(float);
} ntp_ref_rnn_math;

/* ntp__ref_rnn on the arithmetic in m. */
ntp_status ntp__ref_rnn_run(ntp_ctx *ctx, const ntp_kargs *k, const ntp_ref_rnn_math *m);
/* ref-attention.c: multi-head attention. */
ntp_status ntp__ref_attention(ntp_ctx *ctx, const ntp_kargs *k);
size_t ntp__ref_attention_workspace(const ntp_kargs *k);

/* ref-decoder.c: rmsnorm, rope, kv_attention, lm_head, argmax. */
ntp_status ntp__ref_decoder(ntp_ctx *ctx, const ntp_kargs *k);
size_t ntp__ref_decoder_workspace(const ntp_kargs *k);
/* ntp__ref_decoder with kv_attention's and lm_head's products on gemm (a
 * backend's own: blas runs these kernels on SGEMM). */
ntp_status ntp__ref_decoder_run(ntp_ctx *ctx, const ntp_kargs *k, ntp_gemm_fn *gemm);

/* Size helpers for workspaces: a * b floats in bytes, SIZE_MAX on overflow
 * or a negative factor. */
size_t ntp__ref_floats(int64_t a, int64_t b);
/* Sum of byte counts, saturating at SIZE_MAX. */
size_t ntp__ref_size_add(size_t a, size_t b);

#endif
