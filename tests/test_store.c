/* The history database: a run stored and read back field by field, the
 * listing and its filters, schema migration from an older version and
 * refusal of foreign or newer databases, the ceilings cache, the default
 * path, two processes writing 200 runs each at once (all 400 present, each
 * whole), and processes SIGKILLed while writing (the database passes
 * PRAGMA integrity_check and holds only whole runs). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "ntprof/ntprof.h"
#include "support/tmpdir.h"
#include "measure/machine-impl.h"
#include "store/store-impl.h"

/* A run result with n layers, built by hand with values derived from
 * `tag`, so each stored run is recognisable. */
typedef struct sample {
    ntp_run_result r;
    ntp_layer_result layers[64];
    ntp_marker_result markers[2];
    const char *pnames[2], *pvalues[2];
    char *warnings[2];
    char names[64][32];
} sample;

static ntp_stats stats(double k, size_t n)
{
    ntp_stats s = {.n = n,
                   .min = 1.25 * k,
                   .max = 2.5 * k,
                   .mean = 1.625 * k,
                   .median = 1.5 * k,
                   .p90 = 2.0 * k,
                   .p99 = 2.25 * k,
                   .stddev = 0.375 * k,
                   .ci95_lo = 1.375 * k,
                   .ci95_hi = 1.875 * k,
                   .cv = 0.25};
    return s;
}

static void make_sample(sample *s, int n_layers, int tag, const char *topology, const char *backend)
{
    memset(s, 0, sizeof *s);
    ntp_run_result *r = &s->r;
    r->topology = topology;
    r->source = "models/tiny.xml";
    r->backend = backend;
    r->precision = NTP_DTYPE_F32;
    r->batch = 2;
    r->threads = tag % 4;
    r->seed = (uint64_t)tag;
    r->warmup = 1;
    r->iterations = 7;
    s->pnames[0] = "batch";
    s->pvalues[0] = "2";
    s->pnames[1] = "hidden";
    s->pvalues[1] = "32";
    r->n_params = 2;
    r->param_names = s->pnames;
    r->param_values = s->pvalues;
    for (int i = 0; i < n_layers; i++) {
        snprintf(s->names[i], sizeof s->names[i], "layer%d", i);
        s->layers[i] = (ntp_layer_result){.name = s->names[i],
                                          .type = "fc",
                                          .kind = "layer",
                                          .backend = backend,
                                          .output_shape = {2, {2, 32}},
                                          .time_ms = stats(0.1 * (i + 1), 7),
                                          .share = 1.0 / n_layers,
                                          .flops = 1000 * (i + 1),
                                          .bytes = 400,
                                          .gflops = 1.0,
                                          .gbps = 0.5,
                                          .intensity = 2.5 * (i + 1),
                                          .prepare_ms = 0.01,
                                          .workspace_bytes = 64};
    }
    r->n_layers = n_layers;
    r->layers = s->layers;
    s->markers[0] = (ntp_marker_result){.name = "body",
                                        .first = 0,
                                        .last = n_layers - 1,
                                        .time_ms = stats(1.0, 7),
                                        .share = 1.0,
                                        .flops = 5000,
                                        .bytes = 4000,
                                        .gflops = 2.0};
    r->n_markers = 1;
    r->markers = s->markers;
    r->end_to_end_ms = stats(tag, 7);
    r->layer_sum_ms = stats(tag * 1.01, 7);
    r->throughput = 2000.0 / (1.5 * tag);
    r->latency_ms = 1.5 * tag;
    r->flops = 12345;
    ntp_env_collect(&r->env);
    s->warnings[0] = (char *)"a warning, with a comma";
    s->warnings[1] = (char *)"another";
    r->n_warnings = 2;
    r->warnings = s->warnings;
}

static void db_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", test_tmpdir, name);
}

/* One integer from an SQL query on a separate raw connection. */
static int64_t sql_int(const char *path, const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return v;
}

static void sql_text(const char *path, const char *sql, char *out, size_t len)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    snprintf(out, len, "%s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    sqlite3_close(db);
}

