/* Sweeps of load runs (`ntprof sweep --load`, docs/load.md#sweeps): one row
 * per configuration, read back from that configuration's JSON report (kind
 * "load"), written as a table, JSON (kind "load_sweep") or CSV. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "core/writers-impl.h"
#include "loadgen-impl.h"

/* obj.a.b as a number; NaN when absent or null. */
static double num_at(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    if (b)
        v = json_is_object(v) ? json_object_get(v, b) : NULL;
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Fill row from the load report j (taken), named `what` in errors. */
static ntp_status row_from_json(ntp_ctx *ctx, json_t *j, const char *what,
                                ntp_loadgen_sweep_row *row)
{
    char label[sizeof row->label];
    snprintf(label, sizeof label, "%s", row->label);
    memset(row, 0, sizeof *row);
    snprintf(row->label, sizeof row->label, "%s", label);
    json_t *kind = json_object_get(j, "kind");
    json_t *sc = json_object_get(j, "scenario");
    if (!json_is_string(kind) || strcmp(json_string_value(kind), "load") != 0 ||
        !json_is_string(sc)) {
        json_decref(j);
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                          "%s: expected a load report (\"kind\": \"load\" with a \"scenario\")",
                          what);
    }
    snprintf(row->scenario, sizeof row->scenario, "%s", json_string_value(sc));
    double inst = num_at(j, "instances", NULL), tpi = num_at(j, "threads_per_instance", NULL),
           mb = num_at(j, "max_batch", NULL);
    row->instances = isfinite(inst) ? (int)inst : 0;
    row->threads_per_instance = isfinite(tpi) ? (int)tpi : 0;
    row->max_batch = isfinite(mb) ? (int)mb : 0;
    row->qps_offered = num_at(j, "qps_offered", NULL);
    row->qps_achieved = num_at(j, "qps_achieved", NULL);
    row->samples_per_s = num_at(j, "samples_per_s", NULL);
    double q = num_at(j, "queries", NULL);
    row->queries = isfinite(q) ? (int64_t)q : 0;
    row->p50_ms = num_at(j, "latency_ms", "p50");
    row->p90_ms = num_at(j, "latency_ms", "p90");
    row->p99_ms = num_at(j, "latency_ms", "p99");
    row->mean_ms = num_at(j, "latency_ms", "mean");
    row->max_ms = num_at(j, "latency_ms", "max");
    row->valid = json_is_true(json_object_get(j, "valid"));
    row->max_qps = num_at(j, "max_qps", NULL);
    row->overhead_us = num_at(j, "generator", "overhead_us");
    row->lateness_mean_us = num_at(j, "generator", "lateness_mean_us");
    row->lateness_p99_us = num_at(j, "generator", "lateness_p99_us");
    row->qps_drawn = num_at(j, "generator", "qps_drawn");
    json_decref(j);
    if (!isfinite(row->qps_achieved) || !isfinite(row->p50_ms))
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                          "%s: a load report without qps_achieved or latency_ms.p50", what);
    return NTP_STATUS_OK;
}

ntp_status ntp_loadgen_sweep_row_read(ntp_ctx *ctx, const char *path, ntp_loadgen_sweep_row *row)
{
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (!j)
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR, "%s:%d: %s", path, e.line, e.text);
    return row_from_json(ctx, j, path, row);
}

ntp_status ntp_loadgen_sweep_row_parse(ntp_ctx *ctx, const char *report, const char *what,
                                       ntp_loadgen_sweep_row *row)
{
    if (!report || !row)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_loadgen_sweep_row_parse: no report or row");
    json_error_t e;
    json_t *j = json_loads(report, 0, &e);
    if (!j)
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR, "%s:%d: %s", what ? what : "load report",
                          e.line, e.text);
    return row_from_json(ctx, j, what ? what : "load report", row);
}

static bool failed(const ntp_loadgen_sweep_row *r)
{
    return r->error[0] != '\0';
}

