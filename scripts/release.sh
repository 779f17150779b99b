#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Makes a release's files in dist/ (or --out DIR): the source tarball
# agentjail-VERSION.tar.gz (git archive of HEAD, with a COMMIT file, so a build from
# it still names its commit in --version), the binary tarball
# agentjail-VERSION-linux-ARCH.tar.gz (the command, linked statically but for libc,
# stripped, with its man pages, completions, policies, LICENSE and README), and
# SHA256SUMS for both. Refuses a tree with uncommitted changes unless --allow-dirty.
#
# Usage: scripts/release.sh [--out DIR] [--build-dir DIR] [--allow-dirty]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
umask 022

out=dist
build=${AGENTJAIL_PACKAGE_BUILD_DIR:-build-release}
allow_dirty=0
say() { printf 'release.sh: %s\n' "$*" >&2; }
while (($#)); do
    case "$1" in
        --out) out=${2:?--out needs a directory}; shift ;;
        --build-dir) build=${2:?--build-dir needs a directory}; shift ;;
        --allow-dirty) allow_dirty=1 ;;
        -h | --help) sed -n '3,11s/^# \{0,1\}//p' "$0"; exit 0 ;;
        *) say "unknown argument: $1 (try --help)"; exit 2 ;;
    esac
    shift
done
git rev-parse --git-dir >/dev/null 2>&1 || { say "not a git checkout: a release is made from one"; exit 1; }
if ((!allow_dirty)) && [[ -n "$(git status --porcelain --untracked-files=no)" ]]; then
    say "the tree has uncommitted changes (commit them, or --allow-dirty)"
    exit 1
fi
version=$(sed -n 's/^project(agentjail VERSION \([0-9.]*\) .*/\1/p' CMakeLists.txt)
[[ -n "$version" ]] || { say "no version in CMakeLists.txt's project()"; exit 1; }
commit=$(git rev-parse --short=12 HEAD)
arch=$(uname -m)
mkdir -p "$out"
out=$(cd "$out" && pwd -P)
tmp=$(mktemp -d /tmp/aj-release.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

src=agentjail-$version.tar.gz
say "source: $src (commit $commit)"
printf '%s\n' "$commit" >"$tmp/COMMIT"
git archive --format=tar --prefix="agentjail-$version/" --add-file="$tmp/COMMIT" HEAD | gzip -9n >"$out/$src"

bin=agentjail-$version-linux-$arch
say "binary: $bin.tar.gz"
scripts/package.sh --no-package --build-dir "$build" >/dev/null
stage=$tmp/stage
DESTDIR=$stage cmake --install "$build" --prefix /usr >/dev/null
mkdir -p "$tmp/$bin/bin" "$tmp/$bin/share"
cp "$stage/usr/bin/agentjail" "$tmp/$bin/bin/"
cp -r "$stage/usr/share/man" "$stage/usr/share/agentjail" "$tmp/$bin/share/"
for d in bash-completion zsh fish; do
    [[ -d "$stage/usr/share/$d" ]] && cp -r "$stage/usr/share/$d" "$tmp/$bin/share/"
done
cp LICENSE README.md "$tmp/$bin/"
tar -C "$tmp" --owner=0 --group=0 --numeric-owner --sort=name -czf "$out/$bin.tar.gz" "$bin"

(cd "$out" && sha256sum "$src" "$bin.tar.gz" >SHA256SUMS)
say "made in $out: $src, $bin.tar.gz, SHA256SUMS"
printf '%s\n' "$out/$src" "$out/$bin.tar.gz" "$out/SHA256SUMS"
