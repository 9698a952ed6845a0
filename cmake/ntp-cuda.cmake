# The CUDA backend (src/backend/cuda/) on cuDNN 9 and cuBLAS, and the GPU
# parts of `ntprof machine` and of the tools (docs/gpu.md).
#
# Built when the CUDA toolkit (CUDAToolkit package: headers, libcudart,
# libcublas, nvcc) and cuDNN (cudnn.h, libcudnn) are found at configure time
# and NTP_WITH_CUDA is on (its default when they are). A machine without a
# GPU or driver still builds and links everything: libcudart loads the
# driver only when first called, and the backend then refuses with one line
# (docs/gpu.md). Without the toolkit nothing here is compiled and every
# other backend and test is unaffected.
#
# The backend has the lowest priority: it is never the default, a GPU run
# is asked for with --backend cuda (or backend= / --place per layer).

set(_ntp_cuda_dir ${CMAKE_SOURCE_DIR}/src/backend/cuda)
set(_ntp_machine_dir ${CMAKE_SOURCE_DIR}/src/machine)

# find_package(CUDAToolkit) searches PATH for nvcc and a few standard
# places; Debian's and NVIDIA's packages put the toolkit in /usr/local/cuda,
# which is not on PATH in a plain shell, so point at it when it is there.
if(NOT DEFINED CUDAToolkit_ROOT AND NOT DEFINED ENV{CUDAToolkit_ROOT} AND
   EXISTS /usr/local/cuda/bin/nvcc)
    set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(CUDAToolkit QUIET)

set(NTP_CUDA_FOUND FALSE)
if(CUDAToolkit_FOUND AND TARGET CUDA::cudart AND TARGET CUDA::cublas)
    find_path(NTP_CUDNN_INCLUDE_DIR cudnn.h
              HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_ROOT}/include $ENV{CUDNN_PATH}/include)
    find_library(NTP_CUDNN_LIBRARY NAMES cudnn
                 HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_ROOT}/lib64 $ENV{CUDNN_PATH}/lib)
    if(NTP_CUDNN_INCLUDE_DIR AND NTP_CUDNN_LIBRARY)
        file(STRINGS ${NTP_CUDNN_INCLUDE_DIR}/cudnn_version.h NTP_CUDNN_MAJOR_LINE
             REGEX "#define CUDNN_MAJOR ")
        string(REGEX MATCH "[0-9]+" NTP_CUDNN_MAJOR "${NTP_CUDNN_MAJOR_LINE}")
        # The backend uses cuDNN 8/9's v8 RNN API (cudnnRNNForward) and the
        # legacy convolution, pooling and tensor calls, which cuDNN 9 keeps.
        if(NTP_CUDNN_MAJOR GREATER_EQUAL 9)
            set(NTP_CUDA_FOUND TRUE)
        endif()
    endif()
endif()

option(NTP_WITH_CUDA "Build the CUDA backend (cuDNN + cuBLAS) when the toolkit is found"
       ${NTP_CUDA_FOUND})

# nvcc for the few kernels cuDNN and cuBLAS lack (src/backend/cuda/*.cu).
set(NTP_CUDA_OK FALSE)
if(NTP_WITH_CUDA AND NTP_CUDA_FOUND)
    if(NOT DEFINED CMAKE_CUDA_COMPILER AND CUDAToolkit_NVCC_EXECUTABLE)
        set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
    endif()
    include(CheckLanguage)
    check_language(CUDA)
    if(CMAKE_CUDA_COMPILER)
        set(NTP_CUDA_OK TRUE)
    else()
        message(STATUS "CUDA backend: not built (the toolkit was found but nvcc does not work)")
    endif()
endif()

