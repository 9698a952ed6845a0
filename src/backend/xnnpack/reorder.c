/* NCHW <-> NHWC conversions for the XNNPACK backend: a batched matrix
 * transpose [n][rows][cols] -> [n][cols][rows], in 32 x 32 tiles so that both
 * the reads and the writes stay within a few cache lines, spread over the
 * backend's thread pool one strip of tiles per task. This snapshot of
 * XNNPACK has no transpose operator of its own. */
#include <string.h>

#include "xnnpack-impl.h"

#define TILE 32

typedef struct tr_job {
    const char *src;
    char *dst;
    int64_t rows, cols, strips;
    size_t esize;
} tr_job;

/* One strip: TILE rows of one image, every column. */
static void strip(void *arg, size_t task)
{
    const tr_job *j = arg;
    int64_t img = (int64_t)task / j->strips, r0 = ((int64_t)task % j->strips) * TILE;
    int64_t r1 = r0 + TILE < j->rows ? r0 + TILE : j->rows;
    size_t plane = (size_t)(j->rows * j->cols) * j->esize;
    const char *src = j->src + (size_t)img * plane;
    char *dst = j->dst + (size_t)img * plane;
    for (int64_t c0 = 0; c0 < j->cols; c0 += TILE) {
        int64_t c1 = c0 + TILE < j->cols ? c0 + TILE : j->cols;
        if (j->esize == 4) {
            const float *s = (const float *)(const void *)src;
            float *d = (float *)(void *)dst;
            for (int64_t r = r0; r < r1; r++)
                for (int64_t c = c0; c < c1; c++)
                    d[c * j->rows + r] = s[r * j->cols + c];
        } else if (j->esize == 2) {
            const uint16_t *s = (const uint16_t *)(const void *)src;
            uint16_t *d = (uint16_t *)(void *)dst;
            for (int64_t r = r0; r < r1; r++)
                for (int64_t c = c0; c < c1; c++)
                    d[c * j->rows + r] = s[r * j->cols + c];
        } else {
            for (int64_t r = r0; r < r1; r++)
                for (int64_t c = c0; c < c1; c++)
                    memcpy(dst + (size_t)(c * j->rows + r) * j->esize,
                           src + (size_t)(r * j->cols + c) * j->esize, j->esize);
        }
    }
}

void ntp__xnn_transpose(pthreadpool_t pool, const void *src, void *dst, int64_t n, int64_t rows,
                        int64_t cols, size_t esize, bool yield)
{
    if (n <= 0 || rows <= 0 || cols <= 0)
        return;
    tr_job j = {.src = src,
                .dst = dst,
                .rows = rows,
                .cols = cols,
                .strips = (rows + TILE - 1) / TILE,
                .esize = esize};
    pthreadpool_parallelize_1d(pool, strip, &j, (size_t)(n * j.strips),
                               yield ? PTHREADPOOL_FLAG_YIELD_WORKERS : 0);
}