static void sweep_table(const ntp_loadgen_sweep_row *rows, int n, FILE *f)
{
    static const int w[] = {28, 10, 10, 9, 9, 9, 5, 10, 10, 10};
    static const char *const head[] = {"configuration", "offered/s", "achieved/s", "p50 ms",
                                       "p90 ms",        "p99 ms",    "valid",      "gen us/q",
                                       "late us",       "late p99"};
    enum { NC = sizeof w / sizeof w[0] };
    for (int i = 0; i < NC; i++) {
        if (i)
            fputc(' ', f);
        ntp__put_cell(f, head[i], w[i], i > 0);
    }
    fputc('\n', f);
    for (int k = 0; k < n; k++) {
        const ntp_loadgen_sweep_row *r = &rows[k];
        if (failed(r)) {
            ntp__put_cell(f, r->label, w[0], false);
            fprintf(f, " failed: %s\n", r->error);
            continue;
        }
        char c[NC - 1][32];
        const double v[] = {r->qps_offered, r->qps_achieved, r->p50_ms, r->p90_ms, r->p99_ms};
        const int dec[] = {1, 1, 3, 3, 3};
        for (int i = 0; i < 5; i++)
            ntp__fit_number(v[i], w[i + 1], dec[i], c[i], sizeof c[i]);
        snprintf(c[5], sizeof c[5], "%s", r->valid ? "yes" : "no");
        ntp__fit_number(r->overhead_us, w[7], 2, c[6], sizeof c[6]);
        ntp__fit_number(r->lateness_mean_us, w[8], 2, c[7], sizeof c[7]);
        ntp__fit_number(r->lateness_p99_us, w[9], 2, c[8], sizeof c[8]);
        ntp__put_cell(f, r->label, w[0], false);
        for (int i = 0; i < NC - 1; i++) {
            fputc(' ', f);
            ntp__put_cell(f, c[i], w[i + 1], true);
        }
        fputc('\n', f);
    }
}

static ntp_status sweep_json(ntp_ctx *ctx, const ntp_loadgen_sweep_row *rows, int n,
                             const char *source, FILE *f)
{
    bool ok = true;
    json_t *root = json_object(), *arr = json_array();
    ntp__jset(&ok, root, "kind", json_string("load_sweep"));
    ntp__jset(&ok, root, "schema_version", json_integer(1));
    ntp__jset(&ok, root, "source", ntp__json_str(source));
    for (int k = 0; k < n; k++) {
        const ntp_loadgen_sweep_row *r = &rows[k];
        json_t *o = json_object();
        ntp__jset(&ok, o, "configuration", ntp__json_str(r->label));
        if (failed(r)) {
            ntp__jset(&ok, o, "error", ntp__json_str(r->error));
            ntp__jpush(&ok, arr, o);
            continue;
        }
        ntp__jset(&ok, o, "error", json_null());
        ntp__jset(&ok, o, "scenario", ntp__json_str(r->scenario));
        ntp__jset(&ok, o, "instances", json_integer(r->instances));
        ntp__jset(&ok, o, "threads_per_instance", json_integer(r->threads_per_instance));
        ntp__jset(&ok, o, "max_batch", json_integer(r->max_batch));
        ntp__jset(&ok, o, "qps_offered", ntp__json_num(r->qps_offered));
        ntp__jset(&ok, o, "qps_achieved", ntp__json_num(r->qps_achieved));
        ntp__jset(&ok, o, "samples_per_s", ntp__json_num(r->samples_per_s));
        ntp__jset(&ok, o, "queries", json_integer(r->queries));
        json_t *lat = json_object();
        ntp__jset(&ok, lat, "p50", ntp__json_num(r->p50_ms));
        ntp__jset(&ok, lat, "p90", ntp__json_num(r->p90_ms));
        ntp__jset(&ok, lat, "p99", ntp__json_num(r->p99_ms));
        ntp__jset(&ok, lat, "mean", ntp__json_num(r->mean_ms));
        ntp__jset(&ok, lat, "max", ntp__json_num(r->max_ms));
        ntp__jset(&ok, o, "latency_ms", lat);
        ntp__jset(&ok, o, "valid", json_boolean(r->valid));
        ntp__jset(&ok, o, "max_qps", ntp__json_num(r->max_qps));
        json_t *g = json_object();
        ntp__jset(&ok, g, "overhead_us", ntp__json_num(r->overhead_us));
        ntp__jset(&ok, g, "lateness_mean_us", ntp__json_num(r->lateness_mean_us));
        ntp__jset(&ok, g, "lateness_p99_us", ntp__json_num(r->lateness_p99_us));
        ntp__jset(&ok, g, "qps_drawn", ntp__json_num(r->qps_drawn));
        ntp__jset(&ok, o, "generator", g);
        if (r->load_run_id > 0)
            ntp__jset(&ok, o, "load_run_id", json_integer(r->load_run_id));
        ntp__jpush(&ok, arr, o);
    }
    ntp__jset(&ok, root, "configurations", arr);
    return ntp__json_finish(ctx, root, ok, f, "load sweep");
}

