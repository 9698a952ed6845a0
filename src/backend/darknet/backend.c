/* The Darknet backend: each layer run by Darknet's own layer code.
 *
 * Darknet is a framework, not a kernel library: its layers are built from
 * a .cfg and run through the `forward` function each layer carries. So this
 * backend builds every ntprof layer it supports as a small Darknet network
 * from a generated .cfg (parse_network_cfg, Darknet's own constructor, with
 * its own workspace), copies ntprof's weights into Darknet's arrays, and
 * runs the layer by calling its `forward` with the network's input and the
 * layer's output pointed at ntprof's buffers: no copies around the call, so
 * the time is Darknet's forward alone.
 *
 * A [route] or [shortcut] reads other layers' outputs through
 * net.layers[i].output: the generated network puts 1x1 convolutions of the
 * right shapes there as placeholders, and execute points a copy of the
 * layer array at ntprof's input buffers.
 *
 * libdarknet is opened at run time (dlopen): it drags OpenCV in, which
 * every other run of ntprof should not pay for, and without it the backend
 * is simply unavailable. Only parse_network_cfg and free_network are looked
 * up; forward functions come with the layers. darknet.h gives the layouts.
 *
 * What Darknet lacks (mish, swish, every op outside its layer types) falls
 * back to the reference backend per layer, as for every backend. */
#include <dlfcn.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend-impl.h"
#include "darknet.h"
#include "graph/op-onnx-impl.h"

#ifndef NTP_DARKNET_SONAME
#define NTP_DARKNET_SONAME "libdarknet.so"
#endif

static struct {
    bool tried, ok;
    char why[256];
    network *(*parse)(char *);
    void (*free_net)(network *);
    void (*load)(network *, char *); /* load_weights: units only (NULL: none) */
} dn;

static bool dn_open(void)
{
    if (dn.tried)
        return dn.ok;
    dn.tried = true;
    void *h = dlopen(NTP_DARKNET_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(dn.why, sizeof dn.why, "libdarknet cannot be opened (%s)", dlerror());
        return false;
    }
    dn.parse = (network * (*)(char *)) dlsym(h, "parse_network_cfg");
    dn.free_net = (void (*)(network *))dlsym(h, "free_network");
    dn.load = (void (*)(network *, char *))dlsym(h, "load_weights");
    if (!dn.parse || !dn.free_net) {
        snprintf(dn.why, sizeof dn.why, "%s lacks parse_network_cfg or free_network",
                 NTP_DARKNET_SONAME);
        return false;
    }
    dn.ok = true;
    return true;
}

static bool dnb_available(char *why, size_t len)
{
    if (dn_open())
        return true;
    if (why)
        snprintf(why, len, "%s", dn.why);
    return false;
}

/* The Darknet section that runs each op this backend runs (DN_NONE: the
 * others, which stay on the reference backend). */
typedef enum dn_section {
    DN_NONE,
    DN_CONVOLUTIONAL,
    DN_CONNECTED,
    DN_MAXPOOL,
    DN_AVGPOOL,
    DN_BATCHNORM,
    DN_ACTIVATION,
    DN_SOFTMAX,
    DN_SHORTCUT,
    DN_ROUTE,
    DN_UPSAMPLE,
} dn_section;

static const dn_section sections[NTP_OP_COUNT] = {
    [NTP_OP_CONV] = DN_CONVOLUTIONAL,    [NTP_OP_FC] = DN_CONNECTED,
    [NTP_OP_MAXPOOL] = DN_MAXPOOL,       [NTP_OP_GLOBAL_AVGPOOL] = DN_AVGPOOL,
    [NTP_OP_BATCHNORM] = DN_BATCHNORM,   [NTP_OP_RELU] = DN_ACTIVATION,
    [NTP_OP_LEAKY_RELU] = DN_ACTIVATION, [NTP_OP_SIGMOID] = DN_ACTIVATION,
    [NTP_OP_TANH] = DN_ACTIVATION,       [NTP_OP_ELU] = DN_ACTIVATION,
    [NTP_OP_SOFTMAX] = DN_SOFTMAX,       [NTP_OP_ADD] = DN_SHORTCUT,
    [NTP_OP_CONCAT] = DN_ROUTE,          [NTP_OP_RESIZE] = DN_UPSAMPLE,
};

