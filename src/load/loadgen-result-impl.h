/* The load run's result, private to libntprof: include/ntprof/load.h
 * declares ntp_loadgen_result opaque and reads it through accessors
 * (src/load/loadgen-result.c). The library fills and reads the fields
 * directly; a test that fabricates a result would include this header, as
 * tests see every private header. */
#ifndef NTPROF_LOADGEN_RESULT_IMPL_H
#define NTPROF_LOADGEN_RESULT_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include "ntprof/load.h"

struct ntp_loadgen_result {
    char *topology;
    char *source;
    char *backend;
    ntp_loadgen_scenario scenario;
    int instances, threads_per_instance, max_batch, samples_per_query;
    double batch_timeout_us;
    bool pinned;
    uint64_t seed;
    double duration_s; /* the minimums asked for */
    int64_t min_queries;
    double latency_bound_ms;
    /* Figures of the run. */
    int64_t queries;
    int64_t samples;
    double elapsed_s;    /* first arrival to last completion */
    double qps_offered;  /* server: asked; others: achieved */
    double qps_achieved; /* queries completed / elapsed */
    double samples_per_s;
    /* Per query, from arrival to completion: p50 p90 p95 p99 p99.9 max mean. */
    ntp_loadgen_latency latency_ms;
    double percentile;    /* the scenario's: 0.90, 0.99 */
    double metric_ms;     /* the latency at that percentile */
    double service_ms[2]; /* unloaded latency of one batch of 1, and of max_batch */
    double prepare_ms;    /* every plan of every instance, once */
    /* Validity, as LoadGen judges it. */
    bool valid;
    bool min_duration_met, min_queries_met, bound_met;
    bool early_stopping_met;
    /* Early stopping (a binomial bound at 99% confidence): the queries the
     * run would need for its percentile (LoadGen's "need to process at
     * least" / "would need N more"); the percentile's upper estimate. */
    int64_t early_stopping_needed;
    double early_stopping_ms;
    int64_t overlatency; /* server: queries above the bound */
    /* How the queue behaved. */
    int64_t *batch_hist; /* [max_batch + 1]: batches of each size */
    int n_depth;         /* queue depth sampled at every arrival */
    double *depth_t_s;   /* arrival time */
    int *depth;          /* samples waiting, that one included */
    int max_depth;
    double *utilisation; /* per instance: share of elapsed spent computing */
    /* The generator's own cost and quality (ntp_loadgen_generator says
     * what each figure is; docs/load.md#arrivals, #generator-cost). */
    ntp_loadgen_generator gen;
    bool interrupted; /* opts.stop was set: the queries so far */
    /* --find-max-qps: the largest valid QPS and the points tried. */
    bool searched;
    double max_qps;
    int n_points;
    ntp_loadgen_point points[NTP_LOADGEN_MAX_POINTS];
    /* Every query, in issue order. */
    ntp_loadgen_query *q;
    double load_average; /* 1-minute, at the start */
    /* What other processes took from this process's CPUs during the run
     * (docs/run.md#contention); distorted: the figures may not hold. */
    ntp_contention contention;
    char cpu_model[128];
    int cpus; /* CPUs this process may use */
    int n_warnings;
    char **warnings;
};

#endif
