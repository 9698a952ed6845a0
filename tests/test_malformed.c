/* The malformed-input corpus: every tests/malformed/NN-name.xml with the
 * status and the message it must produce. Messages are compared exactly,
 * except where libxml2 words the parse error (its text varies between
 * versions) or the shape functions word a shape error: there the message
 * must start with "FILE:LINE: <element name='x'>" and contain the key
 * words (the shapes involved).
 *
 * Also checked: every file in the directory has an entry (and the other way
 * round), the library prints nothing while refusing them, errors are kept
 * per context when threads load concurrently, and the caller's libxml2 error
 * handlers survive a load. */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <libxml/parser.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlversion.h>

#include "ntprof/context.h"
#include "ntprof/graph.h"

#define DIR_ NTP_SOURCE_DIR "/tests/malformed/"

enum match { EXACT, PREFIX };

typedef struct mcase {
    const char *file; /* without .xml */
    ntp_status status;
    enum match match;
    /* @PATH@ stands for the file's path. EXACT: the message equals want[0].
     * PREFIX: it starts with want[0] and contains want[1] and want[2]. */
    const char *want[3];
    /* Load options the case needs. */
    const char *set;
    int64_t batch;
    int64_t max_memory;
} mcase;

#define E(f, st, msg)                                            \
    {                                                            \
        f, NTP_STATUS_##st, EXACT, {msg, NULL, NULL}, NULL, 0, 0 \
    }
#define P(f, st, a, b, c)                                 \
    {                                                     \
        f, NTP_STATUS_##st, PREFIX, {a, b, c}, NULL, 0, 0 \
    }

