/* ntprof: writing analyses and run results as tables, JSON, CSV and traces.
 *
 * Writers take a FILE* so the caller decides where output goes; the
 * ntp_output helpers write to a temporary file renamed into place on
 * commit, so a failed run leaves nothing half-written. */
#ifndef NTPROF_REPORT_H
#define NTPROF_REPORT_H

#include <stdio.h>
#include "ntprof/analyze.h"
#include "ntprof/run.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ntp_format {
    NTP_FORMAT_TABLE,
    NTP_FORMAT_JSON,
    NTP_FORMAT_CSV
} ntp_format;

/* "table", "json", "csv". */
ntp_status ntp_format_parse(const char *s, ntp_format *out);

#define NTP_REPORT_SCHEMA_VERSION 1

ntp_status ntp_report_write_analysis(ntp_ctx *ctx, const ntp_graph *g, const ntp_analysis *a,
                                     ntp_format fmt, FILE *f);
ntp_status ntp_report_write_run(ntp_ctx *ctx, const ntp_run_result *r, ntp_format fmt, FILE *f);
/* Chrome trace-event JSON (Perfetto, chrome://tracing): layers as complete
 * events on one timeline, one slice per layer per iteration. */
ntp_status ntp_report_write_trace(ntp_ctx *ctx, const ntp_run_result *r, FILE *f);

/* An output file that appears only when committed. path "-" (or
 * /dev/stdout) is stdout; a regular file is replaced atomically, keeping
 * its permissions; a device or FIFO is written through, not replaced
 * (src/report/output.c). */
typedef struct ntp_output ntp_output;
ntp_status ntp_output_open(ntp_ctx *ctx, const char *path, ntp_output **out);
/* What an output path names. */
typedef enum ntp_output_kind {
    NTP_OUTPUT_FILE,        /* a file written through ntp_output_open */
    NTP_OUTPUT_DIR,         /* a folder the command creates (one level) or fills */
    NTP_OUTPUT_SAME_ONLY    /* a file written by other means (the history
                             * database, whose failures are warnings): only
                             * compared with the other outputs */
} ntp_output_kind;
/* One path a command will write, with the option that named it ("-o"). */
typedef struct ntp_output_path {
    const char *option;
    const char *path;       /* NULL: not written */
    ntp_output_kind kind;   /* left out: NTP_OUTPUT_FILE */
} ntp_output_path;
/* Check every output of a command before it starts any work: each folder
 * exists and is writable, no output file is a directory, an output folder
 * is a folder or a new name in a writable one, none is one of the
 * command's inputs (the same device and inode, however spelt), and no two
 * name the same file. INVALID_ARGUMENT or IO_ERROR, naming the option. */
ntp_status ntp_output_check(ntp_ctx *ctx, const ntp_output_path *outs, int n_out,
                            const char *const *inputs, int n_in);
FILE *ntp_output_file(ntp_output *o);
/* Flush, fsync and rename into place; frees o. */
ntp_status ntp_output_commit(ntp_ctx *ctx, ntp_output *o);
/* Remove the temporary file (nothing is written); frees o. */
void ntp_output_abort(ntp_output *o);

#ifdef __cplusplus
}
#endif
#endif
