#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian package (issue 28, item 4): scripts/package.sh makes it; its control
# fields and its files are what they should be; as root, where no agentjail package
# is installed already, apt installs it, the command, the man page, the completions
# and `import agentjail` work from the system's own paths, and `apt remove --purge`
# leaves none of its files and no library in the loader's cache. Where lintian is
# installed, it finds no error but the default maintainer's mail host.
# Usage: deb.sh SOURCE_DIR BUILD_DIR VERSION
set -euo pipefail
source_dir=$1 build=$2 version=$3
say() { printf 'deb.sh: %s\n' "$*"; }
fail() { printf 'deb.sh: FAILED: %s\n' "$*" >&2; exit 1; }

deb=$(cd "$source_dir" && AGENTJAIL_PACKAGE_BUILD_DIR=$build scripts/package.sh)
[[ "$deb" == /* ]] || deb=$source_dir/$deb
[[ -f "$deb" ]] || fail "package.sh named no file ($deb)"
say "made $deb"

info=$(dpkg-deb --info "$deb")
field() { sed -n "s/^ $1: //p" <<<"$info"; }
[[ "$(field Package)" == agentjail ]] || fail "Package: $(field Package)"
[[ "$(field Version)" == "$version" ]] || fail "Version: $(field Version), not $version"
[[ "$(field Architecture)" == "$(dpkg --print-architecture)" ]] || fail "Architecture: $(field Architecture)"
depends=$(field Depends)
say "Depends: $depends"
for need in libc6 libseccomp2; do
    [[ "$depends" == *"$need"* ]] || fail "Depends lacks $need: $depends"
done
[[ "$depends" != *-dev* ]] || fail "Depends names a -dev package: $depends"

listing=$(dpkg-deb --contents "$deb" | awk '{print $6}' | sed 's|^\./|/|')
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
for path in /usr/bin/agentjail "/usr/lib/$multiarch/libagentjail.so.${version%%.*}" \
    /usr/include/agentjail/agentjail.h "/usr/lib/$multiarch/pkgconfig/agentjail.pc" \
    /usr/share/agentjail/policies/default.toml /usr/share/doc/agentjail/LICENSE \
    /usr/share/doc/agentjail/copyright /usr/share/doc/agentjail/changelog.gz \
    /usr/share/man/man1/agentjail.1.gz /usr/share/man/man5/agentjail-policy.5.gz \
    /usr/share/bash-completion/completions/agentjail /usr/lib/python3/dist-packages/agentjail/__init__.py \
    /usr/lib/python3/dist-packages/agentjail/_installed.py /etc/apparmor.d/agentjail; do
    grep -qxF "$path" <<<"$listing" || fail "the package lacks $path"
done
# The loader's cache by dpkg's trigger, not by the maintainer scripts.
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./triggers | grep -qx 'activate-noawait ldconfig' ||
    fail "no ldconfig trigger"
if command -v lintian >/dev/null 2>&1; then
    # Allowed: the default maintainer has no mail host (AGENTJAIL_DEB_MAINTAINER
    # names a packager's); warnings are said, not failed.
    # A status but 0 with no tag said: lintian itself failed (not the package). Its
    # scratch files (it leaves mldbm-elf-* behind) go to a directory of the test's own.
    rc=0
    ltmp=$(mktemp -d /tmp/aj-lintian.XXXXXX)
    tags=$(TMPDIR=$ltmp lintian --tag-display-limit 0 "$deb" 2>"$build/lintian.err") || rc=$?
    rm -rf "$ltmp"
    if ((rc != 0)) && ! grep -q '^[EWIP]: agentjail' <<<"$tags"; then
        fail "lintian failed ($rc): $(head -c 300 "$build/lintian.err")"
    fi
    errors=$(grep '^E: ' <<<"$tags" | grep -v -e ' bogus-mail-host ' -e ' bogus-mail-host-in-debian-changelog ' || true)
    [[ -z "$errors" ]] || fail "lintian: $errors"
    say "lintian: no error ($(grep -c '^W: ' <<<"$tags") warnings)"
else
    say "lintian is not installed (scripts/setup.sh installs it): the package is not checked by it"
fi
# The AppArmor profile: a conffile, for the installed command, parsed where AppArmor's
# parser is installed.
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles | grep -qx /etc/apparmor.d/agentjail ||
    fail "/etc/apparmor.d/agentjail is not a conffile"
profile=$(dpkg-deb --fsys-tarfile "$deb" | tar -xO ./etc/apparmor.d/agentjail)
grep -q '^profile agentjail /usr/bin/agentjail flags=(unconfined) {' <<<"$profile" || fail "the profile: $profile"
grep -q '^  userns,' <<<"$profile" || fail "the profile grants no userns: $profile"
if command -v apparmor_parser >/dev/null 2>&1; then
    printf '%s\n' "$profile" >"$build/agentjail.apparmor"
    apparmor_parser -Q -K "$build/agentjail.apparmor" || fail "apparmor_parser refuses the profile"
else
    say "the profile's syntax is not checked: apparmor_parser is not installed here"
fi
if grep -q '^/usr/local/\|^/home/\|^/root/\|^/tmp/' <<<"$listing"; then
    fail "files outside /usr: $(grep '^/usr/local/\|^/home/\|^/root/\|^/tmp/' <<<"$listing" | head -3)"
fi

if ((EUID != 0)); then
    say "skipped installing it: installing a package needs root (CI runs this as root)"
    exit 0
fi
if dpkg-query -W -f='${Status}' agentjail 2>/dev/null | grep -q "install ok installed"; then
    say "skipped installing it: an agentjail package is installed on this machine already, left as it is"
    exit 0
fi
cleanup() { DEBIAN_FRONTEND=noninteractive apt-get remove --purge -y -q agentjail >/dev/null 2>&1 || true; }
trap cleanup EXIT
say "apt-get install $deb"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$deb" </dev/null >/dev/null
files=$(dpkg -L agentjail)
[[ "$(/usr/bin/agentjail --version | head -n1)" == "agentjail $version" ]] || fail "agentjail --version"
ldconfig -p | grep -q "libagentjail.so.${version%%.*} " || fail "the loader's cache does not know the library"
# The system's own Python (PATH may name another, pyenv's say, which never looks in
# /usr/lib/python3/dist-packages).
(cd / && env -u AGENTJAIL_LIBRARY -u PYTHONPATH /usr/bin/python3 -c "
import agentjail, sys
assert agentjail.version() == '$version', agentjail.version()
assert agentjail.__file__.startswith('/usr/lib/python3/dist-packages/'), agentjail.__file__
") || fail "import agentjail from the system's Python"
MANWIDTH=80 man -P cat agentjail 2>/dev/null | grep -q -- "--policy" || fail "man agentjail"
tmp=$(mktemp -d /tmp/aj-deb.XXXXXX)
out=$(cd "$tmp" && /usr/bin/agentjail -- /bin/sh -c 'echo inside') || { rm -rf "$tmp"; fail "a run with the installed command"; }
rm -rf "$tmp"
[[ "$out" == inside ]] || fail "a run printed '$out'"

say "apt-get remove --purge agentjail"
DEBIAN_FRONTEND=noninteractive apt-get remove --purge -y -q agentjail </dev/null >/dev/null
trap - EXIT
left=()
while IFS= read -r f; do
    [[ -f "$f" || -L "$f" ]] && left+=("$f")
done <<<"$files"
((${#left[@]} == 0)) || fail "left after removal: ${left[*]:0:5}"
if ldconfig -p | grep -q "libagentjail.so"; then fail "the loader's cache still names libagentjail"; fi
say "ok: installed, used and removed cleanly"
