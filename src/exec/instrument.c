/* The counting pass: counters and external tools per report row and per
 * marker segment, and the bottleneck verdict (docs/counters.md).
 *
 * It runs after ntp_run's timing passes, as a pass of its own, so reading
 * counters (about a microsecond per group per row) and talking to perf
 * (tens of microseconds per row) never disturb the reported times. Each
 * iteration runs the measured rows exactly as the per-layer timing pass
 * does, with a counter read, a perf command, a callgrind toggle or an NVTX
 * range where that pass reads the clock. */
#include <errno.h>
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/ctx-impl.h"
#include "exec-impl.h"
#include "measure/counters-impl.h"
#include "measure/machine-impl.h"
#include "ntprof/machine.h"

/* Without measured ceilings, the ridge point of the roofline taken for
 * the verdict, in FLOP per byte: server and desktop CPUs sit between about
 * 5 (an AVX2 laptop on two DRAM channels) and 20 (many AVX-512 cores per
 * socket), so layers below 10 are memory-bound candidates and layers far
 * above it compute-bound ones. Counters and simulation refine that. */
#define NTP_BALANCE_HEURISTIC 10.0
/* A row faster than this is dominated by per-call latency. */
#define NTP_LATENCY_MS 0.005
#define NTP_MAX_VALUES 256

typedef struct vals {
    int n, cap;
    ntp_counter_value *v;
} vals;

typedef struct inst {
    ntp_ctx *ctx;
    ntp_exec *x;
    const ntp_rows *w;
    const ntp_run_opts *o;
    ntp_run_result *r;
    ntp_counter_store *s;
    vals *rows;  /* per report row */
    vals *marks; /* per marker result */
    int iters;
    double balance; /* machine balance (ridge point), FLOP/B */
    char balance_src[160];
    char dir[4096];
    bool dir_made;
} inst;

static ntp_status oom(ntp_ctx *ctx)
{
    return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
}

static ntp_counter_value *push(vals *v)
{
    if (v->n == v->cap) {
        int cap = v->cap ? 2 * v->cap : 16;
        ntp_counter_value *p = realloc(v->v, (size_t)cap * sizeof *p);
        if (!p)
            return NULL;
        v->v = p;
        v->cap = cap;
    }
    ntp_counter_value *c = &v->v[v->n++];
    memset(c, 0, sizeof *c);
    return c;
}

