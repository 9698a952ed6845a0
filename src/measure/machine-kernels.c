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
#include <cpuid.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "measure/machine-impl.h"

const char *ntp__isa_name(ntp_isa isa)
{
    switch (isa) {
    case NTP_ISA_AMX: return "amx";
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

/* AMX: the tile unit's bf16 and int8 products (CPUID leaf 7: EDX bit 22
 * AMX-BF16, 24 AMX-TILE, 25 AMX-INT8), on a CPU with AVX-512 (every one
 * with AMX has it; under valgrind, whose CPU has neither, this keeps AMX
 * off). Linux hands a process the tile registers only when it asks
 * (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, kernel 5.16 and
 * later); without that a tile instruction faults, so a kernel on AMX
 * exists only once the request succeeds. oneDNN asks the same way: a
 * kernel that refuses leaves oneDNN without AMX, and the ceilings too.
 * The request is made for a kernel, not for ntp__isa_best, which a run's
 * pace probe asks: a run measures no AMX kernel and asks nothing (oneDNN,
 * where built, asks once when it probes its ISA; strace showed a ref run
 * asking twice before, once now). */
#define NTP_ARCH_REQ_XCOMP_PERM 0x1023
#define NTP_XFEATURE_XTILEDATA 18
static unsigned amx_bits; /* CPUID's: 1 bf16, 2 int8; 0 until amx_once ran */
static bool amx_granted;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT, amx_grant_once = PTHREAD_ONCE_INIT;

static void amx_cpuid(void)
{
    unsigned a, b, c, d;
    if (cpu_avx512() && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d >> 24 & 1))
        amx_bits = (d >> 22 & 1) | (d >> 25 & 1) << 1;
}

static void amx_request(void)
{
    amx_granted = syscall(SYS_arch_prctl, NTP_ARCH_REQ_XCOMP_PERM, NTP_XFEATURE_XTILEDATA) == 0;
}

static unsigned cpu_amx_bits(void)
{
    pthread_once(&amx_once, amx_cpuid);
    return amx_bits;
}

/* Whether AMX runs p here: the CPU has it and Linux granted the tiles. */
static bool cpu_amx(ntp_kernel_prec p)
{
    unsigned want = p == NTP_KPREC_BF16 ? 1 : p == NTP_KPREC_I8 ? 2 : 0;
    if (!(cpu_amx_bits() & want))
        return false;
    pthread_once(&amx_grant_once, amx_request);
    return amx_granted;
}

ntp_isa ntp__isa_best(void)
{
    if (cpu_amx_bits())
        return NTP_ISA_AMX;
    if (cpu_avx512())
        return NTP_ISA_AVX512;
    if (cpu_avx2())
        return NTP_ISA_AVX2;
    return NTP_ISA_SCALAR;
}

bool ntp__fma_supported(ntp_isa isa, ntp_kernel_prec p)
{
    switch (isa) {
    case NTP_ISA_AMX: return cpu_amx(p);
    case NTP_ISA_AVX512:
        if (!cpu_avx512())
            return false;
        if (p == NTP_KPREC_BF16)
            return has_flag("avx512_bf16");
        if (p == NTP_KPREC_I8)
            return has_flag("avx512_vnni");
        return true;
    case NTP_ISA_AVX2: return cpu_avx2() && p != NTP_KPREC_BF16;
    case NTP_ISA_SCALAR: return p == NTP_KPREC_F64 || p == NTP_KPREC_F32;
    }
    return false;
}

/* --- the FMA kernels -------------------------------------------------------------- */

/* Each kernel exists with three chain counts (ntp_kchains): one chain (the
 * instruction's latency), the count the peak is measured with, and more
 * chains than that, which must not run faster if the peak count saturates
 * the units (tests/test_machine.c checks). Chains are written out with the
 * REP macros so each stays in a register, and each starts from a value
 * the compiler cannot see (an empty asm makes it opaque) and that differs
 * from every other chain's: the compiler can neither prove two chains equal
 * and merge them nor fold the loop. (An earlier version started every
 * bf16 and i8 chain at zero: GCC merged the sixteen into one, so the loop
 * ran one dependent vdpbf16ps per latency while counting sixteen.) */
#define R1(X) X(0)
#define R4(X) X(0) X(1) X(2) X(3)
#define R6(X) R4(X) X(4) X(5)
#define R8(X) R4(X) X(4) X(5) X(6) X(7)
#define R12(X) R8(X) X(8) X(9) X(10) X(11)
#define R14(X) R12(X) X(12) X(13)
#define R16(X) R14(X) X(14) X(15)
#define R24(X) R16(X) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23)
#define R28(X) R24(X) X(24) X(25) X(26) X(27)

/* Chain counts per register file. zmm: 32 registers, two hold the
 * operands: 16 chains cover two pipes of latency up to 8, 28 is what
 * fits. ymm (AVX2): 16 registers: 12 and 14. The AVX2 int8 sequence (in
 * asm, one register a chain and four shared): 8 and 12. Scalar: 8 and 12. */
enum {
    Z_PEAK = 16,
    Z_MORE = 28,
    Y_PEAK = 12,
    Y_MORE = 14,
    YI_PEAK = 8,
    YI_MORE = 12,
    S_PEAK = 8,
    S_MORE = 12
};

#define OPAQUE(i) __asm__ volatile("" : "+v"(a##i));

/* One kernel: NAME with chains REP, declaring accumulators with DECL,
 * stepping with STEP, BODY_PRE once per iteration before the steps, and
 * folding them into `s` with SUM. */
// clang-format off
#define KERNEL(NAME, TARGET, REP, VT, DECL, STEP, PRE, SUMT, SUMZ, SUM, FINISH)                    \
    TARGET static void NAME(int64_t iters, double *sink)                                           \
    {                                                                                              \
        KERNEL_CONSTS                                                                              \
        REP(DECL)                                                                                  \
        REP(OPAQUE)                                                                                \
        for (int64_t k = 0; k < iters; k++) {                                                      \
            PRE                                                                                    \
            REP(STEP)                                                                              \
        }                                                                                          \
        SUMT s = SUMZ;                                                                             \
        REP(SUM)                                                                                   \
        FINISH                                                                                     \
    }
// clang-format on

/* AVX-512 f32: a = a * m + c converges to 1, so values stay normal. */
#define T512 __attribute__((target("avx512f")))
#define KERNEL_CONSTS const __m512 m = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(0.001f);
#define D(i) __m512 a##i = _mm512_set1_ps(0.5f + 0.01f * (i));
#define S(i) a##i = _mm512_fmadd_ps(a##i, m, c);
#define A(i) s = _mm512_add_ps(s, a##i);
KERNEL(f32_z1, T512, R1, __m512, D, S, , __m512, _mm512_setzero_ps(), A,
       *sink = _mm512_reduce_add_ps(s);)
KERNEL(f32_zp, T512, R16, __m512, D, S, , __m512, _mm512_setzero_ps(), A,
       *sink = _mm512_reduce_add_ps(s);)
KERNEL(f32_zm, T512, R28, __m512, D, S, , __m512, _mm512_setzero_ps(), A,
       *sink = _mm512_reduce_add_ps(s);)
#undef KERNEL_CONSTS
#undef D
#undef S
#undef A

#define KERNEL_CONSTS const __m512d m = _mm512_set1_pd(0.999), c = _mm512_set1_pd(0.001);
#define D(i) __m512d a##i = _mm512_set1_pd(0.5 + 0.01 * (i));
#define S(i) a##i = _mm512_fmadd_pd(a##i, m, c);
#define A(i) s = _mm512_add_pd(s, a##i);
KERNEL(f64_z1, T512, R1, __m512d, D, S, , __m512d, _mm512_setzero_pd(), A,
       *sink = _mm512_reduce_add_pd(s);)
KERNEL(f64_zp, T512, R16, __m512d, D, S, , __m512d, _mm512_setzero_pd(), A,
       *sink = _mm512_reduce_add_pd(s);)
KERNEL(f64_zm, T512, R28, __m512d, D, S, , __m512d, _mm512_setzero_pd(), A,
       *sink = _mm512_reduce_add_pd(s);)
#undef KERNEL_CONSTS
#undef D
#undef S
#undef A

/* bf16 pairs into f32 lanes: vdpbf16ps does 2 multiply-adds per f32 lane,
 * 64 operations per zmm instruction. x is bf16 0.001 (0x3A83) and y 1.0
 * (0x3F80): the chains grow by 0.002 a step from distinct starts and stay
 * normal for any iteration count a measurement uses. x and y pass through
 * an empty asm every iteration so no product can be hoisted. */
#define TBF16 __attribute__((target("avx512f,avx512bf16")))
#define KERNEL_CONSTS __m512i x = _mm512_set1_epi16(0x3A83), y = _mm512_set1_epi16(0x3F80);
#define D(i) __m512 a##i = _mm512_set1_ps(1.0f + (float)(i));
#define S(i) a##i = _mm512_dpbf16_ps(a##i, (__m512bh)x, (__m512bh)y);
#define P __asm__ volatile("" : "+v"(x), "+v"(y));
#define A(i) s = _mm512_add_ps(s, a##i);
KERNEL(bf16_z1, TBF16, R1, __m512, D, S, P, __m512, _mm512_setzero_ps(), A,
       *sink = _mm512_reduce_add_ps(s);)
KERNEL(bf16_zp, TBF16, R16, __m512, D, S, P, __m512, _mm512_setzero_ps(), A,
       *sink = _mm512_reduce_add_ps(s);)
KERNEL(bf16_zm, TBF16, R28, __m512, D, S, P, __m512, _mm512_setzero_ps(), A,
       *sink = _mm512_reduce_add_ps(s);)
#undef KERNEL_CONSTS
#undef D
#undef S
#undef A

/* u8 x s8 quads into s32 lanes: vpdpbusd does 4 multiply-accumulates per
 * 32-bit lane, 128 operations per zmm instruction (64 with ymm). */
#define TVNNI __attribute__((target("avx512f,avx512vnni")))
#define KERNEL_CONSTS __m512i x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-2);
#define D(i) __m512i a##i = _mm512_set1_epi32((i)*1000);
#define S(i) a##i = _mm512_dpbusd_epi32(a##i, x, y);
#define A(i) s = _mm512_add_epi32(s, a##i);
KERNEL(i8_z1, TVNNI, R1, __m512i, D, S, P, __m512i, _mm512_setzero_si512(), A,
       *sink = (double)_mm512_reduce_add_epi32(s);)
KERNEL(i8_zp, TVNNI, R16, __m512i, D, S, P, __m512i, _mm512_setzero_si512(), A,
       *sink = (double)_mm512_reduce_add_epi32(s);)
KERNEL(i8_zm, TVNNI, R28, __m512i, D, S, P, __m512i, _mm512_setzero_si512(), A,
       *sink = (double)_mm512_reduce_add_epi32(s);)
#undef KERNEL_CONSTS
#undef D
#undef S
#undef A

/* The VEX form (AVX-VNNI: Alder Lake and later cores without AVX-512). */
#define TAVXVNNI __attribute__((target("avx2,avxvnni")))
#define KERNEL_CONSTS __m256i x = _mm256_set1_epi8(3), y = _mm256_set1_epi8(-2);
#define D(i) __m256i a##i = _mm256_set1_epi32((i)*1000);
#define S(i) a##i = _mm256_dpbusd_avx_epi32(a##i, x, y);
#define A(i) s = _mm256_add_epi32(s, a##i);
#define FIN_I256                            \
    int out[8];                             \
    _mm256_storeu_si256((__m256i *)out, s); \
    *sink = (double)out[0] + out[7];
KERNEL(i8_v1, TAVXVNNI, R1, __m256i, D, S, P, __m256i, _mm256_setzero_si256(), A, FIN_I256)
KERNEL(i8_vp, TAVXVNNI, R12, __m256i, D, S, P, __m256i, _mm256_setzero_si256(), A, FIN_I256)
KERNEL(i8_vm, TAVXVNNI, R14, __m256i, D, S, P, __m256i, _mm256_setzero_si256(), A, FIN_I256)
#undef KERNEL_CONSTS
#undef D
#undef S
#undef A

/* AVX2 f32 and f64. */
#define T256 __attribute__((target("avx2,fma")))
#define KERNEL_CONSTS const __m256 m = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(0.001f);
#define D(i) __m256 a##i = _mm256_set1_ps(0.5f + 0.01f * (i));
#define S(i) a##i = _mm256_fmadd_ps(a##i, m, c);
#define A(i) s = _mm256_add_ps(s, a##i);
#define FIN_PS                \
    float out[8];             \
    _mm256_storeu_ps(out, s); \
    *sink = out[0] + out[7];
KERNEL(f32_y1, T256, R1, __m256, D, S, , __m256, _mm256_setzero_ps(), A, FIN_PS)
KERNEL(f32_yp, T256, R12, __m256, D, S, , __m256, _mm256_setzero_ps(), A, FIN_PS)
KERNEL(f32_ym, T256, R14, __m256, D, S, , __m256, _mm256_setzero_ps(), A, FIN_PS)
#undef KERNEL_CONSTS
#undef D
#undef S
#undef A

#define KERNEL_CONSTS const __m256d m = _mm256_set1_pd(0.999), c = _mm256_set1_pd(0.001);
#define D(i) __m256d a##i = _mm256_set1_pd(0.5 + 0.01 * (i));
#define S(i) a##i = _mm256_fmadd_pd(a##i, m, c);
#define A(i) s = _mm256_add_pd(s, a##i);
#define FIN_PD                \
    double out[4];            \
    _mm256_storeu_pd(out, s); \
    *sink = out[0] + out[3];
KERNEL(f64_y1, T256, R1, __m256d, D, S, , __m256d, _mm256_setzero_pd(), A, FIN_PD)
KERNEL(f64_yp, T256, R12, __m256d, D, S, , __m256d, _mm256_setzero_pd(), A, FIN_PD)
KERNEL(f64_ym, T256, R14, __m256d, D, S, , __m256d, _mm256_setzero_pd(), A, FIN_PD)
#undef KERNEL_CONSTS
#undef D
#undef S
#undef A

/* int8 without VNNI: what an AVX2 int8 GEMM does per 32 multiply-
 * accumulates: u8 x s8 products summed in pairs to s16 (vpmaddubsw),
 * widened to s32 by a multiply-add with ones (vpmaddwd), then added. Only
 * the 32 MACs (64 operations) count, one "instruction" here being the
 * three. The products do not depend on the accumulators, so the multiplier
 * ports, not latency, bound the loop, and nothing but the instructions
 * themselves may stand in the loop: written in C (the inputs made opaque
 * so no product was hoisted), GCC added a register copy per chain and
 * needed a register per chain for its input, and the 4-chain kernel read
 * anywhere from 92 to 187 GOP/s from one run to the next on an AVX2 EPYC,
 * 6 chains sometimes faster (CI failed on it), sometimes slower. Each step
 * is therefore one asm statement, the three instructions and nothing else,
 * with one scratch register shared by every chain (renaming separates
 * them): 4 chains read 150-179, 8 and 12 chains 176-185 GOP/s on the same
 * machine, interleaved. */
#define KERNEL_CONSTS                                                                             \
    const __m256i x = _mm256_set1_epi8(3), y = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1); \
    __m256i t;
