/* ntprof sweep --executor slurm (docs/cluster.md#slurm), run sweeps and
 * load sweeps (--load) alike: the sweep's design goes into the store, one sbatch --array runs a
 * configuration per task (`ntprof sweep --task ID:N`, which writes its result to the store under
 * the sweep's id), --wait follows the array through scontrol, and the report is built from the
 * store. --resume ID resubmits only the configurations with no result; --report ID writes the
 * report as the store has it now. */
#include <errno.h>
#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd-sweep.h"

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static const char *tmp_root(void)
{
    const char *tmp = getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
}

/* A task's temporary directory is TMPDIR/ntprof-task-SWEEP-INDEX-PID-XXXXXX.
 * The task removes it when it ends, and when Slurm stops it with a signal
 * it can catch (SIGTERM at the time limit or on scancel: on_stop). A task
 * killed outright (SIGKILL) cannot: the next task of the sweep on that
 * node, and --resume, remove the directories of the sweep's tasks whose
 * process is gone. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[PATH_MAX];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
                snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < (int)sizeof p)
                unlink(p);
        closedir(d);
    }
    rmdir(dir);
}

static void clean_stale_task_dirs(int64_t sweep)
{
    DIR *d = opendir(tmp_root());
    if (!d)
        return;
    char prefix[64], p[PATH_MAX];
    snprintf(prefix, sizeof prefix, "ntprof-task-%lld-", (long long)sweep);
    size_t len = strlen(prefix);
    struct dirent *e;
    while ((e = readdir(d))) {
        long long index, pid;
        char rest[16];
        if (strncmp(e->d_name, prefix, len) != 0 ||
            sscanf(e->d_name + len, "%lld-%lld-%15s", &index, &pid, rest) != 3 || pid <= 0 ||
            pid == (long long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        if (snprintf(p, sizeof p, "%s/%s", tmp_root(), e->d_name) < (int)sizeof p)
            remove_dir(p);
    }
    closedir(d);
}

/* What on_stop removes: the running configuration's files and directory. */
static char stop_files[2][PATH_MAX + 32], stop_dir[PATH_MAX];

static void on_stop(int sig)
{
    int saved = errno;
    pid_t child = sweep_child;
    if (child > 0) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
    }
    unlink(stop_files[0]);
    unlink(stop_files[1]);
    rmdir(stop_dir);
    signal(sig, SIG_DFL);
    errno = saved;
    raise(sig); /* Slurm sees the task ended by the signal, as before */
}

static void catch_stop(const char *dir, int index)
{
    snprintf(stop_dir, sizeof stop_dir, "%s", dir);
    snprintf(stop_files[0], sizeof stop_files[0], "%s/config-%d.json", dir, index);
    snprintf(stop_files[1], sizeof stop_files[1], "%s/config-%d.log", dir, index);
    struct sigaction sa = {.sa_handler = on_stop};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

static void release_stop(void)
{
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
}

/* The store a sweep lives in: --db, else the default history. A path is
 * made absolute, since the tasks run in another directory (a URL is kept
 * as it is). */
static bool store_location(ntp_ctx *ctx, const char *db, char *buf, size_t len)
{
    if (!db) {
        if (ntp_store_default_path(ctx, buf, len) != NTP_STATUS_OK) {
            cli_fail(ctx);
            return false;
        }
        return true;
    }
    if (db[0] == '/' || strstr(db, "://")) {
        snprintf(buf, len, "%s", db);
        return true;
    }
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd) || snprintf(buf, len, "%s/%s", cwd, db) >= (int)len) {
        cli_error("--db %s: cannot make the path absolute", db);
        return false;
    }
    return true;
}

static bool parse_id(const char *s, int64_t *id)
{
    if (!cli_parse_int(s, 1, INT64_MAX, id)) {
        cli_error("expected a sweep ID (a positive integer), got '%s'", s);
        return false;
    }
    return true;
}

/* The sweep of record r, rebuilt: the same factors expanded the same way,
 * with the topology loaded under the run options' --set values. On
 * failure `why` says why in a line. */
