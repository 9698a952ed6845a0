/* The XNNPACK backend's plumbing: errors, workspace and owned buffers,
 * layout conversions at the edges of a layer, the operator list of the main
 * step, and running a prepared node (xnnpack-impl.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "core/numeric-impl.h"
#include "core/wait-policy-impl.h"
#include "xnnpack-impl.h"

/* The internal-layout record of an NHWC tensor. The engine keeps the
 * pointer; it points at this one static byte, so there is nothing to free. */
static char nhwc_tag;

ntp_status ntp__xnn_fail(xnnb_build *b, ntp_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ntp_status r = ntp__be_verror(b->ctx, "xnnpack", b->k->g, b->n, st, fmt, ap);
    va_end(ap);
    return r;
}

const char *ntp__xnn_status_name(enum xnn_status st)
{
    switch (st) {
    case xnn_status_success: return "success";
    case xnn_status_uninitialized: return "uninitialized";
    case xnn_status_invalid_parameter: return "invalid parameter";
    case xnn_status_invalid_state: return "invalid state";
    case xnn_status_unsupported_parameter: return "unsupported parameter";
    case xnn_status_unsupported_hardware: return "unsupported hardware";
    case xnn_status_out_of_memory: return "out of memory";
    }
    return "unknown status";
}

ntp_status ntp__xnn_check(xnnb_build *b, enum xnn_status st, const char *what)
{
    if (st == xnn_status_success)
        return NTP_STATUS_OK;
    return ntp__xnn_fail(
        b, st == xnn_status_out_of_memory ? NTP_STATUS_OUT_OF_MEMORY : NTP_STATUS_BACKEND_ERROR,
        "%s failed: %s", what, ntp__xnn_status_name(st));
}

void ntp__xnn_ncs(const ntp_shape *s, int64_t *n, int64_t *c, int64_t *sp)
{
    *n = s->dim[0];
    *c = s->dim[1];
    *sp = 1;
    for (int d = 2; d < s->ndim; d++)
        *sp *= s->dim[d];
}

bool ntp__xnn_spatial(const ntp_shape *s)
{
    if (s->ndim != 3 && s->ndim != 4)
        return false;
    int64_t n, c, sp;
    ntp__xnn_ncs(s, &n, &c, &sp);
    return c > 1 && sp > 1;
}

int ntp__xnn_in_fmt(const xnnb_build *b, int i)
{
    const ntp_kargs *k = b->k;
    if (!k->in_internal[i] || !k->in_layout[i] || !ntp__xnn_spatial(&k->in[i].shape))
        return XNNB_PLAIN;
    return *k->in_layout[i] == (void *)&nhwc_tag ? XNNB_NHWC : XNNB_PLAIN;
}

xnnb_buf ntp__xnn_ws(xnnb_build *b, size_t bytes)
{
    xnnb_buf r = {.where = XNNB_WS, .idx = 0, .off = b->nd->ws};
    b->nd->ws += (bytes + XNN_EXTRA_BYTES + 63) / 64 * 64;
    return r;
}

ntp_status ntp__xnn_own(xnnb_build *b, size_t bytes, void **ptr, xnnb_buf *buf)
{
    xnnb_node *nd = b->nd;
    if (nd->n_own == XNNB_MAX_OWN)
        return ntp__xnn_fail(b, NTP_STATUS_INTERNAL, "more than %d constant buffers", XNNB_MAX_OWN);
    void *p = calloc(1, bytes + XNN_EXTRA_BYTES);
    if (!p)
        return ntp__xnn_fail(b, NTP_STATUS_OUT_OF_MEMORY, "out of memory for %zu bytes", bytes);
    nd->own[nd->n_own] = p;
    *ptr = p;
    buf->where = XNNB_OWN;
    buf->idx = nd->n_own++;
    buf->off = 0;
    return NTP_STATUS_OK;
}

