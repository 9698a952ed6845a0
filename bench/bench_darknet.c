/* --backend darknet against Darknet itself, side by side in one run.
 *
 * For each network (default: Darknet's yolov3-tiny.cfg and darknet53.cfg),
 * rounds alternate between Darknet's own network_predict on the network
 * parse_network_cfg builds from the .cfg, and ntprof running the same .cfg
 * with --backend darknet (ntp_run's end-to-end median, the pass without
 * per-layer timing), batch 1, one thread (Darknet's CPU code has one).
 * Printed: each side's median, the ratio ntprof/Darknet and the load
 * average. The difference is ntprof's graph: a conv with batch_normalize
 * and an activation is three Darknet layers here (conv, [batchnorm],
 * [activation]), fused in one in Darknet's own network, and the layers
 * Darknet lacks (none in these two) would run on ref.
 *
 * Usage: bench_darknet [ROUNDS] [FILE.cfg...] */
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

static int bench(const char *cfg, int rounds)
{
    network *net = quiet_parse(cfg);
    set_batch_network(net, 1);
    size_t n_in = (size_t)net->w * net->h * net->c;
    float *x = malloc(n_in * sizeof *x);
    for (size_t i = 0; i < n_in; i++)
        x[i] = (float)rand() / RAND_MAX;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_load_opts lo = {.batch = 1, .max_memory = -1};
    ntp_graph *g = NULL;
    if (ntp_graph_load(ctx, cfg, &lo, &g) != NTP_STATUS_OK) {
        fprintf(stderr, "%s\n", ntp_ctx_errmsg(ctx));
        return 1;
    }
    double *dn = calloc((size_t)rounds * 2, sizeof *dn), *nt = calloc((size_t)rounds, sizeof *nt);
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
        o.accuracy = false;
        ntp_run_result *res = NULL;
        if (ntp_run(ctx, g, &o, &res) != NTP_STATUS_OK) {
            fprintf(stderr, "%s\n", ntp_ctx_errmsg(ctx));
            return 1;
        }
        nt[r] = res->end_to_end_ms.median;
        own = fallback = 0;
        for (int i = 0; i < res->n_layers; i++) {
            if (strcmp(res->layers[i].backend, "darknet") == 0)
                own++;
            else
                fallback++;
        }
        ntp_run_result_free(res);
        printf("  round %d: darknet %.1f %.1f ms, ntprof --backend darknet %.1f ms\n", r + 1,
               dn[2 * r], dn[2 * r + 1], nt[r]);
        fflush(stdout);
    }
    double a = median(dn, 2 * rounds), b = median(nt, rounds);
    double la[3] = {0};
    getloadavg(la, 3);
    printf("%s: Darknet network_predict %.1f ms, ntprof --backend darknet %.1f ms (%d layers on "
           "darknet, %d on ref): ratio %.3f; load average %.2f %.2f %.2f\n",
           cfg, a, b, own, fallback, b / a, la[0], la[1], la[2]);
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
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    if (rounds < 1)
        rounds = 1;
    static const char *const dflt[] = {"/usr/share/darknet/cfg/yolov3-tiny.cfg",
                                       "/usr/share/darknet/cfg/darknet53.cfg"};
    int rc = 0;
    if (argc > 2)
        for (int i = 2; i < argc; i++)
            rc |= bench(argv[i], rounds);
    else
        for (int i = 0; i < 2; i++)
            rc |= bench(dflt[i], rounds);
    return rc;
}
#else
int main(void)
{
    printf("bench_darknet: not built with libdarknet (package darknet)\n");
    return 0;
}
#endif
