/* Darknet's recurrent .cfg sections (docs/darknet.md; the reader:
 * darknet-cfg.c; [local] is in darknet-layers.c).
 *
 * Darknet's [rnn], [gru] and [crnn] are its own cells, built from inner
 * connected (or 3x3 convolutional) layers each with its own batch norm and
 * activation, and none is the standard cell ntprof's rnn and gru ops
 * compute. So they are unrolled over [net] time_steps as Darknet runs them
 * (forward_rnn_layer, forward_gru_layer, forward_crnn_layer): the layers
 * that read the input run once over all steps x batch rows (rows are
 * independent), the recurrent ones once per step on the state, the steps
 * sharing their weights, and the states start at zero (a fresh network;
 * Darknet keeps them between calls at inference). [lstm] is the standard
 * LSTM and becomes ntprof's lstm op. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "darknet-cfg-impl.h"
#include "graph/op-onnx-impl.h"

/* One inner layer of a recurrent section: an fc, or Darknet's 3x3, stride 1,
 * pad 1 convolution ([crnn]), with its batch norm and activation. */
typedef struct unit {
    ntp_op op;
    int64_t units, in; /* outputs (filters) and inputs (channels) */
    bool bn;
    ntp_op act; /* NTP_OP_COUNT: linear */
    const char *act_name;
} unit;

static void share_weights(reader *r, int from, int to)
{
    ntp_node *a = &r->g->nodes[from], *b = &r->g->nodes[to];
    memcpy(b->w, a->w, sizeof b->w);
    b->n_w = a->n_w;
}

/* Inner layer u on tensor *t, named BASE (BASE_bn, BASE_<act>); *t becomes
 * its output. With share >= 0 it uses node share's weights (and share_bn's);
 * with own, it makes its own for later steps to share. */
static ntp_status unit_node(reader *r, const dn_sect *s, const unit *u, const char *base, int *t,
                            int share, int share_bn, bool own, int *node, int *bn_node)
{
    ntp_status st;
    int ni = ntp__dn_add_op(r, base, u->op, s->line, t, 1);
    if (ni < 0)
        return ntp__dn_oom(r);
    ntp_attrs *a = &r->g->nodes[ni].a;
    if (u->op == NTP_OP_FC) {
        a->units = u->units;
    } else {
        a->filters = u->units;
        a->n_kernel = a->n_stride = a->n_pad = 1;
        a->kernel[0] = 3;
        a->stride[0] = 1;
        a->pad[0] = 1;
        a->pad_kind = NTP_PAD_EXPLICIT;
        a->groups = 1;
    }
    a->bias = !u->bn;
    *t = r->g->nodes[ni].out[0];
    *node = ni;
    *bn_node = -1;
    int last = ni;
    if ((u->bn && (st = ntp__dn_add_bn(r, s->line, base, t, &last, bn_node))) ||
        (st = ntp__dn_act_node(r, s->line, base, u->act_name, u->act, t, &last)))
        return st;
    if (share >= 0) {
        share_weights(r, share, ni);
        if (u->bn)
            share_weights(r, share_bn, *bn_node);
        return NTP_STATUS_OK;
    }
    if (!own)
        return NTP_STATUS_OK;
    ntp_shape w = u->op == NTP_OP_FC ? ntp__dn_shp(2, u->units, u->in, 0, 0)
                                     : ntp__dn_shp(4, u->units, u->in, 3, 3),
              c = ntp__dn_shp(1, u->units, 0, 0, 0);
    if ((st = ntp__dn_own_weight(r, ni, "W", NTP_TENSOR_WEIGHT, w)) ||
        (!u->bn && (st = ntp__dn_own_weight(r, ni, "b", NTP_TENSOR_WEIGHT, c))))
        return st;
    if (u->bn && ((st = ntp__dn_own_weight(r, *bn_node, "scale", NTP_TENSOR_WEIGHT, c)) ||
                  (st = ntp__dn_own_weight(r, *bn_node, "bias", NTP_TENSOR_WEIGHT, c)) ||
                  (st = ntp__dn_own_weight(r, *bn_node, "mean", NTP_TENSOR_BUFFER, c)) ||
                  (st = ntp__dn_own_weight(r, *bn_node, "var", NTP_TENSOR_BUFFER, c))))
        return st;
    return NTP_STATUS_OK;
}

