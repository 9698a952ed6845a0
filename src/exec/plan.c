/* Execution plans: storage, weights, inputs, per-layer kernel arguments and
 * prepare. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/ctx-impl.h"
#include "core/numeric-impl.h"
#include "exec-impl.h"
#include "io/io-impl.h"
#include "measure/measure-impl.h"

static bool is_integer(ntp_dtype t)
{
    return t == NTP_DTYPE_I32 || t == NTP_DTYPE_I64 || t == NTP_DTYPE_U8;
}

ntp_dtype ntp__exec_storage(const ntp_exec *x, const ntp_tensor *t)
{
    /* Graph inputs hold what the user gives; integer data stays integer. */
    if (t->kind == NTP_TENSOR_INPUT || is_integer(t->dtype))
        return t->dtype;
    return x->be->storage_dtype ? x->be->storage_dtype(t->dtype) : t->dtype;
}

static int64_t storage_bytes(const ntp_tensor *t, void *user)
{
    const ntp_exec *x = user;
    int64_t n = ntp_shape_numel(&t->shape), b;
    if (n < 0 || !ntp__mul_ok(n, (int64_t)ntp_dtype_size(ntp__exec_storage(x, t)), &b))
        return -1;
    return b;
}

void *ntp__exec_tensor(const ntp_exec *x, int ti)
{
    if (x->wdata[ti])
        return x->wdata[ti];
    return x->offsets[ti] >= 0 ? (char *)x->arena + x->offsets[ti] : NULL;
}

/* Convert f32 values into a storage type. The reference backend stores f32
 * and rounds through the precision instead (see round_weights). */
static ntp_status store_f32(ntp_ctx *ctx, const ntp_tensor *t, ntp_dtype st, void *dst,
                            const float *src, int64_t n)
{
    switch (st) {
    case NTP_DTYPE_F32:
        if (dst != src)
            memcpy(dst, src, (size_t)n * sizeof(float));
        return NTP_STATUS_OK;
    case NTP_DTYPE_BF16:
        for (int64_t i = 0; i < n; i++)
            ((uint16_t *)dst)[i] = ntp__f32_to_bf16(src[i]);
        return NTP_STATUS_OK;
    case NTP_DTYPE_F16:
        for (int64_t i = 0; i < n; i++)
            ((uint16_t *)dst)[i] = ntp__f32_to_f16(src[i]);
        return NTP_STATUS_OK;
    default:
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED, "weight '%s': cannot store f32 data as %s",
                          t->name, ntp_dtype_name(st));
    }
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

/* Weights of one node: the model's own data, or generated from the seed. */
static ntp_status load_weights(ntp_ctx *ctx, ntp_exec *x, const ntp_node *n, uint64_t seed)
{
    const ntp_graph *g = x->g;
    float *f32[NTP_MAX_WEIGHTS] = {0};
    ntp_status st = NTP_STATUS_OK;
    int64_t max_ch = 1;
    for (int k = 0; k < n->n_w; k++) {
        const ntp_tensor *t = &g->tensors[n->w[k]];
        int64_t cnt = ntp_shape_numel(&t->shape);
        f32[k] = malloc((size_t)cnt * sizeof(float) + 1);
        if (!f32[k]) {
            st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory for weight '%s' (%lld values)",
                            t->name, (long long)cnt);
            goto done;
        }
        if (t->shape.dim[0] > max_ch)
            max_ch = t->shape.dim[0];
    }
    ntp__gen_weights(g, n, f32, seed);
    for (int k = 0; k < n->n_w; k++) {
        const ntp_tensor *t = &g->tensors[n->w[k]];
        if (t->data) {
            if (t->data_dtype != NTP_DTYPE_F32) {
                st = ntp__error(ctx, NTP_STATUS_UNSUPPORTED, "weight '%s' holds %s data; expected f32",
                                t->name, ntp_dtype_name(t->data_dtype));
                goto done;
            }
            memcpy(f32[k], t->data, (size_t)ntp_shape_numel(&t->shape) * sizeof(float));
        }
    }
    float *scales = malloc((size_t)max_ch * sizeof(float));
    if (!scales) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (int k = 0; k < n->n_w && st == NTP_STATUS_OK; k++) {
        const ntp_tensor *t = &g->tensors[n->w[k]];
        ntp_dtype sd = ntp__exec_storage(x, t);
        int64_t cnt = ntp_shape_numel(&t->shape);
        if (sd == NTP_DTYPE_F32) {
            round_weights(f32[k], t, n->precision, scales);
            x->wdata[n->w[k]] = f32[k];
            f32[k] = NULL;
        } else {
            x->wdata[n->w[k]] = malloc((size_t)cnt * ntp_dtype_size(sd) + 1);
            if (!x->wdata[n->w[k]])
                st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory for weight '%s'", t->name);
            else
                st = store_f32(ctx, t, sd, x->wdata[n->w[k]], f32[k], cnt);
        }
        x->weight_bytes += cnt * (int64_t)ntp_dtype_size(sd);
    }
    free(scales);
