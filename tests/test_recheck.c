/* A stored calibration against the machine now (ntp_calibration_recheck,
 * docs/predict.md#recheck), with a stand-in for the runs whose times are
 * known: which samples it times again (its backend's layers of at least
 * 50 us, spread evenly in order of family and time), each row's ratio,
 * the median and its interval over the rows, the verdict at the 10%
 * tolerance, a run that fails, and the one-line refusals. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "machine/predict-impl.h"
#include "ntprof/ntprof.h"

/* Now / stored for the configuration timed k-th; fail: it does not run. */
typedef struct stand_in {
    const ntp_calibration_sample *samples;
    const ntp_recheck *out; /* its rows, to find each call's stored time */
    double factor[NTP_RECHECK_MAX];
    bool fail[NTP_RECHECK_MAX];
    int calls;
} stand_in;

static bool runner(void *user, int pass, int config, const char *xml, ntp__calibrate_timed *t)
{
    stand_in *s = user;
    assert_int_equal(pass, 0);
    assert_int_equal(config, s->calls);
    s->calls++;
    const ntp_calibration_sample *sm = &s->samples[s->out->rows[config].sample];
    /* The configuration handed over is the sample's own markup. */
    assert_non_null(strstr(sm->config, "name=\"L\""));
    assert_non_null(strstr(xml, "name=\"L\""));
    if (s->fail[config])
        return false;
    t->s = sm->median_s * s->factor[config];
    snprintf(t->ran_on, sizeof t->ran_on, "ref");
    snprintf(t->impl, sizeof t->impl, "%s", config == 1 ? "ref:other" : "ref");
    return true;
}

static ntp_calibration_sample layer(ntp_predict_family fam, const char *xml, const char *ran_on,
                                    double s)
{
    ntp_calibration_sample x;
    memset(&x, 0, sizeof x);
    snprintf(x.kind, sizeof x.kind, "layer");
    x.family = fam;
    snprintf(x.config, sizeof x.config, "%s", xml);
    snprintf(x.ran_on, sizeof x.ran_on, "%s", ran_on);
    snprintf(x.impl, sizeof x.impl, "ref");
    x.median_s = s;
    x.passes = 1;
    return x;
}

static const char FC[] =
    "<input name=\"x\" shape=\"4,64\" dtype=\"f32\"/><fc name=\"L\" units=\"32\"/>";
static const char POOL[] = "<input name=\"x\" shape=\"1,8,16,16\" dtype=\"f32\"/>"
                           "<maxpool name=\"L\" kernel=\"2\" stride=\"2\"/>";

typedef struct fixture {
    ntp_machine_info m;
    ntp_calibration cal;
    ntp_calibration_sample s[16];
    int n;
} fixture;

/* A warm ref calibration: fc samples of 1 to 6 ms and pools of 2 and 4
 * ms, beside what a recheck leaves out: a reorder row, a layer handed to
 * another backend, a layer of 20 us. */
static void setup(fixture *f)
{
    memset(f, 0, sizeof *f);
    ntp_machine_key(f->m.key, sizeof f->m.key);
    f->m.pus = 1;
    ntp_ceilings c;
    memset(&c, 0, sizeof c);
    c.threads = 1;
    c.n_peaks = 1;
    snprintf(c.peaks[0].precision, sizeof c.peaks[0].precision, "f32");
    c.peaks[0].gflops = 50;
    c.n_levels = 1;
    snprintf(c.levels[0].level, sizeof c.levels[0].level, "DRAM");
    c.levels[0].working_set_bytes = 128 << 20;
    c.levels[0].gbps = 20;
    ntp_calibration_roofline(&c, NTP_DTYPE_F32, &f->cal);
    snprintf(f->cal.backend, sizeof f->cal.backend, "ref");
    snprintf(f->cal.machine_key, sizeof f->cal.machine_key, "%s", f->m.key);
    snprintf(f->cal.cache, sizeof f->cal.cache, "warm");
    snprintf(f->cal.calibrated_at, sizeof f->cal.calibrated_at, "2026-12-03T06:00:00Z");
    f->cal.passes = 3;
    f->cal.threads = 1;
    int n = 0;
    f->s[n++] = layer(NTP_PREDICT_FAMILY_POOL, POOL, "ref", 4e-3);
    for (int i = 6; i >= 1; i--)
        f->s[n++] = layer(NTP_PREDICT_FAMILY_FC, FC, "ref", i * 1e-3);
    f->s[n] = layer(NTP_PREDICT_FAMILY_FC, FC, "ref", 9e-3);
    snprintf(f->s[n++].kind, sizeof f->s[0].kind, "reorder");
    f->s[n++] = layer(NTP_PREDICT_FAMILY_FC, FC, "onednn", 8e-3);
    f->s[n++] = layer(NTP_PREDICT_FAMILY_FC, FC, "ref", 20e-6);
    f->s[n++] = layer(NTP_PREDICT_FAMILY_POOL, POOL, "ref", 2e-3);
    f->n = n;
}

