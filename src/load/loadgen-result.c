/* The load result's accessors (include/ntprof/load.h): the result is
 * opaque to callers, its definition is src/load/loadgen-result-impl.h.
 * Each takes NULL or an index out of range and answers NULL, 0, false or a
 * zeroed record. */
#include "loadgen-result-impl.h"

const char *ntp_loadgen_result_topology(const ntp_loadgen_result *r)
{
    return r ? r->topology : NULL;
}

const char *ntp_loadgen_result_source(const ntp_loadgen_result *r)
{
    return r ? r->source : NULL;
}

const char *ntp_loadgen_result_backend(const ntp_loadgen_result *r)
{
    return r ? r->backend : NULL;
}

ntp_loadgen_scenario ntp_loadgen_result_scenario(const ntp_loadgen_result *r)
{
    return r ? r->scenario : NTP_LOADGEN_SINGLE_STREAM;
}

int ntp_loadgen_result_instances(const ntp_loadgen_result *r)
{
    return r ? r->instances : 0;
}

int ntp_loadgen_result_threads_per_instance(const ntp_loadgen_result *r)
{
    return r ? r->threads_per_instance : 0;
}

int ntp_loadgen_result_max_batch(const ntp_loadgen_result *r)
{
    return r ? r->max_batch : 0;
}

int ntp_loadgen_result_samples_per_query(const ntp_loadgen_result *r)
{
    return r ? r->samples_per_query : 0;
}

double ntp_loadgen_result_batch_timeout_us(const ntp_loadgen_result *r)
{
    return r ? r->batch_timeout_us : 0;
}

bool ntp_loadgen_result_pinned(const ntp_loadgen_result *r)
{
    return r ? r->pinned : false;
}

uint64_t ntp_loadgen_result_seed(const ntp_loadgen_result *r)
{
    return r ? r->seed : 0;
}

double ntp_loadgen_result_duration_s(const ntp_loadgen_result *r)
{
    return r ? r->duration_s : 0;
}

int64_t ntp_loadgen_result_min_queries(const ntp_loadgen_result *r)
{
    return r ? r->min_queries : 0;
}

double ntp_loadgen_result_latency_bound_ms(const ntp_loadgen_result *r)
{
    return r ? r->latency_bound_ms : 0;
}

int64_t ntp_loadgen_result_queries(const ntp_loadgen_result *r)
{
    return r ? r->queries : 0;
}

int64_t ntp_loadgen_result_samples(const ntp_loadgen_result *r)
{
    return r ? r->samples : 0;
}

double ntp_loadgen_result_elapsed_s(const ntp_loadgen_result *r)
{
    return r ? r->elapsed_s : 0;
}

double ntp_loadgen_result_qps_offered(const ntp_loadgen_result *r)
{
    return r ? r->qps_offered : 0;
}

double ntp_loadgen_result_qps_achieved(const ntp_loadgen_result *r)
{
    return r ? r->qps_achieved : 0;
}

double ntp_loadgen_result_samples_per_s(const ntp_loadgen_result *r)
{
    return r ? r->samples_per_s : 0;
}

ntp_loadgen_latency ntp_loadgen_result_latency_ms(const ntp_loadgen_result *r)
{
    return r ? r->latency_ms : (ntp_loadgen_latency){0};
}

double ntp_loadgen_result_percentile(const ntp_loadgen_result *r)
{
    return r ? r->percentile : 0;
}

double ntp_loadgen_result_metric_ms(const ntp_loadgen_result *r)
{
    return r ? r->metric_ms : 0;
}

double ntp_loadgen_result_service_ms(const ntp_loadgen_result *r, int i)
{
    return r && i >= 0 && i < 2 ? r->service_ms[i] : 0;
}

double ntp_loadgen_result_prepare_ms(const ntp_loadgen_result *r)
{
    return r ? r->prepare_ms : 0;
}

ntp_loadgen_validity ntp_loadgen_result_validity(const ntp_loadgen_result *r)
{
    if (!r)
        return (ntp_loadgen_validity){0};
    return (ntp_loadgen_validity){.valid = r->valid,
                                  .min_duration_met = r->min_duration_met,
                                  .min_queries_met = r->min_queries_met,
                                  .bound_met = r->bound_met,
                                  .early_stopping_met = r->early_stopping_met,
                                  .early_stopping_needed = r->early_stopping_needed,
                                  .early_stopping_ms = r->early_stopping_ms,
                                  .overlatency = r->overlatency};
}

int64_t ntp_loadgen_result_batch_count(const ntp_loadgen_result *r, int size)
{
    return r && r->batch_hist && size >= 0 && size <= r->max_batch ? r->batch_hist[size] : 0;
}

int ntp_loadgen_result_depth_count(const ntp_loadgen_result *r)
{
    return r ? r->n_depth : 0;
}

int ntp_loadgen_result_depth(const ntp_loadgen_result *r, int i)
{
    return r && i >= 0 && i < r->n_depth ? r->depth[i] : 0;
}

double ntp_loadgen_result_depth_time_s(const ntp_loadgen_result *r, int i)
{
    return r && i >= 0 && i < r->n_depth ? r->depth_t_s[i] : 0;
}

int ntp_loadgen_result_max_depth(const ntp_loadgen_result *r)
{
    return r ? r->max_depth : 0;
}

double ntp_loadgen_result_utilisation(const ntp_loadgen_result *r, int i)
{
    return r && r->utilisation && i >= 0 && i < r->instances ? r->utilisation[i] : 0;
}

ntp_loadgen_generator ntp_loadgen_result_generator(const ntp_loadgen_result *r)
{
    return r ? r->gen : (ntp_loadgen_generator){0};
}

bool ntp_loadgen_result_interrupted(const ntp_loadgen_result *r)
{
    return r ? r->interrupted : false;
}

bool ntp_loadgen_result_searched(const ntp_loadgen_result *r)
{
    return r ? r->searched : false;
}

double ntp_loadgen_result_max_qps(const ntp_loadgen_result *r)
{
    return r ? r->max_qps : 0;
}

int ntp_loadgen_result_point_count(const ntp_loadgen_result *r)
{
    return r ? r->n_points : 0;
}

const ntp_loadgen_point *ntp_loadgen_result_point(const ntp_loadgen_result *r, int i)
{
    return r && i >= 0 && i < r->n_points ? &r->points[i] : NULL;
}

const ntp_loadgen_query *ntp_loadgen_result_query(const ntp_loadgen_result *r, int64_t i)
{
    return r && r->q && i >= 0 && i < r->queries ? &r->q[i] : NULL;
}

double ntp_loadgen_result_load_average(const ntp_loadgen_result *r)
{
    return r ? r->load_average : 0;
}

const ntp_contention *ntp_loadgen_result_contention(const ntp_loadgen_result *r)
{
    return r ? &r->contention : NULL;
}

const char *ntp_loadgen_result_cpu_model(const ntp_loadgen_result *r)
{
    return r ? r->cpu_model : NULL;
}

int ntp_loadgen_result_cpus(const ntp_loadgen_result *r)
{
    return r ? r->cpus : 0;
}

int ntp_loadgen_result_warning_count(const ntp_loadgen_result *r)
{
    return r ? r->n_warnings : 0;
}

const char *ntp_loadgen_result_warning(const ntp_loadgen_result *r, int i)
{
    return r && i >= 0 && i < r->n_warnings ? r->warnings[i] : NULL;
}
