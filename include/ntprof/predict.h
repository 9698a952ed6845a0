/* ntprof: per-layer latency predicted without running (docs/predict.md).
 *
 *   ntp_calibration cal;
 *   ntp_calibrate(ctx, &machine, &ceilings, &opts, &cal);   // minutes: 3 passes
 *   ntp_store_save_calibration(ctx, db, &cal);
 *   ...
 *   ntp_prediction *p;
 *   ntp_predict(ctx, graph, &cal, &p);                      // no run
 *   ntp_prediction_compare(p, run_result, &summary);        // beside a measurement
 *
 * A calibration times a designed set of single-layer topologies per op
 * family on one backend and precision through the engine, and fits per
 * family the explainable model
 *
 *     t = overhead + a * flops / peak + b * bytes / bandwidth(level)
 *
 * where peak is the machine's compute ceiling at the precision, level the
 * innermost memory level the layer's traffic fits in, and overhead, a, b
 * are non-negative (least squares on relative error); the kernel the
 * backend picks for a layer scales its family's time by that kernel's
 * correction (ntp_calibration.impls), and a backend's reorder rows have
 * a model of their own (ntp_calibration.reorder). */
#ifndef NTPROF_PREDICT_H
#define NTPROF_PREDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ntprof/api.h"
#include "ntprof/graph.h"
#include "ntprof/machine.h"
#include "ntprof/run.h"
#include "ntprof/report.h"
#include "ntprof/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The op families a calibration fits one model each for. */
// clang-format off
#define NTP_PREDICT_FAMILY_TABLE(F)                                          \
    F(CONV,      "conv")       /* dense and grouped conv, kernel > 1 */     \
    F(CONV1X1,   "conv1x1")    /* pointwise conv */                         \
    F(DEPTHWISE, "depthwise")  /* groups = input channels */                \
    F(FC,        "fc")         /* fc and matmul */                          \
    F(POOL,      "pool")       /* max/avg pooling, global pooling */        \
    F(REDUCE,    "reduce")     /* reduce_mean, _sum, _max, ... over axes */ \
    F(ELTWISE,   "eltwise")    /* unary, binary, data movement */          \
    F(NORM,      "norm")       /* batchnorm, layernorm, softmax */          \
    F(RNN,       "rnn")        /* lstm, gru, rnn cells over a sequence */   \
    F(ATTENTION, "attention")                                                \
    F(COPY,      "copy")       /* concat, split, transpose, pad, slice */  \
    F(MFCC,      "mfcc")       /* the mfcc inlay */                         \
    F(CTC,       "ctc_decode") /* the ctc_decode inlay */
// clang-format on

typedef enum ntp_predict_family {
#define NTP_PF_ENUM_(e, s) NTP_PREDICT_FAMILY_##e,
    NTP_PREDICT_FAMILY_TABLE(NTP_PF_ENUM_)
#undef NTP_PF_ENUM_
        NTP_PREDICT_FAMILY_COUNT,
    /* Layers with no work of their own (reshape, flatten, dropout,
     * constant): predicted 0. */
    NTP_PREDICT_FAMILY_FREE = NTP_PREDICT_FAMILY_COUNT,
    /* Layers no family covers (an op of class NONE; none has it since the
     * inlays have their family): listed, not predicted. */
    NTP_PREDICT_FAMILY_NONE
} ntp_predict_family;

/* "conv", ..., "free", "none". */
NTP_API const char *ntp_predict_family_name(ntp_predict_family f);

/* The model's terms, in this order. The stream term is a layer's bytes
 * over the fastest level's bandwidth, whatever level holds them: the rate
 * of a kernel that streams its data (a pooling, an element-wise op, a
 * normalisation, a copy) bounds it wherever its bytes sit, where the
 * memory term (bytes over the bandwidth of the level they fit in) would
 * make the same kernel 2.7x slower in the L3 than in the L2
 * (docs/predict.md#the-stream-term). Other families' stream term is 0. */
enum {
    NTP_PREDICT_TERM_OVERHEAD,
    NTP_PREDICT_TERM_COMPUTE,
    NTP_PREDICT_TERM_MEMORY,
    NTP_PREDICT_TERM_STREAM,
    NTP_PREDICT_TERMS
};

typedef struct ntp_family_model {
    bool calibrated;
    int samples; /* configurations timed */
    /* overhead in seconds, then the multipliers of the compute and memory
     * roofline times (1 = the layer runs at the ceiling) and of the stream
     * term. */
    double coef[NTP_PREDICT_TERMS];
    /* Fit quality on the calibration's own samples: median and largest
     * |predicted - measured| / measured. */
    double median_error, max_error;
    /* The cold start in network conditions (docs/predict.md#a-layers-cold-
     * start): what a small layer of the family took more after the caches
     * were written over than warm, its code and its backend's state read
     * back from memory; the median over its cold_samples pairs, in
     * seconds, at least 0, and inside the overhead. A network that keeps
     * its state in a cache pays less of it. 0 with cold_samples 0: not
     * measured (warm calibrations, --quick, one made before). */
    double cold_s;
    int cold_samples;
    /* What a byte read from memory (past the last cache) costs against
     * one read from a cache, beyond what their triads say: the memory
     * term's part that comes from memory (ntp_calibration_sample.x_far)
     * is multiplied by it. A weight read again at every step of a
     * recurrent layer streams from the L3 at a larger share of its triad
     * than from memory (2026-12-04, the Zen 4 VM: 1.9x the L3's triad,
     * 1.5x memory's; docs/predict.md#recurrent-layers). Fitted where a
     * family's samples read from both; 0 where not fitted (as 1). */
    double far_scale;
} ntp_family_model;

