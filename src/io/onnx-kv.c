/* Decoders exported with past key/values (docs/onnx.md, "Decoders with a
 * key/value cache"): the layout Hugging Face, optimum and torch.onnx write,
 *
 *   inputs   input_ids, position_ids [batch, seq] (integers),
 *            past_key_values.{i}.key / .value [batch, kv_heads, past, head_dim]
 *   outputs  logits [batch, seq, vocab],
 *            present.{i}.key / .value = Concat(past, new, axis 2)
 *
 * becomes a decoder topology `ntprof generate` drives with its own cache:
 *
 *   - before the values are built (ntp__onnx_kv_prepare), input_ids and
 *     position_ids are renamed `tokens` and `positions` (i32), their
 *     sequence dim `seq_len`; the past inputs' past dim becomes a fixed 1
 *     (they are removed below: only dead shape computations read it) and
 *     the present outputs are dropped: the cache is generate's state;
 *   - after mapping (ntp__onnx_kv_rewrite), each layer's
 *       MatMul(q, Concat(past_k, k)ᵀ) → scale → mask → Softmax →
 *       MatMul(·, Concat(past_v, v))
 *     becomes one kv_attention of q, k, v in [N, S, heads·head_dim]
 *     (its heads, kv_heads and head_dim from the shapes; the scale must be
 *     1/√head_dim); the logits' MatMul becomes an lm_head (tied when its
 *     matrix is an embedding's table, bit for bit) and an argmax is added
 *     after it (output `next_token`).
 *
 * The mask between the scores and the softmax is taken as causal (what the
 * layout means) and is not read. A padding mask input `attention_mask`
 * ([batch, past + seq], Hugging Face's) is what the model's mask is built
 * from: its ONNX value becomes a constant of ones ([batch, 1 + seq_len],
 * the past being 1) so that the mask's computation folds away at load,
 * and a new input `attention_mask` [batch, seq_len] (i32, the new tokens'
 * part) is each kv_attention's 4th input, which the cache keeps.
 *
 * Grouped-query attention is recognised written either way: the queries
 * grouped per key/value head (ntprof's export), or the keys and values
 * repeated to the query heads as Hugging Face's repeat_kv does,
 * Reshape(Expand(Unsqueeze(kv, 2), [N, KVH, rep, T, hd]), [N, KVH·rep, T,
 * hd]): query head h reads kv head h / rep, which is kv_attention's
 * grouping (a repeat in the other order, h % KVH, is refused). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "onnx-impl.h"

/* "past_key_values.<i>.key" / ".value": the layer, and which. */
static bool past_name(const char *s, int *layer, bool *value)
{
    static const char pre[] = "past_key_values.";
    if (!s || strncmp(s, pre, sizeof pre - 1) != 0)
        return false;
    char *end;
    long l = strtol(s + sizeof pre - 1, &end, 10);
    if (end == s + sizeof pre - 1 || l < 0 || l > 100000)
        return false;
    *layer = (int)l;
    if (strcmp(end, ".key") == 0)
        *value = false;
    else if (strcmp(end, ".value") == 0)
        *value = true;
    else
        return false;
    return true;
}

static bool present_name(const char *s)
{
    return s && strncmp(s, "present.", 8) == 0;
}

static ntp_status oom(ntp_onnx_importer *x)
{
    return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory", x->src);
}

/* Replace a string the unpacked message owns (protobuf-c's default
 * allocator is malloc). */
static bool set_str(char **s, const char *v)
{
    char *d = ntp__strdup(v);
    if (!d)
        return false;
    free(*s);
    *s = d;
    return true;
}

static const Onnx__TensorShapeProto *input_shape(const Onnx__ValueInfoProto *vi)
{
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return NULL;
    return tp->tensor_type->shape;
}

