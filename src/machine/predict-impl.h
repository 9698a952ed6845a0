/* Prediction internals shared by the calibration, the prediction, its
 * report and the history (predict.c, predict-calibrate.c,
 * src/report/predict-report.c, src/store/store-calib.c); the prediction's
 * own definition is prediction-impl.h. */
#ifndef NTP_MACHINE_PREDICT_IMPL_H
#define NTP_MACHINE_PREDICT_IMPL_H

#include <jansson.h>

#include "ntprof/analyze.h"
#include "ntprof/predict.h"
#include "measure/run-result-impl.h"
#include "machine/prediction-impl.h"

/* One layer's terms under a calibration's ceilings. */
typedef struct ntp__pfeat {
    ntp_predict_family family;
    int64_t flops, bytes;
    const char *level;           /* static or the calibration's */
    double x[NTP_PREDICT_TERMS]; /* 1, flops / peak, bytes / bandwidth: seconds */
    /* A recurrent layer's input GEMM under the fc family's terms (x is then
     * its recurrent part alone); 0 for every other layer. */
    double xin[NTP_PREDICT_TERMS];
    /* On the reference backend, a recurrent layer's recurrent product
     * under the fc family's terms: (T - 1) x directions calls of an fc of
     * N rows over one direction's R, summed (overhead: the calls), at the
     * level R stays in; x is then the cell alone. rec_rows: N;
     * rec_weight: R's bytes, one direction's, which each call reads (the
     * size its loop's rate is interpolated at, ntp_calibration.gemv). */
    double xrec[NTP_PREDICT_TERMS];
    int64_t rec_rows, rec_weight;
    /* The size its kernel's correction is read at: a recurrent layer's
     * one direction of W and R in bytes, a pooling layer's traffic; 0 for
     * every other layer. */
    int64_t size_bytes;
    /* On the reference backend, a convolution as ref-conv.c runs it: its
     * GEMMs (one per image and group) under the fc family's terms in xin,
     * its im2col copy under the copy family's in xcp (x keeps the conv
     * family's own roofline terms until ntp__predict_lowered_conv_terms
     * prices them, docs/predict.md). */
    double xcp[NTP_PREDICT_TERMS];
    /* The share of its family's cold start (ntp_family_model.cold_s) the
     * layer does not pay: 1 - DRAM's bandwidth over that of the level
     * holding what the network touches between two of its passes (its
     * code and state are read back from there); 0 in the calibration,
     * whose runs write over the caches, and in a warm calibration. */
    double cold_share;
    /* The part of x's memory term read from memory, past the last cache:
     * its family's far_scale multiplies it (ntp_family_model). Set for a
     * recurrent layer's weights read again at every step; 0 otherwise. */
    double far;
} ntp__pfeat;

/* The memory term x[NTP_PREDICT_TERM_MEMORY] as family m prices it: its
 * part read from memory (far, ntp__pfeat.far) times m's far_scale. */
double ntp__predict_memory_term(const ntp_family_model *m, const double *x, double far);
/* The family of layer i (execution order) of g. */
ntp_predict_family ntp__predict_family(const ntp_graph *g, int i);
/* Layer i's terms, from g's analysis a (same order), as implementation
 * impl runs it (NULL: unknown; it decides only how a recurrent layer's
 * input GEMM is priced, ntp__predict_rnn_per_step). */
void ntp__predict_features(const ntp_graph *g, const ntp_analysis *a, int i,
                           const ntp_calibration *cal, const char *impl, ntp__pfeat *out);
/* Whether a recurrent layer's kernel impl multiplies each step's input by
 * the input weights at every step, with the recurrent product (oneDNN's
 * brgemm cell), instead of one input GEMM over the sequence. */
bool ntp__predict_rnn_per_step(const char *impl);
/* The input GEMM of recurrent layer f under cal, priced with the fc
 * family's coefficients (seconds; on ref, with its recurrent product and
 * their loops' corrections); 0 for another layer, and where cal has no fc
 * fit, whose input-GEMM terms then join f's own. */
