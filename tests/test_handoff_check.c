/* Data handed between a run's CPUs (docs/run.md#handoff): sysfs CPU lists,
 * the judgement on hand-made probes and samples (ratio threshold, sysfs's
 * word, looks that disagree), the header's and the warning's words, the
 * split of a window's iterations by placement with medians worked by
 * hand, the plan's reasons, and (with the argument "live", its own ctest)
 * a pair of one CPU reading its own writes at its own speed and a real
 * run's probes and samples. */
#include <math.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/backend-impl.h"
#include "measure/machine-impl.h"
#include "measure/measure-impl.h"
#include "ntprof/ntprof.h"
#include "support/live-run.h"

static void test_cpu_list(void **state)
{
    (void)state;
    const char *list = "0-3,8,10-11\n";
    for (int c = 0; c < 14; c++)
        assert_int_equal(ntp__cpu_list_has(list, c), c <= 3 || c == 8 || c == 10 || c == 11);
    assert_int_equal(ntp__cpu_list_has("5", 5), 1);
    assert_int_equal(ntp__cpu_list_has("5", 4), 0);
    assert_int_equal(ntp__cpu_list_has("0-1", 1), 1);
    assert_int_equal(ntp__cpu_list_has("x", 0), -1);
    assert_int_equal(ntp__cpu_list_has("2-", 2), -1);
}

/* A probe of one pair (CPU 0 to 1) sysfs says shares a 32 MiB L3. */
static ntp_handoff_probe look(double ratio, int level)
{
    ntp_handoff_probe p;
    memset(&p, 0, sizeof p);
    p.ratio = ratio;
    p.own_gbps = 96.0;
    p.remote_gbps = 96.0 / ratio;
    p.cpu_from = 0;
    p.cpu_to = 1;
    p.sysfs_level = level;
    p.sysfs_bytes = level > 0 ? (int64_t)32 << 20 : 0;
    p.pairs_apart = ratio >= NTP_HANDOFF_APART_RATIO;
    return p;
}

static ntp_handoff_check check(double before, double after, int level)
{
    ntp_handoff_check h;
    memset(&h, 0, sizeof h);
    h.measured = true;
    h.bytes = (int64_t)2 << 20;
    h.pairs = 1;
    h.cost_s = 0.0125;
    h.before = look(before, level);
    h.after = look(after, level);
    return h;
}

