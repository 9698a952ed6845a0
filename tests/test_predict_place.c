/* A prediction placed and laid out as a run is (docs/predict.md): with
 * --place entries, every layer of a prediction is on the backend a run with
 * the same options runs it on (the run's backend column is the truth), a
 * placement the run refuses is refused the same way, and the reorder and
 * conversion rows the prediction learns from its prepared plan are the rows
 * the run times, with the same names and bytes, each priced as a copy by
 * the formula worked by hand. Another machine's calibration prices this
 * machine's rows with its coefficients and says whether its layouts may
 * differ. Without a way to know them (not asked) one n/a row says so and
 * the total leaves them out. Needs oneDNN (exits 77 without it). */
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

/* Reflect padding has no oneDNN primitive (it falls back to ref); the
 * convolutions take oneDNN's blocked layouts at 32 channels, so a layer
 * put on ref between them needs reorders on each side. */
static const char net_xml[] = "<topology name=\"lay\" precision=\"f32\" batch=\"1\">"
                              "<input name=\"x\" shape=\"${batch},16,12,12\" dtype=\"f32\"/>"
                              "<pad name=\"pad\" pads=\"0,0,1,1,0,0,1,1\" mode=\"reflect\"/>"
                              "<conv name=\"c1\" filters=\"32\" kernel=\"3\"/>"
                              "<relu name=\"r1\"/>"
                              "<conv name=\"c2\" filters=\"32\" kernel=\"3\" pad=\"same\"/>"
                              "<maxpool name=\"p1\" kernel=\"2\"/>"
                              "<conv name=\"c3\" filters=\"32\" kernel=\"1\"/>"
                              "<global_avgpool name=\"gap\"/>"
                              "<flatten name=\"fl\"/>"
                              "<fc name=\"fc\" units=\"10\"/>"
                              "</topology>";

static ntp_graph *load(ntp_ctx *ctx)
{
    ntp_graph *g = NULL;
    assert_int_equal(ntp_graph_load_xml_memory(ctx, net_xml, strlen(net_xml), "lay", NULL, &g), 0);
    return g;
}

static ntp_run_result *run_placed(ntp_ctx *ctx, const ntp_graph *g, const char *const *place,
                                  int n_place)
{
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    o.backend = "onednn";
    o.warmup = 0;
    o.iterations = 1;
    o.min_time_s = 0;
    o.accuracy = false;
    o.threads = 1;
    o.place = place;
    o.n_place = n_place;
    ntp_run_result *r = NULL;
    if (ntp_run(ctx, g, &o, &r) != NTP_STATUS_OK) {
        print_error("run: %s\n", ntp_ctx_errmsg(ctx));
        fail();
    }
    return r;
}

static ntp_prediction *predict(ntp_ctx *ctx, const ntp_graph *g, const ntp_calibration *cal,
                               const ntp_calibration *ref, const char *const *place, int n_place,
                               bool reorders)
{
    ntp_predict_opts o;
    ntp_predict_opts_default(&o);
    o.others = ref;
    o.n_others = 1;
    o.place = place;
    o.n_place = n_place;
    o.reorders = reorders;
    o.threads = 1;
    ntp_prediction *p = NULL;
    if (ntp_predict_with(ctx, g, cal, &o, &p) != NTP_STATUS_OK) {
        print_error("predict: %s\n", ntp_ctx_errmsg(ctx));
        fail();
    }
    return p;
}

/* Each placement: the prediction's backend of every layer is the run's,
 * and its copy rows are the run's reorder and conversion rows. */