/* What every test starts from: the fixture, a context, the recheck and
 * the stand-in reading its rows (cmocka's setup, one per test). */
typedef struct world {
    fixture f;
    ntp_ctx *ctx;
    ntp_recheck r;
    stand_in si;
} world;

static int world_up(void **state)
{
    world *w = calloc(1, sizeof *w);
    if (!w || !(w->ctx = ntp_ctx_init()))
        return -1;
    setup(&w->f);
    w->si.samples = w->f.s;
    w->si.out = &w->r;
    *state = w;
    return 0;
}

static int world_down(void **state)
{
    world *w = *state;
    ntp_ctx_free(w->ctx);
    free(w);
    return 0;
}

static void test_selection_and_ratios(void **state)
{
    world *w = *state;
    fixture *f = &w->f;
    ntp_ctx *ctx = w->ctx;
    ntp_recheck *r = &w->r;
    stand_in *si = &w->si;
    for (int i = 0; i < NTP_RECHECK_MAX; i++)
        si->factor[i] = 1.5;
    /* Eight eligible (six fc, two pools), four asked: in order of family
     * (fc before pool) and time, at positions (j + 0.5) x 8 / 4 = 1, 3,
     * 5, 7: fc 2 and 4 ms, fc 6 ms, pool 4 ms. */
    ntp_recheck_opts o = {.configs = 4};
    assert_int_equal(
        ntp__calibration_recheck_with(ctx, &f->m, &f->cal, f->s, f->n, &o, runner, si, r),
        NTP_STATUS_OK);
    assert_int_equal(r->n_rows, 4);
    assert_int_equal(si->calls, 4);
    const double want[] = {2e-3, 4e-3, 6e-3, 4e-3};
    for (int j = 0; j < 4; j++) {
        assert_float_equal(r->rows[j].stored_s, want[j], 1e-15);
        assert_float_equal(r->rows[j].now_s, 1.5 * want[j], 1e-15);
        assert_float_equal(r->rows[j].ratio, 1.5, 1e-12);
        assert_int_equal(r->rows[j].family,
                         j < 3 ? NTP_PREDICT_FAMILY_FC : NTP_PREDICT_FAMILY_POOL);
    }
    assert_string_equal(r->rows[0].what, "fc units=32 on 4,64");
    assert_string_equal(r->rows[3].what, "maxpool kernel=2 stride=2 on 1,8,16,16");
    assert_string_equal(r->rows[1].now_impl, "ref:other");
    assert_int_equal(r->n_timed, 4);
    assert_float_equal(r->ratio_median, 1.5, 1e-12);
    /* Under six rows the interval of the median is min..max. */
    assert_float_equal(r->ratio_ci95_lo, 1.5, 1e-12);
    assert_int_equal(r->verdict, NTP_RECHECK_MOVED);
    assert_string_equal(r->backend, "ref");
    assert_string_equal(r->cache, "warm");
    assert_int_equal(r->passes, 3);

    /* The table says which way and what it does to a prediction: 1.5x
     * the time, predictions about 33% low (1 / 1.5 - 1); a kernel that
     * changed is marked. */
    char buf[8192];
    FILE *mf = fmemopen(buf, sizeof buf, "w");
    assert_int_equal(ntp_report_write_recheck(ctx, r, NTP_FORMAT_TABLE, mf), NTP_STATUS_OK);
    fclose(mf);
    if (!strstr(buf, "verdict: the machine runs slower now than when calibrated (1.50x the time, "
                     "95% CI 1.50..1.50):\n         predictions from this calibration read about "
                     "33% low;"))
        fail_msg("%s", buf);
    assert_non_null(strstr(buf, "1.50*\n"));
    assert_non_null(strstr(buf, "  * fc units=32 on 4,64 ran ref:other now, ref when calibrated"));

    /* All of them, by default (16 asked, 8 there): each once. */
    si->calls = 0;
    assert_int_equal(
        ntp__calibration_recheck_with(ctx, &f->m, &f->cal, f->s, f->n, NULL, runner, si, r),
        NTP_STATUS_OK);
    assert_int_equal(r->n_rows, 8);
    double sum = 0;
    for (int j = 0; j < r->n_rows; j++)
        sum += r->rows[j].stored_s;
    assert_float_equal(sum, 27e-3, 1e-12); /* 1+..+6 ms, 4 ms, 2 ms */
}

