/* Load runs (ntprof load, docs/load.md#history): one load_runs row per run,
 * its headline figures in columns and its JSON report whole. The row is
 * filled by the load layer, which sits above the store. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "store-impl.h"

static void bind_num(ntp__stmt *q, int i, double v)
{
    if (isfinite(v))
        ntp__db_double(q, i, v);
    else
        ntp__db_null(q, i);
}

ntp_status ntp_store_add_load(ntp_ctx *ctx, ntp_store *s, const ntp_load_entry *e,
                              const char *source, const char *report, int64_t *id)
{
    if (!s || !e || !report)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_store_add_load: no store, entry or report");
    if (s->read_only)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "history %s: opened read-only",
                          s->display);
    ntp__stmt *q = ntp__db_prepare(
        s, "INSERT INTO load_runs (topology, source, backend, scenario, instances,"
           " threads_per_instance, max_batch, qps_offered, qps_achieved, samples_per_s, queries,"
           " p50_ms, p90_ms, p95_ms, p99_ms, p999_ms, max_ms, mean_ms, latency_bound_ms, max_qps,"
           " valid, machine, load_average, report)"
           " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id");
    if (!q)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot record the load run");
    ntp__db_text(q, 1, e->topology);
    ntp__db_text(q, 2, source);
    ntp__db_text(q, 3, e->backend);
    ntp__db_text(q, 4, e->scenario);
    ntp__db_int(q, 5, e->instances);
    ntp__db_int(q, 6, e->threads_per_instance);
    ntp__db_int(q, 7, e->max_batch);
    bind_num(q, 8, e->qps_offered);
    bind_num(q, 9, e->qps_achieved);
    bind_num(q, 10, e->samples_per_s);
    ntp__db_int(q, 11, e->queries);
    const double l[] = {e->p50_ms, e->p90_ms,  e->p95_ms,           e->p99_ms, e->p999_ms,
                        e->max_ms, e->mean_ms, e->latency_bound_ms, e->max_qps};
    for (int i = 0; i < 9; i++)
        bind_num(q, 12 + i, l[i]);
    ntp__db_int(q, 21, e->valid ? 1 : 0);
    ntp__db_text(q, 22, e->machine);
    bind_num(q, 23, e->load_average);
    ntp__db_blob(q, 24, report, strlen(report));
    ntp_status st = NTP_STATUS_OK;
    if (ntp__db_step(q) != NTP__STEP_ROW) {
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot record the load run");
    } else {
        if (id)
            *id = ntp__db_col_int(q, 0);
        if (ntp__db_step(q) != NTP__STEP_DONE)
            st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot record the load run");
    }
    ntp__db_finalize(q);
    return st;
}

ntp_status ntp_store_list_loads(ntp_ctx *ctx, ntp_store *s, const ntp_history_filter *f,
                                ntp_load_entry **out, int *n)
{
    *out = NULL;
    *n = 0;
    ntp__stmt *q;
    ntp_status qs = ntp__store_list_query(
        ctx, s, f,
        "id, time, topology, backend, scenario, instances, threads_per_instance, max_batch,"
        " qps_offered, qps_achieved, samples_per_s, queries, p50_ms, p90_ms, p95_ms, p99_ms,"
        " p999_ms, max_ms, mean_ms, latency_bound_ms, max_qps, valid, machine, load_average",
        "load_runs", "load runs", &q);
    if (qs)
        return qs;
    ntp_load_entry *v = NULL;
    int cap = 0, count = 0;
    ntp__step rc;
    ntp_status st = NTP_STATUS_OK;
    while ((rc = ntp__db_step(q)) == NTP__STEP_ROW) {
        if (count == cap) {
            cap = cap ? 2 * cap : 64;
            ntp_load_entry *p = realloc(v, (size_t)cap * sizeof *p);
            if (!p) {
                st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
                break;
            }
            v = p;
        }
        ntp_load_entry *e = &v[count++];
        memset(e, 0, sizeof *e);
        e->id = ntp__db_col_int(q, 0);
        ntp__db_col_str(q, 1, e->time, sizeof e->time);
        ntp__db_col_str(q, 2, e->topology, sizeof e->topology);
        ntp__db_col_str(q, 3, e->backend, sizeof e->backend);
        ntp__db_col_str(q, 4, e->scenario, sizeof e->scenario);
        e->instances = (int)ntp__db_col_int(q, 5);
        e->threads_per_instance = (int)ntp__db_col_int(q, 6);
        e->max_batch = (int)ntp__db_col_int(q, 7);
        e->qps_offered = ntp__db_col_num(q, 8);
        e->qps_achieved = ntp__db_col_num(q, 9);
        e->samples_per_s = ntp__db_col_num(q, 10);
        e->queries = ntp__db_col_int(q, 11);
        double *l[] = {&e->p50_ms, &e->p90_ms,  &e->p95_ms,           &e->p99_ms, &e->p999_ms,
                       &e->max_ms, &e->mean_ms, &e->latency_bound_ms, &e->max_qps};
        for (int i = 0; i < 9; i++)
            *l[i] = ntp__db_col_num(q, 12 + i);
        e->valid = ntp__db_col_int(q, 21) != 0;
        ntp__db_col_str(q, 22, e->machine, sizeof e->machine);
        e->load_average = ntp__db_col_num(q, 23);
    }
    if (!st && rc != NTP__STEP_DONE && rc != NTP__STEP_ROW)
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot list load runs");
    ntp__db_finalize(q);
    if (st) {
        free(v);
        return st;
    }
    *out = v;
    *n = count;
    return NTP_STATUS_OK;
}

static ntp_status load_report_once(ntp_ctx *ctx, ntp_store *s, int64_t id, char **report)
{
    ntp__stmt *q = ntp__db_prepare(s, "SELECT report FROM load_runs WHERE id = ?");
    if (!q)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read a load run");
    ntp__db_int(q, 1, id);
    ntp__step rc = ntp__db_step(q);
    ntp_status st = NTP_STATUS_OK;
    if (rc == NTP__STEP_ROW) {
        size_t len = 0;
        const void *b = s->drv->column_blob(q, 0, &len);
        char *t = malloc(len + 1);
        if (!t) {
            st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        } else {
            if (len > 0)
                memcpy(t, b, len);
            t[len] = '\0';
            *report = t;
        }
    } else if (rc == NTP__STEP_DONE) {
        st = ntp__error(ctx, NTP_STATUS_UNKNOWN_NAME,
                        "history %s: no load run %lld (`ntprof history --load` lists them)",
                        s->display, (long long)id);
    } else {
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read a load run");
    }
    ntp__db_finalize(q);
    return st;
}

ntp_status ntp_store_load_report(ntp_ctx *ctx, ntp_store *s, int64_t id, char **report)
{
    if (!report)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_store_load_report: no report");
    *report = NULL;
    if (!s)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_store_load_report: no store");
    int waited = 0, attempts = 0;
    char why[sizeof s->err] = "";
    ntp_status st;
    while ((st = load_report_once(ctx, s, id, report)) != NTP_STATUS_OK &&
           ntp__store_again(s, &waited, &attempts, why, sizeof why))
        ;
    if (st == NTP_STATUS_OK && attempts > 0)
        ntp__store_retry_warn(ctx, s, "the load run was read", waited, attempts, why);
    return st;
}

/* --- load sweeps (ntprof sweep --load, docs/load.md#sweeps) ------------------------------- */

