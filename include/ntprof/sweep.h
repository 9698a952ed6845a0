/* ntprof: sweeps over configurations of one topology (docs/sweep.md).
 * Their writers (table, JSON, CSV, HTML) are in ntprof/report.h. */
#ifndef NTPROF_SWEEP_H
#define NTPROF_SWEEP_H

#include "ntprof/api.h"
#include "ntprof/graph.h"
#include "ntprof/run.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ntp_sweep_design {
    NTP_SWEEP_OFAT, /* one factor at a time around the first value of each */
    NTP_SWEEP_FULL  /* every combination (full factorial) */
} ntp_sweep_design;

/* "ofat", "full". */
NTP_API ntp_status ntp_sweep_design_parse(const char *s, ntp_sweep_design *out);

typedef struct ntp_sweep ntp_sweep;

/* A sweep over the topology g loaded from `path` (its params are the
 * factors besides backend, precision, batch and threads). */
NTP_API ntp_status ntp_sweep_init(ntp_ctx *ctx, const ntp_graph *g, const char *path,
                                  ntp_sweep_design design, ntp_sweep **out);
NTP_API void ntp_sweep_free(ntp_sweep *s);
/* "NAME=v1,v2,...": NAME is backend, precision, batch, threads or a param
 * of the topology. Values are checked (integers, known precisions and
 * backends) and may not repeat. */
NTP_API ntp_status ntp_sweep_add_factor(ntp_ctx *ctx, ntp_sweep *s, const char *spec);
/* Expand the factors into configurations (after the last factor). */
NTP_API ntp_status ntp_sweep_expand(ntp_ctx *ctx, ntp_sweep *s);

NTP_API ntp_sweep_design ntp_sweep_get_design(const ntp_sweep *s);
NTP_API const char *ntp_sweep_source(const ntp_sweep *s);
NTP_API int ntp_sweep_factor_count(const ntp_sweep *s);
NTP_API const char *ntp_sweep_factor_name(const ntp_sweep *s, int f);
NTP_API int ntp_sweep_value_count(const ntp_sweep *s, int f);
NTP_API const char *ntp_sweep_value(const ntp_sweep *s, int f, int v);
NTP_API int ntp_sweep_config_count(const ntp_sweep *s);
/* Which value of factor f configuration c uses. */
NTP_API int ntp_sweep_config_value(const ntp_sweep *s, int c, int f);
/* "batch=2 threads=1" (the baseline of an OFAT sweep is configuration 0). */
NTP_API const char *ntp_sweep_config_label(const ntp_sweep *s, int c);
/* What one configuration sets: the factors it varies, each at its value
 * (ntp_run_opts and ntp_load_opts fields, and param overrides); a field
 * no factor varies keeps its zero. Running it is the caller's (the CLI
 * runs each in a process of its own). */
typedef struct ntp_sweep_config {
    const char *backend; /* NULL: not varied */
    bool set_precision;  /* precision varied: `precision` is its value */
    ntp_dtype precision;
    int64_t batch; /* 0: not varied */
    int threads;   /* 0: not varied (varied thread counts are positive) */
    /* "NAME=VALUE" overrides of the topology's params, in factor order. */
    const char *const *set;
    int n_set;
} ntp_sweep_config;

/* Configuration c; its strings live as long as s. */
NTP_API ntp_status ntp_sweep_config_get(ntp_ctx *ctx, const ntp_sweep *s, int c,
                                        ntp_sweep_config *out);

/* Record what configuration c gave: a result (s takes it over) or an error. */
NTP_API void ntp_sweep_set_result(ntp_sweep *s, int c, ntp_run_result *r);
NTP_API ntp_status ntp_sweep_set_error(ntp_ctx *ctx, ntp_sweep *s, int c, const char *message);
NTP_API const ntp_run_result *ntp_sweep_result(const ntp_sweep *s, int c);
NTP_API const char *ntp_sweep_error(const ntp_sweep *s, int c);

#ifdef __cplusplus
}
#endif
#endif
