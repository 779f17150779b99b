#!/.aj/busybox sh
# SPDX-License-Identifier: Apache-2.0
# PID 1 of the test guest, first stage (in the initramfs): loads the 9p modules, builds
# the real root on a tmpfs from the host's shares, mounts what a host would have
# (cgroup2 with every controller enabled among it) and switches to that root.
#
# Why a tmpfs root and switch_root rather than staying in the initramfs: the initramfs
# is the kernel's rootfs, which pivot_root(2) refuses to move, and agentjail builds
# every sandbox with pivot_root. A tmpfs mounted over it and made the root behaves
# like the root file system of an ordinary machine.
# Why busybox for all of it: under TCG each exec of a dynamic binary from the 9p /usr
# costs 50-110 ms, of the static busybox about 20 ms.
#
# The layout copies a systemd host where it matters to agentjail: / is a shared
# mount, cgroup2 is mounted with nsdelegate,memory_recursiveprot, and PID 1 and the
# command sit in a leaf (/init.scope), not in the root cgroup, which the kernel
# exempts from the "no internal processes" rule.
B=/.aj/busybox
fail() {
    echo "guest-init: $*" >/dev/console
    # No status file: the host reports "no exit status" (125).
    $B poweroff -f
}
$B mount -t proc proc /proc || fail "mount /proc"
$B mount -t sysfs sysfs /sys || fail "mount /sys"
$B mount -t devtmpfs devtmpfs /dev || fail "mount /dev"
for m in /.aj/modules/*.ko; do
    $B insmod "$m" || fail "insmod $m"
done
# devtmpfs makes /dev/fuse for root alone; udev would open it to everyone, as a
# distribution does, so that a user's run can serve direct mode's view.
if [ -c /dev/fuse ]; then $B chmod 0666 /dev/fuse; fi

R=/newroot
$B mount -t tmpfs -o mode=0755 root $R || fail "mount the root tmpfs"
$B mkdir -p $R/usr $R/etc $R/proc $R/sys $R/dev $R/tmp $R/run $R/var $R/root $R/.aj/ctl
$B chmod 0700 $R/root
for d in bin sbin lib lib32 lib64 libx32; do
    # As on the merged-/usr host; links to absent directories are harmless.
    $B ln -s usr/$d $R/$d
done
opts=trans=virtio,version=9p2000.L,msize=512000
$B mount -t 9p -o $opts,cache=loose,ro aj_usr $R/usr || fail "mount the host's /usr"
$B mount -t 9p -o $opts,cache=loose,ro aj_etc $R/etc || fail "mount the host's /etc"
# No cache on the control share: the host must see the status file as written.
$B mount -t 9p -o $opts aj_ctl $R/.aj/ctl || fail "mount the control share"
$B cp /.aj/busybox /.aj/guest-stage2.sh /.aj/guest-as-user.sh /.aj/guest-user-manager.sh $R/.aj/

for d in proc sys dev; do
    $B mount --move /$d $R/$d || fail "move /$d"
done
$B mkdir -p $R/dev/pts $R/dev/shm
# /dev/ptmx (from devtmpfs) opens the devpts instance mounted beside it at /dev/pts.
$B mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts $R/dev/pts || fail "mount /dev/pts"
$B ln -s /proc/self/fd $R/dev/fd
$B ln -s /proc/self/fd/0 $R/dev/stdin
$B ln -s /proc/self/fd/1 $R/dev/stdout
$B ln -s /proc/self/fd/2 $R/dev/stderr
$B mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs $R/dev/shm || fail "mount /dev/shm"
$B mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs $R/tmp || fail "mount /tmp"
$B mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs $R/run || fail "mount /run"
$B mount -t tmpfs -o mode=0755 tmpfs $R/var || fail "mount /var"
$B mkdir -p $R/var/lib $R/var/cache $R/var/log $R/var/tmp
$B chmod 1777 $R/var/tmp

AJVM_SHARE_CACHE=loose
. $R/.aj/ctl/config-sh
# The host's directories at their own paths, after the tmpfs mounts (which would hide
# a share below /tmp). loose: an exec from the share is ~6x faster than with no cache
# (so the host must not change what the guest reads while it runs; the tests only
# read the trees and write new files).
# The directories above a share are the guest's own (tmpfs; no share is mounted yet):
# every user may pass through them, so that the delegated user reaches the trees even
# when they sit below a closed directory such as /root on the host.
while IFS='	' read -r tag path; do
    $B mkdir -p "$R$path" || fail "create $path"
    p=$path
    while p=${p%/*}; [ -n "$p" ]; do
        $B chmod o+x "$R$p"
    done
done <$R/.aj/ctl/shares
while IFS='	' read -r tag path; do
    $B mount -t 9p -o "$opts,cache=$AJVM_SHARE_CACHE" "$tag" "$R$path" || fail "mount the share $tag at $path"
done <$R/.aj/ctl/shares

# cgroup v2 alone (cgroup_no_v1=all), mounted as systemd mounts it.
C=$R/sys/fs/cgroup
$B mount -t cgroup2 -o nsdelegate,memory_recursiveprot cgroup2 $C || fail "mount cgroup2"
for c in $($B cat $C/cgroup.controllers); do
    echo "+$c" >$C/cgroup.subtree_control || fail "enable the $c controller"
done
$B mkdir $C/init.scope && echo $$ >$C/init.scope/cgroup.procs || fail "move PID 1 into /init.scope"

$B hostname agentjail-vm
$B ip link set lo up || fail "bring up lo"
$B mount --make-rshared $R || fail "make / shared"
exec $B switch_root $R /.aj/guest-stage2.sh
