/* ntprof: the results history, an SQLite database or a shared PostgreSQL
 * one (docs/history.md, docs/cluster.md).
 *
 *   ntp_store *db;
 *   char path[4096];
 *   ntp_store_default_path(ctx, path, sizeof path);
 *   if (ntp_store_open(ctx, path, NTP_STORE_CREATE, &db) == NTP_STATUS_OK) {
 *       ntp_store_add_run(ctx, db, result, &id);
 *       ntp_store_close(db);
 *   }
 *
 * Every run is one transaction: a reader sees whole runs or none, several
 * processes may write at once (WAL mode; a writer waits for another instead
 * of failing), and a process killed mid-write leaves the database intact. */
#ifndef NTPROF_STORE_H
#define NTPROF_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ntprof/api.h"
#include "ntprof/machine.h"
#include "ntprof/run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The schema version this library writes (PRAGMA user_version; the
 * schema_version table on PostgreSQL). Older
 * databases are migrated on open; a newer one is refused. */
#define NTP_STORE_SCHEMA_VERSION 10

typedef struct ntp_store ntp_store;

typedef enum ntp_store_mode {
    NTP_STORE_CREATE,   /* read and write; create the file and its folder */
    NTP_STORE_READ_ONLY /* the file must exist; nothing is written */
} ntp_store_mode;

/* $XDG_DATA_HOME/ntprof/history.db, else $HOME/.local/share/ntprof/history.db.
 * INVALID_ARGUMENT when neither variable is set (or buf is too small). */
NTP_API ntp_status ntp_store_default_path(ntp_ctx *ctx, char *buf, size_t len);

/* path is an SQLite file, or a postgresql:// (postgres://) URL in libpq's
 * syntax: postgresql://user:password@host:port/dbname?host=/socket/dir.
 * UNSUPPORTED for a URL when this ntprof was built without libpq; a URL
 * whose server refuses the connection (down, restarting) is tried again
 * with doubling waits for up to 15 s ($NTP_DB_RETRY_MS overrides), a
 * refused password or a missing database is not. */
NTP_API ntp_status ntp_store_open(ntp_ctx *ctx, const char *path, ntp_store_mode mode,
                                  ntp_store **out);
NTP_API void ntp_store_close(ntp_store *s);

/* Append a run: its configuration, environment, every row and marker with
 * its statistics, end-to-end figures, warnings and the whole JSON report
 * (for lossless reading back). *id (may be NULL) receives the run's id.
 *
 * Idempotent: a run whose UUID (r->env.run_uuid) is already stored is not
 * stored again, and *id is the stored one's. A connection lost during the
 * write is re-established with backoff and the write retried (a warning on
 * ctx says so); only when the retry time is spent does it fail. */
NTP_API ntp_status ntp_store_add_run(ntp_ctx *ctx, ntp_store *s, const ntp_run_result *r,
                                     int64_t *id);

/* Open (creating) the database at path, add r, close: what `ntprof run`
 * does after every run. */
NTP_API ntp_status ntp_store_record_run(ntp_ctx *ctx, const char *path, const ntp_run_result *r,
                                        int64_t *id);
/* This machine's cached ceilings (ntp_machine_key) from the database at
 * path, without creating or changing anything: a missing file just means
 * *found is false. */
NTP_API ntp_status ntp_store_find_ceilings(ntp_ctx *ctx, const char *path, ntp_ceilings *out,
                                           bool *found);

/* One run as `ntprof history` lists it. */
typedef struct ntp_history_entry {
    int64_t id;
    char time[32]; /* the run's timestamp, ISO 8601 UTC */
    char topology[128];
    char backend[32];
    char precision[8];
    int64_t batch;
    int threads;
    double median_ms; /* end to end */
    double ci95_lo_ms, ci95_hi_ms;
    double throughput; /* samples/s */
    int n_layers;
    char machine[256]; /* machine key: CPU model|cores|hostname */
} ntp_history_entry;

