/* The decoder ops' reference kernels against values worked out by hand
 * (rmsnorm, rope, kv_attention, lm_head, argmax), RoPE's defining property
 * (a query-key score depends only on the distance of their positions), and
 * the key/value cache: a prompt run in one pass equals the same tokens run
 * as a prefill and single-token decode steps against the cache, for
 * grouped-query heads, at f32 exactly and at bf16 within bf16's precision.
 * (bench/decoder_torch.py checks whole decoders against PyTorch.) */
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

static void test_rmsnorm(void **state)
{
    (void)state;
    /* mean(3², 4²) = 12.5; + eps 0.5 = 13: y = x / √13 · scale. */
    const float x[2] = {3, 4}, scale[2] = {1, 2};
    const float want[2] = {0.832050294f, 2.218800785f};
    rh_case c;
    rh_init(&c, NTP_OP_RMSNORM);
    c.node.a.epsilon = 0.5;
    rh_in(&c, RH_SHAPE(1, 2), x);
    rh_w(&c, RH_SHAPE(2), scale);
    float *y = rh_out(&c, RH_SHAPE(1, 2));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 2, 1e-6f);
    rh_free(&c);
}

/* rope of x [1, S, C] at positions pos, head_dim hd, base theta. */
static void rope(const float *x, const int32_t *pos, int S, int C, int hd, double theta, float *y)
{
    rh_case c;
    rh_init(&c, NTP_OP_ROPE);
    c.node.a.head_dim = hd;
    c.node.a.theta = theta;
    rh_in(&c, RH_SHAPE(1, S, C), x);
    rh_in_typed(&c, RH_SHAPE(1, S), NTP_DTYPE_I32, pos);
    float *out = rh_out(&c, RH_SHAPE(1, S, C));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    memcpy(y, out, (size_t)(S * C) * sizeof *y);
    rh_free(&c);
}

static void test_rope_by_hand(void **state)
{
    (void)state;
    /* head_dim 4, theta 100: element 0 pairs with 2 and turns by p, element
     * 1 with 3 by p·100^(-1/2) = p/10. Position 0 is the identity. Two
     * heads (C = 8): the second head turns alike. */
    const float x[16] = {1, 2, 3, 4, -1, 0.5f, 2, -3, 1, 2, 3, 4, -1, 0.5f, 2, -3};
    const int32_t pos[2] = {0, 5};
    float y[16];
    rope(x, pos, 2, 8, 4, 100.0, y);
    rh_expect(y, x, 8, 0.0f);
    const double c1 = cos(5.0), s1 = sin(5.0), c2 = cos(0.5), s2 = sin(0.5);
    const float want[8] = {(float)(1 * c1 - 3 * s1),  (float)(2 * c2 - 4 * s2),
                           (float)(3 * c1 + 1 * s1),  (float)(4 * c2 + 2 * s2),
                           (float)(-1 * c1 - 2 * s1), (float)(0.5 * c2 + 3 * s2),
                           (float)(2 * c1 + -1 * s1), (float)(-3 * c2 + 0.5 * s2)};
    rh_expect(y + 8, want, 8, 1e-6f);
}

static float dot(const float *a, const float *b, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return (float)s;
}

static void test_rope_relative(void **state)
{
    (void)state;
    /* q at m and k at n score alike for every (m, n) of the same distance:
     * (7, 3), (4, 0) and (1003, 999). */
    enum { HD = 8 };
    float q[HD], k[HD], qr[HD], kr[HD];
    rh_fill(q, HD, 3);
    rh_fill(k, HD, 11);
    const int32_t pairs[3][2] = {{7, 3}, {4, 0}, {1003, 999}};
    float score[3];
    for (int i = 0; i < 3; i++) {
        rope(q, &pairs[i][0], 1, HD, HD, 10000.0, qr);
        rope(k, &pairs[i][1], 1, HD, HD, 10000.0, kr);
        score[i] = dot(qr, kr, HD);
    }
    assert_true(fabsf(score[0] - score[1]) < 1e-5f);
    assert_true(fabsf(score[0] - score[2]) < 1e-4f);
    /* ... and the rotation did something: distance 0 scores differently. */
    rope(q, &pairs[1][1], 1, HD, HD, 10000.0, qr);
    assert_true(fabsf(dot(qr, kr, HD) - score[0]) > 1e-3f);
}

/* kv_attention of q [N,S,H*hd], k, v [N,S,KVH*hd], with cache kv (or
 * NULL), into y. */
static ntp_status attend(const float *q, const float *k, const float *v, int N, int S, int H,
                         int KVH, int hd, ntp_kv_state *kv, float *y)
{
    rh_case c;
    rh_init(&c, NTP_OP_KV_ATTENTION);
    c.node.a.heads = H;
    c.node.a.kv_heads = KVH;
    rh_in(&c, RH_SHAPE(N, S, H * hd), q);
    rh_in(&c, RH_SHAPE(N, S, KVH * hd), k);
    rh_in(&c, RH_SHAPE(N, S, KVH * hd), v);
    float *out = rh_out(&c, RH_SHAPE(N, S, H * hd));
    c.k.kv = kv;
    ntp_status st = rh_run(&c, test_ctx);
    if (st == NTP_STATUS_OK)
        memcpy(y, out, (size_t)(N * S * H * hd) * sizeof *y);
    rh_free(&c);
    return st;
}

