/* ntprof: run reports read back, comparisons of runs, sweeps over
 * configurations, and the HTML report of each (docs/compare.md,
 * docs/sweep.md, docs/html.md). */
#ifndef NTPROF_COMPARE_H
#define NTPROF_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "ntprof/api.h"
#include "ntprof/graph.h"
#include "ntprof/report.h"
#include "ntprof/run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- run reports read back --------------------------------------------------------- */

/* Parse a run report written by ntp_report_write_run(..., NTP_FORMAT_JSON)
 * into a result that owns all its strings (ntp_run_result_free it). `name`
 * is used in messages. Fields this version does not know are ignored;
 * missing required ones are a PARSE_ERROR naming the field, a newer
 * schema_version is UNSUPPORTED. Per-iteration traces are not in reports
 * and stay empty. */
NTP_API ntp_status ntp_run_result_parse(ntp_ctx *ctx, const char *json, size_t len, const char *name,
                                        ntp_run_result **out);
/* The same from a file. */
NTP_API ntp_status ntp_run_result_load(ntp_ctx *ctx, const char *path, ntp_run_result **out);

/* --- comparisons ---------------------------------------------------------------------- */

typedef enum ntp_align {
    NTP_ALIGN_MATCHED,          /* the same name in both runs */
    NTP_ALIGN_RENAMED,          /* different names, same type, shape and FLOPs */
    NTP_ALIGN_ADDED,            /* only in the other run */
    NTP_ALIGN_MISSING,          /* only in the base run */
    /* Layers fused into one group in at least one of the runs, compared as
     * a whole: the group's time against the sum of its layers' times where
     * they ran alone (a fused layer has no time of its own). */
    NTP_ALIGN_FUSED
} ntp_align;

/* What changed about an aligned row besides its time (ntp_compare_row.changes). */
enum {
    NTP_CHANGE_TYPE = 1,        /* the same name, another layer type */
    NTP_CHANGE_BACKEND = 2,     /* run by another backend */
    NTP_CHANGE_IMPL = 4         /* another implementation ("brg:avx512_core" -> "gemm:jit") */
};

typedef enum ntp_verdict {
    NTP_VERDICT_NA,             /* nothing to compare (a side is absent or has no time) */
    NTP_VERDICT_SAME,           /* the 95% intervals of the medians overlap */
    NTP_VERDICT_FASTER,         /* the other run is faster: its interval lies below */
    NTP_VERDICT_SLOWER          /* the other run is slower: its interval lies above */
} ntp_verdict;

/* "matched", "renamed", "added", "missing", "fused". */
NTP_API const char *ntp_align_name(ntp_align a);
/* "n/a", "no significant difference", "faster", "slower". */
NTP_API const char *ntp_verdict_name(ntp_verdict v);
/* The significance rule on two timings: disjoint 95% intervals of the
 * medians decide, overlapping ones read "no significant difference". */
NTP_API ntp_verdict ntp_compare_stats(const ntp_stats *base, const ntp_stats *other);

/* One aligned row (a layer, a marker segment or the end-to-end pass). */
typedef struct ntp_compare_row {
    const char *name;           /* in the base run; in the other run for an added row */
    const char *other_name;     /* in the other run (differs for a renamed row), NULL if absent */
    const char *type;
    ntp_align align;
    int base_index, other_index; /* row positions in each run, -1 where absent */
    ntp_stats base, other;      /* zeros where absent */
    double delta_ms;            /* other median - base median */
    double speedup;             /* base / other median: above 1 the other is faster; 0: n/a */
    double speedup_lo, speedup_hi; /* from the intervals: base.lo / other.hi .. base.hi / other.lo */
    ntp_verdict verdict;
    double base_share, other_share; /* % contribution (0..1) in each run */
    /* A fused group (NTP_ALIGN_FUSED): its layers, the base run's in order
     * and then any only the other run has, and how many timed rows each
     * side's figures sum (1 for a fused group, one per layer where they ran
     * alone; 0: that side has no time). Its `name`, `type`, indices,
     * backend and impl are those of each side's first timed row. The sum's
     * median is the sum of the medians and its interval the sum of the
     * intervals' ends, a conservative interval. Other rows: no members, and
     * 1 or 0 rows a side. */
    int n_members;
    const char *const *members;
    int base_rows, other_rows;
    /* NTP_CHANGE_* flags; what each side had (NULL where a side is absent
     * or a report does not say). A missing implementation name is not a
     * change. */
    unsigned changes;
    const char *other_type;
    const char *base_backend, *other_backend;
    const char *base_impl, *other_impl;
} ntp_compare_row;

