/* External profilers steered by ntprof (docs/counters.md).
 *
 * The parent re-executes this process, with the same command line, under
 * perf or valgrind. The environment tells the child what to do:
 *   NTP_TOOL             perf-stat, perf-record, callgrind or cachegrind
 *   NTP_TOOL_ROWS        the parent's report row count (the child checks it)
 *   NTP_TOOL_ITERATIONS  iterations of the child's counting pass
 *   NTP_TOOL_SEGMENTS    "FIRST-LAST:NEVENTS;..." rows to count inside
 *   NTP_TOOL_BACKEND     the backend the parent ran (its command line may
 *                        name several)
 *   NTP_TOOL_CTL, NTP_TOOL_ACK   perf's control and acknowledgement fifos
 * perf starts with every event disabled (-D -1). Segment S has its own copy
 * of each event, named ntpS.E, and the child writes "enable ntpS.E" and
 * "disable ntpS.E" to the control fifo around the segment's rows and
 * waits for perf's "ack", so one perf run counts every segment apart.
 * callgrind starts with collection off; the child toggles it around each
 * row and dumps the row's costs under its own label. The parent then reads
 * perf's CSV (-x,), perf.data through `perf script`, or callgrind's dumps. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/ctx-impl.h"
#include "counters-impl.h"

/* AddressSanitizer, as gcc (__SANITIZE_ADDRESS__) and clang (__has_feature)
 * each announce it: valgrind cannot run such a binary. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NTP_CLANG_ASAN 1
#endif
#endif

extern char **environ;

static const struct {
    ntp_tool_kind kind;
    const char *name;
    const char *defaults; /* events when none are given; NULL: takes none */
} tools[] = {
    {NTP_TOOL_PERF_STAT, "perf-stat",
     "task-clock,page-faults,context-switches,cycles,instructions,branches,branch-misses,"
     "cache-references,cache-misses"},
    {NTP_TOOL_PERF_RECORD, "perf-record", "cpu-clock"},
    {NTP_TOOL_CALLGRIND, "callgrind", NULL},
    {NTP_TOOL_CACHEGRIND, "cachegrind", NULL},
    {NTP_TOOL_PAPI, "papi", "PAPI_TOT_INS,PAPI_TOT_CYC,perf::TASK-CLOCK,perf::PAGE-FAULTS"},
    {NTP_TOOL_NVTX, "nvtx", NULL},
};
#define N_TOOLS ((int)(sizeof tools / sizeof tools[0]))

const char *ntp__tool_name(ntp_tool_kind k)
{
    for (int i = 0; i < N_TOOLS; i++)
        if (tools[i].kind == k)
            return tools[i].name;
    return "none";
}

