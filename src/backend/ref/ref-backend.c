/* The reference backend's method table: every op at f32, bf16, f16 and i8,
 * computed in f32 on f32 storage, with the reduced precisions emulated by
 * rounding each output through the storage type (src/core/numeric.c).
 *
 * Weights reach execute already rounded by the engine (per output channel
 * for int8). Activations are rounded here, after each kernel: bf16 and f16
 * with round to nearest even, int8 by dynamic quantisation, that is with a
 * per-tensor scale max|y| / 127 taken from the output itself at run time.
 * Dynamic quantisation needs no calibration data and bounds the error of
 * each tensor by half a quantisation step; an engine that calibrates scales
 * offline would pass them in later API versions.
 *
 * Graph inputs keep the dtype the user gave them, so a bf16 or f16 input is
 * widened to f32 into the end of the workspace before the kernel runs. */
#include <string.h>

#include "core/numeric-impl.h"
#include "ref-impl.h"

static bool is_emulated(ntp_dtype p)
{
    return p == NTP_DTYPE_F32 || p == NTP_DTYPE_BF16 || p == NTP_DTYPE_F16 || p == NTP_DTYPE_I8;
}

static bool ref_supports(const ntp_graph *g, const ntp_node *n, ntp_dtype p)
{
    (void)g;
    return (unsigned)n->op < NTP_OP_COUNT && is_emulated(p);
}

static ntp_dtype ref_storage(ntp_dtype p)
{
    (void)p;
    return NTP_DTYPE_F32;
}

/* Inputs stored as bf16 or f16 (graph inputs) are widened to f32 first. */
static bool needs_widening(const ntp_buf *b)
{
    return b->dtype == NTP_DTYPE_BF16 || b->dtype == NTP_DTYPE_F16;
}

/* The convert op reads every dtype itself; the others read f32. */
static bool widens_inputs(const ntp_kargs *k)
{
    return k->node->op != NTP_OP_CONVERT;
}

/* Bytes of the kernel's own workspace rounded up so the widened inputs that
 * follow it are aligned for floats and doubles. */
static size_t kernel_part(const ntp_kargs *k)
{
    size_t w = ntp__ref_workspace(k);
    if (w == SIZE_MAX)
        return SIZE_MAX;
    return ntp__ref_size_add(w, 63) / 64 * 64;
}

static size_t total_workspace(const ntp_kargs *k)
{
    size_t w = kernel_part(k);
    if (widens_inputs(k))
        for (int i = 0; i < k->n_in; i++)
            if (needs_widening(&k->in[i]))
                w = ntp__ref_size_add(
                    w, ntp__ref_size_add(ntp__ref_floats(ntp_shape_numel(&k->in[i].shape), 1), 63) /
                           64 * 64);
    /* Weights held as bf16 or int8 (ntp_exec_opts.weights_bf16,
     * weights_i8) are widened too. */
    for (int i = 0; i < k->n_w; i++)
        if (k->w[i].dtype == NTP_DTYPE_BF16 || k->w[i].dtype == NTP_DTYPE_I8)
            w = ntp__ref_size_add(
                w, ntp__ref_size_add(ntp__ref_floats(ntp_shape_numel(&k->w[i].shape), 1), 63) / 64 *
                       64);
    return w;
}

static bool widens_weights(const ntp_kargs *k)
{
    for (int i = 0; i < k->n_w; i++)
        if (k->w[i].dtype == NTP_DTYPE_BF16 || k->w[i].dtype == NTP_DTYPE_I8)
            return true;
    return false;
}

static ntp_status ref_prepare(ntp_ctx *ctx, void *state, ntp_kargs *k, void **node_state,
                              size_t *workspace)
{
    (void)state;
    *node_state = NULL;
    size_t w = total_workspace(k);
    if (w == SIZE_MAX)
        return ntp__ref_error(ctx, k, NTP_STATUS_OVERFLOW, "workspace size overflows");
    *workspace = w;
    return NTP_STATUS_OK;
}

