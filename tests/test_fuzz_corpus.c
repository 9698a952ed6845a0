/* Every fuzz harness (fuzz/fuzz_*.c) over its whole seed corpus
 * (fuzz/corpus/<name>/), in every build: the crashes the fuzzers found are
 * kept there, so this replays each of them as a regression test (under
 * ASan and UBSan in the sanitizer build, where a report fails the test),
 * and it keeps the harnesses compiling and working where libFuzzer is not
 * built (gcc). The fuzzing itself is tests/test_*_fuzz.sh.
 *
 * The harnesses read from memory (ntp__npy_read_memory, ntp__pb_read_memory,
 * ntp__store_open_image) what ntprof reads from files; the tests at the end
 * check that the two ways in agree (status, message, data) on every seed
 * and on every truncation of it, so the fuzzers test what the files get. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/tmpdir.h"

#define LLVMFuzzerTestOneInput fuzz_onnx_one
#define LLVMFuzzerInitialize fuzz_onnx_init
#include "../fuzz/fuzz_onnx.c"
#undef LLVMFuzzerTestOneInput
#undef LLVMFuzzerInitialize
#define LLVMFuzzerTestOneInput fuzz_markup_one
#define LLVMFuzzerInitialize fuzz_markup_init
#include "../fuzz/fuzz_markup.c"
#undef LLVMFuzzerTestOneInput
#undef LLVMFuzzerInitialize
#define LLVMFuzzerTestOneInput fuzz_npy_one
#define LLVMFuzzerInitialize fuzz_npy_init
#include "../fuzz/fuzz_npy.c"
#undef LLVMFuzzerTestOneInput
#undef LLVMFuzzerInitialize
#define LLVMFuzzerTestOneInput fuzz_store_one
#define LLVMFuzzerInitialize fuzz_store_init
#include "../fuzz/fuzz_store.c"
#undef LLVMFuzzerTestOneInput
#undef LLVMFuzzerInitialize

typedef int (*harness)(const uint8_t *, size_t);
typedef int (*harness_init)(int *, char ***);

/* Run h on every file of fuzz/corpus/<name>/; the number of files. */
static int replay(const char *name, harness_init init, harness h)
{
    if (init)
        assert_int_equal(init(NULL, NULL), 0);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/fuzz/corpus/%s", NTP_SOURCE_DIR, name);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        static uint8_t buf[1 << 20];
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        /* What libFuzzer hands over: a buffer of exactly len bytes. */
        uint8_t *copy = malloc(len ? len : 1);
        assert_non_null(copy);
        memcpy(copy, buf, len);
        assert_int_equal(h(copy, len), 0);
        free(copy);
        n++;
    }
    closedir(d);
    return n;
}

static void test_onnx(void **state)
{
    (void)state;
    assert_true(replay("onnx", NULL, fuzz_onnx_one) >= 10);
}

static void test_markup(void **state)
{
    (void)state;
    assert_true(replay("markup", NULL, fuzz_markup_one) >= 10);
}

static void test_npy(void **state)
{
    (void)state;
    assert_true(replay("npy", fuzz_npy_init, fuzz_npy_one) >= 5);
}

static void test_store(void **state)
{
    (void)state;
    assert_true(replay("store", fuzz_store_init, fuzz_store_one) >= 2);
}

/* The bytes of fuzz/corpus/<dir>/<file>, malloc'd; *len their number. */
static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    uint8_t *b = malloc(1 << 20);
    assert_non_null(b);
    *len = fread(b, 1, 1 << 20, f);
    fclose(f);
    return b;
}

