/* Comparing runs: layers aligned by name (renamed, added and missing layers
 * recognised, layers fused in either run compared as groups, changed types,
 * backends and implementations flagged), speedups with their confidence, the significance rule, and
 * what differs between the runs' topology, configuration and hardware
 * (docs/compare.md). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare-impl.h"
#include "core/ctx-impl.h"

const char *ntp_align_name(ntp_align a)
{
    switch (a) {
    case NTP_ALIGN_MATCHED: return "matched";
    case NTP_ALIGN_RENAMED: return "renamed";
    case NTP_ALIGN_ADDED: return "added";
    case NTP_ALIGN_MISSING: return "missing";
    case NTP_ALIGN_FUSED: return "fused";
    }
    return "?";
}

const char *ntp_verdict_name(ntp_verdict v)
{
    switch (v) {
    case NTP_VERDICT_NA: return "n/a";
    case NTP_VERDICT_SAME: return "no significant difference";
    case NTP_VERDICT_FASTER: return "faster";
    case NTP_VERDICT_SLOWER: return "slower";
    }
    return "?";
}

static bool has_time(const ntp_stats *s)
{
    return s && s->n > 0 && s->median > 0 && isfinite(s->median) && isfinite(s->ci95_lo) &&
           isfinite(s->ci95_hi);
}

ntp_verdict ntp_compare_stats(const ntp_stats *base, const ntp_stats *other)
{
    if (!has_time(base) || !has_time(other))
        return NTP_VERDICT_NA;
    /* Disjoint intervals of the medians: each median lies outside the
     * other's interval, a difference the noise of either run does not
     * explain. Overlap says nothing either way. */
    if (other->ci95_lo > base->ci95_hi)
        return NTP_VERDICT_SLOWER;
    if (other->ci95_hi < base->ci95_lo)
        return NTP_VERDICT_FASTER;
    return NTP_VERDICT_SAME;
}

void ntp__compare_fill(ntp_compare_row *row, const ntp_stats *base, const ntp_stats *other,
                       double base_share, double other_share)
{
    static const ntp_stats zero;
    row->base = base ? *base : zero;
    row->other = other ? *other : zero;
    row->base_share = base ? base_share : 0;
    row->other_share = other ? other_share : 0;
    double a = base && isfinite(base->median) ? base->median : 0;
    double b = other && isfinite(other->median) ? other->median : 0;
    row->delta_ms = b - a;
    row->speedup = row->speedup_lo = row->speedup_hi = 0;
    if (a > 0 && b > 0) {
        row->speedup = a / b;
        if (base->ci95_lo > 0 && other->ci95_lo > 0 && other->ci95_hi > 0) {
            row->speedup_lo = base->ci95_lo / other->ci95_hi;
            row->speedup_hi = base->ci95_hi / other->ci95_lo;
        }
    }
    row->verdict = ntp_compare_stats(base, other);
}

/* --- alignment ---------------------------------------------------------------------- */

/* Names of the other run's rows in a hash table, each bucket chaining the
 * rows of one name in order, so duplicate names pair up in order too and a
 * 10,000-layer comparison stays linear. */
typedef struct name_index {
    int cap;
    int *head; /* bucket -> first row, -1 */
    int *next; /* row -> next row in its bucket, -1 */
} name_index;

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static bool index_build(name_index *ix, const ntp_run_result *r)
{
    ix->cap = 16;
    while (ix->cap < 2 * r->n_layers)
        ix->cap *= 2;
    ix->head = malloc((size_t)ix->cap * sizeof *ix->head);
    ix->next = malloc(((size_t)r->n_layers + 1) * sizeof *ix->next);
    if (!ix->head || !ix->next)
        return false;
    for (int i = 0; i < ix->cap; i++)
        ix->head[i] = -1;
    /* Insert backwards so each chain lists its rows in order. */
    for (int j = r->n_layers - 1; j >= 0; j--) {
        int b = (int)(hash_name(r->layers[j].name) & (uint64_t)(ix->cap - 1));
        ix->next[j] = ix->head[b];
        ix->head[b] = j;
    }
    return true;
}

