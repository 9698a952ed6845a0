/* ntprof predict: per-layer latency predicted without running, from a
 * stored calibration (this machine's or another's) or, as a roofline-only
 * what-if, from ceilings in a file; and the prediction a run on a
 * calibrated machine shows beside its measurement (cli_attach_prediction). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cmd_predict(int argc, char **argv);

enum {
    OPT_MACHINE = 1000,
    OPT_BACKEND,
    OPT_CEILINGS,
    OPT_DB,
    OPT_LIST,
    OPT_PLACE,
    OPT_NO_REORDERS,
    OPT_FUSE
};

static ntp_status write_prediction(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    return ntp_report_write_prediction(ctx, arg, fmt, f);
}

/* The first built backend: the one a run uses by default. */
static const char *default_backend(char *buf, size_t len)
{
    snprintf(buf, len, "%s", ntp_backends());
    char *comma = strchr(buf, ',');
    if (comma)
        *comma = '\0';
    return buf;
}

/* The first of cal and others that no longer describes this machine
 * (ntp_calibration_stale: its backend's version or its CPU changed), among
 * those p prices layers with (cal always, an other where p hands it a
 * layer: ref's calibration prices the slices XNNPACK hands to ref); NULL
 * when none. why gets the reason. */
static const ntp_calibration *stale_calibration(const ntp_prediction *p, const ntp_calibration *cal,
                                                const ntp_calibration *others, int n_others,
                                                char *why, size_t len)
{
    for (int k = -1; k < n_others; k++) {
        const ntp_calibration *c = k < 0 ? cal : &others[k];
        bool used = k < 0;
        for (int i = 0; !used && i < ntp_prediction_layer_count(p); i++) {
            const char *b = ntp_prediction_layer(p, i)->backend;
            used = b && strcmp(b, c->backend) == 0;
        }
        /* A library backend's version is read from the environment
         * (ntp_env_collect): only for the calibrations p uses. */
        if (!used)
            continue;
        if (ntp_calibration_stale(c, why, len))
            return c;
    }
    return NULL;
}

bool cli_attach_prediction(ntp_ctx *ctx, const char *db, const ntp_graph *g, ntp_run_result *r,
                           const char *const *place, int n_place)
{
    const char *backend = ntp_run_result_backend(r);
    const char *precision = ntp_dtype_name(ntp_run_result_precision(r));
    if (!db || !r || !backend)
        return false;
    ntp_calibration cal;
    bool found = false;
    if (ntp_store_find_calibration(ctx, db, backend, precision, &cal, &found) != NTP_STATUS_OK) {
        fprintf(stderr, "ntprof: warning: %s; no prediction beside the measurement\n",
                ntp_ctx_errmsg(ctx));
        ntp_ctx_clear(ctx);
        return false;
    }
    if (!found)
        return false;
    /* The calibrations of the other backends the run's layers ran on
     * (ref, for the layers the backend hands to it): those layers are
     * predicted with their coefficients, or say they have none. */
    ntp_calibration others[NTP_PREDICT_MAX_CALS - 1];
    int n_others = 0;
    for (int i = 0; i < ntp_run_result_layer_count(r) && n_others < NTP_PREDICT_MAX_CALS - 1; i++) {
        const char *b = ntp_run_result_layer(r, i)->backend;
        bool seen = !b || strcmp(b, backend) == 0;
        for (int k = 0; !seen && k < n_others; k++)
            seen = strcmp(others[k].backend, b) == 0;
        bool have = false;
        if (!seen && ntp_store_find_calibration(ctx, db, b, precision, &others[n_others], &have) !=
                         NTP_STATUS_OK)
            ntp_ctx_clear(ctx);
        n_others += !seen && have;
    }
    /* Placed and fused as the run was; the run's own reorder rows are
     * priced (ntp_prediction_apply), so the plan is not prepared again. */
    ntp_predict_opts po;
    ntp_predict_opts_default(&po);
    po.others = others;
    po.n_others = n_others;
    po.place = place;
    po.n_place = n_place;
    po.fuse = ntp_run_result_fused(r);
    po.reorders = false;
    /* A threaded backend's calibration is not paced: the run's pace looks
     * are judged against ref's of this machine (docs/run.md#pace). */
    ntp_calibration paced;
    bool have_paced = false;
    if (!(cal.pace_gflops > 0) && strcmp(backend, "ref") != 0 &&
        ntp_store_find_calibration(ctx, db, "ref", precision, &paced, &have_paced) != NTP_STATUS_OK)
        ntp_ctx_clear(ctx);
    po.paced = have_paced ? &paced : NULL;
    ntp_prediction *p = NULL;
    if (ntp_predict_with(ctx, g, &cal, &po, &p) != NTP_STATUS_OK) {
        fprintf(stderr, "ntprof: warning: %s; no prediction beside the measurement\n",
                ntp_ctx_errmsg(ctx));
        ntp_ctx_clear(ctx);
        return false;
    }
    char why[512];
    ntp_prediction_apply(p, r,
                         stale_calibration(p, &cal, others, n_others, why, sizeof why) != NULL);
    ntp_prediction_free(p);
    return true;
}

