/* Runs in the history: appending one (one transaction), listing them with
 * filters, and reading a stored report back. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "measure/machine-impl.h"
#include "report/report-impl.h"
#include "store-impl.h"

/* Bind helpers: NaN (a figure that could not be computed) is stored as
 * NULL, like JSON's null. */
static void bind_num(ntp__stmt *q, int i, double v)
{
    if (isfinite(v))
        ntp__db_double(q, i, v);
    else
        ntp__db_null(q, i);
}

/* n, median .. cv: eleven columns from position i. */
static int bind_stats(ntp__stmt *q, int i, const ntp_stats *s)
{
    ntp__db_int(q, i++, (int64_t)s->n);
    const double v[] = {s->median, s->min,    s->mean,    s->p90,     s->p99,
                        s->max,    s->stddev, s->ci95_lo, s->ci95_hi, s->cv};
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
        bind_num(q, i++, v[k]);
    return i;
}

/* The whole JSON report, the lossless copy of the run. */
static ntp_status report_json(ntp_ctx *ctx, const ntp_run_result *r, char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    FILE *f = open_memstream(text, len);
    if (!f)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    ntp_status st = ntp_report_write_run(ctx, r, NTP_FORMAT_JSON, f);
    if (fclose(f) != 0 && st == NTP_STATUS_OK)
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    if (st) {
        free(*text);
        *text = NULL;
    }
    return st;
}

/* The run's params as a JSON object, for filtering in SQL (json_extract). */
static char *params_json(const ntp_run_result *r)
{
    json_t *o = json_object();
    bool ok = o != NULL;
    for (int i = 0; ok && i < r->n_params; i++)
        ntp__jset(&ok, o, r->param_names[i], ntp__json_str(r->param_values[i]));
    char *s = ok ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return s;
}

static const char insert_run_sql[] =
    "INSERT INTO runs (time, topology, source, backend, precision, batch, threads, seed, warmup,"
    " iterations, only_marker, fused, params,"
    " n, median_ms, min_ms, mean_ms, p90_ms, p99_ms, max_ms, stddev_ms, ci95_lo_ms, ci95_hi_ms,"
    " cv, layer_sum_median_ms, throughput, latency_ms, flops, prepare_ms, overhead_fraction,"
    " overhead_per_layer_us, weight_bytes, arena_bytes, workspace_bytes, peak_rss_bytes,"
    " minor_faults, major_faults, machine, cpu_model, cpu_flags, cores, memory_bytes, os,"
    " compiler, libraries, ntprof_version, git_revision, hostname, n_layers, n_markers,"
    " n_warnings, report, uuid) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?, ?,?,?,?,?,?,?,?,?,?,?,"
    " ?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id";

static const char insert_row_sql[] =
    "INSERT INTO rows (run_id, idx, name, type, kind, backend, inlay, fused, fused_into,"
    " output_shape, n, median_ms, min_ms, mean_ms, p90_ms, p99_ms, max_ms, stddev_ms,"
    " ci95_lo_ms, ci95_hi_ms, cv, share, flops, bytes, gflops, gbps, intensity, prepare_ms,"
    " workspace_bytes, attainable_gflops, roof_share)";
enum { ROW_COLS = 31 };

static const char insert_marker_sql[] =
    "INSERT INTO markers (run_id, idx, name, first, last, n, median_ms, min_ms, mean_ms, p90_ms,"
    " p99_ms, max_ms, stddev_ms, ci95_lo_ms, ci95_hi_ms, cv, share, flops, bytes, gflops,"
    " attainable_gflops, roof_share)";
enum { MARKER_COLS = 22 };

static const char insert_warning_sql[] = "INSERT INTO warnings (run_id, idx, text)";
enum { WARNING_COLS = 3 };

/* Binds item k of r (of run id) from parameter i on; returns the next. */
typedef int (*bind_item)(ntp__stmt *q, int i, const ntp_run_result *r, int k, int64_t id);

