/* The prediction beside the measurement in comparisons and HTML reports
 * (docs/predict.md): each run's summary, and the layers whose prediction
 * is furthest from the measurement, where the latency model is wrong. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare-impl.h"
#include "html-impl.h"
#include "measure/measure-impl.h"

void ntp__prediction_summary(const ntp_run_prediction *p, char *buf, size_t len)
{
    int n = p->n_compared > 0 ? p->n_compared : 1;
    snprintf(buf, len,
             "%s %.4g ms, measured %.4g ms (%+.1f%%); layers within +-10%%: %d of %d (%.0f%%), "
             "within +-25%%: %d (%.0f%%); layers over 1%% of the time within +-25%%: %d of %d%s%s",
             p->roofline_only ? "roofline-only estimate" : "predicted", p->predicted_ms,
             p->measured_ms, 100.0 * p->error, p->within_10, p->n_compared,
             100.0 * p->within_10 / n, p->within_25, 100.0 * p->within_25 / n, p->major_within_25,
             p->n_major, p->stale ? "; STALE calibration" : "",
             p->threads_differ ? "; calibrated at another thread count" : "");
}

/* The bandwidth half of ntp__prediction_machine_note, into buf: the bus
 * around the run, then around the calibration. */
static bool bandwidth_note(const ntp_bandwidth_check *b, const ntp_run_prediction *p, char *buf,
                           size_t len)
{
    buf[0] = '\0';
    size_t used = 0;
    if (b->measured && b->low) {
        used = (size_t)snprintf(
            buf, len,
            "memory bandwidth read low around this run (%.0f%% of this machine's DRAM triad): "
            "a memory-bound layer's error may be the machine's, not the model's",
            100 * ntp__bandwidth_low_share(b));
    } else if (b->measured && b->high) {
        double gbps = b->after_gbps > b->before_gbps ? b->after_gbps : b->before_gbps;
        used = (size_t)snprintf(
            buf, len,
            "memory bandwidth read %.1fx the stored DRAM triad ceiling around this run: "
            "the ceilings, and a calibration measured beside them, may be another "
            "machine's or a busier bus's; a memory-bound layer's error may be theirs",
            gbps / b->ceiling_gbps);
    }
    if (p->calibration_bus_low && used < len)
        used += (size_t)snprintf(
            buf + used, len - used,
            "%sthe calibration's memory-bus probes read %.0f%% of this machine's DRAM triad: "
            "memory-bound layers may be priced for a slower bus "
            "(docs/predict.md#the-calibrations-memory-bus)",
            used ? "; " : "", 100 * p->calibration_bus_share);
    return used > 0;
}

bool ntp__prediction_machine_note(const ntp_run_result *r, char *buf, size_t len)
{
    buf[0] = '\0';
    const ntp_run_prediction *p = &r->prediction;
    if (!p->available)
        return false;
    char bw[640] = "";
    bandwidth_note(&r->env.contention.bandwidth, p, bw, sizeof bw);
    size_t used = (size_t)snprintf(buf, len, "%s", bw);
    const ntp_handoff_check *h = &r->env.contention.handoff;
    if (ntp_handoff_flagged(h) && used < len)
        used += (size_t)snprintf(
            buf + used, len - used,
            "%sthe run's CPUs did not share a cache around it (one read the other's writes "
            "%.1fx slower than its own, docs/run.md#handoff), and the calibration keeps the "
            "timings of CPUs that did: a layer's error may be the placement's, not the model's",
            used ? "; " : "", ntp_handoff_worst(h));
    /* A CPU slowed under some of the run's iterations (docs/run.md#pace):
     * the prediction against the others. */
    const ntp_pace_check *q = &r->env.contention.pace;
    const int k = ntp_pace_slowest(q);
    if (q->slowed && k >= 0 && q->clear_ms > 0 && used < len)
        used += (size_t)snprintf(
            buf + used, len - used,
            "%sCPU %d ran slowed under %d of the run's iterations (its pace down to %.2fx the "
            "run's best, docs/run.md#pace): over the %d others, %.4g ms, the prediction is "
            "%+.1f%%; a layer's error may be the machine's, not the model's",
            used ? "; " : "", q->cpu[k], q->slow_n, q->low[k] / q->best, q->clear_n, q->clear_ms,
            100.0 * (p->predicted_ms - q->clear_ms) / q->clear_ms);
    else if (q->throughout && k >= 0 && used < len)
        used += (size_t)snprintf(
            buf + used, len - used,
            "%sCPU %d ran slowed throughout the run (its looks %.2f-%.2fx the run's best, "
            "docs/run.md#pace), and the calibration keeps unslowed timings: a layer's error may "
            "be the machine's, not the model's",
            used ? "; " : "", q->cpu[k], q->low[k] / q->best, q->high[k] / q->best);
    /* Every CPU slowed throughout: the run's best look under the
     * calibration's (its reference; the run's own best is no reference
     * then). */
    if (ntp__prediction_below_pace(r) && used < len) {
        /* A threaded backend's calibration is not paced: the pace is a
         * paced calibration's of the same machine (ref's), named. */
        char whose[48] = "the calibration's";
        const char *pb = p->calibration_pace_backend;
        if (pb[0] && (!r->backend || strcmp(pb, r->backend) != 0))
            snprintf(whose, sizeof whose, "%.31s's calibration's", pb);
        used += (size_t)snprintf(
            buf + used, len - used,
            "%sthe run's best pace look read %.2fx %s (%.1f GFLOP/s against %.1f, under "
            "%.2fx: every CPU ran slowed throughout, docs/run.md#pace), and the calibration "
            "keeps unslowed timings: a layer's error may be the machine's, not the model's",
            used ? "; " : "", q->best / p->calibration_pace_gflops, whose, q->best,
            p->calibration_pace_gflops, NTP_PACE_SLOW_SHARE);
    }
    return used > 0;
}

