/* ntp_run's --pin and --threads against what the kernel says afterwards:
 * every thread of the process pinned, also one that existed before the run
 * (OpenBLAS starts its pool when the library loads), and more threads than
 * CPUs warned about. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ntprof/ntprof.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool stop;

static void *idle_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    while (!stop)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static ntp_run_result *run_tiny(ntp_ctx *ctx, const char *pin, int threads)
{
    ntp_graph *g = NULL;
    assert_int_equal(ntp_graph_load(ctx, NTP_SOURCE_DIR "/models/tiny-mlp.xml", NULL, &g),
                     NTP_STATUS_OK);
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    o.backend = "ref";
    o.iterations = 2;
    o.warmup = 0;
    o.min_time_s = 0;
    o.pin = pin;
    o.threads = threads;
    ntp_run_result *r = NULL;
    ntp_status st = ntp_run(ctx, g, &o, &r);
    if (st != NTP_STATUS_OK)
        fail_msg("ntp_run: %s", ntp_ctx_errmsg(ctx));
    ntp_graph_free(g);
    return r;
}

static void test_pin_covers_existing_threads(void **state)
{
    (void)state;
    cpu_set_t allowed;
    assert_int_equal(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    if (CPU_COUNT(&allowed) < 2)
        skip(); /* one CPU: every thread is pinned to it already */
    int cpu = -1;
    for (int c = CPU_SETSIZE - 1; c >= 0 && cpu < 0; c--)
        if (CPU_ISSET(c, &allowed))
            cpu = c;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, idle_thread, NULL), 0);
    char pin[16];
    snprintf(pin, sizeof pin, "%d", cpu);
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_run_result *r = run_tiny(ctx, pin, 0);
    cpu_set_t other, self;
    assert_int_equal(pthread_getaffinity_np(t, sizeof other, &other), 0);
    assert_int_equal(sched_getaffinity(0, sizeof self, &self), 0);
    pthread_mutex_lock(&mu);
    stop = true;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL);
    ntp_run_result_free(r);
    ntp_ctx_free(ctx);
    /* The rest of this program gets its CPUs back before any check fails. */
    sched_setaffinity(0, sizeof allowed, &allowed);
    /* The thread started before the run is on the pinned CPU alone, as is
     * the one that ran it. */
    assert_int_equal(CPU_COUNT(&other), 1);
    assert_true(CPU_ISSET(cpu, &other));
    assert_int_equal(CPU_COUNT(&self), 1);
    assert_true(CPU_ISSET(cpu, &self));
}

static bool has_warning(const ntp_run_result *r, const char *text)
{
    for (int i = 0; i < ntp_run_result_warning_count(r); i++)
        if (strstr(ntp_run_result_warning(r, i), text))
            return true;
    return false;
}

static void test_threads_oversubscribed_warned(void **state)
{
    (void)state;
    cpu_set_t allowed;
    assert_int_equal(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    int ncpu = CPU_COUNT(&allowed);
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_run_result *r = run_tiny(ctx, NULL, 4 * ncpu);
    char want[64];
    snprintf(want, sizeof want, "%d threads on %d CPU", 4 * ncpu, ncpu);
    if (!has_warning(r, want) || !has_warning(r, "oversubscribed"))
        fail_msg("no warning '%s ... oversubscribed' among %d warnings", want,
                 ntp_run_result_warning_count(r));
    ntp_run_result_free(r);
    /* As many threads as CPUs, and 0 (all cores), are not warned about. */
    r = run_tiny(ctx, NULL, ncpu);
    assert_false(has_warning(r, "oversubscribed"));
    ntp_run_result_free(r);
    r = run_tiny(ctx, NULL, 0);
    assert_false(has_warning(r, "oversubscribed"));
    ntp_run_result_free(r);
    ntp_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pin_covers_existing_threads),
        cmocka_unit_test(test_threads_oversubscribed_warned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
