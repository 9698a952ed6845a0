/* Multi-head attention (torch.nn.MultiheadAttention's weights, batch-first)
 * as a chain of oneDNN primitives, each a step of the layer:
 *
 *   ""          Q, K, V projections: one inner product x·in_projᵀ + in_bias
 *               into a [N·S, 3D] buffer (self-attention), or one per input
 *   ":scores"   P = Q·Kᵀ / √hd per head: a batched matmul over [N, heads]
 *               reading Q and K through strided views of that buffer (no
 *               transposed copies), with the causal mask as a binary add
 *               post-op
 *   ":softmax"  softmax over the keys, in place
 *   ":context"  C = P·V per head, written through a strided view straight
 *               into the [N, S, D] layout the output projection reads
 *   ":out"      y = C·out_projᵀ + out_bias, with the post-ops of a fusion
 *               group (BERT: the dropout and the residual add after it)
 *
 * The scaling by 1/√hd is the matmul's output scale, applied to the
 * product rather than to Q first as PyTorch does; the two differ by
 * rounding only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "onednn-impl.h"

bool ntp__dnnl_attention_supports(const ntp_graph *g, const ntp_node *n)
{
    const ntp_shape *q = &g->tensors[n->in[0]].shape;
    return q->ndim == 3 && n->a.heads > 0 && q->dim[2] % n->a.heads == 0 &&
           (n->n_in == 1 || n->n_in == 3);
}

/* A strided 4-d view [N, heads, rows, cols] of a buffer at byte offset off. */
static ntp_status view4(odnn_build *b, int base, size_t off, const int64_t *dims,
                        const int64_t *strides, int *idx)
{
    dnnl_memory_desc_t md;
    dnnl_status_t st = dnnl_memory_desc_init_by_strides(&md, 4, dims, b->cdt, strides);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "attention view");
    const odnn_mem *m = &b->nd->mems[base];
    return ntp__dnnl_mem(b, &md, m->bind, m->idx, m->off + off, idx);
}

/* dst [rows, units] = src [rows, K] · Wᵀ + bias, W [units, K] f32; the
 * output projection also carries the group's post-ops. */
static ntp_status project(odnn_build *b, int src, int dst, int64_t rows, int64_t K, int64_t units,
                          const float *W, const float *bias, const char *suffix, bool post_ops)
{
    dnnl_dims_t xd = {rows, K}, wd = {units, K}, yd = {rows, units}, bd = {units};
    dnnl_memory_desc_t x, w, y, bm, uw;
    dnnl_memory_desc_init_by_tag(&x, 2, xd, b->cdt, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&w, 2, wd, b->cdt, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&y, 2, yd, b->cdt, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&bm, 1, bd, dnnl_f32, dnnl_a);
    dnnl_memory_desc_init_by_tag(&uw, 2, wd, dnnl_f32, dnnl_ab);
    dnnl_inner_product_desc_t d;
    dnnl_status_t st = dnnl_inner_product_forward_desc_init(&d, dnnl_forward_inference, &x, &w,
                                                            bias ? &bm : NULL, &y);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "projection descriptor");
    dnnl_primitive_attr_t attr;
    int args[ODNN_MAX_ARGS], mems[ODNN_MAX_ARGS], n = 0;
    ntp_status s = ntp__dnnl_attr(b, &attr);
    if (s || (post_ops && (s = ntp__dnnl_post_ops(b, attr, 1.0f, NULL, 2, yd, &n, args, mems))))
        return s;
    dnnl_primitive_desc_t pd;
    if ((s = ntp__dnnl_pd(b, &pd, &d, attr, "projection")))
        return s;
    args[n] = DNNL_ARG_SRC;
    mems[n++] = src;
    args[n] = DNNL_ARG_DST;
    mems[n++] = dst;
    args[n] = DNNL_ARG_WEIGHTS;
    if ((s = ntp__dnnl_pack(b, W, &uw, ntp__dnnl_query(pd, dnnl_query_weights_md, 0), NULL, 0, 0,
                            &mems[n++])))
        return s;
    if (bias) {
        args[n] = DNNL_ARG_BIAS;
        if ((s = ntp__dnnl_pack(b, bias, &bm, ntp__dnnl_query(pd, dnnl_query_weights_md, 1), NULL,
                                0, 0, &mems[n++])))
            return s;
    }
    if ((s = ntp__dnnl_step(b, pd, suffix, NULL, n, args, mems)))
        return s;
    if (!suffix[0])
        ntp__dnnl_set_main(b, pd);
    return NTP_STATUS_OK;
}

/* A matmul step src x wei -> dst over views of any rank oneDNN's matmul
 * takes (wei's batch dims of 1 broadcast), scaled, plus `mask` (a memory
 * index, or -1) added as a binary post-op; `main` makes it the layer's main
 * primitive. `op` names the layer in errors ("attention", "kv_attention"). */
