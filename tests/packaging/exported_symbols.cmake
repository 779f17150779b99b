# SPDX-License-Identifier: Apache-2.0
# The shared library exports the C API alone (lib/agentjail.map): every defined
# dynamic symbol is aj_* (or the version node itself); a C++ symbol (_Z...) or any
# other name fails, with the list. And exactly the C API: the aj_* symbols are the
# functions agentjail.h declares with AJ_API, one for one, so a function added to the
# header and not defined (or defined and not declared) fails too.
# Run with cmake -DLIB=... -DNM=... -DHEADER=.../agentjail.h -P.
execute_process(COMMAND "${NM}" -D --defined-only "${LIB}"
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm -D ${LIB} failed: ${rc}")
endif()
string(REPLACE "\n" ";" lines "${out}")
set(bad "")
set(count 0)
set(exported "")
foreach(line IN LISTS lines)
  if(line STREQUAL "")
    continue()
  endif()
  string(REGEX REPLACE "^[0-9a-fA-F]* *[A-Za-z] " "" name "${line}")
  string(REGEX REPLACE "@.*$" "" name "${name}")
  if(name MATCHES "^aj_[a-z0-9_]+$")
    math(EXPR count "${count} + 1")
    list(APPEND exported "${name}")
  elseif(NOT name MATCHES "^AGENTJAIL_[0-9]+$")
    list(APPEND bad "${name}")
  endif()
endforeach()
if(bad)
  list(LENGTH bad n)
  list(JOIN bad "\n  " shown)
  message(FATAL_ERROR "${LIB} exports ${n} symbols outside the C API:\n  ${shown}")
endif()

# The declarations: "AJ_API <type> <name>(" on one line.
file(STRINGS "${HEADER}" decls REGEX "^AJ_API ")
set(declared "")
foreach(d IN LISTS decls)
  if(d MATCHES "[ *](aj_[a-z0-9_]+)\\(")
    list(APPEND declared "${CMAKE_MATCH_1}")
  endif()
endforeach()
list(LENGTH declared ndeclared)
if(ndeclared LESS 40)
  message(FATAL_ERROR "${HEADER}: only ${ndeclared} AJ_API declarations found: did the test's pattern break?")
endif()
set(undefined ${declared})
list(REMOVE_ITEM undefined ${exported})
set(undeclared ${exported})
list(REMOVE_ITEM undeclared ${declared})
if(undefined OR undeclared)
  message(FATAL_ERROR "${LIB} and ${HEADER} disagree: declared, not exported: ${undefined}; "
                      "exported, not declared: ${undeclared}")
endif()
message(STATUS "${LIB}: ${count} aj_* symbols, the ${ndeclared} functions of agentjail.h, nothing else")
