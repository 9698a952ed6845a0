/* The machine and its ceilings as a table, JSON or CSV (docs/machine.md),
 * and the JSON forms the history caches them in. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/ctx-impl.h"
#include "measure/machine-impl.h"
#include "core/writers-impl.h"
#include "ntprof/report.h"

/* --- JSON ---------------------------------------------------------------------------- */

json_t *ntp__machine_info_json(const ntp_machine_info *m)
{
    bool ok = true;
    json_t *o = json_object();
    ntp__jset(&ok, o, "key", ntp__json_str(m->key));
    ntp__jset(&ok, o, "cpu_model", ntp__json_str(m->cpu_model));
    json_t *flags = json_array();
    char word[64];
    for (const char *p = m->cpu_flags; *p;) {
        size_t n = strcspn(p, " ");
        if (n > 0 && n < sizeof word) {
            memcpy(word, p, n);
            word[n] = '\0';
            if (strcmp(word, "unknown") != 0)
                ntp__jpush(&ok, flags, ntp__json_str(word));
        }
        p += n;
        while (*p == ' ')
            p++;
    }
    ntp__jset(&ok, o, "cpu_flags", flags);
    ntp__jset(&ok, o, "cpu_signature", ntp__json_str(m->cpu_signature));
    ntp__jset(&ok, o, "hostname", ntp__json_str(m->hostname));
    ntp__jset(&ok, o, "packages", json_integer(m->packages));
    ntp__jset(&ok, o, "cores", json_integer(m->cores));
    ntp__jset(&ok, o, "logical_cpus", json_integer(m->pus));
    ntp__jset(&ok, o, "memory_bytes", json_integer(m->memory_bytes));
    json_t *numa = json_array();
    for (int i = 0; i < m->numa_nodes && i < NTP_MACHINE_MAX_NUMA; i++)
        ntp__jpush(&ok, numa, json_integer(m->numa_memory_bytes[i]));
    ntp__jset(&ok, o, "numa_node_memory_bytes", numa);
    json_t *caches = json_array();
    for (int i = 0; i < m->n_caches; i++) {
        const ntp_cache_info *c = &m->caches[i];
        json_t *co = json_object();
        ntp__jset(&ok, co, "level", json_integer(c->level));
        ntp__jset(&ok, co, "type", ntp__json_str(c->type));
        ntp__jset(&ok, co, "size_bytes", json_integer(c->size_bytes));
        ntp__jset(&ok, co, "line_bytes", json_integer(c->line_bytes));
        ntp__jset(&ok, co, "count", json_integer(c->count));
        ntp__jset(&ok, co, "shared_by", json_integer(c->shared_by));
        ntp__jpush(&ok, caches, co);
    }
    ntp__jset(&ok, o, "caches", caches);
    json_t *gpus = json_array();
    for (int i = 0; i < m->n_gpus; i++)
        ntp__jpush(&ok, gpus, ntp__json_str(m->gpus[i]));
    ntp__jset(&ok, o, "gpus", gpus);
    ntp__jset(&ok, o, "source", ntp__json_str(m->source));
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static void spread_json(bool *ok, json_t *o, const ntp_ceiling_spread *sp, const char *unit)
{
    char key[32];
    ntp__jset(ok, o, "trials", json_integer(sp->trials));
    snprintf(key, sizeof key, "min_%s", unit);
    ntp__jset(ok, o, key, ntp__json_num(sp->min));
    snprintf(key, sizeof key, "median_%s", unit);
    ntp__jset(ok, o, key, ntp__json_num(sp->median));
    ntp__jset(ok, o, "other_busy",
              sp->other_busy >= 0 ? ntp__json_num(sp->other_busy) : json_null());
    ntp__jset(ok, o, "contended", json_boolean(sp->contended));
    if (sp->handoff_ratio > 0)
        ntp__jset(ok, o, "handoff_ratio", ntp__json_num(sp->handoff_ratio));
}

static json_t *peaks_json(bool *ok, const ntp_peak *p, const ntp_ceiling_spread *sp, int n,
                          bool gemm)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        json_t *o = json_object();
        ntp__jset(ok, o, "precision", ntp__json_str(p[i].precision));
        ntp__jset(ok, o, "gflops", ntp__json_num(p[i].gflops));
        ntp__jset(ok, o, "method", ntp__json_str(p[i].method));
        spread_json(ok, o, &sp[i], "gflops");
        if (gemm)
            ntp__jset(ok, o, "backends", ntp__json_str(sp[i].detail));
        else
            ntp__jset(ok, o, "one_thread_gflops", ntp__json_num(sp[i].one_thread));
        ntp__jpush(ok, a, o);
    }
    return a;
}

