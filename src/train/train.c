/* ntp_trainer: load weights, inputs and labels, then run training steps,
 * timing each layer's forward, backward-data, backward-weights and update
 * (docs/train.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "core/numeric-impl.h"
#include "core/rng-impl.h"
#include "backend/backend-impl.h"
#include "core/writers-impl.h"
#include "graph/gen-impl.h"
#include "io/io-impl.h"
#include "measure/measure-impl.h"
#include "train-impl.h"

static const char *const loss_names[NTP_LOSS_COUNT] = {"cross_entropy", "mse", "ctc"};
static const char *const optim_names[NTP_OPTIMIZER_COUNT] = {"sgd", "momentum", "adam"};
static const char *const phase_names[NTP_TRAIN_PHASE_COUNT] = {"forward", "backward_data",
                                                               "backward_weights", "update"};

const char *ntp_loss_name(ntp_loss l)
{
    return (unsigned)l < NTP_LOSS_COUNT ? loss_names[l] : "?";
}

const char *ntp_optimizer_name(ntp_optimizer o)
{
    return (unsigned)o < NTP_OPTIMIZER_COUNT ? optim_names[o] : "?";
}

const char *ntp_train_phase_name(ntp_train_phase p)
{
    return (unsigned)p < NTP_TRAIN_PHASE_COUNT ? phase_names[p] : "?";
}

ntp_status ntp_loss_parse(const char *s, ntp_loss *out)
{
    for (int i = 0; i < NTP_LOSS_COUNT; i++)
        if (s && !strcmp(s, loss_names[i])) {
            *out = (ntp_loss)i;
            return NTP_STATUS_OK;
        }
    return NTP_STATUS_UNKNOWN_NAME;
}

ntp_status ntp_optimizer_parse(const char *s, ntp_optimizer *out)
{
    for (int i = 0; i < NTP_OPTIMIZER_COUNT; i++)
        if (s && !strcmp(s, optim_names[i])) {
            *out = (ntp_optimizer)i;
            return NTP_STATUS_OK;
        }
    return NTP_STATUS_UNKNOWN_NAME;
}

void ntp_train_opts_init(ntp_train_opts *o)
{
    memset(o, 0, sizeof *o);
    o->loss = NTP_LOSS_CROSS_ENTROPY;
    o->optimizer = NTP_OPTIMIZER_SGD;
    o->steps = 10;
    o->seed = 1;
    o->dropout = 0.5;
}

struct ntp_trainer {
    const ntp_graph *g;
    ntp_train_opts o;
    ntp_optim opt;
    ntp_train_target tg;
    ntp_train_plan *plan;
    ntp_train_state s;
    bool *needs;
    double **m, **v; /* optimizer state per weight tensor */
    double *labels;
    int64_t n_labels;
    int64_t label_len;   /* ctc: S of the labels [N, S] */
    int64_t *in_len;     /* ctc: each sequence's input length, [N] */
    double *ctc_scratch; /* ctc: ntp__train_ctc_scratch(T, C, S) doubles */
    int64_t t;           /* optimizer steps taken */
    int64_t allocated;
    double last_loss;
    ntp__rss_meter rss;      /* the peak resident set since the trainer started */
    const ntp_backend_i *be; /* backward primitives (opts.backend), or NULL */
    void *be_state;
    /* bf16 mixed precision: the fp32 master of each weight matrix, whose
     * bf16 copy is its val; NULL elsewhere and at f32. */
    double **master;
    /* The backend's forward (docs/train.md): fwd_be[node] says whether it
     * runs the node's forward (in f32). Each tensor's values live in
     * s.val (double) and, once a backend layer has read or written them,
     * in f32[tensor]; fresh[tensor] says which of the two hold its current
     * values (FRESH_D, FRESH_F), and the other is brought up to date only
     * where a layer of the other engine reads it. ref_forward keeps every
     * forward on ref (the backward tests, whose forward must be the
     * reference's). */
    bool *fwd_be;
    float **f32;
    unsigned char *fresh;
    bool ref_forward;
    /* The activations' gradients (docs/train.md): each sum lives in
     * s.grad (double) or in gf32 (f32), as gst says (G_D, G_F), or is
     * still zero (G_ZERO: nothing added this pass, neither cleared). A
     * backend's backward reads and writes f32, the reference's double;
     * each converts only where the other engine left the gradient.
     * scratch: a backend's contribution to a sum begun already. */
    float **gf32;
    unsigned char *gst;
    float *scratch[2];
    int64_t scratch_n[2];
};

enum { FRESH_D = 1, FRESH_F = 2 };
enum { G_ZERO, G_D, G_F };

/* --- bf16 mixed precision (docs/train.md) ----------------------------------- */

static double *dalloc(ntp_trainer *t, int64_t n);

static bool mixed(const ntp_trainer *t)
{
    return t->o.precision == NTP_DTYPE_BF16;
}

static void round_bf16(double *x, int64_t n)
{
    for (int64_t i = 0; x && i < n; i++)
        x[i] = ntp__round_bf16((float)x[i]);
}

static void round_f32(double *x, int64_t n)
{
    for (int64_t i = 0; x && i < n; i++)
        x[i] = (float)x[i];
}

static int64_t numel(const ntp_trainer *t, int i)
{
    return ntp_shape_numel(&t->g->tensors[i].shape);
}

/* The values as mixed precision stores them after loading: weights and
 * buffers in fp32, each weight matrix's master kept and its val rounded to
 * bf16; f32 graph inputs in bf16, but an MFCC's audio (preprocessing runs
 * in f32). */
static ntp_status mixed_start(ntp_ctx *ctx, ntp_trainer *t)
{
    const ntp_graph *g = t->g;
    if (!(t->master = calloc((size_t)g->n_tensors + 1, sizeof *t->master)))
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < g->n_tensors; i++) {
        const ntp_tensor *x = &g->tensors[i];
        int64_t c = numel(t, i);
        if (x->kind == NTP_TENSOR_WEIGHT || x->kind == NTP_TENSOR_BUFFER)
            round_f32(t->s.val[i], c);
        if (ntp__train_bf16_copy(x)) {
            if (!(t->master[i] = dalloc(t, c)))
                return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            memcpy(t->master[i], t->s.val[i], (size_t)c * sizeof(double));
            round_bf16(t->s.val[i], c);
        }
    }
    for (int i = 0; i < g->n_inputs; i++) {
        int ti = g->inputs[i];
        bool audio = false;
        for (int k = 0; k < g->n_nodes; k++)
            audio |= g->nodes[k].op == NTP_OP_MFCC && g->nodes[k].in[0] == ti;
        if (g->tensors[ti].dtype == NTP_DTYPE_F32 && !audio)
            round_bf16(t->s.val[ti], numel(t, ti));
    }
    return NTP_STATUS_OK;
}

/* After n's forward: its feature maps stored in bf16, its buffers (batch
 * norm's running statistics) in fp32. */
static void mixed_after_forward(ntp_trainer *t, const ntp_node *n)
{
    const ntp_graph *g = t->g;
    for (int k = 0; k < n->n_out; k++)
        if (g->tensors[n->out[k]].dtype == NTP_DTYPE_F32)
            round_bf16(t->s.val[n->out[k]], numel(t, n->out[k]));
    for (int k = 0; k < n->n_w; k++)
        if (g->tensors[n->w[k]].kind == NTP_TENSOR_BUFFER)
            round_f32(t->s.val[n->w[k]], numel(t, n->w[k]));
}

static double *dalloc(ntp_trainer *t, int64_t n)
{
    t->allocated += n * (int64_t)sizeof(double);
    return calloc((size_t)n + 1, sizeof(double));
}

/* The values of a .npy or generated array as doubles. */
static void to_double(double *d, const void *src, ntp_dtype dt, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        switch (dt) {
        case NTP_DTYPE_F32: d[i] = ((const float *)src)[i]; break;
        case NTP_DTYPE_I32: d[i] = ((const int32_t *)src)[i]; break;
        case NTP_DTYPE_I64: d[i] = (double)((const int64_t *)src)[i]; break;
        case NTP_DTYPE_U8: d[i] = ((const uint8_t *)src)[i]; break;
        case NTP_DTYPE_I8: d[i] = ((const int8_t *)src)[i]; break;
        /* Not a type of an input array (.npy f16 is read as f32 first). */
        case NTP_DTYPE_BF16:
        case NTP_DTYPE_F16:
        case NTP_DTYPE_COUNT: d[i] = 0.0; break;
        }
}

