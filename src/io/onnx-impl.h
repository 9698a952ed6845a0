/* ONNX support, private to libntprof (docs/onnx.md).
 *
 *   onnx-proto.c    the file: mmap, a nesting check, protobuf-c unpack
 *   onnx-tensor.c   TensorProto -> constant tensors (raw, typed, external data)
 *   onnx-fold.c     constant folding of shape computations (int64 and f32)
 *   onnx-import.c   the graph: values, inputs, unsupported nodes, outputs
 *   onnx-map-*.c    one ONNX op -> one or more IR nodes
 *   onnx-export*.c  IR -> ONNX
 *
 * protobuf-c is generated at build time from Debian's onnx.proto
 * (cmake/ntp-onnx.cmake); its structs are only seen by these files. */
#ifndef NTPROF_ONNX_IMPL_H
#define NTPROF_ONNX_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include "graph/graph-impl.h"
#include "onnx/onnx.pb-c.h"

/* ONNX TensorProto.DataType values, shorter. */
enum {
    NTP_ONNX_UNDEFINED = 0,
    NTP_ONNX_FLOAT = 1,
    NTP_ONNX_UINT8 = 2,
    NTP_ONNX_INT8 = 3,
    NTP_ONNX_UINT16 = 4,
    NTP_ONNX_INT16 = 5,
    NTP_ONNX_INT32 = 6,
    NTP_ONNX_INT64 = 7,
    NTP_ONNX_STRING = 8,
    NTP_ONNX_BOOL = 9,
    NTP_ONNX_FLOAT16 = 10,
    NTP_ONNX_DOUBLE = 11,
    NTP_ONNX_UINT32 = 12,
    NTP_ONNX_UINT64 = 13,
    NTP_ONNX_COMPLEX64 = 14,
    NTP_ONNX_COMPLEX128 = 15,
    NTP_ONNX_BFLOAT16 = 16
};

/* The opsets the reader maps (docs/onnx.md). */
#define NTP_ONNX_MIN_OPSET 1
#define NTP_ONNX_MAX_OPSET 17
/* Nesting of messages (graphs in attributes, types in types) beyond this is
 * refused before unpacking: protobuf-c's unpacker recurses once per level. */
#define NTP_ONNX_MAX_NESTING 64

/* "FLOAT", "INT64", ... ("type 99" for unknown values, in a static buffer
 * per call site: use it in one message at a time). */
const char *ntp__onnx_dtype_name(int32_t dt);
/* Bytes per element of a fixed-size type, 0 for the others. */
size_t ntp__onnx_dtype_size(int32_t dt);
static inline bool ntp__onnx_is_float(int32_t dt)
{
    return dt == NTP_ONNX_FLOAT || dt == NTP_ONNX_FLOAT16 || dt == NTP_ONNX_DOUBLE ||
           dt == NTP_ONNX_BFLOAT16;
}

/* --- constant tensors (onnx-tensor.c) ------------------------------------- */

/* A tensor known at load time: an initializer, a Constant, a folded value
 * or a .pb file. Floating types are held as f32 in `f`, integer types and
 * bool as int64 in `i` (exactly one is non-NULL, even for 0 elements). */
typedef struct ntp_onnx_tensor {
    int32_t dtype; /* ONNX data type */
    ntp_shape shape;
    int64_t n; /* elements */
    float *f;
    int64_t *i;
} ntp_onnx_tensor;

/* A zeroed tensor of type dt and shape s; NULL when memory runs out or the
 * shape overflows. */
