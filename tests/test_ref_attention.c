/* Multi-head attention against torch.nn.MultiheadAttention: N=2, S=3, D=4,
 * 2 heads; self-attention with and without a causal mask, and attention
 * with separate key and value inputs (S_kv=4) and no biases.
 *
 * The expected values were computed once with PyTorch 1.13 (float64,
 * batch_first=True, attn_mask = the strict upper triangle) and pasted here.
 * Inputs are 4·rh_fill() (seeds 1, 6, 7), weights rh_fill(): in_proj seed 2,
 * in_bias 3, out_proj 4, out_bias 5. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "support/ctx.h"
#include "support/ref-harness.h"

static const float x_in[24] = {-1.75f, -1.0f,  -0.25f, 0.5f,   1.25f,  2.0f,  -1.5f, -0.75f,
                               0.0f,   0.75f,  1.5f,   -2.0f,  -1.25f, -0.5f, 0.25f, 1.0f,
                               1.75f,  -1.75f, -1.0f,  -0.25f, 0.5f,   1.25f, 2.0f,  -1.5f};
static const float self_causal[24] = {
    0.0068359375f,  -0.619140625f, -0.498046875f, 0.502929688f,  -0.322148982f, 0.0143257551f,
    0.265581727f,   0.220680647f,  -0.320505064f, -0.447047213f, 0.31604601f,   0.295012644f,
    -0.0830078125f, -0.556640625f, -0.3828125f,   0.405273438f,  0.153763202f,  -0.0978990885f,
    -0.370166353f,  0.801395011f,  -0.252142092f, -0.513487188f, 0.173974918f,  0.356482728f};
static const float self_full[24] = {
    -0.470168381f, -0.159236939f, 0.4473285f,    0.219604052f,  -0.464394194f, -0.240955438f,
    0.680778508f,  0.162061988f,  -0.320505064f, -0.447047213f, 0.31604601f,   0.295012644f,
    -0.152036415f, -0.251167471f, 0.0387423359f, 0.494295035f,  -0.258158568f, -0.368018423f,
    0.495582864f,  0.491561626f,  -0.252142092f, -0.513487188f, 0.173974918f,  0.356482728f};
static const float k_in[32] = {-0.5f,  0.25f, 1.0f,  1.75f,  -1.75f, -1.0f,  -0.25f, 0.5f,
                               1.25f,  2.0f,  -1.5f, -0.75f, 0.0f,   0.75f,  1.5f,   -2.0f,
                               -1.25f, -0.5f, 0.25f, 1.0f,   1.75f,  -1.75f, -1.0f,  -0.25f,
                               0.5f,   1.25f, 2.0f,  -1.5f,  -0.75f, 0.0f,   0.75f,  1.5f};
static const float v_in[32] = {-0.25f, 0.5f,   1.25f,  2.0f,   -1.5f, -0.75f, 0.0f,   0.75f,
                               1.5f,   -2.0f,  -1.25f, -0.5f,  0.25f, 1.0f,   1.75f,  -1.75f,
                               -1.0f,  -0.25f, 0.5f,   1.25f,  2.0f,  -1.5f,  -0.75f, 0.0f,
                               0.75f,  1.5f,   -2.0f,  -1.25f, -0.5f, 0.25f,  1.0f,   1.75f};
static const float cross_nobias[24] = {
    0.107431505f,     -0.185860184f,   -0.149584955f, 0.075733064f,  0.162732393f,
    -0.214694223f,    -0.0677943965f,  0.15978343f,   0.0441628318f, -0.328936676f,
    -0.150124489f,    -0.0207508927f,  0.0954664279f, 0.165862805f,  -0.249246706f,
    0.0821248702f,    -0.0267057702f,  0.50247484f,   0.0287216445f, 0.0674437326f,
    -0.000198044347f, -0.00788915312f, -0.215340132f, -0.0623047673f};

enum { N = 2, S = 3, SKV = 4, D = 4 };

static void fill4(float *v, int n, int seed)
{
    rh_fill(v, n, seed);
    for (int i = 0; i < n; i++)
        v[i] *= 4.0f;
}

static void check(bool causal, bool cross, bool bias, const float *want)
{
    float x[N * S * D], k[N * SKV * D], v[N * SKV * D];
    float in_proj[3 * D * D], in_bias[3 * D], out_proj[D * D], out_bias[D];
    fill4(x, N * S * D, 1);
    rh_expect(x, x_in, N * S * D, 0.0f);
    fill4(k, N * SKV * D, 6);
    fill4(v, N * SKV * D, 7);
    rh_expect(k, k_in, N * SKV * D, 0.0f);
    rh_expect(v, v_in, N * SKV * D, 0.0f);
    rh_fill(in_proj, 3 * D * D, 2);
    rh_fill(in_bias, 3 * D, 3);
    rh_fill(out_proj, D * D, 4);
    rh_fill(out_bias, D, 5);
    rh_case c;
    rh_init(&c, NTP_OP_ATTENTION);
    c.node.a.heads = 2;
    c.node.a.causal = causal;
    c.node.a.bias = bias;
    rh_in(&c, RH_SHAPE(N, S, D), x);
    if (cross) {
        rh_in(&c, RH_SHAPE(N, SKV, D), k);
        rh_in(&c, RH_SHAPE(N, SKV, D), v);
    }
    rh_w(&c, RH_SHAPE(3 * D, D), in_proj);
    if (bias)
        rh_w(&c, RH_SHAPE(3 * D), in_bias);
    rh_w(&c, RH_SHAPE(D, D), out_proj);
    if (bias)
        rh_w(&c, RH_SHAPE(D), out_bias);
    float *y = rh_out(&c, RH_SHAPE(N, S, D));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, N * S * D, 2e-6f);
    rh_free(&c);
}

static void test_self_attention_causal(void **state)
{
    (void)state;
    check(true, false, true, self_causal);
}

static void test_self_attention_full(void **state)
{
    (void)state;
    check(false, false, true, self_full);
}

static void test_cross_attention_no_bias(void **state)
{
    (void)state;
    check(false, true, false, cross_nobias);
}

static void test_causal_mask_matters(void **state)
{
    (void)state;
    /* The first query of each batch sees only itself under the mask, so it
     * must differ from the unmasked result; the last query sees every key
     * either way, so those rows agree. */
    assert_true(fabsf(self_causal[0] - self_full[0]) > 0.1f);
    for (int n = 0; n < N; n++)
        rh_expect(self_causal + (n * S + S - 1) * D, self_full + (n * S + S - 1) * D, D, 1e-6f);
}

static void test_heads_must_divide(void **state)
{
    (void)state;
    float x[N * S * D] = {0}, in_proj[3 * D * D] = {0}, out_proj[D * D] = {0};
    rh_case c;
    rh_init(&c, NTP_OP_ATTENTION);
    c.node.a.heads = 3;
    c.node.a.bias = false;
    rh_in(&c, RH_SHAPE(N, S, D), x);
    rh_w(&c, RH_SHAPE(3 * D, D), in_proj);
    rh_w(&c, RH_SHAPE(D, D), out_proj);
    rh_out(&c, RH_SHAPE(N, S, D));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_SHAPE_ERROR);
    assert_non_null(strstr(ntp_ctx_errmsg(test_ctx), "3 heads"));
    rh_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self_attention_causal),   cmocka_unit_test(test_self_attention_full),
        cmocka_unit_test(test_cross_attention_no_bias), cmocka_unit_test(test_causal_mask_matters),
        cmocka_unit_test(test_heads_must_divide),
    };
    return cmocka_run_group_tests(tests, test_ctx_setup, test_ctx_teardown);
}
