/* Merging one history into another (`ntprof history copy`), whichever the
 * drivers: column for column, so the report stays byte for byte and a
 * column a later migration adds comes along without a change here. A run
 * is identified by its UUID; runs stored before UUIDs existed get one
 * derived from their report (FNV-1a over it, twice), the same wherever
 * the copy runs, so copying twice still stores them once. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "store-impl.h"

static void derive_uuid(const void *data, size_t len, char *out, size_t outlen)
{
    uint64_t h[2] = {0xcbf29ce484222325u, 0x84222325cbf29ce4u};
    const unsigned char *p = data;
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < len; i++)
            h[k] = (h[k] ^ p[i]) * 0x100000001b3u;
    unsigned char b[16];
    for (int i = 0; i < 8; i++) {
        b[i] = (unsigned char)(h[0] >> (56 - 8 * i));
        b[8 + i] = (unsigned char)(h[1] >> (56 - 8 * i));
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x50); /* name-based, like version 5 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, outlen, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

/* An INSERT into `table` of the columns of src's result except `skip`
 * (NULL: none), RETURNING id when `returning`. */
static ntp__stmt *prepare_insert(ntp_store *to, ntp__stmt *src, const char *table, const char *skip,
                                 bool returning)
{
    ntp_store *from = src->s;
    int n = from->drv->column_count(src);
    size_t cap = 128 + strlen(table);
    for (int i = 0; i < n; i++)
        cap += strlen(from->drv->column_name(src, i)) + 4;
    char *sql = malloc(cap);
    if (!sql)
        return NULL;
    size_t o = (size_t)snprintf(sql, cap, "INSERT INTO %s (", table);
    int k = 0;
    for (int i = 0; i < n; i++) {
        const char *c = from->drv->column_name(src, i);
        if (skip && strcmp(c, skip) == 0)
            continue;
        o += (size_t)snprintf(sql + o, cap - o, "%s%s", k++ ? ", " : "", c);
    }
    o += (size_t)snprintf(sql + o, cap - o, ") VALUES (");
    for (int i = 0; i < k; i++)
        o += (size_t)snprintf(sql + o, cap - o, "%s?", i ? ", " : "");
    snprintf(sql + o, cap - o, ")%s", returning ? " RETURNING id" : "");
    ntp__stmt *q = ntp__db_prepare(to, sql);
    free(sql);
    return q;
}

/* Bind column i of src's current row, as it is typed there, to
 * parameter k of ins. */
static void bind_column(ntp__stmt *ins, int k, ntp__stmt *src, int i)
{
    const ntp__store_driver *d = src->s->drv;
    switch (d->column_type(src, i)) {
    case NTP__COL_NULL: ntp__db_null(ins, k); break;
    case NTP__COL_INT: ntp__db_int(ins, k, d->column_int64(src, i)); break;
    case NTP__COL_FLOAT: ntp__db_double(ins, k, d->column_double(src, i)); break;
    case NTP__COL_TEXT: ntp__db_text(ins, k, d->column_text(src, i)); break;
    case NTP__COL_BLOB: {
        size_t len;
        const void *b = d->column_blob(src, i, &len);
        ntp__db_blob(ins, k, b, len);
        break;
    }
    }
}

/* Bind src's current row to ins (made by prepare_insert with the same
 * skip), with column `over` bound to the integer over_int or, when
 * over_text is not NULL, that text. */
static void bind_row(ntp__stmt *ins, ntp__stmt *src, const char *skip, const char *over,
                     int64_t over_int, const char *over_text)
{
    const ntp__store_driver *d = src->s->drv;
    int n = d->column_count(src), k = 1;
    for (int i = 0; i < n; i++) {
        const char *c = d->column_name(src, i);
        if (skip && strcmp(c, skip) == 0)
            continue;
        if (over && strcmp(c, over) == 0) {
            if (over_text)
                ntp__db_text(ins, k++, over_text);
            else
                ntp__db_int(ins, k++, over_int);
            continue;
        }
        bind_column(ins, k++, src, i);
    }
}

