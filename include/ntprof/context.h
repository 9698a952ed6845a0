/* ntprof: the context that carries error messages and warnings.
 *
 * Like sqlite3_errmsg(), the library records the detail of the last failure
 * in the context passed to a call; the caller decides how to show it. The
 * library never prints. */
#ifndef NTPROF_CONTEXT_H
#define NTPROF_CONTEXT_H

#include <stddef.h>
#include "ntprof/api.h"
#include "ntprof/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ntp_ctx ntp_ctx;

/* Create a context. Returns NULL only when memory is exhausted. */
NTP_API ntp_ctx *ntp_ctx_init(void);
NTP_API void ntp_ctx_free(ntp_ctx *ctx);

/* One line describing the last failure, "" when there was none. */
NTP_API const char *ntp_ctx_errmsg(const ntp_ctx *ctx);
/* Status of the last failure recorded in ctx. */
NTP_API ntp_status ntp_ctx_status(const ntp_ctx *ctx);
/* Forget the last failure. */
NTP_API void ntp_ctx_clear(ntp_ctx *ctx);

/* The parts of the last failure, for a caller that words it its own way
 * (the CLI names its flags where the library names ntp_run_opts fields; an
 * editor jumps to the line). ntp_ctx_errmsg() is made of them:
 *
 *   FILE:LINE: <ELEMENT name='LAYER'>: OPTION TEXT
 *
 * each part left out when the failure has none ("FILE: " without a line,
 * "<ELEMENT>: " without a name, "layer 'LAYER': " without an element), and
 * no space after OPTION when TEXT starts with ':' ("ntp_run_opts.tool nvtx:
 * ..." is OPTION "ntp_run_opts.tool", TEXT "nvtx: ..."). A failure the
 * library has not split has only its TEXT, the whole message. */
typedef enum ntp_error_part {
    NTP_ERROR_FILE,     /* the input at fault: a topology, a model, a report */
    NTP_ERROR_ELEMENT,  /* the markup element at fault: "conv", "marker" */
    NTP_ERROR_LAYER,    /* the name of the layer (or named element) at fault */
    NTP_ERROR_OPTION,   /* the option at fault by its API name: "ntp_run_opts.place" */
    NTP_ERROR_EXPECTED, /* what the option or attribute expects: "LAYER=BACKEND" */
    NTP_ERROR_TEXT,     /* what is wrong: the message after the parts above */
    NTP_ERROR_PART_COUNT
} ntp_error_part;
/* One part of the last failure; NULL when it has none (NTP_ERROR_TEXT is
 * never NULL: "" when nothing failed). Valid until the next failure or
 * ntp_ctx_clear(). */
NTP_API const char *ntp_ctx_error_part(const ntp_ctx *ctx, ntp_error_part part);
/* The line in NTP_ERROR_FILE of the last failure, 1-based; 0 when none. */
NTP_API int ntp_ctx_error_line(const ntp_ctx *ctx);

/* Warnings (for example a default the reader filled in) accumulate until
 * ntp_ctx_clear_warnings(). */
NTP_API size_t ntp_ctx_warning_count(const ntp_ctx *ctx);
NTP_API const char *ntp_ctx_warning(const ntp_ctx *ctx, size_t i);
NTP_API void ntp_ctx_clear_warnings(ntp_ctx *ctx);

/* The candidate nearest to `word` by edit distance, if it is close enough
 * to be a likely typo (distance at most max(2, len/3)); NULL otherwise. Used
 * for "did you mean" suggestions. */
NTP_API const char *ntp_nearest_name(const char *word, const char *const *candidates, int n);

#ifdef __cplusplus
}
#endif
#endif
