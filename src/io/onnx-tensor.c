/* ONNX TensorProto -> ntp_onnx_tensor: the data of initializers, Constant
 * nodes and .pb files, from raw_data, the typed fields or an external file.
 *
 * Nothing in a TensorProto is trusted: the data type must be a numeric one,
 * dims non-negative with a product that fits, exactly one source of data,
 * and that source must hold exactly as many bytes or values as the shape
 * needs, all checked before anything is allocated, so a file cannot make
 * the reader allocate more than the data it actually holds. External data
 * must stay inside the model's directory. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/ctx-impl.h"
#include "file-impl.h"
#include "core/numeric-impl.h"
#include "onnx-impl.h"

void ntp__onnx_tensor_free_data(ntp_onnx_tensor *t)
{
    if (!t)
        return;
    free(t->f);
    free(t->i);
    t->f = NULL;
    t->i = NULL;
}

void ntp__onnx_tensor_free(ntp_onnx_tensor *t)
{
    ntp__onnx_tensor_free_data(t);
    free(t);
}

ntp_onnx_tensor *ntp__onnx_tensor_new(int32_t dt, const ntp_shape *s)
{
    int64_t n = ntp_shape_numel(s);
    if (n < 0 || n > INT64_MAX / 8)
        return NULL;
    ntp_onnx_tensor *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->dtype = dt;
    t->shape = *s;
    t->n = n;
    if (ntp__onnx_is_float(dt))
        t->f = calloc((size_t)n + 1, sizeof *t->f);
    else
        t->i = calloc((size_t)n + 1, sizeof *t->i);
    if (!t->f && !t->i) {
        free(t);
        return NULL;
    }
    return t;
}

static bool little_endian(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

/* Element k of little-endian raw bytes of type dt into the tensor. */
static void from_raw(ntp_onnx_tensor *t, const uint8_t *raw, int64_t k)
{
    const uint8_t *p = raw + k * (int64_t)ntp__onnx_dtype_size(t->dtype);
    uint64_t u = 0;
    for (size_t b = ntp__onnx_dtype_size(t->dtype); b-- > 0;)
        u = u << 8 | p[b];
    switch (t->dtype) {
    case NTP_ONNX_FLOAT: {
        uint32_t w = (uint32_t)u;
        float f;
        memcpy(&f, &w, 4);
        t->f[k] = f;
        break;
    }
    case NTP_ONNX_DOUBLE: {
        double d;
        memcpy(&d, &u, 8);
        t->f[k] = (float)d;
        break;
    }
    case NTP_ONNX_FLOAT16: t->f[k] = ntp__f16_to_f32((uint16_t)u); break;
    case NTP_ONNX_BFLOAT16: t->f[k] = ntp__bf16_to_f32((uint16_t)u); break;
    case NTP_ONNX_INT8: t->i[k] = (int8_t)(uint8_t)u; break;
    case NTP_ONNX_INT16: t->i[k] = (int16_t)(uint16_t)u; break;
    case NTP_ONNX_INT32: t->i[k] = (int32_t)(uint32_t)u; break;
    case NTP_ONNX_INT64: t->i[k] = (int64_t)u; break;
    case NTP_ONNX_BOOL: t->i[k] = u != 0; break;
    case NTP_ONNX_UINT64: t->i[k] = u > INT64_MAX ? INT64_MAX : (int64_t)u; break;
    default: t->i[k] = (int64_t)u; break; /* UINT8, UINT16, UINT32 */
    }
}

/* The typed field that must hold dt's values, and its count. */
static size_t typed_count(const Onnx__TensorProto *tp, int32_t dt, const char **field)
{
    switch (dt) {
    case NTP_ONNX_FLOAT: *field = "float_data"; return tp->n_float_data;
    case NTP_ONNX_INT64: *field = "int64_data"; return tp->n_int64_data;
    case NTP_ONNX_DOUBLE: *field = "double_data"; return tp->n_double_data;
    case NTP_ONNX_UINT32:
    case NTP_ONNX_UINT64: *field = "uint64_data"; return tp->n_uint64_data;
    default: *field = "int32_data"; return tp->n_int32_data;
    }
}

static bool parse_size(const char *s, int64_t *out)
{
    if (!s || !*s)
        return false;
    int64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > (INT64_MAX - (*p - '0')) / 10)
            return false;
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return true;
}

/* Open and check the external data of `bytes` bytes, before anything is
 * allocated for it: *fd is then a regular file holding them from *off. The
 * location is relative to base_dir and may not leave it, through "..", an
 * absolute path or a symbolic link; the file is opened without blocking
 * (a FIFO named as data is refused, not waited on). */
