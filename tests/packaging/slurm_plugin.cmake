# SPDX-License-Identifier: Apache-2.0
# The SPANK plugin as a consumer of Slurm's headers (run with cmake -P): compiled alone
# as C11 with every warning an error, it must link nothing but libc (slurmstepd, srun
# and sbatch provide the spank_* symbols) and export what Slurm's plugin loader looks
# up; the installed pair must work from the install prefix (the wrapper finds
# libagentjail.so through its $ORIGIN RUNPATH).
#   CC SOURCE SLURM_INCLUDE READELF NM OUT  the compile and its tools
#   PLUGIN WRAPPER                          the installed plugin and wrapper
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(rc "${rc}" PARENT_SCOPE)
  set(out "${out}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()

get_filename_component(src_dir "${SOURCE}" DIRECTORY)
run("${CC}" -std=c11 -Wall -Wextra -pedantic -Werror -fPIC -shared -I "${SLURM_INCLUDE}"
    -I "${src_dir}" "-DAJ_SLURM_WRAPPER_DEFAULT=\"/usr/lib/agentjail/slurm/agentjail-slurm-task\""
    -o "${OUT}" "${SOURCE}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the plugin does not compile alone against ${SLURM_INCLUDE}/slurm/spank.h:\n${err}")
endif()

run("${READELF}" -d "${OUT}")
string(REGEX MATCHALL "Shared library: \\[[^]]*\\]" needed "${out}")
if(NOT needed STREQUAL "Shared library: [libc.so.6]")
  message(FATAL_ERROR "the plugin must need libc alone (no libslurm): ${needed}")
endif()

run("${NM}" -D --defined-only "${OUT}" "${PLUGIN}")
foreach(sym plugin_name plugin_type plugin_version spank_plugin_version slurm_spank_init
            slurm_spank_task_init)
  string(REGEX MATCHALL "[0-9a-f]+ [A-Za-z] ${sym}\n" hits "${out}")
  list(LENGTH hits n)
  if(NOT n EQUAL 2)
    message(FATAL_ERROR "${sym} is not exported by both the compiled and the installed plugin:\n${out}")
  endif()
endforeach()

# Started outside Slurm, the installed wrapper loads libagentjail.so from the prefix
# and refuses, with 125 and its one line.
run("${WRAPPER}")
if(NOT rc EQUAL 125 OR NOT err MATCHES "not started by spank_agentjail.so")
  message(FATAL_ERROR "the installed ${WRAPPER}: status ${rc}, expected 125:\n${err}")
endif()
message(STATUS "plugin: libc only, the SPANK symbols exported; the installed wrapper runs from the prefix")
