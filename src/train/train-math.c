/* Losses, optimizers and the FLOPs of training (docs/train.md). The
 * optimizers follow PyTorch 1.13's torch.optim exactly: SGD's momentum
 * buffer starts as the first gradient (dampening 0, no Nesterov), Adam
 * divides by sqrt(v)/sqrt(1-β2^t) + ε and steps by lr/(1-β1^t). */
#include <math.h>
#include <string.h>

#include "train-impl.h"

double ntp__train_loss(ntp_loss loss, const double *x, const double *labels, int64_t rows,
                       int64_t classes, int64_t n, double *dx)
{
    double total = 0.0;
    if (loss == NTP_LOSS_MSE) {
        for (int64_t i = 0; i < n; i++) {
            double d = x[i] - labels[i];
            total += d * d;
            dx[i] = 2.0 * d / (double)n;
        }
        return total / (double)n;
    }
    /* Cross-entropy, stable: logsumexp around the row's maximum. */
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * classes;
        double mx = -INFINITY, sum = 0.0;
        for (int64_t c = 0; c < classes; c++)
            if (xr[c] > mx)
                mx = xr[c];
        for (int64_t c = 0; c < classes; c++)
            sum += exp(xr[c] - mx);
        int64_t y = (int64_t)labels[r];
        total += mx + log(sum) - xr[y];
        for (int64_t c = 0; c < classes; c++)
            dx[r * classes + c] = (exp(xr[c] - mx) / sum - (c == y ? 1.0 : 0.0)) / (double)rows;
    }
    return total / (double)rows;
}

void ntp__train_update(const ntp_optim *o, int64_t t, double *p, const double *g, double *m,
                       double *v, int64_t cnt)
{
    switch (o->kind) {
    case NTP_OPTIMIZER_SGD:
        for (int64_t i = 0; i < cnt; i++)
            p[i] -= o->lr * g[i];
        break;
    case NTP_OPTIMIZER_MOMENTUM:
        for (int64_t i = 0; i < cnt; i++) {
            m[i] = t == 1 ? g[i] : o->momentum * m[i] + g[i];
            p[i] -= o->lr * m[i];
        }
        break;
    case NTP_OPTIMIZER_ADAM: {
        double bc1 = 1.0 - pow(o->beta1, (double)t), bc2 = 1.0 - pow(o->beta2, (double)t);
        double step = o->lr / bc1, bc2s = sqrt(bc2);
        for (int64_t i = 0; i < cnt; i++) {
            m[i] = o->beta1 * m[i] + (1.0 - o->beta1) * g[i];
            v[i] = o->beta2 * v[i] + (1.0 - o->beta2) * g[i] * g[i];
            p[i] -= step * m[i] / (sqrt(v[i]) / bc2s + o->eps);
        }
        break;
    }
    case NTP_OPTIMIZER_COUNT: break;
    }
}

/* --- FLOPs ------------------------------------------------------------------- */

/* Per value and step: SGD p -= lr·g (2); momentum adds buf = μ·buf + g (4);
 * Adam two moments (3 + 4), the step (divide, sqrt, divide, add, multiply,
 * subtract: 6). */
static int64_t update_flops(ntp_optimizer o)
{
    return o == NTP_OPTIMIZER_ADAM ? 13 : o == NTP_OPTIMIZER_MOMENTUM ? 4 : 2;
}

