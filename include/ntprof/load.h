/* ntprof: serving a topology under load, as MLPerf LoadGen measures it
 * (docs/load.md).
 *
 * A load generator issues queries to a pool of instances of the model (each
 * its own prepared plans and threads) by one of LoadGen's four scenarios,
 * queues them and forms batches itself, and times every query from its
 * arrival to its completion:
 *   single-stream  the next query (1 sample) is issued when the previous
 *                  one completes; the metric is the p90 latency;
 *   multi-stream   the same with queries of samples_per_query samples; p99;
 *   server         Poisson arrivals at `qps` from a seeded PRNG, scheduled
 *                  at absolute times; the latency is measured from the
 *                  scheduled arrival, so queueing counts; the run is valid
 *                  when the p99 is within latency_bound_ms;
 *   offline        every sample is available at once; samples per second.
 * A run also says, by LoadGen's early-stopping rule, whether it holds enough
 * queries to claim its percentile, and how many it would need. */
#ifndef NTPROF_LOAD_H
#define NTPROF_LOAD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "ntprof/api.h"
#include "ntprof/context.h"
#include "ntprof/graph.h"
#include "ntprof/report.h"
#include "ntprof/status.h"
#include "ntprof/store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ntp_loadgen_scenario {
    NTP_LOADGEN_SINGLE_STREAM,
    NTP_LOADGEN_MULTI_STREAM,
    NTP_LOADGEN_SERVER,
    NTP_LOADGEN_OFFLINE,
    NTP_LOADGEN_SCENARIO_COUNT
} ntp_loadgen_scenario;

/* "single-stream", "multi-stream", "server", "offline". */
NTP_API const char *ntp_loadgen_scenario_name(ntp_loadgen_scenario s);
/* The names above; NTP_STATUS_UNKNOWN_NAME otherwise. */
NTP_API ntp_status ntp_loadgen_scenario_parse(const char *s, ntp_loadgen_scenario *out);

typedef struct ntp_loadgen_opts {
    ntp_loadgen_scenario scenario;
    const char *backend;      /* NULL: the default backend */
    int instances;            /* copies of the model serving the queue (default 1) */
    int threads_per_instance; /* each instance's threads (default 1) */
    /* Pin each instance's threads to cores of its own (instances x threads
     * fit the CPUs this process may use; otherwise nothing is pinned and the
     * result warns). Default on. */
    bool pin;
    int max_batch;           /* dynamic batching: the most samples run at once (default 1) */
    double batch_timeout_us; /* how long a partial batch waits for more (default 0) */
    int samples_per_query;   /* multi-stream (default 8) */
    double qps;              /* server: offered queries per second */
    double
        latency_bound_ms; /* server: the p99 bound (0: LoadGen's 15 ms is not assumed: required) */
    bool find_max_qps;    /* server: search the largest QPS whose run is valid */
    /* The minimums of a run (LoadGen's defaults: 600 s; queries 1024
     * single-stream, 270336 multi-stream and server, 24576 offline
     * samples). Negative: the default. */
    double duration_s;
    int64_t min_queries;
    uint64_t seed; /* arrivals, weights and inputs (default 1) */
    int warmup;    /* queries run on every instance and batch size first (default 2) */
    /* The margin: sleep (clock_nanosleep to an absolute time, with the
     * thread's timer slack at 1 ns) until this long before an arrival, then
     * spin to it. Negative (the default): measured at the start of each run
     * from 32 test sleeps, twice the latest wake-up plus 10 µs, within 20 µs
     * to 2 ms. The report gives the margin used and how late the sleeps
     * woke (oversleep mean and p99): a margin above that p99 issues on
     * time. */
    double spin_us;
    /* Set (from a signal handler) to stop issuing: the queries issued so far
     * complete and are reported, and the result says it was interrupted. */
    const volatile int *stop;
    /* Progress for someone at a terminal (NULL: none): phase "prepare",
     * "warm-up", "run" or "search"; done of total queries. Called from the
     * generator thread, never inside a timed region of a worker. */
    void (*progress)(void *user, const char *phase, int64_t done, int64_t total);
    void *progress_user;
    /* How long an idle instance polls the queue before it sleeps, so that
     * an arrival within it costs the generator no wake (a system call) and
     * the instance no wake-up latency. Only where the instances and the
     * generator have cores of their own. Negative: the run's margin, at
     * most 200 µs; 0 (the default): never (docs/load.md#generator-cost). */
    double poll_us;
} ntp_loadgen_opts;

