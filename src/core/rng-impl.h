/* A small, fast, seedable PRNG (splitmix64), private to libntprof
 * (src/core/rng.c): the engine's weight and input generator and the
 * synthetic data of the inlays draw from it. */
#ifndef NTPROF_RNG_IMPL_H
#define NTPROF_RNG_IMPL_H

#include <stdint.h>

/* The state is any 64-bit value; every call advances it. */
uint64_t ntp__rng_next(uint64_t *state);
/* Uniform in [0, 1), 24 random bits. */
float ntp__rng_uniform(uint64_t *state);
/* Standard normal N(0, 1) (Box-Muller). */
float ntp__rng_normal(uint64_t *state);

#endif
