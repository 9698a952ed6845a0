/* The ONNX backend test suite, on one backend.
 *
 * Over Debian's libonnx-testdata (/usr/share/libonnx-testdata/data/{node,
 * pytorch-converted,pytorch-operator,simple}): every test's model.onnx is
 * loaded with the values of its test_data_set_*\/input_N.pb bound (the
 * loader uses them where a layer needs a constant, such as a Reshape's shape,
 * as ONNX's own runner feeds them), the graph inputs that remain are fed from
 * the same .pb files through the engine's input loader (--input NAME=FILE.pb),
 * the graph runs once, and every output is compared with output_N.pb at
 * ONNX's tolerances: |y - expected| <= atol + rtol·|expected| with rtol 1e-3
 * and atol 1e-7, the defaults of onnx.backend.test; NaN must match NaN. (Only
 * the data/real models carry their own tolerances, in data.json; they are not
 * among these directories.)
 *
 * The backend is the reference backend, or the one named by the first
 * argument (or NTP_ONNX_CONFORMANCE_BACKEND): cmake/ntp-conformance.cmake
 * registers test_onnx_conformance_<backend> for every other backend built.
 * The engine places each layer as a run does: on that backend where it
 * supports the layer, on the reference backend otherwise, with conversions
 * at the boundaries. A passing test none of whose layers ran on the backend
 * proves nothing about it, so those are counted apart ("all on ref"). A
 * backend that cannot run on this machine (cuda without a device) makes the
 * binary exit with 77, which CTest reports as skipped.
 *
 * A test is "unsupported" when loading refuses it with NTP_STATUS_UNSUPPORTED
 * (an op or attribute the IR lacks, a non-float dtype), which must be a clean
 * refusal; anything else that goes wrong is a failure, and one failure fails
 * this test. The counts per directory and every failing name are printed;
 * docs/onnx.md records them. NTP_ONNX_CONFORMANCE_VERBOSE=1 prints the
 * reason of every unsupported test too, and NTP_ONNX_CONFORMANCE_ONLY=SUBSTR
 * runs only the tests whose name contains SUBSTR. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "exec/exec-impl.h"
#include "io/onnx-impl.h"
#include "ntprof/ntprof.h"

#define DATA_DIR "/usr/share/libonnx-testdata/data"
#define RTOL 1e-3
#define ATOL 1e-7
#define MAX_IO 32

enum { PASSED, FAILED, UNSUPPORTED };

typedef struct counts {
    int n[3];
    int on_backend; /* passed with at least one layer on the backend */
    int all_on_ref; /* passed with every layer fallen back to ref */
} counts;

/* The backend under test (main). */
static const ntp_backend_i *backend;

/* How many layers of plan x run on the backend under test, and their op
 * names ("conv,relu"), for failure messages. */
static int layers_on_backend(const ntp_exec *x, char *ops, size_t len)
{
    int n = 0;
    size_t used = 0;
    ops[0] = '\0';
    for (int p = 0; p < x->g->n_nodes; p++) {
        if (x->be[x->node_be[p]] != backend)
            continue;
        n++;
        const char *name = ntp__op_name(x->g->nodes[x->g->order[p]].op);
        if (strstr(ops, name) || used + strlen(name) + 2 > len)
            continue; /* listed already, or no room left */
        used += (size_t)snprintf(ops + used, len - used, "%s%s", used ? "," : "", name);
    }
    return n;
}

static bool is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in dir that start with prefix; the caller frees. */
static int list_dir(const char *dir, const char *prefix, char ***out)
{
    DIR *d = opendir(dir);
    *out = NULL;
    if (!d)
        return 0;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            *out = realloc(*out, (size_t)cap * sizeof **out);
            assert_non_null(*out);
        }
        (*out)[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n > 1)
        qsort(*out, (size_t)n, sizeof **out, cmp_str);
    return n;
}

static void free_list(char **l, int n)
{
    for (int i = 0; i < n; i++)
        free(l[i]);
    free(l);
}

/* The graph inputs of model.onnx that are not initializers, in order:
 * input_N.pb is the Nth of them. */
