/* ntprof: training — forward, loss, backward and optimizer step per layer,
 * and training memory broken down by data structure (docs/train.md).
 *
 * Training runs on the reference engine of src/train/: every kernel is
 * written for clarity and evaluated in double precision, so that backward
 * passes can be checked against finite differences and weights after a few
 * steps against PyTorch's. Timings are those of that engine. */
#ifndef NTPROF_TRAIN_H
#define NTPROF_TRAIN_H

#include <stdint.h>
#include <stdio.h>
#include "ntprof/api.h"
#include "ntprof/context.h"
#include "ntprof/graph.h"
#include "ntprof/report.h"
#include "ntprof/stats.h"
#include "ntprof/status.h"
#include "ntprof/sweep.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ntp_loss {
    NTP_LOSS_CROSS_ENTROPY, /* softmax + negative log-likelihood, mean over the batch */
    NTP_LOSS_MSE,           /* mean of squared differences over every element */
    NTP_LOSS_CTC, /* connectionist temporal classification on [T, N, C] logits, blank C-1, as
                     torch.nn.CTCLoss (reduction mean) */
    NTP_LOSS_COUNT
} ntp_loss;

typedef enum ntp_optimizer {
    NTP_OPTIMIZER_SGD,      /* torch.optim.SGD(lr) */
    NTP_OPTIMIZER_MOMENTUM, /* torch.optim.SGD(lr, momentum, dampening=0) */
    NTP_OPTIMIZER_ADAM,     /* torch.optim.Adam(lr, betas, eps) */
    NTP_OPTIMIZER_COUNT
} ntp_optimizer;

/* "cross_entropy", "mse", "ctc". */
NTP_API const char *ntp_loss_name(ntp_loss l);
NTP_API ntp_status ntp_loss_parse(const char *s, ntp_loss *out);
/* "sgd", "momentum", "adam". */
NTP_API const char *ntp_optimizer_name(ntp_optimizer o);
NTP_API ntp_status ntp_optimizer_parse(const char *s, ntp_optimizer *out);

/* The phases of a training step, as per-layer rows report them. */
typedef enum ntp_train_phase {
    NTP_TRAIN_FORWARD,
    NTP_TRAIN_BACKWARD_DATA,    /* gradients of the layer's inputs */
    NTP_TRAIN_BACKWARD_WEIGHTS, /* gradients of the layer's weights */
    NTP_TRAIN_UPDATE,           /* the optimizer step of the layer's weights */
    NTP_TRAIN_PHASE_COUNT
} ntp_train_phase;

/* "forward", "backward_data", "backward_weights", "update". */
NTP_API const char *ntp_train_phase_name(ntp_train_phase p);

typedef struct ntp_train_opts {
    ntp_loss loss;
    ntp_optimizer optimizer;
    double lr;           /* learning rate; 0: 0.01 (sgd, momentum) or 0.001 (adam) */
    double momentum;     /* momentum optimizer: 0 means 0.9 */
    double beta1, beta2; /* adam: 0 means 0.9 and 0.999 */
    double eps;          /* adam: 0 means 1e-8 */
    double dropout;      /* drop probability of every dropout layer; < 0: 0.5 */
    int steps;           /* training steps; 0 means 10 */
    uint64_t seed;       /* weights, synthetic inputs, labels, dropout masks; 0: 1 */
    /* "NAME=FILE.npy": graph inputs given as data; the others are generated. */
    const char *const *inputs;
    int n_inputs;
    /* Labels as .npy: class indices (int32/int64, [N]) for cross_entropy,
     * f32 of the output's shape for mse; NULL: generated from the seed. */
    const char *labels;
    /* > 0: refuse before allocating when the planned peak exceeds it. */
    int64_t max_memory;
    /* Called after each step (the CLI's progress), may be NULL. */
    void (*progress)(void *user, int step, int steps);
    void *progress_user;
    /* ctc: .npy int32/int64 [N], each sequence's input length in [1, T]
     * (its frames after take no gradient); NULL: T for given labels,
     * generated in [ceil(T/2), T] with generated labels. */
    const char *input_lengths;
    /* ctc: .npy int32/int64 [N], each label row's length in [0, S] (what
     * follows is padding, any value); NULL: each row ends at its first -1. */
    const char *target_lengths;
    /* The backend whose backward primitives run the layers it has them for
     * ("onednn": docs/train.md lists them, in f32); every other layer, and every
     * forward, runs on the reference engine. NULL or "ref": all of it. */
    const char *backend;
    /* Threads of that backend's primitives (0: all cores); the reference
     * engine runs on one. */
    int threads;
    /* NTP_DTYPE_F32 (0, the default) or NTP_DTYPE_BF16: mixed precision
     * (docs/train.md): feature maps and their gradients stored in bf16, the
     * weight matrices read as bf16 copies of fp32 master weights, which the
     * optimizer updates in fp32; the result then also carries the same steps
     * at f32 (losses_f32). */
    ntp_dtype precision;
} ntp_train_opts;