static ntp_status add_reorder(xnnb_build *b, bool post, bool to_nhwc, xnnb_buf src, xnnb_buf dst,
                              const ntp_shape *shape, const char *suffix)
{
    int *count = post ? &b->n_post : &b->n_pre;
    xnnb_step *list = post ? b->post : b->pre;
    if (*count == XNNB_MAX_STEPS)
        return ntp__xnn_fail(b, NTP_STATUS_INTERNAL, "too many layout conversions");
    xnnb_step *st = &list[(*count)++];
    memset(st, 0, sizeof *st);
    st->reorder = true;
    st->to_nhwc = to_nhwc;
    st->src = src;
    st->dst = dst;
    ntp__xnn_ncs(shape, &st->n, &st->c, &st->s);
    st->esize = b->esize;
    snprintf(st->suffix, sizeof st->suffix, "%s", suffix);
    return NTP_STATUS_OK;
}

ntp_status ntp__xnn_input(xnnb_build *b, int i, int want, xnnb_buf *buf, int *fmt)
{
    const ntp_shape *s = &b->k->in[i].shape;
    int have = ntp__xnn_in_fmt(b, i);
    xnnb_buf src = {.where = XNNB_IN, .idx = i, .off = 0};
    if (want == XNNB_ANY || want == have || !ntp__xnn_spatial(s)) {
        *buf = src;
        if (fmt)
            *fmt = want == XNNB_ANY ? have : want;
        return NTP_STATUS_OK;
    }
    *buf = ntp__xnn_ws(b, (size_t)ntp_shape_numel(s) * b->esize);
    if (fmt)
        *fmt = want;
    char suffix[40];
    snprintf(suffix, sizeof suffix, ":%s%s", want == XNNB_NHWC ? "to_nhwc" : "to_nchw",
             b->k->n_in > 1 ? (i == 0   ? "_in0"
                               : i == 1 ? "_in1"
                                        : "_in")
                            : "");
    return add_reorder(b, false, want == XNNB_NHWC, src, *buf, s, suffix);
}

ntp_status ntp__xnn_output(xnnb_build *b, int i, int fmt, xnnb_buf *buf)
{
    ntp_kargs *k = b->k;
    const ntp_shape *s = &k->out[i].shape;
    xnnb_buf dst = {.where = XNNB_OUT, .idx = i, .off = 0};
    bool nhwc = fmt == XNNB_NHWC && ntp__xnn_spatial(s);
    if (!k->out_internal[i] || ntp__wait_passive())
        b->yield = true;
    if (k->out_internal[i] && k->out_layout[i])
        *k->out_layout[i] = nhwc ? (void *)&nhwc_tag : NULL;
    if (!nhwc || k->out_internal[i]) {
        *buf = dst;
        return NTP_STATUS_OK;
    }
    *buf = ntp__xnn_ws(b, (size_t)ntp_shape_numel(s) * b->esize);
    return add_reorder(b, true, false, *buf, dst, s, k->n_out > 1 ? ":to_nchw_out" : ":to_nchw");
}

ntp_status ntp__xnn_call(xnnb_build *b, xnn_operator_t op, xnnb_fn fn, xnnb_call **out)
{
    xnnb_node *nd = b->nd;
    if (nd->n_calls == XNNB_MAX_CALLS) {
        xnn_delete_operator(op);
        return ntp__xnn_fail(b, NTP_STATUS_INTERNAL, "more than %d operators", XNNB_MAX_CALLS);
    }
    xnnb_call *c = &nd->calls[nd->n_calls++];
    memset(c, 0, sizeof *c);
    c->op = op;
    c->fn = fn;
    c->f16 = b->f16;
    b->s->operators_created++;
    *out = c;
    return NTP_STATUS_OK;
}

uint32_t ntp__xnn_flags(const xnnb_build *b)
{
    /* Workers spin for a while after an operator, waiting for the next. That
     * is what a run of XNNPACK layers wants, but when the next layer runs on
     * another backend (the reference backend's thread, oneDNN's OpenMP
     * team) spinning workers would compete with it for the cores, so the
     * layer whose result leaves XNNPACK lets them sleep. */
    for (int i = 0; i < b->k->n_out; i++)
        if (!b->k->out_internal[i])
            return XNN_FLAG_YIELD_WORKERS;
    /* Under the passive wait policy (docs/run.md#wait-policy) after every
     * operator: pthreadpool's spin count is compiled in. */
    return ntp__wait_passive() ? XNN_FLAG_YIELD_WORKERS : 0;
}

