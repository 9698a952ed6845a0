/* The oneDNN backend's method table (docs/backends.md).
 *
 * prepare() turns a layer or fusion group into steps (onednn-impl.h);
 * execute() binds the engine's buffers and runs them; the optional methods
 * expose the reorder steps as rows of their own, the implementation oneDNN
 * chose, and which layers may be folded into a conv, fc or matmul as
 * post-ops. */
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "onednn-impl.h"

static bool is_precision(ntp_dtype p)
{
    return p == NTP_DTYPE_F32 || p == NTP_DTYPE_BF16 || p == NTP_DTYPE_F16 || p == NTP_DTYPE_I8;
}

/* Layers with native int8 kernels; the others compute in f32 at i8. */
static bool native_int8(ntp_op op)
{
    return op == NTP_OP_CONV || op == NTP_OP_DECONV || op == NTP_OP_FC || op == NTP_OP_MATMUL;
}

static bool lm_head_supports(const ntp_graph *g, const ntp_node *n)
{
    /* An inner product without bias. At f32 only: a tied head shares the
     * token embedding's table, which the reference backend holds in f32
     * (docs/decoders.md). */
    return ntp__dnnl_matmul_supports(g, n) && n->precision == NTP_DTYPE_F32;
}

/* The decoder's attention over its KV cache and RMSNorm, at f32 and bf16:
 * at bf16 their inputs are reordered to f32 and their output back, the
 * primitives between at f32 (kv-attention.c). */
static bool kv_attention_supports(const ntp_graph *g, const ntp_node *n)
{
    return ntp__dnnl_kv_attention_supports(g, n) &&
           (n->precision == NTP_DTYPE_F32 || n->precision == NTP_DTYPE_BF16);
}

static bool rmsnorm_supports(const ntp_graph *g, const ntp_node *n)
{
    return ntp__dnnl_rmsnorm_supports(g, n) &&
           (n->precision == NTP_DTYPE_F32 || n->precision == NTP_DTYPE_BF16);
}

/* The element-wise layers, and the build of a layer of no family. */
static ntp_status eltwise_build(odnn_build *b)
{
    if (ntp__dnnl_eltwise_supports(b->k->g, b->n) || b->k->g == NULL)
        return ntp__dnnl_eltwise_build(b);
    return ntp__dnnl_fail(b, NTP_STATUS_UNSUPPORTED, "no oneDNN implementation of this layer");
}

/* A family: whether it runs a layer, and building the layer's primitives. */
typedef struct odnn_family {
    bool (*supports)(const ntp_graph *g, const ntp_node *n);
    ntp_status (*build)(odnn_build *b);
} odnn_family;

static const odnn_family conv = {ntp__dnnl_conv_supports, ntp__dnnl_conv_build};
static const odnn_family matmul = {ntp__dnnl_matmul_supports, ntp__dnnl_matmul_build};
static const odnn_family lm_head = {lm_head_supports, ntp__dnnl_matmul_build};
static const odnn_family pool = {ntp__dnnl_pool_supports, ntp__dnnl_pool_build};
static const odnn_family norm = {ntp__dnnl_norm_supports, ntp__dnnl_norm_build};
static const odnn_family reduce = {ntp__dnnl_reduce_supports, ntp__dnnl_reduce_build};
static const odnn_family eltwise = {ntp__dnnl_eltwise_supports, eltwise_build};
static const odnn_family binary = {ntp__dnnl_binary_supports, ntp__dnnl_binary_build};
static const odnn_family concat = {ntp__dnnl_concat_supports, ntp__dnnl_concat_build};
static const odnn_family rnn = {ntp__dnnl_rnn_supports, ntp__dnnl_rnn_build};
static const odnn_family attention = {ntp__dnnl_attention_supports, ntp__dnnl_attention_build};
static const odnn_family move = {ntp__dnnl_move_supports, ntp__dnnl_move_build};
static const odnn_family kv_attention = {kv_attention_supports, ntp__dnnl_kv_attention_build};
static const odnn_family rmsnorm = {rmsnorm_supports, ntp__dnnl_rmsnorm_build};

