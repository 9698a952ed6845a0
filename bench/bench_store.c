/* The history's write overhead per run on SQLite and on PostgreSQL, side
 * by side: what `ntprof run --db` adds to a run (opening the store, one
 * transaction, closing), for a small topology (12 rows) and a
 * ResNet-50-sized one (180 rows). The target is under 50 ms a run on both.
 *
 * A second table: the same writes on one handle kept open across the runs
 * (ntp_store_add_run on a warm connection: a local sweep's parent, a Slurm
 * task), with the ratio of PostgreSQL's open-per-run time to it.
 *
 * Usage: bench_store [postgresql://URL]  (default: $NTP_BENCH_PG_URL, else a
 * server of its own from scripts/local-postgres.sh, stopped at the end).
 * Prints the load average beside the figures; never gates CI. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "measure/run-result-impl.h"
#include "ntprof/ntprof.h"
#include "support/bench-run.h"

static double cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_stime.tv_sec +
           1e-6 * (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

/* Median ms per run of `runs` ntp_store_record_run calls (open, add, close:
 * what one `ntprof run` does), each with a new UUID; *cpu_ms: this
 * process's CPU time per run (the server's not included), which a busy
 * machine inflates far less than the wall time. */
static double per_run_ms(const char *db, int runs, int rows, int tag, bool reuse, double *cpu_ms)
{
    char(*names)[24] = calloc((size_t)rows, 24);
    ntp_run_result *r = bench_run_make(rows, names);
    ntp_ctx *ctx = ntp_ctx_init();
    double *t = calloc((size_t)runs, sizeof *t);
    if (!names || !ctx || !t)
        exit(1);
    double c0;
    /* reuse: one handle for all the runs (what a sweep's parent holds), its
     * opening not counted: each run is then one transaction on a warm
     * connection. */
    ntp_store *s = NULL;
    if (reuse && ntp_store_open(ctx, db, NTP_STORE_CREATE, &s) != NTP_STATUS_OK) {
        fprintf(stderr, "bench_store: %s\n", ntp_ctx_errmsg(ctx));
        exit(1);
    }
    c0 = cpu_s();
    for (int i = 0; i < runs; i++) {
        snprintf(r->env.run_uuid, sizeof r->env.run_uuid, "%08x-%04x-4000-8000-%012d",
                 (unsigned)getpid(), (unsigned)tag, i);
        double t0 = bench_now_s();
        if ((s ? ntp_store_add_run(ctx, s, r, NULL) : ntp_store_record_run(ctx, db, r, NULL)) !=
            NTP_STATUS_OK) {
            fprintf(stderr, "bench_store: %s\n", ntp_ctx_errmsg(ctx));
            exit(1);
        }
        t[i] = 1e3 * (bench_now_s() - t0);
    }
    if (cpu_ms)
        *cpu_ms = 1e3 * (cpu_s() - c0) / runs;
    ntp_store_close(s);
    for (int i = 1; i < runs; i++) /* insertion sort: a few hundred */
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    double med = t[runs / 2];
    free(t);
    bench_run_free(r);
    free(names);
    ntp_ctx_free(ctx);
    return med;
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : getenv("NTP_BENCH_PG_URL");
    char own[512] = "", pgdir[512] = "", dir[] = "/tmp/ntp-bench-store-XXXXXX", cmd[1024];
    if (!mkdtemp(dir))
        return 1;
    if (!url || !*url) {
        /* A server of its own: its folder on the "dir:" line, its URL last. */
        snprintf(cmd, sizeof cmd, "'%s/scripts/local-postgres.sh' up 2>&1", NTP_SOURCE_DIR);
        FILE *p = popen(cmd, "r");
        char line[500];
        while (p && fgets(line, sizeof line, p)) {
            line[strcspn(line, "\n")] = '\0';
            if (strncmp(line, "dir: ", 5) == 0)
                snprintf(pgdir, sizeof pgdir, "%s", line + 5);
            snprintf(own, sizeof own, "%s", line);
        }
        if (p)
            pclose(p);
        if (strncmp(own, "postgresql://", 13) != 0) {
            fprintf(stderr, "bench_store: local-postgres.sh up failed: %s\n", own);
            return 1;
        }
        url = own;
    }
    char lite[300];
    snprintf(lite, sizeof lite, "%s/history.db", dir);
    const int runs = 100, sizes[] = {12, 180};
    double load[3] = {0};
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
            load[0] = -1;
        fclose(la);
    }
    printf("store write overhead per run (open, one transaction, close; median of %d)\n", runs);
    printf("load average at start: %.2f %.2f %.2f\n", load[0], load[1], load[2]);
    printf("%-14s %10s %10s %10s %14s %14s\n", "rows per run", "SQLite ms", "PgSQL ms", "Pg/SQLite",
           "SQLite cpu ms", "PgSQL cpu ms");
    int fails = 0;
    double open_pg[2];
    for (int k = 0; k < 2; k++) {
        per_run_ms(lite, 3, sizes[k], 100 + k, false, NULL); /* schema and caches warm */
        per_run_ms(url, 3, sizes[k], 200 + k, false, NULL);
        double ca, cb;
        double a = per_run_ms(lite, runs, sizes[k], k, false, &ca);
        double b = per_run_ms(url, runs, sizes[k], 10 + k, false, &cb);
        open_pg[k] = b;
        printf("%-14d %10.3f %10.3f %10.2f %14.3f %14.3f%s\n", sizes[k], a, b, b / a, ca, cb,
               a < 50 && b < 50 ? "" : "  (above the 50 ms target)");
    }
    /* The same writes on one handle kept open (a local sweep's parent, a
     * Slurm task's store): what a run adds once the connection is up. */
    printf("\none store handle kept open across the runs (a sweep), median of %d\n", runs);
    printf("%-14s %10s %10s %10s %14s %14s %12s\n", "rows per run", "SQLite ms", "PgSQL ms",
           "Pg/SQLite", "SQLite cpu ms", "PgSQL cpu ms", "Pg open/kept");
    for (int k = 0; k < 2; k++) {
        double ca, cb;
        double a = per_run_ms(lite, runs, sizes[k], 20 + k, true, &ca);
        double b = per_run_ms(url, runs, sizes[k], 30 + k, true, &cb);
        printf("%-14d %10.3f %10.3f %10.2f %14.3f %14.3f %12.2f%s\n", sizes[k], a, b, b / a, ca, cb,
               open_pg[k] / b, a < 50 && b < 50 ? "" : "  (above the 50 ms target)");
        fails += !(a < 50 && b < 50);
    }
    printf("load average at end: ");
    la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
            load[0] = -1;
        fclose(la);
    }
    printf("%.2f %.2f %.2f\n", load[0], load[1], load[2]);
    if (own[0]) {
        snprintf(cmd, sizeof cmd, "'%s/scripts/local-postgres.sh' down '%s' >/dev/null",
                 NTP_SOURCE_DIR, pgdir);
        if (system(cmd) != 0)
            fprintf(stderr, "bench_store: local-postgres.sh down failed\n");
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        return 1;
    return fails ? 2 : 0;
}
