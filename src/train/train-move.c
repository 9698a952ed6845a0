/* Training forward and backward of the data-movement layers and of the
 * transposed convolution, in double (docs/train.md): transpose (the
 * gradient goes back through the inverse permutation), split (each output's
 * gradient into its slice), pad (constant: the inner block; edge and
 * reflect: every output position adds into the input element it copied)
 * and deconv (the adjoint of conv: its backward-data is a convolution, its
 * weight gradient the same correlation as conv's with the roles of input
 * and output exchanged). mode 0 forward, 1 backward-data (+=), 2
 * backward-weights (=). */
#include <string.h>

#include "train-impl.h"

#define T_(i) (&s->g->tensors[n->in[i]])
#define O_(i) (&s->g->tensors[n->out[i]])

static int64_t cnt(const ntp_tensor *t)
{
    return ntp_shape_numel(&t->shape);
}

static void strides_of(const ntp_shape *sh, int64_t *st)
{
    int64_t m = 1;
    for (int d = sh->ndim - 1; d >= 0; d--) {
        st[d] = m;
        m *= sh->dim[d];
    }
}

/* y[o] = x[perm-mapped o]; backward dx[...] += dy[o]. */
static void transpose(ntp_train_state *s, const ntp_node *n, int mode)
{
    const ntp_shape *in = &T_(0)->shape, *out = &O_(0)->shape;
    int r = in->ndim;
    int64_t ist[NTP_MAX_DIMS], src[NTP_MAX_DIMS], idx[NTP_MAX_DIMS] = {0};
    strides_of(in, ist);
    for (int d = 0; d < r; d++)
        src[d] = ist[n->a.n_perm == 0 ? r - 1 - d : n->a.perm[d]];
    int64_t m = cnt(O_(0)), off = 0;
    const double *x = s->val[n->in[0]], *dy = s->grad[n->out[0]];
    double *y = s->val[n->out[0]], *dx = s->grad[n->in[0]];
    for (int64_t o = 0; o < m; o++) {
        if (mode == 0)
            y[o] = x[off];
        else
            dx[off] += dy[o];
        for (int d = r - 1; d >= 0; d--) {
            off += src[d];
            if (++idx[d] < out->dim[d])
                break;
            off -= src[d] * idx[d];
            idx[d] = 0;
        }
    }
}

static void split(ntp_train_state *s, const ntp_node *n, int mode)
{
    const ntp_shape *is = &T_(0)->shape;
    int64_t axis = n->a.axis < 0 ? n->a.axis + is->ndim : n->a.axis, inner = 1, outer = 1;
    for (int d = (int)axis + 1; d < is->ndim; d++)
        inner *= is->dim[d];
    for (int d = 0; d < axis; d++)
        outer *= is->dim[d];
    int64_t row = is->dim[axis] * inner, at = 0;
    double *x = s->val[n->in[0]], *dx = s->grad[n->in[0]];
    for (int k = 0; k < n->n_out; k++) {
        int64_t chunk = O_(k)->shape.dim[axis] * inner;
        double *y = s->val[n->out[k]], *dy = s->grad[n->out[k]];
        for (int64_t o = 0; o < outer; o++)
            for (int64_t j = 0; j < chunk; j++) {
                if (mode == 0)
                    y[o * chunk + j] = x[o * row + at + j];
                else if (dy)
                    dx[o * row + at + j] += dy[o * chunk + j];
            }
        at += chunk;
    }
}

static void pad(ntp_train_state *s, const ntp_node *n, int mode)
{
    const ntp_shape *in = &T_(0)->shape, *out = &O_(0)->shape;
    int r = in->ndim;
    int64_t ist[NTP_MAX_DIMS], idx[NTP_MAX_DIMS] = {0};
    strides_of(in, ist);
    int64_t m = cnt(O_(0));
    const double *x = s->val[n->in[0]], *dy = s->grad[n->out[0]];
    double *y = s->val[n->out[0]], *dx = s->grad[n->in[0]];
    for (int64_t o = 0; o < m; o++) {
        int64_t off = 0;
        for (int d = 0; d < r && off >= 0; d++) {
            int64_t i = ntp__pad_src(idx[d], n->a.pads[d], in->dim[d], n->a.pad_mode);
            off = i < 0 ? -1 : off + i * ist[d];
        }
        if (mode == 0)
            y[o] = off < 0 ? n->a.value : x[off];
        else if (off >= 0)
            dx[off] += dy[o];
        for (int d = r - 1; d >= 0; d--) {
            if (++idx[d] < out->dim[d])
                break;
            idx[d] = 0;
        }
    }
}

/* Transposed convolution: every input element x[c, i] scatters
 * x·W[c, f, k] into y[f, i·stride − pad + k·dilation]. W is [C, F/G, k...]. */
