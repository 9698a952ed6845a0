/* The Darknet .cfg reader's private interface (src/io/darknet-cfg.c,
 * darknet-layers.c, darknet-recurrent.c): the file as sections of options,
 * the reader's state, the helpers every section uses and the sections. */
#ifndef NTPROF_DARKNET_CFG_IMPL_H
#define NTPROF_DARKNET_CFG_IMPL_H

#include "darknet-impl.h"

/* The file as sections of options. */
typedef struct dn_opt {
    char *key, *val;
    int line;
} dn_opt;

typedef struct dn_sect {
    char *type;
    int line;
    dn_opt *opts;
    int n_opts, cap_opts;
} dn_sect;

typedef struct reader {
    ntp_ctx *ctx;
    const char *src;
    const ntp_load_opts *opts;
    dn_sect *s;
    int n_s, cap_s;
    ntp_graph *g;
    ntp_darknet_layer *layers; /* one per section after [net] */
    int n_layers;
    int64_t batch;
    int64_t steps;       /* [net] time_steps: Darknet's recurrent layers' sequence */
    int64_t rows;        /* batch x steps: the first dim of every tensor */
    const char *weights; /* --set weights=FILE, NULL if none */
    int *outs;           /* tensors of [yolo]/[region]/[detection] inputs */
    int n_outs;
    char name[64]; /* scratch for node names */
} reader;

/* Helpers (darknet-cfg.c). */
ntp_status ntp__dn_sect_error(reader *r, const dn_sect *s, int line, ntp_status st, const char *fmt,
                              ...) __attribute__((format(printf, 5, 6)));
ntp_status ntp__dn_oom(reader *r);
bool ntp__dn_grow(void **p, int *cap, int need, size_t size);
const dn_opt *ntp__dn_find(const dn_sect *s, const char *key);
ntp_status ntp__dn_get_int(reader *r, const dn_sect *s, const char *key, int64_t dflt, int64_t lo,
                           int64_t hi, int64_t *out);
ntp_status ntp__dn_get_float(reader *r, const dn_sect *s, const char *key, double dflt,
                             double *out);
int ntp__dn_add_op(reader *r, const char *name, ntp_op op, int line, const int *ins, int n_in);
ntp_status ntp__dn_act_node(reader *r, int line, const char *base, const char *name, ntp_op op,
                            int *t, int *last);
ntp_status ntp__dn_parse_act(reader *r, const dn_sect *s, const char *dflt, ntp_op *op,
                             const char **name);
ntp_status ntp__dn_activation(reader *r, const dn_sect *s, const char *base, const char *dflt,
                              int *t, int *last);
ntp_status ntp__dn_add_bn(reader *r, int line, const char *base, int *t, int *last, int *bn_node);
ntp_status ntp__dn_as_4d(reader *r, const dn_sect *s, int li, int *t);
ntp_status ntp__dn_as_flat(reader *r, const dn_sect *s, int li, const char *base, int *t);
ntp_status ntp__dn_layer_ref(reader *r, const dn_sect *s, int line, const char *key, long v, int li,
                             int *out);
ntp_status ntp__dn_own_weight(reader *r, int ni, const char *suffix, ntp_tensor_kind kind,
                              ntp_shape sh);
ntp_shape ntp__dn_shp(int nd, int64_t d0, int64_t d1, int64_t d2, int64_t d3);
ntp_status ntp__dn_concat_all(reader *r, const dn_sect *s, const char *base, int axis, int *ts,
                              int n, int *out);
void ntp__dn_add_block(ntp_darknet_layer *L, ntp_darknet_block_kind kind, int node, int bn_node,
                       int gate);
ntp_status ntp__dn_need_image(reader *r, const dn_sect *s, int li);
ntp_status ntp__dn_scale(reader *r, int line, const char *name, ntp_op op, float v, int *t,
                         int *last);

/* Sections (darknet-layers.c). */
ntp_status ntp__dn_conv_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);
ntp_status ntp__dn_connected_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);
ntp_status ntp__dn_maxpool_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);
ntp_status ntp__dn_route_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);
ntp_status ntp__dn_shortcut_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);
ntp_status ntp__dn_upsample_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);
ntp_status ntp__dn_avgpool_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);
ntp_status ntp__dn_dropout_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);
ntp_status ntp__dn_softmax_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);
ntp_status ntp__dn_reorg_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);
ntp_status ntp__dn_crop_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);
ntp_status ntp__dn_local_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);
ntp_status ntp__dn_deconv_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);
ntp_status ntp__dn_batchnorm_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);
ntp_status ntp__dn_activation_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);
ntp_status ntp__dn_head_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);
ntp_status ntp__dn_cost_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);

/* Sections (darknet-recurrent.c). */
ntp_status ntp__dn_rnn_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);
ntp_status ntp__dn_crnn_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);
ntp_status ntp__dn_gru_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);
ntp_status ntp__dn_lstm_layer(reader *r, const dn_sect *s, int li, ntp_darknet_layer *L);

#endif
