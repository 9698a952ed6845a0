/* Planning a training step without running it: which layers train, what
 * the loss reads, the FLOPs of each phase and the memory of each data
 * structure (docs/train.md).
 *
 * The memory planner places feature maps and their gradients in one arena
 * on a timeline of 2L+1 ticks: the forward of the layer at position p is
 * tick p, the loss tick L, its backward tick 2L-p. A feature map lives from
 * its forward until its last reader — the last forward that reads it, or the
 * last backward that needs its value (a conv's input until the conv's
 * weight gradient has been taken) — and its gradient from the first
 * backward that writes it until the backward of the layer that made it. */
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "core/writers-impl.h"
#include "train-impl.h"

void ntp__train_grad_flags(const ntp_graph *g, bool *needs)
{
    memset(needs, 0, (size_t)g->n_tensors * sizeof *needs);
    for (int i = 0; i < g->n_nodes; i++) {
        const ntp_node *n = &g->nodes[g->order[i]];
        bool any = ntp__train_has_weights(g, n);
        for (int k = 0; k < n->n_in; k++)
            any |= needs[n->in[k]];
        if (n->op == NTP_OP_EMBEDDING)
            any = true; /* its table; its indices take no gradient */
        for (int k = 0; k < n->n_out; k++)
            needs[n->out[k]] = any;
    }
}

ntp_status ntp__train_check(ntp_ctx *ctx, const ntp_graph *g)
{
    if (g->precision != NTP_DTYPE_F32)
        return ntp__error(
            ctx, NTP_STATUS_UNSUPPORTED,
            "%s: training runs at f32, the topology is %s (drop ntp_load_opts.precision)",
            g->source, ntp_dtype_name(g->precision));
    /* Every such layer is named, in one line. */
    size_t cap = 256, len = 0;
    char *list = malloc(cap);
    int bad = 0;
    if (!list)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    list[0] = '\0';
    for (int i = 0; i < g->n_nodes; i++) {
        const ntp_node *n = &g->nodes[g->order[i]];
        bool ok = ntp__train_supported(n->op) && (n->n_out == 1 || n->op == NTP_OP_SPLIT);
        /* The inlays: MFCC is input preprocessing (no gradient), so it
         * must read a graph input; a CTC decoder that makes the output is
         * replaced by the CTC loss (ntp__train_target). */
        if (n->op == NTP_OP_MFCC)
            ok = n->n_out == 1 && g->tensors[n->in[0]].kind == NTP_TENSOR_INPUT;
        if (n->op == NTP_OP_CTC_DECODE)
            ok = n->n_out == 1 && g->tensors[n->out[0]].is_output;
        for (int k = 0; k < n->n_in && ok; k++)
            ok = g->tensors[n->in[k]].layout != NTP_LAYOUT_NHWC;
        /* convert trains as a copy: to f32 (an 8-bit image), layout kept. */
        if (ok && n->op == NTP_OP_CONVERT)
            ok = g->tensors[n->out[0]].dtype == NTP_DTYPE_F32 &&
                 g->tensors[n->out[0]].layout == g->tensors[n->in[0]].layout;
        if (ok)
            continue;
        size_t need = len + strlen(n->name) + strlen(ntp__op_name(n->op)) + 8;
        if (need > cap) {
            char *p = realloc(list, cap = 2 * need);
            if (!p) {
                free(list);
                return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            }
            list = p;
        }
        len += (size_t)snprintf(list + len, cap - len, "%s'%s' (%s)", bad++ ? ", " : "", n->name,
                                ntp__op_name(n->op));
    }
    ntp_status st = NTP_STATUS_OK;
    if (bad)
        st = ntp__error(ctx, NTP_STATUS_UNSUPPORTED, "%s: %d layer%s without a backward: %s",
                        g->source, bad, bad > 1 ? "s" : "", list);
    free(list);
    return st;
}

