/* A prediction without a run (ntprof predict, docs/predict.md): every
 * layer's predicted time with its terms and family, as a table, JSON or
 * CSV. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "core/writers-impl.h"
#include "machine/predict-impl.h"
#include "measure/measure-impl.h"
#include "ntprof/predict.h"
#include "report-impl.h"

static const char *fmt_ms(double ms, char *buf, size_t len)
{
    if (!isfinite(ms))
        return "n/a";
    return ntp__fit_number(ms, 9, 4, buf, len);
}

/* A predicted layer's note (what 0) or name (what 1), for ntp__put_reasons. */
static const char *predict_layer_text(const void *layers, int i, int what)
{
    const ntp_layer_prediction *l = (const ntp_layer_prediction *)layers + i;
    return what ? l->name : l->note;
}

/* Layers and copy rows in a run's order: each layer with its copies
 * before and after it, then those of no layer (unknown ones). NULL when
 * out of memory; *n the count. */
static const ntp_layer_prediction **in_run_order(const ntp_prediction *p, int *n)
{
    const ntp_layer_prediction **r = calloc((size_t)(p->n_layers + p->n_copies) + 1, sizeof *r);
    *n = 0;
    if (!r)
        return NULL;
    for (int i = 0; i < p->n_layers; i++) {
        for (int k = 0; k < p->n_copies; k++)
            if (p->copies[k].layer == i && p->copies[k].before)
                r[(*n)++] = &p->copies[k];
        r[(*n)++] = &p->layers[i];
        for (int k = 0; k < p->n_copies; k++)
            if (p->copies[k].layer == i && !p->copies[k].before)
                r[(*n)++] = &p->copies[k];
    }
    for (int k = 0; k < p->n_copies; k++)
        if (p->copies[k].layer < 0 || p->copies[k].layer >= p->n_layers)
            r[(*n)++] = &p->copies[k];
    return r;
}

/* A row's note (what 0) or name (what 1), rows an array of pointers. */
static const char *ordered_row_text(const void *rows, int i, int what)
{
    const ntp_layer_prediction *l = ((const ntp_layer_prediction *const *)rows)[i];
    return what ? l->name : l->note;
}

