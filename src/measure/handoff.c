/* Data handed between a run's CPUs around its measured window
 * (docs/run.md#handoff).
 *
 * A multi-threaded run hands every layer's output from the threads that
 * wrote it to the threads that read it next, through the cache their CPUs
 * share. sysfs says which caches those are; on a virtual machine it
 * describes the guest the hypervisor presents, not where the host runs the
 * vCPUs this second: two vCPUs sysfs puts in one L3 may sit on different
 * dies, and then a 2-thread SqueezeNet on XNNPACK takes 8.5 ms instead of
 * 5.0 (its reorders, concats and pools 2-5x slower, its convolutions
 * unchanged) until the host moves them back. Nothing else a run measures
 * sees it: the CPUs are busy with this process, steal reads 0, the DRAM
 * triad reads the same. So a run times the hand-off itself: one CPU writes
 * a buffer twice its L2, the other reads it, then reads it again from its
 * own caches; the ratio of the two reads is about 1 where the two share
 * the cache the buffer sits in and 2.5 to 4 where they do not. Probes
 * before the warm-up and after the last measured iteration, as the
 * bandwidth probe, and short samples between iterations every
 * NTP_HANDOFF_SAMPLE_S; a calibration's looks around each timing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counters-impl.h"
#include "machine-impl.h"
#include "measure-impl.h"
#include "ntprof/context.h"
#include "ntprof/stats.h"

/* Rounds per pair: the first two (one each way) fault the buffer in and
 * are not timed; the timed ones alternate the direction. */
#define WARM_ROUNDS 2
#define TIMED_ROUNDS 24
/* Rounds of a sample inside the window, all timed, three each way (the
 * buffer stays faulted in from the first sample); a look (a calibration's)
 * adds the two untimed ones. */
#define SAMPLE_ROUNDS 6
/* Pairs probed: the first CPU of the run's set with up to this many
 * others, spread over the set. */
#define MAX_PAIRS 7
/* The buffer when sysfs gives no L2 size. */
#define DEFAULT_BYTES ((int64_t)2 << 20)

int64_t ntp__sysfs_cache_bytes(int cpu, int level, int other, int *shared)
{
    *shared = -1;
    for (int i = 0; i < 8; i++) {
        char path[112], text[256];
        int lv = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/level", cpu, i);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        bool ok = fscanf(f, "%d", &lv) == 1 && lv == level;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/type", cpu, i);
        if (!ok || !(f = fopen(path, "r")))
            continue;
        ok = fgets(text, sizeof text, f) && strncmp(text, "Instruction", 11) != 0;
        fclose(f);
        long kib = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/size", cpu, i);
        if (!ok || !(f = fopen(path, "r")))
            continue;
        ok = fscanf(f, "%ldK", &kib) == 1 && kib > 0;
        fclose(f);
        if (!ok)
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/shared_cpu_list",
                 cpu, i);
        if ((f = fopen(path, "r"))) {
            if (fgets(text, sizeof text, f))
                *shared = ntp__cpu_list_has(text, other);
            fclose(f);
        }
        return (int64_t)kib * 1024;
    }
    return 0;
}

int64_t ntp__sysfs_llc_bytes(int cpu)
{
    int shared;
    for (int level = 4; level >= 1; level--) {
        int64_t bytes = ntp__sysfs_cache_bytes(cpu, level, cpu, &shared);
        if (bytes > 0)
            return bytes;
    }
    return 0;
}

int ntp__cpu_list_has(const char *list, int cpu)
{
    const char *p = list;
    while (*p) {
        char *end;
        long a = strtol(p, &end, 10);
        if (end == p)
            return -1;
        long b = a;
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            if (end == p + 1)
                return -1;
            p = end;
        }
        if (cpu >= a && cpu <= b)
            return 1;
        if (*p == ',')
            p++;
        else
            break;
    }
    return 0;
}

/* The highest level sysfs says CPUs a and b share (0: none, -1: sysfs does
 * not say) and its size. */
