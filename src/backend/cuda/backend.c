/* The CUDA backend's method table (docs/gpu.md): the device probe, the
 * backend-wide state (stream, cuDNN and cuBLAS handles, events), prepare
 * and execute with their host<->device sub-steps, event timing, and graph
 * replay. The layer families are in conv.c, dense.c, rnn.c, misc.c and
 * decoder.c; device memory in mem.c; the kernels in kernels.cu; the
 * training backward in backward.c. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "cuda-impl.h"

/* --- errors ------------------------------------------------------------------------ */

ntp_status ntp__cuda_rt(ntp_ctx *ctx, const ntp_kargs *k, cudaError_t e, const char *what)
{
    return ntp__cuda_error(ctx, k,
                           e == cudaErrorMemoryAllocation ? NTP_STATUS_OUT_OF_MEMORY
                                                          : NTP_STATUS_BACKEND_ERROR,
                           "%s failed: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

ntp_status ntp__cuda_dnn(ntp_ctx *ctx, const ntp_kargs *k, cudnnStatus_t e, const char *what)
{
    return ntp__cuda_error(ctx, k,
                           e == CUDNN_STATUS_NOT_SUPPORTED  ? NTP_STATUS_UNSUPPORTED
                           : e == CUDNN_STATUS_ALLOC_FAILED ? NTP_STATUS_OUT_OF_MEMORY
                                                            : NTP_STATUS_BACKEND_ERROR,
                           "cuDNN %s failed: %s", what, cudnnGetErrorString(e));
}

static const char *blas_status_name(cublasStatus_t e)
{
    static const struct {
        cublasStatus_t e;
        const char *name;
    } names[] = {
#define CUDAB_NAME_(v) {v, #v}
        CUDAB_NAME_(CUBLAS_STATUS_NOT_INITIALIZED), CUDAB_NAME_(CUBLAS_STATUS_ALLOC_FAILED),
        CUDAB_NAME_(CUBLAS_STATUS_INVALID_VALUE),   CUDAB_NAME_(CUBLAS_STATUS_ARCH_MISMATCH),
        CUDAB_NAME_(CUBLAS_STATUS_MAPPING_ERROR),   CUDAB_NAME_(CUBLAS_STATUS_EXECUTION_FAILED),
        CUDAB_NAME_(CUBLAS_STATUS_INTERNAL_ERROR),  CUDAB_NAME_(CUBLAS_STATUS_NOT_SUPPORTED),
        CUDAB_NAME_(CUBLAS_STATUS_LICENSE_ERROR),
#undef CUDAB_NAME_
    };
    /* A table, not a switch: cuBLAS adds values of its own. */
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].e == e)
            return names[i].name;
    return "unknown cuBLAS status";
}

ntp_status ntp__cuda_blas(ntp_ctx *ctx, const ntp_kargs *k, cublasStatus_t e, const char *what)
{
    return ntp__cuda_error(ctx, k,
                           e == CUBLAS_STATUS_NOT_SUPPORTED  ? NTP_STATUS_UNSUPPORTED
                           : e == CUBLAS_STATUS_ALLOC_FAILED ? NTP_STATUS_OUT_OF_MEMORY
                                                             : NTP_STATUS_BACKEND_ERROR,
                           "cuBLAS %s failed: %s", what, blas_status_name(e));
}

/* --- the device probe ---------------------------------------------------------------- */

/* Whether this process can use a GPU is asked once: the first call loads
 * the driver, and supports() asks for every layer. */
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static bool probe_ok;
static char probe_why[512];

static void probe(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(probe_why, sizeof probe_why, "no CUDA device (cudaGetDeviceCount: %s)",
                 cudaGetErrorString(e));
        cudaGetLastError();
        return;
    }
    if (n < 1) {
        snprintf(probe_why, sizeof probe_why, "no CUDA device (cudaGetDeviceCount: 0 devices)");
        return;
    }
    struct cudaDeviceProp prop;
    if ((e = cudaGetDeviceProperties(&prop, 0)) != cudaSuccess) {
        snprintf(probe_why, sizeof probe_why, "CUDA device 0 cannot be queried (%s)",
                 cudaGetErrorString(e));
        cudaGetLastError();
        return;
    }
    int k = ntp__cudak_probe();
    if (k != 0) {
        snprintf(probe_why, sizeof probe_why,
                 "CUDA device 0 (%s, sm_%d%d) cannot run this build's kernels (%s); rebuild with "
                 "-DCMAKE_CUDA_ARCHITECTURES=%d%d",
                 prop.name, prop.major, prop.minor, cudaGetErrorString((cudaError_t)k), prop.major,
                 prop.minor);
        cudaGetLastError();
        return;
    }
    char bwhy[256];
    if (!ntp__cublas_load(bwhy, sizeof bwhy)) {
        snprintf(probe_why, sizeof probe_why, "cuBLAS: %s", bwhy);
        return;
    }
    size_t v = cudnnGetVersion();
    if (v < 90000) {
        snprintf(probe_why, sizeof probe_why, "cuDNN %zu is loaded; the backend needs cuDNN 9", v);
        return;
    }
    probe_ok = true;
    snprintf(probe_why, sizeof probe_why, "%s, sm_%d%d, %d SMs, %.1f GiB", prop.name, prop.major,
             prop.minor, prop.multiProcessorCount, (double)prop.totalGlobalMem / 1073741824.0);
}

