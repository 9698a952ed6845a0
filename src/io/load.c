/* ntp_graph_load: choose the reader by the file's extension. */
#include <string.h>

#include "core/ctx-impl.h"
#include "io-impl.h"
#include "onnx-impl.h"

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

ntp_status ntp_graph_load(ntp_ctx *ctx, const char *path, const ntp_load_opts *opts,
                          ntp_graph **out)
{
    static const ntp_load_opts none = {0};
    *out = NULL;
    if (!path)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "no topology file given");
    if (!opts)
        opts = &none;
    if (ends_with(path, ".xml"))
        return ntp__xml_load_file(ctx, path, opts, out);
    if (ends_with(path, ".onnx"))
        return ntp__onnx_load_file(ctx, path, opts, NULL, 0, out);
    return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                      "%s: unknown topology format: expected a .xml or .onnx file", path);
}

ntp_status ntp_graph_load_xml_memory(ntp_ctx *ctx, const char *buf, size_t len, const char *name,
                                     const ntp_load_opts *opts, ntp_graph **out)
{
    static const ntp_load_opts none = {0};
    *out = NULL;
    return ntp__xml_load_memory(ctx, buf, len, name ? name : "<memory>", opts ? opts : &none, out);
}