/* The base run (runs[0]) against one other run. */
typedef struct ntp_compare_pair {
    int base, other;            /* indices into runs */
    ntp_compare_row end_to_end;
    double throughput_ratio;    /* other / base samples per second */
    int n_rows;
    ntp_compare_row *rows;      /* largest regression (delta_ms) first */
    int n_markers;
    ntp_compare_row *markers;   /* marker segments aligned by name, in base order */
    int n_diffs;
    char **diffs;               /* "backend: ref -> onednn": topology, configuration and hardware */
    int n_fused_groups;         /* rows with NTP_ALIGN_FUSED */
    int n_changed;              /* rows with changes */
    const char **member_store;  /* internal: the rows' members point into it */
} ntp_compare_pair;

typedef struct ntp_comparison {
    int n_runs;
    const ntp_run_result *const *runs; /* borrowed: keep them alive */
    char **labels;              /* one per run: a file name, "run 12", ... */
    int n_pairs;                /* n_runs - 1 */
    ntp_compare_pair *pairs;
} ntp_comparison;

/* Compare runs[1..n-1] with runs[0]. labels may be NULL ("A", "B", ...). */
NTP_API ntp_status ntp_compare(ntp_ctx *ctx, const ntp_run_result *const *runs, const char *const *labels,
                               int n, ntp_comparison **out);
NTP_API void ntp_comparison_free(ntp_comparison *c);
NTP_API ntp_status ntp_compare_write(ntp_ctx *ctx, const ntp_comparison *c, ntp_format fmt, FILE *f);

/* --- sweeps ------------------------------------------------------------------------------ */

typedef enum ntp_sweep_design {
    NTP_SWEEP_OFAT,             /* one factor at a time around the first value of each */
    NTP_SWEEP_FULL              /* every combination (full factorial) */
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
    const char *backend;        /* NULL: not varied */
    bool set_precision;         /* precision varied: `precision` is its value */
    ntp_dtype precision;
    int64_t batch;              /* 0: not varied */
    int threads;                /* 0: not varied (varied thread counts are positive) */
    /* "NAME=VALUE" overrides of the topology's params, in factor order. */
    const char *const *set;
    int n_set;
} ntp_sweep_config;

/* Configuration c; its strings live as long as s. */
NTP_API ntp_status ntp_sweep_config_get(ntp_ctx *ctx, const ntp_sweep *s, int c, ntp_sweep_config *out);

/* Record what configuration c gave: a result (s takes it over) or an error. */
NTP_API void ntp_sweep_set_result(ntp_sweep *s, int c, ntp_run_result *r);
NTP_API ntp_status ntp_sweep_set_error(ntp_ctx *ctx, ntp_sweep *s, int c, const char *message);
NTP_API const ntp_run_result *ntp_sweep_result(const ntp_sweep *s, int c);
NTP_API const char *ntp_sweep_error(const ntp_sweep *s, int c);

/* Every configuration with every figure and its spread: table, JSON, CSV. */
NTP_API ntp_status ntp_sweep_write(ntp_ctx *ctx, const ntp_sweep *s, ntp_format fmt, FILE *f);

/* --- HTML -------------------------------------------------------------------------------- */

/* One self-contained HTML page (inline CSS, charts as inline SVG, no
 * network loads) for a run, a comparison or a sweep (docs/html.md). */
NTP_API ntp_status ntp_html_write_run(ntp_ctx *ctx, const ntp_run_result *r, FILE *f);
NTP_API ntp_status ntp_html_write_compare(ntp_ctx *ctx, const ntp_comparison *c, FILE *f);
NTP_API ntp_status ntp_html_write_sweep(ntp_ctx *ctx, const ntp_sweep *s, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