/* Set the defaults above (scenario single-stream, durations negative). */
NTP_API void ntp_loadgen_opts_default(ntp_loadgen_opts *o);

/* One query's life, in µs since the run's start. A query of several
 * samples is batched and computed when its last sample is. */
typedef struct ntp_loadgen_query {
    double scheduled_us; /* the arrival it was scheduled for */
    double issued_us;    /* when the generator put it in the queue */
    double batched_us;   /* when an instance took its (last) sample into a batch */
    double start_us;     /* when that batch started computing */
    double done_us;      /* when its last sample was computed */
    int samples;
    int batch;    /* size of the batch its last sample ran in */
    int instance; /* the instance that ran that batch */
} ntp_loadgen_query;

/* One point of a --find-max-qps search. */
typedef struct ntp_loadgen_point {
    double qps;
    double p99_ms;
    double mean_ms;
    bool valid;
    double p50_ms;
} ntp_loadgen_point;

#define NTP_LOADGEN_MAX_POINTS 32

/* The latency of the queries, from arrival to completion, ms. */
typedef struct ntp_loadgen_latency {
    double p50, p90, p95, p99, p999, max, mean, min;
} ntp_loadgen_latency;

/* Whether a run is valid, as LoadGen judges it, and its early stopping (a
 * binomial bound at 99% confidence). */
typedef struct ntp_loadgen_validity {
    bool valid;              /* every condition below that applies */
    bool min_duration_met;   /* ntp_loadgen_opts.duration_s */
    bool min_queries_met;    /* ntp_loadgen_opts.min_queries */
    bool bound_met;          /* server: the p99 within latency_bound_ms */
    bool early_stopping_met; /* enough queries to claim the percentile */
    /* The queries the run would need for its percentile (LoadGen's "need
     * to process at least" / "would need N more"); the percentile's upper
     * estimate, ms. */
    int64_t early_stopping_needed;
    double early_stopping_ms;
    int64_t overlatency; /* server: queries above the bound */
} ntp_loadgen_validity;

/* The generator's own cost and quality (docs/load.md#arrivals,
 * #generator-cost), µs unless named otherwise. */
typedef struct ntp_loadgen_generator {
    /* Mean time to issue a query (queueing it and waking an instance). */
    double overhead_us;
    /* Server: lateness of issues against their scheduled arrivals, mean,
     * max and p99. */
    double lateness_us, lateness_max_us, lateness_p99_us;
    /* The sleep-then-spin margin used; how far past its target (the
     * deadline less the margin) each sleep woke, mean and p99; the sleeps,
     * and those that woke past the deadline itself. */
    double margin_us;
    double oversleep_mean_us, oversleep_p99_us;
    int64_t sleeps, late_wakes;
    /* The CPU the issuing thread was pinned to (-1: not pinned) and its
     * timer slack while issuing (ns; the default is 50 µs). */
    int generator_cpu;
    int64_t timer_slack_ns;
    /* Server: the arrivals as drawn, their count over the last arrival's
     * time (qps_offered is the asked). */
    double qps_drawn;
    /* The issues that found an instance asleep and woke it, and the mean
     * time of those wakes; how long an idle instance polls the queue
     * before it sleeps (0: it does not). */
    int64_t wakes;
    double wake_us;
    double poll_us;
    /* The CPU the timing costs per issued query: the issuing thread's spin
     * to each deadline (server), the instances' polling of the queue. */
    double generator_spin_us;
    double instance_poll_us;
} ntp_loadgen_generator;

/* What ntp_loadgen_run measured: opaque, read through the accessors below
 * and freed with ntp_loadgen_result_free. Each accessor takes NULL or an
 * index out of range and answers NULL, 0 (false for a flag, a zeroed
 * record for a group); a string or record returned lives as long as r. */
typedef struct ntp_loadgen_result ntp_loadgen_result;

