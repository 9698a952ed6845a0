/* ntprof's oneDNN backend beside PyTorch, in one run (issue 5, item 9):
 * ResNet-50 b1, MobileNetV2 b1, BERT-base seq 128 and DeepSpeech at f32 and
 * bf16 on 2 threads, with the ratios printed. In the same run: oneDNN's own
 * f32 matmul 1024x1024x1024 (the practical ceiling of this machine) and
 * ResNet-50's f32 rate as a share of it (target >= 80%), and ResNet-50's
 * bf16 speedup over f32 (target >= 2.5x). Targets are reported, never
 * enforced; where one is missed the lines after it say where the time went
 * (reorder and conversion rows, fallback layers, the slowest rows with the
 * implementation oneDNN chose).
 *
 * ntprof runs with --fuse (post-ops) and reports the median end-to-end
 * time. DeepSpeech is timed without its MFCC and CTC inlays on both sides:
 * here as the sum of its three marker segments (fc1-3, bilstm, fc4-5) from
 * the per-layer pass. PyTorch 1.13 runs bench/pytorch_bench.py with
 * /usr/bin/python3 (Debian's python3-torch and python3-torchvision).
 *
 *   bench_frameworks [--iterations N] [--threads T] [--quick] [--models LIST]
 * --quick: fewer iterations and BERT at sequence 32 (a smoke run); --models:
 * a comma-separated subset of resnet50, mobilenetv2, bert, deepspeech. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ntprof/ntprof.h"

#ifdef NTP_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>

#include "backend/onednn/onednn-impl.h"
#endif

typedef struct model {
    const char *key; /* as pytorch_bench.py names it */
    const char *label;
    const char *file;
    const char *set[2];
    int n_set;
    bool markers; /* time = the sum of the marker segments */
} model;

typedef struct result {
    double ms; /* 0: not run */
    double gflops;
    double heavy_ms, heavy_gflops; /* conv, deconv, fc, matmul, attention, rnn rows */
    int rows, on_onednn, fallback, fused;
    double reorder_ms, convert_ms, total_ms;
    char note[200];
} result;

enum { N_MODELS = 4, N_PREC = 2 };
static const char *prec_names[N_PREC] = {"f32", "bf16"};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The 1-minute load average, -1 if unknown. On a machine busier than its
 * cores, every primitive's thread barrier can wait out a scheduler time
 * slice, which hurts networks of many short layers most. */
static double load_average(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* oneDNN's f32 matmul M=N=K=1024 on `threads` threads: GFLOP/s (median). */
static double matmul_ceiling(int threads, int iterations)
{
#ifdef NTP_HAVE_ONEDNN
    ntp__dnnl_set_threads(threads);
    const int64_t n = 1024;
    dnnl_engine_t eng = NULL;
    dnnl_stream_t s = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t p = NULL;
    dnnl_memory_t ma = NULL, mb = NULL, mc = NULL;
    float *a = malloc((size_t)(n * n) * sizeof *a), *b = malloc((size_t)(n * n) * sizeof *b);
    float *c = malloc((size_t)(n * n) * sizeof *c);
    double *t = malloc((size_t)iterations * sizeof *t);
    double gflops = 0;
    if (!a || !b || !c || !t)
        goto done;
    for (int64_t i = 0; i < n * n; i++) {
        a[i] = (float)(i % 7) * 0.1f;
        b[i] = (float)(i % 5) * 0.1f;
    }
    dnnl_dims_t d = {n, n};
    dnnl_memory_desc_t md;
    dnnl_matmul_desc_t mm;
    dnnl_memory_desc_init_by_tag(&md, 2, d, dnnl_f32, dnnl_ab);
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) || dnnl_stream_create(&s, eng, 0) ||
        dnnl_matmul_desc_init(&mm, &md, &md, NULL, &md) ||
        dnnl_primitive_desc_create(&pd, &mm, NULL, eng, NULL) || dnnl_primitive_create(&p, pd) ||
        dnnl_memory_create(&ma, &md, eng, a) || dnnl_memory_create(&mb, &md, eng, b) ||
        dnnl_memory_create(&mc, &md, eng, c))
        goto done;
    const char *impl = "?";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
    for (int i = 0; i < 3; i++) {
        dnnl_primitive_execute(p, s, 3, args);
        dnnl_stream_wait(s);
    }
    for (int i = 0; i < iterations; i++) {
        double t0 = now_ms();
        dnnl_primitive_execute(p, s, 3, args);
        dnnl_stream_wait(s);
        t[i] = now_ms() - t0;
    }
    qsort(t, (size_t)iterations, sizeof *t, cmp_double);
    gflops = 2.0 * (double)(n * n * n) / (t[iterations / 2] * 1e-3) / 1e9;
    printf("oneDNN f32 matmul 1024x1024x1024 (%s, %d threads): median %.2f ms, %.1f GFLOP/s\n",
           impl, threads, t[iterations / 2], gflops);
