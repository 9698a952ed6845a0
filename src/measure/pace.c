/* The CPUs' pace: how fast each CPU of the process runs a short kernel
 * right now (docs/predict.md#passes).
 *
 * On a virtual machine a vCPU shares its physical core with whatever the
 * host runs beside it, and neither the load average nor the steal time
 * says so: the vCPU is running, only slower. On the 2-vCPU Zen 5 VM
 * (2026-12-05) one vCPU at a time ran a 128x512 by 512 fc of the reference
 * backend in 2.0-2.3 ms instead of 1.6-1.7, for seconds to minutes. What
 * the neighbour takes is the core's load/store side, not its arithmetic:
 * the ceilings' multiply-add kernel (registers only, ntp__fma_run) read
 * 215-255 GFLOP/s on either state, a chain of dependent adds (the clock)
 * 3.7-4.0 GHz on either, while this kernel, whose accumulators live in
 * L1 (each step loads one, multiplies-adds and stores it back), read
 * 31-36 GFLOP/s on the slowed vCPU against 40-45 on the other, step for
 * step with the fc. A look is the slowest CPU's reading: one CPU at a
 * time, on a thread pinned to it, the best of a few short trials. */
#include <pthread.h>
#include <immintrin.h>
#include <sched.h>
#include <stdbool.h>

#include "machine-impl.h"
#include "measure-impl.h"

enum {
    PACE_MAX_CPUS = 8, /* CPUs looked at: the first of the process's */
    PACE_TRIALS = 5,   /* timed trials per CPU, the best kept, after one untimed */
};
/* Operations per trial: about 0.1 ms at the 2-vCPU Zen 5 VM's 43 GFLOP/s. */
#define PACE_OPS 4e6

/* Accumulators per kernel step: each is a store-to-load chain of its own. */
#define PACE_SLOTS 10

typedef struct pace_job {
    int cpu;
    double gflops; /* 0: could not pin or run */
} pace_job;

/* iters rounds over the slots of acc (PACE_SLOTS x 8 floats, 32-byte
 * aligned): each slot loaded, multiplied-added and stored back; returns
 * the operations done. The barrier keeps every slot in memory. */
__attribute__((target("avx2,fma"))) static double pace_avx2(float *acc, int64_t iters)
{
    const __m256 m = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(0.001f);
    for (int64_t k = 0; k < iters; k++) {
        for (int i = 0; i < PACE_SLOTS; i++)
            _mm256_store_ps(acc + 8 * i, _mm256_fmadd_ps(_mm256_load_ps(acc + 8 * i), m, c));
        __asm__ volatile("" ::: "memory");
    }
    return (double)iters * PACE_SLOTS * 16;
}

static double pace_scalar(float *acc, int64_t iters)
{
    for (int64_t k = 0; k < iters; k++) {
        for (int i = 0; i < PACE_SLOTS; i++)
            acc[8 * i] = acc[8 * i] * 0.999f + 0.001f;
        __asm__ volatile("" ::: "memory");
    }
    return (double)iters * PACE_SLOTS * 2;
}

static void *pace_thread(void *arg)
{
    pace_job *j = arg;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(j->cpu, &one);
    if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0)
        return NULL;
    _Alignas(32) float acc[PACE_SLOTS * 8];
    for (int i = 0; i < PACE_SLOTS * 8; i++)
        acc[i] = 0.5f + 0.01f * (float)i;
    const bool avx2 = ntp__isa_best() != NTP_ISA_SCALAR;
    const int64_t iters = (int64_t)(PACE_OPS / (PACE_SLOTS * (avx2 ? 16 : 2)));
    double best = 0;
    for (int t = 0; t <= PACE_TRIALS; t++) {
        double t0 = ntp__now_us();
        double ops = avx2 ? pace_avx2(acc, iters) : pace_scalar(acc, iters);
        double us = ntp__now_us() - t0;
        if (t > 0 && us > 0 && ops / (us * 1e3) > best)
            best = ops / (us * 1e3);
    }
    j->gflops = acc[0] == acc[0] ? best : 0; /* the slots stay live */
    return NULL;
}

double ntp__pace_look(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 0;
    double slowest = 0;
    int looked = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && looked < PACE_MAX_CPUS; cpu++) {
        if (!CPU_ISSET(cpu, &set))
            continue;
        pace_job j = {cpu, 0};
        pthread_t th;
        if (pthread_create(&th, NULL, pace_thread, &j) != 0)
            return 0;
        pthread_join(th, NULL);
        if (!(j.gflops > 0))
            return 0;
        if (looked++ == 0 || j.gflops < slowest)
            slowest = j.gflops;
    }
    return slowest;
}