static ntp_status load_weights(ntp_ctx *ctx, ntp_trainer *t)
{
    const ntp_graph *g = t->g;
    for (int i = 0; i < g->n_nodes; i++) {
        const ntp_node *n = &g->nodes[i];
        float *f32[NTP_MAX_WEIGHTS] = {0};
        ntp_status st = NTP_STATUS_OK;
        for (int k = 0; k < n->n_w && !st; k++)
            if (!(f32[k] = malloc(
                      (size_t)ntp_shape_numel(&g->tensors[n->w[k]].shape) * sizeof(float) + 1)))
                st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory for weights");
        if (!st)
            ntp__gen_weights(g, n, f32, t->o.seed);
        for (int k = 0; k < n->n_w && !st; k++) {
            const ntp_tensor *w = &g->tensors[n->w[k]];
            int64_t c = ntp_shape_numel(&w->shape);
            if (w->data && w->data_dtype != NTP_DTYPE_F32)
                st = ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                                "weight '%s' holds %s data; expected f32", w->name,
                                ntp_dtype_name(w->data_dtype));
            else
                to_double(t->s.val[n->w[k]], w->data ? w->data : f32[k], NTP_DTYPE_F32, c);
        }
        for (int k = 0; k < n->n_w; k++)
            free(f32[k]);
        if (st)
            return st;
    }
    return NTP_STATUS_OK;
}

static ntp_status load_inputs(ntp_ctx *ctx, ntp_trainer *t)
{
    const ntp_graph *g = t->g;
    for (int k = 0; k < t->o.n_inputs; k++) {
        const char *spec = t->o.inputs[k], *eq = strchr(spec, '=');
        if (!eq)
            return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_train_opts.inputs",
                                  "expects NAME=FILE.npy, got '%s'", spec);
        bool found = false;
        for (int i = 0; i < g->n_inputs; i++)
            if (strlen(g->tensors[g->inputs[i]].name) == (size_t)(eq - spec) &&
                !strncmp(g->tensors[g->inputs[i]].name, spec, (size_t)(eq - spec)))
                found = true;
        if (!found)
            return ntp__opt_error(ctx, NTP_STATUS_UNKNOWN_NAME, "ntp_train_opts.inputs",
                                  "%s: the model has no input '%.*s'", spec, (int)(eq - spec),
                                  spec);
    }
    for (int i = 0; i < g->n_inputs; i++) {
        int ti = g->inputs[i];
        const ntp_tensor *x = &g->tensors[ti];
        int64_t c = ntp_shape_numel(&x->shape);
        const char *file = NULL;
        for (int k = 0; k < t->o.n_inputs; k++) {
            const char *eq = strchr(t->o.inputs[k], '=');
            if (strlen(x->name) == (size_t)(eq - t->o.inputs[k]) &&
                !strncmp(x->name, t->o.inputs[k], (size_t)(eq - t->o.inputs[k])))
                file = eq + 1;
        }
        if (file) {
            ntp_npy a;
            ntp_status st = ntp__npy_read(ctx, file, &a);
            if (st)
                return st;
            char b1[64], b2[64];
            if (!ntp_shape_equal(&a.shape, &x->shape) || a.dtype != x->dtype) {
                st = ntp__error(ctx, NTP_STATUS_SHAPE_ERROR, "%s: holds %s %s; input '%s' is %s %s",
                                file, ntp_dtype_name(a.dtype),
                                ntp_shape_str(&a.shape, b1, sizeof b1), x->name,
                                ntp_dtype_name(x->dtype), ntp_shape_str(&x->shape, b2, sizeof b2));
            } else {
                to_double(t->s.val[ti], a.data, a.dtype, c);
            }
            ntp__npy_free(&a);
            if (st)
                return st;
            continue;
        }
        void *buf = malloc((size_t)c * ntp_dtype_size(x->dtype) + 1);
        if (!buf)
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory for input '%s'",
                              x->name);
        ntp_status st = ntp__gen_input(ctx, g, ti, buf, t->o.seed);
        if (!st)
            to_double(t->s.val[ti], buf, x->dtype, c);
        free(buf);
        if (st)
            return st;
    }
    return NTP_STATUS_OK;
}

/* Per-sequence lengths [N] from a .npy of int32/int64 (--input-lengths,
 * --target-lengths), each in [lo, hi]. */
static ntp_status read_lengths(ntp_ctx *ctx, const char *file, const char *what, int64_t N,
                               int64_t lo, int64_t hi, const char *range, int64_t *out)
{
    ntp_npy a;
    ntp_status st = ntp__npy_read(ctx, file, &a);
    if (st)
        return st;
    char b1[64];
    double *d = malloc((size_t)N * sizeof *d + 1);
    if (a.dtype != NTP_DTYPE_I32 && a.dtype != NTP_DTYPE_I64)
        st = ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                        "%s: %s lengths are integers (int32 or int64), got %s", file, what,
                        ntp_dtype_name(a.dtype));
    else if (a.shape.ndim != 1 || a.shape.dim[0] != N)
        st = ntp__error(ctx, NTP_STATUS_SHAPE_ERROR,
                        "%s: %s lengths are %s; ctc on %lld sequences needs [%lld]", file, what,
                        ntp_shape_str(&a.shape, b1, sizeof b1), (long long)N, (long long)N);
    else if (!d)
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory for lengths");
    if (!st) {
        to_double(d, a.data, a.dtype, N);
        for (int64_t n = 0; n < N && !st; n++) {
            if (d[n] < (double)lo || d[n] > (double)hi)
                st =
                    ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                               "%s: %s length %.0f of sequence %lld is outside [%lld, %lld] (%s)",
                               file, what, d[n], (long long)n, (long long)lo, (long long)hi, range);
            out[n] = (int64_t)d[n];
        }
    }
    free(d);
    ntp__npy_free(&a);
    return st;
}

/* CTC labels [N, S]: class indices below the blank (C - 1), -1 after the
 * end of each sequence (or any padding after the --target-lengths), and no
 * more frames needed than the sequence's input length. Input lengths are
 * --input-lengths, else T for given labels; generated labels come with
 * generated input lengths in [ceil(T/2), T] and are 1 to half their input
 * length symbols long (always alignable). */
