/* ntp_generate through the library: the roofline arithmetic of each phase
 * against given ceilings (predicted tokens/s = tokens / max(FLOPs / peak,
 * bytes / bandwidth), the shares of a measured run = achieved / ceiling),
 * static analysis against a run of the same shape, and the greedy tokens
 * being the same for the same seed. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ntprof/ntprof.h"
#include "support/npy.h"

#define TINY NTP_SOURCE_DIR "/models/tiny-decoder.xml"
#define LLAMA NTP_SOURCE_DIR "/tests/data/tiny-llama.xml"

static ntp_ceilings fake_ceilings(void)
{
    ntp_ceilings c;
    memset(&c, 0, sizeof c);
    c.n_peaks = 1;
    strcpy(c.peaks[0].precision, "f32");
    c.peaks[0].gflops = 100.0;
    c.n_levels = 2;
    strcpy(c.levels[0].level, "L1");
    c.levels[0].gbps = 1000.0;
    strcpy(c.levels[1].level, "DRAM");
    c.levels[1].gbps = 10.0;
    return c;
}

static void check_phase(const ntp_generate_phase *p, int64_t tokens, bool measured)
{
    double tc = (double)p->flops / 100e9, tm = (double)p->bytes / 10e9;
    double want = (double)tokens / (tc > tm ? tc : tm);
    assert_true(fabs(p->predicted_tokens_per_s - want) <= 1e-9 * want);
    assert_string_equal(p->bound, tc > tm ? "compute" : "memory");
    if (measured) {
        assert_true(fabs(p->compute_share - p->gflops / 100.0) < 1e-12);
        assert_true(fabs(p->bandwidth_share - p->gbps / 10.0) < 1e-12);
        assert_true(fabs(p->gflops - (double)p->flops / (p->ms / 1e3) / 1e9) <= 1e-9 * p->gflops);
    } else {
        assert_true(p->compute_share < 0 && p->bandwidth_share < 0);
    }
}

static void test_roofline(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_ceilings c = fake_ceilings();
    ntp_generate_opts o;
    ntp_generate_opts_default(&o);
    o.backend = "ref";
    o.prompt_len = 6;
    o.gen_len = 4;
    o.ceilings = &c;
    ntp_generate_result *run = NULL, *stat = NULL, *again = NULL;
    assert_int_equal(ntp_generate(ctx, TINY, &o, &run), NTP_STATUS_OK);
    check_phase(ntp_generate_result_prefill(run), 6, true);
    check_phase(ntp_generate_result_decode(run), 1, true);
    assert_null(ntp_generate_result_roofline_note(run));
    o.static_only = true;
    assert_int_equal(ntp_generate(ctx, TINY, &o, &stat), NTP_STATUS_OK);
    check_phase(ntp_generate_result_prefill(stat), 6, false);
    check_phase(ntp_generate_result_decode(stat), 1, false);
    /* The static split is the run's, FLOP for FLOP and byte for byte. */
    assert_int_equal(ntp_generate_result_prefill(stat)->flops,
                     ntp_generate_result_prefill(run)->flops);
    assert_int_equal(ntp_generate_result_decode(stat)->bytes,
                     ntp_generate_result_decode(run)->bytes);
    assert_int_equal(ntp_generate_result_kv_bytes_per_token(stat), 2 * 2 * 4 * 8 * 4);
    /* Decode is one token against the weights: far lower intensity. */
    assert_true(ntp_generate_result_decode(run)->intensity <
                ntp_generate_result_prefill(run)->intensity / 2);
    /* Greedy decoding is deterministic for a seed. */
    o.static_only = false;
    assert_int_equal(ntp_generate(ctx, TINY, &o, &again), NTP_STATUS_OK);
    assert_memory_equal(ntp_generate_result_tokens(run), ntp_generate_result_tokens(again),
                        5 * sizeof *ntp_generate_result_tokens(run));
    /* The accessors: what was asked, the documented sum, rows in range only. */
    assert_string_equal(ntp_generate_result_backend(run), "ref");
    assert_int_equal(ntp_generate_result_prompt_len(run), 6);
    assert_int_equal(ntp_generate_result_gen_len(run), 4);
    assert_true(ntp_generate_result_static_only(stat));
    assert_false(ntp_generate_result_static_only(run));
    assert_int_equal(ntp_generate_result_memory_bytes(run),
                     ntp_generate_result_weight_bytes(run) + ntp_generate_result_arena_bytes(run) +
                         ntp_generate_result_kv_bytes_total(run));
    assert_int_equal(ntp_generate_result_arena_bytes(stat), 0);
    const double *steps = ntp_generate_result_step_ms(run);
    for (int i = 0; i < 4; i++)
        assert_true(steps[i] > 0);
    int n = ntp_generate_result_layer_count(run);
    assert_true(n > 0);
    assert_non_null(ntp_generate_result_layer(run, n - 1));
    assert_null(ntp_generate_result_layer(run, n));
    assert_null(ntp_generate_result_layer(run, -1));
    assert_int_equal(ntp_generate_result_layer_count(NULL), 0);
    assert_null(ntp_generate_result_prefill(NULL));
    assert_null(ntp_generate_result_tokens(NULL));
    ntp_generate_result_free(run);
    ntp_generate_result_free(stat);
    ntp_generate_result_free(again);
    ntp_ctx_free(ctx);
}