double ntp__predict_rnn_input_gemm_s(const ntp_calibration *cal, ntp__pfeat *f);
/* The rate of ref's dot-product loop over `bytes` of weights under cal
 * (GB/s): its calibrated points (ntp_calibration.gemv) interpolated
 * linearly in the logarithm of the size, the nearest one's beyond them; 0
 * where cal has none. */
double ntp__predict_gemv_gbps(const ntp_calibration *cal, int64_t bytes);
/* A convolution that ref lowers (xin set; no other layer) gets its terms
 * priced in place: x becomes (1, its GEMMs' seconds under the fc family
 * and ref:fc's correction, its im2col's under the copy family), which the
 * conv family's coefficients weigh; without an fc fit x stays its own.
 * xin and xcp are cleared. */
void ntp__predict_lowered_conv_terms(const ntp_calibration *cal, ntp__pfeat *f);
/* A copy of `bytes` (read and written together) under cal: a reorder row
 * (kind "reorder") under the reorder model where cal has one, else the
 * copy family's coefficients, or the measured bandwidth of the level
 * holding it where that family is not calibrated; NAN without a bandwidth.
 * reuse: what the pass touches between two uses of a reorder's
 * destination (ntp_prediction.reuse; 0: unknown, where its bytes fit). */
double ntp__predict_copy_ms(const ntp_calibration *cal, int64_t bytes, const char *kind,
                            int64_t reuse);
/* The terms of a reorder row of `bytes` under cal (1, 0, its seconds at
 * the bandwidths it moves at): its sample in a calibration, whose runs
 * write over the caches (its destination in memory, in network
 * conditions). */
void ntp__predict_copy_terms(const ntp_calibration *cal, int64_t bytes, double *x);
/* The key a correction is stored under: the implementation's name; for
 * the reference backend's "ref", "ref:OP" with the layer's op (op: its
 * type's name, "maxpool"); then, where the layout of the source it read
 * is known, "/LAYOUT" ("jit:avx512_core/blocked": oneDNN runs one kernel
 * name on plain NCHW and on a conv's blocked output at several times
 * apart). layout NULL: the one impl carries ("NAME/LAYOUT", a calibration
 * sample's), if any; "": none. (Calibrations of before kept "NAME@LEVEL"
 * keys, which no longer match: refit them.) */
void ntp__predict_impl_key(ntp_predict_family f, const char *impl, const char *op,
                           const char *layout, char *buf, size_t len);
/* The layout an implementation's name carries after its last '/' (a
 * calibration sample's "jit:avx512_core/nspc"): "plain", "blocked", "nspc"
 * or "strided", and *name_len the name's length before it; NULL (and the
 * whole length) where it carries none. */
const char *ntp__predict_layout_of(const char *impl, size_t *name_len);
/* The op a reference kernel's correction is keyed by for a layer of op
 * `op` whose input has `rows` rows (its elements over its last dim):
 * "gemv" for an fc of 1 to 3 rows, whose product ntp__ref_gemm runs as
 * dot products of contiguous rows (the loop of a recurrent step at batch
 * 1), else op: at 4 rows and more it packs the weights' panels. */
const char *ntp__predict_kernel_op(const char *op, int64_t rows);
/* The same for layer i (execution order) of g. */
const char *ntp__predict_layer_kernel_op(const ntp_graph *g, int i);
/* The correction of family f's time for layers of op `op` that
 * implementation impl runs reading its source in `layout` (NULL or "":
 * not known; ntp_calibration.impls): the key with the layout, else (a
 * calibration made before layouts were recorded) the name alone; 1 where
 * cal has neither. */
double ntp__predict_impl_scale(const ntp_calibration *cal, ntp_predict_family f, const char *impl,
                               const char *op, const char *layout);
/* The same at size `bytes` (a recurrent layer's one direction of W and
 * R, a pooling layer's traffic; 0: none): the correction's scale times
 * its factor at that size (ntp__predict_size_factor). */
