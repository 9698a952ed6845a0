/* ${...} expressions in markup attribute values, private to libntprof.
 *
 * An attribute value may contain any number of ${expr} pieces mixed with
 * text: name="enc${i}_ln", shape="${batch},${(t-1)*160+400}". An expression
 * is 64-bit integer arithmetic over decimal literals and names (params and
 * repeat indices): + - * / % with C semantics, unary minus and plus,
 * parentheses. Division by zero and overflow are errors, never wrapped.
 * A piece that is one bare name whose value is not an integer substitutes
 * the value as text, so depthwise="${dw}" works with dw="true".
 *
 * The evaluator knows nothing about XML: the reader hands it the visible
 * names and turns its one-line messages into "FILE:LINE: <elem>: ..." errors. */
#ifndef NTPROF_EXPR_IMPL_H
#define NTPROF_EXPR_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ntprof/status.h"

/* Parentheses and unary operators nest at most this deep, so a hostile
 * "((((...))))" cannot exhaust the stack. */
#define NTP_EXPR_MAX_DEPTH 64
/* A value after substitution is at most this long (the markup's limit on an
 * attribute as written, NTP_XML_MAX_ATTR_BYTES, applied again after every
 * expansion): params that each double the one before cannot grow without
 * bound ("billion laughs" in the expression language). */
#define NTP_EXPR_MAX_RESULT 65536

typedef struct ntp_expr_var {
    const char *name;
    const char *value; /* text; integer values are decimal */
    int line;          /* line of the declaration; 0: visible everywhere */
} ntp_expr_var;

typedef struct ntp_expr_env {
    const ntp_expr_var *vars;
    int n_vars;
    /* Line of the use. A name declared on a later line is "used before its
     * declaration". 0 disables the check. */
    int line;
} ntp_expr_env;

/* Evaluate the integer expression src[0..len) (the text between "${" and
 * "}"). On failure writes a one-line message (without the expression) into
 * err and returns PARSE_ERROR (syntax, division by zero, a non-integer
 * name), UNKNOWN_NAME or OVERFLOW. */
ntp_status ntp__expr_eval(const char *src, size_t len, const ntp_expr_env *env, int64_t *out,
                          char *err, size_t errlen);

/* Replace every ${expr} in s. *out is a new malloc'd string (a copy when s
 * has no "${"). On failure *out is NULL and err holds a one-line message
 * that quotes the offending ${...}. Allocation failure: OUT_OF_MEMORY; a
 * result longer than NTP_EXPR_MAX_RESULT bytes: PARSE_ERROR, refused
 * before it is built. */
ntp_status ntp__expr_subst(const char *s, const ntp_expr_env *env, char **out, char *err,
                           size_t errlen);

/* Strict decimal integer: optional sign, digits, surrounding blanks
 * allowed, nothing else, no overflow. */
bool ntp__expr_parse_int(const char *s, int64_t *out);

/* [A-Za-z_][A-Za-z0-9_]*: the names an expression can refer to. */
bool ntp__expr_is_ident(const char *s);

#endif
