/* Reference activations at known points (mish and log_sigmoid against
 * PyTorch), softmax, broadcasting add / mul, and the backend's rounding of
 * outputs to bf16 / f16 / int8.
 *
 * Transcendental values are the double-precision results of the formulas
 * in docs/ops.md (math.exp, math.tanh, math.erf), rounded to f32. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "support/ctx.h"
#include "support/ref-harness.h"

/* Run a unary op on n values; attrs set by the caller through a. */
static void unary(ntp_op op, const ntp_attrs *a, const float *x, const float *want, int n,
                  float tol)
{
    rh_case c;
    rh_init(&c, op);
    if (a)
        c.node.a = *a;
    rh_in(&c, RH_SHAPE(n), x);
    float *y = rh_out(&c, RH_SHAPE(n));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, n, tol);
    rh_free(&c);
}

static void test_relu(void **state)
{
    (void)state;
    const float x[4] = {-1, 0, 2.5f, 25};
    const float plain[4] = {0, 0, 2.5f, 25}, clipped[4] = {0, 0, 2.5f, 20};
    unary(NTP_OP_RELU, NULL, x, plain, 4, 0.0f);
    /* DeepSpeech's clipped ReLU: min(max(0, x), 20). */
    ntp_attrs a;
    ntp__attrs_default(&a);
    a.has_max = true;
    a.max = 20;
    unary(NTP_OP_RELU, &a, x, clipped, 4, 0.0f);
}

static void test_leaky_relu_and_clip(void **state)
{
    (void)state;
    ntp_attrs a;
    ntp__attrs_default(&a);
    a.leaky_relu.slope = 0.25;
    const float x[3] = {-2, 0, 3}, leaky[3] = {-0.5f, 0, 3};
    unary(NTP_OP_LEAKY_RELU, &a, x, leaky, 3, 0.0f);
    ntp__attrs_default(&a);
    a.min = -1;
    a.max = 2;
    const float xc[4] = {-3, 0.5f, 2, 5}, clip[4] = {-1, 0.5f, 2, 2};
    unary(NTP_OP_CLIP, &a, xc, clip, 4, 0.0f);
}

/* y equals want bit for bit, NaN for NaN (any payload). */
static void expect_bits(const float *y, const float *want, int n)
{
    for (int i = 0; i < n; i++) {
        uint32_t got, w;
        memcpy(&got, &y[i], sizeof got);
        memcpy(&w, &want[i], sizeof w);
        if (isnan(want[i]))
            assert_true(isnan(y[i]));
        else
            assert_int_equal(got, w);
    }
}

/* relu, clip and leaky relu run masked loops, not the op table's
 * (ref-eltwise.c): the edges ONNX's max(0, x), min(max(x, lo), hi) and
 * x < 0 ? alpha x : x give, bit for bit.
 * relu: NaN stays NaN, -0 and -inf give +0, +inf and the smallest
 * subnormal stay. Leaky relu (alpha 0.25): -0 stays -0 (not < 0), -8 gives
 * -2, -inf stays -inf, NaN stays NaN. */
