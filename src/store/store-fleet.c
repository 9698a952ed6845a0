/* Hardware comparison across a fleet (ntprof compare --machine, docs/compare.md):
 * which stored runs of which machines line up. A machine is its key, as
 * every run records it (CPU model|cores|hostname, ntp_machine_key). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "store-impl.h"

/* What a run needs to be matched: its configuration and machine. */
typedef struct fleet_run {
    int64_t id;
    char machine[256];
    char topology[128];
    char source[PATH_MAX];
    char backend[32];
    char precision[16];
    int64_t batch;
    int64_t threads;
} fleet_run;

/* Every run, newest first. */
static ntp_status load_runs(ntp_ctx *ctx, ntp_store *s, fleet_run **out, int *n)
{
    *out = NULL;
    *n = 0;
    ntp__stmt *q = ntp__db_prepare(s, "SELECT id, machine, topology, source, backend, precision,"
                                      " batch, threads FROM runs ORDER BY id DESC");
    if (!q)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot list runs");
    fleet_run *v = NULL;
    int cap = 0, count = 0;
    ntp_status st = NTP_STATUS_OK;
    ntp__step rc;
    while ((rc = ntp__db_step(q)) == NTP__STEP_ROW) {
        if (count == cap) {
            cap = cap ? 2 * cap : 64;
            fleet_run *p = realloc(v, (size_t)cap * sizeof *p);
            if (!p) {
                st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
                break;
            }
            v = p;
        }
        fleet_run *r = &v[count++];
        r->id = ntp__db_col_int(q, 0);
        ntp__db_col_str(q, 1, r->machine, sizeof r->machine);
        ntp__db_col_str(q, 2, r->topology, sizeof r->topology);
        ntp__db_col_str(q, 3, r->source, sizeof r->source);
        ntp__db_col_str(q, 4, r->backend, sizeof r->backend);
        ntp__db_col_str(q, 5, r->precision, sizeof r->precision);
        r->batch = ntp__db_col_int(q, 6);
        r->threads = ntp__db_col_int(q, 7);
    }
    if (!st && rc == NTP__STEP_ERROR)
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot list runs");
    ntp__db_finalize(q);
    if (st) {
        free(v);
        return st;
    }
    *out = v;
    *n = count;
    return NTP_STATUS_OK;
}

/* The model named by its topology, its source as stored, the source's file
 * name, or the file the path names (resolved). */
static bool model_matches(const fleet_run *r, const char *model, const char *real)
{
    if (!model)
        return true;
    const char *base = strrchr(r->source, '/');
    base = base ? base + 1 : r->source;
    return strcmp(r->topology, model) == 0 || strcmp(r->source, model) == 0 ||
           strcmp(base, model) == 0 || (real && strcmp(r->source, real) == 0);
}

static bool query_matches(const fleet_run *r, const ntp_fleet_query *q, const char *real)
{
    return model_matches(r, q->model, real) &&
           (!q->backend || strcmp(r->backend, q->backend) == 0) &&
           (!q->precision || strcmp(r->precision, q->precision) == 0) &&
           (q->batch <= 0 || r->batch == q->batch) && (q->threads <= 0 || r->threads == q->threads);
}

/* The same configuration: topology, backend, precision, batch, and threads
 * where the query fixes them (machines differ in cores, so by default each
 * machine's run keeps its own thread count). */
static bool same_config(const fleet_run *a, const fleet_run *b)
{
    return strcmp(a->topology, b->topology) == 0 && strcmp(a->backend, b->backend) == 0 &&
           strcmp(a->precision, b->precision) == 0 && a->batch == b->batch;
}

/* The distinct machine keys, most recently seen first, into one line. */
static void known_machines(const fleet_run *v, int n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    int listed = 0;
    for (int i = 0; i < n && used < len; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = strcmp(v[j].machine, v[i].machine) == 0;
        if (seen || !v[i].machine[0])
            continue;
        int runs = 0;
        for (int j = i; j < n; j++)
            runs += strcmp(v[j].machine, v[i].machine) == 0;
        int w = snprintf(buf + used, len - used, "%s'%s' (%d run%s)", listed ? ", " : "",
                         v[i].machine, runs, runs == 1 ? "" : "s");
        used += w > 0 ? (size_t)w : 0;
        listed++;
    }
    if (!listed)
        snprintf(buf, len, "none (the history holds no runs)");
}

