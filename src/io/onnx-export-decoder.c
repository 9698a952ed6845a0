/* The decoder ops as ONNX (opset 17), in the layout Hugging Face, optimum
 * and torch.onnx use for a decoder with a key/value cache (docs/onnx.md,
 * "Decoders with a key/value cache"):
 *
 *   inputs   input_ids, position_ids [batch, seq_len] INT64 (the IR's
 *            `tokens` and `positions`), past_key_values.{i}.key / .value
 *            [batch, kv_heads, past, head_dim]
 *   outputs  logits [batch, seq_len, vocab] (the lm_head's output),
 *            present.{i}.key / .value [batch, kv_heads, past + seq_len,
 *            head_dim]
 *
 * seq_len and past are symbolic, so one model runs the prefill (past 0)
 * and every decode step: the attention's shapes come from Reshape's 0 and
 * -1, the causal mask from the shapes (Range, Greater, Where). The argmax
 * (the greedy choice) of the logits is ArgMax, output next_token. rmsnorm and rope are their
 * formulas; grouped-query attention multiplies the queries of each key/value
 * head as one block (Reshape to [N, kv_heads, rep·S, hd], the mask tiled),
 * so no key is copied. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "onnx-export-impl.h"

static const char *tname(const ntp_xw *w, int t)
{
    return w->tname && w->tname[t] ? w->tname[t] : w->g->tensors[t].name;
}

static const char *tmp(ntp_xw *w, const ntp_node *n, const char *what)
{
    char b[600];
    snprintf(b, sizeof b, "%.400s/%s", n->name, what);
    return ntp__xw_name(w, b);
}

/* A node named "<layer>/<what>" (what NULL: the layer's name) with one
 * output. */
static Onnx__NodeProto *nd(ntp_xw *w, const ntp_node *n, const char *op, const char *what, int n_in,
                           const char *const *in, const char *out)
{
    const char *outs[1] = {out};
    const char *name = what ? ntp__xw_str(w, "%.400s/%s", n->name, what) : n->name;
    return ntp__xw_node(w, op, name, n_in, in, 1, outs);
}

static const char *op1(ntp_xw *w, const ntp_node *n, const char *op, const char *what,
                       const char *a)
{
    const char *o = tmp(w, n, what), *in[1] = {a};
    nd(w, n, op, what, 1, in, o);
    return o;
}

static const char *op2(ntp_xw *w, const ntp_node *n, const char *op, const char *what,
                       const char *a, const char *b)
{
    const char *o = tmp(w, n, what), *in[2] = {a, b};
    nd(w, n, op, what, 2, in, o);
    return o;
}

static const char *i64(ntp_xw *w, const ntp_node *n, const char *what, const int64_t *v, int k)
{
    return ntp__xw_i64(w, ntp__xw_str(w, "%.400s/%s", n->name, what), v, k);
}

static const char *reshape(ntp_xw *w, const ntp_node *n, const char *what, const char *a,
                           const int64_t *shape, int r)
{
    return op2(w, n, "Reshape", what, a, i64(w, n, ntp__xw_str(w, "%s_shape", what), shape, r));
}

static const char *transpose(ntp_xw *w, const ntp_node *n, const char *what, const char *a,
                             const int64_t *perm)
{
    const char *o = op1(w, n, "Transpose", what, a);
    ntp__xw_attr_ints(w, w->nodes[w->n_nodes - 1], "perm", perm, 4);
    return o;
}

/* x / sqrt(mean(x²) + eps) · scale over the last dim. */
static ntp_status rmsnorm(ntp_xw *w, const ntp_node *n, float *const *wd)
{
    const char *x = tname(w, n->in[0]);
    const char *sq = op2(w, n, "Mul", "square", x, x);
    const char *ms = op1(w, n, "ReduceMean", "mean_square", sq);
    int64_t axes[1] = {-1};
    ntp__xw_attr_ints(w, w->nodes[w->n_nodes - 1], "axes", axes, 1);
    ntp__xw_attr_i(w, w->nodes[w->n_nodes - 1], "keepdims", 1);
    const char *e =
        op2(w, n, "Add", "plus_eps", ms,
            ntp__xw_scalar(w, ntp__xw_str(w, "%.400s/eps", n->name), (float)n->a.epsilon));
    const char *rms = op1(w, n, "Sqrt", "rms", e);
    const char *y = op2(w, n, "Div", "normalised", x, rms);
    const ntp_tensor *st = &w->g->tensors[n->w[0]];
    const char *in[2] = {y, ntp__xw_f32(w, st->name, wd[0], &st->shape)};
    nd(w, n, "Mul", NULL, 2, in, tname(w, n->out[0]));
    return NTP_STATUS_OK;
}