static void test_refused_before_allocating(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_generate_opts o;
    ntp_generate_opts_default(&o);
    o.backend = "ref";
    o.prompt_len = 8;
    o.gen_len = 8;
    o.context_depth = 40;
    /* The topology itself fits (weights 118,272 B and a 10,368 B arena);
     * with the cache's 56 positions x 512 B = 28,672 B it does not. */
    o.max_memory = 140000;
    ntp_generate_result *r = NULL;
    assert_int_equal(ntp_generate(ctx, TINY, &o, &r), NTP_STATUS_MEMORY_BUDGET);
    assert_null(r);
    assert_non_null(
        strstr(ntp_ctx_errmsg(ctx), "28672 bytes (512 bytes per token x 56 positions x batch 1)"));
    ntp_ctx_free(ctx);
}

/* The prefill and decode plans hold one copy of the weights: the engine's
 * weight bytes are the parameter count (published in docs/decoders.md and
 * asserted in test_models) x 4 bytes of f32, not twice that. */
static void test_weights_once(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    const struct {
        const char *path;
        int64_t params;
    } m[] = {{TINY, 29568}, {LLAMA, 21664}};
    for (int i = 0; i < 2; i++) {
        ntp_generate_opts o;
        ntp_generate_opts_default(&o);
        o.backend = "ref";
        o.prompt_len = 4;
        o.gen_len = 2;
        ntp_generate_result *r = NULL, *st = NULL;
        assert_int_equal(ntp_generate(ctx, m[i].path, &o, &r), NTP_STATUS_OK);
        assert_int_equal(ntp_generate_result_params(r), m[i].params);
        assert_int_equal(ntp_generate_result_weight_bytes(r), m[i].params * 4);
        assert_true(ntp_generate_result_arena_bytes(r) > 0);
        assert_int_equal(ntp_generate_result_memory_bytes(r),
                         ntp_generate_result_weight_bytes(r) + ntp_generate_result_arena_bytes(r) +
                             ntp_generate_result_kv_bytes_total(r));
        o.static_only = true;
        assert_int_equal(ntp_generate(ctx, m[i].path, &o, &st), NTP_STATUS_OK);
        assert_int_equal(ntp_generate_result_weight_bytes(st), m[i].params * 4);
        ntp_generate_result_free(r);
        ntp_generate_result_free(st);
    }
    ntp_ctx_free(ctx);
}

