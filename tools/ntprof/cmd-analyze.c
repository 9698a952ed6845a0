/* ntprof analyze: static analysis of a topology, without running it. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void analyze_usage(FILE *f)
{
    fprintf(f,
            "usage: ntprof analyze FILE [options]\n"
            "\n"
            "Shapes, parameters, MACs, FLOPs, weight and activation memory, and arithmetic\n"
            "intensity of every layer, without running anything.\n"
            "\n"
            "  -s, --set NAME=VALUE   override a <param> (repeatable)\n"
            "  -b, --batch N          shorthand for --set batch=N\n"
            "  -p, --precision P      f32, bf16, f16 or i8 (bytes are counted at P)\n"
            "  -M, --max-memory SIZE  refuse topologies needing more (default: physical RAM)\n"
            "  -f, --format F         table (default), json or csv\n"
            "  -o, --output FILE      write the report to FILE (written only on success)\n"
            "  -h, --help             this text\n");
}

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
    static const struct option longopts[] = {
        {"set", required_argument, NULL, 's'},     {"batch", required_argument, NULL, 'b'},
        {"precision", required_argument, NULL, 'p'}, {"max-memory", required_argument, NULL, 'M'},
        {"format", required_argument, NULL, 'f'},  {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    cli_topo_opts topo = {0};
    ntp_format fmt = NTP_FORMAT_TABLE;
    const char *output = NULL;
    int opt, rc = CLI_USAGE;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "s:b:p:M:f:o:h", longopts, NULL)) != -1) {
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
        case 'o': output = optarg; break;
        case 'h': analyze_usage(stdout); rc = CLI_OK; goto out;
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
