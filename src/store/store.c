/* Opening the history database: where it lives, which driver serves it
 * (a postgresql:// URL or a file), and the versioned schema with its
 * migrations (docs/history.md, docs/cluster.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/ctx-impl.h"
#include "store-impl.h"

/* migrations[v] takes a database from version v to v + 1. A released
 * migration is never edited: a change is a new entry. They are written in
 * SQLite's dialect and run as they are there; the PostgreSQL driver
 * translates the types (INTEGER is 64-bit, REAL double, BLOB bytea), the
 * INTEGER PRIMARY KEY (an identity), WITHOUT ROWID and the strftime default
 * (store-pq.c), so a migration keeps to those. */
static const char *const migrations[] = {
    /* 0 -> 1: runs with their rows, marker segments and warnings. */
    "CREATE TABLE runs ("
    "  id INTEGER PRIMARY KEY,"
    "  time TEXT NOT NULL," /* when the run started (its report's timestamp) */
    "  recorded_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),"
    "  topology TEXT, source TEXT, backend TEXT, precision TEXT NOT NULL,"
    "  batch INTEGER, threads INTEGER, seed TEXT, warmup INTEGER, iterations INTEGER,"
    "  only_marker TEXT, fused INTEGER, params TEXT,"
    "  n INTEGER, median_ms REAL, min_ms REAL, mean_ms REAL, p90_ms REAL, p99_ms REAL,"
    "  max_ms REAL, stddev_ms REAL, ci95_lo_ms REAL, ci95_hi_ms REAL, cv REAL,"
    "  layer_sum_median_ms REAL, throughput REAL, latency_ms REAL, flops INTEGER,"
    "  prepare_ms REAL, overhead_fraction REAL, overhead_per_layer_us REAL,"
    "  weight_bytes INTEGER, arena_bytes INTEGER, workspace_bytes INTEGER,"
    "  peak_rss_bytes INTEGER, minor_faults INTEGER, major_faults INTEGER,"
    "  machine TEXT, cpu_model TEXT, cpu_flags TEXT, cores INTEGER, memory_bytes INTEGER,"
    "  os TEXT, compiler TEXT, libraries TEXT, ntprof_version TEXT, git_revision TEXT,"
    "  hostname TEXT,"
    "  n_layers INTEGER NOT NULL, n_markers INTEGER NOT NULL, n_warnings INTEGER NOT NULL,"
    "  report BLOB NOT NULL);"
    "CREATE INDEX runs_by_topology ON runs(topology, id);"
    "CREATE INDEX runs_by_time ON runs(time);"
    "CREATE TABLE rows ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  idx INTEGER NOT NULL, name TEXT, type TEXT, kind TEXT, backend TEXT,"
    "  inlay INTEGER, fused INTEGER, fused_into TEXT, output_shape TEXT,"
    "  n INTEGER, median_ms REAL, min_ms REAL, mean_ms REAL, p90_ms REAL, p99_ms REAL,"
    "  max_ms REAL, stddev_ms REAL, ci95_lo_ms REAL, ci95_hi_ms REAL, cv REAL,"
    "  share REAL, flops INTEGER, bytes INTEGER, gflops REAL, gbps REAL, intensity REAL,"
    "  prepare_ms REAL, workspace_bytes INTEGER, attainable_gflops REAL, roof_share REAL,"
    "  PRIMARY KEY (run_id, idx)) WITHOUT ROWID;"
    "CREATE TABLE markers ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  idx INTEGER NOT NULL, name TEXT, first INTEGER, last INTEGER,"
    "  n INTEGER, median_ms REAL, min_ms REAL, mean_ms REAL, p90_ms REAL, p99_ms REAL,"
    "  max_ms REAL, stddev_ms REAL, ci95_lo_ms REAL, ci95_hi_ms REAL, cv REAL,"
    "  share REAL, flops INTEGER, bytes INTEGER, gflops REAL, attainable_gflops REAL,"
    "  roof_share REAL,"
    "  PRIMARY KEY (run_id, idx)) WITHOUT ROWID;"
    "CREATE TABLE warnings ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  idx INTEGER NOT NULL, text TEXT NOT NULL,"
    "  PRIMARY KEY (run_id, idx)) WITHOUT ROWID;",
    /* 1 -> 2: the per-machine cache of measured ceilings (ntprof machine). */
    "CREATE TABLE machines ("
    "  key TEXT PRIMARY KEY," /* CPU model|cores|hostname */
    "  measured_at TEXT NOT NULL, cpu_model TEXT, cores INTEGER, hostname TEXT,"
    "  description TEXT,"        /* ntp_machine_info as JSON */
    "  ceilings TEXT NOT NULL);" /* ntp_ceilings as JSON */
    "CREATE INDEX runs_by_machine ON runs(machine, id);",
    /* 2 -> 3: the GPUs of a machine, measured beside its CPU ceilings, and
     * why a machine has none. Every row belongs to a machines row and is
     * replaced with it. */
    "CREATE TABLE machine_gpus ("
    "  machine TEXT NOT NULL REFERENCES machines(key) ON DELETE CASCADE,"
    "  idx INTEGER NOT NULL, name TEXT NOT NULL, compute_capability TEXT, sms INTEGER,"
    "  clock_ghz REAL, memory_bytes INTEGER,"
    "  gemm_f32_gflops REAL, gemm_tf32_gflops REAL, gemm_f16_gflops REAL, gemm_bf16_gflops REAL,"
    "  gemm_f32_n INTEGER, gemm_tf32_n INTEGER, gemm_f16_n INTEGER, gemm_bf16_n INTEGER,"
    "  dram_gbps REAL, h2d_gbps REAL, d2h_gbps REAL,"
    "  PRIMARY KEY (machine, idx)) WITHOUT ROWID;"
    "ALTER TABLE machines ADD COLUMN gpu_note TEXT;",
    /* 3 -> 4: each run's UUID (its report's environment.run_uuid), so a
     * retried write or a copy between stores never stores a run twice.
     * Runs stored before have none (NULL, which the unique index allows
     * many times); `history copy` derives one from their report. */
    "ALTER TABLE runs ADD COLUMN uuid TEXT; CREATE UNIQUE INDEX runs_by_uuid ON runs(uuid);",
    /* 4 -> 5: latency-model calibrations (ntprof machine --calibrate,
     * docs/predict.md), one per machine, backend and precision, replaced
     * when calibrated again; the model is a JSON document. */
    "CREATE TABLE calibrations ("
    "  machine TEXT NOT NULL, backend TEXT NOT NULL, precision TEXT NOT NULL,"
    "  backend_version TEXT, threads INTEGER, calibrated_at TEXT NOT NULL,"
    "  model TEXT NOT NULL,"
    "  PRIMARY KEY (machine, backend, precision)) WITHOUT ROWID;",
    /* 5 -> 6: sweeps (docs/cluster.md#slurm): a sweep's design, recorded before
     * its configurations run elsewhere (Slurm array tasks), and one row
     * per configuration that started, ran or failed. A configuration
     * has at most one row, so a task run twice never duplicates it. */
    "CREATE TABLE sweeps ("
    "  id INTEGER PRIMARY KEY,"
    "  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),"
    "  source TEXT NOT NULL, design TEXT NOT NULL,"
    "  factors TEXT NOT NULL,"     /* JSON array of "NAME=V1,V2,..." */
    "  run_options TEXT NOT NULL," /* JSON array: the options every configuration gets */
    "  n_configs INTEGER NOT NULL, executor TEXT NOT NULL,"
    "  submit TEXT,"                    /* JSON: how it was submitted (partition, time, ...) */
    "  jobs TEXT NOT NULL DEFAULT '');" /* the Slurm job ids, space separated */
    "CREATE TABLE sweep_tasks ("
    "  sweep_id INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,"
    "  idx INTEGER NOT NULL,"
    "  state TEXT NOT NULL," /* running, ok, failed, timed out, preempted, cancelled */
    "  run_id INTEGER REFERENCES runs(id) ON DELETE SET NULL,"
    "  job TEXT, message TEXT,"
    "  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),"
    "  PRIMARY KEY (sweep_id, idx)) WITHOUT ROWID;",
    /* 6 -> 7: load runs (ntprof load, docs/load.md#history): a run's
     * configuration, throughput and latency percentiles, validity, and its
     * whole JSON report. */
    "CREATE TABLE load_runs ("
    "  id INTEGER PRIMARY KEY,"
    "  time TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),"
    "  topology TEXT, source TEXT, backend TEXT, scenario TEXT NOT NULL,"
    "  instances INTEGER, threads_per_instance INTEGER, max_batch INTEGER,"
    "  qps_offered REAL, qps_achieved REAL, samples_per_s REAL, queries INTEGER,"
    "  p50_ms REAL, p90_ms REAL, p95_ms REAL, p99_ms REAL, p999_ms REAL, max_ms REAL,"
    "  mean_ms REAL, latency_bound_ms REAL, max_qps REAL, valid INTEGER NOT NULL,"
    "  machine TEXT, load_average REAL,"
    "  report BLOB NOT NULL);"
    "CREATE INDEX load_runs_by_topology ON load_runs(topology, id);",
    /* 7 -> 8: load sweeps (ntprof sweep --load, docs/load.md#sweeps): a
     * sweep's kind ('run', or 'load' for a sweep of load runs), and for a
     * load sweep's configuration its label and its load run. */
    "ALTER TABLE sweeps ADD COLUMN kind TEXT NOT NULL DEFAULT 'run';"
    "ALTER TABLE sweep_tasks ADD COLUMN label TEXT;"
    "ALTER TABLE sweep_tasks ADD COLUMN load_run_id INTEGER"
    "  REFERENCES load_runs(id) ON DELETE SET NULL;",
    /* 8 -> 9: a calibration's samples (docs/predict.md#samples): every
     * configuration it timed, with the terms and the measured median, in
     * the order timed, so that `ntprof machine --refit` fits the model
     * again without timing. Replaced with the calibration. */
    "CREATE TABLE calibration_samples ("
    "  machine TEXT NOT NULL, backend TEXT NOT NULL, precision TEXT NOT NULL,"
    "  idx INTEGER NOT NULL, kind TEXT NOT NULL, family TEXT NOT NULL,"
    "  config TEXT NOT NULL, conv_fed INTEGER NOT NULL, ran_on TEXT, impl TEXT,"
    "  level TEXT, flops INTEGER, bytes INTEGER,"
    "  x_overhead REAL, x_compute REAL, x_memory REAL,"
    "  median_s REAL NOT NULL, ci95_lo_s REAL, ci95_hi_s REAL, n INTEGER,"
    "  PRIMARY KEY (machine, backend, precision, idx)) WITHOUT ROWID;",
    /* 9 -> 10: a sample's passes (docs/predict.md#passes): how many of the
     * calibration's interleaved passes its median is over, and the lowest
     * and highest of their medians. A sample kept before was one timing:
     * one pass, its median both. */
    "ALTER TABLE calibration_samples ADD COLUMN passes INTEGER NOT NULL DEFAULT 1;"
    "ALTER TABLE calibration_samples ADD COLUMN pass_min_s REAL;"
    "ALTER TABLE calibration_samples ADD COLUMN pass_max_s REAL;"
    "UPDATE calibration_samples SET pass_min_s = median_s, pass_max_s = median_s;",
};
_Static_assert(sizeof migrations / sizeof migrations[0] == NTP_STORE_SCHEMA_VERSION,
               "one migration per schema version");

