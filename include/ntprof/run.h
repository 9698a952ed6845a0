/* ntprof: running a topology on a backend and measuring it. */
#ifndef NTPROF_RUN_H
#define NTPROF_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include "ntprof/api.h"
#include "ntprof/analyze.h"
#include "ntprof/graph.h"
#include "ntprof/stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One event counted over a layer or a marker segment, or a metric derived
 * from such events (docs/counters.md). Values are per iteration of the
 * counting pass. */
typedef struct ntp_counter_value {
    const char *name; /* "cycles", "task-clock", "perf-stat:task-clock", "callgrind:Ir", "ipc" */
    /* Who counted it: "perf_event" (in-process), "perf-stat", "perf-record",
     * "callgrind", "cachegrind", "papi", or "derived" for a metric. */
    const char *source;
    const char *unit;   /* "ns" for clocks, "" for counts and ratios */
    bool available;     /* false: n/a, `reason` says why */
    bool derived;       /* IPC, MPKI, miss ratios, top-down fractions */
    bool scaled;        /* multiplexed: extrapolated by time_enabled / time_running */
    double value;       /* per iteration; 0 when n/a */
    double running;     /* time_running / time_enabled: 1 when counted throughout */
    const char *reason; /* why n/a, NULL when available */
} ntp_counter_value;

/* When a run probes the memory bus (ntp_run_opts.bandwidth_probe). AUTO
 * probes when min_time_s is at least NTP_BANDWIDTH_PROBE_MIN_TIME_S, so
 * that the probes (at most about 2 x 50 ms) stay a small part of the run. */
typedef enum ntp_bandwidth_probe {
    NTP_BANDWIDTH_PROBE_AUTO = 0,
    NTP_BANDWIDTH_PROBE_ON,
    NTP_BANDWIDTH_PROBE_OFF
} ntp_bandwidth_probe;
#define NTP_BANDWIDTH_PROBE_MIN_TIME_S 0.5

typedef struct ntp_run_opts {
    const char *backend;     /* NULL: the default backend */
    int warmup;              /* iterations run and discarded first */
    int iterations;          /* at least this many measured iterations */
    double min_time_s;       /* ... and at least this much measured time */
    int threads;             /* 0: all cores */
    const char *pin;         /* CPU list "0-1,3" to pin to, NULL: no pinning */
    uint64_t seed;           /* weights and synthetic inputs */
    const char *only_marker; /* profile only this marker's layers, NULL: all */
    /* Inputs given as "[NAME=]FILE" (.npy); by position when NAME is absent. */
    const char *const *inputs;
    int n_inputs;
    const char *save_outputs_dir; /* write output_<i>.npy here, NULL: don't */
    bool keep_trace;              /* keep per-iteration layer timestamps */
    double noise_cv;              /* warn above this coefficient of variation (0: 0.05) */
    bool fuse;                    /* let backends fuse layers (conv + bias + activation + add) */
    /* For bf16, f16 and i8 runs, also run the same weights and inputs at f32
     * on the same backend and report how far the outputs moved (default on). */
    bool accuracy;
    /* This machine's ceilings (ntp_machine_measure, or cached in the
     * history: ntp_store_load_ceilings); every row is then placed on the
     * roofline. NULL: the report says the roofline is not available. */
    const struct ntp_ceilings *ceilings;
    /* Counters and external tools (docs/counters.md); NULL: none. A separate
     * counting pass runs after the timing passes, so counting never disturbs
     * the timings. `counters` lists sets (sw, basic, cache, topdown, all) and
     * event names; `tool` is perf-stat[:EVENTS], perf-record[:EVENTS],
     * callgrind, cachegrind, papi[:EVENTS] or nvtx. */
    const char *counters;
    const char *tool;
    const char *tool_dir;   /* where tools leave files; NULL: a new directory in $TMPDIR */
    int counter_iterations; /* iterations of the counting pass; 0: `iterations` */
    /* Accelerators (docs/gpu.md). `place` holds "LAYER=BACKEND" entries (the
     * CLI's repeatable --place) that put those layers on that backend, as a
     * layer's backend= attribute does, overriding it. */
    const char *const *place;
    int n_place;
    /* How f32 layers may compute: NTP_MATH_TF32 lets a GPU backend use TF32
     * tensor cores (f32 storage; the CLI's --precision tf32). */
    ntp_math_mode math;
    bool cuda_graph; /* replay whole passes as CUDA graphs (--cuda-graph) */
    /* Progress, for someone waiting at a terminal (NULL: none; the library
     * itself never prints). phase is "prepare", "warm-up", "measure",
     * "count" or "accuracy"; done of total steps, total 0 when not known.
     * In "measure" total is the iterations expected so far, which
     * --min-time may raise as the first ones show their speed. Called
     * between iterations, never inside a timed region. */
    void (*progress)(void *user, const char *phase, int done, int total);
    void *progress_user;
    /* Backend options, "BACKEND.KEY=VALUE" entries separated by commas
     * (--backend-options): each backend reads the entries that name it and
     * refuses a key it does not know; NULL: none. The torch backend's
     * memory_format=contiguous|channels_last (docs/frameworks.md). */
    const char *backend_options;
    /* Before each measured pass (end to end and per layer), write over a
     * buffer of this many bytes, outside the timed region: the caches
     * then hold none of the topology's data, as between two passes of a
     * larger network (the calibration's network conditions,
     * docs/predict.md). 0: none. */
    int64_t flush_bytes;
    /* After the run, the topology also as one TorchScript module, timed end
     * to end (ntp_run_torch_script, include/ntprof/frameworks.h) into
     * ntp_run_result_torch_script: the torch backend only, the whole
     * topology (no only_marker) on generated inputs (no `inputs`). Its
     * progress phase is "TorchScript". */
    bool torch_script;
    /* The run's identity (ntp_env.run_uuid), a UUID such as
     * 0f8fad5b-d9cb-469f-a165-70867728950e chosen by the caller (a
     * cluster's task, docs/cluster.md); NULL: a random one. ntp_run_compare
     * gives each backend's run its own. */
    const char *run_uuid;
    /* The DRAM bandwidth probe and the CPUs' hand-off probe around the
     * measured window (docs/run.md#contention, docs/run.md#handoff); AUTO
     * (0): when min_time_s is at least NTP_BANDWIDTH_PROBE_MIN_TIME_S. */
    ntp_bandwidth_probe bandwidth_probe;
} ntp_run_opts;

