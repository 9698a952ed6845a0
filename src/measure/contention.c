/* Contention: what other processes and the hypervisor took from the CPUs a
 * run may use while it was measured (docs/run.md#contention).
 *
 * The kernel counts every CPU's time in /proc/stat, in clock ticks: busy
 * (user, nice, system, irq, softirq), idle and stolen. Over a window, the
 * busy time of the run's CPUs minus this process's own CPU time is what
 * other processes used; divided by the CPUs' capacity (CPUs x wall time) it
 * is the share they took. A share well above zero means the run's threads
 * competed for their cores, and its figures may not be those of a quiet
 * machine, however small their spread: a run slowed evenly has a small
 * coefficient of variation. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "measure-impl.h"

/* /proc/stat of a many-core machine: its cpuN lines come first, about 80
 * bytes each; the interrupt counters after them may be long, and are not
 * needed. */
#define STAT_BYTES (256 * 1024)

bool ntp__proc_stat_parse(const char *text, const cpu_set_t *set, ntp__cpu_times *out)
{
    memset(out, 0, sizeof *out);
    for (const char *line = text; line && *line;) {
        const char *next = strchr(line, '\n');
        if (strncmp(line, "cpu", 3) == 0 && line[3] >= '0' && line[3] <= '9') {
            char *end;
            errno = 0;
            long cpu = strtol(line + 3, &end, 10);
            if (errno || *end != ' ' || cpu < 0)
                return false;
            /* user nice system idle iowait irq softirq steal [guest guest_nice];
             * kernels before 2.6.11 have no steal field. */
            unsigned long long v[8] = {0};
            int n = 0;
            const char *p = end;
            while (n < 8) {
                while (*p == ' ')
                    p++;
                if (*p < '0' || *p > '9')
                    break;
                errno = 0;
                v[n++] = strtoull(p, &end, 10);
                if (errno)
                    return false;
                p = end;
            }
            if (n < 4)
                return false;
            if (!set || (cpu < CPU_SETSIZE && CPU_ISSET((int)cpu, set))) {
                out->busy += v[0] + v[1] + v[2] + v[5] + v[6];
                out->idle += v[3] + v[4];
                out->steal += v[7];
                out->cpus++;
            }
        }
        line = next ? next + 1 : NULL;
    }
    return out->cpus > 0;
}

bool ntp__loadavg_parse(const char *text, double avg[3])
{
    return sscanf(text, "%lf %lf %lf", &avg[0], &avg[1], &avg[2]) == 3 && avg[0] >= 0 &&
           avg[1] >= 0 && avg[2] >= 0;
}

static double clamp01(double v)
{
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

void ntp__contention_compute(const ntp__cpu_times *a, const ntp__cpu_times *b, double own_s,
                             double wall_s, double ticks_per_s, ntp_contention *out)
{
    memset(out, 0, sizeof *out);
    if (a->cpus != b->cpus || a->cpus <= 0 || !(wall_s > 0) || !(ticks_per_s > 0) ||
        b->busy < a->busy || b->steal < a->steal) {
        out->measured = false;
        snprintf(out->reason, sizeof out->reason, "the CPU counters did not advance consistently");
        return;
    }
    double capacity = a->cpus * wall_s;
    double busy_s = (double)(b->busy - a->busy) / ticks_per_s;
    double steal_s = (double)(b->steal - a->steal) / ticks_per_s;
    out->measured = true;
    out->window_s = wall_s;
    out->cpus = a->cpus;
    /* The kernel counts busy time in whole ticks (and on most kernels by
     * sampling at each tick), this process's time to the nanosecond: the
     * difference can be a little negative on a quiet machine. */
    out->other = clamp01((busy_s - own_s) / capacity);
    out->steal = clamp01(steal_s / capacity);
    out->own = clamp01(own_s / capacity);
    /* Each CPU's counters are whole ticks at both ends: summed over the
     * CPUs and divided by their capacity, up to one tick per CPU either way,
     * twice for the sampling. */
    out->resolution = 2.0 / (ticks_per_s * wall_s);
    out->distorted = out->other + out->steal - out->resolution >= NTP_CONTENTION_THRESHOLD;
}

/* The text of a small /proc file into buf; false when unreadable. */
static bool read_text(const char *path, char *buf, size_t len, char *why, size_t why_len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, why_len, "cannot read %s: %s", path, strerror(errno));
        return false;
    }
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (n == 0) {
        snprintf(why, why_len, "%s is empty", path);
        return false;
    }
    return true;
}