json_t *ntp__gpu_ceilings_json(bool *ok, const ntp_ceilings *c)
{
    json_t *a = json_array();
    for (int i = 0; i < c->n_gpus; i++) {
        const ntp_gpu_ceilings *g = &c->gpus[i];
        json_t *o = json_object();
        char sm[16];
        snprintf(sm, sizeof sm, "%d.%d", g->sm_major, g->sm_minor);
        ntp__jset(ok, o, "name", ntp__json_str(g->name));
        ntp__jset(ok, o, "compute_capability", ntp__json_str(sm));
        ntp__jset(ok, o, "sms", json_integer(g->sms));
        ntp__jset(ok, o, "clock_ghz", ntp__json_num(g->clock_ghz));
        ntp__jset(ok, o, "memory_bytes", json_integer(g->memory_bytes));
        json_t *gemm = json_array();
        for (int k = 0; k < NTP_GPU_MATH_COUNT; k++) {
            json_t *p = json_object();
            ntp__jset(ok, p, "math", ntp__json_str(ntp_gpu_math_name((ntp_gpu_math)k)));
            ntp__jset(ok, p, "gflops", ntp__json_num(g->gemm_gflops[k]));
            ntp__jset(ok, p, "n", json_integer(g->gemm_n[k]));
            ntp__jpush(ok, gemm, p);
        }
        ntp__jset(ok, o, "gemm", gemm);
        ntp__jset(ok, o, "dram_gbps", ntp__json_num(g->dram_gbps));
        ntp__jset(ok, o, "h2d_gbps", ntp__json_num(g->h2d_gbps));
        ntp__jset(ok, o, "d2h_gbps", ntp__json_num(g->d2h_gbps));
        ntp__jpush(ok, a, o);
    }
    return a;
}

