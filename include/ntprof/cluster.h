/* ntprof: sweeps run elsewhere (docs/cluster.md): a sweep's design kept in
 * the store while its configurations run as the tasks of a Slurm job
 * array, each writing its result to the store under the sweep's id.
 *
 *   record the design       ntp_store_sweep_add         (store)
 *   submit the array        ntp_slurm_submit            (cluster)
 *   a task: one config      ntp_store_sweep_task_set    (store)
 *   follow the array        ntp_slurm_query             (cluster)
 *   the report              ntp_store_sweep_tasks + ntp_store_load_run
 */
#ifndef NTPROF_CLUSTER_H
#define NTPROF_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ntprof/api.h"
#include "ntprof/status.h"
#include "ntprof/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- the sweep's design in the store (src/store/store-sweeps.c) ---------------------------- */

/* A sweep as recorded: enough to rebuild its configurations anywhere the
 * topology's path can be read (ntp_sweep_init, ntp_sweep_add_factor for
 * each factor, ntp_sweep_expand). */
typedef struct ntp_sweep_record {
    int64_t id;
    char created_at[32]; /* ISO 8601 UTC */
    char *source;        /* the topology's absolute path */
    char *design;        /* "ofat" or "full" */
    char **factors;      /* "NAME=V1,V2,...", in order */
    int n_factors;
    char **options; /* the `ntprof run` options every configuration gets */
    int n_options;
    int n_configs;
    char *executor; /* "slurm" ("local": a local load sweep's record) */
    char *submit;   /* JSON: how it was submitted (may be NULL) */
    char *jobs;     /* the Slurm job ids submitted, space separated ("" before any) */
    /* "run" (a configuration is `ntprof run`, its result a run) or "load"
     * (`ntprof sweep --load`: a configuration is `ntprof load`, its result
     * a load run, and factors/options are the load sweep's); "" when
     * recording means "run". */
    char kind[8];
} ntp_sweep_record;

/* Record rec (its id and created_at are ignored); *id receives the new id. */
NTP_API ntp_status ntp_store_sweep_add(ntp_ctx *ctx, ntp_store *s, const ntp_sweep_record *rec,
                                       int64_t *id);
/* Sweep `id`, of either kind (its `kind` says which); UNKNOWN_NAME when
 * the store has none. Free with ntp_sweep_record_free. */
NTP_API ntp_status ntp_store_sweep_get(ntp_ctx *ctx, ntp_store *s, int64_t id,
                                       ntp_sweep_record **out);
NTP_API void ntp_sweep_record_free(ntp_sweep_record *r);
/* Append a Slurm job id to the sweep's list. */
NTP_API ntp_status ntp_store_sweep_add_job(ntp_ctx *ctx, ntp_store *s, int64_t id, const char *job);

/* One configuration of a sweep, as far as it got. */
typedef struct ntp_sweep_task {
    int index;
    char state[16];    /* running, ok, failed, timed out, preempted, cancelled */
    int64_t run_id;    /* the run in the store when ok, else 0 */
    char job[32];      /* the Slurm job that ran it ("12_3") */
    char message[512]; /* why it failed */
    /* A load sweep's configuration: its load run when ok (else 0), and its
     * label ("qps=500 instances=2"; "" leaves a row's label as it is). */
    int64_t load_run_id;
    char label[256];
} ntp_sweep_task;

typedef enum ntp_sweep_task_write {
    /* A task's own write: replaces anything but an "ok" row, so a task run
     * twice (resubmitted, requeued) leaves one row and the first result. */
    NTP_SWEEP_TASK_UNLESS_OK,
    /* What the scheduler says of a task that ended: written only where the
     * task wrote nothing or is still "running" (it died before writing), so
     * the task's own message about a failure is kept. */
    NTP_SWEEP_TASK_IF_UNFINISHED
} ntp_sweep_task_write;

/* Write t for sweep `sweep` under the rule `how`; *written (may be NULL)
 * says whether it was written. */
NTP_API ntp_status ntp_store_sweep_task_set(ntp_ctx *ctx, ntp_store *s, int64_t sweep,
                                            const ntp_sweep_task *t, ntp_sweep_task_write how,
                                            bool *written);
/* Every row of sweep `sweep`, by index. Free *out with free(). */
NTP_API ntp_status ntp_store_sweep_tasks(ntp_ctx *ctx, ntp_store *s, int64_t sweep,
                                         ntp_sweep_task **out, int *n);
