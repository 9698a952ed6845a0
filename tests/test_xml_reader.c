/* The markup reader (src/io/xml-reader.c, src/io/xml-attrs.c): small
 * topologies loaded from memory, checked node by node against what the
 * markup says: wiring by name and by chain, split outputs, aliases, repeat
 * expansion, markers, params and their overrides, per-layer backend and
 * precision, the warnings for filled-in defaults, the attribute values
 * stored in the IR, and the RELAX NG schema against every bundled model.
 *
 * Every document below starts with <topology> on line 1, so the line
 * numbers in expected messages can be read off the string. */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <libxml/parser.h>
#include <libxml/relaxng.h>

#include "graph/graph-impl.h"
#include "graph/op-attrs.h"
#include "graph/op-onnx-impl.h"
#include "io/xml-impl.h"
#include "ntprof/context.h"
#include "ntprof/graph.h"
#include "support/ctx.h"

static ntp_graph *load_opts(const char *xml, const ntp_load_opts *o)
{
    ntp_graph *g = NULL;
    ntp_ctx_clear(test_ctx);
    ntp_ctx_clear_warnings(test_ctx);
    ntp_status st = ntp_graph_load_xml_memory(test_ctx, xml, strlen(xml), "mem.xml", o, &g);
    if (st != NTP_STATUS_OK)
        print_error("load failed: %s\n", ntp_ctx_errmsg(test_ctx));
    assert_int_equal(st, NTP_STATUS_OK);
    assert_non_null(g);
    return g;
}

static ntp_graph *load(const char *xml)
{
    return load_opts(xml, NULL);
}

/* Load, expect failure `want` and a message containing `needle`. */
static void load_fails(const char *xml, const ntp_load_opts *o, ntp_status want, const char *needle)
{
    ntp_graph *g = (ntp_graph *)&g; /* must be reset to NULL */
    ntp_ctx_clear(test_ctx);
    ntp_status st = ntp_graph_load_xml_memory(test_ctx, xml, strlen(xml), "mem.xml", o, &g);
    const char *msg = ntp_ctx_errmsg(test_ctx);
    if (st != want || !strstr(msg, needle))
        print_error("status %s, message '%s'; expected %s with '%s'\n", ntp_status_name(st), msg,
                    ntp_status_name(want), needle);
    assert_int_equal(st, want);
    assert_null(g);
    assert_non_null(strstr(msg, needle));
    assert_null(strchr(msg, '\n'));
}

static const ntp_node *node(const ntp_graph *g, const char *name)
{
    int i = ntp__graph_find_node(g, name);
    if (i < 0)
        print_error("no node '%s'\n", name);
    assert_true(i >= 0);
    return &g->nodes[i];
}

static const char *in_name(const ntp_graph *g, const char *layer, int k)
{
    const ntp_node *n = node(g, layer);
    assert_true(k < n->n_in);
    return g->tensors[n->in[k]].name;
}

static void assert_shape(ntp_shape s, const char *want)
{
    char buf[128];
    assert_string_equal(ntp_shape_str(&s, buf, sizeof buf), want);
}

static ntp_shape out_shape(const ntp_graph *g, const char *layer, int k)
{
    const ntp_node *n = node(g, layer);
    assert_true(k < n->n_out);
    return g->tensors[n->out[k]].shape;
}

/* --- structure ------------------------------------------------------------ */

static void test_chain_defaults(void **state)
{
    (void)state;
    ntp_graph *g = load("<topology name='chain' precision='f32'>\n"
                        "  <input name='x' shape='1,3,8,8' dtype='f32'/>\n"
                        "  <conv name='c1' filters='4' kernel='3' pad='same'/>\n"
                        "  <relu name='r1'/>\n"
                        "  <global_avgpool name='gap'/>\n"
                        "  <flatten name='fl'/>\n"
                        "  <fc name='fc1' units='5'/>\n"
                        "</topology>\n");
    assert_string_equal(ntp_graph_name(g), "chain");
    assert_string_equal(ntp_graph_source(g), "mem.xml");
    assert_int_equal(ntp_graph_layer_count(g), 5);
    assert_string_equal(in_name(g, "c1", 0), "x");
    assert_string_equal(in_name(g, "r1", 0), "c1");
    assert_string_equal(in_name(g, "gap", 0), "r1");
    assert_string_equal(in_name(g, "fl", 0), "gap");
    assert_string_equal(in_name(g, "fc1", 0), "fl");
    const char *order[] = {"c1", "r1", "gap", "fl", "fc1"};
    for (int i = 0; i < 5; i++)
        assert_string_equal(ntp_graph_layer_name(g, i), order[i]);
    assert_int_equal(node(g, "c1")->line, 3);
    assert_int_equal(node(g, "fc1")->line, 7);
    assert_shape(out_shape(g, "c1", 0), "[1,4,8,8]");
    assert_shape(out_shape(g, "fc1", 0), "[1,5]");
    assert_int_equal(ntp_graph_output_count(g), 1);
    assert_string_equal(ntp_graph_output_name(g, 0), "fc1");
    /* Every op but split has one output tensor named like the layer. */
    assert_int_equal(node(g, "r1")->n_out, 1);
    assert_int_equal(g->tensors[node(g, "r1")->out[0]].producer, ntp__graph_find_node(g, "r1"));
    ntp_graph_free(g);
}

static void test_inputs_by_name_and_dag(void **state)
{
    (void)state;
    ntp_graph *g = load("<topology name='dag'>\n"
                        "  <input name='x' shape='2,16'/>\n"
                        "  <fc name='a' units='8'/>\n"
                        "  <fc name='b' units='8' inputs='x'/>\n"
                        "  <add name='sum' inputs='a, b'/>\n"
                        "  <mul name='m' inputs='sum,later'/>\n"
                        "  <fc name='later' units='8' inputs='x'/>\n"
                        "</topology>\n");
    assert_string_equal(in_name(g, "a", 0), "x");
    assert_string_equal(in_name(g, "b", 0), "x");
    assert_string_equal(in_name(g, "sum", 0), "a");
    assert_string_equal(in_name(g, "sum", 1), "b");
    assert_string_equal(in_name(g, "m", 0), "sum");
    assert_string_equal(in_name(g, "m", 1), "later");
    /* A layer named before its definition runs before its consumer. */
    assert_true(ntp_graph_layer_find(g, "later") < ntp_graph_layer_find(g, "m"));
    /* The missing dtype was filled in, with a warning that says where. */
    assert_int_equal(ntp_graph_input_dtype(g, 0), NTP_DTYPE_F32);
    assert_int_equal(ntp_ctx_warning_count(test_ctx), 1);
    assert_string_equal(ntp_ctx_warning(test_ctx, 0),
                        "mem.xml:2: <input name='x'>: no dtype given, assuming f32");
    ntp_graph_free(g);
}

