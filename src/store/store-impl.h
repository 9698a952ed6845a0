/* The history database, private side (docs/history.md, docs/cluster.md).
 *
 * One store logic (store.c, store-runs.c, store-machines.c, store-copy.c)
 * over two drivers: SQLite, the embedded default (store-sqlite.c), and
 * PostgreSQL through libpq (store-pq.c; store-pq-none.c where libpq was not
 * found at build time). The store speaks SQLite's dialect with `?` and `?N`
 * parameters; the PostgreSQL driver translates what differs (docs/cluster.md
 * lists it). A driver is a method table, like the backends'. */
#ifndef NTPROF_STORE_IMPL_H
#define NTPROF_STORE_IMPL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ntprof/store.h"
#include "measure/run-result-impl.h"

typedef struct ntp__stmt ntp__stmt;
typedef struct ntp__store_driver ntp__store_driver;

struct ntp_store {
    const ntp__store_driver *drv;
    void *conn;    /* the driver's connection (sqlite3 *, PGconn *) */
    char *path;    /* what the user gave: a file or a URL */
    char *display; /* the same for messages: a URL's password hidden */
    bool read_only;
    char err[512]; /* the driver's last error, one line */
    int retry_ms;  /* how long a lost connection is retried (NTP_DB_RETRY_MS) */
    /* An SQLite database image in memory (ntp__store_open_image), read
     * instead of the file at path; NULL for a file or a URL. */
    const void *image;
    size_t image_len;
};

/* Every driver's statement starts with this. */
struct ntp__stmt {
    ntp_store *s;
};

typedef enum ntp__step { NTP__STEP_ROW, NTP__STEP_DONE, NTP__STEP_ERROR } ntp__step;
typedef enum ntp__coltype {
    NTP__COL_NULL,
    NTP__COL_INT,
    NTP__COL_FLOAT,
    NTP__COL_TEXT,
    NTP__COL_BLOB
} ntp__coltype;

/* A driver. Parameters are numbered from 1, columns from 0 (as in SQLite).
 * A failing call leaves its one-line reason in s->err. */
struct ntp__store_driver {
    const char *name;
    /* Connect to s->path (creating an SQLite file unless s->read_only). */
    ntp_status (*open)(ntp_ctx *ctx, ntp_store *s);
    void (*close)(ntp_store *s);
    /* SQL without results, in the store's dialect; false on failure. */
    bool (*exec)(ntp_store *s, const char *sql);
    /* Run one migration (SQLite's dialect; the driver translates it). */
    bool (*exec_schema)(ntp_store *s, const char *sql);
    ntp__stmt *(*prepare)(ntp_store *s, const char *sql);
    void (*bind_null)(ntp__stmt *q, int i);
    void (*bind_int64)(ntp__stmt *q, int i, int64_t v);
    void (*bind_double)(ntp__stmt *q, int i, double v);
    void (*bind_text)(ntp__stmt *q, int i, const char *v);
    void (*bind_blob)(ntp__stmt *q, int i, const void *v, size_t len);
    ntp__step (*step)(ntp__stmt *q);
    void (*reset)(ntp__stmt *q); /* keeps the bindings */
    void (*finalize)(ntp__stmt *q);
    int (*column_count)(ntp__stmt *q);
    const char *(*column_name)(ntp__stmt *q, int i);
    ntp__coltype (*column_type)(ntp__stmt *q, int i);
    int64_t (*column_int64)(ntp__stmt *q, int i);
    double (*column_double)(ntp__stmt *q, int i);
    const char *(*column_text)(ntp__stmt *q, int i); /* NULL for NULL */
    const void *(*column_blob)(ntp__stmt *q, int i, size_t *len);
    /* A write transaction, taking the write lock (or the schema lock) at once. */
    bool (*begin)(ntp_store *s, bool schema);
    bool (*commit)(ntp_store *s);
    void (*rollback)(ntp_store *s);
    /* The schema version (0: none) and whether the database holds tables
     * that are not ntprof's schema bookkeeping. */
    bool (*version)(ntp_store *s, int *version, bool *has_tables);
    bool (*set_version)(ntp_store *s, int version);
    /* Whether the last failure was the user's matter (a full disk, a
     * refused connection) rather than a bug. */
    bool (*io_error)(ntp_store *s);
    /* Optional (NULL: never): whether the last failure lost the
     * connection, and connecting again. */
    bool (*lost)(ntp_store *s);
    bool (*reconnect)(ntp_store *s);
    /* How many items one multi-row INSERT carries (0: 32). SQLite's
     * statements hold at most 999 parameters, so 32 rows of the widest
     * table (31 columns); PostgreSQL's 65535, so a run's rows go in one
     * statement, one round trip to the server. */
    int batch_rows;
};

extern const ntp__store_driver ntp__store_sqlite;
/* NULL where libpq was not found; ntp__store_pq_why then says so. */
extern const ntp__store_driver *const ntp__store_pq;
extern const char ntp__store_pq_why[];

/* How long a writer waits for another process's transaction before giving
 * up. Runs are small transactions (milliseconds), so a minute means
 * something is badly stuck rather than merely busy. */
#define NTP_STORE_BUSY_MS 60000
/* How long a lost or refused PostgreSQL connection is retried, with
 * doubling waits from 50 ms (NTP_DB_RETRY_MS overrides). */
