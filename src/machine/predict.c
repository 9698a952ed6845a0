/* Predicting a topology's per-layer latency from a calibration, without
 * running it, and placing the prediction beside a measurement
 * (docs/predict.md).
 *
 * A layer's terms come from the static analysis (its FLOPs and minimal
 * traffic, a recurrent layer's parts with their re-reads) and the
 * calibration's ceilings; its family picks the fitted coefficients. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend-impl.h"
#include "core/ctx-impl.h"
#include "core/writers-impl.h"
#include "exec/exec-impl.h"
#include "graph/graph-impl.h"
#include "measure/measure-impl.h"
#include "ntprof/ntprof.h"
#include "predict-impl.h"

const char *ntp_predict_family_name(ntp_predict_family f)
{
    static const char *const names[] = {
#define NTP_PF_NAME_(e, s) s,
        NTP_PREDICT_FAMILY_TABLE(NTP_PF_NAME_)
#undef NTP_PF_NAME_
    };
    if ((int)f >= 0 && f < NTP_PREDICT_FAMILY_COUNT)
        return names[f];
    return f == NTP_PREDICT_FAMILY_FREE ? "free" : "none";
}

/* An op's family is its op-table column (op-table.h, PREDICT); a
 * convolution's depends on its kernel and groups. A transposed convolution
 * does a convolution's work (its FLOPs and bytes, from the analysis) with
 * the same kernels' blocking; data movement (concat, split, transpose, pad,
 * slice, ...) reads each element once and writes it once, no arithmetic; the
 * decoder ops, argmax and delay have no family of their own yet and are
 * predicted as element-wise. */
static ntp_predict_family family_of_op(const ntp_graph *g, const ntp_node *n)
{
    switch (ntp__op_predict(n->op)) {
    case NTP_OP_PREDICT_CONV_KERNEL: {
        const ntp_tensor *in = n->n_in > 0 ? &g->tensors[n->in[0]] : NULL;
        int64_t cin = in && in->shape.ndim > 1 ? in->shape.dim[1] : 0;
        if (n->a.groups > 1 && n->a.groups == cin)
            return NTP_PREDICT_FAMILY_DEPTHWISE;
        bool one = true;
        for (int k = 0; k < n->a.nk; k++)
            one &= n->a.kernel[k] == 1;
        return one && n->a.groups <= 1 ? NTP_PREDICT_FAMILY_CONV1X1 : NTP_PREDICT_FAMILY_CONV;
    }
    case NTP_OP_PREDICT_CONV: return NTP_PREDICT_FAMILY_CONV;
    case NTP_OP_PREDICT_FC: return NTP_PREDICT_FAMILY_FC;
    case NTP_OP_PREDICT_POOL: return NTP_PREDICT_FAMILY_POOL;
    case NTP_OP_PREDICT_REDUCE: return NTP_PREDICT_FAMILY_REDUCE;
    case NTP_OP_PREDICT_ELTWISE: return NTP_PREDICT_FAMILY_ELTWISE;
    case NTP_OP_PREDICT_NORM: return NTP_PREDICT_FAMILY_NORM;
    case NTP_OP_PREDICT_RNN: return NTP_PREDICT_FAMILY_RNN;
    case NTP_OP_PREDICT_ATTENTION: return NTP_PREDICT_FAMILY_ATTENTION;
    case NTP_OP_PREDICT_COPY: return NTP_PREDICT_FAMILY_COPY;
    case NTP_OP_PREDICT_MFCC: return NTP_PREDICT_FAMILY_MFCC;
    case NTP_OP_PREDICT_CTC: return NTP_PREDICT_FAMILY_CTC;
    case NTP_OP_PREDICT_FREE: return NTP_PREDICT_FAMILY_FREE;
    case NTP_OP_PREDICT_NONE: return NTP_PREDICT_FAMILY_NONE;
    }
    return NTP_PREDICT_FAMILY_ELTWISE;
}

ntp_predict_family ntp__predict_family(const ntp_graph *g, int i)
{
    if (i < 0 || i >= g->n_nodes)
        return NTP_PREDICT_FAMILY_NONE;
    return family_of_op(g, &g->nodes[g->order[i]]);
}

/* The innermost level of cal holding `bytes`, and its bandwidth (GB/s). */
static const char *level_for(const ntp_calibration *cal, int64_t bytes, double *gbps)
{
    *gbps = 0;
    for (int k = 0; k < cal->n_levels; k++) {
        bool fits = cal->levels[k].capacity_bytes <= 0 || bytes <= cal->levels[k].capacity_bytes;
        if (fits && cal->levels[k].gbps > 0) {
            *gbps = cal->levels[k].gbps;
            return cal->levels[k].name;
        }
    }
    return "DRAM";
}

/* The stream term of `bytes` under cal: their seconds at the fastest
 * level's bandwidth (NTP_PREDICT_TERM_STREAM); 0 without a bandwidth. */
static double stream_s(const ntp_calibration *cal, int64_t bytes)
{
    double g = 0;
    for (int k = 0; k < cal->n_levels; k++)
        g = fmax(g, cal->levels[k].gbps);
    return g > 0 && bytes > 0 ? (double)bytes / (g * 1e9) : 0;
}

/* Whether family f's kernels stream their data once, at a rate of their
 * own that bounds them in any cache level: the families with a stream
 * term. Convolutions, products and recurrent layers reuse what they read
 * and keep theirs at 0. The calibration on the Zen 5 VM (2026-12-06):
 * ref's concats and splits moved 33-47 GB/s over 1.2-1.6 MB (in the L2,
 * whose triad reads 387) and 34-43 over 3.2-12.8 MB (in the L3, 145);
 * XNNPACK's 3x3 max pooling 34 GB/s over 1 MB and 43 over 4 MB. */
static bool streams(ntp_predict_family f)
{
    return f == NTP_PREDICT_FAMILY_POOL || f == NTP_PREDICT_FAMILY_REDUCE ||
           f == NTP_PREDICT_FAMILY_ELTWISE || f == NTP_PREDICT_FAMILY_NORM ||
           f == NTP_PREDICT_FAMILY_COPY;
}

/* The seconds `bytes` take, read again and again from a working set of
 * `ws` bytes under cal: at the bandwidth of the level the working set
 * fits in; past a cache level (the largest it does not fit in) the share
 * of them that level still holds, its capacity over the working set, at
 * that level's bandwidth and the rest at the next level's. *far: the part
 * of the seconds read from memory, past the last cache (its family's
 * far_scale multiplies it); *name: the level the working set fits in, the
 * one most of it comes from. */
static double reread_s(const ntp_calibration *cal, int64_t ws, double bytes, double *far,
                       const char **name)
{
    double g;
    *far = 0;
    *name = level_for(cal, ws, &g);
    if (!(g > 0))
        return 0;
    int k = 0;
    while (k < cal->n_levels && strcmp(cal->levels[k].name, *name) != 0)
        k++;
    const bool memory = k < cal->n_levels && cal->levels[k].capacity_bytes <= 0;
    double near = 0, from = bytes;
    if (k > 0 && k < cal->n_levels && cal->levels[k - 1].capacity_bytes > 0 &&
        ws > cal->levels[k - 1].capacity_bytes && cal->levels[k - 1].gbps > 0) {
        double f = (double)cal->levels[k - 1].capacity_bytes / (double)ws;
        near = f * bytes / (cal->levels[k - 1].gbps * 1e9);
        from = (1 - f) * bytes;
    }
    double s = from / (g * 1e9);
    if (memory)
        *far = s;
    return near + s;
}

bool ntp__predict_rnn_per_step(const char *impl)
{
    /* oneDNN's brgemm RNN cell multiplies the step's input by the input
     * weights W and the hidden state by R in one batch of small GEMMs, at
     * every step: W is read again at every step with R, the input GEMM is
     * not one GEMM over the sequence. Its samples show it (2026-12-02, the
     * Zen 4 VM, docs/predict.md): a step of x[50,1,2048] into 512 units
     * took 0.46 ms: 46 GB/s for W (16.8 MB) and R (4.2 MB), between the
     * L3's triad and memory's, where R alone (which the L3 holds) would
     * have moved at 9 GB/s, a third of memory's. oneDNN's ref GRU and
     * ntprof's ref run one GEMM over the sequence first. */
    return impl && strncmp(impl, "brgemm", 6) == 0;
}

/* A recurrent layer's shape as its parts need it: T steps, its directions
 * and its input's bytes (the input GEMM's bytes less them are W's). */
typedef struct rnn_shape {
    int64_t T, dirs, x_bytes;
    /* Batch rows N, units H, gates G and the element's bytes: the
     * recurrent product's shape (N x H by H x G·H at every step). */
    int64_t N, H, G, esize;
} rnn_shape;

static rnn_shape rnn_shape_of(const ntp_graph *g, int i)
{
    rnn_shape r = {0, 1, 0, 0, 0, 0, 0};
    const ntp_node *n = &g->nodes[g->order[i]];
    if (n->op != NTP_OP_LSTM && n->op != NTP_OP_GRU && n->op != NTP_OP_RNN)
        return r;
    const ntp_tensor *x = ntp__cin(g, n, 0);
    r.T = x->shape.ndim > 0 ? x->shape.dim[0] : 0;
    r.dirs = n->a.direction == NTP_DIR_BIDIRECTIONAL ? 2 : 1;
    r.x_bytes = ntp__tensor_bytes(x);
    r.N = x->shape.ndim > 1 ? x->shape.dim[1] : 0;
    r.H = n->a.units;
    r.G = n->op == NTP_OP_LSTM ? 4 : n->op == NTP_OP_GRU ? 3 : 1;
    int64_t numel = ntp_shape_numel(&x->shape);
    r.esize = numel > 0 ? r.x_bytes / numel : 0;
    return r;
}

/* A convolution as ref-conv.c runs it: calls GEMMs (one per image and
 * group) of M x N by depth K (W_g [M, K] by the column matrix [K, N], N
 * the output positions), each after an im2col that writes the column
 * matrix, but for a 1x1 convolution of stride 1 without
 * padding (pointwise), whose input is its column matrix. x_floats: one
 * group's input; w_bytes: all the weights; esize: an element's bytes.
 * A fully connected layer (op fc) is one call of M units by its N rows
 * (its input's elements over its last dimension), depth K that dimension.
 * calls is 0 for any other layer. */
typedef struct conv_shape {
    int64_t calls, M, N, K, x_floats, w_bytes, esize;
    bool pointwise;
    /* The share of its multiply-adds whose input tap falls inside the
     * input, not in its padding (1 without padding): the work of a kernel
     * that leaves the padding's taps out. */
    double valid;
} conv_shape;

static conv_shape conv_shape_of(const ntp_graph *g, int i)
{
    conv_shape c = {.valid = 1};
    const ntp_node *n = &g->nodes[g->order[i]];
    if (n->op == NTP_OP_FC && n->n_in >= 1 && n->n_out >= 1) {
        const ntp_tensor *x = ntp__cin(g, n, 0);
        int64_t numel = ntp_shape_numel(&x->shape);
        int64_t k = x->shape.ndim > 0 ? x->shape.dim[x->shape.ndim - 1] : 0;
        if (k <= 0 || numel <= 0 || n->a.units <= 0)
            return c;
        c.pointwise = true;
        c.esize = ntp__tensor_bytes(x) / numel;
        c.calls = 1;
        c.M = n->a.units;
        c.N = numel / k;
        c.K = k;
        c.x_floats = numel;
        c.w_bytes = c.esize * c.M * c.K;
        return c;
    }
    if (n->op != NTP_OP_CONV || n->n_in < 1 || n->n_out < 1 || n->a.groups <= 0)
        return c;
    const ntp_tensor *x = ntp__cin(g, n, 0), *y = ntp__cout(g, n, 0);
    int nk = x->shape.ndim - 2;
    if (nk < 1 || nk > 3 || y->shape.ndim != x->shape.ndim || n->a.nk != nk ||
        x->shape.dim[1] % n->a.groups || y->shape.dim[1] % n->a.groups)
        return c;
    int64_t in_sz = 1, out_sz = 1, k_sz = 1, numel = ntp_shape_numel(&x->shape);
    c.pointwise = true;
    for (int j = 0; j < nk; j++) {
        in_sz *= x->shape.dim[2 + j];
        out_sz *= y->shape.dim[2 + j];
        k_sz *= n->a.kernel[j];
        c.pointwise &= n->a.kernel[j] == 1 && n->a.stride[j] == 1 && n->a.pad[j] == 0 &&
                       x->shape.dim[2 + j] == y->shape.dim[2 + j];
        /* Each output position's taps along this dimension that land in
         * the input: the dimensions' shares multiply. */
        int64_t h = x->shape.dim[2 + j], o = y->shape.dim[2 + j], k = n->a.kernel[j], in = 0;
        int64_t d = n->a.dilation[j] > 0 ? n->a.dilation[j] : 1;
        for (int64_t p = 0; p < o && o * k <= 1 << 20; p++)
            for (int64_t t = 0; t < k; t++) {
                int64_t at = p * n->a.stride[j] - n->a.pad[j] + t * d;
                in += at >= 0 && at < h;
            }
        if (o > 0 && k > 0 && o * k <= 1 << 20)
            c.valid *= (double)in / (double)(o * k);
    }
    c.esize = numel > 0 ? ntp__tensor_bytes(x) / numel : 0;
    if (in_sz <= 0 || out_sz <= 0 || k_sz <= 0 || c.esize <= 0)
        return c;
    int64_t cg = x->shape.dim[1] / n->a.groups;
    c.calls = x->shape.dim[0] * n->a.groups;
    c.M = y->shape.dim[1] / n->a.groups;
    c.N = out_sz;
    c.K = cg * k_sz;
    c.x_floats = cg * in_sz;
    c.w_bytes = c.esize * y->shape.dim[1] * c.K;
    return c;
}

static int64_t round_up(int64_t v, int64_t m)
{
    return (v + m - 1) / m * m;
}

/* The FLOPs of one of cs's GEMMs as ref's packed loop computes them
 * (ref-gemm.c): tiles of 4 rows by 64 columns, 4 deep, zero-padded at the
 * edges. */
static double packed_flops(const conv_shape *cs)
{
    return 2.0 * (double)round_up(cs->M, 4) * (double)round_up(cs->N, 64) *
           (double)round_up(cs->K, 4);
}