static void test_split_outputs(void **state)
{
    (void)state;
    ntp_graph *g = load("<topology name='split'>\n"
                        "  <input name='x' shape='1,6,4' dtype='f32'/>\n"
                        "  <split name='sp' axis='1' parts='3'/>\n"
                        "  <relu name='r'/>\n"
                        "  <sigmoid name='s' inputs='sp:2'/>\n"
                        "  <split name='sz' axis='1' sizes='2,4' inputs='x'/>\n"
                        "  <tanh name='t' inputs='sz:1'/>\n"
                        "  <concat name='cat' axis='1' inputs='sp:1,t'/>\n"
                        "</topology>\n");
    const ntp_node *sp = node(g, "sp");
    assert_int_equal(sp->n_out, 3);
    for (int k = 0; k < 3; k++) {
        char want[8];
        snprintf(want, sizeof want, "sp:%d", k);
        assert_string_equal(g->tensors[sp->out[k]].name, want);
        assert_int_equal(g->tensors[sp->out[k]].producer_slot, k);
        assert_shape(out_shape(g, "sp", k), "[1,2,4]");
    }
    /* The chain takes a multi-output layer's first output. */
    assert_string_equal(in_name(g, "r", 0), "sp:0");
    assert_string_equal(in_name(g, "s", 0), "sp:2");
    assert_int_equal(node(g, "sz")->n_out, 2);
    assert_shape(out_shape(g, "sz", 0), "[1,2,4]");
    assert_shape(out_shape(g, "sz", 1), "[1,4,4]");
    assert_string_equal(in_name(g, "t", 0), "sz:1");
    assert_shape(out_shape(g, "cat", 0), "[1,6,4]");
    ntp_graph_free(g);

    const char *bare = "<topology name='split'>\n"
                       "  <input name='x' shape='1,6,4' dtype='f32'/>\n"
                       "  <split name='sp' axis='1' parts='2'/>\n"
                       "  <relu name='r' inputs='sp'/>\n"
                       "</topology>\n";
    load_fails(bare, NULL, NTP_STATUS_GRAPH_ERROR,
               "mem.xml:4: <relu name='r'>: attribute 'inputs': 'sp' is a <split> with 2 outputs");
    const char *past = "<topology name='split'>\n"
                       "  <input name='x' shape='1,6,4' dtype='f32'/>\n"
                       "  <split name='sp' axis='1' parts='2'/>\n"
                       "  <relu name='r' inputs='sp:2'/>\n"
                       "</topology>\n";
    load_fails(past, NULL, NTP_STATUS_GRAPH_ERROR,
               "mem.xml:4: <relu name='r'>: attribute 'inputs': 'sp:2' does not exist: "
               "<split name='sp'> has 2 outputs");
}

static void test_aliases(void **state)
{
    (void)state;
    ntp_graph *g = load("<topology name='alias'>\n"
                        "  <input name='x' shape='1,8' dtype='f32'/>\n"
                        "  <alias name='start'/>\n"
                        "  <fc name='f1' units='8'/>\n"
                        "  <alias name='block_in'/>\n"
                        "  <fc name='f2' units='8'/>\n"
                        "  <alias name='skip2' of='skip'/>\n"
                        "  <alias name='skip' of='start'/>\n"
                        "  <add name='res' inputs='f2,block_in'/>\n"
                        "  <add name='res2' inputs='res,skip2'/>\n"
                        "  <alias name='half' of='f1'/>\n"
                        "  <mul name='m' inputs='res2,half'/>\n"
                        "</topology>\n");
    /* An alias names the chain output where it stands and does not break
     * the chain; an alias of an alias (even one defined later) follows it. */
    assert_string_equal(in_name(g, "f1", 0), "x");
    assert_string_equal(in_name(g, "f2", 0), "f1");
    assert_string_equal(in_name(g, "res", 0), "f2");
    assert_string_equal(in_name(g, "res", 1), "f1");
    assert_string_equal(in_name(g, "res2", 1), "x");
    assert_string_equal(in_name(g, "m", 1), "f1");
    assert_int_equal(ntp_graph_layer_count(g), 5);
    ntp_graph_free(g);

    const char *cycle = "<topology name='alias'>\n"
                        "  <input name='x' shape='1,8' dtype='f32'/>\n"
                        "  <alias name='a' of='b'/>\n"
                        "  <alias name='b' of='a'/>\n"
                        "  <relu name='r' inputs='a'/>\n"
                        "</topology>\n";
    load_fails(cycle, NULL, NTP_STATUS_GRAPH_ERROR,
               "mem.xml:3: <alias name='a'>: attribute 'of': the aliases refer to each other");
}

static void test_repeat_expansion(void **state)
{
    (void)state;
    const char *xml = "<topology name='rep' batch='2'>\n"
                      "  <param name='layers' default='3'/>\n"
                      "  <input name='x' shape='${batch},16' dtype='f32'/>\n"
                      "  <fc name='stem' units='16'/>\n"
                      "  <repeat count='${layers}' index='i'>\n"
                      "    <alias name='blk${i}_in'/>\n"
                      "    <fc name='blk${i}_fc' units='${16}'/>\n"
                      "    <add name='blk${i}_res' inputs='blk${i}_fc,blk${i}_in'/>\n"
                      "  </repeat>\n"
                      "  <fc name='head' units='${layers*2+1}'/>\n"
                      "</topology>\n";
    ntp_graph *g = load(xml);
    assert_int_equal(ntp_graph_layer_count(g), 8);
    assert_string_equal(in_name(g, "blk0_fc", 0), "stem");
    assert_string_equal(in_name(g, "blk0_res", 0), "blk0_fc");
    assert_string_equal(in_name(g, "blk0_res", 1), "stem");
    assert_string_equal(in_name(g, "blk1_fc", 0), "blk0_res");
    assert_string_equal(in_name(g, "blk2_res", 1), "blk1_res");
    assert_string_equal(in_name(g, "head", 0), "blk2_res");
    assert_shape(out_shape(g, "head", 0), "[2,7]");
    /* Expanded layers keep the line of their element in the body. */
    assert_int_equal(node(g, "blk2_fc")->line, 7);
    ntp_graph_free(g);

    const char *set[] = {"layers=5"};
    ntp_load_opts o = {.set = set, .n_set = 1};
    g = load_opts(xml, &o);
    assert_int_equal(ntp_graph_layer_count(g), 12);
    assert_string_equal(in_name(g, "head", 0), "blk4_res");
    assert_shape(out_shape(g, "head", 0), "[2,11]");
    ntp_graph_free(g);

    const char *zero[] = {"layers=0"};
    o.set = zero;
    g = load_opts(xml, &o);
    assert_int_equal(ntp_graph_layer_count(g), 2);
    assert_string_equal(in_name(g, "head", 0), "stem");
    assert_shape(out_shape(g, "head", 0), "[2,1]");
    ntp_graph_free(g);
}

static void test_nested_repeat(void **state)
{
    (void)state;
    ntp_graph *g = load("<topology name='nest'>\n"
                        "  <input name='x' shape='4' dtype='f32'/>\n"
                        "  <repeat count='2' index='s'>\n"
                        "    <repeat count='${s+2}' index='b'>\n"
                        "      <relu name='s${s}_b${b}'/>\n"
                        "    </repeat>\n"
                        "    <alias name='stage${s}'/>\n"
                        "  </repeat>\n"
                        "  <add name='sum' inputs='stage0,stage1'/>\n"
                        "</topology>\n");
    const char *order[] = {"s0_b0", "s0_b1", "s1_b0", "s1_b1", "s1_b2", "sum"};
    assert_int_equal(ntp_graph_layer_count(g), 6);
    for (int i = 0; i < 6; i++)
        assert_string_equal(ntp_graph_layer_name(g, i), order[i]);
    assert_string_equal(in_name(g, "s1_b0", 0), "s0_b1");
    assert_string_equal(in_name(g, "sum", 0), "s0_b1");
    assert_string_equal(in_name(g, "sum", 1), "s1_b2");
    ntp_graph_free(g);
}

static void test_markers(void **state)
{
    (void)state;
    ntp_graph *g = load("<topology name='mark'>\n"
                        "  <input name='x' shape='1,4' dtype='f32'/>\n"
                        "  <marker name='early' from='b' to='c' tool='perf-stat'/>\n"
                        "  <relu name='a'/>\n"
                        "  <relu name='b'/>\n"
                        "  <relu name='c'/>\n"
                        "  <relu name='d'/>\n"
                        "  <marker name='one' from='d' to='d'/>\n"
                        "</topology>\n");
    int first, last;
    assert_int_equal(ntp_graph_marker_count(g), 2);
    assert_string_equal(ntp_graph_marker_name(g, 0), "early");
    ntp_graph_marker_range(g, 0, &first, &last);
    assert_int_equal(first, 1);
    assert_int_equal(last, 2);
    assert_string_equal(ntp_graph_marker_tool(g, 0), "perf-stat");
    ntp_graph_marker_range(g, 1, &first, &last);
    assert_int_equal(first, 3);
    assert_int_equal(last, 3);
    assert_null(ntp_graph_marker_tool(g, 1));
    assert_int_equal(g->markers[1].line, 8);
    ntp_graph_free(g);
}