static ntp_status load_ctc_labels(ntp_ctx *ctx, ntp_trainer *t)
{
    int64_t T = t->tg.steps, N = t->tg.rows, C = t->tg.classes;
    ntp_npy a;
    bool have = t->o.labels != NULL;
    ntp_status st = NTP_STATUS_OK;
    char b1[64];
    if (have && (st = ntp__npy_read(ctx, t->o.labels, &a)))
        return st;
    if (have && a.dtype != NTP_DTYPE_I32 && a.dtype != NTP_DTYPE_I64)
        st = ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                        "%s: ctc labels are class indices (int32 or int64), got %s", t->o.labels,
                        ntp_dtype_name(a.dtype));
    else if (have && (a.shape.ndim != 2 || a.shape.dim[0] != N || a.shape.dim[1] < 1))
        st = ntp__error(ctx, NTP_STATUS_SHAPE_ERROR,
                        "%s: labels are %s; ctc on %lld sequences needs [%lld, S] (-1 after each "
                        "sequence's end)",
                        t->o.labels, ntp_shape_str(&a.shape, b1, sizeof b1), (long long)N,
                        (long long)N);
    t->label_len = have && !st ? a.shape.dim[1] : (T / 2 > 0 ? T / 2 : 1);
    t->n_labels = N * t->label_len;
    if (!st && (!(t->labels = dalloc(t, t->n_labels)) ||
                !(t->ctc_scratch = dalloc(t, ntp__train_ctc_scratch(T, C, t->label_len))) ||
                !(t->in_len = calloc((size_t)N + 1, sizeof *t->in_len))))
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory for labels");
    if (!st && have)
        to_double(t->labels, a.data, a.dtype, t->n_labels);
    if (have)
        ntp__npy_free(&a);
    if (st)
        return st;
    int64_t S = t->label_len;
    if (t->o.input_lengths) {
        if ((st = read_lengths(ctx, t->o.input_lengths, "input", N, 1, T, "the output's frames",
                               t->in_len)))
            return st;
    } else {
        uint64_t s = t->o.seed * 0x9E3779B97F4A7C15ull + 29;
        for (int64_t n = 0; n < N; n++)
            t->in_len[n] = have ? T : T - (int64_t)(ntp__rng_next(&s) % (uint64_t)(T / 2 + 1));
    }
    if (!have) {
        uint64_t s = t->o.seed * 0xD1B54A32D192ED03ull + 17;
        for (int64_t n = 0; n < N; n++) {
            int64_t most = t->in_len[n] / 2 < S ? t->in_len[n] / 2 : S;
            int64_t len = 1 + (int64_t)(ntp__rng_next(&s) % (uint64_t)(most > 0 ? most : 1));
            for (int64_t i = 0; i < S; i++)
                t->labels[n * S + i] =
                    i < len ? (double)(ntp__rng_next(&s) % (uint64_t)(C - 1)) : -1.0;
        }
        return NTP_STATUS_OK;
    }
    int64_t *tl = NULL;
    if (t->o.target_lengths) {
        if (!(tl = calloc((size_t)N + 1, sizeof *tl)))
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory for lengths");
        st = read_lengths(ctx, t->o.target_lengths, "target", N, 0, S, "the labels' columns", tl);
    }
    for (int64_t n = 0; n < N && !st; n++) {
        double *l = t->labels + n * S;
        int64_t len = tl ? tl[n] : ntp__train_ctc_length(l, S);
        for (int64_t i = 0; i < S && !st; i++)
            if (i < len ? l[i] < 0 || l[i] >= (double)(C - 1) : !tl && l[i] >= 0)
                st = ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                                i < len ? "%s: label %.0f of sequence %lld (position %lld) is "
                                          "not a symbol: the %lld classes end with the blank "
                                          "%lld"
                                        : "%s: label %.0f of sequence %lld at position %lld "
                                          "follows the -1 that ends it (%lld classes, blank "
                                          "%lld)",
                                t->o.labels, l[i], (long long)n, (long long)i, (long long)C,
                                (long long)(C - 1));
        /* Past a given target length the row is padding: the engine's -1. */
        for (int64_t i = len; i < S && !st; i++)
            l[i] = -1.0;
        int64_t need = ntp__train_ctc_frames_needed(l, S);
        if (!st && need > t->in_len[n])
            st = ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                            "%s: sequence %lld (%lld symbols) needs %lld frames and %s %lld",
                            t->o.labels, (long long)n, (long long)len, (long long)need,
                            t->o.input_lengths ? "its input length is" : "the output has",
                            (long long)t->in_len[n]);
    }
    free(tl);
    return st;
}

static ntp_status load_labels(ntp_ctx *ctx, ntp_trainer *t)
{
    if (t->o.loss == NTP_LOSS_CTC)
        return load_ctc_labels(ctx, t);
    const ntp_tensor *o = &t->g->tensors[t->tg.out];
    bool ce = t->o.loss == NTP_LOSS_CROSS_ENTROPY;
    t->n_labels = ce ? t->tg.rows : ntp_shape_numel(&o->shape);
    if (!(t->labels = dalloc(t, t->n_labels)))
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory for labels");
    if (!t->o.labels) {
        uint64_t s = t->o.seed * 0xD1B54A32D192ED03ull + 17;
        for (int64_t i = 0; i < t->n_labels; i++)
            t->labels[i] = ce ? (double)(ntp__rng_next(&s) % (uint64_t)t->tg.classes)
                              : (double)ntp__rng_normal(&s);
        return NTP_STATUS_OK;
    }
    ntp_npy a;
    ntp_status st = ntp__npy_read(ctx, t->o.labels, &a);
    if (st)
        return st;
    char b1[64], b2[64], b3[64];
    if (ce) {
        ntp_shape want = {1, {t->tg.rows}};
        if (a.dtype != NTP_DTYPE_I32 && a.dtype != NTP_DTYPE_I64)
            st = ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                            "%s: cross_entropy labels are class indices (int32 or int64), "
                            "got %s",
                            t->o.labels, ntp_dtype_name(a.dtype));
        else if (!ntp_shape_equal(&a.shape, &want))
            st = ntp__error(ctx, NTP_STATUS_SHAPE_ERROR,
                            "%s: labels are %s; cross_entropy on output '%s' %s needs %s",
                            t->o.labels, ntp_shape_str(&a.shape, b1, sizeof b1), o->name,
                            ntp_shape_str(&t->g->tensors[t->tg.logits].shape, b2, sizeof b2),
                            ntp_shape_str(&want, b3, sizeof b3));
        else {
            to_double(t->labels, a.data, a.dtype, t->n_labels);
            for (int64_t i = 0; i < t->n_labels && !st; i++)
                if (t->labels[i] < 0 || t->labels[i] >= (double)t->tg.classes)
                    st = ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                                    "%s: label %.0f at index %lld is outside the %lld classes "
                                    "[0, %lld)",
                                    t->o.labels, t->labels[i], (long long)i,
                                    (long long)t->tg.classes, (long long)t->tg.classes);
        }
    } else if (a.dtype != NTP_DTYPE_F32 || !ntp_shape_equal(&a.shape, &o->shape)) {
        st = ntp__error(ctx, NTP_STATUS_SHAPE_ERROR,
                        "%s: labels are %s %s; mse on output '%s' needs f32 %s", t->o.labels,
                        ntp_dtype_name(a.dtype), ntp_shape_str(&a.shape, b1, sizeof b1), o->name,
                        ntp_shape_str(&o->shape, b2, sizeof b2));
    } else {
        to_double(t->labels, a.data, a.dtype, t->n_labels);
    }
    ntp__npy_free(&a);
    return st;
}

/* --- the backend's forward (docs/train.md) ---------------------------------- */

static bool copy_op(const ntp_node *n)
{
    return n->op == NTP_OP_RESHAPE || n->op == NTP_OP_FLATTEN || n->op == NTP_OP_MEMCPY;
}

/* Which layers' forward runs on the backend: at f32, those it has a
 * training forward for, every input and output f32; and the copies
 * (reshape, flatten, memcpy) of a tensor such a layer made, which move its
 * f32 values on. A CTC decoder the loss replaces does not run. */
static void plan_forward(ntp_trainer *t)
{
    const ntp_graph *g = t->g;
    if (!t->be || mixed(t))
        return;
    bool *made = calloc((size_t)g->n_tensors + 1, sizeof *made);
    if (!made)
        return; /* every forward on ref: slower, not wrong */
    for (int i = 0; i < g->n_nodes; i++) {
        int ni = g->order[i];
        const ntp_node *n = &g->nodes[ni];
        bool f32 = n->n_out == 1 && g->tensors[n->out[0]].dtype == NTP_DTYPE_F32;
        for (int k = 0; k < n->n_in; k++)
            f32 = f32 && g->tensors[n->in[k]].dtype == NTP_DTYPE_F32;
        bool be = f32 && ni != t->tg.fused_node &&
                  (copy_op(n) ? n->n_in == 1 && made[n->in[0]]
                              : ntp__be_supports_train_forward(t->be, g, n));
        t->fwd_be[ni] = be;
        if (be)
            made[n->out[0]] = true;
    }
    free(made);
}

/* Tensor i's values in f32 (converted from its doubles unless they are
 * there already); NULL when out of memory. */
static float *want_f32(ntp_trainer *t, int i)
{
    int64_t c = numel(t, i);
    if (!t->f32[i]) {
        if (!(t->f32[i] = malloc((size_t)c * sizeof(float) + 1)))
            return NULL;
        t->allocated += c * (int64_t)sizeof(float);
        t->fresh[i] &= (unsigned char)~FRESH_F;
    }
    if (!(t->fresh[i] & FRESH_F)) {
        const double *d = t->s.val[i];
        float *f = t->f32[i];
        for (int64_t j = 0; j < c; j++)
            f[j] = (float)d[j];
        t->fresh[i] |= FRESH_F;
    }
    return t->f32[i];
}

