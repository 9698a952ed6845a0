/* The run report: measured per-layer and end-to-end times with their
 * statistics, throughput, overhead, memory and the machine they were
 * measured on, as a table, JSON or CSV (docs/report-format.md). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "measure/counters-impl.h"
#include "measure/measure-impl.h"
#include "report-impl.h"
#include "ntprof/cluster.h"
#include "ntprof/frameworks.h"

/* GB/s of `bytes` moved in `ms` milliseconds (decimal GB, like GFLOP/s). */
static double rate_g(int64_t amount, double ms)
{
    return ms > 0.0 ? (double)amount / (ms * 1e-3) / 1e9 : NAN;
}

static double ratio(int64_t a, int64_t b)
{
    return b > 0 ? (double)a / (double)b : NAN;
}

/* --- table ------------------------------------------------------------------------ */

/* Column widths; with single spaces between them the table is 94 columns,
 * 100 with the roofline column that a run with known ceilings adds. */
enum {
    W_NAME = 22,
    W_TYPE = 14,
    W_SHAPE = 14,
    W_MS = 9,
    W_PCT = 6,
    W_GF = 8,
    W_GB = 7,
    W_INT = 7,
    W_ROOF = 5,
    W_PRED = 6
};

/* The prediction column (docs/predict.md) comes last, after the roof, only
 * when the run has a calibration: without one the table is unchanged. */
enum { N_COLS = 8, N_COLS_ROOF = 9, N_COLS_ALL = 10, C_PRED = 9 };

/* The table's layout: its column widths and whether it has the roof
 * column. A run with rows on a GPU has several roofs, so its roof cells
 * carry a letter saying which one (c, g, l) and take a column from the
 * shape. */
typedef struct layout {
    int widths[N_COLS_ALL];
    bool roof;
    bool pred;  /* a prediction error column */
    bool multi; /* rows on a GPU: roof cells name their ceiling */
} layout;

static layout table_layout(const ntp_run_result *r)
{
    layout t = {{W_NAME, W_TYPE, W_SHAPE, W_MS, W_PCT, W_GF, W_GB, W_INT, W_ROOF, W_PRED},
                r->roofline.available,
                r->prediction.available,
                r->roofline.available && r->roofline.gpu_rows};
    if (t.multi) {
        t.widths[2] = W_SHAPE - 1;
        t.widths[8] = W_ROOF + 1;
    }
    return t;
}

/* One table row from already formatted cells: text columns left-aligned,
 * numbers right-aligned. The layout's roof adds the ninth column. */
static void put_row(FILE *f, const char *const cells[N_COLS_ALL], const layout *t)
{
    for (int i = 0; i < N_COLS_ALL; i++) {
        if ((i == N_COLS_ROOF - 1 && !t->roof) || (i == C_PRED && !t->pred))
            continue;
        if (i)
            fputc(' ', f);
        ntp__put_cell(f, cells[i] ? cells[i] : "", t->widths[i], i >= 3);
    }
    fputc('\n', f);
}

/* A row's prediction error, "+12%"; "-" where it was not predicted. */
static const char *fmt_pred(const ntp_layer_result *l, char *buf, size_t len)
{
    if (!l->predicted || !(l->time_ms.median > 0))
        return l->prediction_note[0] ? "n/a" : "-";
    double e = 100.0 * (l->predicted_ms - l->time_ms.median) / l->time_ms.median;
    if (fabs(e) >= 999.5)
        snprintf(buf, len, "%s", e > 0 ? ">+999%" : "<-999%");
    else
        snprintf(buf, len, "%+.0f%%", e);
    return buf;
}

/* The letter of a roof ceiling in a table of several roofs: c for the
 * CPU's, g for the GPU's compute roof, l for the host<->device link. */
static const char *roof_letter(const char *ceiling)
{
    if (!ceiling)
        return "";
    if (strncmp(ceiling, "cpu ", 4) == 0)
        return "c";
    if (strcmp(ceiling, "gpu h2d") == 0 || strcmp(ceiling, "gpu d2h") == 0)
        return "l";
    return strncmp(ceiling, "gpu ", 4) == 0 ? "g" : "";
}

/* The share of the roof a row reached, "85%" ("g85%" in a table of several
 * roofs); "-" where it was not placed, "n/a" for a GPU row without GPU
 * ceilings. */
static const char *fmt_roof(double share, bool placed, const char *ceiling, const layout *t,
                            char *buf, size_t len)
{
    if (ceiling && strcmp(ceiling, NTP_ROOF_NO_GPU) == 0)
        return "n/a";
    const char *letter = t->multi ? roof_letter(ceiling) : "";
    if (!placed || !(share > 0) || !isfinite(share)) {
        /* A copy row placed on the link without the bytes it moved. */
        if (placed && letter[0]) {
            snprintf(buf, len, "%s-", letter);
            return buf;
        }
        return "-";
    }
    if (100.0 * share < 0.5)
        snprintf(buf, len, "%s<1%%", letter); /* placed, but far below the roof: not "0%" */
    else
        snprintf(buf, len, "%s%.0f%%", letter, 100.0 * share);
    if ((int)ntp__text_cols(buf) <= t->widths[8])
        return buf;
    snprintf(buf, len, "%s>999%%", letter);
    return buf;
}

/* Whether a row was placed on a roof: a compute roof or, for a copy, a link. */
static bool row_placed(const ntp_layer_result *l)
{
    return l->attainable_gflops > 0 || l->attainable_gbps > 0;
}

static const char *fmt_ms(double ms, char *buf, size_t len)
{
    /* Four decimals keep a 1 µs layer visible; long times lose decimals
     * rather than columns. */
    return ntp__fit_number(ms, W_MS, 4, buf, len);
}

static void table_layer(FILE *f, const ntp_layer_result *l, const layout *t)
{
    char shape[192], ms[32], pct[32], gf[32], gb[32], in[32], rs[32];
    ntp__shape_x(&l->output_shape, shape, sizeof shape);
    ntp__fit_number(l->intensity, W_INT, 2, in, sizeof in);
    if (l->fused) {
        /* A fused layer ran inside another one and has no time of its own. */
        const char *cells[N_COLS_ALL] = {l->name, l->type, shape, "fused", "-",
                                         "-",     "-",     in,    "-",     "-"};
        put_row(f, cells, t);
        return;
    }
    fmt_ms(l->time_ms.median, ms, sizeof ms);
    ntp__fit_number(100.0 * l->share, W_PCT, 1, pct, sizeof pct);
    ntp__fit_number(l->gflops, W_GF, 2, gf, sizeof gf);
    ntp__fit_number(l->gbps, W_GB, 2, gb, sizeof gb);
    char pe[32];
    const char *cells[N_COLS_ALL] = {
        l->name,
        l->type,
        shape,
        ms,
        pct,
        gf,
        gb,
        in,
        fmt_roof(l->roof_share, row_placed(l), l->roof_ceiling, t, rs, sizeof rs),
        fmt_pred(l, pe, sizeof pe)};
    put_row(f, cells, t);
}

static void table_marker(FILE *f, const ntp_marker_result *m, const layout *t)
{
    char range[64], ms[32], pct[32], gf[32], gb[32], in[32], rs[32];
    snprintf(range, sizeof range, "layers %d..%d", m->first, m->last);
    fmt_ms(m->time_ms.median, ms, sizeof ms);
    ntp__fit_number(100.0 * m->share, W_PCT, 1, pct, sizeof pct);
    ntp__fit_number(m->gflops, W_GF, 2, gf, sizeof gf);
    ntp__fit_number(rate_g(m->bytes, m->time_ms.median), W_GB, 2, gb, sizeof gb);
    ntp__fit_number(ratio(m->flops, m->bytes), W_INT, 2, in, sizeof in);
    const char *cells[N_COLS_ALL] = {
        m->name,
        "marker",
        range,
        ms,
        pct,
        gf,
        gb,
        in,
        fmt_roof(m->roof_share, m->attainable_gflops > 0, m->roof_ceiling, t, rs, sizeof rs),
        "-"};
    put_row(f, cells, t);
}

/* Four significant digits, without the exponent form %g picks for large
 * values (a throughput of 117647/s, not 1.176e+05). */
static const char *fmt_sig(double v, char *buf, size_t len)
{
    if (fabs(v) >= 1e4 && fabs(v) < 1e15)
        snprintf(buf, len, "%.0f", v);
    else
        snprintf(buf, len, "%.4g", v);
    return buf;
}

/* The ceilings the rows were placed under, and what the roof column means. */
static void table_roofline(FILE *f, const ntp_roofline *rl)
{
    if (!rl->available) {
        ntp__put_line(f, "roofline: not available (no ceilings for this machine: run "
                         "`ntprof machine`)");
        return;
    }
    ntp__put_linef(f, "roofline: peak %.4g GFLOP/s, DRAM %.4g GB/s, ridge %.3g FLOP/B",
                   rl->peak_gflops, rl->bandwidth_gbps, rl->ridge_intensity);
    char what[512];
    snprintf(what, sizeof what, "peak from %s; ceilings measured %s", rl->peak_source,
             rl->measured_at);
    ntp__put_wrapped(f, "  ", what);
    ntp__put_line(f, "  roof = GFLOP/s as a share of min(peak, FLOP/B x DRAM GB/s)");
    if (!rl->gpu_rows)
        return;
    if (!rl->gpu_available) {
        ntp__put_wrapped(f, "GPU rows: ", NTP_ROOF_NO_GPU);
        return;
    }
    char gpu[512], peak[32];
    /* A GPU's peak is hundreds of thousands of GFLOP/s: no exponent form. */
    snprintf(gpu, sizeof gpu,
             "%s, %s GEMM %s GFLOP/s, DRAM %.4g GB/s, ridge %.3g FLOP/B; host->device %.4g "
             "GB/s, device->host %.4g GB/s",
             rl->gpu_name, rl->gpu_math[0] ? rl->gpu_math : "?",
             fmt_sig(rl->gpu_peak_gflops, peak, sizeof peak), rl->gpu_bandwidth_gbps,
             rl->gpu_ridge_intensity, rl->gpu_h2d_gbps, rl->gpu_d2h_gbps);
    ntp__put_wrapped(f, "GPU roofline: ", gpu);
    ntp__put_wrapped(f, "  ",
                     "roof letters: c = the CPU's roof above; g = the GPU's, min(GEMM peak, "
                     "FLOP/B x device DRAM GB/s); l = the host<->device link, GB/s as a share of "
                     "its bandwidth");
}

