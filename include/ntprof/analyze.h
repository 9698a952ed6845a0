/* ntprof: static analysis of a topology, without running it.
 *
 * Conventions (docs/analysis.md): MACs count multiply-accumulates; for
 * layers made of them FLOPs = 2 x MACs (+ the element-wise work of bias and
 * activation where the layer does it); element-wise layers count one FLOP per
 * output element per arithmetic operation. Params count trainable values as
 * PyTorch's `parameters()` does (batch-norm running statistics are buffers:
 * they are in weight_bytes but not in params). Bytes are at the topology's
 * precision. */
#ifndef NTPROF_ANALYZE_H
#define NTPROF_ANALYZE_H

#include <stdbool.h>
#include <stdint.h>
#include "ntprof/api.h"
#include "ntprof/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One part of a layer whose parts run under different roofs (docs/analysis.md):
 * a recurrent layer's input GEMM (every time step at once, the input
 * weights read once) and its recurrent GEMV (one step after the other,
 * the recurrent weights read again at every step). */
#define NTP_COST_MAX_PARTS 2
typedef struct ntp_cost_part {
    const char *name; /* "input GEMM", "recurrent GEMV" (static strings) */
    int64_t flops;
    int64_t bytes; /* the part's traffic, re-reads included */
    /* What the part reads again at every step and keeps between steps: one
     * direction's recurrent weights (the directions run one after the
     * other); 0 for a part read once. */
    int64_t resident_bytes;
} ntp_cost_part;

typedef struct ntp_layer_cost {
    const char *name;       /* owned by the graph */
    const char *type;       /* markup element name: "fc", "conv", "mfcc" */
    bool inlay;             /* a non-network stage (mfcc, ctc_decode, ...) */
    ntp_shape output_shape; /* first output */
    int64_t params;
    int64_t macs;
    int64_t flops;
    int64_t weight_bytes; /* params and buffers at the precision */
    int64_t input_bytes;  /* activations read */
    int64_t output_bytes; /* activations written */
    /* Minimal memory traffic: weights + inputs + outputs, each touched once. */
    int64_t traffic_bytes;
    double intensity; /* flops / traffic_bytes (FLOP per byte) */
    /* Recurrent layers (lstm, gru, rnn): the parts, whose FLOPs add up to
     * `flops`; 0 for every other layer. */
    int n_parts;
    ntp_cost_part parts[NTP_COST_MAX_PARTS];
} ntp_layer_cost;

typedef struct ntp_analysis {
    ntp_dtype precision;
    int n_layers;
    ntp_layer_cost *layers; /* execution order */
    int64_t params;
    int64_t macs;
    int64_t flops;
    int64_t weight_bytes;
    int64_t input_bytes;           /* graph inputs */
    int64_t activation_bytes;      /* sum of every activation tensor's size */
    int64_t peak_activation_bytes; /* arena size from the liveness planner */
    int64_t traffic_bytes;
} ntp_analysis;

/* Analyse g at its precision. */
NTP_API ntp_status ntp_graph_analyze(ntp_ctx *ctx, const ntp_graph *g, ntp_analysis **out);
NTP_API void ntp_analysis_free(ntp_analysis *a);

#ifdef __cplusplus
}
#endif
#endif