ntp_status ntp__store_error(ntp_ctx *ctx, ntp_store *s, ntp_status st, const char *what)
{
    if (st == NTP_STATUS_INTERNAL && s && s->drv && s->drv->io_error(s))
        st = NTP_STATUS_IO_ERROR;
    return ntp__error(ctx, st, "history %s: %s: %s", s && s->display ? s->display : "", what,
                      s && s->err[0] ? s->err : "no database");
}

ntp_status ntp__store_exec(ntp_ctx *ctx, ntp_store *s, const char *sql)
{
    if (!s->drv->exec(s, sql))
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot update");
    return NTP_STATUS_OK;
}

ntp_status ntp__store_begin(ntp_ctx *ctx, ntp_store *s)
{
    if (!s->drv->begin(s, false))
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot update");
    return NTP_STATUS_OK;
}

ntp_status ntp__store_commit(ntp_ctx *ctx, ntp_store *s)
{
    if (!s->drv->commit(s)) {
        ntp_status st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot commit");
        ntp__store_rollback(s);
        return st;
    }
    return NTP_STATUS_OK;
}

void ntp__store_rollback(ntp_store *s)
{
    s->drv->rollback(s);
}

bool ntp__store_reconnect(ntp_store *s, int *waited_ms, int *attempts)
{
    if (!s->drv->reconnect)
        return false;
    for (;;) {
        if (*waited_ms >= s->retry_ms)
            return false;
        /* 50 ms, doubling, at most 2 s a step and never past the bound. */
        int step = 50;
        for (int i = 0; i < *attempts && step < 2000; i++)
            step *= 2;
        if (step > 2000)
            step = 2000;
        if (step > s->retry_ms - *waited_ms)
            step = s->retry_ms - *waited_ms;
        struct timespec ts = {step / 1000, (long)(step % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        *waited_ms += step;
        ++*attempts;
        if (s->drv->reconnect(s))
            return true;
        if (!s->drv->lost(s))
            return false; /* refused for good (a password, a missing database) */
    }
}

bool ntp__store_again(ntp_store *s, int *waited_ms, int *attempts, char *why, size_t why_len)
{
    if (!s->drv->lost || !s->drv->lost(s))
        return false;
    if (!why[0])
        snprintf(why, why_len, "%s", s->err);
    return ntp__store_reconnect(s, waited_ms, attempts);
}

ntp_status ntp__store_version(ntp_ctx *ctx, ntp_store *s, int *version)
{
    bool tables;
    if (!s->drv->version(s, version, &tables))
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the schema version");
    return NTP_STATUS_OK;
}

/* Bring the schema to `target` inside one write transaction: two processes
 * opening a new database at once both get here, and the second then finds
 * the work done. */
static ntp_status migrate(ntp_ctx *ctx, ntp_store *s, int target)
{
    /* Most opens find the schema current: known without a transaction
     * (and without SQLite's write lock or PostgreSQL's schema lock). */
    int now;
    bool any;
    if (s->drv->version(s, &now, &any) && now == target && target > 0)
        return NTP_STATUS_OK;
    if (!s->drv->begin(s, true))
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot update");
    ntp_status st = NTP_STATUS_OK;
    int v;
    bool tables;
    if (!s->drv->version(s, &v, &tables)) {
        st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the schema version");
        goto fail;
    }
    if (v > NTP_STORE_SCHEMA_VERSION) {
        st = ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                        "history %s: schema version %d is newer than this ntprof's (%d); "
                        "use a newer ntprof or another --db",
                        s->display, v, NTP_STORE_SCHEMA_VERSION);
        goto fail;
    }
    if (v == 0 && tables) {
        st = ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                        "history %s: a%s database that is not an ntprof history "
                        "(it has tables but no schema version)",
                        s->display, s->drv == &ntp__store_sqlite ? "n SQLite" : " PostgreSQL");
        goto fail;
    }
    for (; v < target; v++) {
        if (!s->drv->exec_schema(s, migrations[v])) {
            char what[64];
            snprintf(what, sizeof what, "cannot migrate the schema from version %d", v);
            st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, what);
            goto fail;
        }
        if (!s->drv->set_version(s, v + 1)) {
            st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot update");
            goto fail;
        }
    }
    return ntp__store_commit(ctx, s);
