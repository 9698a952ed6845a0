/* Opening the history database: where it lives, its pragmas, and the
 * versioned schema with its migrations (docs/history.md).
 *
 * The database runs in WAL mode, so readers never block the writer and a
 * process killed mid-transaction leaves only an uncommitted tail in the
 * write-ahead log, which SQLite discards on the next open. synchronous=NORMAL
 * keeps every committed run across a crash of the process (the WAL is in the
 * kernel's page cache); only a power loss may lose the last runs, never
 * corrupt the file. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/ctx-impl.h"
#include "io/file-impl.h"
#include "store-impl.h"

/* migrations[v] takes a database from version v to v + 1. A released
 * migration is never edited: a change is a new entry. */
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
    /* sweeps (docs/cluster.md#slurm): a sweep's design, recorded before
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
};
_Static_assert(sizeof migrations / sizeof migrations[0] == NTP_STORE_SCHEMA_VERSION,
               "one migration per schema version");

ntp_status ntp__store_error(ntp_ctx *ctx, ntp_store *s, ntp_status st, const char *what)
{
    int code = s && s->db ? sqlite3_extended_errcode(s->db) : SQLITE_ERROR;
    const char *msg = s && s->db ? sqlite3_errmsg(s->db) : "no database";
    /* A full disk or a read-only file is an I/O matter for the user. */
    if (st == NTP_STATUS_INTERNAL &&
        ((code & 0xff) == SQLITE_FULL || (code & 0xff) == SQLITE_IOERR ||
         (code & 0xff) == SQLITE_READONLY || (code & 0xff) == SQLITE_CANTOPEN ||
         (code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_NOTADB ||
         (code & 0xff) == SQLITE_CORRUPT))
        st = NTP_STATUS_IO_ERROR;
    return ntp__error(ctx, st, "history %s: %s: %s", s && s->path ? s->path : "", what, msg);
}

ntp_status ntp__store_exec(ntp_ctx *ctx, ntp_store *s, const char *sql)
{
    if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot update");
    return NTP_STATUS_OK;
}

ntp_status ntp__store_begin(ntp_ctx *ctx, ntp_store *s)
{
    return ntp__store_exec(ctx, s, "BEGIN IMMEDIATE");
}

ntp_status ntp__store_commit(ntp_ctx *ctx, ntp_store *s)
{
    if (sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        ntp_status st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot commit");
        ntp__store_rollback(s);
        return st;
    }
    return NTP_STATUS_OK;
}

void ntp__store_rollback(ntp_store *s)
{
    /* Harmless when no transaction is open (SQLite then reports an error
     * that is deliberately ignored). */
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

ntp_status ntp__store_version(ntp_ctx *ctx, ntp_store *s, int *version)
{
    sqlite3_stmt *q;
    *version = 0;
    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &q, NULL) != SQLITE_OK)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the schema version");
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        *version = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    if (rc != SQLITE_ROW)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the schema version");
    return NTP_STATUS_OK;
}

/* Tables a database holds; a database with tables but no version is not
 * ntprof's and is left alone. */
static ntp_status table_count(ntp_ctx *ctx, ntp_store *s, int *n)
{
    sqlite3_stmt *q;
    *n = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM sqlite_master", -1, &q, NULL) != SQLITE_OK)
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot read the schema");
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        *n = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    if (rc != SQLITE_ROW)
        return ntp__store_error(ctx, s, NTP_STATUS_IO_ERROR, "cannot read the schema");
    return NTP_STATUS_OK;
}

/* Bring the schema to `target` inside one write transaction: two processes
 * opening a new database at once both get here, and the second then finds
 * the work done. */
static ntp_status migrate(ntp_ctx *ctx, ntp_store *s, int target)
{
    ntp_status st = ntp__store_begin(ctx, s);
    if (st)
        return st;
    int v, tables;
    if ((st = ntp__store_version(ctx, s, &v)) || (st = table_count(ctx, s, &tables)))
        goto fail;
    if (v > NTP_STORE_SCHEMA_VERSION) {
        st = ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                        "history %s: schema version %d is newer than this ntprof's (%d); "
                        "use a newer ntprof or another --db",
                        s->path, v, NTP_STORE_SCHEMA_VERSION);
        goto fail;
    }
    if (v == 0 && tables > 0) {
        st = ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                        "history %s: an SQLite database that is not an ntprof history "
                        "(it has tables but no schema version)",
                        s->path);
        goto fail;
    }
    for (; v < target; v++) {
        if (sqlite3_exec(s->db, migrations[v], NULL, NULL, NULL) != SQLITE_OK) {
            char what[64];
            snprintf(what, sizeof what, "cannot migrate the schema from version %d", v);
            st = ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, what);
            goto fail;
        }
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", v + 1);
        if ((st = ntp__store_exec(ctx, s, sql)))
            goto fail;
    }
    return ntp__store_commit(ctx, s);
fail:
    ntp__store_rollback(s);
    return st;
}

/* mkdir -p for the folder holding path; errors surface when SQLite opens
 * the file. */
