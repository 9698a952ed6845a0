/* Shapes and costs of recurrent layers (time-major [T, N, I]). */
#include "op-common.h"

static int gates(ntp_op op)
{
    return op == NTP_OP_LSTM ? 4 : op == NTP_OP_GRU ? 3 : 1;
}

ntp_status ntp__shape_rnn(ntp_ctx *ctx, ntp_graph *g, ntp_node *n)
{
    ntp_status st = ntp__need_rank(ctx, g, n, 0, 3, 3, "[T,N,features] (time-major)");
    if (st)
        return st;
    const ntp_shape *s = &ntp__in(g, n, 0)->shape;
    int64_t T = s->dim[0], N = s->dim[1], I = s->dim[2], H = n->a.units;
    if (H <= 0)
        return NODE_ERR(NTP_STATUS_INVALID_ARGUMENT, "units must be positive, got %lld",
                        (long long)H);
    int64_t dirs = n->a.direction == NTP_DIR_BIDIRECTIONAL ? 2 : 1;
    int64_t width = dirs == 2 && n->a.merge == NTP_MERGE_CONCAT ? 2 * H : H;
    ntp_shape out = n->a.last_step ? shape2(N, width) : shape3(T, N, width);
    set_out(g, n, 0, &out);
    int64_t G = gates(n->op);
    ntp_shape W = shape3(dirs, G * H, I), R = shape3(dirs, G * H, H), B = shape2(dirs, 2 * G * H);
    if ((st = ntp__node_add_weight(ctx, g, n, "W", NTP_TENSOR_WEIGHT, &W)) ||
        (st = ntp__node_add_weight(ctx, g, n, "R", NTP_TENSOR_WEIGHT, &R)))
        return st;
    if (n->a.bias)
        st = ntp__node_add_weight(ctx, g, n, "B", NTP_TENSOR_WEIGHT, &B);
    return st;
}

/* Weight k of n in declaration order (W, R, B: ntp__shape_rnn), NULL if
 * it has none. */
static const ntp_tensor *weight(const ntp_graph *g, const ntp_node *n, int k)
{
    return k < n->n_w ? &g->tensors[n->w[k]] : NULL;
}

/* A recurrent layer is two computations under different roofs. The input
 * GEMM multiplies every time step's input by W at once (T*N rows: the
 * weights are read once, like an fc layer's) and adds the biases. The
 * recurrent GEMV multiplies each step's hidden state by R, one step after
 * the other because each needs the previous step's output: R is read again
 * at every step (T times per direction), at batch N an intensity of about
 * 2N FLOP per weight element (0.5 FLOP/B for batch 1 in f32), and it does
 * the gates' element-wise work. The parts' FLOPs add up to the layer's;
 * their bytes are the layer's minimal traffic plus the T - 1 re-reads of
 * R (docs/analysis.md). */
int ntp__cost_parts(const ntp_graph *g, const ntp_node *n, ntp_cost_part *parts)
{
    if (n->op != NTP_OP_LSTM && n->op != NTP_OP_GRU && n->op != NTP_OP_RNN)
        return 0;
    const ntp_shape *s = &ntp__cin(g, n, 0)->shape;
    int64_t T = s->dim[0], N = s->dim[1], I = s->dim[2], H = n->a.units, G = gates(n->op);
    int64_t dirs = n->a.direction == NTP_DIR_BIDIRECTIONAL ? 2 : 1;
    int64_t steps = smul(dirs, smul(T, N));
    ntp_cost c;
    ntp__cost_rnn(g, n, &c);
    const ntp_tensor *W = weight(g, n, 0), *R = weight(g, n, 1);
    const ntp_tensor *B = n->a.bias ? weight(g, n, 2) : NULL;
    int64_t in_flops =
        sadd(smul(2, smul(steps, smul(G * H, I))), n->a.bias ? smul(steps, 2 * G * H) : 0);
    int64_t in_bytes = ntp__tensor_bytes(ntp__cin(g, n, 0));
    in_bytes = sadd(in_bytes, W ? ntp__tensor_bytes(W) : 0);
    in_bytes = sadd(in_bytes, B ? ntp__tensor_bytes(B) : 0);
    int64_t out_bytes = 0;
    for (int k = 0; k < n->n_out; k++)
        out_bytes = sadd(out_bytes, ntp__tensor_bytes(ntp__cout(g, n, k)));
    int64_t r_bytes = R ? ntp__tensor_bytes(R) : 0;
    parts[0] = (ntp_cost_part){"input GEMM", in_flops, in_bytes, 0};
    parts[1] = (ntp_cost_part){"recurrent GEMV", c.flops - in_flops,
                               sadd(smul(T, r_bytes), out_bytes), r_bytes / dirs};
    return 2;
}

void ntp__cost_rnn(const ntp_graph *g, const ntp_node *n, ntp_cost *c)
{
    const ntp_shape *s = &ntp__cin(g, n, 0)->shape;
    int64_t T = s->dim[0], N = s->dim[1], I = s->dim[2], H = n->a.units, G = gates(n->op);
    int64_t dirs = n->a.direction == NTP_DIR_BIDIRECTIONAL ? 2 : 1;
    int64_t steps = smul(dirs, smul(T, N));
    c->macs = smul(steps, smul(G * H, I + H));
    /* Element-wise work per hidden unit and step (docs/ops.md): LSTM 3
     * sigmoids + 2 tanh (4 each) + cell and hidden updates (4) = 24; GRU 2
     * sigmoids + tanh + reset product + update (4) = 16; RNN one activation. */
    int64_t ew = n->op == NTP_OP_LSTM  ? 24
                 : n->op == NTP_OP_GRU ? 16
                                       : (n->a.rnn_act == NTP_RNN_ACT_RELU ? 1 : 4);
    int64_t bias = n->a.bias ? 2 * G * H : 0;
    int64_t merge = dirs == 2 && n->a.merge == NTP_MERGE_SUM ? smul(T, N * H) : 0;
    c->flops = sadd(sadd(smul(2, c->macs), smul(steps, ew * H + bias)), merge);
}
