/* Whole-buffer f32 -> int8 quantisation (numeric-impl.h), vectorised.
 *
 * ntp__quantize_i8 is the definition: round_half_even((double)x / scale)
 * saturated to [-127, 127], NaN to 0. The vector paths compute exactly that,
 * lane by lane: the quotient is a correctly rounded double division (as the
 * scalar one), rounded to nearest even with an explicit rounding control (no
 * dependence on MXCSR), clamped, NaN lanes zeroed. So every path gives the
 * scalar result bit for bit (test_numeric checks it on ties, saturation,
 * NaN, infinities and random data), and only the speed differs: the scalar
 * loop spends ~15 ns per value in floor/fmod, an input conversion then
 * running at 0.3 GB/s. The paths are chosen at run time with
 * __builtin_cpu_supports and compiled with target attributes, so one binary
 * runs everywhere (as src/machine/machine-kernels.c). */
#include <immintrin.h>
#include <stdbool.h>

#include "numeric-impl.h"

static void quantize_scalar(int8_t *dst, const float *src, int64_t n, float scale)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = ntp__quantize_i8(src[i], scale);
}

__attribute__((target("avx2"))) static __m128i q4_avx2(__m128 x, __m256d s)
{
    __m256d v = _mm256_div_pd(_mm256_cvtps_pd(x), s);
    __m256d ok = _mm256_cmp_pd(v, v, _CMP_ORD_Q); /* false for NaN */
    v = _mm256_round_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v = _mm256_min_pd(_mm256_max_pd(v, _mm256_set1_pd(-127.0)), _mm256_set1_pd(127.0));
    v = _mm256_and_pd(v, ok);
    return _mm256_cvtpd_epi32(v); /* exact: v is an integer in [-127, 127] */
}

__attribute__((target("avx2"))) static void quantize_avx2(int8_t *dst, const float *src, int64_t n,
                                                          float scale)
{
    __m256d s = _mm256_set1_pd((double)scale);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i a = q4_avx2(_mm_loadu_ps(src + i), s), b = q4_avx2(_mm_loadu_ps(src + i + 4), s);
        __m128i c = q4_avx2(_mm_loadu_ps(src + i + 8), s),
                d = q4_avx2(_mm_loadu_ps(src + i + 12), s);
        /* Saturating packs are exact: every lane is already in [-127, 127]. */
        __m128i q = _mm_packs_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d));
        _mm_storeu_si128((__m128i *)(void *)(dst + i), q);
    }
    quantize_scalar(dst + i, src + i, n - i, scale);
}

__attribute__((target("avx512f"))) static __m256i q8_avx512(__m256 x, __m512d s)
{
    __m512d v = _mm512_div_pd(_mm512_cvtps_pd(x), s);
    __mmask8 ok = _mm512_cmp_pd_mask(v, v, _CMP_ORD_Q);
    v = _mm512_roundscale_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v = _mm512_min_pd(_mm512_max_pd(v, _mm512_set1_pd(-127.0)), _mm512_set1_pd(127.0));
    v = _mm512_maskz_mov_pd(ok, v);
    return _mm512_cvtpd_epi32(v); /* exact: v is an integer in [-127, 127] */
}

__attribute__((target("avx512f"))) static void quantize_avx512(int8_t *dst, const float *src,
                                                               int64_t n, float scale)
{
    __m512d s = _mm512_set1_pd((double)scale);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i a = q8_avx512(_mm256_loadu_ps(src + i), s);
        __m256i b = q8_avx512(_mm256_loadu_ps(src + i + 8), s);
        __m512i ab = _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
        _mm_storeu_si128((__m128i *)(void *)(dst + i), _mm512_cvtepi32_epi8(ab));
    }
    quantize_scalar(dst + i, src + i, n - i, scale);
}

bool ntp__quantize_i8_n_isa(int8_t *dst, const float *src, int64_t n, float scale,
                            ntp_numeric_isa isa)
{
    __builtin_cpu_init();
    switch (isa) {
    case NTP_NUMERIC_SCALAR: quantize_scalar(dst, src, n, scale); return true;
    case NTP_NUMERIC_AVX2:
        if (!__builtin_cpu_supports("avx2"))
            return false;
        quantize_avx2(dst, src, n, scale);
        return true;
    case NTP_NUMERIC_AVX512:
        if (!__builtin_cpu_supports("avx512f"))
            return false;
        quantize_avx512(dst, src, n, scale);
        return true;
    case NTP_NUMERIC_BEST: break;
    }
    if (ntp__quantize_i8_n_isa(dst, src, n, scale, NTP_NUMERIC_AVX512))
        return true;
    if (ntp__quantize_i8_n_isa(dst, src, n, scale, NTP_NUMERIC_AVX2))
        return true;
    quantize_scalar(dst, src, n, scale);
    return true;
}

void ntp__quantize_i8_n(int8_t *dst, const float *src, int64_t n, float scale)
{
    ntp__quantize_i8_n_isa(dst, src, n, scale, NTP_NUMERIC_BEST);
}