/* The range far_scale is fitted over (and a stored one must lie in):
 * 1/NTP_PREDICT_FAR_SCALE_MAX to NTP_PREDICT_FAR_SCALE_MAX. */
#define NTP_PREDICT_FAR_SCALE_MAX 4.0

#define NTP_PREDICT_MAX_LEVELS 6

/* A backend picks one of several kernels for a layer (oneDNN's batch norm:
 * bnorm_jit on a blocked input, nspc_bnorm on NHWC, ncsp_bnorm on NCHW), and
 * they differ by several times where the family's roofline terms do not.
 * A correction scales the family's time for the layers run by one
 * implementation: the geometric mean of measured / family-model time over
 * the calibration's samples that ran it (docs/predict.md#implementations). */
#define NTP_PREDICT_MAX_IMPLS 48
/* The sizes of weights ref's dot-product loop was timed at (ntp_calibration.gemv). */
#define NTP_PREDICT_MAX_GEMV 12
/* Points of a calibration's wake by sleep (ntp_calibration.wake_points). */
#define NTP_WAKE_POINTS 4
/* Points of what a pass keeps by its size (ntp_calibration.kept). */
#define NTP_KEPT_POINTS 12
/* A probe counts as kept after a pass of some size where its time went at
 * most this share of the way from its warm time to its time after the
 * flush (ntp_calibration.kept). */
#define NTP_KEPT_SHARE 0.25
/* And a network's weights are priced at the level its pass fits in where
 * this many times what the pass touches (its weights and arena) was kept:
 * a network's layers take longer for their bytes than the spacers, and
 * what a pass keeps falls with its time as well as its bytes
 * (docs/predict.md#what-a-pass-keeps-measured). */
#define NTP_KEPT_MARGIN 2.0

/* The samples a recurrent or pooling kernel's correction keeps by size
 * (ntp_impl_correction.point_bytes), and the width of their weights in
 * log(size): a sample counts fully at its own size, 61% at 1.65 times
 * it, 14% at 2.7 times (docs/predict.md#a-recurrent-kernels-steps-and-size). */
#define NTP_PREDICT_MAX_POINTS 24
#define NTP_PREDICT_SIZE_WIDTH 0.5

typedef struct ntp_impl_correction {
    ntp_predict_family family;
    char impl[48]; /* the run's `impl` ("nspc_bnorm:any") */
    int samples;
    double scale; /* multiplies the family's predicted time */
    /* A recurrent or pooling kernel's samples by size (the rnn family's
     * at one direction's input and recurrent weights, W and R, in bytes;
     * the pool family's at the layer's traffic), and log(measured /
     * predicted) of the whole layer, scale applied. A layer's time is
     * multiplied further by exp of their mean weighted by distance in
     * log(size) (ntp__predict_size_factor): how fast a recurrent kernel
     * re-reads its weights at every step, and a pooling kernel walks its
     * image, changes with their size in ways the levels' triads do not
     * show. n_points 0: none (every other family, and calibrations made
     * before). */
    int n_points;
    double point_bytes[NTP_PREDICT_MAX_POINTS], point_log[NTP_PREDICT_MAX_POINTS];
} ntp_impl_correction;

/* One size of weights ref's dot-product loop was timed at, and its rate. */
typedef struct ntp_gemv_rate {
    int64_t bytes;
    double gbps;
} ntp_gemv_rate;

