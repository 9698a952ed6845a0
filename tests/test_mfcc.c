/* The mfcc inlay: coefficients against an independent numpy reference,
 * the time-major layout, context windows and their zero padding, silence,
 * workspace use and errors.
 *
 * ref_a and ref_b below were printed by scripts/mfcc-reference.py (numpy,
 * float64, written from python_speech_features' formulas; run it with
 * /usr/bin/python3) and pasted here. The test signal is the script's: 440 Hz
 * + 1000 Hz plus a click every 101 samples, rounded to float. ntprof works
 * in float32, so values are compared within 1e-3 relative (1e-3 absolute
 * near zero). */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "graph/gen-impl.h"
#include "inlay/inlay-impl.h"

/* config A: 16 kHz, window 400, hop 160, fft 512, 26 bands, 26
 * coefficients; 1600 samples give T = 8. Frames 0, 3 and 7. */
static const double ref_a[3][26] = {
    {-0.23255729, -17.720342, -6.3010811,  -33.00967,  -34.909807, -22.504569, -11.959074,
     -23.651049,  -33.883695, -14.891333,  33.118897,  67.136221,  54.804183,  6.4582911,
     -34.047615,  -38.186984, -15.588706,  4.1127382,  7.0045952,  1.2008407,  -1.3132623,
     0.030850453, 0.62061519, -0.29375771, 0.25951519, 1.6874884},
    {-0.21646316, -17.286598, -5.8436352,  -32.685274, -34.697764, -21.988348, -10.672739,
     -21.764379,  -32.249777, -14.194722,  33.103641,  67.284152,  55.678017,  7.7489391,
     -33.025764,  -37.650614, -15.248013,  4.4390571,  7.2182018,  1.2697039,  -1.2411284,
     0.17643889,  0.69608654, -0.30872065, 0.33919365, 1.8539357},
    {-0.2140758, -15.043511, -2.2163664,  -28.074194,   -29.718722, -17.142708, -6.5330348,
     -18.787615, -30.343068, -12.944959,  33.946678,    67.464353,  54.928996,  6.369402,
     -34.216313, -38.06203,  -14.869586,  5.3722714,    8.4713634,  2.5781537,  -0.17294987,
     0.8118652,  0.92145971, -0.43289995, -0.068401799, 1.4448338},
};
static const int ref_a_frames[3] = {0, 3, 7};

/* config B: 8 kHz, window 200, hop 80, fft 256, 20 bands, 13
 * coefficients; 800 samples give T = 8. Frames 0, 4 and 7. */
static const double ref_b[3][13] = {
    {0.28208273, -14.700185, -20.234649, -32.8157, -13.900009, -10.661142, -21.837174, -0.76775088,
     52.93777, 58.666152, -3.941046, -54.316257, -38.627273},
    {0.31567831, -14.626442, -21.153674, -33.559002, -13.077413, -9.274999, -21.026493, 0.28848442,
     54.315324, 58.904932, -4.7041034, -54.682767, -38.932185},
    {0.28022525, -10.876141, -17.301472, -28.515329, -5.7988913, -2.6890986, -17.479489, 3.626582,
     59.827287, 62.672205, -7.4222545, -61.664608, -43.359638},
};
static const int ref_b_frames[3] = {0, 4, 7};

/* --- helpers ------------------------------------------------------------------ */

static ntp_graph test_graph = {.source = "test_mfcc"};

typedef struct mfcc_cfg {
    int64_t sample_rate, window, hop, fft, bands, coeffs, context;
} mfcc_cfg;

static const mfcc_cfg cfg_a = {16000, 400, 160, 512, 26, 26, 0};
static const mfcc_cfg cfg_b = {8000, 200, 80, 256, 20, 13, 0};

typedef struct mfcc_case {
    ntp_node node;
    ntp_kargs k;
    int64_t T, F;
} mfcc_case;

