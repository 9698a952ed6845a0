/* The training engine, private to libntprof (docs/train.md).
 *
 * Every tensor of the graph has a value buffer (val) in double; activations
 * that carry a gradient and trainable weights have a gradient buffer (grad).
 * A step runs each layer's forward in execution order, the loss, then each
 * layer's backward in reverse order — backward-data (the gradients of its
 * inputs, accumulated with +=, since a tensor may feed several layers) and
 * backward-weights (the gradients of its weights) — and finally the
 * optimizer. Kernels are plain loops, written to be read and checked. */
#ifndef NTPROF_TRAIN_IMPL_H
#define NTPROF_TRAIN_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "graph/graph-impl.h"
#include "ntprof/train.h"

/* The training result, opaque in include/ntprof/train.h (accessors in
 * src/train/train-result.c). */
struct ntp_train_result {
    const char *model;
    int steps;
    int64_t batch;
    ntp_loss loss;
    ntp_optimizer optimizer;
    double lr;
    ntp_stats step;       /* milliseconds per step */
    double samples_per_s; /* batch / median step time */
    double *losses;       /* the loss after each step's forward, [steps] */
    ntp_train_plan *plan;
    int64_t allocated_bytes; /* what the engine held (doubles) */
    int n_layers;            /* as the plan's rows */
    ntp_train_layer *layers;
    /* Measured: the growth of the process's resident-set high-water mark
     * (Linux VmHWM, reset when the trainer starts) over its resident set
     * then, through the run; -1 where /proc/self/status cannot tell. */
    int64_t rss_peak_bytes;
    const char *backend; /* the backward backend asked for ("ref" when none) */
    ntp_dtype precision; /* f32, or bf16 (mixed precision) */
    /* bf16: the loss of each step of the same training at f32 (same weights,
     * inputs, labels and masks), [steps]; NULL at f32. */
    double *losses_f32;
};

/* What one layer's backward needs kept from its forward. */
typedef struct ntp_train_needs {
    bool input[NTP_MAX_INPUTS]; /* the value of input i */
    bool output;                /* the value of its output */
} ntp_train_needs;

/* Whether op has a training forward and a backward here. */
bool ntp__train_supported(ntp_op op);
/* What the backward of n reads from the forward. */
ntp_train_needs ntp__train_needs(const ntp_graph *g, const ntp_node *n);
/* Saved per-layer state (doubles) the backward of n reads: batch
 * statistics, dropout masks; 0 for most layers. */
int64_t ntp__train_saved_count(const ntp_graph *g, const ntp_node *n);

/* The loss as the graph's output fits it: the tensor the loss reads (for
 * cross-entropy the logits: the input of a final softmax or log_softmax,
 * whose backward the loss then takes over, fused and stable) and that
 * layer, or -1. Errors are one line. */
typedef struct ntp_train_target {
    int out;        /* the graph output */
    int logits;     /* the tensor the loss reads */
    int fused_node; /* the softmax/log_softmax the loss replaces, -1 if none */
    int64_t rows, classes;
    int64_t steps; /* ctc: the T of [T, N, C] (rows is N) */
} ntp_train_target;
ntp_status ntp__train_target(ntp_ctx *ctx, const ntp_graph *g, ntp_loss loss, ntp_train_target *t);

/* Whether bf16 mixed precision reads w as a bf16 copy of its fp32 master:
 * a trainable matrix (rank 2 and up); vectors stay fp32. */
bool ntp__train_bf16_copy(const ntp_tensor *w);

/* Which tensors carry a gradient (needs[n_tensors]): activations that
 * depend on a trainable weight. Graph inputs and constants never do. */
void ntp__train_grad_flags(const ntp_graph *g, bool *needs);
/* Check that every layer of g trains here, at f32 and in NCHW: one error
 * naming every layer that does not. */
ntp_status ntp__train_check(ntp_ctx *ctx, const ntp_graph *g);

/* The engine's state, shared by the kernels. */
typedef struct ntp_train_state {
    const ntp_graph *g;
    double **val;   /* [n_tensors]: every tensor's values */
    double **grad;  /* [n_tensors]: gradients, NULL where none */
    double **saved; /* [n_nodes]: saved state, NULL where none */
    double dropout; /* drop probability */
    uint64_t seed;  /* dropout masks: per step and layer */
    uint64_t step;  /* the step being run, from 0 */
} ntp_train_state;

/* Forward of node n in training mode (batch statistics, dropout masks). */
ntp_status ntp__train_forward(ntp_ctx *ctx, ntp_train_state *s, const ntp_node *n);
/* Accumulate the gradients of n's inputs (those with a grad buffer). */
void ntp__train_backward_data(ntp_train_state *s, const ntp_node *n);
/* Write the gradients of n's trainable weights. */
void ntp__train_backward_weights(ntp_train_state *s, const ntp_node *n);
/* Whether n has trainable weights. */
bool ntp__train_has_weights(const ntp_graph *g, const ntp_node *n);

