/* Darknet's .cfg network definitions (docs/darknet.md).
 *
 * A .cfg file is INI-like: "[section]" lines, each followed by key=value
 * lines; '#' and ';' start comments and blanks are ignored (Darknet strips
 * every blank of a line before it reads it). The first section is [net];
 * every later section is one Darknet layer, numbered from 0, and [route]
 * and [shortcut] name other layers by that number (negative: relative).
 *
 * Each Darknet layer becomes one or more ntprof layers named after Darknet's
 * own short names and the layer number ("conv3", "conv3_bn",
 * "conv3_leaky"), so a report lines up with what Darknet prints. The reader
 * keeps Darknet's shape rules (its padding rule for [maxpool], `pad=1`
 * meaning size/2 for [convolutional]) and tracks each layer's (c, h, w) as
 * Darknet does, so that a layer ntprof would shape differently is refused
 * here, with the line, rather than accepted with other numbers.
 *
 * Weights come from a Darknet .weights file when `--set weights=FILE` names
 * one (src/io/darknet-weights.c), and are generated from the seed otherwise,
 * as for every other format.
 *
 * This file reads the text, the options and [net], and holds the helpers
 * every section uses; the sections themselves are in darknet-layers.c and
 * darknet-recurrent.c (the private interface: darknet-cfg-impl.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "darknet-cfg-impl.h"
#include "graph/op-onnx-impl.h"

ntp_status ntp__dn_oom(reader *r)
{
    return ntp__error(r->ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory", r->src);
}

bool ntp__dn_grow(void **p, int *cap, int need, size_t size)
{
    if (need <= *cap)
        return true;
    int c = *cap ? 2 * *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, (size_t)c * size);
    if (!q)
        return false;
    *p = q;
    *cap = c;
    return true;
}

/* Darknet's strip(): every blank goes, wherever it is. */
static void strip(char *s)
{
    char *w = s;
    for (char *p = s; *p; p++)
        if (!isspace((unsigned char)*p))
            *w++ = *p;
    *w = '\0';
}

static ntp_status parse_text(reader *r, char *text)
{
    int line = 0;
    char *save = NULL;
    for (char *l = text; l; l = save) {
        line++;
        save = strchr(l, '\n');
        if (save)
            *save++ = '\0';
        strip(l);
        if (l[0] == '\0' || l[0] == '#' || l[0] == ';')
            continue;
        if (l[0] == '[') {
            size_t n = strlen(l);
            if (n < 3 || l[n - 1] != ']')
                return ntp__error(r->ctx, NTP_STATUS_PARSE_ERROR,
                                  "%s:%d: expected a section header such as [convolutional], "
                                  "got '%.64s'",
                                  r->src, line, l);
            if (!ntp__dn_grow((void **)&r->s, &r->cap_s, r->n_s + 1, sizeof *r->s))
                return ntp__dn_oom(r);
            dn_sect *s = &r->s[r->n_s++];
            memset(s, 0, sizeof *s);
            l[n - 1] = '\0';
            s->type = ntp__strdup(l + 1);
            s->line = line;
            if (!s->type)
                return ntp__dn_oom(r);
            continue;
        }
        char *eq = strchr(l, '=');
        if (!eq || eq == l)
            return ntp__error(r->ctx, NTP_STATUS_PARSE_ERROR,
                              "%s:%d: expected key=value or a [section], got '%.64s'", r->src, line,
                              l);
        if (r->n_s == 0)
            return ntp__error(r->ctx, NTP_STATUS_PARSE_ERROR,
                              "%s:%d: '%.64s' comes before any section: expected [net] first",
                              r->src, line, l);
        dn_sect *s = &r->s[r->n_s - 1];
        if (!ntp__dn_grow((void **)&s->opts, &s->cap_opts, s->n_opts + 1, sizeof *s->opts))
            return ntp__dn_oom(r);
        *eq = '\0';
        dn_opt *o = &s->opts[s->n_opts++];
        o->key = ntp__strdup(l);
        o->val = ntp__strdup(eq + 1);
        o->line = line;
        if (!o->key || !o->val)
            return ntp__dn_oom(r);
    }
    return NTP_STATUS_OK;
}

/* --- options ------------------------------------------------------------ */

/* "FILE:LINE: [type] (layer N): " and the message. */
ntp_status ntp__dn_sect_error(reader *r, const dn_sect *s, int line, ntp_status st, const char *fmt,
                              ...)
{
    char msg[512], where[32] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int li = (int)(s - r->s) - 1;
    if (li >= 0)
        snprintf(where, sizeof where, " (layer %d)", li);
    return ntp__error(r->ctx, st, "%s:%d: [%s]%s: %s", r->src, line, s->type, where, msg);
}

const dn_opt *ntp__dn_find(const dn_sect *s, const char *key)
{
    /* Darknet's option_find takes the first. */
    for (int i = 0; i < s->n_opts; i++)
        if (strcmp(s->opts[i].key, key) == 0)
            return &s->opts[i];
    return NULL;
}

