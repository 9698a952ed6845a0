/* ntp_generate: prefill and decode with a key/value cache (generate.h,
 * docs/decoders.md).
 *
 * The cache is state of the generation, not of a plan: one ntp_kv_state
 * per kv_attention layer, allocated here once for context + prompt +
 * generation, and bound by the exec options' kv_for into both the prefill
 * plan (seq_len = P) and the decode plan (seq_len = 1), which are plans of
 * the same markup and so list the same layers at the same node indices.
 * After each pass every layer's `len` advances by the tokens it appended. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/ctx-impl.h"
#include "core/numeric-impl.h"
#include "core/rng-impl.h"
#include "core/writers-impl.h"
#include "exec-impl.h"
#include "generate-impl.h"
#include "io/io-impl.h"
#include "measure/measure-impl.h"
#include "ntprof/generate.h"
#include "ntprof/machine.h"

void ntp_generate_opts_default(ntp_generate_opts *o)
{
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->prompt_len = 32;
    o->gen_len = 32;
    o->kv_dtype = NTP_DTYPE_F32;
}

/* Query width over heads: the head size of a kv_attention node. */
static int64_t kv_head_dim(const ntp_graph *g, const ntp_node *n)
{
    return g->tensors[n->in[0]].shape.dim[2] / (n->a.heads > 0 ? n->a.heads : 1);
}

/* Bytes one position of one sequence takes in a layer's cache: keys and
 * values, kv_heads rows of head_dim values each, and for i8 the f32 scale
 * of every row. */
static int64_t kv_row_bytes(int64_t kv_heads, int64_t hd, ntp_dtype dt)
{
    int64_t row = hd * (int64_t)ntp_dtype_size(dt) + (dt == NTP_DTYPE_I8 ? 4 : 0);
    return 2 * kv_heads * row;
}

int64_t ntp_graph_kv_bytes_per_token(const ntp_graph *g, ntp_dtype kv_dtype, int *layers)
{
    int64_t per = 0;
    int nl = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const ntp_node *n = &g->nodes[i];
        if (n->op != NTP_OP_KV_ATTENTION)
            continue;
        nl++;
        per += kv_row_bytes(n->a.kv_heads, kv_head_dim(g, n), kv_dtype);
    }
    if (layers)
        *layers = nl;
    return per;
}

typedef struct gen {
    ntp_graph *gp, *gd; /* prefill and decode plans' graphs */
    ntp_exec xp, xd;
    ntp_kv_state *kv; /* per node index; only kv_attention nodes' are used */
    int64_t B, P, G, D, V;
} gen;

static ntp_kv_state *kv_for(void *user, const ntp_graph *g, const ntp_node *n)
{
    gen *s = user;
    return &s->kv[n - g->nodes];
}

static ntp_status load_phase(ntp_ctx *ctx, const char *path, const ntp_generate_opts *o,
                             int64_t seq, int64_t past, int64_t batch, ntp_graph **out)
{
    const char **set = malloc(((size_t)o->n_set + 2) * sizeof *set);
    char a[64], b[64];
    if (!set)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < o->n_set; i++)
        set[i] = o->set[i];
    snprintf(a, sizeof a, "seq_len=%lld", (long long)seq);
    snprintf(b, sizeof b, "past=%lld", (long long)past);
    set[o->n_set] = a;
    set[o->n_set + 1] = b;
    ntp_load_opts lo = {
        .set = set, .n_set = o->n_set + 2, .batch = batch, .max_memory = o->max_memory};
    ntp_status st = ntp_graph_load(ctx, path, &lo, out);
    free(set);
    return st;
}

static int find_input(const ntp_graph *g, const char *name)
{
    for (int i = 0; i < g->n_inputs; i++)
        if (strcmp(g->tensors[g->inputs[i]].name, name) == 0)
            return g->inputs[i];
    return -1;
}

static int find_op(const ntp_graph *g, ntp_op op)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == op)
            return i;
    return -1;
}

static void *slot_data(const ntp_exec *x, int t)
{
    return x->tslot[t] >= 0 ? x->slots[x->tslot[t]].data : NULL;
}

