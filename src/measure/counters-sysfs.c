/* Events a kernel PMU describes in sysfs: "pmu/event/" or
 * "pmu/term=value,.../" as perf writes them.
 *
 * /sys/bus/event_source/devices/<pmu>/type is the perf_event_attr type;
 * events/<name> holds the terms of a named event ("event=0x3c,umask=0x0"),
 * with events/<name>.unit and .scale beside it; format/<term> says which
 * bits of config, config1 or config2 a term's value fills ("config:0-7,21").
 * This is how Intel's top-down events and the msr PMU's counters are named,
 * and how perf itself encodes them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "counters-impl.h"

#define SYSFS_PMU "/sys/bus/event_source/devices/"

static bool read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (ok)
        buf[strcspn(buf, "\n")] = 0;
    return ok;
}

/* Only names made of these characters are looked up, so a spec cannot
 * walk out of the PMU's directory. */
static bool safe_name(const char *s)
{
    if (!*s || s[0] == '.')
        return false;
    for (; *s; s++)
        if (!(*s == '-' || *s == '_' || *s == '.' || (*s >= '0' && *s <= '9') ||
              (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
            return false;
    return true;
}

bool ntp__sysfs_has_event(const char *pmu, const char *event)
{
    char path[512];
    struct stat st;
    if (!safe_name(pmu) || !safe_name(event))
        return false;
    snprintf(path, sizeof path, SYSFS_PMU "%s/events/%s", pmu, event);
    return stat(path, &st) == 0;
}

/* Put `value` into the bits a format file names. */
static bool apply_format(const char *pmu, const char *term, uint64_t value,
                         struct perf_event_attr *a, char *reason, size_t len)
{
    char path[512], fmt[256];
    snprintf(path, sizeof path, SYSFS_PMU "%s/format/%s", pmu, term);
    if (!safe_name(term) || !read_line(path, fmt, sizeof fmt)) {
        snprintf(reason, len, "PMU %s has no term '%s' (see %s%s/format/)", pmu, term, SYSFS_PMU,
                 pmu);
        return false;
    }
    __u64 *dst;
    char *p = fmt;
    if (strncmp(p, "config2:", 8) == 0)
        dst = &a->config2, p += 8;
    else if (strncmp(p, "config1:", 8) == 0)
        dst = &a->config1, p += 8;
    else if (strncmp(p, "config:", 7) == 0)
        dst = &a->config, p += 7;
    else {
        snprintf(reason, len, "format %s of PMU %s is '%s', which ntprof cannot read", term, pmu,
                 fmt);
        return false;
    }
    /* Ranges fill from the value's low bits upwards, in the order given. */
    int used = 0;
    while (*p) {
        char *end;
        long lo = strtol(p, &end, 10), hi = lo;
        if (end == p || lo < 0 || lo > 63)
            break;
        p = end;
        if (*p == '-') {
            hi = strtol(p + 1, &end, 10);
            if (end == p + 1 || hi < lo || hi > 63)
                break;
            p = end;
        }
        for (long b = lo; b <= hi; b++, used++)
            if (used < 64 && ((value >> used) & 1))
                *dst |= (__u64)1 << b;
        if (*p == ',')
            p++;
    }
    return true;
}

/* Apply "term=value,term,alias" to a. Depth limits alias expansion. */
static ntp_status apply_terms(const char *pmu, const char *terms, struct perf_event_attr *a,
                              char *unit, size_t unit_len, double *scale, char *reason, size_t len,
                              int depth)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", terms);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ')
            t++;
        if (!*t)
            continue;
        char *eq = strchr(t, '=');
        if (eq) {
            *eq = 0;
            char *end;
            errno = 0;
            uint64_t v = strtoull(eq + 1, &end, 0);
            if (end == eq + 1 || *end || errno) {
                snprintf(reason, len, "'%s=%s' in %s/%s/: the value is not a number", t, eq + 1,
                         pmu, terms);
                return NTP_STATUS_PARSE_ERROR;
            }
            /* perf's own terms, not the PMU's. */
            if (strcmp(t, "name") == 0 || strcmp(t, "period") == 0)
                continue;
            if (!apply_format(pmu, t, v, a, reason, len))
                return NTP_STATUS_UNKNOWN_NAME;
            continue;
        }
        char path[512], alias[256];
        snprintf(path, sizeof path, SYSFS_PMU "%s/events/%s", pmu, t);
        if (depth == 0 && safe_name(t) && read_line(path, alias, sizeof alias)) {
            ntp_status st = apply_terms(pmu, alias, a, unit, unit_len, scale, reason, len, 1);
            if (st)
                return st;
            char extra[64];
            snprintf(path, sizeof path, SYSFS_PMU "%s/events/%s.unit", pmu, t);
            if (read_line(path, extra, sizeof extra))
                snprintf(unit, unit_len, "%s", extra);
            snprintf(path, sizeof path, SYSFS_PMU "%s/events/%s.scale", pmu, t);
            if (read_line(path, extra, sizeof extra))
                *scale = strtod(extra, NULL);
            continue;
        }
        /* A bare format term is a flag set to 1 (perf's convention). */
        snprintf(path, sizeof path, SYSFS_PMU "%s/format/%s", pmu, t);
        struct stat st;
        if (safe_name(t) && stat(path, &st) == 0) {
            if (!apply_format(pmu, t, 1, a, reason, len))
                return NTP_STATUS_UNKNOWN_NAME;
            continue;
        }
        snprintf(reason, len, "PMU %s names no event '%s' (see %s%s/events/)", pmu, t, SYSFS_PMU,
                 pmu);
        return NTP_STATUS_UNKNOWN_NAME;
    }
    return NTP_STATUS_OK;
}

ntp_status ntp__sysfs_encode(const char *spec, struct perf_event_attr *attr, char *unit,
                             size_t unit_len, double *scale, char *reason, size_t len)
{
    memset(attr, 0, sizeof *attr);
    attr->size = sizeof *attr;
    *scale = 1;
    if (unit_len)
        unit[0] = 0;
    const char *s1 = strchr(spec, '/');
    const char *s2 = s1 ? strrchr(spec, '/') : NULL;
    if (!s1 || s2 == s1) {
        snprintf(reason, len, "'%s' is not pmu/event/ (perf's syntax, such as msr/tsc/)", spec);
        return NTP_STATUS_PARSE_ERROR;
    }
    char pmu[64], terms[512];
    snprintf(pmu, sizeof pmu, "%.*s", (int)(s1 - spec), spec);
    snprintf(terms, sizeof terms, "%.*s", (int)(s2 - s1 - 1), s1 + 1);
    char path[512], type[32];
    snprintf(path, sizeof path, SYSFS_PMU "%s/type", pmu);
    if (!safe_name(pmu) || !read_line(path, type, sizeof type)) {
        if (strcmp(pmu, "cpu") == 0 && !ntp__have_cpu_pmu())
            snprintf(reason, len,
                     "no hardware PMU: the kernel exposes no CPU performance counters "
                     "(a VM without a virtual PMU; %scpu is missing)",
                     SYSFS_PMU);
        else
            snprintf(reason, len, "no PMU '%s' in %s", pmu, SYSFS_PMU);
        return NTP_STATUS_UNKNOWN_NAME;
    }
    attr->type = (uint32_t)strtoul(type, NULL, 10);
    ntp_status st = apply_terms(pmu, terms, attr, unit, unit_len, scale, reason, len, 0);
    if (st)
        return st;
    for (const char *m = s2 + 1; *m; m++) {
        if (*m == 'u')
            attr->exclude_kernel = 1;
        else if (*m == 'k')
            attr->exclude_user = 1;
        else {
            snprintf(reason, len, "'%s': unknown modifier '%c' after the last '/' (u or k)", spec,
                     *m);
            return NTP_STATUS_PARSE_ERROR;
        }
    }
    return NTP_STATUS_OK;
}
