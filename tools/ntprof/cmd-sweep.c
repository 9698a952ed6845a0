/* ntprof sweep: run a topology over configurations, each in a process of
 * its own (fork and exec of this ntprof: `ntprof run ... --format json -o
 * TMP`), so one configuration's crash, leak or warm caches cannot touch
 * another's. A progress bar with an ETA shows on a terminal, plain lines
 * otherwise; the table of every configuration's figures goes to stdout or
 * -o. */
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

int cmd_sweep(int argc, char **argv);

enum {
    OPT_VARY = 1000,
    OPT_DESIGN,
    OPT_TIMEOUT,
    OPT_KEEP,
    OPT_MIN_TIME,
    OPT_SEED,
    OPT_FUSE,
    OPT_NO_ACCURACY,
    OPT_PIN,
    OPT_DB,
    OPT_NO_DB,
    OPT_HTML,
    OPT_EXECUTOR,
    OPT_PARTITION,
    OPT_TIME,
    OPT_MAX_PARALLEL,
    OPT_SBATCH_ARG,
    OPT_SHARED,
    OPT_WAIT,
    OPT_TASK,
    OPT_RESUME,
    OPT_REPORT,
    /* --train (cmd-sweep-train.c) */
    OPT_TRAIN,
    OPT_TRAIN_LOSS,
    OPT_TRAIN_OPTIMIZER,
    OPT_TRAIN_LR,
    OPT_TRAIN_STEPS
};

static bool push(argv_list *a, const char *s)
{
    if (a->n + 1 >= a->cap) {
        int cap = a->cap ? 2 * a->cap : 32;
        const char **p = realloc(a->v, (size_t)cap * sizeof *p);
        if (!p)
            return false;
        a->v = p;
        a->cap = cap;
    }
    a->v[a->n++] = s;
    a->v[a->n] = NULL;
    return true;
}

static double now_s(void)
{
    return cli_now_s();
}

/* The `ntprof run` options that make a configuration: what it varies, as
 * the child's options spell it. `batch` and `threads` hold the numbers'
 * text and must live as long as a. */
static bool push_config(argv_list *a, const ntp_sweep_config *cfg, char *batch, char *threads,
                        size_t len)
{
    bool ok = true;
    if (cfg->backend)
        ok = push(a, "--backend") && push(a, cfg->backend);
    if (ok && cfg->set_precision)
        ok = push(a, "--precision") && push(a, ntp_dtype_name(cfg->precision));
    if (ok && cfg->batch > 0) {
        snprintf(batch, len, "%lld", (long long)cfg->batch);
        ok = push(a, "--batch") && push(a, batch);
    }
    if (ok && cfg->threads > 0) {
        snprintf(threads, len, "%d", cfg->threads);
        ok = push(a, "--threads") && push(a, threads);
    }
    for (int i = 0; ok && i < cfg->n_set; i++)
        ok = push(a, "--set") && push(a, cfg->set[i]);
    return ok;
}

/* The last non-empty line of a child's log, without the "ntprof: " every
 * CLI message starts with: the child's own one-line error. */
void sweep_last_line(const char *path, char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        size_t n = strcspn(line, "\r\n");
        line[n] = '\0';
        if (n == 0 || strncmp(line, "ntprof: warning:", 16) == 0)
            continue;
        /* A long line is cut: the start of an error says what went wrong. */
        const char *msg = strncmp(line, "ntprof: ", 8) == 0 ? line + 8 : line;
        size_t m = strlen(msg);
        if (m >= len)
            m = len - 1;
        memcpy(out, msg, m);
        out[m] = '\0';
    }
    fclose(f);
}

/* A plain line per configuration when stderr is not a terminal (a log
 * then says what ran); on a terminal the shared progress line. */
static void progress(cli_progress *p, int done, int total, const char *label, const char *state)
{
    if (p->tty) {
        cli_progress_show(p, "sweep", done, total, label);
        return;
    }
    if (!state)
        return;
    char eta[32] = "?";
    if (done > 0)
        cli_duration((cli_now_s() - p->t0) / done * (total - done), eta, sizeof eta);
    fprintf(stderr, "ntprof: sweep %d/%d %s: %s (ETA %s)\n", done, total, label, state, eta);
    fflush(stderr);
}