/* Tensor i's doubles, brought up to date from its f32 values where a
 * backend layer made them. */
static void want_double(ntp_trainer *t, int i)
{
    if (t->fresh[i] & FRESH_D)
        return;
    int64_t c = numel(t, i);
    const float *f = t->f32[i];
    double *d = t->s.val[i];
    for (int64_t j = 0; j < c; j++)
        d[j] = f[j];
    t->fresh[i] |= FRESH_D;
}

/* Tensor i's gradient as doubles (its sum so far; zeroed if nothing was
 * added yet). Every activation gradient a pass made is double after it
 * (grad_sync). */
static double *want_grad_double(ntp_trainer *t, int i)
{
    double *d = t->s.grad[i];
    int64_t c = numel(t, i);
    if (!d || t->gst[i] == G_D)
        return d;
    if (t->gst[i] == G_ZERO) {
        memset(d, 0, (size_t)c * sizeof *d);
    } else {
        const float *f = t->gf32[i];
        for (int64_t j = 0; j < c; j++)
            d[j] = f[j];
    }
    t->gst[i] = G_D;
    return d;
}

static float *grad_f32_buffer(ntp_trainer *t, int i)
{
    if (!t->gf32[i]) {
        int64_t c = numel(t, i);
        if (!(t->gf32[i] = malloc((size_t)c * sizeof(float) + 1)))
            return NULL;
        t->allocated += c * (int64_t)sizeof(float);
    }
    return t->gf32[i];
}

/* Tensor i's gradient in f32 (its sum so far, as want_grad_double);
 * NULL when out of memory. */
static float *want_grad_f32(ntp_trainer *t, int i)
{
    float *f = grad_f32_buffer(t, i);
    int64_t c = numel(t, i);
    if (!f || t->gst[i] == G_F)
        return f;
    if (t->gst[i] == G_ZERO) {
        memset(f, 0, (size_t)c * sizeof *f);
    } else {
        const double *d = t->s.grad[i];
        for (int64_t j = 0; j < c; j++)
            f[j] = (float)d[j];
    }
    t->gst[i] = G_F;
    return f;
}

/* Where a backend writes (=) its contribution to tensor i's gradient: the
 * f32 gradient itself while nothing was added to it, else scratch slot k
 * (0 or 1), which grad_added then adds in. NULL when out of memory. */
static float *grad_out(ntp_trainer *t, int i, int k)
{
    if (t->gst[i] == G_ZERO) {
        float *f = grad_f32_buffer(t, i);
        if (f)
            t->gst[i] = G_F;
        return f;
    }
    int64_t c = numel(t, i);
    if (t->scratch_n[k] < c) {
        free(t->scratch[k]);
        t->scratch_n[k] = 0;
        if (!(t->scratch[k] = malloc((size_t)c * sizeof(float) + 1)))
            return NULL;
        t->scratch_n[k] = c;
    }
    return t->scratch[k];
}

/* The contribution p (from grad_out) added into tensor i's gradient, in
 * the precision the sum is kept in. */
static void grad_added(ntp_trainer *t, int i, const float *p)
{
    int64_t c = numel(t, i);
    if (p == t->gf32[i])
        return;
    if (t->gst[i] == G_F) {
        float *f = t->gf32[i];
        for (int64_t j = 0; j < c; j++)
            f[j] += p[j];
    } else {
        double *d = t->s.grad[i];
        for (int64_t j = 0; j < c; j++)
            d[j] += p[j];
    }
}

/* What a reference kernel of n reads as doubles: every input (forward),
 * or the values its backward reads (ntp__train_needs, as the planner keeps
 * them). */
static void want_node_double(ntp_trainer *t, const ntp_node *n, bool backward)
{
    ntp_train_needs need = ntp__train_needs(t->g, n);
    for (int k = 0; k < n->n_in; k++)
        if (!backward || need.input[k])
            want_double(t, n->in[k]);
    for (int k = 0; backward && need.output && k < n->n_out; k++)
        want_double(t, n->out[k]);
}

/* n's forward on the reference engine, from its inputs' doubles. */
static ntp_status ref_forward(ntp_ctx *ctx, ntp_trainer *t, const ntp_node *n)
{
    want_node_double(t, n, false);
    ntp_status st = ntp__train_forward(ctx, &t->s, n);
    for (int k = 0; k < n->n_out; k++)
        t->fresh[n->out[k]] = FRESH_D;
    return st;
}

/* n's backward-data on the reference engine, which reads doubles (its
 * backward-weights runs after it, so they are there for it too). */
static void ref_backward_data(ntp_trainer *t, const ntp_node *n)
{
    want_node_double(t, n, true);
    for (int k = 0; k < n->n_out; k++)
        want_grad_double(t, n->out[k]);
    for (int k = 0; k < n->n_in; k++)
        want_grad_double(t, n->in[k]);
    ntp__train_backward_data(&t->s, n);
}

/* An add of two inputs of the output's shape passes its f32 output
 * gradient on to both, as the reference's dx += dy does in double. */
static bool add_passes(const ntp_trainer *t, const ntp_node *n)
{
    const ntp_graph *g = t->g;
    if (n->op != NTP_OP_ADD || n->n_in != 2 || n->n_out != 1 || mixed(t) ||
        t->gst[n->out[0]] != G_F)
        return false;
    for (int k = 0; k < 2; k++)
        if (!ntp_shape_equal(&g->tensors[n->in[k]].shape, &g->tensors[n->out[0]].shape))
            return false;
    return true;
}

static ntp_status add_backward(ntp_ctx *ctx, ntp_trainer *t, const ntp_node *n)
{
    const float *dy = t->gf32[n->out[0]];
    int64_t c = numel(t, n->out[0]);
    for (int k = 0; k < 2; k++) {
        int i = n->in[k];
        if (!t->s.grad[i])
            continue;
        /* The first contribution is written where grad_out puts it (the
         * f32 gradient itself); a later one is added from dy directly. */
        if (t->gst[i] == G_ZERO) {
            float *f = grad_out(t, i, 0);
            if (!f)
                return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            memcpy(f, dy, (size_t)c * sizeof *f);
        } else {
            grad_added(t, i, dy);
        }
    }
    return NTP_STATUS_OK;
}

/* n's forward on the backend, in f32; a norm's batch (row) statistics go
 * to its saved state as the reference keeps them (mean, 1/σ), and batch
 * norm moves its running statistics as the reference does (PyTorch's
 * momentum 0.1, unbiased variance). */
static ntp_status backend_forward(ntp_ctx *ctx, ntp_trainer *t, const ntp_node *n)
{
    const ntp_graph *g = t->g;
    int y = n->out[0];
    ntp_train_fwd_args a = {.g = g, .n = n};
    for (int k = 0; k < n->n_in; k++)
        if (!(a.in[k] = want_f32(t, n->in[k])))
            goto oom;
    if (copy_op(n)) {
        float *o = t->f32[y] ? t->f32[y] : want_f32(t, y);
        if (!o)
            goto oom;
        memcpy(o, a.in[0], (size_t)numel(t, y) * sizeof(float));
        t->fresh[y] = FRESH_F;
        return NTP_STATUS_OK;
    }
    for (int k = 0; k < n->n_w; k++)
        if (!(a.w[k] = want_f32(t, n->w[k])))
            goto oom;
    if (!t->f32[y] && !want_f32(t, y))
        goto oom;
    a.out = t->f32[y];
    bool bn = n->op == NTP_OP_BATCHNORM, ln = n->op == NTP_OP_LAYERNORM;
    int64_t c = bn || ln ? ntp__train_saved_count(g, n) / 2 : 0;
    float *stat = c ? malloc((size_t)(2 * c) * sizeof *stat + 1) : NULL;
    if (c && !stat)
        goto oom;
    a.mean = stat;
    a.var = stat ? stat + c : NULL;
    ntp_status st = ntp__be_train_forward(t->be, ctx, t->be_state, &a);
    if (!st) {
        t->fresh[y] = FRESH_F;
        double *sv = t->s.saved[n - g->nodes];
        for (int64_t i = 0; i < c; i++) {
            sv[i] = stat[i];
            sv[c + i] = 1.0 / sqrt((double)stat[c + i] + n->a.epsilon);
        }
    }
    if (!st && bn) {
        const ntp_shape *xs = &g->tensors[n->in[0]].shape;
        double M = (double)(ntp_shape_numel(xs) / c);
        double *rm = t->s.val[n->w[2]], *rv = t->s.val[n->w[3]];
        for (int64_t i = 0; i < c; i++) {
            double var = stat[c + i];
            rm[i] = (1.0 - 0.1) * rm[i] + 0.1 * (double)stat[i];
            rv[i] = (1.0 - 0.1) * rv[i] + 0.1 * (M > 1 ? var * M / (M - 1.0) : var);
        }
        t->fresh[n->w[2]] = t->fresh[n->w[3]] = FRESH_D;
    }
    free(stat);
    return st;
oom:
    return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory for the f32 values");
}

