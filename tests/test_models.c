/* The bundled topologies in models/: each loads, and its static analysis
 * gives the exact parameter count and multiply-accumulates of the reference
 * implementation.
 *
 * Where the numbers come from:
 *   - torchvision models: the totals printed by scripts/model-reference.py
 *     (/usr/bin/python3 scripts/model-reference.py; add --write to
 *     regenerate tests/data/<model>-layers.txt, the per-layer tables this
 *     test reads) and the published MACs they are checked against within 1%.
 *   - DeepSpeech, BERT-base, the LSTM language model and the tiny models:
 *     the arithmetic in the comments (also in each model file's header), which
 *     the same script cross-checks against torch.nn modules.
 *
 * Per-layer MACs of conv and fc follow docs/ops.md: conv = output elements x
 * C/groups x kernel area, fc = rows x K x units.
 *
 * tiny-ops.xml, the model that covers the ops added for ONNX models, is also
 * run on the reference backend: every layer's output must be finite, and a
 * few compositions the model is built on must hold (log of exp, asinh of
 * sinh, acosh of cosh, hardmax's one-hot choosing where's branch). */
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
#include "graph/graph-impl.h"
#include "io/io-impl.h"
#include "ntprof/ntprof.h"

/* cmocka 1.1's assert_int_equal prints both values in hex; counts of
 * parameters and MACs are read in decimal, so this prints them that way,
 * with the expression that was checked. */
#define assert_i64(got, want) check_i64((int64_t)(got), (int64_t)(want), #got, __FILE__, __LINE__)

static void check_i64(int64_t got, int64_t want, const char *expr, const char *file, int line)
{
    if (got != want) {
        print_error("%s is %lld, expected %lld (off by %lld)\n", expr, (long long)got,
                    (long long)want, (long long)(got - want));
        _fail(file, line);
    }
}

/* A loaded model and its analysis, freed together. */
typedef struct model {
    ntp_ctx *ctx;
    ntp_graph *g;
    ntp_analysis *a;
} model;

static void model_load_opts(model *m, const char *file, const ntp_load_opts *opts)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/models/%s", NTP_SOURCE_DIR, file);
    memset(m, 0, sizeof *m);
    m->ctx = ntp_ctx_init();
    assert_non_null(m->ctx);
    ntp_status st = ntp_graph_load(m->ctx, path, opts, &m->g);
    if (st != NTP_STATUS_OK)
        fail_msg("loading %s: %s: %s", path, ntp_status_name(st), ntp_ctx_errmsg(m->ctx));
    st = ntp_graph_analyze(m->ctx, m->g, &m->a);
    if (st != NTP_STATUS_OK)
        fail_msg("analysing %s: %s: %s", path, ntp_status_name(st), ntp_ctx_errmsg(m->ctx));
}

static void model_load(model *m, const char *file)
{
    model_load_opts(m, file, NULL);
}

/* Load with "name=value" overrides. */
static void model_load_set(model *m, const char *file, const char *const *set, int n_set)
{
    ntp_load_opts o = {0};
    o.set = set;
    o.n_set = n_set;
    model_load_opts(m, file, &o);
}

static void model_free(model *m)
{
    ntp_analysis_free(m->a);
    ntp_graph_free(m->g);
    ntp_ctx_free(m->ctx);
}

/* The analysis row of layer `name`; fails the test if there is none. */
static const ntp_layer_cost *layer(const model *m, const char *name)
{
    int i = ntp_graph_layer_find(m->g, name);
    if (i < 0 || i >= m->a->n_layers)
        fail_msg("%s has no layer '%s'", ntp_graph_name(m->g), name);
    assert_string_equal(m->a->layers[i].name, name);
    return &m->a->layers[i];
}

/* Compare shapes as strings so that a failure prints both. */
static void check_layer_shape(const model *m, const char *name, const char *want)
{
    char buf[128];
    assert_string_equal(ntp_shape_str(&layer(m, name)->output_shape, buf, sizeof buf), want);
}

static void check_output_shape(const model *m, int i, const char *want)
{
    char buf[128];
    ntp_shape s = ntp_graph_output_shape(m->g, i);
    assert_string_equal(ntp_shape_str(&s, buf, sizeof buf), want);
}

static void check_input(const model *m, int i, const char *name, const char *shape, ntp_dtype dt)
{
    char buf[128];
    ntp_shape s = ntp_graph_input_shape(m->g, i);
    assert_string_equal(ntp_graph_input_name(m->g, i), name);
    assert_string_equal(ntp_shape_str(&s, buf, sizeof buf), shape);
    assert_string_equal(ntp_dtype_name(ntp_graph_input_dtype(m->g, i)), ntp_dtype_name(dt));
}

/* Sum of MACs of the layers whose type is one of `types` (NULL-terminated). */
static int64_t macs_of(const model *m, const char *const *types)
{
    int64_t sum = 0;
    for (int i = 0; i < m->a->n_layers; i++)
        for (const char *const *t = types; *t; t++)
            if (strcmp(m->a->layers[i].type, *t) == 0)
                sum += m->a->layers[i].macs;
    return sum;
}

static int count_of(const model *m, const char *type)
{
    int n = 0;
    for (int i = 0; i < m->a->n_layers; i++)
        n += strcmp(m->a->layers[i].type, type) == 0;
    return n;
}

static const char *const conv_fc[] = {"conv", "fc", NULL};

/* |got - want| <= 1% of want, printing both on failure. */
static void check_within_1pct(const char *what, int64_t got, double want)
{
    double rel = ((double)got - want) / want;
    if (rel > 0.01 || rel < -0.01)
        fail_msg("%s: %lld is %.2f%% away from %.0f (allowed 1%%)", what, (long long)got,
                 100.0 * rel, want);
}

/* The marker `name` spans layers first..last (by name). */
static void check_marker(const model *m, const char *name, const char *first, const char *last)
{
    for (int i = 0; i < ntp_graph_marker_count(m->g); i++) {
        if (strcmp(ntp_graph_marker_name(m->g, i), name) != 0)
            continue;
        int a, b;
        ntp_graph_marker_range(m->g, i, &a, &b);
        assert_string_equal(ntp_graph_layer_name(m->g, a), first);
        assert_string_equal(ntp_graph_layer_name(m->g, b), last);
        return;
    }
    fail_msg("%s has no marker '%s'", ntp_graph_name(m->g), name);
}

/* Compare every conv/fc layer with the torchvision table in
 * tests/data/<stem>-layers.txt: type, params, MACs and output shape, and
 * check that the model has no conv/fc layer the table lacks. */