/* Round output i through precision p, as storage of that type would. */
static ntp_status emulate_output(ntp_ctx *ctx, const ntp_kargs *k, int i, ntp_dtype p)
{
    const ntp_buf *o = &k->out[i];
    if (o->dtype != NTP_DTYPE_F32 || p == NTP_DTYPE_F32)
        return NTP_STATUS_OK; /* integer outputs (decoded labels) hold exact values */
    /* scales == NULL: dynamic per-tensor quantisation for int8. */
    ntp_status st = ntp__emulate_storage(o->data, ntp_shape_numel(&o->shape), p, NULL, 1, 0);
    if (st != NTP_STATUS_OK)
        return ntp__ref_error(ctx, k, st, "cannot emulate %s storage for output %d",
                              ntp_dtype_name(p), i);
    return NTP_STATUS_OK;
}

static ntp_status ref_execute(ntp_ctx *ctx, void *state, void *node_state, const ntp_kargs *k)
{
    (void)state;
    (void)node_state;
    size_t need = total_workspace(k);
    if (need > 0 && (!k->workspace || k->workspace_bytes < need))
        return ntp__ref_error(ctx, k, NTP_STATUS_INTERNAL,
                              "workspace of %zu bytes given, the reference backend needs %zu",
                              k->workspace ? k->workspace_bytes : (size_t)0, need);
    ntp_kargs kk = *k;
    /* Only when some input needs widening: then the workspace is not NULL
     * (NULL + 0 is undefined behaviour). */
    if ((widens_inputs(k) || widens_weights(k)) && k->workspace) {
        char *p = (char *)k->workspace + kernel_part(k);
        for (int i = 0; i < k->n_w; i++) {
            if (k->w[i].dtype != NTP_DTYPE_BF16 && k->w[i].dtype != NTP_DTYPE_I8)
                continue;
            int64_t n = ntp_shape_numel(&k->w[i].shape);
            float *dst = (float *)p;
            if (k->w[i].dtype == NTP_DTYPE_BF16) {
                const uint16_t *src = k->w[i].data;
                for (int64_t j = 0; j < n; j++)
                    dst[j] = ntp__bf16_to_f32(src[j]);
            } else {
                /* int8 values, then one f32 scale per row at the next
                 * 4-byte boundary (exec.c's weight-only int8). */
                const int8_t *q = k->w[i].data;
                const float *sc = (const float *)((const char *)q + ((size_t)n + 3) / 4 * 4);
                int64_t rows = k->w[i].shape.dim[0], per = n / (rows > 0 ? rows : 1);
                for (int64_t j = 0; j < n; j++)
                    dst[j] = (float)q[j] * sc[j / per];
            }
            kk.w[i].data = dst;
            kk.w[i].dtype = NTP_DTYPE_F32;
            p += ntp__ref_size_add(ntp__ref_floats(n, 1), 63) / 64 * 64;
        }
        for (int i = 0; i < k->n_in && widens_inputs(k); i++) {
            if (!needs_widening(&k->in[i]))
                continue;
            int64_t n = ntp_shape_numel(&k->in[i].shape);
            const uint16_t *src = k->in[i].data;
            float *dst = (float *)p;
            for (int64_t j = 0; j < n; j++)
                dst[j] = k->in[i].dtype == NTP_DTYPE_BF16 ? ntp__bf16_to_f32(src[j])
                                                          : ntp__f16_to_f32(src[j]);
            kk.in[i].data = dst;
            kk.in[i].dtype = NTP_DTYPE_F32;
            p += ntp__ref_size_add(ntp__ref_floats(n, 1), 63) / 64 * 64;
        }
        kk.workspace_bytes = kernel_part(k);
    }
    ntp_status st = ntp__ref_run(ctx, &kk);
    if (st != NTP_STATUS_OK)
        return st;
    /* convert rounds through its own target type inside the kernel. */
    if (k->node->op == NTP_OP_CONVERT && k->node->a.has_to_dtype)
        return NTP_STATUS_OK;
    for (int i = 0; i < k->n_out; i++)
        if ((st = emulate_output(ctx, k, i, k->node->precision)))
            return st;
    return NTP_STATUS_OK;
}

const ntp_backend_i ntp__backend_ref = {
    .api_version = NTP_BACKEND_API_VERSION,
    .name = "ref",
    .description = "reference kernels in portable C (f32 compute; bf16, f16 and int8 emulated "
                   "by rounding; single-threaded)",
    .kind = NTP_BACKEND_HOST,
    .priority = NTP_BACKEND_PRIORITY_REF,
    .supports = ref_supports,
    .storage_dtype = ref_storage,
    .prepare = ref_prepare,
    .execute = ref_execute,
};
