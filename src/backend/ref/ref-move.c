/* Data movement: concat, split, reshape, flatten, transpose, pad, embedding,
 * dropout, memcpy and convert. Nothing here does arithmetic except convert's
 * rounding, so every op but pad and convert works on raw elements of any
 * dtype (the engine keeps integer tensors integer). */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "core/numeric-impl.h"
#include "ref-impl.h"

static ntp_status shape_error2(ntp_ctx *ctx, const ntp_kargs *k, const char *what,
                               const ntp_shape *x, const ntp_shape *y)
{
    char a[128], b[128];
    return ntp__ref_error(ctx, k, NTP_STATUS_SHAPE_ERROR, "%s: %s and %s", what,
                          ntp_shape_str(x, a, sizeof a), ntp_shape_str(y, b, sizeof b));
}

/* Operand counts, data present, and one dtype shared by every input and
 * output (a supported one); *es gets its size in bytes. */
static ntp_status expect_raw(ntp_ctx *ctx, const ntp_kargs *k, int n_in, int n_out, size_t *es)
{
    if (k->n_in != n_in || k->n_out != n_out || n_out < 1 || n_out > NTP_MAX_OUTPUTS)
        return ntp__ref_error(ctx, k, NTP_STATUS_INTERNAL,
                              "reference kernel called with %d inputs and %d outputs", k->n_in,
                              k->n_out);
    ntp_dtype t = k->out[0].dtype;
    *es = ntp_dtype_size(t);
    for (int i = 0; i < k->n_in + k->n_out; i++) {
        const ntp_buf *b = i < k->n_in ? &k->in[i] : &k->out[i - k->n_in];
        if (!b->data || b->dtype != t || *es == 0)
            return ntp__ref_error(ctx, k, NTP_STATUS_UNSUPPORTED,
                                  "operands must share one dtype (got %s and %s)",
                                  ntp_dtype_name(b->dtype), ntp_dtype_name(t));
    }
    return NTP_STATUS_OK;
}

/* Row-major strides of s, in elements. */
static void strides_of(const ntp_shape *s, int64_t *st)
{
    int64_t v = 1;
    for (int d = s->ndim - 1; d >= 0; d--) {
        st[d] = v;
        v *= s->dim[d];
    }
}

static ntp_status copy(ntp_ctx *ctx, const ntp_kargs *k)
{
    size_t es;
    ntp_status st = expect_raw(ctx, k, 1, 1, &es);
    if (st)
        return st;
    int64_t n = ntp_shape_numel(&k->in[0].shape);
    if (ntp_shape_numel(&k->out[0].shape) != n)
        return shape_error2(ctx, k, "element counts differ", &k->in[0].shape, &k->out[0].shape);
    if (k->out[0].data != k->in[0].data)
        memmove(k->out[0].data, k->in[0].data, (size_t)n * es);
    return NTP_STATUS_OK;
}

/* delay: a calibration layer of known cost (docs/ops.md). It spins on the
 * monotonic clock rather than sleeping, so that it holds its core for the
 * whole time as a compute-bound layer would, and its duration does not
 * depend on the scheduler's timer slack; then it passes its input on. */
ntp_status ntp__ref_delay(ntp_ctx *ctx, const ntp_kargs *k)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int64_t until_ns = k->node->a.delay_us * 1000;
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((int64_t)(t.tv_sec - t0.tv_sec) * 1000000000 + (t.tv_nsec - t0.tv_nsec) < until_ns);
    return copy(ctx, k);
}

static int64_t norm_axis(int64_t axis, int rank)
{
    return axis < 0 ? axis + rank : axis;
}

/* Inputs agree with the output on every dim but axis, and their axis dims
 * add up. Used by concat (many in, one out) and split (one in, many out). */
static bool parts_fit(const ntp_shape *whole, const ntp_buf *parts, int n, int64_t axis)
{
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
        const ntp_shape *s = &parts[i].shape;
        if (s->ndim != whole->ndim)
            return false;
        for (int d = 0; d < s->ndim; d++)
            if (d != axis && s->dim[d] != whole->dim[d])
                return false;
        sum += s->dim[axis];
    }
    return sum == whole->dim[axis];
}

