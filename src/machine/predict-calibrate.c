/* Calibrating the latency model: a designed set of single-layer
 * topologies per op family, each timed through the public ntp_run on the
 * chosen backend and precision (as the machine's GEMM ceiling is), then a
 * non-negative least-squares fit per family (predict-fit.c), a model of
 * the backend's reorder rows those runs timed, and a correction per
 * implementation the runs named (docs/predict.md#implementations).
 *
 * The design spans the shapes real models have: convolutions by kernel
 * size, stride, groups and channel counts from the stem to the last
 * stage, fully connected layers by M, N and K from a single vector to a
 * 200-step sequence, depthwise, pooling, element-wise, normalisation,
 * LSTM and GRU cells over a sequence, and attention. The --quick design
 * keeps a few small configurations per family, for tests. */
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend-impl.h"
#include "core/ctx-impl.h"
#include "measure/machine-impl.h"
#include "measure/measure-impl.h"
#include "ntprof/ntprof.h"
#include "predict-impl.h"

void ntp_calibrate_opts_default(ntp_calibrate_opts *o)
{
    memset(o, 0, sizeof *o);
    o->precision = NTP_DTYPE_F32;
    o->keep = NTP_CALIBRATE_KEEP_FASTEST;
}

const char *ntp_calibrate_keep_name(int keep)
{
    return keep == NTP_CALIBRATE_KEEP_FASTEST  ? "fastest"
           : keep == NTP_CALIBRATE_KEEP_MEDIAN ? "median"
                                               : NULL;
}

bool ntp_calibrate_keep_parse(const char *name, int *keep)
{
    for (int k = NTP_CALIBRATE_KEEP_FASTEST; name && k <= NTP_CALIBRATE_KEEP_MEDIAN; k++)
        if (strcmp(name, ntp_calibrate_keep_name(k)) == 0) {
            *keep = k;
            return true;
        }
    return false;
}

/* One configuration: a family, the markup of its input(s) and layer
 * (the layer is always named "L"), and whether the quick design has it. */
typedef struct config {
    ntp_predict_family family;
    bool quick;
    /* The channels of a 1x1 conv that makes each input (0: a relu, or
     * nothing when timed warm): the layout a layer after a conv reads in a
     * network (oneDNN: blocked, or NHWC off its channel block), which picks
     * its kernel. */
    int conv_fed;
    /* A recurrent step's product on ref (sample kind "step", fit_gemv):
     * timed warm whatever the cache mode, as a recurrent layer re-reads
     * its R at every step from the cache it stays in. */
    bool step;
    /* The warm twin of a small configuration (sample kind "warm",
     * fit_cold): the same markup timed without writing over the caches
     * first, so that the difference is what a layer pays for finding its
     * code and its backend's state evicted, not its data's traffic. */
    bool warm;
    /* A probe after spacers (sample kind "kept", fit_kept): timed without
     * the flush, again and again, so that between two of its passes only
     * its spacers ran: what a network's pass of their size leaves of its
     * weights. */
    bool kept;
    char xml[1024];
} config;

typedef struct design {
    config *c;
    int n, cap;
} design;

static bool add(design *d, ntp_predict_family f, bool quick, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool add(design *d, ntp_predict_family f, bool quick, const char *fmt, ...)
{
    if (d->n == d->cap) {
        int cap = d->cap ? 2 * d->cap : 64;
        config *c = realloc(d->c, (size_t)cap * sizeof *c);
        if (!c)
            return false;
        d->c = c;
        d->cap = cap;
    }
    config *c = &d->c[d->n++];
    c->family = f;
    c->quick = quick;
    c->conv_fed = 0;
    c->step = false;
    c->warm = false;
    c->kept = false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->xml, sizeof c->xml, fmt, ap);
    va_end(ap);
    return true;
}

/* A spacer of a "kept" configuration (config.kept), %d its number, %s
 * its input (the first's). */
#define KEPT_SPACER "<conv name=\"s%d\" filters=\"256\" kernel=\"3\" pad=\"1\"%s/>"
#define NTP__KEPT_CHAIN_LEN 880

#define IN4 "<input name=\"x\" shape=\"1,%d,%d,%d\" dtype=\"f32\"/>"

/* The layer a "wake" configuration puts on ref before its layer L (the
 * shortest of its marks; the others are convolutions of the input's own
 * channels): the same configuration without it is in the design too (its
 * twin). */
#define WAKE_MARK "<transpose name=\"h\" perm=\"0,1,3,2\" backend=\"ref\"/>"

/* The span [*b, *e) of xml's mark: the element named "h" that ref runs;
 * false where it has none. */
static bool wake_mark(const char *xml, const char **b, const char **e)
{
    const char *h = strstr(xml, " name=\"h\"");
    if (!h)
        return false;
    const char *end = strstr(h, "/>");
    const char *start = h;
    while (start > xml && *start != '<')
        start--;
    const char *ref = end ? strstr(start, "backend=\"ref\"") : NULL;
    if (*start != '<' || !ref || ref > end)
        return false;
    *b = start;
    *e = end + 2;
    return true;
}

static bool is_wake(const char *xml)
{
    const char *b, *e;
    return wake_mark(xml, &b, &e);
}

