/* The malformed-ONNX corpus: every tests/onnx-malformed/NN-name.onnx with
 * the status and the exact message it must produce (@PATH@ stands for the
 * file's path). The files come from tests/onnx-malformed/make-corpus.py.
 *
 * Also checked: every file in the directory has an entry (and the other way
 * round), the library prints nothing while refusing them, and loading the
 * same files from memory gives the same messages (the memory name in place
 * of the path), except for external data, which a buffer cannot reach. */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "io/onnx-impl.h"
#include "ntprof/context.h"
#include "ntprof/graph.h"
#include "ntprof/onnx.h"

#define DIR_ NTP_SOURCE_DIR "/tests/onnx-malformed/"

typedef struct mcase {
    const char *file; /* without .onnx */
    ntp_status status;
    const char *want;
    bool external; /* reads external data (not from memory) */
} mcase;

#define C(f, st, msg)                  \
    {                                  \
        f, NTP_STATUS_##st, msg, false \
    }
#define X(f, st, msg)                 \
    {                                 \
        f, NTP_STATUS_##st, msg, true \
    }

static const mcase cases[] = {
    C("01-empty", PARSE_ERROR, "@PATH@: the model has no graph (is it an ONNX model?)"),
    C("02-truncated", PARSE_ERROR,
      "@PATH@: not a valid ONNX model (the protobuf encoding is malformed or truncated)"),
    C("03-not-protobuf", PARSE_ERROR,
      "@PATH@: not a valid ONNX model (the protobuf encoding is malformed or truncated)"),
    C("04-tensor-file", PARSE_ERROR,
      "@PATH@: not a valid ONNX model (the protobuf encoding is malformed or truncated)"),
    C("05-no-ir-version", PARSE_ERROR,
      "@PATH@: the model has no IR version (is it an ONNX model?)"),
    C("06-negative-dim", PARSE_ERROR, "@PATH@: initializer 'w' has a negative dim (-4)"),
    C("07-overflowing-dims", OVERFLOW, "@PATH@: initializer 'w': its dims overflow 64 bits"),
    C("08-raw-data-short", PARSE_ERROR,
      "@PATH@: initializer 'w' holds 8 bytes of raw data; its shape [4] of FLOAT needs 16"),
    C("09-huge-declared-size", PARSE_ERROR,
      "@PATH@: initializer 'w' holds 16 bytes of raw data; its shape [1000000000000] of FLOAT "
      "needs 4000000000000"),
    C("10-wrong-typed-field", PARSE_ERROR,
      "@PATH@: initializer 'w' is FLOAT but holds values in a field for another type (expected "
      "float_data)"),
    C("11-no-data-type", PARSE_ERROR, "@PATH@: initializer 'w' has no data type"),
    C("12-string-tensor", UNSUPPORTED,
      "@PATH@: initializer 'w' is STRING: ntprof reads numeric tensors only"),
    C("13-deep-nesting", PARSE_ERROR,
      "@PATH@: messages nest deeper than 64 levels (refused before unpacking the ONNX model)"),
    C("14-unsupported-nodes", UNSUPPORTED,
      "@PATH@: 3 unsupported nodes: 'nms' (NonMaxSuppression, opset 13), 'topk' (TopK, opset "
      "13), 'fancy' (FancyOp, opset 13)"),
    C("15-opset-too-new", UNSUPPORTED,
      "@PATH@: opset 18 is not supported: ntprof reads opsets 1 to 17"),
    C("16-cycle", GRAPH_ERROR,
      "@PATH@: node 'r1' (Relu) is part of a cycle: its inputs depend on its own outputs"),
    C("17-undefined-input", GRAPH_ERROR,
      "@PATH@: node 0 (Relu 'relu') reads 'nope', which no node, input or initializer defines"),
    C("18-produced-twice", PARSE_ERROR,
      "@PATH@: value 'y' is produced twice (by node 1, Sigmoid, and before)"),
    X("19-external-escapes", INVALID_ARGUMENT,
      "@PATH@: initializer 'w': external data location '../outside.bin' leaves the model's "
      "directory"),
    X("20-external-missing", IO_ERROR,
      "@PATH@: initializer 'w': external data 'missing.bin': No such file or directory"),
    X("21-external-short", PARSE_ERROR,
      "@PATH@: initializer 'w': external data 'short.bin' holds 8 bytes, the tensor needs 16 "
      "from offset 0"),
    C("22-input-without-shape", UNSUPPORTED,
      "@PATH@: graph input 'x' has no shape: ntprof needs static shapes"),
    C("23-symbolic-dim", INVALID_ARGUMENT,
      "@PATH@: input 'x' dim 1 is symbolic ('seq'): give its value with ntp_load_opts.set seq=N"),
    C("24-zero-dim", UNSUPPORTED,
      "@PATH@: graph input 'x' dim 0 is 0: ntprof tensors have positive dims"),
    C("25-output-undefined", GRAPH_ERROR,
      "@PATH@: graph output 'z' is not defined by any node, input or initializer"),
    C("26-conv-channels", SHAPE_ERROR,
      "@PATH@: <conv name='conv'>: weight 'w' has shape [2,3,1,1], expected [2,4,1,1]"),
    C("27-too-many-dims", UNSUPPORTED,
      "@PATH@: initializer 'w' has 10 dims; at most 8 are supported"),
    C("28-integer-at-run-time", UNSUPPORTED,
      "@PATH@: node 'relu' (Relu, opset 13): input 'x' is INT64 at run time; this layer computes "
      "on floating-point data"),
    C("29-unknown-attribute", UNSUPPORTED,
      "@PATH@: 1 unsupported node: 'relu' (Relu, opset 13: attribute 'alpha')"),
    C("30-weights-at-run-time", UNSUPPORTED,
      "@PATH@: node 'conv' (Conv, opset 13): input 1 ('w') must be an initializer: ntprof's "
      "layers own their weights"),
    X("31-external-absolute", INVALID_ARGUMENT,
      "@PATH@: initializer 'w': external data location '/etc/hostname' leaves the model's "
      "directory"),
    C("32-segmented-tensor", UNSUPPORTED, "@PATH@: initializer 'w' is segmented (not supported)"),
    C("33-sparse-initializer", UNSUPPORTED, "@PATH@: sparse initializers are not supported"),
    C("34-no-outputs", GRAPH_ERROR, "@PATH@: the graph has no outputs"),
    C("35-memory-budget", MEMORY_BUDGET,
      "@PATH@: the topology needs 8388608.0 MiB (weights and activations), more than the memory "
      "budget of 1024.0 MiB"),
    C("36-no-graph", PARSE_ERROR, "@PATH@: the model has no graph (is it an ONNX model?)"),
    C("37-reshape-shape-at-run-time", UNSUPPORTED,
      "@PATH@: node 'reshape' (Reshape, opset 13): input 1 ('s') must be known at load time (an "
      "initializer or computed from initializers and shapes), but it is computed at run time"),
    /* Issue 14: a node the pattern matchers read past (1), sizes whose
     * arithmetic overflowed (4), a wrongly typed attribute read as its
     * default (7), external data allocated before it was checked (5). */
    C("38-node-without-outputs", PARSE_ERROR, "@PATH@: node 1 (Sigmoid 'sig') has no outputs"),
    C("39-conv-huge-dilation", OVERFLOW,
      "@PATH@: <conv name='conv'>: kernel 3, stride 1, dilation 4611686018427387904 and padding "
      "0+0 on spatial dim 0 of input [1,1,5,5] overflow 64-bit sizes"),
    C("40-conv-huge-pad", OVERFLOW,
      "@PATH@: <conv name='conv'>: kernel 3, stride 1, dilation 1 and padding "
      "9223372036854775807+0 on spatial dim 0 of input [1,1,5,5] overflow 64-bit sizes"),
    C("41-pad-int64-min", SHAPE_ERROR,
      "@PATH@: node 'pad' (Pad, opset 13): pad -9223372036854775808 crops all of dim 0 (1)"),
    C("42-pad-int64-max", OVERFLOW,
      "@PATH@: <pad name='pad'>: 'pads' 9223372036854775807/1 on dim 1 of [1,4] overflow 64-bit "
      "sizes"),
    C("43-conv-float-strides", PARSE_ERROR,
      "@PATH@: node 'conv' (Conv, opset 13): attribute 'strides' is FLOATS; it must be INTS"),
    X("44-external-short-huge", PARSE_ERROR,
      "@PATH@: initializer 'w': external data 'short.bin' holds 8 bytes, the tensor needs "
      "4398046511104 from offset 0"),
    /* Found by fuzz_onnx: a float shape holding NaN (its conversion to an
     * integer was undefined behaviour). */
    C("45-reshape-nan-shape", PARSE_ERROR,
      "@PATH@: node 'reshape' (Reshape, opset 6): 'shape' value nan is not an integer"),
    /* Found by fuzz_onnx: Neg folded over INT64_MIN (undefined behaviour
     * the sanitizer build stops at), a Range past int64. */
    C("46-neg-int64-min", UNSUPPORTED,
      "@PATH@: graph output 'y' is a constant INT64 tensor: ntprof's graphs compute "
      "floating-point outputs"),
    C("47-range-int64-overflow", INVALID_ARGUMENT,
      "@PATH@: node 'range' (Range, opset 13): element 2 of the range is beyond int64"),
    /* Found by fuzz_onnx: a folded Range read its empty delta past its
     * end; a folded Clip's min holding two values. */
    C("48-range-empty-delta", INVALID_ARGUMENT,
      "@PATH@: node 'range' (Range, opset 13): delta must be a scalar, got 0 values"),
    C("49-clip-two-min", INVALID_ARGUMENT,
      "@PATH@: node 'clip' (Clip, opset 13): min must be a scalar, got 2 values"),
};
#define N_CASES (sizeof cases / sizeof cases[0])

