/* In-process counters through perf_event_open (docs/counters.md).
 *
 * Events come by name or in sets; each set is one or more groups, so the
 * ratios a set is for (IPC, miss ratios) come from events that counted over
 * exactly the same time. A group is read with PERF_FORMAT_GROUP and both
 * times, so a group the kernel multiplexed is extrapolated by
 * time_enabled / time_running and flagged.
 *
 * Every thread of the process is counted: a group is opened on each thread
 * that exists when counting starts. The counting pass runs after the timing
 * passes, so a backend's thread pool (oneDNN's OpenMP team) already exists;
 * opening with inherit=1 would only reach threads created later, and the
 * kernels this runs on refuse inherit together with PERF_FORMAT_GROUP
 * before Linux 6.12. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/ctx-impl.h"
#include "counters-impl.h"

/* --- the store ------------------------------------------------------------------ */

ntp_counter_store *ntp__store_new(void)
{
    return calloc(1, sizeof(ntp_counter_store));
}

void *ntp__store_keep(ntp_counter_store *s, void *p)
{
    if (!p)
        return NULL;
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 32;
        void **q = realloc(s->p, (size_t)cap * sizeof *q);
        if (!q) {
            free(p);
            return NULL;
        }
        s->p = q;
        s->cap = cap;
    }
    s->p[s->n++] = p;
    return p;
}

const char *ntp__store_str(ntp_counter_store *s, const char *str)
{
    return str ? ntp__store_keep(s, ntp__strdup(str)) : NULL;
}

const char *ntp__store_printf(ntp_counter_store *s, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return ntp__store_str(s, buf);
}

void ntp__store_free(ntp_counter_store *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        free(s->p[i]);
    free(s->p);
    free(s);
}

ntp_counter_store *ntp__run_store(ntp_run_result *r)
{
    if (!r->owned && !(r->owned = calloc(1, sizeof *r->owned)))
        return NULL;
    if (!r->owned->store)
        r->owned->store = ntp__store_new();
    return r->owned->store;
}

bool ntp__run_counted(const ntp_run_result *r)
{
    return r->owned && r->owned->counted;
}

void ntp__run_owned_free(ntp_run_result *r)
{
    if (!r->owned)
        return;
    ntp__store_free(r->owned->store);
    free(r->owned);
    r->owned = NULL;
}

/* --- event names ----------------------------------------------------------------- */

#define HWC(cache, op, res)                                             \
    (PERF_COUNT_HW_CACHE_##cache | (PERF_COUNT_HW_CACHE_OP_##op << 8) | \
     (PERF_COUNT_HW_CACHE_RESULT_##res << 16))

/* perf's generic names, which every PMU driver maps to its own events. */
static const struct builtin {
    const char *name;
    uint32_t type;
    uint64_t config;
    const char *unit;
    const char *desc;
} builtins[] = {
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "", "core clock cycles"},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, "", "instructions retired"},
    {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, "",
     "branch instructions retired"},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, "", "mispredicted branches"},
    {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, "",
     "last-level cache accesses (the PMU's choice)"},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, "",
     "last-level cache misses (the PMU's choice)"},
    {"stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, "",
     "cycles the front end issued nothing"},
    {"stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND, "",
     "cycles the back end retired nothing"},
    {"ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, "",
     "reference cycles (not scaled by frequency)"},
    {"bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES, "", "bus cycles"},
    {"L1-dcache-loads", PERF_TYPE_HW_CACHE, HWC(L1D, READ, ACCESS), "", "L1 data cache loads"},
    {"L1-dcache-load-misses", PERF_TYPE_HW_CACHE, HWC(L1D, READ, MISS), "",
     "L1 data cache load misses"},
    {"L1-icache-load-misses", PERF_TYPE_HW_CACHE, HWC(L1I, READ, MISS), "",
     "L1 instruction cache misses"},
    {"LLC-loads", PERF_TYPE_HW_CACHE, HWC(LL, READ, ACCESS), "", "last-level cache loads"},
    {"LLC-load-misses", PERF_TYPE_HW_CACHE, HWC(LL, READ, MISS), "",
     "last-level cache load misses"},
    {"dTLB-load-misses", PERF_TYPE_HW_CACHE, HWC(DTLB, READ, MISS), "", "data TLB load misses"},
    {"iTLB-load-misses", PERF_TYPE_HW_CACHE, HWC(ITLB, READ, MISS), "", "instruction TLB misses"},
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, "ns",
     "time on a CPU, all counted threads"},
    {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, "ns",
     "CPU clock, all counted threads"},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, "", "page faults"},
    {"minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, "",
     "page faults served without I/O"},
    {"major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, "",
     "page faults that waited for I/O"},
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, "",
     "context switches"},
    {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, "",
     "moves to another CPU"},
    {"alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS, "",
     "alignment faults"},
    {"emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS, "",
     "emulation faults"},
};
#define N_BUILTINS ((int)(sizeof builtins / sizeof builtins[0]))

int ntp__counters_builtin_count(void)
{
    return N_BUILTINS;
}

