/* The SQLite driver: the embedded default history, one file.
 *
 * The database runs in WAL mode, so readers never block the writer and a
 * process killed mid-transaction leaves only an uncommitted tail in the
 * write-ahead log, which SQLite discards on the next open. synchronous=NORMAL
 * keeps every committed run across a crash of the process (the WAL is in the
 * kernel's page cache); only a power loss may lose the last runs, never
 * corrupt the file. */
#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/ctx-impl.h"
#include "io/file-impl.h"
#include "store-impl.h"

typedef struct lite_stmt {
    ntp__stmt base;
    sqlite3_stmt *q;
} lite_stmt;

static sqlite3 *db_of(ntp_store *s)
{
    return s->conn;
}

static void note(ntp_store *s)
{
    snprintf(s->err, sizeof s->err, "%s", s->conn ? sqlite3_errmsg(db_of(s)) : "no database");
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

static bool lite_exec(ntp_store *s, const char *sql)
{
    if (sqlite3_exec(db_of(s), sql, NULL, NULL, NULL) == SQLITE_OK)
        return true;
    note(s);
    return false;
}

/* Connect to the file at s->path; s->conn is set even on failure. */
static ntp_status lite_open_file(ntp_ctx *ctx, ntp_store *s)
{
    const char *path = s->path;
    /* The database must be a regular file: SQLite would open a FIFO (and
     * wait), write a device, or leave a journal beside /dev/null. The check
     * opens it the way every input is opened (never blocking). */
    struct stat sb;
    const char *why = NULL;
    bool exists = lstat(path, &sb) == 0 || errno != ENOENT;
    if (exists || s->read_only) {
        int fd = ntp__file_open_read(path, &sb, &why);
        if (fd < 0)
            return ntp__error(ctx, NTP_STATUS_IO_ERROR, "history %s: cannot open: %s", path, why);
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
        if (!(uri = immutable_uri(path)))
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        flags |= SQLITE_OPEN_URI;
    }
    sqlite3 *db = NULL;
    int orc = sqlite3_open_v2(uri ? uri : path, &db, flags | SQLITE_OPEN_NOMUTEX, NULL);
    free(uri);
    s->conn = db;
    if (orc != SQLITE_OK)
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "history %s: cannot open: %s", path,
                          db ? sqlite3_errmsg(db) : "out of memory");
    return NTP_STATUS_OK;
}

/* Connect to the image at s->image (read-only): an in-memory database
 * given SQLite's own copy of the bytes. A WAL database (bytes 18 and 19 of
 * the header are 2) would ask for a log and shared memory that an image
 * has not; the pages read the same in rollback mode, which the copy's
 * header is set to, as a file whose -wal is absent reads. */
static ntp_status lite_open_image(ntp_ctx *ctx, ntp_store *s)
{
    sqlite3 *db = NULL;
    int orc = sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    s->conn = db;
    if (orc != SQLITE_OK)
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "history %s: cannot open: %s", s->path,
                          db ? sqlite3_errmsg(db) : "out of memory");
    size_t len = s->image_len;
    unsigned char *copy = sqlite3_malloc64(len ? len : 1);
    if (!copy)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    memcpy(copy, s->image, len);
    if (len >= 20 && copy[18] == 2 && copy[19] == 2)
        copy[18] = copy[19] = 1;
    /* FREEONCLOSE: SQLite frees the copy, even when this fails. */
    if (sqlite3_deserialize(db, "main", copy, (sqlite3_int64)len, (sqlite3_int64)len,
                            SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_READONLY) !=
        SQLITE_OK)
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "history %s: cannot open: %s", s->path,
                          sqlite3_errmsg(db));
    return NTP_STATUS_OK;
}

/* PRAGMA journal_mode = WAL, waiting for other connections as the busy
 * timeout would. Setting the mode reads the file, then takes the write
 * lock: two processes opening a new history at once each hold the read
 * lock the other waits on, and SQLite answers SQLITE_BUSY at once, without
 * the busy handler, to break the deadlock (test_store's concurrent
 * writers failed so about once in 50 runs). */
