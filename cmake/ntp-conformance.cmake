# The ONNX backend test suite on every backend (tests/test_onnx_conformance.c,
# docs/onnx.md): test_onnx_conformance runs it on the reference backend, and
# this module adds test_onnx_conformance_<backend> for every other backend
# built, running the same binary with the backend's name as its argument, so
# that CTest runs them in parallel and the sanitizer build runs each.
#
# The top-level CMakeLists.txt includes the cmake/ntp-*.cmake modules in
# alphabetical order before the backends after this one (cuda, onednn,
# xnnpack) have added themselves to NTP_BACKENDS, and before tests/ defines
# the binary; so the registration is deferred to the end of the top-level
# directory, when both are known.
function(ntp_register_conformance)
    if(NOT NTP_BUILD_TESTS OR NOT TARGET test_onnx_conformance)
        return()
    endif()
    foreach(b ${NTP_BACKENDS})
        if(b STREQUAL "ref")
            continue()
        endif()
        add_test(NAME test_onnx_conformance_${b} COMMAND $<TARGET_FILE:test_onnx_conformance> ${b})
        # Exit status 77: the backend cannot run on this machine (cuda
        # without a device), a skip rather than a pass.
        set_tests_properties(test_onnx_conformance_${b} PROPERTIES
            ENVIRONMENT "CMOCKA_MESSAGE_OUTPUT=stdout" TIMEOUT 600 SKIP_RETURN_CODE 77)
    endforeach()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL ntp_register_conformance)
