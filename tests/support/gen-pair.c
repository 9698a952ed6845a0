/* A decoder generated on ref and on another backend, compared (gen-pair.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "gen-pair.h"
#include "npy.h"

void test_gen_pair_run(test_gen_pair *p, const char *backend, const char *model, int64_t batch,
                       int64_t pad, int64_t context, int64_t prompt_len, int64_t gen_len,
                       ntp_dtype kv)
{
    *p = (test_gen_pair){.ctx = ntp_ctx_init(), .batch = batch, .gen_len = gen_len};
    assert_non_null(p->ctx);
    const char *backends[2] = {"ref", backend};
    for (int i = 0; i < 2; i++) {
        snprintf(p->dirs[i], sizeof p->dirs[i], "/tmp/ntp-gen-pair-XXXXXX");
        assert_non_null(mkdtemp(p->dirs[i]));
        ntp_generate_opts o;
        ntp_generate_opts_default(&o);
        o.backend = backends[i];
        o.threads = 2;
        o.batch = batch;
        o.pad = pad;
        o.context_depth = context;
        o.prompt_len = prompt_len;
        o.gen_len = gen_len;
        o.kv_dtype = kv;
        o.save_dir = p->dirs[i];
        ntp_status st = ntp_generate(p->ctx, model, &o, &p->r[i]);
        if (st)
            print_message("%s: %s\n", backends[i], ntp_ctx_errmsg(p->ctx));
        assert_int_equal(st, NTP_STATUS_OK);
    }
}

double test_gen_pair_check(const test_gen_pair *p, const char *label, double tol)
{
    double e = test_npy_rel_err(p->dirs[1], p->dirs[0], "logits_prefill");
    print_message("%s: prefill logits vs ref %.3g\n", label, e);
    assert_true(e <= tol);
    assert_memory_equal(ntp_generate_result_tokens(p->r[0]), ntp_generate_result_tokens(p->r[1]),
                        (size_t)(p->batch * (p->gen_len + 1)) *
                            sizeof *ntp_generate_result_tokens(p->r[0]));
    double worst = e, worst_step = 0;
    for (int64_t i = 0; i < p->gen_len; i++) {
        char name[64];
        snprintf(name, sizeof name, "logits_decode_%lld", (long long)i);
        e = test_npy_rel_err(p->dirs[1], p->dirs[0], name);
        worst_step = e > worst_step ? e : worst_step;
        assert_true(e <= tol);
    }
    print_message("%s: decode logits vs ref, worst of %lld steps %.3g\n", label,
                  (long long)p->gen_len, worst_step);
    return worst > worst_step ? worst : worst_step;
}

void test_gen_pair_free(test_gen_pair *p)
{
    for (int i = 0; i < 2; i++) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", p->dirs[i]);
        assert_int_equal(system(cmd), 0);
        ntp_generate_result_free(p->r[i]);
    }
    ntp_ctx_free(p->ctx);
}
