/* ntprof counters: what this machine can count, and why not the rest. */
#include <string.h>

#include "cli.h"

/* Write text word-wrapped at 100 columns, continuation lines indented. */
static void wrapped(const char *text, int indent, int first_col)
{
    int col = first_col;
    const char *p = text;
    while (*p) {
        size_t n = strcspn(p, " ");
        if (col > indent && col + 1 + (int)n > 100) {
            printf("\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            putchar(' ');
            col++;
        }
        printf("%.*s", (int)n, p);
        col += (int)n;
        p += n;
        while (*p == ' ')
            p++;
    }
    putchar('\n');
}

/* Declared here and in main.c's command table (cli.h belongs to the CLI's
 * owner). */
/* o is an event that cannot be counted for the same reason as it (both
 * shown: --all, or not another PMU's). */
static bool same_na(const ntp_counter_info *o, const ntp_counter_info *it, bool all)
{
    return !strcmp(o->kind, "event") && !o->available && (all || !strchr(o->name, '/')) &&
           !strcmp(o->reason, it->reason);
}

int cmd_counters(int argc, char **argv);

int cmd_counters(int argc, char **argv)
{
    bool all = false;
    const cli_option opts[] = {
        CLI_HELP("usage: ntprof counters [--all]\n"
                 "\n"
                 "Lists the counter sets and events `ntprof run --counters` accepts and the\n"
                 "tools `ntprof run --tool` can steer, each with whether it works on this\n"
                 "machine and, when it does not, why (docs/counters.md). Every answer comes\n"
                 "from trying: each event is opened once, perf and valgrind are asked their\n"
                 "versions.\n"
                 "\n"),
        CLI_SET("all", 'a', "also list every event of the other kernel PMUs (msr, ...)", &all),
        CLI_OPT("help", 'h', NULL, "this text"),
        CLI_OPT_END,
    };
    cli_getopt_state gs = {0};
    int opt;
    while ((opt = cli_getopt(argc, argv, opts, &gs)) != -1) {
        switch (opt) {
        default: return cli_option_end("counters", opt, opts, 16);
        }
    }
    if (!cli_want_files("counters", argc, argv, 0, NULL))
        return CLI_USAGE;
    ntp_ctx *ctx = cli_ctx_new();
    if (!ctx)
        return CLI_FAIL;
    ntp_counter_list *l = NULL;
    if (ntp_counters_probe(ctx, &l) != NTP_STATUS_OK) {
        int rc = cli_fail(ctx);
        ntp_ctx_free(ctx);
        return rc;
    }
    int n = ntp_counter_list_count(l);
    static const char *const kinds[] = {"set", "event", "library", "tool"};
    static const char *const titles[] = {"counter sets (--counters)", "events (--counters)",
                                         "libraries", "tools (--tool)"};
    for (int k = 0; k < 4; k++) {
        printf("%s%s:\n", k ? "\n" : "", titles[k]);
        int hidden = 0;
        for (int i = 0; i < n; i++) {
            const ntp_counter_info *it = ntp_counter_list_item(l, i);
            if (strcmp(it->kind, kinds[k]) != 0)
                continue;
            /* Other PMUs' events are many; by default one line says so. */
            if (!all && k == 1 && strchr(it->name, '/')) {
                hidden++;
                continue;
            }
            /* Events that cannot be counted for the same reason share a line. */
            if (k == 1 && !it->available)
                continue;
            int col = printf("  %-24s %-4s ", it->name, it->available ? "yes" : "n/a");
            char line[2048];
            if (it->available)
                snprintf(line, sizeof line, "%s%s%s", it->description, it->reason ? "; " : "",
                         it->reason ? it->reason : "");
            else
                snprintf(line, sizeof line, "%s", it->reason ? it->reason : "not available");
            wrapped(line, 32, col);
        }
        for (int i = 0; k == 1 && i < n; i++) {
            const ntp_counter_info *it = ntp_counter_list_item(l, i);
            if (strcmp(it->kind, "event") != 0 || it->available || (!all && strchr(it->name, '/')))
                continue;
            bool seen = false;
            for (int j = 0; j < i && !seen; j++)
                seen = same_na(ntp_counter_list_item(l, j), it, all);
            if (seen)
                continue;
            char line[8192];
            size_t u = 0;
            for (int j = i; j < n && u < sizeof line; j++) {
                const ntp_counter_info *o = ntp_counter_list_item(l, j);
                if (same_na(o, it, all))
                    u +=
                        (size_t)snprintf(line + u, sizeof line - u, "%s%s", u ? ", " : "", o->name);
            }
            printf("  n/a:");
            wrapped(line, 8, 6);
            printf("       because: ");
            wrapped(it->reason, 16, 16);
        }
        if (hidden)
            printf(
                "  (%d event%s of other kernel PMUs such as msr/tsc/: `ntprof counters --all`)\n",
                hidden, hidden == 1 ? "" : "s");
    }
    ntp_counter_list_free(l);
    ntp_ctx_free(ctx);
    return CLI_OK;
}
