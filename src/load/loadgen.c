/* The load generator (docs/load.md): queries issued by a LoadGen scenario
 * into a queue of its own, batched by the instance that takes them, run on
 * that instance's prepared plan for the batch's size, and timed from their
 * arrival to their completion.
 *
 * Threads: the caller's thread is the generator; each instance is a worker
 * thread (pinned to cores of its own where they fit) holding one prepared
 * plan per batch size. The queue holds queries in arrival order with the
 * samples of each not yet taken; a worker takes up to max_batch samples
 * from its head, waiting up to batch_timeout_us past the oldest waiting
 * query's arrival for a batch to fill. Server arrivals are scheduled at
 * absolute times (t0 + the sum of the exponential gaps), slept to within
 * spin_us and spun to, so that one late issue does not delay the next.
 *
 * The generator takes no lock: it writes a query into its slot (query i is
 * the queue's i-th entry, so the queue is the query table itself), then
 * publishes it by raising `published` (the samples issued) and `seq`, and
 * makes a system call only when an instance sleeps: a worker with nothing
 * to take counts itself in `sleepers` before it sleeps on the futex `seq`,
 * and rechecks `published` after, so a wake is never lost (both sides
 * seq_cst: the generator's raise of seq precedes its load of sleepers, the
 * worker's count precedes its load of published). A busy instance is
 * never signalled. Workers take samples under `mu`, among themselves only;
 * the generator locks it only to wait for a completion (single- and
 * multi-stream) or to withdraw samples (offline, interrupted). An idle
 * worker pinned to cores of its own polls for up to poll_ns before it
 * sleeps (the run's margin, at most 200 us), so that arrivals close
 * together cost neither a wake nor the instance's wake-up latency.
 *
 * Server arrivals are known in advance, so a polling worker need not sleep
 * through one: the generator posts the next arrival's deadline (`next_ns`)
 * after each issue, and an idle worker sleeps (a timed futex wait, its
 * timer slack at 1 ns) only to the run's margin before it, then polls
 * until the query comes, for at most the margin plus poll_ns past the
 * deadline. The query so finds the instance spinning and is handed over
 * by a store, without a system call; a wake-up that comes late still
 * counts the worker in `sleepers`, so the generator wakes it as before.
 * The CPU this costs is measured: the workers' polling time and the
 * generator's own spin to each deadline, per query, in the report. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/ctx-impl.h"
#include "core/rng-impl.h"
#include "exec/exec-impl.h"
#include "loadgen-impl.h"
#include "loadgen-result-impl.h"
#include "measure/measure-impl.h"

#define CHUNK_BITS 14
#define CHUNK ((int64_t)1 << CHUNK_BITS)
#define MAX_CHUNKS 65536 /* 2^30 queries */

/* LoadGen's minimums (mlperf.conf): 600 s, and queries per scenario. */
#define DEFAULT_DURATION_S 600.0
static const int64_t default_min_queries[NTP_LOADGEN_SCENARIO_COUNT] = {1024, 270336, 270336,
                                                                        24576};

static const char *const scenario_names[NTP_LOADGEN_SCENARIO_COUNT] = {
    "single-stream", "multi-stream", "server", "offline"};

const char *ntp_loadgen_scenario_name(ntp_loadgen_scenario s)
{
    return (unsigned)s < NTP_LOADGEN_SCENARIO_COUNT ? scenario_names[s] : "?";
}

ntp_status ntp_loadgen_scenario_parse(const char *s, ntp_loadgen_scenario *out)
{
    for (int i = 0; i < NTP_LOADGEN_SCENARIO_COUNT; i++)
        if (s && strcmp(s, scenario_names[i]) == 0) {
            *out = (ntp_loadgen_scenario)i;
            return NTP_STATUS_OK;
        }
    return NTP_STATUS_UNKNOWN_NAME;
}

void ntp_loadgen_opts_default(ntp_loadgen_opts *o)
{
    memset(o, 0, sizeof *o);
    o->scenario = NTP_LOADGEN_SINGLE_STREAM;
    o->instances = 1;
    o->threads_per_instance = 1;
    o->pin = true;
    o->max_batch = 1;
    o->samples_per_query = 8;
    o->duration_s = -1;
    o->min_queries = -1;
    o->seed = 1;
    o->warmup = 3;
    o->spin_us = -1; /* measured at the start of each run: margin_for() */
    /* No polling by default: on the 2-vCPU VM it was written on, an idle
     * instance polling beside the generator delayed the generator (issue
     * lateness p99 about 500 us against 40 us) and put test_load_queueing's
     * means 9-13% above M/D/1 (docs/load.md#generator-cost). */
    o->poll_us = 0;
}

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static struct timespec ts_of(int64_t ns)
{
    return (struct timespec){.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
}

/* A query as the generator and workers keep it. */
typedef struct lg_query {
    int64_t sched_ns, issued_ns, batched_ns, start_ns, done_ns;
    int samples, taken, remaining, batch, instance;
} lg_query;

typedef struct lg_instance {
    struct lg *L;
    int index;
    ntp_exec *x; /* [max_batch]: the plan for batch b is x[b - 1] */
    int n_cpus;
    int cpu[64]; /* pinned to these, n_cpus 0: not pinned */
    int64_t busy_ns;
    int64_t poll_spent_ns; /* time spent polling the queue (CPU, spinning) */
    double *warm_ms;       /* [max_batch][runs] */
    int warm_runs;
    pthread_t thread;
    ntp_ctx *ctx;
} lg_instance;

typedef struct lg {
    const ntp_loadgen_opts *o;
    int B;
    int64_t timeout_ns;
    int n_inst;
    lg_instance *inst;
    bool warm;           /* workers run the warm-up and leave */
    pthread_mutex_t mu;  /* among the workers; completions */
    pthread_cond_t done; /* a query completed */
    /* The queue: queries head (the oldest with samples not yet taken; under
     * mu) to n_q (the generator's), each published once `published`, the
     * samples issued, covers it; `taken` (written under mu) the samples
     * the workers took. */
    int64_t head;
    _Atomic int64_t published, taken;
    _Atomic uint32_t seq;    /* futex word: raised at each publication, close, failure */
    _Atomic int sleepers;    /* workers asleep on seq, or about to be */
    _Atomic int64_t poll_ns; /* an idle pinned worker's poll before it sleeps */
    _Atomic int64_t next_ns; /* server: the next arrival's deadline; 0: none known */
    atomic_bool closed;      /* no more arrivals */
    atomic_bool failed;
    char errmsg[512];
    ntp_status err;
    lg_query **chunk;
    int n_chunks;
    int64_t n_q, completed;
    int64_t t0_ns;
    int64_t *hist; /* [B + 1] */
    /* Queue depth at each arrival. */
    double *depth_t;
    int *depth;
    int64_t n_depth, cap_depth;
    int max_depth;
    /* The generator's cost; of it, the wakes of sleeping instances. */
    int64_t overhead_ns, late_ns, late_max_ns, n_issue;
    int64_t n_wake, wake_ns;
    /* Its sleeps (server): how late each woke past its target, ns. */
    int32_t *oversleep;
    int64_t n_sleep, late_wakes;
    int gen_cpu;         /* the issuing thread's CPU while it issues; -1: not pinned */
    int64_t spin_ns;     /* the sleep-then-spin margin of this run */
    int64_t gen_spin_ns; /* the generator's time spinning to its deadlines */
} lg;

static lg_query *Q(lg *L, int64_t i)
{
    return &L->chunk[i >> CHUNK_BITS][i & (CHUNK - 1)];
}

/* Room for query i (the generator, before publishing it). */
static bool ensure_query(lg *L, int64_t i)
{
    int c = (int)(i >> CHUNK_BITS);
    if (c >= MAX_CHUNKS)
        return false;
    while (L->n_chunks <= c) {
        if (!(L->chunk[L->n_chunks] = calloc((size_t)CHUNK, sizeof(lg_query))))
            return false;
        L->n_chunks++;
    }
    return true;
}

static long futex(_Atomic uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, (uint32_t *)(void *)w, op, val, ts, NULL, FUTEX_BITSET_MATCH_ANY);
}

