/* The load generator, private to libntprof (docs/load.md). */
#ifndef NTPROF_LOADGEN_IMPL_H
#define NTPROF_LOADGEN_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include "ntprof/load.h"

/* LoadGen's confidence for early stopping. */
#define NTP_LOADGEN_CONFIDENCE 0.99

/* An early-stopping verdict: whether the run holds enough queries, how
 * many it needs in all, and (single- and multi-stream) the percentile's
 * upper estimate. */
typedef struct ntp__lg_es {
    bool met;
    int64_t needed;
    double estimate;
} ntp__lg_es;

/* Single- and multi-stream: the latencies sorted ascending, n of them. */
void ntp__lg_early_stopping(const double *sorted, int64_t n, double p, ntp__lg_es *out);
/* Server: n queries of which `over` exceeded the bound. */
void ntp__lg_early_stopping_bound(int64_t n, int64_t over, double p, ntp__lg_es *out);
void ntp__lg_sort(double *v, int64_t n);
/* LoadGen's percentile: the sorted value at index floor(n p). */
double ntp__lg_percentile(const double *sorted, int64_t n, double p);

#endif