static const char *dim_param(const Onnx__TensorShapeProto *sp, size_t d)
{
    if (!sp || d >= sp->n_dim ||
        sp->dim[d]->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
        return NULL;
    return sp->dim[d]->dim_param;
}

/* Rename graph input `vi` to `to` in the input and every node, its type
 * kept. */
static bool rename_keep(Onnx__GraphProto *gp, Onnx__ValueInfoProto *vi, const char *to)
{
    char *from = ntp__strdup(vi->name);
    bool ok = from && set_str(&vi->name, to);
    for (size_t i = 0; ok && i < gp->n_node; i++)
        for (size_t k = 0; ok && k < gp->node[i]->n_input; k++)
            if (gp->node[i]->input[k] && strcmp(gp->node[i]->input[k], from) == 0)
                ok = set_str(&gp->node[i]->input[k], to);
    free(from);
    return ok;
}

/* Rename graph input `vi` to `to`, as rename_keep, and make it i32. */
static bool rename_input(Onnx__GraphProto *gp, Onnx__ValueInfoProto *vi, const char *to)
{
    bool ok = rename_keep(gp, vi, to);
    if (ok && vi->type && vi->type->tensor_type) {
        vi->type->tensor_type->elem_type = NTP_ONNX_INT32;
        vi->type->tensor_type->has_elem_type = true;
    }
    return ok;
}

ntp_status ntp__onnx_kv_prepare(ntp_onnx_importer *x)
{
    Onnx__GraphProto *gp = x->model->graph;
    x->kv_mask_t = -1;
    if (!gp)
        return NTP_STATUS_OK;
    int layers = 0;
    char *seq = NULL, *past = NULL;
    Onnx__ValueInfoProto *ids = NULL, *pos = NULL, *mask = NULL;
    for (size_t i = 0; i < gp->n_input; i++) {
        Onnx__ValueInfoProto *vi = gp->input[i];
        int l;
        bool isv;
        if (!vi->name) /* proto2: a name may be absent */
            continue;
        if (strcmp(vi->name, "input_ids") == 0)
            ids = vi;
        else if (strcmp(vi->name, "position_ids") == 0)
            pos = vi;
        else if (strcmp(vi->name, "attention_mask") == 0)
            mask = vi;
        if (!past_name(vi->name, &l, &isv))
            continue;
        const Onnx__TensorShapeProto *sp = input_shape(vi);
        if (!sp || sp->n_dim != 4)
            return ntp__error(x->ctx, NTP_STATUS_UNSUPPORTED,
                              "%s: input '%s' must be [batch, kv_heads, past, head_dim]", x->src,
                              vi->name);
        if (l + 1 > layers)
            layers = l + 1;
        const char *p = dim_param(sp, 2);
        if (p && !past && !(past = ntp__strdup(p)))
            return oom(x);
    }
    if (layers == 0)
        return NTP_STATUS_OK;
    ntp_status st = NTP_STATUS_OK;
    if (!ids || !pos) {
        st = ntp__error(x->ctx, NTP_STATUS_UNSUPPORTED,
                        "%s: a decoder with past_key_values needs the inputs 'input_ids' and "
                        "'position_ids' [batch, seq] (docs/onnx.md)",
                        x->src);
        goto done;
    }
    const char *sq = dim_param(input_shape(ids), 1);
    if (!sq) {
        st = ntp__error(x->ctx, NTP_STATUS_UNSUPPORTED,
                        "%s: input 'input_ids' needs a symbolic sequence dim (dim 1) for prefill "
                        "and decode passes of different lengths",
                        x->src);
        goto done;
    }
    if (!(seq = ntp__strdup(sq))) {
        st = oom(x);
        goto done;
    }
    /* Dims: the sequence's is `seq_len` wherever it appears; the past's is
     * a fixed 1 (the past inputs are removed after mapping). */
    for (size_t i = 0; i < gp->n_input; i++) {
        Onnx__TensorShapeProto *sp = gp->input[i]->type && gp->input[i]->type->tensor_type
                                         ? gp->input[i]->type->tensor_type->shape
                                         : NULL;
        for (size_t d = 0; sp && d < sp->n_dim; d++) {
            Onnx__TensorShapeProto__Dimension *dm = sp->dim[d];
            const char *p = dim_param(sp, d);
            if (!p)
                continue;
            if (strcmp(p, seq) == 0) {
                if (!set_str(&dm->dim_param, "seq_len")) {
                    st = oom(x);
                    goto done;
                }
                continue; /* p was freed */
            }
            if (past && strcmp(p, past) == 0) {
                free(dm->dim_param);
                dm->dim_param = NULL;
                dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                dm->dim_value = 1;
            }
        }
    }
    if (!rename_input(gp, ids, "tokens") || !rename_input(gp, pos, "positions")) {
        st = oom(x);
        goto done;
    }
    if (mask) {
        const Onnx__TensorShapeProto *ms = input_shape(mask);
        if (!ms || ms->n_dim != 2) {
            st = ntp__error(x->ctx, NTP_STATUS_UNSUPPORTED,
                            "%s: input 'attention_mask' must be [batch, past + seq]", x->src);
            goto done;
        }
        if (!rename_keep(gp, mask, "attention_mask.total")) {
            st = oom(x);
            goto done;
        }
        x->kv_mask = true;
    }
    /* The present outputs are the cache, which generate keeps. */
    size_t k = 0;
    for (size_t i = 0; i < gp->n_output; i++) {
        if (present_name(gp->output[i]->name))
            onnx__value_info_proto__free_unpacked(gp->output[i], NULL);
        else
            gp->output[k++] = gp->output[i];
    }
    gp->n_output = k;
    x->kv_layers = layers;
done:
    free(seq);
    free(past);
    return st;
}

/* The positive value ntp_load_opts.set gives `name`, else 0. */
static int64_t set_int(const ntp_onnx_importer *x, const char *name)
{
    size_t len = strlen(name);
    int64_t v = 0;
    for (int i = 0; i < x->opts->n_set; i++) {
        const char *s = x->opts->set[i];
        if (s && strncmp(s, name, len) == 0 && s[len] == '=') {
            long long a = strtoll(s + len + 1, NULL, 10);
            v = a > 0 ? a : 0;
        }
    }
    return v;
}

/* The model's attention_mask (renamed attention_mask.total) as ones of
 * [batch, 1 + seq_len], the batch as make_inputs binds it: the padding
 * is kv_attention's business, so the model's own mask computation folds
 * to a constant (causal) at load time. */
static ntp_status mask_constant(ntp_onnx_importer *x)
{
    int i = ntp__onnx_names_get(x->values, "attention_mask.total");
    if (i < 0)
        return NTP_STATUS_OK;
    const Onnx__ValueInfoProto *vi = NULL;
    for (size_t k = 0; k < x->gp->n_input; k++)
        if (x->gp->input[k]->name && strcmp(x->gp->input[k]->name, "attention_mask.total") == 0)
            vi = x->gp->input[k];
    const Onnx__TensorShapeProto *sp = vi ? input_shape(vi) : NULL;
    int64_t S = set_int(x, "seq_len"), B = 0;
    if (S <= 0)
        return ntp__error(x->ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "%s: a decoder with an attention_mask needs the tokens per pass: "
                          "give ntp_load_opts.set seq_len=N",
                          x->src);
    if (sp && sp->n_dim == 2) {
        const char *p = dim_param(sp, 0);
        if (p)
            B = set_int(x, p);
        else if (sp->dim[0]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            B = sp->dim[0]->dim_value;
    }
    if (B <= 0)
        B = x->opts->batch;
    ntp_shape s = {2, {B > 0 ? B : 1, 1 + S}};
    int32_t dt = vi && vi->type && vi->type->tensor_type && vi->type->tensor_type->has_elem_type
                     ? vi->type->tensor_type->elem_type
                     : NTP_ONNX_INT64;
    ntp_onnx_tensor *c = ntp__onnx_tensor_new(dt, &s);
    if (!c)
        return oom(x);
    for (int64_t k = 0; k < c->n; k++) {
        if (c->f)
            c->f[k] = 1;
        else
            c->i[k] = 1;
    }
    ntp_onnx_value *v = &x->v[i];
    ntp__onnx_tensor_free(v->c);
    v->c = c;
    v->bound = false;
    v->dtype = dt;
    return NTP_STATUS_OK;
}

ntp_status ntp__onnx_kv_params(ntp_onnx_importer *x)
{
    if (x->kv_layers == 0)
        return NTP_STATUS_OK;
    /* `past` (positions cached before the pass) sets the costs of
     * kv_attention; 0 is allowed (a prefill from nothing). */
    x->kv_past = 0;
    for (int i = 0; i < x->opts->n_set; i++) {
        const char *s = x->opts->set[i];
        if (!s || strncmp(s, "past=", 5) != 0)
            continue;
        char *end;
        long long v = strtoll(s + 5, &end, 10);
        if (end == s + 5 || *end || v < 0)
            return ntp__error(x->ctx, NTP_STATUS_INVALID_ARGUMENT,
                              "ntp_load_opts.set %s: expected a non-negative integer", s);
        x->kv_past = v;
    }
    ntp_status st;
    if (x->kv_mask && (st = mask_constant(x)))
        return st;
    char val[32];
    snprintf(val, sizeof val, "%lld", (long long)x->kv_past);
    ntp_param *p = realloc(x->g->params, ((size_t)x->g->n_params + 1) * sizeof *p);
    if (!p)
        return oom(x);
    x->g->params = p;
    p[x->g->n_params].name = ntp__strdup("past");
    p[x->g->n_params].value = ntp__strdup(val);
    p[x->g->n_params].line = 0;
    x->g->n_params++;
    if (!p[x->g->n_params - 1].name || !p[x->g->n_params - 1].value)
        return oom(x);
    return NTP_STATUS_OK;
}

/* --- after mapping ------------------------------------------------------------------------- */

static int tensor_of(ntp_onnx_importer *x, const char *name)
{
    int i = ntp__onnx_names_get(x->values, name);
    return i >= 0 ? x->v[i].tensor : -1;
}

/* The readers of tensor t: how many, the first in *node. */
static int readers(const ntp_graph *g, int t, int *node)
{
    int c = 0;
    *node = -1;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++)
            if (g->nodes[i].in[k] == t) {
                if (c++ == 0)
                    *node = i;
                break;
            }
    return c;
}

/* Every read of tensor `from` (by a layer, or as an ONNX value) reads `to`. */
static void replace_uses(ntp_onnx_importer *x, int from, int to)
{
    ntp_graph *g = x->g;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++)
            if (g->nodes[i].in[k] == from)
                g->nodes[i].in[k] = to;
    for (int i = 0; i < x->n_v; i++)
        if (x->v[i].tensor == from)
            x->v[i].tensor = to;
}

