/* Constant folding: ONNX nodes evaluated at load time when their inputs
 * are constants (initializers, Constant nodes, values folded before) or,
 * for Shape and Size, when the input's shape is known.
 *
 * This is what turns an exported model's shape computations (Shape ->
 * Gather -> Unsqueeze -> Concat -> Reshape) into the static shapes the IR
 * needs. The evaluator is small: integer values are computed in int64,
 * floating ones in double and stored as f32, with numpy's broadcasting. Ops
 * that ntprof also runs (Add, Reshape, Transpose, ...) are folded only when
 * every input is a true constant; a value given for a graph input (a bound
 * test input) does not make a node foldable, so the layers that read it
 * still run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "graph/op-onnx-impl.h"
#include "onnx-impl.h"

/* Elements are walked with up to this many elements in one constant; bigger
 * folds are refused rather than allocated (a shape computation never comes
 * near it). */
#define FOLD_MAX_ELEMENTS ((int64_t)1 << 28)

typedef ntp_onnx_tensor tens;

static const char *const foldable[] = {
    "Constant",
    "Identity",
    "Shape",
    "Size",
    "Cast",
    "CastLike",
    "Reshape",
    "Flatten",
    "Squeeze",
    "Unsqueeze",
    "Transpose",
    "Concat",
    "Slice",
    "Gather",
    "Expand",
    "Tile",
    "Range",
    "ConstantOfShape",
    "Split",
    "Where",
    "Equal",
    "Less",
    "Greater",
    "LessOrEqual",
    "GreaterOrEqual",
    "Not",
    "And",
    "Or",
    "Xor",
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Mod",
    "Pow",
    "Neg",
    "Abs",
    "Sqrt",
    "Exp",
    "Log",
    "Reciprocal",
    "Floor",
    "Ceil",
    "Sign",
    "Min",
    "Max",
    "Sum",
    "Mean",
    "ReduceProd",
    "ReduceSum",
    "ReduceMax",
    "ReduceMin",
    "ReduceMean",
    "Dropout",
    "Relu",
    "Sigmoid",
    "Tanh",
    "Erf",
    "Clip",
    "Trilu",
};

bool ntp__onnx_foldable(const char *op_type)
{
    for (size_t i = 0; i < sizeof foldable / sizeof foldable[0]; i++)
        if (strcmp(foldable[i], op_type) == 0)
            return true;
    return false;
}

static ntp_status oom(ntp_onnx_importer *x)
{
    return ntp__error(x->ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory", x->src);
}

static tens *new_tensor(ntp_onnx_importer *x, int32_t dt, const ntp_shape *s, ntp_status *st)
{
    int64_t n = ntp_shape_numel(s);
    if (n < 0 || n > FOLD_MAX_ELEMENTS) {
        *st = ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                            "a load-time result of %lld elements is "
                            "too large",
                            (long long)n);
        return NULL;
    }
    /* The memory budget bounds what folding may allocate, as it bounds the
     * graph (ntp_load_opts.max_memory). */
    if (x->opts->max_memory > 0 && n * (int64_t)sizeof(int64_t) > x->opts->max_memory) {
        *st = ntp__onnx_err(x, NTP_STATUS_MEMORY_BUDGET,
                            "a load-time result of %lld elements "
                            "exceeds the memory budget of %lld bytes",
                            (long long)n, (long long)x->opts->max_memory);
        return NULL;
    }
    tens *t = ntp__onnx_tensor_new(dt, s);
    if (!t)
        *st = oom(x);
    return t;
}

static void put(tens *t, int64_t k, double v)
{
    if (t->f)
        t->f[k] = (float)v;
    else if (t->dtype == NTP_ONNX_BOOL)
        t->i[k] = v != 0.0;
    else
        t->i[k] = isnan(v) ? 0 : v >= 0x1p63 ? INT64_MAX : v <= -0x1p63 ? INT64_MIN : (int64_t)v;
}

/* A copy of c with another shape (same element count). */
static tens *copy_as(ntp_onnx_importer *x, const tens *c, const ntp_shape *s, ntp_status *st)
{
    tens *t = new_tensor(x, c->dtype, s, st);
    if (!t)
        return NULL;
    if (c->f)
        memcpy(t->f, c->f, (size_t)c->n * sizeof *t->f);
    else
        memcpy(t->i, c->i, (size_t)c->n * sizeof *t->i);
    return t;
}

/* Row-major strides; broadcast strides of s read at index shape y. */
static void strides_of(const ntp_shape *s, int64_t *st)
{
    int64_t v = 1;
    for (int d = s->ndim - 1; d >= 0; d--) {
        st[d] = v;
        v *= s->dim[d];
    }
}

static bool broadcast(const ntp_shape *a, const ntp_shape *b, ntp_shape *out)
{
    int r = a->ndim > b->ndim ? a->ndim : b->ndim;
    out->ndim = r;
    for (int d = 0; d < r; d++) {
        int da = d - (r - a->ndim), db = d - (r - b->ndim);
        int64_t x = da >= 0 ? a->dim[da] : 1, y = db >= 0 ? b->dim[db] : 1;
        if (x != y && x != 1 && y != 1)
            return false;
        out->dim[d] = x == 1 ? y : x;
    }
    return true;
}

/* Offset into s of the element a broadcast read at flat output index j of y
 * takes. */
static int64_t bcast_off(const ntp_shape *s, const ntp_shape *y, int64_t j)
{
    int64_t off = 0, stride = 1;
    for (int d = y->ndim - 1; d >= 0; d--) {
        int64_t i = j % y->dim[d];
        j /= y->dim[d];
        int ds = d - (y->ndim - s->ndim);
        if (ds >= 0 && s->dim[ds] != 1)
            off += i * stride;
        if (ds >= 0)
            stride *= s->dim[ds];
    }
    return off;
}

/* Inputs as constants; k absent gives NULL. */
static ntp_status in(ntp_onnx_importer *x, int k, const tens **c)
{
    *c = NULL;
    if (!ntp__onnx_has_in(x, k))
        return NTP_STATUS_OK;
    return ntp__onnx_in_const(x, k, c);
}

/* A required input as a constant: missing is an error. */
static ntp_status need(ntp_onnx_importer *x, int k, const tens **c)
{
    ntp_status st = in(x, k, c);
    if (st == NTP_STATUS_OK && !*c)
        return ntp__onnx_err(x, NTP_STATUS_GRAPH_ERROR, "input %d is missing", k);
    return st;
}

