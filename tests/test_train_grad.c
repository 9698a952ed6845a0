/* Training backward passes against finite differences, in double: for
 * small networks covering every layer the engine trains, each gradient
 * (weights and the inputs) at sampled elements equals the central
 * difference (L(x+h) - L(x-h)) / 2h of the loss. Then hand-computed cases:
 * a one-layer fc with cross-entropy, batch norm's gradient that sums to
 * zero, and one step of each optimizer against PyTorch's formulas. */
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
#include "support/train-vs-ref.h"
#include "train/train-impl.h"

void ntp__trainer_update(ntp_trainer *t, double *times);

static ntp_graph *load(ntp_ctx *ctx, const char *xml)
{
    ntp_graph *g = NULL;
    ntp_load_opts lo = {0};
    lo.max_memory = -1;
    ntp_status st = ntp_graph_load_xml_memory(ctx, xml, strlen(xml), "case.xml", &lo, &g);
    if (st)
        fprintf(stderr, "load: %s\n", ntp_ctx_errmsg(ctx));
    assert_int_equal(st, NTP_STATUS_OK);
    return g;
}

/* Compare every gradient with finite differences at up to `per` elements of
 * each weight and input; returns the number of elements checked. */
static int check_fd(const char *xml, ntp_loss loss, int per)
{
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load(ctx, xml);
    ntp_train_opts o;
    ntp_train_opts_init(&o);
    o.loss = loss;
    o.dropout = 0.3;
    ntp_trainer *t = NULL;
    ntp_status st = ntp__trainer_new_ex(ctx, g, &o, true, &t);
    if (st)
        fprintf(stderr, "trainer: %s\n", ntp_ctx_errmsg(ctx));
    assert_int_equal(st, NTP_STATUS_OK);
    ntp_train_state *s = ntp__trainer_state(t);
    double L0;
    assert_int_equal(ntp__trainer_pass(ctx, t, true, &L0, NULL), NTP_STATUS_OK);
    assert_true(isfinite(L0));
    const ntp_graph *gi = (const ntp_graph *)g;
    int checked = 0;
    for (int ti = 0; ti < gi->n_tensors; ti++) {
        const ntp_tensor *x = &gi->tensors[ti];
        bool want = x->kind == NTP_TENSOR_WEIGHT ||
                    (x->kind == NTP_TENSOR_INPUT && x->dtype == NTP_DTYPE_F32);
        if (!want || !s->grad[ti])
            continue;
        int64_t n = ntp_shape_numel(&x->shape);
        double *ana = malloc((size_t)n * sizeof *ana);
        /* The passes below clear the activations' gradients (an input's
         * among them): the gradients again, then this tensor's. */
        assert_int_equal(ntp__trainer_pass(ctx, t, true, &L0, NULL), NTP_STATUS_OK);
        memcpy(ana, s->grad[ti], (size_t)n * sizeof *ana);
        int64_t stride = n > per ? n / per : 1;
        for (int64_t i = 0; i < n; i += stride) {
            double v = s->val[ti][i], h = 1e-6 * (fabs(v) > 1 ? fabs(v) : 1.0), lp, lm;
            s->val[ti][i] = v + h;
            assert_int_equal(ntp__trainer_pass(ctx, t, false, &lp, NULL), NTP_STATUS_OK);
            s->val[ti][i] = v - h;
            assert_int_equal(ntp__trainer_pass(ctx, t, false, &lm, NULL), NTP_STATUS_OK);
            s->val[ti][i] = v;
            double num = (lp - lm) / (2 * h), err = fabs(num - ana[i]);
            double tol = 1e-7 + 1e-5 * fmax(fabs(num), fabs(ana[i]));
            if (err > tol)
                fail_msg("%s[%lld]: analytic %.12g, finite difference %.12g (error %.3g)", x->name,
                         (long long)i, ana[i], num, err);
            checked++;
        }
        free(ana);
    }
    ntp_trainer_free(t);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
    return checked;
}

static void test_fc_mlp(void **state)
{
    (void)state;
    const char *xml = "<topology name='mlp' precision='f32' batch='3'>"
                      "<input name='x' shape='3,5' dtype='f32'/>"
                      "<fc name='fc1' units='7'/><relu name='r'/>"
                      "<fc name='fc2' units='4' bias='false'/><softmax name='sm'/>"
                      "</topology>";
    assert_true(check_fd(xml, NTP_LOSS_CROSS_ENTROPY, 12) > 30);
}

static void test_conv_net(void **state)
{
    (void)state;
    const char *xml = "<topology name='cnn' precision='f32' batch='2'>"
                      "<input name='x' shape='2,4,7,7' dtype='f32'/>"
                      "<conv name='c1' filters='4' kernel='3' stride='2' pad='1'/>"
                      "<batchnorm name='bn'/><relu name='r1'/>"
                      "<conv name='c2' filters='4' kernel='3' pad='2' dilation='2' groups='2'/>"
                      "<conv name='dw' filters='4' kernel='3' pad='1' groups='4' bias='false'/>"
                      "<maxpool name='mp' kernel='2' stride='1'/>"
                      "<avgpool name='ap' kernel='2' stride='1' pad='1' count_include_pad='true'/>"
                      "<global_avgpool name='gap'/><flatten name='fl'/><fc name='fc' units='3'/>"
                      "</topology>";
    assert_true(check_fd(xml, NTP_LOSS_CROSS_ENTROPY, 10) > 50);
}

static void test_conv1d_globalmax(void **state)
{
    (void)state;
    const char *xml = "<topology name='c1d' precision='f32' batch='2'>"
                      "<input name='x' shape='2,3,9' dtype='f32'/>"
                      "<conv name='c' filters='5' kernel='3' stride='2'/>"
                      "<tanh name='t'/><global_maxpool name='gmp'/><flatten name='fl'/>"
                      "</topology>";
    assert_true(check_fd(xml, NTP_LOSS_MSE, 10) > 20);
}

/* Darknet's heads (darknet_head), each on a conv's [2,16,3,3] output: a
 * [yolo] (2 anchors of 3 classes: logistic and copied channels) and two
 * [region]s with softmax over 3 classes, one with the background (the
 * softmax takes the objectness's channel too), each differentiated. */
