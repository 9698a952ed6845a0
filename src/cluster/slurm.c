/* Slurm, through its commands (docs/cluster.md#slurm): the array's batch
 * script, sbatch, and what scontrol (or sacct, once slurmctld has
 * forgotten a job) says of each array task. libslurm is not used: its API
 * changes with every release, the commands' output does not. This is the
 * one layer of the library that starts processes, and only Slurm's. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <jansson.h>

#include "core/ctx-impl.h"
#include "ntprof/cluster.h"

/* What a command wrote and how it ended. */
typedef struct captured {
    char *out, *err;
    size_t n_out, n_err;
    int status; /* waitpid's; -1 when it could not start */
    int exec_errno;
} captured;

static void captured_free(captured *c)
{
    free(c->out);
    free(c->err);
}

static bool append(char **buf, size_t *n, const char *data, size_t len)
{
    char *p = realloc(*buf, *n + len + 1);
    if (!p)
        return false;
    memcpy(p + *n, data, len);
    *n += len;
    p[*n] = '\0';
    *buf = p;
    return true;
}

/* Run argv (found on PATH) with stdin from /dev/null, collecting stdout and
 * stderr apart. */
static ntp_status run_capture(ntp_ctx *ctx, char *const *argv, captured *c)
{
    memset(c, 0, sizeof *c);
    c->status = -1;
    int po[2], pe[2], px[2];
    if (pipe(po) != 0)
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "cluster: pipe: %s", strerror(errno));
    if (pipe(pe) != 0) {
        close(po[0]);
        close(po[1]);
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "cluster: pipe: %s", strerror(errno));
    }
    /* The child reports a failed exec through px (closed on a good one). */
    if (pipe(px) != 0) {
        close(po[0]);
        close(po[1]);
        close(pe[0]);
        close(pe[1]);
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "cluster: pipe: %s", strerror(errno));
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(po[0]);
        close(pe[0]);
        close(px[0]);
        dup2(po[1], STDOUT_FILENO);
        dup2(pe[1], STDERR_FILENO);
        int nul = open("/dev/null", 0);
        if (nul >= 0)
            dup2(nul, STDIN_FILENO);
        /* Mark the report pipe close-on-exec so a good exec closes it. */
        if (fcntl(px[1], F_SETFD, FD_CLOEXEC) != 0)
            _exit(127);
        execvp(argv[0], argv);
        int e = errno;
        if (write(px[1], &e, sizeof e) < 0)
            _exit(127);
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    close(px[1]);
    if (pid < 0) {
        close(po[0]);
        close(pe[0]);
        close(px[0]);
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "cluster: cannot start %s: %s", argv[0],
                          strerror(errno));
    }
    struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    int open_fds = 2;
    bool ok = true;
    while (open_fds > 0) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char buf[4096];
            ssize_t r = read(fds[i].fd, buf, sizeof buf);
            if (r > 0) {
                ok = ok && (i == 0 ? append(&c->out, &c->n_out, buf, (size_t)r)
                                   : append(&c->err, &c->n_err, buf, (size_t)r));
                continue;
            }
            if (r < 0 && errno == EINTR)
                continue;
            close(fds[i].fd);
            fds[i].fd = -1;
            open_fds--;
        }
    }
    int e = 0;
    if (read(px[0], &e, sizeof e) == (ssize_t)sizeof e)
        c->exec_errno = e;
    close(px[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    c->status = status;
    if (!ok) {
        captured_free(c);
        memset(c, 0, sizeof *c);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    if (!c->out && !append(&c->out, &c->n_out, "", 0))
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!c->err && !append(&c->err, &c->n_err, "", 0))
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    return NTP_STATUS_OK;
}

/* The last non-empty line of text, without "sbatch: error: " style
 * prefixes' trailing spaces: the command's own one-line message. */
static void last_line(const char *text, char *buf, size_t len)
{
    buf[0] = '\0';
    const char *p = text;
    while (*p) {
        size_t n = strcspn(p, "\n");
        size_t m = n;
        while (m > 0 && (p[m - 1] == ' ' || p[m - 1] == '\r' || p[m - 1] == '\t'))
            m--;
        if (m > 0) {
            if (m >= len)
                m = len - 1;
            memcpy(buf, p, m);
            buf[m] = '\0';
        }
        p += n;
        if (*p)
            p++;
    }
}

/* Why a command failed, in a line: it could not start, it was killed, or
 * its own last message. */
static ntp_status command_failed(ntp_ctx *ctx, const char *cmd, const captured *c, const char *what)
{
    if (c->exec_errno == ENOENT)
        return ntp__error(ctx, NTP_STATUS_IO_ERROR,
                          "cluster: %s: '%s' not found on PATH (is Slurm's client installed? "
                          "Debian: slurm-client)",
                          what, cmd);
    if (c->exec_errno)
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "cluster: %s: cannot run %s: %s", what, cmd,
                          strerror(c->exec_errno));
    char msg[512];
    last_line(c->err, msg, sizeof msg);
    if (!msg[0])
        last_line(c->out, msg, sizeof msg);
    if (WIFSIGNALED(c->status))
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "cluster: %s: %s killed by signal %d%s%s", what,
                          cmd, WTERMSIG(c->status), msg[0] ? ": " : "", msg);
    return ntp__error(ctx, NTP_STATUS_IO_ERROR, "cluster: %s: %s exited with %d: %s", what, cmd,
                      WIFEXITED(c->status) ? WEXITSTATUS(c->status) : -1,
                      msg[0] ? msg : "no message");
}

