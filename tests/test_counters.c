/* In-process counters (docs/counters.md): names and sets, page faults of a
 * region touched for the first time, hardware events reported n/a with a
 * reason, multiplexing scale, derived metrics, PAPI with the events this
 * machine offers, marker sums and the verdict of a run. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "measure/counters-impl.h"
#include "ntprof/ntprof.h"

/* Page faults a test may see beyond the pages it touches: under
 * AddressSanitizer every access also reads the shadow memory, one byte per
 * eight, whose pages fault in too. */
#if defined(__SANITIZE_ADDRESS__) /* gcc */
#define NTP_TEST_ASAN 1
#elif defined(__has_feature) /* clang */
#if __has_feature(address_sanitizer)
#define NTP_TEST_ASAN 1
#endif
#endif
#if defined(NTP_TEST_ASAN)
#define SHADOW_PAGES(pages) ((pages) / 8)
#else
#define SHADOW_PAGES(pages) 0
#endif

static ntp_counters *parse_ok(ntp_ctx *ctx, const char *list)
{
    ntp_counters *c = NULL;
    ntp_status st = ntp__counters_parse(ctx, list, &c);
    if (st != NTP_STATUS_OK)
        fail_msg("parse '%s': %s", list, ntp_ctx_errmsg(ctx));
    return c;
}

static int find_event(const ntp_counters *c, const char *name)
{
    for (int e = 0; e < c->n_ev; e++)
        if (strcmp(c->ev[e].name, name) == 0)
            return e;
    return -1;
}

static const ntp_counter_value *find_value(const ntp_counter_value *v, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0)
            return &v[i];
    return NULL;
}

/* Sets expand into their groups; a typo fails with a suggestion. */
static void test_parse_sets_and_names(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_counters *c = parse_ok(ctx, "sw");
    assert_int_equal(c->n_ev, 4);
    assert_int_equal(c->n_grp, 1);
    assert_string_equal(c->grp[0].name, "sw");
    assert_string_equal(c->ev[0].name, "task-clock");
    assert_string_equal(c->ev[0].unit, "ns");
    assert_int_equal(c->ev[1].attr.type, PERF_TYPE_SOFTWARE);
    assert_int_equal(c->ev[1].attr.config, PERF_COUNT_SW_PAGE_FAULTS);
    ntp__counters_free(c);

    /* basic: {cycles, instructions, branches, branch-misses} and
     * {cycles, stalled-cycles-frontend, stalled-cycles-backend}. */
    c = parse_ok(ctx, "basic");
    assert_int_equal(c->n_ev, 7);
    assert_int_equal(c->n_grp, 2);
    assert_int_equal(c->grp[0].n, 4);
    assert_int_equal(c->grp[1].n, 3);
    assert_int_equal(c->ev[find_event(c, "instructions")].attr.config, PERF_COUNT_HW_INSTRUCTIONS);
    int l1 = find_event(c, "stalled-cycles-backend");
    assert_int_equal(c->ev[l1].attr.config, PERF_COUNT_HW_STALLED_CYCLES_BACKEND);
    ntp__counters_free(c);

    c = parse_ok(ctx, "cache, task-clock");
    int m = find_event(c, "L1-dcache-load-misses");
    assert_true(m >= 0);
    assert_int_equal(c->ev[m].attr.type, PERF_TYPE_HW_CACHE);
    assert_int_equal(c->ev[m].attr.config, PERF_COUNT_HW_CACHE_L1D |
                                               (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                                               (PERF_COUNT_HW_CACHE_RESULT_MISS << 16));
    assert_true(find_event(c, "task-clock") >= 0);
    ntp__counters_free(c);

    assert_int_equal(ntp__counters_parse(ctx, "sw,cycels", &c), NTP_STATUS_UNKNOWN_NAME);
    assert_null(c);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "did you mean 'cycles'?"));
    assert_int_equal(ntp__counters_parse(ctx, "sw,,basic", &c), NTP_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "empty name"));
    assert_int_equal(ntp__counters_parse(ctx, "", &c), NTP_STATUS_INVALID_ARGUMENT);
    /* A PMU that does not exist is n/a with the reason, not a failure. */
    c = parse_ok(ctx, "nosuchpmu/event=0x3c/");
    assert_int_equal(c->ev[0].group, -1);
    assert_non_null(strstr(c->ev[0].reason, "no PMU 'nosuchpmu'"));
    ntp__counters_free(c);
    /* A comma inside pmu/.../ does not split the list. */
    c = parse_ok(ctx, "nosuchpmu/event=0x3c,umask=1/,task-clock");
    assert_int_equal(c->n_ev, 2);
    assert_string_equal(c->ev[0].name, "nosuchpmu/event=0x3c,umask=1/");
    ntp__counters_free(c);
    ntp_ctx_free(ctx);
}