static bool lite_set_wal(ntp_store *s)
{
    for (int waited_ms = 0;; waited_ms += 5) {
        int rc = sqlite3_exec(db_of(s), "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
            return true;
        if ((rc & 0xff) != SQLITE_BUSY || waited_ms >= NTP_STORE_BUSY_MS) {
            note(s);
            return false;
        }
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static ntp_status lite_open(ntp_ctx *ctx, ntp_store *s)
{
    ntp_status st = s->image ? lite_open_image(ctx, s) : lite_open_file(ctx, s);
    if (st)
        return st;
    sqlite3 *db = db_of(s);
    sqlite3_busy_timeout(db, NTP_STORE_BUSY_MS);
    sqlite3_extended_result_codes(db, 1);
    if (!lite_exec(s, "PRAGMA foreign_keys = ON"))
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot update");
    /* journal_mode answers with the mode in force; a file system without
     * shared memory keeps the rollback journal, which is slower but just
     * as safe. */
    if (!s->read_only && (!lite_set_wal(s) || !lite_exec(s, "PRAGMA synchronous = NORMAL")))
        return ntp__store_error(ctx, s, NTP_STATUS_INTERNAL, "cannot update");
    return NTP_STATUS_OK;
}

static void lite_close(ntp_store *s)
{
    /* sqlite3_close_v2 defers the close until every statement is
     * finalized; each function of the store finalizes its own. */
    sqlite3_close_v2(db_of(s));
    s->conn = NULL;
}

static ntp__stmt *lite_prepare(ntp_store *s, const char *sql)
{
    lite_stmt *q = calloc(1, sizeof *q);
    if (!q) {
        snprintf(s->err, sizeof s->err, "out of memory");
        return NULL;
    }
    q->base.s = s;
    if (sqlite3_prepare_v2(db_of(s), sql, -1, &q->q, NULL) != SQLITE_OK) {
        note(s);
        free(q);
        return NULL;
    }
    return &q->base;
}

static sqlite3_stmt *st_of(ntp__stmt *q)
{
    return ((lite_stmt *)q)->q;
}

static void lite_bind_null(ntp__stmt *q, int i)
{
    sqlite3_bind_null(st_of(q), i);
}

static void lite_bind_int64(ntp__stmt *q, int i, int64_t v)
{
    sqlite3_bind_int64(st_of(q), i, (sqlite3_int64)v);
}

static void lite_bind_double(ntp__stmt *q, int i, double v)
{
    sqlite3_bind_double(st_of(q), i, v);
}

static void lite_bind_text(ntp__stmt *q, int i, const char *v)
{
    sqlite3_bind_text(st_of(q), i, v, -1, SQLITE_TRANSIENT);
}

static void lite_bind_blob(ntp__stmt *q, int i, const void *v, size_t len)
{
    sqlite3_bind_blob64(st_of(q), i, v, len, SQLITE_TRANSIENT);
}

static ntp__step lite_step(ntp__stmt *q)
{
    int rc = sqlite3_step(st_of(q));
    if (rc == SQLITE_ROW)
        return NTP__STEP_ROW;
    if (rc == SQLITE_DONE)
        return NTP__STEP_DONE;
    note(q->s);
    return NTP__STEP_ERROR;
}

static void lite_reset(ntp__stmt *q)
{
    sqlite3_reset(st_of(q));
}

static void lite_finalize(ntp__stmt *q)
{
    sqlite3_finalize(st_of(q));
    free(q);
}

static int lite_column_count(ntp__stmt *q)
{
    return sqlite3_column_count(st_of(q));
}

static const char *lite_column_name(ntp__stmt *q, int i)
{
    return sqlite3_column_name(st_of(q), i);
}

static ntp__coltype lite_column_type(ntp__stmt *q, int i)
{
    switch (sqlite3_column_type(st_of(q), i)) {
    case SQLITE_INTEGER: return NTP__COL_INT;
    case SQLITE_FLOAT: return NTP__COL_FLOAT;
    case SQLITE_TEXT: return NTP__COL_TEXT;
    case SQLITE_BLOB: return NTP__COL_BLOB;
    default: return NTP__COL_NULL;
    }
}

static int64_t lite_column_int64(ntp__stmt *q, int i)
{
    return sqlite3_column_int64(st_of(q), i);
}

static double lite_column_double(ntp__stmt *q, int i)
{
    return sqlite3_column_double(st_of(q), i);
}

static const char *lite_column_text(ntp__stmt *q, int i)
{
    return (const char *)sqlite3_column_text(st_of(q), i);
}

static const void *lite_column_blob(ntp__stmt *q, int i, size_t *len)
{
    const void *b = sqlite3_column_blob(st_of(q), i);
    *len = (size_t)sqlite3_column_bytes(st_of(q), i);
    return b;
}

/* BEGIN IMMEDIATE: take the write lock now, waiting for other writers. */
static bool lite_begin(ntp_store *s, bool schema)
{
    (void)schema;
    return lite_exec(s, "BEGIN IMMEDIATE");
}

static bool lite_commit(ntp_store *s)
{
    return lite_exec(s, "COMMIT");
}

static void lite_rollback(ntp_store *s)
{
    /* Harmless when no transaction is open (SQLite then reports an error
     * that is deliberately ignored). */
    sqlite3_exec(db_of(s), "ROLLBACK", NULL, NULL, NULL);
}

static bool one_int(ntp_store *s, const char *sql, int *out)
{
    sqlite3_stmt *q;
    *out = 0;
    if (sqlite3_prepare_v2(db_of(s), sql, -1, &q, NULL) != SQLITE_OK) {
        note(s);
        return false;
    }
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_int(q, 0);
    else
        note(s);
    sqlite3_finalize(q);
    return rc == SQLITE_ROW;
}

/* PRAGMA user_version; a database with tables but no version is not
 * ntprof's. */
static bool lite_version(ntp_store *s, int *version, bool *has_tables)
{
    int n;
    if (!one_int(s, "PRAGMA user_version", version) ||
        !one_int(s, "SELECT count(*) FROM sqlite_master", &n))
        return false;
    *has_tables = n > 0;
    return true;
}

static bool lite_set_version(ntp_store *s, int version)
{
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", version);
    return lite_exec(s, sql);
}

static bool lite_io_error(ntp_store *s)
{
    int code = s->conn ? sqlite3_extended_errcode(db_of(s)) & 0xff : SQLITE_ERROR;
    /* A full disk or a read-only file is an I/O matter for the user. */
    return code == SQLITE_FULL || code == SQLITE_IOERR || code == SQLITE_READONLY ||
           code == SQLITE_CANTOPEN || code == SQLITE_BUSY || code == SQLITE_NOTADB ||
           code == SQLITE_CORRUPT;
}

const ntp__store_driver ntp__store_sqlite = {
    .name = "sqlite",
    .open = lite_open,
    .close = lite_close,
    .exec = lite_exec,
    .exec_schema = lite_exec,
    .prepare = lite_prepare,
    .bind_null = lite_bind_null,
    .bind_int64 = lite_bind_int64,
    .bind_double = lite_bind_double,
    .bind_text = lite_bind_text,
    .bind_blob = lite_bind_blob,
    .step = lite_step,
    .reset = lite_reset,
    .finalize = lite_finalize,
    .column_count = lite_column_count,
    .column_name = lite_column_name,
    .column_type = lite_column_type,
    .column_int64 = lite_column_int64,
    .column_double = lite_column_double,
    .column_text = lite_column_text,
    .column_blob = lite_column_blob,
    .begin = lite_begin,
    .commit = lite_commit,
    .rollback = lite_rollback,
    .version = lite_version,
    .set_version = lite_set_version,
    .io_error = lite_io_error,
    .lost = NULL,
    .reconnect = NULL,
};
