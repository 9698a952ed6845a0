/* A comparison as a table, JSON or CSV (docs/compare.md). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compare-impl.h"
#include "core/ctx-impl.h"

const char *ntp__verdict_short(ntp_verdict v)
{
    switch (v) {
    case NTP_VERDICT_SAME: return "same";
    case NTP_VERDICT_FASTER: return "faster";
    case NTP_VERDICT_SLOWER: return "slower";
    case NTP_VERDICT_NA: return "n/a";
    }
    return "?";
}

static const char *nz(const char *s)
{
    return s ? s : "?";
}

/* --- table ------------------------------------------------------------------------------ */

/* With single spaces between them the columns take 96 of the 100. Runs are
 * lettered A, B, ... in the table's headings (the lines above the table say
 * which is which), so long file names cannot squeeze the columns. The last
 * column flags what changed besides the time (T type, B backend, I
 * implementation); it is left out of rows where nothing did, so they end
 * without trailing spaces. */
enum {
    C_NAME = 24,
    C_STATUS = 7,
    C_MS = 9,
    C_DELTA = 9,
    C_SPEED = 7,
    C_VERDICT = 7,
    C_PCT = 6,
    C_CHG = 3
};
enum { N_CELLS = 10 };
static const int widths[N_CELLS] = {C_NAME,  C_STATUS,  C_MS,  C_MS,  C_DELTA,
                                    C_SPEED, C_VERDICT, C_PCT, C_PCT, C_CHG};

static void put_row(FILE *f, const char *const cells[N_CELLS])
{
    for (int i = 0; i < N_CELLS; i++) {
        if (i == N_CELLS - 1 && !cells[i][0])
            break;
        if (i)
            fputc(' ', f);
        int w = widths[i];
        if (i == N_CELLS - 1 && (int)strlen(cells[i]) < w)
            w = (int)strlen(cells[i]); /* the last cell: no padding at the end of the line */
        ntp__put_cell(f, cells[i], w, i >= 2 && i != 6 && i != N_CELLS - 1);
    }
    fputc('\n', f);
}

/* "TBI": the letters of a row's changes. */
static const char *change_letters(unsigned changes, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s", changes & NTP_CHANGE_TYPE ? "T" : "",
             changes & NTP_CHANGE_BACKEND ? "B" : "", changes & NTP_CHANGE_IMPL ? "I" : "");
    return buf;
}

/* A fused group's layers joined with " + ". */
static const char *member_list(const ntp_compare_row *r, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < r->n_members && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? " + " : "", nz(r->members[i]));
    return buf;
}

/* Whether a row has figures on each side. */
static bool has_base(const ntp_compare_row *r)
{
    return r->base_index >= 0 || r->align == NTP_ALIGN_MATCHED;
}

static bool has_other(const ntp_compare_row *r)
{
    return r->other_index >= 0 || r->align == NTP_ALIGN_MATCHED;
}

static void table_row(FILE *f, const ntp_compare_row *r)
{
    char name[1024], a[32], b[32], d[40], s[40], pa[32], pb[32], chg[8];
    if (r->align == NTP_ALIGN_RENAMED)
        snprintf(name, sizeof name, "%s -> %s", nz(r->name), nz(r->other_name));
    else if (r->align == NTP_ALIGN_FUSED)
        member_list(r, name, sizeof name);
    else
        snprintf(name, sizeof name, "%s", nz(r->name));
    bool has_a = has_base(r), has_b = has_other(r);
    snprintf(a, sizeof a, "-");
    snprintf(b, sizeof b, "-");
    if (has_a && r->base.n > 0)
        ntp__fit_number(r->base.median, C_MS, 4, a, sizeof a);
    if (has_b && r->other.n > 0)
        ntp__fit_number(r->other.median, C_MS, 4, b, sizeof b);
    char tmp[32];
    ntp__fit_number(fabs(r->delta_ms), C_DELTA - 1, 4, tmp, sizeof tmp);
    snprintf(d, sizeof d, "%s%s", r->delta_ms > 0 ? "+" : r->delta_ms < 0 ? "-" : " ", tmp);
    if (r->speedup > 0) {
        ntp__fit_number(r->speedup, C_SPEED - 1, 2, tmp, sizeof tmp);
        snprintf(s, sizeof s, "%sx", tmp);
    } else {
        snprintf(s, sizeof s, "-");
    }
    snprintf(pa, sizeof pa, "-");
    snprintf(pb, sizeof pb, "-");
    if (has_a)
        ntp__fit_number(100.0 * r->base_share, C_PCT, 1, pa, sizeof pa);
    if (has_b)
        ntp__fit_number(100.0 * r->other_share, C_PCT, 1, pb, sizeof pb);
    const char *cells[N_CELLS] = {
        name, ntp_align_name(r->align),       a,  b,  d,
        s,    ntp__verdict_short(r->verdict), pa, pb, change_letters(r->changes, chg, sizeof chg)};
    put_row(f, cells);
}

