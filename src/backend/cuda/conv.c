/* Convolution and transposed convolution through cuDNN.
 *
 * conv     cudnnConvolutionForward, NCHW (NCDHW), grouped and depthwise
 *          through the group count, dilation; the algorithm is the fastest
 *          cudnnFindConvolutionForwardAlgorithm measures at prepare whose
 *          workspace fits CUDAB_CONV_WS_MAX (PyTorch's benchmark mode).
 * deconv   cudnnConvolutionBackwardData: a transposed convolution is the
 *          data gradient of the convolution from its output space, whose
 *          filter [C_in, F/g, k...] is ONNX ConvTranspose's weight as is.
 * 1-d layers run as 2-d ones of height 1. cuDNN pads symmetrically: a conv
 * with unequal begin and end padding pads its input explicitly (the pad
 * kernel, into the workspace) by the difference and lets cuDNN pad the
 * rest. Bias, activations and residual operands folded into the layer are
 * one epilogue pass over the output.
 *
 * Math: f32 uses FMA kernels (CUDNN_FMA_MATH), so results are IEEE f32;
 * --precision tf32 allows TF32 tensor cores (CUDNN_DEFAULT_MATH); f16 and
 * bf16 compute in f32 (cuDNN's "pseudo" half configurations, as PyTorch)
 * on tensor cores. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "cuda-impl.h"

typedef struct conv_priv {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    bool deconv;
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd;
    size_t algo_ws;
    /* Explicit padding of the input for unequal begin and end pads. */
    bool padded;
    int nd;
    int64_t in_dims[5], pad_dims[5], pad_begin[5];
    size_t pad_bytes;
    ntp_dtype t;
    int64_t out_n, channels, inner;
    bool bias;
} conv_priv;

static void conv_free(cudab_node *nd)
{
    conv_priv *p = nd->priv;
    if (!p)
        return;
    if (p->x)
        cudnnDestroyTensorDescriptor(p->x);
    if (p->y)
        cudnnDestroyTensorDescriptor(p->y);
    if (p->w)
        cudnnDestroyFilterDescriptor(p->w);
    if (p->conv)
        cudnnDestroyConvolutionDescriptor(p->conv);
    free(p);
    nd->priv = NULL;
}

static bool fits(int64_t v)
{
    return v >= 0 && v < 0x7fffffff;
}

bool ntp__cuda_conv_supports(const ntp_graph *g, const ntp_node *n)
{
    if (n->n_in != 1 || n->n_out != 1)
        return false;
    const ntp_shape *x = &ntp__cin(g, n, 0)->shape, *y = &ntp__cout(g, n, 0)->shape;
    int nk = x->ndim - 2;
    if (nk < 1 || nk > 3 || y->ndim != x->ndim || n->a.nk != nk || n->a.groups < 1)
        return false;
    for (int d = 0; d < x->ndim; d++)
        if (!fits(x->dim[d]) || !fits(y->dim[d]))
            return false;
    if (x->dim[1] % n->a.groups || y->dim[1] % n->a.groups)
        return false;
    for (int d = 0; d < nk; d++)
        if (n->a.pad[d] < 0 || n->a.pad[nk + d] < 0 || n->a.stride[d] < 1 || n->a.dilation[d] < 1)
            return false;
    if (n->op == NTP_OP_DECONV)
        for (int d = 0; d < nk; d++)
            /* A transposed convolution crops instead of padding: cuDNN
             * crops symmetrically only. */
            if (n->a.pad[d] != n->a.pad[nk + d] || n->a.output_padding[d] >= n->a.stride[d])
                return false;
    return true;
}

static ntp_status conv_run(ntp_ctx *ctx, cudab_state *s, cudab_node *nd, const ntp_kargs *k)
{
    conv_priv *p = nd->priv;
    const void *x = nd->in[0].d;
    char *ws = s->ws;
    if (p->padded) {
        int r = ntp__cudak_pad(s->stream, ntp__cuda_k_type(p->t), p->nd, p->in_dims, p->pad_dims,
                               p->pad_begin, 0, 0.0f, x, ws);
        if (r)
            return ntp__cuda_rt(ctx, k, (cudaError_t)r, "padding the input");
        x = ws;
    }
    void *aws = p->algo_ws ? ws + p->pad_bytes : NULL;
    const float one = 1.0f, zero = 0.0f;
    cudnnStatus_t e =
        p->deconv ? cudnnConvolutionBackwardData(s->dnn, &one, p->w, nd->wp[0], p->x, x, p->conv,
                                                 p->bwd, aws, p->algo_ws, &zero, p->y, nd->out[0].d)
                  : cudnnConvolutionForward(s->dnn, &one, p->x, x, p->w, nd->wp[0], p->conv, p->fwd,
                                            aws, p->algo_ws, &zero, p->y, nd->out[0].d);
    if (e != CUDNN_STATUS_SUCCESS)
        return ntp__cuda_dnn(ctx, k, e, p->deconv ? "transposed convolution" : "convolution");
    return ntp__cuda_epilogue(ctx, s, nd, k, p->t, nd->out[0].d, p->out_n,
                              p->bias ? ntp__cuda_weight_f32(nd, 1) : NULL, p->channels, p->inner);
}

