/* How long loading and analysing a very large topology takes.
 *
 *   bench_analyze [LAYERS [REPETITIONS]]      (defaults: 10000 layers, 15 repetitions)
 *
 * The topology is generated here as markup text, so no file or script is
 * needed at bench time: a stem (conv, batchnorm, relu), residual conv blocks
 * (conv, batchnorm, relu, conv, batchnorm, add, relu), a global average pool,
 * flatten and a projection fc, then residual fc blocks (fc, relu, fc, add,
 * relu) and a few trailing relus, sized to exactly LAYERS layers. It is generated twice: once with
 * every layer written out and once with the blocks as <repeat> elements, and
 * both are timed side by side, so the cost of expanding <repeat> shows as a
 * ratio measured in the same run.
 *
 * Each repetition times ntp_graph_load_xml_memory() (parse, validate, order,
 * infer shapes, plan memory) and ntp_graph_analyze() separately. The target
 * is under 100 ms for both together at 10,000 layers; the benchmark prints
 * whether it was met and never fails on time. It fails only if the topology
 * does not load. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ntprof/ntprof.h"

#define TARGET_MS 100.0

/* A growing text buffer; `failed` is set once an allocation fails and later
 * appends are ignored, so the caller checks once at the end. */
typedef struct text {
    char *buf;
    size_t len, cap;
    int failed;
} text;

static void appendf(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void appendf(text *t, const char *fmt, ...)
{
    if (t->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = 1;
            return;
        }
        if (t->buf && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap ? t->cap : 1 << 16;
        while (cap <= t->len + (size_t)n)
            cap *= 2;
        char *b = realloc(t->buf, cap);
        if (!b) {
            t->failed = 1;
            return;
        }
        t->buf = b;
        t->cap = cap;
    }
}

/* Layers outside the blocks: stem 3, pool + flatten 2, projection fc 1. */
enum { FIXED_LAYERS = 6, CONV_BLOCK = 7, FC_BLOCK = 5 };

/* Split the layers between conv and fc blocks, about 70% conv, so that
 * FIXED_LAYERS + 7 x conv + 5 x fc + extra = layers with 0 <= extra < 5;
 * the extra layers are relus after the last fc block. */
static void plan(int layers, int *conv_blocks, int *fc_blocks, int *extra)
{
    int body = layers - FIXED_LAYERS;
    *conv_blocks = body * 7 / 10 / CONV_BLOCK;
    *fc_blocks = (body - *conv_blocks * CONV_BLOCK) / FC_BLOCK;
    *extra = body - *conv_blocks * CONV_BLOCK - *fc_blocks * FC_BLOCK;
}

static void conv_block(text *t, const char *i)
{
    appendf(t,
            "  <alias name=\"b%s_in\"/>\n"
            "  <conv name=\"b%s_conv1\" filters=\"16\" kernel=\"3\" pad=\"1\" bias=\"false\"/>\n"
            "  <batchnorm name=\"b%s_bn1\"/>\n"
            "  <relu name=\"b%s_relu1\"/>\n"
            "  <conv name=\"b%s_conv2\" filters=\"16\" kernel=\"3\" pad=\"1\" bias=\"false\"/>\n"
            "  <batchnorm name=\"b%s_bn2\"/>\n"
            "  <add name=\"b%s_add\" inputs=\"b%s_bn2,b%s_in\"/>\n"
            "  <relu name=\"b%s_relu2\"/>\n",
            i, i, i, i, i, i, i, i, i, i);
}

static void fc_block(text *t, const char *i)
{
    appendf(t,
            "  <alias name=\"f%s_in\"/>\n"
            "  <fc name=\"f%s_fc1\" units=\"64\"/>\n"
            "  <relu name=\"f%s_relu1\"/>\n"
            "  <fc name=\"f%s_fc2\" units=\"32\"/>\n"
            "  <add name=\"f%s_add\" inputs=\"f%s_fc2,f%s_in\"/>\n"
            "  <relu name=\"f%s_relu2\"/>\n",
            i, i, i, i, i, i, i, i);
}

/* The generated markup, NUL-terminated; NULL when memory ran out. */
static char *generate(int layers, int use_repeat, size_t *len)
{
    int nconv, nfc, extra;
    plan(layers, &nconv, &nfc, &extra);
    text t = {0};
    char idx[32];
    appendf(&t,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<topology name=\"bench-%d\" precision=\"f32\" batch=\"1\">\n"
            "  <input name=\"x\" shape=\"${batch},3,16,16\" dtype=\"f32\"/>\n"
            "  <conv name=\"stem\" filters=\"16\" kernel=\"3\" pad=\"1\" bias=\"false\"/>\n"
            "  <batchnorm name=\"stem_bn\"/>\n"
            "  <relu name=\"stem_relu\"/>\n",
            layers);
    if (use_repeat) {
        appendf(&t, "  <repeat count=\"%d\" index=\"i\">\n", nconv);
        conv_block(&t, "${i}");
        appendf(&t, "  </repeat>\n");
    } else {
        for (int i = 0; i < nconv; i++) {
            snprintf(idx, sizeof idx, "%d", i);
            conv_block(&t, idx);
        }
    }
    appendf(&t, "  <global_avgpool name=\"pool\"/>\n"
                "  <flatten name=\"flatten\"/>\n"
                "  <fc name=\"proj\" units=\"32\"/>\n");
    if (use_repeat) {
        appendf(&t, "  <repeat count=\"%d\" index=\"i\">\n", nfc);
        fc_block(&t, "${i}");
        appendf(&t, "  </repeat>\n");
    } else {
        for (int i = 0; i < nfc; i++) {
            snprintf(idx, sizeof idx, "%d", i);
            fc_block(&t, idx);
        }
    }
    for (int i = 0; i < extra; i++)
        appendf(&t, "  <relu name=\"extra%d\"/>\n", i);
    appendf(&t, "</topology>\n");
    if (t.failed) {
        free(t.buf);
        return NULL;
    }
    *len = t.len;
    return t.buf;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of n values (sorts them). */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double minimum(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] < m)
            m = v[i];
    return m;
}