static int64_t max_positions(const ntp_graph *g)
{
    for (int i = 0; i < g->n_params; i++)
        if (strcmp(g->params[i].name, "max_positions") == 0)
            return strtoll(g->params[i].value, NULL, 10);
    return 0;
}

/* Rotate-half rotary embedding: x·cos + [-x2, x1]·sin per head, cos and
 * sin tables [max_positions, head_dim] gathered at the positions. */
static ntp_status rope(ntp_xw *w, const ntp_node *n, float *const *wd)
{
    const ntp_shape *xs = &w->g->tensors[n->in[0]].shape;
    int64_t hd = n->a.head_dim, half = hd / 2, D = xs->dim[2], P = max_positions(w->g);
    if (P <= 0)
        return ntp__error(w->ctx, NTP_STATUS_UNSUPPORTED,
                          "%s: <rope name='%s'>: ONNX needs its cos/sin tables, sized by the "
                          "param max_positions, which the topology lacks",
                          w->g->source, n->name);
    float *c = ntp__xw_mem(w, (size_t)(P * hd) * sizeof *c);
    float *s = ntp__xw_mem(w, (size_t)(P * hd) * sizeof *s);
    if (!c || !s)
        return ntp_ctx_status(w->ctx);
    for (int64_t p = 0; p < P; p++)
        for (int64_t i = 0; i < half; i++) {
            double ang = (double)p * pow(n->a.theta, -2.0 * (double)i / (double)hd);
            c[p * hd + i] = c[p * hd + i + half] = (float)cos(ang);
            s[p * hd + i] = s[p * hd + i + half] = (float)sin(ang);
        }
    ntp_shape ts = {2, {P, hd}};
    /* Constant nodes, not initializers: tables, not parameters (the
     * reader counts initializers as trainable). */
    const char *cos_t = ntp__xw_const(w, ntp__xw_str(w, "%.400s/cos_table", n->name), c, &ts);
    const char *sin_t = ntp__xw_const(w, ntp__xw_str(w, "%.400s/sin_table", n->name), s, &ts);
    const char *pos = tname(w, n->in[1]);
    int64_t ax2[1] = {2};
    const char *cg = op2(w, n, "Gather", "cos", cos_t, pos);
    const char *sg = op2(w, n, "Gather", "sin", sin_t, pos);
    const char *c4 = op2(w, n, "Unsqueeze", "cos_heads", cg, i64(w, n, "axis", ax2, 1));
    const char *s4 = op2(w, n, "Unsqueeze", "sin_heads", sg, i64(w, n, "axis2", ax2, 1));
    int64_t split[4] = {0, 0, -1, hd}, merge[3] = {0, 0, D};
    const char *x4 = reshape(w, n, "heads", tname(w, n->in[0]), split, 4);
    int64_t z[1] = {0}, h[1] = {half}, e[1] = {hd}, a3[1] = {3};
    const char *ax = i64(w, n, "slice_axis", a3, 1);
    const char *in1[4] = {x4, i64(w, n, "lo", z, 1), i64(w, n, "mid", h, 1), ax};
    const char *x1 = tmp(w, n, "first_half");
    nd(w, n, "Slice", "first_half", 4, in1, x1);
    const char *in2[4] = {x4, i64(w, n, "mid2", h, 1), i64(w, n, "hi", e, 1), ax};
    const char *x2 = tmp(w, n, "second_half");
    nd(w, n, "Slice", "second_half", 4, in2, x2);
    const char *nx2 = op1(w, n, "Neg", "neg_second", x2);
    const char *rot = op2(w, n, "Concat", "rotated", nx2, x1);
    ntp__xw_attr_i(w, w->nodes[w->n_nodes - 1], "axis", 3);
    const char *y = op2(w, n, "Add", "rotary", op2(w, n, "Mul", "x_cos", x4, c4),
                        op2(w, n, "Mul", "rot_sin", rot, s4));
    const char *in3[2] = {y, i64(w, n, "merge_shape", merge, 3)};
    nd(w, n, "Reshape", NULL, 2, in3, tname(w, n->out[0]));
    return NTP_STATUS_OK;
}

/* Causal attention over the cache: present = Concat(past, new) on dim 2,
 * scores of the queries against every position, the mask built from the
 * shapes (query i, at position past + i, sees keys 0 .. past + i). With a
 * padding mask (a 4th input), the model's input attention_mask [batch,
 * past + seq_len] (Hugging Face's: 1 a token, 0 padding) adds
 * (1 - mask) · -FLT_MAX (-3.4e38) to every query's score of a padded key,
 * as Hugging Face's models do: a query that sees a token gives it no
 * weight, and one that sees only padding (a padded query, which no token
 * reads) averages it, where the IR's kernels give 0. */
