/* The markup reader's internals, shared by src/io/xml-reader.c (document
 * walk, names, wiring) and src/io/xml-attrs.c (per-op attribute tables and
 * strict value parsers). Private to libntprof. */
#ifndef NTPROF_XML_IMPL_H
#define NTPROF_XML_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libxml/tree.h>
#include "graph/graph-impl.h"

/* Limits of the reader (docs/topology-format.md, "Limits"). */
#define NTP_XML_MAX_FILE_BYTES ((int64_t)64 << 20)
#define NTP_XML_MAX_DEPTH 16
#define NTP_XML_MAX_LAYERS 1000000
/* Elements instantiated by repeats (layers, aliases, markers, inputs and
 * the iterations themselves): bounds the work of nested repeats with empty
 * or layer-free bodies, which the layer limit alone would not. */
#define NTP_XML_MAX_EXPANDED 4000000
#define NTP_XML_MAX_ATTR_BYTES 65536
#define NTP_XML_MAX_NAME_BYTES 255
/* After substitution: the params' values together (they live for the whole
 * read), and every substituted attribute together (which bounds the work a
 * small file can ask for). Each single value is also held to
 * NTP_XML_MAX_ATTR_BYTES (NTP_EXPR_MAX_RESULT). */
#define NTP_XML_MAX_PARAM_BYTES ((int64_t)16 << 20)
#define NTP_XML_MAX_SUBST_BYTES ((int64_t)256 << 20)

/* --- parsing (xml-parse.c) -------------------------------------------------- */

/* Parse buf[0..len) as XML safely: no DTD (refused outright), no entity
 * expansion, no network, libxml2's messages captured and turned into one
 * line "SRC:LINE: malformed XML: ..." in ctx. src names the buffer in
 * messages. On success *doc is the tree (xmlFreeDoc it). */
ntp_status ntp__xml_parse(ntp_ctx *ctx, const char *src, const char *buf, size_t len,
                          xmlDocPtr *doc);

/* --- names (xml-names.c) ------------------------------------------------------ */

typedef enum ntp_xml_name_kind {
    NTP_XML_NAME_LAYER,
    NTP_XML_NAME_INPUT,
    NTP_XML_NAME_ALIAS,
    NTP_XML_NAME_MARKER
} ntp_xml_name_kind;

typedef struct ntp_xml_name {
    const char *name; /* not owned: the node's, tensor's, alias's or marker's */
    ntp_xml_name_kind kind;
    int index; /* node, tensor, alias or marker index */
    int line;
} ntp_xml_name;

/* Entries in document order, plus an open-addressing index over them. */
typedef struct ntp_xml_names {
    ntp_xml_name *e;
    int n, cap;
    int *slot; /* entry index + 1; 0 is empty */
    size_t n_slots;
} ntp_xml_names;

/* Entry index of `name`, or -1. */
int ntp__xml_names_find(const ntp_xml_names *t, const char *name);
/* Add a name the caller has checked is new; false when memory runs out. */
bool ntp__xml_names_add(ntp_xml_names *t, const char *name, ntp_xml_name_kind kind, int index,
                        int line);
void ntp__xml_names_free(ntp_xml_names *t);

/* --- attributes (xml-attrs.c) ---------------------------------------------- */

/* One attribute of a layer element after ${...} substitution. */
typedef struct ntp_xml_attr {
    const char *name;
    const char *value;
} ntp_xml_attr;

/* Attributes every layer element accepts, besides its op's own. */
extern const char *const ntp__xml_common_attrs[];
extern const int ntp__xml_n_common_attrs;

/* Whether the element of `op` accepts the op-specific attribute `name`. */
bool ntp__xml_op_accepts(ntp_op op, const char *name);
/* The op-specific attribute names of `op` (at most max) into names; returns
 * how many there are. */
int ntp__xml_op_attr_names(ntp_op op, const char **names, int max);

/* Parse the op-specific attributes of one layer into *a (which starts from
 * the node's defaults: ntp__attrs_default, then ntp__attrs_op_default) as
 * src/graph/op-attrs.h declares them, check the required ones and their
 * combinations, and fill string defaults (ctc_decode's alphabet). *n_out receives the number of
 * output tensors the layer has (split: its parts). On failure writes one
 * line such as "attribute 'units': expected a positive integer, got 'abc'"
 * into err. a->alphabet may be allocated even on failure: the caller owns
 * it through the node. */
ntp_status ntp__xml_parse_op_attrs(ntp_op op, const ntp_xml_attr *attrs, int n_attrs, ntp_attrs *a,
                                   int *n_out, char *err, size_t errlen);

/* --- strict value parsers, shared with the structural elements ----------- */
/* Integer >= min (min is 0 or 1 for "non-negative"/"positive", INT64_MIN
 * for any). Message: "expected a positive integer, got 'abc'". */
ntp_status ntp__xml_parse_int(const char *v, int64_t min, int64_t *out, char *err, size_t errlen);
/* Comma-separated integers, each >= min, 1..max values. */
ntp_status ntp__xml_parse_int_list(const char *v, int64_t min, int max, int64_t *vals, int *n,
                                   char *err, size_t errlen);
/* One of names[0..n); *idx is its position. The message lists them and
 * suggests the nearest. */
ntp_status ntp__xml_parse_enum(const char *v, const char *const *names, int n, int *idx, char *err,
                               size_t errlen);
/* Any dtype name or alias ntp_dtype_parse() accepts. */
ntp_status ntp__xml_parse_dtype(const char *v, ntp_dtype *out, char *err, size_t errlen);
/* A compute precision: f32, bf16, f16 or i8 (and their aliases). */
ntp_status ntp__xml_parse_precision(const char *v, ntp_dtype *out, char *err, size_t errlen);
/* "nchw" or "nhwc". */
ntp_status ntp__xml_parse_layout(const char *v, ntp_layout *out, char *err, size_t errlen);

#endif