static bool rebuild(ntp_ctx *ctx, const ntp_sweep_record *r, ntp_graph **g, ntp_sweep **sw,
                    char *why, size_t why_len)
{
    *g = NULL;
    *sw = NULL;
    cli_topo_opts topo = {0};
    for (int i = 0; i + 1 < r->n_options; i++)
        if (strcmp(r->options[i], "--set") == 0 &&
            cli_topo_option(&topo, 's', r->options[++i]) < 0) {
            cli_topo_free(&topo);
            snprintf(why, why_len, "sweep %lld: bad --set '%s'", (long long)r->id, r->options[i]);
            return false;
        }
    ntp_load_opts lo = cli_load_opts(&topo);
    ntp_sweep_design design;
    ntp_status st = ntp_sweep_design_parse(r->design, &design);
    if (st) {
        cli_topo_free(&topo);
        snprintf(why, why_len, "sweep %lld: unknown design '%s'", (long long)r->id, r->design);
        return false;
    }
    st = ntp_graph_load(ctx, r->source, &lo, g);
    if (!st)
        st = ntp_sweep_init(ctx, *g, r->source, design, sw);
    for (int i = 0; !st && i < r->n_factors; i++)
        st = ntp_sweep_add_factor(ctx, *sw, r->factors[i]);
    if (!st)
        st = ntp_sweep_expand(ctx, *sw);
    cli_topo_free(&topo);
    if (st) {
        char buf[1024];
        snprintf(why, why_len, "%s", cli_errmsg(ctx, buf, sizeof buf));
        ntp_ctx_clear(ctx);
        return false;
    }
    if (ntp_sweep_config_count(*sw) != r->n_configs) {
        snprintf(why, why_len,
                 "sweep %lld: %s now gives %d configurations, the sweep has %d (the topology "
                 "changed)",
                 (long long)r->id, r->source, ntp_sweep_config_count(*sw), r->n_configs);
        return false;
    }
    return true;
}

static void self_exe(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    buf[n > 0 ? n : 0] = '\0';
}

/* Submit configurations idx[0..n) of sweep r as one array; *job receives
 * its id. */
static int submit(ntp_ctx *ctx, ntp_store *st, const ntp_sweep_record *r, const char *db,
                  const int *idx, int n, const sweep_slurm_args *a, char *job, size_t job_len)
{
    char self[PATH_MAX];
    self_exe(self, sizeof self);
    if (!self[0]) {
        cli_error("cannot find the ntprof executable (/proc/self/exe): %s", strerror(errno));
        return CLI_FAIL;
    }
    char *script = NULL;
    if (ntp_slurm_script(ctx, self, r->id, db, &script) != NTP_STATUS_OK)
        return cli_fail(ctx);
    const char *tmp = getenv("TMPDIR");
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/ntprof-sweep-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        cli_error("cannot create the batch script in %s: %s", tmp && *tmp ? tmp : "/tmp",
                  strerror(errno));
        free(script);
        return CLI_FAIL;
    }
    size_t len = strlen(script);
    bool ok = write(fd, script, len) == (ssize_t)len;
    close(fd);
    free(script);
    if (!ok) {
        cli_error("cannot write the batch script %s", path);
        unlink(path);
        return CLI_FAIL;
    }
    chmod(path, 0700);
    ntp_slurm_opts o = a->slurm;
    char name[64], out[PATH_MAX + 64];
    snprintf(name, sizeof name, "ntprof-sweep-%lld", (long long)r->id);
    o.job_name = name;
    if (a->slurm.output) {
        /* --keep DIR: each task's output as DIR/sweep-ID-N.out. */
        mkdir(a->slurm.output, 0777);
        char abs[PATH_MAX];
        if (!realpath(a->slurm.output, abs)) {
            cli_error("--keep %s: %s", a->slurm.output, strerror(errno));
            unlink(path);
            return CLI_FAIL;
        }
        snprintf(out, sizeof out, "%s/sweep-%lld-%%a.out", abs, (long long)r->id);
        o.output = out;
    }
    char array[8192];
    int rc = CLI_OK;
    if (ntp_slurm_array_spec(ctx, idx, n, o.max_parallel, array, sizeof array) != NTP_STATUS_OK ||
        ntp_slurm_submit(ctx, &o, path, array, job, job_len) != NTP_STATUS_OK ||
        ntp_store_sweep_add_job(ctx, st, r->id, job) != NTP_STATUS_OK)
        rc = cli_fail(ctx);
    unlink(path);
    return rc;
}

/* Slurm's word on every array task of the sweep's jobs, oldest job first,
 * written where a task wrote nothing or died "running": why it failed,
 * timed out or was preempted. live[i] (may be NULL) is set for a
 * configuration still pending or running. */