/* Input k as a scalar, ONNX's 0-d or one-element tensor: an empty or
 * longer one has no value to read (fuzz_onnx found a Range with an empty
 * delta read past its end). Optional (in) where `optional`. */
static ntp_status scalar(ntp_onnx_importer *x, int k, const char *what, bool optional,
                         const tens **c)
{
    ntp_status st = optional ? in(x, k, c) : need(x, k, c);
    if (st == NTP_STATUS_OK && *c && (*c)->n != 1)
        return ntp__onnx_err(x, NTP_STATUS_INVALID_ARGUMENT, "%s must be a scalar, got %lld values",
                             what, (long long)(*c)->n);
    return st;
}

/* Integer list from a 0-d or 1-d constant. */
static ntp_status int_list(ntp_onnx_importer *x, const tens *c, const char *what, int64_t *v,
                           int max, int *n)
{
    *n = 0;
    if (c->shape.ndim > 1 || c->n > max)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                             "'%s' must be a list of at most %d "
                             "integers",
                             what, max);
    for (int64_t k = 0; k < c->n; k++) {
        if (c->f && (c->f[k] != c->f[k] || c->f[k] != (float)(int64_t)ntp__onnx_get_i(c, k)))
            return ntp__onnx_err(x, NTP_STATUS_PARSE_ERROR, "'%s' value %g is not an integer", what,
                                 (double)c->f[k]);
        v[k] = ntp__onnx_get_i(c, k);
    }
    *n = (int)c->n;
    return NTP_STATUS_OK;
}

/* --- element-wise ------------------------------------------------------------------------ */

static double unary(const char *op, double v)
{
    if (!strcmp(op, "Neg"))
        return -v;
    if (!strcmp(op, "Abs"))
        return fabs(v);
    if (!strcmp(op, "Sqrt"))
        return sqrt(v);
    if (!strcmp(op, "Exp"))
        return exp(v);
    if (!strcmp(op, "Log"))
        return log(v);
    if (!strcmp(op, "Reciprocal"))
        return 1.0 / v;
    if (!strcmp(op, "Floor"))
        return floor(v);
    if (!strcmp(op, "Ceil"))
        return ceil(v);
    if (!strcmp(op, "Sign"))
        return v > 0 ? 1.0 : v < 0 ? -1.0 : v;
    if (!strcmp(op, "Relu"))
        return v > 0 ? v : 0.0;
    if (!strcmp(op, "Sigmoid"))
        return 1.0 / (1.0 + exp(-v));
    if (!strcmp(op, "Tanh"))
        return tanh(v);
    if (!strcmp(op, "Erf"))
        return erf(v);
    if (!strcmp(op, "Not"))
        return v == 0.0;
    return v; /* Identity, Dropout */
}

static bool is_compare(const char *op)
{
    return !strcmp(op, "Equal") || !strcmp(op, "Less") || !strcmp(op, "Greater") ||
           !strcmp(op, "LessOrEqual") || !strcmp(op, "GreaterOrEqual") || !strcmp(op, "And") ||
           !strcmp(op, "Or") || !strcmp(op, "Xor");
}

/* b to the e (0 where it overflows). The bases whose powers never
 * overflow are answered at once: with 1, -1 or 0 a loop over e would run
 * up to 2^63 times (a folded Pow with such an exponent hung fuzz_onnx);
 * any other base overflows within 63 factors. */
static int64_t ipow(int64_t b, int64_t e)
{
    if (b == 1)
        return 1;
    if (b == -1)
        return e % 2 ? -1 : 1;
    if (b == 0)
        return e == 0 ? 1 : 0;
    if (e < 0)
        return 0;
    int64_t r = 1;
    while (e-- > 0)
        if (__builtin_mul_overflow(r, b, &r))
            return 0;
    return r;
}

/* a op b for integer types (C semantics except Mod, which follows the
 * divisor's sign unless fmod). */
static int64_t ibinary(const char *op, int64_t a, int64_t b, bool fmod_, bool *div0)
{
    int64_t r;
    if (!strcmp(op, "Add"))
        return __builtin_add_overflow(a, b, &r) ? 0 : r;
    if (!strcmp(op, "Sub"))
        return __builtin_sub_overflow(a, b, &r) ? 0 : r;
    if (!strcmp(op, "Mul") || !strcmp(op, "Sum"))
        return __builtin_mul_overflow(a, b, &r) ? 0 : r;
    if (!strcmp(op, "Pow"))
        return ipow(a, b);
    if (!strcmp(op, "Min"))
        return a < b ? a : b;
    if (!strcmp(op, "Max"))
        return a > b ? a : b;
    if (b == 0 || (a == INT64_MIN && b == -1)) {
        *div0 = true;
        return 0;
    }
    if (!strcmp(op, "Div"))
        return a / b;
    r = a % b; /* Mod */
    if (!fmod_ && r != 0 && (r < 0) != (b < 0))
        r += b;
    return r;
}

static double fbinary(const char *op, double a, double b, bool fmod_)
{
    if (!strcmp(op, "Add") || !strcmp(op, "Sum") || !strcmp(op, "Mean"))
        return a + b;
    if (!strcmp(op, "Sub"))
        return a - b;
    if (!strcmp(op, "Mul"))
        return a * b;
    if (!strcmp(op, "Div"))
        return a / b;
    if (!strcmp(op, "Pow"))
        return pow(a, b);
    if (!strcmp(op, "Min"))
        return isnan(a) || a <= b ? a : b;
    if (!strcmp(op, "Max"))
        return isnan(a) || a >= b ? a : b;
    if (!strcmp(op, "Mod")) {
        double r = fmod(a, b);
        if (!fmod_ && r != 0 && (r < 0) != (b < 0))
            r += b;
        return r;
    }
    if (!strcmp(op, "Equal"))
        return a == b;
    if (!strcmp(op, "Less"))
        return a < b;
    if (!strcmp(op, "Greater"))
        return a > b;
    if (!strcmp(op, "LessOrEqual"))
        return a <= b;
    if (!strcmp(op, "GreaterOrEqual"))
        return a >= b;
    if (!strcmp(op, "And"))
        return a != 0 && b != 0;
    if (!strcmp(op, "Or"))
        return a != 0 || b != 0;
    if (!strcmp(op, "Xor"))
        return (a != 0) != (b != 0);
    return NAN;
}

