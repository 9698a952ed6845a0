/* The decoder ops (docs/decoders.md) on the BLAS, XNNPACK and CUDA
 * backends against the reference backend through ntp_generate: the same
 * weights, prompt and synthetic context (seed 1), the logits of the
 * prefill pass and of every decode step saved as .npy and compared as
 * max |a - b| / max |b| within 1e-5, and the same tokens. The reference
 * kernels are themselves checked against PyTorch (test_decoder_torch);
 * oneDNN has its own test (test_onednn_decoder).
 *
 * What each backend must run itself (the per-layer backend is asserted):
 *   blas     rmsnorm, rope, kv_attention and lm_head (SGEMM), argmax
 *   xnnpack  lm_head (fully_connected_nc); the other decoder ops fall back
 *            to the reference backend: Debian's XNNPACK has no operator for
 *            them
 *   cuda     rmsnorm, rope, kv_attention (its kernels, the cache mirrored
 *            on the device), lm_head (cuBLAS), argmax; skipped without a
 *            usable GPU
 * Cases: multi-head GPT-2-style attention without a mask (tiny-decoder,
 * tied head) after a synthetic context; grouped-query attention (4 query
 * heads on 2) with a padding mask and left padding by 2 and by 5 (queries
 * that see no key); i8, bf16 and f16 caches. */
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
#include "support/gen-pair.h"

#define TINY NTP_SOURCE_DIR "/models/tiny-decoder.xml"
#define LLAMA NTP_SOURCE_DIR "/tests/data/tiny-llama.xml"
#define LLAMA_MASK NTP_SOURCE_DIR "/tests/data/tiny-llama-mask.xml"

/* The decoder op types each backend runs itself. */
static const struct {
    const char *backend;
    const char *const *types;
} natives[] = {
    {"blas", (const char *const[]){"rmsnorm", "rope", "kv_attention", "lm_head", "argmax", NULL}},
    {"xnnpack", (const char *const[]){"lm_head", NULL}},
    {"cuda", (const char *const[]){"rmsnorm", "rope", "kv_attention", "lm_head", "argmax", NULL}},
};

static bool native(const char *backend, const char *type)
{
    for (size_t i = 0; i < sizeof natives / sizeof *natives; i++)
        if (strcmp(natives[i].backend, backend) == 0)
            for (const char *const *t = natives[i].types; *t; t++)
                if (strcmp(*t, type) == 0)
                    return true;
    return false;
}

/* Generate on ref and on `backend`; the logits of the prefill and of the
 * G steps agree within 1e-5 and so do the tokens. Returns false (nothing
 * checked) when the backend is not usable here. */
static bool compare(const char *backend, const char *model, int64_t batch, int64_t pad,
                    int64_t context, int64_t P, int64_t G, ntp_dtype kv)
{
    char why[256];
    if (!ntp_backend_usable(backend, why, sizeof why)) {
        print_message("%s: not usable here (%s): skipped\n", backend, why);
        return false;
    }
    test_gen_pair p;
    test_gen_pair_run(&p, backend, model, batch, pad, context, P, G, kv);
    int natives_seen = 0;
    for (int l = 0; l < ntp_generate_result_layer_count(p.r[1]); l++)
        if (native(backend, ntp_generate_result_layer(p.r[1], l)->type)) {
            if (strcmp(ntp_generate_result_layer(p.r[1], l)->backend, backend) != 0)
                print_message("%s (%s) ran on %s\n", ntp_generate_result_layer(p.r[1], l)->name,
                              ntp_generate_result_layer(p.r[1], l)->type,
                              ntp_generate_result_layer(p.r[1], l)->backend);
            assert_string_equal(ntp_generate_result_layer(p.r[1], l)->backend, backend);
            natives_seen++;
        }
    assert_true(natives_seen >= 1);
    (void)test_gen_pair_check(&p, backend, 1e-5);
    test_gen_pair_free(&p);
    return true;
}

/* Every case on one backend; 77 when none of them could run. */
static int ran;

static void cases(const char *backend)
{
    ran += compare(backend, TINY, 1, 0, 4, 6, 4, NTP_DTYPE_F32);
    ran += compare(backend, LLAMA_MASK, 2, 2, 3, 7, 4, NTP_DTYPE_F32);
    ran += compare(backend, LLAMA_MASK, 2, 5, 0, 6, 3, NTP_DTYPE_F32);
    ran += compare(backend, LLAMA, 2, 0, 5, 6, 3, NTP_DTYPE_I8);
    ran += compare(backend, LLAMA, 2, 0, 5, 6, 3, NTP_DTYPE_BF16);
    ran += compare(backend, LLAMA, 1, 0, 10, 4, 6, NTP_DTYPE_F16);
}

static void test_blas(void **state)
{
    (void)state;
    cases("blas");
}

static void test_xnnpack(void **state)
{
    (void)state;
    cases("xnnpack");
}

static void test_cuda(void **state)
{
    (void)state;
    cases("cuda");
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blas),
        cmocka_unit_test(test_xnnpack),
        cmocka_unit_test(test_cuda),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (rc == 0 && ran == 0) {
        printf("no backend of blas, xnnpack, cuda is usable here: skipped\n");
        return 77;
    }
    return rc;
}