static void test_roundtrip(void **state)
{
    (void)state;
    char path[512];
    db_path(path, sizeof path, "roundtrip/sub/history.db"); /* folders are created */
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_store *s;
    assert_int_equal(ntp_store_open(ctx, path, NTP_STORE_CREATE, &s), NTP_STATUS_OK);
    static sample smp;
    make_sample(&smp, 5, 3, "tiny", "ref");
    int64_t id = 0;
    assert_int_equal(ntp_store_add_run(ctx, s, &smp.r, &id), NTP_STATUS_OK);
    assert_int_equal(id, 1);
    ntp_run_result *back = NULL;
    assert_int_equal(ntp_store_load_run(ctx, s, id, &back), NTP_STATUS_OK);
    assert_string_equal(back->topology, "tiny");
    assert_string_equal(back->backend, "ref");
    assert_int_equal(back->n_layers, 5);
    assert_string_equal(back->layers[4].name, "layer4");
    assert_float_equal(back->layers[4].time_ms.median, 0.75, 1e-12);
    assert_float_equal(back->layers[4].time_ms.ci95_hi, 0.9375, 1e-12);
    assert_int_equal(back->layers[4].flops, 5000);
    assert_int_equal(back->n_markers, 1);
    assert_int_equal(back->markers[0].last, 4);
    assert_float_equal(back->end_to_end_ms.median, 4.5, 1e-12);
    assert_int_equal(back->n_warnings, 2);
    assert_string_equal(back->warnings[0], "a warning, with a comma");
    assert_int_equal(back->n_params, 2);
    assert_string_equal(back->param_names[1], "hidden");
    assert_string_equal(back->param_values[1], "32");
    assert_string_equal(back->env.cpu_model, smp.r.env.cpu_model);
    ntp_run_result_free(back);
    assert_int_equal(ntp_store_load_run(ctx, s, 99, &back), NTP_STATUS_UNKNOWN_NAME);
    assert_null(back);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "no run 99"));
    ntp_store_close(s);

    /* The tables hold what queries need without the blob. */
    assert_int_equal(sql_int(path, "SELECT count(*) FROM rows WHERE run_id = 1"), 5);
    assert_int_equal(sql_int(path, "SELECT flops FROM rows WHERE run_id = 1 AND idx = 2"), 3000);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM warnings"), 2);
    assert_int_equal(sql_int(path, "SELECT n_layers FROM runs WHERE id = 1"), 5);
    char text[256];
    sql_text(path, "SELECT json_extract(params, '$.hidden') FROM runs", text, sizeof text);
    assert_string_equal(text, "32");
    sql_text(path, "PRAGMA journal_mode", text, sizeof text);
    assert_string_equal(text, "wal");
    assert_int_equal(sql_int(path, "PRAGMA user_version"), NTP_STORE_SCHEMA_VERSION);
    ntp_ctx_free(ctx);
}

static void test_list_filters(void **state)
{
    (void)state;
    char path[512];
    db_path(path, sizeof path, "list.db");
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_store *s;
    assert_int_equal(ntp_store_open(ctx, path, NTP_STORE_CREATE, &s), NTP_STATUS_OK);
    static sample smp;
    const char *topo[] = {"alpha", "beta", "alpha", "alpha", "beta"};
    const char *be[] = {"ref", "ref", "onednn", "ref", "onednn"};
    const char *when[] = {"2024-01-01T00:00:00Z", "2024-06-01T00:00:00Z", "2025-01-01T10:00:00Z",
                          "2025-02-01T00:00:00Z", "2025-03-01T00:00:00Z"};
    for (int i = 0; i < 5; i++) {
        make_sample(&smp, 2, i + 1, topo[i], be[i]);
        snprintf(smp.r.env.timestamp, sizeof smp.r.env.timestamp, "%s", when[i]);
        assert_int_equal(ntp_store_add_run(ctx, s, &smp.r, NULL), NTP_STATUS_OK);
    }
    ntp_history_entry *e;
    int n;
    assert_int_equal(ntp_store_list(ctx, s, NULL, &e, &n), NTP_STATUS_OK);
    assert_int_equal(n, 5);
    assert_int_equal(e[0].id, 5); /* newest first */
    assert_string_equal(e[0].topology, "beta");
    assert_float_equal(e[0].median_ms, 7.5, 1e-12);
    free(e);
    ntp_history_filter f = {.topology = "alpha"};
    assert_int_equal(ntp_store_list(ctx, s, &f, &e, &n), NTP_STATUS_OK);
    assert_int_equal(n, 3);
    assert_int_equal(e[0].id, 4);
    assert_int_equal(e[2].id, 1);
    free(e);
    f = (ntp_history_filter){.topology = "alpha", .backend = "ref"};
    assert_int_equal(ntp_store_list(ctx, s, &f, &e, &n), NTP_STATUS_OK);
    assert_int_equal(n, 2);
    free(e);
    f = (ntp_history_filter){.since = "2025-01-01"};
    assert_int_equal(ntp_store_list(ctx, s, &f, &e, &n), NTP_STATUS_OK);
    assert_int_equal(n, 3);
    assert_int_equal(e[2].id, 3);
    free(e);
    f = (ntp_history_filter){.since = "2025-01-01T10:00:01Z"};
    assert_int_equal(ntp_store_list(ctx, s, &f, &e, &n), NTP_STATUS_OK);
    assert_int_equal(n, 2);
    free(e);
    f = (ntp_history_filter){.limit = 2};
    assert_int_equal(ntp_store_list(ctx, s, &f, &e, &n), NTP_STATUS_OK);
    assert_int_equal(n, 2);
    assert_int_equal(e[1].id, 4);
    free(e);
    f = (ntp_history_filter){.since = "last tuesday"};
    assert_int_equal(ntp_store_list(ctx, s, &f, &e, &n), NTP_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "ntp_history_filter.since expects a date"));
    int64_t count;
    assert_int_equal(ntp_store_count(ctx, s, &count), NTP_STATUS_OK);
    assert_int_equal(count, 5);
    ntp_store_close(s);
    ntp_ctx_free(ctx);
}