static void test_relu_edges(void **state)
{
    (void)state;
    const float den = 1.40129846e-45f;
    const float x[7] = {NAN, -0.0f, INFINITY, -INFINITY, den, -den, 3.0f};
    const float relu[7] = {NAN, 0.0f, INFINITY, 0.0f, den, 0.0f, 3.0f};
    const float leaky[7] = {NAN, -0.0f, INFINITY, -INFINITY, den, -0.0f, 3.0f};
    const float xl[2] = {-8.0f, 1e30f}, leaky2[2] = {-2.0f, 1e30f};
    float y[7];
    ntp_attrs a;
    ntp__attrs_default(&a);
    assert_true(ntp__ref_unary(NTP_OP_RELU, &a, x, y, 7));
    expect_bits(y, relu, 7);
    a.leaky_relu.slope = 0.25;
    assert_true(ntp__ref_unary(NTP_OP_LEAKY_RELU, &a, x, y, 7));
    expect_bits(y, leaky, 7);
    assert_true(ntp__ref_unary(NTP_OP_LEAKY_RELU, &a, xl, y, 2));
    expect_bits(y, leaky2, 2);
    /* Clipped relu (max 20): the bound where x is above it, NaN through;
     * clip to [-1, 2]: -0 stays -0 (not below -1), the bounds at +-inf. */
    const float xc[6] = {NAN, -0.0f, 25.0f, -INFINITY, INFINITY, 3.0f};
    const float relu20[6] = {NAN, 0.0f, 20.0f, 0.0f, 20.0f, 3.0f};
    const float clip[6] = {NAN, -0.0f, 2.0f, -1.0f, 2.0f, 2.0f};
    ntp__attrs_default(&a);
    a.has_max = true;
    a.max = 20;
    assert_true(ntp__ref_unary(NTP_OP_RELU, &a, xc, y, 6));
    expect_bits(y, relu20, 6);
    ntp__attrs_default(&a);
    a.min = -1;
    a.max = 2;
    assert_true(ntp__ref_unary(NTP_OP_CLIP, &a, xc, y, 6));
    expect_bits(y, clip, 6);
}

static void test_sigmoid_tanh(void **state)
{
    (void)state;
    const float x[3] = {0, 2, -2};
    const float sig[3] = {0.5f, 0.8807970779778823f, 0.11920292202211755f};
    unary(NTP_OP_SIGMOID, NULL, x, sig, 3, 1e-7f);
    const float xt[3] = {0.5f, 0, -0.5f};
    const float th[3] = {0.46211715726000974f, 0, -0.46211715726000974f};
    unary(NTP_OP_TANH, NULL, xt, th, 3, 1e-7f);
}

static void test_gelu_silu_hardswish(void **state)
{
    (void)state;
    /* gelu(x) = 0.5·x·(1 + erf(x/√2)), the exact form: gelu(1) = 0.841345
     * (the tanh approximation would give 0.841192). */
    const float x[4] = {1, -1, 0, 3};
    const float gelu[4] = {0.8413447460685429f, -0.15865525393145707f, 0, 2.99595030590511f};
    unary(NTP_OP_GELU, NULL, x, gelu, 4, 1e-7f);
    const float xs[2] = {1, -1}, silu[2] = {0.7310585786300049f, -0.2689414213699951f};
    unary(NTP_OP_SILU, NULL, xs, silu, 2, 1e-7f);
    /* x·relu6(x + 3)/6: −4 -> 0, −1 -> −1·2/6, 1 -> 4/6, 4 -> 4·6/6. */
    const float xh[4] = {-4, -1, 1, 4}, hs[4] = {0, -1.0f / 3.0f, 2.0f / 3.0f, 4};
    unary(NTP_OP_HARDSWISH, NULL, xh, hs, 4, 1e-7f);
}

/* Inputs out to |x| = 1000, where e^x overflows a double: softplus must be
 * taken without it. The values are PyTorch's (torch.nn.functional.mish and
 * logsigmoid on float64, PyTorch 1.13), rounded to f32. */
static const float XW[13] = {-1000, -100, -20, -5, -1, -0.5f, 0, 0.5f, 1, 5, 20, 100, 1000};

static void test_mish(void **state)
{
    (void)state;
    const float want[13] = {-0.0f,
                            -3.7200759760208363e-42f,
                            -4.122307240628762e-08f,
                            -0.033576237730161704f,
                            -0.30340146137410895f,
                            -0.22074377465173f,
                            0.0f,
                            0.37524521130489513f,
                            0.8650983882673103f,
                            4.999552077529406f,
                            20.0f,
                            100.0f,
                            1000.0f};
    unary(NTP_OP_MISH, NULL, XW, want, 13, 1e-7f);
}