typedef struct ntp_calibration {
    char machine_key[256];
    char backend[32];
    char backend_version[192]; /* the library's version; ntprof's and its kernels' for ref */
    char precision[8];         /* "f32", "bf16", ... */
    int threads;
    char calibrated_at[32]; /* ISO 8601 UTC */
    char ntprof_version[32];
    /* When ntp_calibration_refit fitted it again from the stored samples
     * (ISO 8601 UTC; calibrated_at stays the timing's); "" if never. */
    char refitted_at[32];
    double loadavg; /* 1-minute load average when it started */
    bool quick;     /* the --quick design (tests) */
    /* The passes over the design (ntp_calibrate_opts.passes); 1 in a
     * calibration made before passes were recorded (it timed each
     * configuration once). */
    int passes;
    /* Which pass each sample's time is (ntp_calibrate_opts.keep):
     * "fastest" (the pass with the lowest median) or "median" (the median
     * of the per-pass medians, and every calibration made before this was
     * recorded). */
    char keep[8];
    /* Timings (a configuration in a pass) during which a look found the
     * CPUs apart (docs/run.md#handoff: not sharing a cache), and of those
     * the ones kept because no pass of their configuration found them
     * together; the others were left out of its time. 0 in a calibration
     * of one thread, or made before this was recorded. */
    int apart_timings, apart_kept;
    /* The same for the timings whose look at the CPUs' pace read under
     * NTP_CALIBRATE_SLOW_PACE of the best (pace_gflops: the best look,
     * the multiply-add GFLOP/s of the CPU a timing ended on; 0: not looked, or a
     * calibration made before it was). */
    int slow_timings, slow_kept;
    double pace_gflops;
    /* The memory bus before the first pass and after the last (the run's
     * probe, docs/run.md#the-memory-bus: a DRAM triad against the stored
     * ceiling): a calibration timed while another guest used the bus
     * prices memory-bound layers for that bus. Not measured, with no
     * reason, in a calibration made before it was recorded. */
    ntp_bandwidth_check bus;
    /* The ceilings the terms divide by: compute peak at the precision and
     * each memory level with the bytes of traffic it holds (DRAM: 0, any). */
    double peak_gflops;
    int n_levels;
    struct {
        char name[8];
        int64_t capacity_bytes;
        double gbps;
    } levels[NTP_PREDICT_MAX_LEVELS];
    ntp_family_model family[NTP_PREDICT_FAMILY_COUNT];
    /* How each configuration was timed (ntp_calibrate_opts.cache): "warm"
     * (alone, again and again: its data stays in cache) or "network" (its
     * weights evicted and its input just written, as in a network); ""
     * in a calibration made before the mode was recorded: warm. */
    char cache[16];
    /* The instruction-set flags of the machine calibrated (ntp_env's
     * cpu_flags: "avx2 fma avx512f ..."), which the layouts a backend picks
     * depend on; "" in a calibration made before they were recorded. */
    char cpu_flags[256];
    /* The CPU calibrated, as ntp_env's cpu_signature ("AuthenticAMD family
     * 26 model 2 stepping 1"): a machine key's model name may be generic
     * ("AMD EPYC" in a VM), the signature tells two CPUs under it apart;
     * "" in a calibration made before it was recorded. */
    char cpu_signature[96];
    /* A backend's layout changes (run rows of kind "reorder": oneDNN's
     * blocked/plain reorders, XNNPACK's NCHW/NHWC transposes), fitted on
     * the reorder rows the calibration's runs timed: overhead + memory x
     * bytes / bandwidth(level). Not calibrated: priced as the copy family. */
    ntp_family_model reorder;
    /* The wake of the backend's threads (docs/predict.md#waking-the-threads):
     * what a row of this backend costs more when the row before it ran on
     * another backend (a layer handed to ref), its pool's workers having
     * gone to sleep meanwhile; the median over the calibration's "wake"
     * samples of a layer after a ref layer less the same layer alone, in
     * seconds. 0 with wake_samples 0: not measured (ref itself, --quick, a
     * calibration made before it was). */
    double wake_s;
    int wake_samples;
    /* The wake by how long the workers slept: n_wake_points pairs (sleep,
     * wake) in seconds, increasing in sleep, each the medians over the
     * wake samples whose ref layer ran about as long (its time stored as a
     * "sleep" sample beside the "wake" one). Between two points a
     * prediction interpolates in log(sleep), past the ends it takes the
     * nearer one. 0: wake_s whatever the sleep (one length of ref layer
     * measured, or a calibration made before they were graded). */
    int n_wake_points;
    double wake_points[NTP_WAKE_POINTS][2];
    /* The reference backend's dot-product loop (ntp__ref_gemm below four
     * rows: a batch-1 fc, a recurrent step's product) by the size of the
     * weights it reads: its rate, bytes over the median time, of each fc of
     * one row the calibration timed, by bytes ascending (one point per
     * size; docs/predict.md#recurrent-layers). The loop, not a cache
     * level, bounds it, and it slows past the TLB's reach (20 GB/s at 4
     * MB, 16 at 64 MB on the Zen 4 VM): a recurrent layer's product is
     * priced at the rate interpolated at its R's size. n_gemv 0: none (a
     * backend other than ref, --quick, a calibration made before). */
    int n_gemv;
    ntp_gemv_rate gemv[NTP_PREDICT_MAX_GEMV];
    /* What a network's pass keeps of a layer's weights until the next pass
     * (docs/predict.md#what-a-pass-keeps-measured): a probe (an fc of 4 MB)
     * timed again and again without a flush, after a chain of spacers
     * (3x3 convolutions of 2.4 MB each) between two of its passes, as
     * sample kind "kept". points: (bytes, share) by bytes ascending, what
     * the pass touches (the probe's and the spacers' weights and the
     * arena), and how far the probe's time went from its warm time (no
     * spacer: 0) towards its time after the flush (its "layer" sample:
     * 1). bytes: the largest of those whose share, and every smaller
     * one's, is at most NTP_KEPT_SHARE; 0 where none is. samples 0: not
     * measured (--quick, a warm calibration, one made before): every
     * network's weights are priced from memory. */
    struct {
        int samples, n_points;
        double points[NTP_KEPT_POINTS][2];
        int64_t bytes;
    } kept;
    /* Per implementation, the correction of its family's time. */
    int n_impls;
    ntp_impl_correction impls[NTP_PREDICT_MAX_IMPLS];
} ntp_calibration;

