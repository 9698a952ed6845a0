/* Fusion groups as oneDNN post-ops.
 *
 * A group's head (conv, deconv, fc, matmul, or attention's output
 * projection) runs one primitive whose attribute carries the folded layers
 * in order: activations as eltwise post-ops, residual adds and multiplies
 * as binary post-ops that read the other operand straight from
 * k->post_in[i]; a folded dropout (the identity at inference) appends
 * nothing, which is what lets BERT's residual adds behind their dropouts
 * fold too. A binary post-op is used
 * rather than a sum post-op because sum accumulates into dst, which would
 * need the residual copied into the output first (an extra pass over it)
 * and forbids writing the result anywhere but on top of the residual.
 *
 * int8: the head's output scales turn its integer accumulator into real
 * values; an s8 operand is read as its integers, so before a residual add
 * the chain moves into the operand's grid, and at the end into the
 * output's. Each change of scale is a linear post-op, except where only
 * positively homogeneous activations (relu, leaky relu) separate it from
 * the head: then it divides the head's output scales instead (*head_div),
 * which costs nothing. ResNet's conv + add + relu thus reads
 * osc = s_in w_s / s_res, adds q_res, applies relu, and scales by
 * s_res / s_out once. */
#include <stdio.h>
#include <string.h>

#include "onednn-impl.h"

/* The other operand of folded binary layer i: the input that is not the
 * previous result of the chain. */
static int other_operand(const ntp_kargs *k, int i)
{
    const ntp_node *f = k->fused[i];
    int prev = i == 0 ? k->node->out[0] : k->fused[i - 1]->out[0];
    return f->in[0] == prev ? f->in[1] : f->in[0];
}

/* The descriptor of fused binary layer i's other operand: the layout its
 * producer recorded, else plain (as a view_nd-d view when view_nd > 0). */
static ntp_status operand_md(odnn_build *b, int i, int view_nd, const int64_t *view_dims,
                             dnnl_memory_desc_t *md)
{
    const ntp_kargs *k = b->k;
    const ntp_buf *other = &k->post_in[i];
    const dnnl_memory_desc_t *lay =
        k->g ? ntp__dnnl_tensor_layout(b->s, k->g, other_operand(k, i)) : NULL;
    if (lay && view_nd > 0 && lay->ndims != view_nd)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL,
                              "post-op operand in a %d-d layout for a %d-d view", lay->ndims,
                              view_nd);
    dnnl_status_t st = dnnl_success;
    if (lay)
        *md = *lay;
    else if (view_nd > 0)
        st = ntp__dnnl_plain_dims(md, view_nd, view_dims, ntp__dnnl_dt(other->dtype));
    else
        st = ntp__dnnl_plain_md(md, &other->shape, ntp__dnnl_dt(other->dtype));
    return st == dnnl_success ? NTP_STATUS_OK
                              : ntp__dnnl_error(b, st, "post-op operand descriptor");
}

/* Is the activation positively homogeneous (f(a x) = a f(x) for a > 0), so
 * that it may run on values in any positive scale? */
static bool homogeneous(dnnl_alg_kind_t alg, float beta)
{
    return alg == dnnl_eltwise_relu && beta == 0.0f; /* relu and leaky relu */
}

/* The chain's values are real / cur. Bring them to real / want: a linear
 * post-op, or nothing when the head may still absorb the factor into its
 * output scales (*div). */
static ntp_status rescale(odnn_build *b, dnnl_post_ops_t po, bool at_head, float *div, float *cur,
                          float want, int *idx)
{
    if (*cur == want)
        return NTP_STATUS_OK;
    if (at_head) {
        *div = want;
    } else {
        dnnl_status_t st =
            dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, *cur / want, 0.0f);
        if (st != dnnl_success)
            return ntp__dnnl_error(b, st, "scale post-op");
        (*idx)++;
    }
    *cur = want;
    return NTP_STATUS_OK;
}

