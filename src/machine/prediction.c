/* The prediction's accessors (include/ntprof/predict.h): the prediction is
 * opaque to callers, its definition is src/machine/prediction-impl.h. Each
 * takes NULL or an index out of range and answers NULL, or 0 or false. */
#include "machine/prediction-impl.h"

const char *ntp_prediction_topology(const ntp_prediction *p)
{
    return p ? p->topology : NULL;
}

int64_t ntp_prediction_batch(const ntp_prediction *p)
{
    return p ? p->batch : 0;
}

const ntp_calibration *ntp_prediction_calibration(const ntp_prediction *p)
{
    return p ? &p->cal : NULL;
}

bool ntp_prediction_roofline_only(const ntp_prediction *p)
{
    return p ? p->roofline_only : false;
}

int ntp_prediction_layer_count(const ntp_prediction *p)
{
    return p ? p->n_layers : 0;
}

const ntp_layer_prediction *ntp_prediction_layer(const ntp_prediction *p, int i)
{
    return p && i >= 0 && i < p->n_layers ? &p->layers[i] : NULL;
}

double ntp_prediction_total_ms(const ntp_prediction *p)
{
    return p ? p->total_ms : 0;
}

const char *ntp_prediction_uncalibrated(const ntp_prediction *p)
{
    return p ? p->uncalibrated : NULL;
}

int ntp_prediction_unpredicted(const ntp_prediction *p)
{
    return p ? p->n_unpredicted : 0;
}

int ntp_prediction_copy_count(const ntp_prediction *p)
{
    return p ? p->n_copies : 0;
}

const ntp_layer_prediction *ntp_prediction_copy(const ntp_prediction *p, int i)
{
    return p && i >= 0 && i < p->n_copies ? &p->copies[i] : NULL;
}

double ntp_prediction_copies_ms(const ntp_prediction *p)
{
    return p ? p->copies_ms : 0;
}

const char *ntp_prediction_copies_note(const ntp_prediction *p)
{
    return p ? p->copies_note : NULL;
}

const char *ntp_prediction_weights_note(const ntp_prediction *p)
{
    return p ? p->weights_note : NULL;
}

bool ntp_prediction_fused(const ntp_prediction *p)
{
    return p ? p->fused : false;
}

int ntp_prediction_fused_layers(const ntp_prediction *p)
{
    return p ? p->n_fused : 0;
}
