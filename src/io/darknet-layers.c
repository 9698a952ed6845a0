/* Darknet's feed-forward .cfg sections ([convolutional], [connected],
 * pooling, [route], [shortcut], [upsample], [softmax], [reorg], [crop],
 * [local], [deconvolutional], [batchnorm], [activation] and the heads),
 * each onto ntprof layers, keeping Darknet's shape rules (docs/darknet.md;
 * the reader: darknet-cfg.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "darknet-cfg-impl.h"
#include "graph/op-onnx-impl.h"

ntp_status ntp__dn_conv_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t filters, size, stride, pad, padding, groups, bn, binary, xnor;
    if ((st = ntp__dn_get_int(r, s, "filters", 1, 1, 1 << 20, &filters)) ||
        (st = ntp__dn_get_int(r, s, "size", 1, 1, 1024, &size)) ||
        (st = ntp__dn_get_int(r, s, "stride", 1, 1, 1024, &stride)) ||
        (st = ntp__dn_get_int(r, s, "pad", 0, 0, 1, &pad)) ||
        (st = ntp__dn_get_int(r, s, "padding", 0, 0, 1024, &padding)) ||
        (st = ntp__dn_get_int(r, s, "groups", 1, 1, 1 << 20, &groups)) ||
        (st = ntp__dn_get_int(r, s, "batch_normalize", 0, 0, 1, &bn)) ||
        (st = ntp__dn_get_int(r, s, "binary", 0, 0, 1, &binary)) ||
        (st = ntp__dn_get_int(r, s, "xnor", 0, 0, 1, &xnor)))
        return st;
    if (binary || xnor)
        return ntp__dn_sect_error(
            r, s, s->line, NTP_STATUS_UNSUPPORTED,
            "binary and xnor convolutions are not supported: expected binary=0 "
            "and xnor=0");
    if (!ntp__dn_find(s, "filters"))
        ntp__warn(r->ctx, "%s:%d: [convolutional] (layer %d): no 'filters', assuming 1", r->src,
                  s->line, li);
    if (pad)
        padding = size / 2; /* Darknet: pad=1 means "same" for odd sizes */
    int in;
    if ((st = ntp__dn_as_4d(r, s, li - 1, &in)))
        return st;
    const ntp_darknet_layer *P = &r->layers[li - 1];
    if (P->c % groups || filters % groups)
        return ntp__dn_sect_error(
            r, s, s->line, NTP_STATUS_SHAPE_ERROR,
            "groups=%lld must divide both the input channels %lld and filters %lld",
            (long long)groups, (long long)P->c, (long long)filters);
    int64_t oh = (P->h + 2 * padding - size) / stride + 1,
            ow = (P->w + 2 * padding - size) / stride + 1;
    if (P->h + 2 * padding < size || P->w + 2 * padding < size)
        return ntp__dn_sect_error(r, s, s->line, NTP_STATUS_SHAPE_ERROR,
                                  "size=%lld does not fit the %lldx%lld input with padding %lld",
                                  (long long)size, (long long)P->h, (long long)P->w,
                                  (long long)padding);
    snprintf(r->name, sizeof r->name, "conv%d", li);
    int ni = ntp__dn_add_op(r, r->name, NTP_OP_CONV, s->line, &in, 1);
    if (ni < 0)
        return ntp__dn_oom(r);
    ntp_attrs *a = &r->g->nodes[ni].a;
    a->filters = filters;
    a->n_kernel = 1;
    a->kernel[0] = size;
    a->n_stride = 1;
    a->stride[0] = stride;
    a->n_pad = 1;
    a->pad[0] = padding;
    a->pad_kind = NTP_PAD_EXPLICIT;
    a->groups = groups;
    a->bias = !bn; /* with batch_normalize the biases are the norm's shift */
    L->node = L->last = ni;
    int t = r->g->nodes[ni].out[0];
    if ((bn && (st = ntp__dn_add_bn(r, s->line, r->name, &t, &L->last, &L->bn_node))) ||
        (st = ntp__dn_activation(r, s, r->name, "logistic", &t, &L->last)))
        return st;
    L->blocks[L->n_blocks++] = (ntp_darknet_block){NTP_DARKNET_BLOCK_CONV, ni, L->bn_node, 0};
    L->tensor = t;
    L->c = filters;
    L->h = oh;
    L->w = ow;
    L->kind = NTP_DARKNET_CONV;
    L->bn = bn;
    return NTP_STATUS_OK;
}

ntp_status ntp__dn_connected_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t output, bn;
    if ((st = ntp__dn_get_int(r, s, "output", 1, 1, 1 << 30, &output)) ||
        (st = ntp__dn_get_int(r, s, "batch_normalize", 0, 0, 1, &bn)))
        return st;
    int t;
    snprintf(r->name, sizeof r->name, "fc%d", li);
    if ((st = ntp__dn_as_flat(r, s, li - 1, r->name, &t)))
        return st;
    int ni = ntp__dn_add_op(r, r->name, NTP_OP_FC, s->line, &t, 1);
    if (ni < 0)
        return ntp__dn_oom(r);
    r->g->nodes[ni].a.units = output;
    r->g->nodes[ni].a.bias = !bn;
    L->node = L->last = ni;
    t = r->g->nodes[ni].out[0];
    if ((bn && (st = ntp__dn_add_bn(r, s->line, r->name, &t, &L->last, &L->bn_node))) ||
        (st = ntp__dn_activation(r, s, r->name, "logistic", &t, &L->last)))
        return st;
    L->blocks[L->n_blocks++] = (ntp_darknet_block){NTP_DARKNET_BLOCK_FC, ni, L->bn_node, 0};
    L->tensor = t;
    L->c = output;
    L->h = L->w = 1;
    L->flat = true;
    L->kind = NTP_DARKNET_CONNECTED;
    L->bn = bn;
    return NTP_STATUS_OK;
}