/* Every row of `table` whose `key` column is key_int (or key_text) in
 * `from`, inserted into `to` with that column set to new_int (or new_text). */
static ntp_status copy_children(ntp_ctx *ctx, ntp_store *from, ntp_store *to, const char *table,
                                const char *key, int64_t key_int, const char *key_text,
                                int64_t new_int)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT * FROM %s WHERE %s = ? ORDER BY idx", table, key);
    ntp__stmt *src = ntp__db_prepare(from, sql);
    if (!src)
        return ntp__store_error(ctx, from, NTP_STATUS_INTERNAL, "cannot read");
    if (key_text)
        ntp__db_text(src, 1, key_text);
    else
        ntp__db_int(src, 1, key_int);
    ntp__stmt *ins = NULL;
    ntp_status st = NTP_STATUS_OK;
    ntp__step rc = NTP__STEP_DONE;
    while (!st && (rc = ntp__db_step(src)) == NTP__STEP_ROW) {
        if (!ins && !(ins = prepare_insert(to, src, table, NULL, false))) {
            st = ntp__store_error(ctx, to, NTP_STATUS_INTERNAL, "cannot prepare");
            break;
        }
        ntp__db_reset(ins);
        bind_row(ins, src, NULL, key, new_int, key_text);
        if (ntp__db_step(ins) != NTP__STEP_DONE)
            st = ntp__store_error(ctx, to, NTP_STATUS_INTERNAL, "cannot copy");
    }
    if (!st && rc == NTP__STEP_ERROR)
        st = ntp__store_error(ctx, from, NTP_STATUS_INTERNAL, "cannot read");
    ntp__db_finalize(ins);
    ntp__db_finalize(src);
    return st;
}

/* Run `id` of `from` into `to` under `uuid`, in one transaction of `to`. */
static ntp_status copy_run(ntp_ctx *ctx, ntp_store *from, ntp_store *to, int64_t id,
                           const char *uuid)
{
    ntp__stmt *src = ntp__db_prepare(from, "SELECT * FROM runs WHERE id = ?");
    if (!src)
        return ntp__store_error(ctx, from, NTP_STATUS_INTERNAL, "cannot read a run");
    ntp__db_int(src, 1, id);
    ntp_status st = NTP_STATUS_OK;
    if (ntp__db_step(src) != NTP__STEP_ROW) {
        st = ntp__store_error(ctx, from, NTP_STATUS_INTERNAL, "cannot read a run");
        ntp__db_finalize(src);
        return st;
    }
    if ((st = ntp__store_begin(ctx, to))) {
        ntp__db_finalize(src);
        return st;
    }
    int64_t nid = 0;
    ntp__stmt *ins = prepare_insert(to, src, "runs", "id", true);
    if (!ins) {
        st = ntp__store_error(ctx, to, NTP_STATUS_INTERNAL, "cannot prepare");
    } else {
        bind_row(ins, src, "id", "uuid", 0, uuid);
        if (ntp__db_step(ins) != NTP__STEP_ROW)
            st = ntp__store_error(ctx, to, NTP_STATUS_INTERNAL, "cannot copy a run");
        else
            nid = ntp__db_col_int(ins, 0);
    }
    ntp__db_finalize(ins);
    ntp__db_finalize(src);
    static const char *const children[] = {"rows", "markers", "warnings"};
    for (int i = 0; i < 3 && !st; i++)
        st = copy_children(ctx, from, to, children[i], "run_id", id, NULL, nid);
    if (st) {
        ntp__store_rollback(to);
        return st;
    }
    return ntp__store_commit(ctx, to);
}

/* The runs of `from`: ids and UUIDs (derived where missing), oldest first. */
typedef struct run_ref {
    int64_t id;
    char uuid[40];
} run_ref;