/* "A", "B", ..., "Z", then "#27", ... */
static const char *letter(int i, char *buf, size_t len)
{
    if (i < 26)
        snprintf(buf, len, "%c", 'A' + i);
    else
        snprintf(buf, len, "#%d", i + 1);
    return buf;
}

static void table_run_line(FILE *f, int i, const char *label, const ntp_run_result *r)
{
    char prefix[64], tag[32], text[1024], thr[32];
    snprintf(prefix, sizeof prefix, "%s = ", letter(i, tag, sizeof tag));
    snprintf(text, sizeof text, "%s: %s on %s, %s, batch %" PRId64 ", threads %s, %s; %s, %s",
             label, nz(r->topology), nz(r->backend), ntp_dtype_name(r->precision), r->batch,
             ntp__threads_text(r, thr, sizeof thr), r->fused ? "--fuse" : "no --fuse",
             r->env.hostname, r->env.timestamp);
    ntp__put_wrapped(f, prefix, text);
}

/* Device memory of the runs that had an accelerator: side by side when
 * both did, the one that did otherwise, nothing when neither did. */
static void table_device_memory(FILE *f, const char *A, const ntp_run_result *a, const char *B,
                                const ntp_run_result *b)
{
    bool da = ntp_memory_has_device(&a->memory), db = ntp_memory_has_device(&b->memory);
    char x[32], y[32];
    if (da && db) {
        static const char *const what[] = {"peak", "weights", "activations", "workspace"};
        const int64_t va[] = {a->memory.device_peak_bytes, a->memory.device_weight_bytes,
                              a->memory.device_activation_bytes, a->memory.device_workspace_bytes};
        const int64_t vb[] = {b->memory.device_peak_bytes, b->memory.device_weight_bytes,
                              b->memory.device_activation_bytes, b->memory.device_workspace_bytes};
        for (int i = 0; i < 4; i++) {
            char ratio[32] = "";
            if (va[i] > 0)
                snprintf(ratio, sizeof ratio, " (x%.3g)", (double)vb[i] / (double)va[i]);
            ntp__put_linef(f, "device memory %s: %s %s, %s %s%s", what[i], A,
                           ntp__human_bytes((double)va[i], x, sizeof x), B,
                           ntp__human_bytes((double)vb[i], y, sizeof y), ratio);
        }
    } else if (da || db) {
        const ntp_run_result *r = da ? a : b;
        ntp__put_linef(f, "device memory: only %s ran on a device (peak %s)", da ? A : B,
                       ntp__human_bytes((double)r->memory.device_peak_bytes, x, sizeof x));
    }
}

/* Runs that differ in --fuse: say how their rows line up. */
static void table_fusion_note(FILE *f, const char *A, const ntp_run_result *a, const char *B,
                              const ntp_run_result *b, const ntp_compare_pair *p)
{
    if (a->fused == b->fused)
        return;
    char text[512];
    snprintf(text, sizeof text,
             "the runs differ in --fuse (%s %s, %s %s): a fused layer has no time of its own, so "
             "each group of layers fused in either run is one row (status fused), the group's "
             "time against the sum of its layers' times in the other run; %d such group%s",
             A, a->fused ? "with" : "without", B, b->fused ? "with" : "without", p->n_fused_groups,
             p->n_fused_groups == 1 ? "" : "s");
    ntp__put_wrapped(f, "fusion: ", text);
}

/* What the machine was doing around one run that can move its times
 * (docs/run.md#contention, #handoff, #pace), into buf; false when
 * nothing was flagged. */
static bool machine_state(const ntp_run_result *r, char *buf, size_t len)
{
    const ntp_contention *c = &r->env.contention;
    size_t used = 0;
    buf[0] = '\0';
    if (c->measured && c->distorted)
        used += (size_t)snprintf(buf + used, len - used,
                                 "other processes and steal took %.0f%% of its CPUs",
                                 100 * (c->other + c->steal));
    if (used < len && c->bandwidth.measured && c->bandwidth.low)
        used += (size_t)snprintf(buf + used, len - used, "%smemory bandwidth read low",
                                 used ? ", " : "");
    if (used < len && ntp_handoff_flagged(&c->handoff))
        used += (size_t)snprintf(buf + used, len - used,
                                 "%sits CPUs did not share a cache (hand-off %.1fx)",
                                 used ? ", " : "", ntp_handoff_worst(&c->handoff));
    const int k = ntp_pace_slowest(&c->pace);
    if (used < len && (c->pace.slowed || c->pace.throughout) && k >= 0)
        used += (size_t)snprintf(
            buf + used, len - used, "%sCPU %d ran slowed%s (pace %.2fx)", used ? ", " : "",
            c->pace.cpu[k], c->pace.throughout ? " throughout" : "", c->pace.low[k] / c->pace.best);
    return used > 0;
}

