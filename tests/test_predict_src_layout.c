/* oneDNN's kernel keyed by the layout of its source (docs/predict.md,
 * "Implementations"): oneDNN names its pooling (and its concat, its
 * eltwise) the same whether it reads the graph's plain NCHW input or a
 * conv's output (nhwc from a brgemm conv, nChw16c from an older one), at
 * speeds several times apart. A pooling and a concat of the graph input
 * and the same of a 1x1 conv's output: the graph's input is plain by
 * definition (the truth), the conv's output is whatever oneDNN chose and
 * never plain (format_tag_any); the prepared plan and the run report the
 * same layout, and each layer takes the correction stored under its
 * kernel's name and its layout, spelled NAME/LAYOUT, the corrections set by
 * hand. A calibration made before (corrections under the name alone) still
 * corrects both. Needs oneDNN (exits 77 without it). */
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

static const char xml[] = "<topology name=\"k\" precision=\"f32\">"
                          "<input name=\"x\" shape=\"1,16,16,16\" dtype=\"f32\"/>"
                          "<maxpool name=\"px\" kernel=\"2\" stride=\"2\" inputs=\"x\"/>"
                          "<concat name=\"cx\" axis=\"1\" inputs=\"x,x\"/>"
                          "<conv name=\"c\" filters=\"16\" kernel=\"1\" inputs=\"x\"/>"
                          "<maxpool name=\"pc\" kernel=\"2\" stride=\"2\" inputs=\"c\"/>"
                          "<concat name=\"cc\" axis=\"1\" inputs=\"c,c\"/>"
                          "</topology>";

static void assert_close(double got, double want)
{
    if (!(fabs(got - want) <= 1e-9 * fmax(1e-12, fabs(want))))
        fail_msg("got %.12g, want %.12g", got, want);
}

static const ntp_layer_prediction *layer(const ntp_prediction *p, const char *name)
{
    const ntp_layer_prediction *l = test_find_prediction(p, false, name);
    assert_non_null(l);
    assert_non_null(l->impl);
    assert_non_null(l->src_layout);
    return l;
}

/* Add a correction of family f under impl, then "/layout" unless NULL. */
static void add(ntp_calibration *cal, ntp_predict_family f, const char *impl, const char *layout,
                double scale)
{
    ntp_impl_correction *c = &cal->impls[cal->n_impls++];
    memset(c, 0, sizeof *c);
    c->family = f;
    if (layout)
        snprintf(c->impl, sizeof c->impl, "%s/%s", impl, layout);
    else
        snprintf(c->impl, sizeof c->impl, "%s", impl);
    c->samples = 2;
    c->scale = scale;
}

static void predict(ntp_ctx *ctx, const ntp_graph *g, const ntp_calibration *cal,
                    ntp_prediction **p)
{
    ntp_predict_opts o;
    ntp_predict_opts_default(&o);
    o.threads = 1;
    assert_int_equal(ntp_predict_with(ctx, g, cal, &o, p), NTP_STATUS_OK);
}

static const char *names[] = {"px", "cx", "pc", "cc"};
static const ntp_predict_family fams[] = {NTP_PREDICT_FAMILY_POOL, NTP_PREDICT_FAMILY_COPY,
                                          NTP_PREDICT_FAMILY_POOL, NTP_PREDICT_FAMILY_COPY};

