/* NVTX ranges around every layer and marker of the counting pass, for
 * Nsight Systems (`nsys profile --trace=nvtx`) and Nsight Compute
 * (`ncu --nvtx --nvtx-include "fc1/"`). NVTX 3 is header-only: without an
 * Nsight tool attached a push or pop is one test of a function pointer.
 * The build compiles this file only when the CUDA toolkit's nvtx3 headers
 * exist at configure time, and tools-nvtx-none.c otherwise. */
#include <stdio.h>

#include <nvtx3/nvToolsExt.h>

#include "counters-impl.h"

bool ntp__nvtx_available(char *why, size_t len)
{
    snprintf(why, len, "NVTX %d (header-only, from the CUDA toolkit found at build time)",
             NVTX_VERSION);
    return true;
}

void ntp__nvtx_push(const char *name)
{
    nvtxRangePushA(name);
}

void ntp__nvtx_pop(void)
{
    nvtxRangePop();
}

uint64_t ntp__nvtx_start(const char *name)
{
    return nvtxRangeStartA(name);
}

void ntp__nvtx_end(uint64_t id)
{
    nvtxRangeEnd(id);
}
