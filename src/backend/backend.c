/* The engine's side of the backend method table: one wrapper per slot that
 * supplies the documented default when the slot is NULL (as ggml-backend.c
 * does for ggml_backend_i), the interned implementation names and the one
 * kernel-error helper every backend reports through. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend-impl.h"
#include "core/ctx-impl.h"

bool ntp__be_supports(const ntp_backend_i *be, const ntp_graph *g, const ntp_node *n, ntp_dtype p)
{
    return be->supports && be->supports(g, n, p);
}

ntp_dtype ntp__be_storage_dtype(const ntp_backend_i *be, ntp_dtype p)
{
    return be->storage_dtype ? be->storage_dtype(p) : p;
}

ntp_status ntp__be_init(const ntp_backend_i *be, ntp_ctx *ctx, const ntp_backend_opts *opts,
                        void **state)
{
    *state = NULL;
    return be->init ? be->init(ctx, opts, state) : NTP_STATUS_OK;
}

ntp_status ntp__be_prepare(const ntp_backend_i *be, ntp_ctx *ctx, void *state, ntp_kargs *k,
                           void **node_state, size_t *workspace)
{
    *node_state = NULL;
    *workspace = 0;
    return be->prepare ? be->prepare(ctx, state, k, node_state, workspace) : NTP_STATUS_OK;
}

ntp_status ntp__be_execute(const ntp_backend_i *be, ntp_ctx *ctx, void *state, void *node_state,
                           const ntp_kargs *k)
{
    return be->execute(ctx, state, node_state, k);
}

ntp_status ntp__be_execute_step(const ntp_backend_i *be, ntp_ctx *ctx, void *state,
                                void *node_state, const ntp_kargs *k, int step)
{
    if (!be->execute_step)
        return be->execute(ctx, state, node_state, k);
    return be->execute_step(ctx, state, node_state, k, step);
}

void ntp__be_synchronize(const ntp_backend_i *be, void *state)
{
    if (be->synchronize)
        be->synchronize(state);
}

void ntp__be_release_node(const ntp_backend_i *be, void *state, void *node_state)
{
    if (node_state && be->release_node)
        be->release_node(state, node_state);
}

void ntp__be_release(const ntp_backend_i *be, void *state)
{
    if (state && be->release)
        be->release(state);
}

bool ntp__be_fusable(const ntp_backend_i *be, const ntp_graph *g, const ntp_node *head, int n_fused,
                     const ntp_node *next)
{
    return be->fusable && be->fusable(g, head, n_fused, next);
}

bool ntp__be_supports_unit(const ntp_backend_i *be, const ntp_graph *g, const ntp_unit *u,
                           ntp_dtype p)
{
    return be->supports_unit && be->supports_unit(g, u, p);
}

const char *ntp__be_impl_name(const ntp_backend_i *be, void *state, void *node_state)
{
    const char *n = be->impl_name ? be->impl_name(state, node_state) : NULL;
    const char *kept = n && *n ? ntp__be_intern(n) : NULL;
    return kept ? kept : be->name;
}

const char *ntp__be_src_layout(const ntp_backend_i *be, void *state, void *node_state)
{
    const char *l = be->src_layout ? be->src_layout(state, node_state) : NULL;
    return l && *l ? l : NULL;
}

const char *ntp__be_fuse_note(const ntp_backend_i *be, void *state, void *node_state)
{
    const char *n = be->fuse_note ? be->fuse_note(state, node_state) : NULL;
    return n && *n ? n : NULL;
}

int ntp__be_n_steps(const ntp_backend_i *be, void *state, void *node_state, int *main_step)
{
    *main_step = 0;
    return be->n_steps ? be->n_steps(state, node_state, main_step) : 1;
}

void ntp__be_step_info(const ntp_backend_i *be, void *state, void *node_state, int step,
                       const char **suffix, const char **type, int64_t *bytes)
{
    *suffix = "";
    *type = NULL;
    if (be->step_info)
        be->step_info(state, node_state, step, suffix, type, bytes);
}

bool ntp__be_available(const ntp_backend_i *be, char *why, size_t len)
{
    char buf[512] = "";
    if (!be->available || be->available(buf, sizeof buf)) {
        if (why && len)
            why[0] = '\0';
        return true;
    }
    if (why && len)
        snprintf(why, len, "%s", buf);
    return false;
}

double ntp__be_elapsed_ms(const ntp_backend_i *be, void *state, void *node_state)
{
    return be->elapsed_ms ? be->elapsed_ms(state, node_state) : -1;
}

void ntp__be_device_memory(const ntp_backend_i *be, void *state, int64_t *weights,
                           int64_t *activations, int64_t *workspace, int64_t *peak)
{
    *weights = *activations = *workspace = *peak = 0;
    if (state && be->device_memory)
        be->device_memory(state, weights, activations, workspace, peak);
}

bool ntp__be_is_device(const ntp_backend_i *be)
{
    return be->kind == NTP_BACKEND_DEVICE;
}

/* Implementation names outlive the plan: a run report keeps the pointer
 * after the plan (and the node state the name came from) is freed, so each
 * distinct name is kept once for the life of the process. */