static const mcase cases[] = {
    P("01-not-well-formed", PARSE_ERROR,
      "@PATH@:6: malformed XML: ", "Opening and ending tag mismatch", "relu"),
    P("02-truncated", PARSE_ERROR, "@PATH@:6: malformed XML: ", "Premature end of data", NULL),
    E("03-billion-laughs", PARSE_ERROR,
      "@PATH@:3: DTDs and entities are not accepted (found <!DOCTYPE>)"),
    E("04-xxe", PARSE_ERROR, "@PATH@:3: DTDs and entities are not accepted (found <!DOCTYPE>)"),
    E("05-external-dtd", PARSE_ERROR,
      "@PATH@:3: DTDs and entities are not accepted (found <!DOCTYPE>)"),
    P("06-undefined-entity", PARSE_ERROR, "@PATH@:3: malformed XML: ", "'undefined'",
      "not defined"),
    E("07-wrong-root", PARSE_ERROR, "@PATH@:3: the root element is <network>, expected <topology>"),
    E("08-empty-topology", GRAPH_ERROR,
      "@PATH@:3: <topology name='empty'>: the topology has no layers"),
    E("09-unknown-element", UNKNOWN_NAME, "@PATH@:5: unknown layer type 'fcc'; did you mean 'fc'?"),
    E("10-unknown-attribute", UNKNOWN_NAME,
      "@PATH@:5: unknown attribute 'unitz' on <fc>; did you mean 'units'?"),
    E("11-missing-required", PARSE_ERROR,
      "@PATH@:5: <conv name='c1'>: missing required attribute 'kernel'"),
    E("12-bad-integer", PARSE_ERROR,
      "@PATH@:5: <fc name='fc1'>: attribute 'units': expected a positive integer, got 'abc'"),
    E("13-zero-dim", PARSE_ERROR,
      "@PATH@:4: <input name='x'>: attribute 'shape': expected a positive integer, got '0'"),
    E("14-negative-dim", PARSE_ERROR,
      "@PATH@:4: <input name='x'>: attribute 'shape': expected a positive integer, got '-3'"),
    E("15-shape-overflow", OVERFLOW,
      "@PATH@:4: <input name='x'>: shape [1000000000,1000000000,1000000000] is too large: its "
      "size in bytes overflows 64 bits"),
    E("16-unknown-input", UNKNOWN_NAME,
      "@PATH@:7: <add name='sum'>: attribute 'inputs': no layer, input or alias named 'fc22'; "
      "did you mean 'fc2'?"),
    E("17-duplicate-name", GRAPH_ERROR,
      "@PATH@:7: <relu name='r1'>: duplicate name: 'r1' is already used by <relu> on line 5 "
      "(this is line 7)"),
    E("18-duplicate-input-layer", GRAPH_ERROR,
      "@PATH@:5: <relu name='x'>: duplicate name: 'x' is already used by <input> on line 4 "
      "(this is line 5)"),
    P("19-cycle", GRAPH_ERROR, "@PATH@:5: <add name='a'>: ", "cycle", NULL),
    P("20-shape-mismatch", SHAPE_ERROR, "@PATH@:6: <add name='sum'>: ", "[1,3]", "[1,4]"),
    E("21-unknown-param", UNKNOWN_NAME,
      "@PATH@:6: <fc name='fc1'>: attribute 'units': ${hiden*2}: unknown name 'hiden'; did you "
      "mean 'hidden'?"),
    E("22-division-by-zero", PARSE_ERROR,
      "@PATH@:6: <fc name='fc1'>: attribute 'units': ${hidden/(batch-1)}: division by zero"),
    {"23-set-unknown-param",
     NTP_STATUS_UNKNOWN_NAME,
     EXACT,
     {"no param 'hiden' in @PATH@; did you mean 'hidden'?", NULL, NULL},
     "hiden=3",
     0,
     0},
    E("24-marker-unknown", UNKNOWN_NAME,
      "@PATH@:7: <marker name='m'>: attribute 'from': no layer named 'conv9'; did you mean "
      "'conv1'?"),
    E("25-marker-reversed", GRAPH_ERROR,
      "@PATH@:7: <marker name='m'>: 'from' layer 'r2' runs after 'to' layer 'r1'"),
    P("26-split-not-dividing", SHAPE_ERROR, "@PATH@:5: <split name='sp'>: ", "[1,4]",
      "3 equal parts"),
    P("27-groups-not-dividing", SHAPE_ERROR, "@PATH@:5: <conv name='c1'>: ", "channels 3",
      "groups 2"),
    P("28-reshape-count", SHAPE_ERROR, "@PATH@:5: <reshape name='rs'>: ", "[1,12]", "[5,5]"),
    P("29-concat-axis", SHAPE_ERROR, "@PATH@:6: <concat name='cat'>: ", "axis 5", "rank 2"),
    {"30-memory-budget",
     NTP_STATUS_MEMORY_BUDGET,
     PREFIX,
     {"@PATH@: the topology needs 4.0 MiB", "memory budget of 1.0 MiB", NULL},
     NULL,
     0,
     1 << 20},
    E("31-too-deep", PARSE_ERROR, "@PATH@:20: <relu>: elements nest deeper than 16 levels"),
    E("32-bad-dtype", PARSE_ERROR,
      "@PATH@:4: <input name='x'>: attribute 'dtype': expected f32, bf16, f16, i8, u8, i32 or "
      "i64, got 'float64'"),
    E("33-bad-enum", PARSE_ERROR,
      "@PATH@:5: <lstm name='lstm'>: attribute 'direction': expected forward, reverse or "
      "bidirectional, got 'bidirectinal'; did you mean 'bidirectional'?"),
    E("34-repeat-negative", PARSE_ERROR,
      "@PATH@:5: <repeat>: attribute 'count': expected a non-negative integer, got '-1'"),
    E("35-too-many-layers", PARSE_ERROR,
      "@PATH@:6: <repeat>: the topology expands to more than 1000000 layers"),
    E("36-attr-too-long", PARSE_ERROR,
      "@PATH@:5: <relu>: attribute 'backend' is 65537 bytes long, more than the limit of 65536"),
    E("37-text-content", PARSE_ERROR,
      "@PATH@:5: <fc>: unexpected text 'units=8' (the markup uses attributes only)"),
    E("38-param-in-repeat", PARSE_ERROR,
      "@PATH@:6: <param> is allowed only directly inside <topology>"),
    E("39-unterminated-expr", PARSE_ERROR,
      "@PATH@:6: <fc name='fc1'>: attribute 'units': unterminated '${' in '${hidden'"),
    E("40-nested-expr", PARSE_ERROR,
      "@PATH@:6: <fc name='fc1'>: attribute 'units': ${a${a}: nested ${...} is not allowed"),
    E("41-overflow-expr", OVERFLOW,
      "@PATH@:5: <fc name='fc1'>: attribute 'units': ${9223372036854775807+1}: integer overflow "
      "in '+'"),
    E("42-split-bare-ref", GRAPH_ERROR,
      "@PATH@:6: <relu name='r'>: attribute 'inputs': 'sp' is a <split> with 2 outputs: name "
      "one, 'sp:0' ..."),
    E("43-bad-output-index", GRAPH_ERROR,
      "@PATH@:6: <relu name='r'>: attribute 'inputs': 'sp:5' does not exist: <split name='sp'> "
      "has 2 outputs"),
    E("44-first-layer-no-input", GRAPH_ERROR,
      "@PATH@:4: <relu name='r'>: no 'inputs' given and there is neither a previous layer nor "
      "an <input> to take"),
    {"45-set-malformed",
     NTP_STATUS_INVALID_ARGUMENT,
     EXACT,
     {"ntp_load_opts.set 'hidden': expected NAME=VALUE", NULL, NULL},
     "hidden",
     0,
     0},
    {"46-batch-without-param",
     NTP_STATUS_INVALID_ARGUMENT,
     EXACT,
     {"@PATH@: a batch size was given, but the topology declares no 'batch' param (add "
      "batch=\"1\" to <topology>)",
      NULL, NULL},
     NULL,
     4,
     0},
    E("47-param-used-before", UNKNOWN_NAME,
      "@PATH@:5: <fc name='fc1'>: attribute 'units': ${hidden}: param 'hidden' is used before "
      "its declaration on line 6"),
    E("48-duplicate-param", GRAPH_ERROR,
      "@PATH@:5: <param name='hidden'>: param 'hidden' is already declared on line 4 (this is "
      "line 5)"),
    E("49-repeat-index-clash", PARSE_ERROR,
      "@PATH@:6: <repeat>: attribute 'index': 'i' is already the name of a param"),
    E("50-too-many-inputs", GRAPH_ERROR, "@PATH@:6: <relu name='r'>: takes 1 input, got 2"),
    E("51-bad-float", PARSE_ERROR,
      "@PATH@:5: <relu name='r'>: attribute 'max': expected a finite number, got 'twenty'"),
    E("52-bad-bool", PARSE_ERROR,
      "@PATH@:5: <fc name='fc1'>: attribute 'bias': expected true or false, got 'yes'"),
    E("53-bad-precision", PARSE_ERROR,
      "@PATH@:3: <topology name='t'>: attribute 'precision': expected f32, bf16, f16 or i8, got "
      "'f64'; did you mean 'f32'?"),
    E("54-name-with-comma", PARSE_ERROR,
      "@PATH@:5: <relu name='a,b'>: attribute 'name': ',' is not allowed in names (commas, "
      "colons, quotes and blanks are reserved)"),
    E("55-nested-topology", PARSE_ERROR,
      "@PATH@:5: <topology> is the root element and cannot be nested"),
    E("56-child-in-layer", PARSE_ERROR,
      "@PATH@:6: <relu> cannot be inside <fc>: only <topology> and <repeat> contain elements"),
    E("57-alias-unknown", UNKNOWN_NAME,
      "@PATH@:6: <alias name='skip'>: attribute 'of': no layer, input or alias named 'relu2'; "
      "did you mean 'relu1'?"),
    E("58-marker-not-layer", GRAPH_ERROR,
      "@PATH@:6: <marker name='m'>: attribute 'from': 'x' is an <input>, not a layer"),
    E("59-missing-name", PARSE_ERROR, "@PATH@:5: <relu>: missing required attribute 'name'"),
    E("60-text-param-arith", PARSE_ERROR,
      "@PATH@:6: <fc name='fc1'>: attribute 'units': ${act*2}: 'act' is 'relu', not an integer"),
    E("61-clip-no-bounds", PARSE_ERROR,
      "@PATH@:5: <clip name='c'>: missing attribute 'min' or 'max' (at least one is required)"),
    E("62-deconv-same", PARSE_ERROR,
      "@PATH@:5: <deconv name='up'>: attribute 'pad': 'same' is not accepted on <deconv>: give "
      "explicit pads"),
    E("63-expansion-limit", PARSE_ERROR,
      "@PATH@:6: <repeat>: the topology expands to more than 4000000 elements"),
    E("64-empty-file", PARSE_ERROR, "@PATH@:1: malformed XML: the document is empty"),
    E("65-missing-topology-name", PARSE_ERROR,
      "@PATH@:3: <topology>: missing required attribute 'name'"),
    E("66-input-attr-typo", UNKNOWN_NAME,
      "@PATH@:4: unknown attribute 'shap' on <input>; did you mean 'shape'?"),
    /* Issue 14: limits applied after every expansion of ${...}, and shape
     * arithmetic that overflowed (undefined behaviour before). */
    E("67-param-doubling", PARSE_ERROR,
      "@PATH@:18: <param name='p14'>: attribute 'default': the value after substitution is more "
      "than 65536 bytes long"),
    E("68-attr-too-long-substituted", PARSE_ERROR,
      "@PATH@:5: <param name='huge'>: attribute 'default': the value after substitution is more "
      "than 65536 bytes long"),
    E("69-conv-dilation-overflow", OVERFLOW,
      "@PATH@:5: <conv name='c'>: kernel 3, stride 1, dilation 4611686018427387904 and padding "
      "0+0 on spatial dim 0 of input [1,1,5,5] overflow 64-bit sizes"),
    E("70-pad-overflow", OVERFLOW,
      "@PATH@:5: <conv name='c'>: kernel 3, stride 1, dilation 1 and padding "
      "9223372036854775807+9223372036854775807 on spatial dim 0 of input [1,1,5,5] overflow "
      "64-bit sizes"),
    E("71-params-total", PARSE_ERROR,
      "@PATH@:272: <param name='q254'>: param 'q254': the params' values add up to more than 16 "
      "MiB"),
    /* The memory budget covers parsing: a file larger than it is not read. */
    {"72-file-over-budget",
     NTP_STATUS_MEMORY_BUDGET,
     EXACT,
     {"@PATH@: the file is 8151 bytes, more than the memory budget of 4096 bytes", NULL, NULL},
     NULL,
     0,
     4096},
};

