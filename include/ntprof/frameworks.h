/* ntprof: one topology on several backends in one call, side by side
 * (docs/frameworks.md).
 *
 *   const char *be[] = {"onednn", "xnnpack", "blas", "ref"};
 *   ntp_backend_comparison *c;
 *   ntp_run_compare(ctx, g, &opts, be, 4, &c);
 *   ntp_report_write_backend_comparison(ctx, c, NTP_FORMAT_TABLE, stdout);
 *
 * Every backend runs the same topology with the same weights and inputs
 * (the options' seed and inputs), one after the other, each with the full
 * measurement protocol of ntp_run, and its outputs are compared with those
 * of the reference backend. */
#ifndef NTPROF_FRAMEWORKS_H
#define NTPROF_FRAMEWORKS_H

#include <stdio.h>
#include "ntprof/api.h"
#include "ntprof/run.h"
#include "ntprof/stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One layer on one backend. */
typedef struct ntp_backend_layer {
    double ms; /* median, its sub-step rows (reorders, im2col) included;
                  0 for a fused layer, -1 if not measured (--only) */
    double prepare_ms;
    const char *ran_on;     /* the backend that ran it ("ref" for a fallback) */
    const char *impl;       /* what that backend chose */
    const char *fused_into; /* the layer it was folded into, or NULL */
    int sub_rows;           /* sub-step rows included in ms */
    double sub_ms;          /* their share of ms */
} ntp_backend_layer;

/* One backend's part of the comparison. */
typedef struct ntp_backend_run {
    const char *backend;
    ntp_run_result *result; /* its complete run report */
    /* Its outputs against the reference backend's, one per graph output
     * (n_deviation 0 when there is nothing to compare: a partial run, or
     * no reference). Top-1/top-5 agreement for [N, classes] outputs, -1
     * otherwise. */
    int n_deviation;
    ntp_accuracy *deviation;
    double max_abs_error; /* worst over the outputs; -1 when n/a */
    double rel_l2;
    double speed_ratio;  /* median end-to-end / the fastest backend's */
    int layers_own;      /* layers it ran itself (not fused, not fallen back) */
    int layers_fallback; /* layers placed on another backend */
    int layers_fused;
    int n_convert; /* conversion rows at backend boundaries */
    double convert_ms;
    ntp_backend_layer *layers; /* n_layers, in execution order */
} ntp_backend_run;

/* What ntp_run_compare found: opaque; it owns each backend's run (and its
 * result) and every string, until ntp_backend_comparison_free. The
 * configuration every backend ran (topology, precision, batch, threads,
 * seed, fusion) is each run's result's. */
typedef struct ntp_backend_comparison ntp_backend_comparison;

/* Split "onednn,xnnpack,blas,ref" into names: at most max, pointing into
 * buf (a copy of list of buflen bytes). Empty names, repeated names and
 * unknown backends are an error naming the nearest backend of this build. */
NTP_API ntp_status ntp_backend_list_parse(ntp_ctx *ctx, const char *list, char *buf, size_t buflen,
                                          const char **names, int max, int *n);

/* Run g on each of backends[0..n-1] with opts (its backend field is
 * ignored). opts->save_outputs_dir, when set, receives one subdirectory per
 * backend (DIR/<backend>/output_<i>.npy). A backend that fails to run
 * fails the whole call with its message. */
NTP_API ntp_status ntp_run_compare(ntp_ctx *ctx, const ntp_graph *g, const ntp_run_opts *opts,
                                   const char *const *backends, int n,
                                   ntp_backend_comparison **out);
/* The backends' runs, in the order asked for: run i of 0 .. count - 1;
 * NULL for any other i. */
NTP_API int ntp_backend_comparison_run_count(const ntp_backend_comparison *c);
NTP_API const ntp_backend_run *ntp_backend_comparison_run(const ntp_backend_comparison *c, int i);
/* The index of the run with the lowest median end-to-end. */
NTP_API int ntp_backend_comparison_fastest(const ntp_backend_comparison *c);
/* The backend whose outputs are the oracle: "ref" (when "ref" is not among
 * the runs it is still run once, unmeasured, for its outputs); NULL when
 * outputs were not compared (a partial run). */
NTP_API const char *ntp_backend_comparison_reference(const ntp_backend_comparison *c);
/* The topology's layers, in execution order: each run's `layers` has one
 * entry per layer. Layer l of 0 .. count - 1; NULL for any other l. */
NTP_API int ntp_backend_comparison_layer_count(const ntp_backend_comparison *c);
NTP_API const char *ntp_backend_comparison_layer_name(const ntp_backend_comparison *c, int l);
NTP_API const char *ntp_backend_comparison_layer_type(const ntp_backend_comparison *c, int l);
NTP_API void ntp_backend_comparison_free(ntp_backend_comparison *c);

/* The torch backend's whole-graph mode (docs/frameworks.md): the topology
 * as one TorchScript module, frozen and optimised for inference, as a
 * PyTorch deployment runs it, timed end to end. */
typedef struct ntp_torch_script_result {
    double build_ms; /* compile, torch::jit::freeze, optimize_for_inference */
    int threads;     /* at::set_num_threads: opts->threads, 0 resolved */
    int warmup;      /* forward() calls discarded */
    int iterations;  /* forward() calls measured */
    ntp_stats end_to_end_ms;
    double latency_ms; /* median end-to-end */
    /* Its outputs against the reference backend's on the same weights and
     * inputs: the worst over the outputs. */
    double max_abs_error, rel_l2;
} ntp_torch_script_result;

/* Build g as that module with opts' threads and seed (the weights every
 * backend gets) and time its forward() on generated inputs as ntp_run
 * times a pass (opts' warmup, iterations, min_time_s). Every layer must
 * map to ATen at f32 (embeddings as torch.embedding) and every input be
 * f32, i32 or i64 (integers passed as int64, as nn.Embedding takes them),
 * else the error names what does not; given inputs (opts->inputs) are
 * refused; a build without the torch backend says so. */
NTP_API ntp_status ntp_run_torch_script(ntp_ctx *ctx, const ntp_graph *g, const ntp_run_opts *opts,
                                        ntp_torch_script_result *out);

#ifdef __cplusplus
}
#endif
#endif