/* Check that g is a decoder topology generate can drive. */
static ntp_status check_decoder(ntp_ctx *ctx, const ntp_graph *g)
{
    int tok = find_input(g, "tokens"), pos = find_input(g, "positions");
    int lm = find_op(g, NTP_OP_LM_HEAD), am = find_op(g, NTP_OP_ARGMAX);
    if (tok < 0 || pos < 0 || lm < 0 || am < 0 || find_op(g, NTP_OP_KV_ATTENTION) < 0)
        return ntp__error(ctx, NTP_STATUS_GRAPH_ERROR,
                          "%s: not a decoder topology: generate needs the inputs 'tokens' and "
                          "'positions', kv_attention layers, an lm_head and an argmax "
                          "(docs/decoders.md)",
                          g->source);
    if (g->tensors[tok].dtype != NTP_DTYPE_I32 || g->tensors[pos].dtype != NTP_DTYPE_I32)
        return ntp__error(ctx, NTP_STATUS_GRAPH_ERROR,
                          "%s: the inputs 'tokens' and 'positions' must be i32", g->source);
    return NTP_STATUS_OK;
}

bool ntp_graph_is_decoder(const ntp_graph *g)
{
    return g && find_input(g, "tokens") >= 0 && find_input(g, "positions") >= 0 &&
           find_op(g, NTP_OP_LM_HEAD) >= 0 && find_op(g, NTP_OP_ARGMAX) >= 0 &&
           find_op(g, NTP_OP_KV_ATTENTION) >= 0;
}

/* --pad: the topology must take a padding mask (the input attention_mask,
 * i32 [batch, seq_len], as an imported decoder does), and leave each
 * padded sequence a token. */
static ntp_status check_pad(ntp_ctx *ctx, const ntp_graph *g, const ntp_generate_opts *o, int64_t B,
                            int mask_t)
{
    if (mask_t >= 0 && g->tensors[mask_t].dtype != NTP_DTYPE_I32)
        return ntp__error(ctx, NTP_STATUS_GRAPH_ERROR, "%s: the input 'attention_mask' must be i32",
                          g->source);
    if (o->pad == 0)
        return NTP_STATUS_OK;
    if (o->pad < 0 || o->pad >= o->prompt_len)
        return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_generate_opts.pad",
                              "%lld: expected 0 to the prompt length - 1 (%lld)", (long long)o->pad,
                              (long long)(o->prompt_len - 1));
    if (mask_t < 0)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                          "%s: padding needs a decoder with an 'attention_mask' input "
                          "(docs/decoders.md)",
                          g->source);
    if (B < 2)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "padding pads the odd sequences of the batch: batch %lld has none",
                          (long long)B);
    return NTP_STATUS_OK;
}

static int64_t param_int(const ntp_graph *g, const char *name, int64_t dflt)
{
    for (int i = 0; i < g->n_params; i++)
        if (strcmp(g->params[i].name, name) == 0)
            return strtoll(g->params[i].value, NULL, 10);
    return dflt;
}

static int64_t physical_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    return pages > 0 && psize > 0 ? (int64_t)pages * (int64_t)psize : 0;
}

static ntp_status alloc_cache(ntp_ctx *ctx, gen *s, ntp_dtype dt, int64_t cap, uint64_t seed)
{
    const ntp_graph *g = s->gp;
    if (!(s->kv = calloc((size_t)g->n_nodes + 1, sizeof *s->kv)))
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < g->n_nodes; i++) {
        const ntp_node *n = &g->nodes[i];
        if (n->op != NTP_OP_KV_ATTENTION)
            continue;
        ntp_kv_state *c = &s->kv[i];
        c->dtype = dt;
        c->batch = s->B;
        c->kv_heads = n->a.kv_heads;
        c->head_dim = kv_head_dim(g, n);
        c->capacity = cap;
        size_t bytes = (size_t)(s->B * c->kv_heads * cap * c->head_dim) * ntp_dtype_size(dt);
        size_t rows = (size_t)(s->B * c->kv_heads * cap);
        if (n->n_in == 4) { /* a padding mask: the synthetic context holds tokens */
            if (!(c->keep = calloc((size_t)(s->B * cap) + 1, 1)))
                return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            for (int64_t b = 0; b < s->B; b++)
                memset(c->keep + b * cap, 1, (size_t)s->D);
        }
        if (!(c->k = calloc(1, bytes + 1)) || !(c->v = calloc(1, bytes + 1)) ||
            (dt == NTP_DTYPE_I8 && (!(c->k_scale = calloc(rows + 1, sizeof(float))) ||
                                    !(c->v_scale = calloc(rows + 1, sizeof(float))))))
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY,
                              "out of memory for the key/value cache of '%s' (%zu bytes)", n->name,
                              2 * bytes);
        /* A synthetic context: D positions of N(0, 1) keys and values. */
        uint64_t r = seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(i + 1));
        for (int64_t b = 0; b < s->B * c->kv_heads; b++)
            for (int64_t t = 0; t < s->D; t++)
                for (int64_t d = 0; d < c->head_dim; d++) {
                    size_t at = (size_t)((b * cap + t) * c->head_dim + d);
                    float kv[2] = {ntp__rng_normal(&r), ntp__rng_normal(&r)};
                    if (dt == NTP_DTYPE_I8) {
                        /* Scale 4 / 127: N(0, 1) values within 4 sigma. */
                        size_t row = (size_t)(b * cap + t);
                        c->k_scale[row] = c->v_scale[row] = 4.0f / 127.0f;
                        ((int8_t *)c->k)[at] = ntp__quantize_i8(kv[0], 4.0f / 127.0f);
                        ((int8_t *)c->v)[at] = ntp__quantize_i8(kv[1], 4.0f / 127.0f);
                    } else if (dt == NTP_DTYPE_F32) {
                        ((float *)c->k)[at] = kv[0];
                        ((float *)c->v)[at] = kv[1];
                    } else {
                        uint16_t *k16 = c->k, *v16 = c->v;
                        k16[at] =
                            dt == NTP_DTYPE_BF16 ? ntp__f32_to_bf16(kv[0]) : ntp__f32_to_f16(kv[0]);
                        v16[at] =
                            dt == NTP_DTYPE_BF16 ? ntp__f32_to_bf16(kv[1]) : ntp__f32_to_f16(kv[1]);
                    }
                }
        c->len = s->D;
    }
    return NTP_STATUS_OK;
}