static char *strings_json(const char *const *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_string(v[i] ? v[i] : "")) != 0) {
            json_decref(a);
            return NULL;
        }
    char *s = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    return s;
}

ntp_status ntp_store_add_load_sweep(ntp_ctx *ctx, ntp_store *s, const char *source,
                                    const char *design, const char *const *factors, int n_factors,
                                    const char *const *options, int n_options, int n_configs,
                                    int64_t *id)
{
    if (!s || !source || !design || (n_factors > 0 && !factors) || (n_options > 0 && !options))
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_store_add_load_sweep: no store or an incomplete sweep");
    if (s->read_only)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "history %s: opened read-only",
                          s->display);
    char *f = strings_json(factors, n_factors), *o = strings_json(options, n_options);
    ntp_status st = NTP_STATUS_OK;
    ntp__stmt *q = NULL;
    if (!f || !o) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    q = ntp__db_prepare(s, "INSERT INTO sweeps (source, design, factors, run_options, n_configs,"
                           " executor, kind) VALUES (?,?,?,?,?,'local','load') RETURNING id");
    if (!q) {
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot record the load sweep");
        goto out;
    }
    ntp__db_text(q, 1, source);
    ntp__db_text(q, 2, design);
    ntp__db_text(q, 3, f);
    ntp__db_text(q, 4, o);
    ntp__db_int(q, 5, n_configs);
    if (ntp__db_step(q) != NTP__STEP_ROW) {
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot record the load sweep");
        goto out;
    }
    if (id)
        *id = ntp__db_col_int(q, 0);
    if (ntp__db_step(q) != NTP__STEP_DONE)
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot record the load sweep");
out:
    ntp__db_finalize(q);
    free(f);
    free(o);
    return st;
}