ntp_status ntp__dn_maxpool_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t stride, size, padding;
    if ((st = ntp__dn_get_int(r, s, "stride", 1, 1, 1024, &stride)) ||
        (st = ntp__dn_get_int(r, s, "size", stride, 1, 1024, &size)) ||
        (st = ntp__dn_get_int(r, s, "padding", size - 1, 0, 1024, &padding)))
        return st;
    int in;
    if ((st = ntp__dn_as_4d(r, s, li - 1, &in)))
        return st;
    const ntp_darknet_layer *P = &r->layers[li - 1];
    /* Darknet pads `padding` in all, padding/2 before (forward_maxpool_layer's
     * offset -pad/2) and the rest after; padded cells never win. */
    int64_t before = padding / 2, after = padding - before;
    if (before > size / 2 || after > size / 2)
        return ntp__dn_sect_error(
            r, s, s->line, NTP_STATUS_UNSUPPORTED,
            "padding=%lld is more than a %lld-wide window can cover on each side",
            (long long)padding, (long long)size);
    if (P->h + padding < size || P->w + padding < size)
        return ntp__dn_sect_error(r, s, s->line, NTP_STATUS_SHAPE_ERROR,
                                  "size=%lld does not fit the %lldx%lld input", (long long)size,
                                  (long long)P->h, (long long)P->w);
    snprintf(r->name, sizeof r->name, "max%d", li);
    int ni = ntp__dn_add_op(r, r->name, NTP_OP_MAXPOOL, s->line, &in, 1);
    if (ni < 0)
        return ntp__dn_oom(r);
    ntp_attrs *a = &r->g->nodes[ni].a;
    a->n_kernel = 1;
    a->kernel[0] = size;
    a->n_stride = 1;
    a->stride[0] = stride;
    a->n_pad = 4;
    a->pad[0] = a->pad[1] = before;
    a->pad[2] = a->pad[3] = after;
    a->pad_kind = NTP_PAD_EXPLICIT;
    L->node = L->last = ni;
    L->tensor = r->g->nodes[ni].out[0];
    L->c = P->c;
    L->h = (P->h + padding - size) / stride + 1;
    L->w = (P->w + padding - size) / stride + 1;
    L->kind = NTP_DARKNET_MAXPOOL;
    return NTP_STATUS_OK;
}

ntp_status ntp__dn_route_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    const dn_opt *o = ntp__dn_find(s, "layers");
    if (!o || !o->val[0])
        return ntp__dn_sect_error(r, s, s->line, NTP_STATUS_PARSE_ERROR,
                                  "'layers': expected a list of layer numbers such as -1,-4");
    int ins[NTP_MAX_INPUTS], n = 0;
    int64_t c = 0, h = 0, w = 0;
    for (const char *p = o->val; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || (*end && *end != ','))
            return ntp__dn_sect_error(r, s, o->line, NTP_STATUS_PARSE_ERROR,
                                      "'layers': expected comma-separated integers, got '%.64s'",
                                      o->val);
        if (n == NTP_MAX_INPUTS)
            return ntp__dn_sect_error(r, s, o->line, NTP_STATUS_UNSUPPORTED,
                                      "'layers': more than %d layers", NTP_MAX_INPUTS);
        int k = 0; /* set by layer_ref on success; gcc -O3 cannot see it */
        if ((st = ntp__dn_layer_ref(r, s, o->line, "layers", v, li, &k)) ||
            (st = ntp__dn_as_4d(r, s, k, &ins[n])))
            return st;
        const ntp_darknet_layer *R = &r->layers[k];
        if (n == 0) {
            h = R->h;
            w = R->w;
        } else if (R->h != h || R->w != w) {
            return ntp__dn_sect_error(
                r, s, o->line, NTP_STATUS_SHAPE_ERROR,
                "'layers': layer %d is %lldx%lld, expected %lldx%lld as the first "
                "one (Darknet concatenates channels of equal sizes only)",
                k, (long long)R->h, (long long)R->w, (long long)h, (long long)w);
        }
        c += R->c;
        n++;
        p = *end ? end + 1 : end;
    }
    snprintf(r->name, sizeof r->name, "route%d", li);
    int ni = ntp__dn_add_op(r, r->name, NTP_OP_CONCAT, s->line, ins, n);
    if (ni < 0)
        return ntp__dn_oom(r);
    r->g->nodes[ni].a.axis = 1;
    L->node = L->last = ni;
    L->tensor = r->g->nodes[ni].out[0];
    L->c = c;
    L->h = h;
    L->w = w;
    L->kind = NTP_DARKNET_ROUTE;
    return NTP_STATUS_OK;
}

