/* The graph IR, private to libntprof.
 *
 * A graph is a set of tensors and nodes. Tensors are activations (produced
 * by a node or fed as a graph input) or weights (constants owned by a node).
 * Nodes reference tensors by index. After loading, `order` holds the nodes in
 * a topological order: the execution order every report uses. */
#ifndef NTPROF_GRAPH_IMPL_H
#define NTPROF_GRAPH_IMPL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include "ntprof/analyze.h"
#include "ntprof/graph.h"
#include "op-table.h"

typedef enum ntp_op {
#define NTP_OP_ENUM_(e, s, k, mi, ma, sh, co, in, pr, bw, tc, ox, on) NTP_OP_##e,
    NTP_OP_TABLE(NTP_OP_ENUM_)
#undef NTP_OP_ENUM_
        NTP_OP_COUNT
} ntp_op;

typedef enum ntp_op_kind { NTP_OP_KIND_LAYER, NTP_OP_KIND_INLAY } ntp_op_kind;

/* How an op's weights are generated (the op table's INIT column). */
typedef enum ntp_op_init {
#define NTP_OP_INIT_ENUM_(c) NTP_OP_INIT_##c,
    NTP_OP_INIT_CLASSES(NTP_OP_INIT_ENUM_)
#undef NTP_OP_INIT_ENUM_
} ntp_op_init;

/* The op table's class columns (op-table.h): data the upper layers select
 * their code by, with a switch over the class. */
typedef enum ntp_op_predict {
#define NTP_OP_PREDICT_ENUM_(c) NTP_OP_PREDICT_##c,
    NTP_OP_PREDICT_CLASSES(NTP_OP_PREDICT_ENUM_)
#undef NTP_OP_PREDICT_ENUM_
} ntp_op_predict;
typedef enum ntp_op_backward {
#define NTP_OP_BACKWARD_ENUM_(c) NTP_OP_BACKWARD_##c,
    NTP_OP_BACKWARD_CLASSES(NTP_OP_BACKWARD_ENUM_)
#undef NTP_OP_BACKWARD_ENUM_
} ntp_op_backward;
typedef enum ntp_op_torch {
#define NTP_OP_TORCH_ENUM_(c) NTP_OP_TORCH_##c,
    NTP_OP_TORCH_CLASSES(NTP_OP_TORCH_ENUM_)
#undef NTP_OP_TORCH_ENUM_
} ntp_op_torch;
typedef enum ntp_op_onnx {
#define NTP_OP_ONNX_ENUM_(c) NTP_OP_ONNX_##c,
    NTP_OP_ONNX_CLASSES(NTP_OP_ONNX_ENUM_)
#undef NTP_OP_ONNX_ENUM_
} ntp_op_onnx;

#define NTP_MAX_INPUTS 8
#define NTP_MAX_WEIGHTS 8
#define NTP_MAX_OUTPUTS 8

typedef enum ntp_layout {
    NTP_LAYOUT_ANY,  /* plain row-major, no channel semantics */
    NTP_LAYOUT_NCHW, /* channels second (NCW, NCHW, NCDHW): the default */
    NTP_LAYOUT_NHWC  /* channels last */
} ntp_layout;

typedef enum ntp_tensor_kind {
    NTP_TENSOR_INPUT,      /* graph input */
    NTP_TENSOR_ACTIVATION, /* produced by a node */
    NTP_TENSOR_WEIGHT,     /* trainable constant, counted in params */
    NTP_TENSOR_BUFFER      /* non-trainable constant (batch-norm statistics) */
} ntp_tensor_kind;

typedef struct ntp_tensor {
    char *name;
    ntp_shape shape;
    ntp_dtype dtype; /* storage type: the precision, or the input's dtype */
    ntp_layout layout;
    ntp_tensor_kind kind;
    int producer;      /* node index, -1 for inputs and constants */
    int producer_slot; /* which output of the producer */
    int n_consumers;
    bool is_output; /* a graph output */
    /* Constant data brought by the model (ONNX initialisers), f32 unless
     * data_dtype says otherwise; NULL means generated from the seed. */
    void *data;
    ntp_dtype data_dtype;
    int64_t offset; /* arena offset from the planner, -1 if unplanned */
} ntp_tensor;