ntp_onnx_tensor *ntp__onnx_tensor_new(int32_t dt, const ntp_shape *s);
void ntp__onnx_tensor_free(ntp_onnx_tensor *t);
/* Free a tensor's data but not the struct (for one on the stack). */
void ntp__onnx_tensor_free_data(ntp_onnx_tensor *t);
/* Value k as a double / as an int64 whatever the storage. */
static inline double ntp__onnx_get_f(const ntp_onnx_tensor *t, int64_t k)
{
    return t->f ? (double)t->f[k] : (double)t->i[k];
}
static inline int64_t ntp__onnx_get_i(const ntp_onnx_tensor *t, int64_t k)
{
    if (t->i)
        return t->i[k];
    /* Saturating: a float outside int64 (or NaN, as 0) has no integer
     * value, and converting it is undefined behaviour. */
    float f = t->f[k];
    if (f != f)
        return 0;
    if (f >= 9223372036854775807.0f)
        return INT64_MAX;
    if (f <= -9223372036854775808.0f)
        return INT64_MIN;
    return (int64_t)f;
}

/* Decode a TensorProto into *out (which the caller frees). `src` names the
 * file in messages, `what` the tensor ("initializer 'w'", "attribute 'value'
 * of node 'c'"). External data is read from files under base_dir (NULL:
 * refused), which the paths must not leave. When `steal` is set and the
 * tensor holds f32 raw data, the buffer is taken from the message instead of
 * copied (the message keeps an empty raw_data). Every size is checked
 * against the shape before anything is allocated. */
ntp_status ntp__onnx_tensor_decode(ntp_ctx *ctx, const char *src, const char *base_dir,
                                   Onnx__TensorProto *tp, const char *what, bool steal,
                                   ntp_onnx_tensor *out);

/* --- files (onnx-proto.c) ---------------------------------------------------- */

/* Unpack an ONNX ModelProto from buf (refusing deep nesting first). On
 * failure *out is NULL and ctx says why, naming src. */
ntp_status ntp__onnx_unpack_model(ntp_ctx *ctx, const char *src, const uint8_t *buf, size_t len,
                                  Onnx__ModelProto **out);
/* Map a file read-only (a zero-length file gives an empty mapping). */
ntp_status ntp__onnx_map_file(ntp_ctx *ctx, const char *path, const uint8_t **buf, size_t *len);
void ntp__onnx_unmap_file(const uint8_t *buf, size_t len);
/* Read a serialized TensorProto file (the test data sets' input_N.pb). */
ntp_status ntp__onnx_read_pb(ntp_ctx *ctx, const char *path, ntp_onnx_tensor *out, char **name);

/* --- loading (onnx-import.c) ------------------------------------------------- */

/* A value given for a graph input at load time: used wherever a layer
 * needs that input as a constant (a Reshape's shape, a Clip's bounds), as
 * ONNX's backend tests feed them; the input stays a graph input for the
 * layers that read it at run time. */
typedef struct ntp_onnx_bind {
    const char *name;
    const ntp_onnx_tensor *value;
} ntp_onnx_bind;

/* Load an ONNX model into a finalized graph. */
ntp_status ntp__onnx_load_file(ntp_ctx *ctx, const char *path, const ntp_load_opts *opts,
                               const ntp_onnx_bind *binds, int n_binds, ntp_graph **out);
ntp_status ntp__onnx_load_memory(ntp_ctx *ctx, const void *buf, size_t len, const char *name,
                                 const ntp_load_opts *opts, const ntp_onnx_bind *binds, int n_binds,
                                 ntp_graph **out);

typedef struct ntp_onnx_names ntp_onnx_names;
/* A string -> int table (onnx-names.c): value names, and the names taken in
 * the graph being built or written. */
ntp_onnx_names *ntp__onnx_names_new(void);
void ntp__onnx_names_free(ntp_onnx_names *t);
/* The value of key k, or -1. */
int ntp__onnx_names_get(const ntp_onnx_names *t, const char *k);
/* Insert or overwrite; false when memory runs out. */
bool ntp__onnx_names_put(ntp_onnx_names *t, const char *k, int v);
/* A float attribute as the decimal it was most likely written as: the
 * shortest decimal that rounds to the same f32 (1e-5f gives 1e-5), so that
 * values written from markup come back exactly. */
double ntp__onnx_float_value(float f);