static int shared_level(int a, int b, int64_t *bytes)
{
    int known = -1;
    *bytes = 0;
    for (int level = 4; level >= 1; level--) {
        int shared;
        int64_t size = ntp__sysfs_cache_bytes(a, level, b, &shared);
        if (size <= 0 || shared < 0)
            continue;
        known = 0;
        if (shared) {
            *bytes = size;
            return level;
        }
    }
    return known;
}

typedef struct handoff_job {
    unsigned char *buf;
    size_t bytes;
    int warm, timed; /* rounds */
    double remote_us[TIMED_ROUNDS];
    double own_us[TIMED_ROUNDS];
    uint64_t sink;
} handoff_job;

/* One 8-byte load per cache line: what moves is the line. */
static uint64_t read_lines(const unsigned char *p, size_t bytes)
{
    uint64_t s = 0;
    for (size_t i = 0; i < bytes; i += 64)
        s += *(const volatile uint64_t *)(p + i);
    return s;
}

/* Worker 0 runs on the pair's first CPU, worker 1 on its second; the
 * writer alternates, the reader times its two reads. */
static void handoff_worker(ntp__team *tm, int id)
{
    handoff_job *j = tm->arg;
    uint64_t s = 0;
    for (int r = 0; r < j->warm + j->timed; r++) {
        int writer = r & 1;
        if (id == writer)
            memset(j->buf, r + 1, j->bytes);
        pthread_barrier_wait(&tm->barrier);
        if (id != writer) {
            double t0 = ntp__now_us();
            s += read_lines(j->buf, j->bytes);
            double t1 = ntp__now_us();
            s += read_lines(j->buf, j->bytes);
            double t2 = ntp__now_us();
            if (r >= j->warm) {
                j->remote_us[r - j->warm] = t1 - t0;
                j->own_us[r - j->warm] = t2 - t1;
            }
        }
        pthread_barrier_wait(&tm->barrier);
    }
    if (id == 1)
        j->sink = s;
}

/* The hand-off between CPUs a and b over j's buffer: the median remote and
 * own reads in us; false (ctx's message) when the team could not run. */
static bool run_pair(ntp_ctx *ctx, handoff_job *j, int a, int b, double *remote, double *own)
{
    ntp__team tm;
    tm.n = 2;
    tm.cpus[0] = a;
    tm.cpus[1] = b;
    if (ntp__team_run(ctx, &tm, handoff_worker, j))
        return false;
    *remote = ntp__median_inplace(j->remote_us, j->timed);
    *own = ntp__median_inplace(j->own_us, j->timed);
    return true;
}

/* The ratio of one pair over a buffer of its own, after the untimed
 * rounds, over `timed` rounds; 0 when it could not run. */
static double pair_ratio(int a, int b, int64_t bytes, int timed)
{
    handoff_job *j = calloc(1, sizeof *j);
    ntp_ctx *ctx = ntp_ctx_init();
    unsigned char *buf = aligned_alloc(64, (size_t)bytes);
    double remote = 0, own = 0;
    if (j && ctx && buf) {
        *j = (handoff_job){.buf = buf, .bytes = (size_t)bytes, .warm = WARM_ROUNDS, .timed = timed};
        if (!run_pair(ctx, j, a, b, &remote, &own))
            own = 0;
    }
    free(buf);
    ntp_ctx_free(ctx);
    free(j);
    return own > 0 ? remote / own : 0;
}

double ntp__handoff_pair_ratio(int a, int b, int64_t bytes)
{
    return pair_ratio(a, b, bytes, TIMED_ROUNDS);
}

/* The CPUs of the run's set: the first and the others of each pair. */
static int pair_cpus(int *first, int others[MAX_PAIRS])
{
    ntp__team all;
    int n = ntp__team_cpus(&all, 0);
    if (n < 2)
        return 0;
    int m = n - 1 < MAX_PAIRS ? n - 1 : MAX_PAIRS;
    *first = all.cpus[0];
    for (int i = 0; i < m; i++)
        others[i] = all.cpus[1 + (i * (n - 1)) / m];
    return m;
}

