#include <time.h>

#include "busy.h"
#include "measure/measure-impl.h"

double test_others_busy(double *load)
{
    ntp__contention_probe p;
    ntp__contention_begin(&p);
    struct timespec nap = {0, 500000000};
    nanosleep(&nap, NULL);
    ntp_contention c;
    ntp__contention_end(&p, &c);
    if (load)
        *load = c.load_average;
    return c.measured ? c.other + c.steal : -1;
}
