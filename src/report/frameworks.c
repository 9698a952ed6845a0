/* The side-by-side view of one topology on several backends
 * (ntp_report_write_backend_comparison, docs/frameworks.md): a table for people,
 * JSON and CSV for programs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "exec/multi-impl.h"
#include "ntprof/frameworks.h"
#include "report-impl.h"

#define LABEL_W 22
#define TYPE_W 12

/* Width of one backend's column in the table. */
static int column_width(int n_runs, int left)
{
    int w = n_runs > 0 ? (NTP_TABLE_WIDTH - left) / n_runs : 12;
    return w > 13 ? 13 : w < 7 ? 7 : w;
}

static const char *num(double v, int width, int decimals, char *buf, size_t len)
{
    return ntp__fit_number(v, width, decimals, buf, len);
}

/* One summary line: a label and one cell per backend. */
typedef void (*cell_fn)(const ntp_backend_comparison *c, int i, char *buf, size_t len, int w);

static void summary_line(FILE *f, const ntp_backend_comparison *c, const char *label, cell_fn cell)
{
    int w = column_width(c->n_runs, LABEL_W + 1);
    char line[512], buf[64];
    int used = snprintf(line, sizeof line, "%-*s", LABEL_W + 1, label);
    for (int i = 0; i < c->n_runs && used < (int)sizeof line; i++) {
        buf[0] = '\0';
        cell(c, i, buf, sizeof buf, w - 1);
        used += snprintf(line + used, sizeof line - (size_t)used, "%*s", w, buf);
    }
    ntp__put_line(f, line);
}

static void cell_e2e(const ntp_backend_comparison *c, int i, char *b, size_t n, int w)
{
    num(c->runs[i].result->end_to_end_ms.median, w, 3, b, n);
}

static void cell_ci(const ntp_backend_comparison *c, int i, char *b, size_t n, int w)
{
    const ntp_stats *s = &c->runs[i].result->end_to_end_ms;
    char lo[32], hi[32];
    int half = (w - 1) / 2;
    snprintf(b, n, "%s-%s", num(s->ci95_lo, half, 2, lo, sizeof lo),
             num(s->ci95_hi, half, 2, hi, sizeof hi));
}

static void cell_ratio(const ntp_backend_comparison *c, int i, char *b, size_t n, int w)
{
    char v[32];
    snprintf(b, n, "%sx", num(c->runs[i].speed_ratio, w - 1, 2, v, sizeof v));
}

static void cell_prepare(const ntp_backend_comparison *c, int i, char *b, size_t n, int w)
{
    num(c->runs[i].result->prepare_ms, w, 2, b, n);
}

static void cell_layers(const ntp_backend_comparison *c, int i, char *b, size_t n, int w)
{
    (void)w;
    snprintf(b, n, "%d/%d", c->runs[i].layers_own, c->runs[i].layers_fallback);
}

static void cell_fused(const ntp_backend_comparison *c, int i, char *b, size_t n, int w)
{
    (void)w;
    snprintf(b, n, "%d", c->runs[i].layers_fused);
}

static void cell_convert(const ntp_backend_comparison *c, int i, char *b, size_t n, int w)
{
    char v[32];
    snprintf(b, n, "%d:%s", c->runs[i].n_convert,
             num(c->runs[i].convert_ms, w - 3, 3, v, sizeof v));
}

static void cell_maxabs(const ntp_backend_comparison *c, int i, char *b, size_t n, int w)
{
    double v = c->runs[i].max_abs_error;
    if (v < 0)
        snprintf(b, n, "n/a");
    else if (v == 0)
        snprintf(b, n, "0");
    else
        snprintf(b, n, "%.2e", v);
    (void)w;
}

static void cell_rel(const ntp_backend_comparison *c, int i, char *b, size_t n, int w)
{
    double v = c->runs[i].rel_l2;
    if (v < 0)
        snprintf(b, n, "n/a");
    else if (v == 0)
        snprintf(b, n, "0");
    else
        snprintf(b, n, "%.2e", v);
    (void)w;
}

/* Top-1 agreement of the first classifier output, if any. */
static double top1(const ntp_backend_run *r)
{
    for (int j = 0; j < r->n_deviation; j++)
        if (r->deviation[j].top1 >= 0)
            return r->deviation[j].top1;
    return -1;
}

