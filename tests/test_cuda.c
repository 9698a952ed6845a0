/* The CUDA backend (docs/gpu.md).
 *
 * On a machine without a GPU (or a build without the toolkit) the one thing
 * to check is the refusal: `--backend cuda`, a layer's backend="cuda" and
 * --place LAYER=cuda each fail with one line that says why, init refuses
 * the same way, and supports() declines every layer so that drivers that
 * walk every backend skip it. Those tests run everywhere.
 *
 * With a GPU the rest run: every layer family against the reference
 * backend at f32 (relative L2 within 1e-4, TF32 off) and at f16 and bf16
 * (reported, and only bounded loosely), whole topologies, heterogeneous
 * placement with its copy rows, CUDA-graph replay giving the eager pass's
 * bytes, event timing and device memory figures. Without a GPU they report
 * SKIPPED with the reason. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend-impl.h"
#include "exec/exec-impl.h"
#include "machine/machine-cuda-impl.h"
#include "measure/tools-gpu-impl.h"
#include "ntprof/ntprof.h"
#include "support/ctx.h"
#ifdef NTP_HAVE_CUDA
#include "backend/cuda/cuda-impl.h"
#endif

static ntp_graph *load_prec(const char *prec, const char *body)
{
    char xml[16384];
    snprintf(xml, sizeof xml, "<topology name='t' precision='%s'>%s</topology>", prec, body);
    ntp_graph *g = NULL;
    if (ntp_graph_load_xml_memory(test_ctx, xml, strlen(xml), "t.xml", NULL, &g) != NTP_STATUS_OK)
        fail_msg("load: %s", ntp_ctx_errmsg(test_ctx));
    return g;
}

static ntp_graph *load(const char *body)
{
    return load_prec("f32", body);
}

static const char *const tiny_fc =
    "<input name='x' shape='2,8'/><fc name='fc1' units='4'/><relu name='r1'/>";

/* The reason the backend gives, or NULL when a device is there. */
static const char *no_device(char *why, size_t len)
{
    const ntp_backend_i *be = ntp__backend_find("cuda");
    if (!be) {
        snprintf(why, len, "built without the CUDA toolkit");
        return why;
    }
    if (!be->available) {
        snprintf(why, len, "the cuda backend has no available() method");
        return why;
    }
    return be->available(why, len) ? NULL : why;
}

// clang-format off
#define NEED_DEVICE()                                                  \
    do {                                                               \
        char why_[512];                                                \
        if (no_device(why_, sizeof why_)) {                            \
            printf("SKIPPED: %s\n", why_);                             \
            skip();                                                    \
        }                                                              \
    } while (0)
// clang-format on

/* --- refusal (runs everywhere) ------------------------------------------------- */

static void expect_one_line(const char *msg)
{
    assert_null(strchr(msg, '\n'));
    assert_true(strlen(msg) > 0);
}

/* --backend cuda: UNKNOWN_NAME in a build without CUDA, else (no device)
 * UNSUPPORTED with "backend 'cuda': no CUDA device (cudaGetDeviceCount: ...)". */
static void test_refuses_backend(void **state)
{
    (void)state;
    char why[512];
    if (!no_device(why, sizeof why)) {
        printf("SKIPPED: a CUDA device is present; the refusal cannot be observed here\n");
        skip();
    }
    ntp_graph *g = load(tiny_fc);
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    o.backend = "cuda";
    o.iterations = 1;
    o.warmup = 0;
    o.min_time_s = 0;
    ntp_run_result *r = NULL;
    ntp_status st = ntp_run(test_ctx, g, &o, &r);
    assert_null(r);
    const char *msg = ntp_ctx_errmsg(test_ctx);
    expect_one_line(msg);
    if (!ntp__backend_find("cuda")) {
        assert_int_equal(st, NTP_STATUS_UNKNOWN_NAME);
        assert_non_null(strstr(msg, "unknown backend 'cuda'"));
    } else {
        assert_int_equal(st, NTP_STATUS_UNSUPPORTED);
        char want[600];
        snprintf(want, sizeof want, "backend 'cuda': %s", why);
        assert_string_equal(msg, want);
        assert_non_null(strstr(msg, "no CUDA device (cudaGetDeviceCount: "));
    }
    ntp_graph_free(g);
}

