/* Execution plans: placement, fusion groups, steps, storage slots, prepare,
 * arena planning and binding (exec-impl.h describes the model). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "exec-impl.h"
#include "measure/measure-impl.h"

static bool is_integer(ntp_dtype t)
{
    return t == NTP_DTYPE_I32 || t == NTP_DTYPE_I64 || t == NTP_DTYPE_U8;
}

static const ntp_node *node_at(const ntp_graph *g, int pos)
{
    return &g->nodes[g->order[pos]];
}

/* Storage a tensor gets from the layer that produces it on backend b. */
static ntp_dtype produced_dtype(const ntp_exec *x, int b, const ntp_tensor *t)
{
    return is_integer(t->dtype) ? t->dtype : ntp__be_storage_dtype(x->be[b], t->dtype);
}

/* Storage the layer n on backend b expects for its input t. */
static ntp_dtype expected_dtype(const ntp_exec *x, int b, const ntp_node *n, const ntp_tensor *t)
{
    if (is_integer(t->dtype))
        return t->dtype;
    /* A copy or conversion moves its input's own type; every other layer
     * reads floating data at its precision. */
    if (n->op == NTP_OP_MEMCPY || n->op == NTP_OP_CONVERT)
        return ntp__be_storage_dtype(x->be[b], t->dtype);
    return ntp__be_storage_dtype(x->be[b], n->precision);
}

static int add_backend(ntp_ctx *ctx, ntp_exec *x, const ntp_backend_i *be)
{
    for (int i = 0; i < x->n_be; i++)
        if (x->be[i] == be)
            return i;
    if (x->n_be == NTP_MAX_BACKENDS) {
        ntp__error(ctx, NTP_STATUS_UNSUPPORTED, "more than %d backends in one run",
                   NTP_MAX_BACKENDS);
        return -1;
    }
    x->be[x->n_be] = be;
    return x->n_be++;
}

/* The backend --place asks for layer n ("LAYER=BACKEND"), else NULL. The
 * entries were checked by check_place. */
static const char *placed(const ntp_exec_opts *o, const ntp_node *n, char *buf, size_t len)
{
    const char *found = NULL;
    for (int i = 0; i < o->n_place; i++) {
        const char *eq = strchr(o->place[i], '=');
        if (eq && (size_t)(eq - o->place[i]) == strlen(n->name) &&
            strncmp(o->place[i], n->name, (size_t)(eq - o->place[i])) == 0) {
            snprintf(buf, len, "%s", eq + 1);
            found = buf; /* the last entry for a layer wins */
        }
    }
    return found;
}

/* Every --place entry names a layer of g and a backend of this build. */
static ntp_status check_place(ntp_ctx *ctx, const ntp_graph *g, const ntp_exec_opts *o)
{
    for (int i = 0; i < o->n_place; i++) {
        const char *e = o->place[i], *eq = e ? strchr(e, '=') : NULL;
        if (!eq || eq == e || !eq[1])
            return ntp__error_at(
                ctx, NTP_STATUS_INVALID_ARGUMENT,
                &(ntp__where){.option = "ntp_run_opts.place", .expected = "LAYER=BACKEND"},
                "expects LAYER=BACKEND, got '%s'", e ? e : "(null)");
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(eq - e), e);
        if (ntp__graph_find_node(g, name) < 0) {
            const char **names = malloc(((size_t)g->n_nodes + 1) * sizeof *names);
            for (int j = 0; names && j < g->n_nodes; j++)
                names[j] = g->nodes[j].name;
            const char *near = names ? ntp__nearest(name, names, g->n_nodes) : NULL;
            ntp_status st =
                ntp__opt_error(ctx, NTP_STATUS_UNKNOWN_NAME, "ntp_run_opts.place",
                               "%s: %s has no layer '%s'%s%s%s", e, g->source, name,
                               near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
            free(names);
            return st;
        }
        if (!ntp__backend_find(eq + 1))
            return ntp__opt_error(ctx, NTP_STATUS_UNKNOWN_NAME, "ntp_run_opts.place",
                                  "%s: unknown backend '%s'; this build has: %s", e, eq + 1,
                                  ntp_backends());
    }
    return NTP_STATUS_OK;
}

/* The backend layer n runs on (docs/run.md): the one --place names, else
 * its backend= attribute, else the run's backend where it supports n,
 * else ref. strict (a run): a placed backend must be available here and
 * run n, and a fallback to ref is warned about. Not strict
 * (ntp__exec_placement, a prediction): a backend that cannot run on this
 * machine (no GPU) is taken to run what it is asked to, and no warning is
 * given; *out NULL then stands for o->backend when o->backend is NULL (a
 * backend this build lacks, which runs everything not placed elsewhere). */
