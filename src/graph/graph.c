/* Building, validating and ordering a graph; the public accessors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/ctx-impl.h"
#include "graph-impl.h"

ntp_graph *ntp__graph_new(const char *name, const char *source)
{
    ntp_graph *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->name = ntp__strdup(name ? name : "");
    g->source = ntp__strdup(source ? source : "");
    g->precision = NTP_DTYPE_F32;
    if (!g->name || !g->source) {
        ntp_graph_free(g);
        return NULL;
    }
    return g;
}

void ntp_graph_free(ntp_graph *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->n_tensors; i++) {
        free(g->tensors[i].name);
        free(g->tensors[i].data);
    }
    for (int i = 0; i < g->n_nodes; i++) {
        free(g->nodes[i].name);
        free(g->nodes[i].backend);
        free(g->nodes[i].a.alphabet);
    }
    for (int i = 0; i < g->n_markers; i++) {
        free(g->markers[i].name);
        free(g->markers[i].tool);
    }
    for (int i = 0; i < g->n_params; i++) {
        free(g->params[i].name);
        free(g->params[i].value);
    }
    for (int i = 0; i < g->n_units; i++) {
        free(g->units[i].kind);
        free(g->units[i].text);
        free(g->units[i].slices);
    }
    free(g->units);
    free(g->tensors);
    free(g->nodes);
    free(g->inputs);
    free(g->outputs);
    free(g->order);
    free(g->position);
    free(g->markers);
    free(g->params);
    free(g->name);
    free(g->source);
    free(g);
}

int ntp__graph_add_tensor(ntp_graph *g, const char *name, ntp_tensor_kind kind)
{
    if (g->n_tensors == g->cap_tensors) {
        int cap = g->cap_tensors ? 2 * g->cap_tensors : 64;
        ntp_tensor *t = realloc(g->tensors, (size_t)cap * sizeof *t);
        if (!t)
            return -1;
        g->tensors = t;
        g->cap_tensors = cap;
    }
    ntp_tensor *t = &g->tensors[g->n_tensors];
    memset(t, 0, sizeof *t);
    t->name = ntp__strdup(name);
    if (!t->name)
        return -1;
    t->kind = kind;
    t->dtype = g->precision;
    t->layout = NTP_LAYOUT_ANY;
    t->producer = -1;
    t->offset = -1;
    return g->n_tensors++;
}

void ntp__attrs_default(ntp_attrs *a)
{
    memset(a, 0, sizeof *a);
    a->bias = true;
    for (int i = 0; i < 3; i++) {
        a->kernel[i] = 1;
        a->stride[i] = 1;
        a->dilation[i] = 1;
    }
    a->groups = 1;
    a->axis = -1;
    a->epsilon = 1e-5;
    a->direction = NTP_DIR_FORWARD;
    a->merge = NTP_MERGE_CONCAT;
    a->heads = 1;
    a->decode = NTP_CTC_BEAM;
    a->beam_width = 16;
}

int ntp__graph_add_node(ntp_graph *g, const char *name, ntp_op op, int line)
{
    if (g->n_nodes == g->cap_nodes) {
        int cap = g->cap_nodes ? 2 * g->cap_nodes : 64;
        ntp_node *n = realloc(g->nodes, (size_t)cap * sizeof *n);
        if (!n)
            return -1;
        g->nodes = n;
        g->cap_nodes = cap;
    }
    ntp_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->name = ntp__strdup(name);
    if (!n->name)
        return -1;
    n->op = op;
    n->line = line;
    n->precision = g->precision;
    ntp__attrs_default(&n->a);
    ntp__attrs_op_default(op, &n->a);
    return g->n_nodes++;
}

int ntp__graph_find_tensor(const ntp_graph *g, const char *name)
{
    for (int i = 0; i < g->n_tensors; i++)
        if (strcmp(g->tensors[i].name, name) == 0)
            return i;
    return -1;
}

int ntp__graph_find_node(const ntp_graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i].name, name) == 0)
            return i;
    return -1;
}

ntp_status ntp__node_error(ntp_ctx *ctx, const ntp_graph *g, const ntp_node *n, ntp_status st,
                           const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ntp__error_at(
        ctx, st,
        &(ntp__where){
            .file = g->source, .line = n->line, .element = ntp__op_name(n->op), .layer = n->name},
        "%s", msg);
}

static bool shape_equal(const ntp_shape *a, const ntp_shape *b)
{
    if (a->ndim != b->ndim)
        return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->dim[i] != b->dim[i])
            return false;
    return true;
}

ntp_status ntp__node_add_weight(ntp_ctx *ctx, ntp_graph *g, ntp_node *n, const char *suffix,
                                ntp_tensor_kind kind, const ntp_shape *shape)
{
    char a[128], b[128];
    int slot = n->w_decl;
    if (slot >= NTP_MAX_WEIGHTS)
        return ntp__node_error(ctx, g, n, NTP_STATUS_INTERNAL, "too many weights");
    if (ntp_shape_numel(shape) < 0)
        return ntp__node_error(ctx, g, n, NTP_STATUS_OVERFLOW, "weight '%s' %s overflows", suffix,
                               ntp_shape_str(shape, a, sizeof a));
    for (int d = 0; d < shape->ndim; d++)
        if (shape->dim[d] <= 0)
            return ntp__node_error(ctx, g, n, NTP_STATUS_SHAPE_ERROR,
                                   "weight '%s' would have shape %s", suffix,
                                   ntp_shape_str(shape, a, sizeof a));
    if (slot < n->n_w) {
        /* The model brought this weight: it must have the shape we infer. */
        ntp_tensor *t = &g->tensors[n->w[slot]];
        if (!shape_equal(&t->shape, shape))
            return ntp__node_error(
                ctx, g, n, NTP_STATUS_SHAPE_ERROR, "weight '%s' has shape %s, expected %s", t->name,
                ntp_shape_str(&t->shape, a, sizeof a), ntp_shape_str(shape, b, sizeof b));
        t->kind = kind;
        n->w_decl++;
        return NTP_STATUS_OK;
    }
    char name[512];
    snprintf(name, sizeof name, "%s.%s", n->name, suffix);
    int ti = ntp__graph_add_tensor(g, name, kind);
    if (ti < 0)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory adding weight '%s'", name);
    g->tensors[ti].shape = *shape;
    g->tensors[ti].dtype = n->precision;
    n->w[n->n_w++] = ti;
    n->w_decl++;
    return NTP_STATUS_OK;
}

