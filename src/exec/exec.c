/* Running a plan: weights and inputs, steps, conversions at backend
 * boundaries, and reading outputs back. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/ctx-impl.h"
#include "core/numeric-impl.h"
#include "exec-impl.h"
#include "graph/gen-impl.h"
#include "io/io-impl.h"
#include "io/pb-impl.h"

/* Convert n f32 values into storage type t (int8 with `scale`). */
static bool from_f32(void *dst, ntp_dtype t, const float *src, int64_t n, float scale)
{
    switch (t) {
    case NTP_DTYPE_F32:
        if (dst != src)
            memmove(dst, src, (size_t)n * sizeof(float));
        return true;
    case NTP_DTYPE_BF16:
        for (int64_t i = 0; i < n; i++)
            ((uint16_t *)dst)[i] = ntp__f32_to_bf16(src[i]);
        return true;
    case NTP_DTYPE_F16:
        for (int64_t i = 0; i < n; i++)
            ((uint16_t *)dst)[i] = ntp__f32_to_f16(src[i]);
        return true;
    case NTP_DTYPE_I8: ntp__quantize_i8_n(dst, src, n, scale); return true;
    /* Integer tensors are never stored from f32. */
    case NTP_DTYPE_U8:
    case NTP_DTYPE_I32:
    case NTP_DTYPE_I64:
    case NTP_DTYPE_COUNT: break;
    }
    return false;
}

/* Read n values of storage type t as f32. */
static bool to_f32(float *dst, ntp_dtype t, const void *src, int64_t n, float scale)
{
    switch (t) {
    case NTP_DTYPE_F32:
        if ((const void *)dst != src)
            memmove(dst, src, (size_t)n * sizeof(float));
        return true;
    case NTP_DTYPE_BF16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = ntp__bf16_to_f32(((const uint16_t *)src)[i]);
        return true;
    case NTP_DTYPE_F16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = ntp__f16_to_f32(((const uint16_t *)src)[i]);
        return true;
    case NTP_DTYPE_I8:
        for (int64_t i = 0; i < n; i++)
            dst[i] = ntp__dequantize_i8(((const int8_t *)src)[i], scale);
        return true;
    /* Integer tensors are never read as f32 here. */
    case NTP_DTYPE_U8:
    case NTP_DTYPE_I32:
    case NTP_DTYPE_I64:
    case NTP_DTYPE_COUNT: break;
    }
    return false;
}

/* Emulate reduced-precision weights on f32 storage: bf16 and f16 round each
 * value; int8 quantises matrices per output channel (axis 0) and leaves
 * vectors (biases, normalisation parameters) in f32, as int8 inference
 * engines do. */
static void round_weights(float *w, const ntp_tensor *t, ntp_dtype precision, float *scales)
{
    int64_t n = ntp_shape_numel(&t->shape);
    if (precision == NTP_DTYPE_BF16 || precision == NTP_DTYPE_F16) {
        ntp__emulate_storage(w, n, precision, NULL, 1, n);
    } else if (precision == NTP_DTYPE_I8 && t->shape.ndim >= 2) {
        int64_t ch = t->shape.dim[0], per = n / ch;
        ntp__i8_scales_per_channel(w, ch, per, scales);
        ntp__emulate_storage(w, n, NTP_DTYPE_I8, scales, ch, per);
    }
}

ntp_dtype ntp__exec_weight_dtype(const ntp_exec *x, int be, const ntp_tensor *t)
{
    ntp_dtype sd = ntp__be_storage_dtype(x->be[be], t->dtype);
    if (sd == NTP_DTYPE_F32 && x->weights_bf16)
        return NTP_DTYPE_BF16;
    if (sd == NTP_DTYPE_F32 && x->weights_i8 && t->shape.ndim >= 2)
        return NTP_DTYPE_I8; /* weight-only int8 (ntp_exec_opts.weights_i8) */
    return sd == NTP_DTYPE_I8 ? NTP_DTYPE_F32 : sd;
}