done:
    if (mc)
        dnnl_memory_destroy(mc);
    if (mb)
        dnnl_memory_destroy(mb);
    if (ma)
        dnnl_memory_destroy(ma);
    if (p)
        dnnl_primitive_destroy(p);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (s)
        dnnl_stream_destroy(s);
    if (eng)
        dnnl_engine_destroy(eng);
    free(a);
    free(b);
    free(c);
    free(t);
    return gflops;
#else
    (void)threads;
    (void)iterations;
    return 0;
#endif
}

/* Rows worth reading when a target is missed: the slowest ones. */
static void print_top_rows(const ntp_run_result *r, int n)
{
    int *idx = malloc((size_t)ntp_run_result_layer_count(r) * sizeof *idx);
    if (!idx)
        return;
    for (int i = 0; i < ntp_run_result_layer_count(r); i++)
        idx[i] = i;
    for (int i = 0; i < ntp_run_result_layer_count(r) && i < n; i++)
        for (int j = i + 1; j < ntp_run_result_layer_count(r); j++)
            if (ntp_run_result_layer(r, idx[j])->time_ms.median >
                ntp_run_result_layer(r, idx[i])->time_ms.median) {
                int t = idx[i];
                idx[i] = idx[j];
                idx[j] = t;
            }
    for (int i = 0; i < ntp_run_result_layer_count(r) && i < n; i++) {
        const ntp_layer_result *L = ntp_run_result_layer(r, idx[i]);
        printf("      %-34s %-10s %-8s %8.3f ms %5.1f%% %7.1f GFLOP/s  %s\n", L->name, L->type,
               L->backend ? L->backend : "-", L->time_ms.median, 100 * L->share, L->gflops,
               L->impl ? L->impl : "");
    }
    free(idx);
}