ntp_status ntp__dn_shortcut_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t from;
    double alpha, beta;
    if ((st = ntp__dn_get_int(r, s, "from", 0, INT32_MIN, INT32_MAX, &from)) ||
        (st = ntp__dn_get_float(r, s, "alpha", 1, &alpha)) ||
        (st = ntp__dn_get_float(r, s, "beta", 1, &beta)))
        return st;
    const dn_opt *o = ntp__dn_find(s, "from");
    if (!o)
        return ntp__dn_sect_error(r, s, s->line, NTP_STATUS_PARSE_ERROR,
                                  "'from': expected the layer to add, such as from=-3");
    int k = 0, ins[2]; /* k: set by layer_ref on success (gcc -O3 cannot see it) */
    if ((st = ntp__dn_layer_ref(r, s, o->line, "from", (long)from, li, &k)) ||
        (st = ntp__dn_as_4d(r, s, li - 1, &ins[0])) || (st = ntp__dn_as_4d(r, s, k, &ins[1])))
        return st;
    const ntp_darknet_layer *P = &r->layers[li - 1], *F = &r->layers[k];
    if (F->c != P->c || F->h != P->h || F->w != P->w) {
        /* Darknet's shortcut_cpu adds the `from` layer sampled every
         * w_from/w stride into the first min(c) channels and leaves the
         * others: a strided, channel-cut slice, zero-padded to the channels. */
        int64_t stride = F->w / P->w > 1 ? F->w / P->w : 1;
        if (F->h / P->h != F->w / P->w || (F->w + stride - 1) / stride != P->w ||
            (F->h + stride - 1) / stride != P->h)
            return ntp__dn_sect_error(
                r, s, o->line, NTP_STATUS_UNSUPPORTED,
                "'from': layer %d is %lldx%lldx%lld, the previous layer "
                "%lldx%lldx%lld: expected the same size or a whole multiple of it",
                k, (long long)F->w, (long long)F->h, (long long)F->c, (long long)P->w,
                (long long)P->h, (long long)P->c);
        int64_t minc = F->c < P->c ? F->c : P->c;
        char nm[96];
        if (stride > 1 || F->c > P->c) {
            snprintf(nm, sizeof nm, "shortcut%d_sample", li);
            int si = ntp__dn_add_op(r, nm, NTP_OP_SLICE, s->line, &ins[1], 1);
            if (si < 0)
                return ntp__dn_oom(r);
            const int64_t starts[3] = {0, 0, 0}, ends[3] = {minc, F->h, F->w}, axes[3] = {1, 2, 3},
                          steps[3] = {1, stride, stride};
            ntp__slice_set(&r->g->nodes[si].a, 3, starts, ends, axes, steps);
            ins[1] = r->g->nodes[si].out[0];
        }
        if (minc < P->c) {
            snprintf(nm, sizeof nm, "shortcut%d_pad", li);
            int pi = ntp__dn_add_op(r, nm, NTP_OP_PAD, s->line, &ins[1], 1);
            if (pi < 0)
                return ntp__dn_oom(r);
            ntp_attrs *a = &r->g->nodes[pi].a;
            a->n_pads = 8;
            memset(a->pads, 0, sizeof a->pads);
            a->pads[4 + 1] = P->c - minc;
            a->pad_mode = NTP_PADMODE_CONSTANT;
            a->value = 0;
            ins[1] = r->g->nodes[pi].out[0];
        }
    }
    /* shortcut_cpu: out = alpha * out + beta * from, on the first min(c)
     * channels only: the others keep the previous layer's values unscaled. */
    if (alpha != 1 && F->c < P->c)
        return ntp__dn_sect_error(r, s, s->line, NTP_STATUS_UNSUPPORTED,
                                  "alpha=%g with layer %d's %lld channels into %lld: Darknet "
                                  "scales only the first %lld; expected alpha=1 there",
                                  alpha, k, (long long)F->c, (long long)P->c, (long long)F->c);
    const double scale[2] = {alpha, beta};
    for (int i = 0; i < 2; i++) {
        if (scale[i] == 1)
            continue;
        char nm[96];
        int unused;
        snprintf(nm, sizeof nm, "shortcut%d_%s", li, i ? "beta" : "alpha");
        if ((st = ntp__dn_scale(r, s->line, nm, NTP_OP_MUL, (float)scale[i], &ins[i], &unused)))
            return st;
    }
    snprintf(r->name, sizeof r->name, "shortcut%d", li);
    int ni = ntp__dn_add_op(r, r->name, NTP_OP_ADD, s->line, ins, 2);
    if (ni < 0)
        return ntp__dn_oom(r);
    L->node = L->last = ni;
    int t = r->g->nodes[ni].out[0];
    if ((st = ntp__dn_activation(r, s, r->name, "linear", &t, &L->last)))
        return st;
    L->tensor = t;
    L->c = P->c;
    L->h = P->h;
    L->w = P->w;
    L->kind = NTP_DARKNET_SHORTCUT;
    return NTP_STATUS_OK;
}

ntp_status ntp__dn_upsample_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t stride;
    double scale;
    if ((st = ntp__dn_get_int(r, s, "stride", 2, 1, 1024, &stride)) ||
        (st = ntp__dn_get_float(r, s, "scale", 1, &scale)))
        return st;
    if (scale != 1)
        return ntp__dn_sect_error(r, s, s->line, NTP_STATUS_UNSUPPORTED,
                                  "scale=%g: only scale=1 is supported", scale);
    int in;
    if ((st = ntp__dn_as_4d(r, s, li - 1, &in)))
        return st;
    const ntp_darknet_layer *P = &r->layers[li - 1];
    snprintf(r->name, sizeof r->name, "upsample%d", li);
    int ni = ntp__dn_add_op(r, r->name, NTP_OP_RESIZE, s->line, &in, 1);
    if (ni < 0)
        return ntp__dn_oom(r);
    ntp_attrs *a = &r->g->nodes[ni].a;
    /* out[y][x] = in[y/stride][x/stride]: nearest, asymmetric, floor. */
    a->n_shape = 4;
    a->shape[0] = r->rows;
    a->shape[1] = P->c;
    a->shape[2] = P->h * stride;
    a->shape[3] = P->w * stride;
    a->resize.mode = NTP_RESIZE_NEAREST;
    a->resize.coord = NTP_RESIZE_ASYMMETRIC;
    a->resize.nearest = NTP_RESIZE_FLOOR;
    L->node = L->last = ni;
    L->tensor = r->g->nodes[ni].out[0];
    L->c = P->c;
    L->h = P->h * stride;
    L->w = P->w * stride;
    L->kind = NTP_DARKNET_UPSAMPLE;
    return NTP_STATUS_OK;
}

ntp_status ntp__dn_avgpool_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int in;
    if ((st = ntp__dn_as_4d(r, s, li - 1, &in)))
        return st;
    snprintf(r->name, sizeof r->name, "avg%d", li);
    int ni = ntp__dn_add_op(r, r->name, NTP_OP_GLOBAL_AVGPOOL, s->line, &in, 1);
    if (ni < 0)
        return ntp__dn_oom(r);
    L->node = L->last = ni;
    L->tensor = r->g->nodes[ni].out[0];
    L->c = r->layers[li - 1].c;
    L->h = L->w = 1;
    L->kind = NTP_DARKNET_AVGPOOL;
    return NTP_STATUS_OK;
}

ntp_status ntp__dn_dropout_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    double p;
    if ((st = ntp__dn_get_float(r, s, "probability", 0.5, &p)))
        return st;
    const ntp_darknet_layer *P = &r->layers[li - 1];
    snprintf(r->name, sizeof r->name, "dropout%d", li);
    int ni = ntp__dn_add_op(r, r->name, NTP_OP_DROPOUT, s->line, &P->tensor, 1);
    if (ni < 0)
        return ntp__dn_oom(r);
    int line = L->line, first = L->first;
    *L = *P;
    L->line = line;
    L->first = first;
    L->n_blocks = 0;
    L->bn_node = -1;
    L->node = L->last = ni;
    L->tensor = r->g->nodes[ni].out[0];
    L->kind = NTP_DARKNET_DROPOUT;
    L->bn = false;
    return NTP_STATUS_OK;
}

/* A WordTree file ([softmax] tree=, Darknet's read_tree): one "NAME PARENT"
 * per line; each run of lines with the same parent is one group, softmaxed
 * on its own. *sizes (malloc'd) gets the groups' sizes (an empty first
 * group, as Darknet counts one when the first parent is not -1, is left
 * out), *n_groups their count and *n the lines. */
