/* The GPU's ceilings, measured (docs/gpu.md): cuBLAS GEMM throughput at
 * f32 (IEEE FMAs), TF32, f16 and bf16 (f32 accumulation, as the backend
 * runs them), DRAM bandwidth from device-to-device copies, and host<->device
 * bandwidth from page-locked memory. Every figure is the best of rounds
 * timed with CUDA events, each round long enough to dwarf the launch. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "backend/cuda/cublas-dl.h"
#include <stdio.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "machine-cuda-impl.h"

const char *ntp__gpu_peak_name(int i)
{
    static const char *const n[NTP_GPU_N_PEAKS] = {"f32", "tf32", "f16", "bf16"};
    return i >= 0 && i < NTP_GPU_N_PEAKS ? n[i] : "?";
}

static ntp_status rt(ntp_ctx *ctx, cudaError_t e, const char *what)
{
    cudaGetLastError();
    return ntp__error(
        ctx, e == cudaErrorMemoryAllocation ? NTP_STATUS_OUT_OF_MEMORY : NTP_STATUS_BACKEND_ERROR,
        "GPU ceilings: %s: %s", what, cudaGetErrorString(e));
}

/* Milliseconds between two events after `reps` repetitions of one call. */
typedef struct timer {
    cudaStream_t s;
    cudaEvent_t a, b;
} timer;

static float elapsed(timer *t)
{
    float ms = 0;
    cudaEventSynchronize(t->b);
    cudaEventElapsedTime(&ms, t->a, t->b);
    return ms;
}

static ntp_status gemm_peak(ntp_ctx *ctx, timer *t, cublasHandle_t h, int kind, double seconds,
                            ntp_gpu_ceilings *c)
{
    static const cudaDataType_t dt[NTP_GPU_N_PEAKS] = {CUDA_R_32F, CUDA_R_32F, CUDA_R_16F,
                                                       CUDA_R_16BF};
    static const cublasComputeType_t ct[NTP_GPU_N_PEAKS] = {
        CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F};
    /* Large enough to be compute-bound on any current GPU. */
    int n = kind == NTP_GPU_F32 ? 4096 : 8192;
    size_t es = dt[kind] == CUDA_R_32F ? 4 : 2, bytes = (size_t)n * (size_t)n * es;
    void *a = NULL, *b = NULL, *d = NULL;
    cudaError_t e = cudaMalloc(&a, bytes);
    if (e == cudaSuccess)
        e = cudaMalloc(&b, bytes);
    if (e == cudaSuccess)
        e = cudaMalloc(&d, bytes);
    /* Zeros: the values do not change the work, and cannot overflow. */
    if (e == cudaSuccess)
        e = cudaMemsetAsync(a, 0, bytes, t->s);
    if (e == cudaSuccess)
        e = cudaMemsetAsync(b, 0, bytes, t->s);
    ntp_status st = e == cudaSuccess ? NTP_STATUS_OK : rt(ctx, e, "GEMM buffers");
    const float one = 1.0f, zero = 0.0f;
    double best = 0, spent = 0;
    for (int round = 0; !st && (round < 3 || spent < seconds) && round < 50; round++) {
        int reps = 5;
        cudaEventRecord(t->a, t->s);
        for (int r = 0; r < reps && !st; r++) {
            cublasStatus_t be =
                cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, dt[kind], n, b,
                             dt[kind], n, &zero, d, dt[kind], n, ct[kind], CUBLAS_GEMM_DEFAULT);
            if (be != CUBLAS_STATUS_SUCCESS)
                st = ntp__error(ctx, NTP_STATUS_BACKEND_ERROR, "GPU ceilings: %s GEMM failed (%d)",
                                ntp__gpu_peak_name(kind), (int)be);
        }
        cudaEventRecord(t->b, t->s);
        float ms = elapsed(t);
        spent += ms / 1000.0;
        double gf = ms > 0 ? 2.0 * n * (double)n * n * reps / (ms / 1000.0) / 1e9 : 0;
        if (gf > best)
            best = gf;
    }
    c->gemm_gflops[kind] = best;
    c->gemm_n[kind] = n;
    cudaFree(a);
    cudaFree(b);
    cudaFree(d);
    return st;
}

/* Bytes moved per second by `reps` copies of `bytes` (counted `factor`
 * times: 2 for a device copy, which reads and writes). */
static double copy_rate(timer *t, void *dst, const void *src, size_t bytes,
                        enum cudaMemcpyKind kind, double factor, double seconds)
{
    double best = 0, spent = 0;
    for (int round = 0; (round < 3 || spent < seconds) && round < 50; round++) {
        int reps = 4;
        cudaEventRecord(t->a, t->s);
        for (int r = 0; r < reps; r++)
            cudaMemcpyAsync(dst, src, bytes, kind, t->s);
        cudaEventRecord(t->b, t->s);
        float ms = elapsed(t);
        spent += ms / 1000.0;
        double gbps = ms > 0 ? factor * (double)bytes * reps / (ms / 1000.0) / 1e9 : 0;
        if (gbps > best)
            best = gbps;
    }
    return best;
}

