/* The HTML pages of training (docs/train.md): of a training sweep
 * (ntprof sweep --train --html), of one training run (ntprof train --html)
 * and of a training plan (ntprof analyze --train --html). Each shows the
 * memory of its configurations (one for a run or a plan) by data structure as
 * the TBD benchmark suite draws it — weights, weight gradients, optimizer
 * state, stashed activations (and their gradients), workspace, other — as
 * stacked bars to one scale, so the growth of the feature maps with the
 * batch is visible; the planned peak against the measured one; and the
 * table with every figure. Self-contained, as every ntprof page
 * (docs/html.md). Each segment carries its bytes (data-bytes), the same
 * integers as the JSON's memory object; the per-layer table of a run
 * carries each phase's median milliseconds (data-ms, as the JSON writes
 * them), that of a plan each phase's FLOPs (data-flops), the JSON's
 * integers. One piece of code draws the memory of the three pages. */
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

/* One configuration of a page: its label, its plan (NULL: it failed,
 * with err), its result (NULL for a plan without a run). */
typedef struct mem_row {
    const char *label;
    const ntp_train_plan *plan;
    const ntp_train_result *res;
    const char *err;
} mem_row;

/* One row of stacked segments per configuration that has a plan, scaled
 * to the largest peak; a legend below. */
