/* ntp_run: build, run and measure.
 *
 * The measurement protocol (docs/run.md#measurement):
 *   1. prepare every layer (timed per layer, reported apart from running);
 *   2. warm-up iterations, discarded;
 *   3. the end-to-end pass: whole iterations timed with nothing inside them,
 *      until both --iterations and --min-time are met;
 *   4. the per-layer pass: the same number of iterations with a clock read
 *      around every layer;
 *   5. the instrument's overhead is what the per-layer pass adds: (median
 *      of summed layer times - median end-to-end) / median end-to-end.
 * Every figure is summarised by ntp_stats (median with its 95% CI). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "core/ctx-impl.h"
#include "exec-impl.h"
#include "measure/counters-impl.h"
#include "measure/measure-impl.h"
#include "ntprof/frameworks.h"
#include "ntprof/machine.h"

/* Below this many microseconds of measured time per figure, the clock's own
 * resolution and jitter dominate. */
#define NTP_SHORT_RUN_S 0.05
#define NTP_DEFAULT_NOISE_CV 0.05

void ntp_run_opts_default(ntp_run_opts *o)
{
    memset(o, 0, sizeof *o);
    o->warmup = 3;
    o->iterations = 10;
    o->min_time_s = 1.0;
    o->seed = 1;
    o->noise_cv = NTP_DEFAULT_NOISE_CV;
    o->accuracy = true;
}

static void progress(const ntp_run_opts *o, const char *phase, int done, int total)
{
    if (o->progress)
        o->progress(o->progress_user, phase, done, total);
}

static ntp_status pin_cpus(ntp_ctx *ctx, const char *list)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    const char *p = list;
    while (*p) {
        char *end;
        long a = strtol(p, &end, 10), b;
        if (end == p || a < 0 || a >= CPU_SETSIZE)
            goto bad;
        b = a;
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            if (end == p + 1 || b < a || b >= CPU_SETSIZE)
                goto bad;
            p = end;
        }
        for (long c = a; c <= b; c++)
            CPU_SET((int)c, &set);
        if (*p == ',')
            p++;
        else if (*p)
            goto bad;
    }
    if (CPU_COUNT(&set) == 0)
        goto bad;
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_run_opts.pin",
                              "%s: cannot pin to those CPUs (are they online?)", list);
    /* Threads started before now (OpenBLAS starts its pool when the library
     * loads, an OpenMP runtime at its first parallel region) keep their
     * own affinity: pin every thread of the process, not just this one. */
    DIR *d = opendir("/proc/self/task");
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (de->d_name[0] >= '0' && de->d_name[0] <= '9' &&
            sched_setaffinity((pid_t)atoi(de->d_name), sizeof set, &set) != 0 && errno != ESRCH) {
            closedir(d);
            return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_run_opts.pin",
                                  "%s: cannot pin thread %s to those CPUs", list, de->d_name);
        }
    if (d)
        closedir(d);
    return NTP_STATUS_OK;
bad:
    return ntp__error_at(
        ctx, NTP_STATUS_INVALID_ARGUMENT,
        &(ntp__where){.option = "ntp_run_opts.pin", .expected = "a CPU list such as 0-1,3"},
        "expects a CPU list such as 0-1,3; got '%s'", list);
}

static void add_warning(ntp_run_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add_warning(ntp_run_result *r, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **w = realloc(r->warnings, (size_t)(r->n_warnings + 1) * sizeof *w);
    if (!w)
        return;
    r->warnings = w;
    if ((w[r->n_warnings] = ntp__strdup(buf)))
        r->n_warnings++;
}

void ntp_run_result_free(ntp_run_result *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n_warnings; i++)
        free(r->warnings[i]);
    for (int i = 0; i < r->n_trace; i++) {
        free(r->trace[i].start_us);
        free(r->trace[i].end_us);
    }
    free(r->accuracy);
    free(r->warnings);
    free(r->trace);
    free(r->layers);
    free(r->markers);
    free(r->param_names);
    free(r->param_values);
    free(r->torch_script);
    ntp__instrument_free(r);
    ntp__run_owned_free(r);
    free(r);
}

/* A UUID in its canonical form: 8-4-4-4-12 lowercase hex digits. */
static bool valid_uuid(const char *u)
{
    if (strlen(u) != 36)
        return false;
    for (int i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? u[i] != '-' : !((u[i] >= '0' && u[i] <= '9') || (u[i] >= 'a' && u[i] <= 'f')))
            return false;
    }
    return true;
}

