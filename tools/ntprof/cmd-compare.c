/* ntprof compare: runs side by side, from report files or the history. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cmd_compare(int argc, char **argv);

enum { OPT_DB = 1000, OPT_HTML, OPT_MACHINE, OPT_BACKEND, OPT_PRECISION, OPT_BATCH, OPT_THREADS };

enum { MAX_MACHINES = 16 };

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

/* compare --machine: the runs the store lines up for the machines, labelled
 * by machine. */
static int compare_machines(int argc, char **argv, const char **machines, int n,
                            const ntp_fleet_query *fq, const char *db, const char *output,
                            const char *html, ntp_format fmt)
{
    int extra = argc - optind;
    if (n < 2) {
        cli_error("compare --machine needs two machines or more (--machine A --machine B)");
        return CLI_USAGE;
    }
    if (extra > 1) {
        cli_error("compare --machine takes at most one MODEL, not %d arguments", extra);
        return CLI_USAGE;
    }
    ntp_fleet_query q = *fq;
    q.model = extra ? argv[optind] : NULL;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_run_result **runs = calloc((size_t)n, sizeof *runs);
    char **labels = calloc((size_t)n, sizeof *labels);
    int64_t *ids = calloc((size_t)n, sizeof *ids);
    char(*keys)[256] = calloc((size_t)n, sizeof *keys);
    int rc = CLI_OK;
    if (!ctx || !runs || !labels || !ids || !keys) {
        cli_error("out of memory");
        rc = CLI_FAIL;
    }
    const ntp_output_path outs[] = {{"--db", db, NTP_OUTPUT_SAME_ONLY},
                                    {"-o", output, NTP_OUTPUT_FILE},
                                    {"--html", html, NTP_OUTPUT_FILE}};
    if (rc == CLI_OK &&
        cli_check_outputs(ctx, outs, 3, (const char *const *)argv + optind, extra) != CLI_OK)
        rc = CLI_FAIL;
    char path[4096];
    if (rc == CLI_OK && !db) {
        if (ntp_store_default_path(ctx, path, sizeof path) != NTP_STATUS_OK)
            rc = cli_fail(ctx);
        db = path;
    }
    ntp_store *s = NULL;
    if (rc == CLI_OK && (ntp_store_open(ctx, db, NTP_STORE_READ_ONLY, &s) != NTP_STATUS_OK ||
                         ntp_store_fleet_runs(ctx, s, &q, machines, n, ids, keys) != NTP_STATUS_OK))
        rc = cli_fail(ctx);
    for (int i = 0; i < n && rc == CLI_OK; i++) {
        if (ntp_store_load_run(ctx, s, ids[i], &runs[i]) != NTP_STATUS_OK) {
            rc = cli_fail(ctx);
            break;
        }
        char label[512];
        snprintf(label, sizeof label, "%s (run %lld)", keys[i], (long long)ids[i]);
        if (!(labels[i] = strdup(label))) {
            cli_error("out of memory");
            rc = CLI_FAIL;
        }
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
    for (int i = 0; i < n && runs && labels; i++) {
        ntp_run_result_free(runs[i]);
        free(labels[i]);
    }
    free(runs);
    free(labels);
    free(ids);
    free(keys);
    ntp_ctx_free(ctx);
    return rc;
}

int cmd_compare(int argc, char **argv)
{
    ntp_format fmt = NTP_FORMAT_TABLE;
    const char *db = NULL, *output = NULL, *html = NULL;
    const char *machines[MAX_MACHINES];
    int n_machines = 0;
    ntp_fleet_query fq = {0};
    int64_t num;
    const cli_option opts[] = {
        CLI_HELP("usage: ntprof compare A B [C ...] [options]\n"
                 "       ntprof compare --machine M1 --machine M2 [...] [MODEL] [--db DB]\n"
                 "\n"
                 "Compares runs layer by layer against the first (A): layers aligned by name\n"
                 "(renamed, added and missing layers shown), speedups with their confidence\n"
                 "(overlapping 95% intervals of the medians read \"no significant difference\"),\n"
                 "each layer's share of the time side by side, largest regressions first, and\n"
                 "what differs in topology, configuration and hardware.\n"
                 "\n"
                 "A, B, ... are run reports (`ntprof run --format json -o FILE`) or run ids from\n"
                 "the history (`ntprof history` lists them).\n"
                 "\n"
                 "With --machine, the runs are each machine's newest run of the newest\n"
                 "configuration (topology, backend, precision, batch) that every machine\n"
                 "given ran, from the history: the same model across a fleet. MODEL (a\n"
                 "topology name or file), --backend, --precision, --batch and --threads\n"
                 "narrow it. A machine is its key (CPU model|cores|hostname, as `ntprof\n"
                 "machine` and `ntprof history` show it) or a unique part of it.\n"
                 "\n"),
        CLI_STR("db", OPT_DB, "PATH", "the history database run ids refer to", &db),
        CLI_OPT("format", 'f', "F", "table (default), json or csv"),
        CLI_STR("output", 'o', "FILE", "write to FILE (written only on success)", &output),
        CLI_STR("html", OPT_HTML, "FILE", "also write a self-contained HTML report", &html),
        CLI_OPT("machine", OPT_MACHINE, "M", "compare this machine's runs (twice or more)"),
        CLI_STR("backend", OPT_BACKEND, "NAME", "with --machine: only runs on this backend",
                &fq.backend),
        CLI_STR("precision", OPT_PRECISION, "P", "with --machine: only runs at this precision",
                &fq.precision),
        CLI_OPT("batch", OPT_BATCH, "N", "with --machine: only runs of this batch size"),
        CLI_OPT("threads", OPT_THREADS, "N",
                "with --machine: only runs with this many threads (default: each machine's own)"),
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
        case OPT_MACHINE:
            if (n_machines == MAX_MACHINES) {
                cli_error("at most %d --machine options", MAX_MACHINES);
                return CLI_USAGE;
            }
            machines[n_machines++] = optarg;
            break;
        case OPT_BATCH:
        case OPT_THREADS:
            if (!cli_parse_int(optarg, 1, opt == OPT_BATCH ? INT64_MAX : 4096, &num)) {
                cli_error("--%s expects a positive integer, not '%s'",
                          opt == OPT_BATCH ? "batch" : "threads", optarg);
                return CLI_USAGE;
            }
            if (opt == OPT_BATCH)
                fq.batch = num;
            else
                fq.threads = (int)num;
            break;
        default: return cli_option_end("compare", opt, opts, 25);
        }
    }
    int n = argc - optind;
    if (n_machines)
        return compare_machines(argc, argv, machines, n_machines, &fq, db, output, html, fmt);
    if (fq.backend || fq.precision || fq.batch || fq.threads) {
        cli_error("--backend, --precision, --batch and --threads choose runs for --machine; "
                  "without it, name the runs");
        return CLI_USAGE;
    }
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