/* The family of each op this backend runs. The others (NULL): pad,
 * convert, embedding, the inlays (mfcc, ctc_decode) and the ONNX ops
 * without a oneDNN primitive stay on the reference backend. */
#define ODNN_UNARY_(e, fn, onnx, attrs, flops) [NTP_OP_##e] = &eltwise,
#define ODNN_BINARY_(e, fn, onnx, attrs, commutes, out, flops, post) [NTP_OP_##e] = &binary,
static const odnn_family *const families[NTP_OP_COUNT] = {
    [NTP_OP_CONV] = &conv,
    [NTP_OP_DECONV] = &conv,
    [NTP_OP_FC] = &matmul,
    [NTP_OP_MATMUL] = &matmul,
    [NTP_OP_LM_HEAD] = &lm_head,
    [NTP_OP_MAXPOOL] = &pool,
    [NTP_OP_AVGPOOL] = &pool,
    [NTP_OP_GLOBAL_MAXPOOL] = &pool,
    [NTP_OP_GLOBAL_AVGPOOL] = &pool,
    [NTP_OP_BATCHNORM] = &norm,
    [NTP_OP_LAYERNORM] = &norm,
    [NTP_OP_LRN] = &norm,
    [NTP_OP_REDUCE_MEAN] = &reduce,
    [NTP_OP_REDUCE_SUM] = &reduce,
    [NTP_OP_REDUCE_MAX] = &reduce,
    [NTP_OP_REDUCE_MIN] = &reduce,
    [NTP_OP_REDUCE_PROD] = &reduce,
    [NTP_OP_REDUCE_L1] = &reduce,
    [NTP_OP_REDUCE_L2] = &reduce,
    [NTP_OP_REDUCE_SUM_SQUARE] = &reduce,
    [NTP_OP_PRELU] = &eltwise,
    [NTP_OP_LOG_SOFTMAX] = &eltwise,
    [NTP_OP_SOFTMAX] = &eltwise,
    [NTP_OP_ADD] = &binary,
    [NTP_OP_MUL] = &binary,
    [NTP_OP_CONCAT] = &concat,
    [NTP_OP_LSTM] = &rnn,
    [NTP_OP_GRU] = &rnn,
    [NTP_OP_RNN] = &rnn,
    [NTP_OP_ATTENTION] = &attention,
    [NTP_OP_KV_ATTENTION] = &kv_attention,
    [NTP_OP_RMSNORM] = &rmsnorm,
    [NTP_OP_RESHAPE] = &move,
    [NTP_OP_FLATTEN] = &move,
    [NTP_OP_DROPOUT] = &move,
    [NTP_OP_MEMCPY] = &move,
    [NTP_OP_TRANSPOSE] = &move,
    [NTP_OP_SPLIT] = &move,
    NTP_UNARY_TABLE(ODNN_UNARY_)   /* by eltwise.c's mapping */
    NTP_BINARY_TABLE(ODNN_BINARY_) /* by binary.c's mapping */
};
#undef ODNN_UNARY_
#undef ODNN_BINARY_

static const odnn_family *family(ntp_op op)
{
    return (unsigned)op < NTP_OP_COUNT ? families[op] : NULL;
}

static bool family_supports(const ntp_graph *g, const ntp_node *n)
{
    const odnn_family *f = family(n->op);
    return f && f->supports(g, n);
}

static bool onednn_supports(const ntp_graph *g, const ntp_node *n, ntp_dtype p)
{
    if (!g || !n || (unsigned)n->op >= NTP_OP_COUNT || !is_precision(p))
        return false;
    if (!family_supports(g, n))
        return false;
    switch (p) {
    case NTP_DTYPE_F32:
        /* oneDNN's jit log (AVX2) is off by up to 3.4e-6 absolute, so near
         * x = 1, where log x is near 0, its relative error is unbounded:
         * log(1) comes out as -1.43e-6, and about 0.3% of the floats in
         * [0.5, 1.5) miss ONNX's tolerance (1e-7 + 1e-3·|y|; the ONNX test
         * test_log_example). At f32 it stays on the reference backend; at
         * bf16 and f16 the error is below the precision's own rounding. */
        return n->op != NTP_OP_LOG;
    case NTP_DTYPE_I8: return !native_int8(n->op) || ntp__dnnl_dtype_ok(n->op, dnnl_s8);
    case NTP_DTYPE_BF16:
    case NTP_DTYPE_F16:
    case NTP_DTYPE_U8:
    case NTP_DTYPE_I32:
    case NTP_DTYPE_I64:
    case NTP_DTYPE_COUNT: break;
    }
    return ntp__dnnl_dtype_ok(n->op, ntp__dnnl_dt(p));
}