/* Kahn's algorithm over producer -> consumer edges. Ties are broken by
 * document order, so a chain stays in the order it was written. */
static ntp_status topo_sort(ntp_ctx *ctx, ntp_graph *g)
{
    int nn = g->n_nodes;
    int *indeg = calloc((size_t)nn + 1, sizeof *indeg);
    g->order = malloc(((size_t)nn + 1) * sizeof *g->order);
    g->position = malloc(((size_t)nn + 1) * sizeof *g->position);
    /* Consumers of each node, as a CSR list. */
    int *start = calloc((size_t)nn + 2, sizeof *start);
    int n_edges = 0;
    for (int i = 0; i < nn; i++)
        n_edges += g->nodes[i].n_in;
    int *adj = malloc(((size_t)n_edges + 1) * sizeof *adj);
    int *fill = calloc((size_t)nn + 1, sizeof *fill);
    ntp_status st = NTP_STATUS_OK;
    if (!indeg || !g->order || !g->position || !start || !adj || !fill) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory ordering %d layers", nn);
        goto done;
    }
    for (int i = 0; i < nn; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++) {
            int p = g->tensors[g->nodes[i].in[k]].producer;
            if (p >= 0) {
                start[p + 1]++;
                indeg[i]++;
            }
        }
    for (int i = 0; i < nn; i++)
        start[i + 1] += start[i];
    for (int i = 0; i < nn; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++) {
            int p = g->tensors[g->nodes[i].in[k]].producer;
            if (p >= 0)
                adj[start[p] + fill[p]++] = i;
        }
    /* A min-heap would give strict document order among ready nodes; a
     * queue seeded in document order gives it for chains and keeps O(n). */
    int head = 0, tail = 0;
    for (int i = 0; i < nn; i++)
        if (indeg[i] == 0)
            g->order[tail++] = i;
    while (head < tail) {
        int v = g->order[head++];
        for (int e = start[v]; e < start[v + 1]; e++)
            if (--indeg[adj[e]] == 0)
                g->order[tail++] = adj[e];
    }
    if (tail != nn) {
        for (int i = 0; i < nn; i++)
            if (indeg[i] > 0) {
                st = ntp__node_error(ctx, g, &g->nodes[i], NTP_STATUS_GRAPH_ERROR,
                                     "is part of a cycle: its inputs depend on its own output");
                break;
            }
        goto done;
    }
    for (int i = 0; i < nn; i++)
        g->position[g->order[i]] = i;
