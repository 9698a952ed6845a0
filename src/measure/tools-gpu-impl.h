/* Nsight Compute and Nsight Systems (src/measure/tools-gpu.c, docs/gpu.md),
 * private to libntprof. */
#ifndef NTPROF_TOOLS_GPU_IMPL_H
#define NTPROF_TOOLS_GPU_IMPL_H

#include <stdbool.h>
#include <stddef.h>

/* Find `tool` ("ncu" or "nsys"): $NTP_NCU / $NTP_NSYS, PATH, the CUDA
 * toolkit's bin. false with the reason in one line when it is not there. */
bool ntp__gpu_tool_find(const char *tool, char *path, size_t len, char *why, size_t wlen);

/* The metrics asked of ncu: kernel duration (ns), then SM throughput, DRAM
 * throughput and achieved occupancy (% of peak). */
#define NTP_NCU_N 4
const char *ntp__ncu_metric(int i);

/* Every profiled kernel of ncu's `--csv --page raw` output, folded: the
 * summed duration (ns), the duration-weighted mean of each percentage
 * (pct[1..3]; pct[0] unused), and whether ncu gave each at all. */
typedef struct ntp_ncu_totals {
    int kernels;
    double duration;
    double pct[NTP_NCU_N];
    bool have[NTP_NCU_N];
} ntp_ncu_totals;

/* false (why says why) when csv holds no header naming ID and the
 * duration metric. */
bool ntp__ncu_parse(const char *csv, ntp_ncu_totals *t, char *why, size_t len);

#endif
