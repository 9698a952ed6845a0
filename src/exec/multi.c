/* ntp_run_compare: one topology on several backends, side by side
 * (include/ntprof/frameworks.h, docs/frameworks.md).
 *
 * Each backend gets a complete ntp_run with the caller's options (same seed,
 * so the same weights and generated inputs; the same given inputs), one
 * after the other: the runs never overlap, so each backend's thread pool
 * has the cores to itself while it is measured. Their graph outputs are
 * saved as .npy (into the caller's directory, or a temporary one removed
 * afterwards) and compared with the reference backend's. Rows are folded
 * back onto the topology's layers so that backends that add rows
 * (reorders, im2col, conversions) or remove them (fusion) line up. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/ctx-impl.h"
#include "exec-impl.h"
#include "io/io-impl.h"
#include "multi-impl.h"
#include "ntprof/frameworks.h"

#define MAX_COMPARED 16

struct ntp_backend_store {
    int n, cap;
    char **s;
};

static const char *keep(ntp_backend_comparison *c, const char *s)
{
    if (!s)
        return NULL;
    struct ntp_backend_store *st = c->store;
    if (st->n == st->cap) {
        int cap = st->cap ? 2 * st->cap : 64;
        char **p = realloc(st->s, (size_t)cap * sizeof *p);
        if (!p)
            return NULL;
        st->s = p;
        st->cap = cap;
    }
    char *d = ntp__strdup(s);
    if (d)
        st->s[st->n++] = d;
    return d;
}

int ntp_backend_comparison_run_count(const ntp_backend_comparison *c)
{
    return c ? c->n_runs : 0;
}

const ntp_backend_run *ntp_backend_comparison_run(const ntp_backend_comparison *c, int i)
{
    return c && i >= 0 && i < c->n_runs ? &c->runs[i] : NULL;
}

int ntp_backend_comparison_fastest(const ntp_backend_comparison *c)
{
    return c ? c->fastest : -1;
}

const char *ntp_backend_comparison_reference(const ntp_backend_comparison *c)
{
    return c ? c->reference : NULL;
}

int ntp_backend_comparison_layer_count(const ntp_backend_comparison *c)
{
    return c ? c->n_layers : 0;
}

const char *ntp_backend_comparison_layer_name(const ntp_backend_comparison *c, int l)
{
    return c && l >= 0 && l < c->n_layers ? c->layer_names[l] : NULL;
}

const char *ntp_backend_comparison_layer_type(const ntp_backend_comparison *c, int l)
{
    return c && l >= 0 && l < c->n_layers ? c->layer_types[l] : NULL;
}

void ntp_backend_comparison_free(ntp_backend_comparison *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n_runs; i++) {
        ntp_run_result_free(c->runs[i].result);
        free(c->runs[i].deviation);
        free(c->runs[i].layers);
    }
    if (c->store) {
        for (int i = 0; i < c->store->n; i++)
            free(c->store->s[i]);
        free(c->store->s);
        free(c->store);
    }
    free(c->runs);
    free(c->layer_names);
    free(c->layer_types);
    free(c);
}

/* --- the backend list --------------------------------------------------------- */

static ntp_status unknown_backend(ntp_ctx *ctx, const char *name)
{
    const char *names[32];
    int n = 0;
    for (int i = 0; i < ntp__backend_count() && n < 32; i++)
        names[n++] = ntp__backend_get(i)->name;
    const char *near = ntp__nearest(name, names, n);
    return ntp__error(
        ctx, NTP_STATUS_UNKNOWN_NAME, "unknown backend '%s'%s%s%s; this build has: %s", name,
        near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "", ntp_backends());
}

ntp_status ntp_backend_list_parse(ntp_ctx *ctx, const char *list, char *buf, size_t buflen,
                                  const char **names, int max, int *n)
{
    *n = 0;
    size_t len = strlen(list);
    if (len + 1 > buflen)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "backend list '%s' is too long", list);
    memcpy(buf, list, len + 1);
    for (char *p = buf;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (!*p)
            return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                              "backend list '%s' has an empty name", list);
        if (!ntp__backend_find(p))
            return unknown_backend(ctx, p);
        for (int i = 0; i < *n; i++)
            if (strcmp(names[i], p) == 0)
                return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                                  "backend list '%s' names '%s' twice", list, p);
        if (*n == max)
            return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                              "backend list '%s' has more than %d names", list, max);
        names[(*n)++] = p;
        if (!comma)
            break;
        p = comma + 1;
    }
    return NTP_STATUS_OK;
}

