/* Micro-kernels that find the machine's ceilings: a loop of independent
 * fused multiply-adds per precision and instruction set, and a triad
 * (a = b + s*c) for memory bandwidth.
 *
 * The FMA loops keep enough independent accumulators in registers to cover
 * the FMA latency on every pipe (two FMA pipes with a latency of 4-5 cycles
 * need 8-10 chains; 12 ymm and 16 zmm chains leave room), so they run at the
 * issue rate: the peak. Each accumulator converges to a fixed point
 * (acc = acc * 0.999 + 0.001 tends to 1), so values stay normal and no
 * denormal or overflow slows a chain. The kernels are chosen at run time
 * with __builtin_cpu_supports, compiled with target attributes, so one
 * binary runs everywhere. This file is compiled at -O2 even in Debug builds
 * (cmake/ntp-analysis.cmake): at -O0 the accumulators would live in memory
 * and the loop would measure store forwarding, not the FPU. */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "machine-impl.h"

const char *ntp__isa_name(ntp_isa isa)
{
    switch (isa) {
    case NTP_ISA_AVX512: return "avx512";
    case NTP_ISA_AVX2: return "avx2";
    case NTP_ISA_SCALAR: return "scalar";
    }
    return "?";
}

const char *ntp__kprec_name(ntp_kernel_prec p)
{
    static const char *const names[] = {"f64", "f32", "bf16", "i8"};
    return p >= 0 && p < NTP_KPREC_COUNT ? names[p] : "?";
}

/* The CPU flags of /proc/cpuinfo, for the extensions __builtin_cpu_supports
 * does not name on every compiler (avx512_bf16, avx512_vnni), read once. */
static char cpu_flags[4096];
static pthread_once_t flags_once = PTHREAD_ONCE_INIT;

static void read_flags(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[8192];
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0) {
            const char *colon = strchr(line, ':');
            snprintf(cpu_flags, sizeof cpu_flags, " %s", colon ? colon + 1 : "");
            /* Whole words: " flag " with spaces on both sides. */
            size_t n = strlen(cpu_flags);
            if (n > 0 && cpu_flags[n - 1] == '\n')
                cpu_flags[n - 1] = ' ';
            break;
        }
    fclose(f);
}

static bool has_flag(const char *flag)
{
    pthread_once(&flags_once, read_flags);
    char word[64];
    snprintf(word, sizeof word, " %s ", flag);
    return strstr(cpu_flags, word) != NULL;
}

static bool cpu_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

static bool cpu_avx512(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}

ntp_isa ntp__isa_best(void)
{
    if (cpu_avx512())
        return NTP_ISA_AVX512;
    if (cpu_avx2())
        return NTP_ISA_AVX2;
    return NTP_ISA_SCALAR;
}

bool ntp__fma_supported(ntp_isa isa, ntp_kernel_prec p)
{
    switch (isa) {
    case NTP_ISA_AVX512:
        if (!cpu_avx512())
            return false;
        if (p == NTP_KPREC_BF16)
            return has_flag("avx512_bf16");
        if (p == NTP_KPREC_I8)
            return has_flag("avx512_vnni");
        return true;
    case NTP_ISA_AVX2:
        return cpu_avx2() && p != NTP_KPREC_BF16;
    case NTP_ISA_SCALAR:
        return p == NTP_KPREC_F64 || p == NTP_KPREC_F32;
    }
    return false;
}

/* Twelve or sixteen accumulator chains, written out so each stays in a
 * register. */
#define REP12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define REP16(X) REP12(X) X(12) X(13) X(14) X(15)

/* --- AVX2 -------------------------------------------------------------------------- */

