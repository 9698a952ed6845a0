/* The engine's side of the backend method table (src/backend/backend.c,
 * docs/backends.md#writing-a-backend): the registry's priority order, the
 * default every ntp__be_* wrapper supplies for an empty slot, interned
 * implementation names and the one kernel-error form.
 *
 * The expected values are the documented defaults and today's order
 * (onednn, xnnpack, blas, ref, cuda), written out here rather than read
 * back from the tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend-impl.h"
#include "ntprof/ntprof.h"
#include "support/ctx.h"

/* --- a backend with only the required slots ---------------------------------- */

static int n_execute;

static bool bare_supports(const ntp_graph *g, const ntp_node *n, ntp_dtype p)
{
    (void)g;
    (void)n;
    return p == NTP_DTYPE_F32;
}

static ntp_status bare_execute(ntp_ctx *c, void *state, void *node_state, const ntp_kargs *k)
{
    (void)c;
    (void)state;
    (void)node_state;
    (void)k;
    n_execute++;
    return NTP_STATUS_OK;
}

static const ntp_backend_i bare = {
    .api_version = NTP_BACKEND_API_VERSION,
    .name = "bare",
    .description = "required slots only",
    .supports = bare_supports,
    .execute = bare_execute,
};

static void test_defaults(void **state)
{
    (void)state;
    assert_true(ntp__be_supports(&bare, NULL, NULL, NTP_DTYPE_F32));
    assert_false(ntp__be_supports(&bare, NULL, NULL, NTP_DTYPE_BF16));
    assert_int_equal(ntp__be_storage_dtype(&bare, NTP_DTYPE_BF16), NTP_DTYPE_BF16);
    assert_false(ntp__be_is_device(&bare)); /* kind left out: host */

    void *s = (void *)&s, *ns = (void *)&ns;
    ntp_backend_opts o = {.threads = 1, .precision = NTP_DTYPE_F32};
    assert_int_equal(ntp__be_init(&bare, test_ctx, &o, &s), NTP_STATUS_OK);
    assert_null(s);
    ntp_kargs k;
    memset(&k, 0, sizeof k);
    size_t ws = 123;
    assert_int_equal(ntp__be_prepare(&bare, test_ctx, NULL, &k, &ns, &ws), NTP_STATUS_OK);
    assert_null(ns);
    assert_int_equal(ws, 0);

    int main_step = 7;
    assert_int_equal(ntp__be_n_steps(&bare, NULL, NULL, &main_step), 1);
    assert_int_equal(main_step, 0);
    const char *suffix = "x", *type = "y";
    int64_t bytes = 42;
    ntp__be_step_info(&bare, NULL, NULL, 0, &suffix, &type, &bytes);
    assert_string_equal(suffix, "");
    assert_null(type);
    assert_int_equal(bytes, 42); /* unknown: left as it came */

    /* No execute_step: every sub-step is execute. */
    n_execute = 0;
    assert_int_equal(ntp__be_execute(&bare, test_ctx, NULL, NULL, &k), NTP_STATUS_OK);
    assert_int_equal(ntp__be_execute_step(&bare, test_ctx, NULL, NULL, &k, 1), NTP_STATUS_OK);
    assert_int_equal(n_execute, 2);
    ntp__be_synchronize(&bare, NULL);
    ntp__be_release_node(&bare, NULL, NULL);
    ntp__be_release(&bare, NULL);

    assert_false(ntp__be_fusable(&bare, NULL, NULL, 0, NULL));
    assert_string_equal(ntp__be_impl_name(&bare, NULL, NULL), "bare");
    assert_null(ntp__be_fuse_note(&bare, NULL, NULL));
    char why[32] = "stale";
    assert_true(ntp__be_available(&bare, why, sizeof why));
    assert_string_equal(why, "");
    assert_true(ntp__be_elapsed_ms(&bare, NULL, NULL) < 0);
    int64_t w = 1, a = 2, wsb = 3, peak = 4;
    ntp__be_device_memory(&bare, (void *)&w, &w, &a, &wsb, &peak);
    assert_true(w == 0 && a == 0 && wsb == 0 && peak == 0);
}

/* --- a device backend with every optional slot ---------------------------- */

static char impl_buf[32];
static int n_steps_run[3];

static const char *full_impl(void *state, void *node_state)
{
    (void)state;
    (void)node_state;
    return impl_buf;
}

static const char *full_note(void *state, void *node_state)
{
    (void)state;
    (void)node_state;
    return ""; /* an empty answer: nothing declined */
}

static ntp_status full_step(ntp_ctx *c, void *state, void *node_state, const ntp_kargs *k, int step)
{
    (void)c;
    (void)state;
    (void)node_state;
    (void)k;
    n_steps_run[step]++;
    return NTP_STATUS_OK;
}

static bool full_available(char *why, size_t len)
{
    snprintf(why, len, "no device here");
    return false;
}

static void full_memory(void *state, int64_t *w, int64_t *a, int64_t *ws, int64_t *peak)
{
    (void)state;
    *w = 10;
    *a = 20;
    *ws = 30;
    *peak = 60;
}

static const ntp_backend_i full = {
    .api_version = NTP_BACKEND_API_VERSION,
    .name = "full",
    .kind = NTP_BACKEND_DEVICE,
    .priority = 1,
    .supports = bare_supports,
    .execute = bare_execute,
    .impl_name = full_impl,
    .fuse_note = full_note,
    .execute_step = full_step,
    .available = full_available,
    .device_memory = full_memory,
};

