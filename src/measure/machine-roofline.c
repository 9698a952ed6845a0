/* The roofline: each row and marker segment of a run placed by its
 * arithmetic intensity under the machine's ceilings.
 *
 * The bound is the classic one, min(peak, intensity x DRAM bandwidth). Rows
 * on the CPU use the micro-kernel peak at the run's precision and the DRAM
 * triad; rows that ran on a device backend use the GPU's GEMM peak for
 * their math and the device's DRAM bandwidth, and copies between host and
 * device the link's bandwidth. A row whose data stayed in a cache between
 * iterations can beat the DRAM roof (a share above 1); the cache ceilings
 * are carried along so plots can show why. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend-impl.h"
#include "core/ctx-impl.h"
#include "machine-impl.h"

static const char *peak_name(ntp_dtype p)
{
    switch (p) {
    case NTP_DTYPE_BF16: return "bf16";
    case NTP_DTYPE_I8:
    case NTP_DTYPE_U8: return "i8";
    /* f16 has a kernel of its own nowhere; integer indices are not math. */
    case NTP_DTYPE_F32:
    case NTP_DTYPE_F16:
    case NTP_DTYPE_I32:
    case NTP_DTYPE_I64:
    case NTP_DTYPE_COUNT: break;
    }
    return "f32";
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

int ntp__ceilings_level(const ntp_ceilings *c, const char *level)
{
    for (int i = 0; c && level && i < c->n_levels; i++)
        if (strcmp(c->levels[i].level, level) == 0)
            return i;
    return -1;
}

double ntp_ceilings_bandwidth(const ntp_ceilings *c, const char *level)
{
    int i = ntp__ceilings_level(c, level);
    return i < 0 ? 0 : c->levels[i].gbps;
}

double ntp_roofline_attainable(double peak_gflops, double bandwidth_gbps, double intensity)
{
    if (!(peak_gflops > 0) || !(bandwidth_gbps > 0) || !(intensity > 0) || !isfinite(intensity))
        return 0;
    double mem = intensity * bandwidth_gbps;
    return mem < peak_gflops ? mem : peak_gflops;
}

/* One part's time under the roofs, in seconds per 10^9 FLOP or byte. */
static double part_time(int64_t flops, int64_t bytes, double peak, double bw)
{
    double tc = (double)flops / peak, tm = (double)bytes / bw;
    return tc > tm ? tc : tm;
}

int ntp_roofline_dominant_part(const ntp_cost_part *parts, int n_parts, double peak_gflops,
                               double bandwidth_gbps)
{
    if (!parts || n_parts <= 0 || !(peak_gflops > 0) || !(bandwidth_gbps > 0))
        return -1;
    int best = -1;
    double best_t = -1;
    for (int i = 0; i < n_parts; i++) {
        double t = part_time(parts[i].flops, parts[i].bytes, peak_gflops, bandwidth_gbps);
        if (t > best_t) {
            best_t = t;
            best = i;
        }
    }
    return best;
}

double ntp_roofline_attainable_parts(const ntp_cost_part *parts, int n_parts, int64_t flops,
                                     int64_t bytes, double peak_gflops, double bandwidth_gbps)
{
    if (!parts || n_parts <= 0)
        return ntp_roofline_attainable(peak_gflops, bandwidth_gbps,
                                       bytes > 0 ? (double)flops / (double)bytes : 0);
    if (!(peak_gflops > 0) || !(bandwidth_gbps > 0) || flops <= 0)
        return 0;
    double t = 0;
    for (int i = 0; i < n_parts; i++)
        t += part_time(parts[i].flops, parts[i].bytes, peak_gflops, bandwidth_gbps);
    if (!(t > 0))
        return 0;
    double a = (double)flops / t;
    return a < peak_gflops ? a : peak_gflops;
}

const char *ntp_gpu_math_name(ntp_gpu_math m)
{
    static const char *const n[NTP_GPU_MATH_COUNT] = {"f32", "tf32", "f16", "bf16"};
    return (int)m >= 0 && m < NTP_GPU_MATH_COUNT ? n[m] : "?";
}

int64_t ntp__roofline_marker_bytes(const ntp_run_result *r, const ntp_marker_result *m)
{
    int64_t bytes = m->bytes;
    for (int k = m->first; k <= m->last && k < r->n_layers; k++) {
        const ntp_layer_result *l = &r->layers[k];
        if (l->n_parts <= 0)
            continue;
        int64_t parts = 0;
        for (int i = 0; i < l->n_parts; i++)
            parts += l->parts[i].bytes;
        if (parts > l->bytes)
            bytes += parts - l->bytes;
    }
    return bytes;
}

/* The roof_ceiling names, static so that a result can point at them. */
static const char *const cpu_roof_names[] = {"cpu f32", "cpu bf16", "cpu i8"};
static const char *const gpu_roof_names[NTP_GPU_MATH_COUNT] = {"gpu f32", "gpu tf32", "gpu f16",
                                                               "gpu bf16"};

