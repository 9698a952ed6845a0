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
 * as for every other format. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "darknet-impl.h"
#include "graph/op-onnx-impl.h"

/* --- the file as sections of options ------------------------------------ */

typedef struct dn_opt {
    char *key, *val;
    int line;
} dn_opt;

typedef struct dn_sect {
    char *type;
    int line;
    dn_opt *opts;
    int n_opts, cap_opts;
} dn_sect;

typedef struct reader {
    ntp_ctx *ctx;
    const char *src;
    const ntp_load_opts *opts;
    dn_sect *s;
    int n_s, cap_s;
    ntp_graph *g;
    ntp_darknet_layer *layers; /* one per section after [net] */
    int n_layers;
    int64_t batch;
    int64_t steps;       /* [net] time_steps: Darknet's recurrent layers' sequence */
    int64_t rows;        /* batch x steps: the first dim of every tensor */
    const char *weights; /* --set weights=FILE, NULL if none */
    int *outs;           /* tensors of [yolo]/[region]/[detection] inputs */
    int n_outs;
    char name[64]; /* scratch for node names */
} reader;

static ntp_status oom(reader *r)
{
    return ntp__error(r->ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory", r->src);
}

static bool grow(void **p, int *cap, int need, size_t size)
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
            if (!grow((void **)&r->s, &r->cap_s, r->n_s + 1, sizeof *r->s))
                return oom(r);
            dn_sect *s = &r->s[r->n_s++];
            memset(s, 0, sizeof *s);
            l[n - 1] = '\0';
            s->type = ntp__strdup(l + 1);
            s->line = line;
            if (!s->type)
                return oom(r);
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
        if (!grow((void **)&s->opts, &s->cap_opts, s->n_opts + 1, sizeof *s->opts))
            return oom(r);
        *eq = '\0';
        dn_opt *o = &s->opts[s->n_opts++];
        o->key = ntp__strdup(l);
        o->val = ntp__strdup(eq + 1);
        o->line = line;
        if (!o->key || !o->val)
            return oom(r);
    }
    return NTP_STATUS_OK;
}

/* --- options ------------------------------------------------------------ */

/* "FILE:LINE: [type] (layer N): " and the message. */
static ntp_status sect_error(reader *r, const dn_sect *s, int line, ntp_status st, const char *fmt,
                             ...) __attribute__((format(printf, 5, 6)));
static ntp_status sect_error(reader *r, const dn_sect *s, int line, ntp_status st, const char *fmt,
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

static const dn_opt *find(const dn_sect *s, const char *key)
{
    /* Darknet's option_find takes the first. */
    for (int i = 0; i < s->n_opts; i++)
        if (strcmp(s->opts[i].key, key) == 0)
            return &s->opts[i];
    return NULL;
}

static ntp_status get_int(reader *r, const dn_sect *s, const char *key, int64_t dflt, int64_t lo,
                          int64_t hi, int64_t *out)
{
    const dn_opt *o = find(s, key);
    *out = dflt;
    if (!o)
        return NTP_STATUS_OK;
    char *end;
    errno = 0;
    long long v = strtoll(o->val, &end, 10);
    if (errno || end == o->val || *end || v < lo || v > hi)
        return sect_error(r, s, o->line, NTP_STATUS_PARSE_ERROR,
                          "'%s': expected an integer in [%lld, %lld], got '%.32s'", key,
                          (long long)lo, (long long)hi, o->val);
    *out = v;
    return NTP_STATUS_OK;
}

static ntp_status get_float(reader *r, const dn_sect *s, const char *key, double dflt, double *out)
{
    const dn_opt *o = find(s, key);
    *out = dflt;
    if (!o)
        return NTP_STATUS_OK;
    char *end;
    double v = strtod(o->val, &end);
    if (end == o->val || *end)
        return sect_error(r, s, o->line, NTP_STATUS_PARSE_ERROR,
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
            return sect_error(r, s, s->opts[i].line, NTP_STATUS_PARSE_ERROR,
                              "unknown key '%.32s'%s%s%s (known: %s)", k,
                              bd <= 2 ? "; did you mean '" : "", bd <= 2 ? best : "",
                              bd <= 2 ? "'?" : "", known);
    }
    return NTP_STATUS_OK;
}

/* --- building ------------------------------------------------------------- */

/* A node of `op` reading `ins`, with one output tensor of the node's name.
 * Returns the node index, -1 when out of memory. */
static int add_op(reader *r, const char *name, ntp_op op, int line, const int *ins, int n_in)
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
    "linear, leaky, relu, logistic, tanh, elu, selu, mish, swish";

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
static ntp_status act_node(reader *r, int line, const char *base, const char *name, ntp_op op,
                           int *t, int *last)
{
    if (op == NTP_OP_COUNT)
        return NTP_STATUS_OK;
    char nm[96];
    snprintf(nm, sizeof nm, "%s_%s", base, name);
    int ni = add_op(r, nm, op, line, t, 1);
    if (ni < 0)
        return oom(r);
    if (op == NTP_OP_LEAKY_RELU)
        r->g->nodes[ni].a.alpha = 0.1; /* Darknet's leaky slope */
    *t = r->g->nodes[ni].out[0];
    *last = ni;
    return NTP_STATUS_OK;
}

/* The `activation` of a section (default: Darknet's for that section):
 * *op and *name. */
static ntp_status parse_act(reader *r, const dn_sect *s, const char *dflt, ntp_op *op,
                            const char **name)
{
    const dn_opt *o = find(s, "activation");
    *name = o ? o->val : dflt;
    if (!parse_activation(*name, op))
        return sect_error(r, s, o ? o->line : s->line, NTP_STATUS_UNSUPPORTED,
                          "'activation': expected one of %s, got '%.32s'", activations, *name);
    return NTP_STATUS_OK;
}

/* The activation of a section (default: Darknet's for that section), as a
 * node after tensor `*t`; *t becomes its output. */
static ntp_status activation(reader *r, const dn_sect *s, const char *base, const char *dflt,
                             int *t, int *last)
{
    ntp_op op = NTP_OP_COUNT; /* set by parse_act on success */
    const char *name;
    ntp_status st = parse_act(r, s, dflt, &op, &name);
    if (st)
        return st;
    const dn_opt *o = find(s, "activation");
    return act_node(r, o ? o->line : s->line, base, name, op, t, last);
}

/* The batch norm Darknet puts after a convolution or connected layer with
 * batch_normalize=1, "BASE_bn" after tensor *t (epsilon 1e-6: Darknet's
 * normalize_cpu divides by sqrt(var) + 1e-6); *t, *last and *bn_node become
 * its. */
static ntp_status add_bn(reader *r, int line, const char *base, int *t, int *last, int *bn_node)
{
    char nm[96];
    snprintf(nm, sizeof nm, "%s_bn", base);
    int bi = add_op(r, nm, NTP_OP_BATCHNORM, line, t, 1);
    if (bi < 0)
        return oom(r);
    r->g->nodes[bi].a.epsilon = 1e-6;
    *t = r->g->nodes[bi].out[0];
    *last = *bn_node = bi;
    return NTP_STATUS_OK;
}

/* The output of layer `li` as a 4-D [N,C,H,W] tensor: a flat [N,K] one (after
 * a [connected]) is reshaped to [N,K,1,1] once. */
static ntp_status as_4d(reader *r, const dn_sect *s, int li, int *t)
{
    ntp_darknet_layer *L = &r->layers[li];
    if (!L->flat) {
        *t = L->tensor;
        return NTP_STATUS_OK;
    }
    char nm[96];
    snprintf(nm, sizeof nm, "%s_4d", r->g->nodes[L->last].name);
    int ni = add_op(r, nm, NTP_OP_RESHAPE, s->line, &L->tensor, 1);
    if (ni < 0)
        return oom(r);
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
static ntp_status as_flat(reader *r, const dn_sect *s, int li, const char *base, int *t)
{
    const ntp_darknet_layer *P = &r->layers[li];
    *t = P->tensor;
    if (P->flat)
        return NTP_STATUS_OK;
    char nm[96];
    snprintf(nm, sizeof nm, "%s_flatten", base);
    int fi = add_op(r, nm, NTP_OP_FLATTEN, s->line, t, 1);
    if (fi < 0)
        return oom(r);
    r->g->nodes[fi].a.axis = 1;
    *t = r->g->nodes[fi].out[0];
    return NTP_STATUS_OK;
}

/* The layer number a [route] or [shortcut] names: negative is relative. */
static ntp_status layer_ref(reader *r, const dn_sect *s, int line, const char *key, long v, int li,
                            int *out)
{
    long k = v < 0 ? li + v : v;
    if (k < 0 || k >= li)
        return sect_error(r, s, line, NTP_STATUS_GRAPH_ERROR,
                          "'%s': %ld names layer %ld, expected a layer before this one (0 to %d)",
                          key, v, k, li - 1);
    if (r->layers[k].tensor < 0)
        return sect_error(r, s, line, NTP_STATUS_GRAPH_ERROR,
                          "'%s': layer %ld ([%s]) has no output to read", key, k, r->s[k + 1].type);
    *out = (int)k;
    return NTP_STATUS_OK;
}

static ntp_status conv_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t filters, size, stride, pad, padding, groups, bn, binary, xnor;
    if ((st = get_int(r, s, "filters", 1, 1, 1 << 20, &filters)) ||
        (st = get_int(r, s, "size", 1, 1, 1024, &size)) ||
        (st = get_int(r, s, "stride", 1, 1, 1024, &stride)) ||
        (st = get_int(r, s, "pad", 0, 0, 1, &pad)) ||
        (st = get_int(r, s, "padding", 0, 0, 1024, &padding)) ||
        (st = get_int(r, s, "groups", 1, 1, 1 << 20, &groups)) ||
        (st = get_int(r, s, "batch_normalize", 0, 0, 1, &bn)) ||
        (st = get_int(r, s, "binary", 0, 0, 1, &binary)) ||
        (st = get_int(r, s, "xnor", 0, 0, 1, &xnor)))
        return st;
    if (binary || xnor)
        return sect_error(r, s, s->line, NTP_STATUS_UNSUPPORTED,
                          "binary and xnor convolutions are not supported: expected binary=0 "
                          "and xnor=0");
    if (!find(s, "filters"))
        ntp__warn(r->ctx, "%s:%d: [convolutional] (layer %d): no 'filters', assuming 1", r->src,
                  s->line, li);
    if (pad)
        padding = size / 2; /* Darknet: pad=1 means "same" for odd sizes */
    int in;
    if ((st = as_4d(r, s, li - 1, &in)))
        return st;
    const ntp_darknet_layer *P = &r->layers[li - 1];
    if (P->c % groups || filters % groups)
        return sect_error(r, s, s->line, NTP_STATUS_SHAPE_ERROR,
                          "groups=%lld must divide both the input channels %lld and filters %lld",
                          (long long)groups, (long long)P->c, (long long)filters);
    int64_t oh = (P->h + 2 * padding - size) / stride + 1,
            ow = (P->w + 2 * padding - size) / stride + 1;
    if (P->h + 2 * padding < size || P->w + 2 * padding < size)
        return sect_error(r, s, s->line, NTP_STATUS_SHAPE_ERROR,
                          "size=%lld does not fit the %lldx%lld input with padding %lld",
                          (long long)size, (long long)P->h, (long long)P->w, (long long)padding);
    snprintf(r->name, sizeof r->name, "conv%d", li);
    int ni = add_op(r, r->name, NTP_OP_CONV, s->line, &in, 1);
    if (ni < 0)
        return oom(r);
    ntp_attrs *a = &r->g->nodes[ni].a;
    a->filters = filters;
    a->n_kernel = 1;
    a->kernel[0] = size;
    a->n_stride = 1;
    a->stride[0] = stride;
    a->n_pad = 1;
    a->pad[0] = padding;
    a->pad_kind = NTP_PAD_EXPLICIT;
    a->groups = groups;
    a->bias = !bn; /* with batch_normalize the biases are the norm's shift */
    L->node = L->last = ni;
    int t = r->g->nodes[ni].out[0];
    if ((bn && (st = add_bn(r, s->line, r->name, &t, &L->last, &L->bn_node))) ||
        (st = activation(r, s, r->name, "logistic", &t, &L->last)))
        return st;
    L->blocks[L->n_blocks++] = (ntp_darknet_block){NTP_DARKNET_BLOCK_CONV, ni, L->bn_node, 0};
    L->tensor = t;
    L->c = filters;
    L->h = oh;
    L->w = ow;
    L->kind = NTP_DARKNET_CONV;
    L->bn = bn;
    return NTP_STATUS_OK;
}

static ntp_status connected_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t output, bn;
    if ((st = get_int(r, s, "output", 1, 1, 1 << 30, &output)) ||
        (st = get_int(r, s, "batch_normalize", 0, 0, 1, &bn)))
        return st;
    int t;
    snprintf(r->name, sizeof r->name, "fc%d", li);
    if ((st = as_flat(r, s, li - 1, r->name, &t)))
        return st;
    int ni = add_op(r, r->name, NTP_OP_FC, s->line, &t, 1);
    if (ni < 0)
        return oom(r);
    r->g->nodes[ni].a.units = output;
    r->g->nodes[ni].a.bias = !bn;
    L->node = L->last = ni;
    t = r->g->nodes[ni].out[0];
    if ((bn && (st = add_bn(r, s->line, r->name, &t, &L->last, &L->bn_node))) ||
        (st = activation(r, s, r->name, "logistic", &t, &L->last)))
        return st;
    L->blocks[L->n_blocks++] = (ntp_darknet_block){NTP_DARKNET_BLOCK_FC, ni, L->bn_node, 0};
    L->tensor = t;
    L->c = output;
    L->h = L->w = 1;
    L->flat = true;
    L->kind = NTP_DARKNET_CONNECTED;
    L->bn = bn;
    return NTP_STATUS_OK;
}

