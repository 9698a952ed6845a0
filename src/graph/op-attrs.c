/* The attribute declarations of every op (op-attrs.h): one array per
 * attribute set, in the order the markup writer writes them, and the map
 * from op to set. The meaning of each attribute is in docs/ops.md. */
#include <math.h>
#include <string.h>

#include "op-attrs.h"
#include "op-onnx-impl.h"

const char *const ntp__pad_kind_names[3] = {"same", "same_lower", "valid"};
const char *const ntp__padmode_names[3] = {"constant", "reflect", "edge"};
const char *const ntp__direction_names[3] = {"forward", "reverse", "bidirectional"};
const char *const ntp__merge_names[2] = {"concat", "sum"};
const char *const ntp__sequence_names[2] = {"full", "last"};
const char *const ntp__rnn_act_names[2] = {"tanh", "relu"};
const char *const ntp__ctc_names[2] = {"greedy", "beam"};
const char *const ntp__head_names[2] = {"yolo", "region"};

/* One declaration per macro. The trailing arguments are designated
 * initialisers for the optional columns: .check, .write, .flags, .has and
 * a default (DFLT). An offset of 0 in .count or .has means none: offset 0
 * is `units`, never a count or a flag. */
#define OFF(f) offsetof(ntp_attrs, f)
#define DFLT(v) .has_default = true, .dflt = (v)
#define NAMES(arr) .names = (arr), .n_names = (int)(sizeof(arr) / sizeof((arr)[0]))
#define A_INT(nm, f, mn, ...)                                                       \
    {                                                                               \
        .name = nm, .type = NTP_ATTR_INT, .field = OFF(f), .min = (mn), __VA_ARGS__ \
    }
#define A_INTS(nm, f, n, mn, mx, ...)                                                     \
    {                                                                                     \
        .name = nm, .type = NTP_ATTR_INTS, .field = OFF(f), .count = OFF(n), .min = (mn), \
        .max = (mx), __VA_ARGS__                                                          \
    }
#define A_FLOAT(nm, f, rg, ...)                                                                   \
    {                                                                                             \
        .name = nm, .type = NTP_ATTR_FLOAT, .field = OFF(f), .range = NTP_RANGE_##rg, __VA_ARGS__ \
    }
#define A_BOOL(nm, f, ...)                                              \
    {                                                                   \
        .name = nm, .type = NTP_ATTR_BOOL, .field = OFF(f), __VA_ARGS__ \
    }
#define A_ENUM(nm, f, arr, ...)                                                     \
    {                                                                               \
        .name = nm, .type = NTP_ATTR_ENUM, .field = OFF(f), NAMES(arr), __VA_ARGS__ \
    }
#define A_CHOICE(nm, f, arr, ...)                                                     \
    {                                                                                 \
        .name = nm, .type = NTP_ATTR_CHOICE, .field = OFF(f), NAMES(arr), __VA_ARGS__ \
    }
#define A_STRING(nm, f, ...)                                              \
    {                                                                     \
        .name = nm, .type = NTP_ATTR_STRING, .field = OFF(f), __VA_ARGS__ \
    }
#define A_DTYPE(nm, f, ...)                                              \
    {                                                                    \
        .name = nm, .type = NTP_ATTR_DTYPE, .field = OFF(f), __VA_ARGS__ \
    }
#define A_LAYOUT(nm, f, ...)                                              \
    {                                                                     \
        .name = nm, .type = NTP_ATTR_LAYOUT, .field = OFF(f), __VA_ARGS__ \
    }
/* A SPECIAL attribute fills `f` (and its count `n`) through its parser;
 * A_SPECIAL_NOFIELD's parser keeps what it reads for finish(). */
#define A_SPECIAL(nm, f, n, p, ...)                                             \
    {                                                                           \
        .name = nm, .type = NTP_ATTR_SPECIAL, .field = OFF(f), .count = OFF(n), \
        .parse = NTP_PARSE_##p, __VA_ARGS__                                     \
    }
#define A_SPECIAL_NOFIELD(nm, p, ...)                                                          \
    {                                                                                          \
        .name = nm, .type = NTP_ATTR_SPECIAL, .field = -1, .parse = NTP_PARSE_##p, __VA_ARGS__ \
    }