static void run_ntprof(const model *m, int prec, int threads, int iterations, result *res,
                       bool verbose)
{
    char path[512];
    snprintf(path, sizeof path, "%s/models/%s", NTP_SOURCE_DIR, m->file);
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_load_opts lo = {0};
    lo.set = m->set;
    lo.n_set = m->n_set;
    lo.set_precision =
        prec_names[prec] && ntp_dtype_parse(prec_names[prec], &lo.precision) == NTP_STATUS_OK;
    ntp_graph *g = NULL;
    ntp_run_result *r = NULL;
    memset(res, 0, sizeof *res);
    if (ntp_graph_load(ctx, path, &lo, &g) != NTP_STATUS_OK) {
        snprintf(res->note, sizeof res->note, "%s", ntp_ctx_errmsg(ctx));
        goto done;
    }
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    o.backend = "onednn";
    o.threads = threads;
    o.warmup = 3;
    o.iterations = iterations;
    o.min_time_s = 0.5;
    o.fuse = true;
    o.accuracy = false;
    if (ntp_run(ctx, g, &o, &r) != NTP_STATUS_OK) {
        snprintf(res->note, sizeof res->note, "%s", ntp_ctx_errmsg(ctx));
        goto done;
    }
    res->ms = ntp_run_result_end_to_end_ms(r)->median;
    if (m->markers) {
        res->ms = 0;
        for (int i = 0; i < ntp_run_result_marker_count(r); i++)
            res->ms += ntp_run_result_marker(r, i)->time_ms.median;
    }
    res->rows = ntp_run_result_layer_count(r);
    int64_t flops = 0;
    for (int i = 0; i < ntp_run_result_layer_count(r); i++) {
        const ntp_layer_result *L = ntp_run_result_layer(r, i);
        bool on = L->backend && strcmp(L->backend, "onednn") == 0;
        bool layer = !L->kind || strcmp(L->kind, "layer") == 0;
        res->on_onednn += on && layer;
        res->fallback += !on && layer;
        res->fused += L->fused;
        res->total_ms += L->time_ms.median;
        if (L->kind && strcmp(L->kind, "reorder") == 0)
            res->reorder_ms += L->time_ms.median;
        if (L->kind && strcmp(L->kind, "convert") == 0)
            res->convert_ms += L->time_ms.median;
        if (!m->markers ||
            (i >= ntp_run_result_marker(r, 0)->first &&
             i <= ntp_run_result_marker(r, ntp_run_result_marker_count(r) - 1)->last))
            flops += L->flops;
        static const char *const heavy[] = {"conv",      "deconv", "fc",  "matmul",
                                            "attention", "lstm",   "gru", "rnn"};
        for (size_t h = 0; h < sizeof heavy / sizeof heavy[0]; h++)
            if (L->type && strcmp(L->type, heavy[h]) == 0 && !L->fused) {
                res->heavy_ms += L->time_ms.median;
                res->heavy_gflops += (double)L->flops; /* FLOPs for now */
            }
    }
    res->heavy_gflops = res->heavy_ms > 0 ? res->heavy_gflops / (res->heavy_ms * 1e-3) / 1e9 : 0;
    res->gflops = res->ms > 0 ? (double)flops / (res->ms * 1e-3) / 1e9 : 0;
    if (verbose) {
        printf("    %s %s: %d rows: %d layers on oneDNN, %d elsewhere, %d fused; "
               "reorders %.1f%%, conversions %.1f%% of the layer time\n",
               m->label, prec_names[prec], res->rows, res->on_onednn, res->fallback, res->fused,
               res->total_ms > 0 ? 100 * res->reorder_ms / res->total_ms : 0,
               res->total_ms > 0 ? 100 * res->convert_ms / res->total_ms : 0);
        print_top_rows(r, 6);
    }
done:
    ntp_run_result_free(r);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* Does oneDNN run this model's heavy layers at precision p here? */
static bool onednn_has(const model *m, const char *precision)
{
    char path[512];
    snprintf(path, sizeof path, "%s/models/%s", NTP_SOURCE_DIR, m->file);
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_load_opts lo = {0};
    lo.set = m->set;
    lo.n_set = m->n_set;
    lo.set_precision = precision && ntp_dtype_parse(precision, &lo.precision) == NTP_STATUS_OK;
    ntp_graph *g = NULL;
    bool any = false;
#ifdef NTP_HAVE_ONEDNN
    if (ntp_graph_load(ctx, path, &lo, &g) == NTP_STATUS_OK)
        for (int i = 0; i < g->n_nodes && !any; i++)
            any = (g->nodes[i].op == NTP_OP_CONV || g->nodes[i].op == NTP_OP_FC) &&
                  ntp__backend_onednn.supports(g, &g->nodes[i], g->nodes[i].precision);
#endif
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
    return any;
}

/* Run pytorch_bench.py for one model at both precisions; fill ms[prec]
 * (0: n/a). */
static void run_pytorch(const model *m, int threads, int iterations, int seq_len, double ms[N_PREC],
                        char *version, size_t vlen)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 %s/bench/pytorch_bench.py --threads %d --iterations %d "
             "--seq-len %d --models %s 2>&1",
             NTP_SOURCE_DIR, threads, iterations, seq_len, m->key);
    FILE *f = popen(cmd, "r");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char name[64], prec[16], val[64];
        if (strncmp(line, "PYTORCH ", 8) == 0) {
            line[strcspn(line, "\n")] = '\0';
            if (snprintf(version, vlen, "%s", line + 8) >= (int)vlen)
                version[vlen - 1] = '\0';
        } else if (sscanf(line, "RESULT %63s %15s %63s", name, prec, val) == 3) {
            for (int p = 0; p < N_PREC; p++)
                if (strcmp(name, m->key) == 0 && strcmp(prec, prec_names[p]) == 0)
                    ms[p] = strcmp(val, "n/a") == 0 ? 0 : atof(val);
            if (strstr(line, " n/a "))
                printf("  pytorch: %s", line + 7);
        } else if (strstr(line, "Error") || strstr(line, "error")) {
            printf("  pytorch: %s", line);
        }
    }
    int rc = pclose(f);
    if (rc != 0)
        printf("  pytorch_bench.py exited with status %d\n", rc);
}

