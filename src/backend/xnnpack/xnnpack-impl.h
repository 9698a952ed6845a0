/* The XNNPACK backend, private to libntprof (docs/backends.md).
 *
 * XNNPACK (the engine under TensorFlow Lite's CPU delegate) is driven
 * through its operator API: an operator is created once at prepare, which
 * packs its weights, and is set up with the engine's buffers and run at
 * every execute. This Debian snapshot (0.0~git20220216) has NHWC
 * convolution, deconvolution and pooling, fully connected, element-wise
 * add and multiply with broadcasting, clamp, leaky ReLU, sigmoid, hard
 * swish, softmax, constant padding and copies in f32, and most of them in
 * f16 (storage f16, computed in f16 where the CPU has F16C and FMA).
 *
 * Layouts. XNNPACK works channels-last. Rank-3 and rank-4 activations
 * ([N, C, L] and [N, C, H, W]) that stay inside this backend are kept in
 * NHWC between its layers (recorded as the tensor's internal layout); at a
 * boundary with another backend or a graph input or output they are plain
 * (NCHW). A layer that receives a layout other than the one it computes in
 * converts it first, and a layer whose NHWC result leaves the backend
 * converts it after: each conversion is a sub-step of type "reorder" with
 * its own row (":to_nhwc", ":to_nchw"). A tensor whose spatial size or
 * channel count is 1 has the same bytes in both layouts and is never
 * converted.
 *
 * Every layer becomes a short list of steps: input reorders, the main step
 * (one or more XNNPACK operators run in order, for example multiply then
 * add for a batch normalisation), output reorders. */
#ifndef NTPROF_XNNPACK_IMPL_H
#define NTPROF_XNNPACK_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <xnnpack.h>

#include "backend/backend-impl.h"

#define XNNB_MAX_STEPS 12
#define XNNB_MAX_CALLS 10
#define XNNB_MAX_OWN 4

/* Layout of an activation as this backend stores it. */
enum { XNNB_PLAIN = 0, XNNB_NHWC = 1, XNNB_ANY = 2 };

/* Where an operand lives at execute time. */
typedef enum xnnb_where {
    XNNB_IN,  /* k->in[idx].data */
    XNNB_OUT, /* k->out[idx].data */
    XNNB_WS,  /* k->workspace + off */
    XNNB_OWN  /* nd->own[idx] (constants the node owns) */
} xnnb_where;

typedef struct xnnb_buf {
    xnnb_where where;
    int idx;
    size_t off;
} xnnb_buf;

/* Which XNNPACK setup function a call uses. */
typedef enum xnnb_fn {
    XNNB_FN_CONV,
    XNNB_FN_DECONV,
    XNNB_FN_FC,
    XNNB_FN_MAXPOOL,
    XNNB_FN_AVGPOOL,
    XNNB_FN_GAP_NWC,
    XNNB_FN_GAP_NCW,
    XNNB_FN_CLAMP,
    XNNB_FN_LEAKY_RELU,
    XNNB_FN_SIGMOID,
    XNNB_FN_HARDSWISH,
    XNNB_FN_SOFTMAX,
    XNNB_FN_COPY,
    XNNB_FN_ADD,
    XNNB_FN_MUL,
    XNNB_FN_PAD,
    /* The ONNX ops this snapshot has (f32 only). */
    XNNB_FN_ABS,
    XNNB_FN_NEG,
    XNNB_FN_SQRT,
    XNNB_FN_FLOOR,
    XNNB_FN_CEIL,
    XNNB_FN_ROUND,
    XNNB_FN_ELU,
    XNNB_FN_PRELU,
    XNNB_FN_SUB,
    XNNB_FN_DIV,
    XNNB_FN_MAX,
    XNNB_FN_MIN
} xnnb_fn;

/* One XNNPACK operator with the arguments of its setup call. */
typedef struct xnnb_call {
    xnn_operator_t op;
    xnnb_fn fn;
    bool f16;
    xnnb_buf x, x2, y;           /* x2: second operand of add / multiply */
    size_t batch, height, width; /* spatial ops; batch rows for nc ops */
    uint32_t adj_h, adj_w;       /* deconvolution output adjustment */
    size_t nd_x, nd_x2;          /* binary and pad: ranks and shapes */
    size_t shape_x[XNN_MAX_TENSOR_DIMS], shape_x2[XNN_MAX_TENSOR_DIMS];
    size_t pre[XNN_MAX_TENSOR_DIMS], post[XNN_MAX_TENSOR_DIMS];
} xnnb_call;

/* A step: a layout conversion, or the main step's operators. */
typedef struct xnnb_step {
    bool reorder;
    bool to_nhwc; /* reorder direction */
    bool yield;   /* let the pool's workers sleep after it */
    xnnb_buf src, dst;
    int64_t n, c, s; /* [n][c][s] <-> [n][s][c] */
    size_t esize;
    int first_call, n_calls; /* main step */
    char suffix[40];
} xnnb_step;

/* What prepare builds for one layer or fusion group. */
typedef struct xnnb_node {
    int n_steps, main_step;
    xnnb_step steps[XNNB_MAX_STEPS];
    int n_calls;
    xnnb_call calls[XNNB_MAX_CALLS];
    int n_own;
    void *own[XNNB_MAX_OWN];
    size_t ws; /* workspace bytes */
    char impl[96];
} xnnb_node;

