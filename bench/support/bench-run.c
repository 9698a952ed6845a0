/* What the history benchmarks share (bench-run.h). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "measure/run-result-impl.h"
#include "support/bench-run.h"

double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

ntp_run_result *bench_run_make(int n, char (*names)[24])
{
    ntp_run_result *r = calloc(1, sizeof *r);
    ntp_layer_result *l = calloc((size_t)n, sizeof *l);
    if (!r || !l)
        exit(1);
    r->topology = "bench";
    r->source = "bench.xml";
    r->backend = "ref";
    r->iterations = 20;
    for (int i = 0; i < n; i++) {
        snprintf(names[i], 24, "layer%d", i);
        ntp_stats s = {.n = 20,
                       .median = 0.1 + i * 1e-3,
                       .min = 0.09,
                       .max = 0.2,
                       .mean = 0.11,
                       .p90 = 0.15,
                       .p99 = 0.19,
                       .stddev = 0.01,
                       .ci95_lo = 0.095,
                       .ci95_hi = 0.105 + i * 1e-3,
                       .cv = 0.09};
        l[i] = (ntp_layer_result){.name = names[i],
                                  .type = "conv",
                                  .kind = "layer",
                                  .backend = "ref",
                                  .output_shape = {4, {1, 64, 56, 56}},
                                  .time_ms = s,
                                  .share = 1.0 / n,
                                  .flops = 1000000 + i,
                                  .bytes = 40000,
                                  .gflops = 10,
                                  .gbps = 0.4,
                                  .intensity = 25};
    }
    r->layers = l;
    r->n_layers = n;
    r->end_to_end_ms = l[0].time_ms;
    r->layer_sum_ms = l[0].time_ms;
    ntp_env_collect(&r->env);
    return r;
}

void bench_run_free(ntp_run_result *r)
{
    free(r->layers);
    free(r);
}
