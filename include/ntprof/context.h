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