/* Set the defaults: warmup 3, iterations 10, min_time 1 s, seed 1,
 * accuracy on. */
NTP_API void ntp_run_opts_default(ntp_run_opts *o);

/* One row of a run report: a layer, or a step the engine or a backend
 * added around layers. */
typedef struct ntp_layer_result {
    const char *name;
    const char *type;
    /* "layer"; "convert" (a tensor converted between two backends' storage
     * types); "reorder" (a backend's layout change inside a layer); "fused"
     * (a layer folded into `fused_into`, timed there). */
    const char *kind;
    const char *backend; /* the backend that ran it */
    const char *impl;    /* the implementation it chose ("brg:avx512_core_amx") */
    /* The layout of the source its implementation read, where the backend
     * says ("plain", "blocked", "nspc", "strided": oneDNN); NULL otherwise. With
     * impl it keys a prediction's correction (docs/predict.md). */
    const char *src_layout;
    /* Why the backend did not fuse this layer with its neighbours under
     * --fuse ("fusion declined: ..."), owned by the result; NULL when
     * there is nothing to say. */
    const char *fuse_note;
    bool inlay;
    bool fused; /* fused into `fused_into` by the backend */
    const char *fused_into;
    ntp_shape output_shape;
    ntp_stats time_ms;
    /* The row's median over the iterations while the CPUs shared a cache
     * and over those while they did not, where the run's hand-off looks
     * split its iterations between the two (docs/run.md#handoff); 0
     * otherwise. */
    double together_ms, apart_ms;
    double share; /* of the summed median layer time */
    int64_t flops;
    int64_t bytes;    /* minimal traffic (analysis) */
    double gflops;    /* flops / median time */
    double gbps;      /* bytes / median time */
    double intensity; /* flops / bytes */
    /* A recurrent layer's input GEMM and recurrent GEMV (docs/analysis.md),
     * from the analysis: the roofline bounds the row by both parts' time
     * estimates and the verdict is the dominant part's. 0: one part. */
    int n_parts;
    ntp_cost_part parts[NTP_COST_MAX_PARTS];
    double prepare_ms; /* primitive creation, weight packing */
    int64_t workspace_bytes;
    /* Counters, derived metrics and the bottleneck verdict (docs/counters.md);
     * empty unless counters or a tool were asked for. */
    int n_counters;
    ntp_counter_value *counters;
    const char *bound;          /* "compute", "memory", "latency"; NULL: not judged */
    const char *bound_evidence; /* what the verdict rests on */
    /* Roofline (ntp_roofline_apply): min(peak, intensity x DRAM bandwidth)
     * and gflops / attainable; 0 when there are no ceilings, no FLOPs or no
     * time of its own. */
    double attainable_gflops;
    double roof_share;
    /* The ceiling the row was placed on: "cpu f32" (the CPU's micro-kernel
     * peak at that precision and its DRAM triad), "gpu f16" (GPU 0's GEMM
     * peak at that math and its DRAM), "gpu h2d" or "gpu d2h" (a copy row,
     * placed on the link's bandwidth: attainable_gbps, and roof_share =
     * gbps / attainable_gbps); NTP_ROOF_NO_GPU for a GPU row when the
     * ceilings hold no GPU; NULL when the row was not placed. */
    const char *roof_ceiling;
    double attainable_gbps;
    /* Prediction beside measurement (docs/predict.md, ntp_prediction_apply):
     * the latency a calibration predicted for this row, when `predicted`. */
    bool predicted;
    double predicted_ms;
    /* Why a row is not predicted, "" when it is or there is no
     * prediction: "n/a: not calibrated for ref" (the layer ran on a
     * backend without a calibration), "n/a: mfcc has no family (an
     * inlay)". */
    char prediction_note[64];
} ntp_layer_result;

