/* ntprof's CUDA backend beside PyTorch on the same GPU, in one run (issue 9,
 * item 6): ResNet-50, BERT-base (sequence 128) and DeepSpeech's network at
 * batch 1 and 32, at f32 (IEEE, TF32 off on both sides), f16 and bf16, with
 * the ratios printed. Target: within 10% of PyTorch or faster; reported,
 * never enforced.
 *
 * ntprof runs on --backend cuda with --fuse and reports, per model:
 *   e2e      the median end-to-end pass, including the copy of the inputs
 *            to the device and of the outputs back (their own rows);
 *   network  e2e less the median copy rows: what PyTorch's figure holds,
 *            whose inputs are already on the device and whose output stays
 *            there;
 *   graph    the network figure with --cuda-graph (passes replayed as one
 *            CUDA graph; launch overhead gone).
 * DeepSpeech is its acoustic model without the MFCC front end and the CTC
 * decoder (CPU inlays) on both sides: fc1-3, the bidirectional LSTM, fc4-5,
 * 200 time steps, given here as markup with the shipped model's layers.
 * PyTorch runs bench/pytorch_cuda_bench.py with /usr/bin/python3 (cuDNN
 * benchmark mode on, as ntprof searches cuDNN's algorithms).
 *
 * Without a GPU it prints "no CUDA device: n/a" and exits 0.
 *
 *   bench_cuda [--iterations N] [--quick]
 * --quick: batch 1 only, f32 and f16, fewer iterations (a smoke run). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine/machine-cuda-impl.h"
#include "ntprof/ntprof.h"

static const char deepspeech_net[] =
    "<topology name='deepspeech-net' precision='f32' batch='1'>"
    "<param name='n_hidden' default='2048'/><param name='time_steps' default='200'/>"
    "<input name='features' shape='${time_steps},${batch},494'/>"
    "<fc name='fc1' units='${n_hidden}'/><relu name='relu1' max='20'/>"
    "<fc name='fc2' units='${n_hidden}'/><relu name='relu2' max='20'/>"
    "<fc name='fc3' units='${n_hidden}'/><relu name='relu3' max='20'/>"
    "<lstm name='lstm' units='${n_hidden}' direction='bidirectional' merge='concat'/>"
    "<fc name='fc4' units='${n_hidden}'/><relu name='relu4' max='20'/>"
    "<fc name='fc5' units='29'/>"
    "</topology>";

typedef struct model {
    const char *name; /* as pytorch_cuda_bench.py names it */
    const char *file; /* models/<file>, or NULL: deepspeech_net */
} model;

static const model models[] = {
    {"resnet50", "resnet50.xml"},
    {"bert", "bert-base.xml"},
    {"deepspeech", NULL},
};

typedef struct result {
    double e2e, network, graph;
    char impl[64];
    bool ok;
} result;

static ntp_status run_once(ntp_ctx *ctx, const model *m, int batch, const char *prec, int iters,
                           bool graph, result *out)
{
    ntp_load_opts lo = {0};
    lo.batch = batch;
    lo.set_precision = prec && ntp_dtype_parse(prec, &lo.precision) == NTP_STATUS_OK;
    lo.max_memory = -1;
    ntp_graph *g = NULL;
    ntp_status st;
    if (m->file) {
        char path[4096];
        snprintf(path, sizeof path, "%s/models/%s", NTP_SOURCE_DIR, m->file);
        st = ntp_graph_load(ctx, path, &lo, &g);
    } else {
        st = ntp_graph_load_xml_memory(ctx, deepspeech_net, strlen(deepspeech_net),
                                       "deepspeech-net", &lo, &g);
    }
    if (st)
        return st;
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    o.backend = "cuda";
    o.fuse = true;
    o.iterations = iters;
    o.warmup = 3;
    o.min_time_s = 0.5;
    o.accuracy = false;
    o.cuda_graph = graph;
    ntp_run_result *r = NULL;
    st = ntp_run(ctx, g, &o, &r);
    if (!st) {
        double copies = 0;
        for (int i = 0; i < ntp_run_result_layer_count(r); i++)
            if (strcmp(ntp_run_result_layer(r, i)->type, "h2d") == 0 ||
                strcmp(ntp_run_result_layer(r, i)->type, "d2h") == 0)
                copies += ntp_run_result_layer(r, i)->time_ms.median;
        if (graph) {
            out->graph = ntp_run_result_end_to_end_ms(r)->median - copies;
        } else {
            out->e2e = ntp_run_result_end_to_end_ms(r)->median;
            out->network = ntp_run_result_end_to_end_ms(r)->median - copies;
            /* The slowest row's implementation, to see what ran. */
            int slow = 0;
            for (int i = 1; i < ntp_run_result_layer_count(r); i++)
                if (ntp_run_result_layer(r, i)->time_ms.median >
                    ntp_run_result_layer(r, slow)->time_ms.median)
                    slow = i;
            snprintf(out->impl, sizeof out->impl, "%s",
                     ntp_run_result_layer_count(r) ? ntp_run_result_layer(r, slow)->impl : "");
        }
        ntp_run_result_free(r);
    }
    ntp_graph_free(g);
    return st;
}

/* PyTorch's medians: "RESULT model batch precision ms" lines. */
typedef struct torch_result {
    char model[32], prec[8];
    int batch;
    double ms;
} torch_result;

