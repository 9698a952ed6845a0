/* Sweeps: factors (backend, precision, batch, threads, topology params)
 * expanded into configurations one factor at a time or in full, results
 * collected per configuration, and the table of every figure with its
 * spread (docs/sweep.md). Running each configuration in a process of its
 * own is the CLI's job (tools/ntprof/cmd-sweep.c): the library never
 * starts processes. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare-impl.h"
#include "core/ctx-impl.h"
#include "graph/graph-impl.h"

enum { F_PARAM, F_BACKEND, F_PRECISION, F_BATCH, F_THREADS };

/* Limits that keep a typo from launching a week of runs. */
#define MAX_FACTORS 16
#define MAX_VALUES 256
#define MAX_CONFIGS 10000

typedef struct factor {
    char *name;
    int kind;
    int n;
    char **values;
} factor;

struct ntp_sweep {
    char *source;
    ntp_sweep_design design;
    int n_params;
    char **params; /* the topology's params, for checking names */
    int n_factors;
    factor f[MAX_FACTORS];
    int n_configs;
    int *value; /* n_configs x n_factors value indices */
    char **labels;
    char **sets; /* n_configs x n_factors "NAME=VALUE" of param factors */
    ntp_run_result **results;
    char **errors;
};

ntp_status ntp_sweep_design_parse(const char *s, ntp_sweep_design *out)
{
    if (s && strcmp(s, "ofat") == 0)
        *out = NTP_SWEEP_OFAT;
    else if (s && strcmp(s, "full") == 0)
        *out = NTP_SWEEP_FULL;
    else
        return NTP_STATUS_UNKNOWN_NAME;
    return NTP_STATUS_OK;
}

static void free_configs(ntp_sweep *s)
{
    for (int c = 0; c < s->n_configs; c++) {
        if (s->labels)
            free(s->labels[c]);
        if (s->sets)
            for (int k = 0; k < s->n_factors; k++)
                free(s->sets[(size_t)c * (size_t)s->n_factors + (size_t)k]);
        if (s->results)
            ntp_run_result_free(s->results[c]);
        if (s->errors)
            free(s->errors[c]);
    }
    free(s->value);
    free(s->labels);
    free(s->sets);
    free(s->results);
    free(s->errors);
    s->value = NULL;
    s->labels = s->sets = s->errors = NULL;
    s->results = NULL;
    s->n_configs = 0;
}

void ntp_sweep_free(ntp_sweep *s)
{
    if (!s)
        return;
    free_configs(s);
    for (int i = 0; i < s->n_factors; i++) {
        free(s->f[i].name);
        for (int v = 0; v < s->f[i].n; v++)
            free(s->f[i].values[v]);
        free(s->f[i].values);
    }
    for (int i = 0; i < s->n_params; i++)
        free(s->params[i]);
    free(s->params);
    free(s->source);
    free(s);
}