json_t *ntp__ceilings_json(const ntp_ceilings *c)
{
    bool ok = true;
    json_t *o = json_object();
    ntp__jset(&ok, o, "machine", ntp__json_str(c->machine_key));
    ntp__jset(&ok, o, "measured_at", ntp__json_str(c->measured_at));
    ntp__jset(&ok, o, "ntprof_version", ntp__json_str(c->ntprof_version));
    ntp__jset(&ok, o, "threads", json_integer(c->threads));
    ntp__jset(&ok, o, "loadavg", c->loadavg >= 0 ? ntp__json_num(c->loadavg) : json_null());
    ntp__jset(&ok, o, "other_busy",
              c->other_busy >= 0 ? ntp__json_num(c->other_busy) : json_null());
    ntp__jset(&ok, o, "contended", json_boolean(c->contended));
    ntp__jset(&ok, o, "note", ntp__json_str(c->note));
    ntp__jset(&ok, o, "peaks", peaks_json(&ok, c->peaks, c->peak_spread, c->n_peaks, false));
    ntp__jset(&ok, o, "gemm", peaks_json(&ok, c->gemm, c->gemm_spread, c->n_gemm, true));
    json_t *levels = json_array();
    for (int i = 0; i < c->n_levels; i++) {
        json_t *l = json_object();
        ntp__jset(&ok, l, "level", ntp__json_str(c->levels[i].level));
        ntp__jset(&ok, l, "working_set_bytes", json_integer(c->levels[i].working_set_bytes));
        ntp__jset(&ok, l, "gbps", ntp__json_num(c->levels[i].gbps));
        spread_json(&ok, l, &c->level_spread[i], "gbps");
        /* How the level's working set was found, where not as reported. */
        if (c->level_spread[i].detail[0])
            ntp__jset(&ok, l, "note", ntp__json_str(c->level_spread[i].detail));
        ntp__jpush(&ok, levels, l);
    }
    ntp__jset(&ok, o, "bandwidth", levels);
    ntp__jset(&ok, o, "gpus", ntp__gpu_ceilings_json(&ok, c));
    ntp__jset(&ok, o, "gpu_note", c->n_gpus == 0 ? ntp__json_str(c->gpu_note) : json_null());
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static void str_field(json_t *o, const char *key, char *dst, size_t len)
{
    json_t *v = json_object_get(o, key);
    snprintf(dst, len, "%s", json_is_string(v) ? json_string_value(v) : "");
}

static double num_field(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : 0;
}

/* Absent in ceilings cached before the spread was recorded: zeros, and
 * other_busy unknown. */
static void spread_from_json(json_t *v, const char *unit, ntp_ceiling_spread *sp)
{
    char key[32];
    memset(sp, 0, sizeof *sp);
    sp->trials = (int)num_field(v, "trials");
    snprintf(key, sizeof key, "min_%s", unit);
    sp->min = num_field(v, key);
    snprintf(key, sizeof key, "median_%s", unit);
    sp->median = num_field(v, key);
    sp->other_busy =
        json_is_number(json_object_get(v, "other_busy")) ? num_field(v, "other_busy") : -1;
    sp->contended = json_is_true(json_object_get(v, "contended"));
    /* Absent before the looks were recorded: not looked. */
    sp->handoff_ratio =
        json_is_number(json_object_get(v, "handoff_ratio")) ? num_field(v, "handoff_ratio") : 0;
}

static int peaks_from_json(json_t *a, ntp_peak *p, ntp_ceiling_spread *sp, int max)
{
    int n = 0;
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
    {
        if (n >= max || !json_is_object(v))
            break;
        str_field(v, "precision", p[n].precision, sizeof p[n].precision);
        str_field(v, "method", p[n].method, sizeof p[n].method);
        p[n].gflops = num_field(v, "gflops");
        spread_from_json(v, "gflops", &sp[n]);
        sp[n].one_thread = num_field(v, "one_thread_gflops");
        str_field(v, "backends", sp[n].detail, sizeof sp[n].detail);
        n++;
    }
    return n;
}

int ntp__gpu_ceilings_from_json(json_t *a, ntp_gpu_ceilings *out, int max)
{
    int n = 0;
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
    {
        if (n >= max || !json_is_object(v))
            break;
        ntp_gpu_ceilings *g = &out[n++];
        memset(g, 0, sizeof *g);
        str_field(v, "name", g->name, sizeof g->name);
        char sm[16];
        str_field(v, "compute_capability", sm, sizeof sm);
        if (sscanf(sm, "%d.%d", &g->sm_major, &g->sm_minor) != 2)
            g->sm_major = g->sm_minor = 0;
        g->sms = (int)num_field(v, "sms");
        g->clock_ghz = num_field(v, "clock_ghz");
        g->memory_bytes = (int64_t)num_field(v, "memory_bytes");
        size_t k;
        json_t *p;
        json_array_foreach(json_object_get(v, "gemm"), k, p)
        {
            char math[8];
            str_field(p, "math", math, sizeof math);
            for (int m = 0; m < NTP_GPU_MATH_COUNT; m++)
                if (strcmp(math, ntp_gpu_math_name((ntp_gpu_math)m)) == 0) {
                    g->gemm_gflops[m] = num_field(p, "gflops");
                    g->gemm_n[m] = (int)num_field(p, "n");
                }
        }
        g->dram_gbps = num_field(v, "dram_gbps");
        g->h2d_gbps = num_field(v, "h2d_gbps");
        g->d2h_gbps = num_field(v, "d2h_gbps");
    }
    return n;
}

bool ntp__ceilings_from_json(json_t *j, ntp_ceilings *c)
{
    memset(c, 0, sizeof *c);
    if (!json_is_object(j) || !json_is_array(json_object_get(j, "peaks")) ||
        !json_is_array(json_object_get(j, "bandwidth")))
        return false;
    str_field(j, "machine", c->machine_key, sizeof c->machine_key);
    str_field(j, "measured_at", c->measured_at, sizeof c->measured_at);
    str_field(j, "ntprof_version", c->ntprof_version, sizeof c->ntprof_version);
    c->threads = (int)num_field(j, "threads");
    c->n_peaks = peaks_from_json(json_object_get(j, "peaks"), c->peaks, c->peak_spread,
                                 NTP_MACHINE_MAX_PEAKS);
    c->n_gemm =
        peaks_from_json(json_object_get(j, "gemm"), c->gemm, c->gemm_spread, NTP_MACHINE_MAX_PEAKS);
    c->loadavg = json_is_number(json_object_get(j, "loadavg")) ? num_field(j, "loadavg") : -1;
    c->other_busy =
        json_is_number(json_object_get(j, "other_busy")) ? num_field(j, "other_busy") : -1;
    c->contended = json_is_true(json_object_get(j, "contended"));
    str_field(j, "note", c->note, sizeof c->note);
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(j, "bandwidth"), i, v)
    {
        if (c->n_levels >= NTP_MACHINE_MAX_LEVELS || !json_is_object(v))
            break;
        spread_from_json(v, "gbps", &c->level_spread[c->n_levels]);
        ntp_bandwidth *b = &c->levels[c->n_levels++];
        str_field(v, "level", b->level, sizeof b->level);
        b->working_set_bytes = (int64_t)num_field(v, "working_set_bytes");
        b->gbps = num_field(v, "gbps");
        str_field(v, "note", c->level_spread[c->n_levels - 1].detail,
                  sizeof c->level_spread[c->n_levels - 1].detail);
    }
    /* Ceilings cached before GPUs were measured have neither field. */
    c->n_gpus =
        ntp__gpu_ceilings_from_json(json_object_get(j, "gpus"), c->gpus, NTP_MACHINE_MAX_GPUS);
    str_field(j, "gpu_note", c->gpu_note, sizeof c->gpu_note);
    return true;
}

