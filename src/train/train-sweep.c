/* Training sweeps (ntprof sweep --train): training over a sweep's
 * configurations, one after another in this process, with each one's
 * memory by data structure, the planner's peak and the measured one
 * (docs/train.md, "Memory per batch size"). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "core/writers-impl.h"
#include "train-impl.h"

void ntp_train_sweep_free(ntp_train_sweep *s)
{
    if (!s)
        return;
    for (int c = 0; c < s->n; c++) {
        ntp_train_result_free(s->res[c]);
        free(s->err[c]);
    }
    free(s->res);
    free(s->err);
    free(s);
}

int ntp_train_sweep_failed(const ntp_train_sweep *s)
{
    int k = 0;
    for (int c = 0; c < s->n; c++)
        k += s->res[c] == NULL;
    return k;
}

/* Train configuration c: its graph, a trainer, the steps. */
static ntp_status run_one(ntp_ctx *ctx, ntp_train_sweep *s, int c, const char *file,
                          const ntp_load_opts *lo)
{
    ntp_sweep_config cfg;
    ntp_status st = ntp_sweep_config_get(ctx, s->sw, c, &cfg);
    if (st)
        return st;
    if (cfg.backend || cfg.set_precision || cfg.threads > 0)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "a training sweep varies batch and the topology's params, not %s",
                          cfg.backend         ? "backend"
                          : cfg.set_precision ? "precision"
                                              : "threads");
    ntp_load_opts l = *lo;
    const char **set = calloc((size_t)(lo->n_set + cfg.n_set) + 1, sizeof *set);
    if (!set)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < lo->n_set; i++)
        set[i] = lo->set[i];
    for (int i = 0; i < cfg.n_set; i++)
        set[lo->n_set + i] = cfg.set[i];
    l.set = set;
    l.n_set = lo->n_set + cfg.n_set;
    if (cfg.batch > 0)
        l.batch = cfg.batch;
    ntp_graph *g = NULL;
    ntp_trainer *t = NULL;
    if (!(st = ntp_graph_load(ctx, file, &l, &g)) && !(st = ntp_trainer_new(ctx, g, &s->o, &t)))
        st = ntp_trainer_run(ctx, t, &s->res[c]);
    ntp_trainer_free(t);
    /* The result names the model and its layers from the graph, which
     * goes: the table keeps only what the sweep prints. */
    if (s->res[c]) {
        s->res[c]->model = NULL;
        for (int i = 0; i < s->res[c]->n_layers; i++)
            s->res[c]->layers[i].name = s->res[c]->plan->layers[i].name = NULL;
    }
    ntp_graph_free(g);
    free(set);
    return st;
}