ntp_status ntp__dnnl_matmul_step(odnn_build *b, const char *op, int src, int wei, int dst,
                                 float scale, int mask, const char *suffix, bool main)
{
    char what[64];
    const dnnl_memory_desc_t *sm, *wm, *dm;
    dnnl_memory_get_memory_desc(b->nd->mems[src].m, &sm);
    dnnl_memory_get_memory_desc(b->nd->mems[wei].m, &wm);
    dnnl_memory_get_memory_desc(b->nd->mems[dst].m, &dm);
    dnnl_matmul_desc_t d;
    dnnl_status_t st = dnnl_matmul_desc_init(&d, sm, wm, NULL, dm);
    if (st != dnnl_success) {
        snprintf(what, sizeof what, "%s matmul descriptor", op);
        return ntp__dnnl_error(b, st, what);
    }
    dnnl_primitive_attr_t attr;
    ntp_status s = ntp__dnnl_attr(b, &attr);
    if (s)
        return s;
    if (scale != 1.0f && (st = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &scale))) {
        snprintf(what, sizeof what, "%s scale", op);
        return ntp__dnnl_error(b, st, what);
    }
    int args[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, 0};
    int mems[4] = {src, wei, dst, mask};
    int n = 3;
    if (mask >= 0) {
        const dnnl_memory_desc_t *mm;
        dnnl_memory_get_memory_desc(b->nd->mems[mask].m, &mm);
        dnnl_post_ops_t po;
        if ((st = dnnl_post_ops_create(&po)))
            return ntp__dnnl_error(b, st, "dnnl_post_ops_create");
        st = dnnl_post_ops_append_binary(po, dnnl_binary_add, mm);
        if (st == dnnl_success)
            st = dnnl_primitive_attr_set_post_ops(attr, po);
        dnnl_post_ops_destroy(po);
        if (st != dnnl_success)
            return ntp__dnnl_error(b, st, "causal mask post-op");
        args[n++] = DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1;
    }
    dnnl_primitive_desc_t pd;
    snprintf(what, sizeof what, "%s matmul", op);
    if ((s = ntp__dnnl_pd(b, &pd, &d, attr, what)) ||
        (s = ntp__dnnl_step(b, pd, suffix, NULL, n, args, mems)))
        return s;
    if (main)
        ntp__dnnl_set_main(b, pd);
    return NTP_STATUS_OK;
}

