/* Per-op attributes of the markup: which element accepts which attribute,
 * how each value is parsed, and where it lands in ntp_attrs.
 *
 * Values are parsed strictly: integers must be plain decimal with nothing
 * after them, floats must be finite C literals, booleans are true/false/1/0,
 * enums come from fixed lists (with the nearest name suggested), lists are
 * comma-separated. A typo must never silently become a default. The
 * meaning of each attribute is in docs/ops.md; the markup around it in
 * docs/topology-format.md. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "expr-impl.h"
#include "graph/op-attrs.h"
#include "graph/op-onnx-impl.h"
#include "xml-impl.h"

const char *const ntp__xml_common_attrs[] = {"name", "inputs", "backend", "precision"};
const int ntp__xml_n_common_attrs = 4;

/* The attributes of each op are declared in src/graph/op-attrs.h: name,
 * type, range, default and the field each fills. This file reads them by
 * those declarations. */

/* The declaration of op's attribute `name`, or NULL; *idx gets its index. */
static const ntp_attr_decl *find_decl(ntp_op op, const char *name, int *idx)
{
    int n;
    const ntp_attr_decl *d = ntp__op_attrs(op, &n);
    for (int i = 0; i < n; i++)
        if (strcmp(d[i].name, name) == 0) {
            if (idx)
                *idx = i;
            return &d[i];
        }
    return NULL;
}

bool ntp__xml_op_accepts(ntp_op op, const char *name)
{
    return find_decl(op, name, NULL) != NULL;
}

int ntp__xml_op_attr_names(ntp_op op, const char **names, int max)
{
    int n;
    const ntp_attr_decl *d = ntp__op_attrs(op, &n);
    for (int i = 0; i < n && i < max; i++)
        names[i] = d[i].name;
    return n;
}

/* --- value parsers -------------------------------------------------------- */

static ntp_status errf(char *err, size_t errlen, ntp_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static ntp_status errf(char *err, size_t errlen, ntp_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (errlen > 0)
        vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return st;
}

/* Quote at most 64 bytes of a bad value: values may be up to 64 KiB and
 * the message must stay one readable line. */
#define QFMT "'%.64s%s'"
#define QARG(v) (v), strlen(v) > 64 ? "..." : ""

static const char *int_kind(int64_t min)
{
    return min == 1 ? "a positive integer" : min == 0 ? "a non-negative integer" : "an integer";
}

ntp_status ntp__xml_parse_int(const char *v, int64_t min, int64_t *out, char *err, size_t errlen)
{
    int64_t x;
    if (!ntp__expr_parse_int(v, &x)) {
        /* Digits that do not fit get their own message: "expected an
         * integer" would be puzzling for 99999999999999999999. */
        const char *d = v;
        while (isspace((unsigned char)*d))
            d++;
        if (*d == '-' || *d == '+')
            d++;
        if (isdigit((unsigned char)*d) && strspn(d, "0123456789") == strlen(d))
            return errf(err, errlen, NTP_STATUS_OVERFLOW,
                        "integer " QFMT " does not fit in 64 bits", QARG(v));
        return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "expected %s, got " QFMT, int_kind(min),
                    QARG(v));
    }
    if (x < min)
        return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "expected %s, got " QFMT, int_kind(min),
                    QARG(v));
    *out = x;
    return NTP_STATUS_OK;
}

ntp_status ntp__xml_parse_int_list(const char *v, int64_t min, int max, int64_t *vals, int *n,
                                   char *err, size_t errlen)
{
    int count = 0;
    const char *p = v;
    char item[96];
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (count == max)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "expected at most %d comma-separated values, got " QFMT, max, QARG(v));
        if (len >= sizeof item)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "expected comma-separated integers, got " QFMT, QARG(v));
        memcpy(item, p, len);
        item[len] = '\0';
        if (strspn(item, " \t\r\n") == len)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "expected comma-separated integers, got an empty item in " QFMT, QARG(v));
        char msg[256];
        ntp_status st = ntp__xml_parse_int(item, min, &vals[count], msg, sizeof msg);
        if (st != NTP_STATUS_OK)
            return errf(err, errlen, st, "%s", msg);
        count++;
        if (!comma)
            break;
        p = comma + 1;
    }
    *n = count;
    return NTP_STATUS_OK;
}

