/* Training plans and results as tables, JSON and CSV (docs/train.md). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "core/writers-impl.h"
#include "train-impl.h"

const char *const ntp__train_mem_keys[NTP__TRAIN_MEM_PARTS] = {
    "weights", "gradients", "optimizer_state", "activations", "workspace", "other", "peak"};

void ntp__train_mem_values(const ntp_train_memory *m, int64_t v[NTP__TRAIN_MEM_PARTS])
{
    v[0] = m->weights;
    v[1] = m->gradients;
    v[2] = m->optimizer_state;
    v[3] = m->activations;
    v[4] = m->workspace;
    v[5] = m->other;
    v[6] = m->peak;
}

static json_t *memory_json(bool *ok, const ntp_train_memory *m)
{
    json_t *o = json_object();
    int64_t v[7];
    ntp__train_mem_values(m, v);
    for (int i = 0; i < 7; i++)
        ntp__jset(ok, o, ntp__train_mem_keys[i], json_integer(v[i]));
    return o;
}

static void memory_table(FILE *f, const ntp_train_memory *m)
{
    int64_t v[7];
    ntp__train_mem_values(m, v);
    char b[32];
    fprintf(f, "\nmemory (bytes at the topology's precision)\n");
    for (int i = 0; i < 7; i++) {
        double share = m->peak > 0 ? 100.0 * (double)v[i] / (double)m->peak : 0.0;
        if (i == 6)
            ntp__put_linef(f, "  %-16s %10s", ntp__train_mem_keys[i],
                           ntp__human_bytes((double)v[i], b, 32));
        else
            ntp__put_linef(f, "  %-16s %10s  %5.1f%%", ntp__train_mem_keys[i],
                           ntp__human_bytes((double)v[i], b, 32), share);
    }
}

void ntp__train_mem_text(FILE *f, const ntp__train_mem_row *rows, int n)
{
    fprintf(f, "\nmemory by data structure (planned, at the topology's precision)\n");
    fprintf(f, "%-22s %6s %10s %10s %10s %10s %10s %10s %6s\n", "configuration", "batch", "weights",
            "gradients", "optimizer", "activations", "wksp+other", "peak", "act%");
    int64_t most = 0;
    for (int c = 0; c < n; c++)
        if (rows[c].plan && rows[c].plan->memory.peak > most)
            most = rows[c].plan->memory.peak;
    char b[6][32];
    for (int c = 0; c < n; c++) {
        ntp__put_cell(f, rows[c].label, 22, false);
        if (!rows[c].plan) {
            fprintf(f, " failed: %s\n", rows[c].err ? rows[c].err : "failed");
            continue;
        }
        const ntp_train_memory *m = &rows[c].plan->memory;
        fprintf(f, " %6lld %10s %10s %10s %10s %10s %10s %5.1f%%\n", (long long)rows[c].plan->batch,
                ntp__human_bytes((double)m->weights, b[0], 32),
                ntp__human_bytes((double)m->gradients, b[1], 32),
                ntp__human_bytes((double)m->optimizer_state, b[2], 32),
                ntp__human_bytes((double)m->activations, b[3], 32),
                ntp__human_bytes((double)(m->workspace + m->other), b[4], 32),
                ntp__human_bytes((double)m->peak, b[5], 32),
                m->peak > 0 ? 100.0 * (double)m->activations / (double)m->peak : 0.0);
    }
    /* TBD's figure: each peak a bar of 60 columns at the largest. */
    fputc('\n', f);
    for (int c = 0; c < n; c++) {
        if (!rows[c].plan || most <= 0)
            continue;
        const ntp_train_memory *m = &rows[c].plan->memory;
        int64_t part[4] = {m->weights, m->gradients, m->optimizer_state,
                           m->activations + m->workspace + m->other};
        const char sym[4] = {'W', 'G', 'O', 'A'};
        char bar[64];
        int k = 0;
        double acc = 0.0;
        for (int i = 0; i < 4; i++) {
            acc += (double)part[i];
            int upto = (int)(60.0 * acc / (double)most + 0.5);
            while (k < upto && k < 60)
                bar[k++] = sym[i];
        }
        bar[k] = '\0';
        fprintf(f, "batch %5lld |%-60s| %s\n", (long long)rows[c].plan->batch, bar,
                ntp__human_bytes((double)m->peak, b[0], 32));
    }
    fprintf(f, "             W weights  G gradients  O optimizer state  A activations, "
               "workspace, other\n");
}

