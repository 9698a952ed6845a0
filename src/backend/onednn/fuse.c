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
#include "onednn-impl.h"

/* The other operand of folded binary layer i: the input that is not the
 * previous result of the chain. */
static int other_operand(const ntp_kargs *k, int i)
{
    const ntp_node *f = k->fused[i];
    int prev = i == 0 ? k->node->out[0] : k->fused[i - 1]->out[0];
    return f->in[0] == prev ? f->in[1] : f->in[0];
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
        dnnl_status_t st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear,
                                                        *cur / want, 0.0f);
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
    if (k->n_fused == 0 && out_scale == 1.0f)
        return NTP_STATUS_OK;
    dnnl_post_ops_t po;
    dnnl_status_t st = dnnl_post_ops_create(&po);
    if (st != dnnl_success)
        return ntp__dnnl_error(b, st, "dnnl_post_ops_create");
    ntp_status s = NTP_STATUS_OK;
    int idx = 0; /* position in oneDNN's post-op chain */
    for (int i = 0; i < k->n_fused && s == NTP_STATUS_OK; i++) {
        const ntp_node *f = k->fused[i];
        dnnl_alg_kind_t alg;
        float alpha, beta;
        if (f->op == NTP_OP_DROPOUT)
            continue; /* the identity at inference: nothing to append */
        if (ntp__dnnl_eltwise_alg(f, &alg, &alpha, &beta)) {
            if (!homogeneous(alg, beta) &&
                (s = rescale(b, po, at_head, &div, &cur, 1.0f, &idx)))
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
        const dnnl_memory_desc_t *lay =
            k->g ? ntp__dnnl_tensor_layout(b->s, k->g, other_operand(k, i)) : NULL;
        if (lay && view_nd > 0 && lay->ndims != view_nd) {
            s = ntp__dnnl_fail(b, NTP_STATUS_INTERNAL,
                               "post-op operand in a %d-d layout for a %d-d view", lay->ndims,
                               view_nd);
            break;
        }
        if (lay)
            md = *lay;
        else if (view_nd > 0)
            st = ntp__dnnl_plain_dims(&md, view_nd, view_dims, ntp__dnnl_dt(other->dtype));
        else
            st = ntp__dnnl_plain_md(&md, &other->shape, ntp__dnnl_dt(other->dtype));
        if (st != dnnl_success) {
            s = ntp__dnnl_error(b, st, "post-op operand descriptor");
            break;
        }
        if ((st = dnnl_post_ops_append_binary(po, f->op == NTP_OP_ADD ? dnnl_binary_add
                                                                       : dnnl_binary_mul, &md))) {
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
