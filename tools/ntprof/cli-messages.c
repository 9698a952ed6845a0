/* The library's messages in the CLI's words.
 *
 * The library names an option by its place in the API ("ntp_run_opts.tool
 * perf-record: ..."), since it is used from C without a command line; the
 * CLI, which knows which flag sets which field, prints the flag instead
 * ("--tool perf-record: ..."). An error names the option at fault as one of
 * its parts (ntp_ctx_error_part), so the CLI puts its flag there; an
 * option a message mentions in passing ("use ntp_run_opts.threads 4 or
 * fewer"), and a warning's, are found by their names in the text. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
    const char *api, *flag;
} names[] = {
    {"ntp_run_opts.inputs", "--input"},
    {"ntp_run_opts.tool", "--tool"},
    {"ntp_run_opts.counters", "--counters"},
    {"ntp_run_opts.place", "--place"},
    {"ntp_run_opts.pin", "--pin"},
    {"ntp_run_opts.only_marker", "--only"},
    {"ntp_run_opts.save_outputs_dir", "--save-outputs"},
    {"ntp_run_opts.threads", "--threads"},
    {"ntp_run_opts.iterations", "--iterations"},
    {"ntp_run_opts.min_time_s", "--min-time"},
    {"ntp_run_opts.cuda_graph", "--cuda-graph"},
    {"ntp_run_opts.backend_options", "--backend-options"},
    {"ntp_load_opts.set", "--set"},
    {"ntp_load_opts.batch", "--batch"},
    {"ntp_load_opts.precision", "--precision"},
    /* ntprof train (docs/train.md) */
    {"ntp_train_opts.inputs", "--input"},
    {"ntp_train_opts.labels", "--labels"},
    {"ntp_train_opts.input_lengths", "--input-lengths"},
    {"ntp_train_opts.target_lengths", "--target-lengths"},
    {"NTP_LOSS_CTC", "--loss ctc"},
    {"NTP_LOSS_MSE", "--loss mse"},
    {"ntp_generate_opts.backend", "--backend"},
    {"ntp_onnx_export_opts.network_only", "--network-only"},
    /* ntprof history copy */
    {"ntp_store_copy.from", "--from"},
    {"ntp_store_copy.to", "--to"},
    {"ntp_history_filter.since", "--since"},
    {"ntp_history_filter.limit", "--limit"},
    {"ntp_sweep_add_factor", "--vary"},
    {"NTP_SWEEP_OFAT", "--design ofat"},
    /* ntprof load (docs/load.md) */
    {"ntp_loadgen_opts.latency_bound_ms", "--latency-bound"},
    {"ntp_loadgen_opts.qps", "--qps"},
    {"ntp_loadgen_opts.max_batch", "--max-batch"},
    {"ntp_loadgen_opts.instances", "--instances"},
    {"ntp_loadgen_opts.threads_per_instance", "--threads-per-instance"},
    {"ntp_loadgen_opts.samples_per_query", "--samples-per-query"},
    {"ntp_loadgen_opts.batch_timeout_us", "--batch-timeout-us"},
    {"ntp_loadgen_opts.find_max_qps", "--find-max-qps"},
};

/* The flag that sets the option named api, or NULL. */
static const char *flag_of(const char *api)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i].api, api) == 0)
            return names[i].flag;
    return NULL;
}

static bool ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

const char *cli_message(const char *msg, char *buf, size_t len)
{
    size_t o = 0;
    if (len == 0)
        return msg;
    for (const char *p = msg; *p;) {
        const char *to = NULL;
        size_t n = 0;
        if (p == msg || !ident_char(p[-1]))
            for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
                n = strlen(names[i].api);
                if (strncmp(p, names[i].api, n) == 0 && !ident_char(p[n])) {
                    to = names[i].flag;
                    break;
                }
            }
        const char *src = to ? to : p;
        size_t k = to ? strlen(to) : 1;
        if (o + k >= len)
            return msg; /* too long to translate: the library's words will do */
        memcpy(buf + o, src, k);
        o += k;
        p += to ? n : 1;
    }
    buf[o] = '\0';
    return buf;
}

/* Append to buf at *n; false once it no longer fits. */
static bool put(char *buf, size_t len, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool put(char *buf, size_t len, size_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = *n < len ? vsnprintf(buf + *n, len - *n, fmt, ap) : -1;
    va_end(ap);
    if (k < 0 || (size_t)k >= len - *n)
        return false;
    *n += (size_t)k;
    return true;
}

const char *cli_errmsg(const ntp_ctx *ctx, char *buf, size_t len)
{
    const char *file = ntp_ctx_error_part(ctx, NTP_ERROR_FILE);
    const char *element = ntp_ctx_error_part(ctx, NTP_ERROR_ELEMENT);
    const char *layer = ntp_ctx_error_part(ctx, NTP_ERROR_LAYER);
    const char *option = ntp_ctx_error_part(ctx, NTP_ERROR_OPTION);
    int line = ntp_ctx_error_line(ctx);
    char tbuf[4096];
    const char *text = cli_message(ntp_ctx_error_part(ctx, NTP_ERROR_TEXT), tbuf, sizeof tbuf);
    const char *flag = option ? flag_of(option) : NULL;
    size_t n = 0;
    bool ok = len > 0;
    if (ok && file && line > 0)
        ok = put(buf, len, &n, "%s:%d: ", file, line);
    else if (ok && file)
        ok = put(buf, len, &n, "%s: ", file);
    if (ok && element && layer)
        ok = put(buf, len, &n, "<%s name='%s'>: ", element, layer);
    else if (ok && element)
        ok = put(buf, len, &n, "<%s>: ", element);
    else if (ok && layer)
        ok = put(buf, len, &n, "layer '%s': ", layer);
    if (ok && option)
        ok = put(buf, len, &n, "%s%s", flag ? flag : option, text[0] == ':' ? "" : " ");
    if (ok)
        ok = put(buf, len, &n, "%s", text);
    /* Too long to word anew: the library's words will do. */
    return ok ? buf : ntp_ctx_errmsg(ctx);
}