static void test_log_sigmoid(void **state)
{
    (void)state;
    const float want[13] = {-1000.0f,
                            -100.0f,
                            -20.000000002061153f,
                            -5.006715348489118f,
                            -1.3132616875182228f,
                            -0.9740769841801067f,
                            -0.6931471805599453f,
                            -0.4740769841801067f,
                            -0.31326168751822286f,
                            -0.006715348489118068f,
                            -2.061153620314381e-09f,
                            -3.720075976020836e-44f,
                            0.0f};
    unary(NTP_OP_LOG_SIGMOID, NULL, XW, want, 13, 1e-7f);
}

static void test_dropout_is_identity(void **state)
{
    (void)state;
    ntp_attrs a;
    ntp__attrs_default(&a);
    const float x[3] = {1, -2, 3};
    unary(NTP_OP_DROPOUT, &a, x, x, 3, 0.0f);
}

static void test_softmax(void **state)
{
    (void)state;
    /* Rows of [2, 3] over the last axis: softmax([1 2 3]) =
     * [0.09003057, 0.24472847, 0.66524096]; the second row is the first
     * shifted by 100 (same result: the maximum is subtracted). */
    const float x[6] = {1, 2, 3, 101, 102, 103};
    const float row[3] = {0.09003057317038046f, 0.24472847105479767f, 0.6652409557748219f};
    rh_case c;
    rh_init(&c, NTP_OP_SOFTMAX);
    c.node.a.axis = 1;
    rh_in(&c, RH_SHAPE(2, 3), x);
    float *y = rh_out(&c, RH_SHAPE(2, 3));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, row, 3, 1e-7f);
    rh_expect(y + 3, row, 3, 1e-7f);
    for (int r = 0; r < 2; r++)
        assert_float_equal(y[3 * r] + y[3 * r + 1] + y[3 * r + 2], 1.0, 1e-6);
    rh_free(&c);

    /* Over axis 0 of [3, 2] (a strided axis): column j holds the row above. */
    const float xt[6] = {1, 0, 2, 0, 3, 0};
    const float want[6] = {row[0], 1.0f / 3, row[1], 1.0f / 3, row[2], 1.0f / 3};
    rh_init(&c, NTP_OP_SOFTMAX);
    c.node.a.axis = 0;
    rh_in(&c, RH_SHAPE(3, 2), xt);
    y = rh_out(&c, RH_SHAPE(3, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 6, 1e-7f);
    rh_free(&c);
}

static void test_add_broadcast(void **state)
{
    (void)state;
    /* [2, 3] + [3] + [2, 1]: a[i][j] + b[j] + c[i]. */
    const float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30}, cc[2] = {100, 200};
    const float want[6] = {111, 122, 133, 214, 225, 236};
    rh_case c;
    rh_init(&c, NTP_OP_ADD);
    rh_in(&c, RH_SHAPE(2, 3), a);
    rh_in(&c, RH_SHAPE(3), b);
    rh_in(&c, RH_SHAPE(2, 1), cc);
    float *y = rh_out(&c, RH_SHAPE(2, 3));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 6, 0.0f);
    rh_free(&c);
}

static void test_mul_broadcast(void **state)
{
    (void)state;
    /* [2, 1, 3] * [1, 2, 1] -> [2, 2, 3]: a[i][0][k] · b[0][j][0]. */
    const float a[6] = {1, 2, 3, 4, 5, 6}, b[2] = {10, -1};
    const float want[12] = {10, 20, 30, -1, -2, -3, 40, 50, 60, -4, -5, -6};
    rh_case c;
    rh_init(&c, NTP_OP_MUL);
    rh_in(&c, RH_SHAPE(2, 1, 3), a);
    rh_in(&c, RH_SHAPE(1, 2, 1), b);
    float *y = rh_out(&c, RH_SHAPE(2, 2, 3));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 12, 0.0f);
    rh_free(&c);
}