ntp_status ntp__train_target(ntp_ctx *ctx, const ntp_graph *g, ntp_loss loss, ntp_train_target *t)
{
    if (g->n_outputs != 1)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                          "%s: the loss reads one output and the model has %d", g->source,
                          g->n_outputs);
    t->out = t->logits = g->outputs[0];
    t->fused_node = -1;
    t->steps = 0;
    const ntp_tensor *o = &g->tensors[t->out];
    char b[64];
    const ntp_node *prod = o->producer >= 0 ? &g->nodes[o->producer] : NULL;
    if (prod && prod->op == NTP_OP_CTC_DECODE && loss != NTP_LOSS_CTC)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                          "%s: output '%s' is the transcript of ctc_decode '%s'; train it with "
                          "NTP_LOSS_CTC",
                          g->source, o->name, prod->name);
    if (loss == NTP_LOSS_CTC) {
        /* The logits: the decoder's input, or the input of a final
         * log_softmax/softmax over the classes (the loss takes both over). */
        if (prod && (prod->op == NTP_OP_CTC_DECODE ||
                     ((prod->op == NTP_OP_SOFTMAX || prod->op == NTP_OP_LOG_SOFTMAX) &&
                      (prod->a.axis == -1 || prod->a.axis == o->shape.ndim - 1)))) {
            t->logits = prod->in[0];
            t->fused_node = o->producer;
        }
        const ntp_shape *s = &g->tensors[t->logits].shape;
        if (s->ndim != 3 || s->dim[2] < 2)
            return ntp__error(ctx, NTP_STATUS_SHAPE_ERROR,
                              "%s: ctc needs time-major logits [T, N, classes] with 2 or more "
                              "classes (the blank is the last); '%s' is %s",
                              g->source, g->tensors[t->logits].name, ntp_shape_str(s, b, sizeof b));
        t->steps = s->dim[0];
        t->rows = s->dim[1];
        t->classes = s->dim[2];
        return NTP_STATUS_OK;
    }
    if (o->dtype != NTP_DTYPE_F32)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED, "%s: output '%s' is %s; a loss needs f32",
                          g->source, o->name, ntp_dtype_name(o->dtype));
    if (loss == NTP_LOSS_CROSS_ENTROPY) {
        if (o->producer >= 0) {
            const ntp_node *p = &g->nodes[o->producer];
            int64_t ax = p->a.axis < 0 ? p->a.axis + o->shape.ndim : p->a.axis;
            if ((p->op == NTP_OP_SOFTMAX || p->op == NTP_OP_LOG_SOFTMAX) &&
                ax == o->shape.ndim - 1) {
                t->logits = p->in[0];
                t->fused_node = o->producer;
            }
        }
        const ntp_shape *s = &g->tensors[t->logits].shape;
        if (s->ndim != 2 || s->dim[1] < 2)
            return ntp__error(ctx, NTP_STATUS_SHAPE_ERROR,
                              "%s: cross_entropy needs an output [batch, classes] with 2 or more "
                              "classes; '%s' is %s (use NTP_LOSS_MSE)",
                              g->source, g->tensors[t->logits].name, ntp_shape_str(s, b, sizeof b));
        t->rows = s->dim[0];
        t->classes = s->dim[1];
    } else {
        t->rows = o->shape.ndim > 0 ? o->shape.dim[0] : 1;
        t->classes = ntp_shape_numel(&o->shape) / (t->rows > 0 ? t->rows : 1);
    }
    return NTP_STATUS_OK;
}

/* Whether the backward of n runs at all: its output takes a gradient. */
static bool runs_backward(const ntp_graph *g, const bool *needs, const ntp_node *n, int fused)
{
    return needs[n->out[0]] && (int)(n - g->nodes) != fused;
}

/* The doubles the reference engine allocates (train.c), counted from the
 * shapes: a value per tensor, a gradient per weight and per tensor that
 * takes one (and the loss's input), optimizer state per weight, saved
 * state per layer, the labels and the CTC scratch (for labels of T/2
 * symbols, the generated ones' longest). */
bool ntp__train_bf16_copy(const ntp_tensor *w)
{
    return w->kind == NTP_TENSOR_WEIGHT && w->shape.ndim >= 2;
}

