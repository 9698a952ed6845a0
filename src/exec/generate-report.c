/* The generate report as a table and as JSON (docs/decoders.md). */
#include <math.h>
#include <stdio.h>

#include "core/ctx-impl.h"
#include "core/writers-impl.h"
#include "generate-impl.h"
#include "ntprof/generate.h"

static const char *share(double v, char *buf, size_t len)
{
    if (v < 0)
        return "n/a";
    snprintf(buf, len, "%.1f%%", 100.0 * v);
    return buf;
}

static void phase_line(FILE *f, const char *name, const ntp_generate_phase *p, const char *note)
{
    char fl[32], by[32], c[16], b[16], pr[32];
    ntp__put_linef(f, "%-8s %10.3f ms  %10.1f tok/s  %9s FLOP  %9s  %6.2f FLOP/B", name, p->ms,
                   p->tokens_per_s, ntp__human_count((double)p->flops, fl, sizeof fl),
                   ntp__human_bytes((double)p->bytes, by, sizeof by), p->intensity);
    if (p->predicted_tokens_per_s < 0 && p->compute_share < 0) {
        ntp__put_linef(f, "         roofline n/a: %s", note ? note : "no ceilings");
        return;
    }
    if (p->predicted_tokens_per_s >= 0)
        snprintf(pr, sizeof pr, "%.1f tok/s (%s-bound)", p->predicted_tokens_per_s, p->bound);
    ntp__put_linef(f, "         compute %s of peak, bandwidth %s of DRAM; roofline %s",
                   share(p->compute_share, c, sizeof c), share(p->bandwidth_share, b, sizeof b),
                   p->predicted_tokens_per_s >= 0 ? pr
                   : note                         ? note
                                                  : "n/a");
}

void ntp__generate_phases_table(FILE *f, const ntp_generate_result *r)
{
    char kb[32], kt[32], pc[32];
    ntp__put_linef(f, "generate %s on %s: batch %lld, context %lld + prompt %lld + %lld generated",
                   r->model, r->backend, (long long)r->batch, (long long)r->context_depth,
                   (long long)r->prompt_len, (long long)r->gen_len);
    ntp__put_linef(f, "params %s; KV cache %s: %s per token (%d layers), %s in all",
                   ntp__human_count((double)r->params, pc, sizeof pc), ntp_dtype_name(r->kv_dtype),
                   ntp__human_bytes((double)r->kv_bytes_per_token, kb, sizeof kb), r->kv_layers,
                   ntp__human_bytes((double)r->kv_bytes_total, kt, sizeof kt));
    char wb[32], ab[32], mb[32];
    ntp__put_linef(f, "memory %s: weights %s %s (held once), activations %s, KV cache %s",
                   ntp__human_bytes((double)r->memory_bytes, mb, sizeof mb),
                   ntp_dtype_name(r->weight_dtype),
                   ntp__human_bytes((double)r->weight_bytes, wb, sizeof wb),
                   ntp__human_bytes((double)r->arena_bytes, ab, sizeof ab), kt);
    if (r->static_only)
        ntp__put_line(f, "static analysis (--static): nothing was run; decode at the mean context");
    else
        ntp__put_linef(f, "TTFT %.3f ms; TPOT p50 %.3f  p90 %.3f  p99 %.3f ms", r->ttft_ms,
                       r->tpot_p50_ms, r->tpot_p90_ms, r->tpot_p99_ms);
    phase_line(f, "prefill", &r->prefill, r->roofline_note);
    phase_line(f, "decode", &r->decode, r->roofline_note);
}

