/* The oneDNN backend, private to libntprof.
 *
 * Every layer (or fusion group) becomes a short list of steps, each one a
 * oneDNN primitive: optional reorders that bring inputs into the layout and
 * type the main primitive wants, the main primitive, and optional reorders
 * that bring its outputs back to the layout the engine expects. Reorders are
 * their own steps so that reports show them as rows of type "reorder"
 * (n_steps / step_info / execute_step).
 *
 * Memory objects are created once at prepare. Those that stand for the
 * engine's buffers (inputs, outputs, the other operands of fused binary
 * layers, the shared workspace) get their data handle at every execute,
 * because the engine's pointers are only valid from the first execute on.
 * Weights are reordered once at prepare into the primitive's preferred
 * format and owned by the node. Every primitive uses a user-provided
 * scratchpad carved from the engine's workspace, so nothing is allocated
 * while running.
 *
 * Precisions: activations are stored as f32, bf16, f16 or s8 (the i8
 * precision). int8 is native in conv, deconv, fc and matmul (s8 activations
 * with the calibrated per-tensor scales, s8 weights with per-output-channel
 * scales computed here), with relu and residual adds as post-ops, and in
 * max pooling and relu (which keep their input's grid); other layers at i8
 * dequantise to f32, compute, and quantise again, each conversion a
 * reorder step. */
#ifndef NTPROF_ONEDNN_IMPL_H
#define NTPROF_ONEDNN_IMPL_H

#include <oneapi/dnnl/dnnl.h>
#include <stdbool.h>
#include <stddef.h>

#include "backend/backend-impl.h"

#define ODNN_MAX_MEMS 128
#define ODNN_MAX_STEPS 56
#define ODNN_MAX_ARGS 16
#define ODNN_MAX_PDS 96

/* What a memory object's data handle points at, set at every execute. */
typedef enum odnn_bind {
    ODNN_BIND_IN,      /* k->in[idx].data + off */
    ODNN_BIND_OUT,     /* k->out[idx].data + off */
    ODNN_BIND_POST,    /* k->post_in[idx].data */
    ODNN_BIND_WS,      /* k->workspace + off */
    ODNN_BIND_SCRATCH, /* k->workspace + the node's scratchpad offset */
    ODNN_BIND_OWN,     /* a buffer the node owns (packed weights, masks) */
    ODNN_BIND_KV       /* k->kv's keys (idx 0) or values (idx 1) + off */
} odnn_bind;

struct odnn_node;
struct odnn_step;
/* A step the host runs between primitives (kv_attention's cache append and
 * mask, kv-attention.c), with its own data. */
typedef ntp_status (*odnn_host_fn)(ntp_ctx *ctx, const struct odnn_node *nd,
                                   const struct odnn_step *sp, const ntp_kargs *k);

typedef struct odnn_mem {
    dnnl_memory_t m;
    odnn_bind bind;
    int idx;
    size_t off;
    void *own;
} odnn_mem;

typedef struct odnn_step {
    dnnl_primitive_t prim;
    int n_args;
    int arg[ODNN_MAX_ARGS]; /* DNNL_ARG_* */
    int mem[ODNN_MAX_ARGS]; /* index into odnn_node.mems */
    char suffix[48];        /* row name suffix; "" for the main step */
    const char *type;       /* row type: "reorder", or NULL for the layer's own */
    odnn_host_fn host;      /* a host step (prim NULL), or NULL */
    void *host_data;        /* its data, freed with the node */
    /* A step of one variant among several (kv_attention's context buckets):
     * it runs only while *gate == gate_val; NULL: always. */
    const int *gate;
    int gate_val;
} odnn_step;

/* Backend-wide state, one per execution plan. */
typedef struct odnn_state {
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    int threads; /* 0: all cores */
    /* Internal layouts recorded by producers, per tensor of the graph being
     * prepared, so that the other operand of a fused binary layer (which
     * arrives in k->post_in without a layout slot) is read correctly. */
    const ntp_graph *g;
    const dnnl_memory_desc_t **tensor_layout;
    int n_tensors;
    /* Training backward primitives, one per layer and phase, built at the
     * first call and kept (backward.c). */
    struct odnn_bwd *bwd;
    int n_bwd;
    /* Where their blocked copies of plain buffers live during one call
     * (the calls run one at a time): grown to the largest call's need. */
    void *arena;
    size_t arena_bytes;
    /* What the arena's start holds after the last call: layer held_n's
     * input held_src reordered to held_md (held false: nothing known).
     * A conv's backward-weights, right after its backward-data, finds its
     * diff_dst there. */
    bool held;
    const struct ntp_node *held_n;
    const void *held_src;
    dnnl_memory_desc_t held_md;
    /* The recurrent layers' (rnn-backward.c), one per layer. */
    struct odnn_rbwd *rbwd;
    int n_rbwd;
} odnn_state;

