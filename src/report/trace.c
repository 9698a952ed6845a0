/* Chrome trace-event JSON (docs/report-format.md#trace): what Perfetto and
 * chrome://tracing open.
 *
 * Every measured iteration is an "X" (complete) event on thread 1 with its
 * layers as complete events nested inside it; markers are complete events
 * on thread 2 (and 3, ... when two markers overlap without nesting, which
 * slices on one thread may not do).
 *
 * Times are rounded to whole nanoseconds once, and every enclosing event is
 * computed from the rounded times of what it encloses, so containment holds
 * exactly in the file, not just up to floating-point error. The file is
 * streamed rather than built as a jansson tree: a trace of 1,000 iterations
 * of a 500-layer model has half a million events. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "report-impl.h"

enum ev_kind { EV_ITERATION, EV_LAYER, EV_MARKER };

typedef struct event {
    int64_t ts_ns, dur_ns;
    int tid;
    int kind; /* enum ev_kind */
    int iter;
    int index; /* layer or marker index */
} event;

/* Parents first: earlier start, then longer duration, then thread. */
static int cmp_event(const void *pa, const void *pb)
{
    const event *a = pa, *b = pb;
    if (a->ts_ns != b->ts_ns)
        return a->ts_ns < b->ts_ns ? -1 : 1;
    if (a->dur_ns != b->dur_ns)
        return a->dur_ns > b->dur_ns ? -1 : 1;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* Length of the valid UTF-8 sequence at s, 0 if it is not one. */
static int utf8_len(const unsigned char *s)
{
    int n = s[0] >= 0xF0 && s[0] <= 0xF4  ? 4
            : s[0] >= 0xE0                ? 3
            : s[0] >= 0xC2 && s[0] < 0xE0 ? 2
                                          : 0;
    if (s[0] >= 0xF5)
        n = 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

/* A JSON string literal; invalid UTF-8 bytes become '?'. */
static void put_jstr(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    fputc('"', f);
    while (*p) {
        if (*p == '"' || *p == '\\') {
            fputc('\\', f);
            fputc(*p++, f);
        } else if (*p < 0x20 || *p == 0x7F) {
            fprintf(f, "\\u%04x", *p++);
        } else if (*p < 0x80) {
            fputc(*p++, f);
        } else {
            int n = utf8_len(p);
            if (n == 0) {
                fputc('?', f);
                p++;
            } else {
                fwrite(p, 1, (size_t)n, f);
                p += n;
            }
        }
    }
    fputc('"', f);
}

/* Microseconds with exactly three decimals, printed from integer ns so no
 * rounding happens on the way out. */
static void put_us(FILE *f, int64_t ns)
{
    const char *sign = ns < 0 ? "-" : "";
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    fprintf(f, "%s%" PRIu64 ".%03" PRIu64, sign, a / 1000, a % 1000);
}

static bool to_ns(double us, int64_t *ns)
{
    if (!isfinite(us) || fabs(us) > 9.0e15)
        return false;
    *ns = (int64_t)llround(us * 1000.0);
    return true;
}

/* Markers go to the first lane where they nest with every marker already
 * there (disjoint or one inside the other, by layer range). */
static int *marker_lanes(const ntp_run_result *r, int *n_lanes)
{
    int *lane = calloc((size_t)r->n_markers + 1, sizeof *lane);
    *n_lanes = 0;
    if (!lane)
        return NULL;
    for (int i = 0; i < r->n_markers; i++) {
        const ntp_marker_result *a = &r->markers[i];
        for (int l = 0;; l++) {
            bool fits = true;
            for (int j = 0; j < i && fits; j++) {
                const ntp_marker_result *b = &r->markers[j];
                if (lane[j] != l)
                    continue;
                bool disjoint = a->last < b->first || b->last < a->first;
                bool nested = (a->first >= b->first && a->last <= b->last) ||
                              (b->first >= a->first && b->last <= a->last);
                fits = disjoint || nested;
            }
            if (fits) {
                lane[i] = l;
                if (l + 1 > *n_lanes)
                    *n_lanes = l + 1;
                break;
            }
        }
    }
    return lane;
}

/* Events are written one per line, separated by commas. */
static void put_sep(FILE *f, bool *first)
{
    fputs(*first ? "\n" : ",\n", f);
    *first = false;
}

static void put_meta(FILE *f, bool *first, const char *what, int tid, const char *name)
{
    put_sep(f, first);
    fprintf(f, "{\"name\": \"%s\", \"ph\": \"M\", \"pid\": 1, \"tid\": %d, \"args\": {\"name\": ",
            what, tid);
    put_jstr(f, name);
    fputs("}}", f);
}

static void put_event(FILE *f, const ntp_run_result *r, const event *e, const char *const *shapes)
{
    char name[48];
    fputs("{\"name\": ", f);
    if (e->kind == EV_ITERATION) {
        snprintf(name, sizeof name, "iteration %d", e->iter);
        put_jstr(f, name);
        fputs(", \"cat\": \"iteration\"", f);
    } else if (e->kind == EV_LAYER) {
        put_jstr(f, r->layers[e->index].name);
        fputs(", \"cat\": ", f);
        put_jstr(f, r->layers[e->index].type);
    } else {
        put_jstr(f, r->markers[e->index].name);
        fputs(", \"cat\": \"marker\"", f);
    }
    fputs(", \"ph\": \"X\", \"ts\": ", f);
    put_us(f, e->ts_ns);
    fputs(", \"dur\": ", f);
    put_us(f, e->dur_ns);
    fprintf(f, ", \"pid\": 1, \"tid\": %d, \"args\": {\"iteration\": %d", e->tid, e->iter);
    if (e->kind == EV_LAYER) {
        fputs(", \"type\": ", f);
        put_jstr(f, r->layers[e->index].type);
        fputs(", \"shape\": ", f);
        put_jstr(f, shapes[e->index]);
        if (r->layers[e->index].backend) {
            fputs(", \"backend\": ", f);
            put_jstr(f, r->layers[e->index].backend);
        }
    } else if (e->kind == EV_MARKER) {
        fprintf(f, ", \"first\": %d, \"last\": %d", r->markers[e->index].first,
                r->markers[e->index].last);
    }
    fputs("}}", f);
}

static void put_other(FILE *f, const char *key, const char *value, bool last)
{
    fputs("  ", f);
    put_jstr(f, key);
    fputs(": ", f);
    put_jstr(f, value);
    fputs(last ? "\n" : ",\n", f);
}

/* Collect the events of every iteration; returns the count, -1 when out
 * of memory. */
static int64_t collect(const ntp_run_result *r, const int *lane, event **out)
{
    size_t per_iter = (size_t)r->n_layers + (size_t)r->n_markers + 1;
    size_t cap = per_iter * (size_t)r->n_trace;
    if (r->n_trace > 0 && cap / (size_t)r->n_trace != per_iter)
        return -1;
    event *ev = malloc((cap + 1) * sizeof *ev);
    int64_t *start = malloc(((size_t)r->n_layers + 1) * sizeof *start);
    int64_t *end = malloc(((size_t)r->n_layers + 1) * sizeof *end);
    bool *valid = malloc((size_t)r->n_layers + 1);
    if (!ev || !start || !end || !valid) {
        free(ev);
        free(start);
        free(end);
        free(valid);
        return -1;
    }
    size_t n = 0;
    for (int it = 0; it < r->n_trace; it++) {
        const ntp_trace_iter *t = &r->trace[it];
        if (!t->start_us || !t->end_us)
            continue;
        int64_t it_lo = INT64_MAX, it_hi = INT64_MIN;
        for (int l = 0; l < r->n_layers; l++) {
            /* A layer without a time in this iteration (fused away, or not
             * run) gets no slice rather than a made-up one. */
            valid[l] = to_ns(t->start_us[l], &start[l]) && to_ns(t->end_us[l], &end[l]) &&
                       end[l] >= start[l];
            if (!valid[l])
                continue;
            ev[n++] = (event){start[l], end[l] - start[l], 1, EV_LAYER, it, l};
            if (start[l] < it_lo)
                it_lo = start[l];
            if (end[l] > it_hi)
                it_hi = end[l];
        }
        if (it_lo > it_hi)
            continue;
        ev[n++] = (event){it_lo, it_hi - it_lo, 1, EV_ITERATION, it, it};
        for (int m = 0; m < r->n_markers; m++) {
            int a = r->markers[m].first < 0 ? 0 : r->markers[m].first;
            int b = r->markers[m].last >= r->n_layers ? r->n_layers - 1 : r->markers[m].last;
            int64_t lo = INT64_MAX, hi = INT64_MIN;
            for (int l = a; l <= b; l++)
                if (valid[l]) {
                    lo = start[l] < lo ? start[l] : lo;
                    hi = end[l] > hi ? end[l] : hi;
                }
            if (lo <= hi)
                ev[n++] = (event){lo, hi - lo, 2 + lane[m], EV_MARKER, it, m};
        }
    }
    free(start);
    free(end);
    free(valid);
    qsort(ev, n, sizeof *ev, cmp_event);
    /* The clock's origin is the start of the measurement, which an
     * end-to-end iteration precedes: the first event starts at 0 instead,
     * as the viewers expect. Shifting whole nanoseconds keeps nesting exact. */
    int64_t origin = n > 0 ? ev[0].ts_ns : 0;
    for (size_t i = 0; i < n; i++)
        ev[i].ts_ns -= origin;
    *out = ev;
    return (int64_t)n;
}

ntp_status ntp_report_write_run_trace(ntp_ctx *ctx, const ntp_run_result *r, FILE *f)
{
    if (!r || !f || (r->n_layers > 0 && !r->layers) || (r->n_markers > 0 && !r->markers))
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_run_trace: missing result or stream");
    if (r->n_trace <= 0 || !r->trace)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "the run kept no per-iteration layer times for a trace "
                          "(run with keep_trace set)");
    int n_lanes = 0;
    int *lane = marker_lanes(r, &n_lanes);
    char **shapes = calloc((size_t)r->n_layers + 1, sizeof *shapes);
    event *ev = NULL;
    int64_t n_ev = -1;
    bool ok = lane && shapes;
    for (int l = 0; ok && l < r->n_layers; l++) {
        char buf[192];
        ntp__shape_x(&r->layers[l].output_shape, buf, sizeof buf);
        ok = (shapes[l] = ntp__strdup(buf)) != NULL;
    }
    if (ok)
        n_ev = collect(r, lane, &ev);
    if (n_ev < 0) {
        if (shapes)
            for (int l = 0; l < r->n_layers; l++)
                free(shapes[l]);
        free(shapes);
        free(lane);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY,
                          "out of memory writing the trace of %d iterations", r->n_trace);
    }

    char title[256];
    snprintf(title, sizeof title, "ntprof %s on %s", r->topology ? r->topology : "?",
             r->backend ? r->backend : "?");
    bool first = true;
    fputs("{\"traceEvents\": [", f);
    put_meta(f, &first, "process_name", 1, title);
    put_meta(f, &first, "thread_name", 1, "layers");
    for (int l = 0; l < n_lanes; l++)
        put_meta(f, &first, "thread_name", 2 + l, l == 0 ? "markers" : "markers (overlapping)");
    for (int64_t i = 0; i < n_ev; i++) {
        put_sep(f, &first);
        put_event(f, r, &ev[i], (const char *const *)shapes);
    }
    fputs("\n],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {\n", f);
    char num[32];
    put_other(f, "topology", r->topology, false);
    put_other(f, "source", r->source, false);
    put_other(f, "backend", r->backend, false);
    put_other(f, "precision", ntp_dtype_name(r->precision), false);
    snprintf(num, sizeof num, "%" PRId64, r->batch);
    put_other(f, "batch", num, false);
    snprintf(num, sizeof num, "%d", r->threads);
    put_other(f, "threads", num, false);
    snprintf(num, sizeof num, "%d", r->n_trace);
    put_other(f, "iterations", num, false);
    put_other(f, "cpu_model", r->env.cpu_model, false);
    put_other(f, "hostname", r->env.hostname, false);
    put_other(f, "ntprof_version", r->env.ntprof_version, false);
    put_other(f, "git_revision", r->env.git_revision, false);
    put_other(f, "timestamp", r->env.timestamp, true);
    fputs("}\n}\n", f);

    free(ev);
    for (int l = 0; l < r->n_layers; l++)
        free(shapes[l]);
    free(shapes);
    free(lane);
    return ntp__check_stream(ctx, f, "trace");
}
