/* The whole-graph mode: a topology as one TorchScript module, as a PyTorch
 * deployment runs it (torch.jit.script, torch.jit.freeze,
 * torch.jit.optimize_for_inference), beside the eager per-layer mode of
 * the backend.
 *
 * The module's `forward` is TorchScript source written here, one line per
 * layer calling the same ATen operators the eager mode calls (the layer
 * descriptions of ntp__torch_fill); the weights are buffers wrapping the
 * engine's own f32 arrays (no copy), except the recurrent layers', which
 * are copied once into PyTorch's gate order. torch.cpp compiles, freezes
 * and optimises it. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "graph/gen-impl.h"
#include "torch-impl.h"

/* A growing string. */
typedef struct sbuf {
    char *s;
    size_t n, cap;
    bool oom;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->oom = true;
            return;
        }
        if (b->s && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = (b->cap + (size_t)k + 1) * 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
}

static void ints(sbuf *b, const int64_t *v, int n)
{
    put(b, "[");
    for (int i = 0; i < n; i++)
        put(b, "%s%lld", i ? ", " : "", (long long)v[i]);
    put(b, "]");
}

static const char *unary_name(ntp_torch_fn f)
{
    switch (f) {
    case NTP_TORCH_FN_RELU: return "relu";
    case NTP_TORCH_FN_LEAKY_RELU: return "leaky_relu";
    case NTP_TORCH_FN_SIGMOID: return "sigmoid";
    case NTP_TORCH_FN_TANH: return "tanh";
    case NTP_TORCH_FN_GELU: return "gelu";
    case NTP_TORCH_FN_SILU: return "silu";
    case NTP_TORCH_FN_HARDSWISH: return "hardswish";
    case NTP_TORCH_FN_CLAMP: return "clamp";
    case NTP_TORCH_FN_ABS: return "abs";
    case NTP_TORCH_FN_NEG: return "neg";
    case NTP_TORCH_FN_EXP: return "exp";
    case NTP_TORCH_FN_LOG: return "log";
    case NTP_TORCH_FN_SQRT: return "sqrt";
    case NTP_TORCH_FN_RECIPROCAL: return "reciprocal";
    case NTP_TORCH_FN_ERF: return "erf";
    case NTP_TORCH_FN_FLOOR: return "floor";
    case NTP_TORCH_FN_CEIL: return "ceil";
    case NTP_TORCH_FN_ROUND: return "round";
    case NTP_TORCH_FN_SIGN: return "sign";
    case NTP_TORCH_FN_SIN: return "sin";
    case NTP_TORCH_FN_COS: return "cos";
    case NTP_TORCH_FN_TAN: return "tan";
    case NTP_TORCH_FN_ASIN: return "asin";
    case NTP_TORCH_FN_ACOS: return "acos";
    case NTP_TORCH_FN_ATAN: return "atan";
    case NTP_TORCH_FN_SINH: return "sinh";
    case NTP_TORCH_FN_COSH: return "cosh";
    case NTP_TORCH_FN_ASINH: return "asinh";
    case NTP_TORCH_FN_ACOSH: return "acosh";
    case NTP_TORCH_FN_ATANH: return "atanh";
    case NTP_TORCH_FN_SOFTPLUS: return "softplus";
    case NTP_TORCH_FN_ELU: return "elu";
    case NTP_TORCH_FN_CELU: return "celu";
    case NTP_TORCH_FN_MISH: return "mish";
    case NTP_TORCH_FN_LOG_SIGMOID: return "log_sigmoid";
    }
    return "relu";
}

static const char *binary_name(ntp_torch_op op)
{
    static const char *const names[] = {
        [NTP_TORCH_ADD] = "add", [NTP_TORCH_MUL] = "mul",         [NTP_TORCH_SUB] = "sub",
        [NTP_TORCH_DIV] = "div", [NTP_TORCH_MAXIMUM] = "maximum", [NTP_TORCH_MINIMUM] = "minimum",
    };
    if ((unsigned)op < sizeof names / sizeof names[0] && names[op])
        return names[op];
    return "add";
}

