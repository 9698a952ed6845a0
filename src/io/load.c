/* ntp_graph_load: choose the reader by the file's extension. */
#include <string.h>

#include "core/ctx-impl.h"
#include "darknet-impl.h"
#include "io-impl.h"
#include "onnx-impl.h"

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

/* What both readers take on trust: a precision override is a compute
 * precision (ntp_dtype_is_precision), whichever format follows. */
static ntp_status check_opts(ntp_ctx *ctx, const ntp_load_opts *opts)
{
    if (opts->set_precision && !ntp_dtype_is_precision(opts->precision))
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "precision override: '%s' is not a compute precision: expected f32, "
                          "bf16, f16 or i8",
                          ntp_dtype_name(opts->precision));
    return NTP_STATUS_OK;
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
    ntp_status st = check_opts(ctx, opts);
    if (st != NTP_STATUS_OK)
        return st;
    if (ends_with(path, ".xml"))
        return ntp__xml_load_file(ctx, path, opts, out);
    if (ends_with(path, ".onnx"))
        return ntp__onnx_load_file(ctx, path, opts, NULL, 0, out);
    if (ends_with(path, ".cfg"))
        return ntp__darknet_load_file(ctx, path, opts, out, NULL, NULL);
    return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                      "%s: unknown topology format: expected a .xml, .onnx or .cfg (Darknet) file",
                      path);
}

ntp_status ntp_graph_load_xml_memory(ntp_ctx *ctx, const char *buf, size_t len, const char *name,
                                     const ntp_load_opts *opts, ntp_graph **out)
{
    static const ntp_load_opts none = {0};
    *out = NULL;
    if (!opts)
        opts = &none;
    ntp_status st = check_opts(ctx, opts);
    if (st != NTP_STATUS_OK)
        return st;
    return ntp__xml_load_memory(ctx, buf, len, name ? name : "<memory>", opts, out);
}