ntp_status ntp_sweep_init(ntp_ctx *ctx, const ntp_graph *g, const char *path,
                          ntp_sweep_design design, ntp_sweep **out)
{
    *out = NULL;
    if (!g || !path)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_sweep_init: no topology");
    ntp_sweep *s = calloc(1, sizeof *s);
    if (!s || !(s->source = ntp__strdup(path)) ||
        !(s->params = calloc((size_t)g->n_params + 1, sizeof *s->params))) {
        ntp_sweep_free(s);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    s->design = design;
    for (int i = 0; i < g->n_params; i++) {
        if (!(s->params[i] = ntp__strdup(g->params[i].name))) {
            ntp_sweep_free(s);
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        }
        s->n_params++;
    }
    *out = s;
    return NTP_STATUS_OK;
}

static bool positive_int(const char *v)
{
    char *end;
    long long x = strtoll(v, &end, 10);
    return end != v && !*end && x > 0 && x <= INT32_MAX;
}

static ntp_status check_value(ntp_ctx *ctx, const factor *f, const char *v)
{
    ntp_dtype d;
    switch (f->kind) {
    case F_BATCH:
    case F_THREADS:
        if (!positive_int(v))
            return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_sweep_add_factor",
                                  "%s: '%s' is not a positive integer", f->name, v);
        return NTP_STATUS_OK;
    case F_PRECISION:
        if (ntp_dtype_parse(v, &d) != NTP_STATUS_OK || !ntp_dtype_is_precision(d))
            return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_sweep_add_factor",
                                  "precision: '%s' is not f32, bf16, f16 or i8", v);
        return NTP_STATUS_OK;
    case F_BACKEND: {
        char list[256];
        snprintf(list, sizeof list, "%s", ntp_backends());
        const char *names[32];
        int n = 0;
        char *save = NULL;
        for (char *b = strtok_r(list, ", ", &save); b && n < 32; b = strtok_r(NULL, ", ", &save)) {
            if (strcmp(b, v) == 0)
                return NTP_STATUS_OK;
            names[n++] = b;
        }
        const char *near = ntp__nearest(v, names, n);
        return ntp__opt_error(ctx, NTP_STATUS_UNKNOWN_NAME, "ntp_sweep_add_factor",
                              "backend: unknown backend '%s'%s%s%s; this build has: %s", v,
                              near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "",
                              ntp_backends());
    }
    default:
        if (!*v)
            return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_sweep_add_factor",
                                  "%s: an empty value", f->name);
        return NTP_STATUS_OK;
    }
}

ntp_status ntp_sweep_add_factor(ntp_ctx *ctx, ntp_sweep *s, const char *spec)
{
    const char *eq = spec ? strchr(spec, '=') : NULL;
    if (!eq || eq == spec || !eq[1])
        return ntp__error_at(
            ctx, NTP_STATUS_INVALID_ARGUMENT,
            &(ntp__where){.option = "ntp_sweep_add_factor", .expected = "NAME=V1,V2,..."},
            "expects NAME=V1,V2,..., got '%s'", spec ? spec : "");
    if (s->n_factors >= MAX_FACTORS)
        return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_sweep_add_factor",
                              ": at most %d factors", MAX_FACTORS);
    if (s->n_configs > 0)
        return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_sweep_add_factor",
                              "after the sweep was expanded");
    factor f = {0};
    if (!(f.name = malloc((size_t)(eq - spec) + 1)))
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    memcpy(f.name, spec, (size_t)(eq - spec));
    f.name[eq - spec] = '\0';
    ntp_status st = NTP_STATUS_OK;
    static const char *const builtin[] = {"backend", "precision", "batch", "threads"};
    f.kind = F_PARAM;
    for (int i = 0; i < 4; i++)
        if (strcmp(f.name, builtin[i]) == 0)
            f.kind = F_BACKEND + i;
    if (f.kind == F_PARAM) {
        bool known = false;
        for (int i = 0; i < s->n_params && !known; i++)
            known = strcmp(s->params[i], f.name) == 0;
        if (!known) {
            const char *cands[MAX_VALUES + 4];
            int n = 0;
            for (int i = 0; i < 4; i++)
                cands[n++] = builtin[i];
            for (int i = 0; i < s->n_params && n < MAX_VALUES + 4; i++)
                cands[n++] = s->params[i];
            const char *near = ntp__nearest(f.name, cands, n);
            st = ntp__opt_error(ctx, NTP_STATUS_UNKNOWN_NAME, "ntp_sweep_add_factor",
                                "%s: not backend, precision, batch, threads or a param of %s%s%s%s",
                                f.name, s->source, near ? "; did you mean '" : "", near ? near : "",
                                near ? "'?" : "");
            goto fail;
        }
    }
    for (int i = 0; i < s->n_factors; i++)
        if (strcmp(s->f[i].name, f.name) == 0) {
            st = ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_sweep_add_factor",
                                "%s given twice", f.name);
            goto fail;
        }
    /* Values split at commas; each is checked and may appear once. */
    for (const char *p = eq + 1;;) {
        size_t n = strcspn(p, ",");
        if (f.n >= MAX_VALUES) {
            st = ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_sweep_add_factor",
                                "%s: at most %d values", f.name, MAX_VALUES);
            goto fail;
        }
        char **vs = realloc(f.values, (size_t)(f.n + 1) * sizeof *vs);
        char *v = malloc(n + 1);
        if (vs)
            f.values = vs;
        if (!vs || !v) {
            free(v);
            st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            goto fail;
        }
        memcpy(v, p, n);
        v[n] = '\0';
        f.values[f.n++] = v;
        if ((st = check_value(ctx, &f, v)))
            goto fail;
        for (int k = 0; k + 1 < f.n; k++)
            if (strcmp(f.values[k], v) == 0) {
                st = ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_sweep_add_factor",
                                    "%s: '%s' given twice", f.name, v);
                goto fail;
            }
        if (!p[n])
            break;
        p += n + 1;
    }
    s->f[s->n_factors++] = f;
    return NTP_STATUS_OK;
