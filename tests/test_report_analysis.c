/* The analysis report in its three formats. The analysis is written by hand
 * with known numbers (one count above 2^53, to prove integers stay exact),
 * on a graph built through the private builder; names with commas, quotes
 * and more characters than a table column exercise the quoting and the
 * ellipsis. JSON is parsed back and validated against
 * schema/analysis.schema.json with python3-jsonschema. A small topology is
 * also loaded from markup and its report checked against hand counts. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/ctx-impl.h"
#include "graph/graph-impl.h"
#include "ntprof/ntprof.h"

#define LONG_NAME "conv1_with_a_very_long_layer_name_that_needs_cutting"
#define QUOTED_NAME "fc \"big\""
#define COMMA_NAME "relu,1"
/* 2^53 + 1: the first integer a double cannot hold. */
#define HUGE_MACS INT64_C(9007199254740993)

typedef struct fixture {
    ntp_ctx *ctx;
    ntp_graph *g;
    ntp_analysis a;
    ntp_layer_cost layers[3];
} fixture;

static ntp_shape shape4(int64_t a, int64_t b, int64_t c, int64_t d)
{
    ntp_shape s = {4, {a, b, c, d}};
    return s;
}

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    if (!fx)
        return -1;
    fx->ctx = ntp_ctx_init();
    fx->g = ntp__graph_new("tiny-report", "models/tiny,report.xml");
    if (!fx->ctx || !fx->g)
        return -1;
    ntp_graph *g = fx->g;
    const char *names[3] = {LONG_NAME, COMMA_NAME, QUOTED_NAME};
    const ntp_op ops[3] = {NTP_OP_CONV, NTP_OP_RELU, NTP_OP_FC};
    for (int i = 0; i < 3; i++)
        if (ntp__graph_add_node(g, names[i], ops[i], i + 1) != i)
            return -1;
    g->order = malloc(3 * sizeof *g->order);
    g->position = malloc(3 * sizeof *g->position);
    g->markers = calloc(1, sizeof *g->markers);
    g->params = calloc(2, sizeof *g->params);
    if (!g->order || !g->position || !g->markers || !g->params)
        return -1;
    for (int i = 0; i < 3; i++)
        g->order[i] = g->position[i] = i;
    g->markers[0].name = ntp__strdup("body");
    g->markers[0].first = 0;
    g->markers[0].last = 1;
    g->n_markers = 1;
    g->params[0].name = ntp__strdup("batch");
    g->params[0].value = ntp__strdup("1");
    g->params[1].name = ntp__strdup("hidden");
    g->params[1].value = ntp__strdup("1,000");
    g->n_params = 2;

    ntp_layer_cost *l = fx->layers;
    l[0] = (ntp_layer_cost){.name = LONG_NAME,
                            .type = "conv",
                            .output_shape = shape4(1, 64, 112, 112),
                            .params = 9408,
                            .macs = 118013952,
                            .flops = 236027904,
                            .weight_bytes = 37632,
                            .input_bytes = 602112,
                            .output_bytes = 3211264,
                            .traffic_bytes = 3851008};
    l[1] = (ntp_layer_cost){.name = COMMA_NAME,
                            .type = "relu",
                            .output_shape = shape4(1, 64, 112, 112),
                            .flops = 802816,
                            .input_bytes = 3211264,
                            .output_bytes = 3211264,
                            .traffic_bytes = 6422528,
                            .intensity = 0.125};
    l[2] = (ntp_layer_cost){.name = QUOTED_NAME,
                            .type = "fc",
                            .inlay = true,
                            .output_shape = {2, {1, 1000}},
                            .params = 2049000,
                            .macs = HUGE_MACS,
                            .flops = 2 * HUGE_MACS,
                            .weight_bytes = 8196000,
                            .input_bytes = 8192,
                            .output_bytes = 4000,
                            .traffic_bytes = 8208192};
    l[0].intensity = 236027904.0 / 3851008.0;
    l[2].intensity = 2.0 * (double)HUGE_MACS / 8208192.0;
    fx->a = (ntp_analysis){.precision = NTP_DTYPE_F32,
                           .n_layers = 3,
                           .layers = l,
                           .params = 2058408,
                           .macs = HUGE_MACS + 118013952,
                           .flops = 2 * HUGE_MACS + 236027904 + 802816,
                           .weight_bytes = 8233632,
                           .input_bytes = 602112,
                           .activation_bytes = 6426528,
                           .peak_activation_bytes = 6422528,
                           .traffic_bytes = 18481728};
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    ntp_graph_free(fx->g);
    ntp_ctx_free(fx->ctx);
    free(fx);
    return 0;
}