fail:
    ntp__store_rollback(s);
    return st;
}

bool ntp_store_is_url(const char *db)
{
    return db && (strncmp(db, "postgresql://", 13) == 0 || strncmp(db, "postgres://", 11) == 0);
}

/* The URL with its password (user:PASSWORD@ or password=) replaced by ***. */
static char *hide_password(const char *url)
{
    size_t n = strlen(url);
    char *d = malloc(n + 4);
    if (!d)
        return NULL;
    const char *scheme = strstr(url, "://");
    const char *auth = scheme ? scheme + 3 : url;
    const char *at = strchr(auth, '@');
    const char *slash = strchr(auth, '/');
    const char *colon = strchr(auth, ':');
    if (at && (!slash || at < slash) && colon && colon < at)
        snprintf(d, n + 4, "%.*s***%s", (int)(colon + 1 - url), url, at);
    else
        snprintf(d, n + 4, "%s", url);
    char *p = strstr(d, "password=");
    if (p) {
        p += 9;
        size_t v = strcspn(p, "&");
        memmove(p + 3, p + v, strlen(p + v) + 1);
        memcpy(p, "***", 3);
    }
    return d;
}

static ntp_status open_db(ntp_ctx *ctx, const char *path, ntp_store_mode mode, int target,
                          const void *image, size_t image_len, ntp_store **out)
{
    *out = NULL;
    if (!path || !*path)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "history: no database path");
    bool url = ntp_store_is_url(path);
    if (url && !ntp__store_pq)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED, "history %s: %s", path, ntp__store_pq_why);
    ntp_store *s = calloc(1, sizeof *s);
    if (!s || !(s->path = ntp__strdup(path)) ||
        !(s->display = url ? hide_password(path) : ntp__strdup(path))) {
        ntp_store_close(s);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    s->drv = url ? ntp__store_pq : &ntp__store_sqlite;
    s->read_only = mode == NTP_STORE_READ_ONLY;
    s->image = image;
    s->image_len = image_len;
    s->retry_ms = NTP_STORE_RETRY_MS;
    const char *retry = getenv("NTP_DB_RETRY_MS");
    if (retry && *retry) {
        char *end;
        long v = strtol(retry, &end, 10);
        if (*end == '\0' && v >= 0 && v <= 3600000)
            s->retry_ms = (int)v;
    }
    ntp_status st = s->drv->open(ctx, s);
    if (st)
        goto fail;
    /* The server may go away between the connection and the schema's
     * check (a restart while a cluster's tasks start): both run again on
     * a new connection. */
    int waited = 0, attempts = 0;
    char why[sizeof s->err] = "";
    if (!s->read_only) {
        while ((st = migrate(ctx, s, target)) &&
               ntp__store_again(s, &waited, &attempts, why, sizeof why))
            ;
        if (st)
            goto fail;
    } else {
        int v;
        while ((st = ntp__store_version(ctx, s, &v)) &&
               ntp__store_again(s, &waited, &attempts, why, sizeof why))
            ;
        if (st)
            goto fail;
        if (v != NTP_STORE_SCHEMA_VERSION) {
            st = ntp__error(
                ctx, v == 0 ? NTP_STATUS_INVALID_ARGUMENT : NTP_STATUS_UNSUPPORTED,
                "history %s: %s (schema version %d, this ntprof uses %d)", s->display,
                v == 0 ? "not an ntprof history"
                : v < NTP_STORE_SCHEMA_VERSION
                    ? "an older history; a command that writes to it (ntprof run, machine or "
                      "sweep with this store) migrates it"
                    : "a newer history than this ntprof reads",
                v, NTP_STORE_SCHEMA_VERSION);
            goto fail;
        }
    }
    if (attempts > 0)
        ntp__store_retry_warn(ctx, s, "the store was opened", waited, attempts, why);
    *out = s;
    return NTP_STATUS_OK;
fail:
    ntp_store_close(s);
    return st;
}