fail:
    free(f.name);
    for (int v = 0; v < f.n; v++)
        free(f.values[v]);
    free(f.values);
    return st;
}

/* "NAME=VALUE": the override of a param factor f at value v. */
static char *make_set(const factor *f, const char *v)
{
    size_t n = strlen(f->name) + strlen(v) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s=%s", f->name, v);
    return s;
}

ntp_status ntp_sweep_expand(ntp_ctx *ctx, ntp_sweep *s)
{
    free_configs(s);
    if (s->n_factors == 0)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "a sweep needs at least one ntp_sweep_add_factor");
    int64_t n = 1;
    for (int i = 0; i < s->n_factors; i++) {
        if (s->design == NTP_SWEEP_FULL)
            n *= s->f[i].n;
        else
            n += s->f[i].n - 1;
        if (n > MAX_CONFIGS)
            return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                              "the sweep has more than %d configurations; vary fewer values "
                              "or use NTP_SWEEP_OFAT",
                              MAX_CONFIGS);
    }
    int nf = s->n_factors, nc = (int)n;
    s->value = calloc((size_t)nc * (size_t)nf, sizeof *s->value);
    s->labels = calloc((size_t)nc, sizeof *s->labels);
    s->sets = calloc((size_t)nc * (size_t)nf, sizeof *s->sets);
    s->results = calloc((size_t)nc, sizeof *s->results);
    s->errors = calloc((size_t)nc, sizeof *s->errors);
    if (!s->value || !s->labels || !s->sets || !s->results || !s->errors) {
        free_configs(s);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    s->n_configs = nc;
    if (s->design == NTP_SWEEP_FULL) {
        /* Odometer order: the last factor changes fastest. */
        for (int c = 0; c < nc; c++) {
            int rest = c;
            for (int i = nf - 1; i >= 0; i--) {
                s->value[c * nf + i] = rest % s->f[i].n;
                rest /= s->f[i].n;
            }
        }
    } else {
        /* Configuration 0 is the baseline (every factor at its first
         * value); then each factor's other values in turn. */
        int c = 1;
        for (int i = 0; i < nf; i++)
            for (int v = 1; v < s->f[i].n; v++)
                s->value[(c++) * nf + i] = v;
    }
    for (int c = 0; c < nc; c++) {
        size_t len = 1;
        for (int i = 0; i < nf; i++)
            len += strlen(s->f[i].name) + strlen(s->f[i].values[s->value[c * nf + i]]) + 2;
        if (!(s->labels[c] = malloc(len))) {
            free_configs(s);
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        }
        size_t used = 0;
        for (int i = 0; i < nf; i++) {
            const char *v = s->f[i].values[s->value[c * nf + i]];
            used += (size_t)snprintf(s->labels[c] + used, len - used, "%s%s=%s", i ? " " : "",
                                     s->f[i].name, v);
        }
        /* The param overrides packed at the front of the row, in factor
         * order: the row is the configuration's `set` array. */
        for (int i = 0, k = 0; i < nf; i++) {
            if (s->f[i].kind != F_PARAM)
                continue;
            char **set = &s->sets[(size_t)c * (size_t)nf + (size_t)k++];
            if (!(*set = make_set(&s->f[i], s->f[i].values[s->value[c * nf + i]]))) {
                free_configs(s);
                return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            }
        }
    }
    return NTP_STATUS_OK;
}