static ntp_status concat_split(ntp_ctx *ctx, const ntp_kargs *k, bool is_concat)
{
    size_t es;
    ntp_status st =
        is_concat ? expect_raw(ctx, k, k->n_in, 1, &es) : expect_raw(ctx, k, 1, k->n_out, &es);
    if (st)
        return st;
    const ntp_shape *whole = is_concat ? &k->out[0].shape : &k->in[0].shape;
    const ntp_buf *parts = is_concat ? k->in : k->out;
    int n = is_concat ? k->n_in : k->n_out;
    int64_t axis = norm_axis(k->node->a.axis, whole->ndim);
    if (n < 1 || axis < 0 || axis >= whole->ndim || !parts_fit(whole, parts, n, axis))
        return shape_error2(ctx, k,
                            is_concat ? "inputs do not concatenate" : "outputs do not split",
                            &parts[0].shape, whole);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= whole->dim[d];
    for (int d = (int)axis + 1; d < whole->ndim; d++)
        inner *= whole->dim[d];
    size_t whole_row = (size_t)(whole->dim[axis] * inner) * es;
    char *w = is_concat ? k->out[0].data : k->in[0].data;
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        size_t part_row = (size_t)(parts[i].shape.dim[axis] * inner) * es;
        char *p = parts[i].data;
        for (int64_t o = 0; o < outer; o++) {
            char *wp = w + (size_t)o * whole_row + at;
            char *pp = p + (size_t)o * part_row;
            if (is_concat)
                memcpy(wp, pp, part_row);
            else
                memcpy(pp, wp, part_row);
        }
        at += part_row;
    }
    return NTP_STATUS_OK;
}

/* --- element access for transpose and convert ----------------------------- */

static void copy_elem(char *dst, const char *src, size_t es)
{
    switch (es) {
    case 1: *dst = *src; break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    default: memcpy(dst, src, es); break;
    }
}

/* dst[out index] = src[sum(index[d] * istride[d])] over the output shape,
 * one element of es bytes at a time; the innermost output dim is a loop. */
static void gather(const char *src, char *dst, size_t es, const ntp_shape *out,
                   const int64_t *istride)
{
    int r = out->ndim;
    int64_t n = ntp_shape_numel(out);
    if (r == 0 || n == 0) {
        if (n == 1)
            copy_elem(dst, src, es);
        return;
    }
    int64_t last = out->dim[r - 1], ls = istride[r - 1];
    int64_t idx[NTP_MAX_DIMS] = {0}, off = 0;
    for (int64_t row = 0; row < n / last; row++) {
        char *d = dst + (size_t)(row * last) * es;
        for (int64_t j = 0; j < last; j++)
            copy_elem(d + (size_t)j * es, src + (size_t)(off + j * ls) * es, es);
        for (int dd = r - 2; dd >= 0; dd--) {
            idx[dd]++;
            off += istride[dd];
            if (idx[dd] < out->dim[dd])
                break;
            off -= istride[dd] * idx[dd];
            idx[dd] = 0;
        }
    }
}

/* Input strides seen from the output's dims: out dim d reads input dim
 * perm[d]. */
static void permuted_strides(const ntp_shape *in, const int64_t *perm, int64_t *istride)
{
    int64_t st[NTP_MAX_DIMS];
    strides_of(in, st);
    for (int d = 0; d < in->ndim; d++)
        istride[d] = st[perm[d]];
}

static bool perm_fits(const ntp_shape *in, const ntp_shape *out, const int64_t *perm)
{
    if (in->ndim != out->ndim)
        return false;
    bool seen[NTP_MAX_DIMS] = {false};
    for (int d = 0; d < in->ndim; d++) {
        if (perm[d] < 0 || perm[d] >= in->ndim || seen[perm[d]] || out->dim[d] != in->dim[perm[d]])
            return false;
        seen[perm[d]] = true;
    }
    return true;
}

static ntp_status transpose(ntp_ctx *ctx, const ntp_kargs *k)
{
    size_t es;
    ntp_status st = expect_raw(ctx, k, 1, 1, &es);
    if (st)
        return st;
    const ntp_shape *in = &k->in[0].shape, *out = &k->out[0].shape;
    const ntp_attrs *a = &k->node->a;
    int64_t perm[NTP_MAX_DIMS];
    for (int d = 0; d < in->ndim; d++)
        perm[d] = a->n_perm == 0 ? in->ndim - 1 - d : a->perm[d];
    if ((a->n_perm != 0 && a->n_perm != in->ndim) || !perm_fits(in, out, perm))
        return shape_error2(ctx, k, "perm does not map the input to the output", in, out);
    int64_t istride[NTP_MAX_DIMS];
    permuted_strides(in, perm, istride);
    gather(k->in[0].data, k->out[0].data, es, out, istride);
    return NTP_STATUS_OK;
}

