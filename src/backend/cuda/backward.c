/* Training backward (and forward) on the CUDA backend (docs/train.md,
 * docs/gpu.md), in f32 and plain row-major layouts, with the contract of
 * ntp_backward_args: host buffers in, host buffers out, one synchronous
 * call per layer and phase. Each call copies what the layer reads to the
 * device, runs cuDNN or cuBLAS on the backend's stream, copies the
 * gradients back and waits.
 *
 *   conv       cudnnConvolutionBackwardData (mode 1), BackwardFilter and
 *              BackwardBias (mode 2); grouped and depthwise through the
 *              group count, dilation, 1-d as 2-d of height 1; algorithms
 *              from cudnnGet*Algorithm_v7, deterministic first, FMA math
 *              (IEEE f32, as the forward without TF32).
 *   fc         two GEMMs (dX = dY·W, dW = dYᵀ·X) and the bias gradient as
 *              cudnnConvolutionBackwardBias over [rows, F, 1, 1].
 *   matmul     dA and dB as (strided batched) GEMMs, the transposes as
 *              cuBLAS operations; a B shared over the batch takes its
 *              gradient as one GEMM over the batch folded into the rows.
 *   pooling    cudnnPoolingBackward (max, average with and without the
 *              padding, global), after a cudnnPoolingForward on the
 *              layer's input for the y it reads (the trainer's forward ran
 *              elsewhere).
 *   batchnorm  cudnnBatchNormalizationBackward (spatial) from the batch's
 *              mean and 1/√(var+ε) (ntprof passes the biased variance);
 *              each phase runs the whole backward and keeps its part.
 *   relu (with or without a ceiling), sigmoid, tanh
 *              cudnnActivationBackward, after cudnnActivationForward for y
 *              (elu has none: the trainer has no elu at all).
 *   softmax, log_softmax  cudnnSoftmaxBackward (accurate / log, channel
 *              mode over an [outer, axis, inner, 1] view) from the output.
 *
 * The training forward (train_forward) of the same layers uses the same
 * descriptors: cudnnConvolutionForward and cudnnAddTensor for the bias,
 * the GEMM of fc and matmul, cudnnPoolingForward, cudnnActivationForward,
 * cudnnSoftmaxForward, and for batch norm
 * cudnnBatchNormalizationForwardTraining, whose saved mean and
 * 1/√(var+ε) give the trainer the batch's mean and biased variance.
 *
 * A layer's descriptors and algorithms are built at its first call and
 * kept in the state; the device buffers (one per role: x, w, dy, ...) and
 * the workspace are shared by every layer and grow to the largest asked
 * for, since calls run one at a time. Nothing here has run on a GPU yet:
 * the machine this was written on has none (docs/gpu.md says how to
 * verify it). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "cuda-impl.h"

/* The families with a backward here. */
typedef enum tb_kind {
    TB_NONE,
    TB_CONV,
    TB_FC,
    TB_MATMUL,
    TB_POOL,
    TB_BNORM,
    TB_ACT,
    TB_SOFTMAX,
} tb_kind;

static const tb_kind kinds[NTP_OP_COUNT] = {
    [NTP_OP_CONV] = TB_CONV,
    [NTP_OP_FC] = TB_FC,
    [NTP_OP_MATMUL] = TB_MATMUL,
    [NTP_OP_MAXPOOL] = TB_POOL,
    [NTP_OP_AVGPOOL] = TB_POOL,
    [NTP_OP_GLOBAL_MAXPOOL] = TB_POOL,
    [NTP_OP_GLOBAL_AVGPOOL] = TB_POOL,
    [NTP_OP_BATCHNORM] = TB_BNORM,
    [NTP_OP_RELU] = TB_ACT,
    [NTP_OP_SIGMOID] = TB_ACT,
    [NTP_OP_TANH] = TB_ACT,
    [NTP_OP_SOFTMAX] = TB_SOFTMAX,
    [NTP_OP_LOG_SOFTMAX] = TB_SOFTMAX,
};

static tb_kind kind_of(ntp_op op)
{
    return (unsigned)op < NTP_OP_COUNT ? kinds[op] : TB_NONE;
}

/* The shared device buffers, by role. */
enum { B_X, B_W, B_B, B_DY, B_Y, B_DX, B_DW, B_DB, B_MEAN, B_INV, B_X2, B_DX2, B_WS, B_COUNT };

/* One layer's descriptors and algorithms, built at its first call. */
typedef struct tb_layer {
    const ntp_node *n;
    tb_kind kind;
    cudnnTensorDescriptor_t x, y, c; /* input, output, per channel [1, C, 1, 1] */
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cudnnPoolingDescriptor_t pool;
    cudnnActivationDescriptor_t act;
    cudnnConvolutionBwdDataAlgo_t data_algo;
    cudnnConvolutionBwdFilterAlgo_t filter_algo;
    cudnnConvolutionFwdAlgo_t fwd_algo; /* the training forward's */
    size_t data_ws, filter_ws, fwd_ws;
    bool bias;
    /* fc: rows, K, F; matmul (below) */
    int64_t R, K, F;
    int64_t M, N, Km, batch, lda, ldb, sa, sb;
    bool ta, tb, b_shared;
    int64_t nx, ny, nw, nx2; /* element counts */
} tb_layer;

struct cudab_tstate {
    tb_layer **layers;
    int n_layers, cap_layers;
    void *buf[B_COUNT];
    int64_t bytes[B_COUNT];
};

/* --- support ----------------------------------------------------------------------- */

static bool fits(int64_t v)
{
    return v >= 1 && v < 0x7fffffff;
}

static bool shape_fits(const ntp_shape *s)
{
    for (int d = 0; d < s->ndim; d++)
        if (!fits(s->dim[d]))
            return false;
    return fits(ntp_shape_numel(s));
}

/* A conv cuDNN computes as the layer does: cuDNN pads symmetrically by the
 * begin padding, which is the layer's conv when the output it implies is
 * the layer's (an end padding that differs is then never read). */
static bool conv_fits(const ntp_graph *g, const ntp_node *n)
{
    const ntp_shape *x = &g->tensors[n->in[0]].shape, *y = &g->tensors[n->out[0]].shape;
    int nk = x->ndim - 2;
    if (nk < 1 || nk > 3 || y->ndim != x->ndim || n->a.nk != nk || n->a.groups < 1 || n->n_w < 1 ||
        x->dim[1] % n->a.groups || y->dim[1] % n->a.groups)
        return false;
    for (int d = 0; d < nk; d++) {
        int64_t k = n->a.kernel[d], s = n->a.stride[d], dl = n->a.dilation[d], p = n->a.pad[d];
        if (p < 0 || s < 1 || dl < 1 || k < 1)
            return false;
        int64_t span = (k - 1) * dl + 1;
        if (x->dim[2 + d] + 2 * p < span || (x->dim[2 + d] + 2 * p - span) / s + 1 != y->dim[2 + d])
            return false;
    }
    return true;
}

/* cuDNN's pooling rules (misc.c's dnn_pool_fits, on the graph's shapes):
 * global, or no dilation, symmetric padding smaller than the window, and
 * the floor-mode output size. */
