/* Option parsing and output helpers shared by the subcommands. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

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
    char buf[4096];
    const char *msg = cli_errmsg(ctx, buf, sizeof buf);
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
    char buf[4096];
    for (size_t i = 0; i < ntp_ctx_warning_count(ctx); i++)
        fprintf(stderr, "ntprof: warning: %s\n",
                cli_message(ntp_ctx_warning(ctx, i), buf, sizeof buf));
    ntp_ctx_clear_warnings(ctx);
}

void cli_report_warnings(ntp_ctx *ctx, bool table_on_stdout)
{
    if (table_on_stdout)
        ntp_ctx_clear_warnings(ctx);
    else
        cli_print_warnings(ctx);
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
    /* k, M, G, T alone or with iB are binary (KiB = 1024); with B alone
     * decimal (MB = 10^6), as in SI and IEC 80000-13. Anything else (a
     * lower-case b, which would be bits, or a stray letter) is refused
     * rather than guessed. */
    static const struct unit {
        const char *suffix;
        double bytes;
    } units[] = {
        {"", 1},
        {"B", 1},
        {"k", 1024.0},
        {"K", 1024.0},
        {"KiB", 1024.0},
        {"kB", 1e3},
        {"KB", 1e3},
        {"M", 1048576.0},
        {"MiB", 1048576.0},
        {"MB", 1e6},
        {"G", 1073741824.0},
        {"GiB", 1073741824.0},
        {"GB", 1e9},
        {"T", 1099511627776.0},
        {"TiB", 1099511627776.0},
        {"TB", 1e12},
    };
    /* A plain decimal number: no sign, no "inf", no hexadecimal. */
    if (!((s[0] >= '0' && s[0] <= '9') || s[0] == '.') || strpbrk(s, "xX"))
        return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v))
        return false;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].suffix) == 0) {
            double b = v * units[i].bytes;
            if (b > 9.0e18)
                return false;
            *out = (int64_t)llround(b);
            return true;
        }
    return false;
}

const char *cli_backend_names(const char *list, char *buf, size_t len)
{
    const char *built = ntp_backends();
    size_t used = 0;
    for (const char *p = list;;) {
        size_t n = strcspn(p, ",");
        const char *name = p;
        size_t nl = n;
        for (const char *b = built; *b;) {
            size_t bl = strcspn(b, ",");
            if (bl == n && strncasecmp(b, p, n) == 0) {
                name = b;
                break;
            }
            b += bl + (b[bl] == ',');
        }
        if (used + nl + 2 > len)
            return list;
        memcpy(buf + used, name, nl);
        used += nl;
        if (!p[n])
            break;
        buf[used++] = ',';
        p += n + 1;
    }
    buf[used] = '\0';
    return buf;
}

bool cli_place_arg(char *arg)
{
    if (!strchr(arg, '=')) {
        cli_error("--place expects LAYER=BACKEND, got '%s'", arg);
        return false;
    }
    /* The backend's name as the build spells it, in place (a
     * case-insensitive match has the same length). */
    char *be = strchr(arg, '=') + 1, canon[256];
    const char *c = cli_backend_names(be, canon, sizeof canon);
    if (c != be && strlen(c) == strlen(be))
        memcpy(be, c, strlen(c));
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
        /* tf32 is f32 storage with TF32 math where a backend offers it
         * (docs/gpu.md): the topology loads at f32. */
        if (o->math_modes && strcmp(arg, "tf32") == 0) {
            o->precision = NTP_DTYPE_F32;
            o->math = NTP_MATH_TF32;
        } else if (ntp_dtype_parse(arg, &o->precision) == NTP_STATUS_OK &&
                   ntp_dtype_is_precision(o->precision)) {
            o->math = NTP_MATH_DEFAULT;
        } else {
            cli_error("--precision expects f32, bf16, f16%s, got '%s'",
                      o->math_modes ? ", i8 or tf32" : " or i8", arg);
            return -1;
        }
        o->set_precision = true;
        return 1;
    case 'M':
        if (!cli_parse_size(arg, &o->max_memory) || o->max_memory == 0) {
            cli_error("--max-memory expects a size such as 512MiB, 4GiB (or 4G) or 4GB "
                      "(= 4e9 bytes), got '%s'",
                      arg);
            return -1;
        }
        return 1;
    default: return 0;
    }
}

