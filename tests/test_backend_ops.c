/* The op-conformance driver: every op of the op table, in a few shapes and
 * attribute cases, on every backend built into the library, against the
 * reference backend (like ggml's test-backend-ops and benchdnn).
 *
 * Each case is a one-layer topology in markup, loaded (so shape inference
 * and the weight list are the library's own) at each precision. Inputs and
 * weights are random with a fixed seed; the reference backend runs the
 * layer with them exactly as the engine would give them (weights rounded
 * through the precision, per output channel for int8); every other backend
 * that supports the case gets the same data converted into its storage
 * type (bf16 / f16 bits; s8 with calibrated per-tensor scales for i8, its
 * weights in f32 since a backend quantises them itself), with outputs
 * poisoned (NaN) and sentinel bytes after every output and the workspace.
 *
 * One line per case, backend and precision: PASSED, SKIPPED (the backend
 * does not support the case: not a failure), or FAILED with a one-line
 * __REPRO. The error metric is the relative L2 norm of the difference:
 * f32 <= 1e-4, bf16 <= 2e-2, f16 <= 5e-3; int8 is judged per element in
 * steps of the output's quantisation grid, at most 1 step (2 for layers
 * whose int8 kernels may quantise more coarsely than the reference: see
 * tolerance()), its relative L2 reported beside.
 * A test fails if any supported case fails. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend-impl.h"
#include "core/numeric-impl.h"
#include "ntprof/ntprof.h"

#define SENTINEL 0xA5
#define GUARD 64

/* Input domains, for functions defined on part of the line. */
enum {
    DOM_ANY,       /* N(0, 1) */
    DOM_POS,       /* 0.2 + |N(0, 1)| */
    DOM_UNIT,      /* U(-0.9, 0.9) */
    DOM_GE1,       /* 1.05 + |N(0, 1)| */
    DOM_AWAY,      /* ±(0.5 + |N(0, 1)|): away from zero */
    DOM_COND,      /* input 0 in {0, 1}, the others N(0, 1) */
    DOM_POS_FIRST, /* input 0 positive, the others N(0, 1) */
    DOM_AWAY_LAST, /* the last input away from zero, the others N(0, 1) */
    DOM_WIDE       /* 4·N(0, 1): both tails of an activation */
};

typedef struct op_case {
    const char *op;   /* the op this case exercises */
    const char *what; /* short description */
    const char *body; /* <input>s and the layer, which is named L */
    int dom;          /* DOM_*: where the inputs are drawn from */
} op_case;