static ntp_status kv_attention(ntp_xw *w, const ntp_node *n, float *const *wd)
{
    const ntp_shape *qs = &w->g->tensors[n->in[0]].shape;
    int64_t H = n->a.heads, KVH = n->a.kv_heads > 0 ? n->a.kv_heads : H, D = qs->dim[2];
    int64_t hd = D / H, rep = H / KVH;
    int l = w->kv_layer++;
    int64_t split_q[4] = {0, 0, H, hd}, split_kv[4] = {0, 0, KVH, hd};
    int64_t heads_first[4] = {0, 2, 1, 3}, keys_t[4] = {0, 1, 3, 2};
    const char *q = transpose(
        w, n, "q_heads", reshape(w, n, "q_split", tname(w, n->in[0]), split_q, 4), heads_first);
    const char *k = transpose(
        w, n, "k_heads", reshape(w, n, "k_split", tname(w, n->in[1]), split_kv, 4), heads_first);
    const char *v = transpose(
        w, n, "v_heads", reshape(w, n, "v_split", tname(w, n->in[2]), split_kv, 4), heads_first);
    const char *pk = ntp__xw_str(w, "past_key_values.%d.key", l);
    const char *pv = ntp__xw_str(w, "past_key_values.%d.value", l);
    const char *kall = ntp__xw_str(w, "present.%d.key", l);
    const char *vall = ntp__xw_str(w, "present.%d.value", l);
    const char *ck[2] = {pk, k}, *cv[2] = {pv, v};
    ntp__xw_attr_i(w, nd(w, n, "Concat", "present_key", 2, ck, kall), "axis", 2);
    ntp__xw_attr_i(w, nd(w, n, "Concat", "present_value", 2, cv, vall), "axis", 2);
    /* Grouped queries: the rep query heads of a key/value head as one
     * block of rep·S rows. */
    const char *qg = q;
    if (rep > 1) {
        int64_t grouped[4] = {0, KVH, -1, hd};
        qg = reshape(w, n, "q_grouped", q, grouped, 4);
    }
    const char *scores = op2(w, n, "MatMul", "scores", qg, transpose(w, n, "keys_t", kall, keys_t));
    const char *scaled = op2(w, n, "Mul", "scaled", scores,
                             ntp__xw_scalar(w, ntp__xw_str(w, "%.400s/scale", n->name),
                                            (float)(1.0 / sqrt((double)hd))));
    /* The mask [S, T]: column j > past + i is -inf. */
    const char *T = op1(w, n, "Shape", "total_len", kall);
    ntp__xw_attr_i(w, w->nodes[w->n_nodes - 1], "start", 2);
    ntp__xw_attr_i(w, w->nodes[w->n_nodes - 1], "end", 3);
    const char *S = op1(w, n, "Shape", "new_len", k);
    ntp__xw_attr_i(w, w->nodes[w->n_nodes - 1], "start", 2);
    ntp__xw_attr_i(w, w->nodes[w->n_nodes - 1], "end", 3);
    int64_t zero[1] = {0}, one[1] = {1};
    const char *Ts = op1(w, n, "Squeeze", "total_scalar", T);
    const char *Ps = op1(w, n, "Squeeze", "past_scalar", op2(w, n, "Sub", "past_len", T, S));
    const char *z = i64(w, n, "zero", zero, 1), *o = i64(w, n, "one", one, 1);
    const char *zs = op1(w, n, "Squeeze", "zero_scalar", z);
    const char *os = op1(w, n, "Squeeze", "one_scalar", o);
    const char *rin[3] = {zs, Ts, os}, *qin[3] = {Ps, Ts, os};
    const char *cols = tmp(w, n, "key_pos"), *rows = tmp(w, n, "query_pos");
    nd(w, n, "Range", "key_pos", 3, rin, cols);
    nd(w, n, "Range", "query_pos", 3, qin, rows);
    const char *later = op2(w, n, "Greater", "later", op2(w, n, "Unsqueeze", "key_row", cols, z),
                            op2(w, n, "Unsqueeze", "query_col", rows, o));
    const char *win[3] = {later,
                          ntp__xw_scalar(w, ntp__xw_str(w, "%.400s/ninf", n->name), -INFINITY),
                          ntp__xw_scalar(w, ntp__xw_str(w, "%.400s/zero_f", n->name), 0.0f)};
    const char *mask = tmp(w, n, "mask");
    nd(w, n, "Where", "mask", 3, win, mask);
    if (rep > 1) {
        int64_t reps[2] = {rep, 1};
        mask = op2(w, n, "Tile", "mask_grouped", mask, i64(w, n, "mask_reps", reps, 2));
    }
    const char *masked = op2(w, n, "Add", "masked", scaled, mask);
    if (n->n_in == 4) {
        /* [N, T] -> (1 - mask) · min, [N, 1, 1, T], over every head. */
        const char *f = op1(w, n, "Cast", "keep_f", tname(w, n->in[3]));
        ntp__xw_attr_i(w, w->nodes[w->n_nodes - 1], "to", NTP_ONNX_FLOAT);
        const char *one_f = ntp__xw_scalar(w, ntp__xw_str(w, "%.400s/one_f", n->name), 1.0f);
        const char *fmin = ntp__xw_scalar(w, ntp__xw_str(w, "%.400s/pad_bias", n->name), -FLT_MAX);
        const char *bias =
            op2(w, n, "Mul", "pad_bias_nt", op2(w, n, "Sub", "padded", one_f, f), fmin);
        int64_t ax12[2] = {1, 2};
        bias = op2(w, n, "Unsqueeze", "pad_bias_4d", bias, i64(w, n, "pad_axes", ax12, 2));
        masked = op2(w, n, "Add", "padding_masked", masked, bias);
    }
    const char *p = op1(w, n, "Softmax", "weights", masked);
    ntp__xw_attr_i(w, w->nodes[w->n_nodes - 1], "axis", -1);
    const char *ctx = op2(w, n, "MatMul", "context", p, vall);
    if (rep > 1) {
        int64_t ungrouped[4] = {0, H, -1, hd};
        ctx = reshape(w, n, "context_heads", ctx, ungrouped, 4);
    }
    int64_t merge[3] = {0, 0, D};
    const char *in[2] = {transpose(w, n, "context_t", ctx, heads_first),
                         i64(w, n, "merge_shape", merge, 3)};
    nd(w, n, "Reshape", NULL, 2, in, tname(w, n->out[0]));
    return NTP_STATUS_OK;
}

