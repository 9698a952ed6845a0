/* Reduced-precision number formats, private to libntprof.
 *
 * Conversions between f32 and bf16 / f16 bit patterns with IEEE round to
 * nearest, ties to even; int8 symmetric quantisation; and in-place emulation
 * of a storage type on an f32 buffer. The reference backend stores every
 * tensor as f32 and uses these to give exactly the values that true bf16,
 * f16 or int8 storage would hold; other backends use the same helpers to
 * convert data at their boundaries, so every backend rounds identically.
 *
 * None of these depend on the floating-point environment: rounding is done
 * on the bit patterns (or explicitly, for int8), not with the current
 * rounding mode. */
#ifndef NTPROF_NUMERIC_IMPL_H
#define NTPROF_NUMERIC_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include "ntprof/graph.h"
#include "ntprof/status.h"

/* --- bf16: the top 16 bits of an f32 -------------------------------------- */
/* Round to nearest even; overflow gives +-Inf; a NaN stays a (quiet) NaN with
 * its sign. Subnormal f32 inputs round like any other value (bf16 has the
 * same exponent range as f32). */
uint16_t ntp__f32_to_bf16(float x);
float ntp__bf16_to_f32(uint16_t h);
/* x rounded through bf16 and back. */
float ntp__round_bf16(float x);

/* --- f16: IEEE 754 binary16 ----------------------------------------------- */
/* Round to nearest even. Magnitudes from 65520 (the midpoint between the
 * largest finite value 65504 and 2^16) up give +-Inf; values below 2^-14 are
 * rounded to the subnormal grid (multiples of 2^-24) exactly; a NaN stays a
 * quiet NaN with its sign. */
uint16_t ntp__f32_to_f16(float x);
float ntp__f16_to_f32(uint16_t h);
/* x rounded through f16 and back. */
float ntp__round_f16(float x);

/* --- int8: symmetric quantisation, q in [-127, 127], x ~ q * scale -------- */
/* Per-tensor scale max|x| / 127. A tensor of zeros (or holding no finite
 * nonzero value) gets scale 1 so that quantising never divides by zero; its
 * values all quantise to 0 either way. Non-finite values are ignored when
 * looking for the maximum. */
float ntp__i8_scale(const float *x, int64_t n);
/* Per-channel scales along axis 0: channel c is x[c*per_channel ...
 * (c+1)*per_channel - 1]; scales[c] as ntp__i8_scale on that slice. */
void ntp__i8_scales_per_channel(const float *x, int64_t channels, int64_t per_channel,
                                float *scales);
/* round_half_even(x / scale) saturated to [-127, 127]; NaN gives 0, +-Inf
 * saturates. scale must be positive. */
int8_t ntp__quantize_i8(float x, float scale);
float ntp__dequantize_i8(int8_t q, float scale);
/* x rounded through int8 at this scale: dequantize(quantize(x)). */
float ntp__round_i8(float x, float scale);
/* dst[i] = ntp__quantize_i8(src[i], scale) for i < n, bit for bit, on the
 * widest vector unit this CPU has (numeric-convert.c). */
void ntp__quantize_i8_n(int8_t *dst, const float *src, int64_t n, float scale);
/* The same on a chosen path, for tests and benchmarks; false (dst
 * untouched) when this CPU lacks it. BEST is ntp__quantize_i8_n. */
typedef enum ntp_numeric_isa {
    NTP_NUMERIC_SCALAR,
    NTP_NUMERIC_AVX2,
    NTP_NUMERIC_AVX512,
    NTP_NUMERIC_BEST
} ntp_numeric_isa;
bool ntp__quantize_i8_n_isa(int8_t *dst, const float *src, int64_t n, float scale,
                            ntp_numeric_isa isa);
/* Round half to even in double, independent of the rounding mode. */
double ntp__round_half_even(double x);

/* Round the f32 buffer x[0..n-1] in place through storage type t:
 *   F32          nothing to do;
 *   BF16, F16    ntp__round_bf16 / ntp__round_f16 on each value;
 *   I8           quantise and dequantise. With n_scales == 1 scales[0] is the
 *                per-tensor scale; with n_scales > 1 element i belongs to
 *                channel i / channel_stride (axis 0: channel_stride is the
 *                number of elements per channel, n_scales * channel_stride
 *                must equal n). scales == NULL means dynamic per-tensor
 *                quantisation: the scale is ntp__i8_scale(x, n).
 * Returns NTP_STATUS_INVALID_ARGUMENT, leaving x untouched, for another type
 * (integer types are not a storage an f32 value is rounded through) or
 * inconsistent scales. This helper has no context: callers report the
 * failure in their own ctx. */
ntp_status ntp__emulate_storage(float *x, int64_t n, ntp_dtype t, const float *scales,
                                int64_t n_scales, int64_t channel_stride);

#endif
