/* lstm, gru and rnn through cuDNN's RNN API (cudnnRNNForward with a v8
 * RNN descriptor), one layer, unidirectional or bidirectional.
 *
 * Weights. ntprof's recurrent weights follow ONNX: W [dirs, G·H, I],
 * R [dirs, G·H, H], B [dirs, 2·G·H] (the input biases, then the recurrent
 * ones), gates in ONNX order. cuDNN keeps them in an opaque weight space;
 * cudnnGetRNNWeightParams gives, for pseudo-layer d (the direction) and
 * linear layer `lin`, the address, dims and strides of each gate's matrix
 * and bias. cuDNN's linear layers are the input GEMMs of its gates
 * (lin 0 .. G-1) and then the recurrent ones (G .. 2G-1), with gates in
 * cuDNN's order:
 *   LSTM  i, f, c (new memory), o     ONNX i, o, f, c
 *   GRU   r, z, h                     ONNX z, r, h
 *   RNN   the one gate.
 * The layer's weights are written into a host image of the weight space at
 * the offsets cuDNN reports and uploaded once. cuDNN's GRU is ONNX's with
 * linear_before_reset = 1 (h̃ = tanh(Wh·x + bWh + r⊙(Rh·h + bRh))), which is
 * the ntprof GRU.
 *
 * Directions: cuDNN has forward and bidirectional modes; a reverse layer
 * runs forward over the time-reversed input and reverses its output back
 * (gathers into the workspace). Outputs: the full sequence [T, N, dirs·H]
 * is cuDNN's y as is (bidirectional: forward in the first H features, as
 * ntprof's concat merge); a sum merge adds the two halves; sequence="last"
 * is cuDNN's final hidden state hy [dirs, N, H], interleaved to [N, dirs·H]
 * or summed.
 *
 * Types: f32 (FMA math unless TF32 was asked for) and f16 (tensor cores,
 * f32 math precision). cuDNN's RNNs take no bf16 here: a bf16 recurrent
 * layer stays on the reference backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "cuda-impl.h"

typedef struct rnn_priv {
    cudab_state *s;
    cudnnRNNDescriptor_t rnn;
    cudnnDropoutDescriptor_t drop;
    cudnnRNNDataDescriptor_t x, y;
    cudnnTensorDescriptor_t h;
    int32_t *seq; /* device: every sequence is T long */
    ntp_dtype t;
    int64_t T, N, I, H, dirs;
    bool reverse, last, sum;
    size_t work, off_x, off_y, off_h, off_work;
    size_t wsize;
} rnn_priv;

static void rnn_free(cudab_node *nd)
{
    rnn_priv *p = nd->priv;
    if (!p)
        return;
    if (p->rnn)
        cudnnDestroyRNNDescriptor(p->rnn);
    if (p->drop)
        cudnnDestroyDropoutDescriptor(p->drop);
    if (p->x)
        cudnnDestroyRNNDataDescriptor(p->x);
    if (p->y)
        cudnnDestroyRNNDataDescriptor(p->y);
    if (p->h)
        cudnnDestroyTensorDescriptor(p->h);
    if (p->seq)
        ntp__cuda_free(p->s, p->seq, p->N * (int64_t)sizeof(int32_t));
    free(p);
    nd->priv = NULL;
}

static int gates_of(ntp_op op)
{
    return op == NTP_OP_LSTM ? 4 : op == NTP_OP_GRU ? 3 : 1;
}

int ntp__cuda_rnn_onnx_gate(ntp_op op, int lin)
{
    /* cuDNN gate -> ONNX gate. */
    static const int lstm[4] = {0, 2, 3, 1}; /* i f c o  <-  i o f c */
    static const int gru[3] = {1, 0, 2};     /* r z h    <-  z r h */
    if (op == NTP_OP_LSTM && lin >= 0 && lin < 4)
        return lstm[lin];
    if (op == NTP_OP_GRU && lin >= 0 && lin < 3)
        return gru[lin];
    return lin;
}

