/* Contention (docs/run.md#contention): the /proc/stat arithmetic on
 * hand-made snapshots, then real runs, one beside two busy-looping child
 * processes, which must be reported and warned about, and (with the
 * argument "quiet", its own ctest that skips with 77 on a busy machine)
 * one on a quiet machine, which must not. */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "measure/measure-impl.h"
#include "ntprof/ntprof.h"
#include "support/busy.h"
#include "support/models.h"

/* Two CPUs, ticks as the kernel writes them: user nice system idle iowait
 * irq softirq steal guest guest_nice. The aggregate "cpu" line must not
 * be counted again. */
static const char stat_a[] = "cpu  1000 0 500 8000 100 0 0 0 0 0\n"
                             "cpu0 600 0 300 4000 50 0 0 0 0 0\n"
                             "cpu1 400 0 200 4000 50 0 0 0 0 0\n"
                             "intr 12345 0 0 0\n"
                             "ctxt 999\n";
/* One second later at 100 ticks per second: cpu0 fully busy (user 70,
 * system 20, irq 5, softirq 5), cpu1 half busy (nice 30, system 20) and
 * 10 ticks stolen; iowait counts as idle. */
static const char stat_b[] = "cpu  1150 30 540 8040 110 5 5 10 0 0\n"
                             "cpu0 670 0 320 4000 50 5 5 0 0 0\n"
                             "cpu1 400 30 220 4040 60 0 0 10 0 0\n"
                             "intr 23456 0 0 0\n";

static void test_parse(void **state)
{
    (void)state;
    ntp__cpu_times t;
    assert_true(ntp__proc_stat_parse(stat_a, NULL, &t));
    assert_int_equal(t.cpus, 2);
    assert_int_equal(t.busy, 1500); /* 600+300 + 400+200, not the "cpu" line again */
    assert_int_equal(t.idle, 8100);
    assert_int_equal(t.steal, 0);
    assert_true(ntp__proc_stat_parse(stat_b, NULL, &t));
    assert_int_equal(t.busy, 670 + 320 + 5 + 5 + 400 + 30 + 220);
    assert_int_equal(t.idle, 4050 + 4100);
    assert_int_equal(t.steal, 10);

    /* Only the CPUs of the set: a run pinned to CPU 1. */
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(1, &set);
    assert_true(ntp__proc_stat_parse(stat_b, &set, &t));
    assert_int_equal(t.cpus, 1);
    assert_int_equal(t.busy, 650);
    assert_int_equal(t.steal, 10);
    /* A set with no line in the text. */
    CPU_ZERO(&set);
    CPU_SET(7, &set);
    assert_false(ntp__proc_stat_parse(stat_b, &set, &t));

    /* Kernels before 2.6.11 write four fields and no steal. */
    assert_true(ntp__proc_stat_parse("cpu0 10 20 30 40\n", NULL, &t));
    assert_int_equal(t.busy, 60);
    assert_int_equal(t.idle, 40);
    assert_int_equal(t.steal, 0);
    /* Malformed: too few fields, a cpu number that is not one, no cpuN. */
    assert_false(ntp__proc_stat_parse("cpu0 10 20 30\n", NULL, &t));
    assert_false(ntp__proc_stat_parse("cpu0x 10 20 30 40\n", NULL, &t));
    assert_false(ntp__proc_stat_parse("cpu  10 20 30 40\nintr 5\n", NULL, &t));
    assert_false(ntp__proc_stat_parse("", NULL, &t));

    double avg[3];
    assert_true(ntp__loadavg_parse("3.77 1.97 1.05 8/143 17788\n", avg));
    assert_true(avg[0] == 3.77 && avg[1] == 1.97 && avg[2] == 1.05);
    assert_false(ntp__loadavg_parse("3.77 x\n", avg));
}