static void mfcc_case_init(mfcc_case *c, const mfcc_cfg *cfg, const float *x, int64_t N,
                           int64_t samples, float *out)
{
    memset(c, 0, sizeof *c);
    c->node.name = "features";
    c->node.op = NTP_OP_MFCC;
    ntp__attrs_default(&c->node.a);
    c->node.a.sample_rate = cfg->sample_rate;
    c->node.a.window = cfg->window;
    c->node.a.hop = cfg->hop;
    c->node.a.n_fft = cfg->fft;
    c->node.a.mel_bands = cfg->bands;
    c->node.a.coefficients = cfg->coeffs;
    c->node.a.context = cfg->context;
    c->T = 1 + (samples - cfg->window) / cfg->hop;
    c->F = cfg->coeffs * (2 * cfg->context + 1);
    c->k.g = &test_graph;
    c->k.node = &c->node;
    c->k.n_in = 1;
    c->k.in[0] = (ntp_buf){(void *)x, {2, {N, samples}}, NTP_DTYPE_F32};
    c->k.n_out = 1;
    c->k.out[0] = (ntp_buf){out, {3, {c->T, N, c->F}}, NTP_DTYPE_F32};
}

/* The reference script's signal, computed in double and rounded to float
 * exactly as numpy does before its float64 pipeline. */
static void tone(float *x, int64_t n, double sr, double gain)
{
    for (int64_t i = 0; i < n; i++) {
        double t = (double)i / sr;
        double v = 0.5 * sin(2.0 * M_PI * 440.0 * t) + 0.25 * sin(2.0 * M_PI * 1000.0 * t);
        if (i % 101 == 0)
            v += 0.3;
        x[i] = (float)(gain * v);
    }
}

static void expect_close(float got, double want, const char *what, int64_t frame, int64_t coef)
{
    double tol = 1e-3 * fmax(1.0, fabs(want));
    if (!(fabs((double)got - want) <= tol)) {
        print_error("%s frame %lld coefficient %lld: got %.7g, reference %.7g\n", what,
                    (long long)frame, (long long)coef, (double)got, want);
        fail();
    }
}

static float *alloc_f(int64_t n)
{
    float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    assert_non_null(p);
    /* Poison: a NaN left anywhere means the kernel did not write it. */
    for (int64_t i = 0; i < n; i++)
        p[i] = NAN;
    return p;
}

/* --- reference values -------------------------------------------------------------- */

static void test_reference_a(void **state)
{
    (void)state;
    float x[1600];
    tone(x, 1600, 16000.0, 1.0);
    mfcc_case mc;
    float *out = alloc_f(8 * 26);
    mfcc_case_init(&mc, &cfg_a, x, 1, 1600, out);
    assert_int_equal(mc.T, 8);
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_status st = ntp__mfcc_run(ctx, &mc.k);
    if (st != NTP_STATUS_OK)
        fail_msg("%s: %s", ntp_status_name(st), ntp_ctx_errmsg(ctx));
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 26; c++)
            expect_close(out[ref_a_frames[r] * 26 + c], ref_a[r][c], "A", ref_a_frames[r], c);
    for (int i = 0; i < 8 * 26; i++)
        assert_false(isnan(out[i]));
    ntp_ctx_free(ctx);
    free(out);
}

/* Batch of two, time-major: sequence 0 is silence, sequence 1 the tone.
 * Silence floors every energy at 1e-10, so the log mel vector is constant
 * log(1e-10): the DCT of a constant has only coefficient 0, which is then
 * replaced by the log energy, also log(1e-10). Expected: [ln 1e-10, 0, ...]. */
static void test_reference_b_batch(void **state)
{
    (void)state;
    float x[2 * 800];
    memset(x, 0, sizeof(float) * 800);
    tone(x + 800, 800, 8000.0, 1.0);
    mfcc_case mc;
    float *out = alloc_f(8 * 2 * 13);
    mfcc_case_init(&mc, &cfg_b, x, 2, 800, out);
    ntp_ctx *ctx = ntp_ctx_init();
    assert_int_equal(ntp__mfcc_run(ctx, &mc.k), NTP_STATUS_OK);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 13; c++)
            expect_close(out[(ref_b_frames[r] * 2 + 1) * 13 + c], ref_b[r][c], "B", ref_b_frames[r],
                         c);
    const double log_floor = log(1e-10);
    for (int t = 0; t < 8; t++)
        for (int c = 0; c < 13; c++)
            expect_close(out[(t * 2 + 0) * 13 + c], c == 0 ? log_floor : 0.0, "silence", t, c);
    ntp_ctx_free(ctx);
    free(out);
}

