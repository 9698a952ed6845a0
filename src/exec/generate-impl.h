/* The generate result's definition (opaque in include/ntprof/generate.h),
 * and the per-phase part of the generate report, shared by `ntprof generate`
 * and `ntprof analyze` of a decoder topology (one implementation). */
#ifndef NTPROF_GENERATE_IMPL_H
#define NTPROF_GENERATE_IMPL_H

#include <stdbool.h>
#include <stdio.h>

#include "core/writers-impl.h"
#include "ntprof/generate.h"

/* A generate sweep, opaque in include/ntprof/generate.h (accessors in
 * src/exec/generate-sweep.c). */
struct ntp_generate_sweep {
    char *model_path;
    int n_axes;
    char *axis[NTP_GENERATE_SWEEP_MAX_AXES];
    int n_values[NTP_GENERATE_SWEEP_MAX_AXES];
    char **values[NTP_GENERATE_SWEEP_MAX_AXES];
    int n_points; /* the last axis varies fastest */
    ntp_generate_point *points;
    bool static_only;
};

/* The generate result, opaque in include/ntprof/generate.h (accessors in
 * src/exec/generate-result.c). */
struct ntp_generate_result {
    char *model;
    const char *backend;
    int64_t batch, prompt_len, gen_len, context_depth, max_positions;
    bool static_only; /* analysed, not run: every time is 0 */
    ntp_dtype kv_dtype;
    int64_t params;
    int threads;
    double ttft_ms; /* the prefill pass, which yields the first token */
    double tpot_p50_ms, tpot_p90_ms, tpot_p99_ms, tpot_mean_ms;
    double prefill_tokens_per_s, decode_tokens_per_s; /* batch included */
    /* 2 x layers x kv_heads x head_dim x bytes, per token of one sequence;
     * the total for batch x (context + prompt + generated) positions. */
    int64_t kv_bytes_per_token, kv_bytes_total;
    int kv_layers;
    ntp_generate_phase prefill, decode;
    const char *roofline_note; /* why shares are n/a; NULL when known */
    int n_layers;
    ntp_generate_layer *layers;
    int32_t *tokens; /* [batch, gen_len + 1]: the token prefill chose, then each step's */
    double *step_ms; /* [gen_len] */
    /* Memory: the weights as the engine holds them, once (the decode plan
     * borrows the prefill plan's: weight_bytes = params x the bytes of the
     * storage type at f32 and bf16/f16 storage); the activation arenas of
     * both plans; memory_bytes = weights + arenas + kv_bytes_total. A
     * backend's own packed copies of weights (oneDNN's blocked layouts)
     * are not in it. Static: the weights by analysis, arenas 0. */
    int64_t weight_bytes, arena_bytes, memory_bytes;
    ntp_dtype weight_dtype; /* as ntp_generate_opts */
};

/* The header lines (model, KV cache, memory) and one line pair per phase. */
void ntp__generate_phases_table(FILE *f, const ntp_generate_result *r);
/* {"prompt_len", "gen_len", "context_depth", "batch", "kv_dtype",
 * "kv_bytes_per_token", "kv_bytes_total", "weight_bytes", "prefill": {...},
 * "decode": {...}, "roofline_note"}; *ok false when a value could not be
 * made. */
json_t *ntp__generate_phases_json(bool *ok, const ntp_generate_result *r);

#endif
