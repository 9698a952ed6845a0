# The XNNPACK backend (src/backend/xnnpack/), built when XNNPACK and
# pthreadpool are found (Debian: libxnnpack-dev, libpthreadpool-dev).
#
# XNNPACK's operator API changed often before it had releases; this backend
# is written against the Debian snapshot 0.0~git20220216, whose header has
# xnn_create_convolution2d_nhwc_f32 with separate create and setup calls.
# Neither library ships a pkg-config file, so header and libraries are
# located directly, and the header is checked for the calls the backend
# uses so that a different snapshot is skipped with a message instead of
# breaking the build.
find_path(NTP_XNNPACK_INCLUDE_DIR xnnpack.h)
find_path(NTP_PTHREADPOOL_INCLUDE_DIR pthreadpool.h)
find_library(NTP_XNNPACK_LIBRARY NAMES XNNPACK xnnpack)
find_library(NTP_PTHREADPOOL_LIBRARY NAMES pthreadpool)
set(NTP_XNNPACK_OK FALSE)
if(NTP_XNNPACK_INCLUDE_DIR AND NTP_PTHREADPOOL_INCLUDE_DIR AND NTP_XNNPACK_LIBRARY AND
   NTP_PTHREADPOOL_LIBRARY)
    file(STRINGS ${NTP_XNNPACK_INCLUDE_DIR}/xnnpack.h NTP_XNNPACK_API
         REGEX "xnn_setup_convolution2d_nhwc_f32|xnn_setup_global_average_pooling_ncw_f32|xnn_create_constant_pad_nd_x16")
    list(LENGTH NTP_XNNPACK_API NTP_XNNPACK_API_N)
    if(NTP_XNNPACK_API_N EQUAL 3)
        set(NTP_XNNPACK_OK TRUE)
    endif()
endif()
if(NTP_XNNPACK_OK)
    file(GLOB NTP_XNNPACK_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/backend/xnnpack/*.c)
    # After oneDNN, before the BLAS backend and the reference backend.
    ntp_add_backend(xnnpack PRIORITY 300 SOURCES ${NTP_XNNPACK_SOURCES}
                    LIBS ${NTP_XNNPACK_LIBRARY} ${NTP_PTHREADPOOL_LIBRARY})
    # Tests of this backend's own behaviour compile only where it is built.
    add_compile_definitions(NTP_HAVE_XNNPACK=1)
    message(STATUS "XNNPACK backend: ${NTP_XNNPACK_LIBRARY}")
else()
    message(STATUS "XNNPACK backend: not built (XNNPACK 2022 operator API or pthreadpool not found)")
endif()
