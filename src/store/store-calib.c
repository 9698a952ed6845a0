/* Latency-model calibrations in the history (docs/predict.md): one row per
 * machine, backend and precision, the model a JSON document, so a
 * colleague's calibration copied into this database predicts for a
 * machine that is not here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/ctx-impl.h"
#include "machine/predict-impl.h"
#include "store-impl.h"

ntp_status ntp_store_save_calibration(ntp_ctx *ctx, ntp_store *s, const ntp_calibration *cal)
{
    if (!s || !cal)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_store_save_calibration: missing argument");
    if (s->read_only)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "history %s: opened read-only",
                          s->display);
    json_t *j = ntp__calibration_json(cal);
    char *text = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(j);
    if (!text)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    ntp__stmt *q;
    ntp_status st = NTP_STATUS_OK;
    if (!(q = ntp__db_prepare(s,
                              "INSERT INTO calibrations (machine, backend, precision,"
                              " backend_version, threads, calibrated_at, model)"
                              " VALUES (?,?,?,?,?,?,?) ON CONFLICT (machine, backend, precision)"
                              " DO UPDATE SET backend_version = excluded.backend_version,"
                              " threads = excluded.threads, calibrated_at = excluded.calibrated_at,"
                              " model = excluded.model"))) {
        free(text);
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot prepare");
    }
    ntp__db_text(q, 1, cal->machine_key);
    ntp__db_text(q, 2, cal->backend);
    ntp__db_text(q, 3, cal->precision);
    ntp__db_text(q, 4, cal->backend_version);
    ntp__db_int(q, 5, cal->threads);
    ntp__db_text(q, 6, cal->calibrated_at);
    ntp__db_text(q, 7, text);
    if (ntp__db_step(q) != NTP__STEP_DONE)
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot save the calibration");
    ntp__db_finalize(q);
    free(text);
    return st;
}

/* Rows of q (column 0 the model) into *out, at most max; false on an
 * unreadable model (st set). */
static ntp_status read_models(ntp_ctx *ctx, ntp_store *s, ntp__stmt *q, ntp_calibration *out,
                              int max, int *n)
{
    int rc;
    *n = 0;
    while ((rc = ntp__db_step(q)) == NTP__STEP_ROW && *n < max) {
        const char *text = ntp__db_col_text(q, 0);
        json_t *j = text ? json_loads(text, 0, NULL) : NULL;
        bool ok = j && ntp__calibration_from_json(j, &out[*n]);
        json_decref(j);
        if (!ok)
            return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                              "history %s: a stored calibration is unreadable; run `ntprof "
                              "machine --calibrate` again",
                              s->display);
        (*n)++;
    }
    if (rc != NTP__STEP_ROW && rc != NTP__STEP_DONE)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the calibrations");
    return NTP_STATUS_OK;
}

ntp_status ntp_store_load_calibration(ntp_ctx *ctx, ntp_store *s, const char *machine_key,
                                      const char *backend, const char *precision,
                                      ntp_calibration *out, bool *found)
{
    *found = false;
    memset(out, 0, sizeof *out);
    if (!s || !machine_key || !backend || !precision)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_store_load_calibration: missing argument");
    ntp__stmt *q;
    if (!(q = ntp__db_prepare(s,
                              "SELECT model FROM calibrations WHERE machine = ? AND backend = ? AND"
                              " precision = ?")))
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the calibrations");
    ntp__db_text(q, 1, machine_key);
    ntp__db_text(q, 2, backend);
    ntp__db_text(q, 3, precision);
    int n = 0;
    ntp_status st = read_models(ctx, s, q, out, 1, &n);
    ntp__db_finalize(q);
    *found = !st && n == 1;
    return st;
}

ntp_status ntp_store_list_calibrations(ntp_ctx *ctx, ntp_store *s, ntp_calibration **out, int *n)
{
    *out = NULL;
    *n = 0;
    ntp__stmt *q;
    int64_t count = 0;
    if (!(q = ntp__db_prepare(s, "SELECT count(*) FROM calibrations")))
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the calibrations");
    if (ntp__db_step(q) == NTP__STEP_ROW)
        count = ntp__db_col_int(q, 0);
    ntp__db_finalize(q);
    ntp_calibration *c = calloc((size_t)count + 1, sizeof *c);
    if (!c)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!(q = ntp__db_prepare(s,
                              "SELECT model FROM calibrations ORDER BY calibrated_at DESC, machine,"
                              " backend, precision"))) {
        free(c);
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the calibrations");
    }
    ntp_status st = read_models(ctx, s, q, c, (int)count, n);
    ntp__db_finalize(q);
    if (st) {
        free(c);
        *n = 0;
        return st;
    }
    *out = c;
    return NTP_STATUS_OK;
}