static void reconcile(ntp_ctx *ctx, ntp_store *st, const ntp_sweep_record *r, bool *live)
{
    char jobs[4096];
    snprintf(jobs, sizeof jobs, "%s", r->jobs);
    char *save = NULL;
    for (char *job = strtok_r(jobs, " ", &save); job; job = strtok_r(NULL, " ", &save)) {
        ntp_slurm_task *t = NULL;
        int n = 0;
        if (ntp_slurm_query(ctx, job, &t, &n) != NTP_STATUS_OK) {
            /* A job Slurm has forgotten says nothing more; the store has
             * what its tasks wrote. */
            ntp_ctx_clear(ctx);
            continue;
        }
        for (int i = 0; i < n; i++) {
            if (t[i].index < 0 || t[i].index >= r->n_configs)
                continue;
            if (live)
                live[t[i].index] = !ntp_slurm_state_final(t[i].state);
            if (!ntp_slurm_state_final(t[i].state))
                continue;
            ntp_sweep_task w = {.index = t[i].index};
            const char *outcome = ntp_slurm_outcome(t[i].state);
            snprintf(w.job, sizeof w.job, "%s_%d", job, t[i].index);
            if (strcmp(outcome, "ok") == 0) {
                /* Completed, yet no result reached the store. */
                snprintf(w.state, sizeof w.state, "failed");
                snprintf(w.message, sizeof w.message,
                         "Slurm job %s: COMPLETED, but the task wrote no result", w.job);
            } else {
                snprintf(w.state, sizeof w.state, "%s", outcome);
                int code = 0, sig = 0;
                sscanf(t[i].exit_code, "%d:%d", &code, &sig);
                char extra[96] = "";
                if (sig > 0)
                    snprintf(extra, sizeof extra, ", killed by signal %d (%s)", sig,
                             strsignal(sig));
                else if (code > 0)
                    snprintf(extra, sizeof extra, ", exit %d", code);
                snprintf(w.message, sizeof w.message, "%s: Slurm job %s: %s (%s)%s", outcome, w.job,
                         t[i].state, t[i].reason[0] ? t[i].reason : "no reason", extra);
            }
            if (ntp_store_sweep_task_set(ctx, st, r->id, &w, NTP_SWEEP_TASK_IF_UNFINISHED, NULL) !=
                NTP_STATUS_OK) {
                cli_report_warnings(ctx, false);
                fprintf(stderr, "ntprof: warning: %s\n", ntp_ctx_errmsg(ctx));
                ntp_ctx_clear(ctx);
            }
        }
        free(t);
    }
}

/* Follow job `job` (n tasks) until every task has ended; a progress line
 * on a terminal, nothing otherwise. */
static int follow(ntp_ctx *ctx, const char *job, int n)
{
    cli_progress p;
    cli_progress_init(&p);
    int errors = 0;
    for (;;) {
        ntp_slurm_task *t = NULL;
        int m = 0;
        if (ntp_slurm_query(ctx, job, &t, &m) != NTP_STATUS_OK) {
            /* scontrol may time out while slurmctld is busy: a few tries
             * before giving up on it. */
            if (++errors >= 10) {
                cli_progress_clear(&p);
                return cli_fail(ctx);
            }
            ntp_ctx_clear(ctx);
            sleep_s(1);
            continue;
        }
        errors = 0;
        int done = 0, running = 0, failed = 0;
        for (int i = 0; i < m; i++) {
            if (ntp_slurm_state_final(t[i].state)) {
                done++;
                failed += strcmp(t[i].state, "COMPLETED") != 0;
            } else if (strcmp(t[i].state, "RUNNING") == 0) {
                running++;
            }
        }
        free(t);
        char label[128];
        snprintf(label, sizeof label, "job %s: %d running, %d pending, %d failed", job, running,
                 m - done - running, failed);
        if (p.tty)
            cli_progress_show(&p, "slurm", done, n, label);
        if (m > 0 && done == m)
            break;
        sleep_s(0.5);
    }
    cli_progress_clear(&p);
    return CLI_OK;
}

static ntp_status write_sweep(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    return ntp_report_write_sweep(ctx, arg, fmt, f);
}

static ntp_status write_html(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    (void)fmt;
    return ntp_report_write_sweep_html(ctx, arg, f);
}

/* The report of sweep r from the store: each configuration's stored run,
 * or why it has none. */
static int report(ntp_ctx *ctx, ntp_store *st, const ntp_sweep_record *r, const sweep_slurm_args *a)
{
    if (strcmp(r->kind, "load") == 0)
        return sweep_load_report(ctx, st, r, a);
    ntp_graph *g = NULL;
    ntp_sweep *sw = NULL;
    ntp_sweep_task *t = NULL;
    int n = 0, rc = CLI_OK;
    char why[1024];
    if (!rebuild(ctx, r, &g, &sw, why, sizeof why)) {
        cli_error("%s", why);
        rc = CLI_FAIL;
        goto out;
    }
    if (ntp_store_sweep_tasks(ctx, st, r->id, &t, &n) != NTP_STATUS_OK) {
        rc = cli_fail(ctx);
        goto out;
    }
    int ok = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(t[i].state, "ok") == 0 && t[i].run_id > 0) {
            ntp_run_result *res = NULL;
            if (ntp_store_load_run(ctx, st, t[i].run_id, &res) != NTP_STATUS_OK) {
                rc = cli_fail(ctx);
                goto out;
            }
            ntp_sweep_set_result(sw, t[i].index, res);
            ok++;
        } else if (strcmp(t[i].state, "running") != 0) {
            if (ntp_sweep_set_error(ctx, sw, t[i].index,
                                    t[i].message[0] ? t[i].message : t[i].state) != NTP_STATUS_OK) {
                rc = cli_fail(ctx);
                goto out;
            }
        }
    }
    cli_print_warnings(ctx); /* a lost connection re-established for a read */
    if (ok == 0) {
        write_sweep(ctx, sw, NTP_FORMAT_TABLE, stderr);
        cli_error("sweep %lld: no configuration has a result", (long long)r->id);
        rc = CLI_FAIL;
        goto out;
    }
    rc = cli_write_output(ctx, a->output, write_sweep, sw, a->fmt);
    if (rc == CLI_OK && a->html)
        rc = cli_write_output(ctx, a->html, write_html, sw, NTP_FORMAT_TABLE);
    if (rc == CLI_OK && ok < r->n_configs)
        fprintf(stderr,
                "ntprof: warning: %d of %d configurations have no result (see the table; "
                "ntprof sweep --resume %lld)\n",
                r->n_configs - ok, r->n_configs, (long long)r->id);