ntp_status ntp__tool_parse(ntp_ctx *ctx, const char *s, const ntp__where *at, ntp_tool_spec *out)
{
    memset(out, 0, sizeof *out);
    size_t n = strcspn(s, ":");
    for (int i = 0; i < N_TOOLS; i++) {
        if (strlen(tools[i].name) != n || strncmp(s, tools[i].name, n) != 0)
            continue;
        out->kind = tools[i].kind;
        snprintf(out->name, sizeof out->name, "%s", tools[i].name);
        const char *ev = s[n] == ':' ? s + n + 1 : NULL;
        if (ev && !tools[i].defaults)
            return ntp__error_at(ctx, NTP_STATUS_INVALID_ARGUMENT, at,
                                 ": %s takes no events (got '%s')", tools[i].name, ev);
        if (ev && !*ev)
            return ntp__error_at(ctx, NTP_STATUS_INVALID_ARGUMENT, at, ": no events after '%s:'",
                                 tools[i].name);
        if (ev && strlen(ev) >= sizeof out->events)
            return ntp__error_at(ctx, NTP_STATUS_INVALID_ARGUMENT, at, ": event list too long");
        snprintf(out->events, sizeof out->events, "%s",
                 ev                  ? ev
                 : tools[i].defaults ? tools[i].defaults
                                     : "");
        return NTP_STATUS_OK;
    }
    const char *names[N_TOOLS];
    char word[64];
    snprintf(word, sizeof word, "%.*s", (int)(n < 63 ? n : 63), s);
    for (int i = 0; i < N_TOOLS; i++)
        names[i] = tools[i].name;
    const char *near = ntp__nearest(word, names, N_TOOLS);
    return ntp__error_at(ctx, NTP_STATUS_UNKNOWN_NAME, at,
                         ": unknown tool '%s'%s%s%s (perf-stat[:EVENTS], perf-record[:EVENTS], "
                         "callgrind, cachegrind, papi[:EVENTS], nvtx)",
                         word, near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
}

void ntp__tool_event_name(int s, int e, char *buf, size_t len)
{
    snprintf(buf, len, "ntp%d.%d", s, e);
}

/* --- running programs --------------------------------------------------------------- */

/* Start argv with envp (NULL: ours), stdout and stderr into `log` (NULL:
 * a pipe returned in *out_fd), stdin from /dev/null. */
static int spawn(char *const argv[], char *const envp[], const char *log, int *out_fd, pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    int pfd[2] = {-1, -1};
    if (posix_spawn_file_actions_init(&fa) != 0)
        return -1;
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (log) {
        posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
    } else {
        if (pipe(pfd) != 0) {
            posix_spawn_file_actions_destroy(&fa);
            return -1;
        }
        posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
        posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
        posix_spawn_file_actions_addclose(&fa, pfd[0]);
        posix_spawn_file_actions_addclose(&fa, pfd[1]);
    }
    int r = posix_spawn(pid, argv[0], &fa, NULL, argv, envp ? envp : environ);
    posix_spawn_file_actions_destroy(&fa);
    if (!log) {
        close(pfd[1]);
        if (r != 0)
            close(pfd[0]);
        else
            *out_fd = pfd[0];
    }
    if (r != 0) {
        errno = r;
        return -1;
    }
    return 0;
}

static int wait_for(pid_t pid)
{
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return status;
}

/* Run argv, keep the first len-1 bytes of its output; its exit status. */
static int capture(char *const argv[], char *out, size_t len)
{
    int fd;
    pid_t pid;
    out[0] = 0;
    if (spawn(argv, NULL, NULL, &fd, &pid) != 0)
        return -1;
    size_t used = 0;
    char junk[4096];
    for (;;) {
        ssize_t r =
            used + 1 < len ? read(fd, out + used, len - 1 - used) : read(fd, junk, sizeof junk);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (used + 1 < len)
            used += (size_t)r;
    }
    out[used] = 0;
    close(fd);
    int st = wait_for(pid);
    return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool on_path(const char *name, char *path, size_t len)
{
    const char *p = getenv("PATH");
    if (!p)
        p = "/usr/local/bin:/usr/bin:/bin";
    while (*p) {
        size_t n = strcspn(p, ":");
        snprintf(path, len, "%.*s/%s", (int)n, p, name);
        if (n > 0 && access(path, X_OK) == 0)
            return true;
        p += n + (p[n] == ':');
    }
    return false;
}

/* A candidate binary works when `BIN --version` exits 0 and says `want`. */
static bool works(const char *bin, const char *want, char *version, size_t vlen)
{
    char *argv[] = {(char *)bin, (char *)"--version", NULL};
    char out[256];
    if (capture(argv, out, sizeof out) != 0 || !strstr(out, want))
        return false;
    out[strcspn(out, "\n")] = 0;
    /* The first line of the version text, cut to fit. */
    snprintf(version, vlen, "%.*s", (int)(vlen - 1), out);
    return true;
}

bool ntp__tool_find_perf(char *path, size_t len, char *version, size_t vlen)
{
    /* Debian's /usr/bin/perf may be a wrapper that looks for perf_<kernel
     * version> and fails on another kernel; the versioned binaries it
     * would run work on any kernel, so try them too, newest first. */
    const char *env = getenv("NTP_PERF");
    if (env && *env) {
        snprintf(path, len, "%s", env);
        if (works(path, "perf version", version, vlen))
            return true;
        snprintf(version, vlen, "NTP_PERF=%s does not run (`%s --version` failed)", env, env);
        return false;
    }
    if (on_path("perf", path, len) && works(path, "perf version", version, vlen))
        return true;
    const char *dirs[] = {"/usr/bin", "/usr/sbin", "/usr/local/bin"};
    char best[512] = "";
    for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++) {
        DIR *dir = opendir(dirs[d]);
        struct dirent *de;
        while (dir && (de = readdir(dir))) {
            if (strncmp(de->d_name, "perf_", 5) != 0 || !isdigit((unsigned char)de->d_name[5]))
                continue;
            char cand[512], ver[128];
            snprintf(cand, sizeof cand, "%s/%s", dirs[d], de->d_name);
            if (strverscmp(cand, best) > 0 && works(cand, "perf version", ver, sizeof ver))
                snprintf(best, sizeof best, "%s", cand);
        }
        if (dir)
            closedir(dir);
    }
    if (best[0] && works(best, "perf version", version, vlen)) {
        snprintf(path, len, "%s", best);
        return true;
    }
    snprintf(version, vlen,
             "no working perf: none on PATH and no /usr/bin/perf_<version> "
             "(install linux-perf, or set NTP_PERF to the binary)");
    return false;
}

bool ntp__tool_find_valgrind(char *path, size_t len, char *version, size_t vlen)
{
    const char *env = getenv("NTP_VALGRIND");
    if (env && *env)
        snprintf(path, len, "%s", env);
    else if (!on_path("valgrind", path, len)) {
        snprintf(version, vlen, "no valgrind on PATH (install valgrind, or set NTP_VALGRIND)");
        return false;
    }
    if (works(path, "valgrind-", version, vlen))
        return true;
    snprintf(version, vlen, "%s does not run (`%s --version` failed)", path, path);
    return false;
}

/* --- the child's command line and environment ------------------------------------------- */

static void free_argv(char **v)
{
    if (!v)
        return;
    for (int i = 0; v[i]; i++)
        free(v[i]);
    free(v);
}

/* prefix... followed by this process's own command line with argv[0]
 * replaced by the executable's real path (so the child is this very
 * binary even when it was started through PATH or a symlink). */
static char **child_argv(char *const *prefix, int n_prefix)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    int fd = open("/proc/self/cmdline", O_RDONLY);
    if (n <= 0 || fd < 0) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    exe[n] = 0;
    size_t cap = 4096, used = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf)
            break;
        if (used == cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
        }
        ssize_t r = read(fd, buf + used, cap - used);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        used += (size_t)r;
    }
    close(fd);
    if (!buf)
        return NULL;
    int argc = 0;
    for (size_t i = 0; i < used; i++)
        argc += buf[i] == 0;
    char **v = calloc((size_t)(n_prefix + argc + 2), sizeof *v);
    int k = 0;
    bool ok = v != NULL;
    for (int i = 0; ok && i < n_prefix; i++)
        ok = (v[k++] = ntp__strdup(prefix[i])) != NULL;
    size_t pos = 0;
    for (int i = 0; ok && i < argc; i++) {
        ok = (v[k++] = ntp__strdup(i == 0 ? exe : buf + pos)) != NULL;
        pos += strlen(buf + pos) + 1;
    }
    free(buf);
    if (!ok) {
        free_argv(v);
        return NULL;
    }
    return v;
}

