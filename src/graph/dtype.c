/* Element types and shapes. */
#include <stdio.h>
#include <string.h>

#include "graph-impl.h"

static const struct {
    const char *name;
    size_t size;
} dtypes[NTP_DTYPE_COUNT] = {
    [NTP_DTYPE_F32] = {"f32", 4}, [NTP_DTYPE_BF16] = {"bf16", 2}, [NTP_DTYPE_F16] = {"f16", 2},
    [NTP_DTYPE_I8] = {"i8", 1},   [NTP_DTYPE_U8] = {"u8", 1},     [NTP_DTYPE_I32] = {"i32", 4},
    [NTP_DTYPE_I64] = {"i64", 8},
};

static const struct {
    const char *alias;
    ntp_dtype t;
} aliases[] = {
    {"fp32", NTP_DTYPE_F32},      {"float32", NTP_DTYPE_F32}, {"float", NTP_DTYPE_F32},
    {"bfloat16", NTP_DTYPE_BF16}, {"fp16", NTP_DTYPE_F16},    {"float16", NTP_DTYPE_F16},
    {"half", NTP_DTYPE_F16},      {"int8", NTP_DTYPE_I8},     {"uint8", NTP_DTYPE_U8},
    {"int32", NTP_DTYPE_I32},     {"int64", NTP_DTYPE_I64},
};

const char *ntp_dtype_name(ntp_dtype t)
{
    return (unsigned)t < NTP_DTYPE_COUNT ? dtypes[t].name : "?";
}

size_t ntp_dtype_size(ntp_dtype t)
{
    return (unsigned)t < NTP_DTYPE_COUNT ? dtypes[t].size : 0;
}

ntp_status ntp_dtype_parse(const char *s, ntp_dtype *out)
{
    if (!s)
        return NTP_STATUS_INVALID_ARGUMENT;
    for (int i = 0; i < NTP_DTYPE_COUNT; i++)
        if (strcmp(s, dtypes[i].name) == 0) {
            *out = (ntp_dtype)i;
            return NTP_STATUS_OK;
        }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(s, aliases[i].alias) == 0) {
            *out = aliases[i].t;
            return NTP_STATUS_OK;
        }
    return NTP_STATUS_UNKNOWN_NAME;
}

bool ntp_dtype_is_precision(ntp_dtype t)
{
    return t == NTP_DTYPE_F32 || t == NTP_DTYPE_BF16 || t == NTP_DTYPE_F16 || t == NTP_DTYPE_I8;
}

bool ntp_shape_equal(const ntp_shape *a, const ntp_shape *b)
{
    if (a->ndim != b->ndim)
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->dim[d] != b->dim[d])
            return false;
    return true;
}

int64_t ntp_shape_numel(const ntp_shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++)
        if (s->dim[i] < 0 || !ntp__mul_ok(n, s->dim[i], &n))
            return -1;
    return n;
}

const char *ntp_shape_str(const ntp_shape *s, char *buf, size_t len)
{
    size_t used = 0;
    if (len == 0)
        return buf;
    buf[0] = '\0';
    used += (size_t)snprintf(buf + used, len - used, "[");
    for (int i = 0; i < s->ndim && used < len; i++)
        used +=
            (size_t)snprintf(buf + used, len - used, i ? ",%lld" : "%lld", (long long)s->dim[i]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
    return buf;
}

int64_t ntp__tensor_bytes(const ntp_tensor *t)
{
    int64_t n = ntp_shape_numel(&t->shape), b;
    if (n < 0 || !ntp__mul_ok(n, (int64_t)ntp_dtype_size(t->dtype), &b))
        return -1;
    return b;
}