ntp_status ntp_report_write_generate_table(ntp_ctx *ctx, const ntp_generate_result *r, FILE *f)
{
    ntp__generate_phases_table(f, r);
    ntp__put_line(f, "");
    ntp__put_linef(f, "%-28s %-12s %-7s %11s %11s %9s %9s", "layer", "type", "backend",
                   "prefill ms", "decode ms", "pre FLOP", "dec FLOP");
    for (int i = 0; i < r->n_layers; i++) {
        const ntp_generate_layer *l = &r->layers[i];
        char a[32], b[32];
        ntp__put_linef(f, "%-28.28s %-12.12s %-7.7s %11.4f %11.4f %9s %9s", l->name, l->type,
                       l->backend, l->prefill_ms, l->decode_ms,
                       ntp__human_count((double)l->prefill_flops, a, sizeof a),
                       ntp__human_count((double)l->decode_flops, b, sizeof b));
    }
    return ferror(f) ? ntp__error(ctx, NTP_STATUS_IO_ERROR, "cannot write the report")
                     : NTP_STATUS_OK;
}

static json_t *num_or_null(double v)
{
    return v < 0 ? json_null() : ntp__json_num(v);
}

static json_t *phase_json(bool *ok, const ntp_generate_phase *p)
{
    json_t *o = json_object();
    ntp__jset(ok, o, "ms", ntp__json_num(p->ms));
    ntp__jset(ok, o, "tokens_per_s", ntp__json_num(p->tokens_per_s));
    ntp__jset(ok, o, "flops", json_integer(p->flops));
    ntp__jset(ok, o, "bytes", json_integer(p->bytes));
    ntp__jset(ok, o, "gflops", ntp__json_num(p->gflops));
    ntp__jset(ok, o, "gbps", ntp__json_num(p->gbps));
    ntp__jset(ok, o, "intensity", ntp__json_num(p->intensity));
    ntp__jset(ok, o, "compute_share", num_or_null(p->compute_share));
    ntp__jset(ok, o, "bandwidth_share", num_or_null(p->bandwidth_share));
    ntp__jset(ok, o, "predicted_tokens_per_s", num_or_null(p->predicted_tokens_per_s));
    ntp__jset(ok, o, "bound", ntp__json_str(p->bound));
    return o;
}

json_t *ntp__generate_phases_json(bool *okp, const ntp_generate_result *r)
{
    bool ok = true;
    json_t *o = json_object();
    ntp__jset(&ok, o, "prompt_len", json_integer(r->prompt_len));
    ntp__jset(&ok, o, "gen_len", json_integer(r->gen_len));
    ntp__jset(&ok, o, "context_depth", json_integer(r->context_depth));
    ntp__jset(&ok, o, "batch", json_integer(r->batch));
    ntp__jset(&ok, o, "kv_dtype", ntp__json_str(ntp_dtype_name(r->kv_dtype)));
    ntp__jset(&ok, o, "kv_bytes_per_token", json_integer(r->kv_bytes_per_token));
    ntp__jset(&ok, o, "kv_bytes_total", json_integer(r->kv_bytes_total));
    ntp__jset(&ok, o, "weight_bytes", json_integer(r->weight_bytes));
    ntp__jset(&ok, o, "prefill", phase_json(&ok, &r->prefill));
    ntp__jset(&ok, o, "decode", phase_json(&ok, &r->decode));
    ntp__jset(&ok, o, "roofline_note", ntp__json_str(r->roofline_note));
    if (!ok)
        *okp = false;
    return o;
}