static bool succeeded(const captured *c)
{
    return c->exec_errno == 0 && c->status >= 0 && WIFEXITED(c->status) &&
           WEXITSTATUS(c->status) == 0;
}

ntp_status ntp_slurm_array_spec(ntp_ctx *ctx, const int *indices, int n, int max_parallel,
                                char *buf, size_t len)
{
    if (n <= 0)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "cluster: an array of no task");
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n;) {
        if (indices[i] < 0 || (i > 0 && indices[i] <= indices[i - 1]))
            return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                              "cluster: array indices must ascend from 0, got %d after %d",
                              indices[i], i > 0 ? indices[i - 1] : -1);
        int j = i;
        while (j + 1 < n && indices[j + 1] == indices[j] + 1)
            j++;
        int w = j > i ? snprintf(buf + used, len - used, "%s%d-%d", i ? "," : "", indices[i],
                                 indices[j])
                      : snprintf(buf + used, len - used, "%s%d", i ? "," : "", indices[i]);
        if (w < 0 || (size_t)w >= len - used)
            return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                              "cluster: the --array list is too long");
        used += (size_t)w;
        i = j + 1;
    }
    if (max_parallel > 0) {
        int w = snprintf(buf + used, len - used, "%%%d", max_parallel);
        if (w < 0 || (size_t)w >= len - used)
            return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                              "cluster: the --array list is too long");
    }
    return NTP_STATUS_OK;
}

/* s in single quotes for sh, each ' as '\''. */
static bool sh_quote(char **buf, size_t *n, const char *s)
{
    if (!append(buf, n, "'", 1))
        return false;
    for (const char *p = s; *p; p++) {
        if (*p == '\'' ? !append(buf, n, "'\\''", 4) : !append(buf, n, p, 1))
            return false;
    }
    return append(buf, n, "'", 1);
}