/* clang-format off */
static const op_case cases[] = {
    {"fc", "2-d", "<input name='x' shape='4,32'/><fc name='L' units='16'/>", DOM_ANY},
    {"fc", "3-d [T,N,K] input, no bias", "<input name='x' shape='5,2,24'/><fc name='L' units='7' bias='false'/>", DOM_ANY},
    {"fc", "1-d input", "<input name='x' shape='40'/><fc name='L' units='9'/>", DOM_ANY},
    {"matmul", "batched", "<input name='a' shape='2,3,8,5'/><input name='b' shape='2,3,5,4'/><matmul name='L' inputs='a,b'/>", DOM_ANY},
    {"matmul", "broadcast batch dims", "<input name='a' shape='2,1,8,5'/><input name='b' shape='3,5,4'/><matmul name='L' inputs='a,b'/>", DOM_ANY},
    {"matmul", "transpose_b, 2-d", "<input name='a' shape='6,16'/><input name='b' shape='9,16'/><matmul name='L' inputs='a,b' transpose_b='true'/>", DOM_ANY},
    {"matmul", "transpose_a", "<input name='a' shape='3,7,6'/><input name='b' shape='3,7,5'/><matmul name='L' inputs='a,b' transpose_a='true'/>", DOM_ANY},
    {"conv", "3x3 pad 1", "<input name='x' shape='2,3,9,9'/><conv name='L' filters='8' kernel='3' pad='1'/>", DOM_ANY},
    {"conv", "1x1 stride 2 (a ResNet downsample)", "<input name='x' shape='1,8,9,9'/><conv name='L' filters='6' kernel='1' stride='2'/>", DOM_ANY},
    {"conv", "1x1 pad 1", "<input name='x' shape='1,4,5,5'/><conv name='L' filters='3' kernel='1' pad='1'/>", DOM_ANY},
    {"conv", "stride 2, asymmetric pad", "<input name='x' shape='1,4,10,11'/><conv name='L' filters='6' kernel='3' stride='2' pad='0,1,2,1'/>", DOM_ANY},
    {"conv", "grouped, dilation 2, no bias", "<input name='x' shape='1,8,12,12'/><conv name='L' filters='12' kernel='3' dilation='2' pad='2' groups='4' bias='false'/>", DOM_ANY},
    {"conv", "depthwise", "<input name='x' shape='2,16,7,7'/><conv name='L' filters='16' kernel='3' pad='1' depthwise='true'/>", DOM_ANY},
    {"conv", "depthwise multiplier 2, stride 2", "<input name='x' shape='1,8,9,9'/><conv name='L' filters='16' kernel='3' stride='2' pad='1' depthwise='true'/>", DOM_ANY},
    {"conv", "1x1 pointwise", "<input name='x' shape='1,32,6,6'/><conv name='L' filters='24' kernel='1'/>", DOM_ANY},
    {"conv", "pad same", "<input name='x' shape='1,5,8,8'/><conv name='L' filters='8' kernel='4' stride='2' pad='same'/>", DOM_ANY},
    {"conv", "1-d", "<input name='x' shape='2,4,20'/><conv name='L' filters='6' kernel='5' stride='2' pad='2'/>", DOM_ANY},
    {"conv", "3-d", "<input name='x' shape='1,3,6,7,8'/><conv name='L' filters='4' kernel='3' pad='1'/>", DOM_ANY},
    {"deconv", "k2 s2", "<input name='x' shape='2,6,5,5'/><deconv name='L' filters='4' kernel='2' stride='2'/>", DOM_ANY},
    {"deconv", "k3 s2 pad 1 output_padding 1", "<input name='x' shape='1,4,5,6'/><deconv name='L' filters='3' kernel='3' stride='2' pad='1' output_padding='1'/>", DOM_ANY},
    {"deconv", "grouped", "<input name='x' shape='1,8,4,4'/><deconv name='L' filters='6' kernel='3' pad='1' groups='2'/>", DOM_ANY},
    {"deconv", "output_padding beyond end padding", "<input name='x' shape='1,2,4,4'/><deconv name='L' filters='2' kernel='3' stride='2' output_padding='1'/>", DOM_ANY},
    {"maxpool", "k3 s2 pad 1", "<input name='x' shape='2,8,11,11'/><maxpool name='L' kernel='3' stride='2' pad='1'/>", DOM_ANY},
    {"maxpool", "ceil_mode", "<input name='x' shape='1,4,10,10'/><maxpool name='L' kernel='3' stride='2' ceil_mode='true'/>", DOM_ANY},
    {"maxpool", "dilation 2", "<input name='x' shape='1,3,12,12'/><maxpool name='L' kernel='3' stride='1' dilation='2'/>", DOM_ANY},
    {"maxpool", "1-d", "<input name='x' shape='2,5,17'/><maxpool name='L' kernel='4'/>", DOM_ANY},
    {"avgpool", "exclude padding", "<input name='x' shape='2,8,11,11'/><avgpool name='L' kernel='3' stride='2' pad='1'/>", DOM_ANY},
    {"avgpool", "count_include_pad", "<input name='x' shape='1,4,9,9'/><avgpool name='L' kernel='3' stride='2' pad='1' count_include_pad='true'/>", DOM_ANY},
    {"avgpool", "ceil_mode", "<input name='x' shape='1,4,10,10'/><avgpool name='L' kernel='3' stride='2' ceil_mode='true'/>", DOM_ANY},
    {"avgpool", "ceil_mode with count_include_pad", "<input name='x' shape='1,2,10,10'/><avgpool name='L' kernel='3' stride='2' pad='1' ceil_mode='true' count_include_pad='true'/>", DOM_ANY},
    {"global_maxpool", "2-d", "<input name='x' shape='2,6,7,5'/><global_maxpool name='L'/>", DOM_ANY},
    {"global_avgpool", "2-d", "<input name='x' shape='2,6,7,5'/><global_avgpool name='L'/>", DOM_ANY},
    {"global_avgpool", "1-d", "<input name='x' shape='3,4,9'/><global_avgpool name='L'/>", DOM_ANY},
    {"batchnorm", "4-d", "<input name='x' shape='2,8,5,5'/><batchnorm name='L'/>", DOM_ANY},
    {"batchnorm", "2-d", "<input name='x' shape='4,8'/><batchnorm name='L' epsilon='1e-3'/>", DOM_ANY},
    {"layernorm", "last axis", "<input name='x' shape='2,5,32'/><layernorm name='L'/>", DOM_ANY},
    {"layernorm", "two axes", "<input name='x' shape='3,4,6'/><layernorm name='L' axis='1' epsilon='1e-12'/>", DOM_ANY},
    {"relu", "", "<input name='x' shape='2,3,5,5'/><relu name='L'/>", DOM_ANY},
    {"relu", "clipped at 6", "<input name='x' shape='37'/><relu name='L' max='0.5'/>", DOM_ANY},
    {"leaky_relu", "", "<input name='x' shape='4,33'/><leaky_relu name='L' alpha='0.1'/>", DOM_ANY},
    {"sigmoid", "", "<input name='x' shape='4,33'/><sigmoid name='L'/>", DOM_ANY},
    {"tanh", "", "<input name='x' shape='4,33'/><tanh name='L'/>", DOM_ANY},
    {"gelu", "", "<input name='x' shape='4,33'/><gelu name='L'/>", DOM_ANY},
    {"silu", "", "<input name='x' shape='4,33'/><silu name='L'/>", DOM_ANY},
    {"hardswish", "", "<input name='x' shape='4,33'/><hardswish name='L'/>", DOM_ANY},
    {"clip", "", "<input name='x' shape='4,33'/><clip name='L' min='-0.5' max='1.5'/>", DOM_ANY},
    {"softmax", "last axis", "<input name='x' shape='3,17'/><softmax name='L'/>", DOM_ANY},
    {"softmax", "axis 1", "<input name='x' shape='2,5,3,4'/><softmax name='L' axis='1'/>", DOM_ANY},
    {"add", "same shapes", "<input name='a' shape='2,8,5,5'/><input name='b' shape='2,8,5,5'/><add name='L' inputs='a,b'/>", DOM_ANY},
    {"add", "broadcast per channel", "<input name='a' shape='2,8,4,4'/><input name='b' shape='8,1,1'/><add name='L' inputs='a,b'/>", DOM_ANY},
    {"add", "broadcast first operand, 3 inputs", "<input name='a' shape='6'/><input name='b' shape='3,6'/><input name='c' shape='3,6'/><add name='L' inputs='a,b,c'/>", DOM_ANY},
    {"add", "both operands broadcast", "<input name='a' shape='4,1'/><input name='b' shape='1,5'/><add name='L' inputs='a,b'/>", DOM_ANY},
    {"mul", "broadcast", "<input name='a' shape='2,3,4'/><input name='b' shape='1,3,1'/><mul name='L' inputs='a,b'/>", DOM_ANY},
    {"concat", "axis 1, 3 inputs", "<input name='a' shape='2,3,4,4'/><input name='b' shape='2,5,4,4'/><input name='c' shape='2,1,4,4'/><concat name='L' axis='1' inputs='a,b,c'/>", DOM_ANY},
    {"concat", "last axis", "<input name='a' shape='3,4'/><input name='b' shape='3,2'/><concat name='L' axis='-1' inputs='a,b'/>", DOM_ANY},
    {"split", "two parts", "<input name='x' shape='2,6,3'/><split name='L' axis='1' parts='2'/>", DOM_ANY},
    {"split", "sizes", "<input name='x' shape='4,5'/><split name='L' axis='-1' sizes='1,4'/>", DOM_ANY},
    {"reshape", "", "<input name='x' shape='2,3,4'/><reshape name='L' shape='6,-1'/>", DOM_ANY},
    {"flatten", "", "<input name='x' shape='2,3,4,5'/><flatten name='L'/>", DOM_ANY},
    {"transpose", "perm", "<input name='x' shape='2,3,4'/><transpose name='L' perm='1,2,0'/>", DOM_ANY},
    {"transpose", "reverse", "<input name='x' shape='3,5'/><transpose name='L'/>", DOM_ANY},
    {"pad", "constant", "<input name='x' shape='1,2,3,3'/><pad name='L' pads='0,0,1,1,0,0,1,2' value='0.5'/>", DOM_ANY},
    {"dropout", "", "<input name='x' shape='5,7'/><dropout name='L' ratio='0.1'/>", DOM_ANY},
    {"memcpy", "", "<input name='x' shape='5,7'/><memcpy name='L'/>", DOM_ANY},
    {"embedding", "", "<input name='x' shape='2,5' dtype='i32'/><embedding name='L' vocab='11' units='6'/>", DOM_ANY},
    {"lstm", "forward", "<input name='x' shape='6,2,5'/><lstm name='L' units='8'/>", DOM_ANY},
    {"lstm", "bidirectional concat", "<input name='x' shape='5,3,4'/><lstm name='L' units='6' direction='bidirectional'/>", DOM_ANY},
    {"lstm", "bidirectional sum", "<input name='x' shape='5,2,4'/><lstm name='L' units='6' direction='bidirectional' merge='sum'/>", DOM_ANY},
    {"lstm", "last step, bidirectional concat", "<input name='x' shape='7,2,3'/><lstm name='L' units='5' direction='bidirectional' sequence='last'/>", DOM_ANY},
    {"lstm", "reverse, last step, no bias", "<input name='x' shape='4,2,3'/><lstm name='L' units='5' direction='reverse' sequence='last' bias='false'/>", DOM_ANY},
    {"gru", "forward", "<input name='x' shape='6,2,5'/><gru name='L' units='7'/>", DOM_ANY},
    {"gru", "bidirectional sum", "<input name='x' shape='5,2,4'/><gru name='L' units='6' direction='bidirectional' merge='sum'/>", DOM_ANY},
    {"gru", "bidirectional concat, last step", "<input name='x' shape='5,2,4'/><gru name='L' units='6' direction='bidirectional' sequence='last'/>", DOM_ANY},
    {"gru", "bidirectional sum, last step", "<input name='x' shape='5,2,4'/><gru name='L' units='6' direction='bidirectional' merge='sum' sequence='last'/>", DOM_ANY},
    {"rnn", "relu", "<input name='x' shape='6,2,5'/><rnn name='L' units='8' activation='relu'/>", DOM_ANY},
    {"rnn", "tanh, reverse, last step", "<input name='x' shape='6,2,5'/><rnn name='L' units='8' direction='reverse' sequence='last'/>", DOM_ANY},
    {"rmsnorm", "last axis", "<input name='x' shape='2,5,32'/><rmsnorm name='L'/>", DOM_ANY},
    {"rope", "positions in [0, 64)", "<input name='x' shape='2,5,16'/><input name='p' shape='2,5' dtype='i32'/><rope name='L' inputs='x,p' head_dim='8'/>", DOM_ANY},
    {"kv_attention", "causal, grouped-query 4/2", "<input name='q' shape='2,5,16'/><input name='k' shape='2,5,8'/><input name='v' shape='2,5,8'/><kv_attention name='L' inputs='q,k,v' heads='4' kv_heads='2'/>", DOM_ANY},
    {"lm_head", "own weight", "<input name='x' shape='2,3,16'/><lm_head name='L' vocab='24'/>", DOM_ANY},
    {"argmax", "last axis", "<input name='x' shape='3,17'/><argmax name='L'/>", DOM_ANY},
    {"delay", "10 us", "<input name='x' shape='2,8'/><delay name='L' us='10'/>", DOM_ANY},
    {"attention", "self", "<input name='x' shape='2,6,16'/><attention name='L' heads='4'/>", DOM_ANY},
    {"attention", "causal", "<input name='x' shape='1,7,12'/><attention name='L' heads='3' causal='true'/>", DOM_ANY},
    {"attention", "cross, no bias", "<input name='q' shape='2,3,8'/><input name='k' shape='2,5,8'/><input name='v' shape='2,5,8'/><attention name='L' heads='2' bias='false' inputs='q,k,v'/>", DOM_ANY},
    {"convert", "to f32", "<input name='x' shape='3,7'/><convert name='L' to='f32'/>", DOM_ANY},
    /* Ops added for ONNX models. */
    {"abs", "", "<input name='x' shape='4,33'/><abs name='L'/>", DOM_ANY},
    {"neg", "", "<input name='x' shape='4,33'/><neg name='L'/>", DOM_ANY},
    {"exp", "", "<input name='x' shape='4,33'/><exp name='L'/>", DOM_ANY},
    {"log", "", "<input name='x' shape='4,33'/><log name='L'/>", DOM_POS},
    {"sqrt", "", "<input name='x' shape='4,33'/><sqrt name='L'/>", DOM_POS},
    {"reciprocal", "", "<input name='x' shape='4,33'/><reciprocal name='L'/>", DOM_AWAY},
    {"erf", "", "<input name='x' shape='4,33'/><erf name='L'/>", DOM_ANY},
    {"floor", "", "<input name='x' shape='4,33'/><floor name='L'/>", DOM_ANY},
    {"ceil", "", "<input name='x' shape='4,33'/><ceil name='L'/>", DOM_ANY},
    {"round", "", "<input name='x' shape='4,33'/><round name='L'/>", DOM_ANY},
    {"sign", "", "<input name='x' shape='4,33'/><sign name='L'/>", DOM_ANY},
    {"sin", "", "<input name='x' shape='4,33'/><sin name='L'/>", DOM_ANY},
    {"cos", "", "<input name='x' shape='4,33'/><cos name='L'/>", DOM_ANY},
    {"tan", "", "<input name='x' shape='4,33'/><tan name='L'/>", DOM_UNIT},
    {"asin", "", "<input name='x' shape='4,33'/><asin name='L'/>", DOM_UNIT},
    {"acos", "", "<input name='x' shape='4,33'/><acos name='L'/>", DOM_UNIT},
    {"atan", "", "<input name='x' shape='4,33'/><atan name='L'/>", DOM_ANY},
    {"sinh", "", "<input name='x' shape='4,33'/><sinh name='L'/>", DOM_ANY},
    {"cosh", "", "<input name='x' shape='4,33'/><cosh name='L'/>", DOM_ANY},
    {"asinh", "", "<input name='x' shape='4,33'/><asinh name='L'/>", DOM_ANY},
    {"acosh", "", "<input name='x' shape='4,33'/><acosh name='L'/>", DOM_GE1},
    {"atanh", "", "<input name='x' shape='4,33'/><atanh name='L'/>", DOM_UNIT},
    {"softplus", "", "<input name='x' shape='4,33'/><softplus name='L'/>", DOM_ANY},
    {"softsign", "", "<input name='x' shape='4,33'/><softsign name='L'/>", DOM_ANY},
    {"elu", "alpha 0.5", "<input name='x' shape='4,33'/><elu name='L' alpha='0.5'/>", DOM_ANY},
    {"selu", "", "<input name='x' shape='4,33'/><selu name='L'/>", DOM_ANY},
    {"celu", "alpha 2", "<input name='x' shape='4,33'/><celu name='L' alpha='2'/>", DOM_ANY},
    {"hard_sigmoid", "", "<input name='x' shape='4,33'/><hard_sigmoid name='L' alpha='0.25' beta='0.4'/>", DOM_ANY},
    {"thresholded_relu", "", "<input name='x' shape='4,33'/><thresholded_relu name='L' alpha='0.3'/>", DOM_ANY},
    {"shrink", "", "<input name='x' shape='4,33'/><shrink name='L' lambd='0.5' bias='0.1'/>", DOM_ANY},
    {"prelu", "per channel", "<input name='x' shape='2,4,5,5'/><prelu name='L'/>", DOM_ANY},
    {"prelu", "shared", "<input name='x' shape='3,6'/><prelu name='L' shared='true'/>", DOM_ANY},
    {"log_softmax", "last axis", "<input name='x' shape='3,17'/><log_softmax name='L'/>", DOM_ANY},
    {"log_softmax", "axis 1", "<input name='x' shape='2,5,3'/><log_softmax name='L' axis='1'/>", DOM_ANY},
    {"hardmax", "", "<input name='x' shape='3,17'/><hardmax name='L'/>", DOM_ANY},
    {"sub", "broadcast", "<input name='a' shape='2,3,4'/><input name='b' shape='3,1'/><sub name='L' inputs='a,b'/>", DOM_ANY},
    {"sub", "broadcast first operand", "<input name='a' shape='4'/><input name='b' shape='3,4'/><sub name='L' inputs='a,b'/>", DOM_ANY},
    {"div", "", "<input name='a' shape='2,3,4'/><input name='b' shape='2,3,4'/><div name='L' inputs='a,b'/>", DOM_AWAY_LAST},
    {"pow", "", "<input name='a' shape='3,5'/><input name='b' shape='3,5'/><pow name='L' inputs='a,b'/>", DOM_POS_FIRST},
    {"fmod", "broadcast", "<input name='a' shape='2,3,4'/><input name='b' shape='3,1'/><fmod name='L' inputs='a,b'/>", DOM_AWAY_LAST},
    {"max", "3 inputs", "<input name='a' shape='2,6'/><input name='b' shape='2,6'/><input name='c' shape='6'/><max name='L' inputs='a,b,c'/>", DOM_ANY},
    {"min", "", "<input name='a' shape='2,6'/><input name='b' shape='2,6'/><min name='L' inputs='a,b'/>", DOM_ANY},
    {"mean", "3 inputs", "<input name='a' shape='2,6'/><input name='b' shape='2,6'/><input name='c' shape='2,6'/><mean name='L' inputs='a,b,c'/>", DOM_ANY},
    {"where", "", "<input name='c' shape='3,4'/><input name='a' shape='3,4'/><input name='b' shape='4'/><where name='L' inputs='c,a,b'/>", DOM_COND},
    {"reduce_mean", "axis 1", "<input name='x' shape='2,5,3'/><reduce_mean name='L' axes='1'/>", DOM_ANY},
    {"reduce_mean", "every axis", "<input name='x' shape='2,5,3'/><reduce_mean name='L'/>", DOM_ANY},
    {"reduce_sum", "axes 0,2", "<input name='x' shape='2,5,3'/><reduce_sum name='L' axes='0,2'/>", DOM_ANY},
    {"reduce_max", "", "<input name='x' shape='2,5,3'/><reduce_max name='L' axes='-1'/>", DOM_ANY},
    {"reduce_min", "", "<input name='x' shape='2,5,3'/><reduce_min name='L' axes='1'/>", DOM_ANY},
    {"reduce_prod", "", "<input name='x' shape='2,5,3'/><reduce_prod name='L' axes='2'/>", DOM_ANY},
    {"reduce_l1", "", "<input name='x' shape='2,5,3'/><reduce_l1 name='L' axes='1'/>", DOM_ANY},
    {"reduce_l2", "", "<input name='x' shape='2,5,3'/><reduce_l2 name='L' axes='1'/>", DOM_ANY},
    {"reduce_sum_square", "", "<input name='x' shape='2,5,3'/><reduce_sum_square name='L' axes='1'/>", DOM_ANY},
    {"reduce_log_sum", "", "<input name='x' shape='2,5,3'/><reduce_log_sum name='L' axes='1'/>", DOM_POS},
    {"reduce_log_sum_exp", "", "<input name='x' shape='2,5,3'/><reduce_log_sum_exp name='L' axes='1'/>", DOM_ANY},
    {"instancenorm", "", "<input name='x' shape='2,3,4,5'/><instancenorm name='L'/>", DOM_ANY},
    {"lrn", "size 3", "<input name='x' shape='2,6,4,4'/><lrn name='L' size='3' alpha='0.001' beta='0.75' bias='1'/>", DOM_ANY},
    {"lrn", "size 4", "<input name='x' shape='1,7,3,3'/><lrn name='L' size='4'/>", DOM_ANY},
    {"constant", "", "<input name='x' shape='2'/><constant name='L' shape='3,4'/>", DOM_ANY},
    {"slice", "axis 1, step 2", "<input name='x' shape='3,10,4'/><slice name='L' starts='1' ends='9' axes='1' steps='2'/>", DOM_ANY},
    {"slice", "negative step", "<input name='x' shape='6,5'/><slice name='L' starts='-1,0' ends='-7,4' axes='0,1' steps='-1,1'/>", DOM_ANY},
    {"expand", "", "<input name='x' shape='3,1'/><expand name='L' shape='2,3,4'/>", DOM_ANY},
    {"resize", "nearest x2", "<input name='x' shape='1,2,3,4'/><resize name='L' sizes='1,2,6,8' mode='nearest'/>", DOM_ANY},
    {"resize", "linear", "<input name='x' shape='1,2,4,4'/><resize name='L' sizes='1,2,7,5' mode='linear'/>", DOM_ANY},
};
/* clang-format on */
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static const ntp_dtype precisions[] = {NTP_DTYPE_F32, NTP_DTYPE_BF16, NTP_DTYPE_F16, NTP_DTYPE_I8};