static ntp_status list_runs(ntp_ctx *ctx, ntp_store *from, run_ref **out, int64_t *n)
{
    *out = NULL;
    *n = 0;
    ntp__stmt *q = ntp__db_prepare(from, "SELECT id, uuid FROM runs ORDER BY id");
    if (!q)
        return ntp__store_error(ctx, from, NTP_STATUS_INTERNAL, "cannot list runs");
    run_ref *r = NULL;
    int64_t cap = 0, count = 0;
    ntp_status st = NTP_STATUS_OK;
    ntp__step rc = NTP__STEP_DONE;
    while ((rc = ntp__db_step(q)) == NTP__STEP_ROW) {
        if (count == cap) {
            cap = cap ? 2 * cap : 64;
            run_ref *p = realloc(r, (size_t)cap * sizeof *p);
            if (!p) {
                st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
                break;
            }
            r = p;
        }
        r[count].id = ntp__db_col_int(q, 0);
        const char *u = ntp__db_col_text(q, 1);
        snprintf(r[count].uuid, sizeof r[count].uuid, "%s", u ? u : "");
        count++;
    }
    if (!st && rc == NTP__STEP_ERROR)
        st = ntp__store_error(ctx, from, NTP_STATUS_INTERNAL, "cannot list runs");
    ntp__db_finalize(q);
    for (int64_t i = 0; !st && i < count; i++) {
        if (r[i].uuid[0])
            continue;
        q = ntp__db_prepare(from, "SELECT report FROM runs WHERE id = ?");
        if (!q) {
            st = ntp__store_error(ctx, from, NTP_STATUS_INTERNAL, "cannot read a run");
            break;
        }
        ntp__db_int(q, 1, r[i].id);
        if (ntp__db_step(q) == NTP__STEP_ROW) {
            size_t len;
            const void *b = from->drv->column_blob(q, 0, &len);
            derive_uuid(b, len, r[i].uuid, sizeof r[i].uuid);
        } else {
            st = ntp__store_error(ctx, from, NTP_STATUS_INTERNAL, "cannot read a run");
        }
        ntp__db_finalize(q);
    }
    if (st) {
        free(r);
        return st;
    }
    *out = r;
    *n = count;
    return NTP_STATUS_OK;
}

/* Machines whose ceilings `to` lacks, with their GPUs. */
/* The count that `have` (a bound SELECT count(*)) returns into *n; `what`
 * is the error's message when it returns no row. */
static ntp_status count_of(ntp_ctx *ctx, ntp_store *to, ntp__stmt *have, const char *what,
                           int64_t *n)
{
    *n = 0;
    if (ntp__db_step(have) != NTP__STEP_ROW)
        return ntp__store_error(ctx, to, NTP_STATUS_INTERNAL, what);
    *n = ntp__db_col_int(have, 0);
    return NTP_STATUS_OK;
}

static ntp_status copy_machines(ntp_ctx *ctx, ntp_store *from, ntp_store *to, int64_t *copied)
{
    ntp__stmt *src = ntp__db_prepare(from, "SELECT * FROM machines ORDER BY key");
    if (!src)
        return ntp__store_error(ctx, from, NTP_STATUS_INTERNAL, "cannot read the machines");
    ntp_status st = NTP_STATUS_OK;
    ntp__step rc = NTP__STEP_DONE;
    int key_col = -1;
    while (!st && (rc = ntp__db_step(src)) == NTP__STEP_ROW) {
        for (int i = 0; key_col < 0 && i < from->drv->column_count(src); i++)
            if (strcmp(from->drv->column_name(src, i), "key") == 0)
                key_col = i;
        char *key = ntp__strdup(ntp__db_col_text(src, key_col < 0 ? 0 : key_col));
        if (!key) {
            st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            break;
        }
        ntp__stmt *have = ntp__db_prepare(to, "SELECT count(*) FROM machines WHERE key = ?");
        int64_t n = 0;
        if (!have) {
            st = ntp__store_error(ctx, to, NTP_STATUS_INTERNAL, "cannot read the machines");
        } else {
            ntp__db_text(have, 1, key);
            st = count_of(ctx, to, have, "cannot read the machines", &n);
            ntp__db_finalize(have);
        }
        if (!st && n == 0 && !(st = ntp__store_begin(ctx, to))) {
            ntp__stmt *ins = prepare_insert(to, src, "machines", NULL, false);
            if (!ins)
                st = ntp__store_error(ctx, to, NTP_STATUS_INTERNAL, "cannot prepare");
            else {
                bind_row(ins, src, NULL, NULL, 0, NULL);
                if (ntp__db_step(ins) != NTP__STEP_DONE)
                    st = ntp__store_error(ctx, to, NTP_STATUS_INTERNAL, "cannot copy a machine");
            }
            ntp__db_finalize(ins);
            if (!st)
                st = copy_children(ctx, from, to, "machine_gpus", "machine", 0, key, 0);
            if (st)
                ntp__store_rollback(to);
            else if (!(st = ntp__store_commit(ctx, to)))
                ++*copied;
        }
        free(key);
    }
    if (!st && rc == NTP__STEP_ERROR)
        st = ntp__store_error(ctx, from, NTP_STATUS_INTERNAL, "cannot read the machines");
    ntp__db_finalize(src);
    return st;
}

