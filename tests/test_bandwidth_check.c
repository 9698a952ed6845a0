/* The memory bus around a run (docs/run.md#contention): the judgement of
 * the bandwidth probes on hand-made figures (shares, the threshold from
 * the ceiling's worst round and 80%, the n/a cases, the warning and the
 * header's words), when a run probes, and (with the argument "live", its
 * own ctest) a real run's probes against a DRAM ceiling measured in the
 * same process with the same function, ntp__triad_measure. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "measure/machine-impl.h"
#include "measure/measure-impl.h"
#include "support/busy.h"
#include "ntprof/ntprof.h"
#include "support/live-run.h"

/* A check as a run fills it: measured, with both probes and a ceiling. */
static ntp_bandwidth_check check(double before, double after, double ceiling, double worst)
{
    ntp_bandwidth_check b;
    memset(&b, 0, sizeof b);
    b.measured = true;
    b.before_gbps = before;
    b.after_gbps = after;
    b.ceiling_gbps = ceiling;
    b.ceiling_min_gbps = worst;
    b.working_set_bytes = (int64_t)128 << 20;
    b.threads = 2;
    b.cost_s = 0.083;
    return b;
}

static void test_judge(void **state)
{
    (void)state;
    char msg[320];
    /* 14.2 and 10.8 of 20 GB/s: 71% and 54%. The ceiling's worst round
     * was 17 (85%): low is below 16, 80% of the ceiling, the lower of the
     * two. After reads low. */
    ntp_bandwidth_check b = check(14.2, 10.8, 20.0, 17.0);
    ntp__bandwidth_judge(&b);
    assert_float_equal(b.before_share, 0.71, 1e-12);
    assert_float_equal(b.after_share, 0.54, 1e-12);
    assert_true(b.low);
    assert_string_equal(b.share_reason, "");
    assert_true(ntp__bandwidth_warning(&b, msg, sizeof msg));
    assert_string_equal(msg, "memory bandwidth was 54% of this machine's DRAM triad after the "
                             "measured window (10.8 of 20.0 GB/s): another guest or process is "
                             "using the memory bus, or the triad was measured with the CPUs "
                             "placed otherwise (docs/run.md#the-memory-bus); bandwidth-bound "
                             "layers may read slow");
    assert_true(ntp__bandwidth_line(&b, msg, sizeof msg));
    assert_string_equal(msg, "14.2 GB/s before, 10.8 after: 71% and 54% of this machine's DRAM "
                             "triad (20.0 GB/s); the probes took 83 ms (2 threads over 128 MiB)");

    /* The lower probe names the figure: before this time. */
    b = check(9.0, 15.0, 20.0, 17.0);
    ntp__bandwidth_judge(&b);
    assert_true(b.low);
    assert_true(ntp__bandwidth_warning(&b, msg, sizeof msg));
    assert_non_null(strstr(msg, "was 45% of this machine's DRAM triad before the measured window "
                                "(9.0 of 20.0 GB/s)"));

    /* A ceiling whose rounds went as low as 12 (60%): 70% is within what a
     * clean round of this machine read, 11 (55%) is below it. */
    b = check(14.0, 15.0, 20.0, 12.0);
    ntp__bandwidth_judge(&b);
    assert_false(b.low);
    assert_false(ntp__bandwidth_warning(&b, msg, sizeof msg));
    assert_string_equal(msg, "");
    b = check(14.0, 11.0, 20.0, 12.0);
    ntp__bandwidth_judge(&b);
    assert_true(b.low);

    /* Without a worst round (ceilings stored without their spread): 80%
     * alone, strictly below. */
    b = check(16.0, 16.0, 20.0, 0);
    ntp__bandwidth_judge(&b);
    assert_false(b.low);
    b = check(16.0, 15.9, 20.0, 0);
    ntp__bandwidth_judge(&b);
    assert_true(b.low);
    /* Above the ceiling is not low: it is high (test_judge_high). */
    b = check(30.0, 25.0, 20.0, 17.0);
    ntp__bandwidth_judge(&b);
    assert_false(b.low);
    assert_true(b.high);
    assert_float_equal(b.before_share, 1.5, 1e-12);

    /* No ceilings: the GB/s stand, the shares are n/a and say why. */
    b = check(14.1, 10.8, 0, 0);
    ntp__bandwidth_judge(&b);
    assert_true(b.before_share == -1 && b.after_share == -1);
    assert_false(b.low);
    assert_string_equal(b.share_reason, "no ceilings for this machine (run ntprof machine)");
    assert_false(ntp__bandwidth_warning(&b, msg, sizeof msg));
    assert_true(ntp__bandwidth_line(&b, msg, sizeof msg));
    assert_string_equal(msg, "14.1 GB/s before, 10.8 after; share n/a: no ceilings for this "
                             "machine (run ntprof machine); the probes took 83 ms (2 threads "
                             "over 128 MiB)");
    /* ... and a reason the plan gave stays. */
    b = check(14.1, 10.8, 0, 0);
    snprintf(b.share_reason, sizeof b.share_reason, "the machine's ceilings have no DRAM triad");
    ntp__bandwidth_judge(&b);
    assert_string_equal(b.share_reason, "the machine's ceilings have no DRAM triad");

    /* Not measured: nothing judged, the reason in the header. */
    b = check(0, 0, 20.0, 17.0);
    b.measured = false;
    snprintf(b.reason, sizeof b.reason, "off (ntp_run_opts.bandwidth_probe)");
    ntp__bandwidth_judge(&b);
    assert_false(b.low);
    assert_true(b.before_share == -1 && b.after_share == -1);
    assert_false(ntp__bandwidth_warning(&b, msg, sizeof msg));
    assert_true(ntp__bandwidth_line(&b, msg, sizeof msg));
    assert_string_equal(msg, "n/a (off (ntp_run_opts.bandwidth_probe))");
    /* A report from before the probe: nothing to say at all. */
    memset(&b, 0, sizeof b);
    assert_false(ntp__bandwidth_line(&b, msg, sizeof msg));
}