typedef struct ntp_calibrate_opts {
    const char *backend; /* NULL: the default backend */
    ntp_dtype precision; /* a compute precision; default f32 */
    int threads;         /* 0: every core, as a run */
    bool quick;          /* a few small configurations per family (tests) */
    /* Only these families (NULL: all), comma-separated names. */
    const char *families;
    /* Progress for a terminal; label names the configuration. */
    void (*progress)(void *user, int done, int total, const char *label);
    void *progress_user;
    /* Leave out configurations above this many FLOPs (0: the backend's
     * default: NTP_CALIBRATE_REF_MAX_FLOPS on the slow reference backend,
     * no limit elsewhere; negative: no limit). */
    int64_t max_flops;
    /* How each configuration is timed (docs/predict.md#calibration-in-
     * network-conditions): NTP_CALIBRATE_NETWORK (the default) or
     * NTP_CALIBRATE_WARM. */
    int cache;
    /* Where not NULL, every configuration the calibration timed, as
     * *samples (n_samples of them; free with free()): what
     * ntp_calibration_refit fits again without timing. */
    struct ntp_calibration_sample **samples;
    int *n_samples;
    /* Passes over the design, 1 to NTP_CALIBRATE_MAX_PASSES (0: the
     * default, NTP_CALIBRATE_PASSES, or 1 with quick): every configuration
     * timed once, then every one again, ..., so that a slow phase of the
     * machine falls on different configurations in each pass; a
     * configuration is kept only if it ran in a majority of the passes
     * (docs/predict.md#passes). */
    int passes;
    /* Which of a configuration's passes its sample keeps: its fastest
     * (NTP_CALIBRATE_KEEP_FASTEST, the default) or the median of the
     * per-pass medians (NTP_CALIBRATE_KEEP_MEDIAN). */
    int keep;
} ntp_calibrate_opts;

/* ntp_calibrate_opts.keep. A slow phase of a shared machine (another
 * tenant on the memory bus, a CPU taken away) only ever adds time, and on
 * the VMs measured it outlasted a pass: the fastest pass is the closest to
 * the machine's own speed (docs/predict.md#passes). */
enum { NTP_CALIBRATE_KEEP_FASTEST, NTP_CALIBRATE_KEEP_MEDIAN };
/* "fastest" / "median"; NULL for another value. */
NTP_API const char *ntp_calibrate_keep_name(int keep);
/* The value a name names; false (k untouched) for any other text. */
NTP_API bool ntp_calibrate_keep_parse(const char *name, int *keep);

/* The passes a calibration of the full design makes by default, and the
 * most it accepts (each pass takes the time of a whole calibration). */
#define NTP_CALIBRATE_PASSES 3
#define NTP_CALIBRATE_MAX_PASSES 9
/* Timings more of a configuration whose every pass ran while the CPUs
 * were apart (docs/predict.md#passes), until one finds them together. */
#define NTP_CALIBRATE_APART_RETRIES 2
/* A timing whose look at the pace of the CPU it ran on (its multiply-add
 * rate) read under this share of the calibration's best look ran on a
 * CPU the host slowed (docs/predict.md#passes): treated as an apart
 * timing. The run's share (include/ntprof/run.h). */
#define NTP_CALIBRATE_SLOW_PACE NTP_PACE_SLOW_SHARE

enum {
    /* Before each timed pass the run writes over a buffer twice the
     * last-level cache, at most NTP_CALIBRATE_MAX_FLUSH_BYTES
     * (ntp_run_opts.flush_bytes: the layer's weights are evicted, as a
     * network's other layers evict them), then a copy layer writes the
     * configuration's input (found where a previous layer left it). */
    NTP_CALIBRATE_NETWORK,
    /* The configuration alone, again and again (its data stays in cache). */
    NTP_CALIBRATE_WARM
};

/* The most a network-conditions calibration writes over before each
 * pass: twice a 32 MiB last-level cache (a Zen 4/5 CCD's; a hypervisor may
 * report a cache no CPU has). */
#define NTP_CALIBRATE_MAX_FLUSH_BYTES (INT64_C(64) << 20)

/* The reference backend's design keeps configurations up to 128 MFLOP:
 * the full design would take tens of minutes there. 128, not 100: the
 * design's bottleneck-sized pointwise layers (103 MFLOP) are where ref's
 * GEMM runs fastest per FLOP, and a fit without them priced larger
 * pointwise layers over their time (docs/predict.md#calibration-in-network-conditions). */
#define NTP_CALIBRATE_REF_MAX_FLOPS INT64_C(128000000)

/* One timing a calibration made (docs/predict.md#samples): a layer L of a
 * configuration of the design, or a reorder row its run timed. The
 * history keeps them beside the calibration, so that the model can be
 * fitted again, by a later ntprof, without timing anything. */