static int model_inputs(const char *model, char names[MAX_IO][256], bool *tensor)
{
    ntp_ctx *ctx = ntp_ctx_init();
    const uint8_t *buf;
    size_t len;
    int n = -1;
    if (ntp__onnx_map_file(ctx, model, &buf, &len) == NTP_STATUS_OK) {
        Onnx__ModelProto *m = NULL;
        if (ntp__onnx_unpack_model(ctx, model, buf, len, &m) == NTP_STATUS_OK && m->graph) {
            n = 0;
            const Onnx__GraphProto *g = m->graph;
            for (size_t i = 0; i < g->n_input && n < MAX_IO; i++) {
                bool init = false;
                for (size_t k = 0; k < g->n_initializer && !init; k++)
                    init = g->initializer[k]->name && g->input[i]->name &&
                           strcmp(g->initializer[k]->name, g->input[i]->name) == 0;
                if (init)
                    continue;
                const Onnx__TypeProto *t = g->input[i]->type;
                tensor[n] = t && t->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
                snprintf(names[n++], 256, "%s", g->input[i]->name ? g->input[i]->name : "");
            }
        }
        if (m)
            protobuf_c_message_free_unpacked(&m->base, NULL);
        ntp__onnx_unmap_file(buf, len);
    }
    ntp_ctx_free(ctx);
    return n;
}

/* Compare output i with its expected .pb. */
/* Output `got` (f32, or i32 data: an index such as argmax's, compared
 * exactly with an integer expectation; f32 1 or 0 against a bool) against
 * the expected .pb. */
static bool compare(const char *exp_path, const void *got, ntp_dtype gdt, const ntp_shape *gs,
                    char *why, size_t wlen, bool *unsupported)
{
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_onnx_tensor e;
    bool ok = false;
    *unsupported = false;
    if (ntp__onnx_read_pb(ctx, exp_path, &e, NULL) != NTP_STATUS_OK) {
        if (snprintf(why, wlen, "cannot read %s: %s", exp_path, ntp_ctx_errmsg(ctx)) >= (int)wlen)
            why[wlen - 1] = '\0'; /* a long reason is cut */
        ntp_ctx_free(ctx);
        return false;
    }
    ntp_ctx_free(ctx);
    bool index = gdt == NTP_DTYPE_I32;
    /* A predicate (a comparison's output) is ONNX's bool and the IR's 1 or 0
     * in float: compared exactly. */
    bool truth = e.dtype == NTP_ONNX_BOOL && gdt == NTP_DTYPE_F32;
    if (!ntp__onnx_is_float(e.dtype) && !index && !truth) {
        snprintf(why, wlen, "expected output is %s", ntp__onnx_dtype_name(e.dtype));
        *unsupported = true;
        goto done;
    }
    if (index && ntp__onnx_is_float(e.dtype)) {
        snprintf(why, wlen, "output is i32, expected %s", ntp__onnx_dtype_name(e.dtype));
        goto done;
    }
    /* A scalar is [1] in the IR when a reshape produced it. */
    bool shape_ok = e.n == ntp_shape_numel(gs) &&
                    (e.shape.ndim == gs->ndim || (e.n == 1 && e.shape.ndim <= 1 && gs->ndim <= 1));
    for (int d = 0; shape_ok && d < gs->ndim && e.shape.ndim == gs->ndim; d++)
        shape_ok = e.shape.dim[d] == gs->dim[d];
    if (!shape_ok) {
        char a[128], b[128];
        snprintf(why, wlen, "shape %s, expected %s", ntp_shape_str(gs, a, sizeof a),
                 ntp_shape_str(&e.shape, b, sizeof b));
        goto done;
    }
    for (int64_t k = 0; index && k < e.n; k++) {
        int64_t y = ((const int32_t *)got)[k], w = ntp__onnx_get_i(&e, k);
        if (y != w) {
            snprintf(why, wlen, "element %lld is %lld, expected %lld", (long long)k, (long long)y,
                     (long long)w);
            goto done;
        }
    }
    for (int64_t k = 0; truth && k < e.n; k++) {
        float y = ((const float *)got)[k], w = ntp__onnx_get_i(&e, k) ? 1.0f : 0.0f;
        if (y != w) {
            snprintf(why, wlen, "element %lld is %.9g, expected %s", (long long)k, y,
                     w != 0 ? "true (1)" : "false (0)");
            goto done;
        }
    }
    for (int64_t k = 0; !index && !truth && k < e.n; k++) {
        double y = ((const float *)got)[k], w = e.f[k];
        bool same = (isnan(y) && isnan(w)) || y == w || fabs(y - w) <= ATOL + RTOL * fabs(w);
        if (!same) {
            snprintf(why, wlen, "element %lld is %.9g, expected %.9g", (long long)k, y, w);
            goto done;
        }
    }
    ok = true;
done:
    ntp__onnx_tensor_free_data(&e);
    return ok;
}

