/* Progress on the terminal, shared by run, sweep and machine: one status
 * line on stderr redrawn in place, shown only when stderr is a terminal, so
 * a pipe or a file never collects escape sequences. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

double cli_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void cli_duration(double s, char *buf, size_t len)
{
    long t = s < 0 ? 0 : (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

void cli_progress_init(cli_progress *p)
{
    memset(p, 0, sizeof *p);
    p->tty = isatty(STDERR_FILENO) == 1;
    p->t0 = p->phase_t0 = cli_now_s();
    p->last_draw = -1;
}

void cli_progress_show(cli_progress *p, const char *phase, int done, int total, const char *label)
{
    if (!p->tty)
        return;
    double now = cli_now_s();
    bool new_phase = strncmp(p->phase, phase, sizeof p->phase - 1) != 0;
    if (new_phase) {
        snprintf(p->phase, sizeof p->phase, "%s", phase);
        p->phase_t0 = now;
    }
    /* Ten redraws a second at most: a microsecond-sized topology calls
     * this once per iteration. A new phase and the last step always show. */
    if (!new_phase && done != total && now - p->last_draw < 0.1)
        return;
    p->last_draw = now;
    char eta[32] = "", count[48] = "", bar[24] = "";
    if (total > 0) {
        int w = (int)sizeof bar - 1, fill = done >= total ? w : (int)((double)done * w / total);
        for (int i = 0; i < w; i++)
            bar[i] = i < fill ? '=' : i == fill ? '>' : ' ';
        bar[w] = '\0';
        snprintf(count, sizeof count, "[%s] %d/%d ", bar, done, total);
        if (done > 0) {
            char d[24];
            cli_duration((now - p->phase_t0) / done * (total - done), d, sizeof d);
            snprintf(eta, sizeof eta, "ETA %s ", d);
        }
    }
    char elapsed[24];
    cli_duration(now - p->t0, elapsed, sizeof elapsed);
    fprintf(stderr, "\r\033[Kntprof: %s%s %s(%s elapsed)%s%.40s", count, phase, eta, elapsed,
            label && *label ? "  " : "", label ? label : "");
    fflush(stderr);
    p->shown = true;
}

void cli_progress_clear(cli_progress *p)
{
    if (p->tty && p->shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    p->shown = false;
    p->phase[0] = '\0';
}