__attribute__((target("avx2,fma"))) static double fma_f32_avx2(int64_t iters, double *sink)
{
    const __m256 m = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(0.001f);
#define DECL(i) __m256 a##i = _mm256_set1_ps(0.5f + 0.01f * (i));
#define STEP(i) a##i = _mm256_fmadd_ps(a##i, m, c);
    REP12(DECL)
    for (int64_t k = 0; k < iters; k++) {
        REP12(STEP)
    }
    __m256 s = _mm256_setzero_ps();
#define SUM(i) s = _mm256_add_ps(s, a##i);
    REP12(SUM)
    float out[8];
    _mm256_storeu_ps(out, s);
    *sink = out[0] + out[7];
    return (double)iters * 12 * 8 * 2;
#undef DECL
#undef STEP
#undef SUM
}

__attribute__((target("avx2,fma"))) static double fma_f64_avx2(int64_t iters, double *sink)
{
    const __m256d m = _mm256_set1_pd(0.999), c = _mm256_set1_pd(0.001);
#define DECL(i) __m256d a##i = _mm256_set1_pd(0.5 + 0.01 * (i));
#define STEP(i) a##i = _mm256_fmadd_pd(a##i, m, c);
    REP12(DECL)
    for (int64_t k = 0; k < iters; k++) {
        REP12(STEP)
    }
    __m256d s = _mm256_setzero_pd();
#define SUM(i) s = _mm256_add_pd(s, a##i);
    REP12(SUM)
    double out[4];
    _mm256_storeu_pd(out, s);
    *sink = out[0] + out[3];
    return (double)iters * 12 * 4 * 2;
#undef DECL
#undef STEP
#undef SUM
}

/* int8 without VNNI: what an AVX2 int8 GEMM does per 32 multiply-
 * accumulates: u8 x s8 products summed in pairs to s16 (vpmaddubsw),
 * widened to s32 by a multiply-add with ones (vpmaddwd), then added. Only
 * the 32 MACs (64 operations) count. Each chain has inputs of its own, and
 * they pass through an empty asm every iteration: otherwise the compiler
 * would compute the products once and only repeat the additions. Four
 * chains with their inputs and temporaries fit the 16 ymm registers; the
 * products do not depend on the accumulators, so the multiplier ports, not
 * latency, bound the loop. */
__attribute__((target("avx2,fma"))) static double dot_i8_avx2(int64_t iters, double *sink)
{
    const __m256i y = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
#define DECL(i) __m256i a##i = _mm256_setzero_si256(), x##i = _mm256_set1_epi8((char)(i + 1));
#define STEP(i) a##i = _mm256_add_epi32(a##i, _mm256_madd_epi16(_mm256_maddubs_epi16(x##i, y), ones));
#define CLOBBER(i) __asm__ volatile("" : "+x"(x##i));
#define REP4(X) X(0) X(1) X(2) X(3)
    REP4(DECL)
    for (int64_t k = 0; k < iters; k++) {
        REP4(CLOBBER)
        REP4(STEP)
    }
    __m256i s = _mm256_setzero_si256();
#define SUM(i) s = _mm256_add_epi32(s, a##i);
    REP4(SUM)
    int out[8];
    _mm256_storeu_si256((__m256i *)out, s);
    *sink = (double)out[0];
    return (double)iters * 4 * 32 * 2;
#undef DECL
#undef STEP
#undef CLOBBER
#undef REP4
#undef SUM
}

/* --- AVX-512 ------------------------------------------------------------------------- */

__attribute__((target("avx512f"))) static double fma_f32_avx512(int64_t iters, double *sink)
{
    const __m512 m = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(0.001f);
#define DECL(i) __m512 a##i = _mm512_set1_ps(0.5f + 0.01f * (i));
#define STEP(i) a##i = _mm512_fmadd_ps(a##i, m, c);
    REP16(DECL)
    for (int64_t k = 0; k < iters; k++) {
        REP16(STEP)
    }
    __m512 s = _mm512_setzero_ps();
#define SUM(i) s = _mm512_add_ps(s, a##i);
    REP16(SUM)
    *sink = _mm512_reduce_add_ps(s);
    return (double)iters * 16 * 16 * 2;
#undef DECL
#undef STEP
#undef SUM
}

