/* The ops added for ONNX models (docs/ops.md, "Ops added for ONNX"): their
 * attribute storage, the ONNX attributes that map one to one onto it, and
 * the index arithmetic that shape inference and the reference kernels
 * share, so the two cannot disagree.
 *
 * Slice, the reductions, resize, lrn, constant and the parameterised unary
 * ops (leaky_relu, elu and celu, selu, hard_sigmoid, thresholded_relu,
 * shrink) have their own structs in ntp_attrs' union (graph-impl.h), tagged
 * by the node's op. The other ops keep their attributes in the shared
 * fields whose meaning fits (shapes and sizes in the dim list `shape`);
 * op-attrs.h says which markup attribute fills which field. The accessors
 * below are the one place that says which field holds what; readers,
 * writers, shape functions and kernels go through them. */
#ifndef NTPROF_OP_ONNX_IMPL_H
#define NTPROF_OP_ONNX_IMPL_H

#include <stddef.h>

#include "graph-impl.h"

/* --- ONNX attributes that map one to one onto a field ---------------------------
 * One row per attribute (op-onnx-attrs.c), an op's rows in the order the
 * exporter writes them: the ONNX name, the field's type and offset in
 * ntp_attrs, and ONNX's default, which the import stores where the model
 * gives none. The import (io/onnx-map-*.c) reads an op's rows and the
 * export (io/onnx-export-ops.c) writes them, so the two agree; what does
 * not map one to one stays in the op's mapper and emitter. */
typedef enum ntp_onnx_attr_type {
    NTP_ONNX_ATTR_FLOAT, /* a double; ONNX FLOAT (an INT read as its value) */
    NTP_ONNX_ATTR_INT,   /* an int64_t; ONNX INT */
    NTP_ONNX_ATTR_BOOL   /* a bool; ONNX INT, nonzero true, written 0 or 1 */
} ntp_onnx_attr_type;

typedef struct ntp_onnx_attr {
    const char *name;
    ntp_onnx_attr_type type;
    size_t field; /* offsetof(ntp_attrs, ...) */
    double dflt;
} ntp_onnx_attr;

/* Op's rows and their count (none: NULL and 0). */
const ntp_onnx_attr *ntp__onnx_attrs(ntp_op op, int *n);

static inline double ntp__onnx_attr_get_f(const ntp_attrs *a, const ntp_onnx_attr *d)
{
    return *(const double *)(const void *)((const char *)a + d->field);
}
static inline void ntp__onnx_attr_set_f(ntp_attrs *a, const ntp_onnx_attr *d, double v)
{
    *(double *)(void *)((char *)a + d->field) = v;
}
static inline int64_t ntp__onnx_attr_get_i(const ntp_attrs *a, const ntp_onnx_attr *d)
{
    return *(const int64_t *)(const void *)((const char *)a + d->field);
}
static inline void ntp__onnx_attr_set_i(ntp_attrs *a, const ntp_onnx_attr *d, int64_t v)
{
    *(int64_t *)(void *)((char *)a + d->field) = v;
}
static inline bool ntp__onnx_attr_get_b(const ntp_attrs *a, const ntp_onnx_attr *d)
{
    return *(const bool *)(const void *)((const char *)a + d->field);
}
static inline void ntp__onnx_attr_set_b(ntp_attrs *a, const ntp_onnx_attr *d, bool v)
{
    *(bool *)(void *)((char *)a + d->field) = v;
}

/* --- element-wise parameters: in the op's struct (graph-impl.h)
 *   leaky_relu: slope (ONNX alpha)      elu, celu: alpha
 *   selu: alpha, gamma                  hard_sigmoid: slope, offset (alpha, beta)
 *   thresholded_relu: threshold (alpha) shrink: lambd, bias
 * A kernel for one op reads its struct; a backend that maps several ops to
 * a primitive with a parameter reads "the op's parameter i" here, the i-th
 * ONNX attribute row of the op (0 where it has fewer). */
double ntp__unary_param(const ntp_attrs *a, ntp_op op, int i);

/* --- prelu: the slope's shape, a->shape[0..n_shape); n_shape == 0 means one
 * slope per channel ([C], dim 1 of the input). */

/* --- constant: the value's shape in a->shape[0..n_shape) (rank 0 is a
 * scalar); a->constant.trainable says whether the value is a trainable
 * weight (true) or a buffer (false). */

/* --- reductions: axes in a->reduce (graph-impl.h), n_axes == 0 meaning
 * every axis. The output keeps the reduced dims as 1 (ONNX keepdims=1); a
 * reader that wants them dropped adds a reshape. */
static inline int ntp__reduce_n_axes(const ntp_attrs *a)
{
    return a->reduce.n_axes;
}
static inline const int64_t *ntp__reduce_axes(const ntp_attrs *a)
{
    return a->reduce.axes;
}
static inline void ntp__reduce_set(ntp_attrs *a, int n, const int64_t *axes)
{
    a->reduce.n_axes = n;
    for (int i = 0; i < n; i++)
        a->reduce.axes[i] = axes[i];
}