static bool sample(const cpu_set_t *set, ntp__cpu_times *t, char *why, size_t why_len)
{
    char *buf = malloc(STAT_BYTES);
    if (!buf) {
        snprintf(why, why_len, "out of memory");
        return false;
    }
    bool ok = read_text("/proc/stat", buf, STAT_BYTES, why, why_len);
    if (ok && !(ok = ntp__proc_stat_parse(buf, set, t)))
        snprintf(why, why_len, "/proc/stat has no per-CPU lines for this process's CPUs");
    free(buf);
    return ok;
}

static double process_cpu_s(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return -1;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void ntp__contention_begin(ntp__contention_probe *p)
{
    memset(p, 0, sizeof *p);
    p->load1 = -1;
    char buf[256], why[96];
    double avg[3];
    if (read_text("/proc/loadavg", buf, sizeof buf, why, sizeof why) &&
        ntp__loadavg_parse(buf, avg))
        p->load1 = avg[0];
    /* The CPUs this process may run on (all of them, or those of --pin):
     * another process on a CPU the run cannot use does not slow it. */
    const cpu_set_t *set = &p->set;
    if (sched_getaffinity(0, sizeof p->set, &p->set) != 0)
        set = NULL;
    if (!sample(set, &p->t0, p->reason, sizeof p->reason))
        return;
    if (!set)
        CPU_ZERO(&p->set); /* an empty set below means "every CPU" */
    if ((p->own0_s = process_cpu_s()) < 0) {
        snprintf(p->reason, sizeof p->reason, "no process CPU-time clock");
        return;
    }
    p->wall0_s = (double)ntp__now_ns() * 1e-9;
    p->ok = true;
}

void ntp__contention_end(const ntp__contention_probe *p, ntp_contention *out)
{
    memset(out, 0, sizeof *out);
    out->load_average = p->load1;
    if (!p->ok) {
        snprintf(out->reason, sizeof out->reason, "%s", p->reason);
        return;
    }
    double wall = (double)ntp__now_ns() * 1e-9 - p->wall0_s;
    double own = process_cpu_s() - p->own0_s;
    ntp__cpu_times t1;
    char why[96];
    const cpu_set_t *set = CPU_COUNT(&p->set) > 0 ? &p->set : NULL;
    long hz = sysconf(_SC_CLK_TCK);
    if (!sample(set, &t1, why, sizeof why)) {
        snprintf(out->reason, sizeof out->reason, "%s", why);
        return;
    }
    ntp__contention_compute(&p->t0, &t1, own, wall, hz > 0 ? (double)hz : 100.0, out);
    out->load_average = p->load1;
}

bool ntp__contention_warning(const ntp_contention *c, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!c->measured || !c->distorted)
        return false;
    char load[48] = "";
    if (c->load_average >= 0)
        snprintf(load, sizeof load, " (load average %.2f at start)", c->load_average);
    char steal[64] = "";
    if (c->steal >= 0.005)
        snprintf(steal, sizeof steal, " and the hypervisor took %.0f%% (steal)", 100 * c->steal);
    snprintf(buf, len,
             "other processes used %.0f%% of the CPU during measurement%s%s; figures may be "
             "distorted",
             100 * c->other, load, steal);
    return true;
}

void ntp_contention_sample(double seconds, ntp_contention *out)
{
    ntp__contention_probe p;
    ntp__contention_begin(&p);
    if (seconds > 0) {
        struct timespec nap = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
        while (nanosleep(&nap, &nap) != 0 && errno == EINTR)
            ;
    }
    ntp__contention_end(&p, out);
}
