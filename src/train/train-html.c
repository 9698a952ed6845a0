/* The HTML page of a training sweep (ntprof sweep --train --html,
 * docs/train.md): the memory of each configuration by data structure as
 * the TBD benchmark suite draws it — weights, weight gradients, optimizer
 * state, stashed activations (and their gradients), workspace, other — as
 * stacked bars to one scale, so the growth of the feature maps with the
 * batch is visible; the planned peak against the measured one; and the
 * table with every figure. Self-contained, as every ntprof page
 * (docs/html.md). Each segment carries its bytes (data-bytes), the same
 * integers as the JSON's memory object. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/ctx-impl.h"
#include "core/writers-impl.h"
#include "report/html-impl.h"
#include "train-impl.h"

/* The parts drawn, in the JSON's keys and order; the peak is their sum. */
enum { N_PARTS = 6 };
static const char *const part_label[N_PARTS] = {"weights",     "gradients", "optimizer state",
                                                "activations", "workspace", "other"};

static const char *human(int64_t v, char *buf)
{
    return ntp__human_bytes((double)v, buf, 32);
}

/* One row of stacked segments per configuration that ran, scaled to the
 * largest peak; a legend below. */
static void memory_bars(FILE *f, const ntp_train_sweep *s, int64_t most)
{
    const double W = 1000, label_w = 200, right = 90, top = 10, row = 26, bar_h = 18;
    int rows = 0;
    for (int c = 0; c < s->n; c++)
        rows += s->res[c] != NULL;
    double plot_w = W - label_w - right, H = top + rows * row + 40;
    fprintf(f,
            "<svg class=\"chart\" id=\"train-memory\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
            "height=\"%.0f\" role=\"img\">\n",
            W, H, W, H);
    char b[2][32];
    int r = 0;
    for (int c = 0; c < s->n; c++) {
        const ntp_train_result *res = s->res[c];
        if (!res)
            continue;
        const char *label = ntp_sweep_config_label(s->sw, c);
        int64_t v[NTP__TRAIN_MEM_PARTS];
        ntp__train_mem_values(&res->plan->memory, v);
        double y = top + r++ * row, x = label_w;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", label_w - 6,
                y + bar_h / 2 + 4);
        ntp__html_text(f, label);
        fputs("</text>\n", f);
        for (int p = 0; p < N_PARTS; p++) {
            double w = most > 0 ? plot_w * (double)v[p] / (double)most : 0.0;
            fprintf(f,
                    "<rect class=\"seg\" data-config=\"%d\" data-part=\"%s\" data-bytes=\"%lld\" "
                    "x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"><title>",
                    c, ntp__train_mem_keys[p], (long long)v[p], x, y, w, bar_h, ntp__html_color(p));
            ntp__html_textf(f, "%s: %s %s (%.1f%% of the peak)", label, part_label[p],
                            human(v[p], b[0]),
                            v[6] > 0 ? 100.0 * (double)v[p] / (double)v[6] : 0.0);
            fputs("</title></rect>", f);
            x += w;
        }
        fprintf(f,
                "<text class=\"peak\" data-config=\"%d\" data-bytes=\"%lld\" x=\"%.1f\" "
                "y=\"%.1f\">%s</text>\n",
                c, (long long)v[6], x + 6, y + bar_h / 2 + 4, human(v[6], b[1]));
    }
    double lx = label_w, ly = top + rows * row + 14;
    for (int p = 0; p < N_PARTS; p++) {
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                lx, ly, ntp__html_color(p), lx + 16, ly + 10, part_label[p]);
        lx += 130;
    }
    fputs("</svg>\n", f);
}

static void bytes_cell(FILE *f, int64_t v, bool have)
{
    char b[32];
    if (!have) {
        fputs("<td>-</td>", f);
        return;
    }
    fprintf(f, "<td data-bytes=\"%lld\">%s</td>", (long long)v, human(v, b));
}