static ntp_status maxpool_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t stride, size, padding;
    if ((st = get_int(r, s, "stride", 1, 1, 1024, &stride)) ||
        (st = get_int(r, s, "size", stride, 1, 1024, &size)) ||
        (st = get_int(r, s, "padding", size - 1, 0, 1024, &padding)))
        return st;
    int in;
    if ((st = as_4d(r, s, li - 1, &in)))
        return st;
    const ntp_darknet_layer *P = &r->layers[li - 1];
    /* Darknet pads `padding` in all, padding/2 before (forward_maxpool_layer's
     * offset -pad/2) and the rest after; padded cells never win. */
    int64_t before = padding / 2, after = padding - before;
    if (before > size / 2 || after > size / 2)
        return sect_error(r, s, s->line, NTP_STATUS_UNSUPPORTED,
                          "padding=%lld is more than a %lld-wide window can cover on each side",
                          (long long)padding, (long long)size);
    if (P->h + padding < size || P->w + padding < size)
        return sect_error(r, s, s->line, NTP_STATUS_SHAPE_ERROR,
                          "size=%lld does not fit the %lldx%lld input", (long long)size,
                          (long long)P->h, (long long)P->w);
    snprintf(r->name, sizeof r->name, "max%d", li);
    int ni = add_op(r, r->name, NTP_OP_MAXPOOL, s->line, &in, 1);
    if (ni < 0)
        return oom(r);
    ntp_attrs *a = &r->g->nodes[ni].a;
    a->n_kernel = 1;
    a->kernel[0] = size;
    a->n_stride = 1;
    a->stride[0] = stride;
    a->n_pad = 4;
    a->pad[0] = a->pad[1] = before;
    a->pad[2] = a->pad[3] = after;
    a->pad_kind = NTP_PAD_EXPLICIT;
    L->node = L->last = ni;
    L->tensor = r->g->nodes[ni].out[0];
    L->c = P->c;
    L->h = (P->h + padding - size) / stride + 1;
    L->w = (P->w + padding - size) / stride + 1;
    L->kind = NTP_DARKNET_MAXPOOL;
    return NTP_STATUS_OK;
}

static ntp_status route_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    const dn_opt *o = find(s, "layers");
    if (!o || !o->val[0])
        return sect_error(r, s, s->line, NTP_STATUS_PARSE_ERROR,
                          "'layers': expected a list of layer numbers such as -1,-4");
    int ins[NTP_MAX_INPUTS], n = 0;
    int64_t c = 0, h = 0, w = 0;
    for (const char *p = o->val; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || (*end && *end != ','))
            return sect_error(r, s, o->line, NTP_STATUS_PARSE_ERROR,
                              "'layers': expected comma-separated integers, got '%.64s'", o->val);
        if (n == NTP_MAX_INPUTS)
            return sect_error(r, s, o->line, NTP_STATUS_UNSUPPORTED,
                              "'layers': more than %d layers", NTP_MAX_INPUTS);
        int k = 0; /* set by layer_ref on success; gcc -O3 cannot see it */
        if ((st = layer_ref(r, s, o->line, "layers", v, li, &k)) || (st = as_4d(r, s, k, &ins[n])))
            return st;
        const ntp_darknet_layer *R = &r->layers[k];
        if (n == 0) {
            h = R->h;
            w = R->w;
        } else if (R->h != h || R->w != w) {
            return sect_error(r, s, o->line, NTP_STATUS_SHAPE_ERROR,
                              "'layers': layer %d is %lldx%lld, expected %lldx%lld as the first "
                              "one (Darknet concatenates channels of equal sizes only)",
                              k, (long long)R->h, (long long)R->w, (long long)h, (long long)w);
        }
        c += R->c;
        n++;
        p = *end ? end + 1 : end;
    }
    snprintf(r->name, sizeof r->name, "route%d", li);
    int ni = add_op(r, r->name, NTP_OP_CONCAT, s->line, ins, n);
    if (ni < 0)
        return oom(r);
    r->g->nodes[ni].a.axis = 1;
    L->node = L->last = ni;
    L->tensor = r->g->nodes[ni].out[0];
    L->c = c;
    L->h = h;
    L->w = w;
    L->kind = NTP_DARKNET_ROUTE;
    return NTP_STATUS_OK;
}

static ntp_status shortcut_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t from;
    double alpha, beta;
    if ((st = get_int(r, s, "from", 0, INT32_MIN, INT32_MAX, &from)) ||
        (st = get_float(r, s, "alpha", 1, &alpha)) || (st = get_float(r, s, "beta", 1, &beta)))
        return st;
    const dn_opt *o = find(s, "from");
    if (!o)
        return sect_error(r, s, s->line, NTP_STATUS_PARSE_ERROR,
                          "'from': expected the layer to add, such as from=-3");
    if (alpha != 1 || beta != 1)
        return sect_error(r, s, s->line, NTP_STATUS_UNSUPPORTED,
                          "alpha=%g, beta=%g: only the plain sum (alpha=1, beta=1) is supported",
                          alpha, beta);
    int k = 0, ins[2]; /* k: set by layer_ref on success (gcc -O3 cannot see it) */
    if ((st = layer_ref(r, s, o->line, "from", (long)from, li, &k)) ||
        (st = as_4d(r, s, li - 1, &ins[0])) || (st = as_4d(r, s, k, &ins[1])))
        return st;
    const ntp_darknet_layer *P = &r->layers[li - 1], *F = &r->layers[k];
    if (F->c != P->c || F->h != P->h || F->w != P->w) {
        /* Darknet's shortcut_cpu adds the `from` layer sampled every
         * w_from/w stride into the first min(c) channels and leaves the
         * others: a strided, channel-cut slice, zero-padded to the channels. */
        int64_t stride = F->w / P->w > 1 ? F->w / P->w : 1;
        if (F->h / P->h != F->w / P->w || (F->w + stride - 1) / stride != P->w ||
            (F->h + stride - 1) / stride != P->h)
            return sect_error(r, s, o->line, NTP_STATUS_UNSUPPORTED,
                              "'from': layer %d is %lldx%lldx%lld, the previous layer "
                              "%lldx%lldx%lld: expected the same size or a whole multiple of it",
                              k, (long long)F->w, (long long)F->h, (long long)F->c, (long long)P->w,
                              (long long)P->h, (long long)P->c);
        int64_t minc = F->c < P->c ? F->c : P->c;
        char nm[96];
        if (stride > 1 || F->c > P->c) {
            snprintf(nm, sizeof nm, "shortcut%d_sample", li);
            int si = add_op(r, nm, NTP_OP_SLICE, s->line, &ins[1], 1);
            if (si < 0)
                return oom(r);
            ntp_attrs *a = &r->g->nodes[si].a;
            a->n_pads = a->n_perm = a->n_shape = 3;
            const int64_t ends[3] = {minc, F->h, F->w}, steps[3] = {1, stride, stride};
            for (int d = 0; d < 3; d++) {
                a->pads[d] = 0;
                a->pads[NTP_SLICE_ENDS + d] = ends[d];
                a->perm[d] = d + 1;
                a->shape[d] = steps[d];
            }
            ins[1] = r->g->nodes[si].out[0];
        }
        if (minc < P->c) {
            snprintf(nm, sizeof nm, "shortcut%d_pad", li);
            int pi = add_op(r, nm, NTP_OP_PAD, s->line, &ins[1], 1);
            if (pi < 0)
                return oom(r);
            ntp_attrs *a = &r->g->nodes[pi].a;
            a->n_pads = 8;
            memset(a->pads, 0, sizeof a->pads);
            a->pads[4 + 1] = P->c - minc;
            a->pad_mode = NTP_PADMODE_CONSTANT;
            a->value = 0;
            ins[1] = r->g->nodes[pi].out[0];
        }
    }
    snprintf(r->name, sizeof r->name, "shortcut%d", li);
    int ni = add_op(r, r->name, NTP_OP_ADD, s->line, ins, 2);
    if (ni < 0)
        return oom(r);
    L->node = L->last = ni;
    int t = r->g->nodes[ni].out[0];
    if ((st = activation(r, s, r->name, "linear", &t, &L->last)))
        return st;
    L->tensor = t;
    L->c = P->c;
    L->h = P->h;
    L->w = P->w;
    L->kind = NTP_DARKNET_SHORTCUT;
    return NTP_STATUS_OK;
}