/* Copy v without surrounding blanks into buf (false if it does not fit). */
static bool trimmed(const char *v, char *buf, size_t len)
{
    while (isspace((unsigned char)*v))
        v++;
    size_t n = strlen(v);
    while (n > 0 && isspace((unsigned char)v[n - 1]))
        n--;
    if (n >= len)
        return false;
    memcpy(buf, v, n);
    buf[n] = '\0';
    return true;
}

static ntp_status parse_float(const char *v, double *out, char *err, size_t errlen)
{
    char buf[96];
    if (!trimmed(v, buf, sizeof buf) || buf[0] == '\0')
        return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "expected a number, got " QFMT, QARG(v));
    errno = 0;
    char *end;
    double d = strtod(buf, &end);
    if (*end != '\0' || !isfinite(d) || errno == ERANGE)
        return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "expected a finite number, got " QFMT,
                    QARG(v));
    *out = d;
    return NTP_STATUS_OK;
}

static ntp_status parse_bool(const char *v, bool *out, char *err, size_t errlen)
{
    char buf[16];
    if (trimmed(v, buf, sizeof buf)) {
        if (strcmp(buf, "true") == 0 || strcmp(buf, "1") == 0) {
            *out = true;
            return NTP_STATUS_OK;
        }
        if (strcmp(buf, "false") == 0 || strcmp(buf, "0") == 0) {
            *out = false;
            return NTP_STATUS_OK;
        }
    }
    return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "expected true or false, got " QFMT, QARG(v));
}

/* Comma-separated finite numbers, 1..max of them. */
static ntp_status parse_float_list(const char *v, int max, double *vals, int *n, char *err,
                                   size_t errlen)
{
    int count = 0;
    const char *p = v;
    char item[96];
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (count == max)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "expected at most %d comma-separated values, got " QFMT, max, QARG(v));
        if (len >= sizeof item)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "expected comma-separated numbers, got " QFMT, QARG(v));
        memcpy(item, p, len);
        item[len] = '\0';
        ntp_status st = parse_float(item, &vals[count], err, errlen);
        if (st != NTP_STATUS_OK)
            return st;
        count++;
        if (!comma)
            break;
        p = comma + 1;
    }
    *n = count;
    return NTP_STATUS_OK;
}

/* "a, b or c" */
static void list_names(const char *const *names, int n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s",
                                 i == 0       ? ""
                                 : i == n - 1 ? " or "
                                              : ", ",
                                 names[i]);
}

ntp_status ntp__xml_parse_enum(const char *v, const char *const *names, int n, int *idx, char *err,
                               size_t errlen)
{
    char buf[96];
    if (trimmed(v, buf, sizeof buf))
        for (int i = 0; i < n; i++)
            if (strcmp(buf, names[i]) == 0) {
                *idx = i;
                return NTP_STATUS_OK;
            }
    char all[256];
    list_names(names, n, all, sizeof all);
    const char *near = ntp__nearest(trimmed(v, buf, sizeof buf) ? buf : v, names, n);
    if (near)
        return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                    "expected %s, got " QFMT "; did you mean '%s'?", all, QARG(v), near);
    return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "expected %s, got " QFMT, all, QARG(v));
}

static const char *const dtype_names[] = {"f32", "bf16", "f16", "i8", "u8", "i32", "i64"};

ntp_status ntp__xml_parse_dtype(const char *v, ntp_dtype *out, char *err, size_t errlen)
{
    char buf[32];
    if (trimmed(v, buf, sizeof buf) && ntp_dtype_parse(buf, out) == NTP_STATUS_OK)
        return NTP_STATUS_OK;
    int idx;
    return ntp__xml_parse_enum(v, dtype_names, 7, &idx, err, errlen);
}

static const char *const precision_names[] = {"f32", "bf16", "f16", "i8"};

ntp_status ntp__xml_parse_precision(const char *v, ntp_dtype *out, char *err, size_t errlen)
{
    char buf[32] = "";
    ntp_dtype t;
    if (trimmed(v, buf, sizeof buf) && ntp_dtype_parse(buf, &t) == NTP_STATUS_OK &&
        ntp_dtype_is_precision(t)) {
        *out = t;
        return NTP_STATUS_OK;
    }
    int idx;
    ntp_status st = ntp__xml_parse_enum(v, precision_names, 4, &idx, err, errlen);
    /* A valid dtype that is not a compute precision (i32) gets a clearer
     * message than "did you mean". */
    if (ntp_dtype_parse(buf, &t) == NTP_STATUS_OK)
        return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                    "'%s' is not a compute precision: expected f32, bf16, f16 or i8", buf);
    return st;
}

