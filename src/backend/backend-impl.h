/* The backend interface, private to libntprof.
 *
 * A backend is a method table (like SQLite's sqlite3_io_methods): a versioned
 * struct of function pointers filled with designated initialisers. Optional
 * slots may be NULL; the engine supplies the default. Preparing (creating
 * primitives, packing weights) is separate from executing and is timed
 * separately, as oneDNN, XNNPACK and benchdnn all split create from execute. */
#ifndef NTPROF_BACKEND_IMPL_H
#define NTPROF_BACKEND_IMPL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include "graph/graph-impl.h"

#define NTP_BACKEND_API_VERSION 1

/* Layers one fusion group can fold after its head. */
#define NTP_MAX_FUSED 4

/* A tensor as a kernel sees it: data, shape and storage type. */
typedef struct ntp_buf {
    void *data;
    ntp_shape shape;
    ntp_dtype dtype;
} ntp_buf;

/* The key/value cache of one kv_attention layer (docs/decoders.md): state
 * that outlives a pass, owned by whoever drives the decode loop
 * (ntp_generate), not by the plan's arena, and bound into the plans of the
 * prefill and the decode passes alike. K and V are each [batch, kv_heads,
 * capacity, head_dim] in `dtype` (f32, bf16, f16 or i8). A pass of S tokens
 * writes positions len .. len+S-1 of every layer and attends over 0 ..
 * len+S-1; the driver then advances len by S. */
typedef struct ntp_kv_state {
    void *k, *v;
    /* i8 caches: one scale per (sequence, kv head, position) for the
     * keys and one for the values, [batch, kv_heads, capacity] f32: a row
     * of head_dim values x is stored as round(x / s) with s = max|x| / 127
     * (ntp__i8_scale) and read back as q * s. NULL for other types. */
    float *k_scale, *v_scale;
    /* Layers with a padding mask (a 4th input): per (sequence, position),
     * [batch, capacity], 1 when the position holds a token, 0 padding no
     * query attends to; written with the keys. NULL without a mask. */
    uint8_t *keep;
    ntp_dtype dtype;
    int64_t batch, kv_heads, head_dim, capacity;
    int64_t len; /* positions cached before this pass */
    /* A backend's copy of the cache in its own memory (the CUDA backend's
     * on the GPU, src/backend/cuda/decoder.c), made by the first pass that
     * runs the layer there; the host's arrays above stay the cache every
     * backend reads. Freed with the cache by mirror_free. NULL: none. */
    void *mirror;
    void (*mirror_free)(void *mirror);
} ntp_kv_state;

/* Everything a kernel needs to run one node (or one fusion group).
 *
 * Placement: the engine puts every layer on a backend (the run's backend if
 * it supports the layer, else the layer's `backend=` request, else the
 * reference backend) and inserts conversion steps, shown as their own rows,
 * where a tensor crosses between backends whose storage types differ. At
 * such a boundary a tensor is always in plain row-major layout.
 *
 * Layouts: a tensor whose producer and every consumer run on the same
 * backend is "internal" (in_internal / out_internal): that backend may
 * store it in a layout of its own (oneDNN's blocked formats). The producer's
 * prepare records what it chose in *out_layout[i] (a pointer the backend
 * owns and frees in release_node); the consumer's prepare reads it from
 * *in_layout[i]. Prepare runs in execution order, so a producer is always
 * prepared before its consumers. A backend that needs more bytes than the
 * plain size for an internal output sets out_bytes[i] in prepare; the arena
 * is planned after every prepare, and data pointers are valid from the first
 * execute on (not during prepare).
 *
 * Fusion (--fuse): when the backend's `fusable` accepts them, the engine
 * folds a chain of layers that follow the head (bias/activation/residual add
 * after conv, fc or matmul) into a group: k->node is the head, k->fused[]
 * the folded layers in order, k->out[0] the LAST folded layer's output, and
 * k->post_in[] the other operand of each folded binary layer (NULL data for
 * unary ones). The folded layers are not executed; reports show them as
 * fused into the head. The folded layers need not follow the head
 * directly in execution order (each is the only reader of the result
 * before it, and its other operand was made before the head).
 *
 * Batch norms (--fuse) are folded by the engine, not the backend: a conv,
 * deconv or fc followed by an inference batch norm arrives as a layer of
 * a rewritten graph (k->g) that has a bias and writes the batch norm's
 * output, with the folded weights in k->w (exec-impl.h). */
