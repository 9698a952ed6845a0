/* ntprof compare: runs side by side, from report files or the history. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cmd_compare(int argc, char **argv);

enum { OPT_DB = 1000, OPT_HTML };

static ntp_status write_cmp(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    return ntp_report_write_comparison(ctx, arg, fmt, f);
}

static ntp_status write_html(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    (void)fmt;
    return ntp_report_write_comparison_html(ctx, arg, f);
}

/* A run id: digits only (a file of that name wins). */
static bool run_id(const char *s, int64_t *id)
{
    return s[0] && strspn(s, "0123456789") == strlen(s) && cli_parse_int(s, 1, INT64_MAX, id);
}

int cmd_compare(int argc, char **argv)
{
    ntp_format fmt = NTP_FORMAT_TABLE;
    const char *db = NULL, *output = NULL, *html = NULL;
    const cli_option opts[] = {
        CLI_HELP("usage: ntprof compare A B [C ...] [options]\n"
                 "\n"
                 "Compares runs layer by layer against the first (A): layers aligned by name\n"
                 "(renamed, added and missing layers shown), speedups with their confidence\n"
                 "(overlapping 95% intervals of the medians read \"no significant difference\"),\n"
                 "each layer's share of the time side by side, largest regressions first, and\n"
                 "what differs in topology, configuration and hardware.\n"
                 "\n"
                 "A, B, ... are run reports (`ntprof run --format json -o FILE`) or run ids from\n"
                 "the history (`ntprof history` lists them).\n"
                 "\n"),
        CLI_STR("db", OPT_DB, "PATH", "the history database run ids refer to", &db),
        CLI_OPT("format", 'f', "F", "table (default), json or csv"),
        CLI_STR("output", 'o', "FILE", "write to FILE (written only on success)", &output),
        CLI_STR("html", OPT_HTML, "FILE", "also write a self-contained HTML report", &html),
        CLI_OPT("help", 'h', NULL, "this text"),
        CLI_OPT_END,
    };
    cli_getopt_state gs = {0};
    int opt;
    while ((opt = cli_getopt(argc, argv, opts, &gs)) != -1) {
        switch (opt) {
        case 'f':
            if (!cli_parse_format(optarg, &fmt))
                return CLI_USAGE;
            break;
        case 'h': cli_usage(stdout, opts, 25); return CLI_OK;
        case CLI_OPT_BAD: return CLI_USAGE;
        default: cli_error("see 'ntprof compare --help'"); return CLI_USAGE;
        }
    }
    int n = argc - optind;
    if (n < 2) {
        cli_error("compare needs at least two runs: report files or run ids (see 'ntprof compare "
                  "--help')");
        return CLI_USAGE;
    }
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_run_result **runs = calloc((size_t)n, sizeof *runs);
    char **labels = calloc((size_t)n, sizeof *labels);
    if (!ctx || !runs || !labels) {
        cli_error("out of memory");
        ntp_ctx_free(ctx);
        free(runs);
        free(labels);
        return CLI_FAIL;
    }
    int rc = CLI_OK;
    ntp_store *s = NULL;
    char path[4096];
    /* The runs it reads, and the history they may come from, are inputs. */
    const ntp_output_path outs[] = {{"--db", db, NTP_OUTPUT_SAME_ONLY},
                                    {"-o", output, NTP_OUTPUT_FILE},
                                    {"--html", html, NTP_OUTPUT_FILE}};
    if (cli_check_outputs(ctx, outs, 3, (const char *const *)argv + optind, n) != CLI_OK)
        rc = CLI_FAIL;
    for (int i = 0; i < n && rc == CLI_OK; i++) {
        const char *arg = argv[optind + i];
        int64_t id;
        char label[64];
        if (access(arg, F_OK) == 0 || !run_id(arg, &id)) {
            if (ntp_run_result_load(ctx, arg, &runs[i]) != NTP_STATUS_OK)
                rc = cli_fail(ctx);
            labels[i] = strdup(arg);
            continue;
        }
        if (!s) {
            if (!db && ntp_store_default_path(ctx, path, sizeof path) == NTP_STATUS_OK)
                db = path;
            if (!db || ntp_store_open(ctx, db, NTP_STORE_READ_ONLY, &s) != NTP_STATUS_OK) {
                rc = cli_fail(ctx);
                break;
            }
        }
        if (ntp_store_load_run(ctx, s, id, &runs[i]) != NTP_STATUS_OK)
            rc = cli_fail(ctx);
        snprintf(label, sizeof label, "run %s", arg);
        labels[i] = strdup(label);
    }
    ntp_store_close(s);
    ntp_comparison *c = NULL;
    if (rc == CLI_OK && ntp_compare(ctx, (const ntp_run_result *const *)runs,
                                    (const char *const *)labels, n, &c) != NTP_STATUS_OK)
        rc = cli_fail(ctx);
    if (rc == CLI_OK)
        rc = cli_write_output(ctx, output, write_cmp, c, fmt);
    if (rc == CLI_OK && html)
        rc = cli_write_output(ctx, html, write_html, c, NTP_FORMAT_TABLE);
    ntp_comparison_free(c);
    for (int i = 0; i < n; i++) {
        ntp_run_result_free(runs[i]);
        free(labels[i]);
    }
    free(runs);
    free(labels);
    ntp_ctx_free(ctx);
    return rc;
}