const char *ntp__counters_builtin_name(int i, const char **description)
{
    if (i < 0 || i >= N_BUILTINS)
        return NULL;
    if (description)
        *description = builtins[i].desc;
    return builtins[i].name;
}

/* The named sets, as groups of events. "topdown" is resolved from what the
 * PMU names in sysfs (add_topdown). Every software event, of a set or named
 * alone, joins the one "sw" group: software events never multiplex, and
 * one group is one read per row. */
static const char *const g_sw[] = {"task-clock", "page-faults", "context-switches",
                                   "cpu-migrations", NULL};
static const char *const g_basic[] = {"cycles", "instructions", "branches", "branch-misses", NULL};
static const char *const g_stalls[] = {"cycles", "stalled-cycles-frontend",
                                       "stalled-cycles-backend", NULL};
static const char *const g_cache[] = {"instructions",    "cache-references",      "cache-misses",
                                      "L1-dcache-loads", "L1-dcache-load-misses", NULL};
static const char *const g_llc[] = {"instructions", "LLC-loads", "LLC-load-misses", NULL};

bool ntp__have_cpu_pmu(void)
{
    struct stat st;
    return stat("/sys/bus/event_source/devices/cpu", &st) == 0 ||
           stat("/sys/bus/event_source/devices/cpu_core", &st) == 0;
}

int ntp__perf_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd)
{
    return (int)syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, 0UL);
}

static int paranoid_level(void)
{
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
    int v = 2;
    if (f) {
        if (fscanf(f, "%d", &v) != 1)
            v = 2;
        fclose(f);
    }
    return v;
}

void ntp__perf_errno_reason(int err, const struct perf_event_attr *attr, char *buf, size_t len)
{
    bool hw = attr->type != PERF_TYPE_SOFTWARE && attr->type != PERF_TYPE_TRACEPOINT;
    const char *name = err == ENOENT       ? "ENOENT"
                       : err == EOPNOTSUPP ? "EOPNOTSUPP"
                       : err == EINVAL     ? "EINVAL"
                       : err == EACCES     ? "EACCES"
                       : err == EPERM      ? "EPERM"
                       : err == EMFILE     ? "EMFILE"
                       : err == ENODEV     ? "ENODEV"
                                           : "error";
    if (hw &&
        (attr->type == PERF_TYPE_HARDWARE || attr->type == PERF_TYPE_HW_CACHE ||
         attr->type == PERF_TYPE_RAW) &&
        !ntp__have_cpu_pmu())
        snprintf(buf, len,
                 "no hardware PMU: the kernel exposes no CPU performance counters "
                 "(a VM without a virtual PMU; perf stat says <not supported>); "
                 "perf_event_open: %s",
                 name);
    else if (err == ENOENT || err == EOPNOTSUPP)
        snprintf(buf, len, "this CPU's PMU has no such event (perf_event_open: %s)", name);
    else if (err == EACCES || err == EPERM)
        snprintf(buf, len,
                 "not permitted (perf_event_paranoid is %d; counting the kernel or "
                 "other processes needs it lower, or CAP_PERFMON): perf_event_open: %s",
                 paranoid_level(), name);
    else if (err == EMFILE)
        snprintf(buf, len,
                 "too many open files for one counter per thread (perf_event_open: EMFILE)");
    else
        snprintf(buf, len, "perf_event_open: %s (%s)", name, strerror(err));
}

/* --- parsing the list ------------------------------------------------------------------- */

static int find_group(ntp_counters *c, const char *name)
{
    for (int g = 0; g < c->n_grp; g++)
        if (strcmp(c->grp[g].name, name) == 0)
            return g;
    if (c->n_grp >= NTP_MAX_CEVENTS)
        return -1;
    ntp_cgroup *g = &c->grp[c->n_grp];
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    return c->n_grp++;
}

/* Append an event to group `gname` (the group is the set's, so the same
 * event may appear in several groups: each counts on its own). */
static ntp_cevent *add_event(ntp_ctx *ctx, ntp_counters *c, const char *gname, const char *name,
                             ntp_status *st)
{
    if (c->n_ev >= NTP_MAX_CEVENTS) {
        *st = ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_run_opts.counters",
                             ": at most %d events at once", NTP_MAX_CEVENTS);
        return NULL;
    }
    int g = find_group(c, gname);
    ntp_cevent *e = &c->ev[c->n_ev];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    e->scale = 1;
    e->group = g;
    e->slot = -1;
    e->attr.size = sizeof e->attr;
    if (g >= 0) {
        ntp_cgroup *G = &c->grp[g];
        G->ev[G->n++] = c->n_ev;
    }
    c->n_ev++;
    return e;
}

static const struct builtin *builtin_find(const char *name)
{
    for (int i = 0; i < N_BUILTINS; i++)
        if (strcmp(builtins[i].name, name) == 0)
            return &builtins[i];
    return NULL;
}