/* The one f32 value of a constant layer's output t, or false. */
static bool scalar_of(const ntp_graph *g, int t, double *v)
{
    int p = g->tensors[t].producer;
    if (p < 0 || g->nodes[p].op != NTP_OP_CONSTANT || g->nodes[p].n_w != 1)
        return false;
    const ntp_tensor *w = &g->tensors[g->nodes[p].w[0]];
    if (ntp_shape_numel(&w->shape) != 1 || !w->data || w->data_dtype != NTP_DTYPE_F32)
        return false;
    *v = *(const float *)w->data;
    return true;
}

static bool is_perm(const ntp_node *n, const int64_t *p, int r)
{
    if (n->op != NTP_OP_TRANSPOSE || n->a.n_perm != r)
        return false;
    for (int d = 0; d < r; d++)
        if (n->a.perm[d] != p[d])
            return false;
    return true;
}

static const int64_t swap12[4] = {0, 2, 1, 3}, swap23[4] = {0, 1, 3, 2};

/* The concat of past_key_values.<l>.<key|value> and the new positions:
 * its node, or -1. */
static int cache_concat(ntp_onnx_importer *x, int l, bool value, int *past_t)
{
    char name[64];
    snprintf(name, sizeof name, "past_key_values.%d.%s", l, value ? "value" : "key");
    int t = tensor_of(x, name);
    *past_t = t;
    if (t < 0)
        return -1;
    const ntp_graph *g = x->g;
    for (int i = 0; i < g->n_nodes; i++) {
        const ntp_node *n = &g->nodes[i];
        if (n->op == NTP_OP_CONCAT && n->n_in == 2 && n->in[0] == t &&
            (n->a.axis == 2 || n->a.axis == -2))
            return i;
    }
    return -1;
}

