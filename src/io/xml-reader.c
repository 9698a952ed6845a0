/* The ntprof markup reader (docs/topology-format.md).
 *
 * Loading runs in phases, each reporting the first problem as one line
 * "FILE:LINE: <element name='x'>: what was expected":
 *
 *   1. parse      libxml2 builds the tree (src/io/xml-parse.c): no DTD is
 *                 accepted, no entity expanded, no network touched, and
 *                 libxml2's own messages are captured, never printed.
 *   2. check      every element, attribute name and text node is checked
 *                 statically, including repeat bodies that expand to nothing.
 *   3. params     <param> declarations get their final values (--set,
 *                 --batch), then the topology's own attributes are read.
 *   4. walk       elements are instantiated in document order, repeats
 *                 expanded, ${...} substituted, layers created with their
 *                 attributes and output tensors; names are registered.
 *   5. wire       aliases, layer inputs and marker ends are resolved by
 *                 name; a layer may name one defined later (a DAG).
 *   6. finalize   ntp__graph_finalize() orders, infers shapes, plans memory
 *                 and checks the budget.
 *
 * Names are looked up through a hash table (src/io/xml-names.c), so
 * topologies of a million layers load in linear time. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/ctx-impl.h"
#include "file-impl.h"
#include "expr-impl.h"
#include "io-impl.h"
#include "xml-impl.h"

#define MAX_ATTRS 32

/* --- reader state -------------------------------------------------------- */

typedef struct alias_rec {
    char *name;
    char *of;  /* the reference as written; NULL: the chain output */
    int chain; /* chain tensor where the alias stands; -1: the first <input> */
    int line;
    int state; /* 0 unresolved, 1 being resolved, 2 resolved */
    int tensor;
} alias_rec;

typedef struct pending_in {
    char *spec; /* the `inputs` attribute after substitution, or NULL */
    int chain;  /* otherwise the chain tensor; -1: the first <input> */
} pending_in;

typedef struct marker_ref {
    char *from, *to;
} marker_ref;

typedef struct reader {
    ntp_ctx *ctx;
    const ntp_load_opts *opts;
    const char *src;
    xmlDocPtr doc;
    ntp_graph *g;
    /* Names visible to ${...}: the params, then the repeat indices of the
     * enclosing repeats (pushed and popped during the walk). */
    ntp_expr_var *vars;
    int n_vars, cap_vars;
    ntp_xml_names names;
    alias_rec *aliases;
    int n_aliases, cap_aliases;
    pending_in *pend; /* per node */
    int cap_pend;
    marker_ref *mref; /* per marker */
    int cap_markers, cap_inputs, cap_params;
    int chain;                        /* output tensor of the previous layer; -1 before the first */
    int64_t expanded;                 /* elements instantiated so far */
    int64_t param_bytes, subst_bytes; /* substituted so far (xml-impl.h limits) */
    ntp__xml_limits lim;              /* the work limits in force */
} reader;

static int line_of(xmlNodePtr el)
{
    long l = xmlGetLineNo(el);
    return l > 0 && l < 0x7fffffff ? (int)l : 0;
}

static const char *el_name(xmlNodePtr el)
{
    return (const char *)el->name;
}

/* "FILE:LINE: <elem name='x'>: message". */
static ntp_status el_error(reader *r, xmlNodePtr el, const char *name, ntp_status st,
                           const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static ntp_status el_error(reader *r, xmlNodePtr el, const char *name, ntp_status st,
                           const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ntp__error_at(
        r->ctx, st,
        &(ntp__where){.file = r->src, .line = line_of(el), .element = el_name(el), .layer = name},
        "%s", msg);
}

static ntp_status oom(reader *r)
{
    return ntp__error(r->ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory", r->src);
}

/* Grow an array of `size`-byte items to hold at least `need`. */
static bool grow(void **p, int *cap, int need, size_t size)
{
    if (need <= *cap)
        return true;
    int c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, (size_t)c * size);
    if (!q)
        return false;
    *p = q;
    *cap = c;
    return true;
}

static ntp_expr_env env_at(const reader *r, int line)
{
    return (ntp_expr_env){r->vars, r->n_vars, line};
}

/* --- phase 2: static checks ------------------------------------------------ */

static const char *const topology_attrs[] = {"name", "precision", "batch"};
static const char *const param_attrs[] = {"name", "default"};
static const char *const input_attrs[] = {"name", "shape", "dtype", "layout"};
static const char *const alias_attrs[] = {"name", "of"};
static const char *const repeat_attrs[] = {"count", "index"};
static const char *const marker_attrs[] = {"name", "from", "to", "tool"};
static const char *const structural[] = {"param", "input", "alias", "repeat", "marker"};

#define COUNT_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The attribute names `el` accepts, into names[]; returns the count. */
static int accepted_attrs(xmlNodePtr el, const char **names, int max)
{
    const char *e = el_name(el);
    const char *const *fixed = NULL;
    int n = 0;
    if (strcmp(e, "topology") == 0)
        fixed = topology_attrs, n = COUNT_OF(topology_attrs);
    else if (strcmp(e, "param") == 0)
        fixed = param_attrs, n = COUNT_OF(param_attrs);
    else if (strcmp(e, "input") == 0)
        fixed = input_attrs, n = COUNT_OF(input_attrs);
    else if (strcmp(e, "alias") == 0)
        fixed = alias_attrs, n = COUNT_OF(alias_attrs);
    else if (strcmp(e, "repeat") == 0)
        fixed = repeat_attrs, n = COUNT_OF(repeat_attrs);
    else if (strcmp(e, "marker") == 0)
        fixed = marker_attrs, n = COUNT_OF(marker_attrs);
    if (fixed) {
        for (int i = 0; i < n && i < max; i++)
            names[i] = fixed[i];
        return n;
    }
    ntp_op op = ntp__op_from_name(e);
    for (int i = 0; i < ntp__xml_n_common_attrs && n < max; i++)
        names[n++] = ntp__xml_common_attrs[i];
    return n + ntp__xml_op_attr_names(op, names + n, max - n);
}

static bool is_structural(const char *e)
{
    for (int i = 0; i < COUNT_OF(structural); i++)
        if (strcmp(e, structural[i]) == 0)
            return true;
    return false;
}

static ntp_status unknown_element(reader *r, xmlNodePtr el)
{
    const char *cand[NTP_OP_COUNT + COUNT_OF(structural)];
    int n = 0;
    for (int i = 0; i < NTP_OP_COUNT; i++)
        cand[n++] = ntp__op_name((ntp_op)i);
    for (int i = 0; i < COUNT_OF(structural); i++)
        cand[n++] = structural[i];
    const char *near = ntp__nearest(el_name(el), cand, n);
    if (near)
        return ntp__error_at(r->ctx, NTP_STATUS_UNKNOWN_NAME,
                             &(ntp__where){.file = r->src, .line = line_of(el)},
                             "unknown layer type '%s'; did you mean '%s'?", el_name(el), near);
    return ntp__error_at(
        r->ctx, NTP_STATUS_UNKNOWN_NAME, &(ntp__where){.file = r->src, .line = line_of(el)},
        "unknown layer type '%s' (see docs/ops.md for the layer types)", el_name(el));
}

static ntp_status check_attr_names(reader *r, xmlNodePtr el)
{
    const char *names[MAX_ATTRS];
    int n = accepted_attrs(el, names, MAX_ATTRS);
    for (xmlAttrPtr a = el->properties; a; a = a->next) {
        const char *an = (const char *)a->name;
        bool ok = false;
        for (int i = 0; a->ns == NULL && i < n && !ok; i++)
            ok = strcmp(an, names[i]) == 0;
        if (!ok) {
            const char *near = ntp__nearest(an, names, n);
            if (near)
                return ntp__error_at(r->ctx, NTP_STATUS_UNKNOWN_NAME,
                                     &(ntp__where){.file = r->src, .line = line_of(el)},
                                     "unknown attribute '%s' on <%s>; did you mean '%s'?", an,
                                     el_name(el), near);
            return ntp__error_at(r->ctx, NTP_STATUS_UNKNOWN_NAME,
                                 &(ntp__where){.file = r->src, .line = line_of(el)},
                                 "unknown attribute '%s' on <%s>", an, el_name(el));
        }
        xmlChar *v = xmlNodeListGetString(r->doc, a->children, 1);
        size_t vlen = v ? strlen((const char *)v) : 0;
        xmlFree(v);
        if (vlen > NTP_XML_MAX_ATTR_BYTES)
            return el_error(r, el, NULL, NTP_STATUS_PARSE_ERROR,
                            "attribute '%s' is %zu bytes long, more than the limit of %d", an, vlen,
                            NTP_XML_MAX_ATTR_BYTES);
    }
    return NTP_STATUS_OK;
}

/* Text is meaningless in the markup; report it rather than ignore a
 * misplaced value. */
static ntp_status check_text(reader *r, xmlNodePtr t, xmlNodePtr parent)
{
    const xmlChar *c = t->content;
    for (; c && *c; c++)
        if (*c != ' ' && *c != '\t' && *c != '\n' && *c != '\r')
            return el_error(r, parent, NULL, NTP_STATUS_PARSE_ERROR,
                            "unexpected text '%.32s' (the markup uses attributes only)",
                            (const char *)c);
    return NTP_STATUS_OK;
}

static ntp_status check_tree(reader *r, xmlNodePtr el, int depth)
{
    ntp_status st;
    if (depth > NTP_XML_MAX_DEPTH)
        return el_error(r, el, NULL, NTP_STATUS_PARSE_ERROR, "elements nest deeper than %d levels",
                        NTP_XML_MAX_DEPTH);
    const char *e = el_name(el);
    bool container = depth == 1 || strcmp(e, "repeat") == 0;
    if (depth > 1) {
        if (strcmp(e, "topology") == 0)
            return ntp__error(r->ctx, NTP_STATUS_PARSE_ERROR,
                              "%s:%d: <topology> is the root element and cannot be nested", r->src,
                              line_of(el));
        if (!is_structural(e) && ntp__op_from_name(e) == NTP_OP_COUNT)
            return unknown_element(r, el);
        if (strcmp(e, "param") == 0 && depth > 2)
            return ntp__error(r->ctx, NTP_STATUS_PARSE_ERROR,
                              "%s:%d: <param> is allowed only directly inside <topology>", r->src,
                              line_of(el));
    }
    if ((st = check_attr_names(r, el)) != NTP_STATUS_OK)
        return st;
    for (xmlNodePtr c = el->children; c; c = c->next) {
        /* libxml2's node types are its own and differ between its versions
         * (XML_DOCB_DOCUMENT_NODE comes and goes), so this switch names the
         * ones that matter and leaves the rest to default: over an int. */
        switch ((int)c->type) {
        case XML_ELEMENT_NODE:
            if (!container)
                return ntp__error(r->ctx, NTP_STATUS_PARSE_ERROR,
                                  "%s:%d: <%s> cannot be inside <%s>: only <topology> and "
                                  "<repeat> contain elements",
                                  r->src, line_of(c), el_name(c), e);
            if ((st = check_tree(r, c, depth + 1)) != NTP_STATUS_OK)
                return st;
            break;
        case XML_TEXT_NODE:
        case XML_CDATA_SECTION_NODE:
            if ((st = check_text(r, c, el)) != NTP_STATUS_OK)
                return st;
            break;
        case XML_ENTITY_REF_NODE:
        case XML_ENTITY_NODE:
            return el_error(r, el, NULL, NTP_STATUS_PARSE_ERROR,
                            "DTDs and entities are not accepted");
        default: break; /* comments and processing instructions */
        }
    }
    return NTP_STATUS_OK;
}

/* --- attribute values ---------------------------------------------------- */

/* An element's attributes, after ${...} substitution. */
typedef struct attr_set {
    int n;
    ntp_xml_attr a[MAX_ATTRS];
    char *val[MAX_ATTRS];
} attr_set;

static void attrs_free(attr_set *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->val[i]);
    s->n = 0;
}