/* The bound on a case's error at precision p: relative L2 for the float
 * types; for int8, steps of the output's quantisation grid, per element.
 *
 * Why steps: the reference rounds its output to s8 with the scale s it
 * calibrates (max |y| / 127), and the backend is given that scale, as a
 * calibration pass would give it, so both results lie on one grid. A value
 * computed from the same s8 inputs and weights in another order, or through
 * another approximation of a function, may fall on the other side of a
 * rounding boundary: one step, on any element. Two layer families may be one
 * step further off because their int8 kernels quantise on a coarser grid
 * than the reference does: GEMM-based layers (fc, matmul, attention, conv,
 * deconv) get 7-bit weights on CPUs without VNNI (onednn/probe.c), and
 * recurrent layers requantise their hidden state at every time step. What
 * this is meant to catch is many steps off: a wrong scale, a dropped bias,
 * an accumulator that saturates (a grouped deconv on oneDNN's int8 GEMM
 * without VNNI was 25 steps off, 0.15 relative L2). A relative L2 bound
 * would not do: on small outputs one legitimate flip of one element is
 * already 1e-2, as large as a systematic error on a big one. */
static double tolerance(ntp_dtype p, const char *op)
{
    static const char *const coarser[] = {"fc",   "matmul", "attention", "conv", "deconv",
                                          "lstm", "gru",    "rnn",       NULL};
    switch (p) {
    case NTP_DTYPE_F32: return 1e-4;
    case NTP_DTYPE_BF16: return 2e-2;
    case NTP_DTYPE_F16: return 5e-3;
    case NTP_DTYPE_I8:
        for (int i = 0; coarser[i]; i++)
            if (strcmp(coarser[i], op) == 0)
                return 2;
        return 1;
    case NTP_DTYPE_U8:
    case NTP_DTYPE_I32:
    case NTP_DTYPE_I64:
    case NTP_DTYPE_COUNT: fail_msg("no tolerance for precision %s", ntp_dtype_name(p));
    }
    return 0;
}