ntp_status ntp__dn_get_int(reader *r, const dn_sect *s, const char *key, int64_t dflt, int64_t lo,
                           int64_t hi, int64_t *out)
{
    const dn_opt *o = ntp__dn_find(s, key);
    *out = dflt;
    if (!o)
        return NTP_STATUS_OK;
    char *end;
    errno = 0;
    long long v = strtoll(o->val, &end, 10);
    if (errno || end == o->val || *end || v < lo || v > hi)
        return ntp__dn_sect_error(r, s, o->line, NTP_STATUS_PARSE_ERROR,
                                  "'%s': expected an integer in [%lld, %lld], got '%.32s'", key,
                                  (long long)lo, (long long)hi, o->val);
    *out = v;
    return NTP_STATUS_OK;
}

ntp_status ntp__dn_get_float(reader *r, const dn_sect *s, const char *key, double dflt, double *out)
{
    const dn_opt *o = ntp__dn_find(s, key);
    *out = dflt;
    if (!o)
        return NTP_STATUS_OK;
    char *end;
    double v = strtod(o->val, &end);
    if (end == o->val || *end)
        return ntp__dn_sect_error(r, s, o->line, NTP_STATUS_PARSE_ERROR,
                                  "'%s': expected a number, got '%.32s'", key, o->val);
    *out = v;
    return NTP_STATUS_OK;
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[64];
    if (lb >= 64)
        return 99;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t sub = diag + (a[i - 1] != b[j - 1]);
            size_t del = row[j] + 1, ins = row[j - 1] + 1;
            row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
            diag = up;
        }
    }
    return row[lb];
}

/* Keys a section may have: `known` (comma-separated) are the ones this
 * reader reads or deliberately ignores (training settings). Anything else is
 * refused with the nearest known key, as Darknet's option_unused would only
 * warn about. */
static ntp_status check_keys(reader *r, const dn_sect *s, const char *known)
{
    for (int i = 0; i < s->n_opts; i++) {
        const char *k = s->opts[i].key;
        char best[32] = "";
        size_t bd = 99;
        bool ok = false;
        for (const char *p = known; *p;) {
            const char *c = strchr(p, ',');
            size_t n = c ? (size_t)(c - p) : strlen(p);
            char w[32];
            snprintf(w, sizeof w, "%.*s", (int)n, p);
            if (strcmp(w, k) == 0) {
                ok = true;
                break;
            }
            size_t d = edit_distance(k, w);
            if (d < bd) {
                bd = d;
                snprintf(best, sizeof best, "%s", w);
            }
            p += n + (c ? 1 : 0);
        }
        if (!ok)
            return ntp__dn_sect_error(r, s, s->opts[i].line, NTP_STATUS_PARSE_ERROR,
                                      "unknown key '%.32s'%s%s%s (known: %s)", k,
                                      bd <= 2 ? "; did you mean '" : "", bd <= 2 ? best : "",
                                      bd <= 2 ? "'?" : "", known);
    }
    return NTP_STATUS_OK;
}

/* --- building ------------------------------------------------------------- */

/* A node of `op` reading `ins`, with one output tensor of the node's name.
 * Returns the node index, -1 when out of memory. */
int ntp__dn_add_op(reader *r, const char *name, ntp_op op, int line, const int *ins, int n_in)
{
    ntp_graph *g = r->g;
    int ni = ntp__graph_add_node(g, name, op, line);
    if (ni < 0)
        return -1;
    int ti = ntp__graph_add_tensor(g, name, NTP_TENSOR_ACTIVATION);
    if (ti < 0)
        return -1;
    ntp_node *n = &g->nodes[ni];
    for (int k = 0; k < n_in; k++)
        n->in[k] = ins[k];
    n->n_in = n_in;
    n->out[0] = ti;
    n->n_out = 1;
    g->tensors[ti].producer = ni;
    g->tensors[ti].producer_slot = 0;
    return ni;
}

static const char *const activations =
    "linear, leaky, relu, logistic, tanh, elu, selu, mish, swish, ramp";

/* Darknet's activation names onto ops; linear is none (NTP_OP_COUNT). */
static bool parse_activation(const char *s, ntp_op *op)
{
    static const struct {
        const char *name;
        ntp_op op;
    } map[] = {
        {"linear", NTP_OP_COUNT},     {"leaky", NTP_OP_LEAKY_RELU}, {"relu", NTP_OP_RELU},
        {"logistic", NTP_OP_SIGMOID}, {"tanh", NTP_OP_TANH},        {"elu", NTP_OP_ELU},
        {"selu", NTP_OP_SELU},        {"mish", NTP_OP_MISH},        {"swish", NTP_OP_SILU},
        {"ramp", NTP_OP_RELU}, /* and + 0.1x: act_node */
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(s, map[i].name) == 0) {
            *op = map[i].op;
            return true;
        }
    return false;
}

/* Activation `op` (NTP_OP_COUNT: linear, none) named BASE_NAME after tensor
 * `*t`; *t and *last become its. */
