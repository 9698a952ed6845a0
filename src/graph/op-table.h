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
 * list (src/graph/ops.c), so they cannot drift apart. New ops go at the end,
 * so that the values of the others stay as they are.
 *
 * A unary element-wise op (y[i] = f(x[i]), one input, no weights) also has a
 * row in NTP_UNARY_TABLE below, which is all that its kernels, its cost and
 * its ONNX mapping need: docs/ops.md, "Adding an element-wise op". */
#ifndef NTPROF_OP_TABLE_H
#define NTPROF_OP_TABLE_H

// clang-format off
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
    X(ABS,             "abs",               LAYER, 1, 1, unary,             unary)      \
    X(NEG,             "neg",               LAYER, 1, 1, unary,             unary)      \
    X(EXP,             "exp",               LAYER, 1, 1, unary,             unary)      \
    X(LOG,             "log",               LAYER, 1, 1, unary,             unary)      \
    X(SQRT,            "sqrt",              LAYER, 1, 1, unary,             unary)      \
    X(RECIPROCAL,      "reciprocal",        LAYER, 1, 1, unary,             unary)      \
    X(ERF,             "erf",               LAYER, 1, 1, unary,             unary)      \
    X(FLOOR,           "floor",             LAYER, 1, 1, unary,             unary)      \
    X(CEIL,            "ceil",              LAYER, 1, 1, unary,             unary)      \
    X(ROUND,           "round",             LAYER, 1, 1, unary,             unary)      \
    X(SIGN,            "sign",              LAYER, 1, 1, unary,             unary)      \
    X(SIN,             "sin",               LAYER, 1, 1, unary,             unary)      \
    X(COS,             "cos",               LAYER, 1, 1, unary,             unary)      \
    X(TAN,             "tan",               LAYER, 1, 1, unary,             unary)      \
    X(ASIN,            "asin",              LAYER, 1, 1, unary,             unary)      \
    X(ACOS,            "acos",              LAYER, 1, 1, unary,             unary)      \
    X(ATAN,            "atan",              LAYER, 1, 1, unary,             unary)      \
    X(SINH,            "sinh",              LAYER, 1, 1, unary,             unary)      \
    X(COSH,            "cosh",              LAYER, 1, 1, unary,             unary)      \
    X(ASINH,           "asinh",             LAYER, 1, 1, unary,             unary)      \
    X(ACOSH,           "acosh",             LAYER, 1, 1, unary,             unary)      \
    X(ATANH,           "atanh",             LAYER, 1, 1, unary,             unary)      \
    X(SOFTPLUS,        "softplus",          LAYER, 1, 1, unary,             unary)      \
    X(SOFTSIGN,        "softsign",          LAYER, 1, 1, unary,             unary)      \
    X(ELU,             "elu",               LAYER, 1, 1, unary,             unary)      \
    X(SELU,            "selu",              LAYER, 1, 1, unary,             unary)      \
    X(CELU,            "celu",              LAYER, 1, 1, unary,             unary)      \
    X(HARD_SIGMOID,    "hard_sigmoid",      LAYER, 1, 1, unary,             unary)      \
    X(THRESHOLDED_RELU, "thresholded_relu",  LAYER, 1, 1, unary,             unary)      \
    X(SHRINK,          "shrink",            LAYER, 1, 1, unary,             unary)      \
    X(PRELU,           "prelu",             LAYER, 1, 1, onnx_prelu,        onnx_prelu) \
    X(LOG_SOFTMAX,     "log_softmax",       LAYER, 1, 1, softmax,           onnx_log_softmax) \
    X(HARDMAX,         "hardmax",           LAYER, 1, 1, softmax,           onnx_hardmax) \
    X(SUB,             "sub",               LAYER, 2, 2, binary,            onnx_binary) \
    X(DIV,             "div",               LAYER, 2, 2, binary,            onnx_binary) \
    X(POW,             "pow",               LAYER, 2, 2, binary,            onnx_pow) \
    X(MAX,             "max",               LAYER, 2, 8, binary,            onnx_binary) \
    X(MIN,             "min",               LAYER, 2, 8, binary,            onnx_binary) \
    X(MEAN,            "mean",              LAYER, 2, 8, binary,            onnx_mean) \
    X(WHERE,           "where",             LAYER, 3, 3, binary,            onnx_where) \
    X(REDUCE_MEAN,     "reduce_mean",       LAYER, 1, 1, onnx_reduce,       onnx_reduce_mean) \
    X(REDUCE_SUM,      "reduce_sum",        LAYER, 1, 1, onnx_reduce,       onnx_reduce) \
    X(REDUCE_MAX,      "reduce_max",        LAYER, 1, 1, onnx_reduce,       onnx_reduce) \
    X(REDUCE_MIN,      "reduce_min",        LAYER, 1, 1, onnx_reduce,       onnx_reduce) \
    X(REDUCE_PROD,     "reduce_prod",       LAYER, 1, 1, onnx_reduce,       onnx_reduce) \
    X(REDUCE_L1,       "reduce_l1",         LAYER, 1, 1, onnx_reduce,       onnx_reduce_l1) \
    X(REDUCE_L2,       "reduce_l2",         LAYER, 1, 1, onnx_reduce,       onnx_reduce_l2) \
    X(REDUCE_SUM_SQUARE, "reduce_sum_square", LAYER, 1, 1, onnx_reduce,       onnx_reduce_sum_square) \
    X(REDUCE_LOG_SUM,  "reduce_log_sum",    LAYER, 1, 1, onnx_reduce,       onnx_reduce_log_sum) \
    X(REDUCE_LOG_SUM_EXP, "reduce_log_sum_exp", LAYER, 1, 1, onnx_reduce,       onnx_reduce_log_sum_exp) \
    X(INSTANCENORM,    "instancenorm",      LAYER, 1, 1, onnx_instancenorm, layernorm) \
    X(LRN,             "lrn",               LAYER, 1, 1, onnx_lrn,          onnx_lrn) \
    X(CONSTANT,        "constant",          LAYER, 0, 1, onnx_constant,     none) \
    X(SLICE,           "slice",             LAYER, 1, 1, onnx_slice,        move) \
    X(EXPAND,          "expand",            LAYER, 1, 1, onnx_expand,       move) \
    X(RESIZE,          "resize",            LAYER, 1, 1, onnx_resize,       onnx_resize) \
    X(MISH,            "mish",              LAYER, 1, 1, unary,             unary)       \
    X(LOG_SIGMOID,     "log_sigmoid",       LAYER, 1, 1, unary,             unary)      \
    /* Decoder transformers (docs/decoders.md). */                               \
    X(RMSNORM,         "rmsnorm",           LAYER, 1, 1, rmsnorm,           rmsnorm)     \
    X(ROPE,            "rope",              LAYER, 2, 2, rope,              rope)        \
    X(KV_ATTENTION,    "kv_attention",      LAYER, 3, 4, kv_attention,      kv_attention) \
    X(LM_HEAD,         "lm_head",           LAYER, 1, 1, lm_head,           lm_head)     \
    X(ARGMAX,          "argmax",            LAYER, 1, 1, argmax,            argmax)      \
    /* Calibration and test layers (docs/ops.md, "delay"; docs/load.md). */ \
    X(DELAY,           "delay",             LAYER, 1, 1, delay,             none)
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

#endif