/* A zero state of shape sh ([batch, ...]): a constant, "BASE_h0". */
static ntp_status zero_state(reader *r, const dn_sect *s, const char *base, ntp_shape sh, int *t)
{
    char nm[96];
    snprintf(nm, sizeof nm, "%s_h0", base);
    int ni = ntp__dn_add_op(r, nm, NTP_OP_CONSTANT, s->line, NULL, 0);
    if (ni < 0)
        return ntp__dn_oom(r);
    ntp_attrs *a = &r->g->nodes[ni].a;
    a->n_shape = sh.ndim;
    for (int d = 0; d < sh.ndim; d++)
        a->shape[d] = sh.dim[d];
    a->constant.trainable = false;
    ntp_status st = ntp__dn_own_weight(r, ni, "value", NTP_TENSOR_BUFFER, sh);
    if (st)
        return st;
    ntp_tensor *v = &r->g->tensors[r->g->nodes[ni].w[0]];
    v->data = calloc((size_t)ntp_shape_numel(&sh), sizeof(float));
    if (!v->data)
        return ntp__dn_oom(r);
    v->data_dtype = NTP_DTYPE_F32;
    *t = r->g->nodes[ni].out[0];
    return NTP_STATUS_OK;
}

/* Step `step`'s rows of `all` ([steps x batch, ...], step-major), "NAME". */
static ntp_status step_rows(reader *r, const dn_sect *s, const char *name, int all, int step,
                            int *t)
{
    if (r->steps == 1) {
        *t = all;
        return NTP_STATUS_OK;
    }
    int ni = ntp__dn_add_op(r, name, NTP_OP_SLICE, s->line, &all, 1);
    if (ni < 0)
        return ntp__dn_oom(r);
    const int64_t start = step * r->batch, end = (step + 1) * r->batch, axis = 0;
    ntp__slice_set(&r->g->nodes[ni].a, 1, &start, &end, &axis, NULL);
    *t = r->g->nodes[ni].out[0];
    return NTP_STATUS_OK;
}

/* An element-wise node of two inputs, "NAME". */
static ntp_status binary(reader *r, const dn_sect *s, const char *name, ntp_op op, int a, int b,
                         int *t)
{
    int ins[2] = {a, b};
    int ni = ntp__dn_add_op(r, name, op, s->line, ins, 2);
    if (ni < 0)
        return ntp__dn_oom(r);
    *t = r->g->nodes[ni].out[0];
    return NTP_STATUS_OK;
}

static ntp_status unary(reader *r, const dn_sect *s, const char *name, ntp_op op, int *t)
{
    int ni = ntp__dn_add_op(r, name, op, s->line, t, 1);
    if (ni < 0)
        return ntp__dn_oom(r);
    *t = r->g->nodes[ni].out[0];
    return NTP_STATUS_OK;
}

/* "BASE_PART" or, with more than one time step, "BASE_PART_tSTEP". */
static const char *step_name(reader *r, char *buf, size_t len, const char *base, const char *part,
                             int step)
{
    if (r->steps == 1)
        snprintf(buf, len, "%s_%s", base, part);
    else
        snprintf(buf, len, "%s_%s_t%d", base, part, step);
    return buf;
}

/* The state arrays: one tensor per step. */
static int *step_tensors(reader *r)
{
    return malloc((size_t)r->steps * sizeof(int));
}

/* The previous layer as rows of features (as_flat), base naming what is
 * added; *in_c the features per row. */
