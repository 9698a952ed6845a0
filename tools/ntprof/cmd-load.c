/* ntprof load: serve a topology under load by MLPerf LoadGen's scenarios
 * (docs/load.md). A thin client of ntp_loadgen_run: options in, report out;
 * Ctrl-C stops issuing and reports the queries so far. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cmd_load(int argc, char **argv);

enum {
    OPT_SCENARIO = 1300,
    OPT_QPS,
    OPT_BOUND,
    OPT_FIND_MAX,
    OPT_DURATION,
    OPT_MIN_QUERIES,
    OPT_TIMEOUT,
    OPT_NO_PIN,
    OPT_POLL,
    /* HTML and the history */
    OPT_HTML,
    OPT_DB,
    OPT_NO_DB
};

#define LOAD_HELP_COL 28

static volatile int interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void load_progress(void *user, const char *phase, int64_t done, int64_t total)
{
    cli_progress_show(user, phase, done > INT32_MAX ? INT32_MAX : (int)done,
                      total > INT32_MAX ? INT32_MAX : (int)total, NULL);
}

static ntp_status write_report(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    return ntp_report_write_load(ctx, arg, fmt, f);
}

static ntp_status write_trace(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    (void)fmt;
    return ntp_report_write_load_trace(ctx, arg, f);
}

static ntp_status write_html(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    (void)fmt;
    return ntp_report_write_load_html(ctx, arg, f);
}

