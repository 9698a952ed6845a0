/* ntprof export: a topology as an ONNX model with its weights. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd-onnx.h"
#include "ntprof/onnx.h"

int cmd_export(int argc, char **argv)
{
    enum { OPT_SEED = 256, OPT_NETWORK_ONLY };
    cli_topo_opts topo = {0};
    ntp_onnx_export_opts eo = {.seed = 1};
    const char *output = NULL;
    const cli_option opts[] = {
        CLI_HELP(
            "usage: ntprof export FILE -o MODEL.onnx [options]\n"
            "\n"
            "Write a topology (markup or ONNX) as an ONNX model (opset 17) with the weights a\n"
            "run with the same seed uses, so that running the model gives the same outputs.\n"
            "\n"),
        CLI_STR("output", 'o', "FILE", "the .onnx file to write (required; written atomically)",
                &output),
        CLI_OPT("seed", OPT_SEED, "N", "seed of the generated weights (default 1, as ntprof run)"),
        CLI_SET("network-only", OPT_NETWORK_ONLY,
                "leave out a leading mfcc and a trailing ctc_decode, which\n"
                "have no ONNX operator (otherwise they are refused)",
                &eo.network_only),
        CLI_OPT("set", 's', "NAME=VALUE", "override a <param> (repeatable)"),
        CLI_OPT("batch", 'b', "N", "shorthand for --set batch=N"),
        CLI_OPT("max-memory", 'M', "SIZE",
                "refuse topologies needing more (default: physical RAM)"),
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
        case OPT_SEED:
            if (!cli_parse_int(optarg, 0, INT64_MAX, &v)) {
                cli_error("--seed expects a non-negative integer, got '%s'", optarg);
                goto out;
            }
            eo.seed = (uint64_t)v;
            break;
        default: rc = cli_option_end("export", opt, opts, 25); goto out;
        }
    }
    ntp_ctx *ctx;
    ntp_load_opts lo;
    const ntp_output_path outs[] = {{"-o", output, NTP_OUTPUT_FILE}};
    if ((rc = cli_begin_topology_command("export", "a topology FILE", argc, argv, &topo, outs, 1,
                                         &ctx, &lo)) != CLI_OK)
        goto out;
    if (!output) {
        cli_error("export needs -o MODEL.onnx (see 'ntprof export --help')");
        ntp_ctx_free(ctx);
        rc = CLI_USAGE;
        goto out;
    }
    ntp_graph *g = NULL;
    if (ntp_graph_load(ctx, argv[optind], &lo, &g) != NTP_STATUS_OK ||
        ntp_graph_export_onnx(ctx, g, output, &eo) != NTP_STATUS_OK) {
        rc = cli_fail(ctx);
    } else {
        cli_print_warnings(ctx);
        rc = CLI_OK;
    }
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
out:
    cli_topo_free(&topo);
    return rc;
}