ntp_status ntp__dn_act_node(reader *r, int line, const char *base, const char *name, ntp_op op,
                            int *t, int *last)
{
    if (op == NTP_OP_COUNT)
        return NTP_STATUS_OK;
    char nm[96];
    snprintf(nm, sizeof nm, "%s_%s", base, name);
    int ni = ntp__dn_add_op(r, nm, op, line, t, 1);
    if (ni < 0)
        return ntp__dn_oom(r);
    if (op == NTP_OP_LEAKY_RELU)
        r->g->nodes[ni].a.leaky_relu.slope = 0.1; /* Darknet's leaky slope */
    int x = *t;
    *t = r->g->nodes[ni].out[0];
    *last = ni;
    if (strcmp(name, "ramp") != 0)
        return NTP_STATUS_OK;
    /* Darknet's ramp_activate: x*(x>0) + .1*x, the relu plus 0.1 x. */
    ntp_status st;
    int relu = *t;
    snprintf(nm, sizeof nm, "%s_ramp_x", base);
    if ((st = ntp__dn_scale(r, line, nm, NTP_OP_MUL, 0.1f, &x, last)))
        return st;
    snprintf(nm, sizeof nm, "%s_ramp_add", base);
    const int ins[2] = {relu, x};
    if ((ni = ntp__dn_add_op(r, nm, NTP_OP_ADD, line, ins, 2)) < 0)
        return ntp__dn_oom(r);
    *t = r->g->nodes[ni].out[0];
    *last = ni;
    return NTP_STATUS_OK;
}

/* Tensor *t times (NTP_OP_MUL) or over (NTP_OP_DIV) the constant v, as
 * "NAME" reading the [1] constant "NAME_k"; *t and *last become its. */
ntp_status ntp__dn_scale(reader *r, int line, const char *name, ntp_op op, float v, int *t,
                         int *last)
{
    char nm[112];
    snprintf(nm, sizeof nm, "%s_k", name);
    int ci = ntp__dn_add_op(r, nm, NTP_OP_CONSTANT, line, NULL, 0);
    if (ci < 0)
        return ntp__dn_oom(r);
    ntp_attrs *a = &r->g->nodes[ci].a;
    a->n_shape = 1;
    a->shape[0] = 1;
    a->constant.trainable = false;
    ntp_status st =
        ntp__dn_own_weight(r, ci, "value", NTP_TENSOR_BUFFER, ntp__dn_shp(1, 1, 0, 0, 0));
    if (st)
        return st;
    ntp_tensor *k = &r->g->tensors[r->g->nodes[ci].w[0]];
    if (!(k->data = malloc(sizeof(float))))
        return ntp__dn_oom(r);
    *(float *)k->data = v;
    k->data_dtype = NTP_DTYPE_F32;
    const int ins[2] = {*t, r->g->nodes[ci].out[0]};
    int ni = ntp__dn_add_op(r, name, op, line, ins, 2);
    if (ni < 0)
        return ntp__dn_oom(r);
    *t = r->g->nodes[ni].out[0];
    *last = ni;
    return NTP_STATUS_OK;
}

/* The `activation` of a section (default: Darknet's for that section):
 * *op and *name. */
ntp_status ntp__dn_parse_act(reader *r, const dn_sect *s, const char *dflt, ntp_op *op,
                             const char **name)
{
    const dn_opt *o = ntp__dn_find(s, "activation");
    *name = o ? o->val : dflt;
    if (!parse_activation(*name, op))
        return ntp__dn_sect_error(r, s, o ? o->line : s->line, NTP_STATUS_UNSUPPORTED,
                                  "'activation': expected one of %s, got '%.32s'", activations,
                                  *name);
    return NTP_STATUS_OK;
}

/* The activation of a section (default: Darknet's for that section), as a
 * node after tensor `*t`; *t becomes its output. */
ntp_status ntp__dn_activation(reader *r, const dn_sect *s, const char *base, const char *dflt,
                              int *t, int *last)
{
    ntp_op op = NTP_OP_COUNT; /* set by parse_act on success */
    const char *name;
    ntp_status st = ntp__dn_parse_act(r, s, dflt, &op, &name);
    if (st)
        return st;
    const dn_opt *o = ntp__dn_find(s, "activation");
    return ntp__dn_act_node(r, o ? o->line : s->line, base, name, op, t, last);
}

/* The batch norm Darknet puts after a convolution or connected layer with
 * batch_normalize=1, "BASE_bn" after tensor *t (epsilon 1e-6: Darknet's
 * normalize_cpu divides by sqrt(var) + 1e-6); *t, *last and *bn_node become
 * its. */
ntp_status ntp__dn_add_bn(reader *r, int line, const char *base, int *t, int *last, int *bn_node)
{
    char nm[96];
    snprintf(nm, sizeof nm, "%s_bn", base);
    int bi = ntp__dn_add_op(r, nm, NTP_OP_BATCHNORM, line, t, 1);
    if (bi < 0)
        return ntp__dn_oom(r);
    r->g->nodes[bi].a.epsilon = 1e-6;
    *t = r->g->nodes[bi].out[0];
    *last = *bn_node = bi;
    return NTP_STATUS_OK;
}

/* The output of layer `li` as a 4-D [N,C,H,W] tensor: a flat [N,K] one (after
 * a [connected]) is reshaped to [N,K,1,1] once. */