/* A run layer's prediction note (what 0) or name (what 1), for
 * ntp__put_reasons. */
static const char *run_layer_text(const void *layers, int i, int what)
{
    const ntp_layer_result *l = (const ntp_layer_result *)layers + i;
    return what ? l->name : l->prediction_note;
}

/* Device memory, only when an accelerator backend ran. */
/* The prediction's summary under the table (docs/predict.md). */
static void table_prediction(FILE *f, const ntp_run_result *r)
{
    const ntp_run_prediction *p = &r->prediction;
    if (!p->available)
        return;
    ntp__put_linef(f,
                   "%s: predicted %.4g ms end to end, measured %.4g ms (%+.1f%%); "
                   "calibration %s%s",
                   p->roofline_only ? "roofline-only estimate" : "prediction", p->predicted_ms,
                   p->measured_ms, 100.0 * p->error, p->calibration,
                   p->stale ? " (STALE: the backend's version changed, recalibrate)" : "");
    if (p->n_compared > 0)
        ntp__put_linef(f,
                       "layers within +-10%%: %d of %d (%.0f%%), within +-25%%: %d (%.0f%%); "
                       "layers over 1%% of the time within +-25%%: %d of %d",
                       p->within_10, p->n_compared, 100.0 * p->within_10 / p->n_compared,
                       p->within_25, 100.0 * p->within_25 / p->n_compared, p->major_within_25,
                       p->n_major);
    if (p->uncalibrated[0])
        ntp__put_wrapped(f, "prediction: not predicted (family not calibrated): ", p->uncalibrated);
    if (p->weights_note[0])
        ntp__put_wrapped(f, "prediction: ", p->weights_note);
    /* Why each "n/a" row is not predicted, each reason once with its
     * layers. */
    ntp__put_reasons(f, "prediction ", r->layers, r->n_layers, run_layer_text);
    if (p->unpredicted_ms > 0 && isfinite(p->covered_error))
        ntp__put_linef(f,
                       "the layers not predicted took %.4g ms; without them the end-to-end "
                       "error is %+.1f%%",
                       p->unpredicted_ms, 100.0 * p->covered_error);
    char note[1024];
    if (ntp__prediction_machine_note(r, note, sizeof note))
        ntp__put_wrapped(f, "prediction: ", note);
    if (ntp__prediction_placement_line(r, note, sizeof note))
        ntp__put_wrapped(f, "prediction: ", note);
    if (p->threads_differ)
        ntp__put_linef(f,
                       "prediction: THREADS DIFFER: calibrated at %d threads, run at %d; "
                       "calibrate with --threads %d",
                       p->calibration_threads, p->run_threads, p->run_threads);
}

static void table_device_memory(FILE *f, const ntp_memory_result *m)
{
    if (!ntp_memory_has_device(m))
        return;
    char a[32], b[32], c[32], d[32];
    ntp__put_linef(f, "device memory: weights %s, activations %s, workspace %s, peak %s",
                   ntp__human_bytes((double)m->device_weight_bytes, a, sizeof a),
                   ntp__human_bytes((double)m->device_activation_bytes, b, sizeof b),
                   ntp__human_bytes((double)m->device_workspace_bytes, c, sizeof c),
                   ntp__human_bytes((double)m->device_peak_bytes, d, sizeof d));
}

static void table_accuracy(FILE *f, const ntp_run_result *r)
{
    char head[256];
    snprintf(head, sizeof head,
             "accuracy against %s:", r->accuracy_baseline ? r->accuracy_baseline : "f32");
    ntp__put_line(f, head);
    for (int i = 0; i < r->n_accuracy; i++) {
        const ntp_accuracy *a = &r->accuracy[i];
        char top[64] = "";
        if (a->top1 >= 0 && a->top5 >= 0)
            snprintf(top, sizeof top, ", top-1 %.1f%%, top-5 %.1f%% agree", 100.0 * a->top1,
                     100.0 * a->top5);
        ntp__put_linef(f, "  %s: max |error| %.3g, relative L2 %.3g%s", a->output ? a->output : "?",
                       a->max_abs_error, a->rel_l2, top);
    }
}

/* Two lines per timing: with four significant digits each, all the
 * statistics on one line would not fit 100 columns. */
static void table_stats_lines(FILE *f, const char *label, const ntp_stats *s)
{
    ntp__put_linef(f, "%s: median %.4g ms, 95%% CI [%.4g, %.4g] ms, n %zu", label, s->median,
                   s->ci95_lo, s->ci95_hi, s->n);
    ntp__put_linef(f, "  min %.4g, p90 %.4g, p99 %.4g, max %.4g, cv %.1f%%", s->min, s->p90, s->p99,
                   s->max, 100.0 * s->cv);
}