/* The rows XNNPACK's f32 GEMM and IGEMM micro-kernels take at once (their
 * mr) on the machine cal describes: 7 with AVX-512 (7x16), 5 with FMA3 or
 * AVX (5x16; a first-generation Zen's 4x16s4, which the flags do not tell
 * apart), 4 below, as src/init.c of Debian 12's XNNPACK (ae108ef) picks
 * them. 0 for another backend or precision, and where cal does not
 * record the flags (a calibration made before it did). */
static int64_t xnn_rows_per_tile(const ntp_calibration *cal)
{
    if (strcmp(cal->backend, "xnnpack") != 0 || strcmp(cal->precision, "f32") != 0 ||
        !cal->cpu_flags[0])
        return 0;
    if (ntp__has_word(cal->cpu_flags, "avx512f"))
        return 7;
    return ntp__has_word(cal->cpu_flags, "fma") || ntp__has_word(cal->cpu_flags, "avx") ? 5 : 4;
}

/* XNNPACK's fully connected and convolution layers multiply a tile of mr
 * rows (output positions) by all of a group's weights, panel by panel of
 * columns, and its pool splits the tiles among the threads: each tile
 * reads the group's weights again (docs/predict.md#xnnpacks-row-tiles).
 * At 7 rows a tile its kernel does 3.5 FLOPs a byte of weights, so a
 * level that feeds it faster than the peak over 3.5 (127 GB/s at 445
 * GFLOP/s) hides the re-reads behind the arithmetic, as the L3 (200) does
 * and memory (76) does not. The re-reads are priced where they come from
 * memory: as a recurrent layer's weights (below), twice their bytes, times
 * the threads that each read them, must fit in a level for them to stay
 * there, and the share past the last cache (reread_s's far part) joins
 * out's memory term and out->far. A 100-row fc reads its weights 15 times
 * at mr 7: 100 x 3072 by 1536 (18.9 MB, 2 threads: 44% of them in the
 * L3) took 5.7 ms warm and 9.6 after the flush, where the terms of one
 * read priced it 3.8 (2026-12-06, the Zen 5 VM). */
static void xnn_rereads(const ntp_calibration *cal, ntp_predict_family fam, const conv_shape *cs,
                        ntp__pfeat *out)
{
    const int64_t mr = xnn_rows_per_tile(cal);
    if (mr == 0 || !cs || cs->calls <= 0 || cs->N <= 0 ||
        (fam != NTP_PREDICT_FAMILY_FC && fam != NTP_PREDICT_FAMILY_CONV &&
         fam != NTP_PREDICT_FAMILY_CONV1X1))
        return;
    const int64_t tiles = (cs->N + mr - 1) / mr, wg = cs->esize * cs->M * cs->K;
    const double again = (double)cs->calls * (double)tiles * (double)wg - (double)cs->w_bytes;
    if (!(again > 0))
        return;
    const int64_t readers = cal->threads > 1 ? (tiles < cal->threads ? tiles : cal->threads) : 1;
    double far;
    const char *level;
    double s = reread_s(cal, 2 * wg * readers, again, &far, &level);
    /* From a cache the re-reads hide behind the arithmetic only where the
     * level feeds the kernel as fast as it computes: their time past the
     * compute term's is added. The L3 of an Intel Xeon with AMX (2 vCPUs,
     * 2026-12-07) moves 52.7 GB/s for two threads, under the 131 its 460
     * GFLOP/s need at 3.5 FLOP/B: XNNPACK's 3x3 convolutions of 512
     * channels (9.4 MB of weights, re-read from the L3) took 0.55, 1.40
     * and 5.02 ms warm on 4x4, 7x7 and 14x14 inputs, the re-reads' bytes
     * over the L3's triad (0.54, 1.25, 5.0), where their FLOPs at the
     * peak would take 0.19, 0.58 and 2.3. On the Zen 5 VM the L3 (200
     * GB/s) hid them, as nothing is added there. */
    double near = s - far, hidden = out->x[NTP_PREDICT_TERM_COMPUTE];
    out->x[NTP_PREDICT_TERM_MEMORY] += far + (near > hidden ? near - hidden : 0);
    out->far += far;
}

bool ntp__predict_weights_kept(const ntp_calibration *cal, int64_t reuse)
{
    return strcmp(cal->cache, "network") == 0 && cal->kept.bytes > 0 && reuse > 0 &&
           NTP_KEPT_MARGIN * (double)reuse <= (double)cal->kept.bytes;
}

/* The terms of work l of family fam under cal's ceilings. `reuse` is what
 * the network touches between two uses of a layer's weights (every layer's
 * weights and the activations' arena, ntp__predict_reuse): in network conditions
 * a layer's cold start is paid at the level that holds it, its weights
 * come from DRAM (below) but where the calibration measured that a pass
 * of that size keeps them (ntp__predict_weights_kept). A recurrent layer's shape rs and
 * whether its kernel reads W at every step (per_step,
 * ntp__predict_rnn_per_step) pick how its input GEMM is priced. */
static void features_of(ntp_predict_family fam, const ntp_layer_cost *l, const ntp_calibration *cal,
                        int64_t reuse, const rnn_shape *rs, bool per_step, const conv_shape *cs,
                        ntp__pfeat *out)
{
    memset(out, 0, sizeof *out);
    out->family = fam;
    out->flops = l->flops;
    out->bytes = l->traffic_bytes;
    /* A pooling layer's correction is read at its traffic: its kernels'
     * rates follow the size of the image in ways the levels' triads do
     * not (docs/predict.md#a-pooling-kernels-correction-by-size). */
    if (fam == NTP_PREDICT_FAMILY_POOL)
        out->size_bytes = l->traffic_bytes;
    /* A streaming kernel's time at its own rate, the same in every level
     * (docs/predict.md#the-stream-term); a streaming family's layer never
     * has parts, whose bytes below replace the traffic. */
    if (streams(fam) && l->n_parts == 0)
        out->x[NTP_PREDICT_TERM_STREAM] = stream_s(cal, out->bytes);
    /* The bandwidth of the level holding what the network touches between
     * two of a layer's passes, its cold start's, and DRAM's, its weights'. */
    const bool network = strcmp(cal->cache, "network") == 0;
    double reuse_gbps, far;
    level_for(cal, reuse, &reuse_gbps);
    level_for(cal, INT64_MAX, &far);
    if (network)
        out->cold_share = reuse_gbps > 0 && far > 0 ? fmax(0, 1 - far / reuse_gbps) : 0;
    /* Where a layer's weights come from in network conditions: DRAM, or
     * the level the pass fits in where the machine keeps a pass of its
     * size (docs/predict.md#weights-between-passes). */
    const double wgb = ntp__predict_weights_kept(cal, reuse) ? reuse_gbps : far;
    /* oneDNN's convolutions (brgconv, jit) leave out the taps that fall in
     * the padding: their compute term leaves out those multiply-adds
     * (conv_shape.valid; docs/predict.md#padding-onednn-leaves-out), the
     * bias's and fused post-ops' FLOPs stay. A 3x3 convolution on 7x7
     * does 82% of its multiply-adds. */
    double work = (double)l->flops;
    if (fam == NTP_PREDICT_FAMILY_CONV && cs && cs->calls > 0 &&
        strcmp(cal->backend, "onednn") == 0)
        work -= (1 - cs->valid) * 2.0 * (double)cs->calls * (double)cs->M * (double)cs->N *
                (double)cs->K;
    /* ref runs a depthwise convolution as one GEMM a group (ref-conv.c):
     * one filter's row by the group's column matrix, in the packed loop's
     * tiles of 4 rows by 64 columns 4 deep, zero-padded. Its work is the
     * padded product's, 4 rows for the one and 12 deep for a 3x3 kernel's
     * 9 taps, a 14x14 output's 196 columns padded to 256: the multiply-adds
     * alone priced the 14x14 and 7x7 samples 14% to 33% under their time
     * and the 112x112 ones up to 25% over (2026-12-04, the Zen 4 VM;
     * docs/predict.md). Its memory term stays its traffic's. */
    if (fam == NTP_PREDICT_FAMILY_DEPTHWISE && l->n_parts == 0 && cs && cs->calls > 0 &&
        strcmp(cal->backend, "ref") == 0)
        work = (double)cs->calls * packed_flops(cs);
    /* The reference backend (ref-conv.c) runs a convolution as calls
     * GEMMs, ntp__ref_gemm(false, false, M, N, K): B (the column matrix)
     * is not transposed, so every call takes the packed loop, which
     * multiplies 4-row by 64-column tiles 4 deep, zero-padded: its work is
     * the padded product's. Its terms are an fc's of M rows, N units and
     * depth K (xin, priced with the fc family's coefficients and ref:fc's
     * correction): the weights from DRAM (network conditions; warm, the
     * level its traffic fits in), the
     * column matrix and the output at the level one call's working set
     * fits in. Its im2col (but a pointwise convolution's) writes each
     * column matrix from the input and reads it back: twice its bytes,
     * priced as a copy (xcp). Only the conv family's layers (kernels over
     * 1, dense or grouped): ref runs a pointwise and a depthwise
     * convolution the same way, but their samples do not follow the fc
     * family's price (docs/predict.md), and keep their own terms. */
    if (fam == NTP_PREDICT_FAMILY_CONV && cs && cs->calls > 0 && strcmp(cal->backend, "ref") == 0 &&
        cal->peak_gflops > 0) {
        double peak = cal->peak_gflops * 1e9, gw, ga, gc;
        int64_t col = cs->esize * cs->K * cs->N, yb = cs->esize * cs->M * cs->N;
        int64_t xb = cs->pointwise ? 0 : cs->esize * cs->x_floats;
        if (network)
            gw = wgb;
        else
            level_for(cal, l->traffic_bytes, &gw);
        level_for(cal, col + yb + xb + cs->esize * cs->M * cs->K, &ga);
        level_for(cal, col + xb, &gc);
        out->xin[NTP_PREDICT_TERM_OVERHEAD] = 1;
        out->xin[NTP_PREDICT_TERM_COMPUTE] = (double)cs->calls * packed_flops(cs) / peak;
        out->xin[NTP_PREDICT_TERM_MEMORY] =
            (gw > 0 ? (double)cs->w_bytes / (gw * 1e9) : 0) +
            (ga > 0 ? (double)cs->calls * (double)(col + yb) / (ga * 1e9) : 0);
        if (!cs->pointwise) {
            out->xcp[NTP_PREDICT_TERM_MEMORY] =
                gc > 0 ? (double)cs->calls * 2.0 * (double)col / (gc * 1e9) : 0;
            out->xcp[NTP_PREDICT_TERM_STREAM] = stream_s(cal, cs->calls * 2 * col);
        }
    }
    /* A recurrent layer's traffic re-reads its recurrent weights at every
     * step: its parts' bytes, not its minimal traffic. */
    if (l->n_parts > 0) {
        int64_t b = 0;
        for (int k = 0; k < l->n_parts; k++)
            b += l->parts[k].bytes;
        out->bytes = b;
    }
    /* The level is the one the layer's working set fits in: its minimal
     * traffic (weights, inputs and outputs once). A recurrent layer's
     * re-reads hit the level its weights stay in, not the level their
     * sum over every step would need. */
    double gbps;
    out->level = level_for(cal, l->traffic_bytes, &gbps);
    double peak = cal->peak_gflops * 1e9, bw = gbps * 1e9;
    out->x[NTP_PREDICT_TERM_OVERHEAD] = 1.0;
    /* A backend's recurrent kernel (oneDNN's brgemm and ref cells) steps
     * through the sequence, one direction after the other, and pays a
     * fixed cost at every step (its GEMM calls, its cell, its threads'
     * barrier) that its roofline terms cannot follow: the overhead term
     * counts the steps (docs/predict.md#a-recurrent-kernels-steps-and-size). oneDNN's LSTM
     * of 16 units took 14 us a step, of 512 units 73 us (2026-12-06, the
     * Zen 5 VM); priced as a layer's fixed cost, its 256-unit samples were
     * predicted 25% under their time and its 512-unit ones 18% over. The
     * reference backend's steps are its recurrent product's calls (xrec),
     * priced by the fc family. */
    if (rs && rs->T > 0 && strcmp(cal->backend, "ref") != 0)
        out->x[NTP_PREDICT_TERM_OVERHEAD] = (double)(rs->T * rs->dirs);
    /* The size its kernel's correction is read at: one direction's W
     * (G·H by its input's features) and R (G·H by H). */
    if (rs && rs->T > 0 && rs->N > 0 && rs->esize > 0)
        out->size_bytes =
            rs->esize * rs->G * rs->H * (rs->x_bytes / (rs->esize * rs->T * rs->N) + rs->H);
    /* Calibrated in network conditions (ntp_calibration.cache): a layer's
     * weights come from DRAM, as in the calibration, whose runs write over
     * the caches, and in a network's pass, which evicts them even where
     * its weights and arena would fit in the last-level cache (a 4 MB fc
     * probe inside SqueezeNet 1.1 or ShuffleNetV2 read at DRAM's speed:
     * docs/predict.md#weights-between-passes), but where the calibration
     * measured that a pass of the network's size keeps them (wgb), while its input
     * and output sit in the level they fit in, where the layer before
     * left them. */
    if (l->n_parts == 0 && network && l->weight_bytes > 0 && l->weight_bytes <= l->traffic_bytes) {
        double act;
        out->level = level_for(cal, l->traffic_bytes - l->weight_bytes, &act);
        out->x[NTP_PREDICT_TERM_COMPUTE] = peak > 0 ? work / peak : 0;
        out->x[NTP_PREDICT_TERM_MEMORY] =
            (wgb > 0 ? (double)l->weight_bytes / (wgb * 1e9) : 0) +
            (act > 0 ? (double)(l->traffic_bytes - l->weight_bytes) / (act * 1e9) : 0);
        xnn_rereads(cal, fam, cs, out);
        return;
    }
    /* A reduction's kernel pays for every output it writes more than for
     * its additions: oneDNN's over H and W of a plain tensor took about
     * 0.13 us an output channel whether it summed 49 or 196 values
     * (2026-12-03, the AVX2 EPYC), which its FLOPs over the peak cannot
     * follow. Its compute term counts one operation per output element at
     * the peak (the fit scales it); its memory term is the traffic's. */
    if (fam == NTP_PREDICT_FAMILY_REDUCE && l->n_parts == 0) {
        double outs = 1;
        for (int k = 0; k < l->output_shape.ndim; k++)
            outs *= (double)l->output_shape.dim[k];
        out->x[NTP_PREDICT_TERM_COMPUTE] = peak > 0 ? outs / peak : 0;
        out->x[NTP_PREDICT_TERM_MEMORY] = bw > 0 ? (double)out->bytes / bw : 0;
        return;
    }
    if (l->n_parts == 0) {
        out->x[NTP_PREDICT_TERM_COMPUTE] = peak > 0 ? work / peak : 0;
        out->x[NTP_PREDICT_TERM_MEMORY] = bw > 0 ? (double)out->bytes / bw : 0;
        xnn_rereads(cal, fam, cs, out);
        return;
    }
    /* A recurrent layer is two computations (docs/predict.md, recurrent
     * layers). Its input GEMM multiplies every step's input by the input
     * weights at once: the GEMM an fc layer of T x N rows runs, its terms
     * (xin) priced with the fc family's coefficients. Its recurrent part
     * runs one step after the other, re-reading one direction's recurrent
     * weights at every step from the level they stay in (the directions
     * run one after the other): the rnn family's terms, the part under the
     * roof that bounds it (the GEMV at batch 1 memory-bound, so its FLOPs
     * are not priced at the GEMM peak). */
    const ntp_cost_part *in = &l->parts[0], *rec = &l->parts[l->n_parts - 1];
    /* A kernel that multiplies each step's input by W with the recurrent
     * product (per_step) reads W and R at every step: one computation of
     * the rnn family's, its traffic W and R at every step, the input and
     * the output once, at the level one direction's W and R fit in (the
     * whole of it, not half as R alone below: oneDNN's LSTM samples of
     * 26 to 42 MB a direction ran at 93 to 113 GB/s, past the DRAM
     * triad's 68 and within reach of the L3's 33.5 MB; docs/predict.md,
     * a direction's weights in the whole cache). */
    if (per_step && l->n_parts > 1 && rs && rs->T > 0 && rs->dirs > 0) {
        int64_t w = in->bytes > rs->x_bytes ? in->bytes - rs->x_bytes : 0;
        int64_t res = w / rs->dirs + rec->resident_bytes;
        out->bytes = in->bytes + rec->bytes + (rs->T - 1) * w;
        /* In network conditions each direction's first step reads its W
         * and R from memory (the pass before evicted them), the later
         * steps at the level they stay in. Priced as if every step read
         * from that level, the calibration's samples of 3 and 4 steps ran
         * 1.27x and 1.75x their prediction; with it, 1.18x and 1.30x
         * (2026-12-04, the Zen 4 VM, docs/predict.md#recurrent-layers). */
        double first = network && wgb > 0 ? (double)(rs->dirs * res) / (wgb * 1e9) : 0;
        double again = (double)out->bytes - (first > 0 ? (double)(rs->dirs * res) : 0);
        double again_far;
        out->x[NTP_PREDICT_TERM_MEMORY] =
            first + reread_s(cal, res, again, &again_far, &out->level);
        out->far = (wgb == far ? first : 0) + again_far;
        out->x[NTP_PREDICT_TERM_COMPUTE] = peak > 0 ? (double)(in->flops + rec->flops) / peak : 0;
        return;
    }
    double gin;
    level_for(cal, in->bytes, &gin);
    if (l->n_parts > 1) {
        out->xin[NTP_PREDICT_TERM_OVERHEAD] = 1;
        out->xin[NTP_PREDICT_TERM_COMPUTE] = peak > 0 ? (double)in->flops / peak : 0;
        out->xin[NTP_PREDICT_TERM_MEMORY] = gin > 0 ? (double)in->bytes / (gin * 1e9) : 0;
    }
    /* The recurrent weights stay in a level while its other contents
     * (the input, the output, the other weights) pass through it: they
     * must fit in the working set its triad ran at, half its capacity.
     * The calibration shows it: one direction's 16.8 MB on this Zen 4 VM
     * (within the L3's 33.6 MB) ran at the DRAM triad's speed. */
    int64_t res = rec->resident_bytes > 0 ? rec->resident_bytes : l->traffic_bytes;
    out->x[NTP_PREDICT_TERM_COMPUTE] = peak > 0 ? (double)rec->flops / peak : 0;
    out->x[NTP_PREDICT_TERM_MEMORY] =
        reread_s(cal, 2 * res, (double)rec->bytes, &out->far, &out->level);
    /* The reference backend (ref-rnn.c) runs the recurrent product, at
     * each step but the first (the state starts at zero) and for each
     * direction, as one call of ntp__ref_gemm over N rows by one
     * direction's R: an fc of N rows (its dot-product loop at batch 1),
     * priced with the fc family's coefficients and that loop's correction
     * (ntp__predict_rnn_input_gemm_s), R read at every call from the level it
     * stays in. The rnn family keeps the cell (the rest of the FLOPs) and
     * the output, and its fixed cost. */
    int64_t calls = rs ? rs->dirs * (rs->T - 1) : 0;
    if (l->n_parts > 1 && strcmp(cal->backend, "ref") == 0 && calls > 0 && rs->N > 0 && rs->H > 0 &&
        rs->esize > 0) {
        int64_t gh = rs->G * rs->H;
        int64_t pf = 2 * rs->N * gh * rs->H, pb = res + rs->esize * rs->N * (rs->H + gh);
        int64_t cell_flops = rec->flops - calls * pf;
        int64_t cell_bytes = rec->bytes - rs->T * rs->dirs * res;
        out->rec_rows = rs->N;
        out->rec_weight = res;
        out->xrec[NTP_PREDICT_TERM_OVERHEAD] = (double)calls;
        out->xrec[NTP_PREDICT_TERM_COMPUTE] = peak > 0 ? (double)(calls * pf) / peak : 0;
        double g1;
        level_for(cal, res, &g1);
        out->xrec[NTP_PREDICT_TERM_MEMORY] = g1 > 0 ? (double)(calls * pb) / (g1 * 1e9) : 0;
        out->x[NTP_PREDICT_TERM_COMPUTE] =
            peak > 0 && cell_flops > 0 ? (double)cell_flops / peak : 0;
        /* The cell's traffic (the gates the products wrote, the state,
         * the output) from the level one step's gates and state fit in,
         * not R's. */
        double gc;
        level_for(cal, rs->esize * rs->N * (gh + 2 * rs->H), &gc);
        out->x[NTP_PREDICT_TERM_MEMORY] =
            gc > 0 && cell_bytes > 0 ? (double)cell_bytes / (gc * 1e9) : 0;
        out->far = 0;
    }
}