typedef struct ntp_marker_result {
    const char *name;
    int first, last;   /* row indices, inclusive */
    ntp_stats time_ms; /* per-iteration sum of its layers */
    double share;
    int64_t flops;
    int64_t bytes;
    double gflops;
    int n_counters; /* as for rows: a segment's counters and verdict */
    ntp_counter_value *counters;
    const char *bound;
    const char *bound_evidence;
    double attainable_gflops; /* as for rows */
    double roof_share;
    /* As for rows: a segment goes on the GPU's roof when every row of it
     * with FLOPs ran on the GPU, on the CPU's when none did; a segment
     * mixing both is not placed. */
    const char *roof_ceiling;
} ntp_marker_result;

typedef struct ntp_memory_result {
    /* Weights as the backends hold them at the run's precision (at i8:
     * matrices as int8, vectors f32), comparable with `analyze`;
     * weight_copy_bytes the f32 copies the engine keeps besides, from which
     * an int8 backend quantises (0 when none). */
    int64_t weight_bytes;
    int64_t weight_copy_bytes;
    int64_t arena_bytes;     /* planned activation arena */
    int64_t workspace_bytes; /* largest per-layer workspace */
    /* Process peak resident set, without the bandwidth probe's arrays
     * where /proc lets its high-water mark be set back (docs/run.md). */
    int64_t peak_rss_bytes;
    int64_t minor_faults, major_faults; /* during the measured iterations */
    /* Device memory of accelerator backends (docs/gpu.md), 0 without one:
     * weights, activations (buffers of internal tensors and staging at
     * boundaries), workspace, and the high-water mark of all of it. A
     * device backend that ran always holds some (at least cuBLAS's
     * workspace), so reports show these figures when any is positive
     * (ntp_memory_has_device) and leave them out otherwise. */
    int64_t device_weight_bytes;
    int64_t device_activation_bytes;
    int64_t device_workspace_bytes;
    int64_t device_peak_bytes;
} ntp_memory_result;

/* Whether m holds device memory figures: an accelerator backend ran. */
static inline bool ntp_memory_has_device(const ntp_memory_result *m)
{
    return m->device_weight_bytes > 0 || m->device_activation_bytes > 0 ||
           m->device_workspace_bytes > 0 || m->device_peak_bytes > 0;
}

/* The memory bus around a run's measured window (docs/run.md#contention):
 * a short DRAM triad before the warm-up and after the last measured
 * iteration, as a share of this machine's stored DRAM triad ceiling. The
 * CPU counters cannot see another guest or process that uses only the
 * memory bus; this can, at the two ends of the window. */
typedef struct ntp_bandwidth_check {
    bool measured; /* false: not probed; `reason` says why */
    char reason[128];
    double before_gbps;        /* the probe before the warm-up; 0: it did not run */
    double after_gbps;         /* the probe after the last measured iteration; 0: it did not run */
    int64_t working_set_bytes; /* the three arrays of all threads */
    int threads;
    double cost_s; /* wall time of both probes: the instrument's overhead */
    /* The stored DRAM triad ceiling (ntp_run_opts.ceilings: the best of its
     * rounds) and its worst round; 0: no ceilings. */
    double ceiling_gbps;
    double ceiling_min_gbps;
    /* before_gbps and after_gbps / ceiling_gbps; -1: n/a (share_reason). */
    double before_share;
    double after_share;
    char share_reason[96];
    /* A probe read below both the ceiling's worst round and
     * NTP_BANDWIDTH_LOW_SHARE of the ceiling: the run warned. */
    bool low;
    /* A probe read above NTP_BANDWIDTH_HIGH_SHARE of the ceiling: the
     * stored ceiling was measured on a busier memory bus or is another
     * machine's, and a share against it says too much: the run warned. */
    bool high;
    /* No timed round of that probe had every thread on its CPU (a thread's
     * CPU time under 95% of the round's wall time): other processes shared
     * the CPUs while it ran, and its reading is theirs as much as the
     * bus's. */
    bool before_contended;
    bool after_contended;
    /* Where the CPUs sat (docs/run.md#the-memory-bus): the hand-off ratio
     * of the ceiling's measurement (ntp_ceiling_spread.handoff_ratio) and
     * of the look next to each probe; 0: not looked. A two-thread triad
     * reads more with the CPUs apart (two dies' memory paths), so a probe
     * whose placement differs from the ceiling's is not judged low or
     * high. */
    double ceiling_handoff;
    double before_handoff;
    double after_handoff;
} ntp_bandwidth_check;

/* Data handed between the run's CPUs around its measured window
 * (docs/run.md#handoff). A layer one thread writes and the next reads on
 * another CPU moves through the cache the two share; on a virtual machine
 * the hypervisor may place two vCPUs that sysfs says share an L3 on
 * different dies, and then every such hand-off crosses the dies: the
 * layers between threads' work read 2-5x slower, for as long as the
 * placement lasts (a process, or seconds). A probe times one CPU reading
 * a buffer another just wrote against reading it again from its own
 * caches, in both directions, for a few pairs of the CPUs the run may
 * use, before the warm-up and after the last measured iteration. */
typedef struct ntp_handoff_probe {
    /* The median time to read the other CPU's writes over the median time
     * to read them again, of the pair where it is highest; 0: the probe
     * did not run. */
    double ratio;
    double remote_gbps, own_gbps; /* that pair's reads */
    int cpu_from, cpu_to;         /* that pair: the writer's CPU and the reader's */
    /* The highest cache level sysfs says that pair shares (0: none, -1:
     * sysfs does not say) and its size. */
    int sysfs_level;
    int64_t sysfs_bytes;
    int pairs_apart; /* pairs whose ratio reached NTP_HANDOFF_APART_RATIO */
} ntp_handoff_probe;

