/* ONNX files: mapping them, checking their nesting, unpacking them with
 * protobuf-c, and the serialized TensorProto files of ONNX's test data
 * (input_N.pb), which `--input` also accepts (ntp__pb_read).
 *
 * protobuf-c checks the wire format but not what it means: a file that is
 * not a ModelProto often unpacks into one with most fields missing. The
 * importer (onnx-import.c) and the tensor decoder (onnx-tensor.c) check what
 * each field must hold. What protobuf-c does not guard against is depth: it
 * recurses once per nested message, and graphs nest in attributes without
 * limit, so a small file could exhaust the stack. check_nesting() walks the
 * wire format with the generated descriptors first and refuses anything
 * nested deeper than NTP_ONNX_MAX_NESTING. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/ctx-impl.h"
#include "file-impl.h"
#include "core/numeric-impl.h"
#include "io-impl.h"
#include "onnx-impl.h"
#include "pb-impl.h"

static const struct {
    int32_t dt;
    const char *name;
    size_t size;
} dtypes[] = {
    {NTP_ONNX_FLOAT, "FLOAT", 4},
    {NTP_ONNX_UINT8, "UINT8", 1},
    {NTP_ONNX_INT8, "INT8", 1},
    {NTP_ONNX_UINT16, "UINT16", 2},
    {NTP_ONNX_INT16, "INT16", 2},
    {NTP_ONNX_INT32, "INT32", 4},
    {NTP_ONNX_INT64, "INT64", 8},
    {NTP_ONNX_STRING, "STRING", 0},
    {NTP_ONNX_BOOL, "BOOL", 1},
    {NTP_ONNX_FLOAT16, "FLOAT16", 2},
    {NTP_ONNX_DOUBLE, "DOUBLE", 8},
    {NTP_ONNX_UINT32, "UINT32", 4},
    {NTP_ONNX_UINT64, "UINT64", 8},
    {NTP_ONNX_COMPLEX64, "COMPLEX64", 0},
    {NTP_ONNX_COMPLEX128, "COMPLEX128", 0},
    {NTP_ONNX_BFLOAT16, "BFLOAT16", 2},
};

const char *ntp__onnx_dtype_name(int32_t dt)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (dtypes[i].dt == dt)
            return dtypes[i].name;
    return dt == NTP_ONNX_UNDEFINED ? "UNDEFINED" : "an unknown type";
}

size_t ntp__onnx_dtype_size(int32_t dt)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (dtypes[i].dt == dt)
            return dtypes[i].size;
    return 0;
}

/* --- nesting ------------------------------------------------------------------ */

static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t r = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

/* The deepest nesting of message fields below this message, up to limit;
 * bytes that do not parse end the walk (protobuf-c reports them). */
static int nesting(const uint8_t *p, const uint8_t *end, const ProtobufCMessageDescriptor *d,
                   int depth, int limit)
{
    int deepest = depth;
    while (p < end) {
        uint64_t key, v;
        if (!varint(&p, end, &key))
            break;
        switch (key & 7) {
        case 0:
            if (!varint(&p, end, &v))
                return deepest;
            break;
        case 1:
            if (end - p < 8)
                return deepest;
            p += 8;
            break;
        case 5:
            if (end - p < 4)
                return deepest;
            p += 4;
            break;
        case 2: {
            if (!varint(&p, end, &v) || v > (uint64_t)(end - p))
                return deepest;
            const ProtobufCFieldDescriptor *f =
                key >> 3 <= UINT32_MAX
                    ? protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3))
                    : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && f->descriptor) {
                if (depth + 1 > limit)
                    return depth + 1;
                int sub = nesting(p, p + v, f->descriptor, depth + 1, limit);
                if (sub > deepest)
                    deepest = sub;
                if (deepest > limit)
                    return deepest;
            }
            p += v;
            break;
        }
        default: return deepest; /* groups and invalid wire types: protobuf-c refuses them */
        }
    }
    return deepest;
}

static ntp_status unpack(ntp_ctx *ctx, const char *src, const uint8_t *buf, size_t len,
                         const ProtobufCMessageDescriptor *d, const char *what,
                         ProtobufCMessage **out)
{
    *out = NULL;
    if (nesting(buf, buf + len, d, 0, NTP_ONNX_MAX_NESTING) > NTP_ONNX_MAX_NESTING)
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                          "%s: messages nest deeper than %d levels (refused before unpacking "
                          "the %s)",
                          src, NTP_ONNX_MAX_NESTING, what);
    *out = protobuf_c_message_unpack(d, NULL, len, buf);
    if (!*out)
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                          "%s: not a valid %s (the protobuf encoding is malformed or truncated)",
                          src, what);
    return NTP_STATUS_OK;
}

ntp_status ntp__onnx_unpack_model(ntp_ctx *ctx, const char *src, const uint8_t *buf, size_t len,
                                  Onnx__ModelProto **out)
{
    ProtobufCMessage *m;
    ntp_status st = unpack(ctx, src, buf, len, &onnx__model_proto__descriptor, "ONNX model", &m);
    *out = (Onnx__ModelProto *)m;
    return st;
}

/* --- files ----------------------------------------------------------------------- */

static const uint8_t empty_file[1];

ntp_status ntp__onnx_map_file(ntp_ctx *ctx, const char *path, const uint8_t **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    struct stat sb;
    const char *why;
    int fd = ntp__file_open_read(path, &sb, &why);
    if (fd < 0)
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: %s", path, why);
    if (sb.st_size == 0) {
        close(fd);
        *buf = empty_file;
        return NTP_STATUS_OK;
    }
    /* Populated up front: unpacking reads every byte once, in order. */
    void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    int e = errno;
    close(fd);
    if (m == MAP_FAILED)
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "%s: cannot map the file: %s", path,
                          strerror(e));
    *buf = m;
    *len = (size_t)sb.st_size;
    return NTP_STATUS_OK;
}

