#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# In the test guest, as root: runs COMMAND as an unprivileged user inside a cgroup
# subtree delegated to that user, the way systemd delegates one (Delegate=yes), and
# removes the subtree afterwards. Exit status: COMMAND's.
#
# Usage (in the guest; also found as $AJVM_AS_USER): guest-as-user.sh COMMAND [ARGS...]
#   AJVM_USER  the user (default nobody, which every Debian /etc/passwd has: /etc is
#              the host's, read-only, so no user can be added)
#
# The delegation (Documentation/admin-guide/cgroup-v2.rst, "Delegation"): root makes
# a cgroup D and gives the user D itself and D's cgroup.procs, cgroup.subtree_control
# and cgroup.threads. The user's process then moves itself from D into a leaf it
# creates, D/leaf, and enables D's controllers in D/cgroup.subtree_control. So the
# command starts as it would in a user's systemd scope: in a cgroup of its own that it
# owns and that holds processes (so it cannot enable controllers there), below a
# delegated parent it may create siblings in. The command learns D from
# AJVM_DELEGATED. What the command leaves in D is listed on stderr and killed.
set -uo pipefail
(($#)) || { echo "usage: guest-as-user.sh COMMAND [ARGS...]" >&2; exit 2; }
user=${AJVM_USER:-nobody}
uid=$(id -u "$user") && gid=$(id -g "$user") || { echo "guest-as-user: no user $user" >&2; exit 125; }
cg=/sys/fs/cgroup
deleg=$cg/delegated-$uid.$$
mkdir "$deleg" &&
    chown "$uid:$gid" "$deleg" "$deleg/cgroup.procs" "$deleg/cgroup.subtree_control" "$deleg/cgroup.threads" ||
    { echo "guest-as-user: cannot delegate $deleg to $user" >&2; exit 125; }
# A home and a TMPDIR of the user's own: the shares are not the user's to write.
home=/tmp/home-$uid.$$
mkdir -p -m 0700 "$home/tmp" "$home/home" && chown -R "$uid:$gid" "$home"

keep_env=()
# What the host passed with --env goes on to the user, plus the guest's markers.
while read -r line; do
    name=${line#export }
    name=${name%%=*}
    [[ -n "${!name+x}" ]] && keep_env+=("$name=${!name}")
done </.aj/ctl/env
[[ -z "${AGENTJAIL_IN_VM:-}" ]] || keep_env+=(AGENTJAIL_IN_VM="$AGENTJAIL_IN_VM")

rc=0
(
    # Only this child enters D (root may move any process anywhere); this shell stays
    # out, or D would hold a process and the user could not enable its controllers.
    echo "$BASHPID" >"$deleg/cgroup.procs" || exit 125
    # shellcheck disable=SC2016 # expanded by the user's shell
    exec setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all --bounding-set=-all -- \
        env -i PATH="$PATH" HOME="$home/home" TMPDIR="$home/tmp" USER="$user" LOGNAME="$user" \
        LANG=C.UTF-8 TERM=dumb AJVM_DELEGATED="$deleg" "${keep_env[@]}" \
        bash -c '
            d=$AJVM_DELEGATED
            mkdir "$d/leaf" && echo $$ >"$d/leaf/cgroup.procs" || { echo "guest-as-user: cannot enter $d/leaf" >&2; exit 125; }
            for c in $(cat "$d/cgroup.controllers"); do
                echo "+$c" >"$d/cgroup.subtree_control" || { echo "guest-as-user: cannot enable $c in $d" >&2; exit 125; }
            done
            exec "$@"' bash "$@"
) || rc=$?

# What the command left behind: cgroups other than its leaf, and live processes.
left=$(cd "$deleg" && find . -mindepth 1 -type d ! -path ./leaf | sed 's|^\./||' | sort)
[[ -z "$left" ]] || echo "guest-as-user: cgroups left in the delegated subtree: $(echo $left)" >&2
if grep -q '^populated 1' "$deleg/cgroup.events"; then
    echo "guest-as-user: processes left running in the delegated subtree (killed):" >&2
    find "$deleg" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r p; do
        echo "    $p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" >&2
    done
    echo 1 >"$deleg/cgroup.kill"
    for _ in $(seq 50); do
        grep -q '^populated 0' "$deleg/cgroup.events" && break
        sleep 0.1
    done
fi
find "$deleg" -depth -type d -exec rmdir {} + 2>/dev/null ||
    echo "guest-as-user: could not remove $deleg" >&2
rm -rf -- "$home"
exit "$rc"
