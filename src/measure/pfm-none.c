/* Built without libpfm4: events by libpfm4 name are n/a, and say why.
 * (The build uses pfm.c when libpfm4 and its headers are found.) */
#include <stdio.h>
#include <string.h>

#include "counters-impl.h"

ntp_status ntp__pfm_encode(const char *name, struct perf_event_attr *attr, char *reason, size_t len)
{
    (void)name;
    memset(attr, 0, sizeof *attr);
    snprintf(reason, len,
             "built without libpfm4 (install libpfm4-dev and rebuild to count "
             "events by libpfm4 name)");
    return NTP_STATUS_UNSUPPORTED;
}

bool ntp__pfm_describe(char *buf, size_t len)
{
    snprintf(buf, len, "built without libpfm4 (libpfm4-dev was not found at configure time)");
    return false;
}
