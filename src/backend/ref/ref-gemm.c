/* The reference GEMM: C = alpha * op(A) * op(B) + beta * C, row-major.
 *
 * Every dense kernel of the reference backend (fc, matmul, conv through
 * im2col, deconv, the recurrent layers, attention) ends up here, so this is
 * the one place where speed matters. It is still plain C: a tile of op(B)
 * (GEMM_KB x GEMM_NB) is copied into a contiguous panel on the stack, and a
 * 4-row by 4-deep micro-kernel updates a 4 x GEMM_NB tile of C held in a
 * local buffer. Because GEMM_NB is a compile-time constant and the buffers
 * are restrict-qualified, the compiler vectorises the micro-kernel at -O2
 * without intrinsics or pragmas; partial tiles are padded with zeros instead
 * of needing scalar remainder loops.
 *
 * Every C element is still accumulated in plain k order, one product at a
 * time (c = ((c + a0*b0) + a1*b1) + ...), so the result equals the naive
 * triple loop bit for bit (up to the sign of a zero sum): blocking changes
 * where the partial sums live, not the order of the additions. */
#include <string.h>

#include "ref-impl.h"

enum {
    GEMM_MR = 4,  /* rows of C per micro-kernel call */
    GEMM_KR = 4,  /* depth per micro-kernel call */
    GEMM_NB = 64, /* columns of C per tile: 256 bytes per row, in L1 */
    GEMM_KB = 128 /* depth of a panel: 128 x 64 floats = 32 KiB, in L1/L2 */
};

/* t[r][j] += sum_q a[r][q] * p[q][j] for r < 4, q < 4, j < GEMM_NB, with the
 * four products added one after the other. */
static void micro_4x4(float (*restrict t)[GEMM_NB], const float (*restrict p)[GEMM_NB],
                      const float *restrict a)
{
    const float a00 = a[0], a01 = a[1], a02 = a[2], a03 = a[3];
    const float a10 = a[4], a11 = a[5], a12 = a[6], a13 = a[7];
    const float a20 = a[8], a21 = a[9], a22 = a[10], a23 = a[11];
    const float a30 = a[12], a31 = a[13], a32 = a[14], a33 = a[15];
    for (int j = 0; j < GEMM_NB; j++) {
        const float b0 = p[0][j], b1 = p[1][j], b2 = p[2][j], b3 = p[3][j];
        t[0][j] = t[0][j] + a00 * b0 + a01 * b1 + a02 * b2 + a03 * b3;
        t[1][j] = t[1][j] + a10 * b0 + a11 * b1 + a12 * b2 + a13 * b3;
        t[2][j] = t[2][j] + a20 * b0 + a21 * b1 + a22 * b2 + a23 * b3;
        t[3][j] = t[3][j] + a30 * b0 + a31 * b1 + a32 * b2 + a33 * b3;
    }
}

/* Dot products of x with four rows y0..y3, each with eight partial sums:
 * the compiler turns the fixed eight-wide inner loops into vector code,
 * which a single running sum would forbid (reassociating float additions
 * is not allowed), and x is loaded once for four rows. */
static void dot8x4(const float *restrict x, const float *restrict y0, const float *restrict y1,
                   const float *restrict y2, const float *restrict y3, int64_t n, float out[4])
{
    float a0[8] = {0}, a1[8] = {0}, a2[8] = {0}, a3[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int u = 0; u < 8; u++) {
            const float xv = x[i + u];
            a0[u] += xv * y0[i + u];
            a1[u] += xv * y1[i + u];
            a2[u] += xv * y2[i + u];
            a3[u] += xv * y3[i + u];
        }
    float t[4] = {0};
    for (; i < n; i++) {
        t[0] += x[i] * y0[i];
        t[1] += x[i] * y1[i];
        t[2] += x[i] * y2[i];
        t[3] += x[i] * y3[i];
    }
    const float *acc[4] = {a0, a1, a2, a3};
    for (int r = 0; r < 4; r++) {
        const float *a = acc[r];
        out[r] = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])) + t[r];
    }
}