/* --- table ------------------------------------------------------------------------------- */

static const char *cache_name(const ntp_cache_info *c, char *buf, size_t len)
{
    snprintf(buf, len, "L%d%s", c->level,
             strcmp(c->type, "data") == 0          ? "d"
             : strcmp(c->type, "instruction") == 0 ? "i"
                                                   : "");
    return buf;
}

/* Each measured GPU under the CPU's ceilings, or one line saying why there
 * is none. */
static void table_gpus(const ntp_ceilings *c, FILE *f)
{
    char a[32], b[32];
    if (c->n_gpus == 0) {
        /* One line, however long: the reason comes from the driver and is
         * what a user greps for, so it is not wrapped. */
        fprintf(f, "\nGPU: none (%s)\n",
                c->gpu_note[0] ? c->gpu_note
                               : "not measured with these ceilings: `ntprof machine --remeasure`");
        return;
    }
    for (int i = 0; i < c->n_gpus; i++) {
        const ntp_gpu_ceilings *g = &c->gpus[i];
        fputc('\n', f);
        ntp__put_linef(f, "GPU %d: %s, sm_%d%d, %d SMs at %.2f GHz, %s memory", i, g->name,
                       g->sm_major, g->sm_minor, g->sms, g->clock_ghz,
                       ntp__human_bytes((double)g->memory_bytes, a, sizeof a));
        ntp__put_linef(f, "%-12s %12s  %s", "compute", "GFLOP/s", "method");
        for (int k = 0; k < NTP_GPU_MATH_COUNT; k++) {
            char name[32];
            snprintf(name, sizeof name, "%s GEMM", ntp_gpu_math_name((ntp_gpu_math)k));
            ntp__put_linef(f, "%-12s %12s  cuBLAS, %dx%dx%d", name,
                           ntp__fit_number(g->gemm_gflops[k], 12, 1, a, sizeof a), g->gemm_n[k],
                           g->gemm_n[k], g->gemm_n[k]);
        }
        ntp__put_linef(f, "%-12s %12s  %s", "bandwidth", "GB/s", "how");
        ntp__put_linef(f, "%-12s %12s  device-to-device copy, read + write", "DRAM",
                       ntp__fit_number(g->dram_gbps, 12, 1, a, sizeof a));
        ntp__put_linef(f, "%-12s %12s  page-locked host memory", "host->device",
                       ntp__fit_number(g->h2d_gbps, 12, 1, a, sizeof a));
        ntp__put_linef(f, "%-12s %12s  page-locked host memory", "device->host",
                       ntp__fit_number(g->d2h_gbps, 12, 1, b, sizeof b));
        double f16 = g->gemm_gflops[NTP_GPU_MATH_F16];
        if (f16 > 0 && g->dram_gbps > 0)
            ntp__put_linef(f, "ridge point (f16 GEMM / DRAM bandwidth): %.3g FLOP/B",
                           f16 / g->dram_gbps);
    }
}