/* want with @PATH@ replaced by path. */
static void expand(const char *want, const char *path, char *out, size_t len)
{
    const char *at = strstr(want, "@PATH@");
    if (at)
        snprintf(out, len, "%.*s%s%s", (int)(at - want), want, path, at + 6);
    else
        snprintf(out, len, "%s", want);
}

static const ntp_load_opts opts = {.max_memory = (int64_t)1 << 30};

static void test_every_case(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    for (size_t i = 0; i < N_CASES; i++) {
        char path[512], want[1024];
        snprintf(path, sizeof path, DIR_ "%s.onnx", cases[i].file);
        expand(cases[i].want, path, want, sizeof want);
        ntp_graph *g = (ntp_graph *)1;
        ntp_status st = ntp_graph_load(ctx, path, &opts, &g);
        if (st != cases[i].status || strcmp(ntp_ctx_errmsg(ctx), want) != 0)
            print_error("%s:\n  got  %s %s\n  want %s %s\n", cases[i].file, ntp_status_name(st),
                        ntp_ctx_errmsg(ctx), ntp_status_name(cases[i].status), want);
        assert_int_equal(st, cases[i].status);
        assert_string_equal(ntp_ctx_errmsg(ctx), want);
        assert_null(g);
        ntp_ctx_clear(ctx);
        ntp_ctx_clear_warnings(ctx);
    }
    ntp_ctx_free(ctx);
}