static ntp_status read_tree(reader *r, const dn_sect *s, const dn_opt *o, int64_t **sizes,
                            int *n_groups, int64_t *n)
{
    FILE *f = fopen(o->val, "r");
    char alt[4096];
    const char *slash = strrchr(r->src, '/');
    if (!f && o->val[0] != '/' && slash) {
        snprintf(alt, sizeof alt, "%.*s/%s", (int)(slash - r->src), r->src, o->val);
        f = fopen(alt, "r");
    }
    if (!f)
        return ntp__dn_sect_error(r, s, o->line, NTP_STATUS_IO_ERROR,
                                  "'tree': cannot open %.256s: %s", o->val, strerror(errno));
    int64_t *sz = NULL, run = 0;
    int cap = 0, ng = 0, line = 0;
    long last = -1;
    ntp_status st = NTP_STATUS_OK;
    char buf[512];
    *n = 0;
    while (!st && fgets(buf, sizeof buf, f)) {
        line++;
        char id[256];
        long parent = -1;
        if (sscanf(buf, "%255s %ld", id, &parent) < 1)
            continue;
        if (parent != last) {
            if (run > 0 && (ng < cap || ntp__dn_grow((void **)&sz, &cap, ng + 1, sizeof *sz)))
                sz[ng++] = run;
            else if (run > 0)
                st = ntp__dn_oom(r);
            run = 0;
            last = parent;
        }
        run++;
        ++*n;
    }
    fclose(f);
    if (!st && run > 0) {
        if (ntp__dn_grow((void **)&sz, &cap, ng + 1, sizeof *sz))
            sz[ng++] = run;
        else
            st = ntp__dn_oom(r);
    }
    if (!st && ng == 0)
        st = ntp__dn_sect_error(r, s, o->line, NTP_STATUS_PARSE_ERROR,
                                "'tree': %.256s holds no classes: expected NAME PARENT lines",
                                o->val);
    if (st) {
        free(sz);
        return st;
    }
    *sizes = sz;
    *n_groups = ng;
    return NTP_STATUS_OK;
}

/* [softmax] (forward_softmax_layer): over each image's outputs, divided by
 * `temperature` first; with `tree=`, over each group of the WordTree on its
 * own (slices, a softmax each, concatenated). */
ntp_status ntp__dn_softmax_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t groups;
    double temp;
    if ((st = ntp__dn_get_int(r, s, "groups", 1, 1, INT32_MAX, &groups)) ||
        (st = ntp__dn_get_float(r, s, "temperature", 1, &temp)))
        return st;
    if (groups != 1 || ntp__dn_find(s, "spatial"))
        return ntp__dn_sect_error(r, s, s->line, NTP_STATUS_UNSUPPORTED,
                                  "only a softmax over each image's outputs is supported: "
                                  "expected groups=1, no spatial");
    if (!(temp > 0))
        return ntp__dn_sect_error(r, s, ntp__dn_find(s, "temperature")->line,
                                  NTP_STATUS_UNSUPPORTED,
                                  "temperature=%g: expected a positive temperature", temp);
    const ntp_darknet_layer *P = &r->layers[li - 1];
    int64_t inputs = P->c * P->h * P->w;
    int t = P->tensor, last = -1;
    if (!P->flat) {
        snprintf(r->name, sizeof r->name, "softmax%d_flatten", li);
        int fi = ntp__dn_add_op(r, r->name, NTP_OP_FLATTEN, s->line, &t, 1);
        if (fi < 0)
            return ntp__dn_oom(r);
        r->g->nodes[fi].a.axis = 1;
        t = r->g->nodes[fi].out[0];
    }
    if (temp != 1) {
        snprintf(r->name, sizeof r->name, "softmax%d_temperature", li);
        if ((st = ntp__dn_scale(r, s->line, r->name, NTP_OP_DIV, (float)temp, &t, &last)))
            return st;
    }
    const dn_opt *tree = ntp__dn_find(s, "tree");
    int64_t *sizes = NULL, n = 0;
    int n_groups = 1;
    if (tree) {
        if ((st = read_tree(r, s, tree, &sizes, &n_groups, &n)))
            return st;
        if (n != inputs) {
            free(sizes);
            return ntp__dn_sect_error(r, s, tree->line, NTP_STATUS_SHAPE_ERROR,
                                      "'tree': %.256s has %lld classes, the input %lld: expected "
                                      "one class per input",
                                      tree->val, (long long)n, (long long)inputs);
        }
    }
    int *parts = malloc((size_t)n_groups * sizeof *parts);
    if (!parts) {
        free(sizes);
        return ntp__dn_oom(r);
    }
    int64_t off = 0;
    bool ok = true;
    for (int gi = 0; gi < n_groups && ok; gi++) {
        int x = t;
        if (tree) {
            snprintf(r->name, sizeof r->name, "softmax%d_g%d", li, gi);
            int si = ntp__dn_add_op(r, r->name, NTP_OP_SLICE, s->line, &x, 1);
            if (!(ok = si >= 0))
                break;
            const int64_t start = off, end = off + sizes[gi], axis = 1, step = 1;
            ntp__slice_set(&r->g->nodes[si].a, 1, &start, &end, &axis, &step);
            x = r->g->nodes[si].out[0];
            off += sizes[gi];
            snprintf(r->name, sizeof r->name, "softmax%d_%d", li, gi);
        } else {
            snprintf(r->name, sizeof r->name, "softmax%d", li);
        }
        int ni = ntp__dn_add_op(r, r->name, NTP_OP_SOFTMAX, s->line, &x, 1);
        if (!(ok = ni >= 0))
            break;
        r->g->nodes[ni].a.axis = -1;
        parts[gi] = r->g->nodes[ni].out[0];
        last = ni;
        if (gi == 0)
            L->node = ni;
    }
    free(sizes);
    if (!ok) {
        free(parts);
        return ntp__dn_oom(r);
    }
    st = NTP_STATUS_OK;
    if (tree) {
        snprintf(r->name, sizeof r->name, "softmax%d", li);
        st = ntp__dn_concat_all(r, s, r->name, 1, parts, n_groups, &t);
        last = r->g->n_nodes - 1;
    } else {
        t = parts[0];
    }
    free(parts);
    if (st)
        return st;
    L->last = last;
    L->tensor = t;
    L->c = inputs;
    L->h = L->w = 1;
    L->flat = true;
    L->kind = NTP_DARKNET_SOFTMAX;
    return NTP_STATUS_OK;
}

