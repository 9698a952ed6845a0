/* Deterministic weights and synthetic inputs (docs/data.md).
 *
 * Every tensor gets its own PRNG stream, seeded from the run's seed and the
 * tensor's name, so adding a layer does not change the others' weights and
 * every backend sees identical data. */
#include <math.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "core/rng-impl.h"
#include "graph/gen-impl.h"

/* FNV-1a of the name mixed with the seed: an independent stream per tensor. */
static uint64_t stream_seed(uint64_t seed, const char *name)
{
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    uint64_t s = h ^ (seed * 0x9e3779b97f4a7c15ULL);
    ntp__rng_next(&s);
    return s;
}

static void fill_uniform(float *w, int64_t n, float lo, float hi, uint64_t *s)
{
    for (int64_t i = 0; i < n; i++)
        w[i] = lo + (hi - lo) * ntp__rng_uniform(s);
}

static void fill_normal(float *w, int64_t n, float std, uint64_t *s)
{
    for (int64_t i = 0; i < n; i++)
        w[i] = std * ntp__rng_normal(s);
}

/* Fan-in of a weight: every dim but the first (fc [out, in], conv [F, C/g,
 * k...], attention [3D, D]). */
static int64_t fan_in(const ntp_shape *s)
{
    int64_t f = 1;
    for (int d = 1; d < s->ndim; d++)
        f *= s->dim[d];
    return f > 0 ? f : 1;
}

/* Each op's initialiser is its INIT column in the op table (op-table.h). */
void ntp__gen_weights(const ntp_graph *g, const ntp_node *n, float *const *w, uint64_t seed)
{
    for (int k = 0; k < n->n_w; k++) {
        const ntp_tensor *t = &g->tensors[n->w[k]];
        int64_t cnt = ntp_shape_numel(&t->shape);
        uint64_t s = stream_seed(seed, t->name);
        switch (ntp__op_init(n->op)) {
        case NTP_OP_INIT_NORM_STATS:
            /* Statistics of a trained network: scales near 1, small shifts,
             * positive variances. */
            if (k == 0)
                fill_uniform(w[k], cnt, 0.8f, 1.2f, &s);
            else if (k == 3)
                fill_uniform(w[k], cnt, 0.5f, 1.5f, &s);
            else
                fill_uniform(w[k], cnt, -0.1f, 0.1f, &s);
            break;
        case NTP_OP_INIT_SCALE_SHIFT:
            if (k == 0)
                fill_uniform(w[k], cnt, 0.8f, 1.2f, &s);
            else
                fill_uniform(w[k], cnt, -0.1f, 0.1f, &s);
            break;
        case NTP_OP_INIT_RECURRENT: {
            /* Every weight and bias in U(-1/sqrt(H), 1/sqrt(H)) keeps the
             * recurrence stable. */
            float b = 1.0f / sqrtf((float)n->a.units);
            fill_uniform(w[k], cnt, -b, b, &s);
            break;
        }
        case NTP_OP_INIT_NORMAL: fill_normal(w[k], cnt, 1.0f, &s); break;
        case NTP_OP_INIT_DEFAULT:
            if (t->shape.ndim >= 2) {
                /* LeCun normal: variance 1/fan_in keeps the scale of
                 * activations through stacks of linear layers. */
                fill_normal(w[k], cnt, 1.0f / sqrtf((float)fan_in(&t->shape)), &s);
            } else {
                /* Biases: small, like PyTorch's U(-1/sqrt(fan_in), ...) with
                 * the fan-in of the weight before them. */
                int64_t fi = k > 0 ? fan_in(&g->tensors[n->w[k - 1]].shape) : cnt;
                float b = 1.0f / sqrtf((float)fi);
                fill_uniform(w[k], cnt, -b, b, &s);
            }
            break;
        }
    }
}

ntp_status ntp__gen_input(ntp_ctx *ctx, const ntp_graph *g, int ti, void *data, uint64_t seed)
{
    const ntp_tensor *t = &g->tensors[ti];
    int64_t cnt = ntp_shape_numel(&t->shape);
    uint64_t s = stream_seed(seed, t->name);
    /* What reads this input decides what realistic data looks like. */
    const ntp_node *consumer = NULL;
    int64_t vocab = INT64_MAX;
    for (int i = 0; i < g->n_nodes; i++) {
        const ntp_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] == ti) {
                if (!consumer)
                    consumer = n;
                if (n->op == NTP_OP_EMBEDDING && n->a.vocab < vocab)
                    vocab = n->a.vocab;
            }
    }
    if (t->dtype == NTP_DTYPE_I32 || t->dtype == NTP_DTYPE_I64 || t->dtype == NTP_DTYPE_U8 ||
        t->dtype == NTP_DTYPE_I8) {
        /* Indices: valid for every embedding that reads them. */
        int64_t hi = vocab == INT64_MAX ? (t->dtype == NTP_DTYPE_U8 ? 256 : 128) : vocab;
        if (t->dtype == NTP_DTYPE_I8 && hi > 128)
            hi = 128;
        for (int64_t i = 0; i < cnt; i++) {
            int64_t v = (int64_t)(ntp__rng_next(&s) % (uint64_t)hi);
            switch (t->dtype) {
            case NTP_DTYPE_I32: ((int32_t *)data)[i] = (int32_t)v; break;
            case NTP_DTYPE_I64: ((int64_t *)data)[i] = v; break;
            case NTP_DTYPE_U8: ((uint8_t *)data)[i] = (uint8_t)v; break;
            case NTP_DTYPE_I8: ((int8_t *)data)[i] = (int8_t)v; break;
            /* Not index types: the test above keeps them out. */
            case NTP_DTYPE_F32:
            case NTP_DTYPE_BF16:
            case NTP_DTYPE_F16:
            case NTP_DTYPE_COUNT: break;
            }
        }
        return NTP_STATUS_OK;
    }
    if (t->dtype != NTP_DTYPE_F32)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                          "input '%s' is %s: synthetic data is generated for f32 and integer "
                          "inputs; give it with ntp_run_opts.inputs",
                          t->name, ntp_dtype_name(t->dtype));
    float *f = data;
    if (consumer && consumer->op == NTP_OP_MFCC) {
        for (int64_t b = 0; b < t->shape.dim[0]; b++)
            ntp__synth_audio(f + b * t->shape.dim[1], t->shape.dim[1], consumer->a.sample_rate,
                             seed + (uint64_t)b);
    } else if (consumer && consumer->op == NTP_OP_CTC_DECODE) {
        ntp__synth_ctc_logits(f, t->shape.dim[0], t->shape.dim[1], t->shape.dim[2], seed);
    } else {
        fill_normal(f, cnt, 1.0f, &s);
    }
    return NTP_STATUS_OK;
}