static bool build_design(design *d)
{
    bool ok = true;
    /* Dense convolutions: cin, cout, spatial size, kernel, stride, groups. */
    static const int conv[][6] = {
        {3, 64, 224, 7, 2, 1},   {3, 32, 224, 3, 2, 1},   {16, 16, 112, 3, 1, 1},
        {32, 32, 56, 3, 1, 1},   {64, 64, 56, 3, 1, 1},   {64, 128, 56, 3, 2, 1},
        {128, 128, 28, 3, 1, 1}, {128, 256, 28, 3, 2, 1}, {256, 256, 14, 3, 1, 1},
        {256, 512, 14, 3, 2, 1}, {512, 512, 7, 3, 1, 1},  {24, 24, 56, 5, 1, 1},
        {64, 64, 28, 5, 1, 1},   {96, 96, 14, 5, 1, 1},   {128, 128, 14, 3, 1, 4},
        {256, 256, 7, 3, 1, 1},  {48, 48, 28, 3, 1, 1},   {16, 32, 28, 3, 2, 1},
        {64, 64, 14, 7, 1, 1},   {32, 64, 112, 3, 1, 1},  {128, 32, 28, 3, 1, 1},
        {96, 96, 28, 3, 1, 1},   {192, 192, 14, 3, 1, 1}, {8, 8, 16, 3, 1, 1},
    };
    for (size_t i = 0; i < sizeof conv / sizeof conv[0]; i++)
        ok &= add(d, NTP_PREDICT_FAMILY_CONV, conv[i][0] <= 16 && conv[i][2] <= 28,
                  IN4 "<conv name=\"L\" filters=\"%d\" kernel=\"%d\" stride=\"%d\" pad=\"%d\" "
                      "groups=\"%d\"/>",
                  conv[i][0], conv[i][2], conv[i][2], conv[i][1], conv[i][3], conv[i][4],
                  conv[i][3] / 2, conv[i][5]);
    /* Pointwise convolutions: cin, cout, spatial size, stride. */
    static const int pw[][4] = {
        {16, 64, 56, 1},   {64, 16, 56, 1},    {64, 256, 56, 1},   {256, 64, 56, 1},
        {128, 512, 28, 1}, {512, 128, 28, 1},  {256, 1024, 14, 1}, {1024, 256, 14, 1},
        {512, 2048, 7, 1}, {2048, 512, 7, 1},  {24, 144, 56, 1},   {144, 24, 56, 1},
        {32, 192, 28, 1},  {96, 576, 14, 1},   {160, 960, 7, 1},   {58, 58, 28, 1},
        {116, 116, 14, 1}, {232, 232, 7, 1},   {64, 128, 56, 2},   {256, 512, 28, 2},
        {8, 16, 16, 1},    {512, 1000, 13, 1}, {64, 64, 55, 1},    {16, 16, 8, 1},
    };
    for (size_t i = 0; i < sizeof pw / sizeof pw[0]; i++)
        ok &= add(d, NTP_PREDICT_FAMILY_CONV1X1, pw[i][0] <= 16 && pw[i][2] <= 28,
                  IN4 "<conv name=\"L\" filters=\"%d\" kernel=\"1\" stride=\"%d\"/>", pw[i][0],
                  pw[i][2], pw[i][2], pw[i][1], pw[i][3]);
    /* Depthwise: channels, spatial size, kernel, stride. */
    static const int dw[][4] = {
        {32, 112, 3, 1}, {96, 112, 3, 2}, {144, 56, 3, 1}, {144, 56, 3, 2}, {192, 28, 3, 1},
        {384, 14, 3, 1}, {576, 14, 3, 1}, {960, 7, 3, 1},  {58, 28, 3, 1},  {116, 28, 3, 2},
        {232, 7, 3, 1},  {64, 56, 5, 1},  {128, 28, 5, 2}, {256, 14, 5, 1}, {24, 56, 3, 2},
        {8, 16, 3, 1},   {16, 8, 3, 1},
    };
    for (size_t i = 0; i < sizeof dw / sizeof dw[0]; i++)
        ok &=
            add(d, NTP_PREDICT_FAMILY_DEPTHWISE, dw[i][0] <= 16,
                IN4 "<conv name=\"L\" filters=\"%d\" kernel=\"%d\" stride=\"%d\" pad=\"%d\" "
                    "groups=\"%d\"/>",
                dw[i][0], dw[i][1], dw[i][1], dw[i][0], dw[i][2], dw[i][3], dw[i][2] / 2, dw[i][0]);
    /* Fully connected: M (rows), K (in), N (out). */
    static const int fc[][3] = {
        {1, 512, 1000},
        {1, 2048, 1000},
        {1, 4096, 4096},
        {1, 1024, 1024},
        {16, 1024, 1024},
        {64, 512, 512},
        {200, 494, 512},
        {200, 512, 512},
        {200, 1024, 1024},
        {8, 768, 3072},
        {128, 768, 768},
        {4, 256, 256},
        {1, 256, 29},
        {200, 2048, 29},
        {32, 4096, 1024},
        {1, 1024, 1000},
        {2, 16, 8},
        {8, 64, 32},
        {4, 32, 16},
        /* Weights of 4 to 16 MB read once by a 100-row sequence. */
        {100, 2048, 2048},
        {100, 3072, 1280},
        {100, 494, 1280},
        /* Sequence-shaped products of 64 to 256 rows within the reference
         * backend's budget: its GEMM packs a panel of the weights once for
         * all rows, so it runs faster per FLOP the more rows share the
         * panel, and its other fc configurations under 100 MFLOP have at
         * most 64 rows or 29 columns (DeepSpeech's fc layers, 100 rows,
         * were predicted +80% on ref from those). */
        {128, 512, 512},
        {256, 256, 512},
        {64, 1024, 512},
    };
    for (size_t i = 0; i < sizeof fc / sizeof fc[0]; i++)
        ok &= add(d, NTP_PREDICT_FAMILY_FC, fc[i][1] <= 64,
                  "<input name=\"x\" shape=\"%d,%d\" dtype=\"f32\"/><fc name=\"L\" units=\"%d\"/>",
                  fc[i][0], fc[i][1], fc[i][2]);
    /* ref's recurrent step: one row of H by an LSTM's R (4H x H) of 256 to
     * 1536 units, 1 to 38 MB, timed warm (config.step): its dot-product
     * loop at the shape and sizes it runs at in a recurrent layer
     * (ntp_calibration.gemv, fit_gemv). */
    static const int step[] = {256, 512, 768, 1024, 1280, 1536};
    for (size_t i = 0; i < sizeof step / sizeof step[0]; i++) {
        ok &= add(d, NTP_PREDICT_FAMILY_FC, false,
                  "<input name=\"x\" shape=\"1,%d\" dtype=\"f32\"/><fc name=\"L\" units=\"%d\"/>",
                  step[i], 4 * step[i]);
        if (ok)
            d->c[d->n - 1].step = true;
    }
    /* What a pass keeps (config.kept, fit_kept): a 4 MB fc probe, the
     * {1, 1024, 1024} above, alone (its warm time) and after 1 to 16
     * spacers, 3x3 convolutions of 256 channels on 14x14 (2.4 MB of
     * weights each): passes of 7.2 to 42.6 MB with the probe's weights and
     * the arena (what a prediction counts for a network). A spacer
     * takes about as long for its bytes as a network's layers do (0.6 ms
     * on the Zen 5 VM, oneDNN): fc spacers of the probe's size, which run
     * at memory's speed, left it most of its weights through 71 MB there,
     * where SqueezeNet's pass of 12 MB left none
     * (docs/predict.md#weights-between-passes). */
    static const int spacers[] = {0, 1, 2, 3, 4, 6, 8, 12, 16};
    for (size_t i = 0; ok && i < sizeof spacers / sizeof spacers[0]; i++) {
        char chain[NTP__KEPT_CHAIN_LEN];
        size_t u = 0;
        chain[0] = 0;
        for (int k = 1; k <= spacers[i] && u < sizeof chain; k++)
            u += (size_t)snprintf(chain + u, sizeof chain - u, KEPT_SPACER, k,
                                  k == 1 ? " inputs=\"y\"" : "");
        ok = add(d, NTP_PREDICT_FAMILY_FC, false,
                 "<input name=\"x\" shape=\"1,1024\" dtype=\"f32\"/>%s%s<fc name=\"L\" "
                 "units=\"1024\"%s/>",
                 spacers[i] ? "<input name=\"y\" shape=\"1,256,14,14\" dtype=\"f32\"/>" : "", chain,
                 spacers[i] ? " inputs=\"x\"" : "");
        if (ok)
            d->c[d->n - 1].kept = true;
    }
    /* Pooling: op, channels, spatial size, kernel, stride (0: global). */
    static const struct {
        const char *op;
        int c, hw, k, s;
    } pool[] = {
        {"maxpool", 64, 112, 3, 2},         {"maxpool", 24, 112, 3, 2},
        {"maxpool", 128, 28, 2, 2},         {"maxpool", 256, 28, 2, 2},
        {"maxpool", 512, 14, 2, 2},         {"avgpool", 128, 56, 2, 2},
        {"avgpool", 256, 28, 2, 2},         {"maxpool", 64, 56, 3, 1},
        {"global_avgpool", 512, 7, 0, 0},   {"global_avgpool", 2048, 7, 0, 0},
        {"global_avgpool", 1024, 14, 0, 0}, {"global_avgpool", 64, 56, 0, 0},
        {"global_maxpool", 256, 14, 0, 0},  {"maxpool", 8, 16, 2, 2},
        {"global_avgpool", 16, 8, 0, 0},
    };
    for (size_t i = 0; i < sizeof pool / sizeof pool[0]; i++) {
        if (pool[i].k)
            ok &= add(d, NTP_PREDICT_FAMILY_POOL, pool[i].c <= 16,
                      IN4 "<%s name=\"L\" kernel=\"%d\" stride=\"%d\" pad=\"%d\"/>", pool[i].c,
                      pool[i].hw, pool[i].hw, pool[i].op, pool[i].k, pool[i].s,
                      pool[i].k / 2 * (pool[i].k % 2));
        else
            ok &= add(d, NTP_PREDICT_FAMILY_POOL, pool[i].c <= 16, IN4 "<%s name=\"L\"/>",
                      pool[i].c, pool[i].hw, pool[i].hw, pool[i].op);
    }
    /* Reductions over axes: a global average pool as an ONNX export writes
     * it (a mean over H and W: ShuffleNetV2's, MobileNet's, EfficientNet's),
     * its sum and max, and a mean over a sequence's features. oneDNN runs
     * them with its reduction primitive, far slower per byte than its
     * pooling or element-wise kernels (2026-12-03: ShuffleNetV2's mean over
     * 1024x7x7 took 0.130 ms, predicted 0.010 as element-wise). */
    static const struct {
        const char *op;
        int c, hw;
    } red[] = {
        {"reduce_mean", 1024, 7}, {"reduce_mean", 512, 7}, {"reduce_mean", 2048, 7},
        {"reduce_mean", 256, 14}, {"reduce_mean", 64, 56}, {"reduce_max", 512, 7},
        {"reduce_sum", 256, 14},  {"reduce_mean", 16, 8},
    };
    for (size_t i = 0; i < sizeof red / sizeof red[0]; i++)
        ok &= add(d, NTP_PREDICT_FAMILY_REDUCE, red[i].c <= 16, IN4 "<%s name=\"L\" axes=\"2,3\"/>",
                  red[i].c, red[i].hw, red[i].hw, red[i].op);
    static const int seq[][2] = {{100, 2048}, {100, 512}, {8, 16}};
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++)
        ok &= add(d, NTP_PREDICT_FAMILY_REDUCE, seq[i][1] <= 16,
                  "<input name=\"x\" shape=\"1,%d,%d\" dtype=\"f32\"/>"
                  "<reduce_mean name=\"L\" axes=\"2\"/>",
                  seq[i][0], seq[i][1]);
    /* Element-wise and data movement over activation sizes. */
    static const int sz[][2] = {{64, 112}, {64, 56}, {128, 28},  {256, 14},
                                {512, 7},  {16, 8},  {1024, 14}, {32, 112}};
    for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++) {
        int c = sz[i][0], hw = sz[i][1];
        bool q = c <= 16;
        ok &= add(d, NTP_PREDICT_FAMILY_ELTWISE, q, IN4 "<relu name=\"L\"/>", c, hw, hw);
        ok &= add(d, NTP_PREDICT_FAMILY_ELTWISE, q,
                  IN4 "<input name=\"y\" shape=\"1,%d,%d,%d\" dtype=\"f32\"/>"
                      "<add name=\"L\" inputs=\"x,y\"/>",
                  c, hw, hw, c, hw, hw);
        /* Data movement: concat, transpose (a channel shuffle's), split. */
        ok &= add(d, NTP_PREDICT_FAMILY_COPY, q,
                  IN4 "<input name=\"y\" shape=\"1,%d,%d,%d\" dtype=\"f32\"/>"
                      "<concat name=\"L\" inputs=\"x,y\" axis=\"1\"/>",
                  c, hw, hw, c, hw, hw);
        ok &= add(d, NTP_PREDICT_FAMILY_COPY, q, IN4 "<transpose name=\"L\" perm=\"0,2,3,1\"/>", c,
                  hw, hw);
        ok &= add(d, NTP_PREDICT_FAMILY_COPY, q, IN4 "<split name=\"L\" axis=\"1\" parts=\"2\"/>",
                  c, hw, hw);
        /* A channel split written as a slice (an ONNX export's x[:, :c/2]):
         * the reference backend's slice is a loop of its own, and a kernel
         * is corrected only where the calibration ran it. */
        ok &= add(d, NTP_PREDICT_FAMILY_COPY, false,
                  IN4 "<slice name=\"L\" starts=\"0\" ends=\"%d\" axes=\"1\"/>", c, hw, hw, c / 2);
        ok &= add(d, NTP_PREDICT_FAMILY_ELTWISE, false, IN4 "<sigmoid name=\"L\"/>", c, hw, hw);
        /* A reshape (ShuffleNet's view before its channel shuffle): every
         * backend copies it (ref's memcpy, oneDNN's reorder into a plain
         * output, XNNPACK's copy_nc), with a kernel of its own. */
        ok &= add(d, NTP_PREDICT_FAMILY_COPY, false,
                  IN4 "<reshape name=\"L\" shape=\"1,2,%d,%d,%d\"/>", c, hw, hw, c / 2, hw, hw);
    }
    /* A relu right after a transpose handed to ref (docs/predict.md#
     * waking-the-threads), 13 to 95 us as the copies networks hand to ref:
     * beside the relu alone above, the wake of the backend's threads,
     * which sleep while ref runs. */
    for (size_t i = 1; i < 5; i++)
        ok &= add(d, NTP_PREDICT_FAMILY_ELTWISE, false, IN4 WAKE_MARK "<relu name=\"L\"/>",
                  sz[i][0], sz[i][1], sz[i][1]);
    /* And after longer ones, a 1x1 and a 3x3 convolution of the input's
     * own channels on ref (about 1 and 8 ms here): the wake grows with
     * the time the workers slept (an XNNPACK relu 47 to 83 us after 1 ms
     * of ref, 91 to 155 after 25 ms; DeepSpeech's fc4 after its LSTM). */
    for (size_t i = 1; i < 3; i++)
        for (int k = 1; k <= 3; k += 2)
            ok &= add(d, NTP_PREDICT_FAMILY_ELTWISE, false,
                      IN4 "<conv name=\"h\" filters=\"%d\" kernel=\"%d\" pad=\"%d\" "
                          "backend=\"ref\"/><relu name=\"L\"/>",
                      sz[i][0], sz[i][1], sz[i][1], sz[i][0], k, k / 2);
    /* Normalisation. */
    for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++)
        ok &= add(d, NTP_PREDICT_FAMILY_NORM, sz[i][0] <= 16, IN4 "<batchnorm name=\"L\"/>",
                  sz[i][0], sz[i][1], sz[i][1]);
    /* The same families reading a conv's output, on and off the 16-channel
     * block (ShuffleNetV2's branches at 24, 58, 116, 232 channels, each at
     * two sizes: oneDNN picks its kernel by the channels' divisibility, and
     * a kernel needs two samples for a correction): the kernels a network
     * runs them with, which the relu-fed ones above do not
     * (docs/predict.md#implementations). */
    static const int fed[][2] = {{24, 56},  {58, 28},  {116, 14}, {232, 7},  {58, 14},
                                 {116, 28}, {232, 14}, {64, 56},  {128, 28}, {256, 14}};
    for (size_t i = 0; i < sizeof fed / sizeof fed[0]; i++) {
        int c = fed[i][0], hw = fed[i][1], k0 = d->n;
        ok &= add(d, NTP_PREDICT_FAMILY_NORM, false, IN4 "<batchnorm name=\"L\"/>", c, hw, hw);
        ok &= add(d, NTP_PREDICT_FAMILY_ELTWISE, false, IN4 "<relu name=\"L\"/>", c, hw, hw);
        /* Concat and split on the block too: a network's concats read a
         * conv's blocked output (DenseNet's), which oneDNN's "simple:any"
         * copies far faster than the plain NCHW of the relu-fed ones above
         * (2026-12-02: those ran 2.3 times the copy family's fit, and
         * DenseNet's 125 concats were predicted at 1.9 times their time). */
        {
            ok &= add(d, NTP_PREDICT_FAMILY_COPY, false,
                      IN4 "<input name=\"y\" shape=\"1,%d,%d,%d\" dtype=\"f32\"/>"
                          "<concat name=\"L\" inputs=\"x,y\" axis=\"1\"/>",
                      c, hw, hw, c, hw, hw);
            ok &= add(d, NTP_PREDICT_FAMILY_COPY, false,
                      IN4 "<split name=\"L\" axis=\"1\" parts=\"2\"/>", c, hw, hw);
            /* A reshape of a conv's output: oneDNN writes its blocked or
             * NHWC layout plain. */
            ok &= add(d, NTP_PREDICT_FAMILY_COPY, false,
                      IN4 "<reshape name=\"L\" shape=\"1,2,%d,%d,%d\"/>", c, hw, hw, c / 2, hw, hw);
        }
        if (hw >= 28)
            ok &= add(d, NTP_PREDICT_FAMILY_POOL, false,
                      IN4 "<maxpool name=\"L\" kernel=\"3\" stride=\"2\" pad=\"1\"/>", c, hw, hw);
        for (int k = k0; k < d->n; k++)
            d->c[k].conv_fed = c;
    }
    /* ShuffleNet's channel shuffle (a 5-d transpose between two views)
     * and DenseNet's concats of many inputs (a dense block's growth of 32
     * channels a layer): data movement of other strides and per-input
     * costs than the 4-d transposes and two-input concats above. */
    static const int shuffle[][2] = {{116, 28}, {232, 14}, {464, 7}};
    for (size_t i = 0; i < sizeof shuffle / sizeof shuffle[0]; i++) {
        int c = shuffle[i][0], hw = shuffle[i][1];
        ok &= add(d, NTP_PREDICT_FAMILY_COPY, false,
                  IN4 "<reshape name=\"v\" shape=\"1,2,%d,%d,%d\"/>"
                      "<transpose name=\"L\" perm=\"0,2,1,3,4\"/>",
                  c, hw, hw, c / 2, hw, hw);
    }
    /* A concat of a plain input and a conv's output: ShuffleNetV2's unit
     * end, the half kept through the shuffle beside its branch. oneDNN
     * copies inputs of mixed layouts with its reference kernel (ref:any),
     * which no concat above runs, and a kernel the calibration never ran
     * takes its family's time uncorrected (docs/predict.md#implementations:
     * ShuffleNetV2's stage-2 concats were predicted 29 to 31% under). */
    static const int mixed[][2] = {{58, 28}, {116, 14}, {232, 7}};
    for (size_t i = 0; i < sizeof mixed / sizeof mixed[0]; i++) {
        int c = mixed[i][0], hw = mixed[i][1];
        ok &= add(d, NTP_PREDICT_FAMILY_COPY, false,
                  IN4 "<input name=\"y\" shape=\"1,%d,%d,%d\" dtype=\"f32\"/>"
                      "<conv name=\"c\" inputs=\"y\" filters=\"%d\" kernel=\"1\"/>"
                      "<concat name=\"L\" inputs=\"x,c\" axis=\"1\"/>",
                  c, hw, hw, c, hw, hw, c);
    }
    static const int many[][2] = {{6, 28}, {8, 14}};
    for (size_t i = 0; i < sizeof many / sizeof many[0]; i++) {
        char ins[900], names[200];
        size_t u = 0, v = 0;
        for (int k = 0; k < many[i][0]; k++) {
            u += (size_t)snprintf(ins + u, sizeof ins - u,
                                  "<input name=\"x%d\" shape=\"1,32,%d,%d\" dtype=\"f32\"/>", k,
                                  many[i][1], many[i][1]);
            v += (size_t)snprintf(names + v, sizeof names - v, "%sx%d", k ? "," : "", k);
        }
        ok &= u < sizeof ins && v < sizeof names &&
              add(d, NTP_PREDICT_FAMILY_COPY, false,
                  "%s<concat name=\"L\" inputs=\"%s\" axis=\"1\"/>", ins, names);
    }
    static const int rows[][2] = {{1, 1000},   {64, 512}, {1536, 128}, {128, 768},
                                  {200, 2048}, {16, 512}, {4, 16}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        ok &= add(d, NTP_PREDICT_FAMILY_NORM, rows[i][1] <= 16,
                  "<input name=\"x\" shape=\"%d,%d\" dtype=\"f32\"/><softmax name=\"L\"/>",
                  rows[i][0], rows[i][1]);
        ok &= add(d, NTP_PREDICT_FAMILY_NORM, false,
                  "<input name=\"x\" shape=\"%d,%d\" dtype=\"f32\"/><layernorm name=\"L\"/>",
                  rows[i][0], rows[i][1]);
    }
    /* Recurrent layers: op, steps, batch, input size, hidden size. */
    /* The last rows: recurrent weights past the last-level cache (37.7 MB
     * per direction at hidden 1536), read from memory at every step, and
     * bidirectional layers (both directions' weights live at once), four
     * of 24 to 48 MB a direction about the L3's edge; the small ones fit
     * the reference backend's budget. */
    static const struct {
        const char *op;
        int t, n, d, h;
        bool bi;
    } rnn[] = {
        {"lstm", 50, 1, 256, 256, 0},   {"lstm", 100, 1, 512, 512, 0},
        {"lstm", 20, 1, 1024, 1024, 0}, {"lstm", 50, 4, 128, 128, 0},
        {"lstm", 100, 1, 494, 256, 0},  {"gru", 50, 1, 256, 256, 0},
        {"gru", 100, 1, 512, 512, 0},   {"gru", 20, 4, 256, 512, 0},
        {"lstm", 5, 2, 8, 16, 0},       {"gru", 5, 2, 8, 16, 0},
        {"lstm", 200, 1, 256, 256, 0},  {"lstm", 50, 1, 2048, 512, 0},
        {"lstm", 40, 1, 1280, 1280, 0}, {"lstm", 20, 1, 2048, 2048, 0},
        {"gru", 20, 1, 1792, 1792, 0},  {"lstm", 50, 1, 1024, 1024, 1},
        {"lstm", 50, 1, 512, 512, 1},   {"lstm", 3, 1, 1280, 1280, 0},
        {"lstm", 4, 1, 768, 768, 1},    {"lstm", 50, 1, 768, 1024, 1},
        {"lstm", 40, 1, 1152, 1152, 0}, {"gru", 50, 1, 1280, 1280, 1},
        {"lstm", 60, 1, 896, 896, 1},
    };
    for (size_t i = 0; i < sizeof rnn / sizeof rnn[0]; i++)
        ok &= add(d, NTP_PREDICT_FAMILY_RNN, rnn[i].d <= 16,
                  "<input name=\"x\" shape=\"%d,%d,%d\" dtype=\"f32\"/><%s name=\"L\" "
                  "units=\"%d\"%s/>",
                  rnn[i].t, rnn[i].n, rnn[i].d, rnn[i].op, rnn[i].h,
                  rnn[i].bi ? " direction=\"bidirectional\" merge=\"concat\"" : "");
    /* Attention: batch, sequence, model dimension, heads. */
    static const int att[][4] = {{1, 128, 768, 12}, {1, 64, 256, 4},  {4, 32, 128, 4},
                                 {1, 256, 512, 8},  {1, 512, 256, 4}, {2, 128, 384, 6},
                                 {2, 8, 16, 4},     {1, 32, 64, 2}};
    for (size_t i = 0; i < sizeof att / sizeof att[0]; i++)
        ok &= add(d, NTP_PREDICT_FAMILY_ATTENTION, att[i][2] <= 64,
                  "<input name=\"x\" shape=\"%d,%d,%d\" dtype=\"f32\"/>"
                  "<attention name=\"L\" heads=\"%d\"/>",
                  att[i][0], att[i][1], att[i][2], att[i][3]);
    /* The inlays, which every backend hands to ref: MFCC by frames and its
     * parameters (window, hop, FFT size, mel bands, coefficients, context;
     * DeepSpeech's 400, 160, 512, 26, 26, 9 at three lengths), CTC decoding
     * of [T, 1, 29] logits by steps and beam width. Their FLOPs count an
     * FFT per frame and the beam's candidates per step (ops.md), so the
     * family's fit prices them from their parameters. */
    static const int mf[][7] = {{100, 400, 160, 512, 26, 26, 9}, {200, 400, 160, 512, 26, 26, 9},
                                {400, 400, 160, 512, 26, 26, 9}, {100, 800, 320, 1024, 40, 13, 0},
                                {50, 256, 128, 256, 20, 13, 5},  {300, 400, 160, 512, 40, 20, 0}};
    for (size_t i = 0; i < sizeof mf / sizeof mf[0]; i++)
        ok &= add(d, NTP_PREDICT_FAMILY_MFCC, mf[i][0] <= 100,
                  "<input name=\"x\" shape=\"1,%d\" dtype=\"f32\"/><mfcc name=\"L\" "
                  "sample_rate=\"16000\" window=\"%d\" hop=\"%d\" fft=\"%d\" "
                  "mel_bands=\"%d\" coefficients=\"%d\" context=\"%d\"/>",
                  (mf[i][0] - 1) * mf[i][2] + mf[i][1], mf[i][1], mf[i][2], mf[i][3], mf[i][4],
                  mf[i][5], mf[i][6]);
    static const int ctc[][2] = {{100, 16}, {200, 16}, {100, 64}, {400, 4}, {50, 1}, {300, 32}};
    for (size_t i = 0; i < sizeof ctc / sizeof ctc[0]; i++)
        ok &= add(d, NTP_PREDICT_FAMILY_CTC, ctc[i][0] <= 100,
                  "<input name=\"x\" shape=\"%d,1,29\" dtype=\"f32\"/>"
                  "<ctc_decode name=\"L\" mode=\"beam\" beam_width=\"%d\"/>",
                  ctc[i][0], ctc[i][1]);
    /* The warm twins (config.warm) of the quick design's small layers of
     * each family but the recurrent ones and the inlays, whose time is
     * their work's: their code and state evicted cost a network that keeps
     * them in a cache less (fit_cold, docs/predict.md#a-layers-cold-start). */
    for (int i = 0, n0 = d->n; ok && i < n0; i++) {
        config c = d->c[i];
        if (!c.quick || c.step || is_wake(c.xml) || c.family == NTP_PREDICT_FAMILY_RNN ||
            c.family == NTP_PREDICT_FAMILY_MFCC || c.family == NTP_PREDICT_FAMILY_CTC)
            continue;
        ok = add(d, c.family, false, "%s", c.xml);
        if (ok) {
            d->c[d->n - 1].conv_fed = c.conv_fed;
            d->c[d->n - 1].warm = true;
        }
    }
    return ok;
}

