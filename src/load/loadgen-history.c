/* Load runs in the history (docs/load.md#history): a run recorded as a
 * load_runs row with its JSON report, and the list of them written as a
 * table, JSON (kind "load_history") or CSV. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "core/writers-impl.h"
#include "loadgen-impl.h"
#include "loadgen-result-impl.h"
#include "ntprof/store.h"

void ntp_loadgen_entry(const ntp_loadgen_result *r, ntp_load_entry *e)
{
    memset(e, 0, sizeof *e);
    snprintf(e->topology, sizeof e->topology, "%s", r->topology ? r->topology : "");
    snprintf(e->backend, sizeof e->backend, "%s", r->backend ? r->backend : "");
    snprintf(e->scenario, sizeof e->scenario, "%s", ntp_loadgen_scenario_name(r->scenario));
    e->instances = r->instances;
    e->threads_per_instance = r->threads_per_instance;
    e->max_batch = r->max_batch;
    e->qps_offered = r->qps_offered;
    e->qps_achieved = r->qps_achieved;
    e->samples_per_s = r->samples_per_s;
    e->queries = r->queries;
    e->p50_ms = r->latency_ms.p50;
    e->p90_ms = r->latency_ms.p90;
    e->p95_ms = r->latency_ms.p95;
    e->p99_ms = r->latency_ms.p99;
    e->p999_ms = r->latency_ms.p999;
    e->max_ms = r->latency_ms.max;
    e->mean_ms = r->latency_ms.mean;
    e->latency_bound_ms = r->scenario == NTP_LOADGEN_SERVER ? r->latency_bound_ms : NAN;
    e->max_qps = r->searched ? r->max_qps : NAN;
    e->valid = r->valid;
    snprintf(e->machine, sizeof e->machine, "%s", r->cpu_model);
    e->load_average = r->load_average;
}

ntp_status ntp_loadgen_record(ntp_ctx *ctx, const char *db, const ntp_loadgen_result *r,
                              int64_t *id)
{
    char *json = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&json, &len);
    if (!m)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory for the load report");
    ntp_status st = ntp_report_write_load(ctx, r, NTP_FORMAT_JSON, m);
    if (fclose(m) != 0 && !st)
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory for the load report");
    ntp_store *s = NULL;
    if (!st)
        st = ntp_store_open(ctx, db, NTP_STORE_CREATE, &s);
    if (!st) {
        ntp_load_entry e;
        ntp_loadgen_entry(r, &e);
        st = ntp_store_add_load(ctx, s, &e, r->source, json, id);
    }
    ntp_store_close(s);
    free(json);
    return st;
}

/* --- listing them ------------------------------------------------------------------------ */

static void loads_table(const ntp_load_entry *e, int n, FILE *f)
{
    static const int w[] = {5, 19, 20, 13, 8, 5, 5, 10, 10, 9, 9, 5};
    static const char *const head[] = {"id",         "time",   "topology", "scenario",
                                       "backend",    "inst",   "batch",    "offered/s",
                                       "achieved/s", "p50 ms", "p99 ms",   "valid"};
    enum { NC = sizeof w / sizeof w[0] };
    for (int i = 0; i < NC; i++) {
        if (i)
            fputc(' ', f);
        ntp__put_cell(f, head[i], w[i], i == 0 || (i >= 5 && i <= 10));
    }
    fputc('\n', f);
    for (int k = 0; k < n; k++) {
        const ntp_load_entry *h = &e[k];
        char id[32], time[32], inst[32], batch[32], off[32], ach[32], p50[32], p99[32];
        snprintf(id, sizeof id, "%lld", (long long)h->id);
        snprintf(time, sizeof time, "%s", h->time);
        if (strlen(time) >= 19 && time[10] == 'T') {
            time[10] = ' ';
            time[19] = '\0';
        }
        snprintf(inst, sizeof inst, "%dx%d", h->instances, h->threads_per_instance);
        snprintf(batch, sizeof batch, "%d", h->max_batch);
        ntp__fit_number(h->qps_offered, 10, 1, off, sizeof off);
        ntp__fit_number(h->qps_achieved, 10, 1, ach, sizeof ach);
        ntp__fit_number(h->p50_ms, 9, 3, p50, sizeof p50);
        ntp__fit_number(h->p99_ms, 9, 3, p99, sizeof p99);
        const char *cells[] = {id,         time, h->topology, h->scenario,
                               h->backend, inst, batch,       off,
                               ach,        p50,  p99,         h->valid ? "yes" : "no"};
        for (int i = 0; i < NC; i++) {
            if (i)
                fputc(' ', f);
            ntp__put_cell(f, cells[i], w[i], i == 0 || (i >= 5 && i <= 10));
        }
        fputc('\n', f);
    }
    if (n == 0)
        fputs("no load runs recorded (`ntprof load` records every run)\n", f);
}

