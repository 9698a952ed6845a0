/* A live test's run of a small topology (live-run.h). */
#include <stdio.h>
#include <string.h>

#include "live-run.h"

void test_live_opts(ntp_run_opts *o, const char *backend, int iterations, double min_time_s)
{
    ntp_run_opts_default(o);
    o->backend = backend;
    o->warmup = 1;
    o->iterations = iterations;
    o->min_time_s = min_time_s;
    o->accuracy = false;
}

bool test_live_run(ntp_ctx *ctx, const char *xml, const char *name, const ntp_run_opts *o,
                   const char *what, ntp_graph **g, ntp_run_result **r)
{
    if (!ctx) {
        printf("FAIL: the %s run: no context\n", what);
        return false;
    }
    if ((!*g && ntp_graph_load_xml_memory(ctx, xml, strlen(xml), name, NULL, g)) ||
        ntp_run(ctx, *g, o, r)) {
        printf("FAIL: the %s run: %s\n", what, ntp_ctx_errmsg(ctx));
        return false;
    }
    return true;
}