/* environ without NTP_TOOL*, plus `add`. */
static char **child_env(char *const *add, int n_add)
{
    int n = 0;
    while (environ[n])
        n++;
    char **e = calloc((size_t)(n + n_add + 1), sizeof *e);
    if (!e)
        return NULL;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (strncmp(environ[i], "NTP_TOOL", 8) != 0)
            e[k++] = environ[i];
    for (int i = 0; i < n_add; i++)
        e[k++] = add[i];
    return e;
}

/* The last line of a log that says something, for error messages. */
static void log_tail(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    out[0] = 0;
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *l = line;
        while (*l == ' ' || (*l == '=' && l[1] == '='))
            l++;
        if (strlen(l) > 3)
            snprintf(out, len, "%s", line);
    }
    fclose(f);
}

/* --- folding what the tools wrote ---------------------------------------------------- */

static ntp_tool_value *add_value(ntp_tool_result *res, int seg, const char *name)
{
    if (res->n == res->cap) {
        int cap = res->cap ? 2 * res->cap : 64;
        ntp_tool_value *v = realloc(res->v, (size_t)cap * sizeof *v);
        if (!v)
            return NULL;
        res->v = v;
        res->cap = cap;
    }
    ntp_tool_value *v = &res->v[res->n++];
    memset(v, 0, sizeof *v);
    v->seg = seg;
    v->running = 1;
    snprintf(v->name, sizeof v->name, "%s", name);
    return v;
}

void ntp__tool_result_free(ntp_tool_result *res)
{
    free(res->v);
    memset(res, 0, sizeof *res);
}

static void add_note(ntp_tool_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add_note(ntp_tool_result *res, const char *fmt, ...)
{
    if (res->n_notes >= 4)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->notes[res->n_notes++], sizeof res->notes[0], fmt, ap);
    va_end(ap);
}

/* The i-th comma-separated event of list. */
static bool nth_event(const char *list, int i, char *out, size_t len)
{
    const char *p = list;
    for (int k = 0; *p; k++) {
        size_t n = strcspn(p, ",");
        if (k == i) {
            snprintf(out, len, "%.*s", (int)n, p);
            return n > 0;
        }
        p += n + (p[n] == ',');
    }
    return false;
}

static int count_events(const char *list)
{
    int n = 0;
    char ev[128];
    while (nth_event(list, n, ev, sizeof ev))
        n++;
    return n;
}

/* perf's -e argument for event `ev` renamed `name`: "cycles:u" becomes
 * "cycles/name=N/u", "msr/tsc/" becomes "msr/tsc,name=N/". */
static bool perf_event_arg(const char *ev, const char *name, char *out, size_t len)
{
    const char *slash = strchr(ev, '/');
    if (slash) {
        const char *last = strrchr(ev, '/');
        if (last == slash)
            return false;
        snprintf(out, len, "%.*s,name=%s%s", (int)(last - ev), ev, name, last);
        return true;
    }
    size_t n = strcspn(ev, ":");
    snprintf(out, len, "%.*s/name=%s/%s", (int)n, ev, name, ev[n] == ':' ? ev + n + 1 : "");
    return true;
}