static const char *attrs_get(const attr_set *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->a[i].name, name) == 0)
            return s->a[i].value;
    return NULL;
}

/* How gather() treats ${...}: kept as written, substituted with the names
 * visible at the element's line, or with every param. */
typedef enum gather_mode { GATHER_RAW, GATHER_EXPAND, GATHER_EXPAND_ALL } gather_mode;

static ntp_status subst_one(reader *r, xmlNodePtr el, const char *label, xmlAttrPtr a,
                            gather_mode mode, attr_set *s)
{
    if (s->n == MAX_ATTRS)
        return el_error(r, el, label, NTP_STATUS_PARSE_ERROR, "too many attributes");
    xmlChar *raw = xmlNodeListGetString(r->doc, a->children, 1);
    const char *v = raw ? (const char *)raw : "";
    char err[640];
    char *out = NULL;
    ntp_status st;
    if (mode != GATHER_RAW) {
        ntp_expr_env env = env_at(r, mode == GATHER_EXPAND ? line_of(el) : 0);
        st = ntp__expr_subst(v, &env, &out, err, sizeof err);
    } else {
        out = ntp__strdup(v);
        st = out ? NTP_STATUS_OK : NTP_STATUS_OUT_OF_MEMORY;
        snprintf(err, sizeof err, "out of memory");
    }
    xmlFree(raw);
    if (st != NTP_STATUS_OK)
        return el_error(r, el, label, st, "attribute '%s': %s", (const char *)a->name, err);
    r->subst_bytes += (int64_t)strlen(out);
    if (r->subst_bytes > r->lim.subst_bytes) {
        free(out);
        return el_error(r, el, label, NTP_STATUS_PARSE_ERROR,
                        "attribute '%s': the substituted attributes add up to more than %lld MiB",
                        (const char *)a->name, (long long)(r->lim.subst_bytes >> 20));
    }
    s->a[s->n].name = (const char *)a->name;
    s->a[s->n].value = out;
    s->val[s->n++] = out;
    return NTP_STATUS_OK;
}

/* Gather el's attributes into s. The name attribute goes first, so later
 * messages can name the element. */
static ntp_status gather(reader *r, xmlNodePtr el, gather_mode mode, attr_set *s)
{
    ntp_status st;
    s->n = 0;
    xmlAttrPtr name_attr = xmlHasProp(el, (const xmlChar *)"name");
    if (name_attr && (st = subst_one(r, el, NULL, name_attr, mode, s)) != NTP_STATUS_OK)
        return st;
    const char *label = name_attr ? s->a[0].value : NULL;
    for (xmlAttrPtr a = el->properties; a; a = a->next)
        if (a != name_attr && (st = subst_one(r, el, label, a, mode, s)) != NTP_STATUS_OK) {
            attrs_free(s);
            return st;
        }
    return NTP_STATUS_OK;
}

static ntp_status require(reader *r, xmlNodePtr el, const attr_set *s, const char *attr,
                          const char **out)
{
    *out = attrs_get(s, attr);
    if (!*out)
        return el_error(r, el, attrs_get(s, "name"), NTP_STATUS_PARSE_ERROR,
                        "missing required attribute '%s'", attr);
    return NTP_STATUS_OK;
}

/* Names end up in references ("a,b", "split:1") and messages, so the
 * characters those use are refused. */