/* INSERT head VALUES (...), (...), ...: the items a chunk at a time (the
 * driver's batch_rows: 32 on SQLite; on PostgreSQL a run's rows in one
 * statement), so a run's rows cost one or a few statements rather than one
 * each (round trips to a PostgreSQL server; both databases take multi-row
 * VALUES). */
static ntp_status insert_many(ntp_ctx *ctx, ntp_store *s, const char *head, int cols, int n,
                              bind_item bind, const ntp_run_result *r, int64_t id, const char *what)
{
    const int chunk = s->drv->batch_rows > 0 ? s->drv->batch_rows : 32;
    ntp_status st = NTP_STATUS_OK;
    ntp__stmt *full = NULL;
    for (int k0 = 0; k0 < n && !st; k0 += chunk) {
        int m = n - k0 < chunk ? n - k0 : chunk;
        ntp__stmt *q = m == chunk ? full : NULL;
        if (!q) {
            size_t len = strlen(head) + 16 + (size_t)m * (2 * (size_t)cols + 3);
            char *sql = malloc(len);
            if (!sql)
                return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            char *o = sql + sprintf(sql, "%s VALUES ", head);
            for (int j = 0; j < m; j++) {
                *o++ = j ? ',' : ' ';
                *o++ = '(';
                for (int c = 0; c < cols; c++) {
                    if (c)
                        *o++ = ',';
                    *o++ = '?';
                }
                *o++ = ')';
            }
            *o = '\0';
            q = ntp__db_prepare(s, sql);
            free(sql);
            if (!q) {
                st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot prepare");
                break;
            }
            if (m == chunk)
                full = q;
        } else {
            ntp__db_reset(q);
        }
        int i = 1;
        for (int j = 0; j < m; j++)
            i = bind(q, i, r, k0 + j, id);
        if (ntp__db_step(q) != NTP__STEP_DONE)
            st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, what);
        if (q != full)
            ntp__db_finalize(q);
    }
    ntp__db_finalize(full);
    return st;
}

static int bind_layer(ntp__stmt *q, int i, const ntp_run_result *r, int k, int64_t id)
{
    const ntp_layer_result *l = &r->layers[k];
    char shape[192];
    ntp__db_int(q, i++, id);
    ntp__db_int(q, i++, k);
    ntp__db_text(q, i++, l->name);
    ntp__db_text(q, i++, l->type);
    ntp__db_text(q, i++, l->kind);
    ntp__db_text(q, i++, l->backend);
    ntp__db_int(q, i++, l->inlay);
    ntp__db_int(q, i++, l->fused);
    ntp__db_text(q, i++, l->fused ? l->fused_into : NULL);
    ntp__db_text(q, i++, ntp__shape_x(&l->output_shape, shape, sizeof shape));
    i = bind_stats(q, i, &l->time_ms);
    bind_num(q, i++, l->share);
    ntp__db_int(q, i++, l->flops);
    ntp__db_int(q, i++, l->bytes);
    bind_num(q, i++, l->gflops);
    bind_num(q, i++, l->gbps);
    bind_num(q, i++, l->intensity);
    bind_num(q, i++, l->prepare_ms);
    ntp__db_int(q, i++, l->workspace_bytes);
    bind_num(q, i++, l->attainable_gflops > 0 ? l->attainable_gflops : NAN);
    bind_num(q, i++, l->attainable_gflops > 0 ? l->roof_share : NAN);
    return i;
}

static int bind_marker(ntp__stmt *q, int i, const ntp_run_result *r, int k, int64_t id)
{
    const ntp_marker_result *m = &r->markers[k];
    ntp__db_int(q, i++, id);
    ntp__db_int(q, i++, k);
    ntp__db_text(q, i++, m->name);
    ntp__db_int(q, i++, m->first);
    ntp__db_int(q, i++, m->last);
    i = bind_stats(q, i, &m->time_ms);
    bind_num(q, i++, m->share);
    ntp__db_int(q, i++, m->flops);
    ntp__db_int(q, i++, m->bytes);
    bind_num(q, i++, m->gflops);
    bind_num(q, i++, m->attainable_gflops > 0 ? m->attainable_gflops : NAN);
    bind_num(q, i++, m->attainable_gflops > 0 ? m->roof_share : NAN);
    return i;
}