/* A value validated, then not stored (dropout's ratio: identity at inference). */
#define A_FLOAT_NOFIELD(nm, rg, ...)                                                          \
    {                                                                                         \
        .name = nm, .type = NTP_ATTR_FLOAT, .field = -1, .range = NTP_RANGE_##rg, __VA_ARGS__ \
    }

#define REQ .flags = NTP_ATTR_REQUIRED
#define SPATIAL .write = NTP_WRITE_SPATIAL
#define NEVER .write = NTP_WRITE_NEVER
#define IF_ANY .write = NTP_WRITE_IF_ANY
#define BATCH .flags = NTP_ATTR_BATCH
#define MAXD NTP_MAX_DIMS

static const ntp_attr_decl fc_attrs[] = {
    A_INT("units", units, 1, REQ),
    A_BOOL("bias", bias, DFLT(1)),
};
static const ntp_attr_decl matmul_attrs[] = {
    A_BOOL("transpose_a", transpose_a),
    A_BOOL("transpose_b", transpose_b),
};
/* The spatial lists of conv, deconv and the pools: one value means every
 * spatial dim; the writer writes them as shape inference expanded them. */
#define KERNEL_ A_INTS("kernel", kernel, n_kernel, 1, 3, SPATIAL, REQ)
#define STRIDE_ A_INTS("stride", stride, n_stride, 1, 3, SPATIAL)
#define PAD_ A_SPECIAL("pad", pad, n_pad, SPATIAL_PAD, SPATIAL)
#define DILATION_ A_INTS("dilation", dilation, n_dilation, 1, 3, SPATIAL)
static const ntp_attr_decl conv_attrs[] = {
    A_INT("filters", filters, 1, REQ),
    KERNEL_,
    STRIDE_,
    PAD_,
    DILATION_,
    A_INT("groups", groups, 1, DFLT(1)),
    A_SPECIAL_NOFIELD("depthwise", DEPTHWISE, NEVER),
    A_BOOL("bias", bias, DFLT(1)),
};
static const ntp_attr_decl deconv_attrs[] = {
    A_INT("filters", filters, 1, REQ),
    KERNEL_,
    STRIDE_,
    PAD_,
    DILATION_,
    A_INT("groups", groups, 1, DFLT(1)),
    A_INTS("output_padding", output_padding, n_output_padding, 0, 3, SPATIAL),
    A_SPECIAL_NOFIELD("depthwise", DEPTHWISE, NEVER),
    A_BOOL("bias", bias, DFLT(1)),
};
static const ntp_attr_decl maxpool_attrs[] = {
    KERNEL_, STRIDE_, PAD_, DILATION_, A_BOOL("ceil_mode", ceil_mode),
};
static const ntp_attr_decl avgpool_attrs[] = {
    KERNEL_,
    STRIDE_,
    PAD_,
    A_BOOL("ceil_mode", ceil_mode),
    A_BOOL("count_include_pad", count_include_pad),
};
static const ntp_attr_decl norm_attrs[] = {
    A_FLOAT("epsilon", epsilon, POSITIVE, DFLT(1e-5)),
};
static const ntp_attr_decl layernorm_attrs[] = {
    A_FLOAT("epsilon", epsilon, POSITIVE, DFLT(1e-5)),
    A_INT("axis", axis, INT64_MIN, DFLT(-1)),
};
/* relu's max makes it a clipped relu: written only when given. */
static const ntp_attr_decl relu_attrs[] = {
    A_FLOAT("max", max, POSITIVE, .has = OFF(has_max), .write = NTP_WRITE_IF_HAS),
};
static const ntp_attr_decl leaky_attrs[] = {
    A_FLOAT("alpha", leaky_relu.slope, ANY, DFLT(0.01)),
};
/* At least one of min and max is required (finish()). */
static const ntp_attr_decl clip_attrs[] = {
    A_FLOAT("min", min, ANY, .write = NTP_WRITE_IF_FINITE, DFLT(-INFINITY)),
    A_FLOAT("max", max, ANY, .write = NTP_WRITE_IF_FINITE, DFLT(INFINITY)),
};
static const ntp_attr_decl dropout_attrs[] = {
    A_FLOAT_NOFIELD("ratio", UNIT, NEVER),
};
static const ntp_attr_decl softmax_attrs[] = {
    A_INT("axis", axis, INT64_MIN, DFLT(-1)),
};
static const ntp_attr_decl concat_attrs[] = {
    A_INT("axis", axis, INT64_MIN, REQ),
};
static const ntp_attr_decl flatten_attrs[] = {
    A_INT("axis", axis, INT64_MIN, DFLT(1)),
};
/* One of sizes and parts is required (finish()). */
static const ntp_attr_decl split_attrs[] = {
    A_INT("axis", axis, INT64_MIN, REQ),
    A_INTS("sizes", sizes, n_sizes, 1, NTP_MAX_OUTPUTS, BATCH),
    A_SPECIAL_NOFIELD("parts", PARTS, NEVER),
};
static const ntp_attr_decl reshape_attrs[] = {
    A_INTS("shape", shape, n_shape, -1, MAXD, .check = NTP_CHECK_ONE_INFERRED,
           .flags = NTP_ATTR_REQUIRED | NTP_ATTR_BATCH),
};
static const ntp_attr_decl transpose_attrs[] = {
    A_INTS("perm", perm, n_perm, 0, MAXD, .check = NTP_CHECK_PERMUTATION),
};
static const ntp_attr_decl pad_attrs[] = {
    A_INTS("pads", pads, n_pads, 0, 2 * MAXD, .check = NTP_CHECK_PAIRS, REQ),
    A_ENUM("mode", pad_mode, ntp__padmode_names, DFLT(NTP_PADMODE_CONSTANT)),
    A_FLOAT("value", value, ANY, DFLT(0)),
};
/* Attributes that fill the same field are aliases: give one. */
static const ntp_attr_decl embedding_attrs[] = {
    A_INT("vocab", vocab, 1, REQ),
    A_INT("units", units, 1, REQ),
    A_INT("dim", units, 1, NEVER),
};
// clang-format off
#define RNN_COMMON_                                                                \
    A_INT("units", units, 1, REQ),                                                 \
    A_INT("hidden", units, 1, NEVER),                                              \
    A_ENUM("direction", direction, ntp__direction_names, DFLT(NTP_DIR_FORWARD)),   \
    A_ENUM("merge", merge, ntp__merge_names, DFLT(NTP_MERGE_CONCAT)),              \
    A_CHOICE("sequence", last_step, ntp__sequence_names)
