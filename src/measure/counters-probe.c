/* `ntprof counters`: what this machine can count, and why not the rest.
 *
 * Every answer comes from trying: each event is opened once on the calling
 * thread, PAPI is asked to start each of a few events, and perf and
 * valgrind are run with --version. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "counters-impl.h"

/* AddressSanitizer, as gcc (__SANITIZE_ADDRESS__) and clang (__has_feature)
 * each announce it: valgrind cannot run such a binary. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NTP_CLANG_ASAN 1
#endif
#endif

/* The list ntp_counters_probe returns (include/ntprof/counters.h). */
struct ntp_counter_list {
    int n;
    ntp_counter_info *items;
    ntp_counter_store *store; /* owns the strings */
};

typedef struct probe {
    ntp_counter_list *l;
    int cap;
    bool ok;
} probe;

static void add(probe *p, const char *name, const char *kind, const char *desc, bool avail,
                const char *reason)
{
    if (!p->ok)
        return;
    ntp_counter_list *l = p->l;
    if (l->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 64;
        ntp_counter_info *it = realloc(l->items, (size_t)cap * sizeof *it);
        if (!it) {
            p->ok = false;
            return;
        }
        l->items = it;
        p->cap = cap;
    }
    ntp_counter_info *i = &l->items[l->n];
    i->name = ntp__store_str(l->store, name);
    i->kind = kind;
    i->description = ntp__store_str(l->store, desc);
    i->available = avail;
    i->reason = reason ? ntp__store_str(l->store, reason) : NULL;
    if (!i->name || !i->description || (reason && !i->reason))
        p->ok = false;
    else
        l->n++;
}

/* Open the events of `list` here; how many could be counted, and the
 * reason of the first that could not. */
static int try_list(const char *list, int *total, char *reason, size_t len)
{
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_counters *c = NULL;
    int ok = 0;
    *total = 0;
    reason[0] = 0;
    if (!ctx)
        return 0;
    if (ntp__counters_parse(ctx, list, &c) != NTP_STATUS_OK) {
        snprintf(reason, len, "%s", ntp_ctx_errmsg(ctx));
    } else if (ntp__counters_open(ctx, c) != NTP_STATUS_OK) {
        snprintf(reason, len, "%s", ntp_ctx_errmsg(ctx));
    } else {
        /* An event in several groups of a set counts once. */
        for (int e = 0; e < c->n_ev; e++) {
            bool seen = false;
            for (int f = 0; f < e; f++)
                seen |= strcmp(c->ev[f].name, c->ev[e].name) == 0;
            if (seen)
                continue;
            (*total)++;
            if (c->ev[e].group >= 0)
                ok++;
            else if (!reason[0])
                snprintf(reason, len, "%s: %s", c->ev[e].name, c->ev[e].reason);
        }
    }
    ntp__counters_free(c);
    ntp_ctx_free(ctx);
    return ok;
}

static void probe_sets(probe *p)
{
    static const struct {
        const char *name, *desc;
    } sets[] = {
        {"sw", "task-clock, page-faults, context-switches, cpu-migrations (software: everywhere)"},
        {"basic",
         "cycles, instructions, branches, branch-misses, stalled cycles; IPC, branch MPKI"},
        {"cache", "cache references and misses, L1D and LLC loads and misses; miss ratios, MPKI"},
        {"topdown", "top-down level 1: front-end bound, bad speculation, back-end bound, retiring"},
    };
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        char reason[NTP_CREASON + 128], buf[NTP_CREASON + 200];
        int total, ok = try_list(sets[i].name, &total, reason, sizeof reason);
        if (ok == total && total > 0)
            add(p, sets[i].name, "set", sets[i].desc, true, NULL);
        else {
            snprintf(buf, sizeof buf, "%d of %d events count here; %s", ok, total, reason);
            add(p, sets[i].name, "set", sets[i].desc, false, buf);
        }
    }
}

static void probe_events(probe *p)
{
    for (int i = 0; i < ntp__counters_builtin_count(); i++) {
        const char *desc;
        const char *name = ntp__counters_builtin_name(i, &desc);
        char reason[NTP_CREASON + 128];
        int total, ok = try_list(name, &total, reason, sizeof reason);
        const char *colon = strstr(reason, ": ");
        add(p, name, "event", desc, ok > 0, ok > 0 ? NULL : colon ? colon + 2 : reason);
    }
    /* Named events of the other PMUs the kernel exposes (msr, power, ...). */
    DIR *d = opendir("/sys/bus/event_source/devices");
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.' || !strcmp(de->d_name, "software") ||
            !strcmp(de->d_name, "tracepoint") || !strcmp(de->d_name, "breakpoint"))
            continue;
        char path[512];
        snprintf(path, sizeof path, "/sys/bus/event_source/devices/%s/events", de->d_name);
        DIR *e = opendir(path);
        struct dirent *ee;
        int shown = 0;
        while (e && (ee = readdir(e)) && shown < 48) {
            if (ee->d_name[0] == '.' || strchr(ee->d_name, '.'))
                continue;
            char spec[600], reason[NTP_CREASON + 128], desc[300];
            snprintf(spec, sizeof spec, "%s/%s/", de->d_name, ee->d_name);
            snprintf(desc, sizeof desc, "PMU %s (sysfs)", de->d_name);
            int total, ok = try_list(spec, &total, reason, sizeof reason);
            const char *colon = strstr(reason, "/: ");
            add(p, spec, "event", desc, ok > 0, ok > 0 ? NULL : colon ? colon + 3 : reason);
            shown++;
        }
        if (e)
            closedir(e);
    }
    if (d)
        closedir(d);
}

