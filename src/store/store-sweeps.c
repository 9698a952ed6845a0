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
#include "ntprof/run.h"

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
                          s->display);
    char *factors = json_strings(rec->factors, rec->n_factors);
    char *options = json_strings(rec->options, rec->n_options);
    ntp_status st = NTP_STATUS_OK;
    ntp__stmt *q = NULL;
    if (!factors || !options) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    if (!(q = ntp__db_prepare(s,
                              "INSERT INTO sweeps (source, design, factors, run_options, n_configs,"
                              " executor, submit, kind) VALUES (?,?,?,?,?,?,?,?) RETURNING id"))) {
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot record the sweep");
        goto out;
    }
    ntp__db_text(q, 1, rec->source);
    ntp__db_text(q, 2, rec->design);
    ntp__db_text(q, 3, factors);
    ntp__db_text(q, 4, options);
    ntp__db_int(q, 5, rec->n_configs);
    ntp__db_text(q, 6, rec->executor);
    if (rec->submit)
        ntp__db_text(q, 7, rec->submit);
    else
        ntp__db_null(q, 7);
    ntp__db_text(q, 8, rec->kind[0] ? rec->kind : "run");
    if (ntp__db_step(q) != NTP__STEP_ROW) {
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot record the sweep");
        goto out;
    }
    if (id)
        *id = ntp__db_col_int(q, 0);
    if (ntp__db_step(q) != NTP__STEP_DONE)
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot record the sweep");
out:
    ntp__db_finalize(q);
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

static char *col_dup(ntp__stmt *q, int i)
{
    const char *t = ntp__db_col_text(q, i);
    return t ? ntp__strdup(t) : NULL;
}

/* Sweep id's kind into kind: "load" for a load sweep (schema 8:
 * sweeps.kind), whose configurations are load runs; "run" otherwise (and
 * in a history older than schema 8). */
static void sweep_kind(ntp_store *s, int64_t id, char *kind, size_t len)
{
    snprintf(kind, len, "run");
    int version = 0;
    bool tables;
    if (!s->drv->version(s, &version, &tables) || version < 8)
        return;
    ntp__stmt *q = ntp__db_prepare(s, "SELECT kind FROM sweeps WHERE id = ?");
    if (!q)
        return;
    ntp__db_int(q, 1, id);
    if (ntp__db_step(q) == NTP__STEP_ROW && ntp__db_col_text(q, 0))
        snprintf(kind, len, "%s", ntp__db_col_text(q, 0));
    ntp__db_finalize(q);
}

static ntp_status sweep_get_once(ntp_ctx *ctx, ntp_store *s, int64_t id, ntp_sweep_record **out)
{
    *out = NULL;
    ntp__stmt *q;
    if (!(q = ntp__db_prepare(s,
                              "SELECT created_at, source, design, factors, run_options, n_configs,"
                              " executor, submit, jobs FROM sweeps WHERE id = ?")))
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the sweeps");
    ntp__db_int(q, 1, id);
    ntp__step rc = ntp__db_step(q);
    if (rc != NTP__STEP_ROW) {
        ntp__db_finalize(q);
        if (rc == NTP__STEP_DONE)
            return ntp__error(ctx, NTP_STATUS_UNKNOWN_NAME, "history %s: no sweep %lld", s->display,
                              (long long)id);
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the sweeps");
    }
    ntp_sweep_record *r = calloc(1, sizeof *r);
    ntp_status st = NTP_STATUS_OK;
    if (!r) {
        ntp__db_finalize(q);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    r->id = id;
    const char *t = ntp__db_col_text(q, 0);
    snprintf(r->created_at, sizeof r->created_at, "%s", t ? t : "");
    r->source = col_dup(q, 1);
    r->design = col_dup(q, 2);
    r->n_configs = (int)ntp__db_col_int(q, 5);
    r->executor = col_dup(q, 6);
    r->submit = col_dup(q, 7);
    r->jobs = col_dup(q, 8);
    if (!r->source || !r->design || !r->executor || !r->jobs)
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    else if (!strings_json(ntp__db_col_text(q, 3), &r->factors, &r->n_factors) ||
             !strings_json(ntp__db_col_text(q, 4), &r->options, &r->n_options))
        st = ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                        "history %s: sweep %lld: factors or options are not a JSON array of "
                        "strings",
                        s->display, (long long)id);
    ntp__db_finalize(q);
    if (!st)
        sweep_kind(s, id, r->kind, sizeof r->kind);
    if (st) {
        ntp_sweep_record_free(r);
        return st;
    }
    *out = r;
    return NTP_STATUS_OK;
}

/* A task reads its sweep and writes its row on a connection it opened
 * before running its configuration (seconds to hours): a server restarted
 * meanwhile is connected to again, as for the run's own write, rather than
 * the task failing with its result unrecorded. */
