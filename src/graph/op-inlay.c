/* Shapes and costs of inlays: MFCC front end, CTC decoder, Darknet heads. */
#include <math.h>
#include <string.h>

#include "op-common.h"

/* DeepSpeech's alphabet: space, a-z, apostrophe; the blank is the 29th class. */
const char ntp__default_alphabet[] = " abcdefghijklmnopqrstuvwxyz'";

ntp_status ntp__shape_mfcc(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    ntp_status st = ntp__need_rank(ctx, g, n, 0, 2, 2, "[N,samples]");
    if (st)
        return st;
    const ntp_attrs *a = &n->a;
    const ntp_shape *s = &ntp__in(g, n, 0)->shape;
    if (a->sample_rate <= 0 || a->window <= 0 || a->hop <= 0 || a->mel_bands <= 0 ||
        a->coefficients <= 0 || a->context < 0)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT,
                        "sample_rate, window, hop, mel_bands and coefficients must be positive "
                        "and context non-negative");
    if (a->n_fft < a->window || (a->n_fft & (a->n_fft - 1)) != 0)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT,
                        "fft %lld must be a power of two no smaller than window %lld",
                        (long long)a->n_fft, (long long)a->window);
    if (a->mel_bands > a->n_fft / 2 + 1)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT, "mel_bands %lld exceed the %lld FFT bins",
                        (long long)a->mel_bands, (long long)(a->n_fft / 2 + 1));
    if (a->coefficients > a->mel_bands)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT, "coefficients %lld exceed mel_bands %lld",
                        (long long)a->coefficients, (long long)a->mel_bands);
    if (s->dim[1] < a->window) {
        char b[NTP_SHAPE_STR_MAX];
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                        "input %s holds fewer samples than one window (%lld)", shp(s, b),
                        (long long)a->window);
    }
    int64_t T = 1 + (s->dim[1] - a->window) / a->hop;
    ntp_shape out = shape3(T, s->dim[0], a->coefficients * (2 * a->context + 1));
    set_out(g, n, 0, &out);
    ntp__out(g, n, 0)->layout = NTP_LAYOUT_ANY;
    return NTP_STATUS_OK;
}

void ntp__cost_mfcc(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    const ntp_attrs *a = &n->a;
    const ntp_shape *o = &ntp__cout(g, n, 0)->shape;
    double fft = (double)a->n_fft;
    int64_t per = (int64_t)(5.0 * fft * log2(fft)) + 3 * a->window +
                  2 * a->mel_bands * (a->n_fft / 2 + 1) + 2 * a->coefficients * a->mel_bands;
    c->flops = smul(smul(o->dim[0], o->dim[1]), per);
}

ntp_status ntp__shape_ctc(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    ntp_status st = ntp__need_rank(ctx, g, n, 0, 3, 3, "[T,N,classes] (time-major logits)");
    if (st)
        return st;
    const ntp_shape *s = &ntp__in(g, n, 0)->shape;
    const char *alphabet = n->a.alphabet ? n->a.alphabet : ntp__default_alphabet;
    int64_t classes = (int64_t)strlen(alphabet) + 1;
    if (s->dim[2] != classes) {
        char b[NTP_SHAPE_STR_MAX];
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                        "input %s has %lld classes; the alphabet has %lld labels + blank = %lld",
                        shp(s, b), (long long)s->dim[2], (long long)(classes - 1),
                        (long long)classes);
    }
    if (n->a.beam_width <= 0)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT, "beam_width must be positive, got %lld",
                        (long long)n->a.beam_width);
    ntp_shape out = shape2(s->dim[1], s->dim[0]);
    set_out(g, n, 0, &out);
    ntp__out(g, n, 0)->dtype = NTP_DTYPE_I32;
    ntp__out(g, n, 0)->layout = NTP_LAYOUT_ANY;
    return NTP_STATUS_OK;
}

void ntp__cost_ctc(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    int64_t base = smul(5, numel(&ntp__cin(g, n, 0)->shape));
    c->flops = n->a.decode == NTP_CTC_BEAM ? smul(base, n->a.beam_width) : base;
}

/* Darknet's [yolo] and [region] at inference: the head's input
 * [N, anchors x (coords + 1 + classes), H, W], each anchor's block of
 * channels x, y, (w, h, ...), objectness, classes; the output is the same
 * shape (docs/darknet.md). */
ntp_status ntp__shape_darknet_head(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    ntp_status st = ntp__need_rank(ctx, g, n, 0, 4, 4, "[N,C,H,W]");
    if (st)
        return st;
    const ntp_attrs *a = &n->a;
    const ntp_shape *s = &ntp__in(g, n, 0)->shape;
    if (a->head == NTP_HEAD_YOLO && (a->coords != 4 || a->head_softmax || a->background))
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT,
                        "head yolo has 4 coords and neither softmax nor background");
    int64_t per = a->coords + 1 + a->classes;
    if (s->dim[1] != smul(a->anchors, per)) {
        char b[NTP_SHAPE_STR_MAX];
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                        "input %s has %lld channels; %lld anchors x (%lld coords + 1 + %lld "
                        "classes) = %lld",
                        shp(s, b), (long long)s->dim[1], (long long)a->anchors,
                        (long long)a->coords, (long long)a->classes,
                        (long long)smul(a->anchors, per));
    }
    ntp_shape out = *s;
    set_out(g, n, 0, &out);
    return NTP_STATUS_OK;
}

/* Per anchor and cell: the logistic (4 FLOPs, as sigmoid's) on x, y, the
 * objectness (not with [region]'s background) and the classes, or with
 * [region]'s softmax the softmax's 5 per class. */
void ntp__cost_darknet_head(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    const ntp_attrs *a = &n->a;
    const ntp_shape *s = &ntp__cout(g, n, 0)->shape;
    int64_t logistic = 2 + (a->background ? 0 : 1) + (a->head_softmax ? 0 : a->classes);
    int64_t per = 4 * logistic + (a->head_softmax ? 5 * (a->classes + (a->background ? 1 : 0)) : 0);
    int64_t cells = smul(smul(s->dim[0], a->anchors), smul(s->dim[2], s->dim[3]));
    c->flops = smul(cells, per);
}
