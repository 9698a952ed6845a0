/* Training forward and backward of every layer the engine trains, in
 * double (docs/train.md has the formulas). Forward follows PyTorch's
 * training mode: batch normalisation normalises with the batch's own
 * statistics (biased variance) and moves its running statistics by 0.1
 * (unbiased variance); dropout zeroes each element with probability p and
 * scales the others by 1/(1-p). Backward-data accumulates (+=) into the
 * gradients of the layer's inputs; backward-weights writes (=) the
 * gradients of the layer's weights. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng-impl.h"
#include "inlay/inlay-impl.h"
#include "train-impl.h"

#define T_(i) (&s->g->tensors[n->in[i]])
#define O_ (&s->g->tensors[n->out[0]])

static int64_t cnt(const ntp_tensor *t)
{
    return ntp_shape_numel(&t->shape);
}

/* The ops with training kernels (forward and backward in double). */
static const bool supported[NTP_OP_COUNT] = {
    [NTP_OP_FC] = true,
    [NTP_OP_MATMUL] = true,
    [NTP_OP_CONV] = true,
    [NTP_OP_MAXPOOL] = true,
    [NTP_OP_AVGPOOL] = true,
    [NTP_OP_GLOBAL_MAXPOOL] = true,
    [NTP_OP_GLOBAL_AVGPOOL] = true,
    [NTP_OP_BATCHNORM] = true,
    [NTP_OP_LAYERNORM] = true,
    [NTP_OP_RELU] = true,
    [NTP_OP_LEAKY_RELU] = true,
    [NTP_OP_SIGMOID] = true,
    [NTP_OP_TANH] = true,
    [NTP_OP_GELU] = true,
    [NTP_OP_SILU] = true,
    [NTP_OP_HARDSWISH] = true,
    [NTP_OP_CLIP] = true,
    [NTP_OP_SOFTPLUS] = true,
    [NTP_OP_EXP] = true,
    [NTP_OP_NEG] = true,
    [NTP_OP_ABS] = true,
    [NTP_OP_SOFTMAX] = true,
    [NTP_OP_LOG_SOFTMAX] = true,
    [NTP_OP_ADD] = true,
    [NTP_OP_SUB] = true,
    [NTP_OP_MUL] = true,
    [NTP_OP_CONCAT] = true,
    [NTP_OP_RESHAPE] = true,
    [NTP_OP_FLATTEN] = true,
    [NTP_OP_DROPOUT] = true,
    [NTP_OP_EMBEDDING] = true,
    [NTP_OP_MEMCPY] = true,
    [NTP_OP_CONVERT] = true,
    [NTP_OP_LSTM] = true,
    [NTP_OP_GRU] = true,
    [NTP_OP_RNN] = true,
    [NTP_OP_MFCC] = true,
    [NTP_OP_TRANSPOSE] = true,
    [NTP_OP_SPLIT] = true,
    [NTP_OP_PAD] = true,
    [NTP_OP_DECONV] = true,
    [NTP_OP_ATTENTION] = true,
    [NTP_OP_DARKNET_HEAD] = true,
};

bool ntp__train_supported(ntp_op op)
{
    return (unsigned)op < NTP_OP_COUNT && supported[op];
}

/* What a layer's backward reads of its forward, by op (the zero value: its
 * first input, when it trains at all). */
typedef enum train_need {
    NEED_INPUT0,
    NEED_INPUTS,  /* products: every input */
    NEED_OUTPUT,  /* softmax: its output */
    NEED_NOTHING, /* linear in its input, or a copy */
} train_need;

static const train_need needs[NTP_OP_COUNT] = {
    [NTP_OP_MATMUL] = NEED_INPUTS,      [NTP_OP_MUL] = NEED_INPUTS,
    [NTP_OP_ATTENTION] = NEED_INPUTS,   [NTP_OP_SOFTMAX] = NEED_OUTPUT,
    [NTP_OP_LOG_SOFTMAX] = NEED_OUTPUT, [NTP_OP_DARKNET_HEAD] = NEED_OUTPUT,
    [NTP_OP_AVGPOOL] = NEED_NOTHING,    [NTP_OP_GLOBAL_AVGPOOL] = NEED_NOTHING,
    [NTP_OP_ADD] = NEED_NOTHING,        [NTP_OP_SUB] = NEED_NOTHING,
    [NTP_OP_CONCAT] = NEED_NOTHING,     [NTP_OP_RESHAPE] = NEED_NOTHING,
    [NTP_OP_FLATTEN] = NEED_NOTHING,    [NTP_OP_DROPOUT] = NEED_NOTHING,
    [NTP_OP_MEMCPY] = NEED_NOTHING,     [NTP_OP_CONVERT] = NEED_NOTHING,
    [NTP_OP_MFCC] = NEED_NOTHING,       [NTP_OP_TRANSPOSE] = NEED_NOTHING,
    [NTP_OP_SPLIT] = NEED_NOTHING,      [NTP_OP_PAD] = NEED_NOTHING,
};

ntp_train_needs ntp__train_needs(const ntp_graph *g, const ntp_node *n)
{
    ntp_train_needs r;
    memset(&r, 0, sizeof r);
    switch ((unsigned)n->op < NTP_OP_COUNT ? needs[n->op] : NEED_INPUT0) {
    case NEED_INPUTS:
        for (int i = 0; i < n->n_in; i++)
            r.input[i] = true;
        break;
    case NEED_OUTPUT: r.output = true; break;
    case NEED_NOTHING: break;
    case NEED_INPUT0: r.input[0] = ntp__train_supported(n->op); break;
    }
    (void)g;
    return r;
}

static int64_t batchnorm_saved(const ntp_graph *g, const ntp_node *n)
{
    return 2 * g->tensors[n->in[0]].shape.dim[1];
}