/* [reorg] stride=s: Darknet's space-to-depth, [C,H,W] -> [C*s*s, H/s, W/s],
 * as reshape, transpose, reshape. The shapes and the (zero) FLOPs are
 * Darknet's; the order of the channels is the plain space-to-depth one, not
 * reorg_cpu's (docs/darknet.md). */
ntp_status ntp__dn_reorg_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t stride;
    if ((st = ntp__dn_get_int(r, s, "stride", 1, 1, 1024, &stride)))
        return st;
    int64_t extra;
    if ((st = ntp__dn_get_int(r, s, "extra", 0, 0, 1 << 20, &extra)))
        return st;
    if (ntp__dn_find(s, "reverse") || ntp__dn_find(s, "flatten"))
        return ntp__dn_sect_error(r, s, s->line, NTP_STATUS_UNSUPPORTED,
                                  "only the forward reorg and extra= are supported: expected no "
                                  "reverse or flatten");
    if (extra > 0) {
        /* forward_reorg_layer with extra: each image's inputs copied, then
         * `extra` values Darknet never writes (zero): a flat [N, inputs +
         * extra], its out_c, out_h, out_w 0. stride is not used. */
        int x;
        snprintf(r->name, sizeof r->name, "reorg%d", li);
        if ((st = ntp__dn_as_flat(r, s, li - 1, r->name, &x)))
            return st;
        snprintf(r->name, sizeof r->name, "reorg%d_extra", li);
        int pi = ntp__dn_add_op(r, r->name, NTP_OP_PAD, s->line, &x, 1);
        if (pi < 0)
            return ntp__dn_oom(r);
        ntp_attrs *a = &r->g->nodes[pi].a;
        a->n_pads = 4;
        memset(a->pads, 0, sizeof a->pads);
        a->pads[2 + 1] = extra;
        a->pad_mode = NTP_PADMODE_CONSTANT;
        a->value = 0;
        const ntp_darknet_layer *P = &r->layers[li - 1];
        L->node = L->last = pi;
        L->tensor = r->g->nodes[pi].out[0];
        L->c = P->c * P->h * P->w + extra;
        L->h = L->w = 1;
        L->flat = true;
        L->kind = NTP_DARKNET_REORG;
        return NTP_STATUS_OK;
    }
    int t;
    if ((st = ntp__dn_as_4d(r, s, li - 1, &t)))
        return st;
    const ntp_darknet_layer *P = &r->layers[li - 1];
    if (P->h % stride || P->w % stride)
        return ntp__dn_sect_error(r, s, s->line, NTP_STATUS_SHAPE_ERROR,
                                  "stride=%lld must divide the %lldx%lld input", (long long)stride,
                                  (long long)P->h, (long long)P->w);
    int64_t c = P->c, h = P->h / stride, w = P->w / stride;
    const int64_t six[6] = {0, c, h, stride, w, stride}, perm[6] = {0, 3, 5, 1, 2, 4},
                  four[4] = {0, c * stride * stride, h, w};
    static const char *const part[] = {"split", "move", ""};
    for (int step = 0; step < 3; step++) {
        char nm[96];
        snprintf(nm, sizeof nm, "reorg%d%s%s", li, part[step][0] ? "_" : "", part[step]);
        int ni =
            ntp__dn_add_op(r, nm, step == 1 ? NTP_OP_TRANSPOSE : NTP_OP_RESHAPE, s->line, &t, 1);
        if (ni < 0)
            return ntp__dn_oom(r);
        ntp_attrs *a = &r->g->nodes[ni].a;
        if (step == 1) {
            a->n_perm = 6;
            memcpy(a->perm, perm, sizeof perm);
        } else {
            a->n_shape = step == 0 ? 6 : 4;
            memcpy(a->shape, step == 0 ? six : four, (size_t)a->n_shape * sizeof six[0]);
        }
        t = r->g->nodes[ni].out[0];
        L->node = L->last = ni;
    }
    L->tensor = t;
    L->c = c * stride * stride;
    L->h = h;
    L->w = w;
    L->kind = NTP_DARKNET_REORG;
    return NTP_STATUS_OK;
}

/* [crop]: at inference Darknet takes the centre crop_height x crop_width
 * window (forward_crop_layer with train=0), as a slice. It also maps each
 * value x to 2x-1 (unless [net] noadjust=1); that input scaling is left out
 * here (docs/darknet.md): it is an element-wise map Darknet counts no FLOPs
 * for, and random weights do not care. The augmentation keys (flip, angle,
 * saturation, exposure, hue, shift) are training-only. */
ntp_status ntp__dn_crop_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t ch, cw;
    if ((st = ntp__dn_get_int(r, s, "crop_height", 1, 1, 1 << 20, &ch)) ||
        (st = ntp__dn_get_int(r, s, "crop_width", 1, 1, 1 << 20, &cw)))
        return st;
    int in;
    if ((st = ntp__dn_as_4d(r, s, li - 1, &in)))
        return st;
    const ntp_darknet_layer *P = &r->layers[li - 1];
    if (ch > P->h || cw > P->w)
        return ntp__dn_sect_error(r, s, s->line, NTP_STATUS_SHAPE_ERROR,
                                  "crop %lldx%lld is larger than the %lldx%lld input",
                                  (long long)cw, (long long)ch, (long long)P->w, (long long)P->h);
    snprintf(r->name, sizeof r->name, "crop%d", li);
    int ni = ntp__dn_add_op(r, r->name, NTP_OP_SLICE, s->line, &in, 1);
    if (ni < 0)
        return ntp__dn_oom(r);
    int64_t dh = (P->h - ch) / 2, dw = (P->w - cw) / 2;
    const int64_t starts[2] = {dh, dw}, ends[2] = {dh + ch, dw + cw}, axes[2] = {2, 3};
    ntp__slice_set(&r->g->nodes[ni].a, 2, starts, ends, axes, NULL);
    L->node = L->last = ni;
    L->tensor = r->g->nodes[ni].out[0];
    L->c = P->c;
    L->h = ch;
    L->w = cw;
    L->kind = NTP_DARKNET_CROP;
    return NTP_STATUS_OK;
}

