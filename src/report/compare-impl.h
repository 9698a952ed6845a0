/* Comparisons and sweeps, private side. */
#ifndef NTPROF_COMPARE_IMPL_H
#define NTPROF_COMPARE_IMPL_H

#include "report-impl.h"

/* Fill the figures of a row from the two timings (either may be NULL for
 * an absent side) and their shares. */
void ntp__compare_fill(ntp_compare_row *row, const ntp_stats *base, const ntp_stats *other,
                       double base_share, double other_share);

/* "same", "faster", "slower", "n/a": the verdict in a table cell. */
const char *ntp__verdict_short(ntp_verdict v);

#endif