/* The run's settings: the topology's name and file, the backend. */
NTP_API const char *ntp_loadgen_result_topology(const ntp_loadgen_result *r);
NTP_API const char *ntp_loadgen_result_source(const ntp_loadgen_result *r);
NTP_API const char *ntp_loadgen_result_backend(const ntp_loadgen_result *r);
/* The scenario (single-stream for NULL). */
NTP_API ntp_loadgen_scenario ntp_loadgen_result_scenario(const ntp_loadgen_result *r);
/* ntp_loadgen_opts' instances, threads_per_instance, max_batch, samples_per_query. */
NTP_API int ntp_loadgen_result_instances(const ntp_loadgen_result *r);
NTP_API int ntp_loadgen_result_threads_per_instance(const ntp_loadgen_result *r);
NTP_API int ntp_loadgen_result_max_batch(const ntp_loadgen_result *r);
NTP_API int ntp_loadgen_result_samples_per_query(const ntp_loadgen_result *r);
/* ntp_loadgen_opts.batch_timeout_us. */
NTP_API double ntp_loadgen_result_batch_timeout_us(const ntp_loadgen_result *r);
/* Whether the instances' threads were pinned to cores of their own. */
NTP_API bool ntp_loadgen_result_pinned(const ntp_loadgen_result *r);
NTP_API uint64_t ntp_loadgen_result_seed(const ntp_loadgen_result *r);
/* The minimums asked for: duration (s) and queries; the server's bound (ms). */
NTP_API double ntp_loadgen_result_duration_s(const ntp_loadgen_result *r);
NTP_API int64_t ntp_loadgen_result_min_queries(const ntp_loadgen_result *r);
NTP_API double ntp_loadgen_result_latency_bound_ms(const ntp_loadgen_result *r);

/* Completed queries and their samples. */
NTP_API int64_t ntp_loadgen_result_queries(const ntp_loadgen_result *r);
NTP_API int64_t ntp_loadgen_result_samples(const ntp_loadgen_result *r);
/* First arrival to last completion, s. */
NTP_API double ntp_loadgen_result_elapsed_s(const ntp_loadgen_result *r);
/* Server: the QPS asked; the other scenarios: the achieved. */
NTP_API double ntp_loadgen_result_qps_offered(const ntp_loadgen_result *r);
/* Queries and samples completed per second of elapsed. */
NTP_API double ntp_loadgen_result_qps_achieved(const ntp_loadgen_result *r);
NTP_API double ntp_loadgen_result_samples_per_s(const ntp_loadgen_result *r);
/* Per query, from arrival to completion, ms. */
NTP_API ntp_loadgen_latency ntp_loadgen_result_latency_ms(const ntp_loadgen_result *r);
/* The scenario's percentile (0.90, 0.99) and the latency at it, ms. */
NTP_API double ntp_loadgen_result_percentile(const ntp_loadgen_result *r);
NTP_API double ntp_loadgen_result_metric_ms(const ntp_loadgen_result *r);
/* Unloaded latency of one batch, ms: i 0 a batch of 1, i 1 of max_batch. */
NTP_API double ntp_loadgen_result_service_ms(const ntp_loadgen_result *r, int i);
/* Every plan of every instance, prepared once, ms. */
NTP_API double ntp_loadgen_result_prepare_ms(const ntp_loadgen_result *r);
/* Validity and early stopping. */
NTP_API ntp_loadgen_validity ntp_loadgen_result_validity(const ntp_loadgen_result *r);

/* The batches of `size` samples (0 .. max_batch) that ran. */
NTP_API int64_t ntp_loadgen_result_batch_count(const ntp_loadgen_result *r, int size);
/* The queue depth, sampled at every arrival: how many samples, and at
 * sample i the samples waiting (that one included) and the arrival's time
 * (s since the start). */
