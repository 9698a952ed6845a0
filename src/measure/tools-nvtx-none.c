/* Built without NVTX: `--tool nvtx` fails and says why, and the ranges
 * cost nothing. (The build uses tools-nvtx.c when the CUDA toolkit's
 * nvtx3/nvToolsExt.h exists at configure time.) */
#include <stdio.h>

#include "counters-impl.h"

bool ntp__nvtx_available(char *why, size_t len)
{
    snprintf(why, len,
             "built without NVTX (no CUDA toolkit nvtx3/nvToolsExt.h at configure "
             "time; set CUDAToolkit_ROOT or install the toolkit and rebuild)");
    return false;
}

void ntp__nvtx_push(const char *name)
{
    (void)name;
}

void ntp__nvtx_pop(void)
{
}

uint64_t ntp__nvtx_start(const char *name)
{
    (void)name;
    return 0;
}

void ntp__nvtx_end(uint64_t id)
{
    (void)id;
}
