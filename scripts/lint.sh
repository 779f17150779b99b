#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks the layout (clang-format) and, with --tidy, the bug-prone constructs
# (clang-tidy) of the C and C++ sources that changed; it never rewrites a file.
#
# Usage: scripts/lint.sh [--all] [--tidy] [FILE...]
#   (no files)  sources changed against $AGENTJAIL_LINT_BASE (default: HEAD), plus
#               untracked ones: what you are about to commit
#   --all       every tracked source
#   --tidy      also run clang-tidy, using build/compile_commands.json (scripts/build.sh)
# Fix the layout of your own files with: clang-format -i FILE...
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=${AGENTJAIL_BUILD_DIR:-build}
all=0 tidy=0
files=()
for arg in "$@"; do
    case "$arg" in
        --all) all=1 ;;
        --tidy) tidy=1 ;;
        -h | --help) sed -n '3,11s/^# \{0,1\}//p' "$0"; exit 0 ;;
        -*) echo "lint.sh: unknown option $arg (try --help)" >&2; exit 2 ;;
        *) files+=("$arg") ;;
    esac
done

say() { printf 'lint.sh: %s\n' "$*" >&2; }
command -v clang-format >/dev/null || { say "clang-format is missing: scripts/setup.sh --lint"; exit 1; }

patterns=('*.c' '*.h' '*.cc' '*.hpp')
if ((${#files[@]} == 0)); then
    if ((all)); then
        mapfile -t files < <(git ls-files -- "${patterns[@]}")
    else
        base=${AGENTJAIL_LINT_BASE:-HEAD}
        mapfile -t files < <({
            git diff --name-only --diff-filter=ACMR "$base" -- "${patterns[@]}"
            git ls-files --others --exclude-standard -- "${patterns[@]}"
        } | sort -u)
    fi
fi
if ((${#files[@]} == 0)); then
    say "no changed C/C++ sources"
    exit 0
fi

status=0
say "clang-format --dry-run on ${#files[@]} files"
clang-format --dry-run --Werror "${files[@]}" || status=1

if ((tidy)); then
    command -v clang-tidy >/dev/null || { say "clang-tidy is missing: scripts/setup.sh --lint"; exit 1; }
    [[ -f "$build/compile_commands.json" ]] || { say "no $build/compile_commands.json: run scripts/build.sh"; exit 1; }
    units=()
    for f in "${files[@]}"; do
        [[ "$f" == *.cc || "$f" == *.c ]] && units+=("$f")
    done
    if ((${#units[@]} > 0)); then
        say "clang-tidy on ${#units[@]} files"
        # The build's flags are GCC's; clang-tidy must not stop at one it does not know.
        clang-tidy --quiet --extra-arg=-Wno-unknown-warning-option -p "$build" "${units[@]}" || status=1
    fi
fi

if ((status == 0)); then
    say "clean"
fi
exit "$status"