static bool cuda_available(char *why, size_t len)
{
    pthread_once(&probe_once, probe);
    if (why && len)
        snprintf(why, len, "%s", probe_why);
    return probe_ok;
}

/* --- support ------------------------------------------------------------------------- */

/* Which family's file runs an op: misc.c (0) for every op not named here,
 * which decides by its own table what it runs. */
typedef enum cudab_family {
    CUDAB_MISC,
    CUDAB_CONV,
    CUDAB_DENSE,
    CUDAB_RNN,
    CUDAB_DECODER
} cudab_family;

static const cudab_family families[NTP_OP_COUNT] = {
    [NTP_OP_CONV] = CUDAB_CONV,       [NTP_OP_DECONV] = CUDAB_CONV,
    [NTP_OP_FC] = CUDAB_DENSE,        [NTP_OP_MATMUL] = CUDAB_DENSE,
    [NTP_OP_ATTENTION] = CUDAB_DENSE, [NTP_OP_LSTM] = CUDAB_RNN,
    [NTP_OP_GRU] = CUDAB_RNN,         [NTP_OP_RNN] = CUDAB_RNN,
    [NTP_OP_LM_HEAD] = CUDAB_DENSE,   [NTP_OP_RMSNORM] = CUDAB_DECODER,
    [NTP_OP_ROPE] = CUDAB_DECODER,    [NTP_OP_KV_ATTENTION] = CUDAB_DECODER,
    [NTP_OP_ARGMAX] = CUDAB_DECODER,
};

static cudab_family family(ntp_op op)
{
    return (unsigned)op < NTP_OP_COUNT ? families[op] : CUDAB_MISC;
}

static bool is_precision(ntp_dtype p)
{
    return p == NTP_DTYPE_F32 || p == NTP_DTYPE_F16 || p == NTP_DTYPE_BF16;
}

static bool cuda_supports(const ntp_graph *g, const ntp_node *n, ntp_dtype p)
{
    if (!g || !n || (unsigned)n->op >= NTP_OP_COUNT || !is_precision(p) || n->n_out < 1)
        return false;
    if (!cuda_available(NULL, 0))
        return false;
    /* Data is a float type; an embedding's indices and the decoder ops'
     * (rope's positions, kv_attention's padding mask) are checked by their
     * family. */
    for (int i = 0; i < n->n_in; i++) {
        ntp_dtype t = ntp__cin(g, n, i)->dtype;
        if (!ntp__cuda_float_type(t) && n->op != NTP_OP_EMBEDDING &&
            !(family(n->op) == CUDAB_DECODER && i > 0))
            return false;
    }
    switch (family(n->op)) {
    case CUDAB_CONV: return ntp__cuda_conv_supports(g, n);
    case CUDAB_DENSE: return ntp__cuda_dense_supports(g, n);
    case CUDAB_RNN: return ntp__cuda_rnn_supports(g, n, p);
    case CUDAB_MISC: return ntp__cuda_misc_supports(g, n, p);
    case CUDAB_DECODER: return ntp__cuda_decoder_supports(g, n);
    }
    return false;
}

/* Activations and weights are stored in the precision's own type on the
 * device and at the boundaries. */
static ntp_dtype cuda_storage(ntp_dtype p)
{
    return p;
}

/* --- lifetime ------------------------------------------------------------------------- */

static void cuda_release(void *state);