static void cell_top1(const ntp_backend_comparison *c, int i, char *b, size_t n, int w)
{
    double t = top1(&c->runs[i]);
    if (t < 0)
        snprintf(b, n, "n/a");
    else
        num(t, w, 3, b, n);
}

static bool any_top1(const ntp_backend_comparison *c)
{
    for (int i = 0; i < c->n_runs; i++)
        if (top1(&c->runs[i]) >= 0)
            return true;
    return false;
}

/* "name: a b c" header over the backend columns. */
static void header(FILE *f, const ntp_backend_comparison *c, const char *first, const char *second,
                   int left)
{
    int w = column_width(c->n_runs, left);
    char line[512];
    int used = second ? snprintf(line, sizeof line, "%-*s %-*s", LABEL_W, first, TYPE_W, second)
                      : snprintf(line, sizeof line, "%-*s", LABEL_W + 1, first);
    for (int i = 0; i < c->n_runs && used < (int)sizeof line; i++)
        used += snprintf(line + used, sizeof line - (size_t)used, "%*.*s", w, w - 1,
                         c->runs[i].backend);
    ntp__put_line(f, line);
}

static void write_layers(FILE *f, const ntp_backend_comparison *c)
{
    int left = LABEL_W + 1 + TYPE_W;
    int w = column_width(c->n_runs, left);
    ntp__put_line(f, "");
    ntp__put_wrapped(f, "",
                     "per layer, median ms with its sub-step rows (reorders, im2col) marked +; "
                     "* ran on another backend (fallback); fused: folded into the layer before");
    header(f, c, "layer", "type", left);
    for (int l = 0; l < c->n_layers; l++) {
        ntp__put_cell(f, c->layer_names[l], LABEL_W, false);
        fputc(' ', f);
        ntp__put_cell(f, c->layer_types[l], TYPE_W, false);
        for (int i = 0; i < c->n_runs; i++) {
            const ntp_backend_run *r = &c->runs[i];
            const ntp_backend_layer *L = &r->layers[l];
            char cell[64], v[32];
            if (L->fused_into)
                snprintf(cell, sizeof cell, "fused ");
            else if (L->ms < 0)
                snprintf(cell, sizeof cell, "- ");
            else {
                bool other = L->ran_on && strcmp(L->ran_on, r->backend) != 0;
                char flag = other ? '*' : L->sub_rows > 0 ? '+' : ' ';
                snprintf(cell, sizeof cell, "%s%c", num(L->ms, w - 2, 4, v, sizeof v), flag);
            }
            ntp__put_cell(f, cell, w, true);
        }
        fputc('\n', f);
    }
}

static void write_markers(FILE *f, const ntp_backend_comparison *c)
{
    const ntp_run_result *first = c->runs[0].result;
    if (first->n_markers == 0)
        return;
    ntp__put_line(f, "");
    header(f, c, "marker segment (ms)", NULL, LABEL_W + 1);
    int w = column_width(c->n_runs, LABEL_W + 1);
    for (int m = 0; m < first->n_markers; m++) {
        ntp__put_cell(f, first->markers[m].name, LABEL_W, false);
        fputc(' ', f);
        for (int i = 0; i < c->n_runs; i++) {
            const ntp_run_result *r = c->runs[i].result;
            double v = NAN;
            for (int k = 0; k < r->n_markers; k++)
                if (strcmp(r->markers[k].name, first->markers[m].name) == 0)
                    v = r->markers[k].time_ms.median;
            char buf[32];
            ntp__put_cell(f, num(v, w - 1, 3, buf, sizeof buf), w, true);
        }
        fputc('\n', f);
    }
}

