/* A backend's training backward against the reference engine's
 * (train-vs-ref.h): tests/test_train_grad.c (oneDNN) and
 * tests/test_cuda_train.c (CUDA). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "support/train-vs-ref.h"

void tv_backend_vs_ref(const char *backend, const char *xml, ntp_loss loss, bool input_grads,
                       int min_compared, const char *const *by, int n_by,
                       void (*check)(const ntp_train_result *r))
{
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = NULL;
    ntp_load_opts lo = {0};
    lo.max_memory = -1;
    if (ntp_graph_load_xml_memory(ctx, xml, strlen(xml), "case.xml", &lo, &g))
        fail_msg("load: %s", ntp_ctx_errmsg(ctx));
    ntp_trainer *t[2] = {NULL, NULL};
    double l[2];
    for (int k = 0; k < 2; k++) {
        ntp_train_opts o;
        ntp_train_opts_init(&o);
        o.loss = loss;
        o.backend = k ? backend : NULL;
        if (ntp__trainer_new_ex(ctx, g, &o, input_grads, &t[k]))
            fail_msg("trainer: %s", ntp_ctx_errmsg(ctx));
        /* The backward against the reference's on the same forward. */
        ntp__trainer_ref_forward(t[k]);
        if (ntp__trainer_pass(ctx, t[k], true, &l[k], NULL))
            fail_msg("pass: %s", ntp_ctx_errmsg(ctx));
        /* Again: what the backend kept from the first pass runs on the
         * same values (no update between). */
        if (ntp__trainer_pass(ctx, t[k], true, &l[k], NULL))
            fail_msg("second pass: %s", ntp_ctx_errmsg(ctx));
    }
    assert_true(l[0] == l[1]); /* the forward is the reference's in both */
    ntp_train_state *a = ntp__trainer_state(t[0]), *b = ntp__trainer_state(t[1]);
    int compared = 0;
    for (int ti = 0; ti < g->n_tensors; ti++) {
        if (!a->grad[ti])
            continue;
        assert_non_null(b->grad[ti]);
        int64_t n = ntp_shape_numel(&g->tensors[ti].shape);
        double most = 0.0;
        for (int64_t i = 0; i < n; i++)
            most = fmax(most, fabs(a->grad[ti][i]));
        for (int64_t i = 0; i < n; i++)
            if (!(fabs(a->grad[ti][i] - b->grad[ti][i]) <= 1e-5 * most + 1e-8))
                fail_msg("%s: %s grad[%lld]: %s %.9g, ref %.9g (largest %.3g)", g->name,
                         g->tensors[ti].name, (long long)i, backend, b->grad[ti][i], a->grad[ti][i],
                         most);
        compared += most > 1e-4;
    }
    assert_true(compared >= min_compared);
    ntp_train_result *r = NULL;
    if (ntp_trainer_run(ctx, t[1], &r))
        fail_msg("run: %s", ntp_ctx_errmsg(ctx));
    assert_string_equal(ntp_train_result_backend(r), backend);
    for (int k = 0; k < n_by; k += 2) {
        int i = 0;
        while (i < ntp_train_result_layer_count(r) &&
               strcmp(ntp_train_result_layer(r, i)->name, by[k]) != 0)
            i++;
        if (i == ntp_train_result_layer_count(r))
            fail_msg("%s: no layer '%s'", g->name, by[k]);
        const char *on = ntp_train_result_layer(r, i)->backward_by;
        assert_non_null(on);
        if (strcmp(on, by[k + 1]) != 0)
            fail_msg("%s: layer '%s' backward on %s, expected %s", g->name, by[k], on, by[k + 1]);
    }
    if (check)
        check(r);
    ntp_train_result_free(r);
    ntp_trainer_free(t[0]);
    ntp_trainer_free(t[1]);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}
