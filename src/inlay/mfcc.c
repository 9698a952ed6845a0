/* The mfcc inlay: audio samples to MFCC features with context frames.
 *
 * The pipeline is python_speech_features.mfcc() as DeepSpeech used it
 * (docs/inlays.md writes it out step by step), with a Hamming window in
 * place of its rectangular default: pre-emphasis, framing, window, power
 * spectrum, mel filterbank, log, orthonormal DCT-II, cepstral lifter, log
 * frame energy as coefficient 0, then DeepSpeech's context windows.
 *
 * FFTs use FFTW's single-precision real-to-complex transform. FFTW's planner
 * is not thread-safe, so plans are made under one mutex and cached per size;
 * executing a plan on new arrays (fftwf_execute_dft_r2c) is thread-safe, so
 * concurrent runs share the cached plans. */
#include <fftw3.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "inlay/inlay-impl.h"

/* Energies below this are floored before the log, so that silence gives a
 * finite feature (docs/ops.md). */
#define MFCC_FLOOR 1e-10f
#define MFCC_PREEMPH 0.97f
#define MFCC_CEPLIFTER 22.0
/* Large enough for any realistic front end, small enough that every size
 * below fits an int for FFTW and no product overflows. */
#define MFCC_MAX_FFT (1 << 22)
#define MFCC_MAX_BANDS 4096
#define MFCC_MAX_CONTEXT 4096
#define MFCC_ALIGN 64

typedef struct mfcc_dims {
    int64_t n, samples, frames;
    int64_t window, hop, nfft, bins, bands, coeffs, context, feat;
    double sample_rate;
} mfcc_dims;

/* --- FFTW plans ------------------------------------------------------------ */

#define PLAN_CACHE 8
static pthread_mutex_t plan_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int nfft;
    fftwf_plan plan;
} plan_cache[PLAN_CACHE];

/* A plan for an out-of-place r2c transform of nfft points, made on
 * fftwf_malloc'd (SIMD-aligned) arrays. Callers execute it on their own
 * arrays aligned to MFCC_ALIGN, which FFTW requires to share the planning
 * arrays' alignment (both are multiples of the SIMD alignment). Sets *owned
 * when the cache was full and the caller must destroy the plan with
 * release_plan(). Returns NULL when FFTW could not plan. */
static fftwf_plan get_plan(int nfft, int *owned)
{
    fftwf_plan p = NULL;
    *owned = 0;
    pthread_mutex_lock(&plan_lock);
    int free_slot = -1;
    for (int i = 0; i < PLAN_CACHE; i++) {
        if (plan_cache[i].plan && plan_cache[i].nfft == nfft) {
            p = plan_cache[i].plan;
            break;
        }
        if (!plan_cache[i].plan && free_slot < 0)
            free_slot = i;
    }
    if (!p) {
        float *in = fftwf_malloc(sizeof(float) * (size_t)nfft);
        fftwf_complex *out = fftwf_malloc(sizeof(fftwf_complex) * (size_t)(nfft / 2 + 1));
        if (in && out)
            p = fftwf_plan_dft_r2c_1d(nfft, in, out, FFTW_ESTIMATE);
        fftwf_free(in);
        fftwf_free(out);
        if (p && free_slot >= 0) {
            plan_cache[free_slot].nfft = nfft;
            plan_cache[free_slot].plan = p;
        } else if (p) {
            *owned = 1;
        }
    }
    pthread_mutex_unlock(&plan_lock);
    return p;
}

static void release_plan(fftwf_plan p, int owned)
{
    if (!owned)
        return;
    pthread_mutex_lock(&plan_lock);
    fftwf_destroy_plan(p);
    pthread_mutex_unlock(&plan_lock);
}

/* --- validation ------------------------------------------------------------ */

/* need_data: the buffers must be bound (running); sizes alone are enough
 * for a workspace query at prepare time, before the arena exists. */