static const char *fwd_name(cudnnConvolutionFwdAlgo_t a)
{
    /* A table, not a switch: cuDNN adds algorithms of its own. */
    static const struct {
        cudnnConvolutionFwdAlgo_t a;
        const char *name;
    } names[] = {
        {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, "implicit_gemm"},
        {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, "implicit_precomp_gemm"},
        {CUDNN_CONVOLUTION_FWD_ALGO_GEMM, "gemm"},
        {CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, "direct"},
        {CUDNN_CONVOLUTION_FWD_ALGO_FFT, "fft"},
        {CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING, "fft_tiling"},
        {CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, "winograd"},
        {CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, "winograd_nonfused"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].a == a)
            return names[i].name;
    return "fwd";
}

static const char *bwd_name(cudnnConvolutionBwdDataAlgo_t a)
{
    /* A table, not a switch: cuDNN adds algorithms of its own. */
    static const struct {
        cudnnConvolutionBwdDataAlgo_t a;
        const char *name;
    } names[] = {
        {CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, "bwd_data_0"},
        {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, "bwd_data_1"},
        {CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT, "bwd_data_fft"},
        {CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING, "bwd_data_fft_tiling"},
        {CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD, "bwd_data_winograd"},
        {CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED, "bwd_data_winograd_nonfused"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].a == a)
            return names[i].name;
    return "bwd_data";
}

static const char *math_name(cudnnMathType_t m, ntp_dtype t)
{
    if (t != NTP_DTYPE_F32)
        return m == CUDNN_FMA_MATH ? "fma" : "tensor_op";
    return m == CUDNN_FMA_MATH ? "f32" : "tf32";
}

