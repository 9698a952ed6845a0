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

#endif