done:
    for (int k = 0; k < n->n_w; k++)
        free(f32[k]);
    return st;
}

/* "[NAME=]FILE": by name when NAME matches an input, else by position. */
static ntp_status load_inputs(ntp_ctx *ctx, ntp_exec *x, const ntp_run_opts *o)
{
    const ntp_graph *g = x->g;
    bool given[256] = {false};
    if (g->n_inputs > 256)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED, "more than 256 graph inputs");
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
            for (int j = 0; j < g->n_inputs; j++)
                if (strcmp(g->tensors[g->inputs[j]].name, name) == 0)
                    which = j;
            if (which < 0) {
                const char *names[256];
                for (int j = 0; j < g->n_inputs; j++)
                    names[j] = g->tensors[g->inputs[j]].name;
                const char *near = ntp__nearest(name, names, g->n_inputs);
                return ntp__error(ctx, NTP_STATUS_UNKNOWN_NAME,
                                  "--input %s: the topology has no input '%s'%s%s%s", spec, name,
                                  near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
            }
            path = eq + 1;
        }
        if (which >= g->n_inputs)
            return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                              "--input %s: the topology has only %d input%s", spec, g->n_inputs,
                              g->n_inputs == 1 ? "" : "s");
        if (given[which])
            return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "input '%s' is given twice",
                              g->tensors[g->inputs[which]].name);
        const ntp_tensor *t = &g->tensors[g->inputs[which]];
        ntp_npy a;
        ntp_status st = ntp__npy_read(ctx, path, &a);
        if (st)
            return st;
        char b1[128], b2[128];
        bool same = a.shape.ndim == t->shape.ndim;
        for (int d = 0; same && d < a.shape.ndim; d++)
            same = a.shape.dim[d] == t->shape.dim[d];
        if (!same || a.dtype != t->dtype) {
            st = ntp__error(ctx, NTP_STATUS_SHAPE_ERROR,
                            "%s: holds %s %s; input '%s' is %s %s", path, ntp_dtype_name(a.dtype),
                            ntp_shape_str(&a.shape, b1, sizeof b1), t->name, ntp_dtype_name(t->dtype),
                            ntp_shape_str(&t->shape, b2, sizeof b2));
            ntp__npy_free(&a);
            return st;
        }
        memcpy(ntp__exec_tensor(x, g->inputs[which]), a.data, (size_t)a.nbytes);
        ntp__npy_free(&a);
        given[which] = true;
    }
    for (int j = 0; j < g->n_inputs; j++)
        if (!given[j]) {
            ntp_status st = ntp__gen_input(ctx, g, g->inputs[j], ntp__exec_tensor(x, g->inputs[j]), o->seed);
            if (st)
                return st;
        }
    return NTP_STATUS_OK;
}

static void fill_buf(const ntp_exec *x, int ti, ntp_buf *b)
{
    const ntp_tensor *t = &x->g->tensors[ti];
    b->data = ntp__exec_tensor(x, ti);
    b->shape = t->shape;
    b->dtype = ntp__exec_storage(x, t);
}

