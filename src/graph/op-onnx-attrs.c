/* The ONNX attributes that map one to one onto a field of ntp_attrs
 * (op-onnx-impl.h): one array per op, the rows in the order the exporter
 * writes them, with ONNX's defaults. */
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

#define SET(arr)                                     \
    {                                                \
        (arr), (int)(sizeof(arr) / sizeof((arr)[0])) \
    }

static const struct {
    const ntp_onnx_attr *rows;
    int n;
} sets[NTP_OP_COUNT] = {
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