double ntp__handoff_look(const ntp_handoff_check *h)
{
    int first, others[MAX_PAIRS];
    if (!h->measured || pair_cpus(&first, others) < 1)
        return 0;
    return pair_ratio(first, others[0], h->bytes, SAMPLE_ROUNDS);
}

void ntp__handoff_plan(ntp_bandwidth_probe mode, int threads, ntp_handoff_check *h)
{
    memset(h, 0, sizeof *h);
    /* A few ms: auto probes whatever the window's length. */
    if (mode == NTP_BANDWIDTH_PROBE_OFF) {
        snprintf(h->reason, sizeof h->reason, "off (ntp_run_opts.bandwidth_probe)");
        return;
    }
    if (ntp__valgrind_running()) {
        snprintf(h->reason, sizeof h->reason,
                 "under valgrind, which runs one thread at a time on one CPU");
        return;
    }
    int first, others[MAX_PAIRS];
    int pairs = pair_cpus(&first, others);
    if (threads == 1 || pairs == 0) {
        snprintf(h->reason, sizeof h->reason, "one %s: no layer hands data from one CPU to another",
                 threads == 1 ? "thread" : "CPU");
        return;
    }
    int shared;
    int64_t l2 = ntp__sysfs_cache_bytes(others[0], 2, others[0], &shared);
    h->bytes = l2 > 0 ? 2 * l2 : DEFAULT_BYTES;
    /* Within the largest cache, where one is known: the reader's second
     * read must find the buffer in its own caches. */
    int64_t llc = ntp__sysfs_llc_bytes(others[0]);
    if (llc > 0 && h->bytes > llc / 2)
        h->bytes = llc / 2;
    h->pairs = pairs;
    h->measured = true;
}

/* One probe over every pair into p; false (and h's reason) on failure. */
static bool probe(ntp_handoff_check *h, ntp_handoff_probe *p)
{
    int first, others[MAX_PAIRS];
    int pairs = pair_cpus(&first, others);
    if (pairs > h->pairs)
        pairs = h->pairs;
    handoff_job *j = calloc(1, sizeof *j);
    ntp_ctx *ctx = ntp_ctx_init();
    unsigned char *buf = aligned_alloc(64, (size_t)h->bytes);
    bool ok = j && ctx && buf;
    if (!ok)
        snprintf(h->reason, sizeof h->reason, "out of memory");
    memset(p, 0, sizeof *p);
    double t0 = ntp__now_us();
    for (int k = 0; ok && k < pairs; k++) {
        *j = (handoff_job){
            .buf = buf, .bytes = (size_t)h->bytes, .warm = WARM_ROUNDS, .timed = TIMED_ROUNDS};
        double remote, own;
        if (!run_pair(ctx, j, first, others[k], &remote, &own)) {
            snprintf(h->reason, sizeof h->reason, "%s", ntp_ctx_errmsg(ctx));
            ok = false;
            break;
        }
        double ratio = own > 0 ? remote / own : 0;
        if (ratio >= NTP_HANDOFF_APART_RATIO)
            p->pairs_apart++;
        if (ratio > p->ratio) {
            p->ratio = ratio;
            p->remote_gbps = remote > 0 ? (double)h->bytes / remote / 1e3 : 0;
            p->own_gbps = (double)h->bytes / own / 1e3;
            p->cpu_from = first;
            p->cpu_to = others[k];
        }
    }
    if (ok && p->ratio > 0)
        p->sysfs_level = shared_level(p->cpu_from, p->cpu_to, &p->sysfs_bytes);
    h->cost_s += (ntp__now_us() - t0) / 1e6;
    free(buf);
    ntp_ctx_free(ctx);
    free(j);
    if (!ok) {
        memset(p, 0, sizeof *p);
        h->measured = false;
    }
    return ok;
}

