/* libFuzzer harness for the markup reader and its expression language
 * (cmake -DNTP_FUZZ=ON with clang; tests/test_markup_fuzz.sh runs it
 * briefly in CI; seeds in fuzz/corpus/markup/, tokens in fuzz/markup.dict).
 *
 * Each input is read as a topology (parse, params, ${...} substitution,
 * repeats, layers, shape inference, memory plan) and analysed; the same
 * bytes are also evaluated as one expression and substituted as one
 * attribute value, with a few names defined, so the expression parser is
 * fuzzed on its own as well as through the markup. A memory budget keeps
 * graphs within the fuzzer's RSS limit: a graph over it must be refused.
 *
 * The reader's work limits are lowered for the fuzzer (ntp__xml_limits:
 * 50,000 elements expanded by repeats instead of 4 million, 4 MiB of
 * substituted attributes instead of 256): at the library's own limits a
 * few-hundred-byte input of nested repeats costs seconds under ASan, and
 * the corpus fills with them. The refusals are the same code at a lower
 * threshold; tests/test_malformed.c checks the real limits. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/expr-impl.h"
#include "io/io-impl.h"
#include "ntprof/ntprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ntp_ctx *ctx = ntp_ctx_init();
    if (!ctx)
        return 0;
    ntp_load_opts opts = {.max_memory = (int64_t)64 << 20};
    static const ntp__xml_limits lim = {.expanded = 50000, .subst_bytes = (int64_t)4 << 20};
    ntp_graph *g = NULL;
    if (ntp__xml_load_memory_limited(ctx, (const char *)data, size, "fuzz.xml", &opts, &lim, &g) ==
        NTP_STATUS_OK) {
        ntp_analysis *a = NULL;
        if (ntp_graph_analyze(ctx, g, &a) == NTP_STATUS_OK)
            ntp_analysis_free(a);
        ntp_graph_free(g);
    }
    /* The expression language alone. */
    static const ntp_expr_var vars[] = {
        {"n", "3", 0}, {"big", "9223372036854775807", 0}, {"text", "abc${n}", 0}, {"i", "-1", 0}};
    ntp_expr_env env = {.vars = vars, .n_vars = 4, .line = 0};
    char *s = malloc(size + 1);
    if (s) {
        memcpy(s, data, size);
        s[size] = '\0';
        int64_t v;
        char err[256];
        (void)ntp__expr_eval(s, size, &env, &v, err, sizeof err);
        char *out = NULL;
        if (ntp__expr_subst(s, &env, &out, err, sizeof err) == NTP_STATUS_OK)
            free(out);
        (void)ntp__expr_parse_int(s, &v);
        free(s);
    }
    ntp_ctx_free(ctx);
    return 0;
}