/* Zero everything and set the defaults: cross_entropy, sgd, 10 steps,
 * seed 1, dropout 0.5. */
NTP_API void ntp_train_opts_init(ntp_train_opts *o);

/* Training memory by data structure, in bytes at the topology's precision
 * (as TBD draws it). */
typedef struct ntp_train_memory {
    int64_t weights;         /* trainable weights and non-trainable buffers */
    int64_t gradients;       /* one gradient per trainable weight */
    int64_t optimizer_state; /* momentum buffers, Adam's two moments */
    int64_t activations;     /* planned arena of feature maps stashed for
                              * backward and their gradients */
    int64_t workspace;       /* the largest temporary of one kernel (the loss) */
    int64_t other;           /* per-layer saved state: batch statistics, dropout masks */
    int64_t peak;            /* the sum: what a step needs at once */
} ntp_train_memory;

/* One layer's training cost, without running. */
typedef struct ntp_train_layer_cost {
    const char *name; /* owned by the graph; "loss" for the loss row */
    const char *type;
    int64_t flops[NTP_TRAIN_PHASE_COUNT];
    int64_t stashed_bytes; /* activation bytes this layer's backward keeps alive */
} ntp_train_layer_cost;

typedef struct ntp_train_plan {
    ntp_dtype precision;
    int64_t batch;
    ntp_loss loss;
    ntp_optimizer optimizer;
    ntp_train_memory memory;
    int n_layers; /* the graph's layers, then one row for the loss */
    ntp_train_layer_cost *layers;
    int64_t flops[NTP_TRAIN_PHASE_COUNT]; /* totals */
    int64_t forward_flops;                /* = flops[NTP_TRAIN_FORWARD] */
    int64_t step_flops;                   /* every phase together */
    /* What the reference engine itself allocates, by the same rules: every
     * tensor's value, the gradients, optimizer state, saved state, labels
     * and the loss's scratch, in doubles and unplanned (each held for the
     * whole run); the figure a measured peak is compared with. */
    int64_t engine_bytes;
} ntp_train_plan;

/* Plan training of g without running: memory by data structure and FLOPs
 * per phase and layer. Fails (naming every such layer) when g has layers
 * without a backward, and when the loss does not fit the output. */
NTP_API ntp_status ntp_train_plan_make(ntp_ctx *ctx, const ntp_graph *g, const ntp_train_opts *o,
                                       ntp_train_plan **out);
NTP_API void ntp_train_plan_free(ntp_train_plan *p);
/* Table or JSON (docs/train.md); CSV gives the per-layer rows. */
NTP_API ntp_status ntp_report_write_train_plan(ntp_ctx *ctx, const ntp_train_plan *p,
                                               ntp_format fmt, FILE *f);
/* The plans of one model at several batch sizes (analyze --train --batch
 * LIST): table (memory by data structure, a row per plan, and TBD's
 * figure as text bars), JSON ({"kind": "train_plans", ..., "plans": [...]})
 * or CSV (a row per plan); `model` names the model. */
NTP_API ntp_status ntp_report_write_train_plans(ntp_ctx *ctx, const ntp_train_plan *const *plans,
                                                int n, const char *model, ntp_format fmt, FILE *f);

typedef struct ntp_train_layer {
    const char *name; /* owned by the graph; "loss" for the loss row */
    const char *type;
    bool has[NTP_TRAIN_PHASE_COUNT];        /* whether the layer has the phase */
    ntp_stats phase[NTP_TRAIN_PHASE_COUNT]; /* milliseconds per step */
    /* Who ran its backward: the backend's name, "ref" (its fallback), or
     * NULL when it has none. */
    const char *backward_by;
    /* Who ran its forward: the backend's name (its forward-training
     * primitives, in f32) or "ref"; NULL for the loss row. */
    const char *forward_by;
    /* bf16 mixed precision: "bf16" where its backward ran the backend's
     * bf16 primitive, "f32" where it computed on the bf16 values in f32 (or
     * double, on ref); NULL at f32 or without a backward. */
    const char *backward_precision;
} ntp_train_layer;

/* What training found: opaque, read through the accessors below, which
 * answer NULL or 0 for a NULL result or an index out of range; what they
 * return lives as long as the result (ntp_train_result_free). */
typedef struct ntp_train_result ntp_train_result;

/* The topology's name, the steps run and the batch. */
NTP_API const char *ntp_train_result_model(const ntp_train_result *r);
NTP_API int ntp_train_result_steps(const ntp_train_result *r);
NTP_API int64_t ntp_train_result_batch(const ntp_train_result *r);
NTP_API ntp_loss ntp_train_result_loss(const ntp_train_result *r);
NTP_API ntp_optimizer ntp_train_result_optimizer(const ntp_train_result *r);
NTP_API double ntp_train_result_lr(const ntp_train_result *r);
/* Milliseconds per step, and batch / the median step time. */
NTP_API const ntp_stats *ntp_train_result_step(const ntp_train_result *r);
NTP_API double ntp_train_result_samples_per_s(const ntp_train_result *r);
/* The loss after each step's forward, [steps]. */
NTP_API const double *ntp_train_result_losses(const ntp_train_result *r);
/* bf16: the losses of the same training at f32, [steps]; NULL at f32. */
NTP_API const double *ntp_train_result_losses_f32(const ntp_train_result *r);
/* The memory plan the training ran with. */
NTP_API const ntp_train_plan *ntp_train_result_plan(const ntp_train_result *r);
/* What the engine held (doubles). */
NTP_API int64_t ntp_train_result_allocated_bytes(const ntp_train_result *r);
/* The growth of the process's resident-set high-water mark through the
 * run (Linux VmHWM); -1 where /proc/self/status cannot tell. */