static int bind_warning(ntp__stmt *q, int i, const ntp_run_result *r, int k, int64_t id)
{
    ntp__db_int(q, i++, id);
    ntp__db_int(q, i++, k);
    ntp__db_text(q, i++, r->warnings[k] ? r->warnings[k] : "");
    return i;
}

static ntp_status insert_run(ntp_ctx *ctx, ntp_store *s, const ntp_run_result *r,
                             const char *report, size_t report_len, int64_t *id)
{
    ntp__stmt *q = NULL;
    ntp_status st = NTP_STATUS_OK;
    char *params = params_json(r);
    char seed[32], key[512];
    snprintf(seed, sizeof seed, "%" PRIu64, r->seed);
    ntp__machine_key(r->env.cpu_model, r->env.cores, r->env.hostname, key, sizeof key);
    if (!params)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!(q = ntp__db_prepare(s, insert_run_sql))) {
        free(params);
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot prepare");
    }
    int i = 1;
    ntp__db_text(q, i++, r->env.timestamp);
    ntp__db_text(q, i++, r->topology);
    ntp__db_text(q, i++, r->source);
    ntp__db_text(q, i++, r->backend);
    ntp__db_text(q, i++, ntp_dtype_name(r->precision));
    ntp__db_int(q, i++, r->batch);
    ntp__db_int(q, i++, r->threads);
    ntp__db_text(q, i++, seed);
    ntp__db_int(q, i++, r->warmup);
    ntp__db_int(q, i++, r->iterations);
    ntp__db_text(q, i++, r->only_marker);
    ntp__db_int(q, i++, r->fused);
    ntp__db_text(q, i++, params);
    i = bind_stats(q, i, &r->end_to_end_ms);
    bind_num(q, i++, r->layer_sum_ms.median);
    bind_num(q, i++, r->throughput);
    bind_num(q, i++, r->latency_ms);
    ntp__db_int(q, i++, r->flops);
    bind_num(q, i++, r->prepare_ms);
    bind_num(q, i++, r->overhead_fraction);
    bind_num(q, i++, r->overhead_per_layer_us);
    ntp__db_int(q, i++, r->memory.weight_bytes);
    ntp__db_int(q, i++, r->memory.arena_bytes);
    ntp__db_int(q, i++, r->memory.workspace_bytes);
    ntp__db_int(q, i++, r->memory.peak_rss_bytes);
    ntp__db_int(q, i++, r->memory.minor_faults);
    ntp__db_int(q, i++, r->memory.major_faults);
    ntp__db_text(q, i++, key);
    ntp__db_text(q, i++, r->env.cpu_model);
    ntp__db_text(q, i++, r->env.cpu_flags);
    ntp__db_int(q, i++, r->env.cores);
    ntp__db_int(q, i++, r->env.memory_bytes);
    ntp__db_text(q, i++, r->env.os);
    ntp__db_text(q, i++, r->env.compiler);
    ntp__db_text(q, i++, r->env.libraries);
    ntp__db_text(q, i++, r->env.ntprof_version);
    ntp__db_text(q, i++, r->env.git_revision);
    ntp__db_text(q, i++, r->env.hostname);
    ntp__db_int(q, i++, r->n_layers);
    ntp__db_int(q, i++, r->n_markers);
    ntp__db_int(q, i++, r->n_warnings);
    ntp__db_blob(q, i++, report, report_len);
    ntp__db_text(q, i++, r->env.run_uuid[0] ? r->env.run_uuid : NULL);
    if (ntp__db_step(q) != NTP__STEP_ROW)
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot add the run");
    else
        *id = ntp__db_col_int(q, 0);
    ntp__db_finalize(q);
    free(params);
    return st;
}