#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

/* want with every @PATH@ replaced by path. */
static void expand(const char *want, const char *path, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    while (*want && used + 1 < len) {
        if (strncmp(want, "@PATH@", 6) == 0) {
            used += (size_t)snprintf(out + used, len - used, "%s", path);
            want += 6;
        } else {
            out[used++] = *want++;
            out[used] = '\0';
        }
    }
}

static void case_path(const mcase *c, char *path, size_t len)
{
    snprintf(path, len, "%s%s.xml", DIR_, c->file);
}

static ntp_status load_case(ntp_ctx *ctx, const mcase *c, ntp_graph **g)
{
    char path[512];
    case_path(c, path, sizeof path);
    const char *set[1] = {c->set};
    ntp_load_opts o = {
        .set = set, .n_set = c->set ? 1 : 0, .batch = c->batch, .max_memory = c->max_memory};
    return ntp_graph_load(ctx, path, &o, g);
}

/* The message made again from its parts (ntp_ctx_error_part), by the rule
 * context.h gives: it must be the message, word for word. */
static void rebuild(const ntp_ctx *ctx, char *out, size_t len)
{
    const char *file = ntp_ctx_error_part(ctx, NTP_ERROR_FILE);
    const char *el = ntp_ctx_error_part(ctx, NTP_ERROR_ELEMENT);
    const char *layer = ntp_ctx_error_part(ctx, NTP_ERROR_LAYER);
    const char *opt = ntp_ctx_error_part(ctx, NTP_ERROR_OPTION);
    const char *text = ntp_ctx_error_part(ctx, NTP_ERROR_TEXT);
    int line = ntp_ctx_error_line(ctx), n = 0;
    out[0] = '\0';
    if (file && line > 0)
        n += snprintf(out + n, len - (size_t)n, "%s:%d: ", file, line);
    else if (file)
        n += snprintf(out + n, len - (size_t)n, "%s: ", file);
    if (el && layer)
        n += snprintf(out + n, len - (size_t)n, "<%s name='%s'>: ", el, layer);
    else if (el)
        n += snprintf(out + n, len - (size_t)n, "<%s>: ", el);
    else if (layer)
        n += snprintf(out + n, len - (size_t)n, "layer '%s': ", layer);
    if (opt)
        n += snprintf(out + n, len - (size_t)n, "%s%s", opt, text[0] == ':' ? "" : " ");
    snprintf(out + n, len - (size_t)n, "%s", text);
}