/* want: a machine key, or a part of exactly one (a hostname). */
static ntp_status resolve(ntp_ctx *ctx, ntp_store *s, const fleet_run *v, int n, const char *want,
                          char *key, size_t len)
{
    const char *found = NULL;
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].machine, want) == 0) {
            snprintf(key, len, "%s", want);
            return NTP_STATUS_OK;
        }
    for (int i = 0; i < n; i++) {
        if (!v[i].machine[0] || !strstr(v[i].machine, want))
            continue;
        if (found && strcmp(found, v[i].machine) != 0)
            return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                              "history %s: machine '%s' matches several machines ('%s', '%s'); "
                              "give more of its key",
                              s->display, want, found, v[i].machine);
        found = v[i].machine;
    }
    if (!found) {
        char known[2048];
        known_machines(v, n, known, sizeof known);
        return ntp__error(ctx, NTP_STATUS_UNKNOWN_NAME,
                          "history %s: no runs of a machine '%s'; machines with runs: %s",
                          s->display, want, known);
    }
    snprintf(key, len, "%s", found);
    return NTP_STATUS_OK;
}

static void describe_query(const ntp_fleet_query *q, char *buf, size_t len)
{
    char batch[32] = "", threads[32] = "";
    if (q->batch > 0)
        snprintf(batch, sizeof batch, ", batch %lld", (long long)q->batch);
    if (q->threads > 0)
        snprintf(threads, sizeof threads, ", %d threads", q->threads);
    snprintf(buf, len, "%s%s%s%s%s%s%s", q->model ? q->model : "any topology",
             q->backend ? ", backend " : "", q->backend ? q->backend : "",
             q->precision ? ", precision " : "", q->precision ? q->precision : "", batch, threads);
}

ntp_status ntp_store_fleet_runs(ntp_ctx *ctx, ntp_store *s, const ntp_fleet_query *q,
                                const char *const *machines, int n, int64_t *ids, char (*keys)[256])
{
    static const ntp_fleet_query any = {0};
    if (!s || !machines || n < 1 || !ids || !keys)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_store_fleet_runs: no store, machines or output");
    if (!q)
        q = &any;
    fleet_run *v;
    int nv;
    ntp_status st = load_runs(ctx, s, &v, &nv);
    if (st)
        return st;
    for (int i = 0; i < n && !st; i++) {
        st = resolve(ctx, s, v, nv, machines[i], keys[i], sizeof keys[i]);
        for (int j = 0; j < i && !st; j++)
            if (strcmp(keys[i], keys[j]) == 0)
                st = ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                                "history %s: machines '%s' and '%s' are the same machine ('%s')",
                                s->display, machines[j], machines[i], keys[i]);
    }
    char *real = q->model ? realpath(q->model, NULL) : NULL;
    int *pick = calloc((size_t)n, sizeof *pick);
    if (!st && !pick)
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    /* The first machine's matching runs, newest first: the first whose
     * configuration every other machine also ran wins, with each one's
     * newest run of it. */
    bool any_first = false, done = false;
    for (int a = 0; a < nv && !st && !done; a++) {
        if (strcmp(v[a].machine, keys[0]) != 0 || !query_matches(&v[a], q, real))
            continue;
        any_first = true;
        pick[0] = a;
        done = true;
        for (int m = 1; m < n && done; m++) {
            done = false;
            for (int b = 0; b < nv && !done; b++)
                if (strcmp(v[b].machine, keys[m]) == 0 && query_matches(&v[b], q, real) &&
                    same_config(&v[a], &v[b])) {
                    pick[m] = b;
                    done = true;
                }
        }
    }
    if (!st && !done) {
        char what[1024];
        describe_query(q, what, sizeof what);
        if (!any_first)
            st = ntp__error(ctx, NTP_STATUS_UNKNOWN_NAME,
                            "history %s: machine '%s' has no run of %s", s->display, keys[0], what);
        else
            st = ntp__error(ctx, NTP_STATUS_UNKNOWN_NAME,
                            "history %s: no configuration of %s (topology, backend, precision, "
                            "batch) was run on every machine given; see `ntprof history`",
                            s->display, what);
    }
    for (int m = 0; m < n && !st; m++)
        ids[m] = v[pick[m]].id;
    free(pick);
    free(real);
    free(v);
    return st;
}
