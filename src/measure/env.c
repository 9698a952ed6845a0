/* Facts about the machine and the build, recorded in every run report so a
 * result can be compared only with results from the same setup. */
#include <dirent.h>
#include <errno.h>
#include <dlfcn.h>
#include <fftw3.h>
#include <jansson.h>
#include <link.h>
#include <pthread.h>
#include <libxml/xmlversion.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "measure-impl.h"
#include "ntprof/ntprof.h"

#define UNKNOWN "unknown"

/* The ISA extensions that decide which kernels a backend can use. */
static const char *const isa_flags[] = {
    "sse4_2",      "avx",         "avx2",        "fma",      "avx512f",  "avx512bw", "avx512vl",
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

bool ntp__has_word(const char *list, const char *word)
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

/* The fields of /proc/cpuinfo's first processor that name the CPU: x86's
 * vendor, family, model and stepping, Arm's implementer, part, variant and
 * revision. */
enum { SIG_VENDOR, SIG_FAMILY, SIG_MODEL, SIG_STEPPING, SIG_IMPL, SIG_PART, SIG_VARIANT, SIG_REV };
static const char *const sig_keys[] = {"vendor_id",   "cpu family",      "model",
                                       "stepping",    "CPU implementer", "CPU part",
                                       "CPU variant", "CPU revision"};

/* The CPU's identity beside its model name, which a virtual machine often
 * makes generic: "AMD EPYC" named a 2-core Zen 5 (family 26) and an
 * AVX2-only EPYC alike here. */
static void cpu_signature(char *dst, size_t len, char f[][32])
{
    char sig[192];
    if (f[SIG_FAMILY][0])
        snprintf(sig, sizeof sig, "%.31s%sfamily %.31s model %.31s stepping %.31s", f[SIG_VENDOR],
                 f[SIG_VENDOR][0] ? " " : "", f[SIG_FAMILY], f[SIG_MODEL][0] ? f[SIG_MODEL] : "?",
                 f[SIG_STEPPING][0] ? f[SIG_STEPPING] : "?");
    else if (f[SIG_IMPL][0])
        snprintf(sig, sizeof sig, "implementer %.31s part %.31s variant %.31s revision %.31s",
                 f[SIG_IMPL], f[SIG_PART][0] ? f[SIG_PART] : "?",
                 f[SIG_VARIANT][0] ? f[SIG_VARIANT] : "?", f[SIG_REV][0] ? f[SIG_REV] : "?");
    else
        sig[0] = '\0';
    copy(dst, len, sig);
}

static void collect_cpu(ntp_env *env)
{
    copy(env->cpu_model, sizeof env->cpu_model, NULL);
    copy(env->cpu_signature, sizeof env->cpu_signature, NULL);
    env->cpu_flags[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) {
        copy(env->cpu_flags, sizeof env->cpu_flags, NULL);
        return;
    }
    /* A flags line of a recent x86 CPU is about 1.5 kB. The first
     * processor's block ends at the first empty line. */
    char line[8192];
    char sig[sizeof sig_keys / sizeof sig_keys[0]][32] = {{0}};
    bool have_model = false, have_flags = false;
    while (fgets(line, sizeof line, f) && line[0] != '\n') {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *value = colon + 1;
        while (*value == ' ')
            value++;
        strip(value);
        size_t key = (size_t)(colon - line);
        while (key > 0 && (line[key - 1] == ' ' || line[key - 1] == '\t'))
            key--;
        for (size_t i = 0; i < sizeof sig_keys / sizeof sig_keys[0]; i++)
            if (!sig[i][0] && strlen(sig_keys[i]) == key && strncmp(line, sig_keys[i], key) == 0)
                snprintf(sig[i], sizeof sig[i], "%.31s", value);
        if (!have_model && strncmp(line, "model name", 10) == 0) {
            copy(env->cpu_model, sizeof env->cpu_model, value);
            have_model = true;
        } else if (!have_flags && strncmp(line, "flags", 5) == 0) {
            size_t used = 0;
            for (size_t i = 0; i < sizeof isa_flags / sizeof isa_flags[0]; i++)
                if (ntp__has_word(value, isa_flags[i]))
                    used += (size_t)snprintf(env->cpu_flags + used, sizeof env->cpu_flags - used,
                                             "%s%s", used ? " " : "", isa_flags[i]);
            have_flags = true;
        }
    }
    fclose(f);
    cpu_signature(env->cpu_signature, sizeof env->cpu_signature, sig);
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

/* --- the backends' libraries ----------------------------------------------------- *
 *
 * Looked up among the libraries loaded in this process (dlsym), so that
 * this file needs none of their headers and reports the library actually
 * loaded, not the one compiled against. A library that is not loaded (its
 * backend not built) is not listed. */

/* A function of a loaded library, or NULL; `type` is a function-pointer
 * typedef. POSIX lets dlsym's void * convert to a function pointer; memcpy
 * says so without a cast ISO C frowns on. */
// clang-format off
#define LOOKUP(handle, type, name, var)                                                   \
    type var = NULL;                                                                      \
    do {                                                                                  \
        void *p_ = dlsym(handle, name);                                                   \
        if (p_)                                                                           \
            memcpy(&var, &p_, sizeof p_);                                                 \
    } while (0)
// clang-format on

static ntp_env_library *add_library(ntp_env *env, const char *name)
{
    if (env->n_libraries >= NTP_ENV_MAX_LIBS)
        return NULL;
    ntp_env_library *l = &env->library[env->n_libraries++];
    copy(l->name, sizeof l->name, name);
    return l;
}

/* oneDNN's dnnl_version_t (dnnl_types.h), stable since 1.0. */
typedef struct dnnl_version_abi {
    int major, minor, patch;
    const char *hash;
    unsigned cpu_runtime, gpu_runtime;
} dnnl_version_abi;

typedef const dnnl_version_abi *(*version_fn)(void);
typedef int (*int_fn)(void);
typedef char *(*text_fn)(void);
typedef size_t (*size_fn)(void);
typedef int (*property_fn)(int, int *);

/* dnnl_cpu_isa_t as oneDNN 2.x numbers it (each ISA's bits include those of
 * the ISAs below it). */
static const char *dnnl_isa_name(int isa, char *buf, size_t len)
{
    static const struct {
        int value;
        const char *name;
    } names[] = {
        {0x0, "all"},
        {0x1, "sse41"},
        {0x3, "avx"},
        {0x7, "avx2"},
        {0xf, "avx512_mic"},
        {0x1f, "avx512_mic_4ops"},
        {0x27, "avx512_core"},
        {0x67, "avx512_core_vnni"},
        {0xe7, "avx512_core_bf16"},
        {0x3e7, "avx512_core_amx"},
        {0x407, "avx2_vnni"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].value == isa)
            return names[i].name;
    snprintf(buf, len, "dnnl_cpu_isa 0x%x", (unsigned)isa);
    return buf;
}

static void collect_onednn(ntp_env *env)
{
    LOOKUP(RTLD_DEFAULT, version_fn, "dnnl_version", version);
    if (!version)
        return;
    ntp_env_library *l = add_library(env, "oneDNN");
    if (!l)
        return;
    const dnnl_version_abi *v = version();
    const char *rt = v->cpu_runtime == 2u   ? "OpenMP"
                     : v->cpu_runtime == 4u ? "TBB"
                     : v->cpu_runtime == 1u ? "sequential"
                     : v->cpu_runtime == 8u ? "threadpool"
                                            : "other";
    bool hash = v->hash && *v->hash && strcmp(v->hash, "N/A") != 0;
    snprintf(l->version, sizeof l->version, "%d.%d.%d%s%s%s, %s runtime", v->major, v->minor,
             v->patch, hash ? " (git " : "", hash ? v->hash : "", hash ? ")" : "", rt);
    /* The ISA oneDNN's kernels are generated for: the CPU's best unless
     * ONEDNN_MAX_CPU_ISA (or DNNL_MAX_CPU_ISA) lowers it. */
    LOOKUP(RTLD_DEFAULT, int_fn, "dnnl_get_effective_cpu_isa", effective_isa);
    char buf[32];
    if (effective_isa)
        copy(l->isa, sizeof l->isa, dnnl_isa_name(effective_isa(), buf, sizeof buf));
    else
        copy(l->isa, sizeof l->isa, "n/a (no dnnl_get_effective_cpu_isa)");
}

static void collect_openblas(ntp_env *env)
{
    LOOKUP(RTLD_DEFAULT, text_fn, "openblas_get_config", config);
    if (!config)
        return;
    ntp_env_library *l = add_library(env, "OpenBLAS");
    if (!l)
        return;
    const char *c = config();
    if (c && strncmp(c, "OpenBLAS ", 9) == 0)
        c += 9; /* the name is already in the field */
    copy(l->version, sizeof l->version, c);
    /* The kernel set a DYNAMIC_ARCH build chose for this CPU. */
    LOOKUP(RTLD_DEFAULT, text_fn, "openblas_get_corename", core);
    char isa[96];
    if (core && core() && *core())
        snprintf(isa, sizeof isa, "%s kernels", core());
    else
        snprintf(isa, sizeof isa, "n/a (no openblas_get_corename)");
    copy(l->isa, sizeof l->isa, isa);
}

/* The path of the loaded library whose file name starts with `prefix`. */
typedef struct find_lib {
    const char *prefix;
    char path[512];
} find_lib;

static int find_lib_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    find_lib *f = data;
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    if (base && strncmp(base + 1, f->prefix, strlen(f->prefix)) == 0) {
        snprintf(f->path, sizeof f->path, "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}

/* The Debian package that installed `path` and its version, from dpkg's
 * database: "libxnnpack0 0.0~git20220216-1"; false where dpkg does not
 * know it (another distribution, a library built by hand). Only package
 * lists whose name contains `hint` are read. */
static bool dpkg_version(const char *path, const char *hint, char *out, size_t len)
{
    char real[4096];
    if (!realpath(path, real))
        snprintf(real, sizeof real, "%s", path);
    DIR *d = opendir("/var/lib/dpkg/info");
    if (!d)
        return false;
    char package[256] = "";
    struct dirent *e;
    while (!package[0] && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".list") != 0 || !strstr(e->d_name, hint))
            continue;
        char list[600], line[4096];
        snprintf(list, sizeof list, "/var/lib/dpkg/info/%s", e->d_name);
        FILE *f = fopen(list, "r");
        if (!f)
            continue;
        while (fgets(line, sizeof line, f)) {
            strip(line);
            char lreal[4096];
            if (strcmp(line, path) == 0 || strcmp(line, real) == 0 ||
                (realpath(line, lreal) && strcmp(lreal, real) == 0)) {
                snprintf(package, sizeof package, "%.*s", (int)(n - 5), e->d_name);
                break;
            }
        }
        fclose(f);
    }
    closedir(d);
    if (!package[0])
        return false;
    char *arch = strchr(package, ':'); /* "libxnnpack0:amd64" */
    if (arch)
        *arch = '\0';
    FILE *f = fopen("/var/lib/dpkg/status", "r");
    if (!f)
        return false;
    char line[1024];
    bool in = false, found = false;
    while (!found && fgets(line, sizeof line, f)) {
        strip(line);
        if (strncmp(line, "Package: ", 9) == 0)
            in = strcmp(line + 9, package) == 0;
        else if (in && strncmp(line, "Version: ", 9) == 0) {
            snprintf(out, len, "%.100s %.80s", package, line + 9);
            found = true;
        }
    }
    fclose(f);
    return found;
}

static void collect_xnnpack(ntp_env *env)
{
    find_lib f = {.prefix = "libXNNPACK"};
    if (!dl_iterate_phdr(find_lib_cb, &f)) {
        f.prefix = "libxnnpack";
        if (!dl_iterate_phdr(find_lib_cb, &f))
            return;
    }
    ntp_env_library *l = add_library(env, "XNNPACK");
    if (!l)
        return;
    /* XNNPACK has no version call (its snapshots are git commits): the
     * package that installed the loaded library says which. */
    char v[192];
    if (!dpkg_version(f.path, "xnnpack", v, sizeof v))
        snprintf(v, sizeof v, "n/a (no version call; %.120s is not from a Debian package)", f.path);
    copy(l->version, sizeof l->version, v);
    copy(l->isa, sizeof l->isa,
         "n/a (XNNPACK chooses kernels per operator and does not say which)");
}

static void collect_cuda(ntp_env *env)
{
    LOOKUP(RTLD_DEFAULT, size_fn, "cudnnGetVersion", cudnn);
    if (cudnn) {
        ntp_env_library *l = add_library(env, "cuDNN");
        if (l) {
            /* 8907 is 8.9.7; from cuDNN 9 on, 90100 is 9.1.0. */
            size_t v = cudnn();
            if (v >= 90000)
                snprintf(l->version, sizeof l->version, "%zu.%zu.%zu", v / 10000, v % 10000 / 100,
                         v % 100);
            else
                snprintf(l->version, sizeof l->version, "%zu.%zu.%zu", v / 1000, v % 1000 / 100,
                         v % 100);
            copy(l->isa, sizeof l->isa, "n/a (a GPU library)");
        }
    }
    /* The CUDA backend opens cuBLAS privately (RTLD_LOCAL) when it first
     * runs: find it among the loaded objects (no file system search), then
     * ask it without loading anything. */
    find_lib f = {.prefix = "libcublas.so"};
    if (!dl_iterate_phdr(find_lib_cb, &f))
        return;
    void *h = dlopen(f.path, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return;
    LOOKUP(h, property_fn, "cublasGetProperty", prop);
    ntp_env_library *l = add_library(env, "cuBLAS");
    int v[3] = {0, 0, 0};
    if (l && prop && prop(0, &v[0]) == 0 && prop(1, &v[1]) == 0 && prop(2, &v[2]) == 0)
        snprintf(l->version, sizeof l->version, "%d.%d.%d", v[0], v[1], v[2]);
    else if (l)
        snprintf(l->version, sizeof l->version, "n/a (%.150s has no cublasGetProperty)", f.path);
    if (l)
        copy(l->isa, sizeof l->isa, "n/a (a GPU library)");
    dlclose(h);
}

static ntp_env libraries;
static pthread_once_t libraries_once = PTHREAD_ONCE_INIT;

static void collect_libraries(void)
{
    collect_onednn(&libraries);
    collect_xnnpack(&libraries);
    collect_openblas(&libraries);
}

/* --- the CPU's frequency policy ---------------------------------------------------- */

/* The first line of a sysfs file into buf; false, with the reason in buf,
 * when it cannot be read. */
static bool read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(buf, len, "n/a (%s: %s)", path, strerror(errno));
        return false;
    }
    bool ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (!ok) {
        snprintf(buf, len, "n/a (%s is empty)", path);
        return false;
    }
    strip(buf);
    return true;
}

static void collect_frequency(ntp_env *env)
{
    const char *cpufreq = "/sys/devices/system/cpu/cpu0/cpufreq";
    char path[256], buf[256];
    DIR *d = opendir(cpufreq);
    bool have = d != NULL;
    if (d)
        closedir(d);
    if (have) {
        snprintf(path, sizeof path, "%s/scaling_governor", cpufreq);
        read_line(path, buf, sizeof buf);
        copy(env->governor, sizeof env->governor, buf);
    } else {
        /* A virtual machine usually has no cpufreq driver: the host sets
         * the frequency. */
        copy(env->governor, sizeof env->governor, "n/a (no cpufreq driver for CPU 0)");
    }
    /* The current frequency: cpufreq's, else the kernel's estimate in
     * /proc/cpuinfo (on x86 from APERF/MPERF or the TSC). */
    env->cpu_mhz = 0;
    snprintf(path, sizeof path, "%s/scaling_cur_freq", cpufreq);
    if (have && read_line(path, buf, sizeof buf) && atof(buf) > 0) {
        env->cpu_mhz = atof(buf) / 1000.0;
    } else {
        FILE *f = fopen("/proc/cpuinfo", "r");
        char line[1024];
        while (f && fgets(line, sizeof line, f))
            if (strncmp(line, "cpu MHz", 7) == 0 && strchr(line, ':')) {
                env->cpu_mhz = atof(strchr(line, ':') + 1);
                break;
            }
        if (f)
            fclose(f);
    }
    if (env->cpu_mhz > 0)
        snprintf(buf, sizeof buf, "%.0f MHz", env->cpu_mhz);
    else
        snprintf(buf, sizeof buf, "n/a (neither cpufreq nor /proc/cpuinfo gives it)");
    copy(env->cpu_mhz_text, sizeof env->cpu_mhz_text, buf);
    /* Turbo/boost: acpi-cpufreq and amd-pstate have a global switch;
     * intel_pstate says the opposite. */
    if (read_line("/sys/devices/system/cpu/cpufreq/boost", buf, sizeof buf)) {
        copy(env->boost, sizeof env->boost, strcmp(buf, "1") == 0 ? "on" : "off");
    } else if (read_line("/sys/devices/system/cpu/intel_pstate/no_turbo", buf, sizeof buf)) {
        copy(env->boost, sizeof env->boost, strcmp(buf, "1") == 0 ? "off" : "on");
    } else {
        copy(env->boost, sizeof env->boost,
             "n/a (no cpufreq/boost or intel_pstate/no_turbo in /sys)");
    }
    /* SMT: the kernel's control ("on", "off", "forceoff", "notsupported",
     * "notimplemented"). */
    if (read_line("/sys/devices/system/cpu/smt/control", buf, sizeof buf))
        copy(env->smt, sizeof env->smt, buf);
    else
        copy(env->smt, sizeof env->smt, "n/a (no /sys/devices/system/cpu/smt/control)");
}

static void collect_load(ntp_env *env)
{
    env->load_average[0] = env->load_average[1] = env->load_average[2] = -1;
    char buf[256];
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    double avg[3];
    if (ntp__loadavg_parse(buf, avg))
        memcpy(env->load_average, avg, sizeof avg);
}

/* A random (version 4) UUID: the run's identity in every store. Should the
 * kernel's generator fail (it does not block once the system is up), the
 * time, the process and a counter still make it unique on this machine. */
static void make_uuid(char *out, size_t len)
{
    unsigned char b[16];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
        static unsigned counter;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        uint64_t y = ((uint64_t)getpid() << 32) ^ __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
        memcpy(b, &x, 8);
        memcpy(b + 8, &y, 8);
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, len, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
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
    snprintf(env->libraries, sizeof env->libraries, "libxml2 %s, jansson %s, fftw %s, sqlite %s",
             LIBXML_DOTTED_VERSION, JANSSON_VERSION, fftw, sqlite3_libversion());
    copy(env->ntprof_version, sizeof env->ntprof_version, ntp_version());
    copy(env->git_revision, sizeof env->git_revision, ntp_git_revision());

    char host[256];
    if (gethostname(host, sizeof host) == 0) {
        host[sizeof host - 1] = '\0';
        copy(env->hostname, sizeof env->hostname, host);
    } else {
        copy(env->hostname, sizeof env->hostname, NULL);
    }
    /* The libraries do not change while the process lives, and finding
     * XNNPACK's package reads dpkg's database: once. */
    pthread_once(&libraries_once, collect_libraries);
    env->n_libraries = libraries.n_libraries;
    memcpy(env->library, libraries.library, sizeof env->library);
    /* The CUDA backend opens cuBLAS when it first runs: look each time. */
    collect_cuda(env);
    collect_frequency(env);
    collect_load(env);
    time_t now = time(NULL);
    struct tm tm;
    if (now == (time_t)-1 || !gmtime_r(&now, &tm) ||
        strftime(env->timestamp, sizeof env->timestamp, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        copy(env->timestamp, sizeof env->timestamp, NULL);
    make_uuid(env->run_uuid, sizeof env->run_uuid);
}