ntp_status ntp_store_add_load_sweep_task(ntp_ctx *ctx, ntp_store *s, int64_t sweep,
                                         const ntp_load_sweep_task *t)
{
    if (!s || !t)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_store_add_load_sweep_task: no store or task");
    ntp__stmt *q = ntp__db_prepare(s, "INSERT INTO sweep_tasks (sweep_id, idx, state, label,"
                                      " load_run_id, message) VALUES (?,?,?,?,?,?)");
    if (!q)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot record the load sweep");
    ntp__db_int(q, 1, sweep);
    ntp__db_int(q, 2, t->index);
    ntp__db_text(q, 3, t->state);
    ntp__db_text(q, 4, t->label);
    if (t->load_run_id > 0)
        ntp__db_int(q, 5, t->load_run_id);
    else
        ntp__db_null(q, 5);
    if (t->message[0])
        ntp__db_text(q, 6, t->message);
    else
        ntp__db_null(q, 6);
    ntp_status st = NTP_STATUS_OK;
    if (ntp__db_step(q) != NTP__STEP_DONE)
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot record the load sweep");
    ntp__db_finalize(q);
    return st;
}

ntp_status ntp_store_list_load_sweeps(ntp_ctx *ctx, ntp_store *s, ntp_load_sweep_task **out, int *n)
{
    *out = NULL;
    *n = 0;
    int version = 0;
    ntp_status st = ntp__store_version(ctx, s, &version);
    if (st)
        return st;
    if (version < 8)
        return NTP_STATUS_OK; /* an older history, not migrated by reading: none */
    ntp__stmt *q = ntp__db_prepare(
        s, "SELECT w.id, w.created_at, w.source, w.design, w.n_configs, t.idx, t.state, t.label,"
           " t.load_run_id, t.message FROM sweeps w JOIN sweep_tasks t ON t.sweep_id = w.id"
           " WHERE w.kind = 'load' ORDER BY w.id DESC, t.idx");
    if (!q)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot list load sweeps");
    ntp_load_sweep_task *v = NULL;
    int cap = 0, count = 0;
    ntp__step rc;
    while ((rc = ntp__db_step(q)) == NTP__STEP_ROW) {
        if (count == cap) {
            cap = cap ? 2 * cap : 64;
            ntp_load_sweep_task *p = realloc(v, (size_t)cap * sizeof *p);
            if (!p) {
                st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
                break;
            }
            v = p;
        }
        ntp_load_sweep_task *t = &v[count++];
        memset(t, 0, sizeof *t);
        t->sweep = ntp__db_col_int(q, 0);
        ntp__db_col_str(q, 1, t->created_at, sizeof t->created_at);
        ntp__db_col_str(q, 2, t->source, sizeof t->source);
        ntp__db_col_str(q, 3, t->design, sizeof t->design);
        t->n_configs = (int)ntp__db_col_int(q, 4);
        t->index = (int)ntp__db_col_int(q, 5);
        ntp__db_col_str(q, 6, t->state, sizeof t->state);
        ntp__db_col_str(q, 7, t->label, sizeof t->label);
        t->load_run_id = ntp__db_col_int(q, 8);
        ntp__db_col_str(q, 9, t->message, sizeof t->message);
    }
    if (!st && rc != NTP__STEP_DONE && rc != NTP__STEP_ROW)
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot list load sweeps");
    ntp__db_finalize(q);
    if (st) {
        free(v);
        return st;
    }
    *out = v;
    *n = count;
    return NTP_STATUS_OK;
}