static ntp_status node_backend(ntp_ctx *ctx, const ntp_graph *g, const ntp_node *n,
                               const ntp_exec_opts *o, bool strict, const ntp_backend_i **out)
{
    const ntp_backend_i *ref = ntp__backend_find("ref");
    const ntp_backend_i *be = o->backend;
    char why[512], pbuf[256];
    *out = NULL;
    const char *want = placed(o, n, pbuf, sizeof pbuf);
    if (!want)
        want = n->backend;
    if (want) {
        be = ntp__backend_find(want);
        if (!be)
            return ntp__node_error(ctx, g, n, NTP_STATUS_UNSUPPORTED,
                                   "asks for backend '%s', which this build lacks (built: %s)",
                                   want, ntp_backends());
        if (!strict && !ntp__be_available(be, NULL, 0)) {
            *out = be;
            return NTP_STATUS_OK;
        }
        if (!ntp__be_available(be, why, sizeof why))
            return ntp__node_error(ctx, g, n, NTP_STATUS_UNSUPPORTED, "backend '%s': %s", be->name,
                                   why);
        if (!ntp__be_supports(be, g, n, n->precision))
            return ntp__node_error(ctx, g, n, NTP_STATUS_UNSUPPORTED,
                                   "asks for backend '%s', which cannot run it at %s", want,
                                   ntp_dtype_name(n->precision));
    } else if (!be || (!strict && !ntp__be_available(be, NULL, 0))) {
        *out = be;
        return NTP_STATUS_OK;
    } else if (!ntp__be_supports(be, g, n, n->precision)) {
        if (!ref || !ntp__be_supports(ref, g, n, n->precision))
            return ntp__node_error(ctx, g, n, NTP_STATUS_UNSUPPORTED,
                                   "no backend of this build can run it at %s",
                                   ntp_dtype_name(n->precision));
        /* An inlay (MFCC, CTC decoding, a copy) is a pipeline stage, not a
         * network layer: running it on ref is the rule, which the
         * report's backend column states, not a fallback to warn about. */
        if (strict && ntp__op_kind(n->op) != NTP_OP_KIND_INLAY)
            ntp__warn(ctx, "layer '%s' (%s) runs on ref: %s does not support it at %s", n->name,
                      ntp__op_name(n->op), o->backend->name, ntp_dtype_name(n->precision));
        be = ref;
    }
    *out = be;
    return NTP_STATUS_OK;
}

/* Can the run's backend take unit u whole (exec-impl.h)? Its layers must
 * read one tensor from outside, let nothing outside read what they make
 * but the last layer's output (the unit's last layer runs last of them),
 * and none may be placed on a backend of its own (backend= or --place).
 * They need not be consecutive in execution order: the unit runs at its
 * last layer's position, after whatever made its input. *ext gets the
 * tensor read from outside. */
static bool unit_claimable(const ntp_graph *g, const ntp_exec_opts *o, const ntp_unit *u, int *ext)
{
    if (!o->backend || !ntp__be_supports_unit(o->backend, g, u, g->precision) || u->first < 0 ||
        u->last >= g->n_nodes || u->first > u->last)
        return false;
    for (int i = u->first; i <= u->last; i++)
        if (g->position[i] > g->position[u->last])
            return false;
    if (g->nodes[u->last].n_out != 1)
        return false;
    /* reads inside the unit of what it makes, against every read of it */
    int64_t inside = 0, all = 0;
    char pbuf[256];
    *ext = -1;
    for (int i = u->first; i <= u->last; i++) {
        const ntp_node *n = &g->nodes[i];
        if (n->backend || placed(o, n, pbuf, sizeof pbuf) || n->precision != g->precision)
            return false;
        for (int k = 0; k < n->n_in; k++) {
            int pr = g->tensors[n->in[k]].producer;
            if (pr >= u->first && pr <= u->last) {
                inside++;
            } else if (*ext < 0 || *ext == n->in[k]) {
                *ext = n->in[k];
            } else {
                return false;
            }
        }
        for (int k = 0; k < n->n_out; k++) {
            if (i == u->last)
                continue;
            if (g->tensors[n->out[k]].is_output)
                return false;
            all += g->tensors[n->out[k]].n_consumers;
        }
    }
    return *ext >= 0 && inside == all;
}

/* The units the run's backend takes whole (before batch norms are folded:
 * a unit's are not). */
static void claim_units(ntp_exec *x, const ntp_exec_opts *o)
{
    const ntp_graph *g = x->g;
    for (int p = 0; p < g->n_nodes; p++)
        x->unit_of[p] = -1;
    for (int i = 0; i < g->n_units; i++) {
        const ntp_unit *u = &g->units[i];
        int ext;
        x->unit_in[i] = x->unit_last[i] = -1;
        if (!unit_claimable(g, o, u, &ext))
            continue;
        bool free_ = true;
        for (int n = u->first; n <= u->last; n++)
            free_ = free_ && x->unit_of[g->position[n]] < 0;
        if (!free_)
            continue;
        for (int n = u->first; n <= u->last; n++)
            x->unit_of[g->position[n]] = i;
        x->unit_in[i] = ext;
        x->unit_last[i] = g->position[u->last];
    }
}

static ntp_status place(ntp_ctx *ctx, ntp_exec *x, const ntp_exec_opts *o)
{
    const ntp_graph *g = x->g;
    char why[512];
    /* A backend that cannot run on this machine (no GPU) is refused with
     * its reason, whether the run or a layer asks for it. */
    if (!ntp__be_available(o->backend, why, sizeof why))
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED, "backend '%s': %s", o->backend->name, why);
    ntp_status pst = check_place(ctx, g, o);
    if (pst)
        return pst;
    if (add_backend(ctx, x, o->backend) < 0)
        return ntp_ctx_status(ctx);
    for (int p = 0; p < g->n_nodes; p++) {
        const ntp_node *n = node_at(g, p);
        /* A unit's layers run on the run's backend (claim_units), which
         * runs the unit whole: no fallback for its parts. */
        if (x->unit_of[p] >= 0) {
            x->node_be[p] = 0;
            continue;
        }
        /* A folded batch norm never runs: it goes with its layer, without
         * a fallback warning of its own. */
        if (x->fold[p] < 0) {
            x->node_be[p] = x->node_be[-1 - x->fold[p]];
            continue;
        }
        const ntp_backend_i *be;
        ntp_status st = node_backend(ctx, g, n, o, true, &be);
        if (st)
            return st;
        int b = add_backend(ctx, x, be);
        if (b < 0)
            return ntp_ctx_status(ctx);
        x->node_be[p] = b;
    }
    return NTP_STATUS_OK;
}

ntp_status ntp__exec_placement(ntp_ctx *ctx, const ntp_graph *g, const ntp_exec_opts *o,
                               const char *backend_name, const char **names)
{
    ntp_status st = check_place(ctx, g, o);
    for (int p = 0; !st && p < g->n_nodes; p++) {
        const ntp_backend_i *be;
        st = node_backend(ctx, g, node_at(g, p), o, false, &be);
        names[p] = be ? be->name : backend_name;
    }
    return st;
}