/* The largest difference between got and want in steps of scale s (int8's
 * metric, see tolerance()); infinite where one is NaN and the other not. */
static double max_steps(const float *got, const float *want, int64_t n, float s)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(got[i]) != isnan(want[i]))
            return INFINITY;
        double q = fabs((double)got[i] - (double)want[i]) / (double)s;
        if (q > m)
            m = q;
    }
    return m;
}

/* --- deterministic data ---------------------------------------------------- */
static uint64_t rng_state;

static double uniform(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

static double normal(void)
{
    double u = uniform(), v = uniform();
    return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

/* --- one backend's run of a case --------------------------------------- */
typedef struct run_bufs {
    void *in[NTP_MAX_INPUTS], *w[NTP_MAX_WEIGHTS], *out[NTP_MAX_OUTPUTS], *ws;
    size_t out_bytes[NTP_MAX_OUTPUTS], ws_bytes;
} run_bufs;

static void free_bufs(run_bufs *r)
{
    for (int i = 0; i < NTP_MAX_INPUTS; i++)
        free(r->in[i]);
    for (int i = 0; i < NTP_MAX_WEIGHTS; i++)
        free(r->w[i]);
    for (int i = 0; i < NTP_MAX_OUTPUTS; i++)
        free(r->out[i]);
    free(r->ws);
    memset(r, 0, sizeof *r);
}

static void *guarded(size_t bytes)
{
    unsigned char *p = aligned_alloc(64, (bytes + GUARD + 63) / 64 * 64);
    if (p)
        memset(p + bytes, SENTINEL, GUARD);
    return p;
}

static bool guard_ok(const void *p, size_t bytes)
{
    const unsigned char *q = (const unsigned char *)p + bytes;
    for (int i = 0; i < GUARD; i++)
        if (q[i] != SENTINEL)
            return false;
    return true;
}

/* f32 values into storage type t (s8 with scale). */
static void store(const float *src, int64_t n, ntp_dtype t, float scale, void *dst)
{
    for (int64_t i = 0; i < n; i++)
        switch (t) {
        case NTP_DTYPE_BF16: ((uint16_t *)dst)[i] = ntp__f32_to_bf16(src[i]); break;
        case NTP_DTYPE_F16: ((uint16_t *)dst)[i] = ntp__f32_to_f16(src[i]); break;
        case NTP_DTYPE_I8: ((int8_t *)dst)[i] = ntp__quantize_i8(src[i], scale); break;
        case NTP_DTYPE_I32: ((int32_t *)dst)[i] = (int32_t)src[i]; break;
        /* f32; the driver's cases have no other storage type. */
        case NTP_DTYPE_F32:
        case NTP_DTYPE_U8:
        case NTP_DTYPE_I64:
        case NTP_DTYPE_COUNT: ((float *)dst)[i] = src[i]; break;
        }
}

static float load(const void *src, int64_t i, ntp_dtype t, float scale)
{
    switch (t) {
    case NTP_DTYPE_BF16: return ntp__bf16_to_f32(((const uint16_t *)src)[i]);
    case NTP_DTYPE_F16: return ntp__f16_to_f32(((const uint16_t *)src)[i]);
    case NTP_DTYPE_I8: return ntp__dequantize_i8(((const int8_t *)src)[i], scale);
    /* f32; the driver's outputs have no other storage type. */
    case NTP_DTYPE_F32:
    case NTP_DTYPE_U8:
    case NTP_DTYPE_I32:
    case NTP_DTYPE_I64:
    case NTP_DTYPE_COUNT: break;
    }
    return ((const float *)src)[i];
}

/* Poison an output before a run. Pattern 0 is NaN in float storage (and
 * -128 in s8, which symmetric quantisation avoids); pattern 1 is another
 * value. An element that differs between a run over pattern 0 and a run
 * over pattern 1 was not written (s8 has no NaN to give it away). */
static void poison(void *p, int64_t n, ntp_dtype t, int pattern)
{
    for (int64_t i = 0; i < n; i++)
        switch (t) {
        case NTP_DTYPE_BF16: ((uint16_t *)p)[i] = pattern ? 0x4321 : 0x7FC0; break;
        case NTP_DTYPE_F16: ((uint16_t *)p)[i] = pattern ? 0x4321 : 0x7E00; break;
        case NTP_DTYPE_I8: ((int8_t *)p)[i] = pattern ? 0x55 : -128; break;
        /* f32; the driver's outputs have no other storage type. */
        case NTP_DTYPE_F32:
        case NTP_DTYPE_U8:
        case NTP_DTYPE_I32:
        case NTP_DTYPE_I64:
        case NTP_DTYPE_COUNT: ((float *)p)[i] = pattern ? 1234.5f : NAN; break;
        }
}

static bool is_poison(const void *p, int64_t i, ntp_dtype t)
{
    switch (t) {
    case NTP_DTYPE_BF16: return isnan(ntp__bf16_to_f32(((const uint16_t *)p)[i]));
    case NTP_DTYPE_F16: return isnan(ntp__f16_to_f32(((const uint16_t *)p)[i]));
    case NTP_DTYPE_I8:
        return false; /* found by the second run */
    /* f32; the driver's outputs have no other storage type. */
    case NTP_DTYPE_F32:
    case NTP_DTYPE_U8:
    case NTP_DTYPE_I32:
    case NTP_DTYPE_I64:
    case NTP_DTYPE_COUNT: break;
    }
    return isnan(((const float *)p)[i]);
}

/* The case's data in f32: inputs and weights. */
typedef struct case_data {
    int dom;
    ntp_graph *g;
    const ntp_node *n;
    float *x[NTP_MAX_INPUTS];
    float *w[NTP_MAX_WEIGHTS];
    float in_scale[NTP_MAX_INPUTS];
} case_data;

static const ntp_node *find_layer(const ntp_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i].name, "L") == 0)
            return &g->nodes[i];
    return NULL;
}