static ntp_status write_table(ntp_ctx *ctx, const ntp_backend_comparison *c, FILE *f)
{
    char shape[64] = "";
    if (c->batch > 0)
        snprintf(shape, sizeof shape, ", batch %lld", (long long)c->batch);
    char threads[32];
    if (c->threads > 0)
        snprintf(threads, sizeof threads, "%d", c->threads);
    else
        snprintf(threads, sizeof threads, "%d (all cores)", c->runs[0].result->env.cores);
    ntp__put_linef(f, "backend comparison: %s (%s)", c->topology, c->source);
    ntp__put_linef(f, "%s%s, threads %s, seed %llu%s", ntp_dtype_name(c->precision), shape, threads,
                   (unsigned long long)c->seed, c->fused ? ", --fuse" : "");
    if (c->reference)
        ntp__put_wrapped(f, "",
                         "same weights and inputs on every backend; outputs compared with "
                         "the reference backend's (ref)");
    ntp__put_line(f, "");
    header(f, c, "", NULL, LABEL_W + 1);
    summary_line(f, c, "end-to-end ms (median)", cell_e2e);
    summary_line(f, c, "  95% interval", cell_ci);
    summary_line(f, c, "vs the fastest", cell_ratio);
    summary_line(f, c, "prepare ms", cell_prepare);
    summary_line(f, c, "layers own/fallback", cell_layers);
    summary_line(f, c, "layers fused", cell_fused);
    summary_line(f, c, "conversions n:ms", cell_convert);
    if (c->reference) {
        summary_line(f, c, "max abs error vs ref", cell_maxabs);
        summary_line(f, c, "rel L2 vs ref", cell_rel);
        if (any_top1(c))
            summary_line(f, c, "top-1 agreement", cell_top1);
        /* Name what was compared: a topology that ends in a decoder (DeepSpeech)
         * is compared on its labels, where 0 means the same transcript and
         * says nothing about how far the logits moved. */
        char outs[256] = "";
        size_t used = 0;
        const ntp_backend_run *first = &c->runs[0];
        for (int j = 0; j < first->n_deviation && used < sizeof outs; j++)
            used += (size_t)snprintf(outs + used, sizeof outs - used, "%s%s", j ? ", " : "",
                                     first->deviation[j].output);
        if (outs[0])
            ntp__put_wrapped(f, "deviation over the graph outputs: ", outs);
    }
    write_markers(f, c);
    write_layers(f, c);
    for (int i = 0; i < c->n_runs; i++) {
        const ntp_run_result *r = c->runs[i].result;
        for (int k = 0; k < r->n_warnings; k++) {
            /* Layers placed on another backend are the starred cells above;
             * the run's own report lists them one by one. */
            if (strncmp(r->warnings[k], "layer '", 7) == 0 && strstr(r->warnings[k], " runs on "))
                continue;
            char prefix[64];
            snprintf(prefix, sizeof prefix, "warning (%s): ", c->runs[i].backend);
            ntp__put_wrapped(f, prefix, r->warnings[k]);
        }
    }
    return ntp__check_stream(ctx, f, "backend comparison");
}

/* --- JSON ---------------------------------------------------------------------- */

static json_t *stats_json(bool *ok, const ntp_stats *s)
{
    json_t *o = json_object(), *ci = json_array();
    ntp__jset(ok, o, "median", ntp__json_num(s->median));
    ntp__jpush(ok, ci, ntp__json_num(s->ci95_lo));
    ntp__jpush(ok, ci, ntp__json_num(s->ci95_hi));
    ntp__jset(ok, o, "ci95", ci);
    ntp__jset(ok, o, "n", json_integer((json_int_t)s->n));
    return o;
}

/* A run's own report, as ntp_report_write_run writes it. */
static ntp_status report_json(ntp_ctx *ctx, const ntp_run_result *r, json_t **out)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    ntp_status st = ntp_report_write_run(ctx, r, NTP_FORMAT_JSON, m);
    fclose(m);
    if (st == NTP_STATUS_OK) {
        json_error_t err;
        *out = json_loadb(text, len, 0, &err);
        if (!*out)
            st = ntp__error(ctx, NTP_STATUS_INTERNAL, "run report of %s is not JSON: %s",
                            r->backend, err.text);
    }
    free(text);
    return st;
}