static ntp_status add_builtin(ntp_ctx *ctx, ntp_counters *c, const char *gname, const char *name)
{
    const struct builtin *b = builtin_find(name);
    ntp_status st = NTP_STATUS_OK;
    ntp_cevent *e = add_event(ctx, c, gname, name, &st);
    if (!e)
        return st;
    e->attr.type = b->type;
    e->attr.config = b->config;
    snprintf(e->unit, sizeof e->unit, "%s", b->unit);
    return NTP_STATUS_OK;
}

static ntp_status add_set(ntp_ctx *ctx, ntp_counters *c, const char *gname,
                          const char *const *names)
{
    ntp_status st;
    for (int i = 0; names[i]; i++)
        if ((st = add_builtin(ctx, c, gname, names[i])))
            return st;
    return NTP_STATUS_OK;
}

/* An event that cannot be counted here, with the reason (it is reported
 * n/a; the run goes on). */
static ntp_status add_na(ntp_ctx *ctx, ntp_counters *c, const char *name, const char *reason)
{
    ntp_status st = NTP_STATUS_OK;
    ntp_cevent *e = add_event(ctx, c, "n/a", name, &st);
    if (!e)
        return st;
    c->grp[e->group].n--;
    e->group = -1;
    snprintf(e->reason, sizeof e->reason, "%s", reason);
    return NTP_STATUS_OK;
}

static ntp_status add_sysfs(ntp_ctx *ctx, ntp_counters *c, const char *gname, const char *shown,
                            const char *spec)
{
    struct perf_event_attr a;
    char unit[16] = "", reason[NTP_CREASON];
    double scale = 1;
    ntp_status st = ntp__sysfs_encode(spec, &a, unit, sizeof unit, &scale, reason, sizeof reason);
    if (st == NTP_STATUS_PARSE_ERROR)
        return ntp__opt_error(ctx, st, "ntp_run_opts.counters", ": %s", reason);
    if (st)
        return add_na(ctx, c, shown, reason);
    ntp_cevent *e = add_event(ctx, c, gname, shown, &st);
    if (!e)
        return st;
    e->attr = a;
    e->scale = scale;
    snprintf(e->unit, sizeof e->unit, "%s", unit);
    return NTP_STATUS_OK;
}

/* The top-down level-1 events where the PMU names them (Intel): Ice Lake
 * and later count slots and the four level-1 metrics directly (and, from
 * Sapphire Rapids, the memory part of back-end bound); Skylake-era cores
 * name the slot counts perf's formulas use. */
static ntp_status add_topdown(ntp_ctx *ctx, ntp_counters *c)
{
    const char *pmu = ntp__sysfs_has_event("cpu_core", "slots") ? "cpu_core" : "cpu";
    static const char *const icl[] = {
        "slots", "topdown-retiring", "topdown-bad-spec", "topdown-fe-bound", "topdown-be-bound",
        NULL};
    static const char *const skl[] = {"topdown-total-slots",      "topdown-slots-issued",
                                      "topdown-slots-retired",    "topdown-fetch-bubbles",
                                      "topdown-recovery-bubbles", NULL};
    const char *const *set = NULL;
    if (ntp__sysfs_has_event(pmu, "slots") && ntp__sysfs_has_event(pmu, "topdown-retiring"))
        set = icl;
    else if (ntp__sysfs_has_event(pmu, "topdown-total-slots"))
        set = skl;
    ntp_status st;
    char spec[128];
    if (set) {
        for (int i = 0; set[i]; i++) {
            snprintf(spec, sizeof spec, "%s/%s/", pmu, set[i]);
            if ((st = add_sysfs(ctx, c, "topdown", set[i], spec)))
                return st;
        }
        if (set == icl && ntp__sysfs_has_event(pmu, "topdown-mem-bound")) {
            snprintf(spec, sizeof spec, "%s/topdown-mem-bound/", pmu);
            return add_sysfs(ctx, c, "topdown", "topdown-mem-bound", spec);
        }
        return NTP_STATUS_OK;
    }
    const char *why =
        ntp__have_cpu_pmu()
            ? "this CPU's PMU names no top-down events for perf (Intel cores name slots and "
              "topdown-* in /sys/bus/event_source/devices/cpu/events; other CPUs give top-down "
              "only as perf metrics)"
            : "no hardware PMU: the kernel exposes no CPU performance counters (a VM without a "
              "virtual PMU), so there are no top-down slots to count";
    for (int i = 1; icl[i]; i++)
        if ((st = add_na(ctx, c, icl[i], why)))
            return st;
    return NTP_STATUS_OK;
}

static const char *const set_names[] = {"sw", "basic", "cache", "topdown", "all"};