static ntp_status cuda_init(ntp_ctx *ctx, const ntp_backend_opts *opts, void **state)
{
    *state = NULL;
    char why[512];
    if (!cuda_available(why, sizeof why))
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED, "backend 'cuda': %s", why);
    cudab_state *s = calloc(1, sizeof *s);
    if (!s)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    /* Threads and fusion mean nothing to a GPU: only the device options. */
    s->tf32 = opts->device.math == NTP_MATH_TF32;
    s->graph_replay = opts->device.graph_replay;
    s->first = opts->device.first;
    ntp_status st = NTP_STATUS_OK;
    cudaError_t e = cudaSetDevice(s->device);
    if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking);
    if (e == cudaSuccess)
        e = cudaEventCreate(&s->ev0);
    if (e == cudaSuccess)
        e = cudaEventCreate(&s->ev1);
    if (e != cudaSuccess) {
        st = ntp__cuda_rt(ctx, NULL, e, "creating the stream and events");
        goto fail;
    }
    cudnnStatus_t de = cudnnCreate(&s->dnn);
    if (de == CUDNN_STATUS_SUCCESS)
        de = cudnnSetStream(s->dnn, s->stream);
    if (de != CUDNN_STATUS_SUCCESS) {
        st = ntp__cuda_dnn(ctx, NULL, de, "handle creation");
        goto fail;
    }
    cublasStatus_t be = cublasCreate(&s->blas);
    if (be == CUBLAS_STATUS_SUCCESS)
        be = cublasSetStream(s->blas, s->stream);
    /* TF32 only when asked for (--precision tf32): f32 means IEEE f32 FMAs,
     * so that f32 results agree with the reference within 1e-4. */
    if (be == CUBLAS_STATUS_SUCCESS)
        be = cublasSetMathMode(s->blas, s->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
    if (be != CUBLAS_STATUS_SUCCESS) {
        st = ntp__cuda_blas(ctx, NULL, be, "handle creation");
        goto fail;
    }
    if ((st = ntp__cuda_alloc(ctx, s, NULL, &s->blas_ws, (int64_t)CUDAB_BLAS_WS,
                              "cuBLAS's workspace")))
        goto fail;
    if ((be = cublasSetWorkspace(s->blas, s->blas_ws, CUDAB_BLAS_WS)) != CUBLAS_STATUS_SUCCESS) {
        st = ntp__cuda_blas(ctx, NULL, be, "setting the workspace");
        goto fail;
    }
    *state = s;
    return NTP_STATUS_OK;
fail:
    cuda_release(s);
    return st;
}

static void drop_graphs(cudab_state *s)
{
    for (int i = 0; i < s->n_graphs; i++) {
        if (s->graphs[i].exec)
            cudaGraphExecDestroy(s->graphs[i].exec);
        free(s->graphs[i].seq);
    }
    s->n_graphs = 0;
}

static void cuda_release(void *state)
{
    cudab_state *s = state;
    if (!s)
        return;
    if (s->stream)
        cudaStreamSynchronize(s->stream);
    ntp__cuda_train_release(s);
    drop_graphs(s);
    ntp__cuda_unbind(s);
    ntp__cuda_free(s, s->blas_ws, (int64_t)CUDAB_BLAS_WS);
    if (s->blas)
        cublasDestroy(s->blas);
    if (s->dnn)
        cudnnDestroy(s->dnn);
    if (s->ev0)
        cudaEventDestroy(s->ev0);
    if (s->ev1)
        cudaEventDestroy(s->ev1);
    if (s->stream)
        cudaStreamDestroy(s->stream);
    cudaGetLastError();
    free(s->bufs);
    free(s->nodes);
    free(s->table);
    free(s->pending);
    free(s->pending_k);
    free(s);
}

/* --- prepare ---------------------------------------------------------------------------- */

/* Is t exchanged with the host only at the ends of a pass (a graph input,
 * or a graph output nothing else reads)? Only such layers may run inside a
 * captured graph: another backend's layers between them read and write the
 * host slots while the pass runs. */
static bool pass_boundary(const ntp_graph *g, int t, bool output)
{
    const ntp_tensor *x = &g->tensors[t];
    return output ? x->is_output && x->n_consumers == 0 : x->kind == NTP_TENSOR_INPUT;
}

static ntp_status add_post_ops(ntp_ctx *ctx, const ntp_kargs *k, cudab_node *nd)
{
    for (int f = 0; f < k->n_fused; f++) {
        const ntp_node *c = k->fused[f];
        cudak_post *p = &nd->post_op[nd->n_post];
        memset(p, 0, sizeof *p);
        nd->post_operand[nd->n_post] = -1;
        if (c->op == NTP_OP_ADD || c->op == NTP_OP_MUL) {
            if (nd->post[f].buf < 0)
                return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL, "folded '%s' has no operand",
                                       c->name);
            p->is_binary = 1;
            p->fn = c->op == NTP_OP_ADD ? CUDAK_ADD : CUDAK_MUL;
            nd->post_operand[nd->n_post] = f;
        } else if (!ntp__cuda_act_fn(c, p)) {
            return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL, "cannot fold '%s' (%s)", c->name,
                                   ntp__op_name(c->op));
        }
        nd->n_post++;
    }
    return NTP_STATUS_OK;
}

