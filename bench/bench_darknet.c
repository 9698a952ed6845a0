/* --backend darknet against Darknet itself, side by side in one run.
 *
 * For each network (default: Darknet's yolov3-tiny.cfg and darknet53.cfg),
 * rounds alternate between Darknet's own network_predict on the network
 * parse_network_cfg builds from the .cfg, and ntprof running the same .cfg
 * with --backend darknet (ntp_run's end-to-end median, the pass without
 * per-layer timing), batch 1, one thread (Darknet's CPU code has one).
 * ntprof runs with --fuse by default: a conv with batch_normalize and an
 * activation is then one generated Darknet [convolutional] layer, the
 * batch norm folded into it and the activation Darknet's own, as in
 * Darknet's network (docs/darknet.md); --no-fuse runs the three Darknet
 * layers ntprof's graph has (conv, [batchnorm], [activation]) instead.
 * Layers Darknet lacks (none in these two) would run on ref.
 *
 * Printed per round: both sides' times and the ratio ntprof/Darknet (the
 * round's ntprof median over the mean of its two network_predict calls,
 * measured back to back); per network: the medians, the load average, and
 * the verdict on the target: the per-round ratio's median and its
 * 95% interval (order statistics), "within 10% of network_predict" when
 * the whole interval lies in 0.90..1.10, "NOT within 10%" when it lies
 * wholly outside, "undecided" otherwise or under 6 rounds (the default).
 *
 * Usage: bench_darknet [ROUNDS] [--no-fuse] [FILE.cfg...] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ntprof/ntprof.h"

#ifdef NTP_HAVE_DARKNET
#include <fcntl.h>
#include <unistd.h>
#include "darknet.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static network *quiet_parse(const char *cfg)
{
    fflush(stderr);
    int saved = dup(2), null = open("/dev/null", O_WRONLY);
    dup2(null, 2);
    network *net = parse_network_cfg((char *)cfg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(null);
    return net;
}

static int bench(const char *cfg, int rounds, bool fuse)
{
    network *net = quiet_parse(cfg);
    set_batch_network(net, 1);
    size_t n_in = (size_t)net->w * net->h * net->c;
    float *x = malloc(n_in * sizeof *x);
    for (size_t i = 0; i < n_in; i++)
        x[i] = (float)((double)rand() / RAND_MAX);
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_load_opts lo = {.batch = 1, .max_memory = -1};
    ntp_graph *g = NULL;
    if (ntp_graph_load(ctx, cfg, &lo, &g) != NTP_STATUS_OK) {
        fprintf(stderr, "%s\n", ntp_ctx_errmsg(ctx));
        return 1;
    }
    double *dn = calloc((size_t)rounds * 2, sizeof *dn), *nt = calloc((size_t)rounds, sizeof *nt),
           *ratio = calloc((size_t)rounds, sizeof *ratio);
    network_predict(net, x); /* warm-up */
    int own = 0, fallback = 0;
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 2; k++) {
            double t0 = now_ms();
            network_predict(net, x);
            dn[2 * r + k] = now_ms() - t0;
        }
        ntp_run_opts o;
        ntp_run_opts_default(&o);
        o.backend = "darknet";
        o.warmup = 1;
        o.iterations = 2;
        o.min_time_s = 0;
        o.threads = 1;
        o.fuse = fuse;
        o.accuracy = false;
        ntp_run_result *res = NULL;
        if (ntp_run(ctx, g, &o, &res) != NTP_STATUS_OK) {
            fprintf(stderr, "%s\n", ntp_ctx_errmsg(ctx));
            return 1;
        }
        nt[r] = ntp_run_result_end_to_end_ms(res)->median;
        ratio[r] = nt[r] / ((dn[2 * r] + dn[2 * r + 1]) / 2);
        own = fallback = 0;
        for (int i = 0; i < ntp_run_result_layer_count(res); i++) {
            if (ntp_run_result_layer(res, i)->fused || !ntp_run_result_layer(res, i)->backend)
                continue;
            if (strcmp(ntp_run_result_layer(res, i)->backend, "darknet") == 0)
                own++;
            else
                fallback++;
        }
        ntp_run_result_free(res);
        printf("  round %d: darknet %.1f %.1f ms, ntprof --backend darknet%s %.1f ms: ratio "
               "%.3f\n",
               r + 1, dn[2 * r], dn[2 * r + 1], fuse ? " --fuse" : "", nt[r], ratio[r]);
        fflush(stdout);
    }
    double a = median(dn, 2 * rounds), b = median(nt, rounds);
    double la[3] = {0};
    getloadavg(la, 3);
    printf("%s: Darknet network_predict %.1f ms, ntprof --backend darknet%s %.1f ms (%d rows on "
           "darknet, %d elsewhere): ratio of medians %.3f; load average %.2f %.2f %.2f\n",
           cfg, a, fuse ? " --fuse" : "", b, own, fallback, b / a, la[0], la[1], la[2]);
    ntp_stats st;
    ntp_stats_compute(ratio, (size_t)rounds, &st);
    const char *v = rounds < 6 ? "undecided (under 6 rounds: no 95% interval)"
                    : st.ci95_lo >= 0.9 && st.ci95_hi <= 1.1 ? "within 10% of network_predict"
                    : st.ci95_hi < 0.9 || st.ci95_lo > 1.1   ? "NOT within 10% of network_predict"
                                                             : "undecided (the interval crosses "
                                                               "0.90 or 1.10: more rounds)";
    printf("verdict %s: %s: ntprof/darknet %.3f, %s %.3f..%.3f over %d interleaved rounds\n", cfg,
           v, st.median, rounds >= 6 ? "95% CI" : "range", st.ci95_lo, st.ci95_hi, rounds);
    free(ratio);
    free(dn);
    free(nt);
    free(x);
    free_network(net);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    int rounds = 6, a = 1;
    bool fuse = true;
    if (a < argc && argv[a][0] >= '0' && argv[a][0] <= '9')
        rounds = atoi(argv[a++]);
    if (rounds < 1)
        rounds = 1;
    if (a < argc && strcmp(argv[a], "--no-fuse") == 0) {
        fuse = false;
        a++;
    }
    static const char *const dflt[] = {"/usr/share/darknet/cfg/yolov3-tiny.cfg",
                                       "/usr/share/darknet/cfg/darknet53.cfg"};
    int rc = 0;
    if (a < argc)
        for (int i = a; i < argc; i++)
            rc |= bench(argv[i], rounds, fuse);
    else
        for (int i = 0; i < 2; i++)
            rc |= bench(dflt[i], rounds, fuse);
    return rc;
}
#else
int main(void)
{
    printf("bench_darknet: not built with libdarknet (package darknet)\n");
    return 0;
}
#endif