out:
    free(t);
    ntp_sweep_free(sw);
    ntp_graph_free(g);
    return rc;
}

/* Follow, reconcile and report: what --wait does after a submission. */
static int wait_and_report(ntp_ctx *ctx, ntp_store *st, int64_t id, const char *job, int n,
                           const sweep_slurm_args *a)
{
    int rc = follow(ctx, job, n);
    if (rc != CLI_OK)
        return rc;
    ntp_sweep_record *r = NULL;
    if (ntp_store_sweep_get(ctx, st, id, &r) != NTP_STATUS_OK)
        return cli_fail(ctx);
    cli_print_warnings(ctx); /* the server restarted while the array ran */
    reconcile(ctx, st, r, NULL);
    rc = report(ctx, st, r, a);
    ntp_sweep_record_free(r);
    return rc;
}

int sweep_slurm_submit(ntp_ctx *ctx, ntp_sweep *sw, const char *file, const char *design,
                       const char *const *vary, int n_vary, const argv_list *fixed,
                       const sweep_slurm_args *a)
{
    char source[PATH_MAX];
    if (!realpath(file, source)) {
        cli_error("%s: %s", file, strerror(errno));
        return CLI_FAIL;
    }
    ntp_sweep_record rec = {
        .source = source,
        .design = (char *)design,
        .factors = (char **)vary,
        .n_factors = n_vary,
        .options = (char **)fixed->v,
        .n_options = fixed->n,
        .n_configs = ntp_sweep_config_count(sw),
        .kind = "run",
    };
    return sweep_slurm_start(ctx, &rec, a);
}

bool sweep_slurm_check(bool slurm, const sweep_slurm_args *a, double timeout)
{
    if (!slurm && (a->wait || a->slurm.partition || a->slurm.time || a->slurm.max_parallel ||
                   a->slurm.n_extra || a->slurm.shared)) {
        cli_error("--wait, --partition, --time, --max-parallel, --sbatch-arg and --shared "
                  "need --executor slurm");
        return false;
    }
    if (slurm && timeout > 0) {
        cli_error("--timeout is the local executor's; with --executor slurm give --time");
        return false;
    }
    return true;
}

bool sweep_slurm_option(sweep_slurm_opt which, const char *arg, sweep_slurm_args *a,
                        const char **sbatch_args, bool *slurm)
{
    int64_t v;
    switch (which) {
    case SWEEP_OPT_EXECUTOR:
        if (strcmp(arg, "slurm") != 0 && strcmp(arg, "local") != 0) {
            cli_error("--executor expects local or slurm, got '%s'", arg);
            return false;
        }
        *slurm = strcmp(arg, "slurm") == 0;
        return true;
    case SWEEP_OPT_MAX_PARALLEL:
        if (!cli_parse_int(arg, 1, 1000000, &v)) {
            cli_error("--max-parallel expects a positive integer, got '%s'", arg);
            return false;
        }
        a->slurm.max_parallel = (int)v;
        return true;
    case SWEEP_OPT_SBATCH_ARG:
        if (a->slurm.n_extra == SWEEP_MAX_SBATCH_ARGS) {
            cli_error("at most %d --sbatch-arg options", SWEEP_MAX_SBATCH_ARGS);
            return false;
        }
        sbatch_args[a->slurm.n_extra++] = arg;
        return true;
    }
    return false;
}