ntp_sweep_design ntp_sweep_get_design(const ntp_sweep *s)
{
    return s->design;
}
const char *ntp_sweep_source(const ntp_sweep *s)
{
    return s->source;
}
int ntp_sweep_factor_count(const ntp_sweep *s)
{
    return s->n_factors;
}

const char *ntp_sweep_factor_name(const ntp_sweep *s, int f)
{
    return f >= 0 && f < s->n_factors ? s->f[f].name : NULL;
}

int ntp_sweep_value_count(const ntp_sweep *s, int f)
{
    return f >= 0 && f < s->n_factors ? s->f[f].n : 0;
}

const char *ntp_sweep_value(const ntp_sweep *s, int f, int v)
{
    return f >= 0 && f < s->n_factors && v >= 0 && v < s->f[f].n ? s->f[f].values[v] : NULL;
}

int ntp_sweep_config_count(const ntp_sweep *s)
{
    return s->n_configs;
}

int ntp_sweep_config_value(const ntp_sweep *s, int c, int f)
{
    if (c < 0 || c >= s->n_configs || f < 0 || f >= s->n_factors)
        return -1;
    return s->value[c * s->n_factors + f];
}

const char *ntp_sweep_config_label(const ntp_sweep *s, int c)
{
    return c >= 0 && c < s->n_configs ? s->labels[c] : NULL;
}

ntp_status ntp_sweep_config_get(ntp_ctx *ctx, const ntp_sweep *s, int c, ntp_sweep_config *out)
{
    *out = (ntp_sweep_config){0};
    if (c < 0 || c >= s->n_configs)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "no configuration %d", c);
    int nf = s->n_factors;
    out->set = (const char *const *)&s->sets[(size_t)c * (size_t)nf];
    /* The values were checked when the factors were added. */
    for (int i = 0; i < nf; i++) {
        const char *v = s->f[i].values[s->value[c * nf + i]];
        switch (s->f[i].kind) {
        case F_BACKEND: out->backend = v; break;
        case F_PRECISION:
            out->set_precision = ntp_dtype_parse(v, &out->precision) == NTP_STATUS_OK;
            break;
        case F_BATCH: out->batch = strtoll(v, NULL, 10); break;
        case F_THREADS: out->threads = (int)strtol(v, NULL, 10); break;
        default: out->n_set++; break;
        }
    }
    return NTP_STATUS_OK;
}

void ntp_sweep_set_result(ntp_sweep *s, int c, ntp_run_result *r)
{
    if (c < 0 || c >= s->n_configs) {
        ntp_run_result_free(r);
        return;
    }
    ntp_run_result_free(s->results[c]);
    s->results[c] = r;
}

ntp_status ntp_sweep_set_error(ntp_ctx *ctx, ntp_sweep *s, int c, const char *message)
{
    if (c < 0 || c >= s->n_configs)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "no configuration %d", c);
    free(s->errors[c]);
    if (!(s->errors[c] = ntp__strdup(message ? message : "failed")))
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    return NTP_STATUS_OK;
}

const ntp_run_result *ntp_sweep_result(const ntp_sweep *s, int c)
{
    return c >= 0 && c < s->n_configs ? s->results[c] : NULL;
}