static json_t *flops_json(bool *ok, const int64_t *fl)
{
    json_t *o = json_object();
    for (int ph = 0; ph < NTP_TRAIN_PHASE_COUNT; ph++)
        ntp__jset(ok, o, ntp_train_phase_name((ntp_train_phase)ph), json_integer(fl[ph]));
    return o;
}

ntp_status ntp_report_write_train_plan(ntp_ctx *ctx, const ntp_train_plan *p, ntp_format fmt,
                                       FILE *f)
{
    if (fmt == NTP_FORMAT_JSON) {
        bool ok = true;
        json_t *root = json_object(), *layers = json_array();
        ntp__jset(&ok, root, "precision", ntp__json_str(ntp_dtype_name(p->precision)));
        ntp__jset(&ok, root, "batch", json_integer(p->batch));
        ntp__jset(&ok, root, "loss", ntp__json_str(ntp_loss_name(p->loss)));
        ntp__jset(&ok, root, "optimizer", ntp__json_str(ntp_optimizer_name(p->optimizer)));
        ntp__jset(&ok, root, "memory", memory_json(&ok, &p->memory));
        ntp__jset(&ok, root, "flops", flops_json(&ok, p->flops));
        ntp__jset(&ok, root, "step_flops", json_integer(p->step_flops));
        ntp__jset(&ok, root, "step_to_forward",
                  ntp__json_num(p->forward_flops > 0
                                    ? (double)p->step_flops / (double)p->forward_flops
                                    : 0.0));
        for (int i = 0; i < p->n_layers; i++) {
            json_t *l = json_object();
            ntp__jset(&ok, l, "name", ntp__json_str(p->layers[i].name));
            ntp__jset(&ok, l, "type", ntp__json_str(p->layers[i].type));
            ntp__jset(&ok, l, "flops", flops_json(&ok, p->layers[i].flops));
            ntp__jset(&ok, l, "stashed_bytes", json_integer(p->layers[i].stashed_bytes));
            ntp__jpush(&ok, layers, l);
        }
        ntp__jset(&ok, root, "layers", layers);
        return ntp__json_finish(ctx, root, ok, f, "training plan");
    }
    if (fmt == NTP_FORMAT_CSV) {
        fprintf(f, "layer,type,forward_flops,backward_data_flops,backward_weights_flops,"
                   "update_flops,stashed_bytes\n");
        for (int i = 0; i < p->n_layers; i++) {
            const ntp_train_layer_cost *l = &p->layers[i];
            ntp__csv_str(f, l->name);
            fputc(',', f);
            ntp__csv_str(f, l->type);
            for (int ph = 0; ph < NTP_TRAIN_PHASE_COUNT; ph++) {
                fputc(',', f);
                ntp__csv_int(f, l->flops[ph]);
            }
            fputc(',', f);
            ntp__csv_int(f, l->stashed_bytes);
            fputc('\n', f);
        }
        return ntp__check_stream(ctx, f, "training plan");
    }
    char b[5][32];
    ntp__put_linef(f, "training plan: batch %lld, %s, loss %s, optimizer %s", (long long)p->batch,
                   ntp_dtype_name(p->precision), ntp_loss_name(p->loss),
                   ntp_optimizer_name(p->optimizer));
    fprintf(f, "\n%-24s %-14s %9s %9s %9s %9s %10s\n", "layer", "type", "fwd FLOP", "bwd-data",
            "bwd-wts", "update", "stashed");
    for (int i = 0; i < p->n_layers; i++) {
        const ntp_train_layer_cost *l = &p->layers[i];
        ntp__put_cell(f, l->name, 24, false);
        fputc(' ', f);
        ntp__put_cell(f, l->type, 14, false);
        for (int ph = 0; ph < NTP_TRAIN_PHASE_COUNT; ph++)
            fprintf(f, " %9s", ntp__human_count((double)l->flops[ph], b[ph], 32));
        fprintf(f, " %10s\n", ntp__human_bytes((double)l->stashed_bytes, b[4], 32));
    }
    fputc('\n', f);
    ntp__put_linef(f,
                   "FLOPs per step: forward %s, backward-data %s, backward-weights %s, "
                   "update %s",
                   ntp__human_count((double)p->flops[0], b[0], 32),
                   ntp__human_count((double)p->flops[1], b[1], 32),
                   ntp__human_count((double)p->flops[2], b[2], 32),
                   ntp__human_count((double)p->flops[3], b[3], 32));
    ntp__put_linef(f, "step %s FLOPs = %.2f x forward",
                   ntp__human_count((double)p->step_flops, b[4], 32),
                   p->forward_flops > 0 ? (double)p->step_flops / (double)p->forward_flops : 0.0);
    memory_table(f, &p->memory);
    return ntp__check_stream(ctx, f, "training plan");
}

