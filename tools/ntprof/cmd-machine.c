/* ntprof machine: describe this machine and measure (or recall) its
 * ceilings, which every run's roofline uses. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cmd_machine(int argc, char **argv);

enum { OPT_REMEASURE = 1000, OPT_NO_MEASURE, OPT_SECONDS, OPT_NO_GEMM, OPT_DB, OPT_NO_DB };
/* --calibrate (docs/predict.md) */
enum {
    OPT_CALIBRATE = 1100,
    OPT_BACKEND,
    OPT_QUICK,
    OPT_FAMILIES,
    OPT_CEILINGS,
    OPT_CACHE,
    OPT_KEEP_PASS,
    OPT_REFIT,
    OPT_PASSES,
    OPT_RECHECK,
    OPT_CONFIGS
};

/* --passes's message names the bound. */
_Static_assert(NTP_CALIBRATE_MAX_PASSES == 9, "--passes expects 1 to 9");

static ntp_status write_calibration(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    return ntp_report_write_calibration(ctx, arg, fmt, f);
}

static void calibrate_progress(void *user, int done, int total, const char *label)
{
    cli_progress_show(user, "calibrating", done, total, label);
}

typedef struct machine_arg {
    const ntp_machine_info *m;
    const ntp_ceilings *c;
} machine_arg;

static ntp_status write_machine(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    const machine_arg *a = arg;
    return ntp_report_write_machine(ctx, a->m, a->c, fmt, f);
}

/* Warn about a history problem and go on: the ceilings are still worth
 * printing even if they cannot be cached. */
static void warn_db(ntp_ctx *ctx)
{
    fprintf(stderr, "ntprof: warning: %s; ceilings are not cached (--db PATH or --no-db)\n",
            ntp_ctx_errmsg(ctx));
    ntp_ctx_clear(ctx);
}

static void recheck_progress(void *user, int done, int total, const char *label)
{
    cli_progress_show(user, "rechecking", done, total, label);
}

static ntp_status write_recheck(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    return ntp_report_write_recheck(ctx, arg, fmt, f);
}

/* --refit and --recheck: this machine's stored calibration of co's backend
 * and precision and its samples. --refit fits them again and stores the
 * fit in its place; --recheck times some again now and says how far the
 * machine moved (docs/predict.md#recheck). */
static int stored_calibration(ntp_ctx *ctx, const char *db, const ntp_machine_info *m,
                              const ntp_calibrate_opts *co, bool recheck, int configs,
                              const char *output, ntp_format fmt)
{
    char backend[32];
    snprintf(backend, sizeof backend, "%s", co->backend ? co->backend : ntp_backends());
    char *comma = strchr(backend, ',');
    if (comma)
        *comma = '\0';
    const char *precision = ntp_dtype_name(co->precision);
    if (!db) {
        cli_error("%s needs the history database (--db PATH)", recheck ? "--recheck" : "--refit");
        return CLI_FAIL;
    }
    ntp_store *s = NULL;
    /* A recheck writes nothing: the store is only read. */
    if (ntp_store_open(ctx, db, recheck ? NTP_STORE_READ_ONLY : NTP_STORE_CREATE, &s) !=
        NTP_STATUS_OK)
        return cli_fail(ctx);
    ntp_calibration cal, out;
    bool found = false;
    ntp_calibration_sample *samples = NULL;
    int n = 0, rc = CLI_OK;
    if (ntp_store_load_calibration(ctx, s, m->key, backend, precision, &cal, &found) !=
        NTP_STATUS_OK) {
        rc = cli_fail(ctx);
    } else if (!found) {
        cli_error("no %s %s calibration of this machine in %s; run `ntprof machine --calibrate "
                  "--backend %s%s%s`",
                  backend, precision, db, backend,
                  co->precision == NTP_DTYPE_F32 ? "" : " --precision ",
                  co->precision == NTP_DTYPE_F32 ? "" : precision);
        rc = CLI_FAIL;
    } else if (ntp_store_load_calibration_samples(ctx, s, m->key, backend, precision, &samples,
                                                  &n) != NTP_STATUS_OK) {
        rc = cli_fail(ctx);
    } else if (recheck) {
        ntp_recheck *r = malloc(sizeof *r);
        cli_progress prog;
        cli_progress_init(&prog);
        ntp_recheck_opts ro = {.configs = configs,
                               .families = co->families,
                               .progress = recheck_progress,
                               .progress_user = &prog};
        if (!r) {
            cli_error("out of memory");
            rc = CLI_FAIL;
        } else if (ntp_calibration_recheck(ctx, m, &cal, samples, n, &ro, r) != NTP_STATUS_OK) {
            cli_progress_clear(&prog);
            rc = cli_fail(ctx);
        } else {
            cli_progress_clear(&prog);
            rc = cli_write_output(ctx, output, write_recheck, r, fmt);
        }
        free(r);
    } else if (ntp_calibration_refit(ctx, &cal, samples, n, &out) != NTP_STATUS_OK ||
               ntp_store_save_calibration(ctx, s, &out) != NTP_STATUS_OK) {
        rc = cli_fail(ctx);
    } else {
        rc = cli_write_output(ctx, output, write_calibration, &out, fmt);
    }
    free(samples);
    ntp_store_close(s);
    return rc;
}

