/* Helpers shared by the shape and cost functions (src/graph/op-*.c). */
#ifndef NTPROF_OP_COMMON_H
#define NTPROF_OP_COMMON_H

#include "graph-impl.h"

#define NTP_SHAPE_STR_MAX 160

/* Error naming the node, with printf formatting. */
#define NODE_ERR(st, ...) ntp__node_error(ctx, g, n, (st), __VA_ARGS__)

/* Format a shape into a caller-provided buffer for messages. */
static inline const char *shp(const ntp_shape *s, char buf[NTP_SHAPE_STR_MAX])
{
    return ntp_shape_str(s, buf, NTP_SHAPE_STR_MAX);
}

/* Normalise a possibly negative axis against rank; false if out of range. */
static inline bool norm_axis(int64_t axis, int rank, int64_t *out)
{
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis >= rank)
        return false;
    *out = axis;
    return true;
}

static inline int64_t numel(const ntp_shape *s)
{
    return ntp_shape_numel(s);
}

/* Saturating product, for costs (shapes are already overflow-checked, but
 * products of several of them may not be). */
static inline int64_t smul(int64_t a, int64_t b)
{
    int64_t r;
    return ntp__mul_ok(a, b, &r) ? r : INT64_MAX;
}
static inline int64_t sadd(int64_t a, int64_t b)
{
    int64_t r;
    return ntp__add_ok(a, b, &r) ? r : INT64_MAX;
}

/* Checked arithmetic for shape inference: every size computed from
 * attributes a model gives (any int64) goes through these, never through
 * plain operators, whose overflow is undefined. False on overflow. */
static inline bool ck_add(int64_t a, int64_t b, int64_t *r)
{
    return !__builtin_add_overflow(a, b, r);
}
static inline bool ck_sub(int64_t a, int64_t b, int64_t *r)
{
    return !__builtin_sub_overflow(a, b, r);
}
static inline bool ck_mul(int64_t a, int64_t b, int64_t *r)
{
    return !__builtin_mul_overflow(a, b, r);
}

/* Require the input rank to be within [lo, hi]. */
ntp_status ntp__need_rank(ntp_ctx *ctx, const ntp_graph *g, const ntp_node *n, int input, int lo,
                          int hi, const char *layout);
/* Set output k to shape s. */
static inline void set_out(ntp_graph *g, const ntp_node *n, int k, const ntp_shape *s)
{
    g->tensors[n->out[k]].shape = *s;
}
/* A rank-1 or rank-2 shape literal. */
static inline ntp_shape shape1(int64_t a)
{
    ntp_shape s = {1, {a}};
    return s;
}
static inline ntp_shape shape2(int64_t a, int64_t b)
{
    ntp_shape s = {2, {a, b}};
    return s;
}
static inline ntp_shape shape3(int64_t a, int64_t b, int64_t c)
{
    ntp_shape s = {3, {a, b, c}};
    return s;
}

#endif
