/* The context: last error message, warnings, and small string helpers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx-impl.h"

#define NTP_ERRMSG_MAX 1024

struct ntp_ctx {
    ntp_status status;
    char errmsg[NTP_ERRMSG_MAX];
    /* The parts of the last failure (ntp_ctx_error_part): each one a string
     * in parts, or absent; the text is errmsg's tail from text_at. */
    char parts[8 * NTP_ERRMSG_MAX]; /* room for a path of PATH_MAX and the rest */
    int part_at[NTP_ERROR_TEXT];    /* -1: absent */
    size_t text_at;
    int line;
    char **warnings;
    size_t n_warnings, cap_warnings;
};

static void clear_parts(ntp_ctx *ctx)
{
    for (int i = 0; i < NTP_ERROR_TEXT; i++)
        ctx->part_at[i] = -1;
    ctx->text_at = 0;
    ctx->line = 0;
}

ntp_ctx *ntp_ctx_init(void)
{
    ntp_ctx *ctx = calloc(1, sizeof(ntp_ctx));
    if (ctx)
        clear_parts(ctx);
    return ctx;
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
    clear_parts(ctx);
}

const char *ntp_ctx_error_part(const ntp_ctx *ctx, ntp_error_part part)
{
    if (!ctx)
        return part == NTP_ERROR_TEXT ? "" : NULL;
    if (part == NTP_ERROR_TEXT)
        return ctx->errmsg + ctx->text_at;
    if ((unsigned)part >= NTP_ERROR_TEXT || ctx->part_at[part] < 0)
        return NULL;
    return ctx->parts + ctx->part_at[part];
}

int ntp_ctx_error_line(const ntp_ctx *ctx)
{
    return ctx ? ctx->line : 0;
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
    /* Through a copy: the arguments may hold the last message. */
    char msg[NTP_ERRMSG_MAX];
    vsnprintf(msg, sizeof msg, fmt, ap);
    one_line(msg);
    ctx->status = st;
    memcpy(ctx->errmsg, msg, sizeof msg);
    clear_parts(ctx);
    return st;
}

/* Keep part p's value s (one line) in ctx->parts from *used on. */
static void keep_part(ntp_ctx *ctx, ntp_error_part p, const char *s, size_t *used)
{
    if (!s)
        return;
    int n = snprintf(ctx->parts + *used, sizeof ctx->parts - *used, "%s", s);
    if (n < 0 || (size_t)n >= sizeof ctx->parts - *used)
        return; /* no room: the part is left out, the message keeps it */
    one_line(ctx->parts + *used);
    ctx->part_at[p] = (int)*used;
    *used += (size_t)n + 1;
}

ntp_status ntp__error_at(ntp_ctx *ctx, ntp_status st, const ntp__where *w, const char *fmt, ...)
{
    if (!ctx)
        return st;
    char text[NTP_ERRMSG_MAX], msg[NTP_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    one_line(text);
    /* The message as ntp_ctx_error_part() describes it. */
    size_t n = 0;
#define PUT(...)                                                     \
    do {                                                             \
        size_t at_ = n < sizeof msg ? n : sizeof msg - 1;            \
        int k_ = snprintf(msg + at_, sizeof msg - at_, __VA_ARGS__); \
        n += k_ > 0 ? (size_t)k_ : 0;                                \
    } while (0)
    if (w->file && w->line > 0)
        PUT("%s:%d: ", w->file, w->line);
    else if (w->file)
        PUT("%s: ", w->file);
    if (w->element && w->layer)
        PUT("<%s name='%s'>: ", w->element, w->layer);
    else if (w->element)
        PUT("<%s>: ", w->element);
    else if (w->layer)
        PUT("layer '%s': ", w->layer);
    if (w->option)
        PUT("%s%s", w->option, text[0] == ':' ? "" : " ");
#undef PUT
    size_t text_at = n < sizeof msg ? n : sizeof msg - 1;
    snprintf(msg + text_at, sizeof msg - text_at, "%s", text);
    one_line(msg);
    ctx->status = st;
    memcpy(ctx->errmsg, msg, sizeof msg);
    clear_parts(ctx);
    ctx->text_at = text_at;
    ctx->line = w->file ? w->line : 0;
    size_t used = 0;
    keep_part(ctx, NTP_ERROR_FILE, w->file, &used);
    keep_part(ctx, NTP_ERROR_ELEMENT, w->element, &used);
    keep_part(ctx, NTP_ERROR_LAYER, w->layer, &used);
    keep_part(ctx, NTP_ERROR_OPTION, w->option, &used);
    keep_part(ctx, NTP_ERROR_EXPECTED, w->expected, &used);
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
