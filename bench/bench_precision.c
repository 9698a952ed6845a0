/* ResNet-50 b1 and MobileNetV2 b1 on oneDNN at f32, bf16 and int8 with
 * --fuse (issue 13, item 5), interleaved in one run: each round runs every
 * precision once, so all three see the same machine state; the figure per
 * precision is the median over rounds of each run's median end-to-end time.
 * Printed: the time, the speed-up over f32 (f32 time / this time), the
 * accuracy against f32 (relative L2, top-1 and top-5 agreement, from the
 * first round), and how many layers oneDNN ran at the precision (the rest
 * fell back to ref). Targets on CPUs that have the instructions: bf16 at
 * least 1.6x faster than f32 with AVX512-BF16, int8 at least 2x with VNNI.
 *
 * Then the f32 -> int8 input conversion (1x3x224x224): the scalar loop
 * against the vectorised one (ntp__quantize_i8_n), interleaved, with GB/s
 * (4 bytes read + 1 written per value) and the ratio.
 *
 *   bench_precision [--rounds N] [--iterations N] [--threads T] [--quick]
 * --quick: MobileNetV2 only, 2 rounds (a smoke run). Nothing fails on time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/numeric-impl.h"
#include "ntprof/ntprof.h"

#define N_PREC 3
static const char *const precs[N_PREC] = {"f32", "bf16", "i8"};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void loadavg(const char *when)
{
    FILE *f = fopen("/proc/loadavg", "r");
    char buf[128] = "?";
    if (f) {
        if (!fgets(buf, sizeof buf, f))
            strcpy(buf, "?\n");
        fclose(f);
    }
    printf("load average %s: %s", when, buf);
}

typedef struct cell {
    double ms[64];
    double rel_l2, top1, top5;
    int own, layers;
    char slowest[512];
} cell;

/* The layers of r that did not run on oneDNN, and the three slowest rows,
 * for the per-layer reasons. */
static void describe(const ntp_run_result *r, cell *c)
{
    c->own = c->layers = 0;
    int top[3] = {-1, -1, -1};
    for (int i = 0; i < ntp_run_result_layer_count(r); i++) {
        const ntp_layer_result *L = ntp_run_result_layer(r, i);
        if (!L->inlay && (strcmp(L->kind, "layer") == 0 || strcmp(L->kind, "fused") == 0)) {
            c->layers++;
            c->own += L->backend && strcmp(L->backend, "onednn") == 0;
        }
        for (int k = 0; k < 3; k++)
            if (top[k] < 0 || L->time_ms.median > ntp_run_result_layer(r, top[k])->time_ms.median) {
                for (int m = 2; m > k; m--)
                    top[m] = top[m - 1];
                top[k] = i;
                break;
            }
    }
    size_t u = 0;
    for (int k = 0; k < 3 && top[k] >= 0 && u < sizeof c->slowest; k++) {
        const ntp_layer_result *L = ntp_run_result_layer(r, top[k]);
        u += (size_t)snprintf(c->slowest + u, sizeof c->slowest - u, "%s%s %.3g ms (%s %s%s%s)",
                              k ? "; " : "", L->name, L->time_ms.median, L->kind,
                              L->backend ? L->backend : "?", L->impl ? " " : "",
                              L->impl ? L->impl : "");
    }
}

