/* Opening cuBLAS at run time (cublas-dl.h says why). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define NTP_CUBLAS_DL_FILL
#include "cublas-dl.h"

ntp_cublas_dl ntp__cublas;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool loaded;
static char reason[256];

static void load(void)
{
    char name[64];
    snprintf(name, sizeof name, "libcublas.so.%d", CUBLAS_VER_MAJOR);
    /* The handle stays open for the life of the process, like a linked
     * library. */
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(reason, sizeof reason, "cannot load %s (%s)", name, e ? e : "dlopen failed");
        return;
    }
    /* dlsym returns void *; POSIX guarantees it converts to a function
     * pointer, which memcpy expresses without a cast ISO C frowns on. */
// clang-format off
#define NTP_CUBLAS_SYM_(f)                                                                 \
    {                                                                                      \
        void *p = dlsym(h, #f);                                                            \
        if (!p) {                                                                          \
            snprintf(reason, sizeof reason, "%s has no %s (cuBLAS %d expected)", name, #f, \
                     CUBLAS_VER_MAJOR);                                                    \
            return;                                                                        \
        }                                                                                  \
        memcpy(&ntp__cublas.f, &p, sizeof p);                                              \
    }
    // clang-format on
    NTP_CUBLAS_FUNCS(NTP_CUBLAS_SYM_)
#undef NTP_CUBLAS_SYM_
    loaded = true;
}

bool ntp__cublas_load(char *why, size_t len)
{
    pthread_once(&once, load);
    if (!loaded && why && len)
        snprintf(why, len, "%s", reason);
    return loaded;
}