/* The module being written: its source, its buffers. */
typedef struct script {
    sbuf src;
    int n_params, cap_params;
    ntp_torch_tensor *params;
    float **owned; /* buffers this file allocated (generated or reordered weights) */
    int n_owned, cap_owned;
} script;

static int add_param(script *s, const ntp_torch_tensor *t)
{
    if (s->n_params == s->cap_params) {
        int cap = s->cap_params ? 2 * s->cap_params : 64;
        ntp_torch_tensor *p = realloc(s->params, (size_t)cap * sizeof *p);
        if (!p) {
            s->src.oom = true;
            return -1;
        }
        s->params = p;
        s->cap_params = cap;
    }
    s->params[s->n_params] = *t;
    return s->n_params++;
}

static float *own(script *s, int64_t n)
{
    if (s->n_owned == s->cap_owned) {
        int cap = s->cap_owned ? 2 * s->cap_owned : 64;
        float **o = realloc(s->owned, (size_t)cap * sizeof *o);
        if (!o) {
            s->src.oom = true;
            return NULL;
        }
        s->owned = o;
        s->cap_owned = cap;
    }
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    if (!p) {
        s->src.oom = true;
        return NULL;
    }
    s->owned[s->n_owned++] = p;
    return p;
}

/* PyTorch's gate order from ONNX's (as torch.cpp's prepare_rnn): for each
 * direction w_ih, w_hh[, b_ih, b_hh], copied once; writes the list. */
static void rnn_params(script *s, const ntp_torch_layer *l, const float *const *w)
{
    static const int lstm_map[4] = {0, 2, 3, 1}, gru_map[3] = {1, 0, 2}, rnn_map[1] = {0};
    const int *map = l->op == NTP_TORCH_LSTM  ? lstm_map
                     : l->op == NTP_TORCH_GRU ? gru_map
                                              : rnn_map;
    int64_t G = l->op == NTP_TORCH_LSTM ? 4 : l->op == NTP_TORCH_GRU ? 3 : 1;
    int64_t H = l->hidden, I = l->w[0].dim[2];
    int dirs = l->bidirectional ? 2 : 1;
    put(&s->src, "[");
    for (int d = 0; d < dirs; d++) {
        for (int m = 0; m < (l->bias ? 4 : 2); m++) {
            int64_t cols = m == 0 ? I : m == 1 ? H : 1;
            ntp_torch_tensor t = {.ndim = m < 2 ? 2 : 1, .dim = {G * H, cols}};
            float *p = own(s, G * H * cols);
            if (!p)
                return;
            for (int64_t j = 0; j < G; j++) {
                const float *src;
                if (m == 0)
                    src = w[0] + (d * G * H + map[j] * H) * I;
                else if (m == 1)
                    src = w[1] + (d * G * H + map[j] * H) * H;
                else
                    src = w[2] + d * 2 * G * H + (m == 3 ? G * H : 0) + map[j] * H;
                memcpy(p + j * H * cols, src, (size_t)(H * cols) * sizeof *p);
            }
            t.data = p;
            int k = add_param(s, &t);
            put(&s->src, "%sself.p%d", d || m ? ", " : "", k);
        }
    }
    put(&s->src, "]");
}

