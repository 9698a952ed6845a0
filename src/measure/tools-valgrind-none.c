/* Built without valgrind's headers: a callgrind child cannot steer
 * collection, so `--tool callgrind` refuses to start (tools.c asks
 * ntp__valgrind_headers()). (The build uses tools-valgrind.c when
 * <valgrind/callgrind.h> is found.) */
#include "counters-impl.h"

bool ntp__valgrind_running(void)
{
    return false;
}

void ntp__callgrind_toggle(void)
{
}

void ntp__callgrind_dump(const char *label)
{
    (void)label;
}

bool ntp__valgrind_headers(void)
{
    return false;
}