static bool is_graph_output(const ntp_graph *g, int t)
{
    return g->tensors[t].is_output;
}

/* The position of the only layer that reads tensor t, from position
 * `from` on, or -1. */
static int reader_of(const ntp_graph *g, int t, int from)
{
    if (g->tensors[t].n_consumers != 1 || g->tensors[t].is_output)
        return -1;
    for (int q = from; q < g->n_nodes; q++) {
        const ntp_node *c = node_at(g, q);
        for (int k = 0; k < c->n_in; k++)
            if (c->in[k] == t)
                return q;
    }
    return -1;
}

/* The position of a batch norm that can be folded into the layer at h, or
 * -1. It must be an inference batch norm over the channels (dim 1) of a
 * conv, deconv or 2-d fc output that nothing else reads, at the same
 * precision, and not placed on a backend of its own (backend= or
 * --place): folding is a property of the graph, so the int8 calibration
 * pass and the measured run fold the same layers whichever backends run
 * them. */
static int foldable(const ntp_graph *g, const ntp_exec_opts *o, int h)
{
    const ntp_node *c = node_at(g, h);
    if ((c->op != NTP_OP_CONV && c->op != NTP_OP_DECONV && c->op != NTP_OP_FC) || c->n_out != 1 ||
        c->n_in != 1 || c->n_w < 1 || c->n_w > 2)
        return -1;
    int q = reader_of(g, c->out[0], h + 1);
    if (q < 0)
        return -1;
    const ntp_node *bn = node_at(g, q);
    if (bn->op != NTP_OP_BATCHNORM || bn->n_in != 1 || bn->n_out != 1 || bn->n_w != 4 ||
        c->precision != bn->precision || bn->backend)
        return -1;
    char pbuf[256];
    if (placed(o, bn, pbuf, sizeof pbuf))
        return -1;
    const ntp_tensor *t = &g->tensors[c->out[0]];
    if (t->shape.ndim < 2 || (c->op == NTP_OP_FC && t->shape.ndim != 2))
        return -1;
    int64_t F = t->shape.dim[1];
    for (int k = 0; k < 4; k++)
        if (ntp_shape_numel(&g->tensors[bn->w[k]].shape) != F)
            return -1;
    const ntp_shape *ws = &g->tensors[c->w[0]].shape;
    int64_t wf =
        c->op == NTP_OP_DECONV ? ws->dim[1] * (c->a.groups > 0 ? c->a.groups : 1) : ws->dim[0];
    if (wf != F || (c->n_w == 2 && ntp_shape_numel(&g->tensors[c->w[1]].shape) != F))
        return -1;
    /* The weights are folded in f32: other model data is refused later,
     * as for any layer. */
    return q;
}

/* Fold batch norms (exec-impl.h): mark them, and run a copy of the graph
 * in which each folded layer has a bias and writes its batch norm's
 * output. Nothing to fold: the caller's graph as it is. */
static ntp_status fold_graph(ntp_ctx *ctx, ntp_exec *x, const ntp_exec_opts *o)
{
    const ntp_graph *g = x->src_g;
    int n = 0;
    for (int h = 0; h < g->n_nodes; h++) {
        int q = x->unit_of[h] < 0 ? foldable(g, o, h) : -1;
        if (q > h && x->unit_of[q] < 0) {
            x->fold[h] = q;
            x->fold[q] = -1 - h;
            n++;
        }
    }
    if (n == 0)
        return NTP_STATUS_OK;
    ntp_graph *c = NULL;
    ntp_status st = ntp__graph_clone(ctx, g, g->precision, &c);
    if (st)
        return st;
    /* The copy takes one precision; per-layer precisions are the caller's. */
    for (int i = 0; i < g->n_nodes; i++)
        c->nodes[i].precision = g->nodes[i].precision;
    for (int h = 0; h < g->n_nodes; h++) {
        if (x->fold[h] <= 0)
            continue;
        ntp_node *cn = &c->nodes[g->order[h]];
        const ntp_node *bn = &c->nodes[g->order[x->fold[h]]];
        if (cn->n_w < 2) {
            /* The batch norm's bias tensor ([F], never read once folded)
             * holds the new bias. */
            cn->w[cn->n_w++] = bn->w[1];
            cn->a.bias = true;
        }
        cn->out[0] = bn->out[0];
        c->tensors[bn->out[0]].producer = g->order[h];
        c->tensors[bn->out[0]].producer_slot = 0;
    }
    x->own_g = c;
    x->g = c;
    return NTP_STATUS_OK;
}

/* Fold chains that follow a head into one group where its backend agrees:
 * the next layer is the only reader of the group's result, runs on the
 * same backend, and reads nothing produced after the head (so the head
 * can compute it at once, however far apart the two are in execution
 * order). A batch norm folded into the head's weights is part of the
 * group whatever the backend (it never runs); post-ops follow only with
 * `post_ops` (--fuse). */