enum { NTP_PAD_EXPLICIT, NTP_PAD_SAME_UPPER, NTP_PAD_SAME_LOWER, NTP_PAD_VALID };
enum { NTP_DIR_FORWARD, NTP_DIR_REVERSE, NTP_DIR_BIDIRECTIONAL };
enum { NTP_MERGE_CONCAT, NTP_MERGE_SUM };
enum { NTP_PADMODE_CONSTANT, NTP_PADMODE_REFLECT, NTP_PADMODE_EDGE };
/* Pad's index arithmetic, for every kernel of it (the reference backend's
 * forward, training's forward and backward): the input index that output
 * index o copies along a dim of n elements with begin pad pb, or -1 for a
 * constant-padded position. Inline: the kernels call it per element. */
static inline int64_t ntp__pad_src(int64_t o, int64_t pb, int64_t n, int mode)
{
    int64_t i = o - pb;
    if (i >= 0 && i < n)
        return i;
    if (mode == NTP_PADMODE_CONSTANT)
        return -1;
    if (mode == NTP_PADMODE_EDGE || n == 1)
        return i < 0 ? 0 : n - 1;
    /* Reflect without repeating the edge: period 2(n-1). */
    int64_t period = 2 * (n - 1);
    i %= period;
    if (i < 0)
        i += period;
    return i < n ? i : period - i;
}
enum { NTP_CTC_GREEDY, NTP_CTC_BEAM };
enum { NTP_HEAD_YOLO, NTP_HEAD_REGION };
enum { NTP_RNN_ACT_TANH, NTP_RNN_ACT_RELU };

/* Attributes that only one op family has, each family in its own struct.
 * They share storage in ntp_attrs' union: the node's op is the tag that
 * says which member is live (op-attrs.h declares, per op, which fields its
 * markup attributes fill). */
typedef struct ntp_resize_attrs {
    int mode;       /* NTP_RESIZE_NEAREST, _LINEAR, _CUBIC */
    int coord;      /* coordinate transformation, NTP_RESIZE_HALF_PIXEL... */
    int nearest;    /* nearest rounding, NTP_RESIZE_ROUND_PREFER_FLOOR... */
    double cubic_a; /* the cubic coefficient */
    bool exclude_outside;
    double extrapolation; /* value of samples outside the input */
    /* Per-dim scales as exact rationals scale_num[d] / scale_den[d]
     * (n_scales = rank), or n_scales 0 when the sizes are given (in the
     * shared dim list `shape`, op-onnx-impl.h). */
    int n_scales;
    int64_t scale_num[NTP_MAX_DIMS], scale_den[NTP_MAX_DIMS];
} ntp_resize_attrs;

/* A reduction's axes (n_axes 0: every axis), normalised to 0..rank-1 by
 * shape inference. */
typedef struct ntp_reduce_attrs {
    int n_axes;
    int64_t axes[NTP_MAX_DIMS];
} ntp_reduce_attrs;

/* ONNX's Slice as given: n starts and ends (1..rank values each), on
 * n_axes axes (0: the first n), with n_steps steps (0: all 1). */
typedef struct ntp_slice_attrs {
    int n;
    int64_t starts[NTP_MAX_DIMS], ends[NTP_MAX_DIMS];
    int n_axes;
    int64_t axes[NTP_MAX_DIMS];
    int n_steps;
    int64_t steps[NTP_MAX_DIMS];
} ntp_slice_attrs;

typedef struct ntp_lrn_attrs {
    int64_t size; /* channels summed over */
    double alpha, beta, bias;
} ntp_lrn_attrs;

/* The unary element-wise ops' parameters, one struct per family, each field
 * named for what it is (the markup and ONNX name it in parentheses). Their
 * ONNX names and defaults are in the ONNX attribute table (op-onnx-impl.h). */
typedef struct ntp_leaky_relu_attrs {
    double slope; /* y = slope * x below 0 (alpha) */
} ntp_leaky_relu_attrs;

typedef struct ntp_elu_attrs {
    double alpha; /* elu: alpha * (e^x - 1) below 0; celu: alpha * (e^(x/alpha) - 1) */
} ntp_elu_attrs;

typedef struct ntp_selu_attrs {
    double alpha, gamma; /* gamma * alpha * (e^x - 1) up to 0, gamma * x above */
} ntp_selu_attrs;