static bool family_coef(const ntp_calibration *cal, ntp_predict_family f, double *coef);

/* Terms x under the fc family's coefficients (seconds; cal's fc family
 * fitted), times the correction stored under key where key is not NULL:
 * the price of a GEMM that a recurrent layer or a lowered convolution
 * runs as an fc would. */
static double fc_price_s(const ntp_calibration *cal, const double *x, const char *key)
{
    double s = 0;
    for (int a = 0; a < NTP_PREDICT_TERMS; a++)
        s += cal->family[NTP_PREDICT_FAMILY_FC].coef[a] * x[a];
    return key ? s * ntp__predict_key_scale(cal, NTP_PREDICT_FAMILY_FC, key) : s;
}

/* The input GEMM of a recurrent layer f under cal: the fc family's time
 * for its terms (seconds); where cal has no fc fit, 0, and its compute and
 * memory terms join the rnn family's (the model before the split). */
double ntp__predict_rnn_input_gemm_s(const ntp_calibration *cal, ntp__pfeat *f)
{
    if (f->family != NTP_PREDICT_FAMILY_RNN || !(f->xin[NTP_PREDICT_TERM_OVERHEAD] > 0))
        return 0;
    if (cal->family[NTP_PREDICT_FAMILY_FC].calibrated) {
        /* The reference backend runs it as an fc of T x N rows: its packed
         * loop, with that loop's correction (ntp__predict_kernel_op); its
         * recurrent product (xrec) as fcs of N rows, with theirs. */
        const char *in = NULL, *rec = NULL;
        char key[48];
        if (strcmp(cal->backend, "ref") == 0) {
            const char *op = ntp__predict_kernel_op("fc", f->rec_rows);
            /* Its dot-product loop at the rate the calibration measured at
             * R's size, once per row (the loop takes each row's dot
             * products in turn): the loop, not R's level, bounds it. */
            double g = strcmp(op, "gemv") == 0 ? ntp__predict_gemv_gbps(cal, f->rec_weight) : 0;
            if (g > 0)
                return fc_price_s(cal, f->xin, "ref:fc") +
                       f->xrec[NTP_PREDICT_TERM_OVERHEAD] * (double)(f->rec_rows * f->rec_weight) /
                           (g * 1e9);
            snprintf(key, sizeof key, "ref:%s", op);
            in = "ref:fc";
            rec = key;
        }
        return fc_price_s(cal, f->xin, in) + fc_price_s(cal, f->xrec, rec);
    }
    for (int a = NTP_PREDICT_TERM_COMPUTE; a < NTP_PREDICT_TERMS; a++)
        f->x[a] += f->xin[a] + f->xrec[a];
    memset(f->xin, 0, sizeof f->xin);
    memset(f->xrec, 0, sizeof f->xrec);
    return 0;
}

double ntp__predict_gemv_gbps(const ntp_calibration *cal, int64_t bytes)
{
    int n = cal->n_gemv < NTP_PREDICT_MAX_GEMV ? cal->n_gemv : NTP_PREDICT_MAX_GEMV;
    if (n <= 0 || bytes <= 0)
        return 0;
    if (bytes <= cal->gemv[0].bytes)
        return cal->gemv[0].gbps;
    for (int k = 1; k < n; k++)
        if (bytes <= cal->gemv[k].bytes) {
            double a = log((double)cal->gemv[k - 1].bytes), b = log((double)cal->gemv[k].bytes);
            double w = (log((double)bytes) - a) / (b - a);
            return cal->gemv[k - 1].gbps + w * (cal->gemv[k].gbps - cal->gemv[k - 1].gbps);
        }
    return cal->gemv[n - 1].gbps;
}

/* A convolution ref lowers (xin set): x becomes its GEMMs' and its
 * im2col's seconds, which the conv family's coefficients weigh. */
void ntp__predict_lowered_conv_terms(const ntp_calibration *cal, ntp__pfeat *f)
{
    if (f->family == NTP_PREDICT_FAMILY_RNN || !(f->xin[NTP_PREDICT_TERM_OVERHEAD] > 0))
        return;
    if (cal->family[NTP_PREDICT_FAMILY_FC].calibrated) {
        double c[NTP_PREDICT_TERMS], cp = 0;
        if (family_coef(cal, NTP_PREDICT_FAMILY_COPY, c))
            for (int a = 0; a < NTP_PREDICT_TERMS; a++)
                cp += c[a] * f->xcp[a];
        else
            cp = f->xcp[NTP_PREDICT_TERM_MEMORY];
        f->x[NTP_PREDICT_TERM_OVERHEAD] = 1;
        f->x[NTP_PREDICT_TERM_COMPUTE] = fc_price_s(cal, f->xin, "ref:fc");
        f->x[NTP_PREDICT_TERM_MEMORY] = cp;
    }
    memset(f->xin, 0, sizeof f->xin);
    memset(f->xcp, 0, sizeof f->xcp);
}

void ntp__predict_features(const ntp_graph *g, const ntp_analysis *a, int i,
                           const ntp_calibration *cal, const char *impl, ntp__pfeat *out)
{
    /* A calibration's configuration: its caches written over first. */
    rnn_shape rs = rnn_shape_of(g, i);
    conv_shape cs = conv_shape_of(g, i);
    features_of(ntp__predict_family(g, i), &a->layers[i], cal, INT64_MAX, &rs,
                ntp__predict_rnn_per_step(impl), &cs, out);
}

/* The work of the group headed at position h (--fuse) as its fused kernel
 * does it: the head's FLOPs and traffic, plus each post-op's FLOPs, its
 * weights and its other operand (a residual add's), and the chain's last
 * result written once: the intermediate results never reach memory. A
 * batch norm folded into the head's weights does no work at run time; it
 * gives a head without a bias one (one of its four [C] vectors). The work
 * of a layer alone is its analysis's. */
static void group_cost(const ntp_graph *g, const ntp_analysis *a, const int *head_of,
                       const int *fold, int h, ntp_layer_cost *out)
{
    *out = a->layers[h];
    const ntp_node *head = &g->nodes[g->order[h]];
    int prev = h, n = 0;
    for (int q = h + 1; head_of && q < a->n_layers; q++) {
        if (head_of[q] != h)
            continue;
        const ntp_node *c = &g->nodes[g->order[q]];
        const ntp_layer_cost *lc = &a->layers[q];
        if (fold[q] < 0) {
            if (head->n_w < 2)
                out->weight_bytes += lc->weight_bytes / 4;
        } else {
            int chain = g->nodes[g->order[prev]].out[0];
            out->flops += lc->flops;
            out->weight_bytes += lc->weight_bytes;
            for (int k = 0; k < c->n_in; k++)
                if (c->in[k] != chain)
                    out->input_bytes += ntp__tensor_bytes(ntp__cin(g, c, k));
        }
        out->output_bytes = lc->output_bytes;
        prev = q;
        n++;
    }
    if (n == 0)
        return;
    out->traffic_bytes = out->weight_bytes + out->input_bytes + out->output_bytes;
    out->intensity = out->traffic_bytes > 0 ? (double)out->flops / (double)out->traffic_bytes : 0;
    /* A recurrent layer's parts describe it alone (no backend fuses into
     * one); a group is priced by its totals. */
    out->n_parts = 0;
}

void ntp__calibration_ceilings(const ntp_ceilings *c, ntp_dtype p, ntp_calibration *cal)
{
    const ntp_peak *pk = ntp_ceilings_peak(c, p);
    cal->peak_gflops = pk ? pk->gflops : 0;
    cal->n_levels = 0;
    for (int i = 0; i < c->n_levels && cal->n_levels < NTP_PREDICT_MAX_LEVELS; i++) {
        if (!(c->levels[i].gbps > 0))
            continue;
        int k = cal->n_levels++;
        snprintf(cal->levels[k].name, sizeof cal->levels[k].name, "%s", c->levels[i].level);
        /* The triad ran at half of each cache level's share: the level
         * holds about twice its working set. DRAM holds anything. */
        cal->levels[k].capacity_bytes =
            strcmp(c->levels[i].level, "DRAM") == 0 ? 0 : 2 * c->levels[i].working_set_bytes;
        cal->levels[k].gbps = c->levels[i].gbps;
    }
    snprintf(cal->machine_key, sizeof cal->machine_key, "%s", c->machine_key);
    cal->threads = c->threads;
}