int sweep_slurm_start(ntp_ctx *ctx, const ntp_sweep_record *design, const sweep_slurm_args *a)
{
    char db[PATH_MAX];
    if (!store_location(ctx, a->db, db, sizeof db))
        return CLI_FAIL;
    ntp_store *st = NULL;
    if (ntp_store_open(ctx, db, NTP_STORE_CREATE, &st) != NTP_STATUS_OK)
        return cli_fail(ctx);
    int n = design->n_configs;
    /* How it is submitted is kept with it, for --resume; --keep as an
     * absolute path. */
    ntp_slurm_opts kept = a->slurm;
    char keep_abs[PATH_MAX];
    if (kept.output) {
        mkdir(kept.output, 0777);
        if (!realpath(kept.output, keep_abs)) {
            cli_error("--keep %s: %s", kept.output, strerror(errno));
            ntp_store_close(st);
            return CLI_FAIL;
        }
        kept.output = keep_abs;
    }
    char *submit_json = ntp_slurm_opts_json(&kept);
    if (!submit_json) {
        cli_error("out of memory");
        ntp_store_close(st);
        return CLI_FAIL;
    }
    ntp_sweep_record rec = *design;
    rec.executor = "slurm";
    rec.submit = submit_json;
    int64_t id = 0;
    int rc = CLI_OK;
    int *idx = malloc((size_t)n * sizeof *idx);
    if (!idx) {
        cli_error("out of memory");
        rc = CLI_FAIL;
        goto out;
    }
    for (int i = 0; i < n; i++)
        idx[i] = i;
    if (ntp_store_sweep_add(ctx, st, &rec, &id) != NTP_STATUS_OK) {
        rc = cli_fail(ctx);
        goto out;
    }
    rec.id = id;
    rec.jobs = "";
    char job[32];
    if ((rc = submit(ctx, st, &rec, db, idx, n, a, job, sizeof job)) != CLI_OK)
        goto out;
    const char *what = strcmp(rec.kind, "load") == 0 ? "load sweep" : "sweep";
    fprintf(stderr, "ntprof: %s %lld: %d configurations submitted as Slurm job %s\n", what,
            (long long)id, n, job);
    if (!a->wait) {
        printf("%s %lld submitted as Slurm job %s (%d configurations); "
               "ntprof sweep --report %lld%s%s shows it\n",
               what, (long long)id, job, n, (long long)id, a->db ? " --db " : "", a->db ? db : "");
        goto out;
    }
    rc = wait_and_report(ctx, st, id, job, n, a);
out:
    free(idx);
    free(submit_json);
    ntp_store_close(st);
    return rc;
}

/* Open the sweep's store and its record; an unknown ID is one line. */
static int open_sweep(ntp_ctx *ctx, const char *id_text, const char *db_opt, char *db, size_t len,
                      ntp_store **st, ntp_sweep_record **r)
{
    int64_t id;
    *st = NULL;
    *r = NULL;
    if (!parse_id(id_text, &id))
        return CLI_USAGE;
    if (!store_location(ctx, db_opt, db, len))
        return CLI_FAIL;
    if (ntp_store_open(ctx, db, NTP_STORE_CREATE, st) != NTP_STATUS_OK)
        return cli_fail(ctx);
    if (ntp_store_sweep_get(ctx, *st, id, r) != NTP_STATUS_OK) {
        ntp_store_close(*st);
        *st = NULL;
        return cli_fail(ctx);
    }
    return CLI_OK;
}

/* The report of a run the store refused, kept as `kept` with the task it
 * belongs to (the report's "sweep"), so that `history import` marks the
 * task done. False when it cannot be written (the child's report, renamed,
 * is kept instead: importable, though the task stays failed). */
static bool keep_report(ntp_ctx *ctx, const ntp_run_result *res, const ntp_sweep_record *r,
                        const ntp_sweep_task *t, const char *kept)
{
    ntp_output *o;
    if (ntp_output_open(ctx, kept, &o) != NTP_STATUS_OK) {
        ntp_ctx_clear(ctx);
        return false;
    }
    if (ntp_report_write_run_sweep_task(ctx, res, r, t, ntp_output_file(o)) != NTP_STATUS_OK) {
        ntp_output_abort(o);
        ntp_ctx_clear(ctx);
        return false;
    }
    if (ntp_output_commit(ctx, o) != NTP_STATUS_OK) {
        ntp_ctx_clear(ctx);
        return false;
    }
    return true;
}

/* The run sweep's part of a task: configuration t->index of r, run in a
 * child with its files in dir, its run recorded in st under the sweep and
 * t written with how it went. */