/* Page faults of a region touched for the first time: one per 4 KiB page
 * (transparent huge pages off for the region), counted between two reads,
 * and none in an empty interval. */
static void test_page_faults_fresh_memory(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_counters *c = parse_ok(ctx, "sw");
    assert_int_equal(ntp__counters_open(ctx, c), NTP_STATUS_OK);
    assert_true(c->any_open);
    uint64_t *s0 = malloc(c->snap_len * sizeof *s0), *s1 = malloc(c->snap_len * sizeof *s1);
    uint64_t *s2 = malloc(c->snap_len * sizeof *s2);
    ntp_cacc *touch = calloc((size_t)c->n_ev, sizeof *touch);
    ntp_cacc *empty = calloc((size_t)c->n_ev, sizeof *empty);
    assert_non_null(s0);
    assert_non_null(s1);
    assert_non_null(s2);
    const size_t pages = 4096, page = (size_t)sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    madvise(p, pages * page, MADV_NOHUGEPAGE);
    assert_true(ntp__counters_read(c, s0));
    for (size_t i = 0; i < pages; i++)
        p[i * page] = (char)i;
    assert_true(ntp__counters_read(c, s1));
    assert_true(ntp__counters_read(c, s2));
    ntp__counters_add(c, s0, s1, touch);
    ntp__counters_add(c, s1, s2, empty);
    ntp_counter_store *st = ntp__store_new();
    ntp_counter_value v[64], e[64];
    int n = ntp__counters_values(c, touch, 1, st, v, 64);
    int ne = ntp__counters_values(c, empty, 1, st, e, 64);
    const ntp_counter_value *pf = find_value(v, n, "page-faults");
    const ntp_counter_value *tc = find_value(v, n, "task-clock");
    assert_non_null(pf);
    assert_true(pf->available);
    assert_false(pf->scaled);
    /* Exactly the pages touched, give or take faults of the counting code
     * itself (its buffers are already resident). */
    assert_in_range((uint64_t)pf->value, pages, pages + SHADOW_PAGES(pages) + 16);
    assert_true(tc->available);
    assert_string_equal(tc->unit, "ns");
    assert_true(tc->value > 0);
    const ntp_counter_value *pf0 = find_value(e, ne, "page-faults");
    assert_true(pf0->available);
    assert_in_range((uint64_t)pf0->value, 0, 2);
    munmap(p, pages * page);
    ntp__store_free(st);
    free(s0);
    free(s1);
    free(s2);
    free(touch);
    free(empty);
    ntp__counters_free(c);
    ntp_ctx_free(ctx);
}

/* A multiplexed interval: counted half the time it was enabled, so its
 * value is extrapolated twofold and flagged. */
static void test_multiplex_scale(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_counters *c = parse_ok(ctx, "cycles,instructions");
    /* As if both opened in one group on one thread. */
    c->n_thr = 1;
    c->grp[0].n = 2;
    c->ev[0].group = c->ev[1].group = 0;
    c->ev[0].slot = 0;
    c->ev[1].slot = 1;
    uint64_t a[4] = {1000, 500, 10, 20};     /* enabled, running, cycles, instructions */
    uint64_t b[4] = {3000, 1500, 510, 1520}; /* +2000 enabled, +1000 running */
    ntp_cacc acc[2] = {{0}};
    ntp__counters_add(c, a, b, acc);
    assert_float_equal(acc[0].raw, 500, 0);
    assert_float_equal(acc[0].value, 1000, 1e-9);
    assert_float_equal(acc[1].value, 3000, 1e-9);
    ntp_counter_store *st = ntp__store_new();
    ntp_counter_value v[16];
    int n = ntp__counters_values(c, acc, 2, st, v, 16);
    const ntp_counter_value *cy = find_value(v, n, "cycles");
    assert_true(cy->available);
    assert_true(cy->scaled);
    assert_float_equal(cy->running, 0.5, 1e-12);
    assert_float_equal(cy->value, 500, 1e-9); /* per iteration of 2 */
    const ntp_counter_value *ipc = find_value(v, n, "ipc");
    assert_non_null(ipc);
    assert_true(ipc->derived);
    assert_float_equal(ipc->value, 3.0, 1e-12);
    assert_true(ipc->scaled);
    /* Never running while enabled: n/a, and the ratio says why. */
    ntp_cacc none[2] = {{.enabled = 100}, {.enabled = 100}};
    n = ntp__counters_values(c, none, 1, st, v, 16);
    cy = find_value(v, n, "cycles");
    assert_false(cy->available);
    assert_non_null(strstr(cy->reason, "never scheduled"));
    ipc = find_value(v, n, "ipc");
    assert_false(ipc->available);
    assert_non_null(strstr(ipc->reason, "needs instructions and cycles"));
    ntp__store_free(st);
    c->n_thr = 0;
    ntp__counters_free(c);
    ntp_ctx_free(ctx);
}

