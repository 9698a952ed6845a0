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
#include "graph/op-attrs.h"
#include "graph/op-onnx-impl.h"
#include "ntprof/onnx.h"
#include "onnx-impl.h"

typedef struct mw {
    ntp_ctx *ctx;
    FILE *f;
    const ntp_graph *g, *h; /* h: the same graph at another batch, or NULL */
    int64_t b1, b2;         /* the batch of g and of h */
    char **ref;             /* per tensor: how the markup refers to it */
    char **lname;           /* per node: its markup name */
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

static void attr_i(const mw *w, const char *name, int64_t v)
{
    fprintf(w->f, " %s=\"%lld\"", name, (long long)v);
}
static void attr_b(const mw *w, const char *name, bool v)
{
    fprintf(w->f, " %s=\"%s\"", name, v ? "true" : "false");
}
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

/* The attributes whose writing is not one plain type (NTP_WRITE_SPECIAL in
 * op-attrs.c). */
static void write_special(const mw *w, const ntp_node *n, const ntp_attr_decl *d,
                          const ntp_attrs *a2)
{
    const ntp_attrs *a = &n->a;
    if (n->op == NTP_OP_PRELU) {
        if (a->n_shape > 0 && ntp_shape_numel(&w->g->tensors[n->w[0]].shape) == 1)
            attr_b(w, d->name, true);
    } else if (n->op == NTP_OP_CONSTANT) {
        /* A scalar is written as [1] (the markup's shapes have a dim or
         * more): the same value, and it broadcasts alike. */
        if (a->n_shape == 0)
            attr_s(w, d->name, "1");
        else
            ints(w, d->name, a->shape, a2 ? a2->shape : NULL, a->n_shape);
    } else if (d->parse == NTP_PARSE_STARTS || d->parse == NTP_PARSE_ENDS) {
        bool ends = d->parse == NTP_PARSE_ENDS;
        ints(w, d->name, ends ? a->slice.ends : a->slice.starts,
             a2 ? (ends ? a2->slice.ends : a2->slice.starts) : NULL, a->slice.n);
    } else if (d->parse == NTP_PARSE_SCALES && a->n_shape == 0) {
        /* Resize by scales (by sizes when n_shape > 0: the sizes row). */
        fprintf(w->f, " %s=\"", d->name);
        for (int k = 0; k < a->resize.n_scales; k++) {
            if (k)
                fputc(',', w->f);
            num(w->f,
                (double)(float)((double)a->resize.scale_num[k] / (double)a->resize.scale_den[k]));
        }
        fputc('"', w->f);
    }
}

static const char *enum_name(const ntp_attr_decl *d, int k)
{
    return k >= 0 && k < d->n_names ? d->names[k] : d->names[0];
}

/* One declared attribute of the layer, if the declaration says it is
 * written; a2 is the same layer at the other batch. */
static void write_attr(const mw *w, const ntp_node *n, const ntp_attr_decl *d, const ntp_attrs *a2)
{
    const ntp_attrs *a = &n->a;
    const void *p = d->field >= 0 ? ntp__attr_cptr(a, d->field) : NULL;
    int count = d->count ? *(const int *)ntp__attr_cptr(a, d->count) : 0;
    switch (d->write) {
    case NTP_WRITE_ALWAYS: break;
    case NTP_WRITE_NEVER: return;
    case NTP_WRITE_IF_HAS:
        if (!*(const bool *)ntp__attr_cptr(a, d->has))
            return;
        break;
    case NTP_WRITE_IF_FINITE:
        if (isinf(*(const double *)p))
            return;
        break;
    case NTP_WRITE_IF_ANY:
        if (d->type == NTP_ATTR_STRING ? *(char *const *)p == NULL : count <= 0)
            return;
        break;
    case NTP_WRITE_SPATIAL:
        /* As shape inference expanded them: nk values, pads begins then ends. */
        count = d->parse == NTP_PARSE_SPATIAL_PAD ? 2 * a->nk : a->nk;
        break;
    case NTP_WRITE_SPECIAL: write_special(w, n, d, a2); return;
    }
    switch (d->type) {
    case NTP_ATTR_INT: attr_i(w, d->name, *(const int64_t *)p); break;
    case NTP_ATTR_INTS:
    case NTP_ATTR_SPECIAL: {
        const int64_t *v2 = a2 && (d->flags & NTP_ATTR_BATCH)
                                ? (const int64_t *)ntp__attr_cptr(a2, d->field)
                                : NULL;
        ints(w, d->name, (const int64_t *)p, v2, count);
        break;
    }
    case NTP_ATTR_FLOAT: attr_f(w, d->name, *(const double *)p); break;
    case NTP_ATTR_BOOL: attr_b(w, d->name, *(const bool *)p); break;
    case NTP_ATTR_ENUM: attr_s(w, d->name, enum_name(d, *(const int *)p)); break;
    case NTP_ATTR_CHOICE: attr_s(w, d->name, enum_name(d, *(const bool *)p ? 1 : 0)); break;
    case NTP_ATTR_STRING: attr_s(w, d->name, *(char *const *)p); break;
    case NTP_ATTR_DTYPE: attr_s(w, d->name, ntp_dtype_name(*(const ntp_dtype *)p)); break;
    case NTP_ATTR_LAYOUT:
        attr_s(w, d->name, *(const ntp_layout *)p == NTP_LAYOUT_NHWC ? "nhwc" : "nchw");
        break;
    }
}

/* The layer's own attributes, as op-attrs.h declares them: every one it
 * has, so that nothing is left to defaults. */
static ntp_status attrs(mw *w, const ntp_node *n, const ntp_attrs *a2)
{
    int nd;
    const ntp_attr_decl *d = ntp__op_attrs(n->op, &nd);
    for (int i = 0; i < nd; i++)
        write_attr(w, n, &d[i], a2);
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