static json_t *result_json(bool *okp, const ntp_generate_result *r)
{
    bool ok = true;
    json_t *root = json_object();
    ntp__jset(&ok, root, "model", ntp__json_str(r->model));
    ntp__jset(&ok, root, "backend", ntp__json_str(r->backend));
    ntp__jset(&ok, root, "batch", json_integer(r->batch));
    ntp__jset(&ok, root, "prompt_len", json_integer(r->prompt_len));
    ntp__jset(&ok, root, "gen_len", json_integer(r->gen_len));
    ntp__jset(&ok, root, "context_depth", json_integer(r->context_depth));
    ntp__jset(&ok, root, "max_positions", json_integer(r->max_positions));
    ntp__jset(&ok, root, "static", json_boolean(r->static_only));
    ntp__jset(&ok, root, "params", json_integer(r->params));
    ntp__jset(&ok, root, "kv_dtype", ntp__json_str(ntp_dtype_name(r->kv_dtype)));
    ntp__jset(&ok, root, "kv_layers", json_integer(r->kv_layers));
    ntp__jset(&ok, root, "kv_bytes_per_token", json_integer(r->kv_bytes_per_token));
    ntp__jset(&ok, root, "kv_bytes_total", json_integer(r->kv_bytes_total));
    ntp__jset(&ok, root, "weight_bytes", json_integer(r->weight_bytes));
    ntp__jset(&ok, root, "weight_dtype", ntp__json_str(ntp_dtype_name(r->weight_dtype)));
    ntp__jset(&ok, root, "arena_bytes", json_integer(r->arena_bytes));
    ntp__jset(&ok, root, "memory_bytes", json_integer(r->memory_bytes));
    ntp__jset(&ok, root, "ttft_ms", ntp__json_num(r->ttft_ms));
    json_t *tp = json_object();
    ntp__jset(&ok, tp, "p50", ntp__json_num(r->tpot_p50_ms));
    ntp__jset(&ok, tp, "p90", ntp__json_num(r->tpot_p90_ms));
    ntp__jset(&ok, tp, "p99", ntp__json_num(r->tpot_p99_ms));
    ntp__jset(&ok, tp, "mean", ntp__json_num(r->tpot_mean_ms));
    ntp__jset(&ok, root, "tpot_ms", tp);
    ntp__jset(&ok, root, "prefill_tokens_per_s", ntp__json_num(r->prefill_tokens_per_s));
    ntp__jset(&ok, root, "decode_tokens_per_s", ntp__json_num(r->decode_tokens_per_s));
    ntp__jset(&ok, root, "prefill", phase_json(&ok, &r->prefill));
    ntp__jset(&ok, root, "decode", phase_json(&ok, &r->decode));
    ntp__jset(&ok, root, "roofline_note", ntp__json_str(r->roofline_note));
    json_t *steps = json_array();
    for (int64_t i = 0; i < r->gen_len; i++)
        ntp__jpush(&ok, steps, ntp__json_num(r->step_ms[i]));
    ntp__jset(&ok, root, "step_ms", steps);
    json_t *toks = json_array();
    for (int64_t i = 0; i < r->batch * (r->gen_len + 1); i++)
        ntp__jpush(&ok, toks, json_integer(r->tokens[i]));
    ntp__jset(&ok, root, "tokens", toks);
    json_t *layers = json_array();
    for (int i = 0; i < r->n_layers; i++) {
        const ntp_generate_layer *l = &r->layers[i];
        json_t *o = json_object();
        ntp__jset(&ok, o, "name", ntp__json_str(l->name));
        ntp__jset(&ok, o, "type", ntp__json_str(l->type));
        ntp__jset(&ok, o, "backend", ntp__json_str(l->backend));
        ntp__jset(&ok, o, "prefill_ms", ntp__json_num(l->prefill_ms));
        ntp__jset(&ok, o, "decode_ms", ntp__json_num(l->decode_ms));
        ntp__jset(&ok, o, "prefill_flops", json_integer(l->prefill_flops));
        ntp__jset(&ok, o, "decode_flops", json_integer(l->decode_flops));
        ntp__jset(&ok, o, "prefill_bytes", json_integer(l->prefill_bytes));
        ntp__jset(&ok, o, "decode_bytes", json_integer(l->decode_bytes));
        ntp__jpush(&ok, layers, o);
    }
    ntp__jset(&ok, root, "layers", layers);
    if (!ok)
        *okp = false;
    return root;
}

ntp_status ntp_report_write_generate_json(ntp_ctx *ctx, const ntp_generate_result *r, FILE *f)
{
    bool ok = true;
    json_t *root = result_json(&ok, r);
    return ntp__json_finish(ctx, root, ok, f, "the generate report");
}

/* --- sweeps ------------------------------------------------------------- */

/* Static sweeps show what analysis gives; measured ones the times (the
 * table stays within 99 columns for two axes). */