static void test_migration(void **state)
{
    (void)state;
    char path[512];
    db_path(path, sizeof path, "old.db");
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_store *s;
    /* A version-1 history (runs, no ceilings cache) with one run in it. */
    assert_int_equal(ntp__store_open_version(ctx, path, 1, &s), NTP_STATUS_OK);
    ntp_store_close(s);
    /* The run as version 1 held it (ntp_store_add_run writes today's
     * columns, which a version-1 table lacks). */
    sqlite3 *v1;
    assert_int_equal(sqlite3_open(path, &v1), SQLITE_OK);
    assert_int_equal(sqlite3_exec(v1,
                                  "INSERT INTO runs (time, topology, precision, n_layers,"
                                  " n_markers, n_warnings, report) VALUES"
                                  " ('2025-03-01T12:34:56Z', 'tiny', 'f32', 0, 0, 0, '{}')",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(v1);
    assert_int_equal(sql_int(path, "PRAGMA user_version"), 1);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'machines'"),
                     0);
    /* Read-only cannot migrate, and says so. */
    assert_int_equal(ntp_store_open(ctx, path, NTP_STORE_READ_ONLY, &s), NTP_STATUS_UNSUPPORTED);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "older history"));
    /* Opening for writing migrates, keeping the run. */
    assert_int_equal(ntp_store_open(ctx, path, NTP_STORE_CREATE, &s), NTP_STATUS_OK);
    ntp_store_close(s);
    assert_int_equal(sql_int(path, "PRAGMA user_version"), NTP_STORE_SCHEMA_VERSION);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'machines'"),
                     1);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM runs"), 1);

    /* A newer history is refused, not damaged. */
    char newer[512];
    db_path(newer, sizeof newer, "newer.db");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(newer, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(ntp_store_open(ctx, newer, NTP_STORE_CREATE, &s), NTP_STATUS_UNSUPPORTED);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "schema version 99 is newer"));
    assert_int_equal(sql_int(newer, "PRAGMA user_version"), 99);

    /* Somebody else's database is left alone. */
    char foreign[512];
    db_path(foreign, sizeof foreign, "foreign.db");
    assert_int_equal(sqlite3_open(foreign, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(ntp_store_open(ctx, foreign, NTP_STORE_CREATE, &s),
                     NTP_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "not an ntprof history"));
    assert_int_equal(sql_int(foreign, "SELECT count(*) FROM sqlite_master"), 1);

    /* A file that is not SQLite at all. */
    char junk[512];
    db_path(junk, sizeof junk, "junk.db");
    FILE *f = fopen(junk, "w");
    assert_non_null(f);
    fputs("this is not a database, just some text that is long enough to have a header\n", f);
    fclose(f);
    assert_int_not_equal(ntp_store_open(ctx, junk, NTP_STORE_CREATE, &s), NTP_STATUS_OK);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), junk));

    /* Read-only never creates. */
    char none[512];
    db_path(none, sizeof none, "none.db");
    assert_int_equal(ntp_store_open(ctx, none, NTP_STORE_READ_ONLY, &s), NTP_STATUS_IO_ERROR);
    assert_int_equal(access(none, F_OK), -1);
    ntp_ctx_free(ctx);
}