static int run_pytorch(const char *batches, const char *precs, int iters, torch_result *tr, int cap,
                       char *version, size_t vlen)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 %s/bench/pytorch_cuda_bench.py --batches %s --precisions %s "
             "--iterations %d 2>&1",
             NTP_SOURCE_DIR, batches, precs, iters);
    snprintf(version, vlen, "n/a (could not run /usr/bin/python3)");
    FILE *f = popen(cmd, "r");
    if (!f)
        return 0;
    int n = 0;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "PYTORCH ", 8) == 0 &&
            snprintf(version, vlen, "%s", line + 8) >= (int)vlen)
            version[vlen - 1] = '\0';
        torch_result t;
        if (n < cap &&
            sscanf(line, "RESULT %31s %d %7s %lf", t.model, &t.batch, t.prec, &t.ms) == 4)
            tr[n++] = t;
    }
    pclose(f);
    return n;
}

static double torch_ms(const torch_result *tr, int n, const char *m, int batch, const char *p)
{
    for (int i = 0; i < n; i++)
        if (strcmp(tr[i].model, m) == 0 && tr[i].batch == batch && strcmp(tr[i].prec, p) == 0)
            return tr[i].ms;
    return -1;
}

int main(int argc, char **argv)
{
    int iters = 20;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = true;
        else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
            iters = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_cuda [--iterations N] [--quick]\n");
            return 2;
        }
    }
    if (quick)
        iters = 5;
    printf("bench_cuda: ntprof %s (git %s), backends %s, usable here: %s\n", ntp_version(),
           ntp_git_revision(), ntp_backends(), ntp_backends_available());
    const char *usable = ntp_backends_available();
    if (!strstr(usable, "cuda")) {
        ntp_ctx *ctx = ntp_ctx_init();
        ntp_graph *g = NULL;
        ntp_run_opts o;
        ntp_run_opts_default(&o);
        o.backend = "cuda";
        /* The backend's own reason, as `ntprof run --backend cuda` gives it. */
        if (ctx && ntp_graph_load_xml_memory(ctx, deepspeech_net, strlen(deepspeech_net), "probe",
                                             NULL, &g) == NTP_STATUS_OK) {
            ntp_run_result *r = NULL;
            if (ntp_run(ctx, g, &o, &r) != NTP_STATUS_OK)
                printf("reason: %s\n", ntp_ctx_errmsg(ctx));
            ntp_run_result_free(r);
        }
        ntp_graph_free(g);
        ntp_ctx_free(ctx);
        printf("no CUDA device: n/a\n");
        return 0;
    }
    /* The GPU's own ceilings, for reading the ratios against. */
    ntp_ctx *cctx = ntp_ctx_init();
    ntp_gpu_ceilings gc;
    if (cctx && ntp__gpu_ceilings_measure(cctx, quick ? 0.1 : 0.5, &gc) == NTP_STATUS_OK)
        ntp__gpu_ceilings_print(stdout, &gc);
    else if (cctx)
        printf("gpu ceilings: %s\n", ntp_ctx_errmsg(cctx));
    ntp_ctx_free(cctx);
    const int batches[] = {1, 32};
    const char *precs[] = {"f32", "f16", "bf16"};
    int nb = quick ? 1 : 2, np = quick ? 2 : 3;
    char version[256];
    torch_result tr[64];
    int nt = run_pytorch(quick ? "1" : "1,32", quick ? "f32,f16" : "f32,f16,bf16", iters, tr, 64,
                         version, sizeof version);
    printf("PyTorch: %s\n", version);
    printf(
        "times in ms (medians); ratio = ntprof network / PyTorch (< 1: ntprof faster; target <= 1.10)\n");
    printf("%-10s %5s %-4s %9s %9s %9s %9s %7s %7s  %s\n", "model", "batch", "prec", "e2e",
           "network", "graph", "pytorch", "ratio", "graph/", "slowest row's implementation");
    ntp_ctx *ctx = ntp_ctx_init();
    if (!ctx)
        return 1;
    int within = 0, compared = 0;
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++)
        for (int b = 0; b < nb; b++)
            for (int p = 0; p < np; p++) {
                result r = {0};
                ntp_status st = run_once(ctx, &models[m], batches[b], precs[p], iters, false, &r);
                if (!st)
                    st = run_once(ctx, &models[m], batches[b], precs[p], iters, true, &r);
                double t = torch_ms(tr, nt, models[m].name, batches[b], precs[p]);
                if (st) {
                    printf("%-10s %5d %-4s n/a: %s\n", models[m].name, batches[b], precs[p],
                           ntp_ctx_errmsg(ctx));
                    continue;
                }
                char ratio[16] = "n/a", gratio[16] = "n/a", torch[24] = "n/a";
                if (t > 0) {
                    snprintf(torch, sizeof torch, "%.3f", t);
                    snprintf(ratio, sizeof ratio, "%.2f", r.network / t);
                    snprintf(gratio, sizeof gratio, "%.2f", r.graph / t);
                    compared++;
                    within += r.network <= 1.10 * t || r.graph <= 1.10 * t;
                }
                printf("%-10s %5d %-4s %9.3f %9.3f %9.3f %9s %7s %7s  %s\n", models[m].name,
                       batches[b], precs[p], r.e2e, r.network, r.graph, torch, ratio, gratio,
                       r.impl);
            }
    printf("within 10%% of PyTorch or faster (network or graph): %d of %d compared\n", within,
           compared);
    ntp_ctx_free(ctx);
    return 0;
}