/* From memory: the same messages with the buffer's name. */
static void test_from_memory(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    for (size_t i = 0; i < N_CASES; i++) {
        if (cases[i].external)
            continue;
        char path[512], want[1024];
        snprintf(path, sizeof path, DIR_ "%s.onnx", cases[i].file);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        static unsigned char buf[1 << 16];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        expand(cases[i].want, "mem.onnx", want, sizeof want);
        ntp_graph *g = NULL;
        ntp_status st = ntp__onnx_load_memory(ctx, buf, n, "mem.onnx", &opts, NULL, 0, &g);
        assert_int_equal(st, cases[i].status);
        assert_string_equal(ntp_ctx_errmsg(ctx), want);
        assert_null(g);
    }
    /* External data needs a directory. */
    char path[512];
    snprintf(path, sizeof path, DIR_ "21-external-short.onnx");
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static unsigned char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    ntp_graph *g = NULL;
    assert_int_equal(ntp__onnx_load_memory(ctx, buf, n, "mem.onnx", &opts, NULL, 0, &g),
                     NTP_STATUS_UNSUPPORTED);
    assert_string_equal(ntp_ctx_errmsg(ctx),
                        "mem.onnx: initializer 'w' keeps its data in an external file, which a "
                        "model read from memory cannot reach");
    ntp_ctx_free(ctx);
}

/* Every corpus file has a case and every case a file. */
static void test_corpus_complete(void **state)
{
    (void)state;
    DIR *d = opendir(DIR_);
    assert_non_null(d);
    struct dirent *e;
    size_t files = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 5, ".onnx") != 0)
            continue;
        files++;
        bool found = false;
        for (size_t i = 0; i < N_CASES && !found; i++)
            found = strlen(cases[i].file) == l - 5 && strncmp(cases[i].file, e->d_name, l - 5) == 0;
        if (!found)
            print_error("%s has no case\n", e->d_name);
        assert_true(found);
    }
    closedir(d);
    assert_int_equal(files, N_CASES);
}