ntp_status ntp__dn_as_4d(reader *r, const dn_sect *s, int li, int *t)
{
    ntp_darknet_layer *L = &r->layers[li];
    if (!L->flat) {
        *t = L->tensor;
        return NTP_STATUS_OK;
    }
    char nm[96];
    snprintf(nm, sizeof nm, "%s_4d", r->g->nodes[L->last].name);
    int ni = ntp__dn_add_op(r, nm, NTP_OP_RESHAPE, s->line, &L->tensor, 1);
    if (ni < 0)
        return ntp__dn_oom(r);
    ntp_attrs *a = &r->g->nodes[ni].a;
    a->n_shape = 4;
    a->shape[0] = 0;
    a->shape[1] = L->c;
    a->shape[2] = L->h;
    a->shape[3] = L->w;
    L->tensor = *t = r->g->nodes[ni].out[0];
    L->flat = false;
    L->last = ni;
    return NTP_STATUS_OK;
}

/* The output of layer `li` as one vector per row, [rows, c*h*w], as
 * Darknet's connected and recurrent layers read their input: a spatial one
 * is flattened ("BASE_flatten"). */
ntp_status ntp__dn_as_flat(reader *r, const dn_sect *s, int li, const char *base, int *t)
{
    const ntp_darknet_layer *P = &r->layers[li];
    *t = P->tensor;
    if (P->flat)
        return NTP_STATUS_OK;
    char nm[96];
    snprintf(nm, sizeof nm, "%s_flatten", base);
    int fi = ntp__dn_add_op(r, nm, NTP_OP_FLATTEN, s->line, t, 1);
    if (fi < 0)
        return ntp__dn_oom(r);
    r->g->nodes[fi].a.axis = 1;
    *t = r->g->nodes[fi].out[0];
    return NTP_STATUS_OK;
}

/* The layer number a [route] or [shortcut] names: negative is relative. */
ntp_status ntp__dn_layer_ref(reader *r, const dn_sect *s, int line, const char *key, long v, int li,
                             int *out)
{
    long k = v < 0 ? li + v : v;
    if (k < 0 || k >= li)
        return ntp__dn_sect_error(
            r, s, line, NTP_STATUS_GRAPH_ERROR,
            "'%s': %ld names layer %ld, expected a layer before this one (0 to %d)", key, v, k,
            li - 1);
    if (r->layers[k].tensor < 0)
        return ntp__dn_sect_error(r, s, line, NTP_STATUS_GRAPH_ERROR,
                                  "'%s': layer %ld ([%s]) has no output to read", key, k,
                                  r->s[k + 1].type);
    *out = (int)k;
    return NTP_STATUS_OK;
}

/* Weight `suffix` of node ni made here rather than by shape inference
 * (which takes a node's weights as given when they exist), so that later
 * time steps' nodes can share it. */
ntp_status ntp__dn_own_weight(reader *r, int ni, const char *suffix, ntp_tensor_kind kind,
                              ntp_shape sh)
{
    char nm[160];
    snprintf(nm, sizeof nm, "%s.%s", r->g->nodes[ni].name, suffix);
    int ti = ntp__graph_add_tensor(r->g, nm, kind);
    if (ti < 0)
        return ntp__dn_oom(r);
    r->g->tensors[ti].shape = sh;
    ntp_node *n = &r->g->nodes[ni];
    n->w[n->n_w++] = ti;
    return NTP_STATUS_OK;
}

ntp_shape ntp__dn_shp(int nd, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    ntp_shape s = {nd, {d0, d1, d2, d3}};
    return s;
}

/* Concatenate ts[0..n) on `axis`, NTP_MAX_INPUTS at a time ("BASE_catK"). */
ntp_status ntp__dn_concat_all(reader *r, const dn_sect *s, const char *base, int axis, int *ts,
                              int n, int *out)
{
    int k = 0;
    while (n > 1) {
        int m = 0;
        for (int i = 0; i < n; i += NTP_MAX_INPUTS) {
            int cnt = n - i < NTP_MAX_INPUTS ? n - i : NTP_MAX_INPUTS;
            if (cnt == 1) {
                ts[m++] = ts[i];
                continue;
            }
            char nm[96];
            snprintf(nm, sizeof nm, "%s_cat%d", base, k++);
            int ni = ntp__dn_add_op(r, nm, NTP_OP_CONCAT, s->line, &ts[i], cnt);
            if (ni < 0)
                return ntp__dn_oom(r);
            r->g->nodes[ni].a.axis = axis;
            ts[m++] = r->g->nodes[ni].out[0];
        }
        n = m;
    }
    *out = ts[0];
    return NTP_STATUS_OK;
}

void ntp__dn_add_block(ntp_darknet_layer *L, ntp_darknet_block_kind kind, int node, int bn_node,
                       int gate)
{
    L->blocks[L->n_blocks++] = (ntp_darknet_block){kind, node, bn_node, gate};
}

/* Darknet's [crnn] and [local] read their input as an image: a vector
 * input or a recurrent layer's output has none (their out_c, out_h, out_w
 * are 0 in Darknet); a [connected]'s is 1x1. */
ntp_status ntp__dn_need_image(reader *r, const dn_sect *s, int li)
{
    const ntp_darknet_layer *P = &r->layers[li - 1];
    if (P->flat && P->kind != NTP_DARKNET_CONNECTED)
        return ntp__dn_sect_error(
            r, s, s->line, NTP_STATUS_UNSUPPORTED,
            "expected an image input (width, height and channels), got a vector "
            "of %lld",
            (long long)(P->c * P->h * P->w));
    return NTP_STATUS_OK;
}