typedef struct ntp_handoff_check {
    bool measured; /* false: not probed; `reason` says why */
    char reason[128];
    int64_t bytes; /* the buffer handed over: twice the reader's L2 */
    int pairs;     /* pairs of CPUs probed (the first CPU with each of up to 7 others) */
    double cost_s; /* wall time of both probes: the instrument's overhead */
    ntp_handoff_probe before, after;
    /* Inside the window: a short hand-off between the before probe's
     * slowest pair, between iterations, every NTP_HANDOFF_SAMPLE_S of
     * wall time: how many, how many reached NTP_HANDOFF_APART_RATIO, and
     * the highest ratio (0: none). */
    int samples, samples_apart;
    double window_ratio;
    /* The end-to-end median of the iterations whose latest look (the probe
     * before, then each sample) found that pair sharing a cache, and of
     * those that found it apart, with their counts (0 where none). */
    double together_ms, apart_ms;
    int together_n, apart_n;
    /* The 95% confidence interval of each of those medians (as
     * ntp_stats.ci95_lo/hi: distribution-free, min..max for five
     * iterations or fewer; 0 where none). */
    double together_lo, together_hi, apart_lo, apart_hi;
    /* A probe or sample found its pair apart although sysfs says the two
     * share a cache, or the looks disagree (the placement changed around
     * or during the window): the run warned. */
    bool apart;
    /* The looks disagreed, but the iterations under the apart ones ran
     * less than NTP_HANDOFF_SLOWER times the others' end-to-end median,
     * or the two medians' intervals overlap: the run's own time did not
     * follow the looks, so it did not warn (apart is false;
     * docs/run.md#handoff). */
    bool unconfirmed;
} ntp_handoff_check;

/* The ratio at which a pair of CPUs counts as apart. Measured on the
 * 2-vCPU Zen 4 VM (2026-12-05): 1.05 to 1.34 for the probes of two vCPUs
 * sharing its L3 and up to 1.62 for a sample taken while a backend's
 * worker spins, 2.6 to 4.0 for the same two on different dies. */
#define NTP_HANDOFF_APART_RATIO 2.0
/* How much slower the iterations under looks that found the pair apart
 * must run, end-to-end median over the others', for the disagreement of
 * the looks to count: a look's ratio divides by the reader's own re-read,
 * which on the 2-vCPU Zen 5 VM moved between 38 and 93 GB/s while the
 * remote read held 31-40 (2026-12-05), and 31 runs whose looks disagreed
 * ran 0.93-1.09x as fast under the apart ones; placements that differ
 * moved SqueezeNet 1.7x. */
#define NTP_HANDOFF_SLOWER 1.10
/* Wall time between the samples inside a measured window. */
#define NTP_HANDOFF_SAMPLE_S 0.2

/* The highest ratio of a check's probes and samples; 0 when it did not
 * probe. */
static inline double ntp_handoff_worst(const ntp_handoff_check *h)
{
    if (!h->measured)
        return 0;
    double r = h->after.ratio > h->before.ratio ? h->after.ratio : h->before.ratio;
    return h->window_ratio > r ? h->window_ratio : r;
}

/* Whether a check's looks count against the run: its worst look read its
 * pair apart and the run's own time did not say otherwise (not
 * unconfirmed). What compare's machine line and the prediction's note
 * flag. */
static inline bool ntp_handoff_flagged(const ntp_handoff_check *h)
{
    return ntp_handoff_worst(h) >= NTP_HANDOFF_APART_RATIO && !h->unconfirmed;
}

/* Whether a check's looks split the iterations in a way the reports show
 * (the rows the placement moved, the prediction against each placement):
 * both placements have iterations and the run's time followed the split
 * (not unconfirmed). */
static inline bool ntp_handoff_split_shown(const ntp_handoff_check *h)
{
    return h->measured && !h->unconfirmed && h->together_n > 0 && h->apart_n > 0 &&
           h->together_ms > 0 && h->apart_ms > 0;
}

/* How much slower the iterations under one kind of look must run than the
 * others (end-to-end median over median), with their median's 95%
 * interval wholly above the others', for the looks to count against a
 * run: the run's own time is the judge of what a look saw
 * (docs/run.md#handoff, docs/run.md#pace). */
static inline bool ntp_split_followed(double flagged_ms, double flagged_lo, double other_ms,
                                      double other_hi)
{
    return other_ms > 0 && flagged_ms >= NTP_HANDOFF_SLOWER * other_ms && flagged_lo > other_hi;
}

/* The CPUs' pace around and inside the measured window (docs/run.md#pace).
 * On a virtual machine a vCPU shares its physical core with whatever the
 * host runs beside it; on the 2-vCPU Zen 5 VM (2026-12-05) one vCPU at a
 * time ran 1.25-1.6x slower for seconds to minutes while the load average,
 * steal and the clock read the same. A look times a short kernel whose
 * accumulators live in L1 (load, multiply-add, store back) on each of the
 * run's CPUs in turn, on a thread pinned to it: at the window's start,
 * between iterations every NTP_HANDOFF_SAMPLE_S, and after the last. Each
 * iteration runs under the latest look before it: a one-thread run under
 * its look of the CPU the iteration ended on, any other under the slowest
 * CPU's. */
