/* The HTML report of one run: the headline figures, per-layer time bars,
 * the % breakdown by layer type and by marker segment, the roofline, the
 * marker segments, every layer's figures, counters and warnings
 * (docs/html.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare-impl.h"
#include "core/ctx-impl.h"
#include "html-impl.h"

/* Bar charts with more rows than this show the largest ones (in execution
 * order) and say how much time the rest took. */
#define MAX_BARS 80
/* The % breakdown keeps this many types; the rest is "other". */
#define MAX_SEGMENTS 11

static bool timed(const ntp_layer_result *l)
{
    return !l->fused && l->time_ms.n > 0 && isfinite(l->time_ms.median);
}

static int by_time_desc(const void *a, const void *b, void *arg)
{
    const ntp_run_result *r = arg;
    double x = r->layers[*(const int *)a].time_ms.median,
           y = r->layers[*(const int *)b].time_ms.median;
    return (x < y) - (x > y);
}

/* qsort_r is a GNU extension; a static pointer would not be thread-safe,
 * so the few rows are sorted by insertion with the comparison above. */
static void sort_rows(int *idx, int n, const ntp_run_result *r)
{
    for (int i = 1; i < n; i++) {
        int v = idx[i], j = i - 1;
        while (j >= 0 && by_time_desc(&idx[j], &v, (void *)r) > 0) {
            idx[j + 1] = idx[j];
            j--;
        }
        idx[j + 1] = v;
    }
}

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void layer_bars(FILE *f, const ntp_run_result *r)
{
    int *idx = malloc(((size_t)r->n_layers + 1) * sizeof *idx);
    ntp_hbar *bars = calloc((size_t)MAX_BARS + 1, sizeof *bars);
    char(*tips)[256] = calloc((size_t)MAX_BARS + 1, sizeof *tips);
    if (!idx || !bars || !tips) {
        fputs("<p class=\"warn\">out of memory drawing the layer chart</p>\n", f);
        goto out;
    }
    int n = 0, fused = 0;
    for (int i = 0; i < r->n_layers; i++) {
        if (timed(&r->layers[i]))
            idx[n++] = i;
        else
            fused += r->layers[i].fused;
    }
    double rest_ms = 0;
    int rest = 0;
    if (n > MAX_BARS) {
        sort_rows(idx, n, r);
        for (int i = MAX_BARS; i < n; i++)
            rest_ms += r->layers[idx[i]].time_ms.median;
        rest = n - MAX_BARS;
        n = MAX_BARS;
        qsort(idx, (size_t)n, sizeof *idx, int_cmp);
    }
    for (int k = 0; k < n; k++) {
        const ntp_layer_result *l = &r->layers[idx[k]];
        snprintf(tips[k], sizeof tips[k], "%s (%s): median %.4g ms, 95%% CI [%.4g, %.4g], %.1f%%",
                 l->name ? l->name : "", l->type ? l->type : "", l->time_ms.median,
                 l->time_ms.ci95_lo, l->time_ms.ci95_hi, 100 * l->share);
        bars[k] = (ntp_hbar){.label = l->name,
                             .value = l->time_ms.median,
                             .lo = l->time_ms.ci95_lo,
                             .hi = l->time_ms.ci95_hi,
                             .value2 = NAN,
                             .lo2 = NAN,
                             .hi2 = NAN,
                             .tooltip = tips[k]};
    }
    fputs("<h2>Where the time goes</h2>\n<p class=\"note\">Median time per layer in execution "
          "order, with the 95% interval of the median as a whisker.",
          f);
    if (rest)
        fprintf(f, " The %d shortest layers (%.4g ms together) are not drawn.", rest, rest_ms);
    if (fused)
        fprintf(f, " %d fused layer%s ran inside %s head.", fused, fused == 1 ? "" : "s",
                fused == 1 ? "its" : "their");
    fputs("</p>\n", f);
    ntp__svg_hbars(f, "layer-times", "ms", bars, n, NULL, NULL);
out:
    free(idx);
    free(bars);
    free(tips);
}

