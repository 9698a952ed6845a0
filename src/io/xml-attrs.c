/* Per-op attributes of the markup: which element accepts which attribute,
 * how each value is parsed, and where it lands in ntp_attrs.
 *
 * Values are parsed strictly: integers must be plain decimal with nothing
 * after them, floats must be finite C literals, booleans are true/false/1/0,
 * enums come from fixed lists (with the nearest name suggested), lists are
 * comma-separated. A typo must never silently become a default. The
 * meaning of each attribute is in docs/ops.md; the markup around it in
 * docs/topology-format.md. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "expr-impl.h"
#include "graph/op-onnx-impl.h"
#include "xml-impl.h"

const char *const ntp__xml_common_attrs[] = {"name", "inputs", "backend", "precision"};
const int ntp__xml_n_common_attrs = 4;

/* The attribute vocabulary of all ops. One id may mean different things on
 * different ops ("mode" is the padding mode of <pad> and the decoder of
 * <ctc_decode>); set_attr() switches on the op where it does. */
#define ATTR_LIST(X)                                                                  \
    X(UNITS, "units") X(DIM, "dim") X(HIDDEN, "hidden") X(FILTERS, "filters")         \
    X(BIAS, "bias") X(KERNEL, "kernel") X(STRIDE, "stride") X(DILATION, "dilation")    \
    X(PAD, "pad") X(OUTPUT_PADDING, "output_padding") X(GROUPS, "groups")              \
    X(DEPTHWISE, "depthwise") X(CEIL_MODE, "ceil_mode")                                \
    X(COUNT_INCLUDE_PAD, "count_include_pad") X(AXIS, "axis") X(ALPHA, "alpha")        \
    X(MIN, "min") X(MAX, "max") X(EPSILON, "epsilon") X(RATIO, "ratio")                \
    X(PERM, "perm") X(SHAPE, "shape") X(SIZES, "sizes") X(PARTS, "parts")              \
    X(PADS, "pads") X(MODE, "mode") X(VALUE, "value") X(VOCAB, "vocab")                \
    X(DIRECTION, "direction") X(MERGE, "merge") X(SEQUENCE, "sequence")                \
    X(ACTIVATION, "activation") X(HEADS, "heads") X(CAUSAL, "causal")                  \
    X(TRANSPOSE_A, "transpose_a") X(TRANSPOSE_B, "transpose_b")                        \
    X(SAMPLE_RATE, "sample_rate") X(WINDOW, "window") X(HOP, "hop") X(FFT, "fft")      \
    X(MEL_BANDS, "mel_bands") X(COEFFICIENTS, "coefficients") X(CONTEXT, "context")    \
    X(BEAM_WIDTH, "beam_width") X(ALPHABET, "alphabet") X(TO, "to") X(LAYOUT, "layout")    \
    /* ops added for ONNX models */                                                    \
    X(GAMMA, "gamma") X(BETA, "beta") X(LAMBD, "lambd") X(SHARED, "shared")            \
    X(AXES, "axes") X(SIZE, "size") X(TRAINABLE, "trainable") X(STARTS, "starts")      \
    X(ENDS, "ends") X(STEPS, "steps") X(SCALES, "scales")                              \
    X(COORDINATES, "coordinates") X(NEAREST, "nearest") X(CUBIC_A, "cubic_a")          \
    X(EXCLUDE_OUTSIDE, "exclude_outside")

typedef enum attr_id {
#define ATTR_ENUM_(e, s) A_##e,
    ATTR_LIST(ATTR_ENUM_)
#undef ATTR_ENUM_
    A_COUNT,
    A_END = -1
} attr_id;

static const char *const attr_names[A_COUNT] = {
#define ATTR_NAME_(e, s) [A_##e] = s,
    ATTR_LIST(ATTR_NAME_)
#undef ATTR_NAME_
};

/* Which attributes each op's element accepts, A_END-terminated. */
static const attr_id fc_attrs[] = {A_UNITS, A_BIAS, A_END};
static const attr_id matmul_attrs[] = {A_TRANSPOSE_A, A_TRANSPOSE_B, A_END};
static const attr_id conv_attrs[] = {A_FILTERS, A_KERNEL, A_STRIDE, A_DILATION, A_PAD,
                                     A_GROUPS, A_DEPTHWISE, A_BIAS, A_END};
static const attr_id deconv_attrs[] = {A_FILTERS, A_KERNEL, A_STRIDE, A_DILATION, A_PAD,
                                       A_OUTPUT_PADDING, A_GROUPS, A_DEPTHWISE, A_BIAS, A_END};
static const attr_id maxpool_attrs[] = {A_KERNEL, A_STRIDE, A_PAD, A_DILATION, A_CEIL_MODE, A_END};
static const attr_id avgpool_attrs[] = {A_KERNEL, A_STRIDE, A_PAD, A_CEIL_MODE,
                                        A_COUNT_INCLUDE_PAD, A_END};
static const attr_id no_attrs[] = {A_END};
static const attr_id batchnorm_attrs[] = {A_EPSILON, A_END};
static const attr_id layernorm_attrs[] = {A_EPSILON, A_AXIS, A_END};
static const attr_id relu_attrs[] = {A_MAX, A_END};
static const attr_id leaky_attrs[] = {A_ALPHA, A_END};
static const attr_id clip_attrs[] = {A_MIN, A_MAX, A_END};
static const attr_id dropout_attrs[] = {A_RATIO, A_END};
static const attr_id axis_attrs[] = {A_AXIS, A_END};
static const attr_id split_attrs[] = {A_AXIS, A_SIZES, A_PARTS, A_END};
static const attr_id reshape_attrs[] = {A_SHAPE, A_END};
static const attr_id transpose_attrs[] = {A_PERM, A_END};
static const attr_id pad_attrs[] = {A_PADS, A_MODE, A_VALUE, A_END};
static const attr_id embedding_attrs[] = {A_VOCAB, A_UNITS, A_DIM, A_END};
static const attr_id lstm_attrs[] = {A_UNITS, A_HIDDEN, A_DIRECTION, A_MERGE, A_SEQUENCE,
                                     A_BIAS, A_END};
