/* Where outputs may go (issue 14, 6; issue 13, 7): src/io/output.c.
 *   - a FIFO (and any device) is written through, never replaced by a
 *     regular file, and only when the report is complete;
 *   - a link to a regular file replaces the file, not the link; a replaced
 *     file keeps its permissions;
 *   - ntp_output_check refuses, before any work, an output that is an input
 *     of the command (by device and inode), two outputs to one file, and a
 *     missing or unwritable folder; the CLI applies it to every command
 *     (analyze -o over its topology, run -o into a missing folder before
 *     measuring, --html onto -o's file);
 *   - output folders (--save-outputs, --tool-dir) are checked the same way,
 *     and no report is written over the history database (--db). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ntprof/ntprof.h"
#include "support/tmpdir.h"

static void at(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", test_tmpdir, name);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void test_fifo_written_through(void **state)
{
    (void)state;
    char fifo[600], got[600];
    at(fifo, sizeof fifo, "out.fifo");
    at(got, sizeof got, "fifo.txt");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* The reader: copies what arrives into a file. */
        alarm(20);
        FILE *in = fopen(fifo, "rb"), *out = fopen(got, "wb");
        if (!in || !out)
            _exit(2);
        int c;
        while ((c = fgetc(in)) != EOF)
            fputc(c, out);
        fclose(out);
        _exit(0);
    }
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_output *o = NULL;
    assert_int_equal(ntp_output_open(ctx, fifo, &o), NTP_STATUS_OK);
    fputs("complete report\n", ntp_output_file(o));
    assert_int_equal(ntp_output_commit(ctx, o), NTP_STATUS_OK);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_string_equal(slurp(got), "complete report\n");
    struct stat sb;
    assert_int_equal(lstat(fifo, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode)); /* still a FIFO, not a regular file */
    /* A failed command writes nothing through: the abort never opens it
     * (opening a FIFO for writing with no reader would block). */
    assert_int_equal(ntp_output_open(ctx, fifo, &o), NTP_STATUS_OK);
    fputs("half a report", ntp_output_file(o));
    ntp_output_abort(o);
    assert_int_equal(lstat(fifo, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));
    ntp_ctx_free(ctx);
}

static void test_link_and_mode(void **state)
{
    (void)state;
    char file[600], link[600];
    at(file, sizeof file, "real.txt");
    at(link, sizeof link, "link.txt");
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("old", f);
    fclose(f);
    assert_int_equal(chmod(file, 0640), 0);
    assert_int_equal(symlink("real.txt", link), 0);
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_output *o = NULL;
    assert_int_equal(ntp_output_open(ctx, link, &o), NTP_STATUS_OK);
    fputs("new", ntp_output_file(o));
    assert_int_equal(ntp_output_commit(ctx, o), NTP_STATUS_OK);
    struct stat sb;
    assert_int_equal(lstat(link, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode)); /* the link stays a link */
    assert_string_equal(slurp(file), "new");
    assert_int_equal(stat(file, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0640);
    ntp_ctx_free(ctx);
}

static void test_check(void **state)
{
    (void)state;
    char in[600], other[600], missing[600], again[600];
    at(in, sizeof in, "model.xml");
    FILE *f = fopen(in, "w");
    assert_non_null(f);
    fputs("<topology/>", f);
    fclose(f);
    at(other, sizeof other, "r.json");
    at(missing, sizeof missing, "no/such/dir/r.json");
    /* The input by another spelling. */
    snprintf(again, sizeof again, "%s/./../%s/model.xml", test_tmpdir,
             strrchr(test_tmpdir, '/') + 1);
    const char *ins[] = {in};
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_output_path over[] = {{"-o", again, NTP_OUTPUT_FILE}};
    assert_int_equal(ntp_output_check(ctx, over, 1, ins, 1), NTP_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "is an input of this command"));
    ntp_ctx_clear(ctx);
    ntp_output_path dup[] = {{"-o", other, NTP_OUTPUT_FILE},
                             {"--trace", NULL, NTP_OUTPUT_FILE},
                             {"--html", other, NTP_OUTPUT_FILE}};
    assert_int_equal(ntp_output_check(ctx, dup, 3, ins, 1), NTP_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "--html: "));
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "the same file as -o"));
    ntp_ctx_clear(ctx);
    ntp_output_path gone[] = {{"-o", missing, NTP_OUTPUT_FILE}};
    assert_int_equal(ntp_output_check(ctx, gone, 1, ins, 1), NTP_STATUS_IO_ERROR);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "No such file or directory"));
    ntp_ctx_clear(ctx);
    ntp_output_path fine[] = {{"-o", other, NTP_OUTPUT_FILE},
                              {"--trace", "-", NTP_OUTPUT_FILE},
                              {"--html", NULL, NTP_OUTPUT_FILE}};
    assert_int_equal(ntp_output_check(ctx, fine, 3, ins, 1), NTP_STATUS_OK);
    ntp_ctx_free(ctx);
}

/* Output folders (--save-outputs, --tool-dir) and the history database
 * (--db), checked like files before any work, with one-line errors. */
