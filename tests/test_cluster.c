/* Sweeps recorded for Slurm, without a cluster: the design read back from
 * the store; the rules that keep one row per configuration (a task's write
 * never replaces a result, Slurm's word never replaces a task's own
 * message); an unknown sweep; the --array lists; the batch script's
 * quoting, checked by running it through sh; Slurm states mapped to
 * outcomes. (tests/test_slurm_cli.sh runs the real thing.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ntprof/ntprof.h"
#include "support/tmpdir.h"

static ntp_store *open_store(ntp_ctx *ctx, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", test_tmpdir, name);
    ntp_store *s = NULL;
    assert_int_equal(ntp_store_open(ctx, path, NTP_STORE_CREATE, &s), NTP_STATUS_OK);
    return s;
}

static void test_record(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_store *s = open_store(ctx, "record.db");
    char *factors[] = {"batch=1,2", "hidden=8,16,\"32\""};
    char *options[] = {"--iterations", "3", "--set", "x=it's"};
    ntp_sweep_record rec = {.source = "/m/tiny.xml",
                            .design = "full",
                            .factors = factors,
                            .n_factors = 2,
                            .options = options,
                            .n_options = 4,
                            .n_configs = 6,
                            .executor = "slurm"};
    int64_t id = 0, id2 = 0;
    assert_int_equal(ntp_store_sweep_add(ctx, s, &rec, &id), NTP_STATUS_OK);
    assert_int_equal(ntp_store_sweep_add(ctx, s, &rec, &id2), NTP_STATUS_OK);
    assert_int_equal(id2, id + 1);
    assert_int_equal(ntp_store_sweep_add_job(ctx, s, id, "12"), NTP_STATUS_OK);
    assert_int_equal(ntp_store_sweep_add_job(ctx, s, id, "15"), NTP_STATUS_OK);
    ntp_sweep_record *r = NULL;
    assert_int_equal(ntp_store_sweep_get(ctx, s, id, &r), NTP_STATUS_OK);
    assert_string_equal(r->source, "/m/tiny.xml");
    assert_string_equal(r->design, "full");
    assert_int_equal(r->n_factors, 2);
    assert_string_equal(r->factors[1], "hidden=8,16,\"32\"");
    assert_int_equal(r->n_options, 4);
    assert_string_equal(r->options[3], "x=it's");
    assert_int_equal(r->n_configs, 6);
    assert_string_equal(r->jobs, "12 15");
    assert_int_equal(strlen(r->created_at), 20); /* 2026-01-01T00:00:00Z */
    ntp_sweep_record_free(r);
    /* An unknown sweep: UNKNOWN_NAME, one line naming it. */
    assert_int_equal(ntp_store_sweep_get(ctx, s, 999, &r), NTP_STATUS_UNKNOWN_NAME);
    assert_null(r);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "no sweep 999"));
    assert_null(strchr(ntp_ctx_errmsg(ctx), '\n'));
    ntp_ctx_clear(ctx);
    assert_int_equal(ntp_store_sweep_add_job(ctx, s, 999, "1"), NTP_STATUS_UNKNOWN_NAME);
    ntp_store_close(s);
    ntp_ctx_free(ctx);
}

static void set(ntp_ctx *ctx, ntp_store *s, int64_t sweep, int idx, const char *state, int64_t run,
                const char *msg, ntp_sweep_task_write how, bool want_written)
{
    ntp_sweep_task t = {.index = idx, .run_id = run};
    snprintf(t.state, sizeof t.state, "%s", state);
    snprintf(t.job, sizeof t.job, "7_%d", idx);
    snprintf(t.message, sizeof t.message, "%s", msg);
    bool written = !want_written;
    assert_int_equal(ntp_store_sweep_task_set(ctx, s, sweep, &t, how, &written), NTP_STATUS_OK);
    assert_int_equal(written, want_written);
}

static void test_task_rules(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_store *s = open_store(ctx, "tasks.db");
    char *factors[] = {"batch=1,2,3,4"};
    ntp_sweep_record rec = {.source = "/m/t.xml",
                            .design = "ofat",
                            .factors = factors,
                            .n_factors = 1,
                            .n_configs = 4,
                            .executor = "slurm"};
    int64_t id;
    assert_int_equal(ntp_store_sweep_add(ctx, s, &rec, &id), NTP_STATUS_OK);
    const ntp_sweep_task_write own = NTP_SWEEP_TASK_UNLESS_OK, slurm = NTP_SWEEP_TASK_IF_UNFINISHED;
    /* 0: ran, then its task ran again (a requeue): the first result stays. */
    set(ctx, s, id, 0, "running", 0, "", own, true);
    set(ctx, s, id, 0, "ok", 0, "", own, true);
    set(ctx, s, id, 0, "running", 0, "", own, false);
    set(ctx, s, id, 0, "failed", 0, "late", slurm, false);
    /* 1: its child failed and said why; Slurm's FAILED does not replace it. */
    set(ctx, s, id, 1, "running", 0, "", own, true);
    set(ctx, s, id, 1, "failed", 0, "exit 1: bad param", own, true);
    set(ctx, s, id, 1, "failed", 0, "failed: Slurm job 7_1: FAILED", slurm, false);
    /* 2: killed while running: Slurm's word is all there is. */
    set(ctx, s, id, 2, "running", 0, "", own, true);
    set(ctx, s, id, 2, "timed out", 0, "timed out: TIMEOUT (TimeLimit)", slurm, true);
    /* 3: never started (no row): Slurm's word is written; a resubmitted
     * task then replaces it. */
    set(ctx, s, id, 3, "preempted", 0, "preempted", slurm, true);
    set(ctx, s, id, 3, "running", 0, "", own, true);
    ntp_sweep_task *t = NULL;
    int n = 0;
    assert_int_equal(ntp_store_sweep_tasks(ctx, s, id, &t, &n), NTP_STATUS_OK);
    assert_int_equal(n, 4);
    const char *states[] = {"ok", "failed", "timed out", "running"};
    const char *msgs[] = {"", "exit 1: bad param", "timed out: TIMEOUT (TimeLimit)", ""};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(t[i].index, i);
        assert_string_equal(t[i].state, states[i]);
        assert_string_equal(t[i].message, msgs[i]);
    }
    assert_string_equal(t[2].job, "7_2");
    free(t);
    /* Another sweep's rows are its own. */
    assert_int_equal(ntp_store_sweep_tasks(ctx, s, id + 1, &t, &n), NTP_STATUS_OK);
    assert_int_equal(n, 0);
    free(t);
    ntp_store_close(s);
    ntp_ctx_free(ctx);
}