static ntp_status open_external(ntp_ctx *ctx, const char *src, const char *base_dir,
                                const Onnx__TensorProto *tp, const char *what, int64_t bytes,
                                int *fd_out, int64_t *off_out)
{
    *fd_out = -1;
    const char *loc = NULL, *off_s = NULL, *len_s = NULL;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        if (!e->key)
            continue;
        if (strcmp(e->key, "location") == 0)
            loc = e->value;
        else if (strcmp(e->key, "offset") == 0)
            off_s = e->value;
        else if (strcmp(e->key, "length") == 0)
            len_s = e->value;
    }
    if (!base_dir)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                          "%s: %s keeps its data in an external file, which a model read from "
                          "memory cannot reach",
                          src, what);
    if (!loc || !*loc)
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                          "%s: %s has external data without a 'location'", src, what);
    int64_t off = 0, len = bytes;
    if ((off_s && !parse_size(off_s, &off)) || (len_s && !parse_size(len_s, &len)))
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                          "%s: %s: external data offset '%.32s' or length '%.32s' is not a "
                          "non-negative integer",
                          src, what, off_s ? off_s : "", len_s ? len_s : "");
    if (len != bytes)
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                          "%s: %s: external data of %lld bytes, its shape needs %lld", src, what,
                          (long long)len, (long long)bytes);
    bool up = strcmp(loc, "..") == 0 || strncmp(loc, "../", 3) == 0 || strstr(loc, "/../") ||
              (strlen(loc) >= 3 && strcmp(loc + strlen(loc) - 3, "/..") == 0);
    if (loc[0] == '/' || up)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "%s: %s: external data location '%.128s' leaves the model's directory",
                          src, what, loc);
    char path[PATH_MAX], real_dir[PATH_MAX], real_file[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", base_dir, loc) >= (int)sizeof path)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "%s: %s: external data path too long",
                          src, what);
    if (!realpath(base_dir, real_dir) || !realpath(path, real_file))
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: %s: external data '%.128s': %s", src, what,
                          loc, strerror(errno));
    size_t dl = strlen(real_dir);
    if (strncmp(real_file, real_dir, dl) != 0 || (real_file[dl] != '/' && dl > 1))
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "%s: %s: external data location '%.128s' leaves the model's directory",
                          src, what, loc);
    struct stat sb;
    const char *why;
    int fd = ntp__file_open_read(real_file, &sb, &why);
    if (fd < 0) {
        if (!strcmp(why, "not a regular file") || !strcmp(why, "is a directory"))
            return ntp__error(ctx, NTP_STATUS_IO_ERROR,
                              "%s: %s: external data '%.128s' is not a file", src, what, loc);
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: %s: external data '%.128s': %s", src, what,
                          loc, why);
    }
    int64_t end;
    if (!ntp__add_ok(off, bytes, &end) || end > (int64_t)sb.st_size) {
        close(fd);
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                          "%s: %s: external data '%.128s' holds %lld bytes, the tensor needs "
                          "%lld from offset %lld",
                          src, what, loc, (long long)sb.st_size, (long long)bytes, (long long)off);
    }
    *fd_out = fd;
    *off_out = off;
    return NTP_STATUS_OK;
}

/* Read `bytes` bytes from fd at off into buf (then close fd). */
static ntp_status read_external(ntp_ctx *ctx, const char *src, const char *what, int fd,
                                int64_t off, int64_t bytes, uint8_t *buf)
{
    ntp_status st = NTP_STATUS_OK;
    int64_t done = 0;
    while (done < bytes) {
        ssize_t r = pread(fd, buf + done, (size_t)(bytes - done), (off_t)(off + done));
        if (r <= 0) {
            st = ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: %s: reading external data: %s", src,
                            what, r < 0 ? strerror(errno) : "unexpected end of file");
            break;
        }
        done += r;
    }
    close(fd);
    return st;
}

