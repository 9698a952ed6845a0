/* The activation memory planner.
 *
 * Every graph input and activation gets an offset in one arena. Walking the
 * execution order, a node's outputs are placed first-fit into the holes left
 * by tensors whose last reader has run (like a malloc that knows the
 * future), then its dead inputs are freed. Graph outputs live to the end. A
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

ntp_status ntp__graph_plan_memory(ntp_ctx *ctx, ntp_graph *g)
{
    int nt = g->n_tensors;
    int *last = malloc(((size_t)nt + 1) * sizeof *last);
    free_list fl = {0};
    int64_t peak = 0;
    ntp_status st = NTP_STATUS_OK;
    if (!last)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory planning activations");
    for (int i = 0; i < nt; i++) {
        last[i] = -1;
        g->tensors[i].offset = -1;
    }
    for (int p = 0; p < g->n_nodes; p++) {
        const ntp_node *n = &g->nodes[g->order[p]];
        for (int k = 0; k < n->n_in; k++)
            last[n->in[k]] = p;
    }
    for (int i = 0; i < g->n_outputs; i++)
        last[g->outputs[i]] = g->n_nodes;
    /* Inputs are placed before the first node. */
    for (int i = 0; i < g->n_inputs; i++) {
        ntp_tensor *t = &g->tensors[g->inputs[i]];
        t->offset = fl_alloc(&fl, align_up(ntp__tensor_bytes(t)));
    }
    if (fl.top > peak)
        peak = fl.top;
    for (int p = 0; p < g->n_nodes; p++) {
        const ntp_node *n = &g->nodes[g->order[p]];
        for (int k = 0; k < n->n_out; k++) {
            ntp_tensor *t = &g->tensors[n->out[k]];
            t->offset = fl_alloc(&fl, align_up(ntp__tensor_bytes(t)));
        }
        if (fl.top > peak)
            peak = fl.top;
        /* Outputs nobody reads die at once; dead inputs die after the node. */
        for (int k = 0; k < n->n_out; k++) {
            ntp_tensor *t = &g->tensors[n->out[k]];
            if (last[n->out[k]] < 0 && !fl_free(&fl, t->offset, align_up(ntp__tensor_bytes(t))))
                goto oom;
        }
        for (int k = 0; k < n->n_in; k++) {
            int ti = n->in[k];
            if (last[ti] == p) {
                last[ti] = -2; /* freed once even if read twice by this node */
                ntp_tensor *t = &g->tensors[ti];
                if (!fl_free(&fl, t->offset, align_up(ntp__tensor_bytes(t))))
                    goto oom;
            }
        }
    }
    g->arena_bytes = peak;
    free(fl.h);
    free(last);
    return st;
oom:
    free(fl.h);
    free(last);
    return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory planning activations");
}
