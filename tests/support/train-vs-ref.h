/* The trainer's internal entry points the training tests drive, and one
 * check both backends' training tests share: a backend's backward against
 * the reference engine's on the same forward.
 *
 *   tv_backend_vs_ref("onednn", xml, NTP_LOSS_CROSS_ENTROPY, true, 6, by, n_by, NULL);
 *
 * runs one backward pass of xml on ref and on the backend, each from the
 * reference's forward, twice (the second reuses what the first built:
 * primitives, descriptors, buffers); asserts (cmocka) every gradient of the
 * backend equals the reference's within f32 rounding (1e-5 of the tensor's
 * largest, + 1e-8: a gradient that is 0 in exact arithmetic, a bias before
 * batch norm, is f32 rounding on the backend), at least min_compared of them
 * larger than 1e-4; then that a training run on the backend reports
 * `by` (layer name, engine pairs) as each listed layer's `backward_by`.
 * check, when not NULL, gets that run's result before it is freed. */
#ifndef NTP_TEST_TRAIN_VS_REF_H
#define NTP_TEST_TRAIN_VS_REF_H

#include <stdbool.h>

#include "ntprof/ntprof.h"
#include "train/train-impl.h"

ntp_status ntp__trainer_new_ex(ntp_ctx *ctx, const ntp_graph *g, const ntp_train_opts *o,
                               bool input_grads, ntp_trainer **out);
ntp_train_state *ntp__trainer_state(ntp_trainer *t);
void ntp__trainer_ref_forward(ntp_trainer *t);
ntp_status ntp__trainer_pass(ntp_ctx *ctx, ntp_trainer *t, bool backward, double *loss,
                             double *times);

void tv_backend_vs_ref(const char *backend, const char *xml, ntp_loss loss, bool input_grads,
                       int min_compared, const char *const *by, int n_by,
                       void (*check)(const ntp_train_result *r));

#endif