/* Two strings, either of which may be NULL, are equal. */
static bool str_eq(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* --fuse as the run was made: off, or on with how many layers the
 * backends folded into how many groups and how many fusions they declined
 * (each reason is listed under the implementations). */
static void table_fusion(FILE *f, const ntp_run_result *r)
{
    int fused = 0, groups = 0, declined = 0;
    for (int i = 0; i < r->n_layers; i++) {
        const ntp_layer_result *l = &r->layers[i];
        declined += l->fuse_note != NULL;
        if (!l->fused)
            continue;
        fused++;
        /* A group is counted once, at its first member. A group's layers
         * lie close together, so a short look back finds the others and
         * keeps a 10,000-layer report linear. */
        bool seen = false;
        for (int k = i - 1; k >= 0 && k >= i - 64 && !seen; k--)
            seen = r->layers[k].fused && str_eq(r->layers[k].fused_into, l->fused_into);
        groups += !seen;
    }
    if (!r->fused) {
        ntp__put_line(f, "fusion: off (no --fuse): every layer timed on its own");
        return;
    }
    char text[256];
    size_t used;
    if (fused == 0)
        used = (size_t)snprintf(text, sizeof text, "on (--fuse), but no backend fused any layer");
    else
        used = (size_t)snprintf(text, sizeof text,
                                "on (--fuse): %d layer%s fused into %d group%s, "
                                "timed in each group's first layer",
                                fused, fused == 1 ? "" : "s", groups, groups == 1 ? "" : "s");
    if (declined > 0 && used < sizeof text)
        snprintf(text + used, sizeof text - used, "; %d declined", declined);
    ntp__put_wrapped(f, "fusion: ", text);
}

/* One implementation (a backend and what it chose) and the rows that ran
 * on it. */
typedef struct impl_use {
    const char *backend, *impl;
    int rows, first;
    double share;
} impl_use;

static int by_share_desc(const void *a, const void *b)
{
    const impl_use *x = a, *y = b;
    if (x->share != y->share)
        return x->share < y->share ? 1 : -1;
    return (x->first > y->first) - (x->first < y->first);
}

/* Each implementation the rows ran on, the largest share of the layer time
 * first, with the rows' names (a few, then how many more): the table has no
 * room for a column, and the JSON and CSV carry every row's. Fused rows ran
 * in their group's implementation and are left out. Then every fusion a
 * backend declined, with its reason. */
static void table_impls(FILE *f, const ntp_run_result *r)
{
    enum { MAX_IMPLS = 64, MAX_NAMES = 4 };
    impl_use use[MAX_IMPLS];
    int n = 0, other = 0;
    for (int i = 0; i < r->n_layers; i++) {
        const ntp_layer_result *l = &r->layers[i];
        if (l->fused)
            continue;
        int k = 0;
        while (k < n && !(str_eq(use[k].backend, l->backend) && str_eq(use[k].impl, l->impl)))
            k++;
        if (k == n) {
            if (n == MAX_IMPLS) {
                other++;
                continue;
            }
            use[n++] = (impl_use){l->backend, l->impl, 0, i, 0};
        }
        use[k].rows++;
        if (isfinite(l->share))
            use[k].share += l->share;
    }
    if (n > 0) {
        qsort(use, (size_t)n, sizeof *use, by_share_desc);
        ntp__put_line(f, "implementations (the backend's choice per row, by share of layer time):");
    }
    for (int k = 0; k < n; k++) {
        char line[1024];
        const char *be = use[k].backend ? use[k].backend : "?";
        /* A backend that names no implementation of its own reports its
         * name; a report from before implementations were recorded has none. */
        const char *impl = use[k].impl;
        bool named = impl && strcmp(impl, be) != 0;
        char label[512];
        snprintf(label, sizeof label, "  %s%s%s%s: ", named ? impl : be, named ? " on " : "",
                 named ? be : "", impl ? "" : " (implementation not recorded)");
        size_t used = (size_t)snprintf(line, sizeof line, "%d row%s, %.1f%%:", use[k].rows,
                                       use[k].rows == 1 ? "" : "s", 100.0 * use[k].share);
        int shown = 0;
        for (int i = use[k].first; i < r->n_layers && shown < MAX_NAMES && used < sizeof line;
             i++) {
            const ntp_layer_result *l = &r->layers[i];
            if (l->fused || !str_eq(l->backend, use[k].backend) || !str_eq(l->impl, use[k].impl))
                continue;
            used += (size_t)snprintf(line + used, sizeof line - used, "%s %s", shown ? "," : "",
                                     l->name ? l->name : "?");
            shown++;
        }
        if (use[k].rows > shown && used < sizeof line)
            snprintf(line + used, sizeof line - used, " and %d more", use[k].rows - shown);
        ntp__put_wrapped(f, label, line);
    }
    if (other > 0)
        ntp__put_linef(f, "  and %d rows on further implementations (in the JSON and CSV)", other);
    for (int i = 0; i < r->n_layers; i++) {
        const ntp_layer_result *l = &r->layers[i];
        if (!l->fuse_note)
            continue;
        char line[1024];
        snprintf(line, sizeof line, "%s: %s", l->name ? l->name : "?", l->fuse_note);
        ntp__put_wrapped(f, "fusion note: ", line);
    }
    if (n > 0)
        fputc('\n', f);
}

/* A row's median apart over its median together (both > 0). */
typedef struct moved_row {
    const char *name;
    double ratio;
} moved_row;

static int by_ratio_desc(const void *a, const void *b)
{
    double x = ((const moved_row *)a)->ratio, y = ((const moved_row *)b)->ratio;
    return (x < y) - (x > y);
}

/* Where the hand-off looks split the iterations (docs/run.md#handoff): the
 * rows over 1% of the layer time that the CPUs' placement moved most, as
 * their median apart over their median together: those slower apart
 * (from 1.1x), then those faster (to 0.9x); false when the run was not
 * split, its time did not follow the split (ntp_handoff_check.unconfirmed)
 * or no row moved that far. */
static bool moved_rows(const ntp_run_result *r, char *buf, size_t len)
{
    enum { SHOWN = 5 };
    buf[0] = '\0';
    const ntp_handoff_check *h = &r->env.contention.handoff;
    if (!ntp_handoff_split_shown(h) || r->n_layers <= 0)
        return false;
    moved_row *m = malloc((size_t)r->n_layers * sizeof *m);
    if (!m)
        return false;
    int n = 0;
    for (int i = 0; i < r->n_layers; i++) {
        const ntp_layer_result *l = &r->layers[i];
        if (l->fused || l->share < 0.01 || !(l->together_ms > 0) || !(l->apart_ms > 0))
            continue;
        m[n++] = (moved_row){l->name ? l->name : "?", l->apart_ms / l->together_ms};
    }
    qsort(m, (size_t)n, sizeof *m, by_ratio_desc);
    size_t used = (size_t)snprintf(buf, len,
                                   "%d iterations together, %d apart; rows over 1%% of the time, "
                                   "median apart / together:",
                                   h->together_n, h->apart_n);
    int slow = 0, fast = 0;
    for (int i = 0; i < n && slow < SHOWN && m[i].ratio >= 1.1 && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s %s %.2fx", slow++ ? "," : " slower",
                                 m[i].name, m[i].ratio);
    for (int i = n - 1; i >= 0 && fast < SHOWN && m[i].ratio <= 1 / 1.1 && used < len; i--)
        used += (size_t)snprintf(buf + used, len - used, "%s %s %.2fx",
                                 fast++ ? ","
                                 : slow ? "; faster"
                                        : " faster",
                                 m[i].name, m[i].ratio);
    free(m);
    return slow + fast > 0;
}

/* The header's reproducibility lines: the backends' libraries with the
 * ISA each chose, the CPU's frequency policy and load, and what other
 * processes took while the run was measured (with the memory bus and the
 * CPUs' hand-off when probed). The table and the HTML report print the
 * same lines. */
int ntp__run_env_lines(const ntp_run_result *r, ntp__env_line out[NTP_ENV_LINES])
{
    const ntp_env *e = &r->env;
    const ntp_contention *c = &e->contention;
    int n = 0;
    if (e->n_libraries > 0) {
        size_t used = 0;
        for (int i = 0; i < e->n_libraries && used < sizeof out[n].text; i++)
            used += (size_t)snprintf(out[n].text + used, sizeof out[n].text - used, "%s%s %s [%s]",
                                     i ? "; " : "", e->library[i].name, e->library[i].version,
                                     e->library[i].isa);
        out[n++].label = "libraries";
    }
    char load[64] = "n/a (/proc/loadavg unreadable)";
    if (e->load_average[0] >= 0)
        snprintf(load, sizeof load, "%.2f %.2f %.2f", e->load_average[0], e->load_average[1],
                 e->load_average[2]);
    snprintf(out[n].text, sizeof out[n].text, "governor %s, %s, boost %s, SMT %s; load average %s",
             e->governor, e->cpu_mhz_text, e->boost, e->smt, load);
    out[n++].label = "cpu";
    if (r->wait_policy) {
        bool set = r->wait_settings && *r->wait_settings;
        snprintf(out[n].text, sizeof out[n].text, "%s%s%s%s", r->wait_policy, set ? " (" : "",
                 set ? r->wait_settings : "", set ? ")" : "");
        out[n++].label = "thread pools' wait policy";
    }
    if (c->measured) {
        char at[48] = "";
        if (c->load_average >= 0)
            snprintf(at, sizeof at, "; load average %.2f at start", c->load_average);
        snprintf(out[n].text, sizeof out[n].text,
                 "other processes %.0f%%, steal %.0f%%, this run %.0f%% of %d CPU%s over %.2f s "
                 "(\xC2\xB1%.1f%%)%s",
                 100 * c->other, 100 * c->steal, 100 * c->own, c->cpus, c->cpus == 1 ? "" : "s",
                 c->window_s, 100 * c->resolution, at);
    } else {
        snprintf(out[n].text, sizeof out[n].text, "n/a (%s)",
                 c->reason[0] ? c->reason : "not measured");
    }
    out[n++].label = "contention";
    if (ntp__bandwidth_line(&c->bandwidth, out[n].text, sizeof out[n].text))
        out[n++].label = "memory bandwidth";
    if (ntp__handoff_line(&c->handoff, out[n].text, sizeof out[n].text))
        out[n++].label = "cpu hand-off";
    if (moved_rows(r, out[n].text, sizeof out[n].text))
        out[n++].label = "hand-off moved";
    if (ntp__pace_line(&c->pace, out[n].text, sizeof out[n].text))
        out[n++].label = "cpu pace";
    return n;
}

static void table_environment(FILE *f, const ntp_run_result *r)
{
    ntp__env_line lines[NTP_ENV_LINES];
    int n = ntp__run_env_lines(r, lines);
    for (int i = 0; i < n; i++) {
        char label[64];
        snprintf(label, sizeof label, "%s: ", lines[i].label);
        ntp__put_wrapped(f, label, lines[i].text);
    }
}

/* Where the layers ran: how many of the (non-inlay) layers the chosen
 * backend ran at the run's precision, and the other backends that ran the
 * rest, with their counts (fused layers count for the backend that fused
 * them). */
#define MAX_ELSEWHERE 8
typedef struct placement {
    int layers, own, n_else;
    const char *else_name[MAX_ELSEWHERE];
    int else_count[MAX_ELSEWHERE];
} placement;

static void count_placement(const ntp_run_result *r, placement *p)
{
    memset(p, 0, sizeof *p);
    for (int i = 0; i < r->n_layers; i++) {
        const ntp_layer_result *L = &r->layers[i];
        if (L->inlay || !L->kind ||
            (strcmp(L->kind, "layer") != 0 && strcmp(L->kind, "fused") != 0))
            continue;
        p->layers++;
        const char *b = L->backend ? L->backend : "?";
        if (r->backend && strcmp(b, r->backend) == 0) {
            p->own++;
            continue;
        }
        int k = 0;
        while (k < p->n_else && strcmp(p->else_name[k], b) != 0)
            k++;
        if (k == p->n_else && p->n_else < MAX_ELSEWHERE)
            p->else_name[p->n_else++] = b;
        if (k < p->n_else)
            p->else_count[k]++;
    }
}

/* "onednn ran 0 of 19 layers at f16; all ran on ref", when some fell back. */
static void table_placement(FILE *f, const ntp_run_result *r)
{
    placement p;
    count_placement(r, &p);
    if (!r->backend || p.own == p.layers)
        return;
    char line[512];
    size_t u = (size_t)snprintf(line, sizeof line, "%s ran %d of %d layers at %s; ", r->backend,
                                p.own, p.layers, ntp_dtype_name(r->precision));
    if (p.n_else == 1 && p.own == 0)
        snprintf(line + u, sizeof line - u, "all ran on %s", p.else_name[0]);
    else
        for (int k = 0; k < p.n_else && u < sizeof line; k++)
            u += (size_t)snprintf(line + u, sizeof line - u, "%s%d ran on %s", k ? ", " : "",
                                  p.else_count[k], p.else_name[k]);
    ntp__put_line(f, line);
}

static json_t *placement_json(bool *ok, const ntp_run_result *r)
{
    placement p;
    count_placement(r, &p);
    json_t *o = json_object(), *e = json_object();
    ntp__jset(ok, o, "layers", json_integer(p.layers));
    ntp__jset(ok, o, "on_backend", json_integer(p.own));
    for (int k = 0; k < p.n_else; k++)
        ntp__jset(ok, e, p.else_name[k], json_integer(p.else_count[k]));
    ntp__jset(ok, o, "elsewhere", e);
    return o;
}

/* ntp_run_opts.torch_script's figure, after the eager one (docs/frameworks.md). */
static void table_torch_script(FILE *f, const ntp_run_result *r)
{
    const ntp_torch_script_result *s = r->torch_script;
    const ntp_stats *e = &s->end_to_end_ms;
    fputc('\n', f);
    ntp__put_linef(f,
                   "TorchScript (one module: torch::jit::freeze, optimize_for_inference; "
                   "%d thread%s)",
                   s->threads, s->threads == 1 ? "" : "s");
    ntp__put_linef(f,
                   "  build %.1f ms (compile, freeze, optimise); %d warmup + %d measured "
                   "iterations",
                   s->build_ms, s->warmup, s->iterations);
    ntp__put_linef(f, "  end to end median %.4g ms (95%% CI %.4g..%.4g; p90 %.4g, cv %.3f)",
                   e->median, e->ci95_lo, e->ci95_hi, e->p90, e->cv);
    if (r->latency_ms > 0)
        ntp__put_linef(f, "  eager (per layer, the run above) %.4g ms: script / eager %.3f",
                       r->latency_ms, s->latency_ms / r->latency_ms);
    ntp__put_linef(f, "  outputs vs ref: max abs error %.3g, rel L2 %.3g", s->max_abs_error,
                   s->rel_l2);
}

static void write_table(const ntp_run_result *r, FILE *f)
{
    char a[32], b[32], c[32], d[32];
    ntp__put_linef(f, "topology %s (%s)", r->topology ? r->topology : "?",
                   r->source ? r->source : "?");
    char thr[32];
    ntp__put_linef(f,
                   "backend %s, precision %s, batch %" PRId64 ", threads %s, seed %" PRIu64
                   ", %d warmup + %d measured iterations%s%s",
                   r->backend ? r->backend : "?", ntp_dtype_name(r->precision), r->batch,
                   ntp__threads_text(r, thr, sizeof thr), r->seed, r->warmup, r->iterations,
                   r->only_marker ? ", only marker " : "", r->only_marker ? r->only_marker : "");
    table_fusion(f, r);
    table_placement(f, r);
    if (r->n_params > 0) {
        char line[1024];
        size_t used = (size_t)snprintf(line, sizeof line, "params");
        for (int i = 0; i < r->n_params && used < sizeof line; i++)
            used += (size_t)snprintf(line + used, sizeof line - used, " %s=%s", r->param_names[i],
                                     r->param_values[i]);
        ntp__put_line(f, line);
    }
    ntp__put_linef(f, "machine %s (%s), %d cores, %s memory, %s", r->env.cpu_model,
                   r->env.cpu_signature[0] ? r->env.cpu_signature : "not recorded", r->env.cores,
                   ntp__human_bytes((double)r->env.memory_bytes, a, sizeof a), r->env.os);
    ntp__put_linef(f, "ntprof %s (%s), %s, %s", r->env.ntprof_version, r->env.git_revision,
                   r->env.compiler, r->env.timestamp);
    table_environment(f, r);
    fputc('\n', f);

    /* The roof column only when there is a roof to compare with. */
    layout t = table_layout(r);
    static const char *const head[N_COLS_ALL] = {"layer",   "type", "shape",  "median ms", "%",
                                                 "GFLOP/s", "GB/s", "FLOP/B", "roof",      "pred"};
    put_row(f, head, &t);
    for (int i = 0; i < N_COLS_ALL; i++) {
        if ((i == N_COLS_ROOF - 1 && !t.roof) || (i == C_PRED && !t.pred))
            continue;
        if (i)
            fputc(' ', f);
        for (int k = 0; k < t.widths[i]; k++)
            fputc('-', f);
    }
    fputc('\n', f);
    for (int i = 0; i < r->n_layers; i++)
        table_layer(f, &r->layers[i], &t);
    if (r->n_markers > 0) {
        fputc('\n', f);
        for (int i = 0; i < r->n_markers; i++)
            table_marker(f, &r->markers[i], &t);
    }
    fputc('\n', f);
    table_impls(f, r);
    ntp__counters_table(f, r);

    table_stats_lines(f, "end-to-end", &r->end_to_end_ms);
    table_stats_lines(f, "layer sum", &r->layer_sum_ms);
    ntp__put_linef(f, "throughput %s samples/s, latency %.4g ms, %s FLOPs per pass (%.4g GFLOP/s)",
                   fmt_sig(r->throughput, b, sizeof b), r->latency_ms,
                   ntp__human_count((double)r->flops, a, sizeof a),
                   rate_g(r->flops, r->end_to_end_ms.median));
    /* A layer sum inside end-to-end's confidence interval means the
     * instrument's cost is below what this run can resolve: say so rather
     * than print a negative overhead as if it were measured. */
    const ntp_stats *e2e = &r->end_to_end_ms;
    if (r->layer_sum_ms.median >= e2e->ci95_lo && r->layer_sum_ms.median <= e2e->ci95_hi)
        ntp__put_linef(f,
                       "per-layer timing overhead: within noise (layer sum %+.1f%% "
                       "of end-to-end, inside its 95%% CI)",
                       100.0 * r->overhead_fraction);
    else
        ntp__put_linef(f,
                       "per-layer timing overhead: %+.1f%% of end-to-end, %+.2g \xC2\xB5s per "
                       "layer",
                       100.0 * r->overhead_fraction, r->overhead_per_layer_us);
    ntp__put_linef(f, "prepare %.4g ms (primitive creation and weight packing, all layers)",
                   r->prepare_ms);
    char copies[64] = "";
    if (r->memory.weight_copy_bytes > 0) {
        char e[32];
        snprintf(copies, sizeof copies, " (+ %s f32 copies)",
                 ntp__human_bytes((double)r->memory.weight_copy_bytes, e, sizeof e));
    }
    /* 0: /proc could not read or set back the high-water mark (a peak
     * with the bandwidth probes or earlier runs in it would mislead). */
    const char *peak = r->memory.peak_rss_bytes > 0
                           ? ntp__human_bytes((double)r->memory.peak_rss_bytes, d, sizeof d)
                           : "n/a (/proc/self could not read or set back the resident set's "
                             "high-water mark)";
    char line[320];
    snprintf(line, sizeof line, "weights %s%s, arena %s, workspace %s, peak RSS %s",
             ntp__human_bytes((double)r->memory.weight_bytes, a, sizeof a), copies,
             ntp__human_bytes((double)r->memory.arena_bytes, b, sizeof b),
             ntp__human_bytes((double)r->memory.workspace_bytes, c, sizeof c), peak);
    ntp__put_wrapped(f, "memory: ", line);
    table_device_memory(f, &r->memory);
    ntp__put_linef(
        f, "page faults during the measured iterations: %" PRId64 " minor, %" PRId64 " major",
        r->memory.minor_faults, r->memory.major_faults);
    table_roofline(f, &r->roofline);
    table_prediction(f, r);
    if (r->n_accuracy > 0)
        table_accuracy(f, r);
    if (r->torch_script)
        table_torch_script(f, r);
    for (int i = 0; i < r->n_warnings; i++)
        ntp__put_wrapped(f, "warning: ", r->warnings[i]);
}

/* --- JSON --------------------------------------------------------------------------- */

/* The statistics of one timing, as fields of o (the field names say ms). */
/* [lo, hi]: an interval as the report writes one. */
static json_t *ci_pair(bool *ok, double lo, double hi)
{
    json_t *ci = json_array();
    ntp__jpush(ok, ci, ntp__json_num(lo));
    ntp__jpush(ok, ci, ntp__json_num(hi));
    return ci;
}

static void stats_fields(bool *ok, json_t *o, const ntp_stats *s)
{
    ntp__jset(ok, o, "median_ms", ntp__json_num(s->median));
    ntp__jset(ok, o, "min_ms", ntp__json_num(s->min));
    ntp__jset(ok, o, "mean_ms", ntp__json_num(s->mean));
    ntp__jset(ok, o, "p90_ms", ntp__json_num(s->p90));
    ntp__jset(ok, o, "p99_ms", ntp__json_num(s->p99));
    ntp__jset(ok, o, "max_ms", ntp__json_num(s->max));
    ntp__jset(ok, o, "stddev_ms", ntp__json_num(s->stddev));
    ntp__jset(ok, o, "ci95_ms", ci_pair(ok, s->ci95_lo, s->ci95_hi));
    ntp__jset(ok, o, "n", json_integer((json_int_t)s->n));
    ntp__jset(ok, o, "cv", ntp__json_num(s->cv));
}

/* The row's kind; results built without one (older engines, tests) are a
 * layer or a fused layer. */
static const char *row_kind(const ntp_layer_result *l)
{
    return l->kind ? l->kind : l->fused ? "fused" : "layer";
}

/* Where a row or segment sits under the roofline, when there is one: the
 * bound, the share of it reached, and the ceiling it was placed on. A copy
 * row's bound is a bandwidth (attainable_gbps, only on such rows). */
static void roof_fields(bool *ok, json_t *o, bool roof, double attainable, double attainable_gbps,
                        double share, const char *ceiling)
{
    if (!roof)
        return;
    bool placed = attainable > 0 || attainable_gbps > 0;
    ntp__jset(ok, o, "attainable_gflops", attainable > 0 ? ntp__json_num(attainable) : json_null());
    if (attainable_gbps > 0)
        ntp__jset(ok, o, "attainable_gbps", ntp__json_num(attainable_gbps));
    ntp__jset(ok, o, "roof_share", placed && share > 0 ? ntp__json_num(share) : json_null());
    ntp__jset(ok, o, "roof_ceiling", ntp__json_str(ceiling));
}

static json_t *layer_json(bool *ok, const ntp_layer_result *l, bool roof)
{
    json_t *o = json_object();
    ntp__jset(ok, o, "name", ntp__json_str(l->name));
    ntp__jset(ok, o, "type", ntp__json_str(l->type));
    ntp__jset(ok, o, "kind", ntp__json_str(row_kind(l)));
    ntp__jset(ok, o, "backend", ntp__json_str(l->backend));
    ntp__jset(ok, o, "impl", ntp__json_str(l->impl));
    if (l->src_layout)
        ntp__jset(ok, o, "src_layout", ntp__json_str(l->src_layout));
    ntp__jset(ok, o, "fuse_note", ntp__json_str(l->fuse_note));
    ntp__jset(ok, o, "inlay", json_boolean(l->inlay));
    ntp__jset(ok, o, "fused", json_boolean(l->fused));
    ntp__jset(ok, o, "fused_into", ntp__json_str(l->fused ? l->fused_into : NULL));
    ntp__jset(ok, o, "output_shape", ntp__json_shape(&l->output_shape));
    stats_fields(ok, o, &l->time_ms);
    ntp__jset(ok, o, "share", ntp__json_num(l->share));
    ntp__jset(ok, o, "flops", json_integer(l->flops));
    ntp__jset(ok, o, "bytes", json_integer(l->bytes));
    ntp__jset(ok, o, "gflops", ntp__json_num(l->gflops));
    ntp__jset(ok, o, "gbps", ntp__json_num(l->gbps));
    ntp__jset(ok, o, "intensity", ntp__json_num(l->intensity));
    ntp__jset(ok, o, "prepare_ms", ntp__json_num(l->prepare_ms));
    ntp__jset(ok, o, "workspace_bytes", json_integer(l->workspace_bytes));
    roof_fields(ok, o, roof, l->attainable_gflops, l->attainable_gbps, l->roof_share,
                l->roof_ceiling);
    ntp__counters_json(ok, o, l->counters, l->n_counters, l->bound, l->bound_evidence);
    if (l->together_ms > 0 && l->apart_ms > 0) {
        ntp__jset(ok, o, "together_ms", ntp__json_num(l->together_ms));
        ntp__jset(ok, o, "apart_ms", ntp__json_num(l->apart_ms));
    }
    if (l->predicted) {
        ntp__jset(ok, o, "predicted_ms", ntp__json_num(l->predicted_ms));
        ntp__jset(ok, o, "prediction_error",
                  l->time_ms.median > 0
                      ? ntp__json_num((l->predicted_ms - l->time_ms.median) / l->time_ms.median)
                      : json_null());
    }
    if (l->prediction_note[0])
        ntp__jset(ok, o, "prediction_note", json_string(l->prediction_note));
    return o;
}

static json_t *marker_json(bool *ok, const ntp_marker_result *m, bool roof)
{
    json_t *o = json_object();
    ntp__jset(ok, o, "name", ntp__json_str(m->name));
    ntp__jset(ok, o, "first", json_integer(m->first));
    ntp__jset(ok, o, "last", json_integer(m->last));
    stats_fields(ok, o, &m->time_ms);
    ntp__jset(ok, o, "share", ntp__json_num(m->share));
    ntp__jset(ok, o, "flops", json_integer(m->flops));
    ntp__jset(ok, o, "bytes", json_integer(m->bytes));
    ntp__jset(ok, o, "gflops", ntp__json_num(m->gflops));
    ntp__jset(ok, o, "gbps", ntp__json_num(rate_g(m->bytes, m->time_ms.median)));
    ntp__jset(ok, o, "intensity", ntp__json_num(ratio(m->flops, m->bytes)));
    roof_fields(ok, o, roof, m->attainable_gflops, 0, m->roof_share, m->roof_ceiling);
    ntp__counters_json(ok, o, m->counters, m->n_counters, m->bound, m->bound_evidence);
    return o;
}

/* A seed is a uint64; JSON integers in jansson are int64, so the rare seed
 * above INT64_MAX is written as a decimal string rather than wrapped. */
static json_t *seed_json(uint64_t seed)
{
    if (seed <= (uint64_t)INT64_MAX)
        return json_integer((json_int_t)seed);
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRIu64, seed);
    return json_string(buf);
}