ntp_status ntp_store_find_calibration(ntp_ctx *ctx, const char *path, const char *backend,
                                      const char *precision, ntp_calibration *out, bool *found)
{
    *found = false;
    memset(out, 0, sizeof *out);
    /* A URL has no file to look for: it is opened as ntp_store_find_ceilings
     * opens it. */
    bool url = ntp_store_is_url(path);
    if (!url && access(path, F_OK) != 0)
        return NTP_STATUS_OK;
    ntp_store *s;
    ntp_status st = ntp_store_open(ctx, path, url ? NTP_STORE_CREATE : NTP_STORE_READ_ONLY, &s);
    if (st)
        return st;
    char key[256];
    ntp_machine_key(key, sizeof key);
    /* As ntp_store_find_ceilings: the server restarting between the
     * connection and the query is read again once it is back. */
    int waited = 0, attempts = 0;
    char why[sizeof s->err] = "";
    while ((st = ntp_store_load_calibration(ctx, s, key, backend, precision, out, found)) !=
               NTP_STATUS_OK &&
           ntp__store_again(s, &waited, &attempts, why, sizeof why))
        ;
    if (st == NTP_STATUS_OK && attempts > 0)
        ntp__store_retry_warn(ctx, s, "the calibrations were read", waited, attempts, why);
    ntp_store_close(s);
    return st;
}

/* --- samples (docs/predict.md#samples) ------------------------------------------------------- */

ntp_status ntp_store_save_calibration_samples(ntp_ctx *ctx, ntp_store *s,
                                              const ntp_calibration *cal,
                                              const ntp_calibration_sample *samples, int n)
{
    if (!s || !cal || n < 0 || (n > 0 && !samples))
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_store_save_calibration_samples: missing argument");
    if (s->read_only)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "history %s: opened read-only",
                          s->display);
    ntp_status st = ntp__store_begin(ctx, s);
    if (st)
        return st;
    ntp__stmt *q = ntp__db_prepare(s, "DELETE FROM calibration_samples WHERE machine = ? AND"
                                      " backend = ? AND precision = ?");
    if (!q) {
        ntp__store_rollback(s);
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot prepare");
    }
    ntp__db_text(q, 1, cal->machine_key);
    ntp__db_text(q, 2, cal->backend);
    ntp__db_text(q, 3, cal->precision);
    bool ok = ntp__db_step(q) == NTP__STEP_DONE;
    ntp__db_finalize(q);
    q = ok ? ntp__db_prepare(s, "INSERT INTO calibration_samples (machine, backend, precision,"
                                " idx, kind, family, config, conv_fed, ran_on, impl, level,"
                                " flops, bytes, x_overhead, x_compute, x_memory, median_s,"
                                " ci95_lo_s, ci95_hi_s, n, passes, pass_min_s, pass_max_s)"
                                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
           : NULL;
    for (int i = 0; q && ok && i < n; i++) {
        const ntp_calibration_sample *x = &samples[i];
        ntp__db_reset(q);
        ntp__db_text(q, 1, cal->machine_key);
        ntp__db_text(q, 2, cal->backend);
        ntp__db_text(q, 3, cal->precision);
        ntp__db_int(q, 4, i);
        ntp__db_text(q, 5, x->kind);
        ntp__db_text(q, 6, ntp_predict_family_name(x->family));
        ntp__db_text(q, 7, x->config);
        ntp__db_int(q, 8, x->conv_fed);
        ntp__db_text(q, 9, x->ran_on);
        ntp__db_text(q, 10, x->impl);
        ntp__db_text(q, 11, x->level);
        ntp__db_int(q, 12, x->flops);
        ntp__db_int(q, 13, x->bytes);
        /* The stream term is recomputed when read back (ntp_calibration_sample.x). */
        for (int a = 0; a <= NTP_PREDICT_TERM_MEMORY; a++)
            ntp__db_double(q, 14 + a, x->x[a]);
        ntp__db_double(q, 17, x->median_s);
        ntp__db_double(q, 18, x->ci95_lo_s);
        ntp__db_double(q, 19, x->ci95_hi_s);
        ntp__db_int(q, 20, x->n);
        /* A sample made by hand without passes: one timing. */
        ntp__db_int(q, 21, x->passes > 0 ? x->passes : 1);
        ntp__db_double(q, 22, x->passes > 0 ? x->pass_min_s : x->median_s);
        ntp__db_double(q, 23, x->passes > 0 ? x->pass_max_s : x->median_s);
        ok = ntp__db_step(q) == NTP__STEP_DONE;
    }
    if (!q || !ok) {
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot save the calibration's samples");
        ntp__db_finalize(q);
        ntp__store_rollback(s);
        return st;
    }
    ntp__db_finalize(q);
    return ntp__store_commit(ctx, s);
}