bool ntp__cuda_rnn_supports(const ntp_graph *g, const ntp_node *n, ntp_dtype p)
{
    if (p == NTP_DTYPE_BF16 || n->n_in != 1 || n->n_out != 1)
        return false;
    const ntp_shape *x = &ntp__cin(g, n, 0)->shape;
    if (x->ndim != 3 || n->a.units < 1 || n->a.units > 0x7fffffff)
        return false;
    for (int d = 0; d < 3; d++)
        if (x->dim[d] < 1 || x->dim[d] > 0x7fffffff)
            return false;
    /* cuDNN's descriptors take int dims and strides. */
    int64_t dirs = n->a.direction == NTP_DIR_BIDIRECTIONAL ? 2 : 1;
    if (x->dim[1] * n->a.units * dirs > 0x7fffffff || x->dim[1] * x->dim[2] > 0x7fffffff)
        return false;
    return n->n_w == 2 || n->n_w == 3;
}

static size_t round256(size_t v)
{
    return (v + 255) / 256 * 256;
}

/* Write gate `onnx` of direction d of an ONNX matrix [dirs, G·H, cols]
 * into the host image of cuDNN's matrix at `off` with the strides cuDNN
 * reported. */
static void put_matrix(char *img, size_t off, const int *strides, const ntp_buf *w, int64_t d,
                       int64_t G, int64_t H, int64_t cols, int onnx, size_t es)
{
    const char *src = (const char *)w->data + (size_t)((d * G + onnx) * H * cols) * es;
    for (int64_t r = 0; r < H; r++)
        for (int64_t c = 0; c < cols; c++)
            memcpy(img + off + (size_t)(r * strides[1] + c * strides[2]) * es,
                   src + (size_t)(r * cols + c) * es, es);
}

/* Fill the weight space's host image from the layer's ONNX weights. */
static ntp_status pack_weights(ntp_ctx *ctx, cudab_state *s, const ntp_kargs *k, rnn_priv *p,
                               void *dev, char *img)
{
    int G = gates_of(k->node->op);
    size_t es = ntp_dtype_size(p->t);
    cudnnTensorDescriptor_t md = NULL, bd = NULL;
    cudnnStatus_t e = cudnnCreateTensorDescriptor(&md);
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnCreateTensorDescriptor(&bd);
    ntp_status st = NTP_STATUS_OK;
    for (int64_t d = 0; e == CUDNN_STATUS_SUCCESS && !st && d < p->dirs; d++)
        for (int lin = 0; e == CUDNN_STATUS_SUCCESS && !st && lin < 2 * G; lin++) {
            void *ma = NULL, *ba = NULL;
            e = cudnnGetRNNWeightParams(s->dnn, p->rnn, (int32_t)d, p->wsize, dev, lin, md, &ma, bd,
                                        &ba);
            if (e != CUDNN_STATUS_SUCCESS)
                break;
            bool rec = lin >= G;
            int onnx = ntp__cuda_rnn_onnx_gate(k->node->op, rec ? lin - G : lin);
            int64_t cols = rec ? p->H : p->I;
            if (ma) {
                cudnnDataType_t dt;
                int nb = 0, dims[3] = {0, 0, 0}, strides[3] = {0, 0, 0};
                e = cudnnGetTensorNdDescriptor(md, 3, &dt, &nb, dims, strides);
                if (e != CUDNN_STATUS_SUCCESS)
                    break;
                if (nb != 3 || dims[1] != p->H || dims[2] != cols) {
                    st = ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL,
                                         "cuDNN's matrix %d of direction %lld is %dx%d (rank %d); "
                                         "expected %lldx%lld",
                                         lin, (long long)d, dims[1], dims[2], nb, (long long)p->H,
                                         (long long)cols);
                    break;
                }
                put_matrix(img, (size_t)((char *)ma - (char *)dev), strides, &k->w[rec ? 1 : 0], d,
                           G, p->H, cols, onnx, es);
            }
            if (ba && k->n_w == 3) {
                /* B [dirs, 2·G·H]: the input biases, then the recurrent ones. */
                const char *src =
                    (const char *)k->w[2].data +
                    (size_t)(d * 2 * G * p->H + (rec ? G * p->H : 0) + onnx * p->H) * es;
                memcpy(img + ((char *)ba - (char *)dev), src, (size_t)p->H * es);
            }
        }
    if (md)
        cudnnDestroyTensorDescriptor(md);
    if (bd)
        cudnnDestroyTensorDescriptor(bd);
    if (e != CUDNN_STATUS_SUCCESS)
        return ntp__cuda_dnn(ctx, k, e, "weight layout");
    return st;
}

