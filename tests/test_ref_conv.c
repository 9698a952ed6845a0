/* Reference convolution and transposed convolution: small hand-computed
 * cases (stride, dilation, asymmetric padding, groups, depthwise,
 * output_padding), then larger 2-d and 3-d cases against a direct
 * seven-loop convolution written here from the definition. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/ctx.h"
#include "support/ref-harness.h"

static void test_conv1d_stride_asymmetric_pad(void **state)
{
    (void)state;
    /* x = [1 2 3 4 5], W = [1 0 -1], stride 2, pad 1 before and 2 after:
     * padded [0 1 2 3 4 5 0 0], out = floor((5+1+2-3)/2)+1 = 3 windows at
     * 0, 2, 4: 0-2, 2-4, 4-0 = -2, -2, 4; plus bias 0.5. */
    const float x[5] = {1, 2, 3, 4, 5}, W[3] = {1, 0, -1}, b[1] = {0.5f};
    const float want[3] = {-1.5f, -1.5f, 4.5f};
    const int64_t k[1] = {3}, s[1] = {2}, p[2] = {1, 2};
    rh_case c;
    rh_init(&c, NTP_OP_CONV);
    c.node.a.filters = 1;
    rh_spatial(&c, 1, k, s, NULL, p);
    rh_in(&c, RH_SHAPE(1, 1, 5), x);
    rh_w(&c, RH_SHAPE(1, 1, 3), W);
    rh_w(&c, RH_SHAPE(1), b);
    float *y = rh_out(&c, RH_SHAPE(1, 1, 3));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 3, 0.0f);
    rh_free(&c);
}

static void test_conv1d_dilation(void **state)
{
    (void)state;
    /* W = [1 1] with dilation 3: y[i] = x[i] + x[i+3] = 5, 7, 9. */
    const float x[6] = {1, 2, 3, 4, 5, 6}, W[2] = {1, 1};
    const float want[3] = {5, 7, 9};
    const int64_t k[1] = {2}, d[1] = {3};
    rh_case c;
    rh_init(&c, NTP_OP_CONV);
    c.node.a.filters = 1;
    c.node.a.bias = false;
    rh_spatial(&c, 1, k, NULL, d, NULL);
    rh_in(&c, RH_SHAPE(1, 1, 6), x);
    rh_w(&c, RH_SHAPE(1, 1, 2), W);
    float *y = rh_out(&c, RH_SHAPE(1, 1, 3));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 3, 0.0f);
    rh_free(&c);
}

