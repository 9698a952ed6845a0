/* ntprof: text generation with a decoder transformer, prefill and decode
 * timed apart (docs/decoders.md).
 *
 * A decoder topology (models/tiny-decoder.xml says what it declares) is
 * loaded twice: once with seq_len = the prompt for the prefill pass, once
 * with seq_len = 1 for the decode steps. Both plans share one key/value
 * cache per kv_attention layer, allocated here and sized for the whole
 * context. The prefill pass is timed as one pass over the prompt (after one
 * untimed warm-up pass); each of the gen_len decode steps feeds the token
 * the step before chose (greedy, the topology's argmax) at the next
 * position, its time one sample of the time per output token. */
#ifndef NTPROF_GENERATE_H
#define NTPROF_GENERATE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "ntprof/api.h"
#include "ntprof/analyze.h"
#include "ntprof/graph.h"
#include "ntprof/report.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ntp_ceilings;

typedef struct ntp_generate_opts {
    const char *backend; /* NULL: the default backend */
    int threads;         /* 0: all cores */
    uint64_t seed;       /* weights, the prompt, the synthetic context */
    int64_t prompt_len;  /* P >= 1 tokens in the prefill pass */
    int64_t gen_len;     /* G >= 1 decode steps */
    int64_t batch;       /* 0: the topology's */
    /* Positions already in the cache before the prompt (a long
     * conversation), filled with synthetic keys and values, not timed. */
    int64_t context_depth;
    /* f32 (default), bf16, f16 or i8 (one f32 scale per position and key/value
     * head, for keys and values apart: docs/decoders.md) */
    ntp_dtype kv_dtype;
    /* Refuse weights and caches beyond this many bytes, before allocating
     * the cache: 0 the machine's physical memory, < 0 no limit. */
    int64_t max_memory;
    const char *const *set; /* "name=value" param overrides (--set) */
    int n_set;
    /* The machine's ceilings (ntprof machine); NULL: shares and the roofline
     * prediction are n/a. */
    const struct ntp_ceilings *ceilings;
    /* When set: write every weight as <tensor>.npy, the prompt as
     * tokens.npy, the prefill logits as logits_prefill.npy ([B,P,V]) and
     * each decode step's as logits_decode_<i>.npy ([B,1,V]) into this
     * directory (it must exist), for checks against another framework. */
    const char *save_dir;
    /* Analyse only: the per-phase FLOPs, bytes, intensity and the
     * roofline's tokens/s, nothing allocated or run (times are 0). */
    bool static_only;
    /* Progress for a terminal (NULL: none): phase "prefill" or "decode". */
    void (*progress)(void *user, const char *phase, int done, int total);
    void *progress_user;
    /* The weights' storage: f32 (default), bf16 (every weight rounded to
     * bf16 and held as such: weight_bytes is half f32's) or i8 (weight-only
     * int8: every matrix as int8 with one f32 scale per row, max|row|/127;
     * vectors f32), widened to f32 in the kernels, which accumulate in f32.
     * bf16 and i8 run on the reference backend only. */
    ntp_dtype weight_dtype;
    /* Padding (a topology with an attention_mask input: an imported
     * decoder, docs/onnx.md): the odd sequences of the batch have their
     * first `pad` prompt tokens masked out (a left-padded batch of prompts
     * of two lengths), their tokens' positions counted from the context;
     * 0: none. At most prompt_len - 1, batch at least 2. */
    int64_t pad;
} ntp_generate_opts;

/* Defaults: P 32, G 32, seed 1, f32 cache. */
NTP_API void ntp_generate_opts_default(ntp_generate_opts *o);

/* One layer's row, per phase: prefill is the timed pass; decode the mean
 * over the steps. FLOPs and bytes of decode are those of a step at the
 * mean context (attention grows linearly with it). Bytes are the minimal
 * traffic (weights, activations, and for kv_attention the cache read and
 * written). */
