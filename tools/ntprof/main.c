/* ntprof: entry point and subcommand dispatch. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd-onnx.h"
#include "ntp-version.h"

int cmd_counters(int argc, char **argv);

typedef struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} command;

int cmd_compare(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_machine(int argc, char **argv);
int cmd_sweep(int argc, char **argv);

static const command commands[] = {
    {"run", cmd_run, "build a topology on a backend, run it and measure where time goes"},
    {"analyze", cmd_analyze, "shapes, parameters, FLOPs and memory of a topology, without running it"},
    {"export", cmd_export, "write a topology as an ONNX model with its weights"},
    {"convert", cmd_convert, "write a model's architecture (ONNX or markup) as editable markup"},
    {"counters", cmd_counters, "what this machine can count (--counters, --tool) and why not the rest"},
    {"machine", cmd_machine, "this machine's topology and measured ceilings (peak FLOP/s, bandwidth)"},
    {"compare", cmd_compare, "runs side by side: layers aligned, speedups with confidence"},
    {"sweep", cmd_sweep, "run over configurations (params, backend, precision, batch, threads)"},
    {"history", cmd_history, "runs recorded in the history database"},
};
#define N_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: ntprof <command> [options] FILE\n\ncommands:\n");
    for (int i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "  %-10s %s\n", "help", "this text, or `ntprof help <command>`");
    fprintf(f, "\n`ntprof <command> --help` describes a command's options.\n"
               "`ntprof --version` prints the version.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        /* The backends this machine can use; built ones it cannot (an
         * accelerator's without its device) on a line of their own. */
        const char *usable = ntp_backends_available(), *built = ntp_backends();
        printf("ntprof %s (git %s; backends: %s)\n", NTP_VERSION_STRING, NTP_GIT_REVISION, usable);
        for (const char *b = built; *b;) {
            char name[64], why[512];
            size_t n = strcspn(b, ",");
            snprintf(name, sizeof name, "%.*s", (int)n, b);
            if (!ntp_backend_usable(name, why, sizeof why))
                printf("%s: built, but not usable on this machine: %s\n", name, why);
            b += n + (b[n] == ',');
        }
        return CLI_OK;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        if (argc >= 3 && strcmp(cmd, "help") == 0) {
            for (int i = 0; i < N_COMMANDS; i++)
                if (strcmp(argv[2], commands[i].name) == 0) {
                    char *args[] = {argv[2], (char *)"--help", NULL};
                    return commands[i].fn(2, args);
                }
            cli_error("unknown command '%s'", argv[2]);
            return CLI_USAGE;
        }
        usage(stdout);
        return CLI_OK;
    }
    for (int i = 0; i < N_COMMANDS; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    const char *names[N_COMMANDS];
    for (int i = 0; i < N_COMMANDS; i++)
        names[i] = commands[i].name;
    const char *best = ntp_nearest_name(cmd, names, N_COMMANDS);
    if (best)
        cli_error("unknown command '%s'; did you mean '%s'?", cmd, best);
    else
        cli_error("unknown command '%s'; try 'ntprof help'", cmd);
    return CLI_USAGE;
}
