/* ntprof: ONNX export and conversion to markup (docs/onnx.md).
 *
 * Loading ONNX models needs nothing here: ntp_graph_load() reads .onnx files
 * like markup. */
#ifndef NTPROF_ONNX_H
#define NTPROF_ONNX_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "ntprof/api.h"
#include "ntprof/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ntp_onnx_export_opts {
    /* Weights are the ones a run with this seed uses (ntp_run_opts.seed);
     * 0 means 1, the run's default. A model's own weights are written as
     * they are. */
    uint64_t seed;
    /* Inlays (mfcc, ctc_decode) have no ONNX operator (darknet_head is
     * written as Slice, Sigmoid, Softmax and Concat): without this the
     * export refuses them, naming them; with it, a leading mfcc and a
     * trailing ctc_decode are left out and the network between them is
     * exported, its input the features and its output the logits. */
    bool network_only;
} ntp_onnx_export_opts;

/* Write g as an ONNX model (opset 17) with its weights to path. */
NTP_API ntp_status ntp_graph_export_onnx(ntp_ctx *ctx, const ntp_graph *g, const char *path,
                                         const ntp_onnx_export_opts *opts);

/* Write g's architecture as editable markup (docs/topology-format.md) to
 * f. Weights are not written (markup generates them from the seed). When
 * `batch_of` is given (the same model loaded at another value of the param
 * "batch"), every number that differs between the two is written as a
 * ${batch} expression, so that --batch works on the markup; without it the
 * numbers are written as they are. */
NTP_API ntp_status ntp_graph_write_markup(ntp_ctx *ctx, const ntp_graph *g,
                                          const ntp_graph *batch_of, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
