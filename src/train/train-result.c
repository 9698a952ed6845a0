/* The training result's accessors (include/ntprof/train.h): the result is
 * opaque to callers, its definition is in src/train/train-impl.h. Each
 * answers NULL, or 0, for a NULL result or an index out of range. */
#include "train-impl.h"

const char *ntp_train_result_model(const ntp_train_result *r)
{
    return r ? r->model : NULL;
}

int ntp_train_result_steps(const ntp_train_result *r)
{
    return r ? r->steps : 0;
}

int64_t ntp_train_result_batch(const ntp_train_result *r)
{
    return r ? r->batch : 0;
}

ntp_loss ntp_train_result_loss(const ntp_train_result *r)
{
    return r ? r->loss : NTP_LOSS_CROSS_ENTROPY;
}

ntp_optimizer ntp_train_result_optimizer(const ntp_train_result *r)
{
    return r ? r->optimizer : NTP_OPTIMIZER_SGD;
}

double ntp_train_result_lr(const ntp_train_result *r)
{
    return r ? r->lr : 0;
}

const ntp_stats *ntp_train_result_step(const ntp_train_result *r)
{
    return r ? &r->step : NULL;
}

double ntp_train_result_samples_per_s(const ntp_train_result *r)
{
    return r ? r->samples_per_s : 0;
}

const double *ntp_train_result_losses(const ntp_train_result *r)
{
    return r ? r->losses : NULL;
}

const double *ntp_train_result_losses_f32(const ntp_train_result *r)
{
    return r ? r->losses_f32 : NULL;
}

const ntp_train_plan *ntp_train_result_plan(const ntp_train_result *r)
{
    return r ? r->plan : NULL;
}

int64_t ntp_train_result_allocated_bytes(const ntp_train_result *r)
{
    return r ? r->allocated_bytes : 0;
}

int64_t ntp_train_result_rss_peak_bytes(const ntp_train_result *r)
{
    return r ? r->rss_peak_bytes : 0;
}

int ntp_train_result_layer_count(const ntp_train_result *r)
{
    return r ? r->n_layers : 0;
}

const ntp_train_layer *ntp_train_result_layer(const ntp_train_result *r, int i)
{
    return r && i >= 0 && i < r->n_layers ? &r->layers[i] : NULL;
}

const char *ntp_train_result_backend(const ntp_train_result *r)
{
    return r ? r->backend : NULL;
}

ntp_dtype ntp_train_result_precision(const ntp_train_result *r)
{
    return r ? r->precision : NTP_DTYPE_F32;
}
