/* The ctc_decode inlay: greedy and prefix beam search decoding.
 *
 * Expected values come from hand calculation (the worked examples below,
 * with the arithmetic in comments) and from two independent computations in
 * this file: brute-force enumeration of every alignment path, and the CTC
 * forward algorithm for the probability of one label sequence. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core/rng-impl.h"
#include "graph/gen-impl.h"
#include "inlay/inlay-impl.h"

/* --- helpers ------------------------------------------------------------------ */

static ntp_graph test_graph = {.source = "test_ctc"};

/* A ctc_decode node and kargs over logits [T, N, C] and labels [N, T]. */
typedef struct ctc_case {
    ntp_node node;
    ntp_kargs k;
} ctc_case;

static void ctc_case_init(ctc_case *c, const float *logits, int64_t T, int64_t N, int64_t C,
                          int32_t *out, int mode, int64_t width, const char *alphabet)
{
    memset(c, 0, sizeof *c);
    c->node.name = "decoder";
    c->node.op = NTP_OP_CTC_DECODE;
    ntp__attrs_default(&c->node.a);
    c->node.a.decode = mode;
    c->node.a.beam_width = width;
    c->node.a.alphabet = (char *)alphabet;
    c->k.g = &test_graph;
    c->k.node = &c->node;
    c->k.n_in = 1;
    c->k.in[0] = (ntp_buf){(void *)logits, {3, {T, N, C}}, NTP_DTYPE_F32};
    c->k.n_out = 1;
    c->k.out[0] = (ntp_buf){out, {2, {N, T}}, NTP_DTYPE_I32};
}

/* Logits from probabilities: log p, which log-softmax maps back to p. */
static void logits_from_probs(float *x, const double *p, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)log(p[i]);
}

static void assert_labels(const int32_t *got, const int32_t *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (got[i] != want[i])
            print_error("label %lld: got %d, expected %d\n", (long long)i, got[i], want[i]);
        assert_int_equal(got[i], want[i]);
    }
}

/* Beam search of one sequence with its own scratch. */
static void beam(const float *x, int64_t T, int64_t C, int64_t W, int32_t *out,
                 ntp_ctc_beam_stats *st)
{
    size_t bytes = ntp__ctc_beam_ws_bytes(T, C, W);
    assert_true(bytes != SIZE_MAX);
    void *ws = malloc(bytes);
    assert_non_null(ws);
    ntp__ctc_beam_decode(x, T, C, C, W, ws, out, st);
    free(ws);
}

static double log_add(double a, double b)
{
    if (a == -INFINITY)
        return b;
    if (b == -INFINITY)
        return a;
    double m = a > b ? a : b;
    return m + log(exp(a - m) + exp(b - m));
}

/* log P(labels | x) by the CTC forward algorithm (Graves et al. 2006) over
 * the blank-extended sequence; x holds log probabilities [T][C]. */
static double ctc_forward(const double *lp, int64_t T, int64_t C, const int32_t *labels, int64_t L)
{
    const int64_t S = 2 * L + 1, blank = C - 1;
    double *a = malloc(sizeof(double) * (size_t)S), *b = malloc(sizeof(double) * (size_t)S);
    assert_true(a && b);
    for (int64_t s = 0; s < S; s++)
        a[s] = -INFINITY;
    a[0] = lp[blank];
    if (S > 1)
        a[1] = lp[labels[0]];
    for (int64_t t = 1; t < T; t++) {
        for (int64_t s = 0; s < S; s++) {
            int64_t cls = s % 2 == 0 ? blank : labels[s / 2];
            double v = a[s];
            if (s >= 1)
                v = log_add(v, a[s - 1]);
            if (s >= 2 && s % 2 == 1 && labels[s / 2] != labels[s / 2 - 1])
                v = log_add(v, a[s - 2]);
            b[s] = v + lp[t * C + cls];
        }
        memcpy(a, b, sizeof(double) * (size_t)S);
    }
    double r = S > 1 ? log_add(a[S - 1], a[S - 2]) : a[0];
    free(a);
    free(b);
    return r;
}

