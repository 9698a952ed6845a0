# The torch backend (src/backend/torch/): layers as the ATen operators of
# PyTorch's modules, on libtorch (Debian's libtorch-dev 1.13).
#
# libtorch is C++ and heavy: linked, its 280 shared libraries would cost
# every ntprof process seconds at start-up. So its one C++ file, torch.cpp,
# becomes a module of its own, libntprof-torch.so, linked to libtorch and
# opened with dlopen when a run first asks for the backend; libntprof
# itself holds only the C side (backend.c) and links nothing of libtorch.
# The headers are found directly (Debian's TorchConfig.cmake pulls in
# Caffe2's CUDA and protobuf probes, none of which the module needs).
#
# Never the default backend: a framework is asked for by name.
option(NTP_WITH_TORCH "Build the torch backend when libtorch is found" ON)
find_path(NTP_TORCH_INCLUDE_DIR torch/csrc/jit/api/module.h)
find_library(NTP_TORCH_CPU_LIBRARY NAMES torch_cpu)
find_library(NTP_C10_LIBRARY NAMES c10)
set(NTP_TORCH_OK FALSE)
if(NOT NTP_WITH_TORCH)
    message(STATUS "torch backend: not built (NTP_WITH_TORCH=OFF)")
elseif(NTP_TORCH_INCLUDE_DIR AND NTP_TORCH_CPU_LIBRARY AND NTP_C10_LIBRARY AND
   EXISTS ${NTP_TORCH_INCLUDE_DIR}/torch/csrc/api/include/torch/version.h)
    file(STRINGS ${NTP_TORCH_INCLUDE_DIR}/torch/csrc/api/include/torch/version.h
         NTP_TORCH_MAJOR_LINE REGEX "#define TORCH_VERSION_MAJOR ")
    string(REGEX MATCH "[0-9]+" NTP_TORCH_MAJOR "${NTP_TORCH_MAJOR_LINE}")
    include(CheckLanguage)
    check_language(CXX)
    if(NOT NTP_TORCH_MAJOR STREQUAL "1")
        message(STATUS "torch backend: not built (libtorch ${NTP_TORCH_MAJOR}.x found, 1.x needed)")
    elseif(NOT CMAKE_CXX_COMPILER)
        message(STATUS "torch backend: not built (no C++ compiler for libtorch's headers)")
    else()
        set(NTP_TORCH_OK TRUE)
    endif()
else()
    message(STATUS "torch backend: not built (libtorch headers or libtorch_cpu not found; "
                   "Debian: libtorch-dev)")
endif()

if(NTP_TORCH_OK)
    enable_language(CXX)
    set(_ntp_torch_dir ${CMAKE_SOURCE_DIR}/src/backend/torch)
    add_library(ntprof-torch MODULE ${_ntp_torch_dir}/torch.cpp)
    set_target_properties(ntprof-torch PROPERTIES
        CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
        CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON
        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
    # libtorch's headers are system headers: their warnings are not ours.
    # Outside /usr/include they are named with -isystem; there they already are.
    if(NOT NTP_TORCH_INCLUDE_DIR STREQUAL "/usr/include")
        target_include_directories(ntprof-torch SYSTEM PRIVATE ${NTP_TORCH_INCLUDE_DIR})
    endif()
    target_compile_options(ntprof-torch PRIVATE -Wall -Wextra $<$<BOOL:${NTP_WERROR}>:-Werror>)
    target_link_libraries(ntprof-torch PRIVATE ${NTP_TORCH_CPU_LIBRARY} ${NTP_C10_LIBRARY})
    install(TARGETS ntprof-torch LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/ntprof)

    set(NTP_TORCH_C_SOURCES ${_ntp_torch_dir}/backend.c ${_ntp_torch_dir}/script.c)
    set_source_files_properties(${NTP_TORCH_C_SOURCES} PROPERTIES COMPILE_DEFINITIONS
        "NTP_TORCH_MODULE_BUILD=\"${CMAKE_BINARY_DIR}/libntprof-torch.so\";NTP_TORCH_MODULE_INSTALL=\"${CMAKE_INSTALL_FULL_LIBDIR}/ntprof/libntprof-torch.so\"")
    ntp_add_backend(torch PRIORITY 70 SOURCES ${NTP_TORCH_C_SOURCES} LIBS ${CMAKE_DL_LIBS})
    add_compile_definitions(NTP_HAVE_TORCH=1)
    message(STATUS "torch backend: libtorch ${NTP_TORCH_MAJOR}.x (${NTP_TORCH_CPU_LIBRARY}), "
                   "as the module libntprof-torch.so")
endif()