static void test_darknet_heads(void **state)
{
    (void)state;
    const char *xml = "<topology name='dh' precision='f32' batch='2'>"
                      "<input name='x' shape='2,3,3,3' dtype='f32'/>"
                      "<conv name='c1' inputs='x' filters='16' kernel='1'/>"
                      "<darknet_head name='yolo' anchors='2' classes='3'/>"
                      "<conv name='c2' inputs='x' filters='16' kernel='1'/>"
                      "<darknet_head name='region' head='region' anchors='2' classes='3' "
                      "softmax='true'/>"
                      "<conv name='c3' inputs='x' filters='16' kernel='1'/>"
                      "<darknet_head name='region_bg' head='region' anchors='2' classes='3' "
                      "softmax='true' background='true'/>"
                      "<add name='sum' inputs='yolo,region,region_bg'/>"
                      "</topology>";
    assert_true(check_fd(xml, NTP_LOSS_MSE, 12) > 40);
}

static void test_eltwise_norm(void **state)
{
    (void)state;
    const char *xml =
        "<topology name='elt' precision='f32' batch='2'>"
        "<input name='x' shape='2,3,6' dtype='f32'/>"
        "<layernorm name='ln' axis='-1'/>"
        "<fc name='a' units='6' inputs='ln'/><gelu name='g'/>"
        "<fc name='b' units='6' inputs='ln'/><sigmoid name='s'/>"
        "<fc name='c' units='6' inputs='ln'/><silu name='si'/>"
        "<mul name='m' inputs='g,s'/><sub name='d' inputs='m,si'/>"
        "<leaky_relu name='lr' alpha='0.2'/><softplus name='sp'/><hardswish name='hs'/>"
        "<add name='bc' inputs='hs,x'/>"
        "<concat name='cat' inputs='bc,ln' axis='2'/><dropout name='dr'/>"
        "<reshape name='rs' shape='2,36'/><tanh name='th'/><exp name='ex'/><neg name='ng'/>"
        "<abs name='ab'/><clip name='cl' min='-0.5' max='3'/>"
        "<fc name='out' units='4'/><log_softmax name='ls'/>"
        "</topology>";
    assert_true(check_fd(xml, NTP_LOSS_CROSS_ENTROPY, 8) > 60);
    assert_true(check_fd(xml, NTP_LOSS_MSE, 8) > 60);
}

static void test_matmul_softmax_axis(void **state)
{
    (void)state;
    /* Attention-like: scores = q kᵀ with a broadcast batch, softmax over
     * the keys (not fused into the loss: mse), then p v. */
    const char *xml = "<topology name='mm' precision='f32' batch='2'>"
                      "<input name='x' shape='2,3,4' dtype='f32'/>"
                      "<fc name='q' units='4' inputs='x'/><fc name='k' units='4' inputs='x'/>"
                      "<fc name='v' units='4' inputs='x'/>"
                      "<matmul name='s' inputs='q,k' transpose_b='true'/>"
                      "<softmax name='p' axis='-1'/>"
                      "<matmul name='o' inputs='p,v'/>"
                      "</topology>";
    assert_true(check_fd(xml, NTP_LOSS_MSE, 10) > 40);
}

static void test_embedding(void **state)
{
    (void)state;
    const char *xml = "<topology name='emb' precision='f32' batch='2'>"
                      "<input name='ids' shape='2,5' dtype='i64'/>"
                      "<embedding name='e' vocab='11' units='3'/><flatten name='f'/>"
                      "<fc name='o' units='4'/></topology>";
    assert_true(check_fd(xml, NTP_LOSS_CROSS_ENTROPY, 20) > 20);
}

/* One fc, hand-computed: x = [1, 2], W = 0, b = 0 → logits 0, p = 1/2 each;
 * label 0: loss ln 2, dlogits = [-1/2, 1/2], dW = dlogits ⊗ x, db =
 * dlogits; one SGD step at lr 0.1 gives W = [[0.05, 0.1], [-0.05, -0.1]]. */
