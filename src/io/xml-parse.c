/* Safe parsing of markup with libxml2.
 *
 * A topology file is untrusted input, so the parser runs with the network
 * off (XML_PARSE_NONET), without entity substitution (no XML_PARSE_NOENT),
 * without loading DTDs (no XML_PARSE_DTDLOAD) and within libxml2's default
 * size and depth limits (no XML_PARSE_HUGE). Any <!DOCTYPE> stops the parse
 * before its internal subset is read. libxml2's messages go to a capture
 * attached to the parser context (thread-safe: nothing global is shared
 * between parses) and become one "FILE:LINE: malformed XML: ..." line. */
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlversion.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "xml-impl.h"

/* libxml2 2.12 made the structured error callback take a const pointer. */
#if LIBXML_VERSION >= 21200
typedef const xmlError *ntp_xml_error_ptr;
#else
typedef xmlErrorPtr ntp_xml_error_ptr;
#endif

/* What one parse saw, reached through the parser context's _private. */
typedef struct capture {
    bool dtd;
    int dtd_line;
    bool xml_failed;
    int xml_line;
    char xml_msg[512];
} capture;

static pthread_once_t xml_once = PTHREAD_ONCE_INIT;

static void xml_init(void)
{
    xmlInitParser();
}

static void on_xml_error(void *user, ntp_xml_error_ptr e)
{
    xmlParserCtxtPtr ctxt = user;
    capture *r = ctxt ? ctxt->_private : NULL;
    /* Warnings do not make a document malformed; the first error is the
     * cause, later ones are usually its echoes. */
    if (!r || !e || e->level < XML_ERR_ERROR || r->xml_failed)
        return;
    r->xml_failed = true;
    r->xml_line = e->line;
    snprintf(r->xml_msg, sizeof r->xml_msg, "%s", e->message ? e->message : "parse error");
    size_t n = strlen(r->xml_msg);
    while (n > 0 && (r->xml_msg[n - 1] == '\n' || r->xml_msg[n - 1] == ' '))
        r->xml_msg[--n] = '\0';
}

static void on_generic_error(void *user, const char *fmt, ...)
{
    /* Messages outside the parser's structured path are dropped: the
     * library never prints. */
}

/* Called by libxml2 for any <!DOCTYPE ...>, before the internal subset is
 * read: stopping here means no entity is ever declared, let alone
 * expanded (billion laughs, XXE). */
static void on_internal_subset(void *user, const xmlChar *name, const xmlChar *external_id,
                               const xmlChar *system_id)
{
    xmlParserCtxtPtr ctxt = user;
    capture *r = ctxt->_private;
    r->dtd = true;
    r->dtd_line = ctxt->input ? ctxt->input->line : 0;
    xmlStopParser(ctxt);
}

ntp_status ntp__xml_parse(ntp_ctx *ctx, const char *src, const char *buf, size_t len,
                          xmlDocPtr *out)
{
    *out = NULL;
    pthread_once(&xml_once, xml_init);
    if (len == 0)
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR, "%s:1: malformed XML: the document is empty",
                          src);
    if (len > (size_t)NTP_XML_MAX_FILE_BYTES)
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                          "%s: the topology is %zu bytes, more than the limit of 64 MiB", src, len);
    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    if (!ctxt)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "%s: out of memory", src);
    capture cap;
    memset(&cap, 0, sizeof cap);
    capture *r = &cap;
    ctxt->_private = r;
    ctxt->sax->serror = on_xml_error;
    ctxt->sax->internalSubset = on_internal_subset;
    /* libxml2's global handlers are per thread; route them here for the
     * duration of the parse and put the caller's back afterwards. */
    xmlStructuredErrorFunc old_s = xmlStructuredError;
    void *old_sctx = xmlStructuredErrorContext;
    xmlGenericErrorFunc old_g = xmlGenericError;
    void *old_gctx = xmlGenericErrorContext;
    xmlSetStructuredErrorFunc(ctxt, on_xml_error);
    xmlSetGenericErrorFunc(NULL, on_generic_error);
    /* No NOENT (no entity substitution), no DTDLOAD, no HUGE (libxml2's
     * own size and depth limits stay on). */
    int options = XML_PARSE_NONET | XML_PARSE_NOCDATA | XML_PARSE_BIG_LINES;
    xmlDocPtr doc = xmlCtxtReadMemory(ctxt, buf, (int)len, src, NULL, options);
    bool well_formed = ctxt->wellFormed != 0;
    xmlSetStructuredErrorFunc(old_sctx, old_s);
    xmlSetGenericErrorFunc(old_gctx, old_g);
    xmlFreeParserCtxt(ctxt);
    if (doc && (doc->intSubset || doc->extSubset))
        r->dtd = true;
    if (r->dtd) {
        xmlFreeDoc(doc);
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR,
                          "%s:%d: DTDs and entities are not accepted (found <!DOCTYPE>)", src,
                          r->dtd_line > 0 ? r->dtd_line : 1);
    }
    if (!doc || !well_formed || r->xml_failed) {
        xmlFreeDoc(doc);
        if (r->xml_failed)
            return ntp__error(ctx, NTP_STATUS_PARSE_ERROR, "%s:%d: malformed XML: %s", src,
                              r->xml_line > 0 ? r->xml_line : 1, r->xml_msg);
        return ntp__error(ctx, NTP_STATUS_PARSE_ERROR, "%s:1: malformed XML", src);
    }
    *out = doc;
    return NTP_STATUS_OK;
}