/* [local] (forward_local_layer): a convolution whose weights differ at
 * every output position. Darknet's im2col of the input (its `pad` flag is
 * passed as the padding in pixels), then per position p a [filters x
 * c*size*size] product, plus a bias per output value. Here: the padded
 * input's size*size strided windows (slices), concatenated and transposed
 * into one column per position ([N, positions*c*size*size, 1, 1]), and a
 * 1x1 convolution with one group per position, whose weights
 * [positions*filters, c*size*size] are Darknet's in Darknet's order; then
 * back to [N, filters, out_h, out_w]. */
ntp_status ntp__dn_local_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t filters, size, stride, pad;
    if ((st = ntp__dn_get_int(r, s, "filters", 1, 1, 1 << 20, &filters)) ||
        (st = ntp__dn_get_int(r, s, "size", 1, 1, 64, &size)) ||
        (st = ntp__dn_get_int(r, s, "stride", 1, 1, 1024, &stride)) ||
        (st = ntp__dn_get_int(r, s, "pad", 0, 0, 1, &pad)))
        return st;
    ntp_op act;
    const char *act_name;
    if ((st = ntp__dn_parse_act(r, s, "logistic", &act, &act_name)))
        return st;
    int x;
    if ((st = ntp__dn_need_image(r, s, li)) || (st = ntp__dn_as_4d(r, s, li - 1, &x)))
        return st;
    const ntp_darknet_layer *P = &r->layers[li - 1];
    /* local_out_height: (h - (pad ? 1 : size)) / stride + 1; im2col_cpu:
     * (h + 2 pad - size) / stride + 1. They agree for pad=0 or size=3. */
    if (pad && size != 3)
        return ntp__dn_sect_error(
            r, s, s->line, NTP_STATUS_UNSUPPORTED,
            "pad=1 with size=%lld: Darknet's output size and its im2col disagree "
            "unless size=3; expected size=3 or pad=0",
            (long long)size);
    if (P->h + 2 * pad < size || P->w + 2 * pad < size)
        return ntp__dn_sect_error(r, s, s->line, NTP_STATUS_SHAPE_ERROR,
                                  "size=%lld does not fit the %lldx%lld input", (long long)size,
                                  (long long)P->h, (long long)P->w);
    int64_t C = P->c, oh = (P->h + 2 * pad - size) / stride + 1,
            ow = (P->w + 2 * pad - size) / stride + 1, pos = oh * ow, kk = size * size;
    char base[32], nm[96];
    snprintf(base, sizeof base, "local%d", li);
    if (pad) {
        snprintf(nm, sizeof nm, "%s_pad", base);
        int ni = ntp__dn_add_op(r, nm, NTP_OP_PAD, s->line, &x, 1);
        if (ni < 0)
            return ntp__dn_oom(r);
        ntp_attrs *a = &r->g->nodes[ni].a;
        a->n_pads = 8;
        memset(a->pads, 0, sizeof a->pads);
        a->pads[2] = a->pads[3] = a->pads[6] = a->pads[7] = pad;
        a->pad_mode = NTP_PADMODE_CONSTANT;
        a->value = 0;
        x = r->g->nodes[ni].out[0];
    }
    int *cols = malloc((size_t)kk * sizeof *cols);
    if (!cols)
        return ntp__dn_oom(r);
    for (int64_t k = 0; k < kk; k++) {
        snprintf(nm, sizeof nm, "%s_col%lld", base, (long long)k);
        int ni = ntp__dn_add_op(r, nm, NTP_OP_SLICE, s->line, &x, 1);
        if (ni < 0) {
            free(cols);
            return ntp__dn_oom(r);
        }
        int64_t ky = k / size, kx = k % size;
        const int64_t starts[2] = {ky, kx},
                      ends[2] = {ky + (oh - 1) * stride + 1, kx + (ow - 1) * stride + 1},
                      axes[2] = {2, 3}, steps[2] = {stride, stride};
        ntp__slice_set(&r->g->nodes[ni].a, 2, starts, ends, axes, steps);
        cols[k] = r->g->nodes[ni].out[0];
    }
    snprintf(nm, sizeof nm, "%s_cols", base);
    st = ntp__dn_concat_all(r, s, nm, 1, cols, (int)kk, &x); /* [N, kk*C, oh, ow] */
    free(cols);
    if (st)
        return st;
    /* [N, kk, C, pos] -> [N, pos, C, kk] -> [N, pos*C*kk, 1, 1]: Darknet's
     * column of position p is c*size*size + ky*size + kx. */
    const int64_t s1[4] = {0, kk, C, pos}, p1[4] = {0, 3, 2, 1}, s2[4] = {0, pos * C * kk, 1, 1};
    static const char *const part1[] = {"split", "move", "columns"};
    for (int step = 0; step < 3; step++) {
        snprintf(nm, sizeof nm, "%s_%s", base, part1[step]);
        int ni =
            ntp__dn_add_op(r, nm, step == 1 ? NTP_OP_TRANSPOSE : NTP_OP_RESHAPE, s->line, &x, 1);
        if (ni < 0)
            return ntp__dn_oom(r);
        ntp_attrs *a = &r->g->nodes[ni].a;
        if (step == 1) {
            a->n_perm = 4;
            memcpy(a->perm, p1, sizeof p1);
        } else {
            a->n_shape = 4;
            memcpy(a->shape, step == 0 ? s1 : s2, sizeof s1);
        }
        x = r->g->nodes[ni].out[0];
    }
    int ci = ntp__dn_add_op(r, base, NTP_OP_CONV, s->line, &x, 1);
    if (ci < 0)
        return ntp__dn_oom(r);
    ntp_attrs *a = &r->g->nodes[ci].a;
    a->filters = pos * filters;
    a->n_kernel = a->n_stride = a->n_pad = 1;
    a->kernel[0] = a->stride[0] = 1;
    a->pad[0] = 0;
    a->pad_kind = NTP_PAD_EXPLICIT;
    a->groups = pos;
    a->bias = true;
    x = r->g->nodes[ci].out[0];
    /* [N, pos*F, 1, 1] -> [N, pos, F] -> [N, F, pos] -> [N, F, oh, ow] */
    const int64_t s3[3] = {0, pos, filters}, p2[3] = {0, 2, 1}, s4[4] = {0, filters, oh, ow};
    static const char *const part2[] = {"positions", "back", "image"};
    for (int step = 0; step < 3; step++) {
        snprintf(nm, sizeof nm, "%s_%s", base, part2[step]);
        int ni =
            ntp__dn_add_op(r, nm, step == 1 ? NTP_OP_TRANSPOSE : NTP_OP_RESHAPE, s->line, &x, 1);
        if (ni < 0)
            return ntp__dn_oom(r);
        a = &r->g->nodes[ni].a;
        if (step == 1) {
            a->n_perm = 3;
            memcpy(a->perm, p2, sizeof p2);
        } else {
            a->n_shape = step == 0 ? 3 : 4;
            memcpy(a->shape, step == 0 ? s3 : s4, (size_t)a->n_shape * sizeof s4[0]);
        }
        x = r->g->nodes[ni].out[0];
    }
    int last = r->g->n_nodes - 1;
    if ((st = ntp__dn_act_node(r, s->line, base, act_name, act, &x, &last)))
        return st;
    ntp__dn_add_block(L, NTP_DARKNET_BLOCK_LOCAL, ci, -1, 0);
    L->node = ci;
    L->last = last;
    L->tensor = x;
    L->c = filters;
    L->h = oh;
    L->w = ow;
    L->kind = NTP_DARKNET_LOCAL;
    return NTP_STATUS_OK;
}

