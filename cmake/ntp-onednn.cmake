# The oneDNN backend (src/backend/onednn/), built when oneDNN 2.x is found.
#
# Debian's libdnnl-dev ships a CMake package (dnnl-config.cmake) but no
# pkg-config file; its config also looks for OpenCL, which this backend does
# not need, so the header and library are located directly. oneDNN threads
# with OpenMP: the backend sets the thread count through the OpenMP runtime
# that libdnnl itself loads (looked up with dlsym, see probe.c), so nothing
# here links an OpenMP runtime of its own.
find_path(NTP_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.h)
find_library(NTP_DNNL_LIBRARY NAMES dnnl)
if(NTP_DNNL_INCLUDE_DIR AND NTP_DNNL_LIBRARY)
    file(STRINGS ${NTP_DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h NTP_DNNL_MAJOR_LINE
         REGEX "#define DNNL_VERSION_MAJOR")
    string(REGEX MATCH "[0-9]+" NTP_DNNL_MAJOR "${NTP_DNNL_MAJOR_LINE}")
endif()
if(NTP_DNNL_INCLUDE_DIR AND NTP_DNNL_LIBRARY AND NTP_DNNL_MAJOR STREQUAL "2")
    file(GLOB NTP_ONEDNN_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/backend/onednn/*.c)
    # The default backend wherever it is built.
    ntp_add_backend(onednn PRIORITY 400 SOURCES ${NTP_ONEDNN_SOURCES}
                    LIBS ${NTP_DNNL_LIBRARY} ${CMAKE_DL_LIBS})
    # Tests and benchmarks that use oneDNN directly compile only with it.
    add_compile_definitions(NTP_HAVE_ONEDNN=1)
    message(STATUS "oneDNN backend: ${NTP_DNNL_LIBRARY} (oneDNN ${NTP_DNNL_MAJOR}.x)")
else()
    message(STATUS "oneDNN backend: not built (oneDNN 2.x headers or libdnnl not found)")
endif()