bool sweep_push(argv_list *a, const char *s)
{
    return push(a, s);
}

int cli_sweep_prepare(const char *keep, char *self, size_t self_len, char *dir, size_t dir_len)
{
    ssize_t len = readlink("/proc/self/exe", self, self_len - 1);
    if (len <= 0) {
        cli_error("cannot find the ntprof executable (/proc/self/exe): %s", strerror(errno));
        return CLI_FAIL;
    }
    self[len] = '\0';
    if (keep) {
        snprintf(dir, dir_len, "%s", keep);
        if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
            cli_error("--keep %s: %s", keep, strerror(errno));
            return CLI_FAIL;
        }
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, dir_len, "%s/ntprof-sweep-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            cli_error("cannot create a temporary directory in %s: %s", tmp && *tmp ? tmp : "/tmp",
                      strerror(errno));
            return CLI_FAIL;
        }
    }
    return CLI_OK;
}

bool sweep_paths(const char *dir, int c, char report[PATH_MAX], char log[PATH_MAX])
{
    return snprintf(report, PATH_MAX, "%s/config-%d.json", dir, c) < PATH_MAX &&
           snprintf(log, PATH_MAX, "%s/config-%d.log", dir, c) < PATH_MAX;
}

pid_t sweep_spawn(const char *self, const argv_list *a, const char *log)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            close(fd);
        }
        execv(self, (char *const *)a->v);
        fprintf(stderr, "ntprof: cannot run %s: %s\n", self, strerror(errno));
        _exit(127);
    }
    return pid;
}

int sweep_child_signal;

bool sweep_wait(pid_t pid, double timeout, int *status)
{
    sweep_child = pid;
    double t0 = now_s();
    bool timed_out = false;
    *status = 0;
    for (;;) {
        pid_t r = waitpid(pid, status, timeout > 0 ? WNOHANG : 0);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            *status = -1;
            break;
        }
        if (timeout > 0 && now_s() - t0 > timeout) {
            kill(pid, SIGKILL);
            waitpid(pid, status, 0);
            timed_out = true;
            break;
        }
        if (r == 0) {
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    sweep_child = 0;
    sweep_child_signal = *status != -1 && WIFSIGNALED(*status) ? WTERMSIG(*status) : 0;
    return timed_out;
}

void sweep_stop_with_child(void)
{
    int sig = sweep_child_signal;
    if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP)
        raise(sig);
}

