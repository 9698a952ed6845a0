/* Nsight Compute and Nsight Systems over a run (docs/gpu.md).
 *
 * --tool ncu[:MARKER] re-runs the same command line under
 *   ncu --nvtx --nvtx-include "<row>/" ... --metrics <m> --csv --page raw
 * with --tool nvtx in the child, so that the child's counting pass wraps
 * every row in an NVTX push/pop range named after it and Nsight Compute
 * profiles exactly the kernels of the chosen marker's rows (one iteration;
 * kernels outside the ranges, the timing passes among them, are not
 * profiled). The metrics of every profiled kernel are folded into the
 * marker as duration-weighted means: SM throughput, DRAM throughput and
 * achieved occupancy, each as a percentage of the device's peak, plus the
 * kernels' summed duration and count.
 *
 * --tool nsys re-runs it under `nsys profile --trace=cuda,nvtx` and leaves
 * the timeline (.nsys-rep) in the tool directory, named in the run's notes.
 *
 * Either is refused with one line when the tool is not installed: ncu and
 * nsys are found through $NTP_NCU / $NTP_NSYS, then PATH, then the CUDA
 * toolkit's bin directory. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/backend-impl.h"
#include "core/ctx-impl.h"
#include "counters-impl.h"
#include "tools-gpu-impl.h"

extern char **environ;

static bool executable(const char *p)
{
    struct stat st;
    return p && *p && stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

bool ntp__gpu_tool_find(const char *tool, char *path, size_t len, char *why, size_t wlen)
{
    if (!path || len == 0)
        return false;
    const char *env = strcmp(tool, "ncu") == 0 ? "NTP_NCU" : "NTP_NSYS";
    const char *v = getenv(env);
    if (v && *v) {
        snprintf(path, len, "%s", v);
        if (executable(path))
            return true;
        snprintf(why, wlen, "%s=%s is not an executable", env, v);
        return false;
    }
    const char *p = getenv("PATH");
    while (p && *p) {
        size_t n = strcspn(p, ":");
        snprintf(path, len, "%.*s/%s", (int)n, p, tool);
        if (n > 0 && executable(path))
            return true;
        p += n + (p[n] == ':');
    }
    const char *roots[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        if (!roots[i] || !*roots[i])
            continue;
        snprintf(path, len, "%s/bin/%s", roots[i], tool);
        if (executable(path))
            return true;
    }
    snprintf(why, wlen, "%s (%s) is not installed: not in $%s, on PATH or in /usr/local/cuda/bin",
             strcmp(tool, "ncu") == 0 ? "Nsight Compute" : "Nsight Systems", tool, env);
    return false;
}

/* --- ncu's CSV ------------------------------------------------------------------------ */

/* Split one CSV line into at most cap fields in place (quoted fields may
 * hold commas; "" is a quote). Returns the field count. */
static int csv_fields(char *line, char **f, int cap)
{
    int n = 0;
    char *p = line;
    while (*p && n < cap) {
        char *out = p, *start = p;
        if (*p == '"') {
            p++;
            start = out = p;
            while (*p) {
                if (*p == '"' && p[1] == '"') {
                    *out++ = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    *out++ = *p++;
                }
            }
            while (*p && *p != ',')
                p++;
        } else {
            while (*p && *p != ',')
                out = ++p;
        }
        bool more = *p == ',';
        *out = '\0';
        f[n++] = start;
        if (!more)
            break;
        p++;
    }
    return n;
}

/* "1,234.5" or "12.3" as a number; false for text ("n/a", a unit). */
static bool number(const char *s, double *v)
{
    char buf[64];
    size_t k = 0;
    for (; *s && k + 1 < sizeof buf; s++)
        if (*s != ',' && *s != ' ')
            buf[k++] = *s;
    buf[k] = '\0';
    char *end;
    *v = strtod(buf, &end);
    return k > 0 && *end == '\0';
}

static const char *const ncu_metrics[NTP_NCU_N] = {
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
};

const char *ntp__ncu_metric(int i)
{
    return i >= 0 && i < NTP_NCU_N ? ncu_metrics[i] : NULL;
}

