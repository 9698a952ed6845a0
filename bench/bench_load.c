/* The load generator's own cost (docs/load.md#generator-cost): at 10k
 * offered QPS on a near-zero-cost model (serve-delay with a 0 µs delay),
 * the generator's time per issued query (queueing it and waking an
 * instance; target < 5 µs) and the mean lateness of issues against their
 * scheduled arrivals (target < 20 µs), with the load average and the share
 * of the CPUs other processes took beside them. Also at 1k and 2k QPS,
 * side by side. Prints and never fails on time. */
#include <stdio.h>
#include <stdlib.h>

#include "ntprof/ntprof.h"

static int bench(double qps, int64_t queries)
{
    const char *set[] = {"base_us=0"};
    ntp_load_opts lo = {0};
    lo.set = set;
    lo.n_set = 1;
    ntp_loadgen_opts o;
    ntp_loadgen_opts_default(&o);
    o.scenario = NTP_LOADGEN_SERVER;
    o.backend = "ref";
    o.qps = qps;
    o.latency_bound_ms = 100;
    o.duration_s = 0;
    o.min_queries = queries;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_loadgen_result *r = NULL;
    if (ntp_loadgen_run(ctx, NTP_SOURCE_DIR "/models/serve-delay.xml", &lo, &o, &r) !=
        NTP_STATUS_OK) {
        fprintf(stderr, "bench_load: %s\n", ntp_ctx_errmsg(ctx));
        ntp_ctx_free(ctx);
        return 1;
    }
    printf("%7.0f QPS offered, %7.0f achieved, %lld queries: generator %.2f us/query "
           "(target < 5), lateness mean %.2f us (target < 20), max %.1f us; latency p50 %.3f "
           "ms, p99 %.3f ms; load average %.2f, other processes %.0f%% of %d CPUs\n",
           qps, r->qps_achieved, (long long)r->queries, r->overhead_us, r->lateness_us,
           r->lateness_max_us, r->latency_ms.p50, r->latency_ms.p99, r->load_average,
           100 * r->contention.other, r->cpus);
    ntp_loadgen_result_free(r);
    ntp_ctx_free(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 50000;
    int rc = 0;
    rc |= bench(1000, n / 10);
    rc |= bench(2000, n / 5);
    rc |= bench(10000, n);
    return rc;
}