__attribute__((target("avx512f"))) static double fma_f64_avx512(int64_t iters, double *sink)
{
    const __m512d m = _mm512_set1_pd(0.999), c = _mm512_set1_pd(0.001);
#define DECL(i) __m512d a##i = _mm512_set1_pd(0.5 + 0.01 * (i));
#define STEP(i) a##i = _mm512_fmadd_pd(a##i, m, c);
    REP16(DECL)
    for (int64_t k = 0; k < iters; k++) {
        REP16(STEP)
    }
    __m512d s = _mm512_setzero_pd();
#define SUM(i) s = _mm512_add_pd(s, a##i);
    REP16(SUM)
    *sink = _mm512_reduce_add_pd(s);
    return (double)iters * 16 * 8 * 2;
#undef DECL
#undef STEP
#undef SUM
}

/* bf16 pairs into f32 lanes: each vdpbf16ps does 32 multiplies and 32 adds. */
__attribute__((target("avx512f,avx512bf16"))) static double dot_bf16_avx512(int64_t iters,
                                                                           double *sink)
{
    /* 0x3F80 is bf16 1.0 and 0x3A83 about 0.001: the chains grow slowly
     * and stay normal for any iteration count a measurement uses. */
    __m512i x = _mm512_set1_epi16(0x3A83), y = _mm512_set1_epi16(0x3F80);
#define DECL(i) __m512 a##i = _mm512_setzero_ps();
#define STEP(i) a##i = _mm512_dpbf16_ps(a##i, (__m512bh)x, (__m512bh)y);
    REP16(DECL)
    for (int64_t k = 0; k < iters; k++) {
        __asm__ volatile("" : "+v"(x), "+v"(y));
        REP16(STEP)
    }
    __m512 s = _mm512_setzero_ps();
#define SUM(i) s = _mm512_add_ps(s, a##i);
    REP16(SUM)
    *sink = _mm512_reduce_add_ps(s);
    return (double)iters * 16 * 32 * 2;
#undef DECL
#undef STEP
#undef SUM
}

/* u8 x s8 quads into s32 lanes: each vpdpbusd does 64 multiply-accumulates. */
__attribute__((target("avx512f,avx512vnni"))) static double dot_i8_avx512(int64_t iters,
                                                                         double *sink)
{
    __m512i x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-2);
#define DECL(i) __m512i a##i = _mm512_setzero_si512();
#define STEP(i) a##i = _mm512_dpbusd_epi32(a##i, x, y);
    REP16(DECL)
    for (int64_t k = 0; k < iters; k++) {
        __asm__ volatile("" : "+v"(x), "+v"(y));
        REP16(STEP)
    }
    __m512i s = _mm512_setzero_si512();
#define SUM(i) s = _mm512_add_epi32(s, a##i);
    REP16(SUM)
    *sink = (double)_mm512_reduce_add_epi32(s);
    return (double)iters * 16 * 64 * 2;
#undef DECL
#undef STEP
#undef SUM
}

/* --- scalar -------------------------------------------------------------------------------- */

/* Eight chains of a * m + c; the compiler may or may not contract them into
 * FMAs (ISO C mode does not), so this is the scalar floor, not a peak. */
static double fma_f64_scalar(int64_t iters, double *sink)
{
    double a[8];
    for (int i = 0; i < 8; i++)
        a[i] = 0.5 + 0.01 * i;
    for (int64_t k = 0; k < iters; k++)
        for (int i = 0; i < 8; i++)
            a[i] = a[i] * 0.999 + 0.001;
    double s = 0;
    for (int i = 0; i < 8; i++)
        s += a[i];
    *sink = s;
    return (double)iters * 8 * 2;
}

