/* The side-by-side comparison of backends, private side (src/exec/multi.c). */
#ifndef NTPROF_MULTI_IMPL_H
#define NTPROF_MULTI_IMPL_H

#include "ntprof/frameworks.h"

/* What ntp_run_compare returns (opaque in include/ntprof/frameworks.h). */
struct ntp_backend_comparison {
    const char *topology;
    const char *source;
    ntp_dtype precision;
    int64_t batch;
    int threads;
    uint64_t seed;
    bool fused;
    /* The backend whose outputs are the oracle: "ref". When "ref" is not
     * among the runs it is still run once, unmeasured, for its outputs. */
    const char *reference;
    int n_runs;
    ntp_backend_run *runs; /* in the order asked for */
    int fastest;           /* index of the lowest median end-to-end */
    int n_layers;
    const char **layer_names; /* execution order */
    const char **layer_types;
    struct ntp_backend_store *store; /* owns the strings */
};

#endif
