# The BLAS backend (src/backend/blas/), built when OpenBLAS is found through
# pkg-config (Debian: libopenblas-dev, whose openblas.pc points at the
# pthreads or OpenMP build chosen by update-alternatives; the pthreads one
# is installed here). The backend uses CBLAS plus OpenBLAS's own
# openblas_set_num_threads, so another CBLAS (netlib, BLIS) is not enough.
pkg_check_modules(NTP_OPENBLAS QUIET IMPORTED_TARGET openblas)
if(NTP_OPENBLAS_FOUND)
    file(GLOB NTP_BLAS_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/backend/blas/*.c)
    # After oneDNN and XNNPACK, before the reference backend.
    ntp_add_backend(blas PRIORITY 200 SOURCES ${NTP_BLAS_SOURCES} LIBS PkgConfig::NTP_OPENBLAS)
    string(APPEND NTP_PC_REQUIRES " openblas")
    # Tests of this backend's own behaviour compile only where it is built.
    add_compile_definitions(NTP_HAVE_BLAS=1)
    message(STATUS "BLAS backend: OpenBLAS ${NTP_OPENBLAS_VERSION} (${NTP_OPENBLAS_LIBDIR})")
else()
    message(STATUS "BLAS backend: not built (OpenBLAS not found by pkg-config)")
endif()
