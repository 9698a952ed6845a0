/* NumPy .npy reading and writing (the format of numpy.lib.format). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "file-impl.h"
#include "io-impl.h"

/* Headers longer than this are refused: numpy writes ~128 bytes. */
#define NPY_MAX_HEADER 65536

static const struct {
    const char *descr;
    ntp_dtype t;
} npy_types[] = {
    {"<f4", NTP_DTYPE_F32}, {"<f2", NTP_DTYPE_F16}, {"<i4", NTP_DTYPE_I32},
    {"<i8", NTP_DTYPE_I64}, {"|i1", NTP_DTYPE_I8},  {"|u1", NTP_DTYPE_U8},
};

static const char *descr_of(ntp_dtype t)
{
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
        if (npy_types[i].t == t)
            return npy_types[i].descr;
    return NULL;
}

/* The header is a Python dict literal, read here as one: keys found only
 * where a key can be (not inside another key's string value), each once,
 * nothing else in it, and only blanks after its closing brace. */
typedef struct npy_lex {
    const char *p, *end;
} npy_lex;

static void lex_blank(npy_lex *l)
{
    while (l->p < l->end && (*l->p == ' ' || *l->p == '\t' || *l->p == '\n' || *l->p == '\r'))
        l->p++;
}

static bool lex_char(npy_lex *l, char c)
{
    lex_blank(l);
    if (l->p < l->end && *l->p == c) {
        l->p++;
        return true;
    }
    return false;
}

/* A quoted string (no escapes: numpy writes none) into buf. */
static bool lex_string(npy_lex *l, char *buf, size_t len)
{
    lex_blank(l);
    if (l->p >= l->end || (*l->p != '\'' && *l->p != '"'))
        return false;
    char q = *l->p++;
    size_t n = 0;
    while (l->p < l->end && *l->p != q) {
        if (*l->p == '\\' || *l->p == '\0' || n + 1 >= len)
            return false;
        buf[n++] = *l->p++;
    }
    if (l->p >= l->end)
        return false;
    l->p++;
    buf[n] = '\0';
    return true;
}

static bool lex_word(npy_lex *l, const char *w)
{
    lex_blank(l);
    size_t n = strlen(w);
    if ((size_t)(l->end - l->p) >= n && memcmp(l->p, w, n) == 0) {
        l->p += n;
        return true;
    }
    return false;
}

/* "(d0, d1, ...)" with an optional trailing comma, non-negative dims. */
static bool lex_shape(npy_lex *l, ntp_shape *s, bool *too_many)
{
    if (!lex_char(l, '('))
        return false;
    s->ndim = 0;
    *too_many = false;
    for (;;) {
        if (lex_char(l, ')'))
            return true;
        lex_blank(l);
        int64_t v = 0;
        const char *start = l->p;
        while (l->p < l->end && *l->p >= '0' && *l->p <= '9') {
            if (v > (INT64_MAX - (*l->p - '0')) / 10)
                return false;
            v = v * 10 + (*l->p++ - '0');
        }
        if (l->p == start)
            return false;
        if (s->ndim == NTP_MAX_DIMS) {
            *too_many = true;
            return false;
        }
        s->dim[s->ndim++] = v;
        if (!lex_char(l, ',')) {
            if (!lex_char(l, ')'))
                return false;
            return true;
        }
    }
}

