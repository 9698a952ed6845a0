/* ntprof: status codes.
 *
 * Every call that can fail returns an ntp_status. The one-line detail of the
 * last failure (file, line, layer, what was expected) is kept in the context
 * that was passed to the call: see ntp_ctx_errmsg(). */
#ifndef NTPROF_STATUS_H
#define NTPROF_STATUS_H

#include "ntprof/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One list generates the enum, ntp_status_name() and ntp_status_str(), so
 * they cannot drift apart. */
// clang-format off
#define NTP_STATUS_MAP(X)                                         \
    X(OK,               "success")                                \
    X(INVALID_ARGUMENT, "invalid argument")                       \
    X(PARSE_ERROR,      "malformed input")                        \
    X(UNKNOWN_NAME,     "unknown name")                           \
    X(SHAPE_ERROR,      "shape mismatch")                         \
    X(GRAPH_ERROR,      "invalid graph")                          \
    X(OVERFLOW,         "size overflow")                          \
    X(OUT_OF_MEMORY,    "out of memory")                          \
    X(MEMORY_BUDGET,    "memory budget exceeded")                 \
    X(IO_ERROR,         "input/output error")                     \
    X(UNSUPPORTED,      "not supported")                          \
    X(BACKEND_ERROR,    "backend failure")                        \
    X(INTERNAL,         "internal error")
// clang-format on

typedef enum ntp_status {
#define NTP_STATUS_ENUM_(name, str) NTP_STATUS_##name,
    NTP_STATUS_MAP(NTP_STATUS_ENUM_)
#undef NTP_STATUS_ENUM_
        NTP_STATUS_COUNT
} ntp_status;

/* "OK", "PARSE_ERROR", ... */
NTP_API const char *ntp_status_name(ntp_status s);
/* "success", "malformed input", ... */
NTP_API const char *ntp_status_str(ntp_status s);

#ifdef __cplusplus
}
#endif
#endif
