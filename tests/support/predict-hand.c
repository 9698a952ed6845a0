#include "predict-hand.h"

#include <stdio.h>
#include <string.h>

void test_hand_calibration(ntp_calibration *c, const char *backend, const char *machine,
                           bool fit_copies)
{
    memset(c, 0, sizeof *c);
    snprintf(c->backend, sizeof c->backend, "%s", backend);
    snprintf(c->precision, sizeof c->precision, "f32");
    snprintf(c->machine_key, sizeof c->machine_key, "%s", machine);
    snprintf(c->cache, sizeof c->cache, "warm");
    c->peak_gflops = 100;
    c->n_levels = 2;
    snprintf(c->levels[0].name, sizeof c->levels[0].name, "L2");
    c->levels[0].capacity_bytes = 65536;
    c->levels[0].gbps = 200;
    snprintf(c->levels[1].name, sizeof c->levels[1].name, "DRAM");
    c->levels[1].gbps = 20;
    for (int f = 0; f < NTP_PREDICT_FAMILY_COUNT; f++) {
        if (f == NTP_PREDICT_FAMILY_COPY && !fit_copies)
            continue;
        ntp_family_model *m = &c->family[f];
        m->calibrated = true;
        m->coef[NTP_PREDICT_TERM_OVERHEAD] = 1e-6;
        m->coef[NTP_PREDICT_TERM_COMPUTE] = 1;
        m->coef[NTP_PREDICT_TERM_MEMORY] = 1;
    }
    if (fit_copies) {
        ntp_family_model *m = &c->family[NTP_PREDICT_FAMILY_COPY];
        m->coef[NTP_PREDICT_TERM_OVERHEAD] = 2e-6;
        m->coef[NTP_PREDICT_TERM_COMPUTE] = 0;
        m->coef[NTP_PREDICT_TERM_MEMORY] = 3;
    }
}

double test_hand_ms(int64_t flops, int64_t bytes)
{
    double gbps = bytes <= 65536 ? 200 : 20;
    return 1e3 * (1e-6 + (double)flops / 100e9 + (double)bytes / (gbps * 1e9));
}

double test_hand_copy_ms(bool fitted, int64_t bytes)
{
    double gbps = bytes <= 65536 ? 200 : 20;
    if (!fitted)
        return 1e3 * (double)bytes / (gbps * 1e9);
    return 1e3 * (2e-6 + 3 * (double)bytes / (gbps * 1e9));
}

void test_hand_reorder(ntp_calibration *c)
{
    ntp_family_model *m = &c->reorder;
    memset(m, 0, sizeof *m);
    m->calibrated = true;
    m->samples = 3;
    m->coef[NTP_PREDICT_TERM_OVERHEAD] = 5e-6;
    m->coef[NTP_PREDICT_TERM_MEMORY] = 4;
}

double test_hand_reorder_ms(int64_t bytes)
{
    double gbps = bytes <= 65536 ? 200 : 20;
    return 1e3 * (5e-6 + 4 * (double)bytes / (gbps * 1e9));
}

const ntp_layer_prediction *test_find_prediction(const ntp_prediction *p, bool copies,
                                                 const char *name)
{
    int n = copies ? ntp_prediction_copy_count(p) : ntp_prediction_layer_count(p);
    for (int i = 0; i < n; i++) {
        const ntp_layer_prediction *l =
            copies ? ntp_prediction_copy(p, i) : ntp_prediction_layer(p, i);
        if (strcmp(l->name, name) == 0)
            return l;
    }
    return NULL;
}
