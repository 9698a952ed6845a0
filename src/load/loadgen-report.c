/* The load generator's reports (docs/load.md#reports): a table, JSON of
 * kind "load" (schema/load.schema.json), CSV and a Chrome trace. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "core/writers-impl.h"
#include "loadgen-impl.h"
#include "loadgen-result-impl.h"

static const char *yes(bool b)
{
    return b ? "yes" : "NO";
}

static ntp_status write_table(ntp_ctx *ctx, const ntp_loadgen_result *r, FILE *f)
{
    ntp__put_linef(f, "%s: %s scenario on %s, %d instance%s x %d thread%s%s, max batch %d%s",
                   r->topology ? r->topology : "?", ntp_loadgen_scenario_name(r->scenario),
                   r->backend ? r->backend : "?", r->instances, r->instances == 1 ? "" : "s",
                   r->threads_per_instance, r->threads_per_instance == 1 ? "" : "s",
                   r->pinned ? " (pinned)" : "", r->max_batch, "");
    if (r->max_batch > 1)
        ntp__put_linef(f, "  batch timeout %g us", r->batch_timeout_us);
    ntp__put_linef(
        f, "  service time unloaded: %.3f ms at batch 1, %.3f ms at batch %d; prepare %.1f ms",
        r->service_ms[0], r->service_ms[1], r->max_batch, r->prepare_ms);
    ntp__put_line(f, "");
    if (r->scenario == NTP_LOADGEN_SERVER)
        ntp__put_linef(f, "  offered      %10.1f queries/s (arrivals drawn at %.1f)",
                       r->qps_offered, r->gen.qps_drawn);
    ntp__put_linef(f, "  achieved     %10.1f queries/s, %.1f samples/s", r->qps_achieved,
                   r->samples_per_s);
    ntp__put_linef(f, "  queries      %10lld (%lld samples) in %.3f s", (long long)r->queries,
                   (long long)r->samples, r->elapsed_s);
    ntp__put_linef(f, "  latency ms   p50 %.3f  p90 %.3f  p95 %.3f  p99 %.3f  p99.9 %.3f",
                   r->latency_ms.p50, r->latency_ms.p90, r->latency_ms.p95, r->latency_ms.p99,
                   r->latency_ms.p999);
    ntp__put_linef(f, "               mean %.3f  min %.3f  max %.3f", r->latency_ms.mean,
                   r->latency_ms.min, r->latency_ms.max);
    if (r->searched) {
        ntp__put_linef(f, "  max QPS      %10.1f with p99 <= %g ms (%d runs searched)", r->max_qps,
                       r->latency_bound_ms, r->n_points);
        for (int i = 0; i < r->n_points; i++)
            ntp__put_linef(f, "    %10.1f QPS: p99 %.3f ms, mean %.3f ms %s", r->points[i].qps,
                           r->points[i].p99_ms, r->points[i].mean_ms,
                           r->points[i].valid ? "valid" : "invalid");
    }
    ntp__put_line(f, "");
    ntp__put_linef(f, "  result       %s", r->valid ? "VALID" : "INVALID");
    if (r->scenario == NTP_LOADGEN_SERVER)
        ntp__put_linef(f, "    p99 %.3f ms within %g ms: %s (%lld queries over it)",
                       r->latency_ms.p99, r->latency_bound_ms, yes(r->bound_met),
                       (long long)r->overlatency);
    ntp__put_linef(f, "    min duration %g s: %s;  min queries %lld: %s", r->duration_s,
                   yes(r->min_duration_met), (long long)r->min_queries, yes(r->min_queries_met));
    if (r->percentile > 0) {
        if (r->early_stopping_met && r->scenario != NTP_LOADGEN_SERVER)
            ntp__put_linef(f, "    early stopping: yes; p%g estimate %.3f ms (99%% confidence)",
                           r->percentile * 100, r->early_stopping_ms);
        else
            ntp__put_linef(f, "    early stopping: %s; needs %lld queries, has %lld",
                           yes(r->early_stopping_met), (long long)r->early_stopping_needed,
                           (long long)r->queries);
    }
    ntp__put_line(f, "");
    char line[NTP_TABLE_WIDTH * 2];
    int n = snprintf(line, sizeof line, "  batches     ");
    for (int b = 1; b <= r->max_batch && n < (int)sizeof line - 24; b++)
        if (r->batch_hist[b])
            n += snprintf(line + n, sizeof line - (size_t)n, " %d:%lld", b,
                          (long long)r->batch_hist[b]);
    ntp__put_line(f, line);
    n = snprintf(line, sizeof line, "  utilisation ");
    for (int i = 0; i < r->instances && n < (int)sizeof line - 16; i++)
        n += snprintf(line + n, sizeof line - (size_t)n, " %.0f%%", 100 * r->utilisation[i]);
    ntp__put_line(f, line);
    ntp__put_linef(f, "  queue depth  max %d samples", r->max_depth);
    ntp__put_linef(f, "  generator    %.2f us per query issued%s", r->gen.overhead_us, "");
    ntp__put_linef(f,
                   "               %lld of %lld issues woke a sleeping instance, %.2f us each; "
                   "idle instances poll %g us",
                   (long long)r->gen.wakes, (long long)r->queries, r->gen.wake_us, r->gen.poll_us);
    ntp__put_linef(f,
                   "               CPU spent spinning per query: generator %.2f us, "
                   "instances polling %.2f us",
                   r->gen.generator_spin_us, r->gen.instance_poll_us);
    if (r->scenario == NTP_LOADGEN_SERVER) {
        ntp__put_linef(f, "               lateness mean %.2f us, p99 %.2f us, max %.1f us",
                       r->gen.lateness_us, r->gen.lateness_p99_us, r->gen.lateness_max_us);
        ntp__put_linef(f, "               margin %g us; sleeps overslept %.2f us mean, %.2f us p99",
                       r->gen.margin_us, r->gen.oversleep_mean_us, r->gen.oversleep_p99_us);
        char cpu[32] = "not pinned";
        if (r->gen.generator_cpu >= 0)
            snprintf(cpu, sizeof cpu, "on CPU %d", r->gen.generator_cpu);
        ntp__put_linef(f, "               %lld of %lld sleeps past the deadline; %s, slack %lld ns",
                       (long long)r->gen.late_wakes, (long long)r->gen.sleeps, cpu,
                       (long long)r->gen.timer_slack_ns);
    }
    ntp__put_linef(f, "  machine      %s, %d CPUs, load average %.2f", r->cpu_model, r->cpus,
                   r->load_average);
    for (int i = 0; i < r->n_warnings; i++)
        ntp__put_wrapped(f, "warning: ", r->warnings[i]);
    return ntp__check_stream(ctx, f, "load report");
}

static json_t *jint(int64_t v)
{
    return json_integer((json_int_t)v);
}

static ntp_status write_json(ntp_ctx *ctx, const ntp_loadgen_result *r, FILE *f)
{
    bool ok = true;
    json_t *root = json_object();
    ntp__jset(&ok, root, "kind", json_string("load"));
    ntp__jset(&ok, root, "schema_version", json_integer(1));
    ntp__jset(&ok, root, "topology", ntp__json_str(r->topology));
    ntp__jset(&ok, root, "source", ntp__json_str(r->source));
    ntp__jset(&ok, root, "backend", ntp__json_str(r->backend));
    ntp__jset(&ok, root, "scenario", json_string(ntp_loadgen_scenario_name(r->scenario)));
    ntp__jset(&ok, root, "instances", json_integer(r->instances));
    ntp__jset(&ok, root, "threads_per_instance", json_integer(r->threads_per_instance));
    ntp__jset(&ok, root, "pinned", json_boolean(r->pinned));
    ntp__jset(&ok, root, "max_batch", json_integer(r->max_batch));
    ntp__jset(&ok, root, "batch_timeout_us", ntp__json_num(r->batch_timeout_us));
    ntp__jset(&ok, root, "samples_per_query", json_integer(r->samples_per_query));
    ntp__jset(&ok, root, "seed", jint((int64_t)r->seed));
    ntp__jset(&ok, root, "min_duration_s", ntp__json_num(r->duration_s));
    ntp__jset(&ok, root, "min_queries", jint(r->min_queries));
    ntp__jset(&ok, root, "latency_bound_ms",
              r->scenario == NTP_LOADGEN_SERVER ? ntp__json_num(r->latency_bound_ms) : json_null());
    ntp__jset(&ok, root, "qps_offered", ntp__json_num(r->qps_offered));
    ntp__jset(&ok, root, "qps_achieved", ntp__json_num(r->qps_achieved));
    ntp__jset(&ok, root, "samples_per_s", ntp__json_num(r->samples_per_s));
    ntp__jset(&ok, root, "queries", jint(r->queries));
    ntp__jset(&ok, root, "samples", jint(r->samples));
    ntp__jset(&ok, root, "elapsed_s", ntp__json_num(r->elapsed_s));
    json_t *lat = json_object();
    ntp__jset(&ok, lat, "p50", ntp__json_num(r->latency_ms.p50));
    ntp__jset(&ok, lat, "p90", ntp__json_num(r->latency_ms.p90));
    ntp__jset(&ok, lat, "p95", ntp__json_num(r->latency_ms.p95));
    ntp__jset(&ok, lat, "p99", ntp__json_num(r->latency_ms.p99));
    ntp__jset(&ok, lat, "p999", ntp__json_num(r->latency_ms.p999));
    ntp__jset(&ok, lat, "max", ntp__json_num(r->latency_ms.max));
    ntp__jset(&ok, lat, "mean", ntp__json_num(r->latency_ms.mean));
    ntp__jset(&ok, lat, "min", ntp__json_num(r->latency_ms.min));
    ntp__jset(&ok, root, "latency_ms", lat);
    ntp__jset(&ok, root, "percentile",
              r->percentile > 0 ? ntp__json_num(r->percentile) : json_null());
    ntp__jset(&ok, root, "service_ms",
              json_pack("{s:o,s:o}", "batch_1", ntp__json_num(r->service_ms[0]), "max_batch",
                        ntp__json_num(r->service_ms[1])));
    ntp__jset(&ok, root, "prepare_ms", ntp__json_num(r->prepare_ms));
    ntp__jset(&ok, root, "valid", json_boolean(r->valid));
    json_t *v = json_object();
    ntp__jset(&ok, v, "min_duration", json_boolean(r->min_duration_met));
    ntp__jset(&ok, v, "min_queries", json_boolean(r->min_queries_met));
    ntp__jset(&ok, v, "latency_bound", json_boolean(r->bound_met));
    ntp__jset(&ok, v, "early_stopping", json_boolean(r->early_stopping_met));
    ntp__jset(&ok, v, "early_stopping_queries_needed", jint(r->early_stopping_needed));
    ntp__jset(&ok, v, "early_stopping_estimate_ms",
              r->percentile > 0 && r->scenario != NTP_LOADGEN_SERVER && r->early_stopping_met
                  ? ntp__json_num(r->early_stopping_ms)
                  : json_null());
    ntp__jset(&ok, v, "overlatency_queries", jint(r->overlatency));
    ntp__jset(&ok, root, "validity", v);
    ntp__jset(&ok, root, "interrupted", json_boolean(r->interrupted));
    if (r->searched) {
        ntp__jset(&ok, root, "max_qps", ntp__json_num(r->max_qps));
        json_t *pts = json_array();
        for (int i = 0; i < r->n_points; i++)
            ntp__jpush(&ok, pts,
                       json_pack("{s:o,s:o,s:o,s:b,s:o}", "qps", ntp__json_num(r->points[i].qps),
                                 "p99_ms", ntp__json_num(r->points[i].p99_ms), "mean_ms",
                                 ntp__json_num(r->points[i].mean_ms), "valid", r->points[i].valid,
                                 "p50_ms", ntp__json_num(r->points[i].p50_ms)));
        ntp__jset(&ok, root, "search", pts);
    }
    json_t *hist = json_object();
    for (int b = 1; b <= r->max_batch; b++)
        if (r->batch_hist[b]) {
            char k[16];
            snprintf(k, sizeof k, "%d", b);
            ntp__jset(&ok, hist, k, jint(r->batch_hist[b]));
        }
    ntp__jset(&ok, root, "batch_histogram", hist);
    json_t *util = json_array();
    for (int i = 0; i < r->instances; i++)
        ntp__jpush(&ok, util, ntp__json_num(r->utilisation[i]));
    ntp__jset(&ok, root, "utilisation", util);
    /* Queue depth over time, thinned to at most 1000 points (the maximum
     * is reported apart). */
    json_t *depth = json_array();
    int step = r->n_depth > 1000 ? (r->n_depth + 999) / 1000 : 1;
    for (int i = 0; i < r->n_depth; i += step)
        ntp__jpush(&ok, depth, json_pack("[o,i]", ntp__json_num(r->depth_t_s[i]), r->depth[i]));
    ntp__jset(&ok, root, "queue_depth", depth);
    ntp__jset(&ok, root, "max_queue_depth", json_integer(r->max_depth));
    json_t *gen = json_object();
    ntp__jset(&ok, gen, "overhead_us", ntp__json_num(r->gen.overhead_us));
    ntp__jset(&ok, gen, "lateness_mean_us",
              r->scenario == NTP_LOADGEN_SERVER ? ntp__json_num(r->gen.lateness_us) : json_null());
    ntp__jset(&ok, gen, "lateness_max_us",
              r->scenario == NTP_LOADGEN_SERVER ? ntp__json_num(r->gen.lateness_max_us)
                                                : json_null());
    bool sv = r->scenario == NTP_LOADGEN_SERVER;
    ntp__jset(&ok, gen, "lateness_p99_us",
              sv ? ntp__json_num(r->gen.lateness_p99_us) : json_null());
    ntp__jset(&ok, gen, "margin_us", ntp__json_num(r->gen.margin_us));
    ntp__jset(&ok, gen, "oversleep_mean_us",
              sv ? ntp__json_num(r->gen.oversleep_mean_us) : json_null());
    ntp__jset(&ok, gen, "oversleep_p99_us",
              sv ? ntp__json_num(r->gen.oversleep_p99_us) : json_null());
    ntp__jset(&ok, gen, "sleeps", jint(r->gen.sleeps));
    ntp__jset(&ok, gen, "late_wakes", jint(r->gen.late_wakes));
    ntp__jset(&ok, gen, "cpu",
              r->gen.generator_cpu >= 0 ? json_integer(r->gen.generator_cpu) : json_null());
    ntp__jset(&ok, gen, "timer_slack_ns", jint(r->gen.timer_slack_ns));
    ntp__jset(&ok, gen, "qps_drawn", sv ? ntp__json_num(r->gen.qps_drawn) : json_null());
    ntp__jset(&ok, gen, "wakes", jint(r->gen.wakes));
    ntp__jset(&ok, gen, "wake_us", ntp__json_num(r->gen.wake_us));
    ntp__jset(&ok, gen, "poll_us", ntp__json_num(r->gen.poll_us));
    ntp__jset(&ok, gen, "spin_cpu_us", ntp__json_num(r->gen.generator_spin_us));
    ntp__jset(&ok, gen, "poll_cpu_us", ntp__json_num(r->gen.instance_poll_us));
    ntp__jset(&ok, root, "generator", gen);
    json_t *m = json_object();
    ntp__jset(&ok, m, "cpu_model", ntp__json_str(r->cpu_model));
    ntp__jset(&ok, m, "cpus", json_integer(r->cpus));
    ntp__jset(&ok, m, "load_average", ntp__json_num(r->load_average));
    ntp__jset(&ok, m, "contention_measured", json_boolean(r->contention.measured));
    ntp__jset(&ok, m, "other", ntp__json_num(r->contention.other));
    ntp__jset(&ok, m, "steal", ntp__json_num(r->contention.steal));
    ntp__jset(&ok, m, "distorted", json_boolean(r->contention.distorted));
    ntp__jset(&ok, root, "machine", m);
    json_t *w = json_array();
    for (int i = 0; i < r->n_warnings; i++)
        ntp__jpush(&ok, w, ntp__json_str(r->warnings[i]));
    ntp__jset(&ok, root, "warnings", w);
    return ntp__json_finish(ctx, root, ok, f, "load report");
}

