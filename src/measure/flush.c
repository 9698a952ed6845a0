/* Writing over the caches between measured passes (ntp_run_opts.flush_bytes). */
#include "measure/measure-impl.h"

void ntp__flush_caches(unsigned char *buf, int64_t bytes, int pass)
{
    /* One plain store per line: each misses, allocates its line (read for
     * ownership) and evicts another. Not memset: glibc's (2.36, Debian 12)
     * writes a buffer this large with `rep stosb`, whose stores a Zen 4
     * keeps out of the caches, so they evict nothing: after a 64 MiB memset
     * a 9.6 MB buffer read back at 70 GB/s, as warm (78), and after these
     * stores at 27, as from memory (bench/bench_flush, docs/predict.md). A
     * stride of 64 bytes touches every line of 64 bytes or more. */
    volatile unsigned char *p = buf;
    for (int64_t i = 0; buf && i < bytes; i += NTP__FLUSH_STRIDE)
        p[i] = (unsigned char)pass;
}
