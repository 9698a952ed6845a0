/* Every backend of this build side by side on the oneDNN benchmark's
 * models (issue 8, item 6): ResNet-50 b1, MobileNetV2 b1, BERT-base seq 128
 * and DeepSpeech, f32, with --fuse (each backend folds what it can), in one
 * run through ntp_run_compare, so every backend sees the same weights,
 * inputs and machine state. Each backend's median end-to-end time is
 * printed with its ratio to the fastest backend on that model; DeepSpeech's
 * ratio is taken on its network (the sum of its three marker segments),
 * since its MFCC and CTC inlays run on the reference backend whichever
 * backend is asked for. Outputs are compared with the reference backend
 * (run once, unmeasured, unless --with-ref measures it too).
 *
 * Where a backend is 1.5x or more slower than the fastest, the layers that
 * account for most of the difference are listed with both times, where they
 * ran and what ran them, and how much of the time went to the backend's own
 * extra rows (reorders, im2col), so the reason is visible. Nothing here
 * fails on time.
 *
 *   bench_backends [--iterations N] [--threads T] [--with-ref] [--quick]
 * --quick: 2 iterations, BERT at 2 layers and sequence 32, DeepSpeech at
 * n_hidden 512 (a smoke run). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend-impl.h"
#include "ntprof/ntprof.h"

typedef struct model {
    const char *label;
    const char *file;
    const char *set[3];
    int n_set;
    const char *quick_set[3];
    int n_quick;
    bool markers; /* compare the network: the sum of the marker segments */
} model;

static const model models[] = {
    {"ResNet-50 b1", "resnet50.xml", {NULL}, 0, {NULL}, 0, false},
    {"MobileNetV2 b1", "mobilenetv2.xml", {NULL}, 0, {NULL}, 0, false},
    {"BERT-base seq 128",
     "bert-base.xml",
     {"seq_len=128"},
     1,
     {"seq_len=32", "layers=2"},
     2,
     false},
    {"DeepSpeech", "deepspeech.xml", {NULL}, 0, {"n_hidden=512", "time_steps=100"}, 2, true},
};
#define N_MODELS ((int)(sizeof models / sizeof models[0]))
#define MAX_BE 8

/* The time a backend is ranked by. */
static double score(const ntp_backend_run *r, bool markers)
{
    if (!markers || ntp_run_result_marker_count(r->result) == 0)
        return ntp_run_result_end_to_end_ms(r->result)->median;
    double s = 0;
    for (int m = 0; m < ntp_run_result_marker_count(r->result); m++)
        s += ntp_run_result_marker(r->result, m)->time_ms.median;
    return s;
}

typedef struct gap {
    int layer;
    double delta;
} gap;

