/* How busy the machine is, for the tests whose figures only hold on a
 * quiet one (they skip, 77, when it is busy). */
#ifndef NTPROF_TEST_BUSY_H
#define NTPROF_TEST_BUSY_H

/* The share of the CPUs other processes and the hypervisor take over half
 * a second while this process sleeps (/proc/stat, as a run's contention
 * reads it), or -1 when it cannot be read; *load (when not NULL) the load
 * average at the start. */
double test_others_busy(double *load);

#endif