/* Node n's weights as f32 arrays (f32[k], malloc'd): the model's own data
 * or generated from the seed. */
static ntp_status weights_f32(ntp_ctx *ctx, const ntp_graph *g, const ntp_node *n, float **f32,
                              uint64_t seed)
{
    for (int k = 0; k < n->n_w; k++) {
        const ntp_tensor *t = &g->tensors[n->w[k]];
        int64_t cnt = ntp_shape_numel(&t->shape);
        if (!(f32[k] = malloc((size_t)cnt * sizeof(float) + 1)))
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY,
                              "out of memory for weight '%s' (%lld values)", t->name,
                              (long long)cnt);
    }
    ntp__gen_weights(g, n, f32, seed);
    for (int k = 0; k < n->n_w; k++) {
        const ntp_tensor *t = &g->tensors[n->w[k]];
        if (!t->data)
            continue;
        if (t->data_dtype != NTP_DTYPE_F32)
            return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                              "weight '%s' holds %s data; expected f32", t->name,
                              ntp_dtype_name(t->data_dtype));
        memcpy(f32[k], t->data, (size_t)ntp_shape_numel(&t->shape) * sizeof(float));
    }
    return NTP_STATUS_OK;
}

/* Store node n's f32 weights (taking the arrays it keeps) as backend be
 * wants them. A backend that stores f32 at a reduced precision gets values
 * already rounded through that precision; one that stores bf16 or f16 gets
 * them converted; int8 weights reach every backend as f32 (it quantises
 * them with its own per-channel scales). */
static ntp_status store_weights(ntp_ctx *ctx, ntp_exec *x, const ntp_node *n, int be, float **f32)
{
    const ntp_graph *g = x->g;
    int64_t max_ch = 1;
    for (int k = 0; k < n->n_w; k++)
        if (g->tensors[n->w[k]].shape.dim[0] > max_ch)
            max_ch = g->tensors[n->w[k]].shape.dim[0];
    float *scales = malloc((size_t)max_ch * sizeof(float));
    if (!scales)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    ntp_status st = NTP_STATUS_OK;
    for (int k = 0; k < n->n_w; k++) {
        const ntp_tensor *t = &g->tensors[n->w[k]];
        /* A weight an earlier layer shares (a tied LM head's table) is
         * stored once, as that layer had it. */
        if (x->wdata[n->w[k]])
            continue;
        ntp_dtype sd = ntp__exec_weight_dtype(x, be, t);
        int64_t cnt = ntp_shape_numel(&t->shape);
        if (sd == NTP_DTYPE_F32) {
            round_weights(f32[k], t, n->precision, scales);
            x->wdata[n->w[k]] = f32[k];
            f32[k] = NULL;
        } else if (sd == NTP_DTYPE_I8 && x->weights_i8) {
            /* Weight-only int8: per row, s = max|row| / 127 (a row of
             * zeros: 1), the values round-half-even(x / s), the scales
             * after them. */
            int64_t rows = t->shape.dim[0], per = cnt / (rows > 0 ? rows : 1);
            size_t off = ((size_t)cnt + 3) / 4 * 4;
            char *buf = malloc(off + (size_t)rows * sizeof(float) + 1);
            if (!(x->wdata[n->w[k]] = buf)) {
                st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory for weight '%s'",
                                t->name);
                break;
            }
            float *sc = (float *)(buf + off);
            for (int64_t r = 0; r < rows; r++) {
                float m = 0;
                for (int64_t j = 0; j < per; j++)
                    m = fmaxf(m, fabsf(f32[k][r * per + j]));
                sc[r] = m > 0 ? m / 127.0f : 1.0f;
                for (int64_t j = 0; j < per; j++)
                    ((int8_t *)buf)[r * per + j] = ntp__quantize_i8(f32[k][r * per + j], sc[r]);
            }
            x->weight_bytes += cnt + rows * (int64_t)sizeof(float);
            continue;
        } else {
            if (!(x->wdata[n->w[k]] = malloc((size_t)cnt * ntp_dtype_size(sd) + 1))) {
                st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory for weight '%s'",
                                t->name);
                break;
            }
            if (!from_f32(x->wdata[n->w[k]], sd, f32[k], cnt, 1.0f)) {
                st = ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                                "weight '%s': cannot store f32 data as %s", t->name,
                                ntp_dtype_name(sd));
                break;
            }
        }
        /* The weights at the precision the run stores them (as `analyze`
         * counts them): an int8 backend quantises matrices from the f32
         * copy the engine keeps, which is counted apart; vectors (biases,
         * normalisation parameters) stay f32 in int8 engines. */
        ntp_dtype held = ntp__be_storage_dtype(x->be[be], t->dtype);
        if (held == NTP_DTYPE_F32 && sd == NTP_DTYPE_BF16)
            held = NTP_DTYPE_BF16; /* ntp_exec_opts.weights_bf16 */
        if (held == NTP_DTYPE_I8 && t->shape.ndim < 2)
            held = NTP_DTYPE_F32;
        x->weight_bytes += cnt * (int64_t)ntp_dtype_size(held);
        if (held != sd)
            x->weight_copy_bytes += cnt * (int64_t)ntp_dtype_size(sd);
    }
    free(scales);
    return st;
}