static ntp_graph *load_case(ntp_ctx *ctx, const op_case *c, ntp_dtype p)
{
    char xml[4096];
    snprintf(xml, sizeof xml, "<topology name='case' precision='f32'>%s</topology>", c->body);
    ntp_load_opts lo = {0};
    lo.set_precision = true;
    lo.precision = p;
    ntp_graph *g = NULL;
    if (ntp_graph_load_xml_memory(ctx, xml, strlen(xml), "case.xml", &lo, &g) != NTP_STATUS_OK)
        fail_msg("case %s (%s): %s", c->op, c->what, ntp_ctx_errmsg(ctx));
    return g;
}

/* Random inputs and weights (fan-in scaled, positive variances). */
static void make_data(case_data *d)
{
    const ntp_graph *g = d->g;
    const ntp_node *n = d->n;
    for (int i = 0; i < n->n_in; i++) {
        const ntp_tensor *t = &g->tensors[n->in[i]];
        int64_t cnt = ntp_shape_numel(&t->shape);
        d->x[i] = malloc((size_t)cnt * sizeof(float) + 4);
        int dom = d->dom;
        if (dom == DOM_COND)
            dom = i == 0 ? DOM_COND : DOM_ANY;
        else if (dom == DOM_POS_FIRST)
            dom = i == 0 ? DOM_POS : DOM_ANY;
        else if (dom == DOM_AWAY_LAST)
            dom = i == n->n_in - 1 ? DOM_AWAY : DOM_ANY;
        for (int64_t j = 0; j < cnt; j++) {
            double v = normal();
            switch (dom) {
            case DOM_POS: v = 0.2 + fabs(v); break;
            case DOM_UNIT: v = 1.8 * uniform() - 0.9; break;
            case DOM_GE1: v = 1.05 + fabs(v); break;
            case DOM_AWAY: v = v < 0 ? v - 0.5 : v + 0.5; break;
            case DOM_COND: v = uniform() < 0.5 ? 0.0 : 1.0; break;
            case DOM_WIDE: v = 4.0 * v; break;
            default: break;
            }
            /* Integer inputs index a table (embedding's vocab) or are
             * positions (rope's, up to 64). */
            double range = n->a.vocab > 0 ? (double)n->a.vocab : 64.0;
            d->x[i][j] = t->dtype == NTP_DTYPE_I32 ? (float)(int)(uniform() * range) : (float)v;
        }
        d->in_scale[i] = t->dtype == NTP_DTYPE_I32 ? 0.0f : ntp__i8_scale(d->x[i], cnt);
    }
    for (int i = 0; i < n->n_w; i++) {
        const ntp_tensor *t = &g->tensors[n->w[i]];
        int64_t cnt = ntp_shape_numel(&t->shape), fan = 1;
        for (int k = 1; k < t->shape.ndim; k++)
            fan *= t->shape.dim[k];
        if (n->op == NTP_OP_RNN || n->op == NTP_OP_LSTM || n->op == NTP_OP_GRU)
            fan = t->shape.dim[t->shape.ndim - 1];
        d->w[i] = malloc((size_t)cnt * sizeof(float) + 4);
        double a = sqrt(3.0 / (double)(fan > 0 ? fan : 1));
        for (int64_t j = 0; j < cnt; j++) {
            double v = (2.0 * uniform() - 1.0) * a;
            if (n->op == NTP_OP_BATCHNORM)
                v = i == 0 ? 0.8 + 0.4 * uniform() : i == 3 ? 0.5 + uniform() : 0.3 * normal();
            if (n->op == NTP_OP_LAYERNORM)
                v = i == 0 ? 0.8 + 0.4 * uniform() : 0.3 * normal();
            d->w[i][j] = (float)v;
        }
    }
}

