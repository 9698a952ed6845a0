# Darknet (Debian: darknet, which ships libdarknet.so and darknet.h under
# /usr/lib/darknet, outside the default search paths). The .cfg reader
# (src/io/darknet-cfg.c) needs none of it; libdarknet is what
# test_darknet_cfg checks the reader against (docs/darknet.md).
find_library(NTP_DARKNET_LIBRARY darknet PATHS /usr/lib/darknet)
find_path(NTP_DARKNET_INCLUDE_DIR darknet.h PATHS /usr/lib/darknet/include)
if(NTP_DARKNET_LIBRARY AND NTP_DARKNET_INCLUDE_DIR)
    get_filename_component(NTP_DARKNET_LIBDIR ${NTP_DARKNET_LIBRARY} DIRECTORY)
    set(NTP_DARKNET_FOUND TRUE)
    message(STATUS "Darknet: ${NTP_DARKNET_LIBRARY} (test_darknet_cfg checks against it)")
else()
    set(NTP_DARKNET_FOUND FALSE)
    message(STATUS "Darknet: not found (package darknet): test_darknet_cfg uses its recorded table only")
endif()

# The darknet backend (src/backend/darknet/): Darknet's layers run through
# their own forward functions. libdarknet is opened at run time (dlopen),
# since it links OpenCV that no other run should load; the header gives the
# layouts. Asked for by name only (priority below ref).
if(NTP_DARKNET_FOUND)
    include_directories(SYSTEM ${NTP_DARKNET_INCLUDE_DIR})
    file(GLOB NTP_DARKNET_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/backend/darknet/*.c)
    set_source_files_properties(${NTP_DARKNET_SOURCES} PROPERTIES COMPILE_DEFINITIONS
                                NTP_DARKNET_SONAME="${NTP_DARKNET_LIBRARY}")
    ntp_add_backend(darknet PRIORITY 60 SOURCES ${NTP_DARKNET_SOURCES} LIBS ${CMAKE_DL_LIBS})
    add_compile_definitions(NTP_HAVE_DARKNET_BACKEND=1)
    message(STATUS "Darknet backend: ${NTP_DARKNET_LIBRARY} (opened at run time)")
else()
    message(STATUS "Darknet backend: not built (libdarknet.so and darknet.h not found: package darknet)")
endif()

# The ONNX conformance run on this backend (cmake/ntp-conformance.cmake, added
# when configuring ends) under LeakSanitizer: libdarknet's own leaks ignored.
function(ntp_darknet_conformance_env)
    if(TEST test_onnx_conformance_darknet)
        set_property(TEST test_onnx_conformance_darknet APPEND PROPERTY ENVIRONMENT
                     "LSAN_OPTIONS=suppressions=${CMAKE_SOURCE_DIR}/tests/data/darknet/lsan.supp")
    endif()
endfunction()
if(NTP_DARKNET_FOUND)
    cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL ntp_darknet_conformance_env)
endif()