/* --- outputs -------------------------------------------------------------------- */

/* The graph outputs of one run as doubles (the first 64 outputs: a
 * comparison of more is not a comparison anyone reads). */
typedef struct outs {
    int n;
    double *v[64];
    int64_t count[64];
    bool integer[64];
} outs;

static void outs_free(outs *o)
{
    for (int i = 0; i < o->n; i++)
        free(o->v[i]);
    o->n = 0;
}

static ntp_status outs_from_dir(ntp_ctx *ctx, const ntp_graph *g, const char *dir, outs *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 0; i < g->n_outputs && i < 64; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/output_%d.npy", dir, i);
        ntp_npy a;
        ntp_status st = ntp__npy_read(ctx, path, &a);
        if (st)
            return st;
        int64_t n = ntp_shape_numel(&a.shape);
        double *v = malloc((size_t)n * sizeof *v + 1);
        if (!v) {
            ntp__npy_free(&a);
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        }
        for (int64_t j = 0; j < n; j++)
            switch (a.dtype) {
            case NTP_DTYPE_F32: v[j] = ((const float *)a.data)[j]; break;
            case NTP_DTYPE_I32: v[j] = ((const int32_t *)a.data)[j]; break;
            case NTP_DTYPE_I64: v[j] = (double)((const int64_t *)a.data)[j]; break;
            case NTP_DTYPE_U8: v[j] = ((const uint8_t *)a.data)[j]; break;
            case NTP_DTYPE_I8: v[j] = ((const int8_t *)a.data)[j]; break;
            /* Outputs are written as f32 or an integer type, never these. */
            case NTP_DTYPE_BF16:
            case NTP_DTYPE_F16:
            case NTP_DTYPE_COUNT: v[j] = NAN; break;
            }
        o->v[i] = v;
        o->count[i] = n;
        o->integer[i] = a.dtype != NTP_DTYPE_F32;
        o->n = i + 1;
        ntp__npy_free(&a);
    }
    return NTP_STATUS_OK;
}

/* The reference backend's outputs from a plan run once, unmeasured, when
 * "ref" is not among the compared backends. */
static ntp_status outs_from_ref(ntp_ctx *ctx, const ntp_graph *g, const ntp_run_opts *opts, outs *o)
{
    memset(o, 0, sizeof *o);
    ntp_exec x;
    ntp_status st = ntp__exec_init_ref(ctx, &x, g, opts);
    if (st)
        return st;
    if ((st = ntp__exec_steps(ctx, &x, 0, x.n_steps - 1)) == NTP_STATUS_OK) {
        for (int i = 0; i < g->n_outputs && i < 64; i++) {
            const ntp_tensor *t = &g->tensors[g->outputs[i]];
            int64_t n = ntp_shape_numel(&t->shape);
            void *buf = malloc((size_t)n * 8 + 8);
            double *v = malloc((size_t)n * sizeof *v + 1);
            ntp_dtype dt;
            if (!buf || !v || !ntp__exec_output(&x, i, buf, &dt)) {
                free(buf);
                free(v);
                st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "cannot read output '%s'", t->name);
                break;
            }
            for (int64_t j = 0; j < n; j++)
                v[j] = dt == NTP_DTYPE_F32   ? ((const float *)buf)[j]
                       : dt == NTP_DTYPE_I64 ? (double)((const int64_t *)buf)[j]
                       : dt == NTP_DTYPE_U8  ? ((const uint8_t *)buf)[j]
                                             : ((const int32_t *)buf)[j];
            free(buf);
            o->v[i] = v;
            o->count[i] = n;
            o->integer[i] = dt != NTP_DTYPE_F32;
            o->n = i + 1;
        }
    }
    ntp__exec_free(&x);
    return st;
}

void ntp__topk_agree(const float *y, const float *b, int64_t rows, int64_t cls, double *top1,
                     double *top5)
{
    *top1 = *top5 = -1;
    if (rows < 1 || cls < 5)
        return;
    int64_t agree1 = 0, agree5 = 0;
    for (int64_t s = 0; s < rows; s++) {
        const float *ys = y + s * cls, *bs = b + s * cls;
        int64_t c = -1;
        for (int64_t j = 0; j < cls; j++)
            if (!isnan(bs[j]) && (c < 0 || bs[j] > bs[c]))
                c = j;
        if (c < 0 || isnan(ys[c]))
            continue;
        /* c's rank in y: the classes scoring at least as high as it, a NaN
         * counting as higher (it is no evidence for c). */
        int64_t ahead = 0;
        for (int64_t j = 0; j < cls && ahead < 5; j++)
            ahead += j != c && !(ys[j] < ys[c]);
        agree1 += ahead < 1;
        agree5 += ahead < 5;
    }
    *top1 = (double)agree1 / (double)rows;
    *top5 = (double)agree5 / (double)rows;
}

