/* ntprof sweep --load: load runs over configurations (docs/load.md#sweeps).
 * Each configuration is `ntprof load FILE <options> <configuration>
 * --format json -o DIR/config-C.json` in a process of its own, as a run
 * sweep's are; its row (latency percentiles, achieved QPS, the generator's
 * quality) is read back from that report. Factors are the load options
 * (qps, instances, threads-per-instance, max-batch, batch-timeout-us,
 * samples-per-query, latency-bound, scenario, backend, precision) or any
 * <param> of the topology. With --executor slurm each configuration is an
 * array task instead (sweep_load_task, run by `ntprof sweep --task`), its
 * load run written to the store, and the report built from the store
 * (sweep_load_report), the same as a local one's. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#include "cmd-sweep.h"

enum {
    OPT_L_LOAD = 1500,
    OPT_L_VARY,
    OPT_L_DESIGN,
    OPT_L_TIMEOUT,
    OPT_L_SCENARIO,
    OPT_L_QPS,
    OPT_L_BOUND,
    OPT_L_FIND_MAX,
    OPT_L_DURATION,
    OPT_L_MIN_QUERIES,
    OPT_L_SEED,
    OPT_L_BATCH_TIMEOUT,
    OPT_L_POLL,
    OPT_L_NO_PIN,
    OPT_L_DB,
    OPT_L_NO_DB,
    OPT_L_HTML,
    OPT_L_EXECUTOR,
    OPT_L_MAX_PARALLEL,
    OPT_L_SBATCH_ARG,
    OPT_L_SHARED,
    OPT_L_WAIT,
    OPT_PARTITION,
    OPT_TIME
};

/* The options every configuration gets, as `ntprof load` spells them. */
static const struct {
    int key;
    const char *flag;
    bool value;
} pass[] = {
    {OPT_L_SCENARIO, "--scenario", true},
    {OPT_L_QPS, "--qps", true},
    {OPT_L_BOUND, "--latency-bound", true},
    {OPT_L_FIND_MAX, "--find-max-qps", false},
    {'q', "--samples-per-query", true},
    {OPT_L_DURATION, "--duration", true},
    {OPT_L_MIN_QUERIES, "--min-queries", true},
    {OPT_L_SEED, "--seed", true},
    {'w', "--warmup", true},
    {'B', "--backend", true},
    {'I', "--instances", true},
    {'t', "--threads-per-instance", true},
    {OPT_L_NO_PIN, "--no-pin", false},
    {'m', "--max-batch", true},
    {OPT_L_BATCH_TIMEOUT, "--batch-timeout-us", true},
    {OPT_L_POLL, "--poll-us", true},
    {'s', "--set", true},
    {'p', "--precision", true},
    {'M', "--max-memory", true},
};
enum { N_PASS = sizeof pass / sizeof pass[0] };

/* Factors that are load options; any other name is a <param> (--set). */
static const char *const load_factors[] = {
    "qps",           "instances",        "threads-per-instance",
    "max-batch",     "batch-timeout-us", "samples-per-query",
    "latency-bound", "scenario",         "backend",
    "precision"};

enum { MAX_FACTORS = 8, MAX_VALUES = 64 };

typedef struct factor {
    char *spec; /* a copy of NAME=V1,V2,..., cut into name and values */
    const char *name;
    const char *values[MAX_VALUES];
    int n;
    bool is_load; /* --NAME V; otherwise --set NAME=V */
} factor;

static bool is_load_factor(const char *name)
{
    for (size_t i = 0; i < sizeof load_factors / sizeof load_factors[0]; i++)
        if (strcmp(name, load_factors[i]) == 0)
            return true;
    return false;
}

static bool parse_factor(const char *spec, factor *f)
{
    memset(f, 0, sizeof *f);
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || !eq[1]) {
        cli_error("--vary expects NAME=V1,V2,..., got '%s'", spec);
        return false;
    }
    if (!(f->spec = strdup(spec))) {
        cli_error("out of memory");
        return false;
    }
    char *s = f->spec;
    s[eq - spec] = '\0';
    f->name = s;
    f->is_load = is_load_factor(f->name);
    for (char *v = s + (eq - spec) + 1, *save = NULL; (v = strtok_r(v, ",", &save)); v = NULL) {
        if (f->n == MAX_VALUES) {
            cli_error("--vary %s: at most %d values", f->name, MAX_VALUES);
            return false;
        }
        for (int k = 0; k < f->n; k++)
            if (strcmp(f->values[k], v) == 0) {
                cli_error("--vary %s: the value '%s' is given twice", f->name, v);
                return false;
            }
        f->values[f->n++] = v;
    }
    if (f->n == 0) {
        cli_error("--vary %s: no values", f->name);
        return false;
    }
    return true;
}

/* Configurations as value indices per factor: one factor at a time around
 * the baseline (the first values), or every combination. */
