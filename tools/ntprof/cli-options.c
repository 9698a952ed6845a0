/* Option tables: one per command, from which getopt_long's arrays, the
 * parsing of simple values and the --help text are all made, so that an
 * option cannot be parsed without being documented or the other way
 * round (cli.h). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Build getopt_long's arrays from the table, once per parse. */
static bool build(cli_getopt_state *st, const cli_option *t)
{
    int n = 0, k = 0;
    for (const cli_option *o = t; o->kind != CLI_END; o++) {
        if (o->kind == CLI_TEXT)
            continue;
        if (n + 1 >= CLI_MAX_OPTIONS || k + 3 >= (int)sizeof st->shorts)
            return false;
        st->longs[n++] =
            (struct option){o->name, o->arg ? required_argument : no_argument, NULL, o->key};
        if (o->key > 0 && o->key < 128) {
            st->shorts[k++] = (char)o->key;
            if (o->arg)
                st->shorts[k++] = ':';
        }
    }
    st->longs[n] = (struct option){NULL, 0, NULL, 0};
    st->shorts[k] = '\0';
    st->built = true;
    return true;
}

static const cli_option *find(const cli_option *t, int key)
{
    for (const cli_option *o = t; o->kind != CLI_END; o++)
        if (o->kind != CLI_TEXT && o->key == key)
            return o;
    return NULL;
}

int cli_getopt(int argc, char **argv, const cli_option *t, cli_getopt_state *st)
{
    if (!st->built) {
        optind = 1;
        if (!build(st, t)) {
            cli_error("too many options in one command's table");
            return CLI_OPT_BAD;
        }
    }
    for (;;) {
        int key = getopt_long(argc, argv, st->shorts, st->longs, NULL);
        if (key == -1)
            return -1;
        /* getopt has said what is wrong; the command points at --help. */
        const cli_option *o = key == '?' ? NULL : find(t, key);
        if (!o)
            return '?';
        switch (o->kind) {
        case CLI_KEY: return key;
        case CLI_STRING: *(const char **)o->field = optarg; break;
        case CLI_TRUE: *(bool *)o->field = true; break;
        case CLI_FALSE: *(bool *)o->field = false; break;
        case CLI_INT: {
            int64_t v;
            if (!cli_parse_int(optarg, o->lo, o->hi, &v)) {
                cli_error("--%s expects %s, got '%s'", o->name, o->expects, optarg);
                return CLI_OPT_BAD;
            }
            *(int *)o->field = (int)v;
            break;
        }
        case CLI_TEXT:
        case CLI_END: return CLI_OPT_BAD;
        }
    }
}

void cli_usage(FILE *f, const cli_option *t, int col)
{
    for (const cli_option *o = t; o->kind != CLI_END; o++) {
        if (o->kind == CLI_TEXT) {
            fputs(o->help, f);
            continue;
        }
        if (!o->help)
            continue; /* listed by a line of text of its own */
        char left[128];
        int n;
        if (o->key > 0 && o->key < 128)
            n = snprintf(left, sizeof left, "  -%c, --%s%s%s", o->key, o->name, o->arg ? " " : "",
                         o->arg ? o->arg : "");
        else
            n = snprintf(left, sizeof left, "      --%s%s%s", o->name, o->arg ? " " : "",
                         o->arg ? o->arg : "");
        /* The help starts at column col, or two spaces after a left part
         * reaching it; its further lines start at col. */
        fprintf(f, "%s%*s", left, n < col ? col - n : 2, "");
        for (const char *h = o->help;;) {
            size_t len = strcspn(h, "\n");
            fprintf(f, "%.*s\n", (int)len, h);
            if (!h[len] || !h[len + 1])
                break;
            h += len + 1;
            fprintf(f, "%*s", col, "");
        }
    }
}
