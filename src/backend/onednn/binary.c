/* add, mul, max and min of 2 to 8 inputs, sub and div of two (the ops with
 * an algorithm in binary_algs[]), with numpy broadcasting, on oneDNN's
 * binary primitive.
 *
 * oneDNN's binary broadcasts its second source only, so the first source
 * is an input that already has the output's shape; the others are folded
 * in one step each, in input order, the later steps updating the result in
 * place. Same-shaped operands are read in the first source's layout (a
 * residual add of two blocked convolution outputs stays blocked); when one
 * operand broadcasts, everything is plain. Two inputs that both broadcast
 * to a larger output ([N,1] + [1,M]) have no oneDNN form and stay on the
 * reference backend. */
#include <stdio.h>

#include "onednn-impl.h"

/* Shape s right-aligned to rank r, padded with 1s. */
static void padded(const ntp_shape *s, int r, int64_t *dims)
{
    for (int d = 0; d < r; d++) {
        int ds = d - (r - s->ndim);
        dims[d] = ds >= 0 ? s->dim[ds] : 1;
    }
}

/* The first input with the output's shape, or -1. */
static int full_input(const ntp_shape *const *in, int n_in, const ntp_shape *y)
{
    for (int i = 0; i < n_in; i++)
        if (ntp_shape_equal(in[i], y))
            return i;
    return -1;
}

/* oneDNN's algorithm for each binary op this backend runs, one line an op:
 * add and mul, and the binary family's ops (NTP_BINARY_TABLE) it maps; the
 * family's others stay on the reference backend. */
// clang-format off
static const dnnl_alg_kind_t binary_algs[NTP_OP_COUNT] = {
    [NTP_OP_ADD] = dnnl_binary_add,
    [NTP_OP_MUL] = dnnl_binary_mul,
    [NTP_OP_SUB] = dnnl_binary_sub,
    [NTP_OP_DIV] = dnnl_binary_div,
    [NTP_OP_MAX] = dnnl_binary_max,
    [NTP_OP_MIN] = dnnl_binary_min,
    [NTP_OP_GREATER] = dnnl_binary_gt,
};
// clang-format on

bool ntp__dnnl_binary_supports(const ntp_graph *g, const ntp_node *n)
{
    const ntp_shape *y = &g->tensors[n->out[0]].shape;
    const ntp_shape *in[NTP_MAX_INPUTS];
    if (binary_algs[n->op] == dnnl_alg_kind_undef || n->n_in < 2 || y->ndim > DNNL_MAX_NDIMS)
        return false;
    for (int i = 0; i < n->n_in; i++) {
        in[i] = &g->tensors[n->in[i]].shape;
        if (in[i]->ndim > y->ndim)
            return false;
        int64_t dims[NTP_MAX_DIMS];
        padded(in[i], y->ndim, dims);
        for (int d = 0; d < y->ndim; d++)
            if (dims[d] != y->dim[d] && dims[d] != 1)
                return false;
    }
    int f = full_input(in, n->n_in, y);
    /* An op that does not commute (sub, div: NTP_BINARY_TABLE) takes its
     * first operand as the full one. */
    bool commutes = n->op == NTP_OP_ADD || n->op == NTP_OP_MUL || ntp__op_binary_commutes(n->op);
    if (!commutes && (n->n_in != 2 || f != 0))
        return false;
    return f >= 0;
}

ntp_status ntp__dnnl_binary_build(odnn_build *b)
{
    ntp_kargs *k = b->k;
    const ntp_shape *y = &k->out[0].shape;
    const ntp_shape *in[NTP_MAX_INPUTS];
    bool broadcast = false;
    for (int i = 0; i < k->n_in; i++) {
        in[i] = &k->in[i].shape;
        broadcast |= !ntp_shape_equal(in[i], y);
    }
    int f = full_input(in, k->n_in, y);
    if (k->n_in < 2 || f < 0)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "no input has the output's shape");
    /* ntp__dnnl_binary_supports admits only the ops with a row. */
    dnnl_alg_kind_t alg = binary_algs[b->n->op];
    if (alg == dnnl_alg_kind_undef)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "not a binary op");
    dnnl_memory_desc_t md0;
    ntp_status s;
    dnnl_status_t st;
    if (broadcast) {
        if ((st = ntp__dnnl_plain_md(&md0, y, b->cdt)))
            return ntp__dnnl_error(b, st, "descriptor");
    } else if ((s = ntp__dnnl_follow_md(b, f, b->cdt, &md0))) {
        return s;
    }
    int src0, dst;
    if ((s = ntp__dnnl_input(b, f, &md0, 1.0f, &src0)) ||
        (s = ntp__dnnl_output(b, 0, &md0, 1.0f, &dst)))
        return s;
    int steps = 0;
    for (int i = 0; i < k->n_in; i++) {
        if (i == f)
            continue;
        dnnl_memory_desc_t md1;
        int src1;
        if (ntp_shape_equal(in[i], y)) {
            md1 = md0;
            if ((s = ntp__dnnl_input(b, i, &md1, 1.0f, &src1)))
                return s;
        } else {
            int64_t dims[NTP_MAX_DIMS];
            padded(in[i], y->ndim, dims);
            int plain;
            if ((st = ntp__dnnl_plain_dims(&md1, y->ndim, dims, b->cdt)))
                return ntp__dnnl_error(b, st, "descriptor");
            if ((s = ntp__dnnl_plain_input(b, i, b->cdt, &plain)) ||
                (s = ntp__dnnl_alias(b, plain, &md1, &src1)))
                return s;
        }
        dnnl_binary_desc_t d;
        if ((st = dnnl_binary_desc_init(&d, alg, &md0, &md1, &md0)))
            return ntp__dnnl_error(b, st, "binary descriptor");
        dnnl_primitive_desc_t pd;
        if ((s = ntp__dnnl_pd(b, &pd, &d, NULL, "binary")))
            return s;
        /* After the first step the result is its own first source. */
        int args[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST};
        int mems[3] = {steps == 0 ? src0 : dst, src1, dst};
        char suffix[16] = "";
        if (steps > 0)
            snprintf(suffix, sizeof suffix, "_%d", steps + 1);
        if ((s = ntp__dnnl_step(b, pd, suffix, NULL, 3, args, mems)))
            return s;
        if (steps == 0)
            ntp__dnnl_set_main(b, pd);
        steps++;
    }
    return NTP_STATUS_OK;
}