/* A summary row, then one row per query. */
static ntp_status write_csv(ntp_ctx *ctx, const ntp_loadgen_result *r, FILE *f)
{
    fputs("scenario,qps_offered,qps_achieved,samples_per_s,queries,valid,p50_ms,p90_ms,p95_ms,"
          "p99_ms,p999_ms,max_ms,mean_ms,max_qps\n",
          f);
    ntp__csv_str(f, ntp_loadgen_scenario_name(r->scenario));
    double vals[] = {r->qps_offered, r->qps_achieved, r->samples_per_s};
    for (size_t i = 0; i < 3; i++) {
        ntp__csv_sep(f);
        ntp__csv_num(f, vals[i]);
    }
    ntp__csv_sep(f);
    ntp__csv_int(f, r->queries);
    ntp__csv_sep(f);
    ntp__csv_bool(f, r->valid);
    double l[] = {r->latency_ms.p50,  r->latency_ms.p90, r->latency_ms.p95, r->latency_ms.p99,
                  r->latency_ms.p999, r->latency_ms.max, r->latency_ms.mean};
    for (size_t i = 0; i < 7; i++) {
        ntp__csv_sep(f);
        ntp__csv_num(f, l[i]);
    }
    ntp__csv_sep(f);
    if (r->searched)
        ntp__csv_num(f, r->max_qps);
    fputs("\n\nquery,scheduled_us,issued_us,batched_us,start_us,done_us,latency_ms,samples,batch,"
          "instance\n",
          f);
    for (int64_t i = 0; i < r->queries; i++) {
        const ntp_loadgen_query *q = &r->q[i];
        ntp__csv_int(f, i);
        double t[] = {q->scheduled_us, q->issued_us, q->batched_us,
                      q->start_us,     q->done_us,   (q->done_us - q->scheduled_us) / 1e3};
        for (size_t k = 0; k < 6; k++) {
            ntp__csv_sep(f);
            ntp__csv_num(f, t[k]);
        }
        fprintf(f, ",%d,%d,%d\n", q->samples, q->batch, q->instance);
    }
    return ntp__check_stream(ctx, f, "load CSV");
}

