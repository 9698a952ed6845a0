/* The roofline: each row and marker segment of a run placed by its
 * arithmetic intensity under the machine's ceilings.
 *
 * The bound is the classic one, min(peak, intensity x DRAM bandwidth), with
 * the peak of the micro-kernel at the run's precision. A row whose data
 * stayed in a cache between iterations can beat the DRAM roof (a share
 * above 1); the cache ceilings are carried along so plots can show why. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "machine-impl.h"

static const char *peak_name(ntp_dtype p)
{
    switch (p) {
    case NTP_DTYPE_BF16: return "bf16";
    case NTP_DTYPE_I8:
    case NTP_DTYPE_U8: return "i8";
    default: return "f32";
    }
}

const ntp_peak *ntp_ceilings_peak(const ntp_ceilings *c, ntp_dtype p)
{
    if (!c)
        return NULL;
    const char *want = peak_name(p);
    for (int i = 0; i < c->n_peaks; i++)
        if (strcmp(c->peaks[i].precision, want) == 0 && c->peaks[i].gflops > 0)
            return &c->peaks[i];
    /* No kernel of its own (f16 everywhere, bf16 without avx512_bf16): the
     * f32 units are what such a run computes on. */
    for (int i = 0; i < c->n_peaks; i++)
        if (strcmp(c->peaks[i].precision, "f32") == 0 && c->peaks[i].gflops > 0)
            return &c->peaks[i];
    return NULL;
}

double ntp_ceilings_bandwidth(const ntp_ceilings *c, const char *level)
{
    if (!c || !level)
        return 0;
    for (int i = 0; i < c->n_levels; i++)
        if (strcmp(c->levels[i].level, level) == 0)
            return c->levels[i].gbps;
    return 0;
}

double ntp_roofline_attainable(double peak_gflops, double bandwidth_gbps, double intensity)
{
    if (!(peak_gflops > 0) || !(bandwidth_gbps > 0) || !(intensity > 0) || !isfinite(intensity))
        return 0;
    double mem = intensity * bandwidth_gbps;
    return mem < peak_gflops ? mem : peak_gflops;
}

/* attainable and share for one timed row; zeros where there is nothing to
 * place (no FLOPs, no bytes, no time of its own). */
static void place(const ntp_roofline *rl, int64_t flops, int64_t bytes, double gflops, bool timed,
                  double *attainable, double *share)
{
    *attainable = 0;
    *share = 0;
    if (!rl->available || !timed || flops <= 0 || bytes <= 0)
        return;
    double a = ntp_roofline_attainable(rl->peak_gflops, rl->bandwidth_gbps,
                                       (double)flops / (double)bytes);
    if (a <= 0)
        return;
    *attainable = a;
    *share = isfinite(gflops) && gflops > 0 ? gflops / a : 0;
}

void ntp_roofline_apply(ntp_run_result *r, const ntp_ceilings *c)
{
    if (!r)
        return;
    ntp_roofline *rl = &r->roofline;
    memset(rl, 0, sizeof *rl);
    const ntp_peak *pk = ntp_ceilings_peak(c, r->precision);
    double bw = ntp_ceilings_bandwidth(c, "DRAM");
    if (pk && bw > 0) {
        rl->available = true;
        snprintf(rl->machine, sizeof rl->machine, "%s", c->machine_key);
        snprintf(rl->measured_at, sizeof rl->measured_at, "%s", c->measured_at);
        rl->peak_gflops = pk->gflops;
        snprintf(rl->peak_source, sizeof rl->peak_source, "%s %s", pk->precision, pk->method);
        rl->bandwidth_gbps = bw;
        rl->ridge_intensity = pk->gflops / bw;
        for (int i = 0; i < c->n_levels && rl->n_levels < NTP_ROOFLINE_MAX_LEVELS; i++) {
            snprintf(rl->levels[rl->n_levels].name, sizeof rl->levels[0].name, "%s",
                     c->levels[i].level);
            rl->levels[rl->n_levels++].gbps = c->levels[i].gbps;
        }
    }
    for (int i = 0; i < r->n_layers; i++) {
        ntp_layer_result *l = &r->layers[i];
        place(rl, l->flops, l->bytes, l->gflops, !l->fused && l->time_ms.median > 0,
              &l->attainable_gflops, &l->roof_share);
    }
    for (int i = 0; i < r->n_markers; i++) {
        ntp_marker_result *m = &r->markers[i];
        place(rl, m->flops, m->bytes, m->gflops, m->time_ms.median > 0, &m->attainable_gflops,
              &m->roof_share);
    }
}
