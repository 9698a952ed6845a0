/* Darknet .cfg networks and .weights files, private to libntprof
 * (docs/darknet.md). */
#ifndef NTPROF_DARKNET_IMPL_H
#define NTPROF_DARKNET_IMPL_H

#include "graph/graph-impl.h"

typedef enum ntp_darknet_kind {
    NTP_DARKNET_INPUT, /* the [net] input, "layer -1" */
    NTP_DARKNET_CONV,
    NTP_DARKNET_CONNECTED,
    NTP_DARKNET_MAXPOOL,
    NTP_DARKNET_AVGPOOL,
    NTP_DARKNET_ROUTE,
    NTP_DARKNET_SHORTCUT,
    NTP_DARKNET_UPSAMPLE,
    NTP_DARKNET_DROPOUT,
    NTP_DARKNET_SOFTMAX,
    NTP_DARKNET_REORG,
    NTP_DARKNET_CROP,
    NTP_DARKNET_PASSTHROUGH, /* [yolo], [region], [detection], [cost] */
    NTP_DARKNET_RNN,
    NTP_DARKNET_GRU,
    NTP_DARKNET_LSTM,
    NTP_DARKNET_CRNN,
    NTP_DARKNET_LOCAL,
    NTP_DARKNET_DECONV,
    NTP_DARKNET_BATCHNORM,
    NTP_DARKNET_ACTIVATION
} ntp_darknet_kind;

/* One block of a layer's parameters in a .weights file, in file order: a
 * [convolutional] or [connected] has one; Darknet's recurrent layers one per
 * inner connected or convolutional layer (their time steps share it). */
typedef enum ntp_darknet_block_kind {
    NTP_DARKNET_BLOCK_CONV,   /* biases, (bn scales, means, variances), weights */
    NTP_DARKNET_BLOCK_FC,     /* biases, weights, (bn scales, means, variances) */
    NTP_DARKNET_BLOCK_LSTM_U, /* an [lstm] input gate: biases and weights into W and B */
    NTP_DARKNET_BLOCK_LSTM_W, /* an [lstm] recurrent gate: into R and B */
    NTP_DARKNET_BLOCK_LOCAL,  /* [local]: biases [F][L] (stored [L][F]), weights */
    NTP_DARKNET_BLOCK_BN      /* [batchnorm]: scales, means, variances (no biases) */
} ntp_darknet_block_kind;

typedef struct ntp_darknet_block {
    ntp_darknet_block_kind kind;
    int node, bn_node; /* bn_node -1: none */
    int gate;          /* LSTM blocks: ntprof's gate slot (i, o, f, c = 0..3) */
} ntp_darknet_block;

#define NTP_DARKNET_MAX_BLOCKS 8

/* One Darknet layer (a section after [net], numbered from 0 as Darknet
 * does) and the ntprof layers it became. */
typedef struct ntp_darknet_layer {
    ntp_darknet_kind kind;
    int line;        /* the section's line in the .cfg */
    int node;        /* the main node (conv, fc, pool...), -1 for a pass-through */
    int bn_node;     /* its batchnorm node, -1 if none */
    int last;        /* the node producing the layer's output, -1 if none */
    int tensor;      /* the layer's output tensor */
    int64_t c, h, w; /* the output as Darknet shapes it (out_c, out_h, out_w) */
    bool flat;       /* the tensor is [N, c] (h = w = 1) rather than [N,c,h,w] */
    bool bn;         /* batch_normalize=1 */
    int64_t steps;   /* [net] time_steps: the tensor's first dim is steps x batch */
    int first;       /* the first node the layer added (g->n_nodes before it) */
    bool unit;       /* a recurrent section recorded whole (ntp_unit), nodes first..last */
    int n_blocks;    /* its parameter blocks in a .weights file */
    ntp_darknet_block blocks[NTP_DARKNET_MAX_BLOCKS];
} ntp_darknet_layer;

/* One run of a block's values in a .weights file: n values of tensor
 * `tensor`'s f32 data from value `at` on. */
typedef struct ntp_darknet_slice {
    int tensor;
    int64_t at, n;
    const char *what; /* "biases", "weights", "scales", ... */
} ntp_darknet_slice;

#define NTP_DARKNET_MAX_SLICES 5

/* The values of block b in the order Darknet's load_weights reads them
 * (darknet-weights.c); how many slices. [local]'s block, whose biases are
 * permuted, has none. */
int ntp__darknet_block_slices(const ntp_graph *g, const ntp_darknet_block *b,
                              ntp_darknet_slice out[NTP_DARKNET_MAX_SLICES]);

/* Load a .cfg file. With `layers`, *layers (malloc'd, free() it) gets one
 * entry per Darknet layer and *n_layers their count. `opts->set` may hold
 * batch=, width=, height=, channels= and weights=FILE.weights. */
ntp_status ntp__darknet_load_file(ntp_ctx *ctx, const char *path, const ntp_load_opts *opts,
                                  ntp_graph **out, ntp_darknet_layer **layers, int *n_layers);

/* Fill the weights of a loaded .cfg graph from a Darknet .weights file
 * (src/io/darknet-weights.c): its header, then per layer in order the
 * biases, the batch-norm scales, means and variances, and the weights. */
ntp_status ntp__darknet_read_weights(ntp_ctx *ctx, ntp_graph *g, const ntp_darknet_layer *layers,
                                     int n_layers, const char *path);

#endif