/* perf stat -x, lines: value,unit,event,run time,percent running,... */
static void parse_perf_csv(const char *path, const ntp_tool_seg *segs, int n_segs, int iterations,
                           ntp_tool_result *res)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#')
            continue;
        char *fld[8] = {0};
        int nf = 0;
        char *p = line;
        while (nf < 8) {
            fld[nf++] = p;
            char *c = strchr(p, ',');
            if (!c)
                break;
            *c = 0;
            p = c + 1;
        }
        int s, e;
        if (nf < 3 || sscanf(fld[2], "ntp%d.%d", &s, &e) != 2 || s < 0 || s >= n_segs)
            continue;
        char ev[128], name[NTP_CNAME];
        if (!nth_event(segs[s].events, e, ev, sizeof ev))
            continue;
        snprintf(name, sizeof name, "perf-stat:%.80s", ev);
        ntp_tool_value *v = add_value(res, s, name);
        if (!v)
            return;
        if (fld[0][0] == '<') {
            bool ns = strstr(fld[0], "not supported") != NULL;
            snprintf(v->reason, sizeof v->reason, "perf stat: %.200s%s", fld[0],
                     ns && !ntp__have_cpu_pmu()
                         ? " (no hardware PMU: the kernel exposes no CPU performance counters)"
                     : ns ? ""
                          : " (the event never ran inside the range)");
            continue;
        }
        double x = strtod(fld[0], NULL);
        if (strcmp(fld[1], "msec") == 0) {
            x *= 1e6;
            snprintf(v->unit, sizeof v->unit, "ns");
        } else {
            snprintf(v->unit, sizeof v->unit, "%s", fld[1]);
        }
        v->value = x / (iterations > 0 ? iterations : 1);
        v->available = true;
        double pct = nf >= 5 && fld[4][0] ? strtod(fld[4], NULL) : 100;
        v->running = pct / 100;
        v->scaled = pct < 99.995;
    }
    fclose(f);
}

/* Samples per event in perf.data, through `perf script -F event`. */
static ntp_status count_samples(ntp_ctx *ctx, const char *perf, const char *data, int n_segs,
                                ntp_tool_result *res, const ntp_tool_seg *segs)
{
    char *argv[] = {(char *)perf, (char *)"script", (char *)"-i", (char *)data,
                    (char *)"-F", (char *)"event",  NULL};
    int fd;
    pid_t pid;
    if (spawn(argv, NULL, NULL, &fd, &pid) != 0)
        return ntp__opt_error(ctx, NTP_STATUS_IO_ERROR, "ntp_run_opts.tool",
                              "perf-record: cannot run perf script: %s", strerror(errno));
    FILE *f = fdopen(fd, "r");
    int *counts = calloc((size_t)n_segs * 64 + 1, sizeof *counts);
    char line[256];
    while (f && counts && fgets(line, sizeof line, f)) {
        int s, e;
        char *p = line;
        while (*p == ' ')
            p++;
        if (sscanf(p, "ntp%d.%d", &s, &e) == 2 && s >= 0 && s < n_segs && e >= 0 && e < 64)
            counts[s * 64 + e]++;
    }
    if (f)
        fclose(f);
    else
        close(fd);
    int st = wait_for(pid);
    ntp_status ret = NTP_STATUS_OK;
    if (!counts)
        ret = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    else if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        ret = ntp__opt_error(ctx, NTP_STATUS_BACKEND_ERROR, "ntp_run_opts.tool",
                             "perf-record: `perf script -i %s` failed", data);
    for (int s = 0; !ret && s < n_segs; s++) {
        int ne = count_events(segs[s].events);
        for (int e = 0; e < ne && e < 64; e++) {
            char ev[128], name[NTP_CNAME];
            nth_event(segs[s].events, e, ev, sizeof ev);
            snprintf(name, sizeof name, "perf-record:%.70s-samples", ev);
            ntp_tool_value *v = add_value(res, s, name);
            if (!v) {
                ret = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
                break;
            }
            v->value = counts[s * 64 + e];
            v->available = true;
        }
    }
    free(counts);
    return ret;
}

/* callgrind's dumps "<dir>/callgrind.out.N": the summary of each dump
 * labelled "ntprof row K" is added to row K's segment (the parent makes
 * one segment per counted row for callgrind). */
