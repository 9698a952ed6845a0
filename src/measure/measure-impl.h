/* Clocks and measurement helpers, private to libntprof.
 *
 * Timing code calls these instead of clock_gettime() directly so that every
 * measurement in a run reads the same clock. */
#ifndef NTPROF_MEASURE_IMPL_H
#define NTPROF_MEASURE_IMPL_H

#include <stdbool.h>
#include <stdint.h>

/* Monotonic time in nanoseconds, from CLOCK_MONOTONIC_RAW where the system
 * has it (not slewed by NTP, so intervals are not stretched while a run is
 * measured), else CLOCK_MONOTONIC. The origin is arbitrary: use differences. */
uint64_t ntp__now_ns(void);
/* The same clock as a double in microseconds. */
double ntp__now_us(void);
/* Median cost of one ntp__now_ns() call in nanoseconds, measured now over
 * many back-to-back reads. Takes about a millisecond. */
double ntp__clock_overhead_ns(void);
/* Seconds the calling thread has spent runnable but waiting for a CPU
 * since it started (the kernel's run_delay, /proc/thread-self/schedstat);
 * -1 when the kernel does not tell. Differences over an interval say how
 * long other threads kept this one off its CPU, waits to wake included,
 * which its CPU time over the interval's wall time cannot see outside the
 * interval. About 10 us a read. */
double ntp__thread_run_delay_s(void);

/* Pin the calling thread to CPU `cpu`; false where it cannot be (a
 * restricted container, a CPU outside the process's set). */
bool ntp__pin_self(int cpu);
/* The first `max` CPUs of the calling thread's set (the process's, unless
 * it was pinned) into cpu, ascending; how many (0 when the set cannot be
 * read). */
int ntp__set_cpus(int *cpu, int max);
/* Whether `word` is a whole word of the blank-separated `list`: "avx512f"
 * does not match inside "avx512fp16". */
bool ntp__has_word(const char *list, const char *word);

/* Write over bytes of buf (ntp_run_opts.flush_bytes, flush.c), one store
 * per NTP__FLUSH_STRIDE bytes, each with pass's low byte: every line
 * written allocates in the caches and evicts another, so that data read
 * before is read again from memory. The caller and a thread pinned to each
 * of the first NTP__FLUSH_MAX_CPUS CPUs of the process's set write all of
 * it at once, so that no CPU's cache keeps what a worker thread read.
 * Returns the CPUs a pinned thread wrote from (0 where none could be
 * pinned: the caller's writes alone). Outside any timed region. */
#define NTP__FLUSH_STRIDE 64
#define NTP__FLUSH_MAX_CPUS 256
int ntp__flush_caches(unsigned char *buf, int64_t bytes, int pass);
/* The same writes from the caller alone (its CPU's caches; what
 * ntp__flush_caches did before 2026-12-06): bench/bench_flush. */
void ntp__flush_caches_here(unsigned char *buf, int64_t bytes, int pass);

/* --- contention (contention.c) ----------------------------------------------------- */

#include <sched.h>
#include <stdbool.h>
#include <jansson.h>
#include "ntprof/run.h"

/* CPU time from /proc/stat, in clock ticks (USER_HZ), summed over a set of
 * CPUs: busy = user + nice + system + irq + softirq (guest time is inside
 * user), idle = idle + iowait, steal apart. */
typedef struct ntp__cpu_times {
    uint64_t busy, idle, steal;
    int cpus; /* lines summed */
} ntp__cpu_times;

/* Parse the text of /proc/stat: sum the "cpuN" lines of the CPUs in `set`
 * (NULL: every cpuN line). False when the text has no cpuN line of the set
 * or a line is malformed. */
bool ntp__proc_stat_parse(const char *text, const cpu_set_t *set, ntp__cpu_times *out);
/* The three load averages of a /proc/loadavg text; false when malformed. */
bool ntp__loadavg_parse(const char *text, double avg[3]);
/* The contention figures of a window from its two /proc/stat samples, the
 * process's CPU time in it (s), its wall time (s) and the tick rate
 * (ticks per second). */
void ntp__contention_compute(const ntp__cpu_times *a, const ntp__cpu_times *b, double own_s,
                             double wall_s, double ticks_per_s, ntp_contention *out);

/* Sampling a window: begin before its first iteration, end after its
 * last. The probe holds the first sample. */
typedef struct ntp__contention_probe {
    bool ok;
    char reason[96];
    cpu_set_t set;
    ntp__cpu_times t0;
    double own0_s, wall0_s, load1;
} ntp__contention_probe;
void ntp__contention_begin(ntp__contention_probe *p);
void ntp__contention_end(const ntp__contention_probe *p, ntp_contention *out);
/* The warning a distorted window adds to a run ("other processes used
 * ..."), into buf; false (buf empty) when the window is not distorted. */