static void free_data(case_data *d)
{
    for (int i = 0; i < NTP_MAX_INPUTS; i++)
        free(d->x[i]);
    for (int i = 0; i < NTP_MAX_WEIGHTS; i++)
        free(d->w[i]);
}

/* Run node n of g on backend be at the node's precision. f32 data from d;
 * the engine's rules for weights; outputs back in f32 into y[]. Returns the
 * status; *why says what went wrong beyond a status. */
static ntp_status run_backend(ntp_ctx *ctx, const ntp_backend_i *be, const case_data *d,
                              const float *ref_out_scale, float **y, char *why, size_t why_len)
{
    const ntp_graph *g = d->g;
    const ntp_node *n = d->n;
    ntp_dtype p = n->precision;
    ntp_dtype sd = be->storage_dtype ? be->storage_dtype(p) : p;
    ntp_kargs k;
    memset(&k, 0, sizeof k);
    run_bufs r;
    memset(&r, 0, sizeof r);
    void *bstate = NULL, *nstate = NULL, *first[NTP_MAX_OUTPUTS] = {0};
    ntp_status st = NTP_STATUS_OK;
    why[0] = '\0';
    k.g = g;
    k.node = n;
    k.threads = 2;
    k.n_in = n->n_in;
    k.n_w = n->n_w;
    k.n_out = n->n_out;
    for (int i = 0; i < n->n_in; i++) {
        const ntp_tensor *t = &g->tensors[n->in[i]];
        int64_t cnt = ntp_shape_numel(&t->shape);
        /* Graph inputs keep their dtype; here each input stands for an
         * activation of the precision, so it is in the storage type. */
        ntp_dtype dt = t->dtype == NTP_DTYPE_I32 ? NTP_DTYPE_I32 : sd;
        r.in[i] = malloc((size_t)cnt * ntp_dtype_size(dt) + 4);
        float *tmp = malloc((size_t)cnt * sizeof(float) + 4);
        memcpy(tmp, d->x[i], (size_t)cnt * sizeof(float));
        /* The reference backend gets the values the storage would hold. */
        if (dt == NTP_DTYPE_F32 && p != NTP_DTYPE_F32 && t->dtype != NTP_DTYPE_I32)
            ntp__emulate_storage(tmp, cnt, p, p == NTP_DTYPE_I8 ? &d->in_scale[i] : NULL, 1, cnt);
        store(tmp, cnt, dt, d->in_scale[i], r.in[i]);
        free(tmp);
        k.in[i] = (ntp_buf){r.in[i], t->shape, dt};
        k.in_scale[i] = p == NTP_DTYPE_I8 ? d->in_scale[i] : 0.0f;
    }
    for (int i = 0; i < n->n_w; i++) {
        const ntp_tensor *t = &g->tensors[n->w[i]];
        int64_t cnt = ntp_shape_numel(&t->shape);
        /* bf16/f16 weights are stored in that type; int8 weights reach a
         * backend that stores s8 as f32 (it quantises per channel itself),
         * and the reference backend as f32 rounded per channel (axis 0). */
        ntp_dtype wt = sd == NTP_DTYPE_I8 ? NTP_DTYPE_F32 : sd;
        float *tmp = malloc((size_t)cnt * sizeof(float) + 4);
        memcpy(tmp, d->w[i], (size_t)cnt * sizeof(float));
        if (wt == NTP_DTYPE_F32 && sd == NTP_DTYPE_F32 && p != NTP_DTYPE_F32) {
            if (p != NTP_DTYPE_I8) {
                ntp__emulate_storage(tmp, cnt, p, NULL, 1, cnt);
            } else if (t->shape.ndim >= 2) {
                int64_t ch = t->shape.dim[0], per = cnt / ch;
                float *sc = malloc((size_t)ch * sizeof *sc);
                ntp__i8_scales_per_channel(tmp, ch, per, sc);
                ntp__emulate_storage(tmp, cnt, NTP_DTYPE_I8, sc, ch, per);
                free(sc);
            }
        }
        r.w[i] = malloc((size_t)cnt * ntp_dtype_size(wt) + 4);
        store(tmp, cnt, wt, 1.0f, r.w[i]);
        free(tmp);
        k.w[i] = (ntp_buf){r.w[i], t->shape, wt};
    }
    for (int i = 0; i < n->n_out; i++) {
        const ntp_tensor *t = &g->tensors[n->out[i]];
        ntp_dtype dt = t->dtype == NTP_DTYPE_F32 || t->dtype == p ? sd : t->dtype;
        k.out[i] = (ntp_buf){NULL, t->shape, dt};
        k.out_bytes[i] = ntp_shape_numel(&t->shape) * (int64_t)ntp_dtype_size(dt);
        k.out_scale[i] = p == NTP_DTYPE_I8 && ref_out_scale ? ref_out_scale[i] : 0.0f;
    }
    ntp_backend_opts bo = {.threads = 2, .precision = p};
    size_t ws = 0;
    if (be->init && (st = be->init(ctx, &bo, &bstate)))
        goto done;
    if (be->prepare && (st = be->prepare(ctx, bstate, &k, &nstate, &ws)))
        goto done;
    for (int i = 0; i < n->n_out; i++) {
        r.out_bytes[i] = (size_t)k.out_bytes[i];
        r.out[i] = guarded(r.out_bytes[i]);
        poison(r.out[i], ntp_shape_numel(&k.out[i].shape), k.out[i].dtype, 0);
        k.out[i].data = r.out[i];
    }
    r.ws_bytes = ws;
    r.ws = guarded(ws);
    memset(r.ws, 0xFF, ws); /* NaN everywhere: a workspace is not zeroed */
    k.workspace = ws ? r.ws : NULL;
    k.workspace_bytes = ws;
    if ((st = be->execute(ctx, bstate, nstate, &k)))
        goto done;
    /* A second run over other poison must give the same bytes: anything
     * else is an element left unwritten (or a result that depends on what
     * the buffers held, or on state a run leaves behind). */
    for (int i = 0; i < n->n_out; i++) {
        first[i] = malloc(r.out_bytes[i] + 1);
        memcpy(first[i], r.out[i], r.out_bytes[i]);
        poison(r.out[i], ntp_shape_numel(&k.out[i].shape), k.out[i].dtype, 1);
    }
    if ((st = be->execute(ctx, bstate, nstate, &k)))
        goto done;
    for (int i = 0; i < n->n_out; i++) {
        size_t es = ntp_dtype_size(k.out[i].dtype);
        int64_t cnt = ntp_shape_numel(&k.out[i].shape);
        for (int64_t j = 0; j < cnt; j++)
            if (memcmp((char *)first[i] + j * (int64_t)es, (char *)r.out[i] + j * (int64_t)es,
                       es)) {
                snprintf(why, why_len,
                         "output %d element %lld was not written (or differs "
                         "between two runs)",
                         i, (long long)j);
                st = NTP_STATUS_INTERNAL;
                goto done;
            }
    }
    for (int i = 0; i < n->n_out; i++) {
        if (!guard_ok(r.out[i], r.out_bytes[i])) {
            snprintf(why, why_len, "wrote past the end of output %d", i);
            st = NTP_STATUS_INTERNAL;
            goto done;
        }
        int64_t cnt = ntp_shape_numel(&k.out[i].shape);
        y[i] = malloc((size_t)cnt * sizeof(float) + 4);
        for (int64_t j = 0; j < cnt; j++) {
            if (is_poison(r.out[i], j, k.out[i].dtype)) {
                snprintf(why, why_len, "output %d element %lld was not written", i, (long long)j);
                st = NTP_STATUS_INTERNAL;
                goto done;
            }
            y[i][j] = load(r.out[i], j, k.out[i].dtype, k.out_scale[i]);
        }
    }
    if (ws && !guard_ok(r.ws, ws)) {
        snprintf(why, why_len, "wrote past the end of its %zu-byte workspace", ws);
        st = NTP_STATUS_INTERNAL;
    }
done:
    for (int i = 0; i < NTP_MAX_OUTPUTS; i++)
        free(first[i]);
    if (nstate && be->release_node)
        be->release_node(bstate, nstate);
    if (bstate && be->release)
        be->release(bstate);
    free_bufs(&r);
    return st;
}

