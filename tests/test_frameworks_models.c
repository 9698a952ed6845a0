/* Every bundled model on the XNNPACK and BLAS backends against the
 * reference backend: the same weights and inputs (seed 1), outputs compared
 * by relative L2 norm, f32 within 1e-4. Each backend runs through ntp_run
 * (placement with fallback to the reference backend for the layers it
 * lacks, internal NHWC layouts on XNNPACK, im2col sub-steps on BLAS), once
 * unfused and once with --fuse; the reference side runs the plan once per
 * model. XNNPACK's f16 is checked on the convolutional models against the
 * f32 reference (f16 arithmetic: reported, bounded at 3e-2). Large models
 * run with small params (DeepSpeech n_hidden=256 time_steps=50, BERT
 * layers=2 seq_len=32). VGG16 is left out: it has no size params, its layer
 * types are AlexNet's, and the reference backend alone needs over a minute
 * for it on a two-core machine. Backends run on one thread here, so that a
 * busy machine cannot stall their thread pools; test_xnnpack, test_blas and
 * the conformance driver run them on two. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "exec/exec-impl.h"
#include "io/io-impl.h"
#include "ntprof/ntprof.h"
#include "support/models.h"
#include "support/tmpdir.h"

static const char *const backends[] = {"xnnpack", "blas"};

static void check_model(ntp_ctx *ctx, const ntp_graph *g, const test_model *m, const char *ref)
{
    const char *file = m->file;
    double t0 = test_now_s();
    int tested = 0;
    for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++) {
        if (!ntp__backend_find(backends[b])) {
            printf("    %s not built: skipped\n", backends[b]);
            continue;
        }
        for (int fuse = 0; fuse < 2; fuse++) {
            char dir[512];
            snprintf(dir, sizeof dir, "%s/%s-%s-%d", test_tmpdir, file, backends[b], fuse);
            int on = test_run_backend_save(ctx, g, backends[b], 1, fuse, dir);
            double e = test_compare_outputs(ctx, g, dir, ref);
            printf("    %s%s: %s (worst rel_l2 %.2e, tolerance 1e-4)\n", backends[b],
                   fuse ? " --fuse" : "", e <= 1e-4 ? "PASSED" : "FAILED", e);
            assert_true(on > 0);
            assert_true(e <= 1e-4);
            tested++;
        }
    }
    /* f16 on the convolutional models. */
    if (m->spatial && ntp__backend_find("xnnpack")) {
        ntp_graph *h = test_load_model(ctx, file, m->set, m->n_set, "f16");
        char dir[512];
        snprintf(dir, sizeof dir, "%s/%s-xnnpack-f16", test_tmpdir, file);
        int on = test_run_backend_save(ctx, h, "xnnpack", 1, true, dir);
        double e = test_compare_outputs(ctx, g, dir, ref);
        printf("    xnnpack f16 --fuse vs f32 reference: worst rel_l2 %.2e (bound 3e-2)\n", e);
        if (on > 0)
            assert_true(e <= 3e-2);
        ntp_graph_free(h);
    }
    printf("  %s: %d backend runs in %.1f s\n", file, tested, test_now_s() - t0);
}

static const test_model models[] = {
    {.file = "tiny-cnn.xml", .spatial = true},
    {.file = "tiny-mlp.xml"},
    {.file = "tiny-rnn.xml"},
    {.file = "tiny-attention.xml"},
    {.file = "lstm-lm.xml"},
    {.file = "deepspeech.xml", .set = {"n_hidden=256", "time_steps=50"}, .n_set = 2},
    {.file = "bert-base.xml", .set = {"layers=2", "seq_len=32"}, .n_set = 2},
    {.file = "mobilenetv2.xml", .spatial = true},
    {.file = "alexnet.xml"},
    {.file = "resnet50.xml", .spatial = true},
};
#define N_MODELS (int)(sizeof models / sizeof models[0])

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* 77: ctest reports the test as skipped (SKIP_RETURN_CODE), not passed. */
    bool any = false;
    for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++)
        any |= ntp__backend_find(backends[b]) != NULL;
    if (!any) {
        printf("neither XNNPACK nor BLAS built: skipped\n");
        return 77;
    }
    struct CMUnitTest tests[N_MODELS];
    test_model_tests(tests, models, N_MODELS, check_model);
    return cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown);
}
