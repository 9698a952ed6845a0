/* The torch backend's method table (docs/frameworks.md): layers run as
 * the ATen operators of PyTorch's modules, through libtorch.
 *
 * This file is the C side: which layers map to which ATen operator
 * (supports), the translation of a layer into torch-api.h's description,
 * and the module that holds libtorch, opened at the first init
 * (torch-api.h says why it is not linked). The libtorch calls are in
 * torch.cpp. */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend-impl.h"
#include "core/ctx-impl.h"
#include "graph/op-onnx-impl.h"
#include "torch-impl.h"

/* --- the module ---------------------------------------------------------------------- */

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const ntp_torch_api *api;
static char load_why[512];

/* Where the module is: $NTP_TORCH_MODULE, else beside the build's
 * libntprof (the build tree), else the installed copy. */
static const char *module_paths[] = {NTP_TORCH_MODULE_BUILD, NTP_TORCH_MODULE_INSTALL};

static const char *module_path(void)
{
    const char *env = getenv("NTP_TORCH_MODULE");
    if (env && *env)
        return env;
    struct stat st;
    for (size_t i = 0; i < sizeof module_paths / sizeof module_paths[0]; i++)
        if (stat(module_paths[i], &st) == 0)
            return module_paths[i];
    return NULL;
}

static void load(void)
{
    const char *path = module_path();
    if (!path) {
        snprintf(load_why, sizeof load_why, "the libtorch module is not at %s nor %s",
                 NTP_TORCH_MODULE_BUILD, NTP_TORCH_MODULE_INSTALL);
        return;
    }
    /* Open for the life of the process: libtorch registers its operators
     * in static constructors and never unregisters them. */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(load_why, sizeof load_why, "cannot load %s (%s)", path, e ? e : "dlopen failed");
        return;
    }
    void *sym = dlsym(h, NTP_TORCH_MODULE_SYMBOL);
    ntp_torch_module_api_fn fn = NULL;
    if (sym)
        memcpy(&fn, &sym, sizeof fn);
    api = fn ? fn(NTP_TORCH_API_VERSION) : NULL;
    if (!api)
        snprintf(load_why, sizeof load_why, "%s has no %s of version %d", path,
                 NTP_TORCH_MODULE_SYMBOL, NTP_TORCH_API_VERSION);
}

const ntp_torch_api *ntp__torch_api(char *why, size_t len)
{
    pthread_once(&load_once, load);
    if (!api && why && len)
        snprintf(why, len, "%s", load_why);
    return api;
}

/* Cheap: the module file is there. Opening it (seconds) waits for a run
 * that asks for the backend. */
static bool torch_available(char *why, size_t len)
{
    if (module_path())
        return true;
    if (why && len)
        snprintf(why, len, "the libtorch module is not at %s nor %s", NTP_TORCH_MODULE_BUILD,
                 NTP_TORCH_MODULE_INSTALL);
    return false;
}

/* --- the mapping --------------------------------------------------------------------- */

/* PyTorch's function of each unary element-wise op it runs (relu and clip,
 * whose bounds choose the function, in unary_fn). The others — selu,
 * hard_sigmoid, thresholded_relu, shrink, softsign — have ONNX's
 * parameters, which PyTorch's functions fix or lack. */
