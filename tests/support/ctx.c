/* The shared test context (ctx.h). */
#include "ctx.h"

ntp_ctx *test_ctx;

int test_ctx_setup(void **state)
{
    (void)state;
    test_ctx = ntp_ctx_init();
    return test_ctx ? 0 : -1;
}

int test_ctx_teardown(void **state)
{
    (void)state;
    ntp_ctx_free(test_ctx);
    test_ctx = NULL;
    return 0;
}