static int64_t layernorm_saved(const ntp_graph *g, const ntp_node *n)
{
    const ntp_tensor *x = &g->tensors[n->in[0]];
    int64_t axis = n->a.axis < 0 ? n->a.axis + x->shape.ndim : n->a.axis, D = 1;
    for (int d = (int)axis; d < x->shape.ndim; d++)
        D *= x->shape.dim[d];
    return 2 * (cnt(x) / D);
}

static int64_t dropout_saved(const ntp_graph *g, const ntp_node *n)
{
    return cnt(&g->tensors[n->in[0]]);
}

/* Values a layer keeps beyond its tensors for its backward, by op (none
 * where NULL). */
static int64_t (*const saved[NTP_OP_COUNT])(const ntp_graph *g, const ntp_node *n) = {
    [NTP_OP_BATCHNORM] = batchnorm_saved,
    [NTP_OP_LAYERNORM] = layernorm_saved,
    [NTP_OP_DROPOUT] = dropout_saved,
    [NTP_OP_LSTM] = ntp__train_rnn_saved,
    [NTP_OP_GRU] = ntp__train_rnn_saved,
    [NTP_OP_RNN] = ntp__train_rnn_saved,
    [NTP_OP_ATTENTION] = ntp__train_attention_saved,
};

int64_t ntp__train_saved_count(const ntp_graph *g, const ntp_node *n)
{
    if ((unsigned)n->op >= NTP_OP_COUNT || !saved[n->op])
        return 0;
    return saved[n->op](g, n);
}

bool ntp__train_has_weights(const ntp_graph *g, const ntp_node *n)
{
    for (int k = 0; k < n->n_w; k++)
        if (g->tensors[n->w[k]].kind == NTP_TENSOR_WEIGHT)
            return true;
    return false;
}

/* --- fc and matmul ---------------------------------------------------------- */

static void fc(ntp_train_state *s, const ntp_node *n, int mode)
{
    const ntp_tensor *xt = T_(0);
    int64_t K = xt->shape.dim[xt->shape.ndim - 1], F = n->a.units, R = cnt(xt) / K;
    const double *x = s->val[n->in[0]], *W = s->val[n->w[0]];
    const double *b = n->n_w > 1 ? s->val[n->w[1]] : NULL;
    double *y = s->val[n->out[0]], *dy = s->grad[n->out[0]];
    if (mode == 0) {
        for (int64_t r = 0; r < R; r++)
            for (int64_t f = 0; f < F; f++) {
                double acc = b ? b[f] : 0.0;
                for (int64_t k = 0; k < K; k++)
                    acc += x[r * K + k] * W[f * K + k];
                y[r * F + f] = acc;
            }
    } else if (mode == 1) {
        double *dx = s->grad[n->in[0]];
        for (int64_t r = 0; r < R; r++)
            for (int64_t f = 0; f < F; f++) {
                double g = dy[r * F + f];
                for (int64_t k = 0; k < K; k++)
                    dx[r * K + k] += g * W[f * K + k];
            }
    } else {
        double *dW = s->grad[n->w[0]], *db = n->n_w > 1 ? s->grad[n->w[1]] : NULL;
        memset(dW, 0, (size_t)(F * K) * sizeof *dW);
        if (db)
            memset(db, 0, (size_t)F * sizeof *db);
        for (int64_t r = 0; r < R; r++)
            for (int64_t f = 0; f < F; f++) {
                double g = dy[r * F + f];
                if (db)
                    db[f] += g;
                for (int64_t k = 0; k < K; k++)
                    dW[f * K + k] += g * x[r * K + k];
            }
    }
}

/* The offset (in matrices) of output batch index bi in an operand whose
 * batch dims are shape's leading nd-2 dims, broadcast numpy-style. */
static int64_t bcast_matrix(const ntp_shape *out, const ntp_shape *op, int64_t bi)
{
    int r = out->ndim - 2, ro = op->ndim - 2;
    int64_t off = 0, mul = 1;
    for (int d = r - 1; d >= 0; d--) {
        int64_t c = bi % out->dim[d];
        bi /= out->dim[d];
        int dd = d - (r - ro);
        if (dd < 0)
            break;
        if (op->dim[dd] != 1)
            off += c * mul;
        mul *= op->dim[dd];
    }
    return off;
}

static void matmul(ntp_train_state *s, const ntp_node *n, int mode)
{
    const ntp_shape *as = &T_(0)->shape, *bs = &T_(1)->shape, *os = &O_->shape;
    bool ta = n->a.transpose_a, tb = n->a.transpose_b;
    int64_t M = os->dim[os->ndim - 2], N = os->dim[os->ndim - 1];
    int64_t K = ta ? as->dim[as->ndim - 2] : as->dim[as->ndim - 1];
    int64_t batches = cnt(O_) / (M * N);
    const double *A = s->val[n->in[0]], *B = s->val[n->in[1]];
    double *dA = s->grad[n->in[0]], *dB = s->grad[n->in[1]];
    double *C = s->val[n->out[0]], *dC = s->grad[n->out[0]];
    for (int64_t bi = 0; bi < batches; bi++) {
        int64_t oa = bcast_matrix(os, as, bi) * M * K, ob = bcast_matrix(os, bs, bi) * K * N;
        int64_t oc = bi * M * N;
        for (int64_t m = 0; m < M; m++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0.0, g = mode ? dC[oc + m * N + j] : 0.0;
                for (int64_t k = 0; k < K; k++) {
                    int64_t ia = oa + (ta ? k * M + m : m * K + k);
                    int64_t ib = ob + (tb ? j * K + k : k * N + j);
                    if (mode == 0)
                        acc += A[ia] * B[ib];
                    else {
                        if (dA)
                            dA[ia] += g * B[ib];
                        if (dB)
                            dB[ib] += g * A[ia];
                    }
                }
                if (mode == 0)
                    C[oc + m * N + j] = acc;
            }
    }
}

/* --- convolution --------------------------------------------------------------- */