/* Every forward on the reference engine (internal: tests/test_train_grad.c
 * checks the backend's backward against the reference's on the same
 * forward). */
void ntp__trainer_ref_forward(ntp_trainer *t);
void ntp__trainer_ref_forward(ntp_trainer *t)
{
    t->ref_forward = true;
    for (int i = 0; t->fwd_be && i < t->g->n_nodes; i++)
        t->fwd_be[i] = false;
}

ntp_status ntp__trainer_new_ex(ntp_ctx *ctx, const ntp_graph *g, const ntp_train_opts *o,
                               bool input_grads, ntp_trainer **out);

ntp_status ntp__trainer_new_ex(ntp_ctx *ctx, const ntp_graph *g, const ntp_train_opts *o,
                               bool input_grads, ntp_trainer **out)
{
    *out = NULL;
    ntp_trainer *t = calloc(1, sizeof *t);
    if (!t)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    t->g = g;
    ntp__rss_meter_start(&t->rss);
    if (o)
        t->o = *o;
    else
        ntp_train_opts_init(&t->o);
    if (t->o.steps <= 0)
        t->o.steps = 10;
    if (!t->o.seed)
        t->o.seed = 1;
    bool adam = t->o.optimizer == NTP_OPTIMIZER_ADAM;
    t->opt = (ntp_optim){t->o.optimizer,
                         t->o.lr > 0 ? t->o.lr
                         : adam      ? 0.001
                                     : 0.01,
                         t->o.momentum > 0 ? t->o.momentum : 0.9,
                         t->o.beta1 > 0 ? t->o.beta1 : 0.9,
                         t->o.beta2 > 0 ? t->o.beta2 : 0.999,
                         t->o.eps > 0 ? t->o.eps : 1e-8};
    ntp_status st;
    if ((t->o.input_lengths || t->o.target_lengths) && t->o.loss != NTP_LOSS_CTC) {
        st =
            ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                       "%s: ntp_train_opts.input_lengths and ntp_train_opts.target_lengths are for "
                       "NTP_LOSS_CTC, not %s",
                       g->source, ntp_loss_name(t->o.loss));
        goto fail;
    }
    if (t->o.target_lengths && !t->o.labels) {
        st = ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                        "%s: ntp_train_opts.target_lengths %s needs the ntp_train_opts.labels they "
                        "measure",
                        g->source, t->o.target_lengths);
        goto fail;
    }
    if ((st = ntp_train_plan_make(ctx, g, &t->o, &t->plan)) ||
        (st = ntp__train_target(ctx, g, t->o.loss, &t->tg)))
        goto fail;
    const ntp_train_memory *m = &t->plan->memory;
    if (t->o.max_memory > 0 && m->peak > t->o.max_memory) {
        char b[7][32];
        st = ntp__error(ctx, NTP_STATUS_MEMORY_BUDGET,
                        "%s: training needs %s at its peak, above the limit of %s (weights %s, "
                        "gradients %s, optimizer state %s, activations %s, workspace and other "
                        "%s)",
                        g->source, ntp__human_bytes((double)m->peak, b[0], 32),
                        ntp__human_bytes((double)t->o.max_memory, b[1], 32),
                        ntp__human_bytes((double)m->weights, b[2], 32),
                        ntp__human_bytes((double)m->gradients, b[3], 32),
                        ntp__human_bytes((double)m->optimizer_state, b[4], 32),
                        ntp__human_bytes((double)m->activations, b[5], 32),
                        ntp__human_bytes((double)(m->workspace + m->other), b[6], 32));
        goto fail;
    }
    if (t->o.backend && strcmp(t->o.backend, "ref") != 0) {
        char why[256] = "";
        ntp_backend_opts bo = {.precision = NTP_DTYPE_F32, .threads = t->o.threads};
        if (!(t->be = ntp__backend_find(t->o.backend))) {
            st = ntp__error(ctx, NTP_STATUS_UNKNOWN_NAME,
                            "backend '%s' is not built here; built: %s", t->o.backend,
                            ntp_backends());
            goto fail;
        }
        if (!ntp__be_available(t->be, why, sizeof why)) {
            st = ntp__error(ctx, NTP_STATUS_UNSUPPORTED, "backend '%s': %s", t->o.backend, why);
            goto fail;
        }
        if ((st = ntp__be_init(t->be, ctx, &bo, &t->be_state)))
            goto fail;
    }
    int nt = g->n_tensors;
    t->s.g = g;
    t->s.dropout = t->o.dropout < 0 ? 0.5 : t->o.dropout;
    t->s.seed = t->o.seed;
    t->s.val = calloc((size_t)nt + 1, sizeof *t->s.val);
    t->s.grad = calloc((size_t)nt + 1, sizeof *t->s.grad);
    t->s.saved = calloc((size_t)g->n_nodes + 1, sizeof *t->s.saved);
    t->m = calloc((size_t)nt + 1, sizeof *t->m);
    t->v = calloc((size_t)nt + 1, sizeof *t->v);
    t->needs = calloc((size_t)nt + 1, sizeof *t->needs);
    t->f32 = calloc((size_t)nt + 1, sizeof *t->f32);
    t->fresh = malloc((size_t)nt + 1);
    t->fwd_be = calloc((size_t)g->n_nodes + 1, sizeof *t->fwd_be);
    t->gf32 = calloc((size_t)nt + 1, sizeof *t->gf32);
    t->gst = malloc((size_t)nt + 1);
    if (!t->s.val || !t->s.grad || !t->s.saved || !t->m || !t->v || !t->needs || !t->f32 ||
        !t->fresh || !t->fwd_be || !t->gf32 || !t->gst)
        goto oom;
    memset(t->gst, G_D, (size_t)nt + 1);
    memset(t->fresh, FRESH_D, (size_t)nt + 1);
    ntp__train_grad_flags(g, t->needs);
    if (input_grads) {
        /* Gradients of the inputs too (the finite-difference tests). */
        for (int i = 0; i < g->n_inputs; i++)
            t->needs[g->inputs[i]] = g->tensors[g->inputs[i]].dtype == NTP_DTYPE_F32;
        for (int i = 0; i < g->n_nodes; i++) {
            const ntp_node *n = &g->nodes[g->order[i]];
            for (int k = 0; k < n->n_in; k++)
                if (t->needs[n->in[k]] && n->op != NTP_OP_EMBEDDING)
                    for (int q = 0; q < n->n_out; q++)
                        t->needs[n->out[q]] = true;
        }
    }
    for (int i = 0; i < nt; i++) {
        const ntp_tensor *x = &g->tensors[i];
        int64_t c = ntp_shape_numel(&x->shape);
        if (!(t->s.val[i] = dalloc(t, c)))
            goto oom;
        bool trainable = x->kind == NTP_TENSOR_WEIGHT;
        if ((t->needs[i] || trainable) && !(t->s.grad[i] = dalloc(t, c)))
            goto oom;
        if (trainable && t->o.optimizer != NTP_OPTIMIZER_SGD && !(t->m[i] = dalloc(t, c)))
            goto oom;
        if (trainable && adam && !(t->v[i] = dalloc(t, c)))
            goto oom;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        int64_t c = ntp__train_saved_count(g, &g->nodes[i]);
        if (c && !(t->s.saved[i] = dalloc(t, c)))
            goto oom;
    }
    if ((st = load_weights(ctx, t)) || (st = load_inputs(ctx, t)) || (st = load_labels(ctx, t)) ||
        (mixed(t) && (st = mixed_start(ctx, t))))
        goto fail;
    plan_forward(t);
    *out = t;
    return NTP_STATUS_OK;