static const char *params_xml = "<topology name='p' precision='f32' batch='4'>\n"
                                "  <param name='hidden' default='8'/>\n"
                                "  <param name='act' default='relu'/>\n"
                                "  <param name='width' default='${hidden*2}'/>\n"
                                "  <param name='dir' default='forward'/>\n"
                                "  <input name='x' shape='${batch},${width}' dtype='f32'/>\n"
                                "  <fc name='f' units='${hidden}'/>\n"
                                "  <reshape name='seq' shape='1,0,-1'/>\n"
                                "  <gru name='g_${act}' units='2' direction='${dir}'/>\n"
                                "</topology>\n";

static void test_params_defaults(void **state)
{
    (void)state;
    ntp_graph *g = load(params_xml);
    const char *names[] = {"batch", "hidden", "act", "width", "dir"};
    const char *values[] = {"4", "8", "relu", "16", "forward"};
    assert_int_equal(ntp_graph_param_count(g), 5);
    for (int i = 0; i < 5; i++) {
        assert_string_equal(ntp_graph_param_name(g, i), names[i]);
        assert_string_equal(ntp_graph_param_value(g, i), values[i]);
    }
    assert_int_equal(g->params[0].line, 1);
    assert_int_equal(g->params[3].line, 4);
    assert_shape(ntp_graph_input_shape(g, 0), "[4,16]");
    assert_shape(out_shape(g, "f", 0), "[4,8]");
    /* Text params substitute as text, in names and enum values alike. */
    assert_int_equal(node(g, "g_relu")->a.direction, NTP_DIR_FORWARD);
    assert_int_equal(ntp_graph_precision(g), NTP_DTYPE_F32);
    assert_int_equal(ntp_graph_batch(g), 4);
    ntp_graph_free(g);
}

static void test_params_overrides(void **state)
{
    (void)state;
    const char *set[] = {"hidden=2", "dir=bidirectional", "hidden=3", "act=tanh"};
    ntp_load_opts o = {
        .set = set, .n_set = 4, .batch = 7, .set_precision = true, .precision = NTP_DTYPE_BF16};
    ntp_graph *g = load_opts(params_xml, &o);
    /* The last --set of a name wins; dependent defaults see the override. */
    assert_string_equal(ntp_graph_param_value(g, 0), "7");
    assert_string_equal(ntp_graph_param_value(g, 1), "3");
    assert_string_equal(ntp_graph_param_value(g, 2), "tanh");
    assert_string_equal(ntp_graph_param_value(g, 3), "6");
    assert_string_equal(ntp_graph_param_value(g, 4), "bidirectional");
    assert_shape(ntp_graph_input_shape(g, 0), "[7,6]");
    assert_int_equal(ntp_graph_batch(g), 7);
    assert_shape(out_shape(g, "f", 0), "[7,3]");
    assert_int_equal(node(g, "g_tanh")->a.direction, NTP_DIR_BIDIRECTIONAL);
    assert_int_equal(ntp_graph_precision(g), NTP_DTYPE_BF16);
    assert_int_equal(node(g, "f")->precision, NTP_DTYPE_BF16);
    /* An input keeps its own dtype. */
    assert_int_equal(ntp_graph_input_dtype(g, 0), NTP_DTYPE_F32);
    ntp_graph_free(g);

    const char *typo[] = {"hiden=3"};
    ntp_load_opts bad = {.set = typo, .n_set = 1};
    load_fails(params_xml, &bad, NTP_STATUS_UNKNOWN_NAME,
               "no param 'hiden' in mem.xml; did you mean 'hidden'?");
    const char *malformed[] = {"hidden"};
    bad.set = malformed;
    load_fails(params_xml, &bad, NTP_STATUS_INVALID_ARGUMENT,
               "ntp_load_opts.set 'hidden': expected NAME=VALUE");
    const char *empty_name[] = {"=3"};
    bad.set = empty_name;
    load_fails(params_xml, &bad, NTP_STATUS_INVALID_ARGUMENT,
               "ntp_load_opts.set '=3': expected NAME=VALUE");
    /* The loader, not each reader, refuses a dtype that is no precision. */
    ntp_load_opts prec = {.set_precision = true, .precision = NTP_DTYPE_I32};
    load_fails(
        params_xml, &prec, NTP_STATUS_INVALID_ARGUMENT,
        "precision override: 'i32' is not a compute precision: expected f32, bf16, f16 or i8");
    ntp_load_opts batch = {.batch = 2};
    load_fails("<topology name='nb'>\n"
               "  <input name='x' shape='2,4' dtype='f32'/>\n"
               "  <relu name='r'/>\n"
               "</topology>\n",
               &batch, NTP_STATUS_INVALID_ARGUMENT,
               "mem.xml: a batch size was given, but the topology declares no 'batch' param");
}

static void test_param_without_default(void **state)
{
    (void)state;
    const char *xml = "<topology name='nd'>\n"
                      "  <param name='n'/>\n"
                      "  <input name='x' shape='2,${n}' dtype='f32'/>\n"
                      "  <relu name='r'/>\n"
                      "</topology>\n";
    load_fails(
        xml, NULL, NTP_STATUS_PARSE_ERROR,
        "mem.xml:2: <param name='n'>: param 'n' has no default: give it with ntp_load_opts.set n=VALUE");
    const char *set[] = {"n=5"};
    ntp_load_opts o = {.set = set, .n_set = 1};
    ntp_graph *g = load_opts(xml, &o);
    assert_shape(ntp_graph_input_shape(g, 0), "[2,5]");
    ntp_graph_free(g);
}

static void test_backend_and_precision(void **state)
{
    (void)state;
    ntp_graph *g = load("<topology name='bp' precision='f16'>\n"
                        "  <input name='x' shape='1,4' dtype='f32'/>\n"
                        "  <fc name='a' units='4' backend='onednn' precision='bf16'/>\n"
                        "  <fc name='b' units='4' precision='fp32'/>\n"
                        "  <relu name='c' precision='int8'/>\n"
                        "  <relu name='d'/>\n"
                        "</topology>\n");
    assert_int_equal(ntp_graph_precision(g), NTP_DTYPE_F16);
    assert_string_equal(node(g, "a")->backend, "onednn");
    assert_int_equal(node(g, "a")->precision, NTP_DTYPE_BF16);
    assert_null(node(g, "b")->backend);
    assert_int_equal(node(g, "b")->precision, NTP_DTYPE_F32);
    assert_int_equal(node(g, "c")->precision, NTP_DTYPE_I8);
    assert_int_equal(node(g, "d")->precision, NTP_DTYPE_F16);
    ntp_graph_free(g);
}

static void test_input_layouts_and_dtypes(void **state)
{
    (void)state;
    ntp_graph *g = load("<topology name='io'>\n"
                        "  <input name='img' shape='1,3,4,4' dtype='u8'/>\n"
                        "  <input name='seq' shape='5,2' dtype='int64'/>\n"
                        "  <input name='hw' shape='1,4,4,3' dtype='f32' layout='nhwc'/>\n"
                        "  <input name='vol' shape='1,1,2,2,2,2' dtype='bf16'/>\n"
                        "  <convert name='c' to='f32'/>\n"
                        "  <embedding name='e' vocab='10' dim='3' inputs='seq'/>\n"
                        "</topology>\n");
    assert_int_equal(ntp_graph_input_count(g), 4);
    const ntp_tensor *t[4];
    for (int i = 0; i < 4; i++)
        t[i] = &g->tensors[g->inputs[i]];
    assert_int_equal(t[0]->layout, NTP_LAYOUT_NCHW);
    assert_int_equal(t[0]->dtype, NTP_DTYPE_U8);
    assert_int_equal(t[1]->layout, NTP_LAYOUT_ANY);
    assert_int_equal(t[1]->dtype, NTP_DTYPE_I64);
    assert_int_equal(t[2]->layout, NTP_LAYOUT_NHWC);
    assert_int_equal(t[3]->layout, NTP_LAYOUT_ANY); /* rank 6: no channel semantics */
    assert_int_equal(t[3]->dtype, NTP_DTYPE_BF16);
    assert_int_equal(t[0]->kind, NTP_TENSOR_INPUT);
    assert_int_equal(t[0]->producer, -1);
    assert_shape(out_shape(g, "e", 0), "[5,2,3]");
    assert_int_equal(ntp_ctx_warning_count(test_ctx), 0);
    ntp_graph_free(g);
}

