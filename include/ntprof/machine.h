/* ntprof: this machine and its ceilings, and the roofline that places a run
 * against them.
 *
 *   ntp_machine_info m;
 *   ntp_ceilings c;
 *   ntp_machine_describe(ctx, &m);
 *   ntp_machine_measure(ctx, &m, NULL, &c);   // a few seconds
 *   ntp_run_opts o; ntp_run_opts_default(&o); o.ceilings = &c;
 *   ntp_run(ctx, g, &o, &r);                  // rows carry attainable GFLOP/s
 *
 * Ceilings are measured, not looked up: peak FLOP/s from an FMA micro-kernel
 * on every CPU the process may use, the best built backend's GEMM, and the
 * bandwidth of a triad at each level of the memory hierarchy
 * (docs/machine.md). The history database caches them per machine
 * (ntp_store_save_ceilings). */
#ifndef NTPROF_MACHINE_H
#define NTPROF_MACHINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ntprof/api.h"
#include "ntprof/run.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NTP_MACHINE_MAX_CACHES 8
#define NTP_MACHINE_MAX_NUMA 16
#define NTP_MACHINE_MAX_GPUS 8
#define NTP_MACHINE_MAX_PEAKS 8
#define NTP_MACHINE_MAX_LEVELS 6

/* One kind of cache: every instance of it has the same size. */
typedef struct ntp_cache_info {
    int level;          /* 1, 2, 3, ... */
    char type[16];      /* "data", "instruction" or "unified" */
    int64_t size_bytes; /* one instance */
    int line_bytes;
    int count;     /* instances in the machine */
    int shared_by; /* logical CPUs sharing one instance */
} ntp_cache_info;

/* What this machine is made of. */
typedef struct ntp_machine_info {
    char key[256]; /* "CPU model|cores|hostname": the ceilings cache key */
    char cpu_model[128];
    char cpu_flags[1024];   /* the ISA flags that matter, as in ntp_env */
    char cpu_signature[96]; /* family, model, stepping, as in ntp_env */
    char hostname[64];
    int packages;
    int cores; /* physical cores */
    int pus;   /* logical CPUs (hardware threads) */
    int64_t memory_bytes;
    int numa_nodes;
    int64_t numa_memory_bytes[NTP_MACHINE_MAX_NUMA];
    int n_caches; /* data and unified first, by level */
    ntp_cache_info caches[NTP_MACHINE_MAX_CACHES];
    int n_gpus; /* accelerators hwloc sees (CUDA, OpenCL, NVML devices) */
    char gpus[NTP_MACHINE_MAX_GPUS][128];
    char source[64]; /* "hwloc 2.9.0" */
} ntp_machine_info;

/* A compute ceiling. */
typedef struct ntp_peak {
    char precision[8]; /* "f64", "f32", "bf16", "i8" */
    double gflops;     /* 10^9 FLOP/s (int8: 10^9 multiply or add operations/s): the best trial */
    char method[96];   /* "FMA micro-kernel, avx2, 2 threads", "GEMM on onednn" */
} ntp_peak;

/* A bandwidth ceiling: a triad whose arrays fit in `level`. */
typedef struct ntp_bandwidth {
    char level[8];             /* "L1", "L2", "L3", "DRAM" */
    int64_t working_set_bytes; /* all threads' arrays together */
    double gbps;               /* 10^9 B/s, all threads together: the best trial */
} ntp_bandwidth;

/* How a ceiling was measured (docs/machine.md): the spread of its trials,
 * the load around it, and whether it is to be trusted. Kept beside each
 * peak, GEMM and bandwidth level of ntp_ceilings, index for index. All 0
 * in ceilings cached by an ntprof that did not record them. */
typedef struct ntp_ceiling_spread {
    int trials;         /* trials run; the ceiling is the best of them */
    double min, median; /* the slowest and the median trial, in the ceiling's unit */
    /* Micro-kernels: the same kernel on one thread (0: not measured). A
     * whole-machine peak below it means another process held a CPU. */
    double one_thread;
    /* Share of the CPUs' time other processes (and the hypervisor) took
     * while this ceiling was measured, 0..1 (/proc/stat); -1 unknown. */
    double other_busy;
    bool contended;   /* measured under load: too low to trust */
    char detail[160]; /* GEMM: every backend's figure ("onednn 201, xnnpack 111") */
    /* Bandwidth levels: the CPUs' hand-off (docs/run.md#handoff) looked at
     * right before and after the measurement, the larger ratio. At
     * NTP_HANDOFF_APART_RATIO or more the threads' CPUs sat apart (on a VM,
     * on different dies: each its own cache and memory path, and a triad
     * of several threads reads more than on one die); 0: not looked (one
     * thread, ceilings measured before this was recorded). */
    double handoff_ratio;
} ntp_ceiling_spread;

