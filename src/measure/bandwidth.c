/* The memory bus around a run's measured window (docs/run.md#contention).
 *
 * The CPU counters of contention.c see other processes and the
 * hypervisor's steal, not a neighbour that shares only the memory bus: on a
 * virtual machine another guest can halve this one's DRAM bandwidth while
 * every CPU reads idle. So a run times a short DRAM triad, the one its
 * machine's ceilings were measured with (triad.c), before the warm-up and
 * after the last measured iteration, and compares each with the stored
 * DRAM triad ceiling. Never between timed iterations: it would empty the
 * caches the next iteration finds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/writers-impl.h"
#include "counters-impl.h"
#include "machine-impl.h"
#include "measure-impl.h"
#include "ntprof/context.h"

/* Wall time one probe's timed rounds may take (after the first touch of
 * its arrays and a warm-up round, as the ceiling was measured: without
 * them a single round read the cache's share of the arrays, up to 1.5x
 * the ceiling), and its timed rounds at most; the best round is kept. */
#define PROBE_BUDGET_S 0.05
#define PROBE_MAX_ROUNDS 8
/* Most of a probe's time is the first touch of its arrays (page faults),
 * which the budget cannot stop: a working set larger than this (the DRAM
 * set of a machine whose last-level caches hold more than 64 MiB) is cut
 * to it, and may then sit partly in a large cache and read high, never
 * low (docs/run.md#the-memory-bus). */
#define PROBE_MAX_BYTES ((int64_t)256 << 20)

static const char NO_CEILINGS[] = "no ceilings for this machine (run ntprof machine)";

/* Whether a probe's look found the CPUs placed otherwise than the
 * ceiling's did (both looked). */
static bool other_placement(const ntp_bandwidth_check *b, double look)
{
    return look > 0 && b->ceiling_handoff > 0 &&
           (look >= NTP_HANDOFF_APART_RATIO) != (b->ceiling_handoff >= NTP_HANDOFF_APART_RATIO);
}

void ntp__bandwidth_judge(ntp_bandwidth_check *b)
{
    b->before_share = b->after_share = -1;
    b->low = b->high = false;
    if (!b->measured)
        return;
    if (!(b->ceiling_gbps > 0)) {
        if (!b->share_reason[0])
            snprintf(b->share_reason, sizeof b->share_reason, "%s", NO_CEILINGS);
        return;
    }
    b->share_reason[0] = '\0';
    if (b->before_gbps > 0)
        b->before_share = b->before_gbps / b->ceiling_gbps;
    if (b->after_gbps > 0)
        b->after_share = b->after_gbps / b->ceiling_gbps;
    /* The ceiling is the best of its rounds; its worst round says how low
     * a clean measurement of this machine went. Low is below both. */
    double floor = NTP_BANDWIDTH_LOW_SHARE * b->ceiling_gbps;
    if (b->ceiling_min_gbps > 0 && b->ceiling_min_gbps < floor)
        floor = b->ceiling_min_gbps;
    /* A probe placed otherwise than the ceiling is not judged either way:
     * the placement moves a triad by a third on the Zen 4 VM. */
    bool before = b->before_gbps > 0 && !other_placement(b, b->before_handoff);
    bool after = b->after_gbps > 0 && !other_placement(b, b->after_handoff);
    b->low = (before && b->before_gbps < floor) || (after && b->after_gbps < floor);
    /* Above the ceiling by more than its rounds go: the ceiling, not the
     * bus, is what is off. Low stays judged: a reading below too low a
     * ceiling is lower still against the right one. A working set cut to
     * PROBE_MAX_BYTES may sit partly in a large cache and read high
     * whatever the ceiling: not judged. Nor is a contended probe: with its
     * threads off their CPUs its rounds are mistimed either way. */
    double top = NTP_BANDWIDTH_HIGH_SHARE * b->ceiling_gbps;
    b->high = b->working_set_bytes < PROBE_MAX_BYTES &&
              ((before && !b->before_contended && b->before_gbps > top) ||
               (after && !b->after_contended && b->after_gbps > top));
}

void ntp__bandwidth_placement(ntp_bandwidth_check *b, double before, double after)
{
    if (!b->measured)
        return;
    b->before_handoff = b->before_gbps > 0 ? before : 0;
    b->after_handoff = b->after_gbps > 0 ? after : 0;
    ntp__bandwidth_judge(b);
}

/* Whether the probe after read the lower share (a tie: the one before). */
static bool after_is_lower(const ntp_bandwidth_check *b)
{
    return b->after_share >= 0 && (b->before_share < 0 || b->after_share < b->before_share);
}

double ntp__bandwidth_low_share(const ntp_bandwidth_check *b)
{
    if (!b->measured)
        return -1;
    return after_is_lower(b) ? b->after_share : b->before_share;
}