static void node_free(cudab_state *s, cudab_node *nd)
{
    if (!nd)
        return;
    if (nd->free_priv)
        nd->free_priv(nd);
    if (s) {
        ntp__cuda_free(s, nd->w, nd->w_bytes);
        s->weight_bytes -= nd->w_bytes;
        for (int i = 0; i < NTP_MAX_OUTPUTS && s->table; i++)
            for (int t = 0; nd->has_rec[i] && t < s->n_tensors; t++)
                if (s->table[t] == &nd->rec[i])
                    s->table[t] = NULL;
        for (int i = 0; i < s->n_nodes; i++)
            if (s->nodes[i] == nd)
                s->nodes[i] = s->nodes[--s->n_nodes];
    }
    free(nd);
}

static ntp_status cuda_prepare(ntp_ctx *ctx, void *state, ntp_kargs *k, void **node_state,
                               size_t *workspace)
{
    cudab_state *s = state;
    *node_state = NULL;
    *workspace = 0;
    if (!s || !k->node)
        return ntp__error(ctx, NTP_STATUS_INTERNAL, "cuda: prepare without a state or a layer");
    if (!is_precision(k->node->precision))
        return ntp__cuda_error(ctx, k, NTP_STATUS_UNSUPPORTED, "precision %s",
                               ntp_dtype_name(k->node->precision));
    cudab_node *nd = calloc(1, sizeof *nd);
    if (!nd)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    nd->node = k->node;
    for (int i = 0; i < NTP_MAX_FUSED; i++)
        nd->post[i].buf = -1;
    if (s->n_nodes == s->cap_nodes) {
        int cap = s->cap_nodes ? 2 * s->cap_nodes : 64;
        cudab_node **p = realloc(s->nodes, (size_t)cap * sizeof *p);
        if (!p) {
            free(nd);
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
        }
        s->nodes = p;
        s->cap_nodes = cap;
    }
    s->nodes[s->n_nodes++] = nd;
    ntp_status st = ntp__cuda_plan_io(ctx, s, k, nd);
    if (!st) {
        switch (family(k->node->op)) {
        case CUDAB_CONV: st = ntp__cuda_conv_prepare(ctx, s, k, nd); break;
        case CUDAB_DENSE: st = ntp__cuda_dense_prepare(ctx, s, k, nd); break;
        case CUDAB_RNN: st = ntp__cuda_rnn_prepare(ctx, s, k, nd); break;
        case CUDAB_MISC: st = ntp__cuda_misc_prepare(ctx, s, k, nd); break;
        case CUDAB_DECODER: st = ntp__cuda_decoder_prepare(ctx, s, k, nd); break;
        }
    }
    if (!st && k->n_fused > 0) {
        st = add_post_ops(ctx, k, nd);
        size_t l = strlen(nd->impl);
        snprintf(nd->impl + l, sizeof nd->impl - l, "+%d fused", k->n_fused);
    }
    if (!st && !nd->run)
        st = ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL, "no kernel was chosen");
    if (st) {
        node_free(s, nd);
        return st;
    }
    /* Sub-steps: copies in, the layer, copies out. */
    bool h2d = false, d2h = false;
    const ntp_node *tail = k->n_fused > 0 ? k->fused[k->n_fused - 1] : k->node;
    nd->replay_ok = !nd->host_state;
    for (int i = 0; i < k->n_in; i++)
        if (nd->in[i].staged) {
            h2d = true;
            nd->replay_ok &= pass_boundary(k->g, k->node->in[i], false);
        }
    for (int f = 0; f < k->n_fused; f++)
        if (nd->post[f].buf >= 0 && nd->post[f].staged) {
            h2d = true;
            nd->replay_ok = false;
        }
    for (int i = 0; i < k->n_out; i++)
        if (nd->out[i].staged) {
            d2h = true;
            nd->replay_ok &= pass_boundary(k->g, tail->out[i], true);
        }
    nd->n_steps = 0;
    nd->h2d_step = h2d ? nd->n_steps++ : -1;
    nd->main_step = nd->n_steps++;
    nd->d2h_step = d2h ? nd->n_steps++ : -1;
    if (s->graph_replay && !s->replay_broken && !nd->replay_ok) {
        ntp__warn(
            ctx,
            "ntp_run_opts.cuda_graph: layer '%s' exchanges a tensor with another backend while a "
            "pass runs; passes run without graph replay",
            k->node->name);
        s->replay_broken = true;
    }
    if (nd->ws > s->ws_bytes)
        s->ws_bytes = nd->ws;
    *node_state = nd;
    return NTP_STATUS_OK;
}

