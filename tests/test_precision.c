/* Reduced-precision paths end to end: ONNX models at i8, the accuracy
 * figures against f32 (top-k agreement computed by hand), the memory the
 * run report gives for weights stored at the run's precision, and the
 * header's count of layers a backend ran at the chosen precision. */
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

#include "exec/exec-impl.h"
#include "io/io-impl.h"
#include "ntprof/ntprof.h"
#include "support/models.h"
#include "support/tmpdir.h"

static ntp_graph *load_mem(ntp_ctx *ctx, const char *xml, const char *precision)
{
    ntp_load_opts lo = {0};
    lo.set_precision = precision && ntp_dtype_parse(precision, &lo.precision) == NTP_STATUS_OK;
    ntp_graph *g = NULL;
    if (ntp_graph_load_xml_memory(ctx, xml, strlen(xml), "test.xml", &lo, &g) != NTP_STATUS_OK)
        fail_msg("load: %s", ntp_ctx_errmsg(ctx));
    return g;
}

static void quick_opts(ntp_run_opts *o, const char *backend)
{
    ntp_run_opts_default(o);
    o->backend = backend;
    o->warmup = 0;
    o->iterations = 1;
    o->min_time_s = 0;
}

/* --- top-k agreement ------------------------------------------------------------ */

/* Hand-computed cases: the baseline's top-1 class must be among the k
 * highest of the output, a tie with it counting against. */
static void test_topk_agree_hand(void **state)
{
    (void)state;
    double t1, t5;
    /* Row 0: same order. Row 1: the best two swap (top-1 lost, top-5 kept).
     * Row 2: the baseline's best falls to 6th place (both lost). Row 3: the
     * 5th and 6th classes swap, which changes the top-5 *set* but not where
     * the best class is: both agree. */
    const float b[4 * 6] = {
        6, 5, 4, 3, 2, 1, /**/ 6, 5, 4, 3, 2, 1, /**/ 6, 5, 4, 3, 2, 1, /**/ 6, 5, 4, 3, 2, 1,
    };
    const float y[4 * 6] = {
        6, 5, 4, 3, 2, 1, /**/ 5, 6, 4, 3, 2, 1, /**/ 1, 5, 4, 3, 2, 6, /**/ 6, 5, 4, 3, 1, 2,
    };
    ntp__topk_agree(y, b, 4, 6, &t1, &t5);
    assert_float_equal(t1, 2.0 / 4.0, 1e-12);
    assert_float_equal(t5, 3.0 / 4.0, 1e-12);

    /* A tie with the best class counts against it: two classes quantised to
     * one value cannot be told apart. A constant output agrees with nothing;
     * with four others tied it is still within the top 5. */
    const float bt[3 * 6] = {6, 5, 4, 3, 2, 1, /**/ 6, 5, 4, 3, 2, 1, /**/ 6, 5, 4, 3, 2, 1};
    const float yt[3 * 6] = {6, 6, 4, 3, 2, 1, /**/ 0, 0, 0, 0, 0, 0, /**/ 6, 6, 6, 6, 6, 1};
    ntp__topk_agree(yt, bt, 3, 6, &t1, &t5);
    assert_float_equal(t1, 0.0, 1e-12);
    assert_float_equal(t5, 2.0 / 3.0, 1e-12);

    /* NaN: a NaN output where the best class is disagrees; a NaN elsewhere
     * counts as ahead of it; a baseline row of NaN only disagrees. */
    const float bn[3 * 5] = {5, 4, 3, 2, 1, /**/ 5, 4, 3, 2, 1, /**/ NAN, NAN, NAN, NAN, NAN};
    const float yn[3 * 5] = {NAN, 4, 3, 2, 1, /**/ 5, NAN, 3, 2, 1, /**/ 5, 4, 3, 2, 1};
    ntp__topk_agree(yn, bn, 3, 5, &t1, &t5);
    assert_float_equal(t1, 0.0, 1e-12);
    assert_float_equal(t5, 1.0 / 3.0, 1e-12);

    /* Not a classifier: fewer than 5 classes, or no rows. */
    ntp__topk_agree(y, b, 4, 4, &t1, &t5);
    assert_true(t1 == -1 && t5 == -1);
    ntp__topk_agree(y, b, 0, 6, &t1, &t5);
    assert_true(t1 == -1 && t5 == -1);
}