static void index_free(name_index *ix)
{
    free(ix->head);
    free(ix->next);
}

static const char *nz(const char *s)
{
    return s ? s : "";
}

/* A renamed layer does the same work: same type, output shape and FLOPs. */
static bool same_signature(const ntp_layer_result *a, const ntp_layer_result *b)
{
    return strcmp(nz(a->type), nz(b->type)) == 0 && a->flops == b->flops &&
           ntp_shape_equal(&a->output_shape, &b->output_shape);
}

/* Rows whose unmatched counts multiply beyond this skip rename detection
 * (quadratic): such runs are different topologies, not renamed layers. */
#define RENAME_SEARCH_LIMIT 4000000

static int by_delta(const void *pa, const void *pb)
{
    const ntp_compare_row *a = pa, *b = pb;
    if (a->delta_ms != b->delta_ms)
        return a->delta_ms < b->delta_ms ? 1 : -1;
    int ka = a->base_index >= 0 ? a->base_index : a->other_index;
    int kb = b->base_index >= 0 ? b->base_index : b->other_index;
    return (ka > kb) - (ka < kb);
}

/* --- fused groups ------------------------------------------------------------------- */

/* The row a fused row's time is in: the nearest row before it (else after
 * it) of the name it was fused into that is not fused itself; the row
 * itself when there is none. */
static int find_head(const ntp_run_result *r, const name_index *ix, int i)
{
    const ntp_layer_result *l = &r->layers[i];
    if (!l->fused || !l->fused_into)
        return i;
    int b = (int)(hash_name(l->fused_into) & (uint64_t)(ix->cap - 1));
    int before = -1;
    for (int j = ix->head[b]; j >= 0; j = ix->next[j]) {
        if (r->layers[j].fused || strcmp(nz(r->layers[j].name), l->fused_into) != 0)
            continue;
        if (j > i)
            return before >= 0 ? before : j;
        before = j;
    }
    return before >= 0 ? before : i;
}

/* Union-find over the rows of both runs, A's then B's; a set's root is its
 * first row. */