/* The stored machine key that `want` names: the key itself, or a part of
 * exactly one key (its host name). */
static int pick_machine(const ntp_calibration *all, int n, const char *want, const char **key)
{
    *key = NULL;
    for (int i = 0; i < n; i++)
        if (strcmp(all[i].machine_key, want) == 0) {
            *key = all[i].machine_key;
            return CLI_OK;
        }
    for (int i = 0; i < n; i++)
        if (strstr(all[i].machine_key, want)) {
            if (*key && strcmp(*key, all[i].machine_key) != 0) {
                cli_error("--machine '%s' matches several machines ('%s', '%s'); give more of "
                          "the key",
                          want, *key, all[i].machine_key);
                return CLI_USAGE;
            }
            *key = all[i].machine_key;
        }
    if (!*key) {
        cli_error("--machine '%s': no calibration of such a machine in the history (see "
                  "`ntprof predict --list`)",
                  want);
        return CLI_FAIL;
    }
    return CLI_OK;
}

static void list_calibrations(const ntp_calibration *all, int n)
{
    if (n == 0)
        printf("no calibrations stored; run `ntprof machine --calibrate`\n");
    for (int i = 0; i < n; i++) {
        char passes[48] = "";
        if (all[i].passes > 1)
            snprintf(passes, sizeof passes, " %d passes (%s kept)", all[i].passes,
                     all[i].keep[0] ? all[i].keep : "median");
        printf("%s  %-8s %-5s %s  (%s)%s%s\n", all[i].calibrated_at, all[i].backend,
               all[i].precision, all[i].machine_key, all[i].backend_version,
               all[i].quick ? " quick" : "", passes);
    }
}