ntp_status ntp_slurm_script(ntp_ctx *ctx, const char *ntprof, int64_t sweep, const char *db,
                            char **out)
{
    *out = NULL;
    char *b = NULL;
    size_t n = 0;
    char head[256];
    snprintf(head, sizeof head,
             "#!/bin/sh\n"
             "# ntprof sweep %lld: array task N runs configuration N and writes its\n"
             "# result to the store under the sweep's id (docs/cluster.md).\n"
             "exec ",
             (long long)sweep);
    char task[64];
    snprintf(task, sizeof task, " sweep --task %lld:\"$SLURM_ARRAY_TASK_ID\" --db ",
             (long long)sweep);
    bool ok = append(&b, &n, head, strlen(head)) && sh_quote(&b, &n, ntprof) &&
              append(&b, &n, task, strlen(task)) && sh_quote(&b, &n, db) && append(&b, &n, "\n", 1);
    if (!ok) {
        free(b);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    *out = b;
    return NTP_STATUS_OK;
}

ntp_status ntp_slurm_submit(ntp_ctx *ctx, const ntp_slurm_opts *o, const char *script,
                            const char *array, char *job, size_t len)
{
    job[0] = '\0';
    const char *argv[64 + 16];
    int n = 0;
    char a_array[4200], a_part[256], a_time[64], a_name[256], a_out[4200];
    snprintf(a_array, sizeof a_array, "--array=%s", array);
    argv[n++] = "sbatch";
    argv[n++] = "--parsable";
    argv[n++] = a_array;
    snprintf(a_name, sizeof a_name, "--job-name=%s", o->job_name ? o->job_name : "ntprof");
    argv[n++] = a_name;
    if (!o->shared)
        argv[n++] = "--exclusive";
    if (o->partition) {
        snprintf(a_part, sizeof a_part, "--partition=%s", o->partition);
        argv[n++] = a_part;
    }
    if (o->time) {
        snprintf(a_time, sizeof a_time, "--time=%s", o->time);
        argv[n++] = a_time;
    }
    snprintf(a_out, sizeof a_out, "--output=%s", o->output ? o->output : "/dev/null");
    argv[n++] = a_out;
    if (o->n_extra > 64)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "cluster: at most 64 extra sbatch arguments");
    for (int i = 0; i < o->n_extra; i++)
        argv[n++] = o->extra[i];
    argv[n++] = script;
    argv[n] = NULL;
    captured c;
    ntp_status st = run_capture(ctx, (char *const *)argv, &c);
    if (st)
        return st;
    if (!succeeded(&c)) {
        st = command_failed(ctx, "sbatch", &c, "submitting the array");
        captured_free(&c);
        return st;
    }
    /* --parsable: "JOBID" or "JOBID;CLUSTER". */
    char line[256];
    last_line(c.out, line, sizeof line);
    line[strcspn(line, ";")] = '\0';
    size_t digits = strspn(line, "0123456789");
    if (digits == 0 || line[digits] || digits >= len) {
        st = ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                        "cluster: sbatch --parsable printed '%s', expected a job id", line);
        captured_free(&c);
        return st;
    }
    memcpy(job, line, digits + 1);
    captured_free(&c);
    return NTP_STATUS_OK;
}

bool ntp_slurm_state_final(const char *state)
{
    static const char *const live[] = {"PENDING",   "RUNNING",     "CONFIGURING",  "COMPLETING",
                                       "SUSPENDED", "REQUEUED",    "RESIZING",     "SIGNALING",
                                       "STAGE_OUT", "REQUEUE_FED", "REQUEUE_HOLD", "RESV_DEL_HOLD",
                                       "STOPPED",   "SPECIAL_EXIT"};
    if (!state || !*state)
        return false;
    for (size_t i = 0; i < sizeof live / sizeof live[0]; i++)
        if (strcmp(state, live[i]) == 0)
            return false;
    return true;
}

const char *ntp_slurm_outcome(const char *state)
{
    if (strcmp(state, "COMPLETED") == 0)
        return "ok";
    if (strcmp(state, "TIMEOUT") == 0 || strcmp(state, "DEADLINE") == 0)
        return "timed out";
    if (strcmp(state, "PREEMPTED") == 0)
        return "preempted";
    /* sacct prints "CANCELLED by 0". */
    if (strncmp(state, "CANCELLED", 9) == 0)
        return "cancelled";
    return "failed";
}

/* Append the tasks of one array "ArrayTaskId" value ("3", "3-7", "1,4-6",
 * "0-9%2") in one state. */
static bool add_tasks(ntp_slurm_task **v, int *n, int *cap, const char *ids,
                      const ntp_slurm_task *proto)
{
    char list[1024];
    snprintf(list, sizeof list, "%s", ids);
    list[strcspn(list, "%")] = '\0';
    char *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        long a = strtol(tok, &end, 10), b = a;
        if (end == tok || a < 0)
            return false;
        if (*end == '-') {
            char *e2;
            b = strtol(end + 1, &e2, 10);
            if (e2 == end + 1 || *e2 || b < a || b - a > 1000000)
                return false;
        } else if (*end) {
            return false;
        }
        for (long k = a; k <= b; k++) {
            if (*n == *cap) {
                *cap = *cap ? 2 * *cap : 64;
                ntp_slurm_task *p = realloc(*v, (size_t)*cap * sizeof *p);
                if (!p)
                    return false;
                *v = p;
            }
            (*v)[*n] = *proto;
            (*v)[(*n)++].index = (int)k;
        }
    }
    return true;
}