/* A layer's backend="cuda" and --place fc1=cuda name the layer and give
 * the same reason. */
static void test_refuses_layer_placement(void **state)
{
    (void)state;
    char why[512];
    if (!no_device(why, sizeof why)) {
        printf("SKIPPED: a CUDA device is present\n");
        skip();
    }
    bool built = ntp__backend_find("cuda") != NULL;
    ntp_graph *g = load("<input name='x' shape='2,8'/><fc name='fc1' units='4' backend='cuda'/>");
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    o.backend = "ref";
    o.iterations = 1;
    o.min_time_s = 0;
    ntp_run_result *r = NULL;
    assert_int_equal(ntp_run(test_ctx, g, &o, &r), NTP_STATUS_UNSUPPORTED);
    expect_one_line(ntp_ctx_errmsg(test_ctx));
    assert_non_null(strstr(ntp_ctx_errmsg(test_ctx), "<fc name='fc1'>"));
    assert_non_null(strstr(ntp_ctx_errmsg(test_ctx),
                           built ? "backend 'cuda': no CUDA device ("
                                 : "asks for backend 'cuda', which this build lacks"));
    ntp_graph_free(g);

    g = load(tiny_fc);
    const char *place[] = {"fc1=cuda"};
    o.place = place;
    o.n_place = 1;
    ntp_status st = ntp_run(test_ctx, g, &o, &r);
    assert_null(r);
    expect_one_line(ntp_ctx_errmsg(test_ctx));
    if (built) {
        assert_int_equal(st, NTP_STATUS_UNSUPPORTED);
        assert_non_null(
            strstr(ntp_ctx_errmsg(test_ctx), "<fc name='fc1'>: backend 'cuda': no CUDA device ("));
    } else {
        assert_int_equal(st, NTP_STATUS_UNKNOWN_NAME);
        assert_non_null(strstr(ntp_ctx_errmsg(test_ctx),
                               "ntp_run_opts.place fc1=cuda: unknown backend 'cuda'"));
    }
    ntp_graph_free(g);
}

/* --place is checked whatever the machine: a layer that does not exist, a
 * malformed entry, an unknown backend. */
static void test_place_errors(void **state)
{
    (void)state;
    ntp_graph *g = load(tiny_fc);
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    o.backend = "ref";
    o.iterations = 1;
    o.min_time_s = 0;
    ntp_run_result *r = NULL;
    const char *bad_layer[] = {"fc2=ref"};
    o.place = bad_layer;
    o.n_place = 1;
    assert_int_equal(ntp_run(test_ctx, g, &o, &r), NTP_STATUS_UNKNOWN_NAME);
    assert_string_equal(
        ntp_ctx_errmsg(test_ctx),
        "ntp_run_opts.place fc2=ref: t.xml has no layer 'fc2'; did you mean 'fc1'?");
    const char *bad_form[] = {"fc1"};
    o.place = bad_form;
    assert_int_equal(ntp_run(test_ctx, g, &o, &r), NTP_STATUS_INVALID_ARGUMENT);
    assert_string_equal(ntp_ctx_errmsg(test_ctx),
                        "ntp_run_opts.place expects LAYER=BACKEND, got 'fc1'");
    const char *bad_backend[] = {"fc1=nosuch"};
    o.place = bad_backend;
    assert_int_equal(ntp_run(test_ctx, g, &o, &r), NTP_STATUS_UNKNOWN_NAME);
    assert_non_null(strstr(ntp_ctx_errmsg(test_ctx),
                           "ntp_run_opts.place fc1=nosuch: unknown backend 'nosuch'"));
    ntp_graph_free(g);
}

/* --place puts a layer on another CPU backend like backend= would: the
 * override is seen in the result (runs everywhere, on ref and the default
 * backend). */
