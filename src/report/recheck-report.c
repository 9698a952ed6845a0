/* A recheck of a stored calibration against the machine now (ntprof
 * machine --recheck, docs/predict.md#recheck) as a table, JSON or CSV. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "core/writers-impl.h"
#include "ntprof/predict.h"

static const char *const VERDICTS[] = {"holds", "moved", "unclear", "none"};

/* The verdict in words, into buf. */
static void verdict_text(const ntp_recheck *r, char *buf, size_t len)
{
    double m = r->ratio_median;
    switch (r->verdict) {
    case NTP_RECHECK_HOLDS:
        snprintf(buf, len,
                 "the calibration holds now: the configurations take %.2fx their calibrated "
                 "time, within %.0f%%",
                 m, 100 * NTP_RECHECK_TOLERANCE);
        break;
    case NTP_RECHECK_MOVED:
        /* Predicted ~ then, measured ~ now: the error is then / now - 1. */
        snprintf(buf, len,
                 "the machine runs %s now than when calibrated (%.2fx the time, 95%% CI "
                 "%.2f..%.2f): predictions from this calibration read about %.0f%% %s; "
                 "calibrate again in a quiet moment (ntprof machine --calibrate --backend %s)",
                 m < 1 ? "faster" : "slower", m, r->ratio_ci95_lo, r->ratio_ci95_hi,
                 100 * fabs(1 / m - 1), m < 1 ? "high" : "low", r->backend);
        break;
    case NTP_RECHECK_UNCLEAR:
        snprintf(buf, len,
                 "unclear: the configurations take %.2fx their calibrated time, but the 95%% "
                 "interval (%.2f..%.2f) reaches within %.0f%%; recheck later or with more "
                 "configurations",
                 m, r->ratio_ci95_lo, r->ratio_ci95_hi, 100 * NTP_RECHECK_TOLERANCE);
        break;
    case NTP_RECHECK_NONE:
        snprintf(buf, len,
                 "n/a: no configuration ran now (the backend failed on each; see the rows)");
        break;
    }
}

static ntp_status write_json(ntp_ctx *ctx, const ntp_recheck *r, FILE *f)
{
    bool ok = true;
    json_t *o = json_object(), *rows = json_array();
    ok = o && rows;
    ntp__jset(&ok, o, "kind", ntp__json_str("calibration_recheck"));
    ntp__jset(&ok, o, "machine", ntp__json_str(r->machine_key));
    ntp__jset(&ok, o, "backend", ntp__json_str(r->backend));
    ntp__jset(&ok, o, "precision", ntp__json_str(r->precision));
    ntp__jset(&ok, o, "calibrated_at", ntp__json_str(r->calibrated_at));
    ntp__jset(&ok, o, "cache", ntp__json_str(r->cache));
    ntp__jset(&ok, o, "passes", json_integer(r->passes));
    ntp__jset(&ok, o, "keep", ntp__json_str(r->keep[0] ? r->keep : "median"));
    ntp__jset(&ok, o, "checked_at", ntp__json_str(r->checked_at));
    ntp__jset(&ok, o, "loadavg", r->loadavg >= 0 ? ntp__json_num(r->loadavg) : json_null());
    ntp__jset(&ok, o, "wall_s", ntp__json_num(r->wall_s));
    ntp__jset(&ok, o, "tolerance", ntp__json_num(NTP_RECHECK_TOLERANCE));
    for (int i = 0; ok && i < r->n_rows; i++) {
        const ntp_recheck_row *w = &r->rows[i];
        json_t *x = json_object();
        bool ran = w->now_s > 0;
        ntp__jset(&ok, x, "family", ntp__json_str(ntp_predict_family_name(w->family)));
        ntp__jset(&ok, x, "configuration", ntp__json_str(w->what));
        ntp__jset(&ok, x, "impl", ntp__json_str(w->impl));
        ntp__jset(&ok, x, "now_impl", ran ? ntp__json_str(w->now_impl) : json_null());
        ntp__jset(&ok, x, "stored_s", ntp__json_num(w->stored_s));
        ntp__jset(&ok, x, "now_s", ran ? ntp__json_num(w->now_s) : json_null());
        ntp__jset(&ok, x, "ratio", ran ? ntp__json_num(w->ratio) : json_null());
        ntp__jpush(&ok, rows, x);
    }
    ntp__jset(&ok, o, "rows", rows);
    if (r->n_timed > 0) {
        json_t *ratio = json_object(), *ci = json_array();
        ntp__jset(&ok, ratio, "median", ntp__json_num(r->ratio_median));
        ntp__jpush(&ok, ci, ntp__json_num(r->ratio_ci95_lo));
        ntp__jpush(&ok, ci, ntp__json_num(r->ratio_ci95_hi));
        ntp__jset(&ok, ratio, "ci95", ci);
        ntp__jset(&ok, ratio, "n", json_integer(r->n_timed));
        ntp__jset(&ok, o, "ratio", ratio);
    } else {
        ntp__jset(&ok, o, "ratio", json_null());
    }
    ntp__jset(&ok, o, "verdict", ntp__json_str(VERDICTS[r->verdict]));
    char text[512];
    verdict_text(r, text, sizeof text);
    ntp__jset(&ok, o, "verdict_text", ntp__json_str(text));
    return ntp__json_finish(ctx, o, ok, f, "recheck");
}

