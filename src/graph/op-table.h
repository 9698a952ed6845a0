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
    X(CONVERT,        "convert",        INLAY, 1, 1, convert,   move)

#endif
