# The library's layers (docs/architecture.md): one OBJECT library per
# folder of src/, each compiled against an include root that holds only its
# own folder and the folders of the layers below it, so that an upward
# #include "exec/exec-impl.h" from src/graph/ fails to compile; and each
# linked once more as a check-only shared object with -Wl,--no-undefined
# against the layers below it alone, so that an upward call fails to link.
# The installed libntprof.so / libntprof.a are still one library made of
# every layer's objects.
#
# Included by the top-level CMakeLists.txt before the cmake/ntp-*.cmake
# modules, which register their backends with ntp_add_backend().

option(NTP_LAYER_LINK_CHECK
       "Link each layer as a check-only shared object against the layers below it" ON)
# clang does not link its sanitizer runtimes into shared objects, so with
# ASan (the sanitizer and fuzzing builds) every layer has undefined __asan_
# symbols: the include roots still hold the rule there, the gcc builds hold
# the link rule.
if(CMAKE_C_COMPILER_ID MATCHES "Clang" AND (NTP_SANITIZE OR NTP_FUZZ))
    set(NTP_LAYER_LINK_CHECK OFF)
endif()

set(NTP_LAYER_ROOT ${CMAKE_BINARY_DIR}/layers)

# ntp_add_backend(NAME PRIORITY p SOURCES files... [LIBS libs...])
#
# Register the backend in src/backend/<NAME>/: its sources become the layer
# backend/<NAME> (which sees the backend interface and what lies below it,
# never another backend), its libraries join the library's, and its method
# table ntp__backend_<NAME> joins the registry. PRIORITY orders the list
# (highest first: the first is the default) and is the same number as the
# method table's .priority; the reference backend is 100, a backend meant to
# be the default when built is above it, one asked for only by name below.
function(ntp_add_backend name)
    cmake_parse_arguments(B "" "PRIORITY" "SOURCES;LIBS" ${ARGN})
    if(NOT DEFINED B_PRIORITY OR NOT B_SOURCES)
        message(FATAL_ERROR "ntp_add_backend(${name}): PRIORITY and SOURCES are required")
    endif()
    set_property(GLOBAL APPEND PROPERTY NTP_BACKEND_REGISTRY ${name})
    set_property(GLOBAL PROPERTY NTP_BACKEND_${name}_PRIORITY ${B_PRIORITY})
    set_property(GLOBAL PROPERTY NTP_BACKEND_${name}_SOURCES ${B_SOURCES})
    set_property(GLOBAL APPEND PROPERTY NTP_BACKEND_LIBS ${B_LIBS})
endfunction()

# The registered backends, highest priority first, into `out`.
function(ntp_backends_ordered out)
    get_property(names GLOBAL PROPERTY NTP_BACKEND_REGISTRY)
    set(keyed "")
    foreach(b ${names})
        get_property(p GLOBAL PROPERTY NTP_BACKEND_${b}_PRIORITY)
        math(EXPR k "100000 - ${p}")
        string(LENGTH "${k}" len)
        while(len LESS 6)
            string(PREPEND k "0")
            string(LENGTH "${k}" len)
        endwhile()
        list(APPEND keyed "${k}:${b}")
    endforeach()
    list(SORT keyed)
    set(ordered "")
    foreach(kb ${keyed})
        string(REGEX REPLACE "^[0-9]+:" "" b "${kb}")
        list(APPEND ordered ${b})
    endforeach()
    set(${out} ${ordered} PARENT_SCOPE)
endfunction()

# ntp_layer(NAME DIRS dirs... SOURCES files... [BELOW layers...])
#
# One layer: the folders (relative to src/) whose headers it owns, its
# sources, and the layers directly below it (what they see, it sees too).
function(ntp_layer name)
    cmake_parse_arguments(L "" "" "DIRS;SOURCES;BELOW" ${ARGN})
    set(visible_dirs ${L_DIRS})
    set(visible_layers "")
    foreach(b ${L_BELOW})
        get_property(d GLOBAL PROPERTY NTP_LAYER_${b}_VISIBLE_DIRS)
        get_property(v GLOBAL PROPERTY NTP_LAYER_${b}_VISIBLE_LAYERS)
        list(APPEND visible_dirs ${d})
        list(APPEND visible_layers ${b} ${v})
    endforeach()
    list(REMOVE_DUPLICATES visible_dirs)
    list(REMOVE_DUPLICATES visible_layers)
    set_property(GLOBAL PROPERTY NTP_LAYER_${name}_VISIBLE_DIRS ${visible_dirs})
    set_property(GLOBAL PROPERTY NTP_LAYER_${name}_VISIBLE_LAYERS ${visible_layers})
    set_property(GLOBAL APPEND PROPERTY NTP_LAYERS ${name})

    # The include root: a symbolic link per header of every visible folder,
    # under the folder's own name, so "graph/graph-impl.h" resolves and
    # "exec/exec-impl.h" does not. Files, not folders, are linked: src/backend/
    # holds the backend interface and, below it, every backend's own folder,
    # which only that backend (and the registry above all of them) may see.
    string(REPLACE "/" "-" tag "${name}")
    set(root ${NTP_LAYER_ROOT}/${tag})
    file(REMOVE_RECURSE ${root})
    foreach(d ${visible_dirs})
        file(GLOB headers CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${d}/*.h)
        file(MAKE_DIRECTORY ${root}/${d})
        foreach(h ${headers})
            get_filename_component(f ${h} NAME)
            file(CREATE_LINK ${h} ${root}/${d}/${f} SYMBOLIC)
        endforeach()
    endforeach()
    set_property(GLOBAL PROPERTY NTP_LAYER_${name}_ROOT ${root})

    if(NOT L_SOURCES)
        return() # headers only (the backend interface today)
    endif()
    set(t ntp_layer_${tag})
    add_library(${t} OBJECT ${L_SOURCES})
    target_include_directories(${t} PRIVATE ${root} ${CMAKE_SOURCE_DIR}/include
                               ${CMAKE_BINARY_DIR}/generated)
    target_link_libraries(${t} PRIVATE ${NTP_LIBS})
    set_property(GLOBAL APPEND PROPERTY NTP_LAYER_OBJECT_TARGETS ${t})

    if(NTP_LAYER_LINK_CHECK)
        # The layer's objects and those of the layers below it, and nothing
        # else of the library: a call to a name that only a layer above
        # defines is undefined here. (Objects, not the lower check objects:
        # with -fvisibility=hidden a shared object exports only the public
        # API, and the layers call each other's ntp__ functions.)
        set(c ntp_layercheck_${tag})
        set(objs $<TARGET_OBJECTS:${t}>)
        foreach(v ${visible_layers})
            string(REPLACE "/" "-" vt "${v}")
            if(TARGET ntp_layer_${vt})
                list(APPEND objs $<TARGET_OBJECTS:ntp_layer_${vt}>)
            endif()
        endforeach()
        add_library(${c} SHARED ${objs})
        target_link_options(${c} PRIVATE -Wl,--no-undefined)
        target_link_libraries(${c} PRIVATE ${NTP_LIBS})
        set_target_properties(${c} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${NTP_LAYER_ROOT}/check)
    endif()
endfunction()

# The sources of `pool` directly in src/<dir>/ (not in its subfolders).
function(ntp_sources_in out pool dir)
    set(r "")
    foreach(s ${pool})
        get_filename_component(p ${s} DIRECTORY)
        if(p STREQUAL "${CMAKE_SOURCE_DIR}/src/${dir}")
            list(APPEND r ${s})
        endif()
    endforeach()
    set(${out} ${r} PARENT_SCOPE)
endfunction()