ntp_status ntp__onnx_tensor_decode(ntp_ctx *ctx, const char *src, const char *base_dir,
                                   Onnx__TensorProto *tp, const char *what, bool steal,
                                   ntp_onnx_tensor *out)
{
    memset(out, 0, sizeof *out);
    if (!tp->has_data_type)
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR, "%s: %s has no data type", src, what);
    int32_t dt = tp->data_type;
    size_t es = ntp__onnx_dtype_size(dt);
    if (es == 0)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                          "%s: %s is %s: ntprof reads numeric tensors only", src, what,
                          ntp__onnx_dtype_name(dt));
    if (tp->segment)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED, "%s: %s is segmented (not supported)", src,
                          what);
    if (tp->n_dims > NTP_MAX_DIMS)
        return ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                          "%s: %s has %zu dims; at most %d are "
                          "supported",
                          src, what, tp->n_dims, NTP_MAX_DIMS);
    int64_t n = 1, bytes;
    out->shape.ndim = (int)tp->n_dims;
    for (size_t d = 0; d < tp->n_dims; d++) {
        if (tp->dims[d] < 0)
            return ntp__error(ctx, NTP_STATUS_PARSE_ERROR, "%s: %s has a negative dim (%lld)", src,
                              what, (long long)tp->dims[d]);
        out->shape.dim[d] = tp->dims[d];
        if (!ntp__mul_ok(n, tp->dims[d], &n))
            return ntp__error(ctx, NTP_STATUS_OVERFLOW, "%s: %s: its dims overflow 64 bits", src,
                              what);
    }
    if (!ntp__mul_ok(n, (int64_t)(es > 8 ? es : 8), &bytes) || (uint64_t)bytes > SIZE_MAX / 2)
        return ntp__error(ctx, NTP_STATUS_OVERFLOW, "%s: %s of %lld elements is too large", src,
                          what, (long long)n);
    bytes = n * (int64_t)es;
    bool external =
        tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    const char *field;
    size_t typed = typed_count(tp, dt, &field);
    size_t any_typed = tp->n_float_data + tp->n_int32_data + tp->n_int64_data + tp->n_double_data +
                       tp->n_uint64_data + tp->n_string_data;
    if (any_typed != typed)
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                          "%s: %s is %s but holds values in a field for another type (expected "
                          "%s)",
                          src, what, ntp__onnx_dtype_name(dt), field);
    bool raw = tp->has_raw_data && tp->raw_data.len > 0;
    if ((int)raw + (int)(typed > 0) + (int)external > 1)
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                          "%s: %s holds its data in more than one place (raw, typed, external)",
                          src, what);
    if (raw && (int64_t)tp->raw_data.len != bytes)
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                          "%s: %s holds %zu bytes of raw data; its shape %s of %s needs %lld", src,
                          what, tp->raw_data.len, ntp_shape_str(&out->shape, (char[160]){0}, 160),
                          ntp__onnx_dtype_name(dt), (long long)bytes);
    if (!raw && !external && (int64_t)typed != n)
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                          "%s: %s holds %zu values; its shape %s needs %lld", src, what, typed,
                          ntp_shape_str(&out->shape, (char[160]){0}, 160), (long long)n);
    out->dtype = dt;
    out->n = n;
    /* f32 raw data in the message is taken as is: the one copy is
     * protobuf-c's, out of the mapped file. */
    if (steal && raw && dt == NTP_ONNX_FLOAT && little_endian() &&
        ((uintptr_t)tp->raw_data.data % sizeof(float)) == 0) {
        out->f = (float *)tp->raw_data.data;
        tp->raw_data.data = NULL;
        tp->raw_data.len = 0;
        tp->has_raw_data = 0;
        return NTP_STATUS_OK;
    }
    /* External data is found, opened and its size checked before anything
     * is allocated for it (docs/onnx.md). */
    int ext_fd = -1;
    int64_t ext_off = 0;
    if (external) {
        ntp_status st = open_external(ctx, src, base_dir, tp, what, bytes, &ext_fd, &ext_off);
        if (st)
            return st;
    }
    if (ntp__onnx_is_float(dt))
        out->f = malloc((size_t)n * sizeof(float) + 1);
    else
        out->i = malloc((size_t)n * sizeof(int64_t) + 1);
    if (!out->f && !out->i) {
        if (ext_fd >= 0)
            close(ext_fd);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory for %s", src, what);
    }
    if (external) {
        bool direct = dt == NTP_ONNX_FLOAT && little_endian();
        uint8_t *buf = direct ? (uint8_t *)out->f : malloc((size_t)bytes + 1);
        if (!buf)
            close(ext_fd);
        ntp_status st = buf ? read_external(ctx, src, what, ext_fd, ext_off, bytes, buf)
                            : ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory", src);
        if (st == NTP_STATUS_OK && !direct)
            for (int64_t k = 0; k < n; k++)
                from_raw(out, buf, k);
        if (!direct)
            free(buf);
        if (st)
            ntp__onnx_tensor_free_data(out);
        return st;
    }
    if (raw) {
        for (int64_t k = 0; k < n; k++)
            from_raw(out, tp->raw_data.data, k);
        return NTP_STATUS_OK;
    }
    for (int64_t k = 0; k < n; k++)
        switch (dt) {
        case NTP_ONNX_FLOAT: out->f[k] = tp->float_data[k]; break;
        case NTP_ONNX_DOUBLE: out->f[k] = (float)tp->double_data[k]; break;
        case NTP_ONNX_FLOAT16: out->f[k] = ntp__f16_to_f32((uint16_t)tp->int32_data[k]); break;
        case NTP_ONNX_BFLOAT16: out->f[k] = ntp__bf16_to_f32((uint16_t)tp->int32_data[k]); break;
        case NTP_ONNX_INT64: out->i[k] = tp->int64_data[k]; break;
        case NTP_ONNX_UINT32:
        case NTP_ONNX_UINT64:
            out->i[k] = tp->uint64_data[k] > INT64_MAX ? INT64_MAX : (int64_t)tp->uint64_data[k];
            break;
        case NTP_ONNX_BOOL: out->i[k] = tp->int32_data[k] != 0; break;
        default: out->i[k] = tp->int32_data[k]; break;
        }
    return NTP_STATUS_OK;
}