static ntp_status parse_callgrind(ntp_ctx *ctx, const char *dir, const char *tool, int n_segs,
                                  const ntp_tool_seg *segs, int iterations, ntp_tool_result *res)
{
    enum { MAXE = 16 };
    double *sum = calloc((size_t)n_segs * MAXE + 1, sizeof *sum);
    char names[MAXE][16];
    int n_names = 0, dumps = 0;
    char caches[3][128] = {"", "", ""};
    DIR *d = opendir(dir);
    if (!sum || !d) {
        free(sum);
        if (d)
            closedir(d);
        return ntp__error(ctx, d ? NTP_STATUS_OUT_OF_MEMORY : NTP_STATUS_IO_ERROR,
                          "ntp_run_opts.tool %s: cannot read %s", tool, dir);
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, "callgrind.out.", 14) != 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        char line[4096];
        int row = -1;
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = 0;
            int k;
            if (sscanf(line, "desc: Trigger: Client Request: ntprof row %d", &k) == 1)
                row = k;
            for (int c = 0; c < 3; c++) {
                static const char *const pre[] = {
                    "desc: I1 cache: ", "desc: D1 cache: ", "desc: LL cache: "};
                if (strncmp(line, pre[c], strlen(pre[c])) == 0) {
                    /* Truncation of a long description is fine. */
                    size_t l = strnlen(line + 6, sizeof caches[c] - 1);
                    memcpy(caches[c], line + 6, l);
                    caches[c][l] = '\0';
                }
            }
            if (strncmp(line, "events: ", 8) == 0 && n_names == 0) {
                char *save = NULL;
                for (char *t = strtok_r(line + 8, " ", &save); t && n_names < MAXE;
                     t = strtok_r(NULL, " ", &save))
                    snprintf(names[n_names++], sizeof names[0], "%s", t);
            }
            if (strncmp(line, "summary: ", 9) == 0)
                break;
        }
        fclose(f);
        int seg = -1;
        for (int s = 0; s < n_segs; s++)
            if (segs[s].first == row)
                seg = s;
        if (seg < 0)
            continue;
        /* Trailing zero costs are left out of a summary line. */
        char *p = line + 9;
        for (int i = 0; i < n_names; i++) {
            char *end;
            double v = strtod(p, &end);
            if (end == p)
                break;
            sum[seg * MAXE + i] += v;
            p = end;
        }
        dumps++;
    }
    closedir(d);
    for (int s = 0; s < n_segs; s++)
        for (int i = 0; i < n_names; i++) {
            char name[NTP_CNAME];
            if (snprintf(name, sizeof name, "%s:%s", tool, names[i]) >= (int)sizeof name)
                continue; /* an event name too long to key is left out */
            ntp_tool_value *v = add_value(res, s, name);
            if (!v) {
                free(sum);
                return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            }
            v->value = sum[s * MAXE + i] / (iterations > 0 ? iterations : 1);
            v->available = true;
        }
    free(sum);
    if (dumps == 0)
        return ntp__opt_error(ctx, NTP_STATUS_BACKEND_ERROR, "ntp_run_opts.tool",
                              "%s: callgrind wrote no per-row dumps in %s", tool, dir);
    if (caches[1][0])
        add_note(res, "%s simulated %s; %s; %s", tool, caches[0], caches[1], caches[2]);
    return NTP_STATUS_OK;
}

/* --- the parent ---------------------------------------------------------------------------- */

ntp_status ntp__tool_launch(ntp_ctx *ctx, const ntp_tool_spec *t, const char *backend,
                            const ntp_tool_seg *segs, int n_segs, int n_rows, int iterations,
                            const char *dir, ntp_tool_result *res)
{
    bool perf = t->kind == NTP_TOOL_PERF_STAT || t->kind == NTP_TOOL_PERF_RECORD;
    bool vg = t->kind == NTP_TOOL_CALLGRIND || t->kind == NTP_TOOL_CACHEGRIND;
    if (!perf && !vg)
        return ntp__error(ctx, NTP_STATUS_INTERNAL, "tool %s is not launched", t->name);
    if (n_segs > NTP_TOOL_MAX_SEGS)
        return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_run_opts.tool",
                              "%s: at most %d segments", t->name, NTP_TOOL_MAX_SEGS);
    char bin[512], version[256];
    if (perf && !ntp__tool_find_perf(bin, sizeof bin, version, sizeof version))
        return ntp__opt_error(ctx, NTP_STATUS_UNSUPPORTED, "ntp_run_opts.tool", "%s: %s", t->name,
                              version);
    if (vg && !ntp__tool_find_valgrind(bin, sizeof bin, version, sizeof version))
        return ntp__opt_error(ctx, NTP_STATUS_UNSUPPORTED, "ntp_run_opts.tool", "%s: %s", t->name,
                              version);
    if (vg && !ntp__valgrind_headers())
        return ntp__opt_error(ctx, NTP_STATUS_UNSUPPORTED, "ntp_run_opts.tool",
                              "%s: built without valgrind's headers (valgrind/callgrind.h), so "
                              "the child cannot switch collection per layer",
                              t->name);
#if defined(__SANITIZE_ADDRESS__) || defined(NTP_CLANG_ASAN)
    if (vg)
        return ntp__opt_error(ctx, NTP_STATUS_UNSUPPORTED, "ntp_run_opts.tool",
                              "%s: this ntprof is built with AddressSanitizer, which cannot run "
                              "under valgrind; use a build without NTP_SANITIZE",
                              t->name);