static void spec(const int *idx, int n, int par, const char *want)
{
    ntp_ctx *ctx = ntp_ctx_init();
    char buf[256];
    assert_int_equal(ntp_slurm_array_spec(ctx, idx, n, par, buf, sizeof buf), NTP_STATUS_OK);
    assert_string_equal(buf, want);
    ntp_ctx_free(ctx);
}

static void test_array_spec(void **state)
{
    (void)state;
    int all[50];
    for (int i = 0; i < 50; i++)
        all[i] = i;
    spec(all, 50, 0, "0-49");
    spec(all, 50, 4, "0-49%4");
    spec((const int[]){7}, 1, 0, "7");
    spec((const int[]){1, 3, 4, 5, 9, 11, 12}, 7, 2, "1,3-5,9,11-12%2");
    ntp_ctx *ctx = ntp_ctx_init();
    char buf[8];
    assert_int_equal(ntp_slurm_array_spec(ctx, (const int[]){3, 2}, 2, 0, buf, sizeof buf),
                     NTP_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ntp_slurm_array_spec(ctx, all, 0, 0, buf, sizeof buf),
                     NTP_STATUS_INVALID_ARGUMENT);
    /* "0,2,4,6": too long for 8 bytes with its NUL and more. */
    assert_int_equal(ntp_slurm_array_spec(ctx, (const int[]){0, 2, 4, 6, 8}, 5, 0, buf, sizeof buf),
                     NTP_STATUS_INVALID_ARGUMENT);
    ntp_ctx_free(ctx);
}

/* The script, run by sh with a stand-in for ntprof that prints its
 * arguments one per line: paths with spaces and quotes arrive whole. */
static void test_script(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    char echo[512], script[512], out[512];
    snprintf(echo, sizeof echo, "%s/it's an echo", test_tmpdir);
    FILE *f = fopen(echo, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\nfor a; do echo \"$a\"; done\n", f);
    fclose(f);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "chmod +x '%s/it'\\''s an echo'", test_tmpdir);
    assert_int_equal(system(cmd), 0);
    char *text = NULL;
    assert_int_equal(ntp_slurm_script(ctx, echo, 42, "/data/my 'lab' db.sqlite", &text),
                     NTP_STATUS_OK);
    assert_true(strncmp(text, "#!/bin/sh\n", 10) == 0);
    snprintf(script, sizeof script, "%s/task.sh", test_tmpdir);
    snprintf(out, sizeof out, "%s/task.out", test_tmpdir);
    f = fopen(script, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    free(text);
    snprintf(cmd, sizeof cmd, "SLURM_ARRAY_TASK_ID=17 sh '%s' > '%s'", script, out);
    assert_int_equal(system(cmd), 0);
    f = fopen(out, "r");
    assert_non_null(f);
    char got[1024] = "";
    size_t n = fread(got, 1, sizeof got - 1, f);
    got[n] = '\0';
    fclose(f);
    assert_string_equal(got, "sweep\n--task\n42:17\n--db\n/data/my 'lab' db.sqlite\n");
    ntp_ctx_free(ctx);
}

static void test_states(void **state)
{
    (void)state;
    const char *live[] = {"PENDING", "RUNNING", "COMPLETING", "REQUEUED", "SUSPENDED"};
    for (size_t i = 0; i < sizeof live / sizeof live[0]; i++)
        assert_false(ntp_slurm_state_final(live[i]));
    assert_false(ntp_slurm_state_final(""));
    const char *final[][2] = {
        {"COMPLETED", "ok"},       {"FAILED", "failed"},        {"TIMEOUT", "timed out"},
        {"DEADLINE", "timed out"}, {"PREEMPTED", "preempted"},  {"CANCELLED", "cancelled"},
        {"NODE_FAIL", "failed"},   {"OUT_OF_MEMORY", "failed"}, {"BOOT_FAIL", "failed"}};
    for (size_t i = 0; i < sizeof final / sizeof final[0]; i++) {
        assert_true(ntp_slurm_state_final(final[i][0]));
        assert_string_equal(ntp_slurm_outcome(final[i][0]), final[i][1]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record),     cmocka_unit_test(test_task_rules),
        cmocka_unit_test(test_array_spec), cmocka_unit_test(test_script),
        cmocka_unit_test(test_states),
    };
    return cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown);
}
