/* Reference data-movement ops on hand-computed cases: concat, split,
 * transpose, pad (constant, reflect, edge), reshape / flatten / memcpy,
 * embedding (i32 and i64 indices, out-of-range error) and convert (dtype
 * rounding, integer casts, NCHW <-> NHWC). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "support/ctx.h"
#include "support/ref-harness.h"

static void test_concat(void **state)
{
    (void)state;
    /* [2,1] ++ [2,2] along axis 1 -> rows [a0 b00 b01], [a1 b10 b11]. */
    const float a[2] = {1, 2}, b[4] = {10, 11, 20, 21};
    const float want[6] = {1, 10, 11, 2, 20, 21};
    rh_case c;
    rh_init(&c, NTP_OP_CONCAT);
    c.node.a.axis = 1;
    rh_in(&c, RH_SHAPE(2, 1), a);
    rh_in(&c, RH_SHAPE(2, 2), b);
    float *y = rh_out(&c, RH_SHAPE(2, 3));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 6, 0.0f);
    rh_free(&c);

    /* Three inputs along axis 0, negative axis form -2 on rank 2. */
    const float p[2] = {1, 2}, q[4] = {3, 4, 5, 6}, r[2] = {7, 8};
    const float want0[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    rh_init(&c, NTP_OP_CONCAT);
    c.node.a.axis = -2;
    rh_in(&c, RH_SHAPE(1, 2), p);
    rh_in(&c, RH_SHAPE(2, 2), q);
    rh_in(&c, RH_SHAPE(1, 2), r);
    y = rh_out(&c, RH_SHAPE(4, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want0, 8, 0.0f);
    rh_free(&c);
}

static void test_split(void **state)
{
    (void)state;
    /* [2,5] of 0..9 split along axis 1 into sizes 2 and 3. */
    float x[10];
    for (int i = 0; i < 10; i++)
        x[i] = (float)i;
    const float w0[4] = {0, 1, 5, 6}, w1[6] = {2, 3, 4, 7, 8, 9};
    rh_case c;
    rh_init(&c, NTP_OP_SPLIT);
    c.node.a.axis = 1;
    c.node.a.n_sizes = 2;
    c.node.a.sizes[0] = 2;
    c.node.a.sizes[1] = 3;
    rh_in(&c, RH_SHAPE(2, 5), x);
    float *y0 = rh_out(&c, RH_SHAPE(2, 2));
    float *y1 = rh_out(&c, RH_SHAPE(2, 3));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y0, w0, 4, 0.0f);
    rh_expect(y1, w1, 6, 0.0f);
    rh_free(&c);
}

static void test_transpose(void **state)
{
    (void)state;
    /* x [2,3,4] with x[i][j][k] = 100i + 10j + k; perm (2,0,1) gives
     * y [4,2,3] with y[k][i][j] = x[i][j][k]. */
    float x[24], want[24];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) {
                x[(i * 3 + j) * 4 + k] = (float)(100 * i + 10 * j + k);
                want[(k * 2 + i) * 3 + j] = (float)(100 * i + 10 * j + k);
            }
    rh_case c;
    rh_init(&c, NTP_OP_TRANSPOSE);
    c.node.a.n_perm = 3;
    c.node.a.perm[0] = 2;
    c.node.a.perm[1] = 0;
    c.node.a.perm[2] = 1;
    rh_in(&c, RH_SHAPE(2, 3, 4), x);
    float *y = rh_out(&c, RH_SHAPE(4, 2, 3));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 24, 0.0f);
    rh_free(&c);

    /* Default perm reverses the dims: a plain matrix transpose. */
    const float m[6] = {1, 2, 3, 4, 5, 6}, mt[6] = {1, 4, 2, 5, 3, 6};
    rh_init(&c, NTP_OP_TRANSPOSE);
    rh_in(&c, RH_SHAPE(2, 3), m);
    y = rh_out(&c, RH_SHAPE(3, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, mt, 6, 0.0f);
    rh_free(&c);
}

