/* ntprof: what this machine can count.
 *
 * `ntprof counters` prints this list: every counter set and event that
 * `ntp_run_opts.counters` accepts, every external tool `ntp_run_opts.tool`
 * can steer, and the libraries behind them, each with whether it works
 * here and, when it does not, why (docs/counters.md). */
#ifndef NTPROF_COUNTERS_H
#define NTPROF_COUNTERS_H

#include <stdbool.h>
#include "ntprof/api.h"
#include "ntprof/context.h"
#include "ntprof/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ntp_counter_info {
    const char *name; /* "cycles", "sw", "perf-stat", "libpfm4" */
    const char *kind; /* "set", "event", "tool" or "library" */
    const char *description;
    bool available;
    /* Why it is not available; for an available item a detail such as the
     * tool's version, or NULL. */
    const char *reason;
} ntp_counter_info;

/* What ntp_counters_probe found: an opaque list that owns its items and
 * their strings (valid until ntp_counter_list_free). */
typedef struct ntp_counter_list ntp_counter_list;

/* Probe this machine: open every event once on the calling thread, look for
 * the tools' binaries and ask them their versions. Takes a fraction of a
 * second (it starts perf and valgrind to ask). */
NTP_API ntp_status ntp_counters_probe(ntp_ctx *ctx, ntp_counter_list **out);
/* The items, in the order `ntprof counters` lists them: sets, events,
 * libraries, tools. Item i of 0 .. count - 1; NULL for any other i. */
NTP_API int ntp_counter_list_count(const ntp_counter_list *l);
NTP_API const ntp_counter_info *ntp_counter_list_item(const ntp_counter_list *l, int i);
NTP_API void ntp_counter_list_free(ntp_counter_list *l);

#ifdef __cplusplus
}
#endif
#endif