/* One layer's line(s) of forward(). `t` names tensor i "t<i>". */
static void layer(script *s, const ntp_graph *g, const ntp_node *n, const ntp_torch_layer *l,
                  const float *const *w)
{
    sbuf *b = &s->src;
    int y = n->out[0];
    int p[NTP_TORCH_MAX_IO];
    for (int i = 0; i < l->n_w && l->op != NTP_TORCH_LSTM && l->op != NTP_TORCH_GRU &&
                    l->op != NTP_TORCH_RNN_TANH && l->op != NTP_TORCH_RNN_RELU;
         i++) {
        ntp_torch_tensor t = l->w[i];
        t.data = (float *)w[i];
        if (l->op == NTP_TORCH_LAYERNORM) {
            /* PyTorch's weight has the normalised shape. */
            t.ndim = l->in[0].ndim - (int)l->axis;
            for (int d = 0; d < t.ndim; d++)
                t.dim[d] = l->in[0].dim[l->axis + d];
        }
        p[i] = add_param(s, &t);
    }
    int x = n->in[0];
    put(b, "    t%d = ", y);
    int k = l->nk;
    switch (l->op) {
    case NTP_TORCH_CONV:
    case NTP_TORCH_DECONV:
        if (l->pre_pad) {
            int64_t pp[6];
            for (int d = 0; d < k; d++) {
                pp[2 * d] = l->pads[k - 1 - d];
                pp[2 * d + 1] = l->pads[2 * k - 1 - d];
            }
            put(b, "torch.constant_pad_nd(t%d, ", x);
            ints(b, pp, 2 * k);
            put(b, ", 0.0)\n    t%d = ", y);
            x = y;
        }
        if (l->op == NTP_TORCH_CONV)
            put(b, "torch.conv%dd(t%d, self.p%d, ", k, x, p[0]);
        else
            put(b, "torch.conv_transpose%dd(t%d, self.p%d, ", k, x, p[0]);
        if (l->bias)
            put(b, "self.p%d, ", p[1]);
        else
            put(b, "None, ");
        ints(b, l->stride, k);
        put(b, ", ");
        ints(b, l->pad, k);
        put(b, ", ");
        if (l->op == NTP_TORCH_CONV) {
            ints(b, l->dilation, k);
            put(b, ", %lld)\n", (long long)l->groups);
        } else {
            ints(b, l->output_padding, k);
            put(b, ", %lld, ", (long long)l->groups);
            ints(b, l->dilation, k);
            put(b, ")\n");
        }
        return;
    case NTP_TORCH_LINEAR:
        if (l->bias)
            put(b, "torch.linear(t%d, self.p%d, self.p%d)\n", x, p[0], p[1]);
        else
            put(b, "torch.linear(t%d, self.p%d)\n", x, p[0]);
        return;
    case NTP_TORCH_MATMUL:
        put(b, "torch.matmul(t%d%s, t%d%s)\n", x, l->transpose_a ? ".transpose(-2, -1)" : "",
            n->in[1], l->transpose_b ? ".transpose(-2, -1)" : "");
        return;
    case NTP_TORCH_MAXPOOL:
    case NTP_TORCH_AVGPOOL:
        put(b, "torch.%s_pool%dd(t%d, ", l->op == NTP_TORCH_MAXPOOL ? "max" : "avg", k, x);
        ints(b, l->kernel, k);
        put(b, ", ");
        ints(b, l->stride, k);
        put(b, ", ");
        ints(b, l->pad, k);
        if (l->op == NTP_TORCH_MAXPOOL) {
            put(b, ", ");
            ints(b, l->dilation, k);
            put(b, ", %s)\n", l->ceil_mode ? "True" : "False");
        } else {
            put(b, ", %s, %s)\n", l->ceil_mode ? "True" : "False",
                l->count_include_pad ? "True" : "False");
        }
        return;
    case NTP_TORCH_GLOBAL_MAXPOOL:
    case NTP_TORCH_GLOBAL_AVGPOOL: {
        bool avg = l->op == NTP_TORCH_GLOBAL_AVGPOOL;
        if (l->in[0].ndim == 4) {
            put(b,
                avg ? "torch.adaptive_avg_pool2d(t%d, [1, 1])\n"
                    : "torch.adaptive_max_pool2d(t%d, [1, 1])[0]\n",
                x);
            return;
        }
        int64_t sp[NTP_TORCH_MAX_DIMS];
        for (int d = 2; d < l->in[0].ndim; d++)
            sp[d - 2] = d;
        put(b, "torch.%s(t%d, ", avg ? "mean" : "amax", x);
        ints(b, sp, l->in[0].ndim - 2);
        put(b, ", True)\n");
        return;
    }
    case NTP_TORCH_BATCHNORM:
        put(b,
            "torch.batch_norm(t%d, self.p%d, self.p%d, self.p%d, self.p%d, False, 0.1, %.17g, "
            "True)\n",
            x, p[0], p[1], p[2], p[3], l->epsilon);
        return;
    case NTP_TORCH_LAYERNORM:
        put(b, "torch.layer_norm(t%d, ", x);
        ints(b, l->in[0].dim + l->axis, l->in[0].ndim - (int)l->axis);
        put(b, ", self.p%d, self.p%d, %.17g, True)\n", p[0], p[1], l->epsilon);
        return;
    case NTP_TORCH_UNARY:
        put(b, "torch.%s(t%d", unary_name(l->fn), x);
        if (l->fn == NTP_TORCH_FN_LEAKY_RELU || l->fn == NTP_TORCH_FN_ELU ||
            l->fn == NTP_TORCH_FN_CELU)
            put(b, ", %.17g", l->alpha);
        if (l->fn == NTP_TORCH_FN_CLAMP) {
            if (isinf(l->min))
                put(b, ", None");
            else
                put(b, ", %.17g", l->min);
            if (isinf(l->max))
                put(b, ", None");
            else
                put(b, ", %.17g", l->max);
        }
        put(b, ")\n");
        return;
    case NTP_TORCH_SOFTMAX:
    case NTP_TORCH_LOG_SOFTMAX:
        put(b, "torch.%s(t%d, %lld)\n", l->op == NTP_TORCH_SOFTMAX ? "softmax" : "log_softmax", x,
            (long long)l->axis);
        return;
    case NTP_TORCH_ADD:
    case NTP_TORCH_MUL:
    case NTP_TORCH_SUB:
    case NTP_TORCH_DIV:
    case NTP_TORCH_MAXIMUM:
    case NTP_TORCH_MINIMUM:
        put(b, "torch.%s(t%d, t%d)\n", binary_name(l->op), x, n->in[1]);
        for (int i = 2; i < n->n_in; i++)
            put(b, "    t%d = torch.%s(t%d, t%d)\n", y, binary_name(l->op), y, n->in[i]);
        return;
    case NTP_TORCH_CAT:
        put(b, "torch.cat([");
        for (int i = 0; i < n->n_in; i++)
            put(b, "%st%d", i ? ", " : "", n->in[i]);
        put(b, "], %lld)\n", (long long)l->axis);
        return;
    case NTP_TORCH_RESHAPE:
        put(b, "torch.reshape(t%d, ", x);
        ints(b, l->out[0].dim, l->out[0].ndim);
        put(b, ")\n");
        return;
    case NTP_TORCH_PERMUTE:
        put(b, "torch.permute(t%d, ", x);
        ints(b, l->perm, l->n_perm);
        put(b, ")\n");
        return;
    case NTP_TORCH_LSTM:
    case NTP_TORCH_GRU:
    case NTP_TORCH_RNN_TANH:
    case NTP_TORCH_RNN_RELU: {
        int dirs = l->bidirectional ? 2 : 1;
        put(b, "torch.zeros([%d, %lld, %lld])\n", dirs, (long long)l->in[0].dim[1],
            (long long)l->hidden);
        const char *fn = l->op == NTP_TORCH_LSTM       ? "lstm"
                         : l->op == NTP_TORCH_GRU      ? "gru"
                         : l->op == NTP_TORCH_RNN_TANH ? "rnn_tanh"
                                                       : "rnn_relu";
        if (l->reverse)
            put(b, "    f%d = torch.flip(t%d, [0])\n", y, x);
        put(b, l->reverse ? "    r%d = torch.%s(f%d, " : "    r%d = torch.%s(t%d, ", y, fn, x);
        if (l->op == NTP_TORCH_LSTM)
            put(b, "[t%d, t%d], ", y, y);
        else
            put(b, "t%d, ", y);
        rnn_params(s, l, w);
        put(b, ", %s, 1, 0.0, False, %s, False)\n", l->bias ? "True" : "False",
            l->bidirectional ? "True" : "False");
        int64_t H = l->hidden;
        if (l->last_step) {
            if (dirs == 1)
                put(b, "    t%d = r%d[1][0]\n", y, y);
            else if (l->merge_sum)
                put(b, "    t%d = r%d[1][0] + r%d[1][1]\n", y, y, y);
            else
                put(b, "    t%d = torch.cat([r%d[1][0], r%d[1][1]], 1)\n", y, y, y);
        } else if (dirs == 2 && l->merge_sum) {
            put(b, "    t%d = r%d[0].narrow(2, 0, %lld) + r%d[0].narrow(2, %lld, %lld)\n", y, y,
                (long long)H, y, (long long)H, (long long)H);
        } else {
            put(b, l->reverse ? "    t%d = torch.flip(r%d[0], [0])\n" : "    t%d = r%d[0]\n", y, y);
        }
        return;
    }
    case NTP_TORCH_EMBEDDING:
        /* nn.Embedding.forward; the module's integer inputs are int64
         * (ntp__torch_script_input). */
        put(b, "torch.embedding(self.p%d, t%d)\n", p[0], x);
        return;
    case NTP_TORCH_ATTENTION: {
        int64_t N = l->in[0].dim[0], S = l->in[0].dim[1], D = l->in[0].dim[2];
        int64_t Skv = n->n_in == 3 ? l->in[1].dim[1] : S, h = l->heads, hd = D / h;
        int xk = n->n_in == 3 ? n->in[1] : x, xv = n->n_in == 3 ? n->in[2] : x;
        int pin = p[0], pib = l->bias ? p[1] : -1, pout = l->bias ? p[2] : p[1],
            pob = l->bias ? p[3] : -1;
        put(b, "t%d\n", x); /* keeps the line's "t<y> = " well formed */
        const char *nm[3] = {"q", "k", "v"};
        int src[3] = {x, xk, xv};
        int64_t len[3] = {S, Skv, Skv};
        for (int j = 0; j < 3; j++) {
            put(b, "    %s%d = torch.linear(t%d, self.p%d.narrow(0, %lld, %lld)", nm[j], y, src[j],
                pin, (long long)(j * D), (long long)D);
            if (pib >= 0)
                put(b, ", self.p%d.narrow(0, %lld, %lld)", pib, (long long)(j * D), (long long)D);
            put(b, ").view([%lld, %lld, %lld, %lld]).transpose(1, 2)\n", (long long)N,
                (long long)len[j], (long long)h, (long long)hd);
        }
        put(b, "    s%d = torch.matmul(q%d * %.17g, k%d.transpose(-2, -1))\n", y, y,
            1.0 / sqrt((double)hd), y);
        if (l->causal) {
            /* An additive float mask, as nn.MultiheadAttention's attn_mask:
             * -inf above the diagonal. */
            float *mask = own(s, S * Skv);
            if (!mask)
                return;
            for (int64_t i = 0; i < S; i++)
                for (int64_t j = 0; j < Skv; j++)
                    mask[i * Skv + j] = j > i ? -INFINITY : 0.0f;
            ntp_torch_tensor mt = {.data = mask, .ndim = 2, .dim = {S, Skv}};
            put(b, "    s%d = s%d + self.p%d\n", y, y, add_param(s, &mt));
        }
        put(b,
            "    c%d = torch.matmul(torch.softmax(s%d, -1), v%d).transpose(1, 2).reshape([%lld, "
            "%lld, %lld])\n",
            y, y, y, (long long)N, (long long)S, (long long)D);
        if (pob >= 0)
            put(b, "    t%d = torch.linear(c%d, self.p%d, self.p%d)\n", y, y, pout, pob);
        else
            put(b, "    t%d = torch.linear(c%d, self.p%d)\n", y, y, pout);
        return;
    }
    }
}

