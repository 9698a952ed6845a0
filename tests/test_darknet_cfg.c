/* The Darknet .cfg reader (src/io/darknet-cfg.c) against Darknet itself.
 *
 * 1. Every .cfg bundled with Debian's darknet package (/usr/share/darknet/
 *    cfg): the ones the reader supports load, and each Darknet layer's
 *    output shape (out_c x out_h x out_w and the outputs per image) and its
 *    FLOPs equal those libdarknet's parse_network_cfg builds, as recorded in
 *    tests/data/darknet-bundled.tsv; the ones it does not support fail with
 *    the reason docs/darknet.md gives. The table is libdarknet's own numbers,
 *    written by this binary's --golden mode (parse_network_cfg takes
 *    minutes over all of them: it initialises every weight at random); the
 *    live check below keeps it honest.
 * 2. Live, when the test is linked with libdarknet: small networks covering
 *    every supported layer type (the .cfg files in tests/data/darknet/) parsed by
 *    parse_network_cfg here and now, compared layer by layer, including the
 *    BFLOPs figures Darknet prints.
 * 3. Malformed .cfg files: the exact one-line error for each.
 * 4. A .weights file lands in the right tensors.
 *
 * Darknet's FLOPs are 2 x MACs of its convolutions (parse prints
 * 2.0*n*size*size*c/groups*out_h*out_w / 1e9 "BFLOPs"), without the bias
 * add, so the comparison is with 2 x the conv node's MACs; for [connected]
 * it is 2 x inputs x outputs. */
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/darknet-impl.h"
#include "io/io-impl.h"
#include "ntprof/ntprof.h"
#include "ntprof/onnx.h"

#ifdef NTP_HAVE_DARKNET
#include "darknet.h"
#endif

#define BUNDLED "/usr/share/darknet/cfg"
#define DATA NTP_SOURCE_DIR "/tests/data"

static int failures;

#define CHECK(cond, ...)                                         \
    do {                                                         \
        if (!(cond)) {                                           \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fputc('\n', stderr);                                 \
            failures++;                                          \
        }                                                        \
    } while (0)

/* One Darknet layer as Darknet shapes and counts it. */
typedef struct dn_ref {
    char type[16];
    long long w, h, c, outputs, flops;
} dn_ref;

static const char *kind_name(ntp_darknet_kind k)
{
    switch (k) {
    case NTP_DARKNET_INPUT: return "input";
    case NTP_DARKNET_CONV: return "conv";
    case NTP_DARKNET_CONNECTED: return "connected";
    case NTP_DARKNET_MAXPOOL: return "max";
    case NTP_DARKNET_AVGPOOL: return "avg";
    case NTP_DARKNET_ROUTE: return "route";
    case NTP_DARKNET_SHORTCUT: return "shortcut";
    case NTP_DARKNET_UPSAMPLE: return "upsample";
    case NTP_DARKNET_DROPOUT: return "dropout";
    case NTP_DARKNET_SOFTMAX: return "softmax";
    case NTP_DARKNET_REORG: return "reorg";
    case NTP_DARKNET_CROP: return "crop";
    case NTP_DARKNET_PASSTHROUGH: return "head";
    case NTP_DARKNET_RNN: return "rnn";
    case NTP_DARKNET_GRU: return "gru";
    case NTP_DARKNET_LSTM: return "lstm";
    case NTP_DARKNET_CRNN: return "crnn";
    case NTP_DARKNET_LOCAL: return "local";
    case NTP_DARKNET_DECONV: return "deconv";
    case NTP_DARKNET_BATCHNORM: return "batchnorm";
    case NTP_DARKNET_ACTIVATION: return "activation";
    }
    return "?";
}