static const char *cpu_roof_name(const char *precision)
{
    for (size_t i = 0; i < sizeof cpu_roof_names / sizeof cpu_roof_names[0]; i++)
        if (strcmp(cpu_roof_names[i] + 4, precision) == 0)
            return cpu_roof_names[i];
    return "cpu f32";
}

/* Whether a row's backend runs on a device: a built backend says so by its
 * kind (docs/backends.md). A report read back may name one this build
 * lacks; of those, cuda is the only device backend ntprof has. */
static bool device_backend(const char *name)
{
    if (!name)
        return false;
    const ntp_backend_i *b = ntp__backend_find(name);
    if (b)
        return ntp__be_is_device(b);
    return strcmp(name, "cuda") == 0;
}

/* The GEMM math a GPU row computed at: TF32 when the backend says so in
 * the implementation name (--precision tf32 keeps f32 storage), else the
 * storage precision. i8 and wider types do not run on the GPU; f32 is
 * the honest roof for them. */
static ntp_gpu_math row_math(ntp_dtype p, const char *impl)
{
    switch (p) {
    case NTP_DTYPE_F16: return NTP_GPU_MATH_F16;
    case NTP_DTYPE_BF16: return NTP_GPU_MATH_BF16;
    case NTP_DTYPE_F32:
    case NTP_DTYPE_I8:
    case NTP_DTYPE_U8:
    case NTP_DTYPE_I32:
    case NTP_DTYPE_I64:
    case NTP_DTYPE_COUNT: break;
    }
    return impl && strstr(impl, ":tf32") ? NTP_GPU_MATH_TF32 : NTP_GPU_MATH_F32;
}

static bool is_copy(const char *type, bool *h2d)
{
    if (!type)
        return false;
    *h2d = strcmp(type, "h2d") == 0;
    return *h2d || strcmp(type, "d2h") == 0;
}

/* attainable and share for one timed row with FLOPs and bytes; zeros
 * where there is nothing to place. Returns whether it was placed. */
static bool place(double peak, double bw, const ntp_cost_part *parts, int n_parts, int64_t flops,
                  int64_t bytes, double gflops, bool timed, double *attainable, double *share)
{
    *attainable = 0;
    *share = 0;
    if (!timed || flops <= 0 || bytes <= 0)
        return false;
    double a = ntp_roofline_attainable_parts(parts, n_parts, flops, bytes, peak, bw);
    if (a <= 0)
        return false;
    *attainable = a;
    *share = isfinite(gflops) && gflops > 0 ? gflops / a : 0;
    return true;
}

static void place_layer(ntp_roofline *rl, const ntp_gpu_ceilings *gpu, ntp_dtype prec,
                        const char *cpu_roof, ntp_layer_result *l)
{
    l->attainable_gflops = 0;
    l->attainable_gbps = 0;
    l->roof_share = 0;
    l->roof_ceiling = NULL;
    bool timed = !l->fused && l->time_ms.median > 0;
    if (!device_backend(l->backend)) {
        if (place(rl->peak_gflops, rl->bandwidth_gbps, l->parts, l->n_parts, l->flops, l->bytes,
                  l->gflops, timed, &l->attainable_gflops, &l->roof_share))
            l->roof_ceiling = cpu_roof;
        return;
    }
    rl->gpu_rows = true;
    bool h2d = false, copy = is_copy(l->type, &h2d);
    /* Rows with nothing to place stay unplaced on the GPU as on the CPU. */
    if (!timed || (!copy && (l->flops <= 0 || l->bytes <= 0)))
        return;
    if (!gpu) {
        l->roof_ceiling = NTP_ROOF_NO_GPU;
        return;
    }
    if (copy) {
        /* A copy moves bytes over the link and computes nothing: its roof
         * is the link's page-locked bandwidth. Its share needs the bytes
         * it moved. */
        double link = h2d ? gpu->h2d_gbps : gpu->d2h_gbps;
        if (!(link > 0))
            return;
        l->attainable_gbps = link;
        l->roof_share = isfinite(l->gbps) && l->gbps > 0 ? l->gbps / link : 0;
        l->roof_ceiling = h2d ? "gpu h2d" : "gpu d2h";
        return;
    }
    ntp_gpu_math m = row_math(prec, l->impl);
    if (place(gpu->gemm_gflops[m], gpu->dram_gbps, l->parts, l->n_parts, l->flops, l->bytes,
              l->gflops, true, &l->attainable_gflops, &l->roof_share)) {
        l->roof_ceiling = gpu_roof_names[m];
        /* The header names the math the GPU rows used; TF32 wins over
         * f32 when a tf32 run left a few layers in IEEE f32. */
        if (!rl->gpu_math[0] || m == NTP_GPU_MATH_TF32) {
            snprintf(rl->gpu_math, sizeof rl->gpu_math, "%s", ntp_gpu_math_name(m));
            rl->gpu_peak_gflops = gpu->gemm_gflops[m];
            rl->gpu_ridge_intensity = gpu->dram_gbps > 0 ? gpu->gemm_gflops[m] / gpu->dram_gbps : 0;
        }
    }
}