static void test_ceilings(void **state)
{
    (void)state;
    char path[512];
    db_path(path, sizeof path, "ceilings.db");
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_store *s;
    assert_int_equal(ntp_store_open(ctx, path, NTP_STORE_CREATE, &s), NTP_STATUS_OK);
    ntp_machine_info m = {.pus = 2};
    snprintf(m.key, sizeof m.key, "Test CPU|2|box");
    snprintf(m.cpu_model, sizeof m.cpu_model, "Test CPU");
    ntp_ceilings c = {.threads = 2, .n_peaks = 2, .n_gemm = 1, .n_levels = 2};
    snprintf(c.machine_key, sizeof c.machine_key, "%s", m.key);
    snprintf(c.measured_at, sizeof c.measured_at, "2025-03-01T00:00:00Z");
    c.peaks[0] = (ntp_peak){"f64", 50.0, "FMA micro-kernel, avx2, 2 threads"};
    c.peaks[1] = (ntp_peak){"f32", 100.0, "FMA micro-kernel, avx2, 2 threads"};
    c.gemm[0] = (ntp_peak){"f32", 80.0, "GEMM on onednn"};
    c.levels[0] = (ntp_bandwidth){"L1", 32768, 400.0};
    c.levels[1] = (ntp_bandwidth){"DRAM", 134217728, 20.0};
    bool found = true;
    ntp_ceilings back;
    assert_int_equal(ntp_store_load_ceilings(ctx, s, m.key, &back, &found), NTP_STATUS_OK);
    assert_false(found);
    assert_int_equal(ntp_store_save_ceilings(ctx, s, &m, &c), NTP_STATUS_OK);
    assert_int_equal(ntp_store_load_ceilings(ctx, s, m.key, &back, &found), NTP_STATUS_OK);
    assert_true(found);
    assert_int_equal(back.n_peaks, 2);
    assert_string_equal(back.peaks[1].precision, "f32");
    assert_float_equal(back.peaks[1].gflops, 100.0, 1e-12);
    assert_string_equal(back.gemm[0].method, "GEMM on onednn");
    assert_int_equal(back.n_levels, 2);
    assert_string_equal(back.levels[1].level, "DRAM");
    assert_int_equal(back.levels[1].working_set_bytes, 134217728);
    assert_float_equal(ntp_ceilings_bandwidth(&back, "DRAM"), 20.0, 1e-12);
    /* Remeasuring replaces the machine's row. */
    c.peaks[1].gflops = 120.0;
    assert_int_equal(ntp_store_save_ceilings(ctx, s, &m, &c), NTP_STATUS_OK);
    assert_int_equal(ntp_store_load_ceilings(ctx, s, m.key, &back, &found), NTP_STATUS_OK);
    assert_float_equal(back.peaks[1].gflops, 120.0, 1e-12);
    ntp_store_close(s);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM machines"), 1);
    /* find_ceilings of a missing file: nothing found, nothing created. */
    char none[512];
    db_path(none, sizeof none, "absent.db");
    assert_int_equal(ntp_store_find_ceilings(ctx, none, &back, &found), NTP_STATUS_OK);
    assert_false(found);
    assert_int_equal(access(none, F_OK), -1);
    ntp_ctx_free(ctx);
}

/* Ceilings under this machine's key (m, described here), measured with
 * 2 threads: an f32 peak (method) and a DRAM level; the caller adds. */
static ntp_ceilings this_machine_ceilings(ntp_ctx *ctx, ntp_machine_info *m, double f32,
                                          const char *method, double dram)
{
    assert_int_equal(ntp_machine_describe(ctx, m), NTP_STATUS_OK);
    ntp_ceilings c = {.threads = 2, .n_peaks = 1, .n_levels = 1};
    snprintf(c.machine_key, sizeof c.machine_key, "%s", m->key);
    snprintf(c.measured_at, sizeof c.measured_at, "2025-03-01T00:00:00Z");
    c.peaks[0] = (ntp_peak){"f32", f32, ""};
    snprintf(c.peaks[0].method, sizeof c.peaks[0].method, "%s", method);
    c.levels[0] = (ntp_bandwidth){"DRAM", 134217728, dram};
    return c;
}

/* ntp_store_find_ceilings of path: the cached ceilings used, or not with
 * one warning that holds `why`. */
static void assert_find_ceilings(ntp_ctx *ctx, const char *path, bool used, const char *why)
{
    ntp_ceilings back;
    bool found = !used;
    int warnings = ntp_ctx_warning_count(ctx);
    assert_int_equal(ntp_store_find_ceilings(ctx, path, &back, &found), NTP_STATUS_OK);
    assert_int_equal(found, used);
    assert_int_equal(ntp_ctx_warning_count(ctx), warnings + !used);
    if (!used)
        assert_non_null(strstr(ntp_ctx_warning(ctx, warnings), why));
}

/* Ceilings cached under this machine's key by another CPU (a key whose
 * model name a VM made generic): read back with other_cpu naming both, not
 * used by find_ceilings (a warning says why); this CPU's own, and a row that
 * kept neither signature nor flags, are used. */
static void test_ceilings_other_cpu(void **state)
{
    (void)state;
    char path[512];
    db_path(path, sizeof path, "other-cpu.db");
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_machine_info m;
    ntp_ceilings c =
        this_machine_ceilings(ctx, &m, 100.0, "FMA micro-kernel, avx2, 2 threads", 20.0);
    static const struct {
        const char *sig, *flags; /* NULL: this CPU's */
        bool used;
    } cases[] = {
        {NULL, NULL, true},
        {"Other vendor family 1 model 2 stepping 3", NULL, false},
        {NULL, "avx512_fp16 amx_tile", false},
        {"", "", true},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ntp_machine_info mk = m;
        if (cases[k].sig)
            snprintf(mk.cpu_signature, sizeof mk.cpu_signature, "%s", cases[k].sig);
        if (cases[k].flags)
            snprintf(mk.cpu_flags, sizeof mk.cpu_flags, "%s", cases[k].flags);
        ntp_store *s;
        assert_int_equal(ntp_store_open(ctx, path, NTP_STORE_CREATE, &s), NTP_STATUS_OK);
        assert_int_equal(ntp_store_save_ceilings(ctx, s, &mk, &c), NTP_STATUS_OK);
        ntp_ceilings back;
        bool found = false;
        assert_int_equal(ntp_store_load_ceilings(ctx, s, m.key, &back, &found), NTP_STATUS_OK);
        ntp_store_close(s);
        assert_true(found);
        print_message("case %zu: other_cpu '%s'\n", k, back.other_cpu);
        assert_int_equal(back.other_cpu[0] == '\0', cases[k].used);
        if (cases[k].sig)
            assert_true(!cases[k].sig[0] ||
                        strstr(back.other_cpu, cases[k].sig) == back.other_cpu + 1);
        if (cases[k].flags && cases[k].flags[0])
            assert_non_null(strstr(back.other_cpu, "; avx512_fp16 amx_tile) than this one ("));
        assert_find_ceilings(ctx, path, cases[k].used, "measured on another CPU (");
    }
    ntp_ctx_free(ctx);
}

