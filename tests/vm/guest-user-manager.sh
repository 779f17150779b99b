#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# In the test guest, as root: starts a real `systemd --user` manager for the
# unprivileged user, then runs COMMAND as that user from a cgroup that is NOT
# delegated to it (as a login session's), so that agentjail has to ask the manager for
# a delegated scope. Stops the manager and removes everything afterwards. Exit status:
# COMMAND's; 1 when it succeeded but left a scope or a process behind; 125 when the
# manager could not be started.
#
# Usage (in the guest; also found as $AJVM_USER_MANAGER): guest-user-manager.sh COMMAND [ARGS...]
#   AJVM_USER  the user (default nobody, as in guest-as-user.sh)
#
# The layout copies a systemd host's (logind + user@.service):
#   /sys/fs/cgroup/user-UID.slice                   root's; memory, pids, cpu passed down
#     user@UID.service                              delegated to the user: the manager
#     session-1.scope                               root's: COMMAND runs here
# On such a host the user manager cannot move a process out of session-1.scope by
# itself (the common ancestor user-UID.slice is root's), so it asks the system manager
# (AttachProcessesToUnit). This guest has no system manager: instead the user manager
# alone gets CAP_DAC_OVERRIDE (ambient), so that it may write the root-owned
# cgroup.procs of user-UID.slice, which is what the kernel checks for a move between
# two of the slice's children. The command gets no capability: for agentjail the slice
# is as closed as on a real host (it cannot clone into the scope itself and must have
# the manager move the sandbox's init).
# `systemd --user` refuses to start where the system was not booted with systemd
# (sd_booted(): /run/systemd/system exists): the directory is made for the manager's
# start and removed afterwards.
set -uo pipefail
(($#)) || { echo "usage: guest-user-manager.sh COMMAND [ARGS...]" >&2; exit 2; }
say() { echo "guest-user-manager: $*" >&2; }
user=${AJVM_USER:-nobody}
uid=$(id -u "$user") && gid=$(id -g "$user") || { say "no user $user"; exit 125; }
cg=/sys/fs/cgroup
slice=$cg/user-$uid.slice
manager_cg=$slice/user@$uid.service
session=$slice/session-1.scope
runtime=/run/user/$uid
home=/tmp/um-home-$uid.$$
manager_pid=""
made_booted=0

cleanup() {
    if [[ -n "$manager_pid" ]]; then
        # SIGTERM: the user manager stops its units and exits.
        kill -TERM "$manager_pid" 2>/dev/null
        for _ in $(seq 100); do
            kill -0 "$manager_pid" 2>/dev/null || break
            sleep 0.05
        done
        wait "$manager_pid" 2>/dev/null
    fi
    if [[ -d "$slice" ]]; then
        echo 1 >"$slice/cgroup.kill" 2>/dev/null
        for _ in $(seq 50); do
            grep -q '^populated 0' "$slice/cgroup.events" 2>/dev/null && break
            sleep 0.05
        done
        find "$slice" -depth -type d -exec rmdir {} + 2>/dev/null || say "could not remove $slice"
    fi
    ((made_booted == 0)) || rmdir /run/systemd/system /run/systemd 2>/dev/null
    rm -rf -- "$runtime" "$home"
}
trap cleanup EXIT

mkdir "$slice" "$manager_cg" "$session" || { say "cannot create $slice"; exit 125; }
for c in memory pids cpu; do
    echo "+$c" >"$slice/cgroup.subtree_control" || { say "cannot enable $c in $slice"; exit 125; }
done
chown "$uid:$gid" "$manager_cg" "$manager_cg"/cgroup.{procs,subtree_control,threads} ||
    { say "cannot delegate $manager_cg"; exit 125; }
mkdir -p -m 0700 "$runtime" "$home/home" "$home/tmp" && chown -R "$uid:$gid" "$runtime" "$home" ||
    { say "cannot make $runtime"; exit 125; }
if [[ ! -d /run/systemd/system ]]; then
    mkdir -p /run/systemd/system && made_booted=1
fi

user_env=(PATH="$PATH" HOME="$home/home" TMPDIR="$home/tmp" USER="$user" LOGNAME="$user"
    LANG=C.UTF-8 TERM=dumb XDG_RUNTIME_DIR="$runtime")
start=$(cut -d' ' -f1 /proc/uptime)
(
    echo "$BASHPID" >"$manager_cg/cgroup.procs" || exit 125
    exec setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all,+dac_override \
        --ambient-caps=-all,+dac_override --bounding-set=-all,+dac_override -- \
        env -i "${user_env[@]}" /usr/lib/systemd/systemd --user --log-target=console --log-level=warning
) </dev/null >"$home/manager.log" 2>&1 &
manager_pid=$!
# The private socket is the manager's first one (systemctl --user talks to it).
for _ in $(seq 600); do
    [[ -S "$runtime/systemd/private" ]] && break
    kill -0 "$manager_pid" 2>/dev/null || break
    sleep 0.05
done
if [[ ! -S "$runtime/systemd/private" ]]; then
    say "systemd --user did not come up (no $runtime/systemd/private); its log:"
    sed 's/^/    /' "$home/manager.log" >&2
    exit 125
fi
say "systemd --user (pid $manager_pid) up in $(awk -v s="$start" -v e="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", e - s }') s, cgroup ${manager_cg#"$cg"}"

keep_env=()
while read -r line; do
    name=${line#export }
    name=${name%%=*}
    [[ -n "${!name+x}" ]] && keep_env+=("$name=${!name}")
done </.aj/ctl/env
[[ -z "${AGENTJAIL_IN_VM:-}" ]] || keep_env+=(AGENTJAIL_IN_VM="$AGENTJAIL_IN_VM")

rc=0
(
    echo "$BASHPID" >"$session/cgroup.procs" || exit 125
    exec setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all --bounding-set=-all -- \
        env -i "${user_env[@]}" AJVM_SYSTEMD_USER=1 AJVM_USER_MANAGER_CGROUP="$manager_cg" "${keep_env[@]}" "$@"
) || rc=$?

# Every scope agentjail asked for must be gone with its run.
left=$(find "$manager_cg" -type d -name 'agentjail-*.scope' 2>/dev/null)
if [[ -n "$left" ]]; then
    say "scopes left behind: $(echo $left)"
    ((rc != 0)) || rc=1
fi
if grep -q '^populated 1' "$session/cgroup.events"; then
    say "processes left in $session: $(cat "$session/cgroup.procs" | tr '\n' ' ')"
    ((rc != 0)) || rc=1
fi
if [[ -s "$home/manager.log" ]]; then
    say "the manager's warnings:"
    sed 's/^/    /' "$home/manager.log" >&2
fi
exit "$rc"