const char *ntp_sweep_error(const ntp_sweep *s, int c)
{
    return c >= 0 && c < s->n_configs ? s->errors[c] : NULL;
}

/* --- writers ------------------------------------------------------------------------------ */

static double e2e_gflops(const ntp_run_result *r)
{
    double ms = r->end_to_end_ms.median;
    return ms > 0 ? (double)r->flops / (ms * 1e-3) / 1e9 : NAN;
}

static const char *status_of(const ntp_sweep *s, int c)
{
    return s->results[c] ? "ok" : s->errors[c] ? "failed" : "not run";
}

static void write_table(const ntp_sweep *s, FILE *f)
{
    ntp__put_linef(f, "sweep of %s: %s, %d configuration%s", s->source,
                   s->design == NTP_SWEEP_OFAT ? "one factor at a time" : "full factorial",
                   s->n_configs, s->n_configs == 1 ? "" : "s");
    if (s->design == NTP_SWEEP_OFAT && s->n_configs > 0)
        ntp__put_linef(f, "baseline (configuration 0): %s", s->labels[0]);
    /* --fuse is fixed for a whole sweep; each configuration's report (in
     * the JSON) carries it too. */
    int ran = 0, fused = 0;
    for (int c = 0; c < s->n_configs; c++)
        if (s->results[c]) {
            ran++;
            fused += s->results[c]->fused;
        }
    if (ran > 0 && (fused == 0 || fused == ran))
        ntp__put_linef(f, "fusion: %s", fused ? "on (--fuse)" : "off (no --fuse)");
    else if (ran > 0)
        ntp__put_linef(f, "fusion: on (--fuse) in %d of the %d configurations that ran", fused,
                       ran);
    fputc('\n', f);
    /* Factor columns as wide as their longest value (at most 12), then the
     * figures: the median with its 95% interval, p90, the coefficient of
     * variation, throughput and the rate. */
    int w[MAX_FACTORS];
    int used = 0;
    for (int i = 0; i < s->n_factors; i++) {
        w[i] = (int)ntp__text_cols(s->f[i].name);
        for (int v = 0; v < s->f[i].n; v++) {
            int n = (int)ntp__text_cols(s->f[i].values[v]);
            if (n > w[i])
                w[i] = n;
        }
        if (w[i] > 12)
            w[i] = 12;
        used += w[i] + 1;
    }
    /* Too many factors for one line: they are cut to fit what the figures
     * leave (labels below say the whole configuration). */
    int room = NTP_TABLE_WIDTH - 71 - 3;
    for (int i = 0; used > room && i < s->n_factors; i++) {
        used -= w[i] - 3;
        w[i] = 3;
    }
    ntp__put_cell(f, "#", 3, true);
    for (int i = 0; i < s->n_factors; i++) {
        fputc(' ', f);
        ntp__put_cell(f, s->f[i].name, w[i], false);
    }
    fputs(" status  median ms  ci95 lo  ci95 hi   p90 ms  cv %  samples/s  GFLOP/s\n", f);
    for (int c = 0; c < s->n_configs; c++) {
        char buf[32];
        snprintf(buf, sizeof buf, "%d", c);
        ntp__put_cell(f, buf, 3, true);
        for (int i = 0; i < s->n_factors; i++) {
            fputc(' ', f);
            ntp__put_cell(f, s->f[i].values[s->value[c * s->n_factors + i]], w[i], false);
        }
        fputc(' ', f);
        ntp__put_cell(f, status_of(s, c), 6, false);
        const ntp_run_result *r = s->results[c];
        if (!r) {
            fputc('\n', f);
            continue;
        }
        const ntp_stats *e = &r->end_to_end_ms;
        const double v[] = {e->median, e->ci95_lo, e->ci95_hi, e->p90};
        const int vw[] = {10, 8, 8, 8};
        for (int k = 0; k < 4; k++) {
            fputc(' ', f);
            ntp__put_cell(f, ntp__fit_number(v[k], vw[k], 4, buf, sizeof buf), vw[k], true);
        }
        fputc(' ', f);
        ntp__put_cell(f, ntp__fit_number(100 * e->cv, 5, 1, buf, sizeof buf), 5, true);
        fputc(' ', f);
        ntp__put_cell(f, ntp__fit_number(r->throughput, 10, 1, buf, sizeof buf), 10, true);
        fputc(' ', f);
        ntp__put_cell(f, ntp__fit_number(e2e_gflops(r), 8, 2, buf, sizeof buf), 8, true);
        fputc('\n', f);
    }
    int failed = 0;
    for (int c = 0; c < s->n_configs; c++)
        if (!s->results[c] && s->errors[c]) {
            if (!failed++)
                fputc('\n', f);
            char prefix[64];
            snprintf(prefix, sizeof prefix, "configuration %d failed: ", c);
            char text[2048];
            snprintf(text, sizeof text, "%s: %s", s->labels[c], s->errors[c]);
            ntp__put_wrapped(f, prefix, text);
        }
    if (s->n_configs > 0)
        ntp__put_linef(f, "%d of %d configurations ran; times are end to end (whole passes)",
                       s->n_configs - failed, s->n_configs);
}