bool ntp__bandwidth_warning(const ntp_bandwidth_check *b, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!b->measured || !b->low || !(b->ceiling_gbps > 0))
        return false;
    /* The lower of the probes that ran names the figure. */
    bool after = after_is_lower(b);
    double share = after ? b->after_share : b->before_share;
    double gbps = after ? b->after_gbps : b->before_gbps;
    /* A probe whose threads were off their CPUs in every round read the
     * CPUs' contention too: the bus is then not the only suspect. */
    bool shared = after ? b->after_contended : b->before_contended;
    snprintf(buf, len,
             "memory bandwidth was %.0f%% of this machine's DRAM triad %s the measured window "
             "(%.1f of %.1f GB/s): %s; bandwidth-bound layers may read slow",
             100 * share, after ? "after" : "before", gbps, b->ceiling_gbps,
             shared ? "other processes shared the CPUs while the probe ran (its threads were "
                      "descheduled in every round), so the reading is theirs as much as the "
                      "memory bus's"
                    : "another guest or process is using the memory bus, or the triad was "
                      "measured with the CPUs placed otherwise (docs/run.md#the-memory-bus)");
    return true;
}

bool ntp__bandwidth_ceiling_warning(const ntp_bandwidth_check *b, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!b->measured || !b->high || !(b->ceiling_gbps > 0))
        return false;
    double before = b->before_contended ? 0 : b->before_gbps;
    double after_gbps = b->after_contended ? 0 : b->after_gbps;
    bool after = after_gbps > before;
    double gbps = after ? after_gbps : before;
    snprintf(buf, len,
             "a bandwidth probe read %.1f GB/s %s the measured window, %.1fx this machine's "
             "stored DRAM triad ceiling (%.1f GB/s): the ceiling was measured on a busier "
             "memory bus or is another machine's, and shares of it overstate the bus "
             "(ntprof machine --remeasure)",
             gbps, after ? "after" : "before", gbps / b->ceiling_gbps, b->ceiling_gbps);
    return true;
}

bool ntp__bandwidth_line(const ntp_bandwidth_check *b, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!b->measured) {
        if (!b->reason[0])
            return false;
        snprintf(buf, len, "n/a (%s)", b->reason);
        return true;
    }
    char share[192];
    if (b->before_share >= 0 && b->after_share >= 0)
        snprintf(share, sizeof share,
                 ": %.0f%% and %.0f%% of this machine's DRAM triad (%.1f GB/s)",
                 100 * b->before_share, 100 * b->after_share, b->ceiling_gbps);
    else
        snprintf(share, sizeof share, "; share n/a: %s",
                 b->share_reason[0] ? b->share_reason : NO_CEILINGS);
    /* Which probe read with its threads off their CPUs in every round. */
    const char *shared = b->before_contended && b->after_contended ? "both probes"
                         : b->before_contended                     ? "the probe before"
                         : b->after_contended                      ? "the probe after"
                                                                   : NULL;
    char cpus[96] = "";
    if (shared)
        snprintf(cpus, sizeof cpus, "; %s shared the CPUs with other processes", shared);
    /* Which probe was placed otherwise than the ceiling, and so not judged. */
    bool ob = b->before_gbps > 0 && other_placement(b, b->before_handoff);
    bool oa = b->after_gbps > 0 && other_placement(b, b->after_handoff);
    char placed[192] = "";
    if (ob || oa)
        snprintf(placed, sizeof placed,
                 "; not judged (%s): the ceiling was measured with the CPUs %s, %s with them %s",
                 ob && oa ? "both"
                 : ob     ? "before"
                          : "after",
                 b->ceiling_handoff >= NTP_HANDOFF_APART_RATIO ? "apart" : "together",
                 ob && oa ? "the probes"
                 : ob     ? "the probe before"
                          : "the probe after",
                 b->ceiling_handoff >= NTP_HANDOFF_APART_RATIO ? "together" : "apart");
    snprintf(buf, len,
             "%.1f GB/s before, %.1f after%s%s%s; the probes took %.0f ms (%d thread%s over %.0f "
             "MiB)",
             b->before_gbps, b->after_gbps, share, cpus, placed, 1e3 * b->cost_s, b->threads,
             b->threads == 1 ? "" : "s", (double)b->working_set_bytes / (1 << 20));
    return true;
}

/* The DRAM triad's ceiling, worst round and placement in c into b; false
 * when c has none. */