/* The report's figures at i8 on the reference backend, from a given input
 * whose i8 storage (scale max|y| / 127 = 1/127) makes ties: in row 0 the
 * f32 5th and 6th classes (0.6 and 0.598) both become 76, so a top-5 *set*
 * comparison would call the rows different although the best class (1.0)
 * stays first; in row 1 the best class (1.0 -> 127) ties with 0.998 (-> 127).
 * Top-1 agrees in row 0 only, top-5 in both. */
static void test_i8_accuracy_ties(void **state)
{
    (void)state;
    static const char xml[] = "<topology name='t' precision='f32'>"
                              "<input name='x' shape='2,8' dtype='f32'/>"
                              "<relu name='probs'/>"
                              "</topology>";
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load_mem(ctx, xml, "i8");
    char in[512], spec[600];
    snprintf(in, sizeof in, "%s/ties.npy", test_tmpdir);
    const float x[16] = {1.0f, 0.9f, 0.8f, 0.7f,   0.598f, 0.6f, 0.1f, 0.0f,
                         0.2f, 0.3f, 1.0f, 0.998f, 0.1f,   0.0f, 0.0f, 0.0f};
    ntp_shape s = {2, {2, 8}};
    assert_int_equal(ntp__npy_write(ctx, in, NTP_DTYPE_F32, &s, x), NTP_STATUS_OK);
    snprintf(spec, sizeof spec, "x=%s", in);
    const char *inputs[] = {spec};
    ntp_run_opts o;
    quick_opts(&o, "ref");
    o.inputs = inputs;
    o.n_inputs = 1;
    ntp_run_result *r = NULL;
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_OK);
    assert_int_equal(r->n_accuracy, 1);
    printf("top-1 %.3f, top-5 %.3f, rel L2 %.3g\n", r->accuracy[0].top1, r->accuracy[0].top5,
           r->accuracy[0].rel_l2);
    assert_float_equal(r->accuracy[0].top1, 0.5, 1e-12);
    assert_float_equal(r->accuracy[0].top5, 1.0, 1e-12);
    assert_true(r->accuracy[0].rel_l2 > 0 && r->accuracy[0].rel_l2 < 0.01);
    ntp_run_result_free(r);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* --- ONNX at i8 ------------------------------------------------------------------ */

/* A torchvision-style residual network exported by PyTorch (eval mode, so
 * the exporter folds each batch norm into its Conv and a Relu reads the
 * Conv's output directly, as in torchvision's ResNet-50). */
static const char torch_script[] =
    "import sys, torch, torch.nn as nn\n"
    "class B(nn.Module):\n"
    "    def __init__(s, c, o, stride):\n"
    "        super().__init__()\n"
    "        s.conv1 = nn.Conv2d(c, o, 1, bias=False); s.bn1 = nn.BatchNorm2d(o)\n"
    "        s.conv2 = nn.Conv2d(o, o, 3, stride, 1, bias=False); s.bn2 = nn.BatchNorm2d(o)\n"
    "        s.relu = nn.ReLU(inplace=True)\n"
    "        s.down = nn.Sequential(nn.Conv2d(c, o, 1, stride, bias=False), nn.BatchNorm2d(o))\n"
    "    def forward(s, x):\n"
    "        y = s.relu(s.bn1(s.conv1(x)))\n"
    "        y = s.bn2(s.conv2(y))\n"
    "        return s.relu(y + s.down(x))\n"
    "class M(nn.Module):\n"
    "    def __init__(s):\n"
    "        super().__init__()\n"
    "        s.conv1 = nn.Conv2d(3, 8, 7, 2, 3, bias=False); s.bn1 = nn.BatchNorm2d(8)\n"
    "        s.relu = nn.ReLU(inplace=True); s.maxpool = nn.MaxPool2d(3, 2, 1)\n"
    "        s.layer1 = B(8, 16, 2); s.avgpool = nn.AdaptiveAvgPool2d(1)\n"
    "        s.fc = nn.Linear(16, 10)\n"
    "    def forward(s, x):\n"
    "        x = s.maxpool(s.relu(s.bn1(s.conv1(x))))\n"
    "        return s.fc(torch.flatten(s.avgpool(s.layer1(x)), 1))\n"
    "torch.manual_seed(0)\n"
    "m = M().eval()\n"
    "for mod in m.modules():\n"
    "    if isinstance(mod, nn.BatchNorm2d):\n"
    "        mod.running_mean.uniform_(-0.1, 0.1); mod.running_var.uniform_(0.5, 1.5)\n"
    "torch.onnx.export(m, torch.randn(2, 3, 32, 32), sys.argv[1], opset_version=13,\n"
    "                  input_names=['input'], output_names=['logits'])\n";

