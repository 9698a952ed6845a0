/* Counters and external profilers, private to libntprof (docs/counters.md).
 *
 *   counters.c         events by name and set, perf_event_open groups on
 *                      every thread, reads, multiplexing scale, derived
 *                      metrics
 *   counters-sysfs.c   events a kernel PMU names in sysfs ("msr/tsc/",
 *                      Intel's topdown-* events)
 *   counters-probe.c   `ntprof counters`: what this machine can count
 *   pfm.c | pfm-none.c       libpfm4 event names, or their absence
 *   papi.c | papi-none.c     PAPI event sets, or their absence
 *   tools.c            launching perf and valgrind, the control fifos, and
 *                      reading what they wrote
 *   tools-valgrind.c | tools-valgrind-none.c   callgrind client requests
 *   tools-nvtx.c | tools-nvtx-none.c           NVTX ranges for Nsight
 * The build picks one file of each pair (cmake/ntp-counters.cmake). The
 * counting pass itself, which runs the engine's rows between reads, is in
 * src/exec/instrument.c. */
#ifndef NTPROF_COUNTERS_IMPL_H
#define NTPROF_COUNTERS_IMPL_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "core/ctx-impl.h"
#include "ntprof/counters.h"
#include "ntprof/run.h"
#include "measure/run-result-impl.h"

/* --- strings and blocks a result owns ------------------------------------- */
/* A result's counters, names and reasons are allocated here and freed with
 * the result, so the public structs can hold plain const char pointers. */
typedef struct ntp_counter_store {
    void **p;
    int n, cap;
} ntp_counter_store;

ntp_counter_store *ntp__store_new(void);
/* Keep p (freed with the store); returns p, or NULL (and frees p) when the
 * store cannot grow. */
