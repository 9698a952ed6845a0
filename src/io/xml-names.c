/* The reader's name table: every layer, input, alias and marker name with
 * what it names, in document order, plus an open-addressing hash index
 * (FNV-1a, load factor at most one half) so that resolving a reference
 * costs O(1) and a million-layer topology loads in linear time. */
#include <stdlib.h>
#include <string.h>

#include "xml-impl.h"

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

int ntp__xml_names_find(const ntp_xml_names *t, const char *name)
{
    if (t->n_slots == 0)
        return -1;
    size_t mask = t->n_slots - 1;
    for (size_t i = hash_str(name) & mask;; i = (i + 1) & mask) {
        int s = t->slot[i];
        if (s == 0)
            return -1;
        if (strcmp(t->e[s - 1].name, name) == 0)
            return s - 1;
    }
}

static bool names_rehash(ntp_xml_names *t, size_t n_slots)
{
    int *slot = calloc(n_slots, sizeof *slot);
    if (!slot)
        return false;
    for (int k = 0; k < t->n; k++) {
        size_t i = hash_str(t->e[k].name) & (n_slots - 1);
        while (slot[i])
            i = (i + 1) & (n_slots - 1);
        slot[i] = k + 1;
    }
    free(t->slot);
    t->slot = slot;
    t->n_slots = n_slots;
    return true;
}

bool ntp__xml_names_add(ntp_xml_names *t, const char *name, ntp_xml_name_kind kind, int index,
                        int line)
{
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        ntp_xml_name *e = realloc(t->e, (size_t)cap * sizeof *e);
        if (!e)
            return false;
        t->e = e;
        t->cap = cap;
    }
    /* Keep the load factor at most one half. */
    if ((size_t)(t->n + 1) * 2 > t->n_slots && !names_rehash(t, t->n_slots ? 2 * t->n_slots : 128))
        return false;
    t->e[t->n] = (ntp_xml_name){name, kind, index, line};
    size_t mask = t->n_slots - 1, i = hash_str(name) & mask;
    while (t->slot[i])
        i = (i + 1) & mask;
    t->slot[i] = ++t->n;
    return true;
}

void ntp__xml_names_free(ntp_xml_names *t)
{
    free(t->e);
    free(t->slot);
}