static void log_softmax_all(const float *x, int64_t T, int64_t C, double *lp)
{
    for (int64_t t = 0; t < T; t++) {
        double m = x[t * C], s = 0.0;
        for (int64_t c = 1; c < C; c++)
            m = fmax(m, x[t * C + c]);
        for (int64_t c = 0; c < C; c++)
            s += exp(x[t * C + c] - m);
        for (int64_t c = 0; c < C; c++)
            lp[t * C + c] = x[t * C + c] - m - log(s);
    }
}

static int64_t label_len(const int32_t *out, int64_t T)
{
    int64_t n = 0;
    while (n < T && out[n] >= 0)
        n++;
    return n;
}

/* --- worked examples ------------------------------------------------------------ */

/* Alphabet "ab": a = 0, b = 1, blank = 2. Per-frame probabilities
 *   t0: a .7  b .2  _ .1   -> a
 *   t1: a .6  b .1  _ .3   -> a
 *   t2: a .2  b .1  _ .7   -> _
 *   t3: a .5  b .3  _ .2   -> a
 *   t4: a .1  b .8  _ .1   -> b
 * Best path a a _ a b; merging repeats gives a _ a b, dropping blanks "aab":
 * the blank at t2 keeps the two a's apart. */
static void test_greedy_five_frames(void **state)
{
    (void)state;
    const double p[5][3] = {
        {.7, .2, .1}, {.6, .1, .3}, {.2, .1, .7}, {.5, .3, .2}, {.1, .8, .1},
    };
    float x[15];
    logits_from_probs(x, &p[0][0], 15);
    int32_t out[5];
    const int32_t want[5] = {0, 0, 1, -1, -1};
    ntp__ctc_greedy_decode(x, 5, 3, 3, out);
    assert_labels(out, want, 5);

    /* The same through the inlay, with logits shifted by a constant per
     * frame (softmax must not care). */
    for (int t = 0; t < 5; t++)
        for (int c = 0; c < 3; c++)
            x[t * 3 + c] += 3.0f * (float)t - 4.0f;
    ctc_case cc;
    int32_t out2[5];
    ctc_case_init(&cc, x, 5, 1, 3, out2, NTP_CTC_GREEDY, 16, "ab");
    ntp_ctx *ctx = ntp_ctx_init();
    assert_int_equal(ntp__ctc_run(ctx, &cc.k), NTP_STATUS_OK);
    assert_labels(out2, want, 5);
    ntp_ctx_free(ctx);
}

/* The classic case where the best path is not the best labelling. Classes
 * {a, blank}, T = 2, both frames p(a) = 0.4, p(blank) = 0.6.
 *   Greedy: best path (blank, blank), probability 0.6·0.6 = 0.36 -> "".
 *   P("")  = 0.36 (only blank blank).
 *   P("a") = P(a a) + P(a _) + P(_ a) = 0.16 + 0.24 + 0.24 = 0.64.
 * So beam search (width >= 2) must answer "a" with log 0.64, runner-up ""
 * with log 0.36. With width 1 the beam keeps only "" after frame 0
 * (0.6 > 0.4) and after frame 1 ("" 0.36 beats "a" 0.6·0.4 = 0.24), which
 * is the greedy answer. */
static void test_beam_beats_greedy(void **state)
{
    (void)state;
    const double p[2][2] = {{.4, .6}, {.4, .6}};
    float x[4];
    logits_from_probs(x, &p[0][0], 4);
    int32_t g[2], b[2], b1[2];
    ntp__ctc_greedy_decode(x, 2, 2, 2, g);
    const int32_t empty[2] = {-1, -1}, a[2] = {0, -1};
    assert_labels(g, empty, 2);

    ntp_ctc_beam_stats st;
    beam(x, 2, 2, 2, b, &st);
    assert_labels(b, a, 2);
    assert_int_equal(st.survivors, 2);
    assert_int_equal(st.best_len, 1);
    assert_float_equal(st.best_logp, log(0.64), 1e-6);
    assert_float_equal(st.second_logp, log(0.36), 1e-6);

    beam(x, 2, 2, 1, b1, &st);
    assert_labels(b1, g, 2);
    assert_int_equal(st.survivors, 1);
    assert_float_equal(st.best_logp, log(0.36), 1e-6);
}