static void cuda_release_node(void *state, void *node_state)
{
    node_free(state, node_state);
}

/* --- execute ------------------------------------------------------------------------------ */

static ntp_status run_h2d(ntp_ctx *ctx, cudab_state *s, cudab_node *nd, const ntp_kargs *k)
{
    for (int i = 0; i < k->n_in; i++)
        if (nd->in[i].staged && nd->in[i].bytes > 0) {
            cudaError_t e = cudaMemcpyAsync(nd->in[i].d, k->in[i].data, (size_t)nd->in[i].bytes,
                                            cudaMemcpyHostToDevice, s->stream);
            if (e != cudaSuccess)
                return ntp__cuda_rt(ctx, k, e, "copying an input to the device");
        }
    for (int f = 0; f < k->n_fused; f++)
        if (nd->post[f].buf >= 0 && nd->post[f].staged && nd->post[f].bytes > 0) {
            cudaError_t e =
                cudaMemcpyAsync(nd->post[f].d, k->post_in[f].data, (size_t)nd->post[f].bytes,
                                cudaMemcpyHostToDevice, s->stream);
            if (e != cudaSuccess)
                return ntp__cuda_rt(ctx, k, e, "copying an operand to the device");
        }
    return NTP_STATUS_OK;
}

/* The outputs other backends read must be complete when this returns, so
 * the copy is waited for unless it is being captured into a graph. */
static ntp_status run_d2h(ntp_ctx *ctx, cudab_state *s, cudab_node *nd, const ntp_kargs *k,
                          bool wait)
{
    bool any = false;
    for (int i = 0; i < k->n_out; i++)
        if (nd->out[i].staged && nd->out[i].bytes > 0) {
            cudaError_t e = cudaMemcpyAsync(k->out[i].data, nd->out[i].d, (size_t)nd->out[i].bytes,
                                            cudaMemcpyDeviceToHost, s->stream);
            if (e != cudaSuccess)
                return ntp__cuda_rt(ctx, k, e, "copying an output to the host");
            any = true;
        }
    if (any && wait) {
        cudaError_t e = cudaStreamSynchronize(s->stream);
        if (e != cudaSuccess)
            return ntp__cuda_rt(ctx, k, e, "running the layer");
    }
    return NTP_STATUS_OK;
}

static ntp_status run_main(ntp_ctx *ctx, cudab_state *s, cudab_node *nd, const ntp_kargs *k)
{
    return nd->run(ctx, s, nd, k);
}

/* One sub-step, or the whole layer (step < 0). */
static ntp_status run_steps(ntp_ctx *ctx, cudab_state *s, cudab_node *nd, const ntp_kargs *k,
                            int step, bool capture)
{
    ntp_status st = NTP_STATUS_OK;
    if ((step < 0 || step == nd->h2d_step) && nd->h2d_step >= 0)
        st = run_h2d(ctx, s, nd, k);
    if (!st && (step < 0 || step == nd->main_step))
        st = run_main(ctx, s, nd, k);
    if (!st && (step < 0 || step == nd->d2h_step) && nd->d2h_step >= 0)
        st = run_d2h(ctx, s, nd, k, !capture);
    return st;
}

/* Run eagerly with events around the work, for elapsed_ms. */
static ntp_status run_timed(ntp_ctx *ctx, cudab_state *s, cudab_node *nd, const ntp_kargs *k,
                            int step)
{
    s->timed = NULL;
    bool in = (step < 0 || step == nd->h2d_step) && nd->h2d_step >= 0;
    bool main = step < 0 || step == nd->main_step;
    bool out = (step < 0 || step == nd->d2h_step) && nd->d2h_step >= 0;
    cudaError_t e = cudaEventRecord(s->ev0, s->stream);
    if (e != cudaSuccess)
        return ntp__cuda_rt(ctx, k, e, "recording an event");
    ntp_status st = in ? run_h2d(ctx, s, nd, k) : NTP_STATUS_OK;
    if (!st && main)
        st = run_main(ctx, s, nd, k);
    /* The stop event is queued before the wait for the copy out, so that
     * the time is the device's. */
    if (!st && out)
        st = run_d2h(ctx, s, nd, k, false);
    if (st)
        return st;
    if ((e = cudaEventRecord(s->ev1, s->stream)) != cudaSuccess)
        return ntp__cuda_rt(ctx, k, e, "recording an event");
    if (out && (e = cudaStreamSynchronize(s->stream)) != cudaSuccess)
        return ntp__cuda_rt(ctx, k, e, "running the layer");
    s->timed = nd;
    return NTP_STATUS_OK;
}

