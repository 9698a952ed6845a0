/* ntprof convert: a model's architecture as editable markup. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd-onnx.h"
#include "ntprof/onnx.h"

static void convert_usage(FILE *f)
{
    fprintf(f,
            "usage: ntprof convert FILE [-o TOPOLOGY.xml] [options]\n"
            "\n"
            "Write the architecture of a model (ONNX or markup) as editable markup: every\n"
            "layer with all its attributes, the batch as a param. Weights are not written\n"
            "(the markup generates them from the seed). Change layer sizes and profile again.\n"
            "\n"
            "  -o, --output FILE      write the markup to FILE (default: stdout)\n"
            "  -s, --set NAME=VALUE   bind a symbolic dim or override a <param> (repeatable)\n"
            "  -b, --batch N          the batch to convert at (default: the model's)\n"
            "  -M, --max-memory SIZE  refuse models needing more (default: physical RAM)\n"
            "  -h, --help             this text\n");
}

typedef struct convert_arg {
    const ntp_graph *g, *other;
} convert_arg;

static ntp_status write_markup(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    (void)fmt;
    const convert_arg *c = arg;
    return ntp_graph_write_markup(ctx, c->g, c->other, f);
}

/* The value of param "batch", 0 if none. */
static int64_t batch_of(const ntp_graph *g)
{
    for (int i = 0; i < ntp_graph_param_count(g); i++)
        if (strcmp(ntp_graph_param_name(g, i), "batch") == 0)
            return strtoll(ntp_graph_param_value(g, i), NULL, 10);
    return 0;
}

int cmd_convert(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'}, {"set", required_argument, NULL, 's'},
        {"batch", required_argument, NULL, 'b'},  {"max-memory", required_argument, NULL, 'M'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    cli_topo_opts topo = {0};
    const char *output = NULL;
    int opt, rc = CLI_USAGE;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "o:s:b:M:h", longopts, NULL)) != -1) {
        int r = cli_topo_option(&topo, opt, optarg);
        if (r < 0)
            goto out;
        if (r > 0)
            continue;
        switch (opt) {
        case 'o': output = optarg; break;
        case 'h': convert_usage(stdout); rc = CLI_OK; goto out;
        default: cli_error("see 'ntprof convert --help'"); goto out;
        }
    }
    if (!cli_want_files("convert", argc, argv, 1, "a model FILE"))
        goto out;
    ntp_ctx *ctx = cli_ctx_new();
    if (!ctx) {
        rc = CLI_FAIL;
        goto out;
    }
    ntp_load_opts lo = cli_load_opts(&topo);
    ntp_graph *g = NULL, *other = NULL;
    const ntp_output_path outs[] = {{"-o", output, NTP_OUTPUT_FILE}};
    const char *ins[] = {argv[optind]};
    if ((rc = cli_check_outputs(ctx, outs, 1, ins, 1)) != CLI_OK) {
        /* refused before reading anything */
    } else if (ntp_graph_load(ctx, argv[optind], &lo, &g) != NTP_STATUS_OK) {
        rc = cli_fail(ctx);
    } else {
        cli_print_warnings(ctx);
        /* The same model at the next batch tells which numbers follow the
         * batch. A model whose batch is fixed loads the same (or fails to
         * load) and its numbers are written as they are. */
        int64_t b = batch_of(g);
        if (b > 0) {
            ntp_load_opts lo2 = lo;
            lo2.batch = b + 1;
            if (ntp_graph_load(ctx, argv[optind], &lo2, &other) != NTP_STATUS_OK)
                other = NULL;
            ntp_ctx_clear(ctx);
            ntp_ctx_clear_warnings(ctx);
        }
        convert_arg arg = {g, other};
        rc = cli_write_output(ctx, output, write_markup, &arg, NTP_FORMAT_TABLE);
    }
    ntp_graph_free(other);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
out:
    cli_topo_free(&topo);
    return rc;
}
