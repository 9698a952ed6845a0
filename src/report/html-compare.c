/* The HTML report of a comparison: the runs, then for each run against the
 * first: what differs, the end-to-end verdict, per-layer times side by
 * side, each layer's % contribution side by side (NTP's figure 9), and the
 * aligned rows with their speedups, largest regressions first
 * (docs/html.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare-impl.h"
#include "core/ctx-impl.h"
#include "html-impl.h"

#define MAX_BARS 60

/* Runs are lettered A, B, ... in headings and columns; the runs table at
 * the top says which file or history entry each letter is. */
static const char *letter(int i, char *buf, size_t len)
{
    if (i < 26)
        snprintf(buf, len, "%c", 'A' + i);
    else
        snprintf(buf, len, "#%d", i + 1);
    return buf;
}
/* Layers drawn as their own segment in the contribution columns. */
#define MAX_SEGMENTS 11

/* Position of a row in execution order: the base run's, or for an added
 * layer, just after the base row before it. */
static double order_key(const ntp_compare_row *r)
{
    return r->base_index >= 0 ? r->base_index : r->other_index + 0.5;
}

static int by_order(const void *a, const void *b)
{
    double x = order_key(*(const ntp_compare_row *const *)a);
    double y = order_key(*(const ntp_compare_row *const *)b);
    return (x > y) - (x < y);
}

static double larger_ms(const ntp_compare_row *r)
{
    double a = r->base.n > 0 ? r->base.median : 0, b = r->other.n > 0 ? r->other.median : 0;
    return a > b ? a : b;
}

static int by_larger_desc(const void *a, const void *b)
{
    double x = larger_ms(*(const ntp_compare_row *const *)a);
    double y = larger_ms(*(const ntp_compare_row *const *)b);
    return (x < y) - (x > y);
}

static const char *side_label(const ntp_compare_row *r, char *buf, size_t len)
{
    if (r->align == NTP_ALIGN_RENAMED) {
        snprintf(buf, len, "%s -> %s", r->name ? r->name : "", r->other_name ? r->other_name : "");
    } else if (r->align == NTP_ALIGN_FUSED) {
        /* A fused group by its layers. */
        size_t used = 0;
        buf[0] = '\0';
        for (int i = 0; i < r->n_members && used < len; i++)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? " + " : "",
                                     r->members[i] ? r->members[i] : "");
    } else {
        snprintf(buf, len, "%s", r->name ? r->name : "");
    }
    return buf;
}

/* What changed besides the time: "implementation brg:avx512_core -> gemm:jit". */
static void changes_cell(FILE *f, const ntp_compare_row *r)
{
    fputs("<td class=\"l\">", f);
    const char *sep = "";
    if (r->changes & NTP_CHANGE_TYPE) {
        ntp__html_textf(f, "type %s -> %s", r->type ? r->type : "?",
                        r->other_type ? r->other_type : "?");
        sep = "; ";
    }
    if (r->changes & NTP_CHANGE_BACKEND) {
        ntp__html_textf(f, "%sbackend %s -> %s", sep, r->base_backend ? r->base_backend : "?",
                        r->other_backend ? r->other_backend : "?");
        sep = "; ";
    }
    if (r->changes & NTP_CHANGE_IMPL)
        ntp__html_textf(f, "%simplementation %s -> %s", sep, r->base_impl ? r->base_impl : "?",
                        r->other_impl ? r->other_impl : "?");
    if (r->align == NTP_ALIGN_FUSED)
        ntp__html_textf(f, "%sfused group: the base run's time sums %d row%s, the other's %d",
                        r->changes ? "; " : "", r->base_rows, r->base_rows == 1 ? "" : "s",
                        r->other_rows);
    fputs("</td>", f);
}

