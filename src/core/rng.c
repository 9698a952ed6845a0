/* The engine's seedable PRNG: weights, inputs and the synthetic data of the
 * inlays are all drawn from it, so a seed gives the same data everywhere. */
#include <math.h>
#include <stdint.h>

#include "core/rng-impl.h"

/* splitmix64 (Steele, Lea, Flood 2014): one 64-bit word of state, every
 * seed is valid, passes BigCrush, and is a few instructions. */
uint64_t ntp__rng_next(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

float ntp__rng_uniform(uint64_t *state)
{
    /* The top 24 bits: every value is exactly representable, and 1.0 is
     * never produced. */
    return (float)(ntp__rng_next(state) >> 40) * (1.0f / 16777216.0f);
}

float ntp__rng_normal(uint64_t *state)
{
    /* Box-Muller with u1 in (0, 1], so the log is finite. The sine half of
     * the pair is dropped to keep the state a single word. */
    double u1 = 1.0 - (double)(ntp__rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
    double u2 = (double)(ntp__rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
}
