/* The load generator's own cost (docs/load.md#generator-cost): at 10k
 * offered QPS on a near-zero-cost model (serve-delay with a 0 µs delay),
 * the generator's time per issued query (queueing it and waking an
 * instance; target < 5 µs) and the mean lateness of issues against their
 * scheduled arrivals (target < 20 µs), with the load average and the share
 * of the CPUs other processes took beside them. Also at 1k and 2k QPS,
 * side by side. Prints and never fails on time.
 *
 * The generator's cost is split: the issues that found the instance asleep
 * and woke it (a futex system call; a busy or polling instance is never
 * signalled) and the mean time of a wake; the rest is writing and
 * publishing the query (no lock). Every rate runs with idle instances
 * polling for the margin (poll_us -1, opt-in), and 10k QPS once more with
 * them sleeping at once (poll 0, the default), so that every issue wakes
 * one: the wake's share, measured. With polling, an idle instance sleeps
 * only to the margin before the next arrival and polls from there, so the
 * query is handed over without a system call at any rate; the CPU this
 * spinning costs (the generator's and the instances') is printed per query.
 *
 *   bench_load [QUERIES at 10k QPS (default 50000) [MARGIN_US (default:
 *              measured by the generator)]] */
#include <stdio.h>
#include <stdlib.h>

#include "ntprof/ntprof.h"

static int bench(double qps, int64_t queries, double spin_us, double poll_us)
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
    if (spin_us >= 0)
        o.spin_us = spin_us;
    o.poll_us = poll_us;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_loadgen_result *r = NULL;
    if (ntp_loadgen_run(ctx, NTP_SOURCE_DIR "/models/serve-delay.xml", &lo, &o, &r) !=
        NTP_STATUS_OK) {
        fprintf(stderr, "bench_load: %s\n", ntp_ctx_errmsg(ctx));
        ntp_ctx_free(ctx);
        return 1;
    }
    ntp_loadgen_generator g = ntp_loadgen_result_generator(r);
    ntp_loadgen_latency lat = ntp_loadgen_result_latency_ms(r);
    int64_t nq = nq;
    printf("%7.0f QPS offered, %7.0f achieved (drawn %.0f), %lld queries: generator %.2f "
           "us/query (target < 5), lateness mean %.2f us (target < 20), p99 %.2f us, max %.1f "
           "us; margin %g us, sleeps woke %.2f us late (p99 %.2f), %lld of %lld past the "
           "deadline; issuing thread on CPU %d (-1: not pinned), timer slack %lld ns; latency "
           "p50 %.3f ms, p99 %.3f ms; load average %.2f, other processes %.0f%% of %d CPUs\n",
           qps, ntp_loadgen_result_qps_achieved(r), g.qps_drawn, (long long)nq, g.overhead_us,
           g.lateness_us, g.lateness_p99_us, g.lateness_max_us, g.margin_us, g.oversleep_mean_us,
           g.oversleep_p99_us, (long long)g.late_wakes, (long long)g.sleeps, g.generator_cpu,
           (long long)g.timer_slack_ns, lat.p50, lat.p99, ntp_loadgen_result_load_average(r),
           100 * ntp_loadgen_result_contention(r)->other, ntp_loadgen_result_cpus(r));
    double wake_share = nq ? (double)g.wakes * g.wake_us / (double)nq : 0;
    printf("        generator per query %.2f us = publishing %.2f us + waking %.2f us (%lld of "
           "%lld issues woke the sleeping instance, %.2f us a wake); instances poll %g us\n",
           g.overhead_us, g.overhead_us - wake_share, wake_share, (long long)g.wakes, (long long)nq,
           g.wake_us, g.poll_us);
    printf("        CPU spent spinning per query: generator %.2f us (to each deadline), "
           "instances %.2f us (polling the queue from the margin before each arrival)\n",
           g.generator_spin_us, g.instance_poll_us);
    ntp_loadgen_result_free(r);
    ntp_ctx_free(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    /* bench_load [QUERIES at 10k QPS [MARGIN_US]] */
    int64_t n = argc > 1 ? atoll(argv[1]) : 50000;
    double spin_us = argc > 2 ? atof(argv[2]) : -1;
    int rc = 0;
    rc |= bench(1000, n / 10, spin_us, -1);
    rc |= bench(2000, n / 5, spin_us, -1);
    rc |= bench(10000, n, spin_us, -1);
    rc |= bench(10000, n, spin_us, 0); /* no polling: every issue wakes the instance */
    return rc;
}