static void pair_bars(FILE *f, const ntp_comparison *c, const ntp_compare_pair *p, int k)
{
    const ntp_compare_row **rows = malloc(((size_t)p->n_rows + 1) * sizeof *rows);
    ntp_hbar *bars = calloc((size_t)MAX_BARS + 1, sizeof *bars);
    char(*names)[256] = calloc((size_t)MAX_BARS + 1, sizeof *names);
    char(*tips)[512] = calloc((size_t)MAX_BARS + 1, sizeof *tips);
    if (!rows || !bars || !names || !tips)
        goto out;
    int n = 0;
    for (int i = 0; i < p->n_rows; i++)
        if (larger_ms(&p->rows[i]) > 0)
            rows[n++] = &p->rows[i];
    int hidden = 0;
    if (n > MAX_BARS) {
        qsort(rows, (size_t)n, sizeof *rows, by_larger_desc);
        hidden = n - MAX_BARS;
        n = MAX_BARS;
    }
    qsort(rows, (size_t)n, sizeof *rows, by_order);
    for (int i = 0; i < n; i++) {
        const ntp_compare_row *r = rows[i];
        bool a = r->base_index >= 0, b = r->other_index >= 0;
        side_label(r, names[i], sizeof names[i]);
        char la[16], lb[16];
        snprintf(tips[i], sizeof tips[i], "%s (%s): %s %.4g ms, %s %.4g ms, %s", names[i],
                 ntp_align_name(r->align), letter(p->base, la, sizeof la), a ? r->base.median : NAN,
                 letter(p->other, lb, sizeof lb), b ? r->other.median : NAN,
                 ntp_verdict_name(r->verdict));
        bars[i] = (ntp_hbar){.label = names[i],
                             .tooltip = tips[i],
                             .value = a ? r->base.median : NAN,
                             .lo = a ? r->base.ci95_lo : NAN,
                             .hi = a ? r->base.ci95_hi : NAN,
                             .value2 = b ? r->other.median : NAN,
                             .lo2 = b ? r->other.ci95_lo : NAN,
                             .hi2 = b ? r->other.ci95_hi : NAN};
    }
    fputs("<h3>Layer times side by side</h3>\n<p class=\"note\">Medians with their 95% intervals, "
          "in execution order.",
          f);
    if (hidden)
        fprintf(f, " The %d shortest layers are not drawn.", hidden);
    fputs("</p>\n", f);
    char id[32], la[16], lb[16];
    snprintf(id, sizeof id, "pair%d-times", k);
    ntp__svg_hbars(f, id, "ms", bars, n, letter(p->base, la, sizeof la),
                   letter(p->other, lb, sizeof lb));
out:
    free(rows);
    free(bars);
    free(names);
    free(tips);
}

/* Each run's largest layers as segments, the rest as "other": the same
 * layer has the same colour in both columns. */
static void pair_contribution(FILE *f, const ntp_comparison *c, const ntp_compare_pair *p, int k)
{
    const ntp_compare_row **rows = malloc(((size_t)p->n_rows + 1) * sizeof *rows);
    if (!rows)
        return;
    int n = 0;
    for (int i = 0; i < p->n_rows; i++)
        if (p->rows[i].base_share > 0 || p->rows[i].other_share > 0)
            rows[n++] = &p->rows[i];
    qsort(rows, (size_t)n, sizeof *rows, by_larger_desc);
    int nseg = n > MAX_SEGMENTS ? MAX_SEGMENTS : n;
    const char *segs[MAX_SEGMENTS + 1];
    char names[MAX_SEGMENTS + 1][256];
    double share[2 * (MAX_SEGMENTS + 1)];
    double used[2] = {0, 0};
    /* Execution order inside the column reads like the network. */
    qsort(rows, (size_t)nseg, sizeof *rows, by_order);
    for (int s = 0; s < nseg; s++) {
        segs[s] = side_label(rows[s], names[s], sizeof names[s]);
        share[s] = rows[s]->base_index >= 0 ? rows[s]->base_share : 0;
        share[(nseg + (n > nseg)) + s] = rows[s]->other_index >= 0 ? rows[s]->other_share : 0;
        used[0] += share[s];
        used[1] += share[(nseg + (n > nseg)) + s];
    }
    int ns = nseg;
    if (n > nseg) {
        segs[ns] = "other layers";
        share[ns] = used[0] < 1 ? 1 - used[0] : 0;
        share[2 * ns + 1] = used[1] < 1 ? 1 - used[1] : 0;
        ns++;
    }
    char la[16], lb[16];
    const char *cols[2] = {letter(p->base, la, sizeof la), letter(p->other, lb, sizeof lb)};
    fputs("<h3>% contribution per layer</h3>\n<p class=\"note\">Each layer's share of its run's "
          "summed layer time (NTP's figure 9).</p>\n",
          f);
    char id[32];
    snprintf(id, sizeof id, "pair%d-shares", k);
    ntp__svg_stacked(f, id, cols, 2, segs, ns, share);
    free(rows);
}

