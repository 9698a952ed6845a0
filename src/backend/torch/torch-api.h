/* The C interface between the torch backend's method table (backend.c, C)
 * and libtorch (torch.cpp, the one C++ file of the project).
 *
 * torch.cpp is built as a module of its own, libntprof-torch.so, that the
 * backend opens with dlopen when a run first asks for it: linked into
 * libntprof, libtorch's 280 shared libraries would cost every ntprof
 * process seconds at start-up (3.7 s measured on a busy two-core machine),
 * as cuBLAS would (src/backend/cuda/cublas-dl.h). The module exports one
 * symbol, ntp_torch_module_api(), which returns the table below.
 *
 * This header is plain C: torch.cpp includes it in an extern "C" block and
 * sees nothing else of ntprof, so no ntprof header has to compile as C++.
 * The C side translates a layer into an ntp_torch_layer (op, attributes,
 * shapes, the weights' buffers) and its kernel arguments into an
 * ntp_torch_io. */
#ifndef NTPROF_TORCH_API_H
#define NTPROF_TORCH_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NTP_TORCH_API_VERSION 3
#define NTP_TORCH_MAX_DIMS 8
#define NTP_TORCH_MAX_IO 8

/* The ATen operator (family) a layer runs. */
typedef enum ntp_torch_op {
    NTP_TORCH_CONV,           /* at::conv1d/2d/3d (groups, dilation) */
    NTP_TORCH_DECONV,         /* at::conv_transpose1d/2d/3d */
    NTP_TORCH_LINEAR,         /* at::linear */
    NTP_TORCH_MATMUL,         /* at::matmul */
    NTP_TORCH_MAXPOOL,        /* at::max_pool1d/2d/3d */
    NTP_TORCH_AVGPOOL,        /* at::avg_pool1d/2d/3d */
    NTP_TORCH_GLOBAL_MAXPOOL, /* at::adaptive_max_pool2d (2-d), at::amax */
    NTP_TORCH_GLOBAL_AVGPOOL, /* at::adaptive_avg_pool2d (2-d), at::mean */
    NTP_TORCH_BATCHNORM,      /* at::batch_norm, inference */
    NTP_TORCH_LAYERNORM,      /* at::layer_norm */
    NTP_TORCH_UNARY,          /* fn below */
    NTP_TORCH_SOFTMAX,        /* at::softmax */
    NTP_TORCH_LOG_SOFTMAX,    /* at::log_softmax */
    NTP_TORCH_ADD,            /* at::add, folded over 2..8 inputs */
    NTP_TORCH_MUL,            /* at::mul */
    NTP_TORCH_SUB,            /* at::sub */
    NTP_TORCH_DIV,            /* at::div */
    NTP_TORCH_MAXIMUM,        /* at::maximum */
    NTP_TORCH_MINIMUM,        /* at::minimum */
    NTP_TORCH_CAT,            /* at::cat */
    NTP_TORCH_RESHAPE,        /* at::reshape (reshape, flatten, dropout, memcpy) */
    NTP_TORCH_PERMUTE,        /* at::permute */
    NTP_TORCH_LSTM,           /* at::lstm */
    NTP_TORCH_GRU,            /* at::gru */
    NTP_TORCH_RNN_TANH,       /* at::rnn_tanh */
    NTP_TORCH_RNN_RELU,       /* at::rnn_relu */
    NTP_TORCH_ATTENTION,      /* at::linear, at::matmul, at::softmax */
    NTP_TORCH_EMBEDDING,      /* at::embedding on int32 or int64 ids (nn.Embedding) */
} ntp_torch_op;

/* The element-wise function of NTP_TORCH_UNARY. */
typedef enum ntp_torch_fn {
    NTP_TORCH_FN_RELU,
    NTP_TORCH_FN_LEAKY_RELU, /* alpha */
    NTP_TORCH_FN_SIGMOID,
    NTP_TORCH_FN_TANH,
    NTP_TORCH_FN_GELU, /* erf form */
    NTP_TORCH_FN_SILU,
    NTP_TORCH_FN_HARDSWISH,
    NTP_TORCH_FN_CLAMP, /* min, max (relu with a max too) */
    NTP_TORCH_FN_ABS,
    NTP_TORCH_FN_NEG,
    NTP_TORCH_FN_EXP,
    NTP_TORCH_FN_LOG,
    NTP_TORCH_FN_SQRT,
    NTP_TORCH_FN_RECIPROCAL,
    NTP_TORCH_FN_ERF,
    NTP_TORCH_FN_FLOOR,
    NTP_TORCH_FN_CEIL,
    NTP_TORCH_FN_ROUND,
    NTP_TORCH_FN_SIGN,
    NTP_TORCH_FN_SIN,
    NTP_TORCH_FN_COS,
    NTP_TORCH_FN_TAN,
    NTP_TORCH_FN_ASIN,
    NTP_TORCH_FN_ACOS,
    NTP_TORCH_FN_ATAN,
    NTP_TORCH_FN_SINH,
    NTP_TORCH_FN_COSH,
    NTP_TORCH_FN_ASINH,
    NTP_TORCH_FN_ACOSH,
    NTP_TORCH_FN_ATANH,
    NTP_TORCH_FN_SOFTPLUS,
    NTP_TORCH_FN_ELU,  /* alpha */
    NTP_TORCH_FN_CELU, /* alpha */
    NTP_TORCH_FN_MISH,
    NTP_TORCH_FN_LOG_SIGMOID,
} ntp_torch_fn;

