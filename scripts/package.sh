#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds agentjail's Debian package: a build of the command and the library (no
# tests) for the prefix /usr, then `cpack -G DEB` in that build tree. Prints the
# .deb's path (relative to the checkout) on stdout and writes it to
# BUILD/package-file. Also the one place that knows how a user's build is configured
# (scripts/install.sh uses it with --no-package).
#
# Usage: scripts/package.sh [--build-dir DIR] [--prefix DIR] [--no-package]
#   --build-dir DIR   the build tree (default: $AGENTJAIL_PACKAGE_BUILD_DIR or build-release)
#   --prefix DIR      CMAKE_INSTALL_PREFIX (default /usr; a .deb must be /usr)
#   --no-package  configure and build the tree, and stop there (no package)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
umask 022

build=${AGENTJAIL_PACKAGE_BUILD_DIR:-build-release}
prefix=/usr
no_package=0
say() { printf 'package.sh: %s\n' "$*" >&2; }
while (($#)); do
    case "$1" in
        --build-dir) build=${2:?--build-dir needs a directory}; shift ;;
        --prefix) prefix=${2:?--prefix needs a directory}; shift ;;
        --no-package) no_package=1 ;;
        -h | --help) sed -n '3,13s/^# \{0,1\}//p' "$0"; exit 0 ;;
        *) say "unknown argument: $1 (try --help)"; exit 2 ;;
    esac
    shift
done
if ((!no_package)) && [[ "$prefix" != /usr ]]; then
    say "a Debian package installs under /usr, not $prefix"
    exit 2
fi

# The command, the library, the Slurm plugin where Slurm's headers are, and what they
# install (policies, man pages, completions, the Python binding); no tests. Built as
# scripts/build.sh builds (its flags, so ccache serves what a developer's tree
# compiled already); installing and cpack strip the debug info.
say "configure and build $build/ (prefix $prefix, no tests)"
AGENTJAIL_BUILD_DIR=$build scripts/build.sh -DAGENTJAIL_TESTS=OFF -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DCMAKE_EXPORT_COMPILE_COMMANDS=OFF >&2
((no_package)) && exit 0
command -v dpkg-shlibdeps >/dev/null 2>&1 || { say "dpkg-shlibdeps is missing: apt-get install dpkg-dev"; exit 1; }
say "cpack -G DEB"
(cd "$build" && cpack -G DEB >&2)
file=$(cd "$build" && ls -t ./*.deb | head -n1)
file=$build/${file#./}
printf '%s\n' "$file" >"$build/package-file"
say "made $file ($(du -h "$file" | cut -f1))"
printf '%s\n' "$file"
