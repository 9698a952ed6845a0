/* The HTML report's page and charts: inline CSS, SVG generated here, and a
 * render check in a few lines of inline JavaScript (docs/html.md).
 *
 * SVG drawn in C keeps the report one file with no dependency: no chart
 * library to inline, nothing fetched, and the same numbers the tables show.
 * Coordinates are written with one decimal; labels are escaped. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "html-impl.h"

static const char style[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;"
    "color:#1d2330;background:#f6f7f9}"
    "main{max-width:1060px;margin:0 auto;padding:20px 24px 60px}"
    "h1{font-size:22px;margin:8px 0 4px}h2{font-size:17px;margin:28px 0 8px;"
    "border-bottom:1px solid #d8dce3;padding-bottom:4px}"
    "h3{font-size:15px;margin:18px 0 6px}"
    ".meta{color:#566074;margin:2px 0}"
    ".cards{display:flex;flex-wrap:wrap;gap:10px;margin:14px 0}"
    ".card{background:#fff;border:1px solid #d8dce3;border-radius:6px;padding:8px 14px;"
    "min-width:150px}.card b{display:block;font-size:19px}.card span{color:#566074;font-size:12px}"
    "svg.chart{background:#fff;border:1px solid #d8dce3;border-radius:6px;display:block;"
    "margin:6px 0 14px;max-width:100%;height:auto}"
    "svg text{font:11px system-ui,sans-serif;fill:#1d2330}svg .axis{stroke:#8a93a5}"
    "svg .grid{stroke:#e6e9ee}svg .whisker{stroke:#1d2330;stroke-width:1}"
    "svg .roof{fill:none;stroke:#c0392b;stroke-width:2}"
    "svg .roof.cache{stroke:#e59866;stroke-width:1.2;stroke-dasharray:5 3}"
    "svg .line{fill:none;stroke:#2e86c1;stroke-width:1.5}"
    "table{border-collapse:collapse;background:#fff;font-size:12.5px;margin:6px 0 14px}"
    "th,td{border:1px solid #d8dce3;padding:3px 7px;text-align:right;white-space:nowrap}"
    "th{background:#eef1f5}td.l,th.l{text-align:left}"
    ".slower{color:#b03a2e;font-weight:600}.faster{color:#1e8449;font-weight:600}"
    ".warn{background:#fff8e1;border:1px solid #f0d58c;border-radius:6px;padding:6px 12px;"
    "margin:6px 0}.note{color:#566074;font-size:12.5px}"
    ".scroll{overflow-x:auto}";

/* Each chart must have drawn something: the script measures every chart
 * and its marks after layout and writes the counts on <body>, which a
 * headless browser's DOM dump shows (tests/test_html_render.sh). */
static const char script[] =
    "(function(){var c=document.querySelectorAll('svg.chart'),drawn=0;"
    "c.forEach(function(s){var b=s.getBBox();if(b.width>0&&b.height>0)drawn++;});"
    "function n(q){var k=0;document.querySelectorAll(q).forEach(function(e){var b=e.getBBox();"
    "if(b.width>0||b.height>0)k++;});return k;}"
    "document.body.setAttribute('data-render','charts='+c.length+' drawn='+drawn+' bars='+"
    "n('svg.chart .bar')+' points='+n('svg.chart .pt')+' segments='+n('svg.chart .seg')+"
    "' roofs='+n('svg.chart .roof'));})();";

void ntp__html_begin(FILE *f, const char *title)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
          "<meta name=\"generator\" content=\"ntprof\"><title>",
          f);
    ntp__html_text(f, title);
    fprintf(f, "</title><style>%s</style></head>\n<body><main>\n", style);
}

void ntp__html_end(FILE *f)
{
    fprintf(f, "</main>\n<script>%s</script>\n</body></html>\n", script);
}

