/* The thread pools' wait policy this process started with
 * (docs/run.md#wait-policy): read once when the library loads, reported with
 * every run (measure/env.c) and followed by the pools that have no
 * environment setting of their own (XNNPACK's pthreadpool). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wait-policy-impl.h"
#include "ntprof/run.h"

static char wait_name[96] = "spin", wait_settings[256] = "";

/* Read when the library loads, as the OpenMP runtime and OpenBLAS read
 * theirs (before main): a later setenv changes neither. */
__attribute__((constructor)) static void capture_wait_policy(void)
{
    static const char *const vars[] = {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT",
                                       "OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT"};
    size_t used = 0;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && used < sizeof wait_settings)
            used += (size_t)snprintf(wait_settings + used, sizeof wait_settings - used,
                                     "%s%s=%.40s", used ? " " : "", vars[i], v);
    }
    const char *applied = getenv("NTPROF_WAIT_POLICY_APPLIED");
    if (applied && *applied)
        snprintf(wait_name, sizeof wait_name, "%.90s", applied);
    else if (used)
        snprintf(wait_name, sizeof wait_name, "environment");
}

bool ntp__wait_passive(void)
{
    return strcasestr(wait_settings, "OMP_WAIT_POLICY=passive") != NULL;
}

void ntp_wait_policy(const char **name, const char **settings)
{
    *name = wait_name;
    *settings = wait_settings;
}