typedef struct cgeom {
    int64_t N, C, F, G, Cg, Fg, in[3], out[3], k[3], st[3], d[3], p[3], in_sz, out_sz, k_sz;
} cgeom;

static void conv_geom(const ntp_node *n, const ntp_shape *x, const ntp_shape *y, cgeom *g)
{
    int nk = x->ndim - 2;
    g->N = x->dim[0];
    g->C = x->dim[1];
    g->F = y->dim[1];
    g->G = n->a.groups > 0 ? n->a.groups : 1;
    g->Cg = g->C / g->G;
    g->Fg = g->F / g->G;
    g->in_sz = g->out_sz = g->k_sz = 1;
    for (int i = 0; i < 3; i++) {
        int j = i - (3 - nk);
        g->in[i] = j >= 0 ? x->dim[2 + j] : 1;
        g->out[i] = j >= 0 ? y->dim[2 + j] : 1;
        g->k[i] = j >= 0 ? n->a.kernel[j] : 1;
        g->st[i] = j >= 0 ? n->a.stride[j] : 1;
        g->d[i] = j >= 0 ? n->a.dilation[j] : 1;
        g->p[i] = j >= 0 ? n->a.pad[j] : 0;
        g->in_sz *= g->in[i];
        g->out_sz *= g->out[i];
        g->k_sz *= g->k[i];
    }
}

/* mode 0: y = b + W * x; 1: dx += W^T * dy; 2: dW = dy * x, db = sum dy. */
static void conv(ntp_train_state *s, const ntp_node *n, int mode)
{
    cgeom g;
    conv_geom(n, &T_(0)->shape, &O_->shape, &g);
    const double *x = s->val[n->in[0]], *W = s->val[n->w[0]];
    const double *b = n->n_w > 1 ? s->val[n->w[1]] : NULL;
    double *y = s->val[n->out[0]], *dy = s->grad[n->out[0]];
    double *dx = mode == 1 ? s->grad[n->in[0]] : NULL;
    double *dW = mode == 2 ? s->grad[n->w[0]] : NULL;
    double *db = mode == 2 && n->n_w > 1 ? s->grad[n->w[1]] : NULL;
    if (dW)
        memset(dW, 0, (size_t)(g.F * g.Cg * g.k_sz) * sizeof *dW);
    if (db)
        memset(db, 0, (size_t)g.F * sizeof *db);
    for (int64_t im = 0; im < g.N; im++)
        for (int64_t f = 0; f < g.F; f++) {
            int64_t grp = f / g.Fg;
            const double *Wf = W + f * g.Cg * g.k_sz;
            double *dWf = dW ? dW + f * g.Cg * g.k_sz : NULL;
            for (int64_t od = 0; od < g.out[0]; od++)
                for (int64_t oh = 0; oh < g.out[1]; oh++)
                    for (int64_t ow = 0; ow < g.out[2]; ow++) {
                        int64_t yo = ((im * g.F + f) * g.out[0] + od) * g.out[1] * g.out[2] +
                                     oh * g.out[2] + ow;
                        double acc = 0.0, gy = mode ? dy[yo] : 0.0;
                        if (db)
                            db[f] += gy;
                        for (int64_t c = 0; c < g.Cg; c++) {
                            int64_t xc = (im * g.C + grp * g.Cg + c) * g.in_sz;
                            for (int64_t kd = 0; kd < g.k[0]; kd++) {
                                int64_t id = od * g.st[0] - g.p[0] + kd * g.d[0];
                                if (id < 0 || id >= g.in[0])
                                    continue;
                                for (int64_t kh = 0; kh < g.k[1]; kh++) {
                                    int64_t ih = oh * g.st[1] - g.p[1] + kh * g.d[1];
                                    if (ih < 0 || ih >= g.in[1])
                                        continue;
                                    for (int64_t kw = 0; kw < g.k[2]; kw++) {
                                        int64_t iw = ow * g.st[2] - g.p[2] + kw * g.d[2];
                                        if (iw < 0 || iw >= g.in[2])
                                            continue;
                                        int64_t xi = xc + (id * g.in[1] + ih) * g.in[2] + iw;
                                        int64_t wi =
                                            ((c * g.k[0] + kd) * g.k[1] + kh) * g.k[2] + kw;
                                        if (mode == 0)
                                            acc += x[xi] * Wf[wi];
                                        else if (mode == 1)
                                            dx[xi] += gy * Wf[wi];
                                        else
                                            dWf[wi] += gy * x[xi];
                                    }
                                }
                            }
                        }
                        if (mode == 0)
                            y[yo] = acc + (b ? b[f] : 0.0);
                    }
        }
}

/* --- pooling ------------------------------------------------------------------ */

typedef struct pgeom {
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3], in_sz, out_sz, planes;
} pgeom;

static void pool_geom(const ntp_node *n, const ntp_shape *x, const ntp_shape *y, pgeom *g)
{
    int nk = x->ndim - 2;
    g->planes = x->dim[0] * x->dim[1];
    g->in_sz = g->out_sz = 1;
    for (int i = 0; i < 3; i++) {
        int j = i - (3 - nk);
        g->in[i] = j >= 0 ? x->dim[2 + j] : 1;
        g->out[i] = j >= 0 ? y->dim[2 + j] : 1;
        g->k[i] = j >= 0 ? n->a.kernel[j] : 1;
        g->s[i] = j >= 0 ? n->a.stride[j] : 1;
        g->d[i] = j >= 0 ? n->a.dilation[j] : 1;
        g->pb[i] = j >= 0 ? n->a.pad[j] : 0;
        g->pe[i] = j >= 0 ? n->a.pad[nk + j] : 0;
        g->in_sz *= g->in[i];
        g->out_sz *= g->out[i];
    }
}

/* Taps of a window along one dim that fall inside the input (a contiguous
 * run), and the count inside the padded input, as the reference backend
 * and PyTorch count them. */
typedef struct taps {
    int64_t first, n_real, n_padded;
} taps;

