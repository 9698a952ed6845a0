/* ntprof's torch backend beside PyTorch itself, in one run (issue 19):
 * ResNet-50, MobileNetV2, BERT-base (sequence 128) and DeepSpeech's
 * acoustic model (200 steps) at batch 1, f32, on the same threads, three
 * ways, interleaved round by round so that a change in the machine's load
 * hits all three alike:
 *
 *   eager        ntprof run --backend torch: each layer as the ATen operators
 *                PyTorch's modules call (median end-to-end of the pass
 *                without per-layer timing)
 *   script       the same topology as one TorchScript module, frozen and
 *                optimised for inference (torch::jit::optimize_for_inference),
 *                median of forward() calls
 *   pytorch      torchvision's model as a plain nn.Module in eval mode under
 *                torch.inference_mode(), run by /usr/bin/python3
 *                (bench/pytorch_bench.py, Debian's python3-torch 1.13)
 *
 * and the ratios eager/pytorch (target: within 10%) and script/pytorch,
 * then one verdict line per model and mode: the per-round ratio's median
 * and its 95% interval, and whether that interval lies within 10%.
 * Before the rounds, each model's outputs are checked once against the
 * reference backend's (eager and script, relative L2 within 1e-4: the
 * issue's second half of fidelity); --no-check leaves that out (the
 * reference backend's pass takes tens of seconds on BERT-base and
 * DeepSpeech). --heap kept runs PyTorch only with its heap kept (the run
 * the target is against), not also with glibc's default malloc.
 * The load average is printed before and after: on a shared machine the
 * ratios are what to read, not the absolute times.
 *
 *   bench_torch [--threads T] [--rounds R] [--iterations N] [--models LIST]
 *               [--heap kept|both] [--no-check]
 * LIST: a comma-separated subset of resnet50, mobilenetv2, bert, deepspeech. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ntprof/ntprof.h"

#ifdef NTP_HAVE_TORCH
#include "backend/torch/torch-impl.h"
#endif

typedef struct model {
    const char *key;  /* as pytorch_bench.py names it */
    const char *file; /* under the source tree */
    const char *set[2];
    int n_set;
} model;

/* DeepSpeech without its MFCC and CTC inlays, as pytorch_bench.py's
 * DeepSpeech is: the acoustic model on its [steps, batch, 494] features.
 * BERT's ids are i32: the eager mode looks them up with at::embedding, the
 * TorchScript mode takes them as int64 (torch.embedding, as
 * nn.Embedding). */
static const model models[] = {
    {"resnet50", "models/resnet50.xml", {NULL}, 0},
    {"mobilenetv2", "models/mobilenetv2.xml", {NULL}, 0},
    {"bert", "models/bert-base.xml", {"seq_len=128"}, 1},
    {"deepspeech", "bench/deepspeech-acoustic.xml", {"time_steps=200"}, 1},
};

static void loadavg(const char *when)
{
    FILE *f = fopen("/proc/loadavg", "r");
    char line[128] = "n/a";
    if (f) {
        if (!fgets(line, sizeof line, f))
            snprintf(line, sizeof line, "n/a");
        fclose(f);
    }
    line[strcspn(line, "\n")] = '\0';
    printf("load average %s: %s\n", when, line);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    if (n <= 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* pytorch_bench.py for one model at f32: its median ms, 0 when n/a. With
 * keep_heap, glibc's malloc keeps freed memory in the process (the
 * script's default, see HEAP_KEPT there: PyTorch's eager mode frees every
 * activation after use, and on a virtual machine each pass then faults its
 * pages in again; ntprof plans activations before it measures); without,
 * glibc's defaults. */
static double run_pytorch(const model *m, int threads, int iterations, bool keep_heap)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 %s/bench/pytorch_bench.py --threads %d --iterations %d "
             "--precisions f32 --models %s --heap %s 2>&1",
             NTP_SOURCE_DIR, threads, iterations, m->key, keep_heap ? "kept" : "default");
    FILE *f = popen(cmd, "r");
    if (!f)
        return 0;
    char line[1024];
    double ms = 0;
    while (fgets(line, sizeof line, f)) {
        char name[64], prec[16], val[64];
        if (sscanf(line, "RESULT %63s %15s %63s", name, prec, val) == 3 &&
            strcmp(name, m->key) == 0 && strcmp(val, "n/a") != 0)
            ms = atof(val);
        else if (strstr(line, " n/a") || strstr(line, "rror"))
            printf("  pytorch: %s", line);
    }
    pclose(f);
    return ms;
}