static void pad_case(int mode, const float *want)
{
    /* x = [[1 2 3], [4 5 6]], pads: dim 0 one before, dim 1 two before and
     * one after -> [3, 6]. */
    const float x[6] = {1, 2, 3, 4, 5, 6};
    rh_case c;
    rh_init(&c, NTP_OP_PAD);
    c.node.a.n_pads = 4;
    c.node.a.pads[0] = 1; /* dim 0 begin */
    c.node.a.pads[1] = 2; /* dim 1 begin */
    c.node.a.pads[2] = 0; /* dim 0 end */
    c.node.a.pads[3] = 1; /* dim 1 end */
    c.node.a.pad_mode = mode;
    c.node.a.value = 9;
    rh_in(&c, RH_SHAPE(2, 3), x);
    float *y = rh_out(&c, RH_SHAPE(3, 6));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 18, 0.0f);
    rh_free(&c);
}

static void test_pad(void **state)
{
    (void)state;
    const float constant[18] = {9, 9, 9, 9, 9, 9, 9, 9, 1, 2, 3, 9, 9, 9, 4, 5, 6, 9};
    /* Reflect (no edge repeat): row −1 mirrors row 1; columns −2, −1 mirror
     * 2, 1 and column 3 mirrors 1. */
    const float reflect[18] = {6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5};
    /* Edge: the nearest element. */
    const float edge[18] = {1, 1, 1, 2, 3, 3, 1, 1, 1, 2, 3, 3, 4, 4, 4, 5, 6, 6};
    pad_case(NTP_PADMODE_CONSTANT, constant);
    pad_case(NTP_PADMODE_REFLECT, reflect);
    pad_case(NTP_PADMODE_EDGE, edge);
}

static void test_reshape_flatten_memcpy(void **state)
{
    (void)state;
    const float x[6] = {1, 2, 3, 4, 5, 6};
    const ntp_op ops[2] = {NTP_OP_RESHAPE, NTP_OP_FLATTEN};
    for (int i = 0; i < 2; i++) {
        rh_case c;
        rh_init(&c, ops[i]);
        rh_in(&c, RH_SHAPE(1, 2, 3), x);
        float *y = rh_out(&c, RH_SHAPE(3, 2));
        assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
        rh_expect(y, x, 6, 0.0f);
        rh_free(&c);
    }
    /* memcpy keeps integer data bit for bit. */
    const int32_t xi[3] = {7, -1, 2147483647};
    rh_case c;
    rh_init(&c, NTP_OP_MEMCPY);
    rh_in_typed(&c, RH_SHAPE(3), NTP_DTYPE_I32, xi);
    int32_t *yi = rh_out_typed(&c, RH_SHAPE(3), NTP_DTYPE_I32);
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(yi[i], xi[i]);
    rh_free(&c);
    /* Element counts must agree. */
    rh_init(&c, NTP_OP_RESHAPE);
    rh_in(&c, RH_SHAPE(6), x);
    rh_out(&c, RH_SHAPE(5));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_SHAPE_ERROR);
    rh_free(&c);
}

static void embedding_case(ntp_dtype it, const void *idx, ntp_status want_st, const float *want)
{
    /* table [4, 2]: row v = [10v, 10v + 1]; indices [2, 2]. */
    const float table[8] = {0, 1, 10, 11, 20, 21, 30, 31};
    rh_case c;
    rh_init(&c, NTP_OP_EMBEDDING);
    c.node.a.vocab = 4;
    c.node.a.units = 2;
    rh_in_typed(&c, RH_SHAPE(2, 2), it, idx);
    rh_w(&c, RH_SHAPE(4, 2), table);
    float *y = rh_out(&c, RH_SHAPE(2, 2, 2));
    assert_int_equal(rh_run(&c, test_ctx), want_st);
    if (want)
        rh_expect(y, want, 8, 0.0f);
    rh_free(&c);
}

static void test_embedding(void **state)
{
    (void)state;
    const int64_t i64[4] = {3, 0, 1, 1};
    const int32_t i32[4] = {3, 0, 1, 1};
    const float want[8] = {30, 31, 0, 1, 10, 11, 10, 11};
    embedding_case(NTP_DTYPE_I64, i64, NTP_STATUS_OK, want);
    embedding_case(NTP_DTYPE_I32, i32, NTP_STATUS_OK, want);
}

