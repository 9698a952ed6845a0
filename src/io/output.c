/* Output files: where every command's reports go, checked before any work
 * and written only when complete.
 *
 * What a path names decides how it is written:
 *   - "-", /dev/stdout (and /dev/fd/1, /proc/self/fd/1): standard output,
 *     written as the report is produced;
 *   - a regular file, or a new name in a writable folder: written to
 *     "<file>.tmp.XXXXXX" in the file's own folder (so the rename stays on
 *     one filesystem and is atomic), flushed to disk, and renamed over the
 *     file on commit, keeping the replaced file's permissions. A symbolic
 *     link to a regular file replaces the file it points to, not the link;
 *   - anything else that exists (a device such as /dev/null, a FIFO, a
 *     terminal): written through, never replaced, from a buffer held in
 *     memory until commit.
 * A command that fails aborts: nothing is written, no temporary file is
 * left, and a reader of the path sees the old file or the new one, never a
 * mix. ntp_output_check refuses, before a command measures anything, an
 * output whose folder is missing or not writable, an output folder that is
 * not a folder, one that names an input of the same command (compared by
 * device and inode, so another spelling of the same file is caught), and
 * two outputs naming one file (the report and the history database
 * included). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/ctx-impl.h"
#include "ntprof/report.h"

typedef enum out_kind {
    OUT_STDOUT,  /* standard output */
    OUT_REPLACE, /* a regular file, replaced atomically */
    OUT_THROUGH  /* a device or FIFO, written through */
} out_kind;

struct ntp_output {
    FILE *f;
    out_kind kind;
    char *path;   /* destination as given (messages; THROUGH: opened at commit) */
    char *target; /* REPLACE: the file to replace (a link's target) */
    char *tmp;    /* REPLACE: the temporary file */
    char *mem;    /* THROUGH: the buffered report */
    size_t mem_len;
};

static bool is_stdout_name(const char *path)
{
    return !strcmp(path, "-") || !strcmp(path, "/dev/stdout") || !strcmp(path, "/dev/fd/1") ||
           !strcmp(path, "/proc/self/fd/1");
}

/* The folder holding path ("." for a bare name), malloc'd. */
static char *parent_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    return strndup(path, slash == path ? 1 : (size_t)(slash - path));
}

/* The folder that will hold path (the file written or the folder created)
 * must exist and be writable; verb says which ("write", "create"). */
static ntp_status check_parent(ntp_ctx *ctx, const char *what, const char *verb, const char *path,
                               const char *name)
{
    char *dir = parent_of(name);
    if (!dir)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    ntp_status rc = NTP_STATUS_OK;
    struct stat ds;
    int sr = stat(dir, &ds);
    if (sr != 0 || !S_ISDIR(ds.st_mode))
        rc = ntp__error(ctx, NTP_STATUS_IO_ERROR, "%scannot %s '%s': folder '%s': %s", what, verb,
                        path, dir, strerror(sr != 0 ? errno : ENOTDIR));
    else if (access(dir, W_OK | X_OK) != 0)
        rc = ntp__error(ctx, NTP_STATUS_IO_ERROR, "%scannot %s '%s': folder '%s': %s", what, verb,
                        path, dir, strerror(errno));
    free(dir);
    return rc;
}

/* How path is written, and for REPLACE the file to replace (malloc'd). The
 * folder of a file to create or replace must exist and be writable. */
static ntp_status classify(ntp_ctx *ctx, const char *what, const char *path, out_kind *kind,
                           char **target)
{
    *target = NULL;
    if (!path || !*path)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "no output path given");
    if (is_stdout_name(path)) {
        *kind = OUT_STDOUT;
        return NTP_STATUS_OK;
    }
    struct stat ls, st;
    bool exists = lstat(path, &ls) == 0;
    if (!exists && errno != ENOENT)
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s'%s': %s", what, path, strerror(errno));
    const char *file = path;
    char real[PATH_MAX];
    if (exists && S_ISLNK(ls.st_mode)) {
        if (stat(path, &st) != 0)
            return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s'%s': a symbolic link to nothing", what,
                              path);
        if (S_ISREG(st.st_mode)) {
            if (!realpath(path, real))
                return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s'%s': %s", what, path,
                                  strerror(errno));
            file = real;
        }
        ls = st;
    }
    if (exists && S_ISDIR(ls.st_mode))
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%scannot write '%s': it is a directory", what,
                          path);
    if (exists && !S_ISREG(ls.st_mode)) {
        if (access(path, W_OK) != 0)
            return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%scannot write '%s': %s", what, path,
                              strerror(errno));
        *kind = OUT_THROUGH;
        return NTP_STATUS_OK;
    }
    ntp_status rc = check_parent(ctx, what, "write", path, file);
    if (rc)
        return rc;
    if (!(*target = strdup(file)))
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    *kind = OUT_REPLACE;
    return NTP_STATUS_OK;
}

