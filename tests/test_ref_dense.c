/* Reference fc and matmul on hand-computed cases, and the blocked GEMM
 * against a naive triple loop written here (every transpose, alpha/beta,
 * and sizes that leave partial blocks in every dimension). */
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

static void test_fc_bias(void **state)
{
    (void)state;
    /* y = x·Wᵀ + b:
     *   [1 2 3]·[1 0 -1] + 10 = 1 - 3 + 10 = 8;  [1 2 3]·[.5 .5 .5] - 1 = 2
     *   [4 5 6]·[1 0 -1] + 10 = 8;               [4 5 6]·[.5 .5 .5] - 1 = 6.5 */
    const float x[6] = {1, 2, 3, 4, 5, 6};
    const float W[6] = {1, 0, -1, 0.5f, 0.5f, 0.5f};
    const float b[2] = {10, -1};
    const float want[4] = {8, 2, 8, 6.5f};
    rh_case c;
    rh_init(&c, NTP_OP_FC);
    c.node.a.units = 2;
    rh_in(&c, RH_SHAPE(2, 3), x);
    rh_w(&c, RH_SHAPE(2, 3), W);
    rh_w(&c, RH_SHAPE(2), b);
    float *y = rh_out(&c, RH_SHAPE(2, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 4, 0.0f);
    rh_free(&c);
}

static void test_fc_no_bias_rank3(void **state)
{
    (void)state;
    /* [1, 2, 3] input: rows = 2, the leading dims are kept. */
    const float x[6] = {1, 2, 3, 4, 5, 6};
    const float W[6] = {1, 0, -1, 0.5f, 0.5f, 0.5f};
    const float want[4] = {-2, 3, -2, 7.5f};
    rh_case c;
    rh_init(&c, NTP_OP_FC);
    c.node.a.units = 2;
    c.node.a.bias = false;
    rh_in(&c, RH_SHAPE(1, 2, 3), x);
    rh_w(&c, RH_SHAPE(2, 3), W);
    float *y = rh_out(&c, RH_SHAPE(1, 2, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 4, 0.0f);
    rh_free(&c);
}

static void test_fc_wrong_weight(void **state)
{
    (void)state;
    float x[6] = {0}, W[4] = {0};
    rh_case c;
    rh_init(&c, NTP_OP_FC);
    c.node.a.units = 2;
    c.node.a.bias = false;
    rh_in(&c, RH_SHAPE(2, 3), x);
    rh_w(&c, RH_SHAPE(2, 2), W);
    rh_out(&c, RH_SHAPE(2, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_SHAPE_ERROR);
    assert_non_null(strstr(ntp_ctx_errmsg(test_ctx), "name='layer'"));
    rh_free(&c);
}

static void test_matmul_broadcast(void **state)
{
    (void)state;
    /* A [2,1,2,2]: identity, then the row swap; B [3,2,2]: [[j+1, 2], [3, 4]].
     * out [2,3,2,2]: out[0][j] = B[j], out[1][j] = B[j] with rows swapped. */
    const float A[8] = {1, 0, 0, 1, 0, 1, 1, 0};
    float B[12];
    for (int j = 0; j < 3; j++) {
        B[4 * j + 0] = (float)(j + 1);
        B[4 * j + 1] = 2;
        B[4 * j + 2] = 3;
        B[4 * j + 3] = 4;
    }
    float want[24];
    for (int j = 0; j < 3; j++) {
        memcpy(want + 4 * j, B + 4 * j, 4 * sizeof(float));
        want[12 + 4 * j + 0] = 3;
        want[12 + 4 * j + 1] = 4;
        want[12 + 4 * j + 2] = (float)(j + 1);
        want[12 + 4 * j + 3] = 2;
    }
    rh_case c;
    rh_init(&c, NTP_OP_MATMUL);
    rh_in(&c, RH_SHAPE(2, 1, 2, 2), A);
    rh_in(&c, RH_SHAPE(3, 2, 2), B);
    float *y = rh_out(&c, RH_SHAPE(2, 3, 2, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 24, 0.0f);
    rh_free(&c);
}

static void test_matmul_transpose_a(void **state)
{
    (void)state;
    /* Aᵀ [3,2] · I [2,2] = Aᵀ. */
    const float A[6] = {1, 2, 3, 4, 5, 6}, I[4] = {1, 0, 0, 1};
    const float want[6] = {1, 4, 2, 5, 3, 6};
    rh_case c;
    rh_init(&c, NTP_OP_MATMUL);
    c.node.a.transpose_a = true;
    rh_in(&c, RH_SHAPE(2, 3), A);
    rh_in(&c, RH_SHAPE(2, 2), I);
    float *y = rh_out(&c, RH_SHAPE(3, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 6, 0.0f);
    rh_free(&c);
}

static void test_matmul_transpose_b(void **state)
{
    (void)state;
    /* [1 2] · [[1 1], [2 0], [0 3]]ᵀ = [1+2, 2+0, 0+6]. */
    const float A[2] = {1, 2}, B[6] = {1, 1, 2, 0, 0, 3};
    const float want[3] = {3, 2, 6};
    rh_case c;
    rh_init(&c, NTP_OP_MATMUL);
    c.node.a.transpose_b = true;
    rh_in(&c, RH_SHAPE(1, 2), A);
    rh_in(&c, RH_SHAPE(3, 2), B);
    float *y = rh_out(&c, RH_SHAPE(1, 3));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 3, 0.0f);
    rh_free(&c);
}

/* The plain definition, in double. */
static void naive_gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *a, int lda,
                       const float *b, int ldb, float beta, const float *c0, float *c, int ldc)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int q = 0; q < k; q++) {
                double av = ta ? a[q * lda + i] : a[i * lda + q];
                double bv = tb ? b[j * ldb + q] : b[q * ldb + j];
                s += av * bv;
            }
            c[i * ldc + j] = (float)(alpha * s + (beta == 0.0f ? 0.0 : beta * c0[i * ldc + j]));
        }
}

