# SPDX-License-Identifier: Apache-2.0
# What `cmake --install` put into the scratch prefix (issue 28, items 3 and 8): every
# file a user or a packager looks for, stripped, and one version everywhere: the
# SONAME's number is the version's major, and the command, the pkg-config file, the
# CMake package and the Python package (pyproject.toml and __version__) all say the
# project's version.
#   -DPREFIX= -DLIBDIR= -DDATADIR= -DMANDIR= -DPYDIR= -DVERSION= -DSOURCE= -DREADELF=
string(REGEX MATCH "^[0-9]+" major "${VERSION}")
set(problems)
macro(problem text)
  list(APPEND problems "${text}")
endmacro()

set(soname libagentjail.so.${major})
foreach(rel bin/agentjail ${LIBDIR}/${soname} ${LIBDIR}/libagentjail.so include/agentjail/agentjail.h
    ${LIBDIR}/pkgconfig/agentjail.pc ${LIBDIR}/cmake/agentjail/agentjailConfig.cmake
    ${LIBDIR}/cmake/agentjail/agentjailConfigVersion.cmake ${DATADIR}/agentjail/policies/default.toml
    ${DATADIR}/doc/agentjail/LICENSE ${PYDIR}/agentjail/__init__.py ${PYDIR}/agentjail/_installed.py)
  if(NOT EXISTS "${PREFIX}/${rel}")
    problem("missing: ${rel}")
  endif()
endforeach()

# Stripped: no DWARF left in what was installed.
foreach(rel bin/agentjail ${LIBDIR}/${soname})
  if(EXISTS "${PREFIX}/${rel}")
    execute_process(COMMAND ${READELF} -S "${PREFIX}/${rel}" OUTPUT_VARIABLE sections)
    if(sections MATCHES "\\.debug_info")
      problem("${rel} is not stripped (.debug_info)")
    endif()
  endif()
endforeach()

# The SONAME is the major.
if(EXISTS "${PREFIX}/${LIBDIR}/${soname}")
  execute_process(COMMAND ${READELF} -d "${PREFIX}/${LIBDIR}/${soname}" OUTPUT_VARIABLE dyn)
  if(NOT dyn MATCHES "Library soname: \\[${soname}\\]")
    problem("the SONAME is not ${soname}")
  endif()
endif()

# One version.
execute_process(COMMAND "${PREFIX}/bin/agentjail" --version OUTPUT_VARIABLE out)
string(REGEX MATCH "^[^\n]*" first "${out}")
if(NOT first STREQUAL "agentjail ${VERSION}")
  problem("agentjail --version says '${first}'")
endif()
file(STRINGS "${PREFIX}/${LIBDIR}/pkgconfig/agentjail.pc" pc REGEX "^Version:")
if(NOT pc STREQUAL "Version: ${VERSION}")
  problem("agentjail.pc says '${pc}'")
endif()
file(READ "${PREFIX}/${LIBDIR}/cmake/agentjail/agentjailConfigVersion.cmake" cv)
if(NOT cv MATCHES "set\\(PACKAGE_VERSION \"${VERSION}\"\\)")
  problem("agentjailConfigVersion.cmake does not say ${VERSION}")
endif()
file(STRINGS "${SOURCE}/python/pyproject.toml" py REGEX "^version = ")
if(NOT py STREQUAL "version = \"${VERSION}\"")
  problem("python/pyproject.toml says '${py}'")
endif()
file(STRINGS "${SOURCE}/python/agentjail/__init__.py" pyv REGEX "^__version__ = ")
if(NOT pyv STREQUAL "__version__ = \"${VERSION}\"")
  problem("python/agentjail/__init__.py says '${pyv}'")
endif()

# Small enough to ship.
file(GLOB_RECURSE files "${PREFIX}/*")
set(total 0)
foreach(f IN LISTS files)
  file(SIZE "${f}" size)
  math(EXPR total "${total} + ${size}")
endforeach()
math(EXPR mib "${total} / 1048576")
message(STATUS "installed: ${mib} MiB in ${PREFIX}")
if(mib GREATER 40)
  problem("the install is ${mib} MiB (stripped, it should be well under 40)")
endif()

if(problems)
  list(JOIN problems "\n  " text)
  message(FATAL_ERROR "the install in ${PREFIX}:\n  ${text}")
endif()
message(STATUS "layout, stripping and versions: ok (${soname}, ${VERSION})")