static bool note(inst *I, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool note(inst *I, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    ntp_run_result *r = I->r;
    const char **p = realloc(r->counter_notes, (size_t)(r->n_counter_notes + 1) * sizeof *p);
    if (!p)
        return false;
    r->counter_notes = p;
    const char *s = ntp__store_str(I->s, buf);
    if (!s)
        return false;
    p[r->n_counter_notes++] = s;
    return true;
}

static ntp_status run_row(ntp_ctx *ctx, ntp_exec *x, const ntp_rows *w, int k)
{
    if (x->steps[w->step[k]].kind == NTP_STEP_FUSED)
        return NTP_STATUS_OK;
    return ntp__exec_sub(ctx, x, w->step[k], w->sub[k]);
}

/* --- in-process counters ------------------------------------------------------------- */

static ntp_status append_values(inst *I, vals *dst, const ntp_counter_value *v, int n)
{
    for (int i = 0; i < n; i++) {
        ntp_counter_value *c = push(dst);
        if (!c)
            return oom(I->ctx);
        *c = v[i];
    }
    return NTP_STATUS_OK;
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return a < b ? -1 : a > b;
}

/* Take the counting overhead, the median of what the empty regions
 * counted (a region that caught a context switch does not move it), out
 * of every row's counts; below it a count is n/a (docs/counters.md). */
static void subtract_overhead(inst *I, const ntp_counters *c, ntp_cacc *acc, double *empty,
                              size_t n_empty, size_t cap_empty)
{
    char text[768];
    size_t u = 0;
    for (int e = 0; e < c->n_ev && n_empty > 0; e++) {
        const ntp_cevent *ev = &c->ev[e];
        double *x = &empty[(size_t)e * cap_empty];
        qsort(x, n_empty, sizeof *x, cmp_double);
        double med = n_empty % 2 ? x[n_empty / 2] : (x[n_empty / 2 - 1] + x[n_empty / 2]) / 2;
        if (ev->group < 0 || !(med > 0))
            continue;
        for (int k = 0; k < I->w->n; k++) {
            ntp_cacc *r = &acc[(size_t)k * (size_t)c->n_ev + (size_t)e];
            double over = med * I->iters;
            r->value = r->value > over ? r->value - over : 0;
            r->overhead = over;
        }
        char amount[48];
        ntp__counters_amount(med * ev->scale, ev->unit, amount, sizeof amount);
        if (u < sizeof text)
            u += (size_t)snprintf(text + u, sizeof text - u, "%s%s %s", u ? ", " : "", ev->name,
                                  amount);
    }
    if (u > 0)
        note(I,
             "perf_event: the counting overhead per row, the median of %zu empty regions (two "
             "reads with nothing between), is subtracted from every row and marker: %s; a count "
             "below it is n/a",
             n_empty, text);
}

static ntp_status pass_perf_event(inst *I, const char *list)
{
    ntp_ctx *ctx = I->ctx;
    const ntp_rows *w = I->w;
    ntp_counters *c = NULL;
    ntp_status st = ntp__counters_parse(ctx, list, &c);
    if (st)
        return st;
    uint64_t *a = NULL, *b = NULL;
    ntp_cacc *acc = NULL, *sum = NULL, *one = NULL;
    double *empty = NULL;
    ntp_counter_value *tmp = malloc(NTP_MAX_VALUES * sizeof *tmp);
    if (!tmp || (st = ntp__counters_open(ctx, c)))
        goto done;
    a = malloc((c->snap_len + 1) * sizeof *a);
    b = malloc((c->snap_len + 1) * sizeof *b);
    acc = calloc((size_t)w->n * (size_t)c->n_ev + 1, sizeof *acc);
    sum = calloc((size_t)c->n_ev + 1, sizeof *sum);
    if (!a || !b || !acc || !sum) {
        st = oom(ctx);
        goto done;
    }
    /* After every row, an empty region: two reads with nothing between.
     * What it counts is the cost of counting itself (the read system calls
     * on every thread, and a pool's threads spinning meanwhile), which
     * every row's interval contains too. */
    size_t n_empty = 0, cap_empty = (size_t)I->iters * (size_t)w->n;
    empty = malloc((cap_empty * (size_t)c->n_ev + 1) * sizeof *empty);
    one = malloc(((size_t)c->n_ev + 1) * sizeof *one);
    if (!empty || !one) {
        st = oom(ctx);
        goto done;
    }
    for (int it = 0; it < I->iters; it++) {
        if (I->o->progress)
            I->o->progress(I->o->progress_user, "count", it, I->iters);
        ntp__counters_read(c, a);
        for (int k = 0; k < w->n; k++) {
            if ((st = run_row(ctx, I->x, w, k)))
                goto done;
            ntp__counters_read(c, b);
            ntp__counters_add(c, a, b, &acc[(size_t)k * (size_t)c->n_ev]);
            ntp__counters_read(c, a);
            memset(one, 0, (size_t)c->n_ev * sizeof *one);
            ntp__counters_add(c, b, a, one);
            for (int e = 0; e < c->n_ev; e++)
                empty[(size_t)e * cap_empty + n_empty] = one[e].value;
            n_empty++;
        }
    }
    subtract_overhead(I, c, acc, empty, n_empty, cap_empty);
    for (int k = 0; k < w->n; k++) {
        int n = ntp__counters_values(c, &acc[(size_t)k * (size_t)c->n_ev], I->iters, I->s, tmp,
                                     NTP_MAX_VALUES);
        if ((st = append_values(I, &I->rows[k], tmp, n)))
            goto done;
    }
    /* A segment's counts are the sums of its rows' (so are its times). */
    for (int m = 0; m < I->r->n_markers; m++) {
        const ntp_marker_result *M = &I->r->markers[m];
        memset(sum, 0, (size_t)c->n_ev * sizeof *sum);
        for (int k = M->first; k <= M->last; k++)
            for (int e = 0; e < c->n_ev; e++) {
                const ntp_cacc *x = &acc[(size_t)k * (size_t)c->n_ev + (size_t)e];
                sum[e].value += x->value;
                sum[e].raw += x->raw;
                sum[e].enabled += x->enabled;
                sum[e].running += x->running;
                sum[e].overhead += x->overhead;
            }
        int n = ntp__counters_values(c, sum, I->iters, I->s, tmp, NTP_MAX_VALUES);
        if ((st = append_values(I, &I->marks[m], tmp, n)))
            goto done;
    }
    I->r->counter_threads = c->n_thr - c->threads_missed;
    note(I,
         "perf_event: %d thread%s counted, one group per thread opened when counting started "
         "(threads created later are not counted)%s",
         I->r->counter_threads, I->r->counter_threads == 1 ? "" : "s",
         c->user_only ? "; user space only (perf_event_paranoid forbids the kernel)" : "");
    if (!ntp__have_cpu_pmu())
        note(I, "no hardware PMU: the kernel exposes no CPU performance counters on this machine "
                "(a VM without a virtual PMU), so hardware events are n/a; software events and "
                "--tool callgrind/cachegrind (simulation) work");
done:
    free(a);
    free(b);
    free(acc);
    free(sum);
    free(tmp);
    free(empty);
    free(one);
    ntp__counters_free(c);
    return st;
}

/* --- tools ---------------------------------------------------------------------------- */

static vals *seg_target(inst *I, const ntp_tool_seg *s)
{
    return s->marker >= 0 ? &I->marks[s->marker] : &I->rows[s->first];
}

static ntp_status fold(inst *I, const ntp_tool_seg *segs, const ntp_tool_result *res,
                       const char *source)
{
    for (int i = 0; i < res->n; i++) {
        const ntp_tool_value *tv = &res->v[i];
        ntp_counter_value *c = push(seg_target(I, &segs[tv->seg]));
        if (!c)
            return oom(I->ctx);
        c->name = ntp__store_str(I->s, tv->name);
        /* The tool's name lives in a job that is freed before the result. */
        c->source = ntp__store_str(I->s, source);
        c->unit = ntp__store_str(I->s, tv->unit);
        c->available = tv->available;
        c->scaled = tv->scaled;
        c->value = tv->value;
        c->running = tv->running;
        c->reason = tv->available ? NULL : ntp__store_str(I->s, tv->reason);
        if (!c->name || !c->unit || (!tv->available && !c->reason))
            return oom(I->ctx);
    }
    for (int i = 0; i < res->n_notes; i++)
        note(I, "%s", res->notes[i]);
    return NTP_STATUS_OK;
}

/* Markers whose rows all carry a tool's counts, and that have none of
 * their own from it, get the sums (counts add up; derived ratios are
 * computed afterwards from the sums). */
static ntp_status sum_into_markers(inst *I, const char *prefix, const char *source)
{
    size_t pl = strlen(prefix);
    for (int m = 0; m < I->r->n_markers; m++) {
        const ntp_marker_result *M = &I->r->markers[m];
        vals *mv = &I->marks[m];
        bool has = false;
        for (int i = 0; i < mv->n; i++)
            has |= strncmp(mv->v[i].name, prefix, pl) == 0;
        if (has)
            continue;
        const vals *first = &I->rows[M->first];
        for (int i = 0; i < first->n; i++) {
            const ntp_counter_value *v0 = &first->v[i];
            if (v0->derived || strncmp(v0->name, prefix, pl) != 0)
                continue;
            double total = 0, run = 0;
            bool avail = true, scaled = false, all = true;
            const char *reason = NULL;
            for (int k = M->first; k <= M->last && all; k++) {
                const vals *rv = &I->rows[k];
                int j = 0;
                while (j < rv->n && strcmp(rv->v[j].name, v0->name) != 0)
                    j++;
                if (j == rv->n) {
                    all = false;
                    break;
                }
                avail &= rv->v[j].available;
                if (!rv->v[j].available && !reason)
                    reason = rv->v[j].reason;
                scaled |= rv->v[j].scaled;
                total += rv->v[j].value;
                run += rv->v[j].running;
            }
            if (!all)
                continue;
            ntp_counter_value *c = push(mv);
            if (!c)
                return oom(I->ctx);
            *c = *v0;
            c->source = ntp__store_str(I->s, source);
            c->available = avail;
            c->value = avail ? total : 0;
            c->scaled = scaled;
            c->running = run / (M->last - M->first + 1);
            c->reason = avail ? NULL : reason;
        }
    }
    return NTP_STATUS_OK;
}

static ntp_status make_dir(inst *I)
{
    if (I->dir[0])
        return NTP_STATUS_OK;
    if (I->o->tool_dir) {
        snprintf(I->dir, sizeof I->dir, "%s", I->o->tool_dir);
        if (mkdir(I->dir, 0700) != 0 && errno != EEXIST)
            return ntp__error(I->ctx, NTP_STATUS_IO_ERROR, "tool directory %s: %s", I->dir,
                              strerror(errno));
        return NTP_STATUS_OK;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(I->dir, sizeof I->dir, "%s/ntprof-tool-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(I->dir)) {
        ntp_status st = ntp__error(I->ctx, NTP_STATUS_IO_ERROR, "cannot make a directory %s: %s",
                                   I->dir, strerror(errno));
        I->dir[0] = 0;
        return st;
    }
    I->dir_made = true;
    return NTP_STATUS_OK;
}

/* perf stat's files are folded into the report; a directory ntprof made
 * only for them is removed. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char path[4400];
    while (d && (de = readdir(d)))
        if (de->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            unlink(path);
        }
    if (d)
        closedir(d);
    rmdir(dir);
}

static ntp_status pass_launch(inst *I, const ntp_tool_spec *t, ntp_tool_seg *segs, int n)
{
    ntp_status st = make_dir(I);
    if (st)
        return st;
    ntp_tool_result res = {0};
    bool vg = t->kind == NTP_TOOL_CALLGRIND || t->kind == NTP_TOOL_CACHEGRIND;
    if (!vg) {
        st = ntp__tool_launch(I->ctx, t, I->r->backend, segs, n, I->w->n, I->iters, I->dir, &res);
        if (!st)
            st = fold(I, segs, &res, t->name);
        ntp__tool_result_free(&res);
        if (!st && t->kind == NTP_TOOL_PERF_STAT)
            st = sum_into_markers(I, "perf-stat:", "perf-stat");
        return st;
    }
    /* callgrind dumps per row (costs add up), once: the simulation is
     * deterministic, so more iterations would only repeat the figures. */
    bool *want = calloc((size_t)I->w->n + 1, sizeof *want);
    ntp_tool_seg *rows = calloc((size_t)I->w->n + 1, sizeof *rows);
    int nr = 0;
    if (!want || !rows) {
        free(want);
        free(rows);
        return oom(I->ctx);
    }
    for (int i = 0; i < n; i++)
        for (int k = segs[i].first; k <= segs[i].last; k++)
            want[k] = true;
    for (int k = 0; k < I->w->n; k++)
        if (want[k] && I->x->steps[I->w->step[k]].kind != NTP_STEP_FUSED) {
            rows[nr].first = rows[nr].last = k;
            rows[nr++].marker = -1;
        }
    st = ntp__tool_launch(I->ctx, t, I->r->backend, rows, nr, I->w->n, 1, I->dir, &res);
    if (!st)
        st = fold(I, rows, &res, t->name);
    if (!st && I->iters == 1)
        note(I, "%s: one counting iteration (the simulation is deterministic)", t->name);
    else if (!st)
        note(I,
             "%s: one counting iteration, not the %d of the other counters (the simulation "
             "is deterministic, so more would repeat the figures)",
             t->name, I->iters);
    ntp__tool_result_free(&res);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%s:", t->name);
    if (!st)
        st = sum_into_markers(I, prefix, t->name);
    free(want);
    free(rows);
    return st;
}

/* PAPI in this process: an event set read between rows, like perf_event. */
static ntp_status pass_papi(inst *I, const ntp_tool_spec *t, const ntp_tool_seg *segs, int n)
{
    ntp_papi *p = NULL;
    ntp_status st = ntp__papi_open(I->ctx, t->events, &p);
    if (st)
        return st;
    const ntp_rows *w = I->w;
    int ne = ntp__papi_count(p);
    long long *a = malloc(((size_t)ne + 1) * sizeof *a), *b = malloc(((size_t)ne + 1) * sizeof *b);
    double *acc = calloc((size_t)w->n * (size_t)ne + 1, sizeof *acc);
    if (!a || !b || !acc) {
        st = oom(I->ctx);
        goto done;
    }
    for (int it = 0; it < I->iters; it++) {
        ntp__papi_read(p, a);
        for (int k = 0; k < w->n; k++) {
            if ((st = run_row(I->ctx, I->x, w, k)))
                goto done;
            ntp__papi_read(p, b);
            for (int e = 0; e < ne; e++)
                acc[(size_t)k * (size_t)ne + (size_t)e] += (double)(b[e] - a[e]);
            long long *tt = a;
            a = b;
            b = tt;
        }
    }
    for (int s = 0; s < n; s++) {
        vals *dst = seg_target(I, &segs[s]);
        for (int e = 0; e < ne; e++) {
            bool avail;
            const char *reason;
            const char *name = ntp__papi_name(p, e, &avail, &reason);
            double total = 0;
            for (int k = segs[s].first; k <= segs[s].last; k++)
                total += acc[(size_t)k * (size_t)ne + (size_t)e];
            ntp_counter_value *c = push(dst);
            if (!c) {
                st = oom(I->ctx);
                goto done;
            }
            c->name = ntp__store_printf(I->s, "papi:%s", name);
            c->source = "papi";
            c->unit = strstr(name, "CLOCK") ? "ns" : "";
            c->available = avail;
            c->value = avail ? total / I->iters : 0;
            c->running = 1;
            c->reason = avail ? NULL : ntp__store_str(I->s, reason);
        }
    }
    note(I,
         "papi: events %s on the thread that runs the layers (PAPI counts the calling thread; "
         "--counters counts every thread)",
         t->events);
done:
    free(a);
    free(b);
    free(acc);
    ntp__papi_close(p);
    return st;
}

/* NVTX: ranges around every row and marker, for Nsight attached from the
 * outside (nsys profile --trace=nvtx ntprof run ... --tool nvtx). */
static ntp_status pass_nvtx(inst *I, const ntp_tool_seg *segs, int n)
{
    char why[256];
    if (!ntp__nvtx_available(why, sizeof why))
        return ntp__opt_error(I->ctx, NTP_STATUS_UNSUPPORTED, "ntp_run_opts.tool", "nvtx: %s", why);
    const ntp_rows *w = I->w;
    uint64_t *ids = calloc((size_t)n + 1, sizeof *ids);
    if (!ids)
        return oom(I->ctx);
    ntp_status st = NTP_STATUS_OK;
    for (int it = 0; it < I->iters && !st; it++) {
        for (int k = 0; k < w->n && !st; k++) {
            for (int s = 0; s < n; s++)
                if (segs[s].marker >= 0 && segs[s].first == k)
                    ids[s] = ntp__nvtx_start(I->r->markers[segs[s].marker].name);
            bool row = false;
            for (int s = 0; s < n; s++)
                row |= segs[s].marker < 0 && segs[s].first == k;
            if (row)
                ntp__nvtx_push(I->r->layers[k].name);
            st = run_row(I->ctx, I->x, w, k);
            if (row)
                ntp__nvtx_pop();
            for (int s = 0; s < n; s++)
                if (segs[s].marker >= 0 && segs[s].last == k)
                    ntp__nvtx_end(ids[s]);
        }
    }
    free(ids);
    if (!st)
        note(I,
             "nvtx: %s; a range around every counted layer and marker in %d iteration%s "
             "(run under `nsys profile --trace=nvtx` or `ncu --nvtx`)",
             why, I->iters, I->iters == 1 ? "" : "s");
    return st;
}

/* --- choosing segments ------------------------------------------------------------------ */

typedef struct job {
    ntp_tool_spec t;
    ntp_tool_seg *segs;
    int n, cap;
} job;

#define NTP_MAX_JOBS 8

static ntp_status job_add(ntp_ctx *ctx, job *jobs, int *n_jobs, const ntp_tool_spec *t,
                          const ntp_tool_seg *s)
{
    int j = 0;
    /* perf and valgrind runs take every segment at once (perf names each
     * segment's events apart); PAPI sets differ by event list. */
    while (j < *n_jobs && !(jobs[j].t.kind == t->kind &&
                            (t->kind != NTP_TOOL_PAPI || strcmp(jobs[j].t.events, t->events) == 0)))
        j++;
    if (j == NTP_MAX_JOBS)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "at most %d different tools in one run",
                          NTP_MAX_JOBS);
    if (j == *n_jobs) {
        memset(&jobs[j], 0, sizeof jobs[j]);
        jobs[j].t = *t;
        (*n_jobs)++;
    }
    job *J = &jobs[j];
    if (J->n == J->cap) {
        int cap = J->cap ? 2 * J->cap : 16;
        ntp_tool_seg *p = realloc(J->segs, (size_t)cap * sizeof *p);
        if (!p)
            return oom(ctx);
        J->segs = p;
        J->cap = cap;
    }
    J->segs[J->n++] = *s;
    return NTP_STATUS_OK;
}