oom:
    st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory for training buffers");
fail:
    ntp_trainer_free(t);
    return st;
}

ntp_status ntp_trainer_new(ntp_ctx *ctx, const ntp_graph *g, const ntp_train_opts *o,
                           ntp_trainer **out)
{
    return ntp__trainer_new_ex(ctx, g, o, false, out);
}

void ntp_trainer_free(ntp_trainer *t)
{
    if (!t)
        return;
    int nt = t->g->n_tensors;
    for (int i = 0; i < nt; i++) {
        if (t->s.val)
            free(t->s.val[i]);
        if (t->s.grad)
            free(t->s.grad[i]);
        if (t->m)
            free(t->m[i]);
        if (t->v)
            free(t->v[i]);
        if (t->master)
            free(t->master[i]);
        if (t->f32)
            free(t->f32[i]);
        if (t->gf32)
            free(t->gf32[i]);
    }
    for (int i = 0; t->s.saved && i < t->g->n_nodes; i++)
        free(t->s.saved[i]);
    free(t->s.val);
    free(t->s.grad);
    free(t->s.saved);
    free(t->m);
    free(t->v);
    free(t->master);
    free(t->fwd_be);
    free(t->f32);
    free(t->fresh);
    free(t->gf32);
    free(t->gst);
    free(t->scratch[0]);
    free(t->scratch[1]);
    free(t->needs);
    free(t->labels);
    free(t->ctc_scratch);
    free(t->in_len);
    if (t->be)
        ntp__be_release(t->be, t->be_state);
    ntp_train_plan_free(t->plan);
    free(t);
}

/* The internal access the tests use (tests/test_train_grad.c). */
ntp_train_state *ntp__trainer_state(ntp_trainer *t);
ntp_train_state *ntp__trainer_state(ntp_trainer *t)
{
    return &t->s;
}

/* Whether the backend runs n's backward. */
static bool on_backend(const ntp_trainer *t, const ntp_node *n)
{
    return t->be && ntp__be_supports_backward(t->be, t->g, n);
}

static float *to_f32(const double *d, int64_t c)
{
    float *f = malloc((size_t)c * sizeof *f + 1);
    for (int64_t i = 0; f && i < c; i++)
        f[i] = (float)d[i];
    return f;
}

/* Whether n's backward runs the backend's bf16 primitive: in mixed
 * precision, a conv or an fc the backend runs at bf16 (oneDNN 2.6: from
 * AVX512_CORE on; elsewhere, and on CUDA, the f32 kernels on the bf16
 * values). */
static bool bf16_backward(const ntp_trainer *t, const ntp_node *n)
{
    return mixed(t) && on_backend(t, n) && ntp__be_backward_bf16(t->be, t->g, n);
}

/* The f32 statistics a norm's backward reads from the saved state: the
 * batch (or row) means and the biased variances, 1/inv² − ε. */
static bool norm_stats(const ntp_trainer *t, const ntp_node *n, float **mean, float **var)
{
    int64_t c = ntp__train_saved_count(t->g, n) / 2;
    const double *sv = t->s.saved[n - t->g->nodes];
    *mean = to_f32(sv, c);
    *var = malloc((size_t)c * sizeof **var + 1);
    for (int64_t i = 0; *var && i < c; i++)
        (*var)[i] = (float)(1.0 / (sv[c + i] * sv[c + i]) - n->a.epsilon);
    return *mean && *var;
}

/* n's backward-data (mode 1: dx += the backend's) or backward-weights
 * (mode 2: dw, db =) on the backend, in f32, as ntp__train_backward_*
 * do on the reference engine. The layer's input is given where its
 * derivative reads it (every mode 2; mode 1 of all but conv and fc, whose
 * backward-data reads the weight), its output where it reads that
 * (softmax), a norm's statistics from its saved state. */
static ntp_status backend_backward(ntp_ctx *ctx, ntp_trainer *t, const ntp_node *n, int mode)
{
    const ntp_graph *g = t->g;
    double *gx = t->s.grad[n->in[0]];
    /* A matmul's second input and its gradient (mode 1 gives both). */
    bool two = n->op == NTP_OP_MATMUL && n->n_in == 2;
    double *gx2 = two ? t->s.grad[n->in[1]] : NULL;
    if (mode == 1 ? !gx && !gx2 : !ntp__train_has_weights(g, n))
        return NTP_STATUS_OK;
    bool dense = n->op == NTP_OP_CONV || n->op == NTP_OP_FC || n->op == NTP_OP_DECONV;
    bool norm = n->op == NTP_OP_BATCHNORM || n->op == NTP_OP_LAYERNORM;
    ntp_train_needs need = ntp__train_needs(g, n);
    int64_t cw = n->n_w > 0 ? ntp_shape_numel(&g->tensors[n->w[0]].shape) : 0;
    int64_t cb = n->n_w > 1 ? ntp_shape_numel(&g->tensors[n->w[1]].shape) : 0;
    /* A norm's one backward call gives the weights' gradients with the
     * input's: in mode 1 where the input takes a gradient, else in mode 2. */
    bool weights = mode == 2 || (norm && ntp__train_has_weights(g, n));
    if (norm && mode == 2 && gx)
        return NTP_STATUS_OK;
    ntp_backward_args a = {.g = g, .n = n, .mode = mode, .bf16 = bf16_backward(t, n)};
    /* The values it reads are the tensors' f32 values, converted only
     * where the reference engine made them (want_f32); the output's
     * gradient likewise (want_grad_f32). The input gradients it gives go
     * straight into the inputs' f32 gradients where nothing was added to
     * them yet (grad_out). */
    const float *dy = want_grad_f32(t, n->out[0]);
    const float *x = NULL, *w = NULL, *y = NULL, *x2 = NULL;
    float *dx = NULL, *dw = NULL, *db = NULL, *mean = NULL, *var = NULL, *dx2 = NULL;
    bool ok = dy != NULL;
    if (ok && two && mode == 1)
        ok = (x2 = want_f32(t, n->in[1])) && (!gx2 || (dx2 = grad_out(t, n->in[1], 1)));
    if (ok && (mode == 2 || (need.input[0] && !dense)))
        ok = (x = want_f32(t, n->in[0])) != NULL;
    if (ok && cw > 0 && (mode == 1 || norm))
        ok = (w = want_f32(t, n->w[0])) != NULL;
    if (ok && need.output)
        ok = (y = want_f32(t, n->out[0])) != NULL;
    if (ok && norm)
        ok = norm_stats(t, n, &mean, &var);
    if (ok && mode == 1 && gx)
        ok = (dx = grad_out(t, n->in[0], 0)) != NULL;
    /* The weights' f32 gradients: buffers kept from step to step (a
     * weight's gst stays G_D: the double holds its gradient). */
    if (ok && weights)
        ok = (dw = grad_f32_buffer(t, n->w[0])) && (!cb || (db = grad_f32_buffer(t, n->w[1])));
    a.x = x;
    a.w = w;
    a.y = y;
    a.dy = dy;
    a.mean = mean;
    a.var = var;
    a.x2 = x2;
    a.dx2 = dx2;
    a.dx = dx;
    a.dw = dw;
    a.db = db;
    ntp_status st = ok ? ntp__be_backward(t->be, ctx, t->be_state, &a)
                       : ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!st && dx)
        grad_added(t, n->in[0], dx);
    if (!st && dx2)
        grad_added(t, n->in[1], dx2);
    if (!st && weights) {
        double *gw = t->s.grad[n->w[0]], *gb = cb ? t->s.grad[n->w[1]] : NULL;
        for (int64_t i = 0; gw && i < cw; i++)
            gw[i] = dw[i];
        for (int64_t i = 0; gb && i < cb; i++)
            gb[i] = db[i];
    }
    free(mean);
    free(var);
    return st;
}

