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

#ifdef NTP_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl_version.h>
#endif

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
        /* The whole key: "model" is not "model name". */
        if (strncmp(line, key, klen) != 0 || line[klen + strspn(line + klen, " \t")] != ':')
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
    const char *isa[] = {"sse4_2",   "avx",      "avx2",        "fma",         "avx512f",
                         "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16",
                         "amx_tile", "amx_bf16", "amx_int8"};
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
    /* The signature: x86's vendor, family, model and stepping, read here
     * field by field. */
    char vendor[64], family[64], mdl[64], stepping[64], want[320];
    cpuinfo_field("vendor_id", vendor, sizeof vendor);
    cpuinfo_field("cpu family", family, sizeof family);
    cpuinfo_field("model", mdl, sizeof mdl);
    cpuinfo_field("stepping", stepping, sizeof stepping);
    if (family[0]) {
        snprintf(want, sizeof want, "%s family %s model %s stepping %s", vendor, family, mdl,
                 stepping);
        print_message("signature: %s\n", e.cpu_signature);
        assert_string_equal(e.cpu_signature, want);
        assert_null(strstr(e.cpu_signature, "model name"));
    } else {
        assert_true(e.cpu_signature[0] != '\0');
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

/* The first line of a file, or false. */
static bool first_line(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fgets(out, (int)len, f) != NULL;
    fclose(f);
    if (ok)
        out[strcspn(out, "\n")] = '\0';
    return ok;
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Governor, frequency, boost, SMT: each equal to what sysfs says, or
 * "n/a (...)" exactly when sysfs does not say it. */
static void test_frequency_policy(void **state)
{
    (void)state;
    ntp_env e;
    ntp_env_collect(&e);
    print_message("governor '%s', %s, boost '%s', SMT '%s'\n", e.governor, e.cpu_mhz_text, e.boost,
                  e.smt);
    char v[256];
    if (first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", v, sizeof v))
        assert_string_equal(e.governor, v);
    else
        assert_true(starts_with(e.governor, "n/a ("));

    /* The frequency moves between two reads: the same order of magnitude. */
    double mhz = 0;
    char line[1024];
    if (first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", v, sizeof v)) {
        mhz = atof(v) / 1000.0;
    } else {
        FILE *f = fopen("/proc/cpuinfo", "r");
        while (f && fgets(line, sizeof line, f))
            if (starts_with(line, "cpu MHz") && strchr(line, ':')) {
                mhz = atof(strchr(line, ':') + 1);
                break;
            }
        if (f)
            fclose(f);
    }
    if (mhz > 0) {
        assert_true(e.cpu_mhz > mhz / 3 && e.cpu_mhz < mhz * 3);
        char want[64];
        snprintf(want, sizeof want, "%.0f MHz", e.cpu_mhz);
        assert_string_equal(e.cpu_mhz_text, want);
    } else {
        assert_true(e.cpu_mhz == 0);
        assert_true(starts_with(e.cpu_mhz_text, "n/a ("));
    }

    if (first_line("/sys/devices/system/cpu/cpufreq/boost", v, sizeof v))
        assert_string_equal(e.boost, strcmp(v, "1") == 0 ? "on" : "off");
    else if (first_line("/sys/devices/system/cpu/intel_pstate/no_turbo", v, sizeof v))
        assert_string_equal(e.boost, strcmp(v, "1") == 0 ? "off" : "on");
    else
        assert_true(starts_with(e.boost, "n/a ("));

    if (first_line("/sys/devices/system/cpu/smt/control", v, sizeof v))
        assert_string_equal(e.smt, v);
    else
        assert_true(starts_with(e.smt, "n/a ("));
}

/* The load averages lie between two reads of /proc/loadavg around the
 * collection (they change every 5 s). */
static void test_load_average(void **state)
{
    (void)state;
    double a[3], b[3];
    char v[256];
    assert_true(first_line("/proc/loadavg", v, sizeof v));
    assert_int_equal(sscanf(v, "%lf %lf %lf", &a[0], &a[1], &a[2]), 3);
    ntp_env e;
    ntp_env_collect(&e);
    assert_true(first_line("/proc/loadavg", v, sizeof v));
    assert_int_equal(sscanf(v, "%lf %lf %lf", &b[0], &b[1], &b[2]), 3);
    for (int i = 0; i < 3; i++) {
        double lo = a[i] < b[i] ? a[i] : b[i], hi = a[i] < b[i] ? b[i] : a[i];
        print_message("load %d: %.2f in [%.2f, %.2f]\n", i, e.load_average[i], lo, hi);
        assert_true(e.load_average[i] >= lo - 1e-9 && e.load_average[i] <= hi + 1e-9);
    }
    /* Nothing measured the contention of a window yet. */
    assert_false(e.contention.measured);
}

static const ntp_env_library *library(const ntp_env *e, const char *name)
{
    for (int i = 0; i < e->n_libraries; i++)
        if (strcmp(e->library[i].name, name) == 0)
            return &e->library[i];
    return NULL;
}

/* The output of a shell command, first line; false when it fails. */
static bool command_line(const char *cmd, char *out, size_t len)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return false;
    bool ok = fgets(out, (int)len, p) != NULL;
    if (ok)
        out[strcspn(out, "\n")] = '\0';
    return pclose(p) == 0 && ok;
}

/* The backends' libraries: versions against the headers compiled with
 * and dpkg, the ISA oneDNN chose against the CPU's flags and against
 * ONEDNN_MAX_CPU_ISA in a child run. */
static void test_backend_libraries(void **state)
{
    (void)state;
    ntp_env e;
    ntp_env_collect(&e);
    for (int i = 0; i < e.n_libraries; i++)
        print_message("%s %s [%s]\n", e.library[i].name, e.library[i].version, e.library[i].isa);
#ifdef NTP_HAVE_ONEDNN
    const ntp_env_library *d = library(&e, "oneDNN");
    assert_non_null(d);
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR,
             DNNL_VERSION_PATCH);
    assert_true(starts_with(d->version, want));
    static char flags[16384];
    cpuinfo_field("flags", flags, sizeof flags);
    /* oneDNN 2.x names its AVX-512 ISAs avx512_core*, and uses AVX-512 on
     * every CPU with avx512f/bw/vl (unless told not to). */
    if (in_word_list(flags, "avx512bw") && in_word_list(flags, "avx512vl") &&
        !getenv("ONEDNN_MAX_CPU_ISA") && !getenv("DNNL_MAX_CPU_ISA"))
        assert_true(starts_with(d->isa, "avx512_core"));
    if (in_word_list(flags, "avx512_bf16") && !getenv("ONEDNN_MAX_CPU_ISA") &&
        !getenv("DNNL_MAX_CPU_ISA"))
        assert_true(strcmp(d->isa, "avx512_core_bf16") == 0 ||
                    strcmp(d->isa, "avx512_core_amx") == 0);
    /* A lower ISA forced in a child run is the one reported. */
    if (in_word_list(flags, "avx2")) {
        char cmd[1024], out[512];
        snprintf(cmd, sizeof cmd,
                 "ONEDNN_MAX_CPU_ISA=avx2 %s run %s/models/tiny-mlp.xml -n 1 --min-time 0 -w 0 "
                 "--no-db -f json 2>/dev/null | grep -A3 '\"name\": \"oneDNN\"' | grep '\"isa\"'",
                 NTP_CLI, NTP_SOURCE_DIR);
        assert_true(command_line(cmd, out, sizeof out));
        print_message("ONEDNN_MAX_CPU_ISA=avx2: %s\n", out);
        assert_non_null(strstr(out, "\"isa\": \"avx2\""));
    }
#endif
#ifdef NTP_HAVE_BLAS
    const ntp_env_library *b = library(&e, "OpenBLAS");
    assert_non_null(b);
    /* OpenBLAS's config string names the kernel set it chose ("Haswell"). */
    assert_true(b->version[0] >= '0' && b->version[0] <= '9');
    char core[64];
    assert_int_equal(sscanf(b->isa, "%63s kernels", core), 1);
    assert_non_null(strstr(b->version, core));
    /* The version is dpkg's upstream version where dpkg installed it. */
    char pkg[256];
    if (command_line("dpkg-query -W -f='${Version}' libopenblas0-pthread 2>/dev/null", pkg,
                     sizeof pkg) &&
        pkg[0]) {
        char upstream[64];
        snprintf(upstream, sizeof upstream, "%.*s ", (int)strcspn(pkg, "-+"), pkg);
        print_message("dpkg: %s, env: %s\n", pkg, b->version);
        assert_true(starts_with(b->version, upstream));
    }
#endif
#ifdef NTP_HAVE_XNNPACK
    const ntp_env_library *x = library(&e, "XNNPACK");
    assert_non_null(x);
    char xv[256];
    if (command_line("dpkg-query -W -f='${Package} ${Version}\\n' 'libxnnpack*' 2>/dev/null | "
                     "grep -v -- -dev | head -1",
                     xv, sizeof xv) &&
        xv[0])
        assert_string_equal(x->version, xv);
    else
        assert_true(starts_with(x->version, "n/a ("));
    assert_true(starts_with(x->isa, "n/a ("));
#endif
    /* Only the libraries this file knows, each once. */
    for (int i = 0; i < e.n_libraries; i++)
        for (int j = 0; j < i; j++)
            assert_string_not_equal(e.library[i].name, e.library[j].name);
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
        cmocka_unit_test(test_cpu),          cmocka_unit_test(test_system_and_build),
        cmocka_unit_test(test_timestamp),    cmocka_unit_test(test_frequency_policy),
        cmocka_unit_test(test_load_average), cmocka_unit_test(test_backend_libraries),
        cmocka_unit_test(test_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