static void check_case(ntp_ctx *ctx, const mcase *c)
{
    char path[512], want[1024];
    case_path(c, path, sizeof path);
    ntp_graph *g = (ntp_graph *)&g; /* must come back NULL */
    ntp_ctx_clear(ctx);
    ntp_status st = load_case(ctx, c, &g);
    const char *msg = ntp_ctx_errmsg(ctx);
    expand(c->want[0], path, want, sizeof want);
    bool ok = st == c->status;
    if (c->match == EXACT) {
        ok = ok && strcmp(msg, want) == 0;
    } else {
        ok = ok && strncmp(msg, want, strlen(want)) == 0;
        for (int i = 1; i < 3; i++)
            ok = ok && (!c->want[i] || strstr(msg, c->want[i]));
    }
    if (!ok)
        print_error("%s.xml:\n  got      %s: %s\n  expected %s: %s%s%s%s%s\n", c->file,
                    ntp_status_name(st), msg, ntp_status_name(c->status), want,
                    c->match == PREFIX ? "... containing '" : "", c->want[1] ? c->want[1] : "",
                    c->want[2] ? "', '" : "", c->want[2] ? c->want[2] : "");
    assert_int_equal(st, c->status);
    assert_true(ok);
    assert_null(g);
    /* One line, always. */
    assert_null(strchr(msg, '\n'));
    assert_int_equal(ntp_ctx_status(ctx), c->status);
    /* Its parts make it, and a file named is this one. */
    char again[2048];
    rebuild(ctx, again, sizeof again);
    assert_string_equal(again, msg);
    const char *file = ntp_ctx_error_part(ctx, NTP_ERROR_FILE);
    if (file)
        assert_string_equal(file, path);
}