/* [deconvolutional] (forward_deconvolutional_layer): a transposed
 * convolution. Darknet's weights are [c][filters][size][size], the layout
 * of ntprof's deconv (ONNX's ConvTranspose); its output is (in - 1) x
 * stride + size - 2 x padding, col2im dropping what falls in the padding.
 * With batch_normalize the norm follows (the biases are its shift), then
 * the activation (Darknet's default logistic). */
ntp_status ntp__dn_deconv_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    int64_t filters, size, stride, pad, padding, bn;
    if ((st = ntp__dn_get_int(r, s, "filters", 1, 1, 1 << 20, &filters)) ||
        (st = ntp__dn_get_int(r, s, "size", 1, 1, 1024, &size)) ||
        (st = ntp__dn_get_int(r, s, "stride", 1, 1, 1024, &stride)) ||
        (st = ntp__dn_get_int(r, s, "pad", 0, 0, 1, &pad)) ||
        (st = ntp__dn_get_int(r, s, "padding", 0, 0, 1024, &padding)) ||
        (st = ntp__dn_get_int(r, s, "batch_normalize", 0, 0, 1, &bn)))
        return st;
    if (pad)
        padding = size / 2;
    int in;
    if ((st = ntp__dn_need_image(r, s, li)) || (st = ntp__dn_as_4d(r, s, li - 1, &in)))
        return st;
    const ntp_darknet_layer *P = &r->layers[li - 1];
    int64_t oh = (P->h - 1) * stride + size - 2 * padding,
            ow = (P->w - 1) * stride + size - 2 * padding;
    if (oh < 1 || ow < 1)
        return ntp__dn_sect_error(
            r, s, s->line, NTP_STATUS_SHAPE_ERROR,
            "padding %lld leaves no output of the %lldx%lld input with size=%lld "
            "and stride=%lld",
            (long long)padding, (long long)P->w, (long long)P->h, (long long)size,
            (long long)stride);
    snprintf(r->name, sizeof r->name, "deconv%d", li);
    int ni = ntp__dn_add_op(r, r->name, NTP_OP_DECONV, s->line, &in, 1);
    if (ni < 0)
        return ntp__dn_oom(r);
    ntp_attrs *a = &r->g->nodes[ni].a;
    a->filters = filters;
    a->n_kernel = a->n_stride = a->n_pad = 1;
    a->kernel[0] = size;
    a->stride[0] = stride;
    a->pad[0] = padding;
    a->pad_kind = NTP_PAD_EXPLICIT;
    a->groups = 1;
    a->bias = !bn;
    L->node = L->last = ni;
    int t = r->g->nodes[ni].out[0];
    if ((bn && (st = ntp__dn_add_bn(r, s->line, r->name, &t, &L->last, &L->bn_node))) ||
        (st = ntp__dn_activation(r, s, r->name, "logistic", &t, &L->last)))
        return st;
    ntp__dn_add_block(L, NTP_DARKNET_BLOCK_CONV, ni, L->bn_node, 0);
    L->tensor = t;
    L->c = filters;
    L->h = oh;
    L->w = ow;
    L->kind = NTP_DARKNET_DECONV;
    L->bn = bn;
    return NTP_STATUS_OK;
}

/* The previous layer's shape and output for a layer that keeps them
 * ([batchnorm], [activation]): *L becomes a copy of it. */
static const ntp_darknet_layer *same_shape(reader *r, int li, ntp_darknet_layer *L,
                                           ntp_darknet_kind kind)
{
    int line = L->line, first = L->first;
    *L = r->layers[li - 1];
    L->line = line;
    L->first = first;
    L->n_blocks = 0;
    L->node = L->bn_node = -1;
    L->kind = kind;
    L->bn = false;
    return &r->layers[li - 1];
}

/* [batchnorm] (forward_batchnorm_layer): the previous layer's output
 * normalised per channel with the rolling statistics, then scaled. Darknet
 * neither saves nor loads a [batchnorm]'s biases (save_batchnorm_weights,
 * load_batchnorm_weights: scales, means, variances), so at inference its
 * shift is zero: here a zero "bias" made by the reader, which generated
 * weights leave alone. */
ntp_status ntp__dn_batchnorm_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_status st;
    if ((st = ntp__dn_need_image(r, s, li)))
        return st;
    const ntp_darknet_layer *P = same_shape(r, li, L, NTP_DARKNET_BATCHNORM);
    char base[32];
    snprintf(base, sizeof base, "batchnorm%d", li);
    int t = P->tensor, bi = -1;
    if ((st = ntp__dn_add_bn(r, s->line, base, &t, &L->last, &bi)))
        return st;
    ntp_shape c = ntp__dn_shp(1, P->c, 0, 0, 0);
    if ((st = ntp__dn_own_weight(r, bi, "scale", NTP_TENSOR_WEIGHT, c)) ||
        (st = ntp__dn_own_weight(r, bi, "bias", NTP_TENSOR_WEIGHT, c)) ||
        (st = ntp__dn_own_weight(r, bi, "mean", NTP_TENSOR_BUFFER, c)) ||
        (st = ntp__dn_own_weight(r, bi, "var", NTP_TENSOR_BUFFER, c)))
        return st;
    ntp_tensor *shift = &r->g->tensors[r->g->nodes[bi].w[1]];
    shift->data = calloc((size_t)P->c, sizeof(float));
    if (!shift->data)
        return ntp__dn_oom(r);
    shift->data_dtype = NTP_DTYPE_F32;
    L->node = L->bn_node = bi;
    L->tensor = t;
    ntp__dn_add_block(L, NTP_DARKNET_BLOCK_BN, bi, bi, 0);
    return NTP_STATUS_OK;
}