/* The value of " KEY=" in a one-line `scontrol show job -o` record. */
static void field(const char *line, const char *key, char *buf, size_t len)
{
    buf[0] = '\0';
    size_t k = strlen(key);
    for (const char *p = line; (p = strstr(p, key)) != NULL; p += k) {
        if ((p != line && p[-1] != ' ') || p[k] != '=')
            continue;
        const char *v = p + k + 1;
        size_t m = strcspn(v, " \n");
        if (m >= len)
            m = len - 1;
        memcpy(buf, v, m);
        buf[m] = '\0';
        return;
    }
}

static int by_index(const void *a, const void *b)
{
    const ntp_slurm_task *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

/* scontrol show job -o JOB: one line per task or group of pending tasks. */
static ntp_status query_scontrol(ntp_ctx *ctx, const char *job, ntp_slurm_task **out, int *n,
                                 bool *unknown)
{
    *unknown = false;
    char *const argv[] = {"scontrol", "show", "job", "-o", (char *)job, NULL};
    captured c;
    ntp_status st = run_capture(ctx, argv, &c);
    if (st)
        return st;
    if (!succeeded(&c)) {
        *unknown = strstr(c.err, "Invalid job id") != NULL;
        st = *unknown ? NTP_STATUS_UNKNOWN_NAME
                      : command_failed(ctx, "scontrol", &c, "querying the array");
        captured_free(&c);
        return st;
    }
    ntp_slurm_task *v = NULL;
    int m = 0, cap = 0;
    for (char *line = c.out; *line;) {
        size_t len = strcspn(line, "\n");
        char save = line[len];
        line[len] = '\0';
        char ids[1024], array_job[32];
        field(line, "ArrayJobId", array_job, sizeof array_job);
        field(line, "ArrayTaskId", ids, sizeof ids);
        if (ids[0] && strcmp(array_job, job) == 0) {
            ntp_slurm_task t = {0};
            field(line, "JobState", t.state, sizeof t.state);
            field(line, "Reason", t.reason, sizeof t.reason);
            field(line, "ExitCode", t.exit_code, sizeof t.exit_code);
            if (!add_tasks(&v, &m, &cap, ids, &t)) {
                free(v);
                st = ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                                "cluster: scontrol show job %s: ArrayTaskId=%s is not a list of "
                                "indices",
                                job, ids);
                captured_free(&c);
                return st;
            }
        }
        line[len] = save;
        line += len + (save ? 1 : 0);
    }
    captured_free(&c);
    qsort(v, (size_t)m, sizeof *v, by_index);
    *out = v;
    *n = m;
    return NTP_STATUS_OK;
}

/* sacct -P: "JOB_IDX|STATE|EXIT|REASON" per task, for jobs slurmctld has
 * forgotten (MinJobAge) on a cluster with accounting. */
static ntp_status query_sacct(ntp_ctx *ctx, const char *job, ntp_slurm_task **out, int *n)
{
    char *const argv[] = {
        "sacct", "-n", "-P", "-X", "-j", (char *)job, "-o", "JobID,State,ExitCode,Reason", NULL};
    captured c;
    ntp_status st = run_capture(ctx, argv, &c);
    if (st)
        return st;
    if (!succeeded(&c)) {
        st = command_failed(ctx, "sacct", &c, "querying the array");
        captured_free(&c);
        return st;
    }
    ntp_slurm_task *v = NULL;
    int m = 0, cap = 0;
    for (char *line = c.out; *line;) {
        size_t len = strcspn(line, "\n");
        char save = line[len];
        line[len] = '\0';
        char *f[4] = {line, NULL, NULL, NULL};
        for (int i = 1; i < 4 && f[i - 1]; i++) {
            char *bar = strchr(f[i - 1], '|');
            if (bar) {
                *bar = '\0';
                f[i] = bar + 1;
            }
        }
        size_t jl = strlen(job);
        if (f[3] && strncmp(f[0], job, jl) == 0 && f[0][jl] == '_') {
            ntp_slurm_task t = {0};
            snprintf(t.state, sizeof t.state, "%s", f[1]);
            t.state[strcspn(t.state, " ")] = '\0'; /* "CANCELLED by 0" */
            snprintf(t.exit_code, sizeof t.exit_code, "%s", f[2]);
            snprintf(t.reason, sizeof t.reason, "%s", f[3]);
            const char *ids = f[0] + jl + 1;
            if (*ids == '[')
                ids++; /* "12_[3-5%2]": still pending */
            char list[1024];
            snprintf(list, sizeof list, "%s", ids);
            list[strcspn(list, "]")] = '\0';
            if (!add_tasks(&v, &m, &cap, list, &t)) {
                free(v);
                captured_free(&c);
                return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                                  "cluster: sacct -j %s: '%s' is not an array task", job, f[0]);
            }
        }
        line[len] = save;
        line += len + (save ? 1 : 0);
    }
    captured_free(&c);
    if (m == 0)
        return ntp__error(ctx, NTP_STATUS_UNKNOWN_NAME,
                          "cluster: Slurm knows no job %s (neither scontrol nor sacct)", job);
    qsort(v, (size_t)m, sizeof *v, by_index);
    *out = v;
    *n = m;
    return NTP_STATUS_OK;
}