static ntp_status insert_rows(ntp_ctx *ctx, ntp_store *s, const ntp_run_result *r, int64_t id)
{
    ntp_status st = insert_many(ctx, s, insert_row_sql, ROW_COLS, r->n_layers, bind_layer, r, id,
                                "cannot add a row");
    if (!st)
        st = insert_many(ctx, s, insert_marker_sql, MARKER_COLS, r->n_markers, bind_marker, r, id,
                         "cannot add a marker");
    if (!st)
        st = insert_many(ctx, s, insert_warning_sql, WARNING_COLS, r->n_warnings, bind_warning, r,
                         id, "cannot add a warning");
    return st;
}

ntp_status ntp__store_find_uuid(ntp_ctx *ctx, ntp_store *s, const char *uuid, int64_t *id)
{
    *id = 0;
    ntp__stmt *q = ntp__db_prepare(s, "SELECT id FROM runs WHERE uuid = ?");
    if (!q)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read a run");
    ntp__db_text(q, 1, uuid);
    ntp__step rc = ntp__db_step(q);
    if (rc == NTP__STEP_ROW)
        *id = ntp__db_col_int(q, 0);
    ntp__db_finalize(q);
    return rc == NTP__STEP_ERROR
               ? ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read a run")
               : NTP_STATUS_OK;
}

/* One attempt: the run and its rows in one transaction, unless a run with
 * its UUID is there already (an earlier attempt whose commit arrived but
 * whose answer was lost). */
static ntp_status add_once(ntp_ctx *ctx, ntp_store *s, const ntp_run_result *r, const char *report,
                           size_t len, int64_t *rid)
{
    ntp_status st = ntp__store_begin(ctx, s);
    if (st)
        return st;
    if (r->env.run_uuid[0] && (st = ntp__store_find_uuid(ctx, s, r->env.run_uuid, rid)) == 0 &&
        *rid > 0) {
        ntp__store_rollback(s);
        return NTP_STATUS_OK;
    }
    if (!st && (st = insert_run(ctx, s, r, report, len, rid)) == NTP_STATUS_OK &&
        (st = insert_rows(ctx, s, r, *rid)) == NTP_STATUS_OK)
        return ntp__store_commit(ctx, s);
    ntp__store_rollback(s);
    return st;
}

ntp_status ntp__store_retry_warn(ntp_ctx *ctx, ntp_store *s, const char *what, int waited_ms,
                                 int attempts, const char *why)
{
    ntp__warn(ctx, "history %s: the connection was lost (%s); %s after %d attempt%s over %.1f s",
              s->display, why, what, attempts, attempts == 1 ? "" : "s", waited_ms / 1000.0);
    return NTP_STATUS_OK;
}

ntp_status ntp_store_add_run(ntp_ctx *ctx, ntp_store *s, const ntp_run_result *r, int64_t *id)
{
    if (!s || !r)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_store_add_run: no store or result");
    if (s->read_only)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "history %s: opened read-only",
                          s->display);
    /* The report is built before the transaction so the write lock is held
     * only for the inserts. */
    char *report;
    size_t len;
    ntp_status st = report_json(ctx, r, &report, &len);
    if (st)
        return st;
    int64_t rid = 0;
    int waited = 0, attempts = 0;
    char why[sizeof s->err] = "";
    for (;;) {
        st = add_once(ctx, s, r, report, len, &rid);
        if (st == NTP_STATUS_OK || !s->drv->lost || !s->drv->lost(s))
            break;
        /* The connection went away mid-write (the server restarted): the
         * same write again on a new connection, which finds the run if the
         * lost attempt had committed it. */
        if (!why[0])
            snprintf(why, sizeof why, "%s", s->err);
        if (!ntp__store_reconnect(s, &waited, &attempts)) {
            st = ntp__error(ctx, NTP_STATUS_IO_ERROR,
                            "history %s: the connection was lost (%s) and not re-established "
                            "in %d attempt%s over %.1f s (%s); the run was not recorded",
                            s->display, why, attempts, attempts == 1 ? "" : "s", waited / 1000.0,
                            s->err);
            break;
        }
    }
    if (st == NTP_STATUS_OK && attempts > 0)
        ntp__store_retry_warn(ctx, s, "the run was written again", waited, attempts, why);
    free(report);
    if (st == NTP_STATUS_OK && id)
        *id = rid;
    return st;
}