static void test_hand_fc(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load(ctx, "<topology name='h' precision='f32' batch='1'>"
                             "<input name='x' shape='1,2' dtype='f32'/>"
                             "<fc name='fc' units='2'/></topology>");
    ntp_train_opts o;
    ntp_train_opts_init(&o);
    o.lr = 0.1;
    ntp_trainer *t = NULL;
    assert_int_equal(ntp_trainer_new(ctx, g, &o, &t), NTP_STATUS_OK);
    ntp_train_state *s = ntp__trainer_state(t);
    const ntp_node *n = &g->nodes[0];
    double *x = s->val[g->inputs[0]], *W = s->val[n->w[0]], *b = s->val[n->w[1]];
    x[0] = 1;
    x[1] = 2;
    memset(W, 0, 4 * sizeof *W);
    memset(b, 0, 2 * sizeof *b);
    /* The label is generated; read it back through the loss's gradient. */
    double L;
    assert_int_equal(ntp__trainer_pass(ctx, t, true, &L, NULL), NTP_STATUS_OK);
    assert_true(fabs(L - log(2.0)) < 1e-15);
    double *db = s->grad[n->w[1]];
    int label = db[0] < 0 ? 0 : 1;
    double want0 = label == 0 ? -0.5 : 0.5;
    assert_true(fabs(db[0] - want0) < 1e-15 && fabs(db[1] + want0) < 1e-15);
    assert_true(fabs(s->grad[n->w[0]][1] - 2 * want0) < 1e-15);
    ntp__trainer_update(t, NULL);
    assert_true(fabs(W[0] + 0.1 * want0) < 1e-15 && fabs(W[1] + 0.2 * want0) < 1e-15);
    assert_true(fabs(W[3] - 0.2 * want0) < 1e-15);
    ntp_trainer_free(t);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* The optimizers against PyTorch's update rules, written out by hand for
 * one value over three steps with gradients 1, -2, 0.5. */
static void test_optimizers(void **state)
{
    (void)state;
    const double gs[3] = {1.0, -2.0, 0.5};
    /* SGD with momentum 0.9, lr 0.1: buf = g1, then 0.9·buf + g. */
    ntp_optim mo = {NTP_OPTIMIZER_MOMENTUM, 0.1, 0.9, 0, 0, 0};
    double p = 1.0, m = 0.0, v = 0.0, buf = 0.0, want = 1.0;
    for (int k = 0; k < 3; k++) {
        ntp__train_update(&mo, k + 1, &p, &gs[k], &m, &v, 1);
        buf = k == 0 ? gs[k] : 0.9 * buf + gs[k];
        want -= 0.1 * buf;
    }
    assert_true(fabs(p - want) < 1e-15);
    assert_true(fabs(want - (1.0 - 0.1 * (1.0 + (-1.1) + (0.5 - 0.99)))) < 1e-15);
    /* Adam lr 0.01, betas (0.9, 0.999), eps 1e-8: the first step moves by
     * lr·sign(g) almost exactly (m̂ = g, v̂ = g²). */
    ntp_optim ad = {NTP_OPTIMIZER_ADAM, 0.01, 0, 0.9, 0.999, 1e-8};
    p = 1.0;
    m = v = 0.0;
    ntp__train_update(&ad, 1, &p, &gs[0], &m, &v, 1);
    assert_true(fabs(p - (1.0 - 0.01 * 1.0 / (1.0 + 1e-8))) < 1e-15);
    double mm = 0.1, vv = 0.001, pp = p;
    ntp__train_update(&ad, 2, &p, &gs[1], &m, &v, 1);
    mm = 0.9 * mm + 0.1 * -2.0;
    vv = 0.999 * vv + 0.001 * 4.0;
    pp -= 0.01 / (1 - 0.81) * mm / (sqrt(vv) / sqrt(1 - 0.999 * 0.999) + 1e-8);
    assert_true(fabs(p - pp) < 1e-15);
}

/* Refusals: layers without a backward named together, a loss that does not
 * fit the output. */
static void test_refusals(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load(ctx, "<topology name='r' precision='f32' batch='2'>"
                             "<input name='x' shape='2,3,8' dtype='f32'/>"
                             "<lstm name='l1' units='4'/><floor name='tp'/>"
                             "<flatten name='f'/><fc name='o' units='3'/></topology>");
    ntp_train_plan *p = NULL;
    assert_int_equal(ntp_train_plan_make(ctx, g, NULL, &p), NTP_STATUS_UNSUPPORTED);
    const char *msg = ntp_ctx_errmsg(ctx);
    assert_non_null(strstr(msg, "1 layer without a backward: 'tp' (floor)"));
    ntp_graph_free(g);
    g = load(ctx, "<topology name='r' precision='f32' batch='2'>"
                  "<input name='x' shape='2,3,8' dtype='f32'/>"
                  "<fc name='o' units='3'/></topology>");
    assert_int_equal(ntp_train_plan_make(ctx, g, NULL, &p), NTP_STATUS_SHAPE_ERROR);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "cross_entropy needs an output [batch, classes]"));
    /* The library names the API, never the CLI's flags (cli-messages.c
     * words these as --loss mse, --input, --input-lengths). */
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "(use NTP_LOSS_MSE)"));
    assert_null(strstr(ntp_ctx_errmsg(ctx), "--"));
    ntp_graph_free(g);
    g = load(ctx, "<topology name='r' precision='f32' batch='2'>"
                  "<input name='x' shape='2,3' dtype='f32'/>"
                  "<fc name='o' units='3'/></topology>");
    ntp_train_opts o;
    ntp_train_opts_init(&o);
    const char *inputs[] = {"x"};
    o.inputs = inputs;
    o.n_inputs = 1;
    ntp_trainer *t = NULL;
    assert_int_equal(ntp_trainer_new(ctx, g, &o, &t), NTP_STATUS_INVALID_ARGUMENT);
    assert_string_equal(ntp_ctx_errmsg(ctx),
                        "ntp_train_opts.inputs expects NAME=FILE.npy, got 'x'");
    assert_string_equal(ntp_ctx_error_part(ctx, NTP_ERROR_OPTION), "ntp_train_opts.inputs");
    ntp_train_opts_init(&o);
    o.input_lengths = "lengths.npy";
    assert_int_equal(ntp_trainer_new(ctx, g, &o, &t), NTP_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx),
                           ": ntp_train_opts.input_lengths and ntp_train_opts.target_lengths are "
                           "for NTP_LOSS_CTC, not cross_entropy"));
    assert_null(t);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* Backward through time: a bidirectional LSTM (outputs concatenated) into
 * a GRU with both directions summed, then a ReLU RNN; and a reverse tanh
 * RNN and a forward LSTM that keep their last step only. Every weight of
 * every gate and direction, and the input, against finite differences. */
static void test_recurrent(void **state)
{
    (void)state;
    const char *seq = "<topology name='rec' precision='f32' batch='2'>"
                      "<input name='x' shape='4,2,3' dtype='f32'/>"
                      "<lstm name='l' units='3' direction='bidirectional'/>"
                      "<gru name='g' units='3' direction='bidirectional' merge='sum'/>"
                      "<rnn name='r' units='2' activation='relu'/>"
                      "</topology>";
    int checked = check_fd(seq, NTP_LOSS_MSE, 14);
    assert_true(checked > 120);
    const char *last = "<topology name='last' precision='f32' batch='2'>"
                       "<input name='x' shape='5,2,3' dtype='f32'/>"
                       "<rnn name='r' units='3' direction='reverse'/>"
                       "<lstm name='l' units='3' sequence='last' bias='false'/>"
                       "<fc name='o' units='3'/>"
                       "</topology>";
    checked = check_fd(last, NTP_LOSS_CROSS_ENTROPY, 12);
    assert_true(checked > 60);
}

/* The CTC loss against torch.nn.CTCLoss (PyTorch 1.13, float64, blank
 * C - 1, reduction "mean"): logits x[t][n][c] = 2·sin(1.3t + 0.7n + 0.37c)
 * for T 6, N 2, C 4, labels [1, 1, 2] (a repeat: the blank between is
 * forced) and [0]. The expected loss and gradient are torch's, printed by
 * tests/train_ctc_ref.py; both agree within 1e-10 relative. Then finite
 * differences through a network (fc then the decoder the loss replaces). */
