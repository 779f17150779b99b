#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/release.sh (issue 28, item 9): the checksums hold; the source tarball is
# the tracked files plus COMMIT, nothing else; the command from the unpacked binary
# tarball, on no path of the build, says the version and the commit and runs a
# command in a sandbox, and its man page reads.
# Usage: release.sh SOURCE_DIR BUILD_DIR VERSION
set -euo pipefail
source_dir=$1 build=$2 version=$3
fail() { printf 'release test: FAILED: %s\n' "$*" >&2; exit 1; }
tmp=$(mktemp -d /tmp/aj-release-test.XXXXXX)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT

(cd "$source_dir" && scripts/release.sh --out "$tmp/dist" --build-dir "$build" --allow-dirty) >"$tmp/made"
arch=$(uname -m)
src=$tmp/dist/agentjail-$version.tar.gz
bin=$tmp/dist/agentjail-$version-linux-$arch.tar.gz
[[ -f "$src" && -f "$bin" && -f "$tmp/dist/SHA256SUMS" ]] || fail "missing files: $(ls "$tmp/dist")"
(cd "$tmp/dist" && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not hold"

commit=$(git -C "$source_dir" rev-parse --short=12 HEAD)
tar -xzf "$src" -C "$tmp"
[[ "$(cat "$tmp/agentjail-$version/COMMIT")" == "$commit" ]] || fail "COMMIT is not $commit"
diff <(git -C "$source_dir" ls-tree -r --name-only HEAD | sort) <(cd "$tmp/agentjail-$version" && find . ! -type d ! -name COMMIT | sed 's|^\./||' | sort) >"$tmp/diff" ||
    fail "the source tarball is not the tracked files: $(head -5 "$tmp/diff")"

mkdir "$tmp/unpacked" && chmod 755 "$tmp/unpacked"
tar -xzf "$bin" -C "$tmp/unpacked"
cmd=$tmp/unpacked/agentjail-$version-linux-$arch/bin/agentjail
version_text=$("$cmd" --version)
[[ "$(head -n1 <<<"$version_text")" == "agentjail $version" ]] || fail "--version: $version_text"
grep -q "^commit: $commit" <<<"$version_text" || fail "--version names no commit $commit: $version_text"
grep -q "static" <<<"$version_text" || fail "not a static build: $version_text"
out=$(cd "$tmp" && "$cmd" -- /bin/sh -c 'echo inside-$(hostname)') || fail "a run from the tarball's command"
[[ "$out" == inside-agentjail ]] || fail "a run printed '$out'"
MANWIDTH=80 man -l "$tmp/unpacked/agentjail-$version-linux-$arch/share/man/man1/agentjail.1.gz" 2>/dev/null |
    grep -q -- "--policy" || fail "the tarball's man page"
echo "release test: ok ($(basename "$src"), $(basename "$bin"))"
