/* ntprof history: list the runs recorded in the history database, or show
 * one of them again. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cmd_history(int argc, char **argv);

static void history_usage(FILE *f)
{
    fprintf(f,
            "usage: ntprof history [options]\n"
            "\n"
            "Lists the runs `ntprof run` recorded, newest first, or shows one again.\n"
            "\n"
            "      --db PATH          the history database (default:\n"
            "                         $XDG_DATA_HOME/ntprof/history.db or\n"
            "                         ~/.local/share/ntprof/history.db)\n"
            "      --topology NAME    only runs of this topology\n"
            "      --backend NAME     only runs on this backend\n"
            "      --since DATE       only runs from DATE on (2025-03-01 or 2025-03-01T12:00:00Z)\n"
            "  -n, --limit N          at most N runs (default: all)\n"
            "      --show ID          the full report of run ID instead of the list\n"
            "  -f, --format F         table (default), json or csv\n"
            "  -o, --output FILE      write to FILE (written only on success)\n"
            "  -h, --help             this text\n");
}

enum { OPT_DB = 1000, OPT_TOPOLOGY, OPT_BACKEND, OPT_SINCE, OPT_SHOW };

typedef struct list_arg {
    const ntp_history_entry *e;
    int n;
} list_arg;

static ntp_status write_list(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    const list_arg *a = arg;
    return ntp_history_write(ctx, a->e, a->n, fmt, f);
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
    static const struct option longopts[] = {
        {"db", required_argument, NULL, OPT_DB},
        {"topology", required_argument, NULL, OPT_TOPOLOGY},
        {"backend", required_argument, NULL, OPT_BACKEND},
        {"since", required_argument, NULL, OPT_SINCE},
        {"limit", required_argument, NULL, 'n'},
        {"show", required_argument, NULL, OPT_SHOW},
        {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    ntp_history_filter filter = {0};
    ntp_format fmt = NTP_FORMAT_TABLE;
    const char *db = NULL, *output = NULL;
    int64_t v, show = 0;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "n:f:o:h", longopts, NULL)) != -1) {
        switch (opt) {
        case OPT_DB: db = optarg; break;
        case OPT_TOPOLOGY: filter.topology = optarg; break;
        case OPT_BACKEND: filter.backend = optarg; break;
        case OPT_SINCE: filter.since = optarg; break;
        case 'n':
            if (!cli_parse_int(optarg, 1, 1000000000, &v)) {
                cli_error("--limit expects a positive integer, got '%s'", optarg);
                return CLI_USAGE;
            }
            filter.limit = (int)v;
            break;
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
        case 'o': output = optarg; break;
        case 'h': history_usage(stdout); return CLI_OK;
        default: cli_error("see 'ntprof history --help'"); return CLI_USAGE;
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
    if (access(db, F_OK) != 0 && !show) {
        list_arg none = {NULL, 0};
        rc = cli_write_output(ctx, output, write_list, &none, fmt);
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
    } else {
        ntp_history_entry *e = NULL;
        int n = 0;
        if (ntp_store_list(ctx, s, &filter, &e, &n) != NTP_STATUS_OK) {
            rc = ntp_ctx_status(ctx) == NTP_STATUS_INVALID_ARGUMENT ? (cli_fail(ctx), CLI_USAGE)
                                                                    : cli_fail(ctx);
        } else {
            list_arg a = {e, n};
            rc = cli_write_output(ctx, output, write_list, &a, fmt);
        }
        free(e);
    }
    ntp_store_close(s);
out:
    ntp_ctx_free(ctx);
    return rc;
}