static void test_place_moves_a_layer(void **state)
{
    (void)state;
    if (!ntp__backend_find("blas") && !ntp__backend_find("onednn")) {
        printf("SKIPPED: no CPU backend besides ref in this build\n");
        skip();
    }
    const char *other = ntp__backend_find("onednn") ? "onednn" : "blas";
    ntp_graph *g = load(tiny_fc);
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    o.backend = "ref";
    o.iterations = 1;
    o.warmup = 0;
    o.min_time_s = 0;
    char entry[64];
    snprintf(entry, sizeof entry, "fc1=%s", other);
    const char *place[] = {entry};
    o.place = place;
    o.n_place = 1;
    ntp_run_result *r = NULL;
    if (ntp_run(test_ctx, g, &o, &r) != NTP_STATUS_OK)
        fail_msg("run: %s", ntp_ctx_errmsg(test_ctx));
    int fc = -1, relu = -1;
    for (int i = 0; i < r->n_layers; i++) {
        if (strcmp(r->layers[i].name, "fc1") == 0)
            fc = i;
        if (strcmp(r->layers[i].name, "r1") == 0)
            relu = i;
    }
    assert_true(fc >= 0 && relu >= 0);
    assert_string_equal(r->layers[fc].backend, other);
    assert_string_equal(r->layers[relu].backend, "ref");
    /* No accelerator: no device memory. */
    assert_int_equal(r->memory.device_weight_bytes, 0);
    assert_int_equal(r->memory.device_peak_bytes, 0);
    ntp_run_result_free(r);
    ntp_graph_free(g);
}

/* Without a device, cuda declines every layer (so op-conformance drivers
 * skip it) and init refuses with the same line as the run. */
static void test_declines_without_device(void **state)
{
    (void)state;
    const ntp_backend_i *be = ntp__backend_find("cuda");
    char why[512];
    if (!be || !no_device(why, sizeof why)) {
        printf("SKIPPED: %s\n", be ? "a CUDA device is present" : "built without the CUDA toolkit");
        skip();
    }
    ntp_graph *g = load(tiny_fc);
    for (int i = 0; i < g->n_nodes; i++)
        for (ntp_dtype p = NTP_DTYPE_F32; p <= NTP_DTYPE_F16; p++)
            assert_false(be->supports(g, &g->nodes[i], p));
    ntp_backend_opts bo = {.threads = 1, .precision = NTP_DTYPE_F32};
    void *s = (void *)1;
    assert_int_equal(be->init(test_ctx, &bo, &s), NTP_STATUS_UNSUPPORTED);
    assert_null(s);
    char want[600];
    snprintf(want, sizeof want, "backend 'cuda': %s", why);
    assert_string_equal(ntp_ctx_errmsg(test_ctx), want);
    ntp_graph_free(g);
}

/* --- host-side logic of the backend (runs where it is built) -------------------- */

static void test_rnn_gate_order(void **state)
{
    (void)state;
#ifdef NTP_HAVE_CUDA
    /* cuDNN's LSTM linear layers are i, f, c, o; ONNX's gates i, o, f, c. */
    assert_int_equal(ntp__cuda_rnn_onnx_gate(NTP_OP_LSTM, 0), 0);
    assert_int_equal(ntp__cuda_rnn_onnx_gate(NTP_OP_LSTM, 1), 2);
    assert_int_equal(ntp__cuda_rnn_onnx_gate(NTP_OP_LSTM, 2), 3);
    assert_int_equal(ntp__cuda_rnn_onnx_gate(NTP_OP_LSTM, 3), 1);
    /* cuDNN's GRU: r, z, h; ONNX's z, r, h. */
    assert_int_equal(ntp__cuda_rnn_onnx_gate(NTP_OP_GRU, 0), 1);
    assert_int_equal(ntp__cuda_rnn_onnx_gate(NTP_OP_GRU, 1), 0);
    assert_int_equal(ntp__cuda_rnn_onnx_gate(NTP_OP_GRU, 2), 2);
    assert_int_equal(ntp__cuda_rnn_onnx_gate(NTP_OP_RNN, 0), 0);
    /* A permutation: every ONNX gate is fed exactly once. */
    int seen = 0;
    for (int l = 0; l < 4; l++)
        seen |= 1 << ntp__cuda_rnn_onnx_gate(NTP_OP_LSTM, l);
    assert_int_equal(seen, 0xF);
#else
    printf("SKIPPED: built without the CUDA toolkit\n");
    skip();
#endif
}