ntp_status ntp_store_open(ntp_ctx *ctx, const char *path, ntp_store_mode mode, ntp_store **out)
{
    return open_db(ctx, path, mode, NTP_STORE_SCHEMA_VERSION, NULL, 0, out);
}

ntp_status ntp__store_open_image(ntp_ctx *ctx, const void *data, size_t len, const char *name,
                                 ntp_store **out)
{
    *out = NULL;
    if (ntp_store_is_url(name))
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "history %s: an image is an SQLite database", name);
    return open_db(ctx, name, NTP_STORE_READ_ONLY, NTP_STORE_SCHEMA_VERSION, data, len, out);
}

ntp_status ntp__store_open_version(ntp_ctx *ctx, const char *path, int version, ntp_store **out)
{
    if (version < 0 || version > NTP_STORE_SCHEMA_VERSION)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "no schema version %d", version);
    return open_db(ctx, path, NTP_STORE_CREATE, version, NULL, 0, out);
}

void ntp_store_close(ntp_store *s)
{
    if (!s)
        return;
    if (s->drv && s->conn)
        s->drv->close(s);
    free(s->path);
    free(s->display);
    free(s);
}

ntp_status ntp_store_default_path(ntp_ctx *ctx, char *buf, size_t len)
{
    const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    int n;
    /* The XDG spec says a relative XDG_DATA_HOME is invalid and ignored. */
    if (xdg && xdg[0] == '/')
        n = snprintf(buf, len, "%s/ntprof/history.db", xdg);
    else if (home && home[0])
        n = snprintf(buf, len, "%s/.local/share/ntprof/history.db", home);
    else
        return ntp__error(
            ctx, NTP_STATUS_INVALID_ARGUMENT,
            "history: neither XDG_DATA_HOME nor HOME is set; use --db PATH or --no-db");
    if (n < 0 || (size_t)n >= len)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "history: the default path is too long");
    return NTP_STATUS_OK;
}