static void deconv(ntp_train_state *s, const ntp_node *n, int mode)
{
    const ntp_shape *xs = &T_(0)->shape, *ys = &O_(0)->shape;
    int nk = xs->ndim - 2;
    int64_t N = xs->dim[0], C = xs->dim[1], F = ys->dim[1];
    int64_t G = n->a.groups > 0 ? n->a.groups : 1, Cg = C / G, Fg = F / G;
    int64_t in[3], out[3], k[3], st[3], dl[3], p[3], in_sz = 1, out_sz = 1, k_sz = 1;
    for (int i = 0; i < 3; i++) {
        int j = i - (3 - nk);
        in[i] = j >= 0 ? xs->dim[2 + j] : 1;
        out[i] = j >= 0 ? ys->dim[2 + j] : 1;
        k[i] = j >= 0 ? n->a.kernel[j] : 1;
        st[i] = j >= 0 ? n->a.stride[j] : 1;
        dl[i] = j >= 0 ? n->a.dilation[j] : 1;
        p[i] = j >= 0 ? n->a.pad[j] : 0;
        in_sz *= in[i];
        out_sz *= out[i];
        k_sz *= k[i];
    }
    const double *x = s->val[n->in[0]], *W = s->val[n->w[0]];
    const double *b = n->n_w > 1 ? s->val[n->w[1]] : NULL;
    double *y = s->val[n->out[0]], *dy = s->grad[n->out[0]];
    double *dx = mode == 1 ? s->grad[n->in[0]] : NULL;
    double *dW = mode == 2 ? s->grad[n->w[0]] : NULL;
    if (mode == 0)
        for (int64_t im = 0; im < N; im++)
            for (int64_t f = 0; f < F; f++)
                for (int64_t o = 0; o < out_sz; o++)
                    y[(im * F + f) * out_sz + o] = b ? b[f] : 0.0;
    if (dW) {
        memset(dW, 0, (size_t)(C * Fg * k_sz) * sizeof *dW);
        if (b) {
            double *db = s->grad[n->w[1]];
            memset(db, 0, (size_t)F * sizeof *db);
            for (int64_t im = 0; im < N; im++)
                for (int64_t f = 0; f < F; f++)
                    for (int64_t o = 0; o < out_sz; o++)
                        db[f] += dy[(im * F + f) * out_sz + o];
        }
    }
    for (int64_t im = 0; im < N; im++)
        for (int64_t c = 0; c < C; c++) {
            int64_t grp = c / Cg;
            for (int64_t id = 0; id < in[0]; id++)
                for (int64_t ih = 0; ih < in[1]; ih++)
                    for (int64_t iw = 0; iw < in[2]; iw++) {
                        int64_t xi = (im * C + c) * in_sz + (id * in[1] + ih) * in[2] + iw;
                        double xv = x[xi], acc = 0.0;
                        for (int64_t fg = 0; fg < Fg; fg++) {
                            int64_t f = grp * Fg + fg;
                            const double *Wc = W + (c * Fg + fg) * k_sz;
                            double *dWc = dW ? dW + (c * Fg + fg) * k_sz : NULL;
                            for (int64_t kd = 0; kd < k[0]; kd++) {
                                int64_t od = id * st[0] - p[0] + kd * dl[0];
                                if (od < 0 || od >= out[0])
                                    continue;
                                for (int64_t kh = 0; kh < k[1]; kh++) {
                                    int64_t oh = ih * st[1] - p[1] + kh * dl[1];
                                    if (oh < 0 || oh >= out[1])
                                        continue;
                                    for (int64_t kw = 0; kw < k[2]; kw++) {
                                        int64_t ow = iw * st[2] - p[2] + kw * dl[2];
                                        if (ow < 0 || ow >= out[2])
                                            continue;
                                        int64_t yo = (im * F + f) * out_sz +
                                                     (od * out[1] + oh) * out[2] + ow;
                                        int64_t wi = (kd * k[1] + kh) * k[2] + kw;
                                        if (mode == 0)
                                            y[yo] += xv * Wc[wi];
                                        else if (mode == 1)
                                            acc += dy[yo] * Wc[wi];
                                        else
                                            dWc[wi] += dy[yo] * xv;
                                    }
                                }
                            }
                        }
                        if (mode == 1)
                            dx[xi] += acc;
                    }
        }
}

/* The kernels of this file, by op. */
static void (*const movers[NTP_OP_COUNT])(ntp_train_state *s, const ntp_node *n, int mode) = {
    [NTP_OP_TRANSPOSE] = transpose,
    [NTP_OP_SPLIT] = split,
    [NTP_OP_PAD] = pad,
    [NTP_OP_DECONV] = deconv,
};

bool ntp__train_move(ntp_train_state *s, const ntp_node *n, int mode)
{
    if ((unsigned)n->op >= NTP_OP_COUNT || !movers[n->op])
        return false;
    movers[n->op](s, n, mode);
    return true;
}