/* Backend-wide state, one per execution plan. */
typedef struct xnnb_state {
    pthreadpool_t pool;    /* NULL: run on the calling thread */
    int threads;           /* the pool's size */
    int operators_created; /* every operator created so far (tests) */
} xnnb_state;

/* Scratch data while one prepare runs. */
typedef struct xnnb_build {
    ntp_ctx *ctx;
    xnnb_state *s;
    ntp_kargs *k;
    xnnb_node *nd;
    const ntp_node *n; /* the layer (the head of a group) */
    bool f16;          /* f16 storage and operators */
    size_t esize;      /* bytes per activation element */
    /* Fusion: the output range of a clamp activation folded into the
     * operator (-Inf, +Inf without one). */
    float out_min, out_max;
    bool yield; /* an output leaves the backend */
    int n_pre, n_post;
    xnnb_step pre[XNNB_MAX_STEPS], post[XNNB_MAX_STEPS];
} xnnb_build;

/* --- build.c: errors, buffers, layouts, operators, execution ------------ */
ntp_status ntp__xnn_fail(xnnb_build *b, ntp_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* OK, or BACKEND_ERROR naming the XNNPACK call and its status. */
ntp_status ntp__xnn_check(xnnb_build *b, enum xnn_status st, const char *what);
const char *ntp__xnn_status_name(enum xnn_status st);
/* Does a tensor of this shape have an NHWC layout distinct from NCHW? */
bool ntp__xnn_spatial(const ntp_shape *s);
/* [N, C, spatial] of a rank-3 or rank-4 shape. */
void ntp__xnn_ncs(const ntp_shape *s, int64_t *n, int64_t *c, int64_t *sp);
/* The layout input i arrives in. */
int ntp__xnn_in_fmt(const xnnb_build *b, int i);
/* A workspace region of `bytes` (64-byte aligned, with XNNPACK's slack). */
xnnb_buf ntp__xnn_ws(xnnb_build *b, size_t bytes);
/* A zero-filled buffer the node owns (with XNNPACK's slack). */
ntp_status ntp__xnn_own(xnnb_build *b, size_t bytes, void **ptr, xnnb_buf *buf);
/* Input i in layout `want` (XNNB_ANY: as it arrives): the input itself or
 * a workspace copy made by a reorder step. *fmt gets the layout. */
ntp_status ntp__xnn_input(xnnb_build *b, int i, int want, xnnb_buf *buf, int *fmt);
/* Where the main step writes output i, computed in layout `fmt`: the
 * output itself, or a workspace region reordered into it afterwards.
 * Records the internal layout for the consumers. */
ntp_status ntp__xnn_output(xnnb_build *b, int i, int fmt, xnnb_buf *buf);
/* Append an operator to the main step (the node owns it from here on, even
 * on failure). */
ntp_status ntp__xnn_call(xnnb_build *b, xnn_operator_t op, xnnb_fn fn, xnnb_call **out);
/* Weight i as a malloc'd f32 array (converted from f16 storage). */
ntp_status ntp__xnn_weight_f32(xnnb_build *b, int i, float **out);
/* n f32 values as a malloc'd array in the activation storage type (with
 * XNNPACK's slack after it). */
ntp_status ntp__xnn_store(xnnb_build *b, const float *src, int64_t n, void **out);
/* Creation flags of a layer's operators. */
uint32_t ntp__xnn_flags(const xnnb_build *b);
/* Run step `i` of a prepared node. */
ntp_status ntp__xnn_run_step(ntp_ctx *ctx, xnnb_state *s, xnnb_node *nd, const ntp_kargs *k, int i);
void ntp__xnn_node_free(xnnb_node *nd);
/* Copy [n][rows][cols] to [n][cols][rows] (elements of esize bytes) on
 * the pool. */
void ntp__xnn_transpose(pthreadpool_t pool, const void *src, void *dst, int64_t n, int64_t rows,
                        int64_t cols, size_t esize, bool yield);

/* --- support checks (one per family) ------------------------------------ */
bool ntp__xnn_conv_supports(const ntp_graph *g, const ntp_node *n, bool f16);
bool ntp__xnn_pool_supports(const ntp_graph *g, const ntp_node *n, bool f16);
bool ntp__xnn_fc_supports(const ntp_graph *g, const ntp_node *n, bool f16);
bool ntp__xnn_eltwise_supports(const ntp_graph *g, const ntp_node *n, bool f16);

/* --- builders (one per family) ------------------------------------------ */
ntp_status ntp__xnn_conv_build(xnnb_build *b); /* conv, deconv */
ntp_status ntp__xnn_pool_build(xnnb_build *b); /* max/avg and global pooling */
ntp_status ntp__xnn_fc_build(xnnb_build *b);
ntp_status ntp__xnn_eltwise_build(xnnb_build *b); /* activations, softmax, add, mul,
                                                     batchnorm, pad, copies */

/* Batchnorm `bn` (weights scale, bias, mean, var at bw[0..3], f32) as
 * per-channel factors: y = x * mul[c] + add[c]. */
void ntp__xnn_bn_factors(const ntp_node *bn, const float *const *bw, int64_t C, float *mul,
                         float *add);

/* Did xnn_initialize succeed (done once per process)? */
bool ntp__xnn_available(void);

extern const ntp_backend_i ntp__backend_xnnpack;

#endif