/* A dense f32 tensor, row-major. At prepare the data of activations is
 * not valid yet (NULL); weights' data is. */
typedef struct ntp_torch_tensor {
    float *data;
    int ndim;
    int64_t dim[NTP_TORCH_MAX_DIMS];
    /* Integer tensors (token ids): data holds int64_t (the whole-graph
     * mode's inputs, a LongTensor as nn.Embedding takes; an i64 graph
     * tensor) or int32_t (an eager embedding's i32 ids, an IntTensor,
     * which at::embedding takes as well). */
    bool int64, int32;
} ntp_torch_tensor;

/* One layer, as prepare sees it. */
typedef struct ntp_torch_layer {
    const char *name; /* for messages */
    ntp_torch_op op;
    ntp_torch_fn fn;
    int n_in, n_w, n_out;
    ntp_torch_tensor in[NTP_TORCH_MAX_IO];
    ntp_torch_tensor w[NTP_TORCH_MAX_IO]; /* in the op's order (docs/ops.md) */
    ntp_torch_tensor out[NTP_TORCH_MAX_IO];
    /* Outputs read only by layers of this backend: their tensors stay in
     * the module (ntp_torch_api.out_handle), never written to out[].data. */
    bool out_internal[NTP_TORCH_MAX_IO];
    /* Spatial ops: nk spatial dims, symmetric padding (the C side sends
     * asymmetric padding as pre_pad: begin, then end per dim, applied with
     * at::constant_pad_nd first, as F.pad before a module would). */
    int nk;
    int64_t kernel[3], stride[3], dilation[3], pad[3], output_padding[3];
    bool pre_pad;
    int64_t pads[6];
    int64_t groups;
    bool ceil_mode, count_include_pad;
    bool bias;
    int64_t axis; /* softmax, cat, layernorm (normalised dims axis..last) */
    double alpha, min, max, epsilon;
    int n_perm;
    int64_t perm[NTP_TORCH_MAX_DIMS];
    bool transpose_a, transpose_b;
    /* Recurrent layers: hidden size, directions, merge (sum or concat),
     * only the last step. Weights W, R, B in ONNX's layout and gate order;
     * prepare reorders them into PyTorch's (once, timed as prepare). */
    int64_t hidden;
    bool bidirectional, merge_sum, last_step;
    bool reverse; /* reverse only: the sequence flipped before and after (at::flip) */
    /* Attention: heads, causal mask. */
    int64_t heads;
    bool causal;
} ntp_torch_layer;

/* One execution: the activations' buffers, or for an input made by a
 * layer of this backend its producer's handle (the tensor in the module;
 * NULL: read data). */
typedef struct ntp_torch_io {
    int n_in, n_out;
    float *in[NTP_TORCH_MAX_IO];
    void *in_handle[NTP_TORCH_MAX_IO];
    float *out[NTP_TORCH_MAX_IO];
} ntp_torch_io;

/* Options of the backend-wide state. */
typedef struct ntp_torch_opts {
    int threads;        /* at::set_num_threads; > 0 */
    bool channels_last; /* 4-d and 5-d activations in channels-last memory format */
} ntp_torch_opts;

/* Every function returns 0 on success, else writes one line to err. */
typedef struct ntp_torch_api {
    int version; /* NTP_TORCH_API_VERSION */
    /* "libtorch 1.13.0" and the ATen parallel backend, into buf. */
    void (*describe)(char *buf, size_t len);
    int (*init)(const ntp_torch_opts *o, void **state, char *err, size_t len);
    void (*release)(void *state);
    int (*prepare)(void *state, const ntp_torch_layer *l, void **node, char *err, size_t len);
    /* The handle of internal output i of a prepared node. */
    void *(*out_handle)(void *node, int i);
    int (*execute)(void *state, void *node, const ntp_torch_io *io, char *err, size_t len);
    void (*release_node)(void *node);
    /* Whole-graph mode: a TorchScript module compiled from `source` (a
     * `forward` method), its buffers named p0, p1, ... wrapping params[i]
     * (no copy), frozen (torch::jit::freeze) and optimised for inference
     * (torch::jit::optimize_for_inference). */
    int (*script_build)(void *state, const char *source, int n_params,
                        const ntp_torch_tensor *params, void **module, char *err, size_t len);
    /* One forward pass: inputs read from in[], outputs copied to out[]. */
    int (*script_run)(void *state, void *module, int n_in, const ntp_torch_tensor *in, int n_out,
                      const ntp_torch_tensor *out, char *err, size_t len);
    void (*script_free)(void *module);
} ntp_torch_api;

/* The module's one exported symbol. */
typedef const ntp_torch_api *(*ntp_torch_module_api_fn)(int version);
#define NTP_TORCH_MODULE_SYMBOL "ntp_torch_module_api"

#endif
