/* The load generator against queueing theory, not against itself
 * (docs/load.md#validation).
 *
 * One instance serving models/serve-delay.xml, whose service time S is a
 * busy wait, under Poisson arrivals at utilisation rho is an M/D/1 queue:
 * its mean latency (waiting + service) is the Pollaczek-Khinchine result
 *     S + rho S / (2 (1 - rho)),
 * which the measured mean must match within 10% at rho = 0.3, 0.5, 0.7,
 * with the p99 growing with rho. The arrival rate is set from the
 * single-stream mean; the S and rho the formula takes are the run's own,
 * in the M/G/1 form E[S] + lambda E[S^2] / (2 (1 - lambda E[S])) over its
 * service times (done - start) and drawn arrivals: the single-stream mean
 * includes a wake-up a busy server does not pay (at rho = 0.7 an S 5% too
 * large moves the formula by 12%), and a stall of the VM inside a service
 * is the server's, which E[S^2] charges (docs/load.md#validation).
 *
 * That formula is an expectation over sample paths; one run of a thousand
 * queries is one path, and at rho = 0.7 its own mean strays from the
 * expectation by several percent. So the measured mean is also compared
 * with the same arrivals and the same service times through an ideal FIFO
 * server (Lindley's recursion, D_k = max(A_k, D_k-1) + s_k): never below
 * it, and within 8% above it; what is left is the generator's lateness,
 * the hand-over and the wake-ups (70-90 us a query where the instance
 * sleeps between queries, on these VMs: hence S = 2 ms), not the path. The arrivals are
 * also checked against theory through an exact M/D/1 server (8%), and
 * their drawn rate as the report gives it against the scheduled times.
 *
 * Dynamic batching: with a service time of base + per x b microseconds for
 * a batch of b, full batches of B serve B / (base + per B) samples per
 * second; offline, max_batch 4 must raise the throughput over max_batch 1
 * by (4 / (base + 4 per)) / (1 / (base + per)) within 10%.
 *
 * These are timings on a shared machine: when other processes take more
 * than NTP_CONTENTION_THRESHOLD of the CPUs (the trust machinery of
 * src/measure/contention.c) the test cannot judge, and exits 77 saying so,
 * rather than failing at random. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ntprof/ntprof.h"

#define MODEL NTP_SOURCE_DIR "/models/serve-delay.xml"
#define SKIP 77

static int failures;

#define CHECK(cond, ...)                  \
    do {                                  \
        if (!(cond)) {                    \
            printf("FAIL: " __VA_ARGS__); \
            printf("\n");                 \
            failures++;                   \
        }                                 \
    } while (0)

static void skip_if_busy(const ntp_contention *c, const char *when)
{
    if (c->measured && c->other + c->steal - c->resolution >= NTP_CONTENTION_THRESHOLD) {
        printf("SKIP: the machine is too busy to judge timings (%s: other processes %.0f%%, "
               "steal %.0f%% of the CPUs, load average %.2f)\n",
               when, 100 * c->other, 100 * c->steal, c->load_average);
        exit(SKIP);
    }
}

static ntp_loadgen_result *serve(ntp_loadgen_scenario sc, const char *const *set, int n_set,
                                 double qps, int64_t queries, int max_batch)
{
    ntp_loadgen_opts o;
    ntp_loadgen_opts_default(&o);
    o.scenario = sc;
    o.backend = "ref";
    o.duration_s = 0;
    o.min_queries = queries;
    o.qps = qps;
    o.latency_bound_ms = 1000;
    o.max_batch = max_batch;
    o.warmup = 3;
    ntp_load_opts lo = {0};
    lo.set = (const char **)set;
    lo.n_set = n_set;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_loadgen_result *r = NULL;
    if (ntp_loadgen_run(ctx, MODEL, &lo, &o, &r) != NTP_STATUS_OK) {
        printf("FAIL: ntp_loadgen_run: %s\n", ntp_ctx_errmsg(ctx));
        exit(1);
    }
    ntp_ctx_free(ctx);
    skip_if_busy(ntp_loadgen_result_contention(r), ntp_loadgen_scenario_name(sc));
    return r;
}

/* Mean latency of the same arrivals through a deterministic server of
 * service time s (ms): Lindley's recursion. */