/* Wake every sleeping worker; `seq` raised first. The caller has
 * published what they are to see (samples, the close). */
static void wake_workers(lg *L)
{
    atomic_fetch_add(&L->seq, 1);
    if (atomic_load(&L->sleepers) > 0)
        futex(&L->seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
}

/* A worker, mu not held, that saw `seen` samples published: sleep until
 * more are, the queue closes, or the absolute deadline dl_ns (0: none). */
static void wait_for_work(lg *L, int64_t seen, int64_t dl_ns)
{
    uint32_t s = atomic_load(&L->seq);
    atomic_fetch_add(&L->sleepers, 1);
    if (atomic_load(&L->published) == seen && !atomic_load(&L->closed)) {
        if (dl_ns > 0) {
            struct timespec ts = ts_of(dl_ns);
            futex(&L->seq, FUTEX_WAIT_BITSET_PRIVATE, s, &ts);
        } else {
            futex(&L->seq, FUTEX_WAIT_PRIVATE, s, NULL);
        }
    }
    atomic_fetch_sub(&L->sleepers, 1);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* An idle worker, mu not held: poll up to poll_ns (or, when the next
 * server arrival is known, to poll_ns past its deadline) for samples past
 * `seen` or the close; the time polled is added to the instance's
 * poll_spent_ns. Returns whether something came. */
static bool poll_for_work(lg_instance *in, int64_t seen)
{
    lg *L = in->L;
    int64_t poll = atomic_load_explicit(&L->poll_ns, memory_order_relaxed);
    if (poll <= 0)
        return false;
    int64_t t = now_ns(), end = t + poll;
    int64_t next = atomic_load_explicit(&L->next_ns, memory_order_relaxed);
    if (next > 0 && next - L->spin_ns > t)
        return false; /* sleep to the margin before it first: wait_ahead */
    if (next > 0 && next + poll > end)
        end = next + poll;
    bool got = false;
    int64_t u = t;
    do {
        for (int k = 0; k < 64; k++) {
            if (atomic_load_explicit(&L->published, memory_order_acquire) != seen ||
                atomic_load_explicit(&L->closed, memory_order_relaxed)) {
                got = true;
                break;
            }
            cpu_relax();
        }
        if (got)
            break;
        u = now_ns();
        /* The generator posted a later arrival (this worker came back
         * before it had): sleep to the margin before that one instead. */
        int64_t n2 = atomic_load_explicit(&L->next_ns, memory_order_relaxed);
        if (n2 != next && n2 > 0 && n2 - L->spin_ns > u)
            break;
    } while (u < end);
    in->poll_spent_ns += (got ? now_ns() : u) - t;
    return got;
}

/* An idle polling worker that found nothing: when the next server arrival
 * is further than the margin away, sleep to the margin before it (a timed
 * futex wait, woken early by any publication), else until woken. */
static void wait_ahead(lg *L, int64_t seen)
{
    int64_t next = atomic_load_explicit(&L->next_ns, memory_order_relaxed);
    int64_t dl = next > 0 ? next - L->spin_ns : 0;
    wait_for_work(L, seen, dl > now_ns() ? dl : 0);
}

static void fail_locked(lg *L, ntp_status st, const char *msg)
{
    if (!L->failed) {
        L->err = st;
        snprintf(L->errmsg, sizeof L->errmsg, "%s", msg);
        atomic_store(&L->failed, true);
    }
    atomic_store(&L->closed, true);
    wake_workers(L);
    pthread_cond_broadcast(&L->done);
}

static void pin_self(const lg_instance *in)
{
    if (in->n_cpus == 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < in->n_cpus; i++)
        CPU_SET(in->cpu[i], &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static ntp_status run_plan(lg_instance *in, int b)
{
    ntp_exec *x = &in->x[b - 1];
    return ntp__exec_steps(in->ctx, x, 0, x->n_steps - 1);
}

/* Warm-up: every plan run warm_runs times, each timed: the unloaded
 * service times. */
static void warm_up(lg_instance *in)
{
    lg *L = in->L;
    for (int b = 1; b <= L->B; b++)
        for (int k = 0; k < in->warm_runs; k++) {
            int64_t t = now_ns();
            ntp_status st = run_plan(in, b);
            in->warm_ms[(b - 1) * in->warm_runs + k] = (double)(now_ns() - t) / 1e6;
            if (st) {
                pthread_mutex_lock(&L->mu);
                fail_locked(L, st, ntp_ctx_errmsg(in->ctx));
                pthread_mutex_unlock(&L->mu);
                return;
            }
        }
}

typedef struct lg_item {
    int64_t q;
    int take;
} lg_item;

static void *worker(void *arg)
{
    lg_instance *in = arg;
    lg *L = in->L;
    pin_self(in);
    /* Its timed sleeps (wait_ahead) end when asked, not up to 50 us later. */
    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    if (L->warm) {
        warm_up(in);
        return NULL;
    }
    /* Named, so that top -H, a debugger or a test can tell a serving
     * instance (its warm-up is over) from the rest. */
    (void)pthread_setname_np(pthread_self(), "ntp-serve");
    lg_item items[256];
    /* Polling only on cores of its own, beside a generator on its own. */
    bool may_poll = in->n_cpus > 0 && L->gen_cpu >= 0;
    pthread_mutex_lock(&L->mu);
    for (;;) {
        int64_t pub = atomic_load(&L->published), taken = atomic_load(&L->taken);
        if (pub == taken) {
            if (atomic_load(&L->closed))
                break; /* closed and drained */
            pthread_mutex_unlock(&L->mu);
            if (!may_poll)
                wait_for_work(L, pub, 0);
            else if (!poll_for_work(in, pub))
                wait_ahead(L, pub);
            pthread_mutex_lock(&L->mu);
            continue;
        }
        /* A partial batch waits for more samples, up to the timeout past
         * the arrival of the oldest waiting query. */
        while (pub > taken && pub - taken < L->B && L->timeout_ns > 0 && !atomic_load(&L->closed)) {
            int64_t dl = Q(L, L->head)->issued_ns + L->timeout_ns;
            if (now_ns() >= dl)
                break;
            pthread_mutex_unlock(&L->mu);
            wait_for_work(L, pub, dl);
            pthread_mutex_lock(&L->mu);
            pub = atomic_load(&L->published);
            taken = atomic_load(&L->taken);
        }
        if (pub == taken)
            continue; /* another instance took them */
        int64_t tb = now_ns();
        int b = 0, n = 0;
        while (b < L->B && pub > taken && n < (int)(sizeof items / sizeof items[0])) {
            int64_t qi = L->head;
            lg_query *q = Q(L, qi);
            int take = q->samples - q->taken;
            if (take > L->B - b)
                take = L->B - b;
            q->taken += take;
            b += take;
            taken += take;
            items[n++] = (lg_item){qi, take};
            if (q->taken == q->samples) {
                q->batched_ns = tb;
                L->head++;
            }
        }
        atomic_store(&L->taken, taken);
        pthread_mutex_unlock(&L->mu);
        int64_t ts = now_ns();
        ntp_status st = run_plan(in, b);
        int64_t te = now_ns();
        pthread_mutex_lock(&L->mu);
        in->busy_ns += te - ts;
        L->hist[b]++;
        bool any = false;
        for (int i = 0; i < n; i++) {
            lg_query *q = Q(L, items[i].q);
            q->remaining -= items[i].take;
            if (q->remaining == 0) {
                q->start_ns = ts;
                q->done_ns = te;
                q->batch = b;
                q->instance = in->index;
                L->completed++;
                any = true;
            }
        }
        if (any)
            pthread_cond_broadcast(&L->done);
        if (st) {
            fail_locked(L, st, ntp_ctx_errmsg(in->ctx));
            break;
        }
    }
    pthread_mutex_unlock(&L->mu);
    return NULL;
}

/* --- the generator ------------------------------------------------------------------- */

/* Samples published and not yet taken by an instance. */
static int64_t waiting_now(lg *L)
{
    return atomic_load_explicit(&L->published, memory_order_relaxed) -
           atomic_load_explicit(&L->taken, memory_order_relaxed);
}

/* The depth, in samples, an arrival at t finds, its own included:
 * `waiting` is read by the caller before the arrival is published (an
 * idle instance may take it at once, and a depth read after that would
 * leave it out). */
static void record_depth(lg *L, int64_t t, int64_t waiting)
{
    if (L->n_depth == L->cap_depth) {
        int64_t cap = L->cap_depth ? 2 * L->cap_depth : 1024;
        double *dt = realloc(L->depth_t, (size_t)cap * sizeof *dt);
        if (dt)
            L->depth_t = dt;
        int *d = dt ? realloc(L->depth, (size_t)cap * sizeof *d) : NULL;
        if (!d)
            return; /* the depth log is best effort: the run goes on */
        L->depth = d;
        L->cap_depth = cap;
    }
    L->depth_t[L->n_depth] = (double)(t - L->t0_ns) / 1e9;
    int depth = (int)(waiting < INT32_MAX ? waiting : INT32_MAX);
    L->depth[L->n_depth++] = depth;
    if (depth > L->max_depth)
        L->max_depth = depth;
}

/* Write query i (its chunk exists, i == n_q) of `samples` samples; not
 * yet published. */
static void put_query(lg *L, int64_t i, int samples, int64_t sched, int64_t issued)
{
    lg_query *q = Q(L, i);
    *q = (lg_query){.sched_ns = sched,
                    .issued_ns = issued,
                    .samples = samples,
                    .remaining = samples,
                    .batch = 0,
                    .instance = -1};
    L->n_q = i + 1;
}

/* Issue query i: written, published, and an instance woken only if one
 * sleeps (all of them for a query of several samples); the wake's cost
 * counted apart. */
static void issue(lg *L, int64_t i, int samples, int64_t sched, int64_t issued)
{
    put_query(L, i, samples, sched, issued);
    atomic_fetch_add(&L->published, samples);
    atomic_fetch_add(&L->seq, 1);
    if (atomic_load(&L->sleepers) > 0) {
        int64_t tw = now_ns();
        futex(&L->seq, FUTEX_WAKE_PRIVATE, samples > 1 ? INT_MAX : 1, NULL);
        L->n_wake++;
        L->wake_ns += now_ns() - tw;
    }
}

/* Sleep to spin_ns before the absolute deadline, then spin to it. Returns
 * how late the sleep woke past its target (ns), -1 when it did not sleep
 * (the deadline was nearer than the margin). */
static int64_t wait_until(int64_t deadline, int64_t spin_ns, int64_t *spun_ns)
{
    int64_t t = now_ns(), over = -1;
    if (deadline - t > spin_ns) {
        struct timespec ts = ts_of(deadline - spin_ns);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        t = now_ns();
        over = t - (deadline - spin_ns);
    }
    int64_t u = t;
    while (u < deadline)
        u = now_ns();
    if (spun_ns)
        *spun_ns += u - t;
    return over;
}

/* The margin for this run: the one asked for, or, when spin_us is
 * negative, one measured on this thread now (its timer slack already
 * set): 32 sleeps of 200 us, and the margin twice the latest wake-up past
 * its target plus 10 us, within 20 us to 2 ms. How late a sleep wakes
 * depends on the machine: a few microseconds on bare metal, 60-130 us on
 * the virtual machines this was developed on, where a fixed 50 us margin
 * left issues 60-75 us late on average. */
static int64_t margin_for(const ntp_loadgen_opts *o)
{
    if (o->spin_us >= 0)
        return (int64_t)(o->spin_us * 1e3);
    int64_t worst = 0;
    for (int i = 0; i < 32; i++) {
        int64_t target = now_ns() + 200000;
        struct timespec ts = ts_of(target);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        int64_t over = now_ns() - target;
        if (over > worst)
            worst = over;
    }
    int64_t m = 2 * worst + 10000;
    return m < 20000 ? 20000 : m > 2000000 ? 2000000 : m;
}

static bool stopped(const lg *L)
{
    return L->o->stop && *L->o->stop;
}

static void progress(const lg *L, const char *phase, int64_t done, int64_t total)
{
    if (L->o->progress)
        L->o->progress(L->o->progress_user, phase, done, total);
}

/* Server: the arrivals, Poisson at qps, as offsets from t0 (ns): LoadGen's
 * schedule, made before the run so that issuing costs no arithmetic, and
 * long enough for both minimums (the last arrival at or past the duration,
 * and min_queries of them). NULL when out of memory. */
static int64_t *server_schedule(const ntp_loadgen_opts *o, double qps, int64_t *n_out)
{
    uint64_t rng = o->seed ^ 0x9e3779b97f4a7c15ull;
    int64_t n = 0, cap = 1024;
    int64_t *at = malloc((size_t)cap * sizeof *at);
    double t = 0;
    while (at) {
        if (n == cap) {
            int64_t *p = realloc(at, (size_t)(cap *= 2) * sizeof *at);
            if (!p) {
                free(at);
                return NULL;
            }
            at = p;
        }
        at[n++] = (int64_t)(t * 1e9);
        if (n >= o->min_queries && t >= o->duration_s)
            break;
        if (n >= ((int64_t)1 << 30)) /* ~ a billion queries: the chunk table's limit */
            break;
        double u = (double)(ntp__rng_next(&rng) >> 11) * 0x1p-53;
        t += -log1p(-u) / qps;
    }
    *n_out = n;
    return at;
}

/* Server: the arrivals `at` issued at their absolute deadlines. */
static void gen_server(lg *L, const int64_t *at, int64_t n)
{
    int64_t spin = L->spin_ns;
    int64_t last_prog = now_ns();
    if (n > 0)
        atomic_store_explicit(&L->next_ns, L->t0_ns + at[0], memory_order_relaxed);
    for (int64_t i = 0; i < n && !stopped(L); i++) {
        int64_t deadline = L->t0_ns + at[i];
        int64_t over = wait_until(deadline, spin, &L->gen_spin_ns);
        int64_t t = now_ns();
        if (over >= 0) {
            if (L->oversleep)
                L->oversleep[L->n_sleep] = over < INT32_MAX ? (int32_t)over : INT32_MAX;
            L->n_sleep++;
            L->late_wakes += over > spin;
        }
        if (atomic_load_explicit(&L->failed, memory_order_relaxed))
            break;
        int64_t waiting = waiting_now(L) + 1;
        issue(L, i, 1, deadline, t);
        /* The next deadline, for an idle instance to wake ahead of it. */
        atomic_store_explicit(&L->next_ns, i + 1 < n ? L->t0_ns + at[i + 1] : 0,
                              memory_order_relaxed);
        int64_t t2 = now_ns();
        L->overhead_ns += t2 - t;
        L->late_ns += t - deadline;
        if (t - deadline > L->late_max_ns)
            L->late_max_ns = t - deadline;
        L->n_issue++;
        /* The depth log and progress only where the next arrival leaves
         * room for them. */
        if (i + 1 < n && L->t0_ns + at[i + 1] - t2 > 20000) {
            record_depth(L, t, waiting);
            if (t2 - last_prog > 100000000) {
                progress(L, "run", i + 1, n);
                last_prog = t2;
            }
        }
    }
}

/* Single- and multi-stream: one query at a time, the next when it is done. */
static void gen_stream(lg *L, int samples, double duration_s, int64_t min_q)
{
    int64_t dur = (int64_t)(duration_s * 1e9), last_prog = 0, last_issue = -1;
    for (int64_t i = 0; !stopped(L); i++) {
        /* LoadGen's minimum duration: the last query issued at or past it. */
        if (i >= min_q && last_issue - L->t0_ns >= dur)
            break;
        int64_t t = last_issue = now_ns();
        if (!ensure_query(L, i))
            break;
        if (atomic_load(&L->failed))
            break;
        int64_t waiting = waiting_now(L) + samples;
        issue(L, i, samples, t, t);
        int64_t t2 = now_ns();
        record_depth(L, t, waiting);
        L->overhead_ns += t2 - t;
        L->n_issue++;
        pthread_mutex_lock(&L->mu);
        while (L->completed <= i && !L->failed)
            pthread_cond_wait(&L->done, &L->mu);
        pthread_mutex_unlock(&L->mu);
        if (t - last_prog > 100000000) {
            /* The total is the larger of the minimums, in queries. */
            double el = (double)(t - L->t0_ns) / 1e9;
            int64_t est = el > 0 && i > 0 ? (int64_t)((double)i * duration_s / el) : min_q;
            progress(L, "run", i + 1, est > min_q ? est : min_q);
            last_prog = t;
        }
    }
}

/* Offline: n samples, as n queries of one sample, all at once. */
static void gen_offline(lg *L, int64_t n)
{
    int64_t t = L->t0_ns;
    wait_until(t, L->spin_ns, NULL);
    t = now_ns();
    for (int64_t i = 0; i < n; i++)
        put_query(L, i, 1, L->t0_ns, t);
    atomic_store(&L->published, n);
    record_depth(L, t, n);
    wake_workers(L);
    pthread_mutex_lock(&L->mu);
    while (L->completed < L->n_q && !L->failed) {
        if (stopped(L)) {
            /* The samples not yet taken are withdrawn (under mu: no worker
             * is taking): those computed are the result. */
            int64_t waiting = atomic_load(&L->published) - atomic_load(&L->taken);
            L->n_q = L->completed + (L->n_q - L->completed - waiting);
            atomic_store(&L->published, atomic_load(&L->taken));
            break;
        }
        struct timespec ts = ts_of(now_ns() + 100000000);
        pthread_cond_timedwait(&L->done, &L->mu, &ts);
        int64_t c = L->completed;
        pthread_mutex_unlock(&L->mu);
        progress(L, "run", c, n);
        pthread_mutex_lock(&L->mu);
    }
    pthread_mutex_unlock(&L->mu);
}

/* --- runs ------------------------------------------------------------------------------ */

static ntp_status start_workers(ntp_ctx *ctx, lg *L)
{
    for (int i = 0; i < L->n_inst; i++)
        if (pthread_create(&L->inst[i].thread, NULL, worker, &L->inst[i]) != 0) {
            atomic_store(&L->closed, true);
            wake_workers(L);
            for (int j = 0; j < i; j++)
                pthread_join(L->inst[j].thread, NULL);
            return ntp__error(ctx, NTP_STATUS_INTERNAL, "cannot start instance %d's thread", i);
        }
    return NTP_STATUS_OK;
}

static void join_workers(lg *L)
{
    atomic_store(&L->closed, true);
    wake_workers(L);
    for (int i = 0; i < L->n_inst; i++)
        pthread_join(L->inst[i].thread, NULL);
}

static void reset(lg *L)
{
    L->head = 0;
    atomic_store(&L->published, 0);
    atomic_store(&L->taken, 0);
    atomic_store(&L->sleepers, 0);
    atomic_store(&L->poll_ns, 0);
    atomic_store(&L->next_ns, 0);
    atomic_store(&L->closed, false);
    L->n_wake = L->wake_ns = 0;
    L->n_q = L->completed = 0;
    memset(L->hist, 0, (size_t)(L->B + 1) * sizeof *L->hist);
    L->n_depth = 0;
    L->max_depth = 0;
    L->overhead_ns = L->late_ns = L->late_max_ns = L->n_issue = 0;
    L->n_sleep = L->late_wakes = 0;
    L->gen_spin_ns = 0;
    for (int i = 0; i < L->n_inst; i++)
        L->inst[i].busy_ns = L->inst[i].poll_spent_ns = 0;
}

static bool push_warning(ntp_loadgen_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static bool push_warning(ntp_loadgen_result *r, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **w = realloc(r->warnings, (size_t)(r->n_warnings + 1) * sizeof *w);
    if (!w)
        return false;
    r->warnings = w;
    if (!(w[r->n_warnings] = ntp__strdup(buf)))
        return false;
    r->n_warnings++;
    return true;
}

/* One run at `qps` (server) into a new result. */
static ntp_status serve(ntp_ctx *ctx, lg *L, double qps, int64_t n_planned,
                        ntp_loadgen_result **out)
{
    const ntp_loadgen_opts *o = L->o;
    *out = NULL;
    reset(L);
    ntp_status st = NTP_STATUS_OK;
    int64_t *at = NULL;
    if (o->scenario == NTP_LOADGEN_SERVER && !(at = server_schedule(o, qps, &n_planned)))
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory for the arrivals");
    bool mem = true;
    if (o->scenario == NTP_LOADGEN_SERVER || o->scenario == NTP_LOADGEN_OFFLINE)
        for (int64_t i = 0; i < n_planned && mem; i += CHUNK)
            mem = ensure_query(L, i);
    if (!mem || (st = start_workers(ctx, L))) {
        free(at);
        return mem ? st
                   : ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory for %lld queries",
                                (long long)n_planned);
    }
    free(L->oversleep);
    L->oversleep = at ? malloc((size_t)n_planned * sizeof *L->oversleep) : NULL;
    /* The issuing thread (the caller's): timer slack at 1 ns, so that its
     * sleeps end when asked rather than up to 50 us later, and pinned to a
     * CPU the instances do not use where there is one; both restored. */
    int old_slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    bool slack_set = old_slack >= 0 && prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0) == 0;
    cpu_set_t old_aff;
    bool pinned_gen = false;
    if (L->gen_cpu >= 0 && pthread_getaffinity_np(pthread_self(), sizeof old_aff, &old_aff) == 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(L->gen_cpu, &one);
        pinned_gen = pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
    }
    L->spin_ns = margin_for(o);
    int64_t poll = o->poll_us >= 0       ? (int64_t)(o->poll_us * 1e3)
                   : L->spin_ns < 200000 ? L->spin_ns
                                         : 200000;
    atomic_store(&L->poll_ns, poll);
    ntp__contention_probe probe;
    ntp__contention_begin(&probe);
    L->t0_ns = now_ns() + 2000000; /* the workers wait on the queue by then */
    double dur = o->duration_s;
    switch (o->scenario) {
    case NTP_LOADGEN_SINGLE_STREAM:
    case NTP_LOADGEN_MULTI_STREAM:
        wait_until(L->t0_ns, L->spin_ns, NULL);
        gen_stream(L, o->scenario == NTP_LOADGEN_SINGLE_STREAM ? 1 : o->samples_per_query, dur,
                   o->min_queries);
        break;
    case NTP_LOADGEN_SERVER: gen_server(L, at, n_planned); break;
    case NTP_LOADGEN_OFFLINE: gen_offline(L, n_planned); break;
    case NTP_LOADGEN_SCENARIO_COUNT: break;
    }
    join_workers(L);
    int64_t at_last = at && n_planned > 0 ? at[n_planned - 1] : 0;
    free(at);
    ntp_contention cont;
    ntp__contention_end(&probe, &cont);
    if (slack_set)
        (void)prctl(PR_SET_TIMERSLACK, (unsigned long)old_slack, 0, 0, 0);
    if (pinned_gen)
        (void)pthread_setaffinity_np(pthread_self(), sizeof old_aff, &old_aff);
    if (L->failed)
        return ntp__error(ctx, L->err ? L->err : NTP_STATUS_INTERNAL, "%s", L->errmsg);

    ntp_loadgen_result *r = calloc(1, sizeof *r);
    int64_t n = L->completed;
    double *lat = NULL;
    if (!r || !(r->q = calloc((size_t)n + 1, sizeof *r->q)) ||
        !(r->batch_hist = calloc((size_t)L->B + 1, sizeof *r->batch_hist)) ||
        !(r->utilisation = calloc((size_t)L->n_inst, sizeof *r->utilisation)) ||
        !(lat = malloc(((size_t)n + 1) * sizeof *lat))) {
        ntp_loadgen_result_free(r);
        free(lat);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    r->contention = cont;
    r->interrupted = stopped(L);
    /* The completed queries, in issue order; a query interrupted before it
     * completed is not one. */
    int64_t k = 0, t_end = L->t0_ns, last_sched = L->t0_ns, last_issue = L->t0_ns;
    int64_t samples = 0;
    for (int64_t i = 0; i < L->n_q; i++) {
        lg_query *q = Q(L, i);
        if (q->remaining != 0)
            continue;
        double t0 = (double)L->t0_ns;
        r->q[k] = (ntp_loadgen_query){.scheduled_us = ((double)q->sched_ns - t0) / 1e3,
                                      .issued_us = ((double)q->issued_ns - t0) / 1e3,
                                      .batched_us = ((double)q->batched_ns - t0) / 1e3,
                                      .start_us = ((double)q->start_ns - t0) / 1e3,
                                      .done_us = ((double)q->done_ns - t0) / 1e3,
                                      .samples = q->samples,
                                      .batch = q->batch,
                                      .instance = q->instance};
        lat[k] = (double)(q->done_ns - q->sched_ns) / 1e6;
        samples += q->samples;
        if (q->done_ns > t_end)
            t_end = q->done_ns;
        if (q->sched_ns > last_sched)
            last_sched = q->sched_ns;
        if (q->issued_ns > last_issue)
            last_issue = q->issued_ns;
        k++;
    }
    n = k;
    r->queries = n;
    r->samples = samples;
    r->elapsed_s = (double)(t_end - L->t0_ns) / 1e9;
    r->qps_achieved = r->elapsed_s > 0 ? (double)n / r->elapsed_s : 0;
    r->samples_per_s = r->elapsed_s > 0 ? (double)samples / r->elapsed_s : 0;
    r->qps_offered = o->scenario == NTP_LOADGEN_SERVER ? qps : r->qps_achieved;
    double sum = 0;
    for (int64_t i = 0; i < n; i++)
        sum += lat[i];
    ntp__lg_sort(lat, n);
    r->latency_ms.p50 = ntp__lg_percentile(lat, n, 0.50);
    r->latency_ms.p90 = ntp__lg_percentile(lat, n, 0.90);
    r->latency_ms.p95 = ntp__lg_percentile(lat, n, 0.95);
    r->latency_ms.p99 = ntp__lg_percentile(lat, n, 0.99);
    r->latency_ms.p999 = ntp__lg_percentile(lat, n, 0.999);
    r->latency_ms.max = n ? lat[n - 1] : 0;
    r->latency_ms.min = n ? lat[0] : 0;
    r->latency_ms.mean = n ? sum / (double)n : 0;
    memcpy(r->batch_hist, L->hist, (size_t)(L->B + 1) * sizeof *L->hist);
    for (int i = 0; i < L->n_inst; i++)
        r->utilisation[i] = r->elapsed_s > 0 ? (double)L->inst[i].busy_ns / 1e9 / r->elapsed_s : 0;
    if (L->n_depth > 0 && (r->depth_t_s = malloc((size_t)L->n_depth * sizeof(double))) &&
        (r->depth = malloc((size_t)L->n_depth * sizeof(int)))) {
        memcpy(r->depth_t_s, L->depth_t, (size_t)L->n_depth * sizeof(double));
        memcpy(r->depth, L->depth, (size_t)L->n_depth * sizeof(int));
        r->n_depth = (int)L->n_depth;
    }
    r->max_depth = L->max_depth;
    r->gen.overhead_us = L->n_issue ? (double)L->overhead_ns / (double)L->n_issue / 1e3 : 0;
    r->gen.wakes = L->n_wake;
    r->gen.wake_us = L->n_wake ? (double)L->wake_ns / (double)L->n_wake / 1e3 : 0;
    r->gen.poll_us =
        L->gen_cpu >= 0 && L->inst[0].n_cpus > 0 ? (double)atomic_load(&L->poll_ns) / 1e3 : 0;
    r->gen.generator_cpu = pinned_gen ? L->gen_cpu : -1;
    r->gen.timer_slack_ns = slack_set ? 1 : old_slack;
    r->gen.margin_us = (double)L->spin_ns / 1e3;
    int64_t polled = 0;
    for (int i = 0; i < L->n_inst; i++)
        polled += L->inst[i].poll_spent_ns;
    r->gen.generator_spin_us = L->n_issue ? (double)L->gen_spin_ns / (double)L->n_issue / 1e3 : 0;
    r->gen.instance_poll_us = L->n_issue ? (double)polled / (double)L->n_issue / 1e3 : 0;
    if (o->scenario == NTP_LOADGEN_SERVER && L->n_issue) {
        r->gen.lateness_us = (double)L->late_ns / (double)L->n_issue / 1e3;
        r->gen.lateness_max_us = (double)L->late_max_ns / 1e3;
        /* The p99s: of the completed queries' issues, and of the sleeps. */
        double *late = malloc(((size_t)n + 1) * sizeof *late);
        if (late) {
            for (int64_t i = 0; i < n; i++)
                late[i] = r->q[i].issued_us - r->q[i].scheduled_us;
            ntp__lg_sort(late, n);
            r->gen.lateness_p99_us = ntp__lg_percentile(late, n, 0.99);
            free(late);
        }
        r->gen.sleeps = L->n_sleep;
        r->gen.late_wakes = L->late_wakes;
        if (L->oversleep && L->n_sleep > 0) {
            double *ov = malloc((size_t)L->n_sleep * sizeof *ov);
            if (ov) {
                double s = 0;
                for (int64_t i = 0; i < L->n_sleep; i++)
                    s += ov[i] = (double)L->oversleep[i] / 1e3;
                ntp__lg_sort(ov, L->n_sleep);
                r->gen.oversleep_mean_us = s / (double)L->n_sleep;
                r->gen.oversleep_p99_us = ntp__lg_percentile(ov, L->n_sleep, 0.99);
                free(ov);
            }
        }
        double last = n_planned > 0 && at_last > 0 ? (double)at_last / 1e9 : 0;
        r->gen.qps_drawn = last > 0 ? (double)(n_planned - 1) / last : 0;
    }

    /* Validity, as LoadGen judges it (docs/load.md#validity). */
    ntp__lg_es es = {0};
    double first = (double)L->t0_ns;
    switch (o->scenario) {
    case NTP_LOADGEN_SINGLE_STREAM:
    case NTP_LOADGEN_MULTI_STREAM:
        r->percentile = o->scenario == NTP_LOADGEN_SINGLE_STREAM ? 0.90 : 0.99;
        r->min_duration_met = ((double)last_issue - first) / 1e9 >= o->duration_s;
        ntp__lg_early_stopping(lat, n, r->percentile, &es);
        r->early_stopping_ms = es.estimate;
        r->bound_met = true;
        break;
    case NTP_LOADGEN_SERVER: {
        r->percentile = 0.99;
        r->min_duration_met = ((double)last_sched - first) / 1e9 >= o->duration_s;
        int64_t over = 0;
        for (int64_t i = 0; i < n; i++)
            over += lat[i] > o->latency_bound_ms;
        r->overlatency = over;
        ntp__lg_early_stopping_bound(n, over, r->percentile, &es);
        r->bound_met = ntp__lg_percentile(lat, n, 0.99) <= o->latency_bound_ms;
        break;
    }
    case NTP_LOADGEN_OFFLINE:
        r->percentile = 0;
        r->min_duration_met = r->elapsed_s >= o->duration_s;
        es.met = true;
        es.needed = o->min_queries;
        r->bound_met = true;
        break;
    case NTP_LOADGEN_SCENARIO_COUNT: break;
    }
    r->metric_ms = r->percentile > 0 ? ntp__lg_percentile(lat, n, r->percentile) : 0;
    r->early_stopping_met = es.met;
    r->early_stopping_needed = es.needed;
    r->min_queries_met = (o->scenario == NTP_LOADGEN_OFFLINE ? samples : n) >= o->min_queries;
    r->valid = r->min_duration_met && r->min_queries_met && r->bound_met && r->early_stopping_met &&
               !r->interrupted;
    free(lat);
    *out = r;
    return NTP_STATUS_OK;
}

/* --- preparing the instances ----------------------------------------------------------- */

static ntp_status check_opts(ntp_ctx *ctx, const ntp_loadgen_opts *o)
{
    if ((unsigned)o->scenario >= NTP_LOADGEN_SCENARIO_COUNT)
        return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_loadgen_opts.scenario",
                              "%d is none", (int)o->scenario);
    if (o->instances < 1 || o->instances > 256 || o->threads_per_instance < 1 ||
        o->threads_per_instance > 64)
        return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_loadgen_opts.instances",
                              "expects 1 to 256 and "
                              "ntp_loadgen_opts.threads_per_instance 1 to 64, got %d and %d",
                              o->instances, o->threads_per_instance);
    if (o->max_batch < 1 || o->max_batch > 256)
        return ntp__error_at(
            ctx, NTP_STATUS_INVALID_ARGUMENT,
            &(ntp__where){.option = "ntp_loadgen_opts.max_batch", .expected = "1 to 256"},
            "expects 1 to 256, got %d", o->max_batch);
    if (o->samples_per_query < 1 || o->samples_per_query > 4096)
        return ntp__error_at(
            ctx, NTP_STATUS_INVALID_ARGUMENT,
            &(ntp__where){.option = "ntp_loadgen_opts.samples_per_query", .expected = "1 to 4096"},
            "expects 1 to 4096, got %d", o->samples_per_query);
    if (!(o->batch_timeout_us >= 0) || isnan(o->spin_us) || isnan(o->poll_us) || o->warmup < 0)
        return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_loadgen_opts.batch_timeout_us",
                              "and warmup must not be negative, "
                              "nor spin_us or poll_us NaN");
    if (o->scenario == NTP_LOADGEN_SERVER) {
        if (!o->find_max_qps && !(o->qps > 0 && isfinite(o->qps)))
            return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_loadgen_opts.qps",
                                  "must be positive for the server scenario, "
                                  "got %g",
                                  o->qps);
        if (!(o->latency_bound_ms > 0 && isfinite(o->latency_bound_ms)))
            return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                                  "ntp_loadgen_opts.latency_bound_ms",
                                  "must be positive for the server "
                                  "scenario, got %g",
                                  o->latency_bound_ms);
    } else if (o->find_max_qps) {
        return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_loadgen_opts.find_max_qps",
                              "is for the server scenario, not %s",
                              ntp_loadgen_scenario_name(o->scenario));
    }
    return NTP_STATUS_OK;
}