static void test_ctc(void **state)
{
    (void)state;
    enum { T = 6, N = 2, C = 4, S = 3 };
    static const double want_grad[T * N * C] = {
        0.012909043907437414, -0.07533529349464951,  0.04972480817819457,  0.012701441409017522,
        -0.07801151377396068, 0.12219310799209966,   0.15356414056142462,  -0.1977457347795636,
        0.04781878868333892,  -0.025466000378890095, 0.041436393388280486, -0.0637891816927293,
        -0.2140618289724985,  0.1499667059723838,    0.08125784663794616,  -0.017162723637831445,
        0.08942235090357693,  -0.05826889070759088,  0.021502120787049536, -0.05265558098303559,
        -0.18342196793596474, 0.1256647497899013,    0.07204298294628261,  -0.014285764800219168,
        0.06011688143271096,  -0.04699626778694879,  0.008088416374427927, -0.021209030020190093,
        -0.06361166383122781, 0.08839128165484766,   0.12113562535108006,  -0.14591524317469992,
        0.014193206891608766, -0.020520650766740995, -0.02166738009014481, 0.02799482396527704,
        0.004066158728453412, 0.06730516496312039,   0.13896046858216454,  -0.21033179227373835,
        0.015385836836752527, 0.03028432437751143,   -0.06527155309612345, 0.019601391881859494,
        0.07981772291315979,  0.1360304493528816,    0.14628974391834967,  -0.36213791618439106};
    double x[T * N * C], dx[T * N * C], scratch[6 * 4 + 2 * 6 * 7 + 4];
    for (int t = 0; t < T; t++)
        for (int n = 0; n < N; n++)
            for (int c = 0; c < C; c++)
                x[(t * N + n) * C + c] = 2.0 * sin(1.3 * t + 0.7 * n + 0.37 * c);
    const double labels[N * S] = {1, 1, 2, 0, -1, -1};
    assert_int_equal(ntp__train_ctc_scratch(T, C, S), (int64_t)(sizeof scratch / sizeof *scratch));
    assert_int_equal(ntp__train_ctc_frames_needed(labels, S), 4);
    double loss = ntp__train_ctc(x, labels, NULL, T, N, C, S, dx, scratch);
    assert_true(fabs(loss - 3.2230790895585932) <= 1e-10 * 3.2230790895585932);
    for (int i = 0; i < T * N * C; i++)
        if (fabs(dx[i] - want_grad[i]) > 1e-10 * fmax(fabs(want_grad[i]), 1e-3))
            fail_msg("ctc gradient [%d]: %.17g, torch %.17g", i, dx[i], want_grad[i]);
    /* Varied lengths (tests/train_ctc_ref.py varied): N 3, labels [1, 1, 2],
     * [0] and [2, 0], input lengths 4 (exactly the frames [1, 1, 2] needs),
     * 6 and 5; the frames past a sequence's length take no gradient. */
    enum { N3 = 3 };
    static const double want_varied[T * N3 * C] = {0.008606029271624958,
                                                   -0.09337338305579262,
                                                   0.03314987211879645,
                                                   0.051617481665371216,
                                                   -0.052007675849307114,
                                                   0.08146207199473311,
                                                   0.10237609370761641,
                                                   -0.13183048985304238,
                                                   0.05217276052135273,
                                                   0.051630367416039526,
                                                   -0.10995600013994095,
                                                   0.006152872202548681,
                                                   0.03187919245555932,
                                                   0.0339539043939764,
                                                   0.027624262258853692,
                                                   -0.09345735910838941,
                                                   -0.14270788598166567,
                                                   0.09997780398158919,
                                                   0.05417189775863078,
                                                   -0.011441815758554295,
                                                   -0.0223112512171806,
                                                   0.04421118474832918,
                                                   -0.020144936363331787,
                                                   -0.0017549971678167877,
                                                   0.05961490060238475,
                                                   -0.081194721815827,
                                                   0.014334747191366388,
                                                   0.007245074022075855,
                                                   -0.12228131195730982,
                                                   0.0837764998599342,
                                                   0.04802865529752174,
                                                   -0.00952384320014611,
                                                   -0.04998427306738102,
                                                   0.038051811698956946,
                                                   0.024581518785663507,
                                                   -0.012649057417239427,
                                                   0.040077920955140685,
                                                   0.026020764625520627,
                                                   -0.08953480489827273,
                                                   0.023436119317611432,
                                                   -0.042407775887485205,
                                                   0.058927521103231774,
                                                   0.0807570835673867,
                                                   -0.09727682878313328,
                                                   -0.010295529041391962,
                                                   0.021865425894616618,
                                                   0.04027652150162113,
                                                   -0.05184641835484578,
                                                   0.0,
                                                   0.0,
                                                   0.0,
                                                   0.0,
                                                   0.002710772485635608,
                                                   0.044870109975413595,
                                                   0.0926403123881097,
                                                   -0.1402211948491589,
                                                   -2.5822772502366438e-05,
                                                   0.0322593919431552,
                                                   0.05179234321056646,
                                                   -0.08402591238121929,
                                                   0.0,
                                                   0.0,
                                                   0.0,
                                                   0.0,
                                                   0.05321181527543987,
                                                   0.0906869662352544,
                                                   0.09752649594556645,
                                                   -0.24142527745626072,
                                                   0.0,
                                                   0.0,
                                                   0.0,
                                                   0.0};
    double x3[T * N3 * C], dx3[T * N3 * C];
    for (int t = 0; t < T; t++)
        for (int n = 0; n < N3; n++)
            for (int c = 0; c < C; c++)
                x3[(t * N3 + n) * C + c] = 2.0 * sin(1.3 * t + 0.7 * n + 0.37 * c);
    const double labels3[N3 * S] = {1, 1, 2, 0, -1, -1, 2, 0, -1};
    const int64_t in_len[N3] = {4, 6, 5};
    for (int i = 0; i < T * N3 * C; i++)
        dx3[i] = 1e300; /* every element written, the tail frames 0 */
    loss = ntp__train_ctc(x3, labels3, in_len, T, N3, C, S, dx3, scratch);
    assert_true(fabs(loss - 2.87724156098909) <= 1e-10 * 2.87724156098909);
    for (int i = 0; i < T * N3 * C; i++)
        if (fabs(dx3[i] - want_varied[i]) > 1e-10 * fmax(fabs(want_varied[i]), 1e-3))
            fail_msg("ctc gradient, varied lengths [%d]: %.17g, torch %.17g", i, dx3[i],
                     want_varied[i]);
    const char *xml = "<topology name='ctc' precision='f32' batch='2'>"
                      "<input name='x' shape='7,2,3' dtype='f32'/>"
                      "<fc name='fc' units='5'/>"
                      "<ctc_decode name='d' mode='greedy' alphabet='abcd'/>"
                      "</topology>";
    assert_true(check_fd(xml, NTP_LOSS_CTC, 12) > 30);
}