typedef struct result {
    double load_med, load_min, analyze_med, analyze_min, total_med, total_min;
    int layers;
} result;

/* Time `reps` loads and analyses of buf (after one untimed warm-up). */
static int run(const char *label, const char *buf, size_t len, int reps, result *r)
{
    double *load = calloc((size_t)reps, sizeof *load);
    double *analyze = calloc((size_t)reps, sizeof *analyze);
    double *total = calloc((size_t)reps, sizeof *total);
    ntp_ctx *ctx = ntp_ctx_init();
    int rc = 0;
    if (!load || !analyze || !total || !ctx) {
        fprintf(stderr, "bench_analyze: out of memory\n");
        rc = 1;
        goto done;
    }
    for (int i = -1; i < reps; i++) {
        ntp_graph *g = NULL;
        ntp_analysis *a = NULL;
        double t0 = now_ms();
        ntp_status st = ntp_graph_load_xml_memory(ctx, buf, len, label, NULL, &g);
        double t1 = now_ms();
        if (st == NTP_STATUS_OK)
            st = ntp_graph_analyze(ctx, g, &a);
        double t2 = now_ms();
        if (st != NTP_STATUS_OK) {
            fprintf(stderr, "bench_analyze: %s: %s\n", ntp_status_name(st), ntp_ctx_errmsg(ctx));
            ntp_graph_free(g);
            rc = 1;
            goto done;
        }
        r->layers = ntp_graph_layer_count(g);
        ntp_analysis_free(a);
        ntp_graph_free(g);
        ntp_ctx_clear_warnings(ctx);
        if (i < 0)
            continue;
        load[i] = t1 - t0;
        analyze[i] = t2 - t1;
        total[i] = t2 - t0;
    }
    r->load_min = minimum(load, reps);
    r->analyze_min = minimum(analyze, reps);
    r->total_min = minimum(total, reps);
    r->load_med = median(load, reps);
    r->analyze_med = median(analyze, reps);
    r->total_med = median(total, reps);
done:
    free(load);
    free(analyze);
    free(total);
    ntp_ctx_free(ctx);
    return rc;
}

static void print_result(const char *label, size_t bytes, const result *r)
{
    printf("%-9s %6d layers %8.1f KiB   load %8.2f / %8.2f   analyze %7.2f / %7.2f   "
           "total %8.2f / %8.2f ms   %6.2f us/layer\n",
           label, r->layers, (double)bytes / 1024.0, r->load_med, r->load_min, r->analyze_med,
           r->analyze_min, r->total_med, r->total_min, 1e3 * r->total_med / r->layers);
}

int main(int argc, char **argv)
{
    int layers = argc > 1 ? atoi(argv[1]) : 10000;
    int reps = argc > 2 ? atoi(argv[2]) : 15;
    if (layers < FIXED_LAYERS + CONV_BLOCK + FC_BLOCK || reps < 1) {
        fprintf(stderr, "usage: bench_analyze [LAYERS >= %d [REPETITIONS >= 1]]\n",
                FIXED_LAYERS + CONV_BLOCK + FC_BLOCK);
        return 2;
    }
    size_t len_flat = 0, len_rep = 0;
    char *flat = generate(layers, 0, &len_flat);
    char *rep = generate(layers, 1, &len_rep);
    if (!flat || !rep) {
        fprintf(stderr, "bench_analyze: out of memory generating the topology\n");
        free(flat);
        free(rep);
        return 1;
    }
    printf("ntprof %s: load + analyze of a generated %d-layer topology, %d repetitions "
           "(median / min)\n",
           ntp_version(), layers, reps);
    result rf = {0}, rr = {0};
    int rc = run("bench-flat.xml", flat, len_flat, reps, &rf);
    if (rc == 0)
        rc = run("bench-repeat.xml", rep, len_rep, reps, &rr);
    if (rc == 0) {
        print_result("written", len_flat, &rf);
        print_result("repeat", len_rep, &rr);
        printf("ratio repeat / written (median total): %.2f\n", rr.total_med / rf.total_med);
        if (rf.layers != layers || rr.layers != layers)
            printf("note: generated %d and %d layers, asked for %d\n", rf.layers, rr.layers,
                   layers);
        /* The target is stated for 10,000 layers; scale it for other sizes. */
        double target = TARGET_MS * layers / 10000.0;
        printf("target: load + analyze < %.0f ms (median, written-out markup): %.2f ms, %s\n",
               target, rf.total_med, rf.total_med < target ? "met" : "missed");
    }
    free(flat);
    free(rep);
    return rc;
}