/* --- pad ------------------------------------------------------------------- */

static ntp_status pad(ntp_ctx *ctx, const ntp_kargs *k)
{
    ntp_status st = ntp__ref_expect(ctx, k, 1, 0, 0, 1);
    if (st)
        return st;
    const ntp_attrs *a = &k->node->a;
    const ntp_shape *in = &k->in[0].shape, *out = &k->out[0].shape;
    int r = in->ndim;
    bool ok = out->ndim == r && r >= 1 && a->n_pads == 2 * r;
    for (int d = 0; ok && d < r; d++)
        ok = a->pads[d] >= 0 && a->pads[r + d] >= 0 &&
             out->dim[d] == in->dim[d] + a->pads[d] + a->pads[r + d];
    if (!ok)
        return shape_error2(ctx, k, "pads do not map the input to the output", in, out);
    int64_t ist[NTP_MAX_DIMS];
    strides_of(in, ist);
    const float *x = k->in[0].data;
    float *y = k->out[0].data;
    float value = (float)a->value;
    int64_t n = ntp_shape_numel(out), last = out->dim[r - 1];
    int64_t idx[NTP_MAX_DIMS] = {0};
    for (int64_t row = 0; row < n / last; row++) {
        float *yr = y + row * last;
        int64_t off = 0;
        bool constant = false;
        for (int d = 0; d < r - 1; d++) {
            int64_t i = ntp__pad_src(idx[d], a->pads[d], in->dim[d], a->pad_mode);
            if (i < 0)
                constant = true;
            else
                off += i * ist[d];
        }
        for (int64_t j = 0; j < last; j++) {
            int64_t i =
                constant ? -1 : ntp__pad_src(j, a->pads[r - 1], in->dim[r - 1], a->pad_mode);
            yr[j] = i < 0 ? value : x[off + i];
        }
        for (int d = r - 2; d >= 0; d--) {
            if (++idx[d] < out->dim[d])
                break;
            idx[d] = 0;
        }
    }
    return NTP_STATUS_OK;
}

/* --- embedding ------------------------------------------------------------- */

static ntp_status embedding(ntp_ctx *ctx, const ntp_kargs *k)
{
    if (k->n_in != 1 || k->n_w != 1 || k->n_out != 1)
        return ntp__ref_error(ctx, k, NTP_STATUS_INTERNAL,
                              "embedding takes 1 input, 1 table, 1 output");
    ntp_dtype it = k->in[0].dtype;
    if (it != NTP_DTYPE_I32 && it != NTP_DTYPE_I64)
        return ntp__ref_error(ctx, k, NTP_STATUS_UNSUPPORTED, "indices must be i32 or i64, got %s",
                              ntp_dtype_name(it));
    if (k->w[0].dtype != NTP_DTYPE_F32 || k->out[0].dtype != NTP_DTYPE_F32)
        return ntp__ref_error(ctx, k, NTP_STATUS_UNSUPPORTED, "the table and output must be f32");
    const ntp_shape *ts = &k->w[0].shape, *ys = &k->out[0].shape;
    int64_t n = ntp_shape_numel(&k->in[0].shape);
    if (ts->ndim != 2 || ys->ndim < 1 || ys->dim[ys->ndim - 1] != ts->dim[1] ||
        ntp_shape_numel(ys) != n * ts->dim[1])
        return shape_error2(ctx, k, "table and output do not match", ts, ys);
    int64_t vocab = ts->dim[0], units = ts->dim[1];
    const float *table = k->w[0].data;
    float *y = k->out[0].data;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = it == NTP_DTYPE_I32 ? ((const int32_t *)k->in[0].data)[i]
                                        : ((const int64_t *)k->in[0].data)[i];
        if (v < 0 || v >= vocab)
            return ntp__ref_error(ctx, k, NTP_STATUS_INVALID_ARGUMENT,
                                  "index %lld at position %lld is outside the table [0, %lld)",
                                  (long long)v, (long long)i, (long long)vocab);
        memcpy(y + i * units, table + v * units, (size_t)units * sizeof *y);
    }
    return NTP_STATUS_OK;
}