/* A probe above 1.25x the ceiling: the ceiling is stale (measured on a
 * busier bus, or another machine's), not the bus fast. */
static void test_judge_high(void **state)
{
    (void)state;
    char msg[400];
    /* 24.9 of 20 GB/s is 1.245x: within what the ceiling allows. */
    ntp_bandwidth_check b = check(24.9, 20.0, 20.0, 17.0);
    ntp__bandwidth_judge(&b);
    assert_false(b.high);
    assert_false(b.low);
    assert_false(ntp__bandwidth_ceiling_warning(&b, msg, sizeof msg));
    assert_string_equal(msg, "");
    /* 25.1 after is 1.255x: high, and the warning names the higher probe. */
    b = check(24.0, 25.1, 20.0, 17.0);
    ntp__bandwidth_judge(&b);
    assert_true(b.high);
    assert_false(b.low);
    assert_true(ntp__bandwidth_ceiling_warning(&b, msg, sizeof msg));
    assert_string_equal(msg, "a bandwidth probe read 25.1 GB/s after the measured window, 1.3x "
                             "this machine's stored DRAM triad ceiling (20.0 GB/s): the ceiling "
                             "was measured on a busier memory bus or is another machine's, and "
                             "shares of it overstate the bus (ntprof machine --remeasure)");
    /* The low warning stays its own: nothing read low. */
    assert_false(ntp__bandwidth_warning(&b, msg, sizeof msg));
    /* One probe high, the other low: both judged, both said. */
    b = check(30.0, 10.0, 20.0, 17.0);
    ntp__bandwidth_judge(&b);
    assert_true(b.high && b.low);
    assert_true(ntp__bandwidth_ceiling_warning(&b, msg, sizeof msg));
    assert_non_null(strstr(msg, "read 30.0 GB/s before the measured window, 1.5x"));
    assert_true(ntp__bandwidth_warning(&b, msg, sizeof msg));
    assert_non_null(strstr(msg, "was 50% of this machine's DRAM triad after"));
    /* A working set the plan cut to 256 MiB may sit partly in a large
     * cache: a high reading there says nothing of the ceiling. */
    b = check(40.0, 40.0, 20.0, 17.0);
    b.working_set_bytes = (int64_t)256 << 20;
    ntp__bandwidth_judge(&b);
    assert_false(b.high);
    assert_false(ntp__bandwidth_ceiling_warning(&b, msg, sizeof msg));
    /* A contended probe's rounds are mistimed either way: not high. */
    b = check(40.0, 22.0, 20.0, 17.0);
    b.before_contended = true;
    ntp__bandwidth_judge(&b);
    assert_false(b.high);
    b.after_gbps = 26.0;
    ntp__bandwidth_judge(&b);
    assert_true(b.high);
    assert_true(ntp__bandwidth_ceiling_warning(&b, msg, sizeof msg));
    assert_non_null(strstr(msg, "read 26.0 GB/s after the measured window, 1.3x"));
    /* No ceiling: no share, nothing high. */
    b = check(40.0, 40.0, 0, 0);
    ntp__bandwidth_judge(&b);
    assert_false(b.high);
    assert_false(ntp__bandwidth_ceiling_warning(&b, msg, sizeof msg));
}

