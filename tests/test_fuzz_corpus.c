/* Every fuzz harness (fuzz/fuzz_*.c) over its whole seed corpus
 * (fuzz/corpus/<name>/), in every build: the crashes the fuzzers found are
 * kept there, so this replays each of them as a regression test (under
 * ASan and UBSan in the sanitizer build, where a report fails the test),
 * and it keeps the harnesses compiling and working where libFuzzer is not
 * built (gcc). The fuzzing itself is tests/test_*_fuzz.sh. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define LLVMFuzzerTestOneInput fuzz_onnx_one
#include "../fuzz/fuzz_onnx.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_markup_one
#include "../fuzz/fuzz_markup.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_npy_one
#include "../fuzz/fuzz_npy.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_store_one
#include "../fuzz/fuzz_store.c"
#undef LLVMFuzzerTestOneInput

typedef int (*harness)(const uint8_t *, size_t);

/* Run h on every file of fuzz/corpus/<name>/; the number of files. */
static int replay(const char *name, harness h)
{
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
    assert_true(replay("onnx", fuzz_onnx_one) >= 10);
}

static void test_markup(void **state)
{
    (void)state;
    assert_true(replay("markup", fuzz_markup_one) >= 10);
}

static void test_npy(void **state)
{
    (void)state;
    assert_true(replay("npy", fuzz_npy_one) >= 5);
}

static void test_store(void **state)
{
    (void)state;
    assert_true(replay("store", fuzz_store_one) >= 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_onnx),
        cmocka_unit_test(test_markup),
        cmocka_unit_test(test_npy),
        cmocka_unit_test(test_store),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