static json_t *flags_json(bool *ok, const char *flags)
{
    json_t *a = json_array();
    char word[64];
    const char *p = flags;
    while (p && *p) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (n == 0)
            break;
        /* "unknown" means the flags could not be read: an empty list would
         * claim the CPU has none. */
        snprintf(word, sizeof word, "%.*s", (int)(n < sizeof word ? n : sizeof word - 1), p);
        if (strcmp(word, "unknown") != 0)
            ntp__jpush(ok, a, ntp__json_str(word));
        p += n;
    }
    return a;
}

/* One hand-off probe: null where it did not run. */
/* environment.contention.pace (docs/run.md#pace). */
static json_t *pace_json(bool *ok, const ntp_pace_check *p)
{
    json_t *o = json_object();
    ntp__jset(ok, o, "measured", json_boolean(p->measured));
    if (!p->measured) {
        ntp__jset(ok, o, "reason", ntp__json_str(p->reason));
        return o;
    }
    json_t *cpus = json_array();
    for (int c = 0; c < p->n_cpus; c++) {
        json_t *one = json_object();
        ntp__jset(ok, one, "cpu", json_integer(p->cpu[c]));
        ntp__jset(ok, one, "low_gflops", ntp__json_num(p->low[c]));
        ntp__jset(ok, one, "high_gflops", ntp__json_num(p->high[c]));
        if (json_array_append_new(cpus, one))
            *ok = false;
    }
    ntp__jset(ok, o, "cpus", cpus);
    ntp__jset(ok, o, "best_gflops", ntp__json_num(p->best));
    ntp__jset(ok, o, "looks", json_integer(p->looks));
    ntp__jset(ok, o, "slow_looks", json_integer(p->slow_looks));
    ntp__jset(ok, o, "slow_share", ntp__json_num(NTP_PACE_SLOW_SHARE));
    ntp__jset(ok, o, "sample_s", ntp__json_num(NTP_HANDOFF_SAMPLE_S));
    ntp__jset(ok, o, "one_thread", json_boolean(p->one_thread));
    ntp__jset(ok, o, "cost_s", ntp__json_num(p->cost_s));
    ntp__jset(ok, o, "slow_ms", p->slow_n > 0 ? ntp__json_num(p->slow_ms) : json_null());
    ntp__jset(ok, o, "slow_n", json_integer(p->slow_n));
    ntp__jset(ok, o, "clear_ms", p->clear_n > 0 ? ntp__json_num(p->clear_ms) : json_null());
    ntp__jset(ok, o, "clear_n", json_integer(p->clear_n));
    ntp__jset(ok, o, "slow_ci95_ms",
              p->slow_n > 0 ? ci_pair(ok, p->slow_lo, p->slow_hi) : json_null());
    ntp__jset(ok, o, "clear_ci95_ms",
              p->clear_n > 0 ? ci_pair(ok, p->clear_lo, p->clear_hi) : json_null());
    ntp__jset(ok, o, "slowed", json_boolean(p->slowed));
    ntp__jset(ok, o, "unconfirmed", json_boolean(p->unconfirmed));
    ntp__jset(ok, o, "throughout", json_boolean(p->throughout));
    ntp__jset(ok, o, "slower_ratio", ntp__json_num(NTP_HANDOFF_SLOWER));
    return o;
}