/* Weights of node n as f32 arrays, as the engine makes them: generated
 * from the seed, then the model's own where it brings them (the same
 * values every backend gets). */
static ntp_status node_weights(ntp_ctx *ctx, script *s, const ntp_graph *g, const ntp_node *n,
                               uint64_t seed, float **w)
{
    for (int i = 0; i < n->n_w; i++) {
        const ntp_tensor *t = &g->tensors[n->w[i]];
        if (t->data && t->data_dtype != NTP_DTYPE_F32)
            return ntp__node_error(ctx, g, n, NTP_STATUS_UNSUPPORTED,
                                   "weight '%s' is stored as %s; the TorchScript mode takes f32",
                                   t->name, ntp_dtype_name(t->data_dtype));
        if (!(w[i] = own(s, ntp_shape_numel(&t->shape))))
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "torch script: out of memory");
    }
    ntp__gen_weights(g, n, w, seed);
    for (int i = 0; i < n->n_w; i++)
        if (g->tensors[n->w[i]].data)
            w[i] = g->tensors[n->w[i]].data;
    return NTP_STATUS_OK;
}

static void script_clear(script *s)
{
    for (int i = 0; i < s->n_owned; i++)
        free(s->owned[i]);
    free(s->owned);
    free(s->params);
    free(s->src.s);
    memset(s, 0, sizeof *s);
}