/* The maths a GPU's GEMM peak is measured at. */
typedef enum ntp_gpu_math {
    NTP_GPU_MATH_F32,  /* IEEE f32 FMAs */
    NTP_GPU_MATH_TF32, /* TF32 tensor cores (f32 storage) */
    NTP_GPU_MATH_F16,  /* f16 tensor cores, f32 accumulation */
    NTP_GPU_MATH_BF16, /* bf16 tensor cores, f32 accumulation */
    NTP_GPU_MATH_COUNT
} ntp_gpu_math;

/* One GPU's ceilings (docs/gpu.md), measured through CUDA: cuBLAS GEMM
 * throughput per math, device DRAM bandwidth from device-to-device copies
 * (bytes read + written), and page-locked host<->device bandwidth. */
typedef struct ntp_gpu_ceilings {
    char name[128];                         /* "NVIDIA H100 80GB HBM3" */
    int sm_major, sm_minor;                 /* compute capability, 9.0 */
    int sms;                                /* streaming multiprocessors */
    double clock_ghz;                       /* peak SM clock */
    int64_t memory_bytes;                   /* device memory */
    double gemm_gflops[NTP_GPU_MATH_COUNT]; /* square cuBLAS GEMM, best of the rounds */
    int gemm_n[NTP_GPU_MATH_COUNT];         /* its size (M = N = K) */
    double dram_gbps;
    double h2d_gbps, d2h_gbps;
} ntp_gpu_ceilings;

typedef struct ntp_ceilings {
    char machine_key[256];
    char measured_at[32]; /* ISO 8601 UTC */
    char ntprof_version[32];
    int threads; /* threads the measurements used */
    int n_peaks; /* FMA micro-kernel, per precision */
    ntp_peak peaks[NTP_MACHINE_MAX_PEAKS];
    int n_gemm; /* the best backend's GEMM, per precision */
    ntp_peak gemm[NTP_MACHINE_MAX_PEAKS];
    int n_levels; /* innermost first, DRAM last */
    ntp_bandwidth levels[NTP_MACHINE_MAX_LEVELS];
    /* GPUs measured (GPU 0 today); 0: none, and gpu_note says why
     * ("backend 'cuda': no CUDA device (...)", "built without the CUDA
     * backend"). */
    int n_gpus;
    ntp_gpu_ceilings gpus[NTP_MACHINE_MAX_GPUS];
    char gpu_note[256];
    /* Contention during the measurement (docs/machine.md): the largest
     * share of the CPUs other processes took while a ceiling was measured
     * (-1 unknown), the 1-minute load average at the start, and whether
     * any ceiling was flagged; `note` says which and what to do. */
    double other_busy;
    double loadavg;
    bool contended;
    char note[384];
    ntp_ceiling_spread peak_spread[NTP_MACHINE_MAX_PEAKS];   /* beside peaks[] */
    ntp_ceiling_spread gemm_spread[NTP_MACHINE_MAX_PEAKS];   /* beside gemm[] */
    ntp_ceiling_spread level_spread[NTP_MACHINE_MAX_LEVELS]; /* beside levels[] */
    /* Set when read from the history: the machine row under this key was
     * measured on another CPU than this one (its signature or ISA flags
     * differ, a key whose model name a VM made generic): "(AuthenticAMD
     * family 25 model 17 stepping 1; avx2 fma) than this one (...)"; ""
     * when it is this CPU or the row kept neither. ntp_store_find_ceilings
     * does not use such ceilings; `ntprof machine` measures anew. */
    char other_cpu[640];
} ntp_ceilings;

typedef struct ntp_machine_opts {
    double seconds; /* per measurement, best of several rounds (default 0.25) */
    int threads;    /* 0: every CPU this process may run on */
    bool gemm;      /* also time each backend's GEMM through ntp_run (default true) */
} ntp_machine_opts;

NTP_API void ntp_machine_opts_default(ntp_machine_opts *o);

/* This machine's key, "CPU model|logical CPUs|hostname" (the ceilings
 * cache key), without reading its whole topology. */
NTP_API void ntp_machine_key(char *buf, size_t len);

/* Describe this machine: hwloc's topology (packages, cores, caches, NUMA
 * nodes, GPUs), the CPU model and ISA flags. */
NTP_API ntp_status ntp_machine_describe(ntp_ctx *ctx, ntp_machine_info *out);

/* Measure the ceilings of the machine `m` describes (this one). opts NULL:
 * the defaults. Takes a few seconds. */
