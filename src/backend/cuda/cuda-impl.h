/* The CUDA backend, private to libntprof (docs/gpu.md, docs/backends.md).
 *
 * Layers run on one GPU through cuDNN (convolution, deconvolution, pooling,
 * softmax, recurrent layers, tensor arithmetic), cuBLAS (fc, matmul and the
 * GEMMs of attention) and the few kernels of kernels.cu.
 *
 * Memory. The engine's tensors live in a host arena; a GPU needs its own.
 * Every tensor this backend touches gets a device buffer:
 *   - an *internal* tensor (producer and every consumer here, nothing
 *     converts or outputs it) lives only on the device: its producer asks
 *     for a buffer alive from its position to its last reader's, records it
 *     in the engine's layout slot (*out_layout) and in the state's table,
 *     and its readers use it directly; the host slot is never written;
 *   - a *boundary* tensor (a graph input or output, or one another backend
 *     produces or reads) is staged: a buffer alive for its layer only, filled
 *     from the host slot by the layer's ":h2d" sub-step, or copied to the
 *     host slot by its ":d2h" sub-step (which then waits for the copy, so
 *     the next backend reads finished data).
 * Buffers are requested while layers are prepared (in execution order) and
 * placed in one device arena by the engine's interval planner
 * (ntp__plan_intervals) at the first execute, when every layer has been
 * prepared; data pointers are resolved then. Weights are uploaded once at
 * prepare, into the layer's own allocation (timed as prepare). One device
 * workspace, the largest any layer asked for, is shared: layers run in
 * order on one stream.
 *
 * Time. Work is queued on one stream; synchronize waits for it. Each
 * sub-step is bracketed by two CUDA events, so elapsed_ms gives the
 * device's own time for the row, not the host's launch-and-wait time.
 *
 * Graph replay (--cuda-graph). execute() only records the layer; at the
 * pass's synchronize the recorded layers are launched as one CUDA graph,
 * captured the first time a sequence is seen and replayed after that. A
 * pass of one layer (the per-layer pass) runs eagerly, with its events. */
#ifndef NTPROF_CUDA_IMPL_H
#define NTPROF_CUDA_IMPL_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend-impl.h"
#include "cublas-dl.h"
#include "cuda-kernels.h"

/* cuBLAS's workspace: 32 MiB is what NVIDIA recommends for Hopper, and a
 * workspace of our own is what lets cuBLAS run inside a graph capture. */
#define CUDAB_BLAS_WS ((size_t)32 << 20)
/* The largest workspace a convolution algorithm may ask for. */
#define CUDAB_CONV_WS_MAX ((size_t)1 << 30)
/* Graph sequences kept for replay per plan. */
#define CUDAB_MAX_GRAPHS 8

/* A device buffer request, placed in the arena at the first execute. */
typedef struct cudab_buf {
    int64_t bytes;
    int birth, death; /* execution positions, inclusive */
    int64_t offset;
} cudab_buf;

/* What an internal tensor's producer hands its readers. */
typedef struct cudab_tensor {
    int buf;
    ntp_dtype dtype;
} cudab_tensor;

/* One activation operand of a layer. */
typedef struct cudab_io {
    int buf;     /* index into the state's buffers, -1: none */
    bool staged; /* a boundary tensor, copied at the h2d or d2h sub-step */
    int64_t bytes;
    void *d; /* device pointer, once bound */
} cudab_io;

struct cudab_state;
struct cudab_node;

/* Per-family hooks a layer's prepare fills in. */
typedef ntp_status (*cudab_run_fn)(ntp_ctx *ctx, struct cudab_state *s, struct cudab_node *nd,
                                   const ntp_kargs *k);
typedef void (*cudab_free_fn)(struct cudab_node *nd);

typedef struct cudab_node {
    const ntp_node *node;
    int pos;
    cudab_io in[NTP_MAX_INPUTS];
    cudab_io out[NTP_MAX_OUTPUTS];
    cudab_io post[NTP_MAX_FUSED];      /* the other operand of each folded binary layer */
    cudab_tensor rec[NTP_MAX_OUTPUTS]; /* handed to readers of internal outputs */
    bool has_rec[NTP_MAX_OUTPUTS];
    /* Weights on the device: one allocation, a pointer per weight. */
    void *w;
    int64_t w_bytes;
    void *wp[NTP_MAX_WEIGHTS];
    size_t ws; /* device workspace bytes */
    /* Sub-steps: [h2d], main, [d2h]. */
    int n_steps, main_step, h2d_step, d2h_step;
    bool replay_ok;  /* may run inside a captured graph */
    bool host_state; /* set by prepare: its run does host work (never replayed) */
    bool pinned;     /* its host buffers are page-locked */
    char impl[96];
    cudab_run_fn run;
    cudab_free_fn free_priv;
    void *priv; /* the family's own state */
    /* Folded layers as epilogue steps (--fuse). */
    int n_post;
    cudak_post post_op[CUDAK_MAX_POST];
    int post_operand[CUDAK_MAX_POST]; /* index into post[], -1 for functions */
} cudab_node;

