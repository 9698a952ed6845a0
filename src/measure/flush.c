/* Writing over the caches between measured passes (ntp_run_opts.flush_bytes). */
#include <pthread.h>

#include "measure/measure-impl.h"

/* One plain store per line: each misses, allocates its line (read for
 * ownership) and evicts another. Not memset: glibc's (2.36, Debian 12)
 * writes a buffer this large with `rep stosb`, whose stores a Zen 4 keeps
 * out of the caches, so they evict nothing: after a 64 MiB memset a 9.6
 * MB buffer read back at 70 GB/s, as warm (78), and after these stores at
 * 27, as from memory (bench/bench_flush, docs/predict.md). A stride of 64
 * bytes touches every line of 64 bytes or more. Starts at `from` and wraps
 * around, so that writers on several CPUs start on different lines. */
static void write_over(unsigned char *buf, int64_t bytes, int64_t from, int pass)
{
    volatile unsigned char *p = buf;
    for (int64_t i = from; i < bytes; i += NTP__FLUSH_STRIDE)
        p[i] = (unsigned char)pass;
    for (int64_t i = 0; i < from; i += NTP__FLUSH_STRIDE)
        p[i] = (unsigned char)pass;
}

typedef struct flush_job {
    unsigned char *buf;
    int64_t bytes, from;
    int pass, cpu;
    pthread_t th;
    bool started, pinned;
} flush_job;

static void *flush_thread(void *arg)
{
    flush_job *j = arg;
    /* Unpinned, the writes would still evict the caches of whichever CPU
     * the thread ran on; the caller's own writes below cover its CPU. */
    j->pinned = ntp__pin_self(j->cpu);
    write_over(j->buf, j->bytes, j->from, j->pass);
    return NULL;
}

void ntp__flush_caches_here(unsigned char *buf, int64_t bytes, int pass)
{
    if (buf && bytes > 0)
        write_over(buf, bytes, 0, pass);
}

int ntp__flush_caches(unsigned char *buf, int64_t bytes, int pass)
{
    if (!buf || bytes <= 0)
        return 0;
    /* Every CPU the process may run on writes the whole buffer, all at
     * once: a backend's worker threads run on CPUs that need not share a
     * cache with the caller's (docs/run.md#handoff: a VM's two vCPUs on two
     * L3s), and a flush written by the caller alone left the weights a
     * worker had read in that worker's L3, where a network's other layers
     * would have evicted them: a 3x3 convolution of 512 channels on 7x7
     * (9.4 MB of weights, XNNPACK, 2 threads) took 1.1 ms after it and 1.6
     * ms in a row of three such layers, whose 28 MB evict each other
     * (2026-12-06, the Zen 5 VM; docs/predict.md#the-flush). */
    flush_job jobs[NTP__FLUSH_MAX_CPUS];
    int cpus[NTP__FLUSH_MAX_CPUS];
    const int n = ntp__set_cpus(cpus, NTP__FLUSH_MAX_CPUS);
    /* The caller starts at the first line, writer k at (k + 1) / (n + 1)
     * of the buffer. */
    for (int k = 0; k < n; k++) {
        flush_job *j = &jobs[k];
        *j = (flush_job){buf, bytes, 0, pass, cpus[k], 0, false, false};
        j->from = (bytes / NTP__FLUSH_STRIDE) * (k + 1) / (n + 1) * NTP__FLUSH_STRIDE;
        j->started = pthread_create(&j->th, NULL, flush_thread, j) == 0;
    }
    write_over(buf, bytes, 0, pass);
    int wrote = 0;
    for (int i = 0; i < n; i++)
        if (jobs[i].started) {
            pthread_join(jobs[i].th, NULL);
            wrote += jobs[i].pinned;
        }
    return wrote;
}