double ntp__predict_impl_size_scale(const ntp_calibration *cal, ntp_predict_family f,
                                    const char *impl, const char *op, const char *layout,
                                    int64_t bytes);
/* The largest |log(measured / predicted)| a correction's point may hold:
 * no machine's kernel is off by e^3 (20x) from its family. A sample
 * further off is no point (the fit's outlier), and a stored point further
 * off is refused on load. */
#define NTP__PREDICT_POINT_LOG_MAX 3.0
/* Correction c's factor at size `bytes` from its points: exp of their
 * log ratios' mean weighted by a Gaussian of their distance in log(size)
 * (NTP_PREDICT_SIZE_WIDTH), the kernel's scale (log 0) weighing as a
 * point two widths away; 1 without points, size or c. */
double ntp__predict_size_factor(const ntp_impl_correction *c, int64_t bytes);
/* The same for a key ntp__predict_impl_key made. */
double ntp__predict_key_scale(const ntp_calibration *cal, ntp_predict_family f, const char *key);
/* The calibration a copy row on `backend` is priced with: that backend's,
 * else the requested one's (a copy is the machine's bandwidth), in a
 * prediction's rows and beside a run's. */
const ntp_calibration *ntp__predict_copy_cal(const ntp_prediction *p, const char *backend);
/* A copy row's (l->bytes, l->kind set) level, terms and time under cal,
 * as ntp__predict_copy_ms prices it; NAN and a note without a bandwidth. */
/* What a pass of g touches between two uses of a layer's weights: every
 * layer's weights and the activations' arena. */
int64_t ntp__predict_reuse(const ntp_graph *g, const ntp_analysis *a);
/* Whether cal prices a network's weights at the level its pass fits in,
 * not DRAM's: a network calibration that measured a pass keeps
 * NTP_KEPT_MARGIN times reuse (what the network's pass touches between
 * two uses of a layer's weights; ntp_calibration.kept). */
bool ntp__predict_weights_kept(const ntp_calibration *cal, int64_t reuse);
void ntp__predict_copy_row(const ntp_calibration *cal, int64_t reuse, ntp_layer_prediction *l);
/* p's copy rows (ntp_prediction.copies, predict-layout.c): g's plan
 * prepared with o's placements where o asks for it and this machine can
 * (where[p]: each layer's backend), else one row saying what is unknown;
 * their sum joins p->total_ms. */
ntp_status ntp__predict_copies(ntp_ctx *ctx, const ntp_graph *g, const ntp_predict_opts *o,
                               const char *const *where, ntp_prediction *p);
/* What one pass's run of a configuration gave: layer L's median (0: not
 * timed), its 95% interval and timed iterations, the backend that ran it
 * and its kernel, and the run's reorder rows of the calibrated backend
 * (bytes, seconds), samples of its layout changes. */
#define NTP__CALIBRATE_MAX_REORDERS 16
typedef struct ntp__calibrate_timed {
    double s, ci95_lo_s, ci95_hi_s;
    int n;
    char ran_on[32];
    char impl[48];
    int n_reorders;
    int64_t reorder_bytes[NTP__CALIBRATE_MAX_REORDERS];
    double reorder_s[NTP__CALIBRATE_MAX_REORDERS];
    bool left_out; /* over the FLOP budget: never run, in any pass */
    /* A hand-off look just before or after the run found the CPUs apart
     * (docs/run.md#handoff): its time is left out where another pass of
     * the configuration found them together. */
    bool apart;
    /* The pace of the CPU the timing ended on (ntp__pace_of; the slowest
     * CPU's where not known) just before and just after, the lower,
     * GFLOP/s; 0: not looked. Under NTP_CALIBRATE_SLOW_PACE times
     * the best of the calibration's looks, a timing is treated as an apart
     * one (merge_passes). */
    double pace;
    /* A wake configuration's mark, the layer ref ran before L: its median,
     * seconds (0: none, or not timed). */
    double mark_s;
} ntp__calibrate_timed;
/* A stand-in for a configuration's run (tests: a timing source whose
 * values are known): called where ntp_calibrate would run configuration
 * `config` (its index among those selected, in design order; xml its
 * markup) in pass `pass` (from 0), it fills t's timing fields; false: the
 * run failed (left out of that pass). */
