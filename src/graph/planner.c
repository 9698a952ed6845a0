/* The activation memory planner.
 *
 * Every graph input and activation gets an offset in one arena. Walking the
 * execution order, a node's outputs are placed first-fit into the holes left
 * by tensors whose last reader has run (like a malloc that knows the
 * future), then its dead inputs are freed. Graph inputs and outputs live to
 * the end. A
 * node's outputs never overlap its inputs, so backends need not support
 * in-place execution. The result is the arena size the execution engine
 * allocates and the peak that analysis reports. */
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "graph-impl.h"

#define NTP_ARENA_ALIGN 64

typedef struct hole {
    int64_t off, size;
} hole;

typedef struct free_list {
    hole *h;
    int n, cap;
    int64_t top;
} free_list;

static int64_t align_up(int64_t v) { return (v + NTP_ARENA_ALIGN - 1) / NTP_ARENA_ALIGN * NTP_ARENA_ALIGN; }

static int64_t fl_alloc(free_list *fl, int64_t size)
{
    int best = -1;
    for (int i = 0; i < fl->n; i++)
        if (fl->h[i].size >= size && (best < 0 || fl->h[i].size < fl->h[best].size))
            best = i;
    if (best >= 0) {
        int64_t off = fl->h[best].off;
        fl->h[best].off += size;
        fl->h[best].size -= size;
        if (fl->h[best].size == 0)
            fl->h[best] = fl->h[--fl->n];
        return off;
    }
    int64_t off = fl->top;
    fl->top += size;
    return off;
}

static bool fl_free(free_list *fl, int64_t off, int64_t size)
{
    /* Coalesce with neighbours, and give the top back. */
    for (int i = 0; i < fl->n; i++) {
        if (fl->h[i].off + fl->h[i].size == off) {
            off = fl->h[i].off;
            size += fl->h[i].size;
            fl->h[i--] = fl->h[--fl->n];
        } else if (off + size == fl->h[i].off) {
            size += fl->h[i].size;
            fl->h[i--] = fl->h[--fl->n];
        }
    }
    if (off + size == fl->top) {
        fl->top = off;
        return true;
    }
    if (fl->n == fl->cap) {
        int cap = fl->cap ? 2 * fl->cap : 32;
        hole *h = realloc(fl->h, (size_t)cap * sizeof *h);
        if (!h)
            return false;
        fl->h = h;
        fl->cap = cap;
    }
    fl->h[fl->n++] = (hole){off, size};
    return true;
}

ntp_status ntp__plan_memory(ntp_ctx *ctx, const ntp_graph *g, ntp_tensor_size_fn size, void *user,
                            int pin_before, int64_t *offsets, int64_t *arena_bytes)
{
    int nt = g->n_tensors;
    int *last = malloc(((size_t)nt + 1) * sizeof *last);
    free_list fl = {0};
    int64_t peak = 0;
    if (!last)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory planning activations");
    for (int i = 0; i < nt; i++) {
        last[i] = -1;
        offsets[i] = -1;
    }
    for (int p = 0; p < g->n_nodes; p++) {
        const ntp_node *n = &g->nodes[g->order[p]];
        for (int k = 0; k < n->n_in; k++)
            last[n->in[k]] = p;
    }
    /* Outputs are read after the last node; inputs are read again by every
     * iteration of a measurement loop, so neither may be overwritten. The
     * same holds for whatever a partial run (--only) reads from before its
     * range. */
    for (int i = 0; i < g->n_outputs; i++)
        last[g->outputs[i]] = g->n_nodes;
    for (int i = 0; i < g->n_inputs; i++)
        last[g->inputs[i]] = g->n_nodes;
    for (int p = 0; p < pin_before && p < g->n_nodes; p++) {
        const ntp_node *n = &g->nodes[g->order[p]];
        for (int k = 0; k < n->n_out; k++)
            if (last[n->out[k]] >= pin_before)
                last[n->out[k]] = g->n_nodes;
    }
    for (int i = 0; i < g->n_inputs; i++)
        offsets[g->inputs[i]] = fl_alloc(&fl, align_up(size(&g->tensors[g->inputs[i]], user)));
    if (fl.top > peak)
        peak = fl.top;
    for (int p = 0; p < g->n_nodes; p++) {
        const ntp_node *n = &g->nodes[g->order[p]];
        for (int k = 0; k < n->n_out; k++)
            offsets[n->out[k]] = fl_alloc(&fl, align_up(size(&g->tensors[n->out[k]], user)));
        if (fl.top > peak)
            peak = fl.top;
        /* Outputs nobody reads die at once; dead inputs die after the node. */
        for (int k = 0; k < n->n_out; k++) {
            int ti = n->out[k];
            if (last[ti] < 0 && !fl_free(&fl, offsets[ti], align_up(size(&g->tensors[ti], user))))
                goto oom;
        }
        for (int k = 0; k < n->n_in; k++) {
            int ti = n->in[k];
            if (last[ti] == p) {
                last[ti] = -2; /* freed once even if read twice by this node */
                if (!fl_free(&fl, offsets[ti], align_up(size(&g->tensors[ti], user))))
                    goto oom;
            }
        }
    }
    *arena_bytes = peak;
    free(fl.h);
    free(last);
    return NTP_STATUS_OK;
oom:
    free(fl.h);
    free(last);
    return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory planning activations");
}

static int64_t own_bytes(const ntp_tensor *t, void *user)
{
    (void)user;
    return ntp__tensor_bytes(t);
}

ntp_status ntp__graph_plan_memory(ntp_ctx *ctx, ntp_graph *g)
{
    int64_t *offsets = malloc(((size_t)g->n_tensors + 1) * sizeof *offsets);
    if (!offsets)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory planning activations");
    ntp_status st = ntp__plan_memory(ctx, g, own_bytes, NULL, 0, offsets, &g->arena_bytes);
    for (int i = 0; st == NTP_STATUS_OK && i < g->n_tensors; i++)
        g->tensors[i].offset = offsets[i];
    free(offsets);
    return st;
}