struct ntp_torch_script {
    script s;
    const ntp_torch_api *api;
    void *state, *module;
};

ntp_status ntp__torch_script_build(ntp_ctx *ctx, const ntp_graph *g, int threads, uint64_t seed,
                                   ntp_torch_script **out)
{
    *out = NULL;
    char why[600];
    const ntp_torch_api *api = ntp__torch_api(why, sizeof why);
    if (!api)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED, "backend 'torch': %s", why);
    ntp_torch_script *ts = calloc(1, sizeof *ts);
    if (!ts)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "torch script: out of memory");
    ts->api = api;
    script *s = &ts->s;
    ntp_status st = NTP_STATUS_OK;
    put(&s->src, "def forward(self");
    for (int i = 0; i < g->n_inputs; i++)
        put(&s->src, ", t%d", g->inputs[i]);
    put(&s->src, "):\n");
    for (int p = 0; p < g->n_nodes && !st; p++) {
        const ntp_node *n = &g->nodes[g->order[p]];
        ntp_torch_layer l;
        if (!ntp__torch_fill(g, n, &l) || n->precision != NTP_DTYPE_F32) {
            st = ntp__node_error(ctx, g, n, NTP_STATUS_UNSUPPORTED,
                                 "%s has no ATen mapping at %s; the TorchScript mode needs every "
                                 "layer on torch",
                                 ntp__op_name(n->op), ntp_dtype_name(n->precision));
            break;
        }
        float *w[NTP_TORCH_MAX_IO] = {0};
        if ((st = node_weights(ctx, s, g, n, seed, w)))
            break;
        layer(s, g, n, &l, (const float *const *)w);
    }
    if (!st) {
        put(&s->src, "    return ");
        if (g->n_outputs > 1)
            put(&s->src, "(");
        for (int i = 0; i < g->n_outputs; i++)
            put(&s->src, "%st%d", i ? ", " : "", g->outputs[i]);
        put(&s->src, g->n_outputs > 1 ? ")\n" : "\n");
        if (s->src.oom)
            st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "torch script: out of memory");
    }
    ntp_torch_opts o = {.threads = threads > 0 ? threads : 1};
    if (!st && api->init(&o, &ts->state, why, sizeof why))
        st = ntp__error(ctx, NTP_STATUS_BACKEND_ERROR, "torch: %s", why);
    if (!st && api->script_build(ts->state, s->src.s, s->n_params, s->params, &ts->module, why,
                                 sizeof why))
        st = ntp__error(ctx, NTP_STATUS_BACKEND_ERROR, "torch script of '%s': %s",
                        g->name ? g->name : "?", why);
    if (st) {
        ntp__torch_script_free(ts);
        return st;
    }
    *out = ts;
    return NTP_STATUS_OK;
}