static int by_delta(const void *a, const void *b)
{
    double x = ((const gap *)a)->delta, y = ((const gap *)b)->delta;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The layers where backend `slow` loses most against backend `fast`. */
static void explain(const ntp_backend_comparison *c, int slow, int fast, double total_gap)
{
    const ntp_backend_run *s = ntp_backend_comparison_run(c, slow),
                          *f = ntp_backend_comparison_run(c, fast);
    gap *g = malloc((size_t)ntp_backend_comparison_layer_count(c) * sizeof *g + 1);
    if (!g)
        return;
    double sub = 0, fallback = 0;
    for (int l = 0; l < ntp_backend_comparison_layer_count(c); l++) {
        double a = s->layers[l].ms > 0 ? s->layers[l].ms : 0,
               b = f->layers[l].ms > 0 ? f->layers[l].ms : 0;
        g[l] = (gap){l, a - b};
        sub += s->layers[l].sub_ms;
        if (s->layers[l].ran_on && strcmp(s->layers[l].ran_on, s->backend) != 0)
            fallback += a;
    }
    qsort(g, (size_t)ntp_backend_comparison_layer_count(c), sizeof *g, by_delta);
    printf(
        "    %s vs %s: %.2f ms slower; of %s's time, %.2f ms in its own extra rows (reorders,\n"
        "    im2col/col2im), %.2f ms in layers it left to another backend, %.2f ms in %d conversions.\n",
        s->backend, f->backend, total_gap, s->backend, sub, fallback, s->convert_ms, s->n_convert);
    printf("    %-26s %-10s %9s %9s %9s  %s\n", "layer", "type", s->backend, f->backend, "extra",
           "where / how");
    for (int i = 0; i < 8 && i < ntp_backend_comparison_layer_count(c) && g[i].delta > 0; i++) {
        const ntp_backend_layer *a = &s->layers[g[i].layer], *b = &f->layers[g[i].layer];
        char how[160];
        snprintf(how, sizeof how, "%s%s%s", a->ran_on ? a->ran_on : "-", a->impl ? ": " : "",
                 a->impl ? a->impl : "");
        printf("    %-26.26s %-10.10s %9.3f %9.3f %9.3f  %.60s\n",
               ntp_backend_comparison_layer_name(c, g[i].layer),
               ntp_backend_comparison_layer_type(c, g[i].layer), a->ms, b->ms > 0 ? b->ms : 0,
               a->sub_ms, how);
    }
    free(g);
}

int main(int argc, char **argv)
{
    int iterations = 10, threads = 2;
    bool quick = false, with_ref = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
            iterations = atoi(argv[++i]);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--quick") == 0)
            quick = true;
        else if (strcmp(argv[i], "--with-ref") == 0)
            with_ref = true;
        else {
            fprintf(
                stderr,
                "usage: bench_backends [--iterations N] [--threads T] [--with-ref] [--quick]\n");
            return 2;
        }
    }
    if (quick)
        iterations = 2;
    if (iterations < 1)
        iterations = 1;
    /* Every backend of the build that can run here (an accelerator backend
     * without its device says why); the reference backend only when asked:
     * it needs seconds to minutes per pass on these models. */
    const char *be[MAX_BE];
    int n_be = 0;
    for (int i = 0; i < ntp__backend_count() && n_be < MAX_BE; i++) {
        const ntp_backend_i *b = ntp__backend_get(i);
        char why[256] = "";
        if (!ntp__be_available(b, why, sizeof why)) {
            printf("%s: not available here (%s)\n", b->name, why);
            continue;
        }
        if (with_ref || strcmp(b->name, "ref") != 0)
            be[n_be++] = b->name;
    }
    if (n_be == 0)
        be[n_be++] = "ref";
    ntp_ctx *ctx = ntp_ctx_init();
    if (!ctx)
        return 1;
    ntp_env env;
    ntp_env_collect(&env);
    printf("backends side by side:");
    for (int i = 0; i < n_be; i++)
        printf(" %s", be[i]);
    printf("; %d threads, --fuse, f32, %d+ iterations per pass\n", threads, iterations);
    double load[3] = {0, 0, 0};
    bool busy = getloadavg(load, 3) == 3 && load[0] > env.cores;
    printf("machine: %s, %d cores; load average %.2f %.2f %.2f; %s\n", env.cpu_model, env.cores,
           load[0], load[1], load[2], env.timestamp);
    if (busy)
        printf("warning: the machine is busier than its cores: times are inflated and noisy, and "
               "a backend whose pool waits for descheduled workers suffers most\n");
    printf("\n");
    double log_ratio[MAX_BE] = {0};
    int counted[MAX_BE] = {0};
    for (int m = 0; m < N_MODELS; m++) {
        const model *md = &models[m];
        char path[512];
        snprintf(path, sizeof path, "%s/models/%s", NTP_SOURCE_DIR, md->file);
        ntp_load_opts lo = {0};
        lo.set = quick ? md->quick_set : md->set;
        lo.n_set = quick ? md->n_quick : md->n_set;
        ntp_graph *g = NULL;
        if (ntp_graph_load(ctx, path, &lo, &g) != NTP_STATUS_OK) {
            printf("== %s: %s\n\n", md->label, ntp_ctx_errmsg(ctx));
            continue;
        }
        ntp_run_opts o;
        ntp_run_opts_default(&o);
        o.iterations = iterations;
        o.warmup = quick ? 1 : 3;
        o.min_time_s = quick ? 0 : 2;
        o.threads = threads;
        o.fuse = true;
        ntp_backend_comparison *c = NULL;
        printf("== %s (%s%s%s)\n", md->label, md->file, lo.n_set ? ", " : "",
               lo.n_set ? lo.set[0] : "");
        if (ntp_run_compare(ctx, g, &o, be, n_be, &c) != NTP_STATUS_OK) {
            printf("   failed: %s\n\n", ntp_ctx_errmsg(ctx));
            ntp_graph_free(g);
            continue;
        }
        ntp_ctx_clear_warnings(ctx);
        double best = INFINITY;
        int fastest = 0;
        for (int i = 0; i < ntp_backend_comparison_run_count(c); i++)
            if (score(ntp_backend_comparison_run(c, i), md->markers) < best) {
                best = score(ntp_backend_comparison_run(c, i), md->markers);
                fastest = i;
            }
        /* The interval belongs to the end-to-end median printed beside it;
         * where the ratio is taken on the network (DeepSpeech), the network's
         * median gets a column of its own rather than borrowing that
         * interval. */
        printf("   %-9s %10s %21s %10s %7s %10s %9s %8s %10s\n", "backend", "e2e ms",
               "95% interval", md->markers ? "network ms" : "", "ratio", "prepare ms", "own/back",
               "fused", "rel L2");
        for (int i = 0; i < ntp_backend_comparison_run_count(c); i++) {
            const ntp_backend_run *r = ntp_backend_comparison_run(c, i);
            double s = score(r, md->markers), ratio = best > 0 ? s / best : 0;
            char rel[32];
            if (r->rel_l2 < 0)
                snprintf(rel, sizeof rel, "n/a");
            else
                snprintf(rel, sizeof rel, "%.2e", r->rel_l2);
            char net[32] = "";
            if (md->markers)
                snprintf(net, sizeof net, "%.3f", s);
            printf("   %-9s %10.3f   [%8.3f, %8.3f] %10s %6.2fx %10.1f %5d/%-3d %8d %10s\n",
                   r->backend, ntp_run_result_end_to_end_ms(r->result)->median,
                   ntp_run_result_end_to_end_ms(r->result)->ci95_lo,
                   ntp_run_result_end_to_end_ms(r->result)->ci95_hi, net, ratio,
                   ntp_run_result_prepare_ms(r->result), r->layers_own, r->layers_fallback,
                   r->layers_fused, rel);
            log_ratio[i] += log(ratio);
            counted[i]++;
        }
        for (int i = 0; i < ntp_backend_comparison_run_count(c); i++) {
            const ntp_backend_run *r = ntp_backend_comparison_run(c, i);
            bool ours = strcmp(r->backend, "xnnpack") == 0 || strcmp(r->backend, "blas") == 0;
            if (ours && score(r, md->markers) >= 1.5 * best)
                explain(c, i, fastest, score(r, md->markers) - best);
        }
        printf("\n");
        ntp_backend_comparison_free(c);
        ntp_graph_free(g);
    }
    printf("geometric mean of the ratio to the fastest, over the models:");
    for (int i = 0; i < n_be; i++)
        if (counted[i])
            printf("  %s %.2fx", be[i], exp(log_ratio[i] / counted[i]));
    printf("\n");
    ntp_ctx_free(ctx);
    return 0;
}
