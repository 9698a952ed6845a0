/* ntprof: the mark on every public function.
 *
 * The library is compiled with -fvisibility=hidden (CMakeLists.txt), so a
 * function is exported from libntprof.so only when its declaration in
 * include/ntprof/ carries NTP_API; everything else, the internal ntp__
 * functions included, stays inside the library (SQLite's SQLITE_API,
 * libuv's UV_EXTERN). The static library is not affected: hidden symbols
 * still link from libntprof.a, which is how the tests reach internals.
 * tests/test_exports.sh checks that the two lists agree. */
#ifndef NTPROF_API_H
#define NTPROF_API_H

#if defined(__GNUC__) || defined(__clang__)
#define NTP_API __attribute__((visibility("default")))
#else
#define NTP_API
#endif

#endif