/* ntprof's graph for `path` against Darknet's layers `ref[n]`. */
static void compare(const char *path, const dn_ref *ref, int n)
{
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_load_opts o = {.max_memory = -1};
    ntp_graph *g = NULL;
    ntp_darknet_layer *L = NULL;
    int nl = 0;
    if (ntp__darknet_load_file(ctx, path, &o, &g, &L, &nl) != NTP_STATUS_OK) {
        CHECK(0, "%s: %s", path, ntp_ctx_errmsg(ctx));
        ntp_ctx_free(ctx);
        return;
    }
    CHECK(nl == n, "%s: %d layers, Darknet has %d", path, nl, n);
    for (int i = 0; i < n && i < nl; i++) {
        const ntp_tensor *t = &g->tensors[L[i].tensor];
        /* Darknet's rows are time_steps x batch (parse_net_options) */
        long long rows = g->batch * L[i].steps;
        long long per = ntp_shape_numel(&t->shape) / rows;
        CHECK(per == ref[i].outputs, "%s: layer %d (%s): %lld outputs per image, Darknet %lld",
              path, i, ref[i].type, per, ref[i].outputs);
        if (!L[i].flat && ref[i].c != 0) /* Darknet leaves out_c 0 where it has no 3-D shape */
            CHECK(t->shape.ndim == 4 && t->shape.dim[1] == ref[i].c &&
                      t->shape.dim[2] == ref[i].h && t->shape.dim[3] == ref[i].w,
                  "%s: layer %d (%s): ntprof %lldx%lldx%lld, Darknet %lldx%lldx%lld", path, i,
                  ref[i].type, (long long)t->shape.dim[3], (long long)t->shape.dim[2],
                  (long long)t->shape.dim[1], ref[i].w, ref[i].h, ref[i].c);
        /* 2 x the MACs of the layer's products (conv, fc, lstm nodes: its
         * nodes are the ones added from L[i].first to the next layer's) */
        long long macs = 0;
        int end = i + 1 < nl ? L[i + 1].first : g->n_nodes;
        for (int k = L[i].first; k < end; k++) {
            ntp_op op = g->nodes[k].op;
            if (op != NTP_OP_CONV && op != NTP_OP_DECONV && op != NTP_OP_FC && op != NTP_OP_LSTM)
                continue;
            ntp_cost c = {0};
            ntp__op_cost(g, &g->nodes[k], &c);
            macs += c.macs;
        }
        long long flops = 2 * macs / rows;
        CHECK(flops == ref[i].flops,
              "%s: layer %d (%s): ntprof %lld FLOPs (2 x MACs), Darknet %lld", path, i, ref[i].type,
              flops, ref[i].flops);
        const char *k = kind_name(L[i].kind);
        bool same = strcmp(k, ref[i].type) == 0 ||
                    (L[i].kind == NTP_DARKNET_PASSTHROUGH &&
                     (!strcmp(ref[i].type, "yolo") || !strcmp(ref[i].type, "region") ||
                      !strcmp(ref[i].type, "detection") || !strcmp(ref[i].type, "cost")));
        CHECK(same, "%s: layer %d: ntprof %s, Darknet %s", path, i, k, ref[i].type);
    }
    free(L);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* --- 1. the bundled files against the recorded table ------------------------ */

static int bundled(void)
{
    FILE *f = fopen(DATA "/darknet-bundled.tsv", "r");
    if (!f) {
        CHECK(0, "cannot open %s", DATA "/darknet-bundled.tsv");
        return 0;
    }
    char line[512], cur[128] = "";
    dn_ref *ref = NULL;
    int n = 0, cap = 0, files = 0;
    for (bool more = true; more;) {
        char cfg[128] = "";
        dn_ref r;
        int li = 0;
        more = fgets(line, sizeof line, f) != NULL;
        if (more && (line[0] == '#' || line[0] == '\n'))
            continue;
        if (more && sscanf(line, "%127s %d %15s %lld %lld %lld %lld %lld", cfg, &li, r.type, &r.w,
                           &r.h, &r.c, &r.outputs, &r.flops) != 8) {
            CHECK(0, "darknet-bundled.tsv: bad line '%s'", line);
            continue;
        }
        if (cur[0] && (!more || strcmp(cfg, cur) != 0)) {
            char path[256];
            snprintf(path, sizeof path, "%s/%s", BUNDLED, cur);
            compare(path, ref, n);
            files++;
            n = 0;
        }
        if (!more)
            break;
        snprintf(cur, sizeof cur, "%s", cfg);
        CHECK(li == n, "darknet-bundled.tsv: %s: layer %d out of order", cfg, li);
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            ref = realloc(ref, (size_t)cap * sizeof *ref);
        }
        ref[n++] = r;
    }
    fclose(f);
    free(ref);
    return files;
}

/* --- 2. live against libdarknet ---------------------------------------------- */

#ifdef NTP_HAVE_DARKNET
/* libdarknet's LAYER_TYPE differs between its forks and versions, so the
 * switches over it name the types that matter and leave the rest to
 * default: over an int. */
static const char *type_name(LAYER_TYPE t)
{
    switch ((int)t) {
    case CONVOLUTIONAL: return "conv";
    case CONNECTED: return "connected";
    case MAXPOOL: return "max";
    case AVGPOOL: return "avg";
    case ROUTE: return "route";
    case SHORTCUT: return "shortcut";
    case UPSAMPLE: return "upsample";
    case DROPOUT: return "dropout";
    case SOFTMAX: return "softmax";
    case REORG: return "reorg";
    case CROP: return "crop";
    case YOLO: return "yolo";
    case REGION: return "region";
    case DETECTION: return "detection";
    case COST: return "cost";
    case RNN: return "rnn";
    case GRU: return "gru";
    case LSTM: return "lstm";
    case CRNN: return "crnn";
    case LOCAL: return "local";
    case DECONVOLUTIONAL: return "deconv";
    case BATCHNORM: return "batchnorm";
    case ACTIVE: return "activation";
    default: return "other";
    }
}

/* Darknet's FLOPs of a layer per row: 2 x the MACs of its products, the
 * inner layers' for the recurrent ones (Darknet prints them for
 * convolutions only). */
static long long layer_flops(const layer *l)
{
    switch ((int)l->type) {
    case CONVOLUTIONAL:
        return 2LL * l->n * l->size * l->size * (l->c / l->groups) * l->out_h * l->out_w;
    case LOCAL: return 2LL * l->n * l->size * l->size * l->c * l->out_h * l->out_w;
    /* every input pixel times the whole kernel (col2im drops the padding) */
    case DECONVOLUTIONAL: return 2LL * l->n * l->size * l->size * l->c * l->h * l->w;
    case CONNECTED: return 2LL * l->inputs * l->outputs;
    case RNN:
    case CRNN:
        return layer_flops(l->input_layer) + layer_flops(l->self_layer) +
               layer_flops(l->output_layer);
    case GRU:
        return layer_flops(l->uz) + layer_flops(l->wz) + layer_flops(l->ur) + layer_flops(l->wr) +
               layer_flops(l->uh) + layer_flops(l->wh);
    case LSTM:
        return layer_flops(l->uf) + layer_flops(l->wf) + layer_flops(l->ui) + layer_flops(l->wi) +
               layer_flops(l->ug) + layer_flops(l->wg) + layer_flops(l->uo) + layer_flops(l->wo);
    default: return 0;
    }
}

