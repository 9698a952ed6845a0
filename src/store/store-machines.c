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
#include "core/writers-impl.h"
#include "measure/machine-impl.h"
#include "store-impl.h"

/* One machine_gpus row per GPU of c, inside the caller's transaction. */
static ntp_status save_gpus(ntp_ctx *ctx, ntp_store *s, const ntp_ceilings *c)
{
    if (c->n_gpus == 0)
        return NTP_STATUS_OK;
    ntp__stmt *q =
        ntp__db_prepare(s, "INSERT INTO machine_gpus (machine, idx, name, compute_capability, sms,"
                           " clock_ghz, memory_bytes, gemm_f32_gflops, gemm_tf32_gflops,"
                           " gemm_f16_gflops, gemm_bf16_gflops, gemm_f32_n, gemm_tf32_n,"
                           " gemm_f16_n, gemm_bf16_n, dram_gbps, h2d_gbps, d2h_gbps)"
                           " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    if (!q)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot prepare");
    ntp_status st = NTP_STATUS_OK;
    for (int i = 0; i < c->n_gpus && !st; i++) {
        const ntp_gpu_ceilings *g = &c->gpus[i];
        char sm[24];
        snprintf(sm, sizeof sm, "%d.%d", g->sm_major, g->sm_minor);
        int k = 1;
        ntp__db_text(q, k++, c->machine_key);
        ntp__db_int(q, k++, i);
        ntp__db_text(q, k++, g->name);
        ntp__db_text(q, k++, sm);
        ntp__db_int(q, k++, g->sms);
        ntp__db_double(q, k++, g->clock_ghz);
        ntp__db_int(q, k++, g->memory_bytes);
        for (int m = 0; m < NTP_GPU_MATH_COUNT; m++)
            ntp__db_double(q, k++, g->gemm_gflops[m]);
        for (int m = 0; m < NTP_GPU_MATH_COUNT; m++)
            ntp__db_int(q, k++, g->gemm_n[m]);
        ntp__db_double(q, k++, g->dram_gbps);
        ntp__db_double(q, k++, g->h2d_gbps);
        ntp__db_double(q, k++, g->d2h_gbps);
        if (ntp__db_step(q) != NTP__STEP_DONE)
            st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot save the GPU ceilings");
        ntp__db_reset(q);
    }
    ntp__db_finalize(q);
    return st;
}

/* The GPUs cached for machine_key, in order. */
static ntp_status load_gpus(ntp_ctx *ctx, ntp_store *s, const char *machine_key, ntp_ceilings *c)
{
    ntp__stmt *q =
        ntp__db_prepare(s, "SELECT name, compute_capability, sms, clock_ghz, memory_bytes,"
                           " gemm_f32_gflops, gemm_tf32_gflops, gemm_f16_gflops, gemm_bf16_gflops,"
                           " gemm_f32_n, gemm_tf32_n, gemm_f16_n, gemm_bf16_n, dram_gbps, h2d_gbps,"
                           " d2h_gbps FROM machine_gpus WHERE machine = ? ORDER BY idx");
    if (!q)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the GPU ceilings");
    ntp__db_text(q, 1, machine_key);
    ntp__step rc;
    c->n_gpus = 0;
    while ((rc = ntp__db_step(q)) == NTP__STEP_ROW && c->n_gpus < NTP_MACHINE_MAX_GPUS) {
        ntp_gpu_ceilings *g = &c->gpus[c->n_gpus++];
        memset(g, 0, sizeof *g);
        const char *name = ntp__db_col_text(q, 0);
        const char *sm = ntp__db_col_text(q, 1);
        snprintf(g->name, sizeof g->name, "%s", name ? name : "");
        if (!sm || sscanf(sm, "%d.%d", &g->sm_major, &g->sm_minor) != 2)
            g->sm_major = g->sm_minor = 0;
        g->sms = (int)ntp__db_col_int(q, 2);
        g->clock_ghz = ntp__db_col_double(q, 3);
        g->memory_bytes = ntp__db_col_int(q, 4);
        for (int m = 0; m < NTP_GPU_MATH_COUNT; m++) {
            g->gemm_gflops[m] = ntp__db_col_double(q, 5 + m);
            g->gemm_n[m] = (int)ntp__db_col_int(q, 5 + NTP_GPU_MATH_COUNT + m);
        }
        g->dram_gbps = ntp__db_col_double(q, 13);
        g->h2d_gbps = ntp__db_col_double(q, 14);
        g->d2h_gbps = ntp__db_col_double(q, 15);
    }
    ntp__db_finalize(q);
    if (rc == NTP__STEP_ERROR)
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
                          s->display);
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
    ntp__stmt *q = NULL;
    if (!desc || !ceil) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    if ((st = ntp__store_begin(ctx, s)))
        goto out;
    /* The old machine's GPUs go first, then its row (the two statements
     * are plain SQL on both drivers, where INSERT OR REPLACE is not): a
     * replaced row takes no GPU of its predecessor along, whatever the
     * foreign-key settings. */
    static const char *const deletes[] = {"DELETE FROM machine_gpus WHERE machine = ?",
                                          "DELETE FROM machines WHERE key = ?"};
    for (int k = 0; k < 2; k++) {
        if (!(q = ntp__db_prepare(s, deletes[k]))) {
            st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot prepare");
            ntp__store_rollback(s);
            goto out;
        }
        ntp__db_text(q, 1, c->machine_key);
        ntp__step rc = ntp__db_step(q);
        ntp__db_finalize(q);
        q = NULL;
        if (rc != NTP__STEP_DONE) {
            st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot save the ceilings");
            ntp__store_rollback(s);
            goto out;
        }
    }
    if (!(q = ntp__db_prepare(s, "INSERT INTO machines (key, measured_at, cpu_model, cores,"
                                 " hostname, description, ceilings, gpu_note)"
                                 " VALUES (?,?,?,?,?,?,?,?)"))) {
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot prepare");
        ntp__store_rollback(s);
        goto out;
    }
    ntp__db_text(q, 1, c->machine_key);
    ntp__db_text(q, 2, c->measured_at);
    ntp__db_text(q, 3, m->cpu_model);
    ntp__db_int(q, 4, m->pus);
    ntp__db_text(q, 5, m->hostname);
    ntp__db_text(q, 6, desc);
    ntp__db_text(q, 7, ceil);
    ntp__db_text(q, 8, c->n_gpus == 0 ? c->gpu_note : NULL);
    if (ntp__db_step(q) != NTP__STEP_DONE || (st = save_gpus(ctx, s, c)) != NTP_STATUS_OK) {
        if (!st)
            st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot save the ceilings");
        ntp__store_rollback(s);
    } else {
        st = ntp__store_commit(ctx, s);
    }