static ntp_status check_dims(ntp_ctx *ctx, const ntp_kargs *k, mfcc_dims *d, bool need_data)
{
    if (!k->node)
        return ntp__inlay_error(ctx, k, NTP_STATUS_INTERNAL, "mfcc run without a node");
    const ntp_attrs *a = &k->node->a;
    if (k->n_in < 1 || k->n_out < 1)
        return ntp__inlay_error(ctx, k, NTP_STATUS_INTERNAL, "mfcc needs one input and one output");
    const ntp_buf *in = &k->in[0], *out = &k->out[0];
    if (in->dtype != NTP_DTYPE_F32 || out->dtype != NTP_DTYPE_F32)
        return ntp__inlay_error(ctx, k, NTP_STATUS_UNSUPPORTED,
                                "mfcc runs on f32 samples and features, got %s in, %s out",
                                ntp_dtype_name(in->dtype), ntp_dtype_name(out->dtype));
    if (in->shape.ndim != 2)
        return ntp__inlay_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                                "mfcc input must be [N, samples], got %d dims", in->shape.ndim);
    if (a->sample_rate <= 0 || a->window <= 0 || a->hop <= 0)
        return ntp__inlay_error(
            ctx, k, NTP_STATUS_INVALID_ARGUMENT,
            "mfcc needs positive sample_rate, window and hop, got %lld, %lld, %lld",
            (long long)a->sample_rate, (long long)a->window, (long long)a->hop);
    if (a->n_fft < a->window || a->n_fft > MFCC_MAX_FFT)
        return ntp__inlay_error(ctx, k, NTP_STATUS_INVALID_ARGUMENT,
                                "mfcc fft %lld must be in [window = %lld, %d]", (long long)a->n_fft,
                                (long long)a->window, MFCC_MAX_FFT);
    if (a->mel_bands < 1 || a->mel_bands > MFCC_MAX_BANDS || a->coefficients < 1 ||
        a->coefficients > a->mel_bands)
        return ntp__inlay_error(ctx, k, NTP_STATUS_INVALID_ARGUMENT,
                                "mfcc needs 1 <= coefficients (%lld) <= mel_bands (%lld) <= %d",
                                (long long)a->coefficients, (long long)a->mel_bands,
                                MFCC_MAX_BANDS);
    if (a->context < 0 || a->context > MFCC_MAX_CONTEXT)
        return ntp__inlay_error(ctx, k, NTP_STATUS_INVALID_ARGUMENT,
                                "mfcc context %lld must be in [0, %d]", (long long)a->context,
                                MFCC_MAX_CONTEXT);
    d->n = in->shape.dim[0];
    d->samples = in->shape.dim[1];
    if (d->n < 0 || d->samples < a->window)
        return ntp__inlay_error(
            ctx, k, NTP_STATUS_SHAPE_ERROR,
            "mfcc input [%lld, %lld] holds fewer samples than one window (%lld)", (long long)d->n,
            (long long)d->samples, (long long)a->window);
    d->sample_rate = (double)a->sample_rate;
    d->window = a->window;
    d->hop = a->hop;
    d->nfft = a->n_fft;
    d->bins = a->n_fft / 2 + 1;
    d->bands = a->mel_bands;
    d->coeffs = a->coefficients;
    d->context = a->context;
    d->feat = a->coefficients * (2 * a->context + 1);
    d->frames = 1 + (d->samples - d->window) / d->hop;
    if (out->shape.ndim != 3 || out->shape.dim[0] != d->frames || out->shape.dim[1] != d->n ||
        out->shape.dim[2] != d->feat)
        return ntp__inlay_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                                "mfcc output must be [%lld, %lld, %lld] (time-major)",
                                (long long)d->frames, (long long)d->n, (long long)d->feat);
    if (need_data && d->n > 0 && (!in->data || !out->data))
        return ntp__inlay_error(ctx, k, NTP_STATUS_INVALID_ARGUMENT, "mfcc buffers without data");
    return NTP_STATUS_OK;
}