ntp_status ntp_report_write_recheck(ntp_ctx *ctx, const ntp_recheck *r, ntp_format fmt, FILE *f)
{
    if (!r || !f || r->verdict > NTP_RECHECK_NONE)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_recheck: missing argument");
    if (fmt == NTP_FORMAT_JSON)
        return write_json(ctx, r, f);
    if (fmt == NTP_FORMAT_CSV) {
        fputs("machine,backend,precision,calibrated_at,checked_at,family,configuration,impl,"
              "now_impl,stored_s,now_s,ratio\n",
              f);
        for (int i = 0; i < r->n_rows; i++) {
            const ntp_recheck_row *w = &r->rows[i];
            const char *strs[] = {
                r->machine_key,   r->backend,    r->precision,
                r->calibrated_at, r->checked_at, ntp_predict_family_name(w->family),
                w->what,          w->impl,       w->now_impl};
            for (int k = 0; k < 9; k++) {
                if (k)
                    ntp__csv_sep(f);
                ntp__csv_str(f, strs[k]);
            }
            ntp__csv_sep(f);
            ntp__csv_num(f, w->stored_s);
            ntp__csv_sep(f);
            ntp__csv_num(f, w->now_s > 0 ? w->now_s : NAN);
            ntp__csv_sep(f);
            ntp__csv_num(f, w->now_s > 0 ? w->ratio : NAN);
            fputc('\n', f);
        }
        return ntp__check_stream(ctx, f, "recheck");
    }
    char head[512];
    snprintf(head, sizeof head,
             "the %s %s calibration of %s (calibrated %s, %s caches, %d pass%s%s)", r->backend,
             r->precision, r->machine_key, r->calibrated_at, r->cache, r->passes,
             r->passes == 1 ? "" : "es",
             r->passes == 1                    ? ""
             : strcmp(r->keep, "fastest") == 0 ? ", the fastest kept"
                                               : ", the median kept");
    ntp__put_wrapped(f, "recheck of ", head);
    char load[32] = "n/a";
    if (r->loadavg >= 0)
        snprintf(load, sizeof load, "%.2f", r->loadavg);
    snprintf(head, sizeof head,
             "%d configuration%s timed again at %s, one pass each, as calibrated, in %.1f s "
             "(load average %s)",
             r->n_rows, r->n_rows == 1 ? "" : "s", r->checked_at, r->wall_s, load);
    ntp__put_wrapped(f, "", head);
    fputc('\n', f);
    ntp__put_linef(f, "%-10s %-52s %9s %9s %8s", "family", "configuration", "stored ms", "now ms",
                   "now/then");
    int changed = 0;
    for (int i = 0; i < r->n_rows; i++) {
        const ntp_recheck_row *w = &r->rows[i];
        bool ran = w->now_s > 0, other = ran && strcmp(w->impl, w->now_impl) != 0;
        changed += other;
        ntp__put_cell(f, ntp_predict_family_name(w->family), 10, false);
        fputc(' ', f);
        ntp__put_cell(f, w->what, 52, false);
        char a[32], b[32], c[32];
        snprintf(a, sizeof a, "%.3f", 1e3 * w->stored_s);
        snprintf(b, sizeof b, "%.3f", 1e3 * w->now_s);
        snprintf(c, sizeof c, "%.2f%s", w->ratio, other ? "*" : "");
        fprintf(f, " %9s %9s %8s\n", a, ran ? b : "failed", ran ? c : "-");
    }
    for (int i = 0; changed && i < r->n_rows; i++) {
        const ntp_recheck_row *w = &r->rows[i];
        if (w->now_s > 0 && strcmp(w->impl, w->now_impl) != 0) {
            char line[256];
            snprintf(line, sizeof line,
                     "%s ran %s now, %s when calibrated: another kernel (a backend update?)",
                     w->what, w->now_impl, w->impl);
            ntp__put_wrapped(f, "  * ", line);
        }
    }
    fputc('\n', f);
    if (r->n_timed > 0)
        ntp__put_linef(f, "now / then: median %.2f (95%% CI %.2f..%.2f) over %d configuration%s",
                       r->ratio_median, r->ratio_ci95_lo, r->ratio_ci95_hi, r->n_timed,
                       r->n_timed == 1 ? "" : "s");
    char text[512];
    verdict_text(r, text, sizeof text);
    ntp__put_wrapped(f, "verdict: ", text);
    return ntp__check_stream(ctx, f, "recheck");
}