static void fuse(ntp_exec *x, bool post_ops)
{
    const ntp_graph *g = x->g;
    for (int p = 0; p < g->n_nodes; p++)
        x->head_of[p] = p;
    /* A unit is one group, run at its last layer's position. */
    for (int p = 0; p < g->n_nodes; p++)
        if (x->unit_of[p] >= 0)
            x->head_of[p] = x->unit_last[x->unit_of[p]];
    for (int h = 0; h < g->n_nodes; h++) {
        if (x->head_of[h] != h || x->fold[h] < 0 || x->unit_of[h] >= 0)
            continue;
        int last = h;
        if (x->fold[h] > 0)
            x->head_of[last = x->fold[h]] = h;
        const ntp_backend_i *be = x->be[x->node_be[h]];
        const ntp_node *head = node_at(g, h);
        /* A backend this build lacks (a prediction's, ntp__exec_groups):
         * its rule is unknown, so nothing follows its layers. */
        if (!post_ops || !be || head->n_out != 1)
            continue;
        int n_fused = 0;
        while (n_fused < NTP_MAX_FUSED) {
            int t = node_at(g, last)->out[0];
            int q = reader_of(g, t, last + 1);
            if (q < 0 || x->head_of[q] != q || x->fold[q] != 0 || x->unit_of[q] >= 0)
                break;
            const ntp_node *c = node_at(g, q);
            if (c->n_out != 1 || x->node_be[q] != x->node_be[h])
                break;
            bool early = true;
            for (int k = 0; k < c->n_in; k++) {
                if (c->in[k] == t)
                    continue;
                int pr = g->tensors[c->in[k]].producer;
                if (pr >= 0 && g->position[pr] >= h)
                    early = false;
            }
            if (!early || c->n_in > 2 || !ntp__be_fusable(be, g, head, n_fused, c))
                break;
            last = q;
            n_fused++;
            x->head_of[q] = h;
        }
    }
}

ntp_status ntp__exec_groups(ntp_ctx *ctx, const ntp_graph *g, const ntp_exec_opts *o,
                            const char **names, int *head_of, int *fold)
{
    ntp_exec t;
    memset(&t, 0, sizeof t);
    t.g = t.src_g = g;
    t.fold = fold;
    t.head_of = head_of;
    memset(fold, 0, (size_t)g->n_nodes * sizeof *fold);
    t.node_be = calloc((size_t)g->n_nodes + 1, sizeof *t.node_be);
    t.unit_of = calloc((size_t)g->n_nodes + 1, sizeof *t.unit_of);
    t.unit_in = calloc((size_t)g->n_units + 1, sizeof *t.unit_in);
    t.unit_last = calloc((size_t)g->n_units + 1, sizeof *t.unit_last);
    ntp_status st = NTP_STATUS_OK;
    if (!t.node_be || !t.unit_of || !t.unit_in || !t.unit_last)
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    /* The units the run's backend takes whole are groups of their own, as
     * in a run (claim_units). */
    if (!st)
        claim_units(&t, o);
    if (!st && (o->fuse || o->fold_only))
        st = fold_graph(ctx, &t, o);
    /* Each position's backend as the placement named it, interned as
     * place() does; a folded batch norm goes with its layer, as in a run. */
    for (int p = 0; !st && p < g->n_nodes; p++) {
        if (fold[p] < 0) {
            names[p] = names[-1 - fold[p]];
            t.node_be[p] = t.node_be[-1 - fold[p]];
            continue;
        }
        const ntp_backend_i *be = names[p] ? ntp__backend_find(names[p]) : NULL;
        int b = 0;
        while (b < t.n_be && t.be[b] != be)
            b++;
        if (b == t.n_be) {
            if (t.n_be == NTP_MAX_BACKENDS) {
                st = ntp__error(ctx, NTP_STATUS_UNSUPPORTED, "more than %d backends in one run",
                                NTP_MAX_BACKENDS);
                break;
            }
            t.be[t.n_be++] = be;
        }
        t.node_be[p] = b;
    }
    if (!st)
        fuse(&t, o->fuse);
    free(t.node_be);
    free(t.unit_of);
    free(t.unit_in);
    free(t.unit_last);
    if (t.own_g)
        ntp_graph_free(t.own_g);
    return st;
}

static int new_slot(ntp_ctx *ctx, ntp_exec *x, int t, ntp_dtype dtype)
{
    if (x->n_slots == x->cap_slots) {
        int cap = x->cap_slots ? 2 * x->cap_slots : 64;
        ntp_slot *s = realloc(x->slots, (size_t)cap * sizeof *s);
        if (!s) {
            ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            return -1;
        }
        x->slots = s;
        x->cap_slots = cap;
    }
    ntp_slot *s = &x->slots[x->n_slots];
    memset(s, 0, sizeof *s);
    s->tensor = t;
    s->dtype = dtype;
    int64_t n = ntp_shape_numel(&x->g->tensors[t].shape);
    s->bytes = n * (int64_t)ntp_dtype_size(dtype);
    s->birth = 0;
    s->death = -1;
    s->offset = -1;
    return x->n_slots++;
}