static const attr_id rnn_attrs[] = {A_UNITS, A_HIDDEN, A_DIRECTION, A_MERGE, A_SEQUENCE,
                                    A_ACTIVATION, A_BIAS, A_END};
static const attr_id attention_attrs[] = {A_HEADS, A_CAUSAL, A_BIAS, A_END};
static const attr_id mfcc_attrs[] = {A_SAMPLE_RATE, A_WINDOW, A_HOP, A_FFT, A_MEL_BANDS,
                                     A_COEFFICIENTS, A_CONTEXT, A_END};
static const attr_id ctc_attrs[] = {A_MODE, A_BEAM_WIDTH, A_ALPHABET, A_END};
static const attr_id convert_attrs[] = {A_TO, A_LAYOUT, A_END};
/* Ops added for ONNX models (docs/ops.md, "Ops added for ONNX"). */
static const attr_id alpha_attrs[] = {A_ALPHA, A_END};
static const attr_id selu_attrs[] = {A_ALPHA, A_GAMMA, A_END};
static const attr_id hard_sigmoid_attrs[] = {A_ALPHA, A_BETA, A_END};
static const attr_id shrink_attrs[] = {A_LAMBD, A_BIAS, A_END};
static const attr_id prelu_attrs[] = {A_SHARED, A_END};
static const attr_id reduce_attrs[] = {A_AXES, A_END};
static const attr_id instancenorm_attrs[] = {A_EPSILON, A_END};
static const attr_id lrn_attrs[] = {A_SIZE, A_ALPHA, A_BETA, A_BIAS, A_END};
static const attr_id constant_attrs[] = {A_SHAPE, A_TRAINABLE, A_END};
static const attr_id slice_attrs[] = {A_STARTS, A_ENDS, A_AXES, A_STEPS, A_END};
static const attr_id expand_attrs[] = {A_SHAPE, A_END};
static const attr_id resize_attrs[] = {A_SIZES, A_SCALES, A_MODE, A_COORDINATES, A_NEAREST,
                                       A_CUBIC_A, A_EXCLUDE_OUTSIDE, A_END};

static const attr_id *op_attrs(ntp_op op)
{
    switch (op) {
    case NTP_OP_FC: return fc_attrs;
    case NTP_OP_MATMUL: return matmul_attrs;
    case NTP_OP_CONV: return conv_attrs;
    case NTP_OP_DECONV: return deconv_attrs;
    case NTP_OP_MAXPOOL: return maxpool_attrs;
    case NTP_OP_AVGPOOL: return avgpool_attrs;
    case NTP_OP_BATCHNORM: return batchnorm_attrs;
    case NTP_OP_LAYERNORM: return layernorm_attrs;
    case NTP_OP_RELU: return relu_attrs;
    case NTP_OP_LEAKY_RELU: return leaky_attrs;
    case NTP_OP_CLIP: return clip_attrs;
    case NTP_OP_DROPOUT: return dropout_attrs;
    case NTP_OP_SOFTMAX:
    case NTP_OP_CONCAT:
    case NTP_OP_FLATTEN: return axis_attrs;
    case NTP_OP_SPLIT: return split_attrs;
    case NTP_OP_RESHAPE: return reshape_attrs;
    case NTP_OP_TRANSPOSE: return transpose_attrs;
    case NTP_OP_PAD: return pad_attrs;
    case NTP_OP_EMBEDDING: return embedding_attrs;
    case NTP_OP_LSTM:
    case NTP_OP_GRU: return lstm_attrs;
    case NTP_OP_RNN: return rnn_attrs;
    case NTP_OP_ATTENTION: return attention_attrs;
    case NTP_OP_MFCC: return mfcc_attrs;
    case NTP_OP_CTC_DECODE: return ctc_attrs;
    case NTP_OP_CONVERT: return convert_attrs;
    case NTP_OP_ELU:
    case NTP_OP_CELU:
    case NTP_OP_THRESHOLDED_RELU: return alpha_attrs;
    case NTP_OP_SELU: return selu_attrs;
    case NTP_OP_HARD_SIGMOID: return hard_sigmoid_attrs;
    case NTP_OP_SHRINK: return shrink_attrs;
    case NTP_OP_PRELU: return prelu_attrs;
    case NTP_OP_LOG_SOFTMAX:
    case NTP_OP_HARDMAX: return axis_attrs;
    case NTP_OP_REDUCE_MEAN:
    case NTP_OP_REDUCE_SUM:
    case NTP_OP_REDUCE_MAX:
    case NTP_OP_REDUCE_MIN:
    case NTP_OP_REDUCE_PROD:
    case NTP_OP_REDUCE_L1:
    case NTP_OP_REDUCE_L2:
    case NTP_OP_REDUCE_SUM_SQUARE:
    case NTP_OP_REDUCE_LOG_SUM:
    case NTP_OP_REDUCE_LOG_SUM_EXP: return reduce_attrs;
    case NTP_OP_INSTANCENORM: return instancenorm_attrs;
    case NTP_OP_LRN: return lrn_attrs;
    case NTP_OP_CONSTANT: return constant_attrs;
    case NTP_OP_SLICE: return slice_attrs;
    case NTP_OP_EXPAND: return expand_attrs;
    case NTP_OP_RESIZE: return resize_attrs;
    default: return no_attrs;
    }
}