static int uf_find(int *parent, int x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

static void uf_union(int *parent, int a, int b)
{
    a = uf_find(parent, a);
    b = uf_find(parent, b);
    if (a < b)
        parent[b] = a;
    else if (b < a)
        parent[a] = b;
}

/* A sum of timings, for a group's layers that ran alone. The median is the
 * sum of the medians and the interval the sum of the intervals' ends: wider
 * than the sum's own interval (which would need the per-iteration samples),
 * so a verdict on it errs towards "no significant difference". */
typedef struct stats_sum {
    ntp_stats s;
    double var;
    int rows;
    double share;
} stats_sum;

static void sum_add(stats_sum *t, const ntp_layer_result *l)
{
    const ntp_stats *x = &l->time_ms;
    ntp_stats *s = &t->s;
    s->n = t->rows == 0 || x->n < s->n ? x->n : s->n;
    s->median += x->median;
    s->ci95_lo += x->ci95_lo;
    s->ci95_hi += x->ci95_hi;
    s->min += x->min;
    s->max += x->max;
    s->mean += x->mean;
    s->p90 += x->p90;
    s->p99 += x->p99;
    t->var += x->stddev * x->stddev;
    t->share += l->share;
    t->rows++;
}

static const ntp_stats *sum_done(stats_sum *t)
{
    if (t->rows == 0)
        return NULL;
    t->s.stddev = sqrt(t->var);
    t->s.cv = t->s.mean > 0 ? t->s.stddev / t->s.mean : 0;
    return &t->s;
}

/* Type, backend and implementation of each side, and which differ. A side
 * that does not name its implementation (an older report) is no change. */
static void set_changes(ntp_compare_row *row, const ntp_layer_result *a, const ntp_layer_result *b)
{
    row->base_backend = a ? a->backend : NULL;
    row->base_impl = a ? a->impl : NULL;
    row->other_type = b ? b->type : NULL;
    row->other_backend = b ? b->backend : NULL;
    row->other_impl = b ? b->impl : NULL;
    row->changes = 0;
    if (!a || !b)
        return;
    if (strcmp(nz(a->type), nz(b->type)) != 0)
        row->changes |= NTP_CHANGE_TYPE;
    if (a->backend && b->backend && strcmp(a->backend, b->backend) != 0)
        row->changes |= NTP_CHANGE_BACKEND;
    if (a->impl && b->impl && strcmp(a->impl, b->impl) != 0)
        row->changes |= NTP_CHANGE_IMPL;
}

/* Rows of both runs tied together by fusion: each fused row to the row it
 * was fused into, and each row to the row it is aligned with. */
typedef struct groups {
    int *parent;       /* union-find, na + nb */
    bool *grouped;     /* root -> the set holds a fused row */
    int *first, *next; /* root -> its rows in order (A's, then B's); row -> next */
    int *emitted;      /* root -> its row in the comparison, -1 */
} groups;

static void groups_free(groups *G)
{
    free(G->parent);
    free(G->grouped);
    free(G->first);
    free(G->next);
    free(G->emitted);
}

static bool groups_build(groups *G, const ntp_run_result *A, const ntp_run_result *B,
                         const name_index *ixa, const name_index *ixb, const int *match_a)
{
    int na = A->n_layers, nb = B->n_layers, nt = na + nb;
    G->parent = malloc(((size_t)nt + 1) * sizeof *G->parent);
    G->grouped = calloc((size_t)nt + 1, sizeof *G->grouped);
    G->first = malloc(((size_t)nt + 1) * sizeof *G->first);
    G->next = malloc(((size_t)nt + 1) * sizeof *G->next);
    G->emitted = malloc(((size_t)nt + 1) * sizeof *G->emitted);
    if (!G->parent || !G->grouped || !G->first || !G->next || !G->emitted)
        return false;
    for (int k = 0; k < nt; k++) {
        G->parent[k] = k;
        G->first[k] = G->next[k] = G->emitted[k] = -1;
    }
    for (int i = 0; i < na; i++)
        if (A->layers[i].fused)
            uf_union(G->parent, i, find_head(A, ixa, i));
    for (int j = 0; j < nb; j++)
        if (B->layers[j].fused)
            uf_union(G->parent, na + j, na + find_head(B, ixb, j));
    for (int i = 0; i < na; i++)
        if (match_a[i] >= 0)
            uf_union(G->parent, i, na + match_a[i]);
    for (int k = 0; k < nt; k++)
        if (k < na ? A->layers[k].fused : B->layers[k - na].fused)
            G->grouped[uf_find(G->parent, k)] = true;
    /* Each grouped set's rows in order, appended from the back. */
    int *last = G->emitted; /* borrowed as each root's last row until emission */
    for (int k = 0; k < nt; k++) {
        int root = uf_find(G->parent, k);
        if (!G->grouped[root])
            continue;
        if (G->first[root] < 0)
            G->first[root] = k;
        else
            G->next[last[root]] = k;
        last[root] = k;
    }
    for (int k = 0; k < nt; k++)
        G->emitted[k] = -1;
    return true;
}

/* One row for the fused group whose root is `root`: each side's timed rows
 * summed, its layers named. */
static void emit_group(const ntp_run_result *A, const ntp_run_result *B, const groups *G, int root,
                       const int *match_b, const char **store, int *n_members, ntp_compare_row *row)
{
    int na = A->n_layers;
    stats_sum sa = {0}, sb = {0};
    int head_a = -1, head_b = -1, first_a = -1, first_b = -1;
    const char **members = &store[*n_members];
    int nm = 0;
    for (int k = G->first[root]; k >= 0; k = G->next[k]) {
        if (k < na) {
            const ntp_layer_result *l = &A->layers[k];
            members[nm++] = l->name;
            first_a = first_a < 0 ? k : first_a;
            if (!l->fused) {
                head_a = head_a < 0 ? k : head_a;
                sum_add(&sa, l);
            }
        } else {
            int j = k - na;
            const ntp_layer_result *l = &B->layers[j];
            if (match_b[j] < 0)
                members[nm++] = l->name; /* only in B: aligned ones are named already */
            first_b = first_b < 0 ? j : first_b;
            if (!l->fused) {
                head_b = head_b < 0 ? j : head_b;
                sum_add(&sb, l);
            }
        }
    }
    *n_members += nm;
    int ia = head_a >= 0 ? head_a : first_a, ib = head_b >= 0 ? head_b : first_b;
    const ntp_layer_result *la = ia >= 0 ? &A->layers[ia] : NULL;
    const ntp_layer_result *lb = ib >= 0 ? &B->layers[ib] : NULL;
    row->align = NTP_ALIGN_FUSED;
    row->name = la ? la->name : lb->name;
    row->other_name = lb ? lb->name : NULL;
    row->type = la ? la->type : lb->type;
    /* A side whose rows all lack a time of their own (a fused row whose
     * group is not in the report) has no figures. */
    row->base_index = sa.rows > 0 ? head_a : -1;
    row->other_index = sb.rows > 0 ? head_b : -1;
    row->n_members = nm;
    row->members = members;
    row->base_rows = sa.rows;
    row->other_rows = sb.rows;
    ntp__compare_fill(row, sum_done(&sa), sum_done(&sb), sa.share, sb.share);
    set_changes(row, head_a >= 0 ? &A->layers[head_a] : NULL,
                head_b >= 0 ? &B->layers[head_b] : NULL);
}

/* The rows of p from the layers of A and B; the fused groups' member
 * names go in *store (na + nb entries, the caller frees it). */
static ntp_status align_layers(ntp_ctx *ctx, const ntp_run_result *A, const ntp_run_result *B,
                               ntp_compare_pair *p, const char ***store)
{
    int na = A->n_layers, nb = B->n_layers;
    int *match_a = malloc(((size_t)na + 1) * sizeof *match_a);
    int *match_b = malloc(((size_t)nb + 1) * sizeof *match_b);
    bool *renamed = calloc((size_t)na + 1, sizeof *renamed);
    p->rows = calloc((size_t)na + (size_t)nb + 1, sizeof *p->rows);
    *store = calloc((size_t)na + (size_t)nb + 1, sizeof **store);
    name_index ix = {0}, ixa = {0};
    groups G = {0};
    ntp_status st = NTP_STATUS_OK;
    if (!match_a || !match_b || !renamed || !p->rows || !*store || !index_build(&ix, B)) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    for (int j = 0; j < nb; j++)
        match_b[j] = -1;
    for (int i = 0; i < na; i++) {
        match_a[i] = -1;
        const char *name = nz(A->layers[i].name);
        int b = (int)(hash_name(name) & (uint64_t)(ix.cap - 1));
        for (int j = ix.head[b]; j >= 0; j = ix.next[j])
            if (match_b[j] < 0 && strcmp(nz(B->layers[j].name), name) == 0) {
                match_a[i] = j;
                match_b[j] = i;
                break;
            }
    }
    /* Renames: unmatched rows of A and B with the same signature, paired in
     * order (a renamed layer keeps its place in the network). */
    int ua = 0, ub = 0;
    for (int i = 0; i < na; i++)
        ua += match_a[i] < 0;
    for (int j = 0; j < nb; j++)
        ub += match_b[j] < 0;
    if ((int64_t)ua * ub <= RENAME_SEARCH_LIMIT) {
        int from = 0;
        for (int i = 0; i < na; i++) {
            if (match_a[i] >= 0)
                continue;
            for (int j = from; j < nb; j++)
                if (match_b[j] < 0 && same_signature(&A->layers[i], &B->layers[j])) {
                    match_a[i] = j;
                    match_b[j] = i;
                    renamed[i] = true;
                    from = j + 1;
                    break;
                }
        }
    }
    /* Fused layers have no time of their own: where either run fused any,
     * the layers tied together by fusion in either run become one row. */
    bool any_fused = false;
    for (int i = 0; i < na && !any_fused; i++)
        any_fused = A->layers[i].fused;
    for (int j = 0; j < nb && !any_fused; j++)
        any_fused = B->layers[j].fused;
    if (any_fused && (!index_build(&ixa, A) || !groups_build(&G, A, B, &ixa, &ix, match_a))) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    int n = 0, n_members = 0;
    for (int i = 0; i < na; i++) {
        if (any_fused) {
            int root = uf_find(G.parent, i);
            if (G.grouped[root]) {
                if (G.emitted[root] < 0) {
                    G.emitted[root] = n;
                    emit_group(A, B, &G, root, match_b, *store, &n_members, &p->rows[n++]);
                }
                continue;
            }
        }
        ntp_compare_row *row = &p->rows[n++];
        const ntp_layer_result *l = &A->layers[i];
        row->name = l->name;
        row->type = l->type;
        row->base_index = i;
        row->base_rows = 1;
        int j = match_a[i];
        row->other_index = j;
        if (j >= 0) {
            const ntp_layer_result *m = &B->layers[j];
            row->other_name = m->name;
            row->other_rows = 1;
            row->align = renamed[i] ? NTP_ALIGN_RENAMED : NTP_ALIGN_MATCHED;
            ntp__compare_fill(row, &l->time_ms, &m->time_ms, l->share, m->share);
            set_changes(row, l, m);
        } else {
            row->align = NTP_ALIGN_MISSING;
            ntp__compare_fill(row, &l->time_ms, NULL, l->share, 0);
            set_changes(row, l, NULL);
        }
    }
    for (int j = 0; j < nb; j++) {
        if (any_fused) {
            int root = uf_find(G.parent, na + j);
            if (G.grouped[root]) {
                if (G.emitted[root] < 0) {
                    G.emitted[root] = n;
                    emit_group(A, B, &G, root, match_b, *store, &n_members, &p->rows[n++]);
                }
                continue;
            }
        }
        if (match_b[j] >= 0)
            continue;
        ntp_compare_row *row = &p->rows[n++];
        const ntp_layer_result *m = &B->layers[j];
        row->name = row->other_name = m->name;
        row->type = m->type;
        row->base_index = -1;
        row->other_index = j;
        row->other_rows = 1;
        row->align = NTP_ALIGN_ADDED;
        ntp__compare_fill(row, NULL, &m->time_ms, 0, m->share);
        set_changes(row, NULL, m);
    }
    p->n_rows = n;
    for (int k = 0; k < n; k++) {
        p->n_fused_groups += p->rows[k].align == NTP_ALIGN_FUSED;
        p->n_changed += p->rows[k].changes != 0;
    }
    qsort(p->rows, (size_t)n, sizeof *p->rows, by_delta);
out:
    index_free(&ix);
    index_free(&ixa);
    groups_free(&G);
    free(match_a);
    free(match_b);
    free(renamed);
    return st;
}

static ntp_status align_markers(ntp_ctx *ctx, const ntp_run_result *A, const ntp_run_result *B,
                                ntp_compare_pair *p)
{
    p->markers = calloc((size_t)A->n_markers + (size_t)B->n_markers + 1, sizeof *p->markers);
    if (!p->markers)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    bool *used = calloc((size_t)B->n_markers + 1, sizeof *used);
    if (!used)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    int n = 0;
    for (int i = 0; i < A->n_markers; i++) {
        const ntp_marker_result *a = &A->markers[i];
        ntp_compare_row *row = &p->markers[n++];
        row->name = a->name;
        row->type = "marker";
        row->base_index = i;
        row->other_index = -1;
        for (int j = 0; j < B->n_markers; j++)
            if (!used[j] && strcmp(nz(a->name), nz(B->markers[j].name)) == 0) {
                used[j] = true;
                row->other_index = j;
                break;
            }
        if (row->other_index >= 0) {
            const ntp_marker_result *b = &B->markers[row->other_index];
            row->other_name = b->name;
            row->align = NTP_ALIGN_MATCHED;
            ntp__compare_fill(row, &a->time_ms, &b->time_ms, a->share, b->share);
        } else {
            row->align = NTP_ALIGN_MISSING;
            ntp__compare_fill(row, &a->time_ms, NULL, a->share, 0);
        }
    }
    for (int j = 0; j < B->n_markers; j++) {
        if (used[j])
            continue;
        const ntp_marker_result *b = &B->markers[j];
        ntp_compare_row *row = &p->markers[n++];
        row->name = row->other_name = b->name;
        row->type = "marker";
        row->base_index = -1;
        row->other_index = j;
        row->align = NTP_ALIGN_ADDED;
        ntp__compare_fill(row, NULL, &b->time_ms, 0, b->share);
    }
    p->n_markers = n;
    free(used);
    return NTP_STATUS_OK;
}

/* --- what differs -------------------------------------------------------------------- */

static bool add_diff(ntp_compare_pair *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static bool add_diff(ntp_compare_pair *p, const char *fmt, ...)
{
    char buf[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **d = realloc(p->diffs, (size_t)(p->n_diffs + 1) * sizeof *d);
    if (!d)
        return false;
    p->diffs = d;
    if (!(d[p->n_diffs] = ntp__strdup(buf)))
        return false;
    p->n_diffs++;
    return true;
}

static bool diff_str(ntp_compare_pair *p, const char *what, const char *a, const char *b)
{
    if (strcmp(nz(a), nz(b)) == 0)
        return true;
    return add_diff(p, "%s: %s -> %s", what, a ? a : "(none)", b ? b : "(none)");
}

static bool diff_int(ntp_compare_pair *p, const char *what, int64_t a, int64_t b)
{
    return a == b || add_diff(p, "%s: %" PRId64 " -> %" PRId64, what, a, b);
}

static const char *param_of(const ntp_run_result *r, const char *name)
{
    for (int i = 0; i < r->n_params; i++)
        if (strcmp(nz(r->param_names[i]), name) == 0)
            return r->param_values[i];
    return NULL;
}

static bool differences(const ntp_run_result *A, const ntp_run_result *B, ntp_compare_pair *p)
{
    bool ok =
        diff_str(p, "topology", A->topology, B->topology) &&
        diff_str(p, "source", A->source, B->source) &&
        diff_str(p, "backend", A->backend, B->backend) &&
        diff_str(p, "precision", ntp_dtype_name(A->precision), ntp_dtype_name(B->precision)) &&
        diff_int(p, "batch", A->batch, B->batch) &&
        diff_int(p, "threads", A->threads, B->threads) &&
        diff_int(p, "seed", (int64_t)A->seed, (int64_t)B->seed) &&
        diff_str(p, "only", A->only_marker, B->only_marker) &&
        diff_str(p, "fuse", A->fused ? "on" : "off", B->fused ? "on" : "off") &&
        diff_int(p, "layers", A->n_layers, B->n_layers);
    for (int i = 0; ok && i < A->n_params; i++) {
        char what[320];
        snprintf(what, sizeof what, "param %s", nz(A->param_names[i]));
        if (strcmp(nz(A->param_names[i]), "batch") != 0)
            ok = diff_str(p, what, A->param_values[i], param_of(B, A->param_names[i]));
    }
    for (int i = 0; ok && i < B->n_params; i++) {
        char what[320];
        snprintf(what, sizeof what, "param %s", nz(B->param_names[i]));
        if (!param_of(A, B->param_names[i]))
            ok = diff_str(p, what, NULL, B->param_values[i]);
    }
    const ntp_env *a = &A->env, *b = &B->env;
    return ok && diff_str(p, "cpu", a->cpu_model, b->cpu_model) &&
           (!a->cpu_signature[0] || !b->cpu_signature[0] ||
            diff_str(p, "cpu signature", a->cpu_signature, b->cpu_signature)) &&
           diff_int(p, "cores", a->cores, b->cores) &&
           diff_int(p, "memory bytes", a->memory_bytes, b->memory_bytes) &&
           diff_str(p, "cpu flags", a->cpu_flags, b->cpu_flags) &&
           diff_str(p, "host", a->hostname, b->hostname) && diff_str(p, "os", a->os, b->os) &&
           diff_str(p, "compiler", a->compiler, b->compiler) &&
           diff_str(p, "libraries", a->libraries, b->libraries) &&
           diff_str(p, "ntprof", a->ntprof_version, b->ntprof_version) &&
           diff_str(p, "git revision", a->git_revision, b->git_revision);
}

/* --- the comparison --------------------------------------------------------------------- */

int ntp_comparison_run_count(const ntp_comparison *c)
{
    return c ? c->n_runs : 0;
}

const ntp_run_result *ntp_comparison_run(const ntp_comparison *c, int i)
{
    return c && i >= 0 && i < c->n_runs ? c->runs[i] : NULL;
}

const char *ntp_comparison_label(const ntp_comparison *c, int i)
{
    return c && i >= 0 && i < c->n_runs ? c->labels[i] : NULL;
}

int ntp_comparison_pair_count(const ntp_comparison *c)
{
    return c ? c->n_pairs : 0;
}

const ntp_compare_pair *ntp_comparison_pair(const ntp_comparison *c, int i)
{
    return c && i >= 0 && i < c->n_pairs ? &c->pairs[i] : NULL;
}

void ntp_comparison_free(ntp_comparison *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n_pairs; i++) {
        ntp_compare_pair *p = &c->pairs[i];
        free(p->rows);
        free(p->markers);
        free(c->member_store[i]);
        for (int k = 0; k < p->n_diffs; k++)
            free(p->diffs[k]);
        free(p->diffs);
    }
    for (int i = 0; c->labels && i < c->n_runs; i++)
        free(c->labels[i]);
    free(c->labels);
    free(c->pairs);
    free(c->member_store);
    free(c);
}

ntp_status ntp_compare(ntp_ctx *ctx, const ntp_run_result *const *runs, const char *const *labels,
                       int n, ntp_comparison **out)
{
    *out = NULL;
    if (!runs || n < 2)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "compare needs at least two runs");
    for (int i = 0; i < n; i++)
        if (!runs[i] || (runs[i]->n_layers > 0 && !runs[i]->layers))
            return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "compare: run %d is missing", i);
    ntp_comparison *c = calloc(1, sizeof *c);
    if (!c)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    c->n_runs = n;
    c->runs = runs;
    c->labels = calloc((size_t)n, sizeof *c->labels);
    c->pairs = calloc((size_t)n - 1, sizeof *c->pairs);
    c->member_store = calloc((size_t)n - 1, sizeof *c->member_store);
    ntp_status st = NTP_STATUS_OK;
    if (!c->labels || !c->pairs || !c->member_store) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        char def[16];
        /* A, B, ..., Z, then run numbers. */
        if (i < 26)
            snprintf(def, sizeof def, "%c", 'A' + i);
        else
            snprintf(def, sizeof def, "#%d", i + 1);
        if (!(c->labels[i] = ntp__strdup(labels && labels[i] ? labels[i] : def))) {
            st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            goto fail;
        }
    }
    for (int k = 1; k < n; k++) {
        ntp_compare_pair *p = &c->pairs[c->n_pairs++];
        const ntp_run_result *A = runs[0], *B = runs[k];
        p->base = 0;
        p->other = k;
        p->end_to_end.name = A->topology;
        p->end_to_end.other_name = B->topology;
        p->end_to_end.type = "end_to_end";
        p->end_to_end.base_index = p->end_to_end.other_index = -1;
        ntp__compare_fill(&p->end_to_end, &A->end_to_end_ms, &B->end_to_end_ms, 1, 1);
        p->throughput_ratio =
            A->throughput > 0 && isfinite(B->throughput) ? B->throughput / A->throughput : 0;
        if ((st = align_layers(ctx, A, B, p, &c->member_store[k - 1])) ||
            (st = align_markers(ctx, A, B, p)))
            goto fail;
        if (!differences(A, B, p)) {
            st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            goto fail;
        }
    }
    *out = c;
    return NTP_STATUS_OK;
fail:
    ntp_comparison_free(c);
    return st;
}