/* --- attribute values as stored in the IR -------------------------------- */

typedef struct kv {
    const char *k, *v;
} kv;

/* Parse one op's attributes through the reader's tables. */
static ntp_status parse(ntp_op op, const kv *kvs, int n, ntp_attrs *a, int *n_out, char *err,
                        size_t errlen)
{
    ntp_xml_attr attrs[16];
    for (int i = 0; i < n; i++)
        attrs[i] = (ntp_xml_attr){kvs[i].k, kvs[i].v};
    ntp__attrs_default(a);
    return ntp__xml_parse_op_attrs(op, attrs, n, a, n_out, err, errlen);
}

// clang-format off
#define PARSE_OK(op, a, n_out, ...)                                                  \
    do {                                                                             \
        const kv kvs_[] = {__VA_ARGS__};                                             \
        char err_[512] = "";                                                         \
        ntp_status st_ = parse(op, kvs_, (int)(sizeof kvs_ / sizeof kvs_[0]), a,     \
                               n_out, err_, sizeof err_);                            \
        if (st_ != NTP_STATUS_OK)                                                    \
            print_error("parse failed: %s\n", err_);                                 \
        assert_int_equal(st_, NTP_STATUS_OK);                                        \
    } while (0)
// clang-format on

static void parse_none(ntp_op op, ntp_attrs *a, int *n_out)
{
    char err[512] = "";
    ntp_status st = parse(op, NULL, 0, a, n_out, err, sizeof err);
    if (st != NTP_STATUS_OK)
        print_error("parse failed: %s\n", err);
    assert_int_equal(st, NTP_STATUS_OK);
}

static void parse_fails(ntp_op op, const kv *kvs, int n, ntp_status want, const char *msg)
{
    ntp_attrs a;
    int n_out;
    char err[512] = "";
    ntp_status st = parse(op, kvs, n, &a, &n_out, err, sizeof err);
    if (st != want || strcmp(err, msg) != 0)
        print_error("got %s '%s', expected %s '%s'\n", ntp_status_name(st), err,
                    ntp_status_name(want), msg);
    assert_int_equal(st, want);
    assert_string_equal(err, msg);
    free(a.alphabet);
}

static void test_attrs_conv_and_pool(void **state)
{
    (void)state;
    ntp_attrs a;
    int n_out = 0;
    PARSE_OK(NTP_OP_CONV, &a, &n_out, {"filters", "8"}, {"kernel", "3, 5"}, {"pad", "same"},
             {"depthwise", "true"}, {"bias", "0"});
    assert_int_equal(n_out, 1);
    assert_int_equal(a.filters, 8);
    assert_int_equal(a.n_kernel, 2);
    assert_int_equal(a.kernel[0], 3);
    assert_int_equal(a.kernel[1], 5);
    assert_int_equal(a.pad_kind, NTP_PAD_SAME_UPPER);
    assert_int_equal(a.groups, -1); /* "as many groups as channels" */
    assert_false(a.bias);
    assert_int_equal(a.n_stride, 0); /* not given */
    PARSE_OK(NTP_OP_CONV, &a, &n_out, {"filters", "4"}, {"kernel", "3"}, {"pad", "1,2"},
             {"stride", "2"}, {"dilation", "1,2"}, {"groups", "2"});
    assert_int_equal(a.pad_kind, NTP_PAD_EXPLICIT);
    assert_int_equal(a.n_pad, 2);
    assert_int_equal(a.pad[0], 1);
    assert_int_equal(a.pad[1], 2);
    assert_int_equal(a.n_stride, 1);
    assert_int_equal(a.stride[0], 2);
    assert_int_equal(a.n_dilation, 2);
    assert_int_equal(a.dilation[1], 2);
    assert_int_equal(a.groups, 2);
    PARSE_OK(NTP_OP_CONV, &a, &n_out, {"filters", "4"}, {"kernel", "3"}, {"pad", "same_lower"});
    assert_int_equal(a.pad_kind, NTP_PAD_SAME_LOWER);
    PARSE_OK(NTP_OP_DECONV, &a, &n_out, {"filters", "4"}, {"kernel", "2"}, {"pad", "valid"},
             {"output_padding", "1"});
    assert_int_equal(a.pad_kind, NTP_PAD_VALID);
    assert_int_equal(a.n_output_padding, 1);
    assert_int_equal(a.output_padding[0], 1);
    PARSE_OK(NTP_OP_MAXPOOL, &a, &n_out, {"kernel", "2"}, {"ceil_mode", "true"});
    assert_int_equal(a.n_kernel, 1);
    assert_int_equal(a.n_stride, 0); /* shape inference makes it the kernel */
    assert_true(a.ceil_mode);
    PARSE_OK(NTP_OP_AVGPOOL, &a, &n_out, {"kernel", "3"}, {"count_include_pad", "1"});
    assert_true(a.count_include_pad);

    const kv no_kernel[] = {{"filters", "8"}};
    parse_fails(NTP_OP_CONV, no_kernel, 1, NTP_STATUS_PARSE_ERROR,
                "missing required attribute 'kernel'");
    const kv both[] = {{"filters", "8"}, {"kernel", "3"}, {"groups", "2"}, {"depthwise", "true"}};
    parse_fails(NTP_OP_CONV, both, 4, NTP_STATUS_PARSE_ERROR,
                "attributes 'groups' and 'depthwise' conflict: give one");
    const kv same_deconv[] = {{"filters", "8"}, {"kernel", "3"}, {"pad", "same"}};
    parse_fails(NTP_OP_DECONV, same_deconv, 3, NTP_STATUS_PARSE_ERROR,
                "attribute 'pad': 'same' is not accepted on <deconv>: give explicit pads");
    const kv bad_pad[] = {{"filters", "8"}, {"kernel", "3"}, {"pad", "sme"}};
    parse_fails(NTP_OP_CONV, bad_pad, 3, NTP_STATUS_PARSE_ERROR,
                "attribute 'pad': expected same, same_lower, valid or a list of integers, got "
                "'sme'; did you mean 'same'?");
    const kv five[] = {{"filters", "8"}, {"kernel", "3"}, {"pad", "1,1,1,1,1"}};
    parse_fails(NTP_OP_CONV, five, 3, NTP_STATUS_PARSE_ERROR,
                "attribute 'pad': expected 1 to 3 values (symmetric) or 2, 4 or 6 (begins, then "
                "ends), got 5");
    const kv long_kernel[] = {{"filters", "8"}, {"kernel", "3,3,3,3"}};
    parse_fails(NTP_OP_CONV, long_kernel, 2, NTP_STATUS_PARSE_ERROR,
                "attribute 'kernel': expected at most 3 comma-separated values, got '3,3,3,3'");
    const kv zero_kernel[] = {{"filters", "8"}, {"kernel", "3,0"}};
    parse_fails(NTP_OP_CONV, zero_kernel, 2, NTP_STATUS_PARSE_ERROR,
                "attribute 'kernel': expected a positive integer, got '0'");
    const kv empty_item[] = {{"filters", "8"}, {"kernel", "3,,3"}};
    parse_fails(NTP_OP_CONV, empty_item, 2, NTP_STATUS_PARSE_ERROR,
                "attribute 'kernel': expected comma-separated integers, got an empty item in "
                "'3,,3'");
    const kv bad_bool[] = {{"filters", "8"}, {"kernel", "3"}, {"bias", "yes"}};
    parse_fails(NTP_OP_CONV, bad_bool, 3, NTP_STATUS_PARSE_ERROR,
                "attribute 'bias': expected true or false, got 'yes'");
}