ntp_status ntp__xnn_weight_f32(xnnb_build *b, int i, float **out)
{
    const ntp_buf *w = &b->k->w[i];
    int64_t n = ntp_shape_numel(&w->shape);
    float *p = malloc((size_t)n * sizeof *p + XNN_EXTRA_BYTES);
    if (!p)
        return ntp__xnn_fail(b, NTP_STATUS_OUT_OF_MEMORY, "out of memory for weight %d", i);
    if (w->dtype == NTP_DTYPE_F16) {
        const uint16_t *h = w->data;
        for (int64_t j = 0; j < n; j++)
            p[j] = ntp__f16_to_f32(h[j]);
    } else if (w->dtype == NTP_DTYPE_F32) {
        memcpy(p, w->data, (size_t)n * sizeof *p);
    } else {
        free(p);
        return ntp__xnn_fail(b, NTP_STATUS_UNSUPPORTED, "weight %d is stored as %s", i,
                             ntp_dtype_name(w->dtype));
    }
    *out = p;
    return NTP_STATUS_OK;
}

ntp_status ntp__xnn_store(xnnb_build *b, const float *src, int64_t n, void **out)
{
    void *p = malloc((size_t)n * b->esize + XNN_EXTRA_BYTES);
    if (!p)
        return ntp__xnn_fail(b, NTP_STATUS_OUT_OF_MEMORY, "out of memory for %lld values",
                             (long long)n);
    if (b->f16)
        for (int64_t j = 0; j < n; j++)
            ((uint16_t *)p)[j] = ntp__f32_to_f16(src[j]);
    else
        memcpy(p, src, (size_t)n * sizeof *src);
    *out = p;
    return NTP_STATUS_OK;
}

void ntp__xnn_bn_factors(const ntp_node *bn, const float *const *bw, int64_t C, float *mul,
                         float *add)
{
    double eps = bn->a.epsilon;
    for (int64_t c = 0; c < C; c++) {
        double m = (double)bw[0][c] / sqrt((double)bw[3][c] + eps);
        mul[c] = (float)m;
        add[c] = (float)((double)bw[1][c] - (double)bw[2][c] * m);
    }
}

/* --- running ---------------------------------------------------------------- */

static void *resolve(const xnnb_node *nd, const ntp_kargs *k, xnnb_buf b)
{
    switch (b.where) {
    case XNNB_IN: return (char *)k->in[b.idx].data + b.off;
    case XNNB_OUT: return (char *)k->out[b.idx].data + b.off;
    case XNNB_WS: return (char *)k->workspace + b.off;
    case XNNB_OWN: return (char *)nd->own[b.idx] + b.off;
    }
    return NULL;
}

