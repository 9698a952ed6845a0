/* The machine facts recorded in run reports, each checked against the
 * system read independently here, and the measurement clock. */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "measure/measure-impl.h"
#include "ntprof/ntprof.h"

/* The value of the first "key : value" line of /proc/cpuinfo, or "". */
static void cpuinfo_field(const char *key, char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    static char line[16384];
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) != 0 || (line[klen] != ' ' && line[klen] != '\t' &&
                                              line[klen] != ':'))
            continue;
        char *v = strchr(line, ':');
        if (!v)
            continue;
        v++;
        while (*v == ' ')
            v++;
        v[strcspn(v, "\n")] = '\0';
        snprintf(out, len, "%s", v);
        break;
    }
    fclose(f);
}

static bool in_word_list(const char *list, const char *word)
{
    char buf[16384];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
        if (strcmp(w, word) == 0)
            return true;
    return false;
}

static void test_cpu(void **state)
{
    (void)state;
    ntp_env e;
    ntp_env_collect(&e);
    char model[256];
    cpuinfo_field("model name", model, sizeof model);
    if (model[0])
        assert_string_equal(e.cpu_model, model);
    else
        assert_string_equal(e.cpu_model, "unknown");

    static char flags[16384];
    cpuinfo_field("flags", flags, sizeof flags);
    const char *isa[] = {"sse4_2",      "avx",         "avx2",     "fma",      "avx512f",
                         "avx512bw",    "avx512vl",    "avx512_vnni", "avx512_bf16",
                         "avx512_fp16", "amx_tile",    "amx_bf16", "amx_int8"};
    if (!flags[0]) {
        assert_string_equal(e.cpu_flags, "unknown");
    } else {
        for (size_t i = 0; i < sizeof isa / sizeof isa[0]; i++) {
            print_message("%s: cpuinfo %d, env %d\n", isa[i], in_word_list(flags, isa[i]),
                          in_word_list(e.cpu_flags, isa[i]));
            assert_int_equal(in_word_list(flags, isa[i]), in_word_list(e.cpu_flags, isa[i]));
        }
        /* Only the listed flags are reported. */
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", e.cpu_flags);
        for (char *save = NULL, *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
            bool listed = false;
            for (size_t i = 0; i < sizeof isa / sizeof isa[0]; i++)
                listed |= strcmp(w, isa[i]) == 0;
            assert_true(listed);
        }
    }
    assert_int_equal(e.cores, sysconf(_SC_NPROCESSORS_ONLN));
    assert_true(e.cores >= 1);
    assert_int_equal(e.memory_bytes, (int64_t)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE));
    assert_true(e.memory_bytes > 0);
}

static void test_system_and_build(void **state)
{
    (void)state;
    ntp_env e;
    ntp_env_collect(&e);
    struct utsname u;
    assert_int_equal(uname(&u), 0);
    char expect[512];
    snprintf(expect, sizeof expect, "%s %s %s", u.sysname, u.release, u.machine);
    assert_memory_equal(e.os, expect, strlen(expect));
    FILE *dv = fopen("/etc/debian_version", "r");
    if (dv) {
        char ver[64] = "";
        assert_non_null(fgets(ver, sizeof ver, dv));
        fclose(dv);
        ver[strcspn(ver, "\n")] = '\0';
        char tail[128];
        snprintf(tail, sizeof tail, " (Debian %s)", ver);
        assert_string_equal(e.os + strlen(expect), tail);
    }

    assert_string_equal(e.ntprof_version, ntp_version());
    assert_string_equal(e.git_revision, ntp_git_revision());
#if defined(__clang__)
    assert_memory_equal(e.compiler, "clang ", 6);
#else
    assert_memory_equal(e.compiler, "gcc ", 4);
#endif
    char want[128];
    snprintf(want, sizeof want, "jansson %s", JANSSON_VERSION);
    assert_non_null(strstr(e.libraries, want));
    snprintf(want, sizeof want, "sqlite %s", sqlite3_libversion());
    assert_non_null(strstr(e.libraries, want));
    assert_non_null(strstr(e.libraries, "libxml2 2."));
    assert_non_null(strstr(e.libraries, "fftw 3."));

    char host[256];
    assert_int_equal(gethostname(host, sizeof host), 0);
    host[sizeof e.hostname - 1] = '\0';
    assert_string_equal(e.hostname, host);
}

static void test_timestamp(void **state)
{
    (void)state;
    time_t before = time(NULL);
    ntp_env e;
    ntp_env_collect(&e);
    time_t after = time(NULL);
    assert_int_equal(strlen(e.timestamp), 20); /* 2024-01-31T12:34:56Z */
    struct tm tm = {0};
    const char *end = strptime(e.timestamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    assert_non_null(end);
    assert_int_equal(*end, '\0');
    time_t t = timegm(&tm);
    print_message("timestamp %s = %lld, window [%lld, %lld]\n", e.timestamp, (long long)t,
                  (long long)before, (long long)after);
    assert_true(t >= before && t <= after);
}

static void test_clock(void **state)
{
    (void)state;
    uint64_t prev = ntp__now_ns();
    for (int i = 0; i < 10000; i++) {
        uint64_t now = ntp__now_ns();
        assert_true(now >= prev);
        prev = now;
    }
    /* A 20 ms sleep measures at least 20 ms (and not absurdly more). */
    uint64_t t0 = ntp__now_ns();
    double u0 = ntp__now_us();
    struct timespec ts = {0, 20 * 1000 * 1000};
    while (nanosleep(&ts, &ts) != 0)
        ;
    uint64_t t1 = ntp__now_ns();
    double u1 = ntp__now_us();
    print_message("slept %llu ns, %.1f us\n", (unsigned long long)(t1 - t0), u1 - u0);
    assert_true(t1 - t0 >= 20000000ULL);
    assert_true(t1 - t0 < 2000000000ULL);
    /* Both views of the same clock agree to within the reads between them. */
    assert_true(u1 - u0 >= 20000.0 && u1 - u0 < 2000000.0);
    assert_true(fabs((double)t1 / 1000.0 - u1) < 1000.0);

    double ov = ntp__clock_overhead_ns();
    print_message("clock overhead %.2f ns\n", ov);
    assert_true(ov > 0.0);
    assert_true(ov < 10000.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu),
        cmocka_unit_test(test_system_and_build),
        cmocka_unit_test(test_timestamp),
        cmocka_unit_test(test_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