/* t is `all` [N, KVH, T, hd], or all repeated to the query heads as
 * repeat_kv writes it: Reshape(Expand(Reshape(all, [N, KVH, 1, T, hd]),
 * [N, KVH, rep, T, hd]), [N, KVH·rep, T, hd]) (query head h reads kv
 * head h / rep). */
static bool repeat_of(const ntp_graph *g, int t, int all)
{
    if (t == all)
        return true;
    int r2 = g->tensors[t].producer;
    if (r2 < 0 || g->nodes[r2].op != NTP_OP_RESHAPE || g->nodes[r2].n_in != 1)
        return false;
    int e = g->tensors[g->nodes[r2].in[0]].producer;
    if (e < 0 || g->nodes[e].op != NTP_OP_EXPAND || g->nodes[e].n_in != 1)
        return false;
    int r1 = g->tensors[g->nodes[e].in[0]].producer;
    if (r1 < 0 || g->nodes[r1].op != NTP_OP_RESHAPE || g->nodes[r1].n_in != 1 ||
        g->nodes[r1].in[0] != all)
        return false;
    const ntp_shape *a = &g->tensors[all].shape, *u = &g->tensors[g->nodes[r1].out[0]].shape,
                    *x = &g->tensors[g->nodes[e].out[0]].shape, *y = &g->tensors[t].shape;
    if (a->ndim != 4 || u->ndim != 5 || x->ndim != 5 || y->ndim != 4)
        return false;
    int64_t N = a->dim[0], KVH = a->dim[1], T = a->dim[2], hd = a->dim[3], rep = x->dim[2];
    const int64_t want_u[5] = {N, KVH, 1, T, hd}, want_x[5] = {N, KVH, rep, T, hd},
                  want_y[4] = {N, KVH * rep, T, hd};
    for (int d = 0; d < 5; d++)
        if (u->dim[d] != want_u[d] || x->dim[d] != want_x[d])
            return false;
    for (int d = 0; d < 4; d++)
        if (y->dim[d] != want_y[d])
            return false;
    return true;
}