static void write_table(const ntp_prediction *p, FILE *f)
{
    const ntp_calibration *c = &p->cal;
    ntp__put_linef(f, "topology %s, batch %" PRId64, p->topology ? p->topology : "?", p->batch);
    if (p->roofline_only) {
        ntp__put_linef(f,
                       "ROOFLINE-ONLY ESTIMATE for %s (peak %.4g GFLOP/s at %s): no calibration, "
                       "each layer at max(FLOPs / peak, bytes / bandwidth); see docs/predict.md "
                       "for its typical error",
                       c->machine_key, c->peak_gflops, c->precision);
    } else {
        ntp__put_linef(f, "calibration: %s on %s (%s), %s, %d threads, %s%s", c->backend,
                       c->machine_key, c->backend_version, c->precision, c->threads,
                       c->calibrated_at, c->quick ? ", quick design" : "");
        ntp__put_linef(f, "timed with %s caches", c->cache[0] ? c->cache : "warm");
        if (c->bus.measured && c->bus.low) {
            char text[320];
            snprintf(text, sizeof text,
                     "read low during the calibration (%.0f%% of this machine's DRAM triad): "
                     "memory-bound layers may be priced for a slower bus "
                     "(docs/predict.md#the-calibrations-memory-bus)",
                     100 * ntp__bandwidth_low_share(&c->bus));
            ntp__put_wrapped(f, "memory bus: ", text);
        }
    }
    for (int k = 1; k < p->n_cals; k++)
        ntp__put_linef(f, "layers handed to %s: its calibration (%s), %s", p->cals[k].backend,
                       p->cals[k].backend_version, p->cals[k].calibrated_at);
    fputc('\n', f);
    static const int w[] = {24, 14, 10, 5, 10, 9, 9, 9, 8};
    static const char *const head[] = {"layer",   "type",   "family",   "level",  "pred ms",
                                       "compute", "memory", "overhead", "backend"};
    enum { NC = 9 };
    for (int i = 0; i < NC; i++) {
        if (i)
            fputc(' ', f);
        ntp__put_cell(f, head[i], w[i], i >= 4);
    }
    fputc('\n', f);
    for (int i = 0; i < NC; i++) {
        if (i)
            fputc(' ', f);
        for (int k = 0; k < w[i]; k++)
            fputc('-', f);
    }
    fputc('\n', f);
    int n_rows = 0;
    const ntp_layer_prediction **rows = in_run_order(p, &n_rows);
    for (int i = 0; rows && i < n_rows; i++) {
        const ntp_layer_prediction *l = rows[i];
        char a[32], b[32], cc[32], d[32];
        bool fused = l->fused_into != NULL;
        bool terms = isfinite(l->predicted_ms) && l->family != NTP_PREDICT_FAMILY_FREE && !fused;
        const char *cells[] = {l->name,
                               l->type,
                               ntp_predict_family_name(l->family),
                               l->level,
                               fused ? "fused" : fmt_ms(l->predicted_ms, a, sizeof a),
                               terms ? fmt_ms(l->compute_ms, b, sizeof b) : "-",
                               terms ? fmt_ms(l->memory_ms, cc, sizeof cc) : "-",
                               terms ? fmt_ms(l->overhead_ms, d, sizeof d) : "-",
                               l->backend};
        for (int k = 0; k < NC; k++) {
            if (k)
                fputc(' ', f);
            ntp__put_cell(f, cells[k] ? cells[k] : "", w[k], k >= 4 && k < NC - 1);
        }
        fputc('\n', f);
    }
    fputc('\n', f);
    int n_copies = 0;
    for (int k = 0; k < p->n_copies; k++)
        n_copies += isfinite(p->copies[k].predicted_ms);
    if (n_copies > 0)
        ntp__put_linef(f,
                       "predicted end to end: %.4g ms (sum of %d layers and %d reorder and "
                       "conversion rows, %.4g ms, from the prepared plan)",
                       p->total_ms, p->n_layers - p->n_unpredicted - p->n_fused, n_copies,
                       p->copies_ms);
    else
        ntp__put_linef(f, "predicted end to end: %.4g ms (sum of %d layers)%s", p->total_ms,
                       p->n_layers - p->n_unpredicted - p->n_fused,
                       p->roofline_only ? " -- a roofline-only estimate" : "");
    if (p->copies_note[0])
        ntp__put_wrapped(f, "", p->copies_note);
    if (p->weights_note[0])
        ntp__put_wrapped(f, "", p->weights_note);
    if (p->fused) {
        char text[256];
        snprintf(text, sizeof text,
                 "%d layer%s fused into the layer before them (kind fused), each group priced in "
                 "its head's row as its fused kernel",
                 p->n_fused, p->n_fused == 1 ? "" : "s");
        ntp__put_wrapped(f, "fused as `run --fuse` runs it: ", text);
    }
    if (p->uncalibrated[0])
        ntp__put_linef(f,
                       "not predicted: %d layer%s of families without a calibration (%s); "
                       "the total leaves them out",
                       p->n_unpredicted, p->n_unpredicted == 1 ? "" : "s", p->uncalibrated);
    /* Why each n/a layer is not predicted, each reason once. */
    if (rows)
        ntp__put_reasons(f, "", rows, n_rows, ordered_row_text);
    else
        ntp__put_reasons(f, "", p->layers, p->n_layers, predict_layer_text);
    free(rows);
}

static json_t *num_or_null(double v)
{
    return ntp__json_num(v);
}

