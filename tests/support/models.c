/* Whole-model equivalence helpers (models.h). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "exec/exec-impl.h"
#include "io/io-impl.h"
#include "models.h"
#include "tmpdir.h"

double test_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

ntp_graph *test_load_model(ntp_ctx *ctx, const char *file, const char *const *set, int n_set,
                           const char *precision)
{
    char path[512];
    snprintf(path, sizeof path, "%s/models/%s", NTP_SOURCE_DIR, file);
    ntp_load_opts lo = {0};
    lo.set = set;
    lo.n_set = n_set;
    lo.set_precision = precision && ntp_dtype_parse(precision, &lo.precision) == NTP_STATUS_OK;
    ntp_graph *g = NULL;
    if (ntp_graph_load(ctx, path, &lo, &g) != NTP_STATUS_OK)
        fail_msg("load %s: %s", path, ntp_ctx_errmsg(ctx));
    return g;
}

void test_run_ref_save(ntp_ctx *ctx, const ntp_graph *g, const char *dir)
{
    ntp_exec x;
    ntp_exec_opts o;
    memset(&o, 0, sizeof o);
    o.backend = ntp__backend_find("ref");
    o.seed = 1;
    o.first = 0;
    o.last = g->n_nodes - 1;
    assert_non_null(o.backend);
    ntp_status st = ntp__exec_init(ctx, &x, g, &o);
    if (st)
        fail_msg("reference plan: %s", ntp_ctx_errmsg(ctx));
    st = ntp__exec_steps(ctx, &x, 0, x.n_steps - 1);
    if (st == NTP_STATUS_OK)
        st = ntp__exec_save_outputs(ctx, &x, dir);
    ntp__exec_free(&x);
    if (st)
        fail_msg("reference run: %s", ntp_ctx_errmsg(ctx));
}

int test_run_backend_save(ntp_ctx *ctx, const ntp_graph *g, const char *backend, int threads,
                          bool fuse, const char *dir)
{
    ntp_run_opts o;
    ntp_run_opts_default(&o);
    o.backend = backend;
    o.warmup = 0;
    o.iterations = 1;
    o.min_time_s = 0;
    o.threads = threads;
    o.fuse = fuse;
    o.accuracy = false;
    o.save_outputs_dir = dir;
    ntp_run_result *r = NULL;
    if (ntp_run(ctx, g, &o, &r) != NTP_STATUS_OK)
        fail_msg("%s run: %s", backend, ntp_ctx_errmsg(ctx));
    int on = 0, fused = 0;
    for (int i = 0; i < r->n_layers; i++) {
        on += r->layers[i].backend && strcmp(r->layers[i].backend, backend) == 0;
        fused += r->layers[i].fused;
    }
    printf("    %s%s: %d rows, %d on %s, %d fused\n", backend, fuse ? " --fuse" : "", r->n_layers,
           on, backend, fused);
    ntp_run_result_free(r);
    ntp_ctx_clear_warnings(ctx);
    return on;
}

double test_compare_outputs(ntp_ctx *ctx, const ntp_graph *g, const char *a, const char *b)
{
    double worst = 0;
    for (int i = 0; i < ntp_graph_output_count(g); i++) {
        char pa[600], pb[600];
        snprintf(pa, sizeof pa, "%s/output_%d.npy", a, i);
        snprintf(pb, sizeof pb, "%s/output_%d.npy", b, i);
        ntp_npy x, y;
        if (ntp__npy_read(ctx, pa, &x) || ntp__npy_read(ctx, pb, &y))
            fail_msg("%s", ntp_ctx_errmsg(ctx));
        assert_int_equal(x.dtype, y.dtype);
        assert_int_equal(x.nbytes, y.nbytes);
        int64_t n = ntp_shape_numel(&x.shape);
        if (x.dtype == NTP_DTYPE_F32) {
            double num = 0, den = 0;
            for (int64_t j = 0; j < n; j++) {
                double d = (double)((float *)x.data)[j] - ((float *)y.data)[j];
                num += d * d;
                den += (double)((float *)y.data)[j] * ((float *)y.data)[j];
            }
            double e = den > 0 ? sqrt(num / den) : sqrt(num);
            if (isnan(e))
                e = INFINITY;
            printf("      output %d (%s): rel_l2 %.2e\n", i, ntp_graph_output_name(g, i), e);
            if (e > worst)
                worst = e;
        } else {
            int64_t diff = 0;
            for (int64_t j = 0; j < (int64_t)x.nbytes; j++)
                diff += ((char *)x.data)[j] != ((char *)y.data)[j];
            printf("      output %d (%s): %s, %lld of %lld bytes differ\n", i,
                   ntp_graph_output_name(g, i), ntp_dtype_name(x.dtype), (long long)diff,
                   (long long)x.nbytes);
        }
        ntp__npy_free(&x);
        ntp__npy_free(&y);
    }
    return worst;
}

static test_model_check model_check;

static void run_model_test(void **state)
{
    const test_model *m = *state;
    ntp_ctx *ctx = ntp_ctx_init();
    assert_non_null(ctx);
    ntp_graph *g = test_load_model(ctx, m->file, m->set, m->n_set, NULL);
    double t0 = test_now_s();
    char ref[512];
    snprintf(ref, sizeof ref, "%s/%s-ref", test_tmpdir, m->file);
    test_run_ref_save(ctx, g, ref);
    printf("  %s f32 (reference %.1f s)\n", m->file, test_now_s() - t0);
    model_check(ctx, g, m, ref);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

void test_model_tests(struct CMUnitTest *tests, const test_model *models, int n,
                      test_model_check check)
{
    model_check = check;
    for (int i = 0; i < n; i++)
        tests[i] = (struct CMUnitTest){.name = models[i].file,
                                       .test_func = run_model_test,
                                       .initial_state = (void *)&models[i]};
}
