#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# PID 1 of the test guest, second stage (on the real root, see guest-init.sh): runs the
# host's command as root (then the user command, if any), writes the exit statuses to
# the control share and powers off. Builtins only, besides the command: execs are slow.
B=/.aj/busybox
ctl=/.aj/ctl
# bash as PID 1 gets no default signal dispositions: a stray SIGTERM must not end it.
trap '' TERM HUP INT

# The command's environment: a fresh one, plus what the host passed with --env.
for v in $(compgen -e); do
    unset "$v"
done
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root USER=root LOGNAME=root TERM=dumb LANG=C.UTF-8 AGENTJAIL_IN_VM=1
export AJVM_AS_USER=/.aj/guest-as-user.sh
export AJVM_USER_MANAGER=/.aj/guest-user-manager.sh
# shellcheck source=/dev/null
. "$ctl/env"
# shellcheck source=/dev/null
. "$ctl/config"

if cd "$AJVM_CWD"; then
    # The command line was %q-quoted by the host: eval restores it word for word. A
    # subshell, so that an exec or an exit in it cannot end PID 1.
    (eval "exec $(<"$ctl/command")") </dev/null
    echo $? >"$ctl/rc"
else
    echo 125 >"$ctl/rc"
fi

if [[ "$AJVM_HAS_USER_COMMAND" == 1 ]]; then
    cd / && "$AJVM_AS_USER" bash -c "$(<"$ctl/user-command")" </dev/null
    echo $? >"$ctl/user-rc"
fi
cd /
$B sync
# Not even the kernel's "reboot: Power down": the console's last line is the command's.
[[ "${AJVM_VERBOSE:-0}" == 1 ]] || echo 0 >/proc/sys/kernel/printk
$B poweroff -f
