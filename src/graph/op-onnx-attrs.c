/* The ONNX attributes that map one to one onto a field of ntp_attrs
 * (op-onnx-impl.h): one array per op, the rows in the order the exporter
 * writes them, with ONNX's defaults.
 *
 * Written by hand instead, in the op's mapper (io/onnx-map-*.c) and emitter
 * (io/onnx-export-ops.c), because they do not map one to one: the spatial
 * lists of conv and the pools (counts, auto_pad), ConvTranspose's
 * output_shape; layernorm's, concat's and split's axis (normalised on
 * import); softmax's axis (its default and meaning change at opset 13);
 * transpose's perm (reversed when absent); the reductions' axes and
 * keepdims (an attribute or an input by opset); resize's modes (strings to
 * enums) and scales; pad's mode and value; clip's bounds (inputs since
 * opset 11); Gemm's alpha, beta and transposes (folded into fc's weights);
 * the recurrent ops' direction, activations and layout; Mod's fmod (1 is
 * the op, fmod); Cast's to. */
#include "op-onnx-impl.h"

#define F(nm, f, d)                                                                             \
    {                                                                                           \
        .name = (nm), .type = NTP_ONNX_ATTR_FLOAT, .field = offsetof(ntp_attrs, f), .dflt = (d) \
    }

static const ntp_onnx_attr leaky_relu[] = {F("alpha", leaky_relu.slope, 0.01)};
static const ntp_onnx_attr elu[] = {F("alpha", elu.alpha, 1.0)};
static const ntp_onnx_attr thresholded_relu[] = {F("alpha", thresholded_relu.threshold, 1.0)};
static const ntp_onnx_attr selu[] = {
    F("alpha", selu.alpha, 1.67326319217681884765625),
    F("gamma", selu.gamma, 1.05070102214813232421875),
};
static const ntp_onnx_attr hard_sigmoid[] = {
    F("alpha", hard_sigmoid.slope, 0.2),
    F("beta", hard_sigmoid.offset, 0.5),
};
static const ntp_onnx_attr shrink[] = {
    F("lambd", shrink.lambd, 0.5),
    F("bias", shrink.bias, 0.0),
};

#define I(nm, f, d)                                                                           \
    {                                                                                         \
        .name = (nm), .type = NTP_ONNX_ATTR_INT, .field = offsetof(ntp_attrs, f), .dflt = (d) \
    }
#define B(nm, f, d)                                                                            \
    {                                                                                          \
        .name = (nm), .type = NTP_ONNX_ATTR_BOOL, .field = offsetof(ntp_attrs, f), .dflt = (d) \
    }

static const ntp_onnx_attr conv[] = {I("group", groups, 1)};
static const ntp_onnx_attr maxpool[] = {B("ceil_mode", ceil_mode, 0)};
static const ntp_onnx_attr avgpool[] = {
    B("ceil_mode", ceil_mode, 0),
    B("count_include_pad", count_include_pad, 0),
};
static const ntp_onnx_attr epsilon[] = {F("epsilon", epsilon, 1e-5)};
static const ntp_onnx_attr flatten[] = {I("axis", axis, 1)};
static const ntp_onnx_attr lrn[] = {
    I("size", lrn.size, 0),
    F("alpha", lrn.alpha, 1e-4),
    F("beta", lrn.beta, 0.75),
    F("bias", lrn.bias, 1.0),
};

#define SET(arr)                                     \
    {                                                \
        (arr), (int)(sizeof(arr) / sizeof((arr)[0])) \
    }

static const struct {
    const ntp_onnx_attr *rows;
    int n;
} sets[NTP_OP_COUNT] = {
    [NTP_OP_CONV] = SET(conv),
    [NTP_OP_DECONV] = SET(conv),
    [NTP_OP_MAXPOOL] = SET(maxpool),
    [NTP_OP_AVGPOOL] = SET(avgpool),
    [NTP_OP_BATCHNORM] = SET(epsilon),
    [NTP_OP_INSTANCENORM] = SET(epsilon),
    [NTP_OP_LAYERNORM] = SET(epsilon),
    [NTP_OP_FLATTEN] = SET(flatten),
    [NTP_OP_LRN] = SET(lrn),
    [NTP_OP_LEAKY_RELU] = SET(leaky_relu),
    [NTP_OP_ELU] = SET(elu),
    [NTP_OP_CELU] = SET(elu),
    [NTP_OP_THRESHOLDED_RELU] = SET(thresholded_relu),
    [NTP_OP_SELU] = SET(selu),
    [NTP_OP_HARD_SIGMOID] = SET(hard_sigmoid),
    [NTP_OP_SHRINK] = SET(shrink),
};

const ntp_onnx_attr *ntp__onnx_attrs(ntp_op op, int *n)
{
    if ((unsigned)op >= NTP_OP_COUNT) {
        *n = 0;
        return NULL;
    }
    *n = sets[op].n;
    return sets[op].rows;
}

double ntp__unary_param(const ntp_attrs *a, ntp_op op, int i)
{
    int n;
    const ntp_onnx_attr *d = ntp__onnx_attrs(op, &n);
    return i >= 0 && i < n && d[i].type == NTP_ONNX_ATTR_FLOAT ? ntp__onnx_attr_get_f(a, &d[i])
                                                               : 0.0;
}