static const struct {
    bool mapped;
    ntp_torch_fn fn;
} unary_fns[NTP_OP_COUNT] = {
    [NTP_OP_LEAKY_RELU] = {true, NTP_TORCH_FN_LEAKY_RELU},
    [NTP_OP_SIGMOID] = {true, NTP_TORCH_FN_SIGMOID},
    [NTP_OP_TANH] = {true, NTP_TORCH_FN_TANH},
    [NTP_OP_GELU] = {true, NTP_TORCH_FN_GELU},
    [NTP_OP_SILU] = {true, NTP_TORCH_FN_SILU},
    [NTP_OP_HARDSWISH] = {true, NTP_TORCH_FN_HARDSWISH},
    [NTP_OP_ABS] = {true, NTP_TORCH_FN_ABS},
    [NTP_OP_NEG] = {true, NTP_TORCH_FN_NEG},
    [NTP_OP_EXP] = {true, NTP_TORCH_FN_EXP},
    [NTP_OP_LOG] = {true, NTP_TORCH_FN_LOG},
    [NTP_OP_SQRT] = {true, NTP_TORCH_FN_SQRT},
    [NTP_OP_RECIPROCAL] = {true, NTP_TORCH_FN_RECIPROCAL},
    [NTP_OP_ERF] = {true, NTP_TORCH_FN_ERF},
    [NTP_OP_FLOOR] = {true, NTP_TORCH_FN_FLOOR},
    [NTP_OP_CEIL] = {true, NTP_TORCH_FN_CEIL},
    [NTP_OP_ROUND] = {true, NTP_TORCH_FN_ROUND},
    [NTP_OP_SIGN] = {true, NTP_TORCH_FN_SIGN},
    [NTP_OP_SIN] = {true, NTP_TORCH_FN_SIN},
    [NTP_OP_COS] = {true, NTP_TORCH_FN_COS},
    [NTP_OP_TAN] = {true, NTP_TORCH_FN_TAN},
    [NTP_OP_ASIN] = {true, NTP_TORCH_FN_ASIN},
    [NTP_OP_ACOS] = {true, NTP_TORCH_FN_ACOS},
    [NTP_OP_ATAN] = {true, NTP_TORCH_FN_ATAN},
    [NTP_OP_SINH] = {true, NTP_TORCH_FN_SINH},
    [NTP_OP_COSH] = {true, NTP_TORCH_FN_COSH},
    [NTP_OP_ASINH] = {true, NTP_TORCH_FN_ASINH},
    [NTP_OP_ACOSH] = {true, NTP_TORCH_FN_ACOSH},
    [NTP_OP_ATANH] = {true, NTP_TORCH_FN_ATANH},
    [NTP_OP_SOFTPLUS] = {true, NTP_TORCH_FN_SOFTPLUS},
    [NTP_OP_ELU] = {true, NTP_TORCH_FN_ELU},
    [NTP_OP_CELU] = {true, NTP_TORCH_FN_CELU},
    [NTP_OP_MISH] = {true, NTP_TORCH_FN_MISH},
    [NTP_OP_LOG_SIGMOID] = {true, NTP_TORCH_FN_LOG_SIGMOID},
};

static bool unary_fn(const ntp_node *n, ntp_torch_layer *l)
{
    l->min = -INFINITY;
    l->max = INFINITY;
    if (n->op == NTP_OP_RELU && n->a.has_max) {
        l->fn = NTP_TORCH_FN_CLAMP;
        l->min = 0;
        l->max = n->a.max;
        return true;
    }
    if (n->op == NTP_OP_RELU) {
        l->fn = NTP_TORCH_FN_RELU;
        return true;
    }
    if (n->op == NTP_OP_CLIP) {
        l->fn = NTP_TORCH_FN_CLAMP;
        l->min = n->a.min;
        l->max = n->a.max;
        return true;
    }
    if ((unsigned)n->op >= NTP_OP_COUNT || !unary_fns[n->op].mapped)
        return false;
    l->fn = unary_fns[n->op].fn;
    return true;
}

static void set_shape(ntp_torch_tensor *t, const ntp_shape *s)
{
    t->ndim = s->ndim;
    for (int d = 0; d < s->ndim && d < NTP_TORCH_MAX_DIMS; d++)
        t->dim[d] = s->dim[d];
}

/* PyTorch's pooling output size (aten/src/ATen/native/Pool.h,
 * pooling_output_shape). */
static int64_t torch_pool_out(int64_t in, int64_t k, int64_t pad, int64_t s, int64_t dil,
                              bool ceil_mode)
{
    int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
    if (ceil_mode && (out - 1) * s >= in + pad)
        out--;
    return out;
}

/* The spatial attributes; false when the padding is one PyTorch's
 * operator cannot take. */