/* A captured pass, replayed while the same layers are asked for. */
typedef struct cudab_graph {
    int n;
    cudab_node **seq;
    cudaGraphExec_t exec;
} cudab_graph;

typedef struct cudab_state {
    int device;
    cudaStream_t stream;
    cudnnHandle_t dnn;
    cublasHandle_t blas;
    bool tf32;
    bool graph_replay;
    int first; /* first measured position (--only) */
    /* The graph being prepared and its per-tensor table of internal tensors. */
    const ntp_graph *g;
    cudab_tensor **table;
    int n_tensors;
    /* Buffer requests and the arena. */
    cudab_buf *bufs;
    int n_bufs, cap_bufs;
    void *arena;
    int64_t arena_bytes;
    void *ws;
    size_t ws_bytes;
    void *blas_ws;
    bool bound;
    cudab_node **nodes; /* prepared layers, for binding */
    int n_nodes, cap_nodes;
    /* Accounting (docs/gpu.md): bytes held now and the high-water mark. */
    int64_t weight_bytes, held, peak;
    /* Events around the last timed sub-step. */
    cudaEvent_t ev0, ev1;
    cudab_node *timed;
    /* Host page ranges pinned for asynchronous copies (graph replay),
     * sorted and disjoint. */
    uintptr_t *pin_lo, *pin_hi;
    int n_pinned, cap_pinned;
    /* Graph replay: layers recorded by execute() since the last synchronize. */
    cudab_node **pending;
    const ntp_kargs **pending_k;
    int n_pending, cap_pending;
    cudab_graph graphs[CUDAB_MAX_GRAPHS];
    int n_graphs;
    bool replay_broken; /* a capture failed: passes run eagerly */
    /* The context of the last execute, for what synchronize finds (it has
     * no context of its own), and an error kept for the next call. */
    ntp_ctx *warn_ctx;
    ntp_status sticky;
    /* Training (backward.c): per-layer descriptors and the shared device
     * buffers of the backward; NULL until the first backward. */
    struct cudab_tstate *train;
} cudab_state;

/* --- errors (backend.c) ---------------------------------------------------------- */
/* Record "<op name='layer'>: cuda: message" (k may be NULL: "cuda:
 * message") and return st. */
#define ntp__cuda_error(ctx, k, st, ...) ntp__be_kerror(ctx, "cuda", k, st, __VA_ARGS__)
/* A failed CUDA runtime, cuDNN or cuBLAS call as a status with its name. */
ntp_status ntp__cuda_rt(ntp_ctx *ctx, const ntp_kargs *k, cudaError_t e, const char *what);
ntp_status ntp__cuda_dnn(ntp_ctx *ctx, const ntp_kargs *k, cudnnStatus_t e, const char *what);
ntp_status ntp__cuda_blas(ntp_ctx *ctx, const ntp_kargs *k, cublasStatus_t e, const char *what);

/* --- types and memory (backend.c, mem.c) --------------------------------------------- */
bool ntp__cuda_float_type(ntp_dtype t);
cudnnDataType_t ntp__cuda_dnn_type(ntp_dtype t);
cudaDataType_t ntp__cuda_blas_type(ntp_dtype t);
cudak_type ntp__cuda_k_type(ntp_dtype t);
/* A cuDNN descriptor for dims (padded with trailing 1s to at least 4 dims),
 * contiguous, or with the given element strides. */
ntp_status ntp__cuda_desc(ntp_ctx *ctx, const ntp_kargs *k, cudnnTensorDescriptor_t *d, ntp_dtype t,
                          int nd, const int64_t *dims, const int64_t *strides);
/* cudaMalloc with the state's accounting; *p NULL and an error on failure. */
ntp_status ntp__cuda_alloc(ntp_ctx *ctx, cudab_state *s, const ntp_kargs *k, void **p,
                           int64_t bytes, const char *what);
void ntp__cuda_free(cudab_state *s, void *p, int64_t bytes);
/* Ask for a device buffer alive from position birth to death. */
int ntp__cuda_request(cudab_state *s, int64_t bytes, int birth, int death);
/* Set up activation operands of a layer (internal or staged) and record
 * its internal outputs. */