int cmd_load(int argc, char **argv)
{
    cli_topo_opts topo = {0};
    ntp_loadgen_opts lo;
    ntp_loadgen_opts_default(&lo);
    cli_run_opts co = {0};
    const char *output = NULL, *html = NULL, *db = NULL;
    bool use_db = true;
    char backend_help[256];
    snprintf(backend_help, sizeof backend_help, "backend (built: %s)", ntp_backends());
    const cli_option opts[] = {
        CLI_HELP("usage: ntprof load FILE --scenario S [options]\n"
                 "\n"
                 "Serves the topology under load as MLPerf LoadGen does: queries issued by a\n"
                 "scenario, queued and batched by ntprof, run on instances of the model, each\n"
                 "timed from its arrival to its completion (docs/load.md).\n"
                 "\n"
                 "scenario:\n"),
        CLI_OPT("scenario", OPT_SCENARIO, "S",
                "single-stream (p90), multi-stream (p99), server\n"
                "(Poisson arrivals, p99 within a bound) or offline"),
        CLI_OPT("qps", OPT_QPS, "X", "server: offered queries per second"),
        CLI_OPT("latency-bound", OPT_BOUND, "MS", "server: the p99 bound in milliseconds"),
        CLI_SET("find-max-qps", OPT_FIND_MAX, "server: search the largest QPS meeting the bound",
                &lo.find_max_qps),
        CLI_NUM("samples-per-query", 'q', "N", "multi-stream: samples per query (default 8)",
                &lo.samples_per_query, 1, 4096, "1 to 4096"),
        CLI_OPT("duration", OPT_DURATION, "S", "minimum run time (default LoadGen's 600 s)"),
        CLI_OPT("min-queries", OPT_MIN_QUERIES, "N",
                "minimum queries (offline: samples); default LoadGen's:\n"
                "1024, 270336, 270336, 24576"),
        CLI_OPT("seed", CLI_OPT_SEED, "N", "seed of arrivals, weights and inputs (default 1)"),
        CLI_NUM("warmup", 'w', "N", "warm-up runs of every plan (default 3)", &lo.warmup, 0, 100000,
                "a non-negative integer"),
        CLI_HELP("serving:\n"),
        CLI_OPT("backend", 'B', "NAME", backend_help),
        CLI_NUM("instances", 'I', "N", "copies of the model serving the queue (default 1)",
                &lo.instances, 1, 256, "1 to 256"),
        CLI_NUM("threads-per-instance", 't', "T", "threads of each instance (default 1)",
                &lo.threads_per_instance, 1, 64, "1 to 64"),
        CLI_UNSET("no-pin", OPT_NO_PIN, "do not pin instances to cores of their own", &lo.pin),
        CLI_NUM("max-batch", 'm', "B", "dynamic batching: up to B samples at once (default 1)",
                &lo.max_batch, 1, 256, "1 to 256"),
        CLI_OPT("batch-timeout-us", OPT_TIMEOUT, "U",
                "how long a partial batch waits for more (default 0)"),
        CLI_OPT("poll-us", OPT_POLL, "US|auto",
                "an idle pinned instance polls the queue this long\n"
                "before it sleeps (auto: the run's margin, at most\n"
                "200 us; default 0: never; docs/load.md#generator-cost)"),
        CLI_HELP("topology:\n"),
        CLI_OPT("set", 's', "NAME=VALUE", "override a <param> (repeatable)"),
        CLI_OPT("precision", 'p', "P", "f32, bf16 or f16"),
        CLI_OPT("max-memory", 'M', "SIZE", "refuse topologies needing more"),
        CLI_HELP("output:\n"),
        CLI_OPT("format", 'f', "F", "table (default), json or csv (a row per query)"),
        CLI_STR("output", 'o', "FILE", "write the report to FILE (written only on success)",
                &output),
        CLI_OPT("trace", CLI_OPT_TRACE, "FILE", "a Chrome trace: one span per query and phase"),
        CLI_STR("html", OPT_HTML, "FILE",
                "a self-contained HTML report: the latency\n"
                "distribution, and latency against QPS after a search",
                &html),
        CLI_HELP("history:\n"),
        CLI_STR("db", OPT_DB, "PATH",
                "record the run in this history database (default:\n"
                "$XDG_DATA_HOME/ntprof/history.db); `ntprof history`\n"
                "lists it",
                &db),
        CLI_UNSET("no-db", OPT_NO_DB, "do not record the run", &use_db),
        CLI_OPT("help", 'h', NULL, "this text"),
        CLI_OPT_END,
    };
    cli_getopt_state gs = {0};
    int opt, rc = CLI_USAGE;
    int64_t v;
    double d;
    bool have_scenario = false;
    while ((opt = cli_getopt(argc, argv, opts, &gs)) != -1) {
        int r = cli_run_option(&co, &topo, opt, optarg);
        if (r < 0)
            goto out;
        if (r > 0)
            continue;
        switch (opt) {
        case OPT_SCENARIO:
            if (ntp_loadgen_scenario_parse(optarg, &lo.scenario) != NTP_STATUS_OK) {
                cli_error("--scenario expects single-stream, multi-stream, server or offline, "
                          "got '%s'",
                          optarg);
                goto out;
            }
            have_scenario = true;
            break;
        case OPT_QPS:
            if (!cli_parse_double(optarg, -1e300, 1e300, &d) || !(d > 0)) {
                cli_error("--qps expects a positive number of queries per second, got '%s'",
                          optarg);
                goto out;
            }
            lo.qps = d;
            break;
        case OPT_BOUND:
            if (!cli_parse_double(optarg, -1e300, 1e300, &d) || !(d > 0)) {
                cli_error("--latency-bound expects positive milliseconds, got '%s'", optarg);
                goto out;
            }
            lo.latency_bound_ms = d;
            break;
        case OPT_DURATION:
            if (!cli_parse_double(optarg, 0, 86400 * 7, &d)) {
                cli_error("--duration expects seconds (0 to a week), got '%s'", optarg);
                goto out;
            }
            lo.duration_s = d;
            break;
        case OPT_MIN_QUERIES:
            if (!cli_parse_int(optarg, 1, (int64_t)1 << 30, &v)) {
                cli_error("--min-queries expects a positive integer, got '%s'", optarg);
                goto out;
            }
            lo.min_queries = v;
            break;
        case OPT_TIMEOUT:
            if (!cli_parse_double(optarg, 0, 1e9, &d)) {
                cli_error("--batch-timeout-us expects non-negative microseconds, got '%s'", optarg);
                goto out;
            }
            lo.batch_timeout_us = d;
            break;
        case OPT_POLL:
            if (strcmp(optarg, "auto") == 0) {
                lo.poll_us = -1;
            } else if (!cli_parse_double(optarg, 0, 1e6, &d)) {
                cli_error("--poll-us expects microseconds (0 to 1e6) or auto, got '%s'", optarg);
                goto out;
            } else {
                lo.poll_us = d;
            }
            break;
        default: rc = cli_option_end("load", opt, opts, LOAD_HELP_COL); goto out;
        }
    }
    if (!cli_want_files("load", argc, argv, 1, "a topology FILE"))
        goto out;
    if (!have_scenario) {
        cli_error("load needs --scenario (single-stream, multi-stream, server or offline)");
        goto out;
    }
    if (lo.scenario == NTP_LOADGEN_SERVER && !lo.find_max_qps && lo.qps <= 0) {
        cli_error("the server scenario needs --qps X (queries per second) or --find-max-qps");
        goto out;
    }
    if (lo.scenario == NTP_LOADGEN_SERVER && lo.latency_bound_ms <= 0) {
        cli_error("the server scenario needs --latency-bound MS (the p99 bound)");
        goto out;
    }
    if (co.backend)
        lo.backend = co.backend;
    if (co.set_seed)
        lo.seed = co.seed;
    const char *trace = co.trace;
    ntp_format fmt = co.fmt;
    ntp_ctx *ctx = cli_ctx_new();
    if (!ctx) {
        rc = CLI_FAIL;
        goto out;
    }
    char db_path[4096];
    const ntp_output_path outs[] = {{"-o", output, NTP_OUTPUT_FILE},
                                    {"--trace", trace, NTP_OUTPUT_FILE},
                                    {"--html", html, NTP_OUTPUT_FILE},
                                    cli_db_output(ctx, db, use_db, db_path, sizeof db_path)};
    const char *ins[] = {argv[optind]};
    db = outs[3].path;
    if (use_db && !db)
        fprintf(stderr, "ntprof: warning: %s; the run is not recorded\n", ntp_ctx_errmsg(ctx));
    ntp_ctx_clear(ctx);
    if (cli_check_outputs(ctx, outs, 4, ins, 1) != CLI_OK) {
        rc = CLI_FAIL;
        ntp_ctx_free(ctx);
        goto out;
    }
    cli_progress prog;
    cli_progress_init(&prog);
    if (prog.tty) {
        lo.progress = load_progress;
        lo.progress_user = &prog;
    }
    /* Ctrl-C stops issuing; the queries so far are reported. A second one
     * while the instances drain is the default: the process ends, and the
     * reports, written atomically, are not left half-written. */
    interrupted = 0;
    lo.stop = &interrupted;
    struct sigaction sa = {.sa_handler = on_sigint, .sa_flags = SA_RESETHAND}, old;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    ntp_load_opts gl = cli_load_opts(&topo);
    ntp_loadgen_result *res = NULL;
    ntp_status st = ntp_loadgen_run(ctx, argv[optind], &gl, &lo, &res);
    cli_progress_clear(&prog);
    sigaction(SIGINT, &old, NULL);
    if (st != NTP_STATUS_OK) {
        rc = cli_fail(ctx);
    } else {
        cli_print_warnings(ctx);
        if (fmt != NTP_FORMAT_TABLE || output)
            for (int i = 0; i < ntp_loadgen_result_warning_count(res); i++)
                fprintf(stderr, "ntprof: warning: %s\n", ntp_loadgen_result_warning(res, i));
        rc = cli_write_output(ctx, output, write_report, res, fmt);
        if (rc == CLI_OK && trace)
            rc = cli_write_output(ctx, trace, write_trace, res, NTP_FORMAT_JSON);
        if (rc == CLI_OK && html)
            rc = cli_write_output(ctx, html, write_html, res, NTP_FORMAT_TABLE);
        /* The history keeps whole runs: an interrupted one is not recorded.
         * A shared store (a URL) that fails fails the command; a local one
         * warns (docs/history.md). */
        if (rc == CLI_OK && use_db && db && !ntp_loadgen_result_interrupted(res) &&
            ntp_loadgen_record(ctx, db, res, NULL) != NTP_STATUS_OK)
            rc = cli_record_failed(ctx, db);
        /* An interrupted run reports what it has, and says it was cut short. */
        if (rc == CLI_OK && ntp_loadgen_result_interrupted(res))
            rc = 130;
    }
    ntp_loadgen_result_free(res);
    ntp_ctx_free(ctx);
out:
    cli_topo_free(&topo);
    return rc;
}