void ntp__ref_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                   int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    if (m <= 0 || n <= 0)
        return;
    for (int64_t i = 0; i < m; i++) {
        float *row = c + i * ldc;
        if (beta == 0.0f)
            memset(row, 0, (size_t)n * sizeof *row);
        else if (beta != 1.0f)
            for (int64_t j = 0; j < n; j++)
                row[j] *= beta;
    }
    if (k <= 0)
        return;

    if (!ta && tb && m < GEMM_MR) {
        /* A few rows times a transposed B (a batch-1 fc, one recurrent step):
         * packing B would cost as much as the product, so take dot products
         * of contiguous rows instead. */
        for (int64_t j = 0; j < n; j += 4) {
            /* Past the last row of B, repeat it; those results are dropped. */
            const float *y[4];
            for (int r = 0; r < 4; r++)
                y[r] = b + (j + r < n ? j + r : n - 1) * ldb;
            for (int64_t i = 0; i < m; i++) {
                float d[4];
                dot8x4(a + i * lda, y[0], y[1], y[2], y[3], k, d);
                for (int r = 0; r < 4 && j + r < n; r++)
                    c[i * ldc + j + r] += alpha * d[r];
            }
        }
        return;
    }

    float panel[GEMM_KB][GEMM_NB];
    float tile[GEMM_MR][GEMM_NB];
    float av[GEMM_MR * GEMM_KR];
    for (int64_t j0 = 0; j0 < n; j0 += GEMM_NB) {
        int64_t nb = n - j0 < GEMM_NB ? n - j0 : GEMM_NB;
        for (int64_t k0 = 0; k0 < k; k0 += GEMM_KB) {
            int64_t kb = k - k0 < GEMM_KB ? k - k0 : GEMM_KB;
            int64_t kbr = (kb + GEMM_KR - 1) / GEMM_KR * GEMM_KR;
            /* Pack op(B)[k0.., j0..] with zeros past its edges. */
            memset(panel, 0, (size_t)kbr * sizeof panel[0]);
            if (tb) {
                /* Four rows of B at a time, each depth's four values side
                 * by side in the panel: a panel line is written four
                 * times rather than sixteen. An 8x768 by 3072 fc, whose
                 * packing is most of its time, x0.78 (2026-12-04). */
                int64_t jj = 0;
                for (; jj + 4 <= nb; jj += 4) {
                    const float *s0 = b + (j0 + jj) * ldb + k0, *s1 = s0 + ldb;
                    const float *s2 = s1 + ldb, *s3 = s2 + ldb;
                    for (int64_t kk = 0; kk < kb; kk++) {
                        panel[kk][jj] = s0[kk];
                        panel[kk][jj + 1] = s1[kk];
                        panel[kk][jj + 2] = s2[kk];
                        panel[kk][jj + 3] = s3[kk];
                    }
                }
                for (; jj < nb; jj++) {
                    const float *src = b + (j0 + jj) * ldb + k0;
                    for (int64_t kk = 0; kk < kb; kk++)
                        panel[kk][jj] = src[kk];
                }
            } else {
                for (int64_t kk = 0; kk < kb; kk++)
                    memcpy(panel[kk], b + (k0 + kk) * ldb + j0, (size_t)nb * sizeof(float));
            }
            for (int64_t i0 = 0; i0 < m; i0 += GEMM_MR) {
                int64_t mr = m - i0 < GEMM_MR ? m - i0 : GEMM_MR;
                memset(tile, 0, sizeof tile);
                for (int64_t r = 0; r < mr; r++)
                    memcpy(tile[r], c + (i0 + r) * ldc + j0, (size_t)nb * sizeof(float));
                for (int64_t kk = 0; kk < kbr; kk += GEMM_KR) {
                    if (!ta && alpha == 1.0f && mr == GEMM_MR && kk + GEMM_KR <= kb) {
                        /* A whole block of A: copied without a test per
                         * element (those tests were a fifth of a 100-row
                         * fc's time, perf, 2026-12-04). */
                        const float *ab = a + i0 * lda + k0 + kk;
                        for (int r = 0; r < GEMM_MR; r++)
                            for (int q = 0; q < GEMM_KR; q++)
                                av[r * GEMM_KR + q] = ab[r * lda + q];
                    } else {
                        /* Rows past m and depths past k get a = 0 against a
                         * zero panel row, which adds exactly 0 to a real
                         * element. */
                        for (int r = 0; r < GEMM_MR; r++)
                            for (int q = 0; q < GEMM_KR; q++) {
                                int64_t i = i0 + r, kq = k0 + kk + q;
                                float v = 0.0f;
                                if (r < mr && kk + q < kb)
                                    v = ta ? a[kq * lda + i] : a[i * lda + kq];
                                av[r * GEMM_KR + q] = alpha == 1.0f ? v : alpha * v;
                            }
                    }
                    micro_4x4(tile, (const float(*)[GEMM_NB])panel[kk], av);
                }
                for (int64_t r = 0; r < mr; r++)
                    memcpy(c + (i0 + r) * ldc + j0, tile[r], (size_t)nb * sizeof(float));
            }
        }
    }
}