static int64_t engine_doubles(const ntp_graph *g, const ntp_train_opts *o,
                              const ntp_train_target *tg, const bool *needs)
{
    int64_t d = 0;
    int per_weight = 1 + (o->optimizer == NTP_OPTIMIZER_ADAM       ? 2
                          : o->optimizer == NTP_OPTIMIZER_MOMENTUM ? 1
                                                                   : 0);
    for (int t = 0; t < g->n_tensors; t++) {
        int64_t c = ntp_shape_numel(&g->tensors[t].shape);
        bool w = g->tensors[t].kind == NTP_TENSOR_WEIGHT;
        d += c + (w ? per_weight * c : needs[t] || t == tg->logits ? c : 0);
        if (o->precision == NTP_DTYPE_BF16 && ntp__train_bf16_copy(&g->tensors[t]))
            d += c; /* its fp32 master beside its bf16 copy */
    }
    for (int i = 0; i < g->n_nodes; i++)
        d += ntp__train_saved_count(g, &g->nodes[i]);
    int64_t S = tg->steps / 2 > 0 ? tg->steps / 2 : 1;
    if (o->loss == NTP_LOSS_CTC)
        d += tg->rows * S + ntp__train_ctc_scratch(tg->steps, tg->classes, S);
    else if (o->loss == NTP_LOSS_CROSS_ENTROPY)
        d += tg->rows;
    else
        d += ntp_shape_numel(&g->tensors[tg->out].shape);
    return d;
}

