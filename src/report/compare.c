/* Comparing runs: layers aligned by name (renamed, added and missing layers
 * recognised), speedups with their confidence, the significance rule, and
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
    int *head;                  /* bucket -> first row, -1 */
    int *next;                  /* row -> next row in its bucket, -1 */
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

static const char *nz(const char *s) { return s ? s : ""; }

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

static ntp_status align_layers(ntp_ctx *ctx, const ntp_run_result *A, const ntp_run_result *B,
                               ntp_compare_pair *p)
{
    int na = A->n_layers, nb = B->n_layers;
    int *match_a = malloc(((size_t)na + 1) * sizeof *match_a);
    int *match_b = malloc(((size_t)nb + 1) * sizeof *match_b);
    bool *renamed = calloc((size_t)na + 1, sizeof *renamed);
    p->rows = calloc((size_t)na + (size_t)nb + 1, sizeof *p->rows);
    name_index ix = {0};
    ntp_status st = NTP_STATUS_OK;
    if (!match_a || !match_b || !renamed || !p->rows || !index_build(&ix, B)) {
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
    int n = 0;
    for (int i = 0; i < na; i++) {
        ntp_compare_row *row = &p->rows[n++];
        const ntp_layer_result *l = &A->layers[i];
        row->name = l->name;
        row->type = l->type;
        row->base_index = i;
        int j = match_a[i];
        row->other_index = j;
        if (j >= 0) {
            const ntp_layer_result *m = &B->layers[j];
            row->other_name = m->name;
            row->align = renamed[i] ? NTP_ALIGN_RENAMED : NTP_ALIGN_MATCHED;
            ntp__compare_fill(row, &l->time_ms, &m->time_ms, l->share, m->share);
        } else {
            row->align = NTP_ALIGN_MISSING;
            ntp__compare_fill(row, &l->time_ms, NULL, l->share, 0);
        }
    }
    for (int j = 0; j < nb; j++) {
        if (match_b[j] >= 0)
            continue;
        ntp_compare_row *row = &p->rows[n++];
        const ntp_layer_result *m = &B->layers[j];
        row->name = row->other_name = m->name;
        row->type = m->type;
        row->base_index = -1;
        row->other_index = j;
        row->align = NTP_ALIGN_ADDED;
        ntp__compare_fill(row, NULL, &m->time_ms, 0, m->share);
    }
    p->n_rows = n;
    qsort(p->rows, (size_t)n, sizeof *p->rows, by_delta);
out:
    index_free(&ix);
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

static bool add_diff(ntp_compare_pair *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
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
    bool ok = diff_str(p, "topology", A->topology, B->topology) &&
              diff_str(p, "source", A->source, B->source) &&
              diff_str(p, "backend", A->backend, B->backend) &&
              diff_str(p, "precision", ntp_dtype_name(A->precision), ntp_dtype_name(B->precision)) &&
              diff_int(p, "batch", A->batch, B->batch) &&
              diff_int(p, "threads", A->threads, B->threads) &&
              diff_int(p, "seed", (int64_t)A->seed, (int64_t)B->seed) &&
              diff_str(p, "only", A->only_marker, B->only_marker) &&
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

void ntp_comparison_free(ntp_comparison *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n_pairs; i++) {
        ntp_compare_pair *p = &c->pairs[i];
        free(p->rows);
        free(p->markers);
        for (int k = 0; k < p->n_diffs; k++)
            free(p->diffs[k]);
        free(p->diffs);
    }
    for (int i = 0; c->labels && i < c->n_runs; i++)
        free(c->labels[i]);
    free(c->labels);
    free(c->pairs);
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
    ntp_status st = NTP_STATUS_OK;
    if (!c->labels || !c->pairs) {
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
        p->throughput_ratio = A->throughput > 0 && isfinite(B->throughput)
                                  ? B->throughput / A->throughput : 0;
        if ((st = align_layers(ctx, A, B, p)) || (st = align_markers(ctx, A, B, p)))
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
