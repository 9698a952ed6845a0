/* The run result's definition, private to libntprof: include/ntprof/run.h
 * declares ntp_run_result opaque and reads it through accessors
 * (src/measure/run-result.c). The library fills and reads the fields
 * directly; tests that fabricate a result (the writers', compare's,
 * the roofline's and predict's tests) include this header, as tests see
 * every private header. */
#ifndef NTPROF_RUN_RESULT_IMPL_H
#define NTPROF_RUN_RESULT_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include "ntprof/run.h"

struct ntp_run_result {
    const char *topology;
    const char *source;
    const char *backend;
    ntp_dtype precision;
    int64_t batch; /* the value of param "batch", 0 if none */
    int threads;
    uint64_t seed;
    int warmup;
    int iterations; /* measured iterations of the end-to-end pass */
    const char *only_marker;
    int n_params;
    const char **param_names;
    const char **param_values;

    bool fused; /* --fuse */
    /* The thread pools' wait policy (ntp_wait_policy). */
    const char *wait_policy;
    const char *wait_settings;
    int n_layers;             /* rows: layers and the steps between them */
    ntp_layer_result *layers; /* execution order; only the --only range */
    int n_markers;
    ntp_marker_result *markers;
    ntp_stats end_to_end_ms; /* from the pass without per-layer timing */
    ntp_stats layer_sum_ms;  /* per-iteration sum of layer times */
    /* (median layer sum - median end-to-end) / median end-to-end: the cost
     * of timing every layer. */
    double overhead_fraction;
    double overhead_per_layer_us;
    double throughput; /* samples per second: batch / median e2e */
    double latency_ms; /* median end-to-end */
    double prepare_ms; /* all layers' prepare */
    int64_t flops;
    ntp_memory_result memory;
    ntp_env env;
    int n_warnings;
    char **warnings; /* noisy or too short runs, fallbacks */
    int n_trace;
    ntp_trace_iter *trace; /* when keep_trace */
    int n_accuracy;        /* one per graph output, for reduced precisions */
    ntp_accuracy *accuracy;
    const char *accuracy_baseline; /* "f32 on onednn" */
    /* The counting pass (docs/counters.md): what was asked, how many
     * iterations and threads were counted, and notes (n/a reasons that hold
     * for the whole run, files the tools left). */
    const char *counters;
    const char *tool;
    int counter_iterations;
    int counter_threads;
    int n_counter_notes;
    const char **counter_notes;
    /* What the result owns besides its arrays (the counting pass's names
     * and notes, the row names of added steps, a read report's strings),
     * and whether a counting pass ran: the library's, opaque, freed by
     * ntp_run_result_free. NULL in a result the caller fills in. */
    struct ntp_run_owned *owned;
    ntp_roofline roofline;
    ntp_run_prediction prediction;
    /* ntp_run_opts.torch_script's figure (include/ntprof/frameworks.h);
     * NULL when not asked. Owned by the result. */
    struct ntp_torch_script_result *torch_script;
    /* The Slurm sweep task this run belongs to, in the report a task keeps
     * when the store refused the run (docs/cluster.md): `ntprof history
     * import` marks that task done. sweep_id 0: none. */
    int64_t sweep_id;
    int sweep_index;
    char sweep_created_at[32]; /* the sweep's created_at in its store */
    char sweep_job[32];        /* the Slurm job that ran it ("12_3") */
};

#endif
