# ONNX support (src/io/onnx-*.c): the reader, the exporter and the .pb input
# loader all use protobuf-c code generated at build time from Debian's
# onnx.proto (libonnx-dev), so the wire format always matches the installed
# ONNX release and nothing generated is committed.
#
# NTP_FUZZ builds fuzz/fuzz_*.c as libFuzzer targets (clang only).
find_program(NTP_PROTOC_C protoc-c)
find_file(NTP_ONNX_PROTO onnx.proto PATHS /usr/include/onnx NO_DEFAULT_PATH)
if(NOT NTP_ONNX_PROTO)
    find_file(NTP_ONNX_PROTO onnx/onnx.proto)
endif()
pkg_check_modules(PROTOBUF_C REQUIRED IMPORTED_TARGET libprotobuf-c)
if(NOT NTP_PROTOC_C OR NOT NTP_ONNX_PROTO)
    message(FATAL_ERROR "ONNX support needs protoc-c (protobuf-c-compiler) and onnx.proto "
                        "(libonnx-dev): run scripts/deps.sh")
endif()

get_filename_component(NTP_ONNX_PROTO_DIR ${NTP_ONNX_PROTO} DIRECTORY)
set(NTP_ONNX_GEN_DIR ${CMAKE_BINARY_DIR}/generated/onnx)
file(MAKE_DIRECTORY ${NTP_ONNX_GEN_DIR})
add_custom_command(
    OUTPUT ${NTP_ONNX_GEN_DIR}/onnx.pb-c.c ${NTP_ONNX_GEN_DIR}/onnx.pb-c.h
    COMMAND ${NTP_PROTOC_C} --proto_path=${NTP_ONNX_PROTO_DIR} --c_out=${NTP_ONNX_GEN_DIR}
            ${NTP_ONNX_PROTO}
    DEPENDS ${NTP_ONNX_PROTO}
    COMMENT "Generating protobuf-c code from ${NTP_ONNX_PROTO}"
    VERBATIM)
list(APPEND NTP_CORE_SOURCES ${NTP_ONNX_GEN_DIR}/onnx.pb-c.c)
list(APPEND NTP_LIBS PkgConfig::PROTOBUF_C)
string(APPEND NTP_PC_REQUIRES " libprotobuf-c")
# The generated header is included as "onnx/onnx.pb-c.h" through the
# generated/ directory that every target already has on its include path.
set_source_files_properties(${NTP_ONNX_GEN_DIR}/onnx.pb-c.c PROPERTIES GENERATED TRUE)

option(NTP_FUZZ "Build the libFuzzer harness fuzz/fuzz_onnx.c (needs clang)" OFF)
if(NTP_FUZZ)
    if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
        message(FATAL_ERROR "NTP_FUZZ needs clang (-fsanitize=fuzzer): configure with "
                            "-DCMAKE_C_COMPILER=clang")
    endif()
    # Everything in this build is instrumented for coverage (a fuzzing build
    # directory is its own), so the fuzzer sees inside the reader; only the
    # harness links libFuzzer's main.
    add_compile_options("$<$<COMPILE_LANGUAGE:C>:-fsanitize=fuzzer-no-link,address,undefined;-fno-omit-frame-pointer>")
    add_link_options(-fsanitize=address,undefined)
    # ... but the micro-kernels that measure the ceilings: a coverage
    # counter incremented in memory every iteration chains the iterations
    # through store forwarding (about 6 cycles), and AVX2's int8 kernel
    # (then 4 chains in C) read 129 GOP/s where 6 chains read 189
    # (test_machine's test_kernels_saturate; cmake/ntp-analysis.cmake
    # compiles it at -O2 for the same reason).
    set_property(SOURCE ${CMAKE_SOURCE_DIR}/src/measure/machine-kernels.c APPEND PROPERTY
                 COMPILE_OPTIONS -fno-sanitize=fuzzer-no-link)
    # One harness per input format (fuzz/fuzz_*.c; docs in SECURITY.md).
    foreach(h onnx markup npy store)
        add_executable(fuzz_${h} ${CMAKE_SOURCE_DIR}/fuzz/fuzz_${h}.c)
        target_include_directories(fuzz_${h} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_BINARY_DIR}/generated)
        target_link_options(fuzz_${h} PRIVATE -fsanitize=fuzzer)
        target_link_libraries(fuzz_${h} PRIVATE ntprof_static)
    endforeach()
endif()
