/* ntp_run: build, run and measure.
 *
 * The measurement protocol (docs/measurement.md):
 *   1. prepare every layer (timed per layer, reported apart from running);
 *   2. warm-up iterations, discarded;
 *   3. the end-to-end pass: whole iterations timed with nothing inside them,
 *      until both --iterations and --min-time are met;
 *   4. the per-layer pass: the same number of iterations with a clock read
 *      around every layer;
 *   5. the instrument's overhead is what the per-layer pass adds: (median
 *      of summed layer times - median end-to-end) / median end-to-end.
 * Every figure is summarised by ntp_stats (median with its 95% CI). */
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "core/ctx-impl.h"
#include "exec-impl.h"
#include "measure/measure-impl.h"

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
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "--pin %s: cannot pin to those CPUs (are they online?)", list);
    return NTP_STATUS_OK;
bad:
    return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                      "--pin expects a CPU list such as 0-1,3; got '%s'", list);
}

static void add_warning(ntp_run_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
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
    free(r->warnings);
    free(r->trace);
    free(r->layers);
    free(r->markers);
    free(r->param_names);
    free(r->param_values);
    free(r);
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
    return ntp__error(ctx, NTP_STATUS_UNKNOWN_NAME, "--only %s: %s has no marker '%s'%s%s%s", marker,
                      g->source, marker, near ? "; did you mean '" : "", near ? near : "",
                      near ? "'?" : "");
}

static int64_t param_batch(const ntp_graph *g)
{
    for (int i = 0; i < g->n_params; i++)
        if (strcmp(g->params[i].name, "batch") == 0)
            return strtoll(g->params[i].value, NULL, 10);
    return 0;
}