/* Broadcasting binary ops, folded left over 1..n inputs (Min, Max, Sum,
 * Mean are variadic). */
static ntp_status fold_binary(ntp_onnx_importer *x, const char *op)
{
    const tens *acc_in;
    ntp_status st = in(x, 0, &acc_in);
    if (st || !acc_in)
        return st ? st : ntp__onnx_err(x, NTP_STATUS_GRAPH_ERROR, "needs inputs");
    tens *acc = copy_as(x, acc_in, &acc_in->shape, &st);
    if (!acc)
        return st;
    bool compare = is_compare(op), fmod_ = ntp__onnx_attr_i(x, "fmod", 0) != 0;
    int n_in = (int)x->np->n_input;
    for (int k = 1; k < n_in; k++) {
        const tens *b;
        if ((st = in(x, k, &b)) || !b)
            break;
        ntp_shape ys;
        if (!broadcast(&acc->shape, &b->shape, &ys)) {
            st = ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "inputs do not broadcast");
            break;
        }
        bool integer = !acc->f && !b->f;
        tens *y = new_tensor(x, compare ? NTP_ONNX_BOOL : acc->dtype, &ys, &st);
        if (!y)
            break;
        bool div0 = false;
        for (int64_t j = 0; j < y->n; j++) {
            int64_t oa = bcast_off(&acc->shape, &ys, j), ob = bcast_off(&b->shape, &ys, j);
            if (integer && !compare)
                y->i[j] = ibinary(op, acc->i[oa], b->i[ob], fmod_, &div0);
            else
                put(y, j, fbinary(op, ntp__onnx_get_f(acc, oa), ntp__onnx_get_f(b, ob), fmod_));
        }
        ntp__onnx_tensor_free(acc);
        acc = y;
        if (div0) {
            st = ntp__onnx_err(x, NTP_STATUS_INVALID_ARGUMENT, "integer division by zero");
            break;
        }
    }
    if (st == NTP_STATUS_OK && !strcmp(op, "Mean") && acc->f)
        for (int64_t j = 0; j < acc->n; j++)
            acc->f[j] = (float)((double)acc->f[j] / n_in);
    if (st) {
        ntp__onnx_tensor_free(acc);
        return st;
    }
    return ntp__onnx_out_const(x, 0, acc);
}

/* -v as ONNX runtimes compute it, in two's complement: -INT64_MIN is
 * INT64_MIN (numpy's answer), not undefined behaviour. */
static int64_t wrap_neg(int64_t v)
{
    uint64_t u = 0 - (uint64_t)v;
    int64_t r;
    memcpy(&r, &u, sizeof r);
    return r;
}

static ntp_status fold_unary(ntp_onnx_importer *x, const char *op)
{
    const tens *a;
    ntp_status st = need(x, 0, &a);
    if (st)
        return st;
    tens *y = new_tensor(x, !strcmp(op, "Not") ? NTP_ONNX_BOOL : a->dtype, &a->shape, &st);
    if (!y)
        return st;
    for (int64_t j = 0; j < a->n; j++) {
        if (a->i && (!strcmp(op, "Neg") || !strcmp(op, "Abs") || !strcmp(op, "Identity") ||
                     !strcmp(op, "Dropout")))
            y->i[j] = !strcmp(op, "Neg") || (!strcmp(op, "Abs") && a->i[j] < 0) ? wrap_neg(a->i[j])
                                                                                : a->i[j];
        else
            put(y, j, unary(op, ntp__onnx_get_f(a, j)));
    }
    return ntp__onnx_out_const(x, 0, y);
}

static ntp_status fold_clip(ntp_onnx_importer *x)
{
    const tens *a, *lo = NULL, *hi = NULL;
    ntp_status st;
    if ((st = need(x, 0, &a)) || (st = scalar(x, 1, "min", true, &lo)) ||
        (st = scalar(x, 2, "max", true, &hi)))
        return st;
    double l = lo ? ntp__onnx_get_f(lo, 0) : ntp__onnx_attr_f(x, "min", -INFINITY);
    double h = hi ? ntp__onnx_get_f(hi, 0) : ntp__onnx_attr_f(x, "max", INFINITY);
    tens *y = new_tensor(x, a->dtype, &a->shape, &st);
    if (!y)
        return st;
    for (int64_t j = 0; j < a->n; j++) {
        double v = ntp__onnx_get_f(a, j);
        put(y, j, v < l ? l : v > h ? h : v);
    }
    return ntp__onnx_out_const(x, 0, y);
}

static ntp_status fold_where(ntp_onnx_importer *x)
{
    const tens *c, *a, *b;
    ntp_status st;
    if ((st = need(x, 0, &c)) || (st = need(x, 1, &a)) || (st = need(x, 2, &b)))
        return st;
    ntp_shape s1, ys;
    if (!broadcast(&c->shape, &a->shape, &s1) || !broadcast(&s1, &b->shape, &ys))
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "inputs do not broadcast");
    tens *y = new_tensor(x, a->dtype, &ys, &st);
    if (!y)
        return st;
    for (int64_t j = 0; j < y->n; j++) {
        bool t = ntp__onnx_get_f(c, bcast_off(&c->shape, &ys, j)) != 0;
        const tens *s = t ? a : b;
        int64_t o = bcast_off(&s->shape, &ys, j);
        if (y->i && s->i)
            y->i[j] = s->i[o];
        else
            put(y, j, ntp__onnx_get_f(s, o));
    }
    return ntp__onnx_out_const(x, 0, y);
}

static ntp_status fold_cast(ntp_onnx_importer *x, int32_t to)
{
    const tens *a;
    ntp_status st = need(x, 0, &a);
    if (st)
        return st;
    if (ntp__onnx_dtype_size(to) == 0)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "cast to %s", ntp__onnx_dtype_name(to));
    tens *y = new_tensor(x, to, &a->shape, &st);
    if (!y)
        return st;
    for (int64_t j = 0; j < a->n; j++) {
        if (y->i && a->i)
            y->i[j] = to == NTP_ONNX_BOOL ? a->i[j] != 0 : a->i[j];
        else
            put(y, j, ntp__onnx_get_f(a, j)); /* float to int truncates, as numpy */
    }
    return ntp__onnx_out_const(x, 0, y);
}

/* --- shapes --------------------------------------------------------------------------------- */