static ntp_status write_json(ntp_ctx *ctx, const ntp_prediction *p, FILE *f)
{
    bool ok = true;
    const ntp_calibration *c = &p->cal;
    json_t *root = json_object();
    ntp__jset(&ok, root, "kind", json_string("prediction"));
    ntp__jset(&ok, root, "topology", ntp__json_str(p->topology));
    ntp__jset(&ok, root, "batch", json_integer(p->batch));
    ntp__jset(&ok, root, "roofline_only", json_boolean(p->roofline_only));
    json_t *cal = json_object();
    ntp__jset(&ok, cal, "machine", ntp__json_str(c->machine_key));
    ntp__jset(&ok, cal, "backend", ntp__json_str(c->backend));
    ntp__jset(&ok, cal, "backend_version", ntp__json_str(c->backend_version));
    ntp__jset(&ok, cal, "precision", ntp__json_str(c->precision));
    ntp__jset(&ok, cal, "threads", json_integer(c->threads));
    ntp__jset(&ok, cal, "calibrated_at", ntp__json_str(c->calibrated_at));
    ntp__jset(&ok, cal, "cache", json_string(c->cache[0] ? c->cache : "warm"));
    ntp__jset(&ok, cal, "passes", json_integer(c->passes > 0 ? c->passes : 1));
    ntp__jset(&ok, cal, "keep", json_string(c->keep[0] ? c->keep : "median"));
    ntp__jset(&ok, cal, "cpu_flags", json_string(c->cpu_flags));
    ntp__jset(&ok, cal, "cpu_signature", json_string(c->cpu_signature));
    double bus = ntp__bandwidth_low_share(&c->bus);
    ntp__jset(&ok, cal, "memory_bus_share", bus >= 0 ? ntp__json_num(bus) : json_null());
    ntp__jset(&ok, cal, "memory_bus_low", json_boolean(c->bus.measured && c->bus.low));
    json_t *also = json_array();
    for (int k = 1; k < p->n_cals; k++)
        ntp__jpush(&ok, also, ntp__json_str(p->cals[k].backend));
    ntp__jset(&ok, cal, "handed_to", also);
    ntp__jset(&ok, root, "calibration", cal);
    json_t *layers = json_array();
    int n_rows = 0;
    const ntp_layer_prediction **rows = in_run_order(p, &n_rows);
    if (!rows)
        ok = false;
    for (int i = 0; rows && i < n_rows; i++) {
        const ntp_layer_prediction *l = rows[i];
        json_t *o = json_object();
        ntp__jset(&ok, o, "name", ntp__json_str(l->name));
        ntp__jset(&ok, o, "kind", json_string(l->kind ? l->kind : "layer"));
        ntp__jset(&ok, o, "type", ntp__json_str(l->type));
        ntp__jset(&ok, o, "family", json_string(ntp_predict_family_name(l->family)));
        ntp__jset(&ok, o, "flops", json_integer(l->flops));
        ntp__jset(&ok, o, "bytes", json_integer(l->bytes));
        ntp__jset(&ok, o, "level", ntp__json_str(l->level));
        ntp__jset(&ok, o, "predicted_ms", num_or_null(l->predicted_ms));
        ntp__jset(&ok, o, "compute_ms", num_or_null(l->compute_ms));
        ntp__jset(&ok, o, "memory_ms", num_or_null(l->memory_ms));
        ntp__jset(&ok, o, "overhead_ms", num_or_null(l->overhead_ms));
        /* A recurrent layer's input GEMM, priced with the fc family's
         * coefficients and counted in compute_ms (docs/predict.md). */
        if (l->input_gemm_ms > 0)
            ntp__jset(&ok, o, "input_gemm_ms", json_real(l->input_gemm_ms));
        if (l->wake_ms > 0)
            ntp__jset(&ok, o, "wake_ms", json_real(l->wake_ms));
        ntp__jset(&ok, o, "backend", ntp__json_str(l->backend));
        if (l->note[0])
            ntp__jset(&ok, o, "note", json_string(l->note));
        if (l->fused_into)
            ntp__jset(&ok, o, "fused_into", ntp__json_str(l->fused_into));
        /* The kernel the prepared plan chose, and the correction its
         * family's time took for it (docs/predict.md#implementations). */
        if (l->impl)
            ntp__jset(&ok, o, "impl", ntp__json_str(l->impl));
        if (l->src_layout)
            ntp__jset(&ok, o, "src_layout", ntp__json_str(l->src_layout));
        if (l->correction > 0 && l->correction != 1)
            ntp__jset(&ok, o, "impl_correction", json_real(l->correction));
        ntp__jpush(&ok, layers, o);
    }
    free(rows);
    ntp__jset(&ok, root, "layers", layers);
    ntp__jset(&ok, root, "predicted_ms", ntp__json_num(p->total_ms));
    ntp__jset(&ok, root, "copies_ms", ntp__json_num(p->copies_ms));
    if (p->copies_note[0])
        ntp__jset(&ok, root, "copies_note", json_string(p->copies_note));
    if (p->weights_note[0])
        ntp__jset(&ok, root, "weights_note", json_string(p->weights_note));
    ntp__jset(&ok, root, "unpredicted_layers", json_integer(p->n_unpredicted));
    ntp__jset(&ok, root, "fused", json_boolean(p->fused));
    ntp__jset(&ok, root, "fused_layers", json_integer(p->n_fused));
    ntp__jset(&ok, root, "uncalibrated", ntp__json_str(p->uncalibrated));
    return ntp__json_finish(ctx, root, ok, f, "prediction");
}