static ntp_step *new_step(ntp_ctx *ctx, ntp_exec *x, ntp_step_kind kind, int pos, int be)
{
    if (x->n_steps == x->cap_steps) {
        int cap = x->cap_steps ? 2 * x->cap_steps : 64;
        ntp_step *s = realloc(x->steps, (size_t)cap * sizeof *s);
        if (!s) {
            ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            return NULL;
        }
        x->steps = s;
        x->cap_steps = cap;
    }
    ntp_step *s = &x->steps[x->n_steps++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->pos = pos;
    s->be = be;
    s->head = -1;
    s->first = pos;
    s->n_sub = 1;
    return s;
}

/* The slot holding tensor t in storage `want`: its own, or a converted
 * copy made by a CONVERT step emitted now (before the reading layer). */
static int slot_for(ntp_ctx *ctx, ntp_exec *x, int t, ntp_dtype want, int pos, int be)
{
    int s = x->tslot[t];
    if (x->slots[s].dtype == want)
        return s;
    for (int i = 0; i < x->n_slots; i++)
        if (x->slots[i].tensor == t && x->slots[i].dtype == want)
            return i;
    int d = new_slot(ctx, x, t, want);
    if (d < 0)
        return -1;
    ntp_step *st = new_step(ctx, x, NTP_STEP_CONVERT, pos, be);
    if (!st)
        return -1;
    st->src = s;
    st->dst = d;
    char name[512];
    snprintf(name, sizeof name, "%s:%s>%s", x->g->tensors[t].name,
             ntp_dtype_name(x->slots[s].dtype), ntp_dtype_name(want));
    st->name = ntp__strdup(name);
    if (!st->name) {
        ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        return -1;
    }
    return d;
}

static void set_buf(const ntp_exec *x, int slot, ntp_buf *b)
{
    const ntp_slot *s = &x->slots[slot];
    b->data = NULL;
    b->shape = x->g->tensors[s->tensor].shape;
    b->dtype = s->dtype;
}

/* The step of a unit (exec-impl.h) whose last layer is at position p:
 * it reads the unit's outside tensor and writes that layer's output. */
static ntp_status unit_step(ntp_ctx *ctx, ntp_exec *x, int p)
{
    const ntp_graph *g = x->g;
    const ntp_node *n = node_at(g, p);
    int u = x->unit_of[p], b = x->node_be[p], t = x->unit_in[u];
    int in = slot_for(ctx, x, t, expected_dtype(x, b, n, &g->tensors[t]), p, b);
    if (in < 0)
        return ntp_ctx_status(ctx);
    ntp_step *st = new_step(ctx, x, NTP_STEP_NODE, p, b);
    if (!st)
        return ntp_ctx_status(ctx);
    x->pos_step[p] = x->n_steps - 1;
    st->last = p;
    for (int q = p; q >= 0; q--)
        if (x->unit_of[q] == u)
            st->first = q;
    ntp_kargs *k = &st->k;
    const ntp_node *tail = n;
    k->g = g;
    k->node = n;
    k->unit = &g->units[u];
    k->threads = x->threads;
    k->n_in = 1;
    k->n_w = n->n_w;
    k->n_out = 1;
    st->in_slot[0] = in;
    set_buf(x, in, &k->in[0]);
    int o = tail->out[0];
    if ((x->tslot[o] = new_slot(ctx, x, o, produced_dtype(x, b, &g->tensors[o]))) < 0)
        return ntp_ctx_status(ctx);
    st->out_slot[0] = x->tslot[o];
    set_buf(x, x->tslot[o], &k->out[0]);
    k->out_bytes[0] = x->slots[x->tslot[o]].bytes;
    return NTP_STATUS_OK;
}

static ntp_status build_steps(ntp_ctx *ctx, ntp_exec *x)
{
    const ntp_graph *g = x->g;
    for (int i = 0; i < g->n_inputs; i++) {
        int t = g->inputs[i];
        if ((x->tslot[t] = new_slot(ctx, x, t, g->tensors[t].dtype)) < 0)
            return ntp_ctx_status(ctx);
    }
    for (int p = 0; p < g->n_nodes; p++) {
        const ntp_node *n = node_at(g, p);
        int b = x->node_be[p];
        if (x->head_of[p] != p) {
            ntp_step *st = new_step(ctx, x, NTP_STEP_FUSED, p, b);
            if (!st)
                return ntp_ctx_status(ctx);
            st->head = x->pos_step[x->head_of[p]];
            x->pos_step[p] = x->n_steps - 1;
            continue;
        }
        if (x->unit_of[p] >= 0) {
            if (unit_step(ctx, x, p))
                return ntp_ctx_status(ctx);
            continue;
        }
        /* The group's other layers, in chain order: a folded batch norm,
         * then the post-ops. */
        int grp[NTP_MAX_FUSED + 1], n_grp = 0, last = p;
        for (int q = p + 1; q < g->n_nodes && n_grp < NTP_MAX_FUSED + 1; q++)
            if (x->head_of[q] == p)
                grp[n_grp++] = last = q;
        /* Inputs first: conversions come before the layer that needs them. */
        int in_slot[NTP_MAX_INPUTS], post_slot[NTP_MAX_FUSED];
        for (int k = 0; k < n->n_in; k++) {
            int t = n->in[k];
            if ((in_slot[k] = slot_for(ctx, x, t, expected_dtype(x, b, n, &g->tensors[t]), p, b)) <
                0)
                return ntp_ctx_status(ctx);
        }
        /* A folded batch norm is in the group, not among its post-ops. */
        int fold = x->fold[p] > 0 ? 1 : 0;
        int n_fused = n_grp - fold;
        for (int f = 0; f < n_fused; f++) {
            const ntp_node *c = node_at(g, grp[fold + f]);
            int prev = f + fold > 0 ? node_at(g, grp[fold + f - 1])->out[0] : n->out[0];
            post_slot[f] = -1;
            for (int k = 0; k < c->n_in; k++)
                if (c->in[k] != prev &&
                    (post_slot[f] =
                         slot_for(ctx, x, c->in[k], expected_dtype(x, b, c, &g->tensors[c->in[k]]),
                                  p, b)) < 0)
                    return ntp_ctx_status(ctx);
        }
        ntp_step *st = new_step(ctx, x, NTP_STEP_NODE, p, b);
        if (!st)
            return ntp_ctx_status(ctx);
        x->pos_step[p] = x->n_steps - 1;
        st->last = last;
        ntp_kargs *k = &st->k;
        const ntp_node *tail = node_at(g, last);
        k->g = g;
        k->node = n;
        k->threads = x->threads;
        k->n_in = n->n_in;
        k->n_w = n->n_w;
        k->n_out = tail->n_out;
        k->n_fused = n_fused;
        for (int i = 0; i < n->n_in; i++) {
            st->in_slot[i] = in_slot[i];
            set_buf(x, in_slot[i], &k->in[i]);
        }
        for (int f = 0; f < n_fused; f++) {
            k->fused[f] = node_at(g, grp[fold + f]);
            st->post_slot[f] = post_slot[f];
            if (post_slot[f] >= 0)
                set_buf(x, post_slot[f], &k->post_in[f]);
        }
        for (int i = 0; i < tail->n_out; i++) {
            int t = tail->out[i];
            if ((x->tslot[t] = new_slot(ctx, x, t, produced_dtype(x, b, &g->tensors[t]))) < 0)
                return ntp_ctx_status(ctx);
            st->out_slot[i] = x->tslot[t];
            set_buf(x, x->tslot[t], &k->out[i]);
            k->out_bytes[i] = x->slots[x->tslot[t]].bytes;
        }
        if (x->scales) {
            for (int f = 0; f < n_fused; f++)
                if (post_slot[f] >= 0)
                    k->post_scale[f] = x->scales[x->slots[post_slot[f]].tensor];
            for (int i = 0; i < n->n_in; i++)
                k->in_scale[i] = x->scales[n->in[i]];
            for (int i = 0; i < tail->n_out; i++)
                k->out_scale[i] = x->scales[tail->out[i]];
        }
    }
    /* A unit's step comes at its last layer, after its other layers'. */
    for (int i = 0; i < x->n_steps; i++)
        if (x->steps[i].kind == NTP_STEP_FUSED)
            x->steps[i].head = x->pos_step[x->head_of[x->steps[i].pos]];
    return NTP_STATUS_OK;
}

/* A tensor stays in its producer's own layout when the producer and every
 * reader run on one backend and nothing converts or outputs it. */
static void mark_internal(ntp_exec *x)
{
    const ntp_graph *g = x->g;
    bool *ok = malloc(((size_t)x->n_slots + 1) * sizeof *ok);
    int *prod = malloc(((size_t)x->n_slots + 1) * sizeof *prod);
    if (!ok || !prod) {
        free(ok);
        free(prod);
        return; /* Everything plain: correct, only slower. */
    }
    for (int i = 0; i < x->n_slots; i++) {
        ok[i] = !is_graph_output(g, x->slots[i].tensor) &&
                g->tensors[x->slots[i].tensor].kind == NTP_TENSOR_ACTIVATION;
        prod[i] = -1;
    }
    for (int s = 0; s < x->n_steps; s++) {
        const ntp_step *st = &x->steps[s];
        if (st->kind == NTP_STEP_CONVERT) {
            ok[st->src] = ok[st->dst] = false;
        } else if (st->kind == NTP_STEP_NODE) {
            for (int i = 0; i < st->k.n_out; i++)
                prod[st->out_slot[i]] = st->be;
        }
    }
    for (int s = 0; s < x->n_steps; s++) {
        const ntp_step *st = &x->steps[s];
        if (st->kind != NTP_STEP_NODE)
            continue;
        for (int i = 0; i < st->k.n_in; i++)
            if (prod[st->in_slot[i]] != st->be)
                ok[st->in_slot[i]] = false;
        for (int f = 0; f < st->k.n_fused; f++)
            if (st->post_slot[f] >= 0 && prod[st->post_slot[f]] != st->be)
                ok[st->post_slot[f]] = false;
    }
    for (int s = 0; s < x->n_steps; s++) {
        ntp_step *st = &x->steps[s];
        if (st->kind != NTP_STEP_NODE)
            continue;
        for (int i = 0; i < st->k.n_in; i++) {
            int sl = st->in_slot[i];
            st->k.in_internal[i] = ok[sl];
            st->k.in_layout[i] = ok[sl] ? &x->layouts[x->slots[sl].tensor] : NULL;
        }
        for (int i = 0; i < st->k.n_out; i++) {
            int sl = st->out_slot[i];
            st->k.out_internal[i] = ok[sl];
            st->k.out_layout[i] = ok[sl] ? &x->layouts[x->slots[sl].tensor] : NULL;
        }
    }
    free(ok);
    free(prod);
}

/* Lifetimes in planner time (0 before the first step, s + 1 after step s),
 * then one arena for every slot. */
static ntp_status plan_and_bind(ntp_ctx *ctx, ntp_exec *x)
{
    int end = x->n_steps + 1;
    for (int s = 0; s < x->n_steps; s++) {
        ntp_step *st = &x->steps[s];
        if (st->kind == NTP_STEP_CONVERT) {
            x->slots[st->dst].birth = s + 1;
            if (x->slots[st->src].death < s + 1)
                x->slots[st->src].death = s + 1;
        } else if (st->kind == NTP_STEP_NODE) {
            for (int i = 0; i < st->k.n_in; i++)
                if (x->slots[st->in_slot[i]].death < s + 1)
                    x->slots[st->in_slot[i]].death = s + 1;
            for (int f = 0; f < st->k.n_fused; f++)
                if (st->post_slot[f] >= 0 && x->slots[st->post_slot[f]].death < s + 1)
                    x->slots[st->post_slot[f]].death = s + 1;
            for (int i = 0; i < st->k.n_out; i++) {
                ntp_slot *sl = &x->slots[st->out_slot[i]];
                sl->birth = s + 1;
                if (st->k.out_bytes[i] > sl->bytes)
                    sl->bytes = st->k.out_bytes[i];
            }
        }
    }
    for (int i = 0; i < x->n_slots; i++) {
        ntp_slot *sl = &x->slots[i];
        const ntp_tensor *t = &x->g->tensors[sl->tensor];
        /* Inputs are re-read by every iteration; outputs are read after the
         * last step; what a partial run reads from before its range must
         * survive the repeated range. */
        if (t->kind == NTP_TENSOR_INPUT || t->is_output ||
            (sl->birth <= x->first_step && sl->death > x->first_step))
            sl->death = end;
        if (sl->death < sl->birth)
            sl->death = sl->birth;
    }
    int64_t *size = malloc(((size_t)x->n_slots + 1) * sizeof *size);
    int64_t *off = malloc(((size_t)x->n_slots + 1) * sizeof *off);
    int *birth = malloc(((size_t)x->n_slots + 1) * sizeof *birth);
    int *death = malloc(((size_t)x->n_slots + 1) * sizeof *death);
    bool ok = size && off && birth && death;
    for (int i = 0; ok && i < x->n_slots; i++) {
        size[i] = x->slots[i].bytes;
        birth[i] = x->slots[i].birth;
        death[i] = x->slots[i].death;
        off[i] = -1;
    }
    ok = ok && ntp__plan_intervals(x->n_slots, size, birth, death, off, &x->arena_bytes);
    for (int i = 0; ok && i < x->n_slots; i++)
        x->slots[i].offset = off[i];
    free(size);
    free(off);
    free(birth);
    free(death);
    if (!ok)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory planning activations");
    x->arena = aligned_alloc(64, (size_t)((x->arena_bytes + 63) / 64 * 64) + 64);
    if (!x->arena)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY,
                          "out of memory for the %.1f MiB activation arena",
                          (double)x->arena_bytes / 1048576.0);
    /* Touch the arena so first-touch page faults are not charged to a layer. */
    memset(x->arena, 0, (size_t)x->arena_bytes + 64);
    for (int i = 0; i < x->n_slots; i++)
        x->slots[i].data = (char *)x->arena + x->slots[i].offset;
    if (x->ws_bytes > 0) {
        x->ws = aligned_alloc(64, (x->ws_bytes + 63) / 64 * 64);
        if (!x->ws)
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY,
                              "out of memory for a %.1f MiB workspace",
                              (double)x->ws_bytes / 1048576.0);
        memset(x->ws, 0, x->ws_bytes);
    }
    for (int s = 0; s < x->n_steps; s++) {
        ntp_step *st = &x->steps[s];
        if (st->kind != NTP_STEP_NODE)
            continue;
        for (int i = 0; i < st->k.n_in; i++)
            st->k.in[i].data = x->slots[st->in_slot[i]].data;
        for (int f = 0; f < st->k.n_fused; f++)
            if (st->post_slot[f] >= 0)
                st->k.post_in[f].data = x->slots[st->post_slot[f]].data;
        for (int i = 0; i < st->k.n_out; i++)
            st->k.out[i].data = x->slots[st->out_slot[i]].data;
        st->k.workspace = x->ws;
        st->k.workspace_bytes = st->ws;
    }
    return NTP_STATUS_OK;
}