/* Length of the valid UTF-8 sequence at s, 0 if invalid. */
static size_t utf8_len(const unsigned char *s)
{
    size_t n = s[0] < 0x80           ? 1
               : (s[0] >> 5) == 0x6  ? 2
               : (s[0] >> 4) == 0xE  ? 3
               : (s[0] >> 3) == 0x1E ? 4
                                     : 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

void ntp__html_text(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        size_t n = utf8_len(p);
        if (n == 0 || (n == 1 && (*p < 0x20 || *p == 0x7F) && *p != '\n' && *p != '\t')) {
            fputc('?', f);
            p++;
            continue;
        }
        if (n > 1) {
            fwrite(p, 1, n, f);
        } else {
            switch (*p) {
            case '&': fputs("&amp;", f); break;
            case '<': fputs("&lt;", f); break;
            case '>': fputs("&gt;", f); break;
            case '"': fputs("&quot;", f); break;
            case '\'': fputs("&#39;", f); break;
            default: fputc(*p, f);
            }
        }
        p += n;
    }
}

void ntp__html_textf(FILE *f, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    ntp__html_text(f, buf);
}

void ntp__html_num_cell(FILE *f, double v, bool blank)
{
    if (blank || !isfinite(v))
        fputs("<td>-</td>", f);
    else
        fprintf(f, "<td>%.4g</td>", v);
}

const char *ntp__html_color(int i)
{
    /* Distinguishable for most colour vision (Tableau 10, then greys). */
    static const char *const palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                          "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                          "#9c755f", "#bab0ac", "#86bcb6", "#d4a6c8"};
    int n = (int)(sizeof palette / sizeof palette[0]);
    return palette[((i % n) + n) % n];
}

/* A round number at or above v, for axis ends and ticks: 1, 2, 5 x 10^k. */
static double nice_ceil(double v)
{
    if (!(v > 0) || !isfinite(v))
        return 1;
    double e = pow(10, floor(log10(v)));
    double m = v / e;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * e;
}

static bool finite_pos(double v)
{
    return isfinite(v) && v > 0;
}

/* --- horizontal bars -------------------------------------------------------------------- */