static void write_csv(const ntp_prediction *p, FILE *f)
{
    fputs("name,type,family,flops,bytes,level,predicted_ms,compute_ms,memory_ms,overhead_ms,"
          "backend,note,kind,fused_into\n",
          f);
    int n_rows = 0;
    const ntp_layer_prediction **rows = in_run_order(p, &n_rows);
    for (int i = 0; rows && i < n_rows; i++) {
        const ntp_layer_prediction *l = rows[i];
        ntp__csv_str(f, l->name);
        ntp__csv_sep(f);
        ntp__csv_str(f, l->type);
        ntp__csv_sep(f);
        ntp__csv_str(f, ntp_predict_family_name(l->family));
        ntp__csv_sep(f);
        ntp__csv_int(f, l->flops);
        ntp__csv_sep(f);
        ntp__csv_int(f, l->bytes);
        ntp__csv_sep(f);
        ntp__csv_str(f, l->level);
        ntp__csv_sep(f);
        ntp__csv_num(f, l->predicted_ms);
        ntp__csv_sep(f);
        ntp__csv_num(f, l->compute_ms);
        ntp__csv_sep(f);
        ntp__csv_num(f, l->memory_ms);
        ntp__csv_sep(f);
        ntp__csv_num(f, l->overhead_ms);
        ntp__csv_sep(f);
        ntp__csv_str(f, l->backend);
        ntp__csv_sep(f);
        ntp__csv_str(f, l->note);
        ntp__csv_sep(f);
        ntp__csv_str(f, l->kind ? l->kind : "layer");
        ntp__csv_sep(f);
        ntp__csv_str(f, l->fused_into ? l->fused_into : "");
        fputc('\n', f);
    }
    free(rows);
}

ntp_status ntp_report_write_prediction(ntp_ctx *ctx, const ntp_prediction *p, ntp_format fmt,
                                       FILE *f)
{
    if (!p || !f)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_prediction: missing argument");
    switch (fmt) {
    case NTP_FORMAT_TABLE: write_table(p, f); break;
    case NTP_FORMAT_JSON: return write_json(ctx, p, f);
    case NTP_FORMAT_CSV: write_csv(p, f); break;
    }
    return ntp__check_stream(ctx, f, "prediction");
}

/* A recurrent or pooling kernel's correction by size (ntp_impl_correction.point_bytes):
 * the factor at each size it was sampled at, smallest first, as a layer
 * of that size takes it (docs/predict.md#a-recurrent-kernels-steps-and-size). */