static bool spatial(const ntp_graph *g, const ntp_node *n, ntp_torch_layer *l, bool conv)
{
    const ntp_attrs *a = &n->a;
    if (a->nk < 1 || a->nk > 3 || a->pad_kind != NTP_PAD_EXPLICIT)
        return false;
    l->nk = a->nk;
    bool sym = true;
    for (int d = 0; d < a->nk; d++) {
        l->kernel[d] = a->kernel[d];
        l->stride[d] = a->stride[d];
        l->dilation[d] = a->dilation[d];
        l->pad[d] = a->pad[d];
        l->output_padding[d] = a->output_padding[d];
        sym = sym && a->pad[d] == a->pad[a->nk + d];
    }
    if (!sym) {
        if (!conv)
            return false;
        /* F.pad first, as a PyTorch port of a TensorFlow "same" conv does. */
        l->pre_pad = true;
        for (int d = 0; d < 2 * a->nk; d++)
            l->pads[d] = a->pad[d];
        for (int d = 0; d < a->nk; d++)
            l->pad[d] = 0;
    }
    (void)g;
    return true;
}

static bool pool_ok(const ntp_graph *g, const ntp_node *n, const ntp_torch_layer *l)
{
    const ntp_shape *x = &ntp__cin(g, n, 0)->shape, *y = &ntp__cout(g, n, 0)->shape;
    if (x->ndim != l->nk + 2 || y->ndim != x->ndim)
        return false;
    for (int d = 0; d < l->nk; d++) {
        if (2 * l->pad[d] > l->kernel[d])
            return false; /* PyTorch: "pad should be at most half of kernel size" */
        if (n->op == NTP_OP_AVGPOOL && l->dilation[d] != 1)
            return false; /* avg_pool has no dilation */
        if (torch_pool_out(x->dim[2 + d], l->kernel[d], l->pad[d], l->stride[d], l->dilation[d],
                           l->ceil_mode) != y->dim[2 + d])
            return false;
    }
    return true;
}

