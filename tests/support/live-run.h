/* A live test's run of a small topology (the contention checks' tests:
 * test_pace_check, test_handoff_check, test_bandwidth_check): the options
 * such a run starts from, and the run with its failure printed. Every C
 * file of tests/support is linked into every test. */
#ifndef NTPROF_TEST_LIVE_RUN_H
#define NTPROF_TEST_LIVE_RUN_H

#include <stdbool.h>

#include "ntprof/ntprof.h"

/* ntp_run_opts_default, then on `backend` one warm-up iteration, at least
 * `iterations` measured ones over at least min_time_s, no accuracy pass. */
void test_live_opts(ntp_run_opts *o, const char *backend, int iterations, double min_time_s);

/* Runs the topology `xml` (loaded into *g as `name` unless *g is set)
 * under o into *r; false after printing "FAIL: the WHAT run: ERROR". */
bool test_live_run(ntp_ctx *ctx, const char *xml, const char *name, const ntp_run_opts *o,
                   const char *what, ntp_graph **g, ntp_run_result **r);

#endif