done:
    free(indeg);
    free(start);
    free(adj);
    free(fill);
    return st;
}

static int64_t physical_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || psize <= 0)
        return 0;
    return (int64_t)pages * (int64_t)psize;
}

ntp_status ntp__graph_finalize(ntp_ctx *ctx, ntp_graph *g, int64_t max_memory)
{
    ntp_status st;
    if (g->n_nodes == 0)
        return ntp__error(ctx, NTP_STATUS_GRAPH_ERROR, "%s: the topology has no layers", g->source);
    for (int i = 0; i < g->n_tensors; i++)
        g->tensors[i].n_consumers = 0;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++)
            g->tensors[g->nodes[i].in[k]].n_consumers++;
    if ((st = topo_sort(ctx, g)) != NTP_STATUS_OK)
        return st;
    /* The reader stores marker ends as node indices; reports want positions
     * in execution order. */
    for (int i = 0; i < g->n_markers; i++) {
        ntp_marker *m = &g->markers[i];
        int a = g->position[m->first], b = g->position[m->last];
        if (a > b)
            return ntp__error(
                ctx, NTP_STATUS_GRAPH_ERROR,
                "%s:%d: <marker name='%s'>: 'from' layer '%s' runs after 'to' layer '%s'",
                g->source, m->line, m->name, g->nodes[m->first].name, g->nodes[m->last].name);
        m->first = a;
        m->last = b;
    }
    for (int i = 0; i < g->n_nodes; i++)
        if ((st = ntp__op_infer_shape(ctx, g, &g->nodes[g->order[i]])) != NTP_STATUS_OK)
            return st;
    /* Without explicit outputs, every activation nobody reads is one. */
    if (g->n_outputs == 0) {
        g->outputs = malloc(((size_t)g->n_tensors + 1) * sizeof *g->outputs);
        if (!g->outputs)
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        for (int i = 0; i < g->n_nodes; i++) {
            const ntp_node *n = &g->nodes[g->order[i]];
            for (int k = 0; k < n->n_out; k++)
                if (g->tensors[n->out[k]].n_consumers == 0)
                    g->outputs[g->n_outputs++] = n->out[k];
        }
    }
    for (int i = 0; i < g->n_outputs; i++)
        g->tensors[g->outputs[i]].is_output = true;
    if ((st = ntp__graph_plan_memory(ctx, g)) != NTP_STATUS_OK)
        return st;
    if (max_memory == 0)
        max_memory = physical_memory();
    if (max_memory > 0) {
        int64_t need = g->arena_bytes;
        for (int i = 0; i < g->n_tensors; i++) {
            const ntp_tensor *t = &g->tensors[i];
            if (t->kind == NTP_TENSOR_WEIGHT || t->kind == NTP_TENSOR_BUFFER) {
                int64_t b = ntp__tensor_bytes(t);
                if (b < 0 || !ntp__add_ok(need, b, &need))
                    need = INT64_MAX;
            }
        }
        if (need > max_memory)
            return ntp__error(ctx, NTP_STATUS_MEMORY_BUDGET,
                              "%s: the topology needs %.1f MiB (weights and activations), "
                              "more than the memory budget of %.1f MiB",
                              g->source, (double)need / 1048576.0, (double)max_memory / 1048576.0);
    }
    return NTP_STATUS_OK;
}

/* --- public accessors ------------------------------------------------------- */

const char *ntp_graph_name(const ntp_graph *g)
{
    return g->name;
}
const char *ntp_graph_source(const ntp_graph *g)
{
    return g->source;
}
ntp_dtype ntp_graph_precision(const ntp_graph *g)
{
    return g->precision;
}
int64_t ntp_graph_batch(const ntp_graph *g)
{
    return g->batch;
}
int ntp_graph_layer_count(const ntp_graph *g)
{
    return g->n_nodes;
}