int main(int argc, char **argv)
{
    int threads = 2, iterations = 10, seq_len = 128;
    bool quick = false;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
            iterations = atoi(argv[++i]);
        else if (strcmp(argv[i], "--quick") == 0)
            quick = true;
        else if (strcmp(argv[i], "--models") == 0 && i + 1 < argc)
            only = argv[++i];
        else {
            fprintf(stderr, "usage: bench_frameworks [--iterations N] [--threads T] [--quick] "
                            "[--models resnet50,mobilenetv2,bert,deepspeech]\n");
            return 2;
        }
    }
    if (quick) {
        iterations = 3;
        seq_len = 32;
    }
    char seq[32];
    snprintf(seq, sizeof seq, "seq_len=%d", seq_len);
    const model models[N_MODELS] = {
        {"resnet50", "ResNet-50 b1", "resnet50.xml", {NULL, NULL}, 0, false},
        {"mobilenetv2", "MobileNetV2 b1", "mobilenetv2.xml", {NULL, NULL}, 0, false},
        {"bert", "BERT-base", "bert-base.xml", {seq, NULL}, 1, false},
        {"deepspeech", "DeepSpeech", "deepspeech.xml", {NULL, NULL}, 0, true},
    };
    ntp_env env;
    ntp_env_collect(&env);
    double load0 = load_average();
    printf("bench_frameworks: ntprof %s (%s) backends %s; %s, %d cores; %d threads, "
           "%d iterations; load average %.2f\n",
           ntp_version(), ntp_git_revision(), ntp_backends(), env.cpu_model, env.cores, threads,
           iterations, load0);
    if (!strstr(ntp_backends(), "onednn")) {
        printf("oneDNN backend not built: nothing to compare\n");
        return 0;
    }
#ifdef NTP_HAVE_ONEDNN
    printf("oneDNN %d.%d.%d, effective ISA 0x%x\n", dnnl_version()->major, dnnl_version()->minor,
           dnnl_version()->patch, (unsigned)dnnl_get_effective_cpu_isa());