bool ntp__torch_fill(const ntp_graph *g, const ntp_node *n, ntp_torch_layer *l)
{
    memset(l, 0, sizeof *l);
    if (!g || !n || (unsigned)n->op >= NTP_OP_COUNT || n->n_out != 1 || n->n_in < 1 ||
        n->n_in > NTP_TORCH_MAX_IO || n->n_w > NTP_TORCH_MAX_IO)
        return false;
    const ntp_attrs *a = &n->a;
    l->name = n->name;
    l->n_in = n->n_in;
    l->n_w = n->n_w;
    l->n_out = n->n_out;
    for (int i = 0; i < n->n_in; i++) {
        const ntp_tensor *t = ntp__cin(g, n, i);
        /* f32, but an embedding's ids: int32 or int64, as at::embedding
         * takes them. */
        bool ids = i == 0 && ntp__op_torch(n->op) == NTP_OP_TORCH_EMBEDDING &&
                   (t->dtype == NTP_DTYPE_I32 || t->dtype == NTP_DTYPE_I64);
        if ((t->dtype != NTP_DTYPE_F32 && !ids) || t->shape.ndim > NTP_TORCH_MAX_DIMS)
            return false;
        set_shape(&l->in[i], &t->shape);
        l->in[i].int32 = ids && t->dtype == NTP_DTYPE_I32;
        l->in[i].int64 = ids && t->dtype == NTP_DTYPE_I64;
    }
    for (int i = 0; i < n->n_w; i++)
        set_shape(&l->w[i], &g->tensors[n->w[i]].shape);
    set_shape(&l->out[0], &ntp__cout(g, n, 0)->shape);
    if (ntp__cout(g, n, 0)->shape.ndim > NTP_TORCH_MAX_DIMS)
        return false;
    l->bias = a->bias;
    l->axis = a->axis;
    l->alpha = ntp__unary_param(a, n->op, 0); /* leaky_relu's slope, elu's and celu's alpha */
    l->epsilon = a->epsilon;
    int r = l->in[0].ndim;
    /* By the op's ATen operator (op-table.h, TORCH). */
    switch (ntp__op_torch(n->op)) {
    case NTP_OP_TORCH_CONV:
    case NTP_OP_TORCH_DECONV: {
        bool conv = ntp__op_torch(n->op) == NTP_OP_TORCH_CONV;
        l->op = conv ? NTP_TORCH_CONV : NTP_TORCH_DECONV;
        l->groups = a->groups;
        return spatial(g, n, l, conv) && r == l->nk + 2;
    }
    case NTP_OP_TORCH_LINEAR: l->op = NTP_TORCH_LINEAR; return true;
    case NTP_OP_TORCH_MATMUL:
        l->op = NTP_TORCH_MATMUL;
        l->transpose_a = a->transpose_a;
        l->transpose_b = a->transpose_b;
        return true;
    case NTP_OP_TORCH_MAXPOOL:
    case NTP_OP_TORCH_AVGPOOL:
        l->op =
            ntp__op_torch(n->op) == NTP_OP_TORCH_MAXPOOL ? NTP_TORCH_MAXPOOL : NTP_TORCH_AVGPOOL;
        l->ceil_mode = a->ceil_mode;
        l->count_include_pad = a->count_include_pad;
        return spatial(g, n, l, false) && pool_ok(g, n, l);
    case NTP_OP_TORCH_GLOBAL_MAXPOOL: l->op = NTP_TORCH_GLOBAL_MAXPOOL; return r >= 3;
    case NTP_OP_TORCH_GLOBAL_AVGPOOL: l->op = NTP_TORCH_GLOBAL_AVGPOOL; return r >= 3;
    case NTP_OP_TORCH_BATCHNORM: l->op = NTP_TORCH_BATCHNORM; return r >= 2 && n->n_w == 4;
    case NTP_OP_TORCH_LAYERNORM:
        l->op = NTP_TORCH_LAYERNORM;
        if (l->axis < 0)
            l->axis += r;
        return l->axis >= 0 && l->axis < r && n->n_w == 2;
    case NTP_OP_TORCH_SOFTMAX: l->op = NTP_TORCH_SOFTMAX; return l->axis >= -r && l->axis < r;
    case NTP_OP_TORCH_LOG_SOFTMAX:
        l->op = NTP_TORCH_LOG_SOFTMAX;
        return l->axis >= -r && l->axis < r;
    case NTP_OP_TORCH_ADD: l->op = NTP_TORCH_ADD; return true;
    case NTP_OP_TORCH_MUL: l->op = NTP_TORCH_MUL; return true;
    case NTP_OP_TORCH_SUB: l->op = NTP_TORCH_SUB; return true;
    case NTP_OP_TORCH_DIV: l->op = NTP_TORCH_DIV; return true;
    case NTP_OP_TORCH_MAXIMUM: l->op = NTP_TORCH_MAXIMUM; return true;
    case NTP_OP_TORCH_MINIMUM: l->op = NTP_TORCH_MINIMUM; return true;
    case NTP_OP_TORCH_CAT: l->op = NTP_TORCH_CAT; return l->axis >= -r && l->axis < r;
    case NTP_OP_TORCH_RESHAPE: l->op = NTP_TORCH_RESHAPE; return n->n_in == 1;
    case NTP_OP_TORCH_PERMUTE:
        l->op = NTP_TORCH_PERMUTE;
        l->n_perm = a->n_perm;
        for (int d = 0; d < a->n_perm && d < NTP_TORCH_MAX_DIMS; d++)
            l->perm[d] = a->perm[d];
        return a->n_perm == r;
    case NTP_OP_TORCH_LSTM:
    case NTP_OP_TORCH_GRU:
    case NTP_OP_TORCH_RNN:
        l->op = ntp__op_torch(n->op) == NTP_OP_TORCH_LSTM  ? NTP_TORCH_LSTM
                : ntp__op_torch(n->op) == NTP_OP_TORCH_GRU ? NTP_TORCH_GRU
                : a->rnn_act == NTP_RNN_ACT_RELU           ? NTP_TORCH_RNN_RELU
                                                           : NTP_TORCH_RNN_TANH;
        l->hidden = a->units;
        l->bidirectional = a->direction == NTP_DIR_BIDIRECTIONAL;
        l->merge_sum = a->merge == NTP_MERGE_SUM;
        l->last_step = a->last_step;
        /* Reverse only: PyTorch has no such module; a port flips the
         * sequence, runs it forward and flips the output back. */
        l->reverse = a->direction == NTP_DIR_REVERSE;
        return r == 3 && n->n_w == (a->bias ? 3 : 2);
    case NTP_OP_TORCH_ATTENTION:
        l->op = NTP_TORCH_ATTENTION;
        l->heads = a->heads;
        l->causal = a->causal;
        return r == 3;
    case NTP_OP_TORCH_UNARY: l->op = NTP_TORCH_UNARY; return unary_fn(n, l);
    case NTP_OP_TORCH_EMBEDDING:
        /* nn.Embedding.forward: at::embedding(table [vocab, units], ids). */
        l->op = NTP_TORCH_EMBEDDING;
        return n->n_in == 1 && n->n_w == 1 && (l->in[0].int32 || l->in[0].int64) &&
               l->w[0].ndim == 2 && ntp__cout(g, n, 0)->dtype == NTP_DTYPE_F32;
    /* pad, split, the ONNX reductions and tensor ops, lrn,
     * instancenorm, prelu (PyTorch's slope is per channel, ONNX's
     * broadcasts), hardmax, where, pow, mean, the inlays, the decoder ops:
     * on the reference backend. */
    case NTP_OP_TORCH_NONE: break;
    }
    return false;
}