/* Ceilings of this CPU whose bf16 or i8 peak was measured with vector dot
 * products, on a CPU with AMX's tile unit (cached by an ntprof before the
 * AMX kernel: 229 GFLOP/s of vdpbf16ps where oneDNN's AMX GEMM ran 2291 on
 * the Intel Xeon of 2026-12-07): not used by find_ceilings, a warning names
 * the instructions; measured with AMX they are used. On a CPU without AMX
 * both are used. */
static void test_ceilings_outdated(void **state)
{
    (void)state;
    char path[512];
    db_path(path, sizeof path, "outdated.db");
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_machine_info m;
    ntp_ceilings c = this_machine_ceilings(ctx, &m, 460.4,
                                           "vfmadd231ps zmm micro-kernel, avx512, 2 threads", 31.0);
    c.n_peaks = 3;
    c.peaks[1] = (ntp_peak){"bf16", 228.9, "vdpbf16ps zmm micro-kernel, avx512, 2 threads"};
    c.peaks[2] = (ntp_peak){"i8", 6023.4, "tdpbusd tmm (AMX) micro-kernel, amx, 2 threads"};
    bool amx = ntp__fma_supported(NTP_ISA_AMX, NTP_KPREC_BF16);
    print_message("AMX bf16 here: %s\n", amx ? "yes" : "no");
    for (int k = 0; k < 2; k++) {
        ntp_store *s;
        assert_int_equal(ntp_store_open(ctx, path, NTP_STORE_CREATE, &s), NTP_STATUS_OK);
        assert_int_equal(ntp_store_save_ceilings(ctx, s, &m, &c), NTP_STATUS_OK);
        ntp_store_close(s);
        assert_find_ceilings(ctx, path, !(amx && k == 0),
                             "are outdated: its bf16 peak was measured with vdpbf16ps zmm, "
                             "this ntprof measures it with tdpbf16ps tmm (AMX); not used");
        snprintf(c.peaks[1].method, sizeof c.peaks[1].method,
                 "tdpbf16ps tmm (AMX) micro-kernel, amx, 2 threads");
    }
    ntp_ctx_free(ctx);
}

/* GPU ceilings beside the CPU's: saved, read back field by field, replaced
 * by a remeasurement without a GPU (whose reason is kept); and a machine
 * cached by a schema-2 database (the machines table without gpu_note, no
 * machine_gpus) reads back after the migration with its CPU ceilings and
 * no GPU. */
