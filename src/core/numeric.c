/* Reduced-precision conversions and int8 quantisation (numeric-impl.h).
 *
 * The float <-> bits conversions go through memcpy, the only type pun that
 * is defined behaviour in C11 and that compilers turn into a register move. */
#include <math.h>
#include <string.h>

#include "numeric-impl.h"

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float bits_f32(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* --- bf16 ------------------------------------------------------------------ */

uint16_t ntp__f32_to_bf16(float x)
{
    uint32_t u = f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        /* Keep the sign and the top payload bits, and set the quiet bit so
         * that truncating the payload cannot turn the NaN into an Inf. */
        return (uint16_t)((u >> 16) | 0x0040u);
    /* Adding 0x7fff plus the lowest kept bit rounds to nearest with ties to
     * even; a carry out of the mantissa correctly bumps the exponent, and
     * the largest finite values round up to Inf as IEEE requires. */
    uint32_t lsb = (u >> 16) & 1u;
    return (uint16_t)((u + 0x7fffu + lsb) >> 16);
}

float ntp__bf16_to_f32(uint16_t h)
{
    return bits_f32((uint32_t)h << 16);
}

float ntp__round_bf16(float x)
{
    return ntp__bf16_to_f32(ntp__f32_to_bf16(x));
}

/* --- f16 ------------------------------------------------------------------- */

uint16_t ntp__f32_to_f16(float x)
{
    uint32_t u = f32_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;

    if (a >= 0x7f800000u) {
        if (a == 0x7f800000u)
            return sign | 0x7c00u;
        /* NaN: quiet bit set, top payload bits kept. */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x03ffu));
    }
    /* 65520 = 0x477ff000 is the midpoint between 65504 (largest finite f16,
     * odd mantissa) and 2^16: ties to even round it, and everything above,
     * to Inf. */
    if (a >= 0x477ff000u)
        return sign | 0x7c00u;
    if (a < 0x38800000u) {
        /* Below 2^-14: the result is a subnormal (or zero), an integer
         * multiple q of 2^-24. With m the 24-bit significand and e the
         * biased f32 exponent, |x| = m * 2^(e - 150), so q = m * 2^(e - 126):
         * shift m right by 126 - e with round to nearest even. */
        uint32_t e = a >> 23;
        if (e < 102) /* |x| < 2^-25: rounds to zero, even at the midpoint */
            return sign;
        uint32_t m = (a & 0x007fffffu) | 0x00800000u;
        uint32_t shift = 126 - e; /* 14 .. 24 */
        uint32_t q = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u)))
            q++; /* may carry into the smallest normal, 0x0400: correct */
        return (uint16_t)(sign | q);
    }
    /* Normal: rebias the exponent (127 -> 15) and keep 10 mantissa bits. */
    uint32_t h = ((a >> 23) - 112) << 10 | ((a >> 13) & 0x03ffu);
    uint32_t rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        h++; /* a carry into the exponent is the correct rounding */
    return (uint16_t)(sign | h);
}

float ntp__f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x03ffu;
    if (e == 0x1f)
        return bits_f32(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        /* Zero or subnormal: m * 2^-24 is exact in f32. */
        float v = (float)m * 0x1p-24f;
        return sign ? -v : v;
    }
    return bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

float ntp__round_f16(float x)
{
    return ntp__f16_to_f32(ntp__f32_to_f16(x));
}

/* --- int8 ------------------------------------------------------------------ */

double ntp__round_half_even(double x)
{
    double f = floor(x), d = x - f;
    if (d > 0.5)
        return f + 1.0;
    if (d < 0.5)
        return f;
    return fmod(f, 2.0) == 0.0 ? f : f + 1.0;
}

float ntp__i8_scale(const float *x, int64_t n)
{
    float m = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        float a = fabsf(x[i]);
        if (isfinite(a) && a > m)
            m = a;
    }
    return m > 0.0f ? m / 127.0f : 1.0f;
}

void ntp__i8_scales_per_channel(const float *x, int64_t channels, int64_t per_channel,
                                float *scales)
{
    for (int64_t c = 0; c < channels; c++)
        scales[c] = ntp__i8_scale(x + c * per_channel, per_channel);
}

int8_t ntp__quantize_i8(float x, float scale)
{
    if (isnan(x))
        return 0;
    /* Divide in double: x / scale is then correctly rounded from the exact
     * quotient, so a value that is exactly q * scale quantises back to q. */
    double v = (double)x / (double)scale;
    if (v >= 127.0)
        return 127;
    if (v <= -127.0)
        return -127;
    return (int8_t)ntp__round_half_even(v);
}

float ntp__dequantize_i8(int8_t q, float scale)
{
    return (float)q * scale;
}

float ntp__round_i8(float x, float scale)
{
    return ntp__dequantize_i8(ntp__quantize_i8(x, scale), scale);
}

/* i8 storage of ntp__emulate_storage: one scale for all of x, one given, or
 * one per channel of channel_stride elements. */
static ntp_status emulate_i8(float *x, int64_t n, const float *scales, int64_t n_scales,
                             int64_t channel_stride)
{
    if (!scales) {
        float s = ntp__i8_scale(x, n);
        for (int64_t i = 0; i < n; i++)
            x[i] = ntp__round_i8(x[i], s);
        return NTP_STATUS_OK;
    }
    if (n_scales < 1)
        return NTP_STATUS_INVALID_ARGUMENT;
    for (int64_t c = 0; c < n_scales; c++)
        if (!(scales[c] > 0.0f) || !isfinite(scales[c]))
            return NTP_STATUS_INVALID_ARGUMENT;
    if (n_scales == 1) {
        for (int64_t i = 0; i < n; i++)
            x[i] = ntp__round_i8(x[i], scales[0]);
        return NTP_STATUS_OK;
    }
    int64_t total;
    if (channel_stride <= 0 || __builtin_mul_overflow(n_scales, channel_stride, &total) ||
        total != n)
        return NTP_STATUS_INVALID_ARGUMENT;
    for (int64_t c = 0; c < n_scales; c++) {
        float *p = x + c * channel_stride;
        for (int64_t i = 0; i < channel_stride; i++)
            p[i] = ntp__round_i8(p[i], scales[c]);
    }
    return NTP_STATUS_OK;
}

ntp_status ntp__emulate_storage(float *x, int64_t n, ntp_dtype t, const float *scales,
                                int64_t n_scales, int64_t channel_stride)
{
    if (n < 0 || (n > 0 && !x))
        return NTP_STATUS_INVALID_ARGUMENT;
    switch (t) {
    case NTP_DTYPE_F32: return NTP_STATUS_OK;
    case NTP_DTYPE_BF16:
        for (int64_t i = 0; i < n; i++)
            x[i] = ntp__round_bf16(x[i]);
        return NTP_STATUS_OK;
    case NTP_DTYPE_F16:
        for (int64_t i = 0; i < n; i++)
            x[i] = ntp__round_f16(x[i]);
        return NTP_STATUS_OK;
    case NTP_DTYPE_I8: return emulate_i8(x, n, scales, n_scales, channel_stride);
    /* Integer tensors hold indices, never a rounded activation. */
    case NTP_DTYPE_U8:
    case NTP_DTYPE_I32:
    case NTP_DTYPE_I64:
    case NTP_DTYPE_COUNT: break;
    }
    return NTP_STATUS_INVALID_ARGUMENT;
}