/* --- context windows ----------------------------------------------------------------- */

/* Context 2 on config A, batch of two (the tone and half of it): row (t, b)
 * holds frames t-2, t-1, t, t+1, t+2 of sequence b, past first, zeros where
 * the frame does not exist; each frame equals the context-0 result. */
static void test_context_windows(void **state)
{
    (void)state;
    const int64_t S = 1600, N = 2, C = 26, T = 8, K = 2;
    float x[2 * 1600];
    tone(x, S, 16000.0, 1.0);
    tone(x + S, S, 16000.0, 0.5);
    ntp_ctx *ctx = ntp_ctx_init();

    float *plain = alloc_f(T * N * C);
    mfcc_case mc;
    mfcc_case_init(&mc, &cfg_a, x, N, S, plain);
    assert_int_equal(ntp__mfcc_run(ctx, &mc.k), NTP_STATUS_OK);

    mfcc_cfg cfg = cfg_a;
    cfg.context = K;
    const int64_t F = C * (2 * K + 1);
    float *wide = alloc_f(T * N * F);
    mfcc_case_init(&mc, &cfg, x, N, S, wide);
    assert_int_equal(mc.k.out[0].shape.dim[2], 130);
    assert_int_equal(ntp__mfcc_run(ctx, &mc.k), NTP_STATUS_OK);

    for (int64_t t = 0; t < T; t++)
        for (int64_t b = 0; b < N; b++)
            for (int64_t j = 0; j < 2 * K + 1; j++) {
                int64_t src = t - K + j;
                for (int64_t c = 0; c < C; c++) {
                    float got = wide[(t * N + b) * F + j * C + c];
                    float want = src < 0 || src >= T ? 0.0f : plain[(src * N + b) * C + c];
                    if (got != want) {
                        print_error("t=%lld b=%lld slot %lld coef %lld: got %g, expected %g\n",
                                    (long long)t, (long long)b, (long long)j, (long long)c,
                                    (double)got, (double)want);
                        fail();
                    }
                }
            }
    /* Spelled out for the edges: frame 0 has two empty past slots, the last
     * frame two empty future slots, and frame 0's own coefficients sit in
     * slot 2 of row 0 and slot 0 of row 2. */
    assert_float_equal(wide[0], 0.0f, 0.0);
    assert_float_equal(wide[C + 5], 0.0f, 0.0);
    assert_float_equal(wide[2 * C + 1], plain[1], 0.0);
    assert_float_equal(wide[(2 * N) * F + 1], plain[1], 0.0);
    assert_float_equal(wide[((T - 1) * N + 1) * F + 4 * C + 7], 0.0f, 0.0);
    assert_true(plain[1] != 0.0f);
    /* The half-amplitude tone differs only in energy: log energy drops by
     * ln 4, the cepstra are identical up to float rounding. */
    expect_close(plain[(3 * N + 1) * C + 0], plain[(3 * N) * C + 0] - log(4.0), "half", 3, 0);
    expect_close(plain[(3 * N + 1) * C + 4], plain[(3 * N) * C + 4], "half", 3, 4);
    ntp_ctx_free(ctx);
    free(plain);
    free(wide);
}

/* DeepSpeech's shape: 1 s of synthetic speech at the defaults gives
 * T = 1 + (16000 - 400) / 160 = 98 rows of 26 x 19 = 494 features. */