static taps window(int64_t o, int64_t k, int64_t st, int64_t d, int64_t pb, int64_t pe, int64_t in)
{
    int64_t start = o * st - pb, lo = -1;
    taps t = {0, 0, 0};
    for (int64_t q = 0; q < k; q++) {
        int64_t p = start + q * d;
        if (p < in + pe)
            t.n_padded++;
        if (p >= 0 && p < in) {
            if (lo < 0)
                lo = q;
            t.n_real++;
        }
    }
    t.first = lo < 0 ? 0 : lo;
    return t;
}

/* mode 0 forward, 1 backward-data. Max: the first largest element of the
 * window takes the gradient (PyTorch's rule). */
static void pool(ntp_train_state *s, const ntp_node *n, int mode)
{
    pgeom g;
    pool_geom(n, &T_(0)->shape, &O_->shape, &g);
    bool is_max = n->op == NTP_OP_MAXPOOL, inc = n->a.count_include_pad;
    const double *x = s->val[n->in[0]];
    double *y = s->val[n->out[0]], *dy = s->grad[n->out[0]];
    double *dx = mode ? s->grad[n->in[0]] : NULL;
    for (int64_t pl = 0; pl < g.planes; pl++) {
        const double *xp = x + pl * g.in_sz;
        double *dxp = dx ? dx + pl * g.in_sz : NULL;
        for (int64_t od = 0; od < g.out[0]; od++) {
            taps td = window(od, g.k[0], g.s[0], g.d[0], g.pb[0], g.pe[0], g.in[0]);
            int64_t id0 = od * g.s[0] - g.pb[0] + td.first * g.d[0];
            for (int64_t oh = 0; oh < g.out[1]; oh++) {
                taps th = window(oh, g.k[1], g.s[1], g.d[1], g.pb[1], g.pe[1], g.in[1]);
                int64_t ih0 = oh * g.s[1] - g.pb[1] + th.first * g.d[1];
                for (int64_t ow = 0; ow < g.out[2]; ow++) {
                    taps tw = window(ow, g.k[2], g.s[2], g.d[2], g.pb[2], g.pe[2], g.in[2]);
                    int64_t iw0 = ow * g.s[2] - g.pb[2] + tw.first * g.d[2];
                    int64_t real = td.n_real * th.n_real * tw.n_real;
                    int64_t div = inc ? td.n_padded * th.n_padded * tw.n_padded : real;
                    int64_t yo = pl * g.out_sz + (od * g.out[1] + oh) * g.out[2] + ow;
                    double m = -INFINITY, sum = 0.0;
                    int64_t arg = -1;
                    for (int64_t a = 0; a < td.n_real; a++)
                        for (int64_t b = 0; b < th.n_real; b++)
                            for (int64_t c = 0; c < tw.n_real; c++) {
                                int64_t xi =
                                    ((id0 + a * g.d[0]) * g.in[1] + ih0 + b * g.d[1]) * g.in[2] +
                                    iw0 + c * g.d[2];
                                if (arg < 0 || xp[xi] > m) {
                                    m = xp[xi];
                                    arg = xi;
                                }
                                sum += xp[xi];
                                if (mode && !is_max && div > 0)
                                    dxp[xi] += dy[yo] / (double)div;
                            }
                    if (mode == 0)
                        y[yo] = is_max ? m : (div > 0 ? sum / (double)div : 0.0);
                    else if (is_max && arg >= 0)
                        dxp[arg] += dy[yo];
                }
            }
        }
    }
}

static void global_pool(ntp_train_state *s, const ntp_node *n, int mode)
{
    const ntp_tensor *xt = T_(0);
    int64_t planes = xt->shape.dim[0] * xt->shape.dim[1], inner = cnt(xt) / planes;
    bool is_max = n->op == NTP_OP_GLOBAL_MAXPOOL;
    const double *x = s->val[n->in[0]];
    double *y = s->val[n->out[0]], *dy = s->grad[n->out[0]];
    double *dx = mode ? s->grad[n->in[0]] : NULL;
    for (int64_t p = 0; p < planes; p++) {
        const double *xp = x + p * inner;
        double m = xp[0], sum = 0.0;
        int64_t arg = 0;
        for (int64_t i = 0; i < inner; i++) {
            if (xp[i] > m) {
                m = xp[i];
                arg = i;
            }
            sum += xp[i];
        }
        if (mode == 0)
            y[p] = is_max ? m : sum / (double)inner;
        else if (is_max)
            dx[p * inner + arg] += dy[p];
        else
            for (int64_t i = 0; i < inner; i++)
                dx[p * inner + i] += dy[p] / (double)inner;
    }
}

/* --- normalisation --------------------------------------------------------------- */

/* PyTorch's default momentum of the running statistics. */
#define NTP_BN_MOMENTUM 0.1