static int task_run(ntp_ctx *ctx, ntp_store *st, const ntp_sweep_record *r, const char *db,
                    const char *dir, ntp_sweep_task *t)
{
    int index = t->index, rc = CLI_OK;
    ntp_graph *g = NULL;
    ntp_sweep *sw = NULL;
    argv_list fixed = {0};
    if (!rebuild(ctx, r, &g, &sw, t->message, sizeof t->message)) {
        cli_error("%s", t->message);
        rc = CLI_FAIL;
        snprintf(t->state, sizeof t->state, "failed");
        if (ntp_store_sweep_task_set(ctx, st, r->id, t, NTP_SWEEP_TASK_UNLESS_OK, NULL))
            cli_fail(ctx);
        goto out;
    }
    bool ok = true;
    for (int i = 0; ok && i < r->n_options; i++)
        ok = sweep_push(&fixed, r->options[i]);
    /* The run is recorded here, with the sweep's id, not by the child; the
     * child reads the sweep's store (this machine's ceilings for the
     * roofline, calibrations for the prediction), as a local sweep's
     * children do. */
    ok = ok && sweep_push(&fixed, "--db") && sweep_push(&fixed, db) &&
         sweep_push(&fixed, "--no-record");
    if (!ok) {
        cli_error("out of memory");
        rc = CLI_FAIL;
        goto out;
    }
    char self[PATH_MAX], state[1200];
    self_exe(self, sizeof self);
    sweep_run_one(ctx, sw, index, self, r->source, &fixed, dir, 0, state, sizeof state);
    sweep_stop_with_child(); /* stopped with its configuration: on_stop */
    const ntp_run_result *res = ntp_sweep_result(sw, index);
    if (res) {
        if (ntp_store_add_run(ctx, st, res, &t->run_id) != NTP_STATUS_OK) {
            /* Retried and still refused: the report is kept outside the
             * task's directory for `history import`, and the task says
             * where, in its log and (should the store answer again) in
             * the sweep's record of it. */
            rc = cli_fail(ctx);
            char kept[PATH_MAX + 64], from[PATH_MAX + 32], host[128] = "";
            gethostname(host, sizeof host - 1);
            snprintf(from, sizeof from, "%s/config-%d.json", dir, index);
            snprintf(kept, sizeof kept, "%s/ntprof-unrecorded-%lld-%d-%ld.json", tmp_root(),
                     (long long)r->id, index, (long)getpid());
            if (keep_report(ctx, res, r, t, kept) || rename(from, kept) == 0) {
                fprintf(stderr,
                        "ntprof: sweep %lld configuration %d: not recorded; its report is kept "
                        "as %s:%s (ntprof history import --db URL %s)\n",
                        (long long)r->id, index, host, kept, kept);
                snprintf(t->state, sizeof t->state, "failed");
                /* A long path is cut; the task's log has it whole. */
                snprintf(t->message, sizeof t->message, "not recorded; report kept as %.64s:%.400s",
                         host, kept);
                ntp_ctx_clear(ctx);
                if (ntp_store_sweep_task_set(ctx, st, r->id, t, NTP_SWEEP_TASK_UNLESS_OK, NULL))
                    ntp_ctx_clear(ctx); /* the store is still away: the log says it */
            }
            goto out;
        }
        snprintf(t->state, sizeof t->state, "ok");
    } else {
        snprintf(t->state, sizeof t->state, "failed");
        const char *e = ntp_sweep_error(sw, index);
        snprintf(t->message, sizeof t->message, "%s", e ? e : "failed");
        rc = CLI_FAIL;
    }
    if (ntp_store_sweep_task_set(ctx, st, r->id, t, NTP_SWEEP_TASK_UNLESS_OK, NULL) !=
        NTP_STATUS_OK)
        rc = cli_fail(ctx);
    cli_print_warnings(ctx); /* a lost connection re-established */
    fprintf(stderr, "ntprof: sweep %lld configuration %d (%s): %s\n", (long long)r->id, index,
            ntp_sweep_config_label(sw, index), state);
out:
    free(fixed.v);
    ntp_sweep_free(sw);
    ntp_graph_free(g);
    return rc;
}