/* --- the verdict ----------------------------------------------------------------------------- */

static const ntp_counter_value *metric(const vals *v, const char *name)
{
    for (int i = 0; i < v->n; i++)
        if (strcmp(v->v[i].name, name) == 0)
            return &v->v[i];
    return NULL;
}

static bool metric_val(const vals *v, const char *name, double *out)
{
    const ntp_counter_value *m = metric(v, name);
    if (!m || !m->available)
        return false;
    *out = m->value;
    return true;
}

/* "compute", "memory" or "latency", and the evidence, from the row's
 * intensity and time and whatever counters or simulation it has. */
static void judge(inst *I, const vals *v, double ms, int64_t flops, int64_t bytes, double gbps,
                  const char *part, const char **bound, const char **evidence)
{
    char ev[768];
    size_t u = 0;
    double balance = I->balance;
    const char *bsrc = I->balance_src;
    double in = bytes > 0 ? (double)flops / (double)bytes : 0;
    const char *b = NULL;
#define ADD(...) (u += (size_t)snprintf(ev + u, u < sizeof ev ? sizeof ev - u : 0, __VA_ARGS__))
    if (flops == 0 && bytes == 0) {
        b = "latency";
        ADD("no FLOPs and no traffic: control work, its time is per-call overhead");
    } else if (ms < NTP_LATENCY_MS) {
        b = "latency";
        ADD("median %.2g \xC2\xB5s < %.0f \xC2\xB5s: per-call overhead dominates", ms * 1000,
            NTP_LATENCY_MS * 1000);
    }
    /* A recurrent layer is judged by the part that dominates its time
     * under the roofs (docs/analysis.md). */
    if (part)
        ADD("%s part dominates: ", part);
    if (!b)
        ADD("intensity %.3g FLOP/B %s %.3g FLOP/B (%s)", in, in < balance ? "<" : ">=", balance,
            bsrc);
    else
        ADD("; intensity %.3g FLOP/B", in);
    double fe = 0, bs = 0, be = 0, ret = 0, bem = 0, bec = 0, ipc = 0, mpki = 0, sim = 0;
    const char *td = NULL, *cnt = NULL, *sm = NULL;
    if (metric_val(v, "frontend_bound", &fe) && metric_val(v, "bad_speculation", &bs) &&
        metric_val(v, "backend_bound", &be) && metric_val(v, "retiring", &ret)) {
        bool split = metric_val(v, "backend_memory", &bem) && metric_val(v, "backend_core", &bec);
        ADD("; top-down FE %.0f%% BadSpec %.0f%% BE %.0f%% Ret %.0f%%", 100 * fe, 100 * bs,
            100 * be, 100 * ret);
        if (split)
            ADD(" (BE memory %.0f%%, core %.0f%%)", 100 * bem, 100 * bec);
        if (fe + bs >= 0.4)
            td = "latency";
        else if (split ? bem >= bec && bem >= 0.2 : be >= 0.4 && in < balance)
            td = "memory";
        else if (ret >= 0.5 || (split ? bec > bem : be >= 0.4))
            td = "compute";
    } else if (metric(v, "frontend_bound")) {
        ADD("; top-down n/a%s", ntp__have_cpu_pmu() ? "" : " (no PMU)");
    }
    bool have_ipc = metric_val(v, "ipc", &ipc) || metric_val(v, "perf-stat:ipc", &ipc);
    bool have_mpki = metric_val(v, "llc_mpki", &mpki) || metric_val(v, "cache_mpki", &mpki) ||
                     metric_val(v, "perf-stat:cache_mpki", &mpki);
    if (have_ipc)
        ADD("; IPC %.2f", ipc);
    else if (metric(v, "ipc") || metric(v, "perf-stat:ipc"))
        ADD("; IPC n/a%s", ntp__have_cpu_pmu() ? "" : " (no PMU)");
    if (have_mpki)
        ADD("; LLC %.2g MPKI", mpki);
    if (have_mpki && mpki >= 5)
        cnt = "memory";
    else if (have_ipc && ipc >= 1.5)
        cnt = "compute";
    else if (have_ipc && ipc < 0.7)
        cnt = in < balance ? "memory" : "latency";
    if (metric_val(v, "cachegrind:ll_mpki", &sim) || metric_val(v, "callgrind:ll_mpki", &sim)) {
        double d1 = 0;
        bool h1 =
            metric_val(v, "cachegrind:d1_mpki", &d1) || metric_val(v, "callgrind:d1_mpki", &d1);
        ADD("; simulated LL %.2g MPKI", sim);
        if (h1)
            ADD(", D1 %.2g MPKI", d1);
        if (sim >= 5)
            sm = "memory";
        else if (h1 && d1 < 5 && in >= balance)
            sm = "compute";
    }
    if (!b)
        b = td ? td : cnt ? cnt : sm ? sm : in < balance ? "memory" : "compute";
    if (I->r->roofline.unreliable)
        ADD("; ceilings unreliable (%s)", I->r->roofline.stale_reason);
    ADD("; %.3g GB/s; decided by %s", gbps,
        b && !strcmp(b, "latency") && !td && !cnt ? "time"
        : td                                      ? "top-down"
        : cnt                                     ? "counters"
        : sm                                      ? "simulation"
                                                  : "intensity");
#undef ADD
    *bound = b;
    *evidence = ntp__store_str(I->s, ev);
}