/* The measured loops. e2e[i] and per-layer lt[i * nl + l] in ms. */
static ntp_status measure(ntp_ctx *ctx, ntp_exec *x, const ntp_run_opts *o, ntp_run_result *r,
                          double **e2e_out, double **lt_out, int *iters_out)
{
    int first = x->first, last = x->last, nl = last - first + 1;
    ntp_status st;
    for (int i = 0; i < o->warmup; i++)
        if ((st = ntp__exec_range(ctx, x, first, last)))
            return st;
    int cap = o->iterations > 16 ? o->iterations : 16, n = 0;
    double *e2e = malloc((size_t)cap * sizeof *e2e);
    if (!e2e)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    double start = ntp__now_us(), elapsed_s = 0;
    /* A cap on iterations keeps a microsecond-sized topology from running a
     * million times to fill --min-time. */
    const int max_iters = 100000;
    while ((n < o->iterations || elapsed_s < o->min_time_s) && n < max_iters) {
        if (n == cap) {
            cap *= 2;
            double *p = realloc(e2e, (size_t)cap * sizeof *p);
            if (!p) {
                free(e2e);
                return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            }
            e2e = p;
        }
        double t0 = ntp__now_us();
        st = ntp__exec_range(ctx, x, first, last);
        double t1 = ntp__now_us();
        if (st) {
            free(e2e);
            return st;
        }
        e2e[n++] = (t1 - t0) / 1000.0;
        elapsed_s = (t1 - start) / 1e6;
    }
    getrusage(RUSAGE_SELF, &ru1);
    r->memory.minor_faults = ru1.ru_minflt - ru0.ru_minflt;
    r->memory.major_faults = ru1.ru_majflt - ru0.ru_majflt;
    double *lt = malloc((size_t)n * (size_t)nl * sizeof *lt + 1);
    if (!lt) {
        free(e2e);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    if (o->keep_trace) {
        r->trace = calloc((size_t)n, sizeof *r->trace);
        if (!r->trace) {
            free(e2e);
            free(lt);
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        }
        r->n_trace = n;
    }
    double origin = ntp__now_us();
    for (int i = 0; i < n; i++) {
        double *ts = NULL, *te = NULL;
        if (o->keep_trace) {
            ts = r->trace[i].start_us = malloc((size_t)nl * sizeof *ts);
            te = r->trace[i].end_us = malloc((size_t)nl * sizeof *te);
            if (!ts || !te) {
                free(e2e);
                free(lt);
                return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            }
        }
        double t0 = ntp__now_us();
        for (int p = first; p <= last; p++) {
            st = x->be->execute(ctx, x->be_state, x->node_state[p], &x->kargs[p]);
            if (x->be->synchronize)
                x->be->synchronize(x->be_state);
            double t1 = ntp__now_us();
            if (st) {
                free(e2e);
                free(lt);
                return st;
            }
            lt[(size_t)i * (size_t)nl + (size_t)(p - first)] = (t1 - t0) / 1000.0;
            if (ts) {
                ts[p - first] = t0 - origin;
                te[p - first] = t1 - origin;
            }
            t0 = t1;
        }
    }
    *e2e_out = e2e;
    *lt_out = lt;
    *iters_out = n;
    return NTP_STATUS_OK;
}

static void summarise(const ntp_graph *g, const ntp_exec *x, const ntp_analysis *a,
                      const double *e2e, const double *lt, int n, ntp_run_result *r)
{
    int first = x->first, nl = r->n_layers;
    double *col = malloc((size_t)n * sizeof *col + 1);
    double *sum = calloc((size_t)n + 1, sizeof *sum);
    if (!col || !sum) {
        free(col);
        free(sum);
        return;
    }
    ntp_stats_compute(e2e, (size_t)n, &r->end_to_end_ms);
    for (int i = 0; i < n; i++)
        for (int l = 0; l < nl; l++)
            sum[i] += lt[(size_t)i * (size_t)nl + (size_t)l];
    ntp_stats_compute(sum, (size_t)n, &r->layer_sum_ms);
    double total_median = 0;
    for (int l = 0; l < nl; l++) {
        ntp_layer_result *L = &r->layers[l];
        const ntp_layer_cost *c = &a->layers[first + l];
        const ntp_node *node = &g->nodes[g->order[first + l]];
        for (int i = 0; i < n; i++)
            col[i] = lt[(size_t)i * (size_t)nl + (size_t)l];
        ntp_stats_compute(col, (size_t)n, &L->time_ms);
        L->name = node->name;
        L->type = c->type;
        L->backend = x->be->name;
        L->inlay = c->inlay;
        L->output_shape = c->output_shape;
        L->flops = c->flops;
        L->bytes = c->traffic_bytes;
        L->intensity = c->intensity;
        L->prepare_ms = x->prepare_ms[first + l];
        L->workspace_bytes = (int64_t)x->workspace[first + l];
        double s = L->time_ms.median / 1000.0;
        L->gflops = s > 0 ? (double)L->flops / s / 1e9 : 0;
        L->gbps = s > 0 ? (double)L->bytes / s / 1e9 : 0;
        total_median += L->time_ms.median;
        r->flops += L->flops;
    }
    for (int l = 0; l < nl; l++)
        r->layers[l].share = total_median > 0 ? r->layers[l].time_ms.median / total_median : 0;
    /* Marker segments that overlap the measured range, clipped to it. */
    int m = 0;
    for (int k = 0; k < g->n_markers; k++) {
        int mf = g->markers[k].first, ml = g->markers[k].last;
        if (ml < first || mf > x->last)
            continue;
        if (mf < first)
            mf = first;
        if (ml > x->last)
            ml = x->last;
        ntp_marker_result *M = &r->markers[m++];
        M->name = g->markers[k].name;
        M->first = mf - first;
        M->last = ml - first;
        for (int i = 0; i < n; i++) {
            col[i] = 0;
            for (int l = mf - first; l <= ml - first; l++)
                col[i] += lt[(size_t)i * (size_t)nl + (size_t)l];
        }
        ntp_stats_compute(col, (size_t)n, &M->time_ms);
        for (int l = mf - first; l <= ml - first; l++) {
            M->flops += r->layers[l].flops;
            M->bytes += r->layers[l].bytes;
        }
        M->share = total_median > 0 ? M->time_ms.median / total_median : 0;
        M->gflops = M->time_ms.median > 0 ? (double)M->flops / (M->time_ms.median / 1000.0) / 1e9 : 0;
    }
    r->n_markers = m;
    double e = r->end_to_end_ms.median;
    r->overhead_fraction = e > 0 ? (r->layer_sum_ms.median - e) / e : 0;
    r->overhead_per_layer_us = nl > 0 ? (r->layer_sum_ms.median - e) * 1000.0 / nl : 0;
    r->latency_ms = e;
    r->throughput = e > 0 ? (double)(r->batch > 0 ? r->batch : 1) / (e / 1000.0) : 0;
    free(col);
    free(sum);
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
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "iterations must be at least 1, warmup, min-time and threads not negative");
    const ntp_backend_i *be = opts->backend ? ntp__backend_find(opts->backend) : ntp__backend_get(0);
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
    if (opts->pin && (st = pin_cpus(ctx, opts->pin)))
        return st;
    ntp_analysis *a = NULL;
    if ((st = ntp_graph_analyze(ctx, g, &a)))
        return st;
    ntp_run_result *r = calloc(1, sizeof *r);
    int nl = last - first + 1;
    if (!r || !(r->layers = calloc((size_t)nl, sizeof *r->layers)) ||
        !(r->markers = calloc((size_t)g->n_markers + 1, sizeof *r->markers)) ||
        !(r->param_names = calloc((size_t)g->n_params + 1, sizeof *r->param_names)) ||
        !(r->param_values = calloc((size_t)g->n_params + 1, sizeof *r->param_values))) {
        ntp_run_result_free(r);
        ntp_analysis_free(a);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    r->topology = g->name;
    r->source = g->source;
    r->backend = be->name;
    r->precision = g->precision;
    r->batch = param_batch(g);
    r->threads = opts->threads;
    r->seed = opts->seed;
    r->warmup = opts->warmup;
    r->only_marker = opts->only_marker;
    r->n_layers = nl;
    r->n_params = g->n_params;
    for (int i = 0; i < g->n_params; i++) {
        r->param_names[i] = g->params[i].name;
        r->param_values[i] = g->params[i].value;
    }
    ntp_env_collect(&r->env);

    ntp_exec x;
    double *e2e = NULL, *lt = NULL;
    int n = 0;
    st = ntp__exec_init(ctx, &x, g, be, opts, first, last);
    if (st == NTP_STATUS_OK)
        st = measure(ctx, &x, opts, r, &e2e, &lt, &n);
    if (st == NTP_STATUS_OK && opts->save_outputs_dir) {
        /* Outputs of a partial run are not all computed. */
        if (last != g->n_nodes - 1)
            st = ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                            "--save-outputs needs the whole topology to run; drop --only");
        else
            st = ntp__exec_save_outputs(ctx, &x, opts->save_outputs_dir);
    }
    if (st == NTP_STATUS_OK) {
        r->iterations = n;
        summarise(g, &x, a, e2e, lt, n, r);
        for (int p = 0; p < g->n_nodes; p++)
            r->prepare_ms += x.prepare_ms[p];
        r->memory.weight_bytes = x.weight_bytes;
        r->memory.arena_bytes = x.arena_bytes;
        r->memory.workspace_bytes = (int64_t)x.ws_bytes;
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        r->memory.peak_rss_bytes = (int64_t)ru.ru_maxrss * 1024;
        double noise = opts->noise_cv > 0 ? opts->noise_cv : NTP_DEFAULT_NOISE_CV;
        if (r->end_to_end_ms.cv > noise)
            add_warning(r, "end-to-end times vary: coefficient of variation %.1f%% > %.1f%%; "
                        "the machine may be busy, so compare medians with their intervals",
                        100 * r->end_to_end_ms.cv, 100 * noise);
        double measured_s = r->end_to_end_ms.median * n / 1000.0;
        if (measured_s < NTP_SHORT_RUN_S)
            add_warning(r, "only %.1f ms measured in %d iterations: too short to trust; "
                        "raise --iterations or --min-time", measured_s * 1000, n);
        if (n < 5)
            add_warning(r, "only %d measured iterations: the 95%% interval of the median is "
                        "min..max", n);
        if (r->overhead_fraction > 0.05)
            add_warning(r, "per-layer timing adds %.1f%% to end-to-end time; per-layer figures "
                        "of the shortest layers are inflated", 100 * r->overhead_fraction);
    }
    free(e2e);
    free(lt);
    ntp__exec_free(&x);
    ntp_analysis_free(a);
    if (st) {
        ntp_run_result_free(r);
        return st;
    }
    *out = r;
    return NTP_STATUS_OK;
}