/* --- lrn: a->lrn (graph-impl.h). */
static inline int64_t ntp__lrn_size(const ntp_attrs *a)
{
    return a->lrn.size;
}
static inline double ntp__lrn_alpha(const ntp_attrs *a)
{
    return a->lrn.alpha;
}
static inline double ntp__lrn_beta(const ntp_attrs *a)
{
    return a->lrn.beta;
}
static inline double ntp__lrn_bias(const ntp_attrs *a)
{
    return a->lrn.bias;
}

/* --- slice: ONNX's starts, ends, axes and steps as given, in a->slice
 * (graph-impl.h). Set them: n starts and ends, axes NULL for the first n,
 * steps NULL for all 1. */
static inline void ntp__slice_set(ntp_attrs *a, int n, const int64_t *starts, const int64_t *ends,
                                  const int64_t *axes, const int64_t *steps)
{
    a->slice.n = n;
    a->slice.n_axes = axes ? n : 0;
    a->slice.n_steps = steps ? n : 0;
    for (int i = 0; i < n; i++) {
        a->slice.starts[i] = starts[i];
        a->slice.ends[i] = ends[i];
        a->slice.axes[i] = axes ? axes[i] : 0;
        a->slice.steps[i] = steps ? steps[i] : 0;
    }
}

/* Resolve a slice against input shape `in` as ONNX does (negative indices
 * count from the end, then clamp; steps may be negative). Writes per-dim
 * start and step and the output shape. Returns NULL on success or a
 * message for the shape function to report; an empty result is one unless
 * allow_empty (constant folding, where empty tensors exist). */
const char *ntp__slice_resolve(const ntp_attrs *a, const ntp_shape *in, bool allow_empty,
                               int64_t *start, int64_t *step, ntp_shape *out);

/* --- expand: the target shape in a->shape[0..n_shape), broadcast numpy-style
 * with the input's shape. */

/* --- resize ------------------------------------------------------------------
 * Output sizes in a->shape[0..n_shape) when given; otherwise per-dim scales
 * as exact rationals a->resize.scale_num[d] / a->resize.scale_den[d]
 * (a->resize.n_scales = rank), and the output size is floor(in * scale). The mode, coordinate
 * transformation, nearest rounding, cubic coefficient, exclude_outside and extrapolation value are
 * in a->resize (graph-impl.h). */
enum { NTP_RESIZE_NEAREST, NTP_RESIZE_LINEAR, NTP_RESIZE_CUBIC };
enum {
    NTP_RESIZE_HALF_PIXEL,
    NTP_RESIZE_PYTORCH_HALF_PIXEL,
    NTP_RESIZE_ALIGN_CORNERS,
    NTP_RESIZE_ASYMMETRIC,
    NTP_RESIZE_TF_HALF_PIXEL_FOR_NN
};
enum {
    NTP_RESIZE_ROUND_PREFER_FLOOR,
    NTP_RESIZE_ROUND_PREFER_CEIL,
    NTP_RESIZE_FLOOR,
    NTP_RESIZE_CEIL
};
static inline int ntp__resize_mode(const ntp_attrs *a)
{
    return a->resize.mode;
}
static inline int ntp__resize_coord(const ntp_attrs *a)
{
    return a->resize.coord;
}
static inline int ntp__resize_nearest(const ntp_attrs *a)
{
    return a->resize.nearest;
}
static inline double ntp__resize_cubic_a(const ntp_attrs *a)
{
    return a->resize.cubic_a;
}
static inline bool ntp__resize_exclude_outside(const ntp_attrs *a)
{
    return a->resize.exclude_outside;
}
static inline double ntp__resize_extrapolation(const ntp_attrs *a)
{
    return a->resize.extrapolation;
}

/* The scale of dim d of a resize from `in` to `out`: the given rational
 * when there is one, else out / in. */
double ntp__resize_scale(const ntp_attrs *a, const ntp_shape *in, const ntp_shape *out, int d);
/* Output shape of a resize of `in`; NULL or a message. */
const char *ntp__resize_shape(const ntp_attrs *a, const ntp_shape *in, ntp_shape *out);
/* The input coordinate that output coordinate x maps to along one dim of
 * `in` elements resized by `scale`. As ONNX's reference implementation, the
 * resized length in the formulas is scale * in, not the rounded size. */
double ntp__resize_coord_of(int coord, double x, double scale, int64_t in);

/* An ONNX (f32) scale as an exact rational num / den; false when it is not
 * positive and finite or does not fit. */
bool ntp__resize_scale_rational(double scale, int64_t *num, int64_t *den);

/* Names of the enums above as the markup and ONNX write them. */
extern const char *const ntp__resize_mode_names[3];
extern const char *const ntp__resize_coord_names[5];
extern const char *const ntp__resize_nearest_names[4];

#endif