/* Recurrent layers (train-rnn.c): mode 0 forward, 1 backward-data, 2
 * backward-weights, through time; and the doubles of saved state they keep. */
void ntp__train_rnn(ntp_train_state *s, const ntp_node *n, int mode);
int64_t ntp__train_rnn_saved(const ntp_graph *g, const ntp_node *n);
/* Multi-head attention (train-attn.c), the same modes and saved state. */
void ntp__train_attention(ntp_train_state *s, const ntp_node *n, int mode);
int64_t ntp__train_attention_saved(const ntp_graph *g, const ntp_node *n);

/* transpose, split, pad and deconv (train-move.c), modes as above; false
 * for any other op. */
bool ntp__train_move(ntp_train_state *s, const ntp_node *n, int mode);

/* The CTC loss (train-ctc.c): logits x [T, N, C], blank C - 1, labels
 * [N, S] as doubles with -1 after each sequence, sequence b's input length
 * in_len[b] in [1, T] (NULL: every one T); the mean over the batch of
 * -ln p / |label| (torch.nn.CTCLoss's "mean"), its gradient written into
 * dx (0 on the frames past a sequence's length); scratch holds
 * ntp__train_ctc_scratch(T, C, S) doubles. */
double ntp__train_ctc(const double *x, const double *labels, const int64_t *in_len, int64_t T,
                      int64_t N, int64_t C, int64_t S, double *dx, double *scratch);
int64_t ntp__train_ctc_scratch(int64_t T, int64_t C, int64_t S);
/* The length of one label row, and the frames it needs (one per symbol,
 * plus a blank between each pair of equal neighbours). */
int64_t ntp__train_ctc_length(const double *labels, int64_t S);
int64_t ntp__train_ctc_frames_needed(const double *labels, int64_t S);

/* The loss of x against labels (class indices as doubles for
 * cross-entropy, targets for mse) and its gradient into dx (overwritten).
 * Cross-entropy takes logits [rows, classes] and is the mean over rows of
 * logsumexp(x) - x[label]; mse is the mean over the n elements. */
double ntp__train_loss(ntp_loss loss, const double *x, const double *labels, int64_t rows,
                       int64_t classes, int64_t n, double *dx);

/* Training FLOPs of n per phase (docs/train.md), forward from the op
 * table; `data` says whether its inputs take a gradient. The update phase
 * counts the optimizer's work over n's trainable weights. */
void ntp__train_flops(const ntp_graph *g, const ntp_node *n, bool data, ntp_optimizer opt,
                      int64_t flops[NTP_TRAIN_PHASE_COUNT]);
/* FLOPs of the loss: forward and backward over n elements. */
void ntp__train_loss_flops(ntp_loss loss, int64_t n, int64_t flops[NTP_TRAIN_PHASE_COUNT]);

/* One optimizer step over one weight tensor of cnt values: p -= ..., with
 * state m (momentum buffer or Adam's first moment) and v (Adam's second),
 * t the 1-based step count. */
typedef struct ntp_optim {
    ntp_optimizer kind;
    double lr, momentum, beta1, beta2, eps;
} ntp_optim;
void ntp__train_update(const ntp_optim *o, int64_t t, double *p, const double *grad, double *m,
                       double *v, int64_t cnt);

/* A memory plan's parts, in the reports' order: weights, gradients,
 * optimizer_state, activations, workspace, other, then peak (the sum's
 * high point); their JSON keys and values (src/train/train-report.c). */
enum { NTP__TRAIN_MEM_PARTS = 7 };
extern const char *const ntp__train_mem_keys[NTP__TRAIN_MEM_PARTS];
void ntp__train_mem_values(const ntp_train_memory *m, int64_t v[NTP__TRAIN_MEM_PARTS]);
/* One configuration's memory as the text reports show it: its label and
 * its plan (NULL: it failed, err says why). */
typedef struct ntp__train_mem_row {
    const char *label;
    const ntp_train_plan *plan;
    const char *err;
} ntp__train_mem_row;
/* The memory-by-data-structure table of rows, a row each, then TBD's
 * figure as text bars scaled to the largest peak (sweep --train and
 * analyze --train --batch LIST). */
void ntp__train_mem_text(FILE *f, const ntp__train_mem_row *rows, int n);

/* A training sweep's results (train-sweep.c; its HTML, train-html.c). */
struct ntp_train_sweep {
    const ntp_sweep *sw;
    ntp_train_opts o;
    int n;
    ntp_train_result **res; /* [n], NULL where it failed */
    char **err;             /* [n], the failure's one line */
};

#endif