static void check_layer_table(const model *m, const char *stem)
{
    char path[1024], line[512];
    snprintf(path, sizeof path, "%s/tests/data/%s-layers.txt", NTP_SOURCE_DIR, stem);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open %s", path);
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        char name[128], type[16], dims[128], want[160], got[160];
        long long params, macs;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (sscanf(line, "%127s %15s %lld %lld %127s", name, type, &params, &macs, dims) != 5) {
            fclose(f);
            fail_msg("%s: malformed line: %s", path, line);
        }
        const ntp_layer_cost *l = layer(m, name);
        snprintf(want, sizeof want, "[%s]", dims);
        ntp_shape_str(&l->output_shape, got, sizeof got);
        if (strcmp(l->type, type) != 0 || l->params != params || l->macs != macs ||
            strcmp(got, want) != 0) {
            fclose(f);
            fail_msg("%s layer '%s': ntprof has %s, %lld params, %lld MACs, output %s; "
                     "torchvision has %s, %lld params, %lld MACs, output %s",
                     stem, name, l->type, (long long)l->params, (long long)l->macs, got, type,
                     params, macs, want);
        }
        rows++;
    }
    fclose(f);
    assert_true(rows > 0);
    assert_i64(count_of(m, "conv") + count_of(m, "fc"), rows);
}

/* --- ResNet-50 --------------------------------------------------------------- */

static void test_resnet50(void **state)
{
    (void)state;
    model m;
    model_load(&m, "resnet50.xml");
    /* torchvision.models.resnet50(): 25,557,032 params. */
    assert_i64(m.a->params, 25557032);
    /* 4,089,184,256 MACs by torchvision's modules; published 4.09 G. */
    assert_i64(macs_of(&m, conv_fc), 4089184256LL);
    check_within_1pct("resnet50 conv+fc MACs", macs_of(&m, conv_fc), 4.09e9);
    /* 1 stem + 16 blocks x 3 + 4 downsample convolutions = 53 conv, 1 fc. */
    assert_i64(count_of(&m, "conv"), 53);
    assert_i64(count_of(&m, "fc"), 1);
    assert_i64(count_of(&m, "add"), 16);
    check_input(&m, 0, "image", "[1,3,224,224]", NTP_DTYPE_F32);
    assert_i64(ntp_graph_output_count(m.g), 1);
    check_output_shape(&m, 0, "[1,1000]");

    /* Hand-computed: conv1 7x7/2 pad 3 -> 112x112x64, each output reads
     * 3 x 7 x 7 = 147 inputs: 112 x 112 x 64 x 147 = 118,013,952 MACs. */
    assert_i64(layer(&m, "conv1")->macs, 118013952);
    assert_i64(layer(&m, "conv1")->params, 64 * 3 * 7 * 7);
    check_layer_shape(&m, "maxpool", "[1,64,56,56]");
    /* v1.5: the stride is on the 3x3 conv2 of the first block of a stage. */
    check_layer_shape(&m, "layer2_0_conv1", "[1,128,56,56]");
    check_layer_shape(&m, "layer2_0_conv2", "[1,128,28,28]");
    /* layer4_2_conv3: 1x1, 512 -> 2048 at 7x7: 7 x 7 x 2048 x 512. */
    assert_i64(layer(&m, "layer4_2_conv3")->macs, 7 * 7 * 2048 * 512);
    /* Batch norm: scale and bias are params, mean and var buffers. */
    assert_i64(layer(&m, "bn1")->params, 2 * 64);
    assert_i64(layer(&m, "bn1")->weight_bytes, 4 * 64 * 4);
    check_layer_shape(&m, "avgpool", "[1,2048,1,1]");
    check_layer_shape(&m, "flatten", "[1,2048]");
    assert_i64(layer(&m, "fc")->params, 2048 * 1000 + 1000);

    check_layer_table(&m, "resnet50");

    check_marker(&m, "stem", "conv1", "maxpool");
    check_marker(&m, "layer1", "layer1_0_conv1", "layer1_2_relu3");
    check_marker(&m, "layer2", "layer2_0_conv1", "layer2_3_relu3");
    check_marker(&m, "layer3", "layer3_0_conv1", "layer3_5_relu3");
    check_marker(&m, "layer4", "layer4_0_conv1", "layer4_2_relu3");
    check_marker(&m, "head", "avgpool", "fc");
    model_free(&m);
}

/* The block counts are params: blocks3=23 turns the file into ResNet-101
 * (torchvision.models.resnet101(): 44,549,160 params, 7,801,405,440 MACs). */
static void test_resnet101_by_param(void **state)
{
    (void)state;
    static const char *const set[] = {"blocks3=23"};
    model m;
    model_load_set(&m, "resnet50.xml", set, 1);
    assert_i64(m.a->params, 44549160);
    assert_i64(macs_of(&m, conv_fc), 7801405440LL);
    check_marker(&m, "layer3", "layer3_0_conv1", "layer3_22_relu3");
    model_free(&m);
}

/* MACs scale with the batch; params do not. */
static void test_resnet50_batch(void **state)
{
    (void)state;
    ntp_load_opts o = {0};
    o.batch = 8;
    model m;
    model_load_opts(&m, "resnet50.xml", &o);
    assert_i64(m.a->params, 25557032);
    assert_i64(macs_of(&m, conv_fc), 8 * 4089184256LL);
    check_output_shape(&m, 0, "[8,1000]");
    model_free(&m);
}

/* --- MobileNetV2, VGG-16, AlexNet ---------------------------------------------- */

static void test_mobilenetv2(void **state)
{
    (void)state;
    model m;
    model_load(&m, "mobilenetv2.xml");
    assert_i64(m.a->params, 3504872);
    assert_i64(macs_of(&m, conv_fc), 300774272);
    check_within_1pct("mobilenetv2 conv+fc MACs", macs_of(&m, conv_fc), 0.30e9);
    /* 52 convolutions: stem, 17 blocks (16 with expansion: 3 each, 1
     * without: 2), last 1x1; 10 residual adds (blocks 3, 5, 6, 8-10, 12,
     * 13, 15, 16). */
    assert_i64(count_of(&m, "conv"), 52);
    assert_i64(count_of(&m, "add"), 10);
    check_output_shape(&m, 0, "[1,1000]");
    /* Depthwise 3x3/2 on 96 channels: 96 x 3 x 3 weights, output 56x56,
     * one input channel per output: 96 x 56 x 56 x 9 = 2,709,504 MACs. */
    assert_i64(layer(&m, "features_2_conv_1_0")->params, 96 * 9);
    assert_i64(layer(&m, "features_2_conv_1_0")->macs, 96 * 56 * 56 * 9);
    check_layer_shape(&m, "features_18_2", "[1,1280,7,7]");
    check_layer_table(&m, "mobilenetv2");
    check_marker(&m, "head", "avgpool", "classifier_1");
    model_free(&m);
}

static void test_vgg16(void **state)
{
    (void)state;
    model m;
    model_load(&m, "vgg16.xml");
    assert_i64(m.a->params, 138357544);
    assert_i64(macs_of(&m, conv_fc), 15470264320LL);
    check_within_1pct("vgg16 conv+fc MACs", macs_of(&m, conv_fc), 15.47e9);
    assert_i64(count_of(&m, "conv"), 13);
    assert_i64(count_of(&m, "fc"), 3);
    check_output_shape(&m, 0, "[1,1000]");
    /* The first classifier layer holds most of the weights:
     * 25,088 x 4,096 + 4,096 = 102,764,544. */
    assert_i64(layer(&m, "classifier_0")->params, 25088LL * 4096 + 4096);
    check_layer_shape(&m, "features_30", "[1,512,7,7]");
    check_layer_table(&m, "vgg16");
    check_marker(&m, "block3", "features_10", "features_16");
    model_free(&m);
}