static ntp_status fold_shape(ntp_onnx_importer *x, bool size)
{
    ntp_shape s = ntp__onnx_in_shape(x, 0);
    ntp_status st;
    if (size) {
        ntp_shape one = {0};
        tens *y = new_tensor(x, NTP_ONNX_INT64, &one, &st);
        if (!y)
            return st;
        y->i[0] = ntp_shape_numel(&s);
        return ntp__onnx_out_const(x, 0, y);
    }
    int64_t r = s.ndim, start = ntp__onnx_attr_i(x, "start", 0),
            end = ntp__onnx_attr_i(x, "end", r);
    if (start < 0)
        start += r;
    if (end < 0)
        end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    ntp_shape ys = {1, {end > start ? end - start : 0}};
    tens *y = new_tensor(x, NTP_ONNX_INT64, &ys, &st);
    if (!y)
        return st;
    for (int64_t d = start; d < end; d++)
        y->i[d - start] = s.dim[d];
    return ntp__onnx_out_const(x, 0, y);
}

/* Reshape, Flatten, Squeeze, Unsqueeze: only the shape changes. */
static ntp_status fold_reshape_like(ntp_onnx_importer *x, const char *op)
{
    const tens *a;
    ntp_status st = need(x, 0, &a);
    if (st)
        return st;
    const ntp_shape *s = &a->shape;
    ntp_shape ys = {0};
    int64_t v[NTP_MAX_DIMS];
    int n = 0;
    if (!strcmp(op, "Reshape")) {
        const tens *sh;
        if ((st = in(x, 1, &sh)))
            return st;
        if (sh) {
            if ((st = int_list(x, sh, "shape", v, NTP_MAX_DIMS, &n)))
                return st;
        } else if ((n = ntp__onnx_attr_ints(x, "shape", v, NTP_MAX_DIMS)) < 0) {
            return ntp_ctx_status(x->ctx);
        }
        bool allowzero = ntp__onnx_attr_i(x, "allowzero", 0) != 0;
        int infer = -1;
        int64_t known = 1;
        ys.ndim = n;
        for (int d = 0; d < n; d++) {
            ys.dim[d] = v[d];
            if (v[d] == 0 && !allowzero) {
                if (d >= s->ndim)
                    return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR,
                                         "shape entry %d copies a "
                                         "dim the input lacks",
                                         d);
                ys.dim[d] = s->dim[d];
            }
            if (ys.dim[d] == -1) {
                if (infer >= 0)
                    return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "shape has two -1 entries");
                infer = d;
            } else if (ys.dim[d] < 0 || !ntp__mul_ok(known, ys.dim[d], &known)) {
                return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "bad shape entry %lld",
                                     (long long)ys.dim[d]);
            }
        }
        if (infer >= 0)
            ys.dim[infer] = known ? a->n / known : 0;
    } else if (!strcmp(op, "Flatten")) {
        int64_t axis = ntp__onnx_attr_i(x, "axis", 1);
        if (axis < 0)
            axis += s->ndim;
        if (axis < 0 || axis > s->ndim)
            return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "axis out of range");
        ys.ndim = 2;
        ys.dim[0] = ys.dim[1] = 1;
        for (int d = 0; d < s->ndim; d++)
            ys.dim[d < axis ? 0 : 1] *= s->dim[d];
    } else {
        bool unsq = !strcmp(op, "Unsqueeze");
        const tens *ax;
        if ((st = in(x, 1, &ax)))
            return st;
        if (ax) {
            if ((st = int_list(x, ax, "axes", v, NTP_MAX_DIMS, &n)))
                return st;
        } else if ((n = ntp__onnx_attr_ints(x, "axes", v, NTP_MAX_DIMS)) < 0) {
            return ntp_ctx_status(x->ctx);
        }
        int r = unsq ? s->ndim + n : s->ndim;
        if (r > NTP_MAX_DIMS)
            return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "more than %d dims", NTP_MAX_DIMS);
        bool mark[NTP_MAX_DIMS] = {false};
        for (int i = 0; i < n; i++) {
            int64_t a2;
            if (!ntp__onnx_axis(v[i], r, &a2) || mark[a2])
                return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR,
                                     "axis %lld is out of range or "
                                     "repeated",
                                     (long long)v[i]);
            mark[a2] = true;
        }
        for (int d = 0, j = 0; d < r; d++) {
            if (unsq) {
                ys.dim[ys.ndim++] = mark[d] ? 1 : s->dim[j++];
            } else if (n == 0 ? s->dim[d] != 1 : !mark[d]) {
                ys.dim[ys.ndim++] = s->dim[d];
            } else if (s->dim[d] != 1) {
                return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR,
                                     "cannot squeeze dim %d of size "
                                     "%lld",
                                     d, (long long)s->dim[d]);
            }
        }
    }
    if (ntp_shape_numel(&ys) != a->n)
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "%lld elements cannot take the new shape",
                             (long long)a->n);
    tens *y = copy_as(x, a, &ys, &st);
    return y ? ntp__onnx_out_const(x, 0, y) : st;
}

/* y[index over out shape] = a[offset] for a gather described by strides. */
static ntp_status gather_copy(ntp_onnx_importer *x, const tens *a, const ntp_shape *ys,
                              const int64_t *base_of_row, int64_t inner, int64_t rows)
{
    ntp_status st;
    tens *y = new_tensor(x, a->dtype, ys, &st);
    if (!y)
        return st;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < inner; k++) {
            if (y->f)
                y->f[r * inner + k] = a->f[base_of_row[r] + k];
            else
                y->i[r * inner + k] = a->i[base_of_row[r] + k];
        }
    return ntp__onnx_out_const(x, 0, y);
}

static ntp_status fold_transpose(ntp_onnx_importer *x)
{
    const tens *a;
    ntp_status st = need(x, 0, &a);
    if (st)
        return st;
    int r = a->shape.ndim;
    int64_t perm[NTP_MAX_DIMS];
    int n = ntp__onnx_attr_ints(x, "perm", perm, NTP_MAX_DIMS);
    if (n < 0)
        return ntp_ctx_status(x->ctx);
    if (n == 0)
        for (int d = 0; d < r; d++)
            perm[d] = r - 1 - d;
    else if (n != r)
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "perm has %d entries for rank %d", n, r);
    ntp_shape ys = {r, {0}};
    int64_t ist[NTP_MAX_DIMS];
    strides_of(&a->shape, ist);
    bool seen[NTP_MAX_DIMS] = {false};
    for (int d = 0; d < r; d++) {
        if (perm[d] < 0 || perm[d] >= r || seen[perm[d]])
            return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "perm is not a permutation");
        seen[perm[d]] = true;
        ys.dim[d] = a->shape.dim[perm[d]];
    }
    tens *y = new_tensor(x, a->dtype, &ys, &st);
    if (!y)
        return st;
    for (int64_t j = 0; j < y->n; j++) {
        int64_t rem = j, off = 0;
        for (int d = r - 1; d >= 0; d--) {
            off += (rem % ys.dim[d]) * ist[perm[d]];
            rem /= ys.dim[d];
        }
        if (y->f)
            y->f[j] = a->f[off];
        else
            y->i[j] = a->i[off];
    }
    return ntp__onnx_out_const(x, 0, y);
}

