#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and installs agentjail from this checkout, for using it (a developer's build
# with the tests is scripts/build.sh): the packages building needs, a build of the
# command and the library only (no tests), then either `cmake --install` (stripped)
# or a Debian package made and installed with apt.
#
# Usage: scripts/install.sh [--prefix DIR] [--deb] [--no-setup]
#   --prefix DIR  where to install (default /usr/local; ignored with --deb, which is /usr)
#   --deb         build a .deb (scripts/package.sh) and install it with apt; remove it
#                 later with `apt remove agentjail`
#   --no-setup    do not install the build packages (they are there already)
#   AGENTJAIL_INSTALL_BUILD_DIR  the build directory (default: build-release)
# Not root: apt and the install step run through sudo.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
umask 022

prefix=/usr/local
deb=0
setup=1
build=${AGENTJAIL_INSTALL_BUILD_DIR:-build-release}
say() { printf 'install.sh: %s\n' "$*" >&2; }
while (($#)); do
    case "$1" in
        --prefix)
            [[ $# -ge 2 && -n "$2" ]] || { say "--prefix needs a directory"; exit 2; }
            prefix=$2
            shift
            ;;
        --prefix=*) prefix=${1#--prefix=} ;;
        --deb) deb=1 ;;
        --no-setup) setup=0 ;;
        -h | --help)
            sed -n '3,15s/^# \{0,1\}//p' "$0"
            exit 0
            ;;
        *)
            say "unknown argument: $1 (try --help)"
            exit 2
            ;;
    esac
    shift
done

as_root=()
if ((EUID != 0)); then
    command -v sudo >/dev/null 2>&1 || { say "not root and no sudo: run this as root"; exit 1; }
    as_root=(sudo)
fi

if ((setup)); then
    "${as_root[@]}" scripts/setup.sh --build-only
fi

# Optimised without debug info: the install strips it anyway, and not making it
# saves a fifth of the compile (AGENTJAIL_BUILD_TYPE=RelWithDebInfo keeps it).
export AGENTJAIL_BUILD_TYPE=${AGENTJAIL_BUILD_TYPE:-Release}
if ((deb)); then
    AGENTJAIL_PACKAGE_BUILD_DIR=$build scripts/package.sh
    file=$(cat "$build/package-file")
    say "apt install $file"
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$(pwd -P)/$file" </dev/null
else
    scripts/package.sh --no-package --prefix "$prefix" --build-dir "$build"
    say "cmake --install $build (into $prefix)"
    "${as_root[@]}" cmake --install "$build"
fi
say "installed: $(command -v agentjail || echo "$prefix/bin/agentjail (not on PATH)")"
agentjail_bin=$(command -v agentjail || echo "$prefix/bin/agentjail")
"$agentjail_bin" --version | head -n1 >&2
say "try: agentjail -- claude    (agentjail --help, man agentjail)"