typedef struct ntp_hard_sigmoid_attrs {
    double slope, offset; /* max(0, min(1, slope * x + offset)) (alpha, beta) */
} ntp_hard_sigmoid_attrs;

typedef struct ntp_thresholded_relu_attrs {
    double threshold; /* x above the threshold, 0 elsewhere (alpha) */
} ntp_thresholded_relu_attrs;

typedef struct ntp_shrink_attrs {
    double lambd, bias; /* x + bias below -lambd, x - bias above lambd, 0 between */
} ntp_shrink_attrs;

typedef struct ntp_constant_attrs {
    bool trainable; /* the value is a weight (true) or a buffer */
} ntp_constant_attrs;

/* Attributes of every op: shared fields that several families read, each
 * op reading the ones it documents (docs/topology-format.md), then the
 * per-family structs. The reader refuses attributes an op does not have. */
typedef struct ntp_attrs {
    int64_t units;   /* fc out features; rnn hidden size; embedding dim */
    int64_t filters; /* conv/deconv output channels */
    bool bias;       /* has a bias: fc, conv, deconv, rnns, attention; default true */
    /* Spatial ops (conv, deconv, pools): nk = number of spatial dims. The
     * reader stores lists as written, with their counts (n_kernel, ...): a
     * single value means "every spatial dim", and a count of 0 means "not
     * given" (pool stride then defaults to the kernel). Shape inference
     * expands them to nk values and sets nk. */
    int nk;
    int n_kernel, n_stride, n_dilation, n_pad, n_output_padding;
    int64_t kernel[3];
    int64_t stride[3];
    int64_t dilation[3];
    int64_t pad[6]; /* begin for each spatial dim, then end */
    int pad_kind;   /* NTP_PAD_* */
    int64_t output_padding[3];
    int64_t groups;
    bool ceil_mode;
    bool count_include_pad;
    int64_t axis;    /* softmax, concat, split, flatten, layernorm */
    double min, max; /* clip; relu with max (clipped relu) */
    bool has_max;
    double epsilon; /* batchnorm, layernorm */
    int n_perm;
    int64_t perm[NTP_MAX_DIMS];
    int n_shape;
    int64_t shape[NTP_MAX_DIMS]; /* reshape target, 0 copies, -1 infers */
    int n_sizes;
    int64_t sizes[NTP_MAX_OUTPUTS]; /* split sizes */
    int n_pads;
    int64_t pads[2 * NTP_MAX_DIMS]; /* pad op: begin per dim, then end (only) */
    int pad_mode;                   /* NTP_PADMODE_* */
    double value;                   /* pad constant */
    int64_t vocab;                  /* embedding rows */
    int direction;                  /* NTP_DIR_* */
    int merge;                      /* NTP_MERGE_* for bidirectional */
    bool last_step;                 /* rnn: output only the last step */
    int rnn_act;                    /* NTP_RNN_ACT_* for the vanilla rnn */
    int64_t heads;                  /* attention */
    bool causal;
    bool transpose_a, transpose_b; /* matmul */
    /* mfcc */
    int64_t sample_rate, window, hop, n_fft, mel_bands, coefficients, context;
    /* ctc_decode */
    int decode; /* NTP_CTC_* */
    int64_t beam_width;
    char *alphabet; /* owned; labels are its characters, blank is last */
    /* convert */
    ntp_dtype to_dtype;
    ntp_layout to_layout;
    bool has_to_dtype, has_to_layout;
    /* Decoder ops (docs/decoders.md): kv_attention's key/value heads (0:
     * as many as heads) and the positions cached before the pass (costs
     * only); rope's head size and base; lm_head sharing the token
     * embedding's table. */
    int64_t kv_heads, head_dim, past;
    double theta;
    bool tied;
    int64_t delay_us; /* delay: microseconds busy-waited */
    /* darknet_head: Darknet's [yolo] or [region] at inference (NTP_HEAD_*),
     * its anchors per cell, classes and box coordinates, and [region]'s
     * softmax over the classes and background flag */
    int head;
    int64_t anchors, classes, coords;
    bool head_softmax, background;
    /* Tagged by the node's op. */
    union {
        ntp_resize_attrs resize;                     /* NTP_OP_RESIZE */
        ntp_lrn_attrs lrn;                           /* NTP_OP_LRN */
        ntp_constant_attrs constant;                 /* NTP_OP_CONSTANT */
        ntp_slice_attrs slice;                       /* NTP_OP_SLICE */
        ntp_reduce_attrs reduce;                     /* NTP_OP_REDUCE_* */
        ntp_leaky_relu_attrs leaky_relu;             /* NTP_OP_LEAKY_RELU */
        ntp_elu_attrs elu;                           /* NTP_OP_ELU, NTP_OP_CELU */
        ntp_selu_attrs selu;                         /* NTP_OP_SELU */
        ntp_hard_sigmoid_attrs hard_sigmoid;         /* NTP_OP_HARD_SIGMOID */
        ntp_thresholded_relu_attrs thresholded_relu; /* NTP_OP_THRESHOLDED_RELU */
        ntp_shrink_attrs shrink;                     /* NTP_OP_SHRINK */
    };
} ntp_attrs;