typedef struct ntp_calibration_sample {
    /* "layer" (the configuration's layer L) or "reorder" (a layout change
     * of the backend that ran in the same run). */
    char kind[8];
    ntp_predict_family family; /* the configuration's */
    /* The configuration's markup (its inputs and layer L), and the
     * channels of the 1x1 conv that makes each input (0: none): with the
     * calibration's cache mode, the topology that was timed. */
    char config[1024];
    int conv_fed;
    char ran_on[32]; /* the backend that ran L (a handed layer: not the calibrated one) */
    char impl[48];   /* the kernel that ran L, as the run names it */
    /* The roofline's terms when it was timed: its memory level, FLOPs and
     * bytes, and x = (1, flops / peak, bytes / bandwidth, bytes / the
     * fastest level's bandwidth) in seconds; a reorder row's bytes, read
     * and written. The stream term is not stored: it is recomputed from
     * the configuration when read back, as x_in. */
    char level[8];
    int64_t flops, bytes;
    double x[NTP_PREDICT_TERMS];
    /* The measured median, its 95% interval, and the timed iterations.
     * Over several passes (ntp_calibrate_opts.passes), with the fastest
     * kept: the median, interval and iterations of the pass with the
     * lowest median; with the median kept: the median of the per-pass
     * medians, the medians of the per-pass interval bounds, and the
     * iterations of every pass it ran in, summed. */
    double median_s, ci95_lo_s, ci95_hi_s;
    int n;
    /* The passes it ran in (more than half of the calibration's; the
     * time is one of them or their median), and the lowest and highest of their
     * medians: the spread the machine's speed made across the passes. A
     * sample stored before passes were kept: 1, and the median twice. */
    int passes;
    double pass_min_s, pass_max_s;
    /* A recurrent layer's input GEMM as the fc family prices it: (1,
     * flops / peak, bytes / bandwidth) in seconds (x then holds its
     * recurrent part alone); 0 for every other layer. Not stored: the
     * terms are recomputed from the configuration when read back. */
    double x_in[NTP_PREDICT_TERMS];
    /* On the reference backend, a recurrent layer's recurrent product as
     * the fc family prices it: (T - 1) x directions calls of an fc of N
     * rows over R (ntp__ref_gemm's loop), summed the same way; x then holds
     * the cell alone. 0 otherwise; not stored, as x_in. */
    double x_rec[NTP_PREDICT_TERMS];
    int64_t rec_rows;   /* N: the rows of each call of x_rec */
    int64_t rec_weight; /* the bytes of R (one direction's) each call reads */
    /* The size its kernel's correction is read at
     * (ntp_impl_correction.point_bytes): a recurrent layer's one direction
     * of W and R in bytes, a pooling layer's traffic; 0 otherwise; not
     * stored, as x_in. */
    int64_t size_bytes;
    /* On the reference backend, a convolution's im2col copy under the copy
     * family's terms (its GEMMs are then in x_in, under the fc family's);
     * 0 otherwise; not stored, as x_in. */
    double x_copy[NTP_PREDICT_TERMS];
    /* The part of x's memory term read from memory, past the last cache
     * (ntp_family_model.far_scale); 0 otherwise; not stored, as x_in. */
    double x_far;
} ntp_calibration_sample;

NTP_API void ntp_calibrate_opts_default(ntp_calibrate_opts *o);

/* Time the design on m (this machine) and fit each family against the
 * ceilings c (ntp_machine_measure or cached). */
NTP_API ntp_status ntp_calibrate(ntp_ctx *ctx, const ntp_machine_info *m, const ntp_ceilings *c,
                                 const ntp_calibrate_opts *opts, ntp_calibration *out);

/* Fit cal's families, reorder model and corrections again from its n
 * samples (ntp_store_load_calibration_samples) without timing: each
 * layer's terms recomputed from its configuration under cal's ceilings
 * by this ntprof's model (the stored terms where the markup no longer
 * loads), then the fit ntp_calibrate makes. out is cal with the new fit;
 * on unchanged code, the fit ntp_calibrate stored. */
NTP_API ntp_status ntp_calibration_refit(ntp_ctx *ctx, const ntp_calibration *cal,
                                         const ntp_calibration_sample *samples, int n,
                                         ntp_calibration *out);
/* --- a stored calibration against the machine now (docs/predict.md#recheck) ------------- */

/* The configurations a recheck times by default, and the most it takes. */
#define NTP_RECHECK_CONFIGS 16
#define NTP_RECHECK_MAX 64
/* Samples shorter than this are left out: their medians move with a
 * thread pool's wake-up more than with the machine's speed. */
#define NTP_RECHECK_MIN_S 50e-6
/* How far now / stored may be from 1 (either way) before the calibration
 * is taken not to hold now. */
#define NTP_RECHECK_TOLERANCE 0.10

typedef enum ntp_recheck_verdict {
    NTP_RECHECK_HOLDS,   /* the median ratio within the tolerance */
    NTP_RECHECK_MOVED,   /* its 95% interval wholly outside it */
    NTP_RECHECK_UNCLEAR, /* the median outside, the interval reaching in */
    NTP_RECHECK_NONE     /* nothing could be timed again */
} ntp_recheck_verdict;

typedef struct ntp_recheck_row {
    int sample; /* its index among the samples given */
    ntp_predict_family family;
    char impl[48];     /* the kernel the calibration recorded */
    char now_impl[48]; /* the kernel that ran it now ("" when it failed) */
    char what[72];     /* "conv 3x3 s1 1x512x7x7 -> 512" as the markup says */
    double stored_s;   /* the calibration's time (its kept pass's median) */
    double now_s;      /* the median timed now; 0 when the run failed */
    double ratio;      /* now_s / stored_s; 0 when it failed */
} ntp_recheck_row;

typedef struct ntp_recheck {
    /* The calibration held against the machine. */
    char machine_key[256];
    char backend[32];
    char precision[8];
    char calibrated_at[32];
    char cache[16];
    int passes;
    char keep[8]; /* the pass each stored time is: "fastest" or "median" */
    /* When, under what load, and how long it took. */
    char checked_at[32];
    double loadavg;
    double wall_s;
    int n_rows;
    ntp_recheck_row rows[NTP_RECHECK_MAX];
    int n_timed; /* rows with a ratio */
    /* now / stored over the timed rows: the median and its 95% interval
     * (order statistics; min..max under 6 rows). Above 1: the machine is
     * slower now than when calibrated, and a prediction from it reads low
     * by about that much. */
    double ratio_median, ratio_ci95_lo, ratio_ci95_hi;
    ntp_recheck_verdict verdict;
} ntp_recheck;

