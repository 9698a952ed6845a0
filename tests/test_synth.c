/* Synthetic data: the PRNG, speech-like audio and acoustic-model-like CTC
 * logits. The checks measure the properties docs/inlays.md promises
 * (determinism, bounded amplitude, a harmonic, low-pass, syllabic signal
 * unlike white noise; peaked logits that give beam search real work)
 * against independent measurements made here with FFTW and plain loops. */
#include <fftw3.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/rng-impl.h"
#include "graph/gen-impl.h"
#include "inlay/inlay-impl.h"

#define SR 16000
#define NS (2 * SR) /* two seconds */

static float *alloc_f(int64_t n)
{
    float *p = malloc(sizeof(float) * (size_t)n);
    assert_non_null(p);
    return p;
}

/* --- PRNG --------------------------------------------------------------------- */

static void test_rng(void **state)
{
    (void)state;
    /* splitmix64's published first output for seed 0 (Vigna's reference
     * implementation): 0xE220A8397B1DCDAF. */
    uint64_t s = 0;
    assert_int_equal(ntp__rng_next(&s), UINT64_C(0xE220A8397B1DCDAF));

    uint64_t a = 42, b = 42, c = 43;
    for (int i = 0; i < 10; i++)
        assert_int_equal(ntp__rng_next(&a), ntp__rng_next(&b));
    assert_true(ntp__rng_next(&a) != ntp__rng_next(&c));

    const int n = 200000;
    double sum = 0.0, sum2 = 0.0, usum = 0.0;
    float umin = 1.0f, umax = 0.0f;
    s = 7;
    for (int i = 0; i < n; i++) {
        float u = ntp__rng_uniform(&s);
        umin = fminf(umin, u);
        umax = fmaxf(umax, u);
        usum += u;
        double z = ntp__rng_normal(&s);
        sum += z;
        sum2 += z * z;
    }
    assert_true(umin >= 0.0f && umax < 1.0f);
    /* Standard errors: uniform mean 0.29/sqrt(n) = 6.5e-4, normal mean
     * 1/sqrt(n) = 2.2e-3, variance sqrt(2/n) = 3.2e-3; bounds at ~5 sigma. */
    assert_float_equal(usum / n, 0.5, 0.004);
    assert_float_equal(sum / n, 0.0, 0.012);
    assert_float_equal(sum2 / n - (sum / n) * (sum / n), 1.0, 0.016);
}

/* --- audio ---------------------------------------------------------------------- */

/* Average power spectrum over 512-sample Hann-windowed frames, hop 256. */
static void avg_spectrum(const float *x, int64_t n, double *ps /* 257 */)
{
    float *in = fftwf_malloc(sizeof(float) * 512);
    fftwf_complex *out = fftwf_malloc(sizeof(fftwf_complex) * 257);
    assert_true(in && out);
    fftwf_plan p = fftwf_plan_dft_r2c_1d(512, in, out, FFTW_ESTIMATE);
    assert_non_null(p);
    for (int i = 0; i < 257; i++)
        ps[i] = 0.0;
    for (int64_t start = 0; start + 512 <= n; start += 256) {
        for (int i = 0; i < 512; i++)
            in[i] = x[start + i] * (float)(0.5 - 0.5 * cos(2.0 * M_PI * i / 512.0));
        fftwf_execute(p);
        for (int i = 0; i < 257; i++)
            ps[i] += (double)out[i][0] * out[i][0] + (double)out[i][1] * out[i][1];
    }
    fftwf_destroy_plan(p);
    fftwf_free(in);
    fftwf_free(out);
}

/* Spectral flatness: geometric over arithmetic mean of the power spectrum,
 * bins 1..255 (DC and Nyquist left out). 1 for a flat spectrum. */
static double flatness(const double *ps)
{
    double lg = 0.0, ar = 0.0;
    for (int i = 1; i < 256; i++) {
        lg += log(ps[i] + 1e-30);
        ar += ps[i];
    }
    return exp(lg / 255.0) / (ar / 255.0);
}

static void test_audio_deterministic(void **state)
{
    (void)state;
    float *a = alloc_f(NS), *b = alloc_f(NS), *c = alloc_f(NS);
    ntp__synth_audio(a, NS, SR, 1);
    ntp__synth_audio(b, NS, SR, 1);
    ntp__synth_audio(c, NS, SR, 2);
    assert_memory_equal(a, b, sizeof(float) * NS);
    int64_t same = 0;
    for (int64_t i = 0; i < NS; i++)
        same += a[i] == c[i];
    assert_true(same < NS / 100);
    free(a);
    free(b);
    free(c);
}