static void test_ceilings_gpu(void **state)
{
    (void)state;
    char path[512];
    db_path(path, sizeof path, "gpu-old.db");
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_store *s;
    assert_int_equal(ntp__store_open_version(ctx, path, 2, &s), NTP_STATUS_OK);
    ntp_store_close(s);
    assert_int_equal(sql_int(path, "PRAGMA user_version"), 2);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM pragma_table_info('machines')"), 7);
    assert_int_equal(
        sql_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'machine_gpus'"), 0);
    /* A row as schema 2 wrote it: the CPU's ceilings as JSON, nothing of a GPU. */
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db,
                     "INSERT INTO machines (key, measured_at, cpu_model, cores, hostname,"
                     " description, ceilings) VALUES ('Old CPU|2|box', '2024-01-01T00:00:00Z',"
                     " 'Old CPU', 2, 'box', '{}', '{\"machine\": \"Old CPU|2|box\","
                     " \"measured_at\": \"2024-01-01T00:00:00Z\", \"threads\": 2,"
                     " \"peaks\": [{\"precision\": \"f32\", \"gflops\": 64.5,"
                     " \"method\": \"FMA\"}], \"gemm\": [], \"bandwidth\":"
                     " [{\"level\": \"DRAM\", \"working_set_bytes\": 1024,"
                     " \"gbps\": 12.5}]}')",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(ntp_store_open(ctx, path, NTP_STORE_CREATE, &s), NTP_STATUS_OK);
    assert_int_equal(sql_int(path, "PRAGMA user_version"), NTP_STORE_SCHEMA_VERSION);
    assert_true(NTP_STORE_SCHEMA_VERSION >= 3); /* migrated past the GPUs table */
    bool found = false;
    ntp_ceilings back;
    assert_int_equal(ntp_store_load_ceilings(ctx, s, "Old CPU|2|box", &back, &found),
                     NTP_STATUS_OK);
    assert_true(found);
    assert_float_equal(back.peaks[0].gflops, 64.5, 0);
    assert_float_equal(ntp_ceilings_bandwidth(&back, "DRAM"), 12.5, 0);
    assert_int_equal(back.n_gpus, 0);
    assert_string_equal(back.gpu_note, "");

    /* A machine with a made-up H100. */
    ntp_machine_info m = {.pus = 2};
    snprintf(m.key, sizeof m.key, "GPU box|2|box");
    ntp_ceilings c = {.threads = 2, .n_peaks = 1, .n_levels = 1, .n_gpus = 1};
    snprintf(c.machine_key, sizeof c.machine_key, "%s", m.key);
    c.peaks[0] = (ntp_peak){"f32", 100.0, "FMA"};
    c.levels[0] = (ntp_bandwidth){"DRAM", 134217728, 20.0};
    ntp_gpu_ceilings *g = &c.gpus[0];
    *g = (ntp_gpu_ceilings){.sm_major = 9,
                            .sm_minor = 0,
                            .sms = 132,
                            .clock_ghz = 1.98,
                            .memory_bytes = 85520809984,
                            .gemm_gflops = {51000.5, 378000.25, 989000.125, 988000.0},
                            .gemm_n = {4096, 8192, 8192, 8192},
                            .dram_gbps = 3350.5,
                            .h2d_gbps = 25.25,
                            .d2h_gbps = 26.75};
    snprintf(g->name, sizeof g->name, "NVIDIA H100 80GB HBM3");
    assert_int_equal(ntp_store_save_ceilings(ctx, s, &m, &c), NTP_STATUS_OK);
    assert_int_equal(ntp_store_load_ceilings(ctx, s, m.key, &back, &found), NTP_STATUS_OK);
    assert_true(found);
    assert_int_equal(back.n_gpus, 1);
    const ntp_gpu_ceilings *bg = &back.gpus[0];
    assert_string_equal(bg->name, "NVIDIA H100 80GB HBM3");
    assert_int_equal(bg->sm_major, 9);
    assert_int_equal(bg->sm_minor, 0);
    assert_int_equal(bg->sms, 132);
    assert_float_equal(bg->clock_ghz, 1.98, 0);
    assert_int_equal(bg->memory_bytes, 85520809984);
    for (int k = 0; k < NTP_GPU_MATH_COUNT; k++) {
        assert_float_equal(bg->gemm_gflops[k], g->gemm_gflops[k], 0);
        assert_int_equal(bg->gemm_n[k], g->gemm_n[k]);
    }
    assert_float_equal(bg->dram_gbps, 3350.5, 0);
    assert_float_equal(bg->h2d_gbps, 25.25, 0);
    assert_float_equal(bg->d2h_gbps, 26.75, 0);
    assert_float_equal(back.peaks[0].gflops, 100.0, 0);
    /* The GPU lives in its own table, not in the CPU's document. */
    char text[4096];
    sql_text(path, "SELECT ceilings FROM machines WHERE key = 'GPU box|2|box'", text, sizeof text);
    assert_null(strstr(text, "gpus"));
    assert_int_equal(sql_int(path, "SELECT sms FROM machine_gpus WHERE machine = 'GPU box|2|box'"),
                     132);

    /* Remeasured where the GPU is gone: no GPU row left, and the reason. */
    c.n_gpus = 0;
    snprintf(c.gpu_note, sizeof c.gpu_note, "backend 'cuda': no CUDA device (x)");
    assert_int_equal(ntp_store_save_ceilings(ctx, s, &m, &c), NTP_STATUS_OK);
    assert_int_equal(ntp_store_load_ceilings(ctx, s, m.key, &back, &found), NTP_STATUS_OK);
    assert_int_equal(back.n_gpus, 0);
    assert_string_equal(back.gpu_note, "backend 'cuda': no CUDA device (x)");
    ntp_store_close(s);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM machine_gpus"), 0);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM machines"), 2);
    ntp_ctx_free(ctx);
}