/* A markup error's parts: file, line, element, layer and what is wrong; an
 * option's: its API name, what it expects and the rest. Cleared with the
 * error. */
static void test_parts(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    assert_string_equal(ntp_ctx_error_part(ctx, NTP_ERROR_TEXT), "");
    assert_null(ntp_ctx_error_part(ctx, NTP_ERROR_FILE));
    assert_int_equal(ntp_ctx_error_line(ctx), 0);
    ntp_graph *g = NULL;
    char path[512];
    snprintf(path, sizeof path, "%s12-bad-integer.xml", DIR_);
    assert_int_equal(ntp_graph_load(ctx, path, NULL, &g), NTP_STATUS_PARSE_ERROR);
    assert_string_equal(ntp_ctx_error_part(ctx, NTP_ERROR_FILE), path);
    assert_int_equal(ntp_ctx_error_line(ctx), 5);
    assert_string_equal(ntp_ctx_error_part(ctx, NTP_ERROR_ELEMENT), "fc");
    assert_string_equal(ntp_ctx_error_part(ctx, NTP_ERROR_LAYER), "fc1");
    assert_null(ntp_ctx_error_part(ctx, NTP_ERROR_OPTION));
    assert_string_equal(ntp_ctx_error_part(ctx, NTP_ERROR_TEXT),
                        "attribute 'units': expected a positive integer, got 'abc'");
    /* ntp_load_opts.set without '=': the option, what it expects. */
    snprintf(path, sizeof path, "%s/models/tiny-mlp.xml", NTP_SOURCE_DIR);
    const char *set[] = {"hidden"};
    ntp_load_opts o = {.set = set, .n_set = 1};
    assert_int_equal(ntp_graph_load(ctx, path, &o, &g), NTP_STATUS_INVALID_ARGUMENT);
    assert_string_equal(ntp_ctx_errmsg(ctx), "ntp_load_opts.set 'hidden': expected NAME=VALUE");
    assert_null(ntp_ctx_error_part(ctx, NTP_ERROR_FILE));
    assert_int_equal(ntp_ctx_error_line(ctx), 0);
    assert_string_equal(ntp_ctx_error_part(ctx, NTP_ERROR_OPTION), "ntp_load_opts.set");
    assert_string_equal(ntp_ctx_error_part(ctx, NTP_ERROR_EXPECTED), "NAME=VALUE");
    assert_string_equal(ntp_ctx_error_part(ctx, NTP_ERROR_TEXT), "'hidden': expected NAME=VALUE");
    assert_null(g);
    ntp_ctx_clear(ctx);
    assert_null(ntp_ctx_error_part(ctx, NTP_ERROR_OPTION));
    assert_null(ntp_ctx_error_part(ctx, NTP_ERROR_EXPECTED));
    assert_string_equal(ntp_ctx_error_part(ctx, NTP_ERROR_TEXT), "");
    assert_null(ntp_ctx_error_part(ctx, (ntp_error_part)99));
    ntp_ctx_free(ctx);
}

