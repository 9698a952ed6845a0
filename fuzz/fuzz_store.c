/* libFuzzer harness for the history database reader (src/store/): each
 * input is an SQLite file, opened read-only the way `ntprof history`,
 * `compare --db` and the ceilings cache open it, then listed (with and
 * without filters), counted, and every run in it read back as its JSON
 * report and as a result (tests/test_store_fuzz.sh runs it briefly in CI;
 * seeds in fuzz/corpus/store/, tokens in fuzz/store.dict). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <stdio.h>
#include <unistd.h>

#include "ntprof/ntprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* SQLite resolves the path it is given, so the anonymous file of the
     * other harnesses (/proc/self/fd/N -> "/memfd:... (deleted)") will not
     * do: a file in /dev/shm (memory too) per process. */
    char path[64];
    snprintf(path, sizeof path, "/dev/shm/ntp-fuzz-store-%ld.db", (long)getpid());
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return 0;
    bool ok = fwrite(data, 1, size, fp) == size;
    if (fclose(fp) != 0 || !ok) {
        unlink(path);
        return 0;
    }
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_store *s = NULL;
    if (ctx && ntp_store_open(ctx, path, NTP_STORE_READ_ONLY, &s) == NTP_STATUS_OK) {
        int64_t count;
        (void)ntp_store_count(ctx, s, &count);
        ntp_history_filter f = {
            .topology = "tiny-mlp", .backend = "ref", .since = "2025-03-01T12:00:00Z", .limit = 3};
        ntp_history_entry *e = NULL;
        int n = 0;
        if (ntp_store_list(ctx, s, &f, &e, &n) == NTP_STATUS_OK)
            free(e);
        e = NULL;
        if (ntp_store_list(ctx, s, NULL, &e, &n) == NTP_STATUS_OK) {
            for (int i = 0; i < n && i < 8; i++) {
                char *json = NULL;
                if (ntp_store_get_report(ctx, s, e[i].id, &json) == NTP_STATUS_OK)
                    free(json);
                ntp_run_result *r = NULL;
                if (ntp_store_load_run(ctx, s, e[i].id, &r) == NTP_STATUS_OK)
                    ntp_run_result_free(r);
            }
            free(e);
        }
        ntp_ceilings c;
        bool found;
        ntp_store_close(s);
        (void)ntp_store_find_ceilings(ctx, path, &c, &found);
    }
    ntp_ctx_free(ctx);
    unlink(path);
    char side[80];
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    return 0;
}