void ntp__handoff_before(ntp_handoff_check *h)
{
    if (h->measured)
        probe(h, &h->before);
}

void ntp__handoff_after(ntp_handoff_check *h)
{
    if (h->measured)
        probe(h, &h->after);
    ntp__handoff_judge(h);
}

void ntp__handoff_window_begin(const ntp_handoff_check *h, ntp__handoff_window *w)
{
    memset(w, 0, sizeof *w);
    w->last_us = ntp__now_us();
    if (h->measured && h->before.ratio > 0)
        w->buf = aligned_alloc(64, (size_t)h->bytes);
}

void ntp__handoff_window_tick(ntp_handoff_check *h, ntp__handoff_window *w, int iter)
{
    double now = ntp__now_us();
    if (!w->buf || now - w->last_us < 1e6 * NTP_HANDOFF_SAMPLE_S)
        return;
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 64;
        int *it = realloc(w->iter, (size_t)cap * sizeof *it);
        if (it)
            w->iter = it;
        double *ra = it ? realloc(w->ratio, (size_t)cap * sizeof *ra) : NULL;
        if (!ra) { /* out of memory: no more samples, those taken stand */
            free(w->buf);
            w->buf = NULL;
            return;
        }
        w->ratio = ra;
        w->cap = cap;
    }
    handoff_job j = {.buf = w->buf, .bytes = (size_t)h->bytes, .warm = 0, .timed = SAMPLE_ROUNDS};
    ntp_ctx *ctx = ntp_ctx_init();
    double remote, own;
    if (ctx && run_pair(ctx, &j, h->before.cpu_from, h->before.cpu_to, &remote, &own) && own > 0) {
        w->iter[w->n] = iter;
        w->ratio[w->n++] = remote / own;
    }
    ntp_ctx_free(ctx);
    double end = ntp__now_us();
    h->cost_s += (end - now) / 1e6;
    w->last_us = end;
}

/* The medians of v[i * stride] over the iterations i < n with apart[i] 0
 * and with it 1 (0 where there is none), and how many each; col holds 2n
 * values. */
static void split_medians(const double *v, size_t stride, const unsigned char *apart, int n,
                          double *col, double *together_ms, double *apart_ms, int *together_n,
                          int *apart_n)
{
    int nt = 0, na = 0;
    for (int i = 0; i < n; i++) {
        if (apart[i])
            col[n + na++] = v[(size_t)i * stride];
        else
            col[nt++] = v[(size_t)i * stride];
    }
    *together_ms = nt ? ntp__median_inplace(col, nt) : 0;
    *apart_ms = na ? ntp__median_inplace(col + n, na) : 0;
    if (together_n)
        *together_n = nt;
    if (apart_n)
        *apart_n = na;
}

bool ntp__split_iterations(const double *e2e, const unsigned char *flag, int n, ntp__split *s)
{
    memset(s, 0, sizeof *s);
    double *col = n > 0 ? malloc(2 * (size_t)n * sizeof *col) : NULL;
    if (!col)
        return n <= 0;
    split_medians(e2e, 1, flag, n, col, &s->ms[0], &s->ms[1], &s->n[0], &s->n[1]);
    /* Each median's interval, from the groups split_medians left in col. */
    for (int g = 0; g < 2; g++) {
        ntp_stats st;
        ntp_stats_compute(col + (g ? n : 0), (size_t)s->n[g], &st);
        s->lo[g] = st.ci95_lo, s->hi[g] = st.ci95_hi;
    }
    free(col);
    return true;
}