int sweep_slurm_task(const char *spec, const char *db_opt)
{
    char id_text[32];
    const char *colon = strchr(spec, ':');
    int64_t index;
    if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof id_text ||
        !cli_parse_int(colon + 1, 0, INT32_MAX, &index)) {
        cli_error("--task expects ID:INDEX, got '%s'", spec);
        return CLI_USAGE;
    }
    memcpy(id_text, spec, (size_t)(colon - spec));
    id_text[colon - spec] = '\0';
    ntp_ctx *ctx = cli_ctx_new();
    if (!ctx)
        return CLI_FAIL;
    char db[PATH_MAX];
    ntp_store *st;
    ntp_sweep_record *r;
    int rc = open_sweep(ctx, id_text, db_opt, db, sizeof db, &st, &r);
    if (rc != CLI_OK) {
        ntp_ctx_free(ctx);
        return rc;
    }
    char dir[PATH_MAX] = "";
    ntp_sweep_task t = {.index = (int)index};
    const char *aj = getenv("SLURM_ARRAY_JOB_ID"), *at = getenv("SLURM_ARRAY_TASK_ID");
    bool load = strcmp(r->kind, "load") == 0;
    if (aj && at)
        snprintf(t.job, sizeof t.job, "%s_%s", aj, at);
    if (strcmp(r->executor, "slurm") != 0) {
        cli_error("sweep %lld ran here (executor %s); --task runs a Slurm sweep's configuration",
                  (long long)r->id, r->executor);
        rc = CLI_USAGE;
        goto out;
    }
    if (index >= r->n_configs) {
        cli_error("sweep %lld has %d configurations; there is no %lld", (long long)r->id,
                  r->n_configs, (long long)index);
        rc = CLI_USAGE;
        goto out;
    }
    /* A load sweep's row carries its configuration's label from the start,
     * as a local load sweep's does. */
    if (load && !sweep_load_label(r, (int)index, t.label, sizeof t.label)) {
        rc = CLI_FAIL;
        goto out;
    }
    /* Mark it running; a configuration that already has its result (the
     * task ran before, a requeue) is not run again. */
    snprintf(t.state, sizeof t.state, "running");
    bool written;
    if (ntp_store_sweep_task_set(ctx, st, r->id, &t, NTP_SWEEP_TASK_UNLESS_OK, &written) !=
        NTP_STATUS_OK) {
        rc = cli_fail(ctx);
        goto out;
    }
    if (!written) {
        fprintf(stderr, "ntprof: sweep %lld configuration %lld already has its result\n",
                (long long)r->id, (long long)index);
        goto out;
    }
    clean_stale_task_dirs(r->id);
    snprintf(dir, sizeof dir, "%s/ntprof-task-%lld-%lld-%ld-XXXXXX", tmp_root(), (long long)r->id,
             (long long)index, (long)getpid());
    if (!mkdtemp(dir)) {
        cli_error("cannot create a temporary directory: %s", strerror(errno));
        dir[0] = '\0';
        rc = CLI_FAIL;
        goto out;
    }
    catch_stop(dir, (int)index);
    rc = load ? sweep_load_task(ctx, st, r, dir, &t) : task_run(ctx, st, r, db, dir, &t);
out:
    if (dir[0])
        remove_dir(dir);
    release_stop();
    ntp_sweep_record_free(r);
    ntp_store_close(st);
    ntp_ctx_free(ctx);
    return rc;
}

/* --resume submits as the sweep was submitted: its stored Slurm options,
 * run options and --keep. An option typed with --resume that says
 * otherwise is refused, except --time, which may be changed (a sweep whose
 * tasks timed out is resumed with a longer one). A sweep recorded before
 * its options were kept uses the ones typed. */
static int resume_options(ntp_ctx *ctx, const ntp_sweep_record *r, const sweep_slurm_args *a,
                          sweep_slurm_args *eff, void **mem)
{
    long long id = (long long)r->id;
    if (a->n_run_opts) {
        bool same = a->n_run_opts == r->n_options;
        for (int i = 0; same && i < r->n_options; i++)
            same = strcmp(a->run_opts[i], r->options[i]) == 0;
        if (!same) {
            char kept[2048] = "";
            size_t used = 0;
            for (int i = 0; i < r->n_options && used < sizeof kept; i++) {
                int w =
                    snprintf(kept + used, sizeof kept - used, "%s%s", i ? " " : "", r->options[i]);
                used += w > 0 ? (size_t)w : 0;
            }
            cli_error("sweep %lld: --resume runs the sweep's own run options (%s); leave the run "
                      "options out or give exactly those",
                      id, r->n_options ? kept : "none");
            return CLI_USAGE;
        }
    }
    if (!r->submit)
        return CLI_OK;
    ntp_slurm_opts s;
    if (ntp_slurm_opts_parse(ctx, r->submit, &s, mem) != NTP_STATUS_OK)
        return cli_fail(ctx);
    const ntp_slurm_opts *t = &a->slurm;
    char why[1024] = "";
    if (t->partition && (!s.partition || strcmp(t->partition, s.partition) != 0))
        snprintf(why, sizeof why, "--partition %s (the sweep's: %s)", t->partition,
                 s.partition ? s.partition : "the cluster's default");
    else if (t->max_parallel && t->max_parallel != s.max_parallel)
        snprintf(why, sizeof why, "--max-parallel %d (the sweep's: %s%d)", t->max_parallel,
                 s.max_parallel ? "" : "none, ", s.max_parallel);
    else if (t->shared && !s.shared)
        snprintf(why, sizeof why, "--shared (the sweep's tasks are --exclusive)");
    if (!why[0] && t->n_extra) {
        bool same = t->n_extra == s.n_extra;
        for (int i = 0; same && i < s.n_extra; i++)
            same = strcmp(t->extra[i], s.extra[i]) == 0;
        if (!same)
            snprintf(why, sizeof why, "--sbatch-arg %s (the sweep's: %s%s)", t->extra[0],
                     s.n_extra ? s.extra[0] : "none", s.n_extra > 1 ? ", ..." : "");
    }
    if (!why[0] && t->output) {
        char abs[PATH_MAX];
        if (!s.output || !realpath(t->output, abs) || strcmp(abs, s.output) != 0)
            snprintf(why, sizeof why, "--keep %s (the sweep's: %s)", t->output,
                     s.output ? s.output : "none");
    }
    if (why[0]) {
        cli_error("sweep %lld: --resume submits as the sweep was submitted; %s differs: leave it "
                  "out or give the same (only --time may change)",
                  id, why);
        free(*mem);
        *mem = NULL;
        return CLI_USAGE;
    }
    if (t->time)
        s.time = t->time;
    eff->slurm = s;
    return CLI_OK;
}