static void free_lg(lg *L, ntp_graph **g)
{
    for (int i = 0; L->inst && i < L->n_inst; i++) {
        lg_instance *in = &L->inst[i];
        for (int b = 0; in->x && b < L->B; b++)
            if (in->x[b].g)
                ntp__exec_free(&in->x[b]);
        free(in->x);
        free(in->warm_ms);
        ntp_ctx_free(in->ctx);
    }
    free(L->inst);
    for (int b = 0; g && b < L->B; b++)
        ntp_graph_free(g[b]);
    free(g);
    for (int c = 0; c < L->n_chunks; c++)
        free(L->chunk[c]);
    free(L->chunk);
    free(L->hist);
    free(L->depth_t);
    free(L->depth);
    free(L->oversleep);
    pthread_mutex_destroy(&L->mu);
    pthread_cond_destroy(&L->done);
}

ntp_status ntp_loadgen_run(ntp_ctx *ctx, const char *path, const ntp_load_opts *load,
                           const ntp_loadgen_opts *opts, ntp_loadgen_result **out)
{
    *out = NULL;
    ntp_loadgen_opts o;
    if (opts)
        o = *opts;
    else
        ntp_loadgen_opts_default(&o);
    ntp_status st = check_opts(ctx, &o);
    if (st)
        return st;
    if (o.duration_s < 0)
        o.duration_s = DEFAULT_DURATION_S;
    if (o.min_queries < 0)
        o.min_queries = default_min_queries[o.scenario];
    const ntp_backend_i *be = o.backend ? ntp__backend_find(o.backend) : ntp__backend_get(0);
    if (!be)
        return ntp__error(ctx, NTP_STATUS_UNKNOWN_NAME, "unknown backend '%s'; this build has: %s",
                          o.backend, ntp_backends());

    lg L = {.o = &o, .B = o.max_batch, .n_inst = o.instances};
    L.timeout_ns = (int64_t)(o.batch_timeout_us * 1e3);
    pthread_mutex_init(&L.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&L.done, &ca);
    pthread_condattr_destroy(&ca);
    ntp_graph **g = calloc((size_t)L.B, sizeof *g);
    L.chunk = calloc(MAX_CHUNKS, sizeof *L.chunk);
    L.hist = calloc((size_t)L.B + 1, sizeof *L.hist);
    L.inst = calloc((size_t)L.n_inst, sizeof *L.inst);
    ntp_loadgen_result *best = NULL, *r = NULL;
    char *warn[8] = {0};
    int n_warn = 0;
    if (!g || !L.chunk || !L.hist || !L.inst) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }

    /* One graph per batch size: the model's param "batch" set to it. */
    progress(&L, "prepare", 0, 0);
    for (int b = 1; b <= L.B; b++) {
        ntp_load_opts lo = {0};
        if (load)
            lo = *load;
        if (L.B > 1)
            lo.batch = b;
        if ((st = ntp_graph_load(ctx, path, &lo, &g[b - 1])))
            goto done;
        if (L.B > 1 && ntp_graph_batch(g[b - 1]) != b) {
            st = ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                            "%s: ntp_loadgen_opts.max_batch %d needs a topology with a param "
                            "'batch' (dynamic batching sets it to each batch size)",
                            path, L.B);
            goto done;
        }
        if (ntp_graph_precision(g[b - 1]) == NTP_DTYPE_I8) {
            st = ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                            "%s: the load generator does not run i8 topologies (they need the "
                            "calibration pass of ntp_run); use f32, bf16 or f16",
                            path);
            goto done;
        }
    }

    /* Instances, pinned to cores of their own where they fit. */
    int cpus[1024];
    int n_cpus = ntp__set_cpus(cpus, 1024);
    int want = o.instances * o.threads_per_instance;
    bool pin = o.pin && n_cpus > 0 && want <= n_cpus;
    /* The issuing thread gets a CPU of its own only where one is spare. */
    L.gen_cpu = pin && want < n_cpus ? cpus[want] : -1;
    char wbuf[256];
    if (n_cpus > 0 && want > n_cpus) {
        snprintf(wbuf, sizeof wbuf,
                 "%d instances x %d threads = %d threads on %d CPU%s: they take turns "
                 "(oversubscribed) and are not pinned; use at most %d",
                 o.instances, o.threads_per_instance, want, n_cpus, n_cpus == 1 ? "" : "s", n_cpus);
        warn[n_warn++] = ntp__strdup(wbuf);
    }
    int64_t tp = now_ns();
    for (int i = 0; i < L.n_inst; i++) {
        lg_instance *in = &L.inst[i];
        in->L = &L;
        in->index = i;
        in->warm_runs = o.warmup > 0 ? o.warmup : 1;
        if (!(in->ctx = ntp_ctx_init()) || !(in->x = calloc((size_t)L.B, sizeof *in->x)) ||
            !(in->warm_ms = calloc((size_t)L.B * (size_t)in->warm_runs, sizeof(double)))) {
            st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            goto done;
        }
        if (pin) {
            in->n_cpus = o.threads_per_instance;
            for (int c = 0; c < in->n_cpus; c++)
                in->cpu[c] = cpus[i * o.threads_per_instance + c];
        }
        for (int b = 1; b <= L.B; b++) {
            const ntp_graph *gb = g[b - 1];
            ntp_exec_opts eo = {.backend = be,
                                .threads = o.threads_per_instance,
                                .seed = o.seed,
                                .first = 0,
                                .last = ntp_graph_layer_count(gb) - 1};
            /* The first plan's warnings (layers that fall back to ref)
             * hold for every plan: they are said once. */
            ntp_ctx *pc = i == 0 && b == 1 ? ctx : in->ctx;
            if ((st = ntp__exec_init(pc, &in->x[b - 1], gb, &eo))) {
                in->x[b - 1].g = NULL;
                if (pc != ctx)
                    ntp__error(ctx, st, "%s", ntp_ctx_errmsg(pc));
                goto done;
            }
            ntp_ctx_clear_warnings(in->ctx);
        }
    }
    double prepare_ms = (double)(now_ns() - tp) / 1e6;

    /* Warm-up, one instance at a time, so that the service times are
     * those of an unloaded instance. */
    progress(&L, "warm-up", 0, L.n_inst);
    L.warm = true;
    for (int i = 0; i < L.n_inst && !L.failed; i++) {
        if (pthread_create(&L.inst[i].thread, NULL, worker, &L.inst[i]) != 0) {
            st = ntp__error(ctx, NTP_STATUS_INTERNAL, "cannot start instance %d's thread", i);
            goto done;
        }
        pthread_join(L.inst[i].thread, NULL);
        progress(&L, "warm-up", i + 1, L.n_inst);
    }
    L.warm = false;
    if (L.failed) {
        st = ntp__error(ctx, L.err ? L.err : NTP_STATUS_INTERNAL, "%s", L.errmsg);
        goto done;
    }
    lg_instance *i0 = &L.inst[0];
    double one_ms = i0->warm_ms[0];
    for (int k = 1; k < i0->warm_runs; k++)
        if (i0->warm_ms[k] < one_ms)
            one_ms = i0->warm_ms[k];
    double svc1 = ntp__median_inplace(i0->warm_ms, i0->warm_runs);
    double svcB =
        ntp__median_inplace(i0->warm_ms + (size_t)(L.B - 1) * (size_t)i0->warm_runs, i0->warm_runs);
    if (o.scenario == NTP_LOADGEN_SERVER && o.latency_bound_ms < one_ms) {
        st = ntp__opt_error(
            ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_loadgen_opts.latency_bound_ms",
            "%g ms is below one query's latency: "
            "%.3f ms unloaded (the fastest of %d runs at batch 1), so no QPS can meet "
            "it",
            o.latency_bound_ms, one_ms, i0->warm_runs);
        goto done;
    }
    /* Samples per second the instances can serve at full batches. */
    double capacity = svcB > 0 ? (double)L.n_inst * L.B / (svcB / 1e3) : 1e6;

    if (o.scenario == NTP_LOADGEN_SERVER && o.find_max_qps) {
        /* Bisection between nothing and a little above the capacity: the
         * largest QPS whose run is valid (p99 within the bound and enough
         * queries for it). */
        double lo = 0, hi = capacity * 1.1;
        int n_pts = 0;
        for (int it = 0; it < 8 && !stopped(&L); it++) {
            double qps = it == 0 ? capacity * 0.5 : (lo + hi) / 2;
            int64_t n = 0; /* the schedule's */
            progress(&L, "search", it, 8);
            ntp_loadgen_result *t = NULL;
            if ((st = serve(ctx, &L, qps, n, &t)))
                goto done;
            bool ok = t->bound_met && t->early_stopping_met && !t->interrupted;
            ntp_loadgen_point pt = {.qps = qps,
                                    .p99_ms = t->latency_ms.p99,
                                    .mean_ms = t->latency_ms.mean,
                                    .valid = ok,
                                    .p50_ms = t->latency_ms.p50};
            /* The points travel with the result kept. */
            ntp_loadgen_point pts[NTP_LOADGEN_MAX_POINTS];
            int np = best ? best->n_points : 0;
            if (best)
                memcpy(pts, best->points, sizeof pts);
            if (np < NTP_LOADGEN_MAX_POINTS)
                pts[np++] = pt;
            n_pts = np;
            if (ok)
                lo = qps;
            else
                hi = qps;
            if (ok || !best) {
                ntp_loadgen_result_free(best);
                best = t;
            } else {
                ntp_loadgen_result_free(t);
            }
            memcpy(best->points, pts, sizeof pts);
            best->n_points = n_pts;
            if (best->interrupted)
                break;
        }
        best->searched = true;
        best->max_qps = lo;
        r = best;
        best = NULL;
    } else {
        int64_t n = 0;
        if (o.scenario == NTP_LOADGEN_OFFLINE) {
            /* LoadGen's offline query: enough samples for the duration at
             * the rate expected from the warm-up, at least min_queries. */
            double want_n = ceil(o.duration_s * capacity);
            n = want_n > 1e9 ? (int64_t)1e9 : (int64_t)want_n;
            if (n < o.min_queries)
                n = o.min_queries;
        }
        progress(&L, "run", 0, n);
        if ((st = serve(ctx, &L, o.qps, n, &r)))
            goto done;
    }

    r->topology = ntp__strdup(ntp_graph_name(g[0]));
    r->source = ntp__strdup(ntp_graph_source(g[0]));
    r->backend = ntp__strdup(be->name);
    r->scenario = o.scenario;
    r->instances = o.instances;
    r->threads_per_instance = o.threads_per_instance;
    r->max_batch = o.max_batch;
    r->samples_per_query = o.scenario == NTP_LOADGEN_MULTI_STREAM ? o.samples_per_query : 1;
    r->batch_timeout_us = o.batch_timeout_us;
    r->pinned = pin;
    r->seed = o.seed;
    r->duration_s = o.duration_s;
    r->min_queries = o.min_queries;
    r->latency_bound_ms = o.scenario == NTP_LOADGEN_SERVER ? o.latency_bound_ms : 0;
    r->service_ms[0] = svc1;
    r->service_ms[1] = svcB;
    r->prepare_ms = prepare_ms;
    r->load_average = r->contention.load_average;
    ntp_env env;
    memset(&env, 0, sizeof env);
    ntp_env_collect(&env);
    snprintf(r->cpu_model, sizeof r->cpu_model, "%s", env.cpu_model);
    r->cpus = n_cpus;
    if (env.load_average[0] >= 0 && r->load_average <= 0)
        r->load_average = env.load_average[0];
    for (int i = 0; i < n_warn; i++)
        if (warn[i])
            push_warning(r, "%s", warn[i]);
    if (!r->early_stopping_met && r->percentile > 0) {
        if (o.scenario == NTP_LOADGEN_SERVER)
            push_warning(r,
                         "too few queries to claim the p99 within %g ms: %lld of %lld queries "
                         "were over it, and early stopping needs %lld queries in all "
                         "(%lld more, if every one were within the bound)",
                         o.latency_bound_ms, (long long)r->overlatency, (long long)r->queries,
                         (long long)r->early_stopping_needed,
                         (long long)(r->early_stopping_needed - r->queries));
        else
            push_warning(r,
                         "too few queries to claim the p%g latency: %lld queries, early "
                         "stopping needs at least %lld",
                         r->percentile * 100, (long long)r->queries,
                         (long long)r->early_stopping_needed);
    }
    char cw[256];
    if (ntp__contention_warning(&r->contention, cw, sizeof cw))
        push_warning(r, "%s", cw);
    if (r->interrupted)
        push_warning(r, "interrupted: the %lld queries completed so far", (long long)r->queries);
    *out = r;
    r = NULL;
done:
    for (int i = 0; i < n_warn; i++)
        free(warn[i]);
    ntp_loadgen_result_free(best);
    ntp_loadgen_result_free(r);
    free_lg(&L, g);
    return st;
}

void ntp_loadgen_result_free(ntp_loadgen_result *r)
{
    if (!r)
        return;
    free(r->topology);
    free(r->source);
    free(r->backend);
    free(r->batch_hist);
    free(r->depth_t_s);
    free(r->depth);
    free(r->utilisation);
    free(r->q);
    for (int i = 0; i < r->n_warnings; i++)
        free(r->warnings[i]);
    free(r->warnings);
    free(r);
}