typedef bool (*ntp__calibrate_runner)(void *user, int pass, int config, const char *xml,
                                      ntp__calibrate_timed *t);
/* ntp_calibrate with each run replaced by runner (NULL: the real runs):
 * the design, the passes, the features, the merging and the fit as they
 * are. */
ntp_status ntp__calibrate_with(ntp_ctx *ctx, const ntp_machine_info *m, const ntp_ceilings *c,
                               const ntp_calibrate_opts *opts, ntp__calibrate_runner runner,
                               void *user, ntp_calibration *out);
/* Time sample s's configuration once now, as cal's calibration timed it
 * (its cache mode, threads, precision and design), through runner when not
 * NULL (called with pass 0 and config index): the layer's median and kernel
 * into *tm (tm->s 0 when it did not run). */
ntp_status ntp__calibrate_time_sample(ntp_ctx *ctx, const ntp_machine_info *m,
                                      const ntp_calibration *cal, const ntp_calibration_sample *s,
                                      ntp__calibrate_runner runner, void *user, int index,
                                      ntp__calibrate_timed *tm);
/* Whether family f is in the comma-separated list (NULL: every family),
 * and the check that every name in it is a family (who: the message's
 * prefix, "calibrate"). */
bool ntp__calibrate_family_wanted(const char *list, ntp_predict_family f);
ntp_status ntp__calibrate_check_families(ntp_ctx *ctx, const char *list, const char *who);
/* ntp_calibration_recheck with each run replaced by runner (tests). */
ntp_status ntp__calibration_recheck_with(ntp_ctx *ctx, const ntp_machine_info *m,
                                         const ntp_calibration *cal,
                                         const ntp_calibration_sample *samples, int n,
                                         const ntp_recheck_opts *opts, ntp__calibrate_runner runner,
                                         void *user, ntp_recheck *out);
/* The buffer a network-conditions calibration writes over before each
 * pass: twice the last-level cache (m's, else the largest level of cal). */
int64_t ntp__calibrate_flush_bytes(const ntp_machine_info *m, const ntp_calibration *cal);
/* cal's corrections per implementation (ntp_calibration.impls) from its n
 * samples: terms X (row-major, NTP_PREDICT_TERMS a row), times t, family
 * and implementation of each, under cal's fitted families. A family whose
 * samples all ran one kernel, and a kernel with one sample, get none. */
void ntp__calibrate_impl_corrections(const double *X, const double *t,
                                     const ntp_predict_family *fam, const char *const *impl, int n,
                                     ntp_calibration *cal);
/* Refit each family whose kernels have corrections on its samples' times
 * divided by their kernel's correction, and correct again, in rounds: the
 * family's shape is fitted on comparable samples, not on a mix of kernels
 * several times apart. Then each family's fit quality as a prediction uses
 * it, corrections applied. Samples as ntp__calibrate_impl_corrections's
 * (impl: the keys); false when out of memory. */
bool ntp__calibrate_refit(const double *X, const double *t, const ntp_predict_family *fam,
                          const char *const *impl, int n, ntp_calibration *cal);
/* The ceilings' part of a calibration: peak at precision p, levels. */
void ntp__calibration_ceilings(const ntp_ceilings *c, ntp_dtype p, ntp_calibration *cal);

/* c's wake after its threads slept sleep_s seconds (0: not known): its
 * points interpolated in log(sleep), the nearer end outside them; wake_s
 * without points. */
double ntp__wake_after(const ntp_calibration *c, double sleep_s);

/* The calibration as JSON, and back (false: not a calibration). */
json_t *ntp__calibration_json(const ntp_calibration *cal);
bool ntp__calibration_from_json(json_t *j, ntp_calibration *cal);

#endif