/* The backend is never the default: a GPU run is asked for. */
static void test_not_default(void **state)
{
    (void)state;
    assert_non_null(ntp__backend_get(0));
    assert_string_not_equal(ntp__backend_get(0)->name, "cuda");
    const char *list = ntp_backends();
    const char *c = strstr(list, "cuda");
    if (c)
        assert_true(c > list);
}

/* ncu's raw CSV: the header names the metrics in any order, a units row
 * and ncu's own lines are skipped, numbers may carry thousands
 * separators, "n/a" is no value, and a metric ncu left out is not
 * available (runs everywhere). */
static void test_ncu_csv(void **state)
{
    (void)state;
    const char *csv =
        "==PROF== Connected to process 77 (/usr/bin/ntprof)\n"
        "\"ID\",\"Kernel Name\",\"sm__throughput.avg.pct_of_peak_sustained_elapsed\",\"gpu__time_duration.sum\","
        "\"sm__warps_active.avg.pct_of_peak_sustained_active\"\n"
        "\"\",\"\",\"%\",\"nsecond\",\"%\"\n"
        "\"0\",\"void k<float, 2>(int, \"\"x\"\")\",\"40.00\",\"1,500\",\"n/a\"\n"
        "\"1\",\"gemm\",\"80\",\"500\",\"30.5\"\n"
        "==PROF== Disconnected from process 77\n";
    ntp_ncu_totals t;
    char why[256];
    assert_true(ntp__ncu_parse(csv, &t, why, sizeof why));
    assert_int_equal(t.kernels, 2);
    assert_float_equal(t.duration, 2000.0, 1e-9);
    /* SM: (40·1500 + 80·500) / 2000 = 50. */
    assert_true(t.have[1]);
    assert_float_equal(t.pct[1], 50.0, 1e-9);
    /* DRAM was not asked of this output. */
    assert_false(t.have[2]);
    /* Occupancy: only the second kernel has it. */
    assert_true(t.have[3]);
    assert_float_equal(t.pct[3], 30.5, 1e-9);
    assert_false(ntp__ncu_parse("==PROF== no kernels were profiled\n", &t, why, sizeof why));
    assert_non_null(strstr(why, "gpu__time_duration.sum"));
    assert_string_equal(ntp__ncu_metric(2), "dram__throughput.avg.pct_of_peak_sustained_elapsed");
}

/* The GPU's ceilings: refused with one line without a device (or
 * without CUDA in the build); on a device, every figure is positive and
 * the reduced-precision GEMMs beat f32 (tensor cores). */
static void test_gpu_ceilings(void **state)
{
    (void)state;
    ntp_gpu_ceilings c;
    char why[512];
    ntp_status st = ntp__gpu_ceilings_measure(test_ctx, 0.05, &c);
    if (no_device(why, sizeof why)) {
        assert_int_equal(st, NTP_STATUS_UNSUPPORTED);
        expect_one_line(ntp_ctx_errmsg(test_ctx));
        assert_non_null(strstr(ntp_ctx_errmsg(test_ctx),
                               ntp__backend_find("cuda")
                                   ? "GPU ceilings: no CUDA device (cudaGetDeviceCount: "
                                   : "GPU ceilings: built without the CUDA toolkit"));
        return;
    }
    if (st != NTP_STATUS_OK)
        fail_msg("%s", ntp_ctx_errmsg(test_ctx));
    ntp__gpu_ceilings_print(stdout, &c);
    for (int k = 0; k < NTP_GPU_N_PEAKS; k++)
        assert_true(c.gemm_gflops[k] > 0);
    assert_true(c.gemm_gflops[NTP_GPU_F16] > c.gemm_gflops[NTP_GPU_F32]);
    assert_true(c.dram_gbps > 0 && c.h2d_gbps > 0 && c.d2h_gbps > 0);
    /* The same figures reach `ntprof machine`'s ceilings as GPU 0. */
    ntp_machine_info m;
    ntp_machine_opts o;
    ntp_ceilings all;
    ntp_machine_opts_default(&o);
    o.seconds = 0.05;
    o.gemm = false;
    assert_int_equal(ntp_machine_describe(test_ctx, &m), NTP_STATUS_OK);
    assert_int_equal(ntp_machine_measure(test_ctx, &m, &o, &all), NTP_STATUS_OK);
    assert_int_equal(all.n_gpus, 1);
    assert_string_equal(all.gpus[0].name, c.name);
    assert_true(all.gpus[0].gemm_gflops[NTP_GPU_MATH_F16] > 0 && all.gpus[0].dram_gbps > 0);
    assert_string_equal(all.gpu_note, "");
}