bool ntp__ncu_parse(const char *csv, ntp_ncu_totals *t, char *why, size_t len)
{
    memset(t, 0, sizeof *t);
    char *text = ntp__strdup(csv ? csv : "");
    if (!text) {
        snprintf(why, len, "out of memory");
        return false;
    }
    enum { MAXF = 256 };
    char *f[MAXF];
    int col[NTP_NCU_N], id_col = -1;
    for (int m = 0; m < NTP_NCU_N; m++)
        col[m] = -1;
    bool header = false;
    double wsum[NTP_NCU_N] = {0};
    char *save = NULL;
    for (char *line = strtok_r(text, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
        /* ncu prints its own lines (==PROF==, ==WARNING==) around the CSV. */
        if (line[0] != '"')
            continue;
        int n = csv_fields(line, f, MAXF);
        if (!header) {
            for (int m = 0; m < NTP_NCU_N; m++)
                col[m] = -1;
            for (int i = 0; i < n; i++) {
                if (strcmp(f[i], "ID") == 0)
                    id_col = i;
                for (int m = 0; m < NTP_NCU_N; m++)
                    if (strcmp(f[i], ncu_metrics[m]) == 0)
                        col[m] = i;
            }
            if (id_col < 0 || col[0] < 0)
                continue; /* not the header yet */
            header = true;
            continue;
        }
        /* Data rows start with the kernel's ID; the units row does not. */
        double id, v[NTP_NCU_N];
        if (id_col >= n || !number(f[id_col], &id) || col[0] >= n || !number(f[col[0]], &v[0]))
            continue;
        t->kernels++;
        t->duration += v[0];
        for (int m = 1; m < NTP_NCU_N; m++)
            if (col[m] >= 0 && col[m] < n && number(f[col[m]], &v[m])) {
                t->pct[m] += v[m] * v[0];
                wsum[m] += v[0];
            }
    }
    free(text);
    if (!header) {
        snprintf(why, len, "no CSV header with ID and %s in ncu's output", ncu_metrics[0]);
        return false;
    }
    for (int m = 1; m < NTP_NCU_N; m++) {
        t->have[m] = wsum[m] > 0;
        t->pct[m] = wsum[m] > 0 ? t->pct[m] / wsum[m] : 0;
    }
    t->have[0] = t->kernels > 0;
    return true;
}

/* --- running ------------------------------------------------------------------------- */

static ntp_status run_tool(ntp_ctx *ctx, char *const *argv, const char *log)
{
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    /* The child must count, not launch a tool again (NTP_TOOL* would make
     * it a counters child: it is not one). */
    int n = 0;
    while (environ[n])
        n++;
    char **envp = calloc((size_t)n + 1, sizeof *envp);
    if (!envp) {
        posix_spawn_file_actions_destroy(&fa);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    int k = 0;
    for (int i = 0; i < n; i++)
        if (strncmp(environ[i], "NTP_TOOL", 8) != 0)
            envp[k++] = environ[i];
    pid_t pid;
    int r = posix_spawn(&pid, argv[0], &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    if (r != 0)
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "cannot start %s: %s", argv[0], strerror(r));
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return ntp__error(ctx, NTP_STATUS_IO_ERROR, "waiting for %s: %s", argv[0],
                              strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return ntp__error(ctx, NTP_STATUS_BACKEND_ERROR, "%s %s %d (log: %s)", argv[0],
                          WIFSIGNALED(status) ? "was killed by signal" : "exited with status",
                          WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), log);
    return NTP_STATUS_OK;
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 65536, n = 0;
    char *b = malloc(cap + 1);
    while (b) {
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (n < cap)
            break;
        char *c = realloc(b, 2 * cap + 1);
        if (!c) {
            free(b);
            b = NULL;
            break;
        }
        b = c;
        cap *= 2;
    }
    fclose(f);
    if (b)
        b[n] = '\0';
    return b;
}

static void note(ntp_run_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(ntp_run_result *r, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    const char *s = ntp__store_str(ntp__run_store(r), buf);
    const char **p =
        s ? realloc(r->counter_notes, (size_t)(r->n_counter_notes + 1) * sizeof *p) : NULL;
    if (!p)
        return;
    r->counter_notes = p;
    p[r->n_counter_notes++] = s;
}

/* Append the marker's ncu figures to its counters. */
static ntp_status fold(ntp_ctx *ctx, ntp_run_result *r, ntp_marker_result *m,
                       const ntp_ncu_totals *t)
{
    static const char *const names[NTP_NCU_N] = {"ncu:duration", "ncu:sm_throughput",
                                                 "ncu:dram_throughput", "ncu:achieved_occupancy"};
    int n = m->n_counters + NTP_NCU_N + 1;
    ntp_counter_value *v = calloc((size_t)n, sizeof *v);
    if (!v || !ntp__store_keep(ntp__run_store(r), v))
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    if (m->n_counters)
        memcpy(v, m->counters, (size_t)m->n_counters * sizeof *v);
    int k = m->n_counters;
    for (int i = 0; i < NTP_NCU_N; i++, k++) {
        v[k].name = names[i];
        v[k].source = "ncu";
        v[k].unit = i == 0 ? "ns" : "%";
        v[k].available = t->have[i];
        v[k].value = i == 0 ? t->duration : t->pct[i];
        v[k].running = 1;
        v[k].reason = t->have[i] ? NULL : "ncu reported no value for this metric";
    }
    v[k].name = "ncu:kernels";
    v[k].source = "ncu";
    v[k].unit = "";
    v[k].available = true;
    v[k].value = t->kernels;
    v[k].running = 1;
    m->counters = v;
    m->n_counters = n;
    return NTP_STATUS_OK;
}

ntp_status ntp_run_gpu_tool_check(ntp_ctx *ctx, const char *tool)
{
    char name[16], path[4096], why[512];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(tool, ":"), tool);
    if (strcmp(name, "ncu") != 0 && strcmp(name, "nsys") != 0)
        return ntp__opt_error(ctx, NTP_STATUS_UNKNOWN_NAME, "ntp_run_opts.tool",
                              "%s: not a GPU tool (ncu, nsys)", tool);
    if (!ntp__gpu_tool_find(name, path, sizeof path, why, sizeof why))
        return ntp__opt_error(ctx, NTP_STATUS_UNSUPPORTED, "ntp_run_opts.tool", "%s: %s", tool,
                              why);
    return NTP_STATUS_OK;
}

ntp_status ntp_run_gpu_tool(ntp_ctx *ctx, ntp_run_result *r, const char *tool,
                            const char *const *argv, const char *dir)
{
    ntp_status st = ntp_run_gpu_tool_check(ctx, tool);
    if (st)
        return st;
    char name[16], bin[4096], why[512];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(tool, ":"), tool);
    ntp__gpu_tool_find(name, bin, sizeof bin, why, sizeof why);
    const char *marker = tool[strlen(name)] == ':' ? tool + strlen(name) + 1 : r->only_marker;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: %s", dir, strerror(errno));
    if (!ntp__run_store(r))
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    r->owned->counted = true;
    int na = 0;
    while (argv[na])
        na++;
    ntp_marker_result *m = NULL;
    bool ncu = strcmp(name, "ncu") == 0;
    if (ncu) {
        for (int i = 0; marker && i < r->n_markers; i++)
            if (strcmp(r->markers[i].name, marker) == 0)
                m = &r->markers[i];
        if (!m && marker)
            return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_run_opts.tool",
                                  "%s: the run has no marker '%s'", tool, marker);
        if (!m)
            return ntp__opt_error(
                ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_run_opts.tool",
                "%s: ncu profiles one marker: give ntp_run_opts.tool ncu:MARKER or ntp_run_opts.only_marker "
                "MARKER",
                tool);
    }
    /* The tool's command line, then the child's. */
    int rows = m ? m->last - m->first + 1 : 0;
    char **v = calloc((size_t)(na + 2 * rows + 24), sizeof *v);
    char **own = calloc((size_t)(rows + 4), sizeof *own);
    char out[4400], log[4400], metrics[512] = "";
    if (!v || !own) {
        free(v);
        free(own);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    int k = 0, no = 0;
    v[k++] = bin;
    snprintf(log, sizeof log, "%s/%s.log", dir, name);
    if (ncu) {
        for (int i = 0; i < NTP_NCU_N; i++)
            snprintf(metrics + strlen(metrics), sizeof metrics - strlen(metrics), "%s%s",
                     i ? "," : "", ncu_metrics[i]);
        v[k++] = (char *)"--nvtx";
        for (int i = m->first; i <= m->last; i++) {
            if (r->layers[i].fused)
                continue;
            char *inc = malloc(strlen(r->layers[i].name) + 2);
            if (!inc)
                break;
            sprintf(inc, "%s/", r->layers[i].name);
            own[no++] = inc;
            v[k++] = (char *)"--nvtx-include";
            v[k++] = inc;
        }
        v[k++] = (char *)"--metrics";
        v[k++] = metrics;
        v[k++] = (char *)"--csv";
        v[k++] = (char *)"--page";
        v[k++] = (char *)"raw";
        v[k++] = (char *)"--target-processes";
        v[k++] = (char *)"all";
        snprintf(out, sizeof out, "%s/ncu.csv", dir);
        v[k++] = (char *)"--log-file";
        v[k++] = out;
    } else {
        snprintf(out, sizeof out, "%s/ntprof", dir);
        v[k++] = (char *)"profile";
        v[k++] = (char *)"--trace=cuda,nvtx";
        v[k++] = (char *)"--force-overwrite=true";
        v[k++] = (char *)"-o";
        v[k++] = out;
    }
    for (int i = 0; i < na; i++)
        v[k++] = (char *)argv[i];
    st = run_tool(ctx, v, log);
    if (!st && ncu) {
        char *csv = read_all(out);
        ntp_ncu_totals t;
        if (!csv)
            st = ntp__opt_error(ctx, NTP_STATUS_IO_ERROR, "ntp_run_opts.tool",
                                "ncu: no output in %s (log: %s)", out, log);
        else if (!ntp__ncu_parse(csv, &t, why, sizeof why))
            st = ntp__opt_error(ctx, NTP_STATUS_BACKEND_ERROR, "ntp_run_opts.tool", "ncu: %s (%s)",
                                why, out);
        else if (t.kernels == 0)
            st = ntp__opt_error(ctx, NTP_STATUS_BACKEND_ERROR, "ntp_run_opts.tool",
                                "ncu: no kernel of marker '%s' was profiled (%s)", m->name, out);
        else
            st = fold(ctx, r, m, &t);
        free(csv);
        if (!st)
            note(r,
                 "ncu: %d kernels of marker '%s' profiled once (NVTX filter on its %d rows); "
                 "duration-weighted means; raw CSV: %s",
                 t.kernels, m->name, rows, out);
    } else if (!st) {
        note(r, "nsys: timeline with CUDA and NVTX ranges in %s.nsys-rep (nsys-ui or `nsys stats`)",
             out);
    }
    if (!st && !r->tool)
        r->tool = ntp__store_str(ntp__run_store(r), tool);
    for (int i = 0; i < no; i++)
        free(own[i]);
    free(own);
    free(v);
    return st;
}

/* --- backends this machine can run ------------------------------------------------ */

static pthread_once_t available_once = PTHREAD_ONCE_INIT;
static char available_names[512];

static void collect_available(void)
{
    size_t used = 0;
    for (int i = 0; i < ntp__backend_count(); i++) {
        const ntp_backend_i *be = ntp__backend_get(i);
        char why[512];
        if (!ntp__be_available(be, why, sizeof why))
            continue;
        int w = snprintf(available_names + used, sizeof available_names - used, "%s%s",
                         used ? "," : "", be->name);
        if (w < 0 || (size_t)w >= sizeof available_names - used)
            break;
        used += (size_t)w;
    }
}

const char *ntp_backends_available(void)
{
    pthread_once(&available_once, collect_available);
    return available_names;
}

bool ntp_backend_usable(const char *name, char *why, size_t len)
{
    const ntp_backend_i *be = name ? ntp__backend_find(name) : NULL;
    if (!be) {
        if (why && len)
            snprintf(why, len, "backend '%s' is not built (built: %s)", name ? name : "(null)",
                     ntp_backends());
        return false;
    }
    char buf[512] = "";
    if (!ntp__be_available(be, buf, sizeof buf)) {
        if (why && len)
            snprintf(why, len, "%s", buf[0] ? buf : "its backend says it cannot run here");
        return false;
    }
    if (why && len)
        why[0] = '\0';
    return true;
}
