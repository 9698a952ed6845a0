/* Synthetic data for the inlays and the engine's data generator:
 * speech-like audio and acoustic-model-like CTC logits (the PRNG they draw
 * from is src/core/rng.c).
 *
 * Profiling the MFCC front end and the CTC decoder on random noise would
 * time the wrong work: an FFT does not care, but a beam search on flat
 * distributions explores nothing like what it explores on real model output,
 * and the features of white noise look nothing like speech. These generators
 * give data with the structure that matters (docs/inlays.md), deterministic
 * from a seed so runs are comparable. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/rng-impl.h"
#include "graph/gen-impl.h"

static double uniform_in(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)ntp__rng_uniform(s);
}

/* Decorrelate nearby seeds (0, 1, 2 ...) before use. */
static uint64_t seed_state(uint64_t seed, uint64_t stream)
{
    uint64_t s = seed ^ (stream * UINT64_C(0xD1B54A32D192ED03));
    ntp__rng_next(&s);
    return s;
}

/* --- audio ------------------------------------------------------------------- */

#define SYN_MAX_HARMONICS 64
#define SYN_BLOCK 32 /* samples between harmonic-amplitude updates */

typedef struct vowel {
    double f[3];  /* formant centre frequencies, Hz */
    double bw[3]; /* bandwidths, Hz */
} vowel;

/* Gain of the vocal tract at frequency f: three resonance peaks with
 * decreasing weight, over a small floor so no harmonic vanishes. */
static double formant_gain(const vowel *v, double f)
{
    static const double weight[3] = {1.0, 0.6, 0.3};
    double g = 0.02;
    for (int i = 0; i < 3; i++) {
        double x = (f - v->f[i]) / (0.5 * v->bw[i]);
        g += weight[i] / (1.0 + x * x);
    }
    return g;
}

/* One voiced syllable of n samples into out (added), as a glottal pulse
 * train's harmonics shaped by a vowel's formants under a raised-cosine
 * envelope; f0 glides linearly from f0a to f0b. */
static void syllable(float *out, int64_t n, double sr, double f0a, double f0b, const vowel *v,
                     double amp)
{
    double phase = 0.0;
    double a[SYN_MAX_HARMONICS];
    int nh = 0;
    for (int64_t i = 0; i < n; i++) {
        double u = (double)i / (double)n;
        double f0 = f0a + (f0b - f0a) * u;
        if (i % SYN_BLOCK == 0) {
            /* A glottal source falls at about -12 dB/octave and lip
             * radiation adds +6 dB/octave: harmonic k at 1/k. Harmonics
             * stop at 5 kHz (or Nyquist), where voiced speech has little. */
            double top = fmin(5000.0, 0.45 * sr);
            nh = (int)(top / f0);
            if (nh > SYN_MAX_HARMONICS)
                nh = SYN_MAX_HARMONICS;
            for (int h = 0; h < nh; h++)
                a[h] = formant_gain(v, (h + 1) * f0) / (h + 1);
        }
        phase += 2.0 * M_PI * f0 / sr;
        if (phase >= 2.0 * M_PI)
            phase -= 2.0 * M_PI;
        /* sin(k·phase) by rotating (cos, sin) of the fundamental: one
         * complex multiply per harmonic instead of a sine call. */
        double c1 = cos(phase), s1 = sin(phase), ck = c1, sk = s1, acc = 0.0;
        for (int h = 0; h < nh; h++) {
            acc += a[h] * sk;
            double c2 = ck * c1 - sk * s1;
            sk = sk * c1 + ck * s1;
            ck = c2;
        }
        double env = 0.5 - 0.5 * cos(2.0 * M_PI * u);
        out[i] += (float)(amp * env * acc);
    }
}