static void test_alexnet(void **state)
{
    (void)state;
    model m;
    model_load(&m, "alexnet.xml");
    assert_i64(m.a->params, 61100840);
    assert_i64(macs_of(&m, conv_fc), 714188480);
    check_within_1pct("alexnet conv+fc MACs", macs_of(&m, conv_fc), 0.71e9);
    /* 11x11/4 pad 2: (224 + 4 - 11) / 4 + 1 = 55; 55 x 55 x 64 x 3 x 121. */
    check_layer_shape(&m, "features_0", "[1,64,55,55]");
    assert_i64(layer(&m, "features_0")->macs, 55 * 55 * 64 * 3 * 121);
    check_layer_shape(&m, "features_12", "[1,256,6,6]");
    check_layer_shape(&m, "flatten", "[1,9216]");
    check_output_shape(&m, 0, "[1,1000]");
    check_layer_table(&m, "alexnet");
    model_free(&m);
}

/* --- DeepSpeech ------------------------------------------------------------------ */

static void test_deepspeech(void **state)
{
    (void)state;
    model m;
    model_load(&m, "deepspeech.xml");
    /* 1,013,760 + 2 x 4,196,352 + 67,141,632 + 8,390,656 + 59,421 (see
     * models/deepspeech.xml). */
    assert_i64(m.a->params, 84998173);
    /* 200 frames need (200 - 1) x 160 + 400 = 32,240 samples. */
    check_input(&m, 0, "audio", "[1,32240]", NTP_DTYPE_F32);
    check_layer_shape(&m, "mfcc", "[200,1,494]");
    check_layer_shape(&m, "fc1", "[200,1,2048]");
    check_layer_shape(&m, "lstm", "[200,1,4096]");
    check_layer_shape(&m, "fc4", "[200,1,2048]");
    check_layer_shape(&m, "fc5", "[200,1,29]");
    check_layer_shape(&m, "decode", "[1,200]");
    assert_i64(ntp_graph_output_count(m.g), 1);
    check_output_shape(&m, 0, "[1,200]");
    assert_true(layer(&m, "mfcc")->inlay);
    assert_true(layer(&m, "decode")->inlay);
    assert_false(layer(&m, "fc1")->inlay);
    /* Clipped ReLU: 2 FLOPs per element, 200 x 2048 elements. */
    assert_i64(layer(&m, "relu1")->flops, 2 * 200 * 2048);

    /* fc: 200 x (494 x 2048 + 2 x 2048 x 2048 + 4096 x 2048 + 2048 x 29)
     *   = 200 x 17,848,320 = 3,569,664,000. */
    static const char *const fc[] = {"fc", NULL};
    assert_i64(macs_of(&m, fc), 3569664000LL);
    assert_i64(layer(&m, "fc1")->macs, 200 * 494 * 2048);
    /* LSTM: 2 directions x 200 steps x 4 gates x 2048 x (2048 + 2048). */
    assert_i64(layer(&m, "lstm")->macs, 2LL * 200 * 4 * 2048 * 4096);
    assert_i64(layer(&m, "lstm")->params, 2LL * (4 * 2048 * 4096 + 8 * 2048));

    check_marker(&m, "fc1-3", "fc1", "relu3");
    check_marker(&m, "bilstm", "lstm", "lstm");
    check_marker(&m, "fc4-5", "fc4", "fc5");
    model_free(&m);
}

/* time_steps and n_hidden are params; the audio length follows the frames. */
static void test_deepspeech_params(void **state)
{
    (void)state;
    static const char *const set[] = {"time_steps=50", "n_hidden=256"};
    model m;
    model_load_set(&m, "deepspeech.xml", set, 2);
    check_input(&m, 0, "audio", "[1,8240]", NTP_DTYPE_F32);
    check_layer_shape(&m, "mfcc", "[50,1,494]");
    check_output_shape(&m, 0, "[1,50]");
    /* 494 x 256 + 256 + 2 x (256 x 256 + 256) + 2 x (4 x 256 x 512 + 8 x 256)
     * + 512 x 256 + 256 + 256 x 29 + 29
     * = 126,720 + 131,584 + 1,052,672 + 131,328 + 7,453 = 1,449,757. */
    assert_i64(m.a->params, 1449757);
    model_free(&m);
}

/* --- BERT-base ---------------------------------------------------------------------- */

static void test_bert_base(void **state)
{
    (void)state;
    model m;
    model_load(&m, "bert-base.xml");
    /* HuggingFace BertModel's 109,482,240 less the pooler's 590,592. */
    assert_i64(m.a->params, 108891648);
    assert_i64(ntp_graph_input_count(m.g), 3);
    check_input(&m, 0, "input_ids", "[1,128]", NTP_DTYPE_I32);
    check_input(&m, 1, "token_type_ids", "[1,128]", NTP_DTYPE_I32);
    check_input(&m, 2, "position_ids", "[1,128]", NTP_DTYPE_I32);
    assert_i64(layer(&m, "word_embeddings")->params, 30522 * 768);
    check_layer_shape(&m, "embeddings_sum", "[1,128,768]");
    assert_i64(count_of(&m, "attention"), 12);
    assert_i64(count_of(&m, "layernorm"), 25);
    assert_i64(ntp_graph_output_count(m.g), 1);
    check_output_shape(&m, 0, "[1,128,768]");
    check_layer_shape(&m, "layer11_output_layernorm", "[1,128,768]");

    /* Attention at S = 128, D = 768 (docs/ops.md): q, k, v projections
     * 3 x 128 x 768 x 768 + scores and context 2 x 128 x 128 x 768 + output
     * projection 128 x 768 x 768 = 226,492,416 + 25,165,824 + 75,497,472. */
    assert_i64(layer(&m, "layer0_attention")->macs, 327155712);
    assert_i64(layer(&m, "layer0_attention")->params, 3 * 768 * 768 + 3 * 768 + 768 * 768 + 768);
    /* Feed-forward: 128 x 768 x 3072 each way. */
    assert_i64(layer(&m, "layer5_intermediate")->macs, 128 * 768 * 3072);
    check_layer_shape(&m, "layer5_intermediate", "[1,128,3072]");
    static const char *const dense[] = {"fc", "attention", "matmul", NULL};
    /* 12 x (327,155,712 + 603,979,776) = 11,173,625,856. */
    assert_i64(macs_of(&m, dense), 11173625856LL);
    check_marker(&m, "embeddings", "word_embeddings", "embeddings_dropout");
    check_marker(&m, "encoder", "layer0_attention", "layer11_output_layernorm");
    model_free(&m);
}