/* What prepare builds for one layer or fusion group. */
typedef struct odnn_node {
    int n_mems;
    odnn_mem mems[ODNN_MAX_MEMS];
    int n_steps;
    odnn_step steps[ODNN_MAX_STEPS];
    int main_step;
    /* Rows as reports show them: reorders before the layer's own
     * primitives, those primitives as one row (with any reorder between
     * them), reorders after. Row r runs steps row_first[r]..row_last[r]. */
    int n_rows, main_row;
    int row_first[ODNN_MAX_STEPS], row_last[ODNN_MAX_STEPS];
    char impl[160];
    const char *src_layout; /* the main primitive's source: "plain", "blocked", ... */
    char fuse_note[128];    /* a declined fusion's reason; "" when none */
    size_t ws_used;         /* intermediates, bump-allocated */
    size_t scratch_off;     /* scratchpad region after them */
    size_t scratch_bytes;
    int weight_reorders;                         /* weights reordered at prepare (tests check it) */
    int threads;                                 /* the count the primitives were created for */
    dnnl_memory_desc_t *out_md[NTP_MAX_OUTPUTS]; /* internal layouts handed on */
    int rec_tensor[NTP_MAX_OUTPUTS];             /* 1 + tensor whose layout was recorded, 0: none */
} odnn_node;

/* Scratch data while one prepare runs. */
typedef struct odnn_build {
    ntp_ctx *ctx;
    odnn_state *s;
    ntp_kargs *k;
    odnn_node *nd;
    const ntp_node *n;    /* the layer (the head of a group) */
    ntp_dtype prec;       /* its precision */
    bool int8;            /* prec == NTP_DTYPE_I8 */
    dnnl_data_type_t cdt; /* compute type of float activations */
    /* Output reorders to add after the main step. */
    int n_pending;
    int pending_from[NTP_MAX_OUTPUTS];
    int pending_out[NTP_MAX_OUTPUTS];
    float pending_scale[NTP_MAX_OUTPUTS];
    /* The fused layers ntp__dnnl_post_ops appends: k->fused[po_first ..
     * po_end), po_end -1 (as prepare sets it) meaning to the end; for a
     * head that keeps only part of its group (fuse.c). */
    int po_first, po_end;
    /* Primitive descriptors and attributes destroyed when prepare ends. */
    int n_pds;
    dnnl_primitive_desc_t pds[ODNN_MAX_PDS];
    int n_attrs;
    dnnl_primitive_attr_t attrs[ODNN_MAX_PDS];
} odnn_build;

/* --- build.c: memory, steps, reorders, errors ----------------------------- */
/* Record "<op name='layer'>: what: dnnl status" and return BACKEND_ERROR. */
ntp_status ntp__dnnl_error(odnn_build *b, dnnl_status_t st, const char *what);
/* The same outside a build (training's backward): "<op name='layer'>: who:
 * what failed: dnnl_status" through the engine's ntp__be_error, with
 * OUT_OF_MEMORY for dnnl_out_of_memory and BACKEND_ERROR otherwise. */
ntp_status ntp__dnnl_status_error(ntp_ctx *ctx, const char *who, const ntp_graph *g,
                                  const ntp_node *n, dnnl_status_t st, const char *what);
/* A (batched) matmul step src x wei -> dst, scaled, with an optional mask
 * post-op (attention.c; attention and kv_attention). */
ntp_status ntp__dnnl_matmul_step(odnn_build *b, const char *op, int src, int wei, int dst,
                                 float scale, int mask, const char *suffix, bool main);