typedef struct ntp_kargs {
    const ntp_graph *g;
    const ntp_node *node;
    int n_in;
    ntp_buf in[NTP_MAX_INPUTS];
    int n_w;
    ntp_buf w[NTP_MAX_WEIGHTS];
    int n_out;
    ntp_buf out[NTP_MAX_OUTPUTS];
    void *workspace; /* workspace_bytes as asked for by prepare */
    size_t workspace_bytes;
    int threads;
    /* Placement and layouts (see above). */
    bool in_internal[NTP_MAX_INPUTS];
    bool out_internal[NTP_MAX_OUTPUTS];
    void **in_layout[NTP_MAX_INPUTS];
    void **out_layout[NTP_MAX_OUTPUTS];
    int64_t out_bytes[NTP_MAX_OUTPUTS]; /* plain storage bytes; prepare may raise */
    /* Fusion group (n_fused == 0 for a plain layer). */
    int n_fused;
    const ntp_node *fused[NTP_MAX_FUSED];
    ntp_buf post_in[NTP_MAX_FUSED];
    /* int8 runs: per-tensor activation scales from the calibration pass
     * (x ~ q * scale); 0 when not calibrated. Weight scales are the
     * backend's business (per output channel). */
    float in_scale[NTP_MAX_INPUTS];
    float out_scale[NTP_MAX_OUTPUTS];
    float post_scale[NTP_MAX_FUSED]; /* of post_in[i] */
    /* kv_attention: the layer's cache, or NULL (attention over the pass's
     * own tokens only, as in a plain `run`). */
    ntp_kv_state *kv;
    /* A framework unit (ntp_unit, the backend's supports_unit said yes):
     * the step runs the unit's layers g->order[pos .. last] as one. in[0]
     * is the one tensor they read from outside, out[0] the last layer's
     * output; node is the first layer and w its weights only: the unit's
     * parameters are its slices, read from unit_w[tensor] (f32 data, valid
     * during prepare, per tensor of k->g). NULL for an ordinary step. */
    const ntp_unit *unit;
    const void *const *unit_w;
} ntp_kargs;

/* Options only accelerators read (docs/gpu.md); a host backend ignores
 * them. All zero (a designated initialiser that leaves them out) is the
 * default: no TF32, no replay, the measured range from the start. */
typedef struct ntp_device_opts {
    ntp_math_mode math; /* NTP_MATH_TF32: f32 layers may use TF32 tensor-core math */
    bool graph_replay;  /* replay whole passes as a captured device graph (--cuda-graph) */
    int first;          /* execution position the measured range starts at: steps
                         * before it run once, the range repeats (--only) */
} ntp_device_opts;

/* What init is given: the host options every backend reads and the device
 * options only accelerators read, in one struct so there is one init. */
typedef struct ntp_backend_opts {
    int threads; /* 0: all available cores */
    ntp_dtype precision;
    bool fuse; /* --fuse was given */
    ntp_device_opts device;
    /* "BACKEND.KEY=VALUE,..." (ntp_run_opts.backend_options); NULL: none.
     * A backend reads the entries that name it. */
    const char *options;
} ntp_backend_opts;

/* Where a backend's kernels run. A device backend keeps its tensors in
 * device memory and times its own work (elapsed_ms); reports and the
 * machine's ceilings (ntprof machine) tell its rows from the CPU's by this. */
typedef enum ntp_backend_kind {
    NTP_BACKEND_HOST,
    NTP_BACKEND_DEVICE,
} ntp_backend_kind;

