/* What this CPU's oneDNN can do, and how many threads it uses.
 *
 * oneDNN 2.6 implements bf16 only from AVX512-BW on (AVX512_CORE, native
 * from AVX512_BF16 and AMX) and f16 only on AVX512-FP16 machines; on an
 * AVX2 CPU creating such a primitive fails with dnnl_unimplemented. Rather
 * than restate oneDNN's dispatch rules, supports() asks oneDNN: once per op
 * family and data type, a small primitive of that family is created, and
 * the answer is cached for the life of the process. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "onednn-impl.h"

/* The small primitive that stands for each op's family in probe();
 * PROBE_ELTWISE (0) for the activations, data movement and the rest. */
typedef enum probe_kind {
    PROBE_ELTWISE,
    PROBE_CONV,
    PROBE_DECONV,
    PROBE_FC,
    PROBE_MATMUL,
    PROBE_POOL,
    PROBE_BATCHNORM,
    PROBE_LAYERNORM,
    PROBE_SOFTMAX,
    PROBE_BINARY,
    PROBE_RNN
} probe_kind;

static const probe_kind probes[NTP_OP_COUNT] = {
    [NTP_OP_CONV] = PROBE_CONV,
    [NTP_OP_DECONV] = PROBE_DECONV,
    [NTP_OP_FC] = PROBE_FC,
    [NTP_OP_MATMUL] = PROBE_MATMUL,
    [NTP_OP_ATTENTION] = PROBE_MATMUL,
    [NTP_OP_MAXPOOL] = PROBE_POOL,
    [NTP_OP_AVGPOOL] = PROBE_POOL,
    [NTP_OP_GLOBAL_MAXPOOL] = PROBE_POOL,
    [NTP_OP_GLOBAL_AVGPOOL] = PROBE_POOL,
    [NTP_OP_BATCHNORM] = PROBE_BATCHNORM,
    [NTP_OP_LAYERNORM] = PROBE_LAYERNORM,
    [NTP_OP_SOFTMAX] = PROBE_SOFTMAX,
    [NTP_OP_LOG_SOFTMAX] = PROBE_SOFTMAX,
    [NTP_OP_ADD] = PROBE_BINARY,
    [NTP_OP_MUL] = PROBE_BINARY,
    [NTP_OP_CONCAT] = PROBE_BINARY,
    [NTP_OP_LSTM] = PROBE_RNN,
    [NTP_OP_GRU] = PROBE_RNN,
    [NTP_OP_RNN] = PROBE_RNN,
};

static probe_kind probe_of(ntp_op op)
{
    return (unsigned)op < NTP_OP_COUNT ? probes[op] : PROBE_ELTWISE;
}

/* Build a small primitive of the family of `op` at type t; true if oneDNN
 * has an implementation. */
