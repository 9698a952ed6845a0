/* ntprof train: training steps on the reference engine, timed per layer and
 * phase, with memory by data structure (docs/train.md). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

enum {
    OPT_LOSS = 256,
    OPT_LABELS,
    OPT_OPTIMIZER,
    OPT_LR,
    OPT_STEPS,
    OPT_SAVE,
    OPT_SEED,
    OPT_DROPOUT,
    OPT_MOMENTUM,
    OPT_INPUT_LENGTHS,
    OPT_TARGET_LENGTHS,
    OPT_BACKEND,
    OPT_HTML,
};

int cmd_train(int argc, char **argv);

static void on_step(void *user, int step, int steps)
{
    cli_progress_show(user, "train", step, steps, "");
}

static ntp_status write_result(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    return ntp_report_write_train(ctx, arg, fmt, f);
}

static ntp_status write_html(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    (void)fmt;
    return ntp_report_write_train_html(ctx, arg, f);
}

int cmd_train(int argc, char **argv)
{
    cli_topo_opts topo = {0};
    ntp_format fmt = NTP_FORMAT_TABLE;
    const char *output = NULL, *save = NULL, *html = NULL;
    const char **inputs = NULL;
    int n_inputs = 0;
    ntp_train_opts to;
    ntp_train_opts_init(&to);
    const cli_option opts[] = {
        CLI_HELP("usage: ntprof train FILE [options]\n"
                 "\n"
                 "Training steps (forward, loss, backward, optimizer) on the reference engine,\n"
                 "timed per layer: forward, backward-data, backward-weights and update; memory\n"
                 "by data structure (weights, gradients, optimizer state, activations).\n"
                 "\n"),
        CLI_OPT("batch", 'b', "N", "shorthand for --set batch=N"),
        CLI_OPT("set", 's', "NAME=VALUE", "override a <param> (repeatable)"),
        CLI_OPT("input", 'i', "NAME=FILE", "a graph input from a .npy file (repeatable)"),
        CLI_OPT("loss", OPT_LOSS, "L", "cross_entropy (default), mse or ctc"),
        CLI_OPT("labels", OPT_LABELS, "FILE",
                ".npy labels: class indices [batch] or targets of the\noutput's shape "
                "(default: generated from the seed)"),
        CLI_OPT("input-lengths", OPT_INPUT_LENGTHS, "FILE",
                "ctc: .npy [batch], each sequence's frames\n(default: all T; generated with "
                "generated labels)"),
        CLI_OPT("target-lengths", OPT_TARGET_LENGTHS, "FILE",
                "ctc: .npy [batch], each label row's length\n(default: up to its first -1)"),
        CLI_OPT("optimizer", OPT_OPTIMIZER, "O", "sgd (default), momentum or adam"),
        CLI_OPT("lr", OPT_LR, "X", "learning rate (default 0.01; adam 0.001)"),
        CLI_OPT("momentum", OPT_MOMENTUM, "X", "the momentum optimizer's (default 0.9)"),
        CLI_OPT("dropout", OPT_DROPOUT, "P", "drop probability of dropout layers (default 0.5)"),
        CLI_OPT("steps", OPT_STEPS, "N", "training steps (default 10)"),
        CLI_STR("backend", OPT_BACKEND, "NAME",
                "run the forward and backward of the layers NAME has\nprimitives for on them "
                "(onednn, cuda; default ref)",
                &to.backend),
        CLI_NUM("threads", 't', "N",
                "threads of the backend's backward (default 0: all\ncores; the reference "
                "engine runs on one)",
                &to.threads, 0, 4096, "a number of threads (0: all cores)"),
        CLI_OPT("precision", 'p', "P",
                "f32 (default) or bf16: mixed precision (bf16 feature\nmaps and copies of "
                "fp32 master weights; the f32 losses\nof the same steps beside)"),
        CLI_OPT("seed", OPT_SEED, "N", "weights, inputs, labels and masks (default 1)"),
        CLI_STR("save-weights", OPT_SAVE, "DIR",
                "write each weight after training as DIR/<name>.npy", &save),
        CLI_OPT("max-memory", 'M', "SIZE", "refuse a step that needs more (default: physical RAM)"),
        CLI_OPT("format", 'f', "F", "table (default), json or csv"),
        CLI_STR("output", 'o', "FILE", "write the report to FILE (written only on success)",
                &output),
        CLI_STR("html", OPT_HTML, "FILE",
                "also write a self-contained HTML page: memory by\ndata structure, time per "
                "layer and phase",
                &html),
        CLI_OPT("help", 'h', NULL, "this text"),
        CLI_OPT_END,
    };
    cli_getopt_state gs = {0};
    int opt, rc = CLI_USAGE;
    int64_t iv;
    while ((opt = cli_getopt(argc, argv, opts, &gs)) != -1) {
        int r = cli_topo_option(&topo, opt, optarg);
        if (r < 0)
            goto out;
        if (r > 0)
            continue;
        switch (opt) {
        case 'i': {
            const char **p = realloc(inputs, (size_t)(n_inputs + 1) * sizeof *p);
            if (!p) {
                cli_error("out of memory");
                goto out;
            }
            inputs = p;
            inputs[n_inputs++] = optarg;
            break;
        }
        case OPT_LOSS:
            if (ntp_loss_parse(optarg, &to.loss) != NTP_STATUS_OK) {
                cli_error("--loss expects cross_entropy, mse or ctc, got '%s'", optarg);
                goto out;
            }
            break;
        case OPT_LABELS: to.labels = optarg; break;
        case OPT_INPUT_LENGTHS: to.input_lengths = optarg; break;
        case OPT_TARGET_LENGTHS: to.target_lengths = optarg; break;
        case OPT_OPTIMIZER:
            if (ntp_optimizer_parse(optarg, &to.optimizer) != NTP_STATUS_OK) {
                cli_error("--optimizer expects sgd, momentum or adam, got '%s'", optarg);
                goto out;
            }
            break;
        case OPT_LR:
            if (!cli_parse_double(optarg, 1e-300, 1e6, &to.lr)) {
                cli_error("--lr expects a positive number, got '%s'", optarg);
                goto out;
            }
            break;
        case OPT_MOMENTUM:
            if (!cli_parse_double(optarg, 1e-300, 1.0, &to.momentum)) {
                cli_error("--momentum expects a number in (0, 1], got '%s'", optarg);
                goto out;
            }
            break;
        case OPT_DROPOUT:
            if (!cli_parse_double(optarg, 0.0, 1.0, &to.dropout)) {
                cli_error("--dropout expects a probability in [0, 1], got '%s'", optarg);
                goto out;
            }
            break;
        case OPT_STEPS:
            if (!cli_parse_int(optarg, 1, 1000000, &iv)) {
                cli_error("--steps expects a positive integer, got '%s'", optarg);
                goto out;
            }
            to.steps = (int)iv;
            break;
        case OPT_SEED:
            if (!cli_parse_int(optarg, 1, INT64_MAX, &iv)) {
                cli_error("--seed expects a positive integer, got '%s'", optarg);
                goto out;
            }
            to.seed = (uint64_t)iv;
            break;
        case 'f':
            if (!cli_parse_format(optarg, &fmt))
                goto out;
            break;
        default: rc = cli_option_end("train", opt, opts, 25); goto out;
        }
    }
    ntp_ctx *ctx;
    ntp_load_opts lo;
    const ntp_output_path outs[] = {{"-o", output, NTP_OUTPUT_FILE},
                                    {"--html", html, NTP_OUTPUT_FILE}};
    if ((rc = cli_begin_topology_command("train", "a topology FILE", argc, argv, &topo, outs, 2,
                                         &ctx, &lo)) != CLI_OK)
        goto out;
    /* The library's own budget check counts inference memory: training's
     * is checked by the trainer, with its breakdown. */
    to.max_memory = lo.max_memory;
    if (to.max_memory == 0) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        to.max_memory = pages > 0 && page > 0 ? (int64_t)pages * page : -1;
    }
    lo.max_memory = -1;
    /* --precision bf16 is mixed precision over the f32 topology
     * (docs/train.md); the trainer refuses f16 and i8 with one line. */
    if (lo.set_precision) {
        to.precision = lo.precision;
        lo.set_precision = false;
    }
    if (save && access(save, W_OK) != 0) {
        cli_error("--save-weights %s: not a writable directory", save);
        ntp_ctx_free(ctx);
        rc = CLI_FAIL;
        goto out;
    }
    to.inputs = inputs;
    to.n_inputs = n_inputs;
    cli_progress prog;
    cli_progress_init(&prog);
    to.progress = on_step;
    to.progress_user = &prog;
    ntp_graph *g = NULL;
    ntp_trainer *tr = NULL;
    ntp_train_result *res = NULL;
    if (ntp_graph_load(ctx, argv[optind], &lo, &g) != NTP_STATUS_OK ||
        ntp_trainer_new(ctx, g, &to, &tr) != NTP_STATUS_OK ||
        ntp_trainer_run(ctx, tr, &res) != NTP_STATUS_OK ||
        (save && ntp_trainer_save_weights(ctx, tr, save) != NTP_STATUS_OK)) {
        cli_progress_clear(&prog);
        rc = cli_fail(ctx);
    } else {
        cli_progress_clear(&prog);
        cli_print_warnings(ctx);
        rc = cli_write_output(ctx, output, write_result, res, fmt);
        if (rc == CLI_OK && html)
            rc = cli_write_output(ctx, html, write_html, res, NTP_FORMAT_TABLE);
    }
    ntp_train_result_free(res);
    ntp_trainer_free(tr);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
out:
    free(inputs);
    cli_topo_free(&topo);
    return rc;
}