static ntp_status upsample_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t stride;
    double scale;
    if ((st = get_int(r, s, "stride", 2, 1, 1024, &stride)) ||
        (st = get_float(r, s, "scale", 1, &scale)))
        return st;
    if (scale != 1)
        return sect_error(r, s, s->line, NTP_STATUS_UNSUPPORTED,
                          "scale=%g: only scale=1 is supported", scale);
    int in;
    if ((st = as_4d(r, s, li - 1, &in)))
        return st;
    const ntp_darknet_layer *P = &r->layers[li - 1];
    snprintf(r->name, sizeof r->name, "upsample%d", li);
    int ni = add_op(r, r->name, NTP_OP_RESIZE, s->line, &in, 1);
    if (ni < 0)
        return oom(r);
    ntp_attrs *a = &r->g->nodes[ni].a;
    /* out[y][x] = in[y/stride][x/stride]: nearest, asymmetric, floor. */
    a->n_shape = 4;
    a->shape[0] = r->rows;
    a->shape[1] = P->c;
    a->shape[2] = P->h * stride;
    a->shape[3] = P->w * stride;
    a->resize.mode = NTP_RESIZE_NEAREST;
    a->resize.coord = NTP_RESIZE_ASYMMETRIC;
    a->resize.nearest = NTP_RESIZE_FLOOR;
    L->node = L->last = ni;
    L->tensor = r->g->nodes[ni].out[0];
    L->c = P->c;
    L->h = P->h * stride;
    L->w = P->w * stride;
    L->kind = NTP_DARKNET_UPSAMPLE;
    return NTP_STATUS_OK;
}

static ntp_status avgpool_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int in;
    if ((st = as_4d(r, s, li - 1, &in)))
        return st;
    snprintf(r->name, sizeof r->name, "avg%d", li);
    int ni = add_op(r, r->name, NTP_OP_GLOBAL_AVGPOOL, s->line, &in, 1);
    if (ni < 0)
        return oom(r);
    L->node = L->last = ni;
    L->tensor = r->g->nodes[ni].out[0];
    L->c = r->layers[li - 1].c;
    L->h = L->w = 1;
    L->kind = NTP_DARKNET_AVGPOOL;
    return NTP_STATUS_OK;
}

static ntp_status dropout_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    double p;
    if ((st = get_float(r, s, "probability", 0.5, &p)))
        return st;
    const ntp_darknet_layer *P = &r->layers[li - 1];
    snprintf(r->name, sizeof r->name, "dropout%d", li);
    int ni = add_op(r, r->name, NTP_OP_DROPOUT, s->line, &P->tensor, 1);
    if (ni < 0)
        return oom(r);
    int line = L->line, first = L->first;
    *L = *P;
    L->line = line;
    L->first = first;
    L->n_blocks = 0;
    L->bn_node = -1;
    L->node = L->last = ni;
    L->tensor = r->g->nodes[ni].out[0];
    L->kind = NTP_DARKNET_DROPOUT;
    L->bn = false;
    return NTP_STATUS_OK;
}

static ntp_status softmax_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t groups;
    double temp;
    if ((st = get_int(r, s, "groups", 1, 1, INT32_MAX, &groups)) ||
        (st = get_float(r, s, "temperature", 1, &temp)))
        return st;
    if (groups != 1 || temp != 1 || find(s, "tree") || find(s, "spatial"))
        return sect_error(r, s, s->line, NTP_STATUS_UNSUPPORTED,
                          "only a plain softmax over each image's outputs is supported: "
                          "expected groups=1, temperature=1, no tree, no spatial");
    const ntp_darknet_layer *P = &r->layers[li - 1];
    int t = P->tensor;
    if (!P->flat) {
        snprintf(r->name, sizeof r->name, "softmax%d_flatten", li);
        int fi = add_op(r, r->name, NTP_OP_FLATTEN, s->line, &t, 1);
        if (fi < 0)
            return oom(r);
        r->g->nodes[fi].a.axis = 1;
        t = r->g->nodes[fi].out[0];
    }
    snprintf(r->name, sizeof r->name, "softmax%d", li);
    int ni = add_op(r, r->name, NTP_OP_SOFTMAX, s->line, &t, 1);
    if (ni < 0)
        return oom(r);
    r->g->nodes[ni].a.axis = -1;
    L->node = L->last = ni;
    L->tensor = r->g->nodes[ni].out[0];
    L->c = P->c * P->h * P->w;
    L->h = L->w = 1;
    L->flat = true;
    L->kind = NTP_DARKNET_SOFTMAX;
    return NTP_STATUS_OK;
}

/* [reorg] stride=s: Darknet's space-to-depth, [C,H,W] -> [C*s*s, H/s, W/s],
 * as reshape, transpose, reshape. The shapes and the (zero) FLOPs are
 * Darknet's; the order of the channels is the plain space-to-depth one, not
 * reorg_cpu's (docs/darknet.md). */
static ntp_status reorg_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t stride;
    if ((st = get_int(r, s, "stride", 1, 1, 1024, &stride)))
        return st;
    if (find(s, "reverse") || find(s, "flatten") || find(s, "extra"))
        return sect_error(r, s, s->line, NTP_STATUS_UNSUPPORTED,
                          "only the forward reorg is supported: expected no reverse, flatten "
                          "or extra");
    int t;
    if ((st = as_4d(r, s, li - 1, &t)))
        return st;
    const ntp_darknet_layer *P = &r->layers[li - 1];
    if (P->h % stride || P->w % stride)
        return sect_error(r, s, s->line, NTP_STATUS_SHAPE_ERROR,
                          "stride=%lld must divide the %lldx%lld input", (long long)stride,
                          (long long)P->h, (long long)P->w);
    int64_t c = P->c, h = P->h / stride, w = P->w / stride;
    const int64_t six[6] = {0, c, h, stride, w, stride}, perm[6] = {0, 3, 5, 1, 2, 4},
                  four[4] = {0, c * stride * stride, h, w};
    static const char *const part[] = {"split", "move", ""};
    for (int step = 0; step < 3; step++) {
        char nm[96];
        snprintf(nm, sizeof nm, "reorg%d%s%s", li, part[step][0] ? "_" : "", part[step]);
        int ni = add_op(r, nm, step == 1 ? NTP_OP_TRANSPOSE : NTP_OP_RESHAPE, s->line, &t, 1);
        if (ni < 0)
            return oom(r);
        ntp_attrs *a = &r->g->nodes[ni].a;
        if (step == 1) {
            a->n_perm = 6;
            memcpy(a->perm, perm, sizeof perm);
        } else {
            a->n_shape = step == 0 ? 6 : 4;
            memcpy(a->shape, step == 0 ? six : four, (size_t)a->n_shape * sizeof six[0]);
        }
        t = r->g->nodes[ni].out[0];
        L->node = L->last = ni;
    }
    L->tensor = t;
    L->c = c * stride * stride;
    L->h = h;
    L->w = w;
    L->kind = NTP_DARKNET_REORG;
    return NTP_STATUS_OK;
}

/* [crop]: at inference Darknet takes the centre crop_height x crop_width
 * window (forward_crop_layer with train=0), as a slice. It also maps each
 * value x to 2x-1 (unless [net] noadjust=1); that input scaling is left out
 * here (docs/darknet.md): it is an element-wise map Darknet counts no FLOPs
 * for, and random weights do not care. The augmentation keys (flip, angle,
 * saturation, exposure, hue, shift) are training-only. */
