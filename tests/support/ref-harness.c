/* Test harness for the reference kernels (ref-harness.h). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ref-harness.h"

/* Guard zone on each side of an output, in bytes; a multiple of 8 so the
 * data stays aligned for every dtype. */
#define RH_GUARD 64
#define RH_GUARD_BYTE 0xA5
/* A NaN with a payload no arithmetic produces, so an element the kernel
 * never wrote is recognisable. */
#define RH_POISON 0x7FC0DEADu

ntp_shape rh_shape(const int64_t *dims, int ndim)
{
    ntp_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = ndim;
    for (int i = 0; i < ndim; i++)
        s.dim[i] = dims[i];
    return s;
}

void rh_init(rh_case *c, ntp_op op)
{
    memset(c, 0, sizeof *c);
    c->node.name = "layer";
    c->node.op = op;
    c->node.precision = NTP_DTYPE_F32;
    ntp__attrs_default(&c->node.a);
    c->k.node = &c->node;
    c->k.threads = 1;
}

void rh_spatial(rh_case *c, int nk, const int64_t *kernel, const int64_t *stride,
                const int64_t *dilation, const int64_t *pads)
{
    ntp_attrs *a = &c->node.a;
    a->nk = nk;
    a->n_kernel = a->n_stride = a->n_dilation = nk;
    a->n_pad = 2 * nk;
    a->pad_kind = NTP_PAD_EXPLICIT;
    for (int i = 0; i < nk; i++) {
        a->kernel[i] = kernel[i];
        a->stride[i] = stride ? stride[i] : 1;
        a->dilation[i] = dilation ? dilation[i] : 1;
        a->pad[i] = pads ? pads[i] : 0;
        a->pad[nk + i] = pads ? pads[nk + i] : 0;
    }
}

static size_t buf_bytes(ntp_shape s, ntp_dtype t)
{
    int64_t n = ntp_shape_numel(&s);
    assert_true(n >= 0);
    return (size_t)n * ntp_dtype_size(t);
}

/* Allocate bytes with a guard zone on each side; returns the base. */
static void *guarded(size_t bytes)
{
    unsigned char *base = malloc(bytes + 2 * RH_GUARD);
    assert_non_null(base);
    memset(base, RH_GUARD_BYTE, RH_GUARD);
    memset(base + RH_GUARD + bytes, RH_GUARD_BYTE, RH_GUARD);
    return base;
}

static void check_guards(const void *base, size_t bytes, const char *what, int i)
{
    const unsigned char *p = base;
    for (size_t j = 0; j < RH_GUARD; j++) {
        if (p[j] != RH_GUARD_BYTE)
            fail_msg("%s %d: guard byte %zu before the buffer was overwritten", what, i,
                     RH_GUARD - j);
        if (p[RH_GUARD + bytes + j] != RH_GUARD_BYTE)
            fail_msg("%s %d: guard byte %zu after the buffer was overwritten", what, i, j);
    }
}

static void poison(void *data, size_t bytes)
{
    uint32_t v = RH_POISON;
    unsigned char *p = data;
    for (size_t j = 0; j + 4 <= bytes; j += 4)
        memcpy(p + j, &v, 4);
    for (size_t j = bytes / 4 * 4; j < bytes; j++)
        p[j] = 0xA5;
}

static void *add_buf(ntp_buf *b, void **base, void **copy, ntp_shape s, ntp_dtype t,
                     const void *data)
{
    size_t bytes = buf_bytes(s, t);
    *base = guarded(bytes);
    void *p = (char *)*base + RH_GUARD;
    if (data)
        memcpy(p, data, bytes);
    else
        poison(p, bytes);
    if (copy) {
        *copy = malloc(bytes + 1);
        assert_non_null(*copy);
        memcpy(*copy, p, bytes);
    }
    b->data = p;
    b->shape = s;
    b->dtype = t;
    return p;
}

int rh_in_typed(rh_case *c, ntp_shape s, ntp_dtype t, const void *data)
{
    int i = c->k.n_in++;
    assert_true(i < NTP_MAX_INPUTS);
    add_buf(&c->k.in[i], &c->in_base[i], &c->in_copy[i], s, t, data);
    return i;
}

int rh_in(rh_case *c, ntp_shape s, const float *data)
{
    return rh_in_typed(c, s, NTP_DTYPE_F32, data);
}

int rh_w(rh_case *c, ntp_shape s, const float *data)
{
    int i = c->k.n_w++;
    assert_true(i < NTP_MAX_WEIGHTS);
    add_buf(&c->k.w[i], &c->w_base[i], &c->w_copy[i], s, NTP_DTYPE_F32, data);
    return i;
}