static ntp_status prepare_all(ntp_ctx *ctx, ntp_exec *x)
{
    for (int s = 0; s < x->n_steps; s++) {
        ntp_step *st = &x->steps[s];
        if (st->kind != NTP_STEP_NODE)
            continue;
        const ntp_backend_i *be = x->be[st->be];
        for (int i = 0; i < st->k.n_w; i++) {
            const ntp_tensor *t = &x->g->tensors[st->k.node->w[i]];
            st->k.w[i].data = x->wdata[st->k.node->w[i]];
            st->k.w[i].shape = t->shape;
            st->k.w[i].dtype = ntp__exec_weight_dtype(x, st->be, t);
        }
        if (st->k.unit)
            st->k.unit_w = (const void *const *)x->wdata;
        double t0 = ntp__now_us();
        ntp_status rc = ntp__be_prepare(be, ctx, x->be_state[st->be], &st->k, &st->state, &st->ws);
        st->prepare_ms = (ntp__now_us() - t0) / 1000.0;
        if (rc)
            return rc;
        if (st->ws > x->ws_bytes)
            x->ws_bytes = st->ws;
        st->n_sub = ntp__be_n_steps(be, x->be_state[st->be], st->state, &st->main_sub);
        if (st->n_sub < 1 || st->main_sub < 0 || st->main_sub >= st->n_sub)
            return ntp__node_error(ctx, x->g, st->k.node, NTP_STATUS_INTERNAL,
                                   "backend %s reports %d sub-steps, main %d", be->name, st->n_sub,
                                   st->main_sub);
    }
    return NTP_STATUS_OK;
}