/* --- the pass ------------------------------------------------------------------------------ */

static ntp_status child_pass(ntp_ctx *ctx, ntp_exec *x, const ntp_rows *w)
{
    ntp_tool_child c;
    ntp_status st = ntp__tool_child_open(ctx, &c);
    if (st)
        return st;
    if (c.n_rows != w->n) {
        st = ntp__error(ctx, NTP_STATUS_INTERNAL,
                        "NTP_TOOL: this run has %d report rows, the parent had %d: the command "
                        "line must rebuild the same run",
                        w->n, c.n_rows);
        goto done;
    }
    bool vg = c.kind == NTP_TOOL_CALLGRIND || c.kind == NTP_TOOL_CACHEGRIND;
    if (vg && !ntp__valgrind_running()) {
        st = ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                        "NTP_TOOL=%s but this process does not run under valgrind",
                        ntp__tool_name(c.kind));
        goto done;
    }
    for (int it = 0; it < c.iterations && !st; it++)
        for (int k = 0; k < w->n && !st; k++) {
            bool in = false;
            for (int s = 0; s < c.n_segs && !st; s++) {
                in |= c.segs[s].first <= k && k <= c.segs[s].last;
                if (!vg && c.segs[s].first == k)
                    st = ntp__tool_child_perf(ctx, &c, s, true);
            }
            if (st)
                break;
            if (vg && in)
                ntp__callgrind_toggle();
            st = run_row(ctx, x, w, k);
            if (vg && in) {
                char label[64];
                ntp__callgrind_toggle();
                snprintf(label, sizeof label, "ntprof row %d", k);
                ntp__callgrind_dump(label);
            }
            for (int s = c.n_segs - 1; s >= 0 && !st && !vg; s--)
                if (c.segs[s].last == k)
                    st = ntp__tool_child_perf(ctx, &c, s, false);
        }