static void cache_set_len(gen *s, int64_t len)
{
    for (int i = 0; i < s->gp->n_nodes; i++)
        s->kv[i].len = len;
}

/* One pass of plan x, each step timed on its own; step times are added to
 * their layer's row (conversions to their consumer's). */
static ntp_status timed_pass(ntp_ctx *ctx, ntp_exec *x, double *row_ms, double *total_ms)
{
    uint64_t t0 = ntp__now_ns();
    for (int s = 0; s < x->n_steps; s++) {
        const ntp_step *st = &x->steps[s];
        uint64_t a = ntp__now_ns();
        int subs = st->kind == NTP_STEP_NODE ? (st->n_sub > 0 ? st->n_sub : 1) : 1;
        for (int sub = 0; sub < subs; sub++) {
            ntp_status rc = ntp__exec_sub(ctx, x, s, sub);
            if (rc)
                return rc;
        }
        if (row_ms)
            row_ms[st->pos] += (double)(ntp__now_ns() - a) / 1e6;
    }
    *total_ms = (double)(ntp__now_ns() - t0) / 1e6;
    return NTP_STATUS_OK;
}

static ntp_status save_npy(ntp_ctx *ctx, const char *dir, const char *name, ntp_dtype t,
                           const ntp_shape *s, const void *data)
{
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/", dir);
    snprintf(path + (n < (int)sizeof path ? n : 0), sizeof path - (size_t)n, "%s.npy", name);
    /* An imported model's names may hold '/' (ONNX's "/ln1/Add_1"). */
    for (char *p = path + n; n < (int)sizeof path && *p; p++)
        if (*p == '/')
            *p = '_';
    return ntp__npy_write(ctx, path, t, s, data);
}

static ntp_status save_weights(ntp_ctx *ctx, const gen *s, const char *dir)
{
    const ntp_graph *g = s->gp;
    for (int i = 0; i < g->n_tensors; i++) {
        const ntp_tensor *t = &g->tensors[i];
        if ((t->kind != NTP_TENSOR_WEIGHT && t->kind != NTP_TENSOR_BUFFER) || !s->xp.wdata[i])
            continue;
        ntp_dtype dt = ntp__exec_weight_dtype(&s->xp, 0, t);
        if (dt != NTP_DTYPE_F32 && dt != NTP_DTYPE_BF16 &&
            !(dt == NTP_DTYPE_I8 && s->xp.weights_i8))
            continue;
        /* bf16 and weight-only int8 weights (--weight-dtype) as the f32
         * values they hold. */
        int64_t n = ntp_shape_numel(&t->shape);
        float *wide = NULL;
        if (dt != NTP_DTYPE_F32) {
            if (!(wide = malloc((size_t)n * sizeof *wide + 1)))
                return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            const int8_t *q = s->xp.wdata[i];
            const float *sc = (const float *)((const char *)q + ((size_t)n + 3) / 4 * 4);
            int64_t per = n / (t->shape.dim[0] > 0 ? t->shape.dim[0] : 1);
            for (int64_t j = 0; j < n; j++)
                wide[j] = dt == NTP_DTYPE_BF16
                              ? ntp__bf16_to_f32(((const uint16_t *)s->xp.wdata[i])[j])
                              : (float)q[j] * sc[j / per];
        }
        ntp_status st =
            save_npy(ctx, dir, t->name, NTP_DTYPE_F32, &t->shape, wide ? wide : s->xp.wdata[i]);
        free(wide);
        if (st)
            return st;
    }
    return NTP_STATUS_OK;
}