#endif
    /* Each model runs on ntprof and then on PyTorch before the next one
     * starts, so a change in the machine's load between them moves both
     * sides alike; the matmul ceiling is taken just before and just after
     * ResNet-50 and the higher of the two kept. */
    result res[N_MODELS][N_PREC];
    double torch_ms[N_MODELS][N_PREC];
    memset(res, 0, sizeof res);
    memset(torch_ms, 0, sizeof torch_ms);
    char version[256];
    snprintf(version, sizeof version, "n/a (python3-torch not installed)");
    double ceiling = 0;
    for (int m = 0; m < N_MODELS; m++) {
        if (only && !strstr(only, models[m].key)) {
            snprintf(res[m][0].note, sizeof res[m][0].note, "not run (--models)");
            continue;
        }
        if (m == 0 || ceiling == 0)
            ceiling = matmul_ceiling(threads, quick ? 5 : 20);
        for (int p = 0; p < N_PREC; p++) {
            if (p == 1 && !onednn_has(&models[m], "bf16")) {
                snprintf(res[m][p].note, sizeof res[m][p].note,
                         "oneDNN has no bf16 kernels on this CPU (oneDNN 2.6 needs AVX-512); "
                         "every layer would run on the reference backend");
                continue;
            }
            printf("  %s %s on ntprof/onednn:\n", models[m].label, prec_names[p]);
            fflush(stdout);
            run_ntprof(&models[m], p, threads, iterations, &res[m][p], true);
            if (m == 0 && p == 0) {
                double again = matmul_ceiling(threads, quick ? 5 : 20);
                if (again > ceiling)
                    ceiling = again;
            }
        }
        printf("  %s on PyTorch (bench/pytorch_bench.py)\n", models[m].label);
        fflush(stdout);
        run_pytorch(&models[m], threads, iterations, seq_len, torch_ms[m], version, sizeof version);
    }

    printf("\nPyTorch: %s\n", version);
    printf("%-16s %-5s %14s %14s %12s  %s\n", "model", "prec", "ntprof ms", "PyTorch ms",
           "PyTorch/ntp", "target (ntprof at least as fast at f32)");
    for (int m = 0; m < N_MODELS; m++)
        for (int p = 0; p < N_PREC; p++) {
            char a[32] = "n/a", b[32] = "n/a", ratio[32] = "-";
            if (res[m][p].ms > 0)
                snprintf(a, sizeof a, "%.2f", res[m][p].ms);
            if (torch_ms[m][p] > 0)
                snprintf(b, sizeof b, "%.2f", torch_ms[m][p]);
            if (res[m][p].ms > 0 && torch_ms[m][p] > 0)
                snprintf(ratio, sizeof ratio, "%.2fx", torch_ms[m][p] / res[m][p].ms);
            const char *target = "";
            if (p == 0 && res[m][p].ms > 0 && torch_ms[m][p] > 0)
                target = res[m][p].ms <= torch_ms[m][p] ? "met" : "MISSED";
            printf("%-16s %-5s %14s %14s %12s  %s%s%s\n", models[m].label, prec_names[p], a, b,
                   ratio, target, res[m][p].note[0] ? (target[0] ? "; " : "") : "", res[m][p].note);
        }

    double load1 = load_average();
    if (load0 > env.cores || load1 > env.cores)
        printf("\nwarning: the machine was busy (load average %.2f before, %.2f after, on %d "
               "cores): with %d threads each primitive's barrier may wait out another process's "
               "time slice, so networks of many short layers lose most; compare --threads 1\n",
               load0, load1, env.cores, threads);
    const result *r32 = &res[0][0], *r16 = &res[0][1];
    printf("\nResNet-50 f32: %.1f GFLOP/s", r32->gflops);
    if (ceiling > 0 && r32->gflops > 0) {
        double share = r32->gflops / ceiling;
        printf(" = %.0f%% of oneDNN's matmul ceiling %.1f GFLOP/s (target >= 80%%: %s)\n",
               100 * share, ceiling, share >= 0.8 ? "met" : "MISSED");
        if (share < 0.8) {
            printf("  where it goes: reorders %.1f%% and conversions %.1f%% of the layer time, "
                   "%d layers fused, %d not on oneDNN (the rows above name the slowest layers "
                   "and their kernels)\n",
                   r32->total_ms > 0 ? 100 * r32->reorder_ms / r32->total_ms : 0,
                   r32->total_ms > 0 ? 100 * r32->convert_ms / r32->total_ms : 0, r32->fused,
                   r32->fallback);
            printf("  the convolutions alone run at %.1f GFLOP/s (%.0f%% of the ceiling) and take "
                   "%.0f%% of the layer time; pooling, the layers --fuse could not fold, and the "
                   "per-primitive thread synchronisation take the rest\n",
                   r32->heavy_gflops, 100 * r32->heavy_gflops / ceiling,
                   r32->total_ms > 0 ? 100 * r32->heavy_ms / r32->total_ms : 0);
        }
    } else {
        printf("\n");
    }
    if (r16->ms > 0 && r32->ms > 0)
        printf("ResNet-50 bf16 speedup over f32: %.2fx (target >= 2.5x: %s)\n", r32->ms / r16->ms,
               r32->ms / r16->ms >= 2.5 ? "met" : "MISSED");
    else
        printf("ResNet-50 bf16 speedup over f32: n/a (target >= 2.5x: not measurable here): %s\n",
               r16->note[0] ? r16->note : "no bf16 run");
    /* The evidence that bf16 needs hardware this CPU lacks: its ISA flags,
     * and PyTorch's own bf16 (autocast, the same oneDNN underneath) against
     * its f32 on the same models in this run. */
    if (r16->ms <= 0) {
        printf("  this CPU's ISA flags: %s\n", env.cpu_flags[0] ? env.cpu_flags : "unknown");
        for (int m = 0; m < N_MODELS; m++)
            if (torch_ms[m][0] > 0 && torch_ms[m][1] > 0)
                printf("  PyTorch's own bf16 on %s: %.1fx %s than its f32\n", models[m].label,
                       torch_ms[m][1] > torch_ms[m][0] ? torch_ms[m][1] / torch_ms[m][0]
                                                       : torch_ms[m][0] / torch_ms[m][1],
                       torch_ms[m][1] > torch_ms[m][0] ? "slower" : "faster");
    }
    return 0;
}