NTP_API ntp_status ntp_machine_measure(ntp_ctx *ctx, const ntp_machine_info *m,
                                       const ntp_machine_opts *opts, ntp_ceilings *out);

/* Whether c was measured with kernels that are not this build's best on
 * this CPU: a bf16 or i8 peak measured with vector dot products where the
 * CPU has AMX's tile unit (ceilings cached by an ntprof without the AMX
 * kernel, some 10x below what oneDNN's AMX GEMM reaches, so every such row
 * would run "above its ceiling"). why gets "its bf16 peak was measured
 * with vdpbf16ps zmm, this ntprof measures it with tdpbf16ps tmm (AMX)".
 * ntp_store_find_ceilings does not use such ceilings; `ntprof machine`
 * measures anew. */
NTP_API bool ntp_ceilings_outdated(const ntp_ceilings *c, char *why, size_t len);

/* The compute ceiling a run at precision p is placed against: the
 * micro-kernel peak at p, or at f32 where p has no kernel of its own (the
 * peak's precision then says "f32"). NULL when nothing was measured. */
NTP_API const ntp_peak *ntp_ceilings_peak(const ntp_ceilings *c, ntp_dtype p);
/* "f32", "tf32", "f16", "bf16"; "?" for another value. */
NTP_API const char *ntp_gpu_math_name(ntp_gpu_math m);
/* Bandwidth of a level ("L1", ..., "DRAM"), 0 if it was not measured. */
NTP_API double ntp_ceilings_bandwidth(const ntp_ceilings *c, const char *level);

/* The roofline bound: min(peak, intensity x bandwidth), in GFLOP/s. 0 when
 * any argument is not positive (no FLOPs, no ceiling). */
NTP_API double ntp_roofline_attainable(double peak_gflops, double bandwidth_gbps, double intensity);
/* The part of a row that dominates its time under the roofs (docs/analysis.md):
 * each part's estimate is max(flops / peak, bytes / bandwidth), and the
 * index of the largest is returned; -1 when the row has no parts or
 * the ceilings are not positive. A recurrent layer's verdict is its
 * dominant part's. */
NTP_API int ntp_roofline_dominant_part(const ntp_cost_part *parts, int n_parts, double peak_gflops,
                                       double bandwidth_gbps);
/* A row's bound from its parts: its FLOPs over the sum of the parts' time
 * estimates, in GFLOP/s (at most the peak); min(peak, intensity x
 * bandwidth) without parts. */
NTP_API double ntp_roofline_attainable_parts(const ntp_cost_part *parts, int n_parts, int64_t flops,
                                             int64_t bytes, double peak_gflops,
                                             double bandwidth_gbps);
/* Place every row and marker segment of r against c: fills r->roofline and
 * each row's attainable_gflops (or attainable_gbps), roof_share and
 * roof_ceiling. Rows on the CPU go under the micro-kernel peak at r's
 * precision and the DRAM triad; rows that ran on a device backend (cuda)
 * under GPU 0's GEMM peak for their math (tf32 when the row's impl says
 * ":tf32", else the run's precision) and its DRAM bandwidth, or are marked
 * NTP_ROOF_NO_GPU when c has no GPU; copy rows (types h2d, d2h) under the
 * host<->device bandwidth. c NULL marks the roofline unavailable. */
NTP_API void ntp_roofline_apply(ntp_run_result *r, const ntp_ceilings *c);

/* The most a dot-product peak can be over the f32 FMA peak: vdpbf16ps does
 * 2 multiply-adds per f32 lane where an FMA does one, and vpdpbusd 4 per
 * 32-bit lane; no core issues them faster than its FMAs. 10% of margin
 * for noise. */
#define NTP_MACHINE_BF16_RATIO 2.2
#define NTP_MACHINE_I8_RATIO 4.4
/* The same bound for a peak measured on AMX's tile unit (its method names
 * "(AMX)"): a tdpbf16ps (16384 operations) or tdpbusd (32768) issues every
 * 16 cycles (Intel's optimisation manual), 1024 and 2048 operations a cycle
 * where two 512-bit FMA pipes do 64: 16x and 32x, with 10% of margin. */
#define NTP_MACHINE_AMX_BF16_RATIO 17.6
#define NTP_MACHINE_AMX_I8_RATIO 35.2

/* The margin a row may exceed its ceiling by before the ceiling is called
 * stale: the ceiling's measured spread ((best - slowest) / best), at
 * least this. */
#define NTP_ROOF_STALE_MIN_MARGIN 0.02

/* What roof_ceiling says of a row that ran on a GPU when the ceilings hold
 * no GPU. */
#define NTP_ROOF_NO_GPU "n/a (no GPU ceilings: run `ntprof machine` on this machine)"

#ifdef __cplusplus
}
#endif
#endif
