/* A graph as editable markup (docs/topology-format.md): ntprof convert.
 *
 * Every layer is written with every attribute it has (nothing left to
 * defaults, so that the markup means exactly the graph) and its inputs by
 * name; weights are not written, the markup generates them from the seed.
 * Names are made valid markup names (no ',', ':', quotes or blanks; one
 * namespace for layers and inputs). Numbers that scale with the batch are
 * found by comparing with the same model loaded at another batch
 * (`batch_of`): a value v that is v1 at batch b1 and v2 at b2 is written as
 * ${batch*a+c}, which --batch then changes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "graph/op-onnx-impl.h"
#include "ntprof/onnx.h"
#include "onnx-impl.h"

typedef struct mw {
    ntp_ctx *ctx;
    FILE *f;
    const ntp_graph *g, *h;     /* h: the same graph at another batch, or NULL */
    int64_t b1, b2;             /* the batch of g and of h */
    char **ref;                 /* per tensor: how the markup refers to it */
    char **lname;               /* per node: its markup name */
    ntp_onnx_names *used;
    bool oom;
} mw;

static char *xstrdup(mw *w, const char *s)
{
    char *d = ntp__strdup(s);
    if (!d)
        w->oom = true;
    return d;
}

/* The length of the UTF-8 sequence at s that encodes a character XML 1.0
 * allows (tab, newline, return, U+0020..U+D7FF, U+E000..U+FFFD,
 * U+10000..U+10FFFF), or 0: a control byte, a malformed or overlong
 * sequence, a surrogate or a non-character. ONNX names are protobuf
 * strings, which nothing checks; XML refuses all of these. */
static size_t xml_char(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80)
        return c >= 0x20 || c == '\t' || c == '\n' || c == '\r' ? 1 : 0;
    size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
    if (n == 0 || (n == 3 && c > 0xef))
        return 0;
    uint32_t cp = c & (n == 2 ? 0x1f : n == 3 ? 0x0f : 0x07);
    for (size_t k = 1; k < n; k++) {
        if ((s[k] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[k] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff)
        return 0;
    return n;
}

/* s as text the markup reads back as written: every byte XML refuses
 * becomes '_', and "${" (which the reader would substitute) "_{". At most
 * cap - 1 bytes, cut between characters. */
static void clean_text(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t l = xml_char(p);
        if (n + (l ? l : 1) >= cap)
            break;
        if (l == 0 || (p[0] == '$' && p[1] == '{')) {
            out[n++] = '_';
            p++;
            continue;
        }
        memcpy(out + n, p, l);
        n += l;
        p += l;
    }
    out[n] = '\0';
}

/* A valid, unused markup name made from s. */
static char *markup_name(mw *w, const char *s)
{
    char base[240], buf[256];
    clean_text(s, base, sizeof base);
    size_t n = strlen(base);
    for (size_t k = 0; k < n; k++)
        if (strchr(",:'\" \t\r\n<>&", base[k]))
            base[k] = '_';
    if (n == 0)
        strcpy(base, "layer");
    snprintf(buf, sizeof buf, "%s", base);
    for (int k = 1; ntp__onnx_names_get(w->used, buf) >= 0; k++)
        snprintf(buf, sizeof buf, "%s_%d", base, k);
    if (!ntp__onnx_names_put(w->used, buf, 1))
        w->oom = true;
    return xstrdup(w, buf);
}

/* XML attribute text (cleaned as clean_text does). */
static void esc(FILE *f, const char *raw)
{
    char s[1024];
    clean_text(raw, s, sizeof s);
    for (const char *c = s; *c; c++)
        switch (*c) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        /* Attribute values have their whitespace normalised on reading. */
        case '\t': fputs("&#9;", f); break;
        case '\n': fputs("&#10;", f); break;
        case '\r': fputs("&#13;", f); break;
        default: fputc(*c, f); break;
        }
}