static ntp_status add_token(ntp_ctx *ctx, ntp_counters *c, const char *tok)
{
    ntp_status st;
    bool all = strcmp(tok, "all") == 0;
    if (all || strcmp(tok, "sw") == 0)
        if ((st = add_set(ctx, c, "sw", g_sw)))
            return st;
    if (all || strcmp(tok, "basic") == 0)
        if ((st = add_set(ctx, c, "basic", g_basic)) || (st = add_set(ctx, c, "stalls", g_stalls)))
            return st;
    if (all || strcmp(tok, "cache") == 0)
        if ((st = add_set(ctx, c, "cache", g_cache)) || (st = add_set(ctx, c, "llc", g_llc)))
            return st;
    if (all || strcmp(tok, "topdown") == 0)
        if ((st = add_topdown(ctx, c)))
            return st;
    for (size_t i = 0; i < sizeof set_names / sizeof set_names[0]; i++)
        if (strcmp(tok, set_names[i]) == 0)
            return NTP_STATUS_OK;
    const struct builtin *b = builtin_find(tok);
    if (b)
        return add_builtin(ctx, c, b->type == PERF_TYPE_SOFTWARE ? "sw" : "user", tok);
    if (strchr(tok, '/')) {
        /* One group per PMU: the kernel refuses groups that span PMUs. */
        char gname[24];
        size_t plen = strcspn(tok, "/");
        snprintf(gname, sizeof gname, "pmu:%.*s", (int)(plen < 19 ? plen : 19), tok);
        return add_sysfs(ctx, c, gname, tok, tok);
    }
    if (strncmp(tok, "topdown-", 8) == 0 || strcmp(tok, "slots") == 0) {
        char spec[128];
        const char *pmu = ntp__sysfs_has_event("cpu_core", tok) ? "cpu_core" : "cpu";
        snprintf(spec, sizeof spec, "%s/%s/", pmu, tok);
        return add_sysfs(ctx, c, "topdown", tok, spec);
    }
    struct perf_event_attr a;
    char reason[NTP_CREASON];
    st = ntp__pfm_encode(tok, &a, reason, sizeof reason);
    if (st == NTP_STATUS_OK) {
        ntp_cevent *e = add_event(ctx, c, a.type == PERF_TYPE_SOFTWARE ? "sw" : "user", tok, &st);
        if (!e)
            return st;
        e->attr = a;
        if (a.type == PERF_TYPE_SOFTWARE &&
            (a.config == PERF_COUNT_SW_TASK_CLOCK || a.config == PERF_COUNT_SW_CPU_CLOCK))
            snprintf(e->unit, sizeof e->unit, "ns");
        return NTP_STATUS_OK;
    }
    if (st == NTP_STATUS_UNSUPPORTED && strstr(tok, "::"))
        return add_na(ctx, c, tok, reason);
    const char *cand[N_BUILTINS + 5];
    int n = 0;
    for (size_t i = 0; i < sizeof set_names / sizeof set_names[0]; i++)
        cand[n++] = set_names[i];
    for (int i = 0; i < N_BUILTINS; i++)
        cand[n++] = builtins[i].name;
    const char *near = ntp__nearest(tok, cand, n);
    return ntp__opt_error(ctx, NTP_STATUS_UNKNOWN_NAME, "ntp_run_opts.counters",
                          ": unknown event '%s'%s%s%s (sets: sw, basic, cache, topdown, all; "
                          "`ntprof counters` lists the events; %s)",
                          tok, near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "",
                          reason);
}

ntp_status ntp__counters_parse(ntp_ctx *ctx, const char *list, ntp_counters **out)
{
    *out = NULL;
    ntp_counters *c = calloc(1, sizeof *c);
    if (!c)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    ntp_status st = NTP_STATUS_OK;
    const char *p = list ? list : "";
    while (*p && !st) {
        /* A comma inside "pmu/term=v,term=v/" does not end the event. */
        char tok[256];
        size_t n = 0;
        int slashes = 0;
        while (*p && (*p != ',' || slashes == 1) && n + 1 < sizeof tok) {
            slashes += *p == '/';
            tok[n++] = *p++;
        }
        tok[n] = 0;
        if (*p == ',')
            p++;
        while (n > 0 && isspace((unsigned char)tok[n - 1]))
            tok[--n] = 0;
        char *t = tok;
        while (isspace((unsigned char)*t))
            t++;
        if (!*t)
            st = ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_run_opts.counters",
                                ": empty name in '%s' (a comma-separated list such as sw,basic)",
                                list);
        else
            st = add_token(ctx, c, t);
    }
    if (!st && c->n_ev == 0)
        st = ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_run_opts.counters",
                            ": no events in '%s'", list);
    if (st) {
        ntp__counters_free(c);
        return st;
    }
    *out = c;
    return NTP_STATUS_OK;
}

/* --- opening and reading -------------------------------------------------------------- */

static int list_threads(pid_t **out)
{
    *out = NULL;
    DIR *d = opendir("/proc/self/task");
    if (!d) {
        pid_t *t = malloc(sizeof *t);
        if (!t)
            return -1;
        t[0] = (pid_t)syscall(SYS_gettid);
        *out = t;
        return 1;
    }
    int n = 0, cap = 16;
    pid_t *t = malloc((size_t)cap * sizeof *t);
    struct dirent *de;
    while (t && (de = readdir(d))) {
        if (!isdigit((unsigned char)de->d_name[0]))
            continue;
        if (n == cap) {
            pid_t *q = realloc(t, (size_t)(cap *= 2) * sizeof *q);
            if (!q) {
                free(t);
                t = NULL;
                break;
            }
            t = q;
        }
        t[n++] = (pid_t)atoi(de->d_name);
    }
    closedir(d);
    if (!t)
        return -1;
    *out = t;
    return n;
}

