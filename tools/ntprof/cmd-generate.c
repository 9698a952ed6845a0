/* ntprof generate: prefill and decode of a decoder transformer with a
 * key/value cache (docs/decoders.md). A thin client of ntp_generate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ntprof/generate.h"

static void gen_progress(void *user, const char *phase, int done, int total)
{
    cli_progress_show(user, phase, done, total, NULL);
}

static ntp_status write_gen(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    const ntp_generate_result *r = arg;
    if (fmt == NTP_FORMAT_JSON)
        return ntp_report_write_generate_json(ctx, r, f);
    return ntp_report_write_generate_table(ctx, r, f);
}

static ntp_status write_sweep(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    if (fmt == NTP_FORMAT_JSON)
        return ntp_report_write_generate_sweep_json(ctx, arg, f);
    return ntp_report_write_generate_sweep_table(ctx, arg, f);
}

static ntp_status write_sweep_html(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    (void)fmt;
    return ntp_report_write_generate_sweep_html(ctx, arg, f);
}

enum { OPT_VARY = 1000, OPT_HTML, OPT_WEIGHT_DTYPE, OPT_PAD };

int cmd_generate(int argc, char **argv);

int cmd_generate(int argc, char **argv)
{
    cli_topo_opts topo = {0};
    ntp_format fmt = NTP_FORMAT_TABLE;
    const char *output = NULL, *backend = NULL, *db = NULL, *save_dir = NULL, *html = NULL;
    const char *vary[NTP_GENERATE_SWEEP_MAX_AXES];
    int n_vary = 0;
    int threads = 0;
    bool use_db = true;
    ntp_generate_opts go;
    ntp_generate_opts_default(&go);
    const cli_option opts[] = {
        CLI_HELP("usage: ntprof generate MODEL [options]\n"
                 "\n"
                 "Prefill (one pass over the prompt) and decode (one token per step against a\n"
                 "growing key/value cache) of a decoder topology: time to first token, time per\n"
                 "output token, tokens/s per phase, KV cache bytes, per-layer rows per phase,\n"
                 "and the achieved share of the machine's ceilings (docs/decoders.md).\n"
                 "\n"),
        CLI_OPT("prompt-len", 'P', "N", "tokens in the prompt (default 32)"),
        CLI_OPT("gen-len", 'G', "N", "decode steps (default 32)"),
        CLI_OPT("context-depth", 'D', "N",
                "positions already cached before the prompt (default 0)"),
        CLI_OPT("kv-dtype", 'k', "T", "key/value cache type: f32 (default), bf16, f16 or i8"),
        CLI_OPT("set", 's', "NAME=VALUE", "override a <param> (repeatable)"),
        CLI_OPT("batch", 'b', "N", "sequences decoded together"),
        CLI_OPT("max-memory", 'M', "SIZE",
                "refuse weights and cache needing more (default: physical RAM)"),
        CLI_STR("backend", 'B', "NAME", "the backend (default: the first built)", &backend),
        CLI_NUM("threads", 't', "N", "threads (default: all cores)", &threads, 0, 4096,
                "a non-negative integer"),
        CLI_STR("db", 'd', "FILE", "read the machine's ceilings from this history", &db),
        CLI_UNSET("no-db", 'n', "do not read the history (no ceilings)", &use_db),
        CLI_SET("static", 'A', "analyse only: per-phase FLOPs, bytes, roofline tokens/s",
                &go.static_only),
        CLI_STR("save", 'S', "DIR", "write weights, prompt and logits as .npy into DIR", &save_dir),
        CLI_OPT(
            "vary", OPT_VARY, "NAME=V1,...",
            "sweep: context, prompt, gen, batch, kv_dtype, weight_dtype or a <param> (repeatable, full "
            "factorial)"),
        CLI_STR("html", OPT_HTML, "FILE", "with --vary: also write an HTML report with charts",
                &html),
        CLI_OPT("weight-dtype", OPT_WEIGHT_DTYPE, "T",
                "weights held as f32 (default), bf16 or i8 (weight-only, per-row scales; f32 "
                "accumulation; runs on --backend ref, --static on any)"),
        CLI_OPT("pad", OPT_PAD, "N",
                "left-pad the odd sequences' prompts by N masked tokens (a model with an "
                "attention_mask input)"),
        CLI_OPT("format", 'f', "F", "table (default) or json"),
        CLI_STR("output", 'o', "FILE", "write the report to FILE (written only on success)",
                &output),
        CLI_OPT("help", 'h', NULL, "this text"),
        CLI_OPT_END,
    };
    cli_getopt_state gs = {0};
    int opt, rc = CLI_USAGE;
    int64_t v;
    while ((opt = cli_getopt(argc, argv, opts, &gs)) != -1) {
        int r = cli_topo_option(&topo, opt, optarg);
        if (r < 0)
            goto out;
        if (r > 0)
            continue;
        switch (opt) {
        case 'P':
        case 'G':
        case 'D':
            if (!cli_parse_int(optarg, opt == 'D' ? 0 : 1, INT32_MAX, &v)) {
                cli_error("--%s: expected %s integer, got '%s'",
                          opt == 'P'   ? "prompt-len"
                          : opt == 'G' ? "gen-len"
                                       : "context-depth",
                          opt == 'D' ? "a non-negative" : "a positive", optarg);
                goto out;
            }
            *(opt == 'P' ? &go.prompt_len : opt == 'G' ? &go.gen_len : &go.context_depth) = v;
            break;
        case 'k':
            if (ntp_dtype_parse(optarg, &go.kv_dtype) != NTP_STATUS_OK) {
                cli_error("--kv-dtype: expected f32, bf16, f16 or i8, got '%s'", optarg);
                goto out;
            }
            break;
        case OPT_WEIGHT_DTYPE:
            if (ntp_dtype_parse(optarg, &go.weight_dtype) != NTP_STATUS_OK ||
                (go.weight_dtype != NTP_DTYPE_F32 && go.weight_dtype != NTP_DTYPE_BF16 &&
                 go.weight_dtype != NTP_DTYPE_I8)) {
                cli_error("--weight-dtype: expected f32, bf16 or i8, got '%s'", optarg);
                goto out;
            }
            break;
        case OPT_PAD:
            if (!cli_parse_int(optarg, 0, INT32_MAX, &v)) {
                cli_error("--pad: expected a non-negative integer, got '%s'", optarg);
                goto out;
            }
            go.pad = v;
            break;
        case OPT_VARY:
            if (n_vary == NTP_GENERATE_SWEEP_MAX_AXES) {
                cli_error("at most %d --vary options", NTP_GENERATE_SWEEP_MAX_AXES);
                goto out;
            }
            vary[n_vary++] = optarg;
            break;
        case 'f':
            if (!cli_parse_format(optarg, &fmt))
                goto out;
            if (fmt != NTP_FORMAT_TABLE && fmt != NTP_FORMAT_JSON) {
                cli_error("--format: generate writes table or json");
                goto out;
            }
            break;
        default: rc = cli_option_end("generate", opt, opts, 27); goto out;
        }
    }
    if (html && n_vary == 0) {
        cli_error("--html writes a sweep's report: give --vary NAME=V1,...");
        goto out;
    }
    if (n_vary > 0 && save_dir) {
        cli_error("--save and --vary cannot go together");
        goto out;
    }
    ntp_ctx *ctx;
    ntp_load_opts lo;
    const ntp_output_path outs[] = {{"-o", output, NTP_OUTPUT_FILE},
                                    {"--save", save_dir, NTP_OUTPUT_DIR},
                                    {"--html", html, NTP_OUTPUT_FILE}};
    if ((rc = cli_begin_topology_command("generate", "a topology MODEL", argc, argv, &topo, outs, 3,
                                         &ctx, &lo)) != CLI_OK)
        goto out;
    go.set = lo.set;
    go.n_set = lo.n_set;
    go.batch = lo.batch;
    go.max_memory = lo.max_memory;
    go.backend = backend;
    go.threads = threads;
    go.save_dir = save_dir;
    char db_path[4096];
    ntp_ceilings ceilings;
    bool have = false;
    if (use_db && !db && ntp_store_default_path(ctx, db_path, sizeof db_path) == NTP_STATUS_OK)
        db = db_path;
    if (use_db && db && ntp_store_find_ceilings(ctx, db, &ceilings, &have) != NTP_STATUS_OK)
        fprintf(stderr, "ntprof: warning: %s; no roofline\n", ntp_ctx_errmsg(ctx));
    cli_print_warnings(ctx); /* cached ceilings of another CPU, not used */
    ntp_ctx_clear(ctx);
    if (have)
        go.ceilings = &ceilings;
    cli_progress prog;
    cli_progress_init(&prog);
    if (prog.tty) {
        go.progress = gen_progress;
        go.progress_user = &prog;
    }
    ntp_generate_result *res = NULL;
    ntp_generate_sweep *sw = NULL;
    if (n_vary > 0) {
        if (ntp_generate_sweep_run(ctx, argv[optind], &go, vary, n_vary, &sw) != NTP_STATUS_OK) {
            cli_progress_clear(&prog);
            rc = cli_fail(ctx);
        } else {
            cli_progress_clear(&prog);
            cli_print_warnings(ctx);
            rc = cli_write_output(ctx, output, write_sweep, sw, fmt);
            if (rc == CLI_OK && html)
                rc = cli_write_output(ctx, html, write_sweep_html, sw, NTP_FORMAT_TABLE);
        }
    } else if (ntp_generate(ctx, argv[optind], &go, &res) != NTP_STATUS_OK) {
        cli_progress_clear(&prog);
        rc = cli_fail(ctx);
    } else {
        cli_progress_clear(&prog);
        cli_print_warnings(ctx);
        rc = cli_write_output(ctx, output, write_gen, res, fmt);
    }
    ntp_generate_result_free(res);
    ntp_generate_sweep_free(sw);
    ntp_ctx_free(ctx);
out:
    cli_topo_free(&topo);
    return rc;
}
