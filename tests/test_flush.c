/* The flush between a calibration's passes (ntp__flush_caches, flush.c):
 * written from every CPU of the process's set, so that a worker thread's
 * cache keeps nothing of the pass before (docs/predict.md#the-flush). What
 * it writes and from how many CPUs; whether the lines leave the caches is
 * timed by bench/bench_flush, not here. */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "measure/measure-impl.h"

enum { BYTES = 1 << 20 };

/* Every NTP__FLUSH_STRIDE-th byte holds the pass's low byte (all writers
 * store the same value), the bytes between keep theirs. */
static void check_written(const unsigned char *buf, int pass)
{
    for (int i = 0; i < BYTES; i++)
        if (i % NTP__FLUSH_STRIDE == 0)
            assert_int_equal(buf[i], pass & 0xff);
        else
            assert_int_equal(buf[i], 0xee);
}

static void test_every_cpu(void **state)
{
    (void)state;
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    int n = CPU_COUNT(&set);
    unsigned char *buf = malloc(BYTES);
    assert_non_null(buf);
    memset(buf, 0xee, BYTES);

    /* One writer pinned to each CPU of the set, the caller's writes
     * besides. */
    int want = n < NTP__FLUSH_MAX_CPUS ? n : NTP__FLUSH_MAX_CPUS;
    assert_int_equal(ntp__flush_caches(buf, BYTES, 0x1a5), want);
    check_written(buf, 0x1a5);

    /* Pinned to one CPU: one writer. */
    int first = -1;
    for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
        if (CPU_ISSET(c, &set))
            first = c;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
    assert_int_equal(ntp__flush_caches(buf, BYTES, 7), 1);
    check_written(buf, 7);
    assert_int_equal(sched_setaffinity(0, sizeof set, &set), 0);

    /* The caller's writes alone: the same bytes. */
    ntp__flush_caches_here(buf, BYTES, 9);
    check_written(buf, 9);

    /* Nothing to write: no writer, no store. */
    assert_int_equal(ntp__flush_caches(NULL, BYTES, 3), 0);
    assert_int_equal(ntp__flush_caches(buf, 0, 3), 0);
    check_written(buf, 9);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