/* The run's report as JSON, for embedding. */
static json_t *report_json(ntp_ctx *ctx, const ntp_run_result *r)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    ntp_status st = ntp_report_write_run(ctx, r, NTP_FORMAT_JSON, f);
    fclose(f);
    json_t *j = st == NTP_STATUS_OK ? json_loadb(text, len, 0, NULL) : NULL;
    free(text);
    return j;
}

static ntp_status write_json(ntp_ctx *ctx, const ntp_sweep *s, FILE *out)
{
    bool ok = true;
    json_t *root = json_object();
    ntp__jset(&ok, root, "kind", json_string("sweep"));
    ntp__jset(&ok, root, "source", ntp__json_str(s->source));
    ntp__jset(&ok, root, "design", json_string(s->design == NTP_SWEEP_OFAT ? "ofat" : "full"));
    json_t *factors = json_array();
    for (int i = 0; i < s->n_factors; i++) {
        json_t *o = json_object(), *vs = json_array();
        ntp__jset(&ok, o, "name", ntp__json_str(s->f[i].name));
        for (int v = 0; v < s->f[i].n; v++)
            ntp__jpush(&ok, vs, ntp__json_str(s->f[i].values[v]));
        ntp__jset(&ok, o, "values", vs);
        ntp__jpush(&ok, factors, o);
    }
    ntp__jset(&ok, root, "factors", factors);
    json_t *configs = json_array();
    for (int c = 0; c < s->n_configs && ok; c++) {
        json_t *o = json_object(), *vals = json_object();
        ntp__jset(&ok, o, "index", json_integer(c));
        ntp__jset(&ok, o, "label", ntp__json_str(s->labels[c]));
        for (int i = 0; i < s->n_factors; i++)
            ntp__jset(&ok, vals, s->f[i].name,
                      ntp__json_str(s->f[i].values[s->value[c * s->n_factors + i]]));
        ntp__jset(&ok, o, "values", vals);
        ntp__jset(&ok, o, "status", json_string(status_of(s, c)));
        ntp__jset(&ok, o, "error", ntp__json_str(s->results[c] ? NULL : s->errors[c]));
        const ntp_run_result *r = s->results[c];
        if (r) {
            const ntp_stats *e = &r->end_to_end_ms;
            json_t *st = json_object();
            ntp__jset(&ok, st, "median_ms", ntp__json_num(e->median));
            ntp__jset(&ok, st, "min_ms", ntp__json_num(e->min));
            ntp__jset(&ok, st, "mean_ms", ntp__json_num(e->mean));
            ntp__jset(&ok, st, "p90_ms", ntp__json_num(e->p90));
            ntp__jset(&ok, st, "p99_ms", ntp__json_num(e->p99));
            ntp__jset(&ok, st, "max_ms", ntp__json_num(e->max));
            ntp__jset(&ok, st, "stddev_ms", ntp__json_num(e->stddev));
            json_t *ci = json_array();
            ntp__jpush(&ok, ci, ntp__json_num(e->ci95_lo));
            ntp__jpush(&ok, ci, ntp__json_num(e->ci95_hi));
            ntp__jset(&ok, st, "ci95_ms", ci);
            ntp__jset(&ok, st, "n", json_integer((json_int_t)e->n));
            ntp__jset(&ok, st, "cv", ntp__json_num(e->cv));
            ntp__jset(&ok, o, "end_to_end", st);
            ntp__jset(&ok, o, "throughput_per_s", ntp__json_num(r->throughput));
            ntp__jset(&ok, o, "gflops", ntp__json_num(e2e_gflops(r)));
            ntp__jset(&ok, o, "report", report_json(ctx, r));
        } else {
            ntp__jset(&ok, o, "end_to_end", json_null());
            ntp__jset(&ok, o, "throughput_per_s", json_null());
            ntp__jset(&ok, o, "gflops", json_null());
            ntp__jset(&ok, o, "report", json_null());
        }
        ntp__jpush(&ok, configs, o);
    }
    ntp__jset(&ok, root, "configurations", configs);
    return ntp__json_finish(ctx, root, ok, out, "sweep");
}