static bool probe(dnnl_engine_t eng, ntp_op op, dnnl_data_type_t t)
{
    dnnl_memory_desc_t a, w, c, bias;
    dnnl_dims_t act = {2, 16, 8, 8}, wd = {16, 16, 3, 3}, one = {1, 1}, pad = {1, 1};
    dnnl_dims_t k2 = {2, 2}, pad0 = {0, 0}, dil0 = {0, 0};
    dnnl_data_type_t wt = t == dnnl_s8 ? dnnl_s8 : t;
    union {
        dnnl_convolution_desc_t conv;
        dnnl_deconvolution_desc_t deconv;
        dnnl_inner_product_desc_t ip;
        dnnl_matmul_desc_t mm;
        dnnl_pooling_v2_desc_t pool;
        dnnl_batch_normalization_desc_t bn;
        dnnl_layer_normalization_desc_t ln;
        dnnl_eltwise_desc_t elt;
        dnnl_softmax_v2_desc_t sm;
        dnnl_binary_desc_t bin;
        dnnl_rnn_desc_t rnn;
    } d;
    dnnl_status_t st = dnnl_success;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_memory_desc_init_by_tag(&a, 4, act, t, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&c, 4, act, t, dnnl_format_tag_any);
    switch (probe_of(op)) {
    case PROBE_CONV:
        dnnl_memory_desc_init_by_tag(&w, 4, wd, wt, dnnl_format_tag_any);
        st = dnnl_convolution_forward_desc_init(&d.conv, dnnl_forward_inference,
                                                dnnl_convolution_direct, &a, &w, NULL, &c, one, pad,
                                                pad);
        break;
    case PROBE_DECONV:
        dnnl_memory_desc_init_by_tag(&w, 4, wd, wt, dnnl_format_tag_any);
        st = dnnl_deconvolution_forward_desc_init(&d.deconv, dnnl_forward_inference,
                                                  dnnl_deconvolution_direct, &a, &w, NULL, &c, one,
                                                  pad, pad);
        break;
    case PROBE_FC: {
        dnnl_dims_t x = {4, 32}, wk = {16, 32}, y = {4, 16}, b = {16};
        dnnl_memory_desc_init_by_tag(&a, 2, x, t, dnnl_ab);
        dnnl_memory_desc_init_by_tag(&w, 2, wk, wt, dnnl_format_tag_any);
        dnnl_memory_desc_init_by_tag(&bias, 1, b, dnnl_f32, dnnl_a);
        dnnl_memory_desc_init_by_tag(&c, 2, y, t, dnnl_ab);
        st = dnnl_inner_product_forward_desc_init(&d.ip, dnnl_forward_inference, &a, &w, &bias, &c);
        break;
    }
    case PROBE_MATMUL: {
        dnnl_dims_t x = {2, 4, 32}, wk = {2, 32, 16}, y = {2, 4, 16};
        dnnl_memory_desc_init_by_tag(&a, 3, x, t, dnnl_abc);
        dnnl_memory_desc_init_by_tag(&w, 3, wk, wt, dnnl_abc);
        dnnl_memory_desc_init_by_tag(&c, 3, y, t, dnnl_abc);
        st = dnnl_matmul_desc_init(&d.mm, &a, &w, NULL, &c);
        break;
    }
    case PROBE_POOL: {
        /* Pooling takes its source as it is (format_tag_any is refused
         * there, which once sent every bf16 pooling to the reference
         * backend); the channels-last layout is the one a convolution
         * hands on at bf16. */
        dnnl_dims_t y = {2, 16, 4, 4};
        dnnl_memory_desc_init_by_tag(&a, 4, act, t, dnnl_acdb);
        dnnl_memory_desc_init_by_tag(&c, 4, y, t, dnnl_format_tag_any);
        bool max = op == NTP_OP_MAXPOOL || op == NTP_OP_GLOBAL_MAXPOOL;
        st = dnnl_pooling_v2_forward_desc_init(&d.pool, dnnl_forward_inference,
                                               max ? dnnl_pooling_max
                                                   : dnnl_pooling_avg_exclude_padding,
                                               &a, &c, k2, k2, dil0, pad0, pad0);
        break;
    }
    case PROBE_BATCHNORM:
        dnnl_memory_desc_init_by_tag(&a, 4, act, t, dnnl_nchw);
        st = dnnl_batch_normalization_forward_desc_init(&d.bn, dnnl_forward_inference, &a, 1e-5f,
                                                        dnnl_use_global_stats | dnnl_use_scale |
                                                            dnnl_use_shift);
        break;
    case PROBE_LAYERNORM: {
        dnnl_dims_t x = {4, 32};
        dnnl_memory_desc_init_by_tag(&a, 2, x, t, dnnl_ab);
        st = dnnl_layer_normalization_forward_desc_init(&d.ln, dnnl_forward_inference, &a, NULL,
                                                        1e-5f, dnnl_use_scale | dnnl_use_shift);
        break;
    }
    case PROBE_SOFTMAX:
        dnnl_memory_desc_init_by_tag(&a, 4, act, t, dnnl_nchw);
        dnnl_memory_desc_init_by_tag(&c, 4, act, t, dnnl_nchw);
        st = dnnl_softmax_v2_forward_desc_init(
            &d.sm, dnnl_forward_inference,
            op == NTP_OP_SOFTMAX ? dnnl_softmax_accurate : dnnl_softmax_log, &a, &c, 3);
        break;
    case PROBE_BINARY:
        dnnl_memory_desc_init_by_tag(&a, 4, act, t, dnnl_nchw);
        dnnl_memory_desc_init_by_tag(&c, 4, act, t, dnnl_nchw);
        st = dnnl_binary_desc_init(&d.bin, dnnl_binary_add, &a, &a, &c);
        break;
    case PROBE_RNN: {
        dnnl_dims_t x = {3, 2, 8}, wl = {1, 1, 8, 4, 8}, wi = {1, 1, 8, 4, 8}, y = {3, 2, 8};
        int g = op == NTP_OP_LSTM ? 4 : op == NTP_OP_GRU ? 3 : 1;
        wl[3] = wi[3] = g;
        dnnl_memory_desc_init_by_tag(&a, 3, x, t, dnnl_tnc);
        dnnl_memory_desc_init_by_tag(&w, 5, wl, t, dnnl_format_tag_any);
        dnnl_memory_desc_t wi_md;
        dnnl_memory_desc_init_by_tag(&wi_md, 5, wi, t, dnnl_format_tag_any);
        dnnl_memory_desc_init_by_tag(&c, 3, y, t, dnnl_tnc);
        /* With an f32 bias, as rnn.c builds them: oneDNN 2.6 has no LSTM
         * implementation without a bias descriptor, at bf16 either, so a
         * probe without one refused every bf16 recurrent layer. */
        dnnl_dims_t bd = {1, 1, op == NTP_OP_GRU ? 4 : g, 8};
        dnnl_memory_desc_init_by_tag(&bias, 4, bd, dnnl_f32, dnnl_ldgo);
        if (op == NTP_OP_LSTM)
            st = dnnl_lstm_forward_desc_init(&d.rnn, dnnl_forward_inference,
                                             dnnl_unidirectional_left2right, &a, NULL, NULL, &w,
                                             &wi_md, &bias, &c, NULL, NULL, 0);
        else if (op == NTP_OP_GRU)
            st = dnnl_lbr_gru_forward_desc_init(&d.rnn, dnnl_forward_inference,
                                                dnnl_unidirectional_left2right, &a, NULL, &w,
                                                &wi_md, &bias, &c, NULL, 0);
        else
            st = dnnl_vanilla_rnn_forward_desc_init(
                &d.rnn, dnnl_forward_inference, dnnl_eltwise_tanh, dnnl_unidirectional_left2right,
                &a, NULL, &w, &wi_md, &bias, &c, NULL, 0, 0.f, 0.f);
        break;
    }
    case PROBE_ELTWISE: {
        /* Activations: an eltwise with the op's own algorithm, since
         * oneDNN's support differs between algorithms (2.6 rounds f32
         * only: its eltwise descriptor refuses round at bf16 with
         * dnnl_invalid_arguments). Data movement: a relu at that type. */
        ntp_node nn;
        memset(&nn, 0, sizeof nn);
        nn.op = op;
        dnnl_alg_kind_t alg = dnnl_eltwise_relu;
        float alpha = 0.f, beta = 0.f;
        if (!ntp__dnnl_eltwise_alg(&nn, &alg, &alpha, &beta)) {
            alg = dnnl_eltwise_relu;
            alpha = beta = 0.f;
        }
        dnnl_memory_desc_init_by_tag(&a, 4, act, t, dnnl_nchw);
        st = dnnl_eltwise_forward_desc_init(&d.elt, dnnl_forward_inference, alg, &a, alpha, beta);
        break;
    }
    }
    if (st != dnnl_success)
        return false;
    st = dnnl_primitive_desc_create(&pd, &d, NULL, eng, NULL);
    if (st != dnnl_success)
        return false;
    dnnl_primitive_desc_destroy(pd);
    return true;
}