ntp_status ntp_store_record_run(ntp_ctx *ctx, const char *path, const ntp_run_result *r,
                                int64_t *id)
{
    ntp_store *s;
    ntp_status st = ntp_store_open(ctx, path, NTP_STORE_CREATE, &s);
    if (st)
        return st;
    st = ntp_store_add_run(ctx, s, r, id);
    ntp_store_close(s);
    return st;
}

static int two_digits(const char *s)
{
    return (s[0] - '0') * 10 + (s[1] - '0');
}

/* "2025-03-01", "2025-03-01T12", "2025-03-01T12:34", "2025-03-01T12:34:56Z":
 * compared as text with the stored timestamps, which sort chronologically.
 * The digits must make a real date and time (not 2025-13-45), or the text
 * comparison would quietly select something else. */
static bool valid_since(const char *s)
{
    static const char pattern[] = "dddd-dd-ddTdd:dd:ddZ";
    size_t n = strlen(s);
    if (n != 10 && n != 13 && n != 16 && n != 19 && n != 20)
        return false;
    for (size_t i = 0; i < n; i++) {
        char p = pattern[i], c = s[i];
        if (p == 'd' ? (c < '0' || c > '9') : c != p)
            return false;
    }
    int year = two_digits(s) * 100 + two_digits(s + 2), month = two_digits(s + 5),
        day = two_digits(s + 8);
    static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (month < 1 || month > 12 || day < 1 || day > mdays[month - 1] ||
        (month == 2 && day == 29 && !leap))
        return false;
    return (n < 13 || two_digits(s + 11) <= 23) && (n < 16 || two_digits(s + 14) <= 59) &&
           (n < 19 || two_digits(s + 17) <= 59);
}

ntp_status ntp_store_list(ntp_ctx *ctx, ntp_store *s, const ntp_history_filter *f,
                          ntp_history_entry **out, int *n)
{
    *out = NULL;
    *n = 0;
    ntp__stmt *q;
    ntp_status qs =
        ntp__store_list_query(ctx, s, f,
                              "id, time, topology, backend, precision, batch, threads,"
                              " median_ms, ci95_lo_ms, ci95_hi_ms, throughput, n_layers,"
                              " machine",
                              "runs", "runs", &q);
    if (qs)
        return qs;
    ntp_history_entry *e = NULL;
    int cap = 0, count = 0;
    ntp__step rc;
    ntp_status st = NTP_STATUS_OK;
    while ((rc = ntp__db_step(q)) == NTP__STEP_ROW) {
        if (count == cap) {
            cap = cap ? 2 * cap : 64;
            ntp_history_entry *p = realloc(e, (size_t)cap * sizeof *p);
            if (!p) {
                st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
                break;
            }
            e = p;
        }
        ntp_history_entry *h = &e[count++];
        memset(h, 0, sizeof *h);
        h->id = ntp__db_col_int(q, 0);
        ntp__db_col_str(q, 1, h->time, sizeof h->time);
        ntp__db_col_str(q, 2, h->topology, sizeof h->topology);
        ntp__db_col_str(q, 3, h->backend, sizeof h->backend);
        ntp__db_col_str(q, 4, h->precision, sizeof h->precision);
        h->batch = ntp__db_col_int(q, 5);
        h->threads = (int)ntp__db_col_int(q, 6);
        h->median_ms = ntp__db_col_num(q, 7);
        h->ci95_lo_ms = ntp__db_col_num(q, 8);
        h->ci95_hi_ms = ntp__db_col_num(q, 9);
        h->throughput = ntp__db_col_num(q, 10);
        h->n_layers = (int)ntp__db_col_int(q, 11);
        ntp__db_col_str(q, 12, h->machine, sizeof h->machine);
    }
    if (!st && rc != NTP__STEP_DONE && rc != NTP__STEP_ROW)
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot list runs");
    ntp__db_finalize(q);
    if (st) {
        free(e);
        return st;
    }
    *out = e;
    *n = count;
    return NTP_STATUS_OK;
}

