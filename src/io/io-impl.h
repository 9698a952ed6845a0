/* Readers of topology files, private to libntprof. */
#ifndef NTPROF_IO_IMPL_H
#define NTPROF_IO_IMPL_H

#include <stddef.h>
#include "graph/graph-impl.h"

/* ntprof markup (src/io/xml-reader.c). On success the graph is finalized:
 * ordered, shapes inferred, memory planned, budget checked. */
ntp_status ntp__xml_load_file(ntp_ctx *ctx, const char *path, const ntp_load_opts *opts,
                              ntp_graph **out);
ntp_status ntp__xml_load_memory(ntp_ctx *ctx, const char *buf, size_t len, const char *name,
                                const ntp_load_opts *opts, ntp_graph **out);
/* The same under lower work limits: the reader's NTP_XML_MAX_EXPANDED and
 * NTP_XML_MAX_SUBST_BYTES (xml-impl.h), which a caller inside the library
 * may lower (never raise) for one read. The markup fuzzer does, so that an
 * input costs milliseconds, not seconds, and meets the refusals sooner.
 * 0 keeps a limit. */
typedef struct ntp__xml_limits {
    int64_t expanded;    /* elements instantiated by repeats */
    int64_t subst_bytes; /* substituted attribute bytes, all together */
} ntp__xml_limits;
ntp_status ntp__xml_load_memory_limited(ntp_ctx *ctx, const char *buf, size_t len, const char *name,
                                        const ntp_load_opts *opts, const ntp__xml_limits *lim,
                                        ntp_graph **out);

/* --- NumPy .npy files (src/io/npy.c) ------------------------------------- */
/* A loaded array: little-endian, C order; data is malloc'd. */
typedef struct ntp_npy {
    ntp_dtype dtype;
    ntp_shape shape;
    void *data;
    int64_t nbytes;
} ntp_npy;

/* Read a version 1/2/3 .npy file holding '<f4', '<f2', '<i4', '<i8', '|i1'
 * or '|u1' data in C order. Errors name the file and what was wrong. */
ntp_status ntp__npy_read(ntp_ctx *ctx, const char *path, ntp_npy *out);
/* The same from len bytes in memory (the fuzzer's way in); name stands for
 * the file in errors. */
ntp_status ntp__npy_read_memory(ntp_ctx *ctx, const char *name, const void *data, size_t len,
                                ntp_npy *out);
void ntp__npy_free(ntp_npy *a);
/* Write an array as .npy version 1.0 (bf16 is written as f4 by the
 * caller: NumPy has no bf16). */
ntp_status ntp__npy_write(ntp_ctx *ctx, const char *path, ntp_dtype dtype, const ntp_shape *shape,
                          const void *data);

#endif
