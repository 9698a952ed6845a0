/* Shapes and costs of the data-movement ops added for ONNX models:
 * constant, slice, expand and resize, with the index arithmetic their
 * reference kernels share (op-onnx-impl.h). */
#include <math.h>

#include "op-common.h"
#include "op-onnx-impl.h"

/* --- constant ------------------------------------------------------------------ */

ntp_status ntp__shape_onnx_constant(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    ntp_shape s = {n->a.n_shape, {0}};
    if (n->a.n_shape < 0 || n->a.n_shape > NTP_MAX_DIMS)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT, "needs a 'shape' of at most %d dims",
                        NTP_MAX_DIMS);
    for (int d = 0; d < s.ndim; d++)
        s.dim[d] = n->a.shape[d];
    /* The input, when the markup wires one, only places the constant in the
     * chain; it is not read. */
    ntp_status st = ntp__node_add_weight(
        ctx, g, n, "value", n->a.constant.trainable ? NTP_TENSOR_WEIGHT : NTP_TENSOR_BUFFER, &s);
    if (st)
        return st;
    set_out(g, n, 0, &s);
    ntp__out(g, n, 0)->layout = NTP_LAYOUT_ANY;
    return NTP_STATUS_OK;
}

/* --- slice ---------------------------------------------------------------------- */

const char *ntp__slice_resolve(const ntp_attrs *a, const ntp_shape *in, bool allow_empty,
                               int64_t *start, int64_t *step, ntp_shape *out)
{
    const ntp_slice_attrs *sl = &a->slice;
    int n = sl->n, r = in->ndim;
    if (n < 1 || n > r)
        return "needs 1 to rank 'starts' and 'ends'";
    if (sl->n_axes != 0 && sl->n_axes != n)
        return "'axes' must have as many values as 'starts'";
    if (sl->n_steps != 0 && sl->n_steps != n)
        return "'steps' must have as many values as 'starts'";
    *out = *in;
    bool seen[NTP_MAX_DIMS] = {false};
    for (int d = 0; d < r; d++) {
        start[d] = 0;
        step[d] = 1;
    }
    for (int i = 0; i < n; i++) {
        int64_t ax = sl->n_axes ? sl->axes[i] : i;
        if (ax < 0)
            ax += r;
        if (ax < 0 || ax >= r)
            return "an axis is out of range";
        if (seen[ax])
            return "an axis is given twice";
        seen[ax] = true;
        int64_t dim = in->dim[ax], s = sl->starts[i], e = sl->ends[i];
        int64_t st = sl->n_steps ? sl->steps[i] : 1;
        if (st == 0)
            return "a step is 0";
        if (st == INT64_MIN)
            st = -INT64_MAX; /* the same slice, and its negation does not overflow */
        /* ONNX: negative indices count from the end, then clamp to the
         * range a step in that direction can reach. */
        if (s < 0)
            s += dim;
        if (e < 0)
            e += dim;
        int64_t len;
        if (st > 0) {
            s = s < 0 ? 0 : s > dim ? dim : s;
            e = e < 0 ? 0 : e > dim ? dim : e;
            len = e > s ? (e - s - 1) / st + 1 : 0;
        } else {
            s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
            len = s > e ? (s - e - 1) / -st + 1 : 0;
        }
        if (len <= 0 && !allow_empty)
            return "the slice is empty along an axis (ntprof tensors have no empty dims)";
        if (len < 0)
            len = 0;
        start[ax] = s;
        step[ax] = st;
        out->dim[ax] = len;
    }
    return NULL;
}

ntp_status ntp__shape_onnx_slice(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    const ntp_shape *s = &ntp__in(g, n, 0)->shape;
    int64_t start[NTP_MAX_DIMS], step[NTP_MAX_DIMS];
    ntp_shape out;
    const char *why = ntp__slice_resolve(&n->a, s, false, start, step, &out);
    if (why) {
        char b[NTP_SHAPE_STR_MAX];
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "cannot slice input %s: %s", shp(s, b), why);
    }
    set_out(g, n, 0, &out);
    return NTP_STATUS_OK;
}

/* --- expand --------------------------------------------------------------------------- */

ntp_status ntp__shape_onnx_expand(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    const ntp_shape *s = &ntp__in(g, n, 0)->shape;
    int t = n->a.n_shape;
    char b[NTP_SHAPE_STR_MAX];
    if (t < 0 || t > NTP_MAX_DIMS)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT, "needs a 'shape' of at most %d dims",
                        NTP_MAX_DIMS);
    int r = s->ndim > t ? s->ndim : t;
    ntp_shape out = {r, {0}};
    for (int d = 0; d < r; d++) {
        int ds = d - (r - s->ndim), dt = d - (r - t);
        int64_t a = ds >= 0 ? s->dim[ds] : 1, v = dt >= 0 ? n->a.shape[dt] : 1;
        if (v <= 0)
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "'shape' entry %d is %lld", dt, (long long)v);
        if (a != v && a != 1 && v != 1)
            return NODE_ERR(NTP_STATUS_SHAPE_ERROR,
                            "input %s does not broadcast to 'shape' "
                            "entry %d (%lld)",
                            shp(s, b), dt, (long long)v);
        out.dim[d] = a == 1 ? v : a;
    }
    set_out(g, n, 0, &out);
    ntp__out(g, n, 0)->layout = NTP_LAYOUT_ANY;
    return NTP_STATUS_OK;
}

