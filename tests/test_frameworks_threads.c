/* Threads without oversubscription (docs/frameworks.md, "Threads when
 * backends share a process"): with --threads N every backend does its work
 * on N threads (the calling thread and N - 1 workers of its own pool), the
 * reference backend on the calling thread only, and no more than N threads
 * of the process want a CPU at any moment, also when layers fall back to
 * the reference backend and when several backends run one after the other
 * (ntp_run_compare).
 *
 * The evidence comes from the kernel, not from the libraries' own thread
 * counters: each thread's CPU time (/proc/self/task/TID/schedstat, in ns)
 * before and after a run gives the threads that worked, and a sampler
 * thread reads every thread's state (/proc/self/task/TID/stat) every
 * 200 µs and counts those running or runnable ('R'). A pool that ignored
 * the thread count would show more busy threads; two pools active at once,
 * or a worker spinning beside another backend's, more running threads. */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/backend-impl.h"
#include "ntprof/ntprof.h"

static ntp_ctx *ctx;
static char model[256];

/* A topology with enough work per layer for every pool to split it (GEMMs
 * of 64 x 512 x 1024), and an LSTM, which XNNPACK lacks: on xnnpack it
 * falls back to the reference backend between two XNNPACK layers. */
static const char *const TOPOLOGY = "<topology name=\"threads\" precision=\"f32\" batch=\"1\">\n"
                                    "  <input name=\"x\" shape=\"64,1,512\" dtype=\"f32\"/>\n"
                                    "  <fc name=\"fc1\" units=\"1024\"/>\n"
                                    "  <relu name=\"relu1\"/>\n"
                                    "  <lstm name=\"lstm\" units=\"128\"/>\n"
                                    "  <fc name=\"fc2\" units=\"1024\"/>\n"
                                    "  <relu name=\"relu2\"/>\n"
                                    "  <fc name=\"fc3\" units=\"512\"/>\n"
                                    "</topology>\n";

static int usable_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set);
    return 1;
}

/* --- per-thread CPU time ------------------------------------------------------ */

#define MAX_TASKS 256

typedef struct cpu_snapshot {
    int n;
    long tid[MAX_TASKS];
    long long ns[MAX_TASKS];
} cpu_snapshot;

static void snapshot(cpu_snapshot *s)
{
    s->n = 0;
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) && s->n < MAX_TASKS) {
        if (e->d_name[0] == '.')
            continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        FILE *f = fopen(path, "r");
        long long ns = 0;
        if (!f)
            continue; /* the thread ended meanwhile */
        if (fscanf(f, "%lld", &ns) == 1) {
            s->tid[s->n] = strtol(e->d_name, NULL, 10);
            s->ns[s->n++] = ns;
        }
        fclose(f);
    }
    closedir(d);
}

/* --- the sampler ---------------------------------------------------------------- */

typedef struct sampler {
    pthread_t thread;
    atomic_int stop;
    atomic_long tid;
    int samples;
    int max_running;
    int over; /* samples with more than `limit` running */
    int limit;
    /* The last CPU time seen of every thread, those that ended before the
     * run did too (XNNPACK's pool lives as long as its plan). */
    cpu_snapshot seen;
    int r_count[MAX_TASKS]; /* samples in which the thread was running */
} sampler;

/* Remember thread tid's CPU time ns in s; its slot. */
static int seen(cpu_snapshot *s, long tid, long long ns)
{
    for (int j = 0; j < s->n; j++)
        if (s->tid[j] == tid) {
            s->ns[j] = ns;
            return j;
        }
    if (s->n == MAX_TASKS)
        return -1;
    s->tid[s->n] = tid;
    s->ns[s->n] = ns;
    return s->n++;
}

static int read_file(const char *tid, const char *what, char *buf, size_t size)
{
    char path[300];
    snprintf(path, sizeof path, "/proc/self/task/%s/%s", tid, what);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t len = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[len] = '\0';
    return len > 0;
}

/* Threads running or runnable now, other than self; every thread's CPU
 * time goes into s->seen. */
static int running_now(sampler *s, long self)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    int running = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long tid = strtol(e->d_name, NULL, 10);
        if (e->d_name[0] == '.' || tid == self)
            continue;
        char buf[512], cpu[128];
        if (!read_file(e->d_name, "stat", buf, sizeof buf) ||
            !read_file(e->d_name, "schedstat", cpu, sizeof cpu))
            continue;
        int slot = seen(&s->seen, tid, strtoll(cpu, NULL, 10));
        /* "tid (comm) S ...": the state follows the last ')', since a
         * thread's name may hold parentheses. */
        const char *p = strrchr(buf, ')');
        if (p && p[1] == ' ' && p[2] == 'R') {
            running++;
            if (slot >= 0)
                s->r_count[slot]++;
        }
    }
    closedir(d);
    return running;
}

