/* A stored calibration held against the machine now (docs/predict.md#recheck):
 * a few of its configurations timed again, as the calibration timed them,
 * and the ratio of now to then. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/ctx-impl.h"
#include "measure/measure-impl.h"
#include "predict-impl.h"

/* "conv filters=512 kernel=3 ... on 1,512,7,7": the layer L of a
 * configuration's markup, its attributes but its name, and its first
 * input's shape. */
static void describe(const char *xml, char *buf, size_t len)
{
    buf[0] = '\0';
    const char *l = strstr(xml, "name=\"L\"");
    const char *tag = l;
    while (tag && tag > xml && *tag != '<')
        tag--;
    if (!l || !tag || *tag != '<')
        return;
    size_t u = 0;
    const char *p = tag + 1;
    size_t tl = strcspn(p, " />");
    u += (size_t)snprintf(buf, len, "%.*s", (int)tl, p);
    p += tl;
    /* Each attribute but name="L", as written. */
    while (*p == ' ') {
        p++;
        const char *eq = strchr(p, '=');
        const char *q1 = eq && eq[1] == '"' ? eq + 2 : NULL;
        const char *q2 = q1 ? strchr(q1, '"') : NULL;
        if (!q2)
            break;
        if (strncmp(p, "name=", 5) != 0 && u < len)
            u += (size_t)snprintf(buf + u, len - u, " %.*s=%.*s", (int)(eq - p), p, (int)(q2 - q1),
                                  q1);
        p = q2 + 1;
    }
    const char *sh = strstr(xml, "shape=\"");
    if (sh && u < len) {
        sh += strlen("shape=\"");
        snprintf(buf + u, len - u, " on %.*s", (int)strcspn(sh, "\""), sh);
    }
}

typedef struct pick {
    int sample;
    ntp_predict_family family;
    double s;
} pick;

static int by_family_time(const void *a, const void *b)
{
    const pick *x = a, *y = b;
    if (x->family != y->family)
        return x->family < y->family ? -1 : 1;
    return x->s < y->s ? -1 : x->s > y->s;
}

ntp_status ntp_calibration_recheck(ntp_ctx *ctx, const ntp_machine_info *m,
                                   const ntp_calibration *cal,
                                   const ntp_calibration_sample *samples, int n,
                                   const ntp_recheck_opts *opts, ntp_recheck *out)
{
    return ntp__calibration_recheck_with(ctx, m, cal, samples, n, opts, NULL, NULL, out);
}

