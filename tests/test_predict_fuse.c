/* A prediction of the fused plan (docs/predict.md, "Fused plans"): with
 * ntp_predict_opts.fuse every layer is where a run with --fuse puts it, a
 * layer of kind "fused" in the run is "fused" into the same head in the
 * prediction (the run's rows are the truth, name for name), and each
 * group's head is priced as its fused kernel does the work, worked by hand
 * from the tensors' sizes: the head's input and weights, a folded batch
 * norm's bias and nothing else of it, a residual add's other operand, and
 * the chain's last output, with the FLOPs of the head and of its post-ops.
 * Beside the fused run the rows take those predictions whole; beside an
 * unfused run they say the plan differs. Needs oneDNN (exits 77 without
 * it). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ntprof/ntprof.h"
#include "support/predict-hand.h"

static void assert_close(double got, double want, double rel)
{
    if (!(fabs(got - want) <= rel * fabs(want))) {
        print_error("got %.17g, want %.17g (relative tolerance %g)\n", got, want, rel);
        fail();
    }
}

/* c1 (no bias) + bn1 + r1: the batch norm folded into c1's weights (giving
 * it a bias), the relu a post-op; c2 + a2 (residual add of r1) + r2; fc +
 * r3. r1's output has two readers, so c1's chain ends there. */
static const char net_xml[] =
    "<topology name=\"fz\" precision=\"f32\" batch=\"1\">"
    "<input name=\"x\" shape=\"${batch},16,12,12\" dtype=\"f32\"/>"
    "<conv name=\"c1\" filters=\"32\" kernel=\"3\" pad=\"same\" bias=\"false\"/>"
    "<batchnorm name=\"bn1\"/>"
    "<relu name=\"r1\"/>"
    "<conv name=\"c2\" filters=\"32\" kernel=\"3\" pad=\"same\"/>"
    "<add name=\"a2\" inputs=\"c2,r1\"/>"
    "<relu name=\"r2\"/>"
    "<global_avgpool name=\"gap\"/>"
    "<flatten name=\"fl\"/>"
    "<fc name=\"fc\" units=\"10\"/>"
    "<relu name=\"r3\"/>"
    "</topology>";

static ntp_graph *load(ntp_ctx *ctx)
{
    ntp_graph *g = NULL;
    assert_int_equal(ntp_graph_load_xml_memory(ctx, net_xml, strlen(net_xml), "fz", NULL, &g), 0);
    return g;
}

static ntp_run_result *run(ntp_ctx *ctx, const ntp_graph *g, bool fuse)
{
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    o.backend = "onednn";
    o.warmup = 0;
    o.iterations = 1;
    o.min_time_s = 0;
    o.accuracy = false;
    o.threads = 1;
    o.fuse = fuse;
    ntp_run_result *r = NULL;
    if (ntp_run(ctx, g, &o, &r) != NTP_STATUS_OK) {
        print_error("run: %s\n", ntp_ctx_errmsg(ctx));
        fail();
    }
    return r;
}

static ntp_prediction *predict(ntp_ctx *ctx, const ntp_graph *g, bool fuse)
{
    char here[256];
    ntp_machine_key(here, sizeof here);
    ntp_calibration cal, ref;
    test_hand_calibration(&cal, "onednn", here, true);
    test_hand_calibration(&ref, "ref", here, true);
    ntp_predict_opts o;
    ntp_predict_opts_default(&o);
    o.others = &ref;
    o.n_others = 1;
    o.threads = 1;
    o.fuse = fuse;
    ntp_prediction *p = NULL;
    if (ntp_predict_with(ctx, g, &cal, &o, &p) != NTP_STATUS_OK) {
        print_error("predict: %s\n", ntp_ctx_errmsg(ctx));
        fail();
    }
    return p;
}

static const ntp_layer_cost *cost(const ntp_analysis *a, const char *name)
{
    for (int i = 0; i < a->n_layers; i++)
        if (strcmp(a->layers[i].name, name) == 0)
            return &a->layers[i];
    print_error("no layer %s in the analysis\n", name);
    fail();
    return NULL;
}