static const char *const layout_names[] = {"nchw", "nhwc"};

ntp_status ntp__xml_parse_layout(const char *v, ntp_layout *out, char *err, size_t errlen)
{
    int idx;
    ntp_status st = ntp__xml_parse_enum(v, layout_names, 2, &idx, err, errlen);
    if (st == NTP_STATUS_OK)
        *out = idx == 0 ? NTP_LAYOUT_NCHW : NTP_LAYOUT_NHWC;
    return st;
}

/* --- per-op attributes ---------------------------------------------------- */

#define NAMES(a) (a), (int)(sizeof(a) / sizeof((a)[0]))
/* More than any op declares; a _Static_assert-like check is in finish(). */
#define MAX_OP_ATTRS 16

/* What the parsing of one layer's attributes has seen so far. */
typedef struct seen {
    bool given[MAX_OP_ATTRS]; /* by declaration index */
    bool depthwise;
    int64_t parts;
} seen;

static bool given(const seen *s, ntp_op op, const char *name)
{
    int i;
    return find_decl(op, name, &i) && s->given[i];
}

/* The conv/pool `pad`: a keyword or an explicit list. */
static ntp_status parse_pad(ntp_op op, const char *v, ntp_attrs *a, char *err, size_t errlen)
{
    char buf[32];
    if (trimmed(v, buf, sizeof buf) && buf[0] != '\0' && !isdigit((unsigned char)buf[0]) &&
        buf[0] != '-' && buf[0] != '+') {
        int k = 0; /* set by the parse; 0 keeps gcc -O3 quiet */
        if (ntp__xml_parse_enum(buf, NAMES(ntp__pad_kind_names), &k, err, errlen) !=
            NTP_STATUS_OK) {
            const char *near = ntp__nearest(buf, NAMES(ntp__pad_kind_names));
            return errf(
                err, errlen, NTP_STATUS_PARSE_ERROR,
                "expected same, same_lower, valid or a list of integers, got " QFMT "%s%s%s",
                QARG(v), near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
        }
        if (op == NTP_OP_DECONV && k != 2)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "'%s' is not accepted on <deconv>: give explicit pads", buf);
        a->pad_kind = k == 0 ? NTP_PAD_SAME_UPPER : k == 1 ? NTP_PAD_SAME_LOWER : NTP_PAD_VALID;
        a->n_pad = 0;
        return NTP_STATUS_OK;
    }
    ntp_status st = ntp__xml_parse_int_list(v, 0, 6, a->pad, &a->n_pad, err, errlen);
    if (st != NTP_STATUS_OK)
        return st;
    /* nk values (symmetric) or 2*nk (begins, then ends), nk in 1..3. */
    if (a->n_pad == 5)
        return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                    "expected 1 to 3 values (symmetric) or 2, 4 or 6 (begins, then ends), got 5");
    a->pad_kind = NTP_PAD_EXPLICIT;
    return NTP_STATUS_OK;
}

