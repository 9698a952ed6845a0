/* ntprof: every report writer, and the output files they write to.
 *
 * One family, ntp_report_write_<object>: it takes an ntp_format (table,
 * JSON, CSV) and writes one object, an analysis, a run, a comparison, a
 * sweep, ...; a writer for a format of its own is named for it,
 * ntp_report_write_<object>_<format> (the HTML pages, the Chrome trace).
 * Writers take a FILE* so the caller decides where output goes; the
 * ntp_output helpers write to a temporary file renamed into place on
 * commit, so a failed run leaves nothing half-written. */
#ifndef NTPROF_REPORT_H
#define NTPROF_REPORT_H

#include <stdio.h>
#include "ntprof/analyze.h"
#include "ntprof/api.h"
#include "ntprof/compare.h"
#include "ntprof/frameworks.h"
#include "ntprof/machine.h"
#include "ntprof/run.h"
#include "ntprof/store.h"
#include "ntprof/sweep.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ntp_format { NTP_FORMAT_TABLE, NTP_FORMAT_JSON, NTP_FORMAT_CSV } ntp_format;

/* "table", "json", "csv". */
NTP_API ntp_status ntp_format_parse(const char *s, ntp_format *out);

#define NTP_REPORT_SCHEMA_VERSION 1

/* --- table, JSON, CSV ------------------------------------------------------------------ */

/* An analysis (docs/report-format.md). */
NTP_API ntp_status ntp_report_write_analysis(ntp_ctx *ctx, const ntp_graph *g,
                                             const ntp_analysis *a, ntp_format fmt, FILE *f);
/* A run report (docs/report-format.md); read back by ntp_run_result_parse. */
NTP_API ntp_status ntp_report_write_run(ntp_ctx *ctx, const ntp_run_result *r, ntp_format fmt,
                                        FILE *f);
/* A comparison of runs (docs/compare.md). */
NTP_API ntp_status ntp_report_write_comparison(ntp_ctx *ctx, const ntp_comparison *c,
                                               ntp_format fmt, FILE *f);
/* Every configuration of a sweep with every figure and its spread (docs/sweep.md). */
NTP_API ntp_status ntp_report_write_sweep(ntp_ctx *ctx, const ntp_sweep *s, ntp_format fmt,
                                          FILE *f);
/* The side-by-side view of one topology on several backends: table (per
 * backend, end to end with prepare time and output deviation, then per
 * layer), JSON (that, plus each backend's complete run report under
 * "report"), or CSV (one row per backend and layer, and one end-to-end row
 * per backend) (docs/frameworks.md). */
NTP_API ntp_status ntp_report_write_backend_comparison(ntp_ctx *ctx,
                                                       const ntp_backend_comparison *c,
                                                       ntp_format fmt, FILE *f);
/* The machine and, when c is not NULL, its ceilings (docs/machine.md). */
NTP_API ntp_status ntp_report_write_machine(ntp_ctx *ctx, const ntp_machine_info *m,
                                            const ntp_ceilings *c, ntp_format fmt, FILE *f);
/* Stored runs (ntp_store_list) as a table (id, time, topology, backend,
 * precision, batch, threads, median ms, machine), JSON or CSV. */
NTP_API ntp_status ntp_report_write_history(ntp_ctx *ctx, const ntp_history_entry *e, int n,
                                            ntp_format fmt, FILE *f);

/* --- formats of their own ---------------------------------------------------------------- */

/* Chrome trace-event JSON (Perfetto, chrome://tracing): layers as complete
 * events on one timeline, one slice per layer per iteration. */
NTP_API ntp_status ntp_report_write_run_trace(ntp_ctx *ctx, const ntp_run_result *r, FILE *f);
/* One self-contained HTML page (inline CSS, charts as inline SVG, no
 * network loads) for a run, a comparison or a sweep (docs/html.md). */
NTP_API ntp_status ntp_report_write_run_html(ntp_ctx *ctx, const ntp_run_result *r, FILE *f);
NTP_API ntp_status ntp_report_write_comparison_html(ntp_ctx *ctx, const ntp_comparison *c, FILE *f);
NTP_API ntp_status ntp_report_write_sweep_html(ntp_ctx *ctx, const ntp_sweep *s, FILE *f);

/* --- output files ------------------------------------------------------------------------ */

/* An output file that appears only when committed. path "-" (or
 * /dev/stdout) is stdout; a regular file is replaced atomically, keeping
 * its permissions; a device or FIFO is written through, not replaced
 * (src/io/output.c). */
typedef struct ntp_output ntp_output;
NTP_API ntp_status ntp_output_open(ntp_ctx *ctx, const char *path, ntp_output **out);
/* What an output path names. */
typedef enum ntp_output_kind {
    NTP_OUTPUT_FILE,     /* a file written through ntp_output_open */
    NTP_OUTPUT_DIR,      /* a folder the command creates (one level) or fills */
    NTP_OUTPUT_SAME_ONLY /* a file written by other means (the history
                          * database, whose failures are warnings): only
                          * compared with the other outputs */
} ntp_output_kind;
/* One path a command will write, with the option that named it ("-o"). */
typedef struct ntp_output_path {
    const char *option;
    const char *path;     /* NULL: not written */
    ntp_output_kind kind; /* left out: NTP_OUTPUT_FILE */
} ntp_output_path;
/* Check every output of a command before it starts any work: each folder
 * exists and is writable, no output file is a directory, an output folder
 * is a folder or a new name in a writable one, none is one of the
 * command's inputs (the same device and inode, however spelt), and no two
 * name the same file. INVALID_ARGUMENT or IO_ERROR, naming the option. */
NTP_API ntp_status ntp_output_check(ntp_ctx *ctx, const ntp_output_path *outs, int n_out,
                                    const char *const *inputs, int n_in);
NTP_API FILE *ntp_output_file(ntp_output *o);
/* Flush, fsync and rename into place; frees o. */
NTP_API ntp_status ntp_output_commit(ntp_ctx *ctx, ntp_output *o);
/* Remove the temporary file (nothing is written); frees o. */
NTP_API void ntp_output_abort(ntp_output *o);

#ifdef __cplusplus
}
#endif
#endif