bool ntp__prediction_below_pace(const ntp_run_result *r)
{
    const ntp_pace_check *q = &r->env.contention.pace;
    const double cal = r->prediction.calibration_pace_gflops;
    return r->prediction.available && q->measured && q->best > 0 && cal > 0 &&
           q->best < NTP_PACE_SLOW_SHARE * cal;
}

bool ntp__prediction_placement_line(const ntp_run_result *r, char *buf, size_t len)
{
    buf[0] = '\0';
    const ntp_run_prediction *p = &r->prediction;
    const ntp_handoff_check *h = &r->env.contention.handoff;
    if (!p->available || !ntp_handoff_split_shown(h))
        return false;
    snprintf(buf, len,
             "while the CPUs shared a cache, measured %.4g ms over %d iterations (predicted "
             "%+.1f%%); while apart, %.4g ms over %d (%+.1f%%)",
             h->together_ms, h->together_n,
             100.0 * (p->predicted_ms - h->together_ms) / h->together_ms, h->apart_ms, h->apart_n,
             100.0 * (p->predicted_ms - h->apart_ms) / h->apart_ms);
    return true;
}

/* The row of run r at index i when it is one predicted layer row. */
static const ntp_layer_result *predicted_row(const ntp_run_result *r, int i)
{
    if (i < 0 || i >= r->n_layers || !r->layers[i].predicted)
        return NULL;
    return &r->layers[i];
}

bool ntp__compare_side_pred(const ntp_comparison *c, const ntp_compare_pair *p,
                            const ntp_compare_row *row, bool other, double *pred_ms,
                            double *meas_ms)
{
    /* A fused group sums several rows on a side: no one prediction. */
    if (row->align == NTP_ALIGN_FUSED)
        return false;
    const ntp_layer_result *l = other ? predicted_row(c->runs[p->other], row->other_index)
                                      : predicted_row(c->runs[p->base], row->base_index);
    if (!l || !(l->time_ms.median > 0))
        return false;
    *pred_ms = l->predicted_ms;
    *meas_ms = l->time_ms.median;
    return true;
}

/* The larger |predicted - measured| in ms of a row's two sides. */
static double row_miss(const ntp_comparison *c, const ntp_compare_pair *p, const ntp_compare_row *r)
{
    double miss = -1, pr, m;
    for (int side = 0; side < 2; side++)
        if (ntp__compare_side_pred(c, p, r, side == 1, &pr, &m))
            miss = fmax(miss, fabs(pr - m));
    return miss;
}

typedef struct {
    int idx;
    double miss;
} ranked;

static int by_miss_desc(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->miss != y->miss)
        return x->miss < y->miss ? 1 : -1;
    return x->idx - y->idx;
}

int ntp__compare_pred_rows(const ntp_comparison *c, const ntp_compare_pair *p, int *idx, int max)
{
    ranked *r = calloc((size_t)p->n_rows + 1, sizeof *r);
    if (!r)
        return 0;
    int n = 0;
    for (int i = 0; i < p->n_rows; i++) {
        double miss = row_miss(c, p, &p->rows[i]);
        if (miss >= 0)
            r[n++] = (ranked){i, miss};
    }
    qsort(r, (size_t)n, sizeof *r, by_miss_desc);
    int k = n < max ? n : max;
    for (int i = 0; i < k; i++)
        idx[i] = r[i].idx;
    free(r);
    return k;
}

/* --- HTML --------------------------------------------------------------------------------- */

void ntp__html_pred_cells(FILE *f, double pred_ms, double meas_ms, bool have)
{
    if (!have) {
        fputs("<td>-</td><td>-</td>", f);
        return;
    }
    ntp__html_num_cell(f, pred_ms, false);
    double e = meas_ms > 0 ? (pred_ms - meas_ms) / meas_ms : NAN;
    if (!isfinite(e)) {
        fputs("<td>-</td>", f);
        return;
    }
    /* Beyond +-25%: the model is wrong there (docs/predict.md). */
    fprintf(f, "<td%s>%+.0f%%</td>", fabs(e) > 0.25 ? " class=\"slower\"" : "", 100 * e);
}

