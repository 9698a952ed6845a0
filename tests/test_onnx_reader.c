/* The ONNX reader on models built here, node by node: symbolic dims and
 * their binding, folding of shape computations, Constant and Identity,
 * external data, Gemm's variants, bias folding, old-opset softmax, Mish
 * (an op the op table maps), the list of unsupported nodes, and .pb
 * inputs. Results are checked against values worked out by hand in the
 * comments. */
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

#include "exec/exec-impl.h"
#include "io/io-impl.h"
#include "io/onnx-impl.h"
#include "io/pb-impl.h"
#include "ntprof/ntprof.h"

/* --- a small model builder on protobuf-c's structs --------------------------------- */

typedef struct mb {
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto op;
    Onnx__OperatorSetIdProto *ops[1];
    void *mem[4096];
    int n_mem;
} mb;

static void *mem(mb *b, size_t n)
{
    assert_true(b->n_mem < 4096);
    void *p = calloc(1, n ? n : 1);
    assert_non_null(p);
    return b->mem[b->n_mem++] = p;
}

static char *str(mb *b, const char *s)
{
    char *c = mem(b, strlen(s) + 1);
    strcpy(c, s);
    return c;
}

// clang-format off
#define PUSH(b, arr, n, item)                                                       \
    do {                                                                            \
        void *nw = mem(b, ((n) + 1) * sizeof *(arr));                               \
        if (n)                                                                      \
            memcpy(nw, arr, (n) * sizeof *(arr));                                   \
        (arr) = nw;                                                                 \
        (arr)[(n)++] = (item);                                                      \
    } while (0)
// clang-format on

static void mb_init(mb *b, int opset)
{
    memset(b, 0, sizeof *b);
    onnx__model_proto__init(&b->m);
    onnx__graph_proto__init(&b->g);
    onnx__operator_set_id_proto__init(&b->op);
    b->op.domain = str(b, "");
    b->op.has_version = 1;
    b->op.version = opset;
    b->ops[0] = &b->op;
    b->m.has_ir_version = 1;
    b->m.ir_version = 8;
    b->m.n_opset_import = 1;
    b->m.opset_import = b->ops;
    b->m.graph = &b->g;
    b->g.name = str(b, "test");
}

/* A graph input or output; dims given as strings: "4" or "batch". */
static Onnx__ValueInfoProto *value(mb *b, const char *name, int32_t dt, int n, const char **dims)
{
    Onnx__ValueInfoProto *v = mem(b, sizeof *v);
    Onnx__TypeProto *t = mem(b, sizeof *t);
    Onnx__TypeProto__Tensor *tt = mem(b, sizeof *tt);
    Onnx__TensorShapeProto *sp = mem(b, sizeof *sp);
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(t);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sp);
    for (int i = 0; i < n; i++) {
        Onnx__TensorShapeProto__Dimension *d = mem(b, sizeof *d);
        onnx__tensor_shape_proto__dimension__init(d);
        if (dims[i][0] >= '0' && dims[i][0] <= '9') {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = atoll(dims[i]);
        } else {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = str(b, dims[i]);
        }
        PUSH(b, sp->dim, sp->n_dim, d);
    }
    tt->has_elem_type = 1;
    tt->elem_type = dt;
    tt->shape = sp;
    t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    t->tensor_type = tt;
    v->name = str(b, name);
    v->type = t;
    return v;
}

#define DIMS(...)                                                                         \
    (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)), (const char *[]) \
    {                                                                                     \
        __VA_ARGS__                                                                       \
    }

static void input(mb *b, const char *name, int32_t dt, int n, const char **dims)
{
    PUSH(b, b->g.input, b->g.n_input, value(b, name, dt, n, dims));
}

static void output(mb *b, const char *name)
{
    PUSH(b, b->g.output, b->g.n_output, value(b, name, NTP_ONNX_FLOAT, 0, NULL));
}