static void test_judge(void **state)
{
    (void)state;
    char msg[1024];
    /* Together at both ends: no warning; the header's line. */
    ntp_handoff_check h = check(1.08, 1.1, 3);
    ntp__handoff_judge(&h);
    assert_false(h.apart);
    assert_false(ntp__handoff_warning(&h, msg, sizeof msg));
    assert_string_equal(msg, "");
    assert_true(ntp__handoff_line(&h, msg, sizeof msg));
    assert_string_equal(msg, "reading another CPU's writes took 1.08x the time of reading its own "
                             "before the window, no sample during (a window under 0.2 s), 1.10x "
                             "after (CPU 0 to 1, the slowest of 1 pair; sysfs: they share a 32 "
                             "MiB L3); the probes took 12 ms (2048 KiB each way)");
    /* Just below the threshold is together, at it apart. */
    h = check(1.99, 1.1, 3);
    ntp__handoff_judge(&h);
    assert_false(h.apart);
    h = check(2.0, 1.1, 3);
    ntp__handoff_judge(&h);
    assert_true(h.apart);

    /* Apart at both ends though sysfs says they share an L3. */
    h = check(3.5, 3.2, 3);
    ntp__handoff_judge(&h);
    assert_true(h.apart);
    assert_true(ntp__handoff_warning(&h, msg, sizeof msg));
    assert_string_equal(msg, "CPUs 0 and 1 did not share a cache before and after the measured "
                             "window, though sysfs says they share a 32 MiB L3: one read the "
                             "other's writes up to 3.5x slower than its own (on a virtual "
                             "machine the host ran them on different dies); layers that read "
                             "what another thread wrote may read up to that much slower, and "
                             "runs of this machine differ with the placement "
                             "(docs/run.md#handoff)");
    assert_float_equal(ntp_handoff_worst(&h), 3.5, 0);

    /* sysfs says they share nothing (two sockets): apart at both ends is
     * what the machine is, no warning; the line says sysfs agrees. */
    h = check(2.6, 2.5, 0);
    ntp__handoff_judge(&h);
    assert_false(h.apart);
    assert_true(ntp__handoff_line(&h, msg, sizeof msg));
    assert_non_null(strstr(msg, "sysfs: they share no cache"));
    /* ... but looks that disagree are a placement that changed. */
    h = check(2.6, 1.1, 0);
    ntp__handoff_judge(&h);
    assert_true(h.apart);
    assert_true(ntp__handoff_warning(&h, msg, sizeof msg));
    assert_non_null(strstr(msg, "CPUs 0 and 1 did not share a cache before the measured window: "
                                "one read the other's writes up to 2.6x slower"));
    /* A sample during the window counts as a look: apart in one of four
     * (sysfs silent: -1) disagrees with the probes. */
    h = check(1.1, 1.1, -1);
    h.samples = 4;
    h.samples_apart = 1;
    h.window_ratio = 3.25;
    ntp__handoff_judge(&h);
    assert_true(h.apart);
    assert_true(ntp__handoff_warning(&h, msg, sizeof msg));
    assert_non_null(strstr(msg, "did not share a cache in 1 of 4 samples during the measured "
                                "window: one read the other's writes up to 3.2x slower"));
    assert_true(ntp__handoff_line(&h, msg, sizeof msg));
    assert_non_null(strstr(msg, "before the window, up to 3.25x in 4 samples during (1 apart), "
                                "1.10x after"));
    assert_non_null(strstr(msg, "sysfs does not say"));
    /* Before, during and after. */
    h = check(3.0, 2.5, 3);
    h.samples = h.samples_apart = 2;
    h.window_ratio = 2.75;
    ntp__handoff_judge(&h);
    assert_true(ntp__handoff_warning(&h, msg, sizeof msg));
    assert_non_null(strstr(msg, "did not share a cache before, in 2 of 2 samples during and "
                                "after the measured window, though"));

    /* Not measured: no judgement, the reason in the header; a report from
     * before the probe says nothing. */
    memset(&h, 0, sizeof h);
    snprintf(h.reason, sizeof h.reason, "one thread: no layer hands data from one CPU to another");
    ntp__handoff_judge(&h);
    assert_false(h.apart);
    assert_true(ntp_handoff_worst(&h) == 0);
    assert_true(ntp__handoff_line(&h, msg, sizeof msg));
    assert_string_equal(msg, "n/a (one thread: no layer hands data from one CPU to another)");
    memset(&h, 0, sizeof h);
    assert_false(ntp__handoff_line(&h, msg, sizeof msg));
}

/* A window's n samples, each taken before iteration iter[i] with its
 * ratio, as ntp__handoff_window_tick leaves them. */
static void samples(ntp__handoff_window *w, const int *iter, const double *ratio, int n)
{
    memset(w, 0, sizeof *w);
    w->n = w->cap = n;
    w->iter = malloc((size_t)n * sizeof *w->iter);
    w->ratio = malloc((size_t)n * sizeof *w->ratio);
    assert_non_null(w->iter);
    assert_non_null(w->ratio);
    memcpy(w->iter, iter, (size_t)n * sizeof *iter);
    memcpy(w->ratio, ratio, (size_t)n * sizeof *ratio);
}

/* Judge a check whose looks split its iterations: warned (apart) or not
 * (unconfirmed), and its header line into msg. */
static void judged_split(ntp_handoff_check *h, bool apart, char *msg, size_t len)
{
    ntp__handoff_judge(h);
    assert_int_equal(h->apart, apart);
    assert_int_equal(h->unconfirmed, !apart);
    assert_int_equal(ntp__handoff_warning(h, msg, len), apart);
    assert_true(ntp__handoff_line(h, msg, len));
}