static attr_id find_attr(ntp_op op, const char *name)
{
    for (const attr_id *p = op_attrs(op); *p != A_END; p++)
        if (strcmp(attr_names[*p], name) == 0)
            return *p;
    return A_END;
}

bool ntp__xml_op_accepts(ntp_op op, const char *name)
{
    return find_attr(op, name) != A_END;
}

int ntp__xml_op_attr_names(ntp_op op, const char **names, int max)
{
    int n = 0;
    for (const attr_id *p = op_attrs(op); *p != A_END; p++, n++)
        if (n < max)
            names[n] = attr_names[*p];
    return n;
}

/* --- value parsers -------------------------------------------------------- */

static ntp_status errf(char *err, size_t errlen, ntp_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static ntp_status errf(char *err, size_t errlen, ntp_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (errlen > 0)
        vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return st;
}

/* Quote at most 64 bytes of a bad value: values may be up to 64 KiB and
 * the message must stay one readable line. */
#define QFMT "'%.64s%s'"
#define QARG(v) (v), strlen(v) > 64 ? "..." : ""

static const char *int_kind(int64_t min)
{
    return min == 1 ? "a positive integer" : min == 0 ? "a non-negative integer" : "an integer";
}

ntp_status ntp__xml_parse_int(const char *v, int64_t min, int64_t *out, char *err, size_t errlen)
{
    int64_t x;
    if (!ntp__expr_parse_int(v, &x)) {
        /* Digits that do not fit get their own message: "expected an
         * integer" would be puzzling for 99999999999999999999. */
        const char *d = v;
        while (isspace((unsigned char)*d))
            d++;
        if (*d == '-' || *d == '+')
            d++;
        if (isdigit((unsigned char)*d) && strspn(d, "0123456789") == strlen(d))
            return errf(err, errlen, NTP_STATUS_OVERFLOW, "integer " QFMT " does not fit in 64 bits",
                        QARG(v));
        return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "expected %s, got " QFMT, int_kind(min),
                    QARG(v));
    }
    if (x < min)
        return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "expected %s, got " QFMT, int_kind(min),
                    QARG(v));
    *out = x;
    return NTP_STATUS_OK;
}

ntp_status ntp__xml_parse_int_list(const char *v, int64_t min, int max, int64_t *vals, int *n,
                                   char *err, size_t errlen)
{
    int count = 0;
    const char *p = v;
    char item[96];
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (count == max)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "expected at most %d comma-separated values, got " QFMT, max, QARG(v));
        if (len >= sizeof item)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "expected comma-separated integers, got " QFMT, QARG(v));
        memcpy(item, p, len);
        item[len] = '\0';
        if (strspn(item, " \t\r\n") == len)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "expected comma-separated integers, got an empty item in " QFMT, QARG(v));
        char msg[256];
        ntp_status st = ntp__xml_parse_int(item, min, &vals[count], msg, sizeof msg);
        if (st != NTP_STATUS_OK)
            return errf(err, errlen, st, "%s", msg);
        count++;
        if (!comma)
            break;
        p = comma + 1;
    }
    *n = count;
    return NTP_STATUS_OK;
}

/* Copy v without surrounding blanks into buf (false if it does not fit). */
static bool trimmed(const char *v, char *buf, size_t len)
{
    while (isspace((unsigned char)*v))
        v++;
    size_t n = strlen(v);
    while (n > 0 && isspace((unsigned char)v[n - 1]))
        n--;
    if (n >= len)
        return false;
    memcpy(buf, v, n);
    buf[n] = '\0';
    return true;
}

static ntp_status parse_float(const char *v, double *out, char *err, size_t errlen)
{
    char buf[96];
    if (!trimmed(v, buf, sizeof buf) || buf[0] == '\0')
        return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "expected a number, got " QFMT, QARG(v));
    errno = 0;
    char *end;
    double d = strtod(buf, &end);
    if (*end != '\0' || !isfinite(d) || errno == ERANGE)
        return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "expected a finite number, got " QFMT,
                    QARG(v));
    *out = d;
    return NTP_STATUS_OK;
}

static ntp_status parse_bool(const char *v, bool *out, char *err, size_t errlen)
{
    char buf[16];
    if (trimmed(v, buf, sizeof buf)) {
        if (strcmp(buf, "true") == 0 || strcmp(buf, "1") == 0) {
            *out = true;
            return NTP_STATUS_OK;
        }
        if (strcmp(buf, "false") == 0 || strcmp(buf, "0") == 0) {
            *out = false;
            return NTP_STATUS_OK;
        }
    }
    return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "expected true or false, got " QFMT, QARG(v));
}

/* Comma-separated finite numbers, 1..max of them. */
static ntp_status parse_float_list(const char *v, int max, double *vals, int *n, char *err,
                                   size_t errlen)
{
    int count = 0;
    const char *p = v;
    char item[96];
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (count == max)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "expected at most %d comma-separated values, got " QFMT, max, QARG(v));
        if (len >= sizeof item)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "expected comma-separated numbers, got " QFMT, QARG(v));
        memcpy(item, p, len);
        item[len] = '\0';
        ntp_status st = parse_float(item, &vals[count], err, errlen);
        if (st != NTP_STATUS_OK)
            return st;
        count++;
        if (!comma)
            break;
        p = comma + 1;
    }
    *n = count;
    return NTP_STATUS_OK;
}

/* "a, b or c" */
static void list_names(const char *const *names, int n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s",
                                 i == 0 ? "" : i == n - 1 ? " or " : ", ", names[i]);
}

