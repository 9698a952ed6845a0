/* The execution engine, private to libntprof.
 *
 * An execution plan binds a finalized graph to backends. It places every
 * layer on a backend (docs/run.md: the run's backend where it supports the
 * layer, the reference backend otherwise, or what the layer's `backend=`
 * asks for), folds fusion groups (--fuse), and turns the graph into a list
 * of steps in execution order:
 *   NODE     a layer, or the head of a fusion group, run by its backend;
 *   CONVERT  a tensor converted between two backends' storage types, at a
 *            boundary (its own row in every report);
 *   FUSED    a layer folded into the group before it (not executed).
 * Batch-norm folding (--fuse): an inference batch norm that is the only
 * reader of a conv, deconv or fc is folded into that layer's weights, as
 * PyTorch's freeze, OpenVINO, TensorRT and ONNX Runtime do (the batch norm
 * need not come right after it in execution order):
 *   W'[oc] = W[oc] s[oc],  b'[oc] = (b[oc] - mean[oc]) s[oc] + beta[oc],
 *   s[oc] = gamma[oc] / sqrt(var[oc] + eps).
 * The plan then runs a rewritten copy of the graph (x->g, owned) in which
 * the layer has a bias (the batch norm's own bias tensor when it had none)
 * and writes the batch norm's output tensor, so that every backend sees an
 * ordinary layer and the chain after it fuses as usual; the batch norm
 * stays as a FUSED step of the group, reported as fused into the layer.
 * Tensor indices, names and execution positions are the caller's.
 * Tensors live in storage slots: one per tensor in its producer's storage
 * type, plus one per conversion. Every layer is prepared first (timed), then
 * the slots are placed in one arena by the interval planner with the sizes
 * the backends asked for, and data pointers are bound. */
#ifndef NTPROF_EXEC_IMPL_H
#define NTPROF_EXEC_IMPL_H

#include "backend/backend-impl.h"
#include "ntprof/run.h"
#include "measure/run-result-impl.h"

#define NTP_MAX_BACKENDS 8

typedef enum ntp_step_kind { NTP_STEP_NODE, NTP_STEP_CONVERT, NTP_STEP_FUSED } ntp_step_kind;

typedef struct ntp_slot {
    int tensor;
    ntp_dtype dtype; /* storage type */
    int64_t bytes;
    int birth, death; /* planner times: 0 before the first step, s + 1 after step s */
    int64_t offset;
    void *data;
} ntp_slot;

typedef struct ntp_step {
    ntp_step_kind kind;
    int pos;    /* execution position of the layer (CONVERT: of its consumer) */
    int be;     /* index into ntp_exec.be */
    char *name; /* CONVERT rows: "<tensor>:<from>-><to>" */
    /* NODE */
    ntp_kargs k;
    void *state;
    size_t ws;
    double prepare_ms;
    int n_sub, main_sub; /* sub-steps of the backend, main_sub is the layer */
    int in_slot[NTP_MAX_INPUTS], out_slot[NTP_MAX_OUTPUTS], post_slot[NTP_MAX_FUSED];
    /* FUSED: step index of the group's head */
    int head;
    /* NODE: execution position of the group's first layer (pos, but for
     * a unit: exec-impl.h's unit_of). */
    int first;
    /* NODE: execution position of the group's last layer (pos when
     * alone). A group's layers need not be adjacent: a layer joins it when
     * it is the only reader of the group's result and its other operand
     * was made before the head. A folded batch norm is in the group but
     * not in k.fused. */
    int last;
    /* CONVERT: slot indices */
    int src, dst;
} ntp_step;