static ntp_status check_name(reader *r, xmlNodePtr el, const char *name)
{
    size_t n = strlen(name);
    if (n == 0)
        return el_error(r, el, name, NTP_STATUS_PARSE_ERROR, "attribute 'name' is empty");
    if (n > NTP_XML_MAX_NAME_BYTES)
        return el_error(r, el, NULL, NTP_STATUS_PARSE_ERROR,
                        "attribute 'name' is %zu bytes long, more than the limit of %d", n,
                        NTP_XML_MAX_NAME_BYTES);
    const char *bad = strpbrk(name, ",: \t\r\n'\"");
    if (bad)
        return el_error(r, el, name, NTP_STATUS_PARSE_ERROR,
                        "attribute 'name': '%c' is not allowed in names (commas, colons, quotes "
                        "and blanks are reserved)",
                        *bad);
    return NTP_STATUS_OK;
}

static const char *kind_element(const reader *r, const ntp_xml_name *e)
{
    switch (e->kind) {
    case NTP_XML_NAME_LAYER: return ntp__op_name(r->g->nodes[e->index].op);
    case NTP_XML_NAME_INPUT: return "input";
    case NTP_XML_NAME_ALIAS: return "alias";
    case NTP_XML_NAME_MARKER: return "marker";
    }
    return "?";
}

/* Layers, inputs, aliases and markers share one namespace. */
static ntp_status check_unique(reader *r, xmlNodePtr el, const char *name)
{
    int k = ntp__xml_names_find(&r->names, name);
    if (k < 0)
        return NTP_STATUS_OK;
    const ntp_xml_name *e = &r->names.e[k];
    return el_error(r, el, name, NTP_STATUS_GRAPH_ERROR,
                    "duplicate name: '%s' is already used by <%s> on line %d (this is line %d)",
                    name, kind_element(r, e), e->line, line_of(el));
}

static ntp_status register_name(reader *r, const char *name, ntp_xml_name_kind kind, int index,
                                int line)
{
    return ntp__xml_names_add(&r->names, name, kind, index, line) ? NTP_STATUS_OK : oom(r);
}

/* --- phase 3: params and the topology element ------------------------------ */

/* The value --set gives `name`, or NULL (the last one wins). */
static const char *set_value(const reader *r, const char *name)
{
    const char *found = NULL;
    size_t n = strlen(name);
    for (int i = 0; i < r->opts->n_set; i++) {
        const char *s = r->opts->set[i];
        if (strncmp(s, name, n) == 0 && s[n] == '=')
            found = s + n + 1;
    }
    return found;
}

static ntp_status add_param(reader *r, const char *name, const char *value, int line)
{
    ntp_graph *g = r->g;
    if (!grow((void **)&g->params, &r->cap_params, g->n_params + 1, sizeof *g->params) ||
        !grow((void **)&r->vars, &r->cap_vars, r->n_vars + 1, sizeof *r->vars))
        return oom(r);
    ntp_param *p = &g->params[g->n_params];
    p->name = ntp__strdup(name);
    p->value = ntp__strdup(value);
    p->line = line;
    if (!p->name || !p->value) {
        free(p->name);
        free(p->value);
        return oom(r);
    }
    g->n_params++;
    r->vars[r->n_vars++] = (ntp_expr_var){p->name, p->value, line};
    return NTP_STATUS_OK;
}

/* The final value of param `name`: --batch, then --set, then the default
 * (substituted with the params declared before it). */
static ntp_status param_value(reader *r, xmlNodePtr el, const char *label, const char *attr,
                              const char *name, const char *def, int line, char **out)
{
    char err[640];
    if (strcmp(name, "batch") == 0 && r->opts->batch > 0) {
        char num[32];
        snprintf(num, sizeof num, "%lld", (long long)r->opts->batch);
        *out = ntp__strdup(num);
        return *out ? NTP_STATUS_OK : oom(r);
    }
    const char *set = set_value(r, name);
    if (set) {
        *out = ntp__strdup(set);
        return *out ? NTP_STATUS_OK : oom(r);
    }
    if (!def)
        return el_error(r, el, label, NTP_STATUS_PARSE_ERROR,
                        "param '%s' has no default: give it with ntp_load_opts.set %s=VALUE", name,
                        name);
    ntp_expr_env env = env_at(r, line);
    ntp_status st = ntp__expr_subst(def, &env, out, err, sizeof err);
    if (st != NTP_STATUS_OK)
        return el_error(r, el, label, st, "attribute '%s': %s", attr, err);
    r->param_bytes += (int64_t)strlen(*out);
    if (r->param_bytes > NTP_XML_MAX_PARAM_BYTES) {
        free(*out);
        *out = NULL;
        return el_error(r, el, label, NTP_STATUS_PARSE_ERROR,
                        "param '%s': the params' values add up to more than %lld MiB", name,
                        (long long)(NTP_XML_MAX_PARAM_BYTES >> 20));
    }
    return NTP_STATUS_OK;
}

static ntp_status read_params(reader *r, xmlNodePtr root)
{
    ntp_status st = NTP_STATUS_OK;
    const ntp_load_opts *o = r->opts;
    if (o->n_set > 0 && !o->set)
        return ntp__error(r->ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "%d ntp_load_opts.set values given as NULL", o->n_set);
    for (int i = 0; i < o->n_set; i++) {
        const char *s = o->set[i];
        const char *eq = s ? strchr(s, '=') : NULL;
        if (!eq || eq == s)
            return ntp__error_at(
                r->ctx, NTP_STATUS_INVALID_ARGUMENT,
                &(ntp__where){.option = "ntp_load_opts.set", .expected = "NAME=VALUE"},
                "'%s': expected NAME=VALUE", s ? s : "(null)");
    }
    /* Every declared name first, so a misspelt --set is reported as such
     * before any value is computed. */
    int n_decl = 0, cap_decl = 0;
    const char **decl = NULL;
    bool has_batch = xmlHasProp(root, (const xmlChar *)"batch") != NULL;
    if (has_batch) {
        if (!grow((void **)&decl, &cap_decl, 1, sizeof *decl))
            return oom(r);
        decl[n_decl++] = "batch";
    }
    int first_raw = n_decl;
    for (xmlNodePtr c = root->children; c && st == NTP_STATUS_OK; c = c->next)
        if (c->type == XML_ELEMENT_NODE && strcmp(el_name(c), "param") == 0) {
            xmlChar *nm = xmlGetProp(c, (const xmlChar *)"name");
            if (!nm)
                continue; /* reported below, in document order */
            if (strcmp((const char *)nm, "batch") == 0)
                has_batch = true;
            if (!grow((void **)&decl, &cap_decl, n_decl + 1, sizeof *decl)) {
                xmlFree(nm);
                st = oom(r);
                break;
            }
            decl[n_decl++] = (const char *)nm;
        }
    for (int i = 0; i < o->n_set && st == NTP_STATUS_OK; i++) {
        const char *s = o->set[i];
        size_t n = (size_t)(strchr(s, '=') - s);
        bool found = false;
        for (int k = 0; k < n_decl && !found; k++)
            found = strlen(decl[k]) == n && strncmp(decl[k], s, n) == 0;
        if (!found) {
            char name[128];
            snprintf(name, sizeof name, "%.*s", n < 100 ? (int)n : 100, s);
            const char *near = ntp__nearest(name, decl, n_decl);
            if (near)
                st = ntp__error(r->ctx, NTP_STATUS_UNKNOWN_NAME,
                                "no param '%s' in %s; did you mean '%s'?", name, r->src, near);
            else
                st = ntp__error(r->ctx, NTP_STATUS_UNKNOWN_NAME, "no param '%s' in %s", name,
                                r->src);
        }
    }
    for (int i = first_raw; i < n_decl; i++)
        xmlFree((xmlChar *)decl[i]);
    free(decl);
    if (st != NTP_STATUS_OK)
        return st;
    if (o->batch > 0 && !has_batch)
        return ntp__error(r->ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "%s: a batch size was given, but the topology declares no 'batch' param "
                          "(add batch=\"1\" to <topology>)",
                          r->src);

    /* batch="N" on <topology> is a <param name="batch"> declared first. */
    xmlChar *batch = xmlGetProp(root, (const xmlChar *)"batch");
    if (batch) {
        char *v = NULL;
        st = param_value(r, root, NULL, "batch", "batch", (const char *)batch, line_of(root), &v);
        xmlFree(batch);
        if (st == NTP_STATUS_OK)
            st = add_param(r, "batch", v, line_of(root));
        if (st == NTP_STATUS_OK)
            r->g->batch = strtoll(v, NULL, 10);
        free(v);
        if (st != NTP_STATUS_OK)
            return st;
    }
    for (xmlNodePtr c = root->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE || strcmp(el_name(c), "param") != 0)
            continue;
        attr_set s;
        if ((st = gather(r, c, GATHER_RAW, &s)) != NTP_STATUS_OK)
            return st;
        const char *name;
        char *v = NULL;
        int line = line_of(c);
        if ((st = require(r, c, &s, "name", &name)) != NTP_STATUS_OK)
            goto next;
        if (!ntp__expr_is_ident(name)) {
            st = el_error(r, c, name, NTP_STATUS_PARSE_ERROR,
                          "a param name must be an identifier (letters, digits and _, not "
                          "starting with a digit)");
            goto next;
        }
        for (int i = 0; i < r->g->n_params; i++)
            if (strcmp(r->g->params[i].name, name) == 0) {
                st = el_error(r, c, name, NTP_STATUS_GRAPH_ERROR,
                              "param '%s' is already declared on line %d (this is line %d)", name,
                              r->g->params[i].line, line);
                goto next;
            }
        if ((st = param_value(r, c, name, "default", name, attrs_get(&s, "default"), line, &v)) ==
            NTP_STATUS_OK)
            st = add_param(r, name, v, line);
        /* The graph's batch is the param "batch" (the only name --batch sets). */
        if (st == NTP_STATUS_OK && strcmp(name, "batch") == 0)
            r->g->batch = strtoll(v, NULL, 10);
    next:
        free(v);
        attrs_free(&s);
        if (st != NTP_STATUS_OK)
            return st;
    }
    return NTP_STATUS_OK;
}