/* How far run a's outputs are from the reference's. */
static void deviation(const ntp_graph *g, const outs *a, const outs *ref, ntp_backend_run *run)
{
    run->max_abs_error = run->rel_l2 = -1;
    int n = a->n < ref->n ? a->n : ref->n;
    if (n <= 0 || !(run->deviation = calloc((size_t)n, sizeof *run->deviation)))
        return;
    run->max_abs_error = run->rel_l2 = 0;
    for (int i = 0; i < n; i++) {
        if (a->count[i] != ref->count[i])
            continue;
        const ntp_tensor *t = &g->tensors[g->outputs[i]];
        ntp_accuracy *A = &run->deviation[run->n_deviation++];
        A->output = t->name;
        double num = 0, den = 0, mx = 0;
        for (int64_t j = 0; j < a->count[i]; j++) {
            double d = fabs(a->v[i][j] - ref->v[i][j]);
            if (d > mx || isnan(d))
                mx = d;
            num += d * d;
            den += ref->v[i][j] * ref->v[i][j];
        }
        A->max_abs_error = mx;
        A->rel_l2 = den > 0 ? sqrt(num / den) : sqrt(num);
        A->top1 = A->top5 = -1;
        int64_t cls = t->shape.ndim == 2 ? t->shape.dim[1] : 0;
        if (!a->integer[i] && cls >= 5) {
            int64_t rows = t->shape.dim[0];
            float *ya = malloc((size_t)(rows * cls) * sizeof *ya + 1);
            float *yb = malloc((size_t)(rows * cls) * sizeof *yb + 1);
            if (ya && yb) {
                for (int64_t j = 0; j < rows * cls; j++) {
                    ya[j] = (float)a->v[i][j];
                    yb[j] = (float)ref->v[i][j];
                }
                ntp__topk_agree(ya, yb, rows, cls, &A->top1, &A->top5);
            }
            free(ya);
            free(yb);
        }
        if (A->max_abs_error > run->max_abs_error || isnan(A->max_abs_error))
            run->max_abs_error = A->max_abs_error;
        if (A->rel_l2 > run->rel_l2 || isnan(A->rel_l2))
            run->rel_l2 = A->rel_l2;
    }
}

/* --- rows back onto layers ------------------------------------------------------ */

static bool is_kind(const ntp_layer_result *L, const char *kind)
{
    return L->kind && strcmp(L->kind, kind) == 0;
}

static bool has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Fold run r's rows onto the layers: a layer's own row (or its fused
 * row), plus the sub-step rows of its step (named "<layer><suffix>", next
 * to it); conversion rows are counted apart. */
static ntp_status fold_rows(ntp_ctx *ctx, const ntp_graph *g, ntp_backend_comparison *c,
                            ntp_backend_run *run)
{
    const ntp_run_result *r = run->result;
    int nl = c->n_layers;
    run->layers = calloc((size_t)nl + 1, sizeof *run->layers);
    int *of = malloc(((size_t)r->n_layers + 1) * sizeof *of);
    if (!run->layers || !of) {
        free(of);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 0; i < nl; i++)
        run->layers[i].ms = -1;
    for (int k = 0; k < r->n_layers; k++) {
        const ntp_layer_result *L = &r->layers[k];
        of[k] = -1;
        if (is_kind(L, "convert")) {
            /* Conversion rows are the engine's, between backends; their names
             * (tensor names) are not layers. */
            of[k] = -2;
            run->n_convert++;
            run->convert_ms += L->time_ms.median;
        } else if (!is_kind(L, "reorder")) {
            int i = ntp_graph_layer_find(g, L->name);
            if (i >= 0 && i < nl)
                of[k] = i;
        }
    }
    for (int k = 0; k < r->n_layers; k++) {
        if (of[k] != -1)
            continue;
        /* A sub-step row: the layer row before or after it whose name
         * starts this row's name (the longer match wins). */
        const char *name = r->layers[k].name, *best = NULL;
        int pick = -1;
        for (int dir = -1; dir <= 1; dir += 2)
            for (int j = k + dir; j >= 0 && j < r->n_layers; j += dir) {
                if (of[j] == -2)
                    break;
                if (of[j] < 0)
                    continue;
                const char *cand = c->layer_names[of[j]];
                if (name && has_prefix(name, cand) && (!best || strlen(cand) > strlen(best))) {
                    best = cand;
                    pick = of[j];
                }
                break;
            }
        of[k] = pick >= 0 ? pick : -3;
    }
    for (int k = 0; k < r->n_layers; k++) {
        if (of[k] < 0)
            continue;
        const ntp_layer_result *L = &r->layers[k];
        ntp_backend_layer *B = &run->layers[of[k]];
        if (B->ms < 0)
            B->ms = 0;
        bool own_row =
            L->name && strcmp(L->name, c->layer_names[of[k]]) == 0 && !is_kind(L, "reorder");
        if (!own_row) {
            B->sub_rows++;
            B->sub_ms += L->time_ms.median;
            B->ms += L->time_ms.median;
            continue;
        }
        B->ran_on = keep(c, L->backend);
        B->impl = keep(c, L->impl);
        B->prepare_ms = L->prepare_ms;
        if (L->fused) {
            B->fused_into = keep(c, L->fused_into);
            run->layers_fused++;
        } else {
            B->ms += L->time_ms.median;
            if (B->ran_on && strcmp(B->ran_on, run->backend) == 0)
                run->layers_own++;
            else
                run->layers_fallback++;
        }
    }
    free(of);
    return NTP_STATUS_OK;
}

