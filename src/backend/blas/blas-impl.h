/* The BLAS backend, private to libntprof (docs/backends.md).
 *
 * The classic framework design of Caffe and Darknet: every layer with
 * multiply-accumulates is turned into matrix products handed to a tuned
 * SGEMM (OpenBLAS through CBLAS), and everything around them is a plain C
 * loop.
 *
 *   conv     im2col into the workspace, then one SGEMM per (image, group):
 *            y_g [F/g, out] = W_g [F/g, C/g·Πk] · col [C/g·Πk, out]; a 1x1
 *            stride-1 unpadded convolution multiplies its input directly.
 *   deconv   one SGEMM per (image, group) into the workspace,
 *            col [F/g·Πk, in] = W_gᵀ · x_g, then col2im adds the columns
 *            into the output (Caffe's backward-data path).
 *   fc       one SGEMM, y = x · Wᵀ, or SGEMV for a single row (Caffe does
 *            the same), then the bias.
 *   matmul   one SGEMM per batch element, or a single one when B has no
 *            batch of its own.
 *   lstm/gru/rnn  per direction, the input part of every gate for every
 *            step is one SGEMM [T·N, G·H]; the recurrent part is one SGEMM
 *            (SGEMV at batch 1) per step, followed by the cell update.
 *   attention  the q/k/v projections of all rows as one SGEMM, per head
 *            SGEMMs for scores and context, one SGEMM for the output.
 *   kv_attention, lm_head  the reference kernels with their products on
 *            SGEMM (decoder.c); rmsnorm, rope and argmax their loops.
 *
 * Where im2col and col2im have their own pass over all images they are
 * sub-steps with rows of their own (":im2col", ":col2im"), so a report shows
 * what the lowering costs beside the GEMM; when that would need more than
 * BLASB_STAGED_MAX bytes of columns, they are interleaved with the GEMMs in
 * one step, as in Caffe.
 *
 * Activations, batch normalisation, softmax, add and mul, and reshapes are
 * simple single-threaded loops here (as in Caffe's CPU mode) so that a
 * network stays on one backend; pooling, layer normalisation, concat,
 * split, transpose, pad, embedding and the inlays go to the reference
 * backend. Both store f32 in plain layout, so no conversion runs at those
 * boundaries. f32 only. */
#ifndef NTPROF_BLAS_IMPL_H
#define NTPROF_BLAS_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/backend-impl.h"

/* Largest im2col/col2im buffer for a whole batch kept as its own pass. */
#define BLASB_STAGED_MAX ((size_t)256 << 20)

/* An activation or binary layer folded into a conv, deconv, fc or matmul
 * (--fuse): applied to the result in the same step, as Darknet applies a
 * layer's activation right after its GEMM. */
typedef struct blasb_post {
    const ntp_node *node;
    int operand; /* index into k->post_in, -1 for activations */
} blasb_post;

typedef struct blasb_state {
    int threads; /* OpenBLAS threads for this plan */
} blasb_state;

/* What prepare decided for one layer or fusion group. */
typedef struct blasb_node {
    int n_steps, main_step;
    const char *step_suffix; /* the sub-step's row name suffix and type */
    const char *step_type;
    int64_t step_bytes; /* what the sub-step reads and writes */
    bool staged;        /* im2col/col2im as a separate pass */
    bool direct;        /* pointwise conv: no im2col */
    size_t ws;          /* workspace bytes */
    float *own;         /* constants: batchnorm factors */
    int n_post;
    blasb_post post[NTP_MAX_FUSED];
    char impl[64];
} blasb_node;

/* Record "<op name='layer'>: blas: message" and return st. */
#define ntp__blas_error(ctx, k, st, ...) ntp__be_kerror(ctx, "blas", k, st, __VA_ARGS__)

/* C = alpha · op(A) · op(B) + beta · C, row-major, through cblas_sgemm. */
void ntp__blas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                    int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
/* y = alpha · A · x + beta · y with A [m, n] row-major, through cblas_sgemv. */
void ntp__blas_gemv(int64_t m, int64_t n, float alpha, const float *a, int64_t lda, const float *x,
                    float beta, float *y);
/* Does every GEMM dimension of this layer fit CBLAS's int? */
bool ntp__blas_fits(int64_t v);

/* --- families: support, prepare (sets nd->ws, steps, impl), run one step -- */
bool ntp__blas_conv_supports(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__blas_conv_prepare(ntp_ctx *ctx, const ntp_kargs *k, blasb_node *nd);
ntp_status ntp__blas_conv_run(ntp_ctx *ctx, const ntp_kargs *k, const blasb_node *nd, int step);

bool ntp__blas_dense_supports(const ntp_graph *g, const ntp_node *n); /* fc, matmul, attention */
ntp_status ntp__blas_dense_prepare(ntp_ctx *ctx, const ntp_kargs *k, blasb_node *nd);
ntp_status ntp__blas_dense_run(ntp_ctx *ctx, const ntp_kargs *k, const blasb_node *nd);

bool ntp__blas_rnn_supports(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__blas_rnn_prepare(ntp_ctx *ctx, const ntp_kargs *k, blasb_node *nd);
ntp_status ntp__blas_rnn_run(ntp_ctx *ctx, const ntp_kargs *k, const blasb_node *nd);

/* rmsnorm, rope, kv_attention, lm_head, argmax (decoder.c) */
bool ntp__blas_decoder_supports(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__blas_decoder_prepare(ntp_ctx *ctx, const ntp_kargs *k, blasb_node *nd);
ntp_status ntp__blas_decoder_run(ntp_ctx *ctx, const ntp_kargs *k, const blasb_node *nd, int step);

bool ntp__blas_eltwise_supports(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__blas_eltwise_prepare(ntp_ctx *ctx, const ntp_kargs *k, blasb_node *nd);
ntp_status ntp__blas_eltwise_run(ntp_ctx *ctx, const ntp_kargs *k, const blasb_node *nd);

/* Apply an activation layer's function to n values (y may be x). */
void ntp__blas_activate(const ntp_node *n, const float *x, float *y, int64_t count);
/* Softmax over len values spaced stride apart, in place. */
void ntp__blas_softmax(float *x, int64_t len, int64_t stride);
/* Apply the folded layers of a group to its result k->out[0]. */
void ntp__blas_post_ops(const ntp_kargs *k, const blasb_node *nd);

/* A family's three functions; backend.c maps each op it runs to one. */
typedef struct blasb_family {
    bool (*supports)(const ntp_graph *g, const ntp_node *n);
    ntp_status (*prepare)(ntp_ctx *ctx, const ntp_kargs *k, blasb_node *nd);
    ntp_status (*run)(ntp_ctx *ctx, const ntp_kargs *k, const blasb_node *nd, int step);
} blasb_family;

extern const ntp_backend_i ntp__backend_blas;

#endif
