/* Training backward on the CUDA backend (docs/train.md, docs/gpu.md).
 *
 * With a GPU: every backward cuDNN and cuBLAS run (conv with groups,
 * depthwise, dilation, 1-d and unequal padding; fc with and without bias;
 * matmul with either or both operands transposed and a B shared over the
 * batch; max, average and global pooling; batch norm over [N, C], [N, C,
 * W] and [N, C, H, W]; relu, clipped relu, sigmoid, tanh; softmax and
 * log-softmax) against the reference engine's double on the same forward:
 * every gradient, the inputs' too, within 1e-5 of its tensor's largest
 * value + 1e-8, as oneDNN's backward is held (tests/test_train_grad.c).
 * A layer before a batch norm has no bias: that bias's gradient is 0 in
 * exact arithmetic and f32 rounding elsewhere (up to 1.5e-7 on oneDNN).
 * The layers without a CUDA backward fall back to ref, and the result says
 * which engine ran each layer.
 *
 * Without a GPU (or without the CUDA backend in the build) the backward
 * cannot run: the trainer's refusal is checked (one line, the device
 * probe's reason) and the test exits 77 with the reason. This test has
 * not yet run on a GPU (docs/gpu.md). */
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
#include "ntprof/ntprof.h"
#include "support/train-vs-ref.h"
#include "train/train-impl.h"

static ntp_graph *load(ntp_ctx *ctx, const char *xml)
{
    ntp_graph *g = NULL;
    ntp_load_opts lo = {0};
    lo.max_memory = -1;
    ntp_status st = ntp_graph_load_xml_memory(ctx, xml, strlen(xml), "case.xml", &lo, &g);
    if (st)
        fail_msg("load: %s", ntp_ctx_errmsg(ctx));
    return g;
}

/* Each backward against the reference engine's (tv_backend_vs_ref), with
 * the layers' `bwd by` checked on a training run on cuda. */
static void cuda_vs_ref(const char *xml, const char *const *by, int n_by)
{
    tv_backend_vs_ref("cuda", xml, NTP_LOSS_CROSS_ENTROPY, true, 4, by, n_by, NULL);
}

/* Convolutions (stride 2 with an end padding below its begin, which
 * cuDNN's symmetric padding computes alike; dilation with groups;
 * depthwise without bias; one whose end padding adds outputs stays on
 * ref), batch norm, relu, global average pooling, fc with and without
 * bias, tanh. */
static void test_conv_fc(void **state)
{
    (void)state;
    const char *cnn =
        "<topology name='cnn' precision='f32' batch='2'>"
        "<input name='x' shape='2,4,8,8' dtype='f32'/>"
        "<conv name='c1' filters='6' kernel='3' stride='2' pad='1,1,0,0' bias='false'/>"
        "<batchnorm name='bn'/><relu name='r1'/>"
        "<conv name='c2' filters='4' kernel='3' pad='2' dilation='2' groups='2'/>"
        "<conv name='dw' filters='4' kernel='3' pad='1' groups='4' bias='false'/>"
        "<conv name='ep' filters='4' kernel='3' pad='0,0,2,2'/>"
        "<global_avgpool name='gap'/><flatten name='fl'/>"
        "<fc name='fc1' units='5'/><tanh name='t'/>"
        "<fc name='fc2' units='3' bias='false'/>"
        "</topology>";
    const char *const by[] = {"c1",   "cuda", "bn",   "cuda", "r1",  "cuda", "c2",
                              "cuda", "dw",   "cuda", "ep",   "ref", "gap",  "cuda",
                              "fc1",  "cuda", "t",    "cuda", "fc2", "cuda"};
    cuda_vs_ref(cnn, by, (int)(sizeof by / sizeof *by));
    /* 1-d: a conv of height 1 to cuDNN, batch norm over [N, C, W]. */
    const char *seq = "<topology name='seq' precision='f32' batch='3'>"
                      "<input name='x' shape='3,5,9' dtype='f32'/>"
                      "<conv name='c' filters='4' kernel='3' stride='2' pad='1' bias='false'/>"
                      "<batchnorm name='bn'/><relu name='r' max='0.6'/>"
                      "<flatten name='fl'/><fc name='fc' units='4'/>"
                      "</topology>";
    const char *const by1[] = {"c", "cuda", "bn", "cuda", "r", "cuda", "fc", "cuda"};
    cuda_vs_ref(seq, by1, 8);
}

/* Pooling: max with padding, average counting the padding and not, global
 * max (1-d) and average; gelu and leaky relu between stay on ref. */