void *ntp__store_keep(ntp_counter_store *s, void *p);
/* A copy of str kept in the store; NULL for NULL or on allocation failure. */
const char *ntp__store_str(ntp_counter_store *s, const char *str);
const char *ntp__store_printf(ntp_counter_store *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void ntp__store_free(ntp_counter_store *s);

/* What a run result owns (ntp_run_result.owned, src/measure/run-result-impl.h). */
struct ntp_run_owned {
    ntp_counter_store *store; /* strings and blocks the result owns */
    bool counted;             /* a counting pass ran: the report has its section */
};
/* r's store, made on first use; NULL when out of memory. */
ntp_counter_store *ntp__run_store(ntp_run_result *r);
/* Did a counting pass (counters or a tool) run for r? */
bool ntp__run_counted(const ntp_run_result *r);
/* Free what r owns (not r). */
void ntp__run_owned_free(ntp_run_result *r);

/* --- events ------------------------------------------------------------------- */
#define NTP_MAX_CEVENTS 64
#define NTP_CNAME 96
#define NTP_CREASON 320

typedef struct ntp_cevent {
    char name[NTP_CNAME]; /* as reported: "cycles", "msr/tsc/", "perf::PAGE-FAULTS" */
    char unit[16];        /* "ns" for clocks, a sysfs unit, "" for counts */
    double scale;         /* sysfs .scale, 1 otherwise */
    struct perf_event_attr attr;
    int group;                /* its group; -1 when it cannot be counted */
    int slot;                 /* position in its group's read, leader 0 */
    char reason[NTP_CREASON]; /* why it cannot be counted */
} ntp_cevent;

/* Events counted together, so ratios between them are consistent. */
typedef struct ntp_cgroup {
    char name[24];           /* "sw", "basic", "cache", "topdown", "user" */
    int n;                   /* events opened in the group */
    int ev[NTP_MAX_CEVENTS]; /* event indices in read order, leader first */
} ntp_cgroup;

typedef struct ntp_counters {
    int n_ev;
    ntp_cevent ev[NTP_MAX_CEVENTS];
    int n_grp;
    ntp_cgroup grp[NTP_MAX_CEVENTS];
    /* Open counters: one group per thread of the process. */
    int n_thr;
    pid_t *tid;
    int *fd;         /* fd[t * n_ev + e], -1 when not open */
    size_t snap_len; /* uint64s in one snapshot */
    uint64_t *buf;   /* read buffer */
    bool user_only;  /* the kernel was excluded (perf_event_paranoid) */
    bool any_open;
    int threads_missed; /* threads whose groups could not be opened */
} ntp_counters;

/* Accumulated over intervals: the sum of scaled values, and the enabled
 * and running times. */
typedef struct ntp_cacc {
    double value;
    double raw;
    uint64_t enabled, running;
    /* The counting overhead already subtracted from value (what an empty
     * region counts, summed like value); a value below it is n/a. */
    double overhead;
} ntp_cacc;

/* Resolve a list ("sw,cache,msr/tsc/,perf::PAGE-FAULTS") into events and
 * groups. Unknown names fail with UNKNOWN_NAME and a suggestion; events
 * that exist but cannot be counted here are kept with a reason. Nothing is
 * opened yet. */
ntp_status ntp__counters_parse(ntp_ctx *ctx, const char *list, ntp_counters **out);
/* Open every group on every thread of this process (per thread, because a
 * backend's thread pool already exists; docs/counters.md). Events the
 * kernel refuses get a reason; the others count from now on. */
ntp_status ntp__counters_open(ntp_ctx *ctx, ntp_counters *c);
/* Read every open group of every thread into snap (snap_len values). */
bool ntp__counters_read(ntp_counters *c, uint64_t *snap);
/* acc[e] += what event e counted between snapshots a and b, each thread's
 * share scaled by its enabled / running time. */
void ntp__counters_add(const ntp_counters *c, const uint64_t *a, const uint64_t *b, ntp_cacc *acc);
void ntp__counters_free(ntp_counters *c);
/* Is acc's value, its counting overhead subtracted, smaller than that
 * overhead (so mostly the reads' own cost, reported n/a)? */
bool ntp__counters_below_overhead(const ntp_cacc *a);
/* "3.4 µs" for a clock in ns, "1.2e+03" for a count: for messages. */
void ntp__counters_amount(double v, const char *unit, char *buf, size_t len);
/* Fill the reported values of one row from acc (divided by iterations):
 * one value per event name (its first available occurrence), then derived
 * metrics. Returns the number written (at most cap). */
int ntp__counters_values(const ntp_counters *c, const ntp_cacc *acc, int iterations,
                         ntp_counter_store *s, ntp_counter_value *out, int cap);
/* Why a perf_event_open failed with errno err for attr, in words. */
void ntp__perf_errno_reason(int err, const struct perf_event_attr *attr, char *buf, size_t len);
/* Does the kernel expose a CPU PMU (/sys/bus/event_source/devices/cpu)? */
bool ntp__have_cpu_pmu(void);
/* The built-in perf event names, for probing and suggestions. */
int ntp__counters_builtin_count(void);
const char *ntp__counters_builtin_name(int i, const char **description);
/* perf_event_open, which glibc does not wrap. */
int ntp__perf_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd);

/* Derived metrics from values already in out[0..n): ratios, MPKI, top-down
 * fractions, the simulated ones of callgrind. Appends and returns the new n. */
int ntp__counters_derive(ntp_counter_store *s, ntp_counter_value *out, int n, int cap);

/* --- sysfs PMU events (counters-sysfs.c) ------------------------------------ */
/* Encode "pmu/event/" or "pmu/term=v,term=v/" from
 * /sys/bus/event_source/devices. Returns OK, UNKNOWN_NAME (no such PMU or
 * event; reason says which) or PARSE_ERROR. */
ntp_status ntp__sysfs_encode(const char *spec, struct perf_event_attr *attr, char *unit,
                             size_t unit_len, double *scale, char *reason, size_t len);