#endif
    char ctl[4096], ack[4096], out[4096], log[4096];
    snprintf(ctl, sizeof ctl, "%s/ctl.fifo", dir);
    snprintf(ack, sizeof ack, "%s/ack.fifo", dir);
    snprintf(log, sizeof log, "%s/%s.log", dir, t->name);
    snprintf(out, sizeof out, "%s/%s", dir,
             t->kind == NTP_TOOL_PERF_STAT     ? "perf-stat.csv"
             : t->kind == NTP_TOOL_PERF_RECORD ? "perf.data"
                                               : "callgrind.out");

    /* The tool's arguments, then the child's command line. */
    int n_events = 0;
    for (int s = 0; s < n_segs; s++)
        n_events += perf ? count_events(segs[s].events) : 0;
    char **pre = calloc((size_t)(2 * n_events + 16), sizeof *pre);
    char **envp = NULL, **argv = NULL;
    char *seg_env = NULL;
    char env_tool[64], env_rows[64], env_iter[64], env_ctl[4200], env_ack[4200], env_be[128];
    ntp_status st = NTP_STATUS_OK;
    int np = 0;
    if (!pre)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    char ctl_arg[8300], log_arg[4200], out_arg[4200];
    pre[np++] = ntp__strdup(bin);
    if (perf) {
        unlink(ctl);
        unlink(ack);
        if (mkfifo(ctl, 0600) != 0 || mkfifo(ack, 0600) != 0) {
            st = ntp__opt_error(ctx, NTP_STATUS_IO_ERROR, "ntp_run_opts.tool",
                                "%s: cannot make fifos in %s: %s", t->name, dir, strerror(errno));
            goto done;
        }
        snprintf(ctl_arg, sizeof ctl_arg, "fifo:%s,%s", ctl, ack);
        if (t->kind == NTP_TOOL_PERF_STAT) {
            pre[np++] = ntp__strdup("stat");
            pre[np++] = ntp__strdup("-x,");
        } else {
            pre[np++] = ntp__strdup("record");
            pre[np++] = ntp__strdup("-q");
        }
        pre[np++] = ntp__strdup("-o");
        pre[np++] = ntp__strdup(out);
        pre[np++] = ntp__strdup("--control");
        pre[np++] = ntp__strdup(ctl_arg);
        pre[np++] = ntp__strdup("-D");
        pre[np++] = ntp__strdup("-1");
        for (int s = 0; s < n_segs; s++)
            for (int e = 0; e < count_events(segs[s].events); e++) {
                char ev[128], name[64], arg[256];
                nth_event(segs[s].events, e, ev, sizeof ev);
                ntp__tool_event_name(s, e, name, sizeof name);
                if (!perf_event_arg(ev, name, arg, sizeof arg)) {
                    st = ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_run_opts.tool",
                                        "%s: cannot name event '%s' (use perf's pmu/event/ or "
                                        "name[:modifiers])",
                                        t->name, ev);
                    goto done;
                }
                pre[np++] = ntp__strdup("-e");
                pre[np++] = ntp__strdup(arg);
            }
    } else {
        snprintf(out_arg, sizeof out_arg, "--callgrind-out-file=%s", out);
        snprintf(log_arg, sizeof log_arg, "--log-file=%s", log);
        pre[np++] = ntp__strdup("--tool=callgrind");
        pre[np++] = ntp__strdup("--collect-atstart=no");
        if (t->kind == NTP_TOOL_CACHEGRIND) {
            pre[np++] = ntp__strdup("--cache-sim=yes");
            pre[np++] = ntp__strdup("--branch-sim=yes");
        }
        pre[np++] = ntp__strdup(out_arg);
        pre[np++] = ntp__strdup(log_arg);
    }
    pre[np++] = ntp__strdup("--");
    for (int i = 0; i < np; i++)
        if (!pre[i]) {
            st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            goto done;
        }
    if (!(argv = child_argv(pre, np))) {
        st = ntp__opt_error(ctx, NTP_STATUS_IO_ERROR, "ntp_run_opts.tool",
                            "%s: cannot read this process's command line (/proc/self)", t->name);
        goto done;
    }
    size_t cap = (size_t)n_segs * 40 + 64, used;
    seg_env = malloc(cap);
    if (!seg_env) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    used = (size_t)snprintf(seg_env, cap, "NTP_TOOL_SEGMENTS=");
    for (int s = 0; s < n_segs; s++) {
        used +=
            (size_t)snprintf(seg_env + used, cap - used, "%s%d-%d:%d", s ? ";" : "", segs[s].first,
                             segs[s].last, perf ? count_events(segs[s].events) : 0);
    }
    snprintf(env_tool, sizeof env_tool, "NTP_TOOL=%s", t->name);
    snprintf(env_rows, sizeof env_rows, "NTP_TOOL_ROWS=%d", n_rows);
    snprintf(env_iter, sizeof env_iter, "NTP_TOOL_ITERATIONS=%d", iterations);
    snprintf(env_ctl, sizeof env_ctl, "NTP_TOOL_CTL=%s", ctl);
    snprintf(env_ack, sizeof env_ack, "NTP_TOOL_ACK=%s", ack);
    snprintf(env_be, sizeof env_be, "NTP_TOOL_BACKEND=%s", backend ? backend : "");
    char *add[] = {env_tool, env_rows, env_iter, seg_env, env_be, env_ctl, env_ack};
    if (!(envp = child_env(add, perf ? 7 : 5))) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    pid_t pid;
    /* valgrind writes its own log (--log-file); the child's output goes
     * there too, through valgrind's stdout. */
    char child_log[4200];
    snprintf(child_log, sizeof child_log, "%s/child.log", dir);
    if (spawn(argv, envp, perf ? log : child_log, NULL, &pid) != 0) {
        st = ntp__opt_error(ctx, NTP_STATUS_IO_ERROR, "ntp_run_opts.tool",
                            "%s: cannot start %s: %s", t->name, bin, strerror(errno));
        goto done;
    }
    int ws = wait_for(pid);
    if (ws < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
        char tail[512], tail2[512];
        log_tail(log, tail, sizeof tail);
        log_tail(child_log, tail2, sizeof tail2);
        st = ntp__opt_error(ctx, NTP_STATUS_BACKEND_ERROR, "ntp_run_opts.tool",
                            "%s: the run under %s %s %d; %s%s%s (log: %s)", t->name, bin,
                            ws >= 0 && WIFSIGNALED(ws) ? "was killed by signal"
                                                       : "exited with status",
                            ws < 0            ? -1
                            : WIFSIGNALED(ws) ? WTERMSIG(ws)
                                              : WEXITSTATUS(ws),
                            tail2[0] ? tail2 : tail, tail2[0] && tail[0] ? "; " : "",
                            tail2[0] ? tail : "", perf ? log : child_log);
        goto done;
    }
    if (t->kind == NTP_TOOL_PERF_STAT) {
        parse_perf_csv(out, segs, n_segs, iterations, res);
        add_note(res,
                 "perf-stat: %s, events enabled only inside each segment (-D -1 and "
                 "--control); perf stat prints task-clock in msec with two decimals, so a "
                 "per-iteration figure is good to 10 \xC2\xB5s / iterations",
                 version);
    } else if (t->kind == NTP_TOOL_PERF_RECORD) {
        st = count_samples(ctx, bin, out, n_segs, res, segs);
        add_note(res,
                 "perf-record: %s; `perf report -i %s` shows one event per segment, "
                 "ntpS.E is segment S's event E",
                 out, out);
    } else {
        st = parse_callgrind(ctx, dir, t->name, n_segs, segs, iterations, res);
        add_note(res,
                 "%s: %s, collection switched on only inside each row; dumps kept in %s "
                 "(callgrind_annotate or kcachegrind open them)",
                 t->name, version, dir);
        if (t->kind == NTP_TOOL_CACHEGRIND)
            add_note(res, "cachegrind: valgrind's cachegrind cannot be started and stopped by "
                          "the program before valgrind 3.22 (--instr-at-start=no, "
                          "CACHEGRIND_START_INSTRUMENTATION) and writes one file per process after "
                          "it, so ntprof runs callgrind with --cache-sim=yes --branch-sim=yes: the "
                          "same cache and branch simulator, with a dump per layer");
    }
