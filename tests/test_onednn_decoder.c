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
#include "support/gen-pair.h"

#define TINY NTP_SOURCE_DIR "/models/tiny-decoder.xml"
#define LLAMA NTP_SOURCE_DIR "/tests/data/tiny-llama.xml"
#define LLAMA_MASK NTP_SOURCE_DIR "/tests/data/tiny-llama-mask.xml"

/* Generate on ref and on oneDNN with the same options; the logits of the
 * prefill and of the G steps agree within 1e-5 and so do the tokens. */
static void compare(const char *model, int64_t batch, int64_t pad, int64_t context, int64_t P,
                    int64_t G, ntp_dtype kv)
{
    test_gen_pair p;
    test_gen_pair_run(&p, "onednn", model, batch, pad, context, P, G, kv);
    /* Every kv_attention and rmsnorm layer ran on oneDNN. */
    int attn = 0;
    for (int l = 0; l < ntp_generate_result_layer_count(p.r[1]); l++) {
        bool attention = strcmp(ntp_generate_result_layer(p.r[1], l)->type, "kv_attention") == 0;
        if (attention || strcmp(ntp_generate_result_layer(p.r[1], l)->type, "rmsnorm") == 0)
            assert_string_equal(ntp_generate_result_layer(p.r[1], l)->backend, "onednn");
        attn += attention;
    }
    assert_int_equal(attn, 2);
    (void)test_gen_pair_check(&p, "onednn", 1e-5);
    test_gen_pair_free(&p);
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
