/* ntprof sweep's pieces shared by its executors: local (cmd-sweep.c, a
 * process per configuration here) and slurm (cmd-sweep-slurm.c, an array
 * task per configuration on a cluster). */
#ifndef NTPROF_CMD_SWEEP_H
#define NTPROF_CMD_SWEEP_H

#include <sys/types.h>

#include "cli.h"
#include "ntprof/cluster.h"

/* A NULL-terminated argv that grows. */
typedef struct argv_list {
    const char **v;
    int n, cap;
} argv_list;

bool sweep_push(argv_list *a, const char *s);

/* Run configuration c of sw in a child `self run FILE <fixed> <config>
 * --format json -o DIR/config-C.json`, recording its result or error in
 * sw; `state` receives a line saying how it went. */
void sweep_run_one(ntp_ctx *ctx, ntp_sweep *sw, int c, const char *self, const char *file,
                   const argv_list *fixed, const char *dir, double timeout, char *state,
                   size_t state_len);

/* The child sweep_run_one is waiting for (0: none), for a signal handler
 * that must stop it before removing its files. */
extern volatile pid_t sweep_child;

/* Remove what sweep_run_one left in a temporary directory. */
void sweep_clean_dir(const char *dir, int n);

/* ntprof sweep FILE --load ...: load runs over configurations
 * (cmd-sweep-load.c). */
int sweep_load(int argc, char **argv);

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

/* Record the expanded sweep sw of `file` in the store and submit it as one
 * array; with --wait, follow it and write the report. `fixed` are the run
 * options every configuration gets (no --db), `vary` the factors. */
int sweep_slurm_submit(ntp_ctx *ctx, ntp_sweep *sw, const char *file, const char *design,
                       const char *const *vary, int n_vary, const argv_list *fixed,
                       const sweep_slurm_args *a);
/* ntprof sweep --task ID:INDEX: run one configuration of a recorded sweep
 * and write its result to the store. */
int sweep_slurm_task(const char *spec, const char *db);
/* ntprof sweep --resume ID: resubmit what did not run; --report ID: the
 * report of a recorded sweep as the store has it now. */
int sweep_slurm_resume(const char *id, const sweep_slurm_args *a);
int sweep_slurm_report(const char *id, const sweep_slurm_args *a);

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