typedef struct ntp_recheck_opts {
    int configs; /* 0: NTP_RECHECK_CONFIGS; at most NTP_RECHECK_MAX */
    /* Only these families' samples (NULL: all), comma-separated names:
     * a family the whole-machine figure may hide (two of 16 rows). */
    const char *families;
    void (*progress)(void *user, int done, int total, const char *label);
    void *progress_user;
} ntp_recheck_opts;

/* Time again, one pass each and as the calibration timed them (its cache
 * mode, threads and precision), configurations picked evenly from cal's n
 * layer samples (ntp_store_load_calibration_samples) in order of family
 * and time: those its backend ran, of at least NTP_RECHECK_MIN_S; and
 * compare. Seconds, not minutes: whether a stored calibration still
 * describes the machine now (a VM's speed moves between minutes). opts
 * NULL: the defaults. Fails when cal has no such samples. */
NTP_API ntp_status ntp_calibration_recheck(ntp_ctx *ctx, const ntp_machine_info *m,
                                           const ntp_calibration *cal,
                                           const ntp_calibration_sample *samples, int n,
                                           const ntp_recheck_opts *opts, ntp_recheck *out);

/* The version of the library backend `name` runs on, as a calibration
 * records it ("oneDNN 2.6.3" for onednn; for ref, ntprof's own with the
 * revision of its kernels, "ntprof 0.1.0, ref kernels 2026-12-04.9"; for
 * blas, OpenBLAS's and ref's revision, whose im2col and bias its
 * convolutions run). */
NTP_API void ntp_predict_backend_version(const char *backend, char *buf, size_t len);

/* Whether calibration c, taken for this machine's, no longer describes it:
 * its backend's version here is not the one it recorded, or the CPU it
 * was made on is not this one (its ISA flags or its signature, where it
 * recorded them: two CPUs can share a machine key whose model name a VM
 * made generic). why gets the reason: "onednn was calibrated with oneDNN
 * 2.7.3 and is now oneDNN 3.4.1", "... on another CPU (...) than this one
 * (...)". */
NTP_API bool ntp_calibration_stale(const ntp_calibration *c, char *why, size_t len);

/* Non-negative least squares on relative error: the coefficients
 * x >= 0 (n_terms of them, at most NTP_PREDICT_TERMS + 1) minimising
 * sum_i ((X_i . x - t_i) / t_i)^2 over n samples, X row-major
 * [n x n_terms]. Exact (every active set is tried). false when n is
 * smaller than 1 or a t_i is not positive. */
NTP_API bool ntp_predict_fit(const double *X, const double *t, int n, int n_terms, double *x);

/* A calibration from ceilings alone: every family at the roofline
 * (overhead 0, multipliers 1), for a machine one does not have
 * (ntp_predict with it is a roofline-only estimate). */
NTP_API void ntp_calibration_roofline(const ntp_ceilings *c, ntp_dtype precision,
                                      ntp_calibration *out);
/* Read ceilings for a what-if from JSON: {"peak_gflops": {"f32": ...},
 * "bandwidth_gbps": {"L1": ..., "DRAM": ...}, "capacity_bytes": {...}}. */
NTP_API ntp_status ntp_ceilings_read_whatif(ntp_ctx *ctx, const char *path, ntp_ceilings *out);

/* One layer's prediction. */
typedef struct ntp_layer_prediction {
    const char *name; /* owned by the prediction */
    const char *type;
    ntp_predict_family family;
    int64_t flops, bytes;
    const char *level;                         /* the memory level its traffic fits in */
    double predicted_ms;                       /* NAN when its family is not calibrated */
    double compute_ms, memory_ms, overhead_ms; /* the three terms */
    /* The backend that runs it: the calibration's, or the one the engine
     * hands it to (ref, where the calibration's backend cannot run it; a
     * layer's backend= attribute). Its time is under that backend's
     * calibration (ntp_predict_placed), never the requested one's. */
    const char *backend;
    /* Why it is not predicted ("n/a: not calibrated for ref", "n/a: mfcc
     * has no family (an inlay)"); "" when it is. */
    char note[64];
    /* A row a run adds besides the layers (ntp_prediction.copies): "reorder"
     * (a backend's layout change) or "convert" (the engine's conversion
     * between two backends' storage types); "layer" for a layer. */
    const char *kind;
    /* For a copy row: the layer (index into layers) it runs with, and
     * whether before it (its inputs) or after it (its outputs); -1 for a
     * row that stands for every reorder (unknown ones). */
    int layer;
    bool before;
    /* A layer a run with --fuse folds into another (ntp_predict_opts.fuse):
     * the head's name, kind "fused", predicted 0, its work priced in the
     * head's row as the fused kernel does it; NULL otherwise. */
    const char *fused_into;
    /* The implementation the prepared plan chose for the layer (NULL where
     * no plan was prepared) and the correction applied to its family's
     * time for it (1: none; ntp_calibration.impls). */
    const char *impl;
    double correction;
    /* The size that correction is read at (ntp_impl_correction.point_bytes):
     * a recurrent layer's one direction of W and R in bytes, a pooling
     * layer's traffic; 0 for every other layer, whose correction is its
     * kernel's one scale. */
    int64_t correction_bytes;
    /* The layout of the source that kernel reads ("plain", "blocked",
     * "nspc", "strided"; ntp_layer_result.src_layout), which keys the correction
     * with impl; NULL where no plan was prepared or the backend does not
     * say. */
    const char *src_layout;
    /* The loop a reference kernel runs for the layer, which keys its
     * correction ("ref:OP"): its type, or "gemv" for an fc of fewer than
     * 4 rows (ntp__ref_gemm's dot products; 4 rows and more run its packed
     * loop); NULL: its type. */
    const char *kernel_op;
    /* A recurrent layer's input GEMM, priced with the fc family's
     * coefficients (part of compute_ms; the correction is not applied to
     * it), and under the reference backend's calibration its recurrent
     * product too, as the fc calls ref runs at every step; 0 for every
     * other layer. */
    double input_gemm_ms;
    /* The wake of its backend's threads (ntp_calibration.wake_s), part of
     * predicted_ms: the layer runs after one placed on another backend. */
    double wake_ms;
    /* A recurrent layer under its backend's calibration, uncorrected, by
     * how a kernel runs its input GEMM: once over the sequence (merged_ms,
     * that GEMM merged_input_gemm_ms of it, under the fc family), or with
     * the recurrent product at every step, the input weights read again at
     * each (per_step_ms: oneDNN's brgemm cell). The plan's or the run's
     * kernel picks one (docs/predict.md, recurrent layers); 0 for every
     * other layer. */
    struct {
        double merged_ms, merged_input_gemm_ms, per_step_ms;
    } rnn;
} ntp_layer_prediction;