static void test_verdicts(void **state)
{
    world *w = *state;
    fixture *f = &w->f;
    ntp_ctx *ctx = w->ctx;
    ntp_recheck *r = &w->r;
    stand_in *si = &w->si;
    ntp_recheck_opts o = {.configs = 8};
    /* Within 10% either way: holds. */
    const double holds[8] = {0.95, 1.02, 1.08, 0.93, 1.0, 1.04, 0.97, 1.01};
    memcpy(si->factor, holds, sizeof holds);
    assert_int_equal(
        ntp__calibration_recheck_with(ctx, &f->m, &f->cal, f->s, f->n, &o, runner, si, r), 0);
    assert_int_equal(r->verdict, NTP_RECHECK_HOLDS);
    /* Eight rows: the 2nd and 7th order statistics cover the median with
     * 93% only (1 - 2 x 9/256), so the interval is min..max. */
    assert_float_equal(r->ratio_median, (1.0 + 1.01) / 2, 1e-12);
    assert_float_equal(r->ratio_ci95_lo, 0.93, 1e-12);
    assert_float_equal(r->ratio_ci95_hi, 1.08, 1e-12);
    /* Faster now, the interval wholly below 0.9: moved, and a prediction
     * reads high. */
    const double fast[8] = {0.6, 0.7, 0.65, 0.72, 0.68, 0.7, 0.66, 0.71};
    memcpy(si->factor, fast, sizeof fast);
    si->calls = 0;
    assert_int_equal(
        ntp__calibration_recheck_with(ctx, &f->m, &f->cal, f->s, f->n, &o, runner, si, r), 0);
    assert_int_equal(r->verdict, NTP_RECHECK_MOVED);
    assert_true(r->ratio_median < 0.9);
    /* The median outside, the interval reaching in: unclear. */
    const double mixed[8] = {1.0, 1.3, 1.0, 1.3, 1.3, 1.3, 1.05, 1.3};
    memcpy(si->factor, mixed, sizeof mixed);
    si->calls = 0;
    assert_int_equal(
        ntp__calibration_recheck_with(ctx, &f->m, &f->cal, f->s, f->n, &o, runner, si, r), 0);
    assert_float_equal(r->ratio_median, 1.3, 1e-12);
    assert_int_equal(r->verdict, NTP_RECHECK_UNCLEAR);
    /* A run that fails is a row without a ratio, not in the median. */
    si->calls = 0;
    si->fail[0] = si->fail[2] = true;
    assert_int_equal(
        ntp__calibration_recheck_with(ctx, &f->m, &f->cal, f->s, f->n, &o, runner, si, r), 0);
    assert_int_equal(r->n_rows, 8);
    assert_int_equal(r->n_timed, 6);
    assert_true(r->rows[0].now_s == 0 && r->rows[0].ratio == 0);
    assert_float_equal(r->ratio_median, 1.3, 1e-12);
    /* None runs: no verdict, and the JSON says so with nulls. */
    for (int i = 0; i < 8; i++)
        si->fail[i] = true;
    si->calls = 0;
    assert_int_equal(
        ntp__calibration_recheck_with(ctx, &f->m, &f->cal, f->s, f->n, &o, runner, si, r), 0);
    assert_int_equal(r->n_timed, 0);
    assert_int_equal(r->verdict, NTP_RECHECK_NONE);
    char buf[16384];
    FILE *mf = fmemopen(buf, sizeof buf, "w");
    assert_int_equal(ntp_report_write_recheck(ctx, r, NTP_FORMAT_JSON, mf), NTP_STATUS_OK);
    fclose(mf);
    assert_non_null(strstr(buf, "\"ratio\": null"));
    assert_non_null(strstr(buf, "\"verdict\": \"none\""));
    assert_non_null(strstr(buf, "\"now_s\": null"));
}