/* Run report r as JSON (ntp_report_write_run), marked as task t of sweep
 * rec (the report's "sweep": id, index, created_at, job): the report a
 * Slurm task keeps when the store refuses its run, which `history import`
 * then attributes to the task (ntp_store_sweep_task_import). r is not changed. */
NTP_API ntp_status ntp_report_write_run_sweep_task(ntp_ctx *ctx, const ntp_run_result *r,
                                                   const ntp_sweep_record *rec,
                                                   const ntp_sweep_task *t, FILE *f);
/* After `history import` stored r as run run_id: when r is the report a
 * Slurm task kept because the store refused its run (r->sweep_id > 0),
 * mark that task "ok" with run_id, so `sweep --resume` does not run it
 * again and `--report` shows it. *marked (may be NULL) says whether it was
 * marked: not when the history holds no sweep of that id created at the
 * report's time (another store's sweep; a warning says so), nor when the
 * task already has its result. */
NTP_API ntp_status ntp_store_sweep_task_import(ntp_ctx *ctx, ntp_store *s, const ntp_run_result *r,
                                               int64_t run_id, bool *marked);

/* --- Slurm (src/cluster/slurm.c) ------------------------------------------------------------
 * Slurm is driven through its commands (sbatch, scontrol, sacct), whose
 * output is stable across releases, rather than libslurm, whose API is
 * not. The commands found on PATH talk to the cluster SLURM_CONF names. */

/* How an array is submitted. */
typedef struct ntp_slurm_opts {
    const char *partition;    /* NULL: the cluster's default */
    const char *time;         /* per task, as sbatch --time takes it; NULL: the partition's */
    int max_parallel;         /* at most this many tasks at once (%N); 0: no limit */
    bool shared;              /* false (default): --exclusive, one task per node */
    const char *job_name;     /* NULL: "ntprof" */
    const char *output;       /* each task's stdout and stderr (sbatch --output); NULL: /dev/null */
    const char *const *extra; /* more sbatch arguments, given as they are */
    int n_extra;
} ntp_slurm_opts;

/* The --array value for the indices (ascending): "0-49", "3,7-9", with
 * "%N" for max_parallel > 0. */
NTP_API ntp_status ntp_slurm_array_spec(ntp_ctx *ctx, const int *indices, int n, int max_parallel,
                                        char *buf, size_t len);

/* The batch script every task runs: `exec NTPROF sweep --task SWEEP:$SLURM_ARRAY_TASK_ID
 * --db DB`. malloc'd. */
NTP_API ntp_status ntp_slurm_script(ntp_ctx *ctx, const char *ntprof, int64_t sweep, const char *db,
                                    char **out);

/* Submit the batch script at `script` as an array over `array` (from
 * ntp_slurm_array_spec); job receives the job id. sbatch missing or
 * refusing the job is IO_ERROR with sbatch's own message. */
NTP_API ntp_status ntp_slurm_submit(ntp_ctx *ctx, const ntp_slurm_opts *o, const char *script,
                                    const char *array, char *job, size_t len);

/* What Slurm says of one array task. */
typedef struct ntp_slurm_task {
    int index;
    char state[24];     /* PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT, ... */
    char reason[64];    /* Slurm's reason (TimeLimit, NonZeroExitCode, Resources, ...) */
    char exit_code[16]; /* "EXIT:SIGNAL" as Slurm prints it; "" when unknown */
} ntp_slurm_task;

/* Every task of array job `job` (scontrol show job, or sacct once
 * slurmctld has forgotten the job). Free *out with free(). UNKNOWN_NAME
 * when neither knows the job. */
NTP_API ntp_status ntp_slurm_query(ntp_ctx *ctx, const char *job, ntp_slurm_task **out, int *n);

/* Whether a Slurm job state is final (COMPLETED, FAILED, TIMEOUT, ...). */
NTP_API bool ntp_slurm_state_final(const char *state);
/* What a final state makes of a task: "ok" (COMPLETED), "timed out",
 * "preempted", "cancelled" or "failed". */
NTP_API const char *ntp_slurm_outcome(const char *state);

/* How a sweep was submitted, kept with it (ntp_sweep_record.submit) so that
 * --resume submits the same way: partition, time, max_parallel, shared,
 * output (as "keep") and extra, as JSON (malloc'd; job_name is not kept).
 * ntp_slurm_opts_parse reads it back into *o, whose strings live in *mem
 * (free() it). */
NTP_API char *ntp_slurm_opts_json(const ntp_slurm_opts *o);
NTP_API ntp_status ntp_slurm_opts_parse(ntp_ctx *ctx, const char *json, ntp_slurm_opts *o,
                                        void **mem);

#ifdef __cplusplus
}
#endif
#endif