#define NTP_PACE_MAX_CPUS 8
/* A CPU whose look reads under this share of the best look of the run (or
 * of a calibration, NTP_CALIBRATE_SLOW_PACE) ran slowed. On the 2-vCPU Zen
 * 5 VM (2026-12-05) unhindered looks read 0.88-1.0 of the best, a vCPU
 * sharing its core 0.70-0.80 (and a reference-backend fc on it 1.25-1.6x
 * slower). */
#define NTP_PACE_SLOW_SHARE 0.87
typedef struct ntp_pace_check {
    bool measured; /* false: not looked; `reason` says why */
    char reason[128];
    int n_cpus; /* CPUs looked at: the first NTP_PACE_MAX_CPUS of the run's set */
    int cpu[NTP_PACE_MAX_CPUS];
    /* Each CPU's slowest and fastest look, GFLOP/s. */
    double low[NTP_PACE_MAX_CPUS], high[NTP_PACE_MAX_CPUS];
    double best;     /* the fastest look of any CPU: the reference */
    int looks;       /* looks taken (each reads every CPU) */
    int slow_looks;  /* looks with a CPU under NTP_PACE_SLOW_SHARE x best */
    bool one_thread; /* iterations judged by the CPU each ended on */
    double cost_s;   /* wall time of the looks: the instrument's overhead */
    /* The end-to-end median, count and median's 95% interval of the
     * iterations under a slowed look and of the others (0 where none). */
    double slow_ms, clear_ms;
    int slow_n, clear_n;
    double slow_lo, slow_hi, clear_lo, clear_hi;
    /* Iterations of both kinds and the slowed ones ran NTP_HANDOFF_SLOWER
     * times the others with their intervals apart (ntp_split_followed):
     * the run warned. */
    bool slowed;
    /* Iterations of both kinds, but the run's time did not follow the
     * looks: no warning. */
    bool unconfirmed;
    /* A one-thread run whose every iteration ran under a slowed look of
     * its CPU: nothing in the run ran clear to time against, but no
     * worker of the run's own was on the CPUs when they were looked at,
     * and another look read the best (docs/run.md#pace): the run warned. */
    bool throughout;
} ntp_pace_check;

/* The CPU with the slowest look of a check, as an index into cpu[]; -1
 * when it did not look. */
static inline int ntp_pace_slowest(const ntp_pace_check *p)
{
    int k = -1;
    for (int i = 0; p->measured && i < p->n_cpus; i++)
        if (k < 0 || p->low[i] < p->low[k])
            k = i;
    return k;
}

/* How low a bandwidth probe may read, as a share of the DRAM triad
 * ceiling, before a run warns (and below the ceiling's worst round too). */
#define NTP_BANDWIDTH_LOW_SHARE 0.80
/* How high a probe may read before the ceiling it is judged against is
 * taken for stale: the ceiling is the best of its rounds, so a clean
 * machine reads at most about it. */
#define NTP_BANDWIDTH_HIGH_SHARE 1.25

/* What other processes and the hypervisor took from this run's CPUs while
 * it was measured (docs/run.md#contention), from /proc/stat's counters of
 * the CPUs the run may use against this process's own CPU time. */
typedef struct ntp_contention {
    bool measured; /* false: not sampled; `reason` says why */
    char reason[96];
    double window_s; /* wall time of the measured window */
    int cpus;        /* CPUs summed: those this process may run on */
    /* Shares of cpus x window_s: busy with other processes ((system busy -
     * own) / (cpus x window)), stolen by the hypervisor, used by this
     * process. */
    double other;
    double steal;
    double own;
    double resolution;   /* +- on other and steal from clock-tick counting */
    double load_average; /* 1-minute load average at the window's start */
    /* other + steal - resolution >= NTP_CONTENTION_THRESHOLD: the run
     * warned that its figures may be distorted. */
    bool distorted;
    /* The memory bus before and after the window (ntp_run only). */
    ntp_bandwidth_check bandwidth;
    /* Data handed between the run's CPUs before and after it (ntp_run
     * only). */
    ntp_handoff_check handoff;
    /* The CPUs' pace before, during and after it (ntp_run only). */
    ntp_pace_check pace;
} ntp_contention;

/* The share of the CPU that other processes and steal may take before a
 * run warns (docs/run.md#contention). */
#define NTP_CONTENTION_THRESHOLD 0.10

/* A library a backend runs on: its version and, where the library says,
 * the instruction set it chose on this CPU. */
#define NTP_ENV_MAX_LIBS 6
typedef struct ntp_env_library {
    char name[16];     /* "oneDNN", "XNNPACK", "OpenBLAS", "cuDNN", "cuBLAS" */
    char version[192]; /* "2.7.3 (git a0c6e2f)", OpenBLAS's config string */
    char isa[96];      /* "avx512_core_bf16"; "n/a (reason)" where not known */
} ntp_env_library;