/* Refusing them prints nothing: stdout and stderr go to a file meanwhile. */
static void test_quiet(void **state)
{
    (void)state;
    char tmpl[] = "/tmp/ntp-onnx-quiet-XXXXXX";
    int fd = mkstemp(tmpl);
    assert_true(fd >= 0);
    fflush(stdout);
    fflush(stderr);
    int out = dup(1), err = dup(2);
    dup2(fd, 1);
    dup2(fd, 2);
    ntp_ctx *ctx = ntp_ctx_init();
    for (size_t i = 0; i < N_CASES; i++) {
        char path[512];
        snprintf(path, sizeof path, DIR_ "%s.onnx", cases[i].file);
        ntp_graph *g = NULL;
        ntp_graph_load(ctx, path, &opts, &g);
        ntp_graph_free(g);
    }
    ntp_ctx_free(ctx);
    fflush(stdout);
    fflush(stderr);
    dup2(out, 1);
    dup2(err, 2);
    close(out);
    close(err);
    off_t size = lseek(fd, 0, SEEK_END);
    close(fd);
    unlink(tmpl);
    assert_int_equal(size, 0);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "test_onnx_malformed: reading external data blocked\n";
    ssize_t r = write(2, msg, sizeof msg - 1);
    (void)r;
    _exit(1);
}

/* External data named after a FIFO (issue 14, 3): refused at once, not
 * waited on for a writer that never comes. The model and the FIFO go to a
 * scratch directory (git cannot hold a FIFO); an alarm turns a hang into a
 * failure. A FIFO named as the model itself is refused the same way. */
static void test_fifo_never_blocks(void **state)
{
    (void)state;
    char dir[] = "/tmp/ntp-onnx-fifo-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char model[600], fifo[600], fmodel[600];
    snprintf(model, sizeof model, "%s/m.onnx", dir);
    snprintf(fifo, sizeof fifo, "%s/missing.bin", dir);
    snprintf(fmodel, sizeof fmodel, "%s/fifo.onnx", dir);
    FILE *in = fopen(DIR_ "20-external-missing.onnx", "rb");
    FILE *out = fopen(model, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, in);
    assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    fclose(out);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(mkfifo(fmodel, 0600), 0);
    signal(SIGALRM, on_alarm);
    alarm(20);
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = NULL;
    char want[1024];
    assert_int_equal(ntp_graph_load(ctx, model, &opts, &g), NTP_STATUS_IO_ERROR);
    snprintf(want, sizeof want, "%s: initializer 'w': external data 'missing.bin' is not a file",
             model);
    assert_string_equal(ntp_ctx_errmsg(ctx), want);
    assert_int_equal(ntp_graph_load(ctx, fmodel, &opts, &g), NTP_STATUS_IO_ERROR);
    snprintf(want, sizeof want, "%s: not a regular file", fmodel);
    assert_string_equal(ntp_ctx_errmsg(ctx), want);
    ntp_onnx_tensor t;
    assert_int_equal(ntp__onnx_read_pb(ctx, fifo, &t, NULL), NTP_STATUS_IO_ERROR);
    snprintf(want, sizeof want, "%s: not a regular file", fifo);
    assert_string_equal(ntp_ctx_errmsg(ctx), want);
    alarm(0);
    ntp_ctx_free(ctx);
    unlink(model);
    unlink(fifo);
    unlink(fmodel);
    rmdir(dir);
}

/* ONNX names are unchecked protobuf strings: control bytes, invalid UTF-8
 * and "${" (tests/data/hostile-names.onnx has all three, in the graph,
 * input and node names). `convert` must write markup that reads back, with
 * the same layers (issue 14, 7). */
static void test_convert_round_trip(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = NULL, *back = NULL;
    assert_int_equal(
        ntp_graph_load(ctx, NTP_SOURCE_DIR "/tests/data/hostile-names.onnx", &opts, &g),
        NTP_STATUS_OK);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(ntp_graph_write_markup(ctx, g, NULL, f), NTP_STATUS_OK);
    fclose(f);
    ntp_status st = ntp_graph_load_xml_memory(ctx, text, len, "back.xml", &opts, &back);
    if (st != NTP_STATUS_OK)
        print_error("%s\n%s\n", ntp_ctx_errmsg(ctx), text);
    assert_int_equal(st, NTP_STATUS_OK);
    assert_int_equal(ntp_graph_layer_count(back), ntp_graph_layer_count(g));
    assert_null(strstr(text, "${"));
    ntp_graph_free(back);
    ntp_graph_free(g);
    free(text);
    ntp_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_case),        cmocka_unit_test(test_from_memory),
        cmocka_unit_test(test_corpus_complete),   cmocka_unit_test(test_quiet),
        cmocka_unit_test(test_fifo_never_blocks), cmocka_unit_test(test_convert_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
