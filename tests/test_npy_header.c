/* The .npy header is read as the dict literal it is (issue 14, 7): a key
 * counts only where a key can be, not inside another key's string value;
 * each key once; nothing after the dict but padding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "io/io-impl.h"
#include "ntprof/ntprof.h"
#include "support/tmpdir.h"

/* A version 1.0 file with this header (padded as numpy pads it) and two
 * f32 values; the reader's status. */
static ntp_status read_with(ntp_ctx *ctx, const char *hdr, ntp_npy *a)
{
    char path[600];
    snprintf(path, sizeof path, "%s/h.npy", test_tmpdir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    size_t n = strlen(hdr), total = (10 + n + 1 + 63) / 64 * 64;
    size_t hlen = total - 10;
    unsigned char pre[10] = {0x93,
                             'N',
                             'U',
                             'M',
                             'P',
                             'Y',
                             1,
                             0,
                             (unsigned char)(hlen & 255),
                             (unsigned char)(hlen >> 8)};
    fwrite(pre, 1, 10, f);
    fwrite(hdr, 1, n, f);
    for (size_t i = n; i + 1 < hlen; i++)
        fputc(' ', f);
    fputc('\n', f);
    float v[2] = {1.5f, -2.0f};
    fwrite(v, sizeof v[0], 2, f);
    fclose(f);
    memset(a, 0, sizeof *a);
    return ntp__npy_read(ctx, path, a);
}

static void test_headers(void **state)
{
    (void)state;
    ntp_ctx *ctx = ntp_ctx_init();
    ntp_npy a;
    /* What numpy writes, and the same with other spacing and quotes. */
    static const char *const good[] = {
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
        "{\"shape\":(2,),\"fortran_order\":False,\"descr\":\"<f4\"}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2)}",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        ntp_status st = read_with(ctx, good[i], &a);
        if (st != NTP_STATUS_OK)
            print_error("%s: %s\n", good[i], ntp_ctx_errmsg(ctx));
        assert_int_equal(st, NTP_STATUS_OK);
        assert_int_equal(a.dtype, NTP_DTYPE_F32);
        assert_int_equal(a.nbytes, 8);
        assert_true(((float *)a.data)[1] == -2.0f);
        ntp__npy_free(&a);
    }
    /* The keys appear only inside a string: no dict of them at all. */
    static const char *const bad[] = {
        "{'x': \"'descr': '<f4', 'fortran_order': False, 'shape': (2,)\"}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'descr': '<i8'}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} trailing",
        "{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,,)}",
        "{'descr': '<f4', 'fortran_order': False}",
        "'descr': '<f4', 'fortran_order': False, 'shape': (2,)",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ntp_status st = read_with(ctx, bad[i], &a);
        if (st == NTP_STATUS_OK)
            print_error("accepted: %s\n", bad[i]);
        assert_int_equal(st, NTP_STATUS_PARSE_ERROR);
        assert_null(a.data);
        ntp_ctx_clear(ctx);
    }
    ntp_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_headers)};
    return cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown);
}