static ntp_status read_topology_attrs(reader *r, xmlNodePtr root)
{
    attr_set s;
    ntp_status st;
    char err[640];
    /* The topology's own attributes see every param: they belong to it. */
    if ((st = gather(r, root, GATHER_EXPAND_ALL, &s)) != NTP_STATUS_OK)
        return st;
    const char *name = attrs_get(&s, "name");
    const char *prec = attrs_get(&s, "precision");
    ntp_dtype p = NTP_DTYPE_F32;
    if (!name) {
        st = el_error(r, root, NULL, NTP_STATUS_PARSE_ERROR, "missing required attribute 'name'");
    } else if (name[0] == '\0') {
        st = el_error(r, root, name, NTP_STATUS_PARSE_ERROR, "attribute 'name' is empty");
    } else if (prec &&
               (st = ntp__xml_parse_precision(prec, &p, err, sizeof err)) != NTP_STATUS_OK) {
        st = el_error(r, root, name, st, "attribute 'precision': %s", err);
    } else {
        /* The override was checked by the loader (load.c). */
        if (r->opts->set_precision)
            p = r->opts->precision;
        char *copy = ntp__strdup(name);
        if (!copy) {
            st = oom(r);
        } else {
            free(r->g->name);
            r->g->name = copy;
            /* Before any layer exists: nodes take the graph's precision. */
            r->g->precision = p;
        }
    }
    attrs_free(&s);
    return st;
}

/* --- phase 4: the walk ------------------------------------------------------ */

static ntp_status walk(reader *r, xmlNodePtr parent);

static ntp_status count_expansion(reader *r, xmlNodePtr el)
{
    if (++r->expanded > r->lim.expanded)
        return el_error(r, el, NULL, NTP_STATUS_PARSE_ERROR,
                        "the topology expands to more than %lld elements",
                        (long long)r->lim.expanded);
    return NTP_STATUS_OK;
}

static ntp_status read_input(reader *r, xmlNodePtr el)
{
    attr_set s;
    ntp_status st;
    char err[640], buf[160];
    if ((st = gather(r, el, GATHER_EXPAND, &s)) != NTP_STATUS_OK)
        return st;
    const char *name, *shape, *dtype = attrs_get(&s, "dtype"), *layout = attrs_get(&s, "layout");
    ntp_shape sh = {0};
    ntp_dtype t = NTP_DTYPE_F32;
    ntp_layout lay = NTP_LAYOUT_ANY;
    if ((st = require(r, el, &s, "name", &name)) != NTP_STATUS_OK ||
        (st = check_name(r, el, name)) != NTP_STATUS_OK ||
        (st = check_unique(r, el, name)) != NTP_STATUS_OK ||
        (st = require(r, el, &s, "shape", &shape)) != NTP_STATUS_OK)
        goto done;
    if ((st = ntp__xml_parse_int_list(shape, 1, NTP_MAX_DIMS, sh.dim, &sh.ndim, err, sizeof err)) !=
        NTP_STATUS_OK) {
        st = el_error(r, el, name, st, "attribute 'shape': %s", err);
        goto done;
    }
    if (dtype && (st = ntp__xml_parse_dtype(dtype, &t, err, sizeof err)) != NTP_STATUS_OK) {
        st = el_error(r, el, name, st, "attribute 'dtype': %s", err);
        goto done;
    }
    if (layout && (st = ntp__xml_parse_layout(layout, &lay, err, sizeof err)) != NTP_STATUS_OK) {
        st = el_error(r, el, name, st, "attribute 'layout': %s", err);
        goto done;
    }
    if (!layout)
        lay = sh.ndim >= 3 && sh.ndim <= 5 ? NTP_LAYOUT_NCHW : NTP_LAYOUT_ANY;
    int64_t numel = ntp_shape_numel(&sh), bytes;
    if (numel < 0 || !ntp__mul_ok(numel, (int64_t)ntp_dtype_size(t), &bytes)) {
        st = el_error(r, el, name, NTP_STATUS_OVERFLOW,
                      "shape %s is too large: its size in bytes overflows 64 bits",
                      ntp_shape_str(&sh, buf, sizeof buf));
        goto done;
    }
    if (!dtype)
        ntp__warn(r->ctx, "%s:%d: <input name='%s'>: no dtype given, assuming f32", r->src,
                  line_of(el), name);
    ntp_graph *g = r->g;
    if (!grow((void **)&g->inputs, &r->cap_inputs, g->n_inputs + 1, sizeof *g->inputs)) {
        st = oom(r);
        goto done;
    }
    int ti = ntp__graph_add_tensor(g, name, NTP_TENSOR_INPUT);
    if (ti < 0) {
        st = oom(r);
        goto done;
    }
    g->tensors[ti].shape = sh;
    g->tensors[ti].dtype = t;
    g->tensors[ti].layout = lay;
    g->inputs[g->n_inputs++] = ti;
    st = register_name(r, g->tensors[ti].name, NTP_XML_NAME_INPUT, ti, line_of(el));
done:
    attrs_free(&s);
    return st;
}

