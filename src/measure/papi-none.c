/* Built without PAPI: `--tool papi` fails and says why. (The build uses
 * papi.c when pkg-config finds papi.) */
#include <stdio.h>

#include "core/ctx-impl.h"
#include "counters-impl.h"

ntp_status ntp__papi_open(ntp_ctx *ctx, const char *events, ntp_papi **out)
{
    (void)events;
    *out = NULL;
    return ntp__opt_error(ctx, NTP_STATUS_UNSUPPORTED, "ntp_run_opts.tool",
                          "papi: built without PAPI (install libpapi-dev and rebuild)");
}

int ntp__papi_count(const ntp_papi *p)
{
    (void)p;
    return 0;
}

const char *ntp__papi_name(const ntp_papi *p, int i, bool *available, const char **reason)
{
    (void)p;
    (void)i;
    *available = false;
    *reason = "built without PAPI";
    return "";
}

bool ntp__papi_read(ntp_papi *p, long long *values)
{
    (void)p;
    (void)values;
    return false;
}

void ntp__papi_close(ntp_papi *p)
{
    (void)p;
}

bool ntp__papi_describe(char *buf, size_t len)
{
    snprintf(buf, len, "built without PAPI (pkg-config found no papi at configure time)");
    return false;
}

bool ntp__papi_component_disabled(const char *component, char *why, size_t len)
{
    (void)component;
    snprintf(why, len, "built without PAPI");
    return true;
}
