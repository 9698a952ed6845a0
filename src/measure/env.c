/* Facts about the machine and the build, recorded in every run report so a
 * result can be compared only with results from the same setup. */
#include <fftw3.h>
#include <jansson.h>
#include <libxml/xmlversion.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "ntprof/ntprof.h"

#define UNKNOWN "unknown"

/* The ISA extensions that decide which kernels a backend can use. */
static const char *const isa_flags[] = {
    "sse4_2",   "avx",        "avx2",        "fma",         "avx512f",  "avx512bw", "avx512vl",
    "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8",
};

/* Copy src into a fixed field, "unknown" when there is nothing to copy.
 * A long value is cut at a character boundary so the field stays UTF-8. */
static void copy(char *dst, size_t len, const char *src)
{
    if (!src || !*src)
        src = UNKNOWN;
    size_t n = strlen(src);
    if (n >= len) {
        n = len - 1;
        while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
            n--;
    }
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void strip(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
}

/* Whole-word match: "avx512f" must not match inside "avx512fp16". */
static bool has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n) {
        bool start = p == list || p[-1] == ' ' || p[-1] == '\t';
        bool end = p[n] == '\0' || p[n] == ' ' || p[n] == '\n' || p[n] == '\t';
        if (start && end)
            return true;
    }
    return false;
}

static void collect_cpu(ntp_env *env)
{
    copy(env->cpu_model, sizeof env->cpu_model, NULL);
    env->cpu_flags[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) {
        copy(env->cpu_flags, sizeof env->cpu_flags, NULL);
        return;
    }
    /* A flags line of a recent x86 CPU is about 1.5 kB. */
    char line[8192];
    bool have_model = false, have_flags = false;
    while ((!have_model || !have_flags) && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *value = colon + 1;
        while (*value == ' ')
            value++;
        strip(value);
        if (!have_model && strncmp(line, "model name", 10) == 0) {
            copy(env->cpu_model, sizeof env->cpu_model, value);
            have_model = true;
        } else if (!have_flags && strncmp(line, "flags", 5) == 0) {
            size_t used = 0;
            for (size_t i = 0; i < sizeof isa_flags / sizeof isa_flags[0]; i++)
                if (has_word(value, isa_flags[i]))
                    used += (size_t)snprintf(env->cpu_flags + used, sizeof env->cpu_flags - used,
                                             "%s%s", used ? " " : "", isa_flags[i]);
            have_flags = true;
        }
    }
    fclose(f);
    /* No flags line (not x86) is "unknown"; a flags line without any of
     * the extensions above is honestly empty. */
    if (!have_flags)
        copy(env->cpu_flags, sizeof env->cpu_flags, NULL);
}

static void collect_os(ntp_env *env)
{
    struct utsname u;
    if (uname(&u) != 0) {
        copy(env->os, sizeof env->os, NULL);
        return;
    }
    char debian[64] = "";
    FILE *f = fopen("/etc/debian_version", "r");
    if (f) {
        if (fgets(debian, sizeof debian, f))
            strip(debian);
        fclose(f);
    }
    char os[512];
    if (debian[0])
        snprintf(os, sizeof os, "%s %s %s (Debian %s)", u.sysname, u.release, u.machine, debian);
    else
        snprintf(os, sizeof os, "%s %s %s", u.sysname, u.release, u.machine);
    copy(env->os, sizeof env->os, os);
}

void ntp_env_collect(ntp_env *env)
{
    memset(env, 0, sizeof *env);
    collect_cpu(env);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    env->cores = cores > 0 ? (int)cores : 0;
    long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    env->memory_bytes = pages > 0 && page_size > 0 ? (int64_t)pages * page_size : 0;
    collect_os(env);

#if defined(__clang__)
    copy(env->compiler, sizeof env->compiler, "clang " __clang_version__);
#elif defined(__GNUC__)
    copy(env->compiler, sizeof env->compiler, "gcc " __VERSION__);
#else
    copy(env->compiler, sizeof env->compiler, NULL);
#endif
    /* libxml2 and jansson give their version only at compile time; FFTW and
     * SQLite say which library is actually loaded. */
    const char *fftw = fftwf_version;
    if (strncmp(fftw, "fftw-", 5) == 0)
        fftw += 5; /* "fftw-3.3.10-sse2-avx": the name is already in the list */
    snprintf(env->libraries, sizeof env->libraries,
             "libxml2 %s, jansson %s, fftw %s, sqlite %s", LIBXML_DOTTED_VERSION,
             JANSSON_VERSION, fftw, sqlite3_libversion());
    copy(env->ntprof_version, sizeof env->ntprof_version, ntp_version());
    copy(env->git_revision, sizeof env->git_revision, ntp_git_revision());

    char host[256];
    if (gethostname(host, sizeof host) == 0) {
        host[sizeof host - 1] = '\0';
        copy(env->hostname, sizeof env->hostname, host);
    } else {
        copy(env->hostname, sizeof env->hostname, NULL);
    }
    time_t now = time(NULL);
    struct tm tm;
    if (now == (time_t)-1 || !gmtime_r(&now, &tm) ||
        strftime(env->timestamp, sizeof env->timestamp, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        copy(env->timestamp, sizeof env->timestamp, NULL);
}