/* The version a backend's library reports in this process's environment. */
void ntp_predict_backend_version(const char *backend, char *buf, size_t len)
{
    static const struct {
        const char *backend, *library;
    } libs[] = {
        {"onednn", "oneDNN"}, {"xnnpack", "XNNPACK"}, {"blas", "OpenBLAS"}, {"cuda", "cuDNN"}};
    snprintf(buf, len, "ntprof %s", ntp_version());
    if (!backend)
        return;
    if (strcmp(backend, "ref") == 0) {
        snprintf(buf, len, "ntprof %s, ref kernels %s", ntp_version(), NTP_REF_KERNELS_REVISION);
        return;
    }
    const char *want = NULL;
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++)
        if (strcmp(backend, libs[i].backend) == 0)
            want = libs[i].library;
    if (!want)
        return;
    ntp_env *env = calloc(1, sizeof *env);
    if (!env)
        return;
    ntp_env_collect(env);
    for (int i = 0; i < env->n_libraries; i++)
        if (strcmp(env->library[i].name, want) == 0)
            snprintf(buf, len, "%s %s", want, env->library[i].version);
    /* blas's convolutions are ref's im2col and bias around OpenBLAS's
     * GEMM (src/backend/blas/conv.c): ref's revision moves their speed. */
    if (strcmp(backend, "blas") == 0) {
        size_t u = strlen(buf);
        snprintf(buf + u, len - u, ", ref kernels %s", NTP_REF_KERNELS_REVISION);
    }
    free(env);
}

bool ntp_calibration_stale(const ntp_calibration *c, char *why, size_t len)
{
    char ver[192];
    ntp_predict_backend_version(c->backend, ver, sizeof ver);
    if (strcmp(ver, c->backend_version) != 0) {
        snprintf(why, len, "%s was calibrated with %s and is now %s", c->backend,
                 c->backend_version, ver);
        return true;
    }
    char cpu[640];
    if (!ntp__machine_other_cpu(c->cpu_signature, c->cpu_flags, cpu, sizeof cpu))
        return false;
    snprintf(why, len, "%s was calibrated on another CPU %s", c->backend, cpu);
    return true;
}

/* The configuration's markup as a network would run it
 * (NTP_CALIBRATE_NETWORK, network true): each input renamed ntp_NAME and
 * copied by a relu named NAME, so that L finds its input where a previous
 * layer just wrote it (the run writes over the caches before each pass,
 * ntp_run_opts.flush_bytes: L's weights come from memory). A conv-fed
 * configuration's inputs are made by a 1x1 conv instead, in either mode:
 * the layout a conv hands on is the point. Otherwise the configuration
 * alone. false when the markup does not fit len. */
static bool config_markup(const config *c, bool network, char *xml, size_t len)
{
    size_t u = (size_t)snprintf(xml, len, "<topology name=\"calibrate\" precision=\"f32\">");
    if (!network && !c->conv_fed) {
        u += (size_t)snprintf(xml + u, u < len ? len - u : 0, "%s</topology>", c->xml);
        return u < len;
    }
    char maker[64] = "<relu";
    if (c->conv_fed)
        snprintf(maker, sizeof maker, "<conv filters=\"%d\" kernel=\"1\"", c->conv_fed);
    const char *s = c->xml;
    for (const char *in; (in = strstr(s, "<input name=\"")) != NULL;) {
        const char *name = in + strlen("<input name=\""), *q = strchr(name, '"');
        const char *end = q ? strstr(q, "/>") : NULL;
        if (!end)
            return false;
        int nl = (int)(q - name);
        u += (size_t)snprintf(xml + u, u < len ? len - u : 0,
                              "%.*s<input name=\"ntp_%.*s%.*s%s name=\"%.*s\" "
                              "inputs=\"ntp_%.*s\"/>",
                              (int)(in - s), s, nl, name, (int)(end + 2 - q), q, maker, nl, name,
                              nl, name);
        s = end + 2;
    }
    u += (size_t)snprintf(xml + u, u < len ? len - u : 0, "%s</topology>", s);
    return u < len;
}

/* Where a configuration's run comes from: the engine (fn NULL), or a
 * stand-in (tests), told the pass and the configuration's index; `looks`
 * the hand-off looks around an engine run, planned once
 * (docs/run.md#handoff). */
typedef struct run_source {
    ntp__calibrate_runner fn;
    void *user;
    int pass, config;
    const ntp_handoff_check *looks;
} run_source;

/* Whether a calibration of backend at threads judges its timings by the
 * CPUs' pace (pace.c): only where the backend runs a layer on one thread.
 * A threaded backend's workers spin on the CPUs around its runs and the
 * looks read them: the 22:33 window's oneDNN calibration flagged 1,222
 * timings and retried 254 of its 331 configurations, whose fastest-kept
 * times fell with the extra timings (its predictions 10-17% under the
 * 19:22 window's, the models' measured times alike). */
static bool pace_judged(const char *backend, int threads)
{
    return (backend && strcmp(backend, "ref") == 0) || threads == 1;
}

/* Time one configuration once (one pass): the median of layer L, its
 * kernel and the run's reorder rows into *tm, L's terms into *f; with
 * flush_bytes, in network conditions (a warm twin, config.warm: the same
 * markup, the caches not written over). Over the FLOP budget it is not run
 * (tm->left_out). */
static ntp_status time_config(ntp_ctx *ctx, const config *c, const ntp_calibrate_opts *o,
                              const ntp_calibration *cal, int64_t max_flops, int64_t flush_bytes,
                              const run_source *rn, ntp__pfeat *f, ntp__calibrate_timed *tm)
{
    memset(tm, 0, sizeof *tm);
    char xml[4096];
    if (!config_markup(c, flush_bytes > 0, xml, sizeof xml))
        return ntp__error(ctx, NTP_STATUS_INTERNAL, "calibrate: markup too long: %s", c->xml);
    ntp_load_opts lo = {0};
    lo.set_precision = true;
    lo.precision = o->precision;
    ntp_graph *g = NULL;
    ntp_run_result *r = NULL;
    ntp_analysis *a = NULL;
    ntp_status st = ntp_graph_load_xml_memory(ctx, xml, strlen(xml), "calibrate", &lo, &g);
    if (!st)
        st = ntp_graph_analyze(ctx, g, &a);
    int li = st ? -1 : ntp_graph_layer_find(g, "L");
    if (!st && li < 0)
        st = ntp__error(ctx, NTP_STATUS_INTERNAL, "calibrate: no layer L in %s", c->xml);
    if (!st)
        ntp__predict_features(g, a, li, cal, NULL, f);
    /* Over the budget: left out, not timed. */
    if (!st && max_flops > 0 && f->flops > max_flops) {
        tm->left_out = true;
        ntp_analysis_free(a);
        ntp_graph_free(g);
        return NTP_STATUS_OK;
    }
    if (!st && rn->fn) {
        if (!rn->fn(rn->user, rn->pass, rn->config, c->xml, tm)) {
            memset(tm, 0, sizeof *tm);
            st = ntp__error(ctx, NTP_STATUS_INTERNAL, "calibrate: the run failed");
        }
    } else if (!st) {
        ntp_run_opts ro;
        ntp_run_opts_default(&ro);
        ro.backend = o->backend;
        ro.threads = o->threads;
        ro.warmup = 1;
        ro.iterations = o->quick ? 3 : 5;
        ro.min_time_s = o->quick ? 0.0 : 0.02;
        ro.accuracy = false;
        /* The looks around it below stand for the run's own probes. */
        ro.bandwidth_probe = NTP_BANDWIDTH_PROBE_OFF;
        /* In network conditions a fixed count of cold samples: --min-time
         * counts the timed passes only, and a microsecond layer would
         * need thousands of them, each after a flush. */
        ro.flush_bytes = c->warm || c->kept ? 0 : flush_bytes;
        if (flush_bytes > 0) {
            ro.iterations = o->quick ? 3 : 10;
            ro.min_time_s = 0;
        }
        /* Whether the CPUs shared a cache just before and just after
         * (docs/run.md#handoff): a timing while they did not is left out
         * where another pass's was not (merge_passes). */
        const bool paced = pace_judged(cal->backend, o->threads);
        double look = ntp__handoff_look(rn->looks);
        ntp__pace_cpus pace, pace_after;
        bool paced_before = paced && ntp__pace_look_all(&pace);
        st = ntp_run(ctx, g, &ro, &r);
        /* The layer ran on this thread: the CPU it ended on. */
        const int cpu = sched_getcpu();
        double after = st ? 0 : ntp__handoff_look(rn->looks);
        bool paced_after = !st && paced_before && ntp__pace_look_all(&pace_after);
        tm->apart = look >= NTP_HANDOFF_APART_RATIO || after >= NTP_HANDOFF_APART_RATIO;
        /* And how fast that CPU ran (pace.c): a host may share a vCPU's
         * core with another guest, which no load figure shows. */
        tm->pace = paced_after ? fmin(ntp__pace_of(&pace, cpu), ntp__pace_of(&pace_after, cpu)) : 0;
    }
    for (int i = 0; !st && r && i < r->n_layers; i++) {
        const ntp_layer_result *l = &r->layers[i];
        if (l->name && strcmp(l->name, "L") == 0 && l->kind && strcmp(l->kind, "layer") == 0) {
            tm->s = l->time_ms.median / 1e3;
            tm->ci95_lo_s = l->time_ms.ci95_lo / 1e3;
            tm->ci95_hi_s = l->time_ms.ci95_hi / 1e3;
            tm->n = (int)l->time_ms.n;
            snprintf(tm->ran_on, sizeof tm->ran_on, "%s", l->backend ? l->backend : "");
            /* With the layout its source was read in, where the
             * backend says: the key of its correction. */
            if (l->src_layout)
                snprintf(tm->impl, sizeof tm->impl, "%.38s/%s", l->impl ? l->impl : "",
                         l->src_layout);
            else
                snprintf(tm->impl, sizeof tm->impl, "%s", l->impl ? l->impl : "");
        }
        /* A wake configuration's mark: how long the workers slept. */
        if (l->name && strcmp(l->name, "h") == 0 && l->kind && strcmp(l->kind, "layer") == 0 &&
            is_wake(c->xml))
            tm->mark_s = l->time_ms.median / 1e3;
        /* Every layout change of the run is a sample of the backend's,
         * whichever layer it ran with: a reorder is a copy whatever
         * follows it. Rows of another backend are left out. */
        if (l->kind && strcmp(l->kind, "reorder") == 0 && l->bytes > 0 && l->time_ms.median > 0 &&
            l->backend && strcmp(l->backend, cal->backend) == 0 &&
            tm->n_reorders < NTP__CALIBRATE_MAX_REORDERS) {
            tm->reorder_bytes[tm->n_reorders] = l->bytes;
            tm->reorder_s[tm->n_reorders++] = l->time_ms.median / 1e3;
        }
    }
    /* A recurrent layer's terms as the kernel that ran it runs its input
     * GEMM (ntp__predict_rnn_per_step). */
    if (!st && ntp__predict_rnn_per_step(tm->impl))
        ntp__predict_features(g, a, li, cal, tm->impl, f);
    ntp_run_result_free(r);
    ntp_analysis_free(a);
    ntp_graph_free(g);
    return st;
}