/* --- resize --------------------------------------------------------------------------- */

const char *const ntp__resize_mode_names[3] = {"nearest", "linear", "cubic"};
const char *const ntp__resize_coord_names[5] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                                "asymmetric", "tf_half_pixel_for_nn"};
const char *const ntp__resize_nearest_names[4] = {"round_prefer_floor", "round_prefer_ceil",
                                                  "floor", "ceil"};

const char *ntp__resize_shape(const ntp_attrs *a, const ntp_shape *in, ntp_shape *out)
{
    int r = in->ndim;
    *out = *in;
    const ntp_resize_attrs *rz = &a->resize;
    if (rz->mode < NTP_RESIZE_NEAREST || rz->mode > NTP_RESIZE_CUBIC ||
        rz->coord < NTP_RESIZE_HALF_PIXEL || rz->coord > NTP_RESIZE_TF_HALF_PIXEL_FOR_NN ||
        rz->nearest < NTP_RESIZE_ROUND_PREFER_FLOOR || rz->nearest > NTP_RESIZE_CEIL)
        return "mode, coordinate transformation or nearest rounding out of range";
    if (a->n_shape > 0) {
        if (a->n_shape != r)
            return "'sizes' must have one value per input dim";
        for (int d = 0; d < r; d++) {
            if (a->shape[d] <= 0)
                return "'sizes' must be positive";
            out->dim[d] = a->shape[d];
        }
        return NULL;
    }
    if (a->resize.n_scales != r)
        return "needs 'sizes' or 'scales' with one value per input dim";
    for (int d = 0; d < r; d++) {
        int64_t num = a->resize.scale_num[d], den = a->resize.scale_den[d], p;
        if (num <= 0 || den <= 0)
            return "'scales' must be positive";
        if (!ntp__mul_ok(in->dim[d], num, &p))
            return "the output size overflows";
        out->dim[d] = p / den;
        if (out->dim[d] <= 0)
            return "a scale leaves an empty dim";
    }
    return NULL;
}

double ntp__resize_scale(const ntp_attrs *a, const ntp_shape *in, const ntp_shape *out, int d)
{
    if (a->n_shape == 0 && a->resize.n_scales == in->ndim)
        return (double)a->resize.scale_num[d] / (double)a->resize.scale_den[d];
    return (double)out->dim[d] / (double)in->dim[d];
}

double ntp__resize_coord_of(int coord, double x, double scale, int64_t in)
{
    double len = scale * (double)in;
    switch (coord) {
    case NTP_RESIZE_PYTORCH_HALF_PIXEL: return len == 1.0 ? -0.5 : (x + 0.5) / scale - 0.5;
    case NTP_RESIZE_ALIGN_CORNERS: return len == 1.0 ? 0.0 : x * (double)(in - 1) / (len - 1.0);
    case NTP_RESIZE_ASYMMETRIC: return x / scale;
    case NTP_RESIZE_TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / scale;
    default: return (x + 0.5) / scale - 0.5;
    }
}

ntp_status ntp__shape_onnx_resize(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    const ntp_shape *s = &ntp__in(g, n, 0)->shape;
    ntp_shape out;
    const char *why = ntp__resize_shape(&n->a, s, &out);
    if (why) {
        char b[NTP_SHAPE_STR_MAX];
        return NODE_ERR(NTP_STATUS_SHAPE_ERROR, "cannot resize input %s: %s", shp(s, b), why);
    }
    set_out(g, n, 0, &out);
    return NTP_STATUS_OK;
}

/* Nearest is data movement (0 FLOPs). Linear and cubic take a weighted sum
 * of 2 or 4 neighbours along every resized dim: a multiply-add per
 * neighbour, 2^k or 4^k of them for k resized dims. */
void ntp__cost_onnx_resize(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    if (ntp__resize_mode(&n->a) == NTP_RESIZE_NEAREST)
        return;
    const ntp_shape *in = &ntp__cin(g, n, 0)->shape, *out = &ntp__cout(g, n, 0)->shape;
    int64_t taps = ntp__resize_mode(&n->a) == NTP_RESIZE_LINEAR ? 2 : 4, per = 1;
    for (int d = 0; d < in->ndim; d++)
        if (in->dim[d] != out->dim[d] || ntp__resize_scale(&n->a, in, out, d) != 1.0)
            per = smul(per, taps);
    c->macs = smul(per, numel(out));
    c->flops = smul(2, c->macs);
}

bool ntp__resize_scale_rational(double scale, int64_t *num, int64_t *den)
{
    /* ONNX scales are f32: round there first, then f = m * 2^e exactly with
     * a 24-bit m, and the power of two goes to whichever side it belongs. */
    float f = (float)scale;
    if (!(f > 0.0f) || !isfinite(f))
        return false;
    int e;
    double m = frexp((double)f, &e); /* f = m * 2^e, m in [0.5, 1) */
    int64_t n = (int64_t)ldexp(m, 24);
    e -= 24;
    while (n % 2 == 0 && e < 0) {
        n /= 2;
        e++;
    }
    if (e >= 0) {
        if (e > 30 || n > (INT64_MAX >> e))
            return false;
        *num = n << e;
        *den = 1;
    } else {
        if (-e > 62)
            return false;
        *num = n;
        *den = (int64_t)1 << -e;
    }
    return true;
}
