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

static bool family_supports(const ntp_graph *g, const ntp_node *n)
{
    switch (n->op) {
    case NTP_OP_CONV:
    case NTP_OP_DECONV: return ntp__dnnl_conv_supports(g, n);
    case NTP_OP_FC:
    case NTP_OP_MATMUL: return ntp__dnnl_matmul_supports(g, n);
    case NTP_OP_LM_HEAD:
        /* An inner product without bias. At f32 only: a tied head shares
         * the token embedding's table, which the reference backend holds
         * in f32 (docs/decoders.md). */
        return ntp__dnnl_matmul_supports(g, n) && n->precision == NTP_DTYPE_F32;
    case NTP_OP_MAXPOOL:
    case NTP_OP_AVGPOOL:
    case NTP_OP_GLOBAL_MAXPOOL:
    case NTP_OP_GLOBAL_AVGPOOL: return ntp__dnnl_pool_supports(g, n);
    case NTP_OP_BATCHNORM:
    case NTP_OP_LAYERNORM:
    case NTP_OP_LRN: return ntp__dnnl_norm_supports(g, n);
    case NTP_OP_REDUCE_MEAN:
    case NTP_OP_REDUCE_SUM:
    case NTP_OP_REDUCE_MAX:
    case NTP_OP_REDUCE_MIN:
    case NTP_OP_REDUCE_PROD:
    case NTP_OP_REDUCE_L1:
    case NTP_OP_REDUCE_L2:
    case NTP_OP_REDUCE_SUM_SQUARE:
        return ntp__dnnl_reduce_supports(g, n);
        NTP_UNARY_CASES /* by eltwise.c's mapping */
            case NTP_OP_PRELU : case NTP_OP_LOG_SOFTMAX : case NTP_OP_SOFTMAX
            : return ntp__dnnl_eltwise_supports(g, n);
    case NTP_OP_ADD:
    case NTP_OP_MUL:
    case NTP_OP_SUB:
    case NTP_OP_DIV:
    case NTP_OP_MAX:
    case NTP_OP_MIN: return ntp__dnnl_binary_supports(g, n);
    case NTP_OP_CONCAT: return ntp__dnnl_concat_supports(g, n);
    case NTP_OP_LSTM:
    case NTP_OP_GRU:
    case NTP_OP_RNN: return ntp__dnnl_rnn_supports(g, n);
    case NTP_OP_ATTENTION: return ntp__dnnl_attention_supports(g, n);
    case NTP_OP_KV_ATTENTION:
        return ntp__dnnl_kv_attention_supports(g, n) && n->precision == NTP_DTYPE_F32;
    case NTP_OP_RMSNORM: return ntp__dnnl_rmsnorm_supports(g, n) && n->precision == NTP_DTYPE_F32;
    case NTP_OP_RESHAPE:
    case NTP_OP_FLATTEN:
    case NTP_OP_DROPOUT:
    case NTP_OP_MEMCPY:
    case NTP_OP_TRANSPOSE:
    case NTP_OP_SPLIT: return ntp__dnnl_move_supports(g, n);
    default:
        /* pad, convert, embedding, the inlays (mfcc, ctc_decode) and the
         * ONNX ops without a oneDNN primitive stay on the reference
         * backend. */
        return false;
    }
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
    default: return ntp__dnnl_dtype_ok(n->op, ntp__dnnl_dt(p));
    }
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
    switch (b->n->op) {
    case NTP_OP_CONV:
    case NTP_OP_DECONV: return ntp__dnnl_conv_build(b);
    case NTP_OP_FC:
    case NTP_OP_MATMUL:
    case NTP_OP_LM_HEAD: return ntp__dnnl_matmul_build(b);
    case NTP_OP_MAXPOOL:
    case NTP_OP_AVGPOOL:
    case NTP_OP_GLOBAL_MAXPOOL:
    case NTP_OP_GLOBAL_AVGPOOL: return ntp__dnnl_pool_build(b);
    case NTP_OP_BATCHNORM:
    case NTP_OP_LAYERNORM:
    case NTP_OP_LRN: return ntp__dnnl_norm_build(b);
    case NTP_OP_REDUCE_MEAN:
    case NTP_OP_REDUCE_SUM:
    case NTP_OP_REDUCE_MAX:
    case NTP_OP_REDUCE_MIN:
    case NTP_OP_REDUCE_PROD:
    case NTP_OP_REDUCE_L1:
    case NTP_OP_REDUCE_L2:
    case NTP_OP_REDUCE_SUM_SQUARE: return ntp__dnnl_reduce_build(b);
    case NTP_OP_ADD:
    case NTP_OP_MUL:
    case NTP_OP_SUB:
    case NTP_OP_DIV:
    case NTP_OP_MAX:
    case NTP_OP_MIN: return ntp__dnnl_binary_build(b);
    case NTP_OP_CONCAT: return ntp__dnnl_concat_build(b);
    case NTP_OP_LSTM:
    case NTP_OP_GRU:
    case NTP_OP_RNN: return ntp__dnnl_rnn_build(b);
    case NTP_OP_ATTENTION: return ntp__dnnl_attention_build(b);
    case NTP_OP_KV_ATTENTION: return ntp__dnnl_kv_attention_build(b);
    case NTP_OP_RMSNORM: return ntp__dnnl_rmsnorm_build(b);
    case NTP_OP_RESHAPE:
    case NTP_OP_FLATTEN:
    case NTP_OP_DROPOUT:
    case NTP_OP_MEMCPY:
    case NTP_OP_TRANSPOSE:
    case NTP_OP_SPLIT: return ntp__dnnl_move_build(b);
    default:
        if (ntp__dnnl_eltwise_supports(b->k->g, b->n) || b->k->g == NULL)
            return ntp__dnnl_eltwise_build(b);
        return ntp__dnnl_fail(b, NTP_STATUS_UNSUPPORTED, "no oneDNN implementation of this layer");
    }
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
    .fuse_note = onednn_fuse_note,
    .n_steps = onednn_n_steps,
    .step_info = onednn_step_info,
    .execute_step = onednn_execute_step,
    /* Training (backward.c). */
    .supports_backward = ntp__odnn_supports_backward,
    .backward = ntp__odnn_backward,
};
