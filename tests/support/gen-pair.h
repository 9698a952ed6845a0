/* A decoder generated twice in tests, on the reference backend and on
 * another, with the same options (seed 1: the same weights, prompt and
 * synthetic context), each saving the logits of its prefill and of every
 * decode step as .npy in a temporary folder of its own; then the two
 * compared. test_onednn_decoder and test_decoder_backends share it.
 * Every C file of tests/support is linked into every test. */
#ifndef NTPROF_TEST_GEN_PAIR_H
#define NTPROF_TEST_GEN_PAIR_H

#include <stdint.h>

#include "ntprof/ntprof.h"

typedef struct test_gen_pair {
    ntp_ctx *ctx;
    ntp_generate_result *r[2]; /* ref's, then the backend's */
    char dirs[2][64];
    int64_t batch, gen_len;
} test_gen_pair;

/* Generate MODEL on ref and on BACKEND (threads 2); a failure fails the
 * test, naming the backend and the library's message. */
void test_gen_pair_run(test_gen_pair *p, const char *backend, const char *model, int64_t batch,
                       int64_t pad, int64_t context, int64_t prompt_len, int64_t gen_len,
                       ntp_dtype kv);

/* The backend's logits within TOL of ref's (max |a - b| / max |b|) at the
 * prefill and at every decode step, and the same tokens; prints the
 * prefill's error and the worst step's under LABEL and returns the worst
 * of all. */
double test_gen_pair_check(const test_gen_pair *p, const char *label, double tol);

/* Removes both folders and frees both results and the context. */
void test_gen_pair_free(test_gen_pair *p);

#endif