static Onnx__NodeProto *node(mb *b, const char *op, const char *name, const char *ins,
                             const char *outs)
{
    Onnx__NodeProto *n = mem(b, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = str(b, op);
    n->name = str(b, name);
    char buf[512];
    snprintf(buf, sizeof buf, "%s", ins);
    for (char *s = strtok(buf, ","); s; s = strtok(NULL, ","))
        PUSH(b, n->input, n->n_input, str(b, strcmp(s, "-") ? s : ""));
    snprintf(buf, sizeof buf, "%s", outs);
    for (char *s = strtok(buf, ","); s; s = strtok(NULL, ","))
        PUSH(b, n->output, n->n_output, str(b, s));
    PUSH(b, b->g.node, b->g.n_node, n);
    return n;
}

static Onnx__AttributeProto *attr(mb *b, Onnx__NodeProto *n, const char *name, int type)
{
    Onnx__AttributeProto *a = mem(b, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = str(b, name);
    a->has_type = 1;
    a->type = type;
    PUSH(b, n->attribute, n->n_attribute, a);
    return a;
}

static void attr_i(mb *b, Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

static void attr_f(mb *b, Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

static Onnx__TensorProto *tensor(mb *b, const char *name, int32_t dt, int nd, const int64_t *dims,
                                 const void *raw, size_t bytes)
{
    Onnx__TensorProto *t = mem(b, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = str(b, name);
    t->has_data_type = 1;
    t->data_type = dt;
    t->n_dims = (size_t)nd;
    t->dims = mem(b, (size_t)(nd + 1) * sizeof *t->dims);
    memcpy(t->dims, dims, (size_t)nd * sizeof *dims);
    if (raw) {
        t->has_raw_data = 1;
        t->raw_data.data = mem(b, bytes);
        memcpy(t->raw_data.data, raw, bytes);
        t->raw_data.len = bytes;
    }
    return t;
}

static void init_f32(mb *b, const char *name, int nd, const int64_t *dims, const float *v)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= dims[i];
    PUSH(b, b->g.initializer, b->g.n_initializer,
         tensor(b, name, NTP_ONNX_FLOAT, nd, dims, v, (size_t)n * sizeof *v));
}

static void init_i64(mb *b, const char *name, int n, const int64_t *v)
{
    int64_t d = n;
    PUSH(b, b->g.initializer, b->g.n_initializer,
         tensor(b, name, NTP_ONNX_INT64, 1, &d, v, (size_t)n * sizeof *v));
}

static void mb_write(mb *b, const char *path)
{
    size_t len = onnx__model_proto__get_packed_size(&b->m);
    uint8_t *buf = malloc(len + 1);
    assert_non_null(buf);
    onnx__model_proto__pack(&b->m, buf);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    fclose(f);
    free(buf);
    for (int i = 0; i < b->n_mem; i++)
        free(b->mem[i]);
}

/* --- loading and running --------------------------------------------------------------- */

static ntp_ctx *ctx;
static char dir[64];

static int setup(void **state)
{
    (void)state;
    ctx = ntp_ctx_init();
    snprintf(dir, sizeof dir, "/tmp/ntp-onnx-reader-XXXXXX");
    return ctx && mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    int rc = system(cmd);
    ntp_ctx_free(ctx);
    return rc;
}

static const char *path_of(const char *name)
{
    static char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static ntp_graph *load(const char *file, const ntp_load_opts *o)
{
    ntp_graph *g = NULL;
    ntp_status st = ntp_graph_load(ctx, path_of(file), o, &g);
    if (st)
        print_error("%s\n", ntp_ctx_errmsg(ctx));
    assert_int_equal(st, NTP_STATUS_OK);
    return g;
}

static void load_fails(const char *file, const ntp_load_opts *o, ntp_status want_st,
                       const char *want)
{
    ntp_graph *g = NULL;
    ntp_status st = ntp_graph_load(ctx, path_of(file), o, &g);
    char full[512];
    snprintf(full, sizeof full, "%s: %s", path_of(file), want);
    if (st != want_st || strcmp(ntp_ctx_errmsg(ctx), full) != 0)
        print_error("got  %s\nwant %s\n", ntp_ctx_errmsg(ctx), full);
    assert_int_equal(st, want_st);
    assert_string_equal(ntp_ctx_errmsg(ctx), full);
    assert_null(g);
}

/* Run g once on the reference backend with graph input 0 = x (f32), and
 * copy output 0 into y (n values). */
static void run1(const ntp_graph *g, const float *x, float *y, int64_t n)
{
    char npy[300], spec[400];
    snprintf(npy, sizeof npy, "%s/in.npy", dir);
    ntp_shape s = ntp_graph_input_shape(g, 0);
    assert_int_equal(ntp__npy_write(ctx, npy, NTP_DTYPE_F32, &s, x), NTP_STATUS_OK);
    snprintf(spec, sizeof spec, "%s=%s", ntp_graph_input_name(g, 0), npy);
    const char *specs[1] = {spec};
    ntp_exec e;
    ntp_exec_opts eo = {.backend = ntp__backend_find("ref"),
                        .threads = 1,
                        .seed = 1,
                        .inputs = specs,
                        .n_inputs = 1,
                        .first = 0,
                        .last = ntp_graph_layer_count(g) - 1};
    assert_int_equal(ntp__exec_init(ctx, &e, g, &eo), NTP_STATUS_OK);
    assert_int_equal(ntp__exec_steps(ctx, &e, 0, e.n_steps - 1), NTP_STATUS_OK);
    ntp_shape os = ntp_graph_output_shape(g, 0);
    assert_int_equal(ntp_shape_numel(&os), n);
    ntp_dtype dt;
    assert_true(ntp__exec_output(&e, 0, y, &dt));
    ntp__exec_free(&e);
}

static void expect(const float *got, const float *want, int n)
{
    for (int i = 0; i < n; i++)
        assert_float_equal(got[i], want[i], 1e-5f * fmaxf(1.0f, fabsf(want[i])));
}

/* --- tests ---------------------------------------------------------------------------- */

/* x [batch_size, 3, seq] -> Relu. --batch binds the batch-like dim, --set
 * the others; params record both. */
static void test_symbolic_dims(void **state)
{
    (void)state;
    mb b;
    mb_init(&b, 13);
    input(&b, "x", NTP_ONNX_FLOAT, DIMS("batch_size", "3", "seq"));
    node(&b, "Relu", "relu", "x", "y");
    output(&b, "y");
    mb_write(&b, path_of("sym.onnx"));

    const char *set[1] = {"seq=5"};
    ntp_load_opts o = {.set = set, .n_set = 1, .batch = 4};
    ntp_graph *g = load("sym.onnx", &o);
    ntp_shape s = ntp_graph_input_shape(g, 0);
    char buf[64];
    assert_string_equal(ntp_shape_str(&s, buf, sizeof buf), "[4,3,5]");
    assert_int_equal(ntp_graph_param_count(g), 3);
    assert_string_equal(ntp_graph_param_name(g, 0), "batch");
    assert_string_equal(ntp_graph_param_value(g, 0), "4");
    assert_string_equal(ntp_graph_param_name(g, 1), "batch_size");
    assert_string_equal(ntp_graph_param_name(g, 2), "seq");
    assert_string_equal(ntp_graph_param_value(g, 2), "5");
    assert_int_equal(ntp_graph_batch(g), 4);
    ntp_graph_free(g);

    /* A precision override that is no compute precision is refused as the
     * markup reader refuses it (one check, in the loader). */
    ntp_load_opts i32 = {.set = set, .n_set = 1, .set_precision = true, .precision = NTP_DTYPE_I32};
    g = NULL;
    assert_int_equal(ntp_graph_load(ctx, path_of("sym.onnx"), &i32, &g),
                     NTP_STATUS_INVALID_ARGUMENT);
    assert_string_equal(ntp_ctx_errmsg(ctx),
                        "precision override: 'i32' is not a compute precision: "
                        "expected f32, bf16, f16 or i8");
    assert_null(g);
    ntp_ctx_clear(ctx);
    o.set_precision = true;
    o.precision = NTP_DTYPE_F16;
    g = load("sym.onnx", &o);
    assert_int_equal(ntp_graph_precision(g), NTP_DTYPE_F16);
    ntp_graph_free(g);
    o.set_precision = false;

    /* Without --batch: batch 1, with a warning; without seq: refused. */
    o.batch = 0;
    g = load("sym.onnx", &o);
    s = ntp_graph_input_shape(g, 0);
    assert_int_equal(s.dim[0], 1);
    assert_int_equal(ntp_graph_batch(g), 1);
    assert_int_equal(ntp_ctx_warning_count(ctx), 1);
    ntp_ctx_clear_warnings(ctx);
    ntp_graph_free(g);
    ntp_load_opts none = {0};
    load_fails("sym.onnx", &none, NTP_STATUS_INVALID_ARGUMENT,
               "input 'x' dim 2 is symbolic ('seq'): give its value with ntp_load_opts.set seq=N");
    const char *bad[2] = {"seq=5", "sqe=3"};
    ntp_load_opts typo = {.set = bad, .n_set = 2};
    ntp_graph *g2 = NULL;
    assert_int_equal(ntp_graph_load(ctx, path_of("sym.onnx"), &typo, &g2), NTP_STATUS_UNKNOWN_NAME);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "ntp_load_opts.set sqe=3: "));
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "has no symbolic dim 'sqe'"));
    ntp_ctx_clear_warnings(ctx);
}

/* x [2, 3, 4] -> Shape -> Gather(0) -> Unsqueeze -> Concat(-1) -> Reshape:
 * PyTorch's x.view(x.size(0), -1), folded to one reshape to [2, 12]. */
static void test_shape_folding(void **state)
{
    (void)state;
    mb b;
    mb_init(&b, 13);
    input(&b, "x", NTP_ONNX_FLOAT, DIMS("2", "3", "4"));
    init_i64(&b, "zero", 1, (const int64_t[]){0});
    init_i64(&b, "minus1", 1, (const int64_t[]){-1});
    node(&b, "Shape", "shape", "x", "s");
    Onnx__NodeProto *ga = node(&b, "Gather", "gather", "s,zero", "n");
    attr_i(&b, ga, "axis", 0);
    Onnx__NodeProto *c = node(&b, "Concat", "concat", "n,minus1", "shape2");
    attr_i(&b, c, "axis", 0);
    node(&b, "Reshape", "view", "x,shape2", "y");
    output(&b, "y");
    mb_write(&b, path_of("fold.onnx"));
    ntp_graph *g = load("fold.onnx", NULL);
    assert_int_equal(ntp_graph_layer_count(g), 1);
    assert_string_equal(ntp_graph_layer_type(g, 0), "reshape");
    assert_string_equal(ntp_graph_layer_name(g, 0), "view");
    ntp_shape s = ntp_graph_output_shape(g, 0);
    assert_int_equal(s.ndim, 2);
    assert_int_equal(s.dim[0], 2);
    assert_int_equal(s.dim[1], 12);
    ntp_graph_free(g);
}

/* y = x + Identity(w) * Constant(2): the Identity aliases the initializer,
 * the Constant is folded into... a <constant> layer the mul reads. */
static void test_constant_identity(void **state)
{
    (void)state;
    mb b;
    mb_init(&b, 13);
    input(&b, "x", NTP_ONNX_FLOAT, DIMS("3"));
    init_f32(&b, "w", 1, (const int64_t[]){3}, (const float[]){1, 2, 3});
    node(&b, "Identity", "id", "w", "w2");
    Onnx__NodeProto *k = node(&b, "Constant", "two", "", "c");
    Onnx__AttributeProto *a =
        attr(&b, k, "value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = 2.0f;
    /* w2 * c is folded at load time: [2, 4, 6]. */
    node(&b, "Mul", "mul", "w2,c", "wc");
    node(&b, "Add", "add", "x,wc", "y");
    output(&b, "y");
    mb_write(&b, path_of("const.onnx"));
    ntp_graph *g = load("const.onnx", NULL);
    /* A <constant> holding [2, 4, 6] and the add. */
    assert_int_equal(ntp_graph_layer_count(g), 2);
    assert_string_equal(ntp_graph_layer_type(g, 0), "constant");
    assert_string_equal(ntp_graph_layer_type(g, 1), "add");
    float y[3];
    run1(g, (const float[]){10, 20, 30}, y, 3);
    expect(y, (const float[]){12, 24, 36}, 3);
    ntp_graph_free(g);
}

/* W from an external file next to the model, at an offset. */
static void test_external_data(void **state)
{
    (void)state;
    float data[6] = {99, 99, 1, 2, 3, 4};
    FILE *f = fopen(path_of("weights.bin"), "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, sizeof *data, 6, f), 6);
    fclose(f);
    mb b;
    mb_init(&b, 13);
    input(&b, "x", NTP_ONNX_FLOAT, DIMS("1", "2"));
    int64_t wd[2] = {2, 2};
    Onnx__TensorProto *t = tensor(&b, "W", NTP_ONNX_FLOAT, 2, wd, NULL, 0);
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    const char *kv[3][2] = {{"location", "weights.bin"}, {"offset", "8"}, {"length", "16"}};
    for (int i = 0; i < 3; i++) {
        Onnx__StringStringEntryProto *e = mem(&b, sizeof *e);
        onnx__string_string_entry_proto__init(e);
        e->key = str(&b, kv[i][0]);
        e->value = str(&b, kv[i][1]);
        PUSH(&b, t->external_data, t->n_external_data, e);
    }
    PUSH(&b, b.g.initializer, b.g.n_initializer, t);
    node(&b, "MatMul", "mm", "x,W", "y");
    output(&b, "y");
    mb_write(&b, path_of("external.onnx"));
    ntp_graph *g = load("external.onnx", NULL);
    /* x [5, 7] @ W [[1, 2], [3, 4]] = [5 + 21, 10 + 28]. */
    float y[2];
    run1(g, (const float[]){5, 7}, y, 2);
    expect(y, (const float[]){26, 38}, 2);
    ntp_graph_free(g);
}

/* Gemm with transB=0, alpha 2, beta 0.5 and a vector C: one fc layer. */
static void test_gemm(void **state)
{
    (void)state;
    mb b;
    mb_init(&b, 13);
    input(&b, "a", NTP_ONNX_FLOAT, DIMS("1", "2"));
    init_f32(&b, "B", 2, (const int64_t[]){2, 3}, (const float[]){1, 2, 3, 4, 5, 6});
    init_f32(&b, "C", 1, (const int64_t[]){3}, (const float[]){2, 4, 6});
    Onnx__NodeProto *n = node(&b, "Gemm", "gemm", "a,B,C", "y");
    attr_f(&b, n, "alpha", 2.0f);
    attr_f(&b, n, "beta", 0.5f);
    output(&b, "y");
    mb_write(&b, path_of("gemm.onnx"));
    ntp_graph *g = load("gemm.onnx", NULL);
    assert_int_equal(ntp_graph_layer_count(g), 1);
    assert_string_equal(ntp_graph_layer_type(g, 0), "fc");
    /* a [1, 1] @ B = [5, 7, 9]; 2x that + 0.5 C = [11, 16, 21]. */
    float y[3];
    run1(g, (const float[]){1, 1}, y, 3);
    expect(y, (const float[]){11, 16, 21}, 3);
    ntp_graph_free(g);
}

/* MatMul with an initializer and a bias Add: one fc with bias; params
 * 2·3 + 3. */
static void test_bias_fold(void **state)
{
    (void)state;
    mb b;
    mb_init(&b, 13);
    input(&b, "x", NTP_ONNX_FLOAT, DIMS("4", "5", "2"));
    init_f32(&b, "W", 2, (const int64_t[]){2, 3}, (const float[]){1, 0, 1, 0, 1, 1});
    init_f32(&b, "bias", 1, (const int64_t[]){3}, (const float[]){0.5f, -0.5f, 1});
    node(&b, "MatMul", "linear", "x,W", "mm");
    node(&b, "Add", "add", "mm,bias", "y");
    output(&b, "y");
    mb_write(&b, path_of("bias.onnx"));
    ntp_graph *g = load("bias.onnx", NULL);
    assert_int_equal(ntp_graph_layer_count(g), 1);
    assert_string_equal(ntp_graph_layer_type(g, 0), "fc");
    assert_string_equal(ntp_graph_layer_name(g, 0), "linear");
    assert_string_equal(ntp_graph_output_name(g, 0), "y");
    ntp_analysis *a = NULL;
    assert_int_equal(ntp_graph_analyze(ctx, g, &a), NTP_STATUS_OK);
    assert_int_equal(a->params, 9);
    ntp_analysis_free(a);
    ntp_graph_free(g);
}

/* Softmax at opset 11 with axis 1 on [2, 2, 2]: each sample's 4 values as
 * one row. */
static void test_softmax_opset11(void **state)
{
    (void)state;
    mb b;
    mb_init(&b, 11);
    input(&b, "x", NTP_ONNX_FLOAT, DIMS("2", "2", "2"));
    node(&b, "Softmax", "sm", "x", "y");
    output(&b, "y");
    mb_write(&b, path_of("sm11.onnx"));
    ntp_graph *g = load("sm11.onnx", NULL);
    float y[8];
    const float x[8] = {0, 0, 0, 0, 1, 2, 3, 4};
    run1(g, x, y, 8);
    /* Sample 1: e^(k-4) / (1 + e^-1 + e^-2 + e^-3) for k = 1..4. */
    double s = 1 + exp(-1) + exp(-2) + exp(-3);
    expect(y,
           (const float[]){0.25f, 0.25f, 0.25f, 0.25f, (float)(exp(-3) / s), (float)(exp(-2) / s),
                           (float)(exp(-1) / s), (float)(1 / s)},
           8);
    ntp_graph_free(g);
}

/* A Mish node is the mish layer, its values PyTorch's
 * (torch.nn.functional.mish on float64). Mish is an opset-18 operator; the
 * reader takes models up to opset 17 (docs/onnx.md), so the model declares
 * 17: the op table's ONNX column maps the node whatever the opset. */
static void test_mish(void **state)
{
    (void)state;
    mb b;
    mb_init(&b, 17);
    input(&b, "x", NTP_ONNX_FLOAT, DIMS("4"));
    node(&b, "Mish", "mish", "x", "y");
    output(&b, "y");
    mb_write(&b, path_of("mish.onnx"));
    ntp_graph *g = load("mish.onnx", NULL);
    assert_int_equal(g->n_nodes, 1);
    assert_int_equal(g->nodes[0].op, NTP_OP_MISH);
    float y[4];
    const float x[4] = {-5, -0.5f, 1, 20};
    run1(g, x, y, 4);
    expect(y,
           (const float[]){-0.033576237730161704f, -0.22074377465173f, 0.8650983882673103f, 20.0f},
           4);
    ntp_graph_free(g);
}

/* 40 unsupported nodes: one error naming the first ones and counting the
 * rest by type, and one warning per node. */
static void test_unsupported_list(void **state)
{
    (void)state;
    mb b;
    mb_init(&b, 13);
    input(&b, "x", NTP_ONNX_FLOAT, DIMS("4"));
    for (int i = 0; i < 40; i++) {
        char name[32], out[32];
        snprintf(name, sizeof name, "unique_%d", i);
        snprintf(out, sizeof out, "u%d", i);
        node(&b, "Unique", name, "x", out);
        output(&b, out);
    }
    mb_write(&b, path_of("many.onnx"));
    ntp_graph *g = NULL;
    assert_int_equal(ntp_graph_load(ctx, path_of("many.onnx"), NULL, &g), NTP_STATUS_UNSUPPORTED);
    const char *m = ntp_ctx_errmsg(ctx);
    assert_non_null(strstr(m, ": 40 unsupported nodes: 'unique_0' (Unique, opset 13), "
                              "'unique_1' (Unique, opset 13)"));
    assert_non_null(strstr(m, " more (Unique x"));
    assert_int_equal(ntp_ctx_warning_count(ctx), 40);
    assert_non_null(
        strstr(ntp_ctx_warning(ctx, 39), "unsupported node 'unique_39' (Unique, opset 13)"));
    ntp_ctx_clear_warnings(ctx);
}

/* A TensorProto file as an input: f32 handed over as is, f16 kept f16. */
static void test_pb_input(void **state)
{
    (void)state;
    mb b;
    mb_init(&b, 13);
    int64_t d[2] = {2, 2};
    Onnx__TensorProto *t =
        tensor(&b, "x", NTP_ONNX_FLOAT, 2, d, (const float[]){1, -2, 3.5f, 4}, 16);
    size_t len = onnx__tensor_proto__get_packed_size(t);
    uint8_t buf[256];
    onnx__tensor_proto__pack(t, buf);
    FILE *f = fopen(path_of("x.pb"), "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    fclose(f);
    ntp_npy a;
    assert_int_equal(ntp__pb_read(ctx, path_of("x.pb"), &a), NTP_STATUS_OK);
    assert_int_equal(a.dtype, NTP_DTYPE_F32);
    assert_int_equal(a.shape.ndim, 2);
    assert_int_equal(a.nbytes, 16);
    expect(a.data, (const float[]){1, -2, 3.5f, 4}, 4);
    ntp__npy_free(&a);
    /* FLOAT16 in int32_data: 0x3c00 = 1, 0xc000 = -2. */
    t->data_type = NTP_ONNX_FLOAT16;
    t->has_raw_data = 0;
    t->n_dims = 1;
    t->dims[0] = 2;
    int32_t h[2] = {0x3c00, 0xc000};
    t->n_int32_data = 2;
    t->int32_data = h;
    len = onnx__tensor_proto__get_packed_size(t);
    onnx__tensor_proto__pack(t, buf);
    t->n_int32_data = 0;
    t->int32_data = NULL;
    f = fopen(path_of("h.pb"), "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    fclose(f);
    assert_int_equal(ntp__pb_read(ctx, path_of("h.pb"), &a), NTP_STATUS_OK);
    assert_int_equal(a.dtype, NTP_DTYPE_F16);
    assert_int_equal(((uint16_t *)a.data)[0], 0x3c00);
    assert_int_equal(((uint16_t *)a.data)[1], 0xc000);
    ntp__npy_free(&a);
    for (int i = 0; i < b.n_mem; i++)
        free(b.mem[i]);
    /* Not a TensorProto. */
    f = fopen(path_of("bad.pb"), "wb");
    fputs("\x0a\x03"
          "abc",
          f);
    fclose(f);
    assert_int_equal(ntp__pb_read(ctx, path_of("bad.pb"), &a), NTP_STATUS_PARSE_ERROR);
    assert_non_null(
        strstr(ntp_ctx_errmsg(ctx), "not an ONNX TensorProto file (it has no data type)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symbolic_dims),
        cmocka_unit_test(test_shape_folding),
        cmocka_unit_test(test_constant_identity),
        cmocka_unit_test(test_external_data),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_bias_fold),
        cmocka_unit_test(test_softmax_opset11),
        cmocka_unit_test(test_mish),
        cmocka_unit_test(test_unsupported_list),
        cmocka_unit_test(test_pb_input),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