/* One backward of a layer for training (docs/train.md), in f32 and plain
 * row-major layouts: x the layer's input, w its weight [F, ...] (conv:
 * [F, C/groups, k...]; batch and layer norm: the scale), dy the gradient of
 * its output. mode 1 (backward-data) writes dx, the gradient of x; mode 2
 * (backward-weights) writes dw and db (db NULL when the layer has no bias;
 * batch and layer norm: the scale's and the shift's). Outputs are
 * overwritten, not accumulated. The fields after db are read by the layers
 * that need them: y the layer's output (softmax), mean and var the batch
 * or row statistics of a norm (biased variance). A batch or layer norm
 * gives all three in one call, in either mode: dx, dw and db where each is
 * not NULL (the trainer asks for them together in mode 1). */
typedef struct ntp_backward_args {
    const ntp_graph *g;
    const ntp_node *n;
    int mode;
    const float *x, *w, *dy;
    float *dx, *dw, *db;
    const float *y, *mean, *var;
    /* A layer with two inputs (matmul): x2 the second and, in mode 1, dx2
     * its gradient; dx or dx2 NULL where that input takes no gradient. */
    const float *x2;
    float *dx2;
    /* A recurrent layer (lstm, gru, rnn; ONNX layouts and gate orders): w
     * its W [dirs, G·H, I], r its R [dirs, G·H, H], b its B [dirs, 2·G·H]
     * (NULL: no bias). Its backward is one call (mode 1) that writes dx
     * (NULL where the input takes no gradient), dw, dr and db (each NULL
     * where that weight takes no gradient). */
    const float *r, *b;
    float *dr;
    /* bf16 mixed precision (conv and fc, asked for only where the backend
     * supports the layer at bf16): x, w and dy hold bf16 values; the
     * backend runs its bf16 primitive on them and still writes f32 dx, dw
     * and db. */
    bool bf16;
} ntp_backward_args;

/* One forward of a layer in training mode (docs/train.md), in f32 and
 * plain row-major layouts: reads in[] (the layer's inputs) and w[] (its
 * weights as the node lists them: a conv's W and bias, a norm's scale and
 * shift), writes out (its output). A batch or layer norm normalises with
 * the batch's (the row's) own statistics and writes them to mean and var
 * (the biased variance); it leaves the running statistics to the caller.
 * What the layer's backward reads from its forward (max pooling's
 * workspace) the backend keeps until that backward. */
typedef struct ntp_train_fwd_args {
    const ntp_graph *g;
    const ntp_node *n;
    const float *in[NTP_MAX_INPUTS];
    const float *w[NTP_MAX_WEIGHTS];
    float *out;
    float *mean, *var;
} ntp_train_fwd_args;