/* The whole of a stream written by the report, NUL-terminated. */
static char *write_report(fixture *fx, ntp_format fmt)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    ntp_status st = ntp_report_write_analysis(fx->ctx, fx->g, &fx->a, fmt, f);
    if (st != NTP_STATUS_OK)
        fail_msg("write: %s: %s", ntp_status_name(st), ntp_ctx_errmsg(fx->ctx));
    long n = ftell(f);
    assert_true(n > 0);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    rewind(f);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Display columns: one per UTF-8 code point (counted here independently of
 * the library's helper). */
static size_t columns(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

/* Validate a JSON text against a schema under schema/ with python3-jsonschema.
 * Returns the exit status: 0 valid, 1 invalid; anything else (no
 * jsonschema module, no python) fails the test. */
static int validate(const char *json, const char *schema)
{
    char path[] = "/tmp/ntp-test-report-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(json, f);
    fclose(f);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c '\n"
             "import json, sys\n"
             "import jsonschema\n"
             "schema = json.load(open(sys.argv[1]))\n"
             "cls = jsonschema.validators.validator_for(schema)\n"
             "cls.check_schema(schema)\n"
             "errors = list(cls(schema).iter_errors(json.load(open(sys.argv[2]))))\n"
             "for e in errors: print(\"schema:\", list(e.absolute_path), e.message[:200])\n"
             "sys.exit(1 if errors else 0)\n"
             "' '%s/schema/%s' '%s'",
             NTP_SOURCE_DIR, schema, path);
    int rc = system(cmd);
    unlink(path);
    assert_true(rc != -1 && WIFEXITED(rc));
    int code = WEXITSTATUS(rc);
    if (code != 0 && code != 1)
        fail_msg("python3 jsonschema validation could not run (exit %d): is python3-jsonschema "
                 "installed?",
                 code);
    return code;
}

static void test_json(void **state)
{
    fixture *fx = *state;
    char *text = write_report(fx, NTP_FORMAT_JSON);
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    if (!root)
        fail_msg("invalid JSON at line %d: %s", err.line, err.text);

    assert_int_equal(json_integer_value(json_object_get(root, "schema_version")), 1);
    assert_string_equal(json_string_value(json_object_get(root, "kind")), "analysis");
    assert_string_equal(json_string_value(json_object_get(root, "topology")), "tiny-report");
    assert_string_equal(json_string_value(json_object_get(root, "source")),
                        "models/tiny,report.xml");
    assert_string_equal(json_string_value(json_object_get(root, "precision")), "f32");
    json_t *params = json_object_get(root, "params");
    assert_int_equal(json_object_size(params), 2);
    assert_string_equal(json_string_value(json_object_get(params, "batch")), "1");
    assert_string_equal(json_string_value(json_object_get(params, "hidden")), "1,000");

    json_t *t = json_object_get(root, "totals");
    assert_int_equal(json_integer_value(json_object_get(t, "params")), 2058408);
    assert_int_equal(json_integer_value(json_object_get(t, "macs")), HUGE_MACS + 118013952);
    assert_int_equal(json_integer_value(json_object_get(t, "flops")),
                     2 * HUGE_MACS + 236027904 + 802816);
    assert_int_equal(json_integer_value(json_object_get(t, "weight_bytes")), 8233632);
    assert_int_equal(json_integer_value(json_object_get(t, "input_bytes")), 602112);
    assert_int_equal(json_integer_value(json_object_get(t, "activation_bytes")), 6426528);
    assert_int_equal(json_integer_value(json_object_get(t, "peak_activation_bytes")), 6422528);
    assert_int_equal(json_integer_value(json_object_get(t, "traffic_bytes")), 18481728);

    json_t *layers = json_object_get(root, "layers");
    assert_int_equal(json_array_size(layers), 3);
    json_t *l0 = json_array_get(layers, 0), *l2 = json_array_get(layers, 2);
    assert_string_equal(json_string_value(json_object_get(l0, "name")), LONG_NAME);
    assert_string_equal(json_string_value(json_object_get(l0, "type")), "conv");
    assert_true(json_is_false(json_object_get(l0, "inlay")));
    json_t *shape = json_object_get(l0, "output_shape");
    assert_int_equal(json_array_size(shape), 4);
    const int64_t dims[4] = {1, 64, 112, 112};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(json_integer_value(json_array_get(shape, i)), dims[i]);
    assert_int_equal(json_integer_value(json_object_get(l0, "params")), 9408);
    assert_int_equal(json_integer_value(json_object_get(l0, "macs")), 118013952);
    assert_int_equal(json_integer_value(json_object_get(l0, "flops")), 236027904);
    assert_int_equal(json_integer_value(json_object_get(l0, "weight_bytes")), 37632);
    assert_int_equal(json_integer_value(json_object_get(l0, "input_bytes")), 602112);
    assert_int_equal(json_integer_value(json_object_get(l0, "output_bytes")), 3211264);
    assert_int_equal(json_integer_value(json_object_get(l0, "traffic_bytes")), 3851008);
    assert_float_equal(json_real_value(json_object_get(l0, "intensity")), 61.28990228013029, 1e-12);
    assert_string_equal(json_string_value(json_object_get(l2, "name")), QUOTED_NAME);
    assert_true(json_is_true(json_object_get(l2, "inlay")));
    /* Exact beyond 2^53: the value is a JSON integer, not a double. */
    assert_true(json_is_integer(json_object_get(l2, "macs")));
    assert_int_equal(json_integer_value(json_object_get(l2, "macs")), HUGE_MACS);
    assert_non_null(strstr(text, "\"macs\": 9007199254740993"));
    assert_float_equal(json_real_value(json_object_get(json_array_get(layers, 1), "intensity")),
                       0.125, 0.0);

    json_t *markers = json_object_get(root, "markers");
    assert_int_equal(json_array_size(markers), 1);
    json_t *m = json_array_get(markers, 0);
    assert_string_equal(json_string_value(json_object_get(m, "name")), "body");
    assert_int_equal(json_integer_value(json_object_get(m, "first")), 0);
    assert_int_equal(json_integer_value(json_object_get(m, "last")), 1);
    assert_string_equal(json_string_value(json_object_get(m, "from")), LONG_NAME);
    assert_string_equal(json_string_value(json_object_get(m, "to")), COMMA_NAME);

    /* Keys come out in the documented order. */
    const char *order[] = {"schema_version", "kind",   "topology", "source", "precision",
                           "params",         "totals", "layers",   "markers"};
    const char *prev = text;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "\"%s\":", order[i]);
        const char *at = strstr(prev, key);
        if (!at)
            fail_msg("key %s missing or out of order", order[i]);
        prev = at;
    }

    assert_int_equal(validate(text, "analysis.schema.json"), 0);
    /* The schema is not vacuous: a report without totals, or with a float
     * where a count belongs, is refused. */
    json_t *bad = json_deep_copy(root);
    json_object_del(bad, "totals");
    char *bad_text = json_dumps(bad, 0);
    assert_int_equal(validate(bad_text, "analysis.schema.json"), 1);
    free(bad_text);
    json_decref(bad);
    bad = json_deep_copy(root);
    json_object_set_new(json_array_get(json_object_get(bad, "layers"), 0), "macs", json_real(1.5));
    bad_text = json_dumps(bad, 0);
    assert_int_equal(validate(bad_text, "analysis.schema.json"), 1);
    free(bad_text);
    json_decref(bad);

    json_decref(root);
    free(text);
}

