/* PAPI event sets (docs/counters.md: `--tool papi:EVENTS`).
 *
 * PAPI counts the calling thread, the one that runs the layers; a
 * backend's worker threads are counted by --counters, which opens a group
 * on every thread. Events are added one at a time and the set is started
 * after each addition, because PAPI accepts a preset it believes the CPU
 * has (papi_avail lists them from libpfm4's tables) and the kernel refuses
 * it only when counting starts: such an event is removed and reported n/a
 * with PAPI's own message. The build uses papi-none.c when PAPI is absent. */
#include <papi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "counters-impl.h"

#define MAX_PAPI_EVENTS 32

struct ntp_papi {
    int es;
    int n; /* events asked for */
    char name[MAX_PAPI_EVENTS][96];
    bool avail[MAX_PAPI_EVENTS];
    char reason[MAX_PAPI_EVENTS][256];
    int slot[MAX_PAPI_EVENTS]; /* position in the event set's values */
    int n_counting;
    long long vals[MAX_PAPI_EVENTS];
    bool started;
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int init_ret;

static void init(void)
{
    init_ret = PAPI_library_init(PAPI_VER_CURRENT);
}

static bool papi_ready(char *why, size_t len);

bool ntp__papi_component_disabled(const char *component, char *why, size_t len)
{
    char init_why[256];
    if (!papi_ready(init_why, sizeof init_why)) {
        snprintf(why, len, "%s", init_why);
        return true;
    }
    for (int c = 0; c < PAPI_num_components(); c++) {
        const PAPI_component_info_t *ci = PAPI_get_component_info(c);
        if (ci && !strcmp(ci->name, component)) {
            if (!ci->disabled)
                return false;
            snprintf(why, len, "%s",
                     ci->disabled_reason[0] ? ci->disabled_reason : "no reason given");
            return true;
        }
    }
    snprintf(why, len, "this PAPI has no %s component", component);
    return true;
}

/* Why PAPI cannot count an event it refused: when its CPU component is
 * disabled (libpfm4 knows no PMU on this CPU, or the kernel exposes none),
 * every perf:: native event and every preset is missing for that reason,
 * and PAPI's own "Event does not exist" would hide it. */
static void refusal(char *buf, size_t len, const char *what, int ret)
{
    char off[PAPI_MAX_STR_LEN];
    if (ntp__papi_component_disabled("perf_event", off, sizeof off))
        snprintf(buf, len, "%s: %s (PAPI's perf_event component is disabled: %s)", what,
                 PAPI_strerror(ret), off);
    else
        snprintf(buf, len, "%s: %s", what, PAPI_strerror(ret));
}

static bool papi_ready(char *why, size_t len)
{
    pthread_once(&once, init);
    if (init_ret != PAPI_VER_CURRENT) {
        snprintf(why, len, "PAPI_library_init failed: %s",
                 init_ret > 0 ? "the library and header versions differ" : PAPI_strerror(init_ret));
        return false;
    }
    return true;
}

ntp_status ntp__papi_open(ntp_ctx *ctx, const char *events, ntp_papi **out)
{
    *out = NULL;
    char why[256];
    if (!papi_ready(why, sizeof why))
        return ntp__opt_error(ctx, NTP_STATUS_UNSUPPORTED, "ntp_run_opts.tool", "papi: %s", why);
    ntp_papi *p = calloc(1, sizeof *p);
    if (!p)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    p->es = PAPI_NULL;
    int ret = PAPI_create_eventset(&p->es);
    if (ret != PAPI_OK) {
        free(p);
        return ntp__opt_error(ctx, NTP_STATUS_BACKEND_ERROR, "ntp_run_opts.tool",
                              "papi: PAPI_create_eventset: %s", PAPI_strerror(ret));
    }
    char list[1024];
    snprintf(list, sizeof list, "%s", events);
    char *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (p->n == MAX_PAPI_EVENTS) {
            ntp__papi_close(p);
            return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_run_opts.tool",
                                  "papi: at most %d events", MAX_PAPI_EVENTS);
        }
        int i = p->n++;
        snprintf(p->name[i], sizeof p->name[i], "%s", t);
        p->slot[i] = -1;
        int code = 0;
        ret = PAPI_event_name_to_code(t, &code);
        if (ret == PAPI_OK)
            ret = PAPI_add_event(p->es, code);
        if (ret != PAPI_OK) {
            refusal(p->reason[i], sizeof p->reason[i], "PAPI", ret);
            continue;
        }
        long long scratch[MAX_PAPI_EVENTS];
        ret = PAPI_start(p->es);
        if (ret != PAPI_OK) {
            snprintf(p->reason[i], sizeof p->reason[i], "PAPI_start: %s%s", PAPI_strerror(ret),
                     ntp__have_cpu_pmu()
                         ? ""
                         : " (no hardware PMU: the kernel exposes no CPU performance counters)");
            PAPI_remove_event(p->es, code);
            continue;
        }
        PAPI_stop(p->es, scratch);
        p->avail[i] = true;
        p->slot[i] = p->n_counting++;
    }
    if (p->n_counting > 0) {
        ret = PAPI_start(p->es);
        if (ret != PAPI_OK) {
            ntp__papi_close(p);
            return ntp__opt_error(ctx, NTP_STATUS_BACKEND_ERROR, "ntp_run_opts.tool",
                                  "papi: PAPI_start: %s", PAPI_strerror(ret));
        }
        p->started = true;
    }
    *out = p;
    return NTP_STATUS_OK;
}

int ntp__papi_count(const ntp_papi *p)
{
    return p->n;
}

const char *ntp__papi_name(const ntp_papi *p, int i, bool *available, const char **reason)
{
    *available = p->avail[i];
    *reason = p->avail[i] ? NULL : p->reason[i];
    return p->name[i];
}

bool ntp__papi_read(ntp_papi *p, long long *values)
{
    if (p->started && PAPI_read(p->es, p->vals) != PAPI_OK)
        return false;
    for (int i = 0; i < p->n; i++)
        values[i] = p->slot[i] >= 0 ? p->vals[p->slot[i]] : 0;
    return true;
}

void ntp__papi_close(ntp_papi *p)
{
    if (!p)
        return;
    if (p->started)
        PAPI_stop(p->es, p->vals);
    PAPI_cleanup_eventset(p->es);
    PAPI_destroy_eventset(&p->es);
    free(p);
}

bool ntp__papi_describe(char *buf, size_t len)
{
    char why[256];
    if (!papi_ready(why, sizeof why)) {
        snprintf(buf, len, "%s", why);
        return false;
    }
    int v = PAPI_get_opt(PAPI_LIB_VERSION, NULL);
    size_t used =
        (size_t)snprintf(buf, len, "PAPI %d.%d.%d; active components:", PAPI_VERSION_MAJOR(v),
                         PAPI_VERSION_MINOR(v), PAPI_VERSION_REVISION(v));
    for (int c = 0; c < PAPI_num_components() && used < len; c++) {
        const PAPI_component_info_t *ci = PAPI_get_component_info(c);
        if (ci && !ci->disabled)
            used += (size_t)snprintf(buf + used, len - used, " %s", ci->name);
    }
    /* The CPU component is the one users come for; say why it is off. */
    char off[PAPI_MAX_STR_LEN];
    if (used < len && ntp__papi_component_disabled("perf_event", off, sizeof off))
        snprintf(buf + used, len - used, "; perf_event disabled: %s", off);
    return true;
}