void ntp_calibration_roofline(const ntp_ceilings *c, ntp_dtype precision, ntp_calibration *out)
{
    memset(out, 0, sizeof *out);
    ntp__calibration_ceilings(c, precision, out);
    snprintf(out->backend, sizeof out->backend, "roofline");
    snprintf(out->precision, sizeof out->precision, "%s", ntp_dtype_name(precision));
    snprintf(out->ntprof_version, sizeof out->ntprof_version, "%s", ntp_version());
    for (int f = 0; f < NTP_PREDICT_FAMILY_COUNT; f++) {
        out->family[f].calibrated = true;
        out->family[f].coef[NTP_PREDICT_TERM_COMPUTE] = 1;
        out->family[f].coef[NTP_PREDICT_TERM_MEMORY] = 1;
    }
}

/* --- what-if ceilings -------------------------------------------------------------------- */

static bool read_number(json_t *v, double *out)
{
    if (!json_is_number(v) || !(json_number_value(v) > 0))
        return false;
    *out = json_number_value(v);
    return true;
}

ntp_status ntp_ceilings_read_whatif(ntp_ctx *ctx, const char *path, ntp_ceilings *out)
{
    memset(out, 0, sizeof *out);
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (!j)
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR, "%s:%d: %s", path, e.line, e.text);
    ntp_status st = NTP_STATUS_OK;
    json_t *peaks = json_object_get(j, "peak_gflops");
    json_t *bw = json_object_get(j, "bandwidth_gbps");
    json_t *cap = json_object_get(j, "capacity_bytes");
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v)
    {
        if (strcmp(key, "peak_gflops") && strcmp(key, "bandwidth_gbps") &&
            strcmp(key, "capacity_bytes") && strcmp(key, "name")) {
            st = ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                            "%s: unknown key '%s' (expected peak_gflops, bandwidth_gbps, "
                            "capacity_bytes, name)",
                            path, key);
            goto out;
        }
    }
    if (!json_is_object(peaks) || !json_is_object(bw) || !json_object_get(bw, "DRAM")) {
        st = ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                        "%s: expected {\"peak_gflops\": {\"f32\": N, ...}, \"bandwidth_gbps\": "
                        "{..., \"DRAM\": N}}",
                        path);
        goto out;
    }
    json_object_foreach(peaks, key, v)
    {
        ntp_dtype d;
        if (ntp_dtype_parse(key, &d) != NTP_STATUS_OK || !ntp_dtype_is_precision(d) ||
            out->n_peaks >= NTP_MACHINE_MAX_PEAKS ||
            !read_number(v, &out->peaks[out->n_peaks].gflops)) {
            st = ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                            "%s: peak_gflops.%s: expected a precision (f32, bf16, f16, i8) and a "
                            "positive number",
                            path, key);
            goto out;
        }
        snprintf(out->peaks[out->n_peaks].precision, sizeof out->peaks[0].precision, "%s", key);
        snprintf(out->peaks[out->n_peaks].method, sizeof out->peaks[0].method, "what-if");
        out->n_peaks++;
    }
    /* Levels innermost first: L1, L2, L3, then DRAM. */
    static const char *const order[] = {"L1", "L2", "L3", "DRAM"};
    json_object_foreach(bw, key, v)
    {
        bool known = false;
        for (size_t k = 0; k < 4; k++)
            known |= strcmp(key, order[k]) == 0;
        double g;
        if (!known || !read_number(v, &g)) {
            st = ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                            "%s: bandwidth_gbps.%s: expected L1, L2, L3 or DRAM and a positive "
                            "number",
                            path, key);
            goto out;
        }
    }
    for (size_t k = 0; k < 4; k++) {
        json_t *g = json_object_get(bw, order[k]);
        if (!g)
            continue;
        double c = 0;
        json_t *cv = json_is_object(cap) ? json_object_get(cap, order[k]) : NULL;
        if (strcmp(order[k], "DRAM") != 0 && !(cv && read_number(cv, &c))) {
            st = ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                            "%s: capacity_bytes.%s: expected the level's size in bytes", path,
                            order[k]);
            goto out;
        }
        ntp_bandwidth *b = &out->levels[out->n_levels++];
        snprintf(b->level, sizeof b->level, "%s", order[k]);
        b->gbps = json_number_value(g);
        b->working_set_bytes = (int64_t)(c / 2);
    }
    json_t *name = json_object_get(j, "name");
    snprintf(out->machine_key, sizeof out->machine_key, "what-if: %s",
             json_is_string(name) ? json_string_value(name) : path);
out:
    json_decref(j);
    return st;
}

/* --- prediction -------------------------------------------------------------------------- */

void ntp_prediction_free(ntp_prediction *p)
{
    if (!p)
        return;
    free(p->layers);
    free(p->cals);
    free(p->cal_ms);
    for (int i = 0; i < p->n_copies; i++)
        free((char *)p->copies[i].name);
    free(p->copies);
    free(p);
}

/* A family's coefficients under cal: the fitted ones; for data movement
 * without a fit, a copy at the measured bandwidth (no overhead, memory
 * 1); false when the family has neither. */
static bool family_coef(const ntp_calibration *cal, ntp_predict_family f, double *coef)
{
    if ((int)f < 0 || f >= NTP_PREDICT_FAMILY_COUNT)
        return false;
    if (cal->family[f].calibrated) {
        memcpy(coef, cal->family[f].coef, NTP_PREDICT_TERMS * sizeof *coef);
        return true;
    }
    if (f != NTP_PREDICT_FAMILY_COPY || cal->n_levels == 0)
        return false;
    memset(coef, 0, NTP_PREDICT_TERMS * sizeof *coef);
    coef[NTP_PREDICT_TERM_MEMORY] = 1;
    return true;
}

/* A copy row's coefficients under cal: a layout change (kind "reorder")
 * takes the reorder model fitted on the calibration's own reorder rows
 * where there is one; otherwise, and for the engine's conversions, the
 * copy family's (or the bandwidth alone). */
static bool copy_coef(const ntp_calibration *cal, const char *kind, double *coef)
{
    if (kind && strcmp(kind, "reorder") == 0 && cal->reorder.calibrated) {
        memcpy(coef, cal->reorder.coef, NTP_PREDICT_TERMS * sizeof *coef);
        return true;
    }
    return family_coef(cal, NTP_PREDICT_FAMILY_COPY, coef);
}

/* The seconds a copy row of `bytes` (its source's and its destination's)
 * moves them in under cal, before its coefficient; 0 without a bandwidth.
 * oneDNN's layout change (kind "reorder", a vectorised jit kernel that
 * moves at its bytes' bandwidths) in network conditions reads its source
 * where the layer before left it (the level the bytes fit in) and writes
 * a buffer of its own, which the pass touched last one `reuse` bytes ago
 * (ntp__predict_reuse): in the calibration, whose runs write over the caches,
 * INT64_MAX (memory); in a network, the level its weights and arena fit
 * in. Its reorders of 180 to 360 KB into ShuffleNetV2's 1x1 convolutions
 * took 5 to 9 us, half what the calibration's of the same shape took
 * (2026-12-04, the Zen 4 VM; docs/predict.md#reorders-and-conversions).
 * XNNPACK's layout changes (ntp__xnn_transpose, a scalar tiled
 * transpose with strided stores) did not follow: they keep their bytes'
 * level. */
static double copy_memory_s(const ntp_calibration *cal, int64_t bytes, const char *kind,
                            int64_t reuse, const char **level)
{
    double g, gd;
    *level = level_for(cal, bytes, &g);
    if (!(g > 0) || bytes <= 0)
        return 0;
    if (!kind || strcmp(kind, "reorder") != 0 || strcmp(cal->cache, "network") != 0 ||
        strcmp(cal->backend, "onednn") != 0 || reuse <= 0)
        return (double)bytes / (g * 1e9);
    level_for(cal, reuse, &gd);
    int64_t src = bytes / 2;
    return (double)src / (g * 1e9) + (gd > 0 ? (double)(bytes - src) / (gd * 1e9) : 0);
}

double ntp__predict_copy_ms(const ntp_calibration *cal, int64_t bytes, const char *kind,
                            int64_t reuse)
{
    ntp_layer_prediction l = {.bytes = bytes, .kind = kind};
    ntp__predict_copy_row(cal, reuse, &l);
    return l.predicted_ms;
}

void ntp__predict_copy_terms(const ntp_calibration *cal, int64_t bytes, double *x)
{
    const char *level;
    x[NTP_PREDICT_TERM_OVERHEAD] = 1;
    x[NTP_PREDICT_TERM_COMPUTE] = 0;
    x[NTP_PREDICT_TERM_MEMORY] = copy_memory_s(cal, bytes, "reorder", INT64_MAX, &level);
    x[NTP_PREDICT_TERM_STREAM] = stream_s(cal, bytes);
}

void ntp__predict_copy_row(const ntp_calibration *cal, int64_t reuse, ntp_layer_prediction *l)
{
    double coef[NTP_PREDICT_TERMS];
    l->family = NTP_PREDICT_FAMILY_COPY;
    double m = copy_memory_s(cal, l->bytes, l->kind, reuse, &l->level);
    l->compute_ms = 0;
    l->correction = 1;
    l->overhead_ms = l->memory_ms = l->predicted_ms = NAN;
    if (!(m > 0) || !copy_coef(cal, l->kind, coef)) {
        snprintf(l->note, sizeof l->note, "n/a: a %s of unknown size", l->kind);
        return;
    }
    l->overhead_ms = 1e3 * coef[NTP_PREDICT_TERM_OVERHEAD];
    l->memory_ms = 1e3 * (coef[NTP_PREDICT_TERM_MEMORY] * m +
                          coef[NTP_PREDICT_TERM_STREAM] * stream_s(cal, l->bytes));
    l->predicted_ms = l->overhead_ms + l->memory_ms;
}

const char *ntp__predict_layout_of(const char *impl, size_t *name_len)
{
    static const char *const layouts[] = {"plain", "blocked", "nspc", "strided"};
    size_t n = impl ? strlen(impl) : 0;
    *name_len = n;
    const char *slash = impl ? strrchr(impl, '/') : NULL;
    for (size_t i = 0; slash && i < sizeof layouts / sizeof *layouts; i++)
        if (strcmp(slash + 1, layouts[i]) == 0) {
            *name_len = (size_t)(slash - impl);
            return layouts[i];
        }
    return NULL;
}

void ntp__predict_impl_key(ntp_predict_family f, const char *impl, const char *op,
                           const char *layout, char *buf, size_t len)
{
    /* A sample's kernel carries its layout ("jit:avx512_core/blocked"). */
    size_t n;
    const char *in = ntp__predict_layout_of(impl, &n);
    if (!layout)
        layout = in;
    char tail[16] = "";
    if (layout && layout[0]) {
        snprintf(tail, sizeof tail, "/%.12s", layout);
        /* The name as a sample keeps it (predict-calibrate.c's
         * time_config): the key fits a correction's 48 bytes. */
        if (n > 38)
            n = 38;
    }
    /* The reference backend names every kernel "ref", but runs a loop of
     * its own per op (a max pooling's window against a global average's
     * sum, a batch norm's against a softmax's): its kernel is the op. */
    if (impl && n == 3 && strncmp(impl, "ref", 3) == 0 && op && op[0])
        snprintf(buf, len, "ref:%.40s%s", op, tail);
    /* oneDNN runs a concat, a split, a reshape and a transpose as
     * reorders under one kernel name ("simple:any"), at a fixed cost of
     * its own per op: its 8x8 samples took 10.6 us as a reshape and 16.8
     * as a split (2026-12-06, the Zen 5 VM), and one correction for the
     * name priced ShuffleNetV2's 29 reshapes 0.755 ms against 0.487
     * measured. A copy's kernel is keyed by its op too ("NAME:OP"). */
    else if (f == NTP_PREDICT_FAMILY_COPY && impl && op && op[0])
        snprintf(buf, len, "%.*s:%.12s%s", (int)(n < 21 ? n : 21), impl, op, tail);
    else
        snprintf(buf, len, "%.*s%s", (int)(n < 200 ? n : 200), impl ? impl : "", tail);
}

const char *ntp__predict_kernel_op(const char *op, int64_t rows)
{
    /* ntp__ref_gemm's GEMM_MR: below it, a product by a transposed B (an
     * fc's weights) is dot products of contiguous rows, no packing. */
    if (op && strcmp(op, "fc") == 0 && rows > 0 && rows < 4)
        return "gemv";
    return op;
}

const char *ntp__predict_layer_kernel_op(const ntp_graph *g, int i)
{
    const char *op = ntp_graph_layer_type(g, i);
    if (!op || strcmp(op, "fc") != 0 || i < 0 || i >= g->n_nodes)
        return op;
    const ntp_node *n = &g->nodes[g->order[i]];
    const ntp_tensor *x = n->n_in > 0 ? ntp__cin(g, n, 0) : NULL;
    if (!x || x->shape.ndim < 1 || x->shape.dim[x->shape.ndim - 1] <= 0)
        return op;
    return ntp__predict_kernel_op(op, ntp_shape_numel(&x->shape) / x->shape.dim[x->shape.ndim - 1]);
}

/* cal's correction for key under family f; NULL where it has none. */
static const ntp_impl_correction *key_find(const ntp_calibration *cal, ntp_predict_family f,
                                           const char *key)
{
    for (int k = 0; key && k < cal->n_impls && k < NTP_PREDICT_MAX_IMPLS; k++)
        if (cal->impls[k].family == f && strcmp(cal->impls[k].impl, key) == 0 &&
            cal->impls[k].scale > 0 && isfinite(cal->impls[k].scale))
            return &cal->impls[k];
    return NULL;
}

/* cal's correction for kernel impl of op under family f, with its
 * layout or, where cal has none with it, without; NULL where it has
 * neither. */