/* Backward on oneDNN (--backend onednn): conv (stride 2 whose end padding
 * differs from its begin, dilation with groups, depthwise without bias, a
 * 1-d conv), fc (with and without bias), pooling, the activations, softmax
 * and the norms run oneDNN's backward primitives in f32; every gradient, inputs' too,
 * equals the reference engine's double within f32 rounding (1e-5 of the
 * tensor's largest, + 1e-8). The layers without a oneDNN backward fall
 * back to ref, and the result says which ran each layer. */
/* The accessors' range on a training result: rows 0 .. count - 1 only,
 * nothing from NULL; an f32 run has no f32 twin of its losses. */
static void check_accessors(const ntp_train_result *r)
{
    assert_null(ntp_train_result_layer(r, ntp_train_result_layer_count(r)));
    assert_null(ntp_train_result_layer(r, -1));
    assert_int_equal(ntp_train_result_layer_count(NULL), 0);
    assert_null(ntp_train_result_losses(NULL));
    assert_null(ntp_train_result_losses_f32(r));
    assert_non_null(ntp_train_result_step(r));
}

static void onednn_vs_ref_loss(const char *xml, ntp_loss lossk, bool input_grads,
                               const char *const *by, int n_by)
{
    tv_backend_vs_ref("onednn", xml, lossk, input_grads, 6, by, n_by, check_accessors);
}

static void onednn_vs_ref(const char *xml, const char *const *by, int n_by)
{
    onednn_vs_ref_loss(xml, NTP_LOSS_CROSS_ENTROPY, true, by, n_by);
}

static void test_onednn_backward(void **state)
{
    (void)state;
    if (!strstr(ntp_backends(), "onednn")) {
        print_message("oneDNN is not built here: skipped\n");
        skip();
    }
    const char *cnn = "<topology name='cnn' precision='f32' batch='2'>"
                      "<input name='x' shape='2,4,8,8' dtype='f32'/>"
                      "<conv name='c1' filters='6' kernel='3' stride='2' pad='1'/>"
                      "<batchnorm name='bn'/><relu name='r1'/>"
                      "<conv name='c2' filters='4' kernel='3' pad='2' dilation='2' groups='2'/>"
                      "<conv name='dw' filters='4' kernel='3' pad='1' groups='4' bias='false'/>"
                      "<global_avgpool name='gap'/><flatten name='fl'/>"
                      "<fc name='fc1' units='5'/><tanh name='t'/>"
                      "<fc name='fc2' units='3' bias='false'/>"
                      "</topology>";
    const char *const by[] = {"c1",  "onednn", "bn", "onednn", "c2",  "onednn",
                              "dw",  "onednn", "r1", "onednn", "gap", "onednn",
                              "fc1", "onednn", "t",  "onednn", "fc2", "onednn"};
    onednn_vs_ref(cnn, by, 18);
    /* Pooling: max with padding (its workspace from oneDNN's forward),
     * average counting the padding and not, global average (a gradient at
     * every position, the padded windows' too); the activations between. */
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
    const char *const by2[] = {"mp", "onednn", "s",  "onednn", "ai",  "onednn", "g",  "onednn",
                               "ae", "onednn", "lr", "onednn", "gap", "onednn", "fc", "onednn"};
    onednn_vs_ref(pools, by2, 16);
    /* Norms and the rest: batch norm over [N, C, W], layer norm over two
     * dims, softmax over a middle axis and log-softmax, not fused into the
     * loss; clip and hardswish stay on ref. */
    const char *norms = "<topology name='norms' precision='f32' batch='3'>"
                        "<input name='x' shape='3,4,6' dtype='f32'/>"
                        "<fc name='a' units='6'/><batchnorm name='bn'/><silu name='si'/>"
                        "<layernorm name='ln' axis='1'/><softmax name='sm' axis='1'/>"
                        "<fc name='b' units='5'/><log_softmax name='ls' axis='-1'/>"
                        "<exp name='ex'/><neg name='ng'/><abs name='ab'/><softplus name='sp'/>"
                        "<tanh name='t'/><hardswish name='hs'/><clip name='cl' min='-0.5' max='3'/>"
                        "<flatten name='fl'/><fc name='out' units='4'/>"
                        "</topology>";
    const char *const by3[] = {"a",  "onednn", "bn", "onednn", "si",  "onednn", "ln", "onednn",
                               "sm", "onednn", "b",  "onednn", "ls",  "onednn", "ex", "onednn",
                               "ng", "onednn", "ab", "onednn", "sp",  "onednn", "t",  "onednn",
                               "hs", "ref",    "cl", "ref",    "out", "onednn"};
    onednn_vs_ref(norms, by3, 30);
    const char *seq = "<topology name='seq' precision='f32' batch='3'>"
                      "<input name='x' shape='3,5,9' dtype='f32'/>"
                      "<conv name='c' filters='4' kernel='3' stride='2' pad='1'/>"
                      "<relu name='r'/><flatten name='fl'/><fc name='fc' units='4'/>"
                      "</topology>";
    const char *const by1[] = {"c", "onednn", "r", "onednn", "fc", "onednn"};
    onednn_vs_ref(seq, by1, 6);
    const char *gmax = "<topology name='gmax' precision='f32' batch='2'>"
                       "<input name='x' shape='2,3,7' dtype='f32'/>"
                       "<conv name='c' filters='4' kernel='3'/><global_maxpool name='gmp'/>"
                       "<flatten name='fl'/><fc name='fc' units='3'/>"
                       "</topology>";
    const char *const by4[] = {"gmp", "onednn", "fc", "onednn"};
    onednn_vs_ref(gmax, by4, 4);
    /* Matmul of two activations: transposed B, transposed A, both, none;
     * a B shared over the batch (2-d, its gradient over the batch folded
     * into the rows), plain and transposed; an A broadcast over the batch
     * stays on ref. */
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
    const char *const by5[] = {"s",  "onednn", "c",  "onednn", "ct", "onednn",
                               "tt", "onednn", "f",  "onednn", "g",  "onednn",
                               "ba", "ref",    "wz", "onednn", "w2", "onednn"};
    onednn_vs_ref(mm, by5, 18);
    /* Transposed convolutions: stride, padding with output padding and
     * groups, dilation in 1-d; one whose output padding exceeds its end
     * padding stays on ref. */
    const char *dc = "<topology name='dc' precision='f32' batch='2'>"
                     "<input name='x' shape='2,4,3,5' dtype='f32'/>"
                     "<conv name='c' filters='3' kernel='1'/>"
                     "<deconv name='d1' filters='3' kernel='2' stride='2'/>"
                     "<deconv name='d2' filters='6' kernel='3' stride='2' pad='1' "
                     "output_padding='1' groups='3'/>"
                     "<deconv name='d3' filters='2' kernel='2' stride='3' output_padding='1' "
                     "bias='false'/>"
                     "<global_avgpool name='gap'/><flatten name='fl'/><fc name='fc' units='3'/>"
                     "</topology>";
    const char *const by6[] = {"d1", "onednn", "d2", "onednn", "d3", "ref"};
    onednn_vs_ref(dc, by6, 6);
    const char *dc1 = "<topology name='dc1' precision='f32' batch='2'>"
                      "<input name='x' shape='2,3,7' dtype='f32'/>"
                      "<conv name='c' filters='4' kernel='1'/>"
                      "<deconv name='d' filters='4' kernel='3' dilation='2' stride='2' pad='1' "
                      "groups='2' bias='false'/>"
                      "<flatten name='fl'/><fc name='fc' units='3'/>"
                      "</topology>";
    const char *const by7[] = {"d", "onednn"};
    onednn_vs_ref(dc1, by7, 2);
}