/* Activations and weights are stored in the precision's own type; at i8
 * that is s8 with per-tensor scales (docs/backends.md). */
static ntp_dtype onednn_storage(ntp_dtype p)
{
    return p;
}

static ntp_status onednn_init(ntp_ctx *ctx, const ntp_backend_opts *opts, void **state)
{
    odnn_state *s = calloc(1, sizeof *s);
    if (!s)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "onednn: out of memory");
    s->threads = opts ? opts->threads : 0;
    ntp__dnnl_set_threads(s->threads);
    dnnl_status_t st = dnnl_engine_create(&s->eng, dnnl_cpu, 0);
    if (st == dnnl_success)
        st = dnnl_stream_create(&s->stream, s->eng, dnnl_stream_default_flags);
    if (st != dnnl_success) {
        if (s->eng)
            dnnl_engine_destroy(s->eng);
        free(s);
        return ntp__error(ctx, NTP_STATUS_BACKEND_ERROR,
                          "onednn: cannot create the CPU engine and stream (dnnl status %d)",
                          (int)st);
    }
    *state = s;
    return NTP_STATUS_OK;
}

static void onednn_release(void *state)
{
    odnn_state *s = state;
    if (!s)
        return;
    ntp__odnn_backward_release(s);
    if (s->stream)
        dnnl_stream_destroy(s->stream);
    if (s->eng)
        dnnl_engine_destroy(s->eng);
    free(s->tensor_layout);
    free(s);
}

/* The per-tensor layout table follows the graph being prepared. */
static ntp_status track_graph(ntp_ctx *ctx, odnn_state *s, const ntp_graph *g)
{
    if (!g || s->g == g)
        return NTP_STATUS_OK;
    free(s->tensor_layout);
    s->tensor_layout = calloc((size_t)g->n_tensors + 1, sizeof *s->tensor_layout);
    if (!s->tensor_layout) {
        s->g = NULL;
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "onednn: out of memory");
    }
    s->g = g;
    s->n_tensors = g->n_tensors;
    return NTP_STATUS_OK;
}

static ntp_status build(odnn_build *b)
{
    /* A layer of no family goes where the element-wise ones go, which
     * refuses it unless it has no graph. */
    const odnn_family *f = family(b->n->op);
    return f ? f->build(b) : eltwise_build(b);
}

static ntp_status onednn_prepare(ntp_ctx *ctx, void *state, ntp_kargs *k, void **node_state,
                                 size_t *workspace)
{
    odnn_state *s = state;
    *node_state = NULL;
    *workspace = 0;
    if (!k->node)
        return ntp__error(ctx, NTP_STATUS_INTERNAL, "onednn: kernel arguments without a node");
    ntp_status st = track_graph(ctx, s, k->g);
    if (st)
        return st;
    odnn_node *nd = calloc(1, sizeof *nd);
    odnn_build *b = calloc(1, sizeof *b);
    if (!nd || !b) {
        free(nd);
        free(b);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "onednn: out of memory");
    }
    b->ctx = ctx;
    b->s = s;
    b->k = k;
    b->nd = nd;
    b->n = k->node;
    b->prec = k->node->precision;
    b->int8 = b->prec == NTP_DTYPE_I8;
    b->cdt = b->int8 ? dnnl_f32 : ntp__dnnl_dt(b->prec);
    b->po_end = -1;
    nd->main_step = -1;
    if (!is_precision(b->prec))
        st = ntp__dnnl_fail(b, NTP_STATUS_UNSUPPORTED, "precision %s", ntp_dtype_name(b->prec));
    /* Primitives are specialised for the thread count when created. */
    nd->threads = k->threads > 0 ? k->threads : s->threads;
    ntp__dnnl_set_threads(nd->threads);
    if (st == NTP_STATUS_OK)
        st = build(b);
    if (st == NTP_STATUS_OK)
        st = ntp__dnnl_finish(b);
    if (st == NTP_STATUS_OK && nd->main_step < 0)
        st = ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "no main step was built");
    for (int i = 0; i < b->n_pds; i++)
        dnnl_primitive_desc_destroy(b->pds[i]);
    for (int i = 0; i < b->n_attrs; i++)
        dnnl_primitive_attr_destroy(b->attrs[i]);
    free(b);
    if (st) {
        ntp__dnnl_node_free(nd);
        return st;
    }
    ntp__dnnl_make_rows(nd);
    nd->scratch_off = (nd->ws_used + 63) / 64 * 64;
    *workspace = nd->scratch_off + nd->scratch_bytes;
    *node_state = nd;
    return NTP_STATUS_OK;
}