/* --- temporary output directories ------------------------------------------------- */

static ntp_status make_dir(ntp_ctx *ctx, const char *dir)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: %s", dir, strerror(errno));
    return NTP_STATUS_OK;
}

/* Remove what the runs left in a temporary directory: output_<i>.npy in
 * one subdirectory per backend. */
static void remove_tree(const char *root, const char *const *backends, int n, int n_outputs)
{
    char path[4400];
    for (int b = 0; b < n; b++) {
        for (int i = 0; i < n_outputs; i++) {
            snprintf(path, sizeof path, "%s/%s/output_%d.npy", root, backends[b], i);
            unlink(path);
        }
        snprintf(path, sizeof path, "%s/%s", root, backends[b]);
        rmdir(path);
    }
    rmdir(root);
}

/* --- the comparison ----------------------------------------------------------------- */

static double cpu_ms(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Threads of this process other than the calling one that are running or
 * waiting for a CPU ('R' in /proc/self/task/TID/stat); 0 without /proc. */
static int others_runnable(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    long self = (long)gettid();
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || strtol(e->d_name, NULL, 10) == self)
            continue;
        char path[300], buf[512];
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        /* The state follows the thread's name, which may hold ')'. */
        const char *p = strrchr(buf, ')');
        n += p && p[1] == ' ' && p[2] == 'R';
    }
    closedir(d);
    return n;
}

/* Wait, at most half a second, until no thread but this one uses a CPU or
 * waits for one.
 * The pools of the backend that ran last keep polling after their last
 * parallel region: libgomp's and pthreadpool's workers for about a
 * millisecond, Debian's OpenBLAS (pthreads build) for about 0.1 s of CPU
 * time per worker (measured: 98 ms in the 100 ms after a two-thread SGEMM,
 * and as much after the library loads). A tail that long outlasts the next
 * backend's warm-up on small topologies and would take a core from its
 * measured iterations. On a busy machine a polling worker may not have
 * had a CPU yet, so a quiet interval alone is not enough: no other thread
 * may be runnable either. */
static void quiesce(void)
{
    for (int i = 0; i < 50; i++) {
        double p0 = cpu_ms(CLOCK_PROCESS_CPUTIME_ID), t0 = cpu_ms(CLOCK_THREAD_CPUTIME_ID);
        struct timespec nap = {0, 10000000};
        nanosleep(&nap, NULL);
        double others =
            (cpu_ms(CLOCK_PROCESS_CPUTIME_ID) - p0) - (cpu_ms(CLOCK_THREAD_CPUTIME_ID) - t0);
        if (others < 0.5 && others_runnable() == 0)
            return;
    }
}