/* A segment goes on the GPU's roof when every row of it with FLOPs ran on
 * the GPU, on the CPU's when none did; a mix has no single roof. */
static void place_marker(const ntp_run_result *r, const ntp_roofline *rl,
                         const ntp_gpu_ceilings *gpu, const char *cpu_roof, ntp_marker_result *m)
{
    m->attainable_gflops = 0;
    m->roof_share = 0;
    m->roof_ceiling = NULL;
    int on_gpu = 0, on_cpu = 0;
    bool tf32 = false;
    for (int i = m->first; i <= m->last && i < r->n_layers; i++) {
        const ntp_layer_result *l = &r->layers[i];
        if (l->flops <= 0)
            continue;
        if (device_backend(l->backend)) {
            on_gpu++;
            tf32 |= row_math(r->precision, l->impl) == NTP_GPU_MATH_TF32;
        } else {
            on_cpu++;
        }
    }
    bool timed = m->time_ms.median > 0;
    if (on_gpu == 0) {
        if (place(rl->peak_gflops, rl->bandwidth_gbps, NULL, 0, m->flops,
                  ntp__roofline_marker_bytes(r, m), m->gflops, timed, &m->attainable_gflops,
                  &m->roof_share))
            m->roof_ceiling = cpu_roof;
        return;
    }
    if (on_cpu > 0 || !timed || m->flops <= 0 || m->bytes <= 0)
        return;
    if (!gpu) {
        m->roof_ceiling = NTP_ROOF_NO_GPU;
        return;
    }
    ntp_gpu_math math = tf32 ? NTP_GPU_MATH_TF32 : row_math(r->precision, NULL);
    if (place(gpu->gemm_gflops[math], gpu->dram_gbps, NULL, 0, m->flops,
              ntp__roofline_marker_bytes(r, m), m->gflops, true, &m->attainable_gflops,
              &m->roof_share))
        m->roof_ceiling = gpu_roof_names[math];
}

static void add_warning(ntp_run_result *r, const char *text)
{
    char **w = realloc(r->warnings, (size_t)(r->n_warnings + 1) * sizeof *w);
    if (!w)
        return;
    r->warnings = w;
    if ((w[r->n_warnings] = ntp__strdup(text)))
        r->n_warnings++;
}

/* How far a row may exceed a ceiling before the ceiling is called stale:
 * the ceiling's own spread, at least NTP_ROOF_STALE_MIN_MARGIN. */
static double stale_margin(double best, double slowest)
{
    double spread = best > 0 && slowest > 0 && slowest < best ? (best - slowest) / best : 0;
    return spread > NTP_ROOF_STALE_MIN_MARGIN ? spread : NTP_ROOF_STALE_MIN_MARGIN;
}

/* A row on the CPU this long or longer is compared with the fastest
 * bandwidth ceiling: shorter rows' GB/s are per-call overhead and timer
 * resolution as much as traffic. */
#define STALE_BW_MIN_MS 0.05

/* Rows measured above the ceilings they are placed under prove the
 * ceilings wrong (measured under load, or on another setting of the
 * machine): warn once, naming the worst row, and mark the roofline
 * unreliable. Ceilings flagged as measured under load make it unreliable
 * too. */