static ntp_status find_range(ntp_ctx *ctx, const ntp_graph *g, const char *marker, int *first,
                             int *last)
{
    *first = 0;
    *last = g->n_nodes - 1;
    if (!marker)
        return NTP_STATUS_OK;
    const char *names[64];
    int n = 0;
    for (int i = 0; i < g->n_markers; i++) {
        if (strcmp(g->markers[i].name, marker) == 0) {
            *first = g->markers[i].first;
            *last = g->markers[i].last;
            return NTP_STATUS_OK;
        }
        if (n < 64)
            names[n++] = g->markers[i].name;
    }
    const char *near = ntp__nearest(marker, names, n);
    return ntp__opt_error(ctx, NTP_STATUS_UNKNOWN_NAME, "ntp_run_opts.only_marker",
                          "%s: %s has no marker '%s'%s%s%s", marker, g->source, marker,
                          near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
}

static const char *own(ntp_run_result *r, const char *s)
{
    ntp_counter_store *st = ntp__run_store(r);
    return st ? ntp__store_str(st, s) : NULL;
}

void ntp__rows_free(ntp_rows *w)
{
    free(w->step);
    free(w->sub);
    free(w->first_row);
    free(w->last_row);
}

bool ntp__rows_build(const ntp_exec *x, ntp_rows *w)
{
    int cap = 0;
    for (int s = x->first_step; s <= x->last_step; s++)
        cap += x->steps[s].n_sub;
    int nn = x->g->n_nodes;
    w->n = 0;
    w->step = malloc(((size_t)cap + 1) * sizeof *w->step);
    w->sub = malloc(((size_t)cap + 1) * sizeof *w->sub);
    w->first_row = malloc(((size_t)nn + 1) * sizeof *w->first_row);
    w->last_row = malloc(((size_t)nn + 1) * sizeof *w->last_row);
    if (!w->step || !w->sub || !w->first_row || !w->last_row)
        return false;
    for (int p = 0; p < nn; p++)
        w->first_row[p] = w->last_row[p] = -1;
    for (int s = x->first_step; s <= x->last_step; s++) {
        int p = x->steps[s].pos;
        for (int k = 0; k < x->steps[s].n_sub; k++) {
            if (w->first_row[p] < 0)
                w->first_row[p] = w->n;
            w->last_row[p] = w->n;
            w->step[w->n] = s;
            w->sub[w->n++] = k;
        }
    }
    return true;
}

/* The threads the run's layers may work on (docs/run.md#handoff): 1 when
 * every backend it holds runs on the calling thread (the reference
 * backend; a device backend's host side), else the run's --threads. */
static int cpu_threads(const ntp_exec *x, int threads)
{
    for (int i = 0; i < x->n_be; i++)
        if (x->be[i] != &ntp__backend_ref && x->be[i]->kind != NTP_BACKEND_DEVICE)
            return threads;
    return 1;
}

/* Interleaved measurement: an end-to-end iteration (nothing timed inside
 * it), then a per-layer iteration (a clock read around every row), and so
 * on, so both passes see the same machine. e2e[i] and lt[i * rows + row]
 * in ms. */
static ntp_status measure(ntp_ctx *ctx, ntp_exec *x, const ntp_rows *w, const ntp_run_opts *o,
                          ntp__rss_meter *mem, ntp_run_result *r, double **e2e_out, double **lt_out,
                          unsigned char **apart_out, int *iters_out)
{
    int nl = w->n;
    ntp_status st;
    /* The memory bus before the warm-up, never between timed iterations:
     * the probe would empty the caches the next one finds
     * (docs/run.md#contention). */
    ntp_bandwidth_check bw;
    ntp__bandwidth_plan(o->ceilings, o->bandwidth_probe, o->min_time_s, &bw);
    /* And whether the run's CPUs share a cache now (docs/run.md#handoff). */
    ntp_handoff_check ho;
    ntp__handoff_plan(o->bandwidth_probe, cpu_threads(x, o->threads), &ho);
    ntp__handoff_window hw = {0};
    /* And how fast each CPU runs a short kernel now (docs/run.md#pace). */
    ntp_pace_check pc;
    ntp__pace_plan(o->bandwidth_probe, cpu_threads(x, o->threads), &pc);
    ntp__pace_window pw = {0};
    /* The probes' arrays are not the run's memory: left out of its peak
     * (0, n/a, when /proc cannot set the mark back after them). */
    bool probes = bw.measured || ho.measured;
    if (probes)
        ntp__rss_meter_exclude_begin(mem);
    ntp__bandwidth_before(&bw);
    ntp__handoff_before(&ho);
    if (probes)
        ntp__rss_meter_exclude_end(mem);
    progress(o, "warm-up", 0, o->warmup);
    for (int i = 0; i < o->warmup; i++) {
        if ((st = ntp__exec_steps(ctx, x, x->first_step, x->last_step)))
            return st;
        progress(o, "warm-up", i + 1, o->warmup);
    }
    int cap = o->iterations > 16 ? o->iterations : 16, n = 0;
    unsigned char *flush = NULL;
    double *e2e = malloc((size_t)cap * sizeof *e2e);
    double *lt = malloc((size_t)cap * (size_t)nl * sizeof *lt + 1);
    ntp_trace_iter *tr = o->keep_trace ? calloc((size_t)cap, sizeof *tr) : NULL;
    if (!e2e || !lt || (o->keep_trace && !tr)) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto fail;
    }
    /* ntp_run_opts.flush_bytes: written before each measured pass. */
    flush = o->flush_bytes > 0 ? malloc((size_t)o->flush_bytes) : NULL;
    if (o->flush_bytes > 0 && !flush) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto fail;
    }
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    /* What other processes take from the run's CPUs over exactly the
     * measured window (docs/run.md#contention). */
    ntp__contention_probe probe;
    ntp__contention_begin(&probe);
    ntp__handoff_window_begin(&ho, &hw);
    ntp__pace_window_begin(&pc, &pw);
    double start = ntp__now_us();
    /* --min-time is what each pass's samples add up to: the end-to-end
     * times alone span it, and so do the per-layer iterations, rather than
     * the two sharing it. A cap on iterations keeps a microsecond-sized
     * topology from running a million times to fill it. */
    double e2e_s = 0, layers_s = 0;
    const int max_iters = 100000;
    progress(o, "measure", 0, o->iterations);
    while ((n < o->iterations || e2e_s < o->min_time_s || layers_s < o->min_time_s) &&
           n < max_iters) {
        if (n == cap) {
            cap *= 2;
            double *p = realloc(e2e, (size_t)cap * sizeof *p);
            if (p)
                e2e = p;
            double *q = p ? realloc(lt, (size_t)cap * (size_t)nl * sizeof *q + 1) : NULL;
            if (q)
                lt = q;
            ntp_trace_iter *t2 = q && tr ? realloc(tr, (size_t)cap * sizeof *t2) : NULL;
            if (t2)
                tr = t2;
            if (!p || !q || (tr && !t2)) {
                st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
                goto fail;
            }
        }
        ntp__flush_caches(flush, o->flush_bytes, n);
        double t0 = ntp__now_us();
        st = ntp__exec_steps(ctx, x, x->first_step, x->last_step);
        double t1 = ntp__now_us();
        if (st)
            goto fail;
        e2e[n] = (t1 - t0) / 1000.0;
        e2e_s += (t1 - t0) / 1e6;
        double *ts = NULL, *te = NULL;
        if (tr) {
            tr[n].start_us = ts = malloc((size_t)nl * sizeof *ts + 1);
            tr[n].end_us = te = malloc((size_t)nl * sizeof *te + 1);
            if (!ts || !te) {
                n++;
                st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
                goto fail;
            }
        }
        double *row = &lt[(size_t)n * (size_t)nl];
        ntp__flush_caches(flush, o->flush_bytes, n);
        t0 = ntp__now_us();
        const double layers_t0 = t0;
        for (int k = 0; k < nl; k++) {
            if (x->steps[w->step[k]].kind != NTP_STEP_FUSED &&
                (st = ntp__exec_sub(ctx, x, w->step[k], w->sub[k]))) {
                n++;
                goto fail;
            }
            double t2 = ntp__now_us();
            row[k] = (t2 - t0) / 1000.0;
            /* An asynchronous device times its own work (CUDA events):
             * the host clock would add the launch and the wait. */
            const ntp_step *sk = &x->steps[w->step[k]];
            if (sk->kind == NTP_STEP_NODE) {
                double dev = ntp__be_elapsed_ms(x->be[sk->be], x->be_state[sk->be], sk->state);
                if (dev >= 0)
                    row[k] = dev;
            }
            if (ts) {
                ts[k] = t0 - start;
                te[k] = t2 - start;
            }
            t0 = t2;
        }
        layers_s += (t0 - layers_t0) / 1e6;
        n++;
        /* The iterations expected: --iterations, or as many more as
         * --min-time needs at the pace so far. */
        double spent = e2e_s < layers_s ? e2e_s : layers_s, need = o->iterations;
        if (o->min_time_s > 0 && spent > 0 && n * o->min_time_s / spent > need)
            need = ceil(n * o->min_time_s / spent);
        progress(o, "measure", n, need > max_iters ? max_iters : need < n ? n : (int)need);
        /* Whether the CPUs still share a cache, between iterations, every
         * 0.2 s (docs/run.md#handoff). */
        ntp__handoff_window_tick(&ho, &hw, n);
        /* And the CPUs' pace (docs/run.md#pace). */
        ntp__pace_window_tick(&pc, &pw, n);
    }
    /* The cap, not --min-time, ended the window: a microsecond topology's
     * samples add up to less than was asked, which the report says. */
    if (n >= max_iters && (e2e_s < o->min_time_s || layers_s < o->min_time_s))
        ntp__warn(ctx,
                  "stopped at the cap of %d iterations: the end-to-end samples add up to %.3g s "
                  "and the per-layer ones to %.3g s, short of the %.3g s of --min-time",
                  max_iters, e2e_s, layers_s, o->min_time_s);
    /* Each iteration's placement, for the rows' medians under each. */
    unsigned char *apart = calloc((size_t)n + 1, 1);
    ntp__handoff_window_end(&ho, &hw, e2e, n, apart);
    ntp__pace_window_end(&pc, &pw, e2e, n);
    free(flush);
    flush = NULL;
    ntp__contention_end(&probe, &r->env.contention);
    getrusage(RUSAGE_SELF, &ru1);
    r->memory.minor_faults = ru1.ru_minflt - ru0.ru_minflt;
    r->memory.major_faults = ru1.ru_majflt - ru0.ru_majflt;
    /* After the window's own counts: the probe's arrays fault in pages. */
    if (probes)
        ntp__rss_meter_exclude_begin(mem);
    ntp__bandwidth_after(&bw);
    ntp__handoff_after(&ho);
    ntp__bandwidth_placement(&bw, ho.before.ratio, ho.after.ratio);
    if (probes)
        ntp__rss_meter_exclude_end(mem);
    r->env.contention.bandwidth = bw;
    r->env.contention.handoff = ho;
    r->env.contention.pace = pc;
    r->trace = tr;
    r->n_trace = tr ? n : 0;
    *e2e_out = e2e;
    *lt_out = lt;
    *apart_out = apart;
    *iters_out = n;
    return NTP_STATUS_OK;
