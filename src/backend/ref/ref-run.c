/* Dispatch, workspace sizes and argument checks of the reference kernels. */
#include <stdint.h>
#include <stdio.h>

#include "core/ctx-impl.h"
#include "inlay/inlay-impl.h"
#include "ref-impl.h"
#include "ref-onnx-impl.h"

ntp_status ntp__ref_expect(ntp_ctx *ctx, const ntp_kargs *k, int n_in, int min_w, int max_w,
                           int n_out)
{
    if (k->n_in != n_in || k->n_w < min_w || k->n_w > max_w || k->n_out != n_out)
        return ntp__ref_error(ctx, k, NTP_STATUS_INTERNAL,
                              "reference kernel called with %d inputs, %d weights, %d outputs; "
                              "expected %d, %d to %d, %d",
                              k->n_in, k->n_w, k->n_out, n_in, min_w, max_w, n_out);
    for (int i = 0; i < k->n_in; i++)
        if (k->in[i].dtype != NTP_DTYPE_F32 || !k->in[i].data)
            return ntp__ref_error(ctx, k, NTP_STATUS_UNSUPPORTED,
                                  "input %d is %s; the reference kernel reads f32", i,
                                  ntp_dtype_name(k->in[i].dtype));
    for (int i = 0; i < k->n_w; i++)
        if (k->w[i].dtype != NTP_DTYPE_F32 || !k->w[i].data)
            return ntp__ref_error(ctx, k, NTP_STATUS_UNSUPPORTED,
                                  "weight %d is %s; the reference kernel reads f32", i,
                                  ntp_dtype_name(k->w[i].dtype));
    for (int i = 0; i < k->n_out; i++)
        if (k->out[i].dtype != NTP_DTYPE_F32 || !k->out[i].data)
            return ntp__ref_error(ctx, k, NTP_STATUS_UNSUPPORTED,
                                  "output %d is %s; the reference kernel writes f32", i,
                                  ntp_dtype_name(k->out[i].dtype));
    return NTP_STATUS_OK;
}

ntp_status ntp__ref_expect_weight(ntp_ctx *ctx, const ntp_kargs *k, int i, int64_t numel)
{
    int64_t have = ntp_shape_numel(&k->w[i].shape);
    if (have != numel) {
        char b[128];
        return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                              "weight %d has shape %s (%lld values); expected %lld values", i,
                              ntp_shape_str(&k->w[i].shape, b, sizeof b), (long long)have,
                              (long long)numel);
    }
    return NTP_STATUS_OK;
}

ntp_status ntp__ref_dispatch(ntp_ctx *ctx, const ntp_kargs *k,
                             const ntp_ref_kernel_fn table[NTP_OP_COUNT], const char *family)
{
    ntp_op op = k->node->op;
    ntp_ref_kernel_fn f = (unsigned)op < NTP_OP_COUNT ? table[op] : NULL;
    if (!f)
        return ntp__ref_error(ctx, k, NTP_STATUS_INTERNAL, "not a %s op", family);
    return f(ctx, k);
}

size_t ntp__ref_floats(int64_t a, int64_t b)
{
    int64_t n;
    if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &n) ||
        __builtin_mul_overflow(n, (int64_t)sizeof(float), &n) || (uint64_t)n > SIZE_MAX)
        return SIZE_MAX;
    return (size_t)n;
}

size_t ntp__ref_size_add(size_t a, size_t b)
{
    size_t r;
    return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}

/* The ops whose kernels need scratch, and how much; the others need none. */
static size_t (*const workspaces[NTP_OP_COUNT])(const ntp_kargs *k) = {
    [NTP_OP_CONV] = ntp__ref_conv_workspace,
    [NTP_OP_DECONV] = ntp__ref_conv_workspace,
    [NTP_OP_LSTM] = ntp__ref_rnn_workspace,
    [NTP_OP_GRU] = ntp__ref_rnn_workspace,
    [NTP_OP_RNN] = ntp__ref_rnn_workspace,
    [NTP_OP_ATTENTION] = ntp__ref_attention_workspace,
    [NTP_OP_MFCC] = ntp__mfcc_workspace,
    [NTP_OP_CTC_DECODE] = ntp__ctc_workspace,
    [NTP_OP_RESIZE] = ntp__ref_onnx_tensor_workspace,
    [NTP_OP_KV_ATTENTION] = ntp__ref_decoder_workspace,
};