/* --- convert ----------------------------------------------------------------- */

static double load(const void *p, ntp_dtype t, int64_t i)
{
    switch (t) {
    case NTP_DTYPE_F32: return ((const float *)p)[i];
    case NTP_DTYPE_BF16: return ntp__bf16_to_f32(((const uint16_t *)p)[i]);
    case NTP_DTYPE_F16: return ntp__f16_to_f32(((const uint16_t *)p)[i]);
    case NTP_DTYPE_I8: return ((const int8_t *)p)[i];
    case NTP_DTYPE_U8: return ((const uint8_t *)p)[i];
    case NTP_DTYPE_I32: return ((const int32_t *)p)[i];
    case NTP_DTYPE_I64: return (double)((const int64_t *)p)[i];
    case NTP_DTYPE_COUNT: break;
    }
    return 0.0;
}

/* v rounded half to even and saturated to [lo, hi]; NaN gives 0. */
static double to_int(double v, double lo, double hi)
{
    if (isnan(v))
        return 0.0;
    v = ntp__round_half_even(v);
    return v < lo ? lo : v > hi ? hi : v;
}

/* Store v into storage type t; for f32 storage, first round through the
 * value type `through` (bf16, f16 or an integer type), since the reference
 * backend keeps reduced precisions in f32. Integer storage is a numeric cast
 * (round half to even, saturating), not quantisation. */
static void store(void *p, ntp_dtype t, int64_t i, double v, ntp_dtype through)
{
    switch (t) {
    case NTP_DTYPE_F32: {
        float f = (float)v;
        switch (through) {
        case NTP_DTYPE_BF16: f = ntp__round_bf16(f); break;
        case NTP_DTYPE_F16: f = ntp__round_f16(f); break;
        case NTP_DTYPE_U8: f = (float)to_int(v, 0.0, 255.0); break;
        case NTP_DTYPE_I32: f = (float)to_int(v, (double)INT32_MIN, (double)INT32_MAX); break;
        case NTP_DTYPE_I64: f = (float)to_int(v, -0x1p63, 0x1p63); break;
        case NTP_DTYPE_F32:
        case NTP_DTYPE_I8: /* i8 is quantised over the whole tensor after */
        case NTP_DTYPE_COUNT: break;
        }
        ((float *)p)[i] = f;
        break;
    }
    case NTP_DTYPE_BF16: ((uint16_t *)p)[i] = ntp__f32_to_bf16((float)v); break;
    case NTP_DTYPE_F16: ((uint16_t *)p)[i] = ntp__f32_to_f16((float)v); break;
    case NTP_DTYPE_I8: ((int8_t *)p)[i] = (int8_t)to_int(v, -128.0, 127.0); break;
    case NTP_DTYPE_U8: ((uint8_t *)p)[i] = (uint8_t)to_int(v, 0.0, 255.0); break;
    case NTP_DTYPE_I32:
        ((int32_t *)p)[i] = (int32_t)to_int(v, (double)INT32_MIN, (double)INT32_MAX);
        break;
    case NTP_DTYPE_I64: {
        /* 2^63 itself does not fit: saturate just below it. */
        double r = to_int(v, -0x1p63, 0x1p63);
        ((int64_t *)p)[i] = r >= 0x1p63 ? INT64_MAX : (int64_t)r;
        break;
    }
    case NTP_DTYPE_COUNT: break;
    }
}

/* The permutation a layout change applies, in out[d] = in[perm[d]] form:
 * to NHWC moves dim 1 last, to NCHW moves the last dim to 1. */
static void layout_perm(int r, ntp_layout to, int64_t *perm)
{
    perm[0] = 0;
    if (to == NTP_LAYOUT_NHWC) {
        for (int d = 1; d < r - 1; d++)
            perm[d] = d + 1;
        perm[r - 1] = 1;
    } else {
        perm[1] = r - 1;
        for (int d = 2; d < r; d++)
            perm[d] = d - 1;
    }
}

