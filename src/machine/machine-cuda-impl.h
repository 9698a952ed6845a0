/* The GPU's ceilings (src/machine/machine-cuda.c, docs/gpu.md), private to
 * libntprof. machine-cuda-none.c stands in when the build has no CUDA
 * toolkit. */
#ifndef NTPROF_MACHINE_CUDA_IMPL_H
#define NTPROF_MACHINE_CUDA_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ntprof/context.h"
#include "ntprof/machine.h"
#include "ntprof/status.h"

/* GEMM peaks, by math: the public ntp_gpu_math under the names this
 * file's users have always used. */
enum {
    NTP_GPU_F32 = NTP_GPU_MATH_F32,
    NTP_GPU_TF32 = NTP_GPU_MATH_TF32,
    NTP_GPU_F16 = NTP_GPU_MATH_F16,
    NTP_GPU_BF16 = NTP_GPU_MATH_BF16,
    NTP_GPU_N_PEAKS = NTP_GPU_MATH_COUNT
};

/* The figures are the public ntp_gpu_ceilings (ntprof/machine.h), which
 * ntp_machine_measure copies into ntp_ceilings.gpus. */

/* The names of the peaks: "f32", "tf32", "f16", "bf16". */
const char *ntp__gpu_peak_name(int i);
/* Measure GPU 0 for about `seconds` per figure. UNSUPPORTED with the
 * reason in one line when there is no GPU (or no CUDA in this build). */
ntp_status ntp__gpu_ceilings_measure(ntp_ctx *ctx, double seconds, ntp_gpu_ceilings *out);
/* The ceilings as a few lines of text. */
void ntp__gpu_ceilings_print(FILE *f, const ntp_gpu_ceilings *c);

#endif
