/* Reference pooling on hand-computed cases: max and average, padding,
 * dilation, ceil_mode, count_include_pad (PyTorch's semantics, including
 * its clipping of the divisor at the end padding in ceil mode), global
 * pools. torch.nn.functional gives the same numbers for every case here. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "support/ctx.h"
#include "support/ref-harness.h"

/* A 1-d pool of x [1,1,n] with kernel k, stride s, pads pb/pe. */
static void pool1d(ntp_op op, const float *x, int64_t n, int64_t k, int64_t s, int64_t pb,
                   int64_t pe, bool ceil_mode, bool include_pad, const float *want, int64_t n_out)
{
    const int64_t kernel[1] = {k}, stride[1] = {s}, pads[2] = {pb, pe};
    rh_case c;
    rh_init(&c, op);
    rh_spatial(&c, 1, kernel, stride, NULL, pads);
    c.node.a.ceil_mode = ceil_mode;
    c.node.a.count_include_pad = include_pad;
    rh_in(&c, RH_SHAPE(1, 1, n), x);
    float *y = rh_out(&c, RH_SHAPE(1, 1, n_out));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, n_out, 1e-6f);
    rh_free(&c);
}

static void test_maxpool_2d(void **state)
{
    (void)state;
    /* 4x4 of 1..16, 2x2 windows, stride 2: the bottom-right of each. */
    float x[16];
    for (int i = 0; i < 16; i++)
        x[i] = (float)(i + 1);
    const float want[4] = {6, 8, 14, 16};
    const int64_t k[2] = {2, 2};
    rh_case c;
    rh_init(&c, NTP_OP_MAXPOOL);
    rh_spatial(&c, 2, k, k, NULL, NULL);
    rh_in(&c, RH_SHAPE(1, 1, 4, 4), x);
    float *y = rh_out(&c, RH_SHAPE(1, 1, 2, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 4, 0.0f);
    rh_free(&c);
}

static void test_maxpool_ceil_mode(void **state)
{
    (void)state;
    /* [1 5 2 4 3], k 2, s 2: floor gives 2 windows, ceil a third one that
     * holds only the last element: [5, 4, 3]. */
    const float x[5] = {1, 5, 2, 4, 3}, want[3] = {5, 4, 3};
    pool1d(NTP_OP_MAXPOOL, x, 5, 2, 2, 0, 0, true, false, want, 3);
}

static void test_maxpool_dilation_padding(void **state)
{
    (void)state;
    /* 5x5 of ±(1..25) (odd positions negative), k 2, s 2, pad 1, dilation
     * 2: output 3x3, each window taps rows/cols start, start+2 with
     * start = 2·o − 1. o=(0,0): only (1,1) = 7 is inside; o=(0,1): row 1,
     * cols 1 and 3: max(7, 9) = 9; o=(1,0): rows 1, 3, col 1: max(7, 17). */
    float x[25];
    for (int i = 0; i < 25; i++)
        x[i] = (float)(i + 1) * (i % 2 ? -1.0f : 1.0f);
    const float want[9] = {7, 9, 9, 17, 19, 19, 17, 19, 19};
    const int64_t k[2] = {2, 2}, s[2] = {2, 2}, d[2] = {2, 2}, p[4] = {1, 1, 1, 1};
    rh_case c;
    rh_init(&c, NTP_OP_MAXPOOL);
    rh_spatial(&c, 2, k, s, d, p);
    rh_in(&c, RH_SHAPE(1, 1, 5, 5), x);
    float *y = rh_out(&c, RH_SHAPE(1, 1, 3, 3));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 9, 0.0f);
    rh_free(&c);
}