static int bench_model(const char *label, const char *file, int rounds, int iters, int threads)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/models/%s", NTP_SOURCE_DIR, file);
    cell cells[N_PREC];
    memset(cells, 0, sizeof cells);
    ntp_graph *g[N_PREC] = {NULL};
    ntp_ctx *ctx = ntp_ctx_init();
    for (int p = 0; p < N_PREC; p++) {
        ntp_load_opts lo = {0};
        lo.set_precision = precs[p] && ntp_dtype_parse(precs[p], &lo.precision) == NTP_STATUS_OK;
        if (ntp_graph_load(ctx, path, &lo, &g[p]) != NTP_STATUS_OK) {
            fprintf(stderr, "bench_precision: %s\n", ntp_ctx_errmsg(ctx));
            return 1;
        }
    }
    for (int rd = 0; rd < rounds; rd++)
        for (int p = 0; p < N_PREC; p++) {
            ntp_run_opts o;
            ntp_run_opts_default(&o);
            o.backend = "onednn";
            o.fuse = true;
            o.threads = threads;
            o.iterations = iters;
            o.min_time_s = 0;
            o.warmup = 3;
            o.accuracy = rd == 0 && p > 0;
            ntp_run_result *r = NULL;
            if (ntp_run(ctx, g[p], &o, &r) != NTP_STATUS_OK) {
                fprintf(stderr, "bench_precision: %s at %s: %s\n", label, precs[p],
                        ntp_ctx_errmsg(ctx));
                return 1;
            }
            cell *c = &cells[p];
            c->ms[rd] = ntp_run_result_end_to_end_ms(r)->median;
            if (rd == 0) {
                c->rel_l2 =
                    ntp_run_result_accuracy_count(r) ? ntp_run_result_accuracy(r, 0)->rel_l2 : 0;
                c->top1 =
                    ntp_run_result_accuracy_count(r) ? ntp_run_result_accuracy(r, 0)->top1 : 1;
                c->top5 =
                    ntp_run_result_accuracy_count(r) ? ntp_run_result_accuracy(r, 0)->top5 : 1;
                describe(r, c);
            }
            ntp_run_result_free(r);
        }
    double med[N_PREC];
    for (int p = 0; p < N_PREC; p++)
        med[p] = median(cells[p].ms, rounds);
    printf("\n%s on onednn --fuse, %d rounds x %d iterations, median of round medians:\n", label,
           rounds, iters);
    printf("  %-5s %10s %9s %10s %7s %7s %12s\n", "prec", "ms", "vs f32", "rel L2", "top-1",
           "top-5", "on onednn");
    for (int p = 0; p < N_PREC; p++)
        printf("  %-5s %10.3f %8.2fx %10.3g %6.1f%% %6.1f%% %6d of %d\n", precs[p], med[p],
               med[0] / med[p], cells[p].rel_l2, 100 * cells[p].top1, 100 * cells[p].top5,
               cells[p].own, cells[p].layers);
    for (int p = 0; p < N_PREC; p++)
        printf("  %s slowest: %s\n", precs[p], cells[p].slowest);
    for (int p = 0; p < N_PREC; p++)
        ntp_graph_free(g[p]);
    ntp_ctx_free(ctx);
    return 0;
}

/* The f32 -> int8 conversion of a 1x3x224x224 input: scalar against the
 * widest vector path, interleaved. */
static void bench_convert(int rounds)
{
    enum { N = 3 * 224 * 224 };
    float *x = malloc(N * sizeof *x);
    int8_t *a = malloc(N), *b = malloc(N);
    if (!x || !a || !b)
        return;
    uint32_t r = 1;
    for (int i = 0; i < N; i++) {
        r = r * 1664525u + 1013904223u;
        x[i] = (float)((int32_t)(r >> 8) - (1 << 23)) / (float)(1 << 21);
    }
    float scale = 4.0f / 127.0f;
    double ts[64], tv[64];
    for (int rd = 0; rd < rounds * 4; rd++) {
        double t0 = now_s();
        ntp__quantize_i8_n_isa(a, x, N, scale, NTP_NUMERIC_SCALAR);
        double t1 = now_s();
        ntp__quantize_i8_n(b, x, N, scale);
        double t2 = now_s();
        ts[rd] = t1 - t0;
        tv[rd] = t2 - t1;
    }
    bool same = memcmp(a, b, N) == 0;
    double ms_s = 1e3 * median(ts, rounds * 4), ms_v = 1e3 * median(tv, rounds * 4);
    printf("\nf32 -> i8 conversion of 1x3x224x224 (%d values), median of %d:\n", N, rounds * 4);
    printf("  scalar     %8.3f ms %7.2f GB/s\n", ms_s, 5.0 * N / (ms_s * 1e6));
    printf("  vectorised %8.3f ms %7.2f GB/s  (%.1fx faster; results %s)\n", ms_v,
           5.0 * N / (ms_v * 1e6), ms_s / ms_v, same ? "identical" : "DIFFER");
    free(x);
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    int rounds = 5, iters = 20, threads = 0;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--quick") == 0)
            quick = true;
        else {
            fprintf(stderr, "usage: bench_precision [--rounds N] [--iterations N] [--threads T] "
                            "[--quick]\n");
            return 2;
        }
    }
    if (quick)
        rounds = 2;
    if (rounds < 1 || rounds > 16 || iters < 1) {
        fprintf(stderr, "bench_precision: --rounds 1..16, --iterations >= 1\n");
        return 2;
    }
    if (!strstr(ntp_backends(), "onednn")) {
        fprintf(stderr, "bench_precision: this build has no oneDNN backend\n");
        return 1;
    }
    loadavg("at start");
    bench_convert(rounds);
    int rc = 0;
    if (!quick)
        rc |= bench_model("ResNet-50 b1", "resnet50.xml", rounds, iters, threads);
    rc |= bench_model("MobileNetV2 b1", "mobilenetv2.xml", rounds, iters, threads);
    loadavg("at end");
    return rc;
}
