/* Sweeps whose configurations run elsewhere (docs/cluster.md): the design
 * in `sweeps`, one `sweep_tasks` row per configuration that started. The
 * row's primary key is (sweep, index), so however often a task runs (a
 * resubmission, a requeue after preemption) the sweep has one row per
 * configuration, and an "ok" row is never replaced. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "store-impl.h"
#include "ntprof/cluster.h"

static char *json_strings(char *const *v, int n)
{
    json_t *a = json_array();
    if (!a)
        return NULL;
    for (int i = 0; i < n; i++)
        if (json_array_append_new(a, json_string(v[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    char *s = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return s;
}

/* A JSON array of strings back into a vector; false when it is not one. */
static bool strings_json(const char *text, char ***out, int *n)
{
    *out = NULL;
    *n = 0;
    json_t *a = json_loads(text ? text : "", 0, NULL);
    if (!json_is_array(a)) {
        json_decref(a);
        return false;
    }
    size_t m = json_array_size(a);
    char **v = calloc(m + 1, sizeof *v);
    bool ok = v != NULL;
    for (size_t i = 0; ok && i < m; i++) {
        const char *s = json_string_value(json_array_get(a, i));
        ok = s && (v[i] = ntp__strdup(s));
    }
    json_decref(a);
    if (!ok) {
        for (size_t i = 0; v && i < m; i++)
            free(v[i]);
        free(v);
        return false;
    }
    *out = v;
    *n = (int)m;
    return true;
}

ntp_status ntp_store_sweep_add(ntp_ctx *ctx, ntp_store *s, const ntp_sweep_record *rec, int64_t *id)
{
    if (!s || !rec || !rec->source || !rec->design || !rec->executor)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_store_sweep_add: no store or an incomplete sweep");
    if (s->read_only)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "history %s: opened read-only",
                          s->path);
    char *factors = json_strings(rec->factors, rec->n_factors);
    char *options = json_strings(rec->options, rec->n_options);
    ntp_status st = NTP_STATUS_OK;
    sqlite3_stmt *q = NULL;
    if (!factors || !options) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO sweeps (source, design, factors, run_options, n_configs,"
                           " executor, submit) VALUES (?,?,?,?,?,?,?)",
                           -1, &q, NULL) != SQLITE_OK) {
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot record the sweep");
        goto out;
    }
    sqlite3_bind_text(q, 1, rec->source, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, rec->design, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, factors, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 4, options, -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 5, rec->n_configs);
    sqlite3_bind_text(q, 6, rec->executor, -1, SQLITE_STATIC);
    if (rec->submit)
        sqlite3_bind_text(q, 7, rec->submit, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, 7);
    if (sqlite3_step(q) != SQLITE_DONE) {
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot record the sweep");
        goto out;
    }
    if (id)
        *id = sqlite3_last_insert_rowid(s->db);
out:
    sqlite3_finalize(q);
    free(factors);
    free(options);
    return st;
}

void ntp_sweep_record_free(ntp_sweep_record *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n_factors; i++)
        free(r->factors[i]);
    for (int i = 0; i < r->n_options; i++)
        free(r->options[i]);
    free(r->factors);
    free(r->options);
    free(r->source);
    free(r->design);
    free(r->executor);
    free(r->submit);
    free(r->jobs);
    free(r);
}

static char *col_dup(sqlite3_stmt *q, int i)
{
    const unsigned char *t = sqlite3_column_text(q, i);
    return t ? ntp__strdup((const char *)t) : NULL;
}

ntp_status ntp_store_sweep_get(ntp_ctx *ctx, ntp_store *s, int64_t id, ntp_sweep_record **out)
{
    *out = NULL;
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT created_at, source, design, factors, run_options, n_configs,"
                           " executor, submit, jobs FROM sweeps WHERE id = ?",
                           -1, &q, NULL) != SQLITE_OK)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the sweeps");
    sqlite3_bind_int64(q, 1, id);
    int rc = sqlite3_step(q);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(q);
        if (rc == SQLITE_DONE)
            return ntp__error(ctx, NTP_STATUS_UNKNOWN_NAME, "history %s: no sweep %lld", s->path,
                              (long long)id);
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the sweeps");
    }
    ntp_sweep_record *r = calloc(1, sizeof *r);
    ntp_status st = NTP_STATUS_OK;
    if (!r) {
        sqlite3_finalize(q);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    r->id = id;
    const unsigned char *t = sqlite3_column_text(q, 0);
    snprintf(r->created_at, sizeof r->created_at, "%s", t ? (const char *)t : "");
    r->source = col_dup(q, 1);
    r->design = col_dup(q, 2);
    r->n_configs = sqlite3_column_int(q, 5);
    r->executor = col_dup(q, 6);
    r->submit = col_dup(q, 7);
    r->jobs = col_dup(q, 8);
    if (!r->source || !r->design || !r->executor || !r->jobs)
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    else if (!strings_json((const char *)sqlite3_column_text(q, 3), &r->factors, &r->n_factors) ||
             !strings_json((const char *)sqlite3_column_text(q, 4), &r->options, &r->n_options))
        st = ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                        "history %s: sweep %lld: factors or options are not a JSON array of "
                        "strings",
                        s->path, (long long)id);
    sqlite3_finalize(q);
    if (st) {
        ntp_sweep_record_free(r);
        return st;
    }
    *out = r;
    return NTP_STATUS_OK;
}

