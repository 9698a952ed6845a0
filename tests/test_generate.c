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
#include <string.h>

#include <cmocka.h>

#include "ntprof/ntprof.h"

#define TINY NTP_SOURCE_DIR "/models/tiny-decoder.xml"

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
    check_phase(&run->prefill, 6, true);
    check_phase(&run->decode, 1, true);
    assert_null(run->roofline_note);
    o.static_only = true;
    assert_int_equal(ntp_generate(ctx, TINY, &o, &stat), NTP_STATUS_OK);
    check_phase(&stat->prefill, 6, false);
    check_phase(&stat->decode, 1, false);
    /* The static split is the run's, FLOP for FLOP and byte for byte. */
    assert_int_equal(stat->prefill.flops, run->prefill.flops);
    assert_int_equal(stat->decode.bytes, run->decode.bytes);
    assert_int_equal(stat->kv_bytes_per_token, 2 * 2 * 4 * 8 * 4);
    /* Decode is one token against the weights: far lower intensity. */
    assert_true(run->decode.intensity < run->prefill.intensity / 2);
    /* Greedy decoding is deterministic for a seed. */
    o.static_only = false;
    assert_int_equal(ntp_generate(ctx, TINY, &o, &again), NTP_STATUS_OK);
    assert_memory_equal(run->tokens, again->tokens, 5 * sizeof *run->tokens);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roofline),
        cmocka_unit_test(test_refused_before_allocating),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
