/* What counting costs (docs/counters.md).
 *
 * 1. Reading a counter group, the cost the counting pass pays once per row:
 *    a software group on this thread; the same with a second thread of the
 *    process busy on another CPU (its counters are read through an
 *    inter-processor interrupt); a hardware group where the machine has a
 *    PMU. Side by side with a clock read, which the timing pass pays, and a
 *    system call that does nothing. Wall time and this thread's CPU time:
 *    on a shared machine the first also counts other processes' turns.
 * 2. The time of a whole `ntprof run` in each tool mode against the same
 *    run without counters: what each mode adds, counting pass and tool
 *    start-up included.
 * Figures are printed, never checked: they depend on the machine. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "measure/counters-impl.h"
#include "measure/measure-impl.h"
#include "ntprof/ntprof.h"

#define READS 20000

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* This thread's CPU time in ns: on a shared machine wall time also counts
 * the time other processes had the CPU. */
static double cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Median ns per read of every group of c over 20 batches of READS / 20
 * reads: wall time, and this thread's CPU time in *cpu. */
static double read_cost_ns(ntp_counters *c, double *cpu)
{
    uint64_t *snap = malloc((c->snap_len + 1) * sizeof *snap);
    double med[20], mc[20];
    for (int b = 0; b < 20; b++) {
        double c0 = cpu_ns();
        uint64_t t0 = ntp__now_ns();
        for (int i = 0; i < READS / 20; i++)
            ntp__counters_read(c, snap);
        med[b] = (double)(ntp__now_ns() - t0) / (READS / 20);
        mc[b] = (cpu_ns() - c0) / (READS / 20);
    }
    free(snap);
    qsort(med, 20, sizeof med[0], cmp_double);
    qsort(mc, 20, sizeof mc[0], cmp_double);
    *cpu = mc[10];
    return med[10];
}

/* A system call that does nothing, for scale. */
static double null_syscall_ns(void)
{
    double c0 = cpu_ns();
    for (int i = 0; i < READS; i++)
        syscall(SYS_getppid);
    return (cpu_ns() - c0) / READS;
}

static atomic_int stop;

static void *spin(void *arg)
{
    (void)arg;
    volatile unsigned long x = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        x++;
    return NULL;
}

static void bench_reads(void)
{
    ntp_ctx *ctx = ntp_ctx_init();
    printf("reading one counter group per row (median of 20 batches of %d reads)\n", READS / 20);
    printf("  clock read (the timing pass's cost per row): %.0f ns; a null system call: %.0f ns "
           "of CPU\n",
           ntp__clock_overhead_ns(), null_syscall_ns());
    printf("  %-44s %9s %9s\n", "", "wall", "CPU");
    static const char *const lists[] = {"task-clock", "sw", "sw,page-faults,minor-faults"};
    static const char *const what[] = {"software group, 1 event, 1 thread",
                                       "software group, 4 events (sw), 1 thread",
                                       "software group, 6 events, 1 thread"};
    double one = 0;
    for (int k = 0; k < 3; k++) {
        ntp_counters *c = NULL;
        if (ntp__counters_parse(ctx, lists[k], &c) || ntp__counters_open(ctx, c)) {
            printf("  %-44s failed: %s\n", what[k], ntp_ctx_errmsg(ctx));
            ntp__counters_free(c);
            continue;
        }
        double cpu, ns = read_cost_ns(c, &cpu);
        if (k == 1)
            one = ns;
        printf("  %-44s %6.0f ns %6.0f ns per read  %s\n", what[k], ns, cpu,
               cpu < 1000 ? "(< 1 us)" : "(>= 1 us)");
        ntp__counters_free(c);
    }
    /* A second thread busy on another CPU while the group is read. */
    pthread_t th;
    atomic_store(&stop, 0);
    if (pthread_create(&th, NULL, spin, NULL) == 0) {
        usleep(20000);
        ntp_counters *c = NULL;
        if (!ntp__counters_parse(ctx, "sw", &c) && !ntp__counters_open(ctx, c)) {
            double cpu, ns = read_cost_ns(c, &cpu);
            printf("  %-44s %6.0f ns %6.0f ns per read  (%d threads; %.1fx one thread)\n",
                   "sw, 2 threads, the other busy", ns, cpu, c->n_thr, one > 0 ? ns / one : NAN);
        }
        ntp__counters_free(c);
        atomic_store(&stop, 1);
        pthread_join(th, NULL);
    }
    ntp_counters *c = NULL;
    if (!ntp__counters_parse(ctx, "cycles,instructions", &c) && !ntp__counters_open(ctx, c) &&
        c->ev[0].group >= 0) {
        double cpu, ns = read_cost_ns(c, &cpu);
        printf("  %-44s %6.0f ns %6.0f ns per read\n", "hardware group (cycles, instructions)", ns,
               cpu);
    } else if (c)
        printf("  %-44s n/a: %.120s\n", "hardware group (cycles, instructions)", c->ev[0].reason);
    ntp__counters_free(c);
    ntp_ctx_free(ctx);
}

/* Wall time of `ntprof run MODEL ... EXTRA`, median of `reps` runs, in s. */
static double run_s(const char *model, const char *extra, int reps, int *rc)
{
    double t[5];
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' run '%s' -B ref -w 1 -n 10 --min-time 0 %s >/dev/null 2>&1",
             NTP_CLI, model, extra);
    *rc = 0;
    for (int i = 0; i < reps; i++) {
        uint64_t t0 = ntp__now_ns();
        int r = system(cmd);
        t[i] = (double)(ntp__now_ns() - t0) / 1e9;
        if (r != 0)
            *rc = r;
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    return t[reps / 2];
}

static void bench_tools(void)
{
    char model[1024];
    snprintf(model, sizeof model, "%s/models/tiny-mlp.xml", NTP_SOURCE_DIR);
    printf("\nwhole `ntprof run tiny-mlp -B ref -w 1 -n 10 --min-time 0` per mode "
           "(11 rows; median wall time)\n");
    static const struct {
        const char *extra, *what;
        int reps;
    } modes[] = {
        {"", "no counters (reference)", 5},
        {"--counters sw", "--counters sw (in-process)", 5},
        {"--counters all", "--counters all (in-process)", 5},
        {"--tool papi:perf::TASK-CLOCK", "--tool papi (in-process)", 5},
        {"--tool nvtx", "--tool nvtx (in-process)", 5},
        {"--tool perf-stat:task-clock", "--tool perf-stat (re-run under perf)", 3},
        {"--tool perf-record", "--tool perf-record (re-run under perf)", 3},
        {"--tool callgrind", "--tool callgrind (re-run under valgrind)", 1},
        {"--tool cachegrind", "--tool cachegrind (re-run under valgrind)", 1},
    };
    double base = 0;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        int rc;
        double s = run_s(model, modes[i].extra, modes[i].reps, &rc);
        if (i == 0)
            base = s;
        if (rc)
            printf("  %-42s failed (exit %d)\n", modes[i].what, rc);
        else
            printf("  %-42s %8.3f s  %6.1fx  (%+.3f s)\n", modes[i].what, s, s / base, s - base);
    }
}

int main(void)
{
    bench_reads();
    bench_tools();
    return 0;
}
