/* fc, matmul and attention through cuBLAS.
 *
 * cuBLAS is column-major; a row-major product C = op(A)·op(B) is computed
 * as the column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, which reads every row-major
 * operand as it lies (no copies).
 *
 * fc         one GEMM [rows, K]·Wᵀ (an input of any rank is one matrix of
 *            rows = the product of its leading dims), then the bias and any
 *            folded layers as one epilogue pass.
 * matmul     one strided batched GEMM; a batch dim an operand lacks (or has
 *            as 1 throughout) is a stride of 0. Broadcasting patterns that
 *            are neither stay on the reference backend.
 * attention  torch.nn.MultiheadAttention: the q, k, v projections as one
 *            GEMM [N·S, 3D] (three for cross-attention), the scores of every
 *            (batch, head) pair as one batched GEMM through pointer arrays
 *            into the heads' columns (no transposes), a softmax kernel with
 *            the 1/√hd scale and the causal mask, the context as a second
 *            batched GEMM written straight into [N·S, D], and the output
 *            projection.
 *
 * Compute types: f32 is CUBLAS_COMPUTE_32F (IEEE; CUBLAS_COMPUTE_32F_FAST_TF32
 * with --precision tf32); f16 and bf16 accumulate in f32
 * (CUBLAS_COMPUTE_32F), as PyTorch does. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "cuda-impl.h"

/* What a layer of this family is; D_NONE for an op of another family. */
typedef enum { D_NONE, D_FC, D_MATMUL, D_ATTN } dense_kind;

static const dense_kind dense_kinds[NTP_OP_COUNT] = {
    [NTP_OP_FC] = D_FC,
    [NTP_OP_LM_HEAD] = D_FC, /* x·Wᵀ of vocab units, no bias (docs/decoders.md) */
    [NTP_OP_MATMUL] = D_MATMUL,
    [NTP_OP_ATTENTION] = D_ATTN,
};

static dense_kind kind_of(ntp_op op)
{
    return (unsigned)op < NTP_OP_COUNT ? dense_kinds[op] : D_NONE;
}

typedef struct dense_priv {
    dense_kind kind;
    ntp_dtype t;
    /* fc, matmul */
    int64_t m, n, k, batch;
    bool ta, tb;
    int64_t lda, ldb, sa, sb;
    bool bias;
    /* attention */
    int64_t N, S, Skv, D, heads, hd;
    bool self;
    size_t off_q, off_k, off_v, off_p, off_c; /* in the workspace, bytes */
    int64_t ldq, ldk, ldv;
    void **ptrs; /* device pointer arrays: 6 × N·heads */
    int64_t ptr_bytes;
    cudab_state *s;
} dense_priv;

static void dense_free(cudab_node *nd)
{
    dense_priv *p = nd->priv;
    if (!p)
        return;
    if (p->ptrs)
        ntp__cuda_free(p->s, p->ptrs, p->ptr_bytes);
    free(p);
    nd->priv = NULL;
}

static bool fits(int64_t v)
{
    return v >= 0 && v < 0x7fffffff;
}

/* The broadcast stride of one matmul operand's batch (its matrices of
 * `mat` elements), or -1 when it is neither the whole batch nor one
 * matrix. */
static int64_t batch_stride(const ntp_shape *op, const ntp_shape *out, int64_t mat)
{
    int ob = out->ndim - 2, b = op->ndim - 2;
    int64_t own = 1;
    for (int d = 0; d < b; d++)
        own *= op->dim[d];
    if (own == 1)
        return 0;
    if (b != ob)
        return -1;
    for (int d = 0; d < b; d++)
        if (op->dim[d] != out->dim[d])
            return -1;
    return mat;
}

