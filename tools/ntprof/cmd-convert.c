/* ntprof convert: a model's architecture as editable markup. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd-onnx.h"
#include "ntprof/onnx.h"

typedef struct convert_arg {
    const ntp_graph *g, *other;
} convert_arg;

static ntp_status write_markup(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    (void)fmt;
    const convert_arg *c = arg;
    return ntp_graph_write_markup(ctx, c->g, c->other, f);
}

int cmd_convert(int argc, char **argv)
{
    cli_topo_opts topo = {0};
    const char *output = NULL;
    const cli_option opts[] = {
        CLI_HELP(
            "usage: ntprof convert FILE [-o TOPOLOGY.xml] [options]\n"
            "\n"
            "Write the architecture of a model (ONNX or markup) as editable markup: every\n"
            "layer with all its attributes, the batch as a param. Weights are not written\n"
            "(the markup generates them from the seed). Change layer sizes and profile again.\n"
            "\n"),
        CLI_STR("output", 'o', "FILE", "write the markup to FILE (default: stdout)", &output),
        CLI_OPT("set", 's', "NAME=VALUE", "bind a symbolic dim or override a <param> (repeatable)"),
        CLI_OPT("batch", 'b', "N", "the batch to convert at (default: the model's)"),
        CLI_OPT("max-memory", 'M', "SIZE", "refuse models needing more (default: physical RAM)"),
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
        default: rc = cli_option_end("convert", opt, opts, 25); goto out;
        }
    }
    ntp_ctx *ctx;
    ntp_load_opts lo;
    const ntp_output_path outs[] = {{"-o", output, NTP_OUTPUT_FILE}};
    if ((rc = cli_begin_topology_command("convert", "a model FILE", argc, argv, &topo, outs, 1,
                                         &ctx, &lo)) != CLI_OK)
        goto out;
    ntp_graph *g = NULL, *other = NULL;
    if (ntp_graph_load(ctx, argv[optind], &lo, &g) != NTP_STATUS_OK) {
        rc = cli_fail(ctx);
    } else {
        cli_print_warnings(ctx);
        /* The same model at the next batch tells which numbers follow the
         * batch. A model whose batch is fixed loads the same (or fails to
         * load) and its numbers are written as they are. */
        int64_t b = ntp_graph_batch(g);
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