static ntp_status rnn_run(ntp_ctx *ctx, cudab_state *s, cudab_node *nd, const ntp_kargs *k)
{
    rnn_priv *p = nd->priv;
    char *ws = s->ws;
    size_t es = ntp_dtype_size(p->t);
    const void *x = nd->in[0].d;
    int r;
    if (p->reverse) {
        /* x_rev[t] = x[T-1-t]: a gather from the last step with a negative
         * time stride. */
        int64_t dims[3] = {p->T, p->N, p->I}, st[3] = {-p->N * p->I, p->I, 1};
        const char *last = (const char *)x + (size_t)((p->T - 1) * p->N * p->I) * es;
        if ((r = ntp__cudak_gather(s->stream, es, 3, dims, last, st, ws + p->off_x)))
            return ntp__cuda_rt(ctx, k, (cudaError_t)r, "reversing the input");
        x = ws + p->off_x;
    }
    bool y_direct = !p->last && !p->sum && !p->reverse;
    void *y = y_direct ? nd->out[0].d : ws + p->off_y;
    bool hy_direct = p->last && p->dirs == 1;
    void *hy = !p->last ? NULL : hy_direct ? nd->out[0].d : ws + p->off_h;
    cudnnStatus_t e = cudnnRNNForward(
        s->dnn, p->rnn, CUDNN_FWD_MODE_INFERENCE, p->seq, p->x, x, p->y, y, p->h, NULL, hy, p->h,
        NULL, NULL, p->wsize, nd->wp[0], p->work, p->work ? ws + p->off_work : NULL, 0, NULL);
    if (e != CUDNN_STATUS_SUCCESS)
        return ntp__cuda_dnn(ctx, k, e, "RNN forward");
    cudak_type kt = ntp__cuda_k_type(p->t);
    int64_t H = p->H, N = p->N, T = p->T;
    if (p->last && p->dirs == 2) {
        const char *h0 = (const char *)hy, *h1 = h0 + (size_t)(N * H) * es;
        if (p->sum) {
            int64_t dims[2] = {N, H}, st[2] = {H, 1};
            r = ntp__cudak_binary(s->stream, kt, CUDAK_ADD, 2, dims, h0, st, h1, st, nd->out[0].d);
        } else {
            /* hy [2, N, H] -> [N, 2, H]. */
            int64_t dims[3] = {N, 2, H}, st[3] = {H, N * H, 1};
            r = ntp__cudak_gather(s->stream, es, 3, dims, h0, st, nd->out[0].d);
        }
    } else if (!p->last && p->sum) {
        int64_t dims[3] = {T, N, H}, st[3] = {N * 2 * H, 2 * H, 1};
        r = ntp__cudak_binary(s->stream, kt, CUDAK_ADD, 3, dims, y, st, (char *)y + (size_t)H * es,
                              st, nd->out[0].d);
    } else if (!p->last && p->reverse) {
        int64_t dims[3] = {T, N, H}, st[3] = {-N * H, H, 1};
        r = ntp__cudak_gather(s->stream, es, 3, dims, (char *)y + (size_t)((T - 1) * N * H) * es,
                              st, nd->out[0].d);
    } else {
        r = 0;
    }
    if (r)
        return ntp__cuda_rt(ctx, k, (cudaError_t)r, "merging the directions");
    return ntp__cuda_epilogue(ctx, s, nd, k, p->t, nd->out[0].d, ntp_shape_numel(&k->out[0].shape),
                              NULL, 1, 1);
}