static dn_section section_of(ntp_op op)
{
    return (unsigned)op < NTP_OP_COUNT ? sections[op] : DN_NONE;
}

/* Darknet's activation of each unary op it has. */
static const char *const acts[NTP_OP_COUNT] = {
    [NTP_OP_RELU] = "relu", [NTP_OP_LEAKY_RELU] = "leaky", [NTP_OP_SIGMOID] = "logistic",
    [NTP_OP_TANH] = "tanh", [NTP_OP_ELU] = "elu",
};

/* Darknet's activation name for a unary op; NULL when it has none that
 * matches ntprof's definition (a relu with a ceiling; Darknet's leaky
 * slope is 0.1 and its elu's alpha 1). */
static const char *act_name(const ntp_node *n)
{
    if ((unsigned)n->op >= NTP_OP_COUNT || (n->op == NTP_OP_RELU && n->a.has_max) ||
        (n->op == NTP_OP_LEAKY_RELU && !(fabs(n->a.leaky_relu.slope - 0.1) < 1e-7)) ||
        (n->op == NTP_OP_ELU && !(fabs(n->a.elu.alpha - 1.0) < 1e-7)))
        return NULL;
    return acts[n->op];
}

static bool is4d(const ntp_shape *s)
{
    return s->ndim == 4;
}

/* The padding Darknet's [maxpool] would use for node n (begin = total/2 on
 * both dims), or -1. */
static int64_t maxpool_padding(const ntp_graph *g, const ntp_node *n)
{
    const ntp_attrs *a = &n->a;
    if (a->nk != 2 || a->kernel[0] != a->kernel[1] || a->stride[0] != a->stride[1] ||
        a->dilation[0] != 1 || a->dilation[1] != 1 || a->ceil_mode)
        return -1;
    int64_t p = a->pad[0] + a->pad[2];
    if (a->pad[1] + a->pad[3] != p || a->pad[0] != p / 2 || a->pad[1] != p / 2)
        return -1;
    const ntp_shape *in = &ntp__cin(g, n, 0)->shape, *out = &ntp__cout(g, n, 0)->shape;
    for (int d = 0; d < 2; d++)
        if ((in->dim[2 + d] + p - a->kernel[0]) / a->stride[0] + 1 != out->dim[2 + d])
            return -1;
    return p;
}