static ntp_status read_alias(reader *r, xmlNodePtr el)
{
    attr_set s;
    ntp_status st;
    if ((st = gather(r, el, GATHER_EXPAND, &s)) != NTP_STATUS_OK)
        return st;
    const char *name, *of = attrs_get(&s, "of");
    if ((st = require(r, el, &s, "name", &name)) != NTP_STATUS_OK ||
        (st = check_name(r, el, name)) != NTP_STATUS_OK ||
        (st = check_unique(r, el, name)) != NTP_STATUS_OK)
        goto done;
    if (of && (of[0] == '\0' || strchr(of, ','))) {
        st = el_error(r, el, name, NTP_STATUS_PARSE_ERROR,
                      "attribute 'of': expected one layer, input or alias name, got '%.64s'", of);
        goto done;
    }
    if (!grow((void **)&r->aliases, &r->cap_aliases, r->n_aliases + 1, sizeof *r->aliases)) {
        st = oom(r);
        goto done;
    }
    alias_rec *a = &r->aliases[r->n_aliases];
    memset(a, 0, sizeof *a);
    a->name = ntp__strdup(name);
    a->of = of ? ntp__strdup(of) : NULL;
    if (!a->name || (of && !a->of)) {
        free(a->name);
        free(a->of);
        st = oom(r);
        goto done;
    }
    a->chain = r->chain;
    a->line = line_of(el);
    a->tensor = -1;
    r->n_aliases++;
    st = register_name(r, a->name, NTP_XML_NAME_ALIAS, r->n_aliases - 1, a->line);
done:
    attrs_free(&s);
    return st;
}

static ntp_status read_marker(reader *r, xmlNodePtr el)
{
    attr_set s;
    ntp_status st;
    if ((st = gather(r, el, GATHER_EXPAND, &s)) != NTP_STATUS_OK)
        return st;
    const char *name, *from, *to, *tool = attrs_get(&s, "tool");
    if ((st = require(r, el, &s, "name", &name)) != NTP_STATUS_OK ||
        (st = check_name(r, el, name)) != NTP_STATUS_OK ||
        (st = check_unique(r, el, name)) != NTP_STATUS_OK ||
        (st = require(r, el, &s, "from", &from)) != NTP_STATUS_OK ||
        (st = require(r, el, &s, "to", &to)) != NTP_STATUS_OK)
        goto done;
    ntp_graph *g = r->g;
    int cap = r->cap_markers;
    if (!grow((void **)&g->markers, &cap, g->n_markers + 1, sizeof *g->markers) ||
        !grow((void **)&r->mref, &r->cap_markers, g->n_markers + 1, sizeof *r->mref)) {
        st = oom(r);
        goto done;
    }
    ntp_marker *m = &g->markers[g->n_markers];
    marker_ref *mr = &r->mref[g->n_markers];
    memset(m, 0, sizeof *m);
    m->name = ntp__strdup(name);
    m->tool = tool ? ntp__strdup(tool) : NULL;
    m->line = line_of(el);
    m->first = m->last = -1;
    mr->from = ntp__strdup(from);
    mr->to = ntp__strdup(to);
    if (!m->name || (tool && !m->tool) || !mr->from || !mr->to) {
        free(m->name);
        free(m->tool);
        free(mr->from);
        free(mr->to);
        st = oom(r);
        goto done;
    }
    g->n_markers++;
    st = register_name(r, m->name, NTP_XML_NAME_MARKER, g->n_markers - 1, m->line);
done:
    attrs_free(&s);
    return st;
}

/* Gather a <repeat>'s attributes and check them: count (0 to the layer
 * limit) and index (an identifier no param or enclosing index uses). The
 * index points into s. */
static ntp_status repeat_header(reader *r, xmlNodePtr el, attr_set *s, int64_t *count,
                                const char **index)
{
    ntp_status st;
    char err[640];
    const char *count_s;
    if ((st = gather(r, el, GATHER_EXPAND, s)) != NTP_STATUS_OK)
        return st;
    *index = attrs_get(s, "index");
    if ((st = require(r, el, s, "count", &count_s)) != NTP_STATUS_OK)
        return st;
    if ((st = ntp__xml_parse_int(count_s, 0, count, err, sizeof err)) != NTP_STATUS_OK)
        return el_error(r, el, NULL, st, "attribute 'count': %s", err);
    if (*count > NTP_XML_MAX_LAYERS)
        return el_error(r, el, NULL, NTP_STATUS_PARSE_ERROR,
                        "attribute 'count': %lld is more than the limit of %d", (long long)*count,
                        NTP_XML_MAX_LAYERS);
    if (!*index)
        return NTP_STATUS_OK;
    if (!ntp__expr_is_ident(*index))
        return el_error(r, el, NULL, NTP_STATUS_PARSE_ERROR,
                        "attribute 'index': expected an identifier (letters, digits and _, not "
                        "starting with a digit), got '%.64s'",
                        *index);
    for (int i = 0; i < r->n_vars; i++)
        if (strcmp(r->vars[i].name, *index) == 0)
            return el_error(r, el, NULL, NTP_STATUS_PARSE_ERROR,
                            "attribute 'index': '%s' is already the name of %s", *index,
                            i < r->g->n_params ? "a param" : "an enclosing repeat's index");
    if (!grow((void **)&r->vars, &r->cap_vars, r->n_vars + 1, sizeof *r->vars))
        return oom(r);
    return NTP_STATUS_OK;
}

/* Run `body` for each iteration of the repeat `el` with its index bound. */
typedef ntp_status (*repeat_body)(reader *r, xmlNodePtr parent, void *arg);

static ntp_status each_iteration(reader *r, xmlNodePtr el, repeat_body body, void *arg)
{
    attr_set s;
    int64_t count = 0;
    const char *index = NULL;
    ntp_status st = repeat_header(r, el, &s, &count, &index);
    if (st != NTP_STATUS_OK) {
        attrs_free(&s);
        return st;
    }
    /* The index's value lives in this frame while the body runs. */
    char num[32] = "0";
    int slot = -1;
    if (index) {
        slot = r->n_vars++;
        r->vars[slot] = (ntp_expr_var){index, num, 0};
    }
    for (int64_t i = 0; i < count && st == NTP_STATUS_OK; i++) {
        snprintf(num, sizeof num, "%lld", (long long)i);
        if ((st = count_expansion(r, el)) == NTP_STATUS_OK)
            st = body(r, el, arg);
    }
    if (slot >= 0)
        r->n_vars--;
    attrs_free(&s);
    return st;
}

/* A dry run of the expansion that only counts layers, so that a topology
 * expanding past the limit is refused before a million nodes are built. A
 * repeat body without nested repeats is counted once and multiplied. */
static ntp_status count_layers(reader *r, xmlNodePtr parent, void *arg)
{
    int64_t *layers = arg;
    ntp_status st = NTP_STATUS_OK;
    for (xmlNodePtr c = parent->children; c && st == NTP_STATUS_OK; c = c->next) {
        if (c->type != XML_ELEMENT_NODE)
            continue;
        const char *e = el_name(c);
        if (strcmp(e, "repeat") == 0) {
            bool nested = false;
            int64_t direct = 0;
            for (xmlNodePtr b = c->children; b; b = b->next)
                if (b->type == XML_ELEMENT_NODE) {
                    nested |= strcmp(el_name(b), "repeat") == 0;
                    direct += ntp__op_from_name(el_name(b)) != NTP_OP_COUNT;
                }
            if (nested) {
                st = each_iteration(r, c, count_layers, layers);
                continue;
            }
            attr_set s;
            int64_t count = 0;
            const char *index = NULL;
            st = repeat_header(r, c, &s, &count, &index);
            attrs_free(&s);
            /* count and direct are both at most a few million: no overflow. */
            if (st == NTP_STATUS_OK)
                *layers += count * direct;
        } else if (ntp__op_from_name(e) != NTP_OP_COUNT) {
            ++*layers;
        }
        if (st == NTP_STATUS_OK && *layers > NTP_XML_MAX_LAYERS)
            st = el_error(r, c, NULL, NTP_STATUS_PARSE_ERROR,
                          "the topology expands to more than %d layers", NTP_XML_MAX_LAYERS);
    }
    return st;
}