#define NTP_STORE_RETRY_MS 15000

/* Record the driver's last error as a failure of `what` and return st. */
ntp_status ntp__store_error(ntp_ctx *ctx, ntp_store *s, ntp_status st, const char *what);
/* Run SQL without results (transactions, deletes). */
ntp_status ntp__store_exec(ntp_ctx *ctx, ntp_store *s, const char *sql);
/* A write transaction holding the write lock from its start, so it never
 * fails half-way for want of it. */
ntp_status ntp__store_begin(ntp_ctx *ctx, ntp_store *s);
ntp_status ntp__store_commit(ntp_ctx *ctx, ntp_store *s);
void ntp__store_rollback(ntp_store *s);
/* Sleep the next backoff step and connect again; false once the store's
 * retry time is spent. *waited_ms accumulates the time slept. */
bool ntp__store_reconnect(ntp_store *s, int *waited_ms, int *attempts);
/* After a failed statement: true when it failed because the connection
 * was lost and the connection is made again (with the backoff above), so
 * that the statement may be run again; `why` (why_len bytes) keeps the
 * first loss's reason. False for any other failure. For statements that
 * may run twice: reads, and writes whose second run changes nothing more
 * (an upsert). */
bool ntp__store_again(ntp_store *s, int *waited_ms, int *attempts, char *why, size_t why_len);

/* The id of the run with this UUID, 0 when there is none. */
ntp_status ntp__store_find_uuid(ntp_ctx *ctx, ntp_store *s, const char *uuid, int64_t *id);
/* The warning that a lost connection was re-established and `what` done. */
ntp_status ntp__store_retry_warn(ntp_ctx *ctx, ntp_store *s, const char *what, int waited_ms,
                                 int attempts, const char *why);

/* Open (creating) a database and bring it only to schema `version`: lets
 * the tests build an old database and watch ntp_store_open migrate it. */
ntp_status ntp__store_open_version(ntp_ctx *ctx, const char *path, int version, ntp_store **out);
/* Open an SQLite database image of len bytes in memory, read-only, as
 * ntp_store_open opens a file (the same schema check; name stands for the
 * file in messages): the history fuzzer's way in. data must outlive the
 * store. */
ntp_status ntp__store_open_image(ntp_ctx *ctx, const void *data, size_t len, const char *name,
                                 ntp_store **out);
/* The schema version of an open database. */
ntp_status ntp__store_version(ntp_ctx *ctx, ntp_store *s, int *version);

/* The statement behind a history listing (runs, load runs): the filter
 * checked (since, limit), then "SELECT columns FROM table" under it, newest
 * first, prepared and bound. `what` names the listing in the error ("runs",
 * "load runs"). */
ntp_status ntp__store_list_query(ntp_ctx *ctx, ntp_store *s, const ntp_history_filter *f,
                                 const char *columns, const char *table, const char *what,
                                 ntp__stmt **q);

/* Statement shorthands: the driver's methods. */
static inline ntp__stmt *ntp__db_prepare(ntp_store *s, const char *sql)
{
    return s->drv->prepare(s, sql);
}
static inline void ntp__db_null(ntp__stmt *q, int i)
{
    q->s->drv->bind_null(q, i);
}
static inline void ntp__db_int(ntp__stmt *q, int i, int64_t v)
{
    q->s->drv->bind_int64(q, i, v);
}
static inline void ntp__db_double(ntp__stmt *q, int i, double v)
{
    q->s->drv->bind_double(q, i, v);
}
/* NULL binds NULL. */
static inline void ntp__db_text(ntp__stmt *q, int i, const char *v)
{
    if (v)
        q->s->drv->bind_text(q, i, v);
    else
        q->s->drv->bind_null(q, i);
}
static inline void ntp__db_blob(ntp__stmt *q, int i, const void *v, size_t len)
{
    q->s->drv->bind_blob(q, i, v, len);
}
static inline ntp__step ntp__db_step(ntp__stmt *q)
{
    return q->s->drv->step(q);
}
static inline void ntp__db_reset(ntp__stmt *q)
{
    q->s->drv->reset(q);
}
static inline void ntp__db_finalize(ntp__stmt *q)
{
    if (q)
        q->s->drv->finalize(q);
}
static inline bool ntp__db_is_null(ntp__stmt *q, int i)
{
    return q->s->drv->column_type(q, i) == NTP__COL_NULL;
}
static inline int64_t ntp__db_col_int(ntp__stmt *q, int i)
{
    return q->s->drv->column_int64(q, i);
}
static inline double ntp__db_col_double(ntp__stmt *q, int i)
{
    return q->s->drv->column_double(q, i);
}
static inline const char *ntp__db_col_text(ntp__stmt *q, int i)
{
    return q->s->drv->column_text(q, i);
}
/* Column i's text copied into dst (len bytes, cut; "" for NULL). */
static inline void ntp__db_col_str(ntp__stmt *q, int i, char *dst, size_t len)
{
    const char *t = ntp__db_col_text(q, i);
    snprintf(dst, len, "%s", t ? t : "");
}
/* Column i as a number, NaN for NULL. */
static inline double ntp__db_col_num(ntp__stmt *q, int i)
{
    return ntp__db_is_null(q, i) ? NAN : ntp__db_col_double(q, i);
}

#endif
