/* Reference kernels of the ops added for ONNX models (op-onnx-impl.h,
 * docs/ops.md "Ops added for ONNX"); ref-run.c dispatches to them. Same
 * rules as ref-impl.h: f32 on f32 storage, every index checked against the
 * shapes before use. */
#ifndef NTPROF_REF_ONNX_IMPL_H
#define NTPROF_REF_ONNX_IMPL_H

#include "ref-impl.h"

/* ref-onnx-eltwise.c: prelu, log_softmax, hardmax, where and the binary
 * family (NTP_BINARY_TABLE). */
ntp_status ntp__ref_onnx_eltwise(ntp_ctx *ctx, const ntp_kargs *k);
/* ref-onnx-reduce.c: the reductions, instancenorm, lrn. */
ntp_status ntp__ref_onnx_reduce(ntp_ctx *ctx, const ntp_kargs *k);
/* ref-onnx-tensor.c: constant, slice, expand, resize. */
ntp_status ntp__ref_onnx_tensor(ntp_ctx *ctx, const ntp_kargs *k);
size_t ntp__ref_onnx_tensor_workspace(const ntp_kargs *k);

/* The case labels of each family, for ref-run.c's dispatch switch (which
 * lists every op, so that the compiler flags an op without a kernel). */
// clang-format off
#define NTP_REF_ONNX_ELTWISE_CASES                                                     \
    case NTP_OP_PRELU: case NTP_OP_LOG_SOFTMAX: case NTP_OP_HARDMAX: NTP_BINARY_CASES     \
    case NTP_OP_WHERE
// clang-format on
// clang-format off
#define NTP_REF_ONNX_REDUCE_CASES                                                        \
    case NTP_OP_REDUCE_MEAN: case NTP_OP_REDUCE_SUM: case NTP_OP_REDUCE_MAX:               \
    case NTP_OP_REDUCE_MIN: case NTP_OP_REDUCE_PROD: case NTP_OP_REDUCE_L1:                \
    case NTP_OP_REDUCE_L2: case NTP_OP_REDUCE_SUM_SQUARE: case NTP_OP_REDUCE_LOG_SUM:      \
    case NTP_OP_REDUCE_LOG_SUM_EXP: case NTP_OP_INSTANCENORM: case NTP_OP_LRN
// clang-format on
#define NTP_REF_ONNX_TENSOR_CASES \
    case NTP_OP_CONSTANT:         \
    case NTP_OP_SLICE:            \
    case NTP_OP_EXPAND:           \
    case NTP_OP_RESIZE

#endif
