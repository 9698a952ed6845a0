/* Reference batch normalisation and layer normalisation on hand-computed
 * cases (epsilon chosen so the square roots are exact where possible). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "support/ctx.h"
#include "support/ref-harness.h"

static void test_batchnorm(void **state)
{
    (void)state;
    /* x [2, 2, 2] (N=2, C=2, L=2), epsilon 0.25 so that
     *   channel 0: var 3.75 -> sqrt(4) = 2, scale 2, bias 1, mean 2:
     *              y = 2·(x − 2)/2 + 1 = x − 1
     *   channel 1: var 0 -> sqrt(0.25) = 0.5, scale 0.5, bias −1, mean 3:
     *              y = 0.5·(x − 3)/0.5 − 1 = x − 4 */
    const float x[8] = {1, 3, 2, 4, 5, -1, 0, 7};
    const float scale[2] = {2, 0.5f}, bias[2] = {1, -1}, mean[2] = {2, 3}, var[2] = {3.75f, 0};
    const float want[8] = {0, 2, -2, 0, 4, -2, -4, 3};
    rh_case c;
    rh_init(&c, NTP_OP_BATCHNORM);
    c.node.a.epsilon = 0.25;
    rh_in(&c, RH_SHAPE(2, 2, 2), x);
    rh_w(&c, RH_SHAPE(2), scale);
    rh_w(&c, RH_SHAPE(2), bias);
    rh_w(&c, RH_SHAPE(2), mean);
    rh_w(&c, RH_SHAPE(2), var);
    float *y = rh_out(&c, RH_SHAPE(2, 2, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 8, 0.0f);
    rh_free(&c);
}

static void test_batchnorm_2d_default_epsilon(void **state)
{
    (void)state;
    /* [1, 1, 2, 2], mean 0, var 1 - 1e-5 (so var + ε = 1), scale 3, bias 0.5:
     * y = 3x + 0.5 within f32 rounding of the variance. */
    const float x[4] = {1, -1, 0.5f, 2};
    const float scale[1] = {3}, bias[1] = {0.5f}, mean[1] = {0}, var[1] = {1.0f - 1e-5f};
    const float want[4] = {3.5f, -2.5f, 2.0f, 6.5f};
    rh_case c;
    rh_init(&c, NTP_OP_BATCHNORM);
    rh_in(&c, RH_SHAPE(1, 1, 2, 2), x);
    rh_w(&c, RH_SHAPE(1), scale);
    rh_w(&c, RH_SHAPE(1), bias);
    rh_w(&c, RH_SHAPE(1), mean);
    rh_w(&c, RH_SHAPE(1), var);
    float *y = rh_out(&c, RH_SHAPE(1, 1, 2, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 4, 1e-6f);
    rh_free(&c);
}

static void test_layernorm_last_axis(void **state)
{
    (void)state;
    /* Row [1 2 3 4]: mean 2.5, biased variance 1.25;
     * (x − 2.5)/sqrt(1.25 + 1e-5) = ∓1.3416354, ∓0.4472118;
     * γ = [1 1 2 2], β = [0 0 0 1].
     * Row [2 2 2 2]: variance 0, so every value normalises to 0 -> β. */
    const float x[8] = {1, 2, 3, 4, 2, 2, 2, 2};
    const float gamma[4] = {1, 1, 2, 2}, beta[4] = {0, 0, 0, 1};
    const float want[8] = {-1.34163542f, -0.44721181f, 0.89442361f, 3.68327084f, 0, 0, 0, 1};
    rh_case c;
    rh_init(&c, NTP_OP_LAYERNORM);
    c.node.a.axis = -1;
    rh_in(&c, RH_SHAPE(2, 4), x);
    rh_w(&c, RH_SHAPE(4), gamma);
    rh_w(&c, RH_SHAPE(4), beta);
    float *y = rh_out(&c, RH_SHAPE(2, 4));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 8, 1e-6f);
    rh_free(&c);
}

static void test_layernorm_two_axes(void **state)
{
    (void)state;
    /* [1, 2, 2] normalised over axis 1 (D = 4): values 1 −1 0 2, mean 0.5,
     * variance 1.25: (x − 0.5)/sqrt(1.25 + 1e-5) = 0.4472118, −1.3416354,
     * −0.4472118, 1.3416354; γ = 1, β = 0. */
    const float x[4] = {1, -1, 0, 2};
    const float gamma[4] = {1, 1, 1, 1}, beta[4] = {0, 0, 0, 0};
    const float want[4] = {0.44721181f, -1.34163542f, -0.44721181f, 1.34163542f};
    rh_case c;
    rh_init(&c, NTP_OP_LAYERNORM);
    c.node.a.axis = 1;
    rh_in(&c, RH_SHAPE(1, 2, 2), x);
    rh_w(&c, RH_SHAPE(4), gamma);
    rh_w(&c, RH_SHAPE(4), beta);
    float *y = rh_out(&c, RH_SHAPE(1, 2, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 4, 1e-6f);
    rh_free(&c);
}

static void test_layernorm_weight_size_checked(void **state)
{
    (void)state;
    float x[4] = {0}, g[2] = {0};
    rh_case c;
    rh_init(&c, NTP_OP_LAYERNORM);
    rh_in(&c, RH_SHAPE(1, 4), x);
    rh_w(&c, RH_SHAPE(2), g);
    rh_w(&c, RH_SHAPE(2), g);
    rh_out(&c, RH_SHAPE(1, 4));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_SHAPE_ERROR);
    rh_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batchnorm),
        cmocka_unit_test(test_batchnorm_2d_default_epsilon),
        cmocka_unit_test(test_layernorm_last_axis),
        cmocka_unit_test(test_layernorm_two_axes),
        cmocka_unit_test(test_layernorm_weight_size_checked),
    };
    return cmocka_run_group_tests(tests, test_ctx_setup, test_ctx_teardown);
}