typedef struct ntp_exec {
    const ntp_graph *g;     /* the graph run: src_g, or own_g when batch norms were folded */
    const ntp_graph *src_g; /* the caller's graph */
    ntp_graph *own_g;       /* the rewritten copy, or NULL */
    /* Per position: for a layer, the position of the batch norm folded into
     * it (> 0); for that batch norm, -1 - the layer's position; else 0. */
    int *fold;
    int n_be;
    const ntp_backend_i *be[NTP_MAX_BACKENDS];
    void *be_state[NTP_MAX_BACKENDS];
    int *node_be; /* per position */
    int *head_of; /* per position: position of its group's head (itself if none) */
    /* Per position: the index of the framework unit (ntp_unit) the run's
     * backend runs it in, or -1. A unit is one NODE step at its first
     * position (unit_in: the one tensor it reads from outside) and FUSED
     * steps for the others, up to unit_last. */
    int *unit_of;
    int *unit_in, *unit_last; /* per unit */
    ntp_step *steps;
    int n_steps, cap_steps;
    int *pos_step; /* per position: its step */
    ntp_slot *slots;
    int n_slots, cap_slots;
    int *tslot;     /* per tensor: primary slot, -1 for constants and folded tensors */
    void **layouts; /* per tensor: a backend's layout descriptor */
    void **wdata;   /* per tensor: constant data in its storage type */
    /* Per tensor: true when wdata[t] is another plan's (ntp_exec_opts
     * share_weights), neither counted in weight_bytes nor freed here. */
    bool *wborrowed;
    int64_t weight_bytes;      /* as the backends hold them (i8 matrices at i8) */
    int64_t weight_copy_bytes; /* f32 copies kept besides, that a backend quantises from */
    const float *scales;       /* per tensor int8 activation scales, or NULL */
    float *absmax;             /* per tensor, filled while running when non-NULL */
    void *arena;
    int64_t arena_bytes;
    void *ws;
    size_t ws_bytes;
    int first_step, last_step; /* the measured range */
    int threads;
    bool weights_bf16; /* ntp_exec_opts.weights_bf16 */
    bool weights_i8;   /* ntp_exec_opts.weights_i8 */
} ntp_exec;

typedef struct ntp_exec_opts {
    const ntp_backend_i *backend; /* the run's backend */
    int threads;
    bool fuse;
    /* Fold batch norms into the layer before them, as --fuse does, but
     * fuse nothing else: the int8 calibration pass, which must see every
     * tensor the fused run materialises. */
    bool fold_only;
    uint64_t seed;
    const char *const *inputs; /* as ntp_run_opts */
    int n_inputs;
    int first, last;     /* positions measured; earlier ones run once */
    const float *scales; /* int8 activation scales per tensor, or NULL */
    /* Accelerators (ntp_run_opts): "LAYER=BACKEND" placements, math mode,
     * graph replay. */
    const char *const *place;
    int n_place;
    ntp_math_mode math;
    bool graph_replay;
    /* The key/value cache of each kv_attention layer (ntp_generate), bound
     * into its kernel arguments before prepare; NULL or a NULL answer: no
     * cache (attention over the pass's own tokens). */
    ntp_kv_state *(*kv_for)(void *user, const ntp_graph *g, const ntp_node *n);
    void *kv_user;
    const char *backend_options; /* as ntp_run_opts */
    /* Borrow the weights of this plan instead of loading them again: a
     * plan of the same markup (ntp_generate's prefill plan for its decode
     * plan). A layer's weights are borrowed where the layer has the same
     * name at the same position, runs on the same backend, and each weight
     * has the same name, shape and storage type; anything else is loaded as
     * usual. The lender must outlive this plan. Not with fuse/fold_only. */
    const struct ntp_exec *share_weights;
    /* Hold every weight a backend would keep in f32 as bf16 instead
     * (ntp_generate's --weight-dtype bf16): the reference backend widens
     * them to f32 for its kernels. */
    bool weights_bf16;
    /* Weight-only int8: every matrix (rank >= 2) held as int8 with one f32
     * scale per row (max |row| / 127, stored after the values at the next
     * 4-byte boundary: ntp__exec_i8_row_scales), vectors as f32. */
    bool weights_i8;
} ntp_exec_opts;

/* Where a plan with o would put each layer, without building it
 * (ntprof predict): names[p] is the backend of execution position p, by
 * the plan's rule (--place, backend=, the run's backend where it supports
 * the layer, else ref), with o->place checked as a run checks it. No
 * folding (o->fuse is not read). A backend that cannot run here (no GPU)
 * is taken to run what it is asked to; o->backend NULL stands for a
 * backend this build lacks, named backend_name, that runs every layer not
 * placed elsewhere. */
ntp_status ntp__exec_placement(ntp_ctx *ctx, const ntp_graph *g, const ntp_exec_opts *o,
                               const char *backend_name, const char **names);
/* The groups a plan with o would run, without building it (ntprof predict
 * --fuse): the same folding and fusion rule as ntp__exec_init. names[p] is
 * the backend of position p, as ntp__exec_placement gives it; a batch norm
 * folded into its layer takes the layer's (as in a run). head_of[p] is the
 * position of the head of p's group (p when alone), fold[p] as
 * ntp_exec.fold. Batch norms fold with o->fuse or o->fold_only, post-ops
 * follow with o->fuse; a layer on a backend this build lacks (names[p]
 * unknown) heads no chain, its rule being unknown. */
