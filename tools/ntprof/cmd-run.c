/* ntprof run: build a topology on a backend, run it, and measure it. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli-backends.h"
#include "cli.h"

enum {
    OPT_PIN = 1000,
    OPT_SAVE,
    OPT_MIN_TIME,
    OPT_ONLY,
    OPT_NOISE,
    OPT_FUSE,
    OPT_NO_ACCURACY,
    OPT_DB,
    OPT_NO_DB,
    OPT_HTML
};

enum { OPT_COUNTERS = 1100, OPT_TOOL, OPT_TOOL_DIR, OPT_COUNTER_ITERATIONS };

enum { OPT_PLACE = 1200, OPT_CUDA_GRAPH, OPT_BACKEND_OPTIONS };
enum { OPT_RUN_UUID = 1300 };
enum { OPT_NO_RECORD = 1400 };
enum { OPT_TORCH_SCRIPT = 1500 };
enum { OPT_BANDWIDTH_PROBE = 1600 };

/* A UUID as ntprof writes them: 8-4-4-4-12 lowercase hex digits. */
static bool valid_uuid(const char *u)
{
    if (strlen(u) != 36)
        return false;
    for (int i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? u[i] != '-' : !((u[i] >= '0' && u[i] <= '9') || (u[i] >= 'a' && u[i] <= 'f')))
            return false;
    }
    return true;
}

/* The column run's --help starts each option's text at. */
#define RUN_HELP_COL 26

/* --tool ncu[:MARKER] and --tool nsys profile the GPU (docs/gpu.md). */
static bool gpu_tool(const char *t)
{
    return t &&
           ((strncmp(t, "ncu", 3) == 0 && (t[3] == '\0' || t[3] == ':')) || strcmp(t, "nsys") == 0);
}

/* This command again for the GPU tool to run: the same topology and
 * execution options, --tool nvtx (every row in an NVTX range), one
 * iteration, and nothing written where this run writes its reports. */
static char **gpu_child_argv(int argc, char **argv, const char *dir, char *report, size_t len)
{
    static const char *const with_value[] = {"-o",   "--output", "--trace",    "--html",
                                             "--db", "--tool",   "--tool-dir", "--counters",
                                             "-f",   "--format"};
    static const char *const prefixed[] = {"--output=", "--trace=",    "--html=",     "--db=",
                                           "--tool=",   "--tool-dir=", "--counters=", "--format="};
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char **v = calloc((size_t)argc + 24, sizeof *v);
    if (n <= 0 || !v) {
        free(v);
        return NULL;
    }
    exe[n] = '\0';
    int k = 0;
    v[k++] = strdup(exe);
    for (int i = 0; i < argc; i++) {
        bool skip = false;
        for (size_t j = 0; j < sizeof with_value / sizeof with_value[0] && !skip; j++)
            if (strcmp(argv[i], with_value[j]) == 0) {
                skip = true;
                i++; /* and its value */
            }
        for (size_t j = 0; j < sizeof prefixed / sizeof prefixed[0] && !skip; j++)
            skip = strncmp(argv[i], prefixed[j], strlen(prefixed[j])) == 0;
        if (!skip && (strncmp(argv[i], "-o", 2) == 0 || strncmp(argv[i], "-f", 2) == 0) &&
            argv[i][2])
            skip = true; /* -oFILE, -fjson */
        if (!skip && i < argc)
            v[k++] = strdup(argv[i]);
    }
    snprintf(report, len, "%s/child-report.json", dir);
    const char *tail[] = {"--tool",     "nvtx",    "-n",
                          "1",          "-w",      "1",
                          "--min-time", "0",       "--counter-iterations",
                          "1",          "--no-db", "--no-accuracy",
                          "-f",         "json",    "-o",
                          report};
    for (size_t j = 0; j < sizeof tail / sizeof tail[0]; j++)
        v[k++] = strdup(tail[j]);
    for (int i = 0; i < k; i++)
        if (!v[i]) {
            for (int j = 0; j < k; j++)
                free(v[j]);
            free(v);
            return NULL;
        }
    return v;
}

