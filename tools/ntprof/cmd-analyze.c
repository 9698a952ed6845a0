/* ntprof analyze: static analysis of a topology, without running it. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static ntp_status write_train_plan(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    return ntp_train_plan_write(ctx, arg, fmt, f);
}

enum { OPT_TRAIN = 256, OPT_LOSS, OPT_OPTIMIZER };

typedef struct analyze_arg {
    const ntp_graph *g;
    const ntp_analysis *a;
} analyze_arg;

static ntp_status write_analysis(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    const analyze_arg *x = arg;
    return ntp_report_write_analysis(ctx, x->g, x->a, fmt, f);
}

int cmd_analyze(int argc, char **argv)
{
    cli_topo_opts topo = {0};
    ntp_format fmt = NTP_FORMAT_TABLE;
    const char *output = NULL;
    bool train = false;
    ntp_train_opts to;
    ntp_train_opts_init(&to);
    const cli_option opts[] = {
        CLI_HELP("usage: ntprof analyze FILE [options]\n"
                 "\n"
                 "Shapes, parameters, MACs, FLOPs, weight and activation memory, and "
                 "arithmetic\n"
                 "intensity of every layer, without running anything.\n"
                 "\n"),
        CLI_OPT("set", 's', "NAME=VALUE", "override a <param> (repeatable)"),
        CLI_OPT("batch", 'b', "N", "shorthand for --set batch=N"),
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
        case 'h':
            cli_usage(stdout, opts, 25);
            rc = CLI_OK;
            goto out;
        case CLI_OPT_BAD: goto out;
        default: cli_error("see 'ntprof analyze --help'"); goto out;
        }
    }
    if (!cli_want_files("analyze", argc, argv, 1, "a topology FILE"))
        goto out;
    ntp_ctx *ctx = cli_ctx_new();
    if (!ctx) {
        rc = CLI_FAIL;
        goto out;
    }
    ntp_load_opts lo = cli_load_opts(&topo);
    ntp_graph *g = NULL;
    ntp_analysis *a = NULL;
    const ntp_output_path outs[] = {{"-o", output, NTP_OUTPUT_FILE}};
    const char *ins[] = {argv[optind]};
    if ((rc = cli_check_outputs(ctx, outs, 1, ins, 1)) != CLI_OK) {
        /* refused before reading anything */
    } else if (train) {
        ntp_train_plan *tp = NULL;
        lo.max_memory = -1; /* the plan shows what training needs */
        if (ntp_graph_load(ctx, argv[optind], &lo, &g) != NTP_STATUS_OK ||
            ntp_train_plan_make(ctx, g, &to, &tp) != NTP_STATUS_OK) {
            rc = cli_fail(ctx);
        } else {
            cli_print_warnings(ctx);
            rc = cli_write_output(ctx, output, write_train_plan, tp, fmt);
        }
        ntp_train_plan_free(tp);
    } else if (ntp_graph_load(ctx, argv[optind], &lo, &g) != NTP_STATUS_OK ||
               ntp_graph_analyze(ctx, g, &a) != NTP_STATUS_OK) {
        rc = cli_fail(ctx);
    } else {
        cli_print_warnings(ctx);
        analyze_arg arg = {g, a};
        rc = cli_write_output(ctx, output, write_analysis, &arg, fmt);
    }
    ntp_analysis_free(a);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
out:
    cli_topo_free(&topo);
    return rc;
}