/* The sections this reader loads: the type, Darknet's short alias (NULL:
 * none), the keys it may have (check_keys: what the layer reads or
 * deliberately ignores; NULL: not checked, as the heads' training keys are
 * many) and the layer that reads it. */
typedef ntp_status (*section_fn)(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);
static const struct {
    const char *type, *alias, *keys;
    section_fn fn;
} sections[] = {
    {"convolutional", "conv",
     "filters,size,stride,pad,padding,groups,batch_normalize,activation,binary,xnor,flipped,dot",
     ntp__dn_conv_layer},
    {"connected", "conn", "output,activation,batch_normalize", ntp__dn_connected_layer},
    {"maxpool", "max", "size,stride,padding", ntp__dn_maxpool_layer},
    {"avgpool", "avg", "", ntp__dn_avgpool_layer},
    {"route", NULL, "layers", ntp__dn_route_layer},
    {"shortcut", NULL, "from,activation,alpha,beta", ntp__dn_shortcut_layer},
    {"upsample", NULL, "stride,scale", ntp__dn_upsample_layer},
    {"dropout", NULL, "probability", ntp__dn_dropout_layer},
    {"softmax", "soft", "groups,temperature,tree,spatial,noloss", ntp__dn_softmax_layer},
    {"reorg", NULL, "stride,reverse,flatten,extra", ntp__dn_reorg_layer},
    {"crop", NULL, "crop_height,crop_width,flip,angle,saturation,exposure,hue,shift",
     ntp__dn_crop_layer},
    {"yolo", NULL, NULL, ntp__dn_head_layer},
    {"region", NULL, NULL, ntp__dn_head_layer},
    {"detection", NULL, NULL, ntp__dn_head_layer},
    {"cost", NULL, NULL, ntp__dn_cost_layer},
    {"rnn", NULL, "output,activation,batch_normalize,shortcut,hidden", ntp__dn_rnn_layer},
    {"gru", NULL, "output,batch_normalize,tanh", ntp__dn_gru_layer},
    {"lstm", NULL, "output,batch_normalize", ntp__dn_lstm_layer},
    {"crnn", NULL, "output_filters,hidden_filters,activation,batch_normalize,shortcut",
     ntp__dn_crnn_layer},
    {"local", NULL, "filters,size,stride,pad,activation", ntp__dn_local_layer},
    {"deconvolutional", "deconv", "filters,size,stride,pad,padding,batch_normalize,activation",
     ntp__dn_deconv_layer},
    {"batchnorm", NULL, "", ntp__dn_batchnorm_layer},
    {"activation", NULL, "activation", ntp__dn_activation_layer},
};
#define N_SECTIONS (sizeof sections / sizeof sections[0])

/* A recurrent or [local] section is also recorded whole (ntp_unit), for a backend
 * that runs Darknet's own layer (src/backend/darknet): the section's text
 * as the .cfg gives it, its nodes and its weights in Darknet's order. The
 * other backends run the unrolled nodes. After ntp__graph_finalize: the
 * lstm op's weights are declared by its shape inference. */
static ntp_status add_unit(reader *r, const dn_sect *s, const ntp_darknet_layer *L)
{
    ntp_graph *g = r->g;
    ntp_unit *us = realloc(g->units, ((size_t)g->n_units + 1) * sizeof *us);
    if (!us)
        return ntp__dn_oom(r);
    g->units = us;
    ntp_unit *u = &us[g->n_units];
    memset(u, 0, sizeof *u);
    size_t len = strlen(s->type) + 4;
    for (int i = 0; i < s->n_opts; i++)
        len += strlen(s->opts[i].key) + strlen(s->opts[i].val) + 2;
    u->kind = ntp__strdup("darknet");
    u->text = malloc(len);
    /* [local]'s biases are [F][positions] in the file, [positions][F] in
     * the grouped convolution: one slice per value */
    int64_t cap = 1;
    for (int b = 0; b < L->n_blocks; b++)
        cap += L->blocks[b].kind == NTP_DARKNET_BLOCK_LOCAL
                   ? ntp_shape_numel(&g->tensors[g->nodes[L->blocks[b].node].w[1]].shape) + 1
                   : NTP_DARKNET_MAX_SLICES;
    u->slices = malloc((size_t)cap * sizeof *u->slices);
    if (!u->kind || !u->text || !u->slices) {
        free(u->kind);
        free(u->text);
        free(u->slices);
        return ntp__dn_oom(r);
    }
    size_t at = (size_t)snprintf(u->text, len, "[%s]\n", s->type);
    for (int i = 0; i < s->n_opts; i++)
        at += (size_t)snprintf(u->text + at, len - at, "%s=%s\n", s->opts[i].key, s->opts[i].val);
    u->first = L->first;
    u->last = L->last;
    u->steps = r->steps;
    for (int b = 0; b < L->n_blocks; b++) {
        const ntp_darknet_block *bk = &L->blocks[b];
        if (bk->kind == NTP_DARKNET_BLOCK_LOCAL) {
            const ntp_node *n = &g->nodes[bk->node];
            int64_t pos = n->a.groups, F = ntp_shape_numel(&g->tensors[n->w[1]].shape) / pos;
            for (int64_t f = 0; f < F; f++)
                for (int64_t p = 0; p < pos; p++)
                    u->slices[u->n_slices++] =
                        (ntp_unit_slice){.tensor = n->w[1], .at = p * F + f, .n = 1};
            u->slices[u->n_slices++] = (ntp_unit_slice){
                .tensor = n->w[0], .at = 0, .n = ntp_shape_numel(&g->tensors[n->w[0]].shape)};
            continue;
        }
        ntp_darknet_slice sl[NTP_DARKNET_MAX_SLICES];
        int ns = ntp__darknet_block_slices(g, bk, sl);
        for (int i = 0; i < ns; i++)
            u->slices[u->n_slices++] =
                (ntp_unit_slice){.tensor = sl[i].tensor, .at = sl[i].at, .n = sl[i].n};
    }
    g->n_units++;
    return NTP_STATUS_OK;
}