static void test_key_by_layout(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = NULL;
    assert_int_equal(ntp_graph_load_xml_memory(ctx, xml, strlen(xml), "k", NULL, &g), 0);
    /* Uncorrected: a correction of no layer's kernel makes the plan
     * prepared (the kernels and layouts known) without changing a time. */
    ntp_calibration cal;
    test_hand_calibration(&cal, "onednn", "m", true);
    add(&cal, NTP_PREDICT_FAMILY_FC, "none", NULL, 7);
    ntp_prediction *p0 = NULL;
    predict(ctx, g, &cal, &p0);
    const ntp_layer_prediction *l0[4];
    for (int i = 0; i < 4; i++) {
        l0[i] = layer(p0, names[i]);
        assert_int_equal(l0[i]->family, fams[i]);
        assert_close(l0[i]->correction, 1);
    }
    /* The graph's input is plain; a conv's output never is. */
    assert_string_equal(l0[0]->src_layout, "plain");
    assert_string_equal(l0[1]->src_layout, "plain");
    assert_string_not_equal(l0[2]->src_layout, "plain");
    assert_string_not_equal(l0[3]->src_layout, "plain");

    /* A correction per kernel and layout: each layer takes its own. */
    const double want[] = {0.5, 0.25, 2, 4};
    ntp_calibration keyed = cal;
    for (int i = 0; i < 4; i++)
        add(&keyed, fams[i], l0[i]->impl, l0[i]->src_layout, want[i]);
    ntp_prediction *p = NULL;
    predict(ctx, g, &keyed, &p);
    for (int i = 0; i < 4; i++) {
        const ntp_layer_prediction *l = layer(p, names[i]);
        assert_string_equal(l->src_layout, l0[i]->src_layout);
        assert_close(l->correction, want[i]);
        assert_close(l->predicted_ms, want[i] * l0[i]->predicted_ms);
    }

    /* The run reports the same layout on each layer's row, and beside it
     * each row takes the correction of its kernel and layout. */
    ntp_run_opts ro;
    ntp_run_opts_default(&ro);
    ro.backend = "onednn";
    ro.threads = 1;
    ro.warmup = 0;
    ro.iterations = 1;
    ro.min_time_s = 0;
    ro.accuracy = false;
    ntp_run_result *r = NULL;
    assert_int_equal(ntp_run(ctx, g, &ro, &r), NTP_STATUS_OK);
    int seen = 0;
    for (int k = 0; k < ntp_run_result_layer_count(r); k++) {
        const ntp_layer_result *row = ntp_run_result_layer(r, k);
        if (!row->kind || strcmp(row->kind, "layer") != 0)
            continue;
        for (int i = 0; i < 4; i++)
            if (strcmp(row->name, names[i]) == 0) {
                assert_non_null(row->src_layout);
                assert_string_equal(row->src_layout, l0[i]->src_layout);
                assert_string_equal(row->impl, l0[i]->impl);
                seen++;
            }
    }
    assert_int_equal(seen, 4);
    ntp_prediction_apply(p, r, false);
    for (int k = 0; k < ntp_run_result_layer_count(r); k++) {
        const ntp_layer_result *row = ntp_run_result_layer(r, k);
        for (int i = 0; i < 4; i++)
            if (strcmp(row->kind, "layer") == 0 && strcmp(row->name, names[i]) == 0)
                assert_close(row->predicted_ms, want[i] * l0[i]->predicted_ms);
    }
    ntp_run_result_free(r);
    ntp_prediction_free(p);
    ntp_prediction_free(p0);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* A calibration stored before layouts were recorded keeps its
 * corrections under the kernel's name alone: every layer of that kernel
 * takes it, whatever its layout. Where both are stored the layout's wins. */
static void test_old_calibration(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = NULL;
    assert_int_equal(ntp_graph_load_xml_memory(ctx, xml, strlen(xml), "k", NULL, &g), 0);
    ntp_calibration cal;
    test_hand_calibration(&cal, "onednn", "m", true);
    add(&cal, NTP_PREDICT_FAMILY_FC, "none", NULL, 7);
    ntp_prediction *p0 = NULL;
    predict(ctx, g, &cal, &p0);
    const ntp_layer_prediction *l0[4];
    for (int i = 0; i < 4; i++)
        l0[i] = layer(p0, names[i]);

    ntp_calibration old = cal;
    for (int i = 0; i < 4; i++) {
        bool dup = false;
        for (int k = 0; k < old.n_impls; k++)
            dup |= old.impls[k].family == fams[i] && strcmp(old.impls[k].impl, l0[i]->impl) == 0;
        if (!dup)
            add(&old, fams[i], l0[i]->impl, NULL, fams[i] == NTP_PREDICT_FAMILY_POOL ? 3 : 5);
    }
    ntp_prediction *p = NULL;
    predict(ctx, g, &old, &p);
    for (int i = 0; i < 4; i++) {
        double s = fams[i] == NTP_PREDICT_FAMILY_POOL ? 3 : 5;
        /* Two kernels of one family under one name: both take the name's. */
        if (i >= 2 && strcmp(l0[i]->impl, l0[i - 2]->impl) != 0)
            continue;
        assert_close(layer(p, names[i])->correction, s);
        assert_close(layer(p, names[i])->predicted_ms, s * l0[i]->predicted_ms);
    }
    ntp_prediction_free(p);

    /* The plain layers' layout keyed too: they take it, the others the
     * name's. */
    add(&old, NTP_PREDICT_FAMILY_POOL, l0[0]->impl, "plain", 0.5);
    predict(ctx, g, &old, &p);
    assert_close(layer(p, "px")->correction, 0.5);
    if (strcmp(l0[2]->impl, l0[0]->impl) == 0)
        assert_close(layer(p, "pc")->correction, 3);
    ntp_prediction_free(p);
    ntp_prediction_free(p0);
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
        cmocka_unit_test(test_key_by_layout),
        cmocka_unit_test(test_old_calibration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
