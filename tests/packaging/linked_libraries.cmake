# SPDX-License-Identifier: Apache-2.0
# The agentjail command links only libc dynamically (AGENTJAIL_STATIC_CLI): its
# DT_NEEDED entries, read with readelf, may name libc, libm and the dynamic loader
# only. A library that slips back into the link line (a target linked without
# aj_deps_static) fails here instead of costing every start a millisecond.
#   -DBIN=<the command> -DREADELF=<readelf>
execute_process(COMMAND ${READELF} -d ${BIN} OUTPUT_VARIABLE dyn RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf -d ${BIN} failed (${rc})")
endif()
string(REGEX MATCHALL "Shared library: \\[[^]]+\\]" needed "${dyn}")
if(NOT needed)
  message(FATAL_ERROR "${BIN}: no DT_NEEDED entry found; is it a dynamic executable?")
endif()
set(bad)
foreach(entry IN LISTS needed)
  string(REGEX REPLACE "Shared library: \\[([^]]+)\\]" "\\1" lib "${entry}")
  message(STATUS "needs ${lib}")
  if(NOT lib MATCHES "^(libc|libm|ld-linux-x86-64|ld-linux-aarch64)\\.so\\.[0-9]+$")
    list(APPEND bad ${lib})
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "${BIN} links more than libc dynamically: ${bad}")
endif()