/* Load runs (schema 7) `to` lacks, column for column with their reports,
 * oldest first, each in one statement. A load run has no UUID: it is the
 * same as one of `to` recorded at the same time with the same report, byte
 * for byte, so copying twice stores it once. A `from` older than schema 7
 * has none. */
static ntp_status copy_loads(ntp_ctx *ctx, ntp_store *from, ntp_store *to, int64_t *copied,
                             int64_t *present)
{
    int version = 0;
    ntp_status st = ntp__store_version(ctx, from, &version);
    if (st || version < 7)
        return st;
    ntp__stmt *src = ntp__db_prepare(from, "SELECT * FROM load_runs ORDER BY id");
    if (!src)
        return ntp__store_error(ctx, from, NTP_STATUS_INTERNAL, "cannot read the load runs");
    ntp__stmt *have =
        ntp__db_prepare(to, "SELECT count(*) FROM load_runs WHERE time = ? AND report = ?");
    ntp__stmt *ins = NULL;
    if (!have)
        st = ntp__store_error(ctx, to, NTP_STATUS_INTERNAL, "cannot read the load runs");
    ntp__step rc = NTP__STEP_DONE;
    int time_col = -1, report_col = -1;
    while (!st && (rc = ntp__db_step(src)) == NTP__STEP_ROW) {
        for (int i = 0; (time_col < 0 || report_col < 0) && i < from->drv->column_count(src); i++) {
            const char *c = from->drv->column_name(src, i);
            if (strcmp(c, "time") == 0)
                time_col = i;
            else if (strcmp(c, "report") == 0)
                report_col = i;
        }
        if (time_col < 0 || report_col < 0) {
            st = ntp__error(ctx, NTP_STATUS_INTERNAL,
                            "history %s: load_runs has no time or report column", from->display);
            break;
        }
        size_t len;
        const void *report = from->drv->column_blob(src, report_col, &len);
        ntp__db_reset(have);
        ntp__db_text(have, 1, ntp__db_col_text(src, time_col));
        ntp__db_blob(have, 2, report, len);
        int64_t n;
        if ((st = count_of(ctx, to, have, "cannot read the load runs", &n)))
            break;
        if (n > 0) {
            ++*present;
            continue;
        }
        if (!ins && !(ins = prepare_insert(to, src, "load_runs", "id", false))) {
            st = ntp__store_error(ctx, to, NTP_STATUS_INTERNAL, "cannot prepare");
            break;
        }
        ntp__db_reset(ins);
        bind_row(ins, src, "id", NULL, 0, NULL);
        if (ntp__db_step(ins) != NTP__STEP_DONE)
            st = ntp__store_error(ctx, to, NTP_STATUS_INTERNAL, "cannot copy a load run");
        else
            ++*copied;
    }
    if (!st && rc == NTP__STEP_ERROR)
        st = ntp__store_error(ctx, from, NTP_STATUS_INTERNAL, "cannot read the load runs");
    ntp__db_finalize(ins);
    ntp__db_finalize(have);
    ntp__db_finalize(src);
    return st;
}

