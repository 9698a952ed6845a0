/* ntprof analyze: static analysis of a topology, without running it. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ntprof/generate.h"

static ntp_status write_train_plan(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    return ntp_report_write_train_plan(ctx, arg, fmt, f);
}

typedef struct train_plans_arg {
    const ntp_train_plan *const *plans;
    int n;
    const char *model;
} train_plans_arg;

static ntp_status write_train_plans(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    const train_plans_arg *x = arg;
    return ntp_report_write_train_plans(ctx, x->plans, x->n, x->model, fmt, f);
}

static ntp_status write_train_plans_html(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    const train_plans_arg *x = arg;
    (void)fmt;
    return ntp_report_write_train_plans_html(ctx, x->plans, x->n, x->model, f);
}

/* analyze --train --batch LIST: a plan per batch, nothing run. The list
 * is read by the sweep's own parser (`sweep --vary batch=LIST`), so it
 * is refused with the same words; g is the topology loaded at its own
 * batch. */
static int train_batches(ntp_ctx *ctx, const char *path, const ntp_graph *g, ntp_load_opts lo,
                         const ntp_train_opts *to, const char *list, const char *output,
                         const char *html, ntp_format fmt)
{
    char spec[4096];
    ntp_sweep *sw = NULL;
    if ((size_t)snprintf(spec, sizeof spec, "batch=%s", list) >= sizeof spec) {
        cli_error("--batch: a list of at most %zu characters", sizeof spec - 7);
        return CLI_USAGE;
    }
    if (ntp_sweep_init(ctx, g, path, NTP_SWEEP_OFAT, &sw) != NTP_STATUS_OK)
        return cli_fail(ctx);
    if (ntp_sweep_add_factor(ctx, sw, spec) != NTP_STATUS_OK) {
        /* The parser's words less its "batch: " (this is --batch). */
        const char *text = ntp_ctx_error_part(ctx, NTP_ERROR_TEXT);
        if (!text)
            text = ntp_ctx_errmsg(ctx);
        if (strncmp(text, "batch: ", 7) == 0)
            text += 7;
        cli_error("--batch %s: %s", list, text);
        ntp_sweep_free(sw);
        return CLI_USAGE;
    }
    int rc = CLI_OK, n = 0;
    if (ntp_sweep_expand(ctx, sw) != NTP_STATUS_OK)
        rc = cli_fail(ctx);
    int count = rc == CLI_OK ? ntp_sweep_config_count(sw) : 0;
    ntp_graph **gs = calloc((size_t)count + 1, sizeof *gs);
    ntp_train_plan **plans = calloc((size_t)count + 1, sizeof *plans);
    if (rc == CLI_OK && (!gs || !plans)) {
        cli_error("out of memory");
        rc = CLI_FAIL;
    }
    /* Each batch's graph lives until its plan is written (the plan names
     * its layers from it). */
    for (; rc == CLI_OK && n < count; n++) {
        ntp_sweep_config cfg;
        if (ntp_sweep_config_get(ctx, sw, n, &cfg) != NTP_STATUS_OK) {
            rc = cli_fail(ctx);
            break;
        }
        lo.batch = cfg.batch;
        if (ntp_graph_load(ctx, path, &lo, &gs[n]) != NTP_STATUS_OK ||
            ntp_train_plan_make(ctx, gs[n], to, &plans[n]) != NTP_STATUS_OK)
            rc = cli_fail(ctx);
    }
    if (rc == CLI_OK) {
        cli_print_warnings(ctx);
        const train_plans_arg a = {(const ntp_train_plan *const *)plans, n, ntp_graph_name(g)};
        rc = cli_write_output(ctx, output, write_train_plans, &a, fmt);
        if (rc == CLI_OK && html)
            rc = cli_write_output(ctx, html, write_train_plans_html, &a, NTP_FORMAT_TABLE);
    }
    for (int i = 0; i < count && gs && plans; i++) {
        ntp_train_plan_free(plans[i]);
        ntp_graph_free(gs[i]);
    }
    free(plans);
    free(gs);
    ntp_sweep_free(sw);
    return rc;
}

