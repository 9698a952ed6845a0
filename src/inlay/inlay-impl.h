/* The inlays, private to libntprof: the non-network stages of a speech
 * pipeline (MFCC front end, CTC decoders) and the synthetic data that feeds
 * them (docs/inlays.md).
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
ntp_status ntp__inlay_error(ntp_ctx *ctx, const ntp_kargs *k, ntp_status st, const char *fmt,
                            ...) __attribute__((format(printf, 4, 5)));
/* Scratch of `need` bytes: k->workspace when it is large enough, else a
 * fresh malloc() returned in *owned as well (the caller frees *owned; NULL
 * when the workspace was used). Returns NULL when memory is exhausted. */
void *ntp__inlay_scratch(const ntp_kargs *k, size_t need, void **owned);

/* What a beam search left behind, for tests and reports. */
typedef struct ntp_ctc_beam_stats {
    int survivors;          /* prefixes in the final beam (all distinct) */
    int best_len;           /* labels in the best prefix */
    float best_logp;        /* log probability of the best prefix */
    float second_logp;      /* of the runner-up, -INFINITY if none */
} ntp_ctc_beam_stats;

/* CTC prefix beam search of one sequence: logits[t * stride + c] for
 * t < T, c < classes (blank = classes - 1). Writes the best prefix to
 * out[0..T) padded with -1. ws must hold ntp__ctc_beam_ws_bytes() bytes
 * (SIZE_MAX means the search is too large to run); any alignment will do.
 * stats may be NULL. */
size_t ntp__ctc_beam_ws_bytes(int64_t T, int64_t classes, int64_t beam_width);
void ntp__ctc_beam_decode(const float *logits, int64_t T, int64_t stride, int64_t classes,
                          int64_t beam_width, void *ws, int32_t *out,
                          ntp_ctc_beam_stats *stats);
/* Greedy (best path) decoding of one sequence, same layout as above. */
void ntp__ctc_greedy_decode(const float *logits, int64_t T, int64_t stride, int64_t classes,
                            int32_t *out);

/* Synthetic data (deterministic from seed): */
/* Speech-like audio: voiced syllables with a gliding glottal harmonic series
 * shaped by formant resonances, a ~4 Hz syllable envelope, short pauses and
 * low-level noise; peak 0.5. See docs/inlays.md. */
void ntp__synth_audio(float *out, int64_t n_samples, int64_t sample_rate, uint64_t seed);
/* Time-major logits [T, N, classes] like an acoustic model's: per frame one
 * dominant class (runs of blanks and repeated labels) and a few plausible
 * competitors, so that beam search has real work. */
void ntp__synth_ctc_logits(float *out, int64_t T, int64_t N, int64_t classes, uint64_t seed);

/* A small, fast, seedable PRNG (splitmix64) shared by the engine's data
 * generator. The state is any 64-bit value; every call advances it. */
uint64_t ntp__rng_next(uint64_t *state);
/* Uniform in [0, 1), 24 random bits. */
float ntp__rng_uniform(uint64_t *state);
/* Standard normal N(0, 1) (Box-Muller). */
float ntp__rng_normal(uint64_t *state);

#endif
