/* Darknet .weights files: the trained parameters of a .cfg network.
 *
 * The layout is Darknet's save_weights(): three int32 (major, minor,
 * revision), the count of images seen (size_t from version 0.2 on, int32
 * before), then for each layer in order its parameters as host-order f32:
 *   [convolutional]  biases[n]; with batch_normalize scales[n],
 *                    rolling_mean[n], rolling_variance[n]; weights
 *                    [n][c/groups][size][size]
 *   [connected]      biases[out]; weights[out][in]; with batch_normalize
 *                    scales[out], rolling_mean[out], rolling_variance[out]
 * Every other supported layer has none. ntprof's tensors have the same
 * layouts (conv W [F, C/g, kh, kw], fc W [units, in]), so each block is
 * read straight into its tensor. With batch_normalize the biases are the
 * batch norm's shift (its "bias"), as in Darknet. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "darknet-impl.h"

typedef struct wreader {
    ntp_ctx *ctx;
    ntp_graph *g;
    const char *path;
    FILE *f;
} wreader;

/* Read the next `t`-sized block into tensor t (f32 data). */
static ntp_status block(wreader *w, int li, const ntp_darknet_layer *L, int t, const char *what)
{
    ntp_tensor *x = &w->g->tensors[t];
    int64_t n = ntp_shape_numel(&x->shape);
    float *d = malloc((size_t)(n > 0 ? n : 1) * sizeof *d);
    if (!d)
        return ntp__error(w->ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory", w->path);
    size_t got = fread(d, sizeof *d, (size_t)n, w->f);
    if (got != (size_t)n) {
        free(d);
        return ntp__error(w->ctx, NTP_STATUS_PARSE_ERROR,
                          "%s: ends inside layer %d (the section at %s:%d): expected %lld %s, "
                          "found %zu (is it the .weights of this .cfg?)",
                          w->path, li, w->g->source, L->line, (long long)n, what, got);
    }
    free(x->data);
    x->data = d;
    x->data_dtype = NTP_DTYPE_F32;
    return NTP_STATUS_OK;
}

static ntp_status layer_weights(wreader *w, int li, const ntp_darknet_layer *L)
{
    const ntp_node *n = &w->g->nodes[L->node];
    const ntp_node *bn = L->bn_node >= 0 ? &w->g->nodes[L->bn_node] : NULL;
    ntp_status st;
    /* biases: the node's own "b", or with batch_normalize the norm's shift */
    int bias = bn ? bn->w[1] : n->w[1];
    if ((st = block(w, li, L, bias, "biases")))
        return st;
    if (L->kind == NTP_DARKNET_CONNECTED && (st = block(w, li, L, n->w[0], "weights")))
        return st;
    if (bn && ((st = block(w, li, L, bn->w[0], "scales")) ||
               (st = block(w, li, L, bn->w[2], "rolling means")) ||
               (st = block(w, li, L, bn->w[3], "rolling variances"))))
        return st;
    if (L->kind == NTP_DARKNET_CONV && (st = block(w, li, L, n->w[0], "weights")))
        return st;
    return NTP_STATUS_OK;
}

ntp_status ntp__darknet_read_weights(ntp_ctx *ctx, ntp_graph *g, const ntp_darknet_layer *layers,
                                     int n_layers, const char *path)
{
    wreader w = {ctx, g, path, fopen(path, "rb")};
    if (!w.f)
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: cannot open: %s", path, strerror(errno));
    int32_t v[3];
    ntp_status st = NTP_STATUS_OK;
    if (fread(v, sizeof v[0], 3, w.f) != 3) {
        st = ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                        "%s: too short for a Darknet .weights header (3 int32 and a count)", path);
        goto done;
    }
    if (v[0] > 1000 || v[1] > 1000 || v[0] < 0 || v[1] < 0) {
        st = ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                        "%s: version %d.%d.%d: expected a Darknet .weights file (transposed "
                        "[connected] weights, versions above 1000, are not supported)",
                        path, v[0], v[1], v[2]);
        goto done;
    }
    /* seen: a size_t from version 0.2 on, an int before (Darknet's load_weights). */
    unsigned char seen[8];
    size_t seen_bytes = v[0] * 10 + v[1] >= 2 ? 8 : 4;
    if (fread(seen, 1, seen_bytes, w.f) != seen_bytes) {
        st = ntp__error(ctx, NTP_STATUS_PARSE_ERROR, "%s: ends inside its header", path);
        goto done;
    }
    for (int li = 0; li < n_layers && st == NTP_STATUS_OK; li++)
        if (layers[li].kind == NTP_DARKNET_CONV || layers[li].kind == NTP_DARKNET_CONNECTED)
            st = layer_weights(&w, li, &layers[li]);
    if (st == NTP_STATUS_OK) {
        long here = ftell(w.f);
        if (fseek(w.f, 0, SEEK_END) == 0 && ftell(w.f) != here)
            ntp__warn(ctx, "%s: %ld bytes after the last layer's weights were not read", path,
                      ftell(w.f) - here);
    }
done:
    fclose(w.f);
    return st;
}