static json_t *handoff_probe_json(bool *ok, const ntp_handoff_probe *p)
{
    if (!(p->ratio > 0))
        return json_null();
    json_t *o = json_object();
    ntp__jset(ok, o, "ratio", ntp__json_num(p->ratio));
    ntp__jset(ok, o, "remote_gbps", ntp__json_num(p->remote_gbps));
    ntp__jset(ok, o, "own_gbps", ntp__json_num(p->own_gbps));
    ntp__jset(ok, o, "cpu_from", json_integer(p->cpu_from));
    ntp__jset(ok, o, "cpu_to", json_integer(p->cpu_to));
    ntp__jset(ok, o, "sysfs_level",
              p->sysfs_level >= 0 ? json_integer(p->sysfs_level) : json_null());
    ntp__jset(ok, o, "sysfs_bytes", json_integer(p->sysfs_bytes));
    ntp__jset(ok, o, "pairs_apart", json_integer(p->pairs_apart));
    return o;
}

static json_t *env_json(bool *ok, const ntp_env *e)
{
    json_t *o = json_object();
    ntp__jset(ok, o, "cpu_model", ntp__json_str(e->cpu_model));
    ntp__jset(ok, o, "cpu_flags", flags_json(ok, e->cpu_flags));
    ntp__jset(ok, o, "cpu_signature", ntp__json_str(e->cpu_signature));
    ntp__jset(ok, o, "cores", json_integer(e->cores));
    ntp__jset(ok, o, "memory_bytes", json_integer(e->memory_bytes));
    ntp__jset(ok, o, "os", ntp__json_str(e->os));
    ntp__jset(ok, o, "compiler", ntp__json_str(e->compiler));
    ntp__jset(ok, o, "libraries", ntp__json_str(e->libraries));
    ntp__jset(ok, o, "ntprof_version", ntp__json_str(e->ntprof_version));
    ntp__jset(ok, o, "git_revision", ntp__json_str(e->git_revision));
    ntp__jset(ok, o, "hostname", ntp__json_str(e->hostname));
    ntp__jset(ok, o, "timestamp", ntp__json_str(e->timestamp));
    if (e->run_uuid[0])
        ntp__jset(ok, o, "run_uuid", ntp__json_str(e->run_uuid));
    json_t *libs = json_array();
    for (int i = 0; i < e->n_libraries; i++) {
        json_t *l = json_object();
        ntp__jset(ok, l, "name", ntp__json_str(e->library[i].name));
        ntp__jset(ok, l, "version", ntp__json_str(e->library[i].version));
        ntp__jset(ok, l, "isa", ntp__json_str(e->library[i].isa));
        ntp__jpush(ok, libs, l);
    }
    ntp__jset(ok, o, "backend_libraries", libs);
    ntp__jset(ok, o, "governor", ntp__json_str(e->governor));
    ntp__jset(ok, o, "cpu_mhz",
              e->cpu_mhz > 0 ? ntp__json_num(e->cpu_mhz) : ntp__json_str(e->cpu_mhz_text));
    ntp__jset(ok, o, "boost", ntp__json_str(e->boost));
    ntp__jset(ok, o, "smt", ntp__json_str(e->smt));
    json_t *load = json_null();
    if (e->load_average[0] >= 0) {
        load = json_array();
        for (int i = 0; i < 3; i++)
            ntp__jpush(ok, load, ntp__json_num(e->load_average[i]));
    }
    ntp__jset(ok, o, "load_average", load);
    const ntp_contention *c = &e->contention;
    json_t *ct = json_object();
    ntp__jset(ok, ct, "measured", json_boolean(c->measured));
    if (c->measured) {
        ntp__jset(ok, ct, "window_s", ntp__json_num(c->window_s));
        ntp__jset(ok, ct, "cpus", json_integer(c->cpus));
        ntp__jset(ok, ct, "other", ntp__json_num(c->other));
        ntp__jset(ok, ct, "steal", ntp__json_num(c->steal));
        ntp__jset(ok, ct, "own", ntp__json_num(c->own));
        ntp__jset(ok, ct, "resolution", ntp__json_num(c->resolution));
        ntp__jset(ok, ct, "threshold", ntp__json_num(NTP_CONTENTION_THRESHOLD));
        ntp__jset(ok, ct, "distorted", json_boolean(c->distorted));
    } else {
        ntp__jset(ok, ct, "reason", ntp__json_str(c->reason[0] ? c->reason : "not measured"));
    }
    ntp__jset(ok, ct, "load_average_start",
              c->load_average >= 0 ? ntp__json_num(c->load_average) : json_null());
    /* A report read back from before the bandwidth probe has none. */
    if (c->bandwidth.measured || c->bandwidth.reason[0])
        ntp__jset(ok, ct, "bandwidth", ntp__bandwidth_json(ok, &c->bandwidth));
    const ntp_handoff_check *h = &c->handoff;
    if (h->measured || h->reason[0]) {
        json_t *ho = json_object();
        ntp__jset(ok, ho, "measured", json_boolean(h->measured));
        if (h->measured) {
            ntp__jset(ok, ho, "bytes", json_integer(h->bytes));
            ntp__jset(ok, ho, "pairs", json_integer(h->pairs));
            ntp__jset(ok, ho, "cost_s", ntp__json_num(h->cost_s));
            ntp__jset(ok, ho, "before", handoff_probe_json(ok, &h->before));
            ntp__jset(ok, ho, "after", handoff_probe_json(ok, &h->after));
            ntp__jset(ok, ho, "samples", json_integer(h->samples));
            ntp__jset(ok, ho, "samples_apart", json_integer(h->samples_apart));
            ntp__jset(ok, ho, "window_ratio",
                      h->samples > 0 ? ntp__json_num(h->window_ratio) : json_null());
            ntp__jset(ok, ho, "sample_s", ntp__json_num(NTP_HANDOFF_SAMPLE_S));
            ntp__jset(ok, ho, "together_ms",
                      h->together_n > 0 ? ntp__json_num(h->together_ms) : json_null());
            ntp__jset(ok, ho, "together_n", json_integer(h->together_n));
            ntp__jset(ok, ho, "apart_ms",
                      h->apart_n > 0 ? ntp__json_num(h->apart_ms) : json_null());
            ntp__jset(ok, ho, "apart_n", json_integer(h->apart_n));
            ntp__jset(ok, ho, "together_ci95_ms",
                      h->together_n > 0 ? ci_pair(ok, h->together_lo, h->together_hi)
                                        : json_null());
            ntp__jset(ok, ho, "apart_ci95_ms",
                      h->apart_n > 0 ? ci_pair(ok, h->apart_lo, h->apart_hi) : json_null());
            ntp__jset(ok, ho, "apart_ratio", ntp__json_num(NTP_HANDOFF_APART_RATIO));
            ntp__jset(ok, ho, "apart", json_boolean(h->apart));
            ntp__jset(ok, ho, "unconfirmed", json_boolean(h->unconfirmed));
            ntp__jset(ok, ho, "slower_ratio", ntp__json_num(NTP_HANDOFF_SLOWER));
        } else {
            ntp__jset(ok, ho, "reason", ntp__json_str(h->reason));
        }
        ntp__jset(ok, ct, "handoff", ho);
    }
    if (c->pace.measured || c->pace.reason[0])
        ntp__jset(ok, ct, "pace", pace_json(ok, &c->pace));
    ntp__jset(ok, o, "contention", ct);
    return o;
}