ntp_status ntp__calibration_recheck_with(ntp_ctx *ctx, const ntp_machine_info *m,
                                         const ntp_calibration *cal,
                                         const ntp_calibration_sample *samples, int n,
                                         const ntp_recheck_opts *opts, ntp__calibrate_runner runner,
                                         void *user, ntp_recheck *out)
{
    if (!ctx || !m || !cal || !out || (n > 0 && !samples))
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_calibration_recheck: missing argument");
    memset(out, 0, sizeof *out);
    out->verdict = NTP_RECHECK_NONE;
    int want = opts && opts->configs > 0 ? opts->configs : NTP_RECHECK_CONFIGS;
    if (want > NTP_RECHECK_MAX)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "recheck: %d configurations (expected 1 to %d)", want, NTP_RECHECK_MAX);
    const char *families = opts ? opts->families : NULL;
    ntp_status fst = ntp__calibrate_check_families(ctx, families, "recheck");
    if (fst)
        return fst;
    snprintf(out->machine_key, sizeof out->machine_key, "%s", cal->machine_key);
    snprintf(out->backend, sizeof out->backend, "%s", cal->backend);
    snprintf(out->precision, sizeof out->precision, "%s", cal->precision);
    snprintf(out->calibrated_at, sizeof out->calibrated_at, "%s", cal->calibrated_at);
    snprintf(out->cache, sizeof out->cache, "%s", cal->cache[0] ? cal->cache : "warm");
    out->passes = cal->passes > 0 ? cal->passes : 1;
    snprintf(out->keep, sizeof out->keep, "%s", cal->keep[0] ? cal->keep : "median");

    /* The layers this backend ran, long enough to time; in order of
     * family and time, then picked evenly: every family in proportion to
     * its samples, short and long. */
    pick *e = calloc((size_t)n + 1, sizeof *e);
    if (!e)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    int ne = 0;
    for (int i = 0; i < n; i++) {
        const ntp_calibration_sample *s = &samples[i];
        if (strcmp(s->kind, "layer") == 0 && strcmp(s->ran_on, cal->backend) == 0 &&
            s->median_s >= NTP_RECHECK_MIN_S && s->config[0] &&
            ntp__calibrate_family_wanted(families, s->family))
            e[ne++] = (pick){i, s->family, s->median_s};
    }
    if (ne == 0) {
        free(e);
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                          "recheck: the %s %s calibration has no sample%s%s of at least %.0f us "
                          "that its backend ran (one made before samples were kept has none); "
                          "run `ntprof machine --calibrate --backend %s`",
                          cal->backend, cal->precision, families ? " of " : "",
                          families ? families : "", NTP_RECHECK_MIN_S * 1e6, cal->backend);
    }
    qsort(e, (size_t)ne, sizeof *e, by_family_time);
    int k = want < ne ? want : ne;
    for (int j = 0; j < k; j++) {
        const pick *pk = &e[(int)(((double)j + 0.5) * ne / k)];
        ntp_recheck_row *r = &out->rows[out->n_rows++];
        const ntp_calibration_sample *s = &samples[pk->sample];
        r->sample = pk->sample;
        r->family = s->family;
        snprintf(r->impl, sizeof r->impl, "%s", s->impl);
        describe(s->config, r->what, sizeof r->what);
        r->stored_s = s->median_s;
    }
    free(e);

    FILE *lf = fopen("/proc/loadavg", "r");
    if (!lf || fscanf(lf, "%lf", &out->loadavg) != 1)
        out->loadavg = -1;
    if (lf)
        fclose(lf);
    time_t now = time(NULL);
    struct tm utc;
    if (gmtime_r(&now, &utc))
        strftime(out->checked_at, sizeof out->checked_at, "%Y-%m-%dT%H:%M:%SZ", &utc);
    /* The runs have a context of their own: a configuration that fails now
     * is a row without a ratio, not the caller's error. */
    ntp_ctx *rctx = ntp_ctx_init();
    if (!rctx)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    double t0 = ntp__now_us(), ratios[NTP_RECHECK_MAX];
    for (int j = 0; j < out->n_rows; j++) {
        ntp_recheck_row *r = &out->rows[j];
        if (opts && opts->progress)
            opts->progress(opts->progress_user, j, out->n_rows, ntp_predict_family_name(r->family));
        ntp__calibrate_timed tm;
        if (ntp__calibrate_time_sample(rctx, m, cal, &samples[r->sample], runner, user, j, &tm) !=
                NTP_STATUS_OK ||
            !(tm.s > 0)) {
            ntp_ctx_clear(rctx);
            continue;
        }
        r->now_s = tm.s;
        snprintf(r->now_impl, sizeof r->now_impl, "%s", tm.impl);
        r->ratio = tm.s / r->stored_s;
        ratios[out->n_timed++] = r->ratio;
    }
    if (opts && opts->progress)
        opts->progress(opts->progress_user, out->n_rows, out->n_rows, "done");
    ntp_ctx_free(rctx);
    out->wall_s = (ntp__now_us() - t0) / 1e6;
    if (out->n_timed > 0) {
        ntp_stats st;
        ntp_stats_compute(ratios, (size_t)out->n_timed, &st);
        out->ratio_median = st.median;
        out->ratio_ci95_lo = st.ci95_lo;
        out->ratio_ci95_hi = st.ci95_hi;
        const double lo = 1 - NTP_RECHECK_TOLERANCE, hi = 1 + NTP_RECHECK_TOLERANCE;
        out->verdict = st.median >= lo && st.median <= hi   ? NTP_RECHECK_HOLDS
                       : st.ci95_lo > hi || st.ci95_hi < lo ? NTP_RECHECK_MOVED
                                                            : NTP_RECHECK_UNCLEAR;
    }
    return NTP_STATUS_OK;
}