static void check_gemm(bool ta, bool tb, int m, int n, int k, float alpha, float beta)
{
    int lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 5;
    int arows = ta ? k : m, brows = tb ? n : k;
    float *a = malloc(sizeof(float) * (size_t)(arows * lda));
    float *b = malloc(sizeof(float) * (size_t)(brows * ldb));
    float *c = malloc(sizeof(float) * (size_t)(m * ldc));
    float *c0 = malloc(sizeof(float) * (size_t)(m * ldc));
    float *want = malloc(sizeof(float) * (size_t)(m * ldc));
    assert_true(a && b && c && c0 && want);
    rh_fill(a, arows * lda, 3);
    rh_fill(b, brows * ldb, 5);
    rh_fill(c0, m * ldc, 7);
    if (beta == 0.0f)
        for (int i = 0; i < m * ldc; i++)
            c0[i] = NAN; /* beta = 0 must not read C */
    memcpy(c, c0, sizeof(float) * (size_t)(m * ldc));
    memcpy(want, c0, sizeof(float) * (size_t)(m * ldc));
    naive_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c0, want, ldc);
    ntp__ref_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    for (int i = 0; i < m; i++) {
        rh_expect(c + i * ldc, want + i * ldc, n, 1e-5f);
        /* The padding between rows is not C: untouched. */
        for (int j = n; j < ldc && i + 1 < m; j++)
            assert_memory_equal(&c[i * ldc + j], &c0[i * ldc + j], sizeof(float));
    }
    free(a);
    free(b);
    free(c);
    free(c0);
    free(want);
}

static void test_gemm_vs_naive(void **state)
{
    (void)state;
    /* m, n, k not multiples of the 4 x 64 x 128 blocking, and over one
     * block in each dimension; m < 4 takes the dot-product path when B is
     * transposed. */
    const int sizes[][3] = {{7, 70, 300}, {1, 5, 3}, {3, 130, 129}, {9, 64, 128}, {4, 1, 1}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int t = 0; t < 4; t++) {
            check_gemm(t & 1, t & 2, sizes[s][0], sizes[s][1], sizes[s][2], 1.0f, 0.0f);
            check_gemm(t & 1, t & 2, sizes[s][0], sizes[s][1], sizes[s][2], 0.5f, 1.0f);
            check_gemm(t & 1, t & 2, sizes[s][0], sizes[s][1], sizes[s][2], -2.0f, 0.25f);
        }
}

static void test_gemm_k_order(void **state)
{
    (void)state;
    /* The blocked path adds products in k order, like the naive loop in
     * f32: 1e8 + 1 - 1e8 = 0 in f32 (1 is lost), where a reordered sum
     * could give 1. */
    const float a[4 * 3] = {1e8f, 1, -1e8f, 1e8f, 1, -1e8f, 1e8f, 1, -1e8f, 1e8f, 1, -1e8f};
    const float b[3] = {1, 1, 1};
    float c[4];
    ntp__ref_gemm(false, false, 4, 1, 3, 1.0f, a, 3, b, 1, 0.0f, c, 1);
    for (int i = 0; i < 4; i++)
        assert_true(c[i] == 0.0f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fc_bias),
        cmocka_unit_test(test_fc_no_bias_rank3),
        cmocka_unit_test(test_fc_wrong_weight),
        cmocka_unit_test(test_matmul_broadcast),
        cmocka_unit_test(test_matmul_transpose_a),
        cmocka_unit_test(test_matmul_transpose_b),
        cmocka_unit_test(test_gemm_vs_naive),
        cmocka_unit_test(test_gemm_k_order),
    };
    return cmocka_run_group_tests(tests, test_ctx_setup, test_ctx_teardown);
}