NTP_API int64_t ntp_train_result_rss_peak_bytes(const ntp_train_result *r);
/* Per-layer rows, as the plan's. */
NTP_API int ntp_train_result_layer_count(const ntp_train_result *r);
NTP_API const ntp_train_layer *ntp_train_result_layer(const ntp_train_result *r, int i);
/* The backward backend asked for ("ref" when none), and f32 or bf16 (mixed precision). */
NTP_API const char *ntp_train_result_backend(const ntp_train_result *r);
NTP_API ntp_dtype ntp_train_result_precision(const ntp_train_result *r);

typedef struct ntp_trainer ntp_trainer;

/* Prepare training of g: checks the ops, the loss and the labels, plans the
 * memory (refusing above o->max_memory before allocating), then loads
 * weights (the model's own or generated from the seed) and inputs. g must
 * outlive the trainer. */
NTP_API ntp_status ntp_trainer_new(ntp_ctx *ctx, const ntp_graph *g, const ntp_train_opts *o,
                                   ntp_trainer **out);
/* Run o->steps training steps and summarise them. */
NTP_API ntp_status ntp_trainer_run(ntp_ctx *ctx, ntp_trainer *t, ntp_train_result **out);
/* Write every weight and buffer as DIR/<name>.npy (f32) under the model's
 * own names; DIR must exist. */
NTP_API ntp_status ntp_trainer_save_weights(ntp_ctx *ctx, const ntp_trainer *t, const char *dir);
NTP_API void ntp_trainer_free(ntp_trainer *t);
NTP_API void ntp_train_result_free(ntp_train_result *r);
/* Table, JSON (with a "memory" object) or CSV (per-layer rows). */
NTP_API ntp_status ntp_report_write_train(ntp_ctx *ctx, const ntp_train_result *r, ntp_format fmt,
                                          FILE *f);

/* A training sweep (ntprof sweep --train, docs/train.md): training over
 * the configurations of sw (factors batch and the topology's params), each
 * loaded from `file` with lo and its own batch and params, run in this
 * process one after another, with the memory of each by data structure,
 * the planned peak and the measured one. A configuration that fails is
 * recorded and the sweep goes on; `done` (may be NULL) hears of each. */
typedef struct ntp_train_sweep ntp_train_sweep;
NTP_API ntp_status ntp_train_sweep_run(ntp_ctx *ctx, const ntp_sweep *sw, const char *file,
                                       const ntp_load_opts *lo, const ntp_train_opts *o,
                                       void (*done)(void *user, int c, int n, const char *label,
                                                    const char *state),
                                       void *user, ntp_train_sweep **out);
/* How many configurations failed. */
NTP_API int ntp_train_sweep_failed(const ntp_train_sweep *s);
/* Table (with a TBD-style memory bar per configuration), JSON or CSV. */
NTP_API ntp_status ntp_report_write_train_sweep(ntp_ctx *ctx, const ntp_train_sweep *s,
                                                ntp_format fmt, FILE *f);
NTP_API void ntp_train_sweep_free(ntp_train_sweep *s);
/* The sweep as a self-contained HTML page (docs/train.md): the memory of
 * each configuration by data structure as TBD draws it (stacked bars, to
 * scale), the planned peak against the measured one, and the table. */
NTP_API ntp_status ntp_report_write_train_sweep_html(ntp_ctx *ctx, const ntp_train_sweep *s,
                                                     FILE *f);
/* One training run as a self-contained HTML page (docs/train.md): its
 * memory by data structure as the sweep's page draws it, the planned peak
 * against the measured one, and the median time of every layer's phases. */
NTP_API ntp_status ntp_report_write_train_html(ntp_ctx *ctx, const ntp_train_result *r, FILE *f);
/* A training plan as a self-contained HTML page: its memory by data
 * structure and the FLOPs of every layer's phases; `model` titles it. */
NTP_API ntp_status ntp_report_write_train_plan_html(ntp_ctx *ctx, const ntp_train_plan *p,
                                                    const char *model, FILE *f);
/* The same plans as one page: TBD's stacked bar per batch, to one scale,
 * drawn by the sweep page's code, and the table of every figure. */
NTP_API ntp_status ntp_report_write_train_plans_html(ntp_ctx *ctx,
                                                     const ntp_train_plan *const *plans, int n,
                                                     const char *model, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