ntp_status ntp_store_count(ntp_ctx *ctx, ntp_store *s, int64_t *n)
{
    *n = 0;
    ntp__stmt *q = ntp__db_prepare(s, "SELECT count(*) FROM runs");
    if (!q)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot count runs");
    ntp__step rc = ntp__db_step(q);
    if (rc == NTP__STEP_ROW)
        *n = ntp__db_col_int(q, 0);
    ntp__db_finalize(q);
    return rc == NTP__STEP_ROW ? NTP_STATUS_OK
                               : ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot count runs");
}

static ntp_status get_report_once(ntp_ctx *ctx, ntp_store *s, int64_t id, char **json)
{
    *json = NULL;
    ntp__stmt *q = ntp__db_prepare(s, "SELECT report FROM runs WHERE id = ?");
    if (!q)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read a run");
    ntp__db_int(q, 1, id);
    ntp__step rc = ntp__db_step(q);
    ntp_status st = NTP_STATUS_OK;
    if (rc == NTP__STEP_ROW) {
        size_t len = 0;
        const void *b = s->drv->column_blob(q, 0, &len);
        char *t = malloc(len + 1);
        if (!t)
            st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        else {
            if (len > 0)
                memcpy(t, b, len);
            t[len] = '\0';
            *json = t;
        }
    } else if (rc == NTP__STEP_DONE) {
        st = ntp__error(ctx, NTP_STATUS_UNKNOWN_NAME,
                        "history %s: no run %" PRId64 " (`ntprof history` lists them)", s->display,
                        id);
    } else {
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read a run");
    }
    ntp__db_finalize(q);
    return st;
}

/* The sweep's report (`--wait`, `--report`) reads its runs one by one on
 * one connection: a server restarted meanwhile is connected to again. */
ntp_status ntp_store_get_report(ntp_ctx *ctx, ntp_store *s, int64_t id, char **json)
{
    int waited = 0, attempts = 0;
    char why[sizeof s->err] = "";
    ntp_status st;
    while ((st = get_report_once(ctx, s, id, json)) != NTP_STATUS_OK &&
           ntp__store_again(s, &waited, &attempts, why, sizeof why))
        ;
    if (st == NTP_STATUS_OK && attempts > 0)
        ntp__store_retry_warn(ctx, s, "the run was read", waited, attempts, why);
    return st;
}

ntp_status ntp_store_load_run(ntp_ctx *ctx, ntp_store *s, int64_t id, ntp_run_result **out)
{
    *out = NULL;
    char *json;
    ntp_status st = ntp_store_get_report(ctx, s, id, &json);
    if (st)
        return st;
    char name[64];
    snprintf(name, sizeof name, "run %" PRId64, id);
    st = ntp_run_result_parse(ctx, json, strlen(json), name, out);
    free(json);
    return st;
}

/* --- the listing ------------------------------------------------------------------------ */

/* Column widths: with single spaces the table is 100 columns. */
enum {
    H_ID = 6,
    H_TIME = 19,
    H_TOPO = 14,
    H_BACKEND = 8,
    H_PREC = 4,
    H_BATCH = 5,
    H_THR = 3,
    H_MS = 10,
    H_MACHINE = 23
};