static ntp_counter_value val(const char *name, double v)
{
    ntp_counter_value c = {
        .name = name, .source = "test", .unit = "", .available = true, .value = v, .running = 1};
    return c;
}

/* Ratios, MPKI, top-down fractions and the simulated metrics, by hand. */
static void test_derived_metrics(void **state)
{
    (void)state;
    ntp_counter_store *st = ntp__store_new();
    ntp_counter_value v[64] = {
        val("instructions", 2000),
        val("cycles", 1000),
        val("branches", 100),
        val("branch-misses", 10),
        val("cache-references", 40),
        val("cache-misses", 4),
        val("topdown-retiring", 40),
        val("topdown-bad-spec", 10),
        val("topdown-fe-bound", 20),
        val("topdown-be-bound", 30),
        val("topdown-mem-bound", 20),
        val("callgrind:Ir", 1000),
        val("callgrind:Dr", 300),
        val("callgrind:Dw", 100),
        val("callgrind:D1mr", 20),
        val("callgrind:D1mw", 20),
        val("callgrind:DLmr", 1),
        val("callgrind:DLmw", 1),
        val("callgrind:Bc", 100),
        val("callgrind:Bcm", 5),
        val("callgrind:Bi", 10),
        val("callgrind:Bim", 1),
        val("perf-stat:instructions", 900),
        val("perf-stat:cycles", 300),
    };
    int n = ntp__counters_derive(st, v, 24, 64);
    struct {
        const char *name;
        double want;
    } want[] = {
        {"ipc", 2.0},
        {"branch_miss_ratio", 0.1},
        {"branch_mpki", 5.0},
        {"cache_miss_ratio", 0.1},
        {"cache_mpki", 2.0},
        {"frontend_bound", 0.2},
        {"bad_speculation", 0.1},
        {"backend_bound", 0.3},
        {"retiring", 0.4},
        {"backend_memory", 0.2},
        {"backend_core", 0.1},
        {"callgrind:d1_miss_ratio", 0.1},
        {"callgrind:ll_miss_ratio", 0.005},
        {"callgrind:d1_mpki", 40},
        {"callgrind:ll_mpki", 2},
        {"callgrind:branch_mispredict_ratio", 6.0 / 110},
        {"callgrind:branch_mpki", 6},
        {"perf-stat:ipc", 3.0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const ntp_counter_value *m = find_value(v, n, want[i].name);
        if (!m)
            fail_msg("no metric %s", want[i].name);
        assert_true(m->derived);
        assert_true(m->available);
        assert_float_equal(m->value, want[i].want, 1e-12);
    }
    /* Metrics of events nobody asked for are not invented. */
    assert_null(find_value(v, n, "llc_load_miss_ratio"));
    ntp__store_free(st);
}

/* Hardware events on a machine without a PMU: n/a with the reason; on one
 * with a PMU they count. Either way the run goes on. */
static void test_hardware_events_na_or_counted(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_counters *c = parse_ok(ctx, "cycles,instructions,task-clock");
    assert_int_equal(ntp__counters_open(ctx, c), NTP_STATUS_OK);
    int cy = find_event(c, "cycles"), tc = find_event(c, "task-clock");
    assert_true(c->ev[tc].group >= 0);
    if (!ntp__have_cpu_pmu()) {
        assert_int_equal(c->ev[cy].group, -1);
        assert_non_null(strstr(c->ev[cy].reason, "no hardware PMU"));
        assert_non_null(strstr(c->ev[cy].reason, "perf_event_open"));
    } else {
        assert_true(c->ev[cy].group >= 0 || c->ev[cy].reason[0]);
    }
    ntp__counters_free(c);
    ntp_ctx_free(ctx);
}

static ntp_graph *load_mem(ntp_ctx *ctx, const char *xml)
{
    ntp_graph *g = NULL;
    if (ntp_graph_load_xml_memory(ctx, xml, strlen(xml), "test.xml", NULL, &g) != NTP_STATUS_OK)
        fail_msg("load: %s", ntp_ctx_errmsg(ctx));
    return g;
}

static void quick(ntp_run_opts *o)
{
    ntp_run_opts_default(o);
    o->backend = "ref";
    o->warmup = 1;
    o->iterations = 3;
    o->min_time_s = 0;
}

/* A wide fc at batch 1 reads each weight once (0.5 FLOP/B); a conv reuses
 * each weight at every pixel (hundreds of FLOP/B). */
static const char two_kinds[] = "<topology name='two' precision='f32'>"
                                "<input name='x' shape='1,16,32,32' dtype='f32'/>"
                                "<conv name='conv' filters='32' kernel='3' pad='same'/>"
                                "<flatten name='flat'/>"
                                "<fc name='fc' units='256'/>"
                                "<marker name='all' from='conv' to='fc'/>"
                                "</topology>";

/* A run with sw and basic counters: every row has task-clock; hardware
 * events are n/a where there is no PMU; a segment's counts are the sums of
 * its rows'; verdicts come from intensity and say so. */
static void test_run_counters_and_verdict(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load_mem(ctx, two_kinds);
    ntp_run_opts o;
    quick(&o);
    o.counters = "sw,basic";
    o.counter_iterations = 4;
    ntp_run_result *r = NULL;
    if (ntp_run(ctx, g, &o, &r) != NTP_STATUS_OK)
        fail_msg("run: %s", ntp_ctx_errmsg(ctx));
    assert_int_equal(r->counter_iterations, 4);
    assert_string_equal(r->counters, "sw,basic");
    assert_true(r->counter_threads >= 1);
    assert_true(r->n_counter_notes >= 1);
    double sum_tc = 0, sum_pf = 0;
    int conv = -1, fc = -1;
    bool flat_na = false;
    for (int i = 0; i < r->n_layers; i++) {
        const ntp_layer_result *L = &r->layers[i];
        const ntp_counter_value *tc = find_value(L->counters, L->n_counters, "task-clock");
        const ntp_counter_value *pf = find_value(L->counters, L->n_counters, "page-faults");
        const ntp_counter_value *cy = find_value(L->counters, L->n_counters, "cycles");
        assert_non_null(tc);
        assert_string_equal(tc->source, "perf_event");
        if (!strcmp(L->name, "flat") && !tc->available) {
            /* A flatten is a view: its few ns are below what reading the
             * counters costs, and it says so rather than count the reads. */
            assert_non_null(strstr(tc->reason, "below the counting overhead of "));
            flat_na = true;
        } else {
            assert_true(tc->available);
            assert_true(tc->value > 0);
        }
        assert_non_null(cy);
        if (!ntp__have_cpu_pmu()) {
            assert_false(cy->available);
            assert_non_null(strstr(cy->reason, "no hardware PMU"));
            const ntp_counter_value *ipc = find_value(L->counters, L->n_counters, "ipc");
            assert_non_null(ipc);
            assert_false(ipc->available);
        }
        sum_tc += tc->value;
        sum_pf += pf->value;
        assert_non_null(L->bound);
        assert_non_null(L->bound_evidence);
        if (!strcmp(L->name, "conv"))
            conv = i;
        if (!strcmp(L->name, "fc"))
            fc = i;
    }
    assert_true(conv >= 0 && fc >= 0);
    assert_string_equal(r->layers[fc].bound, "memory");
    assert_non_null(strstr(r->layers[fc].bound_evidence, "FLOP/B <"));
    assert_string_equal(r->layers[conv].bound, "compute");
    assert_non_null(strstr(r->layers[conv].bound_evidence, "FLOP/B >="));
    assert_int_equal(r->n_markers, 1);
    const ntp_marker_result *M = &r->markers[0];
    const ntp_counter_value *mtc = find_value(M->counters, M->n_counters, "task-clock");
    const ntp_counter_value *mpf = find_value(M->counters, M->n_counters, "page-faults");
    assert_non_null(mtc);
    /* The marker adds every row's count, including a row too small to be
     * shown on its own (n/a below the counting overhead): at most a few µs
     * of task-clock above the shown rows' sum, never below it. */
    if (flat_na) {
        assert_true(mtc->value >= sum_tc * (1 - 1e-9));
        assert_true(mtc->value <= sum_tc * 1.02);
    } else {
        assert_float_equal(mtc->value, sum_tc, 1e-6 * sum_tc);
    }
    assert_float_equal(mpf->value, sum_pf, 1e-9);
    assert_non_null(M->bound);
    ntp_run_result_free(r);

    /* With measured ceilings the ridge is the machine's own: at 100 GFLOP/s
     * over 1000 GB/s (0.1 FLOP/B) the fc's 0.5 FLOP/B is above it. */
    ntp_ceilings ceil;
    memset(&ceil, 0, sizeof ceil);
    ceil.n_peaks = 1;
    snprintf(ceil.peaks[0].precision, sizeof ceil.peaks[0].precision, "f32");
    ceil.peaks[0].gflops = 100;
    ceil.n_levels = 1;
    snprintf(ceil.levels[0].level, sizeof ceil.levels[0].level, "DRAM");
    ceil.levels[0].gbps = 1000;
    o.ceilings = &ceil;
    o.counters = "sw";
    if (ntp_run(ctx, g, &o, &r) != NTP_STATUS_OK)
        fail_msg("run: %s", ntp_ctx_errmsg(ctx));
    assert_string_equal(r->layers[fc].bound, "compute");
    assert_non_null(strstr(r->layers[fc].bound_evidence,
                           ">= 0.1 FLOP/B (measured ridge: 100 GFLOP/s / 1000 GB/s)"));
    ntp_run_result_free(r);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* Without counters or tools nothing is added. */
static void test_run_without_counters(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load_mem(ctx, two_kinds);
    ntp_run_opts o;
    quick(&o);
    ntp_run_result *r = NULL;
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_OK);
    assert_false(ntp__run_counted(r));
    for (int i = 0; i < r->n_layers; i++) {
        assert_int_equal(r->layers[i].n_counters, 0);
        assert_null(r->layers[i].bound);
    }
    ntp_run_result_free(r);
    /* A bad list fails the run before anything is counted. */
    o.counters = "sw,cycels";
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_UNKNOWN_NAME);
    assert_null(r);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "did you mean 'cycles'?"));
    o.counters = NULL;
    o.tool = "perf-stats";
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_UNKNOWN_NAME);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "did you mean 'perf-stat'?"));
    o.tool = "callgrind:Ir";
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "callgrind takes no events"));
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* libpfm4 names: perf's software events through libpfm4 count; a name
 * libpfm4 does not know fails. Built without libpfm4 (NTP_WITH_PFM=OFF or
 * libpfm4-dev absent), such names are n/a and say why. */
