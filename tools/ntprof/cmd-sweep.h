/* ntprof sweep's pieces shared by its executors: local (cmd-sweep.c, a
 * process per configuration here) and slurm (cmd-sweep-slurm.c, an array
 * task per configuration on a cluster). */
#ifndef NTPROF_CMD_SWEEP_H
#define NTPROF_CMD_SWEEP_H

#include <limits.h>
#include <sys/types.h>

#include "cli.h"
#include "ntprof/cluster.h"

/* A NULL-terminated argv that grows. */
typedef struct argv_list {
    const char **v;
    int n, cap;
} argv_list;

bool sweep_push(argv_list *a, const char *s);

/* Find this ntprof (/proc/self/exe) into self, and make the directory the
 * configurations' reports and logs go in: --keep DIR (created if need be)
 * or a new temporary one; CLI_OK, or CLI_FAIL having said why. */
int cli_sweep_prepare(const char *keep, char *self, size_t self_len, char *dir, size_t dir_len);

/* Configuration c's report DIR/config-C.json and log DIR/config-C.log;
 * false when a path is too long. */
bool sweep_paths(const char *dir, int c, char report[PATH_MAX], char log[PATH_MAX]);

/* Start self with argv a in a child whose stdout and stderr go to log;
 * its pid, or -1 with errno set. */
pid_t sweep_spawn(const char *self, const argv_list *a, const char *log);

/* Wait for child pid (sweep_child meanwhile), killing it after timeout
 * seconds (<= 0: none); its wait status in *status (-1: lost). True when
 * it timed out. */
bool sweep_wait(pid_t pid, double timeout, int *status);

/* The last non-empty, non-warning line of a child's log without its
 * "ntprof: " prefix (empty when none), cut to len. */
void sweep_last_line(const char *path, char *out, size_t len);

/* Run configuration c of sw in a child `self run FILE <fixed> <config>
 * --format json -o DIR/config-C.json`, recording its result or error in
 * sw; `state` receives a line saying how it went. */
void sweep_run_one(ntp_ctx *ctx, ntp_sweep *sw, int c, const char *self, const char *file,
                   const argv_list *fixed, const char *dir, double timeout, char *state,
                   size_t state_len);

/* The child sweep_run_one is waiting for (0: none), for a signal handler
 * that must stop it before removing its files. */
extern volatile pid_t sweep_child;
/* The signal that ended the last child sweep_wait waited for (0: it
 * exited). */
extern int sweep_child_signal;
/* Where that signal is one that stops a task (SIGTERM, SIGINT, SIGHUP),
 * raise it here: Slurm stops a task (its time limit, scancel) by
 * signalling every process of it, and the configuration may die of it
 * before this process is told. A Slurm task then stops as it would have
 * (its handler removes its files), writing no failure of its own, and the
 * sweep records Slurm's word on why (TIMEOUT, CANCELLED), not "killed by
 * signal 15". */
void sweep_stop_with_child(void);

/* Remove what sweep_run_one left in a temporary directory. */
void sweep_clean_dir(const char *dir, int n);

/* ntprof sweep FILE --load ...: load runs over configurations
 * (cmd-sweep-load.c). */
int sweep_load(int argc, char **argv);

/* ntprof generate (cmd-generate.c), which sweep --generate runs. */
int cmd_generate(int argc, char **argv);

/* --executor slurm and its commands (cmd-sweep-slurm.c). */
typedef struct sweep_slurm_args {
    ntp_slurm_opts slurm;
    const char *db; /* --db, or NULL for the default store */
    bool wait;
    ntp_format fmt;
    const char *output, *html;
    /* --resume: the run options typed with it (no --db), which must be
     * the sweep's own. */
    const char *const *run_opts;
    int n_run_opts;
} sweep_slurm_args;

/* The Slurm options every sweep kind takes that need parsing: --executor
 * (into *slurm), --max-parallel and --sbatch-arg (into a; sbatch_args holds
 * SWEEP_MAX_SBATCH_ARGS). False having said why. */
#define SWEEP_MAX_SBATCH_ARGS 64
typedef enum sweep_slurm_opt {
    SWEEP_OPT_EXECUTOR,
    SWEEP_OPT_MAX_PARALLEL,
    SWEEP_OPT_SBATCH_ARG,
} sweep_slurm_opt;
bool sweep_slurm_option(sweep_slurm_opt which, const char *arg, sweep_slurm_args *a,
                        const char **sbatch_args, bool *slurm);
/* The executors' options agree: the Slurm ones (--wait, --partition, ...)
 * need --executor slurm, and the local one (--timeout) refuses it. False
 * having said which. */
bool sweep_slurm_check(bool slurm, const sweep_slurm_args *a, double timeout);

/* Record the expanded sweep sw of `file` in the store and submit it as one
 * array; with --wait, follow it and write the report. `fixed` are the run
 * options every configuration gets (no --db), `vary` the factors. */
int sweep_slurm_submit(ntp_ctx *ctx, ntp_sweep *sw, const char *file, const char *design,
                       const char *const *vary, int n_vary, const argv_list *fixed,
                       const sweep_slurm_args *a);
/* Record sweep `design` (source, design, factors, options, n_configs,
 * kind; the rest is filled here) in the store as a Slurm sweep and submit
 * it as one array; with --wait, follow it and write the report. What
 * sweep_slurm_submit does for a run sweep and sweep_load for a load
 * sweep. */
int sweep_slurm_start(ntp_ctx *ctx, const ntp_sweep_record *design, const sweep_slurm_args *a);
/* ntprof sweep --task ID:INDEX: run one configuration of a recorded sweep
 * and write its result to the store. */
int sweep_slurm_task(const char *spec, const char *db);
/* ntprof sweep --resume ID: resubmit what did not run; --report ID: the
 * report of a recorded sweep as the store has it now. */
int sweep_slurm_resume(const char *id, const sweep_slurm_args *a);
int sweep_slurm_report(const char *id, const sweep_slurm_args *a);

/* A Slurm load sweep's pieces (cmd-sweep-load.c), which the Slurm
 * executor calls for a sweep of kind "load":
 * - the label of configuration c of r ("qps=200 instances=2"); false
 *   having said why (the record's factors do not expand as recorded);
 * - a task's own part: configuration t->index run as `ntprof load` in a
 *   child with its files in dir, its load run recorded in st, and t
 *   written (state, load run, error);
 * - the report of the sweep as the store has it (each configuration's
 *   load run, or why it has none), as the local load sweep writes it. */
bool sweep_load_label(const ntp_sweep_record *r, int c, char *label, size_t len);
int sweep_load_task(ntp_ctx *ctx, ntp_store *st, const ntp_sweep_record *r, const char *dir,
                    ntp_sweep_task *t);
int sweep_load_report(ntp_ctx *ctx, ntp_store *st, const ntp_sweep_record *r,
                      const sweep_slurm_args *a);

/* ntprof sweep --train (cmd-sweep-train.c): training over sw's
 * configurations in this process, with memory per configuration; `fixed`
 * may hold --set, --batch, --seed and --backend (the backward's). */
typedef struct sweep_train_args {
    bool slurm;
    const char *html, *keep, *output;
    double timeout;
    ntp_format fmt;
} sweep_train_args;
int sweep_train(ntp_ctx *ctx, const ntp_sweep *sw, const char *file, const ntp_load_opts *lo,
                const ntp_train_opts *o, const argv_list *fixed, const sweep_train_args *a);

#endif