/* A folder the command fills (--save-outputs, --tool-dir): an existing
 * folder it may write into, or a new name in a writable folder, which the
 * command creates (one level, as mkdir does). */
static ntp_status check_dir(ntp_ctx *ctx, const char *what, const char *path)
{
    if (!*path)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "%sno folder given", what);
    struct stat st;
    if (stat(path, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%scannot write into '%s': not a folder",
                              what, path);
        if (access(path, W_OK | X_OK) != 0)
            return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%scannot write into '%s': %s", what, path,
                              strerror(errno));
        return NTP_STATUS_OK;
    }
    if (errno != ENOENT || lstat(path, &st) == 0)
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%scannot write into '%s': %s", what, path,
                          errno != ENOENT ? strerror(errno) : "a symbolic link to nothing");
    /* The folder to create it in: "a/b/" is made in "a". */
    char *name = strdup(path);
    if (!name)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    for (size_t n = strlen(name); n > 1 && name[n - 1] == '/'; n--)
        name[n - 1] = '\0';
    ntp_status rc = check_parent(ctx, what, "create", path, name);
    free(name);
    return rc;
}

/* The identity of the file path names or would name: device and inode of
 * an existing file, else the real path of its folder and its name. */
typedef struct file_id {
    bool exists;
    dev_t dev;
    ino_t ino;
    char where[PATH_MAX + NAME_MAX + 2];
} file_id;

static void identify(const char *path, file_id *id)
{
    memset(id, 0, sizeof *id);
    struct stat st;
    if (stat(path, &st) == 0) {
        id->exists = true;
        id->dev = st.st_dev;
        id->ino = st.st_ino;
        return;
    }
    char *dir = parent_of(path);
    char real[PATH_MAX];
    const char *slash = strrchr(path, '/');
    snprintf(id->where, sizeof id->where, "%s/%s", dir && realpath(dir, real) ? real : path,
             slash ? slash + 1 : path);
    free(dir);
}

static bool same_file(const file_id *a, const file_id *b)
{
    if (a->exists != b->exists)
        return false;
    return a->exists ? a->dev == b->dev && a->ino == b->ino : !strcmp(a->where, b->where);
}

ntp_status ntp_output_check(ntp_ctx *ctx, const ntp_output_path *outs, int n_out,
                            const char *const *inputs, int n_in)
{
    if (n_out < 0 || n_in < 0 || (n_out && !outs) || (n_in && !inputs))
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_output_check: bad arguments");
    file_id *ids = calloc((size_t)n_out + 1, sizeof *ids);
    if (!ids)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    ntp_status st = NTP_STATUS_OK;
    for (int i = 0; i < n_out && !st; i++) {
        const char *p = outs[i].path, *opt = outs[i].option ? outs[i].option : "output";
        if (!p)
            continue;
        char what[96];
        snprintf(what, sizeof what, "%.80s: ", opt);
        if (outs[i].kind == NTP_OUTPUT_DIR) {
            if ((st = check_dir(ctx, what, p)))
                break;
        } else if (outs[i].kind == NTP_OUTPUT_FILE) {
            out_kind kind;
            char *target;
            if ((st = classify(ctx, what, p, &kind, &target)))
                break;
            free(target);
            if (kind == OUT_STDOUT)
                continue;
        } else if (is_stdout_name(p)) {
            continue;
        }
        identify(p, &ids[i]);
        for (int k = 0; k < n_in && !st; k++) {
            file_id in;
            if (!inputs[k] || stat(inputs[k], &(struct stat){0}) != 0)
                continue;
            identify(inputs[k], &in);
            if (same_file(&ids[i], &in))
                st = ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                                "%s'%s' is an input of this command ('%s'); refusing to write "
                                "over it",
                                what, p, inputs[k]);
        }
        for (int k = 0; k < i && !st; k++)
            if (outs[k].path && !is_stdout_name(outs[k].path) && same_file(&ids[i], &ids[k]))
                st = ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                                "%s'%s' is the same file as %s '%s'; give each output its own "
                                "file",
                                what, p, outs[k].option ? outs[k].option : "output", outs[k].path);
    }
    free(ids);
    return st;
}