static ntp_status crop_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t ch, cw;
    if ((st = get_int(r, s, "crop_height", 1, 1, 1 << 20, &ch)) ||
        (st = get_int(r, s, "crop_width", 1, 1, 1 << 20, &cw)))
        return st;
    int in;
    if ((st = as_4d(r, s, li - 1, &in)))
        return st;
    const ntp_darknet_layer *P = &r->layers[li - 1];
    if (ch > P->h || cw > P->w)
        return sect_error(r, s, s->line, NTP_STATUS_SHAPE_ERROR,
                          "crop %lldx%lld is larger than the %lldx%lld input", (long long)cw,
                          (long long)ch, (long long)P->w, (long long)P->h);
    snprintf(r->name, sizeof r->name, "crop%d", li);
    int ni = add_op(r, r->name, NTP_OP_SLICE, s->line, &in, 1);
    if (ni < 0)
        return oom(r);
    ntp_attrs *a = &r->g->nodes[ni].a;
    int64_t dh = (P->h - ch) / 2, dw = (P->w - cw) / 2;
    a->n_pads = a->n_perm = 2;
    a->n_shape = 0;
    a->pads[0] = dh;
    a->pads[1] = dw;
    a->pads[NTP_SLICE_ENDS + 0] = dh + ch;
    a->pads[NTP_SLICE_ENDS + 1] = dw + cw;
    a->perm[0] = 2;
    a->perm[1] = 3;
    L->node = L->last = ni;
    L->tensor = r->g->nodes[ni].out[0];
    L->c = P->c;
    L->h = ch;
    L->w = cw;
    L->kind = NTP_DARKNET_CROP;
    return NTP_STATUS_OK;
}

/* --- Darknet's recurrent and locally connected layers ------------------------
 *
 * Darknet's [rnn], [gru] and [crnn] are its own cells, built from inner
 * connected (or 3x3 convolutional) layers each with its own batch norm and
 * activation, and none is the standard cell ntprof's rnn and gru ops
 * compute. So they are unrolled over [net] time_steps as Darknet runs them
 * (forward_rnn_layer, forward_gru_layer, forward_crnn_layer): the layers
 * that read the input run once over all steps x batch rows (rows are
 * independent), the recurrent ones once per step on the state, the steps
 * sharing their weights, and the states start at zero (a fresh network;
 * Darknet keeps them between calls at inference). [lstm] is the standard
 * LSTM and becomes ntprof's lstm op. [local] becomes im2col (pad, strided
 * slices, concat, transpose) and a grouped 1x1 convolution, one group per
 * output position. */

/* One inner layer of a recurrent section: an fc, or Darknet's 3x3, stride 1,
 * pad 1 convolution ([crnn]), with its batch norm and activation. */
typedef struct unit {
    ntp_op op;
    int64_t units, in; /* outputs (filters) and inputs (channels) */
    bool bn;
    ntp_op act; /* NTP_OP_COUNT: linear */
    const char *act_name;
} unit;

/* Weight `suffix` of node ni made here rather than by shape inference
 * (which takes a node's weights as given when they exist), so that later
 * time steps' nodes can share it. */
static ntp_status own_weight(reader *r, int ni, const char *suffix, ntp_tensor_kind kind,
                             ntp_shape sh)
{
    char nm[160];
    snprintf(nm, sizeof nm, "%s.%s", r->g->nodes[ni].name, suffix);
    int ti = ntp__graph_add_tensor(r->g, nm, kind);
    if (ti < 0)
        return oom(r);
    r->g->tensors[ti].shape = sh;
    ntp_node *n = &r->g->nodes[ni];
    n->w[n->n_w++] = ti;
    return NTP_STATUS_OK;
}

static void share_weights(reader *r, int from, int to)
{
    ntp_node *a = &r->g->nodes[from], *b = &r->g->nodes[to];
    memcpy(b->w, a->w, sizeof b->w);
    b->n_w = a->n_w;
}

static ntp_shape shp(int nd, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    ntp_shape s = {nd, {d0, d1, d2, d3}};
    return s;
}

/* Inner layer u on tensor *t, named BASE (BASE_bn, BASE_<act>); *t becomes
 * its output. With share >= 0 it uses node share's weights (and share_bn's);
 * with own, it makes its own for later steps to share. */
static ntp_status unit_node(reader *r, const dn_sect *s, const unit *u, const char *base, int *t,
                            int share, int share_bn, bool own, int *node, int *bn_node)
{
    ntp_status st;
    int ni = add_op(r, base, u->op, s->line, t, 1);
    if (ni < 0)
        return oom(r);
    ntp_attrs *a = &r->g->nodes[ni].a;
    if (u->op == NTP_OP_FC) {
        a->units = u->units;
    } else {
        a->filters = u->units;
        a->n_kernel = a->n_stride = a->n_pad = 1;
        a->kernel[0] = 3;
        a->stride[0] = 1;
        a->pad[0] = 1;
        a->pad_kind = NTP_PAD_EXPLICIT;
        a->groups = 1;
    }
    a->bias = !u->bn;
    *t = r->g->nodes[ni].out[0];
    *node = ni;
    *bn_node = -1;
    int last = ni;
    if ((u->bn && (st = add_bn(r, s->line, base, t, &last, bn_node))) ||
        (st = act_node(r, s->line, base, u->act_name, u->act, t, &last)))
        return st;
    if (share >= 0) {
        share_weights(r, share, ni);
        if (u->bn)
            share_weights(r, share_bn, *bn_node);
        return NTP_STATUS_OK;
    }
    if (!own)
        return NTP_STATUS_OK;
    ntp_shape w = u->op == NTP_OP_FC ? shp(2, u->units, u->in, 0, 0)
                                     : shp(4, u->units, u->in, 3, 3),
              c = shp(1, u->units, 0, 0, 0);
    if ((st = own_weight(r, ni, "W", NTP_TENSOR_WEIGHT, w)) ||
        (!u->bn && (st = own_weight(r, ni, "b", NTP_TENSOR_WEIGHT, c))))
        return st;
    if (u->bn && ((st = own_weight(r, *bn_node, "scale", NTP_TENSOR_WEIGHT, c)) ||
                  (st = own_weight(r, *bn_node, "bias", NTP_TENSOR_WEIGHT, c)) ||
                  (st = own_weight(r, *bn_node, "mean", NTP_TENSOR_BUFFER, c)) ||
                  (st = own_weight(r, *bn_node, "var", NTP_TENSOR_BUFFER, c))))
        return st;
    return NTP_STATUS_OK;
}

/* A zero state of shape sh ([batch, ...]): a constant, "BASE_h0". */
static ntp_status zero_state(reader *r, const dn_sect *s, const char *base, ntp_shape sh, int *t)
{
    char nm[96];
    snprintf(nm, sizeof nm, "%s_h0", base);
    int ni = add_op(r, nm, NTP_OP_CONSTANT, s->line, NULL, 0);
    if (ni < 0)
        return oom(r);
    ntp_attrs *a = &r->g->nodes[ni].a;
    a->n_shape = sh.ndim;
    for (int d = 0; d < sh.ndim; d++)
        a->shape[d] = sh.dim[d];
    a->constant.trainable = false;
    ntp_status st = own_weight(r, ni, "value", NTP_TENSOR_BUFFER, sh);
    if (st)
        return st;
    ntp_tensor *v = &r->g->tensors[r->g->nodes[ni].w[0]];
    v->data = calloc((size_t)ntp_shape_numel(&sh), sizeof(float));
    if (!v->data)
        return oom(r);
    v->data_dtype = NTP_DTYPE_F32;
    *t = r->g->nodes[ni].out[0];
    return NTP_STATUS_OK;
}

/* Step `step`'s rows of `all` ([steps x batch, ...], step-major), "NAME". */
static ntp_status step_rows(reader *r, const dn_sect *s, const char *name, int all, int step,
                            int *t)
{
    if (r->steps == 1) {
        *t = all;
        return NTP_STATUS_OK;
    }
    int ni = add_op(r, name, NTP_OP_SLICE, s->line, &all, 1);
    if (ni < 0)
        return oom(r);
    ntp_attrs *a = &r->g->nodes[ni].a;
    a->n_pads = a->n_perm = 1;
    a->n_shape = 0;
    a->pads[0] = step * r->batch;
    a->pads[NTP_SLICE_ENDS] = (step + 1) * r->batch;
    a->perm[0] = 0;
    *t = r->g->nodes[ni].out[0];
    return NTP_STATUS_OK;
}

/* Concatenate ts[0..n) on `axis`, NTP_MAX_INPUTS at a time ("BASE_catK"). */
static ntp_status concat_all(reader *r, const dn_sect *s, const char *base, int axis, int *ts,
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
            int ni = add_op(r, nm, NTP_OP_CONCAT, s->line, &ts[i], cnt);
            if (ni < 0)
                return oom(r);
            r->g->nodes[ni].a.axis = axis;
            ts[m++] = r->g->nodes[ni].out[0];
        }
        n = m;
    }
    *out = ts[0];
    return NTP_STATUS_OK;
}

/* An element-wise node of two inputs, "NAME". */
static ntp_status binary(reader *r, const dn_sect *s, const char *name, ntp_op op, int a, int b,
                         int *t)
{
    int ins[2] = {a, b};
    int ni = add_op(r, name, op, s->line, ins, 2);
    if (ni < 0)
        return oom(r);
    *t = r->g->nodes[ni].out[0];
    return NTP_STATUS_OK;
}

static ntp_status unary(reader *r, const dn_sect *s, const char *name, ntp_op op, int *t)
{
    int ni = add_op(r, name, op, s->line, t, 1);
    if (ni < 0)
        return oom(r);
    *t = r->g->nodes[ni].out[0];
    return NTP_STATUS_OK;
}

/* "BASE_PART" or, with more than one time step, "BASE_PART_tSTEP". */
static const char *step_name(reader *r, char *buf, size_t len, const char *base, const char *part,
                             int step)
{
    if (r->steps == 1)
        snprintf(buf, len, "%s_%s", base, part);
    else
        snprintf(buf, len, "%s_%s_t%d", base, part, step);
    return buf;
}

static void add_block(ntp_darknet_layer *L, ntp_darknet_block_kind kind, int node, int bn_node,
                      int gate)
{
    L->blocks[L->n_blocks++] = (ntp_darknet_block){kind, node, bn_node, gate};
}

/* The state arrays: one tensor per step. */
static int *step_tensors(reader *r)
{
    return malloc((size_t)r->steps * sizeof(int));
}

/* Darknet's [crnn] and [local] read their input as an image: a vector
 * input or a recurrent layer's output has none (their out_c, out_h, out_w
 * are 0 in Darknet); a [connected]'s is 1x1. */