static enum xnn_status setup_f32(const xnnb_call *c, pthreadpool_t pool, const void *x,
                                 const void *x2, void *y)
{
    switch (c->fn) {
    case XNNB_FN_CONV:
        return xnn_setup_convolution2d_nhwc_f32(c->op, c->batch, c->height, c->width, x, y, pool);
    case XNNB_FN_DECONV:
        return xnn_setup_deconvolution2d_nhwc_f32(c->op, c->batch, c->height, c->width, c->adj_h,
                                                  c->adj_w, x, y, pool);
    case XNNB_FN_FC: return xnn_setup_fully_connected_nc_f32(c->op, c->batch, x, y, pool);
    case XNNB_FN_MAXPOOL:
        return xnn_setup_max_pooling2d_nhwc_f32(c->op, c->batch, c->height, c->width, x, y, pool);
    case XNNB_FN_AVGPOOL:
        return xnn_setup_average_pooling2d_nhwc_f32(c->op, c->batch, c->height, c->width, x, y,
                                                    pool);
    case XNNB_FN_GAP_NWC:
        return xnn_setup_global_average_pooling_nwc_f32(c->op, c->batch, c->width, x, y, pool);
    case XNNB_FN_GAP_NCW:
        return xnn_setup_global_average_pooling_ncw_f32(c->op, c->batch, c->width, x, y, pool);
    case XNNB_FN_CLAMP: return xnn_setup_clamp_nc_f32(c->op, c->batch, x, y, pool);
    case XNNB_FN_LEAKY_RELU: return xnn_setup_leaky_relu_nc_f32(c->op, c->batch, x, y, pool);
    case XNNB_FN_SIGMOID: return xnn_setup_sigmoid_nc_f32(c->op, c->batch, x, y, pool);
    case XNNB_FN_HARDSWISH: return xnn_setup_hardswish_nc_f32(c->op, c->batch, x, y, pool);
    case XNNB_FN_SOFTMAX: return xnn_setup_softmax_nc_f32(c->op, c->batch, x, y, pool);
    case XNNB_FN_COPY: return xnn_setup_copy_nc_x32(c->op, c->batch, x, y, pool);
    case XNNB_FN_ADD:
        return xnn_setup_add_nd_f32(c->op, c->nd_x, c->shape_x, c->nd_x2, c->shape_x2, x, x2, y,
                                    pool);
    case XNNB_FN_MUL:
        return xnn_setup_multiply_nd_f32(c->op, c->nd_x, c->shape_x, c->nd_x2, c->shape_x2, x, x2,
                                         y, pool);
    case XNNB_FN_PAD:
        return xnn_setup_constant_pad_nd_x32(c->op, c->nd_x, c->shape_x, c->pre, c->post, x, y,
                                             pool);
    case XNNB_FN_ABS: return xnn_setup_abs_nc_f32(c->op, c->batch, x, y, pool);
    case XNNB_FN_NEG: return xnn_setup_negate_nc_f32(c->op, c->batch, x, y, pool);
    case XNNB_FN_SQRT: return xnn_setup_square_root_nc_f32(c->op, c->batch, x, y, pool);
    case XNNB_FN_FLOOR: return xnn_setup_floor_nc_f32(c->op, c->batch, x, y, pool);
    case XNNB_FN_CEIL: return xnn_setup_ceiling_nc_f32(c->op, c->batch, x, y, pool);
    case XNNB_FN_ROUND: return xnn_setup_bankers_rounding_nc_f32(c->op, c->batch, x, y, pool);
    case XNNB_FN_ELU: return xnn_setup_elu_nc_f32(c->op, c->batch, x, y, pool);
    case XNNB_FN_PRELU: return xnn_setup_prelu_nc_f32(c->op, c->batch, x, y, pool);
    case XNNB_FN_SUB:
        return xnn_setup_subtract_nd_f32(c->op, c->nd_x, c->shape_x, c->nd_x2, c->shape_x2, x, x2,
                                         y, pool);
    case XNNB_FN_DIV:
        return xnn_setup_divide_nd_f32(c->op, c->nd_x, c->shape_x, c->nd_x2, c->shape_x2, x, x2, y,
                                       pool);
    case XNNB_FN_MAX:
        return xnn_setup_maximum_nd_f32(c->op, c->nd_x, c->shape_x, c->nd_x2, c->shape_x2, x, x2, y,
                                        pool);
    case XNNB_FN_MIN:
        return xnn_setup_minimum_nd_f32(c->op, c->nd_x, c->shape_x, c->nd_x2, c->shape_x2, x, x2, y,
                                        pool);
    }
    return xnn_status_invalid_parameter;
}