static void test_attrs_scalar_ops(void **state)
{
    (void)state;
    ntp_attrs a;
    int n_out = 0;
    PARSE_OK(NTP_OP_FC, &a, &n_out, {"units", " 12 "}, {"bias", "false"});
    assert_int_equal(a.units, 12);
    assert_false(a.bias);
    PARSE_OK(NTP_OP_RELU, &a, &n_out, {"max", "20"});
    assert_true(a.has_max);
    assert_float_equal(a.max, 20.0, 0.0);
    parse_none(NTP_OP_RELU, &a, &n_out);
    assert_false(a.has_max);
    PARSE_OK(NTP_OP_CLIP, &a, &n_out, {"min", "0"});
    assert_float_equal(a.min, 0.0, 0.0);
    assert_true(isinf(a.max) && a.max > 0);
    PARSE_OK(NTP_OP_CLIP, &a, &n_out, {"max", "6.5e0"});
    assert_true(isinf(a.min) && a.min < 0);
    assert_float_equal(a.max, 6.5, 0.0);
    PARSE_OK(NTP_OP_LEAKY_RELU, &a, &n_out, {"alpha", "0.2"});
    assert_float_equal(a.leaky_relu.slope, 0.2, 0.0);
    parse_none(NTP_OP_LEAKY_RELU, &a, &n_out);
    assert_float_equal(a.leaky_relu.slope, 0.01, 0.0);
    PARSE_OK(NTP_OP_BATCHNORM, &a, &n_out, {"epsilon", "1e-3"});
    assert_float_equal(a.epsilon, 1e-3, 0.0);
    PARSE_OK(NTP_OP_LAYERNORM, &a, &n_out, {"axis", "-2"});
    assert_int_equal(a.axis, -2);
    parse_none(NTP_OP_FLATTEN, &a, &n_out);
    assert_int_equal(a.axis, 1); /* flatten's own default */
    parse_none(NTP_OP_SOFTMAX, &a, &n_out);
    assert_int_equal(a.axis, -1);
    PARSE_OK(NTP_OP_DROPOUT, &a, &n_out, {"ratio", "0.5"});
    PARSE_OK(NTP_OP_MATMUL, &a, &n_out, {"transpose_b", "true"});
    assert_true(a.transpose_b);
    assert_false(a.transpose_a);
    PARSE_OK(NTP_OP_ATTENTION, &a, &n_out, {"heads", "4"}, {"causal", "true"});
    assert_int_equal(a.heads, 4);
    assert_true(a.causal);

    const kv no_units[] = {{"bias", "true"}};
    parse_fails(NTP_OP_FC, no_units, 1, NTP_STATUS_PARSE_ERROR,
                "missing required attribute 'units'");
    const kv abc[] = {{"units", "abc"}};
    parse_fails(NTP_OP_FC, abc, 1, NTP_STATUS_PARSE_ERROR,
                "attribute 'units': expected a positive integer, got 'abc'");
    const kv hex[] = {{"units", "0x10"}};
    parse_fails(NTP_OP_FC, hex, 1, NTP_STATUS_PARSE_ERROR,
                "attribute 'units': expected a positive integer, got '0x10'");
    const kv huge[] = {{"units", "99999999999999999999"}};
    parse_fails(NTP_OP_FC, huge, 1, NTP_STATUS_OVERFLOW,
                "attribute 'units': integer '99999999999999999999' does not fit in 64 bits");
    const kv unitz[] = {{"unitz", "3"}};
    parse_fails(NTP_OP_FC, unitz, 1, NTP_STATUS_UNKNOWN_NAME, "unknown attribute 'unitz' on <fc>");
    const kv nan_max[] = {{"max", "nan"}};
    parse_fails(NTP_OP_RELU, nan_max, 1, NTP_STATUS_PARSE_ERROR,
                "attribute 'max': expected a finite number, got 'nan'");
    const kv neg_max[] = {{"max", "-1"}};
    parse_fails(NTP_OP_RELU, neg_max, 1, NTP_STATUS_PARSE_ERROR,
                "attribute 'max': expected a positive number, got '-1'");
    const kv clip_none[] = {{"name", "x"}};
    parse_fails(NTP_OP_CLIP, clip_none, 0, NTP_STATUS_PARSE_ERROR,
                "missing attribute 'min' or 'max' (at least one is required)");
    const kv clip_rev[] = {{"min", "3"}, {"max", "1"}};
    parse_fails(NTP_OP_CLIP, clip_rev, 2, NTP_STATUS_PARSE_ERROR,
                "'min' (3) is greater than 'max' (1)");
    const kv ratio[] = {{"ratio", "1"}};
    parse_fails(NTP_OP_DROPOUT, ratio, 1, NTP_STATUS_PARSE_ERROR,
                "attribute 'ratio': expected a number in [0, 1), got '1'");
    const kv eps[] = {{"epsilon", "0"}};
    parse_fails(NTP_OP_BATCHNORM, eps, 1, NTP_STATUS_PARSE_ERROR,
                "attribute 'epsilon': expected a positive number, got '0'");
}

static void test_attrs_layout_ops(void **state)
{
    (void)state;
    ntp_attrs a;
    int n_out = 0;
    PARSE_OK(NTP_OP_SPLIT, &a, &n_out, {"axis", "1"}, {"parts", "3"});
    assert_int_equal(n_out, 3);
    assert_int_equal(a.n_sizes, -3); /* negative: equal parts */
    PARSE_OK(NTP_OP_SPLIT, &a, &n_out, {"axis", "0"}, {"sizes", "1,2,3,4"});
    assert_int_equal(n_out, 4);
    assert_int_equal(a.n_sizes, 4);
    assert_int_equal(a.sizes[3], 4);
    PARSE_OK(NTP_OP_RESHAPE, &a, &n_out, {"shape", "0,-1,4"});
    assert_int_equal(a.n_shape, 3);
    assert_int_equal(a.shape[0], 0);
    assert_int_equal(a.shape[1], -1);
    PARSE_OK(NTP_OP_TRANSPOSE, &a, &n_out, {"perm", "0,2,1"});
    assert_int_equal(a.n_perm, 3);
    assert_int_equal(a.perm[1], 2);
    parse_none(NTP_OP_TRANSPOSE, &a, &n_out);
    assert_int_equal(a.n_perm, 0); /* default: reverse */
    PARSE_OK(NTP_OP_PAD, &a, &n_out, {"pads", "0,0,1,1,0,0,1,1"}, {"mode", "reflect"},
             {"value", "0.5"});
    assert_int_equal(a.n_pads, 8);
    assert_int_equal(a.pad_mode, NTP_PADMODE_REFLECT);
    assert_float_equal(a.value, 0.5, 0.0);
    PARSE_OK(NTP_OP_CONCAT, &a, &n_out, {"axis", "-1"});
    assert_int_equal(a.axis, -1);
    PARSE_OK(NTP_OP_CONVERT, &a, &n_out, {"to", "bfloat16"}, {"layout", "nhwc"});
    assert_true(a.has_to_dtype);
    assert_int_equal(a.to_dtype, NTP_DTYPE_BF16);
    assert_true(a.has_to_layout);
    assert_int_equal(a.to_layout, NTP_LAYOUT_NHWC);
    PARSE_OK(NTP_OP_EMBEDDING, &a, &n_out, {"vocab", "100"}, {"dim", "16"});
    assert_int_equal(a.vocab, 100);
    assert_int_equal(a.units, 16);

    const kv both[] = {{"axis", "1"}, {"parts", "2"}, {"sizes", "1,1"}};
    parse_fails(NTP_OP_SPLIT, both, 3, NTP_STATUS_PARSE_ERROR,
                "attributes 'sizes' and 'parts' conflict: give one");
    const kv neither[] = {{"axis", "1"}};
    parse_fails(NTP_OP_SPLIT, neither, 1, NTP_STATUS_PARSE_ERROR,
                "missing attribute 'sizes' or 'parts' (one is required)");
    const kv many[] = {{"axis", "1"}, {"parts", "9"}};
    parse_fails(NTP_OP_SPLIT, many, 2, NTP_STATUS_PARSE_ERROR,
                "attribute 'parts': a split has at most 8 outputs, got '9'");
    const kv no_axis[] = {{"parts", "2"}};
    parse_fails(NTP_OP_SPLIT, no_axis, 1, NTP_STATUS_PARSE_ERROR,
                "missing required attribute 'axis'");
    const kv two_inferred[] = {{"shape", "-1,-1"}};
    parse_fails(NTP_OP_RESHAPE, two_inferred, 1, NTP_STATUS_PARSE_ERROR,
                "attribute 'shape': at most one dimension may be -1, got '-1,-1'");
    const kv not_perm[] = {{"perm", "0,0,1"}};
    parse_fails(NTP_OP_TRANSPOSE, not_perm, 1, NTP_STATUS_PARSE_ERROR,
                "attribute 'perm': expected a permutation of 0..2, got '0,0,1'");
    const kv odd_pads[] = {{"pads", "1,1,1"}};
    parse_fails(NTP_OP_PAD, odd_pads, 1, NTP_STATUS_PARSE_ERROR,
                "attribute 'pads': expected 2 values per dimension (all begins, then all ends), "
                "got 3");
    const kv mode[] = {{"pads", "1,1"}, {"mode", "wrap"}};
    parse_fails(NTP_OP_PAD, mode, 2, NTP_STATUS_PARSE_ERROR,
                "attribute 'mode': expected constant, reflect or edge, got 'wrap'");
    const kv convert_none[] = {{"name", "x"}};
    parse_fails(NTP_OP_CONVERT, convert_none, 0, NTP_STATUS_PARSE_ERROR,
                "missing attribute 'to' or 'layout' (at least one is required)");
    const kv to_bad[] = {{"to", "f64"}};
    parse_fails(NTP_OP_CONVERT, to_bad, 1, NTP_STATUS_PARSE_ERROR,
                "attribute 'to': expected f32, bf16, f16, i8, u8, i32 or i64, got 'f64'; did you "
                "mean 'i64'?");
    const kv emb_both[] = {{"vocab", "10"}, {"units", "4"}, {"dim", "4"}};
    parse_fails(NTP_OP_EMBEDDING, emb_both, 3, NTP_STATUS_PARSE_ERROR,
                "attributes 'units' and 'dim' are the same: give one");
    const kv emb_vocab[] = {{"units", "4"}};
    parse_fails(NTP_OP_EMBEDDING, emb_vocab, 1, NTP_STATUS_PARSE_ERROR,
                "missing required attribute 'vocab'");
}