/* Take the lender's weights where the layer and the weight are the same
 * (ntp_exec_opts.share_weights). */
static void borrow_weights(ntp_exec *x, const ntp_exec *from)
{
    const ntp_graph *g = x->g, *fg = from->g;
    if (from->own_g || fg->n_nodes != g->n_nodes || fg->n_tensors != g->n_tensors)
        return;
    for (int p = 0; p < g->n_nodes; p++) {
        const ntp_node *n = node_at(g, p), *fn = node_at(fg, p);
        int be = x->node_be[x->head_of[p]], fbe = from->node_be[from->head_of[p]];
        if (strcmp(n->name, fn->name) != 0 || n->n_w != fn->n_w || x->be[be] != from->be[fbe] ||
            x->fold[p] != 0 || n->precision != fn->precision)
            continue;
        for (int k = 0; k < n->n_w; k++) {
            const ntp_tensor *t = &g->tensors[n->w[k]], *ft = &fg->tensors[fn->w[k]];
            if (x->wdata[n->w[k]] || !from->wdata[fn->w[k]] || strcmp(t->name, ft->name) != 0 ||
                !ntp_shape_equal(&t->shape, &ft->shape) || t->dtype != ft->dtype ||
                ntp__exec_weight_dtype(x, be, t) != ntp__exec_weight_dtype(from, fbe, ft))
                continue;
            x->wdata[n->w[k]] = from->wdata[fn->w[k]];
            x->wborrowed[n->w[k]] = true;
        }
    }
}

static bool all_borrowed(const ntp_exec *x, const ntp_node *n)
{
    for (int k = 0; k < n->n_w; k++)
        if (!x->wborrowed[n->w[k]])
            return false;
    return n->n_w > 0;
}