static bool dram_ceiling(const ntp_ceilings *c, ntp_bandwidth_check *b)
{
    for (int i = c ? c->n_levels - 1 : -1; i >= 0; i--)
        if (strcmp(c->levels[i].level, "DRAM") == 0 && c->levels[i].gbps > 0) {
            b->ceiling_gbps = c->levels[i].gbps;
            b->ceiling_min_gbps = c->level_spread[i].min;
            b->working_set_bytes = c->levels[i].working_set_bytes;
            b->ceiling_handoff = c->level_spread[i].handoff_ratio;
            return true;
        }
    return false;
}

/* Without ceilings: ntprof machine's DRAM working set from the last-level
 * cache (one instance) and physical memory. */
static int64_t default_working_set(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    int64_t mem = pages > 0 && page > 0 ? (int64_t)pages * page : 0;
    /* CPU 0's outermost cache in sysfs (what hwloc reads for ntprof
     * machine; the C library's sysconf may report the whole package's on a
     * virtual machine). */
    return ntp__triad_dram_bytes(ntp__sysfs_llc_bytes(0), mem);
}

void ntp__bandwidth_plan(const ntp_ceilings *c, ntp_bandwidth_probe mode, double min_time_s,
                         ntp_bandwidth_check *b)
{
    memset(b, 0, sizeof *b);
    b->before_share = b->after_share = -1;
    if (mode == NTP_BANDWIDTH_PROBE_OFF) {
        snprintf(b->reason, sizeof b->reason, "off (ntp_run_opts.bandwidth_probe)");
        return;
    }
    /* valgrind runs every instruction of the triad through its JIT, one
     * thread at a time: neither a bandwidth nor a quick probe. */
    if (ntp__valgrind_running()) {
        snprintf(b->reason, sizeof b->reason,
                 "under valgrind, which runs one thread at a time and translates every load");
        return;
    }
    if (mode == NTP_BANDWIDTH_PROBE_AUTO && min_time_s < NTP_BANDWIDTH_PROBE_MIN_TIME_S) {
        snprintf(b->reason, sizeof b->reason,
                 "skipped: min_time_s %.3g s is below %.3g s, and the probes take about "
                 "0.3 s",
                 min_time_s, NTP_BANDWIDTH_PROBE_MIN_TIME_S);
        return;
    }
    ntp__team tm;
    int avail = ntp__team_cpus(&tm, 0);
    if (dram_ceiling(c, b)) {
        b->threads = c->threads > 0 && c->threads < avail ? c->threads : avail;
    } else {
        b->working_set_bytes = default_working_set();
        b->threads = avail;
        if (c)
            snprintf(b->share_reason, sizeof b->share_reason,
                     "the machine's ceilings have no DRAM triad");
    }
    /* Ceilings given by hand (--ceilings FILE) may name no DRAM working
     * set: ntprof machine's. */
    if (b->working_set_bytes <= 0)
        b->working_set_bytes = default_working_set();
    if (b->working_set_bytes > PROBE_MAX_BYTES)
        b->working_set_bytes = PROBE_MAX_BYTES;
    b->measured = true;
}

/* One probe: the best round of the triad over the plan's working set (of
 * the clean rounds when any; *contended when none was clean), in GB/s; 0
 * and b's reason on failure. */
static double probe(ntp_bandwidth_check *b, bool *contended)
{
    ntp__team *tm = calloc(1, sizeof *tm);
    ntp_ctx *ctx = ntp_ctx_init();
    double best = 0;
    if (!tm || !ctx) {
        snprintf(b->reason, sizeof b->reason, "out of memory");
        b->measured = false;
    } else {
        ntp__team_cpus(tm, b->threads);
        ntp__triad_rounds tr;
        double t0 = ntp__now_us();
        ntp_status st = ntp__triad_measure(ctx, tm, b->working_set_bytes / tm->n, 1, true,
                                           PROBE_MAX_ROUNDS, PROBE_BUDGET_S, &tr);
        b->cost_s += (ntp__now_us() - t0) / 1e6;
        if (st) {
            snprintf(b->reason, sizeof b->reason, "%s", ntp_ctx_errmsg(ctx));
            b->measured = false;
        }
        double clean = 0, any = 0;
        for (int r = 0; !st && r < tr.rounds; r++) {
            if (tr.gbps[r] > any)
                any = tr.gbps[r];
            if (tr.clean[r] && tr.gbps[r] > clean)
                clean = tr.gbps[r];
        }
        best = clean > 0 ? clean : any;
        *contended = !st && tr.rounds > 0 && !(clean > 0);
        b->threads = tm->n;
    }
    ntp_ctx_free(ctx);
    free(tm);
    return best;
}

void ntp__bandwidth_before(ntp_bandwidth_check *b)
{
    if (b->measured)
        b->before_gbps = probe(b, &b->before_contended);
}

void ntp__bandwidth_after(ntp_bandwidth_check *b)
{
    if (b->measured)
        b->after_gbps = probe(b, &b->after_contended);
    ntp__bandwidth_judge(b);
}