static bool dnb_supports(const ntp_graph *g, const ntp_node *n, ntp_dtype p)
{
    if (p != NTP_DTYPE_F32 || !dn_open())
        return false;
    for (int i = 0; i < n->n_in; i++)
        if (ntp__cin(g, n, i)->dtype != NTP_DTYPE_F32)
            return false;
    const ntp_shape *in = &ntp__cin(g, n, 0)->shape, *out = &ntp__cout(g, n, 0)->shape;
    const ntp_attrs *a = &n->a;
    switch (section_of(n->op)) {
    case DN_CONVOLUTIONAL:
        /* A 1x1 convolution must have stride 1 and no padding: this
         * Darknet's forward_convolutional_layer skips im2col for size 1
         * and multiplies the input as it is, so a strided one (ResNet's
         * downsample) reads the wrong pixels (ResNet-50: relative L2 0.67
         * against ref) and a padded one loses its border. */
        return is4d(in) && a->nk == 2 && a->kernel[0] == a->kernel[1] &&
               a->stride[0] == a->stride[1] && a->dilation[0] == 1 && a->dilation[1] == 1 &&
               a->pad[0] == a->pad[1] && a->pad[0] == a->pad[2] && a->pad[0] == a->pad[3] &&
               (a->kernel[0] != 1 || (a->stride[0] == 1 && a->pad[0] == 0));
    case DN_CONNECTED: return in->ndim == 2;
    case DN_MAXPOOL: return is4d(in) && maxpool_padding(g, n) >= 0;
    case DN_AVGPOOL: return is4d(in);
    case DN_BATCHNORM:
        /* Darknet's epsilon is fixed (sqrt(var) + 1e-6): only a layer whose
         * own epsilon is that small computes the same, to ~1e-5 relative. */
        return (is4d(in) || in->ndim == 2) && a->epsilon <= 1e-5;
    case DN_ACTIVATION: return act_name(n) != NULL;
    case DN_SOFTMAX: return in->ndim == 2 && (a->axis == -1 || a->axis == 1);
    case DN_SHORTCUT:
        return n->n_in == 2 && is4d(in) && ntp_shape_equal(in, &ntp__cin(g, n, 1)->shape) &&
               ntp_shape_equal(in, out);
    case DN_ROUTE:
        if (!is4d(in) || (a->axis != 1 && a->axis != -3))
            return false;
        for (int i = 1; i < n->n_in; i++) {
            const ntp_shape *s = &ntp__cin(g, n, i)->shape;
            if (!is4d(s) || s->dim[0] != in->dim[0] || s->dim[2] != in->dim[2] ||
                s->dim[3] != in->dim[3])
                return false;
        }
        return true;
    case DN_UPSAMPLE: {
        if (!is4d(in) || a->resize.mode != NTP_RESIZE_NEAREST ||
            a->resize.coord != NTP_RESIZE_ASYMMETRIC || a->resize.nearest != NTP_RESIZE_FLOOR ||
            in->dim[0] != out->dim[0] || in->dim[1] != out->dim[1])
            return false;
        int64_t s = out->dim[2] / in->dim[2];
        return s >= 1 && out->dim[2] == s * in->dim[2] && out->dim[3] == s * in->dim[3];
    }
    case DN_NONE: break;
    }
    return false;
}

/* --fuse: a Darknet [convolutional] or [connected] layer applies its own
 * activation after the bias (forward_convolutional_layer's activate_array),
 * so one Darknet-supported activation folds into a conv or fc. The engine
 * folds an inference batch norm into the weights first (as Darknet's
 * fuse_conv_batchnorm does), so conv + batch norm + activation is one
 * Darknet layer, as in a network Darknet parses itself. */
static bool dnb_fusable(const ntp_graph *g, const ntp_node *head, int n_fused, const ntp_node *next)
{
    (void)g;
    return n_fused == 0 && (head->op == NTP_OP_CONV || head->op == NTP_OP_FC) && next->n_in == 1 &&
           act_name(next) != NULL;
}

/* The Darknet layers that run a recurrent section whole (ntp_unit: the
 * .cfg reader records each [rnn], [gru], [lstm] and [crnn] with its text
 * and its weights in Darknet's order, and unrolls it for the other
 * backends). */
typedef enum dn_unit {
    DN_UNIT_NONE,
    DN_UNIT_RNN,
    DN_UNIT_GRU,
    DN_UNIT_LSTM,
    DN_UNIT_CRNN,
    DN_UNIT_LOCAL,
} dn_unit;

static dn_unit unit_kind(const ntp_unit *u)
{
    static const struct {
        const char *head;
        dn_unit kind;
    } heads[] = {{"[rnn]\n", DN_UNIT_RNN},
                 {"[gru]\n", DN_UNIT_GRU},
                 {"[lstm]\n", DN_UNIT_LSTM},
                 {"[crnn]\n", DN_UNIT_CRNN},
                 {"[local]\n", DN_UNIT_LOCAL}};
    if (!u || !u->kind || !u->text || strcmp(u->kind, "darknet") != 0)
        return DN_UNIT_NONE;
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++)
        if (strncmp(u->text, heads[i].head, strlen(heads[i].head)) == 0)
            return heads[i].kind;
    return DN_UNIT_NONE;
}