ntp_status ntp__gpu_ceilings_measure(ntp_ctx *ctx, double seconds, ntp_gpu_ceilings *c)
{
    memset(c, 0, sizeof *c);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n < 1) {
        ntp_status st = ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                                   "GPU ceilings: no CUDA device (cudaGetDeviceCount: %s)",
                                   e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        cudaGetLastError();
        return st;
    }
    char why[256];
    if (!ntp__cublas_load(why, sizeof why))
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED, "GPU ceilings: cuBLAS: %s", why);
    struct cudaDeviceProp p;
    if ((e = cudaGetDeviceProperties(&p, 0)) != cudaSuccess)
        return rt(ctx, e, "device properties");
    snprintf(c->name, sizeof c->name, "%.127s", p.name);
    c->sm_major = p.major;
    c->sm_minor = p.minor;
    c->sms = p.multiProcessorCount;
    c->memory_bytes = (int64_t)p.totalGlobalMem;
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0) == cudaSuccess)
        c->clock_ghz = khz / 1e6;
    timer t = {0};
    cublasHandle_t h = NULL;
    void *d0 = NULL, *d1 = NULL, *host = NULL;
    size_t big = (size_t)1 << 30, pinned = (size_t)256 << 20;
    if (p.totalGlobalMem < 8 * big)
        big = p.totalGlobalMem / 8;
    ntp_status st = NTP_STATUS_OK;
    if ((e = cudaSetDevice(0)) != cudaSuccess || (e = cudaStreamCreate(&t.s)) != cudaSuccess ||
        (e = cudaEventCreate(&t.a)) != cudaSuccess || (e = cudaEventCreate(&t.b)) != cudaSuccess) {
        st = rt(ctx, e, "stream and events");
        goto done;
    }
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(h, t.s) != CUBLAS_STATUS_SUCCESS) {
        st = ntp__error(ctx, NTP_STATUS_BACKEND_ERROR, "GPU ceilings: cuBLAS handle");
        goto done;
    }
    for (int k = 0; k < NTP_GPU_N_PEAKS && !st; k++)
        st = gemm_peak(ctx, &t, h, k, seconds, c);
    if (st)
        goto done;
    if ((e = cudaMalloc(&d0, big)) != cudaSuccess || (e = cudaMalloc(&d1, big)) != cudaSuccess ||
        (e = cudaMallocHost(&host, pinned)) != cudaSuccess) {
        st = rt(ctx, e, "copy buffers");
        goto done;
    }
    cudaMemsetAsync(d0, 0, big, t.s);
    memset(host, 0, pinned);
    c->dram_gbps = copy_rate(&t, d1, d0, big, cudaMemcpyDeviceToDevice, 2.0, seconds);
    c->h2d_gbps = copy_rate(&t, d0, host, pinned, cudaMemcpyHostToDevice, 1.0, seconds);
    c->d2h_gbps = copy_rate(&t, host, d0, pinned, cudaMemcpyDeviceToHost, 1.0, seconds);
    if ((e = cudaGetLastError()) != cudaSuccess)
        st = rt(ctx, e, "copies");
done:
    if (h)
        cublasDestroy(h);
    cudaFree(d0);
    cudaFree(d1);
    if (host)
        cudaFreeHost(host);
    if (t.a)
        cudaEventDestroy(t.a);
    if (t.b)
        cudaEventDestroy(t.b);
    if (t.s)
        cudaStreamDestroy(t.s);
    cudaGetLastError();
    return st;
}

void ntp__gpu_ceilings_print(FILE *f, const ntp_gpu_ceilings *c)
{
    fprintf(f, "gpu: %s, sm_%d%d, %d SMs at %.2f GHz, %.1f GiB\n", c->name, c->sm_major,
            c->sm_minor, c->sms, c->clock_ghz, (double)c->memory_bytes / 1073741824.0);
    for (int k = 0; k < NTP_GPU_N_PEAKS; k++)
        fprintf(f, "  GEMM %-4s %10.1f GFLOP/s (cuBLAS, %dx%dx%d)\n", ntp__gpu_peak_name(k),
                c->gemm_gflops[k], c->gemm_n[k], c->gemm_n[k], c->gemm_n[k]);
    fprintf(f, "  DRAM %10.1f GB/s (device copy, read + write)\n", c->dram_gbps);
    fprintf(f, "  host->device %6.1f GB/s, device->host %6.1f GB/s (page-locked)\n", c->h2d_gbps,
            c->d2h_gbps);
}