/* Write the model with /usr/bin/python3 and PyTorch; false when either is
 * missing (the test is then skipped). */
static bool export_torch_model(const char *onnx)
{
    char py[600], cmd[1400];
    snprintf(py, sizeof py, "%s/export.py", test_tmpdir);
    FILE *f = fopen(py, "w");
    assert_non_null(f);
    fputs(torch_script, f);
    fclose(f);
    if (access("/usr/bin/python3", X_OK) != 0 ||
        system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
        return false;
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s >/dev/null 2>&1", py, onnx);
    if (system(cmd) != 0)
        fail_msg("exporting the test model with PyTorch failed: %s", cmd);
    return true;
}

/* Issue 13 (5): --precision i8 on a PyTorch-exported ResNet refused
 * "node '/relu/Relu': input '/conv1/Conv_output_0' is UNDEFINED at run
 * time", because the importer took the i8 storage of a quantised activation
 * for ONNX integer data. It loads, runs on every backend that is built and
 * stays close to f32. */
static void test_onnx_i8_torch_resnet(void **state)
{
    (void)state;
    char onnx[600];
    snprintf(onnx, sizeof onnx, "%s/resnet-mini.onnx", test_tmpdir);
    if (!export_torch_model(onnx)) {
        printf("no /usr/bin/python3 with torch: skipped\n");
        skip();
    }
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_load_opts lo = {0};
    lo.set_precision = true;
    lo.precision = NTP_DTYPE_I8;
    ntp_graph *g = NULL;
    if (ntp_graph_load(ctx, onnx, &lo, &g) != NTP_STATUS_OK)
        fail_msg("load at i8: %s", ntp_ctx_errmsg(ctx));
    const char *backends[] = {"ref", NULL};
    for (int b = 0; b < 2; b++) {
        ntp_run_opts o;
        quick_opts(&o, backends[b]);
        o.fuse = b == 1;
        ntp_run_result *r = NULL;
        if (ntp_run(ctx, g, &o, &r) != NTP_STATUS_OK)
            fail_msg("run at i8 on %s: %s", backends[b] ? backends[b] : "the default backend",
                     ntp_ctx_errmsg(ctx));
        assert_int_equal(r->n_accuracy, 1);
        printf("%s: relative L2 %.4f, top-1 %.2f, top-5 %.2f\n", r->backend, r->accuracy[0].rel_l2,
               r->accuracy[0].top1, r->accuracy[0].top5);
        assert_true(r->accuracy[0].rel_l2 > 0 && r->accuracy[0].rel_l2 < 0.1);
        assert_true(r->accuracy[0].top5 == 1.0);
        ntp_run_result_free(r);
    }
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* ONNX integers stay refused where a layer computes on floats, at i8 too:
 * a graph input typed INT8 is integer data, not a quantised activation. */
static void test_onnx_i8_integer_input_refused(void **state)
{
    (void)state;
    char onnx[600], cmd[1400];
    snprintf(onnx, sizeof onnx, "%s/int8-relu.onnx", test_tmpdir);
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c 'import sys, onnx\n"
             "from onnx import helper as h, TensorProto as T\n"
             "g = h.make_graph([h.make_node(\"Relu\", [\"x\"], [\"y\"])], \"g\",\n"
             "    [h.make_tensor_value_info(\"x\", T.INT8, [1, 8])],\n"
             "    [h.make_tensor_value_info(\"y\", T.INT8, [1, 8])])\n"
             "onnx.save(h.make_model(g, opset_imports=[h.make_opsetid(\"\", 13)]), sys.argv[1])' "
             "%s >/dev/null 2>&1",
             onnx);
    if (access("/usr/bin/python3", X_OK) != 0 || system(cmd) != 0) {
        printf("no /usr/bin/python3 with onnx: skipped\n");
        skip();
    }
    const char *precisions[] = {"f32", "i8"};
    for (int p = 0; p < 2; p++) {
        ntp_ctx *ctx = ntp_ctx_init();
        ntp_load_opts lo = {0};
        lo.set_precision =
            precisions[p] && ntp_dtype_parse(precisions[p], &lo.precision) == NTP_STATUS_OK;
        ntp_graph *g = NULL;
        assert_int_not_equal(ntp_graph_load(ctx, onnx, &lo, &g), NTP_STATUS_OK);
        printf("%s: %s\n", precisions[p], ntp_ctx_errmsg(ctx));
        assert_non_null(strstr(ntp_ctx_errmsg(ctx), "INT8"));
        assert_non_null(strstr(ntp_ctx_errmsg(ctx), "floating-point"));
        ntp_ctx_free(ctx);
    }
}

/* --- memory at i8 ------------------------------------------------------------ */

/* Issue 13 (5): at i8 the memory line said weights 14.2 MB on MobileNetV2
 * where analyze says 3.54 MB: it counted the f32 copies the engine keeps.
 * tiny-mlp holds 3,200 matrix values (fc1 16x32, fc2 32x64, fc3 64x10) and
 * 96 bias values: on an int8 backend the weights are 3,200 bytes of int8
 * and 96 f32 biases (3,584 bytes), beside 12,800 bytes of f32 copies; the
 * reference backend holds all 3,296 values as f32 and no copies. */
static void test_i8_weight_bytes(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = test_load_model(ctx, "tiny-mlp.xml", NULL, 0, "i8");
    ntp_analysis *an = NULL;
    assert_int_equal(ntp_graph_analyze(ctx, g, &an), NTP_STATUS_OK);
    assert_int_equal(an->weight_bytes, 3296); /* analyze: every value as int8 */
    ntp_run_opts o;
    quick_opts(&o, "ref");
    o.accuracy = false;
    ntp_run_result *r = NULL;
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_OK);
    assert_int_equal(r->memory.weight_bytes, 3296 * 4);
    assert_int_equal(r->memory.weight_copy_bytes, 0);
    ntp_run_result_free(r);
    if (strstr(ntp_backends(), "onednn")) {
        quick_opts(&o, "onednn");
        o.accuracy = false;
        assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_OK);
        int fc_on_onednn = 0;
        for (int i = 0; i < r->n_layers; i++)
            fc_on_onednn +=
                strcmp(r->layers[i].type, "fc") == 0 && strcmp(r->layers[i].backend, "onednn") == 0;
        assert_int_equal(fc_on_onednn, 3);
        assert_int_equal(r->memory.weight_bytes, 3200 + 96 * 4);
        assert_int_equal(r->memory.weight_copy_bytes, 3200 * 4);
        ntp_run_result_free(r);
    }
    ntp_analysis_free(an);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* --- where the layers ran ------------------------------------------------------- */

