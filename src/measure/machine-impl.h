/* Machine description and ceilings, private side (docs/machine.md). */
#ifndef NTPROF_MACHINE_IMPL_H
#define NTPROF_MACHINE_IMPL_H

#include <jansson.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ntprof/context.h"
#include "ntprof/machine.h"
#include "measure/run-result-impl.h"

/* "CPU model|logical CPUs|hostname": the key ceilings are cached under. The
 * same machine gives the same key in ntp_machine_describe and in a run's
 * environment (ntp_env), so a run finds its machine's ceilings. */
void ntp__machine_key(const char *cpu_model, int cpus, const char *hostname, char *buf, size_t len);

/* Whether the CPU a record was made on (a calibration, cached ceilings),
 * by the signature and ISA flags it kept ("" where it kept none: not held
 * against it), is not this one: two CPUs share a key whose model name a VM
 * made generic. why gets "(SIG; FLAGS) than this one (SIG; FLAGS)". */
bool ntp__machine_other_cpu(const char *sig, const char *flags, char *why, size_t len);

/* --- micro-kernels (machine-kernels.c) ---------------------------------------------- */

/* The instruction set a kernel uses, best first. AMX has kernels for bf16
 * and i8 only (its tile unit does no f32 or f64 math): a precision without
 * a kernel on one ISA is measured on the next. */
typedef enum ntp_isa { NTP_ISA_AMX, NTP_ISA_AVX512, NTP_ISA_AVX2, NTP_ISA_SCALAR } ntp_isa;
const char *ntp__isa_name(ntp_isa isa);
/* The best ISA this CPU has (and this build compiled a kernel for). Its
 * kernels may still be refused: AMX's need Linux's permission, which
 * ntp__fma_supported asks for, so a caller walks down from it. */
ntp_isa ntp__isa_best(void);

typedef enum ntp_kernel_prec {
    NTP_KPREC_F64,
    NTP_KPREC_F32,
    NTP_KPREC_BF16, /* avx512_bf16 dot products, or AMX tile products */
    NTP_KPREC_I8,   /* u8 x s8 dot products (AMX, VNNI, or AVX2 multiply-add pairs) */
    NTP_KPREC_COUNT
} ntp_kernel_prec;
const char *ntp__kprec_name(ntp_kernel_prec p);
/* Whether a kernel for p exists on isa on this CPU. */
bool ntp__fma_supported(ntp_isa isa, ntp_kernel_prec p);
/* The chain counts each kernel exists with: one (its latency), the count
 * the peak is measured with, and more, which must not be faster if the
 * peak count saturates the units. */
typedef enum ntp_kchains {
    NTP_KCHAINS_ONE,
    NTP_KCHAINS_PEAK,
    NTP_KCHAINS_MORE,
    NTP_KCHAINS_COUNT
} ntp_kchains;
/* Independent accumulator chains of that variant; 0 when there is no
 * kernel for (isa, p) here. */
int ntp__fma_chains(ntp_isa isa, ntp_kernel_prec p, ntp_kchains which);
/* Operations one instruction of the kernel does (each multiply and each
 * add counts one: vfmadd231ps zmm 32, vdpbf16ps zmm 64, vpdpbusd zmm 128,
 * tdpbf16ps 16384, tdpbusd 32768),
 * and the instruction's name; 0 and NULL without a kernel. */
double ntp__fma_ops_per_insn(ntp_isa isa, ntp_kernel_prec p);
const char *ntp__fma_insn(ntp_isa isa, ntp_kernel_prec p);
/* Run the kernel `iters` times on this thread; returns the operations it
 * did (iters x chains x ops per instruction). The accumulators' sum is
 * written to *sink so the work cannot be optimised away. */
double ntp__fma_run_chains(ntp_isa isa, ntp_kernel_prec p, ntp_kchains which, int64_t iters,
                           double *sink);
/* The peak variant. */
double ntp__fma_run(ntp_isa isa, ntp_kernel_prec p, int64_t iters, double *sink);
/* 64 x iters dependent register adds: 64 x iters cycles of this core. */
void ntp__clock_chain(int64_t iters);

/* a[i] = b[i] + s * c[i] over n doubles, `reps` times; 64-byte aligned
 * arrays. Returns the bytes counted (STREAM's convention: 24 per element,
 * write-allocate traffic not counted). */
double ntp__triad_run(ntp_isa isa, double *a, const double *b, const double *c, int64_t n,
                      int reps);

/* --- pinned teams and the triad's rounds (triad.c) ------------------------------------ */

/* A team of threads, one pinned to each CPU it holds; worker 0 is the
 * calling thread. A job's function runs on every worker and synchronises
 * its rounds with `barrier`. */
typedef struct ntp__team ntp__team;
typedef void (*ntp__team_fn)(ntp__team *tm, int id);
struct ntp__team {
    int n;
    int cpus[CPU_SETSIZE];
    pthread_barrier_t barrier;
    ntp__team_fn fn;
    void *arg;
    atomic_bool failed; /* a worker could not allocate */
    /* Workers wait for `go` before touching the barrier, so a team whose
     * last thread failed to start can be sent home instead of waiting at
     * a barrier that would never open. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go; /* 0 wait, 1 run, -1 abandon */
};
/* The CPUs this process may run on, at most `limit` of them (0: all):
 * tm->n. */