/* The logits (the lm_head's output) of the pass just run, as f32. */
static const float *logits_of(ntp_ctx *ctx, const ntp_exec *x, const ntp_graph *g, ntp_shape *shape)
{
    const ntp_node *lm = &g->nodes[find_op(g, NTP_OP_LM_HEAD)];
    int t = lm->out[0];
    *shape = g->tensors[t].shape;
    if (x->tslot[t] < 0 || x->slots[x->tslot[t]].dtype != NTP_DTYPE_F32) {
        ntp__error(ctx, NTP_STATUS_UNSUPPORTED, "the logits are not stored as f32 on this backend");
        return NULL;
    }
    return slot_data(x, t);
}

/* A weight's bytes as held at --weight-dtype bf16 or i8 (as exec.c stores
 * them: every weight at bf16; matrices at int8 with an f32 scale per row,
 * vectors at f32); at f32, as analysed. */
static int64_t held_bytes(const ntp_tensor *t, ntp_dtype wd)
{
    int64_t n = ntp_shape_numel(&t->shape);
    if (wd == NTP_DTYPE_F32 || (t->kind != NTP_TENSOR_WEIGHT && t->kind != NTP_TENSOR_BUFFER))
        return ntp__tensor_bytes(t);
    return wd == NTP_DTYPE_BF16                       ? 2 * n
           : wd == NTP_DTYPE_I8 && t->shape.ndim >= 2 ? n + 4 * t->shape.dim[0]
                                                      : 4 * n;
}

/* The weights' bytes held at --weight-dtype, for --static. */
static int64_t weight_bytes_at(const ntp_graph *g, ntp_dtype wd)
{
    int64_t b = 0;
    for (int i = 0; i < g->n_tensors; i++) {
        const ntp_tensor *t = &g->tensors[i];
        if (t->kind == NTP_TENSOR_WEIGHT || t->kind == NTP_TENSOR_BUFFER)
            b += held_bytes(t, wd);
    }
    return b;
}

/* What a layer's traffic gains (a negative number: saves) when its weights
 * are held at --weight-dtype rather than as the analysis counted them: the
 * roofline's bytes per pass are the bytes the kernels read. */