static double fma_f32_scalar(int64_t iters, double *sink)
{
    float a[8];
    for (int i = 0; i < 8; i++)
        a[i] = 0.5f + 0.01f * (float)i;
    for (int64_t k = 0; k < iters; k++)
        for (int i = 0; i < 8; i++)
            a[i] = a[i] * 0.999f + 0.001f;
    float s = 0;
    for (int i = 0; i < 8; i++)
        s += a[i];
    *sink = s;
    return (double)iters * 8 * 2;
}

double ntp__fma_run(ntp_isa isa, ntp_kernel_prec p, int64_t iters, double *sink)
{
    *sink = 0;
    if (!ntp__fma_supported(isa, p) || iters <= 0)
        return 0;
    switch (isa) {
    case NTP_ISA_AVX512:
        switch (p) {
        case NTP_KPREC_F64: return fma_f64_avx512(iters, sink);
        case NTP_KPREC_F32: return fma_f32_avx512(iters, sink);
        case NTP_KPREC_BF16: return dot_bf16_avx512(iters, sink);
        case NTP_KPREC_I8: return dot_i8_avx512(iters, sink);
        default: return 0;
        }
    case NTP_ISA_AVX2:
        switch (p) {
        case NTP_KPREC_F64: return fma_f64_avx2(iters, sink);
        case NTP_KPREC_F32: return fma_f32_avx2(iters, sink);
        case NTP_KPREC_I8: return dot_i8_avx2(iters, sink);
        default: return 0;
        }
    case NTP_ISA_SCALAR:
        return p == NTP_KPREC_F64 ? fma_f64_scalar(iters, sink) : fma_f32_scalar(iters, sink);
    }
    return 0;
}

/* --- triad ----------------------------------------------------------------------------------- */

/* The triad reads and writes only arrays its caller sized; under
 * AddressSanitizer (NTP_SANITIZE) a shadow check on every access would make
 * it measure the sanitizer instead of the memory, so it is not instrumented. */
#define NTP_NO_ASAN __attribute__((no_sanitize_address))

NTP_NO_ASAN __attribute__((target("avx2,fma"))) static void triad_avx2(double *a, const double *b,
                                                           const double *c, int64_t n)
{
    const __m256d s = _mm256_set1_pd(1.5);
    for (int64_t i = 0; i + 8 <= n; i += 8) {
        __m256d b0 = _mm256_load_pd(b + i), b1 = _mm256_load_pd(b + i + 4);
        __m256d c0 = _mm256_load_pd(c + i), c1 = _mm256_load_pd(c + i + 4);
        _mm256_store_pd(a + i, _mm256_fmadd_pd(c0, s, b0));
        _mm256_store_pd(a + i + 4, _mm256_fmadd_pd(c1, s, b1));
    }
}

NTP_NO_ASAN __attribute__((target("avx512f"))) static void triad_avx512(double *a, const double *b,
                                                            const double *c, int64_t n)
{
    const __m512d s = _mm512_set1_pd(1.5);
    for (int64_t i = 0; i + 8 <= n; i += 8)
        _mm512_store_pd(a + i, _mm512_fmadd_pd(_mm512_load_pd(c + i), s, _mm512_load_pd(b + i)));
}

NTP_NO_ASAN static void triad_scalar(double *a, const double *b, const double *c, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        a[i] = b[i] + 1.5 * c[i];
}

double ntp__triad_run(ntp_isa isa, double *a, const double *b, const double *c, int64_t n,
                      int reps)
{
    /* The vector loops handle whole groups of 8; callers size arrays so. */
    n -= n % 8;
    for (int r = 0; r < reps; r++) {
        if (isa == NTP_ISA_AVX512 && cpu_avx512())
            triad_avx512(a, b, c, n);
        else if (isa != NTP_ISA_SCALAR && cpu_avx2())
            triad_avx2(a, b, c, n);
        else
            triad_scalar(a, b, c, n);
        /* Keep each pass: without this the compiler could see that the
         * repeated passes store the same values and drop all but one. */
        __asm__ volatile("" : : "r"(a) : "memory");
    }
    return 24.0 * (double)n * reps;
}
