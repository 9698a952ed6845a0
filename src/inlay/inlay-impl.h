/* The inlays, private to libntprof: the non-network stages of a speech
 * pipeline (MFCC front end, CTC decoders), docs/inlays.md. The synthetic
 * data that feeds them is made with the graph's inputs (graph/gen-impl.h).
 *
 * The run functions read k->in[0] (f32) and write k->out[0] as docs/ops.md
 * specifies. They use k->workspace when it holds at least the bytes the
 * matching _workspace() function asks for, and allocate their own scratch
 * otherwise, so a caller without a planner can still run them. */
#ifndef NTPROF_INLAY_IMPL_H
#define NTPROF_INLAY_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include "backend/backend-impl.h"

/* Run the inlay for the node in k (k->node->op is MFCC / CTC_DECODE); f32 in,
 * see docs/ops.md for out. */
ntp_status ntp__mfcc_run(ntp_ctx *ctx, const ntp_kargs *k);
size_t ntp__mfcc_workspace(const ntp_kargs *k);
ntp_status ntp__ctc_run(ntp_ctx *ctx, const ntp_kargs *k);
size_t ntp__ctc_workspace(const ntp_kargs *k);

/* Record one error line for the node in k (with its source position when
 * k->g is set) and return st. */
ntp_status ntp__inlay_error(ntp_ctx *ctx, const ntp_kargs *k, ntp_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Scratch of `need` bytes: k->workspace when it is large enough, else a
 * fresh malloc() returned in *owned as well (the caller frees *owned; NULL
 * when the workspace was used). Returns NULL when memory is exhausted. */
void *ntp__inlay_scratch(const ntp_kargs *k, size_t need, void **owned);

/* What a beam search left behind, for tests and reports. */
typedef struct ntp_ctc_beam_stats {
    int survivors;     /* prefixes in the final beam (all distinct) */
    int best_len;      /* labels in the best prefix */
    float best_logp;   /* log probability of the best prefix */
    float second_logp; /* of the runner-up, -INFINITY if none */
} ntp_ctc_beam_stats;

/* CTC prefix beam search of one sequence: logits[t * stride + c] for
 * t < T, c < classes (blank = classes - 1). Writes the best prefix to
 * out[0..T) padded with -1. ws must hold ntp__ctc_beam_ws_bytes() bytes
 * (SIZE_MAX means the search is too large to run); any alignment will do.
 * stats may be NULL. */
size_t ntp__ctc_beam_ws_bytes(int64_t T, int64_t classes, int64_t beam_width);
void ntp__ctc_beam_decode(const float *logits, int64_t T, int64_t stride, int64_t classes,
                          int64_t beam_width, void *ws, int32_t *out, ntp_ctc_beam_stats *stats);
/* Greedy (best path) decoding of one sequence, same layout as above. */
void ntp__ctc_greedy_decode(const float *logits, int64_t T, int64_t stride, int64_t classes,
                            int32_t *out);

#endif
