/* Private side of ntp_ctx: how the library records failures and warnings. */
#ifndef NTPROF_CTX_IMPL_H
#define NTPROF_CTX_IMPL_H

#include <stdarg.h>
#include "ntprof/context.h"

/* Record a one-line message and return st. Newlines in the message are
 * replaced by spaces so the message stays one line. */
ntp_status ntp__error(ntp_ctx *ctx, ntp_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
ntp_status ntp__verror(ntp_ctx *ctx, ntp_status st, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
void ntp__warn(ntp_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* strdup that returns NULL for NULL. */
char *ntp__strdup(const char *s);
/* Levenshtein distance, for "did you mean" suggestions. */
int ntp__edit_distance(const char *a, const char *b);
/* The candidate nearest to `word` (distance <= max(2, len/3)), or NULL. */
const char *ntp__nearest(const char *word, const char *const *candidates, int n);

#endif