/* The shortest decimal that reads back as d. */
static void num(FILE *f, double d)
{
    char buf[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    fputs(buf, f);
}

/* An integer that is v at batch b1 and v2 at batch b2, as text. */
static void batch_int(const mw *w, int64_t v, int64_t v2, char *buf, size_t len)
{
    if (!w->h || v == v2 || w->b1 == w->b2) {
        snprintf(buf, len, "%lld", (long long)v);
        return;
    }
    int64_t db = w->b2 - w->b1, dv = v2 - v;
    if (dv % db != 0) {
        snprintf(buf, len, "%lld", (long long)v);
        return;
    }
    int64_t a = dv / db, c = v - a * w->b1;
    if (a == 1 && c == 0)
        snprintf(buf, len, "${batch}");
    else if (c == 0)
        snprintf(buf, len, "${batch*%lld}", (long long)a);
    else
        snprintf(buf, len, "${batch*%lld%+lld}", (long long)a, (long long)c);
}

/* ' name="v0,v1,..."' with batch-scaled entries where h's list differs. */
static void ints(const mw *w, const char *name, const int64_t *v, const int64_t *v2, int n)
{
    fprintf(w->f, " %s=\"", name);
    for (int i = 0; i < n; i++) {
        char buf[64];
        batch_int(w, v[i], v2 ? v2[i] : v[i], buf, sizeof buf);
        fprintf(w->f, "%s%s", i ? "," : "", buf);
    }
    fputc('"', w->f);
}

static void attr_i(const mw *w, const char *name, int64_t v) { fprintf(w->f, " %s=\"%lld\"", name, (long long)v); }
static void attr_b(const mw *w, const char *name, bool v) { fprintf(w->f, " %s=\"%s\"", name, v ? "true" : "false"); }
static void attr_s(const mw *w, const char *name, const char *v)
{
    fprintf(w->f, " %s=\"", name);
    esc(w->f, v);
    fputc('"', w->f);
}
static void attr_f(const mw *w, const char *name, double v)
{
    fprintf(w->f, " %s=\"", name);
    num(w->f, v);
    fputc('"', w->f);
}

static void spatial(const mw *w, const ntp_attrs *a, bool dilation)
{
    ints(w, "kernel", a->kernel, NULL, a->nk);
    ints(w, "stride", a->stride, NULL, a->nk);
    ints(w, "pad", a->pad, NULL, 2 * a->nk);
    if (dilation)
        ints(w, "dilation", a->dilation, NULL, a->nk);
}

/* The layer's own attributes; a2 is the same layer at the other batch. */
static ntp_status attrs(mw *w, const ntp_node *n, const ntp_attrs *a2)
{
    const ntp_attrs *a = &n->a;
    switch (n->op) {
    case NTP_OP_FC: attr_i(w, "units", a->units); attr_b(w, "bias", a->bias); break;
    case NTP_OP_MATMUL: attr_b(w, "transpose_a", a->transpose_a); attr_b(w, "transpose_b", a->transpose_b); break;
    case NTP_OP_CONV:
    case NTP_OP_DECONV:
        attr_i(w, "filters", a->filters);
        spatial(w, a, true);
        attr_i(w, "groups", a->groups);
        if (n->op == NTP_OP_DECONV)
            ints(w, "output_padding", a->output_padding, NULL, a->nk);
        attr_b(w, "bias", a->bias);
        break;
    case NTP_OP_MAXPOOL:
    case NTP_OP_AVGPOOL:
        spatial(w, a, n->op == NTP_OP_MAXPOOL);
        attr_b(w, "ceil_mode", a->ceil_mode);
        if (n->op == NTP_OP_AVGPOOL)
            attr_b(w, "count_include_pad", a->count_include_pad);
        break;
    case NTP_OP_BATCHNORM:
    case NTP_OP_INSTANCENORM: attr_f(w, "epsilon", a->epsilon); break;
    case NTP_OP_LAYERNORM: attr_f(w, "epsilon", a->epsilon); attr_i(w, "axis", a->axis); break;
    case NTP_OP_RELU:
        if (a->has_max)
            attr_f(w, "max", a->max);
        break;
    case NTP_OP_LEAKY_RELU:
    case NTP_OP_ELU:
    case NTP_OP_CELU:
    case NTP_OP_THRESHOLDED_RELU: attr_f(w, "alpha", a->alpha); break;
    case NTP_OP_SELU: attr_f(w, "alpha", a->alpha); attr_f(w, "gamma", a->value); break;
    case NTP_OP_HARD_SIGMOID: attr_f(w, "alpha", a->alpha); attr_f(w, "beta", a->value); break;
    case NTP_OP_SHRINK: attr_f(w, "lambd", a->alpha); attr_f(w, "bias", a->value); break;
    case NTP_OP_CLIP:
        if (!isinf(a->min))
            attr_f(w, "min", a->min);
        if (!isinf(a->max))
            attr_f(w, "max", a->max);
        break;
    case NTP_OP_SOFTMAX:
    case NTP_OP_LOG_SOFTMAX:
    case NTP_OP_HARDMAX:
    case NTP_OP_CONCAT:
    case NTP_OP_FLATTEN: attr_i(w, "axis", a->axis); break;
    case NTP_OP_SPLIT: attr_i(w, "axis", a->axis); ints(w, "sizes", a->sizes, a2 ? a2->sizes : NULL, a->n_sizes); break;
    case NTP_OP_RESHAPE: ints(w, "shape", a->shape, a2 ? a2->shape : NULL, a->n_shape); break;
    case NTP_OP_TRANSPOSE: ints(w, "perm", a->perm, NULL, a->n_perm); break;
    case NTP_OP_PAD:
        ints(w, "pads", a->pads, NULL, a->n_pads);
        attr_s(w, "mode", a->pad_mode == NTP_PADMODE_REFLECT ? "reflect"
                          : a->pad_mode == NTP_PADMODE_EDGE ? "edge" : "constant");
        attr_f(w, "value", a->value);
        break;
    case NTP_OP_EMBEDDING: attr_i(w, "vocab", a->vocab); attr_i(w, "units", a->units); break;
    case NTP_OP_LSTM:
    case NTP_OP_GRU:
    case NTP_OP_RNN:
        attr_i(w, "units", a->units);
        attr_s(w, "direction", a->direction == NTP_DIR_FORWARD ? "forward"
                               : a->direction == NTP_DIR_REVERSE ? "reverse" : "bidirectional");
        attr_s(w, "merge", a->merge == NTP_MERGE_SUM ? "sum" : "concat");
        attr_s(w, "sequence", a->last_step ? "last" : "full");
        if (n->op == NTP_OP_RNN)
            attr_s(w, "activation", a->rnn_act == NTP_RNN_ACT_RELU ? "relu" : "tanh");
        attr_b(w, "bias", a->bias);
        break;
    case NTP_OP_ATTENTION: attr_i(w, "heads", a->heads); attr_b(w, "causal", a->causal); attr_b(w, "bias", a->bias); break;
    case NTP_OP_MFCC:
        attr_i(w, "sample_rate", a->sample_rate);
        attr_i(w, "window", a->window);
        attr_i(w, "hop", a->hop);
        attr_i(w, "fft", a->n_fft);
        attr_i(w, "mel_bands", a->mel_bands);
        attr_i(w, "coefficients", a->coefficients);
        attr_i(w, "context", a->context);
        break;
    case NTP_OP_CTC_DECODE:
        attr_s(w, "mode", a->decode == NTP_CTC_GREEDY ? "greedy" : "beam");
        attr_i(w, "beam_width", a->beam_width);
        if (a->alphabet)
            attr_s(w, "alphabet", a->alphabet);
        break;
    case NTP_OP_CONVERT:
        if (a->has_to_dtype)
            attr_s(w, "to", ntp_dtype_name(a->to_dtype));
        if (a->has_to_layout)
            attr_s(w, "layout", a->to_layout == NTP_LAYOUT_NHWC ? "nhwc" : "nchw");
        break;
    case NTP_OP_PRELU:
        if (a->n_shape > 0 && ntp_shape_numel(&w->g->tensors[n->w[0]].shape) == 1)
            attr_b(w, "shared", true);
        break;
    case NTP_OP_REDUCE_MEAN:
    case NTP_OP_REDUCE_SUM:
    case NTP_OP_REDUCE_MAX:
    case NTP_OP_REDUCE_MIN:
    case NTP_OP_REDUCE_PROD:
    case NTP_OP_REDUCE_L1:
    case NTP_OP_REDUCE_L2:
    case NTP_OP_REDUCE_SUM_SQUARE:
    case NTP_OP_REDUCE_LOG_SUM:
    case NTP_OP_REDUCE_LOG_SUM_EXP:
        if (a->n_perm > 0)
            ints(w, "axes", a->perm, NULL, a->n_perm);
        break;
    case NTP_OP_LRN:
        attr_i(w, "size", ntp__lrn_size(a));
        attr_f(w, "alpha", ntp__lrn_alpha(a));
        attr_f(w, "beta", ntp__lrn_beta(a));
        attr_f(w, "bias", ntp__lrn_bias(a));
        break;
    case NTP_OP_CONSTANT:
        /* A scalar is written as [1] (the markup's shapes have a dim or
         * more): the same value, and it broadcasts alike. */
        if (a->n_shape == 0)
            attr_s(w, "shape", "1");
        else
            ints(w, "shape", a->shape, a2 ? a2->shape : NULL, a->n_shape);
        attr_b(w, "trainable", a->constant.trainable);
        break;
    case NTP_OP_SLICE:
        ints(w, "starts", a->pads, a2 ? a2->pads : NULL, a->n_pads);
        ints(w, "ends", a->pads + NTP_SLICE_ENDS, a2 ? a2->pads + NTP_SLICE_ENDS : NULL, a->n_pads);
        if (a->n_perm)
            ints(w, "axes", a->perm, NULL, a->n_perm);
        if (a->n_shape)
            ints(w, "steps", a->shape, NULL, a->n_shape);
        break;
    case NTP_OP_EXPAND: ints(w, "shape", a->shape, a2 ? a2->shape : NULL, a->n_shape); break;
    case NTP_OP_RESIZE:
        if (a->n_shape > 0) {
            ints(w, "sizes", a->shape, a2 ? a2->shape : NULL, a->n_shape);
        } else {
            fputs(" scales=\"", w->f);
            for (int d = 0; d < a->n_pads; d++) {
                if (d)
                    fputc(',', w->f);
                num(w->f, (double)(float)((double)a->pads[d] / (double)a->pads[NTP_RESIZE_DEN + d]));
            }
            fputc('"', w->f);
        }
        attr_s(w, "mode", ntp__resize_mode_names[ntp__resize_mode(a)]);
        attr_s(w, "coordinates", ntp__resize_coord_names[ntp__resize_coord(a)]);
        attr_s(w, "nearest", ntp__resize_nearest_names[ntp__resize_nearest(a)]);
        attr_f(w, "cubic_a", ntp__resize_cubic_a(a));
        attr_b(w, "exclude_outside", ntp__resize_exclude_outside(a));
        break;
    default:
        break;
    }
    return NTP_STATUS_OK;
}

static ntp_status write_all(mw *w)
{
    const ntp_graph *g = w->g;
    FILE *f = w->f;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- Converted by ntprof from ");
    char src[1024];
    clean_text(g->source, src, sizeof src);
    for (const char *p = src; *p; p++)
        fputc(*p == '-' && (p[1] == '-' || p[1] == '\0') ? '_' : *p, f);
    fprintf(f, ". Weights are generated from the seed. -->\n<topology name=\"");
    esc(f, g->name);
    fprintf(f, "\" precision=\"%s\">\n", ntp_dtype_name(g->precision));
    for (int i = 0; i < g->n_params; i++) {
        fprintf(f, "  <param name=\"");
        esc(f, g->params[i].name);
        fprintf(f, "\" default=\"");
        esc(f, g->params[i].value);
        fprintf(f, "\"/>\n");
    }
    for (int i = 0; i < g->n_inputs; i++) {
        const ntp_tensor *t = &g->tensors[g->inputs[i]];
        const ntp_tensor *t2 = w->h ? &w->h->tensors[w->h->inputs[i]] : NULL;
        fprintf(f, "  <input name=\"");
        esc(f, w->ref[g->inputs[i]]);
        fputc('"', f);
        ints(w, "shape", t->shape.dim, t2 ? t2->shape.dim : NULL, t->shape.ndim);
        fprintf(f, " dtype=\"%s\"/>\n", ntp_dtype_name(t->dtype));
    }
    for (int p = 0; p < g->n_nodes; p++) {
        int ni = g->order[p];
        const ntp_node *n = &g->nodes[ni];
        fprintf(f, "  <%s name=\"", ntp__op_name(n->op));
        esc(f, w->lname[ni]);
        fputc('"', f);
        if (n->n_in > 0) {
            fprintf(f, " inputs=\"");
            for (int k = 0; k < n->n_in; k++) {
                if (k)
                    fputc(',', f);
                esc(f, w->ref[n->in[k]]);
            }
            fputc('"', f);
        }
        ntp_status st = attrs(w, n, w->h ? &w->h->nodes[ni].a : NULL);
        if (st)
            return st;
        fprintf(f, "/>\n");
    }
    fprintf(f, "</topology>\n");
    return ferror(f) ? ntp__error(w->ctx, NTP_STATUS_IO_ERROR, "writing the markup failed")
                     : NTP_STATUS_OK;
}

ntp_status ntp_graph_write_markup(ntp_ctx *ctx, const ntp_graph *g, const ntp_graph *batch_of,
                                  FILE *f)
{
    mw w = {.ctx = ctx, .f = f, .g = g};
    if (!g || !f)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "convert: no graph or no output");
    /* The other batch only helps when the graph is the same but for it. */
    if (batch_of && batch_of->n_nodes == g->n_nodes && batch_of->n_tensors == g->n_tensors &&
        batch_of->n_inputs == g->n_inputs) {
        w.b1 = g->batch;
        w.b2 = batch_of->batch;
        bool same = w.b1 > 0 && w.b2 > 0 && w.b1 != w.b2;
        for (int i = 0; same && i < g->n_nodes; i++)
            same = g->nodes[i].op == batch_of->nodes[i].op;
        if (same)
            w.h = batch_of;
    }
    w.ref = calloc((size_t)g->n_tensors + 1, sizeof *w.ref);
    w.lname = calloc((size_t)g->n_nodes + 1, sizeof *w.lname);
    w.used = ntp__onnx_names_new();
    ntp_status st = NTP_STATUS_OK;
    if (!w.ref || !w.lname || !w.used)
        w.oom = true;
    /* One namespace: inputs, then layers, then the references to outputs. */
    for (int i = 0; !w.oom && i < g->n_inputs; i++)
        w.ref[g->inputs[i]] = markup_name(&w, g->tensors[g->inputs[i]].name);
    for (int p = 0; !w.oom && p < g->n_nodes; p++)
        w.lname[g->order[p]] = markup_name(&w, g->nodes[g->order[p]].name);
    for (int i = 0; !w.oom && i < g->n_nodes; i++) {
        const ntp_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_out && !w.oom; k++) {
            char buf[300];
            if (n->op == NTP_OP_SPLIT)
                snprintf(buf, sizeof buf, "%s:%d", w.lname[i], k);
            else
                snprintf(buf, sizeof buf, "%s", w.lname[i]);
            w.ref[n->out[k]] = xstrdup(&w, buf);
        }
    }
    if (w.oom)
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    else
        st = write_all(&w);
    for (int i = 0; w.ref && i < g->n_tensors; i++)
        free(w.ref[i]);
    for (int i = 0; w.lname && i < g->n_nodes; i++)
        free(w.lname[i]);
    free(w.ref);
    free(w.lname);
    ntp__onnx_names_free(w.used);
    return st;
}