static ntp_status not_recognised(ntp_onnx_importer *x, int l, const char *what)
{
    return ntp__error(x->ctx, NTP_STATUS_UNSUPPORTED,
                      "%s: the attention over past_key_values.%d is not in a form ntprof "
                      "recognises: %s (expected MatMul(q, Transpose(Concat(past_key, k))), a "
                      "scale, a mask, Softmax, MatMul(weights, Concat(past_value, v)); "
                      "docs/onnx.md)",
                      x->src, l, what);
}

static ntp_status rewrite_layer(ntp_onnx_importer *x, int l)
{
    ntp_graph *g = x->g;
    int pk, pv;
    int ck = cache_concat(x, l, false, &pk), cv = cache_concat(x, l, true, &pv);
    if (ck < 0 || cv < 0)
        return not_recognised(x, l, "no Concat of the past and the new keys or values on dim 2");
    int kall = g->nodes[ck].out[0], vall = g->nodes[cv].out[0];
    int knew = g->nodes[ck].in[1], vnew = g->nodes[cv].in[1];
    /* Scores: matmul(q, kallᵀ), the transpose a flag or a layer. */
    int m1 = -1, r;
    for (int i = 0; i < g->n_nodes && m1 < 0; i++) {
        const ntp_node *n = &g->nodes[i];
        if (n->op != NTP_OP_MATMUL || n->a.transpose_a)
            continue;
        if (n->a.transpose_b && repeat_of(g, n->in[1], kall))
            m1 = i;
        int p = g->tensors[n->in[1]].producer;
        if (!n->a.transpose_b && p >= 0 && g->nodes[p].n_in >= 1 &&
            repeat_of(g, g->nodes[p].in[0], kall) && is_perm(&g->nodes[p], swap23, 4))
            m1 = i;
    }
    if (m1 < 0)
        return not_recognised(x, l, "no MatMul of the queries and the keys' transpose");
    int q = g->nodes[m1].in[0];
    /* Grouped-query attention written without copying keys (ntprof's
     * export): the queries [N, H, S, hd] reshaped to [N, KVH, rep·S, hd]. */
    int qp = g->tensors[q].producer;
    bool grouped = false;
    if (qp >= 0 && g->nodes[qp].op == NTP_OP_RESHAPE) {
        const ntp_shape *a = &g->tensors[g->nodes[qp].in[0]].shape, *b = &g->tensors[q].shape;
        if (a->ndim == 4 && b->ndim == 4 && a->dim[0] == b->dim[0] && a->dim[3] == b->dim[3] &&
            a->dim[1] > b->dim[1] && a->dim[1] % b->dim[1] == 0 &&
            b->dim[2] == a->dim[2] * (a->dim[1] / b->dim[1])) {
            q = g->nodes[qp].in[0];
            grouped = true;
        }
    }
    double scale = 1;
    int cur = g->nodes[m1].out[0], sm = -1;
    for (int hops = 0; hops < 8 && sm < 0; hops++) {
        if (readers(g, cur, &r) != 1)
            return not_recognised(x, l, "the scores are read by more than one layer");
        const ntp_node *n = &g->nodes[r];
        double c;
        int other = n->n_in == 2 ? n->in[n->in[0] == cur ? 1 : 0] : -1;
        if (n->op == NTP_OP_SOFTMAX) {
            if (n->a.axis != -1 && n->a.axis != 3)
                return not_recognised(x, l, "the softmax is not over the keys");
            sm = r;
            break;
        } else if (n->op == NTP_OP_MUL && other >= 0 && scalar_of(g, other, &c)) {
            scale *= c;
        } else if (n->op == NTP_OP_DIV && n->in[0] == cur && scalar_of(g, n->in[1], &c)) {
            scale /= c;
        } else if (n->op != NTP_OP_ADD && n->op != NTP_OP_WHERE) {
            return not_recognised(x, l, "a layer other than a scale or a mask before the softmax");
        }
        cur = n->out[0];
    }
    if (sm < 0)
        return not_recognised(x, l, "no softmax of the scores");
    int m2 = -1;
    if (readers(g, g->nodes[sm].out[0], &m2) != 1 || g->nodes[m2].op != NTP_OP_MATMUL ||
        !repeat_of(g, g->nodes[m2].in[1], vall) || g->nodes[m2].a.transpose_a ||
        g->nodes[m2].a.transpose_b)
        return not_recognised(x, l, "the softmax's weights do not multiply the values");
    const ntp_shape *qs = &g->tensors[q].shape, *ks = &g->tensors[knew].shape;
    if (qs->ndim != 4 || ks->ndim != 4 || g->tensors[vnew].shape.ndim != 4)
        return not_recognised(x, l, "the queries, keys and values are not [N, heads, S, head_dim]");
    int64_t N = qs->dim[0], H = qs->dim[1], S = qs->dim[2], hd = qs->dim[3], KVH = ks->dim[1];
    if (ks->dim[3] != hd || ks->dim[2] != S || ks->dim[0] != N)
        return not_recognised(x, l, "the keys' shape does not match the queries'");
    if (KVH <= 0 || H % KVH)
        return not_recognised(x, l, "the key/value heads do not divide the query heads");
    /* Repeated keys and values must reach every query head. */
    const ntp_shape *kr = &g->tensors[g->nodes[m2].in[1]].shape;
    if (!grouped && kr->dim[1] != H)
        return not_recognised(x, l, "the keys and values are not repeated to the query heads");
    double want = 1.0 / sqrt((double)hd);
    if (fabs(scale - want) > 1e-5 * want)
        return not_recognised(x, l,
                              "the scores are scaled by something other than 1/sqrt(head_dim)");
    int out_h = g->nodes[m2].out[0];
    if (grouped) {
        /* ... and the context back to [N, H, S, hd]. */
        int rr = -1;
        if (readers(g, out_h, &rr) != 1 || g->nodes[rr].op != NTP_OP_RESHAPE ||
            !ntp_shape_equal(&g->tensors[g->nodes[rr].out[0]].shape, qs))
            return not_recognised(x, l, "grouped queries whose context is not reshaped back");
        out_h = g->nodes[rr].out[0];
    }
    /* The new layers, named after the attention's last MatMul. */
    static const Onnx__NodeProto none = ONNX__NODE_PROTO__INIT;
    char base[300];
    snprintf(base, sizeof base, "%.200s", g->nodes[m2].name);
    x->np = &none;
    x->node_name = base;
    ntp_shape flat_q = {3, {N, S, H * hd}}, flat_kv = {3, {N, S, KVH * hd}},
              split = {4, {N, S, H, hd}};
    int qt, qf, kt, kf, vt, vf, rs, back;
    ntp_status st;
    if ((st = ntp__onnx_transpose(x, q, swap12, 4, "q_t", &qt)) ||
        (st = ntp__onnx_reshape(x, qt, &flat_q, "q_flat", &qf)) ||
        (st = ntp__onnx_transpose(x, knew, swap12, 4, "k_t", &kt)) ||
        (st = ntp__onnx_reshape(x, kt, &flat_kv, "k_flat", &kf)) ||
        (st = ntp__onnx_transpose(x, vnew, swap12, 4, "v_t", &vt)) ||
        (st = ntp__onnx_reshape(x, vt, &flat_kv, "v_flat", &vf)))
        return st;
    /* The padding mask of the new tokens, one input for every layer. */
    if (x->kv_mask && x->kv_mask_t < 0) {
        int t = ntp__onnx_add_tensor(x, "attention_mask", NTP_TENSOR_INPUT);
        int *ins =
            t >= 0 ? realloc(x->g->inputs, ((size_t)x->g->n_inputs + 1) * sizeof *ins) : NULL;
        if (!ins)
            return oom(x);
        g = x->g;
        if (strcmp(g->tensors[t].name, "attention_mask") != 0)
            return ntp__error(x->ctx, NTP_STATUS_UNSUPPORTED,
                              "%s: a value of the model is already named 'attention_mask'", x->src);
        g->inputs = ins;
        ins[g->n_inputs++] = t;
        g->tensors[t].shape = (ntp_shape){2, {N, S}};
        g->tensors[t].dtype = NTP_DTYPE_I32;
        g->tensors[t].layout = NTP_LAYOUT_ANY;
        x->kv_mask_t = t;
    }
    int in[4] = {qf, kf, vf, x->kv_mask_t};
    int ni = ntp__onnx_add_node(x, NTP_OP_KV_ATTENTION, "kv_attention", in, x->kv_mask ? 4 : 3, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    g = x->g;
    g->nodes[ni].a.heads = H;
    g->nodes[ni].a.kv_heads = KVH;
    g->nodes[ni].a.past = x->kv_past;
    if ((st = ntp__onnx_infer(x, ni)))
        return st;
    int a = g->nodes[ni].out[0];
    if ((st = ntp__onnx_reshape(x, a, &split, "split", &rs)) ||
        (st = ntp__onnx_transpose(x, rs, swap12, 4, "heads", &back)))
        return st;
    g = x->g;
    /* The usual merge of the heads (transpose, reshape to [N, S, D]) reads
     * the attention's output directly. */
    for (int i = 0; i < g->n_nodes; i++) {
        ntp_node *n = &g->nodes[i];
        if (n->n_in != 1 || n->in[0] != out_h || !is_perm(n, swap12, 4))
            continue;
        int t = n->out[0];
        replace_uses(x, t, rs);
        for (int j = 0; j < g->n_nodes; j++) {
            ntp_node *m = &g->nodes[j];
            if (m->op == NTP_OP_RESHAPE && m->in[0] == rs &&
                ntp_shape_equal(&g->tensors[m->out[0]].shape, &g->tensors[a].shape))
                replace_uses(x, m->out[0], a);
        }
    }
    /* Anything else reads the heads layout back. */
    for (int i = 0; i < g->n_nodes; i++) {
        ntp_node *n = &g->nodes[i];
        if (i == g->tensors[back].producer)
            continue;
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] == out_h)
                n->in[k] = back;
    }
    for (int i = 0; i < x->n_v; i++)
        if (x->v[i].tensor == out_h)
            x->v[i].tensor = back;
    (void)pk;
    (void)pv;
    return NTP_STATUS_OK;
}

