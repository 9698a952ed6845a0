/* The load generator's HTML report (docs/load.md#reports): one
 * self-contained page drawn with the report layer's SVG helpers
 * (src/report/html.c): the run's figures, the latency distribution (a
 * histogram of the queries' latencies and the latency at each percentile)
 * and, after --find-max-qps, p50 and p99 against the offered QPS with the
 * bound. Every number shown carries its exact value in a data-v attribute
 * (%.17g), so a test can hold the page to the JSON report. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "loadgen-impl.h"
#include "measure/measure-impl.h"
#include "loadgen-result-impl.h"
#include "report/html-impl.h"

#define HIST_BINS 20

/* A table row: a name, a value shown at 4 significant digits and exactly
 * in data-v, keyed by data-k. */
static void row(FILE *f, const char *key, const char *name, double v, const char *unit)
{
    fputs("<tr data-k=\"", f);
    ntp__html_text(f, key);
    fputs("\"><th>", f);
    ntp__html_text(f, name);
    if (isfinite(v))
        fprintf(f, "</th><td data-v=\"%.17g\">%.4g</td><td>", v, v);
    else
        fputs("</th><td>-</td><td>", f);
    ntp__html_text(f, unit);
    fputs("</td></tr>\n", f);
}

static int cmp_point(const void *a, const void *b)
{
    return ntp__cmp_double(&((const ntp_loadgen_point *)a)->qps,
                           &((const ntp_loadgen_point *)b)->qps);
}

/* The histogram: HIST_BINS equal bins from the fastest query to the
 * p99.9 (a long tail would squeeze every other bin into one), the slower
 * ones in a last bin of their own. */
static void histogram(FILE *f, const ntp_loadgen_result *r, const double *sorted, int64_t n)
{
    double lo = sorted[0], hi = ntp__lg_percentile(sorted, n, 0.999);
    if (!(hi > lo))
        hi = lo + 1e-3;
    double w = (hi - lo) / HIST_BINS;
    int64_t count[HIST_BINS + 1] = {0};
    for (int64_t i = 0; i < n; i++) {
        int b = (int)((sorted[i] - lo) / w);
        if (sorted[i] > hi)
            b = HIST_BINS;
        else if (b >= HIST_BINS)
            b = HIST_BINS - 1;
        count[b]++;
    }
    char label[HIST_BINS + 1][48];
    ntp_hbar bars[HIST_BINS + 1];
    int nb = count[HIST_BINS] > 0 ? HIST_BINS + 1 : HIST_BINS;
    for (int b = 0; b < nb; b++) {
        if (b < HIST_BINS)
            snprintf(label[b], sizeof label[b], "%.4g to %.4g ms", lo + w * b, lo + w * (b + 1));
        else
            snprintf(label[b], sizeof label[b], "over %.4g ms", hi);
        bars[b] = (ntp_hbar){.label = label[b],
                             .value = (double)count[b],
                             .lo = NAN,
                             .hi = NAN,
                             .value2 = NAN,
                             .lo2 = NAN,
                             .hi2 = NAN,
                             .tooltip = label[b]};
    }
    fputs("<h2>Latency distribution</h2>\n<p class=\"note\">Queries by latency, from arrival to "
          "completion.</p>\n",
          f);
    ntp__svg_hbars(f, "latency-histogram", "queries", bars, nb, NULL, NULL);
    fputs("<table id=\"histogram\"><tr><th>latency</th><th>queries</th></tr>\n", f);
    for (int b = 0; b < nb; b++) {
        fputs("<tr><td>", f);
        ntp__html_text(f, label[b]);
        fprintf(f, "</td><td data-v=\"%lld\">%lld</td></tr>\n", (long long)count[b],
                (long long)count[b]);
    }
    fputs("</table>\n", f);
    (void)r;
}

/* The latency at each percentile: the distribution's inverse, by
 * LoadGen's percentile rule. */
static void percentiles(FILE *f, const double *sorted, int64_t n)
{
    static const double p[] = {0.10, 0.25, 0.50, 0.75, 0.90, 0.95, 0.99, 0.999};
    static const char *const name[] = {"p10", "p25", "p50", "p75", "p90", "p95", "p99", "p99.9"};
    enum { NP = sizeof p / sizeof p[0] };
    double y[NP];
    for (int i = 0; i < NP; i++)
        y[i] = ntp__lg_percentile(sorted, n, p[i]);
    fputs("<h3>Latency at each percentile</h3>\n", f);
    ntp__svg_series(f, "latency-percentiles", "percentile", "latency ms", name, NP, y, NULL, NULL);
}