bool ntp__compare_machine_note(const char *A, const ntp_run_result *a, const char *B,
                               const ntp_run_result *b, char *buf, size_t len)
{
    char sa[256], sb[256];
    bool fa = machine_state(a, sa, sizeof sa), fb = machine_state(b, sb, sizeof sb);
    if (!fa && !fb)
        return false;
    snprintf(buf, len, "%s%s%s%s%s%s%s: a difference may be the machine's, not the runs'",
             fa ? A : "", fa ? ": " : "", fa ? sa : "", fa && fb ? "; " : "", fb ? B : "",
             fb ? ": " : "", fb ? sb : "");
    return true;
}

static void table_machine_note(FILE *f, const char *A, const ntp_run_result *a, const char *B,
                               const ntp_run_result *b)
{
    char text[640];
    if (ntp__compare_machine_note(A, a, B, b, text, sizeof text))
        ntp__put_wrapped(f, "machine: ", text);
}

/* Rows per side of a fused group: "1 fused row", "3 rows summed", "no time". */
static const char *group_side(int rows, char *buf, size_t len)
{
    if (rows == 0)
        snprintf(buf, len, "no time");
    else if (rows == 1)
        snprintf(buf, len, "1 row");
    else
        snprintf(buf, len, "%d rows summed", rows);
    return buf;
}

/* Every fused group in full: its layers and what each side's time sums. */
static void table_groups(FILE *f, const char *A, const char *B, const ntp_compare_pair *p)
{
    if (p->n_fused_groups == 0)
        return;
    ntp__put_line(f, "fused groups (status fused), in the order listed above:");
    for (int i = 0; i < p->n_rows; i++) {
        const ntp_compare_row *r = &p->rows[i];
        if (r->align != NTP_ALIGN_FUSED)
            continue;
        char members[1024], text[1400], sa[32], sb[32];
        snprintf(text, sizeof text, "%s (%s: %s, %s: %s)", member_list(r, members, sizeof members),
                 A, group_side(r->base_rows, sa, sizeof sa), B,
                 group_side(r->other_rows, sb, sizeof sb));
        ntp__put_wrapped(f, "  ", text);
    }
}

/* One kind of change of a row ("impl brg:avx512_core -> gemm:jit"). */
static bool change_text(const ntp_compare_row *r, unsigned kind, char *buf, size_t len)
{
    if (!(r->changes & kind))
        return false;
    if (kind == NTP_CHANGE_TYPE)
        snprintf(buf, len, "type %s -> %s", nz(r->type), nz(r->other_type));
    else if (kind == NTP_CHANGE_BACKEND)
        snprintf(buf, len, "backend %s -> %s", nz(r->base_backend), nz(r->other_backend));
    else
        snprintf(buf, len, "implementation %s -> %s", nz(r->base_impl), nz(r->other_impl));
    return true;
}

/* Rows whose type, backend or implementation changed, one line per distinct
 * change with the rows it concerns (a few, then how many more: a run on
 * another backend changes every row, and the JSON and CSV list each). */
static void table_changes(FILE *f, const char *A, const char *B, const ntp_compare_pair *p)
{
    if (p->n_changed == 0)
        return;
    enum { MAX_NAMES = 4 };
    static const unsigned kinds[] = {NTP_CHANGE_TYPE, NTP_CHANGE_BACKEND, NTP_CHANGE_IMPL};
    ntp__put_linef(f,
                   "changed from %s to %s besides the time (chg: T type, B backend, I "
                   "implementation):",
                   A, B);
    /* Each distinct change once, at its first row in the table's order. */
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (int i = 0; i < p->n_rows; i++) {
            char what[600], other[600];
            if (!change_text(&p->rows[i], kinds[k], what, sizeof what))
                continue;
            /* Listed already with an earlier row of the same change. */
            bool seen = false;
            for (int j = 0; j < i && !seen; j++)
                seen = change_text(&p->rows[j], kinds[k], other, sizeof other) &&
                       strcmp(what, other) == 0;
            if (seen)
                continue;
            char line[1400];
            size_t used = (size_t)snprintf(line, sizeof line, "%s:", what);
            int rows = 0;
            for (int j = i; j < p->n_rows; j++) {
                if (!change_text(&p->rows[j], kinds[k], other, sizeof other) ||
                    strcmp(what, other) != 0)
                    continue;
                if (rows < MAX_NAMES && used < sizeof line)
                    used += (size_t)snprintf(line + used, sizeof line - used, "%s %s",
                                             rows ? "," : "", nz(p->rows[j].name));
                rows++;
            }
            if (rows > MAX_NAMES && used < sizeof line)
                snprintf(line + used, sizeof line - used, " and %d more", rows - MAX_NAMES);
            ntp__put_wrapped(f, "  ", line);
        }
    }
}