static ntp_status walk_body(reader *r, xmlNodePtr parent, void *arg)
{
    return walk(r, parent);
}

static ntp_status read_repeat(reader *r, xmlNodePtr el)
{
    return each_iteration(r, el, walk_body, NULL);
}

static ntp_status read_layer(reader *r, xmlNodePtr el, ntp_op op)
{
    attr_set s;
    ntp_status st;
    char err[640];
    ntp_graph *g = r->g;
    if (g->n_nodes >= NTP_XML_MAX_LAYERS)
        return el_error(r, el, NULL, NTP_STATUS_PARSE_ERROR,
                        "the topology expands to more than %d layers", NTP_XML_MAX_LAYERS);
    if ((st = gather(r, el, GATHER_EXPAND, &s)) != NTP_STATUS_OK)
        return st;
    const char *name, *inputs = attrs_get(&s, "inputs"), *backend = attrs_get(&s, "backend"),
                      *prec = attrs_get(&s, "precision");
    ntp_dtype p = g->precision;
    if ((st = require(r, el, &s, "name", &name)) != NTP_STATUS_OK ||
        (st = check_name(r, el, name)) != NTP_STATUS_OK ||
        (st = check_unique(r, el, name)) != NTP_STATUS_OK)
        goto done;
    if (prec && (st = ntp__xml_parse_precision(prec, &p, err, sizeof err)) != NTP_STATUS_OK) {
        st = el_error(r, el, name, st, "attribute 'precision': %s", err);
        goto done;
    }
    if (backend && backend[0] == '\0') {
        st = el_error(r, el, name, NTP_STATUS_PARSE_ERROR, "attribute 'backend' is empty");
        goto done;
    }
    /* The inputs' syntax now (count, empty items); their meaning once
     * every name is known. */
    int n_in = 0;
    if (inputs) {
        const char *p0 = inputs;
        for (;;) {
            const char *comma = strchr(p0, ',');
            size_t len = comma ? (size_t)(comma - p0) : strlen(p0);
            if (strspn(p0, " \t\r\n") >= len) {
                st = el_error(r, el, name, NTP_STATUS_PARSE_ERROR,
                              "attribute 'inputs': empty name in '%.64s'", inputs);
                goto done;
            }
            n_in++;
            if (!comma)
                break;
            p0 = comma + 1;
        }
        int lo = ntp__op_min_inputs(op), hi = ntp__op_max_inputs(op);
        if (n_in > hi || n_in > NTP_MAX_INPUTS) {
            if (lo == hi)
                st = el_error(r, el, name, NTP_STATUS_GRAPH_ERROR, "takes %d input%s, got %d", lo,
                              lo == 1 ? "" : "s", n_in);
            else
                st = el_error(r, el, name, NTP_STATUS_GRAPH_ERROR, "takes %d to %d inputs, got %d",
                              lo, hi, n_in);
            goto done;
        }
    }
    if (!grow((void **)&r->pend, &r->cap_pend, g->n_nodes + 1, sizeof *r->pend)) {
        st = oom(r);
        goto done;
    }
    int ni = ntp__graph_add_node(g, name, op, line_of(el));
    if (ni < 0) {
        st = oom(r);
        goto done;
    }
    pending_in *pi = &r->pend[ni];
    pi->spec = NULL;
    pi->chain = r->chain;
    ntp_node *n = &g->nodes[ni];
    n->precision = p;
    if (backend && !(n->backend = ntp__strdup(backend))) {
        st = oom(r);
        goto done;
    }
    if (inputs && !(pi->spec = ntp__strdup(inputs))) {
        st = oom(r);
        goto done;
    }
    ntp_xml_attr own[MAX_ATTRS];
    int n_own = 0;
    for (int i = 0; i < s.n; i++) {
        bool common = false;
        for (int k = 0; k < ntp__xml_n_common_attrs; k++)
            common |= strcmp(s.a[i].name, ntp__xml_common_attrs[k]) == 0;
        if (!common)
            own[n_own++] = s.a[i];
    }
    int n_out = 1;
    if ((st = ntp__xml_parse_op_attrs(op, own, n_own, &n->a, &n_out, err, sizeof err)) !=
        NTP_STATUS_OK) {
        st = el_error(r, el, name, st, "%s", err);
        goto done;
    }
    for (int k = 0; k < n_out; k++) {
        char tname[NTP_XML_MAX_NAME_BYTES + 16];
        /* A split's outputs are "name:k" even when there is one: references
         * to them must not change with the number of parts. */
        if (op == NTP_OP_SPLIT)
            snprintf(tname, sizeof tname, "%s:%d", name, k);
        else
            snprintf(tname, sizeof tname, "%s", name);
        int ti = ntp__graph_add_tensor(g, tname, NTP_TENSOR_ACTIVATION);
        if (ti < 0) {
            st = oom(r);
            goto done;
        }
        g->tensors[ti].producer = ni;
        g->tensors[ti].producer_slot = k;
        n = &g->nodes[ni];
        n->out[k] = ti;
        n->n_out = k + 1;
    }
    if ((st = register_name(r, g->nodes[ni].name, NTP_XML_NAME_LAYER, ni, line_of(el))) !=
        NTP_STATUS_OK)
        goto done;
    r->chain = g->nodes[ni].out[0];
done:
    attrs_free(&s);
    return st;
}

static ntp_status walk(reader *r, xmlNodePtr parent)
{
    ntp_status st = NTP_STATUS_OK;
    for (xmlNodePtr c = parent->children; c && st == NTP_STATUS_OK; c = c->next) {
        if (c->type != XML_ELEMENT_NODE)
            continue;
        const char *e = el_name(c);
        if ((st = count_expansion(r, c)) != NTP_STATUS_OK)
            break;
        if (strcmp(e, "param") == 0)
            continue; /* read before the walk */
        else if (strcmp(e, "input") == 0)
            st = read_input(r, c);
        else if (strcmp(e, "alias") == 0)
            st = read_alias(r, c);
        else if (strcmp(e, "marker") == 0)
            st = read_marker(r, c);
        else if (strcmp(e, "repeat") == 0)
            st = read_repeat(r, c);
        else
            st = read_layer(r, c, ntp__op_from_name(e));
    }
    return st;
}

/* --- phase 5: wiring -------------------------------------------------------- */

/* Nearest among the names of the given kinds (a bitmask of 1 << kind). */
static const char *nearest_name(const reader *r, const char *word, unsigned kinds)
{
    const char **cand = malloc(((size_t)r->names.n + 1) * sizeof *cand);
    if (!cand)
        return NULL;
    int n = 0;
    for (int i = 0; i < r->names.n; i++)
        if (kinds & (1u << r->names.e[i].kind))
            cand[n++] = r->names.e[i].name;
    const char *near = ntp__nearest(word, cand, n);
    free(cand);
    return near;
}

#define REF_KINDS \
    ((1u << NTP_XML_NAME_LAYER) | (1u << NTP_XML_NAME_INPUT) | (1u << NTP_XML_NAME_ALIAS))

/* A reference "name" or "layer:k" split into its entry and output index
 * (-1 when no ":k" was written). The message goes into err. */