ntp_status ntp_report_write_load(ntp_ctx *ctx, const ntp_loadgen_result *r, ntp_format fmt, FILE *f)
{
    switch (fmt) {
    case NTP_FORMAT_TABLE: return write_table(ctx, r, f);
    case NTP_FORMAT_JSON: return write_json(ctx, r, f);
    case NTP_FORMAT_CSV: return write_csv(ctx, r, f);
    }
    return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "unknown report format %d", (int)fmt);
}

/* Chrome's trace event format: complete events ("ph":"X") in µs. Each
 * query is a span on its instance's track (tid) from arrival to completion,
 * with its phases inside: queued (arrival to batching), batched (batching
 * to the start of the batch's computation) and computed. Spans of
 * different queries on one instance overlap under load: the viewer stacks
 * them. */
ntp_status ntp_report_write_load_trace(ntp_ctx *ctx, const ntp_loadgen_result *r, FILE *f)
{
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", f);
    fprintf(
        f,
        "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"ntprof load %s\"}}",
        ntp_loadgen_scenario_name(r->scenario));
    for (int i = 0; i < r->instances; i++)
        fprintf(f,
                ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
                "\"args\":{\"name\":\"instance %d\"}}",
                i + 1, i);
    for (int64_t k = 0; k < r->queries; k++) {
        const ntp_loadgen_query *q = &r->q[k];
        int tid = q->instance + 1;
        fprintf(f,
                ",\n{\"name\":\"query %lld\",\"cat\":\"query\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,"
                "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"samples\":%d,\"batch\":%d,"
                "\"issued_us\":%.3f}}",
                (long long)k, tid, q->scheduled_us, q->done_us - q->scheduled_us, q->samples,
                q->batch, q->issued_us);
        const char *names[] = {"queued", "batched", "computed"};
        double t[] = {q->scheduled_us, q->batched_us, q->start_us, q->done_us};
        for (int p = 0; p < 3; p++)
            fprintf(f,
                    ",\n{\"name\":\"%s\",\"cat\":\"phase\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,"
                    "\"ts\":%.3f,\"dur\":%.3f}",
                    names[p], tid, t[p], t[p + 1] - t[p] > 0 ? t[p + 1] - t[p] : 0);
    }
    fputs("\n]}\n", f);
    return ntp__check_stream(ctx, f, "load trace");
}