if(NTP_CUDA_OK)
    # Hopper (H100, H200) natively, plus its PTX so newer GPUs JIT-compile
    # the kernels; set CMAKE_CUDA_ARCHITECTURES to build for others.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
        set(CMAKE_CUDA_ARCHITECTURES 90-real 90-virtual)
    endif()
    # The library links the shared runtime (CUDA::cudart below); objects
    # compiled by nvcc must not pull in the static one as well.
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    # The top-level add_compile_options() are gcc/clang flags for C; nvcc
    # rejects -Wall and the C-only warnings. Keep every option collected so
    # far for C sources only (their meaning for C is unchanged) before the
    # CUDA language is enabled; the .cu files get nvcc's own flags below.
    get_property(_ntp_opts DIRECTORY PROPERTY COMPILE_OPTIONS)
    set(_ntp_c_opts "")
    foreach(_o ${_ntp_opts})
        if(_o MATCHES "^\\$<")
            list(APPEND _ntp_c_opts "${_o}")
        else()
            list(APPEND _ntp_c_opts "$<$<COMPILE_LANGUAGE:C>:${_o}>")
        endif()
    endforeach()
    set_property(DIRECTORY PROPERTY COMPILE_OPTIONS "${_ntp_c_opts}")
    enable_language(CUDA)

    file(GLOB NTP_CUDA_C_SOURCES CONFIGURE_DEPENDS ${_ntp_cuda_dir}/*.c)
    file(GLOB NTP_CUDA_CU_SOURCES CONFIGURE_DEPENDS ${_ntp_cuda_dir}/*.cu)
    # Warnings are errors for the kernels too, in nvcc's terms: every nvcc
    # warning, and the host compiler's -Wall -Wextra on the host side.
    set(_ntp_nvcc_opts --expt-relaxed-constexpr -Xcompiler=-Wall,-Wextra)
    if(NTP_WERROR)
        list(APPEND _ntp_nvcc_opts -Werror=all-warnings -Xcompiler=-Werror)
    endif()
    set_source_files_properties(${NTP_CUDA_CU_SOURCES} PROPERTIES COMPILE_OPTIONS "${_ntp_nvcc_opts}")
    # cuDNN's and the toolkit's headers are system headers: their style is
    # not ours to warn about.
    set_source_files_properties(${NTP_CUDA_C_SOURCES} PROPERTIES
        COMPILE_OPTIONS "-isystem;${NTP_CUDNN_INCLUDE_DIR};-isystem;${CUDAToolkit_INCLUDE_DIRS}")
    # cuBLAS is opened with dlopen when the backend is first used
    # (src/backend/cuda/cublas-dl.h): linked, it and cuBLASLt would cost
    # every ntprof process 0.8 s and 210 MB at start-up.
    # Never the default backend: below every CPU backend, ref included
    # (a GPU run is asked for by name).
    ntp_add_backend(cuda PRIORITY 50 SOURCES ${NTP_CUDA_C_SOURCES} ${NTP_CUDA_CU_SOURCES}
                    LIBS CUDA::cudart ${NTP_CUDNN_LIBRARY} ${CMAKE_DL_LIBS})
    # The GPU parts of `ntprof machine` and of --tool ncu/nsys: the real
    # files, not their "-none" twins.
    list(REMOVE_ITEM NTP_CORE_SOURCES ${_ntp_machine_dir}/machine-cuda-none.c)
    set_source_files_properties(${_ntp_machine_dir}/machine-cuda.c PROPERTIES
        COMPILE_OPTIONS "-isystem;${CUDAToolkit_INCLUDE_DIRS}")
    add_compile_definitions(NTP_HAVE_CUDA=1)
    message(STATUS "CUDA backend: CUDA ${CUDAToolkit_VERSION} (${CUDAToolkit_LIBRARY_DIR}), "
                   "cuDNN ${NTP_CUDNN_MAJOR} (${NTP_CUDNN_LIBRARY}), "
                   "nvcc ${CMAKE_CUDA_COMPILER_VERSION} for ${CMAKE_CUDA_ARCHITECTURES}")
else()
    list(REMOVE_ITEM NTP_CORE_SOURCES ${_ntp_machine_dir}/machine-cuda.c)
    if(NOT NTP_WITH_CUDA AND NTP_CUDA_FOUND)
        message(STATUS "CUDA backend: not built (NTP_WITH_CUDA=OFF)")
    elseif(NOT NTP_CUDA_FOUND)
        message(STATUS "CUDA backend: not built (CUDA toolkit with cuBLAS and cuDNN 9 not found; "
                       "set CUDAToolkit_ROOT)")
    endif()
endif()