static bool pool_fits(const ntp_graph *g, const ntp_node *n)
{
    const ntp_shape *x = &g->tensors[n->in[0]].shape, *y = &g->tensors[n->out[0]].shape;
    if (x->ndim < 3 || x->ndim > 5 || y->ndim != x->ndim)
        return false;
    if (n->op == NTP_OP_GLOBAL_MAXPOOL || n->op == NTP_OP_GLOBAL_AVGPOOL)
        return true;
    int nk = n->a.nk;
    if (nk != x->ndim - 2)
        return false;
    for (int d = 0; d < nk; d++) {
        int64_t in = x->dim[2 + d], out = y->dim[2 + d], k = n->a.kernel[d], p = n->a.pad[d];
        if (n->a.dilation[d] != 1 || p != n->a.pad[nk + d] || p >= k || n->a.stride[d] < 1 ||
            in + 2 * p < k || (in + 2 * p - k) / n->a.stride[d] + 1 != out)
            return false;
    }
    return true;
}

/* A matmul's geometry as its backward reads it: A's batch is C's, B's is
 * C's or shared (no batch dims, or all 1; then A is not transposed, so
 * that dB folds the batch into the rows of one GEMM). */
static bool mm_geometry(const ntp_graph *g, const ntp_node *n, tb_layer *l)
{
    const ntp_shape *as = &g->tensors[n->in[0]].shape, *bs = &g->tensors[n->in[1]].shape;
    const ntp_shape *cs = &g->tensors[n->out[0]].shape;
    int r = cs->ndim;
    if (r < 2 || as->ndim < 2 || bs->ndim < 2 || as->ndim > r || bs->ndim > r)
        return false;
    int64_t batch = 1, a_own = 1, b_own = 1;
    for (int i = 0; i < r - 2; i++)
        batch *= cs->dim[i];
    for (int i = 0; i < as->ndim - 2; i++)
        a_own *= as->dim[i];
    for (int i = 0; i < bs->ndim - 2; i++)
        b_own *= bs->dim[i];
    if (a_own != batch || (b_own != batch && b_own != 1))
        return false;
    /* A full batch is C's batch dims exactly (trailing-aligned). */
    for (int i = 0; batch > 1 && i < as->ndim - 2; i++)
        if (as->dim[i] != cs->dim[i + (r - as->ndim)])
            return false;
    for (int i = 0; batch > 1 && b_own > 1 && i < bs->ndim - 2; i++)
        if (bs->dim[i] != cs->dim[i + (r - bs->ndim)])
            return false;
    l->ta = n->a.transpose_a;
    l->tb = n->a.transpose_b;
    l->b_shared = batch > 1 && b_own == 1;
    if (l->b_shared && l->ta)
        return false;
    l->M = cs->dim[r - 2];
    l->N = cs->dim[r - 1];
    l->Km = l->ta ? as->dim[as->ndim - 2] : as->dim[as->ndim - 1];
    l->batch = batch;
    l->lda = l->ta ? l->M : l->Km;
    l->ldb = l->tb ? l->Km : l->N;
    l->sa = l->M * l->Km;
    l->sb = l->b_shared ? 0 : l->Km * l->N;
    return fits(l->M) && fits(l->N) && fits(l->Km) && fits(batch * l->M);
}

static bool act_fits(const ntp_node *n)
{
    /* The reference's relu without a ceiling, clipped relu with one. */
    if (n->op == NTP_OP_RELU)
        return !n->a.has_max || n->a.max > 0;
    return true;
}

bool ntp__cuda_supports_backward(const ntp_graph *g, const ntp_node *n)
{
    if (!g || !n || !ntp__backend_cuda.available || !ntp__backend_cuda.available(NULL, 0))
        return false;
    tb_kind k = kind_of(n->op);
    if (k == TB_NONE || n->n_out != 1 || n->n_in < 1)
        return false;
    for (int i = 0; i < n->n_in; i++)
        if (g->tensors[n->in[i]].dtype != NTP_DTYPE_F32 || !shape_fits(&g->tensors[n->in[i]].shape))
            return false;
    if (g->tensors[n->out[0]].dtype != NTP_DTYPE_F32 || !shape_fits(&g->tensors[n->out[0]].shape))
        return false;
    const ntp_shape *xs = &g->tensors[n->in[0]].shape;
    tb_layer l;
    switch (k) {
    case TB_CONV: return n->n_in == 1 && conv_fits(g, n);
    case TB_FC: return n->n_in == 1 && n->n_w >= 1 && xs->ndim >= 1;
    case TB_MATMUL: return n->n_in == 2 && mm_geometry(g, n, &l);
    case TB_POOL: return n->n_in == 1 && pool_fits(g, n);
    case TB_BNORM: return n->n_in == 1 && n->n_w >= 2 && xs->ndim >= 2 && xs->ndim <= 5;
    case TB_ACT: return n->n_in == 1 && act_fits(n);
    case TB_SOFTMAX: {
        int64_t ax = n->a.axis < 0 ? n->a.axis + xs->ndim : n->a.axis;
        return n->n_in == 1 && ax >= 0 && ax < xs->ndim;
    }
    case TB_NONE: return false;
    }
    return false;
}

/* --- errors ------------------------------------------------------------------------ */

static ntp_status dnn_fail(ntp_ctx *ctx, const ntp_backward_args *a, cudnnStatus_t e,
                           const char *what)
{
    return ntp__be_error(ctx, "cuda backward", a->g, a->n,
                         e == CUDNN_STATUS_NOT_SUPPORTED  ? NTP_STATUS_UNSUPPORTED
                         : e == CUDNN_STATUS_ALLOC_FAILED ? NTP_STATUS_OUT_OF_MEMORY
                                                          : NTP_STATUS_BACKEND_ERROR,
                         "cuDNN %s failed: %s", what, cudnnGetErrorString(e));
}