/* The configuration a stored sample was timed as: its family, markup and
 * input, and its kind's way of timing (config.step, config.warm). */
static config config_of_sample(const ntp_calibration_sample *x, bool quick)
{
    config c = {.family = x->family,
                .quick = quick,
                .conv_fed = x->conv_fed,
                .step = strcmp(x->kind, "step") == 0,
                .warm = strcmp(x->kind, "warm") == 0,
                .kept = strcmp(x->kind, "kept") == 0};
    snprintf(c.xml, sizeof c.xml, "%s", x->config);
    return c;
}

ntp_status ntp__calibrate_time_sample(ntp_ctx *ctx, const ntp_machine_info *m,
                                      const ntp_calibration *cal, const ntp_calibration_sample *s,
                                      ntp__calibrate_runner runner, void *user, int index,
                                      ntp__calibrate_timed *tm)
{
    config c = config_of_sample(s, cal->quick);
    ntp_calibrate_opts o;
    ntp_calibrate_opts_default(&o);
    o.backend = cal->backend;
    o.threads = cal->threads;
    o.quick = cal->quick;
    if (ntp_dtype_parse(cal->precision, &o.precision) != NTP_STATUS_OK)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "recheck: the calibration's precision '%s' is not one", cal->precision);
    int64_t flush =
        strcmp(cal->cache, "network") == 0 && !c.step ? ntp__calibrate_flush_bytes(m, cal) : 0;
    ntp_handoff_check looks;
    ntp__handoff_plan(NTP_BANDWIDTH_PROBE_ON, o.threads, &looks);
    run_source rn = {runner, user, 0, index, &looks};
    ntp__pfeat f;
    return time_config(ctx, &c, &o, cal, 0, flush, &rn, &f, tm);
}

int64_t ntp__calibrate_flush_bytes(const ntp_machine_info *m, const ntp_calibration *cal)
{
    /* One instance of the last level (what the calibration's threads
     * share; the machine's description), else the largest cache level the
     * ceilings measured. */
    int64_t llc = 0;
    int top = 0;
    for (int i = 0; i < m->n_caches; i++)
        if (strcmp(m->caches[i].type, "instruction") != 0 && m->caches[i].level >= top) {
            int64_t b = m->caches[i].size_bytes;
            llc = m->caches[i].level > top ? b : (b > llc ? b : llc);
            top = m->caches[i].level;
        }
    for (int k = 0; llc <= 0 && k < cal->n_levels; k++)
        if (cal->levels[k].capacity_bytes > llc)
            llc = cal->levels[k].capacity_bytes;
    if (llc <= 0)
        llc = (int64_t)32 << 20;
    /* Twice the cache, 4-byte aligned, at most NTP_CALIBRATE_MAX_FLUSH_BYTES:
     * a hypervisor may report a cache no CPU has (this 2-vCPU VM: an L3 of
     * 533 MB per CPU), and each pass writes the whole buffer. */
    int64_t b = 2 * llc;
    if (b > NTP_CALIBRATE_MAX_FLUSH_BYTES)
        b = NTP_CALIBRATE_MAX_FLUSH_BYTES;
    return (b + 3) / 4 * 4;
}

/* Family model m's time, in seconds, for a sample of terms x (before any
 * correction). */
static double fitted_s(const ntp_family_model *m, const double *x)
{
    double p = 0;
    for (int a = 0; a < NTP_PREDICT_TERMS; a++)
        p += m->coef[a] * x[a];
    return p;
}

/* Whether k samples are enough for a fit: one for each of the roofline's
 * three terms (overhead, compute, memory). The stream term does not raise
 * it: with fewer samples than terms, the fit takes the best set of terms
 * it can solve (ntp_predict_fit), as a family with three samples did
 * before the term was added. */
static bool enough_samples(int k)
{
    return k >= NTP_PREDICT_TERM_STREAM;
}

/* m's fit quality on n samples (X, t): median and largest relative error. */
static void fit_quality(const double *X, const double *t, int n, ntp_family_model *m)
{
    double *err = calloc((size_t)n + 1, sizeof *err);
    m->max_error = 0;
    for (int i = 0; i < n; i++) {
        double e = fabs(fitted_s(m, &X[i * NTP_PREDICT_TERMS]) - t[i]) / t[i];
        if (err)
            err[i] = e;
        m->max_error = fmax(m->max_error, e);
    }
    if (err && n > 0)
        m->median_error = ntp__median_inplace(err, n);
    free(err);
}

/* The reorder model: overhead + memory x bytes / bandwidth, on the
 * reorder rows every configuration's run timed (XNNPACK's NCHW/NHWC
 * changes around each layer, oneDNN's blocked/plain ones). Fitted only
 * over a spread of sizes (the largest at least four times the smallest):
 * one size would extrapolate wildly, as the quick copies did. */
static void fit_reorders(const double *RX, const double *rt, int nr, ntp_family_model *m)
{
    memset(m, 0, sizeof *m);
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < nr; i++) {
        lo = fmin(lo, RX[i * NTP_PREDICT_TERMS + NTP_PREDICT_TERM_MEMORY]);
        hi = fmax(hi, RX[i * NTP_PREDICT_TERMS + NTP_PREDICT_TERM_MEMORY]);
    }
    if (!enough_samples(nr) || !(hi >= 4 * lo) ||
        !ntp_predict_fit(RX, rt, nr, NTP_PREDICT_TERMS, m->coef))
        return;
    m->calibrated = true;
    m->samples = nr;
    fit_quality(RX, rt, nr, m);
}

void ntp__calibrate_impl_corrections(const double *X, const double *t,
                                     const ntp_predict_family *fam, const char *const *impl, int n,
                                     ntp_calibration *cal)
{
    cal->n_impls = 0;
    for (int i = 0; i < n; i++) {
        ntp_predict_family f = fam[i];
        const ntp_family_model *m = &cal->family[f];
        if (!impl[i][0] || f >= NTP_PREDICT_FAMILY_COUNT || !m->calibrated)
            continue;
        /* Each (family, implementation) once, at its first sample; a family
         * whose samples all ran one kernel needs no correction: its fit is
         * that kernel's. */
        bool seen = false, other = false;
        for (int k = 0; k < n; k++) {
            seen |= k < i && fam[k] == f && strcmp(impl[k], impl[i]) == 0;
            other |= fam[k] == f && strcmp(impl[k], impl[i]) != 0;
        }
        if (seen || !other)
            continue;
        /* The geometric mean of measured / fitted over its samples: a
         * factor, so each sample weighs as in the relative-error fit. */
        double logs = 0;
        int k_n = 0;
        for (int k = 0; k < n; k++) {
            if (fam[k] != f || strcmp(impl[k], impl[i]) != 0)
                continue;
            double p = fitted_s(m, &X[k * NTP_PREDICT_TERMS]);
            if (p > 0 && t[k] > 0) {
                logs += log(t[k] / p);
                k_n++;
            }
        }
        /* One sample is no kernel's behaviour: left at the family's. */
        if (k_n < 2 || cal->n_impls >= NTP_PREDICT_MAX_IMPLS)
            continue;
        ntp_impl_correction *c = &cal->impls[cal->n_impls++];
        c->family = f;
        snprintf(c->impl, sizeof c->impl, "%s", impl[i]);
        c->samples = k_n;
        c->scale = exp(logs / k_n);
        c->n_points = 0; /* size_points, once the family is final */
    }
}

/* The families whose kernels' corrections have points by size
 * (ntp_impl_correction.point_bytes, features_of's size_bytes): the rnn
 * family's at one direction of W and R, the pool family's at its traffic. */
static bool sized_family(ntp_predict_family f)
{
    return f == NTP_PREDICT_FAMILY_RNN || f == NTP_PREDICT_FAMILY_POOL;
}

/* Their kernels' points by size: each sample of a kernel with a
 * correction, at its size, with log(measured / predicted) of the whole
 * layer (a recurrent layer's input GEMM off[i] with it), its kernel's
 * scale applied. After the family's last fit: the points do not feed the
 * fit. */
static void size_points(const double *X, const ntp_calibration_sample *S, const int *from,
                        const double *t, const double *off, const ntp_predict_family *fam,
                        const char *const *names, int n, ntp_calibration *cal)
{
    for (int c = 0; c < cal->n_impls; c++) {
        ntp_impl_correction *ic = &cal->impls[c];
        const ntp_family_model *m = &cal->family[ic->family];
        if (!sized_family(ic->family) || !m->calibrated)
            continue;
        ic->n_points = 0;
        for (int i = 0; i < n && ic->n_points < NTP_PREDICT_MAX_POINTS; i++) {
            if (fam[i] != ic->family || strcmp(names[i], ic->impl) != 0 ||
                S[from[i]].size_bytes <= 0)
                continue;
            double p = fitted_s(m, &X[i * NTP_PREDICT_TERMS]) * ic->scale + off[i];
            if (!(p > 0) || !(t[i] + off[i] > 0))
                continue;
            /* A sample further off than a stored point may be is left out:
             * a calibration holding it could not be read back. */
            double lg = log((t[i] + off[i]) / p);
            if (!(fabs(lg) <= NTP__PREDICT_POINT_LOG_MAX))
                continue;
            ic->point_bytes[ic->n_points] = (double)S[from[i]].size_bytes;
            ic->point_log[ic->n_points++] = lg;
        }
    }
}

/* A family's coefficients and its kernels' corrections are known only up
 * to a common factor (coefficients x k, corrections / k predict the same):
 * each round moves the geometric mean of the corrections over the family's
 * samples (1 for a sample without one) into the coefficients, so the rounds
 * cannot drift to vanishing coefficients and huge corrections. */
static void anchor_corrections(const ntp_predict_family *fam, const char *const *impl, int n,
                               ntp_calibration *cal)
{
    for (int f = 0; f < NTP_PREDICT_FAMILY_COUNT; f++) {
        double logs = 0;
        int k = 0;
        for (int i = 0; i < n; i++)
            if (fam[i] == (ntp_predict_family)f) {
                logs += log(ntp__predict_key_scale(cal, fam[i], impl[i]));
                k++;
            }
        if (k == 0 || logs == 0 || !cal->family[f].calibrated)
            continue;
        double g = exp(logs / k);
        for (int a = 0; a < NTP_PREDICT_TERMS; a++)
            cal->family[f].coef[a] *= g;
        for (int c = 0; c < cal->n_impls; c++)
            if (cal->impls[c].family == (ntp_predict_family)f)
                cal->impls[c].scale /= g;
    }
}

bool ntp__calibrate_refit(const double *X, const double *t, const ntp_predict_family *fam,
                          const char *const *impl, int n, ntp_calibration *cal)
{
    double *Xf = calloc((size_t)n * NTP_PREDICT_TERMS + 1, sizeof *Xf);
    double *tf = calloc((size_t)n + 1, sizeof *tf);
    if (!Xf || !tf) {
        free(Xf);
        free(tf);
        return false;
    }
    /* Each round refits on the last round's corrections; the corrections
     * are then taken again from the new fit. With exact data two kernels
     * apart by a factor converge in a few rounds; eight is ample. */
    for (int round = 0; round < 8 && cal->n_impls > 0; round++) {
        for (int f = 0; f < NTP_PREDICT_FAMILY_COUNT; f++) {
            ntp_family_model *m = &cal->family[f];
            bool corrected = false;
            for (int k = 0; k < cal->n_impls; k++)
                corrected |= cal->impls[k].family == (ntp_predict_family)f;
            if (!m->calibrated || !corrected)
                continue;
            int k = 0;
            for (int i = 0; i < n; i++)
                if (fam[i] == (ntp_predict_family)f) {
                    memcpy(&Xf[k * NTP_PREDICT_TERMS], &X[i * NTP_PREDICT_TERMS],
                           NTP_PREDICT_TERMS * sizeof *X);
                    tf[k++] = t[i] / ntp__predict_key_scale(cal, fam[i], impl[i]);
                }
            double c[NTP_PREDICT_TERMS];
            if (enough_samples(k) && ntp_predict_fit(Xf, tf, k, NTP_PREDICT_TERMS, c))
                memcpy(m->coef, c, sizeof c);
        }
        ntp__calibrate_impl_corrections(X, t, fam, impl, n, cal);
        anchor_corrections(fam, impl, n, cal);
    }
    /* The fit quality of each family as predictions use it. */
    for (int f = 0; f < NTP_PREDICT_FAMILY_COUNT; f++) {
        ntp_family_model *m = &cal->family[f];
        int k = 0;
        for (int i = 0; m->calibrated && i < n; i++)
            if (fam[i] == (ntp_predict_family)f) {
                double p = fitted_s(m, &X[i * NTP_PREDICT_TERMS]) *
                           ntp__predict_key_scale(cal, fam[i], impl[i]);
                tf[k++] = fabs(p - t[i]) / t[i];
            }
        if (k == 0)
            continue;
        m->median_error = ntp__median_inplace(tf, k);
        m->max_error = tf[k - 1];
    }
    free(Xf);
    free(tf);
    return true;
}