static ntp_status layer(reader *r, int li)
{
    const dn_sect *s = &r->s[li + 1];
    ntp_darknet_layer *L = &r->layers[li];
    memset(L, 0, sizeof *L);
    L->node = L->last = L->tensor = L->bn_node = -1;
    L->line = s->line;
    L->steps = r->steps;
    L->first = r->g->n_nodes;
    const char *t = s->type;
    for (size_t i = 0; i < N_SECTIONS; i++) {
        if (strcmp(t, sections[i].type) != 0 &&
            !(sections[i].alias && !strcmp(t, sections[i].alias)))
            continue;
        ntp_status st;
        if (sections[i].keys && (st = check_keys(r, s, sections[i].keys)))
            return st;
        if ((st = sections[i].fn(r, s, li, L)))
            return st;
        L->unit = (L->kind == NTP_DARKNET_RNN || L->kind == NTP_DARKNET_GRU ||
                   L->kind == NTP_DARKNET_LSTM || L->kind == NTP_DARKNET_CRNN ||
                   L->kind == NTP_DARKNET_LOCAL) &&
                  L->last == r->g->n_nodes - 1 && L->first <= L->last;
        return NTP_STATUS_OK;
    }
    if (!strcmp(t, "net") || !strcmp(t, "network"))
        return ntp__dn_sect_error(r, s, s->line, NTP_STATUS_PARSE_ERROR,
                                  "a second [net]: expected it once, as the first section");
    char supported[256] = "";
    size_t u = 0;
    for (size_t i = 0; i < N_SECTIONS && u < sizeof supported; i++)
        u += (size_t)snprintf(supported + u, sizeof supported - u, "%s%s", i ? ", " : "",
                              sections[i].type);
    return ntp__dn_sect_error(r, s, s->line, NTP_STATUS_UNSUPPORTED,
                              "layer type '%s' is not supported: expected one of %s "
                              "(docs/darknet.md lists what loads)",
                              t, supported);
}

static const char *const net_keys =
    "width,height,channels,batch,subdivisions,inputs,time_steps,notruth,random,learning_rate,"
    "momentum,decay,adam,B1,B2,eps,max_crop,min_crop,max_ratio,min_ratio,center,clip,angle,"
    "aspect,saturation,exposure,hue,policy,burn_in,power,step,scale,steps,scales,gamma,"
    "max_batches,flip,seen,mask";

/* Where a bad ntp_load_opts.set value is reported: the file and the option,
 * which the CLI words as its --set. */
#define SET_OPTION(r) (&(ntp__where){.file = (r)->src, .option = "ntp_load_opts.set"})

/* An ntp_load_opts.set override of a [net] key, or NULL. */
static const char *net_override(reader *r, const char *key)
{
    size_t n = strlen(key);
    const char *v = NULL;
    for (int i = 0; i < r->opts->n_set; i++)
        if (strncmp(r->opts->set[i], key, n) == 0 && r->opts->set[i][n] == '=')
            v = r->opts->set[i] + n + 1;
    return v;
}

