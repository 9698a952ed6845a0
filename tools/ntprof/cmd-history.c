/* ntprof history: list the runs recorded in the history database, or show
 * one of them again. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cmd_history(int argc, char **argv);
int cmd_history_copy(int argc, char **argv);   /* cmd-history-copy.c */
int cmd_history_import(int argc, char **argv); /* cmd-history-copy.c */

enum { OPT_DB = 1000, OPT_TOPOLOGY, OPT_BACKEND, OPT_SINCE, OPT_SHOW, OPT_LOAD, OPT_LOAD_SWEEPS };

typedef struct list_arg {
    const ntp_history_entry *e;
    int n;
} list_arg;

static ntp_status write_list(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    const list_arg *a = arg;
    return ntp_report_write_history(ctx, a->e, a->n, fmt, f);
}

/* Load runs (ntprof load): with --load alone, or after the runs in a table. */
typedef struct loads_arg {
    const ntp_load_entry *e;
    int n;
} loads_arg;

static ntp_status write_loads(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    const loads_arg *a = arg;
    return ntp_report_write_load_history(ctx, a->e, a->n, fmt, f);
}

/* Load sweeps (ntprof sweep --load): with --load-sweeps alone, or last in a
 * table. */
typedef struct sweeps_arg {
    const ntp_load_sweep_task *t;
    int n;
} sweeps_arg;

static ntp_status write_sweeps(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    const sweeps_arg *a = arg;
    return ntp_report_write_load_sweep_history(ctx, a->t, a->n, fmt, f);
}

typedef struct both_arg {
    list_arg runs;
    loads_arg loads;
    sweeps_arg sweeps;
} both_arg;

static ntp_status write_both(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    const both_arg *a = arg;
    ntp_status st = ntp_report_write_history(ctx, a->runs.e, a->runs.n, fmt, f);
    if (!st && a->loads.n > 0) {
        fputs("\nload runs (ntprof load; --load lists them alone)\n", f);
        st = ntp_report_write_load_history(ctx, a->loads.e, a->loads.n, fmt, f);
    }
    if (st || a->sweeps.n == 0)
        return st;
    fputs("\nload sweeps (ntprof sweep --load; --load-sweeps lists them alone)\n", f);
    return ntp_report_write_load_sweep_history(ctx, a->sweeps.t, a->sweeps.n, fmt, f);
}

static ntp_status write_run(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    return ntp_report_write_run(ctx, arg, fmt, f);
}

/* The stored JSON report, byte for byte: writing it again from the parsed
 * result would recompute derived rates from 15-digit medians and could
 * change their last digit. */
static ntp_status write_text(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    (void)ctx;
    (void)fmt;
    fputs(arg, f);
    return ferror(f) ? NTP_STATUS_IO_ERROR : NTP_STATUS_OK;
}