size_t ntp__ref_workspace(const ntp_kargs *k)
{
    ntp_op op = k->node->op;
    return (unsigned)op < NTP_OP_COUNT && workspaces[op] ? workspaces[op](k) : 0;
}

ntp_status ntp__ref_run(ntp_ctx *ctx, const ntp_kargs *k)
{
    if (!k->node)
        return ntp__error(ctx, NTP_STATUS_INTERNAL,
                          "reference backend: kernel arguments without a node");
    size_t need = ntp__ref_workspace(k);
    if (need == SIZE_MAX)
        return ntp__ref_error(ctx, k, NTP_STATUS_OVERFLOW, "workspace size overflows");
    if (need > 0 && (k->workspace_bytes < need || !k->workspace))
        return ntp__ref_error(ctx, k, NTP_STATUS_INTERNAL,
                              "workspace of %zu bytes given, the reference kernel needs %zu",
                              k->workspace ? k->workspace_bytes : (size_t)0, need);
    switch (k->node->op) {
    case NTP_OP_FC:
    case NTP_OP_MATMUL: return ntp__ref_dense(ctx, k);
    case NTP_OP_CONV:
    case NTP_OP_DECONV: return ntp__ref_conv(ctx, k);
    case NTP_OP_MAXPOOL:
    case NTP_OP_AVGPOOL:
    case NTP_OP_GLOBAL_MAXPOOL:
    case NTP_OP_GLOBAL_AVGPOOL: return ntp__ref_pool(ctx, k);
    case NTP_OP_BATCHNORM:
    case NTP_OP_LAYERNORM: return ntp__ref_norm(ctx, k); NTP_UNARY_CASES
    case NTP_OP_SOFTMAX:
    case NTP_OP_ADD:
    case NTP_OP_MUL: return ntp__ref_eltwise(ctx, k);
    case NTP_OP_CONCAT:
    case NTP_OP_SPLIT:
    case NTP_OP_RESHAPE:
    case NTP_OP_FLATTEN:
    case NTP_OP_TRANSPOSE:
    case NTP_OP_PAD:
    case NTP_OP_EMBEDDING:
    case NTP_OP_DROPOUT:
    case NTP_OP_MEMCPY:
    case NTP_OP_CONVERT: return ntp__ref_move(ctx, k);
    case NTP_OP_LSTM:
    case NTP_OP_GRU:
    case NTP_OP_RNN: return ntp__ref_rnn(ctx, k);
    case NTP_OP_ATTENTION: return ntp__ref_attention(ctx, k);
    case NTP_OP_MFCC: return ntp__mfcc_run(ctx, k);
    case NTP_OP_CTC_DECODE:
        return ntp__ctc_run(ctx, k);
    NTP_REF_ONNX_ELTWISE_CASES:
        return ntp__ref_onnx_eltwise(ctx, k);
    NTP_REF_ONNX_REDUCE_CASES:
        return ntp__ref_onnx_reduce(ctx, k);
    NTP_REF_ONNX_TENSOR_CASES:
        return ntp__ref_onnx_tensor(ctx, k);
    case NTP_OP_RMSNORM:
    case NTP_OP_ROPE:
    case NTP_OP_KV_ATTENTION:
    case NTP_OP_LM_HEAD:
    case NTP_OP_ARGMAX: return ntp__ref_decoder(ctx, k);
    case NTP_OP_DELAY: return ntp__ref_delay(ctx, k);
    case NTP_OP_DARKNET_HEAD: return ntp__ref_darknet_head(ctx, k);
    case NTP_OP_COUNT: break;
    }
    return ntp__ref_error(ctx, k, NTP_STATUS_INTERNAL, "no reference kernel for op %d",
                          (int)k->node->op);
}