typedef struct ntp_env {
    char cpu_model[128];
    char cpu_flags[1024]; /* the ISA flags that matter (avx2, avx512*, amx*) */
    /* The CPU beside its model name, which a virtual machine may make
     * generic ("AMD EPYC"): "AuthenticAMD family 26 model 2 stepping 1" on
     * x86, "implementer 0x41 part 0xd0c variant 0x1 revision 1" on Arm,
     * from /proc/cpuinfo; "unknown" where it says neither. */
    char cpu_signature[96];
    int cores; /* online logical CPUs */
    int64_t memory_bytes;
    char os[128];
    char compiler[128];
    char libraries[512]; /* "libxml2 2.9.14, jansson 2.14, ..." */
    char ntprof_version[32];
    char git_revision[48];
    char hostname[64];
    char timestamp[32]; /* ISO 8601 UTC */
    /* This run's identity, a random (version 4) UUID made when the run
     * starts: the history stores a run once however often it is written. */
    char run_uuid[40];
    /* Reproducibility (docs/report-format.md): the backends' libraries, the
     * CPU's frequency policy, and the load when the run started. Each text
     * is "n/a (reason)" where the system does not say. */
    int n_libraries;
    ntp_env_library library[NTP_ENV_MAX_LIBS];
    char governor[64];         /* cpufreq scaling governor of CPU 0 */
    double cpu_mhz;            /* current frequency of CPU 0; 0: n/a (cpu_mhz_text says why) */
    char cpu_mhz_text[64];     /* "3000 MHz" or "n/a (reason)" */
    char boost[64];            /* turbo/boost: "on", "off" or "n/a (reason)" */
    char smt[64];              /* simultaneous multithreading: "on", "off", "notsupported", ... */
    double load_average[3];    /* 1, 5, 15 minutes, when the environment was collected; -1: n/a */
    ntp_contention contention; /* filled by ntp_run for its measured window */
} ntp_env;

/* One iteration's layer timings, for traces: start and end in µs since the
 * run's first measured iteration. */
typedef struct ntp_trace_iter {
    double *start_us; /* n_layers */
    double *end_us;
} ntp_trace_iter;

/* How far a reduced-precision run's output moved from an f32 run of the
 * same weights and inputs on the same backend. */
typedef struct ntp_accuracy {
    const char *output; /* graph output name */
    double max_abs_error;
    double rel_l2; /* ||y - y_f32|| / ||y_f32|| */
    /* Classifier outputs ([N, classes], classes >= 5): share of samples whose
     * f32 top-1 class is this output's top-1, and among its top 5 (a tie with
     * that class counts against it); -1 otherwise. top5 >= top1. */
    double top1, top5;
} ntp_accuracy;

/* The ceilings a run was placed against (docs/machine.md). */
#define NTP_ROOFLINE_MAX_LEVELS 6
typedef struct ntp_roofline {
    bool available;    /* false: no ceilings were cached for this machine */
    char machine[256]; /* the machine key the ceilings belong to */
    char measured_at[32];
    double peak_gflops;     /* compute ceiling at the run's precision */
    char peak_source[128];  /* "f32 FMA micro-kernel, avx2, 2 threads" */
    double bandwidth_gbps;  /* DRAM triad: the memory roof of the bound */
    double ridge_intensity; /* peak / bandwidth, FLOP/B */
    /* The ceilings do not hold for this run (docs/machine.md): a row ran
     * above them, or they were measured under load. The verdicts on this
     * roofline are then unreliable; `stale_reason` says why. */
    bool unreliable;
    char stale_reason[256];
    int n_levels; /* every measured level, for plots (L1 .. DRAM) */
    struct {
        char name[8];
        double gbps;
    } levels[NTP_ROOFLINE_MAX_LEVELS];
    /* The GPU's roof (docs/gpu.md), for rows that ran on a device backend. */
    bool gpu_rows;      /* some row ran on a device backend */
    bool gpu_available; /* ... and the ceilings held a GPU to place them on */
    char gpu_name[128];
    char gpu_math[8]; /* the GEMM peak used: "f32", "tf32", "f16", "bf16" */
    double gpu_peak_gflops;
    double gpu_bandwidth_gbps; /* device DRAM */
    double gpu_ridge_intensity;
    double gpu_h2d_gbps, gpu_d2h_gbps;
} ntp_roofline;

/* Predicted against measured (docs/predict.md): filled by
 * ntp_prediction_apply when the machine has a calibration. */
typedef struct ntp_run_prediction {
    bool available;
    char calibration[192];  /* "onednn 3.4.1 f32, 2026-11-24T23:00:00Z" */
    bool stale;             /* the backend's version changed since */
    bool roofline_only;     /* from ceilings alone */
    char uncalibrated[256]; /* families not calibrated, "" for none */
    /* Where the weights come from between passes, where the calibration
     * measured what a pass keeps (ntp_prediction_weights_note); "" else. */
    char weights_note[256];
    int n_compared;           /* layers predicted and measured */
    int within_10, within_25; /* of them, |error| <= 10% / 25% */
    int n_major;              /* of them, > 1% of the summed layer time */
    int major_within_25;
    double predicted_ms; /* end to end: the predicted layers' sum */
    double measured_ms;  /* the run's median end-to-end latency */
    double error;        /* (predicted - measured) / measured */
    /* The measured median time of the layers not predicted (inlays,
     * families not calibrated): the end-to-end error counts them against
     * the prediction; covered_error leaves them out of the measurement. */
    double unpredicted_ms;
    double covered_error; /* (predicted - (measured - unpredicted)) / (measured - unpredicted) */
    /* The calibration ran at another thread count than the run: its
     * coefficients do not hold (both counts resolved, 0 never). */
    bool threads_differ;
    int calibration_threads, run_threads;
    /* The memory bus around the calibration (ntp_calibration.bus): the
     * lower of its probes' shares of the DRAM triad, -1 n/a (not probed,
     * no ceiling, a calibration made before it was recorded, a
     * roofline-only prediction); and whether it read low. */
    double calibration_bus_share;
    bool calibration_bus_low;
    /* The calibration's pace (ntp_calibration.pace_gflops, the best look
     * of its CPUs, docs/run.md#pace); 0 n/a (not looked, a calibration
     * made before it was recorded, a roofline-only prediction). A threaded
     * backend's calibration is not paced: the pace is then that of a
     * paced calibration of the same machine (ref's), whose backend
     * calibration_pace_backend names ("" where n/a). */
    double calibration_pace_gflops;
    char calibration_pace_backend[32];
} ntp_run_prediction;

