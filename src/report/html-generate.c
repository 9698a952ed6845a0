/* A generate sweep as an HTML page (generate.h, docs/decoders.md): against
 * the context axis (else the first axis), for each combination of the
 * other axes, the time per output token, the KV cache's bytes and decode's
 * bytes per step; then every point in a table. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "exec/generate-impl.h"
#include "html-impl.h"
#include "ntprof/generate.h"

/* The point with value index vi on axis x and the values of `others`
 * (value indices of every axis; x's ignored). */
static int point_at(const ntp_generate_sweep *s, const int *idx, int x, int vi)
{
    int p = 0;
    for (int a = 0; a < s->n_axes; a++)
        p = p * s->n_values[a] + (a == x ? vi : idx[a]);
    return p;
}

/* TPOT in ms: measured p50, or the roofline's for a static point. */
static double tpot(const ntp_generate_result *r)
{
    if (!r->static_only)
        return r->tpot_p50_ms;
    return r->decode.predicted_tokens_per_s > 0
               ? 1e3 * (double)r->batch / r->decode.predicted_tokens_per_s
               : NAN;
}

static void group_charts(FILE *f, const ntp_generate_sweep *s, const int *idx, int x, int g)
{
    int n = s->n_values[x];
    double *y = calloc((size_t)n * 5 + 1, sizeof *y);
    if (!y)
        return;
    double *lo = y + n, *hi = lo + n, *kv = hi + n, *db = kv + n;
    bool measured = !s->static_only;
    for (int v = 0; v < n; v++) {
        const ntp_generate_result *r = s->points[point_at(s, idx, x, v)].r;
        y[v] = tpot(r);
        lo[v] = measured ? r->tpot_p50_ms : NAN;
        hi[v] = measured ? r->tpot_p99_ms : NAN;
        kv[v] = (double)r->kv_bytes_total / 1e6;
        db[v] = (double)r->decode.bytes / 1e6;
    }
    fputs("<h3>", f);
    bool any = false;
    for (int a = 0; a < s->n_axes; a++)
        if (a != x) {
            ntp__html_textf(f, "%s%s = %s", any ? ", " : "", s->axis[a], s->values[a][idx[a]]);
            any = true;
        }
    if (!any)
        ntp__html_textf(f, "against %s", s->axis[x]);
    fputs("</h3>\n", f);
    char id[64];
    bool have_tpot = false;
    for (int v = 0; v < n; v++)
        have_tpot = have_tpot || isfinite(y[v]);
    snprintf(id, sizeof id, "tpot-%d", g);
    if (!have_tpot)
        fputs("<p class=\"note\">No TPOT: a static sweep predicts it only from the machine's "
              "ceilings (run <code>ntprof machine</code>).</p>\n",
              f);
    else
        ntp__svg_series(
            f, id, s->axis[x], measured ? "TPOT ms (p50, whisker to p99)" : "TPOT ms (roofline)",
            (const char *const *)s->values[x], n, y, measured ? lo : NULL, measured ? hi : NULL);
    snprintf(id, sizeof id, "kv-%d", g);
    ntp__svg_series(f, id, s->axis[x], "KV cache MB", (const char *const *)s->values[x], n, kv,
                    NULL, NULL);
    snprintf(id, sizeof id, "dec-bytes-%d", g);
    ntp__svg_series(f, id, s->axis[x], "decode MB per step", (const char *const *)s->values[x], n,
                    db, NULL, NULL);
    free(y);
}

static void point_table(FILE *f, const ntp_generate_sweep *s)
{
    fputs("<div class=\"scroll\"><table><tr>", f);
    for (int a = 0; a < s->n_axes; a++) {
        fputs("<th>", f);
        ntp__html_text(f, s->axis[a]);
        fputs("</th>", f);
    }
    fputs("<th>KV B/token</th><th>KV MB</th><th>weights MB</th><th>decode MB/step</th>"
          "<th>decode FLOP/B</th><th>TTFT ms</th><th>TPOT p50 ms</th><th>TPOT p99 ms</th>"
          "<th>decode tok/s</th><th>roofline decode tok/s</th></tr>\n",
          f);
    for (int i = 0; i < s->n_points; i++) {
        const ntp_generate_result *r = s->points[i].r;
        bool st = r->static_only;
        fputs("<tr>", f);
        for (int a = 0; a < s->n_axes; a++) {
            fputs("<td>", f);
            ntp__html_text(f, s->points[i].value[a]);
            fputs("</td>", f);
        }
        ntp__html_num_cell(f, (double)r->kv_bytes_per_token, false);
        ntp__html_num_cell(f, (double)r->kv_bytes_total / 1e6, false);
        ntp__html_num_cell(f, (double)r->weight_bytes / 1e6, false);
        ntp__html_num_cell(f, (double)r->decode.bytes / 1e6, false);
        ntp__html_num_cell(f, r->decode.intensity, false);
        ntp__html_num_cell(f, r->ttft_ms, st);
        ntp__html_num_cell(f, r->tpot_p50_ms, st);
        ntp__html_num_cell(f, r->tpot_p99_ms, st);
        ntp__html_num_cell(f, r->decode_tokens_per_s, st);
        ntp__html_num_cell(f, r->decode.predicted_tokens_per_s,
                           r->decode.predicted_tokens_per_s < 0);
        fputs("</tr>\n", f);
    }
    fputs("</table></div>\n", f);
}

ntp_status ntp_report_write_generate_sweep_html(ntp_ctx *ctx, const ntp_generate_sweep *s, FILE *f)
{
    if (!s || !f || s->n_axes < 1 || s->n_points < 1)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_generate_sweep_html: no sweep");
    int x = 0;
    for (int a = 0; a < s->n_axes; a++)
        if (strcmp(s->axis[a], "context") == 0)
            x = a;
    const ntp_generate_result *r0 = s->points[0].r;
    ntp__html_begin(f, "ntprof generate sweep");
    fputs("<h1>Generate sweep</h1>\n<p class=\"meta\">", f);
    ntp__html_textf(f, "%s · %s · %d points · backend %s", s->model_path,
                    s->static_only ? "static analysis, nothing run" : "measured", s->n_points,
                    r0->backend);
    fputs("</p>\n<p class=\"note\">", f);
    ntp__html_textf(f,
                    "Against %s. TPOT is %s. KV cache bytes = bytes per token x batch x "
                    "(context + prompt + generated); decode bytes per step are the weights, "
                    "activations and the cache read at the mean context of the steps.",
                    s->axis[x],
                    s->static_only ? "the roofline's (the machine's ceilings; blank without them)"
                                   : "the measured median per step, whiskers to p99");
    fputs("</p>\n<h2>Against ", f);
    ntp__html_text(f, s->axis[x]);
    fputs("</h2>\n", f);
    /* One group per combination of the other axes. */
    int idx[NTP_GENERATE_SWEEP_MAX_AXES] = {0};
    int groups = s->n_points / s->n_values[x];
    for (int g = 0; g < groups; g++) {
        int rest = g;
        for (int a = s->n_axes - 1; a >= 0; a--) {
            if (a == x)
                continue;
            idx[a] = rest % s->n_values[a];
            rest /= s->n_values[a];
        }
        group_charts(f, s, idx, x, g);
    }
    fputs("<h2>Every point</h2>\n", f);
    point_table(f, s);
    ntp__html_end(f);
    return ntp__check_stream(ctx, f, "html");
}
