/* Valgrind client requests: callgrind's collection is switched on around
 * each counted row and its costs dumped after it, so every row gets a dump
 * of its own. Outside valgrind the requests are a few no-op instructions.
 * The build uses tools-valgrind-none.c when valgrind's headers are absent. */
#include <valgrind/callgrind.h>
#include <valgrind/valgrind.h>

#include "counters-impl.h"

bool ntp__valgrind_running(void)
{
    return RUNNING_ON_VALGRIND != 0;
}

void ntp__callgrind_toggle(void)
{
    CALLGRIND_TOGGLE_COLLECT;
}

void ntp__callgrind_dump(const char *label)
{
    CALLGRIND_DUMP_STATS_AT(label);
}

bool ntp__valgrind_headers(void)
{
    return true;
}