/* What ntp_run (or ntp_run_result_load) found: opaque, read through the
 * accessors below; it owns its rows, strings and arrays until
 * ntp_run_result_free. A string or row returned is valid as long as the
 * result. An index out of range gives NULL (0 for a count). */
typedef struct ntp_run_result ntp_run_result;
struct ntp_torch_script_result;

/* The topology's name and the file it was loaded from. */
NTP_API const char *ntp_run_result_topology(const ntp_run_result *r);
NTP_API const char *ntp_run_result_source(const ntp_run_result *r);
/* The backend asked for (the default's name when none was). */
NTP_API const char *ntp_run_result_backend(const ntp_run_result *r);
NTP_API ntp_dtype ntp_run_result_precision(const ntp_run_result *r);
/* The value of param "batch", 0 if none. */
NTP_API int64_t ntp_run_result_batch(const ntp_run_result *r);
NTP_API int ntp_run_result_threads(const ntp_run_result *r);
NTP_API uint64_t ntp_run_result_seed(const ntp_run_result *r);
NTP_API int ntp_run_result_warmup(const ntp_run_result *r);
/* Measured iterations of the end-to-end pass. */
NTP_API int ntp_run_result_iterations(const ntp_run_result *r);
/* The marker whose layers alone were measured (--only), NULL: all. */
NTP_API const char *ntp_run_result_only_marker(const ntp_run_result *r);
/* The topology's params as run: name and value of param i. */
NTP_API int ntp_run_result_param_count(const ntp_run_result *r);
NTP_API const char *ntp_run_result_param_name(const ntp_run_result *r, int i);
NTP_API const char *ntp_run_result_param_value(const ntp_run_result *r, int i);
/* Whether backends were let fuse layers (ntp_run_opts.fuse). */
NTP_API bool ntp_run_result_fused(const ntp_run_result *r);
/* The thread pools' wait policy and its settings (ntp_wait_policy). */
NTP_API const char *ntp_run_result_wait_policy(const ntp_run_result *r);
NTP_API const char *ntp_run_result_wait_settings(const ntp_run_result *r);
/* Rows, in execution order (only the only_marker range): layers and the
 * steps between them. */
NTP_API int ntp_run_result_layer_count(const ntp_run_result *r);
NTP_API const ntp_layer_result *ntp_run_result_layer(const ntp_run_result *r, int i);
/* Marker segments over the rows. */
NTP_API int ntp_run_result_marker_count(const ntp_run_result *r);
NTP_API const ntp_marker_result *ntp_run_result_marker(const ntp_run_result *r, int i);
/* The pass without per-layer timing, and the per-iteration sum of the layer times. */
NTP_API const ntp_stats *ntp_run_result_end_to_end_ms(const ntp_run_result *r);
NTP_API const ntp_stats *ntp_run_result_layer_sum_ms(const ntp_run_result *r);
/* (median layer sum - median end-to-end) / median end-to-end: the cost of
 * timing every layer, and that cost per row in µs. */
NTP_API double ntp_run_result_overhead_fraction(const ntp_run_result *r);
NTP_API double ntp_run_result_overhead_per_layer_us(const ntp_run_result *r);
/* Samples per second: batch / median end-to-end. */
NTP_API double ntp_run_result_throughput(const ntp_run_result *r);
/* The median end-to-end latency. */
NTP_API double ntp_run_result_latency_ms(const ntp_run_result *r);
/* Every layer's prepare (primitive creation, weight packing). */
NTP_API double ntp_run_result_prepare_ms(const ntp_run_result *r);
NTP_API int64_t ntp_run_result_flops(const ntp_run_result *r);
NTP_API const ntp_memory_result *ntp_run_result_memory(const ntp_run_result *r);
NTP_API const ntp_env *ntp_run_result_env(const ntp_run_result *r);
/* Warnings: noisy or too short runs, fallbacks, contention. */
NTP_API int ntp_run_result_warning_count(const ntp_run_result *r);
NTP_API const char *ntp_run_result_warning(const ntp_run_result *r, int i);
/* Per-iteration layer timestamps (ntp_run_opts.keep_trace), one per row. */
NTP_API int ntp_run_result_trace_count(const ntp_run_result *r);
NTP_API const ntp_trace_iter *ntp_run_result_trace(const ntp_run_result *r, int i);
/* A reduced-precision run's distance from f32, one per graph output, and
 * what it was compared with ("f32 on onednn"; NULL: not compared). */