typedef struct train_html_arg {
    const ntp_train_plan *p;
    const char *model;
} train_html_arg;

static ntp_status write_train_html(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    const train_html_arg *x = arg;
    (void)fmt;
    return ntp_report_write_train_plan_html(ctx, x->p, x->model, f);
}

enum { OPT_TRAIN = 256, OPT_LOSS, OPT_OPTIMIZER, OPT_TRAIN_HTML };

/* Decoder topologies: the per-phase split (docs/decoders.md). */
enum { OPT_PROMPT_LEN = 300, OPT_GEN_LEN, OPT_CONTEXT_DEPTH, OPT_KV_DTYPE, OPT_PHASE_DB };

typedef struct phase_opts {
    int64_t prompt_len, gen_len, context_depth; /* -1: the topology's seq_len / 32 / past */
    ntp_dtype kv_dtype;
    const char *db;
} phase_opts;

static int phase_option(phase_opts *p, int opt, const char *arg)
{
    int64_t v;
    switch (opt) {
    case OPT_PROMPT_LEN:
    case OPT_GEN_LEN:
    case OPT_CONTEXT_DEPTH:
        if (!cli_parse_int(arg, opt == OPT_CONTEXT_DEPTH ? 0 : 1, INT32_MAX, &v)) {
            cli_error("--%s: expected %s integer, got '%s'",
                      opt == OPT_PROMPT_LEN ? "prompt-len"
                      : opt == OPT_GEN_LEN  ? "gen-len"
                                            : "context-depth",
                      opt == OPT_CONTEXT_DEPTH ? "a non-negative" : "a positive", arg);
            return -1;
        }
        *(opt == OPT_PROMPT_LEN ? &p->prompt_len
          : opt == OPT_GEN_LEN  ? &p->gen_len
                                : &p->context_depth) = v;
        return 1;
    case OPT_KV_DTYPE:
        if (ntp_dtype_parse(arg, &p->kv_dtype) != NTP_STATUS_OK) {
            cli_error("--kv-dtype: expected f32, bf16, f16 or i8, got '%s'", arg);
            return -1;
        }
        return 1;
    case OPT_PHASE_DB: p->db = arg; return 1;
    default: return 0;
    }
}

static int64_t graph_param(const ntp_graph *g, const char *name, int64_t dflt)
{
    for (int i = 0; i < ntp_graph_param_count(g); i++)
        if (strcmp(ntp_graph_param_name(g, i), name) == 0)
            return strtoll(ntp_graph_param_value(g, i), NULL, 10);
    return dflt;
}

/* The static prefill/decode split of decoder g (ntp_generate, static):
 * prefill over the topology's seq_len tokens after its `past`, decode of
 * gen_len steps, unless the options say otherwise. NULL and a warning
 * when it cannot be made (the plain analysis is still written). */
static ntp_generate_result *decoder_phases(ntp_ctx *ctx, const char *path, const ntp_graph *g,
                                           const ntp_load_opts *lo, const phase_opts *p,
                                           ntp_ceilings *ceilings)
{
    ntp_generate_opts go;
    ntp_generate_opts_default(&go);
    go.static_only = true;
    go.prompt_len = p->prompt_len > 0 ? p->prompt_len : graph_param(g, "seq_len", 32);
    go.gen_len = p->gen_len > 0 ? p->gen_len : 32;
    go.context_depth = p->context_depth >= 0 ? p->context_depth : graph_param(g, "past", 0);
    go.kv_dtype = p->kv_dtype;
    go.set = lo->set;
    go.n_set = lo->n_set;
    go.batch = lo->batch;
    go.max_memory = lo->max_memory;
    char db_path[4096];
    const char *db = p->db;
    bool have = false;
    if (!db && ntp_store_default_path(ctx, db_path, sizeof db_path) == NTP_STATUS_OK)
        db = db_path;
    if (db && strcmp(db, "none") != 0 &&
        ntp_store_find_ceilings(ctx, db, ceilings, &have) != NTP_STATUS_OK)
        have = false;
    cli_print_warnings(ctx); /* cached ceilings of another CPU, not used */
    ntp_ctx_clear(ctx);
    if (have)
        go.ceilings = ceilings;
    ntp_generate_result *r = NULL;
    if (ntp_generate(ctx, path, &go, &r) != NTP_STATUS_OK) {
        fprintf(stderr, "ntprof: warning: no prefill/decode split: %s\n", ntp_ctx_errmsg(ctx));
        ntp_ctx_clear(ctx);
        return NULL;
    }
    return r;
}