static ntp_status need_image(reader *r, const dn_sect *s, int li)
{
    const ntp_darknet_layer *P = &r->layers[li - 1];
    if (P->flat && P->kind != NTP_DARKNET_CONNECTED)
        return sect_error(r, s, s->line, NTP_STATUS_UNSUPPORTED,
                          "expected an image input (width, height and channels), got a vector "
                          "of %lld",
                          (long long)(P->c * P->h * P->w));
    return NTP_STATUS_OK;
}

/* The previous layer as rows of features (as_flat), base naming what is
 * added; *in_c the features per row. */
static ntp_status flat_input(reader *r, const dn_sect *s, int li, const char *base, int *x,
                             int64_t *in_c)
{
    ntp_status st = as_flat(r, s, li - 1, base, x);
    const ntp_darknet_layer *P = &r->layers[li - 1];
    *in_c = P->c * P->h * P->w;
    return st;
}

/* After the steps (st: how they went), every step's state stacked into
 * base_states as *all; frees states. */
static ntp_status stack_states(reader *r, const dn_sect *s, const char *base, int *states,
                               ntp_status st, int *all)
{
    if (!st) {
        char nm[96];
        snprintf(nm, sizeof nm, "%s_states", base);
        st = concat_all(r, s, nm, 0, states, (int)r->steps, all);
    }
    free(states);
    return st;
}

/* A recurrent layer's output: rows of `output` features in tensor, from
 * its nodes first..last. */
static void flat_output(ntp_darknet_layer *L, int first, int last, int tensor, int64_t output,
                        ntp_darknet_kind kind)
{
    L->node = first;
    L->last = last;
    L->tensor = tensor;
    L->c = output;
    L->h = L->w = 1;
    L->flat = true;
    L->kind = kind;
}

/* [rnn] and [crnn]: per step, state = input(x_t) + self(state) (+ the old
 * state with shortcut=1), each inner layer with the section's activation
 * (Darknet's default logistic) and batch norm; the output layer reads every
 * step's state. */
static ntp_status rnn_common(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L, bool conv)
{
    ntp_status st;
    int64_t output, hidden = 0, bn, shortcut;
    if (conv) {
        if ((st = get_int(r, s, "output_filters", 1, 1, 1 << 20, &output)) ||
            (st = get_int(r, s, "hidden_filters", 1, 1, 1 << 20, &hidden)))
            return st;
    } else if ((st = get_int(r, s, "output", 1, 1, 1 << 30, &output))) {
        return st;
    }
    ntp_op act;
    const char *act_name;
    if ((st = get_int(r, s, "batch_normalize", 0, 0, 1, &bn)) ||
        (st = get_int(r, s, "shortcut", 0, 0, 1, &shortcut)) ||
        (st = parse_act(r, s, "logistic", &act, &act_name)))
        return st;
    char base[32], nm[96];
    snprintf(base, sizeof base, "%s%d", conv ? "crnn" : "rnn", li);
    const ntp_darknet_layer *P = &r->layers[li - 1];
    int x;
    ntp_shape state;
    int64_t in_c;
    if (conv) {
        if ((st = need_image(r, s, li)) || (st = as_4d(r, s, li - 1, &x)))
            return st;
        P = &r->layers[li - 1];
        if (P->h != P->w)
            return sect_error(r, s, s->line, NTP_STATUS_UNSUPPORTED,
                              "the input is %lldx%lld: expected a square one (Darknet's "
                              "parse_crnn passes the width as the height)",
                              (long long)P->w, (long long)P->h);
        in_c = P->c;
        state = shp(4, r->batch, hidden, P->h, P->w);
    } else {
        if ((st = flat_input(r, s, li, base, &x, &in_c)))
            return st;
        hidden = output;
        state = shp(2, r->batch, output, 0, 0);
    }
    ntp_op op = conv ? NTP_OP_CONV : NTP_OP_FC;
    const unit ui = {op, hidden, in_c, bn, act, act_name},
               us = {op, hidden, hidden, bn, act, act_name},
               uo = {op, output, hidden, bn, act, act_name};
    ntp_darknet_block_kind bk = conv ? NTP_DARKNET_BLOCK_CONV : NTP_DARKNET_BLOCK_FC;
    int node, bn_node, self = -1, self_bn = -1, h;
    snprintf(nm, sizeof nm, "%s_in", base);
    if ((st = unit_node(r, s, &ui, nm, &x, -1, -1, false, &node, &bn_node)))
        return st;
    add_block(L, bk, node, bn_node, 0);
    if ((st = zero_state(r, s, base, state, &h)))
        return st;
    int *states = step_tensors(r);
    if (!states)
        return oom(r);
    for (int t = 0; t < r->steps && !st; t++) {
        int xt = -1, sf = h; /* xt: set by step_rows on success */
        if ((st = step_rows(r, s, step_name(r, nm, sizeof nm, base, "in", t), x, t, &xt)) ||
            (st = unit_node(r, s, &us, step_name(r, nm, sizeof nm, base, "self", t), &sf, self,
                            self_bn, t == 0 && r->steps > 1, &node, &bn_node)))
            break;
        if (t == 0) {
            self = node;
            self_bn = bn_node;
            add_block(L, bk, node, bn_node, 0);
        }
        int old = h;
        st = binary(r, s, step_name(r, nm, sizeof nm, base, "state", t), NTP_OP_ADD, xt, sf, &h);
        /* shortcut=1 adds the previous state, zero at the first step */
        if (!st && shortcut && t > 0)
            st = binary(r, s, step_name(r, nm, sizeof nm, base, "shortcut", t), NTP_OP_ADD, h, old,
                        &h);
        states[t] = h;
    }
    int all = -1;
    st = stack_states(r, s, base, states, st, &all);
    snprintf(nm, sizeof nm, "%s_out", base);
    if (st || (st = unit_node(r, s, &uo, nm, &all, -1, -1, false, &node, &bn_node)))
        return st;
    add_block(L, bk, node, bn_node, 0);
    L->node = L->blocks[0].node;
    L->last = r->g->n_nodes - 1;
    L->tensor = all;
    L->c = output;
    L->h = conv ? P->h : 1;
    L->w = conv ? P->w : 1;
    L->flat = !conv;
    L->bn = bn;
    L->kind = conv ? NTP_DARKNET_CRNN : NTP_DARKNET_RNN;
    return NTP_STATUS_OK;
}

static ntp_status rnn_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    return rnn_common(r, s, li, L, false);
}

static ntp_status crnn_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    return rnn_common(r, s, li, L, true);
}

/* [gru] (forward_gru_layer): z = σ(uz·x + wz·h), r = σ(ur·x + wr·h),
 * h̃ = act(uh·x + wh·(r⊙h)) with act logistic, or tanh with tanh=1, and
 * h = z⊙h + (1−z)⊙h̃, computed as h̃ + z⊙(h − h̃). Every inner layer is
 * linear, with the section's batch norm. This is ONNX's GRU with
 * linear_before_reset = 0, not the PyTorch one ntprof's gru op computes. */
static ntp_status gru_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t output, bn, tanh_;
    if ((st = get_int(r, s, "output", 1, 1, 1 << 30, &output)) ||
        (st = get_int(r, s, "batch_normalize", 0, 0, 1, &bn)) ||
        (st = get_int(r, s, "tanh", 0, 0, 1, &tanh_)))
        return st;
    char base[32], nm[96];
    snprintf(base, sizeof base, "gru%d", li);
    int x;
    int64_t in_c;
    if ((st = flat_input(r, s, li, base, &x, &in_c)))
        return st;
    const unit uu = {NTP_OP_FC, output, in_c, bn, NTP_OP_COUNT, "linear"},
               uw = {NTP_OP_FC, output, output, bn, NTP_OP_COUNT, "linear"};
    /* uz, ur, uh over all rows; their blocks follow wz, wr, wh in the file */
    static const char *const gate[3] = {"z", "r", "h"};
    int u[3], un[3], ub[3], wn[3] = {-1, -1, -1}, wb[3] = {-1, -1, -1};
    for (int k = 0; k < 3; k++) {
        u[k] = x;
        snprintf(nm, sizeof nm, "%s_u%s", base, gate[k]);
        if ((st = unit_node(r, s, &uu, nm, &u[k], -1, -1, false, &un[k], &ub[k])))
            return st;
    }
    int h;
    if ((st = zero_state(r, s, base, shp(2, r->batch, output, 0, 0), &h)))
        return st;
    int *states = step_tensors(r);
    if (!states)
        return oom(r);
    bool own = r->steps > 1;
    for (int t = 0; t < r->steps && !st; t++) {
        int ut[3], w[3], node, bn_node, z, rr, f, hh, d;
        char part[16];
        for (int k = 0; k < 3 && !st; k++) {
            snprintf(part, sizeof part, "u%s", gate[k]);
            st = step_rows(r, s, step_name(r, nm, sizeof nm, base, part, t), u[k], t, &ut[k]);
        }
        for (int k = 0; k < 2 && !st; k++) {
            w[k] = h;
            snprintf(part, sizeof part, "w%s", gate[k]);
            st = unit_node(r, s, &uw, step_name(r, nm, sizeof nm, base, part, t), &w[k], wn[k],
                           wb[k], own && t == 0, &node, &bn_node);
            if (t == 0) {
                wn[k] = node;
                wb[k] = bn_node;
            }
        }
        if (st ||
            (st = binary(r, s, step_name(r, nm, sizeof nm, base, "z", t), NTP_OP_ADD, ut[0], w[0],
                         &z)) ||
            (st = unary(r, s, step_name(r, nm, sizeof nm, base, "z_logistic", t), NTP_OP_SIGMOID,
                        &z)) ||
            (st = binary(r, s, step_name(r, nm, sizeof nm, base, "r", t), NTP_OP_ADD, ut[1], w[1],
                         &rr)) ||
            (st = unary(r, s, step_name(r, nm, sizeof nm, base, "r_logistic", t), NTP_OP_SIGMOID,
                        &rr)) ||
            (st = binary(r, s, step_name(r, nm, sizeof nm, base, "forgot", t), NTP_OP_MUL, h, rr,
                         &f)))
            break;
        w[2] = f;
        if ((st = unit_node(r, s, &uw, step_name(r, nm, sizeof nm, base, "wh", t), &w[2], wn[2],
                            wb[2], own && t == 0, &node, &bn_node)))
            break;
        if (t == 0) {
            wn[2] = node;
            wb[2] = bn_node;
        }
        if ((st = binary(r, s, step_name(r, nm, sizeof nm, base, "h", t), NTP_OP_ADD, ut[2], w[2],
                         &hh)) ||
            (st = unary(r, s, step_name(r, nm, sizeof nm, base, tanh_ ? "h_tanh" : "h_logistic", t),
                        tanh_ ? NTP_OP_TANH : NTP_OP_SIGMOID, &hh)) ||
            (st = binary(r, s, step_name(r, nm, sizeof nm, base, "keep", t), NTP_OP_SUB, h, hh,
                         &d)) ||
            (st = binary(r, s, step_name(r, nm, sizeof nm, base, "keep_z", t), NTP_OP_MUL, z, d,
                         &d)) ||
            (st = binary(r, s, step_name(r, nm, sizeof nm, base, "state", t), NTP_OP_ADD, hh, d,
                         &h)))
            break;
        states[t] = h;
    }
    int all = -1;
    st = stack_states(r, s, base, states, st, &all);
    if (st)
        return st;
    /* Darknet's file order: wz, wr, wh, uz, ur, uh. */
    for (int k = 0; k < 3; k++)
        add_block(L, NTP_DARKNET_BLOCK_FC, wn[k], wb[k], 0);
    for (int k = 0; k < 3; k++)
        add_block(L, NTP_DARKNET_BLOCK_FC, un[k], ub[k], 0);
    flat_output(L, un[0], r->g->n_nodes - 1, all, output, NTP_DARKNET_GRU);
    L->bn = bn;
    return NTP_STATUS_OK;
}