void *rh_out_typed(rh_case *c, ntp_shape s, ntp_dtype t)
{
    int i = c->k.n_out++;
    assert_true(i < NTP_MAX_OUTPUTS);
    return add_buf(&c->k.out[i], &c->out_base[i], NULL, s, t, NULL);
}

float *rh_out(rh_case *c, ntp_shape s)
{
    return rh_out_typed(c, s, NTP_DTYPE_F32);
}

static void set_workspace(rh_case *c, size_t bytes)
{
    free(c->ws_base);
    c->ws_base = NULL;
    c->k.workspace = NULL;
    c->k.workspace_bytes = bytes;
    if (bytes == 0)
        return;
    c->ws_base = guarded(bytes);
    c->k.workspace = (char *)c->ws_base + RH_GUARD;
    poison(c->k.workspace, bytes);
}

static void check_after(rh_case *c, ntp_status st)
{
    for (int i = 0; i < c->k.n_out; i++)
        check_guards(c->out_base[i], buf_bytes(c->k.out[i].shape, c->k.out[i].dtype), "output", i);
    if (c->ws_base)
        check_guards(c->ws_base, c->k.workspace_bytes, "workspace", 0);
    for (int i = 0; i < c->k.n_in; i++) {
        check_guards(c->in_base[i], buf_bytes(c->k.in[i].shape, c->k.in[i].dtype), "input", i);
        if (memcmp(c->in_copy[i], c->k.in[i].data, buf_bytes(c->k.in[i].shape, c->k.in[i].dtype)))
            fail_msg("input %d was modified by the kernel", i);
    }
    for (int i = 0; i < c->k.n_w; i++)
        if (memcmp(c->w_copy[i], c->k.w[i].data, buf_bytes(c->k.w[i].shape, c->k.w[i].dtype)))
            fail_msg("weight %d was modified by the kernel", i);
    if (st != NTP_STATUS_OK || c->allow_nan)
        return;
    for (int i = 0; i < c->k.n_out; i++) {
        if (c->k.out[i].dtype != NTP_DTYPE_F32)
            continue;
        const float *y = c->k.out[i].data;
        int64_t n = ntp_shape_numel(&c->k.out[i].shape);
        for (int64_t j = 0; j < n; j++)
            if (isnan(y[j]))
                fail_msg("output %d element %lld is NaN (unwritten or computed from garbage)", i,
                         (long long)j);
    }
}

ntp_status rh_run(rh_case *c, ntp_ctx *ctx)
{
    set_workspace(c, ntp__ref_workspace(&c->k));
    ntp_status st = ntp__ref_run(ctx, &c->k);
    check_after(c, st);
    return st;
}

ntp_status rh_run_backend(rh_case *c, ntp_ctx *ctx)
{
    const ntp_backend_i *be = &ntp__backend_ref;
    void *node_state = NULL;
    size_t ws = 0;
    ntp_status st = NTP_STATUS_OK;
    if (be->prepare)
        st = be->prepare(ctx, NULL, &c->k, &node_state, &ws);
    if (st != NTP_STATUS_OK)
        return st;
    set_workspace(c, ws);
    st = be->execute(ctx, NULL, node_state, &c->k);
    if (be->release_node)
        be->release_node(NULL, node_state);
    check_after(c, st);
    return st;
}

void rh_free(rh_case *c)
{
    for (int i = 0; i < NTP_MAX_INPUTS; i++) {
        free(c->in_base[i]);
        free(c->in_copy[i]);
    }
    for (int i = 0; i < NTP_MAX_WEIGHTS; i++) {
        free(c->w_base[i]);
        free(c->w_copy[i]);
    }
    for (int i = 0; i < NTP_MAX_OUTPUTS; i++)
        free(c->out_base[i]);
    free(c->ws_base);
    memset(c, 0, sizeof *c);
}

void rh_expect(const float *got, const float *want, int64_t n, float tol)
{
    for (int64_t i = 0; i < n; i++) {
        float g = got[i], w = want[i];
        bool ok;
        if (isinf(w) || isnan(w))
            ok = isinf(w) ? g == w : isnan(g);
        else
            ok = fabsf(g - w) <= tol * fmaxf(1.0f, fabsf(w));
        if (!ok)
            fail_msg("element %lld: got %.9g, expected %.9g (tolerance %g)", (long long)i,
                     (double)g, (double)w, (double)tol);
    }
}

void rh_fill(float *v, int64_t n, int seed)
{
    for (int64_t i = 0; i < n; i++)
        v[i] = (float)((i * 37 + seed) % 17 - 8) / 16.0f;
}