ntp_status ntp__onnx_kv_rewrite(ntp_onnx_importer *x)
{
    if (x->kv_layers == 0)
        return NTP_STATUS_OK;
    ntp_status st;
    for (int l = 0; l < x->kv_layers; l++)
        if ((st = rewrite_layer(x, l)))
            return st;
    /* The logits: an fc without bias (MatMul by a constant) is the LM
     * head. */
    int lt = tensor_of(x, "logits");
    if (lt < 0)
        return ntp__error(x->ctx, NTP_STATUS_UNSUPPORTED,
                          "%s: a decoder with past_key_values needs the output 'logits'", x->src);
    int p = x->g->tensors[lt].producer;
    ntp_node *n = p >= 0 ? &x->g->nodes[p] : NULL;
    if (!n || n->op != NTP_OP_FC || n->a.bias || n->n_w != 1)
        return ntp__error(x->ctx, NTP_STATUS_UNSUPPORTED,
                          "%s: the logits must be a MatMul of the last hidden state by a constant "
                          "[dim, vocab] (the LM head)",
                          x->src);
    n->op = NTP_OP_LM_HEAD;
    n->a.vocab = n->a.units;
    n->a.tied = false;
    /* Tied: the head's matrix is, bit for bit, an embedding's table (the
     * Transpose of the table was folded into a copy): one tensor again,
     * counted once. */
    const ntp_tensor *w = &x->g->tensors[n->w[0]];
    for (int i = 0; i < x->g->n_nodes; i++) {
        const ntp_node *e = &x->g->nodes[i];
        if (e->op != NTP_OP_EMBEDDING || e->n_w != 1)
            continue;
        const ntp_tensor *t = &x->g->tensors[e->w[0]];
        if (ntp_shape_equal(&t->shape, &w->shape) && t->data && w->data &&
            t->data_dtype == NTP_DTYPE_F32 && w->data_dtype == NTP_DTYPE_F32 &&
            memcmp(t->data, w->data, (size_t)ntp_shape_numel(&t->shape) * sizeof(float)) == 0) {
            n->a.tied = true;
            n->n_w = 0;
            break;
        }
    }
    return NTP_STATUS_OK;
}