ntp_status ntp__exec_load_weights(ntp_ctx *ctx, ntp_exec *x, const ntp_node *n, int be,
                                  uint64_t seed)
{
    float *f32[NTP_MAX_WEIGHTS] = {0};
    ntp_status st = weights_f32(ctx, x->g, n, f32, seed);
    if (st == NTP_STATUS_OK)
        st = store_weights(ctx, x, n, be, f32);
    for (int k = 0; k < n->n_w; k++)
        free(f32[k]);
    return st;
}

/* Fold batch norm `bn` (weights scale, bias, mean, var) into layer c's
 * weights W and bias b (F values, zero when c had none), per output
 * channel, in double; s holds F scratch values. */
static void fold_bn(const ntp_graph *g, const ntp_node *c, const ntp_node *bn, float *W, float *b,
                    float *const *bw, double *s)
{
    const ntp_shape *ws = &g->tensors[c->w[0]].shape;
    int64_t n = ntp_shape_numel(ws);
    int64_t F = ntp_shape_numel(&g->tensors[bn->w[0]].shape);
    for (int64_t f = 0; f < F; f++) {
        s[f] = (double)bw[0][f] / sqrt((double)bw[3][f] + bn->a.epsilon);
        b[f] = (float)(((double)b[f] - (double)bw[2][f]) * s[f] + (double)bw[1][f]);
    }
    if (c->op == NTP_OP_DECONV) {
        /* W [C, F/g, k...]: output channel f = group * F/g + o. */
        int64_t C = ws->dim[0], og = ws->dim[1], G = c->a.groups > 0 ? c->a.groups : 1;
        int64_t ig = C / G, K = n / (C * og);
        for (int64_t ci = 0; ci < C; ci++)
            for (int64_t o = 0; o < og; o++) {
                double sf = s[(ci / ig) * og + o];
                float *p = W + (ci * og + o) * K;
                for (int64_t q = 0; q < K; q++)
                    p[q] = (float)((double)p[q] * sf);
            }
    } else {
        /* conv W [F, C/g, k...] and fc W [F, in]: one row per channel. */
        int64_t per = n / F;
        for (int64_t f = 0; f < F; f++)
            for (int64_t q = 0; q < per; q++)
                W[f * per + q] = (float)((double)W[f * per + q] * s[f]);
    }
}

