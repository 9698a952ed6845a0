/* The history database against hostile or awkward paths (issue 14):
 *   - a history in a folder nobody may write is still readable (opened
 *     immutable; before, SQLite's WAL needed its -shm file there: "attempt
 *     to write a readonly database");
 *   - --since takes real dates only (2025-13-45 was accepted and silently
 *     compared as text);
 *   - a device, FIFO or directory named as the database is refused, for
 *     reading and for writing, without blocking and without leaving a
 *     journal beside it. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
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
#include "support/tmpdir.h"

/* Open the history read-only and list it; 0 when that works and finds
 * `want` runs. Run in a child that gives up root first where the test runs
 * as root (root may write any folder, which would hide the case). */
static int read_listing(const char *path, int want)
{
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_store *s = NULL;
    if (ntp_store_open(ctx, path, NTP_STORE_READ_ONLY, &s) != NTP_STATUS_OK) {
        fprintf(stderr, "open: %s\n", ntp_ctx_errmsg(ctx));
        return 1;
    }
    ntp_history_entry *e = NULL;
    int n = -1;
    ntp_status st = ntp_store_list(ctx, s, NULL, &e, &n);
    if (st != NTP_STATUS_OK)
        fprintf(stderr, "list: %s\n", ntp_ctx_errmsg(ctx));
    free(e);
    ntp_store_close(s);
    ntp_ctx_free(ctx);
    return st == NTP_STATUS_OK && n == want ? 0 : 2;
}

static void test_read_only_folder(void **state)
{
    (void)state;
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/ro", test_tmpdir);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(path, sizeof path, "%s/history.db", dir);
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_store *s = NULL;
    assert_int_equal(ntp_store_open(ctx, path, NTP_STORE_CREATE, &s), NTP_STATUS_OK);
    ntp_store_close(s);
    ntp_ctx_free(ctx);
    /* What a finished writer leaves: the database alone (WAL checkpointed
     * and removed on close), readable by all, in a folder no one writes. */
    char side[640];
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    assert_int_equal(chmod(path, 0444), 0);
    assert_int_equal(chmod(dir, 0555), 0);
    assert_int_equal(chmod(test_tmpdir, 0755), 0); /* for the unprivileged child */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (getuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(3);
        _exit(read_listing(path, 0));
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    chmod(dir, 0755);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* Nothing was created beside it. */
    assert_int_equal(access(side, F_OK), -1);
}

static void test_since_must_be_a_date(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s/since.db", test_tmpdir);
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_store *s = NULL;
    assert_int_equal(ntp_store_open(ctx, path, NTP_STORE_CREATE, &s), NTP_STATUS_OK);
    static const char *const bad[] = {"2025-13-45",          "2025-00-10",    "2025-02-30",
                                      "2023-02-29",          "2025-03-01T24", "2025-03-01T12:60",
                                      "2025-03-01T12:00:61Z"};
    static const char *const good[] = {"2025-03-01", "2024-02-29", "2025-12-31T23:59:59Z",
                                       "2025-03-01T00", "2025-03-01T12:34"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ntp_history_filter f = {.since = bad[i]};
        ntp_history_entry *e = NULL;
        int n;
        ntp_status st = ntp_store_list(ctx, s, &f, &e, &n);
        if (st != NTP_STATUS_INVALID_ARGUMENT)
            print_error("--since %s was accepted\n", bad[i]);
        assert_int_equal(st, NTP_STATUS_INVALID_ARGUMENT);
        assert_non_null(strstr(ntp_ctx_errmsg(ctx), bad[i]));
        ntp_ctx_clear(ctx);
    }
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        ntp_history_filter f = {.since = good[i]};
        ntp_history_entry *e = NULL;
        int n;
        assert_int_equal(ntp_store_list(ctx, s, &f, &e, &n), NTP_STATUS_OK);
        free(e);
    }
    ntp_store_close(s);
    ntp_ctx_free(ctx);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "test_store_hostile: opening the database blocked\n";
    ssize_t r = write(2, msg, sizeof msg - 1);
    (void)r;
    _exit(1);
}

static void test_not_a_file(void **state)
{
    (void)state;
    char fifo[600], devlink[600];
    snprintf(fifo, sizeof fifo, "%s/fifo.db", test_tmpdir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    /* A device through a link in our folder: a journal would appear here. */
    snprintf(devlink, sizeof devlink, "%s/null.db", test_tmpdir);
    assert_int_equal(symlink("/dev/null", devlink), 0);
    signal(SIGALRM, on_alarm);
    alarm(20);
    ntp_ctx *ctx = ntp_ctx_init();
    const char *paths[] = {fifo, devlink, test_tmpdir};
    for (int i = 0; i < 3; i++)
        for (int m = 0; m < 2; m++) {
            ntp_store *s = NULL;
            ntp_status st =
                ntp_store_open(ctx, paths[i], m ? NTP_STORE_CREATE : NTP_STORE_READ_ONLY, &s);
            assert_int_equal(st, NTP_STATUS_IO_ERROR);
            assert_null(s);
            assert_non_null(strstr(ntp_ctx_errmsg(ctx), paths[i]));
            ntp_ctx_clear(ctx);
        }
    alarm(0);
    ntp_ctx_free(ctx);
    char j[640];
    snprintf(j, sizeof j, "%s-journal", devlink);
    assert_int_equal(access(j, F_OK), -1);
    snprintf(j, sizeof j, "%s-wal", devlink);
    assert_int_equal(access(j, F_OK), -1);
    struct stat sb;
    assert_int_equal(stat("/dev/null", &sb), 0);
    assert_true(S_ISCHR(sb.st_mode));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_only_folder),
        cmocka_unit_test(test_since_must_be_a_date),
        cmocka_unit_test(test_not_a_file),
    };
    return cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown);
}
