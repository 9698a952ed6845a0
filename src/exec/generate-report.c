/* The generate report as a table and as JSON (docs/decoders.md). */
#include <math.h>
#include <stdio.h>

#include "core/ctx-impl.h"
#include "core/writers-impl.h"
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
    if (p->predicted_tokens_per_s >= 0)
        snprintf(pr, sizeof pr, "%.1f tok/s (%s-bound)", p->predicted_tokens_per_s, p->bound);
    ntp__put_linef(f, "         compute %s of peak, bandwidth %s of DRAM; roofline %s",
                   share(p->compute_share, c, sizeof c), share(p->bandwidth_share, b, sizeof b),
                   p->predicted_tokens_per_s >= 0 ? pr
                   : note                         ? note
                                                  : "n/a");
}

ntp_status ntp_generate_write_table(ntp_ctx *ctx, const ntp_generate_result *r, FILE *f)
{
    char kb[32], kt[32], pc[32];
    ntp__put_linef(f, "generate %s on %s: batch %lld, context %lld + prompt %lld + %lld generated",
                   r->model, r->backend, (long long)r->batch, (long long)r->context_depth,
                   (long long)r->prompt_len, (long long)r->gen_len);
    ntp__put_linef(f, "params %s; KV cache %s: %s per token (%d layers), %s in all",
                   ntp__human_count((double)r->params, pc, sizeof pc), ntp_dtype_name(r->kv_dtype),
                   ntp__human_bytes((double)r->kv_bytes_per_token, kb, sizeof kb), r->kv_layers,
                   ntp__human_bytes((double)r->kv_bytes_total, kt, sizeof kt));
    if (r->static_only)
        ntp__put_line(f, "static analysis (--static): nothing was run; decode at the mean context");
    else
        ntp__put_linef(f, "TTFT %.3f ms; TPOT p50 %.3f  p90 %.3f  p99 %.3f ms", r->ttft_ms,
                       r->tpot_p50_ms, r->tpot_p90_ms, r->tpot_p99_ms);
    phase_line(f, "prefill", &r->prefill, r->roofline_note);
    phase_line(f, "decode", &r->decode, r->roofline_note);
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

ntp_status ntp_generate_write_json(ntp_ctx *ctx, const ntp_generate_result *r, FILE *f)
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
    return ntp__json_finish(ctx, root, ok, f, "the generate report");
}