/* "min..median (n)" of a ceiling's trials, or "-" when not recorded. */
static const char *spread_cell(const ntp_ceiling_spread *sp, char *buf, size_t len)
{
    if (sp->trials <= 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.4g..%.4g (%d)", sp->min, sp->median, sp->trials);
    return buf;
}

static void write_table(const ntp_machine_info *m, const ntp_ceilings *c, FILE *f)
{
    char a[32], b[32];
    ntp__put_linef(f, "machine %s (%s)", m->cpu_model,
                   m->cpu_signature[0] ? m->cpu_signature : "not recorded");
    ntp__put_linef(f, "%d package%s, %d cores, %d logical CPUs, %s memory, %d NUMA node%s",
                   m->packages, m->packages == 1 ? "" : "s", m->cores, m->pus,
                   ntp__human_bytes((double)m->memory_bytes, a, sizeof a), m->numa_nodes,
                   m->numa_nodes == 1 ? "" : "s");
    ntp__put_wrapped(f, "ISA: ", m->cpu_flags[0] ? m->cpu_flags : "none of the tracked extensions");
    char line[1024];
    size_t used = 0;
    line[0] = '\0';
    for (int i = 0; i < m->n_caches && used < sizeof line; i++) {
        const ntp_cache_info *ci = &m->caches[i];
        used += (size_t)snprintf(line + used, sizeof line - used, "%s%s %s x%d (%d CPU%s each)",
                                 i ? ", " : "", cache_name(ci, a, sizeof a),
                                 ntp__human_bytes((double)ci->size_bytes, b, sizeof b), ci->count,
                                 ci->shared_by, ci->shared_by == 1 ? "" : "s");
    }
    ntp__put_wrapped(f, "caches: ", m->n_caches ? line : "unknown");
    used = 0;
    line[0] = '\0';
    for (int i = 0; i < m->n_gpus && used < sizeof line; i++)
        used +=
            (size_t)snprintf(line + used, sizeof line - used, "%s%s", i ? ", " : "", m->gpus[i]);
    ntp__put_wrapped(f, "GPUs: ", m->n_gpus ? line : "none seen");
    ntp__put_linef(f, "host %s; topology from %s", m->hostname, m->source);
    fputc('\n', f);
    if (!c) {
        ntp__put_line(f, "ceilings: not measured (`ntprof machine` measures and caches them)");
        return;
    }
    ntp__put_linef(f, "ceilings measured %s with %d thread%s%s%s%s", c->measured_at, c->threads,
                   c->threads == 1 ? "" : "s", c->ntprof_version[0] ? " (ntprof " : "",
                   c->ntprof_version, c->ntprof_version[0] ? ")" : "");
    if (c->loadavg >= 0 || c->other_busy >= 0) {
        char load[160], pct[16];
        snprintf(pct, sizeof pct, "%.0f%%", 100 * c->other_busy);
        snprintf(load, sizeof load,
                 "load average %.2f at the start; other processes took %s of the "
                 "CPUs while measuring",
                 c->loadavg, c->other_busy >= 0 ? pct : "an unknown share");
        ntp__put_wrapped(f, "", load);
    }
    ntp__put_linef(f, "%-12s %12s %19s %9s  %s", "compute", "GFLOP/s", "spread", "1 thread",
                   "method");
    for (int i = 0; i < c->n_peaks; i++) {
        char name[32];
        snprintf(name, sizeof name, "%s peak", c->peaks[i].precision);
        const ntp_ceiling_spread *sp = &c->peak_spread[i];
        ntp__put_linef(f, "%-12s %12s %19s %9s  %s%s", name,
                       ntp__fit_number(c->peaks[i].gflops, 12, 1, a, sizeof a),
                       spread_cell(sp, line, sizeof line),
                       sp->one_thread > 0 ? ntp__fit_number(sp->one_thread, 9, 1, b, sizeof b)
                                          : "-",
                       sp->contended ? "[UNDER LOAD] " : "", c->peaks[i].method);
    }
    for (int i = 0; i < c->n_gemm; i++) {
        char name[32];
        snprintf(name, sizeof name, "%s GEMM", c->gemm[i].precision);
        const ntp_ceiling_spread *sp = &c->gemm_spread[i];
        ntp__put_linef(f, "%-12s %12s %19s %9s  %s", name,
                       ntp__fit_number(c->gemm[i].gflops, 12, 1, a, sizeof a),
                       spread_cell(sp, line, sizeof line), "-", c->gemm[i].method);
        if (sp->detail[0]) {
            char all[256];
            snprintf(all, sizeof all, "%s GFLOP/s", sp->detail);
            ntp__put_wrapped(f, "             every backend: ", all);
        }
    }
    ntp__put_linef(f, "%-12s %12s %19s %9s  %s", "bandwidth", "GB/s", "spread", "",
                   "triad working set (all threads)");
    for (int i = 0; i < c->n_levels; i++) {
        /* Where the threads' CPUs sat (docs/run.md#the-memory-bus). */
        double h = c->level_spread[i].handoff_ratio;
        const char *placed = h >= NTP_HANDOFF_APART_RATIO ? "CPUs apart, "
                             : h > 0                      ? "CPUs together, "
                                                          : "";
        ntp__put_linef(f, "%-12s %12s %19s %9s  %s%s%s", c->levels[i].level,
                       ntp__fit_number(c->levels[i].gbps, 12, 1, a, sizeof a),
                       spread_cell(&c->level_spread[i], line, sizeof line), "",
                       c->level_spread[i].contended ? "[UNDER LOAD] " : "", placed,
                       ntp__human_bytes((double)c->levels[i].working_set_bytes, b, sizeof b));
        if (c->level_spread[i].detail[0])
            ntp__put_wrapped(f, "             ", c->level_spread[i].detail);
    }
    if (c->contended || c->note[0]) {
        char warn[512];
        snprintf(warn, sizeof warn,
                 "%s%s; re-measure with `ntprof machine --remeasure` on a quiet "
                 "machine",
                 c->contended ? "measured under load: " : "", c->note[0] ? c->note : "");
        ntp__put_wrapped(f, "warning: ", warn);
    }
    const ntp_peak *pk = ntp_ceilings_peak(c, NTP_DTYPE_F32);
    double bw = ntp_ceilings_bandwidth(c, "DRAM");
    if (pk && bw > 0)
        ntp__put_linef(f, "ridge point (f32 peak / DRAM bandwidth): %.3g FLOP/B", pk->gflops / bw);
    table_gpus(c, f);
}

/* --- CSV ------------------------------------------------------------------------------------- */

static void csv_row(FILE *f, const char *kind, const char *name, double value, const char *unit,
                    const char *detail)
{
    ntp__csv_str(f, kind);
    ntp__csv_sep(f);
    ntp__csv_str(f, name);
    ntp__csv_sep(f);
    /* Byte counts are integers beyond %.10g's digits (an 80 GB GPU). */
    if (value == floor(value) && fabs(value) < 9007199254740992.0)
        fprintf(f, "%.0f", value);
    else
        ntp__csv_num(f, value);
    ntp__csv_sep(f);
    ntp__csv_str(f, unit);
    ntp__csv_sep(f);
    ntp__csv_str(f, detail);
    fputc('\n', f);
}

static void write_csv(const ntp_machine_info *m, const ntp_ceilings *c, FILE *f)
{
    fputs("kind,name,value,unit,detail\n", f);
    csv_row(f, "machine", "packages", m->packages, "", m->cpu_model);
    csv_row(f, "machine", "cores", m->cores, "", m->cpu_model);
    csv_row(f, "machine", "logical_cpus", m->pus, "", m->cpu_model);
    csv_row(f, "machine", "memory", (double)m->memory_bytes, "bytes", m->hostname);
    csv_row(f, "machine", "numa_nodes", m->numa_nodes, "", m->source);
    for (int i = 0; i < m->n_caches; i++) {
        char name[16], detail[64];
        cache_name(&m->caches[i], name, sizeof name);
        snprintf(detail, sizeof detail, "x%d, %d CPUs each", m->caches[i].count,
                 m->caches[i].shared_by);
        csv_row(f, "cache", name, (double)m->caches[i].size_bytes, "bytes", detail);
    }
    for (int i = 0; c && i < c->n_peaks; i++)
        csv_row(f, "peak", c->peaks[i].precision, c->peaks[i].gflops, "GFLOP/s",
                c->peaks[i].method);
    for (int i = 0; c && i < c->n_gemm; i++)
        csv_row(f, "gemm", c->gemm[i].precision, c->gemm[i].gflops, "GFLOP/s", c->gemm[i].method);
    for (int i = 0; c && i < c->n_levels; i++) {
        char detail[64];
        snprintf(detail, sizeof detail, "working set %" PRId64 " bytes",
                 c->levels[i].working_set_bytes);
        csv_row(f, "bandwidth", c->levels[i].level, c->levels[i].gbps, "GB/s", detail);
    }
    /* GPU rows are named "gpu<i>:<what>"; a machine without one has a
     * single gpu row whose detail says why. */
    if (c && c->n_gpus == 0)
        csv_row(f, "gpu", "none", 0, "", c->gpu_note);
    for (int i = 0; c && i < c->n_gpus; i++) {
        const ntp_gpu_ceilings *g = &c->gpus[i];
        char name[48], detail[192];
        snprintf(name, sizeof name, "gpu%d:memory", i);
        snprintf(detail, sizeof detail, "%s, sm_%d%d, %d SMs", g->name, g->sm_major, g->sm_minor,
                 g->sms);
        csv_row(f, "gpu", name, (double)g->memory_bytes, "bytes", detail);
        for (int k = 0; k < NTP_GPU_MATH_COUNT; k++) {
            snprintf(name, sizeof name, "gpu%d:gemm:%s", i, ntp_gpu_math_name((ntp_gpu_math)k));
            snprintf(detail, sizeof detail, "cuBLAS, %dx%dx%d", g->gemm_n[k], g->gemm_n[k],
                     g->gemm_n[k]);
            csv_row(f, "gpu", name, g->gemm_gflops[k], "GFLOP/s", detail);
        }
        snprintf(name, sizeof name, "gpu%d:dram", i);
        csv_row(f, "gpu", name, g->dram_gbps, "GB/s", "device-to-device copy, read + write");
        snprintf(name, sizeof name, "gpu%d:h2d", i);
        csv_row(f, "gpu", name, g->h2d_gbps, "GB/s", "page-locked host memory");
        snprintf(name, sizeof name, "gpu%d:d2h", i);
        csv_row(f, "gpu", name, g->d2h_gbps, "GB/s", "page-locked host memory");
    }
}

ntp_status ntp_report_write_machine(ntp_ctx *ctx, const ntp_machine_info *m, const ntp_ceilings *c,
                                    ntp_format fmt, FILE *f)
{
    if (!m || !f)
        return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT,
                          "ntp_report_write_machine: no machine or stream");
    switch (fmt) {
    case NTP_FORMAT_TABLE: write_table(m, c, f); return ntp__check_stream(ctx, f, "machine");
    case NTP_FORMAT_CSV: write_csv(m, c, f); return ntp__check_stream(ctx, f, "machine");
    case NTP_FORMAT_JSON: {
        bool ok = true;
        json_t *root = json_object();
        ntp__jset(&ok, root, "kind", json_string("machine"));
        ntp__jset(&ok, root, "machine", ntp__machine_info_json(m));
        ntp__jset(&ok, root, "ceilings", c ? ntp__ceilings_json(c) : json_null());
        return ntp__json_finish(ctx, root, ok, f, "machine");
    }
    }
    return ntp__error(ctx, NTP_STATUS_INVALID_ARGUMENT, "unknown format %d", (int)fmt);
}