static ntp_status fold_concat(ntp_onnx_importer *x)
{
    const tens *a;
    ntp_status st = need(x, 0, &a);
    if (st || !a)
        return st ? st : ntp__onnx_err(x, NTP_STATUS_GRAPH_ERROR, "needs inputs");
    int64_t axis;
    if (!ntp__onnx_axis(ntp__onnx_attr_i(x, "axis", 0), a->shape.ndim, &axis))
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "axis out of range");
    ntp_shape ys = a->shape;
    ys.dim[axis] = 0;
    int n_in = (int)x->np->n_input;
    for (int k = 0; k < n_in; k++) {
        const tens *b;
        if ((st = in(x, k, &b)))
            return st;
        if (!b)
            continue;
        bool ok = b->shape.ndim == ys.ndim && (b->f != NULL) == (a->f != NULL);
        for (int d = 0; ok && d < ys.ndim; d++)
            ok = d == axis || b->shape.dim[d] == ys.dim[d];
        if (!ok)
            return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "inputs do not concatenate");
        ys.dim[axis] += b->shape.dim[axis];
    }
    tens *y = new_tensor(x, a->dtype, &ys, &st);
    if (!y)
        return st;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= ys.dim[d];
    for (int d = (int)axis + 1; d < ys.ndim; d++)
        inner *= ys.dim[d];
    int64_t at = 0;
    for (int k = 0; k < n_in; k++) {
        const tens *b;
        in(x, k, &b);
        if (!b)
            continue;
        int64_t row = b->shape.dim[axis] * inner, yrow = ys.dim[axis] * inner;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t q = 0; q < row; q++) {
                if (y->f)
                    y->f[o * yrow + at + q] = b->f[o * row + q];
                else
                    y->i[o * yrow + at + q] = b->i[o * row + q];
            }
        at += row;
    }
    return ntp__onnx_out_const(x, 0, y);
}

static ntp_status fold_gather(ntp_onnx_importer *x)
{
    const tens *a, *idx;
    ntp_status st;
    if ((st = need(x, 0, &a)) || (st = need(x, 1, &idx)))
        return st;
    int64_t axis;
    if (!ntp__onnx_axis(ntp__onnx_attr_i(x, "axis", 0), a->shape.ndim, &axis))
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "axis out of range");
    if (a->shape.ndim - 1 + idx->shape.ndim > NTP_MAX_DIMS)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "result has more than %d dims",
                             NTP_MAX_DIMS);
    ntp_shape ys = {0};
    for (int d = 0; d < axis; d++)
        ys.dim[ys.ndim++] = a->shape.dim[d];
    for (int d = 0; d < idx->shape.ndim; d++)
        ys.dim[ys.ndim++] = idx->shape.dim[d];
    for (int d = (int)axis + 1; d < a->shape.ndim; d++)
        ys.dim[ys.ndim++] = a->shape.dim[d];
    int64_t outer = 1, inner = 1, dim = a->shape.dim[axis];
    for (int d = 0; d < axis; d++)
        outer *= a->shape.dim[d];
    for (int d = (int)axis + 1; d < a->shape.ndim; d++)
        inner *= a->shape.dim[d];
    int64_t rows = outer * idx->n;
    if (rows > FOLD_MAX_ELEMENTS)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "too large a gather");
    int64_t *base = malloc((size_t)rows * sizeof *base + 1);
    if (!base)
        return oom(x);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < idx->n; k++) {
            int64_t i = ntp__onnx_get_i(idx, k);
            if (i < 0)
                i += dim;
            if (i < 0 || i >= dim) {
                free(base);
                return ntp__onnx_err(x, NTP_STATUS_INVALID_ARGUMENT,
                                     "index %lld is out of range for dim %lld",
                                     (long long)ntp__onnx_get_i(idx, k), (long long)dim);
            }
            base[o * idx->n + k] = (o * dim + i) * inner;
        }
    st = gather_copy(x, a, &ys, base, inner, rows);
    free(base);
    return st;
}

static ntp_status fold_slice(ntp_onnx_importer *x)
{
    const tens *a;
    ntp_status st = need(x, 0, &a);
    if (st)
        return st;
    ntp_attrs at;
    ntp__attrs_default(&at);
    int64_t starts[NTP_MAX_DIMS], ends[NTP_MAX_DIMS];
    int ns, ne;
    if (x->opset < 10) {
        if ((ns = ntp__onnx_attr_ints(x, "starts", starts, NTP_MAX_DIMS)) < 0 ||
            (ne = ntp__onnx_attr_ints(x, "ends", ends, NTP_MAX_DIMS)) < 0 ||
            (at.slice.n_axes = ntp__onnx_attr_ints(x, "axes", at.slice.axes, NTP_MAX_DIMS)) < 0)
            return ntp_ctx_status(x->ctx);
    } else {
        const tens *s, *e, *ax, *stp;
        if ((st = in(x, 1, &s)) || (st = in(x, 2, &e)) || (st = in(x, 3, &ax)) ||
            (st = in(x, 4, &stp)))
            return st;
        if (!s || !e)
            return ntp__onnx_err(x, NTP_STATUS_GRAPH_ERROR, "needs starts and ends");
        if ((st = int_list(x, s, "starts", starts, NTP_MAX_DIMS, &ns)) ||
            (st = int_list(x, e, "ends", ends, NTP_MAX_DIMS, &ne)) ||
            (ax && (st = int_list(x, ax, "axes", at.slice.axes, NTP_MAX_DIMS, &at.slice.n_axes))) ||
            (stp &&
             (st = int_list(x, stp, "steps", at.slice.steps, NTP_MAX_DIMS, &at.slice.n_steps))))
            return st;
    }
    if (ns != ne)
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "starts and ends differ in length");
    at.slice.n = ns;
    for (int i = 0; i < ns; i++) {
        at.slice.starts[i] = starts[i];
        at.slice.ends[i] = ends[i];
    }
    int64_t start[NTP_MAX_DIMS], step[NTP_MAX_DIMS], ist[NTP_MAX_DIMS];
    ntp_shape ys;
    const char *why = ntp__slice_resolve(&at, &a->shape, true, start, step, &ys);
    if (why)
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "%s", why);
    tens *y = new_tensor(x, a->dtype, &ys, &st);
    if (!y)
        return st;
    strides_of(&a->shape, ist);
    for (int64_t j = 0; j < y->n; j++) {
        int64_t rem = j, off = 0;
        for (int d = ys.ndim - 1; d >= 0; d--) {
            off += (start[d] + (rem % ys.dim[d]) * step[d]) * ist[d];
            rem /= ys.dim[d];
        }
        if (y->f)
            y->f[j] = a->f[off];
        else
            y->i[j] = a->i[off];
    }
    return ntp__onnx_out_const(x, 0, y);
}