static ntp_status parse_header(ntp_ctx *ctx, const char *path, const char *hdr, size_t len,
                               ntp_npy *out)
{
    npy_lex l = {hdr, hdr + len};
    char key[32], descr[32] = "";
    bool have_d = false, have_f = false, have_s = false, fortran = false, too_many = false;
    if (!lex_char(&l, '{'))
        goto malformed;
    while (!lex_char(&l, '}')) {
        if (!lex_string(&l, key, sizeof key) || !lex_char(&l, ':'))
            goto malformed;
        if (!strcmp(key, "descr") && !have_d) {
            if (!lex_string(&l, descr, sizeof descr))
                goto malformed;
            have_d = true;
        } else if (!strcmp(key, "fortran_order") && !have_f) {
            if (lex_word(&l, "False"))
                fortran = false;
            else if (lex_word(&l, "True"))
                fortran = true;
            else
                goto malformed;
            have_f = true;
        } else if (!strcmp(key, "shape") && !have_s) {
            if (!lex_shape(&l, &out->shape, &too_many)) {
                if (too_many)
                    return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                                      "%s: .npy array has more than %d dims", path, NTP_MAX_DIMS);
                return ntp__error(ctx, NTP_STATUS_PARSE_ERROR, "%s: malformed .npy shape", path);
            }
            have_s = true;
        } else {
            return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                              "%s: .npy header has an unexpected or repeated key '%s'", path, key);
        }
        if (!lex_char(&l, ',')) {
            if (!lex_char(&l, '}'))
                goto malformed;
            break;
        }
    }
    lex_blank(&l);
    if (l.p != l.end)
        goto malformed;
    if (!have_d || !have_f || !have_s)
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                          "%s: .npy header lacks 'descr', 'fortran_order' or 'shape'", path);
    bool found = false;
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
        if (!strcmp(descr, npy_types[i].descr)) {
            out->dtype = npy_types[i].t;
            found = true;
        }
    if (!found)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                          "%s: .npy dtype %.8s is not supported; expected <f4, <f2, <i4, <i8, |i1 "
                          "or |u1",
                          path, descr);
    if (fortran)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                          "%s: .npy data in Fortran order is not supported; save a C-order array",
                          path);
    return NTP_STATUS_OK;
malformed:
    return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                      "%s: malformed .npy header (expected a dict of 'descr', 'fortran_order' "
                      "and 'shape')",
                      path);
}

/* Where a .npy image is read from: a file, or bytes in memory (the fuzzer's
 * inputs, through ntp__npy_read_memory). Both readers share npy_read. */
typedef struct npy_src {
    FILE *f;                  /* the file, or NULL */
    const unsigned char *mem; /* else the bytes */
    size_t len, at;
} npy_src;

/* Exactly n bytes into buf, or false. */
static bool src_read(npy_src *s, void *buf, size_t n)
{
    if (s->f)
        return fread(buf, 1, n, s->f) == n;
    if (n > s->len - s->at)
        return false;
    memcpy(buf, s->mem + s->at, n);
    s->at += n;
    return true;
}

/* How many bytes are left after the current position; -1 if unknown. */
static int64_t src_left(npy_src *s)
{
    if (!s->f)
        return (int64_t)(s->len - s->at);
    long here = ftell(s->f);
    if (here < 0 || fseek(s->f, 0, SEEK_END) != 0)
        return -1;
    long size = ftell(s->f);
    if (size < 0 || fseek(s->f, here, SEEK_SET) != 0)
        return -1;
    return (int64_t)size - here;
}