static void test_default_path(void **state)
{
    (void)state;
    char *old_xdg = getenv("XDG_DATA_HOME") ? strdup(getenv("XDG_DATA_HOME")) : NULL;
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    ntp_ctx *ctx = ntp_ctx_init();
    char buf[512];
    setenv("XDG_DATA_HOME", "/data/x", 1);
    setenv("HOME", "/home/u", 1);
    assert_int_equal(ntp_store_default_path(ctx, buf, sizeof buf), NTP_STATUS_OK);
    assert_string_equal(buf, "/data/x/ntprof/history.db");
    setenv("XDG_DATA_HOME", "relative/ignored", 1);
    assert_int_equal(ntp_store_default_path(ctx, buf, sizeof buf), NTP_STATUS_OK);
    assert_string_equal(buf, "/home/u/.local/share/ntprof/history.db");
    unsetenv("XDG_DATA_HOME");
    unsetenv("HOME");
    assert_int_equal(ntp_store_default_path(ctx, buf, sizeof buf), NTP_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "--no-db"));
    setenv("HOME", "/home/u", 1);
    assert_int_equal(ntp_store_default_path(ctx, buf, 10), NTP_STATUS_INVALID_ARGUMENT);
    if (old_xdg)
        setenv("XDG_DATA_HOME", old_xdg, 1);
    if (old_home)
        setenv("HOME", old_home, 1);
    else
        unsetenv("HOME");
    free(old_xdg);
    free(old_home);
    ntp_ctx_free(ctx);
}

/* A child process: open the history and add `runs` runs tagged from `tag`,
 * each as its own transaction. Exits 0 when all went in. */
/* ready_fd >= 0: one byte is written there once the first run is stored, so
 * a test can kill the writer mid-stream however slow the machine is. */
static void writer(const char *path, int runs, int tag, int layers, int ready_fd)
{
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_store *s;
    static sample smp;
    if (!ctx || ntp_store_open(ctx, path, NTP_STORE_CREATE, &s) != NTP_STATUS_OK) {
        fprintf(stderr, "writer %d: %s\n", tag, ctx ? ntp_ctx_errmsg(ctx) : "no context");
        _exit(2);
    }
    for (int i = 0; runs < 0 || i < runs; i++) {
        make_sample(&smp, layers, tag + i, tag == 1 ? "first" : "second", "ref");
        if (ntp_store_add_run(ctx, s, &smp.r, NULL) != NTP_STATUS_OK) {
            fprintf(stderr, "writer %d run %d: %s\n", tag, i, ntp_ctx_errmsg(ctx));
            _exit(3);
        }
        if (i == 0 && ready_fd >= 0) {
            if (write(ready_fd, "r", 1) != 1)
                _exit(4);
            close(ready_fd);
        }
    }
    ntp_store_close(s);
    ntp_ctx_free(ctx);
    _exit(0);
}

/* Every stored run is whole: its rows, markers and warnings are all there
 * and its report parses. */
static void check_whole(const char *path)
{
    char text[64];
    sql_text(path, "PRAGMA integrity_check", text, sizeof text);
    assert_string_equal(text, "ok");
    assert_int_equal(sql_int(path, "SELECT count(*) FROM runs r WHERE r.n_layers !="
                                   " (SELECT count(*) FROM rows w WHERE w.run_id = r.id)"),
                     0);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM runs r WHERE r.n_markers !="
                                   " (SELECT count(*) FROM markers m WHERE m.run_id = r.id)"),
                     0);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM runs r WHERE r.n_warnings !="
                                   " (SELECT count(*) FROM warnings w WHERE w.run_id = r.id)"),
                     0);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM rows WHERE run_id NOT IN"
                                   " (SELECT id FROM runs)"),
                     0);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM runs WHERE json_valid(report) = 0"), 0);
}

static void test_concurrent_writers(void **state)
{
    (void)state;
    char path[512];
    db_path(path, sizeof path, "concurrent.db");
    /* Both start on a database that does not exist yet, so creating it and
     * its schema races too. */
    pid_t a = fork();
    assert_true(a >= 0);
    if (a == 0)
        writer(path, 200, 1, 4, -1);
    pid_t b = fork();
    assert_true(b >= 0);
    if (b == 0)
        writer(path, 200, 1001, 4, -1);
    int sa, sb;
    assert_int_equal(waitpid(a, &sa, 0), a);
    assert_int_equal(waitpid(b, &sb, 0), b);
    assert_true(WIFEXITED(sa));
    assert_int_equal(WEXITSTATUS(sa), 0);
    assert_true(WIFEXITED(sb));
    assert_int_equal(WEXITSTATUS(sb), 0);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM runs"), 400);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM runs WHERE topology = 'first'"), 200);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM runs WHERE topology = 'second'"), 200);
    /* Each writer's seeds 1..200 and 1001..1200 are all there, once. */
    assert_int_equal(sql_int(path, "SELECT count(DISTINCT seed) FROM runs"), 400);
    assert_int_equal(sql_int(path, "SELECT count(*) FROM rows"), 1600);
    check_whole(path);
}

