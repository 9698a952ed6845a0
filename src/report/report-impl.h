/* Helpers shared by the report writers, private to libntprof: the generic
 * table, CSV and JSON writers (core/writers-impl.h) and what reports show
 * of a run (src/report/fields.c). */
#ifndef NTPROF_REPORT_IMPL_H
#define NTPROF_REPORT_IMPL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ntprof/ntprof.h"
#include "measure/run-result-impl.h"

/* The tables, CSV and JSON writers shared with the other layers. */
#include "core/writers-impl.h"

/* --- what reports show of a run (src/report/fields.c) ------------------------ */
/* A run's thread count as reports show it: "2", or "2 (all cores)" for
 * the default (threads 0: the online CPUs; under --pin the backends take
 * the pinned CPUs' count). */
const char *ntp__threads_text(const ntp_run_result *r, char *buf, size_t len);
/* "1x3x224x224"; "scalar" for rank 0. */
const char *ntp__shape_x(const ntp_shape *s, char *buf, size_t len);
/* An array of the dims. */
json_t *ntp__json_shape(const ntp_shape *s);
/* A run's device memory as a JSON object (weight, activation, workspace
 * and peak bytes); the caller adds it only when ntp_memory_has_device. */
json_t *ntp__device_memory_json(bool *ok, const ntp_memory_result *m);

/* Each reason a layer is not predicted, once, with the layers it holds
 * for: "<lead><note>: name, name, ...", wrapped. text(layers, i, 0) is
 * layer i's note ("" when predicted), text(layers, i, 1) its name (NULL:
 * "?"). */
void ntp__put_reasons(FILE *f, const char *lead, const void *layers, int n,
                      const char *(*text)(const void *layers, int i, int what));

/* A run's prediction beside its measurement, when the bandwidth probes
 * around it read low or high (docs/predict.md, docs/run.md#contention),
 * its CPUs did not share a cache (docs/run.md#handoff) or a CPU ran slowed
 * under some of its iterations (docs/run.md#pace, with the prediction
 * against the others): one line saying that a layer's error may then be
 * the machine's (low, apart, slowed) or the stored ceilings' (high), not
 * the model's (predict-view.c); false when there is nothing to say. */
bool ntp__prediction_machine_note(const ntp_run_result *r, char *buf, size_t len);
/* Whether r ran with every CPU slowed throughout, as its prediction's
 * calibration paced the machine: its best pace look under
 * NTP_PACE_SLOW_SHARE x the calibration's (docs/run.md#pace); false where
 * either was not looked. The note above says it; the JSON carries it
 * (prediction.below_calibration_pace). */
bool ntp__prediction_below_pace(const ntp_run_result *r);
/* A run whose iterations the hand-off looks split between the CPUs
 * sharing a cache and not (docs/run.md#handoff): the prediction against
 * each placement's end-to-end median, one line ("while the CPUs shared a
 * cache, measured ... (predicted +3.7%); while apart, ..."); false when
 * the run was not split, its time did not follow the split
 * (ntp_handoff_check.unconfirmed) or it has no prediction. */
bool ntp__prediction_placement_line(const ntp_run_result *r, char *buf, size_t len);

/* One of a run's environment lines: "libraries", "cpu", "thread pools'
 * wait policy", "contention", "memory bandwidth", "cpu hand-off", "hand-off
 * moved", "cpu pace". */
#define NTP_ENV_LINES 8
typedef struct ntp__env_line {
    const char *label;
    char text[2048];
} ntp__env_line;
/* The run's environment lines, in the order the table prints them (those
 * with nothing to say left out); returns how many (run.c). */
int ntp__run_env_lines(const ntp_run_result *r, ntp__env_line out[NTP_ENV_LINES]);

#endif