/* A probe none of whose rounds had its threads on their CPUs read the
 * CPUs' contention too: the warning and the header say so. */
static void test_contended(void **state)
{
    (void)state;
    char msg[400];
    ntp_bandwidth_check b = check(14.2, 10.8, 20.0, 17.0);
    b.after_contended = true;
    ntp__bandwidth_judge(&b);
    assert_true(ntp__bandwidth_warning(&b, msg, sizeof msg));
    assert_string_equal(msg, "memory bandwidth was 54% of this machine's DRAM triad after the "
                             "measured window (10.8 of 20.0 GB/s): other processes shared the "
                             "CPUs while the probe ran (its threads were descheduled in every "
                             "round), so the reading is theirs as much as the memory bus's; "
                             "bandwidth-bound layers may read slow");
    assert_true(ntp__bandwidth_line(&b, msg, sizeof msg));
    assert_string_equal(msg, "14.2 GB/s before, 10.8 after: 71% and 54% of this machine's DRAM "
                             "triad (20.0 GB/s); the probe after shared the CPUs with other "
                             "processes; the probes took 83 ms (2 threads over 128 MiB)");
    /* The warning follows the probe it names: before was clean. */
    b = check(9.0, 15.0, 20.0, 17.0);
    b.after_contended = true;
    ntp__bandwidth_judge(&b);
    assert_true(ntp__bandwidth_warning(&b, msg, sizeof msg));
    assert_non_null(strstr(msg, "(9.0 of 20.0 GB/s): another guest or process is using"));
    b.before_contended = true;
    assert_true(ntp__bandwidth_line(&b, msg, sizeof msg));
    assert_non_null(strstr(msg, "; both probes shared the CPUs with other processes;"));
    b.after_contended = false;
    assert_true(ntp__bandwidth_line(&b, msg, sizeof msg));
    assert_non_null(strstr(msg, "; the probe before shared the CPUs with other processes;"));
}

/* The CPUs' placement (docs/run.md#the-memory-bus): a ceiling measured
 * with the CPUs apart (hand-off 3.0x) against probes next to looks that
 * found them together is not judged; the same placement is. */
static void test_placement(void **state)
{
    (void)state;
    char msg[512];
    /* 36 and 35 of a 52 GB/s ceiling measured apart (worst round 45): 69%
     * and 67%, low by the numbers. */
    ntp_bandwidth_check b = check(36.0, 35.0, 52.0, 45.0);
    b.ceiling_handoff = 3.0;
    ntp__bandwidth_judge(&b);
    assert_true(b.low);
    /* Both probes together (1.1x, 1.2x): neither judged. */
    ntp__bandwidth_placement(&b, 1.1, 1.2);
    assert_false(b.low);
    assert_false(b.high);
    assert_false(ntp__bandwidth_warning(&b, msg, sizeof msg));
    assert_true(ntp__bandwidth_line(&b, msg, sizeof msg));
    assert_non_null(strstr(msg, "; not judged (both): the ceiling was measured with the CPUs "
                                "apart, the probes with them together;"));
    /* The probe after apart (3.4x), as the ceiling: judged, low. */
    ntp__bandwidth_placement(&b, 1.1, 3.4);
    assert_true(b.low);
    assert_true(ntp__bandwidth_line(&b, msg, sizeof msg));
    assert_non_null(strstr(msg, "; not judged (before): the ceiling was measured with the CPUs "
                                "apart, the probe before with them together;"));
    /* A ceiling measured together, a probe apart reading 1.4x it: not
     * judged high. */
    b = check(70.0, 50.0, 50.0, 45.0);
    b.ceiling_handoff = 1.1;
    ntp__bandwidth_placement(&b, 3.0, 1.1);
    assert_false(b.high);
    /* No look on either side: judged by the numbers, as before. */
    b.ceiling_handoff = 0;
    ntp__bandwidth_placement(&b, 3.0, 1.1);
    assert_true(b.high);
    /* Not measured: untouched. */
    memset(&b, 0, sizeof b);
    ntp__bandwidth_placement(&b, 3.0, 3.0);
    assert_true(b.before_handoff == 0);
}