ntp_status ntp__dnnl_attention_build(odnn_build *b)
{
    ntp_kargs *k = b->k;
    const ntp_shape *qs = &k->in[0].shape;
    int64_t N = qs->dim[0], S = qs->dim[1], D = qs->dim[2], heads = b->n->a.heads;
    int64_t Skv = k->n_in == 3 ? k->in[1].shape.dim[1] : S, hd = D / heads;
    bool bias = k->n_w == 4;
    if ((k->n_in != 1 && k->n_in != 3) || (k->n_w != 2 && k->n_w != 4) || heads <= 0 || D % heads ||
        ntp_shape_numel(&k->w[0].shape) != 3 * D * D ||
        ntp_shape_numel(&k->w[bias ? 2 : 1].shape) != D * D || (b->n->a.causal && Skv != S))
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "inconsistent attention arguments");
    size_t es = ntp_dtype_size(b->cdt == dnnl_f32 ? NTP_DTYPE_F32 : NTP_DTYPE_BF16);
    float *in_w = NULL, *in_b = NULL, *out_w = NULL, *out_b = NULL;
    ntp_status s;
    if ((s = ntp__dnnl_weight_f32(b, 0, &in_w)) ||
        (bias && (s = ntp__dnnl_weight_f32(b, 1, &in_b))) ||
        (s = ntp__dnnl_weight_f32(b, bias ? 2 : 1, &out_w)) ||
        (bias && (s = ntp__dnnl_weight_f32(b, 3, &out_b))))
        goto done;
    /* Projections: Q, K, V base memories with their row strides. */
    int qkv[3];
    int64_t ld[3];
    size_t col[3];
    dnnl_memory_desc_t md;
    int x, view;
    if (k->n_in == 1) {
        dnnl_dims_t d2 = {N * S, 3 * D}, xd = {N * S, D};
        dnnl_memory_desc_init_by_tag(&md, 2, d2, b->cdt, dnnl_ab);
        int buf;
        if ((s = ntp__dnnl_ws_mem(b, &md, &buf)))
            goto done;
        dnnl_memory_desc_init_by_tag(&md, 2, xd, b->cdt, dnnl_ab);
        if ((s = ntp__dnnl_plain_input(b, 0, b->cdt, &x)) ||
            (s = ntp__dnnl_alias(b, x, &md, &view)) ||
            (s = project(b, view, buf, N * S, D, 3 * D, in_w, in_b, "", false)))
            goto done;
        for (int i = 0; i < 3; i++) {
            qkv[i] = buf;
            ld[i] = 3 * D;
            col[i] = (size_t)(i * D) * es;
        }
    } else {
        for (int i = 0; i < 3; i++) {
            int64_t rows = N * (i == 0 ? S : Skv);
            dnnl_dims_t d2 = {rows, D};
            dnnl_memory_desc_init_by_tag(&md, 2, d2, b->cdt, dnnl_ab);
            if ((s = ntp__dnnl_ws_mem(b, &md, &qkv[i])) ||
                (s = ntp__dnnl_plain_input(b, i, b->cdt, &x)) ||
                (s = ntp__dnnl_alias(b, x, &md, &view)) ||
                (s = project(b, view, qkv[i], rows, D, D, in_w + i * D * D,
                             in_b ? in_b + i * D : NULL,
                             i == 0   ? ""
                             : i == 1 ? ":k"
                                      : ":v",
                             false)))
                goto done;
            ld[i] = D;
            col[i] = 0;
        }
    }
    /* Scores P [N, heads, S, Skv]. */
    int q, kt, p, mask = -1;
    {
        dnnl_dims_t qd = {N, heads, S, hd};
        dnnl_dims_t qst = {S * ld[0], hd, ld[0], 1};
        dnnl_dims_t kd = {N, heads, hd, Skv};
        dnnl_dims_t kst = {Skv * ld[1], hd, 1, ld[1]};
        dnnl_dims_t pd = {N, heads, S, Skv};
        if ((s = view4(b, qkv[0], col[0], qd, qst, &q)) ||
            (s = view4(b, qkv[1], col[1], kd, kst, &kt)))
            goto done;
        dnnl_memory_desc_t pm;
        dnnl_memory_desc_init_by_tag(&pm, 4, pd, b->cdt, dnnl_abcd);
        if ((s = ntp__dnnl_ws_mem(b, &pm, &p)))
            goto done;
        if (b->n->a.causal) {
            dnnl_dims_t mdims = {1, 1, S, Skv};
            dnnl_memory_desc_t mm;
            dnnl_memory_desc_init_by_tag(&mm, 4, mdims, dnnl_f32, dnnl_abcd);
            if ((s = ntp__dnnl_own_mem(b, &mm, &mask)))
                goto done;
            float *m = b->nd->mems[mask].own;
            for (int64_t i = 0; i < S; i++)
                for (int64_t j = 0; j < Skv; j++)
                    m[i * Skv + j] = j > i ? -INFINITY : 0.0f;
        }
        if ((s = ntp__dnnl_matmul_step(b, "attention", q, kt, p, (float)(1.0 / sqrt((double)hd)),
                                       mask, ":scores", false)))
            goto done;
        dnnl_softmax_v2_desc_t sd;
        dnnl_status_t st = dnnl_softmax_v2_forward_desc_init(&sd, dnnl_forward_inference,
                                                             dnnl_softmax_accurate, &pm, &pm, 3);
        dnnl_primitive_desc_t spd;
        if (st != dnnl_success) {
            s = ntp__dnnl_error(b, st, "attention softmax descriptor");
            goto done;
        }
        int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, mems[2] = {p, p};
        if ((s = ntp__dnnl_pd(b, &spd, &sd, NULL, "attention softmax")) ||
            (s = ntp__dnnl_step(b, spd, ":softmax", NULL, 2, args, mems)))
            goto done;
    }
    /* Context C [N, S, D] = P·V, head h in columns h·hd... */
    {
        dnnl_dims_t vd = {N, heads, Skv, hd};
        dnnl_dims_t vst = {Skv * ld[2], hd, ld[2], 1};
        dnnl_dims_t cd = {N, heads, S, hd};
        dnnl_dims_t cst = {S * D, hd, D, 1};
        dnnl_dims_t c2 = {N * S, D};
        dnnl_memory_desc_t cm;
        dnnl_memory_desc_init_by_tag(&cm, 2, c2, b->cdt, dnnl_ab);
        int v, c, cview, y, yview;
        if ((s = view4(b, qkv[2], col[2], vd, vst, &v)) || (s = ntp__dnnl_ws_mem(b, &cm, &c)) ||
            (s = view4(b, c, 0, cd, cst, &cview)) ||
            (s = ntp__dnnl_matmul_step(b, "attention", p, v, cview, 1.0f, -1, ":context", false)))
            goto done;
        dnnl_memory_desc_t plain;
        ntp__dnnl_plain_md(&plain, &k->out[0].shape, b->cdt);
        if ((s = ntp__dnnl_output(b, 0, &plain, 1.0f, &y)) ||
            (s = ntp__dnnl_alias(b, y, &cm, &yview)) ||
            (s = project(b, c, yview, N * S, D, D, out_w, out_b, ":out", true)))
            goto done;
    }
done:
    free(in_w);
    free(in_b);
    free(out_w);
    free(out_b);
    return s;
}