static bool torch_supports(const ntp_graph *g, const ntp_node *n, ntp_dtype p)
{
    ntp_torch_layer l;
    return p == NTP_DTYPE_F32 && torch_available(NULL, 0) && ntp__torch_fill(g, n, &l);
}

/* The ATen operator of a layer, for the reports' impl column. */
const char *ntp__torch_op_name(const ntp_torch_layer *l)
{
    static const char *const conv[] = {"aten::conv1d", "aten::conv2d", "aten::conv3d"};
    static const char *const deconv[] = {"aten::conv_transpose1d", "aten::conv_transpose2d",
                                         "aten::conv_transpose3d"};
    static const char *const maxp[] = {"aten::max_pool1d", "aten::max_pool2d", "aten::max_pool3d"};
    static const char *const avgp[] = {"aten::avg_pool1d", "aten::avg_pool2d", "aten::avg_pool3d"};
    int k = l->nk >= 1 && l->nk <= 3 ? l->nk - 1 : 0;
    switch (l->op) {
    case NTP_TORCH_CONV: return l->pre_pad ? "aten::constant_pad_nd+conv" : conv[k];
    case NTP_TORCH_DECONV: return deconv[k];
    case NTP_TORCH_LINEAR: return "aten::linear";
    case NTP_TORCH_MATMUL: return "aten::matmul";
    case NTP_TORCH_MAXPOOL: return maxp[k];
    case NTP_TORCH_AVGPOOL: return avgp[k];
    case NTP_TORCH_GLOBAL_MAXPOOL:
        return l->in[0].ndim == 4 ? "aten::adaptive_max_pool2d" : "aten::amax";
    case NTP_TORCH_GLOBAL_AVGPOOL:
        return l->in[0].ndim == 4 ? "aten::adaptive_avg_pool2d" : "aten::mean";
    case NTP_TORCH_BATCHNORM: return "aten::batch_norm";
    case NTP_TORCH_LAYERNORM: return "aten::layer_norm";
    case NTP_TORCH_UNARY: return "aten::eltwise";
    case NTP_TORCH_SOFTMAX: return "aten::softmax";
    case NTP_TORCH_LOG_SOFTMAX: return "aten::log_softmax";
    case NTP_TORCH_ADD: return "aten::add";
    case NTP_TORCH_MUL: return "aten::mul";
    case NTP_TORCH_SUB: return "aten::sub";
    case NTP_TORCH_DIV: return "aten::div";
    case NTP_TORCH_MAXIMUM: return "aten::maximum";
    case NTP_TORCH_MINIMUM: return "aten::minimum";
    case NTP_TORCH_CAT: return "aten::cat";
    case NTP_TORCH_RESHAPE: return "aten::reshape";
    case NTP_TORCH_PERMUTE: return "aten::permute";
    case NTP_TORCH_LSTM: return "aten::lstm";
    case NTP_TORCH_GRU: return "aten::gru";
    case NTP_TORCH_RNN_TANH: return "aten::rnn_tanh";
    case NTP_TORCH_RNN_RELU: return "aten::rnn_relu";
    case NTP_TORCH_ATTENTION: return "aten::linear+matmul+softmax";
    case NTP_TORCH_EMBEDDING: return "aten::embedding";
    }
    return "torch";
}