static ntp_status lookup_ref(const reader *r, const char *ref, int *entry, int *k, char *err,
                             size_t errlen)
{
    char buf[NTP_XML_MAX_NAME_BYTES + 32];
    while (*ref == ' ' || *ref == '\t' || *ref == '\n' || *ref == '\r')
        ref++;
    size_t n = strlen(ref);
    while (n > 0 &&
           (ref[n - 1] == ' ' || ref[n - 1] == '\t' || ref[n - 1] == '\n' || ref[n - 1] == '\r'))
        n--;
    if (n >= sizeof buf) {
        snprintf(err, errlen, "no layer, input or alias named '%.64s...'", ref);
        return NTP_STATUS_UNKNOWN_NAME;
    }
    memcpy(buf, ref, n);
    buf[n] = '\0';
    *k = -1;
    char *colon = strchr(buf, ':');
    if (colon) {
        *colon = '\0';
        int64_t v;
        if (!ntp__expr_parse_int(colon + 1, &v) || v < 0 || v >= NTP_MAX_OUTPUTS ||
            colon[1] == '+' || colon[1] == '-') {
            snprintf(err, errlen, "'%s:%s': expected an output number after ':'", buf, colon + 1);
            return NTP_STATUS_PARSE_ERROR;
        }
        *k = (int)v;
    }
    *entry = ntp__xml_names_find(&r->names, buf);
    if (*entry < 0) {
        const char *near = nearest_name(r, buf, REF_KINDS);
        if (near)
            snprintf(err, errlen, "no layer, input or alias named '%s'; did you mean '%s'?", buf,
                     near);
        else
            snprintf(err, errlen, "no layer, input or alias named '%s'", buf);
        return NTP_STATUS_UNKNOWN_NAME;
    }
    const ntp_xml_name *e = &r->names.e[*entry];
    if (e->kind == NTP_XML_NAME_MARKER) {
        snprintf(err, errlen, "'%s' is a <marker>, not a layer, input or alias", buf);
        return NTP_STATUS_GRAPH_ERROR;
    }
    if (*k >= 0 && e->kind != NTP_XML_NAME_LAYER) {
        snprintf(err, errlen, "'%s' is an <%s>: it has no numbered outputs", buf,
                 e->kind == NTP_XML_NAME_INPUT ? "input" : "alias");
        return NTP_STATUS_GRAPH_ERROR;
    }
    return NTP_STATUS_OK;
}

/* The tensor a layer's entry and output index stand for. */
static ntp_status layer_output(const reader *r, const ntp_xml_name *e, int k, int *tensor,
                               char *err, size_t errlen)
{
    const ntp_node *n = &r->g->nodes[e->index];
    if (k < 0 && n->op == NTP_OP_SPLIT) {
        snprintf(err, errlen, "'%s' is a <split> with %d output%s: name one, '%s:0'%s", n->name,
                 n->n_out, n->n_out == 1 ? "" : "s", n->name, n->n_out > 1 ? " ..." : "");
        return NTP_STATUS_GRAPH_ERROR;
    }
    if (k >= n->n_out) {
        snprintf(err, errlen, "'%s:%d' does not exist: <%s name='%s'> has %d output%s", n->name, k,
                 ntp__op_name(n->op), n->name, n->n_out, n->n_out == 1 ? "" : "s");
        return NTP_STATUS_GRAPH_ERROR;
    }
    *tensor = n->out[k < 0 ? 0 : k];
    return NTP_STATUS_OK;
}

static ntp_status first_input(const reader *r, int *tensor, char *err, size_t errlen)
{
    if (r->g->n_inputs == 0) {
        snprintf(err, errlen,
                 "no 'inputs' given and there is neither a previous layer nor an <input> to "
                 "take");
        return NTP_STATUS_GRAPH_ERROR;
    }
    *tensor = r->g->inputs[0];
    return NTP_STATUS_OK;
}

static ntp_status alias_error(reader *r, const alias_rec *a, ntp_status st, const char *msg)
{
    return ntp__error_at(
        r->ctx, st,
        &(ntp__where){.file = r->src, .line = a->line, .element = "alias", .layer = a->name},
        "%s%s", a->of ? "attribute 'of': " : "", msg);
}

/* Resolve aliases in document order. A chain of aliases ("b of a, c of
 * b") is followed iteratively, so its length cannot exhaust the stack. */
static ntp_status resolve_aliases(reader *r)
{
    char err[640];
    for (int i = 0; i < r->n_aliases; i++) {
        int cur = i, tensor = -1;
        ntp_status st = NTP_STATUS_OK;
        while (r->aliases[cur].state != 2) {
            alias_rec *a = &r->aliases[cur];
            if (a->state == 1)
                return alias_error(r, a, NTP_STATUS_GRAPH_ERROR,
                                   "the aliases refer to each other in a cycle");
            a->state = 1;
            if (!a->of) {
                st = a->chain >= 0 ? (tensor = a->chain, NTP_STATUS_OK)
                                   : first_input(r, &tensor, err, sizeof err);
                if (st != NTP_STATUS_OK)
                    return alias_error(r, a, st, err);
                break;
            }
            int entry, k;
            if ((st = lookup_ref(r, a->of, &entry, &k, err, sizeof err)) != NTP_STATUS_OK)
                return alias_error(r, a, st, err);
            const ntp_xml_name *e = &r->names.e[entry];
            if (e->kind == NTP_XML_NAME_ALIAS) {
                cur = e->index;
                continue;
            }
            if (e->kind == NTP_XML_NAME_INPUT)
                tensor = e->index;
            else if ((st = layer_output(r, e, k, &tensor, err, sizeof err)) != NTP_STATUS_OK)
                return alias_error(r, a, st, err);
            break;
        }
        if (r->aliases[cur].state == 2)
            tensor = r->aliases[cur].tensor;
        /* Everything on the path now knows its tensor. */
        for (cur = i; r->aliases[cur].state == 1;) {
            alias_rec *a = &r->aliases[cur];
            a->state = 2;
            a->tensor = tensor;
            if (!a->of)
                break;
            int entry, k;
            if (lookup_ref(r, a->of, &entry, &k, err, sizeof err) != NTP_STATUS_OK ||
                r->names.e[entry].kind != NTP_XML_NAME_ALIAS)
                break;
            cur = r->names.e[entry].index;
        }
    }
    return NTP_STATUS_OK;
}

static ntp_status resolve_ref(reader *r, const char *ref, int *tensor, char *err, size_t errlen)
{
    int entry, k;
    ntp_status st = lookup_ref(r, ref, &entry, &k, err, errlen);
    if (st != NTP_STATUS_OK)
        return st;
    const ntp_xml_name *e = &r->names.e[entry];
    switch (e->kind) {
    case NTP_XML_NAME_INPUT: *tensor = e->index; return NTP_STATUS_OK;
    case NTP_XML_NAME_ALIAS: *tensor = r->aliases[e->index].tensor; return NTP_STATUS_OK;
    case NTP_XML_NAME_LAYER: return layer_output(r, e, k, tensor, err, errlen);
    case NTP_XML_NAME_MARKER: break;
    }
    return NTP_STATUS_INTERNAL;
}

static ntp_status wire_layers(reader *r)
{
    char err[640];
    ntp_graph *g = r->g;
    for (int i = 0; i < g->n_nodes; i++) {
        ntp_node *n = &g->nodes[i];
        const pending_in *pi = &r->pend[i];
        ntp_status st;
        int t;
        if (!pi->spec) {
            st = pi->chain >= 0 ? (t = pi->chain, NTP_STATUS_OK)
                                : first_input(r, &t, err, sizeof err);
            if (st != NTP_STATUS_OK)
                return ntp__node_error(r->ctx, g, n, st, "%s", err);
            n->in[0] = t;
            n->n_in = 1;
            continue;
        }
        n->n_in = 0;
        const char *p = pi->spec;
        for (;;) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            char ref[NTP_XML_MAX_NAME_BYTES + 32];
            snprintf(ref, sizeof ref, "%.*s", len < sizeof ref - 1 ? (int)len : (int)sizeof ref - 1,
                     p);
            if ((st = resolve_ref(r, ref, &t, err, sizeof err)) != NTP_STATUS_OK)
                return ntp__node_error(r->ctx, g, n, st, "attribute 'inputs': %s", err);
            n->in[n->n_in++] = t;
            if (!comma)
                break;
            p = comma + 1;
        }
    }
    return NTP_STATUS_OK;
}

