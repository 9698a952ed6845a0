/* The HTML report of a sweep: latency and throughput against each factor
 * (the other factors at their baseline, the first value of each), every
 * configuration's latency, and the table with every figure and its spread
 * (docs/html.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare-impl.h"
#include "core/ctx-impl.h"
#include "html-impl.h"

/* The configuration with factor f at value v and every other factor at its
 * first value, -1 if the design has none. */
static int config_at(const ntp_sweep *s, int f, int v)
{
    int nf = ntp_sweep_factor_count(s);
    for (int c = 0; c < ntp_sweep_config_count(s); c++) {
        bool ok = ntp_sweep_config_value(s, c, f) == v;
        for (int g = 0; ok && g < nf; g++)
            ok = g == f || ntp_sweep_config_value(s, c, g) == 0;
        if (ok)
            return c;
    }
    return -1;
}

static void factor_charts(FILE *f, const ntp_sweep *s, int k)
{
    int n = ntp_sweep_value_count(s, k);
    const char **x = calloc((size_t)n + 1, sizeof *x);
    double *lat = calloc((size_t)n + 1, sizeof *lat), *lo = calloc((size_t)n + 1, sizeof *lo);
    double *hi = calloc((size_t)n + 1, sizeof *hi), *thr = calloc((size_t)n + 1, sizeof *thr);
    if (!x || !lat || !lo || !hi || !thr)
        goto out;
    for (int v = 0; v < n; v++) {
        x[v] = ntp_sweep_value(s, k, v);
        const ntp_run_result *r = ntp_sweep_result(s, config_at(s, k, v));
        lat[v] = r ? r->end_to_end_ms.median : NAN;
        lo[v] = r ? r->end_to_end_ms.ci95_lo : NAN;
        hi[v] = r ? r->end_to_end_ms.ci95_hi : NAN;
        thr[v] = r ? r->throughput : NAN;
    }
    const char *name = ntp_sweep_factor_name(s, k);
    fputs("<h3>", f);
    ntp__html_text(f, name);
    fputs("</h3>\n<div style=\"display:flex;flex-wrap:wrap;gap:12px\">", f);
    char id[64];
    snprintf(id, sizeof id, "factor%d-latency", k);
    ntp__svg_series(f, id, name, "latency, median ms", x, n, lat, lo, hi);
    snprintf(id, sizeof id, "factor%d-throughput", k);
    ntp__svg_series(f, id, name, "throughput, samples/s", x, n, thr, NULL, NULL);
    fputs("</div>\n", f);
out:
    free(x);
    free(lat);
    free(lo);
    free(hi);
    free(thr);
}

static void config_table(FILE *f, const ntp_sweep *s)
{
    int nf = ntp_sweep_factor_count(s);
    fputs("<h2>Configurations</h2>\n<div class=\"scroll\"><table><tr><th>#</th>", f);
    for (int k = 0; k < nf; k++) {
        fputs("<th class=\"l\">", f);
        ntp__html_text(f, ntp_sweep_factor_name(s, k));
        fputs("</th>", f);
    }
    fputs("<th class=\"l\">status</th><th>median ms</th><th>95% CI</th><th>min ms</th>"
          "<th>p90 ms</th><th>p99 ms</th><th>cv %</th><th>n</th><th>samples/s</th><th>GFLOP/s</th>"
          "</tr>\n",
          f);
    for (int c = 0; c < ntp_sweep_config_count(s); c++) {
        fprintf(f, "<tr><td>%d</td>", c);
        for (int k = 0; k < nf; k++) {
            fputs("<td class=\"l\">", f);
            ntp__html_text(f, ntp_sweep_value(s, k, ntp_sweep_config_value(s, c, k)));
            fputs("</td>", f);
        }
        const ntp_run_result *r = ntp_sweep_result(s, c);
        if (!r) {
            const char *err = ntp_sweep_error(s, c);
            fputs("<td class=\"l slower\" colspan=\"11\">failed: ", f);
            ntp__html_text(f, err ? err : "not run");
            fputs("</td></tr>\n", f);
            continue;
        }
        const ntp_stats *e = &r->end_to_end_ms;
        fputs("<td class=\"l\">ok</td>", f);
        ntp__html_num_cell(f, e->median, false);
        fprintf(f, "<td>[%.4g, %.4g]</td>", e->ci95_lo, e->ci95_hi);
        ntp__html_num_cell(f, e->min, false);
        ntp__html_num_cell(f, e->p90, false);
        ntp__html_num_cell(f, e->p99, false);
        ntp__html_num_cell(f, 100 * e->cv, false);
        fprintf(f, "<td>%zu</td>", e->n);
        ntp__html_num_cell(f, r->throughput, false);
        ntp__html_num_cell(f, e->median > 0 ? (double)r->flops / (e->median * 1e-3) / 1e9 : NAN,
                           false);
        fputs("</tr>\n", f);
    }
    fputs("</table></div>\n", f);
}

ntp_status ntp_report_write_sweep_html(ntp_ctx *ctx, const ntp_sweep *s, FILE *f)
{
    if (!s || !f)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_sweep_html: no sweep");
    int nc = ntp_sweep_config_count(s), nf = ntp_sweep_factor_count(s);
    ntp__html_begin(f, "ntprof sweep");
    fputs("<h1>Sweep</h1>\n<p class=\"meta\">", f);
    ntp__html_textf(
        f, "%s · %s · %d configurations, each run in a process of its own", ntp_sweep_source(s),
        ntp_sweep_get_design(s) == NTP_SWEEP_OFAT ? "one factor at a time" : "full factorial", nc);
    fputs("</p>\n", f);
    if (nc > 0) {
        fputs("<p class=\"meta\">baseline: ", f);
        ntp__html_text(f, ntp_sweep_config_label(s, 0));
        fputs("</p>\n", f);
    }
    fputs("<h2>Against each factor</h2>\n<p class=\"note\">Latency (median with its 95% interval) "
          "and throughput as one factor changes and the others stay at their baseline.</p>\n",
          f);
    for (int k = 0; k < nf; k++)
        factor_charts(f, s, k);
    ntp_hbar *bars = calloc((size_t)nc + 1, sizeof *bars);
    if (bars) {
        for (int c = 0; c < nc; c++) {
            const ntp_run_result *r = ntp_sweep_result(s, c);
            bars[c] = (ntp_hbar){.label = ntp_sweep_config_label(s, c),
                                 .value = r ? r->end_to_end_ms.median : NAN,
                                 .lo = r ? r->end_to_end_ms.ci95_lo : NAN,
                                 .hi = r ? r->end_to_end_ms.ci95_hi : NAN,
                                 .value2 = NAN,
                                 .lo2 = NAN,
                                 .hi2 = NAN,
                                 .tooltip = ntp_sweep_config_label(s, c)};
        }
        fputs("<h2>Every configuration</h2>\n", f);
        ntp__svg_hbars(f, "config-latency", "latency, median ms", bars, nc, NULL, NULL);
        free(bars);
    }
    config_table(f, s);
    ntp__html_end(f);
    return ntp__check_stream(ctx, f, "html");
}