NTP_API int ntp_loadgen_result_depth_count(const ntp_loadgen_result *r);
NTP_API int ntp_loadgen_result_depth(const ntp_loadgen_result *r, int i);
NTP_API double ntp_loadgen_result_depth_time_s(const ntp_loadgen_result *r, int i);
NTP_API int ntp_loadgen_result_max_depth(const ntp_loadgen_result *r);
/* Instance i's share of elapsed spent computing (0 .. instances - 1). */
NTP_API double ntp_loadgen_result_utilisation(const ntp_loadgen_result *r, int i);
/* The generator's cost and quality. */
NTP_API ntp_loadgen_generator ntp_loadgen_result_generator(const ntp_loadgen_result *r);
/* ntp_loadgen_opts.stop was set: the figures are of the queries so far. */
NTP_API bool ntp_loadgen_result_interrupted(const ntp_loadgen_result *r);
/* find_max_qps: whether it searched, the largest valid QPS, the points tried. */
NTP_API bool ntp_loadgen_result_searched(const ntp_loadgen_result *r);
NTP_API double ntp_loadgen_result_max_qps(const ntp_loadgen_result *r);
NTP_API int ntp_loadgen_result_point_count(const ntp_loadgen_result *r);
NTP_API const ntp_loadgen_point *ntp_loadgen_result_point(const ntp_loadgen_result *r, int i);
/* Completed query i in issue order, 0 .. queries - 1. */
NTP_API const ntp_loadgen_query *ntp_loadgen_result_query(const ntp_loadgen_result *r, int64_t i);
/* The 1-minute load average at the start. */
NTP_API double ntp_loadgen_result_load_average(const ntp_loadgen_result *r);
/* What other processes took from this process's CPUs during the run
 * (docs/run.md#contention). */
NTP_API const ntp_contention *ntp_loadgen_result_contention(const ntp_loadgen_result *r);
/* The CPU's model and how many CPUs this process may use. */
NTP_API const char *ntp_loadgen_result_cpu_model(const ntp_loadgen_result *r);
NTP_API int ntp_loadgen_result_cpus(const ntp_loadgen_result *r);
/* Warnings about the run (its figures may not hold, a fallback). */
NTP_API int ntp_loadgen_result_warning_count(const ntp_loadgen_result *r);
NTP_API const char *ntp_loadgen_result_warning(const ntp_loadgen_result *r, int i);

/* Serve the topology at `path` (loaded with `load`, NULL for defaults; the
 * param "batch" is set to each batch size 1..max_batch in turn, so a model
 * batched by max_batch > 1 needs that param) as opts says, and measure. On
 * failure *out is NULL and ctx says why in one line; an interrupted run is
 * a result, not a failure. */
NTP_API ntp_status ntp_loadgen_run(ntp_ctx *ctx, const char *path, const ntp_load_opts *load,
                                   const ntp_loadgen_opts *opts, ntp_loadgen_result **out);
NTP_API void ntp_loadgen_result_free(ntp_loadgen_result *r);

/* LoadGen's early-stopping rule: the fewest queries under the percentile's
 * latency that, beside `over` queries above it, let a run claim the
 * percentile p at confidence c (LoadGen: 0.99), by the binomial bound
 * P(Binomial(h + over, 1 - p) <= over) <= 1 - c. */
NTP_API int64_t ntp_loadgen_min_passing(int64_t over, double p, double c);

/* Reports (docs/load.md): a table for a terminal, JSON (kind "load",
 * schema/load.schema.json) or CSV (a summary row, then one row per query),
 * written to f; the caller makes f atomic (ntp_output_open). */
NTP_API ntp_status ntp_report_write_load(ntp_ctx *ctx, const ntp_loadgen_result *r, ntp_format fmt,
                                         FILE *f);
/* A Chrome trace (chrome://tracing, Perfetto): per query one span on its
 * instance's track from arrival to completion, with its phases (queued,
 * batched, computed) nested in it. */
NTP_API ntp_status ntp_report_write_load_trace(ntp_ctx *ctx, const ntp_loadgen_result *r, FILE *f);
/* A self-contained HTML page (docs/load.md#reports): the figures, the
 * latency distribution (a histogram and the latency at each percentile)
 * and, after a QPS search, p50 and p99 against the offered QPS with the
 * bound. Every figure shown also carries its exact value in a data-v
 * attribute. */
NTP_API ntp_status ntp_report_write_load_html(ntp_ctx *ctx, const ntp_loadgen_result *r, FILE *f);

/* --- the history (docs/load.md#history) ----------------------------------------------- */

/* The row of r that the history keeps. */
NTP_API void ntp_loadgen_entry(const ntp_loadgen_result *r, ntp_load_entry *e);
/* Open (creating) the history at db, add r with its JSON report, close:
 * what `ntprof load` does after every run. */
