/* What the report writers show of a run and a graph, on top of the
 * generic writers of src/core/writers.c: the format names, shapes, thread
 * counts and device memory. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "report/report-impl.h"

ntp_status ntp_format_parse(const char *s, ntp_format *out)
{
    static const struct {
        const char *name;
        ntp_format fmt;
    } formats[] = {{"table", NTP_FORMAT_TABLE}, {"json", NTP_FORMAT_JSON}, {"csv", NTP_FORMAT_CSV}};
    if (!s || !out)
        return NTP_STATUS_INVALID_ARGUMENT;
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (strcasecmp(s, formats[i].name) == 0) {
            *out = formats[i].fmt;
            return NTP_STATUS_OK;
        }
    return NTP_STATUS_UNKNOWN_NAME;
}

const char *ntp__threads_text(const ntp_run_result *r, char *buf, size_t len)
{
    if (r->threads > 0)
        snprintf(buf, len, "%d", r->threads);
    else
        snprintf(buf, len, "%d (all cores)", r->env.cores);
    return buf;
}

const char *ntp__shape_x(const ntp_shape *s, char *buf, size_t len)
{
    if (len == 0)
        return buf;
    if (s->ndim <= 0) {
        snprintf(buf, len, "scalar");
        return buf;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < s->ndim && i < NTP_MAX_DIMS && used < len; i++) {
        int n = snprintf(buf + used, len - used, i ? "x%lld" : "%lld", (long long)s->dim[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return buf;
}

json_t *ntp__json_shape(const ntp_shape *s)
{
    json_t *a = json_array();
    if (!a)
        return NULL;
    for (int i = 0; i < s->ndim && i < NTP_MAX_DIMS; i++)
        if (json_array_append_new(a, json_integer((json_int_t)s->dim[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

json_t *ntp__device_memory_json(bool *ok, const ntp_memory_result *m)
{
    json_t *dev = json_object();
    ntp__jset(ok, dev, "weight_bytes", json_integer(m->device_weight_bytes));
    ntp__jset(ok, dev, "activation_bytes", json_integer(m->device_activation_bytes));
    ntp__jset(ok, dev, "workspace_bytes", json_integer(m->device_workspace_bytes));
    ntp__jset(ok, dev, "peak_bytes", json_integer(m->device_peak_bytes));
    return dev;
}

void ntp__put_reasons(FILE *f, const char *lead, const void *layers, int n,
                      const char *(*text)(const void *layers, int i, int what))
{
    for (int i = 0; i < n; i++) {
        const char *why = text(layers, i, 0);
        bool first = why[0] != '\0';
        for (int k = 0; first && k < i; k++)
            first = strcmp(text(layers, k, 0), why) != 0;
        if (!first)
            continue;
        char names[1024];
        size_t u = 0;
        names[0] = '\0';
        for (int k = i; k < n && u < sizeof names; k++)
            if (strcmp(text(layers, k, 0), why) == 0) {
                const char *name = text(layers, k, 1);
                u += (size_t)snprintf(names + u, sizeof names - u, "%s%s", u ? ", " : "",
                                      name ? name : "?");
            }
        char prefix[96];
        snprintf(prefix, sizeof prefix, "%s%s: ", lead, why);
        ntp__put_wrapped(f, prefix, names);
    }
}
