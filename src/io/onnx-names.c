/* Small helpers shared by the ONNX reader and writer: an open-addressing
 * string -> int table, and float attributes read back as decimals. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "onnx-impl.h"

struct ntp_onnx_names {
    char **key; /* owned copies */
    int *val;
    size_t cap, n;
};

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

ntp_onnx_names *ntp__onnx_names_new(void)
{
    ntp_onnx_names *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->cap = 256;
    t->key = calloc(t->cap, sizeof *t->key);
    t->val = calloc(t->cap, sizeof *t->val);
    if (!t->key || !t->val) {
        free(t->key);
        free(t->val);
        free(t);
        return NULL;
    }
    return t;
}

void ntp__onnx_names_free(ntp_onnx_names *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->cap; i++)
        free(t->key[i]);
    free(t->key);
    free(t->val);
    free(t);
}

int ntp__onnx_names_get(const ntp_onnx_names *t, const char *k)
{
    for (size_t i = hash(k) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        if (!t->key[i])
            return -1;
        if (strcmp(t->key[i], k) == 0)
            return t->val[i];
    }
}

bool ntp__onnx_names_put(ntp_onnx_names *t, const char *k, int v)
{
    if (2 * (t->n + 1) > t->cap) {
        size_t cap = 2 * t->cap;
        char **key = calloc(cap, sizeof *key);
        int *val = calloc(cap, sizeof *val);
        if (!key || !val) {
            free(key);
            free(val);
            return false;
        }
        for (size_t i = 0; i < t->cap; i++)
            if (t->key[i]) {
                size_t j = hash(t->key[i]) & (cap - 1);
                while (key[j])
                    j = (j + 1) & (cap - 1);
                key[j] = t->key[i];
                val[j] = t->val[i];
            }
        free(t->key);
        free(t->val);
        t->key = key;
        t->val = val;
        t->cap = cap;
    }
    size_t i = hash(k) & (t->cap - 1);
    while (t->key[i] && strcmp(t->key[i], k) != 0)
        i = (i + 1) & (t->cap - 1);
    if (!t->key[i]) {
        if (!(t->key[i] = ntp__strdup(k)))
            return false;
        t->n++;
    }
    t->val[i] = v;
    return true;
}

double ntp__onnx_float_value(float f)
{
    char buf[32];
    if (!isfinite(f))
        return f;
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, (double)f);
        if (strtof(buf, NULL) == f)
            return strtod(buf, NULL);
    }
    return f;
}
