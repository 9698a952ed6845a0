/* The ceilings cache: one row per machine key, replaced when the machine
 * is measured again (`ntprof machine --remeasure`). The CPU's ceilings are
 * a JSON document in machines.ceilings; the GPUs measured beside them are
 * rows of machine_gpus (schema 3), and why a machine has none is
 * machines.gpu_note. A machine cached before schema 3 reads back with no
 * GPU and no note. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "measure/machine-impl.h"
#include "store-impl.h"

/* One machine_gpus row per GPU of c, inside the caller's transaction. */
static ntp_status save_gpus(ntp_ctx *ctx, ntp_store *s, const ntp_ceilings *c)
{
    if (c->n_gpus == 0)
        return NTP_STATUS_OK;
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO machine_gpus (machine, idx, name, compute_capability, sms,"
                           " clock_ghz, memory_bytes, gemm_f32_gflops, gemm_tf32_gflops,"
                           " gemm_f16_gflops, gemm_bf16_gflops, gemm_f32_n, gemm_tf32_n,"
                           " gemm_f16_n, gemm_bf16_n, dram_gbps, h2d_gbps, d2h_gbps)"
                           " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &q, NULL) != SQLITE_OK)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot prepare");
    ntp_status st = NTP_STATUS_OK;
    for (int i = 0; i < c->n_gpus && !st; i++) {
        const ntp_gpu_ceilings *g = &c->gpus[i];
        char sm[24];
        snprintf(sm, sizeof sm, "%d.%d", g->sm_major, g->sm_minor);
        int k = 1;
        sqlite3_bind_text(q, k++, c->machine_key, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(q, k++, i);
        sqlite3_bind_text(q, k++, g->name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(q, k++, sm, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(q, k++, g->sms);
        sqlite3_bind_double(q, k++, g->clock_ghz);
        sqlite3_bind_int64(q, k++, g->memory_bytes);
        for (int m = 0; m < NTP_GPU_MATH_COUNT; m++)
            sqlite3_bind_double(q, k++, g->gemm_gflops[m]);
        for (int m = 0; m < NTP_GPU_MATH_COUNT; m++)
            sqlite3_bind_int(q, k++, g->gemm_n[m]);
        sqlite3_bind_double(q, k++, g->dram_gbps);
        sqlite3_bind_double(q, k++, g->h2d_gbps);
        sqlite3_bind_double(q, k++, g->d2h_gbps);
        if (sqlite3_step(q) != SQLITE_DONE)
            st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot save the GPU ceilings");
        sqlite3_reset(q);
    }
    sqlite3_finalize(q);
    return st;
}

/* The GPUs cached for machine_key, in order. */
static ntp_status load_gpus(ntp_ctx *ctx, ntp_store *s, const char *machine_key, ntp_ceilings *c)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT name, compute_capability, sms, clock_ghz, memory_bytes,"
                           " gemm_f32_gflops, gemm_tf32_gflops, gemm_f16_gflops, gemm_bf16_gflops,"
                           " gemm_f32_n, gemm_tf32_n, gemm_f16_n, gemm_bf16_n, dram_gbps, h2d_gbps,"
                           " d2h_gbps FROM machine_gpus WHERE machine = ? ORDER BY idx",
                           -1, &q, NULL) != SQLITE_OK)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the GPU ceilings");
    sqlite3_bind_text(q, 1, machine_key, -1, SQLITE_TRANSIENT);
    int rc;
    c->n_gpus = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW && c->n_gpus < NTP_MACHINE_MAX_GPUS) {
        ntp_gpu_ceilings *g = &c->gpus[c->n_gpus++];
        memset(g, 0, sizeof *g);
        const char *name = (const char *)sqlite3_column_text(q, 0);
        const char *sm = (const char *)sqlite3_column_text(q, 1);
        snprintf(g->name, sizeof g->name, "%s", name ? name : "");
        if (!sm || sscanf(sm, "%d.%d", &g->sm_major, &g->sm_minor) != 2)
            g->sm_major = g->sm_minor = 0;
        g->sms = sqlite3_column_int(q, 2);
        g->clock_ghz = sqlite3_column_double(q, 3);
        g->memory_bytes = sqlite3_column_int64(q, 4);
        for (int m = 0; m < NTP_GPU_MATH_COUNT; m++) {
            g->gemm_gflops[m] = sqlite3_column_double(q, 5 + m);
            g->gemm_n[m] = sqlite3_column_int(q, 5 + NTP_GPU_MATH_COUNT + m);
        }
        g->dram_gbps = sqlite3_column_double(q, 13);
        g->h2d_gbps = sqlite3_column_double(q, 14);
        g->d2h_gbps = sqlite3_column_double(q, 15);
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the GPU ceilings");
    return NTP_STATUS_OK;
}

ntp_status ntp_store_save_ceilings(ntp_ctx *ctx, ntp_store *s, const ntp_machine_info *m,
                                   const ntp_ceilings *c)
{
    if (!s || !m || !c)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_store_save_ceilings: missing argument");
    if (s->read_only)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "history %s: opened read-only",
                          s->path);
    json_t *dj = ntp__machine_info_json(m), *cj = ntp__ceilings_json(c);
    /* The GPUs have columns of their own; the document keeps the CPU's. */
    if (cj) {
        json_object_del(cj, "gpus");
        json_object_del(cj, "gpu_note");
    }
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
    /* The old machine's GPUs go first: a replaced row takes no GPU of its
     * predecessor along, whatever the foreign-key settings. */
    if (sqlite3_prepare_v2(s->db, "DELETE FROM machine_gpus WHERE machine = ?", -1, &q, NULL) !=
        SQLITE_OK) {
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot prepare");
        ntp__store_rollback(s);
        goto out;
    }
    sqlite3_bind_text(q, 1, c->machine_key, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(q);
    sqlite3_finalize(q);
    q = NULL;
    if (rc != SQLITE_DONE) {
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot save the ceilings");
        ntp__store_rollback(s);
        goto out;
    }
    if (sqlite3_prepare_v2(s->db,
                           "INSERT OR REPLACE INTO machines (key, measured_at, cpu_model, cores,"
                           " hostname, description, ceilings, gpu_note) VALUES (?,?,?,?,?,?,?,?)",
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
    if (c->n_gpus == 0)
        sqlite3_bind_text(q, 8, c->gpu_note, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(q, 8);
    if (sqlite3_step(q) != SQLITE_DONE || (st = save_gpus(ctx, s, c)) != NTP_STATUS_OK) {
        if (!st)
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
    if (sqlite3_prepare_v2(s->db, "SELECT ceilings, gpu_note FROM machines WHERE key = ?", -1, &q,
                           NULL) != SQLITE_OK)
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
                            "run `ntprof machine --remeasure`",
                            s->path, machine_key);
        else
            *found = true;
        json_decref(j);
        const char *note = (const char *)sqlite3_column_text(q, 1);
        snprintf(out->gpu_note, sizeof out->gpu_note, "%s", note ? note : "");
        if (*found && (st = load_gpus(ctx, s, machine_key, out)) != NTP_STATUS_OK)
            *found = false;
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
