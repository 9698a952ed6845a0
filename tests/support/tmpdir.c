/* The test binaries' temporary directory (tmpdir.h). */
#include <stdio.h>
#include <stdlib.h>

#include "tmpdir.h"

char test_tmpdir[256];

int test_tmpdir_setup(void **state)
{
    (void)state;
    snprintf(test_tmpdir, sizeof test_tmpdir, "/tmp/ntp-test-XXXXXX");
    return mkdtemp(test_tmpdir) ? 0 : -1;
}

int test_tmpdir_teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", test_tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}
