/* ntprof run --backend a,b,...: one topology on several backends, side by
 * side (cmd-run-backends.c, docs/frameworks.md). */
#ifndef NTPROF_CLI_BACKENDS_H
#define NTPROF_CLI_BACKENDS_H

#include "cli.h"
#include "ntprof/frameworks.h"

/* Run g on every backend of the comma-separated ro->backend and write the
 * comparison. output, trace and html may hold "{backend}": then each
 * backend's own report goes to its file and the comparison to stdout as a
 * table. db, when not NULL, records every backend's run. prog's line (ro's
 * progress draws it) is cleared before anything is written. Returns a CLI_*
 * exit code (messages printed). */
int cli_run_backends(ntp_ctx *ctx, const ntp_graph *g, const ntp_run_opts *ro, cli_progress *prog,
                     ntp_format fmt, const char *output, const char *trace, const char *html,
                     const char *db);

#endif
