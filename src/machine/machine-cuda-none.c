/* Built without the CUDA toolkit: there are no GPU ceilings to measure
 * (cmake/ntp-cuda.cmake picks machine-cuda.c when the toolkit is found). */
#include <stdio.h>

#include "core/ctx-impl.h"
#include "machine-cuda-impl.h"

const char *ntp__gpu_peak_name(int i)
{
    static const char *const n[NTP_GPU_N_PEAKS] = {"f32", "tf32", "f16", "bf16"};
    return i >= 0 && i < NTP_GPU_N_PEAKS ? n[i] : "?";
}

ntp_status ntp__gpu_ceilings_measure(ntp_ctx *ctx, double seconds, ntp_gpu_ceilings *out)
{
    (void)seconds;
    (void)out;
    return ntp__error(
        ctx, NTP_STATUS_UNSUPPORTED,
        "GPU ceilings: built without the CUDA toolkit (set CUDAToolkit_ROOT and rebuild)");
}

void ntp__gpu_ceilings_print(FILE *f, const ntp_gpu_ceilings *c)
{
    (void)c;
    fprintf(f, "gpu: none (built without the CUDA toolkit)\n");
}