static void test_bert_layers_param(void **state)
{
    (void)state;
    static const char *const set[] = {"layers=2", "seq_len=64"};
    model m;
    model_load_set(&m, "bert-base.xml", set, 2);
    /* Embeddings 23,837,184 + 2 layers x 7,087,872. */
    assert_i64(m.a->params, 23837184 + 2 * 7087872);
    assert_i64(count_of(&m, "attention"), 2);
    check_output_shape(&m, 0, "[1,64,768]");
    model_free(&m);
}

/* --- LSTM language model -------------------------------------------------------------- */

static void test_lstm_lm(void **state)
{
    (void)state;
    model m;
    model_load(&m, "lstm-lm.xml");
    /* 6,500,000 + 2 x 3,385,200 + 6,510,000. */
    assert_i64(m.a->params, 19780400);
    check_input(&m, 0, "tokens", "[35,20]", NTP_DTYPE_I32);
    check_layer_shape(&m, "embedding", "[35,20,650]");
    check_layer_shape(&m, "lstm2", "[35,20,650]");
    check_layer_shape(&m, "decoder", "[35,20,10000]");
    check_output_shape(&m, 0, "[35,20,10000]");
    /* 35 x 20 x 4 x 650 x 1,300 per LSTM; decoder 35 x 20 x 650 x 10,000. */
    assert_i64(layer(&m, "lstm1")->macs, 2366000000LL);
    assert_i64(layer(&m, "lstm2")->macs, 2366000000LL);
    assert_i64(layer(&m, "decoder")->macs, 4550000000LL);
    /* Softmax: 5 FLOPs per element. */
    assert_i64(layer(&m, "softmax")->flops, 5LL * 35 * 20 * 10000);
    check_marker(&m, "embed", "embedding", "dropout0");
    check_marker(&m, "lstm", "lstm1", "dropout2");
    check_marker(&m, "head", "decoder", "softmax");
    model_free(&m);
}

/* --- tiny models ------------------------------------------------------------------------ */

static void test_tiny_mlp(void **state)
{
    (void)state;
    model m;
    model_load(&m, "tiny-mlp.xml");
    /* 544 + 2,112 + 640. */
    assert_i64(m.a->params, 3296);
    check_layer_shape(&m, "stage", "[2,16]");
    check_layer_shape(&m, "gate", "[2,32]");
    check_layer_shape(&m, "glu", "[2,32]");
    check_layer_shape(&m, "skip", "[2,64]");
    check_output_shape(&m, 0, "[2,10]");
    /* fc1: 2 x 16 x 32 = 1,024 MACs, FLOPs 2 x 1,024 + 64 bias adds. */
    assert_i64(layer(&m, "fc1")->macs, 1024);
    assert_i64(layer(&m, "fc1")->flops, 2112);
    /* fc3 has no bias: FLOPs are exactly 2 x 2 x 64 x 10. */
    assert_i64(layer(&m, "fc3")->flops, 2560);
    assert_i64(m.a->macs, 1024 + 4096 + 1280);
    /* Per-element FLOPs of docs/ops.md on 64 elements (2 x 32). */
    assert_i64(layer(&m, "act1")->flops, 2 * 32);
    assert_i64(layer(&m, "gate_sigmoid")->flops, 4 * 64);
    assert_i64(layer(&m, "glu")->flops, 64);
    assert_i64(layer(&m, "act2")->flops, 5 * 64);
    assert_i64(layer(&m, "probs")->flops, 5 * 20);
    assert_i64(layer(&m, "stage")->flops, 0);
    model_free(&m);
}

static void test_tiny_cnn(void **state)
{
    (void)state;
    model m;
    model_load(&m, "tiny-cnn.xml");
    /* 216 + 16 + 576 + 16 + 296 + 132 + 90. */
    assert_i64(m.a->params, 1342);
    check_input(&m, 0, "image", "[2,3,16,16]", NTP_DTYPE_U8);
    check_layer_shape(&m, "to_float", "[2,3,16,16]");
    check_layer_shape(&m, "pad", "[2,3,18,18]");
    check_layer_shape(&m, "conv1", "[2,8,16,16]");
    check_layer_shape(&m, "pool1", "[2,8,8,8]");
    /* Dilation 2 with padding 2 keeps 8x8: 8 + 4 - 2 x 2 - 1 + 1 = 8. */
    check_layer_shape(&m, "conv3", "[2,8,8,8]");
    /* Transposed 2x2/2: (8 - 1) x 2 + 2 = 16. */
    check_layer_shape(&m, "up", "[2,4,16,16]");
    /* Average 3x3/2 pad 1: (16 + 2 - 3) / 2 + 1 = 8. */
    check_layer_shape(&m, "pool2", "[2,4,8,8]");
    check_layer_shape(&m, "pooled", "[2,8,1,1]");
    check_output_shape(&m, 0, "[2,10]");

    /* conv1: 2 x 8 x 16 x 16 outputs x 27 = 110,592 MACs. */
    assert_i64(layer(&m, "conv1")->macs, 110592);
    /* conv2: 2 x 8 x 8 x 8 outputs x 72 = 73,728. */
    assert_i64(layer(&m, "conv2")->macs, 73728);
    /* conv3, groups 2: 1,024 outputs x 4 x 9 = 36,864 MACs; FLOPs add the
     * 1,024 bias adds. */
    assert_i64(layer(&m, "conv3")->macs, 36864);
    assert_i64(layer(&m, "conv3")->flops, 2 * 36864 + 1024);
    /* Deconv: 2 x 8 x 8 x 8 inputs x 4 x 2 x 2 = 16,384 MACs (as PyTorch's
     * ConvTranspose2d, checked by scripts/model-reference.py). */
    assert_i64(layer(&m, "up")->macs, 16384);
    assert_i64(layer(&m, "up")->params, 132);
    /* Pools: max 2x2 = 1,024 outputs x 4 ... */
    assert_i64(layer(&m, "pool1")->flops, 1024 * 4);
    /* ... average 3x3: 512 outputs x 9 + 512 divisions ... */
    assert_i64(layer(&m, "pool2")->flops, 512 * 9 + 512);
    /* ... global: every input once, plus N x C divisions for the average. */
    assert_i64(layer(&m, "gap")->flops, 512 + 8);
    assert_i64(layer(&m, "gmp")->flops, 512);
    /* Batch norm: 2 FLOPs per element. */
    assert_i64(layer(&m, "bn1")->flops, 2 * 4096);
    assert_i64(layer(&m, "act2")->flops, 4 * 1024);
    assert_i64(macs_of(&m, conv_fc), 110592 + 73728 + 36864 + 160);
    model_free(&m);
}

static void test_tiny_rnn(void **state)
{
    (void)state;
    model m;
    model_load(&m, "tiny-rnn.xml");
    /* 2,880 + 208 + 45 + 208. */
    assert_i64(m.a->params, 3341);
    check_layer_shape(&m, "gru", "[10,2,16]");
    check_layer_shape(&m, "rnn", "[10,2,8]");
    check_layer_shape(&m, "logits", "[10,2,5]");
    check_layer_shape(&m, "decode", "[2,10]");
    check_layer_shape(&m, "summary", "[2,8]");
    assert_i64(ntp_graph_output_count(m.g), 2);
    /* GRU: 2 directions x 10 steps x 2 x 3 gates x 16 x (12 + 16). */
    assert_i64(layer(&m, "gru")->macs, 2 * 10 * 2 * 3 * 16 * 28);
    assert_i64(layer(&m, "gru")->params, 2880);
    /* RNN: 10 x 2 x 8 x (16 + 8). */
    assert_i64(layer(&m, "rnn")->macs, 10 * 2 * 8 * 24);
    assert_i64(layer(&m, "summary")->macs, 10 * 2 * 8 * 24);
    assert_i64(layer(&m, "act")->flops, 4 * 320);
    model_free(&m);
}