ntp_status ntp__exec_init(ntp_ctx *ctx, ntp_exec *x, const ntp_graph *g, const ntp_exec_opts *o)
{
    memset(x, 0, sizeof *x);
    x->g = g;
    x->src_g = g;
    x->threads = o->threads;
    x->weights_bf16 = o->weights_bf16;
    x->weights_i8 = o->weights_i8;
    x->scales = o->scales;
    int nn = g->n_nodes, nt = g->n_tensors;
    x->node_be = calloc((size_t)nn + 1, sizeof *x->node_be);
    x->head_of = calloc((size_t)nn + 1, sizeof *x->head_of);
    x->pos_step = calloc((size_t)nn + 1, sizeof *x->pos_step);
    x->tslot = malloc(((size_t)nt + 1) * sizeof *x->tslot);
    x->layouts = calloc((size_t)nt + 1, sizeof *x->layouts);
    x->wdata = calloc((size_t)nt + 1, sizeof *x->wdata);
    x->wborrowed = calloc((size_t)nt + 1, sizeof *x->wborrowed);
    x->fold = calloc((size_t)nn + 1, sizeof *x->fold);
    x->unit_of = calloc((size_t)nn + 1, sizeof *x->unit_of);
    x->unit_in = calloc((size_t)g->n_units + 1, sizeof *x->unit_in);
    x->unit_last = calloc((size_t)g->n_units + 1, sizeof *x->unit_last);
    ntp_status st;
    if (!x->node_be || !x->head_of || !x->pos_step || !x->tslot || !x->layouts || !x->wdata ||
        !x->wborrowed || !x->fold || !x->unit_of || !x->unit_in || !x->unit_last) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory building '%s'", g->name);
        goto fail;
    }
    for (int i = 0; i < nt; i++)
        x->tslot[i] = -1;
    claim_units(x, o);
    if ((o->fuse || o->fold_only) && (st = fold_graph(ctx, x, o)))
        goto fail;
    g = x->g;
    if ((st = place(ctx, x, o)))
        goto fail;
    fuse(x, o->fuse);
    if ((st = build_steps(ctx, x)))
        goto fail;
    if (o->kv_for)
        for (int s = 0; s < x->n_steps; s++)
            if (x->steps[s].kind == NTP_STEP_NODE && x->steps[s].k.node->op == NTP_OP_KV_ATTENTION)
                x->steps[s].k.kv = o->kv_for(o->kv_user, g, x->steps[s].k.node);
    /* The measured range: from the first step of position `first` (its
     * conversions included) to the step of position `last`. */
    x->first_step = x->n_steps;
    x->last_step = 0;
    for (int s = 0; s < x->n_steps; s++) {
        if (x->steps[s].pos >= o->first && s < x->first_step)
            x->first_step = s;
        if (x->steps[s].pos <= o->last)
            x->last_step = s;
    }
    mark_internal(x);
    ntp_backend_opts bo = {
        .threads = o->threads,
        .precision = g->precision,
        .fuse = o->fuse,
        .device = {.math = o->math, .graph_replay = o->graph_replay, .first = o->first},
        .options = o->backend_options,
    };
    for (int b = 0; b < x->n_be; b++)
        if ((st = ntp__be_init(x->be[b], ctx, &bo, &x->be_state[b])))
            goto fail;
    if (o->share_weights && !o->fuse && !o->fold_only)
        borrow_weights(x, o->share_weights);
    for (int p = 0; p < nn; p++) {
        int be = x->node_be[x->head_of[p]];
        if (x->fold[p] < 0)
            continue; /* folded into its layer */
        if (all_borrowed(x, node_at(g, p)))
            continue;
        st = x->fold[p] > 0 ? ntp__exec_load_folded(ctx, x, p, be, o->seed)
                            : ntp__exec_load_weights(ctx, x, node_at(g, p), be, o->seed);
        if (st)
            goto fail;
    }
    if ((st = prepare_all(ctx, x)) || (st = plan_and_bind(ctx, x)) ||
        (st = ntp__exec_load_inputs(ctx, x, o)))
        goto fail;
    if (x->first_step > 0 && (st = ntp__exec_steps(ctx, x, 0, x->first_step - 1)))
        goto fail;
    return NTP_STATUS_OK;
fail:
    ntp__exec_free(x);
    return st;
}

ntp_status ntp__exec_init_ref(ntp_ctx *ctx, ntp_exec *x, const ntp_graph *g,
                              const ntp_run_opts *opts)
{
    ntp_exec_opts eo;
    memset(&eo, 0, sizeof eo);
    eo.backend = ntp__backend_find("ref");
    eo.threads = opts->threads;
    eo.seed = opts->seed;
    eo.inputs = opts->inputs;
    eo.n_inputs = opts->n_inputs;
    eo.first = 0;
    eo.last = g->n_nodes - 1;
    if (!eo.backend) {
        memset(x, 0, sizeof *x);
        return ntp__error(ctx, NTP_STATUS_INTERNAL, "no reference backend in this build");
    }
    return ntp__exec_init(ctx, x, g, &eo);
}

void ntp__exec_free(ntp_exec *x)
{
    if (!x->g)
        return;
    for (int s = 0; s < x->n_steps; s++) {
        ntp_step *st = &x->steps[s];
        if (st->kind == NTP_STEP_NODE)
            ntp__be_release_node(x->be[st->be], x->be_state[st->be], st->state);
        free(st->name);
    }
    for (int b = 0; b < x->n_be; b++)
        ntp__be_release(x->be[b], x->be_state[b]);
    if (x->wdata)
        for (int i = 0; i < x->g->n_tensors; i++)
            if (!x->wborrowed || !x->wborrowed[i])
                free(x->wdata[i]);
    free(x->arena);
    free(x->ws);
    free(x->node_be);
    free(x->head_of);
    free(x->pos_step);
    free(x->steps);
    free(x->slots);
    free(x->tslot);
    free(x->layouts);
    free(x->wdata);
    free(x->wborrowed);
    free(x->fold);
    free(x->unit_of);
    free(x->unit_in);
    free(x->unit_last);
    if (x->own_g)
        ntp_graph_free(x->own_g);
    memset(x, 0, sizeof *x);
}