/* --- on a device -------------------------------------------------------------- */

/* Run a whole topology on backend `name` (with --place entries), outputs as
 * f32 into out[i] (malloc'd). */
static void run_exec(const ntp_graph *g, const char *name, const char *const *place, int n_place,
                     bool replay, float **out)
{
    const ntp_backend_i *be = ntp__backend_find(name);
    assert_non_null(be);
    ntp_exec_opts o = {.backend = be,
                       .threads = 1,
                       .seed = 7,
                       .first = 0,
                       .last = g->n_nodes - 1,
                       .place = place,
                       .n_place = n_place,
                       .graph_replay = replay};
    ntp_exec x;
    if (ntp__exec_init(test_ctx, &x, g, &o) != NTP_STATUS_OK)
        fail_msg("%s: init: %s", name, ntp_ctx_errmsg(test_ctx));
    /* Three passes: a replayed pass is captured on its second sighting. */
    for (int it = 0; it < 3; it++)
        if (ntp__exec_steps(test_ctx, &x, 0, x.n_steps - 1) != NTP_STATUS_OK)
            fail_msg("%s: run: %s", name, ntp_ctx_errmsg(test_ctx));
    for (int i = 0; i < g->n_outputs; i++) {
        int64_t n = ntp_shape_numel(&g->tensors[g->outputs[i]].shape);
        out[i] = malloc((size_t)n * 8 + 8);
        ntp_dtype dt;
        assert_true(ntp__exec_output(&x, i, out[i], &dt));
    }
    ntp__exec_free(&x);
}

static double rel_l2(const float *a, const float *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(a[i]) && !(isnan(a[i]) && isnan(b[i])))
            return INFINITY;
        double d = (double)a[i] - (double)b[i];
        num += d * d;
        den += (double)b[i] * (double)b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* One topology on cuda and on ref at precision `prec`; f32 must agree
 * within 1e-4, reduced precisions are printed and bounded loosely. */
static void equivalent(const char *what, const char *prec, const char *body)
{
    ntp_graph *g = load_prec(prec, body);
    float *want[NTP_MAX_OUTPUTS] = {0}, *got[NTP_MAX_OUTPUTS] = {0};
    run_exec(g, "ref", NULL, 0, false, want);
    run_exec(g, "cuda", NULL, 0, false, got);
    bool f32 = strcmp(prec, "f32") == 0;
    for (int i = 0; i < g->n_outputs; i++) {
        int64_t n = ntp_shape_numel(&g->tensors[g->outputs[i]].shape);
        double e = rel_l2(got[i], want[i], n);
        printf("%-4s %-28s output %d rel_l2 %.3e%s\n", prec, what, i, e, f32 ? "" : " (reported)");
        if (!(e <= (f32 ? 1e-4 : 5e-2)))
            fail_msg("%s at %s: output %d rel_l2 %.3e", what, prec, i, e);
        free(want[i]);
        free(got[i]);
    }
    ntp_graph_free(g);
}