static void verdict_cell(FILE *f, ntp_verdict v)
{
    fprintf(f, "<td class=\"l%s\">%s</td>",
            v == NTP_VERDICT_SLOWER   ? " slower"
            : v == NTP_VERDICT_FASTER ? " faster"
                                      : "",
            ntp_verdict_name(v));
}

static void row_cells(FILE *f, const ntp_compare_row *r, bool both, bool layer)
{
    char name[2048];
    bool a = both || r->base_index >= 0, b = both || r->other_index >= 0;
    fputs("<tr><td class=\"l\">", f);
    ntp__html_text(f, side_label(r, name, sizeof name));
    fputs("</td><td class=\"l\">", f);
    ntp__html_text(f, ntp_align_name(r->align));
    fputs("</td>", f);
    ntp__html_num_cell(f, r->base.median, !a);
    ntp__html_num_cell(f, r->other.median, !b);
    ntp__html_num_cell(f, r->delta_ms, false);
    ntp__html_num_cell(f, r->speedup, r->speedup <= 0);
    if (r->speedup_lo > 0)
        fprintf(f, "<td>[%.3g, %.3g]</td>", r->speedup_lo, r->speedup_hi);
    else
        fputs("<td>-</td>", f);
    verdict_cell(f, r->verdict);
    ntp__html_num_cell(f, 100 * r->base_share, !a);
    ntp__html_num_cell(f, 100 * r->other_share, !b);
    if (layer)
        changes_cell(f, r);
    else
        fputs("<td></td>", f);
    fputs("</tr>\n", f);
}

static void pair_table(FILE *f, const ntp_compare_pair *p)
{
    char la[16], lb[16];
    letter(p->base, la, sizeof la);
    letter(p->other, lb, sizeof lb);
    fprintf(f,
            "<h3>Aligned layers, largest regression first</h3>\n<div class=\"scroll\"><table>"
            "<tr><th class=\"l\">layer</th><th class=\"l\">status</th><th>%s ms</th>"
            "<th>%s ms</th><th>delta ms</th><th>speedup</th><th>speedup 95%%</th>"
            "<th class=\"l\">verdict</th><th>%s %%</th><th>%s %%</th>"
            "<th class=\"l\">changed besides the time</th></tr>\n",
            la, lb, la, lb);
    for (int i = 0; i < p->n_rows; i++)
        row_cells(f, &p->rows[i], false, true);
    for (int i = 0; i < p->n_markers; i++)
        row_cells(f, &p->markers[i], false, false);
    fputs("</table></div>\n", f);
}