// clang-format on
static const ntp_attr_decl lstm_attrs[] = {
    RNN_COMMON_,
    A_BOOL("bias", bias, DFLT(1)),
};
static const ntp_attr_decl rnn_attrs[] = {
    RNN_COMMON_,
    A_ENUM("activation", rnn_act, ntp__rnn_act_names, DFLT(NTP_RNN_ACT_TANH)),
    A_BOOL("bias", bias, DFLT(1)),
};
static const ntp_attr_decl attention_attrs[] = {
    A_INT("heads", heads, 1, REQ),
    A_BOOL("causal", causal),
    A_BOOL("bias", bias, DFLT(1)),
};
/* DeepSpeech's front end: python_speech_features at 16 kHz, 25 ms windows
 * every 10 ms, 26 cepstra, 9 context frames each side (docs/ops.md). */
static const ntp_attr_decl mfcc_attrs[] = {
    A_INT("sample_rate", sample_rate, 1, DFLT(16000)),
    A_INT("window", window, 1, DFLT(400)),
    A_INT("hop", hop, 1, DFLT(160)),
    A_INT("fft", n_fft, 1, .check = NTP_CHECK_POW2, DFLT(512)),
    A_INT("mel_bands", mel_bands, 1, DFLT(26)),
    A_INT("coefficients", coefficients, 1, DFLT(26)),
    A_INT("context", context, 0, DFLT(9)),
};
/* The alphabet is taken verbatim: the space is a label in DeepSpeech's. */
static const ntp_attr_decl ctc_attrs[] = {
    A_ENUM("mode", decode, ntp__ctc_names, DFLT(NTP_CTC_BEAM)),
    A_INT("beam_width", beam_width, 1, DFLT(16)),
    A_STRING("alphabet", alphabet, IF_ANY, .dflt_s = ntp__default_alphabet),
};
/* Darknet's defaults: parse_yolo's and parse_region's. */
static const ntp_attr_decl darknet_head_attrs[] = {
    A_ENUM("head", head, ntp__head_names, DFLT(NTP_HEAD_YOLO)),
    A_INT("anchors", anchors, 1, DFLT(1)),
    A_INT("classes", classes, 0, DFLT(20)),
    A_INT("coords", coords, 2, DFLT(4)),
    A_BOOL("softmax", head_softmax),
    A_BOOL("background", background),
};
/* At least one of to and layout is required (finish()). */
static const ntp_attr_decl convert_attrs[] = {
    A_DTYPE("to", to_dtype, .has = OFF(has_to_dtype), .write = NTP_WRITE_IF_HAS),
    A_LAYOUT("layout", to_layout, .has = OFF(has_to_layout), .write = NTP_WRITE_IF_HAS),
};