static void check_placement(const char *const *place, int n_place, int want_ref_layers)
{
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load(ctx);
    char here[256];
    ntp_machine_key(here, sizeof here);
    ntp_calibration cal, ref;
    test_hand_calibration(&cal, "onednn", here, true);
    test_hand_calibration(&ref, "ref", here, false);
    /* oneDNN's layout changes under its reorder model, the engine's
     * conversions under the copy family. */
    test_hand_reorder(&cal);
    ntp_run_result *r = run_placed(ctx, g, place, n_place);
    ntp_prediction *p = predict(ctx, g, &cal, &ref, place, n_place, true);
    int layers = 0, copies = 0, on_ref = 0;
    double layer_sum = 0, copy_sum = 0;
    for (int i = 0; i < ntp_run_result_layer_count(r); i++) {
        const ntp_layer_result *l = ntp_run_result_layer(r, i);
        if (strcmp(l->kind, "layer") == 0) {
            const ntp_layer_prediction *lp = test_find_prediction(p, false, l->name);
            assert_non_null(lp);
            if (strcmp(lp->backend, l->backend) != 0) {
                print_error("%s: predicted on %s, run on %s\n", l->name, lp->backend, l->backend);
                fail();
            }
            on_ref += strcmp(l->backend, "ref") == 0;
            layers++;
        } else if (strcmp(l->kind, "reorder") == 0 || strcmp(l->kind, "convert") == 0) {
            const ntp_layer_prediction *cp = test_find_prediction(p, true, l->name);
            if (!cp) {
                print_error("the run's %s row %s is not predicted\n", l->kind, l->name);
                fail();
            }
            assert_string_equal(cp->kind, l->kind);
            assert_string_equal(cp->backend, l->backend);
            assert_int_equal(cp->bytes, l->bytes);
            assert_true(l->bytes > 0);
            bool onednn = strcmp(l->backend, "ref") != 0;
            assert_close(cp->predicted_ms,
                         onednn && strcmp(l->kind, "reorder") == 0
                             ? test_hand_reorder_ms(l->bytes)
                             : test_hand_copy_ms(onednn, l->bytes),
                         1e-12);
            copy_sum += cp->predicted_ms;
            copies++;
        }
    }
    assert_int_equal(layers, ntp_prediction_layer_count(p));
    assert_int_equal(on_ref, want_ref_layers);
    /* No row of the prediction the run lacks, and at least one reorder:
     * oneDNN's convolutions at 32 channels take blocked layouts. */
    assert_int_equal(copies, ntp_prediction_copy_count(p));
    assert_true(copies >= 1);
    for (int i = 0; i < ntp_prediction_layer_count(p); i++)
        if (isfinite(ntp_prediction_layer(p, i)->predicted_ms))
            layer_sum += ntp_prediction_layer(p, i)->predicted_ms;
    assert_close(ntp_prediction_copies_ms(p), copy_sum, 1e-12);
    assert_close(ntp_prediction_total_ms(p), layer_sum + copy_sum, 1e-12);
    /* Beside the run, the end-to-end prediction prices the run's own rows:
     * the same rows, so the same total. */
    ntp_prediction_apply(p, r, false);
    assert_close(ntp_run_result_prediction(r)->predicted_ms, ntp_prediction_total_ms(p), 1e-9);
    ntp_prediction_free(p);
    ntp_run_result_free(r);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

static void test_default_placement(void **state)
{
    (void)state;
    /* pad falls back to ref. */
    check_placement(NULL, 0, 1);
}

static void test_place_middle_on_ref(void **state)
{
    (void)state;
    static const char *const place[] = {"c2=ref", "fc=ref"};
    check_placement(place, 2, 3);
}

static void test_place_last_entry_wins(void **state)
{
    (void)state;
    /* The last entry for a layer wins: c1 ends on onednn, r1 on ref. */
    static const char *const place[] = {"c1=ref", "r1=ref", "c1=onednn"};
    check_placement(place, 3, 2);
}

/* What a run refuses, a prediction refuses, with the same message. */
static void test_place_refused_alike(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load(ctx);
    ntp_calibration cal;
    test_hand_calibration(&cal, "onednn", "m", true);
    static const char *const bad[][1] = {{"c9=ref"}, {"c1=nosuch"}, {"c1"}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ntp_run_opts ro;
        ntp_run_opts_default(&ro);
        ro.backend = "onednn";
        ro.place = bad[k];
        ro.n_place = 1;
        ntp_run_result *r = NULL;
        ntp_status rs = ntp_run(ctx, g, &ro, &r);
        assert_int_not_equal(rs, NTP_STATUS_OK);
        char run_msg[1024];
        snprintf(run_msg, sizeof run_msg, "%s", ntp_ctx_errmsg(ctx));
        ntp_ctx_clear(ctx);
        ntp_predict_opts po;
        ntp_predict_opts_default(&po);
        po.place = bad[k];
        po.n_place = 1;
        ntp_prediction *p = NULL;
        assert_int_equal(ntp_predict_with(ctx, g, &cal, &po, &p), rs);
        assert_null(p);
        assert_string_equal(ntp_ctx_errmsg(ctx), run_msg);
        ntp_ctx_clear(ctx);
    }
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* Another machine's calibration: the rows are this machine's plan's, the
 * run's name for name, priced with that machine's copy coefficients (5 us
 * + 2 x memory, not this one's); the prediction says whether its layouts
 * are the same (same ISA and oneDNN version) or may differ, and why. */
static void test_reorders_other_machine(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load(ctx);
    ntp_env env;
    ntp_env_collect(&env);
    ntp_run_result *r = run_placed(ctx, g, NULL, 0);
    static const struct {
        int isa; /* 0: this machine's, 1: another, 2: not recorded */
        const char *note;
    } cases[] = {
        {0, "(same ISA and onednn version: the same layouts)"},
        {1, "onednn's layouts there may differ: its ISA ("},
        {2, "onednn's layouts there may differ: its ISA was not recorded"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ntp_calibration cal, ref;
        test_hand_calibration(&cal, "onednn", "a colleague's machine", true);
        test_hand_calibration(&ref, "ref", "a colleague's machine", false);
        ntp_family_model *m = &cal.family[NTP_PREDICT_FAMILY_COPY];
        m->coef[NTP_PREDICT_TERM_OVERHEAD] = 5e-6;
        m->coef[NTP_PREDICT_TERM_MEMORY] = 2;
        ntp_predict_backend_version("onednn", cal.backend_version, sizeof cal.backend_version);
        snprintf(cal.cpu_flags, sizeof cal.cpu_flags, "%.255s",
                 cases[k].isa == 0                      ? env.cpu_flags
                 : strcmp(env.cpu_flags, "sse4_2") != 0 ? "sse4_2"
                                                        : "sse4_2 avx2");
        if (cases[k].isa == 2)
            cal.cpu_flags[0] = '\0';
        ntp_prediction *p = predict(ctx, g, &cal, &ref, NULL, 0, true);
        int copies = 0;
        double sum = 0;
        for (int i = 0; i < ntp_run_result_layer_count(r); i++) {
            const ntp_layer_result *l = ntp_run_result_layer(r, i);
            if (strcmp(l->kind, "reorder") != 0 && strcmp(l->kind, "convert") != 0)
                continue;
            const ntp_layer_prediction *cp = test_find_prediction(p, true, l->name);
            if (!cp) {
                print_error("the run's %s row %s is not predicted\n", l->kind, l->name);
                fail();
            }
            assert_int_equal(cp->bytes, l->bytes);
            /* ref's rows under ref's calibration (the bandwidth alone). */
            double gbps = l->bytes <= 65536 ? 200 : 20;
            double want = strcmp(l->backend, "ref") == 0
                              ? test_hand_copy_ms(false, l->bytes)
                              : 1e3 * (5e-6 + 2 * (double)l->bytes / (gbps * 1e9));
            assert_close(cp->predicted_ms, want, 1e-12);
            assert_string_equal(cp->note, "");
            sum += cp->predicted_ms;
            copies++;
        }
        assert_true(copies >= 1);
        assert_int_equal(copies, ntp_prediction_copy_count(p));
        assert_close(ntp_prediction_copies_ms(p), sum, 1e-12);
        if (!strstr(ntp_prediction_copies_note(p), cases[k].note)) {
            print_error("copies_note '%s' lacks '%s'\n", ntp_prediction_copies_note(p),
                        cases[k].note);
            fail();
        }
        ntp_ctx_clear_warnings(ctx);
        ntp_prediction_free(p);
    }
    ntp_run_result_free(r);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* Reorders that cannot be known: one n/a row, out of the total. */
static void test_reorders_unknown(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load(ctx);
    char here[256];
    ntp_machine_key(here, sizeof here);
    ntp_calibration cal, ref;
    test_hand_calibration(&cal, "onednn", "a colleague's machine", true);
    test_hand_calibration(&ref, "ref", "a colleague's machine", false);
    static const struct {
        const char *machine;
        bool reorders;
        const char *note;
    } cases[] = {
        {"a colleague's machine", false, "n/a: known once the plan is prepared"},
        {NULL, false, "n/a: known once the plan is prepared"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *m = cases[k].machine ? cases[k].machine : here;
        snprintf(cal.machine_key, sizeof cal.machine_key, "%s", m);
        snprintf(ref.machine_key, sizeof ref.machine_key, "%s", m);
        ntp_prediction *p = predict(ctx, g, &cal, &ref, NULL, 0, cases[k].reorders);
        assert_int_equal(ntp_prediction_copy_count(p), 1);
        assert_string_equal(ntp_prediction_copy(p, 0)->name, "reorders");
        assert_true(isnan(ntp_prediction_copy(p, 0)->predicted_ms));
        assert_string_equal(ntp_prediction_copy(p, 0)->note, cases[k].note);
        assert_true(ntp_prediction_copies_ms(p) == 0);
        double sum = 0;
        for (int i = 0; i < ntp_prediction_layer_count(p); i++)
            if (isfinite(ntp_prediction_layer(p, i)->predicted_ms))
                sum += ntp_prediction_layer(p, i)->predicted_ms;
        assert_close(ntp_prediction_total_ms(p), sum, 1e-12);
        /* The placement is the run's all the same: pad on ref. */
        assert_string_equal(ntp_prediction_layer(p, 0)->backend, "ref");
        assert_string_equal(ntp_prediction_layer(p, 1)->backend, "onednn");
        ntp_prediction_free(p);
    }
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
        cmocka_unit_test(test_default_placement),     cmocka_unit_test(test_place_middle_on_ref),
        cmocka_unit_test(test_place_last_entry_wins), cmocka_unit_test(test_place_refused_alike),
        cmocka_unit_test(test_reorders_unknown),      cmocka_unit_test(test_reorders_other_machine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