/* Alphabet "a" (a = 0, blank = 1), p(dominant) = 0.9 per frame.
 * Frames a _ a: "aa" needs the blank between; only the path a _ a gives it,
 *   P("aa") = 0.9·0.9·0.9 = 0.729.
 *   P("a") = a a a .081 + a a _ .009 + a _ _ .081 + _ a a .009 + _ _ a .081
 *          + _ a _ .001 = 0.262;  P("") = _ _ _ = 0.1·0.9·0.1 = 0.009.
 *   (0.729 + 0.262 + 0.009 = 1.)
 * Frames a a a: repeats merge, "a" has every path but _ _ _ (.001) and
 *   a _ a (.9·.1·.9 = .081): P("a") = 0.918. */
static void test_repeated_labels(void **state)
{
    (void)state;
    const double p1[3][2] = {{.9, .1}, {.1, .9}, {.9, .1}};
    const double p2[3][2] = {{.9, .1}, {.9, .1}, {.9, .1}};
    float x1[6], x2[6];
    logits_from_probs(x1, &p1[0][0], 6);
    logits_from_probs(x2, &p2[0][0], 6);
    const int32_t aa[3] = {0, 0, -1}, a[3] = {0, -1, -1};
    int32_t out[3];
    ntp_ctc_beam_stats st;

    ntp__ctc_greedy_decode(x1, 3, 2, 2, out);
    assert_labels(out, aa, 3);
    beam(x1, 3, 2, 8, out, &st);
    assert_labels(out, aa, 3);
    assert_float_equal(st.best_logp, log(0.729), 1e-6);
    assert_float_equal(st.second_logp, log(0.262), 1e-6);

    ntp__ctc_greedy_decode(x2, 3, 2, 2, out);
    assert_labels(out, a, 3);
    beam(x2, 3, 2, 8, out, &st);
    assert_labels(out, a, 3);
    assert_float_equal(st.best_logp, log(0.918), 1e-6);
}

/* On the five-frame example width 1 and greedy agree (every frame is
 * peaked enough that the best path's prefix stays ahead). */
static void test_width_one_is_greedy(void **state)
{
    (void)state;
    const double p[5][3] = {
        {.7, .2, .1}, {.6, .1, .3}, {.2, .1, .7}, {.5, .3, .2}, {.1, .8, .1},
    };
    float x[15];
    logits_from_probs(x, &p[0][0], 15);
    int32_t g[5], b[5];
    ntp__ctc_greedy_decode(x, 5, 3, 3, g);
    beam(x, 5, 3, 1, b, NULL);
    assert_labels(b, g, 5);
}

/* --- exactness against brute force ----------------------------------------------- */

/* With a beam wider than the number of possible prefixes, prefix beam
 * search is exact: its best prefix and probability must equal the maximum
 * over all labellings, found here by summing every one of the C^T paths. */
#define BF_T 6
#define BF_C 3
static void test_beam_exact_small(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        float x[BF_T * BF_C];
        uint64_t s = seed;
        for (int i = 0; i < BF_T * BF_C; i++)
            x[i] = 1.5f * ntp__rng_normal(&s);
        double lp[BF_T * BF_C];
        log_softmax_all(x, BF_T, BF_C, lp);

        /* Labellings of length <= 6 over 2 labels: key = 1 followed by the
         * labels in binary, at most 2^7 keys. */
        double prob[1 << (BF_T + 1)];
        for (int i = 0; i < (1 << (BF_T + 1)); i++)
            prob[i] = 0.0;
        int paths = 1;
        for (int t = 0; t < BF_T; t++)
            paths *= BF_C;
        for (int pth = 0; pth < paths; pth++) {
            int v = pth, prev = BF_C - 1, key = 1;
            double lpp = 0.0;
            for (int t = 0; t < BF_T; t++) {
                int c = v % BF_C;
                v /= BF_C;
                lpp += lp[t * BF_C + c];
                if (c != BF_C - 1 && c != prev)
                    key = key * 2 + c;
                prev = c;
            }
            prob[key] += exp(lpp);
        }
        int best = 1, second = -1;
        for (int i = 2; i < (1 << (BF_T + 1)); i++)
            if (prob[i] > prob[best])
                best = i;
        for (int i = 1; i < (1 << (BF_T + 1)); i++)
            if (i != best && (second < 0 || prob[i] > prob[second]))
                second = i;
        int32_t want[BF_T], n = 0;
        for (int kk = best; kk > 1; kk /= 2)
            n++;
        for (int i = 0, kk = best; i < n; i++, kk /= 2)
            want[n - 1 - i] = kk % 2;
        for (int i = n; i < BF_T; i++)
            want[i] = -1;

        int32_t out[BF_T];
        ntp_ctc_beam_stats st;
        beam(x, BF_T, BF_C, 1 << (BF_T + 1), out, &st);
        assert_labels(out, want, BF_T);
        assert_float_equal(st.best_logp, log(prob[best]), 1e-5);
        assert_float_equal(st.second_logp, log(prob[second]), 1e-5);
        /* The forward algorithm agrees with the enumeration. */
        assert_float_equal(ctc_forward(lp, BF_T, BF_C, want, n), log(prob[best]), 1e-9);
    }
}