ntp_status ntp_train_plan_make(ntp_ctx *ctx, const ntp_graph *g, const ntp_train_opts *o,
                               ntp_train_plan **out)
{
    *out = NULL;
    ntp_train_opts def;
    if (!o) {
        ntp_train_opts_init(&def);
        o = &def;
    }
    ntp_train_target tg;
    ntp_status st;
    if (o->precision != NTP_DTYPE_F32 && o->precision != NTP_DTYPE_BF16)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                          "%s: training runs at f32 or bf16 (mixed precision), not %s", g->source,
                          ntp_dtype_name(o->precision));
    if ((st = ntp__train_check(ctx, g)) || (st = ntp__train_target(ctx, g, o->loss, &tg)))
        return st;
    int L = g->n_nodes, nt = g->n_tensors;
    ntp_train_plan *p = calloc(1, sizeof *p);
    bool *needs = calloc((size_t)nt + 1, sizeof *needs);
    int64_t *size = calloc(2 * (size_t)nt + 1, sizeof *size);
    int64_t *offs = calloc(2 * (size_t)nt + 1, sizeof *offs);
    int *birth = calloc(2 * (size_t)nt + 1, sizeof *birth);
    int *death = calloc(2 * (size_t)nt + 1, sizeof *death);
    if (p)
        p->layers = calloc((size_t)L + 1, sizeof *p->layers);
    if (!p || !needs || !size || !offs || !birth || !death || !p->layers) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory planning training");
        goto done;
    }
    /* Mixed precision: feature maps and their gradients in bf16; weights,
     * gradients, optimizer state, saved state and the loss's scratch in
     * fp32, plus a bf16 copy of each weight matrix. */
    bool bf16 = o->precision == NTP_DTYPE_BF16;
    p->precision = bf16 ? NTP_DTYPE_BF16 : g->precision;
    p->batch = g->batch;
    p->loss = o->loss;
    p->optimizer = o->optimizer;
    p->n_layers = L + 1;
    ntp__train_grad_flags(g, needs);
    ntp_train_memory *m = &p->memory;

    /* Lifetimes: item t is tensor t's value, item nt + t its gradient. */
    for (int t = 0; t < nt; t++) {
        const ntp_tensor *x = &g->tensors[t];
        if (x->kind != NTP_TENSOR_ACTIVATION && x->kind != NTP_TENSOR_INPUT)
            continue;
        size[t] = ntp__tensor_bytes(x);
        if (bf16 && x->dtype == NTP_DTYPE_F32)
            size[t] /= 2;
        birth[t] = death[t] = x->producer >= 0 ? g->position[x->producer] : 0;
        if (t == tg.out || t == tg.logits)
            death[t] = L;
        if (needs[t]) {
            size[nt + t] = size[t];
            birth[nt + t] = t == tg.out || t == tg.logits ? L : 2 * L;
            death[nt + t] = x->producer >= 0 ? 2 * L - g->position[x->producer] : L;
        }
    }
    for (int i = 0; i < L; i++) {
        const ntp_node *n = &g->nodes[g->order[i]];
        bool bwd = runs_backward(g, needs, n, tg.fused_node);
        ntp_train_needs nd = ntp__train_needs(g, n);
        ntp_train_layer_cost *lc = &p->layers[i];
        for (int k = 0; k < n->n_in; k++) {
            int t = n->in[k];
            if (death[t] < i)
                death[t] = i;
            if (bwd && nd.input[k]) {
                if (death[t] < 2 * L - i)
                    death[t] = 2 * L - i;
                lc->stashed_bytes += size[t];
            }
            if (bwd && needs[t] && birth[nt + t] > 2 * L - i)
                birth[nt + t] = 2 * L - i;
        }
        if (bwd && nd.output) {
            if (death[n->out[0]] < 2 * L - i)
                death[n->out[0]] = 2 * L - i;
            lc->stashed_bytes += size[n->out[0]];
        }
        lc->name = n->name;
        lc->type = ntp__op_name(n->op);
        bool data = false;
        for (int k = 0; k < n->n_in; k++)
            data |= needs[n->in[k]];
        ntp__train_flops(g, n, data && bwd, o->optimizer, lc->flops);
        if (!bwd)
            lc->flops[NTP_TRAIN_BACKWARD_DATA] = lc->flops[NTP_TRAIN_BACKWARD_WEIGHTS] = 0;
        if (g->order[i] == tg.fused_node && n->op == NTP_OP_CTC_DECODE)
            lc->flops[NTP_TRAIN_FORWARD] = 0; /* replaced by the loss: not run */
        int64_t saved = ntp__train_saved_count(g, n);
        m->other += n->op == NTP_OP_DROPOUT ? saved : saved * (int64_t)ntp_dtype_size(g->precision);
        for (int k = 0; k < n->n_w; k++) {
            const ntp_tensor *w = &g->tensors[n->w[k]];
            int64_t b = ntp__tensor_bytes(w);
            m->weights += b + (bf16 && ntp__train_bf16_copy(w) ? b / 2 : 0);
            if (w->kind != NTP_TENSOR_WEIGHT)
                continue;
            m->gradients += b;
            m->optimizer_state += o->optimizer == NTP_OPTIMIZER_ADAM       ? 2 * b
                                  : o->optimizer == NTP_OPTIMIZER_MOMENTUM ? b
                                                                           : 0;
        }
    }
    /* A gradient nobody writes (a dead branch) still gets a buffer. */
    for (int t = 0; t < nt; t++)
        if (size[nt + t] && birth[nt + t] > death[nt + t])
            birth[nt + t] = death[nt + t];
    if (!ntp__plan_intervals(2 * nt, size, birth, death, offs, &m->activations)) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory planning training");
        goto done;
    }
    int64_t lelems = ntp_shape_numel(&g->tensors[tg.logits].shape);
    m->workspace = lelems * (int64_t)ntp_dtype_size(g->precision);
    /* CTC: log-probabilities, α and β of one sequence, for labels as long
     * as generated ones can be (T/2 symbols: T + 1 states). */
    if (o->loss == NTP_LOSS_CTC)
        m->workspace += ntp__train_ctc_scratch(tg.steps, tg.classes, tg.steps / 2) *
                        (int64_t)ntp_dtype_size(g->precision);
    m->peak =
        m->weights + m->gradients + m->optimizer_state + m->activations + m->workspace + m->other;
    p->engine_bytes = engine_doubles(g, o, &tg, needs) * (int64_t)sizeof(double);
    ntp_train_layer_cost *lc = &p->layers[L];
    lc->name = "loss";
    lc->type = ntp_loss_name(o->loss);
    ntp__train_loss_flops(o->loss, lelems, lc->flops);
    if (o->loss == NTP_LOSS_CTC) {
        /* α (forward) and β (backward) over T + 1 states per sequence at
         * most (labels of T/2 symbols), about 5 FLOPs a state each (two
         * log-sum-exps and the emission), and the gradient's 4 a state. */
        int64_t states = tg.steps * tg.rows * (tg.steps + 1);
        lc->flops[NTP_TRAIN_FORWARD] += 5 * states;
        lc->flops[NTP_TRAIN_BACKWARD_DATA] += 9 * states;
    }
    for (int i = 0; i <= L; i++)
        for (int ph = 0; ph < NTP_TRAIN_PHASE_COUNT; ph++) {
            p->flops[ph] += p->layers[i].flops[ph];
            p->step_flops += p->layers[i].flops[ph];
        }
    p->forward_flops = p->flops[NTP_TRAIN_FORWARD];
    *out = p;
    p = NULL;
done:
    ntp_train_plan_free(p);
    free(needs);
    free(size);
    free(offs);
    free(birth);
    free(death);
    return st;
}

void ntp_train_plan_free(ntp_train_plan *p)
{
    if (!p)
        return;
    free(p->layers);
    free(p);
}
