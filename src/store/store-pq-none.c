/* The PostgreSQL driver where libpq was not found at build time: a
 * postgresql:// URL is refused with this reason (cmake/ntp-postgres.cmake). */
#include "store-impl.h"

const ntp__store_driver *const ntp__store_pq = NULL;
const char ntp__store_pq_why[] =
    "this ntprof was built without PostgreSQL support (libpq was not found; "
    "install libpq-dev and rebuild)";