static void test_pfm_names(void **state)
{
    (void)state;
    char info[512];
    ntp_ctx *ctx = ntp_ctx_init();
    if (!ntp__pfm_describe(info, sizeof info)) {
        assert_non_null(strstr(info, "built without libpfm4"));
        ntp_counters *c = parse_ok(ctx, "perf::PAGE-FAULTS");
        assert_int_equal(c->ev[0].group, -1);
        assert_non_null(strstr(c->ev[0].reason, "built without libpfm4"));
        ntp__counters_free(c);
        ntp_ctx_free(ctx);
        return;
    }
    ntp_counters *c = parse_ok(ctx, "perf::PAGE-FAULTS,perf::TASK-CLOCK");
    assert_int_equal(c->ev[0].attr.type, PERF_TYPE_SOFTWARE);
    assert_int_equal(c->ev[0].attr.config, PERF_COUNT_SW_PAGE_FAULTS);
    assert_string_equal(c->ev[1].unit, "ns");
    assert_int_equal(ntp__counters_open(ctx, c), NTP_STATUS_OK);
    assert_true(c->ev[0].group >= 0);
    ntp__counters_free(c);
    c = NULL;
    assert_int_equal(ntp__counters_parse(ctx, "perf::NO_SUCH_EVENT_XYZ", &c),
                     NTP_STATUS_UNKNOWN_NAME);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "libpfm4"));
    ntp_ctx_free(ctx);
}