bool ntp__contention_warning(const ntp_contention *c, char *buf, size_t len);

/* --- the resident set over a measured stretch (rss.c) -------------------------------- */

/* A field of /proc/self/status in kB ("VmHWM", "VmRSS"), in bytes; -1
 * when /proc cannot tell. */
int64_t ntp__rss_status_bytes(const char *key);
/* Set the high-water mark back to the current resident set
 * (/proc/self/clear_refs, Linux 4.0); false when it cannot. */
bool ntp__rss_hwm_reset(void);
/* The peak resident set of a stretch of this process with intervals left
 * out (an instrument's own arrays):
 *
 *     ntp__rss_meter m;
 *     ntp__rss_meter_start(&m);          // the mark set back to now
 *     ...                                // counts
 *     ntp__rss_meter_exclude_begin(&m);  // the mark so far kept
 *     ...                                // left out
 *     ntp__rss_meter_exclude_end(&m);    // the mark set back again
 *     int64_t peak = ntp__rss_meter_peak(&m);
 *
 * The peak is the process's whole resident set at its highest, what was
 * resident at the start included (m.base); 0 (n/a) when /proc could not
 * read or set back the mark at any step, never a figure that holds what
 * was to be left out or what came before the start. The mark is the
 * process's: starting a meter sets back any other reader's. */
typedef struct ntp__rss_meter {
    int64_t base; /* resident bytes at the start; -1 unknown */
    int64_t peak; /* the highest mark read so far */
    bool ok;      /* every step so far read or set back the mark */
} ntp__rss_meter;
void ntp__rss_meter_start(ntp__rss_meter *m);
void ntp__rss_meter_exclude_begin(ntp__rss_meter *m);
void ntp__rss_meter_exclude_end(ntp__rss_meter *m);
int64_t ntp__rss_meter_peak(ntp__rss_meter *m);

/* --- the memory bus around a window (bandwidth.c) ------------------------------------- */

struct ntp_ceilings;
/* Whether and how a run probes (docs/run.md#contention): b's working set
 * and threads from the ceilings' DRAM triad (c, NULL: none; then ntprof
 * machine's rule and every CPU this process may use), or measured false
 * with the reason it is skipped. */
void ntp__bandwidth_plan(const struct ntp_ceilings *c, ntp_bandwidth_probe mode, double min_time_s,
                         ntp_bandwidth_check *b);
/* The probe before the warm-up, and the one after the last measured
 * iteration followed by the judgement. Each takes at most about 50 ms
 * (b->cost_s adds them up); a failure clears measured and says why. */
void ntp__bandwidth_before(ntp_bandwidth_check *b);
void ntp__bandwidth_after(ntp_bandwidth_check *b);
/* The judgement, pure: from b's GB/s and ceiling figures, the shares (-1
 * where n/a, share_reason saying why when there is no ceiling), `low`: a
 * probe below both the ceiling's worst round and NTP_BANDWIDTH_LOW_SHARE
 * of the ceiling, and `high`: a probe above NTP_BANDWIDTH_HIGH_SHARE of
 * it over a working set the plan did not cut. */
void ntp__bandwidth_judge(ntp_bandwidth_check *b);
/* The hand-off looks next to b's probes (before: the run's probe before
 * the warm-up; after: after the last iteration; 0: no look), and the
 * judgement again: a probe whose CPUs sat otherwise than the ceiling's is
 * not judged (docs/run.md#the-memory-bus). */
void ntp__bandwidth_placement(ntp_bandwidth_check *b, double before, double after);
/* The warning a low probe adds to a run ("memory bandwidth was ..."), into
 * buf; false (buf empty) when neither probe read low. */
bool ntp__bandwidth_warning(const ntp_bandwidth_check *b, char *buf, size_t len);
/* The warning a high probe adds ("a bandwidth probe read ... the ceiling
 * was measured on a busier memory bus or is another machine's"), into buf;
 * false (buf empty) when neither probe read high. */
bool ntp__bandwidth_ceiling_warning(const ntp_bandwidth_check *b, char *buf, size_t len);
/* The report header's line ("14.1 GB/s before, 10.9 after: 70% and 54% of
 * this machine's DRAM triad (20.1 GB/s); ..."), or "n/a (reason)"; false
 * when there is nothing to say (a report from before the probe). */
bool ntp__bandwidth_line(const ntp_bandwidth_check *b, char *buf, size_t len);
/* A check as the run report's environment.contention.bandwidth (and a
 * calibration's memory_bus) writes it, and read back: absent or not an
 * object (an older report) reads as not measured, no reason, and the
 * writers leave it out again; a null share reads as n/a (-1). */