/* [lstm] with batch_normalize=1: each of the eight inner [connected]
 * layers has a batch norm of its own (their biases are the norms' shifts),
 * which ntprof's lstm op has not. So the cell is unrolled as
 * forward_lstm_layer runs it: ui, uf, uo, ug over all rows; per step wi,
 * wf, wo, wg on the state (the steps sharing their weights), i, f, o =
 * σ(u + w), g = tanh(u + w), c = f⊙c + i⊙g (i⊙g at the first step, where c
 * is zero), h = o⊙tanh(c). */
static ntp_status lstm_unrolled(reader *r, const dn_sect *s, ntp_darknet_layer *L, const char *base,
                                int x, int64_t in_c, int64_t output)
{
    ntp_status st;
    char nm[96], part[16];
    const unit uu = {NTP_OP_FC, output, in_c, true, NTP_OP_COUNT, "linear"},
               uw = {NTP_OP_FC, output, output, true, NTP_OP_COUNT, "linear"};
    /* Darknet's file order of the gates: i, f, o, g */
    static const char *const gate[4] = {"i", "f", "o", "g"};
    int u[4], un[4], ub[4], wn[4] = {-1, -1, -1, -1}, wb[4] = {-1, -1, -1, -1};
    for (int k = 0; k < 4; k++) {
        u[k] = x;
        snprintf(nm, sizeof nm, "%s_u%s", base, gate[k]);
        if ((st = unit_node(r, s, &uu, nm, &u[k], -1, -1, false, &un[k], &ub[k])))
            return st;
    }
    int h, c = -1;
    if ((st = zero_state(r, s, base, shp(2, r->batch, output, 0, 0), &h)))
        return st;
    int *states = step_tensors(r);
    if (!states)
        return oom(r);
    bool own = r->steps > 1;
    for (int t = 0; t < r->steps && !st; t++) {
        int v[4] = {-1, -1, -1, -1}, node, bn_node, ig = -1, hc;
        for (int k = 0; k < 4 && !st; k++) {
            int ut = -1, w = h; /* ut: set by step_rows on success */
            snprintf(part, sizeof part, "u%s", gate[k]);
            if ((st = step_rows(r, s, step_name(r, nm, sizeof nm, base, part, t), u[k], t, &ut)))
                break;
            snprintf(part, sizeof part, "w%s", gate[k]);
            if ((st = unit_node(r, s, &uw, step_name(r, nm, sizeof nm, base, part, t), &w, wn[k],
                                wb[k], own && t == 0, &node, &bn_node)))
                break;
            if (t == 0) {
                wn[k] = node;
                wb[k] = bn_node;
            }
            snprintf(part, sizeof part, "%s_%s", gate[k], k == 3 ? "tanh" : "logistic");
            if ((st = binary(r, s, step_name(r, nm, sizeof nm, base, gate[k], t), NTP_OP_ADD, ut, w,
                             &v[k])) ||
                (st = unary(r, s, step_name(r, nm, sizeof nm, base, part, t),
                            k == 3 ? NTP_OP_TANH : NTP_OP_SIGMOID, &v[k])))
                break;
        }
        if (st || (st = binary(r, s, step_name(r, nm, sizeof nm, base, "ig", t), NTP_OP_MUL, v[0],
                               v[3], &ig)))
            break;
        if (t == 0) {
            c = ig;
        } else {
            int fc = -1;
            if ((st = binary(r, s, step_name(r, nm, sizeof nm, base, "fc", t), NTP_OP_MUL, v[1], c,
                             &fc)) ||
                (st = binary(r, s, step_name(r, nm, sizeof nm, base, "c", t), NTP_OP_ADD, fc, ig,
                             &c)))
                break;
        }
        hc = c;
        if ((st = unary(r, s, step_name(r, nm, sizeof nm, base, "c_tanh", t), NTP_OP_TANH, &hc)) ||
            (st = binary(r, s, step_name(r, nm, sizeof nm, base, "state", t), NTP_OP_MUL, v[2], hc,
                         &h)))
            break;
        states[t] = h;
    }
    int all = -1;
    if ((st = stack_states(r, s, base, states, st, &all)))
        return st;
    for (int k = 0; k < 4; k++)
        add_block(L, NTP_DARKNET_BLOCK_FC, wn[k], wb[k], 0);
    for (int k = 0; k < 4; k++)
        add_block(L, NTP_DARKNET_BLOCK_FC, un[k], ub[k], 0);
    flat_output(L, un[0], r->g->n_nodes - 1, all, output, NTP_DARKNET_LSTM);
    L->bn = true;
    return NTP_STATUS_OK;
}

/* [lstm] (forward_lstm_layer): the standard LSTM, f, i, o = σ(u·x + w·h),
 * g = tanh(u·x + w·h), c = f⊙c + i⊙g, h = o⊙tanh(c), with separate input and
 * recurrent biases: ntprof's lstm op over [steps, batch, inputs]. With
 * batch_normalize each inner layer has its own batch norm, which the op has
 * not: unrolled (lstm_unrolled). */
static ntp_status lstm_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t output, bn;
    if ((st = get_int(r, s, "output", 1, 1, 1 << 30, &output)) ||
        (st = get_int(r, s, "batch_normalize", 0, 0, 1, &bn)))
        return st;
    char base[32], nm[96];
    snprintf(base, sizeof base, "lstm%d", li);
    int x;
    int64_t in_c;
    if ((st = flat_input(r, s, li, base, &x, &in_c)))
        return st;
    if (bn)
        return lstm_unrolled(r, s, L, base, x, in_c, output);
    snprintf(nm, sizeof nm, "%s_seq", base);
    int ni = add_op(r, nm, NTP_OP_RESHAPE, s->line, &x, 1);
    if (ni < 0)
        return oom(r);
    ntp_attrs *a = &r->g->nodes[ni].a;
    a->n_shape = 3;
    a->shape[0] = r->steps;
    a->shape[1] = r->batch;
    a->shape[2] = in_c;
    x = r->g->nodes[ni].out[0];
    int li_node = add_op(r, base, NTP_OP_LSTM, s->line, &x, 1);
    if (li_node < 0)
        return oom(r);
    a = &r->g->nodes[li_node].a;
    a->units = output;
    a->direction = NTP_DIR_FORWARD;
    a->bias = true;
    x = r->g->nodes[li_node].out[0];
    snprintf(nm, sizeof nm, "%s_rows", base);
    ni = add_op(r, nm, NTP_OP_RESHAPE, s->line, &x, 1);
    if (ni < 0)
        return oom(r);
    a = &r->g->nodes[ni].a;
    a->n_shape = 2;
    a->shape[0] = r->rows;
    a->shape[1] = output;
    /* Darknet's file order: wi, wf, wo, wg, then ui, uf, uo, ug; ntprof's
     * gate order is i, o, f, c. */
    static const int slot[4] = {0, 2, 1, 3};
    for (int k = 0; k < 4; k++)
        add_block(L, NTP_DARKNET_BLOCK_LSTM_W, li_node, -1, slot[k]);
    for (int k = 0; k < 4; k++)
        add_block(L, NTP_DARKNET_BLOCK_LSTM_U, li_node, -1, slot[k]);
    flat_output(L, li_node, ni, r->g->nodes[ni].out[0], output, NTP_DARKNET_LSTM);
    return NTP_STATUS_OK;
}

/* [local] (forward_local_layer): a convolution whose weights differ at
 * every output position. Darknet's im2col of the input (its `pad` flag is
 * passed as the padding in pixels), then per position p a [filters x
 * c*size*size] product, plus a bias per output value. Here: the padded
 * input's size*size strided windows (slices), concatenated and transposed
 * into one column per position ([N, positions*c*size*size, 1, 1]), and a
 * 1x1 convolution with one group per position, whose weights
 * [positions*filters, c*size*size] are Darknet's in Darknet's order; then
 * back to [N, filters, out_h, out_w]. */
