#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Boots Debian's kernel in a throwaway QEMU guest that has cgroup v2 alone (every
# controller enabled), shares the host's /usr, /etc and HOSTDIR with it over 9p, runs
# one command there as root and passes back its exit status.
#
# Usage: tests/vm/run-in-vm.sh [OPTIONS] HOSTDIR COMMAND [ARGS...]
#        tests/vm/run-in-vm.sh --check
#   HOSTDIR             shared read-write at the same absolute path (a source or build tree)
#   --share DIR         one more directory shared like HOSTDIR (repeatable)
#   --cwd DIR           working directory of COMMAND (default: the caller's when it is
#                       inside a share, else HOSTDIR)
#   --env NAME[=VALUE]  pass a variable into the guest (repeatable); the guest's
#                       environment is otherwise PATH, HOME, TERM, LANG, AGENTJAIL_IN_VM=1
#   --user-command STR  after COMMAND, run `bash -c STR` as the unprivileged user in a
#                       delegated cgroup subtree (see guest-as-user.sh)
#   --timeout SECONDS   kill the guest after this long (default 900); status 124
#   --check             only say whether everything needed is installed (status 0 or 1)
# Exit status: COMMAND's (then the user command's, if COMMAND exited 0); 124 timeout;
# 125 the guest reported no status (kernel panic, init failure) or could not start.
# Environment:
#   AGENTJAIL_VM_KERNEL   the vmlinuz to boot (default: the newest /boot/vmlinuz-*)
#   AGENTJAIL_VM_CACHE    where the unpacked vmlinux is kept (default ~/.cache/agentjail-vm)
#   AGENTJAIL_VM_MEMORY   guest memory in MiB (default 2048)
#   AGENTJAIL_VM_CPUS     guest CPUs (default 2)
#   AGENTJAIL_VM_VERBOSE  1: show the kernel's boot messages and the init's steps
#   AGENTJAIL_VM_SHARE_CACHE  9p cache mode of the shares: loose (default), mmap or none
#
# Why a guest: a controller lives in either the v1 or the v2 hierarchy of a kernel,
# and on hosts with a v1/v2 hybrid (memory, pids, cpu in v1) the v2 hierarchy has no
# controllers; only a kernel booted with cgroup_no_v1=all has them all in v2. Why TCG:
# a /dev/kvm from a paravirtual hypervisor (PVM) runs a stock kernel far slower than
# plain emulation, so KVM is used only when the host has kvm_intel or kvm_amd.
# Why the shares stay at the same paths: CMake build trees hold absolute paths.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
say() { printf 'run-in-vm: %s\n' "$*" >&2; }
usage() {
    sed -n '3,/^# Environment:/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" | sed '$d' >&2
    exit 125
}

shares=() envs=() cwd="" user_command="" has_user_command=0 check_only=0
timeout=${AGENTJAIL_VM_TIMEOUT:-900}
while (($#)); do
    case "$1" in
        --share) shares+=("${2:?--share needs a directory}"); shift 2 ;;
        --cwd) cwd=${2:?--cwd needs a directory}; shift 2 ;;
        --env) envs+=("${2:?--env needs NAME[=VALUE]}"); shift 2 ;;
        --user-command) user_command=${2?--user-command needs a string}; has_user_command=1; shift 2 ;;
        --timeout) timeout=${2:?--timeout needs seconds}; shift 2 ;;
        --check) check_only=1; shift ;;
        -h | --help) usage ;;
        --) shift; break ;;
        -*) say "unknown option: $1 (try --help)"; exit 125 ;;
        *) break ;;
    esac
done

# ---- What the host must have --------------------------------------------------------

missing=()
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing+=("$1 (package $2)"); }
need_cmd qemu-system-x86_64 qemu-system-x86
need_cmd modprobe kmod
need_cmd xz xz-utils
need_cmd setpriv util-linux
# busybox-static replaces the dynamic busybox: the guest's init runs before /usr is
# there, so it must not need a dynamic loader.
busybox=$(command -v busybox 2>/dev/null || true)
if [[ -z "$busybox" ]]; then
    missing+=("busybox (package busybox-static)")
