/* The op table: every layer type and inlay is declared here once.
 *
 * X(ENUM, "element", KIND, MIN_IN, MAX_IN, SHAPE, COST)
 *   ENUM     suffix of the enum value NTP_OP_<ENUM>
 *   element  the markup element name, also the `type` shown in reports
 *   KIND     LAYER or INLAY (a non-network pipeline stage)
 *   MIN_IN, MAX_IN  number of activation inputs accepted
 *   SHAPE    ntp__shape_<SHAPE>: infers output shapes, declares weights
 *   COST     ntp__cost_<COST>: MACs and FLOPs
 *
 * The enum, the name table and both dispatch tables are generated from this
 * list (src/graph/ops.c), so they cannot drift apart. */
#ifndef NTPROF_OP_TABLE_H
#define NTPROF_OP_TABLE_H

#define NTP_OP_TABLE(X)                                                 \
    X(FC,             "fc",             LAYER, 1, 1, fc,        fc)        \
    X(MATMUL,         "matmul",         LAYER, 2, 2, matmul,    matmul)    \
    X(CONV,           "conv",           LAYER, 1, 1, conv,      conv)      \
    X(DECONV,         "deconv",         LAYER, 1, 1, deconv,    deconv)    \
    X(MAXPOOL,        "maxpool",        LAYER, 1, 1, pool,      pool)      \
    X(AVGPOOL,        "avgpool",        LAYER, 1, 1, pool,      pool)      \
    X(GLOBAL_MAXPOOL, "global_maxpool", LAYER, 1, 1, gpool,     gpool)     \
    X(GLOBAL_AVGPOOL, "global_avgpool", LAYER, 1, 1, gpool,     gpool)     \
    X(BATCHNORM,      "batchnorm",      LAYER, 1, 1, batchnorm, batchnorm) \
    X(LAYERNORM,      "layernorm",      LAYER, 1, 1, layernorm, layernorm) \
    X(RELU,           "relu",           LAYER, 1, 1, unary,     unary)     \
    X(LEAKY_RELU,     "leaky_relu",     LAYER, 1, 1, unary,     unary)     \
    X(SIGMOID,        "sigmoid",        LAYER, 1, 1, unary,     unary)     \
    X(TANH,           "tanh",           LAYER, 1, 1, unary,     unary)     \
    X(GELU,           "gelu",           LAYER, 1, 1, unary,     unary)     \
    X(SILU,           "silu",           LAYER, 1, 1, unary,     unary)     \
    X(HARDSWISH,      "hardswish",      LAYER, 1, 1, unary,     unary)     \
    X(CLIP,           "clip",           LAYER, 1, 1, unary,     unary)     \
    X(SOFTMAX,        "softmax",        LAYER, 1, 1, softmax,   softmax)   \
    X(ADD,            "add",            LAYER, 2, 8, binary,    binary)    \
    X(MUL,            "mul",            LAYER, 2, 8, binary,    binary)    \
    X(CONCAT,         "concat",         LAYER, 1, 8, concat,    move)      \
    X(SPLIT,          "split",          LAYER, 1, 1, split,     move)      \
    X(RESHAPE,        "reshape",        LAYER, 1, 1, reshape,   none)      \
    X(FLATTEN,        "flatten",        LAYER, 1, 1, flatten,   none)      \
    X(TRANSPOSE,      "transpose",      LAYER, 1, 1, transpose, move)      \
    X(PAD,            "pad",            LAYER, 1, 1, pad,       move)      \
    X(EMBEDDING,      "embedding",      LAYER, 1, 1, embedding, move)      \
    X(DROPOUT,        "dropout",        LAYER, 1, 1, unary,     none)      \
    X(LSTM,           "lstm",           LAYER, 1, 1, rnn,       rnn)       \
    X(GRU,            "gru",            LAYER, 1, 1, rnn,       rnn)       \
    X(RNN,            "rnn",            LAYER, 1, 1, rnn,       rnn)       \
    X(ATTENTION,      "attention",      LAYER, 1, 3, attention, attention) \
    X(MFCC,           "mfcc",           INLAY, 1, 1, mfcc,      mfcc)      \
    X(CTC_DECODE,     "ctc_decode",     INLAY, 1, 1, ctc,       ctc)       \
    X(MEMCPY,         "memcpy",         INLAY, 1, 1, unary,     move)      \
    X(CONVERT,        "convert",        INLAY, 1, 1, convert,   move)      \
    /* Added for ONNX models (docs/ops.md, "Ops added for ONNX"). */   \
    X(ABS,             "abs",               LAYER, 1, 1, unary,             onnx_unary) \
    X(NEG,             "neg",               LAYER, 1, 1, unary,             onnx_unary) \
    X(EXP,             "exp",               LAYER, 1, 1, unary,             onnx_unary) \
    X(LOG,             "log",               LAYER, 1, 1, unary,             onnx_unary) \
    X(SQRT,            "sqrt",              LAYER, 1, 1, unary,             onnx_unary) \
    X(RECIPROCAL,      "reciprocal",        LAYER, 1, 1, unary,             onnx_unary) \
    X(ERF,             "erf",               LAYER, 1, 1, unary,             onnx_unary) \
    X(FLOOR,           "floor",             LAYER, 1, 1, unary,             onnx_unary) \
    X(CEIL,            "ceil",              LAYER, 1, 1, unary,             onnx_unary) \
    X(ROUND,           "round",             LAYER, 1, 1, unary,             onnx_unary) \
    X(SIGN,            "sign",              LAYER, 1, 1, unary,             onnx_unary) \
    X(SIN,             "sin",               LAYER, 1, 1, unary,             onnx_unary) \
    X(COS,             "cos",               LAYER, 1, 1, unary,             onnx_unary) \
    X(TAN,             "tan",               LAYER, 1, 1, unary,             onnx_unary) \
    X(ASIN,            "asin",              LAYER, 1, 1, unary,             onnx_unary) \
    X(ACOS,            "acos",              LAYER, 1, 1, unary,             onnx_unary) \
    X(ATAN,            "atan",              LAYER, 1, 1, unary,             onnx_unary) \
    X(SINH,            "sinh",              LAYER, 1, 1, unary,             onnx_unary) \
    X(COSH,            "cosh",              LAYER, 1, 1, unary,             onnx_unary) \
    X(ASINH,           "asinh",             LAYER, 1, 1, unary,             onnx_unary) \
    X(ACOSH,           "acosh",             LAYER, 1, 1, unary,             onnx_unary) \
    X(ATANH,           "atanh",             LAYER, 1, 1, unary,             onnx_unary) \
    X(SOFTPLUS,        "softplus",          LAYER, 1, 1, unary,             onnx_unary) \
    X(SOFTSIGN,        "softsign",          LAYER, 1, 1, unary,             onnx_unary) \
    X(ELU,             "elu",               LAYER, 1, 1, unary,             onnx_unary) \
    X(SELU,            "selu",              LAYER, 1, 1, unary,             onnx_unary) \
    X(CELU,            "celu",              LAYER, 1, 1, unary,             onnx_unary) \
    X(HARD_SIGMOID,    "hard_sigmoid",      LAYER, 1, 1, unary,             onnx_unary) \
    X(THRESHOLDED_RELU, "thresholded_relu",  LAYER, 1, 1, unary,             onnx_unary) \
    X(SHRINK,          "shrink",            LAYER, 1, 1, unary,             onnx_unary) \
    X(PRELU,           "prelu",             LAYER, 1, 1, onnx_prelu,        onnx_unary) \
    X(LOG_SOFTMAX,     "log_softmax",       LAYER, 1, 1, softmax,           onnx_unary) \
    X(HARDMAX,         "hardmax",           LAYER, 1, 1, softmax,           onnx_unary) \
    X(SUB,             "sub",               LAYER, 2, 2, binary,            onnx_binary) \
    X(DIV,             "div",               LAYER, 2, 2, binary,            onnx_binary) \
    X(POW,             "pow",               LAYER, 2, 2, binary,            onnx_binary) \
    X(MAX,             "max",               LAYER, 2, 8, binary,            onnx_binary) \
    X(MIN,             "min",               LAYER, 2, 8, binary,            onnx_binary) \
    X(MEAN,            "mean",              LAYER, 2, 8, binary,            onnx_binary) \
    X(WHERE,           "where",             LAYER, 3, 3, binary,            onnx_binary) \
    X(REDUCE_MEAN,     "reduce_mean",       LAYER, 1, 1, onnx_reduce,       onnx_reduce) \
    X(REDUCE_SUM,      "reduce_sum",        LAYER, 1, 1, onnx_reduce,       onnx_reduce) \
    X(REDUCE_MAX,      "reduce_max",        LAYER, 1, 1, onnx_reduce,       onnx_reduce) \
    X(REDUCE_MIN,      "reduce_min",        LAYER, 1, 1, onnx_reduce,       onnx_reduce) \
    X(REDUCE_PROD,     "reduce_prod",       LAYER, 1, 1, onnx_reduce,       onnx_reduce) \
    X(REDUCE_L1,       "reduce_l1",         LAYER, 1, 1, onnx_reduce,       onnx_reduce) \
    X(REDUCE_L2,       "reduce_l2",         LAYER, 1, 1, onnx_reduce,       onnx_reduce) \
    X(REDUCE_SUM_SQUARE, "reduce_sum_square", LAYER, 1, 1, onnx_reduce,       onnx_reduce) \
    X(REDUCE_LOG_SUM,  "reduce_log_sum",    LAYER, 1, 1, onnx_reduce,       onnx_reduce) \
    X(REDUCE_LOG_SUM_EXP, "reduce_log_sum_exp", LAYER, 1, 1, onnx_reduce,       onnx_reduce) \
    X(INSTANCENORM,    "instancenorm",      LAYER, 1, 1, onnx_instancenorm, layernorm) \
    X(LRN,             "lrn",               LAYER, 1, 1, onnx_lrn,          onnx_lrn) \
    X(CONSTANT,        "constant",          LAYER, 0, 1, onnx_constant,     none) \
    X(SLICE,           "slice",             LAYER, 1, 1, onnx_slice,        move) \
    X(EXPAND,          "expand",            LAYER, 1, 1, onnx_expand,       move) \
    X(RESIZE,          "resize",            LAYER, 1, 1, onnx_resize,       onnx_resize)

#endif
