/* Load runs (ntprof load, docs/load.md#history): one load_runs row per run,
 * its headline figures in columns and its JSON report whole. The row is
 * filled by the load layer, which sits above the store. */
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
