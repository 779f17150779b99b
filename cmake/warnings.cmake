# SPDX-License-Identifier: Apache-2.0
# Warning and sanitizer flags, applied per target by agentjail_target_defaults().
function(agentjail_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor>
    -Wcast-align -Wformat=2 -Wimplicit-fallthrough
    $<$<COMPILE_LANGUAGE:CXX>:-Wold-style-cast>)
  if(AGENTJAIL_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(AGENTJAIL_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
  if(AGENTJAIL_FUZZ)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
endfunction()