/* 0 unknown, 1 yes, 2 no; indexed by op and data type. */
static _Atomic int cache[NTP_OP_COUNT][16];

bool ntp__dnnl_dtype_ok(ntp_op op, dnnl_data_type_t t)
{
    if ((unsigned)op >= NTP_OP_COUNT || (unsigned)t >= 16)
        return false;
    int v = atomic_load(&cache[op][t]);
    if (v == 0) {
        dnnl_engine_t eng;
        bool ok = false;
        if (dnnl_engine_create(&eng, dnnl_cpu, 0) == dnnl_success) {
            ok = probe(eng, op, t);
            dnnl_engine_destroy(eng);
        }
        v = ok ? 1 : 2;
        atomic_store(&cache[op][t], v);
    }
    return v == 1;
}

/* Debian's libdnnl is built with the OpenMP runtime (DNNL_CPU_RUNTIME=OMP),
 * and oneDNN 2.6's C API has no call to set its thread count: the OpenMP
 * runtime's omp_set_num_threads() is the knob. libdnnl already loads
 * libgomp into the process, so the function is looked up there at run time
 * instead of linking -fopenmp, which would tie the library to one
 * compiler's OpenMP runtime (clang's libomp beside gcc's libgomp would give
 * two thread pools). The setting applies to parallel regions started from
 * the calling thread, which is the thread the engine runs layers on. */
static void (*omp_set_fn)(int);
static int (*omp_procs_fn)(void);
static pthread_once_t omp_once = PTHREAD_ONCE_INIT;

static void omp_lookup(void)
{
    void *p = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    void *q = dlsym(RTLD_DEFAULT, "omp_get_num_procs");
    /* POSIX guarantees a function pointer fits in a void *. */
    memcpy(&omp_set_fn, &p, sizeof p);
    memcpy(&omp_procs_fn, &q, sizeof q);
}

void ntp__dnnl_set_threads(int n)
{
    pthread_once(&omp_once, omp_lookup);
    if (!omp_set_fn)
        return;
    if (n <= 0)
        n = omp_procs_fn ? omp_procs_fn() : 0;
    if (n > 0)
        omp_set_fn(n);
}

/* Without VNNI, oneDNN's int8 GEMM multiplies u8 by s8 with vpmaddubsw,
 * whose pairwise int16 sums saturate once |w| exceeds 64 next to a large
 * activation: measured here, full-range s8 weights gave a 22% relative
 * error. Convolutions compensate inside oneDNN (their weights are reordered
 * with a scale adjustment); fc and matmul run on the GEMM and must keep the
 * weights to 7 bits themselves. */
bool ntp__dnnl_int8_needs_7bit(void)
{
    unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
    return (isa & (unsigned)dnnl_cpu_isa_avx512_core_vnni) !=
           (unsigned)dnnl_cpu_isa_avx512_core_vnni;
}