done:
    ntp__tool_child_close(&c);
    return st;
}

static ntp_status finish(inst *I)
{
    ntp_run_result *r = I->r;
    ntp_counter_value *tmp = malloc(NTP_MAX_VALUES * sizeof *tmp);
    if (!tmp)
        return oom(I->ctx);
    for (int k = 0; k < r->n_layers + r->n_markers; k++) {
        bool row = k < r->n_layers;
        vals *v = row ? &I->rows[k] : &I->marks[k - r->n_layers];
        /* Derived metrics of the tools' counts (perf_event's are already
         * there, computed within their groups). */
        int n = v->n < NTP_MAX_VALUES ? v->n : NTP_MAX_VALUES;
        if (n > 0)
            memcpy(tmp, v->v, (size_t)n * sizeof *tmp);
        int n2 = ntp__counters_derive(I->s, tmp, n, NTP_MAX_VALUES);
        for (int i = n; i < n2; i++) {
            ntp_counter_value *c = push(v);
            if (!c) {
                free(tmp);
                return oom(I->ctx);
            }
            *c = tmp[i];
        }
        if (v->n > 0 && !ntp__store_keep(I->s, v->v)) {
            v->v = NULL;
            free(tmp);
            return oom(I->ctx);
        }
        if (row) {
            ntp_layer_result *L = &r->layers[k];
            L->n_counters = v->n;
            L->counters = v->n ? v->v : NULL;
            /* Balance and 1 GB/s order the parts' times as the measured
             * peak and bandwidth do. */
            int d = ntp_roofline_dominant_part(L->parts, L->n_parts, I->balance, 1.0);
            if (!L->fused)
                judge(I, v, L->time_ms.median, d >= 0 ? L->parts[d].flops : L->flops,
                      d >= 0 ? L->parts[d].bytes : L->bytes, L->gbps,
                      d >= 0 ? L->parts[d].name : NULL, &L->bound, &L->bound_evidence);
        } else {
            ntp_marker_result *M = &r->markers[k - r->n_layers];
            M->n_counters = v->n;
            M->counters = v->n ? v->v : NULL;
            double s = M->time_ms.median / 1000.0;
            judge(I, v, M->time_ms.median, M->flops, ntp__roofline_marker_bytes(r, M),
                  s > 0 ? (double)M->bytes / s / 1e9 : 0, NULL, &M->bound, &M->bound_evidence);
        }
        v->v = NULL;
        v->n = 0;
    }
    free(tmp);
    return NTP_STATUS_OK;
}