int cmd_machine(int argc, char **argv)
{
    ntp_machine_opts mo;
    ntp_machine_opts_default(&mo);
    ntp_format fmt = NTP_FORMAT_TABLE;
    const char *db = NULL, *output = NULL;
    bool remeasure = false, measure = true, use_db = true;
    ntp_calibrate_opts co;
    ntp_calibrate_opts_default(&co);
    bool calibrate = false, refit = false, recheck = false;
    int configs = 0;
    const char *ceilings_file = NULL;
    double d;
    const cli_option opts[] = {
        CLI_HELP("usage: ntprof machine [options]\n"
                 "\n"
                 "Describes this machine (packages, cores, caches, NUMA nodes, ISA, memory) and\n"
                 "measures its ceilings: peak FLOP/s per precision (an FMA micro-kernel on every\n"
                 "CPU, and the best backend's GEMM) and the bandwidth of each memory level. The\n"
                 "ceilings are cached in the history database; `ntprof run` places every layer\n"
                 "on the roofline they draw.\n"
                 "\n"),
        CLI_SET("remeasure", OPT_REMEASURE, "measure again even if ceilings are cached",
                &remeasure),
        CLI_UNSET("no-measure", OPT_NO_MEASURE,
                  "describe the machine only (cached ceilings still shown)", &measure),
        CLI_OPT("seconds", OPT_SECONDS, "S", "time per measurement (default 0.25)"),
        CLI_NUM("threads", 't', "N", "measure with N threads (default 0: every CPU)", &mo.threads,
                0, 4096, "a number of threads (0: every CPU)"),
        CLI_UNSET("no-gemm", OPT_NO_GEMM, "skip the backends' GEMM", &mo.gemm),
        CLI_STR("db", OPT_DB, "PATH", "the history database that caches the ceilings", &db),
        CLI_UNSET("no-db", OPT_NO_DB, "neither read nor write cached ceilings", &use_db),
        CLI_SET("calibrate", OPT_CALIBRATE,
                "time a designed set of layers and fit a latency model per op\n"
                "family for `ntprof predict` (docs/predict.md)",
                &calibrate),
        CLI_SET("refit", OPT_REFIT,
                "fit the stored calibration again from its stored samples,\n"
                "without timing (docs/predict.md#samples)",
                &refit),
        CLI_SET("recheck", OPT_RECHECK,
                "time some of the stored calibration's configurations again\n"
                "now and say whether it still holds (docs/predict.md#recheck)",
                &recheck),
        CLI_NUM("configs", OPT_CONFIGS, "N", "--recheck: configurations to time again (default 16)",
                &configs, 1, NTP_RECHECK_MAX, "a number of configurations from 1 to 64"),
        CLI_STR("backend", OPT_BACKEND, "NAME",
                "--calibrate, --refit, --recheck: the backend (default: the\ndefault)",
                &co.backend),
        CLI_OPT("precision", 'p', "P",
                "--calibrate, --refit, --recheck: f32 (default), bf16, f16 or i8"),
        CLI_SET("quick", OPT_QUICK, "--calibrate: a few small configurations (tests)", &co.quick),
        CLI_STR("families", OPT_FAMILIES, "LIST", "--calibrate, --recheck: only these families",
                &co.families),
        CLI_NUM("passes", OPT_PASSES, "N",
                "--calibrate: time the design N times, interleaved (default 3;\n"
                "1 with --quick)",
                &co.passes, 1, NTP_CALIBRATE_MAX_PASSES, "a number of passes from 1 to 9"),
        CLI_OPT("keep-pass", OPT_KEEP_PASS, "WHICH",
                "--calibrate: the pass each layer keeps: fastest (default:\n"
                "a slow phase only adds time) or median"),
        CLI_STR("ceilings", OPT_CEILINGS, "FILE",
                "--calibrate against these ceilings (JSON, docs/predict.md)\n"
                "instead of measured ones",
                &ceilings_file),
        CLI_OPT("cache", OPT_CACHE, "MODE",
                "--calibrate: network (default: each layer's weights\n"
                "evicted, its input just written) or warm (alone, in cache)"),
        CLI_OPT("format", 'f', "F", "table (default), json or csv"),
        CLI_STR("output", 'o', "FILE", "write to FILE (written only on success)", &output),
        CLI_OPT("help", 'h', NULL, "this text"),
        CLI_OPT_END,
    };
    cli_getopt_state gs = {0};
    int opt;
    const char *cache = NULL, *keep_pass = NULL;
    while ((opt = cli_getopt(argc, argv, opts, &gs)) != -1) {
        switch (opt) {
        case OPT_CACHE:
            cache = optarg;
            if (strcmp(optarg, "network") == 0) {
                co.cache = NTP_CALIBRATE_NETWORK;
            } else if (strcmp(optarg, "warm") == 0) {
                co.cache = NTP_CALIBRATE_WARM;
            } else {
                cli_error("--cache expects network or warm, got '%s'", optarg);
                return CLI_USAGE;
            }
            break;
        case OPT_KEEP_PASS:
            keep_pass = optarg;
            if (!ntp_calibrate_keep_parse(optarg, &co.keep)) {
                cli_error("--keep-pass expects fastest or median, got '%s'", optarg);
                return CLI_USAGE;
            }
            break;
        case OPT_SECONDS:
            if (!cli_parse_double(optarg, 0.001, 600, &d)) {
                cli_error("--seconds expects a time from 0.001 to 600, got '%s'", optarg);
                return CLI_USAGE;
            }
            mo.seconds = d;
            break;
        case 'f':
            if (!cli_parse_format(optarg, &fmt))
                return CLI_USAGE;
            break;
        case 'p':
            if (ntp_dtype_parse(optarg, &co.precision) != NTP_STATUS_OK ||
                !ntp_dtype_is_precision(co.precision)) {
                cli_error("--precision expects f32, bf16, f16 or i8, got '%s'", optarg);
                return CLI_USAGE;
            }
            break;
        default: return cli_option_end("machine", opt, opts, 25);
        }
    }
    if (!cli_want_files("machine", argc, argv, 0, NULL))
        return CLI_USAGE;
    if (calibrate && !measure) {
        cli_error("--calibrate needs the ceilings: it does not go with --no-measure");
        return CLI_USAGE;
    }
    if (refit && (calibrate || co.quick || co.families || co.passes || keep_pass || ceilings_file ||
                  cache || remeasure || !use_db)) {
        cli_error("--refit fits the stored samples again: it goes with --backend, --precision "
                  "and --db only");
        return CLI_USAGE;
    }
    if (recheck && (calibrate || refit || co.quick || co.passes || keep_pass || ceilings_file ||
                    cache || remeasure || !use_db)) {
        cli_error("--recheck times the stored calibration's configurations again: it goes with "
                  "--backend, --precision, --families, --configs and --db only");
        return CLI_USAGE;
    }
    if (configs && !recheck) {
        cli_error("--configs goes with --recheck");
        return CLI_USAGE;
    }
    if (!calibrate && (co.quick || (co.families && !recheck) || co.passes || keep_pass ||
                       ceilings_file || cache || (co.backend && !refit && !recheck))) {
        cli_error("--backend, --quick, --families, --passes, --keep-pass, --ceilings and --cache "
                  "go with --calibrate");
        return CLI_USAGE;
    }
    if (remeasure && !measure) {
        cli_error("--remeasure and --no-measure contradict each other");
        return CLI_USAGE;
    }
    ntp_ctx *ctx = cli_ctx_new();
    if (!ctx)
        return CLI_FAIL;
    int rc = CLI_OK;
    /* Checked before the measurement, which takes seconds; no report over
     * the history database (its default path too). */
    char dflt[4096];
    const ntp_output_path outs[] = {cli_db_output(ctx, db, use_db, dflt, sizeof dflt),
                                    {"-o", output, NTP_OUTPUT_FILE}};
    ntp_ctx_clear(ctx);
    if (cli_check_outputs(ctx, outs, 2, NULL, 0) != CLI_OK) {
        ntp_ctx_free(ctx);
        return CLI_FAIL;
    }
    ntp_machine_info m;
    ntp_ceilings c;
    bool have = false;
    ntp_store *s = NULL;
    char path[4096];
    if (ntp_machine_describe(ctx, &m) != NTP_STATUS_OK) {
        rc = cli_fail(ctx);
        goto out;
    }
    if (use_db && !db) {
        if (ntp_store_default_path(ctx, path, sizeof path) == NTP_STATUS_OK)
            db = path;
        else
            warn_db(ctx);
    }
    if (refit || recheck) {
        rc = stored_calibration(ctx, db, &m, &co, recheck, configs, output, fmt);
        goto out;
    }
    if (use_db && db) {
        /* Only a measurement needs to write; describing reads what exists. */
        bool write = measure;
        if (!write && !ntp_store_is_url(db) && access(db, F_OK) != 0)
            db = NULL;
        else if (ntp_store_open(ctx, db, write ? NTP_STORE_CREATE : NTP_STORE_READ_ONLY, &s) !=
                 NTP_STATUS_OK) {
            /* A shared store named by URL was asked for: not reaching it
             * is an error, not a cache miss. */
            if (ntp_store_is_url(db)) {
                rc = cli_fail(ctx);
                goto out;
            }
            warn_db(ctx);
        }
    }
    if (s && !remeasure && ntp_store_load_ceilings(ctx, s, m.key, &c, &have) != NTP_STATUS_OK) {
        warn_db(ctx);
        have = false;
    }
    if (have && c.other_cpu[0]) {
        fprintf(stderr,
                "ntprof: the ceilings cached for '%s' were measured on another CPU %s; %s\n", m.key,
                c.other_cpu, measure ? "measuring them again" : "not shown");
        have = false;
    }
    char old[256];
    if (have && ntp_ceilings_outdated(&c, old, sizeof old)) {
        fprintf(stderr, "ntprof: the ceilings cached for '%s' are outdated: %s; %s\n", m.key, old,
                measure ? "measuring them again" : "not shown");
        have = false;
    }
    if (ceilings_file) {
        if (ntp_ceilings_read_whatif(ctx, ceilings_file, &c) != NTP_STATUS_OK) {
            rc = cli_fail(ctx);
            goto out;
        }
        have = true;
    }
    if (measure && !have) {
        cli_progress prog;
        cli_progress_init(&prog);
        cli_progress_show(&prog, "measuring this machine's ceilings (a few seconds)", 0, 0, NULL);
        ntp_status mst = ntp_machine_measure(ctx, &m, &mo, &c);
        cli_progress_clear(&prog);
        if (mst != NTP_STATUS_OK) {
            rc = cli_fail(ctx);
            goto out;
        }
        have = true;
        if (s && ntp_store_save_ceilings(ctx, s, &m, &c) != NTP_STATUS_OK)
            warn_db(ctx);
    }
    if (calibrate) {
        cli_progress prog;
        cli_progress_init(&prog);
        co.threads = mo.threads;
        co.progress = calibrate_progress;
        co.progress_user = &prog;
        ntp_calibration cal;
        ntp_calibration_sample *samples = NULL;
        int n_samples = 0;
        co.samples = &samples;
        co.n_samples = &n_samples;
        ntp_status cst = ntp_calibrate(ctx, &m, &c, &co, &cal);
        cli_progress_clear(&prog);
        if (cst != NTP_STATUS_OK) {
            rc = cli_fail(ctx);
            goto out;
        }
        if (c.contended || cal.loadavg > (double)m.pus / 2)
            fprintf(stderr,
                    "ntprof: warning: calibrated under load (load average %.2f on %d CPUs): "
                    "predictions inherit the noise; calibrate again on a quiet machine\n",
                    cal.loadavg, m.pus);
        if (!s)
            fprintf(stderr, "ntprof: warning: the calibration is not stored (no history)\n");
        else if (ntp_store_save_calibration(ctx, s, &cal) != NTP_STATUS_OK ||
                 ntp_store_save_calibration_samples(ctx, s, &cal, samples, n_samples) !=
                     NTP_STATUS_OK)
            warn_db(ctx);
        free(samples);
        rc = cli_write_output(ctx, output, write_calibration, &cal, fmt);
        goto out;
    }
    machine_arg a = {&m, have ? &c : NULL};
    rc = cli_write_output(ctx, output, write_machine, &a, fmt);
out:
    ntp_store_close(s);
    ntp_ctx_free(ctx);
    return rc;
}