static ntp_status local_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t filters, size, stride, pad;
    if ((st = get_int(r, s, "filters", 1, 1, 1 << 20, &filters)) ||
        (st = get_int(r, s, "size", 1, 1, 64, &size)) ||
        (st = get_int(r, s, "stride", 1, 1, 1024, &stride)) ||
        (st = get_int(r, s, "pad", 0, 0, 1, &pad)))
        return st;
    ntp_op act;
    const char *act_name;
    if ((st = parse_act(r, s, "logistic", &act, &act_name)))
        return st;
    int x;
    if ((st = need_image(r, s, li)) || (st = as_4d(r, s, li - 1, &x)))
        return st;
    const ntp_darknet_layer *P = &r->layers[li - 1];
    /* local_out_height: (h - (pad ? 1 : size)) / stride + 1; im2col_cpu:
     * (h + 2 pad - size) / stride + 1. They agree for pad=0 or size=3. */
    if (pad && size != 3)
        return sect_error(r, s, s->line, NTP_STATUS_UNSUPPORTED,
                          "pad=1 with size=%lld: Darknet's output size and its im2col disagree "
                          "unless size=3; expected size=3 or pad=0",
                          (long long)size);
    if (P->h + 2 * pad < size || P->w + 2 * pad < size)
        return sect_error(r, s, s->line, NTP_STATUS_SHAPE_ERROR,
                          "size=%lld does not fit the %lldx%lld input", (long long)size,
                          (long long)P->h, (long long)P->w);
    int64_t C = P->c, oh = (P->h + 2 * pad - size) / stride + 1,
            ow = (P->w + 2 * pad - size) / stride + 1, pos = oh * ow, kk = size * size;
    char base[32], nm[96];
    snprintf(base, sizeof base, "local%d", li);
    if (pad) {
        snprintf(nm, sizeof nm, "%s_pad", base);
        int ni = add_op(r, nm, NTP_OP_PAD, s->line, &x, 1);
        if (ni < 0)
            return oom(r);
        ntp_attrs *a = &r->g->nodes[ni].a;
        a->n_pads = 8;
        memset(a->pads, 0, sizeof a->pads);
        a->pads[2] = a->pads[3] = a->pads[6] = a->pads[7] = pad;
        a->pad_mode = NTP_PADMODE_CONSTANT;
        a->value = 0;
        x = r->g->nodes[ni].out[0];
    }
    int *cols = malloc((size_t)kk * sizeof *cols);
    if (!cols)
        return oom(r);
    for (int64_t k = 0; k < kk; k++) {
        snprintf(nm, sizeof nm, "%s_col%lld", base, (long long)k);
        int ni = add_op(r, nm, NTP_OP_SLICE, s->line, &x, 1);
        if (ni < 0) {
            free(cols);
            return oom(r);
        }
        ntp_attrs *a = &r->g->nodes[ni].a;
        int64_t ky = k / size, kx = k % size;
        a->n_pads = a->n_perm = a->n_shape = 2;
        a->pads[0] = ky;
        a->pads[1] = kx;
        a->pads[NTP_SLICE_ENDS + 0] = ky + (oh - 1) * stride + 1;
        a->pads[NTP_SLICE_ENDS + 1] = kx + (ow - 1) * stride + 1;
        a->perm[0] = 2;
        a->perm[1] = 3;
        a->shape[0] = a->shape[1] = stride;
        cols[k] = r->g->nodes[ni].out[0];
    }
    snprintf(nm, sizeof nm, "%s_cols", base);
    st = concat_all(r, s, nm, 1, cols, (int)kk, &x); /* [N, kk*C, oh, ow] */
    free(cols);
    if (st)
        return st;
    /* [N, kk, C, pos] -> [N, pos, C, kk] -> [N, pos*C*kk, 1, 1]: Darknet's
     * column of position p is c*size*size + ky*size + kx. */
    const int64_t s1[4] = {0, kk, C, pos}, p1[4] = {0, 3, 2, 1}, s2[4] = {0, pos * C * kk, 1, 1};
    static const char *const part1[] = {"split", "move", "columns"};
    for (int step = 0; step < 3; step++) {
        snprintf(nm, sizeof nm, "%s_%s", base, part1[step]);
        int ni = add_op(r, nm, step == 1 ? NTP_OP_TRANSPOSE : NTP_OP_RESHAPE, s->line, &x, 1);
        if (ni < 0)
            return oom(r);
        ntp_attrs *a = &r->g->nodes[ni].a;
        if (step == 1) {
            a->n_perm = 4;
            memcpy(a->perm, p1, sizeof p1);
        } else {
            a->n_shape = 4;
            memcpy(a->shape, step == 0 ? s1 : s2, sizeof s1);
        }
        x = r->g->nodes[ni].out[0];
    }
    int ci = add_op(r, base, NTP_OP_CONV, s->line, &x, 1);
    if (ci < 0)
        return oom(r);
    ntp_attrs *a = &r->g->nodes[ci].a;
    a->filters = pos * filters;
    a->n_kernel = a->n_stride = a->n_pad = 1;
    a->kernel[0] = a->stride[0] = 1;
    a->pad[0] = 0;
    a->pad_kind = NTP_PAD_EXPLICIT;
    a->groups = pos;
    a->bias = true;
    x = r->g->nodes[ci].out[0];
    /* [N, pos*F, 1, 1] -> [N, pos, F] -> [N, F, pos] -> [N, F, oh, ow] */
    const int64_t s3[3] = {0, pos, filters}, p2[3] = {0, 2, 1}, s4[4] = {0, filters, oh, ow};
    static const char *const part2[] = {"positions", "back", "image"};
    for (int step = 0; step < 3; step++) {
        snprintf(nm, sizeof nm, "%s_%s", base, part2[step]);
        int ni = add_op(r, nm, step == 1 ? NTP_OP_TRANSPOSE : NTP_OP_RESHAPE, s->line, &x, 1);
        if (ni < 0)
            return oom(r);
        a = &r->g->nodes[ni].a;
        if (step == 1) {
            a->n_perm = 3;
            memcpy(a->perm, p2, sizeof p2);
        } else {
            a->n_shape = step == 0 ? 3 : 4;
            memcpy(a->shape, step == 0 ? s3 : s4, (size_t)a->n_shape * sizeof s4[0]);
        }
        x = r->g->nodes[ni].out[0];
    }
    int last = r->g->n_nodes - 1;
    if ((st = act_node(r, s->line, base, act_name, act, &x, &last)))
        return st;
    add_block(L, NTP_DARKNET_BLOCK_LOCAL, ci, -1, 0);
    L->node = ci;
    L->last = last;
    L->tensor = x;
    L->c = filters;
    L->h = oh;
    L->w = ow;
    L->kind = NTP_DARKNET_LOCAL;
    return NTP_STATUS_OK;
}

/* [deconvolutional] (forward_deconvolutional_layer): a transposed
 * convolution. Darknet's weights are [c][filters][size][size], the layout
 * of ntprof's deconv (ONNX's ConvTranspose); its output is (in - 1) x
 * stride + size - 2 x padding, col2im dropping what falls in the padding.
 * With batch_normalize the norm follows (the biases are its shift), then
 * the activation (Darknet's default logistic). */
static ntp_status deconv_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t filters, size, stride, pad, padding, bn;
    if ((st = get_int(r, s, "filters", 1, 1, 1 << 20, &filters)) ||
        (st = get_int(r, s, "size", 1, 1, 1024, &size)) ||
        (st = get_int(r, s, "stride", 1, 1, 1024, &stride)) ||
        (st = get_int(r, s, "pad", 0, 0, 1, &pad)) ||
        (st = get_int(r, s, "padding", 0, 0, 1024, &padding)) ||
        (st = get_int(r, s, "batch_normalize", 0, 0, 1, &bn)))
        return st;
    if (pad)
        padding = size / 2;
    int in;
    if ((st = need_image(r, s, li)) || (st = as_4d(r, s, li - 1, &in)))
        return st;
    const ntp_darknet_layer *P = &r->layers[li - 1];
    int64_t oh = (P->h - 1) * stride + size - 2 * padding,
            ow = (P->w - 1) * stride + size - 2 * padding;
    if (oh < 1 || ow < 1)
        return sect_error(r, s, s->line, NTP_STATUS_SHAPE_ERROR,
                          "padding %lld leaves no output of the %lldx%lld input with size=%lld "
                          "and stride=%lld",
                          (long long)padding, (long long)P->w, (long long)P->h, (long long)size,
                          (long long)stride);
    snprintf(r->name, sizeof r->name, "deconv%d", li);
    int ni = add_op(r, r->name, NTP_OP_DECONV, s->line, &in, 1);
    if (ni < 0)
        return oom(r);
    ntp_attrs *a = &r->g->nodes[ni].a;
    a->filters = filters;
    a->n_kernel = a->n_stride = a->n_pad = 1;
    a->kernel[0] = size;
    a->stride[0] = stride;
    a->pad[0] = padding;
    a->pad_kind = NTP_PAD_EXPLICIT;
    a->groups = 1;
    a->bias = !bn;
    L->node = L->last = ni;
    int t = r->g->nodes[ni].out[0];
    if ((bn && (st = add_bn(r, s->line, r->name, &t, &L->last, &L->bn_node))) ||
        (st = activation(r, s, r->name, "logistic", &t, &L->last)))
        return st;
    add_block(L, NTP_DARKNET_BLOCK_CONV, ni, L->bn_node, 0);
    L->tensor = t;
    L->c = filters;
    L->h = oh;
    L->w = ow;
    L->kind = NTP_DARKNET_DECONV;
    L->bn = bn;
    return NTP_STATUS_OK;
}

/* The previous layer's shape and output for a layer that keeps them
 * ([batchnorm], [activation]): *L becomes a copy of it. */
static const ntp_darknet_layer *same_shape(reader *r, int li, ntp_darknet_layer *L,
                                           ntp_darknet_kind kind)
{
    int line = L->line, first = L->first;
    *L = r->layers[li - 1];
    L->line = line;
    L->first = first;
    L->n_blocks = 0;
    L->node = L->bn_node = -1;
    L->kind = kind;
    L->bn = false;
    return &r->layers[li - 1];
}

/* [batchnorm] (forward_batchnorm_layer): the previous layer's output
 * normalised per channel with the rolling statistics, then scaled. Darknet
 * neither saves nor loads a [batchnorm]'s biases (save_batchnorm_weights,
 * load_batchnorm_weights: scales, means, variances), so at inference its
 * shift is zero: here a zero "bias" made by the reader, which generated
 * weights leave alone. */