static void test_tiny_attention(void **state)
{
    (void)state;
    model m;
    model_load(&m, "tiny-attention.xml");
    /* 1,088 + 32 + 768 + 516. */
    assert_i64(m.a->params, 2404);
    check_layer_shape(&m, "attn", "[2,8,16]");
    check_layer_shape(&m, "scores", "[2,8,8]");
    check_layer_shape(&m, "context", "[2,8,16]");
    check_layer_shape(&m, "features_first", "[2,16,8]");
    check_layer_shape(&m, "flat", "[2,128]");
    check_output_shape(&m, 0, "[2,4]");
    /* Attention, N 2, S 8, D 16: projections 2 x (8 x 256 + 2 x 8 x 256) =
     * 12,288, scores and context 2 x 2 x 8 x 8 x 16 = 4,096, output
     * 2 x 8 x 256 = 4,096: 20,480 MACs. FLOPs add the softmax (5 x 2 x 4
     * heads x 64 = 2,560) and the biases (2 x 16 x (2 x 8 + 2 x 8) = 1,024). */
    assert_i64(layer(&m, "attn")->macs, 20480);
    assert_i64(layer(&m, "attn")->flops, 2 * 20480 + 2560 + 1024);
    /* matmul: 2 x 8 x 16 x 8 = 2,048 MACs each. */
    assert_i64(layer(&m, "scores")->macs, 2048);
    assert_i64(layer(&m, "context")->macs, 2048);
    /* Layer norm: 8 FLOPs per element. */
    assert_i64(layer(&m, "ln1")->flops, 8 * 256);
    static const char *const dense[] = {"fc", "matmul", "attention", NULL};
    assert_i64(macs_of(&m, dense), 20480 + 3 * 4096 + 2 * 2048 + 1024);
    model_free(&m);
}

/* The ops added for ONNX models, in tiny-ops.xml. Every activation is
 * [2,4,6,6] = 288 elements unless a reduction or resampling says otherwise,
 * so the FLOPs below are multiples of 288 (docs/ops.md, "Ops added for
 * ONNX"). */
static void test_tiny_ops(void **state)
{
    (void)state;
    model m;
    model_load(&m, "tiny-ops.xml");
    /* offset 4 + prelu slope 4 + instancenorm 2 x 4; the scalar constant is
     * a buffer (trainable="false"): 4 bytes of weights, no param. */
    assert_i64(m.a->params, 16);
    assert_i64(layer(&m, "offset")->params, 4);
    assert_i64(layer(&m, "scalar")->params, 0);
    assert_i64(layer(&m, "scalar")->weight_bytes, 4);
    assert_i64(layer(&m, "prelu")->params, 4);
    assert_i64(layer(&m, "instancenorm")->params, 8);
    /* 16 params and the 1 buffer value, 4 bytes each. */
    assert_i64(m.a->weight_bytes, 17 * 4);
    assert_i64(m.a->n_layers, 70);
    check_input(&m, 0, "x", "[2,4,6,6]", NTP_DTYPE_F32);
    assert_i64(ntp_graph_output_count(m.g), 1);
    check_output_shape(&m, 0, "[2,4,6,6]");

    /* Constants take their shape attribute; the input wired to them is not
     * read. */
    check_layer_shape(&m, "offset", "[1,4,1,1]");
    check_layer_shape(&m, "scalar", "[1]");
    /* Reductions keep every reduced dim as 1; no axes reduces everything;
     * axes="-1" is the last dim. */
    check_layer_shape(&m, "reduce_mean", "[2,4,1,1]");
    check_layer_shape(&m, "reduce_sum", "[2,1,6,6]");
    check_layer_shape(&m, "reduce_max", "[2,4,6,1]");
    check_layer_shape(&m, "reduce_min", "[1,1,1,1]");
    check_layer_shape(&m, "reduce_l1", "[2,4,1,6]");
    check_layer_shape(&m, "reduce_l2", "[2,4,6,1]");
    check_layer_shape(&m, "reduce_sum_square", "[1,1,6,6]");
    /* [2,4,1,1] broadcast with the shorter shape 6,6 (aligned right). */
    check_layer_shape(&m, "expand", "[2,4,6,6]");
    /* Eight operands of five shapes broadcast to the full one. */
    check_layer_shape(&m, "reductions", "[2,4,6,6]");
    /* Slice 1:5 of both spatial dims; linear x1.5 gives 4 x 1.5 = 6;
     * a step of -1 from -1 (5) to -7 (clamped to -1) keeps all 6. */
    check_layer_shape(&m, "crop", "[2,4,4,4]");
    check_layer_shape(&m, "stretch", "[2,4,6,6]");
    check_layer_shape(&m, "mirror", "[2,4,6,6]");
    check_layer_shape(&m, "shrink_nearest", "[2,4,3,3]");
    check_layer_shape(&m, "grow_cubic", "[2,4,6,6]");

    /* Unary FLOPs per element: 1 (abs), 4 (transcendental), 3 (softsign),
     * 6 (softplus, selu, log_softmax), 5 (elu, celu), 2 (prelu). */
    assert_i64(layer(&m, "abs")->flops, 288);
    assert_i64(layer(&m, "exp")->flops, 4 * 288);
    assert_i64(layer(&m, "acosh")->flops, 4 * 288);
    assert_i64(layer(&m, "softsign")->flops, 3 * 288);
    assert_i64(layer(&m, "softplus")->flops, 6 * 288);
    assert_i64(layer(&m, "celu")->flops, 5 * 288);
    assert_i64(layer(&m, "prelu")->flops, 2 * 288);
    assert_i64(layer(&m, "log_softmax")->flops, 6 * 288);
    assert_i64(layer(&m, "hardmax")->flops, 288);
    /* mish: softplus 6, tanh 4, the product 1; log_sigmoid: a softplus. */
    assert_i64(layer(&m, "mish")->flops, 11 * 288);
    assert_i64(layer(&m, "log_sigmoid")->flops, 6 * 288);
    /* Binary: pow 4 per element, where 1, max of 8 inputs 7, mean of 6
     * inputs 6 (5 additions and a division). */
    assert_i64(layer(&m, "pow")->flops, 4 * 288);
    /* fmod and greater: one per element, as the other binary ops (sub,
     * div). */
    assert_i64(layer(&m, "fmod")->flops, 288);
    assert_i64(layer(&m, "greater")->flops, 288);
    assert_i64(layer(&m, "darknet_head")->flops, 3 * 288);
    assert_i64(layer(&m, "where")->flops, 288);
    assert_i64(layer(&m, "trig")->flops, 7 * 288);
    assert_i64(layer(&m, "rounding")->flops, 6 * 288);
    /* Reductions: one per input element, plus 8 divisions for the mean;
     * 288 squares and a square root for each of 48 outputs for l2; 288
     * exponentials and subtractions and 4 per output (8) for log_sum_exp;
     * a logarithm (4) for each of the 72 outputs of log_sum. */
    assert_i64(layer(&m, "reduce_mean")->flops, 288 + 8);
    assert_i64(layer(&m, "reduce_l2")->flops, 2 * 288 + 48);
    assert_i64(layer(&m, "reduce_log_sum_exp")->flops, 6 * 288 + 4 * 8);
    assert_i64(layer(&m, "reduce_log_sum")->flops, 288 + 4 * 72);
    assert_i64(layer(&m, "reduce_prod")->flops, 288);
    /* instancenorm 8 per element; lrn 2 x size + 7 = 13 per element. */
    assert_i64(layer(&m, "instancenorm")->flops, 8 * 288);
    assert_i64(layer(&m, "lrn")->flops, 13 * 288);
    /* Resampling: nearest is data movement; linear over 2 resized dims
     * reads 2 x 2 neighbours per output, cubic 4 x 4, one MAC each. */
    assert_i64(layer(&m, "shrink_nearest")->macs, 0);
    assert_i64(layer(&m, "shrink_nearest")->flops, 0);
    assert_i64(layer(&m, "stretch")->macs, 4 * 288);
    assert_i64(layer(&m, "stretch")->flops, 2 * 4 * 288);
    assert_i64(layer(&m, "grow_cubic")->macs, 16 * 288);
    assert_i64(layer(&m, "grow_cubic")->flops, 2 * 16 * 288);
    assert_i64(m.a->macs, 20 * 288);
    /* Data movement costs nothing. */
    assert_i64(layer(&m, "offset")->flops, 0);
    assert_i64(layer(&m, "crop")->flops, 0);
    assert_i64(layer(&m, "mirror")->flops, 0);
    assert_i64(layer(&m, "expand")->flops, 0);
    /* The whole model, family by family in units of 288 FLOPs:
     *   rounding      sub 1, abs neg floor ceil round sign 6, mean of 6: 6   = 13
     *   exponentials  exp log cosh pow erf 5 x 4, sqrt reciprocal div fmod
     *                 greater 5, mish 11, log_sigmoid 6, darknet_head 3 (the
     *                 logistic on 3 of its 4 channels), mean of 8: 8         = 53
     *   trig          10 functions x 4, softsign 3, max of 8: 7              = 50
     *   activations   softplus 6 elu 5 selu 6 celu 5 hard_sigmoid 3
     *                 thresholded_relu 2 shrink 3 prelu 2, min of 8: 7       = 39
     *   channels      log_softmax 6, hardmax 1, where 1                      =  8
     *   reductions    mean sum max min prod 5, l1 l2 sum_square 6, add of 8:
     *                 7, log_sum 1 + 1 (its 72 logarithms), log_sum_exp 6,
     *                 sub 1                                                  = 27
     *   norms         instancenorm 8, lrn 13                                 = 21
     *   resampling    linear 8, cubic 32                                     = 40
     *   output        mean of 8: 8, add 1                                    =  9
     * 260 x 288 = 74,880, plus the mean's 8 divisions, l2's 48 square roots
     * and log_sum_exp's 8 logarithms (32): 74,968. */
    assert_i64(m.a->flops, 260 * 288 + 8 + 48 + 32);
    model_free(&m);

    /* The batch is a param: the nearest-neighbour sizes follow it. */
    ntp_load_opts o = {0};
    o.batch = 3;
    model_load_opts(&m, "tiny-ops.xml", &o);
    check_layer_shape(&m, "shrink_nearest", "[3,4,3,3]");
    check_output_shape(&m, 0, "[3,4,6,6]");
    assert_i64(m.a->params, 16);
    model_free(&m);
}