ntp_status ntp_store_load_calibration_samples(ntp_ctx *ctx, ntp_store *s, const char *machine_key,
                                              const char *backend, const char *precision,
                                              ntp_calibration_sample **out, int *n)
{
    *out = NULL;
    *n = 0;
    if (!s || !machine_key || !backend || !precision)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_store_load_calibration_samples: missing argument");
    ntp__stmt *q = ntp__db_prepare(s, "SELECT kind, family, config, conv_fed, ran_on, impl, level,"
                                      " flops, bytes, x_overhead, x_compute, x_memory, median_s,"
                                      " ci95_lo_s, ci95_hi_s, n, passes, pass_min_s, pass_max_s"
                                      " FROM calibration_samples"
                                      " WHERE machine = ? AND backend = ? AND precision = ?"
                                      " ORDER BY idx");
    if (!q)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the samples");
    ntp__db_text(q, 1, machine_key);
    ntp__db_text(q, 2, backend);
    ntp__db_text(q, 3, precision);
    ntp_calibration_sample *v = NULL;
    int cap = 0, k = 0, rc = NTP__STEP_DONE;
    ntp_status st = NTP_STATUS_OK;
    while (!st && (rc = ntp__db_step(q)) == NTP__STEP_ROW) {
        if (k == cap) {
            int nc = cap ? 2 * cap : 256;
            ntp_calibration_sample *w = realloc(v, (size_t)nc * sizeof *w);
            if (!w) {
                st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
                break;
            }
            v = w;
            cap = nc;
        }
        ntp_calibration_sample *x = &v[k];
        memset(x, 0, sizeof *x);
        ntp__db_col_str(q, 0, x->kind, sizeof x->kind);
        char fam[32];
        ntp__db_col_str(q, 1, fam, sizeof fam);
        x->family = NTP_PREDICT_FAMILY_COUNT;
        for (int f = 0; f < NTP_PREDICT_FAMILY_COUNT; f++)
            if (strcmp(fam, ntp_predict_family_name((ntp_predict_family)f)) == 0)
                x->family = (ntp_predict_family)f;
        ntp__db_col_str(q, 2, x->config, sizeof x->config);
        x->conv_fed = (int)ntp__db_col_int(q, 3);
        ntp__db_col_str(q, 4, x->ran_on, sizeof x->ran_on);
        ntp__db_col_str(q, 5, x->impl, sizeof x->impl);
        ntp__db_col_str(q, 6, x->level, sizeof x->level);
        x->flops = ntp__db_col_int(q, 7);
        x->bytes = ntp__db_col_int(q, 8);
        for (int a = 0; a <= NTP_PREDICT_TERM_MEMORY; a++)
            x->x[a] = ntp__db_col_double(q, 9 + a);
        x->median_s = ntp__db_col_double(q, 12);
        x->ci95_lo_s = ntp__db_col_double(q, 13);
        x->ci95_hi_s = ntp__db_col_double(q, 14);
        x->n = (int)ntp__db_col_int(q, 15);
        x->passes = (int)ntp__db_col_int(q, 16);
        x->pass_min_s = ntp__db_col_double(q, 17);
        x->pass_max_s = ntp__db_col_double(q, 18);
        /* A family this ntprof does not know (a later one's): not refitted. */
        if (x->family < NTP_PREDICT_FAMILY_COUNT)
            k++;
    }
    if (!st && rc != NTP__STEP_DONE)
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the samples");
    ntp__db_finalize(q);
    if (st) {
        free(v);
        return st;
    }
    *out = v;
    *n = k;
    return NTP_STATUS_OK;
}