static json_t *roofline_json(bool *ok, const ntp_roofline *rl)
{
    json_t *o = json_object();
    ntp__jset(ok, o, "machine", ntp__json_str(rl->machine));
    ntp__jset(ok, o, "measured_at", ntp__json_str(rl->measured_at));
    ntp__jset(ok, o, "peak_gflops", ntp__json_num(rl->peak_gflops));
    ntp__jset(ok, o, "peak_source", ntp__json_str(rl->peak_source));
    ntp__jset(ok, o, "bandwidth_gbps", ntp__json_num(rl->bandwidth_gbps));
    ntp__jset(ok, o, "ridge_intensity", ntp__json_num(rl->ridge_intensity));
    /* Ceilings a row ran above, or measured under load: the verdicts on
     * them are not to be trusted (the warnings say so too). */
    ntp__jset(ok, o, "unreliable", json_boolean(rl->unreliable));
    ntp__jset(ok, o, "stale_reason",
              rl->unreliable && rl->stale_reason[0] ? ntp__json_str(rl->stale_reason)
                                                    : json_null());
    json_t *levels = json_array();
    for (int i = 0; i < rl->n_levels && i < NTP_ROOFLINE_MAX_LEVELS; i++) {
        json_t *l = json_object();
        ntp__jset(ok, l, "name", ntp__json_str(rl->levels[i].name));
        ntp__jset(ok, l, "gbps", ntp__json_num(rl->levels[i].gbps));
        ntp__jpush(ok, levels, l);
    }
    ntp__jset(ok, o, "levels", levels);
    /* The GPU's roof, when rows ran on one. */
    if (rl->gpu_rows) {
        json_t *g = json_object();
        ntp__jset(ok, g, "available", json_boolean(rl->gpu_available));
        if (rl->gpu_available) {
            ntp__jset(ok, g, "name", ntp__json_str(rl->gpu_name));
            ntp__jset(ok, g, "math", ntp__json_str(rl->gpu_math));
            ntp__jset(ok, g, "peak_gflops", ntp__json_num(rl->gpu_peak_gflops));
            ntp__jset(ok, g, "bandwidth_gbps", ntp__json_num(rl->gpu_bandwidth_gbps));
            ntp__jset(ok, g, "ridge_intensity", ntp__json_num(rl->gpu_ridge_intensity));
            ntp__jset(ok, g, "h2d_gbps", ntp__json_num(rl->gpu_h2d_gbps));
            ntp__jset(ok, g, "d2h_gbps", ntp__json_num(rl->gpu_d2h_gbps));
        } else {
            ntp__jset(ok, g, "note", json_string(NTP_ROOF_NO_GPU));
        }
        ntp__jset(ok, o, "gpu", g);
    }
    return o;
}

/* A top-k agreement of -1 means "not a classifier output": null. */
static json_t *share_or_null(double v)
{
    return v >= 0 ? ntp__json_num(v) : json_null();
}

static json_t *accuracy_json(bool *ok, const ntp_run_result *r)
{
    json_t *o = json_object();
    ntp__jset(ok, o, "baseline", ntp__json_str(r->accuracy_baseline));
    json_t *outs = json_array();
    for (int i = 0; i < r->n_accuracy; i++) {
        const ntp_accuracy *a = &r->accuracy[i];
        json_t *e = json_object();
        ntp__jset(ok, e, "output", ntp__json_str(a->output));
        ntp__jset(ok, e, "max_abs_error", ntp__json_num(a->max_abs_error));
        ntp__jset(ok, e, "rel_l2", ntp__json_num(a->rel_l2));
        ntp__jset(ok, e, "top1", share_or_null(a->top1));
        ntp__jset(ok, e, "top5", share_or_null(a->top5));
        ntp__jpush(ok, outs, e);
    }
    ntp__jset(ok, o, "outputs", outs);
    return o;
}