/* Darknet's layers for `path`; the BFLOPs lines it printed go to *printed
 * (one per convolution, in order). */
static int darknet_layers(const char *path, dn_ref **out, double **printed, int *n_printed)
{
    fflush(stderr);
    char tmpl[] = "/tmp/ntp-darknet-XXXXXX";
    int fd = mkstemp(tmpl), saved = dup(2);
    dup2(fd, 2);
    network *net = parse_network_cfg((char *)path);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    dn_ref *ref = calloc((size_t)net->n, sizeof *ref);
    for (int i = 0; i < net->n; i++) {
        layer l = net->layers[i];
        dn_ref *r = &ref[i];
        snprintf(r->type, sizeof r->type, "%s", type_name(l.type));
        r->w = l.out_w;
        r->h = l.out_h;
        r->c = l.out_c;
        r->outputs = l.outputs;
        r->flops = layer_flops(&l);
    }
    int n = net->n;
    free_network(net);
    *n_printed = 0;
    *printed = malloc(4096 * sizeof **printed);
    FILE *f = fdopen(fd, "r");
    rewind(f);
    char line[512];
    while (fgets(line, sizeof line, f) && *n_printed < 4096) {
        char *b = strstr(line, "BFLOPs");
        if (!b)
            continue;
        while (b > line && b[-1] == ' ')
            b--;
        while (b > line && b[-1] != ' ')
            b--;
        (*printed)[(*n_printed)++] = atof(b);
    }
    fclose(f);
    unlink(tmpl);
    *out = ref;
    return n;
}

static void live(const char *path)
{
    dn_ref *ref;
    double *printed;
    int np, n = darknet_layers(path, &ref, &printed, &np);
    compare(path, ref, n);
    /* The printed figures are the same numbers, rounded to 3 decimals. */
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(ref[i].type, "conv") != 0)
            continue;
        CHECK(k < np, "%s: layer %d: Darknet printed no BFLOPs", path, i);
        if (k < np) {
            char a[32], b[32];
            snprintf(a, sizeof a, "%.3f", ref[i].flops / 1e9);
            snprintf(b, sizeof b, "%.3f", printed[k]);
            CHECK(strcmp(a, b) == 0, "%s: layer %d: %s BFLOPs, Darknet printed %s", path, i, a, b);
        }
        k++;
    }
    free(ref);
    free(printed);
}

/* The forward pass on the same weights and input: libdarknet's
 * network_predict against ntprof's reference backend, for the layers whose
 * arithmetic ntprof composes from its own ops (the recurrent and locally
 * connected ones). The .weights file holds more values than the network
 * reads, all in [0.05, 0.55] (positive, since a batch norm's variance is
 * among them); the input is in [-1, 1]. Both compute in f32 with sums in
 * other orders: within 1e-5 relative L2. Darknet's recurrent state starts at
 * zero in a fresh network, as ntprof's does. */