void ntp__svg_hbars(FILE *f, const char *id, const char *unit, const ntp_hbar *bars, int n,
                    const char *series1, const char *series2)
{
    const double W = 1000, label_w = 230, right = 70, top = series2 ? 34 : 24;
    const double row = series2 ? 26 : 18;
    /* The axis follows the bars, not the whiskers: with few iterations an
     * interval can reach a far outlier and would squash every bar. A
     * whisker past the end is cut there and ends in an arrowhead. */
    double max = 0;
    for (int i = 0; i < n; i++) {
        const double v[] = {bars[i].value, bars[i].value2};
        for (int k = 0; k < 2; k++)
            if (finite_pos(v[k]) && v[k] > max)
                max = v[k];
    }
    max = nice_ceil(max * 1.1);
    double H = top + row * n + 28, plot_w = W - label_w - right;
    fprintf(f, "<svg class=\"chart\" id=\"");
    ntp__html_text(f, id);
    fprintf(f, "\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\">\n", W, H,
            W, H);
    if (series2) {
        fprintf(f,
                "<rect x=\"%.1f\" y=\"8\" width=\"12\" height=\"10\" fill=\"%s\"/>"
                "<text x=\"%.1f\" y=\"17\">",
                label_w, ntp__html_color(0), label_w + 16);
        ntp__html_text(f, series1);
        /* The second entry after the first's text, at about 6.5 px per
         * character of the 11 px font. */
        double x2 = label_w + 16 + 6.5 * (double)strlen(series1 ? series1 : "") + 24;
        fprintf(f,
                "</text><rect x=\"%.1f\" y=\"8\" width=\"12\" height=\"10\" fill=\"%s\"/>"
                "<text x=\"%.1f\" y=\"17\">",
                x2, ntp__html_color(1), x2 + 16);
        ntp__html_text(f, series2);
        fputs("</text>\n", f);
    }
    /* Grid and axis labels at quarters of the range. */
    for (int t = 0; t <= 4; t++) {
        double x = label_w + plot_w * t / 4;
        fprintf(f,
                "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.3g</text>\n",
                x, top - 4, x, top + row * n, x, top + row * n + 14, max * t / 4);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", W - 8, H - 4);
    ntp__html_text(f, unit);
    fputs("</text>\n", f);
    for (int i = 0; i < n; i++) {
        const ntp_hbar *b = &bars[i];
        double y = top + row * i;
        fprintf(f, "<g><title>");
        ntp__html_text(f, b->tooltip ? b->tooltip : b->label);
        fprintf(f, "</title><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", label_w - 6,
                y + (series2 ? 11 : 12));
        /* Long names are cut; the tooltip has them whole. */
        char cut[40];
        size_t len = strlen(b->label ? b->label : "");
        snprintf(cut, sizeof cut, "%s", b->label ? b->label : "");
        if (len >= sizeof cut - 1) {
            size_t k = sizeof cut - 5;
            while (k > 0 && ((unsigned char)cut[k] & 0xC0) == 0x80)
                k--;
            memcpy(cut + k, "...", 4);
        }
        ntp__html_text(f, cut);
        fputs("</text>", f);
        const double vals[2][3] = {{b->value, b->lo, b->hi}, {b->value2, b->lo2, b->hi2}};
        for (int s = 0; s < (series2 ? 2 : 1); s++) {
            double v = vals[s][0], h = series2 ? 10 : 13, by = y + 2 + s * 11;
            if (!isfinite(v) || v < 0)
                continue;
            double w = plot_w * v / max;
            /* A visible sliver for values too small for a pixel. */
            if (w < 1 && v > 0)
                w = 1;
            fprintf(f,
                    "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                    "fill=\"%s\"/>",
                    label_w, by, w, h, ntp__html_color(s));
            double lo = vals[s][1], hi = vals[s][2];
            bool clipped = false;
            if (isfinite(lo) && isfinite(hi) && hi > lo) {
                clipped = hi > max;
                double x1 = label_w + plot_w * fmin(lo, max) / max;
                double x2 = label_w + plot_w * fmin(hi, max) / max;
                if (clipped)
                    fprintf(f,
                            "<path class=\"whisker\" d=\"M%.1f %.1fH%.1fM%.1f %.1fv%.1fM%.1f "
                            "%.1fl-5 -3M%.1f %.1fl-5 3\"/>",
                            x1, by + h / 2, x2, x1, by + 2, h - 4, x2, by + h / 2, x2, by + h / 2);
                else
                    fprintf(f,
                            "<path class=\"whisker\" d=\"M%.1f %.1fH%.1fM%.1f %.1fv%.1fM%.1f "
                            "%.1fv%.1f\"/>",
                            x1, by + h / 2, x2, x1, by + 2, h - 4, x2, by + 2, h - 4);
            }
            /* The value goes right of the bar or its whisker, whichever
             * reaches further, so the two never overlap. */
            double end = w;
            if (isfinite(hi) && hi > v)
                end = plot_w * fmin(hi, max) / max;
            if (clipped)
                end = plot_w;
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%.4g</text>", label_w + end + 4, by + h - 2, v);
        }
        fputs("</g>\n", f);
    }
    fputs("</svg>\n", f);
}

/* --- stacked 100% columns ---------------------------------------------------------------- */

void ntp__svg_stacked(FILE *f, const char *id, const char *const *columns, int n_col,
                      const char *const *segments, int n_seg, const double *share)
{
    const double col_w = 120, gap = 80, top = 20, plot_h = 360, left = 40;
    double legend_x = left + n_col * (col_w + gap);
    double W = legend_x + 330, H = top + plot_h + 40;
    double legend_h = 16.0 * n_seg + top + 10;
    if (legend_h > H)
        H = legend_h;
    fprintf(f, "<svg class=\"chart\" id=\"");
    ntp__html_text(f, id);
    fprintf(f, "\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\">\n", W, H,
            W, H);
    for (int t = 0; t <= 4; t++) {
        double y = top + plot_h * (1 - t / 4.0);
        fprintf(f,
                "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%d%%</text>\n",
                left, y, legend_x - gap / 2, y, left - 4, y + 4, 25 * t);
    }
    for (int c = 0; c < n_col; c++) {
        double x = left + 10 + c * (col_w + gap), y = top + plot_h;
        for (int s = 0; s < n_seg; s++) {
            double v = share[c * n_seg + s];
            if (!isfinite(v) || v <= 0)
                continue;
            double h = plot_h * (v > 1 ? 1 : v);
            y -= h;
            fprintf(f,
                    "<rect class=\"seg\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                    "fill=\"%s\" stroke=\"#fff\" stroke-width=\"0.5\"><title>",
                    x, y, col_w, h, ntp__html_color(s));
            ntp__html_textf(f, "%s: %s %.1f%%", columns[c], segments[s], 100 * v);
            fputs("</title></rect>", f);
            if (h >= 13)
                fprintf(f,
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
                        "style=\"fill:#fff\">%.1f%%</text>",
                        x + col_w / 2, y + h / 2 + 4, 100 * v);
            fputc('\n', f);
        }
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", x + col_w / 2,
                top + plot_h + 16);
        ntp__html_text(f, columns[c]);
        fputs("</text>\n", f);
    }
    for (int s = 0; s < n_seg; s++) {
        double y = top + 16.0 * (n_seg - 1 - s);
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"11\" height=\"11\" fill=\"%s\"/>"
                "<text x=\"%.1f\" y=\"%.1f\">",
                legend_x, y, ntp__html_color(s), legend_x + 16, y + 10);
        ntp__html_text(f, segments[s]);
        fputs("</text>\n", f);
    }
    fputs("</svg>\n", f);
}

