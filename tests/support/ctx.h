/* One library context for a whole test binary, made by cmocka's group
 * setup and freed by the group teardown:
 *   cmocka_run_group_tests(tests, test_ctx_setup, test_ctx_teardown)
 * Every C file of tests/support is linked into every test. */
#ifndef NTPROF_TEST_CTX_H
#define NTPROF_TEST_CTX_H

#include "ntprof/ntprof.h"

extern ntp_ctx *test_ctx;

int test_ctx_setup(void **state);
int test_ctx_teardown(void **state);

#endif