/* Each run's prediction on a calibrated machine, and the layers it misses
 * by the most milliseconds on either side (docs/predict.md). */
#define PRED_ROWS 10
static void table_prediction(FILE *f, const ntp_comparison *c, const ntp_compare_pair *p,
                             const char *A, const char *B)
{
    const ntp_run_result *ra = c->runs[p->base], *rb = c->runs[p->other];
    if (!ra->prediction.available && !rb->prediction.available)
        return;
    fputc('\n', f);
    ntp__put_line(f, "prediction beside measurement:");
    char s[1024];
    const char *who[2] = {A, B};
    const ntp_run_result *run[2] = {ra, rb};
    for (int k = 0; k < 2; k++) {
        char lead[32];
        snprintf(lead, sizeof lead, "  %s: ", who[k]);
        if (run[k]->prediction.available)
            ntp__prediction_summary(&run[k]->prediction, s, sizeof s);
        else
            snprintf(s, sizeof s, "no prediction (no calibration for its backend)");
        ntp__put_wrapped(f, lead, s);
        const ntp_run_prediction *q = &run[k]->prediction;
        if (q->available && q->uncalibrated[0])
            ntp__put_wrapped(f, "    not predicted (family not calibrated): ", q->uncalibrated);
        if (q->available && q->weights_note[0])
            ntp__put_wrapped(f, "    ", q->weights_note);
        if (ntp__prediction_machine_note(run[k], s, sizeof s))
            ntp__put_wrapped(f, "    ", s);
        if (ntp__prediction_placement_line(run[k], s, sizeof s))
            ntp__put_wrapped(f, "    ", s);
    }
    int idx[PRED_ROWS];
    int n = ntp__compare_pred_rows(c, p, idx, PRED_ROWS);
    if (n == 0)
        return;
    fprintf(f, "  %-*s %10s %10s %7s %10s %10s %7s\n", C_NAME, "layer (largest miss first)", A,
            "pred", "err", B, "pred", "err");
    for (int i = 0; i < n; i++) {
        const ntp_compare_row *row = &p->rows[idx[i]];
        fprintf(f, "  %-*.*s", C_NAME, C_NAME, nz(row->name));
        for (int side = 0; side < 2; side++) {
            double pr = 0, m = 0;
            if (ntp__compare_side_pred(c, p, row, side == 1, &pr, &m))
                fprintf(f, " %10.4g %10.4g %+6.0f%%", m, pr, 100 * (pr - m) / m);
            else
                fprintf(f, " %10s %10s %7s", "-", "-", "-");
        }
        fputc('\n', f);
    }
}

