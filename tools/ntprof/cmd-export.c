/* ntprof export: a topology as an ONNX model with its weights. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd-onnx.h"
#include "ntprof/onnx.h"

static void export_usage(FILE *f)
{
    fprintf(f,
            "usage: ntprof export FILE -o MODEL.onnx [options]\n"
            "\n"
            "Write a topology (markup or ONNX) as an ONNX model (opset 17) with the weights a\n"
            "run with the same seed uses, so that running the model gives the same outputs.\n"
            "\n"
            "  -o, --output FILE      the .onnx file to write (required; written atomically)\n"
            "      --seed N           seed of the generated weights (default 1, as ntprof run)\n"
            "      --network-only     leave out a leading mfcc and a trailing ctc_decode, which\n"
            "                         have no ONNX operator (otherwise they are refused)\n"
            "  -s, --set NAME=VALUE   override a <param> (repeatable)\n"
            "  -b, --batch N          shorthand for --set batch=N\n"
            "  -M, --max-memory SIZE  refuse topologies needing more (default: physical RAM)\n"
            "  -h, --help             this text\n");
}

int cmd_export(int argc, char **argv)
{
    enum { OPT_SEED = 256, OPT_NETWORK_ONLY };
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},  {"seed", required_argument, NULL, OPT_SEED},
        {"network-only", no_argument, NULL, OPT_NETWORK_ONLY},
        {"set", required_argument, NULL, 's'},     {"batch", required_argument, NULL, 'b'},
        {"max-memory", required_argument, NULL, 'M'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    cli_topo_opts topo = {0};
    ntp_onnx_export_opts eo = {.seed = 1};
    const char *output = NULL;
    int opt, rc = CLI_USAGE;
    int64_t v;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "o:s:b:M:h", longopts, NULL)) != -1) {
        int r = cli_topo_option(&topo, opt, optarg);
        if (r < 0)
            goto out;
        if (r > 0)
            continue;
        switch (opt) {
        case 'o': output = optarg; break;
        case OPT_SEED:
            if (!cli_parse_int(optarg, 0, INT64_MAX, &v)) {
                cli_error("--seed expects a non-negative integer, got '%s'", optarg);
                goto out;
            }
            eo.seed = (uint64_t)v;
            break;
        case OPT_NETWORK_ONLY: eo.network_only = true; break;
        case 'h': export_usage(stdout); rc = CLI_OK; goto out;
        default: cli_error("see 'ntprof export --help'"); goto out;
        }
    }
    if (!cli_want_files("export", argc, argv, 1, "a topology FILE"))
        goto out;
    if (!output) {
        cli_error("export needs -o MODEL.onnx (see 'ntprof export --help')");
        goto out;
    }
    ntp_ctx *ctx = cli_ctx_new();
    if (!ctx) {
        rc = CLI_FAIL;
        goto out;
    }
    ntp_load_opts lo = cli_load_opts(&topo);
    ntp_graph *g = NULL;
    const ntp_output_path outs[] = {{"-o", output, NTP_OUTPUT_FILE}};
    const char *ins[] = {argv[optind]};
    if (cli_check_outputs(ctx, outs, 1, ins, 1) != CLI_OK) {
        rc = CLI_FAIL;
    } else if (ntp_graph_load(ctx, argv[optind], &lo, &g) != NTP_STATUS_OK ||
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