/* Expand and Tile by walking the output and mapping back. */
static ntp_status fold_expand_tile(ntp_onnx_importer *x, bool tile)
{
    const tens *a, *b;
    ntp_status st;
    if ((st = need(x, 0, &a)) || (st = in(x, 1, &b)))
        return st;
    int64_t v[NTP_MAX_DIMS];
    int n;
    if (!b)
        return ntp__onnx_err(x, NTP_STATUS_GRAPH_ERROR, "needs its second input");
    if ((st = int_list(x, b, tile ? "repeats" : "shape", v, NTP_MAX_DIMS, &n)))
        return st;
    ntp_shape ys;
    if (tile) {
        if (n != a->shape.ndim)
            return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "repeats must have one value per dim");
        ys = a->shape;
        for (int d = 0; d < n; d++) {
            if (v[d] < 0 || !ntp__mul_ok(ys.dim[d], v[d], &ys.dim[d]))
                return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "bad repeats");
        }
    } else {
        ntp_shape t = {n, {0}};
        for (int d = 0; d < n; d++)
            t.dim[d] = v[d];
        if (!broadcast(&a->shape, &t, &ys))
            return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "input does not broadcast to shape");
    }
    tens *y = new_tensor(x, a->dtype, &ys, &st);
    if (!y)
        return st;
    int64_t ist[NTP_MAX_DIMS];
    strides_of(&a->shape, ist);
    for (int64_t j = 0; j < y->n; j++) {
        int64_t off = tile ? 0 : bcast_off(&a->shape, &ys, j);
        if (tile) {
            int64_t rem = j;
            for (int d = ys.ndim - 1; d >= 0; d--) {
                off += ((rem % ys.dim[d]) % a->shape.dim[d]) * ist[d];
                rem /= ys.dim[d];
            }
        }
        if (y->f)
            y->f[j] = a->f[off];
        else
            y->i[j] = a->i[off];
    }
    return ntp__onnx_out_const(x, 0, y);
}

static ntp_status fold_range(ntp_onnx_importer *x)
{
    const tens *s, *l, *d;
    ntp_status st;
    if ((st = scalar(x, 0, "start", false, &s)) || (st = scalar(x, 1, "limit", false, &l)) ||
        (st = scalar(x, 2, "delta", false, &d)))
        return st;
    double start = ntp__onnx_get_f(s, 0), limit = ntp__onnx_get_f(l, 0),
           delta = ntp__onnx_get_f(d, 0);
    if (delta == 0)
        return ntp__onnx_err(x, NTP_STATUS_INVALID_ARGUMENT, "delta is 0");
    double cnt = ceil((limit - start) / delta);
    ntp_shape ys = {1, {cnt > 0 ? (int64_t)fmin(cnt, (double)FOLD_MAX_ELEMENTS + 1) : 0}};
    tens *y = new_tensor(x, s->dtype, &ys, &st);
    if (!y)
        return st;
    for (int64_t j = 0; j < y->n; j++) {
        int64_t step;
        if (y->i && (__builtin_mul_overflow(j, ntp__onnx_get_i(d, 0), &step) ||
                     __builtin_add_overflow(ntp__onnx_get_i(s, 0), step, &y->i[j]))) {
            ntp__onnx_tensor_free(y);
            return ntp__onnx_err(x, NTP_STATUS_INVALID_ARGUMENT,
                                 "element %lld of the range is beyond int64", (long long)j);
        }
        if (!y->i)
            y->f[j] = (float)(start + (double)j * delta);
    }
    return ntp__onnx_out_const(x, 0, y);
}

/* Trilu: the lower (upper=0: j <= i + k) or upper (j >= i + k) triangle
 * of the last two dims, the rest zero (exporters' causal masks). */
static ntp_status fold_trilu(ntp_onnx_importer *x)
{
    const tens *a, *kt = NULL;
    ntp_status st;
    if ((st = need(x, 0, &a)) || (ntp__onnx_has_in(x, 1) && (st = need(x, 1, &kt))))
        return st;
    if (a->shape.ndim < 2)
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "the input has rank %d, below 2",
                             a->shape.ndim);
    int64_t k = kt && kt->n > 0 ? ntp__onnx_get_i(kt, 0) : 0;
    bool upper = ntp__onnx_attr_i(x, "upper", 1) != 0;
    int64_t R = a->shape.dim[a->shape.ndim - 2], C = a->shape.dim[a->shape.ndim - 1];
    tens *y = new_tensor(x, a->dtype, &a->shape, &st);
    if (!y)
        return st;
    for (int64_t j = 0; j < y->n; j++) {
        int64_t c = j % C, r = (j / C) % R;
        bool keep = upper ? c - r >= k : c - r <= k;
        if (y->i)
            y->i[j] = keep ? a->i[j] : 0;
        else
            y->f[j] = keep ? a->f[j] : 0.0f;
    }
    return ntp__onnx_out_const(x, 0, y);
}