fail:
    ntp__handoff_window_end(&ho, &hw, NULL, 0, NULL);
    ntp__pace_window_end(&pc, &pw, NULL, 0);
    free(flush);
    if (tr)
        for (int i = 0; i < n; i++) {
            free(tr[i].start_us);
            free(tr[i].end_us);
        }
    free(tr);
    free(e2e);
    free(lt);
    return st;
}

static void fill_rows(const ntp_graph *g, const ntp_exec *x, const ntp_analysis *a,
                      const ntp_rows *w, ntp_run_result *r)
{
    for (int k = 0; k < w->n; k++) {
        const ntp_step *st = &x->steps[w->step[k]];
        ntp_layer_result *L = &r->layers[k];
        const ntp_layer_cost *c = &a->layers[st->pos];
        L->backend = x->be[st->be]->name;
        /* The plan (and a backend's node state, where implementation names
         * may live) is freed before the result: keep a copy. */
        L->impl = own(r, ntp__exec_impl(x, w->step[k]));
        if (!L->impl)
            L->impl = x->be[st->be]->name;
        /* A static string. On the layer's own row: a reorder row's source
         * is another. */
        L->src_layout = w->sub[k] == st->main_sub ? ntp__exec_src_layout(x, w->step[k]) : NULL;
        /* On the layer's own row, not on its reorder rows. */
        const char *note = w->sub[k] == st->main_sub ? ntp__exec_fuse_note(x, w->step[k]) : NULL;
        L->fuse_note = note ? own(r, note) : NULL;
        L->kind = "layer";
        if (st->kind == NTP_STEP_CONVERT) {
            const ntp_slot *s = &x->slots[st->src], *d = &x->slots[st->dst];
            /* The plan is freed before the result: keep a copy. */
            L->name = own(r, st->name);
            if (!L->name)
                L->name = "convert";
            L->type = "convert";
            L->kind = "convert";
            L->impl = "engine";
            L->output_shape = g->tensors[s->tensor].shape;
            L->bytes = s->bytes + d->bytes;
            continue;
        }
        L->name = c->name;
        L->type = c->type;
        L->inlay = c->inlay;
        L->output_shape = c->output_shape;
        if (st->kind == NTP_STEP_FUSED) {
            L->kind = "fused";
            L->fused = true;
            /* The caller's name: the plan may run a rewritten copy of the
             * graph (folded batch norms), freed before the result. */
            L->fused_into = g->nodes[g->order[x->steps[st->head].pos]].name;
            continue;
        }
        if (w->sub[k] != st->main_sub) {
            const char *suffix = "", *type = "step";
            int64_t bytes = 0;
            ntp__be_step_info(x->be[st->be], x->be_state[st->be], st->state, w->sub[k], &suffix,
                              &type, &bytes);
            char name[512];
            snprintf(name, sizeof name, "%s%s", c->name, suffix ? suffix : "");
            L->name = own(r, name);
            if (!L->name)
                L->name = c->name;
            L->type = type ? type : "step";
            L->kind = strcmp(L->type, "reorder") == 0 ? "reorder" : "layer";
            L->bytes = bytes;
            continue;
        }
        /* A group's head carries the work of the layers folded into it,
         * as the topology is written (a batch norm folded into the
         * weights included). */
        L->flops = c->flops;
        /* a unit (exec-impl.h) reads its one outside tensor */
        L->bytes = (st->k.unit ? x->slots[st->in_slot[0]].bytes : c->input_bytes) + c->weight_bytes;
        int last = st->last;
        for (int p = st->first; p <= last; p++) {
            if (p == st->pos || x->head_of[p] != st->pos)
                continue; /* a layer between two of the group's */
            L->flops += a->layers[p].flops;
            L->bytes += a->layers[p].weight_bytes;
        }
        for (int f = 0; f < st->k.n_fused; f++)
            if (st->post_slot[f] >= 0)
                L->bytes += x->slots[st->post_slot[f]].bytes;
        L->bytes += a->layers[last].output_bytes;
        L->intensity = L->bytes > 0 ? (double)L->flops / (double)L->bytes : 0;
        /* A recurrent layer's parts (docs/analysis.md), when the row is
         * that layer alone: a fused group's extra work belongs to neither. */
        if (L->flops == c->flops && st->k.n_fused == 0) {
            L->n_parts = c->n_parts;
            memcpy(L->parts, c->parts, sizeof L->parts);
        }
        L->prepare_ms = st->prepare_ms;
        L->workspace_bytes = (int64_t)st->ws;
    }
}