static int64_t weight_traffic_delta(const ntp_graph *g, const ntp_node *n, ntp_dtype wd)
{
    int64_t d = 0;
    for (int k = 0; k < n->n_w; k++) {
        const ntp_tensor *t = &g->tensors[n->w[k]];
        d += held_bytes(t, wd) - ntp__tensor_bytes(t);
    }
    return d;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Cache traffic of a kv_attention layer in a pass of S tokens after
 * `past` positions: every cached key and value read once, the new ones
 * written. */
static int64_t kv_traffic(const ntp_graph *g, const ntp_node *n, int64_t B, int64_t S, int64_t past,
                          ntp_dtype dt)
{
    return B * kv_row_bytes(n->a.kv_heads, kv_head_dim(g, n), dt) * (past + S + S);
}

static void phase_rates(ntp_generate_phase *p, const ntp_ceilings *c, int64_t tokens)
{
    double s = p->ms / 1e3;
    p->tokens_per_s = s > 0 ? (double)tokens / s : 0;
    p->gflops = s > 0 ? (double)p->flops / s / 1e9 : 0;
    p->gbps = s > 0 ? (double)p->bytes / s / 1e9 : 0;
    p->intensity = p->bytes > 0 ? (double)p->flops / (double)p->bytes : 0;
    p->compute_share = p->bandwidth_share = p->predicted_tokens_per_s = -1;
    p->bound = NULL;
    if (!c)
        return;
    double peak = 0, bw = 0;
    for (int i = 0; i < c->n_gemm; i++)
        if (strcmp(c->gemm[i].precision, "f32") == 0)
            peak = c->gemm[i].gflops;
    for (int i = 0; i < c->n_peaks && peak <= 0; i++)
        if (strcmp(c->peaks[i].precision, "f32") == 0)
            peak = c->peaks[i].gflops;
    for (int i = 0; i < c->n_levels; i++)
        if (strcmp(c->levels[i].level, "DRAM") == 0)
            bw = c->levels[i].gbps;
    if (peak <= 0 || bw <= 0)
        return;
    if (p->ms > 0) { /* measured, not only analysed */
        p->compute_share = p->gflops / peak;
        p->bandwidth_share = p->gbps / bw;
    }
    double tc = (double)p->flops / (peak * 1e9), tm = (double)p->bytes / (bw * 1e9);
    double t = tc > tm ? tc : tm;
    p->predicted_tokens_per_s = t > 0 ? (double)tokens / t : 0;
    p->bound = tc > tm ? "compute" : "memory";
}

static void gen_free(gen *s)
{
    ntp__exec_free(&s->xp);
    ntp__exec_free(&s->xd);
    if (s->kv && s->gp)
        for (int i = 0; i < s->gp->n_nodes; i++) {
            if (s->kv[i].mirror_free)
                s->kv[i].mirror_free(s->kv[i].mirror);
            free(s->kv[i].k);
            free(s->kv[i].v);
            free(s->kv[i].k_scale);
            free(s->kv[i].v_scale);
            free(s->kv[i].keep);
        }
    free(s->kv);
    ntp_graph_free(s->gp);
    ntp_graph_free(s->gd);
}

static void progress(const ntp_generate_opts *o, const char *phase, int done, int total)
{
    if (o->progress)
        o->progress(o->progress_user, phase, done, total);
}

ntp_status ntp_generate(ntp_ctx *ctx, const char *path, const ntp_generate_opts *o,
                        ntp_generate_result **out)
{
    *out = NULL;
    if (o->prompt_len < 1 || o->gen_len < 1 || o->context_depth < 0 || o->batch < 0 ||
        o->threads < 0)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "prompt length and generation length must be at least 1, context "
                          "depth, batch and threads not negative");
    if (o->kv_dtype != NTP_DTYPE_F32 && o->kv_dtype != NTP_DTYPE_BF16 &&
        o->kv_dtype != NTP_DTYPE_F16 && o->kv_dtype != NTP_DTYPE_I8)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                          "a %s key/value cache is not supported; use f32, bf16, f16 or i8",
                          ntp_dtype_name(o->kv_dtype));
    const ntp_backend_i *be = o->backend ? ntp__backend_find(o->backend) : ntp__backend_get(0);
    if (!be)
        return ntp__error(ctx, NTP_STATUS_UNKNOWN_NAME, "unknown backend '%s'; this build has: %s",
                          o->backend, ntp_backends());
    if (o->weight_dtype != NTP_DTYPE_F32 && o->weight_dtype != NTP_DTYPE_BF16 &&
        o->weight_dtype != NTP_DTYPE_I8)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                          "%s weights are not supported by generate; use f32, bf16 or i8",
                          ntp_dtype_name(o->weight_dtype));
    if (o->weight_dtype != NTP_DTYPE_F32 && strcmp(be->name, "ref") != 0 && !o->static_only)
        return ntp__error(
            ctx, NTP_STATUS_UNSUPPORTED,
            "%s weights run on the reference backend only (ntp_generate_opts.backend ref), "
            "not "
            "on %s",
            ntp_dtype_name(o->weight_dtype), be->name);
    gen s = {.P = o->prompt_len, .G = o->gen_len, .D = o->context_depth};
    ntp_generate_result *r = calloc(1, sizeof *r);
    double *pre_ms = NULL, *dec_ms = NULL, *sorted = NULL;
    int32_t *tok = NULL;
    ntp_analysis *ap = NULL, *ad = NULL;
    ntp_status st;
    if (!r) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    if ((st = load_phase(ctx, path, o, s.P, s.D, o->batch, &s.gp)) ||
        (st = check_decoder(ctx, s.gp)))
        goto done;
    s.B = s.gp->batch > 0 ? s.gp->batch : s.gp->tensors[find_input(s.gp, "tokens")].shape.dim[0];
    int mask_t = find_input(s.gp, "attention_mask");
    if ((st = check_pad(ctx, s.gp, o, s.B, mask_t)))
        goto done;
    int64_t total_pos = s.D + s.P + s.G;
    int64_t maxpos = param_int(s.gp, "max_positions", INT64_MAX);
    if (total_pos > maxpos) {
        st = ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                        "%s: context depth %lld + prompt %lld + generation %lld = %lld positions, "
                        "beyond the model's max_positions %lld",
                        s.gp->source, (long long)s.D, (long long)s.P, (long long)s.G,
                        (long long)total_pos, (long long)maxpos);
        goto done;
    }
    /* The cache's size, refused before anything more is allocated. */
    int kv_layers = 0;
    int64_t per_tok = ntp_graph_kv_bytes_per_token(s.gp, o->kv_dtype, &kv_layers);
    int64_t kv_total = per_tok * s.B * total_pos;
    int64_t budget = o->max_memory == 0 ? physical_memory() : o->max_memory;
    if ((st = ntp_graph_analyze(ctx, s.gp, &ap)))
        goto done;
    if (budget > 0 && ap->weight_bytes + kv_total > budget) {
        st = ntp__error(ctx, NTP_STATUS_MEMORY_BUDGET,
                        "%s: the key/value cache needs %lld bytes (%lld bytes per token x %lld "
                        "positions x batch %lld) beside %lld bytes of weights, more than the "
                        "memory budget of %lld bytes",
                        s.gp->source, (long long)kv_total, (long long)per_tok, (long long)total_pos,
                        (long long)s.B, (long long)ap->weight_bytes, (long long)budget);
        goto done;
    }
    int64_t mid = s.D + s.P + (s.G - 1) / 2;
    /* The decode pass at the prefill's batch (a batch the import assumed
     * is not warned about twice). */
    int64_t dbatch = o->batch == 0 && param_int(s.gp, "batch", 0) > 0 ? s.B : o->batch;
    if ((st = load_phase(ctx, path, o, 1, mid, dbatch, &s.gd)) || (st = check_decoder(ctx, s.gd)) ||
        (st = ntp_graph_analyze(ctx, s.gd, &ad)))
        goto done;
    if (s.gd->n_nodes != s.gp->n_nodes) {
        st = ntp__error(ctx, NTP_STATUS_GRAPH_ERROR,
                        "%s: the prefill and decode passes have different layers", path);
        goto done;
    }
    const ntp_node *emb = NULL;
    int tok_t = find_input(s.gp, "tokens");
    for (int i = 0; i < s.gp->n_nodes; i++)
        if (s.gp->nodes[i].op == NTP_OP_EMBEDDING && s.gp->nodes[i].in[0] == tok_t)
            emb = &s.gp->nodes[i];
    s.V = emb ? emb->a.vocab : 2;
    int nn = s.gp->n_nodes;
    pre_ms = calloc((size_t)nn + 1, sizeof *pre_ms);
    dec_ms = calloc((size_t)nn + 1, sizeof *dec_ms);
    sorted = calloc((size_t)s.G + 1, sizeof *sorted);
    tok = calloc((size_t)(s.B * (s.G + 1)) + 1, sizeof *tok);
    r->step_ms = calloc((size_t)s.G + 1, sizeof *r->step_ms);
    r->layers = calloc((size_t)nn + 1, sizeof *r->layers);
    if (!pre_ms || !dec_ms || !sorted || !tok || !r->step_ms || !r->layers) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    if (o->static_only)
        goto report;
    if ((st = alloc_cache(ctx, &s, o->kv_dtype, total_pos, o->seed)))
        goto done;
    ntp_exec_opts eo = {.backend = be,
                        .threads = o->threads,
                        .seed = o->seed,
                        .first = 0,
                        .last = s.gp->n_nodes - 1,
                        .kv_for = kv_for,
                        .kv_user = &s,
                        .weights_bf16 = o->weight_dtype == NTP_DTYPE_BF16,
                        .weights_i8 = o->weight_dtype == NTP_DTYPE_I8};
    progress(o, "prepare", 0, 0);
    if ((st = ntp__exec_init(ctx, &s.xp, s.gp, &eo)))
        goto done;
    eo.last = s.gd->n_nodes - 1;
    eo.share_weights = &s.xp; /* one copy of the weights for both plans */
    if ((st = ntp__exec_init(ctx, &s.xd, s.gd, &eo)))
        goto done;
    /* The prompt: tokens from the seed, at positions D .. D+P-1; with
     * --pad, the odd sequences' first `pad` tokens are padding (mask 0,
     * position D) and their tokens count from D. */
    int32_t *ptok = slot_data(&s.xp, tok_t),
            *ppos = slot_data(&s.xp, find_input(s.gp, "positions"));
    int32_t *pmask = mask_t >= 0 ? slot_data(&s.xp, mask_t) : NULL;
    uint64_t rs = o->seed * 0x2545f4914f6cdd1dull + 7;
    for (int64_t b = 0; b < s.B; b++)
        for (int64_t t = 0; t < s.P; t++) {
            int64_t pad = b % 2 ? o->pad : 0;
            ptok[b * s.P + t] = (int32_t)(ntp__rng_next(&rs) % (uint64_t)s.V);
            ppos[b * s.P + t] = (int32_t)(s.D + (t < pad ? 0 : t - pad));
            if (pmask)
                pmask[b * s.P + t] = t >= pad;
        }
    if (mask_t >= 0) {
        int32_t *dmask = slot_data(&s.xd, find_input(s.gd, "attention_mask"));
        for (int64_t b = 0; b < s.B; b++)
            dmask[b] = 1;
    }
    if (o->save_dir) {
        ntp_shape ts = {2, {s.B, s.P}};
        if ((st = save_weights(ctx, &s, o->save_dir)) ||
            (st = save_npy(ctx, o->save_dir, "tokens", NTP_DTYPE_I32, &ts, ptok)) ||
            (st = save_npy(ctx, o->save_dir, "positions", NTP_DTYPE_I32, &ts, ppos)) ||
            (pmask &&
             (st = save_npy(ctx, o->save_dir, "attention_mask", NTP_DTYPE_I32, &ts, pmask))))
            goto done;
    }
    /* Prefill: one warm-up pass, the cache reset, one timed pass. */
    double ms;
    progress(o, "prefill", 0, 2);
    if ((st = timed_pass(ctx, &s.xp, NULL, &ms)))
        goto done;
    cache_set_len(&s, s.D);
    progress(o, "prefill", 1, 2);
    if ((st = timed_pass(ctx, &s.xp, pre_ms, &r->ttft_ms)))
        goto done;
    cache_set_len(&s, s.D + s.P);
    const int32_t *next = slot_data(&s.xp, s.gp->nodes[find_op(s.gp, NTP_OP_ARGMAX)].out[0]);
    for (int64_t b = 0; b < s.B; b++)
        tok[b * (s.G + 1)] = next[b * s.P + s.P - 1];
    if (o->save_dir) {
        ntp_shape ls;
        const float *lg = logits_of(ctx, &s.xp, s.gp, &ls);
        if (!lg || (st = save_npy(ctx, o->save_dir, "logits_prefill", NTP_DTYPE_F32, &ls, lg))) {
            st = ntp_ctx_status(ctx);
            goto done;
        }
    }
    /* Decode: G steps, each feeding the token the one before chose. */
    int32_t *dtok = slot_data(&s.xd, find_input(s.gd, "tokens"));
    int32_t *dpos = slot_data(&s.xd, find_input(s.gd, "positions"));
    const int32_t *dnext = slot_data(&s.xd, s.gd->nodes[find_op(s.gd, NTP_OP_ARGMAX)].out[0]);
    for (int64_t i = 0; i < s.G; i++) {
        progress(o, "decode", (int)i, (int)s.G);
        for (int64_t b = 0; b < s.B; b++) {
            dtok[b] = tok[b * (s.G + 1) + i];
            dpos[b] = (int32_t)(s.D + s.P + i - (b % 2 ? o->pad : 0));
        }
        if ((st = timed_pass(ctx, &s.xd, dec_ms, &r->step_ms[i])))
            goto done;
        cache_set_len(&s, s.D + s.P + i + 1);
        for (int64_t b = 0; b < s.B; b++)
            tok[b * (s.G + 1) + i + 1] = dnext[b];
        if (o->save_dir) {
            ntp_shape ls;
            char name[64];
            snprintf(name, sizeof name, "logits_decode_%lld", (long long)i);
            const float *lg = logits_of(ctx, &s.xd, s.gd, &ls);
            if (!lg || (st = save_npy(ctx, o->save_dir, name, NTP_DTYPE_F32, &ls, lg))) {
                st = ntp_ctx_status(ctx);
                goto done;
            }
        }
    }
    progress(o, "decode", (int)s.G, (int)s.G);

