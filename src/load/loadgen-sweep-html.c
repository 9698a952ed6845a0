/* The HTML report of a load sweep (`ntprof sweep --load --html FILE`,
 * docs/load.md#sweeps): one self-contained page with the report layer's
 * page and styles (src/report/html.c): latency against achieved QPS, each
 * configuration's p99 with a whisker down to its p50, invalid runs marked,
 * and the table of every configuration. Every number carries its exact
 * value in a data-v attribute (%.17g), and every point its configuration
 * (data-c) and coordinates (data-x, data-y), so a test can hold the page to
 * the JSON report. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "loadgen-impl.h"
#include "report/html-impl.h"

/* A round number at or above v for an axis end: 1, 2, 5 x 10^k. */
static double axis_end(double v)
{
    if (!(v > 0) || !isfinite(v))
        return 1;
    double e = pow(10, floor(log10(v)));
    double m = v / e;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * e;
}

static bool drawn(const ntp_loadgen_sweep_row *r)
{
    return r->error[0] == '\0' && isfinite(r->qps_achieved) && isfinite(r->p50_ms) &&
           isfinite(r->p99_ms);
}

/* The label less its "qps=..." part: configurations that differ only in
 * their offered QPS are one curve. */
static void curve_key(const char *label, char *out, size_t len)
{
    size_t o = 0;
    out[0] = '\0';
    for (const char *p = label; *p;) {
        const char *end = strchr(p, ' ');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (!(n > 4 && strncmp(p, "qps=", 4) == 0) && o + n + 2 < len) {
            if (o)
                out[o++] = ' ';
            memcpy(out + o, p, n);
            o += n;
            out[o] = '\0';
        }
        p += n;
        while (*p == ' ')
            p++;
    }
}

typedef struct curve_pt {
    int row;
    double x;
} curve_pt;

static int cmp_pt(const void *a, const void *b)
{
    double x = ((const curve_pt *)a)->x, y = ((const curve_pt *)b)->x;
    return (x > y) - (x < y);
}

/* p99 (filled) and p50 (open) of each configuration against its achieved
 * QPS; a line joins a curve's p99s in QPS order; an invalid run is drawn
 * as a red cross over its p99. */
static ntp_status figure(ntp_ctx *ctx, FILE *f, const ntp_loadgen_sweep_row *rows, int n)
{
    const double W = 560, H = 320, left = 62, right = 16, top = 16, bottom = 44;
    double pw = W - left - right, ph = H - top - bottom, xmax = 0, ymax = 0;
    for (int i = 0; i < n; i++)
        if (drawn(&rows[i])) {
            xmax = fmax(xmax, rows[i].qps_achieved);
            ymax = fmax(ymax, rows[i].p99_ms);
        }
    xmax = axis_end(xmax * 1.05);
    ymax = axis_end(ymax * 1.05);
    char(*key)[256] = calloc((size_t)n + 1, sizeof *key);
    int *curve = calloc((size_t)n + 1, sizeof *curve);
    curve_pt *pts = calloc((size_t)n + 1, sizeof *pts);
    if (!key || !curve || !pts) {
        free(key);
        free(curve);
        free(pts);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    int nc = 0;
    for (int i = 0; i < n; i++) {
        curve_key(rows[i].label, key[i], sizeof key[i]);
        curve[i] = -1;
        for (int j = 0; j < i && curve[i] < 0; j++)
            if (strcmp(key[j], key[i]) == 0)
                curve[i] = curve[j];
        if (curve[i] < 0)
            curve[i] = nc++;
    }
    fprintf(f,
            "<svg class=\"chart\" id=\"latency-qps\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
            "height=\"%.0f\" role=\"img\">\n",
            W, H, W, H);
#define SX(v) (left + pw * (v) / xmax)
#define SY(v) (top + ph * (1 - (v) / ymax))
    for (int t = 0; t <= 4; t++)
        fprintf(f,
                "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.3g</text>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.4g</text>\n",
                left, SY(ymax * t / 4), left + pw, SY(ymax * t / 4), left - 5, SY(ymax * t / 4) + 4,
                ymax * t / 4, SX(xmax * t / 4), top + ph + 15, xmax * t / 4);
    fprintf(f,
            "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">achieved QPS</text>"
            "<text transform=\"translate(14 %.1f) rotate(-90)\" text-anchor=\"middle\">"
            "latency ms: p99 (filled), p50 (open)</text>\n",
            left, top + ph, left + pw, top + ph, left + pw / 2, H - 8, top + ph / 2);
    for (int c = 0; c < nc; c++) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (curve[i] == c && drawn(&rows[i]))
                pts[m++] = (curve_pt){i, rows[i].qps_achieved};
        if (m < 2)
            continue;
        qsort(pts, (size_t)m, sizeof *pts, cmp_pt);
        fprintf(f, "<path class=\"line\" style=\"stroke:%s\" d=\"", ntp__html_color(c));
        for (int k = 0; k < m; k++)
            fprintf(f, "%s%.1f %.1f", k ? "L" : "M", SX(rows[pts[k].row].qps_achieved),
                    SY(rows[pts[k].row].p99_ms));
        fputs("\"><title>", f);
        ntp__html_text(f, key[pts[0].row][0] ? key[pts[0].row] : "qps");
        fputs("</title></path>\n", f);
    }
    for (int i = 0; i < n; i++) {
        const ntp_loadgen_sweep_row *r = &rows[i];
        if (!drawn(r))
            continue;
        const char *col = ntp__html_color(curve[i]);
        double x = SX(r->qps_achieved);
        fprintf(f, "<path class=\"whisker\" d=\"M%.1f %.1fV%.1f\"/>", x, SY(r->p50_ms),
                SY(r->p99_ms));
        const char *pct[] = {"p99", "p50"};
        const double y[] = {r->p99_ms, r->p50_ms};
        for (int k = 0; k < 2; k++) {
            fprintf(f,
                    "<circle class=\"pt %s%s\" data-c=\"%d\" data-x=\"%.17g\" data-y=\"%.17g\" "
                    "cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\" stroke=\"%s\"><title>",
                    pct[k], r->valid ? "" : " invalid", i, r->qps_achieved, y[k], x, SY(y[k]),
                    k == 0 ? col : "#fff", col);
            ntp__html_textf(f, "%s: %s %.4g ms at %.4g QPS achieved%s", r->label, pct[k], y[k],
                            r->qps_achieved, r->valid ? "" : " (INVALID)");
            fputs("</title></circle>\n", f);
        }
        if (!r->valid)
            fprintf(f,
                    "<path class=\"invalid-mark\" data-c=\"%d\" d=\"M%.1f %.1fl10 10m0 -10l-10 "
                    "10\" style=\"stroke:#c0392b;stroke-width:2\"/>\n",
                    i, x - 5, SY(r->p99_ms) - 5);
    }
#undef SX
#undef SY
    fputs("</svg>\n", f);
    if (nc > 1) {
        fputs("<p class=\"note\">Curves: ", f);
        for (int c = 0; c < nc; c++)
            for (int i = 0; i < n; i++)
                if (curve[i] == c) {
                    fprintf(f, "%s<span style=\"color:%s\">&#9679;</span> ", c ? "; " : "",
                            ntp__html_color(c));
                    ntp__html_text(f, key[i][0] ? key[i] : "qps");
                    break;
                }
        fputs("</p>\n", f);
    }
    free(key);
    free(curve);
    free(pts);
    return NTP_STATUS_OK;
}