typedef struct ntp_node {
    char *name;
    ntp_op op;
    int line;                     /* source line, 0 if none */
    int n_in, in[NTP_MAX_INPUTS]; /* activation tensors */
    int n_w, w[NTP_MAX_WEIGHTS];  /* constant tensors, op-defined order */
    int w_decl;                   /* weights declared so far by shape inference */
    int n_out, out[NTP_MAX_OUTPUTS];
    ntp_attrs a;
    char *backend;       /* requested backend, NULL for the run's default */
    ntp_dtype precision; /* compute precision of this layer */
} ntp_node;

typedef struct ntp_marker {
    char *name;
    /* Node indices as the reader sets them; positions in g->order,
     * inclusive, once ntp__graph_finalize() has run. */
    int first, last;
    char *tool; /* NULL if none */
    int line;
} ntp_marker;

/* A span of layers that a framework backend may run as one unit of its own
 * (docs/darknet.md: a Darknet recurrent section, which the .cfg reader
 * unrolls into ntprof layers for every other backend). `text` is the
 * section as the framework reads it, `first` .. `last` the node indices of
 * its layers (the reader adds them consecutively; `last` writes the
 * section's output), `steps` the sequence length it runs over, and
 * `slices` its parameters in the framework's own order: n values of
 * tensor `tensor`'s f32 data from value `at` on. */
typedef struct ntp_unit_slice {
    int tensor;
    int64_t at, n;
} ntp_unit_slice;

typedef struct ntp_unit {
    char *kind; /* the framework that reads `text`: "darknet" */
    char *text;
    int first, last;
    int64_t steps;
    int n_slices;
    ntp_unit_slice *slices;
} ntp_unit;

typedef struct ntp_param {
    char *name;
    char *value; /* final value after overrides */
    int line;
} ntp_param;

struct ntp_graph {
    char *name;
    char *source; /* path or the name given for a memory buffer */
    ntp_dtype precision;
    ntp_tensor *tensors;
    int n_tensors, cap_tensors;
    ntp_node *nodes;
    int n_nodes, cap_nodes;
    int *inputs, n_inputs;   /* tensor indices of graph inputs */
    int *outputs, n_outputs; /* tensor indices of graph outputs */
    int *order;              /* node indices in execution order (n_nodes) */
    int *position;           /* inverse of order: position[node] */
    ntp_marker *markers;
    int n_markers;
    ntp_param *params;
    int n_params;
    ntp_unit *units; /* framework units (ntp_unit), none in most graphs */
    int n_units;
    /* The batch, set by the loader: the markup's param "batch", an ONNX
     * model's batch-like input dim (the value of its "batch" param); 0 when
     * the topology has none. */
    int64_t batch;
    int64_t arena_bytes; /* planned activation arena, after planning */
};

/* --- op table access ----------------------------------------------------- */
const char *ntp__op_name(ntp_op op);
ntp_op_kind ntp__op_kind(ntp_op op);
int ntp__op_min_inputs(ntp_op op);
int ntp__op_max_inputs(ntp_op op);
/* How the weight generator fills op's weights (INIT). */
ntp_op_init ntp__op_init(ntp_op op);
/* The class columns: predict's family, the backward FLOPs' class, the torch
 * backend's ATen operator, the ONNX exporter's emitter and its ONNX operator
 * (NULL: none of its own). */