/* A second, deliberately plain prefix beam search: prefixes as explicit
 * label arrays, merged by comparing arrays, the beam cut by sorting. It
 * shares nothing with the trie-based implementation, so with pruning at
 * small widths (where the result depends on exactly which prefixes survive
 * and how re-appearing prefixes are merged) the two must still agree. */
#define RB_T 12
#define RB_C 4
#define RB_MAXW 8
typedef struct ref_pfx {
    int len;
    int32_t lab[RB_T];
    double pb, pnb;
} ref_pfx;

static void ref_add(ref_pfx *set, int *n, const int32_t *lab, int len, double pb, double pnb)
{
    for (int i = 0; i < *n; i++)
        if (set[i].len == len && memcmp(set[i].lab, lab, sizeof(int32_t) * (size_t)len) == 0) {
            set[i].pb = log_add(set[i].pb, pb);
            set[i].pnb = log_add(set[i].pnb, pnb);
            return;
        }
    set[*n].len = len;
    memcpy(set[*n].lab, lab, sizeof(int32_t) * (size_t)len);
    set[*n].pb = pb;
    set[*n].pnb = pnb;
    (*n)++;
}

static int ref_order(const void *pa, const void *pb)
{
    const ref_pfx *a = pa, *b = pb;
    double ta = log_add(a->pb, a->pnb), tb = log_add(b->pb, b->pnb);
    return ta < tb ? 1 : ta > tb ? -1 : 0;
}

static void test_beam_matches_reference(void **state)
{
    (void)state;
    static ref_pfx cur[RB_MAXW * RB_C * 2], next[RB_MAXW * RB_C * 2];
    const int blank = RB_C - 1;
    for (int W = 2; W <= RB_MAXW; W *= 2) {
        for (uint64_t seed = 1; seed <= 50; seed++) {
            float x[RB_T * RB_C];
            double lp[RB_T * RB_C];
            uint64_t s = seed * 7919;
            for (int i = 0; i < RB_T * RB_C; i++)
                x[i] = 2.0f * ntp__rng_normal(&s);
            log_softmax_all(x, RB_T, RB_C, lp);

            int n = 1;
            cur[0].len = 0;
            cur[0].pb = 0.0;
            cur[0].pnb = -INFINITY;
            for (int t = 0; t < RB_T; t++) {
                const double *l = lp + t * RB_C;
                int m = 0;
                for (int i = 0; i < n; i++) {
                    const ref_pfx *p = &cur[i];
                    double tot = log_add(p->pb, p->pnb);
                    int last = p->len ? p->lab[p->len - 1] : -1;
                    ref_add(next, &m, p->lab, p->len, tot + l[blank], -INFINITY);
                    if (last >= 0)
                        ref_add(next, &m, p->lab, p->len, -INFINITY, p->pnb + l[last]);
                    for (int c = 0; c < blank; c++) {
                        int32_t ext[RB_T];
                        memcpy(ext, p->lab, sizeof(int32_t) * (size_t)p->len);
                        ext[p->len] = c;
                        ref_add(next, &m, ext, p->len + 1, -INFINITY,
                                (c == last ? p->pb : tot) + l[c]);
                    }
                }
                qsort(next, (size_t)m, sizeof(ref_pfx), ref_order);
                n = m < W ? m : W;
                memcpy(cur, next, sizeof(ref_pfx) * (size_t)n);
            }
            int32_t want[RB_T], out[RB_T];
            for (int i = 0; i < RB_T; i++)
                want[i] = i < cur[0].len ? cur[0].lab[i] : -1;
            ntp_ctc_beam_stats st;
            beam(x, RB_T, RB_C, W, out, &st);
            assert_labels(out, want, RB_T);
            assert_int_equal(st.survivors, n);
            assert_float_equal(st.best_logp, log_add(cur[0].pb, cur[0].pnb), 1e-5);
            assert_float_equal(st.second_logp, log_add(cur[1].pb, cur[1].pnb), 1e-5);
        }
    }
}

