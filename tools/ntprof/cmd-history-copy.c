/* ntprof history copy: merge one history into another (a laptop's SQLite
 * file into the lab's PostgreSQL, or back), skipping runs already there. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cmd_history_copy(int argc, char **argv);

enum { OPT_FROM = 1000, OPT_TO };

int cmd_history_copy(int argc, char **argv)
{
    const char *from = NULL, *to = NULL;
    const cli_option opts[] = {
        CLI_HELP("usage: ntprof history copy --from DB --to DB\n"
                 "\n"
                 "Copies every run of one history into another, with its rows, markers,\n"
                 "warnings and report, and the machines' ceilings and load runs the\n"
                 "destination lacks.\n"
                 "A run the destination already holds (by its UUID) is skipped, so copying\n"
                 "again is harmless. DB is an SQLite file or a postgresql:// URL.\n"
                 "\n"),
        CLI_STR("from", OPT_FROM, "DB", "the history to read", &from),
        CLI_STR("to", OPT_TO, "DB", "the history to add to (created if missing)", &to),
        CLI_OPT("help", 'h', NULL, "this text"),
        CLI_OPT_END,
    };
    cli_getopt_state gs = {0};
    int opt;
    while ((opt = cli_getopt(argc, argv, opts, &gs)) != -1) {
        switch (opt) {
        default: return cli_option_end("history copy", opt, opts, 25);
        }
    }
    if (!cli_want_files("history copy", argc, argv, 0, NULL))
        return CLI_USAGE;
    if (!from || !to) {
        cli_error("history copy needs --from DB and --to DB");
        return CLI_USAGE;
    }
    if (!ntp_store_is_url(from) && access(from, F_OK) != 0) {
        cli_error("history copy: --from %s: no such file", from);
        return CLI_FAIL;
    }
    ntp_ctx *ctx = cli_ctx_new();
    if (!ctx)
        return CLI_FAIL;
    int rc = CLI_OK;
    ntp_store *a = NULL, *b = NULL;
    cli_progress prog;
    cli_progress_init(&prog);
    cli_progress_show(&prog, "copying the history", 0, 0, NULL);
    ntp_store_copy_stats st;
    if (ntp_store_open(ctx, from, NTP_STORE_READ_ONLY, &a) != NTP_STATUS_OK ||
        ntp_store_open(ctx, to, NTP_STORE_CREATE, &b) != NTP_STATUS_OK ||
        ntp_store_copy(ctx, a, b, &st) != NTP_STATUS_OK) {
        cli_progress_clear(&prog);
        rc = cli_fail(ctx);
    } else {
        cli_progress_clear(&prog);
        cli_print_warnings(ctx);
        printf("%" PRId64 " run%s copied, %" PRId64 " already present, %" PRId64
               " machine%s copied\n",
               st.runs_copied, st.runs_copied == 1 ? "" : "s", st.runs_present, st.machines_copied,
               st.machines_copied == 1 ? "" : "s");
        printf("%" PRId64 " load run%s copied, %" PRId64 " already present\n", st.loads_copied,
               st.loads_copied == 1 ? "" : "s", st.loads_present);
        printf("%" PRId64 " sweep%s copied, %" PRId64 " already present\n", st.sweeps_copied,
               st.sweeps_copied == 1 ? "" : "s", st.sweeps_present);
    }
    ntp_store_close(a);
    ntp_store_close(b);
    ntp_ctx_free(ctx);
    return rc;
}

/* ntprof history import: run reports (JSON) into a history, e.g. runs made
 * with --no-db on a machine that cannot reach the lab's database. */
int cmd_history_import(int argc, char **argv);

enum { OPT_IMPORT_DB = 1100 };

int cmd_history_import(int argc, char **argv)
{
    const char *db = NULL;
    const cli_option opts[] = {
        CLI_HELP("usage: ntprof history import REPORT.json ... [--db DB]\n"
                 "\n"
                 "Adds run reports (`ntprof run --format json -o FILE`) to a history, as\n"
                 "if the runs had been recorded there, with the machine each report names.\n"
                 "A run the history already holds (by its UUID) is skipped.\n"
                 "\n"),
        CLI_STR("db", OPT_IMPORT_DB, "DB",
                "the history (default ~/.local/share/ntprof/history.db): an SQLite file or a "
                "postgresql:// URL",
                &db),
        CLI_OPT("help", 'h', NULL, "this text"),
        CLI_OPT_END,
    };
    cli_getopt_state gs = {0};
    int opt;
    while ((opt = cli_getopt(argc, argv, opts, &gs)) != -1) {
        switch (opt) {
        default: return cli_option_end("history import", opt, opts, 25);
        }
    }
    if (optind >= argc) {
        cli_error("history import needs at least one run report (see 'ntprof history import "
                  "--help')");
        return CLI_USAGE;
    }
    ntp_ctx *ctx = cli_ctx_new();
    if (!ctx)
        return CLI_FAIL;
    char path[4096];
    int n = argc - optind;
    ntp_run_result **runs = calloc((size_t)n, sizeof *runs);
    int rc = runs ? CLI_OK : CLI_FAIL;
    /* Every report is read before anything is written. */
    for (int i = 0; i < n && rc == CLI_OK; i++)
        if (ntp_run_result_load(ctx, argv[optind + i], &runs[i]) != NTP_STATUS_OK)
            rc = cli_fail(ctx);
    if (rc == CLI_OK && !db) {
        if (ntp_store_default_path(ctx, path, sizeof path) != NTP_STATUS_OK)
            rc = cli_fail(ctx);
        db = path;
    }
    ntp_store *s = NULL;
    if (rc == CLI_OK && ntp_store_open(ctx, db, NTP_STORE_CREATE, &s) != NTP_STATUS_OK)
        rc = cli_fail(ctx);
    /* ids[i]: the run's id in the history, new or already there. */
    int64_t *ids = calloc((size_t)n, sizeof *ids);
    if (rc == CLI_OK && !ids) {
        cli_error("out of memory");
        rc = CLI_FAIL;
    }
    /* A report a Slurm task kept (the store refused its run) also marks
     * its sweep's task done, so `sweep --resume` does not run it again. */
    bool *marked = calloc((size_t)n, sizeof *marked);
    if (rc == CLI_OK && !marked) {
        cli_error("out of memory");
        rc = CLI_FAIL;
    }
    for (int i = 0; i < n && rc == CLI_OK; i++)
        if (ntp_store_add_run(ctx, s, runs[i], &ids[i]) != NTP_STATUS_OK ||
            ntp_store_sweep_task_import(ctx, s, runs[i], ids[i], &marked[i]) != NTP_STATUS_OK)
            rc = cli_fail(ctx);
    if (rc == CLI_OK) {
        cli_print_warnings(ctx);
        for (int i = 0; i < n; i++) {
            printf("%s: run %" PRId64, argv[optind + i], ids[i]);
            if (marked[i])
                printf(" (sweep %" PRId64 " configuration %d done)",
                       ntp_run_result_sweep_id(runs[i]), ntp_run_result_sweep_index(runs[i]));
            putchar('\n');
        }
    }
    free(marked);
    free(ids);
    ntp_store_close(s);
    for (int i = 0; runs && i < n; i++)
        ntp_run_result_free(runs[i]);
    free(runs);
    ntp_ctx_free(ctx);
    return rc;
}