static void test_compute(void **state)
{
    (void)state;
    ntp__cpu_times a, b;
    assert_true(ntp__proc_stat_parse(stat_a, NULL, &a));
    assert_true(ntp__proc_stat_parse(stat_b, NULL, &b));
    /* Busy 1.5 s of 2 CPU-seconds; this process used 0.5 s of it: other
     * processes took (1.5 - 0.5) / 2 = 50%, the hypervisor 0.1 / 2 = 5%. */
    ntp_contention c;
    ntp__contention_compute(&a, &b, 0.5, 1.0, 100.0, &c);
    assert_true(c.measured);
    assert_int_equal(c.cpus, 2);
    assert_true(fabs(c.other - 0.50) < 1e-12);
    assert_true(fabs(c.steal - 0.05) < 1e-12);
    assert_true(fabs(c.own - 0.25) < 1e-12);
    assert_true(fabs(c.resolution - 0.02) < 1e-12);
    assert_true(c.distorted);
    char msg[256];
    c.load_average = 2.5;
    assert_true(ntp__contention_warning(&c, msg, sizeof msg));
    assert_string_equal(msg, "other processes used 50% of the CPU during measurement (load "
                             "average 2.50 at start) and the hypervisor took 5% (steal); figures "
                             "may be distorted");

    /* This process used all the busy time: nobody else ran. Its precise
     * clock may exceed the ticks counted: clamped at 0, not negative. */
    ntp__contention_compute(&a, &b, 1.6, 1.0, 100.0, &c);
    assert_true(c.other == 0.0);
    assert_false(c.distorted);
    assert_false(ntp__contention_warning(&c, msg, sizeof msg));
    assert_string_equal(msg, "");

    /* Near the threshold the resolution decides: other 10% over 1 s
     * (+-2%) is not enough, nor 11.5%; 12.5% is. */
    ntp__cpu_times q0 = {.busy = 0, .idle = 0, .steal = 0, .cpus = 2};
    ntp__cpu_times q1 = {.busy = 20, .idle = 180, .steal = 0, .cpus = 2};
    ntp__contention_compute(&q0, &q1, 0.0, 1.0, 100.0, &c);
    assert_true(fabs(c.other - 0.10) < 1e-12);
    assert_false(c.distorted);
    q1.busy = 23;
    ntp__contention_compute(&q0, &q1, 0.0, 1.0, 100.0, &c);
    assert_false(c.distorted);
    q1.busy = 25;
    ntp__contention_compute(&q0, &q1, 0.0, 1.0, 100.0, &c);
    assert_true(c.distorted);
    /* A window of 5 ms cannot resolve a tick: one tick (10 ms) reads as
     * all of 2 CPUs x 5 ms, and the resolution (+-400%) says so: not
     * judged distorted. */
    q1.busy = 1;
    ntp__contention_compute(&q0, &q1, 0.0, 0.005, 100.0, &c);
    assert_true(fabs(c.other - 1.0) < 1e-12);
    assert_true(fabs(c.resolution - 4.0) < 1e-12);
    assert_false(c.distorted);
    /* Counters that went backwards, CPUs that changed: not measured. */
    ntp__contention_compute(&q1, &q0, 0.0, 1.0, 100.0, &c);
    assert_false(c.measured);
    assert_true(strlen(c.reason) > 0);
    q1.cpus = 1;
    ntp__contention_compute(&q0, &q1, 0.0, 1.0, 100.0, &c);
    assert_false(c.measured);
}

/* --- real runs ---------------------------------------------------------------------- */

static pid_t busy[2];

/* A busy-looping child, bounded: it dies with its parent and after two
 * minutes in any case. */
static pid_t start_busy(void)
{
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        alarm(120);
        for (volatile unsigned long i = 0;; i++)
            ;
    }
    return p;
}

static void stop_busy(void)
{
    for (int i = 0; i < 2; i++)
        if (busy[i] > 0) {
            kill(busy[i], SIGKILL);
            waitpid(busy[i], NULL, 0);
            busy[i] = 0;
        }
}