/* On realistic logits the beam's answer is at least as likely as the best
 * path's labelling (by the forward algorithm), and the probability the beam
 * reports for its prefix is the forward probability less the mass of paths
 * it pruned (so never above it). */
static void test_beam_vs_forward(void **state)
{
    (void)state;
    const int64_t T = 200, C = 29;
    float *x = malloc(sizeof(float) * (size_t)(T * C));
    double *lp = malloc(sizeof(double) * (size_t)(T * C));
    int32_t *g = malloc(sizeof(int32_t) * (size_t)T), *b = malloc(sizeof(int32_t) * (size_t)T);
    assert_true(x && lp && g && b);
    int differ = 0;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        ntp__synth_ctc_logits(x, T, 1, C, seed);
        log_softmax_all(x, T, C, lp);
        ntp__ctc_greedy_decode(x, T, C, C, g);
        ntp_ctc_beam_stats st;
        beam(x, T, C, 16, b, &st);
        double pg = ctc_forward(lp, T, C, g, label_len(g, T));
        double pb = ctc_forward(lp, T, C, b, label_len(b, T));
        if (!(pb >= pg - 1e-9))
            print_error("seed %llu: beam log p %.9f < greedy %.9f\n", (unsigned long long)seed, pb,
                        pg);
        assert_true(pb >= pg - 1e-9);
        /* The beam loses the mass of paths that went through prefixes it
         * pruned: 0.05-0.5 nats on these sequences at width 16 (each frame
         * offers one to three competitors, so the alternatives outnumber
         * any beam), shrinking as the width grows. It never gains mass. */
        assert_true(st.best_logp <= pb + 1e-6);
        assert_float_equal(st.best_logp, pb, 1.0);
        differ += memcmp(g, b, sizeof(int32_t) * (size_t)T) != 0;
    }
    /* The synthetic logits hold near-ties on purpose; over 8 sequences
     * the beam should change the answer at least once. */
    assert_true(differ >= 1);
    free(x);
    free(lp);
    free(g);
    free(b);
}

/* --- the inlay ------------------------------------------------------------------- */

/* Batch of two, time-major logits [T=3][N=2][C=3] (alphabet "ab"):
 *   sequence 0: a _ b -> "ab";  sequence 1: b b b -> "b". */
static void test_inlay_batch(void **state)
{
    (void)state;
    const double p[3][2][3] = {
        {{.8, .1, .1}, {.1, .8, .1}},
        {{.1, .1, .8}, {.1, .8, .1}},
        {{.1, .8, .1}, {.1, .8, .1}},
    };
    float x[18];
    logits_from_probs(x, &p[0][0][0], 18);
    const int32_t want[2][3] = {{0, 1, -1}, {1, -1, -1}};
    ntp_ctx *ctx = ntp_ctx_init();
    for (int mode = 0; mode < 2; mode++) {
        int32_t out[2][3];
        memset(out, 0x55, sizeof out);
        ctc_case cc;
        ctc_case_init(&cc, x, 3, 2, 3, &out[0][0], mode == 0 ? NTP_CTC_GREEDY : NTP_CTC_BEAM, 4,
                      "ab");
        size_t ws = ntp__ctc_workspace(&cc.k);
        if (mode == 0) {
            assert_int_equal(ws, 0);
        } else {
            assert_true(ws > 0);
            /* A caller's workspace, deliberately misaligned. */
            char *buf = malloc(ws + 3);
            assert_non_null(buf);
            cc.k.workspace = buf + 3;
            cc.k.workspace_bytes = ws;
            assert_int_equal(ntp__ctc_run(ctx, &cc.k), NTP_STATUS_OK);
            assert_labels(&out[0][0], &want[0][0], 6);
            free(buf);
            memset(out, 0x55, sizeof out);
            cc.k.workspace = NULL;
            cc.k.workspace_bytes = 0;
        }
        assert_int_equal(ntp__ctc_run(ctx, &cc.k), NTP_STATUS_OK);
        assert_labels(&out[0][0], &want[0][0], 6);
    }
    ntp_ctx_free(ctx);
}

