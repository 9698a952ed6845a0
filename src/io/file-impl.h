/* Opening an input file, private to libntprof (src/io/file.c). */
#ifndef NTPROF_FILE_IMPL_H
#define NTPROF_FILE_IMPL_H

#include <stdio.h>
#include <sys/stat.h>

/* Open `path` read-only for every reader of input files (markup, ONNX
 * models and their external data, .npy and .pb inputs, run reports, the
 * history database's pre-check), so that none of them can block or read
 * something that is not a file: the open itself never waits (O_NONBLOCK,
 * so a FIFO with no writer or a device that waits for carrier cannot hang
 * it), anything but a regular file is refused from the descriptor's own
 * fstat (no race with a path that changes in between), and only then is
 * the descriptor made blocking again for ordinary reads.
 *
 * Returns the descriptor and fills *sb, or returns -1 with *why set to a
 * static reason ("No such file or directory", "is a directory", "not a
 * regular file"). */
int ntp__file_open_read(const char *path, struct stat *sb, const char **why);
/* The same as a stdio stream ("rb"). */
FILE *ntp__file_fopen_read(const char *path, struct stat *sb, const char **why);

#endif