static void spill(const char *path, const uint8_t *b, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* The file reader and the memory reader of .npy (pb: of .pb) on len bytes:
 * the same status, the same message (the memory reader is given the file's
 * name), the same array. */
static void same_array(const uint8_t *b, size_t len, bool pb)
{
    char path[600];
    snprintf(path, sizeof path, "%s/x.%s", test_tmpdir, pb ? "pb" : "npy");
    spill(path, b, len);
    ntp_ctx *cf = ntp_ctx_init(), *cm = ntp_ctx_init();
    ntp_npy f, m;
    ntp_status sf = pb ? ntp__pb_read(cf, path, &f) : ntp__npy_read(cf, path, &f);
    ntp_status sm =
        pb ? ntp__pb_read_memory(cm, path, b, len, &m) : ntp__npy_read_memory(cm, path, b, len, &m);
    assert_int_equal(sf, sm);
    assert_string_equal(ntp_ctx_errmsg(cf), ntp_ctx_errmsg(cm));
    if (sf == NTP_STATUS_OK) {
        assert_int_equal(f.dtype, m.dtype);
        assert_int_equal(f.shape.ndim, m.shape.ndim);
        for (int d = 0; d < f.shape.ndim; d++)
            assert_int_equal(f.shape.dim[d], m.shape.dim[d]);
        assert_int_equal(f.nbytes, m.nbytes);
        assert_memory_equal(f.data, m.data, (size_t)f.nbytes);
        ntp__npy_free(&f);
        ntp__npy_free(&m);
    }
    ntp_ctx_free(cf);
    ntp_ctx_free(cm);
}

/* Every .npy and .pb seed, whole and cut at many lengths, both ways. */
static void test_npy_file_and_memory(void **state)
{
    (void)state;
    static const char *const seeds[] = {"npy/f16-1x2x2.npy", "npy/f32-2x3.npy",   "npy/i64-4.npy",
                                        "npy/i8-empty.npy",  "npy/u8-scalar.npy", "npy/f32-2x3.pb",
                                        "npy/i32-3.pb",      "onnx/tensor.pb"};
    int whole_ok = 0;
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/fuzz/corpus/%s", NTP_SOURCE_DIR, seeds[i]);
        size_t len;
        uint8_t *b = slurp(path, &len);
        bool pb = strstr(seeds[i], ".pb") != NULL;
        /* Every cut through the preamble and the start of the header, then
         * every fifth byte, and the last two. */
        for (size_t cut = 0; cut <= len; cut += cut < 16 ? 1 : 5)
            same_array(b, cut, pb);
        same_array(b, len - 1, pb);
        same_array(b, len, pb);
        ntp_ctx *ctx = ntp_ctx_init();
        ntp_npy a;
        if ((pb ? ntp__pb_read_memory(ctx, seeds[i], b, len, &a)
                : ntp__npy_read_memory(ctx, seeds[i], b, len, &a)) == NTP_STATUS_OK) {
            whole_ok++;
            ntp__npy_free(&a);
        }
        ntp_ctx_free(ctx);
        free(b);
    }
    /* Each seed is a valid array (they are what numpy and onnx write). */
    assert_int_equal(whole_ok, 8);
    /* A known one by value: f32-2x3.npy holds 2 x 3 floats. */
    char path[1024];
    snprintf(path, sizeof path, "%s/fuzz/corpus/npy/f32-2x3.npy", NTP_SOURCE_DIR);
    size_t len;
    uint8_t *b = slurp(path, &len);
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_npy a;
    assert_int_equal(ntp__npy_read_memory(ctx, "f32-2x3.npy", b, len, &a), NTP_STATUS_OK);
    assert_int_equal(a.dtype, NTP_DTYPE_F32);
    assert_int_equal(a.shape.ndim, 2);
    assert_int_equal(a.shape.dim[0], 2);
    assert_int_equal(a.shape.dim[1], 3);
    assert_int_equal(a.nbytes, 24);
    ntp__npy_free(&a);
    /* One byte short, then one too many: refused by the size check. */
    assert_int_equal(ntp__npy_read_memory(ctx, "f32-2x3.npy", b, len - 1, &a),
                     NTP_STATUS_PARSE_ERROR);
    assert_non_null(strstr(ntp_ctx_errmsg(ctx), "holds 23 bytes, its shape needs 24"));
    ntp_ctx_free(ctx);
    free(b);
}

/* A history opened from its file and from its image: the same status and
 * message, and the same runs. */
static void same_history(const char *path, const uint8_t *b, size_t len)
{
    ntp_ctx *cf = ntp_ctx_init(), *cm = ntp_ctx_init();
    ntp_store *sf = NULL, *sm = NULL;
    ntp_status stf = ntp_store_open(cf, path, NTP_STORE_READ_ONLY, &sf);
    ntp_status stm = ntp__store_open_image(cm, b, len, path, &sm);
    assert_int_equal(stf, stm);
    assert_string_equal(ntp_ctx_errmsg(cf), ntp_ctx_errmsg(cm));
    if (stf == NTP_STATUS_OK) {
        int64_t nf = -1, nm = -2;
        assert_int_equal(ntp_store_count(cf, sf, &nf), NTP_STATUS_OK);
        assert_int_equal(ntp_store_count(cm, sm, &nm), NTP_STATUS_OK);
        assert_int_equal(nf, nm);
        ntp_history_entry *ef = NULL, *em = NULL;
        int kf = 0, km = 0;
        assert_int_equal(ntp_store_list(cf, sf, NULL, &ef, &kf), NTP_STATUS_OK);
        assert_int_equal(ntp_store_list(cm, sm, NULL, &em, &km), NTP_STATUS_OK);
        assert_int_equal(kf, km);
        for (int i = 0; i < kf; i++) {
            assert_int_equal(ef[i].id, em[i].id);
            char *jf = NULL, *jm = NULL;
            assert_int_equal(ntp_store_get_report(cf, sf, ef[i].id, &jf), NTP_STATUS_OK);
            assert_int_equal(ntp_store_get_report(cm, sm, em[i].id, &jm), NTP_STATUS_OK);
            assert_string_equal(jf, jm);
            free(jf);
            free(jm);
        }
        free(ef);
        free(em);
    }
    ntp_store_close(sf);
    ntp_store_close(sm);
    ntp_ctx_free(cf);
    ntp_ctx_free(cm);
}

