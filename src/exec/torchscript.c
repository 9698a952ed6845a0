/* ntp_run_torch_script: the torch backend's whole-graph mode, as `ntprof
 * run --torch-script` reports it beside the eager per-layer figures
 * (include/ntprof/frameworks.h, docs/frameworks.md).
 *
 * The topology becomes one TorchScript module, frozen and optimised for
 * inference (src/backend/torch/script.c: the same ATen operators as the
 * eager mode, the same weights from the same seed); its forward() is timed
 * end to end as ntp_run times a pass (warm-up, then at least `iterations`
 * calls and `min_time_s` seconds), and its outputs are compared with the
 * reference backend's on the same inputs. Built without libtorch, it says
 * so. */
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/ctx-impl.h"
#include "exec-impl.h"
#include "ntprof/frameworks.h"

#ifndef NTP_HAVE_TORCH
ntp_status ntp_run_torch_script(ntp_ctx *ctx, const ntp_graph *g, const ntp_run_opts *opts,
                                ntp_torch_script_result *out)
{
    (void)g;
    (void)opts;
    memset(out, 0, sizeof *out);
    return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                      "the TorchScript mode needs the torch backend, which this build lacks "
                      "(libtorch-dev was not found at configure time)");
}
#else
#include "backend/torch/torch-impl.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The reference backend's f32 outputs on the same weights and inputs,
 * into ref[i] (numel of output i each). */
static ntp_status ref_outputs(ntp_ctx *ctx, const ntp_graph *g, const ntp_run_opts *opts,
                              float *const *ref)
{
    ntp_exec x;
    ntp_status st = ntp__exec_init_ref(ctx, &x, g, opts);
    if (st)
        return st;
    st = ntp__exec_steps(ctx, &x, 0, x.n_steps - 1);
    for (int i = 0; i < g->n_outputs && !st; i++) {
        ntp_dtype dt;
        if (!ntp__exec_output(&x, i, ref[i], &dt) || dt != NTP_DTYPE_F32)
            st = ntp__error(ctx, NTP_STATUS_INTERNAL, "cannot read output '%s' as f32",
                            g->tensors[g->outputs[i]].name);
    }
    ntp__exec_free(&x);
    return st;
}

static void deviation(const ntp_graph *g, float *const *a, float *const *ref,
                      ntp_torch_script_result *r)
{
    r->max_abs_error = r->rel_l2 = 0;
    for (int i = 0; i < g->n_outputs; i++) {
        int64_t n = ntp_shape_numel(&g->tensors[g->outputs[i]].shape);
        double num = 0, den = 0, mx = 0;
        for (int64_t j = 0; j < n; j++) {
            double d = fabs((double)a[i][j] - ref[i][j]);
            if (d > mx || isnan(d))
                mx = d;
            num += d * d;
            den += (double)ref[i][j] * ref[i][j];
        }
        double rel = den > 0 ? sqrt(num / den) : sqrt(num);
        if (mx > r->max_abs_error || isnan(mx))
            r->max_abs_error = mx;
        if (rel > r->rel_l2 || isnan(rel))
            r->rel_l2 = rel;
    }
}

/* Every CPU the process may use, as the eager backend's threads=0 means. */
static int all_cpus(void)
{
    cpu_set_t s;
    if (sched_getaffinity(0, sizeof s, &s) == 0 && CPU_COUNT(&s) > 0)
        return CPU_COUNT(&s);
    return 1;
}

static ntp_status timed(ntp_ctx *ctx, const ntp_graph *g, const ntp_run_opts *opts,
                        ntp_torch_script *ts, float *const *in, float *const *out,
                        ntp_torch_script_result *r)
{
    ntp_status st = NTP_STATUS_OK;
    for (int i = 0; i < opts->warmup && !st; i++)
        st = ntp__torch_script_run(ctx, ts, g, in, out);
    int cap = opts->iterations > 16 ? opts->iterations : 16, n = 0;
    double *t = malloc((size_t)cap * sizeof *t), total = 0;
    if (!t)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    while (!st && (n < opts->iterations || total < opts->min_time_s * 1e3)) {
        if (n == cap) {
            double *p = realloc(t, (size_t)cap * 2 * sizeof *t);
            if (!p) {
                st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
                break;
            }
            t = p;
            cap *= 2;
        }
        double t0 = now_ms();
        st = ntp__torch_script_run(ctx, ts, g, in, out);
        t[n] = now_ms() - t0;
        total += t[n++];
    }
    if (!st) {
        ntp_stats_compute(t, (size_t)n, &r->end_to_end_ms);
        r->latency_ms = r->end_to_end_ms.median;
        r->iterations = n;
        r->warmup = opts->warmup;
    }
    free(t);
    return st;
}

ntp_status ntp_run_torch_script(ntp_ctx *ctx, const ntp_graph *g, const ntp_run_opts *opts,
                                ntp_torch_script_result *out)
{
    memset(out, 0, sizeof *out);
    if (opts->n_inputs > 0)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                          "the TorchScript mode runs on generated inputs: given inputs (-i) are "
                          "not supported");
    if (g->n_inputs > NTP_TORCH_MAX_IO || g->n_outputs > NTP_TORCH_MAX_IO)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                          "the TorchScript mode takes at most %d inputs and %d outputs",
                          NTP_TORCH_MAX_IO, NTP_TORCH_MAX_IO);
    for (int i = 0; i < g->n_inputs; i++) {
        const ntp_tensor *t = &g->tensors[g->inputs[i]];
        if (t->dtype != NTP_DTYPE_F32 && t->dtype != NTP_DTYPE_I32 && t->dtype != NTP_DTYPE_I64)
            return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                              "the TorchScript mode takes f32, i32 and i64 inputs; '%s' is %s",
                              t->name, ntp_dtype_name(t->dtype));
    }
    out->threads = opts->threads > 0 ? opts->threads : all_cpus();
    float *in[NTP_TORCH_MAX_IO] = {0}, *y[NTP_TORCH_MAX_IO] = {0}, *ref[NTP_TORCH_MAX_IO] = {0};
    ntp_torch_script *ts = NULL;
    ntp_status st = NTP_STATUS_OK;
    for (int i = 0; i < g->n_inputs && !st; i++)
        st = ntp__torch_script_input(ctx, g, i, opts->seed, &in[i]);
    for (int i = 0; i < g->n_outputs && !st; i++) {
        int64_t n = ntp_shape_numel(&g->tensors[g->outputs[i]].shape);
        y[i] = malloc((size_t)n * sizeof(float) + 4);
        ref[i] = malloc((size_t)n * 8 + 8); /* ntp__exec_output writes in its own dtype */
        if (!y[i] || !ref[i])
            st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    double t0 = now_ms();
    if (!st && !(st = ntp__torch_script_build(ctx, g, out->threads, opts->seed, &ts)))
        out->build_ms = now_ms() - t0;
    if (!st)
        st = timed(ctx, g, opts, ts, in, y, out);
    if (!st)
        st = ref_outputs(ctx, g, opts, ref);
    if (!st)
        deviation(g, y, ref, out);
    ntp__torch_script_free(ts);
    for (int i = 0; i < NTP_TORCH_MAX_IO; i++) {
        free(in[i]);
        free(y[i]);
        free(ref[i]);
    }
    return st;
}
#endif