static void search(FILE *f, const ntp_loadgen_result *r)
{
    int n = r->n_points;
    ntp_loadgen_point pts[NTP_LOADGEN_MAX_POINTS];
    memcpy(pts, r->points, (size_t)n * sizeof *pts);
    qsort(pts, (size_t)n, sizeof *pts, cmp_point);
    char xs[NTP_LOADGEN_MAX_POINTS][32];
    const char *x[NTP_LOADGEN_MAX_POINTS];
    double p99[NTP_LOADGEN_MAX_POINTS], p50[NTP_LOADGEN_MAX_POINTS];
    for (int i = 0; i < n; i++) {
        snprintf(xs[i], sizeof xs[i], "%.4g", pts[i].qps);
        x[i] = xs[i];
        p99[i] = pts[i].p99_ms;
        p50[i] = pts[i].p50_ms;
    }
    fputs("<h2>Latency against offered QPS</h2>\n", f);
    fprintf(f,
            "<p class=\"note\">The runs of the search: p99 (points) with a whisker down to the "
            "p50, against the offered QPS; valid runs keep the p99 within the bound of "
            "<span id=\"bound\" data-v=\"%.17g\">%.4g ms</span>. Largest valid QPS: "
            "<span id=\"max-qps\" data-v=\"%.17g\">%.4g</span>.</p>\n",
            r->latency_bound_ms, r->latency_bound_ms, r->max_qps, r->max_qps);
    char ylabel[64];
    snprintf(ylabel, sizeof ylabel, "p99 ms (bound %.4g), p50 below", r->latency_bound_ms);
    ntp__svg_series(f, "latency-qps", "offered QPS", ylabel, x, n, p99, p50, p99);
    fputs("<table id=\"search\"><tr><th>offered QPS</th><th>p50 ms</th><th>p99 ms</th>"
          "<th>mean ms</th><th>valid</th></tr>\n",
          f);
    for (int i = 0; i < n; i++)
        fprintf(f,
                "<tr class=\"point\"><td data-v=\"%.17g\">%.4g</td><td data-v=\"%.17g\">%.4g</td>"
                "<td data-v=\"%.17g\">%.4g</td><td data-v=\"%.17g\">%.4g</td><td>%s</td></tr>\n",
                pts[i].qps, pts[i].qps, pts[i].p50_ms, pts[i].p50_ms, pts[i].p99_ms, pts[i].p99_ms,
                pts[i].mean_ms, pts[i].mean_ms, pts[i].valid ? "yes" : "no");
    fputs("</table>\n", f);
}

ntp_status ntp_report_write_load_html(ntp_ctx *ctx, const ntp_loadgen_result *r, FILE *f)
{
    int64_t n = r->queries;
    double *lat = malloc(((size_t)n + 1) * sizeof *lat);
    if (!lat)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int64_t i = 0; i < n; i++)
        lat[i] = (r->q[i].done_us - r->q[i].scheduled_us) / 1e3;
    qsort(lat, (size_t)n, sizeof *lat, ntp__cmp_double);

    char title[256];
    snprintf(title, sizeof title, "ntprof load: %s, %s", r->topology ? r->topology : "?",
             ntp_loadgen_scenario_name(r->scenario));
    ntp__html_begin(f, title);
    fputs("<h1>", f);
    ntp__html_text(f, title);
    fputs("</h1>\n<p class=\"meta\">", f);
    ntp__html_textf(f,
                    "%s on %s, %d instance%s x %d thread%s, max batch %d; %s, %d CPUs, load "
                    "average %.2f",
                    r->source ? r->source : "?", r->backend ? r->backend : "?", r->instances,
                    r->instances == 1 ? "" : "s", r->threads_per_instance,
                    r->threads_per_instance == 1 ? "" : "s", r->max_batch, r->cpu_model, r->cpus,
                    r->load_average);
    fprintf(f, "</p>\n<p id=\"valid\" data-v=\"%d\">result: <b>%s</b></p>\n", r->valid ? 1 : 0,
            r->valid ? "VALID" : "INVALID");
    for (int i = 0; i < r->n_warnings; i++) {
        fputs("<p class=\"note\">warning: ", f);
        ntp__html_text(f, r->warnings[i]);
        fputs("</p>\n", f);
    }
    bool sv = r->scenario == NTP_LOADGEN_SERVER;
    fputs("<h2>Figures</h2>\n<table id=\"figures\">\n", f);
    row(f, "qps_offered", "offered", r->qps_offered, "queries/s");
    row(f, "qps_achieved", "achieved", r->qps_achieved, "queries/s");
    row(f, "samples_per_s", "samples", r->samples_per_s, "samples/s");
    row(f, "queries", "queries", (double)r->queries, "");
    row(f, "p50", "latency p50", r->latency_ms.p50, "ms");
    row(f, "p90", "latency p90", r->latency_ms.p90, "ms");
    row(f, "p95", "latency p95", r->latency_ms.p95, "ms");
    row(f, "p99", "latency p99", r->latency_ms.p99, "ms");
    row(f, "p999", "latency p99.9", r->latency_ms.p999, "ms");
    row(f, "max", "latency max", r->latency_ms.max, "ms");
    row(f, "mean", "latency mean", r->latency_ms.mean, "ms");
    if (sv) {
        row(f, "latency_bound_ms", "latency bound (p99)", r->latency_bound_ms, "ms");
        row(f, "lateness_mean_us", "generator lateness, mean", r->gen.lateness_us, "us");
        row(f, "lateness_p99_us", "generator lateness, p99", r->gen.lateness_p99_us, "us");
    }
    row(f, "overhead_us", "generator cost per query", r->gen.overhead_us, "us");
    fputs("</table>\n", f);
    if (n > 0) {
        histogram(f, r, lat, n);
        percentiles(f, lat, n);
    } else {
        fputs("<p class=\"note\">No query completed.</p>\n", f);
    }
    if (r->searched && r->n_points > 0)
        search(f, r);
    ntp__html_end(f);
    free(lat);
    return ntp__check_stream(ctx, f, "load HTML");
}