/* --- scratch layout ---------------------------------------------------------- */

/* Every array starts on an MFCC_ALIGN boundary: FFTW needs its arrays
 * aligned like the planning arrays, the rest simply benefits. */
typedef struct mfcc_scratch {
    float *frame;        /* nfft: windowed frame, zero padded */
    fftwf_complex *spec; /* bins */
    float *power;        /* bins */
    float *hamming;      /* window */
    float *dct;          /* coeffs x bands, lifter folded in */
    float *fb_w;         /* filterbank weights, band after band */
    int64_t *fb_lo;      /* bands: first bin of each band */
    int64_t *fb_off;     /* bands + 1: offsets of each band's weights in fb_w */
    float *logmel;       /* bands */
} mfcc_scratch;

static size_t round_up(size_t n)
{
    return (n + MFCC_ALIGN - 1) / MFCC_ALIGN * MFCC_ALIGN;
}

/* Bytes of the scratch, and its arrays carved out of base when base is not
 * NULL. All counts are bounded by the MFCC_MAX_* limits, so no overflow. */
static size_t layout(const mfcc_dims *d, char *base, mfcc_scratch *s)
{
    size_t off = 0;
    size_t sizes[9] = {
        sizeof(float) * (size_t)d->nfft,
        sizeof(fftwf_complex) * (size_t)d->bins,
        sizeof(float) * (size_t)d->bins,
        sizeof(float) * (size_t)d->window,
        sizeof(float) * (size_t)(d->coeffs * d->bands),
        /* A band spans at most the bins between its outer points; summed
         * over bands that is at most twice the bin count. */
        sizeof(float) * (size_t)(2 * d->bins + 2),
        sizeof(int64_t) * (size_t)d->bands,
        sizeof(int64_t) * (size_t)(d->bands + 1),
        sizeof(float) * (size_t)d->bands,
    };
    void *p[9];
    for (int i = 0; i < 9; i++) {
        p[i] = base ? base + off : NULL;
        off += round_up(sizes[i]);
    }
    if (base) {
        s->frame = p[0];
        s->spec = p[1];
        s->power = p[2];
        s->hamming = p[3];
        s->dct = p[4];
        s->fb_w = p[5];
        s->fb_lo = p[6];
        s->fb_off = p[7];
        s->logmel = p[8];
    }
    return off;
}

size_t ntp__mfcc_workspace(const ntp_kargs *k)
{
    mfcc_dims d = {0};
    if (!k || !k->node || check_dims(NULL, k, &d, false) != NTP_STATUS_OK)
        return 0;
    /* Room to align the start of whatever pointer we are given. */
    return layout(&d, NULL, NULL) + MFCC_ALIGN;
}

/* --- the tables -------------------------------------------------------------- */

static double hz2mel(double hz)
{
    return 2595.0 * log10(1.0 + hz / 700.0);
}

static double mel2hz(double mel)
{
    return 700.0 * (pow(10.0, mel / 2595.0) - 1.0);
}

/* python_speech_features.get_filterbanks(): bands + 2 points evenly spaced
 * in mel from 0 Hz to sample_rate / 2, mapped to FFT bins with
 * floor((nfft + 1) * hz / sample_rate); band j rises linearly from point j
 * to point j+1 and falls to point j+2. Only the non-zero span of each band
 * is stored. */