int ntp__team_cpus(ntp__team *tm, int limit);
/* Run fn on every worker of tm; OUT_OF_MEMORY when a worker set `failed`. */
ntp_status ntp__team_run(ntp_ctx *ctx, ntp__team *tm, ntp__team_fn fn, void *arg);

/* A round counts as clean when every thread had at least this share of
 * its wall time on a CPU, and (the triad, where the kernel tells) waited
 * for one for at most the rest of the round's wall time. */
#define NTP__TRIAD_CLEAN_RATIO 0.95
#define NTP__TRIAD_MAX_ROUNDS 16

/* The rounds of one triad measurement: GB/s of each timed round (all
 * threads, STREAM's 24 bytes per element) and whether it was clean. */
typedef struct ntp__triad_rounds {
    int rounds;
    double gbps[NTP__TRIAD_MAX_ROUNDS];
    bool clean[NTP__TRIAD_MAX_ROUNDS];
    int64_t n;     /* doubles per array per thread */
    int threads;   /* tm->n */
    double wall_s; /* the whole measurement, allocation and warm-up included */
} ntp__triad_rounds;
/* Doubles per array of a triad whose three arrays take per_thread_bytes:
 * a multiple of 8, at least 64. */
int64_t ntp__triad_elems(int64_t per_thread_bytes);
/* The triad on every thread of tm, each over its own three arrays of
 * ntp__triad_elems(per_thread_bytes) doubles, allocated and first touched
 * by that thread: with `warm`, one warm-up round (not counted; it brings
 * an array that fits a cache level into it), then timed rounds of
 * `reps` passes each, up to max_rounds (at most NTP__TRIAD_MAX_ROUNDS);
 * with budget_s > 0 it stops after the first timed round that ends past
 * budget_s of wall time since the first timed round began (the first
 * touch and the warm-up are not in the budget). Both the machine's bandwidth
 * ceilings (machine-measure.c) and a run's bandwidth probe (bandwidth.c)
 * measure with it. */
ntp_status ntp__triad_measure(ntp_ctx *ctx, ntp__team *tm, int64_t per_thread_bytes, int reps,
                              bool warm, int max_rounds, double budget_s, ntp__triad_rounds *out);
/* The DRAM level's total working set (ntprof machine's rule): four times
 * every last-level cache together, at least 128 MiB, at most an eighth of
 * memory (memory_bytes <= 0: no cap). */
int64_t ntp__triad_dram_bytes(int64_t llc_total_bytes, int64_t memory_bytes);

/* A last-level cache whose triad, at half the size the machine reports
 * for it, reads under NTP_CACHE_OVER_DRAM times the DRAM triad was not
 * held by it (a hypervisor's description: this VM's L3 of 533 MB per
 * CPU); the triad is then measured at every halved size, and the level is
 * the largest size that reads at least NTP_CACHE_KNEE_OVER_DRAM times DRAM
 * with the next smaller within NTP_CACHE_PLATEAU of it and none smaller
 * NTP_CACHE_KNEE_OVER_DRAM times faster (a size the cache holds in part,
 * read in a phase where DRAM read slow, is not taken: 2026-12-06 12:40,
 * 92.8 GB/s at 66.5 MB a thread beside DRAM's 58.7)
 * (docs/machine.md#a-cache-the-machine-describes-wrongly). */
#define NTP_CACHE_OVER_DRAM 1.25
#define NTP_CACHE_KNEE_OVER_DRAM 1.5
#define NTP_CACHE_PLATEAU 1.15
/* Of n triad readings gbps at decreasing sizes, the index of the largest
 * size inside the cache by that rule; -1 where none (the last reading
 * has no smaller one to agree with). */
int ntp__cache_knee(const double *gbps, int n, double dram_gbps);
/* The index of c's bandwidth level named level ("L3", "DRAM"); -1: none. */
int ntp__ceilings_level(const ntp_ceilings *c, const char *level);

/* A marker segment's traffic for the roofline: its rows' bytes, with each
 * recurrent row's parts (re-reads of the recurrent weights) instead of its
 * minimal traffic (machine-roofline.c). */
int64_t ntp__roofline_marker_bytes(const ntp_run_result *r, const ntp_marker_result *m);

/* --- JSON forms (machine-report.c), for reports and the history ------------------- */
json_t *ntp__machine_info_json(const ntp_machine_info *m);
json_t *ntp__ceilings_json(const ntp_ceilings *c);
/* The GPUs of c as a JSON array (clears *ok on failure), and read back
 * into out (at most max): the count. The history keeps them apart from
 * the CPU's ceilings. */
json_t *ntp__gpu_ceilings_json(bool *ok, const ntp_ceilings *c);
int ntp__gpu_ceilings_from_json(json_t *a, ntp_gpu_ceilings *out, int max);
/* false when j is not a ceilings object. */
bool ntp__ceilings_from_json(json_t *j, ntp_ceilings *c);

#endif