void ntp__html_prediction_card(FILE *f, const ntp_run_prediction *p, const char *who)
{
    if (!p->available)
        return;
    char s[512];
    ntp__prediction_summary(p, s, sizeof s);
    fputs("<p class=\"meta\">", f);
    ntp__html_textf(f, "%s%sprediction: %s; calibration %s", who ? who : "", who ? ": " : "", s,
                    p->calibration);
    if (p->uncalibrated[0])
        ntp__html_textf(f, "; not predicted: %s", p->uncalibrated);
    if (p->weights_note[0])
        ntp__html_textf(f, "; %s", p->weights_note);
    fputs("</p>\n", f);
}

#define MAX_PRED_ROWS 10

void ntp__html_prediction_run(FILE *f, const ntp_run_result *r)
{
    const ntp_run_prediction *p = &r->prediction;
    if (!p->available)
        return;
    fputs("<h2>Prediction beside measurement</h2>\n", f);
    ntp__html_prediction_card(f, p, NULL);
    char note[1024];
    if (ntp__prediction_machine_note(r, note, sizeof note)) {
        fputs("<p class=\"warn\">", f);
        ntp__html_text(f, note);
        fputs("</p>\n", f);
    }
    if (ntp__prediction_placement_line(r, note, sizeof note)) {
        fputs("<p>", f);
        ntp__html_text(f, note);
        fputs("</p>\n", f);
    }
    /* The layers the model misses by the most milliseconds. */
    ranked *k = calloc((size_t)r->n_layers + 1, sizeof *k);
    if (!k)
        return;
    int n = 0;
    for (int i = 0; i < r->n_layers; i++)
        if (r->layers[i].predicted && r->layers[i].time_ms.median > 0)
            k[n++] = (ranked){i, fabs(r->layers[i].predicted_ms - r->layers[i].time_ms.median)};
    qsort(k, (size_t)n, sizeof *k, by_miss_desc);
    if (n > 0) {
        fputs("<h3>Largest prediction errors</h3>\n<div class=\"scroll\"><table><tr>"
              "<th class=\"l\">layer</th><th class=\"l\">type</th><th>measured ms</th>"
              "<th>predicted ms</th><th>error</th><th>miss ms</th></tr>\n",
              f);
        for (int i = 0; i < n && i < MAX_PRED_ROWS; i++) {
            const ntp_layer_result *l = &r->layers[k[i].idx];
            fputs("<tr><td class=\"l\">", f);
            ntp__html_text(f, l->name);
            fputs("</td><td class=\"l\">", f);
            ntp__html_text(f, l->type);
            fputs("</td>", f);
            ntp__html_num_cell(f, l->time_ms.median, false);
            ntp__html_pred_cells(f, l->predicted_ms, l->time_ms.median, true);
            ntp__html_num_cell(f, k[i].miss, false);
            fputs("</tr>\n", f);
        }
        fputs("</table></div>\n", f);
    }
    free(k);
}

void ntp__html_prediction_pair(FILE *f, const ntp_comparison *c, const ntp_compare_pair *p,
                               const char *A, const char *B)
{
    const ntp_run_result *ra = c->runs[p->base], *rb = c->runs[p->other];
    if (!ra->prediction.available && !rb->prediction.available)
        return;
    fputs("<h3>Prediction beside measurement</h3>\n", f);
    ntp__html_prediction_card(f, &ra->prediction, A);
    ntp__html_prediction_card(f, &rb->prediction, B);
    int idx[MAX_PRED_ROWS];
    int n = ntp__compare_pred_rows(c, p, idx, MAX_PRED_ROWS);
    if (n == 0)
        return;
    fprintf(f,
            "<div class=\"scroll\"><table><tr><th class=\"l\">layer (largest miss first)</th>"
            "<th>%s ms</th><th>%s predicted</th><th>%s error</th>"
            "<th>%s ms</th><th>%s predicted</th><th>%s error</th></tr>\n",
            A, A, A, B, B, B);
    for (int i = 0; i < n; i++) {
        const ntp_compare_row *row = &p->rows[idx[i]];
        fputs("<tr><td class=\"l\">", f);
        ntp__html_text(f, row->name);
        fputs("</td>", f);
        for (int side = 0; side < 2; side++) {
            double pr = 0, m = 0;
            bool have = ntp__compare_side_pred(c, p, row, side == 1, &pr, &m);
            ntp__html_num_cell(f, side ? row->other.median : row->base.median,
                               side ? row->other_index < 0 : row->base_index < 0);
            ntp__html_pred_cells(f, pr, m, have);
        }
        fputs("</tr>\n", f);
    }
    fputs("</table></div>\n", f);
}