static const ntp_impl_correction *impl_find(const ntp_calibration *cal, ntp_predict_family f,
                                            const char *impl, const char *op, const char *layout)
{
    char key[80];
    ntp__predict_impl_key(f, impl, op, layout, key, sizeof key);
    const ntp_impl_correction *c = key_find(cal, f, key);
    if (c)
        return c;
    /* A calibration made before kernels were keyed by their source's
     * layout (or a sample whose backend did not say) keeps the name
     * alone: the layer takes that. */
    size_t n;
    const char *in = ntp__predict_layout_of(impl, &n);
    if ((layout && layout[0]) || in) {
        char bare[80];
        snprintf(bare, sizeof bare, "%.*s", (int)(n < 70 ? n : 70), impl);
        ntp__predict_impl_key(f, bare, op, "", key, sizeof key);
        return key_find(cal, f, key);
    }
    return NULL;
}

double ntp__predict_size_factor(const ntp_impl_correction *c, int64_t bytes)
{
    if (!c || c->n_points <= 0 || bytes <= 0)
        return 1;
    /* Each point weighs by its distance in log(size), a Gaussian of
     * NTP_PREDICT_SIZE_WIDTH; the kernel's own scale weighs as a point
     * two widths away (log 0): a size no sample is near keeps it. */
    double sw = exp(-2.0), sl = 0;
    for (int k = 0; k < c->n_points && k < NTP_PREDICT_MAX_POINTS; k++) {
        double d = log((double)bytes / c->point_bytes[k]) / NTP_PREDICT_SIZE_WIDTH;
        double w = exp(-0.5 * d * d);
        sw += w;
        sl += w * c->point_log[k];
    }
    return exp(sl / sw);
}

double ntp__predict_impl_size_scale(const ntp_calibration *cal, ntp_predict_family f,
                                    const char *impl, const char *op, const char *layout,
                                    int64_t bytes)
{
    if (!impl || !impl[0])
        return 1;
    const ntp_impl_correction *c = impl_find(cal, f, impl, op, layout);
    /* A copy's correction stored before copies were keyed by their op:
     * the kernel's alone. */
    if (!c && f == NTP_PREDICT_FAMILY_COPY && op)
        c = impl_find(cal, f, impl, NULL, layout);
    return c ? c->scale * ntp__predict_size_factor(c, bytes) : 1;
}

double ntp__predict_impl_scale(const ntp_calibration *cal, ntp_predict_family f, const char *impl,
                               const char *op, const char *layout)
{
    return ntp__predict_impl_size_scale(cal, f, impl, op, layout, 0);
}

double ntp__predict_key_scale(const ntp_calibration *cal, ntp_predict_family f, const char *key)
{
    const ntp_impl_correction *c = key_find(cal, f, key);
    return c ? c->scale : 1;
}

double ntp__predict_memory_term(const ntp_family_model *m, const double *x, double far)
{
    double k = m->far_scale > 0 ? m->far_scale : 1;
    return x[NTP_PREDICT_TERM_MEMORY] + (k - 1) * far;
}

/* Layer i's time and terms under cal (l's level, terms and time); false
 * when cal's family for it has no coefficients. */
static bool layer_under(const ntp__pfeat *f0, const ntp_calibration *cal, bool roofline,
                        ntp_layer_prediction *l)
{
    double c[NTP_PREDICT_TERMS];
    if (!family_coef(cal, f0->family, c))
        return false;
    /* A convolution ref lowers: its terms are its GEMMs' and im2col's
     * seconds. A recurrent layer's input GEMM under the fc family's
     * coefficients, in the compute term (it is the compute-bound part). */
    ntp__pfeat fv = *f0, *f = &fv;
    ntp__predict_lowered_conv_terms(cal, f);
    l->input_gemm_ms = 1e3 * ntp__predict_rnn_input_gemm_s(cal, f);
    /* The cold start a network that keeps its state in a cache does not
     * pay (docs/predict.md#a-layers-cold-start). */
    /* Once a layer, where its overhead counts a recurrent kernel's steps. */
    double overhead = c[NTP_PREDICT_TERM_OVERHEAD] * f->x[NTP_PREDICT_TERM_OVERHEAD];
    if (f->cold_share > 0 && overhead > 0)
        overhead = fmax(0, overhead - f->cold_share * cal->family[f->family].cold_s);
    l->overhead_ms = 1e3 * overhead;
    l->compute_ms =
        1e3 * c[NTP_PREDICT_TERM_COMPUTE] * f->x[NTP_PREDICT_TERM_COMPUTE] + l->input_gemm_ms;
    l->memory_ms = 1e3 * (c[NTP_PREDICT_TERM_MEMORY] *
                              ntp__predict_memory_term(&cal->family[f->family], f->x, f->far) +
                          c[NTP_PREDICT_TERM_STREAM] * f->x[NTP_PREDICT_TERM_STREAM]);
    l->predicted_ms = l->overhead_ms + l->compute_ms + l->memory_ms;
    /* The roofline-only estimate is the roofline's bound: the larger
     * term, not their sum. */
    if (roofline)
        l->predicted_ms = fmax(l->compute_ms, l->memory_ms);
    return true;
}

/* What a pass of g touches between two uses of one layer's weights: every
 * layer's weights (but a constant's, whose data is counted where it is
 * read) and the activations' arena, whose buffers the layers share (the
 * liveness planner's, ntp_analysis.peak_activation_bytes, as a run
 * plans it): ShuffleNetV2's 9.1 MB of weights and 3.0 MB arena fit in a
 * 32 MB L3, where the sum of its outputs (29.8 MB) would not. The level
 * holding it is where a layer's cold start (its code and state) is read
 * back from (ntp__pfeat.cold_share); its weights come from DRAM but where
 * the calibration measured that a pass of that size keeps them
 * (ntp__predict_weights_kept). */
int64_t ntp__predict_reuse(const ntp_graph *g, const ntp_analysis *a)
{
    int64_t b = a->peak_activation_bytes;
    for (int i = 0; i < a->n_layers; i++)
        if (ntp__predict_family(g, i) != NTP_PREDICT_FAMILY_FREE)
            b += a->layers[i].weight_bytes;
    return b;
}

/* The op layer l's correction is keyed by (ntp_layer_prediction.kernel_op). */
static const char *layer_op(const ntp_layer_prediction *l)
{
    return l->kernel_op ? l->kernel_op : l->type;
}

/* The calibration among p's of the backend `backend`; -1 for none. */
static int cal_index(const ntp_prediction *p, const char *backend)
{
    for (int k = 0; backend && k < p->n_cals; k++)
        if (strcmp(p->cals[k].backend, backend) == 0)
            return k;
    return -1;
}

/* Where p's network calibration (cals[0]) prices the weights between two
 * passes, in p->weights_note, where it measured what a pass keeps
 * (ntp_calibration.kept); "" otherwise. */
static void weights_note(ntp_prediction *p, int64_t reuse)
{
    const ntp_calibration *c = &p->cals[0];
    p->weights_note[0] = 0;
    if (p->roofline_only || strcmp(c->cache, "network") != 0 || c->kept.samples == 0)
        return;
    char r[32], k[32];
    ntp__human_bytes((double)reuse, r, sizeof r);
    ntp__human_bytes((double)c->kept.bytes, k, sizeof k);
    if (ntp__predict_weights_kept(c, reuse)) {
        double g;
        const char *level = level_for(c, reuse, &g);
        snprintf(p->weights_note, sizeof p->weights_note,
                 "weights between passes: kept in %s (a pass touches %s; this machine kept a "
                 "probe's weights through passes of %s, docs/predict.md#weights-between-passes)",
                 level, r, k);
    } else if (c->kept.bytes > 0)
        snprintf(p->weights_note, sizeof p->weights_note,
                 "weights between passes: from memory (a pass touches %s; this machine kept a "
                 "probe's weights through passes of %s, priced as kept up to 1/%g of that)",
                 r, k, NTP_KEPT_MARGIN);
    else
        snprintf(p->weights_note, sizeof p->weights_note,
                 "weights between passes: from memory (a pass touches %s; this machine kept "
                 "no probe's weights through the calibration's passes%s)",
                 r,
                 c->kept.n_points == 0 ? ", whose probe could not tell a cache from memory" : "");
}

/* Each layer whose implementation the prepared plan named (read_rows in
 * predict-layout.c) takes its calibration's correction for it: the
 * family's terms scaled by it, the total moved by the difference. A
 * recurrent layer whose kernel reads W at every step is priced so first
 * (its terms from g's analysis a, ntp__predict_rnn_per_step). */
static void correct_for_impls(ntp_prediction *p, const ntp_graph *g, const ntp_analysis *a,
                              int64_t reuse)
{
    size_t nl = (size_t)p->n_layers;
    for (int i = 0; i < p->n_layers; i++) {
        ntp_layer_prediction *l = &p->layers[i];
        int k = cal_index(p, l->backend);
        if (!l->impl || k < 0 || p->roofline_only || !isfinite(l->predicted_ms) ||
            l->family >= NTP_PREDICT_FAMILY_COUNT)
            continue;
        ntp__pfeat fs;
        ntp_layer_prediction t = {0};
        rnn_shape rs = rnn_shape_of(g, l->layer);
        if (l->family == NTP_PREDICT_FAMILY_RNN && l->rnn.per_step_ms > 0 &&
            ntp__predict_rnn_per_step(l->impl) && l->layer >= 0 && l->layer < a->n_layers) {
            features_of(l->family, &a->layers[l->layer], &p->cals[k], reuse, &rs, true, NULL, &fs);
            if (layer_under(&fs, &p->cals[k], false, &t)) {
                p->total_ms += t.predicted_ms - l->predicted_ms;
                l->predicted_ms = t.predicted_ms;
                l->overhead_ms = t.overhead_ms;
                l->compute_ms = t.compute_ms;
                l->memory_ms = t.memory_ms;
                l->input_gemm_ms = 0;
                l->level = fs.level;
                l->bytes = fs.bytes;
                p->cal_ms[(size_t)k * nl + (size_t)i] = l->predicted_ms;
            }
        }
        double s = ntp__predict_impl_size_scale(&p->cals[k], l->family, l->impl, layer_op(l),
                                                l->src_layout, l->correction_bytes);
        if (s == 1)
            continue;
        /* A recurrent layer's input GEMM is the fc family's: the
         * correction is its recurrent part's. */
        double was = l->predicted_ms, in = l->input_gemm_ms;
        l->correction = s;
        l->predicted_ms = in + (l->predicted_ms - in) * s;
        l->overhead_ms *= s;
        l->compute_ms = in + (l->compute_ms - in) * s;
        l->memory_ms *= s;
        p->cal_ms[(size_t)k * nl + (size_t)i] = l->predicted_ms;
        p->total_ms += l->predicted_ms - was;
    }
}

double ntp__wake_after(const ntp_calibration *c, double sleep_s)
{
    const int n = c->n_wake_points;
    if (n < 2 || !(sleep_s > 0))
        return n < 2 ? c->wake_s : c->wake_points[0][1];
    const double(*w)[2] = c->wake_points;
    if (sleep_s <= w[0][0])
        return w[0][1];
    for (int i = 1; i < n; i++)
        if (sleep_s <= w[i][0]) {
            double a = log(sleep_s / w[i - 1][0]) / log(w[i][0] / w[i - 1][0]);
            return w[i - 1][1] + a * (w[i][1] - w[i - 1][1]);
        }
    return w[n - 1][1];
}

/* Whether c measured its threads' wake: at some sleep, if not the shortest. */
static bool has_wake(const ntp_calibration *c)
{
    return c->wake_s > 0 || c->n_wake_points >= 2;
}

/* Whether prediction row l is a layer that runs work on a backend (not a
 * reorder, a conversion, a constant or one without a backend). */
static bool runs_work(const ntp_layer_prediction *l)
{
    return l->kind && strcmp(l->kind, "layer") == 0 && l->family != NTP_PREDICT_FAMILY_FREE &&
           l->backend;
}

/* A layer placed on another backend than the layer run before it pays
 * its backend's wake (ntp_calibration.wake_s; docs/predict.md#waking-the-
 * threads): its threads slept while the other backend ran, as long as the
 * layers predicted since its backend's last one (ntp__wake_after). Layers
 * with no work of their own and fused ones run nothing. */
static void add_wakes(ntp_prediction *p)
{
    const char *prev = NULL;
    for (int i = 0; !p->roofline_only && i < p->n_layers; i++) {
        ntp_layer_prediction *l = &p->layers[i];
        if (!runs_work(l))
            continue;
        int k = cal_index(p, l->backend);
        if (prev && strcmp(prev, l->backend) != 0 && k >= 0 && has_wake(&p->cals[k]) &&
            isfinite(l->predicted_ms)) {
            /* The time since this backend's last layer. */
            double slept_ms = 0;
            for (int j = i - 1; j >= 0; j--) {
                const ntp_layer_prediction *q = &p->layers[j];
                if (!runs_work(q))
                    continue;
                if (strcmp(q->backend, l->backend) == 0)
                    break;
                if (isfinite(q->predicted_ms))
                    slept_ms += q->predicted_ms;
            }
            /* On its first row: a reorder or conversion before it, where
             * the plan has one on its backend. */
            ntp_layer_prediction *w = l;
            for (int c = 0; w == l && c < p->n_copies; c++)
                if (p->copies[c].layer == i && p->copies[c].before && p->copies[c].backend &&
                    strcmp(p->copies[c].backend, l->backend) == 0 &&
                    isfinite(p->copies[c].predicted_ms))
                    w = &p->copies[c];
            w->wake_ms = ntp__wake_after(&p->cals[k], slept_ms / 1e3) * 1e3;
            w->predicted_ms += w->wake_ms;
            p->total_ms += w->wake_ms;
            if (w != l)
                p->copies_ms += w->wake_ms;
        }
        prev = l->backend;
    }
}

/* Beside a run: the wake row i of r pays, where the row run before it ran
 * on another backend (its first row after a handed layer: a reorder row
 * where the layer has one), after as long as the rows measured since its
 * backend's last one. */
static double run_wake_ms(const ntp_prediction *p, const ntp_run_result *r, int i)
{
    const char *b = r->layers[i].backend;
    int k = b ? cal_index(p, b) : -1;
    if (p->roofline_only || k < 0 || !has_wake(&p->cals[k]))
        return 0;
    double slept_ms = 0;
    bool other = false;
    for (int j = i - 1; j >= 0; j--) {
        const ntp_layer_result *q = &r->layers[j];
        if (q->fused || !q->kind ||
            (strcmp(q->kind, "layer") != 0 && strcmp(q->kind, "reorder") != 0 &&
             strcmp(q->kind, "convert") != 0))
            continue;
        if (!q->backend || strcmp(q->backend, b) == 0)
            break;
        other = true;
        if (isfinite(q->time_ms.median))
            slept_ms += q->time_ms.median;
    }
    return other ? ntp__wake_after(&p->cals[k], slept_ms / 1e3) * 1e3 : 0;
}

