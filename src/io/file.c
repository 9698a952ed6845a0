/* Opening input files without blocking (file-impl.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "file-impl.h"

int ntp__file_open_read(const char *path, struct stat *sb, const char **why)
{
    struct stat local;
    if (!sb)
        sb = &local;
    const char *dummy;
    if (!why)
        why = &dummy;
    *why = NULL;
    if (!path || !*path) {
        *why = strerror(ENOENT);
        return -1;
    }
    /* O_NOCTTY: a terminal named as input must not become ours. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        *why = strerror(errno);
        return -1;
    }
    if (fstat(fd, sb) != 0) {
        *why = strerror(errno);
        close(fd);
        return -1;
    }
    if (!S_ISREG(sb->st_mode)) {
        *why = S_ISDIR(sb->st_mode) ? "is a directory" : "not a regular file";
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        *why = strerror(errno);
        close(fd);
        return -1;
    }
    return fd;
}

FILE *ntp__file_fopen_read(const char *path, struct stat *sb, const char **why)
{
    int fd = ntp__file_open_read(path, sb, why);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        if (why)
            *why = strerror(errno);
        close(fd);
    }
    return f;
}
