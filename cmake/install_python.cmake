# SPDX-License-Identifier: Apache-2.0
# Run by `cmake --install` after the Python binding is copied (lib/CMakeLists.txt):
# writes agentjail/_installed.py, which names the library installed with it under the
# prefix the install has (--prefix and cpack's staging included), so `import
# agentjail` finds it before the loader's cache does; then, for an install into the
# system's own /usr or /usr/local (no DESTDIR), refreshes that cache (ldconfig), as a
# package's trigger would. AJ_PYTHON_DIR and AJ_LIBRARY_FILE are relative to the prefix.
set(aj_file "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/${AJ_PYTHON_DIR}/agentjail/_installed.py")
message(STATUS "Installing: ${aj_file}")
file(WRITE "${aj_file}"
  "# Written by cmake --install: the library installed with this package.\n"
  "LIBRARY = \"${CMAKE_INSTALL_PREFIX}/${AJ_LIBRARY_FILE}\"\n")
if("$ENV{DESTDIR}" STREQUAL "" AND CMAKE_INSTALL_PREFIX MATCHES "^/usr(/local)?$")
  find_program(aj_ldconfig ldconfig PATHS /sbin /usr/sbin)
  if(aj_ldconfig)
    execute_process(COMMAND ${aj_ldconfig} RESULT_VARIABLE aj_rc ERROR_QUIET)
  endif()
endif()