static double rel_l2(const float *a, const float *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)b[i];
        num += d * d;
        den += (double)b[i] * (double)b[i];
        if (isnan(a[i]) != isnan(b[i]))
            return INFINITY;
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

typedef struct tally {
    int passed, skipped, failed;
} tally;

static void free_outs(float **y)
{
    for (int i = 0; i < NTP_MAX_OUTPUTS; i++) {
        free(y[i]);
        y[i] = NULL;
    }
}

/* One case at one precision on every backend. */
static void run_case(ntp_ctx *ctx, const op_case *c, ntp_dtype p, tally *t)
{
    const ntp_backend_i *ref = ntp__backend_find("ref");
    assert_non_null(ref);
    case_data d;
    memset(&d, 0, sizeof d);
    d.dom = c->dom;
    d.g = load_case(ctx, c, p);
    d.n = find_layer(d.g);
    assert_non_null(d.n);
    rng_state = 0x5eed0000ULL + (uint64_t)(c - cases);
    make_data(&d);
    float *want[NTP_MAX_OUTPUTS] = {0}, *got[NTP_MAX_OUTPUTS] = {0};
    char why[256];
    if (!ref->supports(d.g, d.n, p)) {
        printf("SKIPPED  %-6s %-4s %-14s %s (the reference backend does not run it)\n", "ref",
               ntp_dtype_name(p), c->op, c->what);
        t->skipped++;
        goto done;
    }
    if (run_backend(ctx, ref, &d, NULL, want, why, sizeof why) != NTP_STATUS_OK) {
        printf("FAILED   %-6s %-4s %-14s %s: %s %s\n", "ref", ntp_dtype_name(p), c->op, c->what,
               ntp_ctx_errmsg(ctx), why);
        printf("__REPRO: backend=ref precision=%s op=%s case=\"%s\" xml=\"%s\"\n",
               ntp_dtype_name(p), c->op, c->what, c->body);
        t->failed++;
        goto done;
    }
    /* int8 output scales as a calibration pass would give them: from the
     * f32-valued reference output. */
    float out_scale[NTP_MAX_OUTPUTS] = {0};
    for (int i = 0; i < d.n->n_out; i++)
        out_scale[i] = ntp__i8_scale(want[i], ntp_shape_numel(&d.g->tensors[d.n->out[i]].shape));
    for (int b = 0; b < ntp__backend_count(); b++) {
        const ntp_backend_i *be = ntp__backend_get(b);
        if (be == ref)
            continue;
        if (!be->supports(d.g, d.n, p)) {
            printf("SKIPPED  %-6s %-4s %-14s %s\n", be->name, ntp_dtype_name(p), c->op, c->what);
            t->skipped++;
            continue;
        }
        ntp_ctx_clear(ctx);
        ntp_status st = run_backend(ctx, be, &d, out_scale, got, why, sizeof why);
        double err = 0, steps = 0, bound = tolerance(p, c->op);
        bool ok = st == NTP_STATUS_OK, i8 = p == NTP_DTYPE_I8;
        for (int i = 0; ok && i < d.n->n_out; i++) {
            int64_t cnt = ntp_shape_numel(&d.g->tensors[d.n->out[i]].shape);
            double e = rel_l2(got[i], want[i], cnt);
            if (e > err || isnan(e))
                err = e;
            double q = i8 ? max_steps(got[i], want[i], cnt, out_scale[i]) : 0;
            if (q > steps || isnan(q))
                steps = q;
        }
        /* Steps are whole numbers but for the float rounding of q * s / s. */
        ok = ok && (i8 ? steps <= bound + 1e-3 : err <= bound);
        if (ok) {
            if (i8)
                printf("PASSED   %-6s %-4s %-14s %-36s rel_l2 %.2e, %.0f step%s (<= %.0f)\n",
                       be->name, ntp_dtype_name(p), c->op, c->what, err, steps,
                       steps > 0.5 && steps < 1.5 ? "" : "s", bound);
            else
                printf("PASSED   %-6s %-4s %-14s %-36s rel_l2 %.2e\n", be->name, ntp_dtype_name(p),
                       c->op, c->what, err);
            t->passed++;
        } else {
            if (st != NTP_STATUS_OK)
                printf("FAILED   %-6s %-4s %-14s %s: %s: %s %s\n", be->name, ntp_dtype_name(p),
                       c->op, c->what, ntp_status_name(st), ntp_ctx_errmsg(ctx), why);
            else if (i8)
                printf("FAILED   %-6s %-4s %-14s %s: %.2f steps of the output scale > %.0f "
                       "(rel_l2 %.3e)\n",
                       be->name, ntp_dtype_name(p), c->op, c->what, steps, bound, err);
            else
                printf("FAILED   %-6s %-4s %-14s %s: rel_l2 %.3e > %.0e\n", be->name,
                       ntp_dtype_name(p), c->op, c->what, err, bound);
            printf("__REPRO: backend=%s precision=%s op=%s case=\"%s\" xml=\"%s\"\n", be->name,
                   ntp_dtype_name(p), c->op, c->what, c->body);
            t->failed++;
        }
        free_outs(got);
    }
done:
    free_outs(want);
    free_outs(got);
    free_data(&d);
    ntp_graph_free(d.g);
}

/* The tests, one per family of ops. */
static const char *const dense_ops[] = {"fc", "matmul", "attention", NULL};
static const char *const conv_ops[] = {"conv", "deconv", NULL};
static const char *const pool_ops[] = {"maxpool", "avgpool", "global_maxpool", "global_avgpool",
                                       NULL};