/* Does PMU `pmu` name event `event` in sysfs? */
bool ntp__sysfs_has_event(const char *pmu, const char *event);

/* --- libpfm4 (pfm.c or pfm-none.c) ------------------------------------------- */
/* Encode a libpfm4 event name. OK; UNKNOWN_NAME when libpfm does not know
 * it; UNSUPPORTED when built without libpfm4. reason says which. */
ntp_status ntp__pfm_encode(const char *name, struct perf_event_attr *attr, char *reason,
                           size_t len);
/* "libpfm4 4.13: PMUs perf, amd64_fam19h_zen3" or why it is absent. */
bool ntp__pfm_describe(char *buf, size_t len);

/* --- PAPI (papi.c or papi-none.c) --------------------------------------------- */
typedef struct ntp_papi ntp_papi;
/* An event set of the comma-separated events on the calling thread. Each
 * event PAPI refuses is kept with PAPI's reason; the others count. */
ntp_status ntp__papi_open(ntp_ctx *ctx, const char *events, ntp_papi **out);
int ntp__papi_count(const ntp_papi *p);
const char *ntp__papi_name(const ntp_papi *p, int i, bool *available, const char **reason);
/* Current values of the counting events (long long per event, 0 for n/a). */
bool ntp__papi_read(ntp_papi *p, long long *values);
void ntp__papi_close(ntp_papi *p);
/* True when PAPI's component of that name ("perf_event") cannot count,
 * with PAPI's reason ("Error libpfm4 no default PMU found") in why. */
bool ntp__papi_component_disabled(const char *component, char *why, size_t len);
/* "PAPI 7.0.0.0, components perf_event, ..." or why it is absent. */
bool ntp__papi_describe(char *buf, size_t len);

/* --- external tools (tools.c) ------------------------------------------------- */
typedef enum ntp_tool_kind {
    NTP_TOOL_NONE,
    NTP_TOOL_PERF_STAT,
    NTP_TOOL_PERF_RECORD,
    NTP_TOOL_CALLGRIND,
    NTP_TOOL_CACHEGRIND,
    NTP_TOOL_PAPI,
    NTP_TOOL_NVTX
} ntp_tool_kind;

typedef struct ntp_tool_spec {
    ntp_tool_kind kind;
    char name[16];    /* "perf-stat" */
    char events[512]; /* after the colon, or the tool's default */
} ntp_tool_spec;

/* Parse "perf-stat:task-clock,cycles" (an unknown tool fails with a
 * suggestion; `at` names the option, or the marker and its attribute, for
 * the error: its option is set). */
ntp_status ntp__tool_parse(ntp_ctx *ctx, const char *s, const ntp__where *at, ntp_tool_spec *out);
const char *ntp__tool_name(ntp_tool_kind k);

/* A range of report rows a tool counts inside. */
typedef struct ntp_tool_seg {
    int first, last;  /* rows, inclusive */
    int marker;       /* index into ntp_run_result.markers; -1: a row */
    char events[512]; /* perf-stat / perf-record events */
} ntp_tool_seg;

/* One figure a tool produced for a segment, per iteration. */
typedef struct ntp_tool_value {
    int seg;
    char name[NTP_CNAME];
    char unit[16];
    double value;
    bool available, scaled;
    double running;
    char reason[NTP_CREASON];
} ntp_tool_value;

typedef struct ntp_tool_result {
    int n, cap;
    ntp_tool_value *v;
    char notes[4][512]; /* files left, how it ran */
    int n_notes;
} ntp_tool_result;

/* The binaries: found on PATH (or $NTP_PERF / $NTP_VALGRIND) and asked
 * their version; false with the reason when none works. */
bool ntp__tool_find_perf(char *path, size_t len, char *version, size_t vlen);
bool ntp__tool_find_valgrind(char *path, size_t len, char *version, size_t vlen);