ntp_status ntp__exec_load_folded(ntp_ctx *ctx, ntp_exec *x, int pos, int be, uint64_t seed)
{
    const ntp_graph *src = x->src_g;
    const ntp_node *c = &src->nodes[src->order[pos]], *bn = &src->nodes[src->order[x->fold[pos]]];
    /* The rewritten layer: the same weights, with a bias. */
    const ntp_node *nc = &x->g->nodes[x->g->order[pos]];
    float *cw[NTP_MAX_WEIGHTS] = {0}, *bw[NTP_MAX_WEIGHTS] = {0};
    int64_t F = ntp_shape_numel(&src->tensors[bn->w[0]].shape);
    double *s = malloc((size_t)F * sizeof *s + 1);
    ntp_status st = s ? weights_f32(ctx, src, c, cw, seed)
                      : ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    if (st == NTP_STATUS_OK)
        st = weights_f32(ctx, src, bn, bw, seed);
    if (st == NTP_STATUS_OK && c->n_w < 2 && !(cw[1] = calloc((size_t)F + 1, sizeof(float))))
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    if (st == NTP_STATUS_OK) {
        fold_bn(src, c, bn, cw[0], cw[1], bw, s);
        st = store_weights(ctx, x, nc, be, cw);
    }
    free(s);
    for (int k = 0; k < NTP_MAX_WEIGHTS; k++) {
        free(cw[k]);
        free(bw[k]);
    }
    return st;
}

static void *tensor_data(const ntp_exec *x, int t)
{
    return x->tslot[t] >= 0 ? x->slots[x->tslot[t]].data : NULL;
}

/* "[NAME=]FILE": by name when NAME= is given, else by position. */
ntp_status ntp__exec_load_inputs(ntp_ctx *ctx, ntp_exec *x, const ntp_exec_opts *o)
{
    const ntp_graph *g = x->g;
    enum { MAX_IN = 256 };
    bool given[MAX_IN] = {false};
    if (g->n_inputs > MAX_IN)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED, "more than %d graph inputs", MAX_IN);
    for (int i = 0; i < o->n_inputs; i++) {
        const char *spec = o->inputs[i], *eq = strchr(spec, '='), *path = spec;
        int which = i;
        if (eq) {
            char name[256];
            size_t l = (size_t)(eq - spec);
            if (l >= sizeof name)
                l = sizeof name - 1;
            memcpy(name, spec, l);
            name[l] = '\0';
            which = -1;
            const char *names[MAX_IN];
            for (int j = 0; j < g->n_inputs; j++) {
                names[j] = g->tensors[g->inputs[j]].name;
                if (strcmp(names[j], name) == 0)
                    which = j;
            }
            if (which < 0) {
                const char *near = ntp__nearest(name, names, g->n_inputs);
                return ntp__opt_error(ctx, NTP_STATUS_UNKNOWN_NAME, "ntp_run_opts.inputs",
                                      "%s: the topology has no input '%s'%s%s%s", spec, name,
                                      near ? "; did you mean '" : "", near ? near : "",
                                      near ? "'?" : "");
            }
            path = eq + 1;
        }
        if (which >= g->n_inputs)
            return ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_run_opts.inputs",
                                  "%s: the topology has only %d input%s", spec, g->n_inputs,
                                  g->n_inputs == 1 ? "" : "s");
        if (given[which])
            return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "input '%s' is given twice",
                              g->tensors[g->inputs[which]].name);
        const ntp_tensor *t = &g->tensors[g->inputs[which]];
        ntp_npy a;
        /* ONNX TensorProto files (.pb, as ONNX's test data sets) or .npy. */
        size_t pl = strlen(path);
        ntp_status st = pl > 3 && strcmp(path + pl - 3, ".pb") == 0 ? ntp__pb_read(ctx, path, &a)
                                                                    : ntp__npy_read(ctx, path, &a);
        if (st)
            return st;
        char b1[128], b2[128];
        bool same = a.shape.ndim == t->shape.ndim && a.dtype == t->dtype;
        for (int d = 0; same && d < a.shape.ndim; d++)
            same = a.shape.dim[d] == t->shape.dim[d];
        if (!same) {
            st = ntp__error(ctx, NTP_STATUS_SHAPE_ERROR, "%s: holds %s %s; input '%s' is %s %s",
                            path, ntp_dtype_name(a.dtype), ntp_shape_str(&a.shape, b1, sizeof b1),
                            t->name, ntp_dtype_name(t->dtype),
                            ntp_shape_str(&t->shape, b2, sizeof b2));
            ntp__npy_free(&a);
            return st;
        }
        memcpy(tensor_data(x, g->inputs[which]), a.data, (size_t)a.nbytes);
        ntp__npy_free(&a);
        given[which] = true;
    }
    for (int j = 0; j < g->n_inputs; j++)
        if (!given[j]) {
            ntp_status st =
                ntp__gen_input(ctx, g, g->inputs[j], tensor_data(x, g->inputs[j]), o->seed);
            if (st)
                return st;
        }
    return NTP_STATUS_OK;
}