ntp_status ntp_train_sweep_run(ntp_ctx *ctx, const ntp_sweep *sw, const char *file,
                               const ntp_load_opts *lo, const ntp_train_opts *o,
                               void (*done)(void *user, int c, int n, const char *label,
                                            const char *state),
                               void *user, ntp_train_sweep **out)
{
    *out = NULL;
    ntp_train_sweep *s = calloc(1, sizeof *s);
    int n = ntp_sweep_config_count(sw);
    if (!s || !(s->res = calloc((size_t)n + 1, sizeof *s->res)) ||
        !(s->err = calloc((size_t)n + 1, sizeof *s->err))) {
        ntp_train_sweep_free(s);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    s->sw = sw;
    s->n = n;
    if (o)
        s->o = *o;
    else
        ntp_train_opts_init(&s->o);
    for (int c = 0; c < n; c++) {
        char state[512];
        if (run_one(ctx, s, c, file, lo)) {
            const char *msg = ntp_ctx_errmsg(ctx);
            s->err[c] = strdup(msg && *msg ? msg : "failed");
            snprintf(state, sizeof state, "failed: %s", s->err[c] ? s->err[c] : "failed");
            ntp_train_result_free(s->res[c]);
            s->res[c] = NULL;
            ntp_ctx_clear(ctx);
        } else {
            snprintf(state, sizeof state, "ok, median step %.4g ms", s->res[c]->step.median);
        }
        if (done)
            done(user, c + 1, n, ntp_sweep_config_label(sw, c), state);
    }
    *out = s;
    return NTP_STATUS_OK;
}

/* The measured peak less the planner's figure for this engine. */
static int64_t rss_diff(const ntp_train_result *r)
{
    return r->rss_peak_bytes - r->plan->engine_bytes;
}

static ntp_status write_json(ntp_ctx *ctx, const ntp_train_sweep *s, FILE *f)
{
    bool ok = true;
    const ntp_sweep *sw = s->sw;
    json_t *root = json_object(), *factors = json_array(), *cfgs = json_array();
    ntp__jset(&ok, root, "kind", ntp__json_str("train_sweep"));
    ntp__jset(&ok, root, "source", ntp__json_str(ntp_sweep_source(sw)));
    ntp__jset(&ok, root, "design",
              ntp__json_str(ntp_sweep_get_design(sw) == NTP_SWEEP_FULL ? "full" : "ofat"));
    ntp__jset(&ok, root, "loss", ntp__json_str(ntp_loss_name(s->o.loss)));
    ntp__jset(&ok, root, "optimizer", ntp__json_str(ntp_optimizer_name(s->o.optimizer)));
    ntp__jset(&ok, root, "measured_by", ntp__json_str("rss_high_water"));
    for (int fi = 0; fi < ntp_sweep_factor_count(sw); fi++) {
        json_t *fo = json_object(), *vals = json_array();
        ntp__jset(&ok, fo, "name", ntp__json_str(ntp_sweep_factor_name(sw, fi)));
        for (int v = 0; v < ntp_sweep_value_count(sw, fi); v++)
            ntp__jpush(&ok, vals, ntp__json_str(ntp_sweep_value(sw, fi, v)));
        ntp__jset(&ok, fo, "values", vals);
        ntp__jpush(&ok, factors, fo);
    }
    ntp__jset(&ok, root, "factors", factors);
    for (int c = 0; c < s->n; c++) {
        const ntp_train_result *r = s->res[c];
        json_t *co = json_object(), *vals = json_object();
        ntp__jset(&ok, co, "index", json_integer(c));
        ntp__jset(&ok, co, "label", ntp__json_str(ntp_sweep_config_label(sw, c)));
        for (int fi = 0; fi < ntp_sweep_factor_count(sw); fi++)
            ntp__jset(&ok, vals, ntp_sweep_factor_name(sw, fi),
                      ntp__json_str(ntp_sweep_value(sw, fi, ntp_sweep_config_value(sw, c, fi))));
        ntp__jset(&ok, co, "values", vals);
        ntp__jset(&ok, co, "status", ntp__json_str(r ? "ok" : "failed"));
        if (!r) {
            ntp__jset(&ok, co, "error", ntp__json_str(s->err[c] ? s->err[c] : "failed"));
            ntp__jpush(&ok, cfgs, co);
            continue;
        }
        ntp__jset(&ok, co, "batch", json_integer(r->batch));
        ntp__jset(&ok, co, "steps", json_integer(r->steps));
        ntp__jset(&ok, co, "step_median_ms", ntp__json_num(r->step.median));
        ntp__jset(&ok, co, "samples_per_s", ntp__json_num(r->samples_per_s));
        json_t *mem = json_object();
        int64_t v[NTP__TRAIN_MEM_PARTS];
        ntp__train_mem_values(&r->plan->memory, v);
        for (int i = 0; i < 6; i++)
            ntp__jset(&ok, mem, ntp__train_mem_keys[i], json_integer(v[i]));
        ntp__jset(&ok, mem, "peak", json_integer(r->plan->memory.peak));
        ntp__jset(&ok, co, "memory", mem);
        ntp__jset(&ok, co, "engine_planned_bytes", json_integer(r->plan->engine_bytes));
        ntp__jset(&ok, co, "allocated_bytes", json_integer(r->allocated_bytes));
        ntp__jset(&ok, co, "rss_peak_bytes", json_integer(r->rss_peak_bytes));
        if (r->rss_peak_bytes >= 0)
            ntp__jset(&ok, co, "rss_minus_engine_planned_bytes", json_integer(rss_diff(r)));
        ntp__jpush(&ok, cfgs, co);
    }
    ntp__jset(&ok, root, "configurations", cfgs);
    return ntp__json_finish(ctx, root, ok, f, "training sweep");
}

static ntp_status write_csv(ntp_ctx *ctx, const ntp_train_sweep *s, FILE *f)
{
    const ntp_sweep *sw = s->sw;
    int nf = ntp_sweep_factor_count(sw);
    fputs("config,label", f);
    for (int fi = 0; fi < nf; fi++) {
        fputc(',', f);
        ntp__csv_str(f, ntp_sweep_factor_name(sw, fi));
    }
    fputs(",status,error,batch,step_median_ms,samples_per_s,weights,gradients,optimizer_state,"
          "activations,workspace,other,peak,engine_planned_bytes,allocated_bytes,"
          "rss_peak_bytes\n",
          f);
    for (int c = 0; c < s->n; c++) {
        const ntp_train_result *r = s->res[c];
        ntp__csv_int(f, c);
        fputc(',', f);
        ntp__csv_str(f, ntp_sweep_config_label(sw, c));
        for (int fi = 0; fi < nf; fi++) {
            fputc(',', f);
            ntp__csv_str(f, ntp_sweep_value(sw, fi, ntp_sweep_config_value(sw, c, fi)));
        }
        fputs(r ? ",ok," : ",failed,", f);
        ntp__csv_str(f, r ? "" : s->err[c] ? s->err[c] : "failed");
        if (r) {
            int64_t v[NTP__TRAIN_MEM_PARTS];
            ntp__train_mem_values(&r->plan->memory, v);
            fputc(',', f);
            ntp__csv_int(f, r->batch);
            fputc(',', f);
            ntp__csv_num(f, r->step.median);
            fputc(',', f);
            ntp__csv_num(f, r->samples_per_s);
            for (int i = 0; i < 6; i++) {
                fputc(',', f);
                ntp__csv_int(f, v[i]);
            }
            int64_t w[4] = {r->plan->memory.peak, r->plan->engine_bytes, r->allocated_bytes,
                            r->rss_peak_bytes};
            for (int i = 0; i < 4; i++) {
                fputc(',', f);
                ntp__csv_int(f, w[i]);
            }
        } else {
            fputs(",,,,,,,,,,,,,", f);
        }
        fputc('\n', f);
    }
    return ntp__check_stream(ctx, f, "training sweep");
}

ntp_status ntp_report_write_train_sweep(ntp_ctx *ctx, const ntp_train_sweep *s, ntp_format fmt,
                                        FILE *f)
{
    if (fmt == NTP_FORMAT_JSON)
        return write_json(ctx, s, f);
    if (fmt == NTP_FORMAT_CSV)
        return write_csv(ctx, s, f);
    const ntp_sweep *sw = s->sw;
    ntp__put_linef(f, "training sweep of %s: loss %s, optimizer %s", ntp_sweep_source(sw),
                   ntp_loss_name(s->o.loss), ntp_optimizer_name(s->o.optimizer));
    ntp__train_mem_row *rows = calloc((size_t)s->n + 1, sizeof *rows);
    if (!rows)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "training sweep: out of memory");
    for (int c = 0; c < s->n; c++)
        rows[c] = (ntp__train_mem_row){ntp_sweep_config_label(sw, c),
                                       s->res[c] ? s->res[c]->plan : NULL, s->err[c]};
    ntp__train_mem_text(f, rows, s->n);
    free(rows);
    char b[8][32];
    fprintf(f, "\npeak, planned against measured (resident-set high-water growth)\n");
    fprintf(f, "%-22s %10s %12s %12s %12s %12s %8s %10s %10s\n", "configuration", "planned",
            "engine plan", "allocated", "measured", "difference", "diff%", "step ms", "samples/s");
    for (int c = 0; c < s->n; c++) {
        const ntp_train_result *r = s->res[c];
        if (!r)
            continue;
        ntp__put_cell(f, ntp_sweep_config_label(sw, c), 22, false);
        bool have = r->rss_peak_bytes >= 0;
        int64_t d = rss_diff(r);
        snprintf(b[4], 32, "%s%s",
                 have && d < 0 ? "-"
                 : have        ? "+"
                               : "",
                 have ? ntp__human_bytes((double)(d < 0 ? -d : d), b[5], 32) : "-");
        fprintf(f, " %10s %12s %12s %12s %12s",
                ntp__human_bytes((double)r->plan->memory.peak, b[0], 32),
                ntp__human_bytes((double)r->plan->engine_bytes, b[1], 32),
                ntp__human_bytes((double)r->allocated_bytes, b[2], 32),
                have ? ntp__human_bytes((double)r->rss_peak_bytes, b[3], 32) : "-", b[4]);
        if (have && r->plan->engine_bytes > 0)
            fprintf(f, " %+7.1f%%", 100.0 * (double)d / (double)r->plan->engine_bytes);
        else
            fprintf(f, " %8s", "-");
        fprintf(f, " %10.4g %10.4g\n", r->step.median, r->samples_per_s);
    }
    fputs("planned: the training planner's peak at the topology's precision, the\n"
          "  activations interval-planned; engine plan: the planner's count of what the\n"
          "  reference engine allocates (every tensor in doubles, held for the run);\n"
          "  allocated: the engine's own count; measured: the growth of the resident-set\n"
          "  high-water mark (VmHWM) over the run; difference: measured - engine plan\n",
          f);
    return ntp__check_stream(ctx, f, "training sweep");
}
