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
/* Where a failure is and what was expected (ntp_error_part): the fields
 * left NULL (line 0) are none. */
typedef struct ntp__where {
    const char *file;
    int line;
    const char *element, *layer;
    const char *option, *expected;
} ntp__where;
/* Record a failure by its parts: the message is made of w's and the text
 * fmt formats, as ntp_ctx_error_part() describes. */
ntp_status ntp__error_at(ntp_ctx *ctx, ntp_status st, const ntp__where *w, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A failure of one option (its API name: "ntp_run_opts.place"), with the
 * text that follows the name: "expects LAYER=BACKEND, got 'x'". */
#define ntp__opt_error(ctx, st, opt, ...) \
    ntp__error_at((ctx), (st), &(ntp__where){.option = (opt)}, __VA_ARGS__)

void ntp__warn(ntp_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* strdup that returns NULL for NULL. */
char *ntp__strdup(const char *s);
/* Levenshtein distance, for "did you mean" suggestions. */
int ntp__edit_distance(const char *a, const char *b);
/* The candidate nearest to `word` (distance <= max(2, len/3)), or NULL. */
const char *ntp__nearest(const char *word, const char *const *candidates, int n);

#endif