static void test_inlay_errors(void **state)
{
    (void)state;
    float x[18] = {0};
    int32_t out[6];
    ntp_ctx *ctx = ntp_ctx_init();
    ctc_case cc;

    ctc_case_init(&cc, x, 3, 2, 3, out, NTP_CTC_BEAM, 4, "abc");
    assert_int_equal(ntp__ctc_run(ctx, &cc.k), NTP_STATUS_SHAPE_ERROR);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "<ctc_decode name='decoder'>"));
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "alphabet"));

    ctc_case_init(&cc, x, 3, 2, 3, out, NTP_CTC_BEAM, 0, "ab");
    assert_int_equal(ntp__ctc_run(ctx, &cc.k), NTP_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ntp__ctc_workspace(&cc.k), 0);

    /* Workspace queries come before buffers are bound; runs need them. */
    ctc_case_init(&cc, NULL, 3, 2, 3, NULL, NTP_CTC_BEAM, 4, "ab");
    assert_int_equal(ntp__ctc_workspace(&cc.k), ntp__ctc_beam_ws_bytes(3, 3, 4));
    assert_int_equal(ntp__ctc_run(ctx, &cc.k), NTP_STATUS_INVALID_ARGUMENT);

    ctc_case_init(&cc, x, 3, 2, 3, out, NTP_CTC_BEAM, 4, "ab");
    cc.k.out[0].dtype = NTP_DTYPE_F32;
    assert_int_equal(ntp__ctc_run(ctx, &cc.k), NTP_STATUS_UNSUPPORTED);

    ctc_case_init(&cc, x, 3, 2, 3, out, NTP_CTC_BEAM, 4, "ab");
    cc.k.out[0].shape = (ntp_shape){2, {3, 2}};
    assert_int_equal(ntp__ctc_run(ctx, &cc.k), NTP_STATUS_SHAPE_ERROR);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "[2, 3]"));
    ntp_ctx_free(ctx);
}

/* DeepSpeech-sized decoding: width 16, T = 200, 29 classes. Printed, not
 * gated (benchmarks never gate CI on absolute time). */
static void test_beam_timing(void **state)
{
    (void)state;
    const int64_t T = 200, C = 29, W = 16;
    float *x = malloc(sizeof(float) * (size_t)(T * C));
    int32_t *out = malloc(sizeof(int32_t) * (size_t)T);
    size_t bytes = ntp__ctc_beam_ws_bytes(T, C, W);
    void *ws = malloc(bytes);
    assert_true(x && out && ws);
    ntp__synth_ctc_logits(x, T, 1, C, 3);
    const int reps = 20;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int r = 0; r < reps; r++)
        ntp__ctc_beam_decode(x, T, C, C, W, ws, out, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms =
        ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) / reps;
    printf("beam search T=%lld C=%lld width=%lld: %.3f ms per sequence, %zu bytes scratch\n",
           (long long)T, (long long)C, (long long)W, ms, bytes);
    assert_true(label_len(out, T) > 0);
    free(x);
    free(out);
    free(ws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_five_frames), cmocka_unit_test(test_beam_beats_greedy),
        cmocka_unit_test(test_repeated_labels),    cmocka_unit_test(test_width_one_is_greedy),
        cmocka_unit_test(test_beam_exact_small),   cmocka_unit_test(test_beam_matches_reference),
        cmocka_unit_test(test_beam_vs_forward),    cmocka_unit_test(test_inlay_batch),
        cmocka_unit_test(test_inlay_errors),       cmocka_unit_test(test_beam_timing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
