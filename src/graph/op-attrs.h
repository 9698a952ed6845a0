/* The attribute declarations of every op: the one place that says which
 * attributes an op's markup element has, of what type, in what range, with
 * what default, and which field of ntp_attrs each fills.
 *
 * The markup reader (src/io/xml-attrs.c) parses and validates by these
 * declarations, the markup writer (src/io/convert-markup.c) writes by them,
 * and ntp__graph_add_node() gives a new node their defaults, so the three
 * cannot drift apart. What no single declaration can say (two attributes
 * that must agree, one of two that is required) is checked after all of a
 * layer's attributes are read, in xml-attrs.c's finish().
 *
 * The declarations themselves are in op-attrs.c, one array per attribute
 * set (ops with the same attributes share a set); docs/topology-format.md
 * says how to declare one. */
#ifndef NTPROF_OP_ATTRS_H
#define NTPROF_OP_ATTRS_H

#include <stddef.h>
#include <stdint.h>
#include "graph-impl.h"

typedef enum ntp_attr_type {
    NTP_ATTR_INT,    /* int64_t, at least min */
    NTP_ATTR_INTS,   /* int64_t list of 1..max values, each at least min; its
                      * count in the int at `count` */
    NTP_ATTR_FLOAT,  /* double, finite, within `range` */
    NTP_ATTR_BOOL,   /* true, false, 1 or 0 */
    NTP_ATTR_ENUM,   /* int: the index of the value in names[] */
    NTP_ATTR_CHOICE, /* bool: names[0] is false, names[1] true */
    NTP_ATTR_STRING, /* owned char *, at least one character, kept verbatim */
    NTP_ATTR_DTYPE,  /* ntp_dtype */
    NTP_ATTR_LAYOUT, /* ntp_layout: nchw or nhwc */
    NTP_ATTR_SPECIAL /* read by a parser of its own (`parse`) */
} ntp_attr_type;

/* The range a FLOAT must lie in. */
typedef enum ntp_attr_range {
    NTP_RANGE_ANY,
    NTP_RANGE_POSITIVE, /* > 0 */
    NTP_RANGE_NONNEG,   /* >= 0 */
    NTP_RANGE_UNIT      /* [0, 1) */
} ntp_attr_range;

/* A check of a parsed value beyond its type and range. */
typedef enum ntp_attr_check {
    NTP_CHECK_NONE,
    NTP_CHECK_PERMUTATION,  /* a permutation of 0..n-1 */
    NTP_CHECK_ONE_INFERRED, /* at most one -1 */
    NTP_CHECK_PAIRS,        /* an even count: begins, then ends */
    NTP_CHECK_POW2,         /* a power of two */
    NTP_CHECK_DISTINCT,     /* no value twice */
    NTP_CHECK_NONZERO       /* no 0 */
} ntp_attr_check;

/* Parsers of the attributes whose text is not one plain type. */
typedef enum ntp_attr_parse {
    NTP_PARSE_NONE,
    NTP_PARSE_SPATIAL_PAD, /* same, same_lower, valid or 1-3 / 2, 4, 6 integers */
    NTP_PARSE_DEPTHWISE,   /* a bool that makes groups follow the input channels */
    NTP_PARSE_PARTS,       /* a split into this many equal parts */
    NTP_PARSE_SHARED,      /* prelu: one slope (true) or one per channel */
    NTP_PARSE_STARTS,      /* slice starts, as many as ends */
    NTP_PARSE_ENDS,        /* slice ends, as many as starts */
    NTP_PARSE_SCALES       /* resize scales, kept as exact rationals */
} ntp_attr_parse;

/* When the markup writer writes an attribute. */
typedef enum ntp_attr_write {
    NTP_WRITE_ALWAYS,
    NTP_WRITE_NEVER,     /* an alias or a spelling the writer does not use */
    NTP_WRITE_IF_HAS,    /* when the bool at `has` is set */
    NTP_WRITE_IF_FINITE, /* a FLOAT that is not infinite */
    NTP_WRITE_IF_ANY,    /* a list with values, a string that is set */
    NTP_WRITE_SPATIAL,   /* a list of nk values (2 * nk for pad), as expanded by shape inference */
    NTP_WRITE_SPECIAL    /* the writer's own rule (convert-markup.c) */
} ntp_attr_write;

enum {
    NTP_ATTR_REQUIRED = 1u << 0, /* "missing required attribute" when absent */
    NTP_ATTR_BATCH = 1u << 1     /* a list whose values may scale with the batch */
};

typedef struct ntp_attr_decl {
    const char *name; /* as the markup spells it */
    ntp_attr_type type;
    ptrdiff_t field;          /* offset in ntp_attrs; -1: validated, not stored */
    ptrdiff_t count;          /* INTS: offset of its int count */
    ptrdiff_t has;            /* offset of a bool set when given; -1 if none */
    int64_t min;              /* INT, INTS: the smallest value */
    int max;                  /* INTS: the most values */
    ntp_attr_range range;     /* FLOAT */
    const char *const *names; /* ENUM, CHOICE */
    int n_names;
    ntp_attr_check check;
    ntp_attr_parse parse; /* SPECIAL */
    ntp_attr_write write;
    unsigned flags;     /* NTP_ATTR_* */
    bool has_default;   /* a default other than ntp__attrs_default's */
    double dflt;        /* INT, FLOAT, BOOL, ENUM: the default */
    const char *dflt_s; /* STRING: the default */
} ntp_attr_decl;

/* The declarations of op's attributes, in the order the writer writes
 * them; *n gets their count (0 for an op with none). */
const ntp_attr_decl *ntp__op_attrs(ntp_op op, int *n);

/* Set the field d fills to d's default, if it declares one (INT, FLOAT,
 * BOOL, CHOICE, ENUM; strings are the reader's to copy). */
void ntp__attr_set_default(const ntp_attr_decl *d, ntp_attrs *a);

/* Typed access to the field a declaration fills. */
static inline void *ntp__attr_ptr(ntp_attrs *a, ptrdiff_t off)
{
    return (char *)a + off;
}
static inline const void *ntp__attr_cptr(const ntp_attrs *a, ptrdiff_t off)
{
    return (const char *)a + off;
}

/* Names of the enums the declarations use, as the markup writes them. */
extern const char *const ntp__pad_kind_names[3];  /* same, same_lower, valid */
extern const char *const ntp__padmode_names[3];   /* NTP_PADMODE_* */
extern const char *const ntp__direction_names[3]; /* NTP_DIR_* */
extern const char *const ntp__merge_names[2];     /* NTP_MERGE_* */
extern const char *const ntp__sequence_names[2];  /* full, last */
extern const char *const ntp__rnn_act_names[2];   /* NTP_RNN_ACT_* */
extern const char *const ntp__ctc_names[2];       /* NTP_CTC_* */
extern const char *const ntp__head_names[2];      /* NTP_HEAD_* */

#endif