static void test_check_folders_and_db(void **state)
{
    (void)state;
    char in[600], dir[600], fresh[600], file[600], deep[600], db[600], msg[2048];
    at(in, sizeof in, "m.xml");
    at(dir, sizeof dir, "outs");
    at(fresh, sizeof fresh, "new-outs/");
    at(file, sizeof file, "m.xml");
    at(deep, sizeof deep, "no/such/outs");
    at(db, sizeof db, "h.db");
    FILE *f = fopen(in, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(mkdir(dir, 0755), 0);
    const char *ins[] = {in};
    ntp_ctx *ctx = ntp_ctx_init();
    /* An existing folder, and a new one in a writable folder (a trailing
     * slash names the same folder), are fine. */
    ntp_output_path ok[] = {{"--save-outputs", dir, NTP_OUTPUT_DIR},
                            {"--tool-dir", fresh, NTP_OUTPUT_DIR}};
    assert_int_equal(ntp_output_check(ctx, ok, 2, ins, 1), NTP_STATUS_OK);
    /* A regular file is not a folder. */
    ntp_output_path notdir[] = {{"--save-outputs", file, NTP_OUTPUT_DIR}};
    assert_int_equal(ntp_output_check(ctx, notdir, 1, ins, 1), NTP_STATUS_IO_ERROR);
    snprintf(msg, sizeof msg, "--save-outputs: cannot write into '%s': not a folder", file);
    assert_string_equal(ntp_ctx_errmsg(ctx), msg);
    ntp_ctx_clear(ctx);
    /* A folder whose parent is missing cannot be created. */
    ntp_output_path gone[] = {{"--tool-dir", deep, NTP_OUTPUT_DIR}};
    assert_int_equal(ntp_output_check(ctx, gone, 1, ins, 1), NTP_STATUS_IO_ERROR);
    snprintf(msg, sizeof msg,
             "--tool-dir: cannot create '%s': folder '%s/no/such': No such file "
             "or directory",
             deep, test_tmpdir);
    assert_string_equal(ntp_ctx_errmsg(ctx), msg);
    ntp_ctx_clear(ctx);
    /* The report over the history database, which need not exist yet and
     * whose folder need not be writable (a history that cannot be written
     * is a warning, not an error). */
    char other[600];
    snprintf(other, sizeof other, "%s/./h.db", test_tmpdir);
    ntp_output_path over_db[] = {{"--db", db, NTP_OUTPUT_SAME_ONLY},
                                 {"-o", other, NTP_OUTPUT_FILE}};
    assert_int_equal(ntp_output_check(ctx, over_db, 2, ins, 1), NTP_STATUS_INVALID_ARGUMENT);
    snprintf(msg, sizeof msg,
             "-o: '%s' is the same file as --db '%s'; give each output its own "
             "file",
             other, db);
    assert_string_equal(ntp_ctx_errmsg(ctx), msg);
    ntp_ctx_clear(ctx);
    ntp_output_path db_alone[] = {{"--db", "/nonexistent/h.db", NTP_OUTPUT_SAME_ONLY},
                                  {"-o", "-", NTP_OUTPUT_FILE}};
    assert_int_equal(ntp_output_check(ctx, db_alone, 2, ins, 1), NTP_STATUS_OK);
    ntp_ctx_free(ctx);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The CLI: every command checks its outputs before it works. */
static void test_cli(void **state)
{
    (void)state;
    char model[600], cmd[4096];
    static char before[1 << 16];
    at(model, sizeof model, "cli.xml");
    snprintf(cmd, sizeof cmd, "cp '%s/models/tiny-mlp.xml' '%s'", NTP_SOURCE_DIR, model);
    assert_int_equal(system(cmd), 0);
    memcpy(before, slurp(model), sizeof before);
    static const char *const forms[] = {"analyze", "export", "convert", "run -n 1 -w 0 --no-db"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        snprintf(cmd, sizeof cmd, "'%s' %s '%s' -o '%s' 2>/dev/null", NTP_CLI, forms[i], model,
                 model);
        int rc = system(cmd);
        if (rc == 0)
            print_error("accepted: %s\n", cmd);
        assert_int_not_equal(rc, 0);
        assert_string_equal(slurp(model), before);
    }
    /* A missing folder is refused before the run: DeepSpeech takes
     * seconds to measure, the refusal well under one. */
    double t0 = now();
    snprintf(cmd, sizeof cmd,
             "'%s' run '%s/models/deepspeech.xml' --no-db -o '%s/none/r.json' "
             "2>/dev/null",
             NTP_CLI, NTP_SOURCE_DIR, test_tmpdir);
    assert_int_not_equal(system(cmd), 0);
    assert_true(now() - t0 < 2.0);
    snprintf(cmd, sizeof cmd,
             "'%s' run '%s' --no-db -n 1 -w 0 -o '%s/a.json' --html "
             "'%s/./a.json' 2>/dev/null",
             NTP_CLI, model, test_tmpdir, test_tmpdir);
    assert_int_not_equal(system(cmd), 0);
    char a[600];
    at(a, sizeof a, "a.json");
    assert_int_equal(access(a, F_OK), -1);
    /* machine: refused before its seconds of measuring too. */
    t0 = now();
    snprintf(cmd, sizeof cmd, "'%s' machine --no-db -o '%s/none/m.json' 2>/dev/null", NTP_CLI,
             test_tmpdir);
    assert_int_not_equal(system(cmd), 0);
    assert_true(now() - t0 < 2.0);
    /* A sweep whose every configuration fails writes no table. */
    at(a, sizeof a, "sweep.txt");
    snprintf(cmd, sizeof cmd,
             "'%s' sweep '%s' --vary hidden=99999999999,88888888888 --keep "
             "'%s/kept' -o '%s' 2>/dev/null",
             NTP_CLI, model, test_tmpdir, a);
    assert_int_not_equal(system(cmd), 0);
    assert_int_equal(access(a, F_OK), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_written_through),
        cmocka_unit_test(test_link_and_mode),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_check_folders_and_db),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown);
}