static int expand(const factor *f, int nf, bool full, int (*cfg)[MAX_FACTORS], int max)
{
    int n = 0;
    if (full) {
        int idx[MAX_FACTORS] = {0};
        for (;;) {
            if (n == max)
                return -1;
            memcpy(cfg[n++], idx, sizeof idx);
            int k = nf - 1;
            while (k >= 0 && ++idx[k] == f[k].n)
                idx[k--] = 0;
            if (k < 0)
                return n;
        }
    }
    memset(cfg[n++], 0, sizeof cfg[0]);
    for (int k = 0; k < nf; k++)
        for (int v = 1; v < f[k].n; v++) {
            if (n == max)
                return -1;
            memset(cfg[n], 0, sizeof cfg[0]);
            cfg[n++][k] = v;
        }
    return n;
}

/* The configurations of a load sweep: its factors, each configuration as
 * value indices per factor, and their labels ("qps=200 instances=2"). */
typedef struct load_design {
    factor f[MAX_FACTORS];
    int nf, n;
    int (*cfg)[MAX_FACTORS];
} load_design;

enum { MAX_CONFIGS = 4096 };

static void design_free(load_design *d)
{
    for (int k = 0; k < d->nf; k++)
        free(d->f[k].spec);
    free(d->cfg);
    memset(d, 0, sizeof *d);
}

/* Expand d's factors (parsed into d->f, d->nf); false having said why. */
static bool design_expand(load_design *d, bool full)
{
    if (!(d->cfg = calloc(MAX_CONFIGS, sizeof *d->cfg))) {
        cli_error("out of memory");
        return false;
    }
    d->n = expand(d->f, d->nf, full, d->cfg, MAX_CONFIGS);
    if (d->n < 0) {
        cli_error("the sweep has more than %d configurations", MAX_CONFIGS);
        return false;
    }
    return true;
}

static void design_label(const load_design *d, int c, char *label, size_t len)
{
    size_t o = 0;
    label[0] = '\0';
    for (int k = 0; k < d->nf && o < len; k++) {
        int w = snprintf(label + o, len - o, "%s%s=%s", k ? " " : "", d->f[k].name,
                         d->f[k].values[d->cfg[c][k]]);
        o += w > 0 ? (size_t)w : 0;
    }
}

/* The configurations of recorded load sweep r, expanded as when it was
 * submitted; false having said why. */
static bool design_from_record(const ntp_sweep_record *r, load_design *d)
{
    memset(d, 0, sizeof *d);
    if (r->n_factors < 1 || r->n_factors > MAX_FACTORS) {
        cli_error("load sweep %lld: %d factors recorded (1 to %d expected)", (long long)r->id,
                  r->n_factors, MAX_FACTORS);
        return false;
    }
    for (int k = 0; k < r->n_factors; k++) {
        if (!parse_factor(r->factors[k], &d->f[k])) {
            d->nf = k + 1;
            design_free(d);
            return false;
        }
        d->nf = k + 1;
    }
    if (!design_expand(d, strcmp(r->design, "full") == 0)) {
        design_free(d);
        return false;
    }
    if (d->n != r->n_configs) {
        cli_error("load sweep %lld: its factors give %d configurations, the sweep has %d",
                  (long long)r->id, d->n, r->n_configs);
        design_free(d);
        return false;
    }
    return true;
}

static volatile sig_atomic_t stop_sweep;

static void on_signal(int sig)
{
    (void)sig;
    stop_sweep = 1;
    if (sweep_child > 0)
        kill(sweep_child, SIGINT);
}

