/* The ONNX writer's internals (onnx-export.c: the message, the graph;
 * onnx-export-ops.c: one layer at a time). Private to libntprof. */
#ifndef NTPROF_ONNX_EXPORT_IMPL_H
#define NTPROF_ONNX_EXPORT_IMPL_H

#include "onnx-impl.h"

#define NTP_ONNX_EXPORT_OPSET 17

typedef struct ntp_xw {
    ntp_ctx *ctx;
    const ntp_graph *g;
    uint64_t seed;
    void **mem; /* everything the message points to */
    size_t n_mem, cap_mem;
    Onnx__NodeProto **nodes;
    size_t n_nodes, cap_nodes;
    Onnx__TensorProto **inits;
    size_t n_inits, cap_inits;
    ntp_onnx_names *names;      /* value names taken (every IR tensor's, then made-up ones) */
    ntp_onnx_names *node_names; /* node names taken */
    bool failed;                /* out of memory: the error is in ctx */
    /* A decoder (onnx-export-decoder.c): value names that differ from the
     * IR tensor's (input_ids, position_ids, logits; NULL: the tensor's),
     * and the kv_attention layers written so far. */
    const char **tname;
    int kv_layer;
    int next_token; /* the argmax of the logits' output tensor, or -1 */
} ntp_xw;

/* Zeroed memory the message owns; NULL (and w->failed) when it runs out. */
void *ntp__xw_mem(ntp_xw *w, size_t n);
char *ntp__xw_str(ntp_xw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A value name made from base that no tensor or earlier value has. */
const char *ntp__xw_name(ntp_xw *w, const char *base);

/* A node; its name is made unique among nodes, its inputs and outputs are
 * taken as given ("" for an absent optional input). */
Onnx__NodeProto *ntp__xw_node(ntp_xw *w, const char *op, const char *name, int n_in,
                              const char *const *in, int n_out, const char *const *out);
void ntp__xw_attr_i(ntp_xw *w, Onnx__NodeProto *n, const char *name, int64_t v);
void ntp__xw_attr_f(ntp_xw *w, Onnx__NodeProto *n, const char *name, double v);
void ntp__xw_attr_ints(ntp_xw *w, Onnx__NodeProto *n, const char *name, const int64_t *v, int k);
void ntp__xw_attr_s(ntp_xw *w, Onnx__NodeProto *n, const char *name, const char *s);
void ntp__xw_attr_strings(ntp_xw *w, Onnx__NodeProto *n, const char *name, const char *const *s,
                          int k);

/* Initializers. ntp__xw_f32 names it `name` exactly (an IR weight's name)
 * and keeps data by reference; the others make up a name from base and
 * copy their values. */
const char *ntp__xw_f32(ntp_xw *w, const char *name, const float *data, const ntp_shape *s);
const char *ntp__xw_f32_copy(ntp_xw *w, const char *base, const float *data, const ntp_shape *s);
/* A Constant node holding data (copied) or one value; its output's name. */
const char *ntp__xw_const(ntp_xw *w, const char *base, const float *data, const ntp_shape *s);
const char *ntp__xw_scalar(ntp_xw *w, const char *base, float v);
const char *ntp__xw_i64(ntp_xw *w, const char *base, const int64_t *v, int n);

/* Write one layer with its weights wd (f32, in n->w order). */
ntp_status ntp__xw_emit(ntp_xw *w, const ntp_node *n, float *const *wd);

/* rmsnorm, rope, kv_attention (past key/values in, present out) and
 * lm_head (onnx-export-decoder.c). */
ntp_status ntp__xw_emit_decoder(ntp_xw *w, const ntp_node *n, float *const *wd);

#endif