/* --- roofline ------------------------------------------------------------------------------ */

void ntp__svg_roofline(FILE *f, const char *id, const ntp_roofline *rl, const ntp_rpoint *pts,
                       int n)
{
    const double W = 1000, H = 520, left = 70, right = 150, top = 20, bottom = 50;
    double pw = W - left - right, ph = H - top - bottom;
    /* The ranges cover every point and the ridge, in whole decades. */
    double xmin = INFINITY, xmax = 0, ymin = INFINITY, ymax = 0;
    for (int i = 0; i < n; i++) {
        if (!finite_pos(pts[i].intensity) || !finite_pos(pts[i].gflops))
            continue;
        xmin = fmin(xmin, pts[i].intensity);
        xmax = fmax(xmax, pts[i].intensity);
        ymin = fmin(ymin, pts[i].gflops);
        ymax = fmax(ymax, pts[i].gflops);
    }
    bool roof =
        rl && rl->available && finite_pos(rl->peak_gflops) && finite_pos(rl->bandwidth_gbps);
    if (roof) {
        xmin = fmin(xmin, rl->ridge_intensity / 10);
        xmax = fmax(xmax, rl->ridge_intensity * 10);
        ymax = fmax(ymax, rl->peak_gflops);
        ymin = fmin(ymin, rl->bandwidth_gbps * xmin);
    }
    if (!isfinite(xmin)) {
        xmin = 0.1;
        xmax = 100;
        ymin = 0.1;
        ymax = 100;
    }
    double lx0 = floor(log10(xmin)), lx1 = ceil(log10(xmax)), ly0 = floor(log10(ymin)),
           ly1 = ceil(log10(ymax * 1.5));
    if (lx1 <= lx0)
        lx1 = lx0 + 1;
    if (ly1 <= ly0)
        ly1 = ly0 + 1;
        /* log10 coordinates to pixels */
#define PX(v) (left + pw * (log10(v) - lx0) / (lx1 - lx0))
#define PY(v) (top + ph * (1 - (log10(v) - ly0) / (ly1 - ly0)))
    fprintf(f, "<svg class=\"chart\" id=\"");
    ntp__html_text(f, id);
    fprintf(f, "\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\">\n", W, H,
            W, H);
    fprintf(f,
            "<defs><clipPath id=\"%s-clip\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
            "height=\"%.1f\"/></clipPath></defs>\n",
            id, left, top, pw, ph);
    for (double d = lx0; d <= lx1 + 1e-9; d++) {
        double x = left + pw * (d - lx0) / (lx1 - lx0);
        fprintf(f,
                "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
                x, top, x, top + ph, x, top + ph + 15, pow(10, d));
    }
    for (double d = ly0; d <= ly1 + 1e-9; d++) {
        double y = top + ph * (1 - (d - ly0) / (ly1 - ly0));
        fprintf(f,
                "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                left, y, left + pw, y, left - 5, y + 4, pow(10, d));
    }
    fprintf(
        f,
        "<rect class=\"axis\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\"/>\n",
        left, top, pw, ph);
    fprintf(
        f,
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">arithmetic intensity (FLOP/B)</text>"
        "<text transform=\"translate(16 %.1f) rotate(-90)\" text-anchor=\"middle\">GFLOP/s</text>\n",
        left + pw / 2, H - 12, top + ph / 2);
    double x0 = pow(10, lx0), x1 = pow(10, lx1);
    if (roof) {
        /* Cache roofs first (dashed), then the DRAM + peak roof that
         * bounds every point: bandwidth x intensity up to the ridge, then
         * flat at the peak. */
        fprintf(f, "<g clip-path=\"url(#%s-clip)\">\n", id);
        for (int i = 0; i < rl->n_levels; i++) {
            double bw = rl->levels[i].gbps;
            if (!finite_pos(bw) || strcmp(rl->levels[i].name, "DRAM") == 0)
                continue;
            double ridge = rl->peak_gflops / bw;
            fprintf(f, "<path class=\"roof cache\" d=\"M%.1f %.1fL%.1f %.1f\"><title>", PX(x0),
                    PY(bw * x0), PX(ridge), PY(rl->peak_gflops));
            ntp__html_textf(f, "%s bandwidth %.4g GB/s", rl->levels[i].name, bw);
            fputs("</title></path>\n", f);
        }
        fprintf(f, "<path class=\"roof\" d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1f\"><title>", PX(x0),
                PY(rl->bandwidth_gbps * x0), PX(rl->ridge_intensity), PY(rl->peak_gflops), PX(x1),
                PY(rl->peak_gflops));
        ntp__html_textf(f, "DRAM %.4g GB/s, peak %.4g GFLOP/s, ridge %.3g FLOP/B",
                        rl->bandwidth_gbps, rl->peak_gflops, rl->ridge_intensity);
        fputs("</title></path>\n</g>\n", f);
        /* Labels at the right edge. */
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">peak %.4g GFLOP/s</text>\n", left + pw + 6,
                PY(rl->peak_gflops) + 4, rl->peak_gflops);
        double ylab = fmin(PY(rl->bandwidth_gbps * rl->ridge_intensity / 3), top + ph - 4);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">DRAM %.4g GB/s</text>\n",
                PX(rl->ridge_intensity / 3) - 4, ylab, rl->bandwidth_gbps);
    }
    for (int i = 0; i < n; i++) {
        const ntp_rpoint *p = &pts[i];
        if (!finite_pos(p->intensity) || !finite_pos(p->gflops))
            continue;
        double x = PX(p->intensity), y = PY(p->gflops);
        if (p->marker)
            fprintf(f,
                    "<path class=\"pt marker\" d=\"M%.1f %.1fl6 6-6 6-6-6z\" fill=\"%s\" "
                    "stroke=\"#1d2330\" stroke-width=\"0.8\"><title>",
                    x, y - 6, ntp__html_color(1));
        else
            fprintf(f,
                    "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" "
                    "fill-opacity=\"0.75\" stroke=\"#1d2330\" stroke-width=\"0.5\"><title>",
                    x, y, ntp__html_color(0));
        ntp__html_textf(f, "%s%s: %.4g FLOP/B, %.4g GFLOP/s", p->marker ? "segment " : "",
                        p->label ? p->label : "", p->intensity, p->gflops);
        if (p->attainable > 0)
            ntp__html_textf(f, ", %.1f%% of the %.4g GFLOP/s bound",
                            100 * p->gflops / p->attainable, p->attainable);
        fputs(p->marker ? "</title></path>\n" : "</title></circle>\n", f);
    }
    if (!roof)
        fprintf(f,
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">no ceilings: run `ntprof "
                "machine` once to measure this machine's</text>\n",
                left + pw / 2, top + 16);
    fputs("</svg>\n", f);