static ntp_status convert(ntp_ctx *ctx, ntp_exec *x, const ntp_step *st)
{
    const ntp_slot *s = &x->slots[st->src], *d = &x->slots[st->dst];
    int64_t n = ntp_shape_numel(&x->g->tensors[s->tensor].shape);
    float scale = x->scales ? x->scales[s->tensor] : 0.0f;
    if (s->dtype == NTP_DTYPE_F32) {
        if (d->dtype == NTP_DTYPE_I8 && !(scale > 0))
            scale = ntp__i8_scale(s->data, n);
        if (from_f32(d->data, d->dtype, s->data, n, scale))
            return NTP_STATUS_OK;
    } else if (d->dtype == NTP_DTYPE_F32) {
        if (to_f32(d->data, s->dtype, s->data, n, scale > 0 ? scale : 1.0f))
            return NTP_STATUS_OK;
    } else if (d->dtype != NTP_DTYPE_I8 && s->dtype != NTP_DTYPE_I8) {
        /* bf16 <-> f16 through f32, in chunks on the stack. */
        float buf[1024];
        for (int64_t i = 0; i < n; i += 1024) {
            int64_t m = n - i < 1024 ? n - i : 1024;
            size_t es = ntp_dtype_size(s->dtype), ed = ntp_dtype_size(d->dtype);
            if (!to_f32(buf, s->dtype, (const char *)s->data + i * (int64_t)es, m, 1.0f) ||
                !from_f32((char *)d->data + i * (int64_t)ed, d->dtype, buf, m, 1.0f))
                break;
            if (i + m == n)
                return NTP_STATUS_OK;
        }
    }
    return ntp__error(ctx, NTP_STATUS_UNSUPPORTED, "cannot convert '%s' from %s to %s",
                      x->g->tensors[s->tensor].name, ntp_dtype_name(s->dtype),
                      ntp_dtype_name(d->dtype));
}

/* Calibration: the largest magnitude each f32 output held. */
static void track_absmax(ntp_exec *x, const ntp_step *st)
{
    for (int i = 0; i < st->k.n_out; i++) {
        const ntp_slot *sl = &x->slots[st->out_slot[i]];
        if (sl->dtype != NTP_DTYPE_F32)
            continue;
        const float *v = sl->data;
        int64_t n = sl->bytes / 4;
        float m = x->absmax[sl->tensor];
        for (int64_t j = 0; j < n; j++)
            if (fabsf(v[j]) > m && isfinite(v[j]))
                m = fabsf(v[j]);
        x->absmax[sl->tensor] = m;
    }
}

ntp_status ntp__exec_sub(ntp_ctx *ctx, ntp_exec *x, int s, int sub)
{
    ntp_step *st = &x->steps[s];
    const ntp_backend_i *be = x->be[st->be];
    ntp_status rc = NTP_STATUS_OK;
    switch (st->kind) {
    case NTP_STEP_FUSED: return NTP_STATUS_OK;
    case NTP_STEP_CONVERT: return convert(ctx, x, st);
    case NTP_STEP_NODE:
        if (st->n_sub > 1)
            rc = ntp__be_execute_step(be, ctx, x->be_state[st->be], st->state, &st->k, sub);
        else
            rc = ntp__be_execute(be, ctx, x->be_state[st->be], st->state, &st->k);
        ntp__be_synchronize(be, x->be_state[st->be]);
        if (rc == NTP_STATUS_OK && x->absmax && sub == st->n_sub - 1)
            track_absmax(x, st);
        return rc;
    }
    return NTP_STATUS_INTERNAL;
}

