/* The run result's accessors (include/ntprof/run.h): the result is opaque
 * to callers, its definition is src/measure/run-result-impl.h. Each takes
 * NULL or an index out of range and answers NULL, or 0 for a count. */
#include "measure/run-result-impl.h"

const char *ntp_run_result_topology(const ntp_run_result *r)
{
    return r ? r->topology : NULL;
}

const char *ntp_run_result_source(const ntp_run_result *r)
{
    return r ? r->source : NULL;
}

const char *ntp_run_result_backend(const ntp_run_result *r)
{
    return r ? r->backend : NULL;
}

ntp_dtype ntp_run_result_precision(const ntp_run_result *r)
{
    return r ? r->precision : NTP_DTYPE_F32;
}

int64_t ntp_run_result_batch(const ntp_run_result *r)
{
    return r ? r->batch : 0;
}

int ntp_run_result_threads(const ntp_run_result *r)
{
    return r ? r->threads : 0;
}

uint64_t ntp_run_result_seed(const ntp_run_result *r)
{
    return r ? r->seed : 0;
}

int ntp_run_result_warmup(const ntp_run_result *r)
{
    return r ? r->warmup : 0;
}

int ntp_run_result_iterations(const ntp_run_result *r)
{
    return r ? r->iterations : 0;
}

const char *ntp_run_result_only_marker(const ntp_run_result *r)
{
    return r ? r->only_marker : NULL;
}

int ntp_run_result_param_count(const ntp_run_result *r)
{
    return r ? r->n_params : 0;
}

const char *ntp_run_result_param_name(const ntp_run_result *r, int i)
{
    return r && i >= 0 && i < r->n_params ? r->param_names[i] : NULL;
}

const char *ntp_run_result_param_value(const ntp_run_result *r, int i)
{
    return r && i >= 0 && i < r->n_params ? r->param_values[i] : NULL;
}

bool ntp_run_result_fused(const ntp_run_result *r)
{
    return r ? r->fused : false;
}

const char *ntp_run_result_wait_policy(const ntp_run_result *r)
{
    return r ? r->wait_policy : NULL;
}

const char *ntp_run_result_wait_settings(const ntp_run_result *r)
{
    return r ? r->wait_settings : NULL;
}

int ntp_run_result_layer_count(const ntp_run_result *r)
{
    return r ? r->n_layers : 0;
}

const ntp_layer_result *ntp_run_result_layer(const ntp_run_result *r, int i)
{
    return r && i >= 0 && i < r->n_layers ? &r->layers[i] : NULL;
}

int ntp_run_result_marker_count(const ntp_run_result *r)
{
    return r ? r->n_markers : 0;
}

const ntp_marker_result *ntp_run_result_marker(const ntp_run_result *r, int i)
{
    return r && i >= 0 && i < r->n_markers ? &r->markers[i] : NULL;
}

const ntp_stats *ntp_run_result_end_to_end_ms(const ntp_run_result *r)
{
    return r ? &r->end_to_end_ms : NULL;
}

const ntp_stats *ntp_run_result_layer_sum_ms(const ntp_run_result *r)
{
    return r ? &r->layer_sum_ms : NULL;
}

double ntp_run_result_overhead_fraction(const ntp_run_result *r)
{
    return r ? r->overhead_fraction : 0;
}

double ntp_run_result_overhead_per_layer_us(const ntp_run_result *r)
{
    return r ? r->overhead_per_layer_us : 0;
}

double ntp_run_result_throughput(const ntp_run_result *r)
{
    return r ? r->throughput : 0;
}

double ntp_run_result_latency_ms(const ntp_run_result *r)
{
    return r ? r->latency_ms : 0;
}

double ntp_run_result_prepare_ms(const ntp_run_result *r)
{
    return r ? r->prepare_ms : 0;
}

int64_t ntp_run_result_flops(const ntp_run_result *r)
{
    return r ? r->flops : 0;
}

const ntp_memory_result *ntp_run_result_memory(const ntp_run_result *r)
{
    return r ? &r->memory : NULL;
}

const ntp_env *ntp_run_result_env(const ntp_run_result *r)
{
    return r ? &r->env : NULL;
}

int ntp_run_result_warning_count(const ntp_run_result *r)
{
    return r ? r->n_warnings : 0;
}

const char *ntp_run_result_warning(const ntp_run_result *r, int i)
{
    return r && i >= 0 && i < r->n_warnings ? r->warnings[i] : NULL;
}

int ntp_run_result_trace_count(const ntp_run_result *r)
{
    return r ? r->n_trace : 0;
}

const ntp_trace_iter *ntp_run_result_trace(const ntp_run_result *r, int i)
{
    return r && i >= 0 && i < r->n_trace ? &r->trace[i] : NULL;
}

int ntp_run_result_accuracy_count(const ntp_run_result *r)
{
    return r ? r->n_accuracy : 0;
}

const ntp_accuracy *ntp_run_result_accuracy(const ntp_run_result *r, int i)
{
    return r && i >= 0 && i < r->n_accuracy ? &r->accuracy[i] : NULL;
}

const char *ntp_run_result_accuracy_baseline(const ntp_run_result *r)
{
    return r ? r->accuracy_baseline : NULL;
}

const char *ntp_run_result_counters(const ntp_run_result *r)
{
    return r ? r->counters : NULL;
}

const char *ntp_run_result_tool(const ntp_run_result *r)
{
    return r ? r->tool : NULL;
}

int ntp_run_result_counter_iterations(const ntp_run_result *r)
{
    return r ? r->counter_iterations : 0;
}

int ntp_run_result_counter_threads(const ntp_run_result *r)
{
    return r ? r->counter_threads : 0;
}

int ntp_run_result_counter_note_count(const ntp_run_result *r)
{
    return r ? r->n_counter_notes : 0;
}

const char *ntp_run_result_counter_note(const ntp_run_result *r, int i)
{
    return r && i >= 0 && i < r->n_counter_notes ? r->counter_notes[i] : NULL;
}

const ntp_roofline *ntp_run_result_roofline(const ntp_run_result *r)
{
    return r ? &r->roofline : NULL;
}

const ntp_run_prediction *ntp_run_result_prediction(const ntp_run_result *r)
{
    return r ? &r->prediction : NULL;
}

const struct ntp_torch_script_result *ntp_run_result_torch_script(const ntp_run_result *r)
{
    return r ? r->torch_script : NULL;
}

int64_t ntp_run_result_sweep_id(const ntp_run_result *r)
{
    return r ? r->sweep_id : 0;
}

int ntp_run_result_sweep_index(const ntp_run_result *r)
{
    return r ? r->sweep_index : 0;
}

const char *ntp_run_result_sweep_created_at(const ntp_run_result *r)
{
    return r ? r->sweep_created_at : NULL;
}

const char *ntp_run_result_sweep_job(const ntp_run_result *r)
{
    return r ? r->sweep_job : NULL;
}