static ntp_status flat_input(reader *r, const dn_sect *s, int li, const char *base, int *x,
                             int64_t *in_c)
{
    ntp_status st = ntp__dn_as_flat(r, s, li - 1, base, x);
    const ntp_darknet_layer *P = &r->layers[li - 1];
    *in_c = P->c * P->h * P->w;
    return st;
}

/* After the steps (st: how they went), every step's state stacked into
 * base_states as *all; frees states. */
static ntp_status stack_states(reader *r, const dn_sect *s, const char *base, int *states,
                               ntp_status st, int *all)
{
    if (!st) {
        char nm[96];
        snprintf(nm, sizeof nm, "%s_states", base);
        st = ntp__dn_concat_all(r, s, nm, 0, states, (int)r->steps, all);
    }
    free(states);
    return st;
}

/* A recurrent layer's output: rows of `output` features in tensor, from
 * its nodes first..last. */
static void flat_output(ntp_darknet_layer *L, int first, int last, int tensor, int64_t output,
                        ntp_darknet_kind kind)
{
    L->node = first;
    L->last = last;
    L->tensor = tensor;
    L->c = output;
    L->h = L->w = 1;
    L->flat = true;
    L->kind = kind;
}

/* [rnn] and [crnn]: per step, state = input(x_t) + self(state) (+ the old
 * state with shortcut=1), each inner layer with the section's activation
 * (Darknet's default logistic) and batch norm; the output layer reads every
 * step's state. */
static ntp_status rnn_common(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L, bool conv)
{
    ntp_status st;
    int64_t output, hidden = 0, bn, shortcut;
    if (conv) {
        if ((st = ntp__dn_get_int(r, s, "output_filters", 1, 1, 1 << 20, &output)) ||
            (st = ntp__dn_get_int(r, s, "hidden_filters", 1, 1, 1 << 20, &hidden)))
            return st;
    } else if ((st = ntp__dn_get_int(r, s, "output", 1, 1, 1 << 30, &output))) {
        return st;
    }
    ntp_op act;
    const char *act_name;
    if ((st = ntp__dn_get_int(r, s, "batch_normalize", 0, 0, 1, &bn)) ||
        (st = ntp__dn_get_int(r, s, "shortcut", 0, 0, 1, &shortcut)) ||
        (st = ntp__dn_parse_act(r, s, "logistic", &act, &act_name)))
        return st;
    char base[32], nm[96];
    snprintf(base, sizeof base, "%s%d", conv ? "crnn" : "rnn", li);
    const ntp_darknet_layer *P = &r->layers[li - 1];
    int x;
    ntp_shape state;
    int64_t in_c;
    if (conv) {
        if ((st = ntp__dn_need_image(r, s, li)) || (st = ntp__dn_as_4d(r, s, li - 1, &x)))
            return st;
        P = &r->layers[li - 1];
        if (P->h != P->w)
            return ntp__dn_sect_error(r, s, s->line, NTP_STATUS_UNSUPPORTED,
                                      "the input is %lldx%lld: expected a square one (Darknet's "
                                      "parse_crnn passes the width as the height)",
                                      (long long)P->w, (long long)P->h);
        in_c = P->c;
        state = ntp__dn_shp(4, r->batch, hidden, P->h, P->w);
    } else {
        if ((st = flat_input(r, s, li, base, &x, &in_c)))
            return st;
        hidden = output;
        state = ntp__dn_shp(2, r->batch, output, 0, 0);
    }
    ntp_op op = conv ? NTP_OP_CONV : NTP_OP_FC;
    const unit ui = {op, hidden, in_c, bn, act, act_name},
               us = {op, hidden, hidden, bn, act, act_name},
               uo = {op, output, hidden, bn, act, act_name};
    ntp_darknet_block_kind bk = conv ? NTP_DARKNET_BLOCK_CONV : NTP_DARKNET_BLOCK_FC;
    int node, bn_node, self = -1, self_bn = -1, h;
    snprintf(nm, sizeof nm, "%s_in", base);
    if ((st = unit_node(r, s, &ui, nm, &x, -1, -1, false, &node, &bn_node)))
        return st;
    ntp__dn_add_block(L, bk, node, bn_node, 0);
    if ((st = zero_state(r, s, base, state, &h)))
        return st;
    int *states = step_tensors(r);
    if (!states)
        return ntp__dn_oom(r);
    for (int t = 0; t < r->steps && !st; t++) {
        int xt = -1, sf = h; /* xt: set by step_rows on success */
        if ((st = step_rows(r, s, step_name(r, nm, sizeof nm, base, "in", t), x, t, &xt)) ||
            (st = unit_node(r, s, &us, step_name(r, nm, sizeof nm, base, "self", t), &sf, self,
                            self_bn, t == 0 && r->steps > 1, &node, &bn_node)))
            break;
        if (t == 0) {
            self = node;
            self_bn = bn_node;
            ntp__dn_add_block(L, bk, node, bn_node, 0);
        }
        int old = h;
        st = binary(r, s, step_name(r, nm, sizeof nm, base, "state", t), NTP_OP_ADD, xt, sf, &h);
        /* shortcut=1 adds the previous state, zero at the first step */
        if (!st && shortcut && t > 0)
            st = binary(r, s, step_name(r, nm, sizeof nm, base, "shortcut", t), NTP_OP_ADD, h, old,
                        &h);
        states[t] = h;
    }
    int all = -1;
    st = stack_states(r, s, base, states, st, &all);
    snprintf(nm, sizeof nm, "%s_out", base);
    if (st || (st = unit_node(r, s, &uo, nm, &all, -1, -1, false, &node, &bn_node)))
        return st;
    ntp__dn_add_block(L, bk, node, bn_node, 0);
    L->node = L->blocks[0].node;
    L->last = r->g->n_nodes - 1;
    L->tensor = all;
    L->c = output;
    L->h = conv ? P->h : 1;
    L->w = conv ? P->w : 1;
    L->flat = !conv;
    L->bn = bn;
    L->kind = conv ? NTP_DARKNET_CRNN : NTP_DARKNET_RNN;
    return NTP_STATUS_OK;
}

