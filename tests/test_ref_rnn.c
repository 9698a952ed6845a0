/* LSTM, GRU and vanilla RNN (uni-, reverse- and bidirectional, concat and
 * sum merge, full sequence and last step) on a small case: T=3, N=2, I=3,
 * H=2, with inputs and ONNX-ordered weights from rh_fill().
 *
 * The expected values were computed once with PyTorch 1.13 (torch.nn.LSTM,
 * GRU, RNN in float64) and pasted here. PyTorch orders LSTM gates i, f, g, o
 * and GRU gates r, z, n, so the script permuted the ONNX rows (i, o, f, c
 * and z, r, h) into PyTorch's order; a reverse-only layer was computed as a
 * forward layer on the time-flipped input, flipped back. The input x_in
 * below is rh_fill(x, 18, 1), kept as a check on the generator. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "support/ctx.h"
#include "support/ref-harness.h"

static const float x_in[18] = {-0.4375f, -0.25f,   -0.0625f, 0.125f,  0.3125f, 0.5f,
                               -0.375f,  -0.1875f, 0.0f,     0.1875f, 0.375f,  -0.5f,
                               -0.3125f, -0.125f,  0.0625f,  0.25f,   0.4375f, -0.4375f};
static const float lstm_fwd_full[12] = {
    0.0316760553f,   0.0954117154f, 0.0239278045f, 0.0455346176f, 0.0477902686f,   0.132873911f,
    0.000957310429f, 0.209754254f,  0.0560756232f, 0.146154206f,  -0.00953913219f, 0.290099692f};
static const float lstm_bi_concat_full[24] = {
    0.0316760553f,   0.0954117154f,  -0.142556665f,   0.106345771f,   0.0239278045f,
    0.0455346176f,   -0.0589504974f, -0.0336332405f,  0.0477902686f,  0.132873911f,
    -0.116980138f,   0.0738532239f,  0.000957310429f, 0.209754254f,   -0.107741704f,
    -0.0331462667f,  0.0560756232f,  0.146154206f,    -0.0757898106f, 0.0386499299f,
    -0.00953913219f, 0.290099692f,   -0.072798234f,   -0.0262715573f};
static const float lstm_bi_concat_last[8] = {0.0560756232f,  0.146154206f,    -0.142556665f,
                                             0.106345771f,   -0.00953913219f, 0.290099692f,
                                             -0.0589504974f, -0.0336332405f};
static const float lstm_rev_full[12] = {0.0585040664f, 0.149841829f,  0.0120808641f,  0.15943502f,
                                        0.0473335866f, 0.128369376f,  -0.0161577025f, 0.271151192f,
                                        0.0298543216f, 0.0860650533f, -0.0107894058f, 0.169378625f};
static const float lstm_rev_last[4] = {0.0585040664f, 0.149841829f, 0.0120808641f, 0.15943502f};
static const float gru_bi_sum_full[12] = {
    -0.442077862f, -0.652875878f, -0.439583137f, -0.532001315f, -0.305339695f, -0.766465963f,
    -0.497419127f, -0.348732983f, -0.126732443f, -0.724768419f, -0.317344192f, -0.283289682f};
static const float gru_bi_sum_last[4] = {-0.430281586f, -0.790328996f, -0.526901063f,
                                         -0.386290971f};
static const float gru_fwd_nobias_last[4] = {0.069908401f, -0.146254956f, -0.0988300003f,
                                             0.248152476f};
static const float rnn_tanh_rev_full[12] = {
    0.0587270923f, 0.140929103f, -0.233430478f, 0.284134613f, 0.0317882263f, 0.137671463f,
    -0.243302062f, 0.667021866f, 0.0156237286f, 0.112799159f, -0.2920274f,   0.5913162f};
static const float rnn_relu_fwd_full[12] = {0.0859375f,    0.10546875f,  0.0f, 0.140625f,
                                            0.0107421875f, 0.141113281f, 0.0f, 0.7109375f,
                                            0.0f,          0.149230957f, 0.0f, 0.857421875f};
static const float rnn_tanh_bi_concat_full[24] = {
    0.0857265663f, 0.105079416f,  0.769535471f,  -0.60685761f,  -0.226473107f,   0.139705303f,
    0.337446506f,  -0.445116768f, 0.0108563445f, 0.140075675f,  0.688139462f,    -0.552146692f,
    -0.209181574f, 0.602175275f,  0.208124031f,  0.0125055378f, -0.00527701799f, 0.147886211f,
    0.405060115f,  -0.48931268f,  -0.301059155f, 0.673519771f,  0.151176027f,    0.0701968573f};

enum { T = 3, N = 2, I = 3, H = 2 };

/* Run op with the given direction/merge/sequence on x_in and weights
 * W = rh_fill(seed 2), R = rh_fill(seed 3), B = rh_fill(seed 4). */