ntp_status ntp_slurm_query(ntp_ctx *ctx, const char *job, ntp_slurm_task **out, int *n)
{
    *out = NULL;
    *n = 0;
    if (!job || !*job || job[strspn(job, "0123456789")])
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "cluster: '%s' is not a job id",
                          job ? job : "");
    bool unknown;
    ntp_status st = query_scontrol(ctx, job, out, n, &unknown);
    if (st == NTP_STATUS_OK || !unknown)
        return st;
    ntp_ctx_clear(ctx);
    return query_sacct(ctx, job, out, n);
}

/* --- how a sweep was submitted (ntp_sweep_record.submit) ---------------------------------- */

char *ntp_slurm_opts_json(const ntp_slurm_opts *o)
{
    json_t *j = json_object(), *extra = json_array();
    if (!j || !extra) {
        json_decref(j);
        json_decref(extra);
        return NULL;
    }
    for (int i = 0; i < o->n_extra; i++)
        json_array_append_new(extra, json_string(o->extra[i]));
    json_object_set_new(j, "partition", o->partition ? json_string(o->partition) : json_null());
    json_object_set_new(j, "time", o->time ? json_string(o->time) : json_null());
    json_object_set_new(j, "max_parallel", json_integer(o->max_parallel));
    json_object_set_new(j, "shared", json_boolean(o->shared));
    json_object_set_new(j, "keep", o->output ? json_string(o->output) : json_null());
    json_object_set_new(j, "sbatch_args", extra);
    char *text = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(j);
    return text;
}

/* A string member (NULL when null or absent) copied to the block at *at. */
static const char *stored_str(json_t *v, char **at)
{
    if (!json_is_string(v))
        return NULL;
    char *s = *at;
    memcpy(s, json_string_value(v), json_string_length(v) + 1);
    *at += json_string_length(v) + 1;
    return s;
}

ntp_status ntp_slurm_opts_parse(ntp_ctx *ctx, const char *text, ntp_slurm_opts *o, void **mem)
{
    *mem = NULL;
    memset(o, 0, sizeof *o);
    json_error_t err;
    json_t *j = json_loads(text ? text : "", 0, &err);
    json_t *extra = json_object_get(j, "sbatch_args");
    if (!json_is_object(j) || (extra && !json_is_array(extra))) {
        json_decref(j);
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                          "the sweep's stored submit options are not an object of options: %s",
                          text ? text : "(none)");
    }
    static const char *const keys[] = {"partition", "time", "keep"};
    size_t n_extra = json_array_size(extra), size = (n_extra + 1) * sizeof(char *);
    for (int k = 0; k < 3; k++)
        size += json_string_length(json_object_get(j, keys[k])) + 1;
    for (size_t i = 0; i < n_extra; i++)
        size += json_string_length(json_array_get(extra, i)) + 1;
    const char **args = malloc(size);
    if (!args) {
        json_decref(j);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    char *at = (char *)(args + n_extra + 1);
    o->partition = stored_str(json_object_get(j, "partition"), &at);
    o->time = stored_str(json_object_get(j, "time"), &at);
    o->output = stored_str(json_object_get(j, "keep"), &at);
    o->max_parallel = (int)json_integer_value(json_object_get(j, "max_parallel"));
    o->shared = json_is_true(json_object_get(j, "shared"));
    int n = 0;
    for (size_t i = 0; i < n_extra; i++) {
        const char *s = stored_str(json_array_get(extra, i), &at);
        if (s)
            args[n++] = s;
    }
    args[n] = NULL;
    o->extra = args;
    o->n_extra = n;
    json_decref(j);
    *mem = args;
    return NTP_STATUS_OK;
}