json_t *ntp__bandwidth_json(bool *ok, const ntp_bandwidth_check *b);
/* The lower of a check's probes' shares of the DRAM triad; -1 when
 * neither has one (not measured, no ceiling). */
double ntp__bandwidth_low_share(const ntp_bandwidth_check *b);
void ntp__bandwidth_read_json(json_t *o, ntp_bandwidth_check *b);

/* --- data handed between the run's CPUs (handoff.c) ---------------------------------- */

/* Whether a run probes (docs/run.md#handoff): unless mode is OFF (auto
 * and on probe: it takes a few ms), and only when the run may use more
 * than one CPU (threads 1: one thread hands nothing over); h's buffer
 * (twice the reader's L2, within half the largest cache) and pairs, or
 * measured false with the reason. */
void ntp__handoff_plan(ntp_bandwidth_probe mode, int threads, ntp_handoff_check *h);
/* The probe before the warm-up, and the one after the last measured
 * iteration followed by the judgement; a few ms per pair (h->cost_s adds
 * them up); a failure clears measured and says why. */
void ntp__handoff_before(ntp_handoff_check *h);
void ntp__handoff_after(ntp_handoff_check *h);
/* qsort's comparison of doubles, NaN after every number (stats.c). */
int ntp__cmp_double(const void *a, const void *b);
/* The median of v's n values (n > 0) as ntp_stats_compute takes it
 * (interpolated between the middle two); sorts v in place. */
double ntp__median_inplace(double *v, int n);
/* Samples inside the measured window (docs/run.md#handoff): the buffer
 * they hand over and the iteration each preceded, with its ratio. */
typedef struct ntp__handoff_window {
    unsigned char *buf; /* NULL: no samples (not measured, no pair, out of memory) */
    double last_us;     /* when the latest sample (or the window) began */
    int n, cap;
    int *iter;
    double *ratio;
} ntp__handoff_window;
/* At the window's start, after the probe before. */
void ntp__handoff_window_begin(const ntp_handoff_check *h, ntp__handoff_window *w);
/* Between iterations (iter: the next one's index): one short hand-off
 * between the before probe's slowest pair when NTP_HANDOFF_SAMPLE_S has
 * passed since the last; its time is added to h->cost_s. */
void ntp__handoff_window_tick(ntp_handoff_check *h, ntp__handoff_window *w, int iter);
/* After the window: h's samples, samples_apart and window_ratio, and the
 * end-to-end medians of the iterations under each placement from
 * e2e[0..n) in ms; apart[i] (n entries; NULL only with n 0) says
 * whether iteration i ran under a look that found the pair apart; frees
 * w. */
void ntp__handoff_window_end(ntp_handoff_check *h, ntp__handoff_window *w, const double *e2e, int n,
                             unsigned char *apart);
/* Each row's median under each placement (together_ms, apart_ms of
 * rows[0..nl)): over the iterations i of lt[i * nl + row] (ms) with
 * apart[i] 0 and 1; a placement with no iteration gives 0; nothing on
 * NULL apart or out of memory. */
void ntp__handoff_split_rows(const double *lt, int nl, const unsigned char *apart, int n,
                             ntp_layer_result *rows);
/* The judgement, pure: `apart` when a probe or sample found its pair at
 * NTP_HANDOFF_APART_RATIO or more though sysfs says the two share a cache,
 * or the looks (probes and samples) disagree. */
void ntp__handoff_judge(ntp_handoff_check *h);
/* The warning an apart check adds to a run ("CPUs 0 and 1 did not share a
 * cache ..."), into buf; false (buf empty) when not apart. */
bool ntp__handoff_warning(const ntp_handoff_check *h, char *buf, size_t len);
/* The report header's line ("reading another CPU's writes took 1.01x the
 * time of reading its own before, ..."), or "n/a (reason)"; false when
 * there is nothing to say (a report from before the probe). */
bool ntp__handoff_line(const ntp_handoff_check *h, char *buf, size_t len);
/* The ratio of one pair (CPUs a and b, bytes a multiple of 64) as a probe
 * times it; 0 when it could not run. */
double ntp__handoff_pair_ratio(int a, int b, int64_t bytes);
/* One short look (two untimed rounds and six timed) at the first pair of
 * the CPUs, over the buffer of h, planned once (ntp__handoff_plan): its
 * ratio, 0 when h is not measured (one thread or CPU, off) or it could not
 * run. A calibration takes one around each timing
 * (docs/predict.md#passes). */
double ntp__handoff_look(const ntp_handoff_check *h);
/* Iterations split by flag[i] (docs/run.md#handoff, docs/run.md#pace):
 * each group's end-to-end median, count and the median's 95% interval
 * (as ntp_stats: distribution-free, min..max for five or fewer); index 0
 * the iterations with flag 0, 1 those with flag 1; 0 where a group has
 * none. */