/* x · Wᵀ, W [vocab, D] (a tied head's is the embedding's table). */
static ntp_status lm_head(ntp_xw *w, const ntp_node *n, float *const *wd)
{
    const ntp_tensor *wt = &w->g->tensors[n->w[0]];
    int64_t V = wt->shape.dim[0], D = wt->shape.dim[1];
    if (n->a.tied) {
        /* The embedding wrote the table (it runs first): one tensor for
         * both, transposed here, as Hugging Face's tied heads export. */
        int64_t perm[2] = {1, 0};
        const char *tt = op1(w, n, "Transpose", "W_t", wt->name);
        ntp__xw_attr_ints(w, w->nodes[w->n_nodes - 1], "perm", perm, 2);
        const char *in[2] = {tname(w, n->in[0]), tt};
        nd(w, n, "MatMul", NULL, 2, in, tname(w, n->out[0]));
        return NTP_STATUS_OK;
    }
    float *t = ntp__xw_mem(w, (size_t)(V * D) * sizeof *t);
    if (!t)
        return ntp_ctx_status(w->ctx);
    for (int64_t i = 0; i < V; i++)
        for (int64_t j = 0; j < D; j++)
            t[j * V + i] = wd[0][i * D + j];
    ntp_shape ts = {2, {D, V}};
    const char *in[2] = {tname(w, n->in[0]), ntp__xw_f32(w, tmp(w, n, "W_t"), t, &ts)};
    nd(w, n, "MatMul", NULL, 2, in, tname(w, n->out[0]));
    return NTP_STATUS_OK;
}

/* The greedy choice: ArgMax over the last axis without keeping it, the
 * first largest winning (select_last_index 0), as the IR's argmax. ONNX
 * leaves a NaN's place open; the IR's argmax never picks one. */
static ntp_status argmax(ntp_xw *w, const ntp_node *n, float *const *wd)
{
    (void)wd;
    const char *in[1] = {tname(w, n->in[0])};
    Onnx__NodeProto *p = nd(w, n, "ArgMax", NULL, 1, in, tname(w, n->out[0]));
    ntp__xw_attr_i(w, p, "axis", -1);
    ntp__xw_attr_i(w, p, "keepdims", 0);
    ntp__xw_attr_i(w, p, "select_last_index", 0);
    return NTP_STATUS_OK;
}

/* The decoder ops' emitters, by op (the other ops are not decoder ops). */
static ntp_status (*const emit_decoder[NTP_OP_COUNT])(ntp_xw *w, const ntp_node *n,
                                                      float *const *wd) = {
    [NTP_OP_RMSNORM] = rmsnorm, [NTP_OP_ROPE] = rope,     [NTP_OP_KV_ATTENTION] = kv_attention,
    [NTP_OP_LM_HEAD] = lm_head, [NTP_OP_ARGMAX] = argmax,
};

ntp_status ntp__xw_emit_decoder(ntp_xw *w, const ntp_node *n, float *const *wd)
{
    if (n->op >= 0 && n->op < NTP_OP_COUNT && emit_decoder[n->op])
        return emit_decoder[n->op](w, n, wd);
    return ntp__error(w->ctx, NTP_STATUS_UNSUPPORTED, "%s: <%s name='%s'> has no ONNX operator",
                      w->g->source, ntp__op_name(n->op), n->name);
}