static void batchnorm(ntp_train_state *s, const ntp_node *n, int mode)
{
    const ntp_tensor *xt = T_(0);
    int64_t N = xt->shape.dim[0], C = xt->shape.dim[1], inner = cnt(xt) / (N * C);
    double M = (double)(N * inner);
    const double *x = s->val[n->in[0]], *gamma = s->val[n->w[0]], *beta = s->val[n->w[1]];
    double *mean = s->saved[n - s->g->nodes], *inv = mean + C;
    double *y = s->val[n->out[0]], *dy = s->grad[n->out[0]];
    for (int64_t c = 0; c < C; c++) {
        if (mode == 0) {
            double sum = 0.0, sq = 0.0;
            for (int64_t b = 0; b < N; b++)
                for (int64_t i = 0; i < inner; i++)
                    sum += x[(b * C + c) * inner + i];
            double mu = sum / M;
            for (int64_t b = 0; b < N; b++)
                for (int64_t i = 0; i < inner; i++) {
                    double d = x[(b * C + c) * inner + i] - mu;
                    sq += d * d;
                }
            double var = sq / M;
            mean[c] = mu;
            inv[c] = 1.0 / sqrt(var + n->a.epsilon);
            for (int64_t b = 0; b < N; b++)
                for (int64_t i = 0; i < inner; i++) {
                    int64_t j = (b * C + c) * inner + i;
                    y[j] = gamma[c] * (x[j] - mu) * inv[c] + beta[c];
                }
            double *rm = s->val[n->w[2]], *rv = s->val[n->w[3]];
            rm[c] = (1.0 - NTP_BN_MOMENTUM) * rm[c] + NTP_BN_MOMENTUM * mu;
            rv[c] =
                (1.0 - NTP_BN_MOMENTUM) * rv[c] + NTP_BN_MOMENTUM * (M > 1 ? sq / (M - 1.0) : var);
            continue;
        }
        double sdy = 0.0, sdyx = 0.0;
        for (int64_t b = 0; b < N; b++)
            for (int64_t i = 0; i < inner; i++) {
                int64_t j = (b * C + c) * inner + i;
                sdy += dy[j];
                sdyx += dy[j] * (x[j] - mean[c]) * inv[c];
            }
        if (mode == 2) {
            s->grad[n->w[0]][c] = sdyx;
            s->grad[n->w[1]][c] = sdy;
            continue;
        }
        /* dx = γ·inv/M · (M·dy − Σdy − x̂·Σ(dy·x̂)) */
        double *dx = s->grad[n->in[0]];
        for (int64_t b = 0; b < N; b++)
            for (int64_t i = 0; i < inner; i++) {
                int64_t j = (b * C + c) * inner + i;
                double xh = (x[j] - mean[c]) * inv[c];
                dx[j] += gamma[c] * inv[c] / M * (M * dy[j] - sdy - xh * sdyx);
            }
    }
}

static void layernorm(ntp_train_state *s, const ntp_node *n, int mode)
{
    const ntp_tensor *xt = T_(0);
    int64_t axis = n->a.axis < 0 ? n->a.axis + xt->shape.ndim : n->a.axis, D = 1;
    for (int d = (int)axis; d < xt->shape.ndim; d++)
        D *= xt->shape.dim[d];
    int64_t R = cnt(xt) / D;
    const double *x = s->val[n->in[0]], *gamma = s->val[n->w[0]], *beta = s->val[n->w[1]];
    double *mean = s->saved[n - s->g->nodes], *inv = mean + R;
    double *y = s->val[n->out[0]], *dy = s->grad[n->out[0]];
    if (mode == 2) {
        double *dg = s->grad[n->w[0]], *dbt = s->grad[n->w[1]];
        memset(dg, 0, (size_t)D * sizeof *dg);
        memset(dbt, 0, (size_t)D * sizeof *dbt);
        for (int64_t r = 0; r < R; r++)
            for (int64_t i = 0; i < D; i++) {
                dg[i] += dy[r * D + i] * (x[r * D + i] - mean[r]) * inv[r];
                dbt[i] += dy[r * D + i];
            }
        return;
    }
    for (int64_t r = 0; r < R; r++) {
        const double *xr = x + r * D;
        if (mode == 0) {
            double mu = 0.0, var = 0.0;
            for (int64_t i = 0; i < D; i++)
                mu += xr[i];
            mu /= (double)D;
            for (int64_t i = 0; i < D; i++)
                var += (xr[i] - mu) * (xr[i] - mu);
            var /= (double)D;
            mean[r] = mu;
            inv[r] = 1.0 / sqrt(var + n->a.epsilon);
            for (int64_t i = 0; i < D; i++)
                y[r * D + i] = (xr[i] - mu) * inv[r] * gamma[i] + beta[i];
            continue;
        }
        /* With g = dy·γ: dx = inv/D · (D·g − Σg − x̂·Σ(g·x̂)). */
        double sg = 0.0, sgx = 0.0;
        for (int64_t i = 0; i < D; i++) {
            double gi = dy[r * D + i] * gamma[i], xh = (xr[i] - mean[r]) * inv[r];
            sg += gi;
            sgx += gi * xh;
        }
        double *dx = s->grad[n->in[0]] + r * D;
        for (int64_t i = 0; i < D; i++) {
            double gi = dy[r * D + i] * gamma[i], xh = (xr[i] - mean[r]) * inv[r];
            dx[i] += inv[r] / (double)D * ((double)D * gi - sg - xh * sgx);
        }
    }
}

/* --- element-wise ------------------------------------------------------------------ */

static double sigm(double x)
{
    return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}

static double relu_(const ntp_attrs *a, double x, double *df)
{
    if (a->has_max && x > a->max) {
        *df = 0.0;
        return a->max;
    }
    *df = x > 0 ? 1.0 : 0.0;
    return x > 0 ? x : 0.0;
}
static double leaky_relu_(const ntp_attrs *a, double x, double *df)
{
    double al = (double)(float)a->leaky_relu.slope;
    *df = x > 0 ? 1.0 : al;
    return x > 0 ? x : al * x;
}
static double sigmoid_(const ntp_attrs *a, double x, double *df)
{
    double sg = sigm(x);
    *df = sg * (1.0 - sg);
    return sg;
}
static double tanh_(const ntp_attrs *a, double x, double *df)
{
    double t = tanh(x);
    *df = 1.0 - t * t;
    return t;
}
static double gelu_(const ntp_attrs *a, double x, double *df)
{
    double cdf = 0.5 * (1.0 + erf(x * 0.70710678118654752440));
    *df = cdf + x * exp(-0.5 * x * x) * 0.39894228040143267794;
    return x * cdf;
}
static double silu_(const ntp_attrs *a, double x, double *df)
{
    double sg = sigm(x);
    *df = sg * (1.0 + x * (1.0 - sg));
    return x * sg;
}
static double hardswish_(const ntp_attrs *a, double x, double *df)
{
    if (x <= -3.0) {
        *df = 0.0;
        return 0.0;
    }
    if (x >= 3.0) {
        *df = 1.0;
        return x;
    }
    *df = (2.0 * x + 3.0) / 6.0;
    return x * (x + 3.0) / 6.0;
}
static double clip_(const ntp_attrs *a, double x, double *df)
{
    double lo = (float)a->min, hi = (float)a->max;
    *df = x >= lo && x <= hi ? 1.0 : 0.0;
    return x < lo ? lo : x > hi ? hi : x;
}
static double softplus_(const ntp_attrs *a, double x, double *df)
{
    *df = sigm(x);
    return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}
