/* The backend interface, private to libntprof.
 *
 * A backend is a method table (like SQLite's sqlite3_io_methods): a versioned
 * struct of function pointers filled with designated initialisers. Optional
 * slots may be NULL; the engine supplies the default. Preparing (creating
 * primitives, packing weights) is separate from executing and is timed
 * separately, as oneDNN, XNNPACK and benchdnn all split create from execute. */
#ifndef NTPROF_BACKEND_IMPL_H
#define NTPROF_BACKEND_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include "graph/graph-impl.h"

#define NTP_BACKEND_API_VERSION 1

/* A tensor as a kernel sees it: data, shape and storage type. */
typedef struct ntp_buf {
    void *data;
    ntp_shape shape;
    ntp_dtype dtype;
} ntp_buf;

/* Everything a kernel needs to run one node. */
typedef struct ntp_kargs {
    const ntp_graph *g;
    const ntp_node *node;
    int n_in;
    ntp_buf in[NTP_MAX_INPUTS];
    int n_w;
    ntp_buf w[NTP_MAX_WEIGHTS];
    int n_out;
    ntp_buf out[NTP_MAX_OUTPUTS];
    void *workspace;            /* workspace_bytes as asked for by prepare */
    size_t workspace_bytes;
    int threads;
} ntp_kargs;

typedef struct ntp_backend_opts {
    int threads;                /* 0: all available cores */
    ntp_dtype precision;
} ntp_backend_opts;

typedef struct ntp_backend_i {
    int api_version;            /* NTP_BACKEND_API_VERSION */
    const char *name;           /* "ref", "onednn", ... */
    const char *description;
    /* Can this backend run node n at precision p? */
    bool (*supports)(const ntp_graph *g, const ntp_node *n, ntp_dtype p);
    /* Storage type of activations and weights at precision p (the reference
     * backend stores f32 and emulates reduced precisions exactly). NULL: p. */
    ntp_dtype (*storage_dtype)(ntp_dtype p);
    /* Create backend-wide state. NULL: no state. */
    ntp_status (*init)(ntp_ctx *ctx, const ntp_backend_opts *opts, void **state);
    /* Prepare one node: create primitives, pack weights (k->w hold the
     * weights already, k->in/out hold valid shapes but may not hold data
     * yet). Set *workspace to the scratch bytes execute needs. NULL: nothing
     * to prepare and no workspace. */
    ntp_status (*prepare)(ntp_ctx *ctx, void *state, const ntp_kargs *k, void **node_state,
                          size_t *workspace);
    /* Run one node. Required. */
    ntp_status (*execute)(ntp_ctx *ctx, void *state, void *node_state, const ntp_kargs *k);
    /* Wait for queued work (asynchronous devices). NULL: synchronous. */
    void (*synchronize)(void *state);
    /* Free what prepare made. NULL: nothing. */
    void (*release_node)(void *state, void *node_state);
    /* Free what init made. NULL: nothing. */
    void (*release)(void *state);
} ntp_backend_i;

/* Registered backends, in preference order (src/backend/registry.c). */
int ntp__backend_count(void);
const ntp_backend_i *ntp__backend_get(int i);
const ntp_backend_i *ntp__backend_find(const char *name);

/* Each backend defines `const ntp_backend_i ntp__backend_<name>`. */
extern const ntp_backend_i ntp__backend_ref;

#endif
