/* The BLAS backend's method table (docs/backends.md): the GEMM-lowering
 * design of Caffe and Darknet on OpenBLAS's CBLAS interface.
 *
 * Threads: OpenBLAS keeps one process-wide pool. Debian's libopenblas0 is
 * the pthreads build (openblas_get_parallel() == 1; 2 would be OpenMP), so
 * its pool is separate from oneDNN's OpenMP team and XNNPACK's pthreadpool.
 * init() sets it to the plan's thread count (all usable CPUs for 0) before
 * anything runs, and every GEMM of the plan runs on the calling thread plus
 * that many - 1 workers; the plain loops of this backend and the reference
 * backend's layers run on the calling thread alone. Nothing here runs
 * inside another library's parallel region, so pools never nest. */
#include <cblas.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blas-impl.h"
#include "core/ctx-impl.h"

bool ntp__blas_fits(int64_t v)
{
    return v >= 0 && v < INT_MAX;
}

void ntp__blas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                    int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    if (m <= 0 || n <= 0)
        return;
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (blasint)m, (blasint)n, (blasint)k, alpha, a, (blasint)lda, b, (blasint)ldb, beta,
                c, (blasint)ldc);
}

void ntp__blas_gemv(int64_t m, int64_t n, float alpha, const float *a, int64_t lda, const float *x,
                    float beta, float *y)
{
    if (m <= 0)
        return;
    cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)m, (blasint)n, alpha, a, (blasint)lda, x, 1,
                beta, y, 1);
}

/* --- families ----------------------------------------------------------------- */

/* The run functions that have one step take the step number too. */
static ntp_status dense_run(ntp_ctx *ctx, const ntp_kargs *k, const blasb_node *nd, int step)
{
    (void)step;
    return ntp__blas_dense_run(ctx, k, nd);
}
static ntp_status rnn_run(ntp_ctx *ctx, const ntp_kargs *k, const blasb_node *nd, int step)
{
    (void)step;
    return ntp__blas_rnn_run(ctx, k, nd);
}
static ntp_status eltwise_run(ntp_ctx *ctx, const ntp_kargs *k, const blasb_node *nd, int step)
{
    (void)step;
    return ntp__blas_eltwise_run(ctx, k, nd);
}

static const blasb_family conv = {ntp__blas_conv_supports, ntp__blas_conv_prepare,
                                  ntp__blas_conv_run};
static const blasb_family dense = {ntp__blas_dense_supports, ntp__blas_dense_prepare, dense_run};
static const blasb_family rnn = {ntp__blas_rnn_supports, ntp__blas_rnn_prepare, rnn_run};
static const blasb_family eltwise = {ntp__blas_eltwise_supports, ntp__blas_eltwise_prepare,
                                     eltwise_run};
static const blasb_family decoder = {ntp__blas_decoder_supports, ntp__blas_decoder_prepare,
                                     ntp__blas_decoder_run};

/* The family of each op this backend runs; the others (NULL) stay on the
 * reference backend. Every unary element-wise op runs on its reference
 * function (eltwise.c). */
#define BLASB_UNARY_(e, fn, onnx, attrs, flops) [NTP_OP_##e] = &eltwise,
static const blasb_family *const families[NTP_OP_COUNT] = {[NTP_OP_CONV] = &conv,
                                                           [NTP_OP_DECONV] = &conv,
                                                           [NTP_OP_FC] = &dense,
                                                           [NTP_OP_MATMUL] = &dense,
                                                           [NTP_OP_ATTENTION] = &dense,
                                                           [NTP_OP_LSTM] = &rnn,
                                                           [NTP_OP_GRU] = &rnn,
                                                           [NTP_OP_RNN] = &rnn,
                                                           [NTP_OP_SOFTMAX] = &eltwise,
                                                           [NTP_OP_BATCHNORM] = &eltwise,
                                                           [NTP_OP_ADD] = &eltwise,
                                                           [NTP_OP_MUL] = &eltwise,
                                                           [NTP_OP_DROPOUT] = &eltwise,
                                                           [NTP_OP_RESHAPE] = &eltwise,
                                                           [NTP_OP_FLATTEN] = &eltwise,
                                                           [NTP_OP_MEMCPY] = &eltwise,
                                                           [NTP_OP_RMSNORM] = &decoder,
                                                           [NTP_OP_ROPE] = &decoder,
                                                           [NTP_OP_KV_ATTENTION] = &decoder,
                                                           [NTP_OP_LM_HEAD] = &decoder,
                                                           [NTP_OP_ARGMAX] = &decoder,
                                                           NTP_UNARY_TABLE(BLASB_UNARY_)};