static void test_audio_is_speech_like(void **state)
{
    (void)state;
    float *x = alloc_f(NS), *noise = alloc_f(NS);
    uint64_t s = 99;
    for (int64_t i = 0; i < NS; i++)
        noise[i] = 0.1f * ntp__rng_normal(&s);
    double ps[257], pn[257];
    avg_spectrum(noise, NS, pn);
    const double flat_noise = flatness(pn);

    for (uint64_t seed = 1; seed <= 4; seed++) {
        ntp__synth_audio(x, NS, SR, seed);

        /* Amplitude: peak exactly 0.5, far from silence. */
        double peak = 0.0, e = 0.0;
        for (int64_t i = 0; i < NS; i++) {
            peak = fmax(peak, fabs(x[i]));
            e += (double)x[i] * x[i];
        }
        double rms = sqrt(e / NS);
        assert_float_equal(peak, 0.5, 1e-6);
        if (!(rms > 0.05))
            fail_msg("seed %llu: rms %g", (unsigned long long)seed, rms);

        /* Spectrum: peaky (harmonics, formants), not flat like noise, and
         * nearly all energy below 4 kHz (bin 128 of 256 at 16 kHz). */
        avg_spectrum(x, NS, ps);
        double f = flatness(ps);
        double low = 0.0, all = 0.0;
        for (int i = 0; i < 257; i++) {
            all += ps[i];
            if (i < 128)
                low += ps[i];
        }
        printf("seed %llu: rms %.3f flatness %.4f (noise %.4f), below 4 kHz %.4f\n",
               (unsigned long long)seed, rms, f, flat_noise, low / all);
        assert_true(flat_noise > 0.5);
        if (!(f < 0.1 * flat_noise))
            fail_msg("seed %llu: flatness %g vs noise %g", (unsigned long long)seed, f, flat_noise);
        if (!(low / all > 0.95))
            fail_msg("seed %llu: only %g of the energy below 4 kHz", (unsigned long long)seed,
                     low / all);
    }
    free(x);
    free(noise);
}

/* Voiced: the loudest 40 ms has a strong autocorrelation peak at a pitch
 * period of 100-250 Hz (64-160 samples), and none at short lags as noise
 * would not have either. */
static void test_audio_pitch(void **state)
{
    (void)state;
    float *x = alloc_f(NS);
    const int64_t W = 640;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        ntp__synth_audio(x, NS, SR, seed);
        int64_t best = 0;
        double best_e = -1.0;
        for (int64_t st = 0; st + W + 200 <= NS; st += 160) {
            double e = 0.0;
            for (int64_t i = 0; i < W; i++)
                e += (double)x[st + i] * x[st + i];
            if (e > best_e) {
                best_e = e;
                best = st;
            }
        }
        double r0 = 0.0, rmax = -1.0;
        int64_t lag_max = 0;
        for (int64_t i = 0; i < W; i++)
            r0 += (double)x[best + i] * x[best + i];
        for (int64_t lag = 40; lag <= 200; lag++) {
            double r = 0.0;
            for (int64_t i = 0; i < W; i++)
                r += (double)x[best + i] * x[best + i + lag];
            if (r > rmax) {
                rmax = r;
                lag_max = lag;
            }
        }
        printf("seed %llu: pitch lag %lld (%.0f Hz), normalised autocorrelation %.3f\n",
               (unsigned long long)seed, (long long)lag_max, (double)SR / (double)lag_max,
               rmax / r0);
        assert_true(lag_max >= 64 && lag_max <= 160);
        assert_true(rmax / r0 > 0.5);
    }
    free(x);
}

/* Syllables and pauses: 10 ms frame energies span a wide range (loud
 * syllable nuclei, near-silent pauses and syllable edges), and the
 * envelope rises and falls at a syllabic rate of 2-8 per second. */
static void test_audio_envelope(void **state)
{
    (void)state;
    float *x = alloc_f(NS);
    enum { FR = NS / 160 };
    double e[FR], sorted[FR];
    for (uint64_t seed = 1; seed <= 4; seed++) {
        ntp__synth_audio(x, NS, SR, seed);
        for (int f = 0; f < FR; f++) {
            e[f] = 0.0;
            for (int i = 0; i < 160; i++)
                e[f] += (double)x[f * 160 + i] * x[f * 160 + i];
            sorted[f] = e[f];
        }
        /* Insertion sort: FR = 200. */
        for (int i = 1; i < FR; i++)
            for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
                double t = sorted[j];
                sorted[j] = sorted[j - 1];
                sorted[j - 1] = t;
            }
        double p10 = sorted[FR / 10], p90 = sorted[FR * 9 / 10];
        /* Count rises through a tenth of the 90th percentile: syllable onsets
         * (the envelope falls to zero between syllables). */
        int onsets = 0;
        for (int f = 1; f < FR; f++)
            onsets += e[f - 1] < 0.1 * p90 && e[f] >= 0.1 * p90;
        printf("seed %llu: frame energy p90/p10 = %.0f, %d onsets in 2 s\n",
               (unsigned long long)seed, p90 / p10, onsets);
        assert_true(p90 / p10 > 100.0);
        assert_true(onsets >= 4 && onsets <= 16);
    }
    free(x);
}

