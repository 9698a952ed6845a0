/* The ops added for ONNX models (docs/ops.md, "Ops added for ONNX"): their
 * reference kernels at hand-computed points, and their markup attributes,
 * shapes and FLOP counts.
 *
 * Transcendental values are the double-precision results of Python's math
 * module (math.exp, math.erf, ...) for the formulas of docs/ops.md, rounded
 * to f32; the rest are worked out by hand in the comments. The ONNX
 * backend test data (test_onnx_conformance) checks the same ops again
 * against onnx's own reference outputs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "graph/op-onnx-impl.h"
#include "ntprof/ntprof.h"
#include "support/ctx.h"
#include "support/ref-harness.h"

static void unary(ntp_op op, double p1, double p2, const float *x, const float *want, int n,
                  float tol)
{
    rh_case c;
    rh_init(&c, op);
    /* p1 and p2 are the op's ONNX parameters in ONNX's order, as the
     * ONNX attribute table stores them (selu's alpha and gamma, ...). */
    int np;
    const ntp_onnx_attr *d = ntp__onnx_attrs(op, &np);
    if (np > 0)
        ntp__onnx_attr_set_f(&c.node.a, &d[0], p1);
    if (np > 1)
        ntp__onnx_attr_set_f(&c.node.a, &d[1], p2);
    rh_in(&c, RH_SHAPE(n), x);
    float *y = rh_out(&c, RH_SHAPE(n));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, n, tol);
    rh_free(&c);
}

static const float X4[4] = {-1.5f, -0.5f, 0.25f, 2.0f};