/* Shares summed per layer type, the largest first, the tail as "other". */
static void breakdown(FILE *f, const ntp_run_result *r)
{
    const char *types[256];
    double share[256];
    int nt = 0;
    for (int i = 0; i < r->n_layers; i++) {
        const ntp_layer_result *l = &r->layers[i];
        if (!timed(l) || !isfinite(l->share))
            continue;
        const char *t = l->type ? l->type : "?";
        int k = 0;
        while (k < nt && strcmp(types[k], t) != 0)
            k++;
        if (k == nt) {
            if (nt == 255)
                k = 254; /* everything past the table is lumped together */
            else
                types[nt] = t, share[nt++] = 0;
        }
        share[k] += l->share;
    }
    for (int i = 1; i < nt; i++)
        for (int j = i; j > 0 && share[j] > share[j - 1]; j--) {
            double s = share[j];
            const char *t = types[j];
            share[j] = share[j - 1], types[j] = types[j - 1];
            share[j - 1] = s, types[j - 1] = t;
        }
    if (nt > MAX_SEGMENTS) {
        for (int i = MAX_SEGMENTS; i < nt; i++)
            share[MAX_SEGMENTS - 1] += share[i];
        types[MAX_SEGMENTS - 1] = "other";
        nt = MAX_SEGMENTS;
    }
    fputs("<h2>Breakdown</h2>\n<p class=\"note\">Share of the summed median layer time by layer "
          "type",
          f);
    fputs(r->n_markers > 0 ? ", and by marker segment.</p>\n" : ".</p>\n", f);
    const char *col[] = {"by type"};
    ntp__svg_stacked(f, "breakdown-types", col, 1, types, nt, share);
    if (r->n_markers > 0) {
        const char *names[64];
        double ms[64];
        int nm = r->n_markers < 64 ? r->n_markers : 64;
        for (int i = 0; i < nm; i++) {
            names[i] = r->markers[i].name;
            ms[i] = r->markers[i].share;
        }
        const char *mcol[] = {"by marker segment"};
        ntp__svg_stacked(f, "breakdown-markers", mcol, 1, names, nm, ms);
    }
}

static void roofline(FILE *f, const ntp_run_result *r)
{
    ntp_rpoint *pts = calloc((size_t)r->n_layers + (size_t)r->n_markers + 1, sizeof *pts);
    if (!pts)
        return;
    int n = 0;
    for (int i = 0; i < r->n_layers; i++) {
        const ntp_layer_result *l = &r->layers[i];
        if (timed(l) && l->flops > 0 && l->bytes > 0)
            pts[n++] = (ntp_rpoint){l->name, l->intensity, l->gflops, l->attainable_gflops, false};
    }
    for (int i = 0; i < r->n_markers; i++) {
        const ntp_marker_result *m = &r->markers[i];
        if (m->flops > 0 && m->bytes > 0)
            pts[n++] = (ntp_rpoint){m->name, (double)m->flops / (double)m->bytes, m->gflops,
                                    m->attainable_gflops, true};
    }
    fputs("<h2>Roofline</h2>\n<p class=\"note\">", f);
    if (r->roofline.available) {
        ntp__html_textf(f,
                        "Layers (circles) and marker segments (diamonds) by arithmetic "
                        "intensity and achieved rate, under this machine's ceilings: peak %.4g "
                        "GFLOP/s (%s) and DRAM bandwidth %.4g GB/s, measured %s; dashed lines are "
                        "cache bandwidths.",
                        r->roofline.peak_gflops, r->roofline.peak_source,
                        r->roofline.bandwidth_gbps, r->roofline.measured_at);
    } else {
        fputs("Layers (circles) and marker segments (diamonds) by arithmetic intensity and "
              "achieved rate. Ceilings: n/a (run <code>ntprof machine</code> once to measure "
              "this machine's).",
              f);
    }
    const ntp_roofline *rl = &r->roofline;
    if (rl->available && rl->gpu_rows && rl->gpu_available)
        ntp__html_textf(f,
                        " Rows on the GPU are placed on %s's roof instead: %s GEMM %.4g "
                        "GFLOP/s and device DRAM %.4g GB/s; host-device copies on the link "
                        "(%.4g GB/s host to device, %.4g GB/s back). The ceiling column says "
                        "which roof each row was placed on; the chart draws the CPU's.",
                        rl->gpu_name, rl->gpu_math, rl->gpu_peak_gflops, rl->gpu_bandwidth_gbps,
                        rl->gpu_h2d_gbps, rl->gpu_d2h_gbps);
    else if (rl->available && rl->gpu_rows)
        ntp__html_textf(f, " Rows on the GPU: %s.", NTP_ROOF_NO_GPU);
    fputs("</p>\n", f);
    ntp__svg_roofline(f, "roofline", &r->roofline, pts, n);
    free(pts);
}