#ifdef NTP_HAVE_TORCH
/* ntprof run --backend torch: median end-to-end ms and the prepare time. */
static double run_eager(ntp_ctx *ctx, const ntp_graph *g, int threads, int iterations,
                        double *prepare_ms)
{
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    o.backend = "torch";
    o.threads = threads;
    o.warmup = 3;
    o.iterations = iterations;
    o.min_time_s = 0;
    o.accuracy = false;
    ntp_run_result *r = NULL;
    if (ntp_run(ctx, g, &o, &r) != NTP_STATUS_OK) {
        printf("  eager: %s\n", ntp_ctx_errmsg(ctx));
        return 0;
    }
    double ms = ntp_run_result_latency_ms(r);
    *prepare_ms = ntp_run_result_prepare_ms(r);
    ntp_run_result_free(r);
    ntp_ctx_clear_warnings(ctx);
    return ms;
}

/* The fidelity verdict of one mode: the per-round ratios to PyTorch (heap
 * kept), each round's pair run back to back, their median and its 95%
 * interval (ntp_stats, order statistics): within 10% when the whole
 * interval is inside 0.90..1.10, outside when it is all beyond, else not
 * decided at this many rounds (or under 6 rounds, which give no 95%
 * interval: the range is shown). */
static void verdict(const char *key, const char *mode, const double *ratio, int n)
{
    if (n == 0) {
        printf("verdict %-12s %-6s n/a (no round measured both)\n", key, mode);
        return;
    }
    ntp_stats st;
    ntp_stats_compute(ratio, (size_t)n, &st);
    /* Under 6 rounds no two order statistics cover the median at 95%:
     * no verdict, the range shown. */
    const char *v = n < 6 ? "undecided (under 6 rounds: no 95% interval; --rounds 6 or more)"
                    : st.ci95_lo >= 0.9 && st.ci95_hi <= 1.1 ? "within 10% of PyTorch"
                    : st.ci95_hi < 0.9 || st.ci95_lo > 1.1   ? "NOT within 10% of PyTorch"
                                                             : "undecided (the interval crosses "
                                                               "0.90 or 1.10: more rounds)";
    printf("verdict %-12s %-6s %s: %s/pytorch %.3f, %s %.3f..%.3f over %d interleaved "
           "rounds\n",
           key, mode, v, mode, st.median, n >= 6 ? "95% CI" : "range (under 6 rounds)", st.ci95_lo,
           st.ci95_hi, n);
}

/* One line: a mode's outputs against the reference backend's. */
static void print_check(const char *key, const char *mode, double rel_l2, double max_abs)
{
    if (rel_l2 < 0) {
        printf("outputs %-12s %-6s n/a (nothing compared)\n", key, mode);
        return;
    }
    printf("outputs %-12s %-6s rel L2 vs ref %.2g, max abs %.2g: %s\n", key, mode, rel_l2, max_abs,
           rel_l2 <= 1e-4 ? "within 1e-4" : "NOT within 1e-4");
}

/* The outputs of both modes against the reference backend's on the same
 * weights and inputs (the seed), once per model: the eager backend
 * through ntp_run_compare (ref run once, unmeasured, for its outputs), the
 * TorchScript module through ntp_run_torch_script (which runs ref too). */
static void check_outputs(ntp_ctx *ctx, const ntp_graph *g, const char *key, int threads,
                          bool script)
{
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    o.threads = threads;
    o.warmup = 0;
    o.iterations = 1;
    o.min_time_s = 0;
    o.accuracy = false;
    const char *const be[] = {"torch"};
    ntp_backend_comparison *c = NULL;
    if (ntp_run_compare(ctx, g, &o, be, 1, &c) != NTP_STATUS_OK) {
        printf("outputs %-12s eager  n/a: %s\n", key, ntp_ctx_errmsg(ctx));
    } else {
        print_check(key, "eager", ntp_backend_comparison_run(c, 0)->rel_l2,
                    ntp_backend_comparison_run(c, 0)->max_abs_error);
        ntp_backend_comparison_free(c);
    }
    ntp_ctx_clear_warnings(ctx);
    if (!script)
        return;
    ntp_torch_script_result ts;
    if (ntp_run_torch_script(ctx, g, &o, &ts) != NTP_STATUS_OK)
        printf("outputs %-12s script n/a: %s\n", key, ntp_ctx_errmsg(ctx));
    else
        print_check(key, "script", ts.rel_l2, ts.max_abs_error);
    ntp_ctx_clear_warnings(ctx);
    fflush(stdout);
}