static void test_corpus(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    for (int i = 0; i < N_CASES; i++)
        check_case(ctx, &cases[i]);
    ntp_ctx_free(ctx);
}

/* The table and the directory agree, and the corpus is not trivially
 * small: a file without an expectation would be a silent hole. */
static void test_corpus_complete(void **state)
{
    (void)state;
    DIR *d = opendir(DIR_);
    assert_non_null(d);
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".xml") != 0)
            continue;
        files++;
        bool listed = false;
        for (int i = 0; i < N_CASES && !listed; i++)
            listed =
                strlen(cases[i].file) == n - 4 && strncmp(cases[i].file, e->d_name, n - 4) == 0;
        if (!listed)
            print_error("tests/malformed/%s has no entry in the table\n", e->d_name);
        assert_true(listed);
    }
    closedir(d);
    assert_int_equal(files, N_CASES);
    assert_true(N_CASES >= 40);
}

/* The library never prints: nothing reaches stdout or stderr while the
 * whole corpus is refused (libxml2 included). */
static void test_quiet(void **state)
{
    (void)state;
    char out_path[] = "/tmp/ntp-quiet-XXXXXX";
    int fd = mkstemp(out_path);
    assert_true(fd >= 0);
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    dup2(fd, 1);
    dup2(fd, 2);
    ntp_ctx *ctx = ntp_ctx_init();
    int failures = 0;
    for (int i = 0; i < N_CASES; i++) {
        ntp_graph *g = NULL;
        failures += load_case(ctx, &cases[i], &g) != NTP_STATUS_OK;
        ntp_graph_free(g);
    }
    ntp_ctx_free(ctx);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    struct stat sb;
    assert_int_equal(fstat(fd, &sb), 0);
    close(fd);
    unlink(out_path);
    assert_int_equal(failures, N_CASES);
    if (sb.st_size != 0)
        print_error("the library wrote %lld bytes while loading the corpus\n",
                    (long long)sb.st_size);
    assert_int_equal(sb.st_size, 0);
}