ntp_status ntp_run_compare(ntp_ctx *ctx, const ntp_graph *g, const ntp_run_opts *opts,
                           const char *const *backends, int n, ntp_backend_comparison **out)
{
    *out = NULL;
    ntp_run_opts base;
    if (opts)
        base = *opts;
    else
        ntp_run_opts_default(&base);
    if (n < 1 || n > MAX_COMPARED)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "compare 1 to %d backends, not %d",
                          MAX_COMPARED, n);
    for (int i = 0; i < n; i++) {
        if (!backends[i] || !ntp__backend_find(backends[i]))
            return unknown_backend(ctx, backends[i] ? backends[i] : "(null)");
        for (int j = 0; j < i; j++)
            if (strcmp(backends[i], backends[j]) == 0)
                return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "backend '%s' is listed twice",
                                  backends[i]);
    }
    ntp_backend_comparison *c = calloc(1, sizeof *c);
    if (!c || !(c->store = calloc(1, sizeof *c->store)) ||
        !(c->runs = calloc((size_t)n, sizeof *c->runs)) ||
        !(c->layer_names = calloc((size_t)g->n_nodes + 1, sizeof *c->layer_names)) ||
        !(c->layer_types = calloc((size_t)g->n_nodes + 1, sizeof *c->layer_types))) {
        ntp_backend_comparison_free(c);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    c->topology = keep(c, g->name);
    c->source = keep(c, g->source);
    c->precision = g->precision;
    c->batch = g->batch;
    c->threads = base.threads;
    c->seed = base.seed;
    c->fused = base.fuse;
    c->n_layers = g->n_nodes;
    for (int i = 0; i < g->n_nodes; i++) {
        c->layer_names[i] = keep(c, ntp_graph_layer_name(g, i));
        c->layer_types[i] = keep(c, ntp_graph_layer_type(g, i));
        if (!c->layer_names[i] || !c->layer_types[i]) {
            ntp_backend_comparison_free(c);
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        }
    }
    /* Outputs are compared only for whole runs (a partial run may not save
     * them). */
    bool whole = base.only_marker == NULL;
    char root[4096] = "";
    bool temporary = false;
    ntp_status st = NTP_STATUS_OK;
    if (whole && base.save_outputs_dir) {
        snprintf(root, sizeof root, "%s", base.save_outputs_dir);
        st = make_dir(ctx, root);
    } else if (whole) {
        const char *tmp = getenv("TMPDIR");
        snprintf(root, sizeof root, "%s/ntprof-compare-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (mkdtemp(root))
            temporary = true;
        else
            st = ntp__error(ctx, NTP_STATUS_IO_ERROR,
                            "cannot create a directory for the outputs "
                            "in %s: %s",
                            tmp && *tmp ? tmp : "/tmp", strerror(errno));
    }
    int ref_index = -1;
    for (int i = 0; i < n && !st; i++) {
        ntp_backend_run *run = &c->runs[i];
        run->backend = keep(c, backends[i]);
        run->max_abs_error = run->rel_l2 = -1;
        if (!run->backend) {
            st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
            break;
        }
        if (strcmp(backends[i], "ref") == 0)
            ref_index = i;
        ntp_run_opts o = base;
        o.backend = backends[i];
        o.run_uuid = NULL; /* one identity cannot name several runs */
        char dir[4200];
        o.save_outputs_dir = NULL;
        if (whole) {
            snprintf(dir, sizeof dir, "%s/%s", root, backends[i]);
            o.save_outputs_dir = dir;
        }
        quiesce();
        if ((st = ntp_run(ctx, g, &o, &run->result)) == NTP_STATUS_OK) {
            c->n_runs = i + 1;
            st = fold_rows(ctx, g, c, run);
        }
    }
    if (!st && whole) {
        outs ref;
        char dir[4200];
        c->reference = "ref";
        snprintf(dir, sizeof dir, "%s/ref", root);
        st = ref_index >= 0 ? outs_from_dir(ctx, g, dir, &ref) : outs_from_ref(ctx, g, &base, &ref);
        for (int i = 0; i < n && !st; i++) {
            outs mine;
            snprintf(dir, sizeof dir, "%s/%s", root, backends[i]);
            if ((st = outs_from_dir(ctx, g, dir, &mine)) == NTP_STATUS_OK)
                deviation(g, &mine, &ref, &c->runs[i]);
            outs_free(&mine);
        }
        outs_free(&ref);
    }
    if (temporary && root[0])
        remove_tree(root, backends, n, g->n_outputs);
    if (st) {
        ntp_backend_comparison_free(c);
        return st;
    }
    double best = INFINITY;
    for (int i = 0; i < n; i++)
        if (c->runs[i].result->end_to_end_ms.median < best) {
            best = c->runs[i].result->end_to_end_ms.median;
            c->fastest = i;
        }
    for (int i = 0; i < n; i++)
        c->runs[i].speed_ratio = best > 0 ? c->runs[i].result->end_to_end_ms.median / best : 0;
    *out = c;
    return NTP_STATUS_OK;
}