static void free_argv(char **v)
{
    for (int i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

/* Profile the finished run under ncu or nsys; files go to --tool-dir or a
 * new temporary directory. */
static int run_gpu_tool(ntp_ctx *ctx, ntp_run_result *res, const char *tool, const char *tool_dir,
                        int argc, char **argv)
{
    char dir[4096], report[4200];
    if (tool_dir) {
        snprintf(dir, sizeof dir, "%s", tool_dir);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/ntprof-gpu-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            cli_error("--tool %s: cannot make a directory in %s", tool, tmp && *tmp ? tmp : "/tmp");
            return CLI_FAIL;
        }
    }
    char **v = gpu_child_argv(argc, argv, dir, report, sizeof report);
    if (!v) {
        cli_error("out of memory");
        return CLI_FAIL;
    }
    ntp_status st = ntp_run_gpu_tool(ctx, res, tool, (const char *const *)v, dir);
    free_argv(v);
    return st == NTP_STATUS_OK ? CLI_OK : cli_fail(ctx);
}

static ntp_status write_run(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    return ntp_report_write_run(ctx, arg, fmt, f);
}

static ntp_status write_html(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    (void)fmt;
    return ntp_report_write_run_html(ctx, arg, f);
}

static ntp_status write_trace(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    (void)fmt;
    return ntp_report_write_run_trace(ctx, arg, f);
}

static void run_progress(void *user, const char *phase, int done, int total)
{
    cli_progress_show(user, phase, done, total, NULL);
}

/* ntp_run, its progress line erased before anything else is printed. */
static ntp_status run_once(ntp_ctx *ctx, const ntp_graph *g, const ntp_run_opts *ro,
                           cli_progress *prog, ntp_run_result **res)
{
    ntp_status st = ntp_run(ctx, g, ro, res);
    cli_progress_clear(prog);
    return st;
}

int cmd_run(int argc, char **argv)
{
    cli_topo_opts topo = {.math_modes = true};
    ntp_run_opts ro;
    ntp_run_opts_default(&ro);
    cli_run_opts co = {0};
    const char *output = NULL, *db = NULL, *html = NULL;
    bool use_db = true;
    bool record = true;        /* --no-record: the history read, the run not added */
    bool torch_script = false; /* --torch-script */
    char backend_help[512];
    snprintf(backend_help, sizeof backend_help,
             "backend (built: %s), or a comma-separated list to\n"
             "compare side by side; -o, --trace and --html may then\n"
             "hold {backend} for one report per backend",
             ntp_backends());
    const cli_option opts[] = {
        CLI_HELP("usage: ntprof run FILE [options]\n"
                 "\n"
                 "Builds the topology on a backend with random weights (or the model's own),\n"
                 "feeds it synthetic or given inputs, and measures every layer and the whole.\n"
                 "\n"
                 "topology:\n"),
        CLI_OPT("set", 's', "NAME=VALUE", "override a <param> (repeatable)"),
        CLI_OPT("batch", 'b', "N", "shorthand for --set batch=N"),
        CLI_OPT("precision", 'p', "P",
                "f32, bf16, f16 or i8; tf32: f32 storage with TF32\n"
                "tensor-core math on GPUs (docs/gpu.md)"),
        CLI_OPT("max-memory", 'M', "SIZE",
                "refuse topologies needing more (default: physical RAM)"),
        CLI_HELP("execution:\n"),
        CLI_OPT("backend", 'B', "NAME", backend_help),
        CLI_NUM("threads", 't', "N", "threads for the backend (default 0: all cores)", &ro.threads,
                0, 4096, "a number of threads (0: all cores)"),
        CLI_STR("pin", OPT_PIN, "CPUS", "pin to a CPU list such as 0-1,3", &ro.pin),
        CLI_OPT("seed", CLI_OPT_SEED, "N", "seed of weights and synthetic inputs (default 1)"),
        CLI_SET("fuse", OPT_FUSE, "let the backend fuse layers (conv/fc + bias + activation + add)",
                &ro.fuse),
        /* main.c takes --wait-policy out of argv before any command sees it. */
        CLI_HELP("      --wait-policy P     thread pools' idle workers: spin, passive or auto\n"
                 "                          (default: passive beside busy processes, else a\n"
                 "                          short spin; docs/run.md#wait-policy)\n"),
        CLI_OPT("place", OPT_PLACE, "LAYER=BACKEND",
                "run LAYER on BACKEND, as its backend= attribute\n"
                "would (repeatable; docs/gpu.md)"),
        CLI_SET("cuda-graph", OPT_CUDA_GRAPH,
                "replay each pass on the GPU as a captured CUDA graph", &ro.cuda_graph),
        CLI_STR("backend-options", OPT_BACKEND_OPTIONS, "LIST",
                "BACKEND.KEY=VALUE,... for the backends, such as\n"
                "torch.memory_format=channels_last (docs/frameworks.md)",
                &ro.backend_options),
        CLI_SET("torch-script", OPT_TORCH_SCRIPT,
                "with --backend torch: also run the topology as one\n"
                "TorchScript module, frozen and optimised for inference,\n"
                "timed end to end after the eager run, in the report\n"
                "(table, JSON and CSV; docs/frameworks.md)",
                &torch_script),
        CLI_OPT("input", 'i', "[NAME=]FILE", "a graph input from a .npy file (repeatable)"),
        CLI_STR("save-outputs", OPT_SAVE, "DIR", "write every graph output as DIR/output_<i>.npy",
                &ro.save_outputs_dir),
        CLI_HELP("measurement:\n"),
        CLI_NUM("warmup", 'w', "N", "warm-up iterations, discarded (default 3)", &ro.warmup, 0,
                1000000, "a non-negative integer"),
        CLI_NUM("iterations", 'n', "N", "at least N measured iterations (default 10)",
                &ro.iterations, 1, 10000000, "a positive integer"),
        CLI_OPT("min-time", OPT_MIN_TIME, "S",
                "... until the end-to-end times add up to S seconds, and\n"
                "the per-layer ones too (default 1)"),
        CLI_STR("only", OPT_ONLY, "MARKER", "measure only the layers of a <marker>",
                &ro.only_marker),
        CLI_OPT("noise-cv", OPT_NOISE, "X",
                "warn when the coefficient of variation exceeds X (0.05)"),
        CLI_OPT("bandwidth-probe", OPT_BANDWIDTH_PROBE, "WHEN",
                "time a DRAM triad before and after the measured window:\n"
                "auto (when --min-time is at least 0.5), on, off\n"
                "(docs/run.md#contention)"),
        CLI_UNSET("no-accuracy", OPT_NO_ACCURACY,
                  "skip the f32 comparison of bf16, f16 and i8 runs", &ro.accuracy),
        CLI_HELP("counters and tools (a separate pass after the timing; docs/counters.md):\n"),
        CLI_STR("counters", OPT_COUNTERS, "LIST",
                "count per layer: sets sw, basic, cache, topdown, all, and\n"
                "event names (`ntprof counters` lists this machine's)",
                &ro.counters),
        CLI_STR("tool", OPT_TOOL, "NAME",
                "count each layer under perf-stat[:EVENTS],\n"
                "perf-record[:EVENTS], callgrind, cachegrind,\n"
                "papi[:EVENTS] or nvtx; ncu[:MARKER] (Nsight Compute on\n"
                "a marker's kernels) or nsys (a timeline) on GPUs",
                &ro.tool),
        CLI_STR("tool-dir", OPT_TOOL_DIR, "DIR",
                "where tools leave files (default: a new temp directory)", &ro.tool_dir),
        CLI_NUM("counter-iterations", OPT_COUNTER_ITERATIONS, "N",
                "iterations of the counting pass (default: -n)", &ro.counter_iterations, 1,
                10000000, "a positive integer"),
        CLI_HELP("output:\n"),
        CLI_OPT("format", 'f', "F", "table (default), json or csv"),
        CLI_STR("output", 'o', "FILE", "write the report to FILE (written only on success)",
                &output),
        CLI_OPT("trace", CLI_OPT_TRACE, "FILE",
                "write a Chrome trace (Perfetto, chrome://tracing)"),
        CLI_STR("html", OPT_HTML, "FILE", "write a self-contained HTML report with charts", &html),
        CLI_HELP("history:\n"),
        CLI_STR("db", OPT_DB, "PATH",
                "record the run in this history database (default:\n"
                "$XDG_DATA_HOME/ntprof/history.db); its cached machine\n"
                "ceilings (`ntprof machine`) give the roofline",
                &db),
        CLI_UNSET("no-db", OPT_NO_DB, "do not record the run", &use_db),
        CLI_OPT("run-uuid", OPT_RUN_UUID, "UUID",
                "the run's identity (default: a new random one): a\n"
                "history stores a run once, so a task retried with\n"
                "the same UUID is not recorded twice"),
        CLI_UNSET("no-record", OPT_NO_RECORD,
                  "read the history (ceilings, calibrations) but do\n"
                  "not record the run (a sweep records its runs itself)",
                  &record),
        CLI_OPT("help", 'h', NULL, "this text"),
        CLI_OPT_END,
    };
    cli_getopt_state gs = {0};
    const char **inputs = calloc((size_t)argc + 1, sizeof *inputs);
    const char **places = calloc((size_t)argc + 1, sizeof *places);
    int n_inputs = 0, n_places = 0, opt, rc = CLI_USAGE;
    double d;
    if (!inputs || !places) {
        free(places);
        cli_error("out of memory");
        return CLI_FAIL;
    }
    while ((opt = cli_getopt(argc, argv, opts, &gs)) != -1) {
        int r = cli_run_option(&co, &topo, opt, optarg);
        if (r < 0)
            goto out;
        if (r > 0)
            continue;
        switch (opt) {
        case 'i': inputs[n_inputs++] = optarg; break;
        case OPT_MIN_TIME:
            if (!cli_parse_double(optarg, 0, 86400, &d)) {
                cli_error("--min-time expects seconds (0 to 86400), got '%s'", optarg);
                goto out;
            }
            ro.min_time_s = d;
            break;
        case OPT_BANDWIDTH_PROBE:
            if (strcmp(optarg, "auto") == 0)
                ro.bandwidth_probe = NTP_BANDWIDTH_PROBE_AUTO;
            else if (strcmp(optarg, "on") == 0)
                ro.bandwidth_probe = NTP_BANDWIDTH_PROBE_ON;
            else if (strcmp(optarg, "off") == 0)
                ro.bandwidth_probe = NTP_BANDWIDTH_PROBE_OFF;
            else {
                cli_error("--bandwidth-probe expects auto, on or off, got '%s'", optarg);
                goto out;
            }
            break;
        case OPT_NOISE:
            if (!cli_parse_double(optarg, 0, 10, &d) || d == 0) {
                cli_error("--noise-cv expects a positive fraction such as 0.05, got '%s'", optarg);
                goto out;
            }
            ro.noise_cv = d;
            break;
        case OPT_RUN_UUID:
            if (!valid_uuid(optarg)) {
                cli_error("--run-uuid expects a UUID such as "
                          "0f8fad5b-d9cb-469f-a165-70867728950e, got '%s'",
                          optarg);
                goto out;
            }
            ro.run_uuid = optarg;
            break;
        case OPT_PLACE:
            if (!cli_place_arg(optarg))
                goto out;
            places[n_places++] = optarg;
            break;
        default: rc = cli_option_end("run", opt, opts, RUN_HELP_COL); goto out;
        }
    }
    if (!cli_want_files("run", argc, argv, 1, "a topology FILE"))
        goto out;
    ro.math = topo.math;
    if (co.backend)
        ro.backend = co.backend;
    if (co.set_seed)
        ro.seed = co.seed;
    const char *trace = co.trace;
    ro.keep_trace = trace != NULL;
    ntp_format fmt = co.fmt;
    ro.inputs = inputs;
    ro.n_inputs = n_inputs;
    ro.place = places;
    ro.n_place = n_places;
    if (torch_script && (!ro.backend || strcmp(ro.backend, "torch") != 0)) {
        cli_error("--torch-script needs --backend torch: the module is timed beside the eager "
                  "per-layer run");
        goto out;
    }
    if (torch_script && ro.only_marker) {
        cli_error("--torch-script times the whole topology: --only is not taken with it");
        goto out;
    }
    if (torch_script && n_inputs > 0) {
        cli_error("--torch-script runs the module on generated inputs: -i is not taken with it");
        goto out;
    }
    /* Under --tool, ntprof re-runs itself under perf or valgrind; in that
     * child the parent does the reporting (docs/counters.md). */
    bool tool_child = ntp_run_tool_child(&ro);
    /* The module timed after the eager run, into its report (every format). */
    ro.torch_script = torch_script && !tool_child;
    ntp_ctx *ctx = cli_ctx_new();
    if (!ctx) {
        rc = CLI_FAIL;
        goto out;
    }
    /* The GPU tools run after the run, on a copy of it (docs/gpu.md): the
     * library's counting pass does not see them, and one that is not
     * installed is refused before anything runs. */
    const char *gtool = NULL;
    if (gpu_tool(ro.tool)) {
        if (ntp_run_gpu_tool_check(ctx, ro.tool) != NTP_STATUS_OK) {
            rc = cli_fail(ctx);
            ntp_ctx_free(ctx);
            goto out;
        }
        gtool = ro.tool;
        ro.tool = NULL;
    }
    ntp_load_opts lo = cli_load_opts(&topo);
    ntp_graph *g = NULL;
    ntp_run_result *res = NULL;
    /* The history is a convenience: when it cannot be read or written the
     * run still runs and reports, with a warning (docs/history.md). */
    char db_path[4096];
    ntp_ceilings ceilings;
    bool have_ceilings = false;
    /* Every output checked before anything is measured; no report over
     * the history database. */
    const ntp_output_path outs[] = {
        cli_db_output(ctx, db, use_db, db_path, sizeof db_path),
        {"-o", output, NTP_OUTPUT_FILE},
        {"--trace", trace, NTP_OUTPUT_FILE},
        {"--html", html, NTP_OUTPUT_FILE},
        {"--save-outputs", ro.save_outputs_dir, NTP_OUTPUT_DIR},
        {"--tool-dir", ro.tool || gtool ? ro.tool_dir : NULL, NTP_OUTPUT_DIR}};
    const char *ins[] = {argv[optind]};
    db = outs[0].path;
    if (!tool_child && cli_check_outputs(ctx, outs, 6, ins, 1) != CLI_OK) {
        rc = CLI_FAIL;
        ntp_ctx_free(ctx);
        goto out;
    }
    /* A shared store (a URL) that cannot be reached fails the run before
     * anything is measured: a cluster's task must not look done. */
    bool shared_db = use_db && db && ntp_store_is_url(db) && !tool_child;
    if (use_db && record && !tool_child)
        cli_db_migrate(ctx, db);
    if (use_db && db &&
        ntp_store_find_ceilings(ctx, db, &ceilings, &have_ceilings) != NTP_STATUS_OK) {
        if (shared_db) {
            rc = cli_fail(ctx);
            ntp_ctx_free(ctx);
            goto out;
        }
        fprintf(stderr, "ntprof: warning: %s; no roofline\n", ntp_ctx_errmsg(ctx));
    }
    /* The store reached after retries; cached ceilings of another CPU,
     * not used. */
    cli_print_warnings(ctx);
    if (!shared_db && use_db && !db)
        fprintf(stderr, "ntprof: warning: %s; the run is not recorded\n", ntp_ctx_errmsg(ctx));
    if (have_ceilings)
        ro.ceilings = &ceilings;
    ntp_ctx_clear(ctx);
    /* Progress on a terminal: a run can take minutes before its report. */
    cli_progress prog;
    cli_progress_init(&prog);
    if (prog.tty && !tool_child) {
        ro.progress = run_progress;
        ro.progress_user = &prog;
    }
    ntp_status lst = ntp_graph_load(ctx, argv[optind], &lo, &g);
    /* The topology's own warnings now, before the run (which may take
     * minutes); the run's warnings are part of its report. */
    if (lst == NTP_STATUS_OK)
        cli_print_warnings(ctx);
    if (lst != NTP_STATUS_OK) {
        rc = cli_fail(ctx);
    } else if (!tool_child && ro.backend && strchr(ro.backend, ',')) {
        /* A list of backends: each one run, side by side (cmd-run-backends.c). */
        rc = cli_run_backends(ctx, g, &ro, &prog, fmt, output, trace, html,
                              use_db && record ? db : NULL);
    } else if (run_once(ctx, g, &ro, &prog, &res) != NTP_STATUS_OK) {
        rc = cli_fail(ctx);
    } else if (tool_child) {
        rc = CLI_OK;
    } else if (gtool && (rc = run_gpu_tool(ctx, res, gtool, ro.tool_dir, argc, argv)) != CLI_OK) {
        /* the tool's one-line error is out */
    } else {
        if (use_db && db)
            cli_attach_prediction(ctx, db, g, res, places, n_places);
        cli_report_warnings(ctx, fmt == NTP_FORMAT_TABLE && !output);
        rc = cli_write_output(ctx, output, write_run, res, fmt);
        if (rc == CLI_OK && trace)
            rc = cli_write_output(ctx, trace, write_trace, res, NTP_FORMAT_JSON);
        if (rc == CLI_OK && html)
            rc = cli_write_output(ctx, html, write_html, res, NTP_FORMAT_TABLE);
        if (rc == CLI_OK && use_db && db && record) {
            /* The run's warnings are out; what follows is the store's (a
             * lost connection retried). */
            if (shared_db)
                ntp_ctx_clear_warnings(ctx);
            if (ntp_store_record_run(ctx, db, res, NULL) != NTP_STATUS_OK) {
                rc = cli_record_failed(ctx, db);
            } else if (shared_db) {
                cli_print_warnings(ctx);
            }
        }
    }
    ntp_run_result_free(res);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
out:
    free(inputs);
    free(places);
    cli_topo_free(&topo);
    return rc;
}