ntp_status ntp__cuda_conv_prepare(ntp_ctx *ctx, cudab_state *s, ntp_kargs *k, cudab_node *nd)
{
    const ntp_node *n = k->node;
    const ntp_attrs *a = &n->a;
    conv_priv *p = calloc(1, sizeof *p);
    if (!p)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    nd->priv = p;
    nd->free_priv = conv_free;
    p->deconv = n->op == NTP_OP_DECONV;
    p->t = k->in[0].dtype;
    if (!ntp__cuda_float_type(p->t) || k->out[0].dtype != p->t || k->n_w < 1 ||
        k->w[0].dtype != p->t)
        return ntp__cuda_error(ctx, k, NTP_STATUS_UNSUPPORTED, "input %s, output %s, weights %s",
                               ntp_dtype_name(p->t), ntp_dtype_name(k->out[0].dtype),
                               ntp_dtype_name(k->n_w ? k->w[0].dtype : NTP_DTYPE_F32));
    const ntp_shape *xs = &k->in[0].shape, *ys = &k->out[0].shape, *ws = &k->w[0].shape;
    int nk = xs->ndim - 2;
    /* cuDNN's spatial dims: a 1-d layer gets a leading height of 1. */
    int sk = nk == 1 ? 2 : nk, lead = nk == 1 ? 1 : 0;
    int64_t xd[5], yd[5];
    int wd[5], pad[3], stride[3], dil[3];
    xd[0] = xs->dim[0];
    xd[1] = xs->dim[1];
    yd[0] = ys->dim[0];
    yd[1] = ys->dim[1];
    wd[0] = (int)ws->dim[0];
    wd[1] = (int)ws->dim[1];
    if (lead) {
        xd[2] = yd[2] = 1;
        wd[2] = 1;
        pad[0] = 0;
        stride[0] = dil[0] = 1;
    }
    p->padded = false;
    for (int d = 0; d < nk; d++) {
        int64_t b = a->pad[d], e = a->pad[nk + d], m = b < e ? b : e;
        xd[2 + lead + d] = xs->dim[2 + d];
        yd[2 + lead + d] = ys->dim[2 + d];
        wd[2 + lead + d] = (int)ws->dim[2 + d];
        pad[lead + d] = (int)m;
        stride[lead + d] = (int)a->stride[d];
        dil[lead + d] = (int)a->dilation[d];
        p->pad_begin[2 + lead + d] = b - m;
        if (b != e)
            p->padded = true;
    }
    int nd_all = 2 + sk;
    p->nd = nd_all;
    for (int d = 0; d < nd_all; d++) {
        p->in_dims[d] = xd[d];
        p->pad_dims[d] = xd[d];
    }
    if (p->padded) {
        for (int d = 0; d < nk; d++)
            p->pad_dims[2 + lead + d] =
                xd[2 + lead + d] + a->pad[d] + a->pad[nk + d] - 2 * pad[lead + d];
        int64_t cnt = 1;
        for (int d = 0; d < nd_all; d++)
            cnt *= p->pad_dims[d];
        p->pad_bytes = ((size_t)cnt * ntp_dtype_size(p->t) + 255) / 256 * 256;
    }
    ntp_status st;
    if ((st = ntp__cuda_desc(ctx, k, &p->x, p->t, nd_all, p->pad_dims, NULL)) ||
        (st = ntp__cuda_desc(ctx, k, &p->y, p->t, nd_all, yd, NULL)))
        return st;
    cudnnDataType_t dt = ntp__cuda_dnn_type(p->t);
    cudnnStatus_t e = cudnnCreateFilterDescriptor(&p->w);
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnSetFilterNdDescriptor(p->w, dt, CUDNN_TENSOR_NCHW, nd_all, wd);
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnCreateConvolutionDescriptor(&p->conv);
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnSetConvolutionNdDescriptor(p->conv, sk, pad, stride, dil, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT);
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnSetConvolutionGroupCount(p->conv, (int)a->groups);
    /* f32: IEEE FMAs unless TF32 was asked for; f16 and bf16: tensor cores. */
    cudnnMathType_t math = p->t != NTP_DTYPE_F32 ? CUDNN_TENSOR_OP_MATH
                           : s->tf32             ? CUDNN_DEFAULT_MATH
                                                 : CUDNN_FMA_MATH;
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnSetConvolutionMathType(p->conv, math);
    if (e != CUDNN_STATUS_SUCCESS)
        return ntp__cuda_dnn(ctx, k, e, "convolution descriptor");
    /* The layer's shape must be cuDNN's: the forward convolution of the
     * (padded) input, or for deconv the one from the output to the input. */
    int od[5];
    e = cudnnGetConvolutionNdForwardOutputDim(p->conv, p->deconv ? p->y : p->x, p->w, nd_all, od);
    if (e != CUDNN_STATUS_SUCCESS)
        return ntp__cuda_dnn(ctx, k, e, "output shape");
    const int64_t *want = p->deconv ? xd : yd;
    for (int d = 0; d < nd_all; d++)
        if (od[d] != want[d])
            return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL,
                                   "cuDNN computes dim %d as %d where the layer has %lld", d, od[d],
                                   (long long)want[d]);
    cudnnMathType_t used = math;
    if (!p->deconv) {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int got = 0;
        e = cudnnFindConvolutionForwardAlgorithm(s->dnn, p->x, p->w, p->conv, p->y,
                                                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf);
        if (e != CUDNN_STATUS_SUCCESS)
            return ntp__cuda_dnn(ctx, k, e, "algorithm search");
        int best = -1;
        /* The fastest deterministic algorithm (the same bytes every run, so
         * runs, replays and backends compare exactly), else the fastest. */
        for (int pass = 0; pass < 2 && best < 0; pass++)
            for (int i = 0; i < got && best < 0; i++)
                if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= CUDAB_CONV_WS_MAX &&
                    (pass == 1 || perf[i].determinism == CUDNN_DETERMINISTIC))
                    best = i;
        if (best < 0)
            return ntp__cuda_error(ctx, k, NTP_STATUS_UNSUPPORTED,
                                   "cuDNN has no forward algorithm for this convolution");
        p->fwd = perf[best].algo;
        p->algo_ws = perf[best].memory;
        used = perf[best].mathType;
    } else {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        int got = 0;
        e = cudnnFindConvolutionBackwardDataAlgorithm(
            s->dnn, p->w, p->x, p->conv, p->y, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, perf);
        if (e != CUDNN_STATUS_SUCCESS)
            return ntp__cuda_dnn(ctx, k, e, "algorithm search");
        int best = -1;
        for (int pass = 0; pass < 2 && best < 0; pass++)
            for (int i = 0; i < got && best < 0; i++)
                if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= CUDAB_CONV_WS_MAX &&
                    (pass == 1 || perf[i].determinism == CUDNN_DETERMINISTIC))
                    best = i;
        if (best < 0)
            return ntp__cuda_error(ctx, k, NTP_STATUS_UNSUPPORTED,
                                   "cuDNN has no algorithm for this transposed convolution");
        p->bwd = perf[best].algo;
        p->algo_ws = perf[best].memory;
        used = perf[best].mathType;
    }
    /* Run with the math type the algorithm was measured with; f32 without
     * TF32 stays restricted to FMA kernels whatever the search reports. */
    if (p->t == NTP_DTYPE_F32 && !s->tf32)
        used = CUDNN_FMA_MATH;
    if ((e = cudnnSetConvolutionMathType(p->conv, used)) != CUDNN_STATUS_SUCCESS)
        return ntp__cuda_dnn(ctx, k, e, "math type");
    if ((st = ntp__cuda_upload_weights(ctx, s, k, nd, true)))
        return st;
    p->bias = a->bias && k->n_w >= 2;
    p->channels = ys->dim[1];
    p->inner = 1;
    for (int d = 2; d < ys->ndim; d++)
        p->inner *= ys->dim[d];
    p->out_n = ntp_shape_numel(ys);
    nd->ws = p->pad_bytes + p->algo_ws;
    nd->run = conv_run;
    snprintf(nd->impl, sizeof nd->impl, "cudnn:%s:%s%s",
             p->deconv ? bwd_name(p->bwd) : fwd_name(p->fwd), math_name(used, p->t),
             p->padded ? "+pad" : "");
    return NTP_STATUS_OK;
}