static const struct {
    const char *what, *body;
} cases[] = {
    {"conv 3x3 pad 1",
     "<input name='x' shape='2,3,9,9'/><conv name='c' filters='8' kernel='3' pad='1'/>"},
    {"conv 1-d stride 2",
     "<input name='x' shape='2,4,17'/><conv name='c' filters='6' kernel='5' stride='2'/>"},
    {"conv grouped dilated",
     "<input name='x' shape='1,8,12,12'/><conv name='c' filters='8' kernel='3' groups='4' dilation='2'/>"},
    {"conv depthwise",
     "<input name='x' shape='2,6,10,10'/><conv name='c' filters='6' kernel='3' pad='1' depthwise='true'/>"},
    {"conv same (asymmetric)",
     "<input name='x' shape='1,3,10,10'/><conv name='c' filters='4' kernel='4' stride='2' pad='same'/>"},
    {"conv 3-d", "<input name='x' shape='1,2,5,6,7'/><conv name='c' filters='3' kernel='3'/>"},
    {"deconv",
     "<input name='x' shape='2,4,5,5'/><deconv name='d' filters='3' kernel='3' stride='2' pad='1' output_padding='1'/>"},
    {"deconv grouped",
     "<input name='x' shape='1,4,6,6'/><deconv name='d' filters='6' kernel='2' stride='2' groups='2'/>"},
    {"fc rank 3", "<input name='x' shape='5,2,12'/><fc name='f' units='7'/>"},
    {"matmul broadcast",
     "<input name='a' shape='3,4,5'/><input name='b' shape='5,6'/><matmul name='m' inputs='a,b'/>"},
    {"matmul transposed",
     "<input name='a' shape='2,5,4'/><input name='b' shape='2,6,5'/><matmul name='m' inputs='a,b' transpose_a='true' transpose_b='true'/>"},
    {"lstm forward", "<input name='x' shape='6,2,5'/><lstm name='l' units='4'/>"},
    {"lstm bidirectional",
     "<input name='x' shape='5,3,4'/><lstm name='l' units='6' direction='bidirectional'/>"},
    {"lstm reverse last",
     "<input name='x' shape='5,2,4'/><lstm name='l' units='3' direction='reverse' sequence='last'/>"},
    {"lstm bidir sum",
     "<input name='x' shape='4,2,3'/><lstm name='l' units='5' direction='bidirectional' merge='sum'/>"},
    {"lstm bidir last",
     "<input name='x' shape='4,2,3'/><lstm name='l' units='5' direction='bidirectional' sequence='last'/>"},
    {"gru bidirectional",
     "<input name='x' shape='5,2,4'/><gru name='g' units='6' direction='bidirectional'/>"},
    {"rnn relu reverse",
     "<input name='x' shape='5,2,4'/><rnn name='r' units='6' activation='relu' direction='reverse'/>"},
    {"maxpool",
     "<input name='x' shape='2,3,9,9'/><maxpool name='p' kernel='3' stride='2' pad='1'/>"},
    {"maxpool ceil dilated",
     "<input name='x' shape='1,2,10,10'/><maxpool name='p' kernel='3' stride='2' dilation='2' ceil_mode='true'/>"},
    {"avgpool include pad",
     "<input name='x' shape='2,3,8,8'/><avgpool name='p' kernel='3' stride='1' pad='1' count_include_pad='true'/>"},
    {"avgpool ceil",
     "<input name='x' shape='1,2,7,7'/><avgpool name='p' kernel='2' stride='2' ceil_mode='true'/>"},
    {"global pools",
     "<input name='x' shape='2,5,4,3'/><global_avgpool name='a'/><global_maxpool name='m' inputs='x'/><add name='s' inputs='a,m'/>"},
    {"batchnorm", "<input name='x' shape='2,4,5,5'/><batchnorm name='b'/>"},
    {"layernorm", "<input name='x' shape='3,4,16'/><layernorm name='l' epsilon='1e-12'/>"},
    {"activations",
     "<input name='x' shape='4,33'/><gelu name='a'/><silu name='b'/><hardswish name='c'/><leaky_relu name='d' alpha='0.1'/><sigmoid name='e'/><tanh name='f'/><relu name='g' max='0.5'/><clip name='h' min='-0.2' max='0.3'/>"},
    {"softmax axis 1", "<input name='x' shape='2,5,3'/><softmax name='s' axis='1'/>"},
    {"add broadcast",
     "<input name='a' shape='2,3,4'/><input name='b' shape='3,1'/><input name='c' shape='4'/><add name='s' inputs='a,b,c'/>"},
    {"mul no full operand",
     "<input name='a' shape='2,1'/><input name='b' shape='1,3'/><mul name='m' inputs='a,b'/>"},
    {"concat split",
     "<input name='a' shape='2,3,4'/><input name='b' shape='2,2,4'/><concat name='c' inputs='a,b' axis='1'/><split name='s' axis='1' sizes='1,4'/><add name='o' inputs='s:0,s:0'/>"},
    {"transpose pad",
     "<input name='x' shape='2,3,4'/><transpose name='t' perm='2,0,1'/><pad name='p' pads='1,0,2,0,1,1' mode='reflect'/>"},
    {"embedding",
     "<input name='i' shape='2,5' dtype='i32'/><embedding name='e' vocab='11' units='6'/>"},
    {"attention self", "<input name='x' shape='2,5,8'/><attention name='a' heads='2'/>"},
    {"attention causal",
     "<input name='x' shape='1,6,12'/><attention name='a' heads='3' causal='true'/>"},
    {"attention cross",
     "<input name='q' shape='2,3,8'/><input name='k' shape='2,5,8'/><input name='v' shape='2,5,8'/><attention name='a' inputs='q,k,v' heads='4'/>"},
};