static ntp_status write_json(ntp_ctx *ctx, const ntp_backend_comparison *c, FILE *f)
{
    bool ok = true;
    json_t *root = json_object();
    ntp__jset(&ok, root, "schema_version", json_integer(1));
    ntp__jset(&ok, root, "kind", json_string("backend_comparison"));
    ntp__jset(&ok, root, "topology", ntp__json_str(c->topology));
    ntp__jset(&ok, root, "source", ntp__json_str(c->source));
    ntp__jset(&ok, root, "precision", json_string(ntp_dtype_name(c->precision)));
    ntp__jset(&ok, root, "batch", json_integer((json_int_t)c->batch));
    ntp__jset(&ok, root, "threads", json_integer(c->threads));
    ntp__jset(&ok, root, "seed", json_integer((json_int_t)c->seed));
    ntp__jset(&ok, root, "fused", json_boolean(c->fused));
    ntp__jset(&ok, root, "reference", ntp__json_str(c->reference));
    ntp__jset(&ok, root, "fastest", ntp__json_str(c->runs[c->fastest].backend));
    json_t *runs = json_array();
    ntp_status st = NTP_STATUS_OK;
    for (int i = 0; i < c->n_runs && !st; i++) {
        const ntp_backend_run *b = &c->runs[i];
        json_t *o = json_object(), *dev = json_array(), *conv = json_object(), *rep = NULL;
        ntp__jset(&ok, o, "backend", ntp__json_str(b->backend));
        ntp__jset(&ok, o, "end_to_end_ms", stats_json(&ok, &b->result->end_to_end_ms));
        ntp__jset(&ok, o, "speed_ratio", ntp__json_num(b->speed_ratio));
        ntp__jset(&ok, o, "prepare_ms", ntp__json_num(b->result->prepare_ms));
        ntp__jset(&ok, o, "layers_own", json_integer(b->layers_own));
        ntp__jset(&ok, o, "layers_fallback", json_integer(b->layers_fallback));
        ntp__jset(&ok, o, "layers_fused", json_integer(b->layers_fused));
        ntp__jset(&ok, conv, "count", json_integer(b->n_convert));
        ntp__jset(&ok, conv, "ms", ntp__json_num(b->convert_ms));
        ntp__jset(&ok, o, "conversions", conv);
        ntp__jset(&ok, o, "max_abs_error",
                  b->max_abs_error < 0 ? json_null() : ntp__json_num(b->max_abs_error));
        ntp__jset(&ok, o, "rel_l2", b->rel_l2 < 0 ? json_null() : ntp__json_num(b->rel_l2));
        for (int j = 0; j < b->n_deviation; j++) {
            const ntp_accuracy *a = &b->deviation[j];
            json_t *d = json_object();
            ntp__jset(&ok, d, "output", ntp__json_str(a->output));
            ntp__jset(&ok, d, "max_abs_error", ntp__json_num(a->max_abs_error));
            ntp__jset(&ok, d, "rel_l2", ntp__json_num(a->rel_l2));
            ntp__jset(&ok, d, "top1", a->top1 < 0 ? json_null() : ntp__json_num(a->top1));
            ntp__jset(&ok, d, "top5", a->top5 < 0 ? json_null() : ntp__json_num(a->top5));
            ntp__jpush(&ok, dev, d);
        }
        ntp__jset(&ok, o, "deviation", dev);
        st = report_json(ctx, b->result, &rep);
        if (!st)
            ntp__jset(&ok, o, "report", rep);
        ntp__jpush(&ok, runs, o);
    }
    ntp__jset(&ok, root, "backends", runs);
    json_t *markers = json_array();
    const ntp_run_result *first = c->runs[0].result;
    for (int m = 0; !st && m < first->n_markers; m++) {
        json_t *o = json_object(), *ms = json_object();
        ntp__jset(&ok, o, "name", ntp__json_str(first->markers[m].name));
        for (int i = 0; i < c->n_runs; i++) {
            const ntp_run_result *r = c->runs[i].result;
            for (int k = 0; k < r->n_markers; k++)
                if (strcmp(r->markers[k].name, first->markers[m].name) == 0)
                    ntp__jset(&ok, ms, c->runs[i].backend,
                              ntp__json_num(r->markers[k].time_ms.median));
        }
        ntp__jset(&ok, o, "ms", ms);
        ntp__jpush(&ok, markers, o);
    }
    ntp__jset(&ok, root, "markers", markers);
    json_t *layers = json_array();
    for (int l = 0; !st && l < c->n_layers; l++) {
        json_t *o = json_object(), *per = json_object();
        ntp__jset(&ok, o, "name", ntp__json_str(c->layer_names[l]));
        ntp__jset(&ok, o, "type", ntp__json_str(c->layer_types[l]));
        for (int i = 0; i < c->n_runs; i++) {
            const ntp_backend_layer *L = &c->runs[i].layers[l];
            json_t *b = json_object();
            ntp__jset(&ok, b, "ms", L->ms < 0 ? json_null() : ntp__json_num(L->ms));
            ntp__jset(&ok, b, "prepare_ms", ntp__json_num(L->prepare_ms));
            ntp__jset(&ok, b, "ran_on", ntp__json_str(L->ran_on));
            ntp__jset(&ok, b, "impl", ntp__json_str(L->impl));
            ntp__jset(&ok, b, "fused_into", ntp__json_str(L->fused_into));
            ntp__jset(&ok, b, "sub_rows", json_integer(L->sub_rows));
            ntp__jset(&ok, b, "sub_ms", ntp__json_num(L->sub_ms));
            ntp__jset(&ok, per, c->runs[i].backend, b);
        }
        ntp__jset(&ok, o, "backends", per);
        ntp__jpush(&ok, layers, o);
    }
    ntp__jset(&ok, root, "layers", layers);
    if (st) {
        json_decref(root);
        return st;
    }
    return ntp__json_finish(ctx, root, ok, f, "backend comparison");
}