ntp_status ntp__cuda_rnn_prepare(ntp_ctx *ctx, cudab_state *s, ntp_kargs *k, cudab_node *nd)
{
    const ntp_node *n = k->node;
    rnn_priv *p = calloc(1, sizeof *p);
    if (!p)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    nd->priv = p;
    nd->free_priv = rnn_free;
    p->s = s;
    p->t = k->in[0].dtype;
    if ((p->t != NTP_DTYPE_F32 && p->t != NTP_DTYPE_F16) || k->out[0].dtype != p->t)
        return ntp__cuda_error(ctx, k, NTP_STATUS_UNSUPPORTED, "a recurrent layer stored as %s",
                               ntp_dtype_name(p->t));
    const ntp_shape *xs = &k->in[0].shape;
    p->T = xs->dim[0];
    p->N = xs->dim[1];
    p->I = xs->dim[2];
    p->H = n->a.units;
    p->dirs = n->a.direction == NTP_DIR_BIDIRECTIONAL ? 2 : 1;
    p->reverse = n->a.direction == NTP_DIR_REVERSE;
    p->last = n->a.last_step;
    p->sum = p->dirs == 2 && n->a.merge == NTP_MERGE_SUM;
    int G = gates_of(n->op);
    for (int i = 0; i < k->n_w; i++)
        if (k->w[i].dtype != p->t)
            return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL, "weight %d is %s", i,
                                   ntp_dtype_name(k->w[i].dtype));
    if (ntp_shape_numel(&k->w[0].shape) != p->dirs * G * p->H * p->I ||
        ntp_shape_numel(&k->w[1].shape) != p->dirs * G * p->H * p->H ||
        (k->n_w == 3 && ntp_shape_numel(&k->w[2].shape) != p->dirs * 2 * G * p->H))
        return ntp__cuda_error(ctx, k, NTP_STATUS_INTERNAL,
                               "weights do not match %lld gates of %lld", (long long)G,
                               (long long)p->H);
    cudnnRNNMode_t mode = n->op == NTP_OP_LSTM               ? CUDNN_LSTM
                          : n->op == NTP_OP_GRU              ? CUDNN_GRU
                          : n->a.rnn_act == NTP_RNN_ACT_RELU ? CUDNN_RNN_RELU
                                                             : CUDNN_RNN_TANH;
    cudnnDataType_t dt = ntp__cuda_dnn_type(p->t);
    cudnnMathType_t math = p->t == NTP_DTYPE_F16 ? CUDNN_TENSOR_OP_MATH
                           : s->tf32             ? CUDNN_DEFAULT_MATH
                                                 : CUDNN_FMA_MATH;
    cudnnStatus_t e = cudnnCreateDropoutDescriptor(&p->drop);
    /* No dropout at inference: a descriptor of rate 0 without states. */
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnSetDropoutDescriptor(p->drop, s->dnn, 0.0f, NULL, 0, 0);
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnCreateRNNDescriptor(&p->rnn);
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnSetRNNDescriptor_v8(p->rnn, CUDNN_RNN_ALGO_STANDARD, mode,
                                     k->n_w == 3 ? CUDNN_RNN_DOUBLE_BIAS : CUDNN_RNN_NO_BIAS,
                                     p->dirs == 2 ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL,
                                     CUDNN_LINEAR_INPUT, dt, CUDNN_DATA_FLOAT, math, (int32_t)p->I,
                                     (int32_t)p->H, (int32_t)p->H, 1, p->drop,
                                     CUDNN_RNN_PADDED_IO_DISABLED);
    int *lens = malloc((size_t)p->N * sizeof *lens);
    if (!lens)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    for (int64_t i = 0; i < p->N; i++)
        lens[i] = (int)p->T;
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnCreateRNNDataDescriptor(&p->x);
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnSetRNNDataDescriptor(p->x, dt, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, (int)p->T,
                                      (int)p->N, (int)p->I, lens, NULL);
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnCreateRNNDataDescriptor(&p->y);
    if (e == CUDNN_STATUS_SUCCESS)
        e = cudnnSetRNNDataDescriptor(p->y, dt, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, (int)p->T,
                                      (int)p->N, (int)(p->H * p->dirs), lens, NULL);
    if (e != CUDNN_STATUS_SUCCESS) {
        free(lens);
        return ntp__cuda_dnn(ctx, k, e, "RNN descriptors");
    }
    /* The state descriptor has exactly 3 dims [dirs, N, H], fully packed
     * (ntp__cuda_desc would pad it to 4). */
    int hd[3] = {(int)p->dirs, (int)p->N, (int)p->H}, hs[3] = {(int)(p->N * p->H), (int)p->H, 1};
    if ((e = cudnnCreateTensorDescriptor(&p->h)) == CUDNN_STATUS_SUCCESS)
        e = cudnnSetTensorNdDescriptor(p->h, dt, 3, hd, hs);
    ntp_status st =
        e == CUDNN_STATUS_SUCCESS ? NTP_STATUS_OK : ntp__cuda_dnn(ctx, k, e, "state descriptor");
    if (!st) {
        /* cudnnRNNForward wants the sequence lengths on the device too. */
        int32_t *l32 = (int32_t *)lens;
        st = ntp__cuda_upload(ctx, s, k, (void **)&p->seq, l32, p->N * (int64_t)sizeof(int32_t),
                              "sequence lengths");
    }
    free(lens);
    if (st)
        return st;
    size_t reserve = 0;
    if ((e = cudnnGetRNNWeightSpaceSize(s->dnn, p->rnn, &p->wsize)) != CUDNN_STATUS_SUCCESS ||
        (e = cudnnGetRNNTempSpaceSizes(s->dnn, p->rnn, CUDNN_FWD_MODE_INFERENCE, p->x, &p->work,
                                       &reserve)) != CUDNN_STATUS_SUCCESS)
        return ntp__cuda_dnn(ctx, k, e, "RNN sizes");
    /* The weight space: allocated first, so that cuDNN can report where in
     * it each matrix lies, then filled from a host image in one copy. */
    if ((st = ntp__cuda_alloc(ctx, s, k, &nd->w, (int64_t)p->wsize, "the RNN weight space")))
        return st;
    nd->w_bytes = (int64_t)p->wsize;
    s->weight_bytes += nd->w_bytes;
    nd->wp[0] = nd->w;
    char *img = calloc(1, p->wsize + 1);
    if (!img)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    st = pack_weights(ctx, s, k, p, nd->w, img);
    if (!st) {
        cudaError_t ce = cudaMemcpy(nd->w, img, p->wsize, cudaMemcpyHostToDevice);
        if (ce != cudaSuccess)
            st = ntp__cuda_rt(ctx, k, ce, "uploading the weight space");
    }
    free(img);
    if (st)
        return st;
    size_t es = ntp_dtype_size(p->t), off = 0;
    if (p->reverse) {
        p->off_x = off;
        off += round256((size_t)(p->T * p->N * p->I) * es);
    }
    if (p->last || p->sum || p->reverse) {
        p->off_y = off;
        off += round256((size_t)(p->T * p->N * p->H * p->dirs) * es);
    }
    if (p->last && p->dirs == 2) {
        p->off_h = off;
        off += round256((size_t)(p->dirs * p->N * p->H) * es);
    }
    p->off_work = off;
    nd->ws = off + p->work;
    nd->run = rnn_run;
    snprintf(nd->impl, sizeof nd->impl, "cudnn:rnn_standard:%s%s",
             p->t == NTP_DTYPE_F16 ? "f16"
             : s->tf32             ? "tf32"
                                   : "f32",
             p->reverse ? "+reverse"
             : p->sum   ? "+sum"
                        : "");
    return NTP_STATUS_OK;
}