ntp_status ntp_store_sweep_get(ntp_ctx *ctx, ntp_store *s, int64_t id, ntp_sweep_record **out)
{
    int waited = 0, attempts = 0;
    char why[sizeof s->err] = "";
    ntp_status st;
    while ((st = sweep_get_once(ctx, s, id, out)) != NTP_STATUS_OK &&
           ntp__store_again(s, &waited, &attempts, why, sizeof why))
        ;
    if (st == NTP_STATUS_OK && attempts > 0)
        ntp__store_retry_warn(ctx, s, "the sweep was read", waited, attempts, why);
    return st;
}

ntp_status ntp_store_sweep_add_job(ntp_ctx *ctx, ntp_store *s, int64_t id, const char *job)
{
    ntp__stmt *q;
    if (!(q = ntp__db_prepare(s, "UPDATE sweeps SET jobs = CASE WHEN jobs = '' THEN ?1"
                                 " ELSE jobs || ' ' || ?1 END WHERE id = ?2 RETURNING id")))
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot update the sweep");
    ntp__db_text(q, 1, job);
    ntp__db_int(q, 2, id);
    ntp_status st = NTP_STATUS_OK;
    ntp__step rc = ntp__db_step(q); /* a row: the sweep was there */
    if (rc == NTP__STEP_ROW)
        rc = ntp__db_step(q) == NTP__STEP_DONE ? NTP__STEP_ROW : NTP__STEP_ERROR;
    if (rc == NTP__STEP_ERROR)
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot update the sweep");
    else if (rc == NTP__STEP_DONE)
        st = ntp__error(ctx, NTP_STATUS_UNKNOWN_NAME, "history %s: no sweep %lld", s->display,
                        (long long)id);
    ntp__db_finalize(q);
    return st;
}

static ntp_status task_set_once(ntp_ctx *ctx, ntp_store *s, int64_t sweep, const ntp_sweep_task *t,
                                ntp_sweep_task_write how, bool *written)
{
    if (written)
        *written = false;
    /* The upsert's WHERE is the rule: an existing row is replaced only
     * when it is not ok (a task's write) or still running (the
     * scheduler's word about a task that died before writing). */
    const char *sql = how == NTP_SWEEP_TASK_UNLESS_OK
                          ? "INSERT INTO sweep_tasks (sweep_id, idx, state, run_id, job, message,"
                            " load_run_id, label) VALUES (?,?,?,?,?,?,?,?)"
                            " ON CONFLICT (sweep_id, idx) DO UPDATE SET"
                            " state = excluded.state, run_id = excluded.run_id, job = excluded.job,"
                            " message = excluded.message, load_run_id = excluded.load_run_id,"
                            " label = COALESCE(excluded.label, sweep_tasks.label),"
                            " updated_at = strftime('%Y-%m-%dT%H:%M:%SZ','now')"
                            " WHERE sweep_tasks.state <> 'ok' RETURNING idx"
                          : "INSERT INTO sweep_tasks (sweep_id, idx, state, run_id, job, message,"
                            " load_run_id, label) VALUES (?,?,?,?,?,?,?,?)"
                            " ON CONFLICT (sweep_id, idx) DO UPDATE SET"
                            " state = excluded.state, run_id = excluded.run_id, job = excluded.job,"
                            " message = excluded.message, load_run_id = excluded.load_run_id,"
                            " label = COALESCE(excluded.label, sweep_tasks.label),"
                            " updated_at = strftime('%Y-%m-%dT%H:%M:%SZ','now')"
                            " WHERE sweep_tasks.state = 'running' RETURNING idx";
    ntp__stmt *q;
    if (!(q = ntp__db_prepare(s, sql)))
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot record the sweep's task");
    ntp__db_int(q, 1, sweep);
    ntp__db_int(q, 2, t->index);
    ntp__db_text(q, 3, t->state);
    if (t->run_id > 0)
        ntp__db_int(q, 4, t->run_id);
    else
        ntp__db_null(q, 4);
    ntp__db_text(q, 5, t->job);
    if (t->message[0])
        ntp__db_text(q, 6, t->message);
    else
        ntp__db_null(q, 6);
    if (t->load_run_id > 0)
        ntp__db_int(q, 7, t->load_run_id);
    else
        ntp__db_null(q, 7);
    ntp__db_text(q, 8, t->label[0] ? t->label : NULL);
    /* RETURNING gives a row when the row was inserted or replaced. */
    ntp_status st = NTP_STATUS_OK;
    ntp__step rc = ntp__db_step(q);
    bool changed = rc == NTP__STEP_ROW;
    if (changed)
        rc = ntp__db_step(q);
    if (rc != NTP__STEP_DONE)
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot record the sweep's task");
    else if (written)
        *written = changed;
    ntp__db_finalize(q);
    return st;
}

/* Run again on a new connection when the server went away: the upsert is
 * the same whether its first run committed or not (its answer lost). */
