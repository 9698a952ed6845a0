/* Output files that appear only when complete.
 *
 * A report is written to "<path>.tmp.XXXXXX" in the destination's own
 * directory (so the final rename stays on one filesystem and is atomic),
 * flushed to disk, and renamed over the destination on commit. A run that
 * fails half-way aborts and leaves neither a partial report nor a stray
 * temporary file; a reader of the path sees the old file or the new one,
 * never a mix. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/ctx-impl.h"
#include "report-impl.h"

struct ntp_output {
    FILE *f;
    char *path;     /* destination; NULL for stdout */
    char *tmp;      /* the temporary file */
};

ntp_status ntp_output_open(ntp_ctx *ctx, const char *path, ntp_output **out)
{
    if (!out)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_output_open: no result pointer");
    *out = NULL;
    if (!path || !*path)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "no output path given");
    ntp_output *o = calloc(1, sizeof *o);
    if (!o)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory opening '%s'", path);
    if (strcmp(path, "-") == 0) {
        o->f = stdout;
        *out = o;
        return NTP_STATUS_OK;
    }
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        free(o);
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "cannot write '%s': it is a directory", path);
    }
    size_t n = strlen(path);
    o->path = ntp__strdup(path);
    o->tmp = malloc(n + sizeof ".tmp.XXXXXX");
    if (!o->path || !o->tmp) {
        free(o->path);
        free(o->tmp);
        free(o);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory opening '%s'", path);
    }
    memcpy(o->tmp, path, n);
    memcpy(o->tmp + n, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        int e = errno;
        free(o->path);
        free(o->tmp);
        free(o);
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "cannot create '%s': %s", path, strerror(e));
    }
    o->f = fdopen(fd, "w");
    if (!o->f) {
        int e = errno;
        close(fd);
        unlink(o->tmp);
        free(o->path);
        free(o->tmp);
        free(o);
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "cannot open '%s': %s", path, strerror(e));
    }
    *out = o;
    return NTP_STATUS_OK;
}

FILE *ntp_output_file(ntp_output *o)
{
    return o ? o->f : NULL;
}

static void output_free(ntp_output *o)
{
    free(o->path);
    free(o->tmp);
    free(o);
}

/* The process umask, read without changing it: umask() can only be read by
 * setting it, which would race with other threads creating files. Linux
 * shows it in /proc/self/status since 4.7; elsewhere assume the usual 022. */
static mode_t current_umask(void)
{
    mode_t mask = 022;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return mask;
    char line[256];
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "Umask:", 6) == 0) {
            mask = (mode_t)strtoul(line + 6, NULL, 8);
            break;
        }
    fclose(f);
    return mask;
}

/* mkstemp() makes the file 0600. A report is an ordinary file: give it the
 * mode the destination already has, or the one fopen() would have given. */
static void set_final_mode(int fd, const char *path)
{
    struct stat st;
    mode_t mode = stat(path, &st) == 0 ? (st.st_mode & 07777) : (0666 & ~current_umask());
    (void)fchmod(fd, mode);
}

/* Make the rename itself durable. Not every filesystem supports syncing a
 * directory, and the report is complete either way, so errors are ignored. */
static void sync_parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir)
        return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

ntp_status ntp_output_commit(ntp_ctx *ctx, ntp_output *o)
{
    if (!o)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_output_commit: no output");
    if (!o->path) {
        /* stdout is not ours to close. */
        bool bad = fflush(o->f) != 0 || ferror(o->f);
        int e = errno;
        output_free(o);
        if (bad)
            return ntp__error(ctx, NTP_STATUS_IO_ERROR, "error writing to standard output: %s",
                              strerror(e ? e : EIO));
        return NTP_STATUS_OK;
    }
    int e = 0;
    if (fflush(o->f) != 0 || ferror(o->f))
        e = errno ? errno : EIO;
    if (!e) {
        set_final_mode(fileno(o->f), o->path);
        if (fsync(fileno(o->f)) != 0 && errno != EINVAL && errno != EROFS)
            e = errno;
    }
    if (fclose(o->f) != 0 && !e)
        e = errno ? errno : EIO;
    o->f = NULL;
    if (!e && rename(o->tmp, o->path) != 0)
        e = errno;
    if (e) {
        unlink(o->tmp);
        ntp_status st = ntp__error(ctx, NTP_STATUS_IO_ERROR, "cannot write '%s': %s", o->path,
                                   strerror(e));
        output_free(o);
        return st;
    }
    sync_parent_dir(o->path);
    output_free(o);
    return NTP_STATUS_OK;
}

void ntp_output_abort(ntp_output *o)
{
    if (!o)
        return;
    if (o->path) {
        if (o->f)
            fclose(o->f);
        unlink(o->tmp);
    } else {
        /* What went to stdout cannot be taken back; at least push it out. */
        fflush(o->f);
    }
    output_free(o);
}
