/* The writers every layer that prints shares, private to libntprof
 * (src/core/writers.c): reports, counters, the machine's ceilings and the
 * history all write tables, CSV and JSON through them.
 *
 * Tables are for people and must fit a 100-column terminal; JSON and CSV are
 * for programs and carry exact values. The helpers below keep those two
 * promises in one place. */
#ifndef NTPROF_WRITERS_IMPL_H
#define NTPROF_WRITERS_IMPL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ntprof/context.h"

/* Every line of a table report is at most this many columns. */
#define NTP_TABLE_WIDTH 100

/* --- text tables --------------------------------------------------------- */
/* Display columns of a UTF-8 string: one per code point. (East Asian wide
 * characters would take two; layer names rarely use them and the tables
 * accept that.) */
size_t ntp__text_cols(const char *s);
/* Write s in exactly `width` columns: cut with an ellipsis when longer,
 * padded with spaces on the right (or the left when right_align). Control
 * characters are shown as '?' so a name cannot break the table's lines. */
void ntp__put_cell(FILE *f, const char *s, int width, bool right_align);
/* Write s as one line cut to NTP_TABLE_WIDTH columns, then a newline. */
void ntp__put_line(FILE *f, const char *s);
/* printf into a line, then ntp__put_line. */
void ntp__put_linef(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Write prefix + text word-wrapped at NTP_TABLE_WIDTH columns; continuation
 * lines are indented by the prefix's width. Nothing is cut: text is what a
 * reader must see in full (warnings). */
void ntp__put_wrapped(FILE *f, const char *prefix, const char *text);

/* Counts with three significant digits and an SI suffix, for tables only:
 * 950, 9.41K, 25.6M, 4.09G, 1.23T. */
const char *ntp__human_count(double v, char *buf, size_t len);
/* Bytes in decimal units with three significant digits: 512 B, 9.41 kB,
 * 102 MB, 1.23 GB. Decimal, like GB/s and GFLOP/s next to them. */
const char *ntp__human_bytes(double bytes, char *buf, size_t len);
/* A number in at most `width` columns, with as many decimals as fit up to
 * `decimals`; exponent form for a value too big for the column or too small
 * to show a digit with `decimals` decimals; "-" for NaN and infinity. */
const char *ntp__fit_number(double v, int width, int decimals, char *buf, size_t len);

/* --- CSV (RFC 4180 quoting) -------------------------------------------------- */
/* A field, quoted when it holds a comma, a quote, CR or LF; NULL is empty. */
void ntp__csv_str(FILE *f, const char *s);
void ntp__csv_int(FILE *f, int64_t v);
/* Shortest exact-enough form (%.10g); empty for NaN or infinity. */
void ntp__csv_num(FILE *f, double v);
void ntp__csv_bool(FILE *f, bool v);
/* A separator before every field but the first of a row. */
static inline void ntp__csv_sep(FILE *f)
{
    fputc(',', f);
}

/* --- JSON ------------------------------------------------------------------ */
/* A string value; NULL gives JSON null, and bytes that are not valid UTF-8
 * are replaced by '?' so a bad name cannot make the report unwritable. */
json_t *ntp__json_str(const char *s);
/* A number; NaN and infinity, which JSON cannot express, give null. */
json_t *ntp__json_num(double v);
/* The strings of array arr joined by single spaces into buf (the ISA
 * flags' list as ntp_env keeps it); "" for an empty, absent or non-array
 * arr; other values are skipped, a long list is cut at len. */
void ntp__json_join(json_t *arr, char *buf, size_t len);
/* obj[key] = v, stealing v. A NULL v (a failed allocation upstream) or a
 * failed insert clears *ok, so a builder checks once at the end. */
void ntp__jset(bool *ok, json_t *obj, const char *key, json_t *v);
/* Append v to arr, stealing v; clears *ok on failure. */
void ntp__jpush(bool *ok, json_t *arr, json_t *v);
/* Write root (indented, keys in insertion order) and a newline to f, then
 * release root. `ok` is the builder's flag: false means an allocation
 * failed while building and nothing is written. */
ntp_status ntp__json_finish(ntp_ctx *ctx, json_t *root, bool ok, FILE *f, const char *what);

/* Check the stream after writing a report: a full disk is an IO_ERROR. */
ntp_status ntp__check_stream(ntp_ctx *ctx, FILE *f, const char *what);

#endif
