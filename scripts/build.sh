#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds agentjail (library, CLI, examples, tests) with warnings as
# errors, in build/ or in $AGENTJAIL_BUILD_DIR.
#
# Usage: scripts/build.sh [extra cmake -D options...]
#   AGENTJAIL_BUILD_DIR  build directory, relative to the repository root (default: build)
#   AGENTJAIL_BUILD_TYPE CMAKE_BUILD_TYPE (default: RelWithDebInfo)
#   AGENTJAIL_JOBS       parallel compile jobs (default: the number of CPUs)
#   AGENTJAIL_CCACHE=0   compile without ccache even where it is installed
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Outputs readable by everyone: scripts/test.sh runs the tests again as another user.
umask 022

build=${AGENTJAIL_BUILD_DIR:-build}
jobs=${AGENTJAIL_JOBS:-$(nproc)}

say() { printf 'build.sh: %s\n' "$*" >&2; }

if [[ -f "$build/CMakeCache.txt" ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$build/CMakeCache.txt"; then
    say "$build/ was configured with another generator; remove it (rm -rf $build) and re-run"
    exit 1
fi

# GCC 12's -Wrestrict misfires inside libstdc++'s std::string at -O2 (GCC PR 105651:
# `s = "/"` "may overlap up to 9223372036854775813 bytes"); Debug builds never see it.
# Keep it a warning so -Werror does not fail on the compiler's bug.
cxxflags=${CXXFLAGS:-}
probe=$(printf '__clang__ __GNUC__\n' | ${CXX:-c++} -E -P -x c++ - 2>/dev/null || true)
if [[ "$probe" == "__clang__ 12" ]]; then
    cxxflags+=" -Wno-error=restrict"
fi

# ccache where installed (scripts/setup.sh installs it): a second build tree of the
# same sources (the sanitizer tier's, a git worktree's) then compiles from the cache.
# CCACHE_BASEDIR/NOHASHDIR make the hits independent of where the checkout lives.
launcher=()
if command -v ccache >/dev/null 2>&1 && [[ "${AGENTJAIL_CCACHE:-1}" != 0 ]]; then
    export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(pwd -P)} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

say "configure $build/ (${AGENTJAIL_BUILD_TYPE:-RelWithDebInfo}, -Werror)"
# compile_commands.json is for scripts/lint.sh --tidy and editors.
cmake -S . -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE="${AGENTJAIL_BUILD_TYPE:-RelWithDebInfo}" \
    -DAGENTJAIL_WERROR=ON \
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
    -DCMAKE_CXX_FLAGS="$cxxflags" \
    "${launcher[@]}" "$@"
say "build with $jobs jobs"
ninja -C "$build" -j "$jobs"
say "done: $build/bin/agentjail"