/* A window's iterations split by their latest look, medians by hand. */
static void test_window_split(void **state)
{
    (void)state;
    /* Iterations 0-1 under the probe before (together), 2-4 under a
     * sample apart taken before iteration 2, 5 under one together taken
     * before iteration 5; a last sample after the last iteration (7)
     * splits nothing. */
    const double e2e[6] = {5.0, 5.2, 8.5, 8.75, 8.4, 5.1};
    ntp_handoff_check h = check(1.1, 1.1, 3);
    ntp__handoff_window w;
    memset(&w, 0, sizeof w);
    w.n = w.cap = 3;
    w.iter = malloc(3 * sizeof *w.iter);
    w.ratio = malloc(3 * sizeof *w.ratio);
    w.buf = malloc(64);
    assert_non_null(w.iter);
    assert_non_null(w.ratio);
    w.iter[0] = 2, w.ratio[0] = 3.5;
    w.iter[1] = 5, w.ratio[1] = 1.2;
    w.iter[2] = 7, w.ratio[2] = 2.5;
    unsigned char apart[6];
    memset(apart, 9, sizeof apart);
    ntp__handoff_window_end(&h, &w, e2e, 6, apart);
    assert_null(w.buf);
    static const unsigned char want[6] = {0, 0, 1, 1, 1, 0};
    assert_memory_equal(apart, want, sizeof want);
    assert_int_equal(h.samples, 3);
    assert_int_equal(h.samples_apart, 2);
    assert_float_equal(h.window_ratio, 3.5, 0);
    assert_int_equal(h.together_n, 3); /* 5.0, 5.2, 5.1 */
    assert_float_equal(h.together_ms, 5.1, 0);
    assert_int_equal(h.apart_n, 3); /* 8.5, 8.75, 8.4 */
    assert_float_equal(h.apart_ms, 8.5, 0);
    ntp__handoff_judge(&h);
    assert_true(h.apart);
    char msg[1024];
    assert_true(ntp__handoff_warning(&h, msg, sizeof msg));
    assert_non_null(strstr(msg, "in 2 of 3 samples during the measured window, though sysfs says "
                                "they share a 32 MiB L3: one read the other's writes up to 3.5x "
                                "slower than its own (on a virtual machine the host ran them on "
                                "different dies); the end-to-end median is 5.1 ms over the 3 "
                                "iterations while they shared one and 8.5 ms over the 3 while "
                                "apart;"));

    /* Apart from the probe before on, no sample: all apart; an even
     * count's median is the mean of the middle two. */
    h = check(3.0, 3.0, 3);
    memset(&w, 0, sizeof w);
    unsigned char apart4[4];
    ntp__handoff_window_end(&h, &w, e2e, 4, apart4);
    assert_int_equal(h.samples, 0);
    assert_true(h.window_ratio == 0);
    assert_int_equal(h.together_n, 0);
    assert_true(h.together_ms == 0);
    assert_int_equal(h.apart_n, 4);
    assert_float_equal(h.apart_ms, (5.2 + 8.5) / 2, 1e-12);
    /* No split to tell when one placement held throughout. */
    ntp__handoff_judge(&h);
    assert_true(ntp__handoff_warning(&h, msg, sizeof msg));
    assert_null(strstr(msg, "end-to-end median"));
    assert_false(h.unconfirmed);

    /* Looks that disagree over iterations that ran alike (the Zen 5 VM's
     * samples: a look's ratio moves with the reader's own re-read): the
     * iterations under the apart looks, 5.3 5.4 5.2 (median 5.3), against
     * 5.0 5.2 5.1 (5.1) are 1.039x, under NTP_HANDOFF_SLOWER: no warning,
     * the header says why. */
    const double alike[6] = {5.0, 5.2, 5.3, 5.4, 5.2, 5.1};
    h = check(1.1, 1.1, 3);
    samples(&w, (const int[]){2, 5}, (const double[]){2.9, 1.3}, 2);
    ntp__handoff_window_end(&h, &w, alike, 6, apart);
    assert_memory_equal(apart, want, sizeof want);
    assert_float_equal(h.together_ms, 5.1, 0);
    assert_float_equal(h.apart_ms, 5.3, 0);
    judged_split(&h, false, msg, sizeof msg);
    assert_non_null(strstr(msg, "up to 2.90x in 2 samples during (1 apart), 1.10x after"));
    assert_non_null(strstr(msg, "; the 3 iterations under the looks that read apart took 5.3 ms "
                                "(end-to-end median, 95% interval 5.2-5.4), the 3 others 5.1 ms "
                                "(5-5.2): the run's time did not follow the looks, no warning "
                                "(docs/run.md#handoff)"));
    /* One look apart from iteration 2 on, over iterations 1.104x slower
     * under it (5.6 5.61 5.65 5.7: 5.63 against 5.1): the placement's,
     * warned. */
    const double slower[6] = {5.0, 5.2, 5.61, 5.7, 5.6, 5.65};
    h = check(1.1, 1.1, 3);
    samples(&w, (const int[]){2}, (const double[]){2.9}, 1);
    ntp__handoff_window_end(&h, &w, slower, 6, apart);
    assert_float_equal(h.apart_ms, 5.63, 1e-12);
    judged_split(&h, true, msg, sizeof msg);
    assert_null(strstr(msg, "did not follow"));
    /* Medians as far apart, 1.115x (5.8 against 5.2), from iterations
     * whose spread covers both: the together ones 5.0 5.2 6.0 (interval
     * 5.0-6.0 at three, min..max) against 5.75 5.8 5.9 — the noise of a
     * run whose CV is several percent (the clean clone's make run at
     * 20:23 warned on 1234 against 1078 ms, five and five iterations):
     * not warned. */
    const double noisy[6] = {5.0, 5.2, 5.8, 5.9, 5.75, 6.0};
    h = check(1.1, 1.1, 3);
    samples(&w, (const int[]){2, 5}, (const double[]){2.9, 1.3}, 2);
    ntp__handoff_window_end(&h, &w, noisy, 6, apart);
    assert_float_equal(h.together_ms, 5.2, 0);
    assert_float_equal(h.together_lo, 5.0, 0);
    assert_float_equal(h.together_hi, 6.0, 0);
    assert_float_equal(h.apart_ms, 5.8, 0);
    assert_float_equal(h.apart_lo, 5.75, 0);
    assert_float_equal(h.apart_hi, 5.9, 0);
    judged_split(&h, false, msg, sizeof msg);
    assert_non_null(strstr(msg, "took 5.8 ms (end-to-end median, 95% interval 5.75-5.9), the 3 "
                                "others 5.2 ms (5-6)"));
    /* The together iteration at 6.0 back to 5.1: the intervals part
     * (5.75 over 5.2), warned. */
    const double parted[6] = {5.0, 5.2, 5.8, 5.9, 5.75, 5.1};
    h = check(1.1, 1.1, 3);
    samples(&w, (const int[]){2, 5}, (const double[]){2.9, 1.3}, 2);
    ntp__handoff_window_end(&h, &w, parted, 6, apart);
    assert_float_equal(h.together_hi, 5.2, 0);
    judged_split(&h, true, msg, sizeof msg);
}