static ntp_status onednn_execute(ntp_ctx *ctx, void *state, void *node_state, const ntp_kargs *k)
{
    odnn_node *nd = node_state;
    if (!nd)
        return ntp__error(ctx, NTP_STATUS_INTERNAL, "onednn: layer '%s' was not prepared",
                          k->node && k->node->name ? k->node->name : "?");
    /* Another library in the process may have changed the OpenMP thread
     * count since prepare (the setting is a per-thread variable, cheap to
     * write). */
    ntp__dnnl_set_threads(nd->threads);
    for (int i = 0; i < nd->n_steps; i++) {
        ntp_status st = ntp__dnnl_run_step(ctx, state, nd, k, i);
        if (st)
            return st;
    }
    return NTP_STATUS_OK;
}

static void onednn_release_node(void *state, void *node_state)
{
    odnn_state *s = state;
    odnn_node *nd = node_state;
    /* Forget layouts this node handed on, which die with it. */
    if (s && nd && s->tensor_layout)
        for (int i = 0; i < NTP_MAX_OUTPUTS; i++) {
            int t = nd->rec_tensor[i] - 1;
            if (t >= 0 && t < s->n_tensors && s->tensor_layout[t] == nd->out_md[i])
                s->tensor_layout[t] = NULL;
        }
    ntp__dnnl_node_free(nd);
}

static const char *onednn_impl_name(void *state, void *node_state)
{
    odnn_node *nd = node_state;
    return nd && nd->impl[0] ? nd->impl : "onednn";
}

static const char *onednn_src_layout(void *state, void *node_state)
{
    (void)state;
    odnn_node *nd = node_state;
    return nd ? nd->src_layout : NULL;
}

static const char *onednn_fuse_note(void *state, void *node_state)
{
    (void)state;
    odnn_node *nd = node_state;
    return nd && nd->fuse_note[0] ? nd->fuse_note : NULL;
}

static int onednn_n_steps(void *state, void *node_state, int *main_step)
{
    odnn_node *nd = node_state;
    if (!nd) {
        *main_step = 0;
        return 1;
    }
    *main_step = nd->main_row;
    return nd->n_rows;
}

static void onednn_step_info(void *state, void *node_state, int step, const char **suffix,
                             const char **type, int64_t *bytes)
{
    (void)state;
    odnn_node *nd = node_state;
    *suffix = "";
    *type = NULL;
    if (nd && step >= 0 && step < nd->n_rows && step != nd->main_row) {
        *suffix = nd->steps[nd->row_first[step]].suffix;
        *type = nd->steps[nd->row_first[step]].type;
        /* Every memory the row's primitives read or write (a reorder: its
         * source and destination, padding of blocked layouts included). */
        for (int i = nd->row_first[step]; i <= nd->row_last[step]; i++)
            for (int a = 0; a < nd->steps[i].n_args; a++) {
                const dnnl_memory_desc_t *md;
                if (dnnl_memory_get_memory_desc(nd->mems[nd->steps[i].mem[a]].m, &md) ==
                    dnnl_success)
                    *bytes += (int64_t)dnnl_memory_desc_get_size(md);
            }
    }
}