/* --- the importer's state, shared by onnx-import.c and onnx-map-*.c ---------- */

/* One ONNX value (a name in the graph). */
typedef struct ntp_onnx_value {
    const char *name;        /* borrowed from the model */
    int tensor;              /* IR tensor carrying it at run time, -1 if none yet */
    ntp_onnx_tensor *c;      /* its constant value, NULL if none (owned) */
    bool bound;              /* c was given for a graph input (ntp_onnx_bind) */
    bool is_input;           /* a graph input */
    int32_t dtype;           /* ONNX element type */
    Onnx__TensorProto *init; /* its initializer, decoded into c on first use */
    bool weight_taken;       /* c->f was handed to the graph: copy for later uses */
    int consumers;           /* nodes reading it */
    bool is_output;          /* a graph output */
    bool has_shape;          /* a graph input's declared shape, for Shape nodes */
    ntp_shape shape;
} ntp_onnx_value;

typedef struct ntp_onnx_map ntp_onnx_map;

typedef struct ntp_onnx_importer {
    ntp_ctx *ctx;
    const char *src; /* the path or name, for messages */
    char *base_dir;  /* for external data; NULL for memory buffers */
    Onnx__ModelProto *model;
    Onnx__GraphProto *gp;
    ntp_graph *g;
    int opset; /* of the default domain */
    const ntp_load_opts *opts;
    ntp_onnx_value *v;
    int n_v, cap_v;
    ntp_onnx_names *values;     /* value name -> index into v */
    ntp_onnx_names *used;       /* IR tensor names taken */
    ntp_onnx_names *used_nodes; /* IR node names taken (a namespace of their own) */
    /* Readers of each value (CSR over value indices: node index and input
     * slot), for the patterns; nodes a pattern has consumed are `done`. */
    int *cons_start, *cons_node, *cons_slot;
    bool *done;
    /* The node being mapped. */
    const Onnx__NodeProto *np;
    const char *node_name; /* its name, or a made-up one */
    int node_index;
    /* A decoder with past key/values (onnx-kv.c): its layers, and the
     * `past` param's value. */
    int kv_layers;
    int64_t kv_past;
    /* Its attention_mask input (renamed attention_mask.total, a constant of
     * ones at load time): the padding mask of the kv_attention layers. */
    bool kv_mask;
    int kv_mask_t; /* the [batch, seq_len] i32 input made for them, or -1 */
} ntp_onnx_importer;

/* A mapper turns the current node (x->np) into IR nodes. */
typedef ntp_status (*ntp_onnx_map_fn)(ntp_onnx_importer *x);
/* Why a node cannot be mapped, from its attributes and opset alone
 * (NULL: it can); for the one list of unsupported nodes. */
typedef const char *(*ntp_onnx_check_fn)(const ntp_onnx_importer *x, const Onnx__NodeProto *np);

struct ntp_onnx_map {
    const char *op_type;
    ntp_onnx_map_fn map;
    ntp_onnx_check_fn check; /* NULL: every node of the type maps */
    const char *attrs;       /* the attributes it understands, comma-separated */
};
/* The mappers of each family (onnx-map-*.c), NULL-terminated by op_type. */
extern const ntp_onnx_map ntp__onnx_map_nn[];
extern const ntp_onnx_map ntp__onnx_map_tensor[];
extern const ntp_onnx_map ntp__onnx_map_eltwise[];
const ntp_onnx_map *ntp__onnx_find_map(const char *op_type);
/* The mapper of a unary or binary element-wise op by its ONNX operator
 * (op-table.h's NTP_UNARY_TABLE and NTP_BINARY_TABLE), NULL if none;
 * ntp__onnx_find_map() looks there last. */
const ntp_onnx_map *ntp__onnx_find_family_map(const char *op_type);