/* Run configuration c in a child; returns its report or records why not. */
void sweep_run_one(ntp_ctx *ctx, ntp_sweep *sw, int c, const char *self, const char *file,
                   const argv_list *fixed, const char *dir, double timeout, char *state,
                   size_t state_len)
{
    char report[PATH_MAX], log[PATH_MAX];
    if (!sweep_paths(dir, c, report, log)) {
        ntp_sweep_set_error(ctx, sw, c, "the temporary directory's path is too long");
        snprintf(state, state_len, "failed: the temporary directory's path is too long");
        return;
    }
    argv_list a = {0};
    ntp_sweep_config cfg;
    char batch[32], threads[32];
    if (ntp_sweep_config_get(ctx, sw, c, &cfg) != NTP_STATUS_OK) {
        snprintf(state, state_len, "failed: %s", ntp_ctx_errmsg(ctx));
        ntp_ctx_clear(ctx);
        return;
    }
    bool ok = push(&a, self) && push(&a, "run") && push(&a, file);
    for (int i = 0; ok && i < fixed->n; i++)
        ok = push(&a, fixed->v[i]);
    ok = ok && push_config(&a, &cfg, batch, threads, sizeof batch);
    ok = ok && push(&a, "--format") && push(&a, "json") && push(&a, "-o") && push(&a, report);
    if (!ok) {
        ntp_sweep_set_error(ctx, sw, c, "out of memory");
        snprintf(state, state_len, "failed: out of memory");
        free(a.v);
        return;
    }
    unlink(report);
    pid_t pid = sweep_spawn(self, &a, log);
    free(a.v);
    if (pid < 0) {
        char msg[256];
        snprintf(msg, sizeof msg, "cannot start a process: %s", strerror(errno));
        ntp_sweep_set_error(ctx, sw, c, msg);
        snprintf(state, state_len, "failed: %s", msg);
        return;
    }
    int status = 0;
    bool timed_out = sweep_wait(pid, timeout, &status);
    char msg[1024];
    if (timed_out) {
        snprintf(msg, sizeof msg, "timed out after %g s", timeout);
    } else if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        ntp_run_result *r = NULL;
        if (ntp_run_result_load(ctx, report, &r) == NTP_STATUS_OK) {
            ntp_sweep_set_result(sw, c, r);
            snprintf(state, state_len, "ok, median %.4g ms",
                     ntp_run_result_end_to_end_ms(r)->median);
            return;
        }
        char words[sizeof msg];
        snprintf(msg, sizeof msg, "%s", cli_errmsg(ctx, words, sizeof words));
        ntp_ctx_clear(ctx);
    } else if (status != -1 && WIFSIGNALED(status)) {
        char last[512];
        sweep_last_line(log, last, sizeof last);
        snprintf(msg, sizeof msg, "killed by signal %d (%s)%s%s", WTERMSIG(status),
                 strsignal(WTERMSIG(status)), last[0] ? ": " : "", last);
    } else {
        char last[900];
        sweep_last_line(log, last, sizeof last);
        snprintf(msg, sizeof msg, "exit %d: %s", status == -1 ? -1 : WEXITSTATUS(status),
                 last[0] ? last : "no message");
    }
    ntp_sweep_set_error(ctx, sw, c, msg);
    snprintf(state, state_len, "failed: %s", msg);
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

/* Remove what the children left in a temporary directory. */
volatile pid_t sweep_child;

void sweep_clean_dir(const char *dir, int n)
{
    char p[PATH_MAX];
    for (int c = 0; c < n; c++) {
        if (snprintf(p, sizeof p, "%s/config-%d.json", dir, c) < (int)sizeof p)
            unlink(p);
        if (snprintf(p, sizeof p, "%s/config-%d.log", dir, c) < (int)sizeof p)
            unlink(p);
    }
    rmdir(dir);
}

/* With a shared store (a postgresql:// URL) the sweep records its runs
 * itself, on one connection kept open across them, rather than each child
 * opening its own (a PostgreSQL connection costs tens of ms to start; the
 * write on a warm one a few: bench/bench_store.c). The children still read
 * the store (ceilings, calibrations) and are told not to record. A run the
 * store refuses even after reconnecting is not lost: its report stays in
 * the sweep's directory for `ntprof history import`, and the sweep says so. */
typedef struct sweep_recorder {
    ntp_store *st; /* NULL: the children record (SQLite, --no-db) */
    int n_unrecorded;
    bool *unrecorded; /* per configuration */
} sweep_recorder;

/* Record configuration c's result; on failure say so and keep its report. */
static void sweep_record(ntp_ctx *ctx, sweep_recorder *rec, ntp_sweep *sw, int c, const char *dir,
                         char *state, size_t state_len)
{
    const ntp_run_result *res = ntp_sweep_result(sw, c);
    if (!rec->st || !res)
        return;
    ntp_ctx_clear(ctx);
    if (ntp_store_add_run(ctx, rec->st, res, NULL) == NTP_STATUS_OK) {
        cli_print_warnings(ctx); /* a lost connection re-established */
        return;
    }
    char words[1024];
    const char *why = cli_message(ntp_ctx_errmsg(ctx), words, sizeof words);
    fprintf(
        stderr,
        "ntprof: warning: sweep %s: not recorded: %s; its report is kept as %s/config-%d.json\n",
        ntp_sweep_config_label(sw, c), why, dir, c);
    size_t n = strlen(state);
    snprintf(state + n, state_len - n, " (not recorded)");
    rec->unrecorded[c] = true;
    rec->n_unrecorded++;
    ntp_ctx_clear(ctx);
}

