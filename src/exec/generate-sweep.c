/* ntp_generate_sweep_run: generate over the full factorial of a few axes
 * (generate.h, docs/decoders.md). Each point is one ntp_generate in this
 * process: a static point allocates nothing, and a measured one frees its
 * plans and cache before the next starts. The sweep is opaque to callers:
 * its accessors are at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "exec/generate-impl.h"

#define MAX_POINTS 4096

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

void ntp_generate_sweep_free(ntp_generate_sweep *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n_points; i++)
        ntp_generate_result_free(s->points[i].r);
    free(s->points);
    for (int a = 0; a < s->n_axes; a++) {
        for (int v = 0; v < s->n_values[a]; v++)
            free(s->values[a][v]);
        free(s->values[a]);
        free(s->axis[a]);
    }
    free(s->model_path);
    free(s);
}

/* Split "NAME=V1,V2,..." into axis a of s. */
static ntp_status parse_axis(ntp_ctx *ctx, ntp_generate_sweep *s, const char *spec)
{
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || !eq[1])
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "sweep axis '%s': expected NAME=V1,V2,...", spec);
    int a = s->n_axes;
    if (a == NTP_GENERATE_SWEEP_MAX_AXES)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "at most %d sweep axes",
                          NTP_GENERATE_SWEEP_MAX_AXES);
    if (!(s->axis[a] = dup_n(spec, (size_t)(eq - spec))))
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    s->n_axes++;
    for (int b = 0; b < a; b++)
        if (strcmp(s->axis[b], s->axis[a]) == 0)
            return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "sweep axis '%s' given twice",
                              s->axis[a]);
    int n = 1;
    for (const char *c = eq + 1; *c; c++)
        n += *c == ',';
    if (!(s->values[a] = calloc((size_t)n, sizeof *s->values[a])))
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    const char *v = eq + 1;
    for (int i = 0; i < n; i++) {
        const char *e = strchr(v, ',');
        size_t len = e ? (size_t)(e - v) : strlen(v);
        if (len == 0)
            return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                              "sweep axis '%s': an empty value in '%s'", s->axis[a], eq + 1);
        if (!(s->values[a][i] = dup_n(v, len)))
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        s->n_values[a]++;
        v = e ? e + 1 : v + len;
    }
    return NTP_STATUS_OK;
}

static bool parse_count(const char *v, int64_t min, int64_t *out)
{
    char *end;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || x < min || x > INT32_MAX)
        return false;
    *out = x;
    return true;
}

/* Apply the value of axis a to the options; other names become --set. */
static ntp_status apply(ntp_ctx *ctx, const char *axis, const char *v, ntp_generate_opts *o,
                        const char **set, int *n_set, char *buf, size_t len)
{
    int64_t x;
    if (strcmp(axis, "kv_dtype") == 0) {
        if (ntp_dtype_parse(v, &o->kv_dtype) != NTP_STATUS_OK ||
            (o->kv_dtype != NTP_DTYPE_F32 && o->kv_dtype != NTP_DTYPE_BF16 &&
             o->kv_dtype != NTP_DTYPE_F16 && o->kv_dtype != NTP_DTYPE_I8))
            return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                              "sweep axis kv_dtype: expected f32, bf16, f16 or i8, got '%s'", v);
        return NTP_STATUS_OK;
    }
    if (strcmp(axis, "weight_dtype") == 0) {
        if (ntp_dtype_parse(v, &o->weight_dtype) != NTP_STATUS_OK ||
            (o->weight_dtype != NTP_DTYPE_F32 && o->weight_dtype != NTP_DTYPE_BF16 &&
             o->weight_dtype != NTP_DTYPE_I8))
            return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                              "sweep axis weight_dtype: expected f32, bf16 or i8, got '%s'", v);
        return NTP_STATUS_OK;
    }
    int64_t *dst = strcmp(axis, "context") == 0  ? &o->context_depth
                   : strcmp(axis, "prompt") == 0 ? &o->prompt_len
                   : strcmp(axis, "gen") == 0    ? &o->gen_len
                   : strcmp(axis, "batch") == 0  ? &o->batch
                                                 : NULL;
    if (dst) {
        if (!parse_count(v, strcmp(axis, "context") == 0 ? 0 : 1, &x))
            return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                              "sweep axis %s: expected %s integer, got '%s'", axis,
                              strcmp(axis, "context") == 0 ? "a non-negative" : "a positive", v);
        *dst = x;
        return NTP_STATUS_OK;
    }
    snprintf(buf, len, "%s=%s", axis, v);
    set[(*n_set)++] = buf;
    return NTP_STATUS_OK;
}