static ntp_status npy_read(ntp_ctx *ctx, const char *path, npy_src *src, ntp_npy *out)
{
    unsigned char pre[10];
    char *hdr = NULL;
    ntp_status st = NTP_STATUS_OK;
    if (!src_read(src, pre, 8) || memcmp(pre, "\x93NUMPY", 6) != 0) {
        st = ntp__error(ctx, NTP_STATUS_PARSE_ERROR, "%s: not a .npy file (bad magic)", path);
        goto done;
    }
    uint32_t hlen;
    if (pre[6] == 1) {
        if (!src_read(src, pre + 8, 2))
            goto truncated;
        hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
    } else if (pre[6] == 2 || pre[6] == 3) {
        unsigned char l[4];
        if (!src_read(src, l, 4))
            goto truncated;
        hlen = (uint32_t)l[0] | (uint32_t)l[1] << 8 | (uint32_t)l[2] << 16 | (uint32_t)l[3] << 24;
    } else {
        st = ntp__error(ctx, NTP_STATUS_UNSUPPORTED, "%s: .npy version %d is not supported", path,
                        pre[6]);
        goto done;
    }
    if (hlen > NPY_MAX_HEADER) {
        st = ntp__error(ctx, NTP_STATUS_PARSE_ERROR, "%s: .npy header of %u bytes is too long",
                        path, hlen);
        goto done;
    }
    hdr = malloc(hlen + 1);
    if (!hdr) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
        goto done;
    }
    if (!src_read(src, hdr, hlen))
        goto truncated;
    hdr[hlen] = '\0';
    if ((st = parse_header(ctx, path, hdr, hlen, out)) != NTP_STATUS_OK)
        goto done;
    int64_t n = ntp_shape_numel(&out->shape);
    if (n < 0 || !ntp__mul_ok(n, (int64_t)ntp_dtype_size(out->dtype), &out->nbytes)) {
        st = ntp__error(ctx, NTP_STATUS_OVERFLOW, "%s: .npy shape overflows", path);
        goto done;
    }
    /* Check the file really holds that many bytes before allocating them. */
    int64_t left = src_left(src);
    if (left < 0) {
        st = ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: cannot seek", path);
        goto done;
    }
    if (left != out->nbytes) {
        st = ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                        "%s: .npy data holds %lld bytes, its shape needs %lld", path,
                        (long long)left, (long long)out->nbytes);
        goto done;
    }
    out->data = malloc(out->nbytes ? (size_t)out->nbytes : 1);
    if (!out->data) {
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory for %lld bytes", path,
                        (long long)out->nbytes);
        goto done;
    }
    if (!src_read(src, out->data, (size_t)out->nbytes))
        goto truncated;
    goto done;
truncated:
    st = ntp__error(ctx, NTP_STATUS_PARSE_ERROR, "%s: truncated .npy file", path);
done:
    free(hdr);
    if (st != NTP_STATUS_OK)
        ntp__npy_free(out);
    return st;
}

ntp_status ntp__npy_read(ntp_ctx *ctx, const char *path, ntp_npy *out)
{
    memset(out, 0, sizeof *out);
    const char *why;
    FILE *f = ntp__file_fopen_read(path, NULL, &why);
    if (!f)
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: %s", path, why);
    npy_src src = {.f = f};
    ntp_status st = npy_read(ctx, path, &src, out);
    fclose(f);
    return st;
}

ntp_status ntp__npy_read_memory(ntp_ctx *ctx, const char *name, const void *data, size_t len,
                                ntp_npy *out)
{
    memset(out, 0, sizeof *out);
    npy_src src = {.mem = data, .len = len};
    return npy_read(ctx, name, &src, out);
}

void ntp__npy_free(ntp_npy *a)
{
    free(a->data);
    a->data = NULL;
}

ntp_status ntp__npy_write(ntp_ctx *ctx, const char *path, ntp_dtype dtype, const ntp_shape *shape,
                          const void *data)
{
    const char *descr = descr_of(dtype);
    if (!descr)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED, "%s: cannot write %s data as .npy", path,
                          ntp_dtype_name(dtype));
    char dict[512];
    int len =
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < shape->ndim; i++)
        len += snprintf(dict + len, sizeof dict - (size_t)len, "%lld,%s", (long long)shape->dim[i],
                        i + 1 < shape->ndim ? " " : "");
    if (shape->ndim > 1)
        len--; /* numpy writes (2, 3) but (4,) */
    len += snprintf(dict + len, sizeof dict - (size_t)len, "), }");
    /* Pad with spaces so that the data starts at a multiple of 64 bytes. */
    int total = 10 + len + 1;
    int pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (!f)
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: %s", path, strerror(errno));
    unsigned hl = (unsigned)(len + pad + 1);
    unsigned char pre[10] = {
        0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hl & 0xff), (unsigned char)(hl >> 8)};
    size_t nbytes = (size_t)ntp_shape_numel(shape) * ntp_dtype_size(dtype);
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)len, f) == (size_t)len;
    for (int i = 0; ok && i < pad; i++)
        ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF && fwrite(data, 1, nbytes, f) == nbytes;
    ok = (fclose(f) == 0) && ok;
    if (!ok) {
        remove(path);
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: write failed", path);
    }
    return NTP_STATUS_OK;
}