typedef struct ntp_history_filter {
    const char *topology; /* NULL: any */
    const char *backend;  /* NULL: any */
    const char *since;    /* "2025-03-01" or a full ISO timestamp; NULL: any */
    int limit;            /* newest first, at most this many; 0: all */
} ntp_history_filter;

/* Runs matching f (NULL: all), newest first. Free with free(). */
NTP_API ntp_status ntp_store_list(ntp_ctx *ctx, ntp_store *s, const ntp_history_filter *f,
                                  ntp_history_entry **out, int *n);
/* The stored JSON report of run `id` (malloc'd, NUL-terminated).
 * UNKNOWN_NAME when there is no such run. */
NTP_API ntp_status ntp_store_get_report(ntp_ctx *ctx, ntp_store *s, int64_t id, char **json);
/* Run `id` read back into a result (ntp_run_result_free it). */
NTP_API ntp_status ntp_store_load_run(ntp_ctx *ctx, ntp_store *s, int64_t id, ntp_run_result **out);
/* Number of runs stored. */
NTP_API ntp_status ntp_store_count(ntp_ctx *ctx, ntp_store *s, int64_t *n);

/* --- load runs (ntprof load, docs/load.md#history) ---------------------------------------- */

/* One load run as stored and listed. Values a scenario does not have
 * (the bound outside the server scenario, max_qps without a search) are
 * NaN. */
typedef struct ntp_load_entry {
    int64_t id;
    char time[32]; /* when it was recorded, ISO 8601 UTC */
    char topology[128];
    char backend[32];
    char scenario[16];
    int instances, threads_per_instance, max_batch;
    double qps_offered, qps_achieved, samples_per_s;
    int64_t queries;
    double p50_ms, p90_ms, p95_ms, p99_ms, p999_ms, max_ms, mean_ms;
    double latency_bound_ms, max_qps;
    bool valid;
    char machine[256]; /* CPU model */
    double load_average;
} ntp_load_entry;

/* Append a load run (e's id and time are ignored; the time is now) with
 * its JSON report; *id (may be NULL) receives its id. source may be NULL. */
NTP_API ntp_status ntp_store_add_load(ntp_ctx *ctx, ntp_store *s, const ntp_load_entry *e,
                                      const char *source, const char *report, int64_t *id);
/* Load runs matching f (NULL: all; since compares with the recorded time),
 * newest first. Free with free(). */
NTP_API ntp_status ntp_store_list_loads(ntp_ctx *ctx, ntp_store *s, const ntp_history_filter *f,
                                        ntp_load_entry **out, int *n);

/* Load run `id`'s JSON report as recorded, NUL-terminated, into *report
 * (free with free()); UNKNOWN_NAME when the store has no such load run. A
 * connection lost under the read is made again, as for the other reads. */
NTP_API ntp_status ntp_store_load_report(ntp_ctx *ctx, ntp_store *s, int64_t id, char **report);

/* --- load sweeps (ntprof sweep --load, docs/load.md#sweeps) -------------------------------- */

/* One configuration of a recorded load sweep, with its sweep's design (a
 * sweeps row of kind 'load'): its label ("qps=500 instances=2"), its state
 * ("ok" or "failed"), its load run (0: none) and why it failed. */
typedef struct ntp_load_sweep_task {
    int64_t sweep;
    char created_at[32]; /* the sweep's, ISO 8601 UTC */
    char source[512];
    char design[8]; /* ofat or full */
    int n_configs;
    int index;
    char state[16];
    char label[256];
    int64_t load_run_id;
    char message[512];
} ntp_load_sweep_task;

/* Record a load sweep's design (executor "local"): the factors as typed
 * ("NAME=V1,V2,..."), the load options every configuration got; *id (may
 * be NULL) receives its id. */
NTP_API ntp_status ntp_store_add_load_sweep(ntp_ctx *ctx, ntp_store *s, const char *source,
                                            const char *design, const char *const *factors,
                                            int n_factors, const char *const *options,
                                            int n_options, int n_configs, int64_t *id);
