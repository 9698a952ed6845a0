/* The prediction's accessors (include/ntprof/predict.h): a prediction is an
 * opaque handle, and what a caller reads of it comes through them. Checked
 * against independent truths: the graph's own layers (names, types, order,
 * count, its name and batch), the topology written here (which layers the
 * uncalibrated family covers), the hand-made calibration's formula for a
 * layer's time, and the sum of the rows for the total; and their range:
 * NULL, 0 or false for a NULL prediction or an index out of range. Runs on
 * the reference backend alone; nothing is timed. */
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

/* Two relus (the eltwise family, left uncalibrated below), a batch norm
 * the engine folds into c1 under fuse, a flatten (free). */
static const char net_xml[] = "<topology name=\"acc\" precision=\"f32\" batch=\"3\">"
                              "<input name=\"x\" shape=\"${batch},3,10,10\" dtype=\"f32\"/>"
                              "<conv name=\"c1\" filters=\"8\" kernel=\"3\"/>"
                              "<batchnorm name=\"bn\"/>"
                              "<relu name=\"r1\"/>"
                              "<conv name=\"c2\" filters=\"8\" kernel=\"1\"/>"
                              "<relu name=\"r2\"/>"
                              "<global_avgpool name=\"gap\"/>"
                              "<flatten name=\"fl\"/>"
                              "<fc name=\"fc\" units=\"5\"/>"
                              "</topology>";

static ntp_prediction *predict(ntp_ctx *ctx, const ntp_graph *g, const ntp_calibration *cal,
                               bool fuse)
{
    ntp_predict_opts o;
    ntp_predict_opts_default(&o);
    o.fuse = fuse;
    ntp_prediction *p = NULL;
    if (ntp_predict_with(ctx, g, cal, &o, &p) != NTP_STATUS_OK) {
        print_error("predict: %s\n", ntp_ctx_errmsg(ctx));
        fail();
    }
    return p;
}

static void test_accessors(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = NULL;
    assert_int_equal(ntp_graph_load_xml_memory(ctx, net_xml, strlen(net_xml), "acc", NULL, &g), 0);
    /* A backend this build does not have: its layers are taken to run on
     * it, and the rows its layouts may add cannot be known. */
    ntp_calibration cal;
    test_hand_calibration(&cal, "elsewhere", "box", true);
    cal.family[NTP_PREDICT_FAMILY_ELTWISE].calibrated = false;
    ntp_prediction *p = predict(ctx, g, &cal, false);

    assert_string_equal(ntp_prediction_topology(p), "acc");
    assert_int_equal(ntp_prediction_batch(p), 3);
    assert_string_equal(ntp_prediction_calibration(p)->backend, "elsewhere");
    assert_string_equal(ntp_prediction_calibration(p)->machine_key, "box");
    assert_false(ntp_prediction_roofline_only(p));
    assert_false(ntp_prediction_fused(p));
    assert_int_equal(ntp_prediction_fused_layers(p), 0);

    /* One row per layer of the graph, in its order. */
    int n = ntp_graph_layer_count(g);
    assert_int_equal(n, 8);
    assert_int_equal(ntp_prediction_layer_count(p), n);
    double sum = 0;
    for (int i = 0; i < n; i++) {
        const ntp_layer_prediction *l = ntp_prediction_layer(p, i);
        assert_non_null(l);
        assert_string_equal(l->name, ntp_graph_layer_name(g, i));
        assert_string_equal(l->type, ntp_graph_layer_type(g, i));
        if (strcmp(l->type, "relu") == 0) {
            assert_true(isnan(l->predicted_ms));
        } else if (strcmp(l->type, "conv") == 0 || strcmp(l->type, "fc") == 0) {
            /* The hand calibration's t = 1 us + flops / peak + bytes / bandwidth. */
            assert_true(l->flops > 0 && l->bytes > 0);
            assert_close(l->predicted_ms, test_hand_ms(l->flops, l->bytes), 1e-12);
        }
        if (isfinite(l->predicted_ms))
            sum += l->predicted_ms;
    }
    assert_null(ntp_prediction_layer(p, -1));
    assert_null(ntp_prediction_layer(p, n));
    /* The two relus are the layers the uncalibrated family leaves out. */
    assert_string_equal(ntp_prediction_uncalibrated(p), "eltwise");
    assert_int_equal(ntp_prediction_unpredicted(p), 2);

    /* One row saying the reorders are unknown, not counted. */
    assert_int_equal(ntp_prediction_copy_count(p), 1);
    const ntp_layer_prediction *c = ntp_prediction_copy(p, 0);
    assert_non_null(c);
    assert_string_equal(c->name, "reorders");
    assert_string_equal(c->note, "n/a: layouts of elsewhere, which cannot run here");
    assert_true(isnan(c->predicted_ms));
    assert_null(ntp_prediction_copy(p, 1));
    assert_null(ntp_prediction_copy(p, -1));
    assert_true(ntp_prediction_copies_ms(p) == 0);
    assert_string_equal(ntp_prediction_copies_note(p), "");
    assert_close(ntp_prediction_total_ms(p), sum, 1e-12);
    ntp_prediction_free(p);

    /* The reference backend adds no rows (no sub-steps, one storage type).
     * Fused as a run with --fuse: the batch norm folded into c1, and the
     * count is the rows that say whose they are. */
    test_hand_calibration(&cal, "ref", "box", true);
    p = predict(ctx, g, &cal, true);
    assert_int_equal(ntp_prediction_copy_count(p), 0);
    assert_null(ntp_prediction_copy(p, 0));
    assert_true(ntp_prediction_copies_ms(p) == 0);
    assert_true(ntp_prediction_fused(p));
    int fused = 0;
    for (int i = 0; i < ntp_prediction_layer_count(p); i++)
        fused += ntp_prediction_layer(p, i)->fused_into != NULL;
    const ntp_layer_prediction *bn = test_find_prediction(p, false, "bn");
    assert_non_null(bn);
    assert_non_null(bn->fused_into);
    assert_string_equal(bn->fused_into, "c1");
    assert_int_equal(ntp_prediction_fused_layers(p), fused);
    ntp_prediction_free(p);

    /* A calibration from ceilings alone. */
    test_hand_calibration(&cal, "roofline", "what-if: box", true);
    p = predict(ctx, g, &cal, false);
    assert_true(ntp_prediction_roofline_only(p));
    ntp_prediction_free(p);

    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

static void test_null(void **state)
{
    (void)state;
    assert_null(ntp_prediction_topology(NULL));
    assert_int_equal(ntp_prediction_batch(NULL), 0);
    assert_null(ntp_prediction_calibration(NULL));
    assert_false(ntp_prediction_roofline_only(NULL));
    assert_int_equal(ntp_prediction_layer_count(NULL), 0);
    assert_null(ntp_prediction_layer(NULL, 0));
    assert_true(ntp_prediction_total_ms(NULL) == 0);
    assert_null(ntp_prediction_uncalibrated(NULL));
    assert_int_equal(ntp_prediction_unpredicted(NULL), 0);
    assert_int_equal(ntp_prediction_copy_count(NULL), 0);
    assert_null(ntp_prediction_copy(NULL, 0));
    assert_true(ntp_prediction_copies_ms(NULL) == 0);
    assert_null(ntp_prediction_copies_note(NULL));
    assert_false(ntp_prediction_fused(NULL));
    assert_int_equal(ntp_prediction_fused_layers(NULL), 0);
    ntp_prediction_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accessors),
        cmocka_unit_test(test_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