/* ntprof sweep FILE --generate --vary ...: a decoder's generation over
 * configurations is `ntprof generate --vary` (docs/decoders.md): its points
 * are two plans and a cache driven in a loop in this process, with a report
 * of their own (TTFT, TPOT, tokens/s per phase), not `ntprof run` children.
 * The same words reach it, less --generate; a sweep with nothing to vary is
 * refused here, as the run sweep refuses it. */
static int sweep_generate(int argc, char **argv, int at)
{
    bool varied = false;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--vary") == 0 || strncmp(argv[i], "--vary=", 7) == 0 ||
            strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            varied = true;
    if (!varied) {
        cli_error("sweep --generate needs at least one --vary NAME=V1,V2,...");
        return CLI_USAGE;
    }
    char **args = malloc((size_t)argc * sizeof *args);
    if (!args) {
        cli_error("out of memory");
        return CLI_FAIL;
    }
    int n = 0;
    for (int i = 0; i < argc; i++)
        if (i != at)
            args[n++] = argv[i];
    int rc = cmd_generate(n, args);
    free(args);
    return rc;
}

int cmd_sweep(int argc, char **argv)
{
    /* Load runs (cmd-sweep-load.c) and decoder generation: options of
     * their own. */
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--load") == 0)
            return sweep_load(argc, argv);
        if (strcmp(argv[i], "--generate") == 0)
            return sweep_generate(argc, argv, i);
    }
    argv_list fixed = {0};
    sweep_recorder rec = {0};
    const char *vary[64];
    int n_vary = 0;
    ntp_sweep_design design = NTP_SWEEP_OFAT;
    ntp_format fmt = NTP_FORMAT_TABLE;
    const char *output = NULL, *html = NULL, *keep = NULL, *db = NULL;
    bool use_db = true;
    double timeout = 0;
    bool fixed_builtin[4] = {false}; /* backend, precision, batch, threads given as fixed */
    cli_topo_opts topo = {0};
    /* --executor slurm and the commands on recorded sweeps. */
    bool slurm = false;
    const char *task = NULL, *resume = NULL, *report_id = NULL;
    const char *sbatch_args[SWEEP_MAX_SBATCH_ARGS];
    sweep_slurm_args sa = {0};
    /* --train: training over the configurations. */
    bool train = false, train_opt = false;
    ntp_train_opts to;
    ntp_train_opts_init(&to);
    /* The options handed to every configuration are listed together in
     * one block of text, so their entries carry no help of their own. */
    const cli_option opts[] = {
        CLI_HELP("usage: ntprof sweep FILE --vary NAME=V1,V2,... [--vary ...] [options]\n"
                 "\n"
                 "Runs the topology once per configuration, each in a process of its own, and\n"
                 "tabulates every configuration's end-to-end figures with their spread. NAME is\n"
                 "backend, precision, batch, threads or any <param> of the topology.\n"
                 "With --load, load runs over QPS, instances, max batch... instead\n"
                 "('ntprof sweep --load --help'); with --generate, a decoder's prefill and\n"
                 "decode over context, batch, kv_heads, KV dtype... ('ntprof generate --help').\n"
                 "\n"
                 "sweep:\n"),
        CLI_OPT("vary", OPT_VARY, "NAME=V1,...",
                "a factor and its values (repeatable); the first value\n"
                "of each is the baseline"),
        CLI_OPT("design", OPT_DESIGN, "D",
                "ofat (default: one factor at a time around the\n"
                "baseline) or full (every combination)"),
        CLI_OPT("timeout", OPT_TIMEOUT, "S",
                "stop a configuration after S seconds (default: none)"),
        CLI_STR("keep", OPT_KEEP, "DIR", "keep each configuration's report and log in DIR", &keep),
        CLI_HELP(
            "options given to every configuration (not also varied):\n"
            "  -s, --set NAME=VALUE   -b, --batch N   -p, --precision P   -B, --backend NAME\n"
            "  -t, --threads N        -w, --warmup N  -n, --iterations N  --min-time S\n"
            "      --seed N           --fuse          --no-accuracy       --pin CPUS\n"
            "      --db PATH          --no-db         (each configuration's run is recorded)\n"),
        CLI_OPT("set", 's', "NAME=VALUE", NULL),
        CLI_OPT("batch", 'b', "N", NULL),
        CLI_OPT("precision", 'p', "P", NULL),
        CLI_OPT("backend", 'B', "NAME", NULL),
        CLI_OPT("threads", 't', "N", NULL),
        CLI_OPT("warmup", 'w', "N", NULL),
        CLI_OPT("iterations", 'n', "N", NULL),
        CLI_OPT("min-time", OPT_MIN_TIME, "S", NULL),
        CLI_OPT("seed", OPT_SEED, "N", NULL),
        CLI_OPT("fuse", OPT_FUSE, NULL, NULL),
        CLI_OPT("no-accuracy", OPT_NO_ACCURACY, NULL, NULL),
        CLI_OPT("pin", OPT_PIN, "CPUS", NULL),
        CLI_OPT("db", OPT_DB, "PATH", NULL),
        CLI_OPT("no-db", OPT_NO_DB, NULL, NULL),
        CLI_HELP("executor:\n"),
        CLI_OPT("executor", OPT_EXECUTOR, "E",
                "local (default: a process per configuration here)\n"
                "or slurm (one job array; docs/cluster.md)"),
        CLI_STR("partition", OPT_PARTITION, "P", "slurm: the partition", &sa.slurm.partition),
        CLI_STR("time", OPT_TIME, "T", "slurm: each task's time limit (sbatch --time)",
                &sa.slurm.time),
        CLI_OPT("max-parallel", OPT_MAX_PARALLEL, "N", "slurm: at most N tasks at once"),
        CLI_OPT("sbatch-arg", OPT_SBATCH_ARG, "ARG",
                "slurm: one more sbatch argument (repeatable)"),
        CLI_OPT("shared", OPT_SHARED, NULL,
                "slurm: share nodes between tasks (default:\n"
                "--exclusive, one task per node)"),
        CLI_OPT("wait", OPT_WAIT, NULL, "slurm: follow the array and write the report"),
        CLI_STR("resume", OPT_RESUME, "ID", "slurm: resubmit what sweep ID is missing", &resume),
        CLI_STR("report", OPT_REPORT, "ID", "the report of recorded sweep ID from the store",
                &report_id),
        CLI_STR("task", OPT_TASK, "ID:N",
                "run configuration N of recorded sweep ID (what\n"
                "an array task runs)",
                &task),
        CLI_HELP("training (docs/train.md):\n"),
        CLI_OPT("train", OPT_TRAIN, NULL,
                "train each configuration (batch, params) here, with\n"
                "its memory by data structure and measured peak"),
        CLI_OPT("loss", OPT_TRAIN_LOSS, "L", "--train: cross_entropy (default), mse or ctc"),
        CLI_OPT("optimizer", OPT_TRAIN_OPTIMIZER, "O", "--train: sgd (default), momentum or adam"),
        CLI_OPT("lr", OPT_TRAIN_LR, "X", "--train: learning rate"),
        CLI_OPT("steps", OPT_TRAIN_STEPS, "N", "--train: steps per configuration (default 10)"),
        CLI_HELP("output:\n"),
        CLI_OPT("format", 'f', "F", "table (default), json or csv"),
        CLI_STR("output", 'o', "FILE", "write the table to FILE (written only on success)",
                &output),
        CLI_STR("html", OPT_HTML, "FILE", "also write a self-contained HTML report with charts",
                &html),
        CLI_OPT("help", 'h', NULL, "this text"),
        CLI_OPT_END,
    };
    cli_getopt_state gs = {0};
    int opt, rc = CLI_USAGE;
    while ((opt = cli_getopt(argc, argv, opts, &gs)) != -1) {
        const char *flag = NULL;
        switch (opt) {
        case OPT_VARY:
            if (n_vary == 64) {
                cli_error("at most 64 --vary options");
                goto out;
            }
            vary[n_vary++] = optarg;
            continue;
        case OPT_DESIGN:
            if (ntp_sweep_design_parse(optarg, &design) != NTP_STATUS_OK) {
                cli_error("--design expects ofat or full, got '%s'", optarg);
                goto out;
            }
            continue;
        case OPT_EXECUTOR:
            if (!sweep_slurm_option(SWEEP_OPT_EXECUTOR, optarg, &sa, sbatch_args, &slurm))
                goto out;
            continue;
        case OPT_MAX_PARALLEL:
            if (!sweep_slurm_option(SWEEP_OPT_MAX_PARALLEL, optarg, &sa, sbatch_args, &slurm))
                goto out;
            continue;
        case OPT_SBATCH_ARG:
            if (!sweep_slurm_option(SWEEP_OPT_SBATCH_ARG, optarg, &sa, sbatch_args, &slurm))
                goto out;
            continue;
        case OPT_TRAIN: train = true; continue;
        case OPT_TRAIN_LOSS:
            train_opt = true;
            if (ntp_loss_parse(optarg, &to.loss) != NTP_STATUS_OK) {
                cli_error("--loss expects cross_entropy, mse or ctc, got '%s'", optarg);
                goto out;
            }
            continue;
        case OPT_TRAIN_OPTIMIZER:
            train_opt = true;
            if (ntp_optimizer_parse(optarg, &to.optimizer) != NTP_STATUS_OK) {
                cli_error("--optimizer expects sgd, momentum or adam, got '%s'", optarg);
                goto out;
            }
            continue;
        case OPT_TRAIN_LR:
            train_opt = true;
            if (!cli_parse_double(optarg, 1e-300, 1e6, &to.lr)) {
                cli_error("--lr expects a positive number, got '%s'", optarg);
                goto out;
            }
            continue;
        case OPT_TRAIN_STEPS: {
            int64_t v;
            train_opt = true;
            if (!cli_parse_int(optarg, 1, 1000000, &v)) {
                cli_error("--steps expects a positive integer, got '%s'", optarg);
                goto out;
            }
            to.steps = (int)v;
            continue;
        }
        case OPT_SHARED: sa.slurm.shared = true; continue;
        case OPT_WAIT: sa.wait = true; continue;
        case OPT_TIMEOUT:
            if (!cli_parse_double(optarg, 0.001, 1e6, &timeout)) {
                cli_error("--timeout expects seconds, got '%s'", optarg);
                goto out;
            }
            continue;
        case 'f':
            if (!cli_parse_format(optarg, &fmt))
                goto out;
            continue;
        case 's':
            flag = "--set";
            if (cli_topo_option(&topo, opt, optarg) < 0)
                goto out;
            break;
        case 'b':
            flag = "--batch";
            fixed_builtin[2] = true;
            break;
        case 'p':
            flag = "--precision";
            fixed_builtin[1] = true;
            break;
        case 'B':
            flag = "--backend";
            fixed_builtin[0] = true;
            break;
        case 't':
            flag = "--threads";
            fixed_builtin[3] = true;
            break;
        case 'w': flag = "--warmup"; break;
        case 'n': flag = "--iterations"; break;
        case OPT_MIN_TIME: flag = "--min-time"; break;
        case OPT_SEED: flag = "--seed"; break;
        case OPT_PIN: flag = "--pin"; break;
        case OPT_DB:
            flag = "--db";
            db = optarg;
            break;
        case OPT_FUSE:
            if (!push(&fixed, "--fuse"))
                goto oom;
            continue;
        case OPT_NO_ACCURACY:
            if (!push(&fixed, "--no-accuracy"))
                goto oom;
            continue;
        case OPT_NO_DB:
            use_db = false;
            if (!push(&fixed, "--no-db"))
                goto oom;
            continue;
        default: rc = cli_option_end("sweep", opt, opts, 25); goto out;
        }
        /* The child checks the value and names the option in its error. */
        if (!push(&fixed, flag) || !push(&fixed, optarg))
            goto oom;
    }
    sa.slurm.extra = sbatch_args;
    sa.db = db;
    sa.fmt = fmt;
    sa.output = output;
    sa.html = html;
    if (task || resume || report_id) {
        if ((task != NULL) + (resume != NULL) + (report_id != NULL) > 1 || optind < argc ||
            n_vary > 0) {
            cli_error("--task, --resume and --report take a sweep ID and no FILE or --vary");
            goto out;
        }
        /* The run options typed with --resume, less --db: the sweep's own
         * are what it runs, and others are refused. */
        argv_list typed = {0};
        for (int i = 0; resume && i < fixed.n; i++) {
            if (strcmp(fixed.v[i], "--db") == 0) {
                i++;
                continue;
            }
            if (!push(&typed, fixed.v[i])) {
                free(typed.v);
                goto oom;
            }
        }
        sa.run_opts = typed.v;
        sa.n_run_opts = typed.n;
        rc = task     ? sweep_slurm_task(task, db)
             : resume ? sweep_slurm_resume(resume, &sa)
                      : sweep_slurm_report(report_id, &sa);
        free(typed.v);
        goto out;
    }
    if (!sweep_slurm_check(slurm, &sa, timeout))
        goto out;
    if (train_opt && !train) {
        cli_error("--loss, --optimizer, --lr and --steps are for sweep --train");
        goto out;
    }
    if (!cli_want_files("sweep", argc, argv, 1, "a topology FILE"))
        goto out;
    if (n_vary == 0) {
        cli_error("sweep needs at least one --vary NAME=V1,V2,...");
        goto out;
    }
    const char *file = argv[optind];
    ntp_ctx *ctx = ntp_ctx_init();
    if (!ctx)
        goto oom;
    ntp_load_opts lo = cli_load_opts(&topo);
    ntp_graph *g = NULL;
    ntp_sweep *sw = NULL;
    /* No report over the history the runs write into. */
    char dflt[4096];
    const ntp_output_path outs[] = {cli_db_output(ctx, db, use_db, dflt, sizeof dflt),
                                    {"-o", output, NTP_OUTPUT_FILE},
                                    {"--html", html, NTP_OUTPUT_FILE}};
    ntp_ctx_clear(ctx);
    if (cli_check_outputs(ctx, outs, 3, &file, 1) != CLI_OK) {
        rc = CLI_FAIL;
        goto done;
    }
    if (ntp_graph_load(ctx, file, &lo, &g) != NTP_STATUS_OK ||
        ntp_sweep_init(ctx, g, file, design, &sw) != NTP_STATUS_OK) {
        rc = cli_fail(ctx);
        goto done;
    }
    rc = CLI_OK;
    for (int i = 0; i < n_vary && rc == CLI_OK; i++) {
        if (ntp_sweep_add_factor(ctx, sw, vary[i]) != NTP_STATUS_OK) {
            cli_fail(ctx);
            rc = CLI_USAGE;
            break;
        }
        static const char *const builtin[] = {"backend", "precision", "batch", "threads"};
        const char *name = ntp_sweep_factor_name(sw, i);
        for (int k = 0; k < 4; k++)
            if (fixed_builtin[k] && strcmp(name, builtin[k]) == 0) {
                cli_error("--vary %s and --%s both set %s; give one", name, builtin[k], name);
                rc = CLI_USAGE;
            }
        for (int k = 0; k < topo.n_set && rc == CLI_OK; k++) {
            size_t n = strlen(name);
            if (strncmp(topo.set[k], name, n) == 0 && topo.set[k][n] == '=') {
                cli_error("--vary %s and --set %s both set %s; give one", name, topo.set[k], name);
                rc = CLI_USAGE;
            }
        }
    }
    if (rc == CLI_OK && ntp_sweep_expand(ctx, sw) != NTP_STATUS_OK) {
        cli_fail(ctx);
        rc = CLI_USAGE;
    }
    if (rc != CLI_OK)
        goto done;
    if (train) {
        const sweep_train_args ta = {slurm, html, keep, output, timeout, fmt};
        rc = sweep_train(ctx, sw, file, &lo, &to, &fixed, &ta);
        goto done;
    }
    if (slurm) {
        /* The tasks record their runs themselves, in the sweep's store. */
        argv_list keep_opts = {0};
        for (int i = 0; i < fixed.n; i++) {
            if (strcmp(fixed.v[i], "--no-db") == 0) {
                cli_error("--executor slurm records the sweep in a store; drop --no-db");
                rc = CLI_USAGE;
                free(keep_opts.v);
                goto done;
            }
            if (strcmp(fixed.v[i], "--db") == 0) {
                i++;
                continue;
            }
            if (!push(&keep_opts, fixed.v[i])) {
                free(keep_opts.v);
                cli_error("out of memory");
                rc = CLI_FAIL;
                goto done;
            }
        }
        if (keep)
            sa.slurm.output = keep;
        rc = sweep_slurm_submit(ctx, sw, file, design == NTP_SWEEP_FULL ? "full" : "ofat", vary,
                                n_vary, &keep_opts, &sa);
        free(keep_opts.v);
        goto done;
    }

    char self[PATH_MAX], dir[PATH_MAX];
    if (cli_sweep_prepare(keep, self, sizeof self, dir, sizeof dir) != CLI_OK) {
        rc = CLI_FAIL;
        goto done;
    }
    int n = ntp_sweep_config_count(sw), failed = 0;
    if (use_db && db && ntp_store_is_url(db)) {
        /* The store reached before anything runs, as `run` does. */
        if (!(rec.unrecorded = calloc((size_t)n, sizeof *rec.unrecorded)) ||
            !push(&fixed, "--no-record")) {
            cli_error("out of memory");
            rc = CLI_FAIL;
        } else if (ntp_store_open(ctx, db, NTP_STORE_CREATE, &rec.st) != NTP_STATUS_OK) {
            rc = cli_fail(ctx);
        }
        if (rc != CLI_OK) {
            if (!keep)
                sweep_clean_dir(dir, 0);
            goto done;
        }
        cli_print_warnings(ctx);
    }
    cli_progress prog;
    cli_progress_init(&prog);
    for (int c = 0; c < n; c++) {
        char state[1200];
        const char *label = ntp_sweep_config_label(sw, c);
        progress(&prog, c, n, label, NULL);
        sweep_run_one(ctx, sw, c, self, file, &fixed, dir, timeout, state, sizeof state);
        sweep_record(ctx, &rec, sw, c, dir, state, sizeof state);
        failed += ntp_sweep_result(sw, c) == NULL;
        progress(&prog, c + 1, n, label, state);
    }
    cli_progress_clear(&prog);
    ntp_store_close(rec.st);
    rec.st = NULL;
    if (rec.n_unrecorded > 0) {
        if (!keep) {
            char p[PATH_MAX];
            for (int c = 0; c < n; c++) {
                if (snprintf(p, sizeof p, "%s/config-%d.log", dir, c) < (int)sizeof p)
                    unlink(p);
                if (!rec.unrecorded[c] &&
                    snprintf(p, sizeof p, "%s/config-%d.json", dir, c) < (int)sizeof p)
                    unlink(p);
            }
        }
    } else if (!keep) {
        sweep_clean_dir(dir, n);
    }
    /* A configuration that failed is reported in the table; the sweep as a
     * whole fails only when nothing ran, and then writes no output (the
     * table, saying why each failed, goes to stderr). */
    if (failed == n) {
        write_sweep(ctx, sw, NTP_FORMAT_TABLE, stderr);
        cli_error("every configuration failed");
        rc = CLI_FAIL;
        goto done;
    }
    rc = cli_write_output(ctx, output, write_sweep, sw, fmt);
    if (rc == CLI_OK && html)
        rc = cli_write_output(ctx, html, write_html, sw, NTP_FORMAT_TABLE);
    if (rc == CLI_OK && failed > 0) {
        fprintf(stderr, "ntprof: warning: %d of %d configurations failed (see the table)\n", failed,
                n);
    }
    if (rec.n_unrecorded > 0) {
        /* The measurements are in the table and the kept reports, but the
         * store lacks them: a failure, as for `run --db URL`. Import is
         * idempotent (each report carries its run's UUID), so the whole
         * directory may be given. */
        cli_error("%d of %d runs were not recorded (the store could not be written); to add "
                  "them: ntprof history import --db URL %s/config-*.json",
                  rec.n_unrecorded, n, dir);
        rc = CLI_FAIL;
    }
done:
    ntp_store_close(rec.st);
    free(rec.unrecorded);
    ntp_sweep_free(sw);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
out:
    free(fixed.v);
    cli_topo_free(&topo);
    return rc;
oom:
    cli_error("out of memory");
    rc = CLI_FAIL;
    goto out;
}