/* Page-lock the layer's host buffers for graph capture. */
static bool pin_node(cudab_state *s, cudab_node *nd, const ntp_kargs *k)
{
    if (nd->pinned)
        return true;
    bool ok = true;
    for (int i = 0; i < k->n_in; i++)
        if (nd->in[i].staged)
            ok = ok && ntp__cuda_pin(s, k->in[i].data, nd->in[i].bytes);
    for (int i = 0; i < k->n_out; i++)
        if (nd->out[i].staged)
            ok = ok && ntp__cuda_pin(s, k->out[i].data, nd->out[i].bytes);
    nd->pinned = ok;
    return ok;
}

static void replay_off(cudab_state *s, const char *why)
{
    if (!s->replay_broken && s->warn_ctx)
        ntp__warn(s->warn_ctx, "ntp_run_opts.cuda_graph: %s; passes run without graph replay", why);
    s->replay_broken = true;
}

/* Capture the pending layers into a graph (g->exec). */
static ntp_status capture(ntp_ctx *ctx, cudab_state *s, cudab_graph *g)
{
    for (int i = 0; i < s->n_pending; i++)
        if (!pin_node(s, s->pending[i], s->pending_k[i])) {
            replay_off(s, "the host buffers at the graph's ends cannot be page-locked");
            return NTP_STATUS_UNSUPPORTED;
        }
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal);
    ntp_status st = e == cudaSuccess ? NTP_STATUS_OK : NTP_STATUS_BACKEND_ERROR;
    for (int i = 0; !st && i < s->n_pending; i++)
        st = run_steps(ctx, s, s->pending[i], s->pending_k[i], -1, true);
    if (e == cudaSuccess) {
        cudaError_t e2 = cudaStreamEndCapture(s->stream, &graph);
        if (e2 != cudaSuccess)
            e = e2;
    }
    cudaGraphExec_t exec = NULL;
    if (!st && e == cudaSuccess && graph)
        e = cudaGraphInstantiate(&exec, graph, 0);
    if (graph)
        cudaGraphDestroy(graph);
    if (st || e != cudaSuccess || !exec) {
        char why[256];
        snprintf(why, sizeof why, "capturing a pass of %d layers failed (%s)", s->n_pending,
                 e != cudaSuccess ? cudaGetErrorString(e) : ntp_ctx_errmsg(ctx));
        cudaGetLastError();
        replay_off(s, why);
        return NTP_STATUS_UNSUPPORTED;
    }
    g->exec = exec;
    return NTP_STATUS_OK;
}

/* Run the layers execute() recorded since the last synchronize. A
 * sequence seen for the first time runs eagerly (the libraries' lazy
 * set-up, first-run uploads and allocations must not happen inside a
 * capture); the second time it is captured, and from then on replayed. */
