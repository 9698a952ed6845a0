/* ntprof: entry point and subcommand dispatch. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cmd-onnx.h"
#include "ntp-version.h"

int cmd_counters(int argc, char **argv);

/* The "auto" wait policy (see wait_policies below): how long the machine
 * is watched before choosing, and the share of its CPUs other processes
 * must be taking for the passive policy to be chosen (the sample resolves
 * about 2 / (100 Hz x 0.2 s) = 10%). */
#define NTP_AUTO_SAMPLE_S 0.2
#define NTP_AUTO_BUSY 0.25

typedef struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} command;

int cmd_compare(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_machine(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_load(int argc, char **argv);
int cmd_predict(int argc, char **argv);

static const command commands[] = {
    {"run", cmd_run, "build a topology on a backend, run it and measure where time goes"},
    {"analyze", cmd_analyze,
     "shapes, parameters, FLOPs and memory of a topology, without running it"},
    {"export", cmd_export, "write a topology as an ONNX model with its weights"},
    {"convert", cmd_convert, "write a model's architecture (ONNX or markup) as editable markup"},
    {"counters", cmd_counters,
     "what this machine can count (--counters, --tool) and why not the rest"},
    {"machine", cmd_machine,
     "this machine's topology and measured ceilings (peak FLOP/s, bandwidth)"},
    {"compare", cmd_compare, "runs side by side: layers aligned, speedups with confidence"},
    {"sweep", cmd_sweep, "run over configurations (params, backend, precision, batch, threads)"},
    {"history", cmd_history, "runs recorded in the history database"},
    {"generate", cmd_generate,
     "prefill and decode of a decoder with a KV cache: TTFT, TPOT, tok/s"},
    {"train", cmd_train,
     "training steps per layer (forward, backward, update) and memory by data structure"},
    {"load", cmd_load, "serve under load as MLPerf LoadGen does: latency and QPS by scenario"},
    {"predict", cmd_predict,
     "per-layer latency predicted without running, from a machine's calibration"},
};
#define N_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: ntprof <command> [options] FILE\n\ncommands:\n");
    for (int i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "  %-10s %s\n", "help", "this text, or `ntprof help <command>`");
    fprintf(f, "\n`ntprof <command> --help` describes a command's options.\n"
               "`ntprof --version` prints the version.\n");
}

/* --- the thread pools' wait policy (docs/run.md#wait-policy) ----------------------- *
 *
 * The OpenMP runtime under oneDNN (libgomp) and OpenBLAS's thread server
 * decide how long an idle worker spins before it sleeps, and they read that
 * from the environment once, when they are loaded: before main. A worker
 * that spins while a sibling thread waits for a CPU held by another
 * process keeps that CPU from it, and a two-thread run beside two busy
 * processes took 24 times its quiet time. So ntprof sets the policy in its
 * environment and runs itself again, once, before anything else; the
 * library reports the policy it finds in effect (ntp_wait_policy). */

/* The environment of each policy: libgomp's GOMP_SPINCOUNT (iterations of
 * a pause loop before a futex wait; its default is 300,000, and
 * OMP_WAIT_POLICY=passive makes it 0) and OpenBLAS's
 * OPENBLAS_THREAD_TIMEOUT (a worker polls, yielding, for 2^N cycles,
 * default 2^28, before it sleeps; 4 is the least it takes). */
typedef struct wait_policy {
    const char *name;
    const char *omp_wait_policy; /* NULL: leave unset */
    const char *gomp_spincount;
    const char *openblas_timeout;
} wait_policy;

static const wait_policy wait_policies[] = {
    /* The runtimes' own defaults: fastest on an idle machine, many times
     * slower beside busy processes. */
    {"spin", NULL, NULL, NULL},
    /* Sleep at once: a waiting worker leaves its CPU to whoever needs it;
     * on an idle machine each wake-up costs (ResNet-50: +75%). */
    {"passive", "PASSIVE", NULL, "4"},
    /* Chosen at start (auto_policy): one of these two. Spinning 10,000
     * iterations (tens of microseconds) bridges the gaps between oneDNN's
     * parallel regions on an idle machine as the default 300,000 does.
     * OpenBLAS's workers poll from the moment the library loads: at its
     * default 2^28 cycles (0.13 s at 2.1 GHz) a worker burned a CPU through
     * the start of every run, whatever the backend, and a short run's
     * counters summed it into its rows (a one-thread fc counted twice its
     * wall time). 2^22 cycles (2 ms) ends that before the model is built
     * and keeps the blas backend's idle speed (MobileNetV2: 1.01x, 2^20
     * 1.04x; docs/run.md). */
    {"auto", NULL, NULL, NULL},
};
static const wait_policy auto_idle = {"auto: short spin", NULL, "10000", "22"};

/* The policy named by --wait-policy P / --wait-policy=P in argv (removed
 * from it), or by NTPROF_WAIT_POLICY; "auto" when neither. NULL after a
 * usage error. */
static const wait_policy *wait_policy_wanted(int *argc, char **argv, bool *explicit_)
{
    const char *name = NULL;
    *explicit_ = false;
    for (int i = 2; i < *argc; i++) {
        int used = 0;
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--wait-policy") == 0) {
            if (i + 1 >= *argc) {
                cli_error("--wait-policy expects spin, passive or auto");
                return NULL;
            }
            name = argv[i + 1];
            used = 2;
        } else if (strncmp(argv[i], "--wait-policy=", 14) == 0) {
            name = argv[i] + 14;
            used = 1;
        }
        if (used) {
            memmove(&argv[i], &argv[i + used], (size_t)(*argc - i - used + 1) * sizeof *argv);
            *argc -= used;
            i--;
            *explicit_ = true;
        }
    }
    if (!name)
        name = getenv("NTPROF_WAIT_POLICY");
    if (!name || !*name)
        name = "auto";
    for (size_t i = 0; i < sizeof wait_policies / sizeof wait_policies[0]; i++)
        if (strcmp(name, wait_policies[i].name) == 0)
            return &wait_policies[i];
    cli_error("--wait-policy expects spin, passive or auto, got '%s'", name);
    return NULL;
}