/* libxml2's error state is per parser context: threads loading bad
 * documents at once each get their own message. */
typedef struct job {
    const char *xml, *want;
    int failures;
} job;

static void *load_many(void *arg)
{
    job *j = arg;
    ntp_ctx *ctx = ntp_ctx_init();
    for (int i = 0; i < 200 && ctx; i++) {
        ntp_graph *g = NULL;
        ntp_status st = ntp_graph_load_xml_memory(ctx, j->xml, strlen(j->xml), "t.xml", NULL, &g);
        if (st == NTP_STATUS_OK || strcmp(ntp_ctx_errmsg(ctx), j->want) != 0)
            j->failures++;
        ntp_graph_free(g);
    }
    ntp_ctx_free(ctx);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    job jobs[4] = {
        {"<topology name='a'>\n<relu name='r'>\n</topology>\n",
         "t.xml:3: malformed XML: Opening and ending tag mismatch: relu line 2 and topology", 0},
        {"<!DOCTYPE t [<!ENTITY e 'x'>]>\n<topology name='b'/>\n",
         "t.xml:1: DTDs and entities are not accepted (found <!DOCTYPE>)", 0},
        {"<topology name='c'>\n<input name='x' shape='2'/>\n<fc name='f' unitz='2'/>\n</topology>",
         "t.xml:3: unknown attribute 'unitz' on <fc>; did you mean 'units'?", 0},
        {"<topology name='d'>\n<input name='x' shape='${1/0}' dtype='f32'/>\n</topology>",
         "t.xml:2: <input name='x'>: attribute 'shape': ${1/0}: division by zero", 0},
    };
    /* Each job's message first, single-threaded, so a wording change shows
     * up as itself rather than as a thread failure. */
    for (int i = 0; i < 4; i++) {
        ntp_ctx *ctx = ntp_ctx_init();
        ntp_graph *g = NULL;
        ntp_graph_load_xml_memory(ctx, jobs[i].xml, strlen(jobs[i].xml), "t.xml", NULL, &g);
        assert_string_equal(ntp_ctx_errmsg(ctx), jobs[i].want);
        ntp_ctx_free(ctx);
    }
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, load_many, &jobs[i]), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 4; i++)
        assert_int_equal(jobs[i].failures, 0);
}

/* A program that uses libxml2 itself keeps its error handlers. */
static int handler_calls;

#if LIBXML_VERSION >= 21200
static void my_structured(void *user, const xmlError *e)
#else
static void my_structured(void *user, xmlErrorPtr e)
#endif
{
    (void)user;
    (void)e;
    handler_calls++;
}

static void my_generic(void *user, const char *fmt, ...)
{
    (void)user;
    (void)fmt;
    handler_calls++;
}

static void test_caller_handlers_kept(void **state)
{
    (void)state;
    xmlSetStructuredErrorFunc(&handler_calls, my_structured);
    xmlSetGenericErrorFunc(&handler_calls, my_generic);
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = NULL;
    const char *bad = "<topology name='a'><relu></topology>";
    assert_int_equal(ntp_graph_load_xml_memory(ctx, bad, strlen(bad), "t.xml", NULL, &g),
                     NTP_STATUS_PARSE_ERROR);
    ntp_ctx_free(ctx);
    /* Ours were not called for the document we refused... */
    assert_int_equal(handler_calls, 0);
    /* ...and are still installed afterwards. */
    assert_ptr_equal(xmlStructuredError, my_structured);
    assert_ptr_equal(xmlStructuredErrorContext, &handler_calls);
    assert_ptr_equal(xmlGenericError, my_generic);
    assert_ptr_equal(xmlGenericErrorContext, &handler_calls);
    xmlSetStructuredErrorFunc(NULL, NULL);
    xmlSetGenericErrorFunc(NULL, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_corpus_complete),
        cmocka_unit_test(test_quiet),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_caller_handlers_kept),
        cmocka_unit_test(test_parts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