static const char *const norm_ops[] = {"batchnorm", "layernorm", "instancenorm", "lrn", NULL};
static const char *const act_ops[] = {"relu",
                                      "leaky_relu",
                                      "sigmoid",
                                      "tanh",
                                      "gelu",
                                      "silu",
                                      "hardswish",
                                      "clip",
                                      "abs",
                                      "neg",
                                      "exp",
                                      "log",
                                      "sqrt",
                                      "reciprocal",
                                      "erf",
                                      "floor",
                                      "ceil",
                                      "round",
                                      "sign",
                                      "sin",
                                      "cos",
                                      "tan",
                                      "asin",
                                      "acos",
                                      "atan",
                                      "sinh",
                                      "cosh",
                                      "asinh",
                                      "acosh",
                                      "atanh",
                                      "softplus",
                                      "softsign",
                                      "elu",
                                      "selu",
                                      "celu",
                                      "hard_sigmoid",
                                      "thresholded_relu",
                                      "shrink",
                                      "prelu",
                                      NULL};
static const char *const softmax_ops[] = {"softmax", "log_softmax", "hardmax", NULL};
static const char *const binary_ops[] = {"add", "mul",  "sub",   "div",  "pow", "max",
                                         "min", "mean", "where", "fmod", NULL};
static const char *const reduce_ops[] = {
    "reduce_mean",    "reduce_sum",         "reduce_max", "reduce_min",
    "reduce_prod",    "reduce_l1",          "reduce_l2",  "reduce_sum_square",
    "reduce_log_sum", "reduce_log_sum_exp", NULL};
static const char *const move_ops[] = {
    "concat",    "split",   "reshape",  "flatten", "transpose", "pad",    "dropout", "memcpy",
    "embedding", "convert", "constant", "slice",   "expand",    "resize", "delay",   NULL};
static const char *const rnn_ops[] = {"lstm", "gru", "rnn", NULL};
static const char *const decoder_ops[] = {"rmsnorm", "rope",   "kv_attention",
                                          "lm_head", "argmax", NULL};
static const char *const *const families[] = {dense_ops, conv_ops,    pool_ops,   norm_ops,
                                              act_ops,   softmax_ops, binary_ops, reduce_ops,
                                              move_ops,  rnn_ops,     decoder_ops};

static bool in_list(const char *const *list, const char *op)
{
    for (int i = 0; list[i]; i++)
        if (strcmp(list[i], op) == 0)
            return true;
    return false;
}

static bool has_case(const char *op)
{
    for (int c = 0; c < N_CASES; c++)
        if (strcmp(cases[c].op, op) == 0)
            return true;
    return false;
}

/* A unary element-wise op of the op table (NTP_UNARY_TABLE) without cases
 * of its own above gets a generic one in the activation family: a [4, 33]
 * input drawn from N(0, 1) scaled by 4, so that both tails are reached. A
 * new op is tested on every backend that maps it without an edit here; an
 * op defined on part of the line needs a case above with its domain. */
static void run_generic_unary_cases(ntp_ctx *ctx, tally *t)
{
    for (int op = 0; op < NTP_OP_COUNT; op++) {
        const char *name = ntp__op_name((ntp_op)op);
        if (!ntp__op_is_unary((ntp_op)op) || has_case(name))
            continue;
        char body[128];
        snprintf(body, sizeof body, "<input name='x' shape='4,33'/><%s name='L'/>", name);
        op_case c = {name, "generic", body, DOM_WIDE};
        for (size_t p = 0; p < sizeof precisions / sizeof precisions[0]; p++)
            run_case(ctx, &c, precisions[p], t);
    }
}

/* A binary element-wise op of the op table (NTP_BINARY_TABLE) without cases
 * of its own above gets a generic one in the binary family: a [2, 3, 4]
 * input and a [3, 1] one broadcast against it, both from N(0, 1). A new op
 * is tested on every backend that maps it without an edit here; an op
 * defined on part of the line (pow, fmod) needs a case above with its
 * domain. */
static void run_generic_binary_cases(ntp_ctx *ctx, tally *t)
{
    for (int op = 0; op < NTP_OP_COUNT; op++) {
        const char *name = ntp__op_name((ntp_op)op);
        if (!ntp__op_is_binary((ntp_op)op) || has_case(name))
            continue;
        char body[192];
        snprintf(body, sizeof body,
                 "<input name='a' shape='2,3,4'/><input name='b' shape='3,1'/>"
                 "<%s name='L' inputs='a,b'/>",
                 name);
        op_case c = {name, "generic", body, DOM_ANY};
        for (size_t p = 0; p < sizeof precisions / sizeof precisions[0]; p++)
            run_case(ctx, &c, precisions[p], t);
    }
}

/* Every case of a family at every precision. */
static void run_family(const char *const *ops)
{
    ntp_ctx *ctx = ntp_ctx_init();
    assert_non_null(ctx);
    tally t = {0, 0, 0};
    for (int c = 0; c < N_CASES; c++) {
        if (!in_list(ops, cases[c].op))
            continue;
        for (size_t p = 0; p < sizeof precisions / sizeof precisions[0]; p++)
            run_case(ctx, &cases[c], precisions[p], &t);
    }
    if (ops == act_ops)
        run_generic_unary_cases(ctx, &t);
    if (ops == binary_ops)
        run_generic_binary_cases(ctx, &t);
    ntp_ctx_free(ctx);
    printf("family of %s: %d passed, %d skipped, %d failed\n", ops[0], t.passed, t.skipped,
           t.failed);
    assert_true(t.passed + t.skipped > 0);
    assert_int_equal(t.failed, 0);
}

/* Every layer of the op table has a case here, and every case belongs to
 * exactly one family. */
static void test_every_op_has_cases(void **state)
{
    (void)state;
    for (int op = 0; op < NTP_OP_COUNT; op++) {
        if (op == NTP_OP_MFCC || op == NTP_OP_CTC_DECODE || op == NTP_OP_DARKNET_HEAD)
            continue; /* inlays with their own tests (test_mfcc, test_ctc; darknet_head:
                       * test_darknet_cfg against libdarknet), run on ref by every backend */
        /* The generic cases cover a unary or binary element-wise op. */
        bool found = ntp__op_is_unary((ntp_op)op) || ntp__op_is_binary((ntp_op)op) ||
                     has_case(ntp__op_name((ntp_op)op));
        if (!found)
            fail_msg("op %s has no conformance case", ntp__op_name((ntp_op)op));
    }
    for (int c = 0; c < N_CASES; c++) {
        int n = 0;
        for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
            n += in_list(families[f], cases[c].op);
        if (n != 1)
            fail_msg("case op %s is in %d families", cases[c].op, n);
    }
}

// clang-format off
#define FAMILY_TEST(name)                  \
    static void test_##name(void **state) \
    {                                      \
        (void)state;                       \
        run_family(name##_ops);            \
    }
// clang-format on
FAMILY_TEST(dense)
FAMILY_TEST(conv)
FAMILY_TEST(pool)
FAMILY_TEST(norm)
FAMILY_TEST(act)
FAMILY_TEST(softmax)
FAMILY_TEST(binary)
FAMILY_TEST(reduce)
FAMILY_TEST(move)
FAMILY_TEST(rnn)
FAMILY_TEST(decoder)

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_op_has_cases),
        cmocka_unit_test(test_dense),
        cmocka_unit_test(test_conv),
        cmocka_unit_test(test_pool),
        cmocka_unit_test(test_norm),
        cmocka_unit_test(test_act),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_binary),
        cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_move),
        cmocka_unit_test(test_rnn),
        cmocka_unit_test(test_decoder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
