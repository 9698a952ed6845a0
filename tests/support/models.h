/* Whole-model equivalence helpers shared by the tests that run bundled
 * models on a backend and compare with the reference backend
 * (test_onednn_models, test_frameworks_models, test_fold, test_torch). Failures are
 * cmocka failures with the library's error. */
#ifndef NTPROF_TEST_MODELS_H
#define NTPROF_TEST_MODELS_H

#include <stdbool.h>

#include "ntprof/ntprof.h"

/* A monotonic clock in seconds, for the progress lines. */
double test_now_s(void);
/* models/<file> with the given --set values and precision (NULL: f32). */
ntp_graph *test_load_model(ntp_ctx *ctx, const char *file, const char *const *set, int n_set,
                           const char *precision);
/* Run g once on the reference backend (seed 1) and save its outputs in dir. */
void test_run_ref_save(ntp_ctx *ctx, const ntp_graph *g, const char *dir);
/* One pass of g through ntp_run on `backend` with `threads` threads and
 * --fuse as asked, outputs saved in dir; prints the row counts and returns
 * how many rows ran on the backend itself. */
int test_run_backend_save(ntp_ctx *ctx, const ntp_graph *g, const char *backend, int threads,
                          bool fuse, const char *dir);
/* Compare output_<i>.npy of the directories a (tested) and b (reference):
 * prints each output's relative L2 and returns the worst over the float
 * outputs; integer outputs (decoded labels, an argmax over logits that may
 * differ in their last bits) are reported as the bytes that differ, not
 * judged. */
double test_compare_outputs(ntp_ctx *ctx, const ntp_graph *g, const char *a, const char *b);

/* A bundled model at the size a test runs it at: models/<file> with its
 * --set values; spatial: a convolutional model, which the tests run in more
 * variants (memory formats, f16). */
typedef struct test_model {
    const char *file;
    const char *set[4];
    int n_set;
    bool spatial;
} test_model;
/* What a test checks of one model: g is m loaded at f32, and ref the folder
 * holding the reference backend's outputs for it (seed 1). */
typedef void (*test_model_check)(ntp_ctx *ctx, const ntp_graph *g, const test_model *m,
                                 const char *ref);
struct CMUnitTest;
/* Fill tests[0..n) with one cmocka test per model, named by its file: each
 * loads the model, runs it on the reference backend with its outputs saved
 * under test_tmpdir, calls check and frees what it made. The group runs with
 * test_tmpdir_setup and test_tmpdir_teardown. */
void test_model_tests(struct CMUnitTest *tests, const test_model *models, int n,
                      test_model_check check);

#endif