ntp_status ntp__dn_rnn_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    return rnn_common(r, s, li, L, false);
}

ntp_status ntp__dn_crnn_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    return rnn_common(r, s, li, L, true);
}

/* [gru] (forward_gru_layer): z = σ(uz·x + wz·h), r = σ(ur·x + wr·h),
 * h̃ = act(uh·x + wh·(r⊙h)) with act logistic, or tanh with tanh=1, and
 * h = z⊙h + (1−z)⊙h̃, computed as h̃ + z⊙(h − h̃). Every inner layer is
 * linear, with the section's batch norm. This is ONNX's GRU with
 * linear_before_reset = 0, not the PyTorch one ntprof's gru op computes. */
ntp_status ntp__dn_gru_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t output, bn, tanh_;
    if ((st = ntp__dn_get_int(r, s, "output", 1, 1, 1 << 30, &output)) ||
        (st = ntp__dn_get_int(r, s, "batch_normalize", 0, 0, 1, &bn)) ||
        (st = ntp__dn_get_int(r, s, "tanh", 0, 0, 1, &tanh_)))
        return st;
    char base[32], nm[96];
    snprintf(base, sizeof base, "gru%d", li);
    int x;
    int64_t in_c;
    if ((st = flat_input(r, s, li, base, &x, &in_c)))
        return st;
    const unit uu = {NTP_OP_FC, output, in_c, bn, NTP_OP_COUNT, "linear"},
               uw = {NTP_OP_FC, output, output, bn, NTP_OP_COUNT, "linear"};
    /* uz, ur, uh over all rows; their blocks follow wz, wr, wh in the file */
    static const char *const gate[3] = {"z", "r", "h"};
    int u[3], un[3], ub[3], wn[3] = {-1, -1, -1}, wb[3] = {-1, -1, -1};
    for (int k = 0; k < 3; k++) {
        u[k] = x;
        snprintf(nm, sizeof nm, "%s_u%s", base, gate[k]);
        if ((st = unit_node(r, s, &uu, nm, &u[k], -1, -1, false, &un[k], &ub[k])))
            return st;
    }
    int h;
    if ((st = zero_state(r, s, base, ntp__dn_shp(2, r->batch, output, 0, 0), &h)))
        return st;
    int *states = step_tensors(r);
    if (!states)
        return ntp__dn_oom(r);
    bool own = r->steps > 1;
    for (int t = 0; t < r->steps && !st; t++) {
        /* -1: set by the helpers on success (gcc cannot see it across files) */
        int ut[3], w[3], node = -1, bn_node = -1, z = -1, rr = -1, f = -1, hh = -1, d = -1;
        char part[16];
        for (int k = 0; k < 3 && !st; k++) {
            snprintf(part, sizeof part, "u%s", gate[k]);
            st = step_rows(r, s, step_name(r, nm, sizeof nm, base, part, t), u[k], t, &ut[k]);
        }
        for (int k = 0; k < 2 && !st; k++) {
            w[k] = h;
            snprintf(part, sizeof part, "w%s", gate[k]);
            st = unit_node(r, s, &uw, step_name(r, nm, sizeof nm, base, part, t), &w[k], wn[k],
                           wb[k], own && t == 0, &node, &bn_node);
            if (t == 0) {
                wn[k] = node;
                wb[k] = bn_node;
            }
        }
        if (st ||
            (st = binary(r, s, step_name(r, nm, sizeof nm, base, "z", t), NTP_OP_ADD, ut[0], w[0],
                         &z)) ||
            (st = unary(r, s, step_name(r, nm, sizeof nm, base, "z_logistic", t), NTP_OP_SIGMOID,
                        &z)) ||
            (st = binary(r, s, step_name(r, nm, sizeof nm, base, "r", t), NTP_OP_ADD, ut[1], w[1],
                         &rr)) ||
            (st = unary(r, s, step_name(r, nm, sizeof nm, base, "r_logistic", t), NTP_OP_SIGMOID,
                        &rr)) ||
            (st = binary(r, s, step_name(r, nm, sizeof nm, base, "forgot", t), NTP_OP_MUL, h, rr,
                         &f)))
            break;
        w[2] = f;
        if ((st = unit_node(r, s, &uw, step_name(r, nm, sizeof nm, base, "wh", t), &w[2], wn[2],
                            wb[2], own && t == 0, &node, &bn_node)))
            break;
        if (t == 0) {
            wn[2] = node;
            wb[2] = bn_node;
        }
        if ((st = binary(r, s, step_name(r, nm, sizeof nm, base, "h", t), NTP_OP_ADD, ut[2], w[2],
                         &hh)) ||
            (st = unary(r, s, step_name(r, nm, sizeof nm, base, tanh_ ? "h_tanh" : "h_logistic", t),
                        tanh_ ? NTP_OP_TANH : NTP_OP_SIGMOID, &hh)) ||
            (st = binary(r, s, step_name(r, nm, sizeof nm, base, "keep", t), NTP_OP_SUB, h, hh,
                         &d)) ||
            (st = binary(r, s, step_name(r, nm, sizeof nm, base, "keep_z", t), NTP_OP_MUL, z, d,
                         &d)) ||
            (st = binary(r, s, step_name(r, nm, sizeof nm, base, "state", t), NTP_OP_ADD, hh, d,
                         &h)))
            break;
        states[t] = h;
    }
    int all = -1;
    st = stack_states(r, s, base, states, st, &all);
    if (st)
        return st;
    /* Darknet's file order: wz, wr, wh, uz, ur, uh. */
    for (int k = 0; k < 3; k++)
        ntp__dn_add_block(L, NTP_DARKNET_BLOCK_FC, wn[k], wb[k], 0);
    for (int k = 0; k < 3; k++)
        ntp__dn_add_block(L, NTP_DARKNET_BLOCK_FC, un[k], ub[k], 0);
    flat_output(L, un[0], r->g->n_nodes - 1, all, output, NTP_DARKNET_GRU);
    L->bn = bn;
    return NTP_STATUS_OK;
}