/* The result points into the graph: free it after the result. */
static ntp_run_result *run_small(ntp_ctx *ctx, ntp_graph **gp)
{
    ntp_graph *g = *gp = test_load_model(ctx, "tiny-cnn.xml", NULL, 0, NULL);
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    /* One thread: with two busy loops on two CPUs, three runnable threads
     * share them and the others take about two thirds. */
    o.threads = 1;
    o.min_time_s = 1.0;
    o.accuracy = false;
    ntp_run_result *r = NULL;
    ntp_status st = ntp_run(ctx, g, &o, &r);
    if (st)
        fail_msg("ntp_run: %s", ntp_ctx_errmsg(ctx));
    return r;
}

static bool has_contention_warning(const ntp_run_result *r)
{
    for (int i = 0; i < ntp_run_result_warning_count(r); i++)
        if (strncmp(ntp_run_result_warning(r, i), "other processes used ", 21) == 0)
            return true;
    return false;
}

static void test_busy_neighbours(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    busy[0] = start_busy();
    busy[1] = start_busy();
    /* Let the loops get going before the run measures. */
    struct timespec nap = {0, 200000000};
    nanosleep(&nap, NULL);
    ntp_graph *g = NULL;
    ntp_run_result *r = run_small(ctx, &g);
    stop_busy();
    const ntp_contention *c = &ntp_run_result_env(r)->contention;
    printf("busy: other %.1f%%, steal %.1f%%, own %.1f%% of %d CPUs over %.2f s, load %.2f\n",
           100 * c->other, 100 * c->steal, 100 * c->own, c->cpus, c->window_s, c->load_average);
    assert_true(c->measured);
    assert_true(c->cpus >= 1);
    assert_true(c->window_s >= 1.0);
    if (c->cpus <= 2)
        assert_true(c->other >= 0.45);
    else /* two loops on a bigger machine take two of its CPUs */
        assert_true(c->other >= 2.0 / c->cpus * 0.9);
    assert_true(c->distorted);
    assert_true(has_contention_warning(r));
    /* The spread may be small, yet the warning is there: and in the text
     * and JSON reports too. */
    char *text = NULL, *json = NULL;
    size_t tl = 0, jl = 0;
    FILE *f = open_memstream(&text, &tl);
    assert_int_equal(ntp_report_write_run(ctx, r, NTP_FORMAT_TABLE, f), NTP_STATUS_OK);
    fclose(f);
    assert_non_null(strstr(text, "contention: other processes "));
    assert_non_null(strstr(text, "warning: other processes used "));
    f = open_memstream(&json, &jl);
    assert_int_equal(ntp_report_write_run(ctx, r, NTP_FORMAT_JSON, f), NTP_STATUS_OK);
    fclose(f);
    json_error_t err;
    json_t *root = json_loads(json, 0, &err);
    assert_non_null(root);
    json_t *jc = json_object_get(json_object_get(root, "environment"), "contention");
    assert_true(json_is_true(json_object_get(jc, "measured")));
    assert_true(json_is_true(json_object_get(jc, "distorted")));
    assert_true(fabs(json_number_value(json_object_get(jc, "other")) - c->other) < 1e-9);
    json_decref(root);
    free(text);
    free(json);
    ntp_run_result_free(r);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* The output of a shell command (stdout and stderr), and its exit status. */
static int shell(const char *cmd, char *out, size_t len)
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* --wait-policy: the CLI sets the runtimes' variables and runs itself
 * again; the report says what the run ran under. */
static void test_wait_policy_cli(void **state)
{
    (void)state;
    static char out[1 << 16];
    char cmd[2048];
    const char *run = "run " NTP_SOURCE_DIR "/models/tiny-mlp.xml -n 1 -w 0 --min-time 0 --no-db "
                      "-f json";
    snprintf(cmd, sizeof cmd,
             "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u OPENBLAS_THREAD_TIMEOUT "
             "-u NTPROF_WAIT_POLICY %s %s --wait-policy passive 2>&1",
             NTP_CLI, run);
    assert_int_equal(shell(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"wait_policy\": \"passive\""));
    assert_non_null(strstr(out, "\"wait_settings\": "
                                "\"OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4\""));
    snprintf(cmd, sizeof cmd,
             "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u OPENBLAS_THREAD_TIMEOUT "
             "-u NTPROF_WAIT_POLICY %s %s --wait-policy=spin 2>&1",
             NTP_CLI, run);
    assert_int_equal(shell(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"wait_policy\": \"spin\""));
    assert_non_null(strstr(out, "\"wait_settings\": \"\""));
    /* auto says what it chose and why. */
    snprintf(cmd, sizeof cmd,
             "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u OPENBLAS_THREAD_TIMEOUT "
             "-u NTPROF_WAIT_POLICY %s %s 2>&1",
             NTP_CLI, run);
    assert_int_equal(shell(cmd, out, sizeof out), 0);
    static const char key[] = "\"wait_policy\": \"auto: ";
    const char *a = strstr(out, key);
    assert_non_null(a);
    if (strncmp(a + strlen(key), "passive", 7) == 0)
        assert_non_null(strstr(out, "OMP_WAIT_POLICY=PASSIVE"));
    else
        assert_non_null(strstr(out, "\"wait_settings\": "
                                    "\"GOMP_SPINCOUNT=10000 OPENBLAS_THREAD_TIMEOUT=22\""));
    /* The user's own settings win over auto, and are reported. */
    snprintf(cmd, sizeof cmd,
             "env -u OMP_WAIT_POLICY -u OPENBLAS_THREAD_TIMEOUT -u "
             "NTPROF_WAIT_POLICY GOMP_SPINCOUNT=5 %s %s 2>&1",
             NTP_CLI, run);
    assert_int_equal(shell(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"wait_policy\": \"environment\""));
    assert_non_null(strstr(out, "\"wait_settings\": \"GOMP_SPINCOUNT=5\""));
    /* A policy that does not exist is a usage error, before any work. */
    snprintf(cmd, sizeof cmd, "%s %s --wait-policy sleepy 2>&1", NTP_CLI, run);
    assert_int_equal(shell(cmd, out, sizeof out), 2);
    assert_non_null(strstr(out, "--wait-policy expects spin, passive or auto, got 'sleepy'"));
}

/* Exit 77 (skipped) when the machine is busy: the quiet case cannot be
 * shown on it. */
static int quiet(void)
{
    double load, other = test_others_busy(&load);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    printf("before: others %.1f%%, load average %.2f on %ld CPUs\n", 100 * other, load, cpus);
    if (other < 0) {
        printf("SKIP: /proc/stat unreadable\n");
        return 77;
    }
    if (other >= 0.05 || load > 0.5 * (double)cpus) {
        printf("SKIP: the machine is busy (others %.0f%%, load average %.2f)\n", 100 * other, load);
        return 77;
    }
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = NULL;
    ntp_run_result *r = run_small(ctx, &g);
    const ntp_contention *c = &ntp_run_result_env(r)->contention;
    printf("quiet run: other %.1f%%, steal %.1f%%, own %.1f%% over %.2f s\n", 100 * c->other,
           100 * c->steal, 100 * c->own, c->window_s);
    int rc = 0;
    if (!c->measured || c->distorted || has_contention_warning(r)) {
        /* Somebody started working meanwhile? */
        double after = test_others_busy(&load);
        if (after >= 0.05) {
            printf("SKIP: the machine became busy during the run (others %.0f%%)\n", 100 * after);
            rc = 77;
        } else {
            printf("FAIL: a quiet run was reported as contended\n");
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
    if (argc > 1 && strcmp(argv[1], "quiet") == 0)
        return quiet();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_compute),
        cmocka_unit_test(test_busy_neighbours),
        cmocka_unit_test(test_wait_policy_cli),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    stop_busy();
    return rc;
}
