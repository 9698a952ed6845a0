/* Darknet's [yolo] and [region] layers at inference (darknet_head,
 * docs/darknet.md), as libdarknet's forward_yolo_layer and
 * forward_region_layer compute them on the head's output: per image and
 * anchor a block of coords + 1 + classes channels of H x W cells (their
 * entry_index), x and y through the logistic, w and h (and further coords)
 * left as they are, the objectness through the logistic (not with
 * [region]'s background), and the classes through the logistic, or with
 * [region]'s softmax a softmax over the classes (and the background) of
 * each cell. The logistic and the softmax are the reference backend's own
 * (in double, rounded once); Darknet computes in f32, within a few ulps. */
#include <string.h>

#include "ref-impl.h"

static void logistic(float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = ntp__ref_sigmoid(x[i]);
}

ntp_status ntp__ref_darknet_head(ntp_ctx *ctx, const ntp_kargs *k)
{
    ntp_status st = ntp__ref_expect(ctx, k, 1, 0, 0, 1);
    if (st)
        return st;
    const ntp_attrs *a = &k->node->a;
    const ntp_shape *s = &k->in[0].shape;
    int64_t per = a->coords + 1 + a->classes, cells = s->dim[2] * s->dim[3];
    char b[128];
    if (s->ndim != 4 || s->dim[1] != a->anchors * per ||
        ntp_shape_numel(&k->out[0].shape) != ntp_shape_numel(s))
        return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                              "darknet_head of %lld anchors x %lld channels does not fit %s",
                              (long long)a->anchors, (long long)per, ntp_shape_str(s, b, sizeof b));
    float *y = k->out[0].data;
    if (y != k->in[0].data)
        memcpy(y, k->in[0].data, (size_t)ntp_shape_numel(s) * sizeof *y);
    bool obj = !a->background, cls = !a->head_softmax;
    for (int64_t i = 0; i < s->dim[0] * a->anchors; i++) {
        float *e = y + i * per * cells; /* entry_index(l, b, n * w * h, 0) */
        logistic(e, 2 * cells);
        if (obj)
            logistic(e + a->coords * cells, cells);
        if (cls)
            logistic(e + (a->coords + 1) * cells, a->classes * cells);
        else
            /* softmax_cpu over classes + background entries from
             * coords + !background, stride w * h, one group per cell */
            for (int64_t c = 0; c < cells; c++)
                ntp__ref_softmax_strided(e + (a->coords + obj) * cells + c,
                                         a->classes + a->background, cells);
    }
    return NTP_STATUS_OK;
}