json_t *ntp__bandwidth_json(bool *ok, const ntp_bandwidth_check *b)
{
    json_t *bo = json_object();
    ntp__jset(ok, bo, "measured", json_boolean(b->measured));
    if (b->measured) {
        ntp__jset(ok, bo, "before_gbps", ntp__json_num(b->before_gbps));
        ntp__jset(ok, bo, "after_gbps", ntp__json_num(b->after_gbps));
        ntp__jset(ok, bo, "working_set_bytes", json_integer(b->working_set_bytes));
        ntp__jset(ok, bo, "threads", json_integer(b->threads));
        ntp__jset(ok, bo, "cost_s", ntp__json_num(b->cost_s));
        bool ceil = b->ceiling_gbps > 0;
        ntp__jset(ok, bo, "ceiling_gbps", ceil ? ntp__json_num(b->ceiling_gbps) : json_null());
        ntp__jset(ok, bo, "ceiling_min_gbps",
                  ceil ? ntp__json_num(b->ceiling_min_gbps) : json_null());
        ntp__jset(ok, bo, "before_share",
                  b->before_share >= 0 ? ntp__json_num(b->before_share) : json_null());
        ntp__jset(ok, bo, "after_share",
                  b->after_share >= 0 ? ntp__json_num(b->after_share) : json_null());
        if (b->share_reason[0])
            ntp__jset(ok, bo, "share_reason", ntp__json_str(b->share_reason));
        ntp__jset(ok, bo, "low_share", ntp__json_num(NTP_BANDWIDTH_LOW_SHARE));
        ntp__jset(ok, bo, "low", json_boolean(b->low));
        ntp__jset(ok, bo, "high_share", ntp__json_num(NTP_BANDWIDTH_HIGH_SHARE));
        ntp__jset(ok, bo, "high", json_boolean(b->high));
        ntp__jset(ok, bo, "before_contended", json_boolean(b->before_contended));
        ntp__jset(ok, bo, "after_contended", json_boolean(b->after_contended));
        ntp__jset(ok, bo, "ceiling_handoff_ratio",
                  b->ceiling_handoff > 0 ? ntp__json_num(b->ceiling_handoff) : json_null());
        ntp__jset(ok, bo, "before_handoff_ratio",
                  b->before_handoff > 0 ? ntp__json_num(b->before_handoff) : json_null());
        ntp__jset(ok, bo, "after_handoff_ratio",
                  b->after_handoff > 0 ? ntp__json_num(b->after_handoff) : json_null());
    } else {
        ntp__jset(ok, bo, "reason", ntp__json_str(b->reason));
    }
    return bo;
}

static double num_or(json_t *o, const char *key, double def)
{
    json_t *v = json_object_get(o, key);
    return v && json_is_number(v) ? json_number_value(v) : def;
}

void ntp__bandwidth_read_json(json_t *o, ntp_bandwidth_check *b)
{
    memset(b, 0, sizeof *b);
    b->before_share = b->after_share = -1;
    if (!json_is_object(o))
        return;
    b->measured = json_is_true(json_object_get(o, "measured"));
    b->before_gbps = num_or(o, "before_gbps", 0);
    b->after_gbps = num_or(o, "after_gbps", 0);
    b->working_set_bytes = (int64_t)num_or(o, "working_set_bytes", 0);
    b->threads = (int)num_or(o, "threads", 0);
    b->cost_s = num_or(o, "cost_s", 0);
    b->ceiling_gbps = num_or(o, "ceiling_gbps", 0);
    b->ceiling_min_gbps = num_or(o, "ceiling_min_gbps", 0);
    b->before_share = num_or(o, "before_share", -1);
    b->after_share = num_or(o, "after_share", -1);
    b->low = json_is_true(json_object_get(o, "low"));
    b->high = json_is_true(json_object_get(o, "high"));
    b->before_contended = json_is_true(json_object_get(o, "before_contended"));
    b->after_contended = json_is_true(json_object_get(o, "after_contended"));
    b->ceiling_handoff = num_or(o, "ceiling_handoff_ratio", 0);
    b->before_handoff = num_or(o, "before_handoff_ratio", 0);
    b->after_handoff = num_or(o, "after_handoff_ratio", 0);
    json_t *why = json_object_get(o, "reason");
    snprintf(b->reason, sizeof b->reason, "%s", json_is_string(why) ? json_string_value(why) : "");
    why = json_object_get(o, "share_reason");
    snprintf(b->share_reason, sizeof b->share_reason, "%s",
             json_is_string(why) ? json_string_value(why) : "");
    /* A report that says not measured but gives no reason still says so. */
    if (!b->measured && !b->reason[0])
        snprintf(b->reason, sizeof b->reason, "not measured");
}