static ntp_status flush(ntp_ctx *ctx, cudab_state *s)
{
    int n = s->n_pending;
    if (n == 0)
        return NTP_STATUS_OK;
    ntp_status st = NTP_STATUS_OK;
    cudab_graph *g = NULL;
    for (int i = 0; i < s->n_graphs && !g; i++)
        if (s->graphs[i].n == n &&
            !memcmp(s->graphs[i].seq, s->pending, (size_t)n * sizeof *s->pending))
            g = &s->graphs[i];
    if (!g && n > 1 && !s->replay_broken && s->n_graphs < CUDAB_MAX_GRAPHS) {
        cudab_graph *ng = &s->graphs[s->n_graphs];
        memset(ng, 0, sizeof *ng);
        if ((ng->seq = malloc((size_t)n * sizeof *ng->seq))) {
            memcpy(ng->seq, s->pending, (size_t)n * sizeof *ng->seq);
            ng->n = n;
            s->n_graphs++;
        }
    } else if (g && !g->exec && !s->replay_broken) {
        capture(ctx, s, g);
    }
    if (g && g->exec && !s->replay_broken) {
        cudaError_t e = cudaGraphLaunch(g->exec, s->stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(s->stream);
        if (e != cudaSuccess)
            st = ntp__cuda_rt(ctx, s->pending_k[n - 1], e, "replaying the pass's graph");
    } else {
        /* One layer (the per-layer pass), a first sighting, or no replay:
         * eagerly; one layer is timed by its events. */
        for (int i = 0; i < n && !st; i++)
            st = n == 1 ? run_timed(ctx, s, s->pending[i], s->pending_k[i], -1)
                        : run_steps(ctx, s, s->pending[i], s->pending_k[i], -1, false);
    }
    s->n_pending = 0;
    return st;
}

static ntp_status defer(ntp_ctx *ctx, cudab_state *s, cudab_node *nd, const ntp_kargs *k)
{
    if (s->n_pending == s->cap_pending) {
        int cap = s->cap_pending ? 2 * s->cap_pending : 64;
        cudab_node **p = realloc(s->pending, (size_t)cap * sizeof *p);
        if (p)
            s->pending = p;
        const ntp_kargs **q = p ? realloc(s->pending_k, (size_t)cap * sizeof *q) : NULL;
        if (q)
            s->pending_k = q;
        if (!p || !q)
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
        s->cap_pending = cap;
    }
    s->pending[s->n_pending] = nd;
    s->pending_k[s->n_pending++] = k;
    return NTP_STATUS_OK;
}

/* Errors found where no status can be returned (synchronize) are kept and
 * returned by the next call; the message is already in the context. */
static ntp_status sticky(cudab_state *s)
{
    return s->sticky;
}

static ntp_status begin(ntp_ctx *ctx, cudab_state *s, cudab_node *nd, const ntp_kargs *k)
{
    if (!nd)
        return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL, "the layer was not prepared");
    s->warn_ctx = ctx;
    ntp_status st = sticky(s);
    if (!st && !s->bound)
        st = ntp__cuda_bind(ctx, s, k);
    return st;
}

static ntp_status cuda_execute(ntp_ctx *ctx, void *state, void *node_state, const ntp_kargs *k)
{
    cudab_state *s = state;
    cudab_node *nd = node_state;
    ntp_status st = begin(ctx, s, nd, k);
    if (st)
        return st;
    if (s->graph_replay && !s->replay_broken)
        return defer(ctx, s, nd, k);
    return run_timed(ctx, s, nd, k, -1);
}

static ntp_status cuda_execute_step(ntp_ctx *ctx, void *state, void *node_state, const ntp_kargs *k,
                                    int step)
{
    cudab_state *s = state;
    cudab_node *nd = node_state;
    ntp_status st = begin(ctx, s, nd, k);
    if (!st)
        st = flush(ctx, s);
    if (st)
        return st;
    if (step < 0 || step >= nd->n_steps)
        return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL, "no sub-step %d", step);
    return run_timed(ctx, s, nd, k, step);
}

static void cuda_synchronize(void *state)
{
    cudab_state *s = state;
    if (!s)
        return;
    if (s->n_pending > 0 && s->warn_ctx) {
        ntp_status st = flush(s->warn_ctx, s);
        if (st && !s->sticky)
            s->sticky = st;
    }
    cudaError_t e = cudaStreamSynchronize(s->stream);
    if (e != cudaSuccess && !s->sticky)
        s->sticky = s->warn_ctx ? ntp__cuda_rt(s->warn_ctx, NULL, e, "a queued layer")
                                : NTP_STATUS_BACKEND_ERROR;
}