/* --- CSV ------------------------------------------------------------------------- */

static void csv_row(FILE *f, const char *backend, const char *layer, const char *type,
                    const char *ran_on, const char *impl, double ms, double prepare, int sub,
                    double sub_ms, const char *fused_into, double ratio, double maxabs, double rel)
{
    ntp__csv_str(f, backend);
    ntp__csv_sep(f);
    ntp__csv_str(f, layer);
    ntp__csv_sep(f);
    ntp__csv_str(f, type);
    ntp__csv_sep(f);
    ntp__csv_str(f, ran_on);
    ntp__csv_sep(f);
    ntp__csv_str(f, impl);
    ntp__csv_sep(f);
    ntp__csv_num(f, ms < 0 ? NAN : ms);
    ntp__csv_sep(f);
    ntp__csv_num(f, prepare);
    ntp__csv_sep(f);
    ntp__csv_int(f, sub);
    ntp__csv_sep(f);
    ntp__csv_num(f, sub_ms);
    ntp__csv_sep(f);
    ntp__csv_str(f, fused_into);
    ntp__csv_sep(f);
    ntp__csv_num(f, ratio);
    ntp__csv_sep(f);
    ntp__csv_num(f, maxabs < 0 ? NAN : maxabs);
    ntp__csv_sep(f);
    ntp__csv_num(f, rel < 0 ? NAN : rel);
    fputc('\n', f);
}

static ntp_status write_csv(ntp_ctx *ctx, const ntp_backend_comparison *c, FILE *f)
{
    fputs(
        "backend,layer,type,ran_on,impl,median_ms,prepare_ms,sub_rows,sub_ms,fused_into,speed_ratio,"
        "max_abs_error,rel_l2\n",
        f);
    for (int i = 0; i < c->n_runs; i++) {
        const ntp_backend_run *b = &c->runs[i];
        csv_row(f, b->backend, "(end-to-end)", NULL, b->backend, NULL,
                b->result->end_to_end_ms.median, b->result->prepare_ms, 0, 0, NULL, b->speed_ratio,
                b->max_abs_error, b->rel_l2);
        csv_row(f, b->backend, "(conversions)", "convert", "engine", NULL, b->convert_ms, 0,
                b->n_convert, 0, NULL, NAN, -1, -1);
        for (int l = 0; l < c->n_layers; l++) {
            const ntp_backend_layer *L = &b->layers[l];
            csv_row(f, b->backend, c->layer_names[l], c->layer_types[l], L->ran_on, L->impl, L->ms,
                    L->prepare_ms, L->sub_rows, L->sub_ms, L->fused_into, NAN, -1, -1);
        }
    }
    return ntp__check_stream(ctx, f, "backend comparison");
}

ntp_status ntp_report_write_backend_comparison(ntp_ctx *ctx, const ntp_backend_comparison *c,
                                               ntp_format fmt, FILE *f)
{
    if (!c || c->n_runs < 1)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "an empty backend comparison");
    switch (fmt) {
    case NTP_FORMAT_JSON: return write_json(ctx, c, f);
    case NTP_FORMAT_CSV: return write_csv(ctx, c, f);
    case NTP_FORMAT_TABLE: break;
    }
    return write_table(ctx, c, f);
}
