/* The hand-made calibration the prediction tests price layers with, and the
 * times it gives, worked out in the test from the tensors' sizes (the
 * truth: the arithmetic below, not the model's code). Every C file of
 * tests/support is linked into every test. */
#ifndef NTPROF_TEST_PREDICT_HAND_H
#define NTPROF_TEST_PREDICT_HAND_H

#include <stdbool.h>
#include <stdint.h>

#include "ntprof/ntprof.h"

/* Peak 100 GFLOP/s, an L2 of 64 KiB at 200 GB/s, DRAM at 20 GB/s; every
 * family t = 1 us + compute + memory; with fit_copies, copies t = 2 us +
 * 3 x memory, else the copy family is not fitted (priced at the bandwidth
 * alone). */
void test_hand_calibration(ntp_calibration *c, const char *backend, const char *machine,
                           bool fit_copies);

/* A layer of `flops` and `bytes` of traffic under that calibration, in ms. */
double test_hand_ms(int64_t flops, int64_t bytes);

/* A copy of `bytes` under it, in ms: fitted (fit_copies) or not. */
double test_hand_copy_ms(bool fitted, int64_t bytes);

/* A reorder row of `bytes` under the reorder model test_hand_reorder sets
 * (t = 5 us + 4 x memory), in ms. */
void test_hand_reorder(ntp_calibration *c);
double test_hand_reorder_ms(int64_t bytes);

/* The row of p's layers (or, with copies, of its copy rows) named `name`,
 * or NULL. */
const ntp_layer_prediction *test_find_prediction(const ntp_prediction *p, bool copies,
                                                 const char *name);

#endif