void cli_topo_free(cli_topo_opts *o)
{
    free(o->set);
}

ntp_load_opts cli_load_opts(const cli_topo_opts *o)
{
    ntp_load_opts lo = {0};
    lo.set = o->set;
    lo.n_set = o->n_set;
    lo.batch = o->batch;
    lo.set_precision = o->set_precision;
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

ntp_output_path cli_db_output(ntp_ctx *ctx, const char *db, bool use_db, char *buf, size_t len)
{
    ntp_output_path o = {db ? "--db" : "the default history database", NULL, NTP_OUTPUT_SAME_ONLY};
    if (!use_db)
        return o;
    if (db)
        o.path = db;
    else if (ntp_store_default_path(ctx, buf, len) == NTP_STATUS_OK)
        o.path = buf; /* else the error stays in ctx for the caller's warning */
    return o;
}

void cli_db_migrate(ntp_ctx *ctx, const char *db)
{
    ntp_store *s;
    if (!db || ntp_store_is_url(db) || access(db, F_OK) != 0)
        return;
    /* Read-only first: a current history is not touched (no journal
     * mode set, nothing written by a run that then fails). Unsupported
     * is an older or a newer schema: the writer migrates the first and
     * refuses the second, which the read that follows reports. */
    ntp_status st = ntp_store_open(ctx, db, NTP_STORE_READ_ONLY, &s);
    if (st == NTP_STATUS_UNSUPPORTED)
        st = ntp_store_open(ctx, db, NTP_STORE_CREATE, &s);
    if (st == NTP_STATUS_OK)
        ntp_store_close(s);
    else
        ntp_ctx_clear(ctx);
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

int cli_begin_topology_command(const char *cmd, const char *what, int argc, char **argv,
                               const cli_topo_opts *topo, const ntp_output_path *outs, int n_out,
                               ntp_ctx **ctx, ntp_load_opts *lo)
{
    *ctx = NULL;
    if (!cli_want_files(cmd, argc, argv, 1, what))
        return CLI_USAGE;
    ntp_ctx *c = cli_ctx_new();
    if (!c)
        return CLI_FAIL;
    *lo = cli_load_opts(topo);
    const char *ins[] = {argv[optind]};
    int rc = cli_check_outputs(c, outs, n_out, ins, 1);
    if (rc != CLI_OK) {
        ntp_ctx_free(c);
        return rc;
    }
    *ctx = c;
    return CLI_OK;
}

int cli_option_end(const char *cmd, int opt, const cli_option *t, int help_col)
{
    if (opt == 'h') {
        cli_usage(stdout, t, help_col);
        return CLI_OK;
    }
    /* A bad value has been named already; getopt has named an unknown
     * option, and the command points at its --help. */
    if (opt != CLI_OPT_BAD)
        cli_error("see 'ntprof %s --help'", cmd);
    return CLI_USAGE;
}

int cli_run_option(cli_run_opts *o, cli_topo_opts *topo, int opt, const char *arg)
{
    int64_t v;
    switch (opt) {
    case 'B': o->backend = cli_backend_names(arg, o->backend_buf, sizeof o->backend_buf); return 1;
    case CLI_OPT_SEED:
        if (!cli_parse_int(arg, 0, INT64_MAX, &v)) {
            cli_error("--seed expects a non-negative integer, got '%s'", arg);
            return -1;
        }
        o->seed = (uint64_t)v;
        o->set_seed = true;
        return 1;
    case 'f': return cli_parse_format(arg, &o->fmt) ? 1 : -1;
    case CLI_OPT_TRACE: o->trace = arg; return 1;
    default: return cli_topo_option(topo, opt, arg);
    }
}

int cli_record_failed(ntp_ctx *ctx, const char *db)
{
    if (ntp_store_is_url(db))
        return cli_fail(ctx);
    fprintf(stderr, "ntprof: warning: %s; the run was not recorded (--db PATH or --no-db)\n",
            ntp_ctx_errmsg(ctx));
    return CLI_OK;
}