/* The attributes whose text is not one plain type (ntp_attr_parse). */
static ntp_status parse_special(ntp_op op, const ntp_attr_decl *d, const char *v, ntp_attrs *a,
                                seen *s, char *err, size_t errlen)
{
    ntp_status st;
    switch (d->parse) {
    case NTP_PARSE_SPATIAL_PAD: return parse_pad(op, v, a, err, errlen);
    case NTP_PARSE_DEPTHWISE: return parse_bool(v, &s->depthwise, err, errlen);
    case NTP_PARSE_PARTS:
        if ((st = ntp__xml_parse_int(v, 1, &s->parts, err, errlen)) != NTP_STATUS_OK)
            return st;
        if (s->parts > NTP_MAX_OUTPUTS)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "a split has at most %d outputs, got " QFMT, NTP_MAX_OUTPUTS, QARG(v));
        return NTP_STATUS_OK;
    case NTP_PARSE_SHARED: {
        bool shared;
        if ((st = parse_bool(v, &shared, err, errlen)) != NTP_STATUS_OK)
            return st;
        a->n_shape = shared ? 1 : 0;
        a->shape[0] = 1;
        return NTP_STATUS_OK;
    }
    case NTP_PARSE_STARTS:
    case NTP_PARSE_ENDS: {
        bool starts = d->parse == NTP_PARSE_STARTS;
        int64_t vals[NTP_MAX_DIMS];
        int n = 0;
        if ((st = ntp__xml_parse_int_list(v, INT64_MIN, NTP_MAX_DIMS, vals, &n, err, errlen)) !=
            NTP_STATUS_OK)
            return st;
        if (given(s, op, starts ? "ends" : "starts") && n != a->slice.n)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "'starts' and 'ends' must have as many values (got %d and %d)",
                        starts ? n : a->slice.n, starts ? a->slice.n : n);
        for (int i = 0; i < n; i++)
            (starts ? a->slice.starts : a->slice.ends)[i] = vals[i];
        a->slice.n = n;
        return NTP_STATUS_OK;
    }
    case NTP_PARSE_SCALES: {
        double sc[NTP_MAX_DIMS];
        int n = 0;
        if ((st = parse_float_list(v, NTP_MAX_DIMS, sc, &n, err, errlen)) != NTP_STATUS_OK)
            return st;
        for (int i = 0; i < n; i++)
            if (!ntp__resize_scale_rational(sc[i], &a->resize.scale_num[i],
                                            &a->resize.scale_den[i]))
                return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                            "expected positive scales, got " QFMT, QARG(v));
        a->resize.n_scales = n;
        return NTP_STATUS_OK;
    }
    case NTP_PARSE_NONE: break;
    }
    return errf(err, errlen, NTP_STATUS_INTERNAL, "attribute '%s' has no parser", d->name);
}

/* The declared check of a parsed INT or INTS value. */
static ntp_status check_value(const ntp_attr_decl *d, const int64_t *x, int n, const char *v,
                              char *err, size_t errlen)
{
    switch (d->check) {
    case NTP_CHECK_NONE: return NTP_STATUS_OK;
    case NTP_CHECK_PERMUTATION: {
        bool used[NTP_MAX_DIMS] = {false};
        for (int i = 0; i < n; i++) {
            if (x[i] >= n || used[x[i]])
                return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                            "expected a permutation of 0..%d, got " QFMT, n - 1, QARG(v));
            used[x[i]] = true;
        }
        return NTP_STATUS_OK;
    }
    case NTP_CHECK_ONE_INFERRED: {
        int inferred = 0;
        for (int i = 0; i < n; i++)
            inferred += x[i] == -1;
        if (inferred > 1)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "at most one dimension may be -1, got " QFMT, QARG(v));
        return NTP_STATUS_OK;
    }
    case NTP_CHECK_PAIRS:
        if (n % 2 != 0)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "expected 2 values per dimension (all begins, then all ends), got %d", n);
        return NTP_STATUS_OK;
    case NTP_CHECK_POW2:
        if ((x[0] & (x[0] - 1)) != 0)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "expected a power of two, got " QFMT,
                        QARG(v));
        return NTP_STATUS_OK;
    case NTP_CHECK_DISTINCT:
        for (int i = 0; i < n; i++)
            for (int j = 0; j < i; j++)
                if (x[i] == x[j])
                    return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                                "axis %lld is given twice in " QFMT, (long long)x[i], QARG(v));
        return NTP_STATUS_OK;
    case NTP_CHECK_NONZERO:
        for (int i = 0; i < n; i++)
            if (x[i] == 0)
                return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "a step of 0 in " QFMT, QARG(v));
        return NTP_STATUS_OK;
    }
    return NTP_STATUS_OK;
}

static ntp_status check_range(ntp_attr_range r, double x, const char *v, char *err, size_t errlen)
{
    switch (r) {
    case NTP_RANGE_ANY: return NTP_STATUS_OK;
    case NTP_RANGE_POSITIVE:
        return x > 0 ? NTP_STATUS_OK
                     : errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                            "expected a positive number, got " QFMT, QARG(v));
    case NTP_RANGE_NONNEG:
        return x >= 0 ? NTP_STATUS_OK
                      : errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                             "expected a non-negative number, got " QFMT, QARG(v));
    case NTP_RANGE_UNIT:
        return x >= 0 && x < 1 ? NTP_STATUS_OK
                               : errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                                      "expected a number in [0, 1), got " QFMT, QARG(v));
    }
    return NTP_STATUS_OK;
}