/* The ceiling a row was placed on ("gpu f16"), "-" where none. */
static void ceiling_cell(FILE *f, const char *ceiling)
{
    fputs("<td class=\"l\">", f);
    ntp__html_text(f, ceiling ? ceiling : "-");
    fputs("</td>", f);
}

static void markers(FILE *f, const ntp_run_result *r)
{
    if (r->n_markers == 0)
        return;
    ntp_hbar bars[64];
    char tips[64][256];
    int n = r->n_markers < 64 ? r->n_markers : 64;
    for (int i = 0; i < n; i++) {
        const ntp_marker_result *m = &r->markers[i];
        snprintf(tips[i], sizeof tips[i], "%s: layers %d..%d, median %.4g ms, %.1f%%",
                 m->name ? m->name : "", m->first, m->last, m->time_ms.median, 100 * m->share);
        bars[i] = (ntp_hbar){.label = m->name,
                             .value = m->time_ms.median,
                             .lo = m->time_ms.ci95_lo,
                             .hi = m->time_ms.ci95_hi,
                             .value2 = NAN,
                             .lo2 = NAN,
                             .hi2 = NAN,
                             .tooltip = tips[i]};
    }
    fputs("<h2>Marker segments</h2>\n", f);
    ntp__svg_hbars(f, "marker-times", "ms", bars, n, NULL, NULL);
    fputs("<table><tr><th class=\"l\">segment</th><th>layers</th><th>median ms</th><th>95% CI</th>"
          "<th>%</th><th>GFLOP/s</th><th>FLOP/B</th><th>attainable GFLOP/s</th><th>% of roof</th>"
          "<th class=\"l\">ceiling</th></tr>\n",
          f);
    for (int i = 0; i < r->n_markers; i++) {
        const ntp_marker_result *m = &r->markers[i];
        fputs("<tr><td class=\"l\">", f);
        ntp__html_text(f, m->name);
        fprintf(f, "</td><td>%d..%d</td>", m->first, m->last);
        ntp__html_num_cell(f, m->time_ms.median, false);
        fprintf(f, "<td>[%.4g, %.4g]</td>", m->time_ms.ci95_lo, m->time_ms.ci95_hi);
        ntp__html_num_cell(f, 100 * m->share, false);
        ntp__html_num_cell(f, m->gflops, false);
        ntp__html_num_cell(f, m->bytes > 0 ? (double)m->flops / (double)m->bytes : NAN, false);
        ntp__html_num_cell(f, m->attainable_gflops, m->attainable_gflops <= 0);
        ntp__html_num_cell(f, 100 * m->roof_share, m->attainable_gflops <= 0);
        ceiling_cell(f, m->roof_ceiling);
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void layer_table(FILE *f, const ntp_run_result *r)
{
    fputs("<h2>Layers</h2>\n<div class=\"scroll\"><table><tr><th class=\"l\">layer</th>"
          "<th class=\"l\">type</th><th class=\"l\">backend</th><th class=\"l\">implementation"
          "</th><th>median ms</th><th>95% CI</th>"
          "<th>cv %</th><th>%</th><th>GFLOP/s</th><th>GB/s</th><th>FLOP/B</th>"
          "<th>attainable GFLOP/s</th><th>% of roof</th><th class=\"l\">ceiling</th>",
          f);
    /* On a calibrated machine: the prediction and its error, last. */
    bool pred = r->prediction.available;
    fputs(pred ? "<th>predicted ms</th><th>prediction error</th></tr>\n" : "</tr>\n", f);
    for (int i = 0; i < r->n_layers; i++) {
        const ntp_layer_result *l = &r->layers[i];
        fputs("<tr><td class=\"l\">", f);
        ntp__html_text(f, l->name);
        fputs("</td><td class=\"l\">", f);
        ntp__html_text(f, l->type);
        fputs("</td><td class=\"l\">", f);
        ntp__html_text(f, l->backend);
        /* A fused row ran inside its group, in the group's implementation. */
        fputs("</td><td class=\"l\">", f);
        ntp__html_text(f, l->fused ? "-" : l->impl ? l->impl : "-");
        if (l->fuse_note) {
            fputs("<br><span class=\"note\">", f);
            ntp__html_text(f, l->fuse_note);
            fputs("</span>", f);
        }
        fputs("</td>", f);
        if (l->fused) {
            fputs("<td colspan=\"5\">fused into ", f);
            ntp__html_text(f, l->fused_into);
            fputs("</td>", f);
        } else {
            ntp__html_num_cell(f, l->time_ms.median, false);
            fprintf(f, "<td>[%.4g, %.4g]</td>", l->time_ms.ci95_lo, l->time_ms.ci95_hi);
            ntp__html_num_cell(f, 100 * l->time_ms.cv, false);
            ntp__html_num_cell(f, 100 * l->share, false);
            ntp__html_num_cell(f, l->gflops, false);
        }
        ntp__html_num_cell(f, l->gbps, l->fused);
        ntp__html_num_cell(f, l->intensity, false);
        /* A copy row's roof is the link: a share of its GB/s, no GFLOP/s. */
        bool placed = l->attainable_gflops > 0 || l->attainable_gbps > 0;
        ntp__html_num_cell(f, l->attainable_gflops, l->attainable_gflops <= 0);
        ntp__html_num_cell(f, 100 * l->roof_share, !placed || !(l->roof_share > 0));
        ceiling_cell(f, l->roof_ceiling);
        if (pred && !l->predicted && l->prediction_note[0]) {
            fputs("<td>n/a</td><td>", f);
            ntp__html_text(f, l->prediction_note);
            fputs("</td>", f);
        } else if (pred) {
            ntp__html_pred_cells(f, l->predicted_ms, l->time_ms.median, l->predicted);
        }
        fputs("</tr>\n", f);
    }
    fputs("</table></div>\n", f);
}

/* A counter as the report has it: an object {"value", "unit", "reason",
 * ...} (docs/report-format.md), a bare number, or text. A null value is
 * n/a, with the reason as the cell's tooltip. */
static void counter_cell(FILE *f, json_t *v)
{
    const char *unit = "";
    if (json_is_object(v)) {
        json_t *avail = json_object_get(v, "available"), *value = json_object_get(v, "value");
        if ((avail && json_is_false(avail)) || (value && json_is_null(value))) {
            json_t *why = json_object_get(v, "reason");
            fputs("<td title=\"", f);
            ntp__html_text(f, json_is_string(why) ? json_string_value(why) : "not available");
            fputs("\">n/a</td>", f);
            return;
        }
        json_t *u = json_object_get(v, "unit");
        unit = json_is_string(u) ? json_string_value(u) : "";
        v = value;
    }
    if (json_is_number(v)) {
        fprintf(f, "<td>%.4g", json_number_value(v));
        if (*unit) {
            fputc(' ', f);
            ntp__html_text(f, unit);
        }
        fputs("</td>", f);
    } else if (json_is_string(v)) {
        fputs("<td>", f);
        ntp__html_text(f, json_string_value(v));
        fputs("</td>", f);
    } else {
        fputs("<td>-</td>", f);
    }
}

/* The names under `field` ("counters" or "metrics") of any row, in the
 * order first seen. */
static int collect_keys(json_t *rows, const char *field, const char **keys, int max)
{
    int nk = 0;
    size_t i;
    json_t *l;
    json_array_foreach(rows, i, l)
    {
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(l, field), k, v)
        {
            int j = 0;
            while (j < nk && strcmp(keys[j], k) != 0)
                j++;
            if (j == nk && nk < max)
                keys[nk++] = k;
        }
    }
    return nk;
}

/* Counters are whatever the run's JSON report holds under each layer's and
 * segment's "counters" and "metrics" (docs/counters.md): the table takes
 * its columns from the names it finds, so an event this writer has never
 * heard of still shows, with the bottleneck verdict where there is one. */
static void counters(FILE *f, json_t *report)
{
    json_t *groups[2] = {json_object_get(report, "layers"), json_object_get(report, "markers")};
    const char *ck[48], *mk[48];
    int nc = 0, nm = 0;
    for (int g = 0; g < 2; g++) {
        /* Keys of layers first, then any the segments add. */
        const char *tmp[48];
        int n = collect_keys(groups[g], "counters", tmp, 48);
        for (int i = 0; i < n; i++) {
            int j = 0;
            while (j < nc && strcmp(ck[j], tmp[i]) != 0)
                j++;
            if (j == nc && nc < 48)
                ck[nc++] = tmp[i];
        }
        n = collect_keys(groups[g], "metrics", tmp, 48);
        for (int i = 0; i < n; i++) {
            int j = 0;
            while (j < nm && strcmp(mk[j], tmp[i]) != 0)
                j++;
            if (j == nm && nm < 48)
                mk[nm++] = tmp[i];
        }
    }
    if (nc + nm == 0)
        return;
    fputs("<h2>Counters</h2>\n<p class=\"note\">Per iteration of the counting pass; n/a "
          "cells say why in their tooltip.",
          f);
    json_t *counting = json_object_get(report, "counting");
    json_t *notes = json_object_get(counting, "notes");
    size_t i;
    json_t *v;
    json_array_foreach(notes, i, v)
    {
        if (json_is_string(v)) {
            fputs(" ", f);
            ntp__html_text(f, json_string_value(v));
            fputs(".", f);
        }
    }
    fputs("</p>\n<div class=\"scroll\"><table><tr><th class=\"l\">row</th>", f);
    for (int k = 0; k < nc; k++) {
        fputs("<th>", f);
        ntp__html_text(f, ck[k]);
        fputs("</th>", f);
    }
    for (int k = 0; k < nm; k++) {
        fputs("<th>", f);
        ntp__html_text(f, mk[k]);
        fputs("</th>", f);
    }
    fputs("<th class=\"l\">bound</th></tr>\n", f);
    for (int g = 0; g < 2; g++) {
        json_t *l;
        json_array_foreach(groups[g], i, l)
        {
            json_t *c = json_object_get(l, "counters"), *m = json_object_get(l, "metrics");
            if (json_object_size(c) + json_object_size(m) == 0)
                continue;
            fputs("<tr><td class=\"l\">", f);
            json_t *name = json_object_get(l, "name");
            if (g == 1)
                fputs("segment ", f);
            ntp__html_text(f, json_is_string(name) ? json_string_value(name) : "?");
            fputs("</td>", f);
            for (int k = 0; k < nc; k++)
                counter_cell(f, json_object_get(c, ck[k]));
            for (int k = 0; k < nm; k++)
                counter_cell(f, json_object_get(m, mk[k]));
            json_t *bound = json_object_get(l, "bound"), *ev = json_object_get(l, "bound_evidence");
            fputs("<td class=\"l\" title=\"", f);
            ntp__html_text(f, json_is_string(ev) ? json_string_value(ev) : "");
            fputs("\">", f);
            ntp__html_text(f, json_is_string(bound) ? json_string_value(bound) : "-");
            fputs("</td></tr>\n", f);
        }
    }
    fputs("</table></div>\n", f);
}

static void header(FILE *f, const ntp_run_result *r)
{
    fputs("<h1>", f);
    ntp__html_textf(f, "%s on %s", r->topology ? r->topology : "?", r->backend ? r->backend : "?");
    fputs("</h1>\n<p class=\"meta\">", f);
    ntp__html_textf(f,
                    "%s · precision %s · batch %lld · threads %d · seed %llu · %d warm-up + %d "
                    "measured iterations%s%s · %s",
                    r->source ? r->source : "?", ntp_dtype_name(r->precision), (long long)r->batch,
                    r->threads, (unsigned long long)r->seed, r->warmup, r->iterations,
                    r->only_marker ? " · only " : "", r->only_marker ? r->only_marker : "",
                    r->fused ? "fusion on (--fuse)" : "fusion off");
    fputs("</p>\n<p class=\"meta\">", f);
    ntp__html_textf(f, "%s (%s) · %d CPUs · %s · %s · ntprof %s (%s) · %s", r->env.cpu_model,
                    r->env.cpu_signature[0] ? r->env.cpu_signature : "not recorded", r->env.cores,
                    r->env.hostname, r->env.os, r->env.ntprof_version, r->env.git_revision,
                    r->env.timestamp);
    fputs("</p>\n<div class=\"cards\">", f);
    fprintf(f,
            "<div class=\"card\"><b>%.4g ms</b><span>latency (median end to end), 95%% CI "
            "[%.4g, %.4g]</span></div>",
            r->latency_ms, r->end_to_end_ms.ci95_lo, r->end_to_end_ms.ci95_hi);
    fprintf(f, "<div class=\"card\"><b>%.4g /s</b><span>throughput (samples)</span></div>",
            r->throughput);
    double ms = r->end_to_end_ms.median;
    fprintf(f, "<div class=\"card\"><b>%.4g</b><span>GFLOP/s end to end</span></div>",
            ms > 0 ? (double)r->flops / (ms * 1e-3) / 1e9 : 0.0);
    fprintf(f, "<div class=\"card\"><b>%.1f%%</b><span>per-layer timing overhead</span></div>",
            100 * r->overhead_fraction);
    fprintf(f, "<div class=\"card\"><b>%.4g ms</b><span>prepare (all layers)</span></div>",
            r->prepare_ms);
    /* Device memory only when an accelerator ran: a zero would claim one did. */
    const ntp_memory_result *mem = &r->memory;
    if (ntp_memory_has_device(mem)) {
        char a[32], b[32], c[32], d[32];
        fputs("<div class=\"card\"><b>", f);
        ntp__html_text(f, ntp__human_bytes((double)mem->device_peak_bytes, a, sizeof a));
        fputs("</b><span>", f);
        ntp__html_textf(f, "device memory peak: weights %s, activations %s, workspace %s",
                        ntp__human_bytes((double)mem->device_weight_bytes, b, sizeof b),
                        ntp__human_bytes((double)mem->device_activation_bytes, c, sizeof c),
                        ntp__human_bytes((double)mem->device_workspace_bytes, d, sizeof d));
        fputs("</span></div>", f);
    }
    fputs("</div>\n", f);
    /* The table's reproducibility lines: libraries, the CPU's policy and
     * load, contention, memory bus, hand-off. */
    ntp__env_line env[NTP_ENV_LINES];
    int n_env = ntp__run_env_lines(r, env);
    for (int i = 0; i < n_env; i++) {
        fputs("<p class=\"meta\"><b>", f);
        ntp__html_text(f, env[i].label);
        fputs("</b>: ", f);
        ntp__html_text(f, env[i].text);
        fputs("</p>\n", f);
    }
    for (int i = 0; i < r->n_warnings; i++) {
        fputs("<p class=\"warn\">warning: ", f);
        ntp__html_text(f, r->warnings[i]);
        fputs("</p>\n", f);
    }
}

/* The run's JSON report, parsed: the counters section reads what it holds. */
static json_t *as_json(ntp_ctx *ctx, const ntp_run_result *r)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m)
        return NULL;
    ntp_status st = ntp_report_write_run(ctx, r, NTP_FORMAT_JSON, m);
    fclose(m);
    json_t *j = st == NTP_STATUS_OK ? json_loadb(text, len, 0, NULL) : NULL;
    free(text);
    return j;
}

ntp_status ntp_report_write_run_html(ntp_ctx *ctx, const ntp_run_result *r, FILE *f)
{
    if (!r || !f || (r->n_layers > 0 && !r->layers) || (r->n_markers > 0 && !r->markers))
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_run_html: no result or stream");
    json_t *report = as_json(ctx, r);
    if (!report)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "html: cannot build the run's JSON");
    char title[256];
    snprintf(title, sizeof title, "ntprof: %s on %s", r->topology ? r->topology : "?",
             r->backend ? r->backend : "?");
    ntp__html_begin(f, title);
    header(f, r);
    layer_bars(f, r);
    breakdown(f, r);
    roofline(f, r);
    markers(f, r);
    ntp__html_prediction_run(f, r);
    layer_table(f, r);
    counters(f, report);
    ntp__html_end(f);
    json_decref(report);
    return ntp__check_stream(ctx, f, "html");
}