static void memory_bars(FILE *f, const mem_row *rows, int n, int64_t most)
{
    const double W = 1000, label_w = 200, right = 90, top = 10, row = 26, bar_h = 18;
    int drawn = 0;
    for (int c = 0; c < n; c++)
        drawn += rows[c].plan != NULL;
    double plot_w = W - label_w - right, H = top + drawn * row + 40;
    fprintf(f,
            "<svg class=\"chart\" id=\"train-memory\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
            "height=\"%.0f\" role=\"img\">\n",
            W, H, W, H);
    char b[2][32];
    int r = 0;
    for (int c = 0; c < n; c++) {
        if (!rows[c].plan)
            continue;
        const char *label = rows[c].label;
        int64_t v[NTP__TRAIN_MEM_PARTS];
        ntp__train_mem_values(&rows[c].plan->memory, v);
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
    double lx = label_w, ly = top + drawn * row + 14;
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

static void memory_table(FILE *f, const mem_row *rows, int n)
{
    fputs("<h2>Every configuration</h2>\n<div class=\"scroll\"><table><tr>"
          "<th class=\"l\">configuration</th><th>batch</th><th>weights</th><th>gradients</th>"
          "<th>optimizer state</th><th>activations</th><th>workspace</th><th>other</th>"
          "<th>peak</th><th>activations %</th><th>engine plan</th><th>allocated</th>"
          "<th>measured</th><th>diff %</th><th>step ms</th><th>samples/s</th></tr>\n",
          f);
    for (int c = 0; c < n; c++) {
        const ntp_train_plan *p = rows[c].plan;
        const ntp_train_result *r = rows[c].res;
        fputs("<tr><td class=\"l\">", f);
        ntp__html_text(f, rows[c].label);
        fputs("</td>", f);
        if (!p) {
            fputs("<td class=\"l slower\" colspan=\"15\">failed: ", f);
            ntp__html_text(f, rows[c].err ? rows[c].err : "failed");
            fputs("</td></tr>\n", f);
            continue;
        }
        int64_t v[NTP__TRAIN_MEM_PARTS];
        ntp__train_mem_values(&p->memory, v);
        fprintf(f, "<td>%lld</td>", (long long)p->batch);
        for (int k = 0; k < NTP__TRAIN_MEM_PARTS; k++)
            bytes_cell(f, v[k], true);
        ntp__html_num_cell(f, v[6] > 0 ? 100.0 * (double)v[3] / (double)v[6] : NAN, false);
        bool have = r && r->rss_peak_bytes >= 0;
        bytes_cell(f, p->engine_bytes, true);
        bytes_cell(f, r ? r->allocated_bytes : 0, r != NULL);
        bytes_cell(f, have ? r->rss_peak_bytes : 0, have);
        ntp__html_num_cell(f,
                           have && p->engine_bytes > 0
                               ? 100.0 * (double)(r->rss_peak_bytes - p->engine_bytes) /
                                     (double)p->engine_bytes
                               : NAN,
                           false);
        ntp__html_num_cell(f, r ? r->step.median : NAN, false);
        ntp__html_num_cell(f, r ? r->samples_per_s : NAN, false);
        fputs("</tr>\n", f);
    }
    fputs("</table></div>\n", f);
}

/* The memory part of a page: the stacked bars by data structure, the
 * planned against measured peak of the configurations that ran, the table. */
static void memory_part(FILE *f, const mem_row *rows, int n)
{
    int64_t most = 0;
    int planned = 0, ran = 0;
    for (int c = 0; c < n; c++)
        if (rows[c].plan) {
            planned++;
            ran += rows[c].res != NULL;
            if (rows[c].plan->memory.peak > most)
                most = rows[c].plan->memory.peak;
        }
    fputs("<h2>Memory by data structure</h2>\n<p class=\"note\">What one training step "
          "needs at once, by data structure, as the TBD benchmark suite draws it: the planner's "
          "figures at the topology's precision (activations are the interval-planned arena of "
          "the feature maps stashed for backward and their gradients). Every bar is to the "
          "same scale, the largest peak the full width: weights and gradients stay, the "
          "activations grow with the batch.</p>\n",
          f);
    if (planned > 0)
        memory_bars(f, rows, n, most);
    ntp_hbar *bars = calloc((size_t)n + 1, sizeof *bars);
    if (bars && ran > 0) {
        int k = 0;
        for (int c = 0; c < n; c++) {
            const ntp_train_result *r = rows[c].res;
            if (!rows[c].plan || !r)
                continue;
            bars[k++] =
                (ntp_hbar){.label = rows[c].label,
                           .value = (double)rows[c].plan->engine_bytes / 1e6,
                           .lo = NAN,
                           .hi = NAN,
                           .value2 = r->rss_peak_bytes >= 0 ? (double)r->rss_peak_bytes / 1e6 : NAN,
                           .lo2 = NAN,
                           .hi2 = NAN,
                           .tooltip = rows[c].label};
        }
        fputs("<h2>Planned against measured</h2>\n<p class=\"note\">The planner's count of what "
              "this reference engine allocates (every tensor in doubles, held for the run) "
              "beside the measured growth of the process's resident-set high-water mark "
              "(VmHWM) over the run.</p>\n",
              f);
        ntp__svg_hbars(f, "train-measured", "MB", bars, k, "engine plan", "measured");
    }
    free(bars);
    memory_table(f, rows, n);
}

ntp_status ntp_report_write_train_sweep_html(ntp_ctx *ctx, const ntp_train_sweep *s, FILE *f)
{
    if (!s || !f)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_train_sweep_html: no training sweep");
    mem_row *rows = calloc((size_t)s->n + 1, sizeof *rows);
    if (!rows)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "training sweep page: out of memory");
    int ran = 0;
    for (int c = 0; c < s->n; c++) {
        const ntp_train_result *r = s->res[c];
        rows[c] = (mem_row){ntp_sweep_config_label(s->sw, c), r ? r->plan : NULL, r, s->err[c]};
        ran += r != NULL;
    }
    ntp__html_begin(f, "ntprof training sweep");
    fputs("<h1>Training memory</h1>\n<p class=\"meta\">", f);
    ntp__html_textf(f, "%s · loss %s · optimizer %s · backend %s · %d of %d configurations ran",
                    ntp_sweep_source(s->sw), ntp_loss_name(s->o.loss),
                    ntp_optimizer_name(s->o.optimizer), s->o.backend ? s->o.backend : "ref", ran,
                    s->n);
    fputs("</p>\n", f);
    memory_part(f, rows, s->n);
    free(rows);
    ntp__html_end(f);
    return ntp__check_stream(ctx, f, "html");
}

/* A cell with a number shown as %.4g and carried in `attr` as the JSON
 * writes it (15 significant digits, src/core/writers.c). */
static void exact_cell(FILE *f, const char *attr, double v)
{
    if (!isfinite(v)) {
        fputs("<td>-</td>", f);
        return;
    }
    fprintf(f, "<td %s=\"%.15g\">%.4g</td>", attr, v, v);
}

static void phase_header(FILE *f, const char *first)
{
    fprintf(f, "<div class=\"scroll\"><table id=\"train-layers\"><tr><th class=\"l\">layer</th>"
               "<th class=\"l\">type</th>");
    for (int ph = 0; ph < NTP_TRAIN_PHASE_COUNT; ph++) {
        fputs("<th>", f);
        ntp__html_text(f, ntp_train_phase_name((ntp_train_phase)ph));
        fputs("</th>", f);
    }
    fprintf(f, "%s</tr>\n", first);
}

static void layer_cells(FILE *f, int i, const char *name, const char *type)
{
    fprintf(f, "<tr data-layer=\"%d\"><td class=\"l\">", i);
    ntp__html_text(f, name);
    fputs("</td><td class=\"l\">", f);
    ntp__html_text(f, type);
    fputs("</td>", f);
}

/* The loss of every step as a line (and a point per step), and, for a
 * bf16 mixed-precision run, the same steps at f32 beside it. Each point
 * carries its curve, step and loss as the JSON writes them (data-loss,
 * 15 significant digits). */
static void loss_chart(FILE *f, const ntp_train_result *r)
{
    const double W = 1000, H = 260, left = 70, right = 20, top = 12, bottom = 40;
    const double *curve[2] = {r->losses, r->losses_f32};
    const char *name[2] = {ntp_dtype_name(r->precision), "f32"};
    double lo = INFINITY, hi = -INFINITY;
    for (int c = 0; c < 2; c++)
        for (int k = 0; curve[c] && k < r->steps; k++)
            if (isfinite(curve[c][k])) {
                lo = fmin(lo, curve[c][k]);
                hi = fmax(hi, curve[c][k]);
            }
    if (!(lo <= hi))
        return;
    if (hi - lo < 1e-12 * fmax(1.0, fabs(hi)))
        hi = lo + fmax(1e-6, 1e-3 * fabs(lo));
    double pw = W - left - right, ph = H - top - bottom;
    double xs = r->steps > 1 ? pw / (r->steps - 1) : 0.0;
    fputs("<h2>Loss per step</h2>\n", f);
    fprintf(f,
            "<svg class=\"chart\" id=\"train-loss\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
            "height=\"%.0f\" role=\"img\">\n",
            W, H, W, H);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n", left - 6, top + 4,
            hi);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n", left - 6,
            top + ph + 4, lo);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">step 1 to %d</text>\n",
            left + pw / 2, H - 8, r->steps);
    for (int c = 0; c < 2; c++) {
        if (!curve[c])
            continue;
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
                ntp__html_color(c));
        for (int k = 0; k < r->steps; k++)
            if (isfinite(curve[c][k]))
                fprintf(f, "%.2f,%.2f ", left + k * xs, top + ph * (hi - curve[c][k]) / (hi - lo));
        fputs("\"/>\n", f);
        for (int k = 0; k < r->steps; k++) {
            if (!isfinite(curve[c][k]))
                continue;
            fprintf(f,
                    "<circle class=\"loss\" data-curve=\"%s\" data-step=\"%d\" "
                    "data-loss=\"%.15g\" cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"%s\"><title>",
                    name[c], k + 1, curve[c][k], left + k * xs,
                    top + ph * (hi - curve[c][k]) / (hi - lo), ntp__html_color(c));
            ntp__html_textf(f, "%s, step %d: loss %.6g", name[c], k + 1, curve[c][k]);
            fputs("</title></circle>\n", f);
        }
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                "<text x=\"%.1f\" y=\"%.1f\">",
                left + 10 + c * 200, H - 22, ntp__html_color(c), left + 26 + c * 200, H - 12);
        ntp__html_text(f, c == 0 && r->losses_f32 ? "bf16 mixed precision" : name[c]);
        fputs("</text>\n", f);
    }
    fputs("</svg>\n", f);
}