bool ntp__cuda_dense_supports(const ntp_graph *g, const ntp_node *n)
{
    const ntp_shape *y = &ntp__cout(g, n, 0)->shape;
    if (n->n_out != 1)
        return false;
    for (int d = 0; d < y->ndim; d++)
        if (!fits(y->dim[d]))
            return false;
    switch (kind_of(n->op)) {
    case D_FC: {
        const ntp_shape *x = &ntp__cin(g, n, 0)->shape;
        int64_t rows = ntp_shape_numel(x) / x->dim[x->ndim - 1];
        return n->n_in == 1 && fits(rows) && fits(x->dim[x->ndim - 1]);
    }
    case D_MATMUL: {
        if (n->n_in != 2)
            return false;
        const ntp_shape *a = &ntp__cin(g, n, 0)->shape, *b = &ntp__cin(g, n, 1)->shape;
        if (a->ndim < 2 || b->ndim < 2 || y->ndim < 2)
            return false;
        int64_t M = y->dim[y->ndim - 2], N = y->dim[y->ndim - 1];
        int64_t K = n->a.transpose_a ? a->dim[a->ndim - 2] : a->dim[a->ndim - 1];
        return fits(K) && batch_stride(a, y, M * K) >= 0 && batch_stride(b, y, K * N) >= 0;
    }
    case D_ATTN: {
        if (n->n_in != 1 && n->n_in != 3)
            return false;
        const ntp_shape *q = &ntp__cin(g, n, 0)->shape;
        if (q->ndim != 3 || n->a.heads < 1 || q->dim[2] % n->a.heads)
            return false;
        int64_t skv = n->n_in == 3 ? ntp__cin(g, n, 1)->shape.dim[1] : q->dim[1];
        return fits(q->dim[0] * n->a.heads) && fits(skv) && (!n->a.causal || skv == q->dim[1]);
    }
    case D_NONE: return false;
    }
    return false;
}

static cublasComputeType_t compute_type(const cudab_state *s, ntp_dtype t)
{
    return t == NTP_DTYPE_F32 && s->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

/* Row-major C[m, n] = alpha·op(A)·op(B) + beta·C for `batch` matrices at
 * element strides sa, sb, sc (0: shared). */
static ntp_status gemm(ntp_ctx *ctx, cudab_state *s, const ntp_kargs *k, ntp_dtype t, bool ta,
                       bool tb, int64_t m, int64_t n, int64_t kk, float alpha, const void *A,
                       int64_t lda, int64_t sa, const void *B, int64_t ldb, int64_t sb, float beta,
                       void *C, int64_t ldc, int64_t sc, int64_t batch)
{
    cudaDataType_t dt = ntp__cuda_blas_type(t);
    cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasStatus_t e;
    if (batch <= 1)
        e = cublasGemmEx(s->blas, ob, oa, (int)n, (int)m, (int)kk, &alpha, B, dt, (int)ldb, A, dt,
                         (int)lda, &beta, C, dt, (int)ldc, compute_type(s, t), CUBLAS_GEMM_DEFAULT);
    else
        e = cublasGemmStridedBatchedEx(s->blas, ob, oa, (int)n, (int)m, (int)kk, &alpha, B, dt,
                                       (int)ldb, (long long)sb, A, dt, (int)lda, (long long)sa,
                                       &beta, C, dt, (int)ldc, (long long)sc, (int)batch,
                                       compute_type(s, t), CUBLAS_GEMM_DEFAULT);
    return e == CUBLAS_STATUS_SUCCESS ? NTP_STATUS_OK : ntp__cuda_blas(ctx, k, e, "GEMM");
}

/* y[rows, cols] += bias[cols], nothing else. */
static ntp_status add_bias(ntp_ctx *ctx, cudab_state *s, const ntp_kargs *k, ntp_dtype t, void *y,
                           int64_t rows, int64_t cols, const float *bias)
{
    cudak_epilogue e;
    memset(&e, 0, sizeof e);
    e.bias = bias;
    e.channels = cols;
    e.inner = 1;
    int r = ntp__cudak_epilogue(s->stream, ntp__cuda_k_type(t), y, y, rows * cols, &e);
    return r ? ntp__cuda_rt(ctx, k, (cudaError_t)r, "the bias kernel") : NTP_STATUS_OK;
}

static ntp_status fc_run(ntp_ctx *ctx, cudab_state *s, cudab_node *nd, const ntp_kargs *k)
{
    dense_priv *p = nd->priv;
    ntp_status st = gemm(ctx, s, k, p->t, false, true, p->m, p->n, p->k, 1.0f, nd->in[0].d, p->k, 0,
                         nd->wp[0], p->k, 0, 0.0f, nd->out[0].d, p->n, 0, 1);
    if (st)
        return st;
    return ntp__cuda_epilogue(ctx, s, nd, k, p->t, nd->out[0].d, p->m * p->n,
                              p->bias ? ntp__cuda_weight_f32(nd, 1) : NULL, p->n, 1);
}

static ntp_status matmul_run(ntp_ctx *ctx, cudab_state *s, cudab_node *nd, const ntp_kargs *k)
{
    dense_priv *p = nd->priv;
    ntp_status st =
        gemm(ctx, s, k, p->t, p->ta, p->tb, p->m, p->n, p->k, 1.0f, nd->in[0].d, p->lda, p->sa,
             nd->in[1].d, p->ldb, p->sb, 0.0f, nd->out[0].d, p->n, p->m * p->n, p->batch);
    if (st)
        return st;
    return ntp__cuda_epilogue(ctx, s, nd, k, p->t, nd->out[0].d, p->batch * p->m * p->n, NULL, 1,
                              1);
}

/* The pointer arrays of the two batched GEMMs, in cuBLAS's argument order
 * (column-major: the row-major right operand first). Built once the
 * workspace exists, at the first run, and uploaded synchronously (never
 * inside a graph capture: the first run of a plan is never captured). */
static ntp_status attn_pointers(ntp_ctx *ctx, cudab_state *s, cudab_node *nd, const ntp_kargs *k)
{
    dense_priv *p = nd->priv;
    int64_t nb = p->N * p->heads;
    size_t es = ntp_dtype_size(p->t);
    const void **h = malloc((size_t)(6 * nb) * sizeof *h);
    if (!h)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    char *ws = s->ws;
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t hh = 0; hh < p->heads; hh++) {
            int64_t i = n * p->heads + hh;
            const char *q = ws + p->off_q + (size_t)(n * p->S * p->ldq + hh * p->hd) * es;
            const char *kk = ws + p->off_k + (size_t)(n * p->Skv * p->ldk + hh * p->hd) * es;
            const char *v = ws + p->off_v + (size_t)(n * p->Skv * p->ldv + hh * p->hd) * es;
            const char *pr = ws + p->off_p + (size_t)(i * p->S * p->Skv) * es;
            const char *c = ws + p->off_c + (size_t)(n * p->S * p->D + hh * p->hd) * es;
            h[0 * nb + i] = kk; /* scores: B = K_h (transposed) */
            h[1 * nb + i] = q;  /*         A = Q_h */
            h[2 * nb + i] = pr; /*         C = P */
            h[3 * nb + i] = v;  /* context: B = V_h */
            h[4 * nb + i] = pr; /*          A = P */
            h[5 * nb + i] = c;  /*          C = the heads' columns of C */
        }
    cudaError_t e = cudaMemcpy(p->ptrs, h, (size_t)(6 * nb) * sizeof *h, cudaMemcpyHostToDevice);
    free(h);
    return e == cudaSuccess ? NTP_STATUS_OK : ntp__cuda_rt(ctx, k, e, "uploading pointer arrays");
}