static enum xnn_status setup_f16(const xnnb_call *c, pthreadpool_t pool, const void *x,
                                 const void *x2, void *y)
{
    switch (c->fn) {
    case XNNB_FN_CONV:
        return xnn_setup_convolution2d_nhwc_f16(c->op, c->batch, c->height, c->width, x, y, pool);
    case XNNB_FN_DECONV:
        return xnn_setup_deconvolution2d_nhwc_f16(c->op, c->batch, c->height, c->width, c->adj_h,
                                                  c->adj_w, x, y, pool);
    case XNNB_FN_FC: return xnn_setup_fully_connected_nc_f16(c->op, c->batch, x, y, pool);
    case XNNB_FN_MAXPOOL:
        return xnn_setup_max_pooling2d_nhwc_f16(c->op, c->batch, c->height, c->width, x, y, pool);
    case XNNB_FN_GAP_NWC:
        return xnn_setup_global_average_pooling_nwc_f16(c->op, c->batch, c->width, x, y, pool);
    case XNNB_FN_CLAMP: return xnn_setup_clamp_nc_f16(c->op, c->batch, x, y, pool);
    case XNNB_FN_LEAKY_RELU: return xnn_setup_leaky_relu_nc_f16(c->op, c->batch, x, y, pool);
    case XNNB_FN_HARDSWISH: return xnn_setup_hardswish_nc_f16(c->op, c->batch, x, y, pool);
    case XNNB_FN_COPY: return xnn_setup_copy_nc_x16(c->op, c->batch, x, y, pool);
    case XNNB_FN_ADD:
        return xnn_setup_add_nd_f16(c->op, c->nd_x, c->shape_x, c->nd_x2, c->shape_x2, x, x2, y,
                                    pool);
    case XNNB_FN_MUL:
        return xnn_setup_multiply_nd_f16(c->op, c->nd_x, c->shape_x, c->nd_x2, c->shape_x2, x, x2,
                                         y, pool);
    case XNNB_FN_PAD:
        return xnn_setup_constant_pad_nd_x16(c->op, c->nd_x, c->shape_x, c->pre, c->post, x, y,
                                             pool);
    case XNNB_FN_AVGPOOL:
    case XNNB_FN_GAP_NCW:
    case XNNB_FN_SIGMOID:
    case XNNB_FN_SOFTMAX:
    case XNNB_FN_ABS:
    case XNNB_FN_NEG:
    case XNNB_FN_SQRT:
    case XNNB_FN_FLOOR:
    case XNNB_FN_CEIL:
    case XNNB_FN_ROUND:
    case XNNB_FN_ELU:
    case XNNB_FN_PRELU:
    case XNNB_FN_SUB:
    case XNNB_FN_DIV:
    case XNNB_FN_MAX:
    case XNNB_FN_MIN:
        /* Average pooling, the NCW global average, sigmoid, softmax and the
         * ONNX ops have no f16 operator in this snapshot; supports() keeps
         * them off f16. */
        break;
    }
    return xnn_status_unsupported_parameter;
}

static ntp_status run_error(ntp_ctx *ctx, const ntp_kargs *k, const char *what, enum xnn_status st)
{
    return ntp__error(ctx, NTP_STATUS_BACKEND_ERROR, "<%s name='%s'>: xnnpack: %s failed: %s",
                      ntp__op_name(k->node->op), k->node->name ? k->node->name : "?", what,
                      ntp__xnn_status_name(st));
}

ntp_status ntp__xnn_run_step(ntp_ctx *ctx, xnnb_state *s, xnnb_node *nd, const ntp_kargs *k, int i)
{
    const xnnb_step *st = &nd->steps[i];
    if (st->reorder) {
        const void *src = resolve(nd, k, st->src);
        void *dst = resolve(nd, k, st->dst);
        /* To NHWC: [n][c][s] becomes [n][s][c]; back: [n][s][c] to [n][c][s]. */
        if (st->to_nhwc)
            ntp__xnn_transpose(s->pool, src, dst, st->n, st->c, st->s, st->esize, st->yield);
        else
            ntp__xnn_transpose(s->pool, src, dst, st->n, st->s, st->c, st->esize, st->yield);
        return NTP_STATUS_OK;
    }
    for (int j = st->first_call; j < st->first_call + st->n_calls; j++) {
        const xnnb_call *c = &nd->calls[j];
        const void *x = resolve(nd, k, c->x);
        bool binary = c->fn == XNNB_FN_ADD || c->fn == XNNB_FN_MUL || c->fn == XNNB_FN_SUB ||
                      c->fn == XNNB_FN_DIV || c->fn == XNNB_FN_MAX || c->fn == XNNB_FN_MIN;
        const void *x2 = binary ? resolve(nd, k, c->x2) : NULL;
        void *y = resolve(nd, k, c->y);
        enum xnn_status xs =
            c->f16 ? setup_f16(c, s->pool, x, x2, y) : setup_f32(c, s->pool, x, x2, y);
        if (xs != xnn_status_success)
            return run_error(ctx, k, "setup", xs);
        if ((xs = xnn_run_operator(c->op, s->pool)) != xnn_status_success)
            return run_error(ctx, k, "run", xs);
    }
    return NTP_STATUS_OK;
}

void ntp__xnn_node_free(xnnb_node *nd)
{
    if (!nd)
        return;
    for (int i = 0; i < nd->n_calls; i++)
        if (nd->calls[i].op)
            xnn_delete_operator(nd->calls[i].op);
    for (int i = 0; i < nd->n_own; i++)
        free(nd->own[i]);
    free(nd);
}