#undef PX
#undef PY
}

/* --- a series against categories ------------------------------------------------------------ */

void ntp__svg_series(FILE *f, const char *id, const char *xlabel, const char *ylabel,
                     const char *const *x, int n, const double *y, const double *lo,
                     const double *hi)
{
    const double W = 480, H = 280, left = 62, right = 16, top = 16, bottom = 48;
    double pw = W - left - right, ph = H - top - bottom, max = 0;
    for (int i = 0; i < n; i++) {
        if (finite_pos(y[i]) && y[i] > max)
            max = y[i];
        if (hi && finite_pos(hi[i]) && hi[i] > max)
            max = hi[i];
    }
    max = nice_ceil(max);
    fprintf(f, "<svg class=\"chart\" id=\"");
    ntp__html_text(f, id);
    fprintf(f, "\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\">\n", W, H,
            W, H);
    for (int t = 0; t <= 4; t++) {
        double yy = top + ph * (1 - t / 4.0);
        fprintf(f,
                "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.3g</text>\n",
                left, yy, left + pw, yy, left - 5, yy + 4, max * t / 4);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", left + pw / 2, H - 8);
    ntp__html_text(f, xlabel);
    fprintf(f, "</text><text transform=\"translate(14 %.1f) rotate(-90)\" text-anchor=\"middle\">",
            top + ph / 2);
    ntp__html_text(f, ylabel);
    fputs("</text>\n", f);
    double step = n > 0 ? pw / n : pw;
#define SX(i) (left + step * ((i) + 0.5))
#define SY(v) (top + ph * (1 - (v) / max))
    /* The line joins neighbouring values; a missing one breaks it. */
    fputs("<path class=\"line\" d=\"", f);
    bool pen = false;
    for (int i = 0; i < n; i++) {
        if (!finite_pos(y[i])) {
            pen = false;
            continue;
        }
        fprintf(f, "%s%.1f %.1f", pen ? "L" : "M", SX(i), SY(y[i]));
        pen = true;
    }
    fputs("\"/>\n", f);
    for (int i = 0; i < n; i++) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", SX(i), top + ph + 15);
        ntp__html_text(f, x[i]);
        fputs("</text>", f);
        if (!finite_pos(y[i])) {
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">failed</text>\n", SX(i),
                    top + ph - 6);
            continue;
        }
        if (lo && hi && isfinite(lo[i]) && isfinite(hi[i]) && hi[i] > lo[i])
            fprintf(f, "<path class=\"whisker\" d=\"M%.1f %.1fV%.1fM%.1f %.1fh8M%.1f %.1fh8\"/>",
                    SX(i), SY(lo[i]), SY(hi[i]), SX(i) - 4, SY(lo[i]), SX(i) - 4, SY(hi[i]));
        fprintf(f, "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\"><title>",
                SX(i), SY(y[i]), ntp__html_color(0));
        ntp__html_textf(f, "%s = %s: %.4g", xlabel, x[i], y[i]);
        if (lo && hi && isfinite(lo[i]) && isfinite(hi[i]))
            ntp__html_textf(f, " [%.4g, %.4g]", lo[i], hi[i]);
        fputs("</title></circle>\n", f);
    }
    fputs("</svg>\n", f);
#undef SX
#undef SY
}
