/* The history database, private side (docs/history.md). */
#ifndef NTPROF_STORE_IMPL_H
#define NTPROF_STORE_IMPL_H

#include <sqlite3.h>
#include "ntprof/store.h"

struct ntp_store {
    sqlite3 *db;
    char *path;
    bool read_only;
};

/* How long a writer waits for another process's transaction before giving
 * up. Runs are small transactions (milliseconds), so a minute means
 * something is badly stuck rather than merely busy. */
#define NTP_STORE_BUSY_MS 60000

/* Record the database's current error as a failure of `what` and return st. */
ntp_status ntp__store_error(ntp_ctx *ctx, ntp_store *s, ntp_status st, const char *what);
/* Run SQL without results (schema, pragmas, transactions). */
ntp_status ntp__store_exec(ntp_ctx *ctx, ntp_store *s, const char *sql);
/* BEGIN IMMEDIATE: take the write lock now, waiting for other writers, so
 * a transaction never fails half-way for want of it. */
ntp_status ntp__store_begin(ntp_ctx *ctx, ntp_store *s);
ntp_status ntp__store_commit(ntp_ctx *ctx, ntp_store *s);
void ntp__store_rollback(ntp_store *s);

/* Open (creating) a database and bring it only to schema `version`: lets
 * the tests build an old database and watch ntp_store_open migrate it. */
ntp_status ntp__store_open_version(ntp_ctx *ctx, const char *path, int version, ntp_store **out);
/* The schema version (PRAGMA user_version) of an open database. */
ntp_status ntp__store_version(ntp_ctx *ctx, ntp_store *s, int *version);

#endif
