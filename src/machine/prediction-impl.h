/* The prediction's definition, private to libntprof: include/ntprof/predict.h
 * declares ntp_prediction opaque and reads it through accessors
 * (src/machine/prediction.c). It carries the library's own state besides
 * what a caller reads: the calibrations of the backends layers are handed
 * to and every layer's time under each (cals, cal_ms), with which
 * ntp_prediction_apply re-prices a layer a run places elsewhere. The
 * library (machine fills it, report writes it) reads and fills the fields
 * directly; tests that fabricate a prediction include this header. */
#ifndef NTPROF_MACHINE_PREDICTION_IMPL_H
#define NTPROF_MACHINE_PREDICTION_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include "ntprof/predict.h"

struct ntp_prediction {
    const char *topology;
    int64_t batch;
    ntp_calibration cal;
    bool roofline_only; /* from ceilings alone (--ceilings) */
    int n_layers;
    ntp_layer_prediction *layers;
    double total_ms; /* sum of the predicted rows, layers and copies */
    /* Families the model needed that the calibration lacks, comma-separated
     * ("" for none), and how many layers they cover. */
    char uncalibrated[256];
    int n_unpredicted;
    /* cals[0] is cal; the others are those given to ntp_predict_placed.
     * cal_ms[k * n_layers + i]: layer i's time under cals[k] (NAN where
     * that calibration does not predict it), for a run that places a
     * layer elsewhere than the prediction did. */
    int n_cals;
    ntp_calibration *cals;
    double *cal_ms;
    /* The rows a run adds besides its layers (ntp_predict_opts.reorders):
     * the backend's reorders and the engine's conversions, named and sized
     * as the run names and sizes them, each priced as a copy of its bytes
     * under its backend's calibration and counted in total_ms (copies_ms of
     * it). When they cannot be known (another machine's calibration, the
     * plan could not be prepared, not asked for), one row named "reorders"
     * with predicted_ms NAN and a note saying what is unknown. */
    int n_copies;
    ntp_layer_prediction *copies;
    /* What a pass touches between two uses of one layer's buffers (its
     * weights and the arena, network_reuse): where a copy row's
     * destination was left (ntp__predict_copy_ms). */
    int64_t reuse;
    double copies_ms;
    /* Predicted as `run --fuse` runs it (ntp_predict_opts.fuse), and how
     * many layers are fused into another. */
    bool fused;
    int n_fused;
    /* Where the copy rows come from when the calibration is another
     * machine's: this machine's plan, and why the other machine's may
     * differ (its ISA or its backend's version); "" otherwise. */
    char copies_note[256];
    /* Where the layers' weights come from between two passes, as the
     * calibration measured what a pass keeps (ntp__predict_weights_kept);
     * "" where it did not. */
    char weights_note[256];
    /* The machine's pace as a paced calibration timed it: cal's, else an
     * other's, else ntp_predict_opts.paced's (ntp_calibration.pace_gflops);
     * 0 where none, and the backend of the calibration it is from. */
    double pace_gflops;
    char pace_backend[32];
};

#endif