/* Run one configuration's `ntprof load` and read its report into row. */
static void run_one(ntp_ctx *ctx, const char *self, const char *file, const argv_list *fixed,
                    const factor *f, int nf, const int *cfg, const char *dir, int c, double timeout,
                    ntp_loadgen_sweep_row *row)
{
    char report[PATH_MAX], log[PATH_MAX];
    if (!sweep_paths(dir, c, report, log)) {
        snprintf(row->error, sizeof row->error, "the temporary directory's path is too long");
        return;
    }
    argv_list a = {0};
    char sets[MAX_FACTORS][512], flags[MAX_FACTORS][64];
    bool ok = sweep_push(&a, self) && sweep_push(&a, "load") && sweep_push(&a, file);
    for (int i = 0; ok && i < fixed->n; i++)
        ok = sweep_push(&a, fixed->v[i]);
    for (int k = 0; ok && k < nf; k++) {
        const char *v = f[k].values[cfg[k]];
        if (f[k].is_load) {
            snprintf(flags[k], sizeof flags[k], "--%s", f[k].name);
            ok = sweep_push(&a, flags[k]) && sweep_push(&a, v);
        } else {
            snprintf(sets[k], sizeof sets[k], "%s=%s", f[k].name, v);
            ok = sweep_push(&a, "--set") && sweep_push(&a, sets[k]);
        }
    }
    ok = ok && sweep_push(&a, "--format") && sweep_push(&a, "json") && sweep_push(&a, "-o") &&
         sweep_push(&a, report);
    if (!ok) {
        snprintf(row->error, sizeof row->error, "out of memory");
        free(a.v);
        return;
    }
    unlink(report);
    pid_t pid = sweep_spawn(self, &a, log);
    free(a.v);
    if (pid < 0) {
        snprintf(row->error, sizeof row->error, "cannot start a process: %s", strerror(errno));
        return;
    }
    int status = 0;
    bool timed_out = sweep_wait(pid, timeout, &status);
    if (timed_out) {
        snprintf(row->error, sizeof row->error, "timed out after %g s", timeout);
    } else if (status != -1 && WIFEXITED(status) &&
               (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 130)) {
        /* 130: interrupted, the queries so far reported. */
        if (ntp_loadgen_sweep_row_read(ctx, report, row) != NTP_STATUS_OK) {
            snprintf(row->error, sizeof row->error, "%.500s", ntp_ctx_errmsg(ctx));
            ntp_ctx_clear(ctx);
        }
    } else {
        /* The child's own one-line error: the last line of its log that is
         * not a warning. */
        char last[1024];
        sweep_last_line(log, last, sizeof last);
        if (!last[0])
            snprintf(last, sizeof last, "no message");
        if (status != -1 && WIFSIGNALED(status))
            snprintf(row->error, sizeof row->error, "killed by signal %d: %.400s", WTERMSIG(status),
                     last);
        else
            snprintf(row->error, sizeof row->error, "exit %d: %.400s",
                     status == -1 ? -1 : WEXITSTATUS(status), last);
    }
}

/* The factors as typed ("NAME=V1,V2,..."), as the store keeps them. */
static void factor_specs(const factor *f, int nf, char specs[][4096], const char **fs)
{
    for (int k = 0; k < nf; k++) {
        int o = snprintf(specs[k], 4096, "%s=", f[k].name);
        for (int v = 0; v < f[k].n && o < 4096; v++)
            o += snprintf(specs[k] + o, 4096 - (size_t)o, "%s%s", v ? "," : "", f[k].values[v]);
        fs[k] = specs[k];
    }
}

/* Record the sweep's design in the history before anything runs: the
 * factors as typed, the options every configuration gets. A shared store
 * (a URL) that cannot be reached fails the sweep; a local one warns, and
 * the sweep runs unrecorded (docs/history.md). */
static int record_open(ntp_ctx *ctx, const char *db, const char *file, const factor *f, int nf,
                       bool full, const argv_list *fixed, int n, ntp_store **store, int64_t *id)
{
    char specs[MAX_FACTORS][4096];
    const char *fs[MAX_FACTORS];
    factor_specs(f, nf, specs, fs);
    char abs[PATH_MAX];
    const char *source = realpath(file, abs) ? abs : file;
    /* The options less the children's --no-db (the last one). */
    int n_opt = fixed->n > 0 ? fixed->n - 1 : 0;
    if (ntp_store_open(ctx, db, NTP_STORE_CREATE, store) == NTP_STATUS_OK &&
        ntp_store_add_load_sweep(ctx, *store, source, full ? "full" : "ofat", fs, nf,
                                 (const char *const *)fixed->v, n_opt, n, id) == NTP_STATUS_OK)
        return CLI_OK;
    ntp_store_close(*store);
    *store = NULL;
    if (ntp_store_is_url(db)) {
        cli_error("%s", ntp_ctx_errmsg(ctx));
        return CLI_FAIL;
    }
    fprintf(stderr, "ntprof: warning: %s; the sweep is not recorded (--db PATH or --no-db)\n",
            ntp_ctx_errmsg(ctx));
    ntp_ctx_clear(ctx);
    return CLI_OK;
}

/* Record configuration c (its load run and its row in the sweep); a store
 * that fails stops the recording with a warning, and the sweep goes on. */
static void record_one(ntp_ctx *ctx, ntp_store **store, const char *db, int64_t sweep,
                       const char *dir, int c, ntp_loadgen_sweep_row *row)
{
    char report[PATH_MAX], log[PATH_MAX];
    if (!*store || !sweep_paths(dir, c, report, log))
        return;
    if (ntp_loadgen_sweep_record(ctx, *store, sweep, c, report, row) == NTP_STATUS_OK)
        return;
    fprintf(stderr, "ntprof: warning: %s; load sweep %lld in %s is recorded up to %s\n",
            ntp_ctx_errmsg(ctx), (long long)sweep, db, row->label);
    ntp_ctx_clear(ctx);
    ntp_store_close(*store);
    *store = NULL;
}