ntp_status ntp_report_write_generate_sweep_table(ntp_ctx *ctx, const ntp_generate_sweep *s, FILE *f)
{
    ntp__put_linef(f, "generate sweep of %s: %d points%s", s->model_path, s->n_points,
                   s->static_only ? " (static: analysed, not run)" : "");
    char line[1024];
    int at = 0;
    for (int a = 0; a < s->n_axes; a++)
        at += snprintf(line + at, sizeof line - (size_t)at, "%-10.10s ", s->axis[a]);
    if (s->static_only)
        ntp__put_linef(f, "%s%10s %9s %9s %10s %6s %10s", line, "KV B/tok", "KV total", "weights",
                       "dec B/step", "FLOP/B", "roof tok/s");
    else
        ntp__put_linef(f, "%s%10s %9s %9s %9s %9s %9s %10s", line, "KV B/tok", "KV total",
                       "TTFT ms", "TPOT p50", "TPOT p99", "dec tok/s", "roof tok/s");
    for (int i = 0; i < s->n_points; i++) {
        const ntp_generate_point *p = &s->points[i];
        const ntp_generate_result *r = p->r;
        char kt[32], wb[32], db[32], rf[32];
        at = 0;
        for (int a = 0; a < s->n_axes; a++)
            at += snprintf(line + at, sizeof line - (size_t)at, "%-10.10s ", p->value[a]);
        if (r->decode.predicted_tokens_per_s >= 0)
            snprintf(rf, sizeof rf, "%.1f", r->decode.predicted_tokens_per_s);
        else
            snprintf(rf, sizeof rf, "n/a");
        ntp__human_bytes((double)r->kv_bytes_total, kt, sizeof kt);
        if (r->static_only)
            ntp__put_linef(
                f, "%s%10lld %9s %9s %10s %6.2f %10s", line, (long long)r->kv_bytes_per_token, kt,
                ntp__human_bytes((double)r->weight_bytes, wb, sizeof wb),
                ntp__human_bytes((double)r->decode.bytes, db, sizeof db), r->decode.intensity, rf);
        else
            ntp__put_linef(f, "%s%10lld %9s %9.3f %9.3f %9.3f %9.1f %10s", line,
                           (long long)r->kv_bytes_per_token, kt, r->ttft_ms, r->tpot_p50_ms,
                           r->tpot_p99_ms, r->decode_tokens_per_s, rf);
    }
    return ferror(f) ? ntp__error(ctx, NTP_STATUS_IO_ERROR, "cannot write the report")
                     : NTP_STATUS_OK;
}

ntp_status ntp_report_write_generate_sweep_json(ntp_ctx *ctx, const ntp_generate_sweep *s, FILE *f)
{
    bool ok = true;
    json_t *root = json_object();
    ntp__jset(&ok, root, "model", ntp__json_str(s->model_path));
    ntp__jset(&ok, root, "static", json_boolean(s->static_only));
    json_t *axes = json_array();
    for (int a = 0; a < s->n_axes; a++) {
        json_t *ax = json_object(), *vals = json_array();
        ntp__jset(&ok, ax, "name", ntp__json_str(s->axis[a]));
        for (int v = 0; v < s->n_values[a]; v++)
            ntp__jpush(&ok, vals, ntp__json_str(s->values[a][v]));
        ntp__jset(&ok, ax, "values", vals);
        ntp__jpush(&ok, axes, ax);
    }
    ntp__jset(&ok, root, "axes", axes);
    json_t *pts = json_array();
    for (int i = 0; i < s->n_points; i++) {
        json_t *p = json_object(), *vals = json_object();
        for (int a = 0; a < s->n_axes; a++)
            ntp__jset(&ok, vals, s->axis[a], ntp__json_str(s->points[i].value[a]));
        ntp__jset(&ok, p, "values", vals);
        ntp__jset(&ok, p, "result", result_json(&ok, s->points[i].r));
        ntp__jpush(&ok, pts, p);
    }
    ntp__jset(&ok, root, "points", pts);
    return ntp__json_finish(ctx, root, ok, f, "the generate sweep");
}
