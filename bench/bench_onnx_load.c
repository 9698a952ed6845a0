/* How long loading a ~100 MB ONNX model takes: ResNet-50.
 *
 *   bench_onnx_load [--torch] [REPETITIONS]        (default 7 repetitions)
 *
 * The model is written at bench time into a temporary directory, never
 * committed: by ntprof's own exporter from models/resnet50.xml (no extra
 * dependency), and with --torch also by PyTorch (bench/export_resnet50.py,
 * torchvision's ResNet-50 with random weights, which needs python3-torch).
 *
 * Each repetition times ntp_graph_load() end to end: mapping the file,
 * protobuf-c's unpack (which copies the weights once, out of the mapping;
 * f32 raw data is then handed to the graph without a second copy), mapping
 * the nodes, shape inference and memory planning. Side by side, in the same
 * run, it times reading the file's bytes into memory, the floor any loader
 * pays, and prints the ratio. The target is under 0.3 s (median); the
 * benchmark says whether it was met and never fails on time, only if the
 * model does not load. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ntprof/ntprof.h"
#include "ntprof/onnx.h"

#define TARGET_S 0.3

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Read the whole file into memory (the floor of any loader). */
static double read_file(const char *path, size_t *bytes)
{
    double t0 = now();
    int fd = open(path, O_RDONLY);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    char *buf = malloc((size_t)sb.st_size + 1);
    size_t done = 0;
    while (buf && done < (size_t)sb.st_size) {
        ssize_t r = read(fd, buf + done, (size_t)sb.st_size - done);
        if (r <= 0)
            break;
        done += (size_t)r;
    }
    close(fd);
    free(buf);
    *bytes = done;
    return now() - t0;
}

static int bench(const char *label, const char *path, int reps)
{
    double *load = malloc((size_t)reps * sizeof *load), *raw = malloc((size_t)reps * sizeof *raw);
    ntp_ctx *ctx = ntp_ctx_init();
    size_t bytes = 0;
    int64_t params = 0;
    if (!load || !raw || !ctx)
        return 1;
    for (int i = 0; i < reps; i++) {
        raw[i] = read_file(path, &bytes);
        ntp_graph *g = NULL;
        ntp_load_opts o = {.max_memory = -1};
        double t0 = now();
        ntp_status st = ntp_graph_load(ctx, path, &o, &g);
        load[i] = now() - t0;
        if (st != NTP_STATUS_OK) {
            fprintf(stderr, "bench_onnx_load: %s\n", ntp_ctx_errmsg(ctx));
            return 1;
        }
        if (i == 0) {
            ntp_analysis *a = NULL;
            if (ntp_graph_analyze(ctx, g, &a) == NTP_STATUS_OK)
                params = a->params;
            ntp_analysis_free(a);
        }
        ntp_graph_free(g);
        ntp_ctx_clear_warnings(ctx);
    }
    qsort(load, (size_t)reps, sizeof *load, cmp_double);
    qsort(raw, (size_t)reps, sizeof *raw, cmp_double);
    double med = load[reps / 2], rmed = raw[reps / 2];
    printf("%-26s %7.1f MB  %5.1fM params  load median %.3f s (min %.3f, max %.3f)  "
           "read %.3f s  load/read %.1fx  %s\n",
           label, (double)bytes / 1e6, (double)params / 1e6, med, load[0], load[reps - 1], rmed,
           rmed > 0 ? med / rmed : 0.0, med < TARGET_S ? "target met" : "TARGET MISSED");
    free(load);
    free(raw);
    ntp_ctx_free(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    int reps = 7;
    int torch = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--torch") == 0)
            torch = 1;
        else if (atoi(argv[i]) > 0)
            reps = atoi(argv[i]);
    }
    char dir[] = "/tmp/ntp-bench-onnx-XXXXXX", path[128], cmd[512];
    if (!mkdtemp(dir))
        return 1;
    int rc = 0;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = NULL;
    snprintf(path, sizeof path, "%s/resnet50.onnx", dir);
    if (ntp_graph_load(ctx, NTP_SOURCE_DIR "/models/resnet50.xml", NULL, &g) != NTP_STATUS_OK ||
        ntp_graph_export_onnx(ctx, g, path, NULL) != NTP_STATUS_OK) {
        fprintf(stderr, "bench_onnx_load: %s\n", ntp_ctx_errmsg(ctx));
        rc = 1;
    }
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
    printf("ONNX load, median of %d (target %.1f s):\n", reps, TARGET_S);
    if (rc == 0)
        rc = bench("resnet50 (ntprof export)", path, reps);
    if (rc == 0 && torch) {
        snprintf(path, sizeof path, "%s/resnet50-torch.onnx", dir);
        snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/bench/export_resnet50.py %s 2>/dev/null",
                 NTP_SOURCE_DIR, path);
        if (system(cmd) == 0)
            rc = bench("resnet50 (torch.onnx)", path, reps);
        else
            printf("resnet50 (torch.onnx): not exported (python3-torch and torchvision needed)\n");
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_onnx_load: could not remove %s\n", dir);
    return rc;
}
