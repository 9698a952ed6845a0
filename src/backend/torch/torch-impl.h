/* The torch backend's private declarations (C side). */
#ifndef NTPROF_TORCH_IMPL_H
#define NTPROF_TORCH_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend-impl.h"
#include "torch-api.h"

/* The module's table, opened on first call; NULL (and why) when it cannot
 * be loaded. */
const ntp_torch_api *ntp__torch_api(char *why, size_t len);

/* Describe layer n of g for libtorch (shapes, attributes; weights' shapes
 * but no data). false: no ATen operator runs it as ntprof defines it. */
bool ntp__torch_fill(const ntp_graph *g, const ntp_node *n, ntp_torch_layer *l);

/* The ATen operator a layer runs, as reports name it ("aten::conv2d"). */
const char *ntp__torch_op_name(const ntp_torch_layer *l);

/* --- the whole-graph mode (script.c) ---------------------------------------------------
 *
 * g as one TorchScript module, frozen and optimised for inference, with
 * the weights every backend gets (the model's, else generated from seed).
 * Every layer must map to ATen at f32; else the error names the first one
 * that does not. */
typedef struct ntp_torch_script ntp_torch_script;
ntp_status ntp__torch_script_build(ntp_ctx *ctx, const ntp_graph *g, int threads, uint64_t seed,
                                   ntp_torch_script **out);
/* The TorchScript source of forward(), for messages and docs. */
const char *ntp__torch_script_source(const ntp_torch_script *ts);
/* Graph input i as ntp__torch_script_run takes it, into *buf (malloc'd;
 * the caller frees it): the values every backend gets from the seed, an
 * integer input widened to int64. */
ntp_status ntp__torch_script_input(ntp_ctx *ctx, const ntp_graph *g, int i, uint64_t seed,
                                   float **buf);
/* One forward pass: in[i] holds graph input i (f32; an integer input as
 * int64_t, whatever its dtype), out[i] receives graph output i. */
ntp_status ntp__torch_script_run(ntp_ctx *ctx, ntp_torch_script *ts, const ntp_graph *g,
                                 float *const *in, float *const *out);
void ntp__torch_script_free(ntp_torch_script *ts);

#endif