static ntp_status fold_constant_of_shape(ntp_onnx_importer *x)
{
    const tens *s;
    ntp_status st = need(x, 0, &s);
    if (st)
        return st;
    int64_t v[NTP_MAX_DIMS];
    int n;
    if ((st = int_list(x, s, "shape", v, NTP_MAX_DIMS, &n)))
        return st;
    ntp_shape ys = {n, {0}};
    for (int d = 0; d < n; d++) {
        if (v[d] < 0)
            return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "negative dim");
        ys.dim[d] = v[d];
    }
    int32_t dt = NTP_ONNX_FLOAT;
    double val = 0.0;
    int64_t ival = 0;
    const Onnx__AttributeProto *a = ntp__onnx_attr(x, "value");
    if (a && a->t) {
        tens c;
        if ((st = ntp__onnx_tensor_decode(x->ctx, x->src, NULL, a->t, "attribute 'value'", false,
                                          &c)))
            return st;
        if (c.n != 1) {
            ntp__onnx_tensor_free_data(&c);
            return ntp__onnx_err(x, NTP_STATUS_INVALID_ARGUMENT, "'value' must hold one element");
        }
        dt = c.dtype;
        val = ntp__onnx_get_f(&c, 0);
        ival = ntp__onnx_get_i(&c, 0);
        ntp__onnx_tensor_free_data(&c);
    }
    tens *y = new_tensor(x, dt, &ys, &st);
    if (!y)
        return st;
    for (int64_t j = 0; j < y->n; j++) {
        if (y->i)
            y->i[j] = ival;
        else
            y->f[j] = (float)val;
    }
    return ntp__onnx_out_const(x, 0, y);
}

static ntp_status fold_split(ntp_onnx_importer *x)
{
    const tens *a, *sp = NULL;
    ntp_status st = need(x, 0, &a);
    if (st || (x->opset >= 13 && (st = in(x, 1, &sp))))
        return st;
    int64_t axis;
    if (!ntp__onnx_axis(ntp__onnx_attr_i(x, "axis", 0), a->shape.ndim, &axis))
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "axis out of range");
    int nout = (int)x->np->n_output;
    int64_t sizes[NTP_MAX_DIMS * 4];
    int n = 0;
    if (nout > (int)(sizeof sizes / sizeof sizes[0]))
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "too many outputs");
    if (sp) {
        if ((st = int_list(x, sp, "split", sizes, nout, &n)))
            return st;
    } else if ((n = ntp__onnx_attr_ints(x, "split", sizes, nout)) < 0) {
        return ntp_ctx_status(x->ctx);
    }
    int64_t dim = a->shape.dim[axis], at = 0;
    if (n == 0) {
        if (nout == 0 || dim % nout)
            return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "dim %lld does not split evenly",
                                 (long long)dim);
        for (n = 0; n < nout; n++)
            sizes[n] = dim / nout;
    }
    if (n != nout)
        return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "%d sizes for %d outputs", n, nout);
    for (int k = 0; k < n; k++) {
        ntp_attrs sa;
        ntp__attrs_default(&sa);
        if (sizes[k] < 0 || sizes[k] > dim - at)
            return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "bad split sizes");
        const int64_t start1 = at, end1 = at + sizes[k], axis1 = axis;
        ntp__slice_set(&sa, 1, &start1, &end1, &axis1, NULL);
        at += sizes[k];
        int64_t start[NTP_MAX_DIMS], step[NTP_MAX_DIMS], ist[NTP_MAX_DIMS];
        ntp_shape ys;
        if (sizes[k] < 0 || at > dim || ntp__slice_resolve(&sa, &a->shape, true, start, step, &ys))
            return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "bad split sizes");
        tens *y = new_tensor(x, a->dtype, &ys, &st);
        if (!y)
            return st;
        strides_of(&a->shape, ist);
        for (int64_t j = 0; j < y->n; j++) {
            int64_t rem = j, off = 0;
            for (int d = ys.ndim - 1; d >= 0; d--) {
                off += (start[d] + rem % ys.dim[d]) * ist[d];
                rem /= ys.dim[d];
            }
            if (y->f)
                y->f[j] = a->f[off];
            else
                y->i[j] = a->i[off];
        }
        if ((st = ntp__onnx_out_const(x, k, y)))
            return st;
    }
    return NTP_STATUS_OK;
}

static ntp_status fold_reduce(ntp_onnx_importer *x, const char *op)
{
    const tens *a, *ax = NULL;
    ntp_status st = need(x, 0, &a);
    if (st || (!strcmp(op, "ReduceSum") && x->opset >= 13 && (st = in(x, 1, &ax))))
        return st;
    int64_t v[NTP_MAX_DIMS];
    int n;
    if (ax) {
        if ((st = int_list(x, ax, "axes", v, NTP_MAX_DIMS, &n)))
            return st;
    } else if ((n = ntp__onnx_attr_ints(x, "axes", v, NTP_MAX_DIMS)) < 0) {
        return ntp_ctx_status(x->ctx);
    }
    bool keep = ntp__onnx_attr_i(x, "keepdims", 1) != 0, red[NTP_MAX_DIMS] = {false};
    int r = a->shape.ndim;
    if (n == 0 && ax && ntp__onnx_attr_i(x, "noop_with_empty_axes", 0)) {
        tens *y = copy_as(x, a, &a->shape, &st);
        return y ? ntp__onnx_out_const(x, 0, y) : st;
    }
    for (int i = 0; i < n; i++) {
        int64_t d;
        if (!ntp__onnx_axis(v[i], r, &d))
            return ntp__onnx_err(x, NTP_STATUS_SHAPE_ERROR, "axis out of range");
        red[d] = true;
    }
    ntp_shape ks = a->shape, ys = {0};
    for (int d = 0; d < r; d++) {
        if (n == 0 || red[d]) {
            red[d] = true;
            ks.dim[d] = 1;
            if (keep)
                ys.dim[ys.ndim++] = 1;
        } else {
            ys.dim[ys.ndim++] = a->shape.dim[d];
        }
    }
    tens *y = new_tensor(x, a->dtype, &ys, &st);
    if (!y)
        return st;
    double *acc = malloc((size_t)y->n * sizeof *acc + 1);
    int64_t *cnt = calloc((size_t)y->n + 1, sizeof *cnt);
    if (!acc || !cnt) {
        free(acc);
        free(cnt);
        ntp__onnx_tensor_free(y);
        return oom(x);
    }
    double init = !strcmp(op, "ReduceProd")  ? 1
                  : !strcmp(op, "ReduceMax") ? -INFINITY
                  : !strcmp(op, "ReduceMin") ? INFINITY
                                             : 0;
    for (int64_t j = 0; j < y->n; j++)
        acc[j] = init;
    for (int64_t j = 0; j < a->n; j++) {
        int64_t rem = j, o = 0, stride = 1;
        for (int d = r - 1; d >= 0; d--) {
            int64_t i = rem % a->shape.dim[d];
            rem /= a->shape.dim[d];
            if (!red[d]) {
                o += i * stride;
                stride *= ks.dim[d];
            }
        }
        double vv = ntp__onnx_get_f(a, j);
        acc[o] = !strcmp(op, "ReduceProd")  ? acc[o] * vv
                 : !strcmp(op, "ReduceMax") ? fmax(acc[o], vv)
                 : !strcmp(op, "ReduceMin") ? fmin(acc[o], vv)
                                            : acc[o] + vv;
        cnt[o]++;
    }
    for (int64_t j = 0; j < y->n; j++)
        put(y, j, !strcmp(op, "ReduceMean") && cnt[j] ? acc[j] / (double)cnt[j] : acc[j]);
    free(acc);
    free(cnt);
    return ntp__onnx_out_const(x, 0, y);
}