report:
    /* The report. */
    r->model = ntp__strdup(s.gp->name);
    r->backend = be->name;
    r->batch = s.B;
    r->prompt_len = s.P;
    r->gen_len = s.G;
    r->context_depth = s.D;
    r->max_positions = maxpos == INT64_MAX ? 0 : maxpos;
    r->kv_dtype = o->kv_dtype;
    r->static_only = o->static_only;
    r->params = ap->params;
    r->threads = o->threads;
    r->kv_bytes_per_token = per_tok;
    r->kv_bytes_total = kv_total;
    r->kv_layers = kv_layers;
    r->weight_dtype = o->weight_dtype;
    r->weight_bytes = !o->static_only                    ? s.xp.weight_bytes + s.xd.weight_bytes
                      : o->weight_dtype == NTP_DTYPE_F32 ? ap->weight_bytes
                                                         : weight_bytes_at(s.gp, o->weight_dtype);
    r->arena_bytes = o->static_only ? 0 : s.xp.arena_bytes + s.xd.arena_bytes;
    r->memory_bytes = r->weight_bytes + r->arena_bytes + kv_total;
    r->tokens = tok;
    tok = NULL;
    memcpy(sorted, r->step_ms, (size_t)s.G * sizeof *sorted);
    qsort(sorted, (size_t)s.G, sizeof *sorted, cmp_double);
    r->tpot_p50_ms = ntp_stats_quantile_sorted(sorted, (size_t)s.G, 0.50);
    r->tpot_p90_ms = ntp_stats_quantile_sorted(sorted, (size_t)s.G, 0.90);
    r->tpot_p99_ms = ntp_stats_quantile_sorted(sorted, (size_t)s.G, 0.99);
    double sum = 0;
    for (int64_t i = 0; i < s.G; i++)
        sum += r->step_ms[i];
    r->tpot_mean_ms = sum / (double)s.G;
    r->n_layers = nn;
    for (int p = 0; p < nn; p++) {
        const ntp_node *n = &s.gp->nodes[s.gp->order[p]];
        const ntp_node *nd = &s.gd->nodes[s.gd->order[p]];
        ntp_generate_layer *l = &r->layers[p];
        l->name = ntp__strdup(n->name);
        l->type = ap->layers[p].type;
        l->backend = o->static_only ? be->name : s.xp.be[s.xp.node_be[p]]->name;
        l->prefill_ms = pre_ms[p];
        l->decode_ms = dec_ms[p] / (double)s.G;
        l->prefill_flops = ap->layers[p].flops;
        l->decode_flops = ad->layers[p].flops;
        l->prefill_bytes = ap->layers[p].traffic_bytes;
        l->decode_bytes = ad->layers[p].traffic_bytes;
        l->prefill_bytes += weight_traffic_delta(s.gp, n, o->weight_dtype);
        l->decode_bytes += weight_traffic_delta(s.gd, nd, o->weight_dtype);
        if (n->op == NTP_OP_KV_ATTENTION) {
            l->prefill_bytes += kv_traffic(s.gp, n, s.B, s.P, s.D, o->kv_dtype);
            l->decode_bytes += kv_traffic(s.gd, nd, s.B, 1, mid, o->kv_dtype);
        }
        r->prefill.flops += l->prefill_flops;
        r->prefill.bytes += l->prefill_bytes;
        r->decode.flops += l->decode_flops;
        r->decode.bytes += l->decode_bytes;
    }
    r->prefill.ms = r->ttft_ms;
    r->decode.ms = r->tpot_mean_ms;
    phase_rates(&r->prefill, o->ceilings, s.B * s.P);
    phase_rates(&r->decode, o->ceilings, s.B);
    r->prefill_tokens_per_s = r->prefill.tokens_per_s;
    r->decode_tokens_per_s = r->decode.tokens_per_s;
    if (!o->ceilings)
        r->roofline_note = "no machine ceilings in the history (run `ntprof machine`)";
    else if (r->prefill.compute_share < 0)
        r->roofline_note = "the machine's ceilings have no f32 peak or DRAM bandwidth";
    for (int p = 0; p < nn; p++)
        if (!r->layers[p].name || !r->model) {
            st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            goto done;
        }
    *out = r;
    r = NULL;
    st = NTP_STATUS_OK;
done:
    ntp_analysis_free(ap);
    ntp_analysis_free(ad);
    free(pre_ms);
    free(dec_ms);
    free(sorted);
    free(tok);
    gen_free(&s);
    ntp_generate_result_free(r);
    return st;
}

void ntp_generate_result_free(ntp_generate_result *r)
{
    if (!r)
        return;
    if (r->layers)
        for (int p = 0; p < r->n_layers; p++)
            free((char *)r->layers[p].name);
    free(r->layers);
    free(r->model);
    free(r->tokens);
    free(r->step_ms);
    free(r);
}