ntp_status ntp__exec_groups(ntp_ctx *ctx, const ntp_graph *g, const ntp_exec_opts *o,
                            const char **names, int *head_of, int *fold);
/* Build the plan; on failure it is freed. Warnings (fallbacks) go to ctx. */
ntp_status ntp__exec_init(ntp_ctx *ctx, ntp_exec *x, const ntp_graph *g, const ntp_exec_opts *o);
/* The plan other backends' outputs are compared with: the whole graph on
 * the reference backend, with the run's threads, seed and given inputs. */
ntp_status ntp__exec_init_ref(ntp_ctx *ctx, ntp_exec *x, const ntp_graph *g,
                              const ntp_run_opts *opts);
void ntp__exec_free(ntp_exec *x);
/* Run steps [from, to] once, whole (no sub-step timing). */
ntp_status ntp__exec_steps(ntp_ctx *ctx, ntp_exec *x, int from, int to);
/* Run one sub-step of a NODE step, or a CONVERT step (sub 0). */
ntp_status ntp__exec_sub(ntp_ctx *ctx, ntp_exec *x, int step, int sub);
/* Graph output i as f32 (or i32 data as is), n values; false if the
 * output's storage cannot be read as f32 (a backend's own layout). */
bool ntp__exec_output(const ntp_exec *x, int i, void *dst, ntp_dtype *dtype);
/* Write every graph output as output_<i>.npy into dir. */
ntp_status ntp__exec_save_outputs(ntp_ctx *ctx, const ntp_exec *x, const char *dir);
/* Storage type of weight t on backend index be: the backend's storage type
 * at t's precision, except int8, whose weights reach every backend as f32
 * (each quantises them with its own per-channel scales). */
ntp_dtype ntp__exec_weight_dtype(const ntp_exec *x, int be, const ntp_tensor *t);
/* Load layer n's weights for backend index be (generated or the model's);
 * load or generate every graph input. */
ntp_status ntp__exec_load_weights(ntp_ctx *ctx, ntp_exec *x, const ntp_node *n, int be,
                                  uint64_t seed);
/* The same for the layer at position pos whose batch norm (at x->fold[pos])
 * is folded into it: both layers' weights as the caller's graph has them,
 * folded in f32, then stored as for any layer. */
ntp_status ntp__exec_load_folded(ntp_ctx *ctx, ntp_exec *x, int pos, int be, uint64_t seed);
ntp_status ntp__exec_load_inputs(ntp_ctx *ctx, ntp_exec *x, const ntp_exec_opts *o);
/* The implementation name of a NODE step. */
const char *ntp__exec_impl(const ntp_exec *x, int step);
/* The layout of a NODE step's source, as its backend reports it
 * (ntp__be_src_layout); NULL for other steps or when not known. */
const char *ntp__exec_src_layout(const ntp_exec *x, int step);
/* The backend's reason for a fusion it declined at that step, or NULL. */
const char *ntp__exec_fuse_note(const ntp_exec *x, int step);

/* The rows of a run report: one per sub-step of every step in the measured
 * range [x->first_step, x->last_step]; row k runs sub-step sub[k] of step
 * step[k] (ntp__exec_sub). ntp_run_result.layers[k] describes row k. */
typedef struct ntp_rows {
    int n;
    int *step, *sub;
    int *first_row; /* per position: its first row, -1 if none */
    int *last_row;  /* per position: its last row */
} ntp_rows;

bool ntp__rows_build(const ntp_exec *x, ntp_rows *w);
void ntp__rows_free(ntp_rows *w);

/* --- accuracy (src/exec/multi.c) --------------------------------------------- */
/* Top-k agreement of a classifier output y ([rows, cls], row-major) with a
 * baseline b of the same shape: the share of rows whose baseline top-1 class
 * is among the k highest of y (k = 1 and 5), a value of y tied with that
 * class's counting against it, so a constant output agrees with nothing.
 * Top-5 agreement is therefore never below top-1. Rows whose baseline holds
 * no number are disagreements. *top1 = *top5 = -1 when rows < 1 or cls < 5. */
void ntp__topk_agree(const float *y, const float *b, int64_t rows, int64_t cls, double *top1,
                     double *top5);

#endif