static ntp_status write_json(ntp_ctx *ctx, const ntp_run_result *r, FILE *f)
{
    bool ok = true;
    json_t *root = json_object();
    ntp__jset(&ok, root, "schema_version", json_integer(NTP_REPORT_SCHEMA_VERSION));
    ntp__jset(&ok, root, "kind", json_string("run"));
    ntp__jset(&ok, root, "topology", ntp__json_str(r->topology));
    ntp__jset(&ok, root, "source", ntp__json_str(r->source));

    json_t *cfg = json_object();
    ntp__jset(&ok, cfg, "backend", ntp__json_str(r->backend));
    ntp__jset(&ok, cfg, "precision", json_string(ntp_dtype_name(r->precision)));
    ntp__jset(&ok, cfg, "batch", json_integer(r->batch));
    ntp__jset(&ok, cfg, "threads", json_integer(r->threads));
    ntp__jset(&ok, cfg, "seed", seed_json(r->seed));
    ntp__jset(&ok, cfg, "warmup", json_integer(r->warmup));
    ntp__jset(&ok, cfg, "iterations", json_integer(r->iterations));
    ntp__jset(&ok, cfg, "only_marker", ntp__json_str(r->only_marker));
    ntp__jset(&ok, cfg, "fuse", json_boolean(r->fused));
    /* docs/run.md#wait-policy */
    ntp__jset(&ok, cfg, "wait_policy", ntp__json_str(r->wait_policy));
    ntp__jset(&ok, cfg, "wait_settings", ntp__json_str(r->wait_settings));
    json_t *params = json_object();
    for (int i = 0; i < r->n_params; i++)
        ntp__jset(&ok, params, r->param_names[i], ntp__json_str(r->param_values[i]));
    ntp__jset(&ok, cfg, "params", params);
    ntp__jset(&ok, root, "config", cfg);
    ntp__jset(&ok, root, "environment", env_json(&ok, &r->env));

    json_t *layers = json_array();
    for (int i = 0; i < r->n_layers; i++)
        ntp__jpush(&ok, layers, layer_json(&ok, &r->layers[i], r->roofline.available));
    ntp__jset(&ok, root, "layers", layers);
    json_t *markers = json_array();
    for (int i = 0; i < r->n_markers; i++)
        ntp__jpush(&ok, markers, marker_json(&ok, &r->markers[i], r->roofline.available));
    ntp__jset(&ok, root, "markers", markers);

    json_t *e2e = json_object();
    stats_fields(&ok, e2e, &r->end_to_end_ms);
    ntp__jset(&ok, e2e, "throughput_per_s", ntp__json_num(r->throughput));
    ntp__jset(&ok, e2e, "latency_ms", ntp__json_num(r->latency_ms));
    ntp__jset(&ok, e2e, "gflops", ntp__json_num(rate_g(r->flops, r->end_to_end_ms.median)));
    ntp__jset(&ok, root, "end_to_end", e2e);
    json_t *sum = json_object();
    stats_fields(&ok, sum, &r->layer_sum_ms);
    ntp__jset(&ok, root, "layer_sum", sum);
    ntp__jset(&ok, root, "overhead_fraction", ntp__json_num(r->overhead_fraction));
    ntp__jset(&ok, root, "overhead_per_layer_us", ntp__json_num(r->overhead_per_layer_us));
    ntp__jset(&ok, root, "prepare_ms", ntp__json_num(r->prepare_ms));
    ntp__jset(&ok, root, "flops", json_integer(r->flops));

    json_t *mem = json_object();
    ntp__jset(&ok, mem, "weight_bytes", json_integer(r->memory.weight_bytes));
    if (r->memory.weight_copy_bytes > 0)
        ntp__jset(&ok, mem, "weight_f32_copy_bytes", json_integer(r->memory.weight_copy_bytes));
    ntp__jset(&ok, mem, "arena_bytes", json_integer(r->memory.arena_bytes));
    ntp__jset(&ok, mem, "workspace_bytes", json_integer(r->memory.workspace_bytes));
    ntp__jset(&ok, mem, "peak_rss_bytes", json_integer(r->memory.peak_rss_bytes));
    ntp__jset(&ok, mem, "minor_faults", json_integer(r->memory.minor_faults));
    ntp__jset(&ok, mem, "major_faults", json_integer(r->memory.major_faults));
    if (ntp_memory_has_device(&r->memory))
        ntp__jset(&ok, mem, "device", ntp__device_memory_json(&ok, &r->memory));
    ntp__jset(&ok, root, "memory", mem);
    ntp__jset(&ok, root, "placement", placement_json(&ok, r));

    json_t *warnings = json_array();
    for (int i = 0; i < r->n_warnings; i++)
        ntp__jpush(&ok, warnings, ntp__json_str(r->warnings[i]));
    ntp__jset(&ok, root, "warnings", warnings);
    if (r->roofline.available)
        ntp__jset(&ok, root, "roofline", roofline_json(&ok, &r->roofline));
    if (r->n_accuracy > 0)
        ntp__jset(&ok, root, "accuracy", accuracy_json(&ok, r));
    ntp__counters_json_run(&ok, root, r);
    if (r->prediction.available) {
        const ntp_run_prediction *p = &r->prediction;
        json_t *o = json_object();
        ntp__jset(&ok, o, "calibration", ntp__json_str(p->calibration));
        ntp__jset(&ok, o, "roofline_only", json_boolean(p->roofline_only));
        ntp__jset(&ok, o, "stale", json_boolean(p->stale));
        ntp__jset(&ok, o, "uncalibrated", ntp__json_str(p->uncalibrated));
        if (p->weights_note[0])
            ntp__jset(&ok, o, "weights_note", json_string(p->weights_note));
        ntp__jset(&ok, o, "predicted_ms", ntp__json_num(p->predicted_ms));
        ntp__jset(&ok, o, "measured_ms", ntp__json_num(p->measured_ms));
        ntp__jset(&ok, o, "error", ntp__json_num(p->error));
        ntp__jset(&ok, o, "layers_compared", json_integer(p->n_compared));
        ntp__jset(&ok, o, "layers_within_10", json_integer(p->within_10));
        ntp__jset(&ok, o, "layers_within_25", json_integer(p->within_25));
        ntp__jset(&ok, o, "major_layers", json_integer(p->n_major));
        ntp__jset(&ok, o, "major_layers_within_25", json_integer(p->major_within_25));
        ntp__jset(&ok, o, "unpredicted_ms", ntp__json_num(p->unpredicted_ms));
        ntp__jset(&ok, o, "covered_error", ntp__json_num(p->covered_error));
        if (!p->roofline_only) {
            ntp__jset(&ok, o, "threads_differ", json_boolean(p->threads_differ));
            ntp__jset(&ok, o, "calibration_threads", json_integer(p->calibration_threads));
            ntp__jset(&ok, o, "run_threads", json_integer(p->run_threads));
            ntp__jset(&ok, o, "calibration_bus_share",
                      p->calibration_bus_share >= 0 ? ntp__json_num(p->calibration_bus_share)
                                                    : json_null());
            ntp__jset(&ok, o, "calibration_bus_low", json_boolean(p->calibration_bus_low));
            ntp__jset(&ok, o, "calibration_pace_gflops",
                      p->calibration_pace_gflops > 0 ? ntp__json_num(p->calibration_pace_gflops)
                                                     : json_null());
            ntp__jset(&ok, o, "calibration_pace_backend",
                      p->calibration_pace_gflops > 0 && p->calibration_pace_backend[0]
                          ? ntp__json_str(p->calibration_pace_backend)
                          : json_null());
            ntp__jset(&ok, o, "below_calibration_pace",
                      json_boolean(ntp__prediction_below_pace(r)));
        }
        ntp__jset(&ok, root, "prediction", o);
    }
    if (r->torch_script) {
        const ntp_torch_script_result *s = r->torch_script;
        json_t *o = json_object();
        ntp__jset(&ok, o, "threads", json_integer(s->threads));
        ntp__jset(&ok, o, "warmup", json_integer(s->warmup));
        ntp__jset(&ok, o, "iterations", json_integer(s->iterations));
        ntp__jset(&ok, o, "build_ms", ntp__json_num(s->build_ms));
        json_t *e = json_object();
        stats_fields(&ok, e, &s->end_to_end_ms);
        ntp__jset(&ok, o, "end_to_end", e);
        ntp__jset(&ok, o, "latency_ms", ntp__json_num(s->latency_ms));
        ntp__jset(&ok, o, "max_abs_error", ntp__json_num(s->max_abs_error));
        ntp__jset(&ok, o, "rel_l2", ntp__json_num(s->rel_l2));
        ntp__jset(&ok, root, "torch_script", o);
    }
    if (r->sweep_id > 0) {
        json_t *o = json_object();
        ntp__jset(&ok, o, "id", json_integer(r->sweep_id));
        ntp__jset(&ok, o, "index", json_integer(r->sweep_index));
        ntp__jset(&ok, o, "created_at", ntp__json_str(r->sweep_created_at));
        if (r->sweep_job[0])
            ntp__jset(&ok, o, "job", ntp__json_str(r->sweep_job));
        ntp__jset(&ok, root, "sweep", o);
    }
    return ntp__json_finish(ctx, root, ok, f, "run");
}

/* --- CSV ------------------------------------------------------------------------------ */