typedef struct ntp_generate_layer {
    const char *name; /* owned by the result */
    const char *type;
    const char *backend;
    double prefill_ms, decode_ms;
    int64_t prefill_flops, decode_flops;
    int64_t prefill_bytes, decode_bytes;
} ntp_generate_layer;

/* One phase. Shares are of the machine's ceilings: achieved GFLOP/s over
 * the f32 compute peak, achieved GB/s over the DRAM bandwidth; -1 when
 * there are no ceilings (roofline_note says why). The prediction is the
 * roofline's: max(FLOPs / peak, bytes / bandwidth) per pass. */
typedef struct ntp_generate_phase {
    double ms; /* prefill: the pass; decode: mean step */
    double tokens_per_s;
    int64_t flops, bytes; /* per pass / per step */
    double gflops, gbps, intensity;
    double compute_share, bandwidth_share;
    double predicted_tokens_per_s;
    const char *bound; /* "compute" or "memory" by the roofline; NULL: n/a */
} ntp_generate_phase;

/* What ntp_generate found: opaque, read through the accessors below, which
 * answer NULL or 0 for a NULL result or an index out of range; what they
 * return lives as long as the result (ntp_generate_result_free). */
typedef struct ntp_generate_result ntp_generate_result;

/* The topology's name, and the backend that ran it. */
NTP_API const char *ntp_generate_result_model(const ntp_generate_result *r);
NTP_API const char *ntp_generate_result_backend(const ntp_generate_result *r);
/* The shape of the run: sequences, prompt tokens, decode steps, positions
 * cached before the prompt, and the model's limit. */
NTP_API int64_t ntp_generate_result_batch(const ntp_generate_result *r);
NTP_API int64_t ntp_generate_result_prompt_len(const ntp_generate_result *r);
NTP_API int64_t ntp_generate_result_gen_len(const ntp_generate_result *r);
NTP_API int64_t ntp_generate_result_context_depth(const ntp_generate_result *r);
NTP_API int64_t ntp_generate_result_max_positions(const ntp_generate_result *r);
/* Analysed, not run: every time is 0. */
NTP_API bool ntp_generate_result_static_only(const ntp_generate_result *r);
NTP_API ntp_dtype ntp_generate_result_kv_dtype(const ntp_generate_result *r);
/* The weights' storage, as ntp_generate_opts.weight_dtype. */
NTP_API ntp_dtype ntp_generate_result_weight_dtype(const ntp_generate_result *r);
NTP_API int64_t ntp_generate_result_params(const ntp_generate_result *r);
NTP_API int ntp_generate_result_threads(const ntp_generate_result *r);
/* The prefill pass, which yields the first token. */
NTP_API double ntp_generate_result_ttft_ms(const ntp_generate_result *r);
/* Time per output token over the decode steps: p50, p90, p99 and mean. */
NTP_API double ntp_generate_result_tpot_p50_ms(const ntp_generate_result *r);
NTP_API double ntp_generate_result_tpot_p90_ms(const ntp_generate_result *r);
NTP_API double ntp_generate_result_tpot_p99_ms(const ntp_generate_result *r);
NTP_API double ntp_generate_result_tpot_mean_ms(const ntp_generate_result *r);
/* Tokens per second of each phase, batch included. */
NTP_API double ntp_generate_result_prefill_tokens_per_s(const ntp_generate_result *r);
NTP_API double ntp_generate_result_decode_tokens_per_s(const ntp_generate_result *r);
/* KV cache: 2 x layers x kv_heads x head_dim x bytes per token of one
 * sequence; the total for batch x (context + prompt + generated)
 * positions; the layers that keep one. */
