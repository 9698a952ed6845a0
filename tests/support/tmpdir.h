/* A temporary directory for one test binary, made by cmocka's group setup
 * and removed with everything in it by the group teardown:
 *   cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown)
 * Every C file of tests/support is linked into every test. */
#ifndef NTPROF_TEST_TMPDIR_H
#define NTPROF_TEST_TMPDIR_H

extern char test_tmpdir[256];

int test_tmpdir_setup(void **state);
int test_tmpdir_teardown(void **state);

#endif
