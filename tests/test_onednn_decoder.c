/* kv_attention on the oneDNN backend (src/backend/onednn/kv-attention.c)
 * against the reference backend through ntp_generate: the same weights,
 * prompt and synthetic context (seed 1), logits of the prefill pass and of
 * every decode step saved as .npy and compared as max |a - b| / max |b|
 * within 1e-5. The reference kernel is itself checked against PyTorch
 * (test_decoder_torch, test_onnx_kv). Cases: grouped-query attention (4
 * query heads on 2 key/value heads) with a padding mask and left padding
 * (batch 2, the second sequence's first 2 prompt tokens masked) after a
 * synthetic context; multi-head GPT-2-style attention without a mask; an
 * i8 and a bf16 cache (both backends convert the same way); passes whose
 * context crosses the boundaries of oneDNN's context buckets (16, 32, ...,
 * the capacity: kv-attention.c builds its primitives per bucket). The
 * kv_attention and rmsnorm layers must be placed on oneDNN (the per-layer
 * backend). */
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

#include "backend/backend-impl.h"
#include "ntprof/ntprof.h"
#include "support/npy.h"

#define TINY NTP_SOURCE_DIR "/models/tiny-decoder.xml"
#define LLAMA NTP_SOURCE_DIR "/tests/data/tiny-llama.xml"
#define LLAMA_MASK NTP_SOURCE_DIR "/tests/data/tiny-llama-mask.xml"

static void rm_dir(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* Generate on ref and on oneDNN with the same options; the logits of the
 * prefill and of the G steps agree within 1e-5 and so do the tokens. */
static void compare(const char *model, int64_t batch, int64_t pad, int64_t context, int64_t P,
                    int64_t G, ntp_dtype kv)
{
    ntp_ctx *ctx = ntp_ctx_init();
    const char *backends[2] = {"ref", "onednn"};
    char dirs[2][64];
    ntp_generate_result *r[2] = {NULL};
    for (int i = 0; i < 2; i++) {
        snprintf(dirs[i], sizeof dirs[i], "/tmp/ntp-odnn-dec-XXXXXX");
        assert_non_null(mkdtemp(dirs[i]));
        ntp_generate_opts o;
        ntp_generate_opts_default(&o);
        o.backend = backends[i];
        o.threads = 2;
        o.batch = batch;
        o.pad = pad;
        o.context_depth = context;
        o.prompt_len = P;
        o.gen_len = G;
        o.kv_dtype = kv;
        o.save_dir = dirs[i];
        ntp_status st = ntp_generate(ctx, model, &o, &r[i]);
        if (st)
            print_message("%s: %s\n", backends[i], ntp_ctx_errmsg(ctx));
        assert_int_equal(st, NTP_STATUS_OK);
    }
    /* Every kv_attention and rmsnorm layer ran on oneDNN. */
    int attn = 0;
    for (int l = 0; l < r[1]->n_layers; l++) {
        bool attention = strcmp(r[1]->layers[l].type, "kv_attention") == 0;
        if (attention || strcmp(r[1]->layers[l].type, "rmsnorm") == 0)
            assert_string_equal(r[1]->layers[l].backend, "onednn");
        attn += attention;
    }
    assert_int_equal(attn, 2);
    double e = test_npy_rel_err(dirs[1], dirs[0], "logits_prefill");
    print_message("prefill logits: onednn vs ref %.3g\n", e);
    assert_true(e <= 1e-5);
    assert_memory_equal(r[0]->tokens, r[1]->tokens,
                        (size_t)(batch * (G + 1)) * sizeof *r[0]->tokens);
    for (int64_t i = 0; i < G; i++) {
        char name[64];
        snprintf(name, sizeof name, "logits_decode_%lld", (long long)i);
        e = test_npy_rel_err(dirs[1], dirs[0], name);
        print_message("decode step %lld logits: onednn vs ref %.3g\n", (long long)i, e);
        assert_true(e <= 1e-5);
    }
    for (int i = 0; i < 2; i++) {
        rm_dir(dirs[i]);
        ntp_generate_result_free(r[i]);
    }
    ntp_ctx_free(ctx);
}

static void test_gqa_padding_mask(void **state)
{
    (void)state;
    compare(LLAMA_MASK, 2, 2, 3, 7, 4, NTP_DTYPE_F32);
}

/* Left padding beyond the first query: padded tokens see no key at all
 * (their outputs are 0 on both backends). */
static void test_gqa_long_padding(void **state)
{
    (void)state;
    compare(LLAMA_MASK, 2, 5, 0, 6, 3, NTP_DTYPE_F32);
}

static void test_multi_head_no_mask(void **state)
{
    (void)state;
    compare(TINY, 1, 0, 4, 6, 4, NTP_DTYPE_F32);
}

/* Context buckets. Capacity 10 + 4 + 30 = 44: the prefill (S = 4, context
 * 14) runs bucket 16, the decode steps (contexts 15 .. 44) buckets 16, 32
 * and 44, crossing two boundaries. */
static void test_buckets_multi_head(void **state)
{
    (void)state;
    compare(TINY, 1, 0, 10, 4, 30, NTP_DTYPE_F32);
}

/* With a padding mask and grouped-query heads: capacity 12 + 3 + 6 = 21,
 * buckets 16 and 21; the prefill (context 15) and the first step (16) run
 * bucket 16, the next steps (17 .. 21) bucket 21. */
static void test_buckets_gqa_padding(void **state)
{
    (void)state;
    compare(LLAMA_MASK, 2, 2, 12, 3, 6, NTP_DTYPE_F32);
}

/* A cache widened into an f32 copy (i8, f16) across buckets: capacity
 * 10 + 4 + 10 = 24, buckets 16 and 24; the prefill (context 14) and the
 * steps at 15 and 16 run bucket 16, the steps at 17 .. 24 bucket 24. */
static void test_buckets_widened_cache(void **state)
{
    (void)state;
    compare(LLAMA, 2, 0, 10, 4, 10, NTP_DTYPE_I8);
    compare(LLAMA, 1, 0, 10, 4, 10, NTP_DTYPE_F16);
}

static void test_i8_and_bf16_cache(void **state)
{
    (void)state;
    compare(LLAMA, 2, 0, 5, 6, 3, NTP_DTYPE_I8);
    compare(LLAMA, 2, 0, 5, 6, 3, NTP_DTYPE_BF16);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!ntp__backend_find("onednn")) {
        printf("oneDNN backend not built: skipped\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gqa_padding_mask),    cmocka_unit_test(test_gqa_long_padding),
        cmocka_unit_test(test_multi_head_no_mask),  cmocka_unit_test(test_buckets_multi_head),
        cmocka_unit_test(test_buckets_gqa_padding), cmocka_unit_test(test_buckets_widened_cache),
        cmocka_unit_test(test_i8_and_bf16_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
