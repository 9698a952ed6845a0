/* The HTML report's building blocks, private to libntprof (docs/html.md).
 *
 * A page is one self-contained file: inline CSS, charts as inline SVG drawn
 * here, and a few lines of inline JavaScript that only check the charts
 * rendered (no network loads of any kind, so the file works offline and
 * from an e-mail attachment). Chart elements carry classes the rendering
 * test counts: svg.chart, .bar, .pt, .seg, .roof. */
#ifndef NTPROF_HTML_IMPL_H
#define NTPROF_HTML_IMPL_H

#include <stdbool.h>
#include <stdio.h>

#include "report-impl.h"

/* The page around the content: doctype, styles, title; then the closing
 * script and tags. */
void ntp__html_begin(FILE *f, const char *title);
void ntp__html_end(FILE *f);
/* Text and attribute values with &, <, >, " and ' escaped; bytes that are
 * not valid UTF-8 and control characters become '?'. */
void ntp__html_text(FILE *f, const char *s);
/* printf, then escaped. */
void ntp__html_textf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A table cell with a number (%.4g; "-" for NaN, infinity or `blank`). */
void ntp__html_num_cell(FILE *f, double v, bool blank);
/* A fill colour of the categorical palette (cycles). */
const char *ntp__html_color(int i);

/* A horizontal bar: label, value, optional whisker [lo, hi] (NaN: none),
 * a tooltip and an optional second value drawn as a thinner bar below (a
 * comparison's other run; NaN: none). */
typedef struct ntp_hbar {
    const char *label;
    double value, lo, hi;
    double value2, lo2, hi2;
    const char *tooltip;
} ntp_hbar;

/* Horizontal bars on a linear axis from 0. `series` names the one or two
 * series (a legend is drawn for two). */
void ntp__svg_hbars(FILE *f, const char *id, const char *unit, const ntp_hbar *bars, int n,
                    const char *series1, const char *series2);

/* Columns of stacked segments that each add up to 100%: one column per run
 * (a comparison's side-by-side % contribution, NTP's figure 9). Segment s
 * of column c has share[c * n_seg + s]; segments keep their colour across
 * columns. */
void ntp__svg_stacked(FILE *f, const char *id, const char *const *columns, int n_col,
                      const char *const *segments, int n_seg, const double *share);

/* A point of the roofline plot. */
typedef struct ntp_rpoint {
    const char *label;
    double intensity, gflops, attainable;
    bool marker; /* a marker segment (drawn as a diamond) */
} ntp_rpoint;

/* Log-log roofline: ceilings from rl (when available), points above. */
void ntp__svg_roofline(FILE *f, const char *id, const ntp_roofline *rl, const ntp_rpoint *pts,
                       int n);

/* A series against categorical x values: points with whiskers joined by a
 * line (a sweep's latency or throughput against one factor). NaN values
 * are gaps. */
void ntp__svg_series(FILE *f, const char *id, const char *xlabel, const char *ylabel,
                     const char *const *x, int n, const double *y, const double *lo,
                     const double *hi);

/* The prediction beside the measurement (predict-view.c): a predicted
 * value and its error cell (beyond +-25% marked); a run's summary line
 * (who: "A", or NULL); a run's section with its largest errors; a pair's,
 * both runs' predictions per layer, the largest misses first. */
void ntp__html_pred_cells(FILE *f, double pred_ms, double meas_ms, bool have);
void ntp__html_prediction_card(FILE *f, const ntp_run_prediction *p, const char *who);
void ntp__html_prediction_run(FILE *f, const ntp_run_result *r);
void ntp__html_prediction_pair(FILE *f, const ntp_comparison *c, const ntp_compare_pair *p,
                               const char *A, const char *B);

#endif