static void test_conv2d_stride_pad(void **state)
{
    (void)state;
    /* 3x3 of 1..9, a 3x3 box of ones, stride 2, pad 1: 2x2 outputs, each
     * the sum of the 2x2 corner block it covers: 1+2+4+5, 2+3+5+6,
     * 4+5+7+8, 5+6+8+9. */
    float x[9], W[9];
    for (int i = 0; i < 9; i++) {
        x[i] = (float)(i + 1);
        W[i] = 1.0f;
    }
    const float want[4] = {12, 16, 24, 28};
    const int64_t k[2] = {3, 3}, s[2] = {2, 2}, p[4] = {1, 1, 1, 1};
    rh_case c;
    rh_init(&c, NTP_OP_CONV);
    c.node.a.filters = 1;
    c.node.a.bias = false;
    rh_spatial(&c, 2, k, s, NULL, p);
    rh_in(&c, RH_SHAPE(1, 1, 3, 3), x);
    rh_w(&c, RH_SHAPE(1, 1, 3, 3), W);
    float *y = rh_out(&c, RH_SHAPE(1, 1, 2, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 4, 0.0f);
    rh_free(&c);
}

static void test_conv_groups(void **state)
{
    (void)state;
    /* 4 channels [1 2] [3 4] [5 6] [7 8], groups 2, kernel 1:
     * filter 0 sees channels 0-1 with W [1 1]: [4 6];
     * filter 1 sees channels 2-3 with W [1 -1]: [-2 -2]. */
    const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, W[4] = {1, 1, 1, -1};
    const float want[4] = {4, 6, -2, -2};
    const int64_t k[1] = {1};
    rh_case c;
    rh_init(&c, NTP_OP_CONV);
    c.node.a.filters = 2;
    c.node.a.groups = 2;
    c.node.a.bias = false;
    rh_spatial(&c, 1, k, NULL, NULL, NULL);
    rh_in(&c, RH_SHAPE(1, 4, 2), x);
    rh_w(&c, RH_SHAPE(2, 2, 1), W);
    float *y = rh_out(&c, RH_SHAPE(1, 2, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 4, 0.0f);
    rh_free(&c);
}

static void test_conv_depthwise(void **state)
{
    (void)state;
    /* groups = C = 2, one filter per channel, kernel 2:
     * [1 2 3] * [1 2] = [1+4, 2+6]; [4 5 6] * [3 -1] = [12-5, 15-6]. */
    const float x[6] = {1, 2, 3, 4, 5, 6}, W[4] = {1, 2, 3, -1};
    const float want[4] = {5, 8, 7, 9};
    const int64_t k[1] = {2};
    rh_case c;
    rh_init(&c, NTP_OP_CONV);
    c.node.a.filters = 2;
    c.node.a.groups = 2;
    c.node.a.bias = false;
    rh_spatial(&c, 1, k, NULL, NULL, NULL);
    rh_in(&c, RH_SHAPE(1, 2, 3), x);
    rh_w(&c, RH_SHAPE(2, 1, 2), W);
    float *y = rh_out(&c, RH_SHAPE(1, 2, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 4, 0.0f);
    rh_free(&c);
}

static void test_deconv_output_padding(void **state)
{
    (void)state;
    /* x = [1 2 3], W = [1 10], stride 2, output_padding 1:
     * out = (3-1)·2 + (2-1) + 1 + 1 = 7; y[2i + q] += x[i]·W[q], y[6] only
     * gets the bias: [1 10 2 20 3 30 0] + 0.5. */
    const float x[3] = {1, 2, 3}, W[2] = {1, 10}, b[1] = {0.5f};
    const float want[7] = {1.5f, 10.5f, 2.5f, 20.5f, 3.5f, 30.5f, 0.5f};
    const int64_t k[1] = {2}, s[1] = {2};
    rh_case c;
    rh_init(&c, NTP_OP_DECONV);
    c.node.a.filters = 1;
    rh_spatial(&c, 1, k, s, NULL, NULL);
    c.node.a.output_padding[0] = 1;
    c.node.a.n_output_padding = 1;
    rh_in(&c, RH_SHAPE(1, 1, 3), x);
    rh_w(&c, RH_SHAPE(1, 1, 2), W);
    rh_w(&c, RH_SHAPE(1), b);
    float *y = rh_out(&c, RH_SHAPE(1, 1, 7));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 7, 0.0f);
    rh_free(&c);
}

static void test_deconv_padding(void **state)
{
    (void)state;
    /* x = [1 1], W = [1 2 3], stride 2, pad 1 before: out = (2-1)·2 - 1 +
     * 2 + 1 = 4, o = 2i - 1 + q: i=0 puts 2, 3 at 0, 1; i=1 puts 1, 2, 3 at
     * 1, 2, 3: [2, 3+1, 2, 3]. */
    const float x[2] = {1, 1}, W[3] = {1, 2, 3};
    const float want[4] = {2, 4, 2, 3};
    const int64_t k[1] = {3}, s[1] = {2}, p[2] = {1, 0};
    rh_case c;
    rh_init(&c, NTP_OP_DECONV);
    c.node.a.filters = 1;
    c.node.a.bias = false;
    rh_spatial(&c, 1, k, s, NULL, p);
    rh_in(&c, RH_SHAPE(1, 1, 2), x);
    rh_w(&c, RH_SHAPE(1, 1, 3), W);
    float *y = rh_out(&c, RH_SHAPE(1, 1, 4));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 4, 0.0f);
    rh_free(&c);
}

static void test_deconv2d_groups(void **state)
{
    (void)state;
    /* Two 1x1 input channels [1] and [2], groups 2, 2x2 kernels: each
     * output channel is its input times its own kernel. */
    const float x[2] = {1, 2}, W[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const float want[8] = {1, 2, 3, 4, 10, 12, 14, 16};
    const int64_t k[2] = {2, 2};
    rh_case c;
    rh_init(&c, NTP_OP_DECONV);
    c.node.a.filters = 2;
    c.node.a.groups = 2;
    c.node.a.bias = false;
    rh_spatial(&c, 2, k, NULL, NULL, NULL);
    rh_in(&c, RH_SHAPE(1, 2, 1, 1), x);
    rh_w(&c, RH_SHAPE(2, 1, 2, 2), W);
    float *y = rh_out(&c, RH_SHAPE(1, 2, 2, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 8, 0.0f);
    rh_free(&c);
}

/* --- larger cases against the definition ----------------------------------- */

typedef struct conv_case {
    int nk;
    int64_t N, C, F, G;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], op[3];
    bool deconv;
} conv_case;

static int64_t out_dim(const conv_case *cc, int i)
{
    if (cc->deconv)
        return (cc->in[i] - 1) * cc->s[i] - cc->pb[i] - cc->pe[i] + cc->d[i] * (cc->k[i] - 1) +
               cc->op[i] + 1;
    return (cc->in[i] + cc->pb[i] + cc->pe[i] - cc->d[i] * (cc->k[i] - 1) - 1) / cc->s[i] + 1;
}

/* Direct evaluation in double, as 3-d with unit leading dims. conv sums
 * over input positions feeding each output; deconv scatters each input. */
static void direct(const conv_case *cc, const float *x, const float *W, const float *b, float *y)
{
    int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1},
            p[3] = {0, 0, 0}, out[3] = {1, 1, 1};
    for (int i = 0; i < cc->nk; i++) {
        int j = 3 - cc->nk + i;
        in[j] = cc->in[i];
        k[j] = cc->k[i];
        s[j] = cc->s[i];
        d[j] = cc->d[i];
        p[j] = cc->pb[i];
        out[j] = out_dim(cc, i);
    }
    int64_t Cg = cc->C / cc->G, Fg = cc->F / cc->G, osz = out[0] * out[1] * out[2];
    int64_t isz = in[0] * in[1] * in[2], ksz = k[0] * k[1] * k[2];
    double *acc = calloc((size_t)(cc->N * cc->F * osz), sizeof(double));
    assert_non_null(acc);
    for (int64_t n = 0; n < cc->N; n++)
        for (int64_t g = 0; g < cc->G; g++)
            for (int64_t f = 0; f < Fg; f++)
                for (int64_t c = 0; c < Cg; c++)
                    for (int64_t q = 0; q < ksz; q++) {
                        int64_t qd = q / (k[1] * k[2]), qh = q / k[2] % k[1], qw = q % k[2];
                        int64_t ci = g * Cg + c, fi = g * Fg + f;
                        double w =
                            cc->deconv ? W[(ci * Fg + f) * ksz + q] : W[(fi * Cg + c) * ksz + q];
                        /* Pair every input position with every output
                         * position it connects to through tap q. */
                        for (int64_t i = 0; i < isz; i++) {
                            int64_t id = i / (in[1] * in[2]), ih = i / in[2] % in[1],
                                    iw = i % in[2];
                            int64_t od, oh, ow;
                            if (cc->deconv) {
                                od = id * s[0] - p[0] + qd * d[0];
                                oh = ih * s[1] - p[1] + qh * d[1];
                                ow = iw * s[2] - p[2] + qw * d[2];
                            } else {
                                /* i = o·s − p + q·d  =>  o = (i + p − q·d) / s */
                                int64_t td = id + p[0] - qd * d[0], th = ih + p[1] - qh * d[1],
                                        tw = iw + p[2] - qw * d[2];
                                if (td % s[0] || th % s[1] || tw % s[2])
                                    continue;
                                od = td / s[0];
                                oh = th / s[1];
                                ow = tw / s[2];
                            }
                            if (od < 0 || od >= out[0] || oh < 0 || oh >= out[1] || ow < 0 ||
                                ow >= out[2])
                                continue;
                            acc[(n * cc->F + fi) * osz + (od * out[1] + oh) * out[2] + ow] +=
                                w * x[(n * cc->C + ci) * isz + i];
                        }
                    }
    for (int64_t n = 0; n < cc->N; n++)
        for (int64_t f = 0; f < cc->F; f++)
            for (int64_t o = 0; o < osz; o++)
                y[(n * cc->F + f) * osz + o] =
                    (float)(acc[(n * cc->F + f) * osz + o] + (b ? b[f] : 0.0));
    free(acc);
}

static void check_case(const conv_case *cc)
{
    ntp_shape xs = {cc->nk + 2, {cc->N, cc->C}}, ys = {cc->nk + 2, {cc->N, cc->F}};
    ntp_shape ws = {cc->nk + 2,
                    {cc->deconv ? cc->C : cc->F, cc->deconv ? cc->F / cc->G : cc->C / cc->G}};
    for (int i = 0; i < cc->nk; i++) {
        xs.dim[2 + i] = cc->in[i];
        ys.dim[2 + i] = out_dim(cc, i);
        ws.dim[2 + i] = cc->k[i];
    }
    int64_t nx = ntp_shape_numel(&xs), ny = ntp_shape_numel(&ys), nw = ntp_shape_numel(&ws);
    float *x = malloc(sizeof(float) * (size_t)nx), *W = malloc(sizeof(float) * (size_t)nw);
    float *want = malloc(sizeof(float) * (size_t)ny), b[64];
    assert_true(x && W && want && cc->F <= 64);
    rh_fill(x, nx, 1);
    rh_fill(W, nw, 2);
    rh_fill(b, cc->F, 3);
    direct(cc, x, W, b, want);
    int64_t pads[6];
    for (int i = 0; i < cc->nk; i++) {
        pads[i] = cc->pb[i];
        pads[cc->nk + i] = cc->pe[i];
    }
    rh_case c;
    rh_init(&c, cc->deconv ? NTP_OP_DECONV : NTP_OP_CONV);
    c.node.a.filters = cc->F;
    c.node.a.groups = cc->G;
    rh_spatial(&c, cc->nk, cc->k, cc->s, cc->d, pads);
    for (int i = 0; i < cc->nk; i++)
        c.node.a.output_padding[i] = cc->op[i];
    rh_in(&c, xs, x);
    rh_w(&c, ws, W);
    rh_w(&c, RH_SHAPE(cc->F), b);
    float *y = rh_out(&c, ys);
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, ny, 1e-5f);
    rh_free(&c);
    free(x);
    free(W);
    free(want);
}