/* Whether var already holds value (NULL: unset). */
static bool env_is(const char *var, const char *value)
{
    const char *v = getenv(var);
    return value ? v && strcmp(v, value) == 0 : v == NULL;
}

static void set_or_unset(const char *var, const char *value)
{
    if (value)
        setenv(var, value, 1);
    else
        unsetenv(var);
}

/* Apply the wanted policy: set its environment and run this program again,
 * unless this process already runs under it (NTPROF_WAIT_POLICY_APPLIED).
 * Settings of the user's own (OMP_WAIT_POLICY, GOMP_SPINCOUNT,
 * OPENBLAS_THREAD_TIMEOUT in the environment) win over "auto"; an explicit
 * --wait-policy wins over them. Returns false after a usage error. */
static bool apply_wait_policy(int *argc, char **argv)
{
    bool explicit_;
    const wait_policy *p = wait_policy_wanted(argc, argv, &explicit_);
    if (!p)
        return false;
    const char *applied = getenv("NTPROF_WAIT_POLICY_APPLIED");
    if (applied && strcmp(applied, p->name) == 0)
        return true;
    if (applied && !explicit_)
        return true; /* a child of a run (--tool) keeps its parent's */
    bool user = getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT") ||
                getenv("OPENBLAS_THREAD_TIMEOUT") || getenv("GOTO_THREAD_TIMEOUT");
    if (user && !explicit_ && strcmp(p->name, "auto") == 0) {
        setenv("NTPROF_WAIT_POLICY_APPLIED", "environment", 1);
        return true;
    }
    char name[128];
    if (strcmp(p->name, "auto") == 0) {
        /* Watch the machine: beside busy processes, sleep at once;
         * otherwise spin briefly (docs/run.md#wait-policy). */
        ntp_contention c;
        ntp_contention_sample(NTP_AUTO_SAMPLE_S, &c);
        double others = c.measured ? c.other + c.steal : 0;
        if (c.measured && others >= NTP_AUTO_BUSY) {
            snprintf(name, sizeof name, "auto: passive (others used %.0f%% of the CPUs at start)",
                     100 * others);
            p = &wait_policies[1];
        } else {
            snprintf(name, sizeof name,
                     "auto: short spin (others used %.0f%% of the CPUs at start)", 100 * others);
            p = &auto_idle;
        }
        setenv("NTPROF_WAIT_POLICY_APPLIED", name, 1);
    } else {
        setenv("NTPROF_WAIT_POLICY_APPLIED", p->name, 1);
    }
    /* Nothing to change (spin, with none of the variables set): the
     * runtimes already run under it. */
    if (env_is("OMP_WAIT_POLICY", p->omp_wait_policy) &&
        env_is("GOMP_SPINCOUNT", p->gomp_spincount) &&
        env_is("OPENBLAS_THREAD_TIMEOUT", p->openblas_timeout) && !getenv("GOTO_THREAD_TIMEOUT"))
        return true;
    /* Under valgrind a new program would run without it: stay, spinning. */
    const char *preload = getenv("LD_PRELOAD");
    if (preload && strstr(preload, "vgpreload")) {
        setenv("NTPROF_WAIT_POLICY_APPLIED", "spin", 1);
        return true;
    }
    set_or_unset("OMP_WAIT_POLICY", p->omp_wait_policy);
    set_or_unset("GOMP_SPINCOUNT", p->gomp_spincount);
    set_or_unset("OPENBLAS_THREAD_TIMEOUT", p->openblas_timeout);
    unsetenv("GOTO_THREAD_TIMEOUT");
    execv("/proc/self/exe", argv);
    /* No /proc (or no exec): go on under the runtimes' defaults, and say so
     * in the report. */
    setenv("NTPROF_WAIT_POLICY_APPLIED", "spin", 1);
    cli_error("--wait-policy %s: cannot run %s again (%s); the thread pools spin as by default",
              p->name, argv[0], strerror(errno));
    return true;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        /* The backends this machine can use; built ones it cannot (an
         * accelerator's without its device) on a line of their own. */
        const char *usable = ntp_backends_available(), *built = ntp_backends();
        printf("ntprof %s (git %s; backends: %s)\n", NTP_VERSION_STRING, NTP_GIT_REVISION, usable);
        for (const char *b = built; *b;) {
            char name[64], why[512];
            size_t n = strcspn(b, ",");
            snprintf(name, sizeof name, "%.*s", (int)n, b);
            if (!ntp_backend_usable(name, why, sizeof why))
                printf("%s: built, but not usable on this machine: %s\n", name, why);
            b += n + (b[n] == ',');
        }
        return CLI_OK;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        if (argc >= 3 && strcmp(cmd, "help") == 0) {
            for (int i = 0; i < N_COMMANDS; i++)
                if (strcmp(argv[2], commands[i].name) == 0) {
                    char *args[] = {argv[2], (char *)"--help", NULL};
                    return commands[i].fn(2, args);
                }
            cli_error("unknown command '%s'", argv[2]);
            return CLI_USAGE;
        }
        usage(stdout);
        return CLI_OK;
    }
    for (int i = 0; i < N_COMMANDS; i++)
        if (strcmp(cmd, commands[i].name) == 0) {
            /* The commands that run backends' thread pools. */
            bool pools = strcmp(cmd, "run") == 0 || strcmp(cmd, "sweep") == 0;
            if (pools && !apply_wait_policy(&argc, argv))
                return CLI_USAGE;
            return commands[i].fn(argc - 1, argv + 1);
        }
    const char *names[N_COMMANDS];
    for (int i = 0; i < N_COMMANDS; i++)
        names[i] = commands[i].name;
    const char *best = ntp_nearest_name(cmd, names, N_COMMANDS);
    if (best)
        cli_error("unknown command '%s'; did you mean '%s'?", cmd, best);
    else
        cli_error("unknown command '%s'; try 'ntprof help'", cmd);
    return CLI_USAGE;
}