const char *ntp__be_intern(const char *s)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static struct name {
        struct name *next;
        char s[];
    } * names;
    pthread_mutex_lock(&lock);
    const struct name *p = names;
    while (p && strcmp(p->s, s) != 0)
        p = p->next;
    if (!p) {
        size_t len = strlen(s) + 1;
        struct name *q = malloc(sizeof *q + len);
        if (q) {
            memcpy(q->s, s, len);
            q->next = names;
            names = q;
        }
        p = q;
    }
    pthread_mutex_unlock(&lock);
    return p ? p->s : NULL;
}

ntp_status ntp__be_verror(ntp_ctx *ctx, const char *backend, const ntp_graph *g, const ntp_node *n,
                          ntp_status st, const char *fmt, va_list ap)
{
    char msg[768];
    vsnprintf(msg, sizeof msg, fmt, ap);
    const char *pre = backend ? backend : "", *sep = backend ? ": " : "";
    if (g && n && n->name)
        return ntp__node_error(ctx, g, n, st, "%s%s%s", pre, sep, msg);
    if (n)
        return ntp__error(ctx, st, "<%s name='%s'>: %s%s%s", ntp__op_name(n->op),
                          n->name ? n->name : "?", pre, sep, msg);
    return ntp__error(ctx, st, "%s%s%s", pre, sep, msg);
}

ntp_status ntp__be_error(ntp_ctx *ctx, const char *backend, const ntp_graph *g, const ntp_node *n,
                         ntp_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ntp_status r = ntp__be_verror(ctx, backend, g, n, st, fmt, ap);
    va_end(ap);
    return r;
}

ntp_status ntp__be_kerror(ntp_ctx *ctx, const char *backend, const ntp_kargs *k, ntp_status st,
                          const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ntp_status r = ntp__be_verror(ctx, backend, k ? k->g : NULL, k ? k->node : NULL, st, fmt, ap);
    va_end(ap);
    return r;
}

/* --- training (docs/train.md) ------------------------------------------------ */

bool ntp__be_supports_backward(const ntp_backend_i *be, const ntp_graph *g, const ntp_node *n)
{
    return be->supports_backward && be->backward && be->supports_backward(g, n);
}

bool ntp__be_backward_bf16(const ntp_backend_i *be, const ntp_graph *g, const ntp_node *n)
{
    return be->backward_bf16 && (n->op == NTP_OP_CONV || n->op == NTP_OP_FC) &&
           ntp__be_supports_backward(be, g, n) && ntp__be_supports(be, g, n, NTP_DTYPE_BF16);
}

ntp_status ntp__be_backward(const ntp_backend_i *be, ntp_ctx *ctx, void *state,
                            const ntp_backward_args *a)
{
    return be->backward(ctx, state, a);
}

bool ntp__be_supports_train_forward(const ntp_backend_i *be, const ntp_graph *g, const ntp_node *n)
{
    return be->supports_train_forward && be->train_forward && be->supports_train_forward(g, n);
}

ntp_status ntp__be_train_forward(const ntp_backend_i *be, ntp_ctx *ctx, void *state,
                                 const ntp_train_fwd_args *a)
{
    return be->train_forward(ctx, state, a);
}