ntp_status ntp__xml_parse_enum(const char *v, const char *const *names, int n, int *idx,
                               char *err, size_t errlen)
{
    char buf[96];
    if (trimmed(v, buf, sizeof buf))
        for (int i = 0; i < n; i++)
            if (strcmp(buf, names[i]) == 0) {
                *idx = i;
                return NTP_STATUS_OK;
            }
    char all[256];
    list_names(names, n, all, sizeof all);
    const char *near = ntp__nearest(trimmed(v, buf, sizeof buf) ? buf : v, names, n);
    if (near)
        return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                    "expected %s, got " QFMT "; did you mean '%s'?", all, QARG(v), near);
    return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "expected %s, got " QFMT, all, QARG(v));
}

static const char *const dtype_names[] = {"f32", "bf16", "f16", "i8", "u8", "i32", "i64"};

ntp_status ntp__xml_parse_dtype(const char *v, ntp_dtype *out, char *err, size_t errlen)
{
    char buf[32];
    if (trimmed(v, buf, sizeof buf) && ntp_dtype_parse(buf, out) == NTP_STATUS_OK)
        return NTP_STATUS_OK;
    int idx;
    return ntp__xml_parse_enum(v, dtype_names, 7, &idx, err, errlen);
}

static const char *const precision_names[] = {"f32", "bf16", "f16", "i8"};

ntp_status ntp__xml_parse_precision(const char *v, ntp_dtype *out, char *err, size_t errlen)
{
    char buf[32] = "";
    ntp_dtype t;
    if (trimmed(v, buf, sizeof buf) && ntp_dtype_parse(buf, &t) == NTP_STATUS_OK &&
        ntp_dtype_is_precision(t)) {
        *out = t;
        return NTP_STATUS_OK;
    }
    int idx;
    ntp_status st = ntp__xml_parse_enum(v, precision_names, 4, &idx, err, errlen);
    /* A valid dtype that is not a compute precision (i32) gets a clearer
     * message than "did you mean". */
    if (ntp_dtype_parse(buf, &t) == NTP_STATUS_OK)
        return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                    "'%s' is not a compute precision: expected f32, bf16, f16 or i8", buf);
    return st;
}

static const char *const layout_names[] = {"nchw", "nhwc"};

ntp_status ntp__xml_parse_layout(const char *v, ntp_layout *out, char *err, size_t errlen)
{
    int idx;
    ntp_status st = ntp__xml_parse_enum(v, layout_names, 2, &idx, err, errlen);
    if (st == NTP_STATUS_OK)
        *out = idx == 0 ? NTP_LAYOUT_NCHW : NTP_LAYOUT_NHWC;
    return st;
}

/* --- per-op attributes ---------------------------------------------------- */

static const char *const pad_kind_names[] = {"same", "same_lower", "valid"};
static const char *const direction_names[] = {"forward", "reverse", "bidirectional"};
static const char *const merge_names[] = {"concat", "sum"};
static const char *const sequence_names[] = {"full", "last"};
static const char *const activation_names[] = {"tanh", "relu"};
static const char *const padmode_names[] = {"constant", "reflect", "edge"};
static const char *const ctc_names[] = {"greedy", "beam"};
static const char *const resize_mode_names[] = {"nearest", "linear", "cubic"};

#define NAMES(a) (a), (int)(sizeof(a) / sizeof((a)[0]))

/* What the parsing of one layer's attributes has seen so far. */
typedef struct seen {
    bool given[A_COUNT];
    bool depthwise;
    int64_t parts;
} seen;

/* The conv/pool `pad`: a keyword or an explicit list. */
static ntp_status parse_pad(ntp_op op, const char *v, ntp_attrs *a, char *err, size_t errlen)
{
    char buf[32];
    if (trimmed(v, buf, sizeof buf) && buf[0] != '\0' && !isdigit((unsigned char)buf[0]) &&
        buf[0] != '-' && buf[0] != '+') {
        int k;
        if (ntp__xml_parse_enum(buf, NAMES(pad_kind_names), &k, err, errlen) != NTP_STATUS_OK) {
            const char *near = ntp__nearest(buf, NAMES(pad_kind_names));
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "expected same, same_lower, valid or a list of integers, got " QFMT
                        "%s%s%s",
                        QARG(v), near ? "; did you mean '" : "", near ? near : "",
                        near ? "'?" : "");
        }
        if (op == NTP_OP_DECONV && k != 2)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "'%s' is not accepted on <deconv>: give explicit pads", buf);
        a->pad_kind = k == 0 ? NTP_PAD_SAME_UPPER : k == 1 ? NTP_PAD_SAME_LOWER : NTP_PAD_VALID;
        a->n_pad = 0;
        return NTP_STATUS_OK;
    }
    ntp_status st = ntp__xml_parse_int_list(v, 0, 6, a->pad, &a->n_pad, err, errlen);
    if (st != NTP_STATUS_OK)
        return st;
    /* nk values (symmetric) or 2*nk (begins, then ends), nk in 1..3. */
    if (a->n_pad == 5)
        return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                    "expected 1 to 3 values (symmetric) or 2, 4 or 6 (begins, then ends), got 5");
    a->pad_kind = NTP_PAD_EXPLICIT;
    return NTP_STATUS_OK;
}

