/* The CPUs' pace around a run (docs/run.md#pace): the judgement on
 * hand-made looks and iterations with medians worked by hand (a one-thread
 * run under the CPU each iteration ended on, a threaded one under the
 * slowest CPU, the run's time as the judge), the header's and the
 * warning's words, the plan's reasons, and (with the argument "live", its
 * own ctest) each CPU's reading and a real run's looks. */
#include <math.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "measure/measure-impl.h"
#include "ntprof/ntprof.h"
#include "support/live-run.h"

/* A check of CPUs 0 and 1 as the plan leaves it. */
static ntp_pace_check planned(bool one_thread)
{
    ntp_pace_check p;
    memset(&p, 0, sizeof p);
    p.measured = true;
    p.n_cpus = 2;
    p.cpu[0] = 0;
    p.cpu[1] = 1;
    p.one_thread = one_thread;
    return p;
}

/* Three looks of CPUs 0 and 1 (GFLOP/s): before iteration 0 CPU 1 slowed
 * (30 of the best 43: 0.70x, under 0.87 x 43 = 37.41), before iteration 3
 * both near their best, after the last (6) both at it. */
static double looks[3 * NTP_PACE_MAX_CPUS];
static const int look_iter[3] = {0, 3, 6};
/* Iterations 0 and 1 ended on CPU 1 (slowed), 2 on CPU 0, then 1, 1, 0. */
static const int iter_cpu[6] = {1, 1, 0, 1, 1, 0};
static const double e2e[6] = {2.4, 2.3, 1.7, 1.8, 1.75, 1.72};

static void set_looks(void)
{
    memset(looks, 0, sizeof looks);
    looks[0] = 42, looks[1] = 30;
    looks[NTP_PACE_MAX_CPUS] = 41, looks[NTP_PACE_MAX_CPUS + 1] = 40;
    looks[2 * NTP_PACE_MAX_CPUS] = 43, looks[2 * NTP_PACE_MAX_CPUS + 1] = 42;
}

/* A one-thread run: each iteration under its CPU's latest look. */
static void test_one_thread(void **state)
{
    (void)state;
    set_looks();
    ntp_pace_check p = planned(true);
    ntp__pace_judge(&p, looks, look_iter, 3, e2e, iter_cpu, 6);
    assert_int_equal(p.looks, 3);
    assert_float_equal(p.best, 43, 0);
    assert_float_equal(p.low[0], 41, 0);
    assert_float_equal(p.high[0], 43, 0);
    assert_float_equal(p.low[1], 30, 0);
    assert_float_equal(p.high[1], 42, 0);
    assert_int_equal(p.slow_looks, 1);
    assert_int_equal(ntp_pace_slowest(&p), 1);
    /* Slowed: iterations 0 and 1 (CPU 1 under the first look), 2.4 2.3:
     * median 2.35, interval min..max; the others 1.7 1.8 1.75 1.72:
     * median (1.72 + 1.75) / 2 = 1.735, 1.7-1.8. 2.35 is 1.354x and 2.3
     * clears 1.8: warned. */
    assert_int_equal(p.slow_n, 2);
    assert_float_equal(p.slow_ms, 2.35, 1e-12);
    assert_float_equal(p.slow_lo, 2.3, 0);
    assert_float_equal(p.slow_hi, 2.4, 0);
    assert_int_equal(p.clear_n, 4);
    assert_float_equal(p.clear_ms, 1.735, 1e-12);
    assert_float_equal(p.clear_lo, 1.7, 0);
    assert_float_equal(p.clear_hi, 1.8, 0);
    assert_true(p.slowed);
    assert_false(p.unconfirmed);
    char msg[1024];
    assert_true(ntp__pace_warning(&p, msg, sizeof msg));
    if (!strstr(msg, "CPU 1 ran slowed: its pace read down to 0.70x the run's best look (30.0 "
                     "GFLOP/s against 43.0), and the 2 iterations under looks under 0.87x took "
                     "2.35 ms end-to-end median (95% interval 2.3-2.4) against 1.735 ms "
                     "(1.7-1.8) over the 4 others;"))
        fail_msg("the warning: %s", msg);
    assert_true(ntp__pace_line(&p, msg, sizeof msg));
    if (!strstr(msg, "CPU 0 41.0-43.0, CPU 1 30.0-42.0 GFLOP/s, slowest to fastest look") ||
        !strstr(msg, "(3 looks: at the window's start, every 0.2 s between iterations, after; "
                     "each iteration under the CPU it ended on); 1 read a CPU under 0.87x the "
                     "best; the 2 iterations under them took 2.35 ms (end-to-end median, 95% "
                     "interval 2.3-2.4), the 4 others 1.735 ms (1.7-1.8); the looks took 0 ms"))
        fail_msg("the line: %s", msg);

    /* One iteration on the slowed CPU (2.4 against 2.3 1.7 1.8 1.75 1.72:
     * median 1.75, interval min..max up to 2.3): warned, in the
     * singular. */
    static const int once[6] = {1, 0, 0, 0, 0, 0};
    p = planned(true);
    ntp__pace_judge(&p, looks, look_iter, 3, e2e, once, 6);
    assert_int_equal(p.slow_n, 1);
    assert_true(p.slowed);
    assert_true(ntp__pace_warning(&p, msg, sizeof msg));
    assert_non_null(strstr(msg, "and the 1 iteration under looks under 0.87x took 2.4 ms"));
    assert_non_null(strstr(msg, "over the 5 others;"));

    /* Where the CPU an iteration ended on is not known (-1) or not looked
     * at (5), the slowest CPU's look stands for it: iteration 2 joins the
     * slowed ones (2.4 2.3 1.7: median 2.3, interval 1.7-2.4 over the
     * others' 1.8): not warned. */
    static const int unknown[6] = {1, 1, -1, 1, 1, 5};
    p = planned(true);
    ntp__pace_judge(&p, looks, look_iter, 3, e2e, unknown, 6);
    assert_int_equal(p.slow_n, 3);
    assert_float_equal(p.slow_ms, 2.3, 0);
    assert_false(p.slowed);
    assert_true(p.unconfirmed);
    assert_false(p.throughout);
}

