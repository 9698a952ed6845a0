/* ntprof: neural-network topology profiler. The whole public API.
 *
 *   ntp_ctx *ctx = ntp_ctx_init();
 *   ntp_graph *g;
 *   if (ntp_graph_load(ctx, "models/deepspeech.xml", NULL, &g) != NTP_STATUS_OK)
 *       fprintf(stderr, "%s\n", ntp_ctx_errmsg(ctx));
 */
#ifndef NTPROF_NTPROF_H
#define NTPROF_NTPROF_H

#include "ntprof/api.h"
#include "ntprof/analyze.h"
#include "ntprof/compare.h"
#include "ntprof/context.h"
#include "ntprof/counters.h"
#include "ntprof/frameworks.h"
#include "ntprof/graph.h"
#include "ntprof/machine.h"
#include "ntprof/report.h"
#include "ntprof/run.h"
#include "ntprof/stats.h"
#include "ntprof/status.h"
#include "ntprof/store.h"
#include "ntprof/sweep.h"
#include "ntprof/generate.h"
#include "ntprof/train.h"
#include "ntprof/load.h"
#include "ntprof/predict.h"
#include "ntprof/cluster.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "0.1.0" */
NTP_API const char *ntp_version(void);
/* Short git revision the library was built from, "unknown" outside git. */
NTP_API const char *ntp_git_revision(void);

#ifdef __cplusplus
}
#endif
#endif