static void table_pair(FILE *f, const ntp_comparison *c, const ntp_compare_pair *p)
{
    char la[16], lb[16];
    const char *A = letter(p->base, la, sizeof la), *B = letter(p->other, lb, sizeof lb);
    ntp__put_linef(f, "%s vs %s", B, A);
    if (p->n_diffs == 0) {
        ntp__put_line(f, "differences: none in topology, configuration or hardware");
    } else {
        char line[4096];
        size_t used = 0;
        line[0] = '\0';
        for (int i = 0; i < p->n_diffs && used < sizeof line; i++)
            used += (size_t)snprintf(line + used, sizeof line - used, "%s%s", i ? "; " : "",
                                     p->diffs[i]);
        ntp__put_wrapped(f, "differences: ", line);
    }
    const ntp_compare_row *e = &p->end_to_end;
    ntp__put_linef(f, "end-to-end: %s %.4g ms [%.4g, %.4g], %s %.4g ms [%.4g, %.4g]", A,
                   e->base.median, e->base.ci95_lo, e->base.ci95_hi, B, e->other.median,
                   e->other.ci95_lo, e->other.ci95_hi);
    if (e->verdict == NTP_VERDICT_SAME)
        ntp__put_linef(f,
                       "  %s vs %s: no significant difference (speedup %.3gx, 95%% intervals "
                       "overlap)",
                       B, A, e->speedup);
    else if (e->verdict == NTP_VERDICT_NA)
        ntp__put_linef(f, "  %s vs %s: nothing to compare (a run has no end-to-end time)", B, A);
    else
        ntp__put_linef(f, "  %s is %.3gx %s than %s (speedup %.3gx, from the intervals %.3g..%.3g)",
                       B, e->speedup >= 1 ? e->speedup : 1 / e->speedup,
                       e->verdict == NTP_VERDICT_FASTER ? "faster" : "slower", A, e->speedup,
                       e->speedup_lo, e->speedup_hi);
    if (p->throughput_ratio > 0)
        ntp__put_linef(f, "throughput: %s %.4g, %s %.4g samples/s (x%.3g)", A,
                       c->runs[p->base]->throughput, B, c->runs[p->other]->throughput,
                       p->throughput_ratio);
    table_device_memory(f, A, c->runs[p->base], B, c->runs[p->other]);
    table_fusion_note(f, A, c->runs[p->base], B, c->runs[p->other], p);
    table_machine_note(f, A, c->runs[p->base], B, c->runs[p->other]);
    fputc('\n', f);
    char ha[64], hb[64], pa[64], pb[64];
    snprintf(ha, sizeof ha, "%s ms", A);
    snprintf(hb, sizeof hb, "%s ms", B);
    snprintf(pa, sizeof pa, "%s %%", A);
    snprintf(pb, sizeof pb, "%s %%", B);
    ntp__put_line(f, "layers, largest regression first:");
    const char *head[N_CELLS] = {"layer",   "status",  ha, hb, "delta ms",
                                 "speedup", "verdict", pa, pb, "chg"};
    put_row(f, head);
    for (int i = 0; i < N_CELLS; i++) {
        if (i)
            fputc(' ', f);
        for (int k = 0; k < widths[i]; k++)
            fputc('-', f);
    }
    fputc('\n', f);
    for (int i = 0; i < p->n_rows; i++)
        table_row(f, &p->rows[i]);
    if (p->n_markers > 0) {
        fputc('\n', f);
        const char *mh[N_CELLS] = {"marker segment", "status",  ha, hb, "delta ms",
                                   "speedup",        "verdict", pa, pb, ""};
        put_row(f, mh);
        for (int i = 0; i < p->n_markers; i++)
            table_row(f, &p->markers[i]);
    }
    int counts[NTP_ALIGN_FUSED + 1] = {0};
    for (int i = 0; i < p->n_rows; i++)
        counts[p->rows[i].align]++;
    char groups[64] = "";
    if (counts[NTP_ALIGN_FUSED] > 0)
        snprintf(groups, sizeof groups, ", %d fused group%s", counts[NTP_ALIGN_FUSED],
                 counts[NTP_ALIGN_FUSED] == 1 ? "" : "s");
    ntp__put_linef(f, "layers: %d matched, %d renamed, %d added in %s, %d missing from %s%s",
                   counts[NTP_ALIGN_MATCHED], counts[NTP_ALIGN_RENAMED], counts[NTP_ALIGN_ADDED], B,
                   counts[NTP_ALIGN_MISSING], B, groups);
    table_groups(f, A, B, p);
    table_changes(f, A, B, p);
    table_prediction(f, c, p, A, B);
}

static void write_table(const ntp_comparison *c, FILE *f)
{
    for (int i = 0; i < c->n_runs; i++)
        table_run_line(f, i, c->labels[i], c->runs[i]);
    ntp__put_line(f, "speedup = base median / other median (above 1: faster); same = no "
                     "significant difference:");
    ntp__put_line(f, "the 95% intervals of the two medians overlap.");
    for (int i = 0; i < c->n_pairs; i++) {
        fputc('\n', f);
        table_pair(f, c, &c->pairs[i]);
    }
}

/* --- JSON --------------------------------------------------------------------------------- */

static json_t *side_json(bool *ok, const ntp_stats *s, bool present)
{
    if (!present)
        return json_null();
    json_t *o = json_object();
    ntp__jset(ok, o, "median_ms", ntp__json_num(s->median));
    json_t *ci = json_array();
    ntp__jpush(ok, ci, ntp__json_num(s->ci95_lo));
    ntp__jpush(ok, ci, ntp__json_num(s->ci95_hi));
    ntp__jset(ok, o, "ci95_ms", ci);
    ntp__jset(ok, o, "n", json_integer((json_int_t)s->n));
    return o;
}

/* The changes of a row by name: ["type", "backend", "impl"]. */
static json_t *changes_json(bool *ok, unsigned changes)
{
    json_t *a = json_array();
    if (changes & NTP_CHANGE_TYPE)
        ntp__jpush(ok, a, json_string("type"));
    if (changes & NTP_CHANGE_BACKEND)
        ntp__jpush(ok, a, json_string("backend"));
    if (changes & NTP_CHANGE_IMPL)
        ntp__jpush(ok, a, json_string("impl"));
    return a;
}

/* What a layer row adds to the figures: a fused group's layers and how many
 * rows each side sums, and what changed besides the time. */
static void layer_fields(bool *ok, json_t *o, const ntp_compare_row *r)
{
    json_t *m = json_null();
    if (r->align == NTP_ALIGN_FUSED) {
        m = json_array();
        for (int i = 0; i < r->n_members; i++)
            ntp__jpush(ok, m, ntp__json_str(r->members[i]));
    }
    ntp__jset(ok, o, "members", m);
    ntp__jset(ok, o, "base_rows", json_integer(r->base_rows));
    ntp__jset(ok, o, "other_rows", json_integer(r->other_rows));
    ntp__jset(ok, o, "changes", changes_json(ok, r->changes));
    ntp__jset(ok, o, "other_type", ntp__json_str(r->other_type));
    ntp__jset(ok, o, "base_backend", ntp__json_str(r->base_backend));
    ntp__jset(ok, o, "other_backend", ntp__json_str(r->other_backend));
    ntp__jset(ok, o, "base_impl", ntp__json_str(r->base_impl));
    ntp__jset(ok, o, "other_impl", ntp__json_str(r->other_impl));
}

