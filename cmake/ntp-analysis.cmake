# Analysis (issue 7): machine description and ceilings, the history
# database, compare, sweep and the HTML report.

# hwloc describes the machine (packages, cores, caches, NUMA nodes) for
# `ntprof machine` and sizes the bandwidth triad to each cache level.
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc)
list(APPEND NTP_LIBS PkgConfig::HWLOC)
string(APPEND NTP_PC_REQUIRES " hwloc")

# The FMA and triad micro-kernels measure the hardware, not the compiler:
# at -O0 (Debug) their accumulators would live in memory and the loops would
# time store forwarding. They are compiled at -O2 in every build type.
set_source_files_properties(${CMAKE_SOURCE_DIR}/src/measure/machine-kernels.c
                            PROPERTIES COMPILE_OPTIONS "-O2")

# Every `ntprof run` records itself in the history under $XDG_DATA_HOME. No
# test may write to the real home, so ctest points XDG_DATA_HOME into the
# build tree for every test (TEST_INCLUDE_FILES is read by ctest itself
# before it starts any test, and the tests inherit its environment).
file(WRITE ${CMAKE_BINARY_DIR}/ntp-test-env.cmake
     "set(ENV{XDG_DATA_HOME} \"${CMAKE_BINARY_DIR}/test-data-home\")\n")
set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${CMAKE_BINARY_DIR}/ntp-test-env.cmake)