/* The output of layer `name` as copied after its step ran (outs[] is
 * indexed by tensor); it must hold `count` values. */
static const float *tensor_of(const ntp_graph *g, float *const *outs, const char *name,
                              int64_t count)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i].name, name) == 0) {
            int t = g->nodes[i].out[0];
            if (!outs[t])
                fail_msg("layer '%s' left no output", name);
            assert_i64(ntp_shape_numel(&g->tensors[t].shape), count);
            return outs[t];
        }
    fail_msg("no layer '%s'", name);
    return NULL;
}

static void check_close(const char *what, int64_t i, double got, double want, double tol)
{
    if (!(fabs(got - want) <= tol))
        fail_msg("%s[%lld] is %.9g, expected %.9g (tolerance %g)", what, (long long)i, got, want,
                 tol);
}

/* tiny-ops.xml on the reference backend, one step at a time so that every
 * layer's output can be read before the arena reuses its memory: all of
 * them finite (the model keeps every function inside its domain), and the
 * compositions it relies on hold. Then through ntp_run, whose saved output
 * must be finite and equal the step-by-step one. */
static void test_tiny_ops_runs_finite(void **state)
{
    (void)state;
    model m;
    model_load(&m, "tiny-ops.xml");
    const ntp_graph *g = m.g;
    float **outs = calloc((size_t)g->n_tensors, sizeof *outs);
    assert_non_null(outs);

    ntp_exec x;
    ntp_exec_opts eo;
    memset(&eo, 0, sizeof eo);
    eo.backend = ntp__backend_find("ref");
    assert_non_null(eo.backend);
    eo.seed = 1;
    eo.first = 0;
    eo.last = g->n_nodes - 1;
    ntp_status st = ntp__exec_init(m.ctx, &x, g, &eo);
    if (st != NTP_STATUS_OK)
        fail_msg("reference plan: %s", ntp_ctx_errmsg(m.ctx));
    int checked = 0;
    for (int s = 0; s < x.n_steps; s++) {
        if ((st = ntp__exec_steps(m.ctx, &x, s, s)) != NTP_STATUS_OK)
            fail_msg("step %d: %s", s, ntp_ctx_errmsg(m.ctx));
        if (x.steps[s].kind != NTP_STEP_NODE)
            continue;
        const ntp_node *n = &g->nodes[g->order[x.steps[s].pos]];
        for (int k = 0; k < n->n_out; k++) {
            int t = n->out[k], sl = x.tslot[t];
            int64_t cnt = ntp_shape_numel(&g->tensors[t].shape);
            if (sl < 0 || x.slots[sl].dtype != NTP_DTYPE_F32 || x.slots[sl].bytes < cnt * 4)
                fail_msg("layer '%s': no f32 output to read", n->name);
            const float *v = x.slots[sl].data;
            for (int64_t i = 0; i < cnt; i++)
                if (!isfinite(v[i]))
                    fail_msg("layer '%s' (%s): output[%lld] is %g", n->name, ntp__op_name(n->op),
                             (long long)i, (double)v[i]);
            outs[t] = malloc((size_t)cnt * sizeof *outs[t]);
            assert_non_null(outs[t]);
            memcpy(outs[t], v, (size_t)cnt * sizeof *outs[t]);
            checked++;
        }
    }
    ntp__exec_free(&x);
    assert_i64(checked, 70);

    const int64_t n = 288;
    const float *c = tensor_of(g, outs, "centered", n), *lg = tensor_of(g, outs, "log", n),
                *as = tensor_of(g, outs, "asinh", n), *ac = tensor_of(g, outs, "acosh", n),
                *hm = tensor_of(g, outs, "hardmax", n), *ls = tensor_of(g, outs, "log_softmax", n),
                *ng = tensor_of(g, outs, "neg", n), *wh = tensor_of(g, outs, "where", n),
                *rp = tensor_of(g, outs, "reduce_prod", 72), *out = tensor_of(g, outs, "out", n),
                *co = tensor_of(g, outs, "cosh", n), *fm = tensor_of(g, outs, "fmod", n),
                *gt = tensor_of(g, outs, "greater", n), *off = tensor_of(g, outs, "offset", 4);
    int64_t greater_ones = 0;
    for (int64_t i = 0; i < n; i++) {
        /* Each function is rounded once to f32 after the inner one was:
         * log(exp(c)) and asinh(sinh(c)) are c within a few ulps of the
         * intermediate; acosh(cosh(c)) loses up to sqrt(2 x 2^-24) ~ 3.5e-4
         * near c = 0, where cosh is flat. */
        check_close("log(exp(c))", i, lg[i], c[i], 1e-5 * (1 + fabs(c[i])));
        check_close("asinh(sinh(c))", i, as[i], c[i], 1e-5 * (1 + fabs(c[i])));
        check_close("acosh(cosh(c))", i, ac[i], fabs(c[i]), 1e-3);
        /* hardmax is 0 or 1; where takes log_softmax at the 1s, neg
         * elsewhere. */
        if (hm[i] != 0.0f && hm[i] != 1.0f)
            fail_msg("hardmax[%lld] is %.9g, expected 0 or 1", (long long)i, (double)hm[i]);
        check_close("where", i, wh[i], hm[i] != 0.0f ? ls[i] : ng[i], 0.0);
        /* fmod is exact: C's fmod of the f32 operands, the sign of c. */
        check_close("fmod(c, cosh(c))", i, fm[i], fmod(c[i], co[i]), 0.0);
        /* greater: c against its channel's offset ([1,4,1,1] broadcast
         * over [2,4,6,6]), 1 or 0. */
        check_close("greater(c, offset)", i, gt[i], c[i] > off[(i / 36) % 4] ? 1.0 : 0.0, 0.0);
        greater_ones += gt[i] == 1.0f;
    }
    /* Both answers occur, so the check above judges both. */
    if (greater_ones == 0 || greater_ones == n)
        fail_msg("greater is %lld of %lld times 1: one answer only", (long long)greater_ones,
                 (long long)n);
    /* One 1 per (sample, position) across the 4 channels. */
    for (int b = 0; b < 2; b++)
        for (int p = 0; p < 36; p++) {
            float ones = 0;
            for (int ch = 0; ch < 4; ch++)
                ones += hm[(b * 4 + ch) * 36 + p];
            check_close("hardmax ones per position", b * 36 + p, ones, 1.0, 0.0);
        }
    /* A product of 4 values in (0, 1]. */
    for (int64_t i = 0; i < 72; i++)
        if (!(rp[i] > 0.0f && rp[i] <= 1.0f))
            fail_msg("reduce_prod[%lld] is %.9g, expected a value in (0, 1]", (long long)i,
                     (double)rp[i]);

    /* The same model through ntp_run on the reference backend. */
    char dir[64], file[128];
    snprintf(dir, sizeof dir, "/tmp/ntp-test-models-XXXXXX");
    assert_non_null(mkdtemp(dir));
    ntp_run_opts ro;
    ntp_run_opts_default(&ro);
    ro.backend = "ref";
    ro.warmup = 1;
    ro.iterations = 3;
    ro.min_time_s = 0;
    ro.save_outputs_dir = dir;
    ntp_run_result *r = NULL;
    if (ntp_run(m.ctx, g, &ro, &r) != NTP_STATUS_OK)
        fail_msg("run: %s", ntp_ctx_errmsg(m.ctx));
    assert_i64(r->n_layers, 70);
    for (int i = 0; i < r->n_layers; i++)
        assert_string_equal(r->layers[i].backend, "ref");
    ntp_run_result_free(r);
    snprintf(file, sizeof file, "%s/output_0.npy", dir);
    ntp_npy a;
    if (ntp__npy_read(m.ctx, file, &a) != NTP_STATUS_OK)
        fail_msg("%s", ntp_ctx_errmsg(m.ctx));
    unlink(file);
    rmdir(dir);
    assert_i64(a.dtype, NTP_DTYPE_F32);
    assert_i64(a.nbytes, n * 4);
    for (int64_t i = 0; i < n; i++) {
        float v = ((const float *)a.data)[i];
        if (!isfinite(v))
            fail_msg("output[%lld] is %g", (long long)i, (double)v);
        /* Same weights, same inputs (seed 1), same kernels. */
        check_close("saved output", i, v, out[i], 0.0);
    }
    ntp__npy_free(&a);
    for (int t = 0; t < g->n_tensors; t++)
        free(outs[t]);
    free(outs);
    model_free(&m);
}