void ntp__train_flops(const ntp_graph *g, const ntp_node *n, bool data, ntp_optimizer opt,
                      int64_t flops[NTP_TRAIN_PHASE_COUNT])
{
    ntp_cost c = {0, 0};
    ntp__op_cost(g, n, &c);
    int64_t out = ntp_shape_numel(&g->tensors[n->out[0]].shape);
    int64_t in = ntp_shape_numel(&g->tensors[n->in[0]].shape);
    int64_t fwd = c.flops, bd = 0, bw = 0, params = 0;
    for (int k = 0; k < n->n_w; k++)
        if (g->tensors[n->w[k]].kind == NTP_TENSOR_WEIGHT)
            params += ntp_shape_numel(&g->tensors[n->w[k]].shape);
    /* By the op's backward class (op-table.h, BACKWARD). */
    switch (ntp__op_backward(n->op)) {
    case NTP_OP_BACKWARD_GEMM:
        /* dX = Wᵀ·dY and dW = dY·Xᵀ are each as many MACs as Y = W·X. */
        bd = 2 * c.macs;
        bw = 2 * c.macs + (n->a.bias ? out : 0);
        break;
    case NTP_OP_BACKWARD_MATMUL: bd = 4 * c.macs; break;
    case NTP_OP_BACKWARD_EMBEDDING: bw = out; break;
    case NTP_OP_BACKWARD_ATTENTION: {
        /* Backward-data: dC = dY·Wo, the scores' and context's gradients
         * (twice the forward's S·S_kv·D work) and dX through the three
         * projections; backward-weights: the four weight gradients, as
         * many MACs as the projections. */
        const ntp_shape *q = &g->tensors[n->in[0]].shape;
        int64_t N = q->dim[0], S = q->dim[1], D = q->dim[2];
        int64_t Skv = n->n_in == 3 ? g->tensors[n->in[1]].shape.dim[1] : S;
        int64_t proj = N * (2 * S * D * D + 2 * Skv * D * D);
        bd = 2 * proj + 8 * N * S * Skv * D;
        bw = 2 * proj + (n->n_w == 4 ? N * (2 * S + 2 * Skv) * D : 0);
        break;
    }
    case NTP_OP_BACKWARD_RNN: {
        /* The walk back through time (dh₋₁ = dG·R and the gates'
         * derivatives: about the forward's recurrent and element-wise
         * work) plus dX = dG·W go to backward-data; dW, dR (as many MACs
         * as the forward) and both biases to backward-weights. */
        const ntp_shape *xs = &g->tensors[n->in[0]].shape;
        int64_t G = n->op == NTP_OP_LSTM ? 4 : n->op == NTP_OP_GRU ? 3 : 1;
        int64_t dirs = n->a.direction == NTP_DIR_BIDIRECTIONAL ? 2 : 1;
        int64_t steps = dirs * xs->dim[0] * xs->dim[1];
        bd = fwd;
        bw = 2 * c.macs + (n->a.bias ? 2 * steps * G * n->a.units : 0);
        break;
    }
    case NTP_OP_BACKWARD_NORM:
        /* x̂ again, Σdy and Σdy·x̂ (weights); then dx per element (data). */
        bw = 5 * in;
        bd = 5 * in;
        break;
    case NTP_OP_BACKWARD_SOFTMAX: bd = 4 * out; break;
    case NTP_OP_BACKWARD_POOL: bd = fwd > in ? fwd : in; break;
    case NTP_OP_BACKWARD_SUM: bd = out * n->n_in; break;
    case NTP_OP_BACKWARD_PRODUCT: bd = out * n->n_in * n->n_in; break;
    case NTP_OP_BACKWARD_DROPOUT:
        fwd = out;
        bd = out;
        break;
    case NTP_OP_BACKWARD_MOVE: bd = 0; break;
    case NTP_OP_BACKWARD_UNARY:
        /* Element-wise: the derivative (about as costly as the function) and
         * the product with dy. */
        bd = (ntp__op_unary_flops(n->op) + 1) * out;
        break;
    case NTP_OP_BACKWARD_FORWARD: bd = fwd; break;
    }
    flops[NTP_TRAIN_FORWARD] = fwd;
    flops[NTP_TRAIN_BACKWARD_DATA] = data ? bd : 0;
    flops[NTP_TRAIN_BACKWARD_WEIGHTS] = bw;
    flops[NTP_TRAIN_UPDATE] = params * update_flops(opt);
}

void ntp__train_loss_flops(ntp_loss loss, int64_t n, int64_t flops[NTP_TRAIN_PHASE_COUNT])
{
    memset(flops, 0, NTP_TRAIN_PHASE_COUNT * sizeof *flops);
    /* mse: subtract, square, add (3) and 2·d/n (2); cross-entropy: max,
     * subtract, exp, add (7 with exp at 4) and p - onehot, /rows (2). */
    flops[NTP_TRAIN_FORWARD] = (loss == NTP_LOSS_MSE ? 3 : 7) * n;
    flops[NTP_TRAIN_BACKWARD_DATA] = 2 * n;
}