NTP_API ntp_status ntp_loadgen_record(ntp_ctx *ctx, const char *db, const ntp_loadgen_result *r,
                                      int64_t *id);
/* Load runs as `ntprof history` lists them: a table, JSON (kind
 * "load_history") or CSV. */
NTP_API ntp_status ntp_report_write_load_history(ntp_ctx *ctx, const ntp_load_entry *e, int n,
                                                 ntp_format fmt, FILE *f);

/* --- sweeps of load runs (ntprof sweep --load, docs/load.md#sweeps) ----------------------- */

/* One configuration of a load sweep: its label, and either why it failed
 * (error not empty) or its figures, read from its JSON report. Values a
 * run does not have (max_qps without a search, the lateness outside the
 * server scenario) are NaN. */
typedef struct ntp_loadgen_sweep_row {
    char label[256]; /* "qps=200 instances=2" */
    char error[512];
    char scenario[16];
    int instances, threads_per_instance, max_batch;
    double qps_offered, qps_achieved, samples_per_s;
    int64_t queries;
    double p50_ms, p90_ms, p99_ms, mean_ms, max_ms;
    bool valid;
    double max_qps;
    /* The generator's quality: cost per query, lateness mean and p99 (µs),
     * and the rate the drawn arrivals offered. */
    double overhead_us, lateness_mean_us, lateness_p99_us, qps_drawn;
    /* Its load run in the history when the sweep was recorded (0: not). */
    int64_t load_run_id;
} ntp_loadgen_sweep_row;

/* Fill row (its label kept) from a load report written by
 * ntp_report_write_load(..., NTP_FORMAT_JSON, ...) at `path`. */
NTP_API ntp_status ntp_loadgen_sweep_row_read(ntp_ctx *ctx, const char *path,
                                              ntp_loadgen_sweep_row *row);
/* The same from the report's text (a load run's report as the store keeps
 * it: ntp_store_load_report), named `what` in errors. */
NTP_API ntp_status ntp_loadgen_sweep_row_parse(ntp_ctx *ctx, const char *report, const char *what,
                                               ntp_loadgen_sweep_row *row);
/* The rows as a table, JSON (kind "load_sweep": source and one object per
 * configuration) or CSV (a row per configuration). */
NTP_API ntp_status ntp_report_write_load_sweep(ntp_ctx *ctx, const ntp_loadgen_sweep_row *rows,
                                               int n, const char *source, ntp_format fmt, FILE *f);
/* Record configuration `index` of load sweep `sweep` (ntp_store_add_load_sweep)
 * in s: a failed row (error set) as failed with its error; a completed one
 * as the load run of its JSON report at `report` (stored byte for byte,
 * as `ntprof load` stores it), whose id goes to row->load_run_id. */
NTP_API ntp_status ntp_loadgen_sweep_record(ntp_ctx *ctx, ntp_store *s, int64_t sweep, int index,
                                            const char *report, ntp_loadgen_sweep_row *row);
/* Record the load report at `report` (ntprof load's JSON) in s as a load
 * run, byte for byte as `ntprof load` records it; *id receives its id, or
 * 0 when the run was interrupted, which is not recorded (as `ntprof load`
 * records none). What a Slurm load sweep's task does with its run. */
NTP_API ntp_status ntp_loadgen_record_report(ntp_ctx *ctx, ntp_store *s, const char *report,
                                             int64_t *id);
/* Recorded load sweeps (ntp_store_list_load_sweeps) as `ntprof history
 * --load-sweeps` lists them: a table (a heading per sweep, a line per
 * configuration), JSON (kind "load_sweep_history": the sweeps with their
 * configurations) or CSV (a row per configuration). */
NTP_API ntp_status ntp_report_write_load_sweep_history(ntp_ctx *ctx, const ntp_load_sweep_task *t,
                                                       int n, ntp_format fmt, FILE *f);
/* A self-contained HTML page of the rows: p99 and p50 of each configuration
 * against its achieved QPS (invalid runs marked) and a table of every
 * configuration; each number also in a data-v attribute (docs/load.md#sweeps). */
NTP_API ntp_status ntp_report_write_load_sweep_html(ntp_ctx *ctx, const ntp_loadgen_sweep_row *rows,
                                                    int n, const char *source, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