static void test_unary_math(void **state)
{
    (void)state;
    static const struct {
        ntp_op op;
        double p1, p2;
        float want[4];
    } cases[] = {
        {NTP_OP_ABS, 0, 0, {1.5f, 0.5f, 0.25f, 2.0f}},
        {NTP_OP_NEG, 0, 0, {1.5f, 0.5f, -0.25f, -2.0f}},
        {NTP_OP_FLOOR, 0, 0, {-2.0f, -1.0f, 0.0f, 2.0f}},
        {NTP_OP_CEIL, 0, 0, {-1.0f, -0.0f, 1.0f, 2.0f}},
        {NTP_OP_SIGN, 0, 0, {-1.0f, -1.0f, 1.0f, 1.0f}},
        {NTP_OP_EXP,
         0,
         0,
         {0.22313016653060913f, 0.6065306663513184f, 1.2840254306793213f, 7.389056205749512f}},
        {NTP_OP_ERF,
         0,
         0,
         {-0.9661051630973816f, -0.5204998850822449f, 0.27632638812065125f, 0.9953222870826721f}},
        {NTP_OP_SIN,
         0,
         0,
         {-0.9974949955940247f, -0.4794255495071411f, 0.24740396440029144f, 0.9092974066734314f}},
        {NTP_OP_COS,
         0,
         0,
         {0.07073719799518585f, 0.8775825500488281f, 0.9689124226570129f, -0.416146844625473f}},
        {NTP_OP_TAN,
         0,
         0,
         {-14.101420402526855f, -0.5463024973869324f, 0.25534191727638245f, -2.185039758682251f}},
        {NTP_OP_ATAN,
         0,
         0,
         {-0.9827937483787537f, -0.46364760398864746f, 0.244978666305542f, 1.1071487665176392f}},
        {NTP_OP_SINH,
         0,
         0,
         {-2.129279375076294f, -0.5210952758789062f, 0.25261232256889343f, 3.6268603801727295f}},
        {NTP_OP_COSH,
         0,
         0,
         {2.352409601211548f, 1.1276259422302246f, 1.0314130783081055f, 3.762195587158203f}},
        {NTP_OP_ASINH,
         0,
         0,
         {-1.19476318359375f, -0.4812118113040924f, 0.24746645987033844f, 1.4436354637145996f}},
        {NTP_OP_SOFTPLUS,
         0,
         0,
         {0.20141327381134033f, 0.4740769863128662f, 0.825939416885376f, 2.1269280910491943f}},
        /* x / (1 + |x|): -1.5/2.5, -0.5/1.5, 0.25/1.25, 2/3 */
        {NTP_OP_SOFTSIGN, 0, 0, {-0.6f, -0.3333333432674408f, 0.2f, 0.6666666865348816f}},
        {NTP_OP_ELU, 1.0, 0, {-0.7768698334693909f, -0.39346933364868164f, 0.25f, 2.0f}},
        {NTP_OP_SELU,
         1.67326319217681884765625,
         1.05070102214813232421875,
         {-1.3658143281936646f, -0.6917582154273987f, 0.2626752555370331f, 2.1014020442962646f}},
        {NTP_OP_CELU, 2.0, 0, {-1.0552668571472168f, -0.44239842891693115f, 0.25f, 2.0f}},
        /* max(0, min(1, 0.2x + 0.5)) */
        {NTP_OP_HARD_SIGMOID, 0.2, 0.5, {0.2f, 0.4f, 0.55f, 0.9f}},
        /* x > 0.5 ? x : 0 */
        {NTP_OP_THRESHOLDED_RELU, 0.5, 0, {0.0f, 0.0f, 0.0f, 2.0f}},
        /* lambd 0.4, bias 0.1: x < -0.4 ? x + 0.1 : x > 0.4 ? x - 0.1 : 0 */
        {NTP_OP_SHRINK, 0.4, 0.1, {-1.4f, -0.4f, 0.0f, 1.9f}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        print_message("%s\n", ntp__op_name(cases[i].op));
        unary(cases[i].op, cases[i].p1, cases[i].p2, X4, cases[i].want, 4, 1e-6f);
    }
    /* Domains of their own. */
    const float in1[2] = {-0.5f, 0.25f}, in2[2] = {1.5f, 2.0f}, pos[2] = {0.25f, 2.0f};
    const float asin_w[2] = {-0.5235987901687622f, 0.252680242061615f};
    const float acos_w[2] = {2.094395160675049f, 1.3181160688400269f};
    const float atanh_w[2] = {-0.5493061542510986f, 0.2554128170013428f};
    const float acosh_w[2] = {0.9624236226081848f, 1.316957950592041f};
    const float log_w[2] = {-1.3862943649291992f, 0.6931471824645996f};
    const float sqrt_w[2] = {0.5f, 1.4142135381698608f}, rec_w[2] = {4.0f, 0.5f};
    unary(NTP_OP_ASIN, 0, 0, in1, asin_w, 2, 1e-6f);
    unary(NTP_OP_ACOS, 0, 0, in1, acos_w, 2, 1e-6f);
    unary(NTP_OP_ATANH, 0, 0, in1, atanh_w, 2, 1e-6f);
    unary(NTP_OP_ACOSH, 0, 0, in2, acosh_w, 2, 1e-6f);
    unary(NTP_OP_LOG, 0, 0, pos, log_w, 2, 1e-6f);
    unary(NTP_OP_SQRT, 0, 0, pos, sqrt_w, 2, 0.0f);
    unary(NTP_OP_RECIPROCAL, 0, 0, pos, rec_w, 2, 0.0f);
}

/* ONNX's Round takes halves to the even neighbour. */
static void test_round_half_even(void **state)
{
    (void)state;
    const float x[6] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.6f}, want[6] = {0, 2, 2, -0.0f, -2, 3};
    unary(NTP_OP_ROUND, 0, 0, x, want, 6, 0.0f);
}

