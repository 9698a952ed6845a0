/* The writers every layer that prints uses (reports, counters, the
 * machine's ceilings, the history): fitted table cells, human units, CSV
 * fields and JSON values. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "core/writers-impl.h"

/* --- text tables ------------------------------------------------------------ */

/* A code point starts at every byte that is not a UTF-8 continuation byte. */
static bool starts_char(unsigned char c)
{
    return (c & 0xC0) != 0x80;
}

size_t ntp__text_cols(const char *s)
{
    size_t n = 0;
    for (; s && *s; s++)
        n += starts_char((unsigned char)*s);
    return n;
}

/* Bytes taken by the first `cols` code points of s. */
static size_t bytes_for_cols(const char *s, size_t cols)
{
    size_t i = 0, seen = 0;
    while (s[i]) {
        if (starts_char((unsigned char)s[i])) {
            if (seen == cols)
                break;
            seen++;
        }
        i++;
    }
    return i;
}

static void put_clean(FILE *f, const char *s, size_t nbytes)
{
    for (size_t i = 0; i < nbytes; i++) {
        unsigned char c = (unsigned char)s[i];
        fputc(c < 0x20 || c == 0x7F ? '?' : c, f);
    }
}

static void put_spaces(FILE *f, size_t n)
{
    while (n--)
        fputc(' ', f);
}

/* U+2026 HORIZONTAL ELLIPSIS: one column where "..." would take three. */
static const char ellipsis[] = "\xE2\x80\xA6";

void ntp__put_cell(FILE *f, const char *s, int width, bool right_align)
{
    if (!s)
        s = "";
    if (width <= 0)
        return;
    size_t cols = ntp__text_cols(s), w = (size_t)width;
    if (cols <= w) {
        if (right_align)
            put_spaces(f, w - cols);
        put_clean(f, s, strlen(s));
        if (!right_align)
            put_spaces(f, w - cols);
        return;
    }
    put_clean(f, s, bytes_for_cols(s, w - 1));
    fputs(ellipsis, f);
}

void ntp__put_line(FILE *f, const char *s)
{
    if (!s)
        s = "";
    if (ntp__text_cols(s) <= NTP_TABLE_WIDTH) {
        put_clean(f, s, strlen(s));
    } else {
        put_clean(f, s, bytes_for_cols(s, NTP_TABLE_WIDTH - 1));
        fputs(ellipsis, f);
    }
    fputc('\n', f);
}

void ntp__put_linef(FILE *f, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    ntp__put_line(f, buf);
}

void ntp__put_wrapped(FILE *f, const char *prefix, const char *text)
{
    size_t indent = ntp__text_cols(prefix);
    /* A prefix wider than the line leaves a minimum of room for the text. */
    size_t room = indent + 20 < NTP_TABLE_WIDTH ? NTP_TABLE_WIDTH - indent : 20;
    bool first = true;
    if (!text)
        text = "";
    do {
        if (first)
            put_clean(f, prefix, strlen(prefix));
        else
            put_spaces(f, indent);
        first = false;
        size_t take = bytes_for_cols(text, room);
        if (text[take] != '\0') {
            /* Break after the last space that fits, if there is one. */
            size_t cut = take;
            while (cut > 0 && text[cut] != ' ')
                cut--;
            if (cut > 0)
                take = cut;
        }
        put_clean(f, text, take);
        fputc('\n', f);
        text += take;
        while (*text == ' ')
            text++;
    } while (*text);
}

/* Three significant digits of v, which is in [1, 999.5). */
static void three_digits(double v, char *buf, size_t len, const char *sign, const char *unit)
{
    if (v < 9.995)
        snprintf(buf, len, "%s%.2f%s", sign, v, unit);
    else if (v < 99.95)
        snprintf(buf, len, "%s%.1f%s", sign, v, unit);
    else
        snprintf(buf, len, "%s%.0f%s", sign, v, unit);
}

/* units[0] is the suffix of values below 1000, which print as integers. */
static const char *human(double v, char *buf, size_t len, const char *const *units)
{
    if (!isfinite(v)) {
        snprintf(buf, len, "-");
        return buf;
    }
    const char *sign = v < 0 ? "-" : "";
    v = fabs(v);
    if (v < 999.5) {
        snprintf(buf, len, "%s%.0f%s", sign, v, units[0]);
        return buf;
    }
    int u = 0;
    /* 999.5 rather than 1000: a value that rounds to 1000 in three digits
     * moves up a unit, so 999999 is "1.00M", not "1000K". */
    while (v >= 999.5 && units[u + 1]) {
        v /= 1000.0;
        u++;
    }
    three_digits(v, buf, len, sign, units[u]);
    return buf;
}