static int open_one(ntp_counters *c, ntp_cevent *e, pid_t tid, int group_fd, bool leader)
{
    struct perf_event_attr a = e->attr;
    a.size = sizeof a;
    a.read_format =
        PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    a.disabled = leader;
    a.inherit = 0;
    a.exclude_hv = 1;
    a.exclude_kernel = c->user_only;
    int fd = ntp__perf_open(&a, tid, -1, group_fd);
    if (fd < 0 && (errno == EACCES || errno == EPERM) && !c->user_only) {
        /* perf_event_paranoid 2 allows user-space counting only. */
        c->user_only = true;
        a.exclude_kernel = 1;
        fd = ntp__perf_open(&a, tid, -1, group_fd);
    }
    return fd;
}

ntp_status ntp__counters_open(ntp_ctx *ctx, ntp_counters *c)
{
    c->n_thr = list_threads(&c->tid);
    if (c->n_thr < 0) {
        c->n_thr = 0;
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    c->fd = malloc(((size_t)c->n_thr * (size_t)c->n_ev + 1) * sizeof *c->fd);
    if (!c->fd)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < c->n_thr * c->n_ev; i++)
        c->fd[i] = -1;
    /* Membership is settled on the first thread: an event the kernel
     * refuses there is n/a everywhere. The other threads open the same
     * groups; a thread that has exited meanwhile is skipped. */
    for (int g = 0; g < c->n_grp; g++) {
        ntp_cgroup *G = &c->grp[g];
        int kept = 0, leader = -1;
        for (int i = 0; i < G->n; i++) {
            ntp_cevent *e = &c->ev[G->ev[i]];
            int fd = open_one(c, e, c->tid[0], leader, leader < 0);
            if (fd < 0) {
                ntp__perf_errno_reason(errno, &e->attr, e->reason, sizeof e->reason);
                e->group = -1;
                continue;
            }
            if (leader < 0)
                leader = fd;
            c->fd[G->ev[i]] = fd;
            e->slot = kept;
            G->ev[kept++] = G->ev[i];
        }
        G->n = kept;
    }
    for (int t = 1; t < c->n_thr; t++) {
        bool missed = false;
        for (int g = 0; g < c->n_grp; g++) {
            ntp_cgroup *G = &c->grp[g];
            int leader = -1;
            for (int i = 0; i < G->n; i++) {
                int *fd = &c->fd[t * c->n_ev + G->ev[i]];
                *fd = open_one(c, &c->ev[G->ev[i]], c->tid[t], leader, leader < 0);
                if (*fd < 0) {
                    missed = true;
                    for (int j = 0; j < i; j++) {
                        close(c->fd[t * c->n_ev + G->ev[j]]);
                        c->fd[t * c->n_ev + G->ev[j]] = -1;
                    }
                    break;
                }
                if (leader < 0)
                    leader = *fd;
            }
        }
        c->threads_missed += missed;
    }
    /* One snapshot: per thread, per group: enabled, running, values. */
    c->snap_len = 0;
    size_t maxg = 0;
    for (int g = 0; g < c->n_grp; g++) {
        c->snap_len += 2 + (size_t)c->grp[g].n;
        if ((size_t)c->grp[g].n > maxg)
            maxg = (size_t)c->grp[g].n;
    }
    c->snap_len *= (size_t)c->n_thr;
    c->buf = malloc((3 + maxg) * sizeof *c->buf);
    if (!c->buf)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int t = 0; t < c->n_thr; t++)
        for (int g = 0; g < c->n_grp; g++)
            if (c->grp[g].n > 0) {
                int fd = c->fd[t * c->n_ev + c->grp[g].ev[0]];
                if (fd >= 0 && ioctl(fd, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP) == 0)
                    c->any_open = true;
            }
    return NTP_STATUS_OK;
}

bool ntp__counters_read(ntp_counters *c, uint64_t *snap)
{
    uint64_t *s = snap;
    bool ok = true;
    for (int t = 0; t < c->n_thr; t++)
        for (int g = 0; g < c->n_grp; g++) {
            ntp_cgroup *G = &c->grp[g];
            if (G->n == 0)
                continue;
            int fd = c->fd[t * c->n_ev + G->ev[0]];
            size_t want = (3 + (size_t)G->n) * sizeof *c->buf;
            if (fd >= 0 && read(fd, c->buf, want) == (ssize_t)want && c->buf[0] == (uint64_t)G->n) {
                s[0] = c->buf[1];
                s[1] = c->buf[2];
                memcpy(s + 2, c->buf + 3, (size_t)G->n * sizeof *s);
            } else {
                /* A thread that exited keeps its last values' absence:
                 * zeros, so its deltas are zero too. */
                ok = ok && fd < 0;
                memset(s, 0, (2 + (size_t)G->n) * sizeof *s);
            }
            s += 2 + G->n;
        }
    return ok;
}