void ntp__handoff_window_end(ntp_handoff_check *h, ntp__handoff_window *w, const double *e2e, int n,
                             unsigned char *apart_it)
{
    h->samples = w->n;
    h->samples_apart = 0;
    h->window_ratio = 0;
    for (int i = 0; i < w->n; i++) {
        h->samples_apart += w->ratio[i] >= NTP_HANDOFF_APART_RATIO;
        if (w->ratio[i] > h->window_ratio)
            h->window_ratio = w->ratio[i];
    }
    /* Each iteration under its latest look: the probe before, then each
     * sample from the iteration it preceded. */
    const bool split = h->measured && n > 0;
    int k = 0;
    bool apart = h->before.ratio >= NTP_HANDOFF_APART_RATIO;
    for (int i = 0; split && i < n; i++) {
        while (k < w->n && w->iter[k] <= i)
            apart = w->ratio[k++] >= NTP_HANDOFF_APART_RATIO;
        apart_it[i] = apart;
    }
    ntp__split sp;
    memset(&sp, 0, sizeof sp);
    if (split)
        ntp__split_iterations(e2e, apart_it, n, &sp);
    h->together_ms = sp.ms[0], h->together_n = sp.n[0];
    h->together_lo = sp.lo[0], h->together_hi = sp.hi[0];
    h->apart_ms = sp.ms[1], h->apart_n = sp.n[1];
    h->apart_lo = sp.lo[1], h->apart_hi = sp.hi[1];
    free(w->buf);
    free(w->iter);
    free(w->ratio);
    memset(w, 0, sizeof *w);
}

void ntp__handoff_judge(ntp_handoff_check *h)
{
    h->apart = false;
    if (!h->measured)
        return;
    /* Every look that ran: apart or not. */
    int looks = 0, apart = 0;
    const ntp_handoff_probe *p[2] = {&h->before, &h->after};
    for (int i = 0; i < 2; i++)
        if (p[i]->ratio > 0) {
            looks++;
            apart += p[i]->pairs_apart > 0;
        }
    looks += h->samples;
    apart += h->samples_apart;
    bool shared = h->before.sysfs_level > 0 || h->after.sysfs_level > 0;
    h->apart = (apart > 0 && shared) || (apart > 0 && apart < looks);
    /* Where the looks split the iterations, the run's own time is the
     * judge: a placement that changed moves the iterations under it, by
     * more than the run's noise (their median's interval clear of the
     * others'). */
    h->unconfirmed = false;
    if (h->apart && h->together_n > 0 && h->apart_n > 0 && h->together_ms > 0 &&
        !ntp_split_followed(h->apart_ms, h->apart_lo, h->together_ms, h->together_hi)) {
        h->apart = false;
        h->unconfirmed = true;
    }
}

/* "a 32 MiB L3" */
static void cache_words(const ntp_handoff_probe *p, char *buf, size_t len)
{
    if (p->sysfs_bytes >= (int64_t)1 << 20 && p->sysfs_bytes % ((int64_t)1 << 20) == 0)
        snprintf(buf, len, "a %lld MiB L%d", (long long)(p->sysfs_bytes >> 20), p->sysfs_level);
    else
        snprintf(buf, len, "a %lld KiB L%d", (long long)(p->sysfs_bytes >> 10), p->sysfs_level);
}

/* The pair the check names: the probe before's, else the one after's. */
static const ntp_handoff_probe *named(const ntp_handoff_check *h)
{
    return h->before.ratio > 0 ? &h->before : &h->after;
}

/* "before, in 12 of 40 samples during and after the measured window" */
static void apart_when(const ntp_handoff_check *h, char *buf, size_t len)
{
    char part[3][48];
    int n = 0;
    if (h->before.ratio >= NTP_HANDOFF_APART_RATIO)
        snprintf(part[n++], sizeof part[0], "before");
    if (h->samples_apart > 0)
        snprintf(part[n++], sizeof part[0], "in %d of %d samples during", h->samples_apart,
                 h->samples);
    if (h->after.ratio >= NTP_HANDOFF_APART_RATIO)
        snprintf(part[n++], sizeof part[0], "after");
    snprintf(buf, len, "%s%s%s%s%s the measured window", n > 0 ? part[0] : "",
             n == 3   ? ", "
             : n == 2 ? " and "
                      : "",
             n > 1 ? part[1] : "", n == 3 ? " and " : "", n == 3 ? part[2] : "");
}