/* Darknet's forward function that runs each unit, the name its row shows. */
static const char *unit_impl(dn_unit k)
{
    switch (k) {
    case DN_UNIT_RNN: return "darknet:forward_rnn_layer";
    case DN_UNIT_GRU: return "darknet:forward_gru_layer";
    case DN_UNIT_LSTM: return "darknet:forward_lstm_layer";
    case DN_UNIT_CRNN: return "darknet:forward_crnn_layer";
    case DN_UNIT_LOCAL: return "darknet:forward_local_layer";
    case DN_UNIT_NONE: break;
    }
    return NULL;
}

static bool dnb_supports_unit(const ntp_graph *g, const ntp_unit *u, ntp_dtype p)
{
    (void)g;
    return p == NTP_DTYPE_F32 && dn_open() && dn.load && u->steps >= 1 &&
           unit_kind(u) != DN_UNIT_NONE;
}

typedef struct dnb_node {
    network *net;
    int main;      /* the layer that is the node */
    layer *shadow; /* a copy of net->layers for [route]/[shortcut] inputs */
    dn_unit unit;  /* a recurrent section run whole, or DN_UNIT_NONE */
    void *ws;      /* [crnn]: a workspace for its inner convolutions */
} dnb_node;

/* Append a section to the generated .cfg. */
static void put(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void put(char *buf, size_t len, const char *fmt, ...)
{
    size_t n = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, len - n, fmt, ap);
    va_end(ap);
}

/* The network for node k->node as .cfg text; *main gets its layer index. */
static void gen_cfg(const ntp_kargs *k, char *cfg, size_t len, int *main)
{
    const ntp_node *n = k->node;
    const ntp_shape *in = &k->in[0].shape, *out = &k->out[0].shape;
    const ntp_attrs *a = &n->a;
    long long b = in->dim[0];
    cfg[0] = '\0';
    *main = 0;
    if (in->ndim == 4)
        put(cfg, len, "[net]\nbatch=%lld\nwidth=%lld\nheight=%lld\nchannels=%lld\n", b,
            (long long)in->dim[3], (long long)in->dim[2], (long long)in->dim[1]);
    else
        put(cfg, len, "[net]\nbatch=%lld\nwidth=1\nheight=1\nchannels=%lld\n", b,
            (long long)ntp_shape_numel(in) / b);
    /* --fuse: the activation folded into a convolution or connected layer
     * is that layer's own, as in Darknet's networks (dnb_fusable). */
    const char *act = k->n_fused ? act_name(k->fused[0]) : "linear";
    switch (section_of(n->op)) {
    case DN_CONVOLUTIONAL:
        put(cfg, len,
            "[convolutional]\nfilters=%lld\nsize=%lld\nstride=%lld\npadding=%lld\ngroups=%lld\n"
            "activation=%s\n",
            (long long)a->filters, (long long)a->kernel[0], (long long)a->stride[0],
            (long long)a->pad[0], (long long)a->groups, act);
        break;
    case DN_CONNECTED:
        put(cfg, len, "[connected]\noutput=%lld\nactivation=%s\n", (long long)a->units, act);
        break;
    case DN_MAXPOOL:
        put(cfg, len, "[maxpool]\nsize=%lld\nstride=%lld\npadding=%lld\n", (long long)a->kernel[0],
            (long long)a->stride[0], (long long)maxpool_padding(k->g, n));
        break;
    case DN_AVGPOOL: put(cfg, len, "[avgpool]\n"); break;
    case DN_BATCHNORM: put(cfg, len, "[batchnorm]\n"); break;
    case DN_SOFTMAX: put(cfg, len, "[softmax]\n"); break;
    case DN_UPSAMPLE:
        put(cfg, len, "[upsample]\nstride=%lld\n", (long long)(out->dim[2] / in->dim[2]));
        break;
    case DN_SHORTCUT:
        /* layer 0: a placeholder whose output execute points at input 1 */
        put(cfg, len,
            "[convolutional]\nfilters=%lld\nsize=1\nactivation=linear\n"
            "[shortcut]\nfrom=0\nactivation=linear\n",
            (long long)in->dim[1]);
        *main = 1;
        break;
    case DN_ROUTE:
        for (int i = 0; i < k->n_in; i++)
            put(cfg, len, "[convolutional]\nfilters=%lld\nsize=1\nactivation=linear\n",
                (long long)k->in[i].shape.dim[1]);
        put(cfg, len, "[route]\nlayers=");
        for (int i = 0; i < k->n_in; i++)
            put(cfg, len, "%s%d", i ? "," : "", i);
        put(cfg, len, "\n");
        *main = k->n_in;
        break;
    /* Only a supported layer gets here (dnb_supports). */
    case DN_ACTIVATION:
    case DN_NONE: put(cfg, len, "[activation]\nactivation=%s\n", act_name(n)); break;
    }
}