static void *sample(void *arg)
{
    sampler *s = arg;
    long self = (long)syscall(SYS_gettid);
    atomic_store(&s->tid, self);
    struct timespec nap = {0, 200000};
    while (!atomic_load(&s->stop)) {
        int r = running_now(s, self);
        s->samples++;
        if (r > s->max_running)
            s->max_running = r;
        if (r > s->limit)
            s->over++;
        nanosleep(&nap, NULL);
    }
    return NULL;
}

static void sampler_start(sampler *s, int limit)
{
    memset(s, 0, sizeof *s);
    s->limit = limit;
    atomic_store(&s->tid, 0L);
    assert_int_equal(pthread_create(&s->thread, NULL, sample, s), 0);
    while (atomic_load(&s->tid) == 0)
        sched_yield();
}

static void sampler_stop(sampler *s)
{
    atomic_store(&s->stop, 1);
    pthread_join(s->thread, NULL);
}

/* Threads that ran more than 2 ms between snapshot a and the sampler's
 * last look (a thread born in between counts from 0). */
static int busy_threads(const cpu_snapshot *a, const sampler *s)
{
    int busy = 0;
    for (int i = 0; i < s->seen.n; i++) {
        long long before = 0;
        for (int j = 0; j < a->n; j++)
            if (a->tid[j] == s->seen.tid[i])
                before = a->ns[j];
        double ms = (double)(s->seen.ns[i] - before) / 1e6;
        if (getenv("NTP_TEST_VERBOSE"))
            print_message("  thread %ld: %.3f ms on a CPU, running in %d samples\n", s->seen.tid[i],
                          ms, s->r_count[i]);
        busy += ms > 2;
    }
    return busy;
}

/* --- runs ------------------------------------------------------------------------- */

static int setup(void **state)
{
    (void)state;
    ctx = ntp_ctx_init();
    snprintf(model, sizeof model, "/tmp/ntp-test-threads-XXXXXX.xml");
    int fd = mkstemps(model, 4);
    if (!ctx || fd < 0)
        return -1;
    size_t len = strlen(TOPOLOGY);
    bool ok = write(fd, TOPOLOGY, len) == (ssize_t)len;
    close(fd);
    return ok ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    ntp_ctx_free(ctx);
    return unlink(model);
}

static ntp_graph *load(void)
{
    ntp_load_opts lo = {0};
    ntp_graph *g = NULL;
    if (ntp_graph_load(ctx, model, &lo, &g) != NTP_STATUS_OK)
        fail_msg("load: %s", ntp_ctx_errmsg(ctx));
    return g;
}

static void opts_for(ntp_run_opts *o, int threads)
{
    ntp_run_opts_default(o);
    o->warmup = 1;
    o->iterations = 5;
    o->min_time_s = 0;
    o->threads = threads;
    /* The probes around and between the iterations pin threads of their
     * own (docs/run.md#handoff); the count here is the backends'. */
    o->bandwidth_probe = NTP_BANDWIDTH_PROBE_OFF;
}

static double cpu_ms(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Let the pools of the run before fall asleep, so that a measurement sees
 * only its own run's threads: libgomp's and pthreadpool's workers poll for
 * about a millisecond after their last parallel region, OpenBLAS's for
 * about 0.1 s (and as long after the library loads). Waits until the other
 * threads used under 0.5 ms of CPU in 10 ms and none is runnable, as
 * ntp_run_compare does between backends. */
static void settle(void)
{
    for (int i = 0; i < 200; i++) {
        double p0 = cpu_ms(CLOCK_PROCESS_CPUTIME_ID), t0 = cpu_ms(CLOCK_THREAD_CPUTIME_ID);
        struct timespec nap = {0, 10000000};
        nanosleep(&nap, NULL);
        sampler quiet;
        memset(&quiet, 0, sizeof quiet);
        /* A poller that has not had a CPU yet (a busy machine) used no CPU
         * time but is runnable: wait for it too. */
        if ((cpu_ms(CLOCK_PROCESS_CPUTIME_ID) - p0) - (cpu_ms(CLOCK_THREAD_CPUTIME_ID) - t0) <
                0.5 &&
            running_now(&quiet, (long)syscall(SYS_gettid)) == 0)
            return;
    }
    fail_msg("the process's other threads did not go quiet in 2 s");
}

/* One backend with `threads` threads: the threads that worked, and the most
 * that ran at once. */
static void one_backend(const char *backend, int threads, int *busy, int *max_running)
{
    ntp_graph *g = load();
    ntp_run_opts o;
    opts_for(&o, threads);
    o.backend = backend;
    settle();
    sampler s;
    cpu_snapshot a;
    snapshot(&a);
    sampler_start(&s, threads);
    ntp_run_result *r = NULL;
    ntp_status st = ntp_run(ctx, g, &o, &r);
    sampler_stop(&s);
    if (st != NTP_STATUS_OK)
        fail_msg("%s: %s", backend, ntp_ctx_errmsg(ctx));
    *busy = busy_threads(&a, &s);
    *max_running = s.max_running;
    print_message("%-8s --threads %d: %d threads worked, at most %d running at once "
                  "(%d samples, %d over %d)\n",
                  backend, threads, *busy, s.max_running, s.samples, s.over, threads);
    ntp_run_result_free(r);
    ntp_graph_free(g);
}

static const char *const POOLED[] = {"onednn", "xnnpack", "blas"};

/* --threads 1: every backend, the reference included, works on the calling
 * thread alone. */
static void test_one_thread(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof POOLED / sizeof *POOLED; i++) {
        if (!ntp__backend_find(POOLED[i]))
            continue;
        int busy, running;
        one_backend(POOLED[i], 1, &busy, &running);
        assert_int_equal(busy, 1);
        assert_int_equal(running, 1);
    }
    int busy, running;
    one_backend("ref", 1, &busy, &running);
    assert_int_equal(busy, 1);
    assert_int_equal(running, 1);
}

