/* The backends built into this library, highest priority first: the first
 * is the default. The build generates the list of backends whose
 * dependency was found (src/backend/backends.h.in); the order comes from
 * each method table's `.priority`, not from the build, so adding a backend
 * touches no shared source file. */
#include <pthread.h>
#include <string.h>

#include "backend-impl.h"
#include "ntp-backends.h"
#include "ntprof/run.h"

#define NTP_BACKEND_EXTERN_(name) extern const ntp_backend_i ntp__backend_##name;
NTP_BACKEND_LIST(NTP_BACKEND_EXTERN_)
#undef NTP_BACKEND_EXTERN_

static const ntp_backend_i *const built[] = {
#define NTP_BACKEND_ENTRY_(name) &ntp__backend_##name,
    NTP_BACKEND_LIST(NTP_BACKEND_ENTRY_)
#undef NTP_BACKEND_ENTRY_
};

#define N_BUILT ((int)(sizeof built / sizeof built[0]))

static pthread_once_t order_once = PTHREAD_ONCE_INIT;
static const ntp_backend_i *ordered[N_BUILT];
static char names[N_BUILT * 32];

/* Insertion sort by priority, highest first; equal priorities keep the
 * build's order. Then the names, comma-separated, in that order. */
static void order(void)
{
    for (int i = 0; i < N_BUILT; i++) {
        int j = i;
        for (; j > 0 && ordered[j - 1]->priority < built[i]->priority; j--)
            ordered[j] = ordered[j - 1];
        ordered[j] = built[i];
    }
    size_t used = 0;
    for (int i = 0; i < N_BUILT; i++) {
        size_t len = strlen(ordered[i]->name);
        if (used + len + 2 > sizeof names)
            break;
        if (used)
            names[used++] = ',';
        memcpy(names + used, ordered[i]->name, len + 1);
        used += len;
    }
}

int ntp__backend_count(void)
{
    return N_BUILT;
}

const ntp_backend_i *ntp__backend_get(int i)
{
    pthread_once(&order_once, order);
    return i >= 0 && i < N_BUILT ? ordered[i] : NULL;
}

const ntp_backend_i *ntp__backend_find(const char *name)
{
    for (int i = 0; i < N_BUILT; i++)
        if (strcmp(built[i]->name, name) == 0)
            return built[i];
    return NULL;
}

/* "onednn,ref". */
const char *ntp_backends(void)
{
    pthread_once(&order_once, order);
    return names;
}

/* The first device backend built in (the registry is the one layer that
 * sees every backend), NULL when none is. */
const ntp_backend_i *ntp__backend_device(void)
{
    for (int i = 0; i < ntp__backend_count(); i++)
        if (ntp__be_is_device(ntp__backend_get(i)))
            return ntp__backend_get(i);
    return NULL;
}