typedef struct script_run {
    ntp_torch_script *ts;
    float *in[8], *out[8];
    double build_ms;
} script_run;

static void script_close(script_run *s);

/* The TorchScript module of g and its inputs and outputs; false (said
 * why) when the mode cannot run it. */
static bool script_open(ntp_ctx *ctx, ntp_graph *g, int threads, script_run *s)
{
    memset(s, 0, sizeof *s);
    if (g->n_inputs > 8) {
        printf("  script: n/a: %d inputs (the TorchScript mode takes at most 8)\n", g->n_inputs);
        return false;
    }
    double t0 = now_ms();
    if (ntp__torch_script_build(ctx, g, threads, 1, &s->ts) != NTP_STATUS_OK) {
        printf("  script: n/a: %s\n", ntp_ctx_errmsg(ctx));
        return false;
    }
    s->build_ms = now_ms() - t0;
    bool ok = true;
    for (int i = 0; i < g->n_inputs && ok; i++)
        ok = ntp__torch_script_input(ctx, g, i, 1, &s->in[i]) == NTP_STATUS_OK;
    for (int i = 0; i < g->n_outputs && i < 8 && ok; i++) {
        s->out[i] = malloc((size_t)ntp_shape_numel(&g->tensors[g->outputs[i]].shape) * 4);
        ok = s->out[i] != NULL;
    }
    if (!ok) {
        printf("  script: n/a: %s\n",
               ntp_ctx_errmsg(ctx)[0] ? ntp_ctx_errmsg(ctx) : "out of memory");
        script_close(s);
    }
    return ok;
}

static double script_time(ntp_ctx *ctx, const ntp_graph *g, script_run *s, int iterations)
{
    double t[1000];
    if (iterations > 1000)
        iterations = 1000;
    for (int i = 0; i < 3 + iterations; i++) {
        double t0 = now_ms();
        if (ntp__torch_script_run(ctx, s->ts, g, s->in, s->out) != NTP_STATUS_OK) {
            printf("  script: %s\n", ntp_ctx_errmsg(ctx));
            return 0;
        }
        if (i >= 3)
            t[i - 3] = now_ms() - t0;
    }
    return median(t, iterations);
}

static void script_close(script_run *s)
{
    ntp__torch_script_free(s->ts);
    for (int i = 0; i < 8; i++) {
        free(s->in[i]);
        free(s->out[i]);
    }
}
#endif