static void probe_libraries(probe *p)
{
    char buf[1024];
    bool ok = ntp__pfm_describe(buf, sizeof buf);
    add(p, "libpfm4", "library", "events by libpfm4 name in --counters (perf::PAGE-FAULTS, ...)",
        ok, buf);
    ok = ntp__papi_describe(buf, sizeof buf);
    add(p, "PAPI", "library", "--tool papi:EVENTS", ok, buf);
    if (!ok)
        return;
    /* Each event on its own: PAPI lists presets from libpfm4's tables, and
     * only starting one shows whether the kernel can count it. */
    static const char *const ev[] = {"PAPI_TOT_INS", "PAPI_TOT_CYC",     "PAPI_L1_DCM",
                                     "PAPI_BR_MSP",  "perf::TASK-CLOCK", "perf::PAGE-FAULTS",
                                     "perf::CYCLES"};
    ntp_ctx *ctx = ntp_ctx_init();
    for (size_t i = 0; ctx && i < sizeof ev / sizeof ev[0]; i++) {
        ntp_papi *pp = NULL;
        char name[64];
        snprintf(name, sizeof name, "papi:%s", ev[i]);
        if (ntp__papi_open(ctx, ev[i], &pp) != NTP_STATUS_OK) {
            add(p, name, "event", "PAPI event", false, ntp_ctx_errmsg(ctx));
            continue;
        }
        bool avail;
        const char *reason;
        ntp__papi_name(pp, 0, &avail, &reason);
        add(p, name, "event", "PAPI event", avail, reason);
        ntp__papi_close(pp);
    }
    ntp_ctx_free(ctx);
}

static void probe_tools(probe *p)
{
    char path[512], ver[256], buf[1024];
    bool perf = ntp__tool_find_perf(path, sizeof path, ver, sizeof ver);
    snprintf(buf, sizeof buf, perf ? "%s (%s)" : "%.0s%s", path, ver);
    add(p, "perf-stat", "tool", "perf stat counting only inside each layer (--control, -D -1)",
        perf, buf);
    add(p, "perf-record", "tool", "perf record sampling only inside each layer; perf.data kept",
        perf, buf);
    bool vg = ntp__tool_find_valgrind(path, sizeof path, ver, sizeof ver);
    bool hdr = ntp__valgrind_headers();
    if (vg && !hdr)
        snprintf(buf, sizeof buf, "built without valgrind's headers (valgrind/callgrind.h)");
    else
        snprintf(buf, sizeof buf, vg ? "%s (%s)" : "%.0s%s", path, ver);
#if defined(__SANITIZE_ADDRESS__) || defined(NTP_CLANG_ASAN)
    vg = false;
    snprintf(buf, sizeof buf,
             "this ntprof is built with AddressSanitizer, which cannot run "
             "under valgrind");
#endif
    add(p, "callgrind", "tool", "simulated instructions per layer (valgrind, deterministic)",
        vg && hdr, buf);
    char cg[1400];
    snprintf(cg, sizeof cg,
             "%s; runs callgrind with --cache-sim=yes --branch-sim=yes (cachegrind "
             "itself cannot be steered per layer before valgrind 3.22)",
             buf);
    add(p, "cachegrind", "tool", "simulated L1/LL cache misses and branch mispredictions per layer",
        vg && hdr, cg);
    add(p, "papi", "tool", "PAPI event sets read between layers (the calling thread)",
        ntp__papi_describe(buf, sizeof buf), buf);
    bool nv = ntp__nvtx_available(buf, sizeof buf);
    add(p, "nvtx", "tool", "NVTX ranges per layer and marker for Nsight Systems and Compute", nv,
        buf);
}

ntp_status ntp_counters_probe(ntp_ctx *ctx, ntp_counter_list **out)
{
    *out = NULL;
    ntp_counter_list *l = calloc(1, sizeof *l);
    if (!l || !(l->store = ntp__store_new())) {
        free(l);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    probe p = {.l = l, .ok = true};
    probe_sets(&p);
    probe_events(&p);
    probe_libraries(&p);
    probe_tools(&p);
    if (!p.ok) {
        ntp_counter_list_free(l);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    *out = l;
    return NTP_STATUS_OK;
}

int ntp_counter_list_count(const ntp_counter_list *l)
{
    return l ? l->n : 0;
}

const ntp_counter_info *ntp_counter_list_item(const ntp_counter_list *l, int i)
{
    return l && i >= 0 && i < l->n ? &l->items[i] : NULL;
}

void ntp_counter_list_free(ntp_counter_list *l)
{
    if (!l)
        return;
    free(l->items);
    ntp__store_free(l->store);
    free(l);
}
