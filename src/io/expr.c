/* ${...} expressions: a small recursive-descent evaluator over int64.
 *
 *   expr    := term (('+' | '-') term)*
 *   term    := unary (('*' | '/' | '%') unary)*
 *   unary   := ('-' | '+') unary | primary
 *   primary := integer | name | '(' expr ')'
 *
 * Every operation is checked: overflow and division by zero are errors,
 * because a silently wrapped shape would profile a different network. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "expr-impl.h"

typedef struct parser {
    const char *s;
    size_t len, pos;
    const ntp_expr_env *env;
    int depth;
    ntp_status st;
    char *err;
    size_t errlen;
} parser;

static ntp_status fail(parser *p, ntp_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static ntp_status fail(parser *p, ntp_status st, const char *fmt, ...)
{
    /* Keep the first failure: later ones are consequences of it. */
    if (p->st != NTP_STATUS_OK)
        return p->st;
    va_list ap;
    va_start(ap, fmt);
    if (p->errlen > 0)
        vsnprintf(p->err, p->errlen, fmt, ap);
    va_end(ap);
    p->st = st;
    return st;
}

static void skip_blanks(parser *p)
{
    while (p->pos < p->len && isspace((unsigned char)p->s[p->pos]))
        p->pos++;
}

static int peek(parser *p)
{
    skip_blanks(p);
    return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

/* Describe where the parser stands, for "expected X" messages. */
static void where(parser *p, char *buf, size_t len)
{
    if (p->pos >= p->len)
        snprintf(buf, len, "at the end");
    else
        snprintf(buf, len, "at '%c' (column %zu)", p->s[p->pos], p->pos + 1);
}

bool ntp__expr_parse_int(const char *s, int64_t *out)
{
    if (!s)
        return false;
    while (isspace((unsigned char)*s))
        s++;
    /* strtoll would accept "0x10" and " 12" inside; demand plain decimal. */
    const char *d = s;
    if (*d == '+' || *d == '-')
        d++;
    if (!isdigit((unsigned char)*d))
        return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE)
        return false;
    while (isspace((unsigned char)*end))
        end++;
    if (*end != '\0')
        return false;
    *out = (int64_t)v;
    return true;
}

bool ntp__expr_is_ident(const char *s)
{
    if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (s++; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return false;
    return true;
}

/* The variable named s[0..n), or NULL. The last declaration wins, so a
 * repeat index pushed after the params is found first. */
static const ntp_expr_var *find_var(const ntp_expr_env *env, const char *s, size_t n)
{
    if (!env)
        return NULL;
    for (int i = env->n_vars - 1; i >= 0; i--) {
        const char *name = env->vars[i].name;
        if (strlen(name) == n && memcmp(name, s, n) == 0)
            return &env->vars[i];
    }
    return NULL;
}

static bool visible(const ntp_expr_env *env, const ntp_expr_var *v)
{
    return env->line <= 0 || v->line <= 0 || v->line <= env->line;
}

/* "unknown name 'x'" with the nearest visible name, if one is close. */
static ntp_status unknown_name(parser *p, const char *name)
{
    const ntp_expr_env *env = p->env;
    const char *best = NULL;
    int n = env ? env->n_vars : 0;
    const char **cand = malloc(((size_t)n + 1) * sizeof *cand);
    if (cand) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (visible(env, &env->vars[i]))
                cand[k++] = env->vars[i].name;
        best = ntp__nearest(name, cand, k);
    }
    ntp_status st;
    if (best)
        st = fail(p, NTP_STATUS_UNKNOWN_NAME, "unknown name '%s'; did you mean '%s'?", name, best);
    else
        st = fail(p, NTP_STATUS_UNKNOWN_NAME, "unknown name '%s'", name);
    free(cand);
    return st;
}

static ntp_status parse_expr(parser *p, int64_t *v);