ntp_status ntp__dnnl_post_ops(odnn_build *b, dnnl_primitive_attr_t attr, float out_scale,
                              float *head_div, int view_nd, const int64_t *view_dims, int *n,
                              int *args, int *mems)
{
    const ntp_kargs *k = b->k;
    float div = 1.0f, cur = 1.0f;
    /* Nothing but homogeneous activations since the head: a change of scale
     * can still go into the head's output scales. */
    bool at_head = head_div != NULL;
    if (head_div)
        *head_div = 1.0f;
    int first = b->po_first, end = b->po_end >= 0 ? b->po_end : k->n_fused;
    if (end <= first && out_scale == 1.0f)
        return NTP_STATUS_OK;
    dnnl_post_ops_t po;
    dnnl_status_t st = dnnl_post_ops_create(&po);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "dnnl_post_ops_create");
    ntp_status s = NTP_STATUS_OK;
    int idx = 0; /* position in oneDNN's post-op chain */
    for (int i = first; i < end && s == NTP_STATUS_OK; i++) {
        const ntp_node *f = k->fused[i];
        dnnl_alg_kind_t alg;
        float alpha, beta;
        if (f->op == NTP_OP_DROPOUT)
            continue; /* the identity at inference: nothing to append */
        if (ntp__dnnl_eltwise_alg(f, &alg, &alpha, &beta)) {
            if (!homogeneous(alg, beta) && (s = rescale(b, po, at_head, &div, &cur, 1.0f, &idx)))
                break;
            at_head = at_head && homogeneous(alg, beta);
            if ((st = dnnl_post_ops_append_eltwise(po, 1.0f, alg, alpha, beta)))
                s = ntp__dnnl_error(b, st, "eltwise post-op");
            idx++;
            continue;
        }
        if (f->op != NTP_OP_ADD && f->op != NTP_OP_MUL) {
            s = ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "layer '%s' (%s) cannot be a post-op",
                               f->name ? f->name : "?", ntp__op_name(f->op));
            break;
        }
        const ntp_buf *other = &k->post_in[i];
        /* An int8 operand is read as its integers q (real = q * s_r): an
         * add needs the chain in the operand's grid first; a product just
         * multiplies the chain's scale. */
        float s_r;
        if ((s = ntp__dnnl_act_scale(b, other->dtype, k->post_scale[i], i, false, &s_r)))
            break;
        if (f->op == NTP_OP_ADD && (s = rescale(b, po, at_head, &div, &cur, s_r, &idx)))
            break;
        at_head = false;
        dnnl_memory_desc_t md;
        if ((s = operand_md(b, i, view_nd, view_dims, &md)))
            break;
        if ((st = dnnl_post_ops_append_binary(
                 po, f->op == NTP_OP_ADD ? dnnl_binary_add : dnnl_binary_mul, &md))) {
            s = ntp__dnnl_error(b, st, "binary post-op");
            break;
        }
        int mi;
        if ((s = ntp__dnnl_mem(b, &md, ODNN_BIND_POST, i, 0, &mi)))
            break;
        args[*n] = DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx) | DNNL_ARG_SRC_1;
        mems[*n] = mi;
        (*n)++;
        idx++;
        if (f->op == NTP_OP_MUL)
            cur *= s_r;
    }
    /* int8: the last step scales into the output's quantisation grid
     * (out_scale = 1 / s_out), folded into the head's output scales when
     * only homogeneous activations came after it (ResNet's conv + relu). */
    if (s == NTP_STATUS_OK)
        s = rescale(b, po, at_head, &div, &cur, 1.0f / out_scale, &idx);
    if (s == NTP_STATUS_OK && idx > 0 && (st = dnnl_primitive_attr_set_post_ops(attr, po)))
        s = ntp__dnnl_error(b, st, "dnnl_primitive_attr_set_post_ops");
    dnnl_post_ops_destroy(po);
    if (head_div)
        *head_div = div;
    return s;
}

int ntp__dnnl_impl_rank(const char *impl)
{
    if (!impl || strncmp(impl, "ref", 3) == 0)
        return 0;
    if (strstr(impl, "gemm"))
        return 1;
    return 2;
}

int ntp__dnnl_first_binary(const ntp_kargs *k, int from)
{
    for (int i = from; i < k->n_fused; i++)
        if (k->fused[i]->op == NTP_OP_ADD || k->fused[i]->op == NTP_OP_MUL)
            return i;
    return -1;
}

static const char *impl_of(const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success)
        return NULL;
    return impl;
}

bool ntp__dnnl_decline_fusion(odnn_build *b, const_dnnl_primitive_desc_t fused,
                              const_dnnl_primitive_desc_t apart, int cut, char *why,
                              size_t why_size)
{
    const ntp_kargs *k = b->k;
    const char *fi = impl_of(fused), *ai = impl_of(apart);
    const char *what = ntp__op_name(k->fused[cut]->op);
    if (ntp__dnnl_impl_rank(fi) < ntp__dnnl_impl_rank(ai)) {
        snprintf(why, why_size, "%s not fused: fused would run %s", what, fi ? fi : "?");
        return true;
    }
    /* Every binary operand in the destination's layout (its type aside). */
    const dnnl_memory_desc_t *dst = ntp__dnnl_query(fused, dnnl_query_dst_md, 0);
    int idx = 0;
    for (int i = 0; dst && i < k->n_fused; i++) {
        const ntp_node *f = k->fused[i];
        dnnl_alg_kind_t alg;
        float alpha, beta;
        if (f->op == NTP_OP_DROPOUT)
            continue;
        if (ntp__dnnl_eltwise_alg(f, &alg, &alpha, &beta)) {
            idx++;
            continue;
        }
        const dnnl_memory_desc_t *src1 =
            ntp__dnnl_arg_md(fused, DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx) | DNNL_ARG_SRC_1);
        dnnl_memory_desc_t want;
        if (src1 && (!ntp__dnnl_md_with_dt(dst, src1->data_type, &want) ||
                     !dnnl_memory_desc_equal(&want, src1))) {
            snprintf(why, why_size, "%s not fused: operand layout is not the output's", what);
            return true;
        }
        idx++;
    }
    return false;
}