const char *ntp__human_count(double v, char *buf, size_t len)
{
    static const char *const units[] = {"", "K", "M", "G", "T", "P", "E", NULL};
    return human(v, buf, len, units);
}

const char *ntp__human_bytes(double bytes, char *buf, size_t len)
{
    static const char *const units[] = {" B", " kB", " MB", " GB", " TB", " PB", " EB", NULL};
    return human(bytes, buf, len, units);
}

const char *ntp__fit_number(double v, int width, int decimals, char *buf, size_t len)
{
    if (!isfinite(v)) {
        snprintf(buf, len, "-");
        return buf;
    }
    /* A small non-zero value would print as 0.00 and read as "nothing":
     * give it in exponent form instead. */
    bool tiny = v != 0.0 && fabs(v) < 0.5 * pow(10.0, -decimals);
    for (int d = decimals; d >= 0 && !tiny; d--) {
        int n = snprintf(buf, len, "%.*f", d, v);
        if (n >= 0 && n <= width && (size_t)n < len)
            return buf;
    }
    for (int d = 2; d >= 0; d--) {
        int n = snprintf(buf, len, "%.*e", d, v);
        if (n >= 0 && n <= width && (size_t)n < len)
            return buf;
    }
    return buf; /* too narrow for any form: the cell cuts it */
}

/* --- CSV ----------------------------------------------------------------------- */

void ntp__csv_str(FILE *f, const char *s)
{
    if (!s)
        return;
    if (strpbrk(s, ",\"\r\n") == NULL) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void ntp__csv_int(FILE *f, int64_t v)
{
    fprintf(f, "%lld", (long long)v);
}

void ntp__csv_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.10g", v);
}

void ntp__csv_bool(FILE *f, bool v)
{
    fputs(v ? "true" : "false", f);
}

/* --- JSON ---------------------------------------------------------------------- */

json_t *ntp__json_str(const char *s)
{
    if (!s)
        return json_null();
    json_t *j = json_string(s);
    if (j)
        return j;
    /* json_string() refuses invalid UTF-8. Keep the ASCII and mark the
     * rest, so the reader still recognises the name. */
    char *copy = ntp__strdup(s);
    if (!copy)
        return NULL;
    for (char *p = copy; *p; p++)
        if ((unsigned char)*p >= 0x80)
            *p = '?';
    j = json_string(copy);
    free(copy);
    return j;
}

json_t *ntp__json_num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

void ntp__json_join(json_t *arr, char *buf, size_t len)
{
    size_t used = 0, i;
    json_t *v;
    buf[0] = '\0';
    json_array_foreach(arr, i, v)
    {
        if (json_is_string(v) && used < len)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? " " : "",
                                     json_string_value(v));
    }
}

void ntp__jset(bool *ok, json_t *obj, const char *key, json_t *v)
{
    /* json_object_set_new() releases v even when it fails. */
    if (!v || !obj || json_object_set_new(obj, key, v) != 0) {
        if (v && !obj)
            json_decref(v);
        *ok = false;
    }
}

void ntp__jpush(bool *ok, json_t *arr, json_t *v)
{
    if (!v || !arr || json_array_append_new(arr, v) != 0) {
        if (v && !arr)
            json_decref(v);
        *ok = false;
    }
}

ntp_status ntp__check_stream(ntp_ctx *ctx, FILE *f, const char *what)
{
    if (fflush(f) != 0 || ferror(f))
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "error writing the %s report: %s", what,
                          strerror(errno ? errno : EIO));
    return NTP_STATUS_OK;
}

ntp_status ntp__json_finish(ntp_ctx *ctx, json_t *root, bool ok, FILE *f, const char *what)
{
    if (!ok || !root) {
        json_decref(root);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory building the %s report",
                          what);
    }
    /* 15 significant digits print 0.1 as 0.1 (17 would print
     * 0.10000000000000001) and are far finer than any timing. Integers are
     * json_integer values and always exact. */
    int rc = json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
    json_decref(root);
    if (rc != 0)
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "error writing the %s report", what);
    fputc('\n', f);
    return ntp__check_stream(ctx, f, what);
}