static const char csv_header[] =
    "kind,name,type,backend,inlay,fused,fused_into,output_shape,first,last,n,median_ms,min_ms,"
    "mean_ms,p90_ms,p99_ms,max_ms,stddev_ms,ci95_lo_ms,ci95_hi_ms,cv,share,flops,bytes,gflops,"
    "gbps,intensity,prepare_ms,workspace_bytes,impl,attainable_gflops,roof_share,roof_ceiling,"
    "attainable_gbps,device_weight_bytes,device_activation_bytes,device_workspace_bytes,"
    "device_peak_bytes,fuse_note,fuse,warmup,max_abs_error,rel_l2\n";

static void csv_stats(FILE *f, const ntp_stats *s)
{
    ntp__csv_int(f, (int64_t)s->n);
    const double v[] = {s->median, s->min,    s->mean,    s->p90,     s->p99,
                        s->max,    s->stddev, s->ci95_lo, s->ci95_hi, s->cv};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        ntp__csv_sep(f);
        ntp__csv_num(f, v[i]);
    }
}

/* attainable_gflops and roof_share, empty where the row was not placed;
 * roof_ceiling, and attainable_gbps for a copy placed on the link. */
static void csv_roof(FILE *f, double attainable, double attainable_gbps, double share,
                     const char *ceiling)
{
    bool placed = attainable > 0 || attainable_gbps > 0;
    ntp__csv_sep(f);
    if (attainable > 0)
        ntp__csv_num(f, attainable);
    ntp__csv_sep(f);
    if (placed && share > 0)
        ntp__csv_num(f, share);
    ntp__csv_sep(f);
    ntp__csv_str(f, ceiling);
    ntp__csv_sep(f);
    if (attainable_gbps > 0)
        ntp__csv_num(f, attainable_gbps);
}

/* ntp_run_opts.torch_script's row: the module's pass, its build (compile,
 * freeze, optimise) as prepare_ms, its outputs' deviation from ref. */
static void csv_torch_script(const ntp_run_result *r, FILE *f)
{
    const ntp_torch_script_result *s = r->torch_script;
    fputs("torch_script,", f);
    ntp__csv_str(f, r->topology);
    fputs(",,torch,,,,,,,", f); /* type, inlay .. last */
    csv_stats(f, &s->end_to_end_ms);
    fputs(",1,", f);
    ntp__csv_int(f, r->flops);
    fputs(",,", f); /* bytes */
    ntp__csv_num(f, rate_g(r->flops, s->end_to_end_ms.median));
    fputs(",,,", f); /* gbps, intensity */
    ntp__csv_num(f, s->build_ms);
    fputs(",,,,,,,,,,,,,", f); /* workspace_bytes .. fuse */
    ntp__csv_int(f, s->warmup);
    ntp__csv_sep(f);
    ntp__csv_num(f, s->max_abs_error);
    ntp__csv_sep(f);
    ntp__csv_num(f, s->rel_l2);
    fputc('\n', f);
}

static void write_csv(const ntp_run_result *r, FILE *f)
{
    fputs(csv_header, f);
    for (int i = 0; i < r->n_layers; i++) {
        const ntp_layer_result *l = &r->layers[i];
        char shape[192];
        fputs("layer,", f);
        ntp__csv_str(f, l->name);
        ntp__csv_sep(f);
        ntp__csv_str(f, l->type);
        ntp__csv_sep(f);
        ntp__csv_str(f, l->backend);
        ntp__csv_sep(f);
        ntp__csv_bool(f, l->inlay);
        ntp__csv_sep(f);
        ntp__csv_bool(f, l->fused);
        ntp__csv_sep(f);
        ntp__csv_str(f, l->fused ? l->fused_into : NULL);
        ntp__csv_sep(f);
        ntp__csv_str(f, ntp__shape_x(&l->output_shape, shape, sizeof shape));
        fputs(",,,", f); /* first, last: marker rows only */
        csv_stats(f, &l->time_ms);
        ntp__csv_sep(f);
        ntp__csv_num(f, l->share);
        ntp__csv_sep(f);
        ntp__csv_int(f, l->flops);
        ntp__csv_sep(f);
        ntp__csv_int(f, l->bytes);
        ntp__csv_sep(f);
        ntp__csv_num(f, l->gflops);
        ntp__csv_sep(f);
        ntp__csv_num(f, l->gbps);
        ntp__csv_sep(f);
        ntp__csv_num(f, l->intensity);
        ntp__csv_sep(f);
        ntp__csv_num(f, l->prepare_ms);
        ntp__csv_sep(f);
        ntp__csv_int(f, l->workspace_bytes);
        ntp__csv_sep(f);
        ntp__csv_str(f, l->impl);
        csv_roof(f, l->attainable_gflops, l->attainable_gbps, l->roof_share, l->roof_ceiling);
        fputs(",,,,", f); /* device memory: the end-to-end row only */
        ntp__csv_sep(f);
        ntp__csv_str(f, l->fuse_note);
        fputs(",,,,\n", f); /* fuse, warmup, deviation: the end-to-end rows only */
    }
    for (int i = 0; i < r->n_markers; i++) {
        const ntp_marker_result *m = &r->markers[i];
        fputs("marker,", f);
        ntp__csv_str(f, m->name);
        fputs(",,,,,,,", f); /* type .. output_shape: layer rows only */
        ntp__csv_int(f, m->first);
        ntp__csv_sep(f);
        ntp__csv_int(f, m->last);
        ntp__csv_sep(f);
        csv_stats(f, &m->time_ms);
        ntp__csv_sep(f);
        ntp__csv_num(f, m->share);
        ntp__csv_sep(f);
        ntp__csv_int(f, m->flops);
        ntp__csv_sep(f);
        ntp__csv_int(f, m->bytes);
        ntp__csv_sep(f);
        ntp__csv_num(f, m->gflops);
        ntp__csv_sep(f);
        ntp__csv_num(f, rate_g(m->bytes, m->time_ms.median));
        ntp__csv_sep(f);
        ntp__csv_num(f, ratio(m->flops, m->bytes));
        fputs(",,,", f); /* prepare_ms, workspace_bytes, impl: layer rows only */
        csv_roof(f, m->attainable_gflops, 0, m->roof_share, m->roof_ceiling);
        fputs(",,,,,,,,,\n", f); /* device memory .. rel_l2: not for segments */
    }
    fputs("end_to_end,", f);
    ntp__csv_str(f, r->topology);
    ntp__csv_sep(f);
    ntp__csv_sep(f);
    ntp__csv_str(f, r->backend);
    fputs(",,,,,,,", f); /* inlay .. last */
    csv_stats(f, &r->end_to_end_ms);
    ntp__csv_sep(f);
    ntp__csv_num(f, 1.0);
    ntp__csv_sep(f);
    ntp__csv_int(f, r->flops);
    ntp__csv_sep(f); /* bytes: not summed for a whole pass */
    ntp__csv_sep(f);
    ntp__csv_num(f, rate_g(r->flops, r->end_to_end_ms.median));
    fputs(",,,", f); /* gbps, intensity */
    ntp__csv_num(f, r->prepare_ms);
    ntp__csv_sep(f);
    ntp__csv_int(f, r->memory.workspace_bytes);
    fputs(",,,,,", f); /* impl, attainable_gflops, roof_share, roof_ceiling, attainable_gbps */
    /* Device memory: empty, not zero, when no accelerator ran. */
    const ntp_memory_result *m = &r->memory;
    if (ntp_memory_has_device(m)) {
        const int64_t v[] = {m->device_weight_bytes, m->device_activation_bytes,
                             m->device_workspace_bytes, m->device_peak_bytes};
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
            ntp__csv_sep(f);
            ntp__csv_int(f, v[i]);
        }
    } else {
        fputs(",,,,", f);
    }
    fputs(",,", f); /* fuse_note: layer rows only */
    ntp__csv_bool(f, r->fused);
    ntp__csv_sep(f);
    ntp__csv_int(f, r->warmup);
    fputs(",,\n", f); /* max_abs_error, rel_l2: the torch_script row */
    if (r->torch_script)
        csv_torch_script(r, f);
}

ntp_status ntp_report_write_run(ntp_ctx *ctx, const ntp_run_result *r, ntp_format fmt, FILE *f)
{
    if (!r || !f || (r->n_layers > 0 && !r->layers) || (r->n_markers > 0 && !r->markers) ||
        (r->n_warnings > 0 && !r->warnings) || (r->n_accuracy > 0 && !r->accuracy) ||
        (r->n_params > 0 && (!r->param_names || !r->param_values)))
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_run: missing result or stream");
    switch (fmt) {
    case NTP_FORMAT_TABLE: write_table(r, f); return ntp__check_stream(ctx, f, "run");
    case NTP_FORMAT_JSON: return write_json(ctx, r, f);
    case NTP_FORMAT_CSV: write_csv(r, f); return ntp__check_stream(ctx, f, "run");
    }
    return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "unknown report format %d", (int)fmt);
}

ntp_status ntp_report_write_run_sweep_task(ntp_ctx *ctx, const ntp_run_result *r,
                                           const ntp_sweep_record *rec, const ntp_sweep_task *t,
                                           FILE *f)
{
    if (!r || !rec || !t)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_run_sweep_task: missing result, sweep or task");
    ntp_run_result with = *r; /* a shallow copy, only written */
    with.sweep_id = rec->id;
    with.sweep_index = t->index;
    snprintf(with.sweep_created_at, sizeof with.sweep_created_at, "%s", rec->created_at);
    snprintf(with.sweep_job, sizeof with.sweep_job, "%s", t->job);
    return ntp_report_write_run(ctx, &with, NTP_FORMAT_JSON, f);
}