static void test_plan(void **state)
{
    (void)state;
    ntp_ceilings c;
    memset(&c, 0, sizeof c);
    c.threads = 1;
    c.n_levels = 2;
    snprintf(c.levels[0].level, sizeof c.levels[0].level, "L3");
    c.levels[0].gbps = 100;
    c.levels[0].working_set_bytes = 16 << 20;
    snprintf(c.levels[1].level, sizeof c.levels[1].level, "DRAM");
    c.levels[1].gbps = 20;
    c.levels[1].working_set_bytes = (int64_t)128 << 20;
    c.level_spread[1].min = 17;
    c.level_spread[1].handoff_ratio = 3.5;
    ntp_bandwidth_check b;

    ntp__bandwidth_plan(&c, NTP_BANDWIDTH_PROBE_OFF, 10, &b);
    assert_false(b.measured);
    assert_string_equal(b.reason, "off (ntp_run_opts.bandwidth_probe)");
    /* auto skips a run whose window may be shorter than the probes, and
     * says so; on probes it anyway. */
    ntp__bandwidth_plan(&c, NTP_BANDWIDTH_PROBE_AUTO, 0.1, &b);
    assert_false(b.measured);
    assert_string_equal(b.reason, "skipped: min_time_s 0.1 s is below 0.5 s, and the probes take "
                                  "about 0.3 s");
    ntp__bandwidth_plan(&c, NTP_BANDWIDTH_PROBE_AUTO, 0.5, &b);
    assert_true(b.measured);
    ntp__bandwidth_plan(&c, NTP_BANDWIDTH_PROBE_ON, 0, &b);
    assert_true(b.measured);
    /* The DRAM level's working set, threads and ceiling, not the L3's. */
    assert_true(b.ceiling_gbps == 20 && b.ceiling_min_gbps == 17);
    assert_float_equal(b.ceiling_handoff, 3.5, 0);
    assert_int_equal(b.working_set_bytes, (int64_t)128 << 20);
    assert_int_equal(b.threads, 1);
    /* A working set too large to touch within the budget is cut. */
    c.levels[1].working_set_bytes = (int64_t)1 << 30;
    ntp__bandwidth_plan(&c, NTP_BANDWIDTH_PROBE_ON, 0, &b);
    assert_int_equal(b.working_set_bytes, (int64_t)256 << 20);
    /* Ceilings without a DRAM triad, and none: measured, share n/a. */
    c.n_levels = 1;
    ntp__bandwidth_plan(&c, NTP_BANDWIDTH_PROBE_ON, 0, &b);
    assert_true(b.measured);
    assert_true(b.ceiling_gbps == 0);
    assert_string_equal(b.share_reason, "the machine's ceilings have no DRAM triad");
    assert_true(b.working_set_bytes >= (int64_t)128 << 20);
    ntp__bandwidth_plan(NULL, NTP_BANDWIDTH_PROBE_ON, 0, &b);
    assert_true(b.measured);
    assert_string_equal(b.share_reason, "");
    assert_true(b.threads >= 1);
}

/* --- live: a run's probes against a ceiling measured here ------------------------------ */

/* Spinners that keep every CPU busy twice over, in this process. */
static atomic_bool spin_stop;
static void *spin(void *arg)
{
    (void)arg;
    volatile unsigned long x = 0;
    while (!atomic_load_explicit(&spin_stop, memory_order_relaxed))
        x++;
    return NULL;
}