static json_t *row_json(bool *ok, const ntp_compare_row *r, bool both)
{
    json_t *o = json_object();
    bool has_a = both || r->base_index >= 0, has_b = both || r->other_index >= 0;
    ntp__jset(ok, o, "name", ntp__json_str(r->name));
    ntp__jset(ok, o, "other_name", ntp__json_str(has_b ? r->other_name : NULL));
    ntp__jset(ok, o, "type", ntp__json_str(r->type));
    ntp__jset(ok, o, "status", json_string(ntp_align_name(r->align)));
    ntp__jset(ok, o, "base_index", r->base_index >= 0 ? json_integer(r->base_index) : json_null());
    ntp__jset(ok, o, "other_index",
              r->other_index >= 0 ? json_integer(r->other_index) : json_null());
    ntp__jset(ok, o, "base", side_json(ok, &r->base, has_a));
    ntp__jset(ok, o, "other", side_json(ok, &r->other, has_b));
    ntp__jset(ok, o, "delta_ms", ntp__json_num(r->delta_ms));
    ntp__jset(ok, o, "speedup", r->speedup > 0 ? ntp__json_num(r->speedup) : json_null());
    json_t *ci = json_array();
    ntp__jpush(ok, ci, r->speedup_lo > 0 ? ntp__json_num(r->speedup_lo) : json_null());
    ntp__jpush(ok, ci, r->speedup_hi > 0 ? ntp__json_num(r->speedup_hi) : json_null());
    ntp__jset(ok, o, "speedup_ci95", ci);
    ntp__jset(ok, o, "verdict", json_string(ntp_verdict_name(r->verdict)));
    ntp__jset(ok, o, "base_share", has_a ? ntp__json_num(r->base_share) : json_null());
    ntp__jset(ok, o, "other_share", has_b ? ntp__json_num(r->other_share) : json_null());
    return o;
}

/* A row's predicted ms on each side: null where that side has none. */
static void pred_fields(bool *ok, json_t *o, const ntp_comparison *c, const ntp_compare_pair *p,
                        const ntp_compare_row *r)
{
    const char *key[2] = {"base_predicted_ms", "other_predicted_ms"};
    for (int side = 0; side < 2; side++) {
        double pr = 0, m = 0;
        ntp__jset(ok, o, key[side],
                  ntp__compare_side_pred(c, p, r, side == 1, &pr, &m) ? ntp__json_num(pr)
                                                                      : json_null());
    }
}

/* A run's prediction summary (ntp_run_prediction), null without one. */
static json_t *prediction_json(bool *ok, const ntp_run_prediction *p)
{
    if (!p->available)
        return json_null();
    json_t *o = json_object();
    ntp__jset(ok, o, "calibration", ntp__json_str(p->calibration));
    ntp__jset(ok, o, "stale", json_boolean(p->stale));
    ntp__jset(ok, o, "roofline_only", json_boolean(p->roofline_only));
    ntp__jset(ok, o, "predicted_ms", ntp__json_num(p->predicted_ms));
    ntp__jset(ok, o, "measured_ms", ntp__json_num(p->measured_ms));
    ntp__jset(ok, o, "error", ntp__json_num(p->error));
    ntp__jset(ok, o, "layers_compared", json_integer(p->n_compared));
    ntp__jset(ok, o, "layers_within_10", json_integer(p->within_10));
    ntp__jset(ok, o, "layers_within_25", json_integer(p->within_25));
    ntp__jset(ok, o, "major_layers", json_integer(p->n_major));
    ntp__jset(ok, o, "major_layers_within_25", json_integer(p->major_within_25));
    if (p->uncalibrated[0])
        ntp__jset(ok, o, "uncalibrated", json_string(p->uncalibrated));
    if (p->weights_note[0])
        ntp__jset(ok, o, "weights_note", json_string(p->weights_note));
    return o;
}