static ntp_status parse_primary(parser *p, int64_t *v)
{
    char at[64];
    int c = peek(p);
    if (c == '(') {
        p->pos++;
        if (++p->depth > NTP_EXPR_MAX_DEPTH)
            return fail(p, NTP_STATUS_PARSE_ERROR, "expression nests deeper than %d levels",
                        NTP_EXPR_MAX_DEPTH);
        if (parse_expr(p, v) != NTP_STATUS_OK)
            return p->st;
        p->depth--;
        if (peek(p) != ')') {
            where(p, at, sizeof at);
            return fail(p, NTP_STATUS_PARSE_ERROR, "expected ')' %s", at);
        }
        p->pos++;
        return NTP_STATUS_OK;
    }
    if (c >= 0 && isdigit(c)) {
        size_t start = p->pos;
        int64_t acc = 0;
        while (p->pos < p->len && isdigit((unsigned char)p->s[p->pos])) {
            int digit = p->s[p->pos] - '0';
            if (__builtin_mul_overflow(acc, 10, &acc) || __builtin_add_overflow(acc, digit, &acc))
                return fail(p, NTP_STATUS_OVERFLOW, "integer %.*s does not fit in 64 bits",
                            (int)(p->pos - start + 1), p->s + start);
            p->pos++;
        }
        if (p->pos < p->len &&
            (isalpha((unsigned char)p->s[p->pos]) || p->s[p->pos] == '_' || p->s[p->pos] == '.')) {
            where(p, at, sizeof at);
            return fail(p, NTP_STATUS_PARSE_ERROR, "expected an integer %s", at);
        }
        *v = acc;
        return NTP_STATUS_OK;
    }
    if (c >= 0 && (isalpha(c) || c == '_')) {
        size_t start = p->pos;
        while (p->pos < p->len && (isalnum((unsigned char)p->s[p->pos]) || p->s[p->pos] == '_'))
            p->pos++;
        size_t n = p->pos - start;
        char name[80];
        snprintf(name, sizeof name, "%.*s", n < 64 ? (int)n : 64, p->s + start);
        const ntp_expr_var *var = find_var(p->env, p->s + start, n);
        if (!var)
            return unknown_name(p, name);
        if (!visible(p->env, var))
            return fail(p, NTP_STATUS_UNKNOWN_NAME,
                        "param '%s' is used before its declaration on line %d", name, var->line);
        if (!ntp__expr_parse_int(var->value, v))
            return fail(p, NTP_STATUS_PARSE_ERROR, "'%s' is '%.64s', not an integer", name,
                        var->value);
        return NTP_STATUS_OK;
    }
    if (c == '$' || c == '{')
        return fail(p, NTP_STATUS_PARSE_ERROR, "nested ${...} is not allowed");
    where(p, at, sizeof at);
    return fail(p, NTP_STATUS_PARSE_ERROR, "expected a number, a name or '(' %s", at);
}

static ntp_status parse_unary(parser *p, int64_t *v)
{
    int c = peek(p);
    if (c == '-' || c == '+') {
        p->pos++;
        if (++p->depth > NTP_EXPR_MAX_DEPTH)
            return fail(p, NTP_STATUS_PARSE_ERROR, "expression nests deeper than %d levels",
                        NTP_EXPR_MAX_DEPTH);
        if (parse_unary(p, v) != NTP_STATUS_OK)
            return p->st;
        p->depth--;
        if (c == '-') {
            if (*v == INT64_MIN)
                return fail(p, NTP_STATUS_OVERFLOW, "integer overflow in unary minus");
            *v = -*v;
        }
        return NTP_STATUS_OK;
    }
    return parse_primary(p, v);
}

static ntp_status parse_term(parser *p, int64_t *v)
{
    if (parse_unary(p, v) != NTP_STATUS_OK)
        return p->st;
    for (;;) {
        int c = peek(p);
        if (c != '*' && c != '/' && c != '%')
            return NTP_STATUS_OK;
        p->pos++;
        int64_t r;
        if (parse_unary(p, &r) != NTP_STATUS_OK)
            return p->st;
        if (c == '*') {
            if (__builtin_mul_overflow(*v, r, v))
                return fail(p, NTP_STATUS_OVERFLOW, "integer overflow in '*'");
        } else {
            if (r == 0)
                return fail(p, NTP_STATUS_PARSE_ERROR, "division by zero");
            if (*v == INT64_MIN && r == -1) {
                if (c == '/')
                    return fail(p, NTP_STATUS_OVERFLOW, "integer overflow in '/'");
                *v = 0; /* INT64_MIN % -1 is 0 mathematically, UB in C */
            } else {
                *v = c == '/' ? *v / r : *v % r;
            }
        }
    }
}

static ntp_status parse_expr(parser *p, int64_t *v)
{
    if (parse_term(p, v) != NTP_STATUS_OK)
        return p->st;
    for (;;) {
        int c = peek(p);
        if (c != '+' && c != '-')
            return NTP_STATUS_OK;
        p->pos++;
        int64_t r;
        if (parse_term(p, &r) != NTP_STATUS_OK)
            return p->st;
        bool over = c == '+' ? __builtin_add_overflow(*v, r, v) : __builtin_sub_overflow(*v, r, v);
        if (over)
            return fail(p, NTP_STATUS_OVERFLOW, "integer overflow in '%c'", c);
    }
}

