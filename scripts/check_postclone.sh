#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The post-clone rule, checked on the objects (lib/CMakeLists.txt's
# agentjail_postclone): between clone and execve nothing may allocate, throw or take
# a lock, because the child is a copy of a possibly multi-threaded process whose
# allocator or other locks another thread may have held at the clone. Fails when an
# object references the allocator (malloc, operator new/delete), exception support
# (__cxa_*, _Unwind_*, the personality routine, std::__throw_*) or pthread.
#
# Usage: scripts/check_postclone.sh OBJECT... (a CMake list, ';'-separated, is split)
set -euo pipefail
objs=()
for a in "$@"; do IFS=';' read -r -a parts <<<"$a"; objs+=("${parts[@]}"); done
(( ${#objs[@]} > 0 )) || { echo "check_postclone.sh: no objects given" >&2; exit 2; }
forbidden='^(malloc|calloc|realloc|free|aligned_alloc|posix_memalign|memalign|_Znw.*|_Zna.*|_Zdl.*|_Zda.*|__cxa_.*|_Unwind_.*|__gxx_personality_v0|_ZSt.*__throw_.*|pthread_.*|__pthread_.*|cap_.*)$'
# Positive control: an object that allocates, throws and locks must be caught, or
# the check proves nothing (a changed nm output format, say).
ctl=$(mktemp -d)
trap 'rm -rf "$ctl"' EXIT
printf '#include <mutex>\n#include <stdexcept>\nstd::mutex m; int* f(int x) { std::lock_guard<std::mutex> g(m); if (x) throw std::runtime_error("x"); return new int(x); }\n' >"$ctl/c.cc"
${CXX:-c++} -O2 -c "$ctl/c.cc" -o "$ctl/c.o"
caught=$(nm --undefined-only --format=posix "$ctl/c.o" | awk '{print $1}' | grep -cE "$forbidden" || true)
if (( caught < 3 )); then
    echo "check_postclone.sh: the control object's allocation, throw and lock were not all caught ($caught symbols)" >&2
    exit 2
fi
echo "ok   control: $caught forbidden references found in an object that allocates, throws and locks"
status=0
for o in "${objs[@]}"; do
    [[ -f "$o" ]] || { echo "check_postclone.sh: $o: no such object" >&2; exit 2; }
    bad=$(nm --undefined-only --format=posix "$o" | awk '{print $1}' | grep -E "$forbidden" || true)
    if [[ -n "$bad" ]]; then
        echo "FAIL $(basename "$o"): references $(echo "$bad" | tr '\n' ' ')" >&2
        status=1
    else
        echo "ok   $(basename "$o"): $(nm --undefined-only --format=posix "$o" | wc -l) undefined symbols, none forbidden"
    fi
done
exit $status