/* Ops added for ONNX models, with ONNX's defaults (docs/ops.md). The
 * element-wise parameters are in their op's struct (graph-impl.h). */
static const ntp_attr_decl elu_attrs[] = {
    A_FLOAT("alpha", elu.alpha, ANY, DFLT(1.0)),
};
static const ntp_attr_decl thresholded_relu_attrs[] = {
    A_FLOAT("alpha", thresholded_relu.threshold, ANY, DFLT(1.0)),
};
static const ntp_attr_decl selu_attrs[] = {
    A_FLOAT("alpha", selu.alpha, ANY, DFLT(1.67326319217681884765625)),
    A_FLOAT("gamma", selu.gamma, ANY, DFLT(1.05070102214813232421875)),
};
static const ntp_attr_decl hard_sigmoid_attrs[] = {
    A_FLOAT("alpha", hard_sigmoid.slope, ANY, DFLT(0.2)),
    A_FLOAT("beta", hard_sigmoid.offset, ANY, DFLT(0.5)),
};
static const ntp_attr_decl shrink_attrs[] = {
    A_FLOAT("lambd", shrink.lambd, NONNEG, DFLT(0.5)),
    A_FLOAT("bias", shrink.bias, ANY, DFLT(0)),
};
static const ntp_attr_decl prelu_attrs[] = {
    A_SPECIAL("shared", shape, n_shape, SHARED, .write = NTP_WRITE_SPECIAL),
};
static const ntp_attr_decl reduce_attrs[] = {
    A_INTS("axes", reduce.axes, reduce.n_axes, INT64_MIN, MAXD, .check = NTP_CHECK_DISTINCT,
           IF_ANY),
};
static const ntp_attr_decl lrn_attrs[] = {
    A_INT("size", lrn.size, 1, REQ),
    A_FLOAT("alpha", lrn.alpha, ANY, DFLT(1e-4)),
    A_FLOAT("beta", lrn.beta, ANY, DFLT(0.75)),
    A_FLOAT("bias", lrn.bias, ANY, DFLT(1.0)),
};
/* A scalar constant is written with shape "1": the same value, and it
 * broadcasts alike (the markup's shapes have a dim or more). */
static const ntp_attr_decl constant_attrs[] = {
    A_INTS("shape", shape, n_shape, 1, MAXD, .write = NTP_WRITE_SPECIAL,
           .flags = NTP_ATTR_REQUIRED | NTP_ATTR_BATCH),
    A_BOOL("trainable", constant.trainable, DFLT(1)),
};
/* Starts and ends share their count (op-onnx-impl.h). */
static const ntp_attr_decl slice_attrs[] = {
    A_SPECIAL("starts", slice.starts, slice.n, STARTS, .write = NTP_WRITE_SPECIAL,
              .flags = NTP_ATTR_REQUIRED | NTP_ATTR_BATCH),
    A_SPECIAL("ends", slice.ends, slice.n, ENDS, .write = NTP_WRITE_SPECIAL,
              .flags = NTP_ATTR_REQUIRED | NTP_ATTR_BATCH),
    A_INTS("axes", slice.axes, slice.n_axes, INT64_MIN, MAXD, .check = NTP_CHECK_DISTINCT, IF_ANY),
    A_INTS("steps", slice.steps, slice.n_steps, INT64_MIN, MAXD, .check = NTP_CHECK_NONZERO,
           IF_ANY),
};
static const ntp_attr_decl expand_attrs[] = {
    A_INTS("shape", shape, n_shape, 1, MAXD, .flags = NTP_ATTR_REQUIRED | NTP_ATTR_BATCH),
};
/* Exactly one of sizes and scales (finish()); scales are kept as exact
 * rationals (op-onnx-impl.h). */
