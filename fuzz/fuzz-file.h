/* Shared by the harnesses whose reader takes a path (.npy, .pb, the
 * history database): the input is written to an anonymous in-memory file
 * and handed over as /proc/self/fd/N, a regular file the readers open like
 * any other (through ntp__file_open_read), with no disk I/O per input. */
#ifndef NTPROF_FUZZ_FILE_H
#define NTPROF_FUZZ_FILE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* Write data to a new memfd; path receives its /proc name. -1 on failure. */
static int fuzz_memfile(const uint8_t *data, size_t size, char *path, size_t len)
{
    int fd = memfd_create("ntp-fuzz", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)w;
    }
    snprintf(path, len, "/proc/self/fd/%d", fd);
    return fd;
}

#endif