static void test_add_eight_inputs(void **state)
{
    (void)state;
    /* Input i is the constant 2^i over [2, 2] (some broadcast from [1]):
     * the sum is 255 everywhere. */
    float v[8][4];
    rh_case c;
    rh_init(&c, NTP_OP_ADD);
    for (int i = 0; i < 8; i++) {
        for (int j = 0; j < 4; j++)
            v[i][j] = (float)(1 << i);
        if (i % 2)
            rh_in(&c, RH_SHAPE(1), v[i]);
        else
            rh_in(&c, RH_SHAPE(2, 2), v[i]);
    }
    const float want[4] = {255, 255, 255, 255};
    float *y = rh_out(&c, RH_SHAPE(2, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 4, 0.0f);
    rh_free(&c);
}

static void test_add_bad_broadcast(void **state)
{
    (void)state;
    const float a[6] = {0}, b[2] = {0};
    rh_case c;
    rh_init(&c, NTP_OP_ADD);
    rh_in(&c, RH_SHAPE(2, 3), a);
    rh_in(&c, RH_SHAPE(2), b);
    rh_out(&c, RH_SHAPE(2, 3));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_SHAPE_ERROR);
    assert_non_null(strstr(ntp_ctx_errmsg(test_ctx), "broadcast"));
    rh_free(&c);
}

static void test_backend_rounds_outputs(void **state)
{
    (void)state;
    /* relu through the backend at reduced precisions: the output is
     * rounded as storage of that type would hold it. */
    const float x[3] = {0.1f, 1000.1f, -1};
    const ntp_dtype p[3] = {NTP_DTYPE_BF16, NTP_DTYPE_F16, NTP_DTYPE_I8};
    /* bf16(0.1) = 0.10009765625, bf16(1000.1) = 1000; f16(0.1) =
     * 0.0999755859375, f16(1000.1) = 1000; int8 with the dynamic scale
     * 1000.1/127: 0.1 -> q 0 -> 0, 1000.1 -> 127·scale. */
    const float want[3][3] = {{0.10009765625f, 1000.0f, 0},
                              {0.0999755859375f, 1000.0f, 0},
                              {0, 127.0f * (1000.1f / 127.0f), 0}};
    for (int i = 0; i < 3; i++) {
        rh_case c;
        rh_init(&c, NTP_OP_RELU);
        c.node.precision = p[i];
        rh_in(&c, RH_SHAPE(3), x);
        float *y = rh_out(&c, RH_SHAPE(3));
        assert_int_equal(rh_run_backend(&c, test_ctx), NTP_STATUS_OK);
        rh_expect(y, want[i], 3, 0.0f);
        rh_free(&c);
    }
}

static void test_backend_widens_half_inputs(void **state)
{
    (void)state;
    /* A graph input stored as f16 is widened into the workspace first:
     * f16 0x3c00 = 1, 0xc000 = -2. */
    const uint16_t x[2] = {0x3c00, 0xc000};
    const float want[2] = {1, 0};
    rh_case c;
    rh_init(&c, NTP_OP_RELU);
    rh_in_typed(&c, RH_SHAPE(2), NTP_DTYPE_F16, x);
    float *y = rh_out(&c, RH_SHAPE(2));
    assert_int_equal(rh_run_backend(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 2, 0.0f);
    rh_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_relu),
        cmocka_unit_test(test_leaky_relu_and_clip),
        cmocka_unit_test(test_relu_edges),
        cmocka_unit_test(test_sigmoid_tanh),
        cmocka_unit_test(test_gelu_silu_hardswish),
        cmocka_unit_test(test_mish),
        cmocka_unit_test(test_log_sigmoid),
        cmocka_unit_test(test_dropout_is_identity),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_add_broadcast),
        cmocka_unit_test(test_mul_broadcast),
        cmocka_unit_test(test_add_eight_inputs),
        cmocka_unit_test(test_add_bad_broadcast),
        cmocka_unit_test(test_backend_rounds_outputs),
        cmocka_unit_test(test_backend_widens_half_inputs),
    };
    return cmocka_run_group_tests(tests, test_ctx_setup, test_ctx_teardown);
}
