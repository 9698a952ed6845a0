/* Comparisons and sweeps, private side. */
#ifndef NTPROF_COMPARE_IMPL_H
#define NTPROF_COMPARE_IMPL_H

#include "report-impl.h"

/* The comparison ntp_compare returns (opaque in include/ntprof/compare.h). */
struct ntp_comparison {
    int n_runs;
    const ntp_run_result *const *runs; /* borrowed: the caller keeps them alive */
    char **labels;                     /* one per run */
    int n_pairs;                       /* n_runs - 1 */
    ntp_compare_pair *pairs;
    const char ***member_store; /* per pair: its rows' members point into it */
};

/* Fill the figures of a row from the two timings (either may be NULL for
 * an absent side) and their shares. */
void ntp__compare_fill(ntp_compare_row *row, const ntp_stats *base, const ntp_stats *other,
                       double base_share, double other_share);

/* "same", "faster", "slower", "n/a": the verdict in a table cell. */
const char *ntp__verdict_short(ntp_verdict v);

/* The prediction beside the measurement (predict-view.c, docs/predict.md). */
/* A run's prediction summary in one line: end to end, the shares within
 * +-10% and +-25%, and of the layers over 1% of the time. */
void ntp__prediction_summary(const ntp_run_prediction *p, char *buf, size_t len);
/* One side of an aligned row: its predicted and measured ms, false when
 * that side has no predicted row (absent, not predicted, a fused group). */
bool ntp__compare_side_pred(const ntp_comparison *c, const ntp_compare_pair *p,
                            const ntp_compare_row *row, bool other, double *pred_ms,
                            double *meas_ms);
/* Up to max indices into p->rows of rows predicted on either side, the
 * largest |predicted - measured| (ms, either side) first. */
int ntp__compare_pred_rows(const ntp_comparison *c, const ntp_compare_pair *p, int *idx, int max);
/* Runs the machine may have moved (contention, a low memory bus, CPUs
 * apart): each flagged run of the pair A/B with what was seen around it,
 * one line into buf; false when neither was flagged (compare-write.c). */
bool ntp__compare_machine_note(const char *A, const ntp_run_result *a, const char *B,
                               const ntp_run_result *b, char *buf, size_t len);

#endif