int cmd_history(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "copy") == 0)
        return cmd_history_copy(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "import") == 0)
        return cmd_history_import(argc - 1, argv + 1);
    ntp_history_filter filter = {0};
    ntp_format fmt = NTP_FORMAT_TABLE;
    const char *db = NULL, *output = NULL;
    int64_t show = 0;
    bool loads = false, load_sweeps = false;
    const cli_option opts[] = {
        CLI_HELP("usage: ntprof history [options]\n"
                 "       ntprof history copy --from DB --to DB\n"
                 "\n"
                 "Lists the runs `ntprof run` recorded, newest first, or shows one again;\n"
                 "`copy` merges one history into another (ntprof history copy --help).\n"
                 "\n"),
        CLI_STR("db", OPT_DB, "PATH",
                "the history database, a file or a\n"
                "postgresql:// URL (default:\n"
                "$XDG_DATA_HOME/ntprof/history.db or\n"
                "~/.local/share/ntprof/history.db)",
                &db),
        CLI_STR("topology", OPT_TOPOLOGY, "NAME", "only runs of this topology", &filter.topology),
        CLI_STR("backend", OPT_BACKEND, "NAME", "only runs on this backend", &filter.backend),
        CLI_STR("since", OPT_SINCE, "DATE",
                "only runs from DATE on (2025-03-01 or 2025-03-01T12:00:00Z)", &filter.since),
        CLI_NUM("limit", 'n', "N", "at most N runs (default: all)", &filter.limit, 1, 1000000000,
                "a positive integer"),
        CLI_OPT("show", OPT_SHOW, "ID", "the full report of run ID instead of the list"),
        CLI_SET("load", OPT_LOAD,
                "list the load runs (`ntprof load`) instead; a table\n"
                "of the runs lists them after the runs",
                &loads),
        CLI_SET("load-sweeps", OPT_LOAD_SWEEPS,
                "list the load sweeps (`ntprof sweep --load`), each\n"
                "configuration with its load run, instead (the\n"
                "filters do not apply); a table of the runs lists\n"
                "them last",
                &load_sweeps),
        CLI_OPT("format", 'f', "F", "table (default), json or csv"),
        CLI_STR("output", 'o', "FILE", "write to FILE (written only on success)", &output),
        CLI_OPT("help", 'h', NULL, "this text"),
        CLI_OPT_END,
    };
    cli_getopt_state gs = {0};
    int opt;
    while ((opt = cli_getopt(argc, argv, opts, &gs)) != -1) {
        switch (opt) {
        case OPT_SHOW:
            if (!cli_parse_int(optarg, 1, INT64_MAX, &show)) {
                cli_error("--show expects a run id (a positive integer), got '%s'", optarg);
                return CLI_USAGE;
            }
            break;
        case 'f':
            if (!cli_parse_format(optarg, &fmt))
                return CLI_USAGE;
            break;
        default: return cli_option_end("history", opt, opts, 25);
        }
    }
    if (!cli_want_files("history", argc, argv, 0, NULL))
        return CLI_USAGE;
    ntp_ctx *ctx = cli_ctx_new();
    if (!ctx)
        return CLI_FAIL;
    char path[4096];
    int rc = CLI_OK;
    if (!db) {
        if (ntp_store_default_path(ctx, path, sizeof path) != NTP_STATUS_OK) {
            rc = cli_fail(ctx);
            goto out;
        }
        db = path;
    }
    const ntp_output_path outs[] = {{"-o", output, NTP_OUTPUT_FILE}};
    const char *ins[] = {db};
    if ((rc = cli_check_outputs(ctx, outs, 1, ins, 1)) != CLI_OK)
        goto out;
    /* A history that was never written is empty, not an error. */
    if (!ntp_store_is_url(db) && access(db, F_OK) != 0 && !show) {
        list_arg none = {NULL, 0};
        loads_arg no_loads = {NULL, 0};
        sweeps_arg no_sweeps = {NULL, 0};
        rc = load_sweeps ? cli_write_output(ctx, output, write_sweeps, &no_sweeps, fmt)
             : loads     ? cli_write_output(ctx, output, write_loads, &no_loads, fmt)
                         : cli_write_output(ctx, output, write_list, &none, fmt);
        goto out;
    }
    ntp_store *s = NULL;
    if (ntp_store_open(ctx, db, NTP_STORE_READ_ONLY, &s) != NTP_STATUS_OK) {
        rc = cli_fail(ctx);
        goto out;
    }
    if (show && fmt == NTP_FORMAT_JSON) {
        char *json = NULL;
        if (ntp_store_get_report(ctx, s, show, &json) != NTP_STATUS_OK)
            rc = cli_fail(ctx);
        else
            rc = cli_write_output(ctx, output, write_text, json, fmt);
        free(json);
    } else if (show) {
        ntp_run_result *r = NULL;
        if (ntp_store_load_run(ctx, s, show, &r) != NTP_STATUS_OK)
            rc = cli_fail(ctx);
        else
            rc = cli_write_output(ctx, output, write_run, r, fmt);
        ntp_run_result_free(r);
    } else if (load_sweeps) {
        ntp_load_sweep_task *t = NULL;
        int nt = 0;
        if (ntp_store_list_load_sweeps(ctx, s, &t, &nt) != NTP_STATUS_OK) {
            rc = cli_fail(ctx);
        } else {
            sweeps_arg a = {t, nt};
            rc = cli_write_output(ctx, output, write_sweeps, &a, fmt);
        }
        free(t);
    } else {
        ntp_load_sweep_task *t = NULL;
        int nt = 0;
        ntp_history_entry *e = NULL;
        ntp_load_entry *le = NULL;
        int n = 0, nl = 0;
        bool table = fmt == NTP_FORMAT_TABLE;
        if ((!loads && ntp_store_list(ctx, s, &filter, &e, &n) != NTP_STATUS_OK) ||
            ((loads || table) &&
             ntp_store_list_loads(ctx, s, &filter, &le, &nl) != NTP_STATUS_OK) ||
            (!loads && table && ntp_store_list_load_sweeps(ctx, s, &t, &nt) != NTP_STATUS_OK)) {
            rc = ntp_ctx_status(ctx) == NTP_STATUS_INVALID_ARGUMENT ? (cli_fail(ctx), CLI_USAGE)
                                                                    : cli_fail(ctx);
        } else if (loads) {
            loads_arg a = {le, nl};
            rc = cli_write_output(ctx, output, write_loads, &a, fmt);
        } else {
            both_arg a = {{e, n}, {le, nl}, {t, nt}};
            rc = cli_write_output(ctx, output, write_both, &a, fmt);
        }
        free(e);
        free(le);
        free(t);
    }
    ntp_store_close(s);
out:
    ntp_ctx_free(ctx);
    return rc;
}