void ntp_predict_opts_default(ntp_predict_opts *o)
{
    memset(o, 0, sizeof *o);
    o->reorders = true;
}

ntp_status ntp_predict(ntp_ctx *ctx, const ntp_graph *g, const ntp_calibration *cal,
                       ntp_prediction **out)
{
    return ntp_predict_placed(ctx, g, cal, NULL, 0, out);
}

ntp_status ntp_predict_placed(ntp_ctx *ctx, const ntp_graph *g, const ntp_calibration *cal,
                              const ntp_calibration *others, int n_others, ntp_prediction **out)
{
    ntp_predict_opts o = {.others = others, .n_others = n_others};
    return ntp_predict_with(ctx, g, cal, &o, out);
}

ntp_status ntp_predict_with(ntp_ctx *ctx, const ntp_graph *g, const ntp_calibration *cal,
                            const ntp_predict_opts *o, ntp_prediction **out)
{
    ntp_predict_opts none = {0};
    if (!o)
        o = &none;
    const ntp_calibration *others = o->others;
    int n_others = o->n_others;
    *out = NULL;
    if (!g || !cal || n_others < 0 || (n_others > 0 && !others))
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_predict: missing argument");
    /* A calibration prices one precision: its peak and its fitted
     * coefficients say nothing of another. */
    for (int k = -1; k < n_others; k++) {
        const ntp_calibration *c = k < 0 ? cal : &others[k];
        if (c->precision[0] && strcmp(ntp_dtype_name(g->precision), c->precision) != 0)
            return ntp__error(
                ctx, NTP_STATUS_INVALID_ARGUMENT,
                "predict: the calibration (%s, %s) is for %s, the topology '%s' runs at "
                "%s; calibrate at %s (`ntprof machine --calibrate --precision %s`)",
                c->backend, c->machine_key, c->precision, ntp_graph_name(g),
                ntp_dtype_name(g->precision), ntp_dtype_name(g->precision),
                ntp_dtype_name(g->precision));
    }
    ntp_analysis *a = NULL;
    ntp_status st = ntp_graph_analyze(ctx, g, &a);
    if (st)
        return st;
    ntp_prediction *p = calloc(1, sizeof *p);
    size_t nl = (size_t)a->n_layers;
    if (!p || !(p->layers = calloc(nl + 1, sizeof *p->layers)) ||
        !(p->cals = calloc(NTP_PREDICT_MAX_CALS, sizeof *p->cals)) ||
        !(p->cal_ms = calloc(NTP_PREDICT_MAX_CALS * nl + 1, sizeof *p->cal_ms))) {
        ntp_prediction_free(p);
        ntp_analysis_free(a);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    p->topology = ntp_graph_name(g);
    p->batch = ntp_graph_batch(g);
    p->cal = *cal;
    p->roofline_only = strcmp(cal->backend, "roofline") == 0;
    p->n_layers = a->n_layers;
    p->cals[p->n_cals++] = *cal;
    for (int k = 0; k < n_others && p->n_cals < NTP_PREDICT_MAX_CALS; k++) {
        bool dup = false;
        for (int j = 0; j < p->n_cals; j++)
            dup |= strcmp(p->cals[j].backend, others[k].backend) == 0;
        if (!dup)
            p->cals[p->n_cals++] = others[k];
    }
    /* The machine's pace beside a run (docs/run.md#pace): cal's, else a
     * paced other's, else the one given. The looks time ntprof's own loop
     * on each CPU, whichever backend runs: on the quiet 16:02 window of
     * 2026-12-06, every oneDNN and XNNPACK run's best look read 0.98-0.99x
     * ref's calibration's pace (42 of 42 over 0.87x). */
    for (int k = 0; k <= p->n_cals && !(p->pace_gflops > 0); k++) {
        const ntp_calibration *c = k < p->n_cals ? &p->cals[k] : o->paced;
        if (c && c->pace_gflops > 0 && isfinite(c->pace_gflops)) {
            p->pace_gflops = c->pace_gflops;
            snprintf(p->pace_backend, sizeof p->pace_backend, "%s", c->backend);
        }
    }
    /* Each layer where a run with the same backend and placements puts it
     * (exec/plan.c's rule, --place included). */
    const char **where = calloc((size_t)g->n_nodes + 1, sizeof *where);
    if (!where) {
        ntp_prediction_free(p);
        ntp_analysis_free(a);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    /* With fuse, the groups a run with --fuse makes (exec/plan.c's rule):
     * head_of[i] is the head of layer i's group, fold[i] as the plan's. */
    int *head_of = NULL, *fold = NULL;
    if (o->fuse && p->roofline_only)
        st = ntp__opt_error(ctx, NTP_STATUS_INVALID_ARGUMENT, "ntp_predict_opts.fuse",
                            "a roofline-only estimate has no backend whose fusion to follow");
    else if (o->fuse && (!(head_of = calloc((size_t)g->n_nodes + 1, sizeof *head_of)) ||
                         !(fold = calloc((size_t)g->n_nodes + 1, sizeof *fold))))
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!st && !p->roofline_only) {
        ntp_exec_opts eo = {.backend = ntp__backend_find(p->cals[0].backend),
                            .place = o->place,
                            .n_place = o->n_place,
                            .fuse = o->fuse};
        st = ntp__exec_placement(ctx, g, &eo, p->cals[0].backend, where);
        if (!st && o->fuse)
            st = ntp__exec_groups(ctx, g, &eo, where, head_of, fold);
    }
    if (st) {
        free(head_of);
        free(fold);
        free(where);
        ntp_prediction_free(p);
        ntp_analysis_free(a);
        return st;
    }
    p->fused = o->fuse;
    int64_t reuse = ntp__predict_reuse(g, a);
    p->reuse = reuse;
    weights_note(p, reuse);
    bool missing[NTP_PREDICT_FAMILY_NONE + 1] = {false};
    char not_cal[128] = "";
    for (int i = 0; i < a->n_layers; i++) {
        ntp_layer_prediction *l = &p->layers[i];
        l->kind = "layer";
        l->layer = i;
        l->correction = 1;
        l->backend = p->roofline_only ? p->cals[0].backend : where[i];
        /* A layer fused into another (--fuse) has no time of its own, as
         * in the run: its work is in its head's row. */
        if (head_of && head_of[i] != i) {
            l->kind = "fused";
            l->fused_into = ntp_graph_layer_name(g, head_of[i]);
            l->family = ntp__predict_family(g, i);
            l->level = "-";
            p->n_fused++;
            continue;
        }
        /* Every calibration's time for the layer (a run may place it
         * elsewhere), then the one of the backend it is placed on; a
         * group's head for the group's work. */
        ntp_layer_cost work;
        group_cost(g, a, head_of, fold, i, &work);
        ntp_predict_family fam = ntp__predict_family(g, i);
        ntp__pfeat f, fk;
        int chosen = -1;
        rnn_shape rs = rnn_shape_of(g, i);
        conv_shape cs = conv_shape_of(g, i);
        features_of(fam, &work, &p->cals[0], reuse, &rs, false, &cs, &f);
        for (int k = 0; k < p->n_cals; k++) {
            ntp_layer_prediction t = {0};
            features_of(fam, &work, &p->cals[k], reuse, &rs, false, &cs, &fk);
            bool ok = fk.family < NTP_PREDICT_FAMILY_COUNT &&
                      layer_under(&fk, &p->cals[k], p->roofline_only, &t);
            p->cal_ms[(size_t)k * nl + (size_t)i] = fk.family == NTP_PREDICT_FAMILY_FREE ? 0
                                                    : ok ? t.predicted_ms
                                                         : NAN;
            if (strcmp(p->cals[k].backend, l->backend) == 0) {
                chosen = k;
                f = fk;
                l->overhead_ms = t.overhead_ms;
                l->compute_ms = t.compute_ms;
                l->memory_ms = t.memory_ms;
                l->input_gemm_ms = t.input_gemm_ms;
                l->correction_bytes = fk.size_bytes;
                /* A recurrent layer both ways a kernel runs its input
                 * GEMM: which one is known from the plan's or the run's
                 * kernel (correct_for_impls, run_impl_ms). */
                ntp__pfeat fs;
                ntp_layer_prediction ts = {0};
                features_of(fam, &work, &p->cals[k], reuse, &rs, true, &cs, &fs);
                if (ok && fam == NTP_PREDICT_FAMILY_RNN && work.n_parts > 1 &&
                    layer_under(&fs, &p->cals[k], p->roofline_only, &ts)) {
                    l->rnn.merged_ms = t.predicted_ms;
                    l->rnn.merged_input_gemm_ms = t.input_gemm_ms;
                    l->rnn.per_step_ms = ts.predicted_ms;
                }
            }
        }
        /* Inside p's copy of the calibration: it lives with p. */
        l->level = f.level;
        l->name = a->layers[i].name;
        l->type = a->layers[i].type;
        l->family = f.family;
        l->flops = f.flops;
        l->bytes = f.bytes;
        if (chosen < 0)
            l->level = "-";
        if (f.family == NTP_PREDICT_FAMILY_FREE) {
            l->predicted_ms = 0;
            continue;
        }
        l->predicted_ms = chosen >= 0 ? p->cal_ms[(size_t)chosen * nl + (size_t)i] : NAN;
        if (isfinite(l->predicted_ms)) {
            p->total_ms += l->predicted_ms;
            continue;
        }
        p->n_unpredicted++;
        if (f.family == NTP_PREDICT_FAMILY_NONE) {
            missing[f.family] = true;
            snprintf(l->note, sizeof l->note, "n/a: %s has no family", l->type);
        } else if (chosen < 0) {
            snprintf(l->note, sizeof l->note, "n/a: not calibrated for %s", l->backend);
            if (!strstr(not_cal, l->backend) &&
                strlen(not_cal) + strlen(l->backend) + 3 < sizeof not_cal)
                snprintf(not_cal + strlen(not_cal), sizeof not_cal - strlen(not_cal), "%s%s",
                         not_cal[0] ? ", " : "", l->backend);
        } else {
            missing[f.family] = true;
            snprintf(l->note, sizeof l->note, "n/a: %s not calibrated on %s",
                     ntp_predict_family_name(f.family), l->backend);
        }
    }
    /* Families a calibration could hold, then the layer types no family
     * covers (the inlays), each once, then the backends layers are handed
     * to without a calibration. */
    size_t u = 0;
    for (int f = 0; f < NTP_PREDICT_FAMILY_COUNT; f++)
        if (missing[f] && u < sizeof p->uncalibrated)
            u += (size_t)snprintf(p->uncalibrated + u, sizeof p->uncalibrated - u, "%s%s",
                                  u ? ", " : "", ntp_predict_family_name((ntp_predict_family)f));
    for (int i = 0; missing[NTP_PREDICT_FAMILY_NONE] && i < a->n_layers; i++) {
        const char *t = a->layers[i].type;
        if (p->layers[i].family != NTP_PREDICT_FAMILY_NONE || !t || u >= sizeof p->uncalibrated)
            continue;
        bool seen = false;
        for (int k = 0; k < i; k++)
            seen |= p->layers[k].family == NTP_PREDICT_FAMILY_NONE && a->layers[k].type &&
                    strcmp(a->layers[k].type, t) == 0;
        if (!seen)
            u += (size_t)snprintf(p->uncalibrated + u, sizeof p->uncalibrated - u,
                                  "%s%s (no family)", u ? ", " : "", t);
    }
    if (not_cal[0] && u < sizeof p->uncalibrated)
        snprintf(p->uncalibrated + u, sizeof p->uncalibrated - u,
                 "%slayers handed to %s (not calibrated)", u ? ", " : "", not_cal);
    /* Names and types are the graph's: the caller keeps g alive while p
     * is used, as with an analysis. The analysis itself goes. */
    for (int i = 0; i < a->n_layers; i++) {
        p->layers[i].name = ntp_graph_layer_name(g, i);
        p->layers[i].type = ntp_graph_layer_type(g, i);
        p->layers[i].kernel_op = ntp__predict_layer_kernel_op(g, i);
    }
    /* The rows a run adds besides the layers: from the prepared plan, or
     * one row saying what is unknown. */
    st = ntp__predict_copies(ctx, g, o, where, p);
    if (!st) {
        correct_for_impls(p, g, a, reuse);
        add_wakes(p);
    }
    ntp_analysis_free(a);
    free(head_of);
    free(fold);
    free(where);
    if (st) {
        ntp_prediction_free(p);
        return st;
    }
    *out = p;
    return NTP_STATUS_OK;
}

/* A thread count as the engine resolves it: 0 is every online CPU. */
static int resolved_threads(int t)
{
    if (t > 0)
        return t;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static const ntp_layer_prediction *find_layer(const ntp_prediction *p, const char *name)
{
    for (int k = 0; name && k < p->n_layers; k++)
        if (p->layers[k].name && strcmp(p->layers[k].name, name) == 0)
            return &p->layers[k];
    return NULL;
}

const ntp_calibration *ntp__predict_copy_cal(const ntp_prediction *p, const char *backend)
{
    int k = cal_index(p, backend);
    return &p->cals[k >= 0 ? k : 0];
}

/* Whether a row run on `backend` (NULL: not said) runs where the
 * prediction placed layer lp: lp's own prediction then stands for it. */
static bool placed_as_predicted(const ntp_layer_prediction *lp, const char *backend)
{
    return !backend || !lp->backend || strcmp(backend, lp->backend) == 0;
}

/* Layer lp's time when it runs on `backend` (NULL: where the prediction
 * placed it): under that backend's calibration; NAN, with *note saying
 * why, where it has none. */
static double layer_ms_on(const ntp_prediction *p, const ntp_layer_prediction *lp,
                          const char *backend, char *note, size_t len)
{
    if (placed_as_predicted(lp, backend) || p->roofline_only) {
        snprintf(note, len, "%s", lp->note);
        return lp->predicted_ms;
    }
    if (lp->family == NTP_PREDICT_FAMILY_FREE)
        return 0;
    int k = cal_index(p, backend);
    if (k < 0) {
        snprintf(note, len, "n/a: not calibrated for %s", backend);
        return NAN;
    }
    double ms = p->cal_ms[(size_t)k * (size_t)p->n_layers + (size_t)(lp - p->layers)];
    if (!isfinite(ms))
        snprintf(note, len, "n/a: %s not calibrated on %s", ntp_predict_family_name(lp->family),
                 backend);
    return ms;
}

/* Layer lp's time pred (under the calibration of the backend row l ran
 * on) corrected for the implementation the run chose (l->impl) instead of
 * the one the prediction's plan named, if any: a run's prediction is made
 * without preparing the plan again. */
static double run_impl_ms(const ntp_prediction *p, const ntp_layer_prediction *lp,
                          const ntp_layer_result *l, double pred)
{
    const char *backend = l->backend ? l->backend : lp->backend;
    int k = cal_index(p, backend);
    if (!isfinite(pred) || k < 0 || p->roofline_only || lp->family >= NTP_PREDICT_FAMILY_COUNT)
        return pred;
    bool own = placed_as_predicted(lp, l->backend);
    /* A recurrent layer as the run's kernel runs its input GEMM (at every
     * step, or once over the sequence), whichever the prediction's plan
     * named; its input GEMM is not corrected. */
    if (own && lp->family == NTP_PREDICT_FAMILY_RNN && lp->rnn.per_step_ms > 0) {
        double sc = ntp__predict_impl_size_scale(&p->cals[k], lp->family, l->impl, layer_op(lp),
                                                 l->src_layout, lp->correction_bytes);
        if (ntp__predict_rnn_per_step(l->impl))
            return lp->rnn.per_step_ms * sc;
        double gemm = lp->rnn.merged_input_gemm_ms;
        return gemm + (lp->rnn.merged_ms - gemm) * sc;
    }
    double in = own ? lp->input_gemm_ms : 0;
    double base = own && lp->correction > 0 ? (pred - in) / lp->correction : pred;
    /* Keyed by the kernel the run chose and the layout it read. */
    return in + base * ntp__predict_impl_size_scale(&p->cals[k], lp->family, l->impl, layer_op(lp),
                                                    l->src_layout, lp->correction_bytes);
}

static double finite_or_0(double v)
{
    return isfinite(v) ? v : 0;
}

void ntp_prediction_apply(const ntp_prediction *p, ntp_run_result *r, bool stale)
{
    ntp_run_prediction *s = &r->prediction;
    memset(s, 0, sizeof *s);
    s->available = true;
    s->stale = stale;
    s->roofline_only = p->roofline_only;
    s->calibration_bus_share = -1;
    if (!p->roofline_only) {
        s->calibration_threads = resolved_threads(p->cal.threads);
        s->run_threads = resolved_threads(r->threads);
        s->threads_differ = s->calibration_threads != s->run_threads;
        s->calibration_bus_share = ntp__bandwidth_low_share(&p->cal.bus);
        s->calibration_bus_low = p->cal.bus.measured && p->cal.bus.low;
        s->calibration_pace_gflops = p->pace_gflops;
        snprintf(s->calibration_pace_backend, sizeof s->calibration_pace_backend, "%s",
                 p->pace_gflops > 0 ? p->pace_backend : "");
    }
    /* The backend's version may be long (OpenBLAS's config string): the
     * label keeps its start. */
    char ver[64];
    snprintf(ver, sizeof ver, "%.*s", 60, p->cal.backend_version);
    snprintf(s->calibration, sizeof s->calibration, "%.31s (%s) %.7s, %.31s", p->cal.backend, ver,
             p->cal.precision, p->cal.calibrated_at);
    snprintf(s->uncalibrated, sizeof s->uncalibrated, "%s", p->uncalibrated);
    snprintf(s->weights_note, sizeof s->weights_note, "%s", p->weights_note);
    double layer_sum = 0;
    for (int i = 0; i < r->n_layers; i++)
        if (r->layers[i].kind && strcmp(r->layers[i].kind, "layer") == 0)
            layer_sum += r->layers[i].time_ms.median;
    /* The end-to-end prediction moves by what the run's placement changes:
     * a layer that ran on another backend than the prediction placed it
     * on takes that backend's time (or none); the backend's reorder and
     * conversion rows are copies. */
    double delta = 0;
    for (int i = 0; i < r->n_layers; i++) {
        ntp_layer_result *l = &r->layers[i];
        l->predicted = false;
        l->prediction_note[0] = '\0';
        if (!l->kind || l->fused || !l->name)
            continue;
        bool copy_row = strcmp(l->kind, "reorder") == 0 || strcmp(l->kind, "convert") == 0;
        if (!copy_row && strcmp(l->kind, "layer") != 0)
            continue;
        double pred = NAN;
        const ntp_layer_prediction *lp = copy_row ? NULL : find_layer(p, l->name);
        if (copy_row) {
            /* Its bytes are the source's and the destination's. */
            if (!p->roofline_only) {
                pred = ntp__predict_copy_ms(ntp__predict_copy_cal(p, l->backend), l->bytes, l->kind,
                                            p->reuse) +
                       run_wake_ms(p, r, i);
            }
            if (!isfinite(pred)) {
                snprintf(l->prediction_note, sizeof l->prediction_note, "n/a: a %s %s", l->kind,
                         p->roofline_only ? "(no copies in a roofline-only estimate)"
                                          : "of unknown size");
                s->unpredicted_ms += l->time_ms.median;
                continue;
            }
            delta += pred;
        } else {
            if (!lp)
                continue;
            /* The layers fused into this row in the run and in the
             * prediction (ntp_predict_opts.fuse): a group predicted as the
             * run ran it is priced whole, as its fused kernel; one the
             * prediction made otherwise has no prediction. */
            int run_members = 0, pred_members = 0, shared = 0;
            for (int k = 0; k < r->n_layers; k++) {
                const ntp_layer_result *fl = &r->layers[k];
                if (!fl->fused || !fl->fused_into || strcmp(fl->fused_into, l->name) != 0)
                    continue;
                const ntp_layer_prediction *fp = find_layer(p, fl->name);
                run_members++;
                shared += fp && fp->fused_into && strcmp(fp->fused_into, l->name) == 0;
            }
            for (int k = 0; k < p->n_layers; k++)
                pred_members +=
                    p->layers[k].fused_into && strcmp(p->layers[k].fused_into, l->name) == 0;
            if (lp->fused_into) {
                pred = NAN;
                snprintf(l->prediction_note, sizeof l->prediction_note,
                         "n/a: predicted fused into %.36s", lp->fused_into);
            } else if (pred_members > 0 && (shared != pred_members || run_members != shared)) {
                pred = NAN;
                snprintf(l->prediction_note, sizeof l->prediction_note,
                         "n/a: fused otherwise than predicted");
            } else {
                pred =
                    layer_ms_on(p, lp, l->backend, l->prediction_note, sizeof l->prediction_note);
                /* The wake where the run, not the prediction, has one. */
                if (placed_as_predicted(lp, l->backend))
                    pred -= lp->wake_ms;
                pred = run_impl_ms(p, lp, l, pred) + run_wake_ms(p, r, i);
            }
            delta += finite_or_0(pred) - finite_or_0(lp->predicted_ms);
            if (!isfinite(pred)) {
                s->unpredicted_ms += l->time_ms.median;
                if (lp->backend && l->backend && strcmp(lp->backend, l->backend) != 0 &&
                    !strstr(s->uncalibrated, l->prediction_note + 5))
                    snprintf(s->uncalibrated + strlen(s->uncalibrated),
                             sizeof s->uncalibrated - strlen(s->uncalibrated), "%s%s",
                             s->uncalibrated[0] ? ", " : "", l->prediction_note + 5);
                continue;
            }
            /* Layers with no work of their own (reshape) are not compared:
             * their few nanoseconds say nothing of the model. */
            if (lp->family == NTP_PREDICT_FAMILY_FREE)
                continue;
            /* Layers the backend fused into this one (--fuse) are timed in
             * it, on its backend: a prediction of the unfused topology adds
             * their predictions to its own. */
            for (int k = 0; pred_members == 0 && k < r->n_layers; k++) {
                const ntp_layer_result *fl = &r->layers[k];
                if (fl->fused && fl->fused_into && strcmp(fl->fused_into, l->name) == 0) {
                    const ntp_layer_prediction *fp = find_layer(p, fl->name);
                    if (!fp)
                        continue;
                    char ignored[64];
                    double fms = layer_ms_on(p, fp, l->backend, ignored, sizeof ignored);
                    pred += finite_or_0(fms);
                    delta += finite_or_0(fms) - finite_or_0(fp->predicted_ms);
                }
            }
        }
        l->predicted = true;
        l->predicted_ms = pred;
        double m = l->time_ms.median;
        if (m > 0) {
            double e = fabs(pred - m) / m;
            s->n_compared++;
            s->within_10 += e <= 0.10;
            s->within_25 += e <= 0.25;
            if (layer_sum > 0 && m > 0.01 * layer_sum) {
                s->n_major++;
                s->major_within_25 += e <= 0.25;
            }
        }
    }
    /* The run's own reorder and conversion rows replace those the
     * prediction learned from its plan. */
    s->predicted_ms = p->total_ms - p->copies_ms + delta;
    s->measured_ms = r->end_to_end_ms.median;
    s->error = s->measured_ms > 0 ? (s->predicted_ms - s->measured_ms) / s->measured_ms : NAN;
    double covered = s->measured_ms - s->unpredicted_ms;
    s->covered_error = covered > 0 ? (s->predicted_ms - covered) / covered : NAN;
}

/* --- JSON -------------------------------------------------------------------------------- */

json_t *ntp__calibration_json(const ntp_calibration *cal)
{
    bool ok = true;
    json_t *o = json_object();
    ntp__jset(&ok, o, "machine", ntp__json_str(cal->machine_key));
    ntp__jset(&ok, o, "backend", ntp__json_str(cal->backend));
    ntp__jset(&ok, o, "backend_version", ntp__json_str(cal->backend_version));
    ntp__jset(&ok, o, "precision", ntp__json_str(cal->precision));
    ntp__jset(&ok, o, "threads", json_integer(cal->threads));
    ntp__jset(&ok, o, "calibrated_at", ntp__json_str(cal->calibrated_at));
    ntp__jset(&ok, o, "ntprof_version", ntp__json_str(cal->ntprof_version));
    if (cal->refitted_at[0])
        ntp__jset(&ok, o, "refitted_at", ntp__json_str(cal->refitted_at));
    ntp__jset(&ok, o, "loadavg", json_real(cal->loadavg));
    ntp__jset(&ok, o, "quick", json_boolean(cal->quick));
    ntp__jset(&ok, o, "passes", json_integer(cal->passes > 0 ? cal->passes : 1));
    ntp__jset(&ok, o, "keep", json_string(cal->keep[0] ? cal->keep : "median"));
    ntp__jset(&ok, o, "apart_timings", json_integer(cal->apart_timings));
    ntp__jset(&ok, o, "apart_kept", json_integer(cal->apart_kept));
    ntp__jset(&ok, o, "slow_timings", json_integer(cal->slow_timings));
    ntp__jset(&ok, o, "slow_kept", json_integer(cal->slow_kept));
    ntp__jset(&ok, o, "pace_gflops", ntp__json_num(cal->pace_gflops));
    if (cal->bus.measured || cal->bus.reason[0])
        ntp__jset(&ok, o, "memory_bus", ntp__bandwidth_json(&ok, &cal->bus));
    ntp__jset(&ok, o, "cache", json_string(cal->cache[0] ? cal->cache : "warm"));
    ntp__jset(&ok, o, "cpu_flags", json_string(cal->cpu_flags));
    ntp__jset(&ok, o, "cpu_signature", json_string(cal->cpu_signature));
    ntp__jset(&ok, o, "peak_gflops", json_real(cal->peak_gflops));
    json_t *lv = json_array();
    for (int i = 0; i < cal->n_levels; i++) {
        json_t *l = json_object();
        ntp__jset(&ok, l, "level", ntp__json_str(cal->levels[i].name));
        ntp__jset(&ok, l, "capacity_bytes", json_integer(cal->levels[i].capacity_bytes));
        ntp__jset(&ok, l, "gbps", json_real(cal->levels[i].gbps));
        ntp__jpush(&ok, lv, l);
    }
    ntp__jset(&ok, o, "levels", lv);
    json_t *fam = json_object();
    for (int f = 0; f < NTP_PREDICT_FAMILY_COUNT; f++) {
        const ntp_family_model *m = &cal->family[f];
        if (!m->calibrated)
            continue;
        json_t *x = json_object();
        ntp__jset(&ok, x, "samples", json_integer(m->samples));
        ntp__jset(&ok, x, "overhead_s", json_real(m->coef[NTP_PREDICT_TERM_OVERHEAD]));
        ntp__jset(&ok, x, "compute", json_real(m->coef[NTP_PREDICT_TERM_COMPUTE]));
        ntp__jset(&ok, x, "memory", json_real(m->coef[NTP_PREDICT_TERM_MEMORY]));
        ntp__jset(&ok, x, "stream", json_real(m->coef[NTP_PREDICT_TERM_STREAM]));
        ntp__jset(&ok, x, "median_error", json_real(m->median_error));
        ntp__jset(&ok, x, "max_error", json_real(m->max_error));
        if (m->cold_samples > 0) {
            ntp__jset(&ok, x, "cold_s", json_real(m->cold_s));
            ntp__jset(&ok, x, "cold_samples", json_integer(m->cold_samples));
        }
        if (m->far_scale > 0)
            ntp__jset(&ok, x, "far_scale", json_real(m->far_scale));
        ntp__jset(&ok, fam, ntp_predict_family_name((ntp_predict_family)f), x);
    }
    ntp__jset(&ok, o, "families", fam);
    /* The reorder rows' model and the corrections per implementation;
     * absent in calibrations from before them (read as none). */
    if (cal->reorder.calibrated) {
        const ntp_family_model *m = &cal->reorder;
        json_t *x = json_object();
        ntp__jset(&ok, x, "samples", json_integer(m->samples));
        ntp__jset(&ok, x, "overhead_s", json_real(m->coef[NTP_PREDICT_TERM_OVERHEAD]));
        ntp__jset(&ok, x, "memory", json_real(m->coef[NTP_PREDICT_TERM_MEMORY]));
        ntp__jset(&ok, x, "stream", json_real(m->coef[NTP_PREDICT_TERM_STREAM]));
        ntp__jset(&ok, x, "median_error", json_real(m->median_error));
        ntp__jset(&ok, x, "max_error", json_real(m->max_error));
        ntp__jset(&ok, o, "reorder", x);
    }
    /* The wake of the backend's threads; absent where not measured. */
    if (cal->wake_samples > 0) {
        json_t *x = json_object();
        ntp__jset(&ok, x, "samples", json_integer(cal->wake_samples));
        ntp__jset(&ok, x, "seconds", json_real(cal->wake_s));
        /* By how long the threads slept: [sleep, wake] in seconds. */
        if (cal->n_wake_points >= 2) {
            json_t *pts = json_array();
            for (int k = 0; k < cal->n_wake_points && k < NTP_WAKE_POINTS; k++) {
                json_t *pt = json_array();
                ntp__jpush(&ok, pt, json_real(cal->wake_points[k][0]));
                ntp__jpush(&ok, pt, json_real(cal->wake_points[k][1]));
                ntp__jpush(&ok, pts, pt);
            }
            ntp__jset(&ok, x, "by_sleep", pts);
        }
        ntp__jset(&ok, o, "wake", x);
    }
    /* ref's dot-product loop by size; absent where not measured. */
    if (cal->n_gemv > 0) {
        json_t *gv = json_array();
        for (int k = 0; k < cal->n_gemv && k < NTP_PREDICT_MAX_GEMV; k++) {
            json_t *x = json_object();
            ntp__jset(&ok, x, "bytes", json_integer(cal->gemv[k].bytes));
            ntp__jset(&ok, x, "gbps", json_real(cal->gemv[k].gbps));
            ntp__jpush(&ok, gv, x);
        }
        ntp__jset(&ok, o, "gemv", gv);
    }
    /* What a pass keeps; absent where not measured. */
    if (cal->kept.samples > 0) {
        json_t *x = json_object(), *pts = json_array();
        ntp__jset(&ok, x, "samples", json_integer(cal->kept.samples));
        ntp__jset(&ok, x, "bytes", json_integer(cal->kept.bytes));
        for (int k = 0; k < cal->kept.n_points && k < NTP_KEPT_POINTS; k++)
            ntp__jpush(&ok, pts,
                       json_pack("[f,f]", cal->kept.points[k][0], cal->kept.points[k][1]));
        ntp__jset(&ok, x, "by_bytes", pts);
        ntp__jset(&ok, o, "kept", x);
    }
    json_t *im = json_array();
    for (int k = 0; k < cal->n_impls && k < NTP_PREDICT_MAX_IMPLS; k++) {
        const ntp_impl_correction *c = &cal->impls[k];
        json_t *x = json_object();
        ntp__jset(&ok, x, "family", ntp__json_str(ntp_predict_family_name(c->family)));
        ntp__jset(&ok, x, "impl", ntp__json_str(c->impl));
        ntp__jset(&ok, x, "samples", json_integer(c->samples));
        ntp__jset(&ok, x, "scale", json_real(c->scale));
        if (c->n_points > 0) {
            json_t *pts = json_array();
            for (int q = 0; q < c->n_points && q < NTP_PREDICT_MAX_POINTS; q++)
                ntp__jpush(&ok, pts, json_pack("[f,f]", c->point_bytes[q], c->point_log[q]));
            ntp__jset(&ok, x, "points", pts);
        }
        ntp__jpush(&ok, im, x);
    }
    ntp__jset(&ok, o, "impl_corrections", im);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static void get_str(json_t *o, const char *key, char *buf, size_t len)
{
    json_t *v = json_object_get(o, key);
    snprintf(buf, len, "%s", json_is_string(v) ? json_string_value(v) : "");
}

static double get_num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : 0;
}

/* A whole number in [lo, hi] (0 when absent or not a number, as get_num);
 * *bad when it is one out of that range: a stored figure past int64_t
 * would be undefined to convert (found by fuzz_store). */
static int64_t get_int(json_t *o, const char *key, int64_t lo, int64_t hi, bool *bad)
{
    double d = get_num(o, key);
    if (!(d >= (double)lo && d <= (double)hi)) {
        *bad = true;
        return 0;
    }
    return (int64_t)d;
}

bool ntp__calibration_from_json(json_t *j, ntp_calibration *cal)
{
    memset(cal, 0, sizeof *cal);
    if (!json_is_object(j) || !json_is_object(json_object_get(j, "families")))
        return false;
    bool bad = false;
    get_str(j, "machine", cal->machine_key, sizeof cal->machine_key);
    get_str(j, "backend", cal->backend, sizeof cal->backend);
    get_str(j, "backend_version", cal->backend_version, sizeof cal->backend_version);
    get_str(j, "precision", cal->precision, sizeof cal->precision);
    get_str(j, "calibrated_at", cal->calibrated_at, sizeof cal->calibrated_at);
    get_str(j, "ntprof_version", cal->ntprof_version, sizeof cal->ntprof_version);
    get_str(j, "refitted_at", cal->refitted_at, sizeof cal->refitted_at);
    cal->threads = (int)get_int(j, "threads", 0, INT_MAX, &bad);
    cal->loadavg = get_num(j, "loadavg");
    cal->quick = json_is_true(json_object_get(j, "quick"));
    /* Calibrations from before passes were recorded timed each
     * configuration once. */
    cal->passes = (int)get_int(j, "passes", 0, INT_MAX, &bad);
    if (cal->passes < 1)
        cal->passes = 1;
    /* Absent before the hand-off looks: none seen. */
    cal->apart_timings = (int)get_int(j, "apart_timings", 0, INT_MAX, &bad);
    cal->apart_kept = (int)get_int(j, "apart_kept", 0, INT_MAX, &bad);
    /* Absent before the pace looks: none seen. */
    cal->slow_timings = (int)get_int(j, "slow_timings", 0, INT_MAX, &bad);
    cal->slow_kept = (int)get_int(j, "slow_kept", 0, INT_MAX, &bad);
    cal->pace_gflops = get_num(j, "pace_gflops");
    if (!(cal->pace_gflops >= 0))
        cal->pace_gflops = 0;
    /* Absent before the calibration probed the bus: not measured. */
    ntp__bandwidth_read_json(json_object_get(j, "memory_bus"), &cal->bus);
    /* Calibrations from before the kept pass was recorded kept the median
     * of the passes (one pass: its own). */
    get_str(j, "keep", cal->keep, sizeof cal->keep);
    if (!cal->keep[0])
        snprintf(cal->keep, sizeof cal->keep, "median");
    else if (!ntp_calibrate_keep_parse(cal->keep, &(int){0}))
        bad = true;
    /* Calibrations from before the mode was recorded timed warm. */
    get_str(j, "cache", cal->cache, sizeof cal->cache);
    if (!cal->cache[0])
        snprintf(cal->cache, sizeof cal->cache, "warm");
    /* "" in calibrations from before the ISA was recorded: unknown. */
    get_str(j, "cpu_flags", cal->cpu_flags, sizeof cal->cpu_flags);
    get_str(j, "cpu_signature", cal->cpu_signature, sizeof cal->cpu_signature);
    cal->peak_gflops = get_num(j, "peak_gflops");
    json_t *lv = json_object_get(j, "levels");
    size_t i;
    json_t *l;
    json_array_foreach(lv, i, l)
    {
        if (cal->n_levels >= NTP_PREDICT_MAX_LEVELS)
            break;
        int k = cal->n_levels++;
        get_str(l, "level", cal->levels[k].name, sizeof cal->levels[k].name);
        cal->levels[k].capacity_bytes = get_int(l, "capacity_bytes", 0, (int64_t)1 << 62, &bad);
        cal->levels[k].gbps = get_num(l, "gbps");
    }
    json_t *fam = json_object_get(j, "families");
    for (int f = 0; f < NTP_PREDICT_FAMILY_COUNT; f++) {
        json_t *x = json_object_get(fam, ntp_predict_family_name((ntp_predict_family)f));
        if (!json_is_object(x))
            continue;
        ntp_family_model *m = &cal->family[f];
        m->calibrated = true;
        m->samples = (int)get_int(x, "samples", 0, INT_MAX, &bad);
        m->coef[NTP_PREDICT_TERM_OVERHEAD] = get_num(x, "overhead_s");
        m->coef[NTP_PREDICT_TERM_COMPUTE] = get_num(x, "compute");
        m->coef[NTP_PREDICT_TERM_MEMORY] = get_num(x, "memory");
        /* Absent (a calibration made before the term): 0. */
        m->coef[NTP_PREDICT_TERM_STREAM] = get_num(x, "stream");
        m->median_error = get_num(x, "median_error");
        m->max_error = get_num(x, "max_error");
        m->cold_samples = (int)get_int(x, "cold_samples", 0, INT_MAX, &bad);
        m->cold_s = m->cold_samples > 0 ? get_num(x, "cold_s") : 0;
        if (!(m->cold_s >= 0 && m->cold_s < 1))
            bad = true;
        /* Absent (a calibration made before it was fitted): 0, as 1. */
        m->far_scale = get_num(x, "far_scale");
        if (!(m->far_scale >= 0 && m->far_scale <= NTP_PREDICT_FAR_SCALE_MAX))
            bad = true;
    }
    json_t *r = json_object_get(j, "reorder");
    if (json_is_object(r)) {
        ntp_family_model *m = &cal->reorder;
        m->calibrated = true;
        m->samples = (int)get_int(r, "samples", 0, INT_MAX, &bad);
        m->coef[NTP_PREDICT_TERM_OVERHEAD] = get_num(r, "overhead_s");
        m->coef[NTP_PREDICT_TERM_MEMORY] = get_num(r, "memory");
        m->coef[NTP_PREDICT_TERM_STREAM] = get_num(r, "stream");
        m->median_error = get_num(r, "median_error");
        m->max_error = get_num(r, "max_error");
    }
    json_t *w = json_object_get(j, "wake");
    if (json_is_object(w)) {
        cal->wake_samples = (int)get_int(w, "samples", 0, INT_MAX, &bad);
        cal->wake_s = get_num(w, "seconds");
        if (!(cal->wake_s >= 0 && cal->wake_s < 1))
            bad = true;
        /* Points by sleep: increasing sleep, each wake under a second. */
        json_t *pt;
        size_t q;
        json_array_foreach(json_object_get(w, "by_sleep"), q, pt)
        {
            double sl = json_number_value(json_array_get(pt, 0));
            double wk = json_number_value(json_array_get(pt, 1));
            int at = cal->n_wake_points;
            if (at >= NTP_WAKE_POINTS || json_array_size(pt) != 2 || !(sl > 0 && sl < 1e3) ||
                !(wk >= 0 && wk < 1) || (at > 0 && !(sl > cal->wake_points[at - 1][0]))) {
                bad = true;
                break;
            }
            cal->wake_points[at][0] = sl;
            cal->wake_points[at][1] = wk;
            cal->n_wake_points++;
        }
        if (cal->n_wake_points == 1)
            bad = true;
    }
    json_t *c;
    json_array_foreach(json_object_get(j, "gemv"), i, c)
    {
        if (cal->n_gemv >= NTP_PREDICT_MAX_GEMV)
            break;
        int64_t b = get_int(c, "bytes", 1, INT64_MAX, &bad);
        double g = get_num(c, "gbps");
        /* By size ascending, each rate a rate: interpolation needs both. */
        if (!(g > 0 && isfinite(g)) || (cal->n_gemv > 0 && b <= cal->gemv[cal->n_gemv - 1].bytes))
            bad = true;
        cal->gemv[cal->n_gemv].bytes = b;
        cal->gemv[cal->n_gemv++].gbps = g;
    }
    /* What a pass keeps: points by bytes ascending, and bytes the largest
     * of them that every point up to it keeps. */
    json_t *kp = json_object_get(j, "kept");
    if (json_is_object(kp)) {
        cal->kept.samples = (int)get_int(kp, "samples", 1, INT_MAX, &bad);
        cal->kept.bytes = get_int(kp, "bytes", 0, INT64_MAX, &bad);
        json_array_foreach(json_object_get(kp, "by_bytes"), i, c)
        {
            int at = cal->kept.n_points;
            double b = json_number_value(json_array_get(c, 0));
            double sh = json_number_value(json_array_get(c, 1));
            if (at >= NTP_KEPT_POINTS || json_array_size(c) != 2 || !(b > 0 && b < 1e15) ||
                !isfinite(sh) || (at > 0 && !(b >= cal->kept.points[at - 1][0]))) {
                bad = true;
                break;
            }
            cal->kept.points[at][0] = b;
            cal->kept.points[at][1] = sh;
            cal->kept.n_points++;
        }
        int64_t kb = 0;
        for (int k = 0; k < cal->kept.n_points && cal->kept.points[k][1] <= NTP_KEPT_SHARE; k++)
            kb = (int64_t)cal->kept.points[k][0];
        if (kb != cal->kept.bytes)
            bad = true;
    }
    json_array_foreach(json_object_get(j, "impl_corrections"), i, c)
    {
        if (cal->n_impls >= NTP_PREDICT_MAX_IMPLS)
            break;
        char name[16];
        get_str(c, "family", name, sizeof name);
        int f = 0;
        while (f < NTP_PREDICT_FAMILY_COUNT &&
               strcmp(name, ntp_predict_family_name((ntp_predict_family)f)) != 0)
            f++;
        double scale = get_num(c, "scale");
        if (f == NTP_PREDICT_FAMILY_COUNT || !(scale > 0))
            continue;
        ntp_impl_correction *ic = &cal->impls[cal->n_impls++];
        ic->family = (ntp_predict_family)f;
        get_str(c, "impl", ic->impl, sizeof ic->impl);
        ic->samples = (int)get_int(c, "samples", 0, INT_MAX, &bad);
        ic->scale = scale;
        /* A kernel's points by size: each a size in bytes and a log ratio
         * within NTP__PREDICT_POINT_LOG_MAX. */
        ic->n_points = 0;
        size_t q;
        json_t *pt;
        json_array_foreach(json_object_get(c, "points"), q, pt)
        {
            double b = json_number_value(json_array_get(pt, 0));
            double lg = json_number_value(json_array_get(pt, 1));
            if (ic->n_points >= NTP_PREDICT_MAX_POINTS || json_array_size(pt) != 2 ||
                !(b >= 1 && b < 1e15) || !(fabs(lg) <= NTP__PREDICT_POINT_LOG_MAX)) {
                bad = true;
                break;
            }
            ic->point_bytes[ic->n_points] = b;
            ic->point_log[ic->n_points++] = lg;
        }
    }
    return !bad;
}