static const ntp_attr_decl resize_attrs[] = {
    A_INTS("sizes", shape, n_shape, 1, MAXD, .write = NTP_WRITE_IF_ANY, BATCH),
    A_SPECIAL("scales", resize.scale_num, resize.n_scales, SCALES, .write = NTP_WRITE_SPECIAL),
    A_ENUM("mode", resize.mode, ntp__resize_mode_names, DFLT(NTP_RESIZE_NEAREST)),
    A_ENUM("coordinates", resize.coord, ntp__resize_coord_names, DFLT(NTP_RESIZE_HALF_PIXEL)),
    A_ENUM("nearest", resize.nearest, ntp__resize_nearest_names,
           DFLT(NTP_RESIZE_ROUND_PREFER_FLOOR)),
    A_FLOAT("cubic_a", resize.cubic_a, ANY, DFLT(-0.75)),
    A_BOOL("exclude_outside", resize.exclude_outside),
};

/* Decoder ops (docs/decoders.md). */
static const ntp_attr_decl rmsnorm_attrs[] = {
    A_FLOAT("epsilon", epsilon, POSITIVE, DFLT(1e-5)),
};
static const ntp_attr_decl rope_attrs[] = {
    A_INT("head_dim", head_dim, 2, REQ),
    A_FLOAT("theta", theta, POSITIVE, DFLT(10000.0)),
};
static const ntp_attr_decl kv_attention_attrs[] = {
    A_INT("heads", heads, 1, REQ),
    A_INT("kv_heads", kv_heads, 1),
    A_INT("past", past, 0, DFLT(0)),
};
static const ntp_attr_decl lm_head_attrs[] = {
    A_INT("vocab", vocab, 1, REQ),
    A_BOOL("tied", tied),
};
/* delay: how long it busy-waits, in microseconds (a calibration layer). */
static const ntp_attr_decl delay_attrs[] = {
    A_INT("us", delay_us, 0, REQ),
};

typedef struct attr_set {
    const ntp_attr_decl *decl;
    int n;
} attr_set;

#define SET(arr)                                     \
    {                                                \
        (arr), (int)(sizeof(arr) / sizeof((arr)[0])) \
    }