static void check(ntp_op op, int direction, int merge, bool last, int act, bool bias,
                  const float *want, int64_t n_want)
{
    int64_t G = op == NTP_OP_LSTM ? 4 : op == NTP_OP_GRU ? 3 : 1;
    int64_t dirs = direction == NTP_DIR_BIDIRECTIONAL ? 2 : 1;
    int64_t width = dirs == 2 && merge == NTP_MERGE_CONCAT ? 2 * H : H;
    float x[T * N * I], W[2 * 4 * H * I], R[2 * 4 * H * H], B[2 * 8 * H];
    rh_fill(x, T * N * I, 1);
    rh_expect(x, x_in, T * N * I, 0.0f);
    rh_fill(W, dirs * G * H * I, 2);
    rh_fill(R, dirs * G * H * H, 3);
    rh_fill(B, dirs * 2 * G * H, 4);
    rh_case c;
    rh_init(&c, op);
    c.node.a.units = H;
    c.node.a.direction = direction;
    c.node.a.merge = merge;
    c.node.a.last_step = last;
    c.node.a.rnn_act = act;
    c.node.a.bias = bias;
    rh_in(&c, RH_SHAPE(T, N, I), x);
    rh_w(&c, RH_SHAPE(dirs, G * H, I), W);
    rh_w(&c, RH_SHAPE(dirs, G * H, H), R);
    if (bias)
        rh_w(&c, RH_SHAPE(dirs, 2 * G * H), B);
    float *y = last ? rh_out(&c, RH_SHAPE(N, width)) : rh_out(&c, RH_SHAPE(T, N, width));
    assert_int_equal(n_want, last ? N * width : T * N * width);
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, n_want, 2e-6f);
    rh_free(&c);
}

#define CHECK(op, dir, merge, last, act, bias, want) \
    check(op, dir, merge, last, act, bias, want, (int64_t)(sizeof want / sizeof want[0]))

static void test_lstm_forward(void **state)
{
    (void)state;
    CHECK(NTP_OP_LSTM, NTP_DIR_FORWARD, NTP_MERGE_CONCAT, false, 0, true, lstm_fwd_full);
}

static void test_lstm_bidirectional_concat(void **state)
{
    (void)state;
    CHECK(NTP_OP_LSTM, NTP_DIR_BIDIRECTIONAL, NTP_MERGE_CONCAT, false, 0, true,
          lstm_bi_concat_full);
    /* Last: the forward state after step 2 and the backward state after
     * step 0, side by side. */
    CHECK(NTP_OP_LSTM, NTP_DIR_BIDIRECTIONAL, NTP_MERGE_CONCAT, true, 0, true, lstm_bi_concat_last);
}

static void test_lstm_reverse(void **state)
{
    (void)state;
    CHECK(NTP_OP_LSTM, NTP_DIR_REVERSE, NTP_MERGE_CONCAT, false, 0, true, lstm_rev_full);
    /* A reverse layer's "last" is its output at step 0. */
    CHECK(NTP_OP_LSTM, NTP_DIR_REVERSE, NTP_MERGE_CONCAT, true, 0, true, lstm_rev_last);
    assert_memory_equal(lstm_rev_last, lstm_rev_full, sizeof lstm_rev_last);
}

static void test_gru_bidirectional_sum(void **state)
{
    (void)state;
    CHECK(NTP_OP_GRU, NTP_DIR_BIDIRECTIONAL, NTP_MERGE_SUM, false, 0, true, gru_bi_sum_full);
    CHECK(NTP_OP_GRU, NTP_DIR_BIDIRECTIONAL, NTP_MERGE_SUM, true, 0, true, gru_bi_sum_last);
}

static void test_gru_no_bias(void **state)
{
    (void)state;
    CHECK(NTP_OP_GRU, NTP_DIR_FORWARD, NTP_MERGE_CONCAT, true, 0, false, gru_fwd_nobias_last);
}

static void test_rnn(void **state)
{
    (void)state;
    CHECK(NTP_OP_RNN, NTP_DIR_REVERSE, NTP_MERGE_CONCAT, false, NTP_RNN_ACT_TANH, true,
          rnn_tanh_rev_full);
    CHECK(NTP_OP_RNN, NTP_DIR_FORWARD, NTP_MERGE_CONCAT, false, NTP_RNN_ACT_RELU, true,
          rnn_relu_fwd_full);
    CHECK(NTP_OP_RNN, NTP_DIR_BIDIRECTIONAL, NTP_MERGE_CONCAT, false, NTP_RNN_ACT_TANH, true,
          rnn_tanh_bi_concat_full);
}

static void test_rnn_workspace_checked(void **state)
{
    (void)state;
    /* A workspace smaller than asked for is refused, not overrun. */
    float x[T * N * I] = {0}, W[4 * H * I] = {0}, R[4 * H * H] = {0};
    rh_case c;
    rh_init(&c, NTP_OP_LSTM);
    c.node.a.units = H;
    c.node.a.bias = false;
    rh_in(&c, RH_SHAPE(T, N, I), x);
    rh_w(&c, RH_SHAPE(1, 4 * H, I), W);
    rh_w(&c, RH_SHAPE(1, 4 * H, H), R);
    rh_out(&c, RH_SHAPE(T, N, H));
    size_t need = ntp__ref_workspace(&c.k);
    /* T·N·4H + N·4H + 2·N·H floats. */
    assert_int_equal(need, (size_t)(T * N * 4 * H + N * 4 * H + 2 * N * H) * sizeof(float));
    float ws[64];
    c.k.workspace = ws;
    c.k.workspace_bytes = need - 4;
    assert_int_equal(ntp__ref_run(test_ctx, &c.k), NTP_STATUS_INTERNAL);
    assert_non_null(strstr(ntp_ctx_errmsg(test_ctx), "workspace"));
    c.k.workspace = NULL;
    rh_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lstm_forward),
        cmocka_unit_test(test_lstm_bidirectional_concat),
        cmocka_unit_test(test_lstm_reverse),
        cmocka_unit_test(test_gru_bidirectional_sum),
        cmocka_unit_test(test_gru_no_bias),
        cmocka_unit_test(test_rnn),
        cmocka_unit_test(test_rnn_workspace_checked),
    };
    return cmocka_run_group_tests(tests, test_ctx_setup, test_ctx_teardown);
}