static void check_stale(ntp_run_result *r, const ntp_ceilings *c, const ntp_peak *pk)
{
    ntp_roofline *rl = &r->roofline;
    const ntp_ceiling_spread *ps = &c->peak_spread[pk - c->peaks];
    double margin = stale_margin(pk->gflops, ps->min);
    /* The fastest bandwidth level: no row's minimal traffic can flow
     * faster than the L1 triad. */
    const ntp_bandwidth *fast = NULL;
    for (int i = 0; i < c->n_levels; i++)
        if (c->levels[i].gbps > 0 && (!fast || c->levels[i].gbps > fast->gbps))
            fast = &c->levels[i];
    const ntp_layer_result *worst = NULL;
    double worst_ratio = 0;
    bool worst_bw = false;
    int over = 0;
    for (int i = 0; i < r->n_layers; i++) {
        const ntp_layer_result *l = &r->layers[i];
        if (!l->roof_ceiling || strncmp(l->roof_ceiling, "cpu ", 4) != 0)
            continue;
        double fr = l->gflops / pk->gflops;
        bool f_over = isfinite(fr) && fr > 1 + margin;
        double br = 0;
        bool b_over = false;
        if (fast && l->time_ms.median >= STALE_BW_MIN_MS) {
            br = l->gbps / fast->gbps;
            b_over = isfinite(br) &&
                     br > 1 + stale_margin(fast->gbps, c->level_spread[fast - c->levels].min);
        }
        if (!f_over && !b_over)
            continue;
        over++;
        double ratio = f_over ? fr : br;
        if (ratio > worst_ratio) {
            worst_ratio = ratio;
            worst = l;
            worst_bw = !f_over;
        }
    }
    char text[1024];
    if (worst) {
        rl->unreliable = true;
        char others[64] = "";
        if (over > 1)
            snprintf(others, sizeof others, " (and %d other row%s)", over - 1,
                     over == 2 ? "" : "s");
        if (worst_bw)
            snprintf(text, sizeof text,
                     "layer %s%s ran at %.0f%% of the measured %s bandwidth (%.4g GB/s against "
                     "%.4g); the ceiling is stale or was measured under load: re-measure with "
                     "`ntprof machine --remeasure`; this run's roofline verdicts are unreliable",
                     worst->name, others, 100 * worst_ratio, fast->level, worst->gbps, fast->gbps);
        else
            snprintf(text, sizeof text,
                     "layer %s%s ran at %.0f%% of the measured %s peak (%.4g GFLOP/s against "
                     "%.4g); the ceiling is stale or was measured under load: re-measure with "
                     "`ntprof machine --remeasure`; this run's roofline verdicts are unreliable",
                     worst->name, others, 100 * worst_ratio, pk->precision, worst->gflops,
                     pk->gflops);
        snprintf(rl->stale_reason, sizeof rl->stale_reason, "layer %s ran at %.0f%% of the %s %s",
                 worst->name, 100 * worst_ratio, worst_bw ? fast->level : pk->precision,
                 worst_bw ? "bandwidth" : "peak");
        add_warning(r, text);
    }
    if (c->contended || ps->contended) {
        rl->unreliable = true;
        if (!rl->stale_reason[0])
            snprintf(rl->stale_reason, sizeof rl->stale_reason,
                     "the ceilings were measured under load");
        snprintf(text, sizeof text,
                 "this machine's ceilings were measured under load (%s); re-measure with "
                 "`ntprof machine --remeasure` on a quiet machine; this run's roofline verdicts "
                 "are unreliable",
                 c->note[0] ? c->note : "other processes used the CPUs");
        add_warning(r, text);
    }
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
    /* The GPU the rows ran on is GPU 0, the one the backend uses and the
     * one `ntprof machine` measures. */
    const ntp_gpu_ceilings *gpu = c && c->n_gpus > 0 ? &c->gpus[0] : NULL;
    if (gpu) {
        rl->gpu_available = true;
        snprintf(rl->gpu_name, sizeof rl->gpu_name, "%s", gpu->name);
        rl->gpu_bandwidth_gbps = gpu->dram_gbps;
        rl->gpu_h2d_gbps = gpu->h2d_gbps;
        rl->gpu_d2h_gbps = gpu->d2h_gbps;
    }
    const char *cpu_roof = pk ? cpu_roof_name(pk->precision) : NULL;
    for (int i = 0; i < r->n_layers; i++) {
        ntp_layer_result *l = &r->layers[i];
        if (rl->available) {
            place_layer(rl, gpu, r->precision, cpu_roof, l);
        } else {
            l->attainable_gflops = l->attainable_gbps = l->roof_share = 0;
            l->roof_ceiling = NULL;
        }
    }
    for (int i = 0; i < r->n_markers; i++) {
        ntp_marker_result *m = &r->markers[i];
        if (rl->available) {
            place_marker(r, rl, gpu, cpu_roof, m);
        } else {
            m->attainable_gflops = m->roof_share = 0;
            m->roof_ceiling = NULL;
        }
    }
    if (rl->available)
        check_stale(r, c, pk);
    if (!rl->gpu_rows) {
        /* Nothing ran on a device: the GPU's figures would only confuse. */
        rl->gpu_available = false;
        memset(rl->gpu_name, 0, sizeof rl->gpu_name);
        rl->gpu_bandwidth_gbps = rl->gpu_h2d_gbps = rl->gpu_d2h_gbps = 0;
    } else if (gpu && !rl->gpu_math[0]) {
        /* GPU rows, none with FLOPs to place: name the run's math anyway. */
        ntp_gpu_math m = row_math(r->precision, NULL);
        snprintf(rl->gpu_math, sizeof rl->gpu_math, "%s", ntp_gpu_math_name(m));
        rl->gpu_peak_gflops = gpu->gemm_gflops[m];
        rl->gpu_ridge_intensity = gpu->dram_gbps > 0 ? gpu->gemm_gflops[m] / gpu->dram_gbps : 0;
    }
}