static ntp_status rt_fail(ntp_ctx *ctx, const ntp_backward_args *a, cudaError_t e, const char *what)
{
    return ntp__be_error(ctx, "cuda backward", a->g, a->n,
                         e == cudaErrorMemoryAllocation ? NTP_STATUS_OUT_OF_MEMORY
                                                        : NTP_STATUS_BACKEND_ERROR,
                         "%s failed: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

static ntp_status blas_fail(ntp_ctx *ctx, const ntp_backward_args *a, cublasStatus_t e,
                            const char *what)
{
    return ntp__be_error(ctx, "cuda backward", a->g, a->n,
                         e == CUBLAS_STATUS_ALLOC_FAILED ? NTP_STATUS_OUT_OF_MEMORY
                                                         : NTP_STATUS_BACKEND_ERROR,
                         "cuBLAS %s failed: status %d", what, (int)e);
}

static ntp_status missing(ntp_ctx *ctx, const ntp_backward_args *a, const char *what)
{
    return ntp__be_error(ctx, "cuda backward", a->g, a->n, NTP_STATUS_INTERNAL,
                         "the layer's %s was not given", what);
}

/* --- state ------------------------------------------------------------------------- */

static void layer_free(tb_layer *l)
{
    if (!l)
        return;
    if (l->x)
        cudnnDestroyTensorDescriptor(l->x);
    if (l->y)
        cudnnDestroyTensorDescriptor(l->y);
    if (l->c)
        cudnnDestroyTensorDescriptor(l->c);
    if (l->w)
        cudnnDestroyFilterDescriptor(l->w);
    if (l->conv)
        cudnnDestroyConvolutionDescriptor(l->conv);
    if (l->pool)
        cudnnDestroyPoolingDescriptor(l->pool);
    if (l->act)
        cudnnDestroyActivationDescriptor(l->act);
    free(l);
}

void ntp__cuda_train_release(cudab_state *s)
{
    struct cudab_tstate *t = s ? s->train : NULL;
    if (!t)
        return;
    for (int i = 0; i < t->n_layers; i++)
        layer_free(t->layers[i]);
    free(t->layers);
    for (int i = 0; i < B_COUNT; i++)
        ntp__cuda_free(s, t->buf[i], t->bytes[i]);
    free(t);
    s->train = NULL;
}

/* The shared device buffer of role b, at least `bytes` long. */
static ntp_status want_buf(ntp_ctx *ctx, cudab_state *s, const ntp_backward_args *a, int b,
                           int64_t bytes, void **out)
{
    struct cudab_tstate *t = s->train;
    *out = NULL;
    if (bytes <= 0)
        bytes = 4;
    if (t->bytes[b] < bytes) {
        ntp__cuda_free(s, t->buf[b], t->bytes[b]);
        t->buf[b] = NULL;
        t->bytes[b] = 0;
        /* Round up so that layers of similar sizes share one allocation. */
        int64_t want = (bytes + ((int64_t)1 << 20) - 1) & ~(((int64_t)1 << 20) - 1);
        ntp_kargs k = {.g = a->g, .node = a->n};
        ntp_status st = ntp__cuda_alloc(ctx, s, &k, &t->buf[b], want, "a training buffer");
        if (st)
            return st;
        t->bytes[b] = want;
    }
    *out = t->buf[b];
    return NTP_STATUS_OK;
}

/* Copy n floats from the host to the shared buffer of role b. */
static ntp_status upload(ntp_ctx *ctx, cudab_state *s, const ntp_backward_args *a, int b,
                         const float *host, int64_t n, void **out)
{
    ntp_status st = want_buf(ctx, s, a, b, n * (int64_t)sizeof(float), out);
    if (st)
        return st;
    cudaError_t e =
        cudaMemcpyAsync(*out, host, (size_t)n * sizeof(float), cudaMemcpyHostToDevice, s->stream);
    return e == cudaSuccess ? NTP_STATUS_OK : rt_fail(ctx, a, e, "copying to the device");
}

static ntp_status download(ntp_ctx *ctx, cudab_state *s, const ntp_backward_args *a, float *host,
                           const void *dev, int64_t n)
{
    if (!host)
        return NTP_STATUS_OK;
    cudaError_t e =
        cudaMemcpyAsync(host, dev, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost, s->stream);
    return e == cudaSuccess ? NTP_STATUS_OK : rt_fail(ctx, a, e, "copying to the host");
}

/* Row-major C[m, n] = op(A)·op(B) in f32 (IEEE: the handle's math mode is
 * TF32 only on request) for `batch` matrices at element strides sa, sb, sc
 * (0: shared); lda, ldb, ldc the stored row lengths. cuBLAS computes the
 * column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, which reads each operand as it lies. */
static ntp_status gemm(ntp_ctx *ctx, cudab_state *s, const ntp_backward_args *a, bool ta, bool tb,
                       int64_t m, int64_t n, int64_t k, const void *A, int64_t lda, int64_t sa,
                       const void *B, int64_t ldb, int64_t sb, void *C, int64_t ldc, int64_t sc,
                       int64_t batch)
{
    const float one = 1.0f, zero = 0.0f;
    cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasComputeType_t ct = s->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    cublasStatus_t e;
    if (batch <= 1)
        e = cublasGemmEx(s->blas, ob, oa, (int)n, (int)m, (int)k, &one, B, CUDA_R_32F, (int)ldb, A,
                         CUDA_R_32F, (int)lda, &zero, C, CUDA_R_32F, (int)ldc, ct,
                         CUBLAS_GEMM_DEFAULT);
    else
        e = cublasGemmStridedBatchedEx(s->blas, ob, oa, (int)n, (int)m, (int)k, &one, B, CUDA_R_32F,
                                       (int)ldb, (long long)sb, A, CUDA_R_32F, (int)lda,
                                       (long long)sa, &zero, C, CUDA_R_32F, (int)ldc, (long long)sc,
                                       (int)batch, ct, CUBLAS_GEMM_DEFAULT);
    return e == CUBLAS_STATUS_SUCCESS ? NTP_STATUS_OK : blas_fail(ctx, a, e, "GEMM");
}

/* --- building a layer ---------------------------------------------------------------- */

/* dims of a per-channel tensor [1, C, 1, ...] of rank nd. */
static ntp_status channel_desc(ntp_ctx *ctx, const ntp_kargs *k, cudnnTensorDescriptor_t *d, int nd,
                               int64_t C)
{
    int64_t dims[5] = {1, C, 1, 1, 1};
    return ntp__cuda_desc(ctx, k, d, NTP_DTYPE_F32, nd, dims, NULL);
}

/* The conv's descriptors (as conv.c's forward, 1-d as 2-d of height 1,
 * cuDNN's symmetric padding being the begin padding: conv_fits) and the
 * first backward-data, backward-filter and forward (the training
 * forward's) algorithms that cuDNN's heuristics rank, deterministic ones
 * first, whose workspace fits. */
static ntp_status build_conv(ntp_ctx *ctx, cudab_state *s, const ntp_backward_args *a,
                             const ntp_kargs *k, tb_layer *l)
{
    const ntp_graph *g = a->g;
    const ntp_node *n = a->n;
    const ntp_shape *xs = &g->tensors[n->in[0]].shape, *ys = &g->tensors[n->out[0]].shape;
    const ntp_shape *ws = &g->tensors[n->w[0]].shape;
    int nk = xs->ndim - 2, sk = nk == 1 ? 2 : nk, lead = nk == 1 ? 1 : 0, nd = 2 + sk;
    int64_t xd[5] = {xs->dim[0], xs->dim[1], 1, 1, 1}, yd[5] = {ys->dim[0], ys->dim[1], 1, 1, 1};
    int wd[5] = {(int)ws->dim[0], (int)ws->dim[1], 1, 1, 1};
    int pad[3] = {0, 0, 0}, stride[3] = {1, 1, 1}, dil[3] = {1, 1, 1};
    for (int d = 0; d < nk; d++) {
        xd[2 + lead + d] = xs->dim[2 + d];
        yd[2 + lead + d] = ys->dim[2 + d];
        wd[2 + lead + d] = (int)ws->dim[2 + d];
        pad[lead + d] = (int)n->a.pad[d];
        stride[lead + d] = (int)n->a.stride[d];
        dil[lead + d] = (int)n->a.dilation[d];
    }
    ntp_status st;
    if ((st = ntp__cuda_desc(ctx, k, &l->x, NTP_DTYPE_F32, nd, xd, NULL)) ||
        (st = ntp__cuda_desc(ctx, k, &l->y, NTP_DTYPE_F32, nd, yd, NULL)) ||
        (st = channel_desc(ctx, k, &l->c, nd, ys->dim[1])))
        return st;
    cudnnStatus_t e = cudnnCreateFilterDescriptor(&l->w);
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnSetFilterNdDescriptor(l->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, nd, wd);
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnCreateConvolutionDescriptor(&l->conv);
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnSetConvolutionNdDescriptor(l->conv, sk, pad, stride, dil, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT);
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnSetConvolutionGroupCount(l->conv, (int)n->a.groups);
    /* IEEE f32 FMAs unless TF32 was asked for, as the forward. */
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnSetConvolutionMathType(l->conv, s->tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH);
    if (e != CUDNN_STATUS_SUCCESS)
        return dnn_fail(ctx, a, e, "convolution descriptor");
    int od[5];
    if ((e = cudnnGetConvolutionNdForwardOutputDim(l->conv, l->x, l->w, nd, od)) !=
        CUDNN_STATUS_SUCCESS)
        return dnn_fail(ctx, a, e, "output shape");
    for (int d = 0; d < nd; d++)
        if (od[d] != yd[d])
            return ntp__be_error(ctx, "cuda backward", g, n, NTP_STATUS_INTERNAL,
                                 "cuDNN computes dim %d as %d where the layer has %lld", d, od[d],
                                 (long long)yd[d]);
    cudnnConvolutionBwdDataAlgoPerf_t dp[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int got = 0;
    if ((e = cudnnGetConvolutionBackwardDataAlgorithm_v7(s->dnn, l->w, l->y, l->conv, l->x,
                                                         CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                         &got, dp)) != CUDNN_STATUS_SUCCESS)
        return dnn_fail(ctx, a, e, "backward-data algorithm search");
    bool found = false;
    for (int pass = 0; pass < 2 && !found; pass++)
        for (int i = 0; i < got && !found; i++) {
            size_t need = 0;
            if (dp[i].status != CUDNN_STATUS_SUCCESS ||
                (pass == 0 && dp[i].determinism != CUDNN_DETERMINISTIC))
                continue;
            /* The workspace with the descriptor's math type, which the
             * heuristics' figure may not be. */
            if (cudnnGetConvolutionBackwardDataWorkspaceSize(
                    s->dnn, l->w, l->y, l->conv, l->x, dp[i].algo, &need) != CUDNN_STATUS_SUCCESS ||
                need > CUDAB_CONV_WS_MAX)
                continue;
            l->data_algo = dp[i].algo;
            l->data_ws = need;
            found = true;
        }
    if (!found)
        return ntp__be_error(ctx, "cuda backward", g, n, NTP_STATUS_UNSUPPORTED,
                             "cuDNN has no backward-data algorithm for this convolution");
    cudnnConvolutionBwdFilterAlgoPerf_t fp[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    got = 0;
    if ((e = cudnnGetConvolutionBackwardFilterAlgorithm_v7(s->dnn, l->x, l->y, l->conv, l->w,
                                                           CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                                                           &got, fp)) != CUDNN_STATUS_SUCCESS)
        return dnn_fail(ctx, a, e, "backward-filter algorithm search");
    found = false;
    for (int pass = 0; pass < 2 && !found; pass++)
        for (int i = 0; i < got && !found; i++) {
            size_t need = 0;
            if (fp[i].status != CUDNN_STATUS_SUCCESS ||
                (pass == 0 && fp[i].determinism != CUDNN_DETERMINISTIC))
                continue;
            if (cudnnGetConvolutionBackwardFilterWorkspaceSize(
                    s->dnn, l->x, l->y, l->conv, l->w, fp[i].algo, &need) != CUDNN_STATUS_SUCCESS ||
                need > CUDAB_CONV_WS_MAX)
                continue;
            l->filter_algo = fp[i].algo;
            l->filter_ws = need;
            found = true;
        }
    if (!found)
        return ntp__be_error(ctx, "cuda backward", g, n, NTP_STATUS_UNSUPPORTED,
                             "cuDNN has no backward-filter algorithm for this convolution");
    cudnnConvolutionFwdAlgoPerf_t wp[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    got = 0;
    if ((e = cudnnGetConvolutionForwardAlgorithm_v7(s->dnn, l->x, l->w, l->conv, l->y,
                                                    CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, wp)) !=
        CUDNN_STATUS_SUCCESS)
        return dnn_fail(ctx, a, e, "forward algorithm search");
    found = false;
    for (int pass = 0; pass < 2 && !found; pass++)
        for (int i = 0; i < got && !found; i++) {
            size_t need = 0;
            if (wp[i].status != CUDNN_STATUS_SUCCESS ||
                (pass == 0 && wp[i].determinism != CUDNN_DETERMINISTIC))
                continue;
            if (cudnnGetConvolutionForwardWorkspaceSize(
                    s->dnn, l->x, l->w, l->conv, l->y, wp[i].algo, &need) != CUDNN_STATUS_SUCCESS ||
                need > CUDAB_CONV_WS_MAX)
                continue;
            l->fwd_algo = wp[i].algo;
            l->fwd_ws = need;
            found = true;
        }
    if (!found)
        return ntp__be_error(ctx, "cuda backward", g, n, NTP_STATUS_UNSUPPORTED,
                             "cuDNN has no forward algorithm for this convolution");
    return NTP_STATUS_OK;
}

/* Pooling as misc.c's forward describes it to cuDNN. */
static ntp_status build_pool(ntp_ctx *ctx, const ntp_backward_args *a, const ntp_kargs *k,
                             tb_layer *l)
{
    const ntp_node *n = a->n;
    const ntp_shape *xs = &a->g->tensors[n->in[0]].shape, *ys = &a->g->tensors[n->out[0]].shape;
    bool global = n->op == NTP_OP_GLOBAL_MAXPOOL || n->op == NTP_OP_GLOBAL_AVGPOOL;
    bool is_max = n->op == NTP_OP_MAXPOOL || n->op == NTP_OP_GLOBAL_MAXPOOL;
    bool incl = n->op == NTP_OP_AVGPOOL && n->a.count_include_pad;
    int nk = xs->ndim - 2, sk = nk == 1 ? 2 : nk, lead = nk == 1 ? 1 : 0;
    int win[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, str[3] = {1, 1, 1};
    int64_t xd[5] = {xs->dim[0], xs->dim[1], 1, 1, 1}, yd[5] = {ys->dim[0], ys->dim[1], 1, 1, 1};
    for (int d = 0; d < nk; d++) {
        xd[2 + lead + d] = xs->dim[2 + d];
        yd[2 + lead + d] = ys->dim[2 + d];
        win[lead + d] = (int)(global ? xs->dim[2 + d] : n->a.kernel[d]);
        pad[lead + d] = global ? 0 : (int)n->a.pad[d];
        str[lead + d] = global ? 1 : (int)n->a.stride[d];
    }
    ntp_status st;
    if ((st = ntp__cuda_desc(ctx, k, &l->x, NTP_DTYPE_F32, 2 + sk, xd, NULL)) ||
        (st = ntp__cuda_desc(ctx, k, &l->y, NTP_DTYPE_F32, 2 + sk, yd, NULL)))
        return st;
    cudnnStatus_t e = cudnnCreatePoolingDescriptor(&l->pool);
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnSetPoolingNdDescriptor(l->pool,
                                        is_max ? CUDNN_POOLING_MAX
                                        : incl ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                               : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
                                        CUDNN_PROPAGATE_NAN, sk, win, pad, str);
    return e == CUDNN_STATUS_SUCCESS ? NTP_STATUS_OK : dnn_fail(ctx, a, e, "pooling descriptor");
}

static ntp_status build_act(ntp_ctx *ctx, const ntp_backward_args *a, const ntp_kargs *k,
                            tb_layer *l)
{
    const ntp_node *n = a->n;
    int64_t d1[1] = {l->nx};
    ntp_status st = ntp__cuda_desc(ctx, k, &l->x, NTP_DTYPE_F32, 1, d1, NULL);
    if (st)
        return st;
    cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
    double coef = 0.0;
    if (n->op == NTP_OP_RELU && n->a.has_max) {
        mode = CUDNN_ACTIVATION_CLIPPED_RELU;
        coef = n->a.max;
    } else if (n->op == NTP_OP_SIGMOID) {
        mode = CUDNN_ACTIVATION_SIGMOID;
    } else if (n->op == NTP_OP_TANH) {
        mode = CUDNN_ACTIVATION_TANH;
    }
    cudnnStatus_t e = cudnnCreateActivationDescriptor(&l->act);
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnSetActivationDescriptor(l->act, mode, CUDNN_PROPAGATE_NAN, coef);
    return e == CUDNN_STATUS_SUCCESS ? NTP_STATUS_OK : dnn_fail(ctx, a, e, "activation descriptor");
}

static ntp_status build(ntp_ctx *ctx, cudab_state *s, const ntp_backward_args *a, tb_layer *l)
{
    const ntp_graph *g = a->g;
    const ntp_node *n = a->n;
    const ntp_shape *xs = &g->tensors[n->in[0]].shape, *ys = &g->tensors[n->out[0]].shape;
    ntp_kargs k = {.g = g, .node = n};
    l->n = n;
    l->kind = kind_of(n->op);
    l->nx = ntp_shape_numel(xs);
    l->ny = ntp_shape_numel(ys);
    l->nw = n->n_w > 0 ? ntp_shape_numel(&g->tensors[n->w[0]].shape) : 0;
    l->nx2 = n->n_in > 1 ? ntp_shape_numel(&g->tensors[n->in[1]].shape) : 0;
    switch (l->kind) {
    case TB_CONV: return build_conv(ctx, s, a, &k, l);
    case TB_FC: {
        l->K = xs->dim[xs->ndim - 1];
        l->F = ys->dim[ys->ndim - 1];
        l->R = l->nx / l->K;
        if (l->nw != l->F * l->K)
            return ntp__be_error(ctx, "cuda backward", g, n, NTP_STATUS_SHAPE_ERROR,
                                 "weight of %lld values, expected %lld x %lld", (long long)l->nw,
                                 (long long)l->F, (long long)l->K);
        /* The bias gradient sums dY [rows, F] over its rows: cuDNN's bias
         * gradient of an NCHW [rows, F, 1, 1]. */
        int64_t yd[2] = {l->R, l->F};
        ntp_status st = ntp__cuda_desc(ctx, &k, &l->y, NTP_DTYPE_F32, 2, yd, NULL);
        return st ? st : channel_desc(ctx, &k, &l->c, 4, l->F);
    }
    case TB_MATMUL:
        return mm_geometry(g, n, l) ? NTP_STATUS_OK
                                    : ntp__be_error(ctx, "cuda backward", g, n, NTP_STATUS_INTERNAL,
                                                    "a matmul this backward does not take");
    case TB_POOL: return build_pool(ctx, a, &k, l);
    case TB_BNORM: {
        ntp_status st = ntp__cuda_desc(ctx, &k, &l->x, NTP_DTYPE_F32, xs->ndim, xs->dim, NULL);
        if (st)
            return st;
        cudnnStatus_t e = cudnnCreateTensorDescriptor(&l->c);
        if (e == CUDNN_STATUS_SUCCESS)
            e = cudnnDeriveBNTensorDescriptor(l->c, l->x, CUDNN_BATCHNORM_SPATIAL);
        l->F = xs->dim[1];
        return e == CUDNN_STATUS_SUCCESS ? NTP_STATUS_OK
                                         : dnn_fail(ctx, a, e, "batch norm descriptor");
    }
    case TB_ACT: return build_act(ctx, a, &k, l);
    case TB_SOFTMAX: {
        int64_t ax = n->a.axis < 0 ? n->a.axis + xs->ndim : n->a.axis, inner = 1;
        for (int d = (int)ax + 1; d < xs->ndim; d++)
            inner *= xs->dim[d];
        int64_t d4[4] = {l->nx / (xs->dim[ax] * inner), xs->dim[ax], inner, 1};
        return ntp__cuda_desc(ctx, &k, &l->x, NTP_DTYPE_F32, 4, d4, NULL);
    }
    case TB_NONE: break;
    }
    return ntp__be_error(ctx, "cuda backward", g, n, NTP_STATUS_UNSUPPORTED,
                         "no backward for %s here", ntp__op_name(n->op));
}

/* Layer a->n's descriptors, built at its first call. */
static ntp_status find_layer(ntp_ctx *ctx, cudab_state *s, const ntp_backward_args *a,
                             tb_layer **out)
{
    struct cudab_tstate *t = s->train;
    for (int i = 0; i < t->n_layers; i++)
        if (t->layers[i]->n == a->n) {
            *out = t->layers[i];
            return NTP_STATUS_OK;
        }
    if (t->n_layers == t->cap_layers) {
        int cap = t->cap_layers ? 2 * t->cap_layers : 64;
        tb_layer **p = realloc(t->layers, (size_t)cap * sizeof *p);
        if (!p)
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda backward: out of memory");
        t->layers = p;
        t->cap_layers = cap;
    }
    tb_layer *l = calloc(1, sizeof *l);
    if (!l)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda backward: out of memory");
    ntp_status st = build(ctx, s, a, l);
    if (st) {
        layer_free(l);
        return st;
    }
    t->layers[t->n_layers++] = l;
    *out = l;
    return NTP_STATUS_OK;
}

/* --- running a layer --------------------------------------------------------------- */

static const float one = 1.0f, zero = 0.0f;

static ntp_status run_conv(ntp_ctx *ctx, cudab_state *s, const ntp_backward_args *a, tb_layer *l)
{
    void *x, *w, *dy, *dx, *dw, *db, *ws;
    ntp_status st;
    cudnnStatus_t e;
    if (a->mode == 1) {
        if (!a->w || !a->dy)
            return missing(ctx, a, !a->w ? "weight" : "output gradient");
        if (!a->dx)
            return NTP_STATUS_OK;
        if ((st = upload(ctx, s, a, B_W, a->w, l->nw, &w)) ||
            (st = upload(ctx, s, a, B_DY, a->dy, l->ny, &dy)) ||
            (st = want_buf(ctx, s, a, B_DX, l->nx * 4, &dx)) ||
            (st = want_buf(ctx, s, a, B_WS, (int64_t)l->data_ws, &ws)))
            return st;
        e = cudnnConvolutionBackwardData(s->dnn, &one, l->w, w, l->y, dy, l->conv, l->data_algo, ws,
                                         l->data_ws, &zero, l->x, dx);
        if (e != CUDNN_STATUS_SUCCESS)
            return dnn_fail(ctx, a, e, "convolution backward data");
        return download(ctx, s, a, a->dx, dx, l->nx);
    }
    if (!a->x || !a->dy || !a->dw)
        return missing(ctx, a, !a->x ? "input" : !a->dy ? "output gradient" : "weight gradient");
    if ((st = upload(ctx, s, a, B_X, a->x, l->nx, &x)) ||
        (st = upload(ctx, s, a, B_DY, a->dy, l->ny, &dy)) ||
        (st = want_buf(ctx, s, a, B_DW, l->nw * 4, &dw)) ||
        (st = want_buf(ctx, s, a, B_WS, (int64_t)l->filter_ws, &ws)))
        return st;
    e = cudnnConvolutionBackwardFilter(s->dnn, &one, l->x, x, l->y, dy, l->conv, l->filter_algo, ws,
                                       l->filter_ws, &zero, l->w, dw);
    if (e != CUDNN_STATUS_SUCCESS)
        return dnn_fail(ctx, a, e, "convolution backward filter");
    if ((st = download(ctx, s, a, a->dw, dw, l->nw)))
        return st;
    if (!a->db)
        return NTP_STATUS_OK;
    int64_t F = a->g->tensors[a->n->out[0]].shape.dim[1];
    if ((st = want_buf(ctx, s, a, B_DB, F * 4, &db)))
        return st;
    if ((e = cudnnConvolutionBackwardBias(s->dnn, &one, l->y, dy, &zero, l->c, db)) !=
        CUDNN_STATUS_SUCCESS)
        return dnn_fail(ctx, a, e, "convolution backward bias");
    return download(ctx, s, a, a->db, db, F);
}

/* y [R, F] = x [R, K]·Wᵀ + b: dX = dY·W, dW = dYᵀ·X, db = Σ_rows dY. */
static ntp_status run_fc(ntp_ctx *ctx, cudab_state *s, const ntp_backward_args *a, tb_layer *l)
{
    void *x, *w, *dy, *dx, *dw, *db;
    ntp_status st;
    if (!a->dy)
        return missing(ctx, a, "output gradient");
    if ((st = upload(ctx, s, a, B_DY, a->dy, l->ny, &dy)))
        return st;
    if (a->mode == 1) {
        if (!a->w)
            return missing(ctx, a, "weight");
        if (!a->dx)
            return NTP_STATUS_OK;
        if ((st = upload(ctx, s, a, B_W, a->w, l->nw, &w)) ||
            (st = want_buf(ctx, s, a, B_DX, l->nx * 4, &dx)) ||
            (st = gemm(ctx, s, a, false, false, l->R, l->K, l->F, dy, l->F, 0, w, l->K, 0, dx, l->K,
                       0, 1)))
            return st;
        return download(ctx, s, a, a->dx, dx, l->nx);
    }
    if (!a->x || !a->dw)
        return missing(ctx, a, !a->x ? "input" : "weight gradient");
    if ((st = upload(ctx, s, a, B_X, a->x, l->nx, &x)) ||
        (st = want_buf(ctx, s, a, B_DW, l->nw * 4, &dw)) ||
        (st = gemm(ctx, s, a, true, false, l->F, l->K, l->R, dy, l->F, 0, x, l->K, 0, dw, l->K, 0,
                   1)) ||
        (st = download(ctx, s, a, a->dw, dw, l->nw)))
        return st;
    if (!a->db)
        return NTP_STATUS_OK;
    if ((st = want_buf(ctx, s, a, B_DB, l->F * 4, &db)))
        return st;
    cudnnStatus_t e = cudnnConvolutionBackwardBias(s->dnn, &one, l->y, dy, &zero, l->c, db);
    if (e != CUDNN_STATUS_SUCCESS)
        return dnn_fail(ctx, a, e, "bias gradient");
    return download(ctx, s, a, a->db, db, l->F);
}

/* C = op(A)·op(B), op(A) [M, K], op(B) [K, N]. dA = dC·op(B)ᵀ (transposed
 * A: its gradient op(B)·dCᵀ); dB = op(A)ᵀ·dC (transposed B: dCᵀ·op(A)). A
 * B shared over the batch sums its gradient over it: A [batch·M, K] and
 * dC [batch·M, N] as one matrix each (mm_geometry keeps A untransposed
 * there). */
static ntp_status run_matmul(ntp_ctx *ctx, cudab_state *s, const ntp_backward_args *a, tb_layer *l)
{
    void *A = NULL, *B = NULL, *dC, *dA, *dB;
    ntp_status st;
    if (a->mode != 1 || (!a->dx && !a->dx2))
        return NTP_STATUS_OK;
    if (!a->dy || (a->dx && !a->x2) || (a->dx2 && !a->x))
        return missing(ctx, a, !a->dy ? "output gradient" : "input");
    int64_t M = l->M, N = l->N, K = l->Km, sc = M * N;
    if ((st = upload(ctx, s, a, B_DY, a->dy, l->ny, &dC)) ||
        (a->x && (st = upload(ctx, s, a, B_X, a->x, l->nx, &A))) ||
        (a->x2 && (st = upload(ctx, s, a, B_X2, a->x2, l->nx2, &B))))
        return st;
    if (a->dx) {
        if ((st = want_buf(ctx, s, a, B_DX, l->nx * 4, &dA)))
            return st;
        st = l->ta ? gemm(ctx, s, a, l->tb, true, K, M, N, B, l->ldb, l->sb, dC, N, sc, dA, M,
                          l->sa, l->batch)
                   : gemm(ctx, s, a, false, !l->tb, M, K, N, dC, N, sc, B, l->ldb, l->sb, dA, K,
                          l->sa, l->batch);
        if (st || (st = download(ctx, s, a, a->dx, dA, l->nx)))
            return st;
    }
    if (!a->dx2)
        return NTP_STATUS_OK;
    if ((st = want_buf(ctx, s, a, B_DX2, l->nx2 * 4, &dB)))
        return st;
    if (l->b_shared) {
        int64_t rows = l->batch * M;
        st = l->tb ? gemm(ctx, s, a, true, false, N, K, rows, dC, N, 0, A, K, 0, dB, K, 0, 1)
                   : gemm(ctx, s, a, true, false, K, N, rows, A, K, 0, dC, N, 0, dB, N, 0, 1);
    } else {
        int64_t sbw = K * N;
        st = l->tb ? gemm(ctx, s, a, true, l->ta, N, K, M, dC, N, sc, A, l->lda, l->sa, dB, K, sbw,
                          l->batch)
                   : gemm(ctx, s, a, !l->ta, false, K, N, M, A, l->lda, l->sa, dC, N, sc, dB, N,
                          sbw, l->batch);
    }
    return st ? st : download(ctx, s, a, a->dx2, dB, l->nx2);
}

/* cudnnPoolingBackward reads the forward's x and y: y comes from a
 * cudnnPoolingForward here. Average pooling's gradient reads neither, and
 * the trainer gives no x for it: zeros stand in. */
static ntp_status run_pool(ntp_ctx *ctx, cudab_state *s, const ntp_backward_args *a, tb_layer *l)
{
    void *x, *y, *dy, *dx;
    ntp_status st;
    bool is_max = a->n->op == NTP_OP_MAXPOOL || a->n->op == NTP_OP_GLOBAL_MAXPOOL;
    if (a->mode != 1 || !a->dx)
        return NTP_STATUS_OK;
    if (!a->dy || (is_max && !a->x))
        return missing(ctx, a, !a->dy ? "output gradient" : "input");
    if ((st = upload(ctx, s, a, B_DY, a->dy, l->ny, &dy)) ||
        (st = want_buf(ctx, s, a, B_Y, l->ny * 4, &y)) ||
        (st = want_buf(ctx, s, a, B_DX, l->nx * 4, &dx)))
        return st;
    if (a->x) {
        st = upload(ctx, s, a, B_X, a->x, l->nx, &x);
    } else if (!(st = want_buf(ctx, s, a, B_X, l->nx * 4, &x))) {
        cudaError_t ce = cudaMemsetAsync(x, 0, (size_t)l->nx * 4, s->stream);
        if (ce != cudaSuccess)
            st = rt_fail(ctx, a, ce, "clearing a buffer");
    }
    if (st)
        return st;
    cudnnStatus_t e = cudnnPoolingForward(s->dnn, l->pool, &one, l->x, x, &zero, l->y, y);
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnPoolingBackward(s->dnn, l->pool, &one, l->y, y, l->y, dy, l->x, x, &zero, l->x,
                                 dx);
    if (e != CUDNN_STATUS_SUCCESS)
        return dnn_fail(ctx, a, e, "pooling backward");
    return download(ctx, s, a, a->dx, dx, l->nx);
}

/* Batch norm in training mode from the batch's statistics: cuDNN takes the
 * mean and 1/√(var+ε), ntprof passes the biased variance. One call gives
 * dx, dscale and dshift; each phase keeps its part. */
static ntp_status run_bnorm(ntp_ctx *ctx, cudab_state *s, const ntp_backward_args *a, tb_layer *l)
{
    void *x, *w, *dy, *dx, *dw, *db, *mean, *inv;
    ntp_status st;
    if ((a->mode == 1 && !a->dx) || (a->mode == 2 && !a->dw && !a->db))
        return NTP_STATUS_OK;
    if (!a->x || !a->w || !a->dy || !a->mean || !a->var)
        return missing(ctx, a,
                       !a->x    ? "input"
                       : !a->w  ? "scale"
                       : !a->dy ? "output gradient"
                                : "batch statistics");
    int64_t C = l->F;
    float *hinv = malloc((size_t)C * sizeof *hinv + 1);
    if (!hinv)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda backward: out of memory");
    for (int64_t c = 0; c < C; c++)
        hinv[c] = (float)(1.0 / sqrt((double)a->var[c] + a->n->a.epsilon));
    st = upload(ctx, s, a, B_INV, hinv, C, &inv);
    /* The copy from pageable memory has left hinv when the call returns. */
    free(hinv);
    if (st || (st = upload(ctx, s, a, B_X, a->x, l->nx, &x)) ||
        (st = upload(ctx, s, a, B_W, a->w, C, &w)) ||
        (st = upload(ctx, s, a, B_DY, a->dy, l->nx, &dy)) ||
        (st = upload(ctx, s, a, B_MEAN, a->mean, C, &mean)) ||
        (st = want_buf(ctx, s, a, B_DX, l->nx * 4, &dx)) ||
        (st = want_buf(ctx, s, a, B_DW, C * 4, &dw)) ||
        (st = want_buf(ctx, s, a, B_DB, C * 4, &db)))
        return st;
    cudnnStatus_t e = cudnnBatchNormalizationBackward(s->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero,
                                                      &one, &zero, l->x, x, l->x, dy, l->x, dx,
                                                      l->c, w, dw, db, a->n->a.epsilon, mean, inv);
    if (e != CUDNN_STATUS_SUCCESS)
        return dnn_fail(ctx, a, e, "batch normalization backward");
    if (a->mode == 1)
        return download(ctx, s, a, a->dx, dx, l->nx);
    if ((st = download(ctx, s, a, a->dw, dw, C)))
        return st;
    return download(ctx, s, a, a->db, db, C);
}

/* cudnnActivationBackward reads x and y: y from cudnnActivationForward. */
static ntp_status run_act(ntp_ctx *ctx, cudab_state *s, const ntp_backward_args *a, tb_layer *l)
{
    void *x, *y, *dy, *dx;
    ntp_status st;
    if (a->mode != 1 || !a->dx)
        return NTP_STATUS_OK;
    if (!a->x || !a->dy)
        return missing(ctx, a, !a->x ? "input" : "output gradient");
    if ((st = upload(ctx, s, a, B_X, a->x, l->nx, &x)) ||
        (st = upload(ctx, s, a, B_DY, a->dy, l->nx, &dy)) ||
        (st = want_buf(ctx, s, a, B_Y, l->nx * 4, &y)) ||
        (st = want_buf(ctx, s, a, B_DX, l->nx * 4, &dx)))
        return st;
    cudnnStatus_t e = cudnnActivationForward(s->dnn, l->act, &one, l->x, x, &zero, l->x, y);
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnActivationBackward(s->dnn, l->act, &one, l->x, y, l->x, dy, l->x, x, &zero, l->x,
                                    dx);
    if (e != CUDNN_STATUS_SUCCESS)
        return dnn_fail(ctx, a, e, "activation backward");
    return download(ctx, s, a, a->dx, dx, l->nx);
}

/* From the output (the trainer gives y); from the input through a
 * cudnnSoftmaxForward when only that is given. */
static ntp_status run_softmax(ntp_ctx *ctx, cudab_state *s, const ntp_backward_args *a, tb_layer *l)
{
    void *x, *y, *dy, *dx;
    ntp_status st;
    cudnnSoftmaxAlgorithm_t alg =
        a->n->op == NTP_OP_LOG_SOFTMAX ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE;
    cudnnStatus_t e = CUDNN_STATUS_SUCCESS;
    if (a->mode != 1 || !a->dx)
        return NTP_STATUS_OK;
    if ((!a->y && !a->x) || !a->dy)
        return missing(ctx, a, !a->dy ? "output gradient" : "output");
    if ((st = upload(ctx, s, a, B_DY, a->dy, l->nx, &dy)) ||
        (st = want_buf(ctx, s, a, B_DX, l->nx * 4, &dx)))
        return st;
    if (a->y) {
        st = upload(ctx, s, a, B_Y, a->y, l->nx, &y);
    } else if (!(st = upload(ctx, s, a, B_X, a->x, l->nx, &x)) &&
               !(st = want_buf(ctx, s, a, B_Y, l->nx * 4, &y))) {
        e = cudnnSoftmaxForward(s->dnn, alg, CUDNN_SOFTMAX_MODE_CHANNEL, &one, l->x, x, &zero, l->x,
                                y);
    }
    if (st)
        return st;
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnSoftmaxBackward(s->dnn, alg, CUDNN_SOFTMAX_MODE_CHANNEL, &one, l->x, y, l->x, dy,
                                 &zero, l->x, dx);
    if (e != CUDNN_STATUS_SUCCESS)
        return dnn_fail(ctx, a, e, "softmax backward");
    return download(ctx, s, a, a->dx, dx, l->nx);
}

ntp_status ntp__cuda_backward(ntp_ctx *ctx, void *state, const ntp_backward_args *a)
{
    cudab_state *s = state;
    if (!s || !a || !a->g || !a->n)
        return ntp__error(ctx, NTP_STATUS_INTERNAL, "cuda backward: no state or no layer");
    if (a->mode != 1 && a->mode != 2)
        return ntp__be_error(ctx, "cuda backward", a->g, a->n, NTP_STATUS_INTERNAL,
                             "mode %d (1: data, 2: weights)", a->mode);
    if (!ntp__cuda_supports_backward(a->g, a->n))
        return ntp__be_error(ctx, "cuda backward", a->g, a->n, NTP_STATUS_UNSUPPORTED,
                             "no backward for this %s here", ntp__op_name(a->n->op));
    if (!s->train && !(s->train = calloc(1, sizeof *s->train)))
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda backward: out of memory");
    /* bf16 mixed precision: x, w and dy hold bf16 values, which the f32
     * kernels read exactly (docs/train.md). */
    tb_layer *l = NULL;
    ntp_status st = find_layer(ctx, s, a, &l);
    if (st)
        return st;
    switch (l->kind) {
    case TB_CONV: st = run_conv(ctx, s, a, l); break;
    case TB_FC: st = run_fc(ctx, s, a, l); break;
    case TB_MATMUL: st = run_matmul(ctx, s, a, l); break;
    case TB_POOL: st = run_pool(ctx, s, a, l); break;
    case TB_BNORM: st = run_bnorm(ctx, s, a, l); break;
    case TB_ACT: st = run_act(ctx, s, a, l); break;
    case TB_SOFTMAX: st = run_softmax(ctx, s, a, l); break;
    case TB_NONE:
        st = ntp__be_error(ctx, "cuda backward", a->g, a->n, NTP_STATUS_INTERNAL,
                           "no backward kind");
        break;
    }
    /* The copies to the host are complete when this returns, even after a
     * failure (which leaves nothing queued that reads freed memory). */
    cudaError_t e = cudaStreamSynchronize(s->stream);
    if (!st && e != cudaSuccess)
        st = rt_fail(ctx, a, e, "running the backward");
    return st;
}

/* --- the training forward ------------------------------------------------------------ */

/* The layers whose training forward runs here: those with a backward here
 * (the same descriptors), batch norm writing the batch's statistics. */
bool ntp__cuda_supports_train_forward(const ntp_graph *g, const ntp_node *n)
{
    return ntp__cuda_supports_backward(g, n);
}

/* y = x·Wᵀ (+ b), conv (+ b), the pooling, the activation, softmax or
 * C = op(A)·op(B) into the shared buffer of role B_Y. */
static ntp_status forward_layer(ntp_ctx *ctx, cudab_state *s, const ntp_backward_args *b,
                                const ntp_train_fwd_args *a, tb_layer *l, void **y)
{
    void *x, *w, *bias, *ws, *x2;
    ntp_status st;
    cudnnStatus_t e = CUDNN_STATUS_SUCCESS;
    bool has_bias = a->n->n_w > 1 && a->w[1];
    if ((st = upload(ctx, s, b, B_X, a->in[0], l->nx, &x)) ||
        (st = want_buf(ctx, s, b, B_Y, l->ny * 4, y)))
        return st;
    switch (l->kind) {
    case TB_CONV:
        if ((st = upload(ctx, s, b, B_W, a->w[0], l->nw, &w)) ||
            (st = want_buf(ctx, s, b, B_WS, (int64_t)l->fwd_ws, &ws)))
            return st;
        e = cudnnConvolutionForward(s->dnn, &one, l->x, x, l->w, w, l->conv, l->fwd_algo, ws,
                                    l->fwd_ws, &zero, l->y, *y);
        if (e == CUDNN_STATUS_SUCCESS && has_bias) {
            int64_t F = a->g->tensors[a->n->out[0]].shape.dim[1];
            if ((st = upload(ctx, s, b, B_B, a->w[1], F, &bias)))
                return st;
            e = cudnnAddTensor(s->dnn, &one, l->c, bias, &one, l->y, *y);
        }
        return e == CUDNN_STATUS_SUCCESS ? NTP_STATUS_OK : dnn_fail(ctx, b, e, "convolution");
    case TB_FC:
        if ((st = upload(ctx, s, b, B_W, a->w[0], l->nw, &w)) ||
            (st = gemm(ctx, s, b, false, true, l->R, l->F, l->K, x, l->K, 0, w, l->K, 0, *y, l->F,
                       0, 1)))
            return st;
        if (has_bias) {
            if ((st = upload(ctx, s, b, B_B, a->w[1], l->F, &bias)))
                return st;
            e = cudnnAddTensor(s->dnn, &one, l->c, bias, &one, l->y, *y);
        }
        return e == CUDNN_STATUS_SUCCESS ? NTP_STATUS_OK : dnn_fail(ctx, b, e, "bias");
    case TB_MATMUL:
        if ((st = upload(ctx, s, b, B_X2, a->in[1], l->nx2, &x2)))
            return st;
        return gemm(ctx, s, b, l->ta, l->tb, l->M, l->N, l->Km, x, l->lda, l->sa, x2, l->ldb, l->sb,
                    *y, l->N, l->M * l->N, l->batch);
    case TB_POOL: e = cudnnPoolingForward(s->dnn, l->pool, &one, l->x, x, &zero, l->y, *y); break;
    case TB_ACT: e = cudnnActivationForward(s->dnn, l->act, &one, l->x, x, &zero, l->x, *y); break;
    case TB_SOFTMAX:
        e = cudnnSoftmaxForward(
            s->dnn, a->n->op == NTP_OP_LOG_SOFTMAX ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
            CUDNN_SOFTMAX_MODE_CHANNEL, &one, l->x, x, &zero, l->x, *y);
        break;
    case TB_BNORM: /* forward_bnorm */
    case TB_NONE:
        return ntp__be_error(ctx, "cuda forward", a->g, a->n, NTP_STATUS_INTERNAL,
                             "no forward kind");
    }
    return e == CUDNN_STATUS_SUCCESS ? NTP_STATUS_OK : dnn_fail(ctx, b, e, "forward");
}

/* Batch norm in training mode: cudnnBatchNormalizationForwardTraining with
 * the batch's statistics; it saves the mean and 1/√(var+ε), and the
 * trainer takes the biased variance, var = 1/inv² − ε. The running
 * statistics are the trainer's business (none asked for here). */
static ntp_status forward_bnorm(ntp_ctx *ctx, cudab_state *s, const ntp_backward_args *b,
                                const ntp_train_fwd_args *a, tb_layer *l, void **y)
{
    void *x, *scale, *shift, *mean, *inv;
    ntp_status st;
    int64_t C = l->F;
    if (a->n->n_w < 2 || !a->w[0] || !a->w[1] || !a->mean || !a->var)
        return missing(ctx, b, "scale, shift or statistics");
    if ((st = upload(ctx, s, b, B_X, a->in[0], l->nx, &x)) ||
        (st = upload(ctx, s, b, B_W, a->w[0], C, &scale)) ||
        (st = upload(ctx, s, b, B_B, a->w[1], C, &shift)) ||
        (st = want_buf(ctx, s, b, B_Y, l->nx * 4, y)) ||
        (st = want_buf(ctx, s, b, B_MEAN, C * 4, &mean)) ||
        (st = want_buf(ctx, s, b, B_INV, C * 4, &inv)))
        return st;
    cudnnStatus_t e = cudnnBatchNormalizationForwardTraining(
        s->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, l->x, x, l->x, *y, l->c, scale, shift, 1.0,
        NULL, NULL, a->n->a.epsilon, mean, inv);
    if (e != CUDNN_STATUS_SUCCESS)
        return dnn_fail(ctx, b, e, "batch normalization forward training");
    if ((st = download(ctx, s, b, a->mean, mean, C)) || (st = download(ctx, s, b, a->var, inv, C)))
        return st;
    cudaError_t ce = cudaStreamSynchronize(s->stream);
    if (ce != cudaSuccess)
        return rt_fail(ctx, b, ce, "batch normalization forward training");
    for (int64_t c = 0; c < C; c++) {
        double iv = a->var[c];
        a->var[c] = (float)(1.0 / (iv * iv) - a->n->a.epsilon);
    }
    return NTP_STATUS_OK;
}

ntp_status ntp__cuda_train_forward(ntp_ctx *ctx, void *state, const ntp_train_fwd_args *a)
{
    cudab_state *s = state;
    if (!s || !a || !a->g || !a->n)
        return ntp__error(ctx, NTP_STATUS_INTERNAL, "cuda forward: no state or no layer");
    if (!ntp__cuda_supports_train_forward(a->g, a->n))
        return ntp__be_error(ctx, "cuda forward", a->g, a->n, NTP_STATUS_UNSUPPORTED,
                             "no training forward for this %s here", ntp__op_name(a->n->op));
    for (int i = 0; i < a->n->n_in; i++)
        if (!a->in[i])
            return ntp__be_error(ctx, "cuda forward", a->g, a->n, NTP_STATUS_INTERNAL,
                                 "input %d was not given", i);
    if (!a->out || (a->n->n_w > 0 && !a->w[0]))
        return ntp__be_error(ctx, "cuda forward", a->g, a->n, NTP_STATUS_INTERNAL,
                             "no output or no weight given");
    if (!s->train && !(s->train = calloc(1, sizeof *s->train)))
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda forward: out of memory");
    /* The layer's descriptors are its backward's (built by whichever
     * comes first); b carries the layer for them and for the errors. */
    ntp_backward_args b = {.g = a->g, .n = a->n};
    tb_layer *l = NULL;
    void *y = NULL;
    ntp_status st = find_layer(ctx, s, &b, &l);
    if (!st)
        st = l->kind == TB_BNORM ? forward_bnorm(ctx, s, &b, a, l, &y)
                                 : forward_layer(ctx, s, &b, a, l, &y);
    if (!st)
        st = download(ctx, s, &b, a->out, y, l->ny);
    cudaError_t e = cudaStreamSynchronize(s->stream);
    if (!st && e != cudaSuccess)
        st = rt_fail(ctx, &b, e, "running the forward");
    return st;
}