/* --- sweeps (schema 6; their kind, labels and load runs: schema 8) ------------------------- */

/* Bind src's current row to ins (prepare_insert with `skip`), the columns
 * named in over[] bound to vals[] (an id: 0 or less binds NULL). */
static void bind_row_ids(ntp__stmt *ins, ntp__stmt *src, const char *skip, const char *const *over,
                         const int64_t *vals, int n_over)
{
    const ntp__store_driver *d = src->s->drv;
    int n = d->column_count(src), k = 1;
    for (int i = 0; i < n; i++) {
        const char *c = d->column_name(src, i);
        if (skip && strcmp(c, skip) == 0)
            continue;
        int j = 0;
        while (j < n_over && strcmp(c, over[j]) != 0)
            j++;
        if (j < n_over) {
            if (vals[j] > 0)
                ntp__db_int(ins, k++, vals[j]);
            else
                ntp__db_null(ins, k++);
            continue;
        }
        bind_column(ins, k++, src, i);
    }
}

static int column_of(ntp__stmt *q, const char *name)
{
    const ntp__store_driver *d = q->s->drv;
    for (int i = 0; i < d->column_count(q); i++)
        if (strcmp(d->column_name(q, i), name) == 0)
            return i;
    return -1;
}

/* The id in `to` of run `id` of `from` (by its UUID, derived or stored:
 * runs[] sorted by id); 0 when `to` has none. */