static void make_filterbank(const mfcc_dims *d, mfcc_scratch *s)
{
    const double low = hz2mel(0.0), high = hz2mel(d->sample_rate / 2.0);
    const double step = (high - low) / (double)(d->bands + 1);
    int64_t off = 0;
    /* Points are computed on the fly: point j+2 of band j is point j of
     * band j+2, so a sliding window of three suffices. */
    double pt[3];
    for (int i = 0; i < 3; i++) {
        /* numpy.linspace: start + i * step, with the end point exact. */
        double mel = i == d->bands + 1 ? high : low + (double)i * step;
        pt[i] = floor((double)(d->nfft + 1) * mel2hz(mel) / d->sample_rate);
    }
    for (int64_t j = 0; j < d->bands; j++) {
        int64_t b0 = (int64_t)pt[0], b1 = (int64_t)pt[1], b2 = (int64_t)pt[2];
        /* Floating-point error could in principle put the top point one bin
         * past the spectrum; the spectrum simply ends there. */
        if (b2 > d->bins)
            b2 = d->bins;
        if (b1 > b2)
            b1 = b2;
        if (b0 > b1)
            b0 = b1;
        s->fb_lo[j] = b0;
        s->fb_off[j] = off;
        for (int64_t i = b0; i < b1; i++)
            s->fb_w[off++] = (float)((double)(i - b0) / (double)(b1 - b0));
        for (int64_t i = b1; i < b2; i++)
            s->fb_w[off++] = (float)((double)(b2 - i) / (double)(b2 - b1));
        pt[0] = pt[1];
        pt[1] = pt[2];
        int64_t next = j + 3;
        if (next <= d->bands + 1) {
            double mel = next == d->bands + 1 ? high : low + (double)next * step;
            pt[2] = floor((double)(d->nfft + 1) * mel2hz(mel) / d->sample_rate);
        }
    }
    s->fb_off[d->bands] = off;
}

/* Orthonormal DCT-II rows (scipy's norm='ortho') times the cepstral lifter
 * 1 + (L/2)·sin(πk/L), so one matrix-vector product does both. */
static void make_dct(const mfcc_dims *d, mfcc_scratch *s)
{
    const double nb = (double)d->bands;
    for (int64_t c = 0; c < d->coeffs; c++) {
        double scale = c == 0 ? sqrt(1.0 / nb) : sqrt(2.0 / nb);
        double lift = 1.0 + MFCC_CEPLIFTER / 2.0 * sin(M_PI * (double)c / MFCC_CEPLIFTER);
        for (int64_t m = 0; m < d->bands; m++)
            s->dct[c * d->bands + m] =
                (float)(scale * lift * cos(M_PI * (double)c * (double)(2 * m + 1) / (2.0 * nb)));
    }
}

/* numpy.hamming(window): the symmetric Hamming window. */
static void make_hamming(const mfcc_dims *d, mfcc_scratch *s)
{
    if (d->window == 1) {
        s->hamming[0] = 1.0f;
        return;
    }
    for (int64_t i = 0; i < d->window; i++)
        s->hamming[i] =
            (float)(0.54 - 0.46 * cos(2.0 * M_PI * (double)i / (double)(d->window - 1)));
}

/* --- one frame ----------------------------------------------------------------- */

