/* ntprof: topologies.
 *
 * A topology is loaded from ntprof's XML markup (docs/topology-format.md) or,
 * later, from ONNX, into an opaque ntp_graph: tensors with shapes, layers in
 * topological order, markers (named layer ranges) and params. */
#ifndef NTPROF_GRAPH_H
#define NTPROF_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ntprof/api.h"
#include "ntprof/context.h"
#include "ntprof/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NTP_MAX_DIMS 8

typedef enum ntp_dtype {
    NTP_DTYPE_F32,
    NTP_DTYPE_BF16,
    NTP_DTYPE_F16,
    NTP_DTYPE_I8,
    NTP_DTYPE_U8,
    NTP_DTYPE_I32,
    NTP_DTYPE_I64,
    NTP_DTYPE_COUNT
} ntp_dtype;

/* "f32", "bf16", "f16", "i8", "u8", "i32", "i64". */
NTP_API const char *ntp_dtype_name(ntp_dtype t);
/* Bytes per element. */
NTP_API size_t ntp_dtype_size(ntp_dtype t);
/* Accepts the names above and the aliases fp32, fp16, int8, uint8, int32,
 * int64, float32, float16, bfloat16. */
NTP_API ntp_status ntp_dtype_parse(const char *s, ntp_dtype *out);
/* Whether t is a compute precision a topology may run at: f32, bf16, f16
 * or i8 (the others are input and index types). */
NTP_API bool ntp_dtype_is_precision(ntp_dtype t);

/* How f32 arithmetic may be carried out, beside the storage precision. */
typedef enum ntp_math_mode {
    NTP_MATH_DEFAULT, /* each precision's own arithmetic (IEEE f32 for f32) */
    NTP_MATH_TF32,    /* f32 layers may use TF32 tensor-core math (docs/gpu.md) */
    NTP_MATH_COUNT
} ntp_math_mode;

typedef struct ntp_shape {
    int ndim;
    int64_t dim[NTP_MAX_DIMS];
} ntp_shape;

/* Product of the dims; -1 when it overflows int64. */
NTP_API int64_t ntp_shape_numel(const ntp_shape *s);
/* Same rank and the same dims. */
NTP_API bool ntp_shape_equal(const ntp_shape *a, const ntp_shape *b);
/* Writes "[1,3,224,224]" into buf (always NUL-terminated). */
NTP_API const char *ntp_shape_str(const ntp_shape *s, char *buf, size_t len);

typedef struct ntp_graph ntp_graph;

/* How to load a topology. Zero-initialise and set what you need. */
typedef struct ntp_load_opts {
    /* "name=value" overrides of <param> declarations (the CLI's --set). */
    const char *const *set;
    int n_set;
    /* > 0: override the param "batch" (the CLI's --batch). */
    int64_t batch;
    /* When set_precision: override the topology's precision with
     * `precision`, a compute precision (ntp_dtype_is_precision; the CLI's
     * --precision). */
    bool set_precision;
    ntp_dtype precision;
    /* Refuse a topology whose weights and planned activations need more
     * bytes than this: 0 means the machine's physical memory, < 0 no limit. */
    int64_t max_memory;
} ntp_load_opts;

/* Load a topology from a file; the format is chosen by its extension
 * (.xml for markup). On failure *out is NULL and ctx holds one line:
 * "FILE:LINE: <element name='layer'>: what was expected". */
NTP_API ntp_status ntp_graph_load(ntp_ctx *ctx, const char *path, const ntp_load_opts *opts,
                                  ntp_graph **out);
/* Load markup from memory; `name` is used in messages in place of a path. */
NTP_API ntp_status ntp_graph_load_xml_memory(ntp_ctx *ctx, const char *buf, size_t len,
                                             const char *name, const ntp_load_opts *opts,
                                             ntp_graph **out);
NTP_API void ntp_graph_free(ntp_graph *g);

NTP_API const char *ntp_graph_name(const ntp_graph *g);
NTP_API const char *ntp_graph_source(const ntp_graph *g);
NTP_API ntp_dtype ntp_graph_precision(const ntp_graph *g);
/* The batch: the markup's param "batch" (after --batch and --set), or the
 * value an ONNX model's batch-like input dim took; 0 when the topology has
 * none. */
NTP_API int64_t ntp_graph_batch(const ntp_graph *g);

/* Layers, in topological (execution) order. */
NTP_API int ntp_graph_layer_count(const ntp_graph *g);
NTP_API const char *ntp_graph_layer_name(const ntp_graph *g, int i);
NTP_API const char *ntp_graph_layer_type(const ntp_graph *g, int i);
/* Shape of the layer's first output. */
NTP_API ntp_shape ntp_graph_layer_shape(const ntp_graph *g, int i);
/* Index of the layer with this name, -1 if none. */
NTP_API int ntp_graph_layer_find(const ntp_graph *g, const char *name);

/* Graph inputs and outputs. */
NTP_API int ntp_graph_input_count(const ntp_graph *g);
NTP_API const char *ntp_graph_input_name(const ntp_graph *g, int i);
NTP_API ntp_shape ntp_graph_input_shape(const ntp_graph *g, int i);
NTP_API ntp_dtype ntp_graph_input_dtype(const ntp_graph *g, int i);
NTP_API int ntp_graph_output_count(const ntp_graph *g);
NTP_API const char *ntp_graph_output_name(const ntp_graph *g, int i);
NTP_API ntp_shape ntp_graph_output_shape(const ntp_graph *g, int i);

/* Markers: named, inclusive ranges of layers in execution order. */
NTP_API int ntp_graph_marker_count(const ntp_graph *g);
NTP_API const char *ntp_graph_marker_name(const ntp_graph *g, int i);
/* First and last layer index (execution order) of marker i. */
NTP_API void ntp_graph_marker_range(const ntp_graph *g, int i, int *first, int *last);
/* The marker's `tool` attribute, NULL if none. */
NTP_API const char *ntp_graph_marker_tool(const ntp_graph *g, int i);

/* Params with their final values (after --set), as strings. */
NTP_API int ntp_graph_param_count(const ntp_graph *g);
NTP_API const char *ntp_graph_param_name(const ntp_graph *g, int i);
NTP_API const char *ntp_graph_param_value(const ntp_graph *g, int i);

#ifdef __cplusplus
}
#endif
#endif