void ntp__synth_audio(float *out, int64_t n_samples, int64_t sample_rate, uint64_t seed)
{
    if (n_samples <= 0)
        return;
    memset(out, 0, sizeof(float) * (size_t)n_samples);
    if (sample_rate <= 0)
        return;
    const double sr = (double)sample_rate;
    uint64_t s = seed_state(seed, 1);

    /* Syllables of 150-320 ms (about 4 per second), with a pause of
     * 80-250 ms after roughly one syllable in four. */
    int64_t pos = 0;
    int first = 1;
    while (pos < n_samples) {
        if (!first && ntp__rng_uniform(&s) < 0.25f) {
            int64_t pause = (int64_t)(uniform_in(&s, 0.08, 0.25) * sr);
            if (pause >= n_samples - pos)
                break;
            pos += pause;
            continue;
        }
        first = 0;
        int64_t len = (int64_t)(uniform_in(&s, 0.15, 0.32) * sr);
        if (len < 1)
            len = 1;
        if (len > n_samples - pos)
            len = n_samples - pos;
        double f0a = uniform_in(&s, 100.0, 250.0);
        double f0b = fmin(250.0, fmax(100.0, f0a * uniform_in(&s, 0.8, 1.2)));
        vowel v = {
            .f = {uniform_in(&s, 300, 800), uniform_in(&s, 900, 2300), uniform_in(&s, 2400, 3200)},
            .bw = {uniform_in(&s, 60, 120), uniform_in(&s, 80, 160), uniform_in(&s, 100, 200)},
        };
        syllable(out + pos, len, sr, f0a, f0b, &v, uniform_in(&s, 0.5, 1.0));
        pos += len;
    }

    /* Peak 0.5 with noise about 46 dB below it. The voiced part is scaled
     * first so that the noise level does not depend on the seed. */
    float peak = 0.0f;
    for (int64_t i = 0; i < n_samples; i++)
        peak = fmaxf(peak, fabsf(out[i]));
    float scale = peak > 0.0f ? 0.49f / peak : 0.0f;
    peak = 0.0f;
    for (int64_t i = 0; i < n_samples; i++) {
        out[i] = out[i] * scale + 0.0025f * ntp__rng_normal(&s);
        peak = fmaxf(peak, fabsf(out[i]));
    }
    if (peak > 0.0f) {
        scale = 0.5f / peak;
        for (int64_t i = 0; i < n_samples; i++)
            out[i] *= scale;
    }
}

/* --- CTC logits ----------------------------------------------------------------- */

/* One frame: class `cls` dominant, one to three competitors trailing it,
 * background for the rest. Acoustic models are confident on most frames
 * (the dominant class holds 90% or more) and torn on a few: one frame in
 * ten gets a competitor within 0.7 nats, which is where the best path and
 * the best prefix part ways. */
static void logits_frame(float *x, int64_t C, int64_t cls, uint64_t *s)
{
    for (int64_t c = 0; c < C; c++)
        x[c] = ntp__rng_normal(s);
    float top = 10.0f + ntp__rng_normal(s);
    x[cls] = top;
    int n_comp = 1 + (int)(ntp__rng_uniform(s) * 3.0f);
    int torn = ntp__rng_uniform(s) < 0.1f;
    for (int k = 0; k < n_comp; k++) {
        int64_t c = (int64_t)(ntp__rng_uniform(s) * (float)C);
        if (c >= C)
            c = C - 1;
        if (c == cls)
            continue;
        float gap = torn && k == 0 ? 0.7f * ntp__rng_uniform(s) : 2.0f + 4.0f * ntp__rng_uniform(s);
        x[c] = top - gap;
    }
}

/* Logits for one sequence of [T, N, classes], at stride N·classes. The
 * underlying path alternates runs of blanks (1-5 frames) with runs of one
 * label (1-3 frames), as an acoustic model emits a character over a few
 * frames; a label repeats the previous one (across the blank run) 15% of
 * the time, as in "hello". */
static void logits_one(float *out, int64_t T, int64_t stride, int64_t C, uint64_t *s)
{
    const int64_t blank = C - 1, labels = C - 1;
    int64_t t = 0, prev = -1;
    while (t < T) {
        int64_t run = 1 + (int64_t)(ntp__rng_uniform(s) * 5.0f);
        for (int64_t r = 0; r < run && t < T; r++, t++)
            logits_frame(out + t * stride, C, blank, s);
        if (labels == 0)
            continue;
        int64_t cls;
        if (prev >= 0 && ntp__rng_uniform(s) < 0.15f)
            cls = prev;
        else
            cls = (int64_t)(ntp__rng_uniform(s) * (float)labels);
        if (cls >= labels)
            cls = labels - 1;
        prev = cls;
        run = 1 + (int64_t)(ntp__rng_uniform(s) * 3.0f);
        for (int64_t r = 0; r < run && t < T; r++, t++)
            logits_frame(out + t * stride, C, cls, s);
    }
}

void ntp__synth_ctc_logits(float *out, int64_t T, int64_t N, int64_t classes, uint64_t seed)
{
    if (T <= 0 || N <= 0 || classes <= 0)
        return;
    for (int64_t n = 0; n < N; n++) {
        /* One stream per sequence, so sequence n does not depend on N. */
        uint64_t s = seed_state(seed, 2 + (uint64_t)n);
        logits_one(out + n * classes, T, N * classes, classes, &s);
    }
}