static void test_attention_by_hand(void **state)
{
    (void)state;
    /* Two query heads on one key/value head, head_dim 1 (scale 1). Token 0
     * sees only key 0: both heads give v0 = 10. Token 1 sees keys 0 and 1
     * (scores q·0 and q·1): 10 + 10·σ(q) for q = 3 and q = -1. */
    const float q[4] = {1, 2, 3, -1}, k[2] = {0, 1}, v[2] = {10, 20};
    float y[4];
    assert_int_equal(attend(q, k, v, 1, 2, 2, 1, 1, NULL, y), NTP_STATUS_OK);
    const float want[4] = {10, 10, (float)(10 + 10 / (1 + exp(-3.0))),
                           (float)(10 + 10 / (1 + exp(1.0)))};
    rh_expect(y, want, 4, 1e-6f);
}

/* Slice tokens [t0, t0+n) of x [N, S, C] into out [N, n, C]. */
static void slice(const float *x, int N, int S, int C, int t0, int n, float *out)
{
    for (int b = 0; b < N; b++)
        memcpy(out + (size_t)(b * n * C), x + (size_t)((b * S + t0) * C),
               (size_t)(n * C) * sizeof *out);
}

static void cached_vs_whole(ntp_dtype dt, float tol)
{
    enum { N = 2, S = 5, H = 4, KVH = 2, HD = 4, P = 3, CAP = 6 };
    float q[N * S * H * HD], k[N * S * KVH * HD], v[N * S * KVH * HD], whole[N * S * H * HD];
    rh_fill(q, N * S * H * HD, 1);
    rh_fill(k, N * S * KVH * HD, 2);
    rh_fill(v, N * S * KVH * HD, 5);
    for (int i = 0; i < N * S * H * HD; i++)
        q[i] *= 6; /* sharper softmax */
    assert_int_equal(attend(q, k, v, N, S, H, KVH, HD, NULL, whole), NTP_STATUS_OK);
    size_t bytes = (size_t)(N * KVH * CAP * HD) * ntp_dtype_size(dt);
    ntp_kv_state kv = {.k = calloc(1, bytes),
                       .v = calloc(1, bytes),
                       .dtype = dt,
                       .batch = N,
                       .kv_heads = KVH,
                       .head_dim = HD,
                       .capacity = CAP,
                       .len = 0};
    assert_non_null(kv.k);
    assert_non_null(kv.v);
    /* Prefill of 3 tokens, then 2 decode steps of 1. */
    int t0 = 0;
    const int lens[3] = {P, 1, 1};
    for (int step = 0; step < 3; step++) {
        int n = lens[step];
        float qs[N * S * H * HD], ks[N * S * KVH * HD], vs[N * S * KVH * HD];
        float ys[N * S * H * HD], want[N * S * H * HD];
        slice(q, N, S, H * HD, t0, n, qs);
        slice(k, N, S, KVH * HD, t0, n, ks);
        slice(v, N, S, KVH * HD, t0, n, vs);
        assert_int_equal(attend(qs, ks, vs, N, n, H, KVH, HD, &kv, ys), NTP_STATUS_OK);
        slice(whole, N, S, H * HD, t0, n, want);
        rh_expect(ys, want, N * n * H * HD, tol);
        kv.len += n;
        t0 += n;
    }
    /* The cache is full after 5 of 6; a pass of 3 more is refused. */
    float y[N * 3 * H * HD];
    assert_int_equal(attend(q, k, v, N, 3, H, KVH, HD, &kv, y), NTP_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ntp_ctx_errmsg(test_ctx), "exceed the cache's 6"));
    free(kv.k);
    free(kv.v);
}

static void test_cache_f32(void **state)
{
    (void)state;
    cached_vs_whole(NTP_DTYPE_F32, 1e-6f);
}

static void test_cache_bf16(void **state)
{
    (void)state;
    /* The inputs are multiples of 1/16 (exact in bf16): the cache loses
     * nothing, so only the order of sums differs. */
    cached_vs_whole(NTP_DTYPE_BF16, 1e-6f);
    cached_vs_whole(NTP_DTYPE_F16, 1e-6f);
}

static void test_lm_head(void **state)
{
    (void)state;
    const float x[4] = {1, 2, -1, 0.5f}, W[6] = {1, 0, 0, 1, 1, 1};
    const float want[6] = {1, 2, 3, -1, 0.5f, -0.5f};
    rh_case c;
    rh_init(&c, NTP_OP_LM_HEAD);
    c.node.a.vocab = 3;
    rh_in(&c, RH_SHAPE(1, 2, 2), x);
    rh_w(&c, RH_SHAPE(3, 2), W);
    float *y = rh_out(&c, RH_SHAPE(1, 2, 3));
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    rh_expect(y, want, 6, 0.0f);
    rh_free(&c);
}

static void test_argmax(void **state)
{
    (void)state;
    /* The first of equal maxima; a NaN never wins. */
    const float x[12] = {1, 5, 5, 2, -1, -3, -2, -7, NAN, -4, 3, NAN};
    rh_case c;
    rh_init(&c, NTP_OP_ARGMAX);
    c.allow_nan = true;
    rh_in(&c, RH_SHAPE(3, 4), x);
    int32_t *y = rh_out_typed(&c, RH_SHAPE(3), NTP_DTYPE_I32);
    assert_int_equal(rh_run(&c, test_ctx), NTP_STATUS_OK);
    assert_int_equal(y[0], 1);
    assert_int_equal(y[1], 0);
    assert_int_equal(y[2], 2);
    rh_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rmsnorm),       cmocka_unit_test(test_rope_by_hand),
        cmocka_unit_test(test_rope_relative), cmocka_unit_test(test_attention_by_hand),
        cmocka_unit_test(test_cache_f32),     cmocka_unit_test(test_cache_bf16),
        cmocka_unit_test(test_lm_head),       cmocka_unit_test(test_argmax),
    };
    return cmocka_run_group_tests(tests, test_ctx_setup, test_ctx_teardown);
}