static void test_deepspeech_shape(void **state)
{
    (void)state;
    const int64_t S = 16000;
    float *x = alloc_f(S);
    ntp__synth_audio(x, S, 16000, 11);
    mfcc_cfg cfg = {16000, 400, 160, 512, 26, 26, 9};
    mfcc_case mc;
    float *out = alloc_f(98 * 494);
    mfcc_case_init(&mc, &cfg, x, 1, S, out);
    assert_int_equal(mc.T, 98);
    assert_int_equal(mc.F, 494);
    ntp_ctx *ctx = ntp_ctx_init();
    assert_int_equal(ntp__mfcc_run(ctx, &mc.k), NTP_STATUS_OK);
    for (int64_t i = 0; i < 98 * 494; i++)
        assert_true(isfinite(out[i]));
    /* Row 0: nine empty past frames, then frame 0. */
    for (int64_t i = 0; i < 9 * 26; i++)
        assert_float_equal(out[i], 0.0f, 0.0);
    assert_true(out[9 * 26] != 0.0f);
    ntp_ctx_free(ctx);
    free(x);
    free(out);
}

/* --- workspace and errors --------------------------------------------------------------- */

static void test_workspace(void **state)
{
    (void)state;
    float x[1600];
    tone(x, 1600, 16000.0, 1.0);
    float *a = alloc_f(8 * 26), *b = alloc_f(8 * 26);
    mfcc_case mc;
    mfcc_case_init(&mc, &cfg_a, x, 1, 1600, a);
    size_t ws = ntp__mfcc_workspace(&mc.k);
    /* At least the FFT buffers and the tables. */
    assert_true(ws >= sizeof(float) * (512 + 2 * 257 + 257 + 400 + 26 * 26));
    ntp_ctx *ctx = ntp_ctx_init();
    /* The engine asks at prepare time, before buffers are bound; running
     * without them is an error, not a crash. */
    mfcc_case unbound;
    mfcc_case_init(&unbound, &cfg_a, NULL, 1, 1600, NULL);
    assert_int_equal(ntp__mfcc_workspace(&unbound.k), ws);
    assert_int_equal(ntp__mfcc_run(ctx, &unbound.k), NTP_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ntp__mfcc_run(ctx, &mc.k), NTP_STATUS_OK);
    /* A caller's workspace at an odd address gives the same bits. */
    char *buf = malloc(ws + 5);
    assert_non_null(buf);
    memset(buf, 0xA5, ws + 5);
    mc.k.out[0].data = b;
    mc.k.workspace = buf + 5;
    mc.k.workspace_bytes = ws;
    assert_int_equal(ntp__mfcc_run(ctx, &mc.k), NTP_STATUS_OK);
    assert_memory_equal(a, b, sizeof(float) * 8 * 26);
    free(buf);
    ntp_ctx_free(ctx);
    free(a);
    free(b);
}

static void test_errors(void **state)
{
    (void)state;
    float x[1600] = {0};
    float out[8 * 26];
    ntp_ctx *ctx = ntp_ctx_init();
    mfcc_case mc;

    mfcc_case_init(&mc, &cfg_a, x, 1, 1600, out);
    mc.k.out[0].shape.dim[0] = 9;
    assert_int_equal(ntp__mfcc_run(ctx, &mc.k), NTP_STATUS_SHAPE_ERROR);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "<mfcc name='features'>"));
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "[8, 1, 26]"));

    mfcc_case_init(&mc, &cfg_a, x, 1, 399, out);
    assert_int_equal(ntp__mfcc_run(ctx, &mc.k), NTP_STATUS_SHAPE_ERROR);
    assert_int_equal(ntp__mfcc_workspace(&mc.k), 0);

    mfcc_cfg bad = cfg_a;
    bad.coeffs = 27;
    mfcc_case_init(&mc, &bad, x, 1, 1600, out);
    assert_int_equal(ntp__mfcc_run(ctx, &mc.k), NTP_STATUS_INVALID_ARGUMENT);

    bad = cfg_a;
    bad.fft = 256;
    mfcc_case_init(&mc, &bad, x, 1, 1600, out);
    assert_int_equal(ntp__mfcc_run(ctx, &mc.k), NTP_STATUS_INVALID_ARGUMENT);

    mfcc_case_init(&mc, &cfg_a, x, 1, 1600, out);
    mc.k.in[0].dtype = NTP_DTYPE_F16;
    assert_int_equal(ntp__mfcc_run(ctx, &mc.k), NTP_STATUS_UNSUPPORTED);
    ntp_ctx_free(ctx);
}

/* Runs from several threads at once, with different FFT sizes so that
 * plans are made while other threads execute theirs (FFTW's planner is
 * not thread-safe; the kernel serialises planning), must give the bits a
 * lone run gives. */