static void test_embedding_out_of_range(void **state)
{
    (void)state;
    /* Index 4 at position 2 is past the 4-row table: a status naming the
     * layer and the index, not a read past the table. */
    const int64_t bad[4] = {0, 1, 4, 2};
    embedding_case(NTP_DTYPE_I64, bad, NTP_STATUS_INVALID_ARGUMENT, NULL);
    const char *msg = ntp_ctx_errmsg(test_ctx);
    assert_non_null(strstr(msg, "<embedding name='layer'>"));
    assert_non_null(strstr(msg, "index 4 at position 2"));
    const int32_t neg[4] = {-1, 0, 0, 0};
    embedding_case(NTP_DTYPE_I32, neg, NTP_STATUS_INVALID_ARGUMENT, NULL);
    assert_non_null(strstr(ntp_ctx_errmsg(test_ctx), "index -1 at position 0"));
}

static void test_convert_dtype(void **state)
{
    (void)state;
    const float x[3] = {0.1f, 1000.1f, -2.5f};
    /* Rounded through the target type, stored as f32 on this backend. */
    const ntp_dtype to[3] = {NTP_DTYPE_BF16, NTP_DTYPE_F16, NTP_DTYPE_I32};
    const float want[3][3] = {{0.10009765625f, 1000.0f, -2.5f},
                              {0.0999755859375f, 1000.0f, -2.5f},
                              {0.0f, 1000.0f, -2.0f}}; /* -2.5 -> -2: ties to even */
    for (int i = 0; i < 3; i++) {
        rh_case c;
        rh_init(&c, NTP_OP_CONVERT);
        c.node.a.has_to_dtype = true;
        c.node.a.to_dtype = to[i];
        rh_in(&c, RH_SHAPE(3), x);
        float *y = rh_out(&c, RH_SHAPE(3));
        assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
        rh_expect(y, want[i], 3, 0.0f);
        rh_free(&c);
    }
    /* Real integer storage: a saturating cast. */
    const float big[3] = {3e9f, -0.5f, 1.5f};
    rh_case c;
    rh_init(&c, NTP_OP_CONVERT);
    c.node.a.has_to_dtype = true;
    c.node.a.to_dtype = NTP_DTYPE_I32;
    rh_in(&c, RH_SHAPE(3), big);
    int32_t *yi = rh_out_typed(&c, RH_SHAPE(3), NTP_DTYPE_I32);
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    assert_int_equal(yi[0], INT32_MAX);
    assert_int_equal(yi[1], 0);
    assert_int_equal(yi[2], 2);
    rh_free(&c);
}

static void test_convert_layout(void **state)
{
    (void)state;
    /* [1, 2, 2, 3] NCHW with x[c][h][w] = 100c + 10h + w -> NHWC
     * [1, 2, 3, 2] with y[h][w][c] = x[c][h][w], and back. */
    float x[12], want[12];
    for (int ch = 0; ch < 2; ch++)
        for (int h = 0; h < 2; h++)
            for (int w = 0; w < 3; w++) {
                x[(ch * 2 + h) * 3 + w] = (float)(100 * ch + 10 * h + w);
                want[(h * 3 + w) * 2 + ch] = (float)(100 * ch + 10 * h + w);
            }
    rh_case c;
    rh_init(&c, NTP_OP_CONVERT);
    c.node.a.has_to_layout = true;
    c.node.a.to_layout = NTP_LAYOUT_NHWC;
    rh_in(&c, RH_SHAPE(1, 2, 2, 3), x);
    float *y = rh_out(&c, RH_SHAPE(1, 2, 3, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 12, 0.0f);
    rh_free(&c);

    rh_init(&c, NTP_OP_CONVERT);
    c.node.a.has_to_layout = true;
    c.node.a.to_layout = NTP_LAYOUT_NCHW;
    c.node.a.has_to_dtype = true;
    c.node.a.to_dtype = NTP_DTYPE_BF16;
    rh_in(&c, RH_SHAPE(1, 2, 3, 2), want);
    y = rh_out(&c, RH_SHAPE(1, 2, 2, 3));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, x, 12, 0.0f); /* small integers are exact in bf16 */
    rh_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concat),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_pad),
        cmocka_unit_test(test_reshape_flatten_memcpy),
        cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_embedding_out_of_range),
        cmocka_unit_test(test_convert_dtype),
        cmocka_unit_test(test_convert_layout),
    };
    return cmocka_run_group_tests(tests, test_ctx_setup, test_ctx_teardown);
}