static void sweep_csv(const ntp_loadgen_sweep_row *rows, int n, FILE *f)
{
    fputs("configuration,error,scenario,instances,threads_per_instance,max_batch,qps_offered,"
          "qps_achieved,samples_per_s,queries,p50_ms,p90_ms,p99_ms,mean_ms,max_ms,valid,max_qps,"
          "overhead_us,lateness_mean_us,lateness_p99_us,qps_drawn\n",
          f);
    for (int k = 0; k < n; k++) {
        const ntp_loadgen_sweep_row *r = &rows[k];
        ntp__csv_str(f, r->label);
        ntp__csv_sep(f);
        ntp__csv_str(f, r->error);
        if (failed(r)) {
            fputs(",,,,,,,,,,,,,,,,,,,\n", f);
            continue;
        }
        ntp__csv_sep(f);
        ntp__csv_str(f, r->scenario);
        const int64_t c[] = {r->instances, r->threads_per_instance, r->max_batch};
        for (int i = 0; i < 3; i++) {
            ntp__csv_sep(f);
            ntp__csv_int(f, c[i]);
        }
        const double v[] = {r->qps_offered, r->qps_achieved, r->samples_per_s};
        for (int i = 0; i < 3; i++) {
            ntp__csv_sep(f);
            ntp__csv_num(f, v[i]);
        }
        ntp__csv_sep(f);
        ntp__csv_int(f, r->queries);
        const double l[] = {r->p50_ms, r->p90_ms, r->p99_ms, r->mean_ms, r->max_ms};
        for (int i = 0; i < 5; i++) {
            ntp__csv_sep(f);
            ntp__csv_num(f, l[i]);
        }
        ntp__csv_sep(f);
        ntp__csv_bool(f, r->valid);
        const double g[] = {r->max_qps, r->overhead_us, r->lateness_mean_us, r->lateness_p99_us,
                            r->qps_drawn};
        for (int i = 0; i < 5; i++) {
            ntp__csv_sep(f);
            ntp__csv_num(f, g[i]);
        }
        fputc('\n', f);
    }
}

ntp_status ntp_report_write_load_sweep(ntp_ctx *ctx, const ntp_loadgen_sweep_row *rows, int n,
                                       const char *source, ntp_format fmt, FILE *f)
{
    if ((n > 0 && !rows) || !f)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_load_sweep: no rows or stream");
    switch (fmt) {
    case NTP_FORMAT_TABLE: sweep_table(rows, n, f); return ntp__check_stream(ctx, f, "load sweep");
    case NTP_FORMAT_JSON: return sweep_json(ctx, rows, n, source, f);
    case NTP_FORMAT_CSV: sweep_csv(rows, n, f); return ntp__check_stream(ctx, f, "load sweep");
    }
    return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "unknown format %d", (int)fmt);
}

/* --- recording a sweep in the history --------------------------------------------------- */

static void str_at(json_t *o, const char *a, const char *b, char *dst, size_t len)
{
    json_t *v = json_object_get(o, a);
    if (b)
        v = json_is_object(v) ? json_object_get(v, b) : NULL;
    snprintf(dst, len, "%s", json_is_string(v) ? json_string_value(v) : "");
}

/* The history's row of a load report, as ntp_loadgen_entry makes it from
 * the result the report was written from. */