static void test_attrs_rnn_and_inlays(void **state)
{
    (void)state;
    ntp_attrs a;
    int n_out = 0;
    PARSE_OK(NTP_OP_LSTM, &a, &n_out, {"hidden", "32"}, {"direction", "bidirectional"},
             {"merge", "sum"}, {"sequence", "last"}, {"bias", "false"});
    assert_int_equal(a.units, 32);
    assert_int_equal(a.direction, NTP_DIR_BIDIRECTIONAL);
    assert_int_equal(a.merge, NTP_MERGE_SUM);
    assert_true(a.last_step);
    assert_false(a.bias);
    PARSE_OK(NTP_OP_RNN, &a, &n_out, {"units", "8"}, {"activation", "relu"},
             {"direction", "reverse"});
    assert_int_equal(a.rnn_act, NTP_RNN_ACT_RELU);
    assert_int_equal(a.direction, NTP_DIR_REVERSE);
    assert_false(a.last_step);
    parse_none(NTP_OP_MFCC, &a, &n_out);
    assert_int_equal(a.sample_rate, 16000);
    assert_int_equal(a.window, 400);
    assert_int_equal(a.hop, 160);
    assert_int_equal(a.n_fft, 512);
    assert_int_equal(a.mel_bands, 26);
    assert_int_equal(a.coefficients, 26);
    assert_int_equal(a.context, 9);
    PARSE_OK(NTP_OP_MFCC, &a, &n_out, {"fft", "1024"}, {"window", "800"}, {"context", "0"},
             {"coefficients", "13"});
    assert_int_equal(a.n_fft, 1024);
    assert_int_equal(a.window, 800);
    assert_int_equal(a.context, 0);
    assert_int_equal(a.coefficients, 13);
    parse_none(NTP_OP_CTC_DECODE, &a, &n_out);
    assert_string_equal(a.alphabet, " abcdefghijklmnopqrstuvwxyz'");
    assert_int_equal(a.decode, NTP_CTC_BEAM);
    assert_int_equal(a.beam_width, 16);
    free(a.alphabet);
    PARSE_OK(NTP_OP_CTC_DECODE, &a, &n_out, {"mode", "greedy"}, {"alphabet", " ab"},
             {"beam_width", "4"});
    assert_string_equal(a.alphabet, " ab");
    assert_int_equal(a.decode, NTP_CTC_GREEDY);
    assert_int_equal(a.beam_width, 4);
    free(a.alphabet);

    const kv typo[] = {{"units", "8"}, {"direction", "bidirectinal"}};
    parse_fails(NTP_OP_LSTM, typo, 2, NTP_STATUS_PARSE_ERROR,
                "attribute 'direction': expected forward, reverse or bidirectional, got "
                "'bidirectinal'; did you mean 'bidirectional'?");
    const kv act[] = {{"units", "8"}, {"activation", "relu"}};
    parse_fails(NTP_OP_LSTM, act, 2, NTP_STATUS_UNKNOWN_NAME,
                "unknown attribute 'activation' on <lstm>");
    const kv both[] = {{"units", "8"}, {"hidden", "8"}};
    parse_fails(NTP_OP_GRU, both, 2, NTP_STATUS_PARSE_ERROR,
                "attributes 'units' and 'hidden' are the same: give one");
    const kv fft[] = {{"fft", "500"}};
    parse_fails(NTP_OP_MFCC, fft, 1, NTP_STATUS_PARSE_ERROR,
                "attribute 'fft': expected a power of two, got '500'");
    const kv small_fft[] = {{"fft", "256"}};
    parse_fails(NTP_OP_MFCC, small_fft, 1, NTP_STATUS_PARSE_ERROR,
                "'fft' (256) must be at least 'window' (400)");
    const kv coeffs[] = {{"coefficients", "30"}};
    parse_fails(NTP_OP_MFCC, coeffs, 1, NTP_STATUS_PARSE_ERROR,
                "'coefficients' (30) must not exceed 'mel_bands' (26)");
    const kv mode[] = {{"mode", "beem"}};
    parse_fails(NTP_OP_CTC_DECODE, mode, 1, NTP_STATUS_PARSE_ERROR,
                "attribute 'mode': expected greedy or beam, got 'beem'; did you mean 'beam'?");
    const kv alpha[] = {{"alphabet", ""}};
    parse_fails(NTP_OP_CTC_DECODE, alpha, 1, NTP_STATUS_PARSE_ERROR,
                "attribute 'alphabet': expected at least one character");
}

/* Every declaration in op-attrs.c is complete for its type, names are
 * unique per op, and declared defaults lie in their declared range. */
static void test_attr_decls_consistent(void **state)
{
    (void)state;
    int total = 0;
    for (int op = 0; op < NTP_OP_COUNT; op++) {
        int n;
        const ntp_attr_decl *d = ntp__op_attrs((ntp_op)op, &n);
        total += n;
        for (int i = 0; i < n; i++) {
            const ntp_attr_decl *x = &d[i];
            for (int j = 0; j < i; j++)
                if (strcmp(d[j].name, x->name) == 0)
                    fail_msg("<%s> declares '%s' twice", ntp__op_name((ntp_op)op), x->name);
            if (x->type == NTP_ATTR_INTS)
                assert_true(x->count > 0 && x->max > 0 && x->field >= 0);
            if (x->type == NTP_ATTR_ENUM || x->type == NTP_ATTR_CHOICE)
                assert_true(x->names != NULL && x->n_names >= 2);
            if (x->type == NTP_ATTR_CHOICE)
                assert_int_equal(x->n_names, 2);
            if (x->type == NTP_ATTR_SPECIAL)
                assert_int_not_equal(x->parse, NTP_PARSE_NONE);
            if (x->write == NTP_WRITE_IF_HAS)
                assert_true(x->has > 0);
            if (!x->has_default)
                continue;
            if (x->type == NTP_ATTR_INT)
                assert_true(x->dflt >= (double)x->min);
            if (x->type == NTP_ATTR_ENUM)
                assert_true(x->dflt >= 0 && x->dflt < x->n_names);
            if (x->type == NTP_ATTR_FLOAT && x->range == NTP_RANGE_POSITIVE)
                assert_true(x->dflt > 0);
            if (x->type == NTP_ATTR_FLOAT && x->range == NTP_RANGE_NONNEG)
                assert_true(x->dflt >= 0);
        }
    }
    assert_true(total > 50);
}