NTP_API int64_t ntp_generate_result_kv_bytes_per_token(const ntp_generate_result *r);
NTP_API int64_t ntp_generate_result_kv_bytes_total(const ntp_generate_result *r);
NTP_API int ntp_generate_result_kv_layers(const ntp_generate_result *r);
/* Each phase's figures and its place on the roofline. */
NTP_API const ntp_generate_phase *ntp_generate_result_prefill(const ntp_generate_result *r);
NTP_API const ntp_generate_phase *ntp_generate_result_decode(const ntp_generate_result *r);
/* Why the shares are n/a; NULL when the ceilings are known. */
NTP_API const char *ntp_generate_result_roofline_note(const ntp_generate_result *r);
/* Per-layer rows of both phases, in execution order. */
NTP_API int ntp_generate_result_layer_count(const ntp_generate_result *r);
NTP_API const ntp_generate_layer *ntp_generate_result_layer(const ntp_generate_result *r, int i);
/* The tokens, [batch, gen_len + 1] row-major: the one prefill chose, then
 * each step's; zeros when static_only. */
NTP_API const int32_t *ntp_generate_result_tokens(const ntp_generate_result *r);
/* Each decode step's time, [gen_len]; zeros when static_only. */
NTP_API const double *ntp_generate_result_step_ms(const ntp_generate_result *r);
/* Memory: the weights as the engine holds them (once: the decode plan
 * borrows the prefill plan's), both plans' activation arenas, and
 * weights + arenas + kv_bytes_total. Static: the weights by analysis,
 * arenas 0. A backend's own packed copies are not counted. */
NTP_API int64_t ntp_generate_result_weight_bytes(const ntp_generate_result *r);
NTP_API int64_t ntp_generate_result_arena_bytes(const ntp_generate_result *r);
NTP_API int64_t ntp_generate_result_memory_bytes(const ntp_generate_result *r);

/* Run prefill and decode on the topology at `path`. Refused before
 * anything is allocated: prompt + context + generation beyond the model's
 * max_positions, a cache dtype the backend cannot keep, a cache beyond
 * max_memory (the message gives the bytes per token). */
NTP_API ntp_status ntp_generate(ntp_ctx *ctx, const char *path, const ntp_generate_opts *o,
                                ntp_generate_result **out);
NTP_API void ntp_generate_result_free(ntp_generate_result *r);

/* The report as a table or as JSON (keys in docs/decoders.md: ttft_ms,
 * tpot_ms {p50, p90, p99, mean}, prefill_tokens_per_s,
 * decode_tokens_per_s, kv_bytes_per_token, ...). */
NTP_API ntp_status ntp_report_write_generate_table(ntp_ctx *ctx, const ntp_generate_result *r,
                                                   FILE *f);
NTP_API ntp_status ntp_report_write_generate_json(ntp_ctx *ctx, const ntp_generate_result *r,
                                                  FILE *f);

/* KV cache bytes per token of one sequence for the topology g: 2 x the sum
 * over kv_attention layers of kv_heads x head_dim, times the bytes of
 * kv_dtype (for i8: kv_heads x (head_dim + 4), the row's f32 scale); *layers gets the count of such
 * layers. 0 when g has none. */
NTP_API int64_t ntp_graph_kv_bytes_per_token(const ntp_graph *g, ntp_dtype kv_dtype, int *layers);

/* --- sweeps (docs/decoders.md) ----------------------------------------------
 * generate over the full factorial of up to 8 axes, each "NAME=V1,V2,...":
 * `context` (context depth), `prompt` (prompt length), `gen` (generation
 * length), `batch`, `kv_dtype` (f32, bf16, f16, i8), `weight_dtype` (f32,
 * bf16, i8), or any other name,
 * which sets that <param> of the topology (`kv_heads` in tinyllama.xml).
 * Every point is one ntp_generate with the base options changed by its
 * values; with static_only nothing is run (cheap, for any size). */
#define NTP_GENERATE_SWEEP_MAX_AXES 8

typedef struct ntp_generate_point {
    const char *value[NTP_GENERATE_SWEEP_MAX_AXES]; /* this point's value of each axis */
    ntp_generate_result *r;
} ntp_generate_point;