/* The op of a configuration's layer L, from its markup (the element
 * named "L": "<maxpool name=\"L\" ..."); "" where there is none. */
static void config_op(const char *xml, char *op, size_t len)
{
    op[0] = '\0';
    const char *l = strstr(xml, " name=\"L\"");
    if (!l)
        return;
    const char *b = l;
    while (b > xml && b[-1] != '<')
        b--;
    if (b > xml)
        snprintf(op, len, "%.*s", (int)(l - b), b);
}

/* The layout of the source a sample's kernel read, for its correction's
 * key: NULL where its impl carries it ("jit:avx512_core/nspc", every
 * sample a oneDNN calibration has taken since layouts were recorded) or
 * where it is not known. A oneDNN sample stored before says it through
 * conv_fed, for the families whose primitive reads its input in the
 * layout it comes in (pooling, eltwise, batch norm, the copies: oneDNN's
 * ntp__dnnl_follow_md): relu-fed, the graph's plain input; made by a 1x1
 * conv, that conv's output, channels last (nspc) where the calibration's
 * 1x1 convs ran a brgemm kernel (`brg_nspc`: oneDNN's brgemm convolutions
 * read and write nhwc alone), else not known (an older conv kernel
 * writes nChw16c, nChw8c or nhwc by the ISA and the channels). A conv, an
 * fc or a recurrent layer picks its own source layout: not known. */
static const char *sample_layout(const ntp_calibration_sample *x, bool brg_nspc)
{
    size_t n;
    if (ntp__predict_layout_of(x->impl, &n) || strcmp(x->ran_on, "onednn") != 0)
        return NULL;
    if (x->family != NTP_PREDICT_FAMILY_POOL && x->family != NTP_PREDICT_FAMILY_ELTWISE &&
        x->family != NTP_PREDICT_FAMILY_NORM && x->family != NTP_PREDICT_FAMILY_COPY)
        return NULL;
    if (x->conv_fed == 0)
        return "plain";
    return brg_nspc ? "nspc" : NULL;
}

/* The rows of a configuration's input (the first shape in its markup):
 * its elements over its last dim; 0 where the markup has none. */
static int64_t config_rows(const char *xml)
{
    const char *s = strstr(xml, " shape=\"");
    if (!s)
        return 0;
    s += 8;
    int64_t rows = 1, last = 0;
    while (*s >= '0' && *s <= '9') {
        char *end;
        long long d = strtoll(s, &end, 10);
        if (end == s || d <= 0 || d > ((int64_t)1 << 40))
            return 0;
        if (last > 0) {
            if (rows > ((int64_t)1 << 40) / last)
                return 0;
            rows *= last;
        }
        last = d;
        s = *end == ',' ? end + 1 : end;
    }
    return last > 0 && *s == '"' ? rows : 0;
}

/* Whether family f's samples are convolutions the reference backend
 * lowers (their GEMMs' terms in XI): fitted after the fc family. */
static bool lowered(const ntp_calibration_sample *S, const int *from, const ntp_predict_family *fam,
                    int n, ntp_predict_family f)
{
    if (f == NTP_PREDICT_FAMILY_RNN)
        return false;
    for (int i = 0; i < n; i++)
        if (fam[i] == f && S[from[i]].x_in[NTP_PREDICT_TERM_OVERHEAD] > 0)
            return true;
    return false;
}

/* X's rows of family f with their memory term as family model m prices
 * it (ntp__predict_memory_term: the part from memory, x_far, times its
 * far_scale), from the unscaled rows X0 (n rows; X0 may be X). */
static void scale_far(double *X, const double *X0, const ntp_calibration_sample *S, const int *from,
                      const ntp_predict_family *fam, int n, ntp_predict_family f,
                      const ntp_family_model *m)
{
    for (int i = 0; i < n; i++)
        if (fam[i] == f)
            X[i * NTP_PREDICT_TERMS + NTP_PREDICT_TERM_MEMORY] =
                ntp__predict_memory_term(m, &X0[i * NTP_PREDICT_TERMS], S[from[i]].x_far);
}

/* Family f's fit with tmp's far_scale for it: its coefficients and its
 * kernels' corrections, fitted on tmp as fit_priced_by_fc fits them, and
 * their relative residuals' sum of squares; a negative one where f could
 * not be fitted. X's rows of f hold the unscaled terms; Xk their scaled
 * copy (n rows). */
static double far_scale_rss(const double *X, const ntp_calibration_sample *S, const int *from,
                            const double *t, const ntp_predict_family *fam,
                            const char *const *names, int n, ntp_predict_family f, double *Xk,
                            double *Xf, double *tf, ntp_calibration *tmp)
{
    ntp_family_model *fm = &tmp->family[f];
    memcpy(Xk, X, (size_t)n * NTP_PREDICT_TERMS * sizeof *X);
    scale_far(Xk, X, S, from, fam, n, f, fm);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (fam[i] == f) {
            memcpy(&Xf[m * NTP_PREDICT_TERMS], &Xk[i * NTP_PREDICT_TERMS],
                   NTP_PREDICT_TERMS * sizeof *X);
            tf[m++] = t[i];
        }
    if (!enough_samples(m) || !ntp_predict_fit(Xf, tf, m, NTP_PREDICT_TERMS, fm->coef))
        return -1;
    fm->calibrated = true;
    ntp__calibrate_impl_corrections(Xk, t, fam, names, n, tmp);
    if (!ntp__calibrate_refit(Xk, t, fam, names, n, tmp))
        return -1;
    double rss = 0;
    for (int i = 0; i < n; i++) {
        if (fam[i] != f)
            continue;
        double e = fitted_s(fm, &Xk[i * NTP_PREDICT_TERMS]) *
                       ntp__predict_key_scale(tmp, f, names[i]) / t[i] -
                   1;
        rss += e * e;
    }
    return rss;
}

/* Family f's far_scale (ntp_family_model): the one of a grid from
 * 1/NTP_PREDICT_FAR_SCALE_MAX to NTP_PREDICT_FAR_SCALE_MAX under which
 * its fit leaves the least relative error, with X's rows of f scaled by
 * it. Only where its samples tell the two parts apart: some read mostly
 * from memory, some mostly from a cache; else it stays 0 (as 1). false:
 * out of memory. */
static bool fit_far_scale(double *X, const ntp_calibration_sample *S, const int *from,
                          const double *t, const ntp_predict_family *fam, const char *const *names,
                          int n, ntp_predict_family f, double *Xf, double *tf, ntp_calibration *cal)
{
    cal->family[f].far_scale = 0;
    bool mostly_far = false, mostly_near = false;
    for (int i = 0; i < n; i++) {
        double mem = X[i * NTP_PREDICT_TERMS + NTP_PREDICT_TERM_MEMORY];
        if (fam[i] != f || !(mem > 0))
            continue;
        mostly_far |= S[from[i]].x_far > 0.5 * mem;
        mostly_near |= S[from[i]].x_far < 0.25 * mem;
    }
    if (!mostly_far || !mostly_near)
        return true;
    double *Xk = malloc(((size_t)n * NTP_PREDICT_TERMS + 1) * sizeof *Xk);
    ntp_calibration *tmp = malloc(sizeof *tmp);
    if (!Xk || !tmp) {
        free(Xk);
        free(tmp);
        return false;
    }
    /* 97 steps, 1.029x apart; 1 among them. */
    double best = INFINITY, best_k = 1;
    for (int j = -48; j <= 48; j++) {
        double k = pow(NTP_PREDICT_FAR_SCALE_MAX, j / 48.0);
        *tmp = *cal;
        tmp->family[f].far_scale = k;
        double rss = far_scale_rss(X, S, from, t, fam, names, n, f, Xk, Xf, tf, tmp);
        if (rss >= 0 && rss < best) {
            best = rss;
            best_k = k;
        }
    }
    if (isfinite(best)) {
        cal->family[f].far_scale = best_k;
        scale_far(X, X, S, from, fam, n, f, &cal->family[f]);
    }
    free(Xk);
    free(tmp);
    return true;
}

/* The families part of whose layers' work the fc family prices, fitted
 * once it and its corrections are (fit_samples): the convolutions ref
 * lowers (lowered) and the rnn family, each family f with fit[f] set.
 * Every sample of them is priced as a prediction prices it: a lowered
 * convolution's terms become its GEMMs' time under the fc family and its
 * im2col's under the copy family (ntp__predict_lowered_conv_terms); a
 * recurrent layer's input GEMM is priced with the fc family's final
 * coefficients (ntp__predict_rnn_input_gemm_s) and taken off its time, at
 * least a tenth of which stays (off: what was taken off; 0 for a
 * convolution), and without an fc fit its compute and memory terms join
 * the family's own. Sample i is S[from[i]], its terms X[i], its time
 * t[i]; X and t are changed in place. Each family is fitted
 * on what remains (its fixed cost and how much of each part the samples
 * show; a recurrent layer's recurrent part), then the corrections again;
 * each family's fit quality is that of the layer's whole time. */
static bool fit_priced_by_fc(double *X, const ntp_calibration_sample *S, const int *from, double *t,
                             double *off, const ntp_predict_family *fam, const char *const *names,
                             int n, const bool *fit, double *Xf, double *tf, ntp_calibration *cal)
{
    for (int i = 0; i < n; i++) {
        off[i] = 0;
        if (!fit[fam[i]])
            continue;
        const ntp_calibration_sample *x = &S[from[i]];
        ntp__pfeat p = {.family = fam[i], .rec_rows = x->rec_rows, .rec_weight = x->rec_weight};
        memcpy(p.x, &X[i * NTP_PREDICT_TERMS], sizeof p.x);
        memcpy(p.xin, x->x_in, sizeof p.xin);
        memcpy(p.xrec, x->x_rec, sizeof p.xrec);
        memcpy(p.xcp, x->x_copy, sizeof p.xcp);
        ntp__predict_lowered_conv_terms(cal, &p);
        off[i] = ntp__predict_rnn_input_gemm_s(cal, &p);
        memcpy(&X[i * NTP_PREDICT_TERMS], p.x, sizeof p.x);
        double whole = t[i];
        t[i] = fmax(whole - off[i], 0.1 * whole);
        off[i] = whole - t[i];
    }
    for (int f = 0; f < NTP_PREDICT_FAMILY_COUNT; f++)
        if (fit[f] &&
            !fit_far_scale(X, S, from, t, fam, names, n, (ntp_predict_family)f, Xf, tf, cal))
            return false;
    bool fitted[NTP_PREDICT_FAMILY_COUNT] = {false}, any = false;
    for (int f = 0; f < NTP_PREDICT_FAMILY_COUNT; f++) {
        if (!fit[f])
            continue;
        int k = 0;
        for (int i = 0; i < n; i++)
            if (fam[i] == (ntp_predict_family)f) {
                memcpy(&Xf[k * NTP_PREDICT_TERMS], &X[i * NTP_PREDICT_TERMS],
                       NTP_PREDICT_TERMS * sizeof *X);
                tf[k++] = t[i];
            }
        ntp_family_model *fm = &cal->family[f];
        if (!enough_samples(k) || !ntp_predict_fit(Xf, tf, k, NTP_PREDICT_TERMS, fm->coef))
            continue;
        fm->calibrated = true;
        fm->samples = k;
        fitted[f] = any = true;
    }
    if (!any)
        return true;
    ntp__calibrate_impl_corrections(X, t, fam, names, n, cal);
    if (!ntp__calibrate_refit(X, t, fam, names, n, cal))
        return false;
    /* The fit quality of the whole layer: a recurrent layer's input GEMM
     * and recurrent part. */
    for (int f = 0; f < NTP_PREDICT_FAMILY_COUNT; f++) {
        if (!fitted[f])
            continue;
        ntp_family_model *fm = &cal->family[f];
        int k = 0;
        for (int i = 0; i < n; i++) {
            if (fam[i] != (ntp_predict_family)f)
                continue;
            double p = fitted_s(fm, &X[i * NTP_PREDICT_TERMS]) *
                           ntp__predict_key_scale(cal, fam[i], names[i]) +
                       off[i];
            tf[k++] = fabs(p - (t[i] + off[i])) / (t[i] + off[i]);
        }
        fm->median_error = ntp__median_inplace(tf, k);
        fm->max_error = tf[k - 1];
    }
    return true;
}

/* The "layer" sample of markup xml (and of input conv_fed; any where
 * negative) that backend ran: the twin a wake or warm sample is measured
 * against; NULL where none. */
static const ntp_calibration_sample *layer_twin(const ntp_calibration_sample *S, int ns,
                                                const char *backend, const char *xml, int conv_fed)
{
    for (int j = 0; j < ns; j++)
        if (strcmp(S[j].kind, "layer") == 0 && S[j].median_s > 0 &&
            (conv_fed < 0 || S[j].conv_fed == conv_fed) && strcmp(S[j].ran_on, backend) == 0 &&
            strcmp(S[j].config, xml) == 0)
            return &S[j];
    return NULL;
}

/* A wake's mark as a key: its element without the filters' count, so
 * that the same mark at the design's sizes is one (a 1x1 convolution of
 * 64 channels and of 128). */
static void mark_key(const char *b, const char *e, char *key, size_t cap)
{
    size_t k = 0;
    for (const char *c = b; c < e && k + 1 < cap; c++) {
        if (strncmp(c, "filters=\"", 9) == 0) {
            const char *q = strchr(c + 9, '"');
            if (q && q < e) {
                c = q;
                continue;
            }
        }
        key[k++] = *c;
    }
    key[k] = 0;
}

typedef struct wake_pair {
    char key[128];
    double sleep, wake;
} wake_pair;

/* The wake of the backend's threads: each wake sample's time less its
 * twin's (the same configuration without its mark), at the time its mark
 * ran (the "sleep" sample of its configuration; 0 where none). Grouped by
 * mark: wake_s is the median wake of the mark that ran shortest (the
 * median over every sample where none has a sleep, as calibrations made
 * before the longer marks), at least 0; with two marks or more that
 * have a sleep, and none without, each one's (median sleep, median wake)
 * is a point of cal->wake_points, by sleep, at most NTP_WAKE_POINTS (the
 * shortest marks). Unmeasured (0, no samples) without a pair. */