static void test_equivalence_f32(void **state)
{
    (void)state;
    NEED_DEVICE();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        equivalent(cases[i].what, "f32", cases[i].body);
}

static void test_equivalence_reduced(void **state)
{
    (void)state;
    NEED_DEVICE();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        equivalent(cases[i].what, "f16", cases[i].body);
        equivalent(cases[i].what, "bf16", cases[i].body);
    }
}

/* The shipped topologies that fit a test's time, whole, at f32. */
static void test_models(void **state)
{
    (void)state;
    NEED_DEVICE();
    const char *models[] = {"tiny-cnn.xml", "tiny-rnn.xml", "tiny-attention.xml", "tiny-mlp.xml"};
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/models/%s", NTP_SOURCE_DIR, models[m]);
        ntp_graph *g = NULL;
        if (ntp_graph_load(test_ctx, path, NULL, &g) != NTP_STATUS_OK)
            fail_msg("%s", ntp_ctx_errmsg(test_ctx));
        float *want[NTP_MAX_OUTPUTS] = {0}, *got[NTP_MAX_OUTPUTS] = {0};
        run_exec(g, "ref", NULL, 0, false, want);
        run_exec(g, "cuda", NULL, 0, false, got);
        for (int i = 0; i < g->n_outputs; i++) {
            const ntp_tensor *t = &g->tensors[g->outputs[i]];
            int64_t n = ntp_shape_numel(&t->shape);
            /* Integer outputs (a CTC decoder's labels) must agree exactly. */
            if (t->dtype == NTP_DTYPE_I32) {
                assert_memory_equal(got[i], want[i], (size_t)n * 4);
            } else {
                double e = rel_l2(got[i], want[i], n);
                printf("%-20s output %d rel_l2 %.3e\n", models[m], i, e);
                assert_true(e <= 1e-4);
            }
            free(want[i]);
            free(got[i]);
        }
        ntp_graph_free(g);
    }
}

/* A run on cuda: h2d before the first layer, d2h after the last, device
 * time per row from events, device memory figures; layers between stay on
 * the device (no copy rows). */
static void test_run_rows_and_memory(void **state)
{
    (void)state;
    NEED_DEVICE();
    ntp_graph *g = load("<input name='x' shape='4,64'/><fc name='f1' units='64'/><relu name='r'/>"
                        "<fc name='f2' units='8'/>");
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    o.backend = "cuda";
    o.iterations = 5;
    o.min_time_s = 0;
    ntp_run_result *r = NULL;
    if (ntp_run(test_ctx, g, &o, &r) != NTP_STATUS_OK)
        fail_msg("run: %s", ntp_ctx_errmsg(test_ctx));
    const char *want[] = {"f1:h2d", "f1", "r", "f2", "f2:d2h"};
    assert_int_equal(r->n_layers, 5);
    for (int i = 0; i < 5; i++) {
        assert_string_equal(r->layers[i].name, want[i]);
        assert_string_equal(r->layers[i].backend, "cuda");
        assert_true(r->layers[i].time_ms.median > 0);
    }
    assert_string_equal(r->layers[0].type, "h2d");
    assert_string_equal(r->layers[4].type, "d2h");
    assert_non_null(strstr(r->layers[1].impl, "cublas:gemm_ex:f32"));
    /* Weights: f1 64x64 + 64, f2 8x64 + 8 floats, each allocation rounded
     * to 256 bytes per weight. */
    assert_true(r->memory.device_weight_bytes >= (64 * 64 + 64 + 8 * 64 + 8) * 4);
    assert_true(r->memory.device_activation_bytes >= 4 * 64 * 4);
    assert_true(r->memory.device_peak_bytes >=
                r->memory.device_weight_bytes + r->memory.device_activation_bytes);
    ntp_run_result_free(r);
    ntp_graph_free(g);
}