void ntp__onnx_unmap_file(const uint8_t *buf, size_t len)
{
    if (buf && buf != empty_file && len > 0)
        munmap((void *)buf, len);
}

/* A TensorProto from len bytes (a mapped file, or the fuzzer's input). */
static ntp_status read_pb(ntp_ctx *ctx, const char *path, const uint8_t *buf, size_t len,
                          ntp_onnx_tensor *out, char **name)
{
    memset(out, 0, sizeof *out);
    if (name)
        *name = NULL;
    ProtobufCMessage *m;
    ntp_status st =
        unpack(ctx, path, buf, len, &onnx__tensor_proto__descriptor, "ONNX TensorProto file", &m);
    if (st)
        return st;
    Onnx__TensorProto *tp = (Onnx__TensorProto *)m;
    /* A TensorProto has no required field, so anything that unpacks is one;
     * a file that is something else has no data type. */
    if (!tp->has_data_type)
        st = ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                        "%s: not an ONNX TensorProto file (it has no data type)", path);
    else
        st = ntp__onnx_tensor_decode(ctx, path, NULL, tp, "the tensor", true, out);
    if (st == NTP_STATUS_OK && name && tp->name && !(*name = ntp__strdup(tp->name))) {
        ntp__onnx_tensor_free_data(out);
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    protobuf_c_message_free_unpacked(m, NULL);
    return st;
}

ntp_status ntp__onnx_read_pb(ntp_ctx *ctx, const char *path, ntp_onnx_tensor *out, char **name)
{
    memset(out, 0, sizeof *out);
    if (name)
        *name = NULL;
    const uint8_t *buf;
    size_t len;
    ntp_status st = ntp__onnx_map_file(ctx, path, &buf, &len);
    if (st)
        return st;
    st = read_pb(ctx, path, buf, len, out, name);
    ntp__onnx_unmap_file(buf, len);
    return st;
}

/* --- ntp__pb_read: --input FILE.pb --------------------------------------------- */

/* A decoded tensor as an input array; t's data is freed or handed over. */
static ntp_status pb_to_npy(ntp_ctx *ctx, const char *path, ntp_onnx_tensor *t, ntp_npy *out)
{
    ntp_status st;
    ntp_dtype to;
    switch (t->dtype) {
    case NTP_ONNX_FLOAT: to = NTP_DTYPE_F32; break;
    case NTP_ONNX_FLOAT16: to = NTP_DTYPE_F16; break;
    case NTP_ONNX_INT32: to = NTP_DTYPE_I32; break;
    case NTP_ONNX_INT64: to = NTP_DTYPE_I64; break;
    case NTP_ONNX_INT8: to = NTP_DTYPE_I8; break;
    case NTP_ONNX_UINT8:
    case NTP_ONNX_BOOL: to = NTP_DTYPE_U8; break;
    default:
        st = ntp__error(ctx, NTP_STATUS_UNSUPPORTED,
                        "%s: holds %s data; ntprof's inputs are FLOAT, FLOAT16, INT32, INT64, "
                        "INT8, UINT8 or BOOL",
                        path, ntp__onnx_dtype_name(t->dtype));
        ntp__onnx_tensor_free_data(t);
        return st;
    }
    out->dtype = to;
    out->shape = t->shape;
    out->nbytes = t->n * (int64_t)ntp_dtype_size(to);
    if (to == NTP_DTYPE_F32) {
        out->data = t->f; /* already f32: handed over, not copied */
        t->f = NULL;
    } else {
        out->data = malloc((size_t)out->nbytes + 1);
        if (!out->data) {
            ntp__onnx_tensor_free_data(t);
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
        }
        for (int64_t k = 0; k < t->n; k++)
            switch (to) {
            case NTP_DTYPE_F16: ((uint16_t *)out->data)[k] = ntp__f32_to_f16(t->f[k]); break;
            case NTP_DTYPE_I32: ((int32_t *)out->data)[k] = (int32_t)t->i[k]; break;
            case NTP_DTYPE_I64: ((int64_t *)out->data)[k] = t->i[k]; break;
            case NTP_DTYPE_I8: ((int8_t *)out->data)[k] = (int8_t)t->i[k]; break;
            case NTP_DTYPE_U8: ((uint8_t *)out->data)[k] = (uint8_t)t->i[k]; break;
            /* f32 was handed over above; no ONNX type above is read as bf16. */
            case NTP_DTYPE_F32:
            case NTP_DTYPE_BF16:
            case NTP_DTYPE_COUNT: break;
            }
    }
    ntp__onnx_tensor_free_data(t);
    return NTP_STATUS_OK;
}

ntp_status ntp__pb_read(ntp_ctx *ctx, const char *path, ntp_npy *out)
{
    memset(out, 0, sizeof *out);
    ntp_onnx_tensor t;
    ntp_status st = ntp__onnx_read_pb(ctx, path, &t, NULL);
    if (st)
        return st;
    return pb_to_npy(ctx, path, &t, out);
}

ntp_status ntp__pb_read_memory(ntp_ctx *ctx, const char *name, const void *data, size_t len,
                               ntp_npy *out)
{
    memset(out, 0, sizeof *out);
    ntp_onnx_tensor t;
    ntp_status st = read_pb(ctx, name, data, len, &t, NULL);
    if (st)
        return st;
    return pb_to_npy(ctx, name, &t, out);
}