typedef struct thread_job {
    mfcc_cfg cfg;
    const float *x;
    int64_t samples;
    float *out;
    ntp_status st;
} thread_job;

static void *thread_main(void *arg)
{
    thread_job *j = arg;
    for (int rep = 0; rep < 20; rep++) {
        mfcc_case mc;
        mfcc_case_init(&mc, &j->cfg, j->x, 1, j->samples, j->out);
        j->st = ntp__mfcc_run(NULL, &mc.k);
        if (j->st != NTP_STATUS_OK)
            break;
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    enum { JOBS = 6 };
    const int64_t S = 8000;
    float *x = alloc_f(S);
    ntp__synth_audio(x, S, 16000, 3);
    thread_job jobs[JOBS];
    float *solo[JOBS];
    int64_t T[JOBS];
    /* FFT sizes 384 (not a power of two: FFTW handles any size), 512,
     * 1024, 2048, 4096 and 640. */
    const int64_t fft[JOBS] = {384, 512, 1024, 2048, 4096, 640};
    ntp_ctx *ctx = ntp_ctx_init();
    for (int i = 0; i < JOBS; i++) {
        jobs[i].cfg = (mfcc_cfg){16000, 320 + 10 * i, 160, fft[i], 26, 13, 1};
        jobs[i].x = x;
        jobs[i].samples = S;
        T[i] = 1 + (S - jobs[i].cfg.window) / 160;
        jobs[i].out = alloc_f(T[i] * 13 * 3);
        solo[i] = alloc_f(T[i] * 13 * 3);
        mfcc_case mc;
        mfcc_case_init(&mc, &jobs[i].cfg, x, 1, S, solo[i]);
        assert_int_equal(ntp__mfcc_run(ctx, &mc.k), NTP_STATUS_OK);
    }
    pthread_t th[JOBS];
    for (int i = 0; i < JOBS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, thread_main, &jobs[i]), 0);
    for (int i = 0; i < JOBS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < JOBS; i++) {
        assert_int_equal(jobs[i].st, NTP_STATUS_OK);
        assert_memory_equal(jobs[i].out, solo[i], sizeof(float) * (size_t)(T[i] * 13 * 3));
        free(jobs[i].out);
        free(solo[i]);
    }
    ntp_ctx_free(ctx);
    free(x);
}

/* 200 frames, batch 1, DeepSpeech's configuration. Printed, not gated
 * (benchmarks never gate CI on absolute time). */
static void test_timing(void **state)
{
    (void)state;
    const int64_t S = 400 + 199 * 160;
    float *x = alloc_f(S);
    ntp__synth_audio(x, S, 16000, 5);
    mfcc_cfg cfg = {16000, 400, 160, 512, 26, 26, 9};
    mfcc_case mc;
    float *out = alloc_f(200 * 494);
    mfcc_case_init(&mc, &cfg, x, 1, S, out);
    assert_int_equal(mc.T, 200);
    size_t ws = ntp__mfcc_workspace(&mc.k);
    void *buf = malloc(ws);
    assert_non_null(buf);
    mc.k.workspace = buf;
    mc.k.workspace_bytes = ws;
    ntp_ctx *ctx = ntp_ctx_init();
    assert_int_equal(ntp__mfcc_run(ctx, &mc.k), NTP_STATUS_OK);
    const int reps = 20;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int r = 0; r < reps; r++)
        assert_int_equal(ntp__mfcc_run(ctx, &mc.k), NTP_STATUS_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms =
        ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) / reps;
    printf("mfcc 200 frames, batch 1, context 9: %.3f ms per run, %zu bytes workspace\n", ms, ws);
    ntp_ctx_free(ctx);
    free(buf);
    free(x);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_a),     cmocka_unit_test(test_reference_b_batch),
        cmocka_unit_test(test_context_windows), cmocka_unit_test(test_deepspeech_shape),
        cmocka_unit_test(test_workspace),       cmocka_unit_test(test_errors),
        cmocka_unit_test(test_threads),         cmocka_unit_test(test_timing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