ntp_status ntp_report_write_train_html(ntp_ctx *ctx, const ntp_train_result *r, FILE *f)
{
    if (!r || !f)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_train_html: no training result");
    const mem_row row = {r->model, r->plan, r, NULL};
    ntp__html_begin(f, "ntprof training");
    fputs("<h1>Training</h1>\n<p class=\"meta\">", f);
    ntp__html_textf(f,
                    "%s · batch %lld · %d steps · loss %s · optimizer %s (lr %g) · backend %s · "
                    "step %.4g ms (median) · %.4g samples/s",
                    r->model, (long long)r->batch, r->steps, ntp_loss_name(r->loss),
                    ntp_optimizer_name(r->optimizer), r->lr, r->backend ? r->backend : "ref",
                    r->step.median, r->samples_per_s);
    fputs("</p>\n", f);
    memory_part(f, &row, 1);
    loss_chart(f, r);
    fputs("<h2>Time per layer and phase</h2>\n<p class=\"note\">The median milliseconds of "
          "each phase of a step over the steps; share is the layer's part of the median step; "
          "forward by and backward by name who ran its forward and its backward.</p>\n",
          f);
    phase_header(f, "<th>share %</th><th class=\"l\">forward by</th><th "
                    "class=\"l\">backward by</th>");
    for (int i = 0; i < r->n_layers; i++) {
        const ntp_train_layer *l = &r->layers[i];
        double sum = 0.0;
        layer_cells(f, i, l->name, l->type);
        for (int ph = 0; ph < NTP_TRAIN_PHASE_COUNT; ph++) {
            exact_cell(f, "data-ms", l->has[ph] ? l->phase[ph].median : NAN);
            sum += l->has[ph] ? l->phase[ph].median : 0.0;
        }
        ntp__html_num_cell(f, r->step.median > 0 ? 100.0 * sum / r->step.median : NAN, false);
        fputs("<td class=\"l\">", f);
        ntp__html_text(f, l->forward_by ? l->forward_by : "-");
        fputs("</td><td class=\"l\">", f);
        ntp__html_text(f, l->backward_by ? l->backward_by : "-");
        fputs("</td></tr>\n", f);
    }
    fputs("</table></div>\n", f);
    ntp__html_end(f);
    return ntp__check_stream(ctx, f, "html");
}