ntp_op_predict ntp__op_predict(ntp_op op);
ntp_op_backward ntp__op_backward(ntp_op op);
ntp_op_torch ntp__op_torch(ntp_op op);
ntp_op_onnx ntp__op_onnx(ntp_op op);
const char *ntp__op_onnx_name(ntp_op op);
/* Look an op up by markup element name; returns NTP_OP_COUNT if unknown. */
ntp_op ntp__op_from_name(const char *name);
/* The unary element-wise family (NTP_UNARY_TABLE in op-table.h): whether op
 * is one, its ONNX operator (NULL: none one to one) and the ONNX attributes
 * the import understands, and its FLOPs per element. */
bool ntp__op_is_unary(ntp_op op);
const char *ntp__op_unary_onnx(ntp_op op);
const char *ntp__op_unary_onnx_attrs(ntp_op op);
int ntp__op_unary_flops(ntp_op op);
/* The unary op whose ONNX operator is op_type; NTP_OP_COUNT if none. */
ntp_op ntp__op_unary_from_onnx(const char *op_type);
/* The binary element-wise family (NTP_BINARY_TABLE): whether op is one, its
 * ONNX operator and the ONNX attributes the import understands, whether it
 * commutes, whether its output is a predicate (1 or 0; ONNX's bool), and its
 * FLOPs per output element with n_in inputs. */
bool ntp__op_is_binary(ntp_op op);
const char *ntp__op_binary_onnx(ntp_op op);
const char *ntp__op_binary_onnx_attrs(ntp_op op);
bool ntp__op_binary_commutes(ntp_op op);
bool ntp__op_binary_predicate(ntp_op op);
int64_t ntp__op_binary_flops(ntp_op op, int n_in);
/* The binary op whose ONNX operator is op_type; NTP_OP_COUNT if none. */
ntp_op ntp__op_binary_from_onnx(const char *op_type);

/* Shape inference for one node: reads its input tensors' shapes and its
 * attributes, sets its output tensors' shapes and dtypes and declares its
 * weights with ntp__node_add_weight(). Errors name the node. */
typedef ntp_status (*ntp_shape_fn)(ntp_ctx *ctx, ntp_graph *g, ntp_node *n);

typedef struct ntp_cost {
    int64_t macs;
    int64_t flops;
} ntp_cost;
/* Work of one node, from shapes already inferred. */
typedef void (*ntp_cost_fn)(const ntp_graph *g, const ntp_node *n, ntp_cost *c);

ntp_status ntp__op_infer_shape(ntp_ctx *ctx, ntp_graph *g, ntp_node *n);
void ntp__op_cost(const ntp_graph *g, const ntp_node *n, ntp_cost *c);
/* A recurrent node's input GEMM and recurrent GEMV parts (op-rnn.c,
 * docs/analysis.md): their count, 0 for any other node. */
int ntp__cost_parts(const ntp_graph *g, const ntp_node *n, ntp_cost_part *parts);

#define NTP_OP_DECL_(e, s, k, mi, ma, sh, co, in, pr, bw, tc, ox, on)    \
    ntp_status ntp__shape_##sh(ntp_ctx *ctx, ntp_graph *g, ntp_node *n); \
    void ntp__cost_##co(const ntp_graph *g, const ntp_node *n, ntp_cost *c);
NTP_OP_TABLE(NTP_OP_DECL_)
#undef NTP_OP_DECL_

/* --- building a graph ----------------------------------------------------- */
ntp_graph *ntp__graph_new(const char *name, const char *source);
/* Add a tensor; returns its index, or -1 on allocation failure. */
int ntp__graph_add_tensor(ntp_graph *g, const char *name, ntp_tensor_kind kind);
/* Add a node of op `op`; returns its index, or -1 on allocation failure.
 * Attributes get the op's defaults (ntp__attrs_default). */
int ntp__graph_add_node(ntp_graph *g, const char *name, ntp_op op, int line);
/* Index of the tensor named `name`, or -1. */
int ntp__graph_find_tensor(const ntp_graph *g, const char *name);
int ntp__graph_find_node(const ntp_graph *g, const char *name);
/* Defaults every op starts from: bias on, stride and dilation 1, groups 1,
 * epsilon 1e-5, axis -1, ... */