out:
    ntp__db_finalize(q);
    free(desc);
    free(ceil);
    return st;
}

/* The machine row's description (ntp__machine_info_json) against this
 * CPU: its signature and ISA flags, where it kept them (an empty list, a
 * CPU without the tracked extensions, is not compared, as a calibration's
 * empty flags are not). */
static void other_cpu(const char *description, ntp_ceilings *out)
{
    json_t *d = description ? json_loads(description, 0, NULL) : NULL;
    json_t *sig = json_object_get(d, "cpu_signature"), *flags = json_object_get(d, "cpu_flags");
    char f[1024];
    ntp__json_join(flags, f, sizeof f);
    out->other_cpu[0] = '\0';
    ntp__machine_other_cpu(json_is_string(sig) ? json_string_value(sig) : "", f, out->other_cpu,
                           sizeof out->other_cpu);
    json_decref(d);
}

ntp_status ntp_store_load_ceilings(ntp_ctx *ctx, ntp_store *s, const char *machine_key,
                                   ntp_ceilings *out, bool *found)
{
    *found = false;
    memset(out, 0, sizeof *out);
    ntp__stmt *q =
        ntp__db_prepare(s, "SELECT ceilings, gpu_note, description FROM machines WHERE key = ?");
    if (!q)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the ceilings");
    ntp__db_text(q, 1, machine_key);
    ntp__step rc = ntp__db_step(q);
    ntp_status st = NTP_STATUS_OK;
    if (rc == NTP__STEP_ROW) {
        const char *text = ntp__db_col_text(q, 0);
        json_t *j = text ? json_loads(text, 0, NULL) : NULL;
        if (!j || !ntp__ceilings_from_json(j, out))
            st = ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                            "history %s: the cached ceilings of '%s' are unreadable; "
                            "run `ntprof machine --remeasure`",
                            s->display, machine_key);
        else
            *found = true;
        json_decref(j);
        const char *note = ntp__db_col_text(q, 1);
        snprintf(out->gpu_note, sizeof out->gpu_note, "%s", note ? note : "");
        if (*found)
            other_cpu(ntp__db_col_text(q, 2), out);
        if (*found && (st = load_gpus(ctx, s, machine_key, out)) != NTP_STATUS_OK)
            *found = false;
    } else if (rc != NTP__STEP_DONE) {
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the ceilings");
    }
    ntp__db_finalize(q);
    return st;
}

ntp_status ntp_store_find_ceilings(ntp_ctx *ctx, const char *path, ntp_ceilings *out, bool *found)
{
    *found = false;
    memset(out, 0, sizeof *out);
    bool url = ntp_store_is_url(path);
    if (!url && access(path, F_OK) != 0)
        return NTP_STATUS_OK;
    /* A shared database is opened as the run's write will open it: a new
     * one gets its schema, and an unreachable one is known before the run. */
    ntp_store *s;
    ntp_status st = ntp_store_open(ctx, path, url ? NTP_STORE_CREATE : NTP_STORE_READ_ONLY, &s);
    if (st)
        return st;
    char key[256];
    ntp_machine_key(key, sizeof key);
    /* The server restarting between the connection and the query (a
     * sweep's children start while it may): read again once it is back. */
    int waited = 0, attempts = 0;
    char why[sizeof s->err] = "";
    while ((st = ntp_store_load_ceilings(ctx, s, key, out, found)) != NTP_STATUS_OK &&
           ntp__store_again(s, &waited, &attempts, why, sizeof why))
        ;
    if (st == NTP_STATUS_OK && attempts > 0)
        ntp__store_retry_warn(ctx, s, "the ceilings were read", waited, attempts, why);
    if (st == NTP_STATUS_OK && *found && out->other_cpu[0]) {
        ntp__warn(ctx,
                  "history %s: the ceilings cached for '%s' were measured on another CPU %s; "
                  "not used: run `ntprof machine --remeasure`",
                  s->display, key, out->other_cpu);
        *found = false;
    }
    char old[256];
    if (st == NTP_STATUS_OK && *found && ntp_ceilings_outdated(out, old, sizeof old)) {
        ntp__warn(ctx,
                  "history %s: the ceilings cached for '%s' are outdated: %s; not used: run "
                  "`ntprof machine --remeasure`",
                  s->display, key, old);
        *found = false;
    }
    ntp_store_close(s);
    return st;
}