/* --threads 2: each pooled backend puts a worker to work beside the calling
 * thread, and never more than two threads run; the reference backend stays
 * on the calling thread. On xnnpack the LSTM runs on ref between XNNPACK
 * layers, without the pool's worker spinning beside it past the limit. */
static void test_two_threads(void **state)
{
    (void)state;
    if (usable_cpus() < 2)
        skip();
    for (size_t i = 0; i < sizeof POOLED / sizeof *POOLED; i++) {
        if (!ntp__backend_find(POOLED[i]))
            continue;
        int busy, running;
        one_backend(POOLED[i], 2, &busy, &running);
        assert_int_equal(busy, 2);
        assert_true(running <= 2);
    }
    int busy, running;
    one_backend("ref", 2, &busy, &running);
    assert_int_equal(busy, 1);
    assert_int_equal(running, 1);
}

/* Several backends in one call (ntp_run_compare). With one thread nothing
 * but the calling thread works. With two, each backend's worker works in
 * its turn, and never more than two threads run: ntp_run_compare waits for
 * the last backend's pool to stop polling before it starts the next one
 * (without that wait, OpenBLAS's polling tail ran beside the next backend
 * in 2-4% of the samples, three threads on two cores). */
static void test_compare(void **state)
{
    (void)state;
    const char *be[4];
    int n = 0;
    for (size_t i = 0; i < sizeof POOLED / sizeof *POOLED; i++)
        if (ntp__backend_find(POOLED[i]))
            be[n++] = POOLED[i];
    if (n == 0)
        skip();
    int max_threads = usable_cpus() >= 2 ? 2 : 1;
    for (int threads = 1; threads <= max_threads; threads++) {
        ntp_graph *g = load();
        ntp_run_opts o;
        opts_for(&o, threads);
        settle();
        sampler s;
        cpu_snapshot a;
        snapshot(&a);
        sampler_start(&s, threads);
        ntp_backend_comparison *c = NULL;
        ntp_status st = ntp_run_compare(ctx, g, &o, be, n, &c);
        sampler_stop(&s);
        if (st != NTP_STATUS_OK)
            fail_msg("compare: %s", ntp_ctx_errmsg(ctx));
        int busy = busy_threads(&a, &s);
        print_message("%d backends, --threads %d: %d threads worked, at most %d running at once "
                      "(%d samples, %d over %d)\n",
                      n, threads, busy, s.max_running, s.samples, s.over, threads);
        if (threads == 1) {
            assert_int_equal(busy, 1);
            assert_int_equal(s.max_running, 1);
        } else {
            /* The calling thread and one worker per pooled backend. */
            assert_true(busy >= 2 && busy <= 1 + n);
            assert_int_equal(s.over, 0);
        }
        ntp_backend_comparison_free(c);
        ntp_graph_free(g);
    }
}

/* Debian links the pthreads build of OpenBLAS (libopenblas0-pthread):
 * openblas_get_parallel() is 1 (0 sequential, 2 OpenMP), as
 * docs/frameworks.md says. Looked up at run time, since the test must
 * build without the BLAS backend too. */
static void test_openblas_variant(void **state)
{
    (void)state;
    if (!ntp__backend_find("blas"))
        skip();
    int (*parallel)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "openblas_get_parallel");
    int (*get_threads)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "openblas_get_num_threads");
    assert_non_null(parallel);
    assert_non_null(get_threads);
    assert_int_equal(parallel(), 1);
    /* After a blas run with --threads 1, OpenBLAS is left at what the run
     * asked for. */
    int busy, running;
    one_backend("blas", 1, &busy, &running);
    assert_int_equal(get_threads(), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_thread),
        cmocka_unit_test(test_two_threads),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_openblas_variant),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