/* --- CTC logits ------------------------------------------------------------------ */

static void test_logits_structure(void **state)
{
    (void)state;
    const int64_t T = 400, N = 3, C = 29;
    float *x = alloc_f(T * N * C), *y = alloc_f(T * N * C), *one = alloc_f(T * C);
    ntp__synth_ctc_logits(x, T, N, C, 5);
    ntp__synth_ctc_logits(y, T, N, C, 5);
    assert_memory_equal(x, y, sizeof(float) * (size_t)(T * N * C));
    ntp__synth_ctc_logits(y, T, N, C, 6);
    assert_true(memcmp(x, y, sizeof(float) * (size_t)(T * N * C)) != 0);
    /* Sequence 0 does not depend on the batch size. */
    ntp__synth_ctc_logits(one, T, 1, C, 5);
    for (int64_t t = 0; t < T; t++)
        assert_memory_equal(one + t * C, x + t * N * C, sizeof(float) * (size_t)C);
    /* Different sequences in a batch differ. */
    assert_true(memcmp(x, x + C, sizeof(float) * (size_t)C) != 0);

    /* Per frame: how confident, which class, how often a near-tie. */
    int64_t confident = 0, blank = 0, torn = 0, repeats = 0, frames = T * N;
    for (int64_t n = 0; n < N; n++) {
        int64_t prev = -1, last_label = -1;
        for (int64_t t = 0; t < T; t++) {
            const float *f = x + (t * N + n) * C;
            int64_t a = 0;
            for (int64_t c = 1; c < C; c++)
                if (f[c] > f[a])
                    a = c;
            double z = 0.0, second = -INFINITY;
            for (int64_t c = 0; c < C; c++) {
                z += exp((double)f[c] - f[a]);
                if (c != a)
                    second = fmax(second, f[c]);
            }
            confident += 1.0 / z > 0.5;
            torn += f[a] - second < 0.7;
            blank += a == C - 1;
            /* A label that repeats the previous label after blanks. */
            if (a != C - 1 && prev == C - 1 && a == last_label)
                repeats++;
            if (a != C - 1)
                last_label = a;
            prev = a;
        }
    }
    printf("frames %lld: confident %lld, blank %lld, near-ties %lld, repeats %lld\n",
           (long long)frames, (long long)confident, (long long)blank, (long long)torn,
           (long long)repeats);
    assert_true(confident > frames * 8 / 10);
    assert_true(blank > frames * 4 / 10 && blank < frames * 8 / 10);
    assert_true(torn > frames / 25 && torn < frames / 4);
    assert_true(repeats >= 3);
    free(x);
    free(y);
    free(one);
}

/* Beam search on these logits has real work: the whole beam stays full of
 * distinct prefixes, the runner-up is close to the winner, and the decoded
 * length is what the frame structure implies (a label run of 1-3 frames
 * after a blank run of 1-5: one label per 5 frames on average). */
static void test_logits_beam(void **state)
{
    (void)state;
    const int64_t T = 200, C = 29, W = 16;
    float *x = alloc_f(T * C);
    int32_t *out = malloc(sizeof(int32_t) * (size_t)T);
    size_t bytes = ntp__ctc_beam_ws_bytes(T, C, W);
    void *ws = malloc(bytes);
    assert_true(out && ws);
    for (uint64_t seed = 1; seed <= 5; seed++) {
        ntp__synth_ctc_logits(x, T, 1, C, seed);
        ntp_ctc_beam_stats st;
        ntp__ctc_beam_decode(x, T, C, C, W, ws, out, &st);
        printf("seed %llu: %d survivors, length %d, log p %.3f, runner-up %.3f\n",
               (unsigned long long)seed, st.survivors, st.best_len, st.best_logp, st.second_logp);
        assert_int_equal(st.survivors, W);
        assert_true(st.best_len >= T / 10 && st.best_len <= T / 3);
        assert_true(isfinite(st.second_logp) && st.best_logp - st.second_logp < 5.0);
    }
    free(x);
    free(out);
    free(ws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rng),
        cmocka_unit_test(test_audio_deterministic),
        cmocka_unit_test(test_audio_is_speech_like),
        cmocka_unit_test(test_audio_pitch),
        cmocka_unit_test(test_audio_envelope),
        cmocka_unit_test(test_logits_structure),
        cmocka_unit_test(test_logits_beam),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