ntp_status ntp_report_write_train_plans(ntp_ctx *ctx, const ntp_train_plan *const *plans, int n,
                                        const char *model, ntp_format fmt, FILE *f)
{
    if (!plans || n < 1 || !f)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_train_plans: no training plans");
    const ntp_train_plan *p0 = plans[0];
    if (fmt == NTP_FORMAT_JSON) {
        bool ok = true;
        json_t *root = json_object(), *rows = json_array();
        ntp__jset(&ok, root, "kind", ntp__json_str("train_plans"));
        ntp__jset(&ok, root, "model", ntp__json_str(model ? model : ""));
        ntp__jset(&ok, root, "precision", ntp__json_str(ntp_dtype_name(p0->precision)));
        ntp__jset(&ok, root, "loss", ntp__json_str(ntp_loss_name(p0->loss)));
        ntp__jset(&ok, root, "optimizer", ntp__json_str(ntp_optimizer_name(p0->optimizer)));
        for (int c = 0; c < n; c++) {
            json_t *o = json_object();
            ntp__jset(&ok, o, "batch", json_integer(plans[c]->batch));
            ntp__jset(&ok, o, "memory", memory_json(&ok, &plans[c]->memory));
            ntp__jset(&ok, o, "flops", flops_json(&ok, plans[c]->flops));
            ntp__jset(&ok, o, "step_flops", json_integer(plans[c]->step_flops));
            ntp__jset(&ok, o, "engine_planned_bytes", json_integer(plans[c]->engine_bytes));
            ntp__jpush(&ok, rows, o);
        }
        ntp__jset(&ok, root, "plans", rows);
        return ntp__json_finish(ctx, root, ok, f, "training plans");
    }
    if (fmt == NTP_FORMAT_CSV) {
        fputs("batch", f);
        for (int k = 0; k < NTP__TRAIN_MEM_PARTS; k++)
            fprintf(f, ",%s", ntp__train_mem_keys[k]);
        fputs(",step_flops,engine_planned_bytes\n", f);
        for (int c = 0; c < n; c++) {
            int64_t v[NTP__TRAIN_MEM_PARTS];
            ntp__train_mem_values(&plans[c]->memory, v);
            ntp__csv_int(f, plans[c]->batch);
            for (int k = 0; k < NTP__TRAIN_MEM_PARTS; k++) {
                fputc(',', f);
                ntp__csv_int(f, v[k]);
            }
            fputc(',', f);
            ntp__csv_int(f, plans[c]->step_flops);
            fputc(',', f);
            ntp__csv_int(f, plans[c]->engine_bytes);
            fputc('\n', f);
        }
        return ntp__check_stream(ctx, f, "training plans");
    }
    ntp__train_mem_row *rows = calloc((size_t)n, sizeof *rows);
    char(*labels)[32] = calloc((size_t)n, sizeof *labels);
    if (!rows || !labels) {
        free(rows);
        free(labels);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "training plans: out of memory");
    }
    for (int c = 0; c < n; c++) {
        snprintf(labels[c], sizeof labels[c], "batch=%lld", (long long)plans[c]->batch);
        rows[c] = (ntp__train_mem_row){labels[c], plans[c], NULL};
    }
    ntp__put_linef(f, "training plans of %s: %s, loss %s, optimizer %s", model ? model : "a model",
                   ntp_dtype_name(p0->precision), ntp_loss_name(p0->loss),
                   ntp_optimizer_name(p0->optimizer));
    ntp__train_mem_text(f, rows, n);
    char b[32];
    fputc('\n', f);
    for (int c = 0; c < n; c++)
        ntp__put_linef(f, "batch %lld: step %s FLOPs", (long long)plans[c]->batch,
                       ntp__human_count((double)plans[c]->step_flops, b, 32));
    free(rows);
    free(labels);
    return ntp__check_stream(ctx, f, "training plans");
}

