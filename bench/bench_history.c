/* What the history costs a run: appending a run (one transaction) of a
 * small topology (12 rows) and of a ResNet-50-sized one (180 rows), with one
 * writer and with two writers at once; listing and reading a run back; a
 * comparison of two 10,000-row runs. Prints the figures side by side;
 * never gates CI. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "measure/run-result-impl.h"
#include "ntprof/ntprof.h"
#include "support/bench-run.h"

/* Seconds to append `runs` runs of `rows` rows from one process. */
static double append(const char *path, int runs, int rows)
{
    char(*names)[24] = calloc((size_t)rows, 24);
    ntp_run_result *r = bench_run_make(rows, names);
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_store *s;
    if (ntp_store_open(ctx, path, NTP_STORE_CREATE, &s) != NTP_STATUS_OK) {
        fprintf(stderr, "%s\n", ntp_ctx_errmsg(ctx));
        exit(1);
    }
    double t0 = bench_now_s();
    for (int i = 0; i < runs; i++) {
        /* A new run each time: the store keeps one run per UUID. */
        snprintf(r->env.run_uuid, sizeof r->env.run_uuid, "%08x-0000-4000-8000-%012d",
                 (unsigned)getpid(), i);
        if (ntp_store_add_run(ctx, s, r, NULL) != NTP_STATUS_OK) {
            fprintf(stderr, "%s\n", ntp_ctx_errmsg(ctx));
            exit(1);
        }
    }
    double t = bench_now_s() - t0;
    ntp_store_close(s);
    ntp_ctx_free(ctx);
    bench_run_free(r);
    free(names);
    return t;
}

int main(void)
{
    char dir[] = "/tmp/ntp-bench-history-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char path[256];
    const int runs = 200;
    const int sizes[] = {12, 180};
    printf("%-44s %10s %12s\n", "history", "ms/run", "runs/s");
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/one-%d.db", dir, sizes[k]);
        double t = append(path, runs, sizes[k]);
        char label[64];
        snprintf(label, sizeof label, "append, 1 writer, %d rows per run", sizes[k]);
        printf("%-44s %10.3f %12.0f\n", label, 1e3 * t / runs, runs / t);
        snprintf(path, sizeof path, "%s/two-%d.db", dir, sizes[k]);
        append(path, 1, sizes[k]); /* create the schema first */
        double t0 = bench_now_s();
        pid_t p[2];
        for (int w = 0; w < 2; w++)
            if ((p[w] = fork()) == 0)
                _exit(append(path, runs, sizes[k]) > 0 ? 0 : 1);
        for (int w = 0; w < 2; w++)
            waitpid(p[w], NULL, 0);
        t = bench_now_s() - t0;
        snprintf(label, sizeof label, "append, 2 writers at once, %d rows per run", sizes[k]);
        printf("%-44s %10.3f %12.0f\n", label, 1e3 * t / (2 * runs), 2 * runs / t);
    }
    /* Listing the 200 runs and reading one back, from the 180-row history. */
    snprintf(path, sizeof path, "%s/one-180.db", dir);
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_store *s;
    if (ntp_store_open(ctx, path, NTP_STORE_READ_ONLY, &s) != NTP_STATUS_OK)
        return 1;
    double t0 = bench_now_s();
    ntp_history_entry *e;
    int n;
    for (int i = 0; i < 20; i++) {
        if (ntp_store_list(ctx, s, NULL, &e, &n) != NTP_STATUS_OK)
            return 1;
        free(e);
    }
    char label[64];
    snprintf(label, sizeof label, "list %d runs", n);
    printf("%-44s %10.3f\n", label, 1e3 * (bench_now_s() - t0) / 20);
    t0 = bench_now_s();
    for (int i = 0; i < 20; i++) {
        ntp_run_result *r;
        if (ntp_store_load_run(ctx, s, 1 + i, &r) != NTP_STATUS_OK)
            return 1;
        ntp_run_result_free(r);
    }
    printf("%-44s %10.3f\n", "read a 180-row run back (JSON parse)",
           1e3 * (bench_now_s() - t0) / 20);
    ntp_store_close(s);

    /* Compare two 10,000-row runs. */
    enum { BIG = 10000 };
    char(*names)[24] = calloc(BIG, 24);
    ntp_run_result *a = bench_run_make(BIG, names), *b = bench_run_make(BIG, names);
    const ntp_run_result *runs2[2] = {a, b};
    ntp_comparison *c;
    t0 = bench_now_s();
    if (ntp_compare(ctx, runs2, NULL, 2, &c) != NTP_STATUS_OK)
        return 1;
    snprintf(label, sizeof label, "compare two %d-row runs", BIG);
    printf("%-44s %10.3f\n", label, 1e3 * (bench_now_s() - t0));
    ntp_comparison_free(c);
    bench_run_free(a);
    bench_run_free(b);
    free(names);
    ntp_ctx_free(ctx);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