/* The prediction's rows are the fused run's, name for name. */
static void test_rows_as_run(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load(ctx);
    ntp_run_result *r = run(ctx, g, true);
    ntp_prediction *p = predict(ctx, g, true);
    assert_true(ntp_prediction_fused(p));
    int layers = 0, fused = 0, copies = 0;
    for (int i = 0; i < ntp_run_result_layer_count(r); i++) {
        const ntp_layer_result *l = ntp_run_result_layer(r, i);
        if (strcmp(l->kind, "layer") == 0 || strcmp(l->kind, "fused") == 0) {
            const ntp_layer_prediction *lp = test_find_prediction(p, false, l->name);
            assert_non_null(lp);
            if (strcmp(lp->kind, l->kind) != 0 || strcmp(lp->backend, l->backend) != 0) {
                print_error("%s: predicted %s on %s, run %s on %s\n", l->name, lp->kind,
                            lp->backend, l->kind, l->backend);
                fail();
            }
            if (l->fused) {
                assert_non_null(lp->fused_into);
                assert_string_equal(lp->fused_into, l->fused_into);
                assert_true(lp->predicted_ms == 0);
                fused++;
            } else {
                assert_null(lp->fused_into);
            }
            layers++;
        } else if (strcmp(l->kind, "reorder") == 0 || strcmp(l->kind, "convert") == 0) {
            const ntp_layer_prediction *cp = test_find_prediction(p, true, l->name);
            if (!cp) {
                print_error("the run's %s row %s is not predicted\n", l->kind, l->name);
                fail();
            }
            assert_int_equal(cp->bytes, l->bytes);
            copies++;
        }
    }
    assert_int_equal(layers, ntp_prediction_layer_count(p));
    assert_int_equal(copies, ntp_prediction_copy_count(p));
    /* bn1 and r1 into c1, a2 and r2 into c2, r3 into fc. */
    assert_int_equal(fused, 5);
    assert_int_equal(ntp_prediction_fused_layers(p), 5);
    /* Beside the run: each head row takes its group's prediction whole,
     * and the end-to-end prediction is the prediction's. */
    ntp_prediction_apply(p, r, false);
    for (int i = 0; i < ntp_run_result_layer_count(r); i++) {
        const ntp_layer_result *l = ntp_run_result_layer(r, i);
        if (strcmp(l->kind, "layer") != 0)
            continue;
        const ntp_layer_prediction *lp = test_find_prediction(p, false, l->name);
        if (lp->family == NTP_PREDICT_FAMILY_FREE)
            continue;
        if (!l->predicted) {
            print_error("%s: not predicted beside the run (%s)\n", l->name, l->prediction_note);
            fail();
        }
        assert_close(l->predicted_ms, lp->predicted_ms, 1e-12);
    }
    assert_close(ntp_run_result_prediction(r)->predicted_ms, ntp_prediction_total_ms(p), 1e-9);
    ntp_prediction_free(p);
    ntp_run_result_free(r);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* Each group's work and time, by hand from the tensors' sizes (f32). */
static void test_groups_by_hand(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load(ctx);
    ntp_analysis *a = NULL;
    assert_int_equal(ntp_graph_analyze(ctx, g, &a), 0);
    ntp_prediction *p = predict(ctx, g, true);
    /* x [1,16,12,12] 9216 B; c1's weights 32x16x3x3 18432 B; the bias the
     * folded batch norm gives it 32 x 4 = 128 B; r1's output [1,32,12,12]
     * 18432 B: 46208 B, in the L2. The batch norm's FLOPs are gone. */
    /* oneDNN leaves out the taps of a 3x3 convolution over its padding
     * (docs/predict.md): 34 of 36 a dimension on 12x12, 1156 of 1296;
     * the FLOPs priced lose 140/1296 of c1's multiply-adds' 2 x 32 x 16 x
     * 9 x 144 = 1327104 (143360) and of c2's 2654208 (286720). */
    static const struct {
        const char *head;
        const char *post[2];
        int64_t bytes, padded;
    } groups[] = {
        {"c1", {"r1", NULL}, 9216 + 18432 + 128 + 18432, 143360},
        /* r1's output in, weights 32x32x3x3 + bias 36992 B, r1's output
         * again as the add's other operand, r2's output: 92288 B, DRAM. */
        {"c2", {"a2", "r2"}, 18432 + 36992 + 18432 + 18432, 286720},
        /* [1,32] in, 32x10 + 10 weights, [1,10] out. */
        {"fc", {"r3", NULL}, 128 + 1320 + 40, 0},
    };
    for (size_t k = 0; k < sizeof groups / sizeof groups[0]; k++) {
        const ntp_layer_prediction *lp = test_find_prediction(p, false, groups[k].head);
        assert_non_null(lp);
        int64_t flops = cost(a, groups[k].head)->flops;
        for (int j = 0; j < 2 && groups[k].post[j]; j++)
            flops += cost(a, groups[k].post[j])->flops;
        assert_int_equal(lp->bytes, groups[k].bytes);
        assert_int_equal(lp->flops, flops);
        assert_close(lp->predicted_ms, test_hand_ms(flops - groups[k].padded, groups[k].bytes),
                     1e-12);
    }
    /* bn1 has no time of its own, and no family's coefficients price it. */
    const ntp_layer_prediction *bn = test_find_prediction(p, false, "bn1");
    assert_string_equal(bn->kind, "fused");
    assert_string_equal(bn->fused_into, "c1");
    assert_true(bn->predicted_ms == 0);
    /* The unfused prediction of c1 is c1 alone. */
    ntp_prediction *u = predict(ctx, g, false);
    const ntp_layer_prediction *c1 = test_find_prediction(u, false, "c1");
    assert_int_equal(c1->bytes, cost(a, "c1")->traffic_bytes);
    assert_false(ntp_prediction_fused(u));
    assert_int_equal(ntp_prediction_fused_layers(u), 0);
    ntp_prediction_free(u);
    ntp_prediction_free(p);
    ntp_analysis_free(a);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* A fused prediction beside an unfused run: the layers the prediction fused
 * ran alone, and their heads ran without them: neither is predicted, and
 * each says why. */
static void test_fused_prediction_unfused_run(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load(ctx);
    ntp_run_result *r = run(ctx, g, false);
    ntp_prediction *p = predict(ctx, g, true);
    ntp_prediction_apply(p, r, false);
    for (int i = 0; i < ntp_run_result_layer_count(r); i++) {
        const ntp_layer_result *l = ntp_run_result_layer(r, i);
        if (strcmp(l->name, "bn1") == 0 || strcmp(l->name, "r2") == 0) {
            assert_false(l->predicted);
            assert_non_null(strstr(l->prediction_note, "n/a: predicted fused into c"));
        } else if (strcmp(l->name, "c1") == 0 || strcmp(l->name, "fc") == 0) {
            assert_false(l->predicted);
            assert_string_equal(l->prediction_note, "n/a: fused otherwise than predicted");
        } else if (strcmp(l->name, "gap") == 0) {
            assert_true(l->predicted);
        }
    }
    assert_true(ntp_run_result_prediction(r)->unpredicted_ms > 0);
    ntp_prediction_free(p);
    ntp_run_result_free(r);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* A roofline-only estimate has no backend whose fusion to follow. */
static void test_roofline_refused(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load(ctx);
    ntp_calibration cal;
    test_hand_calibration(&cal, "roofline", "what-if: box", true);
    ntp_predict_opts o;
    ntp_predict_opts_default(&o);
    o.fuse = true;
    ntp_prediction *p = NULL;
    assert_int_equal(ntp_predict_with(ctx, g, &cal, &o, &p), NTP_STATUS_INVALID_ARGUMENT);
    assert_null(p);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "roofline-only"));
    assert_string_equal(ntp_ctx_error_part(ctx, NTP_ERROR_OPTION), "ntp_predict_opts.fuse");
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

int main(void)
{
    char why[256];
    if (!ntp_backend_usable("onednn", why, sizeof why)) {
        printf("oneDNN is not usable here (%s): skipped\n", why);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_as_run),
        cmocka_unit_test(test_groups_by_hand),
        cmocka_unit_test(test_fused_prediction_unfused_run),
        cmocka_unit_test(test_roofline_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
