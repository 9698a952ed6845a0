/* The analysis report: per-layer work and bytes of a topology, without
 * running it, as a table, JSON or CSV (docs/report-format.md). */
#include <string.h>

#include "core/ctx-impl.h"
#include "exec/generate-impl.h"
#include "ntprof/generate.h"
#include "report-impl.h"

/* --- table ------------------------------------------------------------------------ */

/* Column widths; with single spaces between them the table is 99 columns. */
enum {
    W_NAME = 24,
    W_TYPE = 14,
    W_SHAPE = 16,
    W_PARAMS = 7,
    W_MACS = 7,
    W_WMB = 9,
    W_AMB = 8,
    W_INT = 7
};

static double mb(int64_t bytes)
{
    return (double)bytes / 1e6;
}

static void table_header(FILE *f)
{
    ntp__put_cell(f, "layer", W_NAME, false);
    fputc(' ', f);
    ntp__put_cell(f, "type", W_TYPE, false);
    fputc(' ', f);
    ntp__put_cell(f, "output shape", W_SHAPE, false);
    fputc(' ', f);
    ntp__put_cell(f, "params", W_PARAMS, true);
    fputc(' ', f);
    ntp__put_cell(f, "MACs", W_MACS, true);
    fputc(' ', f);
    ntp__put_cell(f, "weight MB", W_WMB, true);
    fputc(' ', f);
    ntp__put_cell(f, "act MB", W_AMB, true);
    fputc(' ', f);
    ntp__put_cell(f, "FLOP/B", W_INT, true);
    fputc('\n', f);
    static const int widths[] = {W_NAME, W_TYPE, W_SHAPE, W_PARAMS, W_MACS, W_WMB, W_AMB, W_INT};
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
        if (i)
            fputc(' ', f);
        for (int k = 0; k < widths[i]; k++)
            fputc('-', f);
    }
    fputc('\n', f);
}

static void table_row(FILE *f, const ntp_layer_cost *l)
{
    char buf[192];
    ntp__put_cell(f, l->name, W_NAME, false);
    fputc(' ', f);
    ntp__put_cell(f, l->type, W_TYPE, false);
    fputc(' ', f);
    ntp__put_cell(f, ntp__shape_x(&l->output_shape, buf, sizeof buf), W_SHAPE, false);
    fputc(' ', f);
    ntp__put_cell(f, ntp__human_count((double)l->params, buf, sizeof buf), W_PARAMS, true);
    fputc(' ', f);
    ntp__put_cell(f, ntp__human_count((double)l->macs, buf, sizeof buf), W_MACS, true);
    fputc(' ', f);
    ntp__put_cell(f, ntp__fit_number(mb(l->weight_bytes), W_WMB, 3, buf, sizeof buf), W_WMB, true);
    fputc(' ', f);
    ntp__put_cell(f, ntp__fit_number(mb(l->output_bytes), W_AMB, 3, buf, sizeof buf), W_AMB, true);
    fputc(' ', f);
    ntp__put_cell(f, ntp__fit_number(l->intensity, W_INT, 2, buf, sizeof buf), W_INT, true);
    fputc('\n', f);
}