ntp_status ntp_generate_sweep_run(ntp_ctx *ctx, const char *path, const ntp_generate_opts *o,
                                  const char *const *vary, int n_vary, ntp_generate_sweep **out)
{
    *out = NULL;
    ntp_generate_sweep *s = calloc(1, sizeof *s);
    const char **set = NULL;
    char(*bufs)[256] = NULL;
    ntp_status st = NTP_STATUS_OK;
    if (!s || !(s->model_path = ntp__strdup(path))) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    s->static_only = o->static_only;
    if (n_vary < 1) {
        st = ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "a sweep needs at least one axis");
        goto done;
    }
    for (int i = 0; i < n_vary; i++)
        if ((st = parse_axis(ctx, s, vary[i])))
            goto done;
    int64_t n = 1;
    for (int a = 0; a < s->n_axes; a++)
        n *= s->n_values[a];
    if (n > MAX_POINTS) {
        st = ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "the sweep has %lld points, more than %d",
                        (long long)n, MAX_POINTS);
        goto done;
    }
    set = calloc((size_t)o->n_set + NTP_GENERATE_SWEEP_MAX_AXES + 1, sizeof *set);
    bufs = calloc(NTP_GENERATE_SWEEP_MAX_AXES, sizeof *bufs);
    s->points = calloc((size_t)n, sizeof *s->points);
    if (!set || !bufs || !s->points) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    /* Every value checked before the first point runs. */
    for (int a = 0; a < s->n_axes; a++)
        for (int v = 0; v < s->n_values[a]; v++) {
            ntp_generate_opts po = *o;
            int ns = 0;
            if ((st = apply(ctx, s->axis[a], s->values[a][v], &po, set, &ns, bufs[0],
                            sizeof bufs[0])))
                goto done;
        }
    for (int64_t i = 0; i < n; i++) {
        ntp_generate_point *p = &s->points[i];
        ntp_generate_opts po = *o;
        int ns = o->n_set;
        for (int k = 0; k < o->n_set; k++)
            set[k] = o->set[k];
        int64_t rest = i;
        for (int a = s->n_axes - 1; a >= 0; a--) {
            p->value[a] = s->values[a][rest % s->n_values[a]];
            rest /= s->n_values[a];
        }
        for (int a = 0; a < s->n_axes; a++)
            if ((st = apply(ctx, s->axis[a], p->value[a], &po, set, &ns, bufs[a], sizeof bufs[a])))
                goto done;
        po.set = set;
        po.n_set = ns;
        po.progress = NULL;
        if (o->progress)
            o->progress(o->progress_user, "sweep", (int)i, (int)n);
        if ((st = ntp_generate(ctx, path, &po, &p->r))) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", ntp_ctx_errmsg(ctx));
            char at[512];
            int len = 0;
            for (int a = 0; a < s->n_axes; a++)
                len += snprintf(at + len, sizeof at - (size_t)len, "%s%s=%s", a ? " " : "",
                                s->axis[a], p->value[a]);
            ntp_ctx_clear(ctx);
            st = ntp__error(ctx, st, "sweep point %s: %s", at, msg);
            goto done;
        }
        s->n_points++;
    }
    if (o->progress)
        o->progress(o->progress_user, "sweep", (int)n, (int)n);
    *out = s;
    s = NULL;
done:
    free(set);
    free(bufs);
    ntp_generate_sweep_free(s);
    return st;
}

const char *ntp_generate_sweep_model_path(const ntp_generate_sweep *s)
{
    return s ? s->model_path : NULL;
}

int ntp_generate_sweep_axis_count(const ntp_generate_sweep *s)
{
    return s ? s->n_axes : 0;
}

const char *ntp_generate_sweep_axis(const ntp_generate_sweep *s, int a)
{
    return s && a >= 0 && a < s->n_axes ? s->axis[a] : NULL;
}

int ntp_generate_sweep_value_count(const ntp_generate_sweep *s, int a)
{
    return s && a >= 0 && a < s->n_axes ? s->n_values[a] : 0;
}

const char *ntp_generate_sweep_value(const ntp_generate_sweep *s, int a, int v)
{
    return s && a >= 0 && a < s->n_axes && v >= 0 && v < s->n_values[a] ? s->values[a][v] : NULL;
}

int ntp_generate_sweep_point_count(const ntp_generate_sweep *s)
{
    return s ? s->n_points : 0;
}

const ntp_generate_point *ntp_generate_sweep_point(const ntp_generate_sweep *s, int i)
{
    return s && i >= 0 && i < s->n_points ? &s->points[i] : NULL;
}

bool ntp_generate_sweep_static_only(const ntp_generate_sweep *s)
{
    return s ? s->static_only : false;
}