bool ntp__handoff_warning(const ntp_handoff_check *h, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!h->measured || !h->apart)
        return false;
    const ntp_handoff_probe *p = named(h);
    char when[256], where[96] = "", split[192] = "";
    apart_when(h, when, sizeof when);
    if (p->sysfs_level > 0) {
        char cache[48];
        cache_words(p, cache, sizeof cache);
        snprintf(where, sizeof where, ", though sysfs says they share %s", cache);
    }
    if (ntp_handoff_split_shown(h))
        snprintf(split, sizeof split,
                 "; the end-to-end median is %.4g ms over the %d iterations while they shared "
                 "one and %.4g ms over the %d while apart",
                 h->together_ms, h->together_n, h->apart_ms, h->apart_n);
    snprintf(buf, len,
             "CPUs %d and %d did not share a cache %s%s: one read the other's writes up to %.1fx "
             "slower than its own (on a virtual machine the host ran them on different dies)%s; "
             "layers that read what another thread wrote may read up to that much slower, and "
             "runs of this machine differ with the placement (docs/run.md#handoff)",
             p->cpu_from, p->cpu_to, when, where, ntp_handoff_worst(h), split);
    return true;
}

bool ntp__handoff_line(const ntp_handoff_check *h, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!h->measured) {
        if (!h->reason[0])
            return false;
        snprintf(buf, len, "n/a (%s)", h->reason);
        return true;
    }
    const ntp_handoff_probe *p = named(h);
    char sysfs[112], during[96];
    if (p->sysfs_level > 0) {
        char cache[48];
        cache_words(p, cache, sizeof cache);
        snprintf(sysfs, sizeof sysfs, "sysfs: they share %s", cache);
    } else {
        snprintf(sysfs, sizeof sysfs, "%s",
                 p->sysfs_level == 0 ? "sysfs: they share no cache" : "sysfs does not say");
    }
    if (h->samples > 0)
        snprintf(during, sizeof during, "up to %.2fx in %d sample%s during (%d apart)",
                 h->window_ratio, h->samples, h->samples == 1 ? "" : "s", h->samples_apart);
    else
        snprintf(during, sizeof during, "no sample during (a window under %.1f s)",
                 NTP_HANDOFF_SAMPLE_S);
    char moved[384] = "";
    if (h->unconfirmed)
        snprintf(moved, sizeof moved,
                 "; the %d iterations under the looks that read apart took %.4g ms (end-to-end "
                 "median, 95%% interval %.4g-%.4g), the %d others %.4g ms (%.4g-%.4g): the "
                 "run's time did not follow the looks, no warning (docs/run.md#handoff)",
                 h->apart_n, h->apart_ms, h->apart_lo, h->apart_hi, h->together_n, h->together_ms,
                 h->together_lo, h->together_hi);
    snprintf(buf, len,
             "reading another CPU's writes took %.2fx the time of reading its own before the "
             "window, %s, %.2fx after (CPU %d to %d, the slowest of %d pair%s; %s); the probes "
             "took %.0f ms (%.0f KiB each way)%s",
             h->before.ratio, during, h->after.ratio, p->cpu_from, p->cpu_to, h->pairs,
             h->pairs == 1 ? "" : "s", sysfs, 1e3 * h->cost_s, (double)h->bytes / 1024, moved);
    return true;
}

void ntp__handoff_split_rows(const double *lt, int nl, const unsigned char *apart, int n,
                             ntp_layer_result *rows)
{
    double *col = apart ? malloc(2 * (size_t)n * sizeof *col + 1) : NULL;
    for (int k = 0; col && k < nl; k++)
        split_medians(lt + k, (size_t)nl, apart, n, col, &rows[k].together_ms, &rows[k].apart_ms,
                      NULL, NULL);
    free(col);
}