static ntp_status batched(ntp_ctx *ctx, cudab_state *s, const ntp_kargs *k, ntp_dtype t, bool ta,
                          bool tb, int64_t m, int64_t n, int64_t kk, float alpha, void **ptrs,
                          int64_t lda, int64_t ldb, int64_t ldc, int64_t nb)
{
    /* ptrs: B array, A array, C array (column-major order of arguments). */
    cudaDataType_t dt = ntp__cuda_blas_type(t);
    float beta = 0.0f;
    cublasStatus_t e = cublasGemmBatchedEx(
        s->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m,
        (int)kk, &alpha, (const void *const *)ptrs, dt, (int)ldb, (const void *const *)(ptrs + nb),
        dt, (int)lda, &beta, ptrs + 2 * nb, dt, (int)ldc, (int)nb, compute_type(s, t),
        CUBLAS_GEMM_DEFAULT);
    return e == CUBLAS_STATUS_SUCCESS ? NTP_STATUS_OK : ntp__cuda_blas(ctx, k, e, "batched GEMM");
}

static ntp_status attn_run(ntp_ctx *ctx, cudab_state *s, cudab_node *nd, const ntp_kargs *k)
{
    dense_priv *p = nd->priv;
    ntp_status st = NTP_STATUS_OK;
    if (!p->ptrs) {
        p->ptr_bytes = 6 * p->N * p->heads * (int64_t)sizeof(void *);
        if ((st = ntp__cuda_alloc(ctx, s, k, (void **)&p->ptrs, p->ptr_bytes, "pointer arrays")) ||
            (st = attn_pointers(ctx, s, nd, k)))
            return st;
    }
    size_t es = ntp_dtype_size(p->t);
    char *ws = s->ws;
    int64_t D = p->D, rq = p->N * p->S, rkv = p->N * p->Skv;
    const float *in_bias = p->bias ? ntp__cuda_weight_f32(nd, 1) : NULL;
    const char *in_proj = nd->wp[0];
    const void *out_proj = nd->wp[p->bias ? 2 : 1];
    const float *out_bias = p->bias ? ntp__cuda_weight_f32(nd, 3) : NULL;
    /* Projections: one [N·S, 3D] GEMM for self-attention. */
    if (p->self) {
        st = gemm(ctx, s, k, p->t, false, true, rq, 3 * D, D, 1.0f, nd->in[0].d, D, 0, in_proj, D,
                  0, 0.0f, ws + p->off_q, 3 * D, 0, 1);
        if (!st && in_bias)
            st = add_bias(ctx, s, k, p->t, ws + p->off_q, rq, 3 * D, in_bias);
    } else {
        size_t off[3] = {p->off_q, p->off_k, p->off_v};
        int64_t rows[3] = {rq, rkv, rkv};
        for (int i = 0; i < 3 && !st; i++) {
            st = gemm(ctx, s, k, p->t, false, true, rows[i], D, D, 1.0f, nd->in[i].d, D, 0,
                      in_proj + (size_t)(i * D * D) * es, D, 0, 0.0f, ws + off[i], D, 0, 1);
            if (!st && in_bias)
                st = add_bias(ctx, s, k, p->t, ws + off[i], rows[i], D, in_bias + i * D);
        }
    }
    if (st)
        return st;
    int64_t nb = p->N * p->heads;
    /* Scores P = Q_h·K_hᵀ for every (batch, head); the scale is the
     * softmax's. */
    if ((st = batched(ctx, s, k, p->t, false, true, p->S, p->Skv, p->hd, 1.0f, p->ptrs, p->ldq,
                      p->ldk, p->Skv, nb)))
        return st;
    int r = ntp__cudak_softmax(s->stream, ntp__cuda_k_type(p->t), ws + p->off_p, ws + p->off_p,
                               nb * p->S, p->Skv, 1, (float)(1.0 / sqrt((double)p->hd)),
                               k->node->a.causal ? p->S : 0);
    if (r)
        return ntp__cuda_rt(ctx, k, (cudaError_t)r, "the softmax kernel");
    /* Context: C[:, h·hd ..] = P_h·V_h, into the heads' columns. */
    if ((st = batched(ctx, s, k, p->t, false, false, p->S, p->hd, p->Skv, 1.0f, p->ptrs + 3 * nb,
                      p->Skv, p->ldv, D, nb)))
        return st;
    st = gemm(ctx, s, k, p->t, false, true, rq, D, D, 1.0f, ws + p->off_c, D, 0, out_proj, D, 0,
              0.0f, nd->out[0].d, D, 0, 1);
    if (st)
        return st;
    return ntp__cuda_epilogue(ctx, s, nd, k, p->t, nd->out[0].d, rq * D, out_bias, D, 1);
}