static ntp_status map_run(ntp_ctx *ctx, ntp_store *to, const run_ref *runs, int64_t n, int64_t id,
                          int64_t *out)
{
    *out = 0;
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (runs[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == n || runs[lo].id != id)
        return NTP_STATUS_OK;
    return ntp__store_find_uuid(ctx, to, runs[lo].uuid, out);
}

/* The id in `to` of load run `id` of `from` (the same time and report,
 * as copy_loads matches them); 0 when `to` has none. */
static ntp_status map_load(ntp_ctx *ctx, ntp_store *from, ntp_store *to, int64_t id, int64_t *out)
{
    *out = 0;
    ntp__stmt *q = ntp__db_prepare(from, "SELECT time, report FROM load_runs WHERE id = ?");
    if (!q)
        return ntp__store_error(ctx, from, NTP_STATUS_INTERNAL, "cannot read the load runs");
    ntp__db_int(q, 1, id);
    ntp_status st = NTP_STATUS_OK;
    ntp__step rc = ntp__db_step(q);
    if (rc == NTP__STEP_ROW) {
        ntp__stmt *h = ntp__db_prepare(
            to, "SELECT id FROM load_runs WHERE time = ? AND report = ? ORDER BY id LIMIT 1");
        if (!h) {
            st = ntp__store_error(ctx, to, NTP_STATUS_INTERNAL, "cannot read the load runs");
        } else {
            size_t len;
            const void *b = from->drv->column_blob(q, 1, &len);
            ntp__db_text(h, 1, ntp__db_col_text(q, 0));
            ntp__db_blob(h, 2, b, len);
            ntp__step r2 = ntp__db_step(h);
            if (r2 == NTP__STEP_ROW)
                *out = ntp__db_col_int(h, 0);
            else if (r2 == NTP__STEP_ERROR)
                st = ntp__store_error(ctx, to, NTP_STATUS_INTERNAL, "cannot read the load runs");
            ntp__db_finalize(h);
        }
    } else if (rc == NTP__STEP_ERROR) {
        st = ntp__store_error(ctx, from, NTP_STATUS_INTERNAL, "cannot read the load runs");
    }
    ntp__db_finalize(q);
    return st;
}

/* Sweep `id` (src's current row) into `to` with its tasks, their runs and
 * load runs mapped to `to`'s ids (copied before), in one transaction. */
static ntp_status copy_one_sweep(ntp_ctx *ctx, ntp_store *from, ntp_store *to, ntp__stmt *src,
                                 int64_t id, const run_ref *runs, int64_t n_runs)
{
    ntp_status st = ntp__store_begin(ctx, to);
    if (st)
        return st;
    int64_t nid = 0;
    ntp__stmt *ins = prepare_insert(to, src, "sweeps", "id", true);
    if (!ins) {
        st = ntp__store_error(ctx, to, NTP_STATUS_INTERNAL, "cannot prepare");
    } else {
        bind_row(ins, src, "id", NULL, 0, NULL);
        if (ntp__db_step(ins) != NTP__STEP_ROW)
            st = ntp__store_error(ctx, to, NTP_STATUS_INTERNAL, "cannot copy a sweep");
        else
            nid = ntp__db_col_int(ins, 0);
    }
    ntp__db_finalize(ins);
    ins = NULL;
    ntp__stmt *t =
        st ? NULL
           : ntp__db_prepare(from, "SELECT * FROM sweep_tasks WHERE sweep_id = ? ORDER BY idx");
    if (!st && !t)
        st = ntp__store_error(ctx, from, NTP_STATUS_INTERNAL, "cannot read the sweep tasks");
    if (t)
        ntp__db_int(t, 1, id);
    ntp__step rc = NTP__STEP_DONE;
    int run_col = -1, load_col = -1;
    while (!st && (rc = ntp__db_step(t)) == NTP__STEP_ROW) {
        if (!ins) {
            run_col = column_of(t, "run_id");
            load_col = column_of(t, "load_run_id");
            if (!(ins = prepare_insert(to, t, "sweep_tasks", NULL, false))) {
                st = ntp__store_error(ctx, to, NTP_STATUS_INTERNAL, "cannot prepare");
                break;
            }
        }
        int64_t vals[3] = {nid, 0, 0};
        if (run_col >= 0 && from->drv->column_type(t, run_col) == NTP__COL_INT)
            st = map_run(ctx, to, runs, n_runs, from->drv->column_int64(t, run_col), &vals[1]);
        if (!st && load_col >= 0 && from->drv->column_type(t, load_col) == NTP__COL_INT)
            st = map_load(ctx, from, to, from->drv->column_int64(t, load_col), &vals[2]);
        if (st)
            break;
        static const char *const over[] = {"sweep_id", "run_id", "load_run_id"};
        ntp__db_reset(ins);
        bind_row_ids(ins, t, NULL, over, vals, 3);
        if (ntp__db_step(ins) != NTP__STEP_DONE)
            st = ntp__store_error(ctx, to, NTP_STATUS_INTERNAL, "cannot copy a sweep task");
    }
    if (!st && rc == NTP__STEP_ERROR)
        st = ntp__store_error(ctx, from, NTP_STATUS_INTERNAL, "cannot read the sweep tasks");
    ntp__db_finalize(ins);
    ntp__db_finalize(t);
    if (st) {
        ntp__store_rollback(to);
        return st;
    }
    return ntp__store_commit(ctx, to);
}

/* Sweeps `to` lacks, oldest first: one is the same as one of `to` created
 * at the same time from the same source, design, factors and options, so
 * copying twice stores it once. A `from` older than schema 6 has none. */
static ntp_status copy_sweeps(ntp_ctx *ctx, ntp_store *from, ntp_store *to, const run_ref *runs,
                              int64_t n_runs, int64_t *copied, int64_t *present)
{
    int version = 0;
    ntp_status st = ntp__store_version(ctx, from, &version);
    if (st || version < 6)
        return st;
    ntp__stmt *src = ntp__db_prepare(from, "SELECT * FROM sweeps ORDER BY id");
    if (!src)
        return ntp__store_error(ctx, from, NTP_STATUS_INTERNAL, "cannot read the sweeps");
    ntp__stmt *have = ntp__db_prepare(to, "SELECT count(*) FROM sweeps WHERE created_at = ? AND "
                                          "source = ? AND design = ? AND factors = ? AND "
                                          "run_options = ?");
    if (!have)
        st = ntp__store_error(ctx, to, NTP_STATUS_INTERNAL, "cannot read the sweeps");
    static const char *const key[] = {"created_at", "source", "design", "factors", "run_options"};
    int col[5] = {-1, -1, -1, -1, -1};
    int id_col = -1;
    ntp__step rc = NTP__STEP_DONE;
    while (!st && (rc = ntp__db_step(src)) == NTP__STEP_ROW) {
        if (id_col < 0) {
            id_col = column_of(src, "id");
            for (int i = 0; i < 5; i++)
                if ((col[i] = column_of(src, key[i])) < 0)
                    id_col = -1;
            if (id_col < 0) {
                st = ntp__error(ctx, NTP_STATUS_INTERNAL,
                                "history %s: sweeps lacks the columns that identify a sweep",
                                from->display);
                break;
            }
        }
        ntp__db_reset(have);
        for (int i = 0; i < 5; i++)
            ntp__db_text(have, i + 1, ntp__db_col_text(src, col[i]));
        int64_t n;
        if ((st = count_of(ctx, to, have, "cannot read the sweeps", &n)))
            break;
        if (n > 0) {
            ++*present;
            continue;
        }
        st = copy_one_sweep(ctx, from, to, src, ntp__db_col_int(src, id_col), runs, n_runs);
        if (!st)
            ++*copied;
    }
    if (!st && rc == NTP__STEP_ERROR)
        st = ntp__store_error(ctx, from, NTP_STATUS_INTERNAL, "cannot read the sweeps");
    ntp__db_finalize(have);
    ntp__db_finalize(src);
    return st;
}

ntp_status ntp_store_copy(ntp_ctx *ctx, ntp_store *from, ntp_store *to, ntp_store_copy_stats *stats)
{
    ntp_store_copy_stats none;
    if (!stats)
        stats = &none;
    memset(stats, 0, sizeof *stats);
    if (!from || !to)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_store_copy: no store");
    if (to->read_only)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "history %s: opened read-only",
                          to->display);
    if (strcmp(from->path, to->path) == 0)
        return ntp__error(
            ctx, NTP_STATUS_INVALID_ARGUMENT,
            "history copy: ntp_store_copy.from and ntp_store_copy.to are the same store (%s)",
            to->display);
    run_ref *runs;
    int64_t n;
    ntp_status st = list_runs(ctx, from, &runs, &n);
    if (st)
        return st;
    for (int64_t i = 0; i < n && !st; i++) {
        int64_t have = 0;
        int waited = 0, attempts = 0;
        char why[sizeof to->err] = "";
        for (;;) {
            st = ntp__store_find_uuid(ctx, to, runs[i].uuid, &have);
            if (!st && have > 0)
                break;
            if (!st)
                st = copy_run(ctx, from, to, runs[i].id, runs[i].uuid);
            if (!st || !to->drv->lost || !to->drv->lost(to))
                break;
            if (!why[0])
                snprintf(why, sizeof why, "%s", to->err);
            if (!ntp__store_reconnect(to, &waited, &attempts)) {
                st = ntp__error(ctx, NTP_STATUS_IO_ERROR,
                                "history %s: the connection was lost (%s) and not re-established "
                                "over %.1f s; %" PRId64 " of %" PRId64
                                " runs copied (copy again to finish)",
                                to->display, why, waited / 1000.0, stats->runs_copied, n);
                break;
            }
        }
        if (!st && attempts > 0)
            ntp__store_retry_warn(ctx, to, "the copy went on", waited, attempts, why);
        if (st)
            break;
        if (have > 0)
            stats->runs_present++;
        else
            stats->runs_copied++;
    }
    if (!st)
        st = copy_machines(ctx, from, to, &stats->machines_copied);
    if (!st)
        st = copy_loads(ctx, from, to, &stats->loads_copied, &stats->loads_present);
    if (!st)
        st = copy_sweeps(ctx, from, to, runs, n, &stats->sweeps_copied, &stats->sweeps_present);
    free(runs);
    return st;
}