/* Darknet prints while it builds a network and loads weights: keep its
 * lines off the terminal (the library prints nothing). */
static int quiet(void)
{
    fflush(stderr);
    int saved = dup(2), null = open("/dev/null", O_WRONLY);
    if (saved >= 0 && null >= 0)
        dup2(null, 2);
    if (null >= 0)
        close(null);
    return saved;
}

static void unquiet(int saved)
{
    fflush(stderr);
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }
}

/* parse_network_cfg on `cfg`, with the lines Darknet prints while it builds
 * the network kept off the terminal (the library prints nothing). */
static network *build(ntp_ctx *ctx, const ntp_kargs *k, const char *cfg)
{
    char path[] = "/tmp/ntprof-darknet-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        ntp__be_kerror(ctx, "darknet", k, NTP_STATUS_IO_ERROR, "cannot create a temporary .cfg");
        return NULL;
    }
    size_t len = strlen(cfg);
    bool ok = write(fd, cfg, len) == (ssize_t)len;
    close(fd);
    if (!ok) {
        unlink(path);
        ntp__be_kerror(ctx, "darknet", k, NTP_STATUS_IO_ERROR, "cannot write a temporary .cfg");
        return NULL;
    }
    int saved = quiet();
    network *net = dn.parse(path);
    unquiet(saved);
    unlink(path);
    return net;
}

static void fill(float *dst, const ntp_buf *src, int64_t n)
{
    if (src && src->data)
        memcpy(dst, src->data, (size_t)n * sizeof *dst);
    else
        memset(dst, 0, (size_t)n * sizeof *dst);
}

/* The unit's weights as a Darknet .weights file (version 0.2: three
 * int32 and an 8-byte count of images seen, then its slices in the order
 * Darknet's load_weights reads them), loaded by load_weights itself: the
 * inner layers get their weights as Darknet puts them. */
static ntp_status unit_weights(ntp_ctx *ctx, const ntp_kargs *k, network *net)
{
    char path[] = "/tmp/ntprof-darknet-weights-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return ntp__be_kerror(ctx, "darknet", k, NTP_STATUS_IO_ERROR,
                              "cannot create a temporary .weights file");
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        close(fd);
        unlink(path);
        return ntp__be_kerror(ctx, "darknet", k, NTP_STATUS_IO_ERROR,
                              "cannot write a temporary .weights file");
    }
    const int32_t head[3] = {0, 2, 0};
    const uint64_t seen = 0;
    bool ok = fwrite(head, sizeof head, 1, f) == 1 && fwrite(&seen, sizeof seen, 1, f) == 1;
    const ntp_unit *u = k->unit;
    for (int i = 0; ok && i < u->n_slices; i++) {
        const ntp_unit_slice *sl = &u->slices[i];
        const float *d = k->unit_w[sl->tensor];
        if (!d || k->g->tensors[sl->tensor].dtype != NTP_DTYPE_F32 ||
            sl->at + sl->n > ntp_shape_numel(&k->g->tensors[sl->tensor].shape)) {
            fclose(f);
            unlink(path);
            return ntp__be_kerror(ctx, "darknet", k, NTP_STATUS_INTERNAL,
                                  "weight '%s' of the section is not f32 data of %lld values",
                                  k->g->tensors[sl->tensor].name, (long long)(sl->at + sl->n));
        }
        ok = fwrite(d + sl->at, sizeof *d, (size_t)sl->n, f) == (size_t)sl->n;
    }
    ok = fclose(f) == 0 && ok;
    if (ok) {
        int saved = quiet();
        dn.load(net, path);
        unquiet(saved);
    }
    unlink(path);
    if (!ok)
        return ntp__be_kerror(ctx, "darknet", k, NTP_STATUS_IO_ERROR,
                              "cannot write a temporary .weights file");
    return NTP_STATUS_OK;
}