typedef struct ntp_backend_i {
    int api_version;  /* NTP_BACKEND_API_VERSION */
    const char *name; /* "ref", "onednn", ... */
    const char *description;
    ntp_backend_kind kind; /* NTP_BACKEND_HOST (0, the default) or NTP_BACKEND_DEVICE */
    /* Place in the registry (src/backend/registry.c): higher comes first,
     * and the first is the default backend of a run. The reference backend
     * has NTP_BACKEND_PRIORITY_REF; a backend meant to be the default when
     * built sits above it, one that must be asked for by name below it. */
    int priority;
    /* Can this backend run node n at precision p? */
    bool (*supports)(const ntp_graph *g, const ntp_node *n, ntp_dtype p);
    /* Storage type of activations and weights at precision p (the reference
     * backend stores f32 and emulates reduced precisions exactly). NULL: p. */
    ntp_dtype (*storage_dtype)(ntp_dtype p);
    /* Create backend-wide state from the host and device options. NULL: no
     * state. */
    ntp_status (*init)(ntp_ctx *ctx, const ntp_backend_opts *opts, void **state);
    /* Prepare one node or group: create primitives, pack weights (k->w hold
     * the weights already; k->in/out hold shapes and storage types, their
     * data pointers are not valid yet). Set *workspace to the scratch bytes
     * execute needs. NULL: nothing to prepare and no workspace. */
    ntp_status (*prepare)(ntp_ctx *ctx, void *state, ntp_kargs *k, void **node_state,
                          size_t *workspace);
    /* Run one node. Required. */
    ntp_status (*execute)(ntp_ctx *ctx, void *state, void *node_state, const ntp_kargs *k);
    /* Wait for queued work (asynchronous devices). NULL: synchronous. */
    void (*synchronize)(void *state);
    /* Free what prepare made. NULL: nothing. */
    void (*release_node)(void *state, void *node_state);
    /* Free what init made. NULL: nothing. */
    void (*release)(void *state);

    /* --- optional (NULL means the default) -------------------------------- */
    /* May `next` be folded into the group that `head` leads (already holding
     * `n_fused` layers)? NULL: no fusion. */
    bool (*fusable)(const ntp_graph *g, const ntp_node *head, int n_fused, const ntp_node *next);
    /* Can this backend run unit u (ntp_unit: a framework's section that
     * the graph also holds as ordinary layers) as one step at precision p?
     * The engine then gives it the unit whole (ntp_kargs.unit) when the
     * run's backend is this one and no layer of it is placed elsewhere.
     * NULL: no units. */
    bool (*supports_unit)(const ntp_graph *g, const ntp_unit *u, ntp_dtype p);
    /* The implementation chosen for a prepared node ("brg:avx512_core_amx_bf16"),
     * shown per layer in reports. NULL: the backend's name. */
    const char *(*impl_name)(void *state, void *node_state);
    /* The layout of the source memory the node's main primitive reads:
     * "plain" (the graph's row-major layout), "blocked" (inner blocks, as
     * nChw16c), "nspc" (channels last, nhwc) or "strided" (any other). A
     * backend may run one kernel name at several speeds by it (oneDNN's
     * pooling on a conv's nhwc output against plain NCHW): a prediction keys its
     * correction by both (docs/predict.md#implementations). A static
     * string; NULL (or the member NULL): not known. */
    const char *(*src_layout)(void *state, void *node_state);
    /* Why a fusion the engine asked for was declined, in part or whole
     * ("add not fused: fused would run x64:gemm:jit"), shown per layer as
     * its fuse_note. NULL, or a NULL answer: nothing was declined. */
    const char *(*fuse_note)(void *state, void *node_state);
    /* Sub-steps timed as their own rows (reorders before and after the main
     * primitive): how many, and each one's row name suffix, type and the
     * bytes it reads and writes (*bytes arrives 0; left 0 when unknown, the
     * row then has no GB/s). Step `main_step` is the node itself. NULL: one
     * step, execute. */
    int (*n_steps)(void *state, void *node_state, int *main_step);
    void (*step_info)(void *state, void *node_state, int step, const char **suffix,
                      const char **type, int64_t *bytes);
    ntp_status (*execute_step)(ntp_ctx *ctx, void *state, void *node_state, const ntp_kargs *k,
                               int step);

    /* --- optional, for accelerators (docs/gpu.md) ------------------------- */
    /* Can this backend run at all on this machine (a device, a driver)?
     * false: `why` says why in one line ("no CUDA device (cudaGetDeviceCount:
     * ...)"), and the engine refuses a run that asks for the backend, by
     * --backend, a layer's backend= or --place, with "backend '<name>': <why>".
     * supports() must then answer false for every layer, so that drivers
     * that walk every backend skip this one. NULL: always available. */
    bool (*available)(char *why, size_t len);
    /* The device time of the sub-step that execute or execute_step just ran
     * and synchronize waited for, in ms (an asynchronous device times its own
     * work with events: the host clock around it would add the launch and
     * the wait). Negative: not known, use the host clock. The engine's
     * per-layer pass prefers it to its own clock when the slot is set.
     * NULL: the host clock. */
    double (*elapsed_ms)(void *state, void *node_state);
    /* Device memory the backend holds, for the run's memory figures: weights,
     * activations (its own buffers for internal tensors and for staging at
     * boundaries), workspace, and the high-water mark of all it allocated.
     * NULL: none (host memory only). */
    void (*device_memory)(void *state, int64_t *weights, int64_t *activations, int64_t *workspace,
                          int64_t *peak);

    /* --- optional, training (docs/train.md) ------------------------------- */
    /* Has the backend a backward for layer n (ntp_backward_args)? The
     * trainer runs every other layer's backward on its reference engine.
     * NULL: none. */
    bool (*supports_backward)(const ntp_graph *g, const ntp_node *n);
    ntp_status (*backward)(ntp_ctx *ctx, void *state, const ntp_backward_args *a);
    /* In mixed precision, a conv's and an fc's backward runs the backend's
     * bf16 primitives where supports() takes the layer at bf16 (it honours
     * ntp_backward_args.bf16). false: its f32 kernels read the bf16
     * values, and the trainer reports that backward as f32. */
    bool backward_bf16;
    /* Has the backend a training forward for layer n (ntp_train_fwd_args)?
     * The trainer runs every other layer's forward on its reference
     * engine. NULL: none. */
    bool (*supports_train_forward)(const ntp_graph *g, const ntp_node *n);
    ntp_status (*train_forward)(ntp_ctx *ctx, void *state, const ntp_train_fwd_args *a);
} ntp_backend_i;

