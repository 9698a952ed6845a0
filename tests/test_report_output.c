/* Output files (ntp_output_*): a report appears at its path only on commit,
 * whole, with an ordinary file mode; an aborted or failed output leaves
 * nothing behind; "-" writes to standard output. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ntprof/ntprof.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/ntp-test-output-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Entries in the test directory other than . and .. */
static int count_entries(void)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void test_commit_renames(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    char path[512];
    snprintf(path, sizeof path, "%s/report.json", dir);
    mode_t old = umask(022);
    ntp_output *o = NULL;
    assert_int_equal(ntp_output_open(ctx, path, &o), NTP_STATUS_OK);
    assert_non_null(o);
    FILE *f = ntp_output_file(o);
    assert_non_null(f);
    fputs("{\"a\": 1}\n", f);
    /* Before the commit only the temporary file exists, next to the
     * destination and named after it. */
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(count_entries(), 1);
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL && e->d_name[0] == '.')
        ;
    assert_non_null(e);
    assert_memory_equal(e->d_name, "report.json.tmp.", 16);
    closedir(d);

    assert_int_equal(ntp_output_commit(ctx, o), NTP_STATUS_OK);
    assert_string_equal(slurp(path), "{\"a\": 1}\n");
    assert_int_equal(count_entries(), 1);
    /* A new file gets 0666 & ~umask, like fopen(), not mkstemp's 0600. */
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);

    /* Committing over an existing file replaces it and keeps its mode. */
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(ntp_output_open(ctx, path, &o), NTP_STATUS_OK);
    fputs("second", ntp_output_file(o));
    assert_string_equal(slurp(path), "{\"a\": 1}\n"); /* old content until the commit */
    assert_int_equal(ntp_output_commit(ctx, o), NTP_STATUS_OK);
    assert_string_equal(slurp(path), "second");
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(count_entries(), 1);
    umask(old);
    ntp_ctx_free(ctx);
}

static void test_abort_leaves_nothing(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    char path[512];
    snprintf(path, sizeof path, "%s/trace.json", dir);
    ntp_output *o = NULL;
    assert_int_equal(ntp_output_open(ctx, path, &o), NTP_STATUS_OK);
    fputs("half a report", ntp_output_file(o));
    assert_int_equal(count_entries(), 1);
    ntp_output_abort(o);
    assert_int_equal(count_entries(), 0);
    assert_int_equal(access(path, F_OK), -1);

    /* Aborting keeps an existing file as it was. */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("previous run", f);
    fclose(f);
    assert_int_equal(ntp_output_open(ctx, path, &o), NTP_STATUS_OK);
    fputs("broken", ntp_output_file(o));
    ntp_output_abort(o);
    assert_string_equal(slurp(path), "previous run");
    assert_int_equal(count_entries(), 1);
    ntp_output_abort(NULL); /* harmless */
    ntp_ctx_free(ctx);
}

static void test_failures(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_output *o = (ntp_output *)&o; /* must be reset to NULL on failure */
    char path[512];
    snprintf(path, sizeof path, "%s/no/such/dir/report.csv", dir);
    assert_int_equal(ntp_output_open(ctx, path, &o), NTP_STATUS_IO_ERROR);
    assert_null(o);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), path));
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "No such file or directory"));

    assert_int_equal(ntp_output_open(ctx, dir, &o), NTP_STATUS_IO_ERROR);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "is a directory"));
    assert_int_equal(ntp_output_open(ctx, "", &o), NTP_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ntp_output_open(ctx, NULL, &o), NTP_STATUS_INVALID_ARGUMENT);

    /* A commit that cannot rename (the destination became a non-empty
     * directory meanwhile) fails and removes its temporary file. */
    snprintf(path, sizeof path, "%s/out", dir);
    assert_int_equal(ntp_output_open(ctx, path, &o), NTP_STATUS_OK);
    fputs("data", ntp_output_file(o));
    char inner[600];
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(inner, sizeof inner, "%s/keep", path);
    FILE *f = fopen(inner, "w");
    assert_non_null(f);
    fclose(f);
    ntp_ctx_clear(ctx);
    assert_int_equal(ntp_output_commit(ctx, o), NTP_STATUS_IO_ERROR);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), path));
    assert_int_equal(count_entries(), 1); /* only the directory */
    assert_int_equal(ntp_output_commit(ctx, NULL), NTP_STATUS_INVALID_ARGUMENT);
    ntp_ctx_free(ctx);
}

static void test_stdout(void **state)
{
    (void)state;
    /* The child's standard output goes to a file; "-" must write there and
     * commit without closing it. */
    char path[512];
    snprintf(path, sizeof path, "%s/stdout.txt", dir);
    fflush(stdout);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!freopen(path, "w", stdout))
            _exit(10);
        ntp_ctx *ctx = ntp_ctx_init();
        ntp_output *o = NULL;
        if (ntp_output_open(ctx, "-", &o) != NTP_STATUS_OK || ntp_output_file(o) != stdout)
            _exit(11);
        fputs("to stdout\n", ntp_output_file(o));
        if (ntp_output_commit(ctx, o) != NTP_STATUS_OK)
            _exit(12);
        /* stdout is still open and usable after the commit. */
        if (fputs("after\n", stdout) < 0 || fflush(stdout) != 0)
            _exit(13);
        if (ntp_output_open(ctx, "-", &o) != NTP_STATUS_OK)
            _exit(14);
        fputs("aborted but already out\n", ntp_output_file(o));
        ntp_output_abort(o);
        ntp_ctx_free(ctx);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_string_equal(slurp(path), "to stdout\nafter\naborted but already out\n");
}

static void test_stdout_error(void **state)
{
    (void)state;
    /* Writing to a full device is reported by the commit, not lost. */
    if (access("/dev/full", W_OK) != 0)
        fail_msg("/dev/full is needed to test write errors");
    fflush(stdout);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!freopen("/dev/full", "w", stdout))
            _exit(10);
        ntp_ctx *ctx = ntp_ctx_init();
        ntp_output *o = NULL;
        if (ntp_output_open(ctx, "-", &o) != NTP_STATUS_OK)
            _exit(11);
        fputs("this cannot be written\n", ntp_output_file(o));
        ntp_status st = ntp_output_commit(ctx, o);
        _exit(st == NTP_STATUS_IO_ERROR && strstr(ntp_ctx_errmsg(ctx), "standard output") ? 0 : 12);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_commit_renames, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort_leaves_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stdout, setup, teardown),
        cmocka_unit_test(test_stdout_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