/* A recurrent section as Darknet's own layer: a network of that one
 * section (its .cfg text as the file gives it) over the unit's time steps,
 * with ntprof's weights loaded in Darknet's order. */
static ntp_status unit_prepare(ntp_ctx *ctx, ntp_kargs *k, void **node_state)
{
    const ntp_shape *in = &k->in[0].shape;
    int64_t T = k->unit->steps, rows = in->dim[0];
    if (in->ndim < 2 || rows % T != 0)
        return ntp__be_kerror(ctx, "darknet", k, NTP_STATUS_BACKEND_ERROR,
                              "the section's input has %lld rows, not a multiple of its %lld "
                              "time steps",
                              (long long)rows, (long long)T);
    size_t len = strlen(k->unit->text) + 256;
    char *cfg = malloc(len);
    if (!cfg)
        return ntp__be_kerror(ctx, "darknet", k, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    /* Darknet's batch is the sequences; its layers see batch x time_steps */
    snprintf(cfg, len, "[net]\nbatch=%lld\ntime_steps=%lld\n", (long long)(rows / T), (long long)T);
    if (in->ndim == 4)
        put(cfg, len, "width=%lld\nheight=%lld\nchannels=%lld\n", (long long)in->dim[3],
            (long long)in->dim[2], (long long)in->dim[1]);
    else /* rows of features: a 1x1 image, as Darknet sees a [connected]'s output */
        put(cfg, len, "width=1\nheight=1\nchannels=%lld\n",
            (long long)(ntp_shape_numel(in) / rows));
    put(cfg, len, "%s", k->unit->text);
    network *net = build(ctx, k, cfg);
    free(cfg);
    if (!net)
        return ntp__be_kerror(ctx, "darknet", k, NTP_STATUS_BACKEND_ERROR,
                              "parse_network_cfg failed on the section");
    dnb_node *nd = calloc(1, sizeof *nd);
    if (!nd) {
        dn.free_net(net);
        return ntp__be_kerror(ctx, "darknet", k, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    nd->net = net;
    nd->unit = unit_kind(k->unit);
    net->train = 0;
    layer *l = &net->layers[0];
    ntp_status st = NTP_STATUS_OK;
    /* a recurrent layer's batch is the sequences, over l->steps; a
     * [local]'s is every row (steps 0) */
    int steps = l->steps > 1 ? l->steps : 1;
    if (net->n != 1 || (int64_t)l->outputs * l->batch * steps != ntp_shape_numel(&k->out[0].shape))
        st = ntp__be_kerror(ctx, "darknet", k, NTP_STATUS_BACKEND_ERROR,
                            "Darknet's section has %d outputs per row over %d x %d rows, ntprof "
                            "expects %lld values",
                            l->outputs, l->batch, steps,
                            (long long)ntp_shape_numel(&k->out[0].shape));
    /* parse_network_cfg never sizes the workspace for a [crnn]'s inner
     * convolutions (they are not in net->layers), and takes a [local]'s
     * workspace_size, which is in floats, for bytes: give them one. */
    if (!st && (nd->unit == DN_UNIT_CRNN || nd->unit == DN_UNIT_LOCAL)) {
        size_t need = nd->unit == DN_UNIT_LOCAL ? l->workspace_size * sizeof(float) : 0;
        const layer *inner[3] = {l->input_layer, l->self_layer, l->output_layer};
        for (int i = 0; nd->unit == DN_UNIT_CRNN && i < 3; i++)
            if (inner[i] && inner[i]->workspace_size > need)
                need = inner[i]->workspace_size;
        if (!(nd->ws = calloc(1, need + sizeof(float))))
            st = ntp__be_kerror(ctx, "darknet", k, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    if (!st)
        st = unit_weights(ctx, k, net);
    if (st) {
        dn.free_net(net);
        free(nd->ws);
        free(nd);
        return st;
    }
    *node_state = nd;
    return NTP_STATUS_OK;
}

/* One call of the section's forward, from a zero state as ntprof's every
 * pass starts (Darknet keeps the state from one call to the next at
 * inference: cleared here, inside the timed call, a memset of one step's
 * state), its output written into ntprof's buffer. */
static void unit_execute(dnb_node *nd, const ntp_kargs *k)
{
    network net = *nd->net;
    net.input = k->in[0].data;
    net.train = 0;
    if (nd->ws)
        net.workspace = nd->ws;
    layer l = net.layers[0];
    size_t state = (size_t)l.outputs * (size_t)l.batch * sizeof(float);
    switch (nd->unit) {
    case DN_UNIT_RNN:
    case DN_UNIT_CRNN: {
        /* the output is the inner output layer's, stepped through by the
         * forward's own copy of it */
        if (nd->unit == DN_UNIT_CRNN)
            state = (size_t)l.hidden * (size_t)l.batch * sizeof(float);
        memset(l.state, 0, state);
        float *own = l.output_layer->output;
        l.output_layer->output = k->out[0].data;
        l.forward(l, net);
        l.output_layer->output = own;
        return;
    }
    case DN_UNIT_GRU: memset(l.state, 0, state); break;
    case DN_UNIT_LSTM:
        memset(l.c_cpu, 0, state);
        memset(l.h_cpu, 0, state);
        break;
    case DN_UNIT_LOCAL: break; /* no state */
    case DN_UNIT_NONE: return;
    }
    l.output = k->out[0].data;
    l.forward(l, net);
}

static ntp_status dnb_prepare(ntp_ctx *ctx, void *state, ntp_kargs *k, void **node_state,
                              size_t *workspace)
{
    (void)state;
    *workspace = 0;
    if (k->unit)
        return unit_prepare(ctx, k, node_state);
    char cfg[4096];
    int main;
    gen_cfg(k, cfg, sizeof cfg, &main);
    network *net = build(ctx, k, cfg);
    if (!net)
        return ntp__be_kerror(ctx, "darknet", k, NTP_STATUS_BACKEND_ERROR,
                              "parse_network_cfg failed on the generated network");
    dnb_node *nd = calloc(1, sizeof *nd);
    if (!nd) {
        dn.free_net(net);
        return ntp__be_kerror(ctx, "darknet", k, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    nd->net = net;
    nd->main = main;
    net->train = 0;
    layer *l = &net->layers[main];
    /* The generated layer must produce what ntprof expects. */
    if ((int64_t)l->outputs * l->batch != ntp_shape_numel(&k->out[0].shape)) {
        dn.free_net(net);
        free(nd);
        return ntp__be_kerror(
            ctx, "darknet", k, NTP_STATUS_BACKEND_ERROR,
            "Darknet's layer has %d outputs per image, ntprof expects %lld", l->outputs,
            (long long)(ntp_shape_numel(&k->out[0].shape) / k->out[0].shape.dim[0]));
    }
    const ntp_node *n = k->node;
    switch (section_of(n->op)) {
    case DN_CONVOLUTIONAL:
        fill(l->weights, &k->w[0], l->nweights);
        fill(l->biases, n->a.bias ? &k->w[1] : NULL, l->n);
        break;
    case DN_CONNECTED:
        fill(l->weights, &k->w[0], (int64_t)l->inputs * l->outputs);
        fill(l->biases, n->a.bias ? &k->w[1] : NULL, l->outputs);
        break;
    case DN_BATCHNORM:
        /* forward_batchnorm_layer keeps a copy of its input in l.x, which
         * make_batchnorm_layer does not allocate (only a convolution with
         * batch_normalize does): give it one; free_layer frees it. */
        if (!l->x && !(l->x = calloc((size_t)l->outputs * l->batch, sizeof *l->x))) {
            dn.free_net(net);
            free(nd);
            return ntp__be_kerror(ctx, "darknet", k, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        }
        fill(l->scales, &k->w[0], l->c);
        fill(l->biases, &k->w[1], l->c);
        fill(l->rolling_mean, &k->w[2], l->c);
        fill(l->rolling_variance, &k->w[3], l->c);
        break;
    /* No weights. */
    case DN_NONE:
    case DN_MAXPOOL:
    case DN_AVGPOOL:
    case DN_ACTIVATION:
    case DN_SOFTMAX:
    case DN_SHORTCUT:
    case DN_ROUTE:
    case DN_UPSAMPLE: break;
    }
    if (main > 0) {
        nd->shadow = malloc((size_t)net->n * sizeof *nd->shadow);
        if (!nd->shadow) {
            dn.free_net(net);
            free(nd);
            return ntp__be_kerror(ctx, "darknet", k, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        }
        memcpy(nd->shadow, net->layers, (size_t)net->n * sizeof *nd->shadow);
    }
    *node_state = nd;
    return NTP_STATUS_OK;
}

static ntp_status dnb_execute(ntp_ctx *ctx, void *state, void *node_state, const ntp_kargs *k)
{
    (void)ctx;
    (void)state;
    dnb_node *nd = node_state;
    if (nd->unit != DN_UNIT_NONE) {
        unit_execute(nd, k);
        return NTP_STATUS_OK;
    }
    network net = *nd->net;
    layer l = net.layers[nd->main];
    l.output = k->out[0].data;
    net.input = k->in[0].data;
    net.train = 0;
    if (nd->shadow) {
        if (k->node->op == NTP_OP_ADD) {
            nd->shadow[0].output = k->in[1].data;
        } else {
            for (int i = 0; i < k->n_in; i++)
                nd->shadow[i].output = k->in[i].data;
        }
        net.layers = nd->shadow;
    }
    l.forward(l, net);
    return NTP_STATUS_OK;
}

static void dnb_release_node(void *state, void *node_state)
{
    (void)state;
    dnb_node *nd = node_state;
    if (!nd)
        return;
    dn.free_net(nd->net);
    free(nd->shadow);
    free(nd->ws);
    free(nd);
}

static const char *dnb_impl_name(void *state, void *node_state)
{
    (void)state;
    const dnb_node *nd = node_state;
    return nd ? unit_impl(nd->unit) : NULL;
}

const ntp_backend_i ntp__backend_darknet = {
    .api_version = NTP_BACKEND_API_VERSION,
    .name = "darknet",
    .description = "the Darknet framework (libdarknet, pjreddie's C code): each layer built by "
                   "parse_network_cfg and run by its own forward function; f32, one thread",
    .kind = NTP_BACKEND_HOST,
    .priority = 60,
    .supports = dnb_supports,
    .prepare = dnb_prepare,
    .execute = dnb_execute,
    .release_node = dnb_release_node,
    .fusable = dnb_fusable,
    .supports_unit = dnb_supports_unit,
    .impl_name = dnb_impl_name,
    .available = dnb_available,
};