/* The reference backend's priority. The registry's order today: onednn,
 * xnnpack, blas above it (the first built is the default), cuda below it
 * (a GPU is asked for by name, never picked by default). */
#define NTP_BACKEND_PRIORITY_REF 100

/* The reference kernels' revision, in the version a calibration of ref
 * records ("ntprof 0.1.0, ref kernels 2026-12-04.9"): ref's kernels are
 * ntprof's own code, so ntprof's release does not tell a change in their
 * speed. Move it when a kernel's speed changes (the date, .2 for a second
 * change that day, .3 a third): a calibration of ref made before is then reported
 * stale (docs/predict.md#bad-input). */
#define NTP_REF_KERNELS_REVISION "2026-12-04.9"

/* Registered backends, highest priority first (src/backend/registry.c). */
int ntp__backend_count(void);
const ntp_backend_i *ntp__backend_get(int i);
const ntp_backend_i *ntp__backend_find(const char *name);

/* Each backend defines `const ntp_backend_i ntp__backend_<name>`. */
extern const ntp_backend_i ntp__backend_ref;

/* --- the engine's side of the method table (src/backend/backend.c) ----------
 *
 * Callers outside the backends go through these, never through the slots:
 * each one supplies the documented default when its slot is NULL, so a
 * backend fills in only what it has. */
bool ntp__be_supports(const ntp_backend_i *be, const ntp_graph *g, const ntp_node *n, ntp_dtype p);
ntp_dtype ntp__be_storage_dtype(const ntp_backend_i *be, ntp_dtype p);
/* *state is NULL when the backend keeps no state. */
ntp_status ntp__be_init(const ntp_backend_i *be, ntp_ctx *ctx, const ntp_backend_opts *opts,
                        void **state);
/* *node_state and *workspace are NULL and 0 when the backend has nothing to
 * prepare. */
ntp_status ntp__be_prepare(const ntp_backend_i *be, ntp_ctx *ctx, void *state, ntp_kargs *k,
                           void **node_state, size_t *workspace);
ntp_status ntp__be_execute(const ntp_backend_i *be, ntp_ctx *ctx, void *state, void *node_state,
                           const ntp_kargs *k);
/* Sub-step `step` of a node; execute when the backend has no sub-steps. */
ntp_status ntp__be_execute_step(const ntp_backend_i *be, ntp_ctx *ctx, void *state,
                                void *node_state, const ntp_kargs *k, int step);
void ntp__be_synchronize(const ntp_backend_i *be, void *state);
/* Nothing to do for a NULL node_state / state. */
void ntp__be_release_node(const ntp_backend_i *be, void *state, void *node_state);
void ntp__be_release(const ntp_backend_i *be, void *state);
bool ntp__be_fusable(const ntp_backend_i *be, const ntp_graph *g, const ntp_node *head, int n_fused,
                     const ntp_node *next);
bool ntp__be_supports_unit(const ntp_backend_i *be, const ntp_graph *g, const ntp_unit *u,
                           ntp_dtype p);