/* A sweep: an opaque handle (ntp_generate_sweep_run), read through the
 * accessors below, which answer NULL, 0 or false for a NULL sweep or an
 * index out of range; freed with ntp_generate_sweep_free. */
typedef struct ntp_generate_sweep ntp_generate_sweep;

/* The model file swept. */
NTP_API const char *ntp_generate_sweep_model_path(const ntp_generate_sweep *s);
/* The axes in the order given: axis a's name, and its values. */
NTP_API int ntp_generate_sweep_axis_count(const ntp_generate_sweep *s);
NTP_API const char *ntp_generate_sweep_axis(const ntp_generate_sweep *s, int a);
NTP_API int ntp_generate_sweep_value_count(const ntp_generate_sweep *s, int a);
NTP_API const char *ntp_generate_sweep_value(const ntp_generate_sweep *s, int a, int v);
/* The points of the full factorial, the last axis varying fastest. */
NTP_API int ntp_generate_sweep_point_count(const ntp_generate_sweep *s);
NTP_API const ntp_generate_point *ntp_generate_sweep_point(const ntp_generate_sweep *s, int i);
/* Whether every point was analysed, not run (ntp_generate_opts.static_only). */
NTP_API bool ntp_generate_sweep_static_only(const ntp_generate_sweep *s);

/* Refused before running anything: a malformed axis, an axis given twice,
 * a kv_dtype value that is not a cache type, more than 4096 points. A
 * point refused by ntp_generate (beyond max_positions, over max_memory)
 * fails the sweep with that point named. o->progress, when set, gets
 * phase "sweep" and the points done. */
NTP_API ntp_status ntp_generate_sweep_run(ntp_ctx *ctx, const char *path,
                                          const ntp_generate_opts *o, const char *const *vary,
                                          int n_vary, ntp_generate_sweep **out);
NTP_API void ntp_generate_sweep_free(ntp_generate_sweep *s);
/* One row per point: the axes' values, KV bytes per token and in all,
 * weights, decode bytes per step and intensity, TTFT, TPOT p50/p99,
 * decode tokens/s, the roofline's decode tokens/s. JSON: {"model",
 * "static", "axes": [...], "points": [{"values": {...}, "result": <the
 * generate report>}]}. */
NTP_API ntp_status ntp_report_write_generate_sweep_table(ntp_ctx *ctx, const ntp_generate_sweep *s,
                                                         FILE *f);
NTP_API ntp_status ntp_report_write_generate_sweep_json(ntp_ctx *ctx, const ntp_generate_sweep *s,
                                                        FILE *f);
/* A self-contained HTML page (docs/html.md's building blocks): against the
 * `context` axis (else the first), for each combination of the others,
 * TPOT (measured p50 with p50..p99 whiskers; static: the roofline's, n/a
 * without ceilings), KV cache bytes in all and decode bytes per step; then
 * the table. */
NTP_API ntp_status ntp_report_write_generate_sweep_html(ntp_ctx *ctx, const ntp_generate_sweep *s,
                                                        FILE *f);

/* --- the per-phase split in `ntprof analyze` ---------------------------------
 * True when g is a topology ntp_generate can drive (the inputs tokens and
 * positions, kv_attention layers, an lm_head and an argmax). */
NTP_API bool ntp_graph_is_decoder(const ntp_graph *g);
/* ntp_report_write_analysis, and for a decoder the phases of `phases` (an
 * ntp_generate result, static_only or not): in the table the same lines as
 * generate's; in JSON a key "phases" {prompt_len, gen_len, context_depth,
 * batch, kv_dtype, kv_bytes_per_token, kv_bytes_total, weight_bytes,
 * prefill, decode, roofline_note} with prefill and decode as in generate's
 * report. CSV: the layers only. phases NULL: the plain analysis. */
NTP_API ntp_status ntp_report_write_analysis_phases(ntp_ctx *ctx, const ntp_graph *g,
                                                    const ntp_analysis *a,
                                                    const ntp_generate_result *phases,
                                                    ntp_format fmt, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
