/* Test harness for the reference kernels: builds an ntp_kargs by hand
 * (no graph), runs one kernel with poisoned outputs and guard zones, and
 * checks what came back.
 *
 *   rh_case c;
 *   rh_init(&c, NTP_OP_FC);
 *   c.node.a.units = 2;
 *   rh_in(&c, RH_SHAPE(2, 3), x);
 *   rh_w(&c, RH_SHAPE(2, 3), W);
 *   float *y = rh_out(&c, RH_SHAPE(2, 2));
 *   assert_int_equal(rh_run(&c, ctx), NTP_STATUS_OK);
 *   rh_expect(y, want, 4, 1e-6f);
 *   rh_free(&c);
 *
 * rh_run poisons every output with NaN and the workspace too, puts guard
 * floats before and after each output, and after the kernel asserts (cmocka)
 * that the guards are intact, that inputs and weights are unchanged and,
 * on success, that no output element is NaN (an unwritten element). */
#ifndef NTP_TEST_REF_HARNESS_H
#define NTP_TEST_REF_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/ref/ref-impl.h"

typedef struct rh_case {
    ntp_node node;
    ntp_kargs k;
    /* Private: buffers with guard zones, and copies of what must not change. */
    void *in_base[NTP_MAX_INPUTS], *in_copy[NTP_MAX_INPUTS];
    void *w_base[NTP_MAX_WEIGHTS], *w_copy[NTP_MAX_WEIGHTS];
    void *out_base[NTP_MAX_OUTPUTS];
    void *ws_base;
    /* Set to allow NaN in outputs (a test that feeds NaN on purpose). */
    bool allow_nan;
} rh_case;

/* A shape literal: RH_SHAPE(2, 3, 4). */
#define RH_SHAPE(...)                        \
    rh_shape((const int64_t[]){__VA_ARGS__}, \
             (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
ntp_shape rh_shape(const int64_t *dims, int ndim);

/* A node of op `op` named "layer", default attributes, f32 precision. */
void rh_init(rh_case *c, ntp_op op);
/* Set the spatial attributes as shape inference leaves them: nk values of
 * kernel, stride and dilation, 2*nk pads (begins, then ends). */
void rh_spatial(rh_case *c, int nk, const int64_t *kernel, const int64_t *stride,
                const int64_t *dilation, const int64_t *pads);
/* Add an f32 input / weight (data copied) and return its index. */
int rh_in(rh_case *c, ntp_shape s, const float *data);
int rh_in_typed(rh_case *c, ntp_shape s, ntp_dtype t, const void *data);
int rh_w(rh_case *c, ntp_shape s, const float *data);
/* Add an f32 output; returns where the kernel will write it. */
float *rh_out(rh_case *c, ntp_shape s);
void *rh_out_typed(rh_case *c, ntp_shape s, ntp_dtype t);

/* Run ntp__ref_run with the workspace ntp__ref_workspace asks for. */
ntp_status rh_run(rh_case *c, ntp_ctx *ctx);
/* Run through the backend's method table (prepare, then execute), which
 * also rounds the outputs to c->node.precision. */
ntp_status rh_run_backend(rh_case *c, ntp_ctx *ctx);
void rh_free(rh_case *c);

/* Assert |got[i] - want[i]| <= tol * max(1, |want[i]|) for every i, printing
 * the index and both values of the first mismatch. Infinities must match
 * exactly. */
void rh_expect(const float *got, const float *want, int64_t n, float tol);

/* Deterministic test data that every tool computes identically: small
 * multiples of 1/16 in [-0.5, 0.5], v[i] = ((i*37 + seed) % 17 - 8) / 16. */
void rh_fill(float *v, int64_t n, int seed);

#endif