/* Split one CSV record (RFC 4180) into fields; returns the count. */
static int csv_split(const char *line, char fields[][128], int max)
{
    int n = 0;
    const char *p = line;
    for (;;) {
        assert_true(n < max);
        size_t k = 0;
        if (*p == '"') {
            p++;
            for (;;) {
                assert_true(*p != '\0');
                if (*p == '"' && p[1] == '"') {
                    fields[n][k++] = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    fields[n][k++] = *p++;
                }
            }
        } else {
            while (*p && *p != ',' && *p != '\n')
                fields[n][k++] = *p++;
        }
        fields[n++][k] = '\0';
        if (*p != ',')
            break;
        p++;
    }
    return n;
}

static void test_csv(void **state)
{
    fixture *fx = *state;
    char *text = write_report(fx, NTP_FORMAT_CSV);
    char *lines[8] = {0};
    int n = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && n < 8;
         l = strtok_r(NULL, "\n", &save))
        lines[n++] = l;
    assert_int_equal(n, 4);
    assert_string_equal(lines[0], "name,type,inlay,output_shape,params,macs,flops,weight_bytes,"
                                  "input_bytes,output_bytes,traffic_bytes,intensity");
    assert_string_equal(lines[1], LONG_NAME ",conv,false,1x64x112x112,9408,118013952,236027904,"
                                            "37632,602112,3211264,3851008,61.28990228");
    assert_string_equal(lines[2], "\"relu,1\",relu,false,1x64x112x112,0,0,802816,0,3211264,"
                                  "3211264,6422528,0.125");
    assert_string_equal(lines[3], "\"fc \"\"big\"\"\",fc,true,1x1000,2049000,9007199254740993,"
                                  "18014398509481986,8196000,8192,4000,8208192,2194685323");
    char fields[16][128];
    for (int i = 1; i < n; i++)
        assert_int_equal(csv_split(lines[i], fields, 16), 12);
    csv_split(lines[3], fields, 16);
    assert_string_equal(fields[0], QUOTED_NAME);
    csv_split(lines[2], fields, 16);
    assert_string_equal(fields[0], COMMA_NAME);
    free(text);
}