static void test_store_file_and_image(void **state)
{
    (void)state;
    /* At the current schema (a seed at an older one is refused at the
     * version check and fuzzes nothing past it); one-run.db is in WAL mode
     * as ntprof leaves a history, the others in rollback mode. */
    static const char *const seeds[] = {"no-runs.db", "one-run.db", "two-runs.db"};
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        char src[1024], path[600];
        snprintf(src, sizeof src, "%s/fuzz/corpus/store/%s", NTP_SOURCE_DIR, seeds[i]);
        size_t len;
        uint8_t *b = slurp(src, &len);
        /* The whole file, then cut inside its header, at its first page and
         * in its middle. A copy in the test's folder: a read-only open may
         * leave -shm beside the file. */
        const size_t cuts[] = {len, 0, 50, 4096, len / 2};
        for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
            snprintf(path, sizeof path, "%s/h%zu-%zu.db", test_tmpdir, i, c);
            spill(path, b, cuts[c]);
            same_history(path, b, cuts[c]);
        }
        free(b);
    }
    /* one-run.db holds one run, from its image. */
    char src[1024];
    snprintf(src, sizeof src, "%s/fuzz/corpus/store/one-run.db", NTP_SOURCE_DIR);
    size_t len;
    uint8_t *b = slurp(src, &len);
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_store *s;
    assert_int_equal(ntp__store_open_image(ctx, b, len, "one-run.db", &s), NTP_STATUS_OK);
    int64_t n = 0;
    assert_int_equal(ntp_store_count(ctx, s, &n), NTP_STATUS_OK);
    assert_int_equal(n, 1);
    ntp_store_close(s);
    free(b);
    snprintf(src, sizeof src, "%s/fuzz/corpus/store/two-runs.db", NTP_SOURCE_DIR);
    b = slurp(src, &len);
    assert_int_equal(ntp__store_open_image(ctx, b, len, "two-runs.db", &s), NTP_STATUS_OK);
    assert_int_equal(ntp_store_count(ctx, s, &n), NTP_STATUS_OK);
    assert_int_equal(n, 2);
    ntp_store_close(s);
    ntp_ctx_free(ctx);
    free(b);
}

/* The markup fuzzer's lower work limits: the seed that reaches the
 * library's 4 million elements is refused at the fuzzer's 50,000, by the
 * same check with the same message; a limit above the library's is not
 * raised; a topology within them loads the same as without them. */
static void test_markup_limits(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/fuzz/corpus/markup/63-expansion-limit.xml", NTP_SOURCE_DIR);
    size_t len;
    uint8_t *b = slurp(path, &len);
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_graph *g = NULL;
    static const ntp__xml_limits low = {.expanded = 50000, .subst_bytes = (int64_t)4 << 20};
    static const ntp__xml_limits high = {.expanded = (int64_t)1 << 40};
    assert_int_equal(
        ntp__xml_load_memory_limited(ctx, (const char *)b, len, "x.xml", NULL, &low, &g),
        NTP_STATUS_PARSE_ERROR);
    assert_null(g);
    assert_non_null(
        strstr(ntp_ctx_errmsg(ctx), "the topology expands to more than 50000 elements"));
    assert_int_equal(
        ntp__xml_load_memory_limited(ctx, (const char *)b, len, "x.xml", NULL, &high, &g),
        NTP_STATUS_PARSE_ERROR);
    assert_non_null(
        strstr(ntp_ctx_errmsg(ctx), "the topology expands to more than 4000000 elements"));
    free(b);
    snprintf(path, sizeof path, "%s/fuzz/corpus/markup/resnet50.xml", NTP_SOURCE_DIR);
    b = slurp(path, &len);
    ntp_graph *g1 = NULL, *g2 = NULL;
    assert_int_equal(ntp__xml_load_memory(ctx, (const char *)b, len, "x.xml", NULL, &g1),
                     NTP_STATUS_OK);
    assert_int_equal(
        ntp__xml_load_memory_limited(ctx, (const char *)b, len, "x.xml", NULL, &low, &g2),
        NTP_STATUS_OK);
    assert_true(ntp_graph_layer_count(g1) > 50);
    assert_int_equal(ntp_graph_layer_count(g1), ntp_graph_layer_count(g2));
    ntp_graph_free(g1);
    ntp_graph_free(g2);
    free(b);
    ntp_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_onnx),
        cmocka_unit_test(test_markup),
        cmocka_unit_test(test_npy),
        cmocka_unit_test(test_store),
        cmocka_unit_test(test_npy_file_and_memory),
        cmocka_unit_test(test_store_file_and_image),
        cmocka_unit_test(test_markup_limits),
    };
    return cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown);
}