ntp_status ntp__expr_eval(const char *src, size_t len, const ntp_expr_env *env, int64_t *out,
                          char *err, size_t errlen)
{
    parser p = {.s = src, .len = len, .env = env, .err = err, .errlen = errlen};
    if (errlen > 0)
        err[0] = '\0';
    for (size_t i = 0; i < len; i++)
        if (src[i] == '$' || src[i] == '{' || src[i] == '}')
            return fail(&p, NTP_STATUS_PARSE_ERROR, "nested ${...} is not allowed");
    if (peek(&p) < 0)
        return fail(&p, NTP_STATUS_PARSE_ERROR, "empty expression");
    int64_t v;
    if (parse_expr(&p, &v) != NTP_STATUS_OK)
        return p.st;
    if (peek(&p) >= 0) {
        char at[64];
        where(&p, at, sizeof at);
        return fail(&p, NTP_STATUS_PARSE_ERROR, "unexpected text %s", at);
    }
    *out = v;
    return NTP_STATUS_OK;
}

/* A growable string for the substitution result. */
typedef struct sbuf {
    char *s;
    size_t n, cap;
    bool over; /* the result passed NTP_EXPR_MAX_RESULT */
} sbuf;

/* False when memory runs out or the string would pass the limit
 * (b->over then says which). */
static bool sbuf_add(sbuf *b, const char *s, size_t n)
{
    if (n > NTP_EXPR_MAX_RESULT || b->n + n > NTP_EXPR_MAX_RESULT) {
        b->over = true;
        return false;
    }
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *t = realloc(b->s, cap);
        if (!t)
            return false;
        b->s = t;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
    return true;
}

/* If s[0..n) is one bare name (blanks around allowed), return its var. */
static const ntp_expr_var *bare_name(const char *s, size_t n, const ntp_expr_env *env)
{
    while (n > 0 && isspace((unsigned char)*s))
        s++, n--;
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return NULL;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
            return NULL;
    return find_var(env, s, n);
}

ntp_status ntp__expr_subst(const char *s, const ntp_expr_env *env, char **out, char *err,
                           size_t errlen)
{
    sbuf b = {0};
    ntp_status st = NTP_STATUS_OK;
    *out = NULL;
    if (errlen > 0)
        err[0] = '\0';
    if (!sbuf_add(&b, "", 0))
        return NTP_STATUS_OUT_OF_MEMORY;
    const char *p = s;
    for (;;) {
        const char *open = strstr(p, "${");
        if (!open) {
            if (!sbuf_add(&b, p, strlen(p)))
                goto oom;
            break;
        }
        if (!sbuf_add(&b, p, (size_t)(open - p)))
            goto oom;
        const char *body = open + 2;
        const char *close = strchr(body, '}');
        if (!close) {
            snprintf(err, errlen, "unterminated '${' in '%.64s%s'", open,
                     strlen(open) > 64 ? "..." : "");
            st = NTP_STATUS_PARSE_ERROR;
            goto fail;
        }
        size_t n = (size_t)(close - body);
        char msg[512];
        const ntp_expr_var *var = bare_name(body, n, env);
        int64_t v;
        if (var && visible(env, var) && !ntp__expr_parse_int(var->value, &v)) {
            /* A bare name holding text substitutes the text. */
            if (!sbuf_add(&b, var->value, strlen(var->value)))
                goto oom;
        } else {
            st = ntp__expr_eval(body, n, env, &v, msg, sizeof msg);
            if (st != NTP_STATUS_OK) {
                snprintf(err, errlen, "${%.*s%s}: %s", n > 64 ? 64 : (int)n, body,
                         n > 64 ? "..." : "", msg);
                goto fail;
            }
            char num[32];
            int k = snprintf(num, sizeof num, "%lld", (long long)v);
            if (!sbuf_add(&b, num, (size_t)k))
                goto oom;
        }
        p = close + 1;
    }
    *out = b.s;
    return NTP_STATUS_OK;
oom:
    if (b.over) {
        snprintf(err, errlen, "the value after substitution is more than %d bytes long",
                 NTP_EXPR_MAX_RESULT);
        st = NTP_STATUS_PARSE_ERROR;
        goto fail;
    }
    snprintf(err, errlen, "out of memory");
    st = NTP_STATUS_OUT_OF_MEMORY;
fail:
    free(b.s);
    return st;
}