static char *report_text(ntp_ctx *ctx, const ntp_run_result *r, ntp_format fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(ntp_report_write_run(ctx, r, fmt, f), NTP_STATUS_OK);
    fclose(f);
    return buf;
}

/* Issue 13 (5): oneDNN runs nothing at f16 (0 of tiny-mlp's 10 layers; its
 * staging memcpy is an inlay), yet the header named only onednn. It now
 * says where the layers ran, in the table and the JSON; a run whose backend
 * ran every layer (the reference backend) has no such line. */
static void test_placement_line(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = test_load_model(ctx, "tiny-mlp.xml", NULL, 0, "f16");
    ntp_run_opts o;
    quick_opts(&o, "ref");
    o.accuracy = false;
    ntp_run_result *r = NULL;
    assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_OK);
    char *t = report_text(ctx, r, NTP_FORMAT_TABLE);
    assert_null(strstr(t, "ref ran ")); /* the placement line, "B ran N of M layers" */
    free(t);
    t = report_text(ctx, r, NTP_FORMAT_JSON);
    assert_non_null(strstr(t, "\"placement\": {\n    \"layers\": 10,\n    \"on_backend\": 10,\n"
                              "    \"elsewhere\": {}\n  }"));
    free(t);
    ntp_run_result_free(r);
    if (strstr(ntp_backends(), "onednn")) {
        quick_opts(&o, "onednn");
        o.accuracy = false;
        assert_int_equal(ntp_run(ctx, g, &o, &r), NTP_STATUS_OK);
        t = report_text(ctx, r, NTP_FORMAT_TABLE);
        printf("%.300s\n", t);
        assert_non_null(strstr(t, "\nonednn ran 0 of 10 layers at f16; all ran on ref\n"));
        free(t);
        t = report_text(ctx, r, NTP_FORMAT_JSON);
        assert_non_null(strstr(t, "\"placement\": {\n    \"layers\": 10,\n    \"on_backend\": 0,\n"
                                  "    \"elsewhere\": {\n      \"ref\": 10\n    }\n  }"));
        free(t);
        ntp_run_result_free(r);
    }
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topk_agree_hand),
        cmocka_unit_test(test_i8_accuracy_ties),
        cmocka_unit_test(test_onnx_i8_torch_resnet),
        cmocka_unit_test(test_onnx_i8_integer_input_refused),
        cmocka_unit_test(test_i8_weight_bytes),
        cmocka_unit_test(test_placement_line),
    };
    return cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown);
}