/* --- options ------------------------------------------------------------------------- */

/* The entries of `options` that name this backend ("torch.KEY=VALUE").
 * Known: memory_format=contiguous|channels_last. */
static ntp_status parse_options(ntp_ctx *ctx, const char *options, bool *channels_last)
{
    *channels_last = false;
    for (const char *p = options; p && *p;) {
        size_t n = strcspn(p, ",");
        char e[128];
        snprintf(e, sizeof e, "%.*s", (int)(n < sizeof e ? n : sizeof e - 1), p);
        p += n + (p[n] == ',');
        if (strncmp(e, "torch.", 6) != 0)
            continue; /* another backend's */
        const char *kv = e + 6, *eq = strchr(kv, '=');
        if (!eq)
            return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                              "backend option '%s': expected torch.KEY=VALUE", e);
        if (strncmp(kv, "memory_format=", 14) != 0)
            return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                              "backend option '%s': the torch backend has no option '%.*s' "
                              "(it has memory_format)",
                              e, (int)(eq - kv), kv);
        if (strcmp(eq + 1, "channels_last") == 0)
            *channels_last = true;
        else if (strcmp(eq + 1, "contiguous") == 0)
            *channels_last = false;
        else
            return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                              "backend option '%s': memory_format is contiguous or channels_last",
                              e);
    }
    return NTP_STATUS_OK;
}

/* --- lifetime ------------------------------------------------------------------------- */

static int usable_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

typedef struct torchb_state {
    const ntp_torch_api *api;
    void *s;
    bool channels_last;
} torchb_state;

typedef struct torchb_node {
    void *t; /* the module's node */
    char impl[64];
} torchb_node;

static ntp_status torch_init(ntp_ctx *ctx, const ntp_backend_opts *opts, void **state)
{
    *state = NULL;
    bool cl = false;
    ntp_status st = parse_options(ctx, opts ? opts->options : NULL, &cl);
    if (st)
        return st;
    char why[600];
    const ntp_torch_api *t = ntp__torch_api(why, sizeof why);
    if (!t)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED, "backend 'torch': %s", why);
    torchb_state *s = calloc(1, sizeof *s);
    if (!s)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "torch: out of memory");
    ntp_torch_opts o = {
        .threads = opts && opts->threads > 0 ? opts->threads : usable_cpus(),
        .channels_last = cl,
    };
    s->api = t;
    s->channels_last = cl;
    if (t->init(&o, &s->s, why, sizeof why)) {
        free(s);
        return ntp__error(ctx, NTP_STATUS_BACKEND_ERROR, "torch: %s", why);
    }
    *state = s;
    return NTP_STATUS_OK;
}

static void torch_release(void *state)
{
    torchb_state *s = state;
    if (!s)
        return;
    s->api->release(s->s);
    free(s);
}