done:
    if (perf) {
        unlink(ctl);
        unlink(ack);
    }
    free_argv(pre);
    free_argv(argv);
    free(envp);
    free(seg_env);
    return st;
}

/* --- the child ------------------------------------------------------------------------------- */

bool ntp__tool_child_env(void)
{
    const char *t = getenv("NTP_TOOL");
    return t && *t;
}

static bool env_int(const char *name, int lo, int *out)
{
    const char *v = getenv(name);
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || end == v || *end || x < lo || x > 100000000)
        return false;
    *out = (int)x;
    return true;
}

ntp_status ntp__tool_child_open(ntp_ctx *ctx, ntp_tool_child *c)
{
    memset(c, 0, sizeof *c);
    c->ctl_fd = c->ack_fd = -1;
    ntp_tool_spec spec;
    ntp_status st =
        ntp__tool_parse(ctx, getenv("NTP_TOOL"), &(ntp__where){.option = "NTP_TOOL"}, &spec);
    if (st)
        return st;
    c->kind = spec.kind;
    const char *segs = getenv("NTP_TOOL_SEGMENTS");
    if (!env_int("NTP_TOOL_ROWS", 0, &c->n_rows) ||
        !env_int("NTP_TOOL_ITERATIONS", 1, &c->iterations) || !segs)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "NTP_TOOL is set but NTP_TOOL_ROWS, NTP_TOOL_ITERATIONS or "
                          "NTP_TOOL_SEGMENTS is missing or malformed");
    int n = 1;
    for (const char *p = segs; *p; p++)
        n += *p == ';';
    c->segs = calloc((size_t)n, sizeof *c->segs);
    c->seg_events = calloc((size_t)n, sizeof *c->seg_events);
    if (!c->segs || !c->seg_events) {
        ntp__tool_child_close(c);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    const char *p = segs;
    while (*p && c->n_segs < n) {
        int a, b, ne, used = 0;
        if (sscanf(p, "%d-%d:%d%n", &a, &b, &ne, &used) != 3 || a < 0 || b < a || b >= c->n_rows ||
            ne < 0) {
            ntp__tool_child_close(c);
            return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                              "NTP_TOOL_SEGMENTS is malformed at '%.40s'", p);
        }
        c->segs[c->n_segs].first = a;
        c->segs[c->n_segs].last = b;
        c->segs[c->n_segs].marker = -1;
        c->seg_events[c->n_segs++] = ne;
        p += used;
        if (*p == ';')
            p++;
    }
    if (c->kind == NTP_TOOL_PERF_STAT || c->kind == NTP_TOOL_PERF_RECORD) {
        const char *ctl = getenv("NTP_TOOL_CTL"), *ack = getenv("NTP_TOOL_ACK");
        if (ctl)
            c->ctl_fd = open(ctl, O_WRONLY | O_CLOEXEC);
        if (ack)
            c->ack_fd = open(ack, O_RDONLY | O_CLOEXEC);
        if (c->ctl_fd < 0 || c->ack_fd < 0) {
            ntp__tool_child_close(c);
            return ntp__error(ctx, NTP_STATUS_IO_ERROR,
                              "NTP_TOOL=%s: cannot open perf's control fifos (NTP_TOOL_CTL, "
                              "NTP_TOOL_ACK): %s",
                              spec.name, strerror(errno));
        }
    }
    return NTP_STATUS_OK;
}