ntp_status ntp__instrument(ntp_ctx *ctx, ntp_exec *x, const ntp_rows *w, const ntp_run_opts *o,
                           ntp_run_result *r)
{
    if (ntp__tool_child_env())
        return child_pass(ctx, x, w);
    const ntp_graph *g = x->g;
    bool marker_tools = false;
    for (int m = 0; m < r->n_markers; m++)
        for (int j = 0; j < g->n_markers; j++)
            marker_tools |= g->markers[j].tool && !strcmp(g->markers[j].name, r->markers[m].name);
    if (!o->counters && !o->tool && !marker_tools)
        return NTP_STATUS_OK;
    if (o->counter_iterations < 0)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "counter iterations must not be negative");
    inst I = {.ctx = ctx, .x = x, .w = w, .o = o, .r = r};
    /* Declared before the first jump to `done`, which reads it. */
    bool keep = false;
    I.iters = o->counter_iterations > 0 ? o->counter_iterations : o->iterations;
    /* The ridge point of this machine's roofline when its ceilings were
     * measured (`ntprof machine`), else the documented heuristic. */
    const ntp_peak *pk = o->ceilings ? ntp_ceilings_peak(o->ceilings, r->precision) : NULL;
    double bw = o->ceilings ? ntp_ceilings_bandwidth(o->ceilings, "DRAM") : 0;
    if (pk && pk->gflops > 0 && bw > 0) {
        I.balance = pk->gflops / bw;
        snprintf(I.balance_src, sizeof I.balance_src, "measured ridge: %.4g GFLOP/s / %.4g GB/s",
                 pk->gflops, bw);
    } else {
        I.balance = NTP_BALANCE_HEURISTIC;
        snprintf(I.balance_src, sizeof I.balance_src,
                 "heuristic balance, no measured machine ceilings");
    }
    if (!(I.s = ntp__run_store(r)))
        return oom(ctx);
    r->owned->counted = true;
    I.rows = calloc((size_t)r->n_layers + 1, sizeof *I.rows);
    I.marks = calloc((size_t)r->n_markers + 1, sizeof *I.marks);
    job jobs[NTP_MAX_JOBS];
    int n_jobs = 0;
    ntp_status st = NTP_STATUS_OK;
    if (!I.rows || !I.marks) {
        st = oom(ctx);
        goto done;
    }
    r->counters = ntp__store_str(I.s, o->counters);
    r->tool = ntp__store_str(I.s, o->tool);
    r->counter_iterations = I.iters;
    /* Segments: every row for --tool; a marker's range for its tool=. */
    if (o->tool) {
        ntp_tool_spec t;
        if ((st = ntp__tool_parse(ctx, o->tool, &(ntp__where){.option = "ntp_run_opts.tool"}, &t)))
            goto done;
        for (int k = 0; k < w->n && !st; k++) {
            ntp_tool_seg s = {.first = k, .last = k, .marker = -1};
            snprintf(s.events, sizeof s.events, "%s", t.events);
            if (x->steps[w->step[k]].kind != NTP_STEP_FUSED)
                st = job_add(ctx, jobs, &n_jobs, &t, &s);
        }
        /* NVTX ranges mark every marker too; the counting tools sum a
         * marker's rows instead. */
        for (int m = 0; m < r->n_markers && !st && t.kind == NTP_TOOL_NVTX; m++) {
            ntp_tool_seg s = {
                .first = r->markers[m].first, .last = r->markers[m].last, .marker = m};
            st = job_add(ctx, jobs, &n_jobs, &t, &s);
        }
    }
    for (int m = 0; m < r->n_markers && !st; m++)
        for (int j = 0; j < g->n_markers && !st; j++) {
            if (!g->markers[j].tool || strcmp(g->markers[j].name, r->markers[m].name) != 0)
                continue;
            const ntp__where at = {.file = g->source,
                                   .element = "marker",
                                   .layer = g->markers[j].name,
                                   .option = "tool"};
            ntp_tool_spec t;
            if ((st = ntp__tool_parse(ctx, g->markers[j].tool, &at, &t)))
                break;
            ntp_tool_seg s = {
                .first = r->markers[m].first, .last = r->markers[m].last, .marker = m};
            snprintf(s.events, sizeof s.events, "%s", t.events);
            st = job_add(ctx, jobs, &n_jobs, &t, &s);
        }
    if (st)
        goto done;
    /* callgrind and cachegrind count one iteration (pass_launch): when they
     * are all there is, the report's iteration count says so. */
    bool only_sim = !o->counters && n_jobs > 0;
    for (int j = 0; j < n_jobs; j++)
        only_sim &= jobs[j].t.kind == NTP_TOOL_CALLGRIND || jobs[j].t.kind == NTP_TOOL_CACHEGRIND;
    if (only_sim)
        I.iters = r->counter_iterations = 1;
    if (o->progress)
        o->progress(o->progress_user, "count", 0, 0);
    if (o->counters && (st = pass_perf_event(&I, o->counters)))
        goto done;
    for (int j = 0; j < n_jobs && !st; j++) {
        switch (jobs[j].t.kind) {
        case NTP_TOOL_PAPI:
            st = pass_papi(&I, &jobs[j].t, jobs[j].segs, jobs[j].n);
            if (!st)
                st = sum_into_markers(&I, "papi:", "papi");
            break;
        case NTP_TOOL_NVTX: st = pass_nvtx(&I, jobs[j].segs, jobs[j].n); break;
        /* The tools that launch a process around the run. */
        case NTP_TOOL_NONE:
        case NTP_TOOL_PERF_STAT:
        case NTP_TOOL_PERF_RECORD:
        case NTP_TOOL_CALLGRIND:
        case NTP_TOOL_CACHEGRIND: st = pass_launch(&I, &jobs[j].t, jobs[j].segs, jobs[j].n); break;
        }
    }
    if (st)
        goto done;
    for (int j = 0; j < n_jobs; j++)
        keep |= jobs[j].t.kind != NTP_TOOL_PERF_STAT && jobs[j].t.kind != NTP_TOOL_PAPI &&
                jobs[j].t.kind != NTP_TOOL_NVTX;
    if (I.dir[0] && (keep || !I.dir_made))
        note(&I, "tool files: %s", I.dir);
    st = finish(&I);