/* One data set of one test. */
static int run_set(const char *dir, const char *model, const char *set, char *why, size_t wlen,
                   int *on_be)
{
    char names[MAX_IO][256], path[MAX_IO][1024];
    ntp_onnx_tensor vals[MAX_IO];
    ntp_onnx_bind binds[MAX_IO];
    bool tensor[MAX_IO];
    int n_in = model_inputs(model, names, tensor);
    if (n_in < 0) {
        snprintf(why, wlen, "cannot read the model's inputs");
        return FAILED;
    }
    int n_bind = 0, result = FAILED;
    ntp_ctx *ctx = ntp_ctx_init();
    for (int i = 0; i < n_in; i++) {
        snprintf(path[i], sizeof path[i], "%s/%s/input_%d.pb", dir, set, i);
        if (!tensor[i]) {
            snprintf(why, wlen, "input %d is a sequence or an optional, not a tensor", i);
            result = UNSUPPORTED;
            goto done;
        }
        if (ntp__onnx_read_pb(ctx, path[i], &vals[n_bind], NULL) != NTP_STATUS_OK) {
            /* A .pb of a type ntprof does not read (strings, sequences). */
            snprintf(why, wlen, "input %d: %s", i, ntp_ctx_errmsg(ctx));
            result = ntp_ctx_status(ctx) == NTP_STATUS_UNSUPPORTED ? UNSUPPORTED : FAILED;
            goto done;
        }
        binds[n_bind].name = names[i];
        binds[n_bind].value = &vals[n_bind];
        n_bind++;
    }
    ntp_graph *g = NULL;
    ntp_load_opts lo = {.max_memory = -1};
    ntp_status st = ntp__onnx_load_file(ctx, model, &lo, binds, n_bind, &g);
    if (st) {
        snprintf(why, wlen, "%s", ntp_ctx_errmsg(ctx));
        result = st == NTP_STATUS_UNSUPPORTED ? UNSUPPORTED : FAILED;
        goto done;
    }
    /* The inputs the graph still reads at run time, by name. */
    char specs[MAX_IO][1400];
    const char *spec_ptr[MAX_IO];
    int n_spec = 0;
    for (int j = 0; j < ntp_graph_input_count(g); j++)
        for (int i = 0; i < n_in; i++)
            if (strcmp(ntp_graph_input_name(g, j), names[i]) == 0) {
                if (snprintf(specs[n_spec], sizeof specs[n_spec], "%s=%s", names[i], path[i]) >=
                    (int)sizeof specs[n_spec])
                    continue; /* a path too long to pass is a missing input */
                spec_ptr[n_spec] = specs[n_spec];
                n_spec++;
            }
    ntp_exec x;
    ntp_exec_opts eo = {.backend = backend,
                        .threads = 1,
                        .seed = 1,
                        .inputs = spec_ptr,
                        .n_inputs = n_spec,
                        .first = 0,
                        .last = ntp_graph_layer_count(g) - 1};
    if ((st = ntp__exec_init(ctx, &x, g, &eo)) == NTP_STATUS_OK) {
        char ops[160];
        *on_be = layers_on_backend(&x, ops, sizeof ops);
        if ((st = ntp__exec_steps(ctx, &x, 0, x.n_steps - 1)) == NTP_STATUS_OK) {
            result = PASSED;
            for (int i = 0; i < ntp_graph_output_count(g) && result == PASSED; i++) {
                ntp_shape s = ntp_graph_output_shape(g, i);
                float *buf = malloc((size_t)ntp_shape_numel(&s) * 8 + 8);
                ntp_dtype dt;
                char exp_path[1100], w2[400];
                snprintf(exp_path, sizeof exp_path, "%s/%s/output_%d.pb", dir, set, i);
                bool unsup;
                if (!buf || !ntp__exec_output(&x, i, buf, &dt) ||
                    (dt != NTP_DTYPE_F32 && dt != NTP_DTYPE_I32)) {
                    snprintf(why, wlen, "output %d cannot be read as f32 or i32", i);
                    result = FAILED;
                } else if (!compare(exp_path, buf, dt, &s, w2, sizeof w2, &unsup)) {
                    snprintf(why, wlen, "output %d ('%s'): %s [%d layers on %s: %s]", i,
                             ntp_graph_output_name(g, i), w2, *on_be, backend->name, ops);
                    result = unsup ? UNSUPPORTED : FAILED;
                }
                free(buf);
            }
        } else {
            snprintf(why, wlen, "run: %s [%d layers on %s: %s]", ntp_ctx_errmsg(ctx), *on_be,
                     backend->name, ops);
        }
        ntp__exec_free(&x);
    } else {
        snprintf(why, wlen, "build: %s", ntp_ctx_errmsg(ctx));
    }
    ntp_graph_free(g);
done:
    for (int i = 0; i < n_bind; i++)
        ntp__onnx_tensor_free_data(&vals[i]);
    ntp_ctx_free(ctx);
    return result;
}

