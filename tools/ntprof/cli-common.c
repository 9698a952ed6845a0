/* Option parsing and output helpers shared by the subcommands. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <getopt.h>

#include "cli.h"

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ntprof: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_fail(ntp_ctx *ctx)
{
    cli_print_warnings(ctx);
    const char *msg = ntp_ctx_errmsg(ctx);
    fprintf(stderr, "ntprof: %s\n", msg[0] ? msg : ntp_status_str(ntp_ctx_status(ctx)));
    return CLI_FAIL;
}

bool cli_parse_format(const char *s, ntp_format *out)
{
    if (ntp_format_parse(s, out) == NTP_STATUS_OK)
        return true;
    cli_error("--format expects table, json or csv, got '%s'", s);
    return false;
}

ntp_ctx *cli_ctx_new(void)
{
    ntp_ctx *ctx = ntp_ctx_init();
    if (!ctx)
        cli_error("out of memory");
    return ctx;
}

bool cli_want_files(const char *cmd, int argc, char **argv, int want, const char *what)
{
    int have = argc - optind;
    if (have == want)
        return true;
    if (want == 0)
        cli_error("%s takes no FILE, got '%s' (see 'ntprof %s --help')", cmd, argv[optind], cmd);
    else if (have == 0)
        cli_error("%s needs %s (see 'ntprof %s --help')", cmd, what, cmd);
    else
        cli_error("%s takes one FILE (see 'ntprof %s --help')", cmd, cmd);
    return false;
}

void cli_print_warnings(ntp_ctx *ctx)
{
    for (size_t i = 0; i < ntp_ctx_warning_count(ctx); i++)
        fprintf(stderr, "ntprof: warning: %s\n", ntp_ctx_warning(ctx, i));
    ntp_ctx_clear_warnings(ctx);
}

bool cli_parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

bool cli_parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

bool cli_parse_size(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0)
        return false;
    double mul = 1;
    if (*end) {
        switch (*end) {
        case 'k': case 'K': mul = 1024.0; break;
        case 'm': case 'M': mul = 1024.0 * 1024; break;
        case 'g': case 'G': mul = 1024.0 * 1024 * 1024; break;
        case 't': case 'T': mul = 1024.0 * 1024 * 1024 * 1024; break;
        default: return false;
        }
        end++;
        if (*end == 'i')
            end++;
        if (*end == 'B' || *end == 'b')
            end++;
        if (*end)
            return false;
    }
    double b = v * mul;
    if (b > 9.0e18)
        return false;
    *out = (int64_t)b;
    return true;
}

int cli_topo_option(cli_topo_opts *o, int opt, const char *arg)
{
    switch (opt) {
    case 's':
        if (!strchr(arg, '=') || arg[0] == '=') {
            cli_error("--set expects NAME=VALUE, got '%s'", arg);
            return -1;
        }
        if (o->n_set == o->cap_set) {
            int cap = o->cap_set ? 2 * o->cap_set : 8;
            const char **p = realloc(o->set, (size_t)cap * sizeof *p);
            if (!p) {
                cli_error("out of memory");
                return -1;
            }
            o->set = p;
            o->cap_set = cap;
        }
        o->set[o->n_set++] = arg;
        return 1;
    case 'b':
        if (!cli_parse_int(arg, 1, INT32_MAX, &o->batch)) {
            cli_error("--batch expects a positive integer, got '%s'", arg);
            return -1;
        }
        return 1;
    case 'p':
        o->precision = arg;
        return 1;
    case 'M':
        if (!cli_parse_size(arg, &o->max_memory) || o->max_memory == 0) {
            cli_error("--max-memory expects a size such as 512M or 4G, got '%s'", arg);
            return -1;
        }
        return 1;
    default:
        return 0;
    }
}

void cli_topo_free(cli_topo_opts *o) { free(o->set); }

ntp_load_opts cli_load_opts(const cli_topo_opts *o)
{
    ntp_load_opts lo = {0};
    lo.set = o->set;
    lo.n_set = o->n_set;
    lo.batch = o->batch;
    lo.precision = o->precision;
    lo.max_memory = o->max_memory;
    return lo;
}

int cli_check_outputs(ntp_ctx *ctx, const ntp_output_path *outs, int n_out,
                      const char *const *inputs, int n_in)
{
    return ntp_output_check(ctx, outs, n_out, inputs, n_in) == NTP_STATUS_OK ? CLI_OK
                                                                             : cli_fail(ctx);
}

int cli_write_output(ntp_ctx *ctx, const char *path, cli_writer w, const void *arg, ntp_format fmt)
{
    ntp_output *out;
    if (ntp_output_open(ctx, path ? path : "-", &out) != NTP_STATUS_OK)
        return cli_fail(ctx);
    if (w(ctx, arg, fmt, ntp_output_file(out)) != NTP_STATUS_OK) {
        ntp_output_abort(out);
        return cli_fail(ctx);
    }
    if (ntp_output_commit(ctx, out) != NTP_STATUS_OK)
        return cli_fail(ctx);
    return CLI_OK;
}