static void entry_from_json(json_t *j, ntp_load_entry *e)
{
    memset(e, 0, sizeof *e);
    str_at(j, "topology", NULL, e->topology, sizeof e->topology);
    str_at(j, "backend", NULL, e->backend, sizeof e->backend);
    str_at(j, "scenario", NULL, e->scenario, sizeof e->scenario);
    const double inst = num_at(j, "instances", NULL), tpi = num_at(j, "threads_per_instance", NULL),
                 mb = num_at(j, "max_batch", NULL), q = num_at(j, "queries", NULL);
    e->instances = isfinite(inst) ? (int)inst : 0;
    e->threads_per_instance = isfinite(tpi) ? (int)tpi : 0;
    e->max_batch = isfinite(mb) ? (int)mb : 0;
    e->queries = isfinite(q) ? (int64_t)q : 0;
    e->qps_offered = num_at(j, "qps_offered", NULL);
    e->qps_achieved = num_at(j, "qps_achieved", NULL);
    e->samples_per_s = num_at(j, "samples_per_s", NULL);
    e->p50_ms = num_at(j, "latency_ms", "p50");
    e->p90_ms = num_at(j, "latency_ms", "p90");
    e->p95_ms = num_at(j, "latency_ms", "p95");
    e->p99_ms = num_at(j, "latency_ms", "p99");
    e->p999_ms = num_at(j, "latency_ms", "p999");
    e->max_ms = num_at(j, "latency_ms", "max");
    e->mean_ms = num_at(j, "latency_ms", "mean");
    e->latency_bound_ms =
        strcmp(e->scenario, "server") == 0 ? num_at(j, "latency_bound_ms", NULL) : NAN;
    e->max_qps = num_at(j, "max_qps", NULL);
    e->valid = json_is_true(json_object_get(j, "valid"));
    str_at(j, "machine", "cpu_model", e->machine, sizeof e->machine);
    e->load_average = num_at(j, "machine", "load_average");
}

/* The whole file, NUL-terminated, into *out. */
static ntp_status read_text(ntp_ctx *ctx, const char *path, char **out)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    size_t len = 0;
    FILE *m = f ? open_memstream(&text, &len) : NULL;
    if (!m) {
        if (f)
            fclose(f);
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: cannot read the load report", path);
    }
    char buf[65536];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, k, m);
    bool bad = ferror(f) != 0;
    fclose(f);
    if (fclose(m) != 0 || bad) {
        free(text);
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: cannot read the load report", path);
    }
    *out = text;
    return NTP_STATUS_OK;
}

ntp_status ntp_loadgen_record_report(ntp_ctx *ctx, ntp_store *s, const char *report, int64_t *id)
{
    if (!id)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_loadgen_record_report: no id");
    *id = 0;
    if (!s || !report)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_loadgen_record_report: no store or report");
    char *text;
    ntp_status st = read_text(ctx, report, &text);
    if (st)
        return st;
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (!j) {
        free(text);
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR, "%s:%d: %s", report, e.line, e.text);
    }
    if (json_is_true(json_object_get(j, "interrupted"))) {
        /* As `ntprof load` does, an interrupted run is not recorded. */
        json_decref(j);
        free(text);
        return NTP_STATUS_OK;
    }
    ntp_load_entry le;
    entry_from_json(j, &le);
    char source[4096];
    str_at(j, "source", NULL, source, sizeof source);
    json_decref(j);
    st = ntp_store_add_load(ctx, s, &le, source[0] ? source : NULL, text, id);
    free(text);
    return st;
}

ntp_status ntp_loadgen_sweep_record(ntp_ctx *ctx, ntp_store *s, int64_t sweep, int index,
                                    const char *report, ntp_loadgen_sweep_row *row)
{
    if (!s || !row || (!row->error[0] && !report))
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_loadgen_sweep_record: no store, row or report");
    ntp_load_sweep_task t;
    memset(&t, 0, sizeof t);
    t.index = index;
    snprintf(t.label, sizeof t.label, "%s", row->label);
    row->load_run_id = 0;
    if (row->error[0]) {
        snprintf(t.state, sizeof t.state, "failed");
        snprintf(t.message, sizeof t.message, "%s", row->error);
        return ntp_store_add_load_sweep_task(ctx, s, sweep, &t);
    }
    int64_t id = 0;
    ntp_status st = ntp_loadgen_record_report(ctx, s, report, &id);
    if (st)
        return st;
    if (id == 0) {
        snprintf(t.state, sizeof t.state, "failed");
        snprintf(t.message, sizeof t.message, "interrupted; its load run is not recorded");
        return ntp_store_add_load_sweep_task(ctx, s, sweep, &t);
    }
    row->load_run_id = id;
    snprintf(t.state, sizeof t.state, "ok");
    t.load_run_id = id;
    return ntp_store_add_load_sweep_task(ctx, s, sweep, &t);
}

/* --- listing recorded load sweeps ------------------------------------------------------- */