static void write_csv(const ntp_sweep *s, FILE *f)
{
    fputs("config,label", f);
    for (int i = 0; i < s->n_factors; i++) {
        ntp__csv_sep(f);
        ntp__csv_str(f, s->f[i].name);
    }
    fputs(",status,error,n,median_ms,min_ms,mean_ms,p90_ms,p99_ms,max_ms,stddev_ms,ci95_lo_ms,"
          "ci95_hi_ms,cv,throughput_per_s,gflops\n",
          f);
    for (int c = 0; c < s->n_configs; c++) {
        ntp__csv_int(f, c);
        ntp__csv_sep(f);
        ntp__csv_str(f, s->labels[c]);
        for (int i = 0; i < s->n_factors; i++) {
            ntp__csv_sep(f);
            ntp__csv_str(f, s->f[i].values[s->value[c * s->n_factors + i]]);
        }
        ntp__csv_sep(f);
        ntp__csv_str(f, status_of(s, c));
        ntp__csv_sep(f);
        const ntp_run_result *r = s->results[c];
        ntp__csv_str(f, r ? NULL : s->errors[c]);
        if (!r) {
            fputs(",,,,,,,,,,,,,\n", f);
            continue;
        }
        const ntp_stats *e = &r->end_to_end_ms;
        ntp__csv_sep(f);
        ntp__csv_int(f, (int64_t)e->n);
        const double v[] = {e->median,  e->min, e->mean,       e->p90,
                            e->p99,     e->max, e->stddev,     e->ci95_lo,
                            e->ci95_hi, e->cv,  r->throughput, e2e_gflops(r)};
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
            ntp__csv_sep(f);
            ntp__csv_num(f, v[k]);
        }
        fputc('\n', f);
    }
}

ntp_status ntp_report_write_sweep(ntp_ctx *ctx, const ntp_sweep *s, ntp_format fmt, FILE *f)
{
    if (!s || !f)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_sweep: no sweep or stream");
    switch (fmt) {
    case NTP_FORMAT_TABLE: write_table(s, f); return ntp__check_stream(ctx, f, "sweep");
    case NTP_FORMAT_JSON: return write_json(ctx, s, f);
    case NTP_FORMAT_CSV: write_csv(s, f); return ntp__check_stream(ctx, f, "sweep");
    }
    return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "unknown format %d", (int)fmt);
}