static void test_maxpool_propagates_nan(void **state)
{
    (void)state;
    const float x[4] = {1, NAN, 3, 2};
    const int64_t k[1] = {2};
    rh_case c;
    rh_init(&c, NTP_OP_MAXPOOL);
    rh_spatial(&c, 1, k, k, NULL, NULL);
    c.allow_nan = true;
    rh_in(&c, RH_SHAPE(1, 1, 4), x);
    float *y = rh_out(&c, RH_SHAPE(1, 1, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    assert_true(isnan(y[0]));
    assert_true(y[1] == 3.0f);
    rh_free(&c);
}

static void test_avgpool_count_include_pad(void **state)
{
    (void)state;
    /* [1 2 3], k 3, s 1, pad 1: windows [p 1 2], [1 2 3], [2 3 p].
     * Without the pad: 3/2, 6/3, 5/2; with it: 3/3, 6/3, 5/3. */
    const float x[3] = {1, 2, 3};
    const float excl[3] = {1.5f, 2.0f, 2.5f}, incl[3] = {1.0f, 2.0f, 5.0f / 3.0f};
    pool1d(NTP_OP_AVGPOOL, x, 3, 3, 1, 1, 1, false, false, excl, 3);
    pool1d(NTP_OP_AVGPOOL, x, 3, 3, 1, 1, 1, false, true, incl, 3);
}

static void test_avgpool_ceil_mode(void **state)
{
    (void)state;
    /* [1 2 3 4 5], k 2, s 2, ceil: the third window holds only 5 and lies
     * past the (zero) end padding, so even count_include_pad divides by 1. */
    const float x5[5] = {1, 2, 3, 4, 5}, want5[3] = {1.5f, 3.5f, 5.0f};
    pool1d(NTP_OP_AVGPOOL, x5, 5, 2, 2, 0, 0, true, true, want5, 3);
    /* [1 2 3 4], k 3, s 2, pad 1, ceil: windows start at -1, 1, 3:
     * [p 1 2], [2 3 4], [4 p |past]. Including the pad the last window
     * counts 2 positions (4 and the end pad): 4/2; excluding it, 4/1. */
    const float x4[4] = {1, 2, 3, 4};
    const float incl[3] = {1.0f, 3.0f, 2.0f}, excl[3] = {1.5f, 3.0f, 4.0f};
    pool1d(NTP_OP_AVGPOOL, x4, 4, 3, 2, 1, 1, true, true, incl, 3);
    pool1d(NTP_OP_AVGPOOL, x4, 4, 3, 2, 1, 1, true, false, excl, 3);
}

static void test_avgpool_3d(void **state)
{
    (void)state;
    /* 2x2x2 of 1..8, one 2x2x2 window: the mean 4.5. */
    float x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (float)(i + 1);
    const float want[1] = {4.5f};
    const int64_t k[3] = {2, 2, 2};
    rh_case c;
    rh_init(&c, NTP_OP_AVGPOOL);
    rh_spatial(&c, 3, k, k, NULL, NULL);
    rh_in(&c, RH_SHAPE(1, 1, 2, 2, 2), x);
    float *y = rh_out(&c, RH_SHAPE(1, 1, 1, 1, 1));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 1, 0.0f);
    rh_free(&c);
}

static void test_global_pools(void **state)
{
    (void)state;
    /* Channel 0: 1 2 3 4 (mean 2.5, max 4); channel 1: -1 -5 0 -2 (mean -2,
     * max 0). */
    const float x[8] = {1, 2, 3, 4, -1, -5, 0, -2};
    const float avg[2] = {2.5f, -2.0f}, mx[2] = {4.0f, 0.0f};
    for (int m = 0; m < 2; m++) {
        rh_case c;
        rh_init(&c, m ? NTP_OP_GLOBAL_MAXPOOL : NTP_OP_GLOBAL_AVGPOOL);
        rh_in(&c, RH_SHAPE(1, 2, 2, 2), x);
        float *y = rh_out(&c, RH_SHAPE(1, 2, 1, 1));
        assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
        rh_expect(y, m ? mx : avg, 2, 0.0f);
        rh_free(&c);
    }
}

static void test_pool_shape_mismatch(void **state)
{
    (void)state;
    /* Channels must agree: a report, not a crash. */
    float x[8] = {0};
    const int64_t k[1] = {2};
    rh_case c;
    rh_init(&c, NTP_OP_MAXPOOL);
    rh_spatial(&c, 1, k, k, NULL, NULL);
    rh_in(&c, RH_SHAPE(1, 2, 4), x);
    rh_out(&c, RH_SHAPE(1, 3, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_SHAPE_ERROR);
    rh_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_maxpool_2d),
        cmocka_unit_test(test_maxpool_ceil_mode),
        cmocka_unit_test(test_maxpool_dilation_padding),
        cmocka_unit_test(test_maxpool_propagates_nan),
        cmocka_unit_test(test_avgpool_count_include_pad),
        cmocka_unit_test(test_avgpool_ceil_mode),
        cmocka_unit_test(test_avgpool_3d),
        cmocka_unit_test(test_global_pools),
        cmocka_unit_test(test_pool_shape_mismatch),
    };
    return cmocka_run_group_tests(tests, test_ctx_setup, test_ctx_teardown);
}