/* A sysfs event of a PMU that is not the CPU's (the msr PMU's time-stamp
 * counter) is encoded from /sys and counts. */
static void test_sysfs_msr_tsc(void **state)
{
    (void)state;
    if (!ntp__sysfs_has_event("msr", "tsc"))
        skip();
    struct perf_event_attr a;
    char unit[16], reason[NTP_CREASON];
    double scale;
    assert_int_equal(
        ntp__sysfs_encode("msr/tsc/", &a, unit, sizeof unit, &scale, reason, sizeof reason),
        NTP_STATUS_OK);
    FILE *f = fopen("/sys/bus/event_source/devices/msr/type", "r");
    unsigned type = 0;
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%u", &type), 1);
    fclose(f);
    assert_int_equal(a.type, type);
    assert_int_equal(a.config, 0); /* tsc is event=0x00 */
    assert_int_equal(
        ntp__sysfs_encode("msr/nosuch/", &a, unit, sizeof unit, &scale, reason, sizeof reason),
        NTP_STATUS_UNKNOWN_NAME);
    assert_non_null(strstr(reason, "names no event 'nosuch'"));
}

/* PAPI with the events this machine offers: perf's software events count,
 * a preset the kernel cannot count is n/a with PAPI's own message. Built
 * without PAPI, --tool papi fails and says why. */
