/* Weight and input generation, private to libntprof (src/graph/data.c,
 * src/graph/synth.c): everything the engine fills in from a seed when a
 * model brings no data of its own, deterministic so runs are comparable. */
#ifndef NTPROF_GEN_IMPL_H
#define NTPROF_GEN_IMPL_H

#include <stdint.h>

#include "graph/graph-impl.h"

/* Fill node n's weights (f32, already allocated, in n->w order) from the
 * seed: fan-in scaled so activations stay finite through deep networks
 * (docs/run.md). */
void ntp__gen_weights(const ntp_graph *g, const ntp_node *n, float *const *w, uint64_t seed);
/* Fill graph input tensor ti (storage in its own dtype) with synthetic data
 * suited to its consumers: audio for mfcc, peaked logits for ctc_decode,
 * valid indices for embedding, N(0,1) otherwise. */
ntp_status ntp__gen_input(ntp_ctx *ctx, const ntp_graph *g, int ti, void *data, uint64_t seed);

/* Speech-like audio: voiced syllables with a gliding glottal harmonic series
 * shaped by formant resonances, a ~4 Hz syllable envelope, short pauses and
 * low-level noise; peak 0.5. See docs/inlays.md. */
void ntp__synth_audio(float *out, int64_t n_samples, int64_t sample_rate, uint64_t seed);
/* Time-major logits [T, N, classes] like an acoustic model's: per frame one
 * dominant class (runs of blanks and repeated labels) and a few plausible
 * competitors, so that beam search has real work. */
void ntp__synth_ctc_logits(float *out, int64_t T, int64_t N, int64_t classes, uint64_t seed);

#endif