static void fit_wake(const ntp_calibration_sample *S, int ns, ntp_calibration *cal)
{
    char twin[sizeof S->config];
    wake_pair *P = calloc((size_t)ns + 1, sizeof *P);
    double *v = calloc(2 * (size_t)ns + 1, sizeof *v);
    bool *done = calloc((size_t)ns + 1, sizeof *done);
    int k = 0;
    cal->wake_samples = 0;
    cal->wake_s = 0;
    cal->n_wake_points = 0;
    for (int i = 0; P && v && done && i < ns; i++) {
        const ntp_calibration_sample *x = &S[i];
        const char *b, *e;
        if (strcmp(x->kind, "wake") != 0 || !wake_mark(x->config, &b, &e) || !(x->median_s > 0) ||
            strcmp(x->ran_on, cal->backend) != 0)
            continue;
        snprintf(twin, sizeof twin, "%.*s%s", (int)(b - x->config), x->config, e);
        const ntp_calibration_sample *y = layer_twin(S, ns, cal->backend, twin, -1);
        if (!y)
            continue;
        mark_key(b, e, P[k].key, sizeof P[k].key);
        P[k].wake = x->median_s - y->median_s;
        for (int j = 0; j < ns && P[k].sleep == 0; j++)
            if (strcmp(S[j].kind, "sleep") == 0 && S[j].median_s > 0 &&
                strcmp(S[j].config, x->config) == 0)
                P[k].sleep = S[j].median_s;
        k++;
    }
    /* Each mark's medians; the shortest's wake is wake_s. */
    double pts[NTP_WAKE_POINTS + 1][2];
    int np = 0;
    double shortest = INFINITY;
    bool all_slept = true;
    for (int i = 0; i < k; i++) {
        if (done[i])
            continue;
        int nw = 0, nsl = 0;
        for (int j = i; j < k; j++)
            if (!done[j] && strcmp(P[j].key, P[i].key) == 0) {
                done[j] = true;
                v[nw++] = P[j].wake;
                if (P[j].sleep > 0)
                    v[ns + nsl++] = P[j].sleep;
            }
        double wake = fmax(0, ntp__median_inplace(v, nw));
        double sleep = nsl > 0 ? ntp__median_inplace(v + ns, nsl) : 0;
        all_slept &= sleep > 0;
        if (sleep < shortest) {
            shortest = sleep;
            cal->wake_s = wake;
        }
        if (sleep > 0) {
            /* Kept in order of sleep; past the room, the longest goes. */
            int at = np;
            while (at > 0 && pts[at - 1][0] > sleep) {
                pts[at][0] = pts[at - 1][0];
                pts[at][1] = pts[at - 1][1];
                at--;
            }
            pts[at][0] = sleep;
            pts[at][1] = wake;
            np += np < NTP_WAKE_POINTS;
        }
    }
    /* Every sample where no mark has a sleep. */
    if (k > 0 && np == 0) {
        for (int i = 0; i < k; i++)
            v[i] = P[i].wake;
        cal->wake_s = fmax(0, ntp__median_inplace(v, k));
    }
    cal->wake_samples = k;
    /* Points only where every mark has its sleep: a mark without one
     * (stored before they were) has no place among them. */
    if (np >= 2 && all_slept) {
        cal->n_wake_points = np;
        memcpy(cal->wake_points, pts, (size_t)np * sizeof pts[0]);
    }
    free(P);
    free(v);
    free(done);
}

/* Each family's cold start (ntp_family_model.cold_s): the median over its
 * "warm" samples of the time its twin in network conditions (the "layer"
 * sample of the same markup) took more; at least 0. w holds ns values. */
static void fit_cold(const ntp_calibration_sample *S, int ns, double *w, ntp_calibration *cal)
{
    for (int f = 0; f < NTP_PREDICT_FAMILY_COUNT; f++) {
        int k = 0;
        for (int i = 0; i < ns; i++) {
            const ntp_calibration_sample *x = &S[i];
            if (x->family != (ntp_predict_family)f || strcmp(x->kind, "warm") != 0 ||
                !(x->median_s > 0) || strcmp(x->ran_on, cal->backend) != 0)
                continue;
            const ntp_calibration_sample *y =
                layer_twin(S, ns, cal->backend, x->config, x->conv_fed);
            if (y)
                w[k++] = y->median_s - x->median_s;
        }
        cal->family[f].cold_samples = k;
        cal->family[f].cold_s = k > 0 ? fmax(0, ntp__median_inplace(w, k)) : 0;
    }
}

/* The spacers before a "kept" sample's probe: its chain's KEPT_SPACER
 * elements. */
static int kept_spacers(const char *xml)
{
    int n = 0;
    for (const char *p = xml; (p = strstr(p, "<conv name=\"s")) != NULL; p++)
        n++;
    return n;
}

/* Sample x's topology as it was timed (config_markup, in network
 * conditions where `network`), loaded and analysed at cal's precision
 * into *ctx, *g and *a, which the caller frees (NULL where not made);
 * false where it does not load. */
static bool sample_graph(const ntp_calibration *cal, const ntp_calibration_sample *x, bool network,
                         ntp_ctx **ctx, ntp_graph **g, ntp_analysis **a)
{
    *ctx = NULL;
    *g = NULL;
    *a = NULL;
    config c = config_of_sample(x, false);
    char xml[4096];
    if (!config_markup(&c, network, xml, sizeof xml) || !(*ctx = ntp_ctx_init()))
        return false;
    ntp_load_opts lo = {0};
    lo.set_precision = ntp_dtype_parse(cal->precision, &lo.precision) == NTP_STATUS_OK;
    return ntp_graph_load_xml_memory(*ctx, xml, strlen(xml), "calibrate", &lo, g) ==
               NTP_STATUS_OK &&
           ntp_graph_analyze(*ctx, *g, a) == NTP_STATUS_OK;
}

/* What a pass of a "kept" sample's topology touches, as a prediction
 * counts a network's (ntp__predict_reuse); 0 where it does not load. */
static int64_t kept_reuse(const ntp_calibration *cal, const ntp_calibration_sample *x)
{
    ntp_ctx *ctx;
    ntp_graph *g;
    ntp_analysis *a;
    int64_t b = sample_graph(cal, x, true, &ctx, &g, &a) ? ntp__predict_reuse(g, a) : 0;
    ntp_analysis_free(a);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
    return b;
}

/* What a pass keeps (ntp_calibration.kept): each "kept" sample the
 * backend ran with spacers, at what its pass touches (kept_reuse), the
 * share of the way its time went from the warm one (the "kept" sample
 * without spacers) to its twin's after the flush (the probe's "layer"
 * sample). A probe
 * whose flushed time is under 1.25 times its warm one cannot tell a cache
 * from memory: no points. */
static void fit_kept(const ntp_calibration_sample *S, int ns, ntp_calibration *cal)
{
    memset(&cal->kept, 0, sizeof cal->kept);
    const ntp_calibration_sample *warm = NULL, *cold = NULL;
    for (int i = 0; i < ns && !warm; i++)
        if (strcmp(S[i].kind, "kept") == 0 && S[i].median_s > 0 &&
            strcmp(S[i].ran_on, cal->backend) == 0 && kept_spacers(S[i].config) == 0)
            warm = &S[i];
    if (warm)
        cold = layer_twin(S, ns, cal->backend, warm->config, -1);
    double pts[NTP_KEPT_POINTS][2];
    int np = 0;
    for (int i = 0; i < ns; i++) {
        const ntp_calibration_sample *x = &S[i];
        int k = kept_spacers(x->config);
        if (strcmp(x->kind, "kept") != 0 || !(x->median_s > 0) ||
            strcmp(x->ran_on, cal->backend) != 0 || k == 0)
            continue;
        cal->kept.samples++;
        int64_t b = 0;
        if (!cold || !(cold->median_s >= 1.25 * warm->median_s) || np == NTP_KEPT_POINTS ||
            (b = kept_reuse(cal, x)) <= 0)
            continue;
        pts[np][0] = (double)b;
        pts[np++][1] = (x->median_s - warm->median_s) / (cold->median_s - warm->median_s);
    }
    if (cal->kept.samples > 0 && warm)
        cal->kept.samples++;
    /* By bytes, each point's first member. */
    qsort(pts, (size_t)np, sizeof pts[0], ntp__cmp_double);
    cal->kept.n_points = np;
    memcpy(cal->kept.points, pts, (size_t)np * sizeof pts[0]);
    for (int k = 0; k < np && pts[k][1] <= NTP_KEPT_SHARE; k++)
        cal->kept.bytes = (int64_t)pts[k][0];
}

static int cmp_gemv(const void *a, const void *b)
{
    const ntp_gemv_rate *x = a, *y = b;
    return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

/* The rate of ref's dot-product loop by the size of its weights
 * (ntp_calibration.gemv): each "step" sample ref ran (one row of H by an
 * LSTM's R, timed warm: config.step), its bytes over its median time, by
 * bytes ascending (several of one size: their median). Not for another
 * backend, nor the quick design (which has none). */
static void fit_gemv(const ntp_calibration_sample *S, int ns, ntp_calibration *cal)
{
    cal->n_gemv = 0;
    if (strcmp(cal->backend, "ref") != 0)
        return;
    for (int i = 0; i < ns && cal->n_gemv < NTP_PREDICT_MAX_GEMV; i++) {
        const ntp_calibration_sample *x = &S[i];
        if (strcmp(x->kind, "step") != 0 || strcmp(x->ran_on, "ref") != 0 || !(x->median_s > 0) ||
            x->bytes <= 0)
            continue;
        cal->gemv[cal->n_gemv].bytes = x->bytes;
        cal->gemv[cal->n_gemv++].gbps = (double)x->bytes / x->median_s / 1e9;
    }
    qsort(cal->gemv, (size_t)cal->n_gemv, sizeof cal->gemv[0], cmp_gemv);
    int k = 0;
    for (int i = 0; i < cal->n_gemv;) {
        int j = i;
        double r[NTP_PREDICT_MAX_GEMV];
        while (j < cal->n_gemv && cal->gemv[j].bytes == cal->gemv[i].bytes) {
            r[j - i] = cal->gemv[j].gbps;
            j++;
        }
        cal->gemv[k].bytes = cal->gemv[i].bytes;
        cal->gemv[k++].gbps = ntp__median_inplace(r, j - i);
        i = j;
    }
    cal->n_gemv = k >= 2 ? k : 0;
}

/* The fit of a calibration from its samples, the same whether they were
 * just timed (ntp_calibrate) or read back (ntp_calibration_refit): each
 * family on the layers its backend ran, the reorder model on the reorder
 * rows, then the corrections per implementation. cal has its ceilings and
 * no fit yet. */
static ntp_status fit_samples(ntp_ctx *ctx, const ntp_calibration_sample *S, int ns,
                              ntp_calibration *cal)
{
    double *X = calloc((size_t)ns * NTP_PREDICT_TERMS + 1, sizeof *X);
    double *t = calloc((size_t)ns + 1, sizeof *t);
    ntp_predict_family *fam = calloc((size_t)ns + 1, sizeof *fam);
    char(*impl)[48] = calloc((size_t)ns + 1, sizeof *impl);
    double *RX = calloc((size_t)ns * NTP_PREDICT_TERMS + 1, sizeof *RX);
    double *rt = calloc((size_t)ns + 1, sizeof *rt);
    const char **names = calloc((size_t)ns + 1, sizeof *names);
    double *Xf = calloc((size_t)ns * NTP_PREDICT_TERMS + 1, sizeof *Xf);
    double *tf = calloc((size_t)ns + 1, sizeof *tf);
    double *err = calloc((size_t)ns + 1, sizeof *err);
    int *from = calloc((size_t)ns + 1, sizeof *from);
    double *off = calloc((size_t)ns + 1, sizeof *off);
    ntp_status st = NTP_STATUS_OK;
    if (!X || !t || !fam || !impl || !RX || !rt || !names || !Xf || !tf || !err || !from || !off)
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    int n = 0, nr = 0;
    /* Samples stored before layouts were: whether the 1x1 conv that makes
     * a conv-fed input ran a brgemm kernel (sample_layout). */
    bool brg_nspc = false;
    for (int i = 0; i < ns; i++)
        brg_nspc |= S[i].family == NTP_PREDICT_FAMILY_CONV1X1 && strcmp(S[i].kind, "layer") == 0 &&
                    strcmp(S[i].ran_on, "onednn") == 0 && strncmp(S[i].impl, "brgconv", 7) == 0;
    for (int i = 0; !st && i < ns; i++) {
        const ntp_calibration_sample *x = &S[i];
        if (strcmp(x->kind, "reorder") == 0) {
            memcpy(&RX[nr * NTP_PREDICT_TERMS], x->x, sizeof x->x);
            rt[nr++] = x->median_s;
        } else if (strcmp(x->kind, "layer") == 0 && x->median_s > 0 &&
                   strcmp(x->ran_on, cal->backend) == 0 && x->family < NTP_PREDICT_FAMILY_COUNT) {
            memcpy(&X[n * NTP_PREDICT_TERMS], x->x, sizeof x->x);
            from[n] = i;
            t[n] = x->median_s;
            fam[n] = x->family;
            char op[32];
            config_op(x->config, op, sizeof op);
            /* ref's fc by its loop: the configuration's rows (the layer's). */
            const char *kop = ntp__predict_kernel_op(op, config_rows(x->config));
            ntp__predict_impl_key(x->family, x->impl, kop, sample_layout(x, brg_nspc), impl[n],
                                  sizeof impl[n]);
            names[n] = impl[n];
            n++;
        }
    }
    for (int f = 0; !st && f < NTP_PREDICT_FAMILY_COUNT; f++) {
        int k = 0;
        if (f == NTP_PREDICT_FAMILY_RNN || lowered(S, from, fam, n, (ntp_predict_family)f))
            continue; /* after the fc family: fit_priced_by_fc */
        for (int i = 0; i < n; i++)
            if (fam[i] == (ntp_predict_family)f) {
                memcpy(&Xf[k * NTP_PREDICT_TERMS], &X[i * NTP_PREDICT_TERMS],
                       NTP_PREDICT_TERMS * sizeof *X);
                tf[k++] = t[i];
            }
        /* Three samples at least (enough_samples). The quick design's
         * copies are all of one size: a fit on them extrapolates wildly
         * (seconds for a megabyte), so copies stay at the bandwidth. */
        ntp_family_model *fm = &cal->family[f];
        if (enough_samples(k) && !(cal->quick && f == NTP_PREDICT_FAMILY_COPY) &&
            ntp_predict_fit(Xf, tf, k, NTP_PREDICT_TERMS, fm->coef)) {
            fm->calibrated = true;
            fm->samples = k;
            for (int i = 0; i < k; i++) {
                err[i] = fabs(fitted_s(fm, &Xf[i * NTP_PREDICT_TERMS]) - tf[i]) / tf[i];
                fm->max_error = fmax(fm->max_error, err[i]);
            }
            fm->median_error = ntp__median_inplace(err, k);
        }
    }
    if (!st && !cal->quick)
        fit_reorders(RX, rt, nr, &cal->reorder);
    if (!st) {
        ntp__calibrate_impl_corrections(X, t, fam, names, n, cal);
        if (!ntp__calibrate_refit(X, t, fam, names, n, cal))
            st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    /* The convolutions ref lowers, then the recurrent layers, each after
     * the corrections of what was fitted before them. */
    bool conv[NTP_PREDICT_FAMILY_COUNT] = {false}, rnn[NTP_PREDICT_FAMILY_COUNT] = {false};
    for (int f = 0; f < NTP_PREDICT_FAMILY_COUNT; f++)
        conv[f] = lowered(S, from, fam, n, (ntp_predict_family)f);
    rnn[NTP_PREDICT_FAMILY_RNN] = true;
    if (!st)
        fit_gemv(S, ns, cal);
    if (!st && (!fit_priced_by_fc(X, S, from, t, off, fam, names, n, conv, Xf, tf, cal) ||
                !fit_priced_by_fc(X, S, from, t, off, fam, names, n, rnn, Xf, tf, cal)))
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    /* Once every correction is final (each fit above computes them anew):
     * off holds the recurrent layers' input GEMMs, the last fit's. */
    if (!st)
        size_points(X, S, from, t, off, fam, names, n, cal);
    if (!st) {
        fit_wake(S, ns, cal);
        fit_cold(S, ns, tf, cal);
        fit_kept(S, ns, cal);
    }
    free(from);
    free(off);
    free(X);
    free(t);
    free(fam);
    free(impl);
    free(RX);
    free(rt);
    free(names);
    free(Xf);
    free(tf);
    free(err);
    return st;
}

/* A layer sample's terms by this ntprof's model under cal's ceilings: its
 * configuration loaded as it was timed and analysed, without running it.
 * false (the stored terms stand) where the markup no longer loads. */
static bool sample_terms(const ntp_calibration *cal, ntp_calibration_sample *x)
{
    ntp_ctx *ctx;
    ntp_graph *g;
    ntp_analysis *a;
    bool ok = sample_graph(
        cal, x, strcmp(cal->cache, "network") == 0 && strcmp(x->kind, "step") != 0, &ctx, &g, &a);
    int li = ok ? ntp_graph_layer_find(g, "L") : -1;
    if (li >= 0) {
        ntp__pfeat f;
        ntp__predict_features(g, a, li, cal, x->impl, &f);
        snprintf(x->level, sizeof x->level, "%s", f.level ? f.level : "");
        x->flops = f.flops;
        x->bytes = f.bytes;
        memcpy(x->x, f.x, sizeof x->x);
        memcpy(x->x_in, f.xin, sizeof x->x_in);
        memcpy(x->x_rec, f.xrec, sizeof x->x_rec);
        x->rec_rows = f.rec_rows;
        x->rec_weight = f.rec_weight;
        x->size_bytes = f.size_bytes;
        memcpy(x->x_copy, f.xcp, sizeof x->x_copy);
        x->x_far = f.far;
    }
    ntp_analysis_free(a);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
    return li >= 0;
}

ntp_status ntp_calibration_refit(ntp_ctx *ctx, const ntp_calibration *cal,
                                 const ntp_calibration_sample *samples, int n, ntp_calibration *out)
{
    if (!cal || !out || (n > 0 && !samples) || n < 0)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_calibration_refit: missing argument");
    if (n == 0)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "refit: the %s %s calibration of %s has no samples (made before they "
                          "were kept); run `ntprof machine --calibrate` again",
                          cal->backend, cal->precision, cal->machine_key);
    ntp_calibration_sample *S = malloc((size_t)n * sizeof *S);
    if (!S)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    memcpy(S, samples, (size_t)n * sizeof *S);
    ntp_calibration c = *cal;
    memset(c.family, 0, sizeof c.family);
    memset(&c.reorder, 0, sizeof c.reorder);
    c.wake_s = 0;
    c.wake_samples = 0;
    c.n_wake_points = 0;
    c.n_gemv = 0;
    memset(c.impls, 0, sizeof c.impls);
    c.n_impls = 0;
    snprintf(c.ntprof_version, sizeof c.ntprof_version, "%s", ntp_version());
    time_t now = time(NULL);
    struct tm utc;
    if (gmtime_r(&now, &utc))
        strftime(c.refitted_at, sizeof c.refitted_at, "%Y-%m-%dT%H:%M:%SZ", &utc);
    /* Terms by this ntprof's model; a reorder row's from its bytes. */
    for (int i = 0; i < n; i++) {
        if (strcmp(S[i].kind, "reorder") == 0)
            ntp__predict_copy_terms(&c, S[i].bytes, S[i].x);
        else
            sample_terms(&c, &S[i]);
    }
    ntp_status st = fit_samples(ctx, S, n, &c);
    free(S);
    if (st)
        return st;
    bool any = false;
    for (int f = 0; f < NTP_PREDICT_FAMILY_COUNT; f++)
        any |= c.family[f].calibrated;
    if (!any)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                          "refit: no family of the %s %s calibration has enough samples",
                          cal->backend, cal->precision);
    *out = c;
    return NTP_STATUS_OK;
}