static ntp_status write_json(ntp_ctx *ctx, const ntp_comparison *c, FILE *f)
{
    bool ok = true;
    json_t *root = json_object();
    ntp__jset(&ok, root, "kind", json_string("comparison"));
    json_t *runs = json_array();
    for (int i = 0; i < c->n_runs; i++) {
        const ntp_run_result *r = c->runs[i];
        json_t *o = json_object();
        ntp__jset(&ok, o, "label", ntp__json_str(c->labels[i]));
        ntp__jset(&ok, o, "topology", ntp__json_str(r->topology));
        ntp__jset(&ok, o, "source", ntp__json_str(r->source));
        ntp__jset(&ok, o, "backend", ntp__json_str(r->backend));
        ntp__jset(&ok, o, "precision", json_string(ntp_dtype_name(r->precision)));
        ntp__jset(&ok, o, "batch", json_integer(r->batch));
        ntp__jset(&ok, o, "threads", json_integer(r->threads));
        ntp__jset(&ok, o, "fuse", json_boolean(r->fused));
        ntp__jset(&ok, o, "cpu_model", ntp__json_str(r->env.cpu_model));
        ntp__jset(&ok, o, "hostname", ntp__json_str(r->env.hostname));
        ntp__jset(&ok, o, "timestamp", ntp__json_str(r->env.timestamp));
        ntp__jset(&ok, o, "throughput_per_s", ntp__json_num(r->throughput));
        /* Only a run on an accelerator has device memory. */
        if (ntp_memory_has_device(&r->memory))
            ntp__jset(&ok, o, "device_memory", ntp__device_memory_json(&ok, &r->memory));
        ntp__jset(&ok, o, "prediction", prediction_json(&ok, &r->prediction));
        ntp__jpush(&ok, runs, o);
    }
    ntp__jset(&ok, root, "runs", runs);
    json_t *pairs = json_array();
    for (int i = 0; i < c->n_pairs; i++) {
        const ntp_compare_pair *p = &c->pairs[i];
        json_t *o = json_object();
        ntp__jset(&ok, o, "base", json_integer(p->base));
        ntp__jset(&ok, o, "other", json_integer(p->other));
        json_t *d = json_array();
        for (int k = 0; k < p->n_diffs; k++)
            ntp__jpush(&ok, d, ntp__json_str(p->diffs[k]));
        ntp__jset(&ok, o, "differences", d);
        ntp__jset(&ok, o, "fused_groups", json_integer(p->n_fused_groups));
        ntp__jset(&ok, o, "end_to_end", row_json(&ok, &p->end_to_end, true));
        ntp__jset(&ok, o, "throughput_ratio",
                  p->throughput_ratio > 0 ? ntp__json_num(p->throughput_ratio) : json_null());
        json_t *rows = json_array();
        for (int k = 0; k < p->n_rows; k++) {
            json_t *row = row_json(&ok, &p->rows[k], false);
            if (row) {
                layer_fields(&ok, row, &p->rows[k]);
                pred_fields(&ok, row, c, p, &p->rows[k]);
            }
            ntp__jpush(&ok, rows, row);
        }
        ntp__jset(&ok, o, "layers", rows);
        json_t *ms = json_array();
        for (int k = 0; k < p->n_markers; k++)
            ntp__jpush(&ok, ms, row_json(&ok, &p->markers[k], false));
        ntp__jset(&ok, o, "markers", ms);
        ntp__jpush(&ok, pairs, o);
    }
    ntp__jset(&ok, root, "pairs", pairs);
    return ntp__json_finish(ctx, root, ok, f, "comparison");
}

/* --- CSV ----------------------------------------------------------------------------------- */

/* The prediction columns that end a row, as the table and the HTML show
 * them: each side's predicted ms and its error against that side's
 * measurement, empty where the side has no prediction (an end-to-end row
 * takes its run's summary; a marker or a fused group has none). */
static void csv_prediction(FILE *f, const ntp_comparison *c, const ntp_compare_pair *p,
                           const char *kind, const ntp_compare_row *r)
{
    for (int side = 0; side < 2; side++) {
        const ntp_run_prediction *s = &c->runs[side ? p->other : p->base]->prediction;
        double pr = NAN, err = NAN, m = 0;
        if (strcmp(kind, "end_to_end") == 0) {
            if (s->available) {
                pr = s->predicted_ms;
                err = s->error;
            }
        } else if (strcmp(kind, "layer") == 0 &&
                   ntp__compare_side_pred(c, p, r, side == 1, &pr, &m)) {
            err = (pr - m) / m;
        }
        ntp__csv_sep(f);
        ntp__csv_num(f, pr);
        ntp__csv_sep(f);
        ntp__csv_num(f, err);
    }
    fputc('\n', f);
}