ntp_status ntp_report_write_train_plan_html(ntp_ctx *ctx, const ntp_train_plan *p,
                                            const char *model, FILE *f)
{
    if (!p || !f)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_train_plan_html: no training plan");
    const char *label = model ? model : "plan";
    const mem_row row = {label, p, NULL, NULL};
    ntp__html_begin(f, "ntprof training plan");
    fputs("<h1>Training plan</h1>\n<p class=\"meta\">", f);
    ntp__html_textf(f, "%s · batch %lld · %s · loss %s · optimizer %s · %.4g GFLOP per step", label,
                    (long long)p->batch, ntp_dtype_name(p->precision), ntp_loss_name(p->loss),
                    ntp_optimizer_name(p->optimizer), (double)p->step_flops / 1e9);
    fputs("</p>\n", f);
    memory_part(f, &row, 1);
    fputs("<h2>FLOPs per layer and phase</h2>\n<p class=\"note\">What each phase of a step "
          "computes, without running; stashed is the activation bytes the layer's backward "
          "keeps alive.</p>\n",
          f);
    phase_header(f, "<th>stashed</th>");
    for (int i = 0; i < p->n_layers; i++) {
        const ntp_train_layer_cost *l = &p->layers[i];
        layer_cells(f, i, l->name, l->type);
        for (int ph = 0; ph < NTP_TRAIN_PHASE_COUNT; ph++)
            fprintf(f, "<td data-flops=\"%lld\">%.4g</td>", (long long)l->flops[ph],
                    (double)l->flops[ph]);
        bytes_cell(f, l->stashed_bytes, true);
        fputs("</tr>\n", f);
    }
    fputs("</table></div>\n", f);
    ntp__html_end(f);
    return ntp__check_stream(ctx, f, "html");
}

ntp_status ntp_report_write_train_plans_html(ntp_ctx *ctx, const ntp_train_plan *const *plans,
                                             int n, const char *model, FILE *f)
{
    if (!plans || n < 1 || !f)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_train_plans_html: no training plans");
    mem_row *rows = calloc((size_t)n, sizeof *rows);
    char(*labels)[32] = calloc((size_t)n, sizeof *labels);
    if (!rows || !labels) {
        free(rows);
        free(labels);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "training plans page: out of memory");
    }
    for (int c = 0; c < n; c++) {
        snprintf(labels[c], sizeof labels[c], "batch=%lld", (long long)plans[c]->batch);
        rows[c] = (mem_row){labels[c], plans[c], NULL, NULL};
    }
    const ntp_train_plan *p0 = plans[0];
    ntp__html_begin(f, "ntprof training plans");
    fputs("<h1>Training memory by batch</h1>\n<p class=\"meta\">", f);
    ntp__html_textf(f, "%s · %d batch sizes · %s · loss %s · optimizer %s · planned, not run",
                    model ? model : "plan", n, ntp_dtype_name(p0->precision),
                    ntp_loss_name(p0->loss), ntp_optimizer_name(p0->optimizer));
    fputs("</p>\n", f);
    memory_part(f, rows, n);
    free(rows);
    free(labels);
    ntp__html_end(f);
    return ntp__check_stream(ctx, f, "html");
}