int cmd_predict(int argc, char **argv)
{
    cli_topo_opts topo = {0};
    ntp_format fmt = NTP_FORMAT_TABLE;
    const char *output = NULL, *machine = NULL, *backend = NULL, *ceilings = NULL, *db = NULL;
    bool list = false, no_reorders = false, fuse = false;
    const char **places = calloc((size_t)argc + 1, sizeof *places);
    int n_places = 0;
    if (!places) {
        cli_error("out of memory");
        return CLI_FAIL;
    }
    const cli_option opts[] = {
        CLI_HELP("usage: ntprof predict MODEL [options]\n"
                 "       ntprof predict --list\n"
                 "\n"
                 "Predicts every layer's latency and the end-to-end latency without running\n"
                 "anything, from a calibration (`ntprof machine --calibrate`) of this machine\n"
                 "or of any machine whose calibration is in the history, or, with --ceilings,\n"
                 "a roofline-only estimate for a machine described by its ceilings.\n"
                 "\n"),
        CLI_STR("machine", OPT_MACHINE, "ID",
                "a stored machine's key or a unique part of it (default: this one)", &machine),
        CLI_STR("backend", OPT_BACKEND, "NAME", "the calibrated backend (default: the default)",
                &backend),
        CLI_OPT("precision", 'p', "P", "f32, bf16, f16 or i8 (default: the model's)"),
        CLI_OPT("batch", 'b', "N", "shorthand for --set batch=N"),
        CLI_OPT("set", 's', "NAME=VALUE", "override a <param> (repeatable)"),
        CLI_STR("ceilings", OPT_CEILINGS, "FILE",
                "what-if: ceilings in JSON (docs/predict.md), a roofline-only estimate", &ceilings),
        CLI_OPT("place", OPT_PLACE, "LAYER=BACKEND",
                "predict LAYER on BACKEND, as `run --place` runs it\n"
                "(repeatable)"),
        CLI_SET("fuse", OPT_FUSE,
                "predict the fused plan `run --fuse` runs (its groups, each\n"
                "priced as its fused kernel)",
                &fuse),
        CLI_SET("no-reorders", OPT_NO_REORDERS,
                "do not prepare the plan to learn the backend's reorder rows", &no_reorders),
        CLI_STR("db", OPT_DB, "PATH", "the history database holding the calibrations", &db),
        CLI_SET("list", OPT_LIST, "list the stored calibrations", &list),
        CLI_OPT("format", 'f', "F", "table (default), json or csv"),
        CLI_STR("output", 'o', "FILE", "write to FILE (written only on success)", &output),
        CLI_OPT("help", 'h', NULL, "this text"),
        CLI_OPT_END,
    };
    cli_getopt_state gs = {0};
    int opt, rc = CLI_USAGE;
    while ((opt = cli_getopt(argc, argv, opts, &gs)) != -1) {
        int r = cli_topo_option(&topo, opt, optarg);
        if (r < 0)
            goto out;
        if (r > 0)
            continue;
        switch (opt) {
        case 'f':
            if (!cli_parse_format(optarg, &fmt))
                goto out;
            break;
        case OPT_PLACE:
            if (!cli_place_arg(optarg))
                goto out;
            places[n_places++] = optarg;
            break;
        default: rc = cli_option_end("predict", opt, opts, 25); goto out;
        }
    }
    if (ceilings && (machine || backend || n_places || fuse)) {
        cli_error("--ceilings is a roofline-only estimate: it takes no --machine, --backend, "
                  "--place or --fuse");
        goto out;
    }
    ntp_ctx *ctx;
    ntp_load_opts lo = {0};
    const ntp_output_path outs[] = {{"-o", output, NTP_OUTPUT_FILE}};
    if (list) {
        if (!(ctx = cli_ctx_new())) {
            rc = CLI_FAIL;
            goto out;
        }
    } else if ((rc = cli_begin_topology_command("predict", "a MODEL", argc, argv, &topo, outs, 1,
                                                &ctx, &lo)) != CLI_OK) {
        goto out;
    }
    char path[4096], bbuf[64];
    ntp_graph *g = NULL;
    ntp_prediction *p = NULL;
    ntp_store *s = NULL;
    ntp_calibration *all = NULL;
    int n_all = 0;
    rc = CLI_FAIL;
    if (!db && ntp_store_default_path(ctx, path, sizeof path) == NTP_STATUS_OK)
        db = path;
    if (!ceilings) {
        if (!db) {
            rc = cli_fail(ctx);
            goto done;
        }
        if (ntp_store_open(ctx, db, NTP_STORE_READ_ONLY, &s) != NTP_STATUS_OK ||
            ntp_store_list_calibrations(ctx, s, &all, &n_all) != NTP_STATUS_OK) {
            fprintf(stderr, "ntprof: %s\n", ntp_ctx_errmsg(ctx));
            fprintf(stderr, "ntprof: no calibrations to predict from; run `ntprof machine "
                            "--calibrate` (or give --ceilings FILE for a roofline-only "
                            "estimate)\n");
            goto done;
        }
        if (list) {
            list_calibrations(all, n_all);
            rc = CLI_OK;
            goto done;
        }
    }
    rc = CLI_FAIL;
    if (ntp_graph_load(ctx, argv[optind], &lo, &g) != NTP_STATUS_OK) {
        rc = cli_fail(ctx);
        goto done;
    }
    cli_print_warnings(ctx);
    ntp_dtype prec = ntp_graph_precision(g);
    ntp_calibration cal;
    bool here_machine = false; /* cal is this machine's: its versions can be checked */
    if (ceilings) {
        ntp_ceilings c;
        if (ntp_ceilings_read_whatif(ctx, ceilings, &c) != NTP_STATUS_OK) {
            rc = cli_fail(ctx);
            goto done;
        }
        ntp_calibration_roofline(&c, prec, &cal);
        if (!(cal.peak_gflops > 0)) {
            cli_error("%s: no peak_gflops for %s or f32", ceilings, ntp_dtype_name(prec));
            goto done;
        }
    } else {
        char here[256];
        const char *key = here;
        ntp_machine_key(here, sizeof here);
        if (machine && (rc = pick_machine(all, n_all, machine, &key)) != CLI_OK)
            goto done;
        rc = CLI_FAIL;
        if (!backend)
            backend = default_backend(bbuf, sizeof bbuf);
        bool found = false;
        for (int i = 0; i < n_all && !found; i++)
            if (strcmp(all[i].machine_key, key) == 0 && strcmp(all[i].backend, backend) == 0 &&
                strcmp(all[i].precision, ntp_dtype_name(prec)) == 0) {
                cal = all[i];
                found = true;
            }
        if (!found) {
            char have[1024] = "";
            size_t u = 0;
            for (int i = 0; i < n_all && u < sizeof have; i++)
                if (strcmp(all[i].machine_key, key) == 0)
                    u += (size_t)snprintf(have + u, sizeof have - u, "%s%s %s", u ? ", " : "",
                                          all[i].backend, all[i].precision);
            fprintf(stderr,
                    "ntprof: no calibration of backend '%s' at %s for machine '%s' in %s "
                    "(calibrated there: %s); run `ntprof machine --calibrate --backend %s "
                    "--precision %s` on it\n",
                    backend, ntp_dtype_name(prec), key, db, u ? have : "none", backend,
                    ntp_dtype_name(prec));
            goto done;
        }
        here_machine = strcmp(key, here) == 0;
    }
    /* The same machine's calibrations of the other backends at this
     * precision: the layers a backend hands to one of them (ref) are
     * predicted with its coefficients. */
    ntp_calibration others[NTP_PREDICT_MAX_CALS - 1];
    int n_others = 0;
    /* ref (every backend's fallback) first, then the backends --place
     * names, then the others. */
    for (int pass = 0; pass < 3; pass++)
        for (int i = 0; !ceilings && i < n_all && n_others < NTP_PREDICT_MAX_CALS - 1; i++) {
            bool is_ref = strcmp(all[i].backend, "ref") == 0, is_placed = false;
            for (int k = 0; k < n_places; k++)
                is_placed |= strcmp(strchr(places[k], '=') + 1, all[i].backend) == 0;
            int want = is_ref ? 0 : is_placed ? 1 : 2;
            if (want == pass && strcmp(all[i].machine_key, cal.machine_key) == 0 &&
                strcmp(all[i].backend, cal.backend) != 0 &&
                strcmp(all[i].precision, cal.precision) == 0)
                others[n_others++] = all[i];
        }
    ntp_predict_opts po;
    ntp_predict_opts_default(&po);
    po.others = others;
    po.n_others = n_others;
    po.place = places;
    po.n_place = n_places;
    po.reorders = !no_reorders;
    po.fuse = fuse;
    if (ntp_predict_with(ctx, g, &cal, &po, &p) != NTP_STATUS_OK) {
        rc = cli_fail(ctx);
        goto done;
    }
    /* The fallbacks the prepared plan warned about, as a run warns. */
    cli_print_warnings(ctx);
    char why[512];
    const ntp_calibration *stale =
        here_machine ? stale_calibration(p, &cal, others, n_others, why, sizeof why) : NULL;
    if (stale)
        fprintf(stderr,
                "ntprof: warning: stale calibration: %s; run `ntprof machine --calibrate "
                "--backend %s` again\n",
                why, stale->backend);
    int n_unpredicted = ntp_prediction_unpredicted(p);
    if (ntp_prediction_uncalibrated(p)[0])
        fprintf(stderr,
                "ntprof: warning: %d layer%s not predicted (not calibrated: %s); the total "
                "leaves %s out\n",
                n_unpredicted, n_unpredicted == 1 ? "" : "s", ntp_prediction_uncalibrated(p),
                n_unpredicted == 1 ? "it" : "them");
    rc = cli_write_output(ctx, output, write_prediction, p, fmt);
done:
    ntp_prediction_free(p);
    ntp_graph_free(g);
    free(all);
    ntp_store_close(s);
    ntp_ctx_free(ctx);
out:
    free(places);
    cli_topo_free(&topo);
    return rc;
}