static ntp_status marker_end(reader *r, const ntp_marker *m, const char *attr, const char *ref,
                             int *node)
{
    int e = ntp__xml_names_find(&r->names, ref);
    if (e >= 0 && r->names.e[e].kind == NTP_XML_NAME_LAYER) {
        *node = r->names.e[e].index;
        return NTP_STATUS_OK;
    }
    if (e >= 0)
        return ntp__error(r->ctx, NTP_STATUS_GRAPH_ERROR,
                          "%s:%d: <marker name='%s'>: attribute '%s': '%s' is an <%s>, not a layer",
                          r->src, m->line, m->name, attr, ref, kind_element(r, &r->names.e[e]));
    const char *near = nearest_name(r, ref, 1u << NTP_XML_NAME_LAYER);
    return ntp__error(r->ctx, NTP_STATUS_UNKNOWN_NAME,
                      "%s:%d: <marker name='%s'>: attribute '%s': no layer named '%.64s'%s%s%s",
                      r->src, m->line, m->name, attr, ref, near ? "; did you mean '" : "",
                      near ? near : "", near ? "'?" : "");
}

static ntp_status wire_markers(reader *r)
{
    ntp_status st;
    for (int i = 0; i < r->g->n_markers; i++) {
        ntp_marker *m = &r->g->markers[i];
        if ((st = marker_end(r, m, "from", r->mref[i].from, &m->first)) != NTP_STATUS_OK ||
            (st = marker_end(r, m, "to", r->mref[i].to, &m->last)) != NTP_STATUS_OK)
            return st;
    }
    return NTP_STATUS_OK;
}

/* --- driver ------------------------------------------------------------------- */

static ntp_status read_document(reader *r)
{
    ntp_status st;
    xmlNodePtr root = xmlDocGetRootElement(r->doc);
    if (!root)
        return ntp__error(r->ctx, NTP_STATUS_PARSE_ERROR, "%s:1: malformed XML: no root element",
                          r->src);
    if (strcmp(el_name(root), "topology") != 0)
        return ntp__error(r->ctx, NTP_STATUS_PARSE_ERROR,
                          "%s:%d: the root element is <%s>, expected <topology>", r->src,
                          line_of(root), el_name(root));
    if ((st = check_tree(r, root, 1)) != NTP_STATUS_OK)
        return st;
    if (!(r->g = ntp__graph_new("", r->src)))
        return oom(r);
    if ((st = read_params(r, root)) != NTP_STATUS_OK ||
        (st = read_topology_attrs(r, root)) != NTP_STATUS_OK)
        return st;
    int64_t layers = 0;
    if ((st = count_layers(r, root, &layers)) != NTP_STATUS_OK)
        return st;
    r->expanded = 0;
    r->param_bytes = r->subst_bytes = 0;
    if ((st = walk(r, root)) != NTP_STATUS_OK)
        return st;
    if (r->g->n_nodes == 0)
        return el_error(r, root, r->g->name, NTP_STATUS_GRAPH_ERROR, "the topology has no layers");
    if ((st = resolve_aliases(r)) != NTP_STATUS_OK || (st = wire_layers(r)) != NTP_STATUS_OK ||
        (st = wire_markers(r)) != NTP_STATUS_OK)
        return st;
    return ntp__graph_finalize(r->ctx, r->g, r->opts->max_memory);
}

static void reader_free(reader *r)
{
    ntp__xml_names_free(&r->names);
    for (int i = 0; i < r->n_aliases; i++) {
        free(r->aliases[i].name);
        free(r->aliases[i].of);
    }
    free(r->aliases);
    if (r->g) {
        for (int i = 0; i < r->g->n_nodes; i++)
            free(r->pend[i].spec);
        for (int i = 0; i < r->g->n_markers; i++) {
            free(r->mref[i].from);
            free(r->mref[i].to);
        }
    }
    free(r->pend);
    free(r->mref);
    free(r->vars);
    xmlFreeDoc(r->doc);
}

static ntp_status load_buffer(ntp_ctx *ctx, const char *buf, size_t len, const char *src,
                              const ntp_load_opts *opts, const ntp__xml_limits *lim,
                              ntp_graph **out)
{
    static const ntp_load_opts none = {0};
    *out = NULL;
    if (len > (size_t)NTP_XML_MAX_FILE_BYTES)
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                          "%s: the topology is %zu bytes, more than the limit of 64 MiB", src, len);
    reader r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.opts = opts ? opts : &none;
    r.src = src;
    r.chain = -1;
    r.lim = (ntp__xml_limits){NTP_XML_MAX_EXPANDED, NTP_XML_MAX_SUBST_BYTES};
    if (lim && lim->expanded > 0 && lim->expanded < r.lim.expanded)
        r.lim.expanded = lim->expanded;
    if (lim && lim->subst_bytes > 0 && lim->subst_bytes < r.lim.subst_bytes)
        r.lim.subst_bytes = lim->subst_bytes;
    ntp_status st = ntp__xml_parse(ctx, src, buf, len, &r.doc);
    if (st == NTP_STATUS_OK)
        st = read_document(&r);
    reader_free(&r);
    if (st != NTP_STATUS_OK) {
        ntp_graph_free(r.g);
        return st;
    }
    *out = r.g;
    return NTP_STATUS_OK;
}

ntp_status ntp__xml_load_memory(ntp_ctx *ctx, const char *buf, size_t len, const char *name,
                                const ntp_load_opts *opts, ntp_graph **out)
{
    *out = NULL;
    if (!buf)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "no buffer given");
    return load_buffer(ctx, buf, len, name ? name : "<memory>", opts, NULL, out);
}

ntp_status ntp__xml_load_memory_limited(ntp_ctx *ctx, const char *buf, size_t len, const char *name,
                                        const ntp_load_opts *opts, const ntp__xml_limits *lim,
                                        ntp_graph **out)
{
    *out = NULL;
    if (!buf)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "no buffer given");
    return load_buffer(ctx, buf, len, name ? name : "<memory>", opts, lim, out);
}

ntp_status ntp__xml_load_file(ntp_ctx *ctx, const char *path, const ntp_load_opts *opts,
                              ntp_graph **out)
{
    *out = NULL;
    struct stat sb;
    const char *why;
    FILE *f = ntp__file_fopen_read(path, &sb, &why);
    if (!f) {
        if (!strcmp(why, "not a regular file"))
            return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: not a regular file", path);
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: cannot open: %s", path, why);
    }
    /* Refuse an oversized file before reading a byte of it. */
    if (sb.st_size > NTP_XML_MAX_FILE_BYTES) {
        fclose(f);
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                          "%s: the file is %lld bytes, more than the limit of 64 MiB", path,
                          (long long)sb.st_size);
    }
    /* The memory budget covers parsing too: the document's tree takes more
     * than the file, so a file over the budget is refused unread. */
    if (opts && opts->max_memory > 0 && sb.st_size > opts->max_memory) {
        fclose(f);
        return ntp__error(ctx, NTP_STATUS_MEMORY_BUDGET,
                          "%s: the file is %lld bytes, more than the memory budget of %lld bytes",
                          path, (long long)sb.st_size, (long long)opts->max_memory);
    }
    size_t size = (size_t)sb.st_size;
    char *buf = malloc(size + 1);
    if (!buf) {
        fclose(f);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory reading the file",
                          path);
    }
    size_t got = fread(buf, 1, size, f);
    bool failed = ferror(f) != 0;
    fclose(f);
    if (failed) {
        free(buf);
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: read error", path);
    }
    ntp_status st = load_buffer(ctx, buf, got, path, opts, NULL, out);
    free(buf);
    return st;
}