const char *ntp__torch_script_source(const ntp_torch_script *ts)
{
    return ts->s.src.s;
}

/* Graph input i as the module takes it, into *buf: the values every
 * backend gets from the seed; an integer input (token ids) widened to
 * int64, the LongTensor nn.Embedding takes, once and outside the timing. */
ntp_status ntp__torch_script_input(ntp_ctx *ctx, const ntp_graph *g, int i, uint64_t seed,
                                   float **buf)
{
    const ntp_tensor *t = &g->tensors[g->inputs[i]];
    int64_t n = ntp_shape_numel(&t->shape);
    bool i32 = t->dtype == NTP_DTYPE_I32;
    void *gen = malloc((size_t)n * (t->dtype == NTP_DTYPE_F32 ? 4 : 8) + 8);
    int64_t *wide = i32 ? malloc((size_t)n * sizeof *wide + 8) : NULL;
    ntp_status st = !gen || (i32 && !wide)
                        ? ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory")
                        : ntp__gen_input(ctx, g, g->inputs[i], gen, seed);
    if (!st && i32) {
        const int32_t *ids = gen;
        for (int64_t j = 0; j < n; j++)
            wide[j] = ids[j];
        free(gen);
        gen = wide;
        wide = NULL;
    }
    free(wide);
    if (st)
        free(gen);
    else
        *buf = gen;
    return st;
}