/* The attributes that once shared fields with other ops now have their own:
 * lrn's bias is not epsilon, resize's coordinates are not the CTC decoder,
 * a constant's trainable is not the bias switch. */
static void test_attrs_own_fields(void **state)
{
    (void)state;
    ntp_attrs a;
    int n_out;
    PARSE_OK(NTP_OP_LRN, &a, &n_out, {"size", "5"}, {"bias", "2.5"}, {"beta", "0.5"});
    assert_int_equal(a.lrn.size, 5);
    assert_true(a.lrn.bias == 2.5 && a.lrn.beta == 0.5 && a.lrn.alpha == 1e-4);
    assert_true(a.epsilon == 1e-5 && a.bias && a.value == 0.0);
    assert_int_equal(a.n_kernel, 0);
    PARSE_OK(NTP_OP_RESIZE, &a, &n_out, {"sizes", "1,1,4,4"}, {"coordinates", "asymmetric"},
             {"nearest", "ceil"}, {"mode", "linear"});
    assert_int_equal(a.resize.coord, NTP_RESIZE_ASYMMETRIC);
    assert_int_equal(a.resize.nearest, NTP_RESIZE_CEIL);
    assert_int_equal(a.resize.mode, NTP_RESIZE_LINEAR);
    assert_true(a.resize.cubic_a == -0.75);
    assert_int_equal(a.decode, NTP_CTC_BEAM);
    assert_int_equal(a.rnn_act, NTP_RNN_ACT_TANH);
    assert_int_equal(a.pad_mode, NTP_PADMODE_CONSTANT);
    PARSE_OK(NTP_OP_CONSTANT, &a, &n_out, {"shape", "2"}, {"trainable", "false"});
    assert_false(a.constant.trainable);
    assert_true(a.bias);
    PARSE_OK(NTP_OP_SHRINK, &a, &n_out, {"bias", "0.25"});
    assert_true(a.shrink.bias == 0.25 && a.shrink.lambd == 0.5 && a.bias && a.value == 0.0);
}

/* Every op-specific attribute the reader accepts is documented in
 * docs/topology-format.md, and every attribute there is accepted. */
static void test_attr_tables_match_docs(void **state)
{
    (void)state;
    FILE *f = fopen(NTP_SOURCE_DIR "/docs/topology-format.md", "r");
    assert_non_null(f);
    static char doc[1 << 17];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    doc[n] = '\0';
    for (int op = 0; op < NTP_OP_COUNT; op++) {
        char row[64];
        snprintf(row, sizeof row, "\n| `<%s>` |", ntp__op_name((ntp_op)op));
        const char *r = strstr(doc, row);
        if (!r)
            print_error("docs/topology-format.md has no row for <%s>\n", ntp__op_name((ntp_op)op));
        assert_non_null(r);
        const char *end = strchr(r + 1, '\n');
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(end - r), r);
        const char *names[32];
        int k = ntp__xml_op_attr_names((ntp_op)op, names, 32);
        for (int i = 0; i < k; i++) {
            char quoted[64];
            snprintf(quoted, sizeof quoted, "`%s`", names[i]);
            if (!strstr(line, quoted))
                print_error("<%s>: attribute '%s' is not in its docs row: %s\n",
                            ntp__op_name((ntp_op)op), names[i], line);
            assert_non_null(strstr(line, quoted));
        }
        /* And the other way: every `word` in the row's attribute column is
         * accepted (the row is "| `<op>` | `a`, `b` | ..."). */
        const char *col = strchr(line + 2, '|');
        const char *col_end = col ? strchr(col + 1, '|') : NULL;
        assert_non_null(col_end);
        for (const char *p = strchr(col, '`'); p && p < col_end; p = strchr(p, '`')) {
            const char *q = strchr(p + 1, '`');
            char word[64];
            snprintf(word, sizeof word, "%.*s", (int)(q - p - 1), p + 1);
            if (strcmp(word, "—") != 0 && !ntp__xml_op_accepts((ntp_op)op, word))
                print_error("<%s>: the docs list '%s', the reader refuses it\n",
                            ntp__op_name((ntp_op)op), word);
            assert_true(ntp__xml_op_accepts((ntp_op)op, word));
            p = q + 1;
        }
    }
}

/* The example at the top of docs/topology-format.md loads as described. */
static void test_docs_example(void **state)
{
    (void)state;
    FILE *f = fopen(NTP_SOURCE_DIR "/docs/topology-format.md", "r");
    assert_non_null(f);
    static char doc[1 << 17];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    doc[n] = '\0';
    char *start = strstr(doc, "```xml\n");
    assert_non_null(start);
    start += 7;
    char *end = strstr(start, "```");
    assert_non_null(end);
    *end = '\0';
    ntp_graph *g = load(start);
    assert_string_equal(ntp_graph_name(g), "tiny");
    /* c1 r1 gap flat fc1 sp fc2 + 2 x (blk_fc, blk_res) */
    assert_int_equal(ntp_graph_layer_count(g), 11);
    assert_string_equal(in_name(g, "blk0_res", 1), "fc2");
    assert_string_equal(in_name(g, "blk1_res", 1), "blk0_res");
    assert_shape(out_shape(g, "fc1", 0), "[1,513]");
    int first, last;
    ntp_graph_marker_range(g, 0, &first, &last);
    assert_int_equal(first, 0);
    assert_int_equal(last, 4);
    ntp_graph_free(g);
}

/* --- files and sizes ---------------------------------------------------------- */

static void test_load_file(void **state)
{
    (void)state;
    ntp_graph *g = NULL;
    ntp_status st = ntp_graph_load(test_ctx, NTP_SOURCE_DIR "/models/tiny-mlp.xml", NULL, &g);
    if (st != NTP_STATUS_OK)
        print_error("%s\n", ntp_ctx_errmsg(test_ctx));
    assert_int_equal(st, NTP_STATUS_OK);
    assert_string_equal(ntp_graph_source(g), NTP_SOURCE_DIR "/models/tiny-mlp.xml");
    assert_true(ntp_graph_layer_count(g) > 0);
    ntp_graph_free(g);

    g = (ntp_graph *)&g;
    st = ntp_graph_load(test_ctx, NTP_BINARY_DIR "/no-such-file.xml", NULL, &g);
    assert_int_equal(st, NTP_STATUS_IO_ERROR);
    assert_null(g);
    assert_string_equal(ntp_ctx_errmsg(test_ctx),
                        NTP_BINARY_DIR "/no-such-file.xml: cannot open: No such file or directory");
}

/* A file over 64 MiB is refused from its size, before a byte is read: the
 * sparse file below would take a long time to parse if it were read. */
static void test_oversized_file(void **state)
{
    (void)state;
    char path[] = "/tmp/ntp-big-XXXXXX.xml";
    int fd = mkstemps(path, 4);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, ((off_t)64 << 20) + 1), 0);
    close(fd);
    ntp_graph *g = (ntp_graph *)&g;
    ntp_status st = ntp_graph_load(test_ctx, path, NULL, &g);
    char want[256];
    snprintf(want, sizeof want, "%s: the file is 67108865 bytes, more than the limit of 64 MiB",
             path);
    unlink(path);
    assert_int_equal(st, NTP_STATUS_PARSE_ERROR);
    assert_null(g);
    assert_string_equal(ntp_ctx_errmsg(test_ctx), want);
}