/* [lstm] with batch_normalize=1: each of the eight inner [connected]
 * layers has a batch norm of its own (their biases are the norms' shifts),
 * which ntprof's lstm op has not. So the cell is unrolled as
 * forward_lstm_layer runs it: ui, uf, uo, ug over all rows; per step wi,
 * wf, wo, wg on the state (the steps sharing their weights), i, f, o =
 * σ(u + w), g = tanh(u + w), c = f⊙c + i⊙g (i⊙g at the first step, where c
 * is zero), h = o⊙tanh(c). */
static ntp_status lstm_unrolled(reader *r, const dn_sect *s, ntp_darknet_layer *L, const char *base,
                                int x, int64_t in_c, int64_t output)
{
    ntp_status st;
    char nm[96], part[16];
    const unit uu = {NTP_OP_FC, output, in_c, true, NTP_OP_COUNT, "linear"},
               uw = {NTP_OP_FC, output, output, true, NTP_OP_COUNT, "linear"};
    /* Darknet's file order of the gates: i, f, o, g */
    static const char *const gate[4] = {"i", "f", "o", "g"};
    int u[4], un[4], ub[4], wn[4] = {-1, -1, -1, -1}, wb[4] = {-1, -1, -1, -1};
    for (int k = 0; k < 4; k++) {
        u[k] = x;
        snprintf(nm, sizeof nm, "%s_u%s", base, gate[k]);
        if ((st = unit_node(r, s, &uu, nm, &u[k], -1, -1, false, &un[k], &ub[k])))
            return st;
    }
    int h, c = -1;
    if ((st = zero_state(r, s, base, ntp__dn_shp(2, r->batch, output, 0, 0), &h)))
        return st;
    int *states = step_tensors(r);
    if (!states)
        return ntp__dn_oom(r);
    bool own = r->steps > 1;
    for (int t = 0; t < r->steps && !st; t++) {
        int v[4] = {-1, -1, -1, -1}, node, bn_node, ig = -1, hc;
        for (int k = 0; k < 4 && !st; k++) {
            int ut = -1, w = h; /* ut: set by step_rows on success */
            snprintf(part, sizeof part, "u%s", gate[k]);
            if ((st = step_rows(r, s, step_name(r, nm, sizeof nm, base, part, t), u[k], t, &ut)))
                break;
            snprintf(part, sizeof part, "w%s", gate[k]);
            if ((st = unit_node(r, s, &uw, step_name(r, nm, sizeof nm, base, part, t), &w, wn[k],
                                wb[k], own && t == 0, &node, &bn_node)))
                break;
            if (t == 0) {
                wn[k] = node;
                wb[k] = bn_node;
            }
            snprintf(part, sizeof part, "%s_%s", gate[k], k == 3 ? "tanh" : "logistic");
            if ((st = binary(r, s, step_name(r, nm, sizeof nm, base, gate[k], t), NTP_OP_ADD, ut, w,
                             &v[k])) ||
                (st = unary(r, s, step_name(r, nm, sizeof nm, base, part, t),
                            k == 3 ? NTP_OP_TANH : NTP_OP_SIGMOID, &v[k])))
                break;
        }
        if (st || (st = binary(r, s, step_name(r, nm, sizeof nm, base, "ig", t), NTP_OP_MUL, v[0],
                               v[3], &ig)))
            break;
        if (t == 0) {
            c = ig;
        } else {
            int fc = -1;
            if ((st = binary(r, s, step_name(r, nm, sizeof nm, base, "fc", t), NTP_OP_MUL, v[1], c,
                             &fc)) ||
                (st = binary(r, s, step_name(r, nm, sizeof nm, base, "c", t), NTP_OP_ADD, fc, ig,
                             &c)))
                break;
        }
        hc = c;
        if ((st = unary(r, s, step_name(r, nm, sizeof nm, base, "c_tanh", t), NTP_OP_TANH, &hc)) ||
            (st = binary(r, s, step_name(r, nm, sizeof nm, base, "state", t), NTP_OP_MUL, v[2], hc,
                         &h)))
            break;
        states[t] = h;
    }
    int all = -1;
    if ((st = stack_states(r, s, base, states, st, &all)))
        return st;
    for (int k = 0; k < 4; k++)
        ntp__dn_add_block(L, NTP_DARKNET_BLOCK_FC, wn[k], wb[k], 0);
    for (int k = 0; k < 4; k++)
        ntp__dn_add_block(L, NTP_DARKNET_BLOCK_FC, un[k], ub[k], 0);
    flat_output(L, un[0], r->g->n_nodes - 1, all, output, NTP_DARKNET_LSTM);
    L->bn = true;
    return NTP_STATUS_OK;
}