static double lindley_mean(const ntp_loadgen_result *r, double s)
{
    double d = -1e300, sum = 0;
    int64_t n = ntp_loadgen_result_queries(r);
    for (int64_t k = 0; k < n; k++) {
        double a = ntp_loadgen_result_query(r, k)->scheduled_us / 1e3;
        d = (a > d ? a : d) + s;
        sum += d - a;
    }
    return sum / (double)n;
}

/* The same arrivals and the run's own service times (done - start of each
 * query) through an ideal FIFO server that loses no time between queries:
 * what the measured mean has above it is the generator's (its lateness,
 * the hand-over of a query to the instance, the wake-ups). */
static double lindley_own_mean(const ntp_loadgen_result *r)
{
    double d = -1e300, sum = 0;
    int64_t n = ntp_loadgen_result_queries(r);
    for (int64_t k = 0; k < n; k++) {
        const ntp_loadgen_query *q = ntp_loadgen_result_query(r, k);
        double a = q->scheduled_us / 1e3;
        d = (a > d ? a : d) + (q->done_us - q->start_us) / 1e3;
        sum += d - a;
    }
    return sum / (double)n;
}

int main(void)
{
    ntp_contention c;
    ntp_contention_sample(0.2, &c);
    skip_if_busy(&c, "before the test");

    /* S, as the generator sees it. */
    /* 2 ms: each query that finds the instance asleep pays its wake-up
     * (70-90 us on these VMs, the instrument's own cost, which the report
     * gives as lateness and wakes); at 1 ms that alone was +7-8% at
     * rho = 0.3, where the check is about the queue. */
    const char *const md1[] = {"base_us=2000"};
    ntp_loadgen_result *r = serve(NTP_LOADGEN_SINGLE_STREAM, md1, 1, 0, 300, 1);
    double s = ntp_loadgen_result_latency_ms(r).mean;
    printf("service time S = %.4f ms (single-stream mean of %lld; p99 %.4f)\n", s,
           (long long)ntp_loadgen_result_queries(r), ntp_loadgen_result_latency_ms(r).p99);
    CHECK(s >= 2.0 && s < 2.2, "S = %.4f ms for a 2000 us delay", s);
    ntp_loadgen_result_free(r);

    const double rhos[] = {0.3, 0.5, 0.7};
    const int64_t n[] = {1000, 1500, 2500};
    double p99[3];
    for (int i = 0; i < 3; i++) {
        double rho = rhos[i], qps = rho / (s / 1e3);
        r = serve(NTP_LOADGEN_SERVER, md1, 1, qps, n[i], 1);
        /* What this run's server did: the first two moments of its service
         * times (done - start: the busy wait as the instance timed it,
         * with any stall of the VM inside it) and the rate of the arrivals
         * drawn. Pollaczek-Khinchine for M/G/1 with them is the M/D/1
         * formula when every service takes S, and charges a stall to the
         * server, where it happened, rather than to the generator. */
        double m1 = 0, m2 = 0, lat = 0, smax = 0;
        int64_t nq = ntp_loadgen_result_queries(r);
        ntp_loadgen_generator g = ntp_loadgen_result_generator(r);
        ntp_loadgen_latency lms = ntp_loadgen_result_latency_ms(r);
        for (int64_t k = 0; k < nq; k++) {
            const ntp_loadgen_query *q = ntp_loadgen_result_query(r, k);
            double sk = (q->done_us - q->start_us) / 1e3;
            m1 += sk;
            m2 += sk * sk;
            smax = sk > smax ? sk : smax;
            lat += (q->done_us - q->scheduled_us) / 1e3;
        }
        m1 /= (double)nq;
        m2 /= (double)nq;
        lat /= (double)nq;
        double lambda = g.qps_drawn / 1e3, rho_m = lambda * m1;
        double mean = lms.mean;
        double theory = rho_m < 1 ? m1 + lambda * m2 / (2 * (1 - rho_m)) : INFINITY;
        double md1_s = s + rho * s / (2 * (1 - rho));
        double own = lindley_own_mean(r), path = lindley_mean(r, s);
        printf("rho %.1f: %lld queries at %.1f QPS: mean %.4f ms; services mean %.4f ms, cv %.3f, "
               "max %.3f ms: rho %.3f, M/G/1 %.4f ms (%+.1f%%); the same arrivals and services "
               "through an ideal server %.4f ms (%+.1f%%); M/D/1 with the single-stream S %.4f ms "
               "(%+.1f%%); p99 %.4f ms; lateness mean %.1f us, p99 %.1f us; load average %.2f\n",
               rho, (long long)nq, qps, mean, m1, sqrt(fmax(m2 - m1 * m1, 0)) / m1, smax, rho_m,
               theory, 100 * (mean / theory - 1), own, 100 * (mean / own - 1), md1_s,
               100 * (mean / md1_s - 1), lms.p99, g.lateness_us, g.lateness_p99_us,
               ntp_loadgen_result_load_average(r));
        CHECK(fabs(lat / mean - 1) < 1e-9, "rho %.1f: reported mean %.6f ms, queries' own %.6f ms",
              rho, mean, lat);
        CHECK(m1 >= 2.0 && m1 < 2.2, "rho %.1f: services of a 2000 us delay average %.4f ms", rho,
              m1);
        CHECK(fabs(mean / theory - 1) <= 0.10, "rho %.1f: mean %.4f ms, M/G/1 %.4f ms", rho, mean,
              theory);
        /* One instance starts a query no earlier than its arrival and the
         * end of the one before: never faster than the ideal server. */
        CHECK(mean >= own * (1 - 1e-9), "rho %.1f: mean %.6f ms under the ideal server's %.6f ms",
              rho, mean, own);
        CHECK(mean / own - 1 <= 0.08,
              "rho %.1f: mean %.4f ms, the same arrivals and services through an ideal server "
              "%.4f ms (%+.1f%%); generator lateness mean %.1f us, p99 %.1f us",
              rho, mean, own, 100 * (mean / own - 1), g.lateness_us, g.lateness_p99_us);
        double drawn = (double)(nq - 1) / (ntp_loadgen_result_query(r, nq - 1)->scheduled_us / 1e6);
        CHECK(fabs(g.qps_drawn / drawn - 1) < 1e-6, "rho %.1f: qps_drawn %.3f, arrivals %.3f", rho,
              g.qps_drawn, drawn);
        /* The arrivals are Poisson at the rate asked: their own sample path
         * through an exact M/D/1 server is close to the formula. */
        CHECK(fabs(path / md1_s - 1) <= 0.08,
              "rho %.1f: the arrivals' ideal mean %.4f ms, "
              "theory %.4f ms",
              rho, path, md1_s);
        CHECK(nq == n[i], "rho %.1f: %lld queries, asked %lld", rho, (long long)nq,
              (long long)n[i]);
        p99[i] = lms.p99;
        ntp_loadgen_result_free(r);
    }
    CHECK(p99[0] < p99[1] && p99[1] < p99[2], "p99 not increasing with rho: %.4f %.4f %.4f", p99[0],
          p99[1], p99[2]);

    /* Batching: base 1000 us + 250 us per sample. */
    const char *const bat[] = {"base_us=1000", "per_sample_us=250"};
    ntp_loadgen_result *b1 = serve(NTP_LOADGEN_OFFLINE, bat, 2, 0, 300, 1);
    ntp_loadgen_result *b4 = serve(NTP_LOADGEN_OFFLINE, bat, 2, 0, 600, 4);
    double want = (4.0 / (1000 + 4 * 250)) / (1.0 / (1000 + 250));
    double got = ntp_loadgen_result_samples_per_s(b4) / ntp_loadgen_result_samples_per_s(b1);
    printf(
        "offline: %.1f samples/s at max batch 1, %.1f at max batch 4: x%.3f, theory x%.3f; "
        "batches of 4: %lld of %lld\n",
        ntp_loadgen_result_samples_per_s(b1), ntp_loadgen_result_samples_per_s(b4), got, want,
        (long long)ntp_loadgen_result_batch_count(b4, 4),
        (long long)(ntp_loadgen_result_batch_count(b4, 1) + ntp_loadgen_result_batch_count(b4, 2) +
                    ntp_loadgen_result_batch_count(b4, 3) + ntp_loadgen_result_batch_count(b4, 4)));
    CHECK(fabs(got / want - 1) <= 0.10, "batching x%.3f, theory x%.3f", got, want);
    CHECK(ntp_loadgen_result_batch_count(b4, 4) == 150,
          "offline 600 samples at max batch 4: %lld full batches",
          (long long)ntp_loadgen_result_batch_count(b4, 4));
    ntp_loadgen_result_free(b1);
    ntp_loadgen_result_free(b4);
    if (failures)
        printf("%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