/* A one-thread run whose every iteration ended on the slowed CPU: slowed
 * throughout, warned without a split; a threaded one under the same looks
 * is not (its workers may read the looks low). */
static void test_throughout(void **state)
{
    (void)state;
    /* CPU 1 reads 30, 31, 32 against CPU 0's 42, 41, 43 (the best 43:
     * under 0.87 x 43 = 37.41 in each look), as the 13:27 window's
     * reference runs read CPU 0 on 2026-12-06. */
    set_looks();
    looks[NTP_PACE_MAX_CPUS + 1] = 31, looks[2 * NTP_PACE_MAX_CPUS + 1] = 32;
    static const int on1[6] = {1, 1, 1, 1, 1, 1};
    ntp_pace_check p = planned(true);
    ntp__pace_judge(&p, looks, look_iter, 3, e2e, on1, 6);
    assert_int_equal(p.slow_looks, 3);
    assert_int_equal(p.slow_n, 6);
    assert_int_equal(p.clear_n, 0);
    assert_false(p.slowed || p.unconfirmed);
    assert_true(p.throughout);
    char msg[1024];
    assert_true(ntp__pace_warning(&p, msg, sizeof msg));
    if (!strstr(msg, "CPU 1 ran slowed throughout: each of the run's 6 iterations ran under a "
                     "look of its CPU under 0.87x the run's best (CPU 1 read 30.0-32.0 GFLOP/s, "
                     "the best look 43.0, CPU 0's); nothing in the run ran clear to time "
                     "against") ||
        !strstr(msg, "not the model's; --pin 0 runs it again on the CPU that read the best "
                     "(docs/run.md#pace)"))
        fail_msg("the warning: %s", msg);
    assert_true(ntp__pace_line(&p, msg, sizeof msg));
    assert_non_null(strstr(msg, "every iteration ran under them (a one-thread run: slowed "
                                "throughout, warned)"));
    /* The same looks, the iterations on CPU 0: all clear. */
    static const int on0[6] = {0, 0, 0, 0, 0, 0};
    p = planned(true);
    ntp__pace_judge(&p, looks, look_iter, 3, e2e, on0, 6);
    assert_int_equal(p.clear_n, 6);
    assert_false(p.throughout);
    assert_false(ntp__pace_warning(&p, msg, sizeof msg));
    /* One iteration on CPU 0: a split, judged by the run's time (1.7
     * against 2.4 2.3 1.8 1.75 1.72: not slower), no longer throughout. */
    static const int once0[6] = {1, 1, 0, 1, 1, 1};
    p = planned(true);
    ntp__pace_judge(&p, looks, look_iter, 3, e2e, once0, 6);
    assert_int_equal(p.clear_n, 1);
    assert_false(p.throughout);
    /* One CPU looked at (a run pinned to it), slowed under every look
     * before an iteration and at its best after the last: warned, with no
     * other CPU to pin it to. */
    ntp_pace_check one = planned(true);
    one.n_cpus = 1;
    static const double own[3 * NTP_PACE_MAX_CPUS] = {
        [0] = 30, [NTP_PACE_MAX_CPUS] = 31, [2 * NTP_PACE_MAX_CPUS] = 42};
    ntp__pace_judge(&one, own, look_iter, 3, e2e, on0, 6);
    assert_true(one.throughout);
    assert_true(ntp__pace_warning(&one, msg, sizeof msg));
    assert_non_null(strstr(msg, "the best look 42.0, CPU 0's);"));
    assert_non_null(strstr(msg, "not the model's (docs/run.md#pace)"));
    assert_null(strstr(msg, "--pin"));
    /* Threaded: every iteration under the slowest CPU, not judged. */
    p = planned(false);
    ntp__pace_judge(&p, looks, look_iter, 3, e2e, on1, 6);
    assert_int_equal(p.clear_n, 0);
    assert_false(p.throughout || p.slowed);
    assert_false(ntp__pace_warning(&p, msg, sizeof msg));
}