void ntp__attrs_default(ntp_attrs *a);
/* Op-specific defaults on top of those, as op-attrs.h declares them
 * (flatten axis 1, DeepSpeech's MFCC settings, an unbounded clip, ONNX's
 * defaults); ntp__graph_add_node applies both, so a reader only overwrites
 * what the file gives. Defined in op-attrs.c. */
void ntp__attrs_op_default(ntp_op op, ntp_attrs *a);
/* DeepSpeech's alphabet, used when a ctc_decode gives none. */
extern const char ntp__default_alphabet[];
/* Declare weight `suffix` of node n ("<node>.<suffix>") with a shape; kind is
 * NTP_TENSOR_WEIGHT or NTP_TENSOR_BUFFER. If the node already has a weight in
 * that slot (a model that brought its weights), the shapes must agree. It
 * may grow g->tensors: a shape function must not hold pointers into it
 * across this call. */
ntp_status ntp__node_add_weight(ntp_ctx *ctx, ntp_graph *g, ntp_node *n, const char *suffix,
                                ntp_tensor_kind kind, const ntp_shape *shape);
/* Validate (dangling inputs, cycles), order topologically, infer shapes,
 * check the memory budget (0: no budget). Called once after building. */
ntp_status ntp__graph_finalize(ntp_ctx *ctx, ntp_graph *g, int64_t max_memory);

/* Convenience accessors. */
static inline ntp_tensor *ntp__in(ntp_graph *g, const ntp_node *n, int i)
{
    return &g->tensors[n->in[i]];
}
static inline ntp_tensor *ntp__out(ntp_graph *g, const ntp_node *n, int i)
{
    return &g->tensors[n->out[i]];
}
static inline const ntp_tensor *ntp__cin(const ntp_graph *g, const ntp_node *n, int i)
{
    return &g->tensors[n->in[i]];
}
static inline const ntp_tensor *ntp__cout(const ntp_graph *g, const ntp_node *n, int i)
{
    return &g->tensors[n->out[i]];
}

/* --- errors ---------------------------------------------------------------- */
/* Record "SOURCE:LINE: <op name='node'>: message" in ctx and return st. */
ntp_status ntp__node_error(ntp_ctx *ctx, const ntp_graph *g, const ntp_node *n, ntp_status st,
                           const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Safe int64 arithmetic: return false on overflow. */
static inline bool ntp__mul_ok(int64_t a, int64_t b, int64_t *r)
{
    return !__builtin_mul_overflow(a, b, r);
}
static inline bool ntp__add_ok(int64_t a, int64_t b, int64_t *r)
{
    return !__builtin_add_overflow(a, b, r);
}

/* Bytes of a tensor at its dtype; -1 on overflow. */
int64_t ntp__tensor_bytes(const ntp_tensor *t);

/* Liveness-based placement of every activation and input tensor into one
 * arena; sets tensor offsets and g->arena_bytes. */
ntp_status ntp__graph_plan_memory(ntp_ctx *ctx, ntp_graph *g);
/* The same placement with sizes from `size` (a backend's storage sizes);
 * tensors produced before execution position `pin_before` and read at or
 * after it live to the end (for runs that repeat only a range). Writes
 * offsets[n_tensors] (-1 for constants) and the arena size. */
typedef int64_t (*ntp_tensor_size_fn)(const ntp_tensor *t, void *user);
/* The placement itself, for any set of buffers with lifetimes: item i of
 * size[i] bytes lives from time birth[i] to death[i] inclusive (an item
 * born at t may reuse the memory of one that died before t). Writes
 * offsets[] and the arena size; false on allocation failure. */
bool ntp__plan_intervals(int n, const int64_t *size, const int *birth, const int *death,
                         int64_t *offsets, int64_t *arena_bytes);
/* A deep copy of a finalized graph with every layer at precision p (for
 * fp32 baselines of reduced-precision runs and int8 calibration). Tensor
 * and node indices are the same as in g. */
ntp_status ntp__graph_clone(ntp_ctx *ctx, const ntp_graph *g, ntp_dtype p, ntp_graph **out);
ntp_status ntp__plan_memory(ntp_ctx *ctx, const ntp_graph *g, ntp_tensor_size_fn size, void *user,
                            int pin_before, int64_t *offsets, int64_t *arena_bytes);

#endif