/* Names are hashed: a long repeated chain loads in linear time. */
static void test_many_layers(void **state)
{
    (void)state;
    ntp_graph *g = load("<topology name='long'>\n"
                        "  <input name='x' shape='1,4' dtype='f32'/>\n"
                        "  <repeat count='100' index='a'>\n"
                        "    <repeat count='200' index='b'>\n"
                        "      <relu name='r${a}_${b}'/>\n"
                        "      <alias name='al${a}_${b}'/>\n"
                        "    </repeat>\n"
                        "  </repeat>\n"
                        "  <add name='sum' inputs='r0_0,al99_199,r50_100'/>\n"
                        "</topology>\n");
    assert_int_equal(ntp_graph_layer_count(g), 20001);
    assert_string_equal(in_name(g, "r99_199", 0), "r99_198");
    assert_string_equal(in_name(g, "r1_0", 0), "r0_199");
    assert_string_equal(in_name(g, "sum", 1), "r99_199");
    assert_string_equal(in_name(g, "sum", 2), "r50_100");
    ntp_graph_free(g);
}

/* --- the schema ------------------------------------------------------------------ */

static char schema_errors[2048];

static void collect_error(void *user, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void collect_error(void *user, const char *fmt, ...)
{
    (void)user;
    size_t used = strlen(schema_errors);
    va_list ap;
    va_start(ap, fmt);
    if (used < sizeof schema_errors)
        vsnprintf(schema_errors + used, sizeof schema_errors - used, fmt, ap);
    va_end(ap);
}

static xmlRelaxNGPtr load_schema(void)
{
    schema_errors[0] = '\0';
    xmlRelaxNGParserCtxtPtr pc = xmlRelaxNGNewParserCtxt(NTP_SOURCE_DIR "/schema/topology.rng");
    assert_non_null(pc);
    xmlRelaxNGSetParserErrors(pc, collect_error, collect_error, NULL);
    xmlRelaxNGPtr schema = xmlRelaxNGParse(pc);
    xmlRelaxNGFreeParserCtxt(pc);
    if (!schema)
        print_error("schema/topology.rng does not parse: %s\n", schema_errors);
    assert_non_null(schema);
    return schema;
}

/* 0 if the document validates; messages in schema_errors. */
static int validate(xmlRelaxNGPtr schema, xmlDocPtr doc)
{
    schema_errors[0] = '\0';
    xmlRelaxNGValidCtxtPtr vc = xmlRelaxNGNewValidCtxt(schema);
    assert_non_null(vc);
    xmlRelaxNGSetValidErrors(vc, collect_error, collect_error, NULL);
    int rc = xmlRelaxNGValidateDoc(vc, doc);
    xmlRelaxNGFreeValidCtxt(vc);
    return rc;
}

static int validate_string(xmlRelaxNGPtr schema, const char *xml)
{
    xmlDocPtr doc = xmlReadMemory(xml, (int)strlen(xml), "mem.xml", NULL, XML_PARSE_NONET);
    assert_non_null(doc);
    int rc = validate(schema, doc);
    xmlFreeDoc(doc);
    return rc;
}

static void test_schema_validates_models(void **state)
{
    (void)state;
    xmlRelaxNGPtr schema = load_schema();
    DIR *d = opendir(NTP_SOURCE_DIR "/models");
    assert_non_null(d);
    int checked = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".xml") != 0)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/models/%s", NTP_SOURCE_DIR, e->d_name);
        xmlDocPtr doc = xmlReadFile(path, NULL, XML_PARSE_NONET);
        if (!doc)
            print_error("%s is not well-formed\n", path);
        assert_non_null(doc);
        int rc = validate(schema, doc);
        if (rc != 0)
            print_error("%s does not validate against schema/topology.rng: %s\n", path,
                        schema_errors);
        assert_int_equal(rc, 0);
        xmlFreeDoc(doc);
        /* And the reader agrees it is a valid topology. */
        ntp_graph *g = NULL;
        ntp_load_opts o = {.max_memory = -1};
        ntp_status st = ntp_graph_load(test_ctx, path, &o, &g);
        if (st != NTP_STATUS_OK)
            print_error("%s: %s\n", path, ntp_ctx_errmsg(test_ctx));
        assert_int_equal(st, NTP_STATUS_OK);
        ntp_graph_free(g);
        checked++;
    }
    closedir(d);
    /* An empty models/ must not pass silently. */
    if (checked == 0)
        print_error("no models/*.xml to validate\n");
    assert_true(checked > 0);
    xmlRelaxNGFree(schema);
}

static void test_schema_has_teeth(void **state)
{
    (void)state;
    xmlRelaxNGPtr schema = load_schema();
    const char *good = "<topology name='t' batch='${n}' precision='bf16'>"
                       "<param name='n' default='2'/>"
                       "<input name='x' shape='${n},3,8,8' dtype='f32' layout='nchw'/>"
                       "<repeat count='${n}' index='i'>"
                       "<conv name='c${i}' filters='4' kernel='3' pad='same' depthwise='${dw}'/>"
                       "<alias name='a${i}'/>"
                       "</repeat>"
                       "<split name='sp' axis='1' parts='2'/>"
                       "<lstm name='l' units='4' direction='bidirectional' inputs='sp:0'/>"
                       "<marker name='m' from='c0' to='sp'/>"
                       "</topology>";
    int rc = validate_string(schema, good);
    if (rc != 0)
        print_error("%s\n", schema_errors);
    assert_int_equal(rc, 0);
    const char *bad[] = {
        "<topology name='t'><fcc name='a' units='3'/></topology>",
        "<topology name='t'><fc name='a' unitz='3'/></topology>",
        "<topology name='t'><fc name='a'/></topology>",
        "<topology name='t'><fc name='a' units='abc'/></topology>",
        "<topology name='t'><lstm name='a' units='3' direction='bidirectinal'/></topology>",
        "<topology name='t'><conv name='a' filters='3' kernel='3' pad='sme'/></topology>",
        "<topology><relu name='a'/></topology>",
        "<topology name='t'><relu name='a' max='x'/></topology>",
        "<topology name='t'><param name='p'><relu name='a'/></param></topology>",
        "<topology name='t'><input name='x' shape='2,0,3'/><relu name='a'/></topology>",
        "<network name='t'><relu name='a'/></network>",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rc = validate_string(schema, bad[i]);
        if (rc == 0)
            print_error("the schema accepts %s\n", bad[i]);
        assert_int_not_equal(rc, 0);
    }
    xmlRelaxNGFree(schema);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_defaults),
        cmocka_unit_test(test_inputs_by_name_and_dag),
        cmocka_unit_test(test_split_outputs),
        cmocka_unit_test(test_aliases),
        cmocka_unit_test(test_repeat_expansion),
        cmocka_unit_test(test_nested_repeat),
        cmocka_unit_test(test_markers),
        cmocka_unit_test(test_params_defaults),
        cmocka_unit_test(test_params_overrides),
        cmocka_unit_test(test_param_without_default),
        cmocka_unit_test(test_backend_and_precision),
        cmocka_unit_test(test_input_layouts_and_dtypes),
        cmocka_unit_test(test_attrs_conv_and_pool),
        cmocka_unit_test(test_attrs_scalar_ops),
        cmocka_unit_test(test_attrs_layout_ops),
        cmocka_unit_test(test_attrs_rnn_and_inlays),
        cmocka_unit_test(test_attr_tables_match_docs),
        cmocka_unit_test(test_attr_decls_consistent),
        cmocka_unit_test(test_attrs_own_fields),
        cmocka_unit_test(test_docs_example),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_oversized_file),
        cmocka_unit_test(test_many_layers),
        cmocka_unit_test(test_schema_validates_models),
        cmocka_unit_test(test_schema_has_teeth),
    };
    return cmocka_run_group_tests(tests, test_ctx_setup, test_ctx_teardown);
}