static ntp_status onednn_execute_step(ntp_ctx *ctx, void *state, void *node_state,
                                      const ntp_kargs *k, int step)
{
    odnn_node *nd = node_state;
    if (!nd || step < 0 || step >= nd->n_rows)
        return ntp__error(ctx, NTP_STATUS_INTERNAL, "onednn: layer '%s' has no step %d",
                          k->node && k->node->name ? k->node->name : "?", step);
    ntp__dnnl_set_threads(nd->threads);
    for (int i = nd->row_first[step]; i <= nd->row_last[step]; i++) {
        ntp_status st = ntp__dnnl_run_step(ctx, state, nd, k, i);
        if (st)
            return st;
    }
    return NTP_STATUS_OK;
}

/* Activations and residual adds (and dropouts, which are the identity)
 * fold into conv, deconv, fc, matmul and attention as oneDNN post-ops, and
 * a ReLU into batch normalisation. A binary layer folds only when its other operand has the
 * group's output shape (no broadcasting of the group's result); at i8 its
 * int8 operand comes with its scale (k->post_scale, fuse.c). */
static bool onednn_fusable(const ntp_graph *g, const ntp_node *head, int n_fused,
                           const ntp_node *next)
{
    if (!g || !head || !next || n_fused >= NTP_MAX_FUSED)
        return false;
    /* Batch normalisation followed by a plain ReLU: oneDNN's
     * fuse_norm_relu (conv -> batchnorm -> relu in ResNet). */
    if (head->op == NTP_OP_BATCHNORM)
        return n_fused == 0 && next->op == NTP_OP_RELU && !next->a.has_max &&
               next->precision == head->precision && next->n_in == 1;
    if (head->op != NTP_OP_CONV && head->op != NTP_OP_DECONV && head->op != NTP_OP_FC &&
        head->op != NTP_OP_MATMUL && head->op != NTP_OP_ATTENTION)
        return false;
    if (next->precision != head->precision || next->n_out != 1)
        return false;
    if (next->op == NTP_OP_DROPOUT)
        return true;
    dnnl_alg_kind_t alg;
    float alpha, beta;
    if (ntp__dnnl_eltwise_alg(next, &alg, &alpha, &beta))
        return true;
    if ((next->op != NTP_OP_ADD && next->op != NTP_OP_MUL) || next->n_in != 2)
        return false;
    const ntp_shape *ns = &g->tensors[next->out[0]].shape;
    return ntp_shape_equal(&g->tensors[head->out[0]].shape, ns) &&
           ntp_shape_equal(&g->tensors[next->in[0]].shape, ns) &&
           ntp_shape_equal(&g->tensors[next->in[1]].shape, ns);
}

const ntp_backend_i ntp__backend_onednn = {
    .api_version = NTP_BACKEND_API_VERSION,
    .name = "onednn",
    .description = "oneDNN 2.x (Intel's deep neural network library): JIT kernels for the CPU's "
                   "ISA, blocked layouts, fused post-ops; f32, bf16, f16 and int8",
    .kind = NTP_BACKEND_HOST,
    .priority = NTP_BACKEND_PRIORITY_REF + 300, /* the default wherever it is built */
    .supports = onednn_supports,
    .storage_dtype = onednn_storage,
    .init = onednn_init,
    .prepare = onednn_prepare,
    .execute = onednn_execute,
    .release_node = onednn_release_node,
    .release = onednn_release,
    .fusable = onednn_fusable,
    .impl_name = onednn_impl_name,
    .src_layout = onednn_src_layout,
    .fuse_note = onednn_fuse_note,
    .n_steps = onednn_n_steps,
    .step_info = onednn_step_info,
    .execute_step = onednn_execute_step,
    /* Training (backward.c). */
    .supports_backward = ntp__odnn_supports_backward,
    .backward_bf16 = true,
    .backward = ntp__odnn_backward,
    .supports_train_forward = ntp__odnn_supports_train_forward,
    .train_forward = ntp__odnn_train_forward,
};
