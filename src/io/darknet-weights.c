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
 * and the recurrent layers one such block per inner layer, [local] its
 * biases [filters][positions] and weights [positions][filters][c][k][k],
 * [deconvolutional] a convolution's block (weights [c][n][size][size]),
 * [batchnorm] its scales, rolling means and rolling variances
 * (darknet-impl.h's blocks, in Darknet's load_weights_upto order).
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

/* Read the next n values into tensor t's f32 data at `at` (data allocated
 * whole, zeroed, on first use). With `to` non-NULL, value i goes to
 * to[i] instead: a block Darknet stores in another order. */
static ntp_status read_into(wreader *w, int li, const ntp_darknet_layer *L, int t, int64_t at,
                            int64_t n, const int64_t *to, const char *what)
{
    ntp_tensor *x = &w->g->tensors[t];
    if (!x->data || x->data_dtype != NTP_DTYPE_F32) {
        int64_t all = ntp_shape_numel(&x->shape);
        free(x->data);
        x->data = calloc((size_t)(all > 0 ? all : 1), sizeof(float));
        if (!x->data)
            return ntp__error(w->ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory", w->path);
        x->data_dtype = NTP_DTYPE_F32;
    }
    float *d = to ? malloc((size_t)(n > 0 ? n : 1) * sizeof *d) : (float *)x->data + at;
    if (!d)
        return ntp__error(w->ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory", w->path);
    size_t got = fread(d, sizeof *d, (size_t)n, w->f);
    if (to) {
        for (int64_t i = 0; i < (int64_t)got; i++)
            ((float *)x->data)[to[i]] = d[i];
        free(d);
    }
    if (got != (size_t)n)
        return ntp__error(w->ctx, NTP_STATUS_PARSE_ERROR,
                          "%s: ends inside layer %d (the section at %s:%d): expected %lld %s, "
                          "found %zu (is it the .weights of this .cfg?)",
                          w->path, li, w->g->source, L->line, (long long)n, what, got);
    return NTP_STATUS_OK;
}

/* Read the next `t`-sized block into tensor t (f32 data). */
static ntp_status block(wreader *w, int li, const ntp_darknet_layer *L, int t, const char *what)
{
    return read_into(w, li, L, t, 0, ntp_shape_numel(&w->g->tensors[t].shape), NULL, what);
}

/* The values of block b in Darknet's file order (darknet-impl.h). */
int ntp__darknet_block_slices(const ntp_graph *g, const ntp_darknet_block *b,
                              ntp_darknet_slice out[NTP_DARKNET_MAX_SLICES])
{
    const ntp_node *n = &g->nodes[b->node];
    const ntp_node *bn = b->bn_node >= 0 ? &g->nodes[b->bn_node] : NULL;
    int k = 0;
#define SLICE(t, at_, n_, what_) \
    (out[k++] = (ntp_darknet_slice){.tensor = (t), .at = (at_), .n = (n_), .what = (what_)})
#define WHOLE(t, what_) SLICE(t, 0, ntp_shape_numel(&g->tensors[t].shape), what_)
    /* biases: the node's own "b", or with batch_normalize the norm's shift */
    int bias = bn ? bn->w[1] : n->w[1];
    switch (b->kind) {
    case NTP_DARKNET_BLOCK_CONV:
    case NTP_DARKNET_BLOCK_FC:
        WHOLE(bias, "biases");
        if (b->kind == NTP_DARKNET_BLOCK_FC)
            WHOLE(n->w[0], "weights");
        if (bn) {
            WHOLE(bn->w[0], "scales");
            WHOLE(bn->w[2], "rolling means");
            WHOLE(bn->w[3], "rolling variances");
        }
        if (b->kind == NTP_DARKNET_BLOCK_CONV)
            WHOLE(n->w[0], "weights");
        break;
    case NTP_DARKNET_BLOCK_LSTM_U:
    case NTP_DARKNET_BLOCK_LSTM_W: {
        /* one gate's [connected]: H biases into B (input ones first, then
         * the recurrent ones), then H x in weights into the gate's rows of
         * W [1, 4H, I] or R [1, 4H, H] */
        bool u = b->kind == NTP_DARKNET_BLOCK_LSTM_U;
        int64_t H = n->a.units, in = g->tensors[n->w[u ? 0 : 1]].shape.dim[2];
        SLICE(n->w[2], (u ? 0 : 4 * H) + b->gate * H, H, "biases");
        SLICE(n->w[u ? 0 : 1], b->gate * H * in, H * in, "weights");
        break;
    }
    case NTP_DARKNET_BLOCK_BN:
        /* load_batchnorm_weights: no biases; the norm's shift stays the
         * zeros the reader gave it */
        WHOLE(bn->w[0], "scales");
        WHOLE(bn->w[2], "rolling means");
        WHOLE(bn->w[3], "rolling variances");
        break;
    case NTP_DARKNET_BLOCK_LOCAL: break; /* biases in another order: block_weights */
    }
#undef WHOLE
#undef SLICE
    return k;
}

/* One block (darknet-impl.h) in Darknet's order. */
static ntp_status block_weights(wreader *w, int li, const ntp_darknet_layer *L,
                                const ntp_darknet_block *b)
{
    const ntp_node *n = &w->g->nodes[b->node];
    ntp_status st;
    if (b->kind == NTP_DARKNET_BLOCK_LOCAL) {
        /* biases per output value [F][positions]; the grouped convolution's
         * are [positions][F]; the weights are in Darknet's order already */
        const ntp_tensor *bt = &w->g->tensors[n->w[1]];
        int64_t all = ntp_shape_numel(&bt->shape), pos = n->a.groups, F = all / pos;
        int64_t *to = malloc((size_t)all * sizeof *to);
        if (!to)
            return ntp__error(w->ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory", w->path);
        for (int64_t f = 0; f < F; f++)
            for (int64_t p = 0; p < pos; p++)
                to[f * pos + p] = p * F + f;
        st = read_into(w, li, L, n->w[1], 0, all, to, "biases");
        free(to);
        if (st || (st = block(w, li, L, n->w[0], "weights")))
            return st;
        return NTP_STATUS_OK;
    }
    ntp_darknet_slice sl[NTP_DARKNET_MAX_SLICES];
    int ns = ntp__darknet_block_slices(w->g, b, sl);
    for (int i = 0; i < ns; i++)
        if ((st = read_into(w, li, L, sl[i].tensor, sl[i].at, sl[i].n, NULL, sl[i].what)))
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
        for (int b = 0; b < layers[li].n_blocks && st == NTP_STATUS_OK; b++)
            st = block_weights(&w, li, &layers[li], &layers[li].blocks[b]);
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
