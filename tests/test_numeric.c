/* bf16 / f16 conversions (round to nearest even, bit-exact) and int8
 * quantisation on known values. Every expected bit pattern is worked out by
 * hand in the comment next to it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/numeric-impl.h"

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void test_bf16_rounding(void **state)
{
    (void)state;
    assert_int_equal(ntp__f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(ntp__f32_to_bf16(-2.0f), 0xc000);
    /* 0x3f808000 is exactly halfway between 0x3f80 and 0x3f81: to even. */
    assert_int_equal(ntp__f32_to_bf16(from_bits(0x3f808000u)), 0x3f80);
    /* Halfway between 0x3f81 (odd) and 0x3f82: up to even. */
    assert_int_equal(ntp__f32_to_bf16(from_bits(0x3f818000u)), 0x3f82);
    /* One bit above / below the midpoint. */
    assert_int_equal(ntp__f32_to_bf16(from_bits(0x3f808001u)), 0x3f81);
    assert_int_equal(ntp__f32_to_bf16(from_bits(0x3f807fffu)), 0x3f80);
    /* 0.1f = 0x3dcccccd: the dropped half 0xcccd > 0x8000 rounds up. */
    assert_int_equal(ntp__f32_to_bf16(0.1f), 0x3dcd);
    assert_true(ntp__round_bf16(0.1f) == 0.10009765625f);
    /* The largest f32 rounds past the largest bf16 (0x7f7f) to Inf. */
    assert_int_equal(ntp__f32_to_bf16(from_bits(0x7f7fffffu)), 0x7f80);
    assert_int_equal(ntp__f32_to_bf16(from_bits(0x7f7f7fffu)), 0x7f7f);
    assert_int_equal(ntp__f32_to_bf16(INFINITY), 0x7f80);
    assert_int_equal(ntp__f32_to_bf16(-INFINITY), 0xff80);
    /* Signed zero survives. */
    assert_int_equal(ntp__f32_to_bf16(-0.0f), 0x8000);
    assert_int_equal(to_bits(ntp__round_bf16(-0.0f)), 0x80000000u);
    /* f32 subnormals: 0x00008000 is a tie between 0 and 0x0001: to 0;
     * 0x00018000 is a tie between 0x0001 and 0x0002: to 0x0002. */
    assert_int_equal(ntp__f32_to_bf16(from_bits(0x00008000u)), 0x0000);
    assert_int_equal(ntp__f32_to_bf16(from_bits(0x00018000u)), 0x0002);
    assert_int_equal(ntp__f32_to_bf16(from_bits(0x00008001u)), 0x0001);
    /* Back to f32 is exact. */
    assert_int_equal(to_bits(ntp__bf16_to_f32(0x3f81)), 0x3f810000u);
}

static void test_bf16_nan(void **state)
{
    (void)state;
    /* A NaN whose payload lives only in the dropped bits must not become
     * Inf: the quiet bit is set. */
    uint16_t h = ntp__f32_to_bf16(from_bits(0x7f800001u));
    assert_int_equal(h & 0x7f80, 0x7f80);
    assert_true((h & 0x007f) != 0);
    assert_true(isnan(ntp__bf16_to_f32(h)));
    /* Sign kept. */
    assert_int_equal(ntp__f32_to_bf16(from_bits(0xffc00000u)), 0xffc0);
    assert_true(isnan(ntp__round_bf16(NAN)));
}