static ntp_status set_attr(ntp_op op, attr_id id, const char *v, ntp_attrs *a, seen *s,
                           char *err, size_t errlen)
{
    int k = 0;
    ntp_status st = NTP_STATUS_OK;
    switch (id) {
    case A_UNITS:
    case A_DIM:
    case A_HIDDEN:
        return ntp__xml_parse_int(v, 1, &a->units, err, errlen);
    case A_FILTERS: return ntp__xml_parse_int(v, 1, &a->filters, err, errlen);
    case A_BIAS:
        /* shrink's and lrn's bias is a number; every other op's a switch. */
        if (op == NTP_OP_SHRINK)
            return parse_float(v, &a->value, err, errlen);
        if (op == NTP_OP_LRN)
            return parse_float(v, &a->lrn.bias, err, errlen);
        return parse_bool(v, &a->bias, err, errlen);
    case A_KERNEL: return ntp__xml_parse_int_list(v, 1, 3, a->kernel, &a->n_kernel, err, errlen);
    case A_STRIDE: return ntp__xml_parse_int_list(v, 1, 3, a->stride, &a->n_stride, err, errlen);
    case A_DILATION:
        return ntp__xml_parse_int_list(v, 1, 3, a->dilation, &a->n_dilation, err, errlen);
    case A_PAD: return parse_pad(op, v, a, err, errlen);
    case A_OUTPUT_PADDING:
        return ntp__xml_parse_int_list(v, 0, 3, a->output_padding, &a->n_output_padding, err,
                                       errlen);
    case A_GROUPS: return ntp__xml_parse_int(v, 1, &a->groups, err, errlen);
    case A_DEPTHWISE: {
        return parse_bool(v, &s->depthwise, err, errlen);
    }
    case A_CEIL_MODE: return parse_bool(v, &a->ceil_mode, err, errlen);
    case A_COUNT_INCLUDE_PAD: return parse_bool(v, &a->count_include_pad, err, errlen);
    case A_AXIS: return ntp__xml_parse_int(v, INT64_MIN, &a->axis, err, errlen);
    case A_ALPHA: return parse_float(v, op == NTP_OP_LRN ? &a->lrn.alpha : &a->alpha, err, errlen);
    case A_MIN: return parse_float(v, &a->min, err, errlen);
    case A_MAX:
        if ((st = parse_float(v, &a->max, err, errlen)) != NTP_STATUS_OK)
            return st;
        if (op == NTP_OP_RELU) {
            if (a->max <= 0)
                return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                            "expected a positive number, got " QFMT, QARG(v));
            a->has_max = true;
        }
        return NTP_STATUS_OK;
    case A_EPSILON:
        if ((st = parse_float(v, &a->epsilon, err, errlen)) != NTP_STATUS_OK)
            return st;
        if (a->epsilon <= 0)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "expected a positive number, got " QFMT,
                        QARG(v));
        return NTP_STATUS_OK;
    case A_RATIO: {
        /* Identity at inference: validated, then not stored. */
        double r;
        if ((st = parse_float(v, &r, err, errlen)) != NTP_STATUS_OK)
            return st;
        if (r < 0 || r >= 1)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "expected a number in [0, 1), got " QFMT, QARG(v));
        return NTP_STATUS_OK;
    }
    case A_PERM: {
        if ((st = ntp__xml_parse_int_list(v, 0, NTP_MAX_DIMS, a->perm, &a->n_perm, err,
                                          errlen)) != NTP_STATUS_OK)
            return st;
        bool used[NTP_MAX_DIMS] = {false};
        for (int i = 0; i < a->n_perm; i++) {
            if (a->perm[i] >= a->n_perm || used[a->perm[i]])
                return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                            "expected a permutation of 0..%d, got " QFMT, a->n_perm - 1, QARG(v));
            used[a->perm[i]] = true;
        }
        return NTP_STATUS_OK;
    }
    case A_SHAPE: {
        if (op == NTP_OP_CONSTANT || op == NTP_OP_EXPAND)
            return ntp__xml_parse_int_list(v, 1, NTP_MAX_DIMS, a->shape, &a->n_shape, err, errlen);
        if ((st = ntp__xml_parse_int_list(v, -1, NTP_MAX_DIMS, a->shape, &a->n_shape, err,
                                          errlen)) != NTP_STATUS_OK)
            return st;
        int inferred = 0;
        for (int i = 0; i < a->n_shape; i++)
            inferred += a->shape[i] == -1;
        if (inferred > 1)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "at most one dimension may be -1, got " QFMT, QARG(v));
        return NTP_STATUS_OK;
    }
    case A_SIZES:
        if (op == NTP_OP_RESIZE)
            return ntp__xml_parse_int_list(v, 1, NTP_MAX_DIMS, a->shape, &a->n_shape, err, errlen);
        return ntp__xml_parse_int_list(v, 1, NTP_MAX_OUTPUTS, a->sizes, &a->n_sizes, err, errlen);
    case A_PARTS:
        if ((st = ntp__xml_parse_int(v, 1, &s->parts, err, errlen)) != NTP_STATUS_OK)
            return st;
        if (s->parts > NTP_MAX_OUTPUTS)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "a split has at most %d outputs, got " QFMT, NTP_MAX_OUTPUTS, QARG(v));
        return NTP_STATUS_OK;
    case A_PADS:
        if ((st = ntp__xml_parse_int_list(v, 0, 2 * NTP_MAX_DIMS, a->pads, &a->n_pads, err,
                                          errlen)) != NTP_STATUS_OK)
            return st;
        if (a->n_pads % 2 != 0)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "expected 2 values per dimension (all begins, then all ends), got %d",
                        a->n_pads);
        return NTP_STATUS_OK;
    case A_MODE:
        if (op == NTP_OP_RESIZE)
            return ntp__xml_parse_enum(v, NAMES(resize_mode_names), &a->resize.mode, err, errlen);
        if (op == NTP_OP_CTC_DECODE) {
            if ((st = ntp__xml_parse_enum(v, NAMES(ctc_names), &k, err, errlen)) == NTP_STATUS_OK)
                a->decode = k == 0 ? NTP_CTC_GREEDY : NTP_CTC_BEAM;
            return st;
        }
        if ((st = ntp__xml_parse_enum(v, NAMES(padmode_names), &k, err, errlen)) == NTP_STATUS_OK)
            a->pad_mode = k == 0 ? NTP_PADMODE_CONSTANT : k == 1 ? NTP_PADMODE_REFLECT
                                                                  : NTP_PADMODE_EDGE;
        return st;
    case A_VALUE: return parse_float(v, &a->value, err, errlen);
    case A_VOCAB: return ntp__xml_parse_int(v, 1, &a->vocab, err, errlen);
    case A_DIRECTION:
        if ((st = ntp__xml_parse_enum(v, NAMES(direction_names), &k, err, errlen)) ==
            NTP_STATUS_OK)
            a->direction = k == 0 ? NTP_DIR_FORWARD : k == 1 ? NTP_DIR_REVERSE
                                                             : NTP_DIR_BIDIRECTIONAL;
        return st;
    case A_MERGE:
        if ((st = ntp__xml_parse_enum(v, NAMES(merge_names), &k, err, errlen)) == NTP_STATUS_OK)
            a->merge = k == 0 ? NTP_MERGE_CONCAT : NTP_MERGE_SUM;
        return st;
    case A_SEQUENCE:
        if ((st = ntp__xml_parse_enum(v, NAMES(sequence_names), &k, err, errlen)) ==
            NTP_STATUS_OK)
            a->last_step = k == 1;
        return st;
    case A_ACTIVATION:
        if ((st = ntp__xml_parse_enum(v, NAMES(activation_names), &k, err, errlen)) ==
            NTP_STATUS_OK)
            a->rnn_act = k == 0 ? NTP_RNN_ACT_TANH : NTP_RNN_ACT_RELU;
        return st;
    case A_HEADS: return ntp__xml_parse_int(v, 1, &a->heads, err, errlen);
    case A_CAUSAL: return parse_bool(v, &a->causal, err, errlen);
    case A_TRANSPOSE_A: return parse_bool(v, &a->transpose_a, err, errlen);
    case A_TRANSPOSE_B: return parse_bool(v, &a->transpose_b, err, errlen);
    case A_SAMPLE_RATE: return ntp__xml_parse_int(v, 1, &a->sample_rate, err, errlen);
    case A_WINDOW: return ntp__xml_parse_int(v, 1, &a->window, err, errlen);
    case A_HOP: return ntp__xml_parse_int(v, 1, &a->hop, err, errlen);
    case A_FFT:
        if ((st = ntp__xml_parse_int(v, 1, &a->n_fft, err, errlen)) != NTP_STATUS_OK)
            return st;
        if ((a->n_fft & (a->n_fft - 1)) != 0)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "expected a power of two, got " QFMT,
                        QARG(v));
        return NTP_STATUS_OK;
    case A_MEL_BANDS: return ntp__xml_parse_int(v, 1, &a->mel_bands, err, errlen);
    case A_COEFFICIENTS: return ntp__xml_parse_int(v, 1, &a->coefficients, err, errlen);
    case A_CONTEXT: return ntp__xml_parse_int(v, 0, &a->context, err, errlen);
    case A_BEAM_WIDTH: return ntp__xml_parse_int(v, 1, &a->beam_width, err, errlen);
    case A_ALPHABET:
        /* Taken verbatim: the space is a label in DeepSpeech's alphabet. */
        if (v[0] == '\0')
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "expected at least one character");
        free(a->alphabet);
        a->alphabet = ntp__strdup(v);
        return a->alphabet ? NTP_STATUS_OK
                           : errf(err, errlen, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    case A_TO:
        if ((st = ntp__xml_parse_dtype(v, &a->to_dtype, err, errlen)) == NTP_STATUS_OK)
            a->has_to_dtype = true;
        return st;
    case A_LAYOUT:
        if ((st = ntp__xml_parse_layout(v, &a->to_layout, err, errlen)) == NTP_STATUS_OK)
            a->has_to_layout = true;
        return st;
    case A_GAMMA:
    case A_BETA:
        /* selu's gamma, hard_sigmoid's and lrn's beta: the second parameter
         * (op-onnx-impl.h). */
        return parse_float(v, op == NTP_OP_LRN ? &a->lrn.beta : &a->value, err, errlen);
    case A_LAMBD:
        if ((st = parse_float(v, &a->alpha, err, errlen)) != NTP_STATUS_OK)
            return st;
        if (a->alpha < 0)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "expected a non-negative number, got " QFMT, QARG(v));
        return NTP_STATUS_OK;
    case A_SHARED: {
        bool shared;
        if ((st = parse_bool(v, &shared, err, errlen)) != NTP_STATUS_OK)
            return st;
        a->n_shape = shared ? 1 : 0;
        a->shape[0] = 1;
        return NTP_STATUS_OK;
    }
    case A_AXES: {
        /* reduce_* and slice keep axes in perm (op-onnx-impl.h). */
        if ((st = ntp__xml_parse_int_list(v, INT64_MIN, NTP_MAX_DIMS, a->perm, &a->n_perm, err,
                                          errlen)) != NTP_STATUS_OK)
            return st;
        for (int i = 0; i < a->n_perm; i++)
            for (int j = 0; j < i; j++)
                if (a->perm[i] == a->perm[j])
                    return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                                "axis %lld is given twice in " QFMT, (long long)a->perm[i], QARG(v));
        return NTP_STATUS_OK;
    }
    case A_SIZE:
        return ntp__xml_parse_int(v, 1, &a->lrn.size, err, errlen);
    case A_TRAINABLE: return parse_bool(v, &a->constant.trainable, err, errlen);
    case A_STARTS:
    case A_ENDS: {
        int64_t vals[NTP_MAX_DIMS];
        int n = 0;
        if ((st = ntp__xml_parse_int_list(v, INT64_MIN, NTP_MAX_DIMS, vals, &n, err, errlen)) !=
            NTP_STATUS_OK)
            return st;
        if (s->given[id == A_STARTS ? A_ENDS : A_STARTS] && n != a->n_pads)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "'starts' and 'ends' must have as many values (got %d and %d)",
                        id == A_STARTS ? n : a->n_pads, id == A_STARTS ? a->n_pads : n);
        for (int i = 0; i < n; i++)
            a->pads[(id == A_STARTS ? 0 : NTP_SLICE_ENDS) + i] = vals[i];
        a->n_pads = n;
        return NTP_STATUS_OK;
    }
    case A_STEPS:
        if ((st = ntp__xml_parse_int_list(v, INT64_MIN, NTP_MAX_DIMS, a->shape, &a->n_shape, err,
                                          errlen)) != NTP_STATUS_OK)
            return st;
        for (int i = 0; i < a->n_shape; i++)
            if (a->shape[i] == 0)
                return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "a step of 0 in " QFMT, QARG(v));
        return NTP_STATUS_OK;
    case A_SCALES: {
        double sc[NTP_MAX_DIMS];
        int n = 0;
        if ((st = parse_float_list(v, NTP_MAX_DIMS, sc, &n, err, errlen)) != NTP_STATUS_OK)
            return st;
        for (int i = 0; i < n; i++)
            if (!ntp__resize_scale_rational(sc[i], &a->pads[i], &a->pads[NTP_RESIZE_DEN + i]))
                return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                            "expected positive scales, got " QFMT, QARG(v));
        a->n_pads = n;
        return NTP_STATUS_OK;
    }
    case A_COORDINATES:
        return ntp__xml_parse_enum(v, ntp__resize_coord_names, 5, &a->resize.coord, err, errlen);
    case A_NEAREST:
        return ntp__xml_parse_enum(v, ntp__resize_nearest_names, 4, &a->resize.nearest, err, errlen);
    case A_CUBIC_A: return parse_float(v, &a->resize.cubic_a, err, errlen);
    case A_EXCLUDE_OUTSIDE: return parse_bool(v, &a->resize.exclude_outside, err, errlen);
    case A_COUNT:
    case A_END: break;
    }
    return errf(err, errlen, NTP_STATUS_INTERNAL, "attribute table out of step");
}

