# SPDX-License-Identifier: Apache-2.0
# How the libraries agentjail uses are linked, in two sets:
#   aj_deps_shared  the system's shared libraries: libagentjail.so, the tests, examples
#   aj_deps_static  their static archives: the agentjail command (AGENTJAIL_STATIC_CLI)
# fmt and toml++ are header-only everywhere (Debian ships no libfmt.a), so the core
# itself names no library to link; each final target picks one set.

# toml++ in its header-only form (the imported target forces the shared library).
get_target_property(AJ_TOML_INCLUDES tomlplusplus::tomlplusplus INTERFACE_INCLUDE_DIRECTORIES)
add_library(aj_toml INTERFACE)
target_include_directories(aj_toml SYSTEM INTERFACE ${AJ_TOML_INCLUDES})
target_compile_definitions(aj_toml INTERFACE TOML_HEADER_ONLY=1)

add_library(aj_deps_shared INTERFACE)
target_link_libraries(aj_deps_shared INTERFACE PkgConfig::SECCOMP PkgConfig::LIBCAP
  OpenSSL::SSL OpenSSL::Crypto ${CMAKE_DL_LIBS} Threads::Threads)

if(AGENTJAIL_STATIC_CLI)
  # Each archive from its Debian -dev package; a missing one is a configure error that
  # names the package (scripts/setup.sh installs them), never a silent dynamic link.
  set(AJ_STATIC_ARCHIVES)
  foreach(pair IN ITEMS "seccomp:libseccomp-dev" "cap:libcap-dev" "ssl:libssl-dev"
                        "crypto:libssl-dev" "boost_program_options:libboost-program-options-dev")
    string(REPLACE ":" ";" pair "${pair}")
    list(GET pair 0 lib)
    list(GET pair 1 pkg)
    find_library(AJ_STATIC_${lib} NAMES lib${lib}.a)
    if(NOT AJ_STATIC_${lib})
      message(FATAL_ERROR "lib${lib}.a not found: install ${pkg}, or configure with "
                          "-DAGENTJAIL_STATIC_CLI=OFF to link the command dynamically")
    endif()
    list(APPEND AJ_STATIC_ARCHIVES ${AJ_STATIC_${lib}})
  endforeach()
  add_library(aj_deps_static INTERFACE)
  target_link_libraries(aj_deps_static INTERFACE ${AJ_STATIC_ARCHIVES} ${CMAKE_DL_LIBS}
    Threads::Threads)
  # libstdc++ and libgcc too; unused sections dropped.
  target_link_options(aj_deps_static INTERFACE -static-libstdc++ -static-libgcc
    -Wl,--gc-sections)
else()
  add_library(aj_deps_static INTERFACE)
  target_link_libraries(aj_deps_static INTERFACE aj_deps_shared Boost::program_options)
endif()
