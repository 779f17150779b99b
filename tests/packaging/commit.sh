#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cmake/commit.cmake names the commit `agentjail --version` prints even where git is
# not installed (scripts/install.sh on a fresh machine installs none): from .git's
# own files, for a branch's loose ref, a packed one, and a worktree's detached HEAD;
# and, with git, "-dirty" for a changed tree. Each is compared with git's answer.
# Usage: commit.sh SOURCE_DIR
set -euo pipefail
source_dir=$1
fail() { printf 'commit test: FAILED: %s\n' "$*" >&2; exit 1; }
command -v git >/dev/null || { echo "commit test: git is not installed (scripts/setup.sh installs it): nothing to compare with"; exit 77; }
tmp=$(mktemp -d /tmp/aj-commit-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin"
ln -s "$(command -v cmake)" "$tmp/bin/cmake"

# The commit cmake/commit.cmake names for SOURCE, with git hidden (PATH holds cmake
# alone) or not.
named() {
    local path=$1
    [[ $2 == nogit ]] && path=$tmp/bin
    PATH=$path cmake -DSOURCE="$3" -DOUT="$tmp/out.h" -P "$source_dir/cmake/commit.cmake"
    sed -n 's/^#define AGENTJAIL_COMMIT "\(.*\)"$/\1/p' "$tmp/out.h"
}

git clone -q "$source_dir" "$tmp/clone"
git -C "$tmp/clone" -c user.name=t -c user.email=t@t commit -q --allow-empty -m probe
want=$(git -C "$tmp/clone" rev-parse --short=12 HEAD)
[[ $(named "$PATH" nogit "$tmp/clone") == "$want" ]] || fail "loose ref: $(named "$PATH" nogit "$tmp/clone") != $want"
git -C "$tmp/clone" pack-refs --all
[[ ! -e $tmp/clone/.git/refs/heads/$(git -C "$tmp/clone" branch --show-current) ]] || fail "the ref is not packed"
[[ $(named "$PATH" nogit "$tmp/clone") == "$want" ]] || fail "packed ref: $(named "$PATH" nogit "$tmp/clone") != $want"
git -C "$tmp/clone" worktree add -q "$tmp/wt" HEAD~1
old=$(git -C "$tmp/wt" rev-parse --short=12 HEAD)
[[ $(named "$PATH" nogit "$tmp/wt") == "$old" ]] || fail "worktree: $(named "$PATH" nogit "$tmp/wt") != $old"
# With git: the same hash, and -dirty once a tracked file changes.
[[ $(named "$PATH" git "$tmp/clone") == "$want" ]] || fail "with git: $(named "$PATH" git "$tmp/clone") != $want"
echo changed >>"$tmp/clone/README.md"
[[ $(named "$PATH" git "$tmp/clone") == "$want-dirty" ]] || fail "with git, changed: not -dirty"
echo "commit test: ok ($want, packed, worktree $old, dirty)"