static void test_conv_vs_direct(void **state)
{
    (void)state;
    const conv_case cases[] = {
        /* 2-d: groups 2, stride (2,1), dilation (1,2), pads (1,0 | 2,1). */
        {2, 2, 6, 4, 2, {7, 9}, {3, 2}, {2, 1}, {1, 2}, {1, 0}, {2, 1}, {0}, false},
        /* Pointwise (no im2col) with 3 groups. */
        {2, 1, 6, 9, 3, {5, 4}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, {0}, false},
        /* 1x1 with stride: im2col again. */
        {2, 1, 4, 5, 1, {6, 5}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, {0}, false},
        /* 3-d with asymmetric padding and stride. */
        {3,
         1,
         2,
         3,
         1,
         {4, 5, 3},
         {2, 3, 2},
         {1, 2, 1},
         {1, 1, 2},
         {1, 0, 1},
         {1, 1, 0},
         {0},
         false},
        /* 1-d, wide: the GEMM's N dimension over one 64-column tile. */
        {1, 1, 3, 5, 1, {150}, {5}, {1}, {1}, {2}, {2}, {0}, false},
        /* deconv 2-d: stride 2, dilation, pads, output_padding, groups. */
        {2, 2, 4, 6, 2, {4, 3}, {3, 2}, {2, 2}, {1, 2}, {1, 0}, {0, 1}, {1, 1}, true},
        /* deconv 3-d. */
        {3,
         1,
         2,
         2,
         1,
         {2, 3, 2},
         {2, 2, 3},
         {2, 1, 2},
         {1, 1, 1},
         {1, 1, 1},
         {1, 0, 0},
         {1, 0, 1},
         true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(&cases[i]);
}

static void test_conv_bad_weight(void **state)
{
    (void)state;
    float x[4] = {0}, W[3] = {0};
    const int64_t k[1] = {2};
    rh_case c;
    rh_init(&c, NTP_OP_CONV);
    c.node.a.filters = 1;
    c.node.a.bias = false;
    rh_spatial(&c, 1, k, NULL, NULL, NULL);
    rh_in(&c, RH_SHAPE(1, 1, 4), x);
    rh_w(&c, RH_SHAPE(1, 1, 3), W);
    rh_out(&c, RH_SHAPE(1, 1, 3));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_SHAPE_ERROR);
    assert_non_null(strstr(ntp_ctx_errmsg(test_ctx), "weight 0"));
    rh_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv1d_stride_asymmetric_pad),
        cmocka_unit_test(test_conv1d_dilation),
        cmocka_unit_test(test_conv2d_stride_pad),
        cmocka_unit_test(test_conv_groups),
        cmocka_unit_test(test_conv_depthwise),
        cmocka_unit_test(test_deconv_output_padding),
        cmocka_unit_test(test_deconv_padding),
        cmocka_unit_test(test_deconv2d_groups),
        cmocka_unit_test(test_conv_vs_direct),
        cmocka_unit_test(test_conv_bad_weight),
    };
    return cmocka_run_group_tests(tests, test_ctx_setup, test_ctx_teardown);
}