elif ldd "$busybox" >/dev/null 2>&1; then
    missing+=("a static busybox ($busybox is dynamic; package busybox-static)")
fi
kernel=${AGENTJAIL_VM_KERNEL:-}
if [[ -z "$kernel" ]]; then
    kernel=$(find /boot -maxdepth 1 -name 'vmlinuz-*' 2>/dev/null | sort -V | tail -n 1)
fi
kver="" moddir=""
if [[ -z "$kernel" || ! -r "$kernel" ]]; then
    missing+=("a readable kernel in /boot/vmlinuz-* (package linux-image-amd64)")
else
    kver=${kernel##*/vmlinuz-}
    for d in "/usr/lib/modules/$kver" "/lib/modules/$kver"; do
        [[ -d "$d/kernel" ]] && moddir=$d && break
    done
    [[ -n "$moddir" ]] || missing+=("the modules of $kver in /usr/lib/modules/$kver")
fi
# The guest gets /bin, /lib, ... as symlinks into the shared /usr.
for d in bin sbin lib; do
    [[ -L /$d ]] || missing+=("a merged-/usr host (/$d is a directory, not a link into /usr)")
done
if ((check_only)); then
    if ((${#missing[@]})); then
        printf 'missing: %s\n' "${missing[@]}"
        exit 1
    fi
    echo "ok: qemu $(qemu-system-x86_64 --version | sed -n '1s/.*version \([^ ]*\).*/\1/p'), kernel $kver"
    exit 0
fi
if ((${#missing[@]})); then
    say "cannot boot the guest; missing:"
    printf '  %s\n' "${missing[@]}" >&2
    say "install them with scripts/setup.sh"
    exit 125
fi
(($# >= 2)) || usage
hostdir=$(cd "$1" 2>/dev/null && pwd -P) || { say "HOSTDIR $1 is not a directory"; exit 125; }
shift
resolved=("$hostdir")
for s in "${shares[@]}"; do
    r=$(cd "$s" 2>/dev/null && pwd -P) || { say "--share $s is not a directory"; exit 125; }
    resolved+=("$r")
done
for s in "${resolved[@]}"; do
    [[ "$s" != *$'\n'* && "$s" != *$'\t'* ]] || { say "cannot share a path with a newline or tab: $s"; exit 125; }
    case "$s" in
        / | /usr | /usr/* | /etc | /etc/* | /proc* | /sys* | /dev*)
            say "cannot share $s: the guest has its own"; exit 125 ;;
    esac
done
if [[ -z "$cwd" ]]; then
    cwd=$hostdir
    here_now=$(pwd -P)
    for s in "${resolved[@]}"; do
        [[ "$here_now/" == "$s/"* ]] && cwd=$here_now
    done
fi

# ---- The kernel: the ELF vmlinux boots ~7 s faster than the bzImage -------------------
#
# Under TCG the bzImage's xz decompressor alone takes about 7 s, while Debian's kernel
# (CONFIG_PVH=y) can be started directly from its uncompressed ELF image. That image
# is unpacked once and kept in a cache outside the tree, keyed by the vmlinuz's
# identity so that a kernel update unpacks anew.

work=$(mktemp -d "${TMPDIR:-/tmp}/agentjail-vm.XXXXXX")
qemu_pid="" sleeper=""
cleanup() {
    [[ -z "$qemu_pid" ]] || kill -KILL "$qemu_pid" 2>/dev/null || true
    [[ -z "$sleeper" ]] || kill "$sleeper" 2>/dev/null || true
    rm -rf -- "$work"
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT
trap 'say "terminated"; exit 143' TERM

cache=${AGENTJAIL_VM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/agentjail-vm}
if ! mkdir -p "$cache" 2>/dev/null || [[ ! -w "$cache" ]]; then
    say "cannot write the cache $cache; unpacking the kernel for this run only"
    cache=$work
fi
vmlinux=$cache/vmlinux-$kver-$(stat -Lc '%s-%Y' "$kernel")
extract_vmlinux() {
    local off tmp=$vmlinux.tmp.$$
    # Every offset of the xz magic; the first that unpacks to an ELF is the kernel.
    while read -r off; do
        if tail -c "+$((off + 1))" "$kernel" | xz -dc --single-stream >"$tmp" 2>/dev/null ||
            [[ -s "$tmp" ]]; then
            if [[ "$(head -c 4 "$tmp" | od -An -c | tr -d ' ')" == '177ELF' ]]; then
                mv -f "$tmp" "$vmlinux"
                return 0
            fi
        fi
    done < <(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$kernel" | cut -d: -f1)
    rm -f "$tmp"
    return 1
}
boot_image=$kernel
if [[ -s "$vmlinux" ]]; then
    boot_image=$vmlinux
else
    # flock: two harnesses started at once (ctest -j) unpack only once.
    if (flock 9 && { [[ -s "$vmlinux" ]] || extract_vmlinux; }) 9>"$cache/.lock"; then
        boot_image=$vmlinux
    else
        say "could not unpack an ELF vmlinux from $kernel; booting the bzImage (about 7 s slower)"
    fi
fi

# ---- The initramfs: busybox, the 9p modules and the init scripts ---------------------

root=$work/initramfs
mkdir -p "$root"/{.aj/modules,proc,sys,dev,newroot}
cp "$busybox" "$root/.aj/busybox"
cp "$here/guest-init.sh" "$root/init"
cp "$here/guest-stage2.sh" "$here/guest-as-user.sh" "$here/guest-user-manager.sh" "$root/.aj/"
chmod 0755 "$root/init" "$root"/.aj/*.sh "$root/.aj/busybox"
# The modules 9p over virtio-pci needs, and fuse (direct mode's view), in load order (modprobe resolves the
# dependencies from the host's copy of the guest kernel's modules). Compressed
# modules are unpacked here: busybox insmod takes plain ELF objects only.
n=0
while read -r verb path _; do
    [[ "$verb" == insmod ]] || continue
    base=$(basename "$path")
    grep -qxF "$base" "$root/.aj/modules/order" 2>/dev/null && continue
    dst=$root/.aj/modules/$(printf '%02d' "$n")-${base%%.ko*}.ko
    case "$path" in
        *.ko) cp "$path" "$dst" ;;
        *.ko.xz) xz -dc "$path" >"$dst" ;;
        *.ko.zst) zstd -qdc "$path" >"$dst" ;;
        *.ko.gz) gzip -dc "$path" >"$dst" ;;
        *) say "unknown module format: $path"; exit 125 ;;
    esac
    echo "$base" >>"$root/.aj/modules/order"
    n=$((n + 1))
done < <(for m in virtio_pci 9pnet_virtio 9p fuse; do modprobe -S "$kver" --show-depends "$m"; done)
((n > 0)) || { say "found none of the 9p/virtio modules of $kver in $moddir"; exit 125; }
rm -f "$root/.aj/modules/order"
(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | "$busybox" cpio -o -H newc -R 0:0 2>/dev/null) >"$work/initramfs.cpio"

# ---- The control share: the command in, the status out --------------------------------

ctl=$work/ctl
mkdir -p "$ctl"
# Read by guest-stage2.sh (bash): NAME=VALUE lines, the values %q-quoted.
{
    printf 'AJVM_CWD=%q\n' "$cwd"
    printf 'AJVM_HAS_USER_COMMAND=%q\n' "$has_user_command"
    printf 'AJVM_VERBOSE=%q\n' "${AGENTJAIL_VM_VERBOSE:-0}"
} >"$ctl/config"
# Read by guest-init.sh (busybox sh): plain words only.
cache_mode=${AGENTJAIL_VM_SHARE_CACHE:-loose}
case "$cache_mode" in loose | mmap | none) ;; *) say "bad AGENTJAIL_VM_SHARE_CACHE: $cache_mode"; exit 125 ;; esac
echo "AJVM_SHARE_CACHE=$cache_mode" >"$ctl/config-sh"
# One share per line: TAG<tab>PATH.
: >"$ctl/shares"
for i in "${!resolved[@]}"; do
    printf 'aj_share%d\t%s\n' "$i" "${resolved[$i]}" >>"$ctl/shares"
done
# The environment of the command, one `export NAME=VALUE` per line.
{
    for e in "${envs[@]}"; do
        name=${e%%=*}
        [[ "$name" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || { say "bad --env $e"; exit 125; }
        if [[ "$e" == *=* ]]; then
            printf 'export %s=%q\n' "$name" "${e#*=}"
        elif [[ -n "${!name+x}" ]]; then
            printf 'export %s=%q\n' "$name" "${!name}"
        fi
    done
} >"$ctl/env"
printf '%q ' "$@" >"$ctl/command"
printf '%s' "$user_command" >"$ctl/user-command"

# ---- Boot -------------------------------------------------------------------------------

# QEMU's -virtfs takes a comma in a value as ",,".
qarg() { printf '%s' "${1//,/,,}"; }
accel=(-accel tcg,thread=multi)
if [[ -e /sys/module/kvm_intel || -e /sys/module/kvm_amd ]] && [[ -w /dev/kvm ]]; then
    # Untested on this project's machines (they have PVM); plain KVM should just work.
    accel=(-accel kvm -cpu host)
fi
cmdline=(console=ttyS0 cgroup_no_v1=all panic=-1 rdinit=/init
    # A throwaway guest: the speculation mitigations (page-table isolation above all)
    # only cost time under emulation.
    mitigations=off
    # No clock drift checks or probing of absent hardware.
    tsc=reliable no_timer_check i8042.noaux i8042.nomux i8042.nopnp i8042.dumbkbd
    8250.nr_uarts=1)
if [[ "${AGENTJAIL_VM_VERBOSE:-0}" != 1 ]]; then
    # Errors only (an OOM kill, a panic): the serial console is slow under TCG.
    cmdline+=(quiet loglevel=3)
fi
qemu=(qemu-system-x86_64 -nodefaults -no-user-config "${accel[@]}"
    -machine pc -m "${AGENTJAIL_VM_MEMORY:-2048}" -smp "${AGENTJAIL_VM_CPUS:-2}"
    -display none -serial stdio -no-reboot
    -kernel "$boot_image" -initrd "$work/initramfs.cpio" -append "${cmdline[*]}"
    -virtfs "local,path=/usr,mount_tag=aj_usr,security_model=none,readonly=on"
    -virtfs "local,path=/etc,mount_tag=aj_etc,security_model=none,readonly=on"
    -virtfs "local,path=$(qarg "$ctl"),mount_tag=aj_ctl,security_model=none")
for i in "${!resolved[@]}"; do
    qemu+=(-virtfs "local,path=$(qarg "${resolved[$i]}"),mount_tag=aj_share$i,security_model=none")
done

start=$(date +%s.%N)
rc=0
# QEMU reads the serial console's input from stdin: give it none, so that it never
# puts the caller's terminal into raw mode or eats a pipeline's input.
"${qemu[@]}" </dev/null &
qemu_pid=$!
# The deadline, so that a hung guest cannot hang the caller. The sleep holds none of
# our output: a leftover holding ctest's pipe open would keep the test "running".
sleep "$timeout" </dev/null >/dev/null 2>&1 &
sleeper=$!
first=""
wait -n -p first "$qemu_pid" "$sleeper" 2>/dev/null || rc=$?
if [[ "$first" == "$sleeper" ]]; then
    kill -KILL "$qemu_pid" 2>/dev/null || true
    wait "$qemu_pid" 2>/dev/null || true
    qemu_pid=""
    say "timed out after ${timeout}s; guest killed"
    exit 124
fi
qemu_pid=""
elapsed=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')

if [[ ! -s "$ctl/rc" ]]; then
    say "the guest reported no exit status after ${elapsed}s (qemu status $rc); rerun with AGENTJAIL_VM_VERBOSE=1 to see the kernel's messages"
    exit 125
fi
status=$(<"$ctl/rc")
if [[ -s "$ctl/user-rc" ]]; then
    user_status=$(<"$ctl/user-rc")
    say "guest done in ${elapsed}s: command exited $status, user command $user_status"
    ((status != 0)) || status=$user_status
else
    say "guest done in ${elapsed}s: command exited $status"
fi
exit "$status"