void ntp__counters_add(const ntp_counters *c, const uint64_t *a, const uint64_t *b, ntp_cacc *acc)
{
    size_t off = 0;
    for (int t = 0; t < c->n_thr; t++)
        for (int g = 0; g < c->n_grp; g++) {
            const ntp_cgroup *G = &c->grp[g];
            if (G->n == 0)
                continue;
            uint64_t de = b[off] - a[off], dr = b[off + 1] - a[off + 1];
            for (int i = 0; i < G->n; i++) {
                uint64_t dv = b[off + 2 + i] - a[off + 2 + i];
                ntp_cacc *x = &acc[G->ev[i]];
                x->raw += (double)dv;
                x->enabled += de;
                x->running += dr;
                /* An interval the group never ran in contributes nothing
                 * it could be scaled from. */
                if (dr > 0)
                    x->value += (double)dv * ((double)de / (double)dr);
            }
            off += 2 + (size_t)G->n;
        }
}

void ntp__counters_free(ntp_counters *c)
{
    if (!c)
        return;
    if (c->fd)
        for (int i = 0; i < c->n_thr * c->n_ev; i++)
            if (c->fd[i] >= 0)
                close(c->fd[i]);
    free(c->fd);
    free(c->tid);
    free(c->buf);
    free(c);
}

/* --- values and derived metrics ----------------------------------------------------------- */

bool ntp__counters_below_overhead(const ntp_cacc *a)
{
    /* Whatever the reads themselves count is subtracted; what is left is
     * trusted only when it is at least as large as what was subtracted (a
     * count of zero stays an exact zero). */
    return a->overhead > 0 && a->raw > 0 && a->value < a->overhead;
}

void ntp__counters_amount(double v, const char *unit, char *buf, size_t len)
{
    if (unit && strcmp(unit, "ns") == 0)
        snprintf(buf, len,
                 v >= 1e6   ? "%.3g ms"
                 : v >= 1e3 ? "%.3g \xC2\xB5s"
                            : "%.3g ns",
                 v >= 1e6   ? v / 1e6
                 : v >= 1e3 ? v / 1e3
                            : v);
    else
        snprintf(buf, len, "%.3g%s%s", v, unit && *unit ? " " : "", unit ? unit : "");
}

static void set_value(ntp_counter_value *v, const ntp_cevent *e, const ntp_cacc *a, int iters,
                      ntp_counter_store *s)
{
    memset(v, 0, sizeof *v);
    v->name = ntp__store_str(s, e->name);
    v->source = "perf_event";
    v->unit = ntp__store_str(s, e->unit);
    if (e->group < 0) {
        v->reason = ntp__store_str(s, e->reason);
        return;
    }
    if (a->running == 0) {
        v->reason = a->enabled == 0
                        ? "not counted: no counted thread ran while this row ran"
                        : "never scheduled: the PMU could not fit the group on its counters";
        return;
    }
    if (ntp__counters_below_overhead(a)) {
        char amount[48];
        ntp__counters_amount(a->overhead * e->scale / (iters > 0 ? iters : 1), e->unit, amount,
                             sizeof amount);
        v->reason = ntp__store_printf(s, "below the counting overhead of %s", amount);
        return;
    }
    v->available = true;
    v->value = a->value * e->scale / (iters > 0 ? iters : 1);
    v->running = a->enabled > 0 ? (double)a->running / (double)a->enabled : 1;
    v->scaled = a->running < a->enabled;
}

/* Ratios whose two events a set counts in one group. */
static const struct ratio {
    const char *name, *num, *den;
    double mul;
} ratios[] = {
    {"ipc", "instructions", "cycles", 1},
    {"branch_miss_ratio", "branch-misses", "branches", 1},
    {"branch_mpki", "branch-misses", "instructions", 1000},
    {"cache_miss_ratio", "cache-misses", "cache-references", 1},
    {"cache_mpki", "cache-misses", "instructions", 1000},
    {"l1d_load_miss_ratio", "L1-dcache-load-misses", "L1-dcache-loads", 1},
    {"l1d_mpki", "L1-dcache-load-misses", "instructions", 1000},
    {"llc_load_miss_ratio", "LLC-load-misses", "LLC-loads", 1},
    {"llc_mpki", "LLC-load-misses", "instructions", 1000},
    {"frontend_stall_ratio", "stalled-cycles-frontend", "cycles", 1},
    {"backend_stall_ratio", "stalled-cycles-backend", "cycles", 1},
};

static int find_value(const ntp_counter_value *v, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!v[i].derived && strcmp(v[i].name, name) == 0)
            return i;
    return -1;
}