static void test_table(void **state)
{
    fixture *fx = *state;
    char *text = write_report(fx, NTP_FORMAT_TABLE);
    fputs(text, stdout); /* print_message() cuts long messages */
    int n_lines = 0;
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        size_t cols = columns(p, len);
        if (cols > 100)
            fail_msg("line %d has %zu columns: %.*s", n_lines + 1, cols, (int)len, p);
        n_lines++;
        p += len + (p[len] == '\n');
    }
    assert_true(n_lines >= 8);
    /* In its table row the long name is cut with an ellipsis. */
    assert_null(strstr(text, "\n" LONG_NAME));
    assert_non_null(strstr(text, "\nconv1_with_a_very_long_\xE2\x80\xA6 conv "));
    /* Big counts in human units; the huge MAC count is 9.01P. */
    assert_non_null(strstr(text, "9.41K"));
    assert_non_null(strstr(text, "118M"));
    assert_non_null(strstr(text, "9.01P"));
    assert_non_null(strstr(text, "1x64x112x112"));
    assert_non_null(strstr(text, "\ntotal: 2.06M params, 9.01P MACs, 18.0P FLOPs, weights 8.23 MB, "
                                 "peak activations 6.42 MB\n"));
    /* Right-aligned number columns under their headers. */
    assert_non_null(strstr(text, "   params    MACs weight MB   act MB  FLOP/B\n"));
    assert_non_null(strstr(text, "   9.41K    118M     0.038    3.211   61.29\n"));
    assert_non_null(strstr(text, "marker body: layers 0..1"));
    assert_non_null(strstr(text, "params batch=1 hidden=1,000"));
    free(text);
}