/* Op to set; an op not listed has no attributes of its own. */
static const attr_set op_sets[NTP_OP_COUNT] = {
    [NTP_OP_FC] = SET(fc_attrs),
    [NTP_OP_MATMUL] = SET(matmul_attrs),
    [NTP_OP_CONV] = SET(conv_attrs),
    [NTP_OP_DECONV] = SET(deconv_attrs),
    [NTP_OP_MAXPOOL] = SET(maxpool_attrs),
    [NTP_OP_AVGPOOL] = SET(avgpool_attrs),
    [NTP_OP_BATCHNORM] = SET(norm_attrs),
    [NTP_OP_INSTANCENORM] = SET(norm_attrs),
    [NTP_OP_LAYERNORM] = SET(layernorm_attrs),
    [NTP_OP_RELU] = SET(relu_attrs),
    [NTP_OP_LEAKY_RELU] = SET(leaky_attrs),
    [NTP_OP_CLIP] = SET(clip_attrs),
    [NTP_OP_DROPOUT] = SET(dropout_attrs),
    [NTP_OP_SOFTMAX] = SET(softmax_attrs),
    [NTP_OP_LOG_SOFTMAX] = SET(softmax_attrs),
    [NTP_OP_HARDMAX] = SET(softmax_attrs),
    [NTP_OP_CONCAT] = SET(concat_attrs),
    [NTP_OP_FLATTEN] = SET(flatten_attrs),
    [NTP_OP_SPLIT] = SET(split_attrs),
    [NTP_OP_RESHAPE] = SET(reshape_attrs),
    [NTP_OP_TRANSPOSE] = SET(transpose_attrs),
    [NTP_OP_PAD] = SET(pad_attrs),
    [NTP_OP_EMBEDDING] = SET(embedding_attrs),
    [NTP_OP_LSTM] = SET(lstm_attrs),
    [NTP_OP_GRU] = SET(lstm_attrs),
    [NTP_OP_RNN] = SET(rnn_attrs),
    [NTP_OP_ATTENTION] = SET(attention_attrs),
    [NTP_OP_MFCC] = SET(mfcc_attrs),
    [NTP_OP_CTC_DECODE] = SET(ctc_attrs),
    [NTP_OP_CONVERT] = SET(convert_attrs),
    [NTP_OP_DARKNET_HEAD] = SET(darknet_head_attrs),
    [NTP_OP_ELU] = SET(elu_attrs),
    [NTP_OP_CELU] = SET(elu_attrs),
    [NTP_OP_THRESHOLDED_RELU] = SET(thresholded_relu_attrs),
    [NTP_OP_SELU] = SET(selu_attrs),
    [NTP_OP_HARD_SIGMOID] = SET(hard_sigmoid_attrs),
    [NTP_OP_SHRINK] = SET(shrink_attrs),
    [NTP_OP_PRELU] = SET(prelu_attrs),
    [NTP_OP_REDUCE_MEAN] = SET(reduce_attrs),
    [NTP_OP_REDUCE_SUM] = SET(reduce_attrs),
    [NTP_OP_REDUCE_MAX] = SET(reduce_attrs),
    [NTP_OP_REDUCE_MIN] = SET(reduce_attrs),
    [NTP_OP_REDUCE_PROD] = SET(reduce_attrs),
    [NTP_OP_REDUCE_L1] = SET(reduce_attrs),
    [NTP_OP_REDUCE_L2] = SET(reduce_attrs),
    [NTP_OP_REDUCE_SUM_SQUARE] = SET(reduce_attrs),
    [NTP_OP_REDUCE_LOG_SUM] = SET(reduce_attrs),
    [NTP_OP_REDUCE_LOG_SUM_EXP] = SET(reduce_attrs),
    [NTP_OP_LRN] = SET(lrn_attrs),
    [NTP_OP_CONSTANT] = SET(constant_attrs),
    [NTP_OP_SLICE] = SET(slice_attrs),
    [NTP_OP_EXPAND] = SET(expand_attrs),
    [NTP_OP_RESIZE] = SET(resize_attrs),
    [NTP_OP_RMSNORM] = SET(rmsnorm_attrs),
    [NTP_OP_ROPE] = SET(rope_attrs),
    [NTP_OP_KV_ATTENTION] = SET(kv_attention_attrs),
    [NTP_OP_LM_HEAD] = SET(lm_head_attrs),
    [NTP_OP_DELAY] = SET(delay_attrs),
};

const ntp_attr_decl *ntp__op_attrs(ntp_op op, int *n)
{
    if ((unsigned)op >= NTP_OP_COUNT) {
        *n = 0;
        return NULL;
    }
    *n = op_sets[op].n;
    return op_sets[op].decl;
}

void ntp__attr_set_default(const ntp_attr_decl *d, ntp_attrs *a)
{
    if (!d->has_default || d->field < 0)
        return;
    void *p = ntp__attr_ptr(a, d->field);
    switch (d->type) {
    case NTP_ATTR_INT: *(int64_t *)p = (int64_t)d->dflt; break;
    case NTP_ATTR_FLOAT: *(double *)p = d->dflt; break;
    case NTP_ATTR_BOOL:
    case NTP_ATTR_CHOICE: *(bool *)p = d->dflt != 0; break;
    case NTP_ATTR_ENUM: *(int *)p = (int)d->dflt; break;
    case NTP_ATTR_INTS:
    case NTP_ATTR_STRING:
    case NTP_ATTR_DTYPE:
    case NTP_ATTR_LAYOUT:
    case NTP_ATTR_SPECIAL: break;
    }
}

/* The declared defaults of op's attributes on top of ntp__attrs_default's.
 * String defaults (the CTC alphabet) are the reader's to copy: this cannot
 * fail. */
void ntp__attrs_op_default(ntp_op op, ntp_attrs *a)
{
    int n;
    const ntp_attr_decl *d = ntp__op_attrs(op, &n);
    for (int i = 0; i < n; i++)
        ntp__attr_set_default(&d[i], a);
}