#undef BLASB_UNARY_

static const blasb_family *family(ntp_op op)
{
    return (unsigned)op < NTP_OP_COUNT ? families[op] : NULL;
}

/* --- support ---------------------------------------------------------------- */

static bool blas_supports(const ntp_graph *g, const ntp_node *n, ntp_dtype p)
{
    if (!g || !n || (unsigned)n->op >= NTP_OP_COUNT || p != NTP_DTYPE_F32 || n->n_in < 1 ||
        n->n_out != 1)
        return false;
    const blasb_family *f = family(n->op);
    /* Data is f32; the decoder ops' index inputs (rope's positions, the
     * padding mask of kv_attention) are checked by their family. */
    for (int i = 0; i < n->n_in; i++)
        if (ntp__cin(g, n, i)->dtype != NTP_DTYPE_F32 && !(f == &decoder && i > 0))
            return false;
    return f && f->supports(g, n);
}

static ntp_dtype blas_storage(ntp_dtype p)
{
    (void)p;
    return NTP_DTYPE_F32;
}

/* --- lifetime ------------------------------------------------------------------ */

static int usable_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static ntp_status blas_init(ntp_ctx *ctx, const ntp_backend_opts *opts, void **state)
{
    blasb_state *s = calloc(1, sizeof *s);
    if (!s)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "blas: out of memory");
    s->threads = opts && opts->threads > 0 ? opts->threads : usable_cpus();
    openblas_set_num_threads(s->threads);
    *state = s;
    return NTP_STATUS_OK;
}

static void blas_release(void *state)
{
    free(state);
}

/* --- prepare / execute --------------------------------------------------------- */

static ntp_status blas_prepare(ntp_ctx *ctx, void *state, ntp_kargs *k, void **node_state,
                               size_t *workspace)
{
    blasb_state *s = state;
    *node_state = NULL;
    *workspace = 0;
    if (!k->node)
        return ntp__error(ctx, NTP_STATUS_INTERNAL, "blas: kernel arguments without a node");
    const blasb_family *fam = family(k->node->op);
    for (int i = 0; i < k->n_in; i++)
        if (k->in[i].dtype != NTP_DTYPE_F32 && !(fam == &decoder && i > 0))
            return ntp__blas_error(ctx, k, NTP_STATUS_UNSUPPORTED, "input %d is stored as %s", i,
                                   ntp_dtype_name(k->in[i].dtype));
    blasb_node *nd = calloc(1, sizeof *nd);
    if (!nd)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "blas: out of memory");
    /* Another plan of this process may have changed OpenBLAS's pool size. */
    if (s && openblas_get_num_threads() != s->threads)
        openblas_set_num_threads(s->threads);
    ntp_status st =
        fam ? fam->prepare(ctx, k, nd)
            : ntp__blas_error(ctx, k, NTP_STATUS_INTERNAL, "not an op this backend runs");
    /* The folded layers, applied in order after the head's result. */
    for (int f = 0; f < k->n_fused && !st; f++) {
        nd->post[f].node = k->fused[f];
        nd->post[f].operand = k->post_in[f].shape.ndim > 0 && (k->fused[f]->op == NTP_OP_ADD ||
                                                               k->fused[f]->op == NTP_OP_MUL)
                                  ? f
                                  : -1;
        nd->n_post++;
    }
    if (!st && k->n_fused > 0) {
        size_t l = strlen(nd->impl);
        snprintf(nd->impl + l, sizeof nd->impl - l, "+%d fused", k->n_fused);
    }
    if (st) {
        free(nd->own);
        free(nd);
        return st;
    }
    *workspace = nd->ws;
    *node_state = nd;
    return NTP_STATUS_OK;
}

static ntp_status run_step(ntp_ctx *ctx, const ntp_kargs *k, const blasb_node *nd, int step)
{
    const blasb_family *f = family(k->node->op);
    if (!f)
        return ntp__blas_error(ctx, k, NTP_STATUS_INTERNAL, "not an op this backend runs");
    return f->run(ctx, k, nd, step);
}