/* Per-channel slopes [C, 1] broadcast along dim 1 of [N, C, W]. */
static void test_prelu(void **state)
{
    (void)state;
    rh_case c;
    rh_init(&c, NTP_OP_PRELU);
    const float x[8] = {-1, 2, -3, 4, -5, 6, -7, 8}, slope[2] = {0.5f, 0.25f};
    rh_in(&c, RH_SHAPE(2, 2, 2), x);
    rh_w(&c, RH_SHAPE(2, 1), slope);
    float *y = rh_out(&c, RH_SHAPE(2, 2, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    /* Channel 0 (x[0..1], x[4..5]) scales negatives by 0.5, channel 1 by 0.25. */
    const float want[8] = {-0.5f, 2, -0.75f, 4, -2.5f, 6, -1.75f, 8};
    rh_expect(y, want, 8, 0.0f);
    rh_free(&c);
}

static void test_log_softmax_hardmax(void **state)
{
    (void)state;
    rh_case c;
    rh_init(&c, NTP_OP_LOG_SOFTMAX);
    const float x[6] = {1, 2, 3, 3, 1, 3};
    rh_in(&c, RH_SHAPE(2, 3), x);
    float *y = rh_out(&c, RH_SHAPE(2, 3));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    /* Row [1, 2, 3]: x - 3 - ln(e^-2 + e^-1 + 1). */
    const float want[3] = {-2.4076058864593506f, -1.4076060056686401f, -0.40760597586631775f};
    rh_expect(y, want, 3, 1e-6f);
    rh_free(&c);
    /* Hardmax along axis 0 of [2, 3]: the first maximum of each column. */
    rh_init(&c, NTP_OP_HARDMAX);
    c.node.a.axis = 0;
    rh_in(&c, RH_SHAPE(2, 3), x);
    y = rh_out(&c, RH_SHAPE(2, 3));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    const float hw[6] = {0, 1, 1, 1, 0, 0};
    rh_expect(y, hw, 6, 0.0f);
    rh_free(&c);
}

/* A binary op of a [2, 3] and a [3] (broadcast along dim 0). */
static void binary(ntp_op op, const float *a, const float *b, const float *want)
{
    rh_case c;
    rh_init(&c, op);
    rh_in(&c, RH_SHAPE(2, 3), a);
    rh_in(&c, RH_SHAPE(3), b);
    float *y = rh_out(&c, RH_SHAPE(2, 3));
    c.allow_nan = true;
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    for (int i = 0; i < 6; i++)
        if (isnan(want[i]))
            assert_true(isnan(y[i]));
        else
            assert_float_equal(y[i], want[i], 1e-6f * fmaxf(1.0f, fabsf(want[i])));
    rh_free(&c);
}

static void test_binary_broadcast(void **state)
{
    (void)state;
    const float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {2, 0.5f, -1};
    binary(NTP_OP_SUB, a, b, (const float[]){-1, 1.5f, 4, 2, 4.5f, 7});
    binary(NTP_OP_DIV, a, b, (const float[]){0.5f, 4, -3, 2, 10, -6});
    /* 1^2, 2^0.5, 3^-1, 4^2, 5^0.5, 6^-1 */
    binary(NTP_OP_POW, a, b,
           (const float[]){1, 1.4142135381698608f, 0.3333333432674408f, 16, 2.2360680103302f,
                           0.1666666716337204f});
    binary(NTP_OP_MAX, a, b, (const float[]){2, 2, 3, 4, 5, 6});
    binary(NTP_OP_MIN, a, b, (const float[]){1, 0.5f, -1, 2, 0.5f, -1});
    binary(NTP_OP_MEAN, a, b, (const float[]){1.5f, 1.25f, 1, 3, 2.75f, 2.5f});
    /* fmod: the sign of the dividend (not the divisor's, as Python's %: the
     * first row), truncated, not rounded (not IEEE remainder: the second),
     * NaN for a zero divisor; the values of numpy.fmod on these float32s
     * (1.24). */
    const float fa[6] = {-4.3f, 7.2f, 5, 5.5f, -5.5f, 8}, fb[3] = {2.1f, -3.4f, 0};
    binary(NTP_OP_FMOD, fa, fb,
           (const float[]){-0.10000038146972656f, 0.39999961853027344f, NAN, 1.3000001907348633f,
                           -2.0999999046325684f, NAN});
    /* NaN wins in max and min, as numpy.maximum. */
    const float n[3] = {NAN, 0, 0};
    binary(NTP_OP_MAX, a, n, (const float[]){NAN, 2, 3, NAN, 5, 6});
    binary(NTP_OP_MIN, a, n, (const float[]){NAN, 0, 0, NAN, 0, 0});
    /* greater: 1 or 0, strict (equal values are 0), 0 against NaN; the
     * values of numpy.greater (1.24) as float32. */
    binary(NTP_OP_GREATER, a, b, (const float[]){0, 1, 1, 1, 1, 1});
    binary(NTP_OP_GREATER, a, n, (const float[]){0, 1, 1, 0, 1, 1});
    binary(NTP_OP_GREATER, a, (const float[]){1, 5, 3}, (const float[]){0, 0, 0, 1, 0, 1});
}

/* where: condition [2, 1] (non-zero true) broadcast against x [2, 2] and a
 * scalar-like y [1]. */
static void test_where(void **state)
{
    (void)state;
    rh_case c;
    rh_init(&c, NTP_OP_WHERE);
    rh_in(&c, RH_SHAPE(2, 1), (const float[]){0, -3});
    rh_in(&c, RH_SHAPE(2, 2), (const float[]){1, 2, 3, 4});
    rh_in(&c, RH_SHAPE(1), (const float[]){9});
    float *y = rh_out(&c, RH_SHAPE(2, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, (const float[]){9, 9, 3, 4}, 4, 0.0f);
    rh_free(&c);
}

static void reduce(ntp_op op, int n_axes, const int64_t *axes, ntp_shape out, const float *want,
                   int n, float tol)
{
    rh_case c;
    rh_init(&c, op);
    ntp__reduce_set(&c.node.a, n_axes, axes);
    rh_in(&c, RH_SHAPE(2, 3), (const float[]){1, 2, 3, 4, 5, 6});
    float *y = rh_out(&c, out);
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, n, tol);
    rh_free(&c);
}

static void test_reductions(void **state)
{
    (void)state;
    const int64_t ax1[1] = {1}, ax0[1] = {-2};
    /* Over [[1, 2, 3], [4, 5, 6]]. */
    reduce(NTP_OP_REDUCE_SUM, 1, ax1, RH_SHAPE(2, 1), (const float[]){6, 15}, 2, 0.0f);
    reduce(NTP_OP_REDUCE_SUM, 1, ax0, RH_SHAPE(1, 3), (const float[]){5, 7, 9}, 3, 0.0f);
    reduce(NTP_OP_REDUCE_MEAN, 0, NULL, RH_SHAPE(1, 1), (const float[]){3.5f}, 1, 0.0f);
    reduce(NTP_OP_REDUCE_MAX, 1, ax1, RH_SHAPE(2, 1), (const float[]){3, 6}, 2, 0.0f);
    reduce(NTP_OP_REDUCE_MIN, 1, ax0, RH_SHAPE(1, 3), (const float[]){1, 2, 3}, 3, 0.0f);
    reduce(NTP_OP_REDUCE_PROD, 1, ax1, RH_SHAPE(2, 1), (const float[]){6, 120}, 2, 0.0f);
    reduce(NTP_OP_REDUCE_L1, 0, NULL, RH_SHAPE(1, 1), (const float[]){21}, 1, 0.0f);
    reduce(NTP_OP_REDUCE_SUM_SQUARE, 1, ax1, RH_SHAPE(2, 1), (const float[]){14, 77}, 2, 0.0f);
    reduce(NTP_OP_REDUCE_L2, 1, ax1, RH_SHAPE(2, 1),
           (const float[]){3.7416574954986572f, 8.774964332580566f}, 2, 1e-6f);
    reduce(NTP_OP_REDUCE_LOG_SUM, 1, ax1, RH_SHAPE(2, 1),
           (const float[]){1.7917594909667969f, 2.70805025100708f}, 2, 1e-6f);
    reduce(NTP_OP_REDUCE_LOG_SUM_EXP, 1, ax1, RH_SHAPE(2, 1),
           (const float[]){3.4076058864593506f, 6.40760612487793f}, 2, 1e-6f);
}

static void test_instancenorm(void **state)
{
    (void)state;
    rh_case c;
    rh_init(&c, NTP_OP_INSTANCENORM);
    c.node.a.epsilon = 1e-5;
    /* Channel 0: [1, 2, 3], mean 2, variance 2/3; channel 1: [4, 4, 8], mean
     * 16/3, variance 32/9. Scale [2, 1], bias [0, 1]. */
    rh_in(&c, RH_SHAPE(1, 2, 3), (const float[]){1, 2, 3, 4, 4, 8});
    rh_w(&c, RH_SHAPE(2), (const float[]){2, 1});
    rh_w(&c, RH_SHAPE(2), (const float[]){0, 1});
    float *y = rh_out(&c, RH_SHAPE(1, 2, 3));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y,
              (const float[]){-2.4494714736938477f, 0, 2.4494714736938477f, 0.2928942143917084f,
                              0.2928942143917084f, 2.4142115116119385f},
              6, 1e-6f);
    rh_free(&c);
}

static void test_lrn(void **state)
{
    (void)state;
    rh_case c;
    rh_init(&c, NTP_OP_LRN);
    c.node.a.lrn.size = 3;
    c.node.a.lrn.alpha = 3e-4;
    c.node.a.lrn.beta = 0.75;
    c.node.a.lrn.bias = 1.0;
    /* Channel c divided by (1 + 1e-4 * sum of squares of c-1..c+1)^0.75. */
    rh_in(&c, RH_SHAPE(1, 3, 1), (const float[]){1, 2, 3});
    float *y = rh_out(&c, RH_SHAPE(1, 3, 1));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, (const float[]){0.9996251463890076f, 1.997902512550354f, 2.9970784187316895f}, 3,
              1e-6f);
    rh_free(&c);
}