static ntp_status read_net(reader *r)
{
    const dn_sect *s = &r->s[0];
    ntp_status st;
    if (strcmp(s->type, "net") != 0 && strcmp(s->type, "network") != 0)
        return ntp__error(r->ctx, NTP_STATUS_PARSE_ERROR,
                          "%s:%d: [%s]: the first section must be [net] (the input's width, "
                          "height and channels)",
                          r->src, s->line, s->type);
    for (int i = 0; i < r->opts->n_set; i++) {
        const char *e = strchr(r->opts->set[i], '=');
        size_t n = e ? (size_t)(e - r->opts->set[i]) : 0;
        static const char *const ok[] = {"batch", "width", "height", "channels", "weights"};
        bool known = false;
        for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++)
            known |= n == strlen(ok[k]) && strncmp(r->opts->set[i], ok[k], n) == 0;
        if (!known)
            return ntp__error_at(r->ctx, NTP_STATUS_UNKNOWN_NAME, SET_OPTION(r),
                                 "%s: a Darknet .cfg takes batch, width, height, channels and "
                                 "weights=FILE.weights",
                                 r->opts->set[i]);
    }
    if ((st = check_keys(r, s, net_keys)))
        return st;
    int64_t dim[3], inputs;
    static const char *const keys[] = {"width", "height", "channels"};
    if ((st = ntp__dn_get_int(r, s, "time_steps", 1, 1, 1 << 20, &r->steps)) ||
        (st = ntp__dn_get_int(r, s, "inputs", 0, 0, 1 << 30, &inputs)))
        return st;
    /* A text model gives its input as a vector, inputs=, and no image. */
    bool text = inputs > 0 && !ntp__dn_find(s, "width") && !ntp__dn_find(s, "height") &&
                !ntp__dn_find(s, "channels");
    for (int k = 0; k < 3 && text; k++)
        if (net_override(r, keys[k]))
            return ntp__error_at(r->ctx, NTP_STATUS_INVALID_ARGUMENT, SET_OPTION(r),
                                 "%s: this network's input is a vector (inputs=%lld), not an image",
                                 keys[k], (long long)inputs);
    for (int k = 0; k < 3 && !text; k++) {
        const char *v = net_override(r, keys[k]);
        if (v) {
            char *end;
            long long x = strtoll(v, &end, 10);
            if (end == v || *end || x < 1 || x > 1 << 20)
                return ntp__error_at(r->ctx, NTP_STATUS_INVALID_ARGUMENT, SET_OPTION(r),
                                     "%s=%s: expected a positive integer", keys[k], v);
            dim[k] = x;
            continue;
        }
        if ((st = ntp__dn_get_int(r, s, keys[k], 0, 0, 1 << 20, &dim[k])))
            return st;
        if (dim[k] == 0)
            return ntp__dn_sect_error(r, s, s->line, NTP_STATUS_UNSUPPORTED,
                                      "'%s': expected a positive input %s (or, for a vector input, "
                                      "inputs= and no width, height or channels)",
                                      keys[k], keys[k]);
    }
    if (!text && inputs > 0 && inputs != dim[0] * dim[1] * dim[2])
        return ntp__dn_sect_error(r, s, ntp__dn_find(s, "inputs")->line, NTP_STATUS_UNSUPPORTED,
                                  "inputs=%lld with a %lldx%lldx%lld image: expected inputs to be "
                                  "width x height x channels, or no inputs",
                                  (long long)inputs, (long long)dim[0], (long long)dim[1],
                                  (long long)dim[2]);
    const char *b = net_override(r, "batch");
    r->batch = r->opts->batch > 0 ? r->opts->batch : 1;
    if (b) {
        char *end;
        long long x = strtoll(b, &end, 10);
        if (end == b || *end || x < 1 || x > INT32_MAX)
            return ntp__error_at(r->ctx, NTP_STATUS_INVALID_ARGUMENT, SET_OPTION(r),
                                 "batch=%s: expected a positive integer", b);
        r->batch = x;
    }
    /* Darknet's batch is steps x batch rows, step-major (parse_net_options). */
    r->rows = r->batch * r->steps;
    r->weights = net_override(r, "weights");
    ntp_graph *g = r->g;
    g->batch = r->batch;
    /* The batch is a param, as in markup, so that --batch and reports see it. */
    g->params = calloc(1, sizeof *g->params);
    if (!g->params)
        return ntp__dn_oom(r);
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)r->batch);
    g->params[0].name = ntp__strdup("batch");
    g->params[0].value = ntp__strdup(num);
    g->params[0].line = s->line;
    g->n_params = 1;
    if (!g->params[0].name || !g->params[0].value)
        return ntp__dn_oom(r);
    g->inputs = malloc(sizeof *g->inputs);
    int ti = ntp__graph_add_tensor(g, "data", NTP_TENSOR_INPUT);
    if (!g->inputs || ti < 0)
        return ntp__dn_oom(r);
    ntp_tensor *t = &g->tensors[ti];
    if (text) {
        t->shape.ndim = 2;
        t->shape.dim[0] = r->rows;
        t->shape.dim[1] = inputs;
        dim[0] = dim[1] = 1;
        dim[2] = inputs;
    } else {
        t->shape.ndim = 4;
        t->shape.dim[0] = r->rows;
        t->shape.dim[1] = dim[2];
        t->shape.dim[2] = dim[1];
        t->shape.dim[3] = dim[0];
        t->layout = NTP_LAYOUT_NCHW;
    }
    t->dtype = NTP_DTYPE_F32;
    g->inputs[g->n_inputs++] = ti;
    /* The input is "layer -1": what layer 0 reads. */
    ntp_darknet_layer *in = &r->layers[-1];
    memset(in, 0, sizeof *in);
    in->kind = NTP_DARKNET_INPUT;
    in->node = in->last = in->bn_node = -1;
    in->tensor = ti;
    in->c = dim[2];
    in->h = dim[1];
    in->w = dim[0];
    in->flat = text;
    in->steps = r->steps;
    in->line = s->line;
    return NTP_STATUS_OK;
}

/* --- driver ----------------------------------------------------------------- */