/* BiLSTM on the GPU, the rest on ref: copies at both boundaries, as rows,
 * and the same output as all-ref. */
static void test_heterogeneous(void **state)
{
    (void)state;
    NEED_DEVICE();
    const char *body =
        "<input name='x' shape='6,2,10'/><fc name='f1' units='8'/><relu name='r1'/>"
        "<lstm name='l' units='5' direction='bidirectional'/><fc name='f2' units='3'/>";
    ntp_graph *g = load(body);
    const char *place[] = {"l=cuda"};
    float *want[NTP_MAX_OUTPUTS] = {0}, *got[NTP_MAX_OUTPUTS] = {0};
    run_exec(g, "ref", NULL, 0, false, want);
    run_exec(g, "ref", place, 1, false, got);
    assert_true(rel_l2(got[0], want[0], 6 * 2 * 3) <= 1e-4);
    free(want[0]);
    free(got[0]);
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    o.backend = "ref";
    o.place = place;
    o.n_place = 1;
    o.iterations = 3;
    o.min_time_s = 0;
    ntp_run_result *r = NULL;
    if (ntp_run(test_ctx, g, &o, &r) != NTP_STATUS_OK)
        fail_msg("run: %s", ntp_ctx_errmsg(test_ctx));
    int h2d = -1, d2h = -1, l = -1;
    for (int i = 0; i < r->n_layers; i++) {
        if (strcmp(r->layers[i].name, "l:h2d") == 0)
            h2d = i;
        if (strcmp(r->layers[i].name, "l") == 0)
            l = i;
        if (strcmp(r->layers[i].name, "l:d2h") == 0)
            d2h = i;
    }
    assert_true(h2d >= 0 && l == h2d + 1 && d2h == l + 1);
    assert_string_equal(r->layers[l].backend, "cuda");
    assert_string_equal(r->layers[0].backend, "ref");
    ntp_run_result_free(r);
    ntp_graph_free(g);
}

/* Graph replay gives the eager passes' bytes. */
static void test_graph_replay(void **state)
{
    (void)state;
    NEED_DEVICE();
    ntp_graph *g = load(
        "<input name='x' shape='2,3,8,8'/><conv name='c' filters='4' kernel='3' pad='1'/>"
        "<relu name='r'/><global_avgpool name='p'/><flatten name='f'/><fc name='o' units='5'/>");
    float *eager[NTP_MAX_OUTPUTS] = {0}, *replay[NTP_MAX_OUTPUTS] = {0};
    run_exec(g, "cuda", NULL, 0, false, eager);
    run_exec(g, "cuda", NULL, 0, true, replay);
    assert_memory_equal(eager[0], replay[0], 2 * 5 * sizeof(float));
    free(eager[0]);
    free(replay[0]);
    ntp_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refuses_backend),
        cmocka_unit_test(test_refuses_layer_placement),
        cmocka_unit_test(test_place_errors),
        cmocka_unit_test(test_place_moves_a_layer),
        cmocka_unit_test(test_declines_without_device),
        cmocka_unit_test(test_rnn_gate_order),
        cmocka_unit_test(test_not_default),
        cmocka_unit_test(test_ncu_csv),
        cmocka_unit_test(test_gpu_ceilings),
        cmocka_unit_test(test_equivalence_f32),
        cmocka_unit_test(test_equivalence_reduced),
        cmocka_unit_test(test_models),
        cmocka_unit_test(test_run_rows_and_memory),
        cmocka_unit_test(test_heterogeneous),
        cmocka_unit_test(test_graph_replay),
    };
    return cmocka_run_group_tests(tests, test_ctx_setup, test_ctx_teardown);
}
