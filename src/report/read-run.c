/* Run reports read back: the JSON of ntp_report_write_run parsed into an
 * ntp_run_result, so compare, sweep, the HTML report and the history work
 * on the same struct a live run produces.
 *
 * The reader follows docs/report-format.md: it needs every field the schema
 * requires, reads the optional roofline, accuracy, --fuse, row kind, impl
 * and fusion note,
 * ignores fields it does not know (a later version may add some; counters
 * are read by the HTML writer from the JSON itself), and reads null
 * numbers (a rate over a zero time) as NaN. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "io/file-impl.h"
#include "measure/counters-impl.h"
#include "measure/measure-impl.h"
#include "report-impl.h"
#include "ntprof/frameworks.h"

/* Parse state: the result being filled, and where we are for messages. */
typedef struct reader {
    ntp_ctx *ctx;
    const char *name; /* the file, or "run 12" */
    ntp_run_result *r;
    char where[96]; /* "layers[3]" */
    ntp_status st;  /* first failure */
} reader;

static bool fail(reader *rd, ntp_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool fail(reader *rd, ntp_status st, const char *fmt, ...)
{
    if (rd->st == NTP_STATUS_OK) {
        char what[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof what, fmt, ap);
        va_end(ap);
        rd->st = ntp__error(rd->ctx, st, "%s: run report%s%s: %s", rd->name,
                            rd->where[0] ? " " : "", rd->where, what);
    }
    return false;
}

/* Keep a copy of s in the result (its store, freed by ntp_run_result_free). */
static const char *keep(reader *rd, const char *s)
{
    if (!s)
        return NULL;
    ntp_counter_store *st = ntp__run_store(rd->r);
    const char *c = st ? ntp__store_str(st, s) : NULL;
    if (!c)
        fail(rd, NTP_STATUS_OUT_OF_MEMORY, "%s", "out of memory");
    return c;
}

static json_t *need(reader *rd, json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        fail(rd, NTP_STATUS_PARSE_ERROR, "missing '%s'", key);
    return v;
}

/* A string or null; NULL (with a failure) when the key is missing or holds
 * something else. */
static const char *get_str(reader *rd, json_t *o, const char *key, bool *ok)
{
    json_t *v = need(rd, o, key);
    if (!v) {
        *ok = false;
        return NULL;
    }
    if (json_is_null(v))
        return NULL;
    if (!json_is_string(v)) {
        *ok = fail(rd, NTP_STATUS_PARSE_ERROR, "'%s' is not a string", key);
        return NULL;
    }
    return keep(rd, json_string_value(v));
}

static double get_num(reader *rd, json_t *o, const char *key)
{
    json_t *v = need(rd, o, key);
    if (!v || json_is_null(v))
        return NAN;
    if (!json_is_number(v)) {
        fail(rd, NTP_STATUS_PARSE_ERROR, "'%s' is not a number", key);
        return NAN;
    }
    return json_number_value(v);
}

/* An optional string kept in the result; NULL when absent or not a string. */
static const char *opt_str(reader *rd, json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? keep(rd, json_string_value(v)) : NULL;
}

/* An optional number: absent or null is `def`. */
static double opt_num(json_t *o, const char *key, double def)
{
    json_t *v = json_object_get(o, key);
    return v && json_is_number(v) ? json_number_value(v) : def;
}

/* An optional [lo, hi] (reports from before it, or null): 0 and 0. */
static void opt_pair(json_t *a, double *lo, double *hi)
{
    json_t *l = json_array_get(a, 0), *h = json_array_get(a, 1);
    *lo = json_is_number(l) ? json_number_value(l) : 0;
    *hi = json_is_number(h) ? json_number_value(h) : 0;
}

static int64_t get_int(reader *rd, json_t *o, const char *key)
{
    json_t *v = need(rd, o, key);
    if (!v)
        return 0;
    if (!json_is_integer(v)) {
        fail(rd, NTP_STATUS_PARSE_ERROR, "'%s' is not an integer", key);
        return 0;
    }
    return (int64_t)json_integer_value(v);
}

static bool get_bool(reader *rd, json_t *o, const char *key)
{
    json_t *v = need(rd, o, key);
    if (v && !json_is_boolean(v))
        fail(rd, NTP_STATUS_PARSE_ERROR, "'%s' is not true or false", key);
    return v && json_is_true(v);
}

static void get_stats(reader *rd, json_t *o, ntp_stats *s)
{
    s->median = get_num(rd, o, "median_ms");
    s->min = get_num(rd, o, "min_ms");
    s->mean = get_num(rd, o, "mean_ms");
    s->p90 = get_num(rd, o, "p90_ms");
    s->p99 = get_num(rd, o, "p99_ms");
    s->max = get_num(rd, o, "max_ms");
    s->stddev = get_num(rd, o, "stddev_ms");
    s->cv = get_num(rd, o, "cv");
    int64_t n = get_int(rd, o, "n");
    s->n = n > 0 ? (size_t)n : 0;
    json_t *ci = need(rd, o, "ci95_ms");
    if (ci && (!json_is_array(ci) || json_array_size(ci) != 2)) {
        fail(rd, NTP_STATUS_PARSE_ERROR, "'%s' is not a pair [lo, hi]", "ci95_ms");
        return;
    }
    if (ci) {
        json_t *lo = json_array_get(ci, 0), *hi = json_array_get(ci, 1);
        s->ci95_lo = json_is_number(lo) ? json_number_value(lo) : NAN;
        s->ci95_hi = json_is_number(hi) ? json_number_value(hi) : NAN;
    }
}

static void get_shape(reader *rd, json_t *o, const char *key, ntp_shape *s)
{
    json_t *a = need(rd, o, key);
    if (!a)
        return;
    if (!json_is_array(a) || json_array_size(a) > NTP_MAX_DIMS) {
        fail(rd, NTP_STATUS_PARSE_ERROR, "'%s' is not a shape of at most 8 dims", key);
        return;
    }
    s->ndim = (int)json_array_size(a);
    for (int i = 0; i < s->ndim; i++) {
        json_t *d = json_array_get(a, (size_t)i);
        if (!json_is_integer(d)) {
            fail(rd, NTP_STATUS_PARSE_ERROR, "'%s' holds a non-integer dim", key);
            return;
        }
        s->dim[i] = (int64_t)json_integer_value(d);
    }
}

/* Copy a string field into a fixed array of the environment. */
static void get_fixed(reader *rd, json_t *o, const char *key, char *dst, size_t len)
{
    json_t *v = need(rd, o, key);
    const char *s = v && json_is_string(v) ? json_string_value(v) : "unknown";
    snprintf(dst, len, "%s", s);
}

/* One hand-off probe; null or absent: did not run (ratio 0). */
static void read_handoff_probe(json_t *o, ntp_handoff_probe *p)
{
    memset(p, 0, sizeof *p);
    p->sysfs_level = -1;
    if (!json_is_object(o))
        return;
    p->ratio = opt_num(o, "ratio", 0);
    p->remote_gbps = opt_num(o, "remote_gbps", 0);
    p->own_gbps = opt_num(o, "own_gbps", 0);
    p->cpu_from = (int)opt_num(o, "cpu_from", 0);
    p->cpu_to = (int)opt_num(o, "cpu_to", 0);
    p->sysfs_level = (int)opt_num(o, "sysfs_level", -1);
    p->sysfs_bytes = (int64_t)opt_num(o, "sysfs_bytes", 0);
    p->pairs_apart = (int)opt_num(o, "pairs_apart", 0);
}

/* environment.contention.pace; absent (an older report): not measured, no
 * reason, and the report writers leave it out again. */
static void read_pace(json_t *o, ntp_pace_check *p)
{
    memset(p, 0, sizeof *p);
    if (!json_is_object(o))
        return;
    p->measured = json_is_true(json_object_get(o, "measured"));
    json_t *cpus = json_object_get(o, "cpus");
    for (size_t i = 0;
         json_is_array(cpus) && i < json_array_size(cpus) && p->n_cpus < NTP_PACE_MAX_CPUS; i++) {
        json_t *one = json_array_get(cpus, i);
        p->cpu[p->n_cpus] = (int)opt_num(one, "cpu", 0);
        p->low[p->n_cpus] = opt_num(one, "low_gflops", 0);
        p->high[p->n_cpus++] = opt_num(one, "high_gflops", 0);
    }
    p->best = opt_num(o, "best_gflops", 0);
    p->looks = (int)opt_num(o, "looks", 0);
    p->slow_looks = (int)opt_num(o, "slow_looks", 0);
    p->one_thread = json_is_true(json_object_get(o, "one_thread"));
    p->cost_s = opt_num(o, "cost_s", 0);
    p->slow_ms = opt_num(o, "slow_ms", 0);
    p->slow_n = (int)opt_num(o, "slow_n", 0);
    p->clear_ms = opt_num(o, "clear_ms", 0);
    p->clear_n = (int)opt_num(o, "clear_n", 0);
    opt_pair(json_object_get(o, "slow_ci95_ms"), &p->slow_lo, &p->slow_hi);
    opt_pair(json_object_get(o, "clear_ci95_ms"), &p->clear_lo, &p->clear_hi);
    p->slowed = json_is_true(json_object_get(o, "slowed"));
    p->unconfirmed = json_is_true(json_object_get(o, "unconfirmed"));
    p->throughout = json_is_true(json_object_get(o, "throughout"));
    json_t *why = json_object_get(o, "reason");
    snprintf(p->reason, sizeof p->reason, "%s", json_is_string(why) ? json_string_value(why) : "");
    /* Looks need a CPU looked at (the writer lists each). */
    if (p->measured && p->n_cpus == 0) {
        p->measured = false;
        snprintf(p->reason, sizeof p->reason, "the report lists no CPU the looks read");
    }
    if (!p->measured && !p->reason[0])
        snprintf(p->reason, sizeof p->reason, "not measured");
}

/* environment.contention.handoff; absent (an older report): not measured,
 * no reason, and the report writers leave it out again. */
static void read_handoff(json_t *o, ntp_handoff_check *h)
{
    memset(h, 0, sizeof *h);
    if (!json_is_object(o))
        return;
    h->measured = json_is_true(json_object_get(o, "measured"));
    h->bytes = (int64_t)opt_num(o, "bytes", 0);
    h->pairs = (int)opt_num(o, "pairs", 0);
    h->cost_s = opt_num(o, "cost_s", 0);
    read_handoff_probe(json_object_get(o, "before"), &h->before);
    read_handoff_probe(json_object_get(o, "after"), &h->after);
    h->samples = (int)opt_num(o, "samples", 0);
    h->samples_apart = (int)opt_num(o, "samples_apart", 0);
    h->window_ratio = opt_num(o, "window_ratio", 0);
    h->together_ms = opt_num(o, "together_ms", 0);
    h->together_n = (int)opt_num(o, "together_n", 0);
    h->apart_ms = opt_num(o, "apart_ms", 0);
    h->apart_n = (int)opt_num(o, "apart_n", 0);
    opt_pair(json_object_get(o, "together_ci95_ms"), &h->together_lo, &h->together_hi);
    opt_pair(json_object_get(o, "apart_ci95_ms"), &h->apart_lo, &h->apart_hi);
    h->apart = json_is_true(json_object_get(o, "apart"));
    h->unconfirmed = json_is_true(json_object_get(o, "unconfirmed"));
    json_t *why = json_object_get(o, "reason");
    snprintf(h->reason, sizeof h->reason, "%s", json_is_string(why) ? json_string_value(why) : "");
    if (!h->measured && !h->reason[0])
        snprintf(h->reason, sizeof h->reason, "not measured");
}

static void read_env(reader *rd, json_t *o, ntp_env *e)
{
    snprintf(rd->where, sizeof rd->where, "environment");
    get_fixed(rd, o, "cpu_model", e->cpu_model, sizeof e->cpu_model);
    ntp__json_join(need(rd, o, "cpu_flags"), e->cpu_flags, sizeof e->cpu_flags);
    /* Optional: reports before it was recorded lack it ("": not recorded). */
    const char *sig = opt_str(rd, o, "cpu_signature");
    snprintf(e->cpu_signature, sizeof e->cpu_signature, "%s", sig ? sig : "");
    e->cores = (int)get_int(rd, o, "cores");
    e->memory_bytes = get_int(rd, o, "memory_bytes");
    get_fixed(rd, o, "os", e->os, sizeof e->os);
    get_fixed(rd, o, "compiler", e->compiler, sizeof e->compiler);
    get_fixed(rd, o, "libraries", e->libraries, sizeof e->libraries);
    get_fixed(rd, o, "ntprof_version", e->ntprof_version, sizeof e->ntprof_version);
    get_fixed(rd, o, "git_revision", e->git_revision, sizeof e->git_revision);
    get_fixed(rd, o, "hostname", e->hostname, sizeof e->hostname);
    get_fixed(rd, o, "timestamp", e->timestamp, sizeof e->timestamp);
    /* Optional: reports before the shared store lack it. */
    json_t *uuid = json_object_get(o, "run_uuid");
    snprintf(e->run_uuid, sizeof e->run_uuid, "%s",
             json_is_string(uuid) && json_string_length(uuid) < sizeof e->run_uuid
                 ? json_string_value(uuid)
                 : "");
    /* Optional: reports before the contention figures lack it. */
    json_t *c = json_object_get(o, "contention");
    ntp_contention *ct = &e->contention;
    ct->load_average = -1;
    if (json_is_object(c)) {
        ct->measured = json_is_true(json_object_get(c, "measured"));
        ct->window_s = opt_num(c, "window_s", 0);
        ct->cpus = (int)opt_num(c, "cpus", 0);
        ct->other = opt_num(c, "other", 0);
        ct->steal = opt_num(c, "steal", 0);
        ct->own = opt_num(c, "own", 0);
        ct->resolution = opt_num(c, "resolution", 0);
        ct->load_average = opt_num(c, "load_average_start", -1);
        ct->distorted = json_is_true(json_object_get(c, "distorted"));
        json_t *why = json_object_get(c, "reason");
        snprintf(ct->reason, sizeof ct->reason, "%s",
                 json_is_string(why) ? json_string_value(why) : "");
        /* Optional: reports before the bandwidth probe lack it. */
        ntp__bandwidth_read_json(json_object_get(c, "bandwidth"), &ct->bandwidth);
        read_handoff(json_object_get(c, "handoff"), &ct->handoff);
        read_pace(json_object_get(c, "pace"), &ct->pace);
    }
}

static void read_config(reader *rd, json_t *o)
{
    ntp_run_result *r = rd->r;
    bool ok = true;
    snprintf(rd->where, sizeof rd->where, "config");
    r->backend = get_str(rd, o, "backend", &ok);
    json_t *p = need(rd, o, "precision");
    ntp_dtype d = NTP_DTYPE_F32;
    if (p && (!json_is_string(p) || ntp_dtype_parse(json_string_value(p), &d) != NTP_STATUS_OK))
        fail(rd, NTP_STATUS_PARSE_ERROR, "'%s' is not a precision", "precision");
    r->precision = d;
    r->batch = get_int(rd, o, "batch");
    r->threads = (int)get_int(rd, o, "threads");
    json_t *seed = need(rd, o, "seed");
    if (seed && json_is_integer(seed))
        r->seed = (uint64_t)json_integer_value(seed);
    else if (seed && json_is_string(seed))
        r->seed = strtoull(json_string_value(seed), NULL, 10);
    else if (seed)
        fail(rd, NTP_STATUS_PARSE_ERROR, "'%s' is not an integer", "seed");
    r->warmup = (int)get_int(rd, o, "warmup");
    r->iterations = (int)get_int(rd, o, "iterations");
    r->only_marker = get_str(rd, o, "only_marker", &ok);
    /* --fuse; reports written before it was recorded lack it (read_root
     * then takes it from the rows: a fused row proves it was on). */
    json_t *fuse = json_object_get(o, "fuse");
    if (fuse && !json_is_boolean(fuse))
        fail(rd, NTP_STATUS_PARSE_ERROR, "'%s' is not true or false", "fuse");
    r->fused = json_is_true(fuse);
    r->wait_policy = opt_str(rd, o, "wait_policy"); /* optional: older reports lack it */
    r->wait_settings = opt_str(rd, o, "wait_settings");
    json_t *params = need(rd, o, "params");
    if (params && json_is_object(params)) {
        size_t n = json_object_size(params);
        r->param_names = calloc(n + 1, sizeof *r->param_names);
        r->param_values = calloc(n + 1, sizeof *r->param_values);
        if (!r->param_names || !r->param_values) {
            fail(rd, NTP_STATUS_OUT_OF_MEMORY, "%s", "out of memory");
            return;
        }
        const char *k;
        json_t *v;
        json_object_foreach(params, k, v)
        {
            r->param_names[r->n_params] = keep(rd, k);
            r->param_values[r->n_params] = keep(rd, json_is_string(v) ? json_string_value(v) : "");
            r->n_params++;
        }
    }
}

/* A row's kind is not in the report; it follows from the row's type. */
static const char *row_kind(const ntp_layer_result *l)
{
    if (l->fused)
        return "fused";
    if (l->type && strcmp(l->type, "convert") == 0)
        return "convert";
    if (l->type && strcmp(l->type, "reorder") == 0)
        return "reorder";
    return "layer";
}

static void read_layer(reader *rd, json_t *o, ntp_layer_result *l)
{
    bool ok = true;
    if (!json_is_object(o)) {
        fail(rd, NTP_STATUS_PARSE_ERROR, "%s", "is not an object");
        return;
    }
    l->name = get_str(rd, o, "name", &ok);
    l->type = get_str(rd, o, "type", &ok);
    l->backend = get_str(rd, o, "backend", &ok);
    l->inlay = get_bool(rd, o, "inlay");
    l->fused = get_bool(rd, o, "fused");
    l->fused_into = get_str(rd, o, "fused_into", &ok);
    get_shape(rd, o, "output_shape", &l->output_shape);
    get_stats(rd, o, &l->time_ms);
    l->share = get_num(rd, o, "share");
    l->flops = get_int(rd, o, "flops");
    l->bytes = get_int(rd, o, "bytes");
    l->gflops = get_num(rd, o, "gflops");
    l->gbps = get_num(rd, o, "gbps");
    l->intensity = get_num(rd, o, "intensity");
    l->prepare_ms = get_num(rd, o, "prepare_ms");
    l->workspace_bytes = get_int(rd, o, "workspace_bytes");
    l->attainable_gflops = opt_num(o, "attainable_gflops", 0);
    l->attainable_gbps = opt_num(o, "attainable_gbps", 0);
    l->roof_share = opt_num(o, "roof_share", 0);
    l->roof_ceiling = opt_str(rd, o, "roof_ceiling");
    /* Reports from before `kind` and `impl` were written lack them. */
    json_t *kind = json_object_get(o, "kind"), *impl = json_object_get(o, "impl");
    l->kind = json_is_string(kind) ? keep(rd, json_string_value(kind)) : row_kind(l);
    l->impl = json_is_string(impl) ? keep(rd, json_string_value(impl)) : NULL;
    l->fuse_note = opt_str(rd, o, "fuse_note");
    l->src_layout = opt_str(rd, o, "src_layout");
    /* The prediction beside the measurement (docs/predict.md), when the
     * run had a calibration. */
    /* Only where the hand-off looks split the run's iterations. */
    l->together_ms = opt_num(o, "together_ms", 0);
    l->apart_ms = opt_num(o, "apart_ms", 0);
    json_t *pred = json_object_get(o, "predicted_ms");
    l->predicted = json_is_number(pred);
    l->predicted_ms = l->predicted ? json_number_value(pred) : 0;
    json_t *note = json_object_get(o, "prediction_note");
    if (json_is_string(note))
        snprintf(l->prediction_note, sizeof l->prediction_note, "%s", json_string_value(note));
    if (!l->name && rd->st == NTP_STATUS_OK)
        fail(rd, NTP_STATUS_PARSE_ERROR, "'%s' is null", "name");
}

static void read_marker(reader *rd, json_t *o, ntp_marker_result *m)
{
    bool ok = true;
    if (!json_is_object(o)) {
        fail(rd, NTP_STATUS_PARSE_ERROR, "%s", "is not an object");
        return;
    }
    m->name = get_str(rd, o, "name", &ok);
    m->first = (int)get_int(rd, o, "first");
    m->last = (int)get_int(rd, o, "last");
    get_stats(rd, o, &m->time_ms);
    m->share = get_num(rd, o, "share");
    m->flops = get_int(rd, o, "flops");
    m->bytes = get_int(rd, o, "bytes");
    m->gflops = get_num(rd, o, "gflops");
    m->attainable_gflops = opt_num(o, "attainable_gflops", 0);
    m->roof_share = opt_num(o, "roof_share", 0);
    m->roof_ceiling = opt_str(rd, o, "roof_ceiling");
    if (rd->st == NTP_STATUS_OK &&
        (!m->name || m->first < 0 || m->last < m->first || m->last >= rd->r->n_layers))
        fail(rd, NTP_STATUS_PARSE_ERROR, "%s",
             "a marker needs a name and 0 <= first <= last < layers");
}

/* The GPU's roof inside the roofline object (absent without GPU rows). */
static void read_gpu_roof(json_t *g, ntp_roofline *rl)
{
    if (!json_is_object(g))
        return;
    rl->gpu_rows = true;
    rl->gpu_available = json_is_true(json_object_get(g, "available"));
    json_t *v;
    if ((v = json_object_get(g, "name")) && json_is_string(v))
        snprintf(rl->gpu_name, sizeof rl->gpu_name, "%s", json_string_value(v));
    if ((v = json_object_get(g, "math")) && json_is_string(v))
        snprintf(rl->gpu_math, sizeof rl->gpu_math, "%s", json_string_value(v));
    rl->gpu_peak_gflops = opt_num(g, "peak_gflops", 0);
    rl->gpu_bandwidth_gbps = opt_num(g, "bandwidth_gbps", 0);
    rl->gpu_ridge_intensity = opt_num(g, "ridge_intensity", 0);
    rl->gpu_h2d_gbps = opt_num(g, "h2d_gbps", 0);
    rl->gpu_d2h_gbps = opt_num(g, "d2h_gbps", 0);
}

/* The optional roofline object (absent in reports written before it). */
/* The run's prediction summary (ntp_prediction_apply); absent when the
 * machine had no calibration. */
static void read_prediction(reader *rd, json_t *o, ntp_run_prediction *p)
{
    (void)rd;
    memset(p, 0, sizeof *p);
    if (!json_is_object(o))
        return;
    p->available = true;
    json_t *cal = json_object_get(o, "calibration"), *un = json_object_get(o, "uncalibrated");
    snprintf(p->calibration, sizeof p->calibration, "%s",
             json_is_string(cal) ? json_string_value(cal) : "");
    snprintf(p->uncalibrated, sizeof p->uncalibrated, "%s",
             json_is_string(un) ? json_string_value(un) : "");
    json_t *wn = json_object_get(o, "weights_note");
    snprintf(p->weights_note, sizeof p->weights_note, "%s",
             json_is_string(wn) ? json_string_value(wn) : "");
    p->stale = json_is_true(json_object_get(o, "stale"));
    p->roofline_only = json_is_true(json_object_get(o, "roofline_only"));
    p->predicted_ms = opt_num(o, "predicted_ms", NAN);
    p->measured_ms = opt_num(o, "measured_ms", NAN);
    p->error = opt_num(o, "error", NAN);
    p->n_compared = (int)opt_num(o, "layers_compared", 0);
    p->within_10 = (int)opt_num(o, "layers_within_10", 0);
    p->within_25 = (int)opt_num(o, "layers_within_25", 0);
    p->n_major = (int)opt_num(o, "major_layers", 0);
    p->major_within_25 = (int)opt_num(o, "major_layers_within_25", 0);
    p->unpredicted_ms = opt_num(o, "unpredicted_ms", 0);
    p->covered_error = opt_num(o, "covered_error", NAN);
    p->threads_differ = json_is_true(json_object_get(o, "threads_differ"));
    p->calibration_threads = (int)opt_num(o, "calibration_threads", 0);
    p->run_threads = (int)opt_num(o, "run_threads", 0);
    /* Absent before calibrations probed the bus: n/a. */
    p->calibration_bus_share = opt_num(o, "calibration_bus_share", -1);
    p->calibration_bus_low = json_is_true(json_object_get(o, "calibration_bus_low"));
    /* Absent before calibrations' pace was kept with the prediction: n/a. */
    p->calibration_pace_gflops = opt_num(o, "calibration_pace_gflops", 0);
    if (!(p->calibration_pace_gflops > 0))
        p->calibration_pace_gflops = 0;
    /* Absent before a threaded backend's prediction took a paced
     * calibration's pace: the prediction's own. */
    json_t *pb = json_object_get(o, "calibration_pace_backend");
    snprintf(p->calibration_pace_backend, sizeof p->calibration_pace_backend, "%s",
             !(p->calibration_pace_gflops > 0) ? ""
             : json_is_string(pb)              ? json_string_value(pb)
                                               : "");
}

/* The optional TorchScript figure (ntp_run_opts.torch_script). */
static void read_torch_script(reader *rd, json_t *o)
{
    if (!json_is_object(o))
        return;
    ntp_torch_script_result *s = calloc(1, sizeof *s);
    if (!s) {
        fail(rd, NTP_STATUS_OUT_OF_MEMORY, "%s", "out of memory");
        return;
    }
    rd->r->torch_script = s;
    snprintf(rd->where, sizeof rd->where, "torch_script");
    s->threads = (int)get_int(rd, o, "threads");
    s->warmup = (int)get_int(rd, o, "warmup");
    s->iterations = (int)get_int(rd, o, "iterations");
    s->build_ms = get_num(rd, o, "build_ms");
    s->latency_ms = get_num(rd, o, "latency_ms");
    s->max_abs_error = get_num(rd, o, "max_abs_error");
    s->rel_l2 = get_num(rd, o, "rel_l2");
    json_t *e = need(rd, o, "end_to_end");
    if (e) {
        snprintf(rd->where, sizeof rd->where, "torch_script.end_to_end");
        get_stats(rd, e, &s->end_to_end_ms);
    }
    rd->where[0] = '\0';
}

/* The Slurm sweep task of a kept report (schema: "sweep"); absent: none. */
static void read_sweep(reader *rd, json_t *o, ntp_run_result *r)
{
    if (!o)
        return;
    json_t *id = json_object_get(o, "id"), *index = json_object_get(o, "index");
    json_t *created = json_object_get(o, "created_at"), *job = json_object_get(o, "job");
    if (!json_is_object(o) || !json_is_integer(id) || json_integer_value(id) < 1 ||
        !json_is_integer(index) || json_integer_value(index) < 0 ||
        json_integer_value(index) > INT32_MAX || !json_is_string(created) ||
        (job && !json_is_string(job))) {
        fail(rd, NTP_STATUS_PARSE_ERROR, "%s",
             "'sweep' is not an object of id (from 1), index (from 0), created_at and job");
        return;
    }
    r->sweep_id = (int64_t)json_integer_value(id);
    r->sweep_index = (int)json_integer_value(index);
    snprintf(r->sweep_created_at, sizeof r->sweep_created_at, "%s", json_string_value(created));
    snprintf(r->sweep_job, sizeof r->sweep_job, "%s", job ? json_string_value(job) : "");
}

static void read_roofline(json_t *o, ntp_roofline *rl)
{
    memset(rl, 0, sizeof *rl);
    if (!o || !json_is_object(o))
        return;
    rl->available = true;
    json_t *v;
    if ((v = json_object_get(o, "machine")) && json_is_string(v))
        snprintf(rl->machine, sizeof rl->machine, "%s", json_string_value(v));
    if ((v = json_object_get(o, "measured_at")) && json_is_string(v))
        snprintf(rl->measured_at, sizeof rl->measured_at, "%s", json_string_value(v));
    if ((v = json_object_get(o, "peak_source")) && json_is_string(v))
        snprintf(rl->peak_source, sizeof rl->peak_source, "%s", json_string_value(v));
    rl->peak_gflops = opt_num(o, "peak_gflops", 0);
    rl->bandwidth_gbps = opt_num(o, "bandwidth_gbps", 0);
    rl->ridge_intensity = opt_num(o, "ridge_intensity", 0);
    rl->unreliable = json_is_true(json_object_get(o, "unreliable"));
    if ((v = json_object_get(o, "stale_reason")) && json_is_string(v))
        snprintf(rl->stale_reason, sizeof rl->stale_reason, "%s", json_string_value(v));
    json_t *levels = json_object_get(o, "levels");
    size_t i;
    json_array_foreach(levels, i, v)
    {
        if (rl->n_levels >= NTP_ROOFLINE_MAX_LEVELS)
            break;
        json_t *name = json_object_get(v, "name");
        snprintf(rl->levels[rl->n_levels].name, sizeof rl->levels[0].name, "%s",
                 json_is_string(name) ? json_string_value(name) : "?");
        rl->levels[rl->n_levels].gbps = opt_num(v, "gbps", 0);
        rl->n_levels++;
    }
    read_gpu_roof(json_object_get(o, "gpu"), rl);
}

/* The optional accuracy object of reduced-precision runs. A null top-1 or
 * top-5 (not a classifier) is -1, as in a live result. */
static void read_accuracy(reader *rd, json_t *o)
{
    ntp_run_result *r = rd->r;
    json_t *outs = json_object_get(o, "outputs"), *base = json_object_get(o, "baseline");
    if (!json_is_object(o) || !json_is_array(outs))
        return;
    r->accuracy_baseline = json_is_string(base) ? keep(rd, json_string_value(base)) : NULL;
    r->accuracy = calloc(json_array_size(outs) + 1, sizeof *r->accuracy);
    if (!r->accuracy) {
        fail(rd, NTP_STATUS_OUT_OF_MEMORY, "%s", "out of memory");
        return;
    }
    size_t i;
    json_t *v;
    json_array_foreach(outs, i, v)
    {
        ntp_accuracy *a = &r->accuracy[r->n_accuracy++];
        json_t *name = json_object_get(v, "output");
        a->output = json_is_string(name) ? keep(rd, json_string_value(name)) : NULL;
        a->max_abs_error = opt_num(v, "max_abs_error", NAN);
        a->rel_l2 = opt_num(v, "rel_l2", NAN);
        a->top1 = opt_num(v, "top1", -1);
        a->top5 = opt_num(v, "top5", -1);
    }
}

static void read_root(reader *rd, json_t *root)
{
    ntp_run_result *r = rd->r;
    bool ok = true;
    if (!json_is_object(root)) {
        fail(rd, NTP_STATUS_PARSE_ERROR, "%s", "is not a JSON object");
        return;
    }
    json_t *kind = json_object_get(root, "kind");
    if (!kind || !json_is_string(kind) || strcmp(json_string_value(kind), "run") != 0) {
        fail(rd, NTP_STATUS_PARSE_ERROR, "%s", "is not a run report (\"kind\": \"run\")");
        return;
    }
    int64_t version = get_int(rd, root, "schema_version");
    if (rd->st)
        return;
    if (version != NTP_REPORT_SCHEMA_VERSION) {
        char what[96];
        snprintf(what, sizeof what, "schema_version %" PRId64 " (this ntprof reads %d)", version,
                 NTP_REPORT_SCHEMA_VERSION);
        fail(rd, NTP_STATUS_UNSUPPORTED, "%s", what);
        return;
    }
    r->topology = get_str(rd, root, "topology", &ok);
    r->source = get_str(rd, root, "source", &ok);
    json_t *cfg = need(rd, root, "config");
    if (cfg)
        read_config(rd, cfg);
    json_t *env = need(rd, root, "environment");
    if (env)
        read_env(rd, env, &r->env);
    rd->where[0] = '\0';

    json_t *layers = need(rd, root, "layers");
    json_t *markers = need(rd, root, "markers");
    if (rd->st)
        return;
    if (!json_is_array(layers) || !json_is_array(markers)) {
        fail(rd, NTP_STATUS_PARSE_ERROR, "%s", "'layers' and 'markers' must be arrays");
        return;
    }
    size_t nl = json_array_size(layers), nm = json_array_size(markers);
    r->layers = calloc(nl + 1, sizeof *r->layers);
    r->markers = calloc(nm + 1, sizeof *r->markers);
    if (!r->layers || !r->markers) {
        fail(rd, NTP_STATUS_OUT_OF_MEMORY, "%s", "out of memory");
        return;
    }
    for (size_t i = 0; i < nl && !rd->st; i++) {
        snprintf(rd->where, sizeof rd->where, "layers[%zu]", i);
        read_layer(rd, json_array_get(layers, i), &r->layers[i]);
    }
    r->n_layers = (int)nl;
    if (!json_object_get(cfg, "fuse"))
        for (int i = 0; i < r->n_layers; i++)
            r->fused |= r->layers[i].fused;
    for (size_t i = 0; i < nm && !rd->st; i++) {
        snprintf(rd->where, sizeof rd->where, "markers[%zu]", i);
        read_marker(rd, json_array_get(markers, i), &r->markers[i]);
    }
    r->n_markers = (int)nm;
    rd->where[0] = '\0';

    json_t *e2e = need(rd, root, "end_to_end");
    if (e2e) {
        snprintf(rd->where, sizeof rd->where, "end_to_end");
        get_stats(rd, e2e, &r->end_to_end_ms);
        r->throughput = get_num(rd, e2e, "throughput_per_s");
        r->latency_ms = get_num(rd, e2e, "latency_ms");
    }
    json_t *sum = need(rd, root, "layer_sum");
    if (sum) {
        snprintf(rd->where, sizeof rd->where, "layer_sum");
        get_stats(rd, sum, &r->layer_sum_ms);
    }
    rd->where[0] = '\0';
    r->overhead_fraction = get_num(rd, root, "overhead_fraction");
    r->overhead_per_layer_us = get_num(rd, root, "overhead_per_layer_us");
    r->prepare_ms = get_num(rd, root, "prepare_ms");
    r->flops = get_int(rd, root, "flops");
    json_t *mem = need(rd, root, "memory");
    if (mem) {
        snprintf(rd->where, sizeof rd->where, "memory");
        r->memory.weight_bytes = get_int(rd, mem, "weight_bytes");
        r->memory.arena_bytes = get_int(rd, mem, "arena_bytes");
        r->memory.workspace_bytes = get_int(rd, mem, "workspace_bytes");
        r->memory.peak_rss_bytes = get_int(rd, mem, "peak_rss_bytes");
        r->memory.minor_faults = get_int(rd, mem, "minor_faults");
        r->memory.major_faults = get_int(rd, mem, "major_faults");
        /* Only runs on an accelerator have device memory. */
        json_t *dev = json_object_get(mem, "device");
        if (json_is_object(dev)) {
            snprintf(rd->where, sizeof rd->where, "memory.device");
            r->memory.device_weight_bytes = get_int(rd, dev, "weight_bytes");
            r->memory.device_activation_bytes = get_int(rd, dev, "activation_bytes");
            r->memory.device_workspace_bytes = get_int(rd, dev, "workspace_bytes");
            r->memory.device_peak_bytes = get_int(rd, dev, "peak_bytes");
        }
        rd->where[0] = '\0';
    }
    json_t *warnings = need(rd, root, "warnings");
    if (warnings && json_is_array(warnings)) {
        size_t n = json_array_size(warnings);
        r->warnings = calloc(n + 1, sizeof *r->warnings);
        if (!r->warnings) {
            fail(rd, NTP_STATUS_OUT_OF_MEMORY, "%s", "out of memory");
            return;
        }
        /* Warnings are freed one by one by ntp_run_result_free, so they
         * are copies of their own rather than kept strings. */
        for (size_t i = 0; i < n; i++) {
            json_t *w = json_array_get(warnings, i);
            if (json_is_string(w) &&
                (r->warnings[r->n_warnings] = ntp__strdup(json_string_value(w))))
                r->n_warnings++;
        }
    }
    read_roofline(json_object_get(root, "roofline"), &r->roofline);
    read_prediction(rd, json_object_get(root, "prediction"), &r->prediction);
    read_accuracy(rd, json_object_get(root, "accuracy"));
    read_torch_script(rd, json_object_get(root, "torch_script"));
    read_sweep(rd, json_object_get(root, "sweep"), r);
    (void)ok;
}

ntp_status ntp_run_result_parse(ntp_ctx *ctx, const char *json, size_t len, const char *name,
                                ntp_run_result **out)
{
    *out = NULL;
    if (!json)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_run_result_parse: no text");
    json_error_t err;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR, "%s:%d:%d: not valid JSON: %s",
                          name ? name : "report", err.line, err.column, err.text);
    reader rd = {.ctx = ctx, .name = name ? name : "report", .r = calloc(1, sizeof *rd.r)};
    if (!rd.r) {
        json_decref(root);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    read_root(&rd, root);
    json_decref(root);
    if (rd.st) {
        ntp_run_result_free(rd.r);
        return rd.st;
    }
    *out = rd.r;
    return NTP_STATUS_OK;
}

ntp_status ntp_run_result_load(ntp_ctx *ctx, const char *path, ntp_run_result **out)
{
    *out = NULL;
    const char *why;
    FILE *f = ntp__file_fopen_read(path, NULL, &why); /* never blocks; regular files only */
    if (!f)
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: cannot open: %s", path, why);
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 65536 > cap) {
            cap = cap ? 2 * cap : 262144;
            char *p = realloc(buf, cap);
            if (!p) {
                free(buf);
                fclose(f);
                return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
            }
            buf = p;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: read error", path);
    }
    ntp_status st = ntp_run_result_parse(ctx, buf, len, path, out);
    free(buf);
    return st;
}