static bool recurrent(const ntp_node *n)
{
    return n->op == NTP_OP_LSTM || n->op == NTP_OP_GRU || n->op == NTP_OP_RNN;
}

/* A recurrent layer's backward on the backend, in f32: one call gives dX
 * (added into the input's gradient) and dW, dR and dB (written), from the
 * layer's input, weights and output gradient (the backend runs its own
 * forward for what it keeps of the steps). */
static ntp_status backend_rnn_backward(ntp_ctx *ctx, ntp_trainer *t, const ntp_node *n)
{
    const ntp_graph *g = t->g;
    double *gx = t->s.grad[n->in[0]];
    int64_t cw[3] = {0, 0, 0};
    const float *x = want_f32(t, n->in[0]), *w[3] = {NULL, NULL, NULL};
    const float *dy = want_grad_f32(t, n->out[0]);
    float *dw[3] = {NULL, NULL, NULL};
    float *dx = gx ? grad_out(t, n->in[0], 0) : NULL;
    bool ok = x && dy && (!gx || dx) && n->n_w >= 2 && n->n_w <= 3;
    for (int k = 0; ok && k < n->n_w; k++) {
        cw[k] = ntp_shape_numel(&g->tensors[n->w[k]].shape);
        ok = (w[k] = want_f32(t, n->w[k])) != NULL &&
             (!t->s.grad[n->w[k]] || (dw[k] = malloc((size_t)cw[k] * sizeof **dw + 1)));
    }
    ntp_backward_args a = {.g = g,
                           .n = n,
                           .mode = 1,
                           .x = x,
                           .w = w[0],
                           .r = w[1],
                           .b = w[2],
                           .dy = dy,
                           .dx = dx,
                           .dw = dw[0],
                           .dr = dw[1],
                           .db = dw[2]};
    ntp_status st = ok ? ntp__be_backward(t->be, ctx, t->be_state, &a)
                       : ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!st && dx)
        grad_added(t, n->in[0], dx);
    for (int k = 0; !st && k < n->n_w; k++)
        for (int64_t i = 0; dw[k] && i < cw[k]; i++)
            t->s.grad[n->w[k]][i] = dw[k][i];
    for (int k = 0; k < 3; k++)
        free(dw[k]);
    return st;
}

/* Forward and loss; with backward also every gradient. times[phase][pos]
 * (L+1 rows, the loss last) gets each part's microseconds when not NULL.
 * The activations' gradients are left in f32 or double (gst); the
 * optimizer reads only the weights', which are always double. */
static ntp_status trainer_pass(ntp_ctx *ctx, ntp_trainer *t, bool backward, double *loss,
                               double *times)
{
    const ntp_graph *g = t->g;
    int L = g->n_nodes;
#define TIME_(ph, pos, stmt)                                     \
    do {                                                         \
        double t0_ = times ? ntp__now_us() : 0.0;                \
        stmt;                                                    \
        if (times)                                               \
            times[(ph) * (L + 1) + (pos)] = ntp__now_us() - t0_; \
    } while (0)
    /* The activations' gradients start at zero, cleared only where a
     * layer reads or adds to one (want_grad_*, grad_out). */
    for (int i = 0; i < g->n_tensors; i++)
        if (t->s.grad[i] && g->tensors[i].kind != NTP_TENSOR_WEIGHT)
            t->gst[i] = G_ZERO;
    for (int i = 0; i < L; i++) {
        ntp_status st = NTP_STATUS_OK;
        /* A CTC decoder the loss replaces does not run. */
        if (g->order[i] == t->tg.fused_node && g->nodes[g->order[i]].op == NTP_OP_CTC_DECODE)
            continue;
        const ntp_node *n = &g->nodes[g->order[i]];
        if (t->fwd_be[g->order[i]]) {
            TIME_(NTP_TRAIN_FORWARD, i, st = backend_forward(ctx, t, n));
        } else {
            TIME_(NTP_TRAIN_FORWARD, i, st = ref_forward(ctx, t, n));
        }
        if (st)
            return st;
        if (mixed(t))
            mixed_after_forward(t, &g->nodes[g->order[i]]);
    }
    double scratch = 0.0, *dx = t->s.grad[t->tg.logits];
    if (!dx && !(dx = t->s.grad[t->tg.logits] =
                     dalloc(t, ntp_shape_numel(&g->tensors[t->tg.logits].shape))))
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    want_double(t, t->tg.logits);
    want_grad_double(t, t->tg.logits);
    if (t->o.loss == NTP_LOSS_CTC)
        TIME_(NTP_TRAIN_FORWARD, L,
              scratch =
                  ntp__train_ctc(t->s.val[t->tg.logits], t->labels, t->in_len, t->tg.steps,
                                 t->tg.rows, t->tg.classes, t->label_len, dx, t->ctc_scratch));
    else
        TIME_(NTP_TRAIN_FORWARD, L,
              scratch = ntp__train_loss(t->o.loss, t->s.val[t->tg.logits], t->labels, t->tg.rows,
                                        t->tg.classes, t->n_labels, dx));
    *loss = scratch;
    if (!backward)
        return NTP_STATUS_OK;
    for (int i = L - 1; i >= 0; i--) {
        const ntp_node *n = &g->nodes[g->order[i]];
        if (!t->needs[n->out[0]] || g->order[i] == t->tg.fused_node)
            continue;
        /* Mixed precision: the gradient of each output, complete now,
         * stored in bf16 as the feature map is. */
        for (int k = 0; mixed(t) && k < n->n_out; k++)
            round_bf16(want_grad_double(t, n->out[k]), numel(t, n->out[k]));
        if (on_backend(t, n) && recurrent(n)) {
            /* One call: its time is backward-data's, or backward-weights'
             * where the input takes no gradient (as the reference walk's). */
            ntp_status st = NTP_STATUS_OK;
            int ph = t->s.grad[n->in[0]] ? NTP_TRAIN_BACKWARD_DATA : NTP_TRAIN_BACKWARD_WEIGHTS;
            TIME_(ph, i, st = backend_rnn_backward(ctx, t, n));
            if (st)
                return st;
            continue;
        }
        if (on_backend(t, n)) {
            ntp_status st = NTP_STATUS_OK;
            TIME_(NTP_TRAIN_BACKWARD_DATA, i, st = backend_backward(ctx, t, n, 1));
            if (!st)
                TIME_(NTP_TRAIN_BACKWARD_WEIGHTS, i, st = backend_backward(ctx, t, n, 2));
            if (st)
                return st;
            continue;
        }
        if (add_passes(t, n)) {
            ntp_status st = NTP_STATUS_OK;
            TIME_(NTP_TRAIN_BACKWARD_DATA, i, st = add_backward(ctx, t, n));
            if (st)
                return st;
            continue;
        }
        TIME_(NTP_TRAIN_BACKWARD_DATA, i, ref_backward_data(t, n));
        TIME_(NTP_TRAIN_BACKWARD_WEIGHTS, i, ntp__train_backward_weights(&t->s, n));
    }
#undef TIME_
    return NTP_STATUS_OK;
}

/* trainer_pass with every activation gradient it made as doubles after
 * it (internal: tests/test_train_grad.c reads them). */
ntp_status ntp__trainer_pass(ntp_ctx *ctx, ntp_trainer *t, bool backward, double *loss,
                             double *times);
ntp_status ntp__trainer_pass(ntp_ctx *ctx, ntp_trainer *t, bool backward, double *loss,
                             double *times)
{
    ntp_status st = trainer_pass(ctx, t, backward, loss, times);
    for (int i = 0; !st && i < t->g->n_tensors; i++)
        want_grad_double(t, i);
    return st;
}