/* A family alone: the whole-machine figure may hide it (two rows of 16). */
static void test_families(void **state)
{
    world *w = *state;
    fixture *f = &w->f;
    ntp_recheck *r = &w->r;
    stand_in *si = &w->si;
    for (int i = 0; i < NTP_RECHECK_MAX; i++)
        si->factor[i] = 2.0;
    ntp_recheck_opts o = {.families = "pool"};
    assert_int_equal(
        ntp__calibration_recheck_with(w->ctx, &f->m, &f->cal, f->s, f->n, &o, runner, si, r),
        NTP_STATUS_OK);
    /* The two pools of 2 and 4 ms, and nothing else. */
    assert_int_equal(r->n_rows, 2);
    assert_int_equal(r->rows[0].family, NTP_PREDICT_FAMILY_POOL);
    assert_int_equal(r->rows[1].family, NTP_PREDICT_FAMILY_POOL);
    assert_float_equal(r->rows[0].stored_s, 2e-3, 1e-15);
    assert_float_equal(r->rows[1].stored_s, 4e-3, 1e-15);
    assert_float_equal(r->ratio_median, 2.0, 1e-12);
    /* A family without samples, and a name that is none. */
    o.families = "conv";
    assert_int_equal(
        ntp__calibration_recheck_with(w->ctx, &f->m, &f->cal, f->s, f->n, &o, runner, si, r),
        NTP_STATUS_UNSUPPORTED);
    assert_non_null(strstr(ntp_ctx_errmsg(w->ctx), "has no sample of conv of at least 50 us"));
    ntp_ctx_clear(w->ctx);
    o.families = "pool,convv";
    assert_int_equal(
        ntp__calibration_recheck_with(w->ctx, &f->m, &f->cal, f->s, f->n, &o, runner, si, r),
        NTP_STATUS_UNKNOWN_NAME);
    assert_string_equal(ntp_ctx_errmsg(w->ctx),
                        "recheck: unknown family 'convv' (conv, conv1x1, depthwise, fc, pool, "
                        "reduce, eltwise, norm, rnn, attention, copy, mfcc, ctc_decode)");
}

static void test_refusals(void **state)
{
    world *w = *state;
    fixture *f = &w->f;
    ntp_ctx *ctx = w->ctx;
    ntp_recheck *r = &w->r;
    stand_in *si = &w->si;
    ntp_recheck_opts o = {.configs = NTP_RECHECK_MAX + 1};
    assert_int_equal(
        ntp__calibration_recheck_with(ctx, &f->m, &f->cal, f->s, f->n, &o, runner, si, r),
        NTP_STATUS_INVALID_ARGUMENT);
    assert_string_equal(ntp_ctx_errmsg(ctx), "recheck: 65 configurations (expected 1 to 64)");
    /* Only what a recheck leaves out: refused, saying what to do. */
    ntp_ctx_clear(ctx);
    assert_int_equal(
        ntp__calibration_recheck_with(ctx, &f->m, &f->cal, f->s + 7, 3, NULL, runner, si, r),
        NTP_STATUS_UNSUPPORTED);
    assert_string_equal(ntp_ctx_errmsg(ctx),
                        "recheck: the ref f32 calibration has no sample of at least 50 us that "
                        "its backend ran (one made before samples were kept has none); run "
                        "`ntprof machine --calibrate --backend ref`");
    assert_int_equal(si->calls, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_selection_and_ratios, world_up, world_down),
        cmocka_unit_test_setup_teardown(test_verdicts, world_up, world_down),
        cmocka_unit_test_setup_teardown(test_families, world_up, world_down),
        cmocka_unit_test_setup_teardown(test_refusals, world_up, world_down),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