int sweep_slurm_resume(const char *id_text, const sweep_slurm_args *a)
{
    ntp_ctx *ctx = cli_ctx_new();
    if (!ctx)
        return CLI_FAIL;
    char db[PATH_MAX];
    ntp_store *st;
    ntp_sweep_record *r;
    int rc = open_sweep(ctx, id_text, a->db, db, sizeof db, &st, &r);
    if (rc != CLI_OK) {
        ntp_ctx_free(ctx);
        return rc;
    }
    ntp_sweep_task *t = NULL;
    int n = 0, missing = 0;
    sweep_slurm_args eff = *a;
    void *mem = NULL;
    bool *live = calloc((size_t)r->n_configs + 1, sizeof *live);
    bool *have = calloc((size_t)r->n_configs + 1, sizeof *have);
    int *idx = malloc(((size_t)r->n_configs + 1) * sizeof *idx);
    if (!live || !have || !idx) {
        cli_error("out of memory");
        rc = CLI_FAIL;
        goto out;
    }
    if (strcmp(r->executor, "slurm") != 0) {
        cli_error("sweep %lld ran here (executor %s); --resume resubmits a Slurm sweep "
                  "(--executor slurm)",
                  (long long)r->id, r->executor);
        rc = CLI_USAGE;
        goto out;
    }
    if ((rc = resume_options(ctx, r, a, &eff, &mem)) != CLI_OK)
        goto out;
    clean_stale_task_dirs(r->id);
    reconcile(ctx, st, r, live);
    if (ntp_store_sweep_tasks(ctx, st, r->id, &t, &n) != NTP_STATUS_OK) {
        rc = cli_fail(ctx);
        goto out;
    }
    for (int i = 0; i < n; i++)
        if (t[i].index >= 0 && t[i].index < r->n_configs && strcmp(t[i].state, "ok") == 0)
            have[t[i].index] = true;
    /* Missing: no result and not still pending or running in Slurm. */
    for (int c = 0; c < r->n_configs; c++)
        if (!have[c] && !live[c])
            idx[missing++] = c;
    if (missing == 0) {
        fprintf(stderr,
                "ntprof: sweep %lld: nothing to resume (every configuration has its "
                "result or is still queued)\n",
                (long long)r->id);
        if (a->wait)
            rc = report(ctx, st, r, &eff);
        goto out;
    }
    char job[32];
    if ((rc = submit(ctx, st, r, db, idx, missing, &eff, job, sizeof job)) != CLI_OK)
        goto out;
    fprintf(stderr, "ntprof: sweep %lld: %d of %d configurations resubmitted as Slurm job %s\n",
            (long long)r->id, missing, r->n_configs, job);
    if (a->wait)
        rc = wait_and_report(ctx, st, r->id, job, missing, &eff);
    else
        printf("sweep %lld resumed as Slurm job %s (%d configurations)\n", (long long)r->id, job,
               missing);
out:
    free(mem);
    free(t);
    free(live);
    free(have);
    free(idx);
    ntp_sweep_record_free(r);
    ntp_store_close(st);
    ntp_ctx_free(ctx);
    return rc;
}

int sweep_slurm_report(const char *id_text, const sweep_slurm_args *a)
{
    ntp_ctx *ctx = cli_ctx_new();
    if (!ctx)
        return CLI_FAIL;
    char db[PATH_MAX];
    ntp_store *st;
    ntp_sweep_record *r;
    int rc = open_sweep(ctx, id_text, a->db, db, sizeof db, &st, &r);
    if (rc == CLI_OK) {
        if (strcmp(r->executor, "slurm") == 0)
            reconcile(ctx, st, r, NULL);
        rc = report(ctx, st, r, a);
    }
    ntp_sweep_record_free(r);
    ntp_store_close(st);
    ntp_ctx_free(ctx);
    return rc;
}