static double exp_(const ntp_attrs *a, double x, double *df)
{
    *df = exp(x);
    return *df;
}
static double neg_(const ntp_attrs *a, double x, double *df)
{
    *df = -1.0;
    return -x;
}
static double abs_(const ntp_attrs *a, double x, double *df)
{
    *df = x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
    return fabs(x);
}

/* f(x) and, into *df, f'(x), of the element-wise ops with training
 * kernels. At a kink the derivative is PyTorch's: relu'(0) = 0, clip
 * passes the gradient on [min, max]. */
static double (*const unary_fns[NTP_OP_COUNT])(const ntp_attrs *a, double x, double *df) = {
    [NTP_OP_RELU] = relu_,
    [NTP_OP_LEAKY_RELU] = leaky_relu_,
    [NTP_OP_SIGMOID] = sigmoid_,
    [NTP_OP_TANH] = tanh_,
    [NTP_OP_GELU] = gelu_,
    [NTP_OP_SILU] = silu_,
    [NTP_OP_HARDSWISH] = hardswish_,
    [NTP_OP_CLIP] = clip_,
    [NTP_OP_SOFTPLUS] = softplus_,
    [NTP_OP_EXP] = exp_,
    [NTP_OP_NEG] = neg_,
    [NTP_OP_ABS] = abs_,
};

static double unary(const ntp_node *n, double x, double *df)
{
    if ((unsigned)n->op >= NTP_OP_COUNT || !unary_fns[n->op]) {
        *df = 0.0;
        return 0.0;
    }
    return unary_fns[n->op](&n->a, x, df);
}

static void eltwise(ntp_train_state *s, const ntp_node *n, int mode)
{
    int64_t m = cnt(T_(0));
    const double *x = s->val[n->in[0]];
    double *y = s->val[n->out[0]], *dy = s->grad[n->out[0]], df;
    if (mode == 0) {
        for (int64_t i = 0; i < m; i++)
            y[i] = unary(n, x[i], &df);
    } else {
        double *dx = s->grad[n->in[0]];
        for (int64_t i = 0; i < m; i++) {
            (void)unary(n, x[i], &df);
            dx[i] += dy[i] * df;
        }
    }
}

static void softmax(ntp_train_state *s, const ntp_node *n, int mode)
{
    const ntp_shape *sh = &T_(0)->shape;
    int64_t axis = n->a.axis < 0 ? n->a.axis + sh->ndim : n->a.axis;
    int64_t dim = sh->dim[axis], inner = 1, outer = 1;
    for (int d = (int)axis + 1; d < sh->ndim; d++)
        inner *= sh->dim[d];
    for (int d = 0; d < axis; d++)
        outer *= sh->dim[d];
    bool lg = n->op == NTP_OP_LOG_SOFTMAX;
    const double *x = s->val[n->in[0]];
    double *y = s->val[n->out[0]], *dy = s->grad[n->out[0]];
    double *dx = mode ? s->grad[n->in[0]] : NULL;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t base = o * dim * inner + in;
            if (mode == 0) {
                double mx = -INFINITY, sum = 0.0;
                for (int64_t c = 0; c < dim; c++)
                    if (x[base + c * inner] > mx)
                        mx = x[base + c * inner];
                for (int64_t c = 0; c < dim; c++)
                    sum += exp(x[base + c * inner] - mx);
                for (int64_t c = 0; c < dim; c++) {
                    double z = x[base + c * inner] - mx;
                    y[base + c * inner] = lg ? z - log(sum) : exp(z) / sum;
                }
                continue;
            }
            double dot = 0.0;
            for (int64_t c = 0; c < dim; c++)
                dot += lg ? dy[base + c * inner] : dy[base + c * inner] * y[base + c * inner];
            for (int64_t c = 0; c < dim; c++) {
                int64_t j = base + c * inner;
                dx[j] += lg ? dy[j] - exp(y[j]) * dot : y[j] * (dy[j] - dot);
            }
        }
}

/* darknet_head (ref-darknet.c): per image and anchor a block of
 * coords + 1 + classes channels; the logistic on x, y, the objectness (not
 * with background) and the classes (not with softmax, which takes a softmax
 * over each cell's classes, with background the objectness's channel
 * first), the other channels copied. The backward reads the output. */
static void darknet_head(ntp_train_state *s, const ntp_node *n, int mode)
{
    const ntp_attrs *a = &n->a;
    const ntp_shape *sh = &T_(0)->shape;
    int64_t per = a->coords + 1 + a->classes, cells = sh->dim[2] * sh->dim[3];
    bool obj = !a->background, soft = a->head_softmax;
    int64_t sm_from = a->coords + obj;
    const double *x = s->val[n->in[0]];
    double *y = s->val[n->out[0]], *dy = s->grad[n->out[0]];
    double *dx = mode ? s->grad[n->in[0]] : NULL;
    for (int64_t b = 0; b < sh->dim[0] * a->anchors; b++) {
        int64_t base = b * per * cells;
        for (int64_t e = 0; e < (soft ? sm_from : per); e++) {
            bool lg = e < 2 || (e == a->coords && obj) || (e > a->coords && !soft);
            for (int64_t c = 0; c < cells; c++) {
                int64_t j = base + e * cells + c;
                if (mode == 0)
                    y[j] = lg ? 1.0 / (1.0 + exp(-x[j])) : x[j];
                else
                    dx[j] += lg ? dy[j] * y[j] * (1.0 - y[j]) : dy[j];
            }
        }
        for (int64_t c = 0; soft && c < cells; c++) {
            int64_t j0 = base + sm_from * cells + c, len = per - sm_from;
            double mx = -INFINITY, sum = 0.0, dot = 0.0;
            for (int64_t k = 0; k < len; k++) {
                int64_t j = j0 + k * cells;
                if (mode == 0)
                    mx = x[j] > mx ? x[j] : mx;
                else
                    dot += dy[j] * y[j];
            }
            for (int64_t k = 0; k < len && mode == 0; k++)
                sum += exp(x[j0 + k * cells] - mx);
            for (int64_t k = 0; k < len; k++) {
                int64_t j = j0 + k * cells;
                if (mode == 0)
                    y[j] = exp(x[j] - mx) / sum;
                else
                    dx[j] += y[j] * (dy[j] - dot);
            }
        }
    }
}

