/* cuBLAS, loaded when the CUDA backend is first used (blas-dl.c).
 *
 * Linking libcublas would load it, and libcublasLt behind it, into every
 * process that links libntprof: 0.8 s and 210 MB of resident memory at
 * start-up (measured on CUDA 13), paid by every CPU-only run and charged to
 * its peak RSS. cuBLAS is therefore opened with dlopen by the device probe,
 * and the few calls the backend makes go through a table of pointers.
 * Include this after <cublas_v2.h>: the macros below send the usual names
 * to the table. cudart and cuDNN stay linked (they load lazily and cost
 * nothing at start-up). */
#ifndef NTPROF_CUBLAS_DL_H
#define NTPROF_CUBLAS_DL_H

#include <cublas_v2.h>
#include <stdbool.h>
#include <stddef.h>

/* Every cuBLAS entry point used (cublas_v2.h maps cublasCreate to
 * cublasCreate_v2 and so on). */
// clang-format off
#define NTP_CUBLAS_FUNCS(X)                                                            \
    X(cublasCreate_v2) X(cublasDestroy_v2) X(cublasSetStream_v2) X(cublasSetMathMode) \
    X(cublasSetWorkspace_v2) X(cublasGemmEx) X(cublasGemmStridedBatchedEx) X(cublasGemmBatchedEx)
// clang-format on

typedef struct ntp_cublas_dl {
#define NTP_CUBLAS_PTR_(f) __typeof__(&f) f;
    NTP_CUBLAS_FUNCS(NTP_CUBLAS_PTR_)
#undef NTP_CUBLAS_PTR_
} ntp_cublas_dl;

extern ntp_cublas_dl ntp__cublas;

/* Open libcublas.so.<major> once; false with dlerror's reason. */
bool ntp__cublas_load(char *why, size_t len);

/* blas-dl.c, which fills the table, sees the real names. */
#ifndef NTP_CUBLAS_DL_FILL
#define cublasCreate_v2 ntp__cublas.cublasCreate_v2
#define cublasDestroy_v2 ntp__cublas.cublasDestroy_v2
#define cublasSetStream_v2 ntp__cublas.cublasSetStream_v2
#define cublasSetMathMode ntp__cublas.cublasSetMathMode
#define cublasSetWorkspace_v2 ntp__cublas.cublasSetWorkspace_v2
#define cublasGemmEx ntp__cublas.cublasGemmEx
#define cublasGemmStridedBatchedEx ntp__cublas.cublasGemmStridedBatchedEx
#define cublasGemmBatchedEx ntp__cublas.cublasGemmBatchedEx
#endif

#endif