static void test_killed_writer(void **state)
{
    (void)state;
    char path[512];
    db_path(path, sizeof path, "killed.db");
    /* Large runs (60 rows) keep each transaction open long enough for some
     * kills to land inside one. Three kills at different moments after the
     * writer's first stored run (a fixed delay from fork missed the first
     * commit on a loaded machine under ASan: the database had no tables). */
    const int delays_ms[] = {10, 45, 90};
    int64_t before = 0;
    for (int k = 0; k < 3; k++) {
        int ready[2];
        assert_int_equal(pipe(ready), 0);
        pid_t p = fork();
        assert_true(p >= 0);
        if (p == 0) {
            close(ready[0]);
            writer(path, -1, 10000 * (k + 1), 60, ready[1]);
        }
        close(ready[1]);
        char c;
        assert_int_equal(read(ready[0], &c, 1), 1);
        close(ready[0]);
        struct timespec ts = {0, delays_ms[k] * 1000000L};
        nanosleep(&ts, NULL);
        assert_int_equal(kill(p, SIGKILL), 0);
        int st;
        assert_int_equal(waitpid(p, &st, 0), p);
        assert_true(WIFSIGNALED(st));
        assert_int_equal(WTERMSIG(st), SIGKILL);
        /* A fresh connection recovers the WAL and finds only whole runs. */
        check_whole(path);
        int64_t now = sql_int(path, "SELECT count(*) FROM runs");
        if (now <= before)
            fail_msg("kill %d: %lld runs after, %lld before: the writer wrote nothing", k,
                     (long long)now, (long long)before);
        before = now;
    }
    /* And the library still opens and extends it. */
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_store *s;
    assert_int_equal(ntp_store_open(ctx, path, NTP_STORE_CREATE, &s), NTP_STATUS_OK);
    static sample smp;
    make_sample(&smp, 3, 7, "after", "ref");
    assert_int_equal(ntp_store_add_run(ctx, s, &smp.r, NULL), NTP_STATUS_OK);
    int64_t n;
    assert_int_equal(ntp_store_count(ctx, s, &n), NTP_STATUS_OK);
    assert_int_equal(n, before + 1);
    ntp_store_close(s);
    ntp_ctx_free(ctx);
    check_whole(path);
}

static void test_history_write(void **state)
{
    (void)state;
    ntp_history_entry e[2] = {
        {.id = 12,
         .time = "2025-03-01T12:34:56Z",
         .topology = "a-rather-long-topology-name",
         .backend = "ref",
         .precision = "f32",
         .batch = 2,
         .threads = 1,
         .median_ms = 1.25,
         .ci95_lo_ms = 1.2,
         .ci95_hi_ms = 1.3,
         .throughput = 1600,
         .n_layers = 4,
         .machine = "AMD EPYC|2|host"},
        {.id = 3,
         .time = "unknown",
         .topology = "x,y",
         .backend = "onednn",
         .precision = "bf16",
         .batch = 0,
         .threads = 0,
         .median_ms = NAN,
         .machine = "m"},
    };
    ntp_ctx *ctx = ntp_ctx_init();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(ntp_report_write_history(ctx, e, 2, NTP_FORMAT_TABLE, f), NTP_STATUS_OK);
    fclose(f);
    fputs(buf, stdout);
    assert_non_null(
        strstr(buf, "    12 2025-03-01 12:34:56 a-rather-long\xE2\x80\xA6 ref      f32      2"
                    "   1     1.2500 AMD EPYC 2 host"));
    for (char *p = buf; *p;) {
        size_t n = strcspn(p, "\n"), cols = 0;
        for (size_t i = 0; i < n; i++)
            cols += ((unsigned char)p[i] & 0xC0) != 0x80;
        assert_true(cols <= 100);
        p += n + (p[n] == '\n');
    }
    free(buf);
    f = open_memstream(&buf, &len);
    assert_int_equal(ntp_report_write_history(ctx, e, 2, NTP_FORMAT_CSV, f), NTP_STATUS_OK);
    fclose(f);
    assert_non_null(strstr(buf, "\n3,unknown,\"x,y\",onednn,bf16,0,0,,0,0,0,0,m\n"));
    free(buf);
    f = open_memstream(&buf, &len);
    assert_int_equal(ntp_report_write_history(ctx, e, 2, NTP_FORMAT_JSON, f), NTP_STATUS_OK);
    fclose(f);
    json_error_t err;
    json_t *j = json_loads(buf, 0, &err);
    assert_non_null(j);
    json_t *runs = json_object_get(j, "runs");
    assert_int_equal(json_array_size(runs), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(runs, 0), "id")), 12);
    assert_true(json_is_null(json_object_get(json_array_get(runs, 1), "median_ms")));
    json_decref(j);
    free(buf);
    ntp_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),          cmocka_unit_test(test_list_filters),
        cmocka_unit_test(test_migration),          cmocka_unit_test(test_ceilings),
        cmocka_unit_test(test_ceilings_other_cpu), cmocka_unit_test(test_ceilings_outdated),
        cmocka_unit_test(test_ceilings_gpu),       cmocka_unit_test(test_default_path),
        cmocka_unit_test(test_concurrent_writers), cmocka_unit_test(test_killed_writer),
        cmocka_unit_test(test_history_write),
    };
    return cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown);
}
