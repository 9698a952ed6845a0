/* Float32 .npy files in tests (npy.h). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "npy.h"

float *test_read_npy(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char head[10];
    assert_int_equal(fread(head, 1, 10, f), 10);
    assert_int_equal(head[6], 1);
    size_t hl = (size_t)head[8] | (size_t)head[9] << 8;
    char hdr[4096];
    assert_true(hl < sizeof hdr);
    assert_int_equal(fread(hdr, 1, hl, f), hl);
    hdr[hl] = 0;
    assert_non_null(strstr(hdr, "'<f4'"));
    long at = ftell(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)(ftell(f) - at) / sizeof(float);
    fseek(f, at, SEEK_SET);
    float *v = malloc(*n * sizeof *v + 1);
    assert_non_null(v);
    assert_int_equal(fread(v, sizeof *v, *n, f), *n);
    fclose(f);
    return v;
}

double test_npy_rel_err(const char *dir_a, const char *dir_b, const char *name)
{
    char pa[512], pb[512];
    snprintf(pa, sizeof pa, "%s/%s.npy", dir_a, name);
    snprintf(pb, sizeof pb, "%s/%s.npy", dir_b, name);
    size_t na, nb;
    float *a = test_read_npy(pa, &na), *b = test_read_npy(pb, &nb);
    assert_int_equal(na, nb);
    assert_true(na > 0);
    double d = 0, m = 0;
    for (size_t i = 0; i < na; i++) {
        double e = fabs((double)a[i] - b[i]);
        d = e > d || isnan(e) ? e : d;
        m = fabs((double)b[i]) > m ? fabs((double)b[i]) : m;
    }
    free(a);
    free(b);
    return d / m;
}