static void summarise(const ntp_graph *g, const ntp_exec *x, const ntp_rows *w, const double *e2e,
                      const double *lt, int n, ntp_run_result *r)
{
    int nl = w->n;
    double *col = malloc((size_t)n * sizeof *col + 1);
    double *sum = calloc((size_t)n + 1, sizeof *sum);
    if (!col || !sum) {
        free(col);
        free(sum);
        return;
    }
    ntp_stats_compute(e2e, (size_t)n, &r->end_to_end_ms);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < nl; k++)
            sum[i] += lt[(size_t)i * (size_t)nl + (size_t)k];
    ntp_stats_compute(sum, (size_t)n, &r->layer_sum_ms);
    double total = 0;
    for (int k = 0; k < nl; k++) {
        ntp_layer_result *L = &r->layers[k];
        for (int i = 0; i < n; i++)
            col[i] = lt[(size_t)i * (size_t)nl + (size_t)k];
        ntp_stats_compute(col, (size_t)n, &L->time_ms);
        double s = L->time_ms.median / 1000.0;
        L->gflops = s > 0 ? (double)L->flops / s / 1e9 : 0;
        L->gbps = s > 0 ? (double)L->bytes / s / 1e9 : 0;
        total += L->time_ms.median;
        r->flops += L->flops;
    }
    for (int k = 0; k < nl; k++)
        r->layers[k].share = total > 0 ? r->layers[k].time_ms.median / total : 0;
    /* Marker segments that overlap the measured range, clipped to it. */
    int m = 0;
    for (int j = 0; j < g->n_markers; j++) {
        int a = -1, b = -1;
        for (int p = g->markers[j].first; p <= g->markers[j].last; p++) {
            if (w->first_row[p] >= 0 && a < 0)
                a = w->first_row[p];
            if (w->last_row[p] >= 0)
                b = w->last_row[p];
        }
        if (a < 0)
            continue;
        ntp_marker_result *M = &r->markers[m++];
        M->name = g->markers[j].name;
        M->first = a;
        M->last = b;
        for (int i = 0; i < n; i++) {
            col[i] = 0;
            for (int k = a; k <= b; k++)
                col[i] += lt[(size_t)i * (size_t)nl + (size_t)k];
        }
        ntp_stats_compute(col, (size_t)n, &M->time_ms);
        for (int k = a; k <= b; k++) {
            M->flops += r->layers[k].flops;
            M->bytes += r->layers[k].bytes;
        }
        M->share = total > 0 ? M->time_ms.median / total : 0;
        M->gflops =
            M->time_ms.median > 0 ? (double)M->flops / (M->time_ms.median / 1000.0) / 1e9 : 0;
    }
    r->n_markers = m;
    double e = r->end_to_end_ms.median;
    int timed = 0;
    for (int k = 0; k < nl; k++)
        timed += x->steps[w->step[k]].kind != NTP_STEP_FUSED;
    r->overhead_fraction = e > 0 ? (r->layer_sum_ms.median - e) / e : 0;
    r->overhead_per_layer_us = timed > 0 ? (r->layer_sum_ms.median - e) * 1000.0 / timed : 0;
    r->latency_ms = e;
    r->throughput = e > 0 ? (double)(r->batch > 0 ? r->batch : 1) / (e / 1000.0) : 0;
    free(col);
    free(sum);
}