static void pair_section(FILE *f, const ntp_comparison *c, const ntp_compare_pair *p, int k)
{
    char la[16], lb[16];
    fprintf(f, "<h2>%s vs %s</h2>\n<p class=\"meta\">", letter(p->other, lb, sizeof lb),
            letter(p->base, la, sizeof la));
    ntp__html_textf(f, "%s = %s; %s = %s", lb, c->labels[p->other], la, c->labels[p->base]);
    fputs("</p>\n", f);
    const ntp_compare_row *e = &p->end_to_end;
    fputs("<div class=\"cards\"><div class=\"card\"><b", f);
    if (e->verdict == NTP_VERDICT_SLOWER || e->verdict == NTP_VERDICT_FASTER)
        fprintf(f, " class=\"%s\">%.3gx %s", e->verdict == NTP_VERDICT_SLOWER ? "slower" : "faster",
                e->speedup >= 1 ? e->speedup : 1 / e->speedup, ntp_verdict_name(e->verdict));
    else
        fprintf(f, ">%s", ntp_verdict_name(e->verdict));
    fputs("</b><span>", f);
    ntp__html_textf(f, "end to end: speedup %.3g, 95%% from the intervals %.3g..%.3g", e->speedup,
                    e->speedup_lo, e->speedup_hi);
    fputs("</span></div><div class=\"card\"><b>", f);
    ntp__html_textf(f, "%.4g → %.4g ms", e->base.median, e->other.median);
    fputs("</b><span>median latency</span></div><div class=\"card\"><b>", f);
    ntp__html_textf(f, "x%.3g", p->throughput_ratio);
    fputs("</b><span>throughput ratio</span></div></div>\n", f);
    if (p->n_diffs) {
        fputs("<p class=\"meta\">differences:</p><ul>", f);
        for (int i = 0; i < p->n_diffs; i++) {
            fputs("<li>", f);
            ntp__html_text(f, p->diffs[i]);
            fputs("</li>", f);
        }
        fputs("</ul>\n", f);
    } else {
        fputs("<p class=\"meta\">No differences in topology, configuration or hardware.</p>\n", f);
    }
    const ntp_run_result *ra = c->runs[p->base], *rb = c->runs[p->other];
    char note[640];
    if (ntp__compare_machine_note(la, ra, lb, rb, note, sizeof note)) {
        fputs("<p class=\"warn\">machine: ", f);
        ntp__html_text(f, note);
        fputs("</p>\n", f);
    }
    if (ra->fused != rb->fused) {
        fputs("<p class=\"warn\">", f);
        ntp__html_textf(f,
                        "The runs differ in --fuse (%s %s, %s %s). A fused layer has no time "
                        "of its own: each group of layers fused in either run is one row (status "
                        "fused), the group's time against the sum of its layers' times in the "
                        "other run; %d such group%s.",
                        la, ra->fused ? "with" : "without", lb, rb->fused ? "with" : "without",
                        p->n_fused_groups, p->n_fused_groups == 1 ? "" : "s");
        fputs("</p>\n", f);
    }
    pair_bars(f, c, p, k);
    pair_contribution(f, c, p, k);
    ntp__html_prediction_pair(f, c, p, la, lb);
    pair_table(f, p);
}

ntp_status ntp_report_write_comparison_html(ntp_ctx *ctx, const ntp_comparison *c, FILE *f)
{
    if (!c || !f)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_comparison_html: no comparison");
    ntp__html_begin(f, "ntprof comparison");
    fputs(
        "<h1>Comparison</h1>\n<p class=\"note\">Speedup = base median / other median (above 1 "
        "the other run is faster). Two medians differ significantly when their 95% intervals "
        "do not overlap; otherwise: no significant difference.</p>\n"
        "<table><tr><th class=\"l\"></th><th class=\"l\">run</th><th class=\"l\">topology</th><th class=\"l\">backend"
        "</th><th class=\"l\">precision</th><th>batch</th><th>threads</th><th class=\"l\">fuse</th>"
        "<th>median ms</th>"
        "<th class=\"l\">machine</th><th class=\"l\">time</th></tr>\n",
        f);
    for (int i = 0; i < c->n_runs; i++) {
        const ntp_run_result *r = c->runs[i];
        char li[16];
        fprintf(f, "<tr><td class=\"l\"><b>%s</b></td><td class=\"l\">", letter(i, li, sizeof li));
        ntp__html_text(f, c->labels[i]);
        fputs("</td><td class=\"l\">", f);
        ntp__html_text(f, r->topology);
        fputs("</td><td class=\"l\">", f);
        ntp__html_text(f, r->backend);
        char thr[32];
        fprintf(f, "</td><td class=\"l\">%s</td><td>%lld</td><td>%s</td>",
                ntp_dtype_name(r->precision), (long long)r->batch,
                ntp__threads_text(r, thr, sizeof thr));
        fprintf(f, "<td class=\"l\">%s</td>", r->fused ? "--fuse" : "off");
        ntp__html_num_cell(f, r->end_to_end_ms.median, false);
        fputs("<td class=\"l\">", f);
        ntp__html_textf(f, "%s, %d CPUs, %s", r->env.cpu_model, r->env.cores, r->env.hostname);
        fputs("</td><td class=\"l\">", f);
        ntp__html_text(f, r->env.timestamp);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
    for (int k = 0; k < c->n_pairs; k++)
        pair_section(f, c, &c->pairs[k], k);
    ntp__html_end(f);
    return ntp__check_stream(ctx, f, "html");
}
