/* ntprof run --backend onednn,xnnpack,blas,ref: the framework comparison
 * (docs/frameworks.md). Every backend runs the topology with the same
 * weights and inputs; the comparison shows them side by side, and each
 * backend's own report can go to a file of its own through a {backend}
 * placeholder, so that `ntprof compare` reads them like any saved runs. */
#include <stdlib.h>
#include <string.h>

#include "cli-backends.h"

#define PLACEHOLDER "{backend}"

/* path with every {backend} replaced by name; NULL when it does not fit. */
static const char *expand(const char *path, const char *name, char *buf, size_t len)
{
    size_t used = 0, pl = strlen(PLACEHOLDER), nl = strlen(name);
    for (const char *p = path; *p;) {
        if (strncmp(p, PLACEHOLDER, pl) == 0) {
            if (used + nl >= len)
                return NULL;
            memcpy(buf + used, name, nl);
            used += nl;
            p += pl;
        } else {
            if (used + 1 >= len)
                return NULL;
            buf[used++] = *p++;
        }
    }
    buf[used] = '\0';
    return buf;
}

static bool per_backend(const char *path)
{
    return path && strstr(path, PLACEHOLDER) != NULL;
}

static ntp_status write_run(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    return ntp_report_write_run(ctx, arg, fmt, f);
}

static ntp_status write_trace(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    (void)fmt;
    return ntp_report_write_run_trace(ctx, arg, f);
}

static ntp_status write_html(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    (void)fmt;
    return ntp_report_write_run_html(ctx, arg, f);
}

static ntp_status write_comparison(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    return ntp_report_write_backend_comparison(ctx, arg, fmt, f);
}

/* One file per backend through writer w; path holds {backend}. */
static int write_each(ntp_ctx *ctx, const ntp_backend_comparison *c, const char *path, cli_writer w,
                      ntp_format fmt)
{
    for (int i = 0; i < ntp_backend_comparison_run_count(c); i++) {
        char buf[4096];
        const char *p = expand(path, ntp_backend_comparison_run(c, i)->backend, buf, sizeof buf);
        if (!p) {
            cli_error("%s: path too long", path);
            return CLI_FAIL;
        }
        int rc = cli_write_output(ctx, p, w, ntp_backend_comparison_run(c, i)->result, fmt);
        if (rc != CLI_OK)
            return rc;
    }
    return CLI_OK;
}

int cli_run_backends(ntp_ctx *ctx, const ntp_graph *g, const ntp_run_opts *ro, cli_progress *prog,
                     ntp_format fmt, const char *output, const char *trace, const char *html,
                     const char *db)
{
    if (trace && !per_backend(trace)) {
        cli_error("--trace with several backends needs a {backend} in the file name");
        return CLI_USAGE;
    }
    if (html && !per_backend(html)) {
        cli_error("--html with several backends needs a {backend} in the file name");
        return CLI_USAGE;
    }
    char buf[1024];
    const char *names[16];
    int n = 0;
    if (ntp_backend_list_parse(ctx, ro->backend, buf, sizeof buf, names, 16, &n) != NTP_STATUS_OK) {
        cli_error("--backend: %s", ntp_ctx_errmsg(ctx));
        return CLI_USAGE;
    }
    ntp_backend_comparison *c = NULL;
    ntp_status st = ntp_run_compare(ctx, g, ro, names, n, &c);
    cli_progress_clear(prog);
    if (st != NTP_STATUS_OK)
        return cli_fail(ctx);
    /* The comparison table on stdout ends with each run's warnings. */
    cli_report_warnings(ctx, per_backend(output) || (!output && fmt == NTP_FORMAT_TABLE));
    int rc;
    if (per_backend(output)) {
        rc = write_each(ctx, c, output, write_run, fmt);
        if (rc == CLI_OK)
            rc = cli_write_output(ctx, NULL, write_comparison, c, NTP_FORMAT_TABLE);
    } else {
        rc = cli_write_output(ctx, output, write_comparison, c, fmt);
    }
    if (rc == CLI_OK && trace)
        rc = write_each(ctx, c, trace, write_trace, NTP_FORMAT_JSON);
    if (rc == CLI_OK && html)
        rc = write_each(ctx, c, html, write_html, NTP_FORMAT_TABLE);
    for (int i = 0; rc == CLI_OK && db && i < ntp_backend_comparison_run_count(c); i++)
        if (ntp_store_record_run(ctx, db, ntp_backend_comparison_run(c, i)->result, NULL) !=
            NTP_STATUS_OK) {
            fprintf(stderr,
                    "ntprof: warning: %s; the %s run was not recorded (--db PATH or --no-db)\n",
                    ntp_ctx_errmsg(ctx), ntp_backend_comparison_run(c, i)->backend);
            break;
        }
    ntp_backend_comparison_free(c);
    return rc;
}