static void rm_dir(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* The i8 cache: its bytes per token exactly 2 x layers x kv_heads x
 * (head_dim + 4) (a row of int8 values and its f32 scale), and its logits
 * near the f32 cache's. Each cached row x is kept as round(x / s) · s with
 * s = max|x| / 127, so no element moves by more than max|x| / 254 (0.39% of
 * its row's largest). Attention's output is a convex combination of value
 * rows (moved by at most that) under weights whose logits move by
 * q · Δk (the same relative order); over the two layers, with residuals and
 * normalisations between, the logits' relative error stays within a few
 * times 1/254: the bound is 4/254 = 1.6e-2. It must also be above 0 (the
 * cache really is quantised) and above the bf16 cache's (8 bits of mantissa
 * against 7 bits + sign of a shared scale). */
static void test_i8_cache(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    char dirs[3][64];
    const ntp_dtype types[3] = {NTP_DTYPE_F32, NTP_DTYPE_I8, NTP_DTYPE_BF16};
    ntp_generate_result *r[3] = {NULL};
    for (int i = 0; i < 3; i++) {
        snprintf(dirs[i], sizeof dirs[i], "/tmp/ntp-kv-i8-XXXXXX");
        assert_non_null(mkdtemp(dirs[i]));
        ntp_generate_opts o;
        ntp_generate_opts_default(&o);
        o.backend = "ref";
        o.prompt_len = 12;
        o.gen_len = 4;
        o.context_depth = 5;
        o.batch = 2;
        o.kv_dtype = types[i];
        o.save_dir = dirs[i];
        assert_int_equal(ntp_generate(ctx, LLAMA, &o, &r[i]), NTP_STATUS_OK);
    }
    /* tiny-llama: 2 layers, 2 kv heads of 8. */
    assert_int_equal(ntp_generate_result_kv_bytes_per_token(r[1]), 2 * 2 * 2 * (8 + 4));
    assert_int_equal(ntp_generate_result_kv_bytes_total(r[1]), 96 * 2 * (5 + 12 + 4));
    assert_int_equal(ntp_generate_result_kv_bytes_per_token(r[0]), 2 * 2 * 2 * 8 * 4);
    /* Decode's cache traffic at i8: bytes per token x (past + 2) per step. */
    assert_true(ntp_generate_result_decode(r[1])->bytes < ntp_generate_result_decode(r[0])->bytes);
    double e8 = test_npy_rel_err(dirs[1], dirs[0], "logits_prefill");
    double e16 = test_npy_rel_err(dirs[2], dirs[0], "logits_prefill");
    print_message("logits rel error vs f32 cache: i8 %.3g, bf16 %.3g\n", e8, e16);
    assert_true(e8 > 0 && e8 < 4.0 / 254.0);
    assert_true(e8 > e16);
    /* Decode steps, while the greedy tokens agree (each step feeds the
     * token the one before chose). */
    for (int64_t i = 0; i < 4; i++) {
        bool same = true;
        for (int b = 0; b < 2; b++)
            same = same && ntp_generate_result_tokens(r[0])[b * 5 + i] ==
                               ntp_generate_result_tokens(r[1])[b * 5 + i];
        if (!same)
            break;
        char name[64];
        snprintf(name, sizeof name, "logits_decode_%lld", (long long)i);
        double e = test_npy_rel_err(dirs[1], dirs[0], name);
        assert_true(e > 0 && e < 4.0 / 254.0);
    }
    for (int i = 0; i < 3; i++) {
        rm_dir(dirs[i]);
        ntp_generate_result_free(r[i]);
    }
    ntp_ctx_free(ctx);
}

/* A static sweep over context and cache type (tiny-decoder: 2 layers, 4
 * heads of 8, multi-head), and one over kv_heads (tiny-llama). Decode's
 * step at context D + P + (G-1)/2: each extra cached position adds one
 * (query, key) pair per head, 2 x 2 x hd FLOPs for QK and PV and 5 for the
 * softmax, and its bytes per token to the cache read. */
static void test_sweep_static(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_generate_opts o;
    ntp_generate_opts_default(&o);
    o.prompt_len = 6;
    o.gen_len = 5;
    o.static_only = true;
    const char *vary[] = {"context=0,16,40", "kv_dtype=f32,i8,bf16"};
    ntp_generate_sweep *s = NULL;
    assert_int_equal(ntp_generate_sweep_run(ctx, TINY, &o, vary, 2, &s), NTP_STATUS_OK);
    assert_int_equal(ntp_generate_sweep_point_count(s), 9);
    /* The axes as given, in order, and their range. */
    assert_string_equal(ntp_generate_sweep_model_path(s), TINY);
    assert_true(ntp_generate_sweep_static_only(s));
    assert_int_equal(ntp_generate_sweep_axis_count(s), 2);
    assert_string_equal(ntp_generate_sweep_axis(s, 0), "context");
    assert_string_equal(ntp_generate_sweep_axis(s, 1), "kv_dtype");
    assert_null(ntp_generate_sweep_axis(s, 2));
    assert_int_equal(ntp_generate_sweep_value_count(s, 0), 3);
    assert_int_equal(ntp_generate_sweep_value_count(s, 1), 3);
    assert_int_equal(ntp_generate_sweep_value_count(s, 2), 0);
    assert_string_equal(ntp_generate_sweep_value(s, 0, 2), "40");
    assert_string_equal(ntp_generate_sweep_value(s, 1, 1), "i8");
    assert_null(ntp_generate_sweep_value(s, 1, 3));
    assert_null(ntp_generate_sweep_value(s, 2, 0));
    assert_null(ntp_generate_sweep_point(s, -1));
    assert_null(ntp_generate_sweep_point(s, 9));
    assert_string_equal(ntp_generate_sweep_point(s, 5)->value[1], "bf16");
    assert_null(ntp_generate_sweep_model_path(NULL));
    assert_int_equal(ntp_generate_sweep_axis_count(NULL), 0);
    assert_null(ntp_generate_sweep_axis(NULL, 0));
    assert_int_equal(ntp_generate_sweep_value_count(NULL, 0), 0);
    assert_null(ntp_generate_sweep_value(NULL, 0, 0));
    assert_int_equal(ntp_generate_sweep_point_count(NULL), 0);
    assert_null(ntp_generate_sweep_point(NULL, 0));
    assert_false(ntp_generate_sweep_static_only(NULL));
    const int64_t per[3] = {2 * 2 * 4 * 8 * 4, 2 * 2 * 4 * (8 + 4), 2 * 2 * 4 * 8 * 2};
    const int64_t ctxs[3] = {0, 16, 40};
    for (int c = 0; c < 3; c++)
        for (int k = 0; k < 3; k++) {
            const ntp_generate_result *r = ntp_generate_sweep_point(s, c * 3 + k)->r;
            assert_string_equal(ntp_generate_sweep_point(s, c * 3 + k)->value[0], c == 0   ? "0"
                                                                                  : c == 1 ? "16"
                                                                                           : "40");
            assert_int_equal(ntp_generate_result_context_depth(r), ctxs[c]);
            assert_int_equal(ntp_generate_result_kv_bytes_per_token(r), per[k]);
            assert_int_equal(ntp_generate_result_kv_bytes_total(r), per[k] * (ctxs[c] + 6 + 5));
            if (c > 0) {
                const ntp_generate_result *r0 = ntp_generate_sweep_point(s, k)->r;
                assert_int_equal(ntp_generate_result_decode(r)->flops -
                                     ntp_generate_result_decode(r0)->flops,
                                 2 * 4 * (4 * 8 + 5) * ctxs[c]);
                assert_int_equal(ntp_generate_result_decode(r)->bytes -
                                     ntp_generate_result_decode(r0)->bytes,
                                 per[k] * ctxs[c]);
                assert_int_equal(ntp_generate_result_prefill(r)->bytes -
                                     ntp_generate_result_prefill(r0)->bytes,
                                 per[k] * ctxs[c]);
            }
        }
    /* The HTML: one group per cache type, each with its KV and bytes
     * charts; no TPOT without ceilings. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(ntp_report_write_generate_sweep_html(ctx, s, f), NTP_STATUS_OK);
    fclose(f);
    int charts = 0;
    for (const char *p = buf; (p = strstr(p, "<svg class=\"chart\"")); p++)
        charts++;
    assert_int_equal(charts, 3 * 2);
    assert_non_null(strstr(buf, "No TPOT"));
    assert_non_null(strstr(buf, "kv_dtype = i8"));
    free(buf);
    ntp_generate_sweep_free(s);
    /* With ceilings: TPOT from the roofline, a chart more per group. */
    ntp_ceilings c = fake_ceilings();
    o.ceilings = &c;
    const char *vh[] = {"kv_heads=1,2,4", "context=0,30"};
    assert_int_equal(ntp_generate_sweep_run(ctx, LLAMA, &o, vh, 2, &s), NTP_STATUS_OK);
    for (int i = 0; i < 6; i++)
        assert_int_equal(ntp_generate_result_kv_bytes_per_token(ntp_generate_sweep_point(s, i)->r),
                         2 * 2 * (1 << (i / 2)) * 8 * 4);
    f = open_memstream(&buf, &len);
    assert_int_equal(ntp_report_write_generate_sweep_html(ctx, s, f), NTP_STATUS_OK);
    fclose(f);
    charts = 0;
    for (const char *p = buf; (p = strstr(p, "<svg class=\"chart\"")); p++)
        charts++;
    assert_int_equal(charts, 3 * 3);
    assert_null(strstr(buf, "No TPOT"));
    free(buf);
    ntp_generate_sweep_free(s);
    /* Refused before running: a malformed axis, a repeated one, a bad
     * cache type, a point beyond max_positions (64). */
    const char *bad1[] = {"context"}, *bad2[] = {"gen=1", "gen=2"}, *bad3[] = {"kv_dtype=i4"},
               *bad4[] = {"context=0,60"};
    assert_int_equal(ntp_generate_sweep_run(ctx, TINY, &o, bad1, 1, &s),
                     NTP_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ntp_generate_sweep_run(ctx, TINY, &o, bad2, 2, &s),
                     NTP_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "given twice"));
    assert_int_equal(ntp_generate_sweep_run(ctx, TINY, &o, bad3, 1, &s),
                     NTP_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ntp_generate_sweep_run(ctx, TINY, &o, bad4, 1, &s),
                     NTP_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "sweep point context=60"));
    assert_null(s);
    ntp_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roofline),     cmocka_unit_test(test_refused_before_allocating),
        cmocka_unit_test(test_weights_once), cmocka_unit_test(test_i8_cache),
        cmocka_unit_test(test_sweep_static),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