/* Forward and backward on oneDNN against the reference engine: `steps`
 * SGD steps (lr 0.05) of xml on each; every step's loss within 2e-6
 * relative and every weight and buffer after them (batch norm's running
 * statistics too) within 2e-6 of its tensor's largest value. f32's unit
 * roundoff u is 6e-8; the sums here (up to 400 terms: a batch norm over
 * 4 x 10 x 10) err by about sqrt(n)·u = 1.2e-6 at worst in practice, and
 * 2e-6 is 33u (observed: 2.5e-8 for the loss, 7.9e-8 for the weights of
 * the CNN below). forward_by names each layer's engine. */
static void forward_vs_ref(const char *xml, ntp_loss lossk, const char *const *by, int n_by)
{
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load(ctx, xml);
    ntp_trainer *t[2] = {NULL, NULL};
    ntp_train_result *r[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        ntp_train_opts o;
        ntp_train_opts_init(&o);
        o.backend = k ? "onednn" : NULL;
        o.loss = lossk;
        o.steps = 3;
        o.lr = 0.05;
        o.dropout = 0.2;
        if (ntp_trainer_new(ctx, g, &o, &t[k]) || ntp_trainer_run(ctx, t[k], &r[k]))
            fail_msg("trainer: %s", ntp_ctx_errmsg(ctx));
    }
    double worst = 0.0;
    for (int i = 0; i < 3; i++) {
        double a = ntp_train_result_losses(r[0])[i], b = ntp_train_result_losses(r[1])[i];
        if (fabs(a - b) > 2e-6 * fabs(a))
            fail_msg("%s step %d: loss on onednn %.9g, ref %.9g", g->name, i, b, a);
        worst = fmax(worst, fabs(a - b) / fabs(a));
    }
    /* f32 did run: no forward in double gives the same bits. */
    assert_true(ntp_train_result_losses(r[0])[0] != ntp_train_result_losses(r[1])[0]);
    ntp_train_state *a = ntp__trainer_state(t[0]), *b = ntp__trainer_state(t[1]);
    int compared = 0;
    double wworst = 0.0;
    for (int ti = 0; ti < g->n_tensors; ti++) {
        const ntp_tensor *x = &g->tensors[ti];
        if (x->kind != NTP_TENSOR_WEIGHT && x->kind != NTP_TENSOR_BUFFER)
            continue;
        int64_t n = ntp_shape_numel(&x->shape);
        double most = 0.0;
        for (int64_t i = 0; i < n; i++)
            most = fmax(most, fabs(a->val[ti][i]));
        for (int64_t i = 0; i < n; i++) {
            double d = fabs(a->val[ti][i] - b->val[ti][i]);
            wworst = fmax(wworst, d / most);
            if (d > 2e-6 * most)
                fail_msg("%s[%lld] after 3 steps: onednn %.9g, ref %.9g (largest %.3g)", x->name,
                         (long long)i, b->val[ti][i], a->val[ti][i], most);
        }
        compared++;
    }
    print_message("%s: loss within %.2g relative, weights within %.2g of their largest\n", g->name,
                  worst, wworst);
    assert_true(compared >= 6);
    for (int k = 0; k < n_by; k += 2) {
        int i = 0;
        while (i < ntp_train_result_layer_count(r[1]) &&
               strcmp(ntp_train_result_layer(r[1], i)->name, by[k]) != 0)
            i++;
        assert_true(i < ntp_train_result_layer_count(r[1]));
        assert_string_equal(ntp_train_result_layer(r[1], i)->forward_by, by[k + 1]);
        assert_string_equal(ntp_train_result_layer(r[0], i)->forward_by, "ref");
    }
    for (int k = 0; k < 2; k++) {
        ntp_train_result_free(r[k]);
        ntp_trainer_free(t[k]);
    }
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

/* A residual CNN (conv, batch norm in training mode, relu, max pooling
 * whose workspace feeds its backward, a residual add, a concat, flatten,
 * fc, clip) with a dropout and a reflect pad between that fall back to
 * the reference forward; then recurrent layers (a bidirectional LSTM
 * whose forward's workspace feeds its backward, a GRU summing its
 * directions' last states, a ReLU RNN). Batch norm in inference mode (the
 * running statistics, 0 and 1 at the start) gives a first loss of 3.60
 * for the reference's 1.65 (checked by making it so). */
static void test_onednn_forward(void **state)
{
    (void)state;
    if (!strstr(ntp_backends(), "onednn")) {
        print_message("oneDNN is not built here: skipped\n");
        skip();
    }
    const char *cnn = "<topology name='resfwd' precision='f32' batch='4'>"
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
                      "<clip name='cl' min='-1' max='2'/>"
                      "<global_avgpool name='gap'/><flatten name='fl'/>"
                      "<fc name='fc' units='5'/>"
                      "</topology>";
    const char *const by[] = {"c1",     "onednn", "bn1",    "onednn", "r1",     "onednn", "mp",
                              "onednn", "c2",     "onednn", "res",    "onednn", "cat",    "onednn",
                              "dp",     "ref",    "pd",     "ref",    "c4",     "onednn", "cl",
                              "onednn", "gap",    "onednn", "fl",     "onednn", "fc",     "onednn"};
    forward_vs_ref(cnn, NTP_LOSS_CROSS_ENTROPY, by, (int)(sizeof by / sizeof *by));
    const char *rec = "<topology name='recfwd' precision='f32' batch='3'>"
                      "<input name='x' shape='6,3,4' dtype='f32'/>"
                      "<lstm name='l' units='4' direction='bidirectional'/>"
                      "<rnn name='r' units='3' activation='relu'/>"
                      "<gru name='g' units='3' direction='bidirectional' merge='sum' "
                      "sequence='last'/>"
                      "<fc name='o' units='3'/>"
                      "</topology>";
    const char *const by2[] = {"l", "onednn", "r", "onednn", "g", "onednn", "o", "onednn"};
    forward_vs_ref(rec, NTP_LOSS_CROSS_ENTROPY, by2, 8);
}

/* The recurrent layers on oneDNN's RNN backward primitives (forward
 * training for the workspace, then dnnl_lstm_backward, dnnl_lbr_gru_backward,
 * dnnl_vanilla_rnn_backward): every direction (forward, reverse,
 * bidirectional concat and sum), every step and the last step, with and
 * without bias, tanh and relu RNNs. Every gradient (dX, dW, dR, dB, the
 * input's) equals the reference engine's double within f32 rounding (1e-5
 * of the tensor's largest + 1e-8), which a wrong gate order, bias split
 * or direction would not; nor would dR of the left-to-right LSTM and RNN
 * ('r', 'lf') without the explicit zero initial state (rnn-backward.c). */
static void test_onednn_rnn_backward(void **state)
{
    (void)state;
    if (!strstr(ntp_backends(), "onednn")) {
        print_message("oneDNN is not built here: skipped\n");
        skip();
    }
    const char *seq = "<topology name='rec' precision='f32' batch='2'>"
                      "<input name='x' shape='5,2,3' dtype='f32'/>"
                      "<lstm name='l' units='4' direction='bidirectional'/>"
                      "<gru name='g' units='3' direction='bidirectional' merge='sum'/>"
                      "<rnn name='r' units='3' activation='relu'/>"
                      "<lstm name='lf' units='3'/>"
                      "<lstm name='lr' units='3' direction='reverse' bias='false'/>"
                      "<gru name='gr' units='2' direction='reverse' bias='false'/>"
                      "<rnn name='rs' units='3' direction='bidirectional' merge='sum'/>"
                      "</topology>";
    const char *const by[] = {"l",      "onednn", "g",      "onednn", "r",      "onednn", "lf",
                              "onednn", "lr",     "onednn", "gr",     "onednn", "rs",     "onednn"};
    onednn_vs_ref_loss(seq, NTP_LOSS_MSE, true, by, 14);
    /* A first layer whose input takes no gradient: no dX asked for (oneDNN
     * writes it to scratch), the weights' gradients as before. */
    onednn_vs_ref_loss(seq, NTP_LOSS_MSE, false, by, 14);
    /* sequence='last': each direction's final state (a reverse one's after
     * step 0), concatenated or summed. */
    const char *last = "<topology name='last' precision='f32' batch='3'>"
                       "<input name='x' shape='6,3,4' dtype='f32'/>"
                       "<rnn name='r' units='3' direction='reverse'/>"
                       "<lstm name='lc' units='3' direction='bidirectional' sequence='last'/>"
                       "<lstm name='ls' inputs='r' units='2' direction='bidirectional' merge='sum' "
                       "sequence='last' bias='false'/>"
                       "<gru name='gs' inputs='r' units='3' direction='bidirectional' merge='sum' "
                       "sequence='last'/>"
                       "<gru name='gf' inputs='x' units='2' sequence='last'/>"
                       "<rnn name='rc' inputs='x' units='2' direction='bidirectional' "
                       "activation='relu' sequence='last'/>"
                       "<lstm name='lv' inputs='x' units='2' direction='reverse' sequence='last'/>"
                       "<concat name='cat' inputs='lc,ls,gs,gf,rc,lv' axis='1'/>"
                       "<fc name='o' units='3'/>"
                       "</topology>";
    const char *const by2[] = {"r",  "onednn", "lc", "onednn", "ls", "onednn", "gs", "onednn",
                               "gf", "onednn", "rc", "onednn", "lv", "onednn"};
    onednn_vs_ref(last, by2, 14);
}

/* Data movement and the transposed convolution: transpose, reflect pad,
 * split, two deconvs (stride, padding, output padding, groups) summed; then
 * edge and constant pads and the default (reversing) transpose. */
static void test_move_deconv(void **state)
{
    (void)state;
    const char *xml = "<topology name='mv' precision='f32' batch='2'>"
                      "<input name='x' shape='2,3,4,5' dtype='f32'/>"
                      "<transpose name='tp' perm='0,2,1,3'/>"
                      "<pad name='pd' pads='0,0,1,0,0,0,0,2' mode='reflect'/>"
                      "<split name='sp' axis='1' sizes='2,2'/>"
                      "<deconv name='d1' inputs='sp:0' filters='4' kernel='2' stride='2'/>"
                      "<deconv name='d2' inputs='sp:1' filters='4' kernel='3' stride='2' pad='1' "
                      "output_padding='1' groups='2'/>"
                      "<add name='a' inputs='d1,d2'/><global_avgpool name='gap'/>"
                      "<flatten name='fl'/><fc name='fc' units='3'/>"
                      "</topology>";
    assert_true(check_fd(xml, NTP_LOSS_CROSS_ENTROPY, 12) > 60);
    const char *pads = "<topology name='pads' precision='f32' batch='2'>"
                       "<input name='x' shape='2,3,5' dtype='f32'/>"
                       "<pad name='e' pads='0,1,2,0,0,1' mode='edge'/>"
                       "<pad name='c' pads='0,0,1,0,0,1' value='0.5'/>"
                       "<fc name='fc' units='3'/><transpose name='tp'/>"
                       "</topology>";
    assert_true(check_fd(pads, NTP_LOSS_MSE, 12) > 20);
}

/* Multi-head attention: self-attention with two heads and a causal mask,
 * then cross-attention of three inputs (S 3 against S_kv 4) without
 * biases; every projection, both inputs, against finite differences. */
static void test_attention(void **state)
{
    (void)state;
    const char *self = "<topology name='att' precision='f32' batch='2'>"
                       "<input name='x' shape='2,3,4' dtype='f32'/>"
                       "<attention name='a' heads='2' causal='true'/>"
                       "<layernorm name='ln' axis='-1'/>"
                       "<attention name='b' heads='1'/>"
                       "</topology>";
    assert_true(check_fd(self, NTP_LOSS_MSE, 12) > 80);
    const char *cross = "<topology name='cross' precision='f32' batch='2'>"
                        "<input name='q' shape='2,3,4' dtype='f32'/>"
                        "<input name='kv' shape='2,4,4' dtype='f32'/>"
                        "<fc name='k' inputs='kv' units='4'/>"
                        "<attention name='a' inputs='q,k,kv' heads='2' bias='false'/>"
                        "</topology>";
    assert_true(check_fd(cross, NTP_LOSS_MSE, 12) > 40);
}

/* The training plan of x [2,16] → fc1 (8) → relu → fc2 (8), by hand (every
 * activation a multiple of the arena's 64-byte alignment).
 * Ticks: forwards 0, 1, 2; loss 3; backwards of fc2, relu, fc1 at 4, 5, 6.
 * Values: x 128 B lives 0-6 (fc1's weight gradient reads it), h1 64 B 0-5
 * (relu's backward), r 64 B 1-4 (fc2's weight gradient), y 64 B 2-3;
 * gradients: dy 64 B 3-4, dr 64 B 4-5, dh1 64 B 5-6. At ticks 3 and 4 five
 * of them are live: 128 + 4 x 64 = 384 B, the most at once. */
static void test_plan_by_hand(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = load(ctx, "<topology name='p' precision='f32' batch='2'>"
                             "<input name='x' shape='2,16' dtype='f32'/>"
                             "<fc name='fc1' units='8'/><relu name='r'/><fc name='fc2' units='8'/>"
                             "</topology>");
    ntp_train_opts o;
    ntp_train_opts_init(&o);
    o.optimizer = NTP_OPTIMIZER_ADAM;
    ntp_train_plan *p = NULL;
    assert_int_equal(ntp_train_plan_make(ctx, g, &o, &p), NTP_STATUS_OK);
    const ntp_train_memory *m = &p->memory;
    assert_int_equal(m->weights, (8 * 16 + 8 + 8 * 8 + 8) * 4);
    assert_int_equal(m->gradients, m->weights);
    assert_int_equal(m->optimizer_state, 2 * m->weights);
    assert_int_equal(m->activations, 384);
    assert_int_equal(m->workspace, 2 * 8 * 4);
    assert_int_equal(m->other, 0);
    assert_int_equal(m->peak, 4 * 832 + 384 + 64);
    /* FLOPs: fc1 528 forward, no backward-data (its input is data), 528
     * backward-weights; relu 16 and 32; fc2 272, 256, 272; loss 112 and 32;
     * Adam 13 per value over 208 values. */
    assert_int_equal(p->flops[NTP_TRAIN_FORWARD], 528 + 16 + 272 + 112);
    assert_int_equal(p->flops[NTP_TRAIN_BACKWARD_DATA], 0 + 32 + 256 + 32);
    assert_int_equal(p->flops[NTP_TRAIN_BACKWARD_WEIGHTS], 528 + 272);
    assert_int_equal(p->flops[NTP_TRAIN_UPDATE], 13 * 208);
    assert_int_equal(p->layers[0].stashed_bytes, 128);
    assert_int_equal(p->layers[1].stashed_bytes, 64);
    ntp_train_plan_free(p);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fc_mlp),
        cmocka_unit_test(test_conv_net),
        cmocka_unit_test(test_conv1d_globalmax),
        cmocka_unit_test(test_eltwise_norm),
        cmocka_unit_test(test_darknet_heads),
        cmocka_unit_test(test_matmul_softmax_axis),
        cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_hand_fc),
        cmocka_unit_test(test_optimizers),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_plan_by_hand),
        cmocka_unit_test(test_recurrent),
        cmocka_unit_test(test_ctc),
        cmocka_unit_test(test_onednn_backward),
        cmocka_unit_test(test_onednn_forward),
        cmocka_unit_test(test_onednn_rnn_backward),
        cmocka_unit_test(test_move_deconv),
        cmocka_unit_test(test_attention),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
