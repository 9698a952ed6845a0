/* The ntprof command-line client: a thin layer over libntprof. */
#ifndef NTPROF_CLI_H
#define NTPROF_CLI_H

#include <stdbool.h>
#include <stdio.h>
#include "ntprof/ntprof.h"

/* Exit codes: 0 success, 1 the work failed (bad topology, backend error),
 * 2 bad usage. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* Options every command that loads a topology accepts. */
typedef struct cli_topo_opts {
    const char **set;
    int n_set, cap_set;
    int64_t batch;
    const char *precision;
    int64_t max_memory;
} cli_topo_opts;

/* Parse one of the shared topology options; returns 1 if `opt` was one of
 * them, 0 if not, -1 on a bad value (message printed). */
int cli_topo_option(cli_topo_opts *o, int opt, const char *arg);
void cli_topo_free(cli_topo_opts *o);
ntp_load_opts cli_load_opts(const cli_topo_opts *o);

/* Print "ntprof: <message>" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print the context's warnings (they may explain the failure), then the
 * library's last error in one line, and return CLI_FAIL. */
int cli_fail(ntp_ctx *ctx);
/* A new context, or NULL after printing "out of memory". */
ntp_ctx *cli_ctx_new(void);
/* Check the FILE arguments left after the options of command `cmd`: none
 * (want 0) or exactly one (want 1, described as `what`, e.g. "a topology
 * FILE"). On a mismatch prints the usage error and returns false. */
bool cli_want_files(const char *cmd, int argc, char **argv, int want, const char *what);
/* Print the context's warnings to stderr. */
void cli_print_warnings(ntp_ctx *ctx);
/* Parse --format's value; false after printing the usage error. */
bool cli_parse_format(const char *s, ntp_format *out);
/* Parse "123", "64M", "2G" (binary units) into bytes. */
bool cli_parse_size(const char *s, int64_t *out);
bool cli_parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out);
bool cli_parse_double(const char *s, double lo, double hi, double *out);

/* Write a report through a callback into -o FILE (atomically) or stdout. */
typedef ntp_status (*cli_writer)(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f);
int cli_write_output(ntp_ctx *ctx, const char *path, cli_writer w, const void *arg, ntp_format fmt);
/* Check a command's outputs (pairs of option and path, NULL paths skipped)
 * against each other and its inputs before any work (ntp_output_check):
 * CLI_OK, or the one-line error and CLI_FAIL. */
int cli_check_outputs(ntp_ctx *ctx, const ntp_output_path *outs, int n_out,
                      const char *const *inputs, int n_in);

int cmd_analyze(int argc, char **argv);
int cmd_run(int argc, char **argv);

#endif