done:
    /* On failure the directory stays: the error names its logs. */
    if (I.dir_made && I.dir[0] && !st && !keep)
        remove_dir(I.dir);
    for (int j = 0; j < n_jobs; j++)
        free(jobs[j].segs);
    if (I.rows)
        for (int k = 0; k < r->n_layers; k++)
            free(I.rows[k].v);
    if (I.marks)
        for (int m = 0; m < r->n_markers; m++)
            free(I.marks[m].v);
    free(I.rows);
    free(I.marks);
    return st;
}

void ntp__instrument_free(ntp_run_result *r)
{
    free(r->counter_notes);
    r->counter_notes = NULL;
    r->n_counter_notes = 0;
}

bool ntp_run_tool_child(ntp_run_opts *o)
{
    if (!ntp__tool_child_env())
        return false;
    /* The child's job is the counting pass; one timing iteration warms the
     * caches and the timings themselves are the parent's. */
    o->warmup = 0;
    o->iterations = 1;
    o->min_time_s = 0;
    o->accuracy = false;
    o->keep_trace = false;
    o->save_outputs_dir = NULL;
    o->counters = NULL;
    o->tool = NULL;
    /* The parent's command line may list several backends; the child runs
     * the one whose rows it counts. */
    const char *be = getenv("NTP_TOOL_BACKEND");
    if (be && *be)
        o->backend = be;
    return true;
}
