/* The context: last error message, warnings, and small string helpers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx-impl.h"

#define NTP_ERRMSG_MAX 1024

struct ntp_ctx {
    ntp_status status;
    char errmsg[NTP_ERRMSG_MAX];
    char **warnings;
    size_t n_warnings, cap_warnings;
};

ntp_ctx *ntp_ctx_init(void)
{
    return calloc(1, sizeof(ntp_ctx));
}

void ntp_ctx_free(ntp_ctx *ctx)
{
    if (!ctx)
        return;
    ntp_ctx_clear_warnings(ctx);
    free(ctx->warnings);
    free(ctx);
}

const char *ntp_ctx_errmsg(const ntp_ctx *ctx)
{
    return ctx ? ctx->errmsg : "";
}

ntp_status ntp_ctx_status(const ntp_ctx *ctx)
{
    return ctx ? ctx->status : NTP_STATUS_OK;
}

void ntp_ctx_clear(ntp_ctx *ctx)
{
    if (!ctx)
        return;
    ctx->status = NTP_STATUS_OK;
    ctx->errmsg[0] = '\0';
}

size_t ntp_ctx_warning_count(const ntp_ctx *ctx)
{
    return ctx ? ctx->n_warnings : 0;
}

const char *ntp_ctx_warning(const ntp_ctx *ctx, size_t i)
{
    return ctx && i < ctx->n_warnings ? ctx->warnings[i] : NULL;
}

void ntp_ctx_clear_warnings(ntp_ctx *ctx)
{
    if (!ctx)
        return;
    for (size_t i = 0; i < ctx->n_warnings; i++)
        free(ctx->warnings[i]);
    ctx->n_warnings = 0;
}

static void one_line(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r' || *s == '\t')
            *s = ' ';
}

ntp_status ntp__verror(ntp_ctx *ctx, ntp_status st, const char *fmt, va_list ap)
{
    if (!ctx)
        return st;
    ctx->status = st;
    vsnprintf(ctx->errmsg, sizeof ctx->errmsg, fmt, ap);
    one_line(ctx->errmsg);
    return st;
}

ntp_status ntp__error(ntp_ctx *ctx, ntp_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ntp__verror(ctx, st, fmt, ap);
    va_end(ap);
    return st;
}

void ntp__warn(ntp_ctx *ctx, const char *fmt, ...)
{
    if (!ctx)
        return;
    char buf[NTP_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    one_line(buf);
    if (ctx->n_warnings == ctx->cap_warnings) {
        size_t cap = ctx->cap_warnings ? 2 * ctx->cap_warnings : 8;
        char **w = realloc(ctx->warnings, cap * sizeof *w);
        if (!w)
            return; /* A lost warning is better than a failed call. */
        ctx->warnings = w;
        ctx->cap_warnings = cap;
    }
    char *copy = ntp__strdup(buf);
    if (copy)
        ctx->warnings[ctx->n_warnings++] = copy;
}

char *ntp__strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

int ntp__edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return 1 << 20;
    int prev[65], cur[65];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            int m = sub < del ? sub : del;
            cur[j] = m < ins ? m : ins;
        }
        memcpy(prev, cur, (lb + 1) * sizeof prev[0]);
    }
    return prev[lb];
}

const char *ntp_nearest_name(const char *word, const char *const *candidates, int n)
{
    const char *best = NULL;
    int best_d = 1 << 20;
    for (int i = 0; i < n; i++) {
        int d = ntp__edit_distance(word, candidates[i]);
        if (d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    int limit = (int)strlen(word) / 3;
    if (limit < 2)
        limit = 2;
    return best_d <= limit ? best : NULL;
}

const char *ntp__nearest(const char *word, const char *const *candidates, int n)
{
    return ntp_nearest_name(word, candidates, n);
}
