/* Reading the float32 .npy files a run saves (`ntprof run --save-outputs`,
 * ntp__exec_save_outputs) and comparing two runs' files, in tests; a file
 * that is not a version-1 little-endian float32 .npy fails the test.
 * Every C file of tests/support is linked into every test. */
#ifndef NTPROF_TEST_NPY_H
#define NTPROF_TEST_NPY_H

#include <stddef.h>

/* The file's values (malloc'd; free them); *n gets their count. */
float *test_read_npy(const char *path, size_t *n);

/* max |a - b| / max |b| over DIR_A/NAME.npy and DIR_B/NAME.npy (b the
 * reference); both must hold the same, non-zero count; NaN where a holds
 * a NaN. */
double test_npy_rel_err(const char *dir_a, const char *dir_b, const char *name);

#endif