/* End to end: markup -> reader -> shapes -> analysis -> JSON, checked against
 * counts worked out by hand from docs/ops.md for x[1,784] -> fc 128 -> relu
 * -> fc 10 -> softmax at f32:
 *   fc1:  params 784*128 + 128 = 100480, MACs 100352, FLOPs 2*100352 + 128
 *         (bias) = 200832, weights 401920 B, in 3136 B, out 512 B
 *   relu: FLOPs 128, in 512, out 512
 *   fc2:  params 128*10 + 10 = 1290, MACs 1280, FLOPs 2570, weights 5160 B,
 *         in 512, out 40
 *   softmax: FLOPs 5*10 = 50, in 40, out 40
 * Peak activations: while relu runs, the input (3136 B, live throughout),
 * fc1's output and relu's output (512 B each) must all exist: 4160 B, and
 * no other step needs more (sizes are multiples of the 64-byte alignment
 * except the 40-byte tensors, which take 64). */
static const char mlp_xml[] = "<topology name=\"mlp\" precision=\"f32\">\n"
                              "  <param name=\"hidden\" default=\"128\"/>\n"
                              "  <input name=\"x\" shape=\"1,784\" dtype=\"f32\"/>\n"
                              "  <fc name=\"fc1\" units=\"${hidden}\"/>\n"
                              "  <relu name=\"r1\"/>\n"
                              "  <fc name=\"fc2\" units=\"10\"/>\n"
                              "  <softmax name=\"probs\"/>\n"
                              "  <marker name=\"body\" from=\"fc1\" to=\"fc2\"/>\n"
                              "</topology>\n";