static ntp_status set_max_positions(ntp_onnx_importer *x);

ntp_status ntp__onnx_kv_outputs(ntp_onnx_importer *x)
{
    if (x->kv_layers == 0)
        return NTP_STATUS_OK;
    ntp_graph *g = x->g;
    int lt = tensor_of(x, "logits");
    /* A model with its own ArgMax of the logits (ntprof's export) keeps
     * it; otherwise one is added. */
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == NTP_OP_ARGMAX && g->nodes[i].in[0] == lt)
            for (int k = 0; k < g->n_outputs; k++)
                if (g->outputs[k] == g->nodes[i].out[0])
                    return set_max_positions(x);
    static const Onnx__NodeProto none = ONNX__NODE_PROTO__INIT;
    x->np = &none;
    x->node_name = "next_token";
    int ni = ntp__onnx_add_node(x, NTP_OP_ARGMAX, NULL, &lt, 1, 1);
    if (ni < 0)
        return ntp_ctx_status(x->ctx);
    ntp_status st = ntp__onnx_infer(x, ni);
    if (st)
        return st;
    g = x->g;
    int *o = realloc(g->outputs, ((size_t)g->n_outputs + 1) * sizeof *o);
    if (!o)
        return oom(x);
    g->outputs = o;
    o[g->n_outputs++] = g->nodes[ni].out[0];
    return set_max_positions(x);
}

/* The longest context: the smallest table the positions index. */
static ntp_status set_max_positions(ntp_onnx_importer *x)
{
    ntp_graph *g = x->g;
    int pt = tensor_of(x, "positions");
    int64_t maxpos = 0;
    for (int i = 0; i < g->n_nodes && pt >= 0; i++)
        if (g->nodes[i].op == NTP_OP_EMBEDDING && g->nodes[i].in[0] == pt &&
            (maxpos == 0 || g->nodes[i].a.vocab < maxpos))
            maxpos = g->nodes[i].a.vocab;
    if (maxpos > 0) {
        char val[32];
        snprintf(val, sizeof val, "%lld", (long long)maxpos);
        ntp_param *pp = realloc(g->params, ((size_t)g->n_params + 1) * sizeof *pp);
        if (!pp)
            return oom(x);
        g->params = pp;
        pp[g->n_params].name = ntp__strdup("max_positions");
        pp[g->n_params].value = ntp__strdup(val);
        pp[g->n_params].line = 0;
        g->n_params++;
        if (!pp[g->n_params - 1].name || !pp[g->n_params - 1].value)
            return oom(x);
    }
    return NTP_STATUS_OK;
}