typedef struct sweep_out {
    const ntp_loadgen_sweep_row *rows;
    int n;
    const char *source;
} sweep_out;

static ntp_status write_rows(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f);
static ntp_status write_html(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f);

/* --- --executor slurm (docs/load.md#sweeps-on-slurm) ---------------------------------------
 * The sweep is recorded as kind "load", executor "slurm", and submitted as
 * one array by the Slurm executor (cmd-sweep-slurm.c), which follows it,
 * reconciles Slurm's word on its tasks and resumes it as it does a run
 * sweep's; what differs is here: a task runs `ntprof load`, records a load
 * run, and the report is the local load sweep's, built from the store. */

/* Record the design (options less the children's --no-db) and submit. */
static int submit_slurm(ntp_ctx *ctx, const char *file, const load_design *d, bool full,
                        const argv_list *fixed, const sweep_slurm_args *a)
{
    char specs[MAX_FACTORS][4096], source[PATH_MAX];
    const char *fs[MAX_FACTORS];
    factor_specs(d->f, d->nf, specs, fs);
    if (!realpath(file, source)) {
        cli_error("%s: %s", file, strerror(errno));
        return CLI_FAIL;
    }
    ntp_sweep_record rec = {
        .source = source,
        .design = full ? "full" : "ofat",
        .factors = (char **)fs,
        .n_factors = d->nf,
        .options = (char **)fixed->v,
        .n_options = fixed->n > 0 ? fixed->n - 1 : 0,
        .n_configs = d->n,
        .kind = "load",
    };
    return sweep_slurm_start(ctx, &rec, a);
}

bool sweep_load_label(const ntp_sweep_record *r, int c, char *label, size_t len)
{
    load_design d;
    if (!design_from_record(r, &d))
        return false;
    design_label(&d, c, label, len);
    design_free(&d);
    return true;
}

