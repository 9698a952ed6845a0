/* The execution engine, private to libntprof.
 *
 * An execution plan binds a finalized graph to a backend: it places every
 * activation in one arena (sized with the backend's storage types), holds
 * the weights, builds one ntp_kargs per layer, and runs the backend's
 * prepare once per layer (timed). Running the plan is then a loop of
 * backend->execute calls over positions [first, last]. */
#ifndef NTPROF_EXEC_IMPL_H
#define NTPROF_EXEC_IMPL_H

#include "backend/backend-impl.h"
#include "ntprof/run.h"

typedef struct ntp_exec {
    const ntp_graph *g;
    const ntp_backend_i *be;
    void *be_state;
    ntp_dtype precision;
    int threads;
    void *arena;
    int64_t arena_bytes;
    int64_t *offsets;       /* per tensor: arena offset, -1 for constants */
    void **wdata;           /* per tensor: constant data (storage type), or NULL */
    int64_t weight_bytes;
    ntp_kargs *kargs;       /* per execution position */
    void **node_state;      /* per position, from prepare */
    size_t *workspace;      /* per position */
    void *ws;               /* shared workspace: the largest request */
    size_t ws_bytes;
    double *prepare_ms;     /* per position */
    int first, last;        /* positions that the measured loop runs */
} ntp_exec;

/* Build the plan: storage, weights from the seed (or the model's own),
 * inputs (generated or from files), kargs, and prepare every layer. Layers
 * before `first` are run once so the range sees real inputs. */
ntp_status ntp__exec_init(ntp_ctx *ctx, ntp_exec *x, const ntp_graph *g,
                          const ntp_backend_i *be, const ntp_run_opts *o, int first, int last);
void ntp__exec_free(ntp_exec *x);
/* Run positions [from, to] once. */
ntp_status ntp__exec_range(ntp_ctx *ctx, ntp_exec *x, int from, int to);
/* Write every graph output as output_<i>.npy into dir. */
ntp_status ntp__exec_save_outputs(ntp_ctx *ctx, const ntp_exec *x, const char *dir);
/* Pointer to tensor ti's storage (activation or constant). */
void *ntp__exec_tensor(const ntp_exec *x, int ti);
/* Storage type of tensor t on the plan's backend. */
ntp_dtype ntp__exec_storage(const ntp_exec *x, const ntp_tensor *t);

/* --- data (src/exec/data.c) ------------------------------------------------ */
/* Fill node n's weights (f32, already allocated, in n->w order) from the
 * seed: fan-in scaled so activations stay finite through deep networks
 * (docs/data.md). */
void ntp__gen_weights(const ntp_graph *g, const ntp_node *n, float *const *w, uint64_t seed);
/* Fill graph input tensor ti (storage in its own dtype) with synthetic data
 * suited to its consumers: audio for mfcc, peaked logits for ctc_decode,
 * valid indices for embedding, N(0,1) otherwise. */
ntp_status ntp__gen_input(ntp_ctx *ctx, const ntp_graph *g, int ti, void *data, uint64_t seed);

#endif