/* Activation layer f as an eltwise step on memory idx, in place. */
static ntp_status eltwise_in_place(odnn_build *b, const ntp_node *f, int idx)
{
    dnnl_alg_kind_t alg;
    float alpha, beta;
    if (f->op == NTP_OP_DROPOUT)
        return NTP_STATUS_OK;
    if (!ntp__dnnl_eltwise_alg(f, &alg, &alpha, &beta))
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "layer '%s' (%s) is no activation",
                              f->name ? f->name : "?", ntp__op_name(f->op));
    const dnnl_memory_desc_t *md;
    dnnl_status_t st = dnnl_memory_get_memory_desc(b->nd->mems[idx].m, &md);
    dnnl_eltwise_desc_t d;
    if (st == dnnl_success)
        st = dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, alg, md, alpha, beta);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "eltwise descriptor");
    dnnl_primitive_attr_t attr;
    dnnl_primitive_desc_t pd;
    ntp_status s;
    if ((s = ntp__dnnl_attr(b, &attr)) || (s = ntp__dnnl_pd(b, &pd, &d, attr, "eltwise")))
        return s;
    int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, mems[2] = {idx, idx};
    return ntp__dnnl_step(b, pd, "", NULL, 2, args, mems);
}

ntp_status ntp__dnnl_post_tail(odnn_build *b, int first, int src_idx,
                               const dnnl_memory_desc_t *src_md, const char *why)
{
    const ntp_kargs *k = b->k;
    const ntp_node *f = k->fused[first];
    if ((f->op != NTP_OP_ADD && f->op != NTP_OP_MUL) || b->int8)
        return ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "layer '%s' (%s) cannot run after the head",
                              f->name ? f->name : "?", ntp__op_name(f->op));
    /* The operand is read in the head's layout, as the binary layer
     * unfused reads it (binary.c): oneDNN's binary of two layouts is its
     * reference kernel. */
    dnnl_memory_desc_t omd, want;
    ntp_status s = operand_md(b, first, 0, NULL, &omd);
    if (s)
        return s;
    if (!ntp__dnnl_md_with_dt(src_md, omd.data_type, &want))
        want = omd;
    dnnl_binary_desc_t d;
    dnnl_status_t st = dnnl_binary_desc_init(
        &d, f->op == NTP_OP_ADD ? dnnl_binary_add : dnnl_binary_mul, src_md, &want, src_md);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "binary descriptor");
    dnnl_primitive_attr_t attr;
    if ((s = ntp__dnnl_attr(b, &attr)))
        return s;
    /* The layers after the binary one are its post-ops, except that in a
     * layout with inner blocks activations run as their own eltwise steps
     * in place: oneDNN 2.6's jit:uni binary with an eltwise post-op on
     * aBcd4b (a grouped convolution's output on AVX-512) zeroed a quarter
     * of the values and wrote past its destination (tiny-cnn's conv3 +
     * residual add + relu). Channels-last and plain layouts take them as
     * post-ops. */
    bool apart = src_md->format_kind == dnnl_blocked &&
                 src_md->format_desc.blocking.inner_nblks > 0 &&
                 ntp__dnnl_first_binary(k, first + 1) < 0;
    int args[ODNN_MAX_ARGS], mems[ODNN_MAX_ARGS], n = 0;
    if (!apart) {
        b->po_first = first + 1;
        s = ntp__dnnl_post_ops(b, attr, 1.0f, NULL, 0, NULL, &n, args, mems);
        b->po_first = 0;
        if (s)
            return s;
    }
    dnnl_primitive_desc_t pd;
    if ((s = ntp__dnnl_pd(b, &pd, &d, attr, "binary")))
        return s;
    int mi;
    args[n] = DNNL_ARG_SRC_0;
    mems[n++] = src_idx;
    if ((s = ntp__dnnl_mem(b, &omd, ODNN_BIND_POST, first, 0, &mi)) ||
        (s = ntp__dnnl_convert(b, mi, &omd, 1.0f, &want, 1.0f, "reorder_post", &mi)))
        return s;
    args[n] = DNNL_ARG_SRC_1;
    mems[n++] = mi;
    if ((s = ntp__dnnl_output(b, 0, ntp__dnnl_query(pd, dnnl_query_dst_md, 0), 1.0f, &mi)))
        return s;
    args[n] = DNNL_ARG_DST;
    mems[n++] = mi;
    if ((s = ntp__dnnl_step(b, pd, "", NULL, n, args, mems)))
        return s;
    for (int i = first + 1; apart && i < k->n_fused; i++)
        if ((s = eltwise_in_place(b, k->fused[i], mi)))
            return s;
    /* The report's impl column shows both primitives; the layer's fuse
     * note says why they are two. */
    odnn_node *nd = b->nd;
    const char *bi = impl_of(pd);
    char head[sizeof nd->impl];
    snprintf(head, sizeof head, "%s", nd->impl);
    snprintf(nd->fuse_note, sizeof nd->fuse_note, "%s", why);
    /* A long name may be cut; the head's implementation comes first. */
    int len = snprintf(nd->impl, sizeof nd->impl, "%s + %s", head, bi ? bi : "binary");
    return len > 0 ? NTP_STATUS_OK : ntp__dnnl_fail(b, NTP_STATUS_INTERNAL, "impl name");
}
