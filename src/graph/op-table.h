/* The op table: every layer type and inlay is declared here once.
 *
 * X(ENUM, "element", KIND, MIN_IN, MAX_IN, SHAPE, COST, INIT,
 *   PREDICT, BACKWARD, TORCH, ONNX, "Onnx")
 *   ENUM     suffix of the enum value NTP_OP_<ENUM>
 *   element  the markup element name, also the `type` shown in reports
 *   KIND     LAYER or INLAY (a non-network pipeline stage)
 *   MIN_IN, MAX_IN  number of activation inputs accepted
 *   SHAPE    ntp__shape_<SHAPE>: infers output shapes, declares weights
 *   COST     ntp__cost_<COST>: MACs and FLOPs
 *   INIT     how its weights are generated (NTP_OP_INIT_CLASSES,
 *            src/graph/data.c); DEFAULT for an op without weights
 *   PREDICT  the family `predict` fits it with (NTP_OP_PREDICT_CLASSES)
 *   BACKWARD how `analyze --train` counts its backward FLOPs
 *            (NTP_OP_BACKWARD_CLASSES)
 *   TORCH    the ATen operator the torch backend runs it as, NONE where it
 *            stays on the reference backend (NTP_OP_TORCH_CLASSES)
 *   ONNX     how the ONNX exporter writes it (NTP_OP_ONNX_CLASSES), and
 *   Onnx     the ONNX operator that emitter writes, NULL where the emitter
 *            needs none (a unary or binary op's is in NTP_UNARY_TABLE or
 *            NTP_BINARY_TABLE)
 *
 * The enum, the name table and the dispatch tables are generated from this
 * list (src/graph/ops.c), so they cannot drift apart. The last four columns
 * are data that the upper layers' code selects by (machine/predict.c,
 * train/train-math.c, backend/torch/backend.c, io/onnx-export-ops.c), each
 * with a switch over the class, not over the op: an op of a class that
 * exists (another binary op, another reduction) needs no case anywhere.
 * New ops go at the end, so that the values of the others stay as they are.
 *
 * A unary element-wise op (y[i] = f(x[i]), one input, no weights) also has a
 * row in NTP_UNARY_TABLE below, which is all that its kernels, its cost and
 * its ONNX mapping need: docs/ops.md, "Adding an element-wise op". A binary
 * one (y = f(a, b) with numpy broadcasting) has a row in NTP_BINARY_TABLE. */
#ifndef NTPROF_OP_TABLE_H
#define NTPROF_OP_TABLE_H