/* --- decoder transformers (docs/decoders.md) ----------------------------------------- */

static void test_gpt2_small(void **state)
{
    (void)state;
    model m;
    model_load(&m, "gpt2-small.xml");
    /* HuggingFace GPT2LMHeadModel("gpt2").num_parameters(): the LM head
     * shares wte's table and counts once. */
    assert_i64(m.a->params, 124439808);
    assert_i64(layer(&m, "lm_head")->params, 0);
    assert_i64(layer(&m, "wte")->params, 50257 * 768);
    assert_i64(count_of(&m, "kv_attention"), 12);
    check_layer_shape(&m, "lm_head", "[1,128,50257]");
    /* Weights once: f32 params plus nothing else. */
    assert_i64(m.a->weight_bytes, 4 * 124439808LL);
    /* Causal attention at S = 128 from position 0: 128·129/2 = 8,256
     * (query, key) pairs per head, 2 products of head_dim 64 MACs each. */
    assert_i64(layer(&m, "h0_attn")->macs, 2LL * 12 * 8256 * 64);
    assert_i64(layer(&m, "lm_head")->macs, 128LL * 768 * 50257);
    model_free(&m);
}

static void test_tinyllama(void **state)
{
    (void)state;
    model m;
    model_load(&m, "tinyllama.xml");
    /* TinyLlama-1.1B's published count: 22 layers, hidden 2048, 32 heads,
     * 4 key/value heads, FFN 5632, vocab 32000, untied head. */
    assert_i64(m.a->params, 1100048384);
    assert_i64(count_of(&m, "rmsnorm"), 45);
    assert_i64(count_of(&m, "rope"), 44);
    assert_i64(layer(&m, "l0_k")->params, 2048 * 256);
    assert_i64(layer(&m, "lm_head")->params, 32000 * 2048);
    check_layer_shape(&m, "l21_attn", "[1,128,2048]");
    model_free(&m);
}