/* Strides of `in` aligned to the dims of `out`, 0 where in broadcasts. */
static void bcast_strides(const ntp_shape *in, const ntp_shape *out, int64_t *st)
{
    int64_t mul = 1;
    for (int d = out->ndim - 1; d >= 0; d--) {
        int di = d - (out->ndim - in->ndim);
        if (di < 0 || in->dim[di] == 1)
            st[d] = 0;
        else {
            st[d] = mul;
            mul *= in->dim[di];
        }
    }
}

static void binary(ntp_train_state *s, const ntp_node *n, int mode)
{
    const ntp_shape *os = &O_->shape;
    int64_t st[NTP_MAX_INPUTS][NTP_MAX_DIMS], off[NTP_MAX_INPUTS] = {0}, co[NTP_MAX_DIMS] = {0};
    for (int i = 0; i < n->n_in; i++)
        bcast_strides(&T_(i)->shape, os, st[i]);
    int64_t m = cnt(O_);
    double *y = s->val[n->out[0]], *dy = s->grad[n->out[0]];
    for (int64_t e = 0; e < m; e++) {
        if (mode == 0) {
            double r = s->val[n->in[0]][off[0]];
            for (int i = 1; i < n->n_in; i++) {
                double v = s->val[n->in[i]][off[i]];
                r = n->op == NTP_OP_ADD ? r + v : n->op == NTP_OP_SUB ? r - v : r * v;
            }
            y[e] = r;
        } else {
            for (int i = 0; i < n->n_in; i++) {
                double *dx = s->grad[n->in[i]];
                if (!dx)
                    continue;
                double gi = dy[e];
                if (n->op == NTP_OP_SUB && i == 1)
                    gi = -gi;
                if (n->op == NTP_OP_MUL)
                    for (int j = 0; j < n->n_in; j++)
                        if (j != i)
                            gi *= s->val[n->in[j]][off[j]];
                dx[off[i]] += gi;
            }
        }
        /* Advance the coordinates and every input's offset. */
        for (int d = os->ndim - 1; d >= 0; d--) {
            co[d]++;
            for (int i = 0; i < n->n_in; i++)
                off[i] += st[i][d];
            if (co[d] < os->dim[d])
                break;
            for (int i = 0; i < n->n_in; i++)
                off[i] -= st[i][d] * co[d];
            co[d] = 0;
        }
    }
}

static void concat(ntp_train_state *s, const ntp_node *n, int mode)
{
    const ntp_shape *os = &O_->shape;
    int64_t axis = n->a.axis < 0 ? n->a.axis + os->ndim : n->a.axis, inner = 1, outer = 1;
    for (int d = (int)axis + 1; d < os->ndim; d++)
        inner *= os->dim[d];
    for (int d = 0; d < axis; d++)
        outer *= os->dim[d];
    int64_t row = os->dim[axis] * inner, at = 0;
    for (int i = 0; i < n->n_in; i++) {
        int64_t chunk = T_(i)->shape.dim[axis] * inner;
        double *x = s->val[n->in[i]], *dx = s->grad[n->in[i]];
        for (int64_t o = 0; o < outer; o++)
            for (int64_t j = 0; j < chunk; j++) {
                if (mode == 0)
                    s->val[n->out[0]][o * row + at + j] = x[o * chunk + j];
                else if (dx)
                    dx[o * chunk + j] += s->grad[n->out[0]][o * row + at + j];
            }
        at += chunk;
    }
}

static void copy(ntp_train_state *s, const ntp_node *n, int mode)
{
    int64_t m = cnt(O_);
    if (mode == 0) {
        memcpy(s->val[n->out[0]], s->val[n->in[0]], (size_t)m * sizeof(double));
        return;
    }
    for (int64_t i = 0; i < m; i++)
        s->grad[n->in[0]][i] += s->grad[n->out[0]][i];
}

/* Keep each element with probability 1 - p, scaled by 1/(1 - p): the mask
 * of a layer depends on the seed, the step and the layer alone. */
static void dropout(ntp_train_state *s, const ntp_node *n, int mode)
{
    int64_t m = cnt(O_);
    double *mask = s->saved[n - s->g->nodes];
    double p = s->dropout;
    if (mode == 0) {
        uint64_t st = s->seed * 0x9E3779B97F4A7C15ull + s->step * 0x100000001B3ull +
                      (uint64_t)(n - s->g->nodes);
        for (int64_t i = 0; i < m; i++) {
            bool keep = p <= 0.0 || ((double)ntp__rng_uniform(&st) >= p && p < 1.0);
            mask[i] = keep ? 1.0 / (1.0 - (p > 0.0 ? p : 0.0)) : 0.0;
            s->val[n->out[0]][i] = s->val[n->in[0]][i] * mask[i];
        }
        return;
    }
    for (int64_t i = 0; i < m; i++)
        s->grad[n->in[0]][i] += s->grad[n->out[0]][i] * mask[i];
}