static const ntp_node *layer_at(const ntp_graph *g, int i)
{
    return (i >= 0 && i < g->n_nodes) ? &g->nodes[g->order[i]] : NULL;
}

const char *ntp_graph_layer_name(const ntp_graph *g, int i)
{
    const ntp_node *n = layer_at(g, i);
    return n ? n->name : NULL;
}

const char *ntp_graph_layer_type(const ntp_graph *g, int i)
{
    const ntp_node *n = layer_at(g, i);
    return n ? ntp__op_name(n->op) : NULL;
}

ntp_shape ntp_graph_layer_shape(const ntp_graph *g, int i)
{
    ntp_shape s = {0};
    const ntp_node *n = layer_at(g, i);
    if (n && n->n_out > 0)
        s = g->tensors[n->out[0]].shape;
    return s;
}

int ntp_graph_layer_find(const ntp_graph *g, const char *name)
{
    int ni = ntp__graph_find_node(g, name);
    return ni < 0 ? -1 : g->position[ni];
}

int ntp_graph_input_count(const ntp_graph *g)
{
    return g->n_inputs;
}

const char *ntp_graph_input_name(const ntp_graph *g, int i)
{
    return (i >= 0 && i < g->n_inputs) ? g->tensors[g->inputs[i]].name : NULL;
}

ntp_shape ntp_graph_input_shape(const ntp_graph *g, int i)
{
    ntp_shape s = {0};
    if (i >= 0 && i < g->n_inputs)
        s = g->tensors[g->inputs[i]].shape;
    return s;
}

ntp_dtype ntp_graph_input_dtype(const ntp_graph *g, int i)
{
    return (i >= 0 && i < g->n_inputs) ? g->tensors[g->inputs[i]].dtype : NTP_DTYPE_F32;
}

int ntp_graph_output_count(const ntp_graph *g)
{
    return g->n_outputs;
}

const char *ntp_graph_output_name(const ntp_graph *g, int i)
{
    return (i >= 0 && i < g->n_outputs) ? g->tensors[g->outputs[i]].name : NULL;
}

ntp_shape ntp_graph_output_shape(const ntp_graph *g, int i)
{
    ntp_shape s = {0};
    if (i >= 0 && i < g->n_outputs)
        s = g->tensors[g->outputs[i]].shape;
    return s;
}

int ntp_graph_marker_count(const ntp_graph *g)
{
    return g->n_markers;
}

const char *ntp_graph_marker_name(const ntp_graph *g, int i)
{
    return (i >= 0 && i < g->n_markers) ? g->markers[i].name : NULL;
}

void ntp_graph_marker_range(const ntp_graph *g, int i, int *first, int *last)
{
    *first = *last = -1;
    if (i >= 0 && i < g->n_markers) {
        *first = g->markers[i].first;
        *last = g->markers[i].last;
    }
}

const char *ntp_graph_marker_tool(const ntp_graph *g, int i)
{
    return (i >= 0 && i < g->n_markers) ? g->markers[i].tool : NULL;
}

int ntp_graph_param_count(const ntp_graph *g)
{
    return g->n_params;
}

const char *ntp_graph_param_name(const ntp_graph *g, int i)
{
    return (i >= 0 && i < g->n_params) ? g->params[i].name : NULL;
}

const char *ntp_graph_param_value(const ntp_graph *g, int i)
{
    return (i >= 0 && i < g->n_params) ? g->params[i].value : NULL;
}