/* The probe beside the spinners runs from a thread at nice 5, whose team
 * threads inherit it, over arrays that make a round last 10 ms at the
 * quiet probes' speed. At nice 0 a thread woken from the round's barrier
 * may keep its CPU through a whole 3 ms round (a time slice ends at a
 * scheduler tick, 4 ms at HZ 250, and a waking thread's credit adds to
 * it), and the probe then rightly reads clean: it did run alone. At nice
 * 5 beside two nice-0 spinners per CPU its slice is under 2 ms and ends
 * at the next tick, so no round of 10 ms runs whole. */
#define PROBE_NICE 5

static void *probe_niced(void *arg)
{
    ntp_bandwidth_check *b = arg;
    if (setpriority(PRIO_PROCESS, (id_t)gettid(), PROBE_NICE) != 0)
        b->measured = false;
    else
        ntp__bandwidth_before(b);
    return NULL;
}

static const char topology[] = "<topology name=\"bw\" batch=\"1\">"
                               "<input name=\"x\" shape=\"${batch},64\" dtype=\"f32\"/>"
                               "<fc name=\"fc\" units=\"64\"/></topology>";

static int live(void)
{
    /* The ceiling as ntprof machine measures its DRAM level: every CPU,
     * 128 MiB, a warm-up round and seven rounds, the best. */
    ntp_ctx *ctx = ntp_ctx_init();
    ntp__team *tm = calloc(1, sizeof *tm);
    if (!ctx || !tm)
        return 1;
    ntp__team_cpus(tm, 0);
    int64_t ws = (int64_t)128 << 20;
    ntp__triad_rounds tr;
    if (ntp__triad_measure(ctx, tm, ws / tm->n, 1, true, 7, 0, &tr) != NTP_STATUS_OK) {
        printf("FAIL: the ceiling: %s\n", ntp_ctx_errmsg(ctx));
        return 1;
    }
    ntp_ceilings c;
    memset(&c, 0, sizeof c);
    c.threads = tm->n;
    c.n_levels = 1;
    snprintf(c.levels[0].level, sizeof c.levels[0].level, "DRAM");
    c.levels[0].working_set_bytes = 24 * tr.n * tm->n;
    c.level_spread[0].min = tr.gbps[0];
    for (int r = 0; r < tr.rounds; r++) {
        if (tr.gbps[r] > c.levels[0].gbps)
            c.levels[0].gbps = tr.gbps[r];
        if (tr.gbps[r] < c.level_spread[0].min)
            c.level_spread[0].min = tr.gbps[r];
    }
    int clean = 0;
    for (int r = 0; r < tr.rounds; r++)
        clean += tr.clean[r];
    printf("ceiling: %d of %d rounds clean\n", clean, tr.rounds);
    free(tm);
    /* The run's peak resident set must not hold the probe's arrays: the
     * high-water mark set back after the ceiling's own arrays. */
    int64_t base = ntp__rss_hwm_reset() ? ntp__rss_status_bytes("VmHWM") : 0;

    ntp_graph *g = NULL;
    ntp_run_result *r = NULL;
    ntp_run_opts o;
    test_live_opts(&o, "ref", 3, 0);
    o.ceilings = &c;
    o.bandwidth_probe = NTP_BANDWIDTH_PROBE_ON;
    if (!test_live_run(ctx, topology, "bw", &o, "ref", &g, &r))
        return 1;
    const ntp_bandwidth_check *b = &ntp_run_result_env(r)->contention.bandwidth;
    double ceil = c.levels[0].gbps;
    printf("ceiling %.2f GB/s (worst round %.2f) over %lld bytes on %d threads; probes %.2f and "
           "%.2f GB/s (%.0f%% and %.0f%%) over %lld bytes on %d threads in %.0f ms\n",
           ceil, c.level_spread[0].min, (long long)c.levels[0].working_set_bytes, c.threads,
           b->before_gbps, b->after_gbps, 100 * b->before_share, 100 * b->after_share,
           (long long)b->working_set_bytes, b->threads, 1e3 * b->cost_s);
    int rc = 0;
    if (!b->measured) {
        printf("FAIL: not measured: %s\n", b->reason);
        rc = 1;
    } else if (b->working_set_bytes != c.levels[0].working_set_bytes || b->threads != c.threads ||
               b->ceiling_gbps != ceil || fabs(b->before_share - b->before_gbps / ceil) > 1e-12 ||
               fabs(b->after_share - b->after_gbps / ceil) > 1e-12) {
        printf("FAIL: the probes did not use the ceiling's working set, threads and figure\n");
        rc = 1;
    } else {
        /* The same function over the same arrays: within a factor that
         * only a broken probe (a cache-sized set, bytes miscounted by a
         * pass or a thread) leaves. */
        for (int i = 0; i < 2 && rc == 0; i++) {
            double v = i ? b->after_gbps : b->before_gbps;
            if (!(v > 0.05 * ceil && v < 3 * ceil)) {
                double busy = test_others_busy(NULL);
                if (busy < 0 || busy >= 0.10) {
                    printf("SKIP: the machine is busy (others %.0f%%)\n", 100 * busy);
                    rc = 77;
                } else {
                    printf("FAIL: %s probe %.2f GB/s outside (0.05x, 3x) of %.2f\n",
                           i ? "after" : "before", v, ceil);
                    rc = 1;
                }
            }
        }
        /* The probe's cost is reported and bounded: 50 ms each plus one
         * round past it; a loaded machine may stretch it. */
        if (rc == 0 && !(b->cost_s > 0)) {
            printf("FAIL: no cost reported\n");
            rc = 1;
        }
        /* A probe on a quiet machine has a round with its threads on
         * their CPUs; beside two spinners per CPU it has none. */
        if (rc == 0 && (b->before_contended || b->after_contended)) {
            double busy = test_others_busy(NULL);
            if (busy < 0 || busy >= 0.10) {
                printf("SKIP: the machine is busy (others %.0f%%)\n", 100 * busy);
                rc = 77;
            } else {
                printf("FAIL: a probe on a quiet machine read contended\n");
                rc = 1;
            }
        }
        /* Without the kernel's run-queue wait a thread preempted before
         * its work starts looks clean (docs/machine.md): nothing to show. */
        if (rc == 0 && ntp__thread_run_delay_s() < 0) {
            printf("SKIP: /proc/thread-self/schedstat unreadable: a contended probe cannot be "
                   "told\n");
            rc = 77;
        }
        if (rc == 0) {
            long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
            int ns = ncpu > 0 && ncpu < 64 ? 2 * (int)ncpu : 4, started = 0;
            pthread_t th[128];
            atomic_store(&spin_stop, false);
            while (started < ns && pthread_create(&th[started], NULL, spin, NULL) == 0)
                started++;
            ntp_bandwidth_check busy = *b;
            busy.before_contended = false;
            double quiet = b->before_gbps > b->after_gbps ? b->before_gbps : b->after_gbps;
            int64_t mult = 1 + (int64_t)(0.010 * quiet * 1e9 / (double)b->working_set_bytes);
            busy.working_set_bytes *= mult > 16 ? 16 : mult;
            pthread_t pt;
            if (pthread_create(&pt, NULL, probe_niced, &busy) == 0)
                pthread_join(pt, NULL);
            else
                busy.measured = false;
            atomic_store(&spin_stop, true);
            for (int i = 0; i < started; i++)
                pthread_join(th[i], NULL);
            printf("beside %d spinners at nice %d over %lld bytes: %.2f GB/s, contended %s\n",
                   started, PROBE_NICE, (long long)busy.working_set_bytes, busy.before_gbps,
                   busy.before_contended ? "yes" : "no");
            if (started < ns || !busy.measured || !busy.before_contended) {
                printf("FAIL: a probe beside %d of %d spinners did not read contended\n", started,
                       ns);
                rc = 1;
            }
        }
        /* A 64x64 fc adds far less than half the probe's 128 MiB. */
        int64_t peak = ntp_run_result_memory(r)->peak_rss_bytes;
        printf("peak resident set %.1f MiB, %.1f MiB before the run\n", peak / 1048576.0,
               base / 1048576.0);
        if (rc == 0 && base > 0 && !(peak > 0 && peak < base + ws / 2)) {
            printf("FAIL: the peak resident set holds the probe's arrays\n");
            rc = 1;
        }
    }
    ntp_run_result_free(r);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "live") == 0)
        return live();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_judge),     cmocka_unit_test(test_judge_high),
        cmocka_unit_test(test_contended), cmocka_unit_test(test_placement),
        cmocka_unit_test(test_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
