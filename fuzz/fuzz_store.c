/* libFuzzer harness for the history database reader (src/store/): each
 * input is an SQLite database, opened read-only the way `ntprof history`,
 * `compare --db` and the ceilings cache open one (the same schema check),
 * then listed (with and without filters), counted, and every run in it read
 * back as its JSON report and as a result, this machine's ceilings and
 * calibration looked up, and every stored calibration's samples read (tests/test_store_fuzz.sh runs
 * it briefly in CI; seeds in fuzz/corpus/store/, tokens in fuzz/store.dict).
 *
 * The input is opened in memory (ntp__store_open_image: SQLite reads its
 * own copy of the bytes, with no file, journal or lock), so each input
 * costs SQLite's parsing and ntprof's queries, not a file's life cycle.
 * The machine key, which the ceilings lookup would otherwise collect from
 * the system on every call, is taken once, and SQLite's lookaside is off. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <sqlite3.h>

#include "ntprof/ntprof.h"
#include "store/store-impl.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__asan_default_options(void);

/* ASan's defaults for this harness (ASAN_OPTIONS still overrides them).
 * An input costs some 6,000 allocations and 1 MiB (SQLite parsing the
 * input's schema, jansson each stored report), which ASan's quarantine
 * holds for a while; by default ASan also hands the free pages back to the
 * kernel every 5 s, and the next inputs fault them in again (10 to 27
 * page faults an input, up to a quarter of its time; kept, 4 to 7). What
 * ASan detects is the same (the quarantine is not touched), and libFuzzer
 * still purges the allocator once RSS passes half of -rss_limit_mb. Unused
 * in a build without ASan (test_fuzz_corpus under gcc). */
const char *__asan_default_options(void)
{
    return "allocator_release_to_os_interval_ms=-1";
}

static ntp_ctx *store_ctx;
static char store_machine_key[256];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* No lookaside: SQLite would set up 120 KiB of slots per connection,
     * that is per input, and serve small allocations from them where ASan
     * cannot see their bounds. Refused (and harmless) once SQLite is
     * initialised, as in test_fuzz_corpus. */
    (void)sqlite3_config(SQLITE_CONFIG_LOOKASIDE, 0, 0);
    store_ctx = ntp_ctx_init();
    ntp_machine_key(store_machine_key, sizeof store_machine_key);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ntp_store *s = NULL;
    if (!store_ctx ||
        ntp__store_open_image(store_ctx, data, size, "fuzz.db", &s) != NTP_STATUS_OK) {
        ntp_ctx_clear(store_ctx);
        return 0;
    }
    int64_t count;
    (void)ntp_store_count(store_ctx, s, &count);
    ntp_history_filter f = {
        .topology = "tiny-mlp", .backend = "ref", .since = "2025-03-01T12:00:00Z", .limit = 3};
    ntp_history_entry *e = NULL;
    int n = 0;
    if (ntp_store_list(store_ctx, s, &f, &e, &n) == NTP_STATUS_OK)
        free(e);
    e = NULL;
    if (ntp_store_list(store_ctx, s, NULL, &e, &n) == NTP_STATUS_OK) {
        /* ntp_store_load_run reads the report through ntp_store_get_report
         * (the JSON text), then parses it: one call reaches both. */
        for (int i = 0; i < n && i < 8; i++) {
            ntp_run_result *r = NULL;
            if (ntp_store_load_run(store_ctx, s, e[i].id, &r) == NTP_STATUS_OK)
                ntp_run_result_free(r);
        }
        free(e);
    }
    ntp_ceilings c;
    bool found;
    (void)ntp_store_load_ceilings(store_ctx, s, store_machine_key, &c, &found);
    ntp_calibration cal;
    (void)ntp_store_load_calibration(store_ctx, s, store_machine_key, "ref", "f32", &cal, &found);
    /* Every calibration the input holds, whatever machine made it, and
     * each one's samples (the rows `machine --refit` fits again). */
    ntp_calibration *cals = NULL;
    int n_cals = 0;
    if (ntp_store_list_calibrations(store_ctx, s, &cals, &n_cals) == NTP_STATUS_OK) {
        for (int i = 0; i < n_cals && i < 4; i++) {
            ntp_calibration_sample *smp = NULL;
            int n_smp = 0;
            if (ntp_store_load_calibration_samples(store_ctx, s, cals[i].machine_key,
                                                   cals[i].backend, cals[i].precision, &smp,
                                                   &n_smp) == NTP_STATUS_OK)
                free(smp);
        }
        free(cals);
    }
    ntp_store_close(s);
    ntp_ctx_clear(store_ctx);
    ntp_ctx_clear_warnings(store_ctx);
    return 0;
}