ntp_status ntp_store_sweep_task_set(ntp_ctx *ctx, ntp_store *s, int64_t sweep,
                                    const ntp_sweep_task *t, ntp_sweep_task_write how,
                                    bool *written)
{
    int waited = 0, attempts = 0;
    char why[sizeof s->err] = "";
    ntp_status st;
    while ((st = task_set_once(ctx, s, sweep, t, how, written)) != NTP_STATUS_OK &&
           ntp__store_again(s, &waited, &attempts, why, sizeof why))
        ;
    if (st == NTP_STATUS_OK && attempts > 0)
        ntp__store_retry_warn(ctx, s, "the sweep's task was recorded", waited, attempts, why);
    return st;
}

static ntp_status sweep_tasks_once(ntp_ctx *ctx, ntp_store *s, int64_t sweep, ntp_sweep_task **out,
                                   int *n)
{
    *out = NULL;
    *n = 0;
    ntp__stmt *q;
    if (!(q = ntp__db_prepare(s, "SELECT idx, state, run_id, job, message, load_run_id, label"
                                 " FROM sweep_tasks"
                                 " WHERE sweep_id = ? ORDER BY idx")))
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the sweep's tasks");
    ntp__db_int(q, 1, sweep);
    ntp_sweep_task *v = NULL;
    int m = 0, cap = 0, rc;
    ntp_status st = NTP_STATUS_OK;
    while ((rc = ntp__db_step(q)) == NTP__STEP_ROW) {
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
        t->index = (int)ntp__db_col_int(q, 0);
        const char *x = ntp__db_col_text(q, 1);
        snprintf(t->state, sizeof t->state, "%s", x ? x : "");
        t->run_id = ntp__db_col_int(q, 2);
        x = ntp__db_col_text(q, 3);
        snprintf(t->job, sizeof t->job, "%s", x ? x : "");
        x = ntp__db_col_text(q, 4);
        snprintf(t->message, sizeof t->message, "%s", x ? x : "");
        t->load_run_id = ntp__db_col_int(q, 5);
        ntp__db_col_str(q, 6, t->label, sizeof t->label);
    }
    if (!st && rc != NTP__STEP_DONE)
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the sweep's tasks");
    ntp__db_finalize(q);
    if (st) {
        free(v);
        return st;
    }
    *out = v;
    *n = m;
    return NTP_STATUS_OK;
}

/* `sweep --wait` reads the rows every few seconds for as long as the array
 * runs, and --resume and --report read them too: a server restarted
 * meanwhile is connected to again. */
ntp_status ntp_store_sweep_tasks(ntp_ctx *ctx, ntp_store *s, int64_t sweep, ntp_sweep_task **out,
                                 int *n)
{
    int waited = 0, attempts = 0;
    char why[sizeof s->err] = "";
    ntp_status st;
    while ((st = sweep_tasks_once(ctx, s, sweep, out, n)) != NTP_STATUS_OK &&
           ntp__store_again(s, &waited, &attempts, why, sizeof why))
        ;
    if (st == NTP_STATUS_OK && attempts > 0)
        ntp__store_retry_warn(ctx, s, "the sweep's tasks were read", waited, attempts, why);
    return st;
}

ntp_status ntp_store_sweep_task_import(ntp_ctx *ctx, ntp_store *s, const ntp_run_result *r,
                                       int64_t run_id, bool *marked)
{
    if (marked)
        *marked = false;
    if (!s || !r || run_id <= 0)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_store_sweep_task_import: no store, result or run id");
    if (r->sweep_id <= 0)
        return NTP_STATUS_OK;
    ntp_sweep_record *rec;
    ntp_status st = ntp_store_sweep_get(ctx, s, r->sweep_id, &rec);
    if (st == NTP_STATUS_UNKNOWN_NAME) {
        ntp_ctx_clear(ctx);
        ntp__warn(ctx,
                  "history %s: run %lld belongs to sweep %lld (created %s), which this history "
                  "does not hold; no sweep's task is marked",
                  s->display, (long long)run_id, (long long)r->sweep_id, r->sweep_created_at);
        return NTP_STATUS_OK;
    }
    if (st)
        return st;
    if (strcmp(rec->created_at, r->sweep_created_at) != 0 || r->sweep_index >= rec->n_configs ||
        strcmp(rec->kind, "run") != 0) {
        ntp__warn(ctx,
                  "history %s: run %lld belongs to sweep %lld created %s, configuration %d; this "
                  "history's sweep %lld was created %s with %d configurations (another store's "
                  "sweep): its tasks are left as they are",
                  s->display, (long long)run_id, (long long)r->sweep_id, r->sweep_created_at,
                  r->sweep_index, (long long)rec->id, rec->created_at, rec->n_configs);
        ntp_sweep_record_free(rec);
        return NTP_STATUS_OK;
    }
    ntp_sweep_record_free(rec);
    ntp_sweep_task t = {.index = r->sweep_index, .run_id = run_id};
    snprintf(t.state, sizeof t.state, "ok");
    snprintf(t.job, sizeof t.job, "%s", r->sweep_job);
    snprintf(t.message, sizeof t.message, "recorded by ntprof history import");
    return ntp_store_sweep_task_set(ctx, s, r->sweep_id, &t, NTP_SWEEP_TASK_UNLESS_OK, marked);
}