void ntp__tool_child_close(ntp_tool_child *c)
{
    if (c->ctl_fd >= 0)
        close(c->ctl_fd);
    if (c->ack_fd >= 0)
        close(c->ack_fd);
    free(c->segs);
    free(c->seg_events);
    memset(c, 0, sizeof *c);
    c->ctl_fd = c->ack_fd = -1;
}

/* One command to perf and its "ack". perf answers within microseconds;
 * ten seconds without an answer means perf is gone. */
static ntp_status perf_command(ntp_ctx *ctx, ntp_tool_child *c, const char *cmd)
{
    size_t n = strlen(cmd), off = 0;
    while (off < n) {
        ssize_t w = write(c->ctl_fd, cmd + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return ntp__error(ctx, NTP_STATUS_IO_ERROR, "perf control fifo: %s", strerror(errno));
        off += (size_t)w;
    }
    char buf[64];
    size_t got = 0;
    while (got + 1 < sizeof buf) {
        struct pollfd pf = {.fd = c->ack_fd, .events = POLLIN};
        int r = poll(&pf, 1, 10000);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return ntp__error(ctx, NTP_STATUS_IO_ERROR,
                              "perf did not acknowledge '%.*s' within 10 s", (int)(n - 1), cmd);
        ssize_t k = read(c->ack_fd, buf + got, 1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return ntp__error(ctx, NTP_STATUS_IO_ERROR, "perf closed its acknowledgement fifo");
        if (buf[got] == '\n' || buf[got] == 0)
            break;
        got++;
    }
    /* perf writes "ack\n" with its terminating NUL in one write(), so the
     * NUL is already there when the newline is: consume it, or it would
     * start the next answer. */
    if (got < sizeof buf && buf[got] == '\n') {
        struct pollfd pf = {.fd = c->ack_fd, .events = POLLIN};
        char nul;
        if (poll(&pf, 1, 0) == 1 && read(c->ack_fd, &nul, 1) == 1 && nul != 0) {
            buf[0] = 0;
            got = 0;
        }
    }
    buf[got] = 0;
    if (strcmp(buf, "ack") != 0)
        return ntp__error(ctx, NTP_STATUS_BACKEND_ERROR, "perf answered '%s' to '%.*s'", buf,
                          (int)(n - 1), cmd);
    return NTP_STATUS_OK;
}

ntp_status ntp__tool_child_perf(ntp_ctx *ctx, ntp_tool_child *c, int s, bool enable)
{
    for (int e = 0; e < c->seg_events[s]; e++) {
        char name[64], cmd[96];
        ntp__tool_event_name(s, e, name, sizeof name);
        snprintf(cmd, sizeof cmd, "%s %s\n", enable ? "enable" : "disable", name);
        ntp_status st = perf_command(ctx, c, cmd);
        if (st)
            return st;
    }
    return NTP_STATUS_OK;
}