static ntp_status batchnorm_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    if ((st = need_image(r, s, li)))
        return st;
    const ntp_darknet_layer *P = same_shape(r, li, L, NTP_DARKNET_BATCHNORM);
    char base[32];
    snprintf(base, sizeof base, "batchnorm%d", li);
    int t = P->tensor, bi = -1;
    if ((st = add_bn(r, s->line, base, &t, &L->last, &bi)))
        return st;
    ntp_shape c = shp(1, P->c, 0, 0, 0);
    if ((st = own_weight(r, bi, "scale", NTP_TENSOR_WEIGHT, c)) ||
        (st = own_weight(r, bi, "bias", NTP_TENSOR_WEIGHT, c)) ||
        (st = own_weight(r, bi, "mean", NTP_TENSOR_BUFFER, c)) ||
        (st = own_weight(r, bi, "var", NTP_TENSOR_BUFFER, c)))
        return st;
    ntp_tensor *shift = &r->g->tensors[r->g->nodes[bi].w[1]];
    shift->data = calloc((size_t)P->c, sizeof(float));
    if (!shift->data)
        return oom(r);
    shift->data_dtype = NTP_DTYPE_F32;
    L->node = L->bn_node = bi;
    L->tensor = t;
    add_block(L, NTP_DARKNET_BLOCK_BN, bi, bi, 0);
    return NTP_STATUS_OK;
}

/* [activation] (forward_activation_layer): the previous layer's output
 * through `activation`, Darknet's default here linear (a copy, which
 * computes nothing: no layer). */
static ntp_status activation_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_op op = NTP_OP_COUNT; /* set by parse_act on success */
    const char *name;
    ntp_status st = parse_act(r, s, "linear", &op, &name);
    if (st)
        return st;
    const ntp_darknet_layer *P = same_shape(r, li, L, NTP_DARKNET_ACTIVATION);
    char base[32];
    snprintf(base, sizeof base, "activation%d", li);
    int t = P->tensor, last = -1;
    const dn_opt *o = find(s, "activation");
    if ((st = act_node(r, o ? o->line : s->line, base, name, op, &t, &last)))
        return st;
    if (last >= 0)
        L->node = L->last = last;
    L->tensor = t;
    return NTP_STATUS_OK;
}

/* [yolo], [region], [detection], [cost]: the loss and the decoding of
 * boxes, outside the network's arithmetic. The layer passes its input
 * through; the detection heads' inputs are graph outputs. */
static ntp_status passthrough_layer(reader *r, int li, ntp_darknet_layer *L, bool head)
{
    same_shape(r, li, L, NTP_DARKNET_PASSTHROUGH);
    if (head) {
        int *o = realloc(r->outs, ((size_t)r->n_outs + 1) * sizeof *o);
        if (!o)
            return oom(r);
        r->outs = o;
        r->outs[r->n_outs++] = L->tensor;
    }
    return NTP_STATUS_OK;
}

/* A detection head: the layer before it is a network output. */
static ntp_status head_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    (void)s;
    return passthrough_layer(r, li, L, true);
}

static ntp_status cost_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    (void)s;
    return passthrough_layer(r, li, L, false);
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
     conv_layer},
    {"connected", "conn", "output,activation,batch_normalize", connected_layer},
    {"maxpool", "max", "size,stride,padding", maxpool_layer},
    {"avgpool", "avg", "", avgpool_layer},
    {"route", NULL, "layers", route_layer},
    {"shortcut", NULL, "from,activation,alpha,beta", shortcut_layer},
    {"upsample", NULL, "stride,scale", upsample_layer},
    {"dropout", NULL, "probability", dropout_layer},
    {"softmax", "soft", "groups,temperature,tree,spatial,noloss", softmax_layer},
    {"reorg", NULL, "stride,reverse,flatten,extra", reorg_layer},
    {"crop", NULL, "crop_height,crop_width,flip,angle,saturation,exposure,hue,shift", crop_layer},
    {"yolo", NULL, NULL, head_layer},
    {"region", NULL, NULL, head_layer},
    {"detection", NULL, NULL, head_layer},
    {"cost", NULL, NULL, cost_layer},
    {"rnn", NULL, "output,activation,batch_normalize,shortcut,hidden", rnn_layer},
    {"gru", NULL, "output,batch_normalize,tanh", gru_layer},
    {"lstm", NULL, "output,batch_normalize", lstm_layer},
    {"crnn", NULL, "output_filters,hidden_filters,activation,batch_normalize,shortcut", crnn_layer},
    {"local", NULL, "filters,size,stride,pad,activation", local_layer},
    {"deconvolutional", "deconv", "filters,size,stride,pad,padding,batch_normalize,activation",
     deconv_layer},
    {"batchnorm", NULL, "", batchnorm_layer},
    {"activation", NULL, "activation", activation_layer},
};
#define N_SECTIONS (sizeof sections / sizeof sections[0])

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
        return sections[i].fn(r, s, li, L);
    }
    if (!strcmp(t, "net") || !strcmp(t, "network"))
        return sect_error(r, s, s->line, NTP_STATUS_PARSE_ERROR,
                          "a second [net]: expected it once, as the first section");
    char supported[256] = "";
    size_t u = 0;
    for (size_t i = 0; i < N_SECTIONS && u < sizeof supported; i++)
        u += (size_t)snprintf(supported + u, sizeof supported - u, "%s%s", i ? ", " : "",
                              sections[i].type);
    return sect_error(r, s, s->line, NTP_STATUS_UNSUPPORTED,
                      "layer type '%s' is not supported: expected one of %s "
                      "(docs/darknet.md lists what loads)",
                      t, supported);
}

static const char *const net_keys =
    "width,height,channels,batch,subdivisions,inputs,time_steps,notruth,random,learning_rate,"
    "momentum,decay,adam,B1,B2,eps,max_crop,min_crop,max_ratio,min_ratio,center,clip,angle,"
    "aspect,saturation,exposure,hue,policy,burn_in,power,step,scale,steps,scales,gamma,"
    "max_batches,flip,seen,mask";

/* A --set override of a [net] key, or NULL. */
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
            return ntp__error(r->ctx, NTP_STATUS_UNKNOWN_NAME,
                              "%s: --set %s: a Darknet .cfg takes batch, width, height, channels "
                              "and weights=FILE.weights",
                              r->src, r->opts->set[i]);
    }
    if ((st = check_keys(r, s, net_keys)))
        return st;
    int64_t dim[3], inputs;
    static const char *const keys[] = {"width", "height", "channels"};
    if ((st = get_int(r, s, "time_steps", 1, 1, 1 << 20, &r->steps)) ||
        (st = get_int(r, s, "inputs", 0, 0, 1 << 30, &inputs)))
        return st;
    /* A text model gives its input as a vector, inputs=, and no image. */
    bool text = inputs > 0 && !find(s, "width") && !find(s, "height") && !find(s, "channels");
    for (int k = 0; k < 3 && text; k++)
        if (net_override(r, keys[k]))
            return ntp__error(r->ctx, NTP_STATUS_INVALID_ARGUMENT,
                              "%s: --set %s: this network's input is a vector (inputs=%lld), "
                              "not an image",
                              r->src, keys[k], (long long)inputs);
    for (int k = 0; k < 3 && !text; k++) {
        const char *v = net_override(r, keys[k]);
        if (v) {
            char *end;
            long long x = strtoll(v, &end, 10);
            if (end == v || *end || x < 1 || x > 1 << 20)
                return ntp__error(r->ctx, NTP_STATUS_INVALID_ARGUMENT,
                                  "%s: --set %s=%s: expected a positive integer", r->src, keys[k],
                                  v);
            dim[k] = x;
            continue;
        }
        if ((st = get_int(r, s, keys[k], 0, 0, 1 << 20, &dim[k])))
            return st;
        if (dim[k] == 0)
            return sect_error(r, s, s->line, NTP_STATUS_UNSUPPORTED,
                              "'%s': expected a positive input %s (or, for a vector input, "
                              "inputs= and no width, height or channels)",
                              keys[k], keys[k]);
    }
    if (!text && inputs > 0 && inputs != dim[0] * dim[1] * dim[2])
        return sect_error(r, s, find(s, "inputs")->line, NTP_STATUS_UNSUPPORTED,
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
            return ntp__error(r->ctx, NTP_STATUS_INVALID_ARGUMENT,
                              "%s: --set batch=%s: expected a positive integer", r->src, b);
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
        return oom(r);
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)r->batch);
    g->params[0].name = ntp__strdup("batch");
    g->params[0].value = ntp__strdup(num);
    g->params[0].line = s->line;
    g->n_params = 1;
    if (!g->params[0].name || !g->params[0].value)
        return oom(r);
    g->inputs = malloc(sizeof *g->inputs);
    int ti = ntp__graph_add_tensor(g, "data", NTP_TENSOR_INPUT);
    if (!g->inputs || ti < 0)
        return oom(r);
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
        return oom(r);
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
        return oom(r);
    r->layers = base + 1;
    r->n_layers = r->n_s - 1;
    const char *slash = strrchr(r->src, '/');
    char name[256];
    snprintf(name, sizeof name, "%s", slash ? slash + 1 : r->src);
    char *dot = strrchr(name, '.');
    if (dot)
        *dot = '\0';
    if (!(r->g = ntp__graph_new(name, r->src)))
        return oom(r);
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
            return oom(r);
        r->outs = o;
        r->outs[r->n_outs++] = last;
    }
    ntp_graph *g = r->g;
    g->outputs = malloc((size_t)r->n_outs * sizeof *g->outputs);
    if (!g->outputs)
        return oom(r);
    for (int i = 0; i < r->n_outs; i++) {
        bool dup = false;
        for (int k = 0; k < g->n_outputs; k++)
            dup |= g->outputs[k] == r->outs[i];
        if (!dup && g->tensors[r->outs[i]].kind == NTP_TENSOR_ACTIVATION)
            g->outputs[g->n_outputs++] = r->outs[i];
    }
    if ((st = ntp__graph_finalize(r->ctx, g, r->opts->max_memory)))
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