static void put_derived(ntp_counter_value *v, const char *name, double value, const char *reason,
                        bool scaled, ntp_counter_store *s)
{
    memset(v, 0, sizeof *v);
    v->name = ntp__store_str(s, name);
    v->source = "derived";
    v->unit = "";
    v->derived = true;
    if (reason) {
        v->reason = ntp__store_str(s, reason);
        return;
    }
    v->available = isfinite(value);
    v->value = isfinite(value) ? value : 0;
    v->running = 1;
    v->scaled = scaled;
    if (!v->available)
        v->reason = "division by zero (the denominator counted nothing)";
}

/* A ratio from prefix-named values already in out: "needs" names what is
 * missing when one side is n/a. */
static int derive_ratio(ntp_counter_store *s, ntp_counter_value *out, int n, int cap,
                        const char *prefix, const char *name, const char *num, const char *den,
                        double mul)
{
    char a[NTP_CNAME + 32], b[NTP_CNAME + 32], m[NTP_CNAME + 32];
    snprintf(a, sizeof a, "%s%s", prefix, num);
    snprintf(b, sizeof b, "%s%s", prefix, den);
    snprintf(m, sizeof m, "%s%s", prefix, name);
    int i = find_value(out, n, a), j = find_value(out, n, b);
    /* A metric is about its numerator: without it, nobody asked. */
    if (i < 0 || n >= cap || find_value(out, n, m) >= 0)
        return n;
    for (int k = 0; k < n; k++)
        if (out[k].derived && strcmp(out[k].name, m) == 0)
            return n;
    char why[NTP_CREASON + 64];
    if (i < 0 || j < 0 || !out[i].available || !out[j].available) {
        int bad = i < 0 || !out[i].available ? i : j;
        snprintf(why, sizeof why, "needs %s and %s; %s: %s", num, den, bad == i ? num : den,
                 bad >= 0 && out[bad].reason ? out[bad].reason : "not counted");
        put_derived(&out[n], m, 0, why, false, s);
    } else {
        double d = out[j].value;
        put_derived(&out[n], m, d != 0 ? mul * out[i].value / d : NAN, NULL,
                    out[i].scaled || out[j].scaled, s);
    }
    return n + 1;
}

static double val_or(const ntp_counter_value *v, int n, const char *name, bool *ok)
{
    int i = find_value(v, n, name);
    if (i < 0 || !v[i].available) {
        *ok = false;
        return 0;
    }
    return v[i].value;
}

/* Top-down level 1 from the events add_topdown chose. */
static int derive_topdown(ntp_counter_store *s, ntp_counter_value *out, int n, int cap)
{
    static const char *const names[] = {"frontend_bound", "bad_speculation", "backend_bound",
                                        "retiring",       "backend_memory",  "backend_core"};
    double f[6];
    bool ok = true, mem = false;
    const char *why = NULL;
    if (find_value(out, n, "topdown-retiring") >= 0) {
        double ret = val_or(out, n, "topdown-retiring", &ok),
               bs = val_or(out, n, "topdown-bad-spec", &ok);
        double fe = val_or(out, n, "topdown-fe-bound", &ok),
               be = val_or(out, n, "topdown-be-bound", &ok);
        double sum = ret + bs + fe + be;
        if (ok && sum > 0) {
            f[0] = fe / sum, f[1] = bs / sum, f[2] = be / sum, f[3] = ret / sum;
            bool ok2 = true;
            double mb = val_or(out, n, "topdown-mem-bound", &ok2);
            if (find_value(out, n, "topdown-mem-bound") >= 0 && ok2) {
                mem = true;
                f[4] = mb / sum;
                f[5] = f[2] - f[4];
            }
        } else {
            int i = find_value(out, n, "topdown-retiring");
            why = !out[i].available ? out[i].reason : "the top-down events counted nothing";
        }
    } else if (find_value(out, n, "topdown-total-slots") >= 0) {
        double tot = val_or(out, n, "topdown-total-slots", &ok);
        double iss = val_or(out, n, "topdown-slots-issued", &ok);
        double ret = val_or(out, n, "topdown-slots-retired", &ok);
        double fb = val_or(out, n, "topdown-fetch-bubbles", &ok);
        double rb = val_or(out, n, "topdown-recovery-bubbles", &ok);
        if (ok && tot > 0) {
            f[0] = fb / tot, f[1] = (iss - ret + rb) / tot, f[3] = ret / tot;
            f[2] = 1 - f[0] - f[1] - f[3];
        } else {
            int i = find_value(out, n, "topdown-total-slots");
            why = !out[i].available ? out[i].reason : "the top-down events counted nothing";
        }
    } else {
        return n;
    }
    for (int k = 0; k < 6 && n < cap; k++) {
        if (k >= 4 && !mem) {
            put_derived(&out[n++], names[k], 0,
                        why ? why
                            : "the split of back-end bound into memory and core needs "
                              "topdown-mem-bound (Sapphire Rapids and later)",
                        false, s);
            continue;
        }
        put_derived(&out[n++], names[k], why ? 0 : f[k], why, false, s);
    }
    return n;
}

