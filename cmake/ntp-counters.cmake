# Counters and external profilers (docs/counters.md).
#
# libpfm4, PAPI, valgrind's client-request headers and NVTX are optional. For
# each, src/measure/ holds a pair of files: the real one and a "-none" one
# that reports the feature n/a with the reason. The glob in the top-level
# CMakeLists.txt picks up both; this module removes the one that does not
# apply, so there are no #ifdef forests (libuv's platform-file pattern).

set(_ntp_m ${CMAKE_SOURCE_DIR}/src/measure)

# Each can be turned off (packagers; and to build the -none files).
option(NTP_WITH_PFM "Count events by libpfm4 name when libpfm4 is found" ON)
option(NTP_WITH_PAPI "Offer --tool papi when PAPI is found" ON)
option(NTP_WITH_VALGRIND "Steer callgrind when valgrind's headers are found" ON)
option(NTP_WITH_NVTX "Emit NVTX ranges when the CUDA toolkit's nvtx3 headers are found" ON)

# Keep src/measure/<real> when `found`, else src/measure/<none>.
macro(ntp_counters_pick found real none)
    if(${found})
        list(REMOVE_ITEM NTP_CORE_SOURCES ${_ntp_m}/${none})
    else()
        list(REMOVE_ITEM NTP_CORE_SOURCES ${_ntp_m}/${real})
    endif()
endmacro()

# libpfm4 has no pkg-config file: the library and its perf_event header.
find_library(NTP_PFM_LIBRARY pfm)
find_path(NTP_PFM_INCLUDE_DIR perfmon/pfmlib_perf_event.h)
if(NTP_WITH_PFM AND NTP_PFM_LIBRARY AND NTP_PFM_INCLUDE_DIR)
    set(NTP_HAVE_PFM TRUE)
    list(APPEND NTP_LIBS ${NTP_PFM_LIBRARY})
else()
    set(NTP_HAVE_PFM FALSE)
endif()
ntp_counters_pick(NTP_HAVE_PFM pfm.c pfm-none.c)

if(NTP_WITH_PAPI)
    pkg_check_modules(PAPI IMPORTED_TARGET papi)
endif()
if(NTP_WITH_PAPI AND PAPI_FOUND)
    set(NTP_HAVE_PAPI TRUE)
    list(APPEND NTP_LIBS PkgConfig::PAPI)
    string(APPEND NTP_PC_REQUIRES " papi")
else()
    set(NTP_HAVE_PAPI FALSE)
endif()
ntp_counters_pick(NTP_HAVE_PAPI papi.c papi-none.c)

# Header-only: valgrind's client requests are inline assembly.
find_path(NTP_VALGRIND_INCLUDE_DIR valgrind/callgrind.h)
if(NTP_WITH_VALGRIND AND NTP_VALGRIND_INCLUDE_DIR)
    set(NTP_HAVE_VALGRIND_H TRUE)
else()
    set(NTP_HAVE_VALGRIND_H FALSE)
endif()
ntp_counters_pick(NTP_HAVE_VALGRIND_H tools-valgrind.c tools-valgrind-none.c)

# NVTX 3 is header-only in CUDA 12 and later (it loads an Nsight injection
# library with dlopen when one is attached). Its headers are included as
# system headers so their style does not trip -Werror.
find_path(NTP_NVTX_INCLUDE_DIR nvtx3/nvToolsExt.h
          HINTS ${CUDAToolkit_ROOT}/include $ENV{CUDA_HOME}/include $ENV{CUDA_PATH}/include
                /usr/local/cuda/include)
if(NTP_WITH_NVTX AND NTP_NVTX_INCLUDE_DIR)
    set(NTP_HAVE_NVTX TRUE)
    set_source_files_properties(${_ntp_m}/tools-nvtx.c PROPERTIES
                                COMPILE_OPTIONS "-isystem;${NTP_NVTX_INCLUDE_DIR}")
    list(APPEND NTP_LIBS ${CMAKE_DL_LIBS})
else()
    set(NTP_HAVE_NVTX FALSE)
endif()
ntp_counters_pick(NTP_HAVE_NVTX tools-nvtx.c tools-nvtx-none.c)

message(STATUS "ntprof counters: libpfm4 ${NTP_HAVE_PFM}, PAPI ${NTP_HAVE_PAPI}, "
               "valgrind headers ${NTP_HAVE_VALGRIND_H}, NVTX ${NTP_HAVE_NVTX}")