static ntp_status loads_json(ntp_ctx *ctx, const ntp_load_entry *e, int n, FILE *f)
{
    bool ok = true;
    json_t *root = json_object(), *runs = json_array();
    ntp__jset(&ok, root, "kind", json_string("load_history"));
    for (int k = 0; k < n; k++) {
        const ntp_load_entry *h = &e[k];
        json_t *o = json_object();
        ntp__jset(&ok, o, "id", json_integer(h->id));
        ntp__jset(&ok, o, "time", ntp__json_str(h->time));
        ntp__jset(&ok, o, "topology", ntp__json_str(h->topology));
        ntp__jset(&ok, o, "backend", ntp__json_str(h->backend));
        ntp__jset(&ok, o, "scenario", ntp__json_str(h->scenario));
        ntp__jset(&ok, o, "instances", json_integer(h->instances));
        ntp__jset(&ok, o, "threads_per_instance", json_integer(h->threads_per_instance));
        ntp__jset(&ok, o, "max_batch", json_integer(h->max_batch));
        ntp__jset(&ok, o, "qps_offered", ntp__json_num(h->qps_offered));
        ntp__jset(&ok, o, "qps_achieved", ntp__json_num(h->qps_achieved));
        ntp__jset(&ok, o, "samples_per_s", ntp__json_num(h->samples_per_s));
        ntp__jset(&ok, o, "queries", json_integer(h->queries));
        json_t *lat = json_object();
        ntp__jset(&ok, lat, "p50", ntp__json_num(h->p50_ms));
        ntp__jset(&ok, lat, "p90", ntp__json_num(h->p90_ms));
        ntp__jset(&ok, lat, "p95", ntp__json_num(h->p95_ms));
        ntp__jset(&ok, lat, "p99", ntp__json_num(h->p99_ms));
        ntp__jset(&ok, lat, "p999", ntp__json_num(h->p999_ms));
        ntp__jset(&ok, lat, "max", ntp__json_num(h->max_ms));
        ntp__jset(&ok, lat, "mean", ntp__json_num(h->mean_ms));
        ntp__jset(&ok, o, "latency_ms", lat);
        ntp__jset(&ok, o, "latency_bound_ms", ntp__json_num(h->latency_bound_ms));
        ntp__jset(&ok, o, "max_qps", ntp__json_num(h->max_qps));
        ntp__jset(&ok, o, "valid", json_boolean(h->valid));
        ntp__jset(&ok, o, "machine", ntp__json_str(h->machine));
        ntp__jset(&ok, o, "load_average", ntp__json_num(h->load_average));
        ntp__jpush(&ok, runs, o);
    }
    ntp__jset(&ok, root, "load_runs", runs);
    return ntp__json_finish(ctx, root, ok, f, "load history");
}

static void loads_csv(const ntp_load_entry *e, int n, FILE *f)
{
    fputs("id,time,topology,backend,scenario,instances,threads_per_instance,max_batch,"
          "qps_offered,qps_achieved,samples_per_s,queries,p50_ms,p90_ms,p95_ms,p99_ms,p999_ms,"
          "max_ms,mean_ms,latency_bound_ms,max_qps,valid,machine\n",
          f);
    for (int k = 0; k < n; k++) {
        const ntp_load_entry *h = &e[k];
        ntp__csv_int(f, h->id);
        const char *t[] = {h->time, h->topology, h->backend, h->scenario};
        for (int i = 0; i < 4; i++) {
            ntp__csv_sep(f);
            ntp__csv_str(f, t[i]);
        }
        const int64_t c[] = {h->instances, h->threads_per_instance, h->max_batch};
        for (int i = 0; i < 3; i++) {
            ntp__csv_sep(f);
            ntp__csv_int(f, c[i]);
        }
        const double v[] = {h->qps_offered, h->qps_achieved, h->samples_per_s};
        for (int i = 0; i < 3; i++) {
            ntp__csv_sep(f);
            ntp__csv_num(f, v[i]);
        }
        ntp__csv_sep(f);
        ntp__csv_int(f, h->queries);
        const double l[] = {h->p50_ms, h->p90_ms,  h->p95_ms,           h->p99_ms, h->p999_ms,
                            h->max_ms, h->mean_ms, h->latency_bound_ms, h->max_qps};
        for (int i = 0; i < 9; i++) {
            ntp__csv_sep(f);
            ntp__csv_num(f, l[i]);
        }
        ntp__csv_sep(f);
        ntp__csv_bool(f, h->valid);
        ntp__csv_sep(f);
        ntp__csv_str(f, h->machine);
        fputc('\n', f);
    }
}

ntp_status ntp_report_write_load_history(ntp_ctx *ctx, const ntp_load_entry *e, int n,
                                         ntp_format fmt, FILE *f)
{
    if ((n > 0 && !e) || !f)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_load_history: no entries or stream");
    switch (fmt) {
    case NTP_FORMAT_TABLE: loads_table(e, n, f); return ntp__check_stream(ctx, f, "load history");
    case NTP_FORMAT_JSON: return loads_json(ctx, e, n, f);
    case NTP_FORMAT_CSV: loads_csv(e, n, f); return ntp__check_stream(ctx, f, "load history");
    }
    return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "unknown format %d", (int)fmt);
}