static ntp_status blas_execute(ntp_ctx *ctx, void *state, void *node_state, const ntp_kargs *k)
{
    const blasb_node *nd = node_state;
    if (!nd)
        return ntp__error(ctx, NTP_STATUS_INTERNAL, "blas: layer '%s' was not prepared",
                          k->node && k->node->name ? k->node->name : "?");
    for (int i = 0; i < nd->n_steps; i++) {
        ntp_status st = run_step(ctx, k, nd, i);
        if (st)
            return st;
    }
    return NTP_STATUS_OK;
}

static ntp_status blas_execute_step(ntp_ctx *ctx, void *state, void *node_state, const ntp_kargs *k,
                                    int step)
{
    const blasb_node *nd = node_state;
    if (!nd || step < 0 || step >= nd->n_steps)
        return ntp__error(ctx, NTP_STATUS_INTERNAL, "blas: layer '%s' has no step %d",
                          k->node && k->node->name ? k->node->name : "?", step);
    return run_step(ctx, k, nd, step);
}

static void blas_release_node(void *state, void *node_state)
{
    blasb_node *nd = node_state;
    if (!nd)
        return;
    free(nd->own);
    free(nd);
}

static const char *blas_impl_name(void *state, void *node_state)
{
    const blasb_node *nd = node_state;
    /* The engine interns it (ntp__be_impl_name): the name outlives nd. */
    return nd && nd->impl[0] ? nd->impl : "blas";
}

static int blas_n_steps(void *state, void *node_state, int *main_step)
{
    const blasb_node *nd = node_state;
    *main_step = nd ? nd->main_step : 0;
    return nd ? nd->n_steps : 1;
}

static void blas_step_info(void *state, void *node_state, int step, const char **suffix,
                           const char **type, int64_t *bytes)
{
    const blasb_node *nd = node_state;
    *suffix = "";
    *type = NULL;
    if (nd && step != nd->main_step && step >= 0 && step < nd->n_steps) {
        *suffix = nd->step_suffix;
        *type = nd->step_type;
        *bytes = nd->step_bytes;
    }
}

/* --- fusion -------------------------------------------------------------------- */

/* After a conv, deconv, fc or matmul: any activation, and add or mul with
 * one other operand of the result's own shape (a residual connection). */
static bool blas_fusable(const ntp_graph *g, const ntp_node *head, int n_fused,
                         const ntp_node *next)
{
    if (!g || !head || !next || n_fused >= NTP_MAX_FUSED || next->precision != NTP_DTYPE_F32)
        return false;
    if (head->op != NTP_OP_CONV && head->op != NTP_OP_DECONV && head->op != NTP_OP_FC &&
        head->op != NTP_OP_MATMUL)
        return false;
    if (ntp__op_is_unary(next->op)) /* the reference functions, applied in place */
        return true;
    if ((next->op != NTP_OP_ADD && next->op != NTP_OP_MUL) || next->n_in != 2)
        return false;
    const ntp_shape *ys = &ntp__cout(g, next, 0)->shape;
    return ntp_shape_equal(&ntp__cin(g, next, 0)->shape, ys) &&
           ntp_shape_equal(&ntp__cin(g, next, 1)->shape, ys) &&
           ntp__cin(g, next, 0)->dtype == NTP_DTYPE_F32 &&
           ntp__cin(g, next, 1)->dtype == NTP_DTYPE_F32;
}

const ntp_backend_i ntp__backend_blas = {
    .api_version = NTP_BACKEND_API_VERSION,
    .name = "blas",
    .description = "the Caffe/Darknet design on OpenBLAS: im2col + SGEMM convolutions, GEMM for "
                   "fc, matmul, recurrent gates and attention, plain loops around them; f32",
    .kind = NTP_BACKEND_HOST,
    .priority = NTP_BACKEND_PRIORITY_REF + 100,
    .supports = blas_supports,
    .storage_dtype = blas_storage,
    .init = blas_init,
    .prepare = blas_prepare,
    .execute = blas_execute,
    .release_node = blas_release_node,
    .release = blas_release,
    .fusable = blas_fusable,
    .impl_name = blas_impl_name,
    .n_steps = blas_n_steps,
    .step_info = blas_step_info,
    .execute_step = blas_execute_step,
};