int sweep_load_task(ntp_ctx *ctx, ntp_store *st, const ntp_sweep_record *r, const char *dir,
                    ntp_sweep_task *t)
{
    int c = t->index, rc = CLI_OK;
    long long id = (long long)r->id;
    load_design d;
    argv_list fixed = {0};
    ntp_loadgen_sweep_row row;
    memset(&row, 0, sizeof row);
    snprintf(row.label, sizeof row.label, "%s", t->label);
    char self[PATH_MAX], report[PATH_MAX], log[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    self[sl > 0 ? sl : 0] = '\0';
    if (!design_from_record(r, &d)) {
        snprintf(row.error, sizeof row.error, "load sweep %lld: its factors cannot be expanded",
                 id);
    } else {
        /* The children record nothing, as a local load sweep's do; the
         * load run is recorded here, under the sweep. */
        bool ok = true;
        for (int i = 0; ok && i < r->n_options; i++)
            ok = sweep_push(&fixed, r->options[i]);
        if (!ok || !sweep_push(&fixed, "--no-db"))
            snprintf(row.error, sizeof row.error, "out of memory");
        else
            run_one(ctx, self, r->source, &fixed, d.f, d.nf, d.cfg[c], dir, c, 0, &row);
        sweep_stop_with_child(); /* stopped with its configuration */
        design_free(&d);
    }
    free(fixed.v);
    if (row.error[0]) {
        snprintf(t->state, sizeof t->state, "failed");
        snprintf(t->message, sizeof t->message, "%s", row.error);
        rc = CLI_FAIL;
    } else if (!sweep_paths(dir, c, report, log) ||
               ntp_loadgen_record_report(ctx, st, report, &t->load_run_id) != NTP_STATUS_OK) {
        /* Retried and still refused: the report is kept outside the task's
         * directory, and the task says where, in its log and (should the
         * store answer again) in the sweep's record of it. */
        char buf[1024], words[1024], kept[PATH_MAX + 64], host[128] = "", parent[PATH_MAX];
        snprintf(words, sizeof words, "%s", cli_message(ntp_ctx_errmsg(ctx), buf, sizeof buf));
        ntp_ctx_clear(ctx);
        gethostname(host, sizeof host - 1);
        snprintf(parent, sizeof parent, "%s", dir);
        char *slash = strrchr(parent, '/');
        if (slash)
            *slash = '\0';
        snprintf(kept, sizeof kept, "%s/ntprof-unrecorded-%lld-%d-%ld.json", parent, id, c,
                 (long)getpid());
        snprintf(t->state, sizeof t->state, "failed");
        if (rename(report, kept) == 0) {
            cli_error("load sweep %lld configuration %d: not recorded: %s; its report is kept as "
                      "%s:%s",
                      id, c, words, host, kept);
            snprintf(t->message, sizeof t->message, "not recorded; report kept as %.64s:%.400s",
                     host, kept);
        } else {
            cli_error("load sweep %lld configuration %d: not recorded: %s", id, c, words);
            snprintf(t->message, sizeof t->message, "not recorded: %.480s", words);
        }
        t->load_run_id = 0;
        rc = CLI_FAIL;
    } else if (t->load_run_id == 0) {
        snprintf(t->state, sizeof t->state, "failed");
        snprintf(t->message, sizeof t->message, "interrupted; its load run is not recorded");
        rc = CLI_FAIL;
    } else {
        snprintf(t->state, sizeof t->state, "ok");
    }
    if (ntp_store_sweep_task_set(ctx, st, r->id, t, NTP_SWEEP_TASK_UNLESS_OK, NULL) !=
        NTP_STATUS_OK) {
        rc = cli_fail(ctx);
    }
    cli_print_warnings(ctx); /* a lost connection re-established */
    if (strcmp(t->state, "ok") == 0)
        fprintf(stderr,
                "ntprof: load sweep %lld configuration %d (%s): ok, load run %lld, p99 "
                "%.4g ms, %.4g QPS\n",
                id, c, t->label, (long long)t->load_run_id, row.p99_ms, row.qps_achieved);
    else
        fprintf(stderr, "ntprof: load sweep %lld configuration %d (%s): failed: %s\n", id, c,
                t->label, t->message);
    return rc;
}

int sweep_load_report(ntp_ctx *ctx, ntp_store *st, const ntp_sweep_record *r,
                      const sweep_slurm_args *a)
{
    load_design d;
    if (!design_from_record(r, &d))
        return CLI_FAIL;
    int n = r->n_configs, m = 0, ok = 0, rc = CLI_OK;
    long long id = (long long)r->id;
    ntp_sweep_task *t = NULL;
    ntp_loadgen_sweep_row *rows = calloc((size_t)n + 1, sizeof *rows);
    if (!rows) {
        cli_error("out of memory");
        rc = CLI_FAIL;
        goto out;
    }
    for (int c = 0; c < n; c++) {
        design_label(&d, c, rows[c].label, sizeof rows[c].label);
        snprintf(rows[c].error, sizeof rows[c].error, "not run");
    }
    if (ntp_store_sweep_tasks(ctx, st, r->id, &t, &m) != NTP_STATUS_OK) {
        rc = cli_fail(ctx);
        goto out;
    }
    for (int i = 0; i < m; i++) {
        ntp_loadgen_sweep_row *row = t[i].index >= 0 && t[i].index < n ? &rows[t[i].index] : NULL;
        if (!row || strcmp(t[i].state, "running") == 0)
            continue;
        if (strcmp(t[i].state, "ok") != 0 || t[i].load_run_id <= 0) {
            snprintf(row->error, sizeof row->error, "%s",
                     t[i].message[0] ? t[i].message : t[i].state);
            continue;
        }
        char *text = NULL, what[64];
        snprintf(what, sizeof what, "load run %lld", (long long)t[i].load_run_id);
        if (ntp_store_load_report(ctx, st, t[i].load_run_id, &text) != NTP_STATUS_OK ||
            ntp_loadgen_sweep_row_parse(ctx, text, what, row) != NTP_STATUS_OK) {
            free(text);
            rc = cli_fail(ctx);
            goto out;
        }
        free(text);
        row->load_run_id = t[i].load_run_id;
        ok++;
    }
    cli_print_warnings(ctx); /* a lost connection re-established for a read */
    sweep_out so = {rows, n, r->source};
    if (ok == 0) {
        write_rows(ctx, &so, NTP_FORMAT_TABLE, stderr);
        cli_error("load sweep %lld: no configuration has a result", id);
        rc = CLI_FAIL;
        goto out;
    }
    rc = cli_write_output(ctx, a->output, write_rows, &so, a->fmt);
    if (rc == CLI_OK && a->html)
        rc = cli_write_output(ctx, a->html, write_html, &so, NTP_FORMAT_TABLE);
    if (rc == CLI_OK && ok < n && strcmp(r->executor, "slurm") == 0)
        fprintf(stderr,
                "ntprof: warning: %d of %d configurations have no result (see the table; "
                "ntprof sweep --resume %lld)\n",
                n - ok, n, id);
    else if (rc == CLI_OK && ok < n)
        fprintf(stderr, "ntprof: warning: %d of %d configurations have no result (see the table)\n",
                n - ok, n);
out:
    free(t);
    free(rows);
    design_free(&d);
    return rc;
}

static ntp_status write_rows(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    const sweep_out *o = arg;
    return ntp_report_write_load_sweep(ctx, o->rows, o->n, o->source, fmt, f);
}

static ntp_status write_html(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    const sweep_out *o = arg;
    (void)fmt;
    return ntp_report_write_load_sweep_html(ctx, o->rows, o->n, o->source, f);
}

int sweep_load(int argc, char **argv)
{
    argv_list fixed = {0};
    load_design d = {0};
    factor *f = d.f;
    bool full = false;
    /* --executor slurm: one array task per configuration (cmd-sweep-slurm.c). */
    bool slurm = false;
    const char *sbatch_args[SWEEP_MAX_SBATCH_ARGS];
    sweep_slurm_args sl = {0};
    double timeout = 0;
    ntp_format fmt = NTP_FORMAT_TABLE;
    const char *output = NULL, *keep = NULL, *html = NULL, *db = NULL;
    bool use_db = true;
    ntp_store *store = NULL;
    int64_t sweep_id = 0;
    ntp_loadgen_sweep_row *rows = NULL;
    ntp_ctx *ctx = NULL;
    int rc = CLI_USAGE;
    const cli_option opts[] = {
        CLI_HELP("usage: ntprof sweep FILE --load --scenario S --vary NAME=V1,V2,... [options]\n"
                 "\n"
                 "Runs `ntprof load` once per configuration, each in a process of its own, and\n"
                 "tabulates every configuration's latency percentiles, achieved QPS and the\n"
                 "generator's quality (docs/load.md#sweeps). NAME is qps, instances,\n"
                 "threads-per-instance, max-batch, batch-timeout-us, samples-per-query,\n"
                 "latency-bound, scenario, backend, precision or any <param> of the topology.\n"
                 "\n"
                 "sweep:\n"),
        CLI_OPT("load", OPT_L_LOAD, NULL, "sweep load runs (this text)"),
        CLI_OPT("vary", OPT_L_VARY, "NAME=V1,...",
                "a factor and its values (repeatable); the first value\n"
                "of each is the baseline"),
        CLI_OPT("design", OPT_L_DESIGN, "D",
                "ofat (default: one factor at a time around the\n"
                "baseline) or full (every combination)"),
        CLI_OPT("timeout", OPT_L_TIMEOUT, "S",
                "stop a configuration after S seconds (default: none)"),
        CLI_STR("keep", 'k', "DIR", "keep each configuration's report and log in DIR", &keep),
        CLI_HELP("options given to every configuration (`ntprof load --help`; not also varied):\n"
                 "  --scenario S  --qps X  --latency-bound MS  --find-max-qps  -q N  --duration S\n"
                 "  --min-queries N  --seed N  -w N  -B NAME  -I N  -t T  --no-pin  -m B\n"
                 "  --batch-timeout-us U  --poll-us US  -s NAME=VALUE  -p P  -M SIZE  --db PATH\n"
                 "  --no-db\n"),
        CLI_OPT("scenario", OPT_L_SCENARIO, "S", NULL),
        CLI_OPT("qps", OPT_L_QPS, "X", NULL),
        CLI_OPT("latency-bound", OPT_L_BOUND, "MS", NULL),
        CLI_OPT("find-max-qps", OPT_L_FIND_MAX, NULL, NULL),
        CLI_OPT("samples-per-query", 'q', "N", NULL),
        CLI_OPT("duration", OPT_L_DURATION, "S", NULL),
        CLI_OPT("min-queries", OPT_L_MIN_QUERIES, "N", NULL),
        CLI_OPT("seed", OPT_L_SEED, "N", NULL),
        CLI_OPT("warmup", 'w', "N", NULL),
        CLI_OPT("backend", 'B', "NAME", NULL),
        CLI_OPT("instances", 'I', "N", NULL),
        CLI_OPT("threads-per-instance", 't', "T", NULL),
        CLI_OPT("no-pin", OPT_L_NO_PIN, NULL, NULL),
        CLI_OPT("max-batch", 'm', "B", NULL),
        CLI_OPT("batch-timeout-us", OPT_L_BATCH_TIMEOUT, "U", NULL),
        CLI_OPT("poll-us", OPT_L_POLL, "US", NULL),
        CLI_OPT("set", 's', "NAME=VALUE", NULL),
        CLI_OPT("precision", 'p', "P", NULL),
        CLI_OPT("max-memory", 'M', "SIZE", NULL),
        CLI_OPT("db", OPT_L_DB, "PATH", NULL),
        CLI_OPT("no-db", OPT_L_NO_DB, NULL, NULL),
        CLI_HELP("executor (docs/load.md#sweeps-on-slurm; `ntprof sweep --resume ID` and\n"
                 "`--report ID` then take the sweep's ID, without --load):\n"),
        CLI_OPT("executor", OPT_L_EXECUTOR, "E",
                "local (default: a process per configuration here)\n"
                "or slurm (one job array; docs/cluster.md)"),
        CLI_STR("partition", OPT_PARTITION, "P", "slurm: the partition", &sl.slurm.partition),
        CLI_STR("time", OPT_TIME, "T", "slurm: each task's time limit (sbatch --time)",
                &sl.slurm.time),
        CLI_OPT("max-parallel", OPT_L_MAX_PARALLEL, "N", "slurm: at most N tasks at once"),
        CLI_OPT("sbatch-arg", OPT_L_SBATCH_ARG, "ARG",
                "slurm: one more sbatch argument (repeatable)"),
        CLI_OPT("shared", OPT_L_SHARED, NULL,
                "slurm: share nodes between tasks (default:\n"
                "--exclusive, one task per node)"),
        CLI_OPT("wait", OPT_L_WAIT, NULL, "slurm: follow the array and write the report"),
        CLI_HELP("output:\n"),
        CLI_OPT("format", 'f', "F", "table (default), json or csv"),
        CLI_STR("output", 'o', "FILE", "write the table to FILE (written only on success)",
                &output),
        CLI_STR("html", OPT_L_HTML, "FILE",
                "also write a self-contained HTML report: latency against\n"
                "achieved QPS, and every configuration",
                &html),
        CLI_OPT("help", 'h', NULL, "this text"),
        CLI_OPT_END,
    };
    cli_getopt_state gs = {0};
    int opt;
    while ((opt = cli_getopt(argc, argv, opts, &gs)) != -1) {
        switch (opt) {
        case OPT_L_LOAD: continue;
        case OPT_L_VARY:
            if (d.nf == MAX_FACTORS) {
                cli_error("at most %d --vary options with --load", MAX_FACTORS);
                goto out;
            }
            if (!parse_factor(optarg, &f[d.nf++]))
                goto out;
            continue;
        case OPT_L_EXECUTOR:
            if (!sweep_slurm_option(SWEEP_OPT_EXECUTOR, optarg, &sl, sbatch_args, &slurm))
                goto out;
            continue;
        case OPT_L_MAX_PARALLEL:
            if (!sweep_slurm_option(SWEEP_OPT_MAX_PARALLEL, optarg, &sl, sbatch_args, &slurm))
                goto out;
            continue;
        case OPT_L_SBATCH_ARG:
            if (!sweep_slurm_option(SWEEP_OPT_SBATCH_ARG, optarg, &sl, sbatch_args, &slurm))
                goto out;
            continue;
        case OPT_L_SHARED: sl.slurm.shared = true; continue;
        case OPT_L_WAIT: sl.wait = true; continue;
        case OPT_L_DESIGN:
            if (strcmp(optarg, "full") != 0 && strcmp(optarg, "ofat") != 0) {
                cli_error("--design expects ofat or full, got '%s'", optarg);
                goto out;
            }
            full = strcmp(optarg, "full") == 0;
            continue;
        case OPT_L_TIMEOUT:
            if (!cli_parse_double(optarg, 0.001, 1e6, &timeout)) {
                cli_error("--timeout expects seconds, got '%s'", optarg);
                goto out;
            }
            continue;
        case 'f':
            if (!cli_parse_format(optarg, &fmt))
                goto out;
            continue;
        case 'h':
        case CLI_OPT_BAD: rc = cli_option_end("sweep --load", opt, opts, 25); goto out;
        default: break;
        }
        /* The sweep records the runs itself (record_open); the children do not. */
        if (opt == OPT_L_DB) {
            db = optarg;
            continue;
        }
        if (opt == OPT_L_NO_DB) {
            use_db = false;
            continue;
        }
        int k = 0;
        while (k < N_PASS && pass[k].key != opt)
            k++;
        if (k == N_PASS) {
            rc = cli_option_end("sweep --load", opt, opts, 25);
            goto out;
        }
        /* The child checks the value and names the option in its error. */
        if (!sweep_push(&fixed, pass[k].flag) || (pass[k].value && !sweep_push(&fixed, optarg)))
            goto oom;
    }
    if (!cli_want_files("sweep --load", argc, argv, 1, "a topology FILE"))
        goto out;
    if (!sweep_push(&fixed, "--no-db"))
        goto oom;
    if (d.nf == 0) {
        cli_error("sweep --load needs at least one --vary NAME=V1,V2,...");
        goto out;
    }
    if (!sweep_slurm_check(slurm, &sl, timeout))
        goto out;
    if (slurm && !use_db) {
        cli_error("--executor slurm records the sweep in a store; drop --no-db");
        goto out;
    }
    /* A factor is varied or given to every configuration, not both. */
    for (int k = 0; k < d.nf; k++) {
        for (int j = 0; j < k; j++)
            if (strcmp(f[j].name, f[k].name) == 0) {
                cli_error("--vary %s is given twice", f[k].name);
                goto out;
            }
        size_t len = strlen(f[k].name);
        for (int i = 0; i < fixed.n; i++) {
            const char *o = fixed.v[i];
            bool same = f[k].is_load ? strncmp(o, "--", 2) == 0 && strcmp(o + 2, f[k].name) == 0
                                     : i > 0 && strcmp(fixed.v[i - 1], "--set") == 0 &&
                                           strncmp(o, f[k].name, len) == 0 && o[len] == '=';
            if (same) {
                cli_error("--vary %s and %s%s both set %s; give one", f[k].name,
                          f[k].is_load ? "" : "--set ", o, f[k].name);
                goto out;
            }
        }
    }
    const char *file = argv[optind];
    if (access(file, R_OK) != 0) {
        cli_error("%s: %s", file, strerror(errno));
        rc = CLI_FAIL;
        goto out;
    }
    if (!(ctx = cli_ctx_new()))
        goto oom;
    char db_path[PATH_MAX];
    const ntp_output_path outs[] = {{"-o", output, NTP_OUTPUT_FILE},
                                    {"--html", html, NTP_OUTPUT_FILE},
                                    cli_db_output(ctx, db, use_db, db_path, sizeof db_path)};
    db = outs[2].path;
    if (use_db && !db)
        fprintf(stderr, "ntprof: warning: %s; the sweep is not recorded\n", ntp_ctx_errmsg(ctx));
    ntp_ctx_clear(ctx);
    if (cli_check_outputs(ctx, outs, 3, (const char *const[]){file}, 1) != CLI_OK) {
        rc = CLI_FAIL;
        goto out;
    }
    if (!design_expand(&d, full))
        goto out;
    int n = d.n;
    if (slurm) {
        sl.slurm.extra = sbatch_args;
        sl.slurm.output = keep;
        sl.db = db;
        sl.fmt = fmt;
        sl.output = output;
        sl.html = html;
        rc = submit_slurm(ctx, file, &d, full, &fixed, &sl);
        goto out;
    }
    if (!(rows = calloc((size_t)n, sizeof *rows)))
        goto oom;
    for (int c = 0; c < n; c++)
        design_label(&d, c, rows[c].label, sizeof rows[c].label);
    char self[PATH_MAX], dir[PATH_MAX];
    if (cli_sweep_prepare(keep, self, sizeof self, dir, sizeof dir) != CLI_OK) {
        rc = CLI_FAIL;
        goto out;
    }
    if (use_db && db &&
        record_open(ctx, db, file, f, d.nf, full, &fixed, n, &store, &sweep_id) != CLI_OK) {
        rc = CLI_FAIL;
        goto out;
    }
    /* Ctrl-C: the running configuration is interrupted (it reports the
     * queries so far), and no further one starts. */
    struct sigaction sa = {0}, old_int;
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    cli_progress prog;
    cli_progress_init(&prog);
    int failed = 0, ran = 0;
    for (int c = 0; c < n && !stop_sweep; c++) {
        if (prog.tty)
            cli_progress_show(&prog, "sweep", c, n, rows[c].label);
        run_one(ctx, self, file, &fixed, f, d.nf, d.cfg[c], dir, c, timeout, &rows[c]);
        record_one(ctx, &store, db, sweep_id, dir, c, &rows[c]);
        ran++;
        failed += rows[c].error[0] != '\0';
        if (!prog.tty) {
            if (rows[c].error[0])
                fprintf(stderr, "ntprof: sweep %d/%d %s: failed: %s\n", c + 1, n, rows[c].label,
                        rows[c].error);
            else
                fprintf(stderr, "ntprof: sweep %d/%d %s: ok, p99 %.4g ms, %.4g QPS\n", c + 1, n,
                        rows[c].label, rows[c].p99_ms, rows[c].qps_achieved);
        }
    }
    cli_progress_clear(&prog);
    sigaction(SIGINT, &old_int, NULL);
    if (store)
        fprintf(stderr,
                "ntprof: recorded as load sweep %lld in %s (ntprof history --load-sweeps)\n",
                (long long)sweep_id, db);
    ntp_store_close(store);
    store = NULL;
    if (!keep)
        sweep_clean_dir(dir, n);
    sweep_out so = {rows, ran, file};
    if (failed == ran) {
        write_rows(ctx, &so, NTP_FORMAT_TABLE, stderr);
        cli_error("every configuration failed");
        rc = CLI_FAIL;
        goto out;
    }
    rc = cli_write_output(ctx, output, write_rows, &so, fmt);
    if (rc == CLI_OK && html)
        rc = cli_write_output(ctx, html, write_html, &so, NTP_FORMAT_TABLE);
    if (rc == CLI_OK && failed > 0)
        fprintf(stderr, "ntprof: warning: %d of %d configurations failed (see the table)\n", failed,
                ran);
    if (rc == CLI_OK && stop_sweep) {
        fprintf(stderr, "ntprof: interrupted: %d of %d configurations ran\n", ran, n);
        rc = 130;
    }
out:
    ntp_store_close(store);
    design_free(&d);
    free(fixed.v);
    free(rows);
    ntp_ctx_free(ctx);
    return rc;
oom:
    cli_error("out of memory");
    rc = CLI_FAIL;
    goto out;
}