// clang-format off
#define NTP_OP_TABLE(X)                                                 \
    X(FC,                "fc",                LAYER, 1, 1, fc,               fc,                     DEFAULT,     FC,         GEMM,     LINEAR,        FC,            NULL) \
    X(MATMUL,            "matmul",            LAYER, 2, 2, matmul,           matmul,                 DEFAULT,     FC,         MATMUL,   MATMUL,        MATMUL,        NULL) \
    X(CONV,              "conv",              LAYER, 1, 1, conv,             conv,                   DEFAULT,     CONV_KERNEL, GEMM,     CONV,          CONV,          "Conv") \
    X(DECONV,            "deconv",            LAYER, 1, 1, deconv,           deconv,                 DEFAULT,     CONV,       GEMM,     DECONV,        CONV,          "ConvTranspose") \
    X(MAXPOOL,           "maxpool",           LAYER, 1, 1, pool,             pool,                   DEFAULT,     POOL,       POOL,     MAXPOOL,       POOL,          "MaxPool") \
    X(AVGPOOL,           "avgpool",           LAYER, 1, 1, pool,             pool,                   DEFAULT,     POOL,       POOL,     AVGPOOL,       POOL,          "AveragePool") \
    X(GLOBAL_MAXPOOL,    "global_maxpool",    LAYER, 1, 1, gpool,            gpool,                  DEFAULT,     POOL,       POOL,     GLOBAL_MAXPOOL, SIMPLE,        "GlobalMaxPool") \
    X(GLOBAL_AVGPOOL,    "global_avgpool",    LAYER, 1, 1, gpool,            gpool,                  DEFAULT,     POOL,       POOL,     GLOBAL_AVGPOOL, SIMPLE,        "GlobalAveragePool") \
    X(BATCHNORM,         "batchnorm",         LAYER, 1, 1, batchnorm,        batchnorm,              NORM_STATS,  NORM,       NORM,     BATCHNORM,     BATCHNORM,     "BatchNormalization") \
    X(LAYERNORM,         "layernorm",         LAYER, 1, 1, layernorm,        layernorm,              SCALE_SHIFT, NORM,       NORM,     LAYERNORM,     LAYERNORM,     "LayerNormalization") \
    X(RELU,              "relu",              LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(LEAKY_RELU,        "leaky_relu",        LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(SIGMOID,           "sigmoid",           LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(TANH,              "tanh",              LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(GELU,              "gelu",              LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(SILU,              "silu",              LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(HARDSWISH,         "hardswish",         LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(CLIP,              "clip",              LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(SOFTMAX,           "softmax",           LAYER, 1, 1, softmax,          softmax,                DEFAULT,     NORM,       SOFTMAX,  SOFTMAX,       SIMPLE,        "Softmax") \
    X(ADD,               "add",               LAYER, 2, 8, binary,           binary,                 DEFAULT,     ELTWISE,    SUM,      ADD,           NARY,          "Add") \
    X(MUL,               "mul",               LAYER, 2, 8, binary,           binary,                 DEFAULT,     ELTWISE,    PRODUCT,  MUL,           NARY,          "Mul") \
    X(CONCAT,            "concat",            LAYER, 1, 8, concat,           move,                   DEFAULT,     COPY,       MOVE,     CAT,           SIMPLE,        "Concat") \
    X(SPLIT,             "split",             LAYER, 1, 1, split,            move,                   DEFAULT,     COPY,       MOVE,     NONE,          SPLIT,         "Split") \
    X(RESHAPE,           "reshape",           LAYER, 1, 1, reshape,          none,                   DEFAULT,     COPY,       MOVE,     RESHAPE,       RESHAPE,       "Reshape") \
    X(FLATTEN,           "flatten",           LAYER, 1, 1, flatten,          none,                   DEFAULT,     COPY,       MOVE,     RESHAPE,       SIMPLE,        "Flatten") \
    X(TRANSPOSE,         "transpose",         LAYER, 1, 1, transpose,        move,                   DEFAULT,     COPY,       MOVE,     PERMUTE,       SIMPLE,        "Transpose") \
    X(PAD,               "pad",               LAYER, 1, 1, pad,              move,                   DEFAULT,     COPY,       MOVE,     NONE,          PAD,           "Pad") \
    X(EMBEDDING,         "embedding",         LAYER, 1, 1, embedding,        move,                   NORMAL,      COPY,       EMBEDDING, EMBEDDING,     EMBEDDING,     "Gather") \
    X(DROPOUT,           "dropout",           LAYER, 1, 1, unary,            none,                   DEFAULT,     COPY,       DROPOUT,  RESHAPE,       SIMPLE,        "Dropout") \
    X(LSTM,              "lstm",              LAYER, 1, 1, rnn,              rnn,                    RECURRENT,   RNN,        RNN,      LSTM,          RNN,           "LSTM") \
    X(GRU,               "gru",               LAYER, 1, 1, rnn,              rnn,                    RECURRENT,   RNN,        RNN,      GRU,           RNN,           "GRU") \
    X(RNN,               "rnn",               LAYER, 1, 1, rnn,              rnn,                    RECURRENT,   RNN,        RNN,      RNN,           RNN,           "RNN") \
    X(ATTENTION,         "attention",         LAYER, 1, 3, attention,        attention,              DEFAULT,     ATTENTION,  ATTENTION, ATTENTION,     ATTENTION,     NULL) \
    X(MFCC,              "mfcc",              INLAY, 1, 1, mfcc,             mfcc,                   DEFAULT,     MFCC,       FORWARD,  NONE,          NONE,          NULL) \
    X(CTC_DECODE,        "ctc_decode",        INLAY, 1, 1, ctc,              ctc,                    DEFAULT,     CTC,        FORWARD,  NONE,          NONE,          NULL) \
    X(MEMCPY,            "memcpy",            INLAY, 1, 1, unary,            move,                   DEFAULT,     COPY,       MOVE,     RESHAPE,       SIMPLE,        "Identity") \
    X(CONVERT,           "convert",           INLAY, 1, 1, convert,          move,                   DEFAULT,     COPY,       MOVE,     NONE,          CONVERT,       NULL) \
    /* Added for ONNX models (docs/ops.md, "Ops added for ONNX"). */   \
    X(ABS,               "abs",               LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(NEG,               "neg",               LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(EXP,               "exp",               LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(LOG,               "log",               LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(SQRT,              "sqrt",              LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(RECIPROCAL,        "reciprocal",        LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(ERF,               "erf",               LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(FLOOR,             "floor",             LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(CEIL,              "ceil",              LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(ROUND,             "round",             LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(SIGN,              "sign",              LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(SIN,               "sin",               LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(COS,               "cos",               LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(TAN,               "tan",               LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(ASIN,              "asin",              LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(ACOS,              "acos",              LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(ATAN,              "atan",              LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(SINH,              "sinh",              LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(COSH,              "cosh",              LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(ASINH,             "asinh",             LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(ACOSH,             "acosh",             LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(ATANH,             "atanh",             LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(SOFTPLUS,          "softplus",          LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(SOFTSIGN,          "softsign",          LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(ELU,               "elu",               LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(SELU,              "selu",              LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(CELU,              "celu",              LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(HARD_SIGMOID,      "hard_sigmoid",      LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(THRESHOLDED_RELU,  "thresholded_relu",  LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(SHRINK,            "shrink",            LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(PRELU,             "prelu",             LAYER, 1, 1, onnx_prelu,       onnx_prelu,             DEFAULT,     ELTWISE,    FORWARD,  NONE,          SIMPLE,        "PRelu") \
    X(LOG_SOFTMAX,       "log_softmax",       LAYER, 1, 1, softmax,          onnx_log_softmax,       DEFAULT,     NORM,       SOFTMAX,  LOG_SOFTMAX,   SIMPLE,        "LogSoftmax") \
    X(HARDMAX,           "hardmax",           LAYER, 1, 1, softmax,          onnx_hardmax,           DEFAULT,     NORM,       FORWARD,  NONE,          SIMPLE,        "Hardmax") \
    X(SUB,               "sub",               LAYER, 2, 2, binary,           onnx_binary,            DEFAULT,     ELTWISE,    SUM,      SUB,           BINARY,        NULL) \
    X(DIV,               "div",               LAYER, 2, 2, binary,           onnx_binary,            DEFAULT,     ELTWISE,    FORWARD,  DIV,           BINARY,        NULL) \
    X(POW,               "pow",               LAYER, 2, 2, binary,           onnx_binary,            DEFAULT,     ELTWISE,    FORWARD,  NONE,          BINARY,        NULL) \
    X(MAX,               "max",               LAYER, 2, 8, binary,           onnx_binary,            DEFAULT,     ELTWISE,    FORWARD,  MAXIMUM,       BINARY,        NULL) \
    X(MIN,               "min",               LAYER, 2, 8, binary,           onnx_binary,            DEFAULT,     ELTWISE,    FORWARD,  MINIMUM,       BINARY,        NULL) \
    X(MEAN,              "mean",              LAYER, 2, 8, binary,           onnx_binary,            DEFAULT,     ELTWISE,    FORWARD,  NONE,          BINARY,        NULL) \
    X(WHERE,             "where",             LAYER, 3, 3, binary,           onnx_where,             DEFAULT,     ELTWISE,    FORWARD,  NONE,          WHERE,         "Where") \
    X(REDUCE_MEAN,       "reduce_mean",       LAYER, 1, 1, onnx_reduce,      onnx_reduce_mean,       DEFAULT,     REDUCE,     FORWARD,  NONE,          REDUCE,        "ReduceMean") \
    X(REDUCE_SUM,        "reduce_sum",        LAYER, 1, 1, onnx_reduce,      onnx_reduce,            DEFAULT,     REDUCE,     FORWARD,  NONE,          REDUCE_AXES_IN, "ReduceSum") \
    X(REDUCE_MAX,        "reduce_max",        LAYER, 1, 1, onnx_reduce,      onnx_reduce,            DEFAULT,     REDUCE,     FORWARD,  NONE,          REDUCE,        "ReduceMax") \
    X(REDUCE_MIN,        "reduce_min",        LAYER, 1, 1, onnx_reduce,      onnx_reduce,            DEFAULT,     REDUCE,     FORWARD,  NONE,          REDUCE,        "ReduceMin") \
    X(REDUCE_PROD,       "reduce_prod",       LAYER, 1, 1, onnx_reduce,      onnx_reduce,            DEFAULT,     REDUCE,     FORWARD,  NONE,          REDUCE,        "ReduceProd") \
    X(REDUCE_L1,         "reduce_l1",         LAYER, 1, 1, onnx_reduce,      onnx_reduce_l1,         DEFAULT,     REDUCE,     FORWARD,  NONE,          REDUCE,        "ReduceL1"             ) \
    X(REDUCE_L2,         "reduce_l2",         LAYER, 1, 1, onnx_reduce,      onnx_reduce_l2,         DEFAULT,     REDUCE,     FORWARD,  NONE,          REDUCE,        "ReduceL2"             ) \
    X(REDUCE_SUM_SQUARE, "reduce_sum_square", LAYER, 1, 1, onnx_reduce,      onnx_reduce_sum_square, DEFAULT,     REDUCE,     FORWARD,  NONE,          REDUCE,        "ReduceSumSquare") \
    X(REDUCE_LOG_SUM,    "reduce_log_sum",    LAYER, 1, 1, onnx_reduce,      onnx_reduce_log_sum,    DEFAULT,     REDUCE,     FORWARD,  NONE,          REDUCE,        "ReduceLogSum") \
    X(REDUCE_LOG_SUM_EXP, "reduce_log_sum_exp", LAYER, 1, 1, onnx_reduce,      onnx_reduce_log_sum_exp, DEFAULT,     REDUCE,     FORWARD,  NONE,          REDUCE,        "ReduceLogSumExp") \
    X(INSTANCENORM,      "instancenorm",      LAYER, 1, 1, onnx_instancenorm, layernorm,              DEFAULT,     NORM,       FORWARD,  NONE,          SIMPLE,        "InstanceNormalization") \
    X(LRN,               "lrn",               LAYER, 1, 1, onnx_lrn,         onnx_lrn,               DEFAULT,     NORM,       FORWARD,  NONE,          SIMPLE,        "LRN") \
    X(CONSTANT,          "constant",          LAYER, 0, 1, onnx_constant,    none,                   DEFAULT,     FREE,       FORWARD,  NONE,          CONSTANT,      NULL) \
    X(SLICE,             "slice",             LAYER, 1, 1, onnx_slice,       move,                   DEFAULT,     COPY,       FORWARD,  NONE,          SLICE,         "Slice") \
    X(EXPAND,            "expand",            LAYER, 1, 1, onnx_expand,      move,                   DEFAULT,     COPY,       FORWARD,  NONE,          EXPAND,        "Expand") \
    X(RESIZE,            "resize",            LAYER, 1, 1, onnx_resize,      onnx_resize,            DEFAULT,     ELTWISE,    FORWARD,  NONE,          RESIZE,        "Resize") \
    X(MISH,              "mish",              LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    X(LOG_SIGMOID,       "log_sigmoid",       LAYER, 1, 1, unary,            unary,                  DEFAULT,     ELTWISE,    UNARY,    UNARY,         UNARY,         NULL) \
    /* Decoder transformers (docs/decoders.md). */                               \
    X(RMSNORM,           "rmsnorm",           LAYER, 1, 1, rmsnorm,          rmsnorm,                SCALE_SHIFT, ELTWISE,    FORWARD,  NONE,          DECODER,       NULL) \
    X(ROPE,              "rope",              LAYER, 2, 2, rope,             rope,                   DEFAULT,     ELTWISE,    FORWARD,  NONE,          DECODER,       NULL) \
    X(KV_ATTENTION,      "kv_attention",      LAYER, 3, 4, kv_attention,     kv_attention,           DEFAULT,     ELTWISE,    FORWARD,  NONE,          DECODER,       NULL) \
    X(LM_HEAD,           "lm_head",           LAYER, 1, 1, lm_head,          lm_head,                DEFAULT,     ELTWISE,    FORWARD,  NONE,          DECODER,       NULL) \
    X(ARGMAX,            "argmax",            LAYER, 1, 1, argmax,           argmax,                 DEFAULT,     ELTWISE,    FORWARD,  NONE,          DECODER,       NULL) \
    /* Calibration and test layers (docs/ops.md, "delay"; docs/load.md). */ \
    X(DELAY,             "delay",             LAYER, 1, 1, delay,            none,                   DEFAULT,     ELTWISE,    FORWARD,  NONE,          NONE,          NULL) \
    /* ONNX's Mod with fmod=1: C's fmod, the sign of the dividend. */ \
    X(FMOD,              "fmod",              LAYER, 2, 2, binary,           onnx_binary,            DEFAULT,     ELTWISE,    FORWARD,  NONE,          BINARY,        NULL) \
    /* Darknet's [yolo] and [region] at inference (docs/darknet.md). */ \
    X(DARKNET_HEAD,      "darknet_head",      INLAY, 1, 1, darknet_head,     darknet_head,           DEFAULT,     NONE,       FORWARD,  NONE,          DARKNET_HEAD,  NULL) \
    /* ONNX's Greater: a > b, 1 or 0 (ONNX's bool). */ \
    X(GREATER,           "greater",           LAYER, 2, 2, binary,           onnx_binary,            DEFAULT,     ELTWISE,    FORWARD,  NONE,          BINARY,        NULL)
// clang-format on

/* The values of the INIT column: how ntp__gen_weights (src/graph/data.c)
 * fills an op's weights. DEFAULT: LeCun normal for weights of 2 or more
 * dims, U(+-1/sqrt(fan_in)) for biases; NORM_STATS: batch-norm scale,
 * shift, mean and variance of a trained network; SCALE_SHIFT: a
 * normalisation's scale near 1 and small shift; RECURRENT: PyTorch's
 * U(-1/sqrt(H), 1/sqrt(H)); NORMAL: N(0, 1), for embedding tables. */
// clang-format off
#define NTP_OP_INIT_CLASSES(I) \
    I(DEFAULT) I(NORM_STATS) I(SCALE_SHIFT) I(RECURRENT) I(NORMAL)
// clang-format on

/* The values of the PREDICT column: predict's families (ntprof/predict.h),
 * and CONV_KERNEL, a convolution whose family its kernel and groups decide
 * (conv, conv1x1 or depthwise). */
// clang-format off
#define NTP_OP_PREDICT_CLASSES(P) \
    P(CONV_KERNEL) P(CONV) P(FC) P(POOL) P(REDUCE) P(ELTWISE) P(NORM) P(RNN) \
    P(ATTENTION) P(COPY) P(MFCC) P(CTC) P(FREE) P(NONE)
// clang-format on

/* The values of the BACKWARD column (train/train-math.c says what each
 * counts): GEMM (fc, conv, deconv: dX and dW, each the forward's MACs),
 * MATMUL, EMBEDDING, ATTENTION, RNN, NORM (batch/layer norm), SOFTMAX, POOL,
 * SUM (one dy per input), PRODUCT (the other inputs' product per input),
 * DROPOUT, MOVE (data movement: none), UNARY (the derivative and the product
 * with dy) and FORWARD (as much as the forward). */
// clang-format off
#define NTP_OP_BACKWARD_CLASSES(B) \
    B(GEMM) B(MATMUL) B(EMBEDDING) B(ATTENTION) B(RNN) B(NORM) B(SOFTMAX) B(POOL) \
    B(SUM) B(PRODUCT) B(DROPOUT) B(MOVE) B(UNARY) B(FORWARD)
// clang-format on

/* The values of the TORCH column: the ATen operator (backend/torch), or NONE.
 * RNN is rnn_tanh or rnn_relu by the layer's activation. */
// clang-format off
#define NTP_OP_TORCH_CLASSES(T) \
    T(NONE) T(CONV) T(DECONV) T(LINEAR) T(MATMUL) T(MAXPOOL) T(AVGPOOL) \
    T(GLOBAL_MAXPOOL) T(GLOBAL_AVGPOOL) T(BATCHNORM) T(LAYERNORM) T(UNARY) T(SOFTMAX) \
    T(LOG_SOFTMAX) T(ADD) T(MUL) T(SUB) T(DIV) T(MAXIMUM) T(MINIMUM) T(CAT) T(RESHAPE) \
    T(PERMUTE) T(LSTM) T(GRU) T(RNN) T(ATTENTION) T(EMBEDDING)
// clang-format on

/* The values of the ONNX column, the exporter's emitters (io/onnx-export-ops.c):
 * SIMPLE, one node of the Onnx operator reading the layer's inputs and then
 * its weights, with the op's attributes; REDUCE, a reduction with keepdims
 * and its axes as an attribute, REDUCE_AXES_IN with them as an input
 * (ReduceSum since opset 13); UNARY, NTP_UNARY_TABLE's operator or a pattern;
 * BINARY, NTP_BINARY_TABLE's operator (a predicate's bool cast to float);
 * NARY, the Onnx operator on two inputs, more folded (Sum for add, a chain
 * for mul); CONV and POOL, the Onnx operator with the spatial attributes;
 * DECODER, the decoder ops' emitter (onnx-export-decoder.c); DARKNET_HEAD,
 * Sigmoid and Softmax on Slices, concatenated; NONE, no ONNX
 * operator (refused); the others an emitter of their own. */
// clang-format off
#define NTP_OP_ONNX_CLASSES(O) \
    O(NONE) O(SIMPLE) O(REDUCE) O(REDUCE_AXES_IN) O(UNARY) O(NARY) O(FC) O(MATMUL) \
    O(ATTENTION) O(CONV) O(POOL) O(BATCHNORM) O(LAYERNORM) O(WHERE) O(SPLIT) O(RESHAPE) \
    O(PAD) O(EMBEDDING) O(RNN) O(CONSTANT) O(SLICE) O(EXPAND) O(RESIZE) O(DECODER) \
    O(CONVERT) O(DARKNET_HEAD) O(BINARY)
// clang-format on

/* The unary element-wise ops (kernel family "unary"):
 *
 * U(ENUM, fn, "Onnx", "onnx attributes", FLOPS)
 *   ENUM     the op, declared in NTP_OP_TABLE with shape `unary`, cost `unary`
 *   fn       its reference function: ref_<fn>(double x, const ntp_attrs *a)
 *            in src/backend/ref/ref-eltwise.c, evaluated in double and
 *            rounded once to f32 (a missing one fails to compile)
 *   Onnx     the ONNX operator it is, one to one, for import and export;
 *            NULL where there is none (gelu and silu are patterns, clip's
 *            bounds are inputs, log_sigmoid has no operator)
 *   onnx attributes  the ONNX attributes the import understands, comma-
 *            separated (an unknown one makes the node unsupported)
 *   FLOPS    floating-point operations per element (docs/ops.md): 1 for what
 *            a core does in one instruction, 4 for a transcendental
 *            function, more for the ones built from several
 *
 * Backends run an op of the family by mapping it to their own primitive
 * (oneDNN's eltwise algorithm, a CUDA device function, an XNNPACK operator);
 * an op a backend does not map stays on the reference backend. */
#define NTP_ONNX_LEGACY_ "consumed_inputs"
// clang-format off
#define NTP_UNARY_TABLE(U)                                                                    \
    U(RELU,             relu,             "Relu",            NTP_ONNX_LEGACY_,               1) \
    U(LEAKY_RELU,       leaky_relu,       "LeakyRelu",       "alpha," NTP_ONNX_LEGACY_,      1) \
    U(SIGMOID,          sigmoid,          "Sigmoid",         NTP_ONNX_LEGACY_,               4) \
    U(TANH,             tanh,             "Tanh",            NTP_ONNX_LEGACY_,               4) \
    U(GELU,             gelu,             NULL,              "",                             8) \
    U(SILU,             silu,             NULL,              "",                             5) \
    U(HARDSWISH,        hardswish,        "HardSwish",       "",                             4) \
    U(CLIP,             clip,             NULL,              "",                             2) \
    U(ABS,              abs,              "Abs",             NTP_ONNX_LEGACY_,               1) \
    U(NEG,              neg,              "Neg",             NTP_ONNX_LEGACY_,               1) \
    U(EXP,              exp,              "Exp",             NTP_ONNX_LEGACY_,               4) \
    U(LOG,              log,              "Log",             NTP_ONNX_LEGACY_,               4) \
    U(SQRT,             sqrt,             "Sqrt",            NTP_ONNX_LEGACY_,               1) \
    U(RECIPROCAL,       reciprocal,       "Reciprocal",      NTP_ONNX_LEGACY_,               1) \
    U(ERF,              erf,              "Erf",             "",                             4) \
    U(FLOOR,            floor,            "Floor",           NTP_ONNX_LEGACY_,               1) \
    U(CEIL,             ceil,             "Ceil",            NTP_ONNX_LEGACY_,               1) \
    U(ROUND,            round,            "Round",           "",                             1) \
    U(SIGN,             sign,             "Sign",            "",                             1) \
    U(SIN,              sin,              "Sin",             "",                             4) \
    U(COS,              cos,              "Cos",             "",                             4) \
    U(TAN,              tan,              "Tan",             "",                             4) \
    U(ASIN,             asin,             "Asin",            "",                             4) \
    U(ACOS,             acos,             "Acos",            "",                             4) \
    U(ATAN,             atan,             "Atan",            "",                             4) \
    U(SINH,             sinh,             "Sinh",            "",                             4) \
    U(COSH,             cosh,             "Cosh",            "",                             4) \
    U(ASINH,            asinh,            "Asinh",           "",                             4) \
    U(ACOSH,            acosh,            "Acosh",           "",                             4) \
    U(ATANH,            atanh,            "Atanh",           "",                             4) \
    U(SOFTPLUS,         softplus,         "Softplus",        "",                             6) \
    U(SOFTSIGN,         softsign,         "Softsign",        "",                             3) \
    U(ELU,              elu,              "Elu",             "alpha," NTP_ONNX_LEGACY_,      5) \
    U(SELU,             selu,             "Selu",            "alpha,gamma," NTP_ONNX_LEGACY_, 6) \
    U(CELU,             celu,             "Celu",            "alpha",                        5) \
    U(HARD_SIGMOID,     hard_sigmoid,     "HardSigmoid",     "alpha,beta," NTP_ONNX_LEGACY_, 3) \
    U(THRESHOLDED_RELU, thresholded_relu, "ThresholdedRelu", "alpha",                        2) \
    U(SHRINK,           shrink,           "Shrink",          "bias,lambd",                   3) \
    U(MISH,             mish,             "Mish",            "",                            11) \
    U(LOG_SIGMOID,      log_sigmoid,      NULL,              "",                             6)
// clang-format on

/* The case labels of the family, for a switch over the op that lists every
 * op (no `default:`, so that the compiler names an op a switch misses). */
#define NTP_UNARY_CASE_(e, fn, onnx, attrs, flops) case NTP_OP_##e:
#define NTP_UNARY_CASES NTP_UNARY_TABLE(NTP_UNARY_CASE_)

/* The binary element-wise ops (kernel family "binary": y = f(a, b), with
 * ONNX's multidirectional (numpy) broadcasting of every input to the
 * output's shape, inputs folded left to right where the op takes more than
 * two, as a chain of two-input ONNX nodes would):
 *
 * B(ENUM, fn, "Onnx", "onnx attributes", COMMUTES, OUT, FLOPS, POST)
 *   ENUM     the op, declared in NTP_OP_TABLE with shape `binary`, cost
 *            `onnx_binary` and ONNX emitter BINARY
 *   fn       its reference function: ref_binary_<fn>(double a, double b) in
 *            src/backend/ref/ref-onnx-eltwise.c, evaluated in double and
 *            rounded to f32 after each input (a missing one fails to
 *            compile)
 *   Onnx     the ONNX operator it is, for import and export
 *   onnx attributes  the ONNX attributes the import understands (an unknown
 *            one makes the node unsupported)
 *   COMMUTES whether f(a, b) = f(b, a): a backend that broadcasts only its
 *            second source may swap the inputs of one that commutes
 *   OUT      the output's type: SAME, the inputs' (float); PREDICATE, a
 *            truth value: ONNX's bool, the IR's 1 or 0 in float (as
 *            where's condition reads it), so the export casts it to float
 *   FLOPS    floating-point operations per output element per input after
 *            the first (docs/ops.md), and
 *   POST     those per output element once the inputs are folded (mean's
 *            division by the input count)
 *
 * Backends run an op of the family by mapping it to their own primitive
 * (oneDNN's binary algorithm, binary_algs[] in onednn/binary.c); an op a
 * backend does not map stays on the reference backend. Add and mul, which
 * fuse a bias and an activation and have kernels of their own on every
 * backend, are not rows of it. */
#define NTP_ONNX_BCAST_ "broadcast,axis,"
// clang-format off
#define NTP_BINARY_TABLE(B)                                                                            \
    B(SUB,  sub,  "Sub",  NTP_ONNX_BCAST_ NTP_ONNX_LEGACY_, false, SAME, 1, 0) \
    B(DIV,  div,  "Div",  NTP_ONNX_BCAST_ NTP_ONNX_LEGACY_, false, SAME, 1, 0) \
    B(POW,  pow,  "Pow",  "broadcast,axis",                 false, SAME, 4, 0) \
    B(MAX,  max,  "Max",  NTP_ONNX_LEGACY_,                 true,  SAME, 1, 0) \
    B(MIN,  min,  "Min",  NTP_ONNX_LEGACY_,                 true,  SAME, 1, 0) \
    B(MEAN, add,  "Mean", NTP_ONNX_LEGACY_,                 true,  SAME, 1, 1) \
    B(FMOD, fmod, "Mod",  "fmod",                           false, SAME, 1, 0) \
    B(GREATER, greater, "Greater", "broadcast,axis",        false, PREDICATE, 1, 0)
// clang-format on

#define NTP_BINARY_CASE_(e, fn, onnx, attrs, commutes, out, flops, post) case NTP_OP_##e:
#define NTP_BINARY_CASES NTP_BINARY_TABLE(NTP_BINARY_CASE_)

#endif