static ntp_status missing(char *err, size_t errlen, const char *name)
{
    return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "missing required attribute '%s'", name);
}

static ntp_status check_alias(const seen *s, attr_id x, attr_id y, char *err, size_t errlen)
{
    if (s->given[x] && s->given[y])
        return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                    "attributes '%s' and '%s' are the same: give one", attr_names[x],
                    attr_names[y]);
    return NTP_STATUS_OK;
}

/* Required attributes, combinations and op-specific defaults. */
static ntp_status finish(ntp_op op, const seen *s, ntp_attrs *a, int *n_out, char *err,
                         size_t errlen)
{
    ntp_status st;
    *n_out = 1;
    switch (op) {
    case NTP_OP_FC:
        return s->given[A_UNITS] ? NTP_STATUS_OK : missing(err, errlen, "units");
    case NTP_OP_CONV:
    case NTP_OP_DECONV:
        if (!s->given[A_FILTERS])
            return missing(err, errlen, "filters");
        if (!s->given[A_KERNEL])
            return missing(err, errlen, "kernel");
        if (s->depthwise) {
            if (s->given[A_GROUPS])
                return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                            "attributes 'groups' and 'depthwise' conflict: give one");
            /* groups = -1 is the IR's "as many groups as input channels":
             * the channel count is known only at shape inference, which
             * resolves it (and checks that filters is a multiple of it). */
            a->groups = -1;
        }
        return NTP_STATUS_OK;
    case NTP_OP_MAXPOOL:
    case NTP_OP_AVGPOOL:
        return s->given[A_KERNEL] ? NTP_STATUS_OK : missing(err, errlen, "kernel");
    case NTP_OP_CLIP:
        if (!s->given[A_MIN] && !s->given[A_MAX])
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "missing attribute 'min' or 'max' (at least one is required)");
        if (!s->given[A_MIN])
            a->min = -INFINITY;
        if (!s->given[A_MAX])
            a->max = INFINITY;
        if (a->min > a->max)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "'min' (%g) is greater than 'max' (%g)",
                        a->min, a->max);
        return NTP_STATUS_OK;
    case NTP_OP_CONCAT:
        return s->given[A_AXIS] ? NTP_STATUS_OK : missing(err, errlen, "axis");
    case NTP_OP_SPLIT:
        if (!s->given[A_AXIS])
            return missing(err, errlen, "axis");
        if (s->given[A_SIZES] && s->given[A_PARTS])
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "attributes 'sizes' and 'parts' conflict: give one");
        if (s->given[A_SIZES]) {
            *n_out = a->n_sizes;
        } else if (s->given[A_PARTS]) {
            /* A negative count means "this many equal parts": the sizes
             * are known once shape inference sees the input. */
            a->n_sizes = -(int)s->parts;
            *n_out = (int)s->parts;
        } else {
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "missing attribute 'sizes' or 'parts' (one is required)");
        }
        return NTP_STATUS_OK;
    case NTP_OP_RESHAPE:
        return s->given[A_SHAPE] ? NTP_STATUS_OK : missing(err, errlen, "shape");
    case NTP_OP_FLATTEN:
        if (!s->given[A_AXIS])
            a->axis = 1;
        return NTP_STATUS_OK;
    case NTP_OP_PAD:
        return s->given[A_PADS] ? NTP_STATUS_OK : missing(err, errlen, "pads");
    case NTP_OP_EMBEDDING:
        if ((st = check_alias(s, A_UNITS, A_DIM, err, errlen)) != NTP_STATUS_OK)
            return st;
        if (!s->given[A_VOCAB])
            return missing(err, errlen, "vocab");
        return s->given[A_UNITS] || s->given[A_DIM] ? NTP_STATUS_OK : missing(err, errlen, "units");
    case NTP_OP_LSTM:
    case NTP_OP_GRU:
    case NTP_OP_RNN:
        if ((st = check_alias(s, A_UNITS, A_HIDDEN, err, errlen)) != NTP_STATUS_OK)
            return st;
        return s->given[A_UNITS] || s->given[A_HIDDEN] ? NTP_STATUS_OK
                                                       : missing(err, errlen, "units");
    case NTP_OP_ATTENTION:
        return s->given[A_HEADS] ? NTP_STATUS_OK : missing(err, errlen, "heads");
    case NTP_OP_MFCC:
        /* DeepSpeech's front end: 25 ms windows every 10 ms at 16 kHz, 26
         * cepstra, 9 context frames each side (docs/ops.md). */
        if (!s->given[A_SAMPLE_RATE])
            a->sample_rate = 16000;
        if (!s->given[A_WINDOW])
            a->window = 400;
        if (!s->given[A_HOP])
            a->hop = 160;
        if (!s->given[A_FFT])
            a->n_fft = 512;
        if (!s->given[A_MEL_BANDS])
            a->mel_bands = 26;
        if (!s->given[A_COEFFICIENTS])
            a->coefficients = 26;
        if (!s->given[A_CONTEXT])
            a->context = 9;
        if (a->n_fft < a->window)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "'fft' (%lld) must be at least 'window' (%lld)", (long long)a->n_fft,
                        (long long)a->window);
        if (a->coefficients > a->mel_bands)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "'coefficients' (%lld) must not exceed 'mel_bands' (%lld)",
                        (long long)a->coefficients, (long long)a->mel_bands);
        return NTP_STATUS_OK;
    case NTP_OP_CTC_DECODE:
        if (!a->alphabet) {
            a->alphabet = ntp__strdup(" abcdefghijklmnopqrstuvwxyz'");
            if (!a->alphabet)
                return errf(err, errlen, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        }
        return NTP_STATUS_OK;
    case NTP_OP_CONVERT:
        if (!s->given[A_TO] && !s->given[A_LAYOUT])
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "missing attribute 'to' or 'layout' (at least one is required)");
        return NTP_STATUS_OK;
    /* Ops added for ONNX models: ONNX's defaults (docs/ops.md). */
    case NTP_OP_ELU:
    case NTP_OP_CELU:
    case NTP_OP_THRESHOLDED_RELU:
        if (!s->given[A_ALPHA])
            a->alpha = 1.0;
        return NTP_STATUS_OK;
    case NTP_OP_SELU:
        if (!s->given[A_ALPHA])
            a->alpha = 1.67326319217681884765625;
        if (!s->given[A_GAMMA])
            a->value = 1.05070102214813232421875;
        return NTP_STATUS_OK;
    case NTP_OP_HARD_SIGMOID:
        if (!s->given[A_ALPHA])
            a->alpha = 0.2;
        if (!s->given[A_BETA])
            a->value = 0.5;
        return NTP_STATUS_OK;
    case NTP_OP_SHRINK:
        if (!s->given[A_LAMBD])
            a->alpha = 0.5;
        return NTP_STATUS_OK;
    case NTP_OP_LRN:
        if (!s->given[A_SIZE])
            return missing(err, errlen, "size");
        if (!s->given[A_ALPHA])
            a->lrn.alpha = 1e-4;
        if (!s->given[A_BETA])
            a->lrn.beta = 0.75;
        if (!s->given[A_BIAS])
            a->lrn.bias = 1.0;
        return NTP_STATUS_OK;
    case NTP_OP_CONSTANT:
    case NTP_OP_EXPAND:
        return s->given[A_SHAPE] ? NTP_STATUS_OK : missing(err, errlen, "shape");
    case NTP_OP_SLICE:
        if (!s->given[A_STARTS])
            return missing(err, errlen, "starts");
        if (!s->given[A_ENDS])
            return missing(err, errlen, "ends");
        if (s->given[A_AXES] && a->n_perm != a->n_pads)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "'axes' has %d values, 'starts' %d", a->n_perm, a->n_pads);
        if (s->given[A_STEPS] && a->n_shape != a->n_pads)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "'steps' has %d values, 'starts' %d", a->n_shape, a->n_pads);
        return NTP_STATUS_OK;
    case NTP_OP_RESIZE:
        if (s->given[A_SIZES] == s->given[A_SCALES])
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "give exactly one of 'sizes' and 'scales'");
        if (!s->given[A_COORDINATES])
            a->resize.coord = NTP_RESIZE_HALF_PIXEL;
        if (!s->given[A_CUBIC_A])
            a->resize.cubic_a = -0.75;
        return NTP_STATUS_OK;
    default:
        return NTP_STATUS_OK;
    }
}

ntp_status ntp__xml_parse_op_attrs(ntp_op op, const ntp_xml_attr *attrs, int n_attrs,
                                   ntp_attrs *a, int *n_out, char *err, size_t errlen)
{
    seen s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < n_attrs; i++) {
        attr_id id = find_attr(op, attrs[i].name);
        if (id == A_END)
            return errf(err, errlen, NTP_STATUS_UNKNOWN_NAME, "unknown attribute '%s' on <%s>",
                        attrs[i].name, ntp__op_name(op));
        char msg[512];
        ntp_status st = set_attr(op, id, attrs[i].value, a, &s, msg, sizeof msg);
        if (st != NTP_STATUS_OK)
            return errf(err, errlen, st, "attribute '%s': %s", attrs[i].name, msg);
        s.given[id] = true;
    }
    return finish(op, &s, a, n_out, err, errlen);
}
