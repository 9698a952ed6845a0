/* ntprof: run reports read back and comparisons of runs (docs/compare.md).
 * Their writers (table, JSON, CSV, HTML) are in ntprof/report.h. */
#ifndef NTPROF_COMPARE_H
#define NTPROF_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include "ntprof/api.h"
#include "ntprof/run.h"
#include "ntprof/stats.h"

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
NTP_API ntp_status ntp_run_result_parse(ntp_ctx *ctx, const char *json, size_t len,
                                        const char *name, ntp_run_result **out);
/* The same from a file. */
NTP_API ntp_status ntp_run_result_load(ntp_ctx *ctx, const char *path, ntp_run_result **out);

/* --- comparisons ---------------------------------------------------------------------- */

typedef enum ntp_align {
    NTP_ALIGN_MATCHED, /* the same name in both runs */
    NTP_ALIGN_RENAMED, /* different names, same type, shape and FLOPs */
    NTP_ALIGN_ADDED,   /* only in the other run */
    NTP_ALIGN_MISSING, /* only in the base run */
    /* Layers fused into one group in at least one of the runs, compared as
     * a whole: the group's time against the sum of its layers' times where
     * they ran alone (a fused layer has no time of its own). */
    NTP_ALIGN_FUSED
} ntp_align;

/* What changed about an aligned row besides its time (ntp_compare_row.changes). */
enum {
    NTP_CHANGE_TYPE = 1,    /* the same name, another layer type */
    NTP_CHANGE_BACKEND = 2, /* run by another backend */
    NTP_CHANGE_IMPL = 4     /* another implementation ("brg:avx512_core" -> "gemm:jit") */
};

typedef enum ntp_verdict {
    NTP_VERDICT_NA,     /* nothing to compare (a side is absent or has no time) */
    NTP_VERDICT_SAME,   /* the 95% intervals of the medians overlap */
    NTP_VERDICT_FASTER, /* the other run is faster: its interval lies below */
    NTP_VERDICT_SLOWER  /* the other run is slower: its interval lies above */
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
    const char *name;       /* in the base run; in the other run for an added row */
    const char *other_name; /* in the other run (differs for a renamed row), NULL if absent */
    const char *type;
    ntp_align align;
    int base_index, other_index; /* row positions in each run, -1 where absent */
    ntp_stats base, other;       /* zeros where absent */
    double delta_ms;             /* other median - base median */
    double speedup;              /* base / other median: above 1 the other is faster; 0: n/a */
    double speedup_lo,
        speedup_hi; /* from the intervals: base.lo / other.hi .. base.hi / other.lo */
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
    int base, other; /* indices into runs */
    ntp_compare_row end_to_end;
    double throughput_ratio; /* other / base samples per second */
    int n_rows;
    ntp_compare_row *rows; /* largest regression (delta_ms) first */
    int n_markers;
    ntp_compare_row *markers; /* marker segments aligned by name, in base order */
    int n_diffs;
    char **diffs;       /* "backend: ref -> onednn": topology, configuration and hardware */
    int n_fused_groups; /* rows with NTP_ALIGN_FUSED */
    int n_changed;      /* rows with changes */
} ntp_compare_pair;

/* What ntp_compare found: opaque; it owns its pairs, their rows and the
 * labels, and borrows the runs (keep them alive until ntp_comparison_free). */
typedef struct ntp_comparison ntp_comparison;

/* Compare runs[1..n-1] with runs[0]. labels may be NULL ("A", "B", ...). */
NTP_API ntp_status ntp_compare(ntp_ctx *ctx, const ntp_run_result *const *runs,
                               const char *const *labels, int n, ntp_comparison **out);
/* The runs compared, as given (run 0 the base), and their labels: a file
 * name, "run 12", or "A", "B", ... Run i of 0 .. count - 1; NULL for any
 * other i. */
NTP_API int ntp_comparison_run_count(const ntp_comparison *c);
NTP_API const ntp_run_result *ntp_comparison_run(const ntp_comparison *c, int i);
NTP_API const char *ntp_comparison_label(const ntp_comparison *c, int i);
/* The base run against each other run: pair i compares run i + 1 with
 * run 0 (run count - 1 pairs); NULL for any other i. The pair is valid
 * until ntp_comparison_free. */
NTP_API int ntp_comparison_pair_count(const ntp_comparison *c);
NTP_API const ntp_compare_pair *ntp_comparison_pair(const ntp_comparison *c, int i);
NTP_API void ntp_comparison_free(ntp_comparison *c);

#ifdef __cplusplus
}
#endif
#endif