/* The optimizer over every trainable weight; times as above. */
void ntp__trainer_update(ntp_trainer *t, double *times);
void ntp__trainer_update(ntp_trainer *t, double *times)
{
    const ntp_graph *g = t->g;
    int L = g->n_nodes;
    t->t++;
    for (int i = 0; i < L; i++) {
        const ntp_node *n = &g->nodes[g->order[i]];
        double t0 = times ? ntp__now_us() : 0.0;
        for (int k = 0; k < n->n_w; k++) {
            int w = n->w[k];
            if (g->tensors[w].kind != NTP_TENSOR_WEIGHT)
                continue;
            int64_t c = ntp_shape_numel(&g->tensors[w].shape);
            t->fresh[w] = FRESH_D;
            if (!mixed(t)) {
                ntp__train_update(&t->opt, t->t, t->s.val[w], t->s.grad[w], t->m[w], t->v[w], c);
                continue;
            }
            /* Mixed precision: an fp32 step of the fp32 master (a
             * vector's val is its own master), then its bf16 copy. */
            double *p = t->master[w] ? t->master[w] : t->s.val[w];
            round_f32(t->s.grad[w], c);
            ntp__train_update(&t->opt, t->t, p, t->s.grad[w], t->m[w], t->v[w], c);
            round_f32(p, c);
            round_f32(t->m[w], c);
            round_f32(t->v[w], c);
            for (int64_t j = 0; t->master[w] && j < c; j++)
                t->s.val[w][j] = ntp__round_bf16((float)p[j]);
        }
        if (times)
            times[NTP_TRAIN_UPDATE * (L + 1) + i] = ntp__now_us() - t0;
    }
}

/* Mixed precision's reference: the same training at f32 (same weights,
 * inputs, labels and dropout masks, from the same options), after this
 * run's measurements; its losses go beside the run's. */
static ntp_status f32_twin(ntp_ctx *ctx, const ntp_trainer *t, ntp_train_result *r)
{
    ntp_train_opts o = t->o;
    o.precision = NTP_DTYPE_F32;
    o.progress = NULL;
    ntp_trainer *twin = NULL;
    ntp_train_result *tr = NULL;
    ntp_status st = ntp_trainer_new(ctx, t->g, &o, &twin);
    if (!st)
        st = ntp_trainer_run(ctx, twin, &tr);
    if (!st) {
        r->losses_f32 = tr->losses;
        tr->losses = NULL;
    }
    ntp_train_result_free(tr);
    ntp_trainer_free(twin);
    return st;
}

ntp_status ntp_trainer_run(ntp_ctx *ctx, ntp_trainer *t, ntp_train_result **out)
{
    *out = NULL;
    const ntp_graph *g = t->g;
    int L = g->n_nodes, S = t->o.steps, rows = L + 1;
    ntp_train_result *r = calloc(1, sizeof *r);
    double *times =
        calloc((size_t)NTP_TRAIN_PHASE_COUNT * (size_t)rows * (size_t)S + 1, sizeof *times);
    double *steps = calloc((size_t)S + 1, sizeof *steps);
    double *col = calloc((size_t)S + 1, sizeof *col);
    ntp_status st = NTP_STATUS_OK;
    if (!r || !times || !steps || !col || !(r->losses = calloc((size_t)S + 1, sizeof *r->losses)) ||
        !(r->layers = calloc((size_t)rows, sizeof *r->layers))) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (int k = 0; k < S; k++) {
        double *tk = times + (size_t)k * NTP_TRAIN_PHASE_COUNT * (size_t)rows;
        double t0 = ntp__now_us();
        t->s.step = (uint64_t)k;
        if ((st = trainer_pass(ctx, t, true, &r->losses[k], tk)))
            goto done;
        ntp__trainer_update(t, tk);
        steps[k] = (ntp__now_us() - t0) / 1000.0;
        if (t->o.progress)
            t->o.progress(t->o.progress_user, k + 1, S);
    }
    r->model = g->name;
    r->steps = S;
    r->batch = g->batch > 0 ? g->batch : t->tg.rows;
    r->loss = t->o.loss;
    r->optimizer = t->o.optimizer;
    r->lr = t->opt.lr;
    r->allocated_bytes = t->allocated;
    int64_t hwm = ntp__rss_meter_peak(&t->rss);
    r->rss_peak_bytes = hwm > 0 ? hwm - t->rss.base : -1;
    r->backend = t->be ? t->be->name : "ref";
    r->precision = t->o.precision;
    ntp_stats_compute(steps, (size_t)S, &r->step);
    r->samples_per_s = r->step.median > 0 ? (double)r->batch / (r->step.median / 1000.0) : 0.0;
    r->n_layers = rows;
    bool *needs = t->needs;
    for (int i = 0; i < rows; i++) {
        ntp_train_layer *ly = &r->layers[i];
        const ntp_node *n = i < L ? &g->nodes[g->order[i]] : NULL;
        ly->name = t->plan->layers[i].name;
        ly->type = t->plan->layers[i].type;
        ly->has[NTP_TRAIN_FORWARD] = true;
        if (n) {
            bool bwd = needs[n->out[0]] && g->order[i] != t->tg.fused_node, data = false;
            for (int k = 0; k < n->n_in; k++)
                data |= needs[n->in[k]];
            ly->has[NTP_TRAIN_BACKWARD_DATA] = bwd && data;
            ly->has[NTP_TRAIN_BACKWARD_WEIGHTS] = bwd && ntp__train_has_weights(g, n);
            ly->has[NTP_TRAIN_UPDATE] = ntp__train_has_weights(g, n);
            ly->forward_by = t->fwd_be[g->order[i]] ? t->be->name : "ref";
            if (bwd)
                ly->backward_by = on_backend(t, n) ? t->be->name : "ref";
            if (bwd && mixed(t))
                ly->backward_precision = bf16_backward(t, n) ? "bf16" : "f32";
        }
        for (int ph = 0; ph < NTP_TRAIN_PHASE_COUNT; ph++) {
            for (int k = 0; k < S; k++)
                col[k] = times[((size_t)k * NTP_TRAIN_PHASE_COUNT + (size_t)ph) * (size_t)rows +
                               (size_t)i] /
                         1000.0;
            if (ly->has[ph])
                ntp_stats_compute(col, (size_t)S, &ly->phase[ph]);
        }
    }
    /* The plan is the trainer's; the result keeps its own copy. */
    if (!(r->plan = calloc(1, sizeof *r->plan)) ||
        !(r->plan->layers = calloc((size_t)rows, sizeof *r->plan->layers))) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    ntp_train_layer_cost *keep = r->plan->layers;
    *r->plan = *t->plan;
    r->plan->layers = keep;
    memcpy(keep, t->plan->layers, (size_t)rows * sizeof *keep);
    if (mixed(t))
        st = f32_twin(ctx, t, r);
done:
    free(times);
    free(steps);
    free(col);
    if (st) {
        ntp_train_result_free(r);
        return st;
    }
    *out = r;
    return NTP_STATUS_OK;
}

void ntp_train_result_free(ntp_train_result *r)
{
    if (!r)
        return;
    free(r->losses);
    free(r->losses_f32);
    free(r->layers);
    ntp_train_plan_free(r->plan);
    free(r);
}

ntp_status ntp_trainer_save_weights(ntp_ctx *ctx, const ntp_trainer *t, const char *dir)
{
    const ntp_graph *g = t->g;
    for (int i = 0; i < g->n_tensors; i++) {
        const ntp_tensor *w = &g->tensors[i];
        if (w->kind != NTP_TENSOR_WEIGHT && w->kind != NTP_TENSOR_BUFFER)
            continue;
        int64_t c = ntp_shape_numel(&w->shape);
        float *f = malloc((size_t)c * sizeof *f + 1);
        size_t len = strlen(dir) + strlen(w->name) + 8;
        char *path = malloc(len);
        if (!f || !path) {
            free(f);
            free(path);
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        }
        const double *src = t->master && t->master[i] ? t->master[i] : t->s.val[i];
        for (int64_t j = 0; j < c; j++)
            f[j] = (float)src[j];
        snprintf(path, len, "%s/%s.npy", dir, w->name);
        /* A name may hold '/' (ONNX scopes): it stays one file in dir. */
        for (char *q = path + strlen(dir) + 1; *q; q++)
            if (*q == '/' || *q == '\\')
                *q = '_';
        ntp_status st = ntp__npy_write(ctx, path, NTP_DTYPE_F32, &w->shape, f);
        free(f);
        free(path);
        if (st)
            return st;
    }
    return NTP_STATUS_OK;
}