/* [lstm] (forward_lstm_layer): the standard LSTM, f, i, o = σ(u·x + w·h),
 * g = tanh(u·x + w·h), c = f⊙c + i⊙g, h = o⊙tanh(c), with separate input and
 * recurrent biases: ntprof's lstm op over [steps, batch, inputs]. With
 * batch_normalize each inner layer has its own batch norm, which the op has
 * not: unrolled (lstm_unrolled). */
ntp_status ntp__dn_lstm_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t output, bn;
    if ((st = ntp__dn_get_int(r, s, "output", 1, 1, 1 << 30, &output)) ||
        (st = ntp__dn_get_int(r, s, "batch_normalize", 0, 0, 1, &bn)))
        return st;
    char base[32], nm[96];
    snprintf(base, sizeof base, "lstm%d", li);
    int x;
    int64_t in_c;
    if ((st = flat_input(r, s, li, base, &x, &in_c)))
        return st;
    if (bn)
        return lstm_unrolled(r, s, L, base, x, in_c, output);
    snprintf(nm, sizeof nm, "%s_seq", base);
    int ni = ntp__dn_add_op(r, nm, NTP_OP_RESHAPE, s->line, &x, 1);
    if (ni < 0)
        return ntp__dn_oom(r);
    ntp_attrs *a = &r->g->nodes[ni].a;
    a->n_shape = 3;
    a->shape[0] = r->steps;
    a->shape[1] = r->batch;
    a->shape[2] = in_c;
    x = r->g->nodes[ni].out[0];
    int li_node = ntp__dn_add_op(r, base, NTP_OP_LSTM, s->line, &x, 1);
    if (li_node < 0)
        return ntp__dn_oom(r);
    a = &r->g->nodes[li_node].a;
    a->units = output;
    a->direction = NTP_DIR_FORWARD;
    a->bias = true;
    x = r->g->nodes[li_node].out[0];
    snprintf(nm, sizeof nm, "%s_rows", base);
    ni = ntp__dn_add_op(r, nm, NTP_OP_RESHAPE, s->line, &x, 1);
    if (ni < 0)
        return ntp__dn_oom(r);
    a = &r->g->nodes[ni].a;
    a->n_shape = 2;
    a->shape[0] = r->rows;
    a->shape[1] = output;
    /* Darknet's file order: wi, wf, wo, wg, then ui, uf, uo, ug; ntprof's
     * gate order is i, o, f, c. */
    static const int slot[4] = {0, 2, 1, 3};
    for (int k = 0; k < 4; k++)
        ntp__dn_add_block(L, NTP_DARKNET_BLOCK_LSTM_W, li_node, -1, slot[k]);
    for (int k = 0; k < 4; k++)
        ntp__dn_add_block(L, NTP_DARKNET_BLOCK_LSTM_U, li_node, -1, slot[k]);
    flat_output(L, li_node, ni, r->g->nodes[ni].out[0], output, NTP_DARKNET_LSTM);
    return NTP_STATUS_OK;
}