ntp_status ntp__calibrate_check_families(ntp_ctx *ctx, const char *list, const char *who)
{
    if (!list)
        return NTP_STATUS_OK;
    /* Every name must be a family: a typo would select nothing. */
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        bool known = false;
        for (int f = 0; f < NTP_PREDICT_FAMILY_COUNT; f++)
            known |= strcmp(t, ntp_predict_family_name((ntp_predict_family)f)) == 0;
        if (!known) {
            /* The names the table has, so the message cannot fall behind. */
            char names[256];
            size_t u = 0;
            names[0] = '\0';
            for (int f = 0; f < NTP_PREDICT_FAMILY_COUNT && u < sizeof names; f++)
                u += (size_t)snprintf(names + u, sizeof names - u, "%s%s", f ? ", " : "",
                                      ntp_predict_family_name((ntp_predict_family)f));
            return ntp__error(ctx, NTP_STATUS_UNKNOWN_NAME, "%s: unknown family '%s' (%s)", who, t,
                              names);
        }
    }
    return NTP_STATUS_OK;
}

bool ntp__calibrate_family_wanted(const char *list, ntp_predict_family f)
{
    if (!list)
        return true;
    const char *name = ntp_predict_family_name(f);
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return false;
}

/* x, zeroed by the caller, named: its kind, cf's family, markup and feed,
 * and the backend it ran on. */
static ntp_calibration_sample *sample_head(ntp_calibration_sample *x, const char *kind,
                                           const config *cf, const char *ran_on)
{
    snprintf(x->kind, sizeof x->kind, "%s", kind);
    x->family = cf->family;
    snprintf(x->config, sizeof x->config, "%s", cf->xml);
    x->conv_fed = cf->conv_fed;
    snprintf(x->ran_on, sizeof x->ran_on, "%s", ran_on);
    return x;
}

/* Whether a timing ran on a CPU the host slowed: its look at the CPUs'
 * pace read under NTP_CALIBRATE_SLOW_PACE of best, the calibration's best
 * look (0: none). */
static bool slow_pace(const ntp__calibrate_timed *t, double best)
{
    return t->pace > 0 && best > 0 && t->pace < NTP_CALIBRATE_SLOW_PACE * best;
}

/* Whether a timing's looks found the machine other than the calibration
 * describes it: the CPUs apart, or one slowed. */
static bool hindered(const ntp__calibrate_timed *t, double best)
{
    return t->apart || slow_pace(t, best);
}

/* The best pace look of n timings; 0 where none looked. */
static double best_pace(const ntp__calibrate_timed *T, size_t n)
{
    double best = 0;
    for (size_t q = 0; q < n; q++)
        best = fmax(best, T[q].pace);
    return best;
}

/* Configuration k's passes merged into samples (its reorder rows, then its
 * layer), appended to S (*n of cap): T[p] its timing in pass p (s 0: it did
 * not run in that pass), f its terms. A configuration, or a reorder row,
 * is kept only where it ran in more than half of the passes: one that
 * failed in most is not a measurement of this backend. Its time is its
 * fastest pass's median (cal->keep "fastest") or the median of the
 * per-pass medians; its kernel and backend are those of the first pass it
 * ran in, whose reorder rows are matched in the others by position and
 * bytes. T holds passes + NTP_CALIBRATE_APART_RETRIES timings: the
 * passes, then the retries of a configuration none of whose passes found
 * the CPUs together (docs/run.md#handoff) and unslowed. A hindered timing
 * (looks that found the CPUs apart, or one CPU slowed: cal's pace_gflops
 * set) is left out when another was not and it ran at least
 * NTP_HANDOFF_SLOWER times their median: a look moves with more than
 * what it looks for, the configuration's own time is the judge (counted
 * in cal's apart_timings, apart_kept, slow_timings and slow_kept). */
static void merge_passes(const config *cf, const ntp__calibrate_timed *T, int passes,
                         const ntp__pfeat *f, ntp_calibration *cal, ntp_calibration_sample *S,
                         int *n, size_t cap)
{
    enum { SLOTS = NTP_CALIBRATE_MAX_PASSES + NTP_CALIBRATE_APART_RETRIES };
    double v[SLOTS], lo[SLOTS], hi[SLOTS];
    int ran = 0, first = -1, fastest = -1, iters = 0;
    const bool keep_fastest = strcmp(cal->keep, "fastest") == 0;
    /* The passes it ran in (the majority rule counts those), and every
     * timing, retries too, whose looks found the machine hindered (the
     * CPUs apart, docs/run.md#handoff, or one slowed) or clear: the
     * hindered ones are left out when any was clear. */
    const int slots = passes + NTP_CALIBRATE_APART_RETRIES;
    const double best = cal->pace_gflops;
    int ran_any = 0, hindered_n = 0, clear_n = 0;
    for (int p = 0; p < slots; p++)
        if (T[p].s > 0) {
            ran_any += p < passes;
            hindered_n += hindered(&T[p], best);
            clear_n += !hindered(&T[p], best);
        }
    if (2 * ran_any <= passes)
        return;
    bool drop[SLOTS] = {false};
    if (hindered_n > 0 && clear_n > 0) {
        int nt = 0;
        for (int p = 0; p < slots; p++)
            if (T[p].s > 0 && !hindered(&T[p], best))
                v[nt++] = T[p].s;
        double bar = NTP_HANDOFF_SLOWER * ntp__median_inplace(v, nt);
        for (int p = 0; p < slots; p++)
            drop[p] = T[p].s > 0 && hindered(&T[p], best) && T[p].s >= bar;
    }
    for (int p = 0; p < slots; p++)
        if (T[p].s > 0) {
            cal->apart_timings += T[p].apart;
            cal->apart_kept += T[p].apart && !drop[p];
            cal->slow_timings += slow_pace(&T[p], best);
            cal->slow_kept += slow_pace(&T[p], best) && !drop[p];
        }
    for (int p = 0; p < slots; p++)
        if (T[p].s > 0 && !drop[p]) {
            if (first < 0)
                first = p;
            if (fastest < 0 || T[p].s < T[fastest].s)
                fastest = p;
            lo[ran] = T[p].ci95_lo_s;
            hi[ran] = T[p].ci95_hi_s;
            iters += T[p].n;
            v[ran++] = T[p].s;
        }
    const ntp__calibrate_timed *t0 = &T[first];
    /* A wake configuration's rows are not layout changes of the fit's
     * kind: its first may carry the wake. */
    const bool wake = is_wake(cf->xml);
    for (int k = 0;
         !wake && !cf->step && !cf->warm && !cf->kept && k < t0->n_reorders && (size_t)*n < cap;
         k++) {
        double rv[SLOTS];
        int nr = 0;
        int nr_any = 0;
        for (int p = 0; p < slots; p++)
            if (T[p].s > 0 && T[p].n_reorders > k &&
                T[p].reorder_bytes[k] == t0->reorder_bytes[k]) {
                nr_any += p < passes;
                if (!drop[p])
                    rv[nr++] = T[p].reorder_s[k];
            }
        if (2 * nr_any <= passes || nr == 0)
            continue;
        ntp_calibration_sample *x = sample_head(&S[(*n)++], "reorder", cf, cal->backend);
        x->bytes = t0->reorder_bytes[k];
        ntp__predict_copy_terms(cal, x->bytes, x->x);
        x->median_s = ntp__median_inplace(rv, nr);
        if (keep_fastest)
            x->median_s = rv[0];
        x->pass_min_s = rv[0];
        x->pass_max_s = rv[nr - 1];
        x->passes = nr;
    }
    /* A wake's mark, as a sample of its own ("sleep", run on ref): the
     * median over the same passes as the wake's, or the kept pass's. */
    double mk[SLOTS];
    int nm = 0;
    for (int p = 0; wake && p < slots; p++)
        if (T[p].s > 0 && !drop[p] && T[p].mark_s > 0)
            mk[nm++] = T[p].mark_s;
    if (nm > 0 && (size_t)*n + 1 < cap) {
        ntp_calibration_sample *y = sample_head(&S[(*n)++], "sleep", cf, "ref");
        const double med = ntp__median_inplace(mk, nm);
        y->median_s = keep_fastest && T[fastest].mark_s > 0 ? T[fastest].mark_s : med;
        y->pass_min_s = mk[0];
        y->pass_max_s = mk[nm - 1];
        y->ci95_lo_s = y->ci95_hi_s = y->median_s;
        y->passes = nm;
    }
    if ((size_t)*n >= cap)
        return;
    ntp_calibration_sample *x = sample_head(&S[(*n)++],
                                            wake       ? "wake"
                                            : cf->step ? "step"
                                            : cf->warm ? "warm"
                                            : cf->kept ? "kept"
                                                       : "layer",
                                            cf, t0->ran_on);
    snprintf(x->impl, sizeof x->impl, "%s", t0->impl);
    snprintf(x->level, sizeof x->level, "%s", f->level ? f->level : "");
    x->flops = f->flops;
    x->bytes = f->bytes;
    memcpy(x->x, f->x, sizeof x->x);
    memcpy(x->x_in, f->xin, sizeof x->x_in);
    memcpy(x->x_rec, f->xrec, sizeof x->x_rec);
    x->rec_rows = f->rec_rows;
    x->rec_weight = f->rec_weight;
    x->size_bytes = f->size_bytes;
    memcpy(x->x_copy, f->xcp, sizeof x->x_copy);
    x->x_far = f->far;
    x->median_s = ntp__median_inplace(v, ran);
    x->pass_min_s = v[0];
    x->pass_max_s = v[ran - 1];
    x->passes = ran;
    if (keep_fastest) {
        /* The fastest pass as it was timed: its median and interval. */
        x->median_s = T[fastest].s;
        x->ci95_lo_s = T[fastest].ci95_lo_s;
        x->ci95_hi_s = T[fastest].ci95_hi_s;
        x->n = T[fastest].n;
        return;
    }
    /* Each bound the median over the passes, as the time: each pass's
     * interval holds its median, so the median bounds hold the median. */
    x->ci95_lo_s = ntp__median_inplace(lo, ran);
    x->ci95_hi_s = ntp__median_inplace(hi, ran);
    x->n = iters;
}