/* Simulated metrics of callgrind / cachegrind, from the event names
 * valgrind uses (Ir, Dr, Dw, D1mr, D1mw, DLmr, DLmw, Bc, Bcm, Bi, Bim). */
static int derive_sim(ntp_counter_store *s, ntp_counter_value *out, int n, int cap, const char *p)
{
    char nm[64];
    snprintf(nm, sizeof nm, "%sIr", p);
    int ir = find_value(out, n, nm);
    if (ir < 0 || !out[ir].available)
        return n;
    bool ok = true, okb = true;
    double v[9];
    static const char *const ev[9] = {"Dr",   "Dw", "D1mr", "D1mw", "DLmr",
                                      "DLmw", "Bc", "Bcm",  "Bim"};
    for (int i = 0; i < 9; i++) {
        snprintf(nm, sizeof nm, "%s%s", p, ev[i]);
        v[i] = val_or(out, n, nm, i < 6 ? &ok : &okb);
    }
    snprintf(nm, sizeof nm, "%sBi", p);
    double bi = val_or(out, n, nm, &okb);
    double irv = out[ir].value, d = v[0] + v[1];
    if (ok && n + 4 <= cap) {
        snprintf(nm, sizeof nm, "%sd1_miss_ratio", p);
        put_derived(&out[n++], nm, d > 0 ? (v[2] + v[3]) / d : NAN, NULL, false, s);
        snprintf(nm, sizeof nm, "%sll_miss_ratio", p);
        put_derived(&out[n++], nm, d > 0 ? (v[4] + v[5]) / d : NAN, NULL, false, s);
        snprintf(nm, sizeof nm, "%sd1_mpki", p);
        put_derived(&out[n++], nm, irv > 0 ? 1000 * (v[2] + v[3]) / irv : NAN, NULL, false, s);
        snprintf(nm, sizeof nm, "%sll_mpki", p);
        put_derived(&out[n++], nm, irv > 0 ? 1000 * (v[4] + v[5]) / irv : NAN, NULL, false, s);
    }
    if (okb && n + 2 <= cap) {
        snprintf(nm, sizeof nm, "%sbranch_mispredict_ratio", p);
        put_derived(&out[n++], nm, v[6] + bi > 0 ? (v[7] + v[8]) / (v[6] + bi) : NAN, NULL, false,
                    s);
        snprintf(nm, sizeof nm, "%sbranch_mpki", p);
        put_derived(&out[n++], nm, irv > 0 ? 1000 * (v[7] + v[8]) / irv : NAN, NULL, false, s);
    }
    return n;
}

int ntp__counters_derive(ntp_counter_store *s, ntp_counter_value *out, int n, int cap)
{
    static const char *const prefixes[] = {"", "perf-stat:", "papi:"};
    for (size_t p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++)
        for (size_t r = 0; r < sizeof ratios / sizeof ratios[0]; r++)
            n = derive_ratio(s, out, n, cap, prefixes[p], ratios[r].name, ratios[r].num,
                             ratios[r].den, ratios[r].mul);
    n = derive_topdown(s, out, n, cap);
    n = derive_sim(s, out, n, cap, "callgrind:");
    n = derive_sim(s, out, n, cap, "cachegrind:");
    return n;
}

int ntp__counters_values(const ntp_counters *c, const ntp_cacc *acc, int iterations,
                         ntp_counter_store *s, ntp_counter_value *out, int cap)
{
    int n = 0;
    /* Each name once: its first occurrence that counted, else its first. */
    for (int e = 0; e < c->n_ev && n < cap; e++) {
        int prev = find_value(out, n, c->ev[e].name);
        ntp_counter_value v;
        set_value(&v, &c->ev[e], &acc[e], iterations, s);
        if (prev < 0)
            out[n++] = v;
        else if (!out[prev].available && v.available)
            out[prev] = v;
    }
    /* Ratios from one group where a group holds both events, so both
     * counted over the same time; derive() fills the rest. */
    for (size_t r = 0; r < sizeof ratios / sizeof ratios[0] && n < cap; r++)
        for (int g = 0; g < c->n_grp; g++) {
            const ntp_cgroup *G = &c->grp[g];
            int a = -1, b = -1;
            for (int i = 0; i < G->n; i++) {
                if (strcmp(c->ev[G->ev[i]].name, ratios[r].num) == 0)
                    a = G->ev[i];
                if (strcmp(c->ev[G->ev[i]].name, ratios[r].den) == 0)
                    b = G->ev[i];
            }
            if (a < 0 || b < 0 || acc[a].running == 0 || acc[b].running == 0 ||
                ntp__counters_below_overhead(&acc[a]) || ntp__counters_below_overhead(&acc[b]))
                continue;
            double d = acc[b].value * c->ev[b].scale;
            put_derived(&out[n++], ratios[r].name,
                        d != 0 ? ratios[r].mul * acc[a].value * c->ev[a].scale / d : NAN, NULL,
                        acc[a].running < acc[a].enabled, s);
            break;
        }
    return ntp__counters_derive(s, out, n, cap);
}