ntp_status ntp__cuda_plan_io(ntp_ctx *ctx, cudab_state *s, ntp_kargs *k, cudab_node *nd);
/* Upload the layer's weights as they are (storage type), one allocation;
 * f32_vectors: rank-1 weights converted to f32 (biases, normalisation
 * parameters read by the kernels). */
ntp_status ntp__cuda_upload_weights(ntp_ctx *ctx, cudab_state *s, const ntp_kargs *k,
                                    cudab_node *nd, bool f32_vectors);
/* Place the arena, allocate it and the workspace, resolve every prepared
 * layer's pointers; pin the engine's host buffers at boundaries when graph
 * replay wants them. Idempotent. */
ntp_status ntp__cuda_bind(ntp_ctx *ctx, cudab_state *s, const ntp_kargs *k);
void ntp__cuda_unbind(cudab_state *s);
/* Page-lock the host pages under [p, p + bytes) (those not locked yet);
 * false when the driver refuses. */
bool ntp__cuda_pin(cudab_state *s, const void *p, int64_t bytes);
/* Upload host data to a new device allocation owned by the caller. */
ntp_status ntp__cuda_upload(ntp_ctx *ctx, cudab_state *s, const ntp_kargs *k, void **d,
                            const void *host, int64_t bytes, const char *what);

/* --- families: supports, prepare (sets nd->run, ws, impl) ------------------------------ */
bool ntp__cuda_conv_supports(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__cuda_conv_prepare(ntp_ctx *ctx, cudab_state *s, ntp_kargs *k, cudab_node *nd);

bool ntp__cuda_dense_supports(const ntp_graph *g, const ntp_node *n); /* fc, matmul, attention */
ntp_status ntp__cuda_dense_prepare(ntp_ctx *ctx, cudab_state *s, ntp_kargs *k, cudab_node *nd);

bool ntp__cuda_rnn_supports(const ntp_graph *g, const ntp_node *n, ntp_dtype p);
ntp_status ntp__cuda_rnn_prepare(ntp_ctx *ctx, cudab_state *s, ntp_kargs *k, cudab_node *nd);
/* The ONNX gate that feeds cuDNN's linear layer `lin` (0 .. gates-1) of
 * an LSTM (i,o,f,c -> i,f,c,o) or GRU (z,r,h -> r,z,h); identity for rnn. */
int ntp__cuda_rnn_onnx_gate(ntp_op op, int lin);

/* rmsnorm, rope, kv_attention, argmax (decoder.c) */
bool ntp__cuda_decoder_supports(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__cuda_decoder_prepare(ntp_ctx *ctx, cudab_state *s, ntp_kargs *k, cudab_node *nd);

/* pooling, norms, activations, softmax, binary, data movement, embedding */
bool ntp__cuda_misc_supports(const ntp_graph *g, const ntp_node *n, ntp_dtype p);
ntp_status ntp__cuda_misc_prepare(ntp_ctx *ctx, cudab_state *s, ntp_kargs *k, cudab_node *nd);
/* The element-wise function of an activation layer, false if none. */
bool ntp__cuda_act_fn(const ntp_node *n, cudak_post *p);

/* Apply the layer's folded layers (nd->post_op) to y (n elements) in place,
 * with an optional per-channel bias first. */
ntp_status ntp__cuda_epilogue(ntp_ctx *ctx, cudab_state *s, cudab_node *nd, const ntp_kargs *k,
                              ntp_dtype t, void *y, int64_t n, const float *bias, int64_t channels,
                              int64_t inner);
/* The bias pointer of a layer's weight i as uploaded (f32), or NULL. */
const float *ntp__cuda_weight_f32(const cudab_node *nd, int i);

/* --- training (backward.c, docs/train.md) ----------------------------------------- */
/* The layers with a backward here (a device present, f32 tensors). */
bool ntp__cuda_supports_backward(const ntp_graph *g, const ntp_node *n);
/* One layer's backward, synchronously: host buffers in and out. */
ntp_status ntp__cuda_backward(ntp_ctx *ctx, void *state, const ntp_backward_args *a);
/* The training forward of the same layers (batch norm with the batch's
 * statistics), synchronously: host buffers in and out. */
bool ntp__cuda_supports_train_forward(const ntp_graph *g, const ntp_node *n);
ntp_status ntp__cuda_train_forward(ntp_ctx *ctx, void *state, const ntp_train_fwd_args *a);
/* Free what the backward and the forward kept (descriptors, device
 * buffers); nothing when none ran. */
void ntp__cuda_train_release(cudab_state *s);

extern const ntp_backend_i ntp__backend_cuda;

#endif