static ntp_status embedding(ntp_ctx *ctx, ntp_train_state *s, const ntp_node *n, int mode)
{
    int64_t m = cnt(T_(0)), D = n->a.units, V = n->a.vocab;
    const double *idx = s->val[n->in[0]];
    if (mode == 2)
        memset(s->grad[n->w[0]], 0, (size_t)(V * D) * sizeof(double));
    for (int64_t i = 0; i < m; i++) {
        int64_t r = (int64_t)idx[i];
        if (r < 0 || r >= V)
            return ntp__node_error(ctx, s->g, n, NTP_STATUS_INVALID_ARGUMENT,
                                   "index %lld at position %lld is outside the table's %lld rows",
                                   (long long)r, (long long)i, (long long)V);
        for (int64_t d = 0; d < D; d++) {
            if (mode == 0)
                s->val[n->out[0]][i * D + d] = s->val[n->w[0]][r * D + d];
            else
                s->grad[n->w[0]][r * D + d] += s->grad[n->out[0]][i * D + d];
        }
    }
    return NTP_STATUS_OK;
}

/* MFCC is input preprocessing: its input is the audio (a graph input, no
 * gradient), so it runs forward only, in f32 through the same inlay kernel
 * `run` uses, and its features are then trained on in double. */
static ntp_status mfcc(ntp_ctx *ctx, ntp_train_state *s, const ntp_node *n, int mode)
{
    if (mode)
        return NTP_STATUS_OK;
    int64_t ni = cnt(T_(0)), no = cnt(O_);
    float *in = malloc((size_t)ni * sizeof *in + 1), *out = malloc((size_t)no * sizeof *out + 1);
    ntp_status st = NTP_STATUS_OK;
    if (!in || !out)
        st = ntp__node_error(ctx, s->g, n, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!st) {
        for (int64_t i = 0; i < ni; i++)
            in[i] = (float)s->val[n->in[0]][i];
        ntp_kargs k;
        memset(&k, 0, sizeof k);
        k.g = s->g;
        k.node = n;
        k.n_in = k.n_out = 1;
        k.in[0] = (ntp_buf){in, T_(0)->shape, NTP_DTYPE_F32};
        k.out[0] = (ntp_buf){out, O_->shape, NTP_DTYPE_F32};
        k.threads = 1;
        st = ntp__mfcc_run(ctx, &k);
    }
    for (int64_t i = 0; !st && i < no; i++)
        s->val[n->out[0]][i] = out[i];
    free(in);
    free(out);
    return st;
}

/* --- dispatch ----------------------------------------------------------------- */

/* The kernels of this file, by op; embedding and mfcc, which can fail, and
 * train-move.c's are called by name; the other ops with training kernels
 * are element-wise. */
static void (*const kernels[NTP_OP_COUNT])(ntp_train_state *s, const ntp_node *n, int mode) = {
    [NTP_OP_FC] = fc,
    [NTP_OP_MATMUL] = matmul,
    [NTP_OP_CONV] = conv,
    [NTP_OP_MAXPOOL] = pool,
    [NTP_OP_AVGPOOL] = pool,
    [NTP_OP_GLOBAL_MAXPOOL] = global_pool,
    [NTP_OP_GLOBAL_AVGPOOL] = global_pool,
    [NTP_OP_BATCHNORM] = batchnorm,
    [NTP_OP_LAYERNORM] = layernorm,
    [NTP_OP_SOFTMAX] = softmax,
    [NTP_OP_LOG_SOFTMAX] = softmax,
    [NTP_OP_ADD] = binary,
    [NTP_OP_SUB] = binary,
    [NTP_OP_MUL] = binary,
    [NTP_OP_CONCAT] = concat,
    [NTP_OP_RESHAPE] = copy,
    [NTP_OP_FLATTEN] = copy,
    [NTP_OP_MEMCPY] = copy,
    [NTP_OP_CONVERT] = copy,
    [NTP_OP_DROPOUT] = dropout,
    [NTP_OP_LSTM] = ntp__train_rnn,
    [NTP_OP_GRU] = ntp__train_rnn,
    [NTP_OP_RNN] = ntp__train_rnn,
    [NTP_OP_ATTENTION] = ntp__train_attention,
    [NTP_OP_DARKNET_HEAD] = darknet_head,
};

static ntp_status dispatch(ntp_ctx *ctx, ntp_train_state *s, const ntp_node *n, int mode)
{
    if (n->op == NTP_OP_EMBEDDING)
        return embedding(ctx, s, n, mode);
    if (n->op == NTP_OP_MFCC)
        return mfcc(ctx, s, n, mode);
    if ((unsigned)n->op < NTP_OP_COUNT && kernels[n->op]) {
        kernels[n->op](s, n, mode);
        return NTP_STATUS_OK;
    }
    if (ntp__train_move(s, n, mode))
        return NTP_STATUS_OK;
    if (ntp__train_supported(n->op)) {
        eltwise(s, n, mode);
        return NTP_STATUS_OK;
    }
    return ntp__node_error(ctx, s->g, n, NTP_STATUS_UNSUPPORTED, "%s has no training kernel",
                           ntp__op_name(n->op));
}

ntp_status ntp__train_forward(ntp_ctx *ctx, ntp_train_state *s, const ntp_node *n)
{
    return dispatch(ctx, s, n, 0);
}

void ntp__train_backward_data(ntp_train_state *s, const ntp_node *n)
{
    bool any = false;
    for (int i = 0; i < n->n_in; i++)
        any |= s->grad[n->in[i]] != NULL;
    if (any && n->op != NTP_OP_EMBEDDING)
        (void)dispatch(NULL, s, n, 1);
}

void ntp__train_backward_weights(ntp_train_state *s, const ntp_node *n)
{
    if (!ntp__train_has_weights(s->g, n))
        return;
    if (n->op == NTP_OP_EMBEDDING)
        (void)embedding(NULL, s, n, 2);
    else
        (void)dispatch(NULL, s, n, 2);
}