static json_t *stats_json(bool *ok, const ntp_stats *s)
{
    json_t *o = json_object();
    ntp__jset(ok, o, "n", json_integer((json_int_t)s->n));
    ntp__jset(ok, o, "min", ntp__json_num(s->min));
    ntp__jset(ok, o, "median", ntp__json_num(s->median));
    ntp__jset(ok, o, "mean", ntp__json_num(s->mean));
    ntp__jset(ok, o, "p90", ntp__json_num(s->p90));
    ntp__jset(ok, o, "p99", ntp__json_num(s->p99));
    ntp__jset(ok, o, "max", ntp__json_num(s->max));
    ntp__jset(ok, o, "stddev", ntp__json_num(s->stddev));
    ntp__jset(ok, o, "ci95_lo", ntp__json_num(s->ci95_lo));
    ntp__jset(ok, o, "ci95_hi", ntp__json_num(s->ci95_hi));
    ntp__jset(ok, o, "cv", ntp__json_num(s->cv));
    return o;
}

/* The largest |loss - f32 loss| over the steps of a mixed-precision run. */
static double max_loss_gap(const ntp_train_result *r)
{
    double m = 0.0;
    for (int k = 0; r->losses_f32 && k < r->steps; k++)
        m = fmax(m, fabs(r->losses[k] - r->losses_f32[k]));
    return m;
}