static void test_loaded_topology(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = NULL;
    ntp_analysis *a = NULL;
    if (ntp_graph_load_xml_memory(ctx, mlp_xml, strlen(mlp_xml), "mlp.xml", NULL, &g) !=
        NTP_STATUS_OK)
        fail_msg("load: %s", ntp_ctx_errmsg(ctx));
    assert_int_equal(ntp_graph_analyze(ctx, g, &a), NTP_STATUS_OK);
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(ntp_report_write_analysis(ctx, g, a, NTP_FORMAT_JSON, f), NTP_STATUS_OK);
    rewind(f);
    json_error_t err;
    json_t *root = json_loadf(f, 0, &err);
    fclose(f);
    if (!root)
        fail_msg("invalid JSON at line %d: %s", err.line, err.text);
    assert_string_equal(json_string_value(json_object_get(root, "topology")), "mlp");
    assert_string_equal(json_string_value(json_object_get(root, "source")), "mlp.xml");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(root, "params"), "hidden")), "128");
    json_t *t = json_object_get(root, "totals");
    assert_int_equal(json_integer_value(json_object_get(t, "params")), 101770);
    assert_int_equal(json_integer_value(json_object_get(t, "macs")), 101632);
    assert_int_equal(json_integer_value(json_object_get(t, "flops")), 203580);
    assert_int_equal(json_integer_value(json_object_get(t, "weight_bytes")), 407080);
    assert_int_equal(json_integer_value(json_object_get(t, "input_bytes")), 3136);
    assert_int_equal(json_integer_value(json_object_get(t, "activation_bytes")), 1104);
    assert_int_equal(json_integer_value(json_object_get(t, "peak_activation_bytes")), 4160);
    assert_int_equal(json_integer_value(json_object_get(t, "traffic_bytes")), 412384);

    static const struct {
        const char *name, *type;
        int64_t params, macs, flops, wbytes, in, out;
    } want[] = {
        {"fc1", "fc", 100480, 100352, 200832, 401920, 3136, 512},
        {"r1", "relu", 0, 0, 128, 0, 512, 512},
        {"fc2", "fc", 1290, 1280, 2570, 5160, 512, 40},
        {"probs", "softmax", 0, 0, 50, 0, 40, 40},
    };
    json_t *layers = json_object_get(root, "layers");
    assert_int_equal(json_array_size(layers), 4);
    for (size_t i = 0; i < 4; i++) {
        json_t *l = json_array_get(layers, i);
        assert_string_equal(json_string_value(json_object_get(l, "name")), want[i].name);
        assert_string_equal(json_string_value(json_object_get(l, "type")), want[i].type);
        assert_int_equal(json_integer_value(json_object_get(l, "params")), want[i].params);
        assert_int_equal(json_integer_value(json_object_get(l, "macs")), want[i].macs);
        assert_int_equal(json_integer_value(json_object_get(l, "flops")), want[i].flops);
        assert_int_equal(json_integer_value(json_object_get(l, "weight_bytes")), want[i].wbytes);
        assert_int_equal(json_integer_value(json_object_get(l, "input_bytes")), want[i].in);
        assert_int_equal(json_integer_value(json_object_get(l, "output_bytes")), want[i].out);
        int64_t traffic = want[i].wbytes + want[i].in + want[i].out;
        assert_int_equal(json_integer_value(json_object_get(l, "traffic_bytes")), traffic);
        assert_float_equal(json_number_value(json_object_get(l, "intensity")),
                           (double)want[i].flops / (double)traffic, 1e-12);
    }
    json_t *m = json_array_get(json_object_get(root, "markers"), 0);
    assert_string_equal(json_string_value(json_object_get(m, "name")), "body");
    assert_int_equal(json_integer_value(json_object_get(m, "first")), 0);
    assert_int_equal(json_integer_value(json_object_get(m, "last")), 2);
    assert_string_equal(json_string_value(json_object_get(m, "from")), "fc1");
    assert_string_equal(json_string_value(json_object_get(m, "to")), "fc2");
    char *text = json_dumps(root, 0);
    assert_int_equal(validate(text, "analysis.schema.json"), 0);
    free(text);
    json_decref(root);
    ntp_analysis_free(a);
    ntp_graph_free(g);
    ntp_ctx_free(ctx);
}

static void test_bad_arguments(void **state)
{
    fixture *fx = *state;
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(ntp_report_write_analysis(fx->ctx, fx->g, NULL, NTP_FORMAT_JSON, f),
                     NTP_STATUS_INVALID_ARGUMENT);
    assert_true(strlen(ntp_ctx_errmsg(fx->ctx)) > 0);
    assert_int_equal(ntp_report_write_analysis(fx->ctx, fx->g, &fx->a, (ntp_format)42, f),
                     NTP_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ftell(f), 0);
    fclose(f);
}

static void test_format_parse(void **state)
{
    (void)state;
    ntp_format fmt = NTP_FORMAT_CSV;
    assert_int_equal(ntp_format_parse("table", &fmt), NTP_STATUS_OK);
    assert_int_equal(fmt, NTP_FORMAT_TABLE);
    assert_int_equal(ntp_format_parse("json", &fmt), NTP_STATUS_OK);
    assert_int_equal(fmt, NTP_FORMAT_JSON);
    assert_int_equal(ntp_format_parse("CSV", &fmt), NTP_STATUS_OK);
    assert_int_equal(fmt, NTP_FORMAT_CSV);
    assert_int_equal(ntp_format_parse("xml", &fmt), NTP_STATUS_UNKNOWN_NAME);
    assert_int_equal(fmt, NTP_FORMAT_CSV); /* untouched on failure */
    assert_int_equal(ntp_format_parse(NULL, &fmt), NTP_STATUS_INVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_csv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_table, setup, teardown),
        cmocka_unit_test(test_loaded_topology),
        cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
        cmocka_unit_test(test_format_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