ntp_status ntp__torch_script_run(ntp_ctx *ctx, ntp_torch_script *ts, const ntp_graph *g,
                                 float *const *in, float *const *out)
{
    ntp_torch_tensor ti[NTP_TORCH_MAX_IO], to[NTP_TORCH_MAX_IO];
    if (g->n_inputs > NTP_TORCH_MAX_IO || g->n_outputs > NTP_TORCH_MAX_IO)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                          "torch script: more than %d inputs or outputs", NTP_TORCH_MAX_IO);
    for (int i = 0; i < g->n_inputs; i++) {
        const ntp_shape *sh = &g->tensors[g->inputs[i]].shape;
        ti[i] = (ntp_torch_tensor){.data = in[i],
                                   .ndim = sh->ndim,
                                   .int64 = g->tensors[g->inputs[i]].dtype != NTP_DTYPE_F32};
        memcpy(ti[i].dim, sh->dim, (size_t)sh->ndim * sizeof sh->dim[0]);
    }
    for (int i = 0; i < g->n_outputs; i++) {
        const ntp_shape *sh = &g->tensors[g->outputs[i]].shape;
        to[i] = (ntp_torch_tensor){.data = out[i], .ndim = sh->ndim};
        memcpy(to[i].dim, sh->dim, (size_t)sh->ndim * sizeof sh->dim[0]);
    }
    char why[600];
    if (ts->api->script_run(ts->state, ts->module, g->n_inputs, ti, g->n_outputs, to, why,
                            sizeof why))
        return ntp__error(ctx, NTP_STATUS_BACKEND_ERROR, "torch script: %s", why);
    return NTP_STATUS_OK;
}

void ntp__torch_script_free(ntp_torch_script *ts)
{
    if (!ts)
        return;
    if (ts->module)
        ts->api->script_free(ts->module);
    if (ts->state)
        ts->api->release(ts->state);
    script_clear(&ts->s);
    free(ts);
}