static void history_table(const ntp_history_entry *e, int n, FILE *f)
{
    static const int w[] = {H_ID,    H_TIME, H_TOPO, H_BACKEND, H_PREC,
                            H_BATCH, H_THR,  H_MS,   H_MACHINE};
    static const char *const head[] = {"id",    "time", "topology",  "backend", "prec",
                                       "batch", "thr",  "median ms", "machine"};
    for (int i = 0; i < 9; i++) {
        if (i)
            fputc(' ', f);
        ntp__put_cell(f, head[i], w[i], i == 0 || (i >= 5 && i <= 7));
    }
    fputc('\n', f);
    for (int k = 0; k < n; k++) {
        const ntp_history_entry *h = &e[k];
        char id[32], time[32], batch[32], thr[32], ms[32], machine[256];
        snprintf(id, sizeof id, "%" PRId64, h->id);
        snprintf(time, sizeof time, "%s", h->time);
        /* "2025-03-01T12:34:56Z" reads better as "2025-03-01 12:34:56". */
        if (strlen(time) >= 19 && time[10] == 'T') {
            time[10] = ' ';
            time[19] = '\0';
        }
        snprintf(batch, sizeof batch, "%" PRId64, h->batch);
        snprintf(thr, sizeof thr, "%d", h->threads);
        ntp__fit_number(h->median_ms, H_MS, 4, ms, sizeof ms);
        /* The key's CPU model and host name, without the separators. */
        snprintf(machine, sizeof machine, "%s", h->machine);
        for (char *p = machine; *p; p++)
            if (*p == '|')
                *p = ' ';
        const char *cells[] = {id,    time, h->topology, h->backend, h->precision,
                               batch, thr,  ms,          machine};
        for (int i = 0; i < 9; i++) {
            if (i)
                fputc(' ', f);
            ntp__put_cell(f, cells[i], w[i], i == 0 || (i >= 5 && i <= 7));
        }
        fputc('\n', f);
    }
    if (n == 0)
        fputs("no runs recorded (`ntprof run` records every run)\n", f);
}

static ntp_status history_json(ntp_ctx *ctx, const ntp_history_entry *e, int n, FILE *f)
{
    bool ok = true;
    json_t *root = json_object(), *runs = json_array();
    ntp__jset(&ok, root, "kind", json_string("history"));
    for (int k = 0; k < n; k++) {
        const ntp_history_entry *h = &e[k];
        json_t *o = json_object();
        ntp__jset(&ok, o, "id", json_integer(h->id));
        ntp__jset(&ok, o, "time", ntp__json_str(h->time));
        ntp__jset(&ok, o, "topology", ntp__json_str(h->topology));
        ntp__jset(&ok, o, "backend", ntp__json_str(h->backend));
        ntp__jset(&ok, o, "precision", ntp__json_str(h->precision));
        ntp__jset(&ok, o, "batch", json_integer(h->batch));
        ntp__jset(&ok, o, "threads", json_integer(h->threads));
        ntp__jset(&ok, o, "median_ms", ntp__json_num(h->median_ms));
        json_t *ci = json_array();
        ntp__jpush(&ok, ci, ntp__json_num(h->ci95_lo_ms));
        ntp__jpush(&ok, ci, ntp__json_num(h->ci95_hi_ms));
        ntp__jset(&ok, o, "ci95_ms", ci);
        ntp__jset(&ok, o, "throughput_per_s", ntp__json_num(h->throughput));
        ntp__jset(&ok, o, "layers", json_integer(h->n_layers));
        ntp__jset(&ok, o, "machine", ntp__json_str(h->machine));
        ntp__jpush(&ok, runs, o);
    }
    ntp__jset(&ok, root, "runs", runs);
    return ntp__json_finish(ctx, root, ok, f, "history");
}