/* Errors about the current node: "SRC: node 'n' (Conv, opset 11): ...". */
ntp_status ntp__onnx_err(ntp_onnx_importer *x, ntp_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Attributes of the current node. */
const Onnx__AttributeProto *ntp__onnx_attr(const ntp_onnx_importer *x, const char *name);
int64_t ntp__onnx_attr_i(const ntp_onnx_importer *x, const char *name, int64_t dflt);
double ntp__onnx_attr_f(const ntp_onnx_importer *x, const char *name, double dflt);
/* A string attribute into buf (dflt when absent). */
const char *ntp__onnx_attr_s(const ntp_onnx_importer *x, const char *name, const char *dflt,
                             char *buf, size_t len);
/* An ints attribute: its count (0 when absent, -1 with an error recorded
 * when it has more than max values or the wrong type). */
int ntp__onnx_attr_ints(ntp_onnx_importer *x, const char *name, int64_t *vals, int max);
int ntp__onnx_attr_floats(ntp_onnx_importer *x, const char *name, double *vals, int max);
/* The current node's attributes that map one to one onto op's fields (the
 * ONNX attribute table, graph/op-onnx-impl.h) into *a, ONNX's default where
 * the node gives none. */
void ntp__onnx_read_attrs(const ntp_onnx_importer *x, ntp_attrs *a, ntp_op op);

/* Inputs and outputs of the current node. */
bool ntp__onnx_has_in(const ntp_onnx_importer *x, int k);
bool ntp__onnx_has_out(const ntp_onnx_importer *x, int k);
/* Whether output k is read by anything (a node or the graph's outputs). */
bool ntp__onnx_out_used(const ntp_onnx_importer *x, int k);
bool ntp__onnx_out_is_graph_output(const ntp_onnx_importer *x, int k);
/* Whether the value named `name` is read (for checks, which see any node). */
bool ntp__onnx_value_used(const ntp_onnx_importer *x, const char *name);
ntp_onnx_value *ntp__onnx_in_value(ntp_onnx_importer *x, int k);
/* Input k as an IR tensor at run time: a constant that is not one yet
 * becomes a <constant> layer. Refused with NTP_STATUS_UNSUPPORTED: integer
 * run-time tensors (only <embedding> reads those: it takes the value's
 * tensor directly) and graph inputs of types ntprof does not run. */
ntp_status ntp__onnx_in_tensor(ntp_onnx_importer *x, int k, int *tensor);
/* Input k as a constant known at load time, or an error saying it must be. */
ntp_status ntp__onnx_in_const(ntp_onnx_importer *x, int k, const ntp_onnx_tensor **c);
/* Whether input k is a true constant (not only a bound graph input). */
bool ntp__onnx_in_is_const(ntp_onnx_importer *x, int k);
/* Shape of input k, whether constant or a run-time tensor. */
ntp_shape ntp__onnx_in_shape(ntp_onnx_importer *x, int k);
/* Decode value v's constant if it is an initializer; false on failure. */
ntp_status ntp__onnx_value_const(ntp_onnx_importer *x, ntp_onnx_value *v);

/* Bind output k of the current node to an IR tensor, or to a constant
 * (ownership passes). */
ntp_status ntp__onnx_out_tensor(ntp_onnx_importer *x, int k, int tensor);
ntp_status ntp__onnx_out_const(ntp_onnx_importer *x, int k, ntp_onnx_tensor *c);

/* Add an IR node for the current ONNX node: `suffix` NULL names it after
 * the ONNX node, else "<name>/<suffix>". Its n_out outputs are named after
 * the ONNX node's outputs when out_names is non-NULL, else made up. The
 * node's attributes start from the op defaults. Returns the node index or
 * -1 with an error recorded. */
int ntp__onnx_add_node(ntp_onnx_importer *x, ntp_op op, const char *suffix, const int *in, int n_in,
                       int n_out);
/* Attach a weight with f32 data (ownership passes) to node ni. */
ntp_status ntp__onnx_add_weight(ntp_onnx_importer *x, int ni, const char *name, float *data,
                                const ntp_shape *shape);
/* Attach constant c (an input value) as a weight of node ni, sharing its
 * data the first time and copying after. */
ntp_status ntp__onnx_add_weight_value(ntp_onnx_importer *x, int ni, ntp_onnx_value *v,
                                      const ntp_shape *shape);
/* Infer node ni's shapes now (later layers and folding read them). */
ntp_status ntp__onnx_infer(ntp_onnx_importer *x, int ni);
/* One IR node in a line: add, set up by the caller's attributes, infer; the
 * output tensor index in *out. */
ntp_status ntp__onnx_reshape(ntp_onnx_importer *x, int in, const ntp_shape *to, const char *suffix,
                             int *out);
ntp_status ntp__onnx_transpose(ntp_onnx_importer *x, int in, const int64_t *perm, int r,
                               const char *suffix, int *out);
/* A <constant> layer holding one value (a scalar), for scalings. */
ntp_status ntp__onnx_scalar(ntp_onnx_importer *x, float v, const char *suffix, int *t);
/* The IR node producing tensor t, or NULL. */
ntp_node *ntp__onnx_producer(ntp_onnx_importer *x, int t);

/* --- patterns (onnx-patterns.c) ---------------------------------------------- */

/* Subgraphs that exporters write for one layer the IR has: gelu's and
 * silu's formulas, layer normalisation before opset 17. When the current
 * node starts one, add the layer, mark the pattern's other nodes done and
 * set *matched. */
ntp_status ntp__onnx_patterns(ntp_onnx_importer *x, bool *matched);
/* The only reader of value `name` (its node index, and the input slot in
 * *slot), or -1 when it has none, several, or is a graph output. */
int ntp__onnx_sole_reader(const ntp_onnx_importer *x, const char *name, int *slot);
/* How many nodes read value `name`, and the i-th of them. */
int ntp__onnx_readers(const ntp_onnx_importer *x, const char *name);
int ntp__onnx_reader(const ntp_onnx_importer *x, const char *name, int i, int *slot);
/* Make node i the current node (for errors and naming). */
void ntp__onnx_set_node(ntp_onnx_importer *x, int i, char *buf, size_t len);

/* --- constant folding (onnx-fold.c) ------------------------------------------ */

/* Whether the op is evaluated at load time when its inputs are constants
 * (Shape and Size: when the input's shape is known). */
bool ntp__onnx_foldable(const char *op_type);
/* Evaluate the current node on constant inputs and bind its outputs. */
ntp_status ntp__onnx_fold(ntp_onnx_importer *x);

/* Shared helpers: normalise an axis against rank r (false when out of range). */
static inline bool ntp__onnx_axis(int64_t axis, int r, int64_t *out)
{
    if (axis < 0)
        axis += r;
    if (axis < 0 || axis >= r)
        return false;
    *out = axis;
    return true;
}

/* A new IR tensor named after base (made unique; onnx-import.c). */
int ntp__onnx_add_tensor(ntp_onnx_importer *x, const char *base, ntp_tensor_kind kind);

/* --- decoders with past key/values (onnx-kv.c) -------------------------------- */

/* Before the values are built: recognise past_key_values inputs, rename
 * input_ids/position_ids to tokens/positions (i32) and their sequence dim
 * to seq_len, fix the past dim, drop the present outputs. */
ntp_status ntp__onnx_kv_prepare(ntp_onnx_importer *x);
/* Before the inputs: the `past` param (from ntp_load_opts.set past=N). */
ntp_status ntp__onnx_kv_params(ntp_onnx_importer *x);
/* After mapping: each layer's attention over the cache as a kv_attention,
 * the logits' fc as an lm_head. */
ntp_status ntp__onnx_kv_rewrite(ntp_onnx_importer *x);
/* After the outputs: an argmax of the logits (output next_token), the
 * max_positions param. */
ntp_status ntp__onnx_kv_outputs(ntp_onnx_importer *x);

#endif
