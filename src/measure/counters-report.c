/* Counters in the run report (docs/counters.md, docs/report-format.md):
 * a `counters` and a `metrics` object per layer and marker in JSON, keyed by
 * event name, with the verdict beside them, and a section of the table. The
 * run report writer (src/report/run.c) calls these. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "counters-impl.h"
#include "core/writers-impl.h"

static json_t *value_json(bool *ok, const ntp_counter_value *v)
{
    json_t *o = json_object();
    ntp__jset(ok, o, "value", v->available ? ntp__json_num(v->value) : json_null());
    ntp__jset(ok, o, "unit", ntp__json_str(v->unit ? v->unit : ""));
    ntp__jset(ok, o, "source", ntp__json_str(v->source));
    if (!v->derived) {
        ntp__jset(ok, o, "scaled", json_boolean(v->scaled));
        ntp__jset(ok, o, "running", v->available ? ntp__json_num(v->running) : json_null());
    }
    ntp__jset(ok, o, "reason", v->available ? json_null() : ntp__json_str(v->reason));
    return o;
}

void ntp__counters_json(bool *ok, struct json_t *row, const ntp_counter_value *v, int n,
                        const char *bound, const char *evidence)
{
    if (n == 0 && !bound)
        return;
    json_t *c = json_object(), *m = json_object();
    for (int i = 0; i < n; i++)
        ntp__jset(ok, v[i].derived ? m : c, v[i].name, value_json(ok, &v[i]));
    ntp__jset(ok, row, "counters", c);
    ntp__jset(ok, row, "metrics", m);
    ntp__jset(ok, row, "bound", ntp__json_str(bound));
    ntp__jset(ok, row, "bound_evidence", ntp__json_str(evidence));
}

void ntp__counters_json_run(bool *ok, struct json_t *root, const ntp_run_result *r)
{
    if (!ntp__run_counted(r))
        return;
    json_t *o = json_object();
    ntp__jset(ok, o, "counters", ntp__json_str(r->counters));
    ntp__jset(ok, o, "tool", ntp__json_str(r->tool));
    ntp__jset(ok, o, "iterations", json_integer(r->counter_iterations));
    ntp__jset(ok, o, "threads", json_integer(r->counter_threads));
    json_t *notes = json_array();
    for (int i = 0; i < r->n_counter_notes; i++)
        ntp__jpush(ok, notes, ntp__json_str(r->counter_notes[i]));
    ntp__jset(ok, o, "notes", notes);
    ntp__jset(ok, root, "counting", o);
}

/* --- table ------------------------------------------------------------------------ */

/* "3.61 µs", "12.3K", "0.82": a value for people. */
static const char *human(const ntp_counter_value *v, char *buf, size_t len)
{
    if (!v->available)
        return "n/a";
    if (v->unit && strcmp(v->unit, "ns") == 0) {
        double us = v->value / 1000;
        if (us >= 1000)
            snprintf(buf, len, "%.4g ms", us / 1000);
        else
            snprintf(buf, len, "%.3g \xC2\xB5s", us);
    } else if (v->derived || fabs(v->value) < 1000) {
        snprintf(buf, len, "%.3g", v->value);
    } else {
        ntp__human_count(v->value, buf, len);
    }
    if (v->scaled && strlen(buf) + 2 < len)
        strcat(buf, "*");
    return buf;
}

/* One row: name, bound, then "event value" items wrapped under them. */
static void table_row(FILE *f, const char *name, const ntp_counter_value *v, int n,
                      const char *bound, const char *evidence)
{
    if (n == 0 && !bound)
        return;
    /* What could not be counted is listed once below the rows. */
    char line[8192];
    size_t u = 0;
    for (int i = 0; i < n && u < sizeof line; i++) {
        char val[64];
        if (v[i].available)
            u += (size_t)snprintf(line + u, sizeof line - u, "%s%s %s", u ? ", " : "", v[i].name,
                                  human(&v[i], val, sizeof val));
    }
    /* The name in 22 columns as in the layer table, the bound in 8. */
    char prefix[128] = "";
    FILE *m = fmemopen(prefix, sizeof prefix, "w");
    if (!m)
        return;
    ntp__put_cell(m, name, 22, false);
    fprintf(m, " %-8s ", bound ? bound : "-");
    fclose(m);
    ntp__put_wrapped(f, prefix, u ? line : "(nothing counted)");
    if (evidence)
        ntp__put_wrapped(f, "    why: ", evidence);
}

void ntp__counters_table(FILE *f, const ntp_run_result *r)
{
    if (!ntp__run_counted(r))
        return;
    char head[512];
    snprintf(head, sizeof head,
             "counters%s%s%s%s, per iteration of %d counting iteration%s "
             "(* multiplexed: scaled by time enabled / running):",
             r->counters ? " --counters " : "", r->counters ? r->counters : "",
             r->tool ? " --tool " : "", r->tool ? r->tool : "", r->counter_iterations,
             r->counter_iterations == 1 ? "" : "s");
    ntp__put_wrapped(f, "", head);
    ntp__put_line(f, "layer                  bound    counters and metrics");
    for (int i = 0; i < r->n_layers; i++) {
        const ntp_layer_result *L = &r->layers[i];
        table_row(f, L->name, L->counters, L->n_counters, L->bound, L->bound_evidence);
    }
    for (int i = 0; i < r->n_markers; i++) {
        const ntp_marker_result *M = &r->markers[i];
        char name[128];
        snprintf(name, sizeof name, "[%s]", M->name);
        table_row(f, name, M->counters, M->n_counters, M->bound, M->bound_evidence);
    }
    /* Each reason for n/a once, with the events it applies to. */
    const ntp_counter_value *first = NULL;
    for (int i = 0; i < r->n_layers && !first; i++)
        if (r->layers[i].n_counters)
            first = r->layers[i].counters;
    int nf = 0;
    for (int i = 0; i < r->n_layers; i++)
        if (r->layers[i].counters == first) {
            nf = r->layers[i].n_counters;
            break;
        }
    for (int i = 0; i < nf; i++) {
        if (first[i].available || !first[i].reason)
            continue;
        bool seen = false;
        for (int j = 0; j < i; j++)
            seen |=
                !first[j].available && first[j].reason && !strcmp(first[j].reason, first[i].reason);
        if (seen)
            continue;
        char names[1024];
        size_t u = 0;
        for (int j = i; j < nf && u < sizeof names; j++)
            if (!first[j].available && first[j].reason && !strcmp(first[j].reason, first[i].reason))
                u += (size_t)snprintf(names + u, sizeof names - u, "%s%s", u ? ", " : "",
                                      first[j].name);
        char text[2048];
        snprintf(text, sizeof text, "%s: %s", names, first[i].reason);
        ntp__put_wrapped(f, "n/a: ", text);
    }
    for (int i = 0; i < r->n_counter_notes; i++)
        ntp__put_wrapped(f, "note: ", r->counter_notes[i]);
    fputc('\n', f);
}
