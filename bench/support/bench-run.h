/* What the history benchmarks share (bench_history.c, bench_store.c): a
 * monotonic clock and a synthetic run result to append. Every C file of
 * bench/support is linked into every benchmark. */
#ifndef NTPROF_BENCH_RUN_H
#define NTPROF_BENCH_RUN_H

#include "ntprof/ntprof.h"

/* Seconds on the monotonic clock. */
double bench_now_s(void);
/* A run result with n rows and plausible figures; names (n of 24 bytes,
 * the caller's) hold the rows' names. Exits on a failed allocation. Free it
 * with bench_run_free. */
ntp_run_result *bench_run_make(int n, char (*names)[24]);
void bench_run_free(ntp_run_result *r);

#endif