static void put_size_factors(FILE *f, const ntp_impl_correction *ic)
{
    int n = ic->n_points < NTP_PREDICT_MAX_POINTS ? ic->n_points : NTP_PREDICT_MAX_POINTS;
    double at[NTP_PREDICT_MAX_POINTS];
    int m = 0;
    for (int k = 0; k < n; k++) {
        bool seen = false;
        for (int j = 0; j < m; j++)
            seen |= at[j] == ic->point_bytes[k];
        if (!seen)
            at[m++] = ic->point_bytes[k];
    }
    for (int a = 1; a < m; a++)
        for (int b = a; b > 0 && at[b - 1] > at[b]; b--) {
            double t = at[b];
            at[b] = at[b - 1];
            at[b - 1] = t;
        }
    char line[1024];
    size_t u = 0;
    for (int k = 0; k < m && u < sizeof line; k++) {
        /* "8.39MB": a size stays on one line where the list wraps. */
        char b[32], *sp;
        ntp__human_bytes(at[k], b, sizeof b);
        if ((sp = strchr(b, ' ')) != NULL)
            memmove(sp, sp + 1, strlen(sp));
        u += (size_t)snprintf(line + u, sizeof line - u, "%s %s x%.2f", k ? "," : "", b,
                              ntp__predict_size_factor(ic, (int64_t)at[k]));
    }
    ntp__put_wrapped(f, "             by size:", line);
}