/* The implementation a prepared node runs, interned: the pointer stays
 * valid for the life of the process (a report keeps it after the plan is
 * freed). The backend's name when the backend does not say. */
const char *ntp__be_impl_name(const ntp_backend_i *be, void *state, void *node_state);
/* The layout of a prepared node's source ("plain", "blocked", "nspc",
 * "strided");
 * NULL when the backend does not say. A static string. */
const char *ntp__be_src_layout(const ntp_backend_i *be, void *state, void *node_state);
/* Why a requested fusion was declined; NULL when nothing was. */
const char *ntp__be_fuse_note(const ntp_backend_i *be, void *state, void *node_state);
/* How many timed sub-steps a node has (1 and *main_step 0 by default). */
int ntp__be_n_steps(const ntp_backend_i *be, void *state, void *node_state, int *main_step);
/* A sub-step's row suffix ("" by default), type (NULL: the engine's) and
 * bytes (left as they came when unknown). */
void ntp__be_step_info(const ntp_backend_i *be, void *state, void *node_state, int step,
                       const char **suffix, const char **type, int64_t *bytes);
/* true when the backend can run here; else `why` (may be NULL) says why. */
bool ntp__be_available(const ntp_backend_i *be, char *why, size_t len);
/* The device time of the last sub-step in ms; negative: use the host clock. */
double ntp__be_elapsed_ms(const ntp_backend_i *be, void *state, void *node_state);
/* Device memory held, in bytes; all 0 for a host backend or no state. */
void ntp__be_device_memory(const ntp_backend_i *be, void *state, int64_t *weights,
                           int64_t *activations, int64_t *workspace, int64_t *peak);
bool ntp__be_is_device(const ntp_backend_i *be);
/* Training: whether be has a backward for n (false when the slot is
 * NULL), and running it. */
bool ntp__be_supports_backward(const ntp_backend_i *be, const ntp_graph *g, const ntp_node *n);
/* Whether n's backward on be runs bf16 primitives in mixed precision: a
 * conv or an fc be has a backward for and supports at bf16, on a backend
 * whose backward honours ntp_backward_args.bf16 (backward_bf16). */
bool ntp__be_backward_bf16(const ntp_backend_i *be, const ntp_graph *g, const ntp_node *n);
ntp_status ntp__be_backward(const ntp_backend_i *be, ntp_ctx *ctx, void *state,
                            const ntp_backward_args *a);
/* Training: whether be has a training forward for n, and running it. */
bool ntp__be_supports_train_forward(const ntp_backend_i *be, const ntp_graph *g, const ntp_node *n);
ntp_status ntp__be_train_forward(const ntp_backend_i *be, ntp_ctx *ctx, void *state,
                                 const ntp_train_fwd_args *a);

/* The first registered device backend (by priority), or NULL when this
 * build has none. */
const ntp_backend_i *ntp__backend_device(void);

/* One copy of `s` kept for the life of the process (implementation names:
 * a handful of distinct strings). NULL when out of memory. */
const char *ntp__be_intern(const char *s);

/* A kernel's error, naming the layer: "<file>:<line>: <op name='x'>:
 * <backend>: <message>" for a layer of a loaded graph, "<op name='x'>:
 * <backend>: <message>" for kernel arguments built by hand (tests, the
 * conformance driver), "<backend>: <message>" with no layer. `backend`
 * NULL leaves out the "<backend>: " part (the reference backend's
 * errors). */
ntp_status ntp__be_error(ntp_ctx *ctx, const char *backend, const ntp_graph *g, const ntp_node *n,
                         ntp_status st, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
ntp_status ntp__be_verror(ntp_ctx *ctx, const char *backend, const ntp_graph *g, const ntp_node *n,
                          ntp_status st, const char *fmt, va_list ap)
    __attribute__((format(printf, 6, 0)));
/* The same for a kernel's arguments (k may be NULL: no layer). */
ntp_status ntp__be_kerror(ntp_ctx *ctx, const char *backend, const ntp_kargs *k, ntp_status st,
                          const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