static void write_table(const ntp_graph *g, const ntp_analysis *a, FILE *f)
{
    char p[16], m[16], fl[16], w[24], pk[24];
    ntp__put_linef(f, "topology %s (%s), precision %s, %d layers", ntp_graph_name(g),
                   ntp_graph_source(g), ntp_dtype_name(a->precision), a->n_layers);
    int np = ntp_graph_param_count(g);
    if (np > 0) {
        char line[1024];
        size_t used = (size_t)snprintf(line, sizeof line, "params");
        for (int i = 0; i < np && used < sizeof line; i++)
            used += (size_t)snprintf(line + used, sizeof line - used, " %s=%s",
                                     ntp_graph_param_name(g, i), ntp_graph_param_value(g, i));
        ntp__put_line(f, line);
    }
    fputc('\n', f);
    table_header(f);
    for (int i = 0; i < a->n_layers; i++)
        table_row(f, &a->layers[i]);
    fputc('\n', f);
    for (int i = 0; i < ntp_graph_marker_count(g); i++) {
        int first, last;
        ntp_graph_marker_range(g, i, &first, &last);
        ntp__put_linef(f, "marker %s: layers %d..%d (%s .. %s)", ntp_graph_marker_name(g, i), first,
                       last, ntp_graph_layer_name(g, first) ? ntp_graph_layer_name(g, first) : "?",
                       ntp_graph_layer_name(g, last) ? ntp_graph_layer_name(g, last) : "?");
    }
    /* Human units keep the totals on one line; JSON and CSV carry the exact
     * integers. */
    ntp__put_linef(f, "total: %s params, %s MACs, %s FLOPs, weights %s, peak activations %s",
                   ntp__human_count((double)a->params, p, sizeof p),
                   ntp__human_count((double)a->macs, m, sizeof m),
                   ntp__human_count((double)a->flops, fl, sizeof fl),
                   ntp__human_bytes((double)a->weight_bytes, w, sizeof w),
                   ntp__human_bytes((double)a->peak_activation_bytes, pk, sizeof pk));
}

/* --- JSON --------------------------------------------------------------------------- */

static json_t *layer_json(bool *ok, const ntp_layer_cost *l)
{
    json_t *o = json_object();
    ntp__jset(ok, o, "name", ntp__json_str(l->name));
    ntp__jset(ok, o, "type", ntp__json_str(l->type));
    ntp__jset(ok, o, "inlay", json_boolean(l->inlay));
    ntp__jset(ok, o, "output_shape", ntp__json_shape(&l->output_shape));
    ntp__jset(ok, o, "params", json_integer(l->params));
    ntp__jset(ok, o, "macs", json_integer(l->macs));
    ntp__jset(ok, o, "flops", json_integer(l->flops));
    ntp__jset(ok, o, "weight_bytes", json_integer(l->weight_bytes));
    ntp__jset(ok, o, "input_bytes", json_integer(l->input_bytes));
    ntp__jset(ok, o, "output_bytes", json_integer(l->output_bytes));
    ntp__jset(ok, o, "traffic_bytes", json_integer(l->traffic_bytes));
    ntp__jset(ok, o, "intensity", ntp__json_num(l->intensity));
    return o;
}

static ntp_status write_json(ntp_ctx *ctx, const ntp_graph *g, const ntp_analysis *a,
                             const ntp_generate_result *ph, FILE *f)
{
    bool ok = true;
    json_t *root = json_object();
    ntp__jset(&ok, root, "schema_version", json_integer(NTP_REPORT_SCHEMA_VERSION));
    ntp__jset(&ok, root, "kind", json_string("analysis"));
    ntp__jset(&ok, root, "topology", ntp__json_str(ntp_graph_name(g)));
    ntp__jset(&ok, root, "source", ntp__json_str(ntp_graph_source(g)));
    ntp__jset(&ok, root, "precision", json_string(ntp_dtype_name(a->precision)));

    json_t *params = json_object();
    for (int i = 0; i < ntp_graph_param_count(g); i++)
        ntp__jset(&ok, params, ntp_graph_param_name(g, i),
                  ntp__json_str(ntp_graph_param_value(g, i)));
    ntp__jset(&ok, root, "params", params);

    json_t *t = json_object();
    ntp__jset(&ok, t, "params", json_integer(a->params));
    ntp__jset(&ok, t, "macs", json_integer(a->macs));
    ntp__jset(&ok, t, "flops", json_integer(a->flops));
    ntp__jset(&ok, t, "weight_bytes", json_integer(a->weight_bytes));
    ntp__jset(&ok, t, "input_bytes", json_integer(a->input_bytes));
    ntp__jset(&ok, t, "activation_bytes", json_integer(a->activation_bytes));
    ntp__jset(&ok, t, "peak_activation_bytes", json_integer(a->peak_activation_bytes));
    ntp__jset(&ok, t, "traffic_bytes", json_integer(a->traffic_bytes));
    ntp__jset(&ok, root, "totals", t);

    json_t *layers = json_array();
    for (int i = 0; i < a->n_layers; i++)
        ntp__jpush(&ok, layers, layer_json(&ok, &a->layers[i]));
    ntp__jset(&ok, root, "layers", layers);

    json_t *markers = json_array();
    for (int i = 0; i < ntp_graph_marker_count(g); i++) {
        int first, last;
        ntp_graph_marker_range(g, i, &first, &last);
        json_t *m = json_object();
        ntp__jset(&ok, m, "name", ntp__json_str(ntp_graph_marker_name(g, i)));
        ntp__jset(&ok, m, "first", json_integer(first));
        ntp__jset(&ok, m, "last", json_integer(last));
        ntp__jset(&ok, m, "from", ntp__json_str(ntp_graph_layer_name(g, first)));
        ntp__jset(&ok, m, "to", ntp__json_str(ntp_graph_layer_name(g, last)));
        ntp__jpush(&ok, markers, m);
    }
    ntp__jset(&ok, root, "markers", markers);
    if (ph)
        ntp__jset(&ok, root, "phases", ntp__generate_phases_json(&ok, ph));
    return ntp__json_finish(ctx, root, ok, f, "analysis");
}