ntp_status ntp_store_sweep_add_job(ntp_ctx *ctx, ntp_store *s, int64_t id, const char *job)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(s->db,
                           "UPDATE sweeps SET jobs = CASE WHEN jobs = '' THEN ?1"
                           " ELSE jobs || ' ' || ?1 END WHERE id = ?2",
                           -1, &q, NULL) != SQLITE_OK)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot update the sweep");
    sqlite3_bind_text(q, 1, job, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, id);
    ntp_status st = NTP_STATUS_OK;
    if (sqlite3_step(q) != SQLITE_DONE)
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot update the sweep");
    else if (sqlite3_changes(s->db) == 0)
        st = ntp__error(ctx, NTP_STATUS_UNKNOWN_NAME, "history %s: no sweep %lld", s->path,
                        (long long)id);
    sqlite3_finalize(q);
    return st;
}

ntp_status ntp_store_sweep_task_set(ntp_ctx *ctx, ntp_store *s, int64_t sweep,
                                    const ntp_sweep_task *t, ntp_sweep_task_write how,
                                    bool *written)
{
    if (written)
        *written = false;
    /* The upsert's WHERE is the rule: an existing row is replaced only
     * when it is not ok (a task's write) or still running (the
     * scheduler's word about a task that died before writing). */
    const char *sql = how == NTP_SWEEP_TASK_UNLESS_OK
                          ? "INSERT INTO sweep_tasks (sweep_id, idx, state, run_id, job, message)"
                            " VALUES (?,?,?,?,?,?) ON CONFLICT (sweep_id, idx) DO UPDATE SET"
                            " state = excluded.state, run_id = excluded.run_id, job = excluded.job,"
                            " message = excluded.message,"
                            " updated_at = strftime('%Y-%m-%dT%H:%M:%SZ','now')"
                            " WHERE sweep_tasks.state <> 'ok'"
                          : "INSERT INTO sweep_tasks (sweep_id, idx, state, run_id, job, message)"
                            " VALUES (?,?,?,?,?,?) ON CONFLICT (sweep_id, idx) DO UPDATE SET"
                            " state = excluded.state, run_id = excluded.run_id, job = excluded.job,"
                            " message = excluded.message,"
                            " updated_at = strftime('%Y-%m-%dT%H:%M:%SZ','now')"
                            " WHERE sweep_tasks.state = 'running'";
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot record the sweep's task");
    sqlite3_bind_int64(q, 1, sweep);
    sqlite3_bind_int(q, 2, t->index);
    sqlite3_bind_text(q, 3, t->state, -1, SQLITE_STATIC);
    if (t->run_id > 0)
        sqlite3_bind_int64(q, 4, t->run_id);
    else
        sqlite3_bind_null(q, 4);
    sqlite3_bind_text(q, 5, t->job, -1, SQLITE_STATIC);
    if (t->message[0])
        sqlite3_bind_text(q, 6, t->message, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, 6);
    ntp_status st = NTP_STATUS_OK;
    if (sqlite3_step(q) != SQLITE_DONE)
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot record the sweep's task");
    else if (written)
        *written = sqlite3_changes(s->db) > 0;
    sqlite3_finalize(q);
    return st;
}

ntp_status ntp_store_sweep_tasks(ntp_ctx *ctx, ntp_store *s, int64_t sweep, ntp_sweep_task **out,
                                 int *n)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT idx, state, run_id, job, message FROM sweep_tasks"
                           " WHERE sweep_id = ? ORDER BY idx",
                           -1, &q, NULL) != SQLITE_OK)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the sweep's tasks");
    sqlite3_bind_int64(q, 1, sweep);
    ntp_sweep_task *v = NULL;
    int m = 0, cap = 0, rc;
    ntp_status st = NTP_STATUS_OK;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (m == cap) {
            cap = cap ? 2 * cap : 64;
            ntp_sweep_task *p = realloc(v, (size_t)cap * sizeof *p);
            if (!p) {
                st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
                break;
            }
            v = p;
        }
        ntp_sweep_task *t = &v[m++];
        memset(t, 0, sizeof *t);
        t->index = sqlite3_column_int(q, 0);
        const unsigned char *x = sqlite3_column_text(q, 1);
        snprintf(t->state, sizeof t->state, "%s", x ? (const char *)x : "");
        t->run_id = sqlite3_column_int64(q, 2);
        x = sqlite3_column_text(q, 3);
        snprintf(t->job, sizeof t->job, "%s", x ? (const char *)x : "");
        x = sqlite3_column_text(q, 4);
        snprintf(t->message, sizeof t->message, "%s", x ? (const char *)x : "");
    }
    if (!st && rc != SQLITE_DONE)
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the sweep's tasks");
    sqlite3_finalize(q);
    if (st) {
        free(v);
        return st;
    }
    *out = v;
    *n = m;
    return NTP_STATUS_OK;
}
