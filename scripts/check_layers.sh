#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The layering rule (README.md, "Architecture": the floors), checked on the sources: every
# `#include "DIR/..."` of lib/ and cli/ must point down a floor, or sideways where
# the table allows it:
#
#   faces       cli  api  capi      (capi and cli over api; anything below)
#   run         run                 (the run's order; facilities and below)
#   facilities  launch guard cgroup net tty workspace limits doctor
#                                   (pure and ground only: no facility into another)
#   pure        netrules < policy < seccomp < plan   (ground, and the lower pure folders)
#   ground      base < util, sys    (base imports nothing; util and sys each other)
#
# Today's exceptions are listed, one include line each, in scripts/layers.allow:
# the debt the redesign pays off (../shared/notes/redesign.md). A new include that
# breaks the rule fails, and so does an allowance that no longer matches any line
# (remove it: the list only shrinks).
#
# And the pure plan: no file of lib/plan but host_view.cc makes a file-system call
# (plan::HostView is the one way it reads the host).
#
# Usage: scripts/check_layers.sh [SOURCE_ROOT]   (default: this script's repository)
set -euo pipefail
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
allow_file="$root/scripts/layers.allow"
[[ -f "$allow_file" ]] || { echo "check_layers.sh: $allow_file is missing" >&2; exit 2; }

# The floor of a folder (x10, so that the pure floor's order fits between).
floor() {
    case "$1" in
        base) echo 0 ;;
        util | sys) echo 10 ;;
        netrules) echo 19 ;;
        policy) echo 20 ;;
        seccomp) echo 21 ;;
        plan) echo 22 ;;
        launch | guard | cgroup | net | tty | workspace | limits | doctor) echo 30 ;;
        run) echo 40 ;;
        api) echo 50 ;;
        capi | cli) echo 51 ;;
        *) echo "" ;;
    esac
}

# "FROM_FILE -> INCLUDED" for every include that breaks the rule.
violations() {
    local f from to ff ft
    while IFS= read -r f; do
        from=${f#"$root"/}
        if [[ "$from" == cli/* ]]; then from=cli; else from=${from#lib/}; from=${from%%/*}; fi
        ff=$(floor "$from")
        if [[ -z "$ff" ]]; then
            echo "${f#"$root"/} -> (its folder '$from' has no floor in scripts/check_layers.sh)"
            continue
        fi
        while IFS= read -r inc; do
            to=${inc%%/*}
            [[ "$to" == "$from" ]] && continue
            ft=$(floor "$to")
            [[ -z "$ft" ]] && continue  # not one of ours (a system or third-party header)
            # Down a floor, or within the ground's util/sys pair, or a face over api.
            ((ft < ff)) && continue              # down a floor
            ((ff == 10 && ft == 10)) && continue # util and sys, the ground's pair
            echo "${f#"$root"/} -> $inc"
        done < <(sed -n 's/^#include "\([a-z_]*\/[^"]*\)".*/\1/p' "$f")
    done < <(find "$root/lib" "$root/cli" -type f \( -name '*.cc' -o -name '*.hpp' -o -name '*.h' \) | sort)
}

# Positive control: a fabricated tree with one upward and one sideways include must
# give exactly those two, or the check proves nothing.
ctl=$(mktemp -d)
trap 'rm -rf "$ctl"' EXIT
mkdir -p "$ctl/lib/base" "$ctl/lib/plan" "$ctl/lib/tty" "$ctl/lib/net" "$ctl/cli"
printf '#include "api/api.hpp"\n#include <string>\n' >"$ctl/lib/base/x.hpp"
printf '#include "net/proxy.hpp"\n#include "plan/plan.hpp"\n#include "base/x.hpp"\n' >"$ctl/lib/tty/y.cc"
printf '#include "policy/policy.hpp"\n' >"$ctl/lib/plan/z.cc"
printf '#include "api/api.hpp"\n' >"$ctl/cli/main.cc"
got=$(root=$ctl violations | sort | tr '\n' ';')
want="lib/base/x.hpp -> api/api.hpp;lib/tty/y.cc -> net/proxy.hpp;"
if [[ "$got" != "$want" ]]; then
    echo "check_layers.sh: the control tree gave '$got', not '$want'" >&2
    exit 2
fi
echo "ok   control: an upward and a sideways include found, the allowed ones passed"

# The pure plan: lib/plan reads the host only through plan::HostView (host_view.cc);
# no other file of it makes a file-system call of its own.
host_calls() {
    local dir=$1
    grep -nE '::(open|openat|openat2|read|readlink|lstat|stat|fstat|fstatat|statx|opendir|readdir|access|realpath|glob|getenv|getcwd|getrlimit)\(|sys::(scan|stat_entry|resolve_existing|open_own_state_dir|passwd_of|caller_[a-z]+|openat2|read_small_file)\(|std::[io]?fstream|fopen\(' \
        $(find "$dir" -maxdepth 1 -type f \( -name '*.cc' -o -name '*.hpp' \) ! -name 'host_view.*' | sort) /dev/null |
        sed "s|^$dir/|lib/plan/|" || true
}
printf 'int x() { struct stat st; return ::lstat("/", &st); }\n' >"$ctl/lib/plan/pure.cc"
printf 'int y() { return ::lstat("/", nullptr); }\n' >"$ctl/lib/plan/host_view.cc"
if [[ "$(host_calls "$ctl/lib/plan" | cut -d: -f1)" != "lib/plan/pure.cc" ]]; then
    echo "check_layers.sh: the control plan's host call was not found (or host_view.cc's was)" >&2
    exit 2
fi
echo "ok   control: a host call in the plan found, host_view.cc's passed"
plan_calls=$(host_calls "$root/lib/plan")

found=$(violations | sort)
allowed=$({ grep -v '^\s*#' "$allow_file" || true; } | sed '/^\s*$/d' | sort)
status=0
new=$(comm -23 <(echo "$found") <(echo "$allowed") | sed '/^$/d')
stale=$(comm -13 <(echo "$found") <(echo "$allowed") | sed '/^$/d')
if [[ -n "$new" ]]; then
    echo "FAIL includes against the floors (README.md, Architecture); move the code down, or meet in a higher floor:" >&2
    echo "$new" | sed 's/^/    /' >&2
    status=1
fi
if [[ -n "$stale" ]]; then
    echo "FAIL allowances in scripts/layers.allow that no longer match an include (remove them):" >&2
    echo "$stale" | sed 's/^/    /' >&2
    status=1
fi
if [[ -n "$plan_calls" ]]; then
    echo "FAIL lib/plan reads the host outside plan::HostView (lib/plan/host_view.hpp): ask it there" >&2
    echo "$plan_calls" | sed 's/^/    /' >&2
    status=1
fi
if ((status == 0)); then
    echo "ok   $(echo "$found" | sed '/^$/d' | wc -l) known exceptions (scripts/layers.allow), no new one"
fi
exit $status