/* --- CSV ------------------------------------------------------------------------------ */

static void write_csv(const ntp_analysis *a, FILE *f)
{
    fputs("name,type,inlay,output_shape,params,macs,flops,weight_bytes,input_bytes,output_bytes,"
          "traffic_bytes,intensity\n",
          f);
    for (int i = 0; i < a->n_layers; i++) {
        const ntp_layer_cost *l = &a->layers[i];
        char shape[192];
        ntp__csv_str(f, l->name);
        ntp__csv_sep(f);
        ntp__csv_str(f, l->type);
        ntp__csv_sep(f);
        ntp__csv_bool(f, l->inlay);
        ntp__csv_sep(f);
        ntp__csv_str(f, ntp__shape_x(&l->output_shape, shape, sizeof shape));
        ntp__csv_sep(f);
        ntp__csv_int(f, l->params);
        ntp__csv_sep(f);
        ntp__csv_int(f, l->macs);
        ntp__csv_sep(f);
        ntp__csv_int(f, l->flops);
        ntp__csv_sep(f);
        ntp__csv_int(f, l->weight_bytes);
        ntp__csv_sep(f);
        ntp__csv_int(f, l->input_bytes);
        ntp__csv_sep(f);
        ntp__csv_int(f, l->output_bytes);
        ntp__csv_sep(f);
        ntp__csv_int(f, l->traffic_bytes);
        ntp__csv_sep(f);
        ntp__csv_num(f, l->intensity);
        fputc('\n', f);
    }
}

ntp_status ntp_report_write_analysis(ntp_ctx *ctx, const ntp_graph *g, const ntp_analysis *a,
                                     ntp_format fmt, FILE *f)
{
    if (!g || !a || !f || (a->n_layers > 0 && !a->layers))
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_analysis: missing graph, analysis or stream");
    return ntp_report_write_analysis_phases(ctx, g, a, NULL, fmt, f);
}

ntp_status ntp_report_write_analysis_phases(ntp_ctx *ctx, const ntp_graph *g, const ntp_analysis *a,
                                            const ntp_generate_result *ph, ntp_format fmt, FILE *f)
{
    if (!g || !a || !f || (a->n_layers > 0 && !a->layers))
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_analysis: missing graph, analysis or stream");
    switch (fmt) {
    case NTP_FORMAT_TABLE:
        write_table(g, a, f);
        if (ph) {
            ntp__put_line(f, "");
            ntp__put_line(f, "decoder phases (docs/decoders.md):");
            ntp__generate_phases_table(f, ph);
        }
        return ntp__check_stream(ctx, f, "analysis");
    case NTP_FORMAT_JSON: return write_json(ctx, g, a, ph, f);
    case NTP_FORMAT_CSV: write_csv(a, f); return ntp__check_stream(ctx, f, "analysis");
    }
    return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "unknown report format %d", (int)fmt);
}