static void test_tiny_decoder(void **state)
{
    (void)state;
    model m;
    model_load(&m, "tiny-decoder.xml");
    assert_i64(m.a->params, 29568);
    check_input(&m, 0, "tokens", "[1,8]", NTP_DTYPE_I32);
    check_input(&m, 1, "positions", "[1,8]", NTP_DTYPE_I32);
    assert_i64(ntp_graph_output_count(m.g), 1);
    check_output_shape(&m, 0, "[1,8]");
    model_free(&m);
}

/* --- together -------------------------------------------------------------------------- */

static const char *const bundled[] = {
    "alexnet.xml",
    "bert-base.xml",
    "deepspeech.xml",
    "lstm-lm.xml",
    "mobilenetv2.xml",
    "resnet50.xml",
    "tiny-attention.xml",
    "tiny-cnn.xml",
    "tiny-mlp.xml",
    "tiny-ops.xml",
    "tiny-rnn.xml",
    "vgg16.xml",
    /* Decoder transformers (docs/decoders.md). */
    "gpt2-small.xml",
    "tinyllama.xml",
    "tiny-decoder.xml",
    /* The load generator's calibration model (docs/load.md). */
    "serve-delay.xml",
};

/* Together the bundled models use every op of the op table at least once
 * (models/README.md lists which model covers which). */
static void test_every_op_covered(void **state)
{
    (void)state;
    bool seen[NTP_OP_COUNT] = {false};
    for (size_t i = 0; i < sizeof bundled / sizeof bundled[0]; i++) {
        model m;
        model_load(&m, bundled[i]);
        for (int k = 0; k < m.a->n_layers; k++) {
            ntp_op op = ntp__op_from_name(m.a->layers[k].type);
            assert_true(op < NTP_OP_COUNT);
            seen[op] = true;
        }
        model_free(&m);
    }
    for (int op = 0; op < NTP_OP_COUNT; op++)
        if (!seen[op])
            fail_msg("no bundled model uses '%s'", ntp__op_name((ntp_op)op));
}

/* The ONNX operator an op is, from whichever table gives it. */
static const char *any_onnx(ntp_op op)
{
    const char *o = ntp__op_onnx_name(op);
    if (!o)
        o = ntp__op_unary_onnx(op);
    return o ? o : ntp__op_binary_onnx(op);
}

/* The op table's class columns agree with each other: a unary op (a row
 * in NTP_UNARY_TABLE) is of the unary class in every column; an emitter
 * that writes the table's ONNX operator has one; and no two ops share an
 * ONNX operator, since the import finds an op by it. */
static void test_op_table_columns(void **state)
{
    (void)state;
    for (int i = 0; i < NTP_OP_COUNT; i++) {
        ntp_op op = (ntp_op)i;
        const char *name = ntp__op_name(op), *onnx = ntp__op_onnx_name(op);
        bool unary = ntp__op_is_unary(op);
        if (unary != (ntp__op_onnx(op) == NTP_OP_ONNX_UNARY) ||
            unary != (ntp__op_torch(op) == NTP_OP_TORCH_UNARY) ||
            unary != (ntp__op_backward(op) == NTP_OP_BACKWARD_UNARY))
            fail_msg("%s: unary in some class columns only", name);
        /* A binary op (a row in NTP_BINARY_TABLE) is written by the binary
         * emitter, which writes that table's operator, and only it is. */
        if (ntp__op_is_binary(op) != (ntp__op_onnx(op) == NTP_OP_ONNX_BINARY) ||
            (ntp__op_is_binary(op) && !ntp__op_binary_onnx(op)))
            fail_msg("%s: binary in one of NTP_BINARY_TABLE and the ONNX column only", name);
        switch (ntp__op_onnx(op)) {
        case NTP_OP_ONNX_SIMPLE:
        case NTP_OP_ONNX_REDUCE:
        case NTP_OP_ONNX_REDUCE_AXES_IN:
        case NTP_OP_ONNX_NARY:
        case NTP_OP_ONNX_CONV:
        case NTP_OP_ONNX_POOL:
        case NTP_OP_ONNX_BATCHNORM:
        case NTP_OP_ONNX_LAYERNORM:
        case NTP_OP_ONNX_WHERE:
        case NTP_OP_ONNX_SPLIT:
        case NTP_OP_ONNX_RESHAPE:
        case NTP_OP_ONNX_PAD:
        case NTP_OP_ONNX_EMBEDDING:
        case NTP_OP_ONNX_RNN:
        case NTP_OP_ONNX_SLICE:
        case NTP_OP_ONNX_EXPAND:
        case NTP_OP_ONNX_RESIZE:
            if (!onnx)
                fail_msg("%s: its ONNX emitter writes the table's operator, which is NULL", name);
            break;
        case NTP_OP_ONNX_NONE:
        case NTP_OP_ONNX_UNARY:
        case NTP_OP_ONNX_BINARY:
        case NTP_OP_ONNX_FC:
        case NTP_OP_ONNX_MATMUL:
        case NTP_OP_ONNX_ATTENTION:
        case NTP_OP_ONNX_CONSTANT:
        case NTP_OP_ONNX_DECODER:
        case NTP_OP_ONNX_DARKNET_HEAD:
        case NTP_OP_ONNX_CONVERT:
            if (onnx)
                fail_msg("%s: ONNX operator %s, which its emitter does not write", name, onnx);
            break;
        }
        const char *own = any_onnx(op);
        for (int j = 0; own && j < i; j++) {
            const char *other = any_onnx((ntp_op)j);
            if (other && !strcmp(other, own))
                fail_msg("%s and %s are both ONNX %s", ntp__op_name((ntp_op)j), name, own);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resnet50),
        cmocka_unit_test(test_resnet101_by_param),
        cmocka_unit_test(test_resnet50_batch),
        cmocka_unit_test(test_mobilenetv2),
        cmocka_unit_test(test_vgg16),
        cmocka_unit_test(test_alexnet),
        cmocka_unit_test(test_deepspeech),
        cmocka_unit_test(test_deepspeech_params),
        cmocka_unit_test(test_bert_base),
        cmocka_unit_test(test_bert_layers_param),
        cmocka_unit_test(test_lstm_lm),
        cmocka_unit_test(test_tiny_mlp),
        cmocka_unit_test(test_tiny_cnn),
        cmocka_unit_test(test_tiny_rnn),
        cmocka_unit_test(test_tiny_attention),
        cmocka_unit_test(test_tiny_ops),
        cmocka_unit_test(test_tiny_ops_runs_finite),
        cmocka_unit_test(test_gpt2_small),
        cmocka_unit_test(test_tinyllama),
        cmocka_unit_test(test_tiny_decoder),
        cmocka_unit_test(test_every_op_covered),
        cmocka_unit_test(test_op_table_columns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