/* A threaded run: each iteration under the slowest CPU, the run's time the
 * judge. */
static void test_threaded(void **state)
{
    (void)state;
    set_looks();
    ntp_pace_check p = planned(false);
    ntp__pace_judge(&p, looks, look_iter, 3, e2e, iter_cpu, 6);
    /* Iterations 0-2 under the first look (CPU 1 at 30): 2.4 2.3 1.7,
     * median 2.3 (1.7-2.4); 3-5: 1.8 1.75 1.72, median 1.75 (1.72-1.8).
     * 1.314x, but the intervals overlap: the run's time did not follow. */
    assert_int_equal(p.slow_n, 3);
    assert_float_equal(p.slow_ms, 2.3, 0);
    assert_float_equal(p.slow_lo, 1.7, 0);
    assert_int_equal(p.clear_n, 3);
    assert_float_equal(p.clear_ms, 1.75, 0);
    assert_float_equal(p.clear_hi, 1.8, 0);
    assert_false(p.slowed);
    assert_true(p.unconfirmed);
    char msg[1024];
    assert_false(ntp__pace_warning(&p, msg, sizeof msg));
    assert_string_equal(msg, "");
    assert_true(ntp__pace_line(&p, msg, sizeof msg));
    assert_non_null(strstr(msg, "each iteration under the slowest CPU"));
    assert_non_null(strstr(msg, "the 3 others 1.75 ms (1.72-1.8): the run's time did not follow "
                                "the looks, no warning;"));

    /* Iterations 1.09x slower under the slowed look, intervals apart
     * (2.18 2.2 2.19 against 2.0 2.01 2.02): under NTP_HANDOFF_SLOWER, not
     * warned; at 1.109x (2.22 2.23 2.24: median 2.23 against 2.01) warned. */
    static const double near[6] = {2.18, 2.2, 2.19, 2.0, 2.01, 2.02};
    p = planned(false);
    ntp__pace_judge(&p, looks, look_iter, 3, near, iter_cpu, 6);
    assert_true(p.unconfirmed);
    static const double past[6] = {2.22, 2.23, 2.24, 2.0, 2.01, 2.02};
    p = planned(false);
    ntp__pace_judge(&p, looks, look_iter, 3, past, iter_cpu, 6);
    assert_true(p.slowed);

    /* CPU 1 slowed in every look before an iteration: every iteration
     * under them, nothing to split, no warning, and the line says so. */
    looks[NTP_PACE_MAX_CPUS + 1] = 35;
    p = planned(false);
    ntp__pace_judge(&p, looks, look_iter, 3, e2e, iter_cpu, 6);
    assert_int_equal(p.slow_looks, 2);
    assert_int_equal(p.slow_n, 6);
    assert_int_equal(p.clear_n, 0);
    assert_false(p.slowed || p.unconfirmed);
    assert_true(ntp__pace_line(&p, msg, sizeof msg));
    assert_non_null(strstr(msg, "2 read a CPU under 0.87x the best; every iteration ran under "
                                "them; the looks took"));
    /* No look under the bar: no split, all clear. */
    set_looks();
    looks[1] = 38; /* 0.884x of 43 */
    p = planned(false);
    ntp__pace_judge(&p, looks, look_iter, 3, e2e, iter_cpu, 6);
    assert_int_equal(p.slow_looks, 0);
    assert_int_equal(p.clear_n, 6);
    assert_false(p.slowed || p.unconfirmed);
}

static void test_plan(void **state)
{
    (void)state;
    ntp_pace_check p;
    ntp__pace_plan(NTP_BANDWIDTH_PROBE_OFF, 2, &p);
    assert_false(p.measured);
    assert_string_equal(p.reason, "off (ntp_run_opts.bandwidth_probe)");
    char line[256];
    assert_true(ntp__pace_line(&p, line, sizeof line));
    assert_string_equal(line, "n/a (off (ntp_run_opts.bandwidth_probe))");
    /* The CPUs of the process's set, the first NTP_PACE_MAX_CPUS. */
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    ntp__pace_plan(NTP_BANDWIDTH_PROBE_AUTO, 1, &p);
    assert_true(p.measured);
    assert_true(p.one_thread);
    int want = CPU_COUNT(&set) < NTP_PACE_MAX_CPUS ? CPU_COUNT(&set) : NTP_PACE_MAX_CPUS;
    assert_int_equal(p.n_cpus, want);
    for (int c = 0; c < p.n_cpus; c++)
        assert_true(CPU_ISSET(p.cpu[c], &set));
    ntp__pace_plan(NTP_BANDWIDTH_PROBE_ON, 4, &p);
    assert_false(p.one_thread);
    /* A report from before the looks: nothing to say. */
    memset(&p, 0, sizeof p);
    assert_false(ntp__pace_line(&p, line, sizeof line));
}

