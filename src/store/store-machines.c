/* The ceilings cache: one row per machine key, replaced when the machine
 * is measured again (`ntprof machine --remeasure`). */
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "measure/machine-impl.h"
#include "store-impl.h"

ntp_status ntp_store_save_ceilings(ntp_ctx *ctx, ntp_store *s, const ntp_machine_info *m,
                                   const ntp_ceilings *c)
{
    if (!s || !m || !c)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_store_save_ceilings: missing argument");
    if (s->read_only)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "history %s: opened read-only", s->path);
    json_t *dj = ntp__machine_info_json(m), *cj = ntp__ceilings_json(c);
    char *desc = dj ? json_dumps(dj, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    char *ceil = cj ? json_dumps(cj, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(dj);
    json_decref(cj);
    ntp_status st = NTP_STATUS_OK;
    sqlite3_stmt *q = NULL;
    if (!desc || !ceil) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    if ((st = ntp__store_begin(ctx, s)))
        goto out;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT OR REPLACE INTO machines (key, measured_at, cpu_model, cores,"
                           " hostname, description, ceilings) VALUES (?,?,?,?,?,?,?)",
                           -1, &q, NULL) != SQLITE_OK) {
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot prepare");
        ntp__store_rollback(s);
        goto out;
    }
    sqlite3_bind_text(q, 1, c->machine_key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 2, c->measured_at, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 3, m->cpu_model, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(q, 4, m->pus);
    sqlite3_bind_text(q, 5, m->hostname, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 6, desc, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 7, ceil, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(q) != SQLITE_DONE) {
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot save the ceilings");
        ntp__store_rollback(s);
    } else {
        st = ntp__store_commit(ctx, s);
    }
out:
    sqlite3_finalize(q);
    free(desc);
    free(ceil);
    return st;
}

ntp_status ntp_store_load_ceilings(ntp_ctx *ctx, ntp_store *s, const char *machine_key,
                                   ntp_ceilings *out, bool *found)
{
    *found = false;
    memset(out, 0, sizeof *out);
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(s->db, "SELECT ceilings FROM machines WHERE key = ?", -1, &q, NULL) !=
        SQLITE_OK)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the ceilings");
    sqlite3_bind_text(q, 1, machine_key, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(q);
    ntp_status st = NTP_STATUS_OK;
    if (rc == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(q, 0);
        json_t *j = text ? json_loads(text, 0, NULL) : NULL;
        if (!j || !ntp__ceilings_from_json(j, out))
            st = ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                            "history %s: the cached ceilings of '%s' are unreadable; "
                            "run `ntprof machine --remeasure`", s->path, machine_key);
        else
            *found = true;
        json_decref(j);
    } else if (rc != SQLITE_DONE) {
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the ceilings");
    }
    sqlite3_finalize(q);
    return st;
}

ntp_status ntp_store_find_ceilings(ntp_ctx *ctx, const char *path, ntp_ceilings *out, bool *found)
{
    *found = false;
    memset(out, 0, sizeof *out);
    if (access(path, F_OK) != 0)
        return NTP_STATUS_OK;
    ntp_store *s;
    ntp_status st = ntp_store_open(ctx, path, NTP_STORE_READ_ONLY, &s);
    if (st)
        return st;
    char key[256];
    ntp_machine_key(key, sizeof key);
    st = ntp_store_load_ceilings(ctx, s, key, out, found);
    ntp_store_close(s);
    return st;
}