static double cuda_elapsed_ms(void *state, void *node_state)
{
    cudab_state *s = state;
    float ms = 0;
    if (!s || !node_state || s->timed != node_state)
        return -1;
    s->timed = NULL;
    if (cudaEventElapsedTime(&ms, s->ev0, s->ev1) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return ms;
}

/* --- reports ----------------------------------------------------------------------------- */

static const char *cuda_impl_name(void *state, void *node_state)
{
    cudab_node *nd = node_state;
    return nd && nd->impl[0] ? nd->impl : "cuda";
}

static int cuda_n_steps(void *state, void *node_state, int *main_step)
{
    cudab_node *nd = node_state;
    *main_step = nd ? nd->main_step : 0;
    return nd ? nd->n_steps : 1;
}

/* The bytes run_h2d or run_d2h copy: every staged operand's. */
static int64_t staged_bytes(const cudab_io *io, int n)
{
    int64_t b = 0;
    for (int i = 0; i < n; i++)
        if (io[i].staged && io[i].bytes > 0)
            b += io[i].bytes;
    return b;
}

static void cuda_step_info(void *state, void *node_state, int step, const char **suffix,
                           const char **type, int64_t *bytes)
{
    (void)state;
    cudab_node *nd = node_state;
    *suffix = "";
    *type = NULL;
    if (nd && step == nd->h2d_step) {
        *suffix = ":h2d";
        *type = "h2d";
        *bytes = staged_bytes(nd->in, NTP_MAX_INPUTS) + staged_bytes(nd->post, NTP_MAX_FUSED);
    } else if (nd && step == nd->d2h_step) {
        *suffix = ":d2h";
        *type = "d2h";
        *bytes = staged_bytes(nd->out, NTP_MAX_OUTPUTS);
    }
}

static void cuda_device_memory(void *state, int64_t *weights, int64_t *activations,
                               int64_t *workspace, int64_t *peak)
{
    cudab_state *s = state;
    *weights = s ? s->weight_bytes : 0;
    *activations = s ? s->arena_bytes : 0;
    *workspace = s ? (int64_t)s->ws_bytes + (int64_t)CUDAB_BLAS_WS : 0;
    *peak = s ? s->peak : 0;
}

/* Activations and residual adds and multiplies fold into conv, deconv, fc
 * and matmul as the epilogue of their bias (one pass over the output); a
 * binary layer only when its other operand has the output's shape. */
static bool cuda_fusable(const ntp_graph *g, const ntp_node *head, int n_fused,
                         const ntp_node *next)
{
    if (!g || !head || !next || n_fused >= NTP_MAX_FUSED || n_fused >= CUDAK_MAX_POST)
        return false;
    if (head->op != NTP_OP_CONV && head->op != NTP_OP_DECONV && head->op != NTP_OP_FC &&
        head->op != NTP_OP_MATMUL)
        return false;
    if (next->precision != head->precision || next->n_out != 1)
        return false;
    cudak_post p;
    if (next->n_in == 1 && ntp__cuda_act_fn(next, &p))
        return true;
    if ((next->op != NTP_OP_ADD && next->op != NTP_OP_MUL) || next->n_in != 2)
        return false;
    const ntp_shape *ns = &g->tensors[next->out[0]].shape;
    return ntp_shape_equal(&g->tensors[next->in[0]].shape, ns) &&
           ntp_shape_equal(&g->tensors[next->in[1]].shape, ns);
}

ntp_status ntp__cuda_epilogue(ntp_ctx *ctx, cudab_state *s, cudab_node *nd, const ntp_kargs *k,
                              ntp_dtype t, void *y, int64_t n, const float *bias, int64_t channels,
                              int64_t inner)
{
    if (!bias && nd->n_post == 0)
        return NTP_STATUS_OK;
    cudak_epilogue e;
    memset(&e, 0, sizeof e);
    e.bias = bias;
    e.channels = channels > 0 ? channels : 1;
    e.inner = inner > 0 ? inner : 1;
    e.n_post = nd->n_post;
    for (int i = 0; i < nd->n_post; i++) {
        e.post[i] = nd->post_op[i];
        if (nd->post_operand[i] >= 0)
            e.post[i].operand = nd->post[nd->post_operand[i]].d;
    }
    int r = ntp__cudak_epilogue(s->stream, ntp__cuda_k_type(t), y, y, n, &e);
    return r ? ntp__cuda_rt(ctx, k, (cudaError_t)r, "the epilogue kernel") : NTP_STATUS_OK;
}

const ntp_backend_i ntp__backend_cuda = {
    .api_version = NTP_BACKEND_API_VERSION,
    .name = "cuda",
    .description = "NVIDIA GPU through cuDNN 9 and cuBLAS (CUDA 13): f32 (TF32 on request), f16, "
                   "bf16; device buffers between layers, host<->device copies as rows, CUDA "
                   "event timing, optional CUDA-graph replay",
    .kind = NTP_BACKEND_DEVICE,
    .priority = NTP_BACKEND_PRIORITY_REF - 50, /* asked for by name, never the default */
    .supports = cuda_supports,
    .storage_dtype = cuda_storage,
    .init = cuda_init,
    .prepare = cuda_prepare,
    .execute = cuda_execute,
    .synchronize = cuda_synchronize,
    .release_node = cuda_release_node,
    .release = cuda_release,
    .fusable = cuda_fusable,
    .impl_name = cuda_impl_name,
    .n_steps = cuda_n_steps,
    .step_info = cuda_step_info,
    .execute_step = cuda_execute_step,
    .available = cuda_available,
    .elapsed_ms = cuda_elapsed_ms,
    .device_memory = cuda_device_memory,
    .supports_backward = ntp__cuda_supports_backward,
    .backward = ntp__cuda_backward,
    .supports_train_forward = ntp__cuda_supports_train_forward,
    .train_forward = ntp__cuda_train_forward,
};