/* Each row's median under each placement: 6 iterations of 2 rows, the
 * placements of the window above (0-1 and 5 together, 2-4 apart). */
static void test_split_rows(void **state)
{
    (void)state;
    static const double lt[6 * 2] = {1.0, 10, 1.25, 11, 4.0, 9, 3.0, 8, 3.5, 7.5, 1.5, 12};
    static const unsigned char apart[6] = {0, 0, 1, 1, 1, 0};
    ntp_layer_result rows[2];
    memset(rows, 0, sizeof rows);
    ntp__handoff_split_rows(lt, 2, apart, 6, rows);
    assert_float_equal(rows[0].together_ms, 1.25, 0); /* 1.0 1.25 1.5 */
    assert_float_equal(rows[0].apart_ms, 3.5, 0);     /* 4.0 3.0 3.5 */
    assert_float_equal(rows[1].together_ms, 11, 0);   /* 10 11 12 */
    assert_float_equal(rows[1].apart_ms, 8, 0);       /* 9 8 7.5 */
    /* One placement throughout: the other has no median. */
    static const unsigned char all[6] = {1, 1, 1, 1, 1, 1};
    ntp__handoff_split_rows(lt, 2, all, 6, rows);
    assert_true(rows[0].together_ms == 0);
    assert_float_equal(rows[0].apart_ms, (1.5 + 3.0) / 2, 1e-12);
    /* No placements: untouched. */
    rows[1].apart_ms = 42;
    ntp__handoff_split_rows(lt, 2, NULL, 6, rows);
    assert_float_equal(rows[1].apart_ms, 42, 0);
}

static void test_plan(void **state)
{
    (void)state;
    ntp_handoff_check h;
    ntp__handoff_plan(NTP_BANDWIDTH_PROBE_OFF, 0, &h);
    assert_false(h.measured);
    assert_string_equal(h.reason, "off (ntp_run_opts.bandwidth_probe)");
    ntp__handoff_plan(NTP_BANDWIDTH_PROBE_ON, 1, &h);
    assert_false(h.measured);
    assert_string_equal(h.reason, "one thread: no layer hands data from one CPU to another");
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    int ncpu = CPU_COUNT(&set);
    /* auto probes whatever the window's length (min_time_s 0 here). */
    ntp__handoff_plan(NTP_BANDWIDTH_PROBE_AUTO, 0, &h);
    if (ncpu < 2) {
        assert_false(h.measured);
        assert_string_equal(h.reason, "one CPU: no layer hands data from one CPU to another");
        skip();
    }
    assert_true(h.measured);
    assert_int_equal(h.pairs, ncpu - 1 < 7 ? ncpu - 1 : 7);
    /* Twice an L2 (2 MiB where sysfs does not say), a whole number of
     * lines. */
    assert_true(h.bytes >= (int64_t)64 << 10 && h.bytes <= (int64_t)64 << 20);
    assert_int_equal(h.bytes % 64, 0);
}