ntp_status ntp_report_write_calibration(ntp_ctx *ctx, const ntp_calibration *c, ntp_format fmt,
                                        FILE *f)
{
    if (!c || !f)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_calibration: missing argument");
    if (fmt == NTP_FORMAT_JSON) {
        json_t *j = ntp__calibration_json(c);
        return ntp__json_finish(ctx, j, j != NULL, f, "calibration");
    }
    if (fmt == NTP_FORMAT_CSV) {
        fputs("machine,backend,backend_version,precision,threads,calibrated_at,family,samples,"
              "overhead_us,compute,memory,stream,median_error,max_error,cold_start_us,far_scale\n",
              f);
    } else {
        ntp__put_linef(f, "calibration of %s on %s (%s), %s, %d threads, %s%s", c->backend,
                       c->machine_key, c->backend_version, c->precision, c->threads,
                       c->calibrated_at, c->quick ? ", quick design" : "");
        int passes = c->passes > 0 ? c->passes : 1;
        ntp__put_linef(f, "timed with %s caches, %d pass%s over the design%s (docs/predict.md)",
                       c->cache[0] ? c->cache : "warm", passes, passes == 1 ? "" : "es",
                       passes == 1                       ? ""
                       : strcmp(c->keep, "fastest") == 0 ? ", each layer's fastest kept"
                                                         : ", each layer's median kept");
        if (c->apart_timings > 0) {
            char apart[256];
            snprintf(apart, sizeof apart,
                     "%d timing%s ran while the CPUs did not share a cache "
                     "(docs/run.md#handoff): left out where another pass found them together "
                     "and ran %.2gx faster; %d kept (no pass of theirs did, or it ran no slower)",
                     c->apart_timings, c->apart_timings == 1 ? "" : "s", NTP_HANDOFF_SLOWER,
                     c->apart_kept);
            ntp__put_wrapped(f, "", apart);
        }
        if (c->slow_timings > 0) {
            char slow[320];
            snprintf(slow, sizeof slow,
                     "%d timing%s ran while a CPU ran under %.2gx the best pace the calibration "
                     "read (%.4g GFLOP/s; a guest beside it on its core, presumably: "
                     "docs/predict.md#passes): "
                     "left out where another pass ran unhindered and %.2gx faster; %d kept",
                     c->slow_timings, c->slow_timings == 1 ? "" : "s", NTP_CALIBRATE_SLOW_PACE,
                     c->pace_gflops, NTP_HANDOFF_SLOWER, c->slow_kept);
            ntp__put_wrapped(f, "", slow);
        }
        char bus[512];
        if (ntp__bandwidth_line(&c->bus, bus, sizeof bus)) {
            size_t used = strlen(bus);
            if (c->bus.low && used < sizeof bus)
                snprintf(bus + used, sizeof bus - used,
                         "; READ LOW: memory-bound layers may be priced for a slower bus "
                         "(docs/predict.md#the-calibrations-memory-bus)");
            ntp__put_wrapped(f, "memory bus: ", bus);
        }
        char model[320];
        snprintf(model, sizeof model,
                 "t = overhead + compute x FLOPs / %.4g GFLOP/s + memory x bytes / bandwidth of "
                 "the level the layer's traffic fits in + stream x bytes / the fastest level's "
                 "bandwidth (load %.2f)",
                 c->peak_gflops, c->loadavg);
        ntp__put_wrapped(f, "", model);
        fputc('\n', f);
        ntp__put_linef(f, "%-10s %7s %11s %9s %9s %9s %9s %9s %8s", "family", "samples",
                       "overhead us", "compute", "memory", "stream", "med err", "max err",
                       "cold us");
    }
    /* The families, then the reorder rows' model (a row of its own:
     * "reorder", not a family of layers). */
    for (int k = 0; k <= NTP_PREDICT_FAMILY_COUNT; k++) {
        bool rows = k == NTP_PREDICT_FAMILY_COUNT;
        const ntp_family_model *m = rows ? &c->reorder : &c->family[k];
        const char *name = rows ? "reorder" : ntp_predict_family_name((ntp_predict_family)k);
        if (rows && !m->calibrated && fmt != NTP_FORMAT_CSV) {
            ntp__put_linef(f, "%-10s %7s %11s", name, "-", "not fitted: copy family's");
            continue;
        }
        if (fmt == NTP_FORMAT_CSV) {
            if (!m->calibrated)
                continue;
            const char *strs[] = {c->machine_key, c->backend, c->backend_version, c->precision};
            for (int i = 0; i < 4; i++) {
                ntp__csv_str(f, strs[i]);
                ntp__csv_sep(f);
            }
            ntp__csv_int(f, c->threads);
            ntp__csv_sep(f);
            ntp__csv_str(f, c->calibrated_at);
            ntp__csv_sep(f);
            ntp__csv_str(f, name);
            ntp__csv_sep(f);
            ntp__csv_int(f, m->samples);
            double v[] = {1e6 * m->coef[NTP_PREDICT_TERM_OVERHEAD],
                          m->coef[NTP_PREDICT_TERM_COMPUTE],
                          m->coef[NTP_PREDICT_TERM_MEMORY],
                          m->coef[NTP_PREDICT_TERM_STREAM],
                          m->median_error,
                          m->max_error};
            for (int i = 0; i < 6; i++) {
                ntp__csv_sep(f);
                ntp__csv_num(f, v[i]);
            }
            /* The cold start (fit_cold), empty where no warm twin fitted it. */
            ntp__csv_sep(f);
            if (m->cold_samples > 0)
                ntp__csv_num(f, 1e6 * m->cold_s);
            /* The price of a read from memory against the cache's, empty
             * where not fitted (ntp_family_model.far_scale). */
            ntp__csv_sep(f);
            if (m->far_scale > 0)
                ntp__csv_num(f, m->far_scale);
            fputc('\n', f);
        } else if (!m->calibrated) {
            ntp__put_linef(f, "%-10s %7s %11s", name, "-", "not calibrated");
        } else {
            /* The cold start: what a layer pays over its warm twin after the
             * flush (docs/predict.md#a-layers-cold-start), "-" unfitted. */
            char cold[16] = "-";
            if (m->cold_samples > 0)
                snprintf(cold, sizeof cold, "%.2f", 1e6 * m->cold_s);
            ntp__put_linef(f, "%-10s %7d %11.2f %9.3g %9.3g %9.3g %8.1f%% %8.1f%% %8s", name,
                           m->samples, 1e6 * m->coef[NTP_PREDICT_TERM_OVERHEAD],
                           m->coef[NTP_PREDICT_TERM_COMPUTE], m->coef[NTP_PREDICT_TERM_MEMORY],
                           m->coef[NTP_PREDICT_TERM_STREAM], 100 * m->median_error,
                           100 * m->max_error, cold);
        }
    }
    /* The families whose memory term prices a read from memory apart. */
    for (int k = 0; fmt != NTP_FORMAT_CSV && k < NTP_PREDICT_FAMILY_COUNT; k++)
        if (c->family[k].calibrated && c->family[k].far_scale > 0)
            ntp__put_linef(f,
                           "%-10s far x %.3g  on its bytes read from memory, past the caches "
                           "(docs/predict.md)",
                           ntp_predict_family_name((ntp_predict_family)k), c->family[k].far_scale);
    /* The wake of the backend's threads after a handed layer. */
    if (fmt != NTP_FORMAT_CSV && c->wake_samples > 0)
        ntp__put_linef(f,
                       "%-10s %7d %11.2f  a row after a layer on another backend "
                       "(its threads' wake; docs/predict.md)",
                       "wake", c->wake_samples, 1e6 * c->wake_s);
    /* And by how long they slept. */
    if (fmt != NTP_FORMAT_CSV && c->wake_samples > 0 && c->n_wake_points >= 2) {
        char pts[256];
        size_t u = (size_t)snprintf(pts, sizeof pts, "the wake by the time asleep:");
        for (int k = 0; k < c->n_wake_points && k < NTP_WAKE_POINTS && u < sizeof pts; k++)
            u += (size_t)snprintf(pts + u, sizeof pts - u, "%s %.3g ms: %.1f us", k ? "," : "",
                                  1e3 * c->wake_points[k][0], 1e6 * c->wake_points[k][1]);
        ntp__put_linef(f, "%-10s %s", "", pts);
    }
    /* ref's dot-product loop by the size of R, a recurrent step's. */
    if (fmt != NTP_FORMAT_CSV && c->n_gemv > 0) {
        char rates[512], head[32];
        size_t u = (size_t)snprintf(rates, sizeof rates,
                                    "a recurrent step's product on ref, GB/s by R's size:");
        for (int k = 0; k < c->n_gemv && k < NTP_PREDICT_MAX_GEMV && u < sizeof rates; k++)
            u += (size_t)snprintf(rates + u, sizeof rates - u, "%s %.3g MB %.1f", k ? "," : "",
                                  (double)c->gemv[k].bytes / 1e6, c->gemv[k].gbps);
        snprintf(head, sizeof head, "%-10s %7d  ", "step", c->n_gemv);
        ntp__put_wrapped(f, head, rates);
    }
    /* What a pass keeps of a probe's weights, by the pass's size. */
    if (fmt != NTP_FORMAT_CSV && c->kept.samples > 0) {
        char pts[640], head[32], kb[32];
        size_t u;
        if (c->kept.n_points == 0)
            u = (size_t)snprintf(pts, sizeof pts,
                                 "what a pass keeps: not told (the probe ran about as fast "
                                 "after the flush as warm)");
        else if (c->kept.bytes > 0)
            u = (size_t)snprintf(pts, sizeof pts,
                                 "what a pass keeps: kept up to %s (a network's weights priced "
                                 "as kept up to 1/%g of it); a probe's time, from warm 0 to "
                                 "flushed 1, after a pass of",
                                 ntp__human_bytes((double)c->kept.bytes, kb, sizeof kb),
                                 NTP_KEPT_MARGIN);
        else
            u = (size_t)snprintf(pts, sizeof pts,
                                 "what a pass keeps: nothing (every network's weights priced "
                                 "from memory); a probe's time, from warm 0 to flushed 1, "
                                 "after a pass of");
        for (int k = 0; k < c->kept.n_points && k < NTP_KEPT_POINTS && u < sizeof pts; k++)
            u += (size_t)snprintf(pts + u, sizeof pts - u, "%s %.3g MB %.2f", k ? "," : "",
                                  c->kept.points[k][0] / 1e6, c->kept.points[k][1]);
        snprintf(head, sizeof head, "%-10s %7d  ", "kept", c->kept.samples);
        ntp__put_wrapped(f, head, pts);
    }
    if (fmt != NTP_FORMAT_CSV && c->n_impls > 0) {
        fputc('\n', f);
        ntp__put_linef(f, "corrections per implementation (x the family's time, docs/predict.md):");
        for (int k = 0; k < c->n_impls && k < NTP_PREDICT_MAX_IMPLS; k++) {
            const ntp_impl_correction *ic = &c->impls[k];
            ntp__put_linef(f, "  %-10s %-36s %5.2f  (%d samples)",
                           ntp_predict_family_name(ic->family), ic->impl, ic->scale, ic->samples);
            if (ic->n_points > 0)
                put_size_factors(f, ic);
        }
    }
    return ntp__check_stream(ctx, f, "calibration");
}