typedef struct analyze_arg {
    const ntp_graph *g;
    const ntp_analysis *a;
    const ntp_generate_result *phases; /* decoders; NULL otherwise */
} analyze_arg;

static ntp_status write_analysis(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    const analyze_arg *x = arg;
    return ntp_report_write_analysis_phases(ctx, x->g, x->a, x->phases, fmt, f);
}

int cmd_analyze(int argc, char **argv)
{
    cli_topo_opts topo = {0};
    ntp_format fmt = NTP_FORMAT_TABLE;
    const char *output = NULL, *train_html = NULL, *batch_list = NULL;
    bool train = false;
    ntp_train_opts to;
    ntp_train_opts_init(&to);
    phase_opts po = {.prompt_len = -1, .gen_len = -1, .context_depth = -1};
    const cli_option opts[] = {
        CLI_HELP("usage: ntprof analyze FILE [options]\n"
                 "\n"
                 "Shapes, parameters, MACs, FLOPs, weight and activation memory, and "
                 "arithmetic\n"
                 "intensity of every layer, without running anything.\n"
                 "\n"),
        CLI_OPT("set", 's', "NAME=VALUE", "override a <param> (repeatable)"),
        CLI_OPT("batch", 'b', "N",
                "shorthand for --set batch=N; with --train a list N1,N2,...\n"
                "plans each batch (one TBD memory bar each)"),
        CLI_OPT("precision", 'p', "P", "f32, bf16, f16 or i8 (bytes are counted at P)"),
        CLI_OPT("max-memory", 'M', "SIZE",
                "refuse topologies needing more (default: physical RAM)"),
        CLI_OPT("format", 'f', "F", "table (default), json or csv"),
        CLI_STR("output", 'o', "FILE", "write the report to FILE (written only on success)",
                &output),
        CLI_SET("train", OPT_TRAIN,
                "training instead: memory by data structure and FLOPs\nper phase "
                "(docs/train.md)",
                &train),
        CLI_OPT("loss", OPT_LOSS, "L", "with --train: cross_entropy (default), mse or ctc"),
        CLI_OPT("optimizer", OPT_OPTIMIZER, "O", "with --train: sgd (default), momentum, adam"),
        CLI_STR("html", OPT_TRAIN_HTML, "FILE",
                "with --train: also a self-contained HTML page\n(memory by data structure, "
                "FLOPs per layer and phase)",
                &train_html),
        CLI_OPT("prompt-len", OPT_PROMPT_LEN, "N",
                "decoders: prefill tokens (default: the topology's seq_len)"),
        CLI_OPT("gen-len", OPT_GEN_LEN, "N", "decoders: decode steps (default 32)"),
        CLI_OPT("context-depth", OPT_CONTEXT_DEPTH, "N",
                "decoders: positions cached before the prompt (default: its past)"),
        CLI_OPT("kv-dtype", OPT_KV_DTYPE, "T", "decoders: f32 (default), bf16, f16 or i8"),
        CLI_OPT("db", OPT_PHASE_DB, "FILE",
                "decoders: the machine's ceilings from this history ('none': no roofline)"),
        CLI_OPT("help", 'h', NULL, "this text"),
        CLI_OPT_END,
    };
    cli_getopt_state gs = {0};
    int opt, rc = CLI_USAGE;
    while ((opt = cli_getopt(argc, argv, opts, &gs)) != -1) {
        if (opt == 'b' && strchr(optarg, ',')) {
            batch_list = optarg; /* read once --train is known */
            continue;
        }
        if (opt == 'b')
            batch_list = NULL; /* the last --batch holds */
        int r = cli_topo_option(&topo, opt, optarg);
        if (r == 0)
            r = phase_option(&po, opt, optarg);
        if (r < 0)
            goto out;
        if (r > 0)
            continue;
        switch (opt) {
        case 'f':
            if (!cli_parse_format(optarg, &fmt))
                goto out;
            break;
        case OPT_LOSS:
            if (ntp_loss_parse(optarg, &to.loss) != NTP_STATUS_OK) {
                cli_error("--loss expects cross_entropy, mse or ctc, got '%s'", optarg);
                goto out;
            }
            break;
        case OPT_OPTIMIZER:
            if (ntp_optimizer_parse(optarg, &to.optimizer) != NTP_STATUS_OK) {
                cli_error("--optimizer expects sgd, momentum or adam, got '%s'", optarg);
                goto out;
            }
            break;
        default: rc = cli_option_end("analyze", opt, opts, 25); goto out;
        }
    }
    if (batch_list && !train) {
        cli_error("--batch %s: a list of batches is for analyze --train; give one N", batch_list);
        rc = CLI_USAGE;
        goto out;
    }
    if (train_html && !train) {
        cli_error("--html is for analyze --train");
        rc = CLI_USAGE;
        goto out;
    }
    ntp_ctx *ctx;
    ntp_load_opts lo;
    const ntp_output_path outs[] = {{"-o", output, NTP_OUTPUT_FILE},
                                    {"--html", train_html, NTP_OUTPUT_FILE}};
    if ((rc = cli_begin_topology_command("analyze", "a topology FILE", argc, argv, &topo, outs, 2,
                                         &ctx, &lo)) != CLI_OK)
        goto out;
    ntp_graph *g = NULL;
    ntp_analysis *a = NULL;
    if (train) {
        ntp_train_plan *tp = NULL;
        lo.max_memory = -1; /* the plan shows what training needs */
        /* --precision bf16 plans mixed precision over the f32 topology. */
        if (lo.set_precision) {
            to.precision = lo.precision;
            lo.set_precision = false;
        }
        if (batch_list) {
            if (ntp_graph_load(ctx, argv[optind], &lo, &g) != NTP_STATUS_OK)
                rc = cli_fail(ctx);
            else
                rc = train_batches(ctx, argv[optind], g, lo, &to, batch_list, output, train_html,
                                   fmt);
        } else if (ntp_graph_load(ctx, argv[optind], &lo, &g) != NTP_STATUS_OK ||
                   ntp_train_plan_make(ctx, g, &to, &tp) != NTP_STATUS_OK) {
            rc = cli_fail(ctx);
        } else {
            cli_print_warnings(ctx);
            rc = cli_write_output(ctx, output, write_train_plan, tp, fmt);
            const train_html_arg ha = {tp, ntp_graph_name(g)};
            if (rc == CLI_OK && train_html)
                rc = cli_write_output(ctx, train_html, write_train_html, &ha, NTP_FORMAT_TABLE);
        }
        ntp_train_plan_free(tp);
    } else if (ntp_graph_load(ctx, argv[optind], &lo, &g) != NTP_STATUS_OK ||
               ntp_graph_analyze(ctx, g, &a) != NTP_STATUS_OK) {
        rc = cli_fail(ctx);
    } else {
        cli_print_warnings(ctx);
        ntp_ceilings ceilings;
        ntp_generate_result *ph = ntp_graph_is_decoder(g)
                                      ? decoder_phases(ctx, argv[optind], g, &lo, &po, &ceilings)
                                      : NULL;
        analyze_arg arg = {g, a, ph};
        rc = cli_write_output(ctx, output, write_analysis, &arg, fmt);
        ntp_generate_result_free(ph);
    }
    ntp_analysis_free(a);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
out:
    cli_topo_free(&topo);
    return rc;
}
