/* Convolution and transposed convolution on BLAS: the reference backend's
 * im2col + GEMM and GEMM + col2im (ref-conv.c, 1-d to 3-d, grouped and
 * dilated) with cblas_sgemm as its GEMM (blas-impl.h).
 *
 * Staged layers (the columns of the whole batch fit BLASB_STAGED_MAX) lower
 * every (image, group) first, as their own sub-step, then multiply; the
 * others interleave lowering and products per (image, group) in one step
 * with a single column buffer. */
#include <stdio.h>
#include <string.h>

#include "backend/ref/ref-impl.h"
#include "blas-impl.h"

typedef ntp_ref_conv_geom geom;

bool ntp__blas_conv_supports(const ntp_graph *gr, const ntp_node *n)
{
    geom g;
    if (n->n_in != 1 || n->n_w < 1 ||
        !ntp__ref_conv_geom(n, &ntp__cin(gr, n, 0)->shape, &ntp__cout(gr, n, 0)->shape, &g))
        return false;
    /* GEMM dimensions and leading dimensions go to CBLAS as int. */
    return ntp__blas_fits(g.Cg * g.k_sz) && ntp__blas_fits(g.Fg * g.k_sz) &&
           ntp__blas_fits(g.out_sz) && ntp__blas_fits(g.in_sz) && ntp__blas_fits(g.F);
}

ntp_status ntp__blas_conv_prepare(ntp_ctx *ctx, const ntp_kargs *k, blasb_node *nd)
{
    geom g;
    const ntp_node *n = k->node;
    if (k->n_in != 1 || k->n_w < 1 || !ntp__ref_conv_geom(n, &k->in[0].shape, &k->out[0].shape, &g))
        return ntp__blas_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                               "input and output do not fit the layer");
    int64_t wn = n->op == NTP_OP_CONV ? g.F * g.Cg * g.k_sz : g.C * g.Fg * g.k_sz;
    if (ntp_shape_numel(&k->w[0].shape) != wn ||
        (k->n_w > 1 && ntp_shape_numel(&k->w[1].shape) != g.F))
        return ntp__blas_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "weights do not fit the layer");
    bool conv = n->op == NTP_OP_CONV;
    nd->direct = conv && ntp__ref_conv_pointwise(&g);
    size_t one = (size_t)ntp__ref_conv_col_floats(n->op, &g) * sizeof(float);
    size_t all = one * (size_t)(g.N * g.G);
    nd->staged =
        !nd->direct && g.N * g.G > 0 && all / (size_t)(g.N * g.G) == one && all <= BLASB_STAGED_MAX;
    nd->ws = nd->direct ? 0 : nd->staged ? all : one;
    nd->n_steps = nd->staged ? 2 : 1;
    nd->main_step = nd->staged && conv ? 1 : 0;
    nd->step_suffix = conv ? ":im2col" : ":col2im";
    nd->step_type = conv ? "im2col" : "col2im";
    /* im2col reads the input and writes the columns; col2im reads the
     * columns and writes the output. */
    nd->step_bytes = (int64_t)all + 4 * ntp_shape_numel(conv ? &k->in[0].shape : &k->out[0].shape);
    snprintf(nd->impl, sizeof nd->impl, "openblas:%s",
             nd->direct ? "sgemm (1x1)"
             : conv     ? "im2col+sgemm"
                        : "sgemm+col2im");
    return NTP_STATUS_OK;
}

ntp_status ntp__blas_conv_run(ntp_ctx *ctx, const ntp_kargs *k, const blasb_node *nd, int step)
{
    bool conv = k->node->op == NTP_OP_CONV;
    /* Staged: step 0 is conv's im2col and deconv's GEMMs, step 1 the
     * other pass; the post-ops follow the pass that finishes the output. */
    int passes = NTP_REF_CONV_ALL;
    if (nd->staged)
        passes = step == (conv ? 0 : 1) ? NTP_REF_CONV_LOWER : NTP_REF_CONV_GEMM;
    ntp_status st = ntp__ref_conv_run(ctx, k, ntp__blas_gemm, nd->staged, passes);
    if (!st && (passes & (conv ? NTP_REF_CONV_GEMM : NTP_REF_CONV_LOWER)))
        ntp__blas_post_ops(k, nd);
    return st;
}