ntp_status ntp_calibrate(ntp_ctx *ctx, const ntp_machine_info *m, const ntp_ceilings *c,
                         const ntp_calibrate_opts *opts, ntp_calibration *out)
{
    return ntp__calibrate_with(ctx, m, c, opts, NULL, NULL, out);
}

ntp_status ntp__calibrate_with(ntp_ctx *ctx, const ntp_machine_info *m, const ntp_ceilings *c,
                               const ntp_calibrate_opts *opts, ntp__calibrate_runner runner,
                               void *user, ntp_calibration *out)
{
    ntp_calibrate_opts def;
    if (!opts) {
        ntp_calibrate_opts_default(&def);
        opts = &def;
    }
    memset(out, 0, sizeof *out);
    if (opts->samples && opts->n_samples) {
        *opts->samples = NULL;
        *opts->n_samples = 0;
    }
    if (!m || !c)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_calibrate: missing argument");
    if (!ntp_dtype_is_precision(opts->precision))
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "calibrate: '%s' is not a compute precision",
                          ntp_dtype_name(opts->precision));
    ntp_status fst = ntp__calibrate_check_families(ctx, opts->families, "calibrate");
    if (fst)
        return fst;
    const char *backend = opts->backend;
    if (!backend) {
        static char first[32];
        snprintf(first, sizeof first, "%s", ntp_backends());
        char *comma = strchr(first, ',');
        if (comma)
            *comma = '\0';
        backend = first;
    }
    char why[192];
    if (!ntp_backend_usable(backend, why, sizeof why))
        return ntp__error(ctx, NTP_STATUS_UNKNOWN_NAME, "calibrate: backend '%s': %s", backend,
                          why);
    int64_t max_flops = opts->max_flops != 0          ? opts->max_flops
                        : strcmp(backend, "ref") == 0 ? NTP_CALIBRATE_REF_MAX_FLOPS
                                                      : 0;
    ntp__calibration_ceilings(c, opts->precision, out);
    snprintf(out->machine_key, sizeof out->machine_key, "%s", m->key);
    snprintf(out->cpu_flags, sizeof out->cpu_flags, "%.255s", m->cpu_flags);
    snprintf(out->cpu_signature, sizeof out->cpu_signature, "%s", m->cpu_signature);
    snprintf(out->backend, sizeof out->backend, "%s", backend);
    ntp_predict_backend_version(backend, out->backend_version, sizeof out->backend_version);
    snprintf(out->precision, sizeof out->precision, "%s", ntp_dtype_name(opts->precision));
    snprintf(out->ntprof_version, sizeof out->ntprof_version, "%s", ntp_version());
    out->quick = opts->quick;
    if (opts->threads > 0)
        out->threads = opts->threads;
    double la[1];
    FILE *lf = fopen("/proc/loadavg", "r");
    out->loadavg = lf && fscanf(lf, "%lf", &la[0]) == 1 ? la[0] : -1;
    if (lf)
        fclose(lf);
    time_t now = time(NULL);
    struct tm utc;
    if (gmtime_r(&now, &utc))
        strftime(out->calibrated_at, sizeof out->calibrated_at, "%Y-%m-%dT%H:%M:%SZ", &utc);
    if (!(out->peak_gflops > 0) || out->n_levels == 0)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "calibrate: the ceilings have no %s peak or no bandwidth; run "
                          "`ntprof machine --remeasure`",
                          out->precision);

    if (opts->cache != NTP_CALIBRATE_NETWORK && opts->cache != NTP_CALIBRATE_WARM)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "calibrate: cache mode %d (expected NTP_CALIBRATE_NETWORK or "
                          "NTP_CALIBRATE_WARM)",
                          opts->cache);
    int64_t flush_bytes =
        opts->cache == NTP_CALIBRATE_NETWORK ? ntp__calibrate_flush_bytes(m, out) : 0;
    snprintf(out->cache, sizeof out->cache, "%s",
             opts->cache == NTP_CALIBRATE_NETWORK ? "network" : "warm");
    int passes = opts->passes != 0 ? opts->passes : opts->quick ? 1 : NTP_CALIBRATE_PASSES;
    if (passes < 1 || passes > NTP_CALIBRATE_MAX_PASSES)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "calibrate: %d passes (expected 1 to %d)", opts->passes,
                          NTP_CALIBRATE_MAX_PASSES);
    out->passes = passes;
    const char *keep = ntp_calibrate_keep_name(opts->keep);
    if (!keep)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "calibrate: keep %d (expected NTP_CALIBRATE_KEEP_FASTEST or "
                          "NTP_CALIBRATE_KEEP_MEDIAN)",
                          opts->keep);
    snprintf(out->keep, sizeof out->keep, "%s", keep);

    design d = {0};
    if (!build_design(&d)) {
        free(d.c);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    /* The configurations selected, in design order. */
    int total = 0;
    int *sel = calloc((size_t)d.n + 1, sizeof *sel);
    for (int i = 0; sel && i < d.n; i++)
        if ((!opts->quick || d.c[i].quick) &&
            ntp__calibrate_family_wanted(opts->families, d.c[i].family) &&
            !(is_wake(d.c[i].xml) && strcmp(backend, "ref") == 0) &&
            !(d.c[i].step && strcmp(backend, "ref") != 0) &&
            !((d.c[i].warm || d.c[i].kept) && flush_bytes == 0))
            sel[total++] = i;
    /* Every timing of every pass, then merged per configuration
     * (merge_passes) into a layer and its run's reorder rows (at most 16
     * a configuration): the fit below reads only these, as a refit does. */
    const int P = passes;
    size_t cap = (size_t)d.n * (NTP__CALIBRATE_MAX_REORDERS + 1);
    ntp_calibration_sample *S = calloc(cap, sizeof *S);
    const int Q = P + NTP_CALIBRATE_APART_RETRIES; /* timings kept per configuration */
    ntp__calibrate_timed *T = calloc((size_t)total * (size_t)Q + 1, sizeof *T);
    ntp__pfeat *F = calloc((size_t)total + 1, sizeof *F);
    int64_t *budgets = calloc((size_t)total + 1, sizeof *budgets);
    bool *left_out = calloc((size_t)total + 1, sizeof *left_out);
    int n = 0;
    ntp_status st = NTP_STATUS_OK;
    if (!S || !sel || !T || !F || !budgets || !left_out)
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    int done = 0;
    bool handed[NTP_PREDICT_FAMILY_COUNT + 1] = {false};
    bool ran_here[NTP_PREDICT_FAMILY_COUNT + 1] = {false};
    /* The runs have a context of their own: a configuration the backend
     * cannot run is left out of the fit, not the caller's error. */
    ntp_ctx *rctx = st ? NULL : ntp_ctx_init();
    if (!st && !rctx)
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    /* The hand-off looks around each timing, planned once for all of them
     * (docs/run.md#handoff). */
    ntp_handoff_check looks;
    ntp__handoff_plan(NTP_BANDWIDTH_PROBE_ON, opts->threads, &looks);
    /* The memory bus before the first pass and after the last, each with
     * a look at where the CPUs sat. */
    double bus_look0 = 0;
    if (!st) {
        ntp__bandwidth_plan(c, NTP_BANDWIDTH_PROBE_ON, 0, &out->bus);
        bus_look0 = ntp__handoff_look(&looks);
        ntp__bandwidth_before(&out->bus);
    }
    /* Interleaved: every configuration once, then every one again, so that
     * a slow phase of the machine (this VM's speed moves from minute to
     * minute) falls on different configurations in each pass, never on
     * all the timings of one. */
    for (int p = 0; !st && p < P; p++)
        for (int k = 0; !st && k < total; k++) {
            const config *cf = &d.c[sel[k]];
            if (opts->progress) {
                char label[48];
                if (P > 1)
                    snprintf(label, sizeof label, "pass %d/%d: %s", p + 1, P,
                             ntp_predict_family_name(cf->family));
                else
                    snprintf(label, sizeof label, "%s", ntp_predict_family_name(cf->family));
                opts->progress(opts->progress_user, done, total * P, label);
            }
            done++;
            /* Left out by the budget in the first pass: in every pass. */
            if (left_out[k])
                continue;
            /* Once a family's configuration was handed to another backend
             * and none has run on this one (XNNPACK's recurrent layers run
             * on ref), its larger ones would be handed too, timed at ref's
             * pace for nothing: held to ref's budget. Decided in the first
             * pass, kept in the others. */
            if (p == 0) {
                int64_t budget = max_flops;
                if (handed[cf->family] && !ran_here[cf->family] &&
                    (budget <= 0 || budget > NTP_CALIBRATE_REF_MAX_FLOPS))
                    budget = NTP_CALIBRATE_REF_MAX_FLOPS;
                budgets[k] = budget;
            }
            ntp__pfeat f;
            ntp__calibrate_timed *tm = &T[(size_t)k * (size_t)Q + (size_t)p];
            run_source rn = {runner, user, p, k, &looks};
            if (time_config(rctx, cf, opts, out, budgets[k], cf->step ? 0 : flush_bytes, &rn, &f,
                            tm) != NTP_STATUS_OK) {
                memset(tm, 0, sizeof *tm);
                ntp_ctx_clear(rctx);
                continue;
            }
            if (tm->left_out) {
                left_out[k] = true;
                continue;
            }
            /* A layer the engine had to hand to another backend says
             * nothing of this one: kept, not fitted. */
            if (tm->s > 0) {
                handed[cf->family] |= strcmp(tm->ran_on, backend) != 0;
                ran_here[cf->family] |= strcmp(tm->ran_on, backend) == 0;
                /* The terms of the first pass it ran in (the kernel's,
                 * for a recurrent layer), as its kernel is. */
                bool seen = false;
                for (int q = 0; q < p; q++)
                    seen |= T[(size_t)k * (size_t)Q + (size_t)q].s > 0;
                if (!seen)
                    F[k] = f;
            }
        }
    /* The CPUs' unhindered pace: the best look of the passes (pace.c). */
    const bool paced = pace_judged(backend, opts->threads);
    out->pace_gflops = paced ? best_pace(T, (size_t)total * (size_t)Q) : 0;
    /* A configuration every pass of which ran while the CPUs were apart
     * or one was slowed (a long placement or a neighbour on this VM
     * outlasts a pass): timed again, up to NTP_CALIBRATE_APART_RETRIES
     * times, until a timing finds them neither. */
    for (int r = 0; !st && r < NTP_CALIBRATE_APART_RETRIES; r++)
        for (int k = 0; !st && k < total; k++) {
            ntp__calibrate_timed *row = &T[(size_t)k * (size_t)Q];
            bool ran = false, clear = false;
            for (int q = 0; q < P + r; q++) {
                ran |= row[q].s > 0;
                clear |= row[q].s > 0 && !hindered(&row[q], out->pace_gflops);
            }
            if (left_out[k] || !ran || clear)
                continue;
            if (opts->progress) {
                char label[48];
                snprintf(label, sizeof label, "again, CPUs apart or slowed: %s",
                         ntp_predict_family_name(d.c[sel[k]].family));
                opts->progress(opts->progress_user, done, total * P, label);
            }
            ntp__pfeat f;
            run_source rn = {runner, user, P + r, k, &looks};
            if (time_config(rctx, &d.c[sel[k]], opts, out, budgets[k],
                            d.c[sel[k]].step ? 0 : flush_bytes, &rn, &f,
                            &row[P + r]) != NTP_STATUS_OK) {
                memset(&row[P + r], 0, sizeof row[P + r]);
                ntp_ctx_clear(rctx);
            }
        }
    /* Retries may have read a better one. */
    out->pace_gflops = paced ? best_pace(T, (size_t)total * (size_t)Q) : 0;
    if (!st) {
        ntp__bandwidth_after(&out->bus);
        ntp__bandwidth_placement(&out->bus, bus_look0, ntp__handoff_look(&looks));
    }
    for (int k = 0; !st && k < total; k++)
        merge_passes(&d.c[sel[k]], &T[(size_t)k * (size_t)Q], P, &F[k], out, S, &n, cap);
    if (opts->progress && !st)
        opts->progress(opts->progress_user, total * P, total * P, "fit");
    free(sel);
    free(T);
    free(F);
    free(budgets);
    free(left_out);
    ntp_ctx_free(rctx);
    free(d.c);
    if (!st)
        st = fit_samples(ctx, S, n, out);
    if (!st && opts->samples && opts->n_samples) {
        *opts->samples = S;
        *opts->n_samples = n;
        S = NULL;
    }
    free(S);
    if (!st) {
        bool any = false;
        for (int f = 0; f < NTP_PREDICT_FAMILY_COUNT; f++)
            any |= out->family[f].calibrated;
        if (!any)
            st = ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                            "calibrate: backend '%s' ran no configuration at %s", backend,
                            out->precision);
    }
    return st;
}