static void test_slots_and_interning(void **state)
{
    (void)state;
    assert_true(ntp__be_is_device(&full));
    ntp_kargs k;
    memset(&k, 0, sizeof k);
    memset(n_steps_run, 0, sizeof n_steps_run);
    n_execute = 0;
    assert_int_equal(ntp__be_execute_step(&full, test_ctx, NULL, NULL, &k, 2), NTP_STATUS_OK);
    assert_int_equal(n_steps_run[2], 1);
    assert_int_equal(n_execute, 0);

    /* The name outlives the buffer it came from, and one name is kept once. */
    snprintf(impl_buf, sizeof impl_buf, "kernel:a");
    const char *first = ntp__be_impl_name(&full, NULL, NULL);
    assert_ptr_not_equal(first, impl_buf);
    snprintf(impl_buf, sizeof impl_buf, "kernel:b");
    assert_string_equal(first, "kernel:a");
    const char *second = ntp__be_impl_name(&full, NULL, NULL);
    assert_string_equal(second, "kernel:b");
    snprintf(impl_buf, sizeof impl_buf, "kernel:a");
    assert_ptr_equal(ntp__be_impl_name(&full, NULL, NULL), first);
    /* An empty answer is the backend's name. */
    impl_buf[0] = '\0';
    assert_string_equal(ntp__be_impl_name(&full, NULL, NULL), "full");
    assert_null(ntp__be_fuse_note(&full, NULL, NULL));

    char why[8];
    assert_false(ntp__be_available(&full, why, sizeof why));
    assert_string_equal(why, "no devi"); /* cut to the caller's buffer */
    int64_t w, a, ws, peak;
    ntp__be_device_memory(&full, NULL, &w, &a, &ws, &peak); /* no state: nothing held */
    assert_true(w == 0 && a == 0 && ws == 0 && peak == 0);
    ntp__be_device_memory(&full, (void *)&w, &w, &a, &ws, &peak);
    assert_true(w == 10 && a == 20 && ws == 30 && peak == 60);
}

/* --- the registry ---------------------------------------------------------- */

static void test_registry_order(void **state)
{
    (void)state;
    static const char *const today[] = {"onednn", "xnnpack", "blas", "ref",
                                        "torch",  "darknet", "cuda"};
    char expect[128] = "";
    size_t used = 0;
    for (size_t i = 0; i < sizeof today / sizeof today[0]; i++)
        if (ntp__backend_find(today[i]))
            used += (size_t)snprintf(expect + used, sizeof expect - used, "%s%s", used ? "," : "",
                                     today[i]);
    assert_string_equal(ntp_backends(), expect);

    char got[128] = "";
    used = 0;
    for (int i = 0; i < ntp__backend_count(); i++) {
        const ntp_backend_i *b = ntp__backend_get(i);
        used += (size_t)snprintf(got + used, sizeof got - used, "%s%s", used ? "," : "", b->name);
        if (i > 0)
            assert_true(ntp__backend_get(i - 1)->priority >= b->priority);
    }
    assert_string_equal(got, expect);
    assert_null(ntp__backend_get(ntp__backend_count()));
    assert_null(ntp__backend_get(-1));

    const ntp_backend_i *ref = ntp__backend_find("ref");
    assert_non_null(ref);
    assert_int_equal(ref->priority, NTP_BACKEND_PRIORITY_REF);
    assert_false(ntp__be_is_device(ref));
    /* cuda is the only device backend ntprof has. */
    const ntp_backend_i *cuda = ntp__backend_find("cuda");
    assert_ptr_equal(ntp__backend_device(), cuda);
    if (cuda)
        assert_true(ntp__be_is_device(cuda));
}

/* --- kernel errors ---------------------------------------------------------- */

static void test_errors(void **state)
{
    (void)state;
    const char *xml = "<topology name='t' precision='f32'>\n"
                      "<input name='x' shape='1,2'/>\n"
                      "<relu name='act'/>\n"
                      "</topology>";
    ntp_graph *g = NULL;
    if (ntp_graph_load_xml_memory(test_ctx, xml, strlen(xml), "t.xml", NULL, &g) != NTP_STATUS_OK)
        fail_msg("load: %s", ntp_ctx_errmsg(test_ctx));
    const ntp_node *n = NULL;
    for (int i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i].name, "act") == 0)
            n = &g->nodes[i];
    assert_non_null(n);

    assert_int_equal(ntp__be_error(test_ctx, "mine", g, n, NTP_STATUS_SHAPE_ERROR, "bad %d", 3),
                     NTP_STATUS_SHAPE_ERROR);
    assert_string_equal(ntp_ctx_errmsg(test_ctx), "t.xml:3: <relu name='act'>: mine: bad 3");
    /* Arguments built by hand: no graph, no source position. */
    ntp_kargs k;
    memset(&k, 0, sizeof k);
    k.node = n;
    assert_int_equal(ntp__be_kerror(test_ctx, "mine", &k, NTP_STATUS_BACKEND_ERROR, "x"),
                     NTP_STATUS_BACKEND_ERROR);
    assert_string_equal(ntp_ctx_errmsg(test_ctx), "<relu name='act'>: mine: x");
    /* The reference backend's form: no backend name. */
    ntp__be_kerror(test_ctx, NULL, &k, NTP_STATUS_BACKEND_ERROR, "y");
    assert_string_equal(ntp_ctx_errmsg(test_ctx), "<relu name='act'>: y");
    /* No layer at all (a device that failed to start). */
    ntp__be_kerror(test_ctx, "mine", NULL, NTP_STATUS_BACKEND_ERROR, "z");
    assert_string_equal(ntp_ctx_errmsg(test_ctx), "mine: z");
    ntp_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_slots_and_interning),
        cmocka_unit_test(test_registry_order),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, test_ctx_setup, test_ctx_teardown);
}