/* --- live --------------------------------------------------------------------------- */

static const char topology[] = "<topology name=\"ho\" batch=\"1\">"
                               "<input name=\"x\" shape=\"${batch},256\" dtype=\"f32\"/>"
                               "<fc name=\"fc1\" units=\"256\"/><relu name=\"r\"/>"
                               "<fc name=\"fc2\" units=\"256\"/></topology>";

static int live(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) < 2) {
        printf("SKIP: one CPU: nothing to hand over\n");
        return 77;
    }
    int a = -1;
    for (int c = 0; c < CPU_SETSIZE && a < 0; c++)
        if (CPU_ISSET(c, &set))
            a = c;
    /* One CPU writing and reading its own buffer: both reads find it in
     * the same caches, whatever the host does with the other CPUs. Three
     * tries: a tick of another process in a read moves one median. */
    int rc = 0;
    double same = 0;
    for (int t = 0; t < 3 && !(same > 0.75 && same < 1.33); t++)
        same = ntp__handoff_pair_ratio(a, a, (int64_t)2 << 20);
    printf("CPU %d to itself: %.3fx\n", a, same);
    if (!(same > 0.75 && same < 1.33)) {
        printf("FAIL: a CPU read its own writes at %.3fx its own speed\n", same);
        rc = 1;
    }

    /* A backend with a pool of threads: the reference backend runs on the
     * calling thread, and its run says so. */
    const char *pooled = NULL;
    static const char *const names[] = {"onednn", "xnnpack", "blas"};
    for (int i = 0; i < 3 && !pooled; i++)
        if (ntp__backend_find(names[i]))
            pooled = names[i];
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = NULL;
    ntp_run_result *r = NULL;
    ntp_run_opts o;
    test_live_opts(&o, "ref", 1, 0);
    if (!test_live_run(ctx, topology, "ho", &o, "ref", &g, &r))
        return 1;
    const char *why = ntp_run_result_env(r)->contention.handoff.reason;
    if (ntp_run_result_env(r)->contention.handoff.measured ||
        strcmp(why, "one thread: no layer hands data from one CPU to another") != 0) {
        printf("FAIL: a run on the reference backend alone probed (reason '%s')\n", why);
        rc = 1;
    }
    ntp_run_result_free(r);
    r = NULL;
    if (!pooled) {
        printf("SKIP: no backend with a thread pool in this build\n");
        ntp_graph_free(g);
        ntp_ctx_free(ctx);
        return rc ? rc : 77;
    }
    test_live_opts(&o, pooled, 3, 0.5); /* each pass: a window of at least 1 s */
    o.bandwidth_probe = NTP_BANDWIDTH_PROBE_AUTO;
    if (!test_live_run(ctx, topology, "ho", &o, pooled, &g, &r))
        return 1;
    const ntp_handoff_check *h = &ntp_run_result_env(r)->contention.handoff;
    int n = ntp_run_result_end_to_end_ms(r)->n;
    char line[512];
    ntp__handoff_line(h, line, sizeof line);
    printf("%s\n", line);
    if (!h->measured) {
        printf("FAIL: not measured: %s\n", h->reason);
        rc = 1;
    } else {
        const ntp_handoff_probe *p[2] = {&h->before, &h->after};
        for (int i = 0; i < 2; i++)
            if (!(p[i]->ratio > 0 && p[i]->own_gbps > 0 && p[i]->remote_gbps > 0) ||
                p[i]->cpu_from != a || !CPU_ISSET(p[i]->cpu_to, &set) || p[i]->cpu_to == a) {
                printf("FAIL: the probe %s: ratio %.3f, CPUs %d to %d\n", i ? "after" : "before",
                       p[i]->ratio, p[i]->cpu_from, p[i]->cpu_to);
                rc = 1;
            }
        /* A window of over 1 s sampled every 0.2 s; every measured
         * iteration is under one placement or the other. */
        if (h->samples < 3 || h->samples_apart > h->samples || h->together_n + h->apart_n != n) {
            printf("FAIL: %d samples (%d apart); %d + %d iterations split of %d\n", h->samples,
                   h->samples_apart, h->together_n, h->apart_n, n);
            rc = 1;
        }
        if (!(h->cost_s > 0)) {
            printf("FAIL: no cost reported\n");
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
        cmocka_unit_test(test_cpu_list),     cmocka_unit_test(test_judge),
        cmocka_unit_test(test_window_split), cmocka_unit_test(test_split_rows),
        cmocka_unit_test(test_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