static ntp_status convert(ntp_ctx *ctx, const ntp_kargs *k)
{
    if (k->n_in != 1 || k->n_out != 1 || !k->in[0].data || !k->out[0].data)
        return ntp__ref_error(ctx, k, NTP_STATUS_INTERNAL, "convert takes 1 input and 1 output");
    const ntp_attrs *a = &k->node->a;
    const ntp_shape *in = &k->in[0].shape, *out = &k->out[0].shape;
    ntp_dtype it = k->in[0].dtype, ot = k->out[0].dtype;
    if (ntp_dtype_size(it) == 0 || ntp_dtype_size(ot) == 0)
        return ntp__ref_error(ctx, k, NTP_STATUS_UNSUPPORTED, "cannot convert %s to %s",
                              ntp_dtype_name(it), ntp_dtype_name(ot));
    int r = in->ndim;
    int64_t perm[NTP_MAX_DIMS];
    for (int d = 0; d < r; d++)
        perm[d] = d;
    if (a->has_to_layout && r >= 3) {
        int64_t p[NTP_MAX_DIMS];
        layout_perm(r, a->to_layout, p);
        bool permuted = perm_fits(in, out, p), same = perm_fits(in, out, perm);
        /* When both fit (C equal to every spatial dim) only the input's
         * layout can tell; it is in the graph, which kernels otherwise do
         * not read. Without a graph the layout change is applied. */
        if (permuted && same && k->g) {
            const ntp_tensor *t = &k->g->tensors[k->node->in[0]];
            ntp_layout from = t->layout == NTP_LAYOUT_NHWC ? NTP_LAYOUT_NHWC : NTP_LAYOUT_NCHW;
            permuted = from != a->to_layout;
        }
        if (permuted)
            memcpy(perm, p, sizeof p);
        else if (!same)
            return shape_error2(ctx, k, "the layout change does not map the input to the output",
                                in, out);
    } else if (!perm_fits(in, out, perm)) {
        return shape_error2(ctx, k, "convert keeps the shape", in, out);
    }
    int64_t istride[NTP_MAX_DIMS];
    permuted_strides(in, perm, istride);
    ntp_dtype through = a->has_to_dtype ? a->to_dtype : it;
    int64_t n = ntp_shape_numel(out);
    if (it == ot && through == it) {
        gather(k->in[0].data, k->out[0].data, ntp_dtype_size(it), out, istride);
        return NTP_STATUS_OK;
    }
    /* Element by element through double, which holds every value of every
     * supported type exactly (i64 beyond 2^53 excepted). */
    int64_t idx[NTP_MAX_DIMS] = {0}, off = 0;
    for (int64_t i = 0; i < n; i++) {
        store(k->out[0].data, ot, i, load(k->in[0].data, it, off), through);
        for (int d = r - 1; d >= 0; d--) {
            idx[d]++;
            off += istride[d];
            if (idx[d] < out->dim[d])
                break;
            off -= istride[d] * idx[d];
            idx[d] = 0;
        }
    }
    if (ot == NTP_DTYPE_F32 && through == NTP_DTYPE_I8) {
        /* int8 on f32 storage: dynamic per-tensor quantisation, as the
         * backend does for int8 activations. */
        ntp_status st = ntp__emulate_storage(k->out[0].data, n, NTP_DTYPE_I8, NULL, 1, 0);
        if (st)
            return ntp__ref_error(ctx, k, st, "cannot quantise the output to int8");
    }
    return NTP_STATUS_OK;
}

static ntp_status concat(ntp_ctx *ctx, const ntp_kargs *k)
{
    return concat_split(ctx, k, true);
}
static ntp_status split(ntp_ctx *ctx, const ntp_kargs *k)
{
    return concat_split(ctx, k, false);
}

static const ntp_ref_kernel_fn kernels[NTP_OP_COUNT] = {
    [NTP_OP_CONCAT] = concat, [NTP_OP_SPLIT] = split,         [NTP_OP_TRANSPOSE] = transpose,
    [NTP_OP_PAD] = pad,       [NTP_OP_EMBEDDING] = embedding, [NTP_OP_CONVERT] = convert,
    [NTP_OP_RESHAPE] = copy,  [NTP_OP_FLATTEN] = copy,        [NTP_OP_DROPOUT] = copy,
    [NTP_OP_MEMCPY] = copy,
};

ntp_status ntp__ref_move(ntp_ctx *ctx, const ntp_kargs *k)
{
    return ntp__ref_dispatch(ctx, k, kernels, "data movement");
}