ntp_status ntp__exec_init(ntp_ctx *ctx, ntp_exec *x, const ntp_graph *g, const ntp_backend_i *be,
                          const ntp_run_opts *o, int first, int last)
{
    memset(x, 0, sizeof *x);
    x->g = g;
    x->be = be;
    x->precision = g->precision;
    x->threads = o->threads;
    x->first = first;
    x->last = last;
    int nn = g->n_nodes, nt = g->n_tensors;
    x->offsets = calloc((size_t)nt + 1, sizeof *x->offsets);
    x->wdata = calloc((size_t)nt + 1, sizeof *x->wdata);
    x->kargs = calloc((size_t)nn + 1, sizeof *x->kargs);
    x->node_state = calloc((size_t)nn + 1, sizeof *x->node_state);
    x->workspace = calloc((size_t)nn + 1, sizeof *x->workspace);
    x->prepare_ms = calloc((size_t)nn + 1, sizeof *x->prepare_ms);
    if (!x->offsets || !x->wdata || !x->kargs || !x->node_state || !x->workspace || !x->prepare_ms)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory building '%s'", g->name);
    for (int p = 0; p < nn; p++) {
        const ntp_node *n = &g->nodes[g->order[p]];
        if (!be->supports(g, n, n->precision))
            return ntp__node_error(ctx, g, n, NTP_STATUS_UNSUPPORTED,
                                   "backend '%s' cannot run this layer at %s", be->name,
                                   ntp_dtype_name(n->precision));
    }
    ntp_backend_opts bo = {.threads = o->threads, .precision = g->precision};
    ntp_status st;
    if (be->init && (st = be->init(ctx, &bo, &x->be_state)))
        return st;
    /* Layers before a partial range run once, so their outputs must survive
     * the repeated range: pin them. */
    if ((st = ntp__plan_memory(ctx, g, storage_bytes, x, first, x->offsets, &x->arena_bytes)))
        return st;
    x->arena = aligned_alloc(64, (size_t)((x->arena_bytes + 63) / 64 * 64) + 64);
    if (!x->arena)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY,
                          "out of memory for the %.1f MiB activation arena",
                          (double)x->arena_bytes / 1048576.0);
    /* Touch the arena once so page faults are not charged to the first layer. */
    memset(x->arena, 0, (size_t)x->arena_bytes);
    for (int p = 0; p < nn; p++)
        if ((st = load_weights(ctx, x, &g->nodes[g->order[p]], o->seed)))
            return st;
    if ((st = load_inputs(ctx, x, o)))
        return st;
    for (int p = 0; p < nn; p++) {
        const ntp_node *n = &g->nodes[g->order[p]];
        ntp_kargs *k = &x->kargs[p];
        k->g = g;
        k->node = n;
        k->threads = o->threads;
        k->n_in = n->n_in;
        k->n_w = n->n_w;
        k->n_out = n->n_out;
        for (int i = 0; i < n->n_in; i++)
            fill_buf(x, n->in[i], &k->in[i]);
        for (int i = 0; i < n->n_w; i++)
            fill_buf(x, n->w[i], &k->w[i]);
        for (int i = 0; i < n->n_out; i++)
            fill_buf(x, n->out[i], &k->out[i]);
        if (be->prepare) {
            double t0 = ntp__now_us();
            st = be->prepare(ctx, x->be_state, k, &x->node_state[p], &x->workspace[p]);
            x->prepare_ms[p] = (ntp__now_us() - t0) / 1000.0;
            if (st)
                return st;
        }
        if (x->workspace[p] > x->ws_bytes)
            x->ws_bytes = x->workspace[p];
    }
    if (x->ws_bytes > 0) {
        x->ws = aligned_alloc(64, (x->ws_bytes + 63) / 64 * 64);
        if (!x->ws)
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory for a %.1f MiB workspace",
                              (double)x->ws_bytes / 1048576.0);
        memset(x->ws, 0, x->ws_bytes);
    }
    for (int p = 0; p < nn; p++) {
        x->kargs[p].workspace = x->ws;
        x->kargs[p].workspace_bytes = x->workspace[p];
    }
    if (first > 0)
        return ntp__exec_range(ctx, x, 0, first - 1);
    return NTP_STATUS_OK;
}

ntp_status ntp__exec_range(ntp_ctx *ctx, ntp_exec *x, int from, int to)
{
    for (int p = from; p <= to; p++) {
        ntp_status st = x->be->execute(ctx, x->be_state, x->node_state[p], &x->kargs[p]);
        if (st)
            return st;
    }
    if (x->be->synchronize)
        x->be->synchronize(x->be_state);
    return NTP_STATUS_OK;
}

ntp_status ntp__exec_save_outputs(ntp_ctx *ctx, const ntp_exec *x, const char *dir)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: %s", dir, strerror(errno));
    const ntp_graph *g = x->g;
    for (int i = 0; i < g->n_outputs; i++) {
        const ntp_tensor *t = &g->tensors[g->outputs[i]];
        ntp_dtype sd = ntp__exec_storage(x, t);
        const void *data = ntp__exec_tensor(x, g->outputs[i]);
        int64_t n = ntp_shape_numel(&t->shape);
        float *tmp = NULL;
        if (sd == NTP_DTYPE_BF16) {
            /* NumPy has no bf16: widen to f32. */
            tmp = malloc((size_t)n * sizeof(float) + 1);
            if (!tmp)
                return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            for (int64_t j = 0; j < n; j++)
                tmp[j] = ntp__bf16_to_f32(((const uint16_t *)data)[j]);
            data = tmp;
            sd = NTP_DTYPE_F32;
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/output_%d.npy", dir, i);
        ntp_status st = ntp__npy_write(ctx, path, sd, &t->shape, data);
        free(tmp);
        if (st)
            return st;
    }
    return NTP_STATUS_OK;
}

void ntp__exec_free(ntp_exec *x)
{
    if (!x->g)
        return;
    for (int p = 0; p < x->g->n_nodes; p++)
        if (x->node_state && x->node_state[p] && x->be->release_node)
            x->be->release_node(x->be_state, x->node_state[p]);
    if (x->be_state && x->be->release)
        x->be->release(x->be_state);
    if (x->wdata)
        for (int i = 0; i < x->g->n_tensors; i++)
            free(x->wdata[i]);
    free(x->arena);
    free(x->ws);
    free(x->offsets);
    free(x->wdata);
    free(x->kargs);
    free(x->node_state);
    free(x->workspace);
    free(x->prepare_ms);
    memset(x, 0, sizeof *x);
}