/* One test, every data set; *on_be: the most layers any set ran on the
 * backend. */
static int run_case(const char *dir, char *why, size_t wlen, int *on_be)
{
    char model[1024];
    if (snprintf(model, sizeof model, "%s/model.onnx", dir) >= (int)sizeof model)
        return FAILED;
    char **sets;
    int n = list_dir(dir, "test_data_set_", &sets), result = PASSED;
    if (n == 0) {
        snprintf(why, wlen, "no test data sets");
        result = FAILED;
    }
    *on_be = 0;
    for (int i = 0; i < n && result == PASSED; i++) {
        int on = 0;
        result = run_set(dir, model, sets[i], why, wlen, &on);
        if (on > *on_be)
            *on_be = on;
    }
    free_list(sets, n);
    return result;
}

static void print_counts(const char *what, const counts *c)
{
    if (backend == ntp__backend_find("ref"))
        print_message("%-18s passed %4d  failed %3d  unsupported %4d\n", what, c->n[PASSED],
                      c->n[FAILED], c->n[UNSUPPORTED]);
    else
        print_message("%-18s passed %4d (on %s %4d, all on ref %4d)  failed %3d  unsupported %4d\n",
                      what, c->n[PASSED], backend->name, c->on_backend, c->all_on_ref, c->n[FAILED],
                      c->n[UNSUPPORTED]);
}

static void test_conformance(void **state)
{
    (void)state;
    static const char *const kinds[] = {"node", "pytorch-converted", "pytorch-operator", "simple"};
    const char *verbose = getenv("NTP_ONNX_CONFORMANCE_VERBOSE");
    const char *only = getenv("NTP_ONNX_CONFORMANCE_ONLY");
    if (!is_dir(DATA_DIR)) {
        print_message("%s not found: install libonnx-testdata (scripts/deps.sh)\n", DATA_DIR);
        fail();
    }
    print_message("backend %s\n", backend->name);
    counts total = {.on_backend = 0};
    int failures = 0;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        char kdir[512];
        snprintf(kdir, sizeof kdir, "%s/%s", DATA_DIR, kinds[k]);
        char **tests;
        int n = list_dir(kdir, "test_", &tests);
        counts c = {.on_backend = 0};
        for (int i = 0; i < n; i++) {
            char dir[1024], why[1200] = "";
            snprintf(dir, sizeof dir, "%s/%s", kdir, tests[i]);
            if (!is_dir(dir) || (only && !strstr(tests[i], only)))
                continue;
            int on_be = 0;
            int r = run_case(dir, why, sizeof why, &on_be);
            c.n[r]++;
            if (r == PASSED && on_be > 0)
                c.on_backend++;
            else if (r == PASSED)
                c.all_on_ref++;
            if (r == FAILED)
                print_message("FAILED %s/%s: %s\n", kinds[k], tests[i], why);
            else if (r == UNSUPPORTED && verbose && *verbose == '1')
                print_message("unsupported %s/%s: %s\n", kinds[k], tests[i], why);
            else if (r == PASSED && verbose && *verbose == '1' &&
                     backend != ntp__backend_find("ref"))
                print_message("passed %s/%s: %d layers on %s\n", kinds[k], tests[i], on_be,
                              backend->name);
        }
        print_counts(kinds[k], &c);
        for (int r = 0; r < 3; r++)
            total.n[r] += c.n[r];
        total.on_backend += c.on_backend;
        total.all_on_ref += c.all_on_ref;
        failures += c.n[FAILED];
        free_list(tests, n);
    }
    print_counts("total", &total);
    assert_true(total.n[PASSED] > 0);
    assert_int_equal(failures, 0);
}

/* The backend: argv[1], else $NTP_ONNX_CONFORMANCE_BACKEND, else ref. An
 * unknown name is an error (a typo must not pass as a skip); a built
 * backend that cannot run here exits with 77, CTest's SKIP_RETURN_CODE. */
int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : getenv("NTP_ONNX_CONFORMANCE_BACKEND");
    if (!name || !*name)
        name = "ref";
    backend = ntp__backend_find(name);
    if (!backend) {
        fprintf(stderr, "test_onnx_conformance: no backend '%s' in this build (built: %s)\n", name,
                ntp_backends());
        return 1;
    }
    char why[512];
    if (backend->available && !backend->available(why, sizeof why)) {
        printf("test_onnx_conformance: backend '%s' cannot run here: %s (skipped)\n", name, why);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conformance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