static void output_free(ntp_output *o)
{
    free(o->path);
    free(o->target);
    free(o->tmp);
    free(o->mem);
    free(o);
}

ntp_status ntp_output_open(ntp_ctx *ctx, const char *path, ntp_output **out)
{
    if (!out)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_output_open: no result pointer");
    *out = NULL;
    ntp_output *o = calloc(1, sizeof *o);
    if (!o)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory opening '%s'",
                          path ? path : "");
    ntp_status st = classify(ctx, "", path, &o->kind, &o->target);
    if (st) {
        free(o);
        return st;
    }
    if (o->kind == OUT_STDOUT) {
        o->f = stdout;
        *out = o;
        return NTP_STATUS_OK;
    }
    if (!(o->path = strdup(path)))
        goto oom;
    if (o->kind == OUT_THROUGH) {
        /* Held in memory: a failed command writes nothing to the device. */
        if (!(o->f = open_memstream(&o->mem, &o->mem_len)))
            goto oom;
        *out = o;
        return NTP_STATUS_OK;
    }
    size_t n = strlen(o->target);
    if (!(o->tmp = malloc(n + sizeof ".tmp.XXXXXX")))
        goto oom;
    memcpy(o->tmp, o->target, n);
    memcpy(o->tmp + n, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        int e = errno;
        output_free(o);
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "cannot create '%s': %s", path, strerror(e));
    }
    o->f = fdopen(fd, "w");
    if (!o->f) {
        int e = errno;
        close(fd);
        unlink(o->tmp);
        output_free(o);
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "cannot open '%s': %s", path, strerror(e));
    }
    *out = o;
    return NTP_STATUS_OK;
oom:
    output_free(o);
    return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory opening '%s'", path);
}

FILE *ntp_output_file(ntp_output *o)
{
    return o ? o->f : NULL;
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
 * mode the file it replaces has, or the one fopen() would have given. */
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
    char *dir = parent_of(path);
    if (!dir)
        return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

/* Write the buffered report through to a device or FIFO (blocking on a
 * FIFO until it has a reader, as a shell redirection would). */
static int write_through(ntp_output *o)
{
    int fd = open(o->path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    size_t done = 0;
    int e = 0;
    while (done < o->mem_len) {
        ssize_t w = write(fd, o->mem + done, o->mem_len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            e = w < 0 ? errno : EIO;
            break;
        }
        done += (size_t)w;
    }
    if (close(fd) != 0 && !e && errno != EINTR)
        e = errno;
    return e;
}

ntp_status ntp_output_commit(ntp_ctx *ctx, ntp_output *o)
{
    if (!o)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_output_commit: no output");
    if (o->kind == OUT_STDOUT) {
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
    if (o->kind == OUT_THROUGH) {
        if (fclose(o->f) != 0 && !e)
            e = errno ? errno : EIO;
        o->f = NULL;
        if (!e)
            e = write_through(o);
    } else {
        if (!e) {
            set_final_mode(fileno(o->f), o->target);
            if (fsync(fileno(o->f)) != 0 && errno != EINVAL && errno != EROFS)
                e = errno;
        }
        if (fclose(o->f) != 0 && !e)
            e = errno ? errno : EIO;
        o->f = NULL;
        if (!e && rename(o->tmp, o->target) != 0)
            e = errno;
        if (e)
            unlink(o->tmp);
        else
            sync_parent_dir(o->target);
    }
    ntp_status st = NTP_STATUS_OK;
    if (e)
        st = ntp__error(ctx, NTP_STATUS_IO_ERROR, "cannot write '%s': %s", o->path, strerror(e));
    output_free(o);
    return st;
}

void ntp_output_abort(ntp_output *o)
{
    if (!o)
        return;
    if (o->kind == OUT_STDOUT) {
        /* What went to stdout cannot be taken back; at least push it out. */
        fflush(o->f);
    } else {
        if (o->f)
            fclose(o->f);
        if (o->kind == OUT_REPLACE)
            unlink(o->tmp);
    }
    output_free(o);
}
