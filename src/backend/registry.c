/* The backends built into this library, in preference order: the first one
 * that is built is the default. Later issues add oneDNN, XNNPACK, BLAS and
 * CUDA ahead of the reference backend when their dependency is found; the
 * build defines NTP_HAVE_<NAME> for each. */
#include <string.h>

#include "backend-impl.h"
#include "ntprof/run.h"

static const ntp_backend_i *const backends[] = {
    &ntp__backend_ref,
};

int ntp__backend_count(void) { return (int)(sizeof backends / sizeof backends[0]); }

const ntp_backend_i *ntp__backend_get(int i)
{
    return i >= 0 && i < ntp__backend_count() ? backends[i] : NULL;
}

const ntp_backend_i *ntp__backend_find(const char *name)
{
    for (int i = 0; i < ntp__backend_count(); i++)
        if (strcmp(backends[i]->name, name) == 0)
            return backends[i];
    return NULL;
}

const char *ntp_backends(void) { return NTP_BACKENDS_STR; }
