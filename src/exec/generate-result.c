/* The generate result's accessors (include/ntprof/generate.h): the result
 * is opaque to callers, its definition is in src/exec/generate-impl.h.
 * Each answers NULL, or 0, for a NULL result or an index out of range. */
#include "generate-impl.h"

const char *ntp_generate_result_model(const ntp_generate_result *r)
{
    return r ? r->model : NULL;
}

const char *ntp_generate_result_backend(const ntp_generate_result *r)
{
    return r ? r->backend : NULL;
}

int64_t ntp_generate_result_batch(const ntp_generate_result *r)
{
    return r ? r->batch : 0;
}

int64_t ntp_generate_result_prompt_len(const ntp_generate_result *r)
{
    return r ? r->prompt_len : 0;
}

int64_t ntp_generate_result_gen_len(const ntp_generate_result *r)
{
    return r ? r->gen_len : 0;
}

int64_t ntp_generate_result_context_depth(const ntp_generate_result *r)
{
    return r ? r->context_depth : 0;
}

int64_t ntp_generate_result_max_positions(const ntp_generate_result *r)
{
    return r ? r->max_positions : 0;
}

bool ntp_generate_result_static_only(const ntp_generate_result *r)
{
    return r ? r->static_only : false;
}

ntp_dtype ntp_generate_result_kv_dtype(const ntp_generate_result *r)
{
    return r ? r->kv_dtype : NTP_DTYPE_F32;
}

ntp_dtype ntp_generate_result_weight_dtype(const ntp_generate_result *r)
{
    return r ? r->weight_dtype : NTP_DTYPE_F32;
}

int64_t ntp_generate_result_params(const ntp_generate_result *r)
{
    return r ? r->params : 0;
}

int ntp_generate_result_threads(const ntp_generate_result *r)
{
    return r ? r->threads : 0;
}

double ntp_generate_result_ttft_ms(const ntp_generate_result *r)
{
    return r ? r->ttft_ms : 0;
}

double ntp_generate_result_tpot_p50_ms(const ntp_generate_result *r)
{
    return r ? r->tpot_p50_ms : 0;
}

double ntp_generate_result_tpot_p90_ms(const ntp_generate_result *r)
{
    return r ? r->tpot_p90_ms : 0;
}

double ntp_generate_result_tpot_p99_ms(const ntp_generate_result *r)
{
    return r ? r->tpot_p99_ms : 0;
}

double ntp_generate_result_tpot_mean_ms(const ntp_generate_result *r)
{
    return r ? r->tpot_mean_ms : 0;
}

double ntp_generate_result_prefill_tokens_per_s(const ntp_generate_result *r)
{
    return r ? r->prefill_tokens_per_s : 0;
}

double ntp_generate_result_decode_tokens_per_s(const ntp_generate_result *r)
{
    return r ? r->decode_tokens_per_s : 0;
}

int64_t ntp_generate_result_kv_bytes_per_token(const ntp_generate_result *r)
{
    return r ? r->kv_bytes_per_token : 0;
}

int64_t ntp_generate_result_kv_bytes_total(const ntp_generate_result *r)
{
    return r ? r->kv_bytes_total : 0;
}

int ntp_generate_result_kv_layers(const ntp_generate_result *r)
{
    return r ? r->kv_layers : 0;
}

const ntp_generate_phase *ntp_generate_result_prefill(const ntp_generate_result *r)
{
    return r ? &r->prefill : NULL;
}

const ntp_generate_phase *ntp_generate_result_decode(const ntp_generate_result *r)
{
    return r ? &r->decode : NULL;
}

const char *ntp_generate_result_roofline_note(const ntp_generate_result *r)
{
    return r ? r->roofline_note : NULL;
}

int ntp_generate_result_layer_count(const ntp_generate_result *r)
{
    return r ? r->n_layers : 0;
}

const ntp_generate_layer *ntp_generate_result_layer(const ntp_generate_result *r, int i)
{
    return r && i >= 0 && i < r->n_layers ? &r->layers[i] : NULL;
}

const int32_t *ntp_generate_result_tokens(const ntp_generate_result *r)
{
    return r ? r->tokens : NULL;
}

const double *ntp_generate_result_step_ms(const ntp_generate_result *r)
{
    return r ? r->step_ms : NULL;
}

int64_t ntp_generate_result_weight_bytes(const ntp_generate_result *r)
{
    return r ? r->weight_bytes : 0;
}

int64_t ntp_generate_result_arena_bytes(const ntp_generate_result *r)
{
    return r ? r->arena_bytes : 0;
}

int64_t ntp_generate_result_memory_bytes(const ntp_generate_result *r)
{
    return r ? r->memory_bytes : 0;
}