/* The calibrations a prediction holds: the requested backend's and those
 * of the backends layers are handed to. */
#define NTP_PREDICT_MAX_CALS 4

/* A prediction: an opaque handle (ntp_predict), read through the accessors
 * below, which answer NULL, 0 or false for a NULL prediction or an index
 * out of range; freed with ntp_prediction_free. */
typedef struct ntp_prediction ntp_prediction;

/* The topology's name, and its batch. */
NTP_API const char *ntp_prediction_topology(const ntp_prediction *p);
NTP_API int64_t ntp_prediction_batch(const ntp_prediction *p);
/* The requested backend's calibration it was predicted from. */
NTP_API const ntp_calibration *ntp_prediction_calibration(const ntp_prediction *p);
/* Whether it comes from ceilings alone (--ceilings, ntp_calibration_roofline). */
NTP_API bool ntp_prediction_roofline_only(const ntp_prediction *p);
/* One row per layer of the graph, in execution order. */
NTP_API int ntp_prediction_layer_count(const ntp_prediction *p);
NTP_API const ntp_layer_prediction *ntp_prediction_layer(const ntp_prediction *p, int i);
/* The sum of the predicted rows, layers and copies (copies_ms of it). */
NTP_API double ntp_prediction_total_ms(const ntp_prediction *p);
/* Families the model needed that the calibration lacks, comma-separated
 * ("" for none), and how many layers they leave unpredicted. */
NTP_API const char *ntp_prediction_uncalibrated(const ntp_prediction *p);
NTP_API int ntp_prediction_unpredicted(const ntp_prediction *p);
/* The rows a run adds besides its layers (ntp_predict_opts.reorders): the
 * backend's reorders and the engine's conversions, named and sized as the
 * run names and sizes them, each priced as a copy of its bytes under its
 * backend's calibration and counted in the total (copies_ms). When they
 * cannot be known (another machine's calibration, the plan could not be
 * prepared, not asked for), one row named "reorders" with predicted_ms NAN
 * and a note saying what is unknown. */
NTP_API int ntp_prediction_copy_count(const ntp_prediction *p);
NTP_API const ntp_layer_prediction *ntp_prediction_copy(const ntp_prediction *p, int i);
NTP_API double ntp_prediction_copies_ms(const ntp_prediction *p);
/* Where the copy rows come from when the calibration is another machine's:
 * this machine's plan, and why the other machine's may differ (its ISA or
 * its backend's version); "" otherwise. */
NTP_API const char *ntp_prediction_copies_note(const ntp_prediction *p);
/* Where a network calibration that measured what a pass keeps
 * (ntp_calibration.kept) prices the weights between two passes: from
 * memory, or kept in a cache, and why; "" where it did not measure it. */
NTP_API const char *ntp_prediction_weights_note(const ntp_prediction *p);
/* Whether it is predicted as `run --fuse` runs it (ntp_predict_opts.fuse),
 * and how many layers are fused into another. */
NTP_API bool ntp_prediction_fused(const ntp_prediction *p);
NTP_API int ntp_prediction_fused_layers(const ntp_prediction *p);

