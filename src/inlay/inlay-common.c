/* Helpers shared by the inlays. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/ctx-impl.h"
#include "inlay/inlay-impl.h"

ntp_status ntp__inlay_error(ntp_ctx *ctx, const ntp_kargs *k, ntp_status st, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* Kernels may be driven without a loaded graph (tests, benchmarks); the
     * node still names the layer then, without the source position. */
    if (k->g && k->node)
        return ntp__node_error(ctx, k->g, k->node, st, "%s", msg);
    if (k->node)
        return ntp__error(ctx, st, "<%s name='%s'>: %s", ntp__op_name(k->node->op),
                          k->node->name ? k->node->name : "?", msg);
    return ntp__error(ctx, st, "%s", msg);
}

void *ntp__inlay_scratch(const ntp_kargs *k, size_t need, void **owned)
{
    *owned = NULL;
    if (k->workspace && k->workspace_bytes >= need)
        return k->workspace;
    *owned = malloc(need ? need : 1);
    return *owned;
}