/* Parse value v of attribute d into the field it declares. */
static ntp_status set_attr(ntp_op op, const ntp_attr_decl *d, const char *v, ntp_attrs *a, seen *s,
                           char *err, size_t errlen)
{
    void *p = d->field >= 0 ? ntp__attr_ptr(a, d->field) : NULL;
    ntp_status st = NTP_STATUS_OK;
    switch (d->type) {
    case NTP_ATTR_INT:
        if ((st = ntp__xml_parse_int(v, d->min, (int64_t *)p, err, errlen)) == NTP_STATUS_OK)
            st = check_value(d, (int64_t *)p, 1, v, err, errlen);
        break;
    case NTP_ATTR_INTS: {
        int *n = ntp__attr_ptr(a, d->count);
        if ((st = ntp__xml_parse_int_list(v, d->min, d->max, (int64_t *)p, n, err, errlen)) ==
            NTP_STATUS_OK)
            st = check_value(d, (int64_t *)p, *n, v, err, errlen);
        break;
    }
    case NTP_ATTR_FLOAT: {
        double x;
        if ((st = parse_float(v, &x, err, errlen)) != NTP_STATUS_OK)
            return st;
        if (p)
            *(double *)p = x;
        st = check_range(d->range, x, v, err, errlen);
        break;
    }
    case NTP_ATTR_BOOL: st = parse_bool(v, (bool *)p, err, errlen); break;
    case NTP_ATTR_ENUM:
        st = ntp__xml_parse_enum(v, d->names, d->n_names, (int *)p, err, errlen);
        break;
    case NTP_ATTR_CHOICE: {
        int k;
        if ((st = ntp__xml_parse_enum(v, d->names, d->n_names, &k, err, errlen)) == NTP_STATUS_OK)
            *(bool *)p = k == 1;
        break;
    }
    case NTP_ATTR_STRING: {
        /* Taken verbatim: blanks may be meant (a space is a CTC label). */
        char **sp = p;
        if (v[0] == '\0')
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "expected at least one character");
        free(*sp);
        *sp = ntp__strdup(v);
        if (!*sp)
            return errf(err, errlen, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        break;
    }
    case NTP_ATTR_DTYPE: st = ntp__xml_parse_dtype(v, (ntp_dtype *)p, err, errlen); break;
    case NTP_ATTR_LAYOUT: st = ntp__xml_parse_layout(v, (ntp_layout *)p, err, errlen); break;
    case NTP_ATTR_SPECIAL: st = parse_special(op, d, v, a, s, err, errlen); break;
    }
    if (st == NTP_STATUS_OK && d->has)
        *(bool *)ntp__attr_ptr(a, d->has) = true;
    return st;
}

static ntp_status missing(char *err, size_t errlen, const char *name)
{
    return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "missing required attribute '%s'", name);
}

/* Attributes that fill the same field are aliases (units, dim, hidden). */
static bool same_field(const ntp_attr_decl *x, const ntp_attr_decl *y)
{
    return x->field >= 0 && x->field == y->field && x->type != NTP_ATTR_SPECIAL &&
           y->type != NTP_ATTR_SPECIAL;
}

/* Aliases given twice, required attributes, string defaults (the numeric
 * ones are the node's from ntp__graph_add_node), then what no single
 * declaration can say: combinations. */