ntp_status ntp__exec_steps(ntp_ctx *ctx, ntp_exec *x, int from, int to)
{
    for (int s = from; s <= to; s++) {
        ntp_step *st = &x->steps[s];
        ntp_status rc = NTP_STATUS_OK;
        if (st->kind == NTP_STEP_CONVERT) {
            rc = convert(ctx, x, st);
        } else if (st->kind == NTP_STEP_NODE) {
            rc = ntp__be_execute(x->be[st->be], ctx, x->be_state[st->be], st->state, &st->k);
            if (rc == NTP_STATUS_OK && x->absmax)
                track_absmax(x, st);
        }
        if (rc)
            return rc;
    }
    for (int b = 0; b < x->n_be; b++)
        ntp__be_synchronize(x->be[b], x->be_state[b]);
    return NTP_STATUS_OK;
}

bool ntp__exec_output(const ntp_exec *x, int i, void *dst, ntp_dtype *dtype)
{
    int t = x->g->outputs[i];
    const ntp_slot *sl = &x->slots[x->tslot[t]];
    int64_t n = ntp_shape_numel(&x->g->tensors[t].shape);
    if (sl->dtype == NTP_DTYPE_I32 || sl->dtype == NTP_DTYPE_I64 || sl->dtype == NTP_DTYPE_U8) {
        memcpy(dst, sl->data, (size_t)n * ntp_dtype_size(sl->dtype));
        *dtype = sl->dtype;
        return true;
    }
    *dtype = NTP_DTYPE_F32;
    float scale = x->scales && x->scales[t] > 0 ? x->scales[t] : 1.0f;
    return to_f32(dst, sl->dtype, sl->data, n, scale);
}

ntp_status ntp__exec_save_outputs(ntp_ctx *ctx, const ntp_exec *x, const char *dir)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: %s", dir, strerror(errno));
    const ntp_graph *g = x->g;
    for (int i = 0; i < g->n_outputs; i++) {
        const ntp_tensor *t = &g->tensors[g->outputs[i]];
        int64_t n = ntp_shape_numel(&t->shape);
        void *buf = malloc((size_t)n * 8 + 1);
        if (!buf)
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        ntp_dtype dt;
        if (!ntp__exec_output(x, i, buf, &dt)) {
            free(buf);
            return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                              "output '%s' is stored as %s: cannot save it", t->name,
                              ntp_dtype_name(x->slots[x->tslot[g->outputs[i]]].dtype));
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/output_%d.npy", dir, i);
        ntp_status st = ntp__npy_write(ctx, path, dt, &t->shape, buf);
        free(buf);
        if (st)
            return st;
    }
    return NTP_STATUS_OK;
}

const char *ntp__exec_fuse_note(const ntp_exec *x, int s)
{
    const ntp_step *st = &x->steps[s];
    if (st->kind != NTP_STEP_NODE)
        return NULL;
    return ntp__be_fuse_note(x->be[st->be], x->be_state[st->be], st->state);
}

const char *ntp__exec_src_layout(const ntp_exec *x, int s)
{
    const ntp_step *st = &x->steps[s];
    if (st->kind != NTP_STEP_NODE)
        return NULL;
    return ntp__be_src_layout(x->be[st->be], x->be_state[st->be], st->state);
}

const char *ntp__exec_impl(const ntp_exec *x, int s)
{
    const ntp_step *st = &x->steps[s];
    if (st->kind != NTP_STEP_NODE)
        return x->be[st->be]->name;
    return ntp__be_impl_name(x->be[st->be], x->be_state[st->be], st->state);
}