/* Record a message about the layer with status st. */
ntp_status ntp__dnnl_fail(odnn_build *b, ntp_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
dnnl_data_type_t ntp__dnnl_dt(ntp_dtype t);
/* Plain row-major descriptor of a shape (rank 0 is [1]). */
dnnl_status_t ntp__dnnl_plain_md(dnnl_memory_desc_t *md, const ntp_shape *s, dnnl_data_type_t dt);
/* The same plain descriptor from explicit dims. */
dnnl_status_t ntp__dnnl_plain_dims(dnnl_memory_desc_t *md, int nd, const int64_t *dims,
                                   dnnl_data_type_t dt);
/* md with another data type, when the layout allows it (plain or blocked
 * without extra flags); false otherwise. */
bool ntp__dnnl_md_with_dt(const dnnl_memory_desc_t *md, dnnl_data_type_t dt,
                          dnnl_memory_desc_t *out);
bool ntp__dnnl_md_is_plain(const dnnl_memory_desc_t *md);
/* md's layout for a prediction's key: "blocked" (inner blocks, nChw16c),
 * "plain" (ntp__dnnl_md_is_plain), "nspc" (channels last, nhwc), "strided"
 * (any other); NULL for none or an opaque one. */
const char *ntp__dnnl_md_layout(const dnnl_memory_desc_t *md);
/* An attribute with a user scratchpad, destroyed with the build. */
ntp_status ntp__dnnl_attr(odnn_build *b, dnnl_primitive_attr_t *attr);
/* Create a primitive descriptor (destroyed with the build). */
ntp_status ntp__dnnl_pd(odnn_build *b, dnnl_primitive_desc_t *pd, const void *desc,
                        const_dnnl_primitive_attr_t attr, const char *what);
/* A reorder primitive descriptor from src to dst with a common output scale
 * (1 for none). */
ntp_status ntp__dnnl_reorder_pd(odnn_build *b, dnnl_primitive_desc_t *pd,
                                const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst,
                                float scale);
/* The memory descriptor a primitive descriptor wants for query q / arg. */
const dnnl_memory_desc_t *ntp__dnnl_query(const_dnnl_primitive_desc_t pd, dnnl_query_t q, int i);
const dnnl_memory_desc_t *ntp__dnnl_arg_md(const_dnnl_primitive_desc_t pd, int arg);
/* Add a memory object; returns its index in *idx. */
ntp_status ntp__dnnl_mem(odnn_build *b, const dnnl_memory_desc_t *md, odnn_bind bind, int i,
                         size_t off, int *idx);
/* Another view (descriptor) of the same bytes as memory idx: a 2-d view of
 * a plain n-d tensor, a transposed view. */
ntp_status ntp__dnnl_alias(odnn_build *b, int idx, const dnnl_memory_desc_t *md, int *out);
/* A temporary in the workspace (64-byte aligned). */
ntp_status ntp__dnnl_ws_mem(odnn_build *b, const dnnl_memory_desc_t *md, int *idx);
/* A buffer the node owns, zero-filled, with memory object. */
ntp_status ntp__dnnl_own_mem(odnn_build *b, const dnnl_memory_desc_t *md, int *idx);
/* Add a step running pd with (arg, mem) pairs; its scratchpad is bound to
 * the workspace. suffix "" and type NULL mark the main step. */
ntp_status ntp__dnnl_step(odnn_build *b, const_dnnl_primitive_desc_t pd, const char *suffix,
                          const char *type, int n, const int *args, const int *mems);
/* Add a host step running fn with data (malloc'd; the node frees it). */
ntp_status ntp__dnnl_host_step(odnn_build *b, odnn_host_fn fn, void *data, const char *suffix);
/* Where memory m of the node points during this execute. */
void *ntp__dnnl_bound_ptr(const odnn_node *nd, const odnn_mem *m, const ntp_kargs *k);
/* Make this step the main one and take its implementation name. */
void ntp__dnnl_set_main(odnn_build *b, const_dnnl_primitive_desc_t pd);

/* Scale of activation buffer `buf` for dequantisation: the calibrated scale
 * for s8 storage at the i8 precision, 1 otherwise. Fails on a missing
 * scale. */
ntp_status ntp__dnnl_act_scale(odnn_build *b, ntp_dtype storage, float calibrated, int which,
                               bool is_out, float *scale);
/* The descriptor input i is stored in: the producer's layout when internal,
 * else plain with the buffer's type. */
ntp_status ntp__dnnl_in_md(odnn_build *b, int i, dnnl_memory_desc_t *md);
/* A memory object holding input i in descriptor `want`, with value scale
 * `want_scale` (s8 data: real = q * scale; 1 for float types): the input
 * itself, or a workspace copy made by a reorder step. */
ntp_status ntp__dnnl_input(odnn_build *b, int i, const dnnl_memory_desc_t *want, float want_scale,
                           int *idx);
/* Input i's descriptor with data type dt: its own layout when only the type
 * changes, else plain. For layers that follow their input's layout. */
ntp_status ntp__dnnl_follow_md(odnn_build *b, int i, dnnl_data_type_t dt, dnnl_memory_desc_t *md);
/* Input i as a plain tensor of type dt (real values). */
ntp_status ntp__dnnl_plain_input(odnn_build *b, int i, dnnl_data_type_t dt, int *idx);
/* The same for any memory already in the node (post_in operands). */
ntp_status ntp__dnnl_convert(odnn_build *b, int src_idx, const dnnl_memory_desc_t *src_md,
                             float src_scale, const dnnl_memory_desc_t *want, float want_scale,
                             const char *suffix, int *idx);
/* Where the main primitive writes output i, given the descriptor it
 * produces with value scale `have_scale`: the output itself (plain, or an
 * internal layout recorded for the consumers), or a workspace temporary
 * reordered into the output after the main step (ntp__dnnl_finish). */
ntp_status ntp__dnnl_output(odnn_build *b, int i, const dnnl_memory_desc_t *have, float have_scale,
                            int *idx);
/* Add the pending output reorders. */
ntp_status ntp__dnnl_finish(odnn_build *b);
/* Reorder f32 `data` (described by user_md) into a new owned buffer in
 * `want`, once, now; per-channel scales (mask) when scales != NULL. */
ntp_status ntp__dnnl_pack(odnn_build *b, const void *data, const dnnl_memory_desc_t *user_md,
                          const dnnl_memory_desc_t *want, const float *scales, int n_scales,
                          int mask, int *idx);
/* Weight i as a malloc'd f32 array (converted from its storage type). */
ntp_status ntp__dnnl_weight_f32(odnn_build *b, int i, float **out);
/* Run a one-off reorder now (prepare time). */
ntp_status ntp__dnnl_reorder_now(odnn_build *b, const dnnl_memory_desc_t *src_md, void *src,
                                 const dnnl_memory_desc_t *dst_md, void *dst, const float *scales,
                                 int n_scales, int mask);
/* Group the steps into rows (after the build). */
void ntp__dnnl_make_rows(odnn_node *nd);
/* Sub-steps and execution. */
ntp_status ntp__dnnl_run_step(ntp_ctx *ctx, odnn_state *s, odnn_node *nd, const ntp_kargs *k,
                              int step);
void ntp__dnnl_node_free(odnn_node *nd);
/* Remember the layout of tensor t (for post_in lookups). */
void ntp__dnnl_record_layout(odnn_build *b, int out_slot, const dnnl_memory_desc_t *md);
const dnnl_memory_desc_t *ntp__dnnl_tensor_layout(odnn_state *s, const ntp_graph *g, int tensor);

/* Is dtype t usable for op `op` on this CPU (probed once by creating a small
 * primitive of that family)? */
bool ntp__dnnl_dtype_ok(ntp_op op, dnnl_data_type_t t);
/* Must int8 GEMM weights stay within 7 bits on this CPU (no VNNI)? */
bool ntp__dnnl_int8_needs_7bit(void);
/* Set the OpenMP thread count oneDNN uses (0: all cores). */
void ntp__dnnl_set_threads(int n);

/* --- op families (one file each) ---------------------------------------- */
/* Each supports_* says whether the layer fits oneDNN; each build_* prepares
 * it. */
bool ntp__dnnl_conv_supports(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__dnnl_conv_build(odnn_build *b);
bool ntp__dnnl_matmul_supports(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__dnnl_matmul_build(odnn_build *b);
bool ntp__dnnl_pool_supports(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__dnnl_pool_build(odnn_build *b);
/* The geometry pool_build gives oneDNN (training's backward reuses it):
 * kernel, strides, dilation (from 0) and both paddings per spatial dim;
 * false where pool_supports is. */
bool ntp__dnnl_pool_geometry(const ntp_graph *g, const ntp_node *n, dnnl_dim_t *kernel,
                             dnnl_dim_t *strides, dnnl_dim_t *dil, dnnl_dim_t *pl, dnnl_dim_t *pr);
bool ntp__dnnl_norm_supports(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__dnnl_norm_build(odnn_build *b);
bool ntp__dnnl_eltwise_supports(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__dnnl_eltwise_build(odnn_build *b);
/* The eltwise algorithm and its alpha/beta for an activation layer. */
bool ntp__dnnl_eltwise_alg(const ntp_node *n, dnnl_alg_kind_t *alg, float *alpha, float *beta);
bool ntp__dnnl_binary_supports(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__dnnl_binary_build(odnn_build *b);
bool ntp__dnnl_concat_supports(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__dnnl_concat_build(odnn_build *b);
bool ntp__dnnl_rnn_supports(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__dnnl_rnn_build(odnn_build *b);
/* oneDNN's gate g is ONNX's gate map[g] (LSTM: ONNX i, o, f, c against
 * oneDNN's i, f, c, o; GRU's z, r, h are oneDNN's u, r, o; RNN one gate). */
const int *ntp__dnnl_rnn_gate_map(ntp_op op);
bool ntp__dnnl_attention_supports(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__dnnl_attention_build(odnn_build *b);
/* kv_attention (docs/decoders.md) at f32: oneDNN matmuls and softmax over
 * the cache's capacity with a mask, the cache written by a host step. */
bool ntp__dnnl_kv_attention_supports(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__dnnl_kv_attention_build(odnn_build *b);
/* rmsnorm at f32 from oneDNN's square, mean reduction and binary mul. */
bool ntp__dnnl_rmsnorm_supports(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__dnnl_rmsnorm_build(odnn_build *b);
bool ntp__dnnl_reduce_supports(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__dnnl_reduce_build(odnn_build *b);
bool ntp__dnnl_move_supports(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__dnnl_move_build(odnn_build *b);

/* Post-ops of a fusion group (conv, fc, matmul, attention heads):
 * activations and binary operands of k->fused[] (int8 operands with their
 * scales, k->post_scale), then a multiplication by out_scale into the
 * output's int8 grid (1: none); adds the
 * binary operands' memories to args/mems from *n. With head_div non-NULL
 * the head's int8 output scales are set after this call, divided by
 * *head_div, which may absorb changes of scale (fuse.c). A head whose
 * primitive writes a 2-d view of its output (fc, attention) passes that
 * view's dims (view_nd > 0) so that a plain binary operand is viewed the
 * same way. */
ntp_status ntp__dnnl_post_ops(odnn_build *b, dnnl_primitive_attr_t attr, float out_scale,
                              float *head_div, int view_nd, const int64_t *view_dims, int *n,
                              int *args, int *mems);

/* Fusion that never loses (fuse.c). The class of an implementation oneDNN
 * reports: 0 reference ("ref:any"), 1 GEMM-based ("x64:gemm:jit"), 2 a
 * direct JIT kernel ("jit:...", "brgconv:..."). */
int ntp__dnnl_impl_rank(const char *impl);
/* The first binary layer (add, mul) of the group at or after `from`, or -1. */
int ntp__dnnl_first_binary(const ntp_kargs *k, int from);
/* Should the head keep k->fused[cut ..] out of its post-ops? `fused` is
 * the head's primitive with all of them, `apart` the one with
 * k->fused[0 .. cut) only (cut: the first binary layer). Declines when the
 * fused primitive is of a worse class (conv + residual add on oneDNN 2.6's
 * AVX-512 falls from brgconv to x64:gemm:jit, 4-6x slower) or when a
 * binary operand's layout is not the destination's (2.6's GEMM convolution
 * then reads the operand in the destination's order: bf16 ResNet-50 with
 * --fuse ended 0.69 relative L2 from f32). Writes the reason to why. */
bool ntp__dnnl_decline_fusion(odnn_build *b, const_dnnl_primitive_desc_t fused,
                              const_dnnl_primitive_desc_t apart, int cut, char *why,
                              size_t why_size);
/* Run k->fused[first ..] after the head instead of in its post-ops:
 * fused[first] (a binary layer) as oneDNN's binary primitive on the head's
 * result (memory src_idx in descriptor src_md), the layers after it as its
 * post-ops, into output 0. Appends its implementation and `why` to the
 * node's impl string. */
ntp_status ntp__dnnl_post_tail(odnn_build *b, int first, int src_idx,
                               const dnnl_memory_desc_t *src_md, const char *why);

extern const ntp_backend_i ntp__backend_onednn;

/* --- backward.c: training backward (docs/train.md) ------------------------ */
bool ntp__odnn_supports_backward(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__odnn_backward(ntp_ctx *ctx, void *state, const ntp_backward_args *a);
/* Training forward (forward-training primitives, the same descriptors as
 * the backward's; binary add, concat; backward.c). */
bool ntp__odnn_supports_train_forward(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__odnn_train_forward(ntp_ctx *ctx, void *state, const ntp_train_fwd_args *a);
/* Free the backward primitives s keeps. */
void ntp__odnn_backward_release(odnn_state *s);
/* --- rnn-backward.c: lstm, gru and rnn backward through time -------------- */
bool ntp__odnn_rnn_supports_backward(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__odnn_rnn_backward(ntp_ctx *ctx, odnn_state *s, const ntp_backward_args *a);
/* Their training forward: the forward-training primitive the backward
 * reads the workspace of (then skipping its own run). */
ntp_status ntp__odnn_rnn_forward(ntp_ctx *ctx, odnn_state *s, const ntp_train_fwd_args *a);
void ntp__odnn_rnn_backward_release(odnn_state *s);

#endif