static void forward(const char *cfg)
{
    char wpath[] = "/tmp/ntp-dn-fwd-XXXXXX";
    int fd = mkstemp(wpath);
    int32_t head[3] = {0, 2, 0};
    uint64_t seen = 0;
    enum { NW = 1 << 16 };
    float *wv = malloc(NW * sizeof *wv);
    uint32_t x = 12345;
    for (int i = 0; i < NW; i++) {
        x = x * 1664525u + 1013904223u;
        wv[i] = 0.05f + 0.5f * (float)(x >> 8) / (float)(1u << 24);
    }
    if (write(fd, head, sizeof head) != sizeof head || write(fd, &seen, 8) != 8 ||
        write(fd, wv, NW * sizeof *wv) != (ssize_t)(NW * sizeof *wv))
        abort();
    close(fd);
    free(wv);
    /* ntprof */
    char set[96];
    snprintf(set, sizeof set, "weights=%s", wpath);
    const char *sets[] = {set};
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_load_opts o = {.max_memory = -1, .set = sets, .n_set = 1};
    ntp_graph *g = NULL;
    if (ntp_graph_load(ctx, cfg, &o, &g) != NTP_STATUS_OK) {
        CHECK(0, "%s: %s", cfg, ntp_ctx_errmsg(ctx));
        ntp_ctx_free(ctx);
        unlink(wpath);
        return;
    }
    const ntp_tensor *it = &g->tensors[g->inputs[0]];
    int64_t n_in = ntp_shape_numel(&it->shape);
    float *in = malloc((size_t)n_in * sizeof *in);
    for (int64_t i = 0; i < n_in; i++) {
        x = x * 1664525u + 1013904223u;
        in[i] = 2.0f * (float)(x >> 8) / (float)(1u << 24) - 1.0f;
    }
    char dir[] = "/tmp/ntp-dn-out-XXXXXX", inpath[128], outpath[160];
    if (!mkdtemp(dir))
        abort();
    snprintf(inpath, sizeof inpath, "%s/in.npy", dir);
    snprintf(outpath, sizeof outpath, "%s/output_0.npy", dir);
    CHECK(ntp__npy_write(ctx, inpath, NTP_DTYPE_F32, &it->shape, in) == NTP_STATUS_OK, "%s",
          ntp_ctx_errmsg(ctx));
    const char *inputs[] = {inpath};
    ntp_run_opts ro;
    ntp_run_opts_default(&ro);
    ro.backend = "ref";
    ro.warmup = 0;
    ro.iterations = 1;
    ro.min_time_s = 0;
    ro.threads = 1;
    ro.accuracy = false;
    ro.inputs = inputs;
    ro.n_inputs = 1;
    ro.save_outputs_dir = dir;
    ntp_run_result *res = NULL;
    ntp_npy got = {0};
    bool ran = ntp_run(ctx, g, &ro, &res) == NTP_STATUS_OK &&
               ntp__npy_read(ctx, outpath, &got) == NTP_STATUS_OK;
    CHECK(ran, "%s: ntprof run: %s", cfg, ntp_ctx_errmsg(ctx));
    /* libdarknet */
    fflush(stderr);
    int saved = dup(2), null = open("/dev/null", O_WRONLY);
    dup2(null, 2);
    network *net = parse_network_cfg((char *)cfg);
    /* Two libdarknet bugs: parse_network_cfg sizes the shared workspace in
     * bytes from each layer's workspace_size, which [local] gives in floats
     * (make_local_layer), and it never sees the inner convolutions of a
     * [crnn]. Give it what those layers use. */
    size_t need = 0;
    for (int i = 0; i < net->n; i++) {
        layer *l = &net->layers[i];
        /* and two more: make_batchnorm_layer never allocates the x buffer
         * forward_batchnorm_layer copies into, and a [deconvolutional]'s
         * groups stay 0, by which load_convolutional_weights divides */
        if (l->type == BATCHNORM && !l->x)
            l->x = calloc((size_t)l->batch * l->outputs, sizeof(float));
        if (l->type == DECONVOLUTIONAL)
            l->groups = 1;
        size_t b = l->type == LOCAL ? l->workspace_size * sizeof(float) : l->workspace_size;
        if (l->type == CRNN) {
            const layer *sub[3] = {l->input_layer, l->self_layer, l->output_layer};
            for (int k = 0; k < 3; k++)
                b = sub[k]->workspace_size > b ? sub[k]->workspace_size : b;
        }
        need = b > need ? b : need;
    }
    free(net->workspace);
    net->workspace = calloc(1, need + sizeof(float));
    load_weights(net, wpath);
    float *want = network_predict(net, in);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(null);
    int64_t n_out = (int64_t)net->outputs * net->batch;
    if (ran) {
        int64_t n = ntp_shape_numel(&got.shape);
        CHECK(n == n_out, "%s: ntprof has %lld outputs, Darknet %lld", cfg, (long long)n,
              (long long)n_out);
        double d2 = 0, r2 = 0;
        const float *y = got.data;
        for (int64_t i = 0; i < n && i < n_out; i++) {
            d2 += ((double)y[i] - want[i]) * ((double)y[i] - want[i]);
            r2 += (double)want[i] * want[i];
        }
        double rel = sqrt(d2 / (r2 > 0 ? r2 : 1));
        CHECK(rel < 1e-5 && r2 > 0, "%s: ntprof's output is %g relative L2 from Darknet's", cfg,
              rel);
        printf("%s: %lld outputs, %.2g relative L2 from Darknet's\n", cfg, (long long)n, rel);
    }
    free(net->workspace); /* ours (above); free_network never frees it */
    net->workspace = NULL;
    free_network(net);
    ntp__npy_free(&got);
    ntp_run_result_free(res);
    free(in);
    unlink(inpath);
    unlink(outpath);
    rmdir(dir);
    unlink(wpath);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* Run g once on the reference backend with the input in inpath, its
 * outputs written to dir/output_<i>.npy. */
static bool ref_outputs(ntp_ctx *ctx, ntp_graph *g, const char *inpath, const char *dir)
{
    const char *inputs[] = {inpath};
    ntp_run_opts ro;
    ntp_run_opts_default(&ro);
    ro.backend = "ref";
    ro.warmup = 0;
    ro.iterations = 1;
    ro.min_time_s = 0;
    ro.threads = 1;
    ro.accuracy = false;
    ro.inputs = inputs;
    ro.n_inputs = 1;
    ro.save_outputs_dir = dir;
    ntp_run_result *res = NULL;
    bool ok = ntp_run(ctx, g, &ro, &res) == NTP_STATUS_OK;
    ntp_run_result_free(res);
    return ok;
}

/* The detection heads ([yolo], [region]: darknet_head) on a bundled YOLO
 * at side x side pixels, against what libdarknet's forward gives each head
 * layer (network_predict returns the last one's): ntprof's outputs are the
 * heads' in order. The .weights file is written for the network from its
 * blocks (ntp__darknet_block_slices): weights uniform in +-sqrt(3 / fan-in),
 * biases and means in +-0.1, scales and variances in [0.5, 1.5], so that
 * the activations stay near 1 through all the layers and the heads'
 * logistic and softmax see values that are not saturated. Darknet parses
 * the .cfg at its own size and is resized (resize_network) to side x side,
 * ntprof reads it with --set width= and height=. Both compute the
 * convolutions in f32 in other orders: each head within 1e-5 relative L2
 * and 1e-5 absolute of Darknet's; the outputs are in (0, 1) but for w and
 * h. */
static void heads(const char *cfg, int side)
{
    char wpath[] = "/tmp/ntp-dn-head-XXXXXX";
    int fd = mkstemp(wpath);
    char sw[32], sh[32], set[96];
    snprintf(sw, sizeof sw, "width=%d", side);
    snprintf(sh, sizeof sh, "height=%d", side);
    snprintf(set, sizeof set, "weights=%s", wpath);
    const char *sets[] = {sw, sh, set};
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_load_opts o = {.max_memory = -1, .set = sets, .n_set = 2};
    ntp_graph *g = NULL;
    ntp_darknet_layer *L = NULL;
    int nl = 0;
    if (ntp__darknet_load_file(ctx, cfg, &o, &g, &L, &nl) != NTP_STATUS_OK) {
        CHECK(0, "%s: %s", cfg, ntp_ctx_errmsg(ctx));
        ntp_ctx_free(ctx);
        close(fd);
        unlink(wpath);
        return;
    }
    FILE *f = fdopen(fd, "wb");
    int32_t head[3] = {0, 2, 0};
    uint64_t seen = 0;
    fwrite(head, sizeof head, 1, f);
    fwrite(&seen, 8, 1, f);
    uint32_t x = 4242;
#define UNIT() (x = x * 1664525u + 1013904223u, (float)(x >> 8) / (float)(1u << 24))
    for (int i = 0; i < nl; i++)
        for (int b = 0; b < L[i].n_blocks; b++) {
            ntp_darknet_slice sl[NTP_DARKNET_MAX_SLICES];
            int ns = ntp__darknet_block_slices(g, &L[i].blocks[b], sl);
            int64_t units = sl[0].n;
            for (int k = 0; k < ns; k++) {
                bool w = !strcmp(sl[k].what, "weights");
                bool pos = !strcmp(sl[k].what, "scales") || strstr(sl[k].what, "variances");
                float a = w ? sqrtf(3.0f * (float)units / (float)sl[k].n) : 0.1f;
                float *vals = malloc((size_t)sl[k].n * sizeof *vals);
                for (int64_t v = 0; v < sl[k].n; v++) {
                    float u = UNIT();
                    vals[v] = pos ? 0.5f + u : a * (2.0f * u - 1.0f);
                }
                fwrite(vals, sizeof *vals, (size_t)sl[k].n, f);
                free(vals);
            }
        }
    fclose(f);
    free(L);
    ntp_graph_free(g);
    g = NULL;
    o.n_set = 3;
    if (ntp_graph_load(ctx, cfg, &o, &g) != NTP_STATUS_OK) {
        CHECK(0, "%s: %s", cfg, ntp_ctx_errmsg(ctx));
        ntp_ctx_free(ctx);
        unlink(wpath);
        return;
    }
    const ntp_tensor *it = &g->tensors[g->inputs[0]];
    int64_t n_in = ntp_shape_numel(&it->shape);
    float *in = malloc((size_t)n_in * sizeof *in);
    for (int64_t i = 0; i < n_in; i++)
        in[i] = UNIT();
#undef UNIT
    char dir[] = "/tmp/ntp-dn-out-XXXXXX", inpath[128];
    if (!mkdtemp(dir))
        abort();
    snprintf(inpath, sizeof inpath, "%s/in.npy", dir);
    CHECK(ntp__npy_write(ctx, inpath, NTP_DTYPE_F32, &it->shape, in) == NTP_STATUS_OK, "%s",
          ntp_ctx_errmsg(ctx));
    /* ntprof's reference backend on the .cfg, and on the .cfg exported as
     * ONNX (the heads as Slice, Sigmoid, Softmax and Concat) and read back */
    char onnxpath[160], onnxdir[160];
    snprintf(onnxpath, sizeof onnxpath, "%s/model.onnx", dir);
    snprintf(onnxdir, sizeof onnxdir, "%s/onnx", dir);
    ntp_graph *og = NULL;
    bool ran = ref_outputs(ctx, g, inpath, dir);
    CHECK(ran, "%s: ntprof run: %s", cfg, ntp_ctx_errmsg(ctx));
    bool ran_onnx =
        mkdir(onnxdir, 0700) == 0 &&
        ntp_graph_export_onnx(ctx, g, onnxpath, NULL) == NTP_STATUS_OK &&
        ntp_graph_load(ctx, onnxpath, &(ntp_load_opts){.max_memory = -1}, &og) == NTP_STATUS_OK &&
        ref_outputs(ctx, og, inpath, onnxdir);
    CHECK(ran_onnx, "%s: exported as ONNX: %s", cfg, ntp_ctx_errmsg(ctx));
    fflush(stderr);
    int saved = dup(2), null = open("/dev/null", O_WRONLY);
    dup2(null, 2);
    network *net = parse_network_cfg((char *)cfg);
    resize_network(net, side, side);
    load_weights(net, wpath);
    network_predict(net, in);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(null);
    int k = 0;
    for (int i = 0; i < net->n && ran; i++) {
        const layer *l = &net->layers[i];
        if (l->type != YOLO && l->type != REGION)
            continue;
        for (int from = 0; from < 2; from++) {
            if (from == 1 && !ran_onnx)
                break;
            char outpath[200];
            snprintf(outpath, sizeof outpath, "%s/output_%d.npy", from ? onnxdir : dir, k);
            ntp_npy got = {0};
            if (ntp__npy_read(ctx, outpath, &got) != NTP_STATUS_OK) {
                CHECK(0, "%s: layer %d: ntprof has no output %d: %s", cfg, i, k,
                      ntp_ctx_errmsg(ctx));
                continue;
            }
            int64_t n = ntp_shape_numel(&got.shape), want = (int64_t)l->outputs * l->batch;
            CHECK(n == want, "%s: layer %d: ntprof's output %d has %lld values, Darknet's %lld",
                  cfg, i, k, (long long)n, (long long)want);
            double d2 = 0, r2 = 0, dmax = 0;
            const float *y = got.data;
            for (int64_t v = 0; v < n && v < want; v++) {
                double d = fabs((double)y[v] - l->output[v]);
                d2 += d * d;
                r2 += (double)l->output[v] * l->output[v];
                dmax = d > dmax ? d : dmax;
            }
            double rel = sqrt(d2 / (r2 > 0 ? r2 : 1));
            const char *what = from ? "exported as ONNX" : "from the .cfg";
            CHECK(rel < 1e-5 && dmax < 1e-5 && r2 > 0,
                  "%s: layer %d: ntprof's output %d (%s) is %g relative L2 (%g at most) from "
                  "Darknet's",
                  cfg, i, k, what, rel, dmax);
            printf("%s at %dx%d, %s: layer %d (%s): %lld outputs, %.2g relative L2, %.2g at most "
                   "from Darknet's\n",
                   cfg, side, side, what, i, l->type == YOLO ? "yolo" : "region", (long long)n, rel,
                   dmax);
            ntp__npy_free(&got);
            unlink(outpath);
        }
        k++;
    }
    CHECK(k == g->n_outputs, "%s: %d heads in Darknet, %d outputs in ntprof", cfg, k, g->n_outputs);
    free_network(net);
    free(in);
    unlink(inpath);
    unlink(onnxpath);
    rmdir(onnxdir);
    rmdir(dir);
    unlink(wpath);
    ntp_graph_free(og);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* --golden FILE...: the table lines for these .cfg files, from libdarknet. */
static int golden(int argc, char **argv)
{
    for (int a = 0; a < argc; a++) {
        dn_ref *ref;
        double *printed;
        int np, n = darknet_layers(argv[a], &ref, &printed, &np);
        const char *base = strrchr(argv[a], '/') ? strrchr(argv[a], '/') + 1 : argv[a];
        for (int i = 0; i < n; i++)
            printf("%s\t%d\t%s\t%lld\t%lld\t%lld\t%lld\t%lld\n", base, i, ref[i].type, ref[i].w,
                   ref[i].h, ref[i].c, ref[i].outputs, ref[i].flops);
        free(ref);
        free(printed);
    }
    return 0;
}
#endif

/* --- 3. malformed files: the exact message ------------------------------------ */

static char *write_tmp(const char *text, const char *suffix)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/ntp-dn-XXXXXX%s", suffix);
    int fd = mkstemps(path, (int)strlen(suffix));
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        abort();
    close(fd);
    return path;
}

#define NET "[net]\nwidth=8\nheight=8\nchannels=3\n"

static void malformed(void)
{
    static const struct {
        const char *text, *want; /* want follows "FILE:" */
    } cases[] = {
        {NET "[convolutional]\nfilters=4\nsize=3\nstrid=1\n",
         "8: [convolutional] (layer 0): unknown key 'strid'; did you mean 'stride'?"},
        {NET "[convolutional]\nfilters=x\n",
         "6: [convolutional] (layer 0): 'filters': expected an integer in [1, 1048576], got 'x'"},
        {NET "[convolutional]\nfilters=2\nactivation=stair\n",
         "7: [convolutional] (layer 0): 'activation': expected one of linear, leaky, relu, "
         "logistic, tanh, elu, selu, mish, swish, ramp, got 'stair'"},
        {NET "[maxpool]\n[shortcut]\nfrom=-5\n",
         "7: [shortcut] (layer 1): 'from': -5 names layer -4, expected a layer before this one (0 "
         "to 0)"},
        {NET "[maxpool]\nsize=2\nstride=2\n[route]\nlayers=-1,-2\n",
         "9: [route] (layer 1): 'layers': -2 names layer -1, expected a layer before this one (0 "
         "to 0)"},
        {"width=8\n[net]\n", "1: 'width=8' comes before any section: expected [net] first"},
        {"[convolutional]\n", "1: [convolutional]: the first section must be [net]"},
        {NET "[normalization]\n",
         "5: [normalization] (layer 0): layer type 'normalization' is not supported"},
        {NET "[deconvolutional]\nsize=1\npadding=4\n",
         "5: [deconvolutional] (layer 0): padding 4 leaves no output of the 8x8 input with "
         "size=1 and stride=1"},
        {"[net]\ninputs=4\n[batchnorm]\n", "3: [batchnorm] (layer 0): expected an image input"},
        {NET "[activation]\nactivation=plse\n",
         "6: [activation] (layer 0): 'activation': expected one of linear"},
        {NET "[softmax]\ntree=/nonexistent/9k.tree\n",
         "6: [softmax] (layer 0): 'tree': cannot open /nonexistent/9k.tree"},
        {NET "[convolutional]\nfilters=2\nsize=1\n[convolutional]\nfilters=4\nsize=1\n"
             "[shortcut]\nfrom=-2\nalpha=0.5\n",
         "11: [shortcut] (layer 2): alpha=0.5 with layer 0's 2 channels into 4: Darknet scales "
         "only the first 2"},
        {NET "[local]\npad=1\nsize=5\n",
         "5: [local] (layer 0): pad=1 with size=5: Darknet's output size and its im2col "
         "disagree unless size=3"},
        {"[net]\ninputs=4\n[crnn]\n", "3: [crnn] (layer 0): expected an image input"},
        {NET "[convolutional]\nfilters=21\nsize=1\n[yolo]\nmask=0,1\nclasses=5\nnum=3\n",
         "8: [yolo] (layer 1): expected 20 channels in, 2 anchors x (4 coords + 1 + 5 classes); "
         "the layer before gives 21"},
        {NET "[convolutional]\nfilters=20\nsize=1\n[yolo]\nmask=0,x\n",
         "9: [yolo] (layer 1): 'mask': expected anchor indices separated by commas, got '0,x'"},
        {NET "[convolutional]\nfilters=10\nsize=1\n[region]\nclasses=4\nnum=2\n",
         "8: [region] (layer 1): expected 18 channels in, 2 anchors x (4 coords + 1 + 4 classes); "
         "the layer before gives 10"},
        {NET "[maxpool\n", "5: expected a section header such as [convolutional], got '[maxpool'"},
        {NET "[maxpool]\nsize\n", "6: expected key=value or a [section], got 'size'"},
        {"[net]\nwidth=8\nheight=8\n[maxpool]\n",
         "1: [net]: 'channels': expected a positive input channels"},
        {NET "[convolutional]\nfilters=4\nsize=9\n",
         "5: [convolutional] (layer 0): size=9 does not fit the 8x8 input with padding 0"},
        {NET "[maxpool]\nsize=2\nstride=2\n[upsample]\n[shortcut]\nfrom=-2\n",
         "10: [shortcut] (layer 2): 'from': layer 0 is 4x4x3, the previous layer 8x8x3: expected "
         "the same size or a whole multiple of it"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *path = write_tmp(cases[i].text, ".cfg");
        ntp_ctx *ctx = ntp_ctx_init();
        ntp_load_opts o = {.max_memory = -1};
        ntp_graph *g = NULL;
        ntp_status st = ntp_graph_load(ctx, path, &o, &g);
        char want[512];
        snprintf(want, sizeof want, "%s:%s", path, cases[i].want);
        const char *got = st ? ntp_ctx_errmsg(ctx) : "loaded";
        CHECK(st != NTP_STATUS_OK && strncmp(got, want, strlen(want)) == 0 && !strchr(got, '\n'),
              "case %zu:\n  expected '%s...'\n  got      '%s'", i, want, got);
        ntp_graph_free(g);
        ntp_ctx_free(ctx);
        unlink(path);
    }
}

/* A bad ntp_load_opts.set value names the option by its API name, as a part
 * the CLI words as its --set (docs/architecture.md: the library speaks no
 * CLI), with the file as a part of its own. */
static void set_errors(void)
{
    static const struct {
        const char *text, *set, *want;
    } cases[] = {
        {NET "[maxpool]\n", "batch=x", "batch=x: expected a positive integer"},
        {NET "[maxpool]\n", "width=0", "width=0: expected a positive integer"},
        {NET "[maxpool]\n", "size=3",
         "size=3: a Darknet .cfg takes batch, width, height, channels and weights=FILE.weights"},
        {"[net]\ninputs=4\n[connected]\noutput=2\n", "height=4",
         "height: this network's input is a vector (inputs=4), not an image"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *path = write_tmp(cases[i].text, ".cfg");
        ntp_ctx *ctx = ntp_ctx_init();
        const char *sets[] = {cases[i].set};
        ntp_load_opts o = {.max_memory = -1, .set = sets, .n_set = 1};
        ntp_graph *g = NULL;
        ntp_status st = ntp_graph_load(ctx, path, &o, &g);
        char want[512];
        snprintf(want, sizeof want, "%s: ntp_load_opts.set %s", path, cases[i].want);
        const char *got = st ? ntp_ctx_errmsg(ctx) : "loaded";
        CHECK(st != NTP_STATUS_OK && strcmp(got, want) == 0,
              "set case %zu:\n  expected '%s'\n  got      '%s'", i, want, got);
        const char *opt = ntp_ctx_error_part(ctx, NTP_ERROR_OPTION);
        const char *file = ntp_ctx_error_part(ctx, NTP_ERROR_FILE);
        const char *text = ntp_ctx_error_part(ctx, NTP_ERROR_TEXT);
        CHECK(opt && strcmp(opt, "ntp_load_opts.set") == 0, "set case %zu: option part '%s'", i,
              opt ? opt : "(none)");
        CHECK(file && strcmp(file, path) == 0, "set case %zu: file part '%s'", i,
              file ? file : "(none)");
        CHECK(text && strcmp(text, cases[i].want) == 0 && !strstr(text, "--"),
              "set case %zu: text part '%s'", i, text ? text : "(none)");
        ntp_graph_free(g);
        ntp_ctx_free(ctx);
        unlink(path);
    }
}

/* --- 4. a .weights file ----------------------------------------------------- */

/* conv (bn) 2 filters 1x1 on 3 channels, then connected 2 -> 3: the values
 * are their position in the file, so each tensor's first element says which
 * block it was read from. */
static void weights(void)
{
    char *cfg = write_tmp(NET "[convolutional]\nbatch_normalize=1\nfilters=2\nsize=1\n"
                              "activation=leaky\n[avgpool]\n[connected]\noutput=3\n"
                              "activation=linear\n",
                          ".cfg");
    char cfgpath[64];
    snprintf(cfgpath, sizeof cfgpath, "%s", cfg);
    int32_t head[3] = {0, 2, 0};
    uint64_t seen = 0;
    float v[2 + 2 + 2 + 2 + 6 + 3 + 6];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        v[i] = (float)i;
    char wpath[] = "/tmp/ntp-dn-XXXXXX";
    int fd = mkstemp(wpath);
    if (write(fd, head, sizeof head) != sizeof head || write(fd, &seen, 8) != 8 ||
        write(fd, v, sizeof v) != sizeof v)
        abort();
    close(fd);
    char set[96];
    snprintf(set, sizeof set, "weights=%s", wpath);
    const char *sets[] = {set};
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_load_opts o = {.max_memory = -1, .set = sets, .n_set = 1};
    ntp_graph *g = NULL;
    ntp_status st = ntp_graph_load(ctx, cfgpath, &o, &g);
    CHECK(st == NTP_STATUS_OK, "weights: %s", ntp_ctx_errmsg(ctx));
    if (st == NTP_STATUS_OK) {
        static const struct {
            const char *name;
            float first;
        } want[] = {{"conv0_bn.bias", 0}, {"conv0_bn.scale", 2}, {"conv0_bn.mean", 4},
                    {"conv0_bn.var", 6},  {"conv0.W", 8},        {"fc2.b", 14},
                    {"fc2.W", 17}};
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
            int t = ntp__graph_find_tensor(g, want[i].name);
            CHECK(t >= 0 && g->tensors[t].data, "weights: no data for %s", want[i].name);
            if (t >= 0 && g->tensors[t].data)
                CHECK(((float *)g->tensors[t].data)[0] == want[i].first,
                      "weights: %s starts with %g, expected %g", want[i].name,
                      ((float *)g->tensors[t].data)[0], want[i].first);
        }
    }
    ntp_graph_free(g);
    /* One float short: the error names the layer and the block. */
    if (truncate(wpath, (off_t)(sizeof head + 8 + sizeof v - 4)) != 0)
        abort();
    g = NULL;
    st = ntp_graph_load(ctx, cfgpath, &o, &g);
    char want[256];
    snprintf(want, sizeof want,
             "%s: ends inside layer 2 (the section at %s:11): expected 6 weights, found 5", wpath,
             cfgpath);
    CHECK(st != NTP_STATUS_OK && strncmp(ntp_ctx_errmsg(ctx), want, strlen(want)) == 0,
          "truncated weights:\n  expected '%s...'\n  got      '%s'", want,
          st ? ntp_ctx_errmsg(ctx) : "loaded");
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
    unlink(wpath);
    unlink(cfgpath);
}

int main(int argc, char **argv)
{
#ifdef NTP_HAVE_DARKNET
    if (argc > 1 && strcmp(argv[1], "--golden") == 0)
        return golden(argc - 2, argv + 2);
    if (argc > 2 && strcmp(argv[1], "--heads") == 0) {
        for (int a = 3; a < argc; a++)
            heads(argv[a], atoi(argv[2]));
        return failures ? 1 : 0;
    }
    if (argc > 1 && strcmp(argv[1], "--forward") == 0) {
        for (int a = 2; a < argc; a++)
            forward(argv[a]);
        return failures ? 1 : 0;
    }
#else
    (void)argc;
    (void)argv;
#endif
    if (access(BUNDLED "/yolov3-tiny.cfg", R_OK) != 0) {
        printf("SKIP: Debian's darknet package is not installed (no %s)\n", BUNDLED);
        return 77;
    }
    int files = bundled();
    printf("%d bundled .cfg files compared with libdarknet's recorded layers\n", files);
    /* every bundled .cfg is in the record, so every one loads (docs/darknet.md) */
    CHECK(files == 45, "%d bundled .cfg files in the record, expected all 45", files);
#ifdef NTP_HAVE_DARKNET
    static const char *const small[] = {"mixed.cfg",   "connected.cfg", "rnn.cfg",
                                        "gru.cfg",     "lstm.cfg",      "crnn.cfg",
                                        "lstm-bn.cfg", "sections.cfg",  "scaled.cfg"};
    /* scaled.cfg's tree= is relative: Darknet opens it from where it runs */
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd) || chdir(DATA "/darknet") != 0)
        abort();
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/darknet/%s", DATA, small[i]);
        live(path);
        if (i >= 2)
            forward(path);
    }
    if (chdir(cwd) != 0)
        abort();
    live(BUNDLED "/yolov3-tiny.cfg");
    heads(BUNDLED "/yolov3-tiny.cfg", 64);
    heads(BUNDLED "/yolov2-tiny.cfg", 64);
#else
    printf("libdarknet not linked: the live comparison is skipped\n");
#endif
    malformed();
    set_errors();
    weights();
    if (failures)
        printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
