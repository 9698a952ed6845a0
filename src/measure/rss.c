/* The process's resident set over a measured stretch, as Linux's /proc
 * tells it: the high-water mark (VmHWM), set back to the current resident
 * set by writing 5 to /proc/self/clear_refs (Linux 4.0), so that a run's
 * peak is its own and an instrument's arrays can be left out of it
 * (docs/run.md#the-memory-bus). */
#include <stdio.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "measure-impl.h"

int64_t ntp__rss_status_bytes(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long long kib = -1;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':' && sscanf(line + n + 1, "%lld", &kib) == 1)
            break;
    fclose(f);
    return kib >= 0 ? (int64_t)kib * 1024 : -1;
}

bool ntp__rss_hwm_reset(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return false;
    bool ok = fputs("5", f) >= 0;
    ok = fclose(f) == 0 && ok;
    return ok;
}

/* The mark now into m->peak when higher; false when /proc cannot tell. */
static bool read_mark(ntp__rss_meter *m)
{
    int64_t hwm = ntp__rss_status_bytes("VmHWM");
    if (hwm < 0)
        return false;
    if (hwm > m->peak)
        m->peak = hwm;
    return true;
}

void ntp__rss_meter_start(ntp__rss_meter *m)
{
    /* Freed heap pages given back first (glibc): they are resident yet
     * nobody's, and would be the baseline's. */
#ifdef __GLIBC__
    malloc_trim(0);
#endif
    m->peak = 0;
    m->ok = ntp__rss_hwm_reset();
    m->base = m->ok ? ntp__rss_status_bytes("VmRSS") : -1;
    m->ok = m->ok && m->base >= 0;
}

void ntp__rss_meter_exclude_begin(ntp__rss_meter *m)
{
    m->ok = m->ok && read_mark(m);
}

void ntp__rss_meter_exclude_end(ntp__rss_meter *m)
{
    m->ok = m->ok && ntp__rss_hwm_reset();
}

int64_t ntp__rss_meter_peak(ntp__rss_meter *m)
{
    m->ok = m->ok && read_mark(m);
    return m->ok ? m->peak : 0;
}
