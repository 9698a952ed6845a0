/* The peak resident set over a measured stretch (src/measure/rss.c,
 * docs/run.md#memory), against pages this test touches itself: memory
 * touched inside an excluded interval stays out of the peak, memory
 * touched outside it is in it, and a run's peak is its own, not an
 * earlier allocation's in the same process. Skipped (77) where /proc
 * cannot read or set back the high-water mark. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "measure/measure-impl.h"
#include "ntprof/ntprof.h"

#define MIB ((int64_t)1 << 20)

/* Map and touch `bytes` (one write a page), then unmap: the resident set
 * grows by them and falls back, the high-water mark keeps them. */
static void touch(int64_t bytes)
{
    unsigned char *p =
        mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    for (int64_t i = 0; i < bytes; i += 4096)
        p[i] = (unsigned char)i | 1;
    munmap(p, (size_t)bytes);
}

static void test_status(void **state)
{
    (void)state;
    int64_t rss = ntp__rss_status_bytes("VmRSS"), hwm = ntp__rss_status_bytes("VmHWM");
    assert_true(rss > 0 && hwm >= rss);
    assert_int_equal(ntp__rss_status_bytes("VmNoSuchField"), -1);
    /* A prefix of a field's name is not the field. */
    assert_int_equal(ntp__rss_status_bytes("VmHW"), -1);
    /* Set back, the mark falls to the resident set (64 MiB touched and
     * given back before). */
    touch(64 * MIB);
    assert_true(ntp__rss_status_bytes("VmHWM") >= ntp__rss_status_bytes("VmRSS") + 60 * MIB);
    assert_true(ntp__rss_hwm_reset());
    assert_true(ntp__rss_status_bytes("VmHWM") < ntp__rss_status_bytes("VmRSS") + 8 * MIB);
}

static void test_meter(void **state)
{
    (void)state;
    /* Touched while measured: in the peak. */
    ntp__rss_meter m;
    ntp__rss_meter_start(&m);
    assert_true(m.ok && m.base > 0);
    touch(64 * MIB);
    int64_t peak = ntp__rss_meter_peak(&m);
    assert_true(peak >= m.base + 60 * MIB);

    /* Touched in an excluded interval: out of it, whether the peak
     * before the interval or after it is the higher. */
    ntp__rss_meter_start(&m);
    ntp__rss_meter_exclude_begin(&m);
    touch(64 * MIB);
    ntp__rss_meter_exclude_end(&m);
    peak = ntp__rss_meter_peak(&m);
    assert_true(peak > 0 && peak < m.base + 16 * MIB);

    ntp__rss_meter_start(&m);
    touch(32 * MIB);
    ntp__rss_meter_exclude_begin(&m);
    touch(96 * MIB);
    ntp__rss_meter_exclude_end(&m);
    touch(16 * MIB);
    peak = ntp__rss_meter_peak(&m);
    assert_true(peak >= m.base + 30 * MIB && peak < m.base + 48 * MIB);

    /* A meter that could not set the mark back says so (0), never a
     * figure: as where /proc/self/clear_refs is refused. */
    m.ok = false;
    assert_int_equal(ntp__rss_meter_peak(&m), 0);
}

static const char topology[] = "<topology name=\"rss\" batch=\"1\">"
                               "<input name=\"x\" shape=\"${batch},256\" dtype=\"f32\"/>"
                               "<fc name=\"fc\" units=\"256\"/></topology>";

/* A run's peak is its own: 256 MiB touched and given back before it do not
 * reach its figure, as they did when the process's mark was read. */
static void test_run_peak(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = NULL;
    assert_int_equal(ntp_graph_load_xml_memory(ctx, topology, strlen(topology), "rss", NULL, &g),
                     NTP_STATUS_OK);
    touch(256 * MIB);
    int64_t rss = ntp__rss_status_bytes("VmRSS");
    assert_true(ntp__rss_status_bytes("VmHWM") >= rss + 250 * MIB);
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    o.backend = "ref";
    o.warmup = 1;
    o.iterations = 3;
    o.min_time_s = 0;
    o.accuracy = false;
    o.bandwidth_probe = NTP_BANDWIDTH_PROBE_OFF;
    ntp_run_result *r = NULL;
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_OK);
    int64_t peak = ntp_run_result_memory(r)->peak_rss_bytes;
    printf("resident %.1f MiB before the run, its peak %.1f MiB\n", (double)rss / MIB,
           (double)peak / MIB);
    /* A 256x256 fc holds 256 kB of weights: a few MiB of headroom for
     * the run's own allocations, far from the 256 MiB given back. */
    assert_true(peak > rss / 2 && peak < rss + 32 * MIB);
    ntp_run_result_free(r);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

int main(void)
{
    /* Where the mark cannot be set back there is nothing to show. */
    if (ntp__rss_status_bytes("VmHWM") < 0 || !ntp__rss_hwm_reset()) {
        printf("SKIP: /proc/self cannot read or set back the high-water mark\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status),
        cmocka_unit_test(test_meter),
        cmocka_unit_test(test_run_peak),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