static void test_pooling(void **state)
{
    (void)state;
    const char *pools =
        "<topology name='pools' precision='f32' batch='2'>"
        "<input name='x' shape='2,3,9,9' dtype='f32'/>"
        "<conv name='c' filters='4' kernel='3'/>"
        "<maxpool name='mp' kernel='3' stride='2' pad='1'/><sigmoid name='s'/>"
        "<avgpool name='ai' kernel='2' stride='1' pad='1' count_include_pad='true'/>"
        "<gelu name='g'/><avgpool name='ae' kernel='2' stride='2' pad='1'/>"
        "<leaky_relu name='lr' alpha='0.2'/><global_avgpool name='gap'/>"
        "<flatten name='fl'/><fc name='fc' units='3'/>"
        "</topology>";
    const char *const by[] = {"mp", "cuda", "s",  "cuda", "ai",  "cuda", "g",  "ref",
                              "ae", "cuda", "lr", "ref",  "gap", "cuda", "fc", "cuda"};
    cuda_vs_ref(pools, by, 16);
    const char *gmax = "<topology name='gmax' precision='f32' batch='2'>"
                       "<input name='x' shape='2,3,7' dtype='f32'/>"
                       "<conv name='c' filters='4' kernel='3'/><global_maxpool name='gmp'/>"
                       "<flatten name='fl'/><fc name='fc' units='3'/>"
                       "</topology>";
    const char *const by1[] = {"c", "cuda", "gmp", "cuda", "fc", "cuda"};
    cuda_vs_ref(gmax, by1, 6);
}

/* Batch norm over [N, C] after an fc, softmax over a middle axis and
 * log-softmax (not fused into the loss), sigmoid; layer norm stays on
 * ref. */
static void test_norm_softmax(void **state)
{
    (void)state;
    const char *norms =
        "<topology name='norms' precision='f32' batch='3'>"
        "<input name='x' shape='3,4,6' dtype='f32'/>"
        "<fc name='a' units='6' bias='false'/><batchnorm name='bn'/><sigmoid name='si'/>"
        "<layernorm name='ln' axis='1'/><softmax name='sm' axis='1'/>"
        "<fc name='b' units='5'/><log_softmax name='ls' axis='-1'/>"
        "<flatten name='fl'/><fc name='c' units='6' bias='false'/><batchnorm name='bn2'/>"
        "<tanh name='t'/><fc name='out' units='4'/>"
        "</topology>";
    const char *const by[] = {"a",   "cuda", "bn", "cuda", "si",  "cuda", "ln", "ref",
                              "sm",  "cuda", "b",  "cuda", "ls",  "cuda", "c",  "cuda",
                              "bn2", "cuda", "t",  "cuda", "out", "cuda"};
    cuda_vs_ref(norms, by, (int)(sizeof by / sizeof *by));
}

/* Matmul of two activations: transposed B, transposed A, both, none; a B
 * shared over the batch (its gradient over the batch folded into the
 * rows), plain and transposed; an A broadcast over the batch stays on
 * ref. */
static void test_matmul(void **state)
{
    (void)state;
    const char *mm = "<topology name='mm' precision='f32' batch='2'>"
                     "<input name='x' shape='2,3,4' dtype='f32'/>"
                     "<input name='z' shape='3,4' dtype='f32'/>"
                     "<input name='z2' shape='6,4' dtype='f32'/>"
                     "<fc name='q' units='5'/><fc name='k' inputs='x' units='5'/>"
                     "<matmul name='s' inputs='q,k' transpose_b='true'/><tanh name='t'/>"
                     "<fc name='v' inputs='x' units='6'/>"
                     "<matmul name='c' inputs='t,v'/>"
                     "<matmul name='ct' inputs='v,t' transpose_a='true'/>"
                     "<matmul name='tt' inputs='v,t' transpose_a='true' transpose_b='true'/>"
                     "<fc name='wz' inputs='z' units='6'/><fc name='w2' inputs='z2' units='2'/>"
                     "<matmul name='f' inputs='c,wz' transpose_b='true'/>"
                     "<matmul name='g' inputs='c,w2'/>"
                     "<matmul name='ba' inputs='wz,v' transpose_b='true'/>"
                     "<flatten name='f1' inputs='f'/><flatten name='f2' inputs='g'/>"
                     "<flatten name='f3' inputs='tt'/><flatten name='f4' inputs='ct'/>"
                     "<flatten name='f5' inputs='ba'/>"
                     "<concat name='cat' inputs='f1,f2,f3,f4,f5' axis='1'/>"
                     "<fc name='out' units='3'/>"
                     "</topology>";
    const char *const by[] = {"s", "cuda", "c",  "cuda", "ct", "cuda", "tt", "cuda", "f", "cuda",
                              "g", "cuda", "ba", "ref",  "wz", "cuda", "w2", "cuda"};
    cuda_vs_ref(mm, by, 18);
}