/* int8: per-tensor activation scales from one f32 pass over the same
 * inputs (max |x| / 127). */
static ntp_status calibrate(ntp_ctx *ctx, const ntp_graph *g, const ntp_exec_opts *eo, float **out)
{
    *out = NULL;
    ntp_graph *c = NULL;
    ntp_status st = ntp__graph_clone(ctx, g, NTP_DTYPE_F32, &c);
    if (st)
        return st;
    ntp_exec_opts o = *eo;
    o.first = 0;
    o.last = g->n_nodes - 1;
    o.scales = NULL;
    /* Fused runs fold batch norms; calibrate the folded graph, whose
     * tensors are those the fused run materialises, without fusing the
     * rest, which the int8 run may fuse differently. */
    o.fold_only = eo->fuse;
    o.fuse = false;
    ntp_exec x;
    float *absmax = calloc((size_t)g->n_tensors + 1, sizeof *absmax);
    if (!absmax) {
        ntp_graph_free(c);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    if ((st = ntp__exec_init(ctx, &x, c, &o)) == NTP_STATUS_OK) {
        /* Graph inputs are not written by a step: take theirs from the data. */
        for (int i = 0; i < c->n_inputs; i++) {
            const ntp_slot *sl = &x.slots[x.tslot[c->inputs[i]]];
            if (sl->dtype != NTP_DTYPE_F32)
                continue;
            const float *v = sl->data;
            for (int64_t j = 0; j < sl->bytes / 4; j++)
                if (isfinite(v[j]) && fabsf(v[j]) > absmax[sl->tensor])
                    absmax[sl->tensor] = fabsf(v[j]);
        }
        x.absmax = absmax;
        st = ntp__exec_steps(ctx, &x, 0, x.n_steps - 1);
        x.absmax = NULL;
        ntp__exec_free(&x);
    }
    ntp_graph_free(c);
    if (st) {
        free(absmax);
        return st;
    }
    for (int i = 0; i < g->n_tensors; i++)
        absmax[i] = absmax[i] > 0 ? absmax[i] / 127.0f : 0.0f;
    /* Layers that only select or move values (max pooling, reshapes) give
     * their output their input's scale, in execution order: an int8 kernel
     * then runs them on the integers without requantising (the output's
     * own maximum is at most the input's, and for max pooling nearly always
     * equal). Not relu: fused after a residual add, its output would lose
     * the resolution that its own, positive, range gives. */
    for (int p = 0; p < g->n_nodes; p++) {
        const ntp_node *n = &g->nodes[g->order[p]];
        bool keeps = n->op == NTP_OP_MAXPOOL || n->op == NTP_OP_GLOBAL_MAXPOOL ||
                     n->op == NTP_OP_DROPOUT || n->op == NTP_OP_FLATTEN || n->op == NTP_OP_RESHAPE;
        if (keeps && n->n_in == 1 && n->n_out == 1 && absmax[n->in[0]] > 0)
            absmax[n->out[0]] = absmax[n->in[0]];
    }
    *out = absmax;
    return NTP_STATUS_OK;
}

/* Compare the measured run's outputs with an f32 run of the same weights
 * and inputs on the same backend. */
static ntp_status accuracy(ntp_ctx *ctx, const ntp_graph *g, const ntp_exec *x,
                           const ntp_exec_opts *eo, ntp_run_result *r)
{
    ntp_graph *c = NULL;
    ntp_status st = ntp__graph_clone(ctx, g, NTP_DTYPE_F32, &c);
    if (st)
        return st;
    ntp_exec_opts o = *eo;
    o.first = 0;
    o.last = g->n_nodes - 1;
    o.scales = NULL;
    ntp_exec y;
    if ((st = ntp__exec_init(ctx, &y, c, &o)) == NTP_STATUS_OK)
        st = ntp__exec_steps(ctx, &y, 0, y.n_steps - 1);
    if (st) {
        ntp_graph_free(c);
        return st;
    }
    r->accuracy = calloc((size_t)g->n_outputs + 1, sizeof *r->accuracy);
    char base[64];
    snprintf(base, sizeof base, "f32 on %s", eo->backend->name);
    r->accuracy_baseline = own(r, base);
    for (int i = 0; r->accuracy && i < g->n_outputs; i++) {
        const ntp_tensor *t = &g->tensors[g->outputs[i]];
        int64_t n = ntp_shape_numel(&t->shape);
        float *a = malloc((size_t)n * 8 + 1), *b = malloc((size_t)n * 8 + 1);
        ntp_dtype da, db;
        ntp_accuracy *A = &r->accuracy[r->n_accuracy];
        if (a && b && ntp__exec_output(x, i, a, &da) && ntp__exec_output(&y, i, b, &db) &&
            da == db) {
            A->output = t->name;
            double num = 0, den = 0, mx = 0;
            for (int64_t j = 0; j < n; j++) {
                double va = da == NTP_DTYPE_F32 ? a[j] : ((int32_t *)(void *)a)[j];
                double vb = db == NTP_DTYPE_F32 ? b[j] : ((int32_t *)(void *)b)[j];
                double dlt = fabs(va - vb);
                if (dlt > mx || isnan(dlt))
                    mx = dlt;
                num += (va - vb) * (va - vb);
                den += vb * vb;
            }
            A->max_abs_error = mx;
            A->rel_l2 = den > 0 ? sqrt(num / den) : sqrt(num);
            A->top1 = A->top5 = -1;
            int64_t cls = t->shape.dim[t->shape.ndim - 1];
            if (da == NTP_DTYPE_F32 && t->shape.ndim == 2)
                ntp__topk_agree(a, b, t->shape.dim[0], cls, &A->top1, &A->top5);
            r->n_accuracy++;
        }
        free(a);
        free(b);
    }
    ntp__exec_free(&y);
    ntp_graph_free(c);
    return NTP_STATUS_OK;
}

ntp_status ntp_run(ntp_ctx *ctx, const ntp_graph *g, const ntp_run_opts *opts, ntp_run_result **out)
{
    ntp_run_opts def;
    if (!opts) {
        ntp_run_opts_default(&def);
        opts = &def;
    }
    *out = NULL;
    if (opts->iterations < 1 || opts->warmup < 0 || opts->min_time_s < 0 || opts->threads < 0)
        return ntp__error(
            ctx, NTP_STATUS_INVALID_ARGUMENT,
            "iterations must be at least 1, warmup, min-time and threads not negative");
    const ntp_backend_i *be =
        opts->backend ? ntp__backend_find(opts->backend) : ntp__backend_get(0);
    if (!be) {
        const char *names[16];
        int n = 0;
        for (int i = 0; i < ntp__backend_count() && n < 16; i++)
            names[n++] = ntp__backend_get(i)->name;
        const char *near = ntp__nearest(opts->backend, names, n);
        return ntp__error(ctx, NTP_STATUS_UNKNOWN_NAME,
                          "unknown backend '%s'%s%s%s; this build has: %s", opts->backend,
                          near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "",
                          ntp_backends());
    }
    int first, last;
    ntp_status st = find_range(ctx, g, opts->only_marker, &first, &last);
    if (st)
        return st;
    if (opts->save_outputs_dir && last != g->n_nodes - 1)
        return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_run_opts.save_outputs_dir",
                              "needs the whole topology to run; drop ntp_run_opts.only_marker");
    if (opts->torch_script && (strcmp(be->name, "torch") != 0 || opts->only_marker))
        return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_run_opts.torch_script",
                              "needs the torch backend and the whole topology (no only_marker)");
    if (opts->run_uuid && !valid_uuid(opts->run_uuid))
        return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_run_opts.run_uuid",
                              "expects a UUID such as 0f8fad5b-d9cb-469f-a165-70867728950e, "
                              "got '%s'",
                              opts->run_uuid);
    if (opts->pin && (st = pin_cpus(ctx, opts->pin)))
        return st;
    ntp_analysis *a = NULL;
    if ((st = ntp_graph_analyze(ctx, g, &a)))
        return st;
    size_t warn0 = ntp_ctx_warning_count(ctx);
    /* More threads than CPUs to run them (after --pin): a backend's threads
     * then wait for each other at every barrier. */
    cpu_set_t avail;
    if (opts->threads > 0 && sched_getaffinity(0, sizeof avail, &avail) == 0 &&
        opts->threads > CPU_COUNT(&avail))
        ntp__warn(
            ctx,
            "%d threads on %d CPU%s: the threads take turns on the CPUs "
            "(oversubscribed), so the times measure that sharing; use ntp_run_opts.threads %d or fewer",
            opts->threads, CPU_COUNT(&avail), CPU_COUNT(&avail) == 1 ? "" : "s", CPU_COUNT(&avail));
    ntp_exec_opts eo = {.backend = be,
                        .threads = opts->threads,
                        .fuse = opts->fuse,
                        .seed = opts->seed,
                        .inputs = opts->inputs,
                        .n_inputs = opts->n_inputs,
                        .first = first,
                        .last = last,
                        .place = opts->place,
                        .n_place = opts->n_place,
                        .math = opts->math,
                        .graph_replay = opts->cuda_graph,
                        .backend_options = opts->backend_options};
    float *scales = NULL;
    ntp_run_result *r = calloc(1, sizeof *r);
    ntp_exec x = {0};
    ntp_rows w = {0};
    double *e2e = NULL, *lt = NULL;
    unsigned char *apart = NULL;
    int n = 0;
    if (!r) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    /* The run's peak resident set from here: what the process held
     * before (the graph, the libraries) and what the run adds, not an
     * earlier run's peak (docs/run.md#memory). */
    ntp__rss_meter mem;
    ntp__rss_meter_start(&mem);
    progress(opts, "prepare", 0, 0);
    if (g->precision == NTP_DTYPE_I8 && (st = calibrate(ctx, g, &eo, &scales)))
        goto done;
    eo.scales = scales;
    if ((st = ntp__exec_init(ctx, &x, g, &eo)))
        goto done;
    if (!ntp__rows_build(&x, &w) || !(r->layers = calloc((size_t)w.n + 1, sizeof *r->layers)) ||
        !(r->markers = calloc((size_t)g->n_markers + 1, sizeof *r->markers)) ||
        !(r->param_names = calloc((size_t)g->n_params + 1, sizeof *r->param_names)) ||
        !(r->param_values = calloc((size_t)g->n_params + 1, sizeof *r->param_values))) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    r->topology = g->name;
    r->source = g->source;
    r->backend = be->name;
    r->precision = g->precision;
    r->batch = g->batch;
    r->threads = opts->threads;
    r->seed = opts->seed;
    r->warmup = opts->warmup;
    r->only_marker = opts->only_marker;
    r->fused = opts->fuse;
    ntp_wait_policy(&r->wait_policy, &r->wait_settings);
    r->n_layers = w.n;
    r->n_params = g->n_params;
    for (int i = 0; i < g->n_params; i++) {
        r->param_names[i] = g->params[i].name;
        r->param_values[i] = g->params[i].value;
    }
    ntp_env_collect(&r->env);
    if (opts->run_uuid)
        snprintf(r->env.run_uuid, sizeof r->env.run_uuid, "%s", opts->run_uuid);
    fill_rows(g, &x, a, &w, r);
    if ((st = measure(ctx, &x, &w, opts, &mem, r, &e2e, &lt, &apart, &n)))
        goto done;
    r->iterations = n;
    summarise(g, &x, &w, e2e, lt, n, r);
    if (r->env.contention.handoff.together_n > 0 && r->env.contention.handoff.apart_n > 0)
        ntp__handoff_split_rows(lt, r->n_layers, apart, n, r->layers);
    /* The roofline first: the counting pass's bottleneck verdict reads it. */
    ntp_roofline_apply(r, opts->ceilings);
    /* Counters and tools count in a pass of their own, after the timing. */
    if ((st = ntp__instrument(ctx, &x, &w, opts, r)))
        goto done;
    if (opts->save_outputs_dir && (st = ntp__exec_save_outputs(ctx, &x, opts->save_outputs_dir)))
        goto done;
    if (opts->accuracy && g->precision != NTP_DTYPE_F32 && last == g->n_nodes - 1 &&
        (progress(opts, "accuracy", 0, 0), st = accuracy(ctx, g, &x, &eo, r)))
        goto done;
    /* The whole-graph mode after the eager figures (src/exec/torchscript.c). */
    if (opts->torch_script) {
        progress(opts, "TorchScript", 0, 0);
        if (!(r->torch_script = calloc(1, sizeof *r->torch_script))) {
            st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            goto done;
        }
        if ((st = ntp_run_torch_script(ctx, g, opts, r->torch_script)))
            goto done;
    }
    for (int s = 0; s < x.n_steps; s++)
        r->prepare_ms += x.steps[s].prepare_ms;
    r->memory.weight_bytes = x.weight_bytes;
    r->memory.weight_copy_bytes = x.weight_copy_bytes;
    r->memory.arena_bytes = x.arena_bytes;
    r->memory.workspace_bytes = (int64_t)x.ws_bytes;
    for (int b = 0; b < x.n_be; b++) {
        int64_t dw, da, dws, dp;
        ntp__be_device_memory(x.be[b], x.be_state[b], &dw, &da, &dws, &dp);
        r->memory.device_weight_bytes += dw;
        r->memory.device_activation_bytes += da;
        r->memory.device_workspace_bytes += dws;
        r->memory.device_peak_bytes += dp;
    }
    /* Without the bandwidth probes; 0 (n/a) when /proc could not tell:
     * getrusage's ru_maxrss would hold the probes and earlier runs. */
    r->memory.peak_rss_bytes = ntp__rss_meter_peak(&mem);
    for (size_t i = warn0; i < ntp_ctx_warning_count(ctx); i++)
        add_warning(r, "%s", ntp_ctx_warning(ctx, i));
    double noise = opts->noise_cv > 0 ? opts->noise_cv : NTP_DEFAULT_NOISE_CV;
    if (r->end_to_end_ms.cv > noise)
        add_warning(r,
                    "end-to-end times vary: coefficient of variation %.1f%% > %.1f%%; "
                    "the machine may be busy, so compare medians with their intervals",
                    100 * r->end_to_end_ms.cv, 100 * noise);
    /* Contention is warned about whatever the spread: a run slowed evenly
     * by a busy neighbour varies little. */
    char busy[1024];
    if (ntp__contention_warning(&r->env.contention, busy, sizeof busy))
        add_warning(r, "%s", busy);
    if (ntp__bandwidth_warning(&r->env.contention.bandwidth, busy, sizeof busy))
        add_warning(r, "%s", busy);
    if (ntp__bandwidth_ceiling_warning(&r->env.contention.bandwidth, busy, sizeof busy))
        add_warning(r, "%s", busy);
    if (ntp__handoff_warning(&r->env.contention.handoff, busy, sizeof busy))
        add_warning(r, "%s", busy);
    if (ntp__pace_warning(&r->env.contention.pace, busy, sizeof busy))
        add_warning(r, "%s", busy);
    double measured_s = r->end_to_end_ms.median * n / 1000.0;
    if (measured_s < NTP_SHORT_RUN_S)
        add_warning(r,
                    "only %.1f ms measured in %d iterations: too short to trust; "
                    "raise ntp_run_opts.iterations or ntp_run_opts.min_time_s",
                    measured_s * 1000, n);
    if (n < 5)
        add_warning(r, "only %d measured iterations: the 95%% interval of the median is min..max",
                    n);
    if (r->overhead_fraction > 0.05)
        add_warning(r,
                    "per-layer timing adds %.1f%% to end-to-end time; per-layer figures "
                    "of the shortest layers are inflated",
                    100 * r->overhead_fraction);
done:
    free(e2e);
    free(lt);
    free(apart);
    ntp__rows_free(&w);
    ntp__exec_free(&x);
    free(scales);
    ntp_analysis_free(a);
    if (st) {
        ntp_run_result_free(r);
        return st;
    }
    *out = r;
    return NTP_STATUS_OK;
}