static void cell(FILE *f, double v, int digits)
{
    if (isfinite(v))
        fprintf(f, "<td data-v=\"%.17g\">%.*g</td>", v, digits, v);
    else
        fputs("<td>-</td>", f);
}

static void table(FILE *f, const ntp_loadgen_sweep_row *rows, int n)
{
    fputs("<h2>Configurations</h2>\n<div class=\"scroll\"><table id=\"configurations\"><tr>"
          "<th class=\"l\">configuration</th><th class=\"l\">scenario</th><th>instances</th>"
          "<th>threads</th><th>max batch</th><th>offered/s</th><th>achieved/s</th>"
          "<th>samples/s</th><th>queries</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th>"
          "<th>mean ms</th><th>max ms</th><th>max QPS</th><th>gen us/q</th><th>late us</th>"
          "<th>late p99 us</th><th>drawn QPS</th><th class=\"l\">valid</th></tr>\n",
          f);
    for (int i = 0; i < n; i++) {
        const ntp_loadgen_sweep_row *r = &rows[i];
        fprintf(f, "<tr class=\"config\" data-c=\"%d\"><td class=\"l\">", i);
        ntp__html_text(f, r->label);
        fputs("</td>", f);
        if (r->error[0]) {
            fputs("<td class=\"l slower\" colspan=\"19\">failed: ", f);
            ntp__html_text(f, r->error);
            fputs("</td></tr>\n", f);
            continue;
        }
        fputs("<td class=\"l\">", f);
        ntp__html_text(f, r->scenario);
        fputs("</td>", f);
        const double v[] = {r->instances,        r->threads_per_instance,
                            r->max_batch,        r->qps_offered,
                            r->qps_achieved,     r->samples_per_s,
                            (double)r->queries,  r->p50_ms,
                            r->p90_ms,           r->p99_ms,
                            r->mean_ms,          r->max_ms,
                            r->max_qps,          r->overhead_us,
                            r->lateness_mean_us, r->lateness_p99_us,
                            r->qps_drawn};
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
            cell(f, v[k], k < 3 || k == 6 ? 15 : 4);
        fprintf(f, "<td class=\"l%s\">%s</td></tr>\n", r->valid ? "" : " slower",
                r->valid ? "yes" : "no");
    }
    fputs("</table></div>\n", f);
}

ntp_status ntp_report_write_load_sweep_html(ntp_ctx *ctx, const ntp_loadgen_sweep_row *rows, int n,
                                            const char *source, FILE *f)
{
    if ((n > 0 && !rows) || !f)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_load_sweep_html: no rows or stream");
    int failed = 0, invalid = 0, shown = 0;
    for (int i = 0; i < n; i++) {
        failed += rows[i].error[0] != '\0';
        invalid += rows[i].error[0] == '\0' && !rows[i].valid;
        shown += drawn(&rows[i]);
    }
    char title[512];
    snprintf(title, sizeof title, "ntprof load sweep: %s", source ? source : "?");
    ntp__html_begin(f, title);
    fputs("<h1>", f);
    ntp__html_text(f, title);
    fputs("</h1>\n<p class=\"meta\">", f);
    ntp__html_textf(f,
                    "%d configuration%s, each an ntprof load run in a process of its own; %d "
                    "failed, %d invalid",
                    n, n == 1 ? "" : "s", failed, invalid);
    fputs("</p>\n<h2>Latency against achieved QPS</h2>\n<p class=\"note\">Each configuration's "
          "p99 (filled) with a whisker down to its p50 (open), at the QPS it achieved; "
          "configurations that differ only in their offered QPS are joined. A red cross marks "
          "an invalid run (over its latency bound, too short for its percentile, or "
          "interrupted).</p>\n",
          f);
    if (shown > 0) {
        ntp_status st = figure(ctx, f, rows, n);
        if (st)
            return st;
    } else {
        fputs("<p class=\"note\">No configuration completed.</p>\n", f);
    }
    table(f, rows, n);
    ntp__html_end(f);
    return ntp__check_stream(ctx, f, "load sweep HTML");
}