/* How ntp_predict_with predicts (ntp_predict_opts_default: all zero). */
typedef struct ntp_predict_opts {
    /* Calibrations of other backends, same machine and precision (as
     * ntp_predict_placed's others). */
    const ntp_calibration *others;
    int n_others;
    /* "LAYER=BACKEND" placements, as ntp_run_opts.place (the CLI's
     * --place): each layer is predicted on the backend a run with the same
     * backend and placements runs it on (unknown layers and backends are
     * refused as a run refuses them). */
    const char *const *place;
    int n_place;
    /* Learn the reorder and conversion rows a run adds (ntp_prediction.
     * copies) by preparing the plan as a run does before its first pass
     * (weights loaded, the backend's primitives created, nothing run): the
     * layouts a backend such as oneDNN picks exist only then. Only for this
     * machine's calibration of a backend built here. */
    bool reorders;
    /* The thread count the plan is prepared for (0: the calibration's). */
    int threads;
    /* Predict the plan a run with fuse (ntp_run_opts.fuse, --fuse) runs:
     * the same groups by the engine's rule (batch norms folded into the
     * layer's weights, the post-ops each backend fuses), each group priced
     * as its head's family with the work of the fused kernel: the head's
     * FLOPs and traffic plus each post-op's FLOPs, weights and other
     * operand, the chain's intermediate results never written; a folded
     * batch norm costs nothing. Not with a roofline-only calibration. */
    bool fuse;
    /* A calibration of the same machine whose timings were paced (ref's,
     * ntp_calibration.pace_gflops), for a cal whose were not (a threaded
     * backend's): its pace is the reference a run's pace looks are judged
     * by beside the prediction (ntp_run_prediction.calibration_pace_gflops;
     * docs/run.md#pace). An other with a pace serves as well. NULL: none. */
    const ntp_calibration *paced;
} ntp_predict_opts;

NTP_API void ntp_predict_opts_default(ntp_predict_opts *o);

/* Predict every layer of g from cal, without running it. */
NTP_API ntp_status ntp_predict(ntp_ctx *ctx, const ntp_graph *g, const ntp_calibration *cal,
                               ntp_prediction **out);
/* The same, with the calibrations (same machine and precision) of other
 * backends: a layer the engine hands to one of them (ref, where cal's
 * backend cannot run it) is predicted with its coefficients; one handed to
 * a backend without a calibration is not predicted and says so. At most
 * NTP_PREDICT_MAX_CALS - 1 others; one of cal's backend is ignored. */
NTP_API ntp_status ntp_predict_placed(ntp_ctx *ctx, const ntp_graph *g, const ntp_calibration *cal,
                                      const ntp_calibration *others, int n_others,
                                      ntp_prediction **out);
/* The same with options: placements as a run's, the reorder rows. */
NTP_API ntp_status ntp_predict_with(ntp_ctx *ctx, const ntp_graph *g, const ntp_calibration *cal,
                                    const ntp_predict_opts *o, ntp_prediction **out);
NTP_API void ntp_prediction_free(ntp_prediction *p);

/* Prediction beside measurement: per matched layer, error =
 * (predicted - measured) / measured (the fields of ntp_run_prediction). */
typedef ntp_run_prediction ntp_prediction_summary;

/* Fill r's rows' predicted_ms (rows of a layer p predicts) and
 * r->prediction. Layers match by name; stale says the backend's version
 * moved since the calibration. */
NTP_API void ntp_prediction_apply(const ntp_prediction *p, ntp_run_result *r, bool stale);

/* --- the history ------------------------------------------------------------------------ */

/* Keep cal (replacing the calibration of the same machine, backend and
 * precision), and read one back: *found false when there is none. */
NTP_API ntp_status ntp_store_save_calibration(ntp_ctx *ctx, ntp_store *s,
                                              const ntp_calibration *cal);
NTP_API ntp_status ntp_store_load_calibration(ntp_ctx *ctx, ntp_store *s, const char *machine_key,
                                              const char *backend, const char *precision,
                                              ntp_calibration *out, bool *found);
/* This machine's calibration (ntp_machine_key) from the database at path,
 * without creating or changing anything: a missing file just means *found
 * is false. */
NTP_API ntp_status ntp_store_find_calibration(ntp_ctx *ctx, const char *path, const char *backend,
                                              const char *precision, ntp_calibration *out,
                                              bool *found);
/* A calibration's samples (ntp_calibrate_opts.samples), replacing those
 * stored for the same machine, backend and precision; and read back, in
 * the order they were timed (*n 0 where there are none: a calibration
 * made before they were kept). Free *out with free(). */
NTP_API ntp_status ntp_store_save_calibration_samples(ntp_ctx *ctx, ntp_store *s,
                                                      const ntp_calibration *cal,
                                                      const ntp_calibration_sample *samples, int n);
NTP_API ntp_status ntp_store_load_calibration_samples(ntp_ctx *ctx, ntp_store *s,
                                                      const char *machine_key, const char *backend,
                                                      const char *precision,
                                                      ntp_calibration_sample **out, int *n);
/* Every calibration stored (machine, backend, precision, date), newest
 * first; free *out with free(). */
NTP_API ntp_status ntp_store_list_calibrations(ntp_ctx *ctx, ntp_store *s, ntp_calibration **out,
                                               int *n);

/* --- reports ------------------------------------------------------------------------------ */

/* A calibration's families and fit as a table, JSON or CSV. */
NTP_API ntp_status ntp_report_write_calibration(ntp_ctx *ctx, const ntp_calibration *c,
                                                ntp_format fmt, FILE *f);
/* A recheck (ntp_calibration_recheck) as a table, JSON or CSV. */
NTP_API ntp_status ntp_report_write_recheck(ntp_ctx *ctx, const ntp_recheck *r, ntp_format fmt,
                                            FILE *f);
/* A prediction as a table, JSON or CSV (docs/predict.md). */
NTP_API ntp_status ntp_report_write_prediction(ntp_ctx *ctx, const ntp_prediction *p,
                                               ntp_format fmt, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