/* --- live --------------------------------------------------------------------------- */

static const char topology[] = "<topology name=\"pace\" batch=\"1\">"
                               "<input name=\"x\" shape=\"${batch},256\" dtype=\"f32\"/>"
                               "<fc name=\"fc1\" units=\"256\"/><relu name=\"r\"/>"
                               "<fc name=\"fc2\" units=\"256\"/></topology>";

static int live(void)
{
    int rc = 0;
    ntp_pace_check p;
    ntp__pace_plan(NTP_BANDWIDTH_PROBE_AUTO, 1, &p);
    /* Each CPU's reading: a short kernel of about 16 multiply-adds per
     * store-to-load round; well over 1 GFLOP/s on anything that runs this
     * suite, and under what a core's multiply-add units could do (a few
     * hundred). */
    double g[NTP_PACE_MAX_CPUS];
    if (!ntp__pace_read(p.cpu, p.n_cpus, g)) {
        printf("FAIL: a look could not run\n");
        return 1;
    }
    for (int c = 0; c < p.n_cpus; c++) {
        printf("CPU %d: %.1f GFLOP/s\n", p.cpu[c], g[c]);
        if (!(g[c] > 1 && g[c] < 2000)) {
            printf("FAIL: CPU %d read %.3f GFLOP/s\n", p.cpu[c], g[c]);
            rc = 1;
        }
    }

    /* A real run on the reference backend (one thread): a window of at
     * least 1 s, looked at every 0.2 s, every iteration judged. */
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g0 = NULL;
    ntp_run_result *r = NULL;
    ntp_run_opts o;
    test_live_opts(&o, "ref", 3, 0.5);
    if (!test_live_run(ctx, topology, "pace", &o, "ref", &g0, &r))
        return 1;
    const ntp_pace_check *q = &ntp_run_result_env(r)->contention.pace;
    int n = ntp_run_result_end_to_end_ms(r)->n;
    char line[1024];
    ntp__pace_line(q, line, sizeof line);
    printf("%s\n", line);
    if (!q->measured || !q->one_thread || q->n_cpus != p.n_cpus) {
        printf("FAIL: measured %d, one thread %d, %d CPUs (want %d): %s\n", q->measured,
               q->one_thread, q->n_cpus, p.n_cpus, q->reason);
        rc = 1;
    } else {
        if (q->looks < 4 || q->slow_n + q->clear_n != n || !(q->cost_s > 0) ||
            q->slow_looks > q->looks) {
            printf("FAIL: %d looks (%d slow), %d + %d iterations of %d, cost %.4f s\n", q->looks,
                   q->slow_looks, q->slow_n, q->clear_n, n, q->cost_s);
            rc = 1;
        }
        double best = 0;
        for (int c = 0; c < q->n_cpus; c++) {
            if (!(q->low[c] > 1 && q->low[c] <= q->high[c]))
                rc = 1, printf("FAIL: CPU %d %.1f-%.1f\n", q->cpu[c], q->low[c], q->high[c]);
            if (q->high[c] > best)
                best = q->high[c];
        }
        if (q->best != best)
            rc = 1, printf("FAIL: best %.1f, the CPUs' highest %.1f\n", q->best, best);
    }
    ntp_run_result_free(r);
    r = NULL;
    /* Off with the bandwidth probe. */
    o.bandwidth_probe = NTP_BANDWIDTH_PROBE_OFF;
    o.min_time_s = 0;
    if (!test_live_run(ctx, topology, "pace", &o, "ref", &g0, &r))
        return 1;
    q = &ntp_run_result_env(r)->contention.pace;
    if (q->measured || strcmp(q->reason, "off (ntp_run_opts.bandwidth_probe)") != 0) {
        printf("FAIL: looked with the probes off (reason '%s')\n", q->reason);
        rc = 1;
    }
    ntp_run_result_free(r);
    ntp_graph_free(g0);
    ntp_ctx_free(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "live") == 0)
        return live();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_thread),
        cmocka_unit_test(test_threaded),
        cmocka_unit_test(test_throughout),
        cmocka_unit_test(test_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