static ntp_status fold_constant(ntp_onnx_importer *x)
{
    ntp_status st;
    const Onnx__AttributeProto *a = x->np->n_attribute == 1 ? x->np->attribute[0] : NULL;
    if (!a || !a->name)
        return ntp__onnx_err(x, NTP_STATUS_PARSE_ERROR, "needs exactly one value attribute");
    tens *y = NULL;
    if (!strcmp(a->name, "value") && a->t) {
        if (!(y = calloc(1, sizeof *y)))
            return oom(x);
        char what[320];
        snprintf(what, sizeof what, "the value of Constant '%.256s'", x->node_name);
        if ((st = ntp__onnx_tensor_decode(x->ctx, x->src, x->base_dir, (Onnx__TensorProto *)a->t,
                                          what, true, y))) {
            free(y);
            return st;
        }
        return ntp__onnx_out_const(x, 0, y);
    }
    bool is_float = !strcmp(a->name, "value_float") || !strcmp(a->name, "value_floats");
    bool is_list = !strcmp(a->name, "value_floats") || !strcmp(a->name, "value_ints");
    if (!is_float && strcmp(a->name, "value_int") && strcmp(a->name, "value_ints"))
        return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "attribute '%s' is not supported", a->name);
    size_t n = is_list ? (is_float ? a->n_floats : a->n_ints) : 1;
    ntp_shape ys = {is_list ? 1 : 0, {(int64_t)n}};
    if (!(y = new_tensor(x, is_float ? NTP_ONNX_FLOAT : NTP_ONNX_INT64, &ys, &st)))
        return st;
    for (size_t k = 0; k < n; k++) {
        if (is_float)
            y->f[k] = is_list ? a->floats[k] : a->f;
        else
            y->i[k] = is_list ? a->ints[k] : a->i;
    }
    return ntp__onnx_out_const(x, 0, y);
}

ntp_status ntp__onnx_fold(ntp_onnx_importer *x)
{
    const char *op = x->np->op_type;
    /* A foldable op without a mapper on run-time values cannot be loaded.
     * Values given for graph inputs count as constants only where a later
     * layer needs a constant: a node computing a graph output from them
     * would only hide that ntprof cannot run it. */
    bool bound = false;
    for (size_t k = 0; k < x->np->n_input; k++) {
        if (!ntp__onnx_has_in(x, (int)k))
            continue;
        ntp_onnx_value *v = ntp__onnx_in_value(x, (int)k);
        bool shape_only = (!strcmp(op, "Shape") || !strcmp(op, "Size")) && k == 0;
        if (shape_only)
            continue;
        if (!v->init && !v->c)
            return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                                 "computes on run-time values ('%s'): ntprof evaluates this op at "
                                 "load time only",
                                 v->name);
        bound = bound || (v->bound && !v->init);
    }
    for (size_t k = 0; bound && k < x->np->n_output; k++)
        if (ntp__onnx_out_is_graph_output(x, (int)k))
            return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED,
                                 "computes graph output '%s' from graph inputs: ntprof evaluates "
                                 "this op at load time only",
                                 x->np->output[k]);
    if (!strcmp(op, "Constant"))
        return fold_constant(x);
    if (!strcmp(op, "Shape") || !strcmp(op, "Size"))
        return fold_shape(x, !strcmp(op, "Size"));
    if (!strcmp(op, "Cast"))
        return fold_cast(x, (int32_t)ntp__onnx_attr_i(x, "to", NTP_ONNX_UNDEFINED));
    if (!strcmp(op, "CastLike")) {
        ntp_onnx_value *t = ntp__onnx_in_value(x, 1);
        ntp_status st = t ? ntp__onnx_value_const(x, t) : NTP_STATUS_OK;
        return st ? st : fold_cast(x, t && t->c ? t->c->dtype : t ? t->dtype : NTP_ONNX_UNDEFINED);
    }
    if (!strcmp(op, "Reshape") || !strcmp(op, "Flatten") || !strcmp(op, "Squeeze") ||
        !strcmp(op, "Unsqueeze"))
        return fold_reshape_like(x, op);
    if (!strcmp(op, "Transpose"))
        return fold_transpose(x);
    if (!strcmp(op, "Concat"))
        return fold_concat(x);
    if (!strcmp(op, "Slice"))
        return fold_slice(x);
    if (!strcmp(op, "Gather"))
        return fold_gather(x);
    if (!strcmp(op, "Expand") || !strcmp(op, "Tile"))
        return fold_expand_tile(x, !strcmp(op, "Tile"));
    if (!strcmp(op, "Range"))
        return fold_range(x);
    if (!strcmp(op, "ConstantOfShape"))
        return fold_constant_of_shape(x);
    if (!strcmp(op, "Split"))
        return fold_split(x);
    if (!strcmp(op, "Where"))
        return fold_where(x);
    if (!strcmp(op, "Clip"))
        return fold_clip(x);
    if (!strcmp(op, "Trilu"))
        return fold_trilu(x);
    if (!strncmp(op, "Reduce", 6))
        return fold_reduce(x, op);
    if (is_compare(op) || !strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul") ||
        !strcmp(op, "Div") || !strcmp(op, "Mod") || !strcmp(op, "Pow") || !strcmp(op, "Min") ||
        !strcmp(op, "Max") || !strcmp(op, "Sum") || !strcmp(op, "Mean"))
        return fold_binary(x, op);
    if (ntp__onnx_foldable(op))
        return fold_unary(x, op);
    return ntp__onnx_err(x, NTP_STATUS_UNSUPPORTED, "no mapping for this op");
}