typedef struct ntp__split {
    double ms[2], lo[2], hi[2];
    int n[2];
} ntp__split;
/* false (s all 0) when out of memory. */
bool ntp__split_iterations(const double *e2e, const unsigned char *flag, int n, ntp__split *s);

/* The CPUs' pace (pace.c): the multiply-add GFLOP/s of each of cpus[0..n),
 * each on a thread pinned to it, the best of a few trials of about 0.1 ms,
 * into out; false when one could not run. */
bool ntp__pace_read(const int *cpus, int n, double *out);
/* One look at every CPU of the process's set (the first NTP_PACE_MAX_CPUS):
 * a calibration takes one around each timing (docs/predict.md#passes). */
typedef struct ntp__pace_cpus {
    int n;
    int cpu[NTP_PACE_MAX_CPUS];
    double gflops[NTP_PACE_MAX_CPUS];
} ntp__pace_cpus;
/* false when a CPU's reading could not run. */
bool ntp__pace_look_all(ntp__pace_cpus *a);
/* A look's reading of cpu; the slowest CPU's where cpu is not among those
 * looked at (-1: unknown). */
double ntp__pace_of(const ntp__pace_cpus *a, int cpu);
/* A run's looks (docs/run.md#pace): planned before the window (off with
 * the bandwidth probe, under valgrind; one_thread when the run's layers
 * run on one thread), one at the window's start, one between iterations
 * every NTP_HANDOFF_SAMPLE_S, one after the last. */
void ntp__pace_plan(ntp_bandwidth_probe mode, int threads, ntp_pace_check *p);
typedef struct ntp__pace_window {
    bool on;        /* looking: planned, and no look or record failed */
    double *gflops; /* look k's reading of p->cpu[c] at [k * NTP_PACE_MAX_CPUS + c] */
    int *iter;      /* look k came before iteration iter[k] */
    int n, cap;
    double last_us;
    int *iter_cpu; /* the CPU each iteration ended on, cpu_n of them */
    int cpu_n, cpu_cap;
} ntp__pace_window;
/* The look at the window's start; a failed one unplans the check (its
 * reason says). */
void ntp__pace_window_begin(ntp_pace_check *p, ntp__pace_window *w);
/* After each iteration (iter: iterations done): the CPU the last one ended
 * on, and a look when NTP_HANDOFF_SAMPLE_S has passed since the last;
 * its time is added to p->cost_s. */
void ntp__pace_window_tick(ntp_pace_check *p, ntp__pace_window *w, int iter);
/* After the window: the look after, then the judgement over e2e[0..n)
 * (ms); frees w. */
void ntp__pace_window_end(ntp_pace_check *p, ntp__pace_window *w, const double *e2e, int n);
/* The judgement, pure: p's per-CPU lows and highs, best, looks,
 * slow_looks and the split of e2e[0..n) (ms) by the latest look before
 * each iteration (looks of them, look k before iteration look_iter[k],
 * ascending; its reading of p->cpu[c] at gflops[k * NTP_PACE_MAX_CPUS +
 * c]); iter_cpu[i]: the CPU iteration i ended on (-1: unknown); slowed
 * or unconfirmed as ntp_pace_check says. */
void ntp__pace_judge(ntp_pace_check *p, const double *gflops, const int *look_iter, int looks,
                     const double *e2e, const int *iter_cpu, int n);
/* The warning a slowed check adds to a run ("CPU 1 ran slowed: ..."),
 * into buf; false (buf empty) when not slowed. */
bool ntp__pace_warning(const ntp_pace_check *p, char *buf, size_t len);
/* The report header's line ("CPU 0 38.1-42.0, CPU 1 ... GFLOP/s, ..."), or
 * "n/a (reason)"; false when there is nothing to say (a report from
 * before the looks). */
bool ntp__pace_line(const ntp_pace_check *p, char *buf, size_t len);
/* The size of `cpu`'s data or unified cache at `level` in sysfs, and
 * (*shared) whether its shared_cpu_list holds `other` (-1: no list); 0
 * when sysfs does not say. */
int64_t ntp__sysfs_cache_bytes(int cpu, int level, int other, int *shared);
/* The size of `cpu`'s outermost data or unified cache in sysfs; 0 when
 * sysfs does not say. */
int64_t ntp__sysfs_llc_bytes(int cpu);
/* Whether a sysfs CPU list ("0-3,8,10-11") holds cpu: 1 yes, 0 no, -1 not
 * a list. */
int ntp__cpu_list_has(const char *list, int cpu);

#endif