static void csv_row(FILE *f, const ntp_comparison *c, const ntp_compare_pair *p, const char *kind,
                    const ntp_compare_row *r, bool both)
{
    bool has_a = both || r->base_index >= 0, has_b = both || r->other_index >= 0;
    ntp__csv_str(f, c->labels[p->base]);
    ntp__csv_sep(f);
    ntp__csv_str(f, c->labels[p->other]);
    ntp__csv_sep(f);
    ntp__csv_str(f, kind);
    ntp__csv_sep(f);
    ntp__csv_str(f, r->name);
    ntp__csv_sep(f);
    ntp__csv_str(f, has_b ? r->other_name : NULL);
    ntp__csv_sep(f);
    ntp__csv_str(f, r->type);
    ntp__csv_sep(f);
    ntp__csv_str(f, ntp_align_name(r->align));
    const double a[] = {r->base.median, r->base.ci95_lo, r->base.ci95_hi};
    const double b[] = {r->other.median, r->other.ci95_lo, r->other.ci95_hi};
    for (int i = 0; i < 3; i++) {
        ntp__csv_sep(f);
        ntp__csv_num(f, has_a ? a[i] : NAN);
    }
    for (int i = 0; i < 3; i++) {
        ntp__csv_sep(f);
        ntp__csv_num(f, has_b ? b[i] : NAN);
    }
    const double v[] = {r->delta_ms, r->speedup > 0 ? r->speedup : NAN,
                        r->speedup_lo > 0 ? r->speedup_lo : NAN,
                        r->speedup_hi > 0 ? r->speedup_hi : NAN};
    for (int i = 0; i < 4; i++) {
        ntp__csv_sep(f);
        ntp__csv_num(f, v[i]);
    }
    ntp__csv_sep(f);
    ntp__csv_str(f, ntp_verdict_name(r->verdict));
    ntp__csv_sep(f);
    ntp__csv_num(f, has_a ? r->base_share : NAN);
    ntp__csv_sep(f);
    ntp__csv_num(f, has_b ? r->other_share : NAN);
    /* Layer rows only: a fused group's layers and rows summed per side, and
     * what changed. */
    if (strcmp(kind, "layer") != 0) {
        fputs(",,,,,,,,,", f);
        csv_prediction(f, c, p, kind, r);
        return;
    }
    char members[4096] = "";
    size_t used = 0;
    for (int i = 0; i < r->n_members && used < sizeof members; i++)
        used += (size_t)snprintf(members + used, sizeof members - used, "%s%s", i ? ";" : "",
                                 nz(r->members[i]));
    ntp__csv_sep(f);
    ntp__csv_str(f, members);
    ntp__csv_sep(f);
    ntp__csv_int(f, r->base_rows);
    ntp__csv_sep(f);
    ntp__csv_int(f, r->other_rows);
    ntp__csv_sep(f);
    char names[32];
    snprintf(names, sizeof names, "%s%s%s%s%s", r->changes & NTP_CHANGE_TYPE ? "type" : "",
             (r->changes & NTP_CHANGE_TYPE) && (r->changes & ~NTP_CHANGE_TYPE) ? ";" : "",
             r->changes & NTP_CHANGE_BACKEND ? "backend" : "",
             (r->changes & NTP_CHANGE_BACKEND) && (r->changes & NTP_CHANGE_IMPL) ? ";" : "",
             r->changes & NTP_CHANGE_IMPL ? "impl" : "");
    ntp__csv_str(f, names);
    const char *sides[] = {r->other_type, r->base_backend, r->other_backend, r->base_impl,
                           r->other_impl};
    for (int i = 0; i < 5; i++) {
        ntp__csv_sep(f);
        ntp__csv_str(f, sides[i]);
    }
    csv_prediction(f, c, p, kind, r);
}

static void write_csv(const ntp_comparison *c, FILE *f)
{
    fputs("base,other,kind,name,other_name,type,status,base_median_ms,base_ci95_lo_ms,"
          "base_ci95_hi_ms,other_median_ms,other_ci95_lo_ms,other_ci95_hi_ms,delta_ms,speedup,"
          "speedup_lo,speedup_hi,verdict,base_share,other_share,members,base_rows,other_rows,"
          "changes,other_type,base_backend,other_backend,base_impl,other_impl,base_predicted_ms,"
          "base_prediction_error,other_predicted_ms,other_prediction_error\n",
          f);
    for (int i = 0; i < c->n_pairs; i++) {
        const ntp_compare_pair *p = &c->pairs[i];
        csv_row(f, c, p, "end_to_end", &p->end_to_end, true);
        for (int k = 0; k < p->n_rows; k++)
            csv_row(f, c, p, "layer", &p->rows[k], false);
        for (int k = 0; k < p->n_markers; k++)
            csv_row(f, c, p, "marker", &p->markers[k], false);
    }
}

ntp_status ntp_report_write_comparison(ntp_ctx *ctx, const ntp_comparison *c, ntp_format fmt,
                                       FILE *f)
{
    if (!c || !f)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_comparison: no comparison or stream");
    switch (fmt) {
    case NTP_FORMAT_TABLE: write_table(c, f); return ntp__check_stream(ctx, f, "comparison");
    case NTP_FORMAT_JSON: return write_json(ctx, c, f);
    case NTP_FORMAT_CSV: write_csv(c, f); return ntp__check_stream(ctx, f, "comparison");
    }
    return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "unknown format %d", (int)fmt);
}