static void test_f16_normal_rounding(void **state)
{
    (void)state;
    assert_int_equal(ntp__f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(ntp__f32_to_f16(-2.0f), 0xc000);
    assert_int_equal(ntp__f32_to_f16(0.5f), 0x3800);
    /* 1 + 2^-11 is halfway between 1 (0x3c00, even) and 1 + 2^-10. */
    assert_int_equal(ntp__f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
    /* 1 + 3·2^-11 is halfway between 0x3c01 (odd) and 0x3c02: up. */
    assert_int_equal(ntp__f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);
    /* Just above the first midpoint rounds up. */
    assert_int_equal(ntp__f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
    /* 0.1 -> 0x2e66 = 0.0999755859375 (the nearest f16). */
    assert_int_equal(ntp__f32_to_f16(0.1f), 0x2e66);
    assert_true(ntp__round_f16(0.1f) == 0.0999755859375f);
    /* A mantissa carry into the exponent: 2 - 2^-12 rounds to 2.0. */
    assert_int_equal(ntp__f32_to_f16(2.0f - 0x1p-12f), 0x4000);
}

static void test_f16_overflow(void **state)
{
    (void)state;
    assert_int_equal(ntp__f32_to_f16(65504.0f), 0x7bff);
    /* 65519 is below the midpoint 65520: stays 65504. */
    assert_int_equal(ntp__f32_to_f16(65519.0f), 0x7bff);
    /* 65520 is the midpoint and 65504 has an odd mantissa: to Inf. */
    assert_int_equal(ntp__f32_to_f16(65520.0f), 0x7c00);
    assert_int_equal(ntp__f32_to_f16(-65520.0f), 0xfc00);
    assert_int_equal(ntp__f32_to_f16(1e6f), 0x7c00);
    assert_int_equal(ntp__f32_to_f16(from_bits(0x7f7fffffu)), 0x7c00);
    assert_int_equal(ntp__f32_to_f16(INFINITY), 0x7c00);
    assert_int_equal(ntp__f32_to_f16(-INFINITY), 0xfc00);
    assert_true(ntp__f16_to_f32(0x7bff) == 65504.0f);
    assert_true(isinf(ntp__round_f16(70000.0f)));
}

static void test_f16_subnormals(void **state)
{
    (void)state;
    /* The smallest subnormal 2^-24 and the largest 1023·2^-24. */
    assert_int_equal(ntp__f32_to_f16(0x1p-24f), 0x0001);
    assert_int_equal(ntp__f32_to_f16(1023 * 0x1p-24f), 0x03ff);
    /* The smallest normal 2^-14. */
    assert_int_equal(ntp__f32_to_f16(0x1p-14f), 0x0400);
    /* 2^-25 is halfway between 0 and 2^-24: to even, zero. */
    assert_int_equal(ntp__f32_to_f16(0x1p-25f), 0x0000);
    assert_int_equal(ntp__f32_to_f16(-0x1p-25f), 0x8000);
    /* Just above 2^-25 rounds to the smallest subnormal. */
    assert_int_equal(ntp__f32_to_f16(0x1p-25f * 1.0000001f), 0x0001);
    /* 1.5·2^-24 is halfway between 1 and 2 (even): 2. 2.5·2^-24: 2. */
    assert_int_equal(ntp__f32_to_f16(1.5f * 0x1p-24f), 0x0002);
    assert_int_equal(ntp__f32_to_f16(2.5f * 0x1p-24f), 0x0002);
    /* 1023.5·2^-24 is halfway between the largest subnormal (odd) and the
     * smallest normal: rounds into the normal range. */
    assert_int_equal(ntp__f32_to_f16(1023.5f * 0x1p-24f), 0x0400);
    /* Far below: zero; an f32 subnormal too. */
    assert_int_equal(ntp__f32_to_f16(1e-30f), 0x0000);
    assert_int_equal(ntp__f32_to_f16(from_bits(0x00000001u)), 0x0000);
    /* Subnormals come back exactly. */
    assert_true(ntp__f16_to_f32(0x0001) == 0x1p-24f);
    assert_true(ntp__f16_to_f32(0x8003) == -3 * 0x1p-24f);
    assert_true(ntp__round_f16(5 * 0x1p-24f) == 5 * 0x1p-24f);
}

static void test_f16_nan_and_zero(void **state)
{
    (void)state;
    uint16_t h = ntp__f32_to_f16(NAN);
    assert_int_equal(h & 0x7c00, 0x7c00);
    assert_true((h & 0x03ff) != 0);
    /* A payload only in the dropped bits still gives a NaN. */
    h = ntp__f32_to_f16(from_bits(0x7f800001u));
    assert_true((h & 0x03ff) != 0);
    assert_true(isnan(ntp__f16_to_f32(h)));
    assert_int_equal(ntp__f32_to_f16(from_bits(0xffc00000u)) & 0x8000, 0x8000);
    assert_int_equal(ntp__f32_to_f16(0.0f), 0x0000);
    assert_int_equal(ntp__f32_to_f16(-0.0f), 0x8000);
    assert_int_equal(to_bits(ntp__round_f16(-0.0f)), 0x80000000u);
    assert_true(isinf(ntp__f16_to_f32(0xfc00)) && ntp__f16_to_f32(0xfc00) < 0);
}

static void test_round_half_even(void **state)
{
    (void)state;
    assert_true(ntp__round_half_even(0.5) == 0.0);
    assert_true(ntp__round_half_even(1.5) == 2.0);
    assert_true(ntp__round_half_even(2.5) == 2.0);
    assert_true(ntp__round_half_even(-0.5) == 0.0);
    assert_true(ntp__round_half_even(-1.5) == -2.0);
    assert_true(ntp__round_half_even(-2.5) == -2.0);
    assert_true(ntp__round_half_even(2.4999) == 2.0);
    assert_true(ntp__round_half_even(-2.5001) == -3.0);
}

static void test_i8_per_tensor(void **state)
{
    (void)state;
    /* max|x| = 254, so the scale is exactly 2 and x/scale is exact. */
    float x[6] = {254.0f, -63.0f, 1.0f, 3.0f, -5.0f, 0.0f};
    float s = ntp__i8_scale(x, 6);
    assert_true(s == 2.0f);
    /* x/2 = 127, -31.5, 0.5, 1.5, -2.5, 0 -> ties to even. */
    const int want_q[6] = {127, -32, 0, 2, -2, 0};
    for (int i = 0; i < 6; i++)
        assert_int_equal(ntp__quantize_i8(x[i], s), want_q[i]);
    assert_true(ntp__dequantize_i8(-32, s) == -64.0f);
    /* Saturation and NaN. */
    assert_int_equal(ntp__quantize_i8(1000.0f, 2.0f), 127);
    assert_int_equal(ntp__quantize_i8(-1000.0f, 2.0f), -127);
    assert_int_equal(ntp__quantize_i8(-INFINITY, 2.0f), -127);
    assert_int_equal(ntp__quantize_i8(NAN, 2.0f), 0);
    /* A tensor of zeros gets scale 1 (no division by zero). */
    float z[3] = {0};
    assert_true(ntp__i8_scale(z, 3) == 1.0f);

    /* Dynamic emulation: the same values rounded through int8. */
    const float want[6] = {254.0f, -64.0f, 0.0f, 4.0f, -4.0f, 0.0f};
    assert_int_equal(ntp__emulate_storage(x, 6, NTP_DTYPE_I8, NULL, 1, 6), NTP_STATUS_OK);
    for (int i = 0; i < 6; i++)
        assert_true(x[i] == want[i]);
}

static void test_i8_per_channel(void **state)
{
    (void)state;
    /* Channel 0: max 127, scale 1; channel 1: max 31.75, scale 0.25. */
    float x[6] = {127.0f, -1.5f, 0.5f, 0.25f, -31.75f, 15.875f};
    float scales[2];
    ntp__i8_scales_per_channel(x, 2, 3, scales);
    assert_true(scales[0] == 1.0f);
    assert_true(scales[1] == 0.25f);
    /* q: {127, -2 (tie -1.5 -> -2), 0 (tie 0.5 -> 0)}, {1, -127, 64 (63.5 -> 64)}. */
    assert_int_equal(ntp__quantize_i8(x[1], scales[0]), -2);
    assert_int_equal(ntp__quantize_i8(x[5], scales[1]), 64);
    const float want[6] = {127.0f, -2.0f, 0.0f, 0.25f, -31.75f, 16.0f};
    assert_int_equal(ntp__emulate_storage(x, 6, NTP_DTYPE_I8, scales, 2, 3), NTP_STATUS_OK);
    for (int i = 0; i < 6; i++)
        assert_true(x[i] == want[i]);
    /* A per-tensor scale given explicitly. */
    float y[2] = {0.3f, -0.7f};
    float one = 0.5f;
    assert_int_equal(ntp__emulate_storage(y, 2, NTP_DTYPE_I8, &one, 1, 2), NTP_STATUS_OK);
    assert_true(y[0] == 0.5f);  /* 0.6 -> 1 */
    assert_true(y[1] == -0.5f); /* -1.4 -> -1 */
}

static void test_emulate_storage_types(void **state)
{
    (void)state;
    float x[3] = {0.1f, 65520.0f, -0.0f};
    assert_int_equal(ntp__emulate_storage(x, 3, NTP_DTYPE_F32, NULL, 1, 3), NTP_STATUS_OK);
    assert_true(x[0] == 0.1f);
    assert_int_equal(ntp__emulate_storage(x, 3, NTP_DTYPE_F16, NULL, 1, 3), NTP_STATUS_OK);
    assert_true(x[0] == 0.0999755859375f);
    assert_true(isinf(x[1]));
    assert_int_equal(to_bits(x[2]), 0x80000000u);
    float b[1] = {0.1f};
    assert_int_equal(ntp__emulate_storage(b, 1, NTP_DTYPE_BF16, NULL, 1, 1), NTP_STATUS_OK);
    assert_true(b[0] == 0.10009765625f);
    /* Integer types are not storage an f32 is rounded through; scales must
     * be positive and cover the buffer. */
    assert_int_equal(ntp__emulate_storage(b, 1, NTP_DTYPE_I32, NULL, 1, 1),
                     NTP_STATUS_INVALID_ARGUMENT);
    float bad = 0.0f, two[2] = {1.0f, 1.0f};
    assert_int_equal(ntp__emulate_storage(b, 1, NTP_DTYPE_I8, &bad, 1, 1),
                     NTP_STATUS_INVALID_ARGUMENT);
    float c[4] = {0};
    assert_int_equal(ntp__emulate_storage(c, 4, NTP_DTYPE_I8, two, 2, 3),
                     NTP_STATUS_INVALID_ARGUMENT);
    assert_true(b[0] == 0.10009765625f);
}

/* The whole-buffer quantiser (scalar, AVX2 and AVX-512 paths, whichever
 * this CPU has) equals ntp__quantize_i8 value by value: ties at both
 * parities, the saturation edges, NaN, infinities, subnormals, random bit
 * patterns, and every length around the vector widths (the scalar tail). */
static void test_i8_quantize_buffer_bitexact(void **state)
{
    (void)state;
    enum { N = 4099 };
    float *x = malloc(N * sizeof *x);
    int8_t *want = malloc(N), *got = malloc(N + 64);
    assert_non_null(x);
    assert_non_null(want);
    assert_non_null(got);
    const float scales[] = {1.0f, 0.5f, 1.0f / 127.0f, 0.0123f, 3.7e-3f, 1e-30f, 7.0f};
    uint32_t r = 12345;
    for (size_t si = 0; si < sizeof scales / sizeof scales[0]; si++) {
        float sc = scales[si];
        for (int i = 0; i < N; i++) {
            r ^= r << 13, r ^= r >> 17, r ^= r << 5;
            switch (i % 8) {
            case 0: x[i] = ((float)(i % 300) - 150.0f + 0.5f) * sc; break; /* ties */
            case 1: x[i] = nextafterf(((float)(i % 300) - 150.0f + 0.5f) * sc, 1e30f); break;
            case 2: x[i] = nextafterf(((float)(i % 300) - 150.0f + 0.5f) * sc, -1e30f); break;
            case 3: x[i] = (i % 16 < 8 ? 127.5f : -127.5f) * sc; break; /* saturation edge */
            case 4: {
                uint32_t b = r; /* any bit pattern: NaN, Inf, subnormal, huge */
                memcpy(&x[i], &b, 4);
                break;
            }
            case 5: x[i] = (float)((int32_t)(r % 2001) - 1000) * sc * 0.13f; break;
            case 6: x[i] = i % 3 == 0 ? INFINITY : i % 3 == 1 ? -INFINITY : NAN; break;
            default: x[i] = (i % 16 < 8 ? 126.5f : -126.5f) * sc; break;
            }
        }
        for (int i = 0; i < N; i++)
            want[i] = ntp__quantize_i8(x[i], sc);
        for (int isa = NTP_NUMERIC_SCALAR; isa <= NTP_NUMERIC_BEST; isa++) {
            /* Every length 0..67 at a few offsets, then the whole buffer. */
            for (int len = 0; len <= 68; len++) {
                int n = len == 68 ? N : len;
                int off = len == 68 ? 0 : (len * 37) % (N - 68);
                memset(got, 0x55, (size_t)n + 64);
                if (!ntp__quantize_i8_n_isa(got, x + off, n, sc, (ntp_numeric_isa)isa))
                    break; /* this CPU lacks the path */
                for (int i = 0; i < n; i++)
                    if (got[i] != want[off + i])
                        fail_msg("isa %d, scale %g, n %d: x[%d] = %.9g gives %d, scalar %d", isa,
                                 (double)sc, n, off + i, (double)x[off + i], got[i], want[off + i]);
                for (int i = n; i < n + 64; i++)
                    assert_int_equal((uint8_t)got[i], 0x55); /* nothing written past n */
            }
        }
    }
    __builtin_cpu_init();
    /* Where the CPU has the vector paths they must be taken. */
    int8_t one;
    float v = 1.0f;
    assert_int_equal(ntp__quantize_i8_n_isa(&one, &v, 1, 1.0f, NTP_NUMERIC_AVX2),
                     __builtin_cpu_supports("avx2") != 0);
    assert_int_equal(ntp__quantize_i8_n_isa(&one, &v, 1, 1.0f, NTP_NUMERIC_AVX512),
                     __builtin_cpu_supports("avx512f") != 0);
    free(x);
    free(want);
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16_rounding),
        cmocka_unit_test(test_bf16_nan),
        cmocka_unit_test(test_f16_normal_rounding),
        cmocka_unit_test(test_f16_overflow),
        cmocka_unit_test(test_f16_subnormals),
        cmocka_unit_test(test_f16_nan_and_zero),
        cmocka_unit_test(test_round_half_even),
        cmocka_unit_test(test_i8_per_tensor),
        cmocka_unit_test(test_i8_per_channel),
        cmocka_unit_test(test_emulate_storage_types),
        cmocka_unit_test(test_i8_quantize_buffer_bitexact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