NTP_API int ntp_run_result_accuracy_count(const ntp_run_result *r);
NTP_API const ntp_accuracy *ntp_run_result_accuracy(const ntp_run_result *r, int i);
NTP_API const char *ntp_run_result_accuracy_baseline(const ntp_run_result *r);
/* The counting pass (docs/counters.md): the counters and tool asked for
 * (NULL: none), its iterations and threads, and its notes (n/a reasons
 * for the whole run, files the tools left). */
NTP_API const char *ntp_run_result_counters(const ntp_run_result *r);
NTP_API const char *ntp_run_result_tool(const ntp_run_result *r);
NTP_API int ntp_run_result_counter_iterations(const ntp_run_result *r);
NTP_API int ntp_run_result_counter_threads(const ntp_run_result *r);
NTP_API int ntp_run_result_counter_note_count(const ntp_run_result *r);
NTP_API const char *ntp_run_result_counter_note(const ntp_run_result *r, int i);
/* The ceilings the rows were placed against (ntp_roofline_apply). */
NTP_API const ntp_roofline *ntp_run_result_roofline(const ntp_run_result *r);
/* Predicted against measured (ntp_prediction_apply). */
NTP_API const ntp_run_prediction *ntp_run_result_prediction(const ntp_run_result *r);
/* ntp_run_opts.torch_script's figure (include/ntprof/frameworks.h); NULL when not asked. */
NTP_API const struct ntp_torch_script_result *ntp_run_result_torch_script(const ntp_run_result *r);
/* The Slurm sweep task the run belongs to (docs/cluster.md), in a report a
 * task kept when the store refused the run: the sweep's id (0: none), the
 * task's index, the sweep's created_at and the Slurm job ("12_3"). */
NTP_API int64_t ntp_run_result_sweep_id(const ntp_run_result *r);
NTP_API int ntp_run_result_sweep_index(const ntp_run_result *r);
NTP_API const char *ntp_run_result_sweep_created_at(const ntp_run_result *r);
NTP_API const char *ntp_run_result_sweep_job(const ntp_run_result *r);

/* Build g on the chosen backend, run and measure it. */
NTP_API ntp_status ntp_run(ntp_ctx *ctx, const ntp_graph *g, const ntp_run_opts *opts,
                           ntp_run_result **out);
NTP_API void ntp_run_result_free(ntp_run_result *r);

/* A --tool run re-executes this program under the tool with NTP_TOOL set
 * in the environment (docs/counters.md). In that child, call this on the
 * options before ntp_run: it returns true and shortens the timing passes
 * (the counting pass is the child's job), and the caller must not write
 * reports. It returns false, leaving o alone, in any other process. */
NTP_API bool ntp_run_tool_child(ntp_run_opts *o);

/* Fill env with facts about this machine and build. */
NTP_API void ntp_env_collect(ntp_env *env);

/* Sample what other processes take from the CPUs this process may use,
 * over `seconds` of sleeping (docs/run.md#contention): a machine check
 * before deciding how to run. */
NTP_API void ntp_contention_sample(double seconds, ntp_contention *out);

/* The thread pools' wait policy this process runs under
 * (docs/run.md#wait-policy), as the OpenMP runtime and OpenBLAS read it
 * from the environment when they were loaded: `name` is the CLI's policy
 * ("spin", "passive", "auto: ..."), "environment" for settings of the
 * user's own, or "spin" for the runtimes' defaults; `settings` the
 * variables that were set ("GOMP_SPINCOUNT=10000 OPENBLAS_THREAD_TIMEOUT=22"), "" for none. */
NTP_API void ntp_wait_policy(const char **name, const char **settings);

/* Names of the backends built into this library, comma-separated. */
NTP_API const char *ntp_backends(void);
/* The built backends that can run on this machine, comma-separated: an
 * accelerator's backend without its device is left out (docs/gpu.md). */
NTP_API const char *ntp_backends_available(void);
/* Can the built backend `name` run on this machine? When not, why says
 * why in words ("no CUDA device: ..."; or that it is not built). */
NTP_API bool ntp_backend_usable(const char *name, char *why, size_t len);

/* GPU profilers over a finished run (docs/gpu.md). `tool` is "ncu",
 * "ncu:MARKER" or "nsys". ntp_run_gpu_tool_check refuses, with one line,
 * a tool that is not installed. ntp_run_gpu_tool runs `argv` (this
 * program's command line for the same run, with --tool nvtx so the child
 * wraps every row in an NVTX range) under the tool, leaving its files in
 * `dir`: ncu profiles the kernels of the marker (MARKER, else the run's
 * --only marker) through its NVTX filter and adds SM throughput, DRAM
 * throughput and achieved occupancy to that marker's counters; nsys
 * records a timeline. Either adds a note naming its files. */
NTP_API ntp_status ntp_run_gpu_tool_check(ntp_ctx *ctx, const char *tool);
NTP_API ntp_status ntp_run_gpu_tool(ntp_ctx *ctx, ntp_run_result *r, const char *tool,
                                    const char *const *argv, const char *dir);

#ifdef __cplusplus
}
#endif
#endif