static ntp_status read_file(reader *r, char **text)
{
    FILE *f = fopen(r->src, "rb");
    if (!f)
        return ntp__error(r->ctx, NTP_STATUS_IO_ERROR, "%s: cannot open: %s", r->src,
                          strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (size_t k; buf && (k = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
        n += k;
        if (n + 1 == cap) {
            if (cap >= ((size_t)64 << 20)) {
                free(buf);
                fclose(f);
                return ntp__error(r->ctx, NTP_STATUS_PARSE_ERROR,
                                  "%s: larger than 64 MiB: expected a Darknet .cfg text file",
                                  r->src);
            }
            char *b = realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap *= 2;
        }
    }
    bool err = ferror(f);
    fclose(f);
    if (!buf)
        return ntp__dn_oom(r);
    if (err) {
        free(buf);
        return ntp__error(r->ctx, NTP_STATUS_IO_ERROR, "%s: read error", r->src);
    }
    buf[n] = '\0';
    if (memchr(buf, '\0', n)) {
        free(buf);
        return ntp__error(r->ctx, NTP_STATUS_PARSE_ERROR,
                          "%s: holds NUL bytes: expected a Darknet .cfg text file", r->src);
    }
    *text = buf;
    return NTP_STATUS_OK;
}

static ntp_status build(reader *r)
{
    ntp_status st;
    char *text = NULL;
    if ((st = read_file(r, &text)))
        return st;
    st = parse_text(r, text);
    free(text);
    if (st)
        return st;
    if (r->n_s == 0)
        return ntp__error(r->ctx, NTP_STATUS_PARSE_ERROR,
                          "%s:1: no sections: expected [net] and then layers", r->src);
    if (r->n_s == 1 && (!strcmp(r->s[0].type, "net") || !strcmp(r->s[0].type, "network")))
        return ntp__error(r->ctx, NTP_STATUS_GRAPH_ERROR, "%s:%d: [net]: no layers follow it",
                          r->src, r->s[0].line);
    ntp_darknet_layer *base = calloc((size_t)r->n_s, sizeof *base);
    if (!base)
        return ntp__dn_oom(r);
    r->layers = base + 1;
    r->n_layers = r->n_s - 1;
    const char *slash = strrchr(r->src, '/');
    char name[256];
    snprintf(name, sizeof name, "%s", slash ? slash + 1 : r->src);
    char *dot = strrchr(name, '.');
    if (dot)
        *dot = '\0';
    if (!(r->g = ntp__graph_new(name, r->src)))
        return ntp__dn_oom(r);
    r->g->precision = r->opts->set_precision ? r->opts->precision : NTP_DTYPE_F32;
    if ((st = read_net(r)))
        return st;
    for (int li = 0; li < r->n_layers; li++)
        if ((st = layer(r, li)))
            return st;
    if (r->g->n_nodes == 0)
        return ntp__error(r->ctx, NTP_STATUS_GRAPH_ERROR,
                          "%s: no layer computes anything (only pass-through sections)", r->src);
    /* The outputs: the detection heads' inputs, and the last layer's. */
    int last = r->layers[r->n_layers - 1].tensor;
    bool have = false;
    for (int i = 0; i < r->n_outs; i++)
        have |= r->outs[i] == last;
    if (!have) {
        int *o = realloc(r->outs, ((size_t)r->n_outs + 1) * sizeof *o);
        if (!o)
            return ntp__dn_oom(r);
        r->outs = o;
        r->outs[r->n_outs++] = last;
    }
    ntp_graph *g = r->g;
    g->outputs = malloc((size_t)r->n_outs * sizeof *g->outputs);
    if (!g->outputs)
        return ntp__dn_oom(r);
    for (int i = 0; i < r->n_outs; i++) {
        bool dup = false;
        for (int k = 0; k < g->n_outputs; k++)
            dup |= g->outputs[k] == r->outs[i];
        if (!dup && g->tensors[r->outs[i]].kind == NTP_TENSOR_ACTIVATION)
            g->outputs[g->n_outputs++] = r->outs[i];
    }
    if ((st = ntp__graph_finalize(r->ctx, g, r->opts->max_memory)))
        return st;
    for (int li = 0; li < r->n_layers; li++)
        if (r->layers[li].unit && (st = add_unit(r, &r->s[li + 1], &r->layers[li])))
            return st;
    if (r->weights)
        return ntp__darknet_read_weights(r->ctx, g, r->layers, r->n_layers, r->weights);
    return NTP_STATUS_OK;
}

ntp_status ntp__darknet_load_file(ntp_ctx *ctx, const char *path, const ntp_load_opts *opts,
                                  ntp_graph **out, ntp_darknet_layer **layers, int *n_layers)
{
    reader r = {.ctx = ctx, .src = path, .opts = opts};
    *out = NULL;
    if (layers) {
        *layers = NULL;
        *n_layers = 0;
    }
    ntp_status st = build(&r);
    for (int i = 0; i < r.n_s; i++) {
        for (int k = 0; k < r.s[i].n_opts; k++) {
            free(r.s[i].opts[k].key);
            free(r.s[i].opts[k].val);
        }
        free(r.s[i].opts);
        free(r.s[i].type);
    }
    free(r.s);
    free(r.outs);
    ntp_darknet_layer *base = r.layers ? r.layers - 1 : NULL;
    if (st) {
        ntp_graph_free(r.g);
        free(base);
        return st;
    }
    *out = r.g;
    if (layers) {
        memmove(base, base + 1, (size_t)r.n_layers * sizeof *base);
        *layers = base;
        *n_layers = r.n_layers;
    } else {
        free(base);
    }
    return NTP_STATUS_OK;
}
