/* The decoder-transformer ops on BLAS (docs/decoders.md): the reference
 * backend's kernels (ref-decoder.c), with kv_attention's two products per
 * head (Q·Kᵀ over the cache, P·V) and lm_head's x·Wᵀ on SGEMM. rmsnorm,
 * rope and argmax are the reference loops themselves (Caffe's CPU mode:
 * plain loops around the GEMMs), so a decoder stays on one backend. The
 * key/value cache is the driver's (ntp_kv_state), in every type the
 * reference kernel keeps (f32, bf16, f16, i8). */
#include <stdio.h>

#include "backend/ref/ref-impl.h"
#include "blas-impl.h"

bool ntp__blas_decoder_supports(const ntp_graph *g, const ntp_node *n)
{
    const ntp_shape *x = &ntp__cin(g, n, 0)->shape;
    int64_t last = x->ndim > 0 ? x->dim[x->ndim - 1] : 0;
    switch ((int)n->op) {
    case NTP_OP_LM_HEAD:
        return n->n_w == 1 && ntp__blas_fits(last) && ntp__blas_fits(n->a.vocab) &&
               ntp__blas_fits(last > 0 ? ntp_shape_numel(x) / last : 0);
    case NTP_OP_KV_ATTENTION: {
        /* The positions a pass attends over and the queries' rows are
         * GEMM dimensions; the cache's capacity bounds the former. */
        int64_t H = n->a.heads, KVH = n->a.kv_heads > 0 ? n->a.kv_heads : H;
        if (x->ndim != 3 || H <= 0 || KVH <= 0 || H % KVH || x->dim[2] % H)
            return false;
        if (n->n_in == 4) {
            ntp_dtype m = ntp__cin(g, n, 3)->dtype;
            if (m != NTP_DTYPE_I32 && m != NTP_DTYPE_I64)
                return false;
        }
        return ntp__blas_fits(x->dim[2]) && ntp__blas_fits(x->dim[1]);
    }
    case NTP_OP_ROPE: {
        ntp_dtype p = ntp__cin(g, n, 1)->dtype;
        return p == NTP_DTYPE_I32 || p == NTP_DTYPE_I64;
    }
    case NTP_OP_RMSNORM: return n->n_w == 1;
    case NTP_OP_ARGMAX: return ntp__cout(g, n, 0)->dtype == NTP_DTYPE_I32;
    }
    return false;
}

ntp_status ntp__blas_decoder_prepare(ntp_ctx *ctx, const ntp_kargs *k, blasb_node *nd)
{
    (void)ctx;
    nd->n_steps = 1;
    nd->main_step = 0;
    nd->ws = ntp__ref_decoder_workspace(k);
    bool gemm = k->node->op == NTP_OP_KV_ATTENTION || k->node->op == NTP_OP_LM_HEAD;
    snprintf(nd->impl, sizeof nd->impl, "%s", gemm ? "openblas:sgemm" : "blas:loop");
    return NTP_STATUS_OK;
}

ntp_status ntp__blas_decoder_run(ntp_ctx *ctx, const ntp_kargs *k, const blasb_node *nd, int step)
{
    (void)nd;
    (void)step;
    return ntp__ref_decoder_run(ctx, k, ntp__blas_gemm);
}