ntp_status ntp__graph_clone(ntp_ctx *ctx, const ntp_graph *g, ntp_dtype p, ntp_graph **out)
{
    *out = NULL;
    ntp_graph *c = ntp__graph_new(g->name, g->source);
    if (!c)
        goto oom;
    c->precision = p;
    c->batch = g->batch;
    c->arena_bytes = g->arena_bytes;
    c->tensors = calloc((size_t)g->n_tensors + 1, sizeof *c->tensors);
    c->nodes = calloc((size_t)g->n_nodes + 1, sizeof *c->nodes);
    c->inputs = malloc(((size_t)g->n_inputs + 1) * sizeof *c->inputs);
    c->outputs = malloc(((size_t)g->n_outputs + 1) * sizeof *c->outputs);
    c->order = malloc(((size_t)g->n_nodes + 1) * sizeof *c->order);
    c->position = malloc(((size_t)g->n_nodes + 1) * sizeof *c->position);
    c->markers = calloc((size_t)g->n_markers + 1, sizeof *c->markers);
    c->params = calloc((size_t)g->n_params + 1, sizeof *c->params);
    if (!c->tensors || !c->nodes || !c->inputs || !c->outputs || !c->order || !c->position ||
        !c->markers || !c->params)
        goto oom;
    c->cap_tensors = g->n_tensors + 1;
    c->cap_nodes = g->n_nodes + 1;
    for (int i = 0; i < g->n_tensors; i++) {
        const ntp_tensor *s = &g->tensors[i];
        ntp_tensor *t = &c->tensors[i];
        *t = *s;
        t->name = NULL;
        t->data = NULL;
        c->n_tensors = i + 1;
        if (!(t->name = ntp__strdup(s->name)))
            goto oom;
        if (s->data) {
            size_t bytes = (size_t)ntp_shape_numel(&s->shape) * ntp_dtype_size(s->data_dtype);
            if (!(t->data = malloc(bytes + 1)))
                goto oom;
            memcpy(t->data, s->data, bytes);
        }
        /* Activations and weights follow the new precision; integer data and
         * graph inputs keep their types. */
        if ((s->kind == NTP_TENSOR_ACTIVATION || s->kind == NTP_TENSOR_WEIGHT ||
             s->kind == NTP_TENSOR_BUFFER) &&
            s->dtype == g->precision)
            t->dtype = p;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const ntp_node *s = &g->nodes[i];
        ntp_node *n = &c->nodes[i];
        *n = *s;
        n->name = NULL;
        n->backend = NULL;
        n->a.alphabet = NULL;
        c->n_nodes = i + 1;
        n->precision = p;
        if (!(n->name = ntp__strdup(s->name)) ||
            (s->backend && !(n->backend = ntp__strdup(s->backend))) ||
            (s->a.alphabet && !(n->a.alphabet = ntp__strdup(s->a.alphabet))))
            goto oom;
    }
    memcpy(c->inputs, g->inputs, (size_t)g->n_inputs * sizeof *c->inputs);
    c->n_inputs = g->n_inputs;
    memcpy(c->outputs, g->outputs, (size_t)g->n_outputs * sizeof *c->outputs);
    c->n_outputs = g->n_outputs;
    memcpy(c->order, g->order, (size_t)g->n_nodes * sizeof *c->order);
    memcpy(c->position, g->position, (size_t)g->n_nodes * sizeof *c->position);
    for (int i = 0; i < g->n_markers; i++) {
        c->markers[i] = g->markers[i];
        c->markers[i].name = NULL;
        c->markers[i].tool = NULL;
        c->n_markers = i + 1;
        if (!(c->markers[i].name = ntp__strdup(g->markers[i].name)) ||
            (g->markers[i].tool && !(c->markers[i].tool = ntp__strdup(g->markers[i].tool))))
            goto oom;
    }
    for (int i = 0; i < g->n_params; i++) {
        c->params[i] = g->params[i];
        c->params[i].name = NULL;
        c->params[i].value = NULL;
        c->n_params = i + 1;
        if (!(c->params[i].name = ntp__strdup(g->params[i].name)) ||
            !(c->params[i].value = ntp__strdup(g->params[i].value)))
            goto oom;
    }
    if (g->n_units > 0 && !(c->units = calloc((size_t)g->n_units, sizeof *c->units)))
        goto oom;
    for (int i = 0; i < g->n_units; i++) {
        const ntp_unit *u = &g->units[i];
        ntp_unit *v = &c->units[i];
        *v = *u;
        v->kind = v->text = NULL;
        v->slices = NULL;
        c->n_units = i + 1;
        if (!(v->kind = ntp__strdup(u->kind)) || !(v->text = ntp__strdup(u->text)) ||
            !(v->slices = malloc(((size_t)u->n_slices + 1) * sizeof *v->slices)))
            goto oom;
        memcpy(v->slices, u->slices, (size_t)u->n_slices * sizeof *v->slices);
    }
    *out = c;
    return NTP_STATUS_OK;
oom:
    ntp_graph_free(c);
    return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory copying '%s'", g->name);
}