static void test_constant(void **state)
{
    (void)state;
    rh_case c;
    rh_init(&c, NTP_OP_CONSTANT);
    rh_w(&c, RH_SHAPE(2, 2), (const float[]){1, -2, 3, -4});
    float *y = rh_out(&c, RH_SHAPE(2, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, (const float[]){1, -2, 3, -4}, 4, 0.0f);
    rh_free(&c);
}

/* Slices of [[0..4], [5..9]] with ONNX's index rules. */
static void slice(const int64_t *starts, const int64_t *ends, const int64_t *axes,
                  const int64_t *steps, int n, ntp_shape out, const float *want)
{
    rh_case c;
    rh_init(&c, NTP_OP_SLICE);
    ntp__slice_set(&c.node.a, n, starts, ends, axes, steps);
    rh_in(&c, RH_SHAPE(2, 5), (const float[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    float *y = rh_out(&c, out);
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, ntp_shape_numel(&out), 0.0f);
    rh_free(&c);
}

static void test_slice(void **state)
{
    (void)state;
    /* Row 1, columns 1..3. */
    slice((const int64_t[]){1, 1}, (const int64_t[]){2, 4}, NULL, NULL, 2, RH_SHAPE(1, 3),
          (const float[]){6, 7, 8});
    /* Axis -1 from -2 to the end (INT64_MAX clamps). */
    slice((const int64_t[]){-2}, (const int64_t[]){INT64_MAX}, (const int64_t[]){-1}, NULL, 1,
          RH_SHAPE(2, 2), (const float[]){3, 4, 8, 9});
    /* Backwards with step -2 from the end: columns 4, 2, 0. */
    slice((const int64_t[]){-1}, (const int64_t[]){INT64_MIN}, (const int64_t[]){1},
          (const int64_t[]){-2}, 1, RH_SHAPE(2, 3), (const float[]){4, 2, 0, 9, 7, 5});
    /* An empty slice is refused by the shape function's arithmetic. */
    ntp_attrs a;
    ntp__attrs_default(&a);
    a.slice.n = 1;
    a.slice.starts[0] = 3;
    a.slice.ends[0] = 3;
    int64_t st[NTP_MAX_DIMS], sp[NTP_MAX_DIMS];
    ntp_shape in = RH_SHAPE(4), out;
    assert_non_null(ntp__slice_resolve(&a, &in, false, st, sp, &out));
    assert_null(ntp__slice_resolve(&a, &in, true, st, sp, &out));
    assert_int_equal(out.dim[0], 0);
}

static void test_expand(void **state)
{
    (void)state;
    rh_case c;
    rh_init(&c, NTP_OP_EXPAND);
    rh_in(&c, RH_SHAPE(3, 1), (const float[]){1, 2, 3});
    float *y = rh_out(&c, RH_SHAPE(2, 3, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, (const float[]){1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}, 12, 0.0f);
    rh_free(&c);
}

/* [[1, 2], [3, 4]] scaled by 2 in both dims (ONNX's resize examples). */
static void resize(int mode, int coord, const float *want)
{
    rh_case c;
    rh_init(&c, NTP_OP_RESIZE);
    ntp_attrs *a = &c.node.a;
    a->resize.mode = mode;
    a->resize.coord = coord;
    a->resize.nearest = NTP_RESIZE_ROUND_PREFER_FLOOR;
    a->resize.cubic_a = -0.75;
    a->resize.n_scales = 4;
    for (int d = 0; d < 4; d++) {
        a->resize.scale_num[d] = d < 2 ? 1 : 2;
        a->resize.scale_den[d] = 1;
    }
    rh_in(&c, RH_SHAPE(1, 1, 2, 2), (const float[]){1, 2, 3, 4});
    float *y = rh_out(&c, RH_SHAPE(1, 1, 4, 4));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 16, 1e-6f);
    rh_free(&c);
}

static void test_resize(void **state)
{
    (void)state;
    /* Nearest, asymmetric: output x reads input floor(x / 2). */
    resize(NTP_RESIZE_NEAREST, NTP_RESIZE_ASYMMETRIC,
           (const float[]){1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
    /* Linear, half-pixel: x -> (x + 0.5)/2 - 0.5 = -0.25, 0.25, 0.75, 1.25,
     * clamped at the edges: 1, 1.25, 1.75, 2 along a row. */
    resize(NTP_RESIZE_LINEAR, NTP_RESIZE_HALF_PIXEL,
           (const float[]){1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f,
                           3, 3.25f, 3.75f, 4});
    /* Scales as exact rationals in lowest terms: 0.6f is 10066330 / 2^24
     * = 5033165 / 2^23. */
    int64_t num, den;
    assert_true(ntp__resize_scale_rational(0.6, &num, &den));
    assert_int_equal(num, 5033165);
    assert_int_equal(den, 8388608);
    assert_true(ntp__resize_scale_rational(2.0, &num, &den));
    assert_int_equal(num, 2);
    assert_int_equal(den, 1);
    assert_false(ntp__resize_scale_rational(-1.0, &num, &den));
}

/* --- markup: attributes, shapes, FLOPs ----------------------------------------------- */

static ntp_graph *load(const char *xml)
{
    ntp_graph *g = NULL;
    ntp_status st = ntp_graph_load_xml_memory(test_ctx, xml, strlen(xml), "t.xml", NULL, &g);
    if (st)
        print_error("%s\n", ntp_ctx_errmsg(test_ctx));
    assert_int_equal(st, NTP_STATUS_OK);
    return g;
}

static void check_layer(const ntp_analysis *a, const ntp_graph *g, const char *name,
                        ntp_shape shape, int64_t flops, int64_t params)
{
    int i = ntp_graph_layer_find(g, name);
    assert_true(i >= 0);
    char b1[64], b2[64];
    assert_string_equal(ntp_shape_str(&a->layers[i].output_shape, b1, sizeof b1),
                        ntp_shape_str(&shape, b2, sizeof b2));
    assert_int_equal(a->layers[i].flops, flops);
    assert_int_equal(a->layers[i].params, params);
}

static void test_markup_shapes_and_costs(void **state)
{
    (void)state;
    ntp_graph *g = load("<topology name='t' batch='2'>"
                        "<input name='x' shape='${batch},4,6,6' dtype='f32'/>"
                        "<prelu name='p'/>"
                        "<elu name='e'/>"
                        "<instancenorm name='in'/>"
                        "<lrn name='l' size='3'/>"
                        "<resize name='up' scales='1,1,2,2' mode='linear'/>"
                        "<reduce_mean name='m' axes='2,3'/>"
                        "<slice name='s' inputs='up' starts='1' ends='3' axes='1'/>"
                        "<expand name='ex' inputs='m' shape='2,4,3,5'/>"
                        "<constant name='c' shape='1,4,1,1' trainable='false'/>"
                        "<where name='w' inputs='c,ex,ex'/>"
                        "<log_softmax name='ls' inputs='s' axis='1'/>"
                        "<pow name='pw' inputs='ex,ex'/>"
                        "</topology>");
    ntp_analysis *a = NULL;
    assert_int_equal(ntp_graph_analyze(test_ctx, g, &a), NTP_STATUS_OK);
    /* 2·4·6·6 = 288 elements. prelu: 4 slopes ([4,1,1]), 2 FLOPs each. */
    check_layer(a, g, "p", RH_SHAPE(2, 4, 6, 6), 576, 4);
    check_layer(a, g, "e", RH_SHAPE(2, 4, 6, 6), 5 * 288, 0);
    check_layer(a, g, "in", RH_SHAPE(2, 4, 6, 6), 8 * 288, 8);
    check_layer(a, g, "l", RH_SHAPE(2, 4, 6, 6), (2 * 3 + 7) * 288, 0);
    /* Linear over 2 resized dims: 4 neighbours, a multiply-add each. */
    check_layer(a, g, "up", RH_SHAPE(2, 4, 12, 12), 2 * 4 * 1152, 0);
    /* The mean of the resized [2,4,12,12]: 1152 additions and 8 divisions. */
    check_layer(a, g, "m", RH_SHAPE(2, 4, 1, 1), 1152 + 8, 0);
    check_layer(a, g, "s", RH_SHAPE(2, 2, 12, 12), 0, 0);
    check_layer(a, g, "ex", RH_SHAPE(2, 4, 3, 5), 0, 0);
    /* Not trainable: a buffer, so no params. */
    check_layer(a, g, "c", RH_SHAPE(1, 4, 1, 1), 0, 0);
    check_layer(a, g, "w", RH_SHAPE(2, 4, 3, 5), 120, 0);
    check_layer(a, g, "ls", RH_SHAPE(2, 2, 12, 12), 6 * 576, 0);
    check_layer(a, g, "pw", RH_SHAPE(2, 4, 3, 5), 4 * 120, 0);
    ntp_analysis_free(a);
    ntp_graph_free(g);
}

static void load_fails(const char *xml, const char *want)
{
    ntp_graph *g = NULL;
    assert_int_not_equal(ntp_graph_load_xml_memory(test_ctx, xml, strlen(xml), "t.xml", NULL, &g),
                         NTP_STATUS_OK);
    assert_null(g);
    if (!strstr(ntp_ctx_errmsg(test_ctx), want))
        print_error("got: %s\nwant: ...%s...\n", ntp_ctx_errmsg(test_ctx), want);
    assert_non_null(strstr(ntp_ctx_errmsg(test_ctx), want));
}

static void test_markup_errors(void **state)
{
    (void)state;
#define T(body) "<topology name='t'><input name='x' shape='2,4,6,6'/>" body "</topology>"
    load_fails(T("<slice name='s' starts='0,1' ends='2'/>"),
               "'starts' and 'ends' must have as many values (got 2 and 1)");
    load_fails(T("<slice name='s' starts='3' ends='3'/>"),
               "cannot slice input [2,4,6,6]: the slice is empty along an axis");
    load_fails(T("<resize name='r' sizes='2,4,6,6' scales='1,1,1,1'/>"),
               "give exactly one of 'sizes' and 'scales'");
    load_fails(T("<lrn name='l'/>"), "missing required attribute 'size'");
    load_fails(T("<expand name='e' shape='3,6'/>"),
               "input [2,4,6,6] does not broadcast to 'shape' entry 0 (3)");
    load_fails(T("<reduce_sum name='r' axes='1,1'/>"), "axis 1 is given twice");
    load_fails(T("<resize name='r' scales='1,1,2' mode='nearest'/>"),
               "needs 'sizes' or 'scales' with one value per input dim");
    load_fails(T("<resize name='r' scales='1,1,2,2' coordinates='half_pixl'/>"),
               "did you mean 'half_pixel'?");
    load_fails(T("<sub name='s'/>"), "takes 2 inputs, got 1");
#undef T
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary_math),
        cmocka_unit_test(test_round_half_even),
        cmocka_unit_test(test_prelu),
        cmocka_unit_test(test_log_softmax_hardmax),
        cmocka_unit_test(test_binary_broadcast),
        cmocka_unit_test(test_where),
        cmocka_unit_test(test_reductions),
        cmocka_unit_test(test_instancenorm),
        cmocka_unit_test(test_lrn),
        cmocka_unit_test(test_constant),
        cmocka_unit_test(test_slice),
        cmocka_unit_test(test_expand),
        cmocka_unit_test(test_resize),
        cmocka_unit_test(test_markup_shapes_and_costs),
        cmocka_unit_test(test_markup_errors),
    };
    return cmocka_run_group_tests(tests, test_ctx_setup, test_ctx_teardown);
}