int main(int argc, char **argv)
{
    int threads = 2, rounds = 6, iterations = 10;
    const char *only = "resnet50,mobilenetv2,bert,deepspeech";
    bool check = true, both_heaps = true;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
            iterations = atoi(argv[++i]);
        else if (strcmp(argv[i], "--models") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--no-check") == 0)
            check = false;
        else if (strcmp(argv[i], "--heap") == 0 && i + 1 < argc &&
                 (strcmp(argv[i + 1], "kept") == 0 || strcmp(argv[i + 1], "both") == 0))
            both_heaps = strcmp(argv[++i], "both") == 0;
        else {
            fprintf(stderr, "usage: bench_torch [--threads T] [--rounds R] [--iterations N] "
                            "[--models LIST] [--heap kept|both] [--no-check]\n");
            return 2;
        }
    }
    if (rounds < 1 || rounds > 50 || iterations < 1 || threads < 1) {
        fprintf(stderr, "bench_torch: rounds 1..50, iterations and threads at least 1\n");
        return 2;
    }
#ifndef NTP_HAVE_TORCH
    (void)models;
    (void)loadavg;
    (void)median;
    (void)now_ms;
    (void)run_pytorch;
    (void)only;
    (void)check;
    (void)both_heaps;
    printf("torch backend: not built (libtorch-dev not found at configure time)\n");
    return 0;
#else
    printf("torch backend vs PyTorch 1.13, f32, batch 1, %d threads, %d rounds of %d iterations, "
           "interleaved\n",
           threads, rounds, iterations);
    loadavg("before");
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        char key[64];
        snprintf(key, sizeof key, ",%s,", models[m].key);
        char list[256];
        snprintf(list, sizeof list, ",%s,", only);
        if (!strstr(list, key))
            continue;
        ntp_ctx *ctx = ntp_ctx_init();
        char path[512];
        snprintf(path, sizeof path, "%s/%s", NTP_SOURCE_DIR, models[m].file);
        ntp_graph *g = NULL;
        ntp_load_opts lo = {0};
        lo.set = models[m].set;
        lo.n_set = models[m].n_set;
        if (ntp_graph_load(ctx, path, &lo, &g) != NTP_STATUS_OK) {
            printf("%s: %s\n", models[m].key, ntp_ctx_errmsg(ctx));
            ntp_ctx_free(ctx);
            continue;
        }
        script_run s;
        bool have_script = script_open(ctx, g, threads, &s);
        if (check)
            check_outputs(ctx, g, models[m].key, threads, have_script);
        double eager[50] = {0}, script[50] = {0}, py[50] = {0}, pk[50] = {0}, prepare = 0;
        double ratio[50] = {0}, sratio[50] = {0}; /* per round, against the heap kept */
        int ne = 0, ns = 0, np = 0, nk = 0, nr = 0, nsr = 0;
        for (int r = 0; r < rounds; r++) {
            double e = run_eager(ctx, g, threads, iterations, &prepare);
            double sc = have_script ? script_time(ctx, g, &s, iterations) : 0;
            double p = both_heaps ? run_pytorch(&models[m], threads, iterations, false) : 0;
            double k = run_pytorch(&models[m], threads, iterations, true);
            char sc_round[32] = "n/a";
            if (have_script)
                snprintf(sc_round, sizeof sc_round, "%.2f ms", sc);
            char py_round[32] = "not run (--heap kept)";
            if (both_heaps)
                snprintf(py_round, sizeof py_round, "%.2f ms", p);
            printf("  %s round %d: eager %.2f ms, script %s, pytorch %s, pytorch with its "
                   "heap kept %.2f ms\n",
                   models[m].key, r + 1, e, sc_round, py_round, k);
            fflush(stdout);
            if (e > 0)
                eager[ne++] = e;
            if (sc > 0)
                script[ns++] = sc;
            if (p > 0)
                py[np++] = p;
            if (k > 0)
                pk[nk++] = k;
            if (e > 0 && k > 0)
                ratio[nr++] = e / k;
            if (sc > 0 && k > 0)
                sratio[nsr++] = sc / k;
        }
        double me = median(eager, ne), ms = median(script, ns), mp = median(py, np),
               mk = median(pk, nk);
        char sc_txt[64] = "     n/a";
        if (have_script)
            snprintf(sc_txt, sizeof sc_txt, "%8.2f ms (build %.0f ms)", ms, s.build_ms);
        char py_txt[64] = "     n/a";
        if (both_heaps)
            snprintf(py_txt, sizeof py_txt, "%8.2f ms", mp);
        printf("%-12s eager %8.2f ms (prepare %.0f ms)  script %s  pytorch %s  pytorch, "
               "heap kept %8.2f ms\n",
               models[m].key, me, prepare, sc_txt, py_txt, mk);
        /* The target is against PyTorch with its heap kept: ntprof's
         * activations are planned before it measures (see run_pytorch). */
        if (mk > 0 && me > 0)
            printf("%-12s eager/pytorch(heap kept) %.3f (target 0.90..1.10: %s)", models[m].key,
                   me / mk, me / mk >= 0.9 && me / mk <= 1.1 ? "met" : "missed");
        if (mp > 0 && me > 0)
            printf("  eager/pytorch(default malloc) %.3f", me / mp);
        if (mk > 0 && ms > 0)
            printf("  script/pytorch(heap kept) %.3f", ms / mk);
        printf("\n");
        verdict(models[m].key, "eager", ratio, nr);
        if (have_script)
            verdict(models[m].key, "script", sratio, nsr);
        if (have_script)
            script_close(&s);
        ntp_graph_free(g);
        ntp_ctx_free(ctx);
    }
    loadavg("after");
    return 0;
#endif
}