static size_t round256(size_t v)
{
    return (v + 255) / 256 * 256;
}

ntp_status ntp__cuda_dense_prepare(ntp_ctx *ctx, cudab_state *s, ntp_kargs *k, cudab_node *nd)
{
    const ntp_node *n = k->node;
    dense_priv *p = calloc(1, sizeof *p);
    if (!p)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    nd->priv = p;
    nd->free_priv = dense_free;
    p->s = s;
    p->t = k->out[0].dtype;
    for (int i = 0; i < k->n_in; i++)
        if (k->in[i].dtype != p->t)
            return ntp__cuda_error(ctx, k, NTP_STATUS_UNSUPPORTED, "input %d is %s, output %s", i,
                                   ntp_dtype_name(k->in[i].dtype), ntp_dtype_name(p->t));
    const char *ct = p->t == NTP_DTYPE_F32 ? (s->tf32 ? "tf32" : "f32") : ntp_dtype_name(p->t);
    const ntp_shape *y = &k->out[0].shape;
    ntp_status st;
    switch (kind_of(n->op)) {
    case D_FC: {
        const ntp_shape *x = &k->in[0].shape;
        p->kind = D_FC;
        p->k = x->dim[x->ndim - 1];
        p->m = ntp_shape_numel(x) / p->k;
        p->n = y->dim[y->ndim - 1];
        p->bias = n->a.bias && k->n_w >= 2;
        if (k->n_w < 1 || k->w[0].dtype != p->t || ntp_shape_numel(&k->w[0].shape) != p->n * p->k)
            return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL,
                                   "fc weights do not match [%lld, %lld]", (long long)p->n,
                                   (long long)p->k);
        if ((st = ntp__cuda_upload_weights(ctx, s, k, nd, true)))
            return st;
        nd->run = fc_run;
        snprintf(nd->impl, sizeof nd->impl, "cublas:gemm_ex:%s", ct);
        return NTP_STATUS_OK;
    }
    case D_MATMUL: {
        const ntp_shape *a = &k->in[0].shape, *b = &k->in[1].shape;
        p->kind = D_MATMUL;
        p->ta = n->a.transpose_a;
        p->tb = n->a.transpose_b;
        p->m = y->dim[y->ndim - 2];
        p->n = y->dim[y->ndim - 1];
        p->k = p->ta ? a->dim[a->ndim - 2] : a->dim[a->ndim - 1];
        p->lda = p->ta ? p->m : p->k;
        p->ldb = p->tb ? p->k : p->n;
        p->batch = ntp_shape_numel(y) / (p->m * p->n);
        p->sa = batch_stride(a, y, p->m * p->k);
        p->sb = batch_stride(b, y, p->k * p->n);
        if (p->sa < 0 || p->sb < 0)
            return ntp__cuda_error(ctx, k, NTP_STATUS_UNSUPPORTED, "batch broadcasting pattern");
        nd->run = matmul_run;
        snprintf(nd->impl, sizeof nd->impl, "cublas:gemm_%s:%s",
                 p->batch > 1 ? "strided_batched_ex" : "ex", ct);
        return NTP_STATUS_OK;
    }
    case D_NONE: return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL, "not a dense op");
    case D_ATTN: {
        const ntp_shape *q = &k->in[0].shape;
        p->kind = D_ATTN;
        p->N = q->dim[0];
        p->S = q->dim[1];
        p->D = q->dim[2];
        p->heads = n->a.heads;
        p->hd = p->D / p->heads;
        p->self = k->n_in == 1;
        p->Skv = p->self ? p->S : k->in[1].shape.dim[1];
        p->bias = k->n_w == 4;
        if (k->n_w != 2 && k->n_w != 4)
            return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL,
                                   "attention takes 2 or 4 weights, got %d", k->n_w);
        size_t es = ntp_dtype_size(p->t), off = 0;
        int64_t D = p->D, rq = p->N * p->S, rkv = p->N * p->Skv;
        if (p->self) {
            /* Q, K and V are the column blocks of one [N·S, 3D] matrix. */
            p->off_q = 0;
            p->off_k = (size_t)D * es;
            p->off_v = (size_t)(2 * D) * es;
            p->ldq = p->ldk = p->ldv = 3 * D;
            off = round256((size_t)(rq * 3 * D) * es);
        } else {
            p->off_q = 0;
            p->off_k = round256((size_t)(rq * D) * es);
            p->off_v = p->off_k + round256((size_t)(rkv * D) * es);
            p->ldq = p->ldk = p->ldv = D;
            off = p->off_v + round256((size_t)(rkv * D) * es);
        }
        p->off_p = off;
        off += round256((size_t)(p->N * p->heads * p->S * p->Skv) * es);
        p->off_c = off;
        off += round256((size_t)(rq * D) * es);
        nd->ws = off;
        if ((st = ntp__cuda_upload_weights(ctx, s, k, nd, true)))
            return st;
        nd->run = attn_run;
        snprintf(nd->impl, sizeof nd->impl, "cublas:gemm_ex+gemm_batched_ex:%s", ct);
        return NTP_STATUS_OK;
    }
    }
    return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL, "not a dense op");
}