#define D(i) __m256i a##i = _mm256_set1_epi32((i)*1000);
#define S(i)                                           \
    __asm__ volatile("vpmaddubsw %[y], %[x], %[t]\n\t" \
                     "vpmaddwd %[o], %[t], %[t]\n\t"   \
                     "vpaddd %[t], %[a], %[a]"         \
                     : [a] "+x"(a##i), [t] "=&x"(t)    \
                     : [x] "x"(x), [y] "x"(y), [o] "x"(ones));
#define A(i) s = _mm256_add_epi32(s, a##i);
KERNEL(i8_y1, T256, R1, __m256i, D, S, , __m256i, _mm256_setzero_si256(), A, FIN_I256)
KERNEL(i8_yp, T256, R8, __m256i, D, S, , __m256i, _mm256_setzero_si256(), A, FIN_I256)
KERNEL(i8_ym, T256, R12, __m256i, D, S, , __m256i, _mm256_setzero_si256(), A, FIN_I256)
#undef KERNEL_CONSTS
#undef D
#undef S
#undef A

/* AMX: eight tile registers of 16 rows of 64 bytes here, and a tile
 * multiply unit per core. tdpbf16ps multiplies a 16x32 bf16 tile by a
 * 32x16 one (stored as 16 rows of 16 pairs) into a 16x16 f32 tile: 8192
 * multiply-adds, 16384 operations; tdpbusd a 16x64 u8 tile by a 64x16 s8
 * one into 16x16 s32: 32768 operations. Accumulators are tmm0..tmm5, the
 * operands tmm6 (A) and tmm7 (B); each step is one asm statement, which
 * the compiler can neither merge nor drop. A is bf16 0.001 (0x3A83) and B
 * 1.0: an f32 chain grows by 32 x 0.001 a step and stays normal; in int8
 * A is 3 (unsigned) and B -2 (signed), so a chain adds 64 x -6 = -384 a
 * step (operands swapped, 254 x 3 each: +48768). On an Intel Xeon with
 * AMX (2 vCPUs, 2026-12-07) one accumulator already issued at the unit's
 * rate, 4.95 ns an instruction with 1, 4, 5 and 6 alike: the peak uses 4
 * and "more" 6, all a tile file of eight holds. The tile state is each
 * thread's own: every call configures it (palette 1) and releases it. */
typedef struct amx_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_config;

static void amx_begin(const void *a, const void *b)
{
    amx_config cfg = {.palette = 1};
    for (int i = 0; i < 8; i++) {
        cfg.colsb[i] = 64;
        cfg.rows[i] = 16;
    }
    __asm__ volatile("ldtilecfg %0" : : "m"(cfg));
    __asm__ volatile("tilezero %%tmm0\n\ttilezero %%tmm1\n\ttilezero %%tmm2\n\t"
                     "tilezero %%tmm3\n\ttilezero %%tmm4\n\ttilezero %%tmm5"
                     :
                     :);
    __asm__ volatile("tileloadd (%0,%2,1), %%tmm6\n\ttileloadd (%1,%2,1), %%tmm7"
                     :
                     : "r"(a), "r"(b), "r"((int64_t)64)
                     : "memory");
}

/* Stores the six accumulators to out (6 tiles of 1 kB) and frees the tile
 * state. */
static void amx_end(void *out)
{
    __asm__ volatile("tilestored %%tmm0, (%0,%1,1)\n\ttilestored %%tmm1, 1024(%0,%1,1)\n\t"
                     "tilestored %%tmm2, 2048(%0,%1,1)\n\ttilestored %%tmm3, 3072(%0,%1,1)\n\t"
                     "tilestored %%tmm4, 4096(%0,%1,1)\n\ttilestored %%tmm5, 5120(%0,%1,1)\n\t"
                     "tilerelease"
                     :
                     : "r"(out), "r"((int64_t)64)
                     : "memory");
}

#define AMX_BF16(i) __asm__ volatile("tdpbf16ps %%tmm7, %%tmm6, %%tmm" #i : :);
#define AMX_I8(i) __asm__ volatile("tdpbusd %%tmm7, %%tmm6, %%tmm" #i : :);
/* Element 0 of each accumulator (ACC: f32 or s32), summed: the unused
 * ones stay zero. The operands are filled by their pairs (bf16: uint16_t)
 * or quads (int8: uint32_t), 1 kB a tile. */
// clang-format off
#define AMX_KERNEL(NAME, REP, STEP, ELEM, A, B, ACC)                                              \
    static void NAME(int64_t iters, double *sink)                                                  \
    {                                                                                              \
        _Alignas(64) ELEM a[1024 / sizeof(ELEM)], b[1024 / sizeof(ELEM)];                         \
        _Alignas(64) ACC acc[6][256];                                                              \
        for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {                                      \
            a[i] = (A);                                                                            \
            b[i] = (B);                                                                            \
        }                                                                                          \
        amx_begin(a, b);                                                                           \
        for (int64_t k = 0; k < iters; k++) {                                                      \
            REP(STEP)                                                                              \
        }                                                                                          \
        amx_end(acc);                                                                              \
        double s = 0;                                                                              \
        for (int t = 0; t < 6; t++)                                                                \
            s += (double)acc[t][0];                                                                \
        *sink = s;                                                                                 \
    }
// clang-format on
AMX_KERNEL(bf16_t1, R1, AMX_BF16, uint16_t, 0x3A83, 0x3F80, float)
AMX_KERNEL(bf16_tp, R4, AMX_BF16, uint16_t, 0x3A83, 0x3F80, float)
AMX_KERNEL(bf16_tm, R6, AMX_BF16, uint16_t, 0x3A83, 0x3F80, float)
AMX_KERNEL(i8_t1, R1, AMX_I8, uint32_t, 0x03030303u, 0xFEFEFEFEu, int32_t)
AMX_KERNEL(i8_tp, R4, AMX_I8, uint32_t, 0x03030303u, 0xFEFEFEFEu, int32_t)
AMX_KERNEL(i8_tm, R6, AMX_I8, uint32_t, 0x03030303u, 0xFEFEFEFEu, int32_t)
#undef AMX_BF16
#undef AMX_I8

/* Scalar: chains of a * m + c; the compiler may or may not contract them
 * into FMAs (ISO C mode does not), so this is the scalar floor, not a
 * peak. */
#define TNONE
#define KERNEL_CONSTS const double m = 0.999, c = 0.001;
#define D(i) double a##i = 0.5 + 0.01 * (i);
#define S(i) a##i = a##i * m + c;
#define A(i) s += a##i;
KERNEL(f64_s1, TNONE, R1, double, D, S, , double, 0, A, *sink = s;)
KERNEL(f64_sp, TNONE, R8, double, D, S, , double, 0, A, *sink = s;)
KERNEL(f64_sm, TNONE, R12, double, D, S, , double, 0, A, *sink = s;)
#undef KERNEL_CONSTS
#undef D
#undef S
#undef A
#define KERNEL_CONSTS const float m = 0.999f, c = 0.001f;
#define D(i) float a##i = 0.5f + 0.01f * (float)(i);
#define S(i) a##i = a##i * m + c;
#define A(i) s += a##i;
KERNEL(f32_s1, TNONE, R1, float, D, S, , float, 0, A, *sink = s;)
KERNEL(f32_sp, TNONE, R8, float, D, S, , float, 0, A, *sink = s;)
KERNEL(f32_sm, TNONE, R12, float, D, S, , float, 0, A, *sink = s;)
#undef KERNEL_CONSTS
#undef D
#undef S
#undef A
#undef P

typedef void (*kernel_fn)(int64_t iters, double *sink);

/* The kernel of (isa, p): its three variants, chain counts, the operations
 * one instruction does and its name. */
typedef struct kernel {
    kernel_fn fn[NTP_KCHAINS_COUNT];
    int chains[NTP_KCHAINS_COUNT];
    double ops_per_insn;
    const char *insn;
} kernel;

static bool pick(ntp_isa isa, ntp_kernel_prec p, kernel *k)
{
    if (!ntp__fma_supported(isa, p))
        return false;
#define K(a, b, c, ca, cb, cc, ops, name) \
    return (*k = (kernel){{a, b, c}, {ca, cb, cc}, ops, name}), true;
    switch (isa) {
    case NTP_ISA_AMX:
        switch (p) {
        case NTP_KPREC_BF16: K(bf16_t1, bf16_tp, bf16_tm, 1, 4, 6, 16384, "tdpbf16ps tmm (AMX)")
        case NTP_KPREC_I8: K(i8_t1, i8_tp, i8_tm, 1, 4, 6, 32768, "tdpbusd tmm (AMX)")
        case NTP_KPREC_F64:
        case NTP_KPREC_F32:
        case NTP_KPREC_COUNT: return false;
        }
        return false;
    case NTP_ISA_AVX512:
        switch (p) {
        case NTP_KPREC_F64: K(f64_z1, f64_zp, f64_zm, 1, Z_PEAK, Z_MORE, 16, "vfmadd231pd zmm")
        case NTP_KPREC_F32: K(f32_z1, f32_zp, f32_zm, 1, Z_PEAK, Z_MORE, 32, "vfmadd231ps zmm")
        case NTP_KPREC_BF16: K(bf16_z1, bf16_zp, bf16_zm, 1, Z_PEAK, Z_MORE, 64, "vdpbf16ps zmm")
        case NTP_KPREC_I8: K(i8_z1, i8_zp, i8_zm, 1, Z_PEAK, Z_MORE, 128, "vpdpbusd zmm")
        case NTP_KPREC_COUNT: return false;
        }
        return false;
    case NTP_ISA_AVX2:
        switch (p) {
        case NTP_KPREC_F64: K(f64_y1, f64_yp, f64_ym, 1, Y_PEAK, Y_MORE, 8, "vfmadd231pd ymm")
        case NTP_KPREC_F32: K(f32_y1, f32_yp, f32_ym, 1, Y_PEAK, Y_MORE, 16, "vfmadd231ps ymm")
        case NTP_KPREC_I8:
            if (has_flag("avx_vnni"))
                K(i8_v1, i8_vp, i8_vm, 1, Y_PEAK, Y_MORE, 64, "vpdpbusd ymm (AVX-VNNI)")
            K(i8_y1, i8_yp, i8_ym, 1, YI_PEAK, YI_MORE, 64, "vpmaddubsw+vpmaddwd+vpaddd ymm")
        case NTP_KPREC_BF16:
        case NTP_KPREC_COUNT: return false;
        }
        return false;
    case NTP_ISA_SCALAR:
        if (p == NTP_KPREC_F64)
            K(f64_s1, f64_sp, f64_sm, 1, S_PEAK, S_MORE, 2, "scalar multiply-add")
        K(f32_s1, f32_sp, f32_sm, 1, S_PEAK, S_MORE, 2, "scalar multiply-add")
    }
#undef K
    return false;
}

int ntp__fma_chains(ntp_isa isa, ntp_kernel_prec p, ntp_kchains which)
{
    kernel k;
    return which >= 0 && which < NTP_KCHAINS_COUNT && pick(isa, p, &k) ? k.chains[which] : 0;
}

double ntp__fma_ops_per_insn(ntp_isa isa, ntp_kernel_prec p)
{
    kernel k;
    return pick(isa, p, &k) ? k.ops_per_insn : 0;
}

const char *ntp__fma_insn(ntp_isa isa, ntp_kernel_prec p)
{
    kernel k;
    return pick(isa, p, &k) ? k.insn : NULL;
}

double ntp__fma_run_chains(ntp_isa isa, ntp_kernel_prec p, ntp_kchains which, int64_t iters,
                           double *sink)
{
    *sink = 0;
    kernel k;
    if (iters <= 0 || which < 0 || which >= NTP_KCHAINS_COUNT || !pick(isa, p, &k))
        return 0;
    k.fn[which](iters, sink);
    return (double)iters * k.chains[which] * k.ops_per_insn;
}

double ntp__fma_run(ntp_isa isa, ntp_kernel_prec p, int64_t iters, double *sink)
{
    return ntp__fma_run_chains(isa, p, NTP_KCHAINS_PEAK, iters, sink);
}

/* --- the core's clock ------------------------------------------------------------------ */

/* 64 dependent register-register adds per iteration: one cycle each on
 * every x86 core (immediate adds may be folded by some renamers; register
 * adds are not), so the loop counts the core's cycles whatever the TSC or
 * turbo say. */
void ntp__clock_chain(int64_t iters)
{
    uint64_t x = 0, one = 1;
    for (int64_t k = 0; k < iters; k++)
        __asm__ volatile(".rept 64\n\tadd %1, %0\n\t.endr" : "+r"(x) : "r"(one));
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

double ntp__triad_run(ntp_isa isa, double *a, const double *b, const double *c, int64_t n, int reps)
{
    /* The vector loops handle whole groups of 8; callers size arrays so. */
    n -= n % 8;
    for (int r = 0; r < reps; r++) {
        if ((isa == NTP_ISA_AMX || isa == NTP_ISA_AVX512) && cpu_avx512())
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