ntp_status ntp_report_write_train(ntp_ctx *ctx, const ntp_train_result *r, ntp_format fmt, FILE *f)
{
    if (fmt == NTP_FORMAT_JSON) {
        bool ok = true;
        json_t *root = json_object(), *layers = json_array(), *losses = json_array();
        ntp__jset(&ok, root, "model", ntp__json_str(r->model));
        ntp__jset(&ok, root, "batch", json_integer(r->batch));
        ntp__jset(&ok, root, "steps", json_integer(r->steps));
        ntp__jset(&ok, root, "loss", ntp__json_str(ntp_loss_name(r->loss)));
        ntp__jset(&ok, root, "optimizer", ntp__json_str(ntp_optimizer_name(r->optimizer)));
        ntp__jset(&ok, root, "lr", ntp__json_num(r->lr));
        ntp__jset(&ok, root, "backend", ntp__json_str(r->backend ? r->backend : "ref"));
        ntp__jset(&ok, root, "step_ms", stats_json(&ok, &r->step));
        ntp__jset(&ok, root, "samples_per_s", ntp__json_num(r->samples_per_s));
        for (int k = 0; k < r->steps; k++)
            ntp__jpush(&ok, losses, ntp__json_num(r->losses[k]));
        ntp__jset(&ok, root, "losses", losses);
        ntp__jset(&ok, root, "precision", ntp__json_str(ntp_dtype_name(r->precision)));
        if (r->losses_f32) {
            json_t *l32 = json_array();
            for (int k = 0; k < r->steps; k++)
                ntp__jpush(&ok, l32, ntp__json_num(r->losses_f32[k]));
            ntp__jset(&ok, root, "losses_f32", l32);
        }
        ntp__jset(&ok, root, "memory", memory_json(&ok, &r->plan->memory));
        ntp__jset(&ok, root, "allocated_bytes", json_integer(r->allocated_bytes));
        ntp__jset(&ok, root, "engine_planned_bytes", json_integer(r->plan->engine_bytes));
        ntp__jset(&ok, root, "rss_peak_bytes", json_integer(r->rss_peak_bytes));
        ntp__jset(&ok, root, "flops", flops_json(&ok, r->plan->flops));
        for (int i = 0; i < r->n_layers; i++) {
            const ntp_train_layer *l = &r->layers[i];
            json_t *o = json_object();
            ntp__jset(&ok, o, "name", ntp__json_str(l->name));
            ntp__jset(&ok, o, "type", ntp__json_str(l->type));
            for (int ph = 0; ph < NTP_TRAIN_PHASE_COUNT; ph++)
                if (l->has[ph])
                    ntp__jset(&ok, o, ntp_train_phase_name((ntp_train_phase)ph),
                              stats_json(&ok, &l->phase[ph]));
            ntp__jset(&ok, o, "flops", flops_json(&ok, r->plan->layers[i].flops));
            if (l->forward_by)
                ntp__jset(&ok, o, "forward_by", ntp__json_str(l->forward_by));
            if (l->backward_by)
                ntp__jset(&ok, o, "backward_by", ntp__json_str(l->backward_by));
            if (l->backward_precision)
                ntp__jset(&ok, o, "backward_precision", ntp__json_str(l->backward_precision));
            ntp__jpush(&ok, layers, o);
        }
        ntp__jset(&ok, root, "layers", layers);
        return ntp__json_finish(ctx, root, ok, f, "training report");
    }
    if (fmt == NTP_FORMAT_CSV) {
        fprintf(f, "layer,type,phase,median_ms,mean_ms,p90_ms,min_ms,max_ms\n");
        for (int i = 0; i < r->n_layers; i++)
            for (int ph = 0; ph < NTP_TRAIN_PHASE_COUNT; ph++) {
                const ntp_train_layer *l = &r->layers[i];
                if (!l->has[ph])
                    continue;
                ntp__csv_str(f, l->name);
                fputc(',', f);
                ntp__csv_str(f, l->type);
                fputc(',', f);
                ntp__csv_str(f, ntp_train_phase_name((ntp_train_phase)ph));
                const ntp_stats *s = &l->phase[ph];
                double v[5] = {s->median, s->mean, s->p90, s->min, s->max};
                for (int j = 0; j < 5; j++) {
                    fputc(',', f);
                    ntp__csv_num(f, v[j]);
                }
                fputc('\n', f);
            }
        return ntp__check_stream(ctx, f, "training report");
    }
    ntp__put_linef(f, "train %s: batch %lld, %d steps, loss %s, optimizer %s (lr %g)", r->model,
                   (long long)r->batch, r->steps, ntp_loss_name(r->loss),
                   ntp_optimizer_name(r->optimizer), r->lr);
    bool by = r->backend && strcmp(r->backend, "ref") != 0;
    if (by)
        ntp__put_linef(f,
                       "forward and backward on %s where it has the layer's primitives (fwd "
                       "by, bwd by), the rest on the reference engine",
                       r->backend);
    fprintf(f, "\nmedian ms per step        %-14s %9s %9s %9s %9s %6s%s\n", "type", "forward",
            "bwd-data", "bwd-wts", "update", "share", by ? "  fwd by  bwd by" : "");
    double total = r->step.median;
    char b[NTP_TRAIN_PHASE_COUNT][16];
    for (int i = 0; i < r->n_layers; i++) {
        const ntp_train_layer *l = &r->layers[i];
        double sum = 0.0;
        ntp__put_cell(f, l->name, 25, false);
        fputc(' ', f);
        ntp__put_cell(f, l->type, 14, false);
        for (int ph = 0; ph < NTP_TRAIN_PHASE_COUNT; ph++) {
            if (l->has[ph]) {
                sum += l->phase[ph].median;
                ntp__fit_number(l->phase[ph].median, 9, 3, b[ph], sizeof b[ph]);
            } else {
                strcpy(b[ph], "-");
            }
            fprintf(f, " %9s", b[ph]);
        }
        fprintf(f, " %5.1f%%", total > 0 ? 100.0 * sum / total : 0.0);
        if (by)
            fprintf(f, "  %-6s  %s", l->forward_by ? l->forward_by : "-",
                    l->backward_by ? l->backward_by : "-");
        fputc('\n', f);
    }
    fputc('\n', f);
    ntp__put_linef(f,
                   "step: median %.3f ms (95%% CI %.3f-%.3f), mean %.3f, p90 %.3f, min %.3f, "
                   "max %.3f",
                   r->step.median, r->step.ci95_lo, r->step.ci95_hi, r->step.mean, r->step.p90,
                   r->step.min, r->step.max);
    ntp__put_linef(
        f, "throughput: %.3g samples/s; loss %.6g after the first forward, %.6g at the last",
        r->samples_per_s, r->losses[0], r->losses[r->steps - 1]);
    if (r->losses_f32)
        ntp__put_linef(f,
                       "bf16 mixed precision; the same steps at f32: loss %.6g first, %.6g "
                       "last; largest difference %.3g",
                       r->losses_f32[0], r->losses_f32[r->steps - 1], max_loss_gap(r));
    memory_table(f, &r->plan->memory);
    char ab[32];
    ntp__put_linef(f, "  (the reference engine holds %s in doubles)",
                   ntp__human_bytes((double)r->allocated_bytes, ab, sizeof ab));
    char pb[3][32];
    if (r->rss_peak_bytes >= 0)
        ntp__put_linef(f,
                       "peak: planned %s; this engine (doubles, unplanned): planned %s, "
                       "measured %s (resident-set high-water growth), %+.1f%%",
                       ntp__human_bytes((double)r->plan->memory.peak, pb[0], 32),
                       ntp__human_bytes((double)r->plan->engine_bytes, pb[1], 32),
                       ntp__human_bytes((double)r->rss_peak_bytes, pb[2], 32),
                       r->plan->engine_bytes > 0
                           ? 100.0 * (double)(r->rss_peak_bytes - r->plan->engine_bytes) /
                                 (double)r->plan->engine_bytes
                           : 0.0);
    return ntp__check_stream(ctx, f, "training report");
}