static void make_parent(const char *path)
{
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return;
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        mkdir(dir, 0777);
        *p = '/';
    }
    mkdir(dir, 0777);
}

/* Whether the folder holding path takes new files. */
static bool dir_writable(const char *path)
{
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return true;
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    return access(dir, W_OK) == 0;
}

/* "file:PATH?immutable=1" with PATH percent-encoded where a URI needs it. */
static char *immutable_uri(const char *path)
{
    size_t n = strlen(path);
    char *u = malloc(3 * n + sizeof "file:?immutable=1");
    if (!u)
        return NULL;
    char *o = u + sprintf(u, "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if (*p == '%' || *p == '?' || *p == '#' || *p < 0x21 || *p >= 0x7f)
            o += sprintf(o, "%%%02X", *p);
        else
            *o++ = (char)*p;
    }
    strcpy(o, "?immutable=1");
    return u;
}

static ntp_status open_db(ntp_ctx *ctx, const char *path, ntp_store_mode mode, int target,
                          ntp_store **out)
{
    *out = NULL;
    if (!path || !*path)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "history: no database path");
    ntp_store *s = calloc(1, sizeof *s);
    if (!s || !(s->path = ntp__strdup(path))) {
        free(s);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    s->read_only = mode == NTP_STORE_READ_ONLY;
    ntp_status st;
    /* The database must be a regular file: SQLite would open a FIFO (and
     * wait), write a device, or leave a journal beside /dev/null. The check
     * opens it the way every input is opened (never blocking). */
    struct stat sb;
    const char *why = NULL;
    bool exists = lstat(path, &sb) == 0 || errno != ENOENT;
    if (exists || s->read_only) {
        int fd = ntp__file_open_read(path, &sb, &why);
        if (fd < 0) {
            st = ntp__error(ctx, NTP_STATUS_IO_ERROR, "history %s: cannot open: %s", path, why);
            goto fail;
        }
        close(fd);
    }
    if (!s->read_only)
        make_parent(path);
    int flags = s->read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    /* Reading a history in a folder this process cannot write (a WAL
     * database needs its -shm file beside it): opened as immutable, which
     * asks for no lock and no file beside it. Nothing can write it here
     * anyway, so no change can be missed. */
    char *uri = NULL;
    if (s->read_only && !dir_writable(path)) {
        if (!(uri = immutable_uri(path))) {
            st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            goto fail;
        }
        flags |= SQLITE_OPEN_URI;
    }
    int orc = sqlite3_open_v2(uri ? uri : path, &s->db, flags | SQLITE_OPEN_NOMUTEX, NULL);
    free(uri);
    if (orc != SQLITE_OK) {
        st = ntp__error(ctx, NTP_STATUS_IO_ERROR, "history %s: cannot open: %s", path,
                        s->db ? sqlite3_errmsg(s->db) : "out of memory");
        goto fail;
    }
    sqlite3_busy_timeout(s->db, NTP_STORE_BUSY_MS);
    sqlite3_extended_result_codes(s->db, 1);
    if ((st = ntp__store_exec(ctx, s, "PRAGMA foreign_keys = ON")))
        goto fail;
    if (!s->read_only) {
        /* journal_mode answers with the mode in force; a file system
         * without shared memory keeps the rollback journal, which is
         * slower but just as safe. */
        if ((st = ntp__store_exec(ctx, s, "PRAGMA journal_mode = WAL")) ||
            (st = ntp__store_exec(ctx, s, "PRAGMA synchronous = NORMAL")) ||
            (st = migrate(ctx, s, target)))
            goto fail;
    } else {
        int v;
        if ((st = ntp__store_version(ctx, s, &v)))
            goto fail;
        if (v != NTP_STORE_SCHEMA_VERSION) {
            st = ntp__error(ctx, v == 0 ? NTP_STATUS_INVALID_ARGUMENT : NTP_STATUS_UNSUPPORTED,
                            "history %s: %s (schema version %d, this ntprof uses %d)", path,
                            v == 0 ? "not an ntprof history"
                            : v < NTP_STORE_SCHEMA_VERSION
                                ? "an older history; open it once for writing to migrate it"
                                : "a newer history than this ntprof reads",
                            v, NTP_STORE_SCHEMA_VERSION);
            goto fail;
        }
    }
    *out = s;
    return NTP_STATUS_OK;
fail:
    ntp_store_close(s);
    return st;
}

ntp_status ntp_store_open(ntp_ctx *ctx, const char *path, ntp_store_mode mode, ntp_store **out)
{
    return open_db(ctx, path, mode, NTP_STORE_SCHEMA_VERSION, out);
}

ntp_status ntp__store_open_version(ntp_ctx *ctx, const char *path, int version, ntp_store **out)
{
    if (version < 0 || version > NTP_STORE_SCHEMA_VERSION)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "no schema version %d", version);
    return open_db(ctx, path, NTP_STORE_CREATE, version, out);
}

void ntp_store_close(ntp_store *s)
{
    if (!s)
        return;
    /* sqlite3_close_v2 defers the close until every statement is
     * finalized; each function here finalizes its own. */
    sqlite3_close_v2(s->db);
    free(s->path);
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