static void history_table(const ntp_load_sweep_task *t, int n, FILE *f)
{
    if (n == 0)
        fputs("no load sweeps recorded (`ntprof sweep --load` records each sweep)\n", f);
    for (int k = 0; k < n; k++) {
        if (k == 0 || t[k].sweep != t[k - 1].sweep) {
            char time[32];
            snprintf(time, sizeof time, "%s", t[k].created_at);
            if (strlen(time) >= 19 && time[10] == 'T') {
                time[10] = ' ';
                time[19] = '\0';
            }
            fprintf(f, "%sload sweep %lld  %s  %s  %s, %d configurations\n", k ? "\n" : "",
                    (long long)t[k].sweep, time, t[k].source, t[k].design, t[k].n_configs);
            fputs("  config load run state  configuration\n", f);
        }
        char run[32] = "-";
        if (t[k].load_run_id > 0)
            snprintf(run, sizeof run, "%lld", (long long)t[k].load_run_id);
        fprintf(f, "  %6d %8s %-6s %s", t[k].index, run, t[k].state, t[k].label);
        if (t[k].message[0])
            fprintf(f, ": %s", t[k].message);
        fputc('\n', f);
    }
}

static ntp_status history_json(ntp_ctx *ctx, const ntp_load_sweep_task *t, int n, FILE *f)
{
    bool ok = true;
    json_t *root = json_object(), *sweeps = json_array(), *configs = NULL;
    ntp__jset(&ok, root, "kind", json_string("load_sweep_history"));
    for (int k = 0; k < n; k++) {
        if (k == 0 || t[k].sweep != t[k - 1].sweep) {
            json_t *w = json_object();
            configs = json_array();
            ntp__jset(&ok, w, "id", json_integer(t[k].sweep));
            ntp__jset(&ok, w, "time", ntp__json_str(t[k].created_at));
            ntp__jset(&ok, w, "source", ntp__json_str(t[k].source));
            ntp__jset(&ok, w, "design", ntp__json_str(t[k].design));
            ntp__jset(&ok, w, "n_configs", json_integer(t[k].n_configs));
            ntp__jset(&ok, w, "configurations", configs);
            ntp__jpush(&ok, sweeps, w);
        }
        json_t *c = json_object();
        ntp__jset(&ok, c, "index", json_integer(t[k].index));
        ntp__jset(&ok, c, "configuration", ntp__json_str(t[k].label));
        ntp__jset(&ok, c, "state", ntp__json_str(t[k].state));
        ntp__jset(&ok, c, "load_run_id",
                  t[k].load_run_id > 0 ? json_integer(t[k].load_run_id) : json_null());
        ntp__jset(&ok, c, "error", t[k].message[0] ? ntp__json_str(t[k].message) : json_null());
        ntp__jpush(&ok, configs, c);
    }
    ntp__jset(&ok, root, "load_sweeps", sweeps);
    return ntp__json_finish(ctx, root, ok, f, "load sweep history");
}

static void history_csv(const ntp_load_sweep_task *t, int n, FILE *f)
{
    fputs("sweep,time,source,design,n_configs,index,configuration,state,load_run_id,error\n", f);
    for (int k = 0; k < n; k++) {
        ntp__csv_int(f, t[k].sweep);
        ntp__csv_sep(f);
        ntp__csv_str(f, t[k].created_at);
        ntp__csv_sep(f);
        ntp__csv_str(f, t[k].source);
        ntp__csv_sep(f);
        ntp__csv_str(f, t[k].design);
        ntp__csv_sep(f);
        ntp__csv_int(f, t[k].n_configs);
        ntp__csv_sep(f);
        ntp__csv_int(f, t[k].index);
        ntp__csv_sep(f);
        ntp__csv_str(f, t[k].label);
        ntp__csv_sep(f);
        ntp__csv_str(f, t[k].state);
        ntp__csv_sep(f);
        if (t[k].load_run_id > 0)
            ntp__csv_int(f, t[k].load_run_id);
        ntp__csv_sep(f);
        ntp__csv_str(f, t[k].message);
        fputc('\n', f);
    }
}

ntp_status ntp_report_write_load_sweep_history(ntp_ctx *ctx, const ntp_load_sweep_task *t, int n,
                                               ntp_format fmt, FILE *f)
{
    if ((n > 0 && !t) || !f)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_load_sweep_history: no sweeps or stream");
    switch (fmt) {
    case NTP_FORMAT_TABLE:
        history_table(t, n, f);
        return ntp__check_stream(ctx, f, "load sweep history");
    case NTP_FORMAT_JSON: return history_json(ctx, t, n, f);
    case NTP_FORMAT_CSV:
        history_csv(t, n, f);
        return ntp__check_stream(ctx, f, "load sweep history");
    }
    return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "unknown format %d", (int)fmt);
}