/* Record configuration t->index of load sweep `sweep` (t's state, label,
 * load_run_id and message; the sweep fields are ignored). */
NTP_API ntp_status ntp_store_add_load_sweep_task(ntp_ctx *ctx, ntp_store *s, int64_t sweep,
                                                 const ntp_load_sweep_task *t);
/* Every configuration of every load sweep, newest sweep first, each
 * sweep's by index (none in a history older than schema 8). Free *out
 * with free(). */
NTP_API ntp_status ntp_store_list_load_sweeps(ntp_ctx *ctx, ntp_store *s, ntp_load_sweep_task **out,
                                              int *n);

/* Whether db names a PostgreSQL database (postgresql:// or postgres://)
 * rather than an SQLite file. */
NTP_API bool ntp_store_is_url(const char *db);

/* What ntp_store_copy did. */
typedef struct ntp_store_copy_stats {
    int64_t runs_copied;  /* runs added to the destination */
    int64_t runs_present; /* runs the destination already held (same UUID) */
    int64_t machines_copied;
    int64_t loads_copied;  /* load runs added (ntprof load; schema 7) */
    int64_t loads_present; /* load runs `to` already held (same time and report) */
    /* Sweeps (schema 6; load sweeps, schema 8) added, with their tasks,
     * whose runs and load runs point to `to`'s copies; and those `to`
     * already held (created at the same time with the same source, design,
     * factors and options). */
    int64_t sweeps_copied;
    int64_t sweeps_present;
} ntp_store_copy_stats;

/* Merge every run of `from` into `to` (either driver, in either
 * direction), column for column with its rows, markers and warnings and
 * its report byte for byte, skipping runs `to` already holds by UUID (a
 * run stored before UUIDs existed gets one derived from its report, the
 * same in every store). Machines `to` has no ceilings for are copied too,
 * and load runs `to` lacks (the same time and report, byte for byte), and
 * sweeps `to` lacks, run and load sweeps, with their tasks.
 * Each run is one transaction in `to`: an interrupted copy, run again,
 * completes. */
NTP_API ntp_status ntp_store_copy(ntp_ctx *ctx, ntp_store *from, ntp_store *to,
                                  ntp_store_copy_stats *stats);

/* Cache ceilings measured on machine m (replacing older ones of the same
 * machine key), and read them back. *found is false when none are cached. */
NTP_API ntp_status ntp_store_save_ceilings(ntp_ctx *ctx, ntp_store *s, const ntp_machine_info *m,
                                           const ntp_ceilings *c);
NTP_API ntp_status ntp_store_load_ceilings(ntp_ctx *ctx, ntp_store *s, const char *machine_key,
                                           ntp_ceilings *out, bool *found);

/* Hardware comparison across a fleet (ntprof compare --machine): which runs
 * to line up. Every field may be left out (NULL, 0: any). */
typedef struct ntp_fleet_query {
    const char *model;     /* topology name, source path or its file name */
    const char *backend;   /* "onednn" */
    const char *precision; /* "f32" */
    int64_t batch;
    int threads; /* 0: each machine's runs keep their own thread count */
} ntp_fleet_query;

/* For each of the n machines (a stored machine key, CPU model|cores|hostname,
 * or a part of exactly one, such as a hostname), ids[i] receives its newest
 * run of the newest configuration (topology, backend, precision, batch, and
 * threads where q gives them) matching q that every machine ran, taken in the
 * order of the first machine's runs; keys[i] the machine's full key.
 * UNKNOWN_NAME for a machine with no runs (the message lists the machines
 * that have some) or when no configuration was run on every machine. */
NTP_API ntp_status ntp_store_fleet_runs(ntp_ctx *ctx, ntp_store *s, const ntp_fleet_query *q,
                                        const char *const *machines, int n, int64_t *ids,
                                        char (*keys)[256]);

#ifdef __cplusplus
}
#endif
#endif