static void memory_table(FILE *f, const ntp_train_sweep *s)
{
    fputs("<h2>Every configuration</h2>\n<div class=\"scroll\"><table><tr>"
          "<th class=\"l\">configuration</th><th>batch</th><th>weights</th><th>gradients</th>"
          "<th>optimizer state</th><th>activations</th><th>workspace</th><th>other</th>"
          "<th>peak</th><th>activations %</th><th>engine plan</th><th>allocated</th>"
          "<th>measured</th><th>diff %</th><th>step ms</th><th>samples/s</th></tr>\n",
          f);
    for (int c = 0; c < s->n; c++) {
        const ntp_train_result *r = s->res[c];
        fputs("<tr><td class=\"l\">", f);
        ntp__html_text(f, ntp_sweep_config_label(s->sw, c));
        fputs("</td>", f);
        if (!r) {
            fputs("<td class=\"l slower\" colspan=\"15\">failed: ", f);
            ntp__html_text(f, s->err[c] ? s->err[c] : "failed");
            fputs("</td></tr>\n", f);
            continue;
        }
        int64_t v[NTP__TRAIN_MEM_PARTS];
        ntp__train_mem_values(&r->plan->memory, v);
        fprintf(f, "<td>%lld</td>", (long long)r->batch);
        for (int p = 0; p < NTP__TRAIN_MEM_PARTS; p++)
            bytes_cell(f, v[p], true);
        ntp__html_num_cell(f, v[6] > 0 ? 100.0 * (double)v[3] / (double)v[6] : NAN, false);
        bool have = r->rss_peak_bytes >= 0;
        bytes_cell(f, r->plan->engine_bytes, true);
        bytes_cell(f, r->allocated_bytes, true);
        bytes_cell(f, r->rss_peak_bytes, have);
        ntp__html_num_cell(f,
                           have && r->plan->engine_bytes > 0
                               ? 100.0 * (double)(r->rss_peak_bytes - r->plan->engine_bytes) /
                                     (double)r->plan->engine_bytes
                               : NAN,
                           false);
        ntp__html_num_cell(f, r->step.median, false);
        ntp__html_num_cell(f, r->samples_per_s, false);
        fputs("</tr>\n", f);
    }
    fputs("</table></div>\n", f);
}

ntp_status ntp_train_sweep_write_html(ntp_ctx *ctx, const ntp_train_sweep *s, FILE *f)
{
    if (!s || !f)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_train_sweep_write_html: no training sweep");
    int64_t most = 0;
    int ran = 0;
    for (int c = 0; c < s->n; c++)
        if (s->res[c]) {
            ran++;
            if (s->res[c]->plan->memory.peak > most)
                most = s->res[c]->plan->memory.peak;
        }
    ntp__html_begin(f, "ntprof training sweep");
    fputs("<h1>Training memory</h1>\n<p class=\"meta\">", f);
    ntp__html_textf(f, "%s · loss %s · optimizer %s · backward %s · %d of %d configurations ran",
                    ntp_sweep_source(s->sw), ntp_loss_name(s->o.loss),
                    ntp_optimizer_name(s->o.optimizer), s->o.backend ? s->o.backend : "ref", ran,
                    s->n);
    fputs("</p>\n<h2>Memory by data structure</h2>\n<p class=\"note\">What one training step "
          "needs at once, by data structure, as the TBD benchmark suite draws it: the planner's "
          "figures at the topology's precision (activations are the interval-planned arena of "
          "the feature maps stashed for backward and their gradients). Every bar is to the "
          "same scale, the largest peak the full width: weights and gradients stay, the "
          "activations grow with the batch.</p>\n",
          f);
    if (ran > 0)
        memory_bars(f, s, most);
    ntp_hbar *bars = calloc((size_t)s->n + 1, sizeof *bars);
    if (bars && ran > 0) {
        int k = 0;
        for (int c = 0; c < s->n; c++) {
            const ntp_train_result *r = s->res[c];
            if (!r)
                continue;
            bars[k++] =
                (ntp_hbar){.label = ntp_sweep_config_label(s->sw, c),
                           .value = (double)r->plan->engine_bytes / 1e6,
                           .lo = NAN,
                           .hi = NAN,
                           .value2 = r->rss_peak_bytes >= 0 ? (double)r->rss_peak_bytes / 1e6 : NAN,
                           .lo2 = NAN,
                           .hi2 = NAN,
                           .tooltip = ntp_sweep_config_label(s->sw, c)};
        }
        fputs("<h2>Planned against measured</h2>\n<p class=\"note\">The planner's count of what "
              "this reference engine allocates (every tensor in doubles, held for the run) "
              "beside the measured growth of the process's resident-set high-water mark "
              "(VmHWM) over the run.</p>\n",
              f);
        ntp__svg_hbars(f, "train-measured", "MB", bars, k, "engine plan", "measured");
    }
    free(bars);
    memory_table(f, s);
    ntp__html_end(f);
    return ntp__check_stream(ctx, f, "html");
}
