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

static int64_t align_up(int64_t v)
{
    return (v + NTP_ARENA_ALIGN - 1) / NTP_ARENA_ALIGN * NTP_ARENA_ALIGN;
}

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

bool ntp__plan_intervals(int n, const int64_t *size, const int *birth, const int *death,
                         int64_t *offsets, int64_t *arena_bytes)
{
    /* Sweep time: at each birth, first-fit into the holes left by items that
     * died strictly before it. Items are visited in birth order; deaths are
     * processed lazily from a list sorted by death time. */
    int *by_birth = malloc(((size_t)n + 1) * sizeof *by_birth);
    int *by_death = malloc(((size_t)n + 1) * sizeof *by_death);
    free_list fl = {0};
    int64_t peak = 0;
    bool ok = by_birth && by_death;
    for (int i = 0; ok && i < n; i++)
        by_birth[i] = by_death[i] = i;
    /* Insertion sorts would be quadratic for 10,000-layer graphs: births and
     * deaths are small integers, so counting sort them. */
    int tmax = 0;
    for (int i = 0; ok && i < n; i++) {
        if (birth[i] + 1 > tmax)
            tmax = birth[i] + 1;
        if (death[i] + 1 > tmax)
            tmax = death[i] + 1;
    }
    int *count = ok ? calloc((size_t)tmax + 2, sizeof *count) : NULL;
    ok = ok && count;
    if (ok) {
        for (int i = 0; i < n; i++)
            count[birth[i] + 1]++;
        for (int t = 0; t < tmax; t++)
            count[t + 1] += count[t];
        for (int i = 0; i < n; i++)
            by_birth[count[birth[i]]++] = i;
        memset(count, 0, ((size_t)tmax + 2) * sizeof *count);
        for (int i = 0; i < n; i++)
            count[death[i] + 1]++;
        for (int t = 0; t < tmax; t++)
            count[t + 1] += count[t];
        for (int i = 0; i < n; i++)
            by_death[count[death[i]]++] = i;
    }
    int d = 0;
    for (int j = 0; ok && j < n; j++) {
        int i = by_birth[j];
        while (d < n && death[by_death[d]] < birth[i]) {
            int k = by_death[d++];
            if (offsets[k] >= 0 && !fl_free(&fl, offsets[k], align_up(size[k])))
                ok = false;
        }
        offsets[i] = fl_alloc(&fl, align_up(size[i]));
        if (fl.top > peak)
            peak = fl.top;
    }
    free(count);
    free(by_birth);
    free(by_death);
    free(fl.h);
    *arena_bytes = peak;
    return ok;
}

ntp_status ntp__plan_memory(ntp_ctx *ctx, const ntp_graph *g, ntp_tensor_size_fn size, void *user,
                            int pin_before, int64_t *offsets, int64_t *arena_bytes)
{
    /* Times: graph inputs are born at 0, node p's outputs at p + 1; a tensor
     * dies at the time of its last reader, so node p's inputs are still
     * live while its outputs are written. */
    int nt = g->n_tensors, n = 0, end = g->n_nodes + 1;
    int *idx = malloc(((size_t)nt + 1) * sizeof *idx);
    int *birth = malloc(((size_t)nt + 1) * sizeof *birth);
    int *death = malloc(((size_t)nt + 1) * sizeof *death);
    int64_t *sz = malloc(((size_t)nt + 1) * sizeof *sz);
    int64_t *off = malloc(((size_t)nt + 1) * sizeof *off);
    int *last = malloc(((size_t)nt + 1) * sizeof *last);
    ntp_status st = NTP_STATUS_OK;
    if (!idx || !birth || !death || !sz || !off || !last) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory planning activations");
        goto done;
    }
    for (int i = 0; i < nt; i++) {
        last[i] = -1;
        offsets[i] = -1;
    }
    for (int p = 0; p < g->n_nodes; p++) {
        const ntp_node *nd = &g->nodes[g->order[p]];
        for (int k = 0; k < nd->n_in; k++)
            last[nd->in[k]] = p + 1;
    }
    /* Outputs are read after the last node; inputs are read again by every
     * iteration of a measurement loop, so neither may be overwritten. The
     * same holds for whatever a partial run (--only) reads from before its
     * range. */
    for (int i = 0; i < g->n_outputs; i++)
        last[g->outputs[i]] = end;
    for (int i = 0; i < g->n_inputs; i++)
        last[g->inputs[i]] = end;
    for (int p = 0; p < pin_before && p < g->n_nodes; p++) {
        const ntp_node *nd = &g->nodes[g->order[p]];
        for (int k = 0; k < nd->n_out; k++)
            if (last[nd->out[k]] > pin_before)
                last[nd->out[k]] = end;
    }
    for (int i = 0; i < g->n_inputs; i++) {
        idx[n] = g->inputs[i];
        birth[n] = 0;
        death[n] = end;
        sz[n++] = size(&g->tensors[g->inputs[i]], user);
    }
    for (int p = 0; p < g->n_nodes; p++) {
        const ntp_node *nd = &g->nodes[g->order[p]];
        for (int k = 0; k < nd->n_out; k++) {
            int t = nd->out[k];
            idx[n] = t;
            birth[n] = p + 1;
            /* An output nobody reads still needs its memory while written. */
            death[n] = last[t] < 0 ? p + 1 : last[t];
            sz[n++] = size(&g->tensors[t], user);
        }
    }
    for (int i = 0; i < n; i++)
        off[i] = -1;
    if (!ntp__plan_intervals(n, sz, birth, death, off, arena_bytes)) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory planning activations");
        goto done;
    }
    for (int i = 0; i < n; i++)
        offsets[idx[i]] = off[i];
done:
    free(idx);
    free(birth);
    free(death);
    free(sz);
    free(off);
    free(last);
    return st;
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