static void test_papi(void **state)
{
    (void)state;
    char info[512];
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_papi *p = NULL;
    if (!ntp__papi_describe(info, sizeof info)) {
        assert_non_null(strstr(info, "built without PAPI"));
        assert_int_equal(ntp__papi_open(ctx, "perf::TASK-CLOCK", &p), NTP_STATUS_UNSUPPORTED);
        assert_non_null(strstr(ntp_ctx_errmsg(ctx), "built without PAPI"));
        ntp_ctx_free(ctx);
        return;
    }
    if (ntp__papi_open(ctx, "perf::PAGE-FAULTS,perf::TASK-CLOCK,PAPI_TOT_INS", &p) != NTP_STATUS_OK)
        fail_msg("papi: %s", ntp_ctx_errmsg(ctx));
    assert_int_equal(ntp__papi_count(p), 3);
    bool avail;
    const char *reason;
    char off[256];
    if (ntp__papi_component_disabled("perf_event", off, sizeof off)) {
        /* PAPI without its CPU component (libpfm4 knows no PMU on this CPU:
         * Debian 12's PAPI on AMD family 1Ah): even the software events are
         * n/a, each saying why, and a run reports them n/a rather than 0. */
        assert_non_null(strstr(info, "perf_event disabled: "));
        for (int i = 0; i < 3; i++) {
            ntp__papi_name(p, i, &avail, &reason);
            assert_false(avail);
            assert_non_null(strstr(reason, "perf_event component is disabled"));
            assert_non_null(strstr(reason, off));
        }
        ntp__papi_close(p);
        ntp_graph *g = load_mem(ctx, two_kinds);
        ntp_run_opts o;
        quick(&o);
        o.tool = "papi:perf::TASK-CLOCK";
        ntp_run_result *r = NULL;
        if (ntp_run(ctx, g, &o, &r) != NTP_STATUS_OK)
            fail_msg("run: %s", ntp_ctx_errmsg(ctx));
        for (int i = 0; i < r->n_layers; i++) {
            const ntp_counter_value *tc =
                find_value(r->layers[i].counters, r->layers[i].n_counters, "papi:perf::TASK-CLOCK");
            assert_non_null(tc);
            assert_false(tc->available);
            assert_non_null(strstr(tc->reason, "perf_event component is disabled"));
        }
        ntp_run_result_free(r);
        ntp_graph_free(g);
        ntp_ctx_free(ctx);
        return;
    }
    assert_string_equal(ntp__papi_name(p, 0, &avail, &reason), "perf::PAGE-FAULTS");
    assert_true(avail);
    ntp__papi_name(p, 1, &avail, &reason);
    assert_true(avail);
    ntp__papi_name(p, 2, &avail, &reason);
    if (!ntp__have_cpu_pmu()) {
        assert_false(avail);
        assert_non_null(strstr(reason, "PAPI"));
    }
    long long a[3], b[3];
    const size_t pages = 1024, page = (size_t)sysconf(_SC_PAGESIZE);
    char *m = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    madvise(m, pages * page, MADV_NOHUGEPAGE);
    assert_true(ntp__papi_read(p, a));
    for (size_t i = 0; i < pages; i++)
        m[i * page] = 1;
    assert_true(ntp__papi_read(p, b));
    assert_in_range((uint64_t)(b[0] - a[0]), pages, pages + SHADOW_PAGES(pages) + 16);
    assert_true(b[1] > a[1]);
    munmap(m, pages * page);
    ntp__papi_close(p);

    /* The same through a run: --tool papi:EVENTS on every row. */
    ntp_graph *g = load_mem(ctx, two_kinds);
    ntp_run_opts o;
    quick(&o);
    o.tool = "papi:perf::TASK-CLOCK,PAPI_TOT_CYC";
    ntp_run_result *r = NULL;
    if (ntp_run(ctx, g, &o, &r) != NTP_STATUS_OK)
        fail_msg("run: %s", ntp_ctx_errmsg(ctx));
    for (int i = 0; i < r->n_layers; i++) {
        const ntp_counter_value *tc =
            find_value(r->layers[i].counters, r->layers[i].n_counters, "papi:perf::TASK-CLOCK");
        assert_non_null(tc);
        assert_true(tc->available);
        assert_string_equal(tc->source, "papi");
        assert_true(tc->value > 0);
    }
    /* The marker holds the sum of its rows. */
    const ntp_counter_value *mt =
        find_value(r->markers[0].counters, r->markers[0].n_counters, "papi:perf::TASK-CLOCK");
    assert_non_null(mt);
    double sum = 0;
    for (int i = 0; i < r->n_layers; i++)
        sum += find_value(r->layers[i].counters, r->layers[i].n_counters, "papi:perf::TASK-CLOCK")
                   ->value;
    assert_float_equal(mt->value, sum, 1e-6 * sum);
    ntp_run_result_free(r);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* The tool child's switch: nothing without NTP_TOOL; with it, the timing
 * passes shrink and the child neither counts nor launches on its own. */
static void test_tool_child_options(void **state)
{
    (void)state;
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    o.counters = "sw";
    unsetenv("NTP_TOOL");
    assert_false(ntp_run_tool_child(&o));
    assert_int_equal(o.iterations, 10);
    setenv("NTP_TOOL", "perf-stat", 1);
    setenv("NTP_TOOL_BACKEND", "ref", 1);
    assert_true(ntp_run_tool_child(&o));
    assert_string_equal(o.backend, "ref");
    unsetenv("NTP_TOOL");
    unsetenv("NTP_TOOL_BACKEND");
    assert_int_equal(o.iterations, 1);
    assert_int_equal(o.warmup, 0);
    assert_float_equal(o.min_time_s, 0, 0);
    assert_null(o.counters);
    assert_null(o.tool);
}

/* What `ntprof counters` lists: the software set works everywhere. */
static void test_probe(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_counter_list *l = NULL;
    assert_int_equal(ntp_counters_probe(ctx, &l), NTP_STATUS_OK);
    bool sw = false, tc = false, cycles = false;
    for (int i = 0; i < ntp_counter_list_count(l); i++) {
        const ntp_counter_info *it = ntp_counter_list_item(l, i);
        if (!strcmp(it->name, "sw")) {
            sw = true;
            assert_true(it->available);
            assert_string_equal(it->kind, "set");
        }
        if (!strcmp(it->name, "task-clock")) {
            tc = true;
            assert_true(it->available);
        }
        if (!strcmp(it->name, "cycles")) {
            cycles = true;
            if (!ntp__have_cpu_pmu()) {
                assert_false(it->available);
                assert_non_null(strstr(it->reason, "no hardware PMU"));
            }
        }
    }
    assert_true(sw && tc && cycles);
    assert_null(ntp_counter_list_item(l, -1));
    assert_null(ntp_counter_list_item(l, ntp_counter_list_count(l)));
    ntp_counter_list_free(l);
    ntp_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_sets_and_names),
        cmocka_unit_test(test_page_faults_fresh_memory),
        cmocka_unit_test(test_multiplex_scale),
        cmocka_unit_test(test_derived_metrics),
        cmocka_unit_test(test_hardware_events_na_or_counted),
        cmocka_unit_test(test_run_counters_and_verdict),
        cmocka_unit_test(test_run_without_counters),
        cmocka_unit_test(test_pfm_names),
        cmocka_unit_test(test_sysfs_msr_tsc),
        cmocka_unit_test(test_papi),
        cmocka_unit_test(test_tool_child_options),
        cmocka_unit_test(test_probe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