/* Parent side: re-execute this process (the same command line) under the
 * tool, with NTP_TOOL telling the child which rows to count and how (and
 * NTP_TOOL_BACKEND which backend to run, for command lines that name
 * several), and fold what the tool wrote into res. dir is where the tool's
 * files go. */
ntp_status ntp__tool_launch(ntp_ctx *ctx, const ntp_tool_spec *t, const char *backend,
                            const ntp_tool_seg *segs, int n_segs, int n_rows, int iterations,
                            const char *dir, ntp_tool_result *res);
void ntp__tool_result_free(ntp_tool_result *res);

/* Child side. */
#define NTP_TOOL_MAX_SEGS 4096
typedef struct ntp_tool_child {
    ntp_tool_kind kind;
    int iterations;
    int n_rows; /* the parent's row count: the child must agree */
    int n_segs;
    ntp_tool_seg *segs; /* events: the number of perf events, as text */
    int *seg_events;    /* perf events per segment */
    int ctl_fd, ack_fd; /* perf's control fifos, -1 for valgrind */
} ntp_tool_child;

/* Is this process a tool's child? Parses NTP_TOOL and its companions. */
bool ntp__tool_child_env(void);
ntp_status ntp__tool_child_open(ntp_ctx *ctx, ntp_tool_child *c);
void ntp__tool_child_close(ntp_tool_child *c);
/* Counting on or off for segment s: perf's events of that segment. */
ntp_status ntp__tool_child_perf(ntp_ctx *ctx, ntp_tool_child *c, int s, bool enable);
/* The perf event name of event e of segment s (shared by both sides). */
void ntp__tool_event_name(int s, int e, char *buf, size_t len);

/* --- valgrind client requests (tools-valgrind.c or -none.c) ------------------ */
/* Were valgrind's headers there at build time (can a child steer callgrind)? */
bool ntp__valgrind_headers(void);
bool ntp__valgrind_running(void);
/* Turn callgrind's collection on or off (it starts off). */
void ntp__callgrind_toggle(void);
/* Dump the costs collected since the last dump, labelled with text. */
void ntp__callgrind_dump(const char *label);

/* --- NVTX (tools-nvtx.c or -none.c) ------------------------------------------ */
bool ntp__nvtx_available(char *why, size_t len);
/* A nested range (layers). */
void ntp__nvtx_push(const char *name);
void ntp__nvtx_pop(void);
/* A range that need not nest (markers may overlap). */
uint64_t ntp__nvtx_start(const char *name);
void ntp__nvtx_end(uint64_t id);

/* --- the counting pass (src/exec/instrument.c) ------------------------------------ */
struct ntp_exec;
struct ntp_rows;
/* After the timing passes of ntp_run: in a tool's child, count what the
 * parent asked for and return; otherwise run the counting pass for
 * o->counters, launch o->tool and the markers' tools, and fill the result's
 * counters and verdicts. Does nothing when none were asked for. */
ntp_status ntp__instrument(ntp_ctx *ctx, struct ntp_exec *x, const struct ntp_rows *w,
                           const ntp_run_opts *o, ntp_run_result *r);
/* Free what the counting pass added to r (called by ntp_run_result_free). */
void ntp__instrument_free(ntp_run_result *r);

/* --- the report (counters-report.c, called by src/report/run.c) -------------------- */
struct json_t;
/* Add "counters", "metrics", "bound" and "bound_evidence" to a layer's or
 * marker's JSON object (nothing when there are no counters and no verdict). */
void ntp__counters_json(bool *ok, struct json_t *row, const ntp_counter_value *v, int n,
                        const char *bound, const char *evidence);
/* Add the run's "counting" object (nothing without a counting pass). */
void ntp__counters_json_run(bool *ok, struct json_t *root, const ntp_run_result *r);
/* The table's counters section (nothing without a counting pass). */
void ntp__counters_table(FILE *f, const ntp_run_result *r);

#endif