/* The training forward on cuDNN and cuBLAS against the reference engine:
 * three SGD steps (lr 0.05) of a residual CNN on each; every step's loss
 * within 2e-6 relative and every weight and buffer (batch norm's running
 * statistics, which the trainer moves from the batch statistics the CUDA
 * forward gives) within 2e-6 of its tensor's largest value after them, the
 * bounds oneDNN's forward is held to (f32 sums of up to 400 terms here,
 * about √n·u = 1.2e-6 at worst). The first loss must differ from the
 * reference's (an f32 forward ran); forward_by is checked layer by layer
 * (the add, concat, dropout, reflect pad and clip on ref). */
static void test_forward(void **state)
{
    (void)state;
    const char *xml = "<topology name='resfwd' precision='f32' batch='4'>"
                      "<input name='x' shape='4,3,10,10' dtype='f32'/>"
                      "<conv name='c1' filters='8' kernel='3' pad='1'/>"
                      "<batchnorm name='bn1'/><relu name='r1'/>"
                      "<maxpool name='mp' kernel='3' stride='2' pad='1'/>"
                      "<conv name='c2' filters='8' kernel='3' pad='1' bias='false'/>"
                      "<batchnorm name='bn2'/>"
                      "<add name='res' inputs='bn2,mp'/><relu name='r2'/>"
                      "<conv name='c3' inputs='r2' filters='4' kernel='1'/>"
                      "<concat name='cat' inputs='r2,c3' axis='1'/>"
                      "<dropout name='dp'/><pad name='pd' pads='0,0,1,1,0,0,1,1' mode='reflect'/>"
                      "<conv name='c4' filters='6' kernel='3' stride='2'/><batchnorm name='bn4'/>"
                      "<clip name='cl' min='-1' max='2'/><sigmoid name='sg'/>"
                      "<global_avgpool name='gap'/><flatten name='fl'/>"
                      "<fc name='fc' units='5'/>"
                      "</topology>";
    const char *const by[] = {"c1", "cuda", "bn1", "cuda", "r1",  "cuda", "mp", "cuda",
                              "c2", "cuda", "res", "ref",  "cat", "ref",  "dp", "ref",
                              "pd", "ref",  "c4",  "cuda", "bn4", "cuda", "cl", "ref",
                              "sg", "cuda", "gap", "cuda", "fl",  "cuda", "fc", "cuda"};
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load(ctx, xml);
    ntp_trainer *t[2] = {NULL, NULL};
    ntp_train_result *r[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        ntp_train_opts o;
        ntp_train_opts_init(&o);
        o.backend = k ? "cuda" : NULL;
        o.steps = 3;
        o.lr = 0.05;
        o.dropout = 0.2;
        if (ntp_trainer_new(ctx, g, &o, &t[k]) || ntp_trainer_run(ctx, t[k], &r[k]))
            fail_msg("trainer: %s", ntp_ctx_errmsg(ctx));
    }
    for (int i = 0; i < 3; i++) {
        double a = r[0]->losses[i], b = r[1]->losses[i];
        if (!(fabs(a - b) <= 2e-6 * fabs(a)))
            fail_msg("step %d: loss on cuda %.9g, ref %.9g", i, b, a);
    }
    assert_true(r[0]->losses[0] != r[1]->losses[0]);
    ntp_train_state *a = ntp__trainer_state(t[0]), *b = ntp__trainer_state(t[1]);
    int compared = 0;
    for (int ti = 0; ti < g->n_tensors; ti++) {
        const ntp_tensor *x = &g->tensors[ti];
        if (x->kind != NTP_TENSOR_WEIGHT && x->kind != NTP_TENSOR_BUFFER)
            continue;
        int64_t n = ntp_shape_numel(&x->shape);
        double most = 0.0;
        for (int64_t i = 0; i < n; i++)
            most = fmax(most, fabs(a->val[ti][i]));
        for (int64_t i = 0; i < n; i++)
            if (!(fabs(a->val[ti][i] - b->val[ti][i]) <= 2e-6 * most))
                fail_msg("%s[%lld] after 3 steps: cuda %.9g, ref %.9g (largest %.3g)", x->name,
                         (long long)i, b->val[ti][i], a->val[ti][i], most);
        compared++;
    }
    assert_true(compared >= 6);
    for (int k = 0; k < (int)(sizeof by / sizeof *by); k += 2) {
        int i = 0;
        while (i < r[1]->n_layers && strcmp(r[1]->layers[i].name, by[k]) != 0)
            i++;
        if (i == r[1]->n_layers)
            fail_msg("no layer '%s'", by[k]);
        if (strcmp(r[1]->layers[i].forward_by, by[k + 1]) != 0)
            fail_msg("layer '%s' forward on %s, expected %s", by[k], r[1]->layers[i].forward_by,
                     by[k + 1]);
    }
    for (int k = 0; k < 2; k++) {
        ntp_train_result_free(r[k]);
        ntp_trainer_free(t[k]);
    }
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* Mixed precision on CUDA: conv and fc run their backward on the GPU as
 * f32 kernels reading the bf16 values (the backward does not honour
 * ntp_backward_args.bf16), so each reports an f32 backward, where oneDNN's
 * bf16 primitives report bf16 (test_train_cli). */
static void test_mixed_label(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load(ctx, "<topology name='mix' precision='f32' batch='4'>"
                             "<input name='x' shape='4,3,8,8' dtype='f32'/>"
                             "<conv name='c1' filters='4' kernel='3' pad='1'/><relu name='r1'/>"
                             "<flatten name='fl'/><fc name='fc' units='5'/></topology>");
    const ntp_backend_i *be = ntp__backend_find("cuda");
    ntp_train_opts o;
    ntp_train_opts_init(&o);
    o.backend = "cuda";
    o.steps = 1;
    o.precision = NTP_DTYPE_BF16;
    ntp_trainer *t = NULL;
    ntp_train_result *r = NULL;
    if (ntp_trainer_new(ctx, g, &o, &t) || ntp_trainer_run(ctx, t, &r))
        fail_msg("trainer: %s", ntp_ctx_errmsg(ctx));
    int seen = 0;
    for (int i = 0; i < r->n_layers; i++) {
        const char *name = r->layers[i].name;
        if (strcmp(name, "c1") != 0 && strcmp(name, "fc") != 0)
            continue;
        int k = ntp__graph_find_node(g, name);
        assert_true(k >= 0);
        const ntp_node *n = &g->nodes[k];
        assert_true(ntp__be_supports_backward(be, g, n));
        assert_false(ntp__be_backward_bf16(be, g, n));
        assert_string_equal(r->layers[i].backward_by, "cuda");
        assert_non_null(r->layers[i].backward_precision);
        assert_string_equal(r->layers[i].backward_precision, "f32");
        seen++;
    }
    assert_int_equal(seen, 2);
    ntp_train_result_free(r);
    ntp_trainer_free(t);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* Without a device: `train --backend cuda` is refused with the probe's
 * reason, on one line, and the backend claims no layer's backward or
 * training forward. */
static void test_refusal(void **state)
{
    (void)state;
    const ntp_backend_i *be = ntp__backend_find("cuda");
    char why[512];
    assert_non_null(be);
    assert_false(ntp__be_available(be, why, sizeof why));
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load(ctx, "<topology name='t' precision='f32' batch='2'>"
                             "<input name='x' shape='2,8' dtype='f32'/>"
                             "<fc name='fc' units='4'/><relu name='r'/></topology>");
    for (int i = 0; i < g->n_nodes; i++) {
        assert_false(ntp__be_supports_backward(be, g, &g->nodes[i]));
        assert_false(ntp__be_supports_train_forward(be, g, &g->nodes[i]));
    }
    ntp_train_opts o;
    ntp_train_opts_init(&o);
    o.backend = "cuda";
    ntp_trainer *t = NULL;
    assert_int_equal(ntp_trainer_new(ctx, g, &o, &t), NTP_STATUS_UNSUPPORTED);
    assert_null(t);
    const char *msg = ntp_ctx_errmsg(ctx);
    char want[600];
    snprintf(want, sizeof want, "backend 'cuda': %s", why);
    assert_string_equal(msg, want);
    assert_null(strchr(msg, '\n'));
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

int main(void)
{
    const ntp_backend_i *be = ntp__backend_find("cuda");
    if (!be) {
        printf("SKIPPED: the cuda backend is not built here (no CUDA toolkit with cuDNN 9)\n");
        return 77;
    }
    char why[512];
    if (!ntp__be_available(be, why, sizeof why)) {
        const struct CMUnitTest refusal[] = {cmocka_unit_test(test_refusal)};
        if (cmocka_run_group_tests(refusal, NULL, NULL))
            return 1;
        printf("SKIPPED: the backward checks need a GPU: %s\n", why);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_fc),      cmocka_unit_test(test_pooling),
        cmocka_unit_test(test_norm_softmax), cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_forward),      cmocka_unit_test(test_mixed_label),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