/* Cepstrum of the frame starting at sample `start` of signal x into cep. */
static void one_frame(const mfcc_dims *d, mfcc_scratch *s, fftwf_plan plan, const float *x,
                      int64_t start, float *cep)
{
    /* Pre-emphasis y[i] = x[i] - 0.97·x[i-1] (y[0] = x[0]) is applied per
     * frame rather than to a copy of the whole signal: no signal-sized
     * scratch, and each sample costs the same. */
    for (int64_t i = 0; i < d->window; i++) {
        int64_t j = start + i;
        float y = j > 0 ? x[j] - MFCC_PREEMPH * x[j - 1] : x[j];
        s->frame[i] = y * s->hamming[i];
    }
    memset(s->frame + d->window, 0, sizeof(float) * (size_t)(d->nfft - d->window));
    fftwf_execute_dft_r2c(plan, s->frame, s->spec);

    const float inv_n = 1.0f / (float)d->nfft;
    float energy = 0.0f;
    for (int64_t i = 0; i < d->bins; i++) {
        float p = (s->spec[i][0] * s->spec[i][0] + s->spec[i][1] * s->spec[i][1]) * inv_n;
        s->power[i] = p;
        energy += p;
    }
    for (int64_t j = 0; j < d->bands; j++) {
        const float *w = s->fb_w + s->fb_off[j];
        const float *p = s->power + s->fb_lo[j];
        int64_t len = s->fb_off[j + 1] - s->fb_off[j];
        float e = 0.0f;
        for (int64_t i = 0; i < len; i++)
            e += w[i] * p[i];
        s->logmel[j] = logf(e > MFCC_FLOOR ? e : MFCC_FLOOR);
    }
    for (int64_t c = 1; c < d->coeffs; c++) {
        const float *row = s->dct + c * d->bands;
        float acc = 0.0f;
        for (int64_t m = 0; m < d->bands; m++)
            acc += row[m] * s->logmel[m];
        cep[c] = acc;
    }
    /* appendEnergy: coefficient 0 is the log of the frame's total power
     * (the lifter is 1 there, so replacing it after liftering is exact). */
    cep[0] = logf(energy > MFCC_FLOOR ? energy : MFCC_FLOOR);
}

/* --- the run ------------------------------------------------------------------- */

ntp_status ntp__mfcc_run(ntp_ctx *ctx, const ntp_kargs *k)
{
    mfcc_dims d = {0};
    ntp_status st = check_dims(ctx, k, &d, true);
    if (st != NTP_STATUS_OK)
        return st;
    if (d.n == 0)
        return NTP_STATUS_OK;

    size_t need = layout(&d, NULL, NULL) + MFCC_ALIGN;
    void *owned;
    char *raw = ntp__inlay_scratch(k, need, &owned);
    if (!raw)
        return ntp__inlay_error(ctx, k, NTP_STATUS_OUT_OF_MEMORY,
                                "out of memory for %zu bytes of mfcc scratch", need);
    char *base = raw + (MFCC_ALIGN - (uintptr_t)raw % MFCC_ALIGN) % MFCC_ALIGN;
    mfcc_scratch s;
    layout(&d, base, &s);

    int plan_owned;
    fftwf_plan plan = get_plan((int)d.nfft, &plan_owned);
    if (!plan) {
        free(owned);
        return ntp__inlay_error(ctx, k, NTP_STATUS_BACKEND_ERROR,
                                "FFTW could not plan a %lld-point transform", (long long)d.nfft);
    }
    make_hamming(&d, &s);
    make_filterbank(&d, &s);
    make_dct(&d, &s);

    const float *in = k->in[0].data;
    float *out = k->out[0].data;
    const int64_t T = d.frames, N = d.n, F = d.feat, C = d.coeffs, ctxw = d.context;
    /* Each frame's own coefficients go to the centre slot of its output row;
     * the context slots are then copied from the centres of the neighbours.
     * Centres are never overwritten by the copies, so no extra buffer. */
    for (int64_t b = 0; b < N; b++) {
        const float *x = in + b * d.samples;
        for (int64_t t = 0; t < T; t++)
            one_frame(&d, &s, plan, x, t * d.hop, out + (t * N + b) * F + ctxw * C);
    }
    release_plan(plan, plan_owned);
    for (int64_t t = 0; t < T; t++) {
        for (int64_t b = 0; b < N; b++) {
            float *row = out + (t * N + b) * F;
            /* Slot j holds frame t - context + j: past frames first. */
            for (int64_t j = 0; j < 2 * ctxw + 1; j++) {
                int64_t src = t - ctxw + j;
                if (j == ctxw)
                    continue;
                if (src < 0 || src >= T)
                    memset(row + j * C, 0, sizeof(float) * (size_t)C);
                else
                    memcpy(row + j * C, out + (src * N + b) * F + ctxw * C,
                           sizeof(float) * (size_t)C);
            }
        }
    }
    free(owned);
    return NTP_STATUS_OK;
}