/* [activation] (forward_activation_layer): the previous layer's output
 * through `activation`, Darknet's default here linear (a copy, which
 * computes nothing: no layer). */
ntp_status ntp__dn_activation_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    ntp_op op = NTP_OP_COUNT; /* set by parse_act on success */
    const char *name;
    ntp_status st = ntp__dn_parse_act(r, s, "linear", &op, &name);
    if (st)
        return st;
    const ntp_darknet_layer *P = same_shape(r, li, L, NTP_DARKNET_ACTIVATION);
    char base[32];
    snprintf(base, sizeof base, "activation%d", li);
    int t = P->tensor, last = -1;
    const dn_opt *o = ntp__dn_find(s, "activation");
    if ((st = ntp__dn_act_node(r, o ? o->line : s->line, base, name, op, &t, &last)))
        return st;
    if (last >= 0)
        L->node = L->last = last;
    L->tensor = t;
    return NTP_STATUS_OK;
}

/* [detection], a [region] with a WordTree, [cost]: the loss and the
 * decoding of boxes, outside the network's arithmetic. The layer passes
 * its input through; a detection head's input is a graph output. */
static ntp_status passthrough_layer(reader *r, int li, ntp_darknet_layer *L, bool head)
{
    same_shape(r, li, L, NTP_DARKNET_PASSTHROUGH);
    if (head) {
        int *o = realloc(r->outs, ((size_t)r->n_outs + 1) * sizeof *o);
        if (!o)
            return ntp__dn_oom(r);
        r->outs = o;
        r->outs[r->n_outs++] = L->tensor;
    }
    return NTP_STATUS_OK;
}

/* [yolo] and [region] (forward_yolo_layer, forward_region_layer at
 * inference): the box decoding's activations on the head, a darknet_head
 * inlay whose output is a network output, as network_predict returns it.
 * A [region] with a WordTree (tree=, softmax_tree: yolo9000) stays a
 * pass-through, its input the output. A [detection] (YOLOv1) is one: at
 * inference forward_detection_layer copies its input, and only with
 * softmax=1 (no bundled .cfg) takes a softmax over each cell's classes,
 * which is not done here (a warning says so; docs/darknet.md). */
ntp_status ntp__dn_head_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    bool yolo = !strcmp(s->type, "yolo"), region = !strcmp(s->type, "region");
    const dn_opt *sm = ntp__dn_find(s, "softmax");
    if (!(yolo || region) && sm && strcmp(sm->val, "0") != 0)
        /* forward_detection_layer's only arithmetic at inference */
        ntp__warn(r->ctx,
                  "%s:%d: [detection] (layer %d): softmax=%s is not applied: the output is the "
                  "layer's input, without Darknet's softmax over the classes of each cell",
                  r->src, sm->line, li, sm->val);
    if (!(yolo || region) || (region && ntp__dn_find(s, "tree")))
        return passthrough_layer(r, li, L, true);
    ntp_status st;
    int64_t classes, num, coords = 4, softmax = 0, background = 0;
    if ((st = ntp__dn_get_int(r, s, "classes", 20, 0, 1 << 20, &classes)) ||
        (st = ntp__dn_get_int(r, s, "num", 1, 1, 1 << 20, &num)))
        return st;
    if (region && ((st = ntp__dn_get_int(r, s, "coords", 4, 2, 1 << 20, &coords)) ||
                   (st = ntp__dn_get_int(r, s, "softmax", 0, 0, 1, &softmax)) ||
                   (st = ntp__dn_get_int(r, s, "background", 0, 0, 1, &background))))
        return st;
    const dn_opt *mask = yolo ? ntp__dn_find(s, "mask") : NULL;
    if (mask) {
        /* parse_yolo_mask: the anchors this head uses, one per entry */
        num = 0;
        for (const char *p = mask->val; *p;) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p || v < 0 || (*end && *end != ','))
                return ntp__dn_sect_error(r, s, mask->line, NTP_STATUS_PARSE_ERROR,
                                          "'mask': expected anchor indices separated by commas, "
                                          "got '%s'",
                                          mask->val);
            num++;
            p = *end ? end + 1 : end;
        }
    }
    if ((st = ntp__dn_need_image(r, s, li)))
        return st;
    int t;
    if ((st = ntp__dn_as_4d(r, s, li - 1, &t)))
        return st;
    const ntp_darknet_layer *P = same_shape(r, li, L, NTP_DARKNET_PASSTHROUGH);
    if (P->c != num * (coords + 1 + classes))
        return ntp__dn_sect_error(r, s, s->line, NTP_STATUS_SHAPE_ERROR,
                                  "expected %lld channels in, %lld anchors x (%lld coords + 1 + "
                                  "%lld classes); the layer before gives %lld",
                                  (long long)(num * (coords + 1 + classes)), (long long)num,
                                  (long long)coords, (long long)classes, (long long)P->c);
    snprintf(r->name, sizeof r->name, "%s%d", s->type, li);
    int ni = ntp__dn_add_op(r, r->name, NTP_OP_DARKNET_HEAD, s->line, &t, 1);
    if (ni < 0)
        return ntp__dn_oom(r);
    ntp_attrs *a = &r->g->nodes[ni].a;
    a->head = yolo ? NTP_HEAD_YOLO : NTP_HEAD_REGION;
    a->anchors = num;
    a->classes = classes;
    a->coords = coords;
    a->head_softmax = softmax;
    a->background = background;
    L->node = L->last = ni;
    L->tensor = r->g->nodes[ni].out[0];
    L->flat = false;
    int *o = realloc(r->outs, ((size_t)r->n_outs + 1) * sizeof *o);
    if (!o)
        return ntp__dn_oom(r);
    r->outs = o;
    r->outs[r->n_outs++] = L->tensor;
    return NTP_STATUS_OK;
}

ntp_status ntp__dn_cost_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L)
{
    (void)s;
    return passthrough_layer(r, li, L, false);
}
