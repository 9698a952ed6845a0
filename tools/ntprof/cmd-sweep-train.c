/* ntprof sweep --train: training over the sweep's configurations (batch
 * and params), with memory by data structure per configuration and the
 * planned peak beside the measured one (docs/train.md). The library runs
 * them in this process, one after another: each configuration's peak is
 * measured as the growth of the resident-set high-water mark, which the
 * trainer resets at its start. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd-sweep.h"

static void on_done(void *user, int c, int n, const char *label, const char *state)
{
    cli_progress *p = user;
    if (p->tty) {
        cli_progress_show(p, "sweep", c, n, label);
        return;
    }
    fprintf(stderr, "ntprof: sweep %d/%d %s: %s\n", c, n, label, state);
    fflush(stderr);
}

static ntp_status write_train_sweep(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    return ntp_report_write_train_sweep(ctx, arg, fmt, f);
}

static ntp_status write_train_html(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f)
{
    (void)fmt;
    return ntp_report_write_train_sweep_html(ctx, arg, f);
}

int sweep_train(ntp_ctx *ctx, const ntp_sweep *sw, const char *file, const ntp_load_opts *lo,
                const ntp_train_opts *o, const argv_list *fixed, const sweep_train_args *a)
{
    ntp_load_opts l = *lo;
    ntp_train_opts to = *o;
    if (a->slurm || a->keep || a->timeout > 0) {
        cli_error("sweep --train runs here, without --executor slurm, --keep or --timeout");
        return CLI_USAGE;
    }
    for (int i = 0; i < fixed->n; i += 2) {
        const char *opt = fixed->v[i], *val = i + 1 < fixed->n ? fixed->v[i + 1] : "";
        int64_t v;
        if (!strcmp(opt, "--set"))
            continue;
        if (!strcmp(opt, "--backend")) {
            to.backend = val;
            continue;
        }
        if (!strcmp(opt, "--batch") && cli_parse_int(val, 1, INT64_MAX, &v)) {
            l.batch = v;
        } else if (!strcmp(opt, "--seed") && cli_parse_int(val, 1, INT64_MAX, &v)) {
            to.seed = (uint64_t)v;
        } else if (!strcmp(opt, "--batch") || !strcmp(opt, "--seed")) {
            cli_error("%s expects a positive integer, got '%s'", opt, val);
            return CLI_USAGE;
        } else {
            cli_error("sweep --train takes --set, --batch, --seed, --backend, --loss, "
                      "--optimizer, --lr and --steps, not %s",
                      opt);
            return CLI_USAGE;
        }
    }
    /* Training's own budget, with its breakdown (as ntprof train). */
    to.max_memory = l.max_memory;
    if (to.max_memory == 0) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        to.max_memory = pages > 0 && page > 0 ? (int64_t)pages * page : -1;
    }
    l.max_memory = -1;
    cli_progress prog;
    cli_progress_init(&prog);
    ntp_train_sweep *ts = NULL;
    if (ntp_train_sweep_run(ctx, sw, file, &l, &to, on_done, &prog, &ts) != NTP_STATUS_OK) {
        cli_progress_clear(&prog);
        return cli_fail(ctx);
    }
    cli_progress_clear(&prog);
    int n = ntp_sweep_config_count(sw), failed = ntp_train_sweep_failed(ts), rc;
    if (failed == n) {
        ntp_report_write_train_sweep(ctx, ts, NTP_FORMAT_TABLE, stderr);
        cli_error("every configuration failed");
        rc = CLI_FAIL;
    } else {
        rc = cli_write_output(ctx, a->output, write_train_sweep, ts, a->fmt);
        if (rc == CLI_OK && a->html)
            rc = cli_write_output(ctx, a->html, write_train_html, ts, NTP_FORMAT_TABLE);
        if (rc == CLI_OK && failed > 0)
            fprintf(stderr, "ntprof: warning: %d of %d configurations failed (see the table)\n",
                    failed, n);
    }
    ntp_train_sweep_free(ts);
    return rc;
}