static void history_csv(const ntp_history_entry *e, int n, FILE *f)
{
    fputs("id,time,topology,backend,precision,batch,threads,median_ms,ci95_lo_ms,ci95_hi_ms,"
          "throughput_per_s,layers,machine\n",
          f);
    for (int k = 0; k < n; k++) {
        const ntp_history_entry *h = &e[k];
        ntp__csv_int(f, h->id);
        ntp__csv_sep(f);
        ntp__csv_str(f, h->time);
        ntp__csv_sep(f);
        ntp__csv_str(f, h->topology);
        ntp__csv_sep(f);
        ntp__csv_str(f, h->backend);
        ntp__csv_sep(f);
        ntp__csv_str(f, h->precision);
        ntp__csv_sep(f);
        ntp__csv_int(f, h->batch);
        ntp__csv_sep(f);
        ntp__csv_int(f, h->threads);
        const double v[] = {h->median_ms, h->ci95_lo_ms, h->ci95_hi_ms, h->throughput};
        for (int i = 0; i < 4; i++) {
            ntp__csv_sep(f);
            ntp__csv_num(f, v[i]);
        }
        ntp__csv_sep(f);
        ntp__csv_int(f, h->n_layers);
        ntp__csv_sep(f);
        ntp__csv_str(f, h->machine);
        fputc('\n', f);
    }
}

ntp_status ntp_report_write_history(ntp_ctx *ctx, const ntp_history_entry *e, int n, ntp_format fmt,
                                    FILE *f)
{
    if ((n > 0 && !e) || !f)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_history: no entries or stream");
    switch (fmt) {
    case NTP_FORMAT_TABLE: history_table(e, n, f); return ntp__check_stream(ctx, f, "history");
    case NTP_FORMAT_JSON: return history_json(ctx, e, n, f);
    case NTP_FORMAT_CSV: history_csv(e, n, f); return ntp__check_stream(ctx, f, "history");
    }
    return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "unknown format %d", (int)fmt);
}

ntp_status ntp__store_list_query(ntp_ctx *ctx, ntp_store *s, const ntp_history_filter *f,
                                 const char *columns, const char *table, const char *what,
                                 ntp__stmt **q)
{
    *q = NULL;
    ntp_history_filter none = {0};
    if (!f)
        f = &none;
    if (f->since && !valid_since(f->since))
        return ntp__error_at(
            ctx, NTP_STATUS_INVALID_ARGUMENT,
            &(ntp__where){.option = "ntp_history_filter.since",
                          .expected = "a date such as 2025-03-01 or 2025-03-01T12:00:00Z"},
            "expects a date such as 2025-03-01 or 2025-03-01T12:00:00Z, "
            "got '%s'",
            f->since);
    if (f->limit < 0)
        return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_history_filter.limit",
                              "must not be negative");
    /* The limit is part of the text: SQLite's "no limit" (-1) is an error
     * on PostgreSQL, and PostgreSQL's (NULL) one on SQLite. */
    char limit[32] = "";
    if (f->limit > 0)
        snprintf(limit, sizeof limit, " LIMIT %d", f->limit);
    char sql[1024], err[64];
    int len = snprintf(sql, sizeof sql,
                       "SELECT %s FROM %s"
                       " WHERE (CAST(?1 AS TEXT) IS NULL OR topology = ?1)"
                       " AND (CAST(?2 AS TEXT) IS NULL OR backend = ?2)"
                       " AND (CAST(?3 AS TEXT) IS NULL OR time >= ?3) ORDER BY id DESC%s",
                       columns, table, limit);
    snprintf(err, sizeof err, "cannot list %s", what);
    if (len < 0 || (size_t)len >= sizeof sql)
        return ntp__error(ctx, NTP_STATUS_INTERNAL, "%s: the query is too long", err);
    *q = ntp__db_prepare(s, sql);
    if (!*q)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, err);
    ntp__db_text(*q, 1, f->topology);
    ntp__db_text(*q, 2, f->backend);
    ntp__db_text(*q, 3, f->since);
    return NTP_STATUS_OK;
}