static ntp_status finish(ntp_op op, const seen *s, ntp_attrs *a, int *n_out, char *err,
                         size_t errlen)
{
    int n;
    const ntp_attr_decl *d = ntp__op_attrs(op, &n);
    *n_out = 1;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (s->given[i] && s->given[j] && same_field(&d[i], &d[j]))
                return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                            "attributes '%s' and '%s' are the same: give one", d[j].name,
                            d[i].name);
    for (int i = 0; i < n; i++) {
        if (!(d[i].flags & NTP_ATTR_REQUIRED))
            continue;
        bool ok = s->given[i];
        for (int j = 0; j < n && !ok; j++)
            ok = s->given[j] && same_field(&d[i], &d[j]);
        if (!ok)
            return missing(err, errlen, d[i].name);
    }
    /* The node has its defaults already (ntp__graph_add_node); set them
     * again for what was not given, so that a caller who started from
     * ntp__attrs_default alone gets the same attributes. */
    for (int i = 0; i < n; i++) {
        bool alias = false;
        for (int j = 0; j < n && !alias; j++)
            alias = s->given[j] && same_field(&d[i], &d[j]);
        if (!s->given[i] && !alias)
            ntp__attr_set_default(&d[i], a);
    }
    for (int i = 0; i < n; i++)
        if (d[i].type == NTP_ATTR_STRING && d[i].dflt_s && !s->given[i]) {
            char **sp = ntp__attr_ptr(a, d[i].field);
            if (!*sp && !(*sp = ntp__strdup(d[i].dflt_s)))
                return errf(err, errlen, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        }

    if (op == NTP_OP_CONV || op == NTP_OP_DECONV) {
        if (s->depthwise) {
            if (given(s, op, "groups"))
                return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                            "attributes 'groups' and 'depthwise' conflict: give one");
            /* groups = -1 is the IR's "as many groups as input channels":
             * the channel count is known only at shape inference, which
             * resolves it (and checks that filters is a multiple of it). */
            a->groups = -1;
        }
    } else if (op == NTP_OP_CLIP) {
        if (!given(s, op, "min") && !given(s, op, "max"))
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "missing attribute 'min' or 'max' (at least one is required)");
        if (a->min > a->max)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "'min' (%g) is greater than 'max' (%g)", a->min, a->max);
    } else if (op == NTP_OP_SPLIT) {
        bool sizes = given(s, op, "sizes"), parts = given(s, op, "parts");
        if (sizes && parts)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "attributes 'sizes' and 'parts' conflict: give one");
        if (sizes) {
            *n_out = a->n_sizes;
        } else if (parts) {
            /* A negative count means "this many equal parts": the sizes
             * are known once shape inference sees the input. */
            a->n_sizes = -(int)s->parts;
            *n_out = (int)s->parts;
        } else {
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "missing attribute 'sizes' or 'parts' (one is required)");
        }
    } else if (op == NTP_OP_MFCC) {
        if (a->n_fft < a->window)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "'fft' (%lld) must be at least 'window' (%lld)", (long long)a->n_fft,
                        (long long)a->window);
        if (a->coefficients > a->mel_bands)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "'coefficients' (%lld) must not exceed 'mel_bands' (%lld)",
                        (long long)a->coefficients, (long long)a->mel_bands);
    } else if (op == NTP_OP_CONVERT) {
        if (!given(s, op, "to") && !given(s, op, "layout"))
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "missing attribute 'to' or 'layout' (at least one is required)");
    } else if (op == NTP_OP_SLICE) {
        if (given(s, op, "axes") && a->slice.n_axes != a->slice.n)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "'axes' has %d values, 'starts' %d",
                        a->slice.n_axes, a->slice.n);
        if (given(s, op, "steps") && a->slice.n_steps != a->slice.n)
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR, "'steps' has %d values, 'starts' %d",
                        a->slice.n_steps, a->slice.n);
    } else if (op == NTP_OP_RESIZE) {
        if (given(s, op, "sizes") == given(s, op, "scales"))
            return errf(err, errlen, NTP_STATUS_PARSE_ERROR,
                        "give exactly one of 'sizes' and 'scales'");
    }
    return NTP_STATUS_OK;
}

ntp_status ntp__xml_parse_op_attrs(ntp_op op, const ntp_xml_attr *attrs, int n_attrs, ntp_attrs *a,
                                   int *n_out, char *err, size_t errlen)
{
    seen s;
    memset(&s, 0, sizeof s);
    int n_decl;
    ntp__op_attrs(op, &n_decl);
    if (n_decl > MAX_OP_ATTRS)
        return errf(err, errlen, NTP_STATUS_INTERNAL, "<%s> declares more than %d attributes",
                    ntp__op_name(op), MAX_OP_ATTRS);
    for (int i = 0; i < n_attrs; i++) {
        int idx;
        const ntp_attr_decl *d = find_decl(op, attrs[i].name, &idx);
        if (!d)
            return errf(err, errlen, NTP_STATUS_UNKNOWN_NAME, "unknown attribute '%s' on <%s>",
                        attrs[i].name, ntp__op_name(op));
        char msg[512];
        ntp_status st = set_attr(op, d, attrs[i].value, a, &s, msg, sizeof msg);
        if (st != NTP_STATUS_OK)
            return errf(err, errlen, st, "attribute '%s': %s", attrs[i].name, msg);
        s.given[idx] = true;
    }
    return finish(op, &s, a, n_out, err, errlen);
}