static ntp_status torch_prepare(ntp_ctx *ctx, void *state, ntp_kargs *k, void **node_state,
                                size_t *workspace)
{
    torchb_state *s = state;
    *node_state = NULL;
    *workspace = 0;
    ntp_torch_layer l;
    if (!ntp__torch_fill(k->g, k->node, &l))
        return ntp__be_kerror(ctx, "torch", k, NTP_STATUS_UNSUPPORTED,
                              "no ATen operator for this layer");
    if (k->n_w != l.n_w || k->n_in != l.n_in || k->n_out != 1)
        return ntp__be_kerror(ctx, "torch", k, NTP_STATUS_INTERNAL,
                              "%d weights and %d inputs, %d and %d expected", k->n_w, k->n_in,
                              l.n_w, l.n_in);
    for (int i = 0; i < k->n_w; i++) {
        if (k->w[i].dtype != NTP_DTYPE_F32)
            return ntp__be_kerror(ctx, "torch", k, NTP_STATUS_UNSUPPORTED,
                                  "weight %d is stored as %s", i, ntp_dtype_name(k->w[i].dtype));
        set_shape(&l.w[i], &k->w[i].shape);
        l.w[i].data = k->w[i].data;
    }
    l.out_internal[0] = k->out_internal[0] && k->out_layout[0];
    torchb_node *nd = calloc(1, sizeof *nd);
    if (!nd)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "torch: out of memory");
    snprintf(nd->impl, sizeof nd->impl, "%s%s", ntp__torch_op_name(&l),
             s->channels_last && l.in[0].ndim >= 4 ? ":channels_last" : "");
    char why[512];
    if (s->api->prepare(s->s, &l, &nd->t, why, sizeof why)) {
        free(nd);
        return ntp__be_kerror(ctx, "torch", k, NTP_STATUS_BACKEND_ERROR, "%s", why);
    }
    if (l.out_internal[0])
        *k->out_layout[0] = s->api->out_handle(nd->t, 0);
    *node_state = nd;
    return NTP_STATUS_OK;
}

static ntp_status torch_execute(ntp_ctx *ctx, void *state, void *node_state, const ntp_kargs *k)
{
    torchb_state *s = state;
    torchb_node *nd = node_state;
    if (!nd)
        return ntp__be_kerror(ctx, "torch", k, NTP_STATUS_INTERNAL, "layer was not prepared");
    ntp_torch_io io = {.n_in = k->n_in, .n_out = k->n_out};
    for (int i = 0; i < k->n_in && i < NTP_TORCH_MAX_IO; i++) {
        io.in[i] = k->in[i].data;
        io.in_handle[i] = k->in_internal[i] && k->in_layout[i] ? *k->in_layout[i] : NULL;
    }
    for (int i = 0; i < k->n_out && i < NTP_TORCH_MAX_IO; i++)
        io.out[i] = k->out[i].data;
    char why[512];
    if (s->api->execute(s->s, nd->t, &io, why, sizeof why))
        return ntp__be_kerror(ctx, "torch", k, NTP_STATUS_BACKEND_ERROR, "%s", why);
    return NTP_STATUS_OK;
}

static void torch_release_node(void *state, void *node_state)
{
    torchb_state *s = state;
    torchb_node *nd = node_state;
    if (!nd)
        return;
    if (s && nd->t)
        s->api->release_node(nd->t);
    free(nd);
}

static const char *torch_impl_name(void *state, void *node_state)
{
    torchb_node *nd = node_state;
    return nd && nd->impl[0] ? nd->impl : "torch";
}

const ntp_backend_i ntp__backend_torch = {
    .api_version = NTP_BACKEND_API_VERSION,
    .name = "torch",
    .description = "PyTorch's C++ library (libtorch 1.13): each layer as the ATen operators "
                   "PyTorch's modules call, eager; f32",
    .kind = NTP_BACKEND_HOST,
    /* A framework, not a kernel library: asked for by name, never the
     * default (below ref). */
    .priority = 70,
    .supports = torch_supports,
    .init = torch_init,
    .prepare = torch_prepare,
    .execute = torch_execute,
    .release_node = torch_release_node,
    .release = torch_release,
    .impl_name = torch_impl_name,
    .available = torch_available,
};
