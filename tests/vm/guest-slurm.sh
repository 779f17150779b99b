#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# In the test guest (cgroup v2 alone): a real, throwaway Slurm from the host's
# slurm-wlm (munged, slurmctld, one slurmd) with cgroup/v2, task/cgroup,
# proctrack/cgroup and jobacct_gather/cgroup, and the SPANK plugin; checks that a task
# past its --mem is reported as such by Slurm (OUT_OF_MEMORY) and by agentjail's
# record (ML) at once, which a cgroup v1/v2 hybrid host cannot show (docs/slurm.md).
# Prints one line per check, "PASS|FAIL|SKIP name detail", for guest-suite.sh; tears
# down everything it started (daemons by pid, Slurm's cgroups, the address on lo, the
# scratch directory). Exit status 0 unless the setup itself failed.
#
# Usage (in the guest, as root): guest-slurm.sh BUILD_DIR
# Why root's jobs, mostly: the guest's /etc is the host's, read-only, so no user can be
# added; and Slurm 22.05 makes the step's cgroups root's, so only a task of root's can
# place agentjail's group below them. The one user check runs as nobody.
set -uo pipefail
build=${1:?usage: guest-slurm.sh BUILD_DIR}
slurm_dir=$build/lib/agentjail/slurm
say() { printf '%s\n' "$*"; }
skip_all() {
    say "SKIP slurm $*"
    exit 0
}

[[ "${AGENTJAIL_IN_VM:-0}" == 1 ]] || { echo "guest-slurm.sh: only in the test guest (it writes /sys/fs/cgroup)" >&2; exit 2; }
[[ -f "$slurm_dir/spank_agentjail.so" && -x "$slurm_dir/agentjail-slurm-task" ]] ||
    skip_all "the SPANK plugin was not built (<slurm/spank.h> missing when the build was configured: libslurm-dev)"
for cmd in slurmctld slurmd srun scontrol sinfo munged mungekey python3 runuser; do
    command -v "$cmd" >/dev/null 2>&1 || skip_all "$cmd is not installed on the host, whose /usr the guest shares (slurm-wlm, munge)"
done

cg=/sys/fs/cgroup
scratch=$(mktemp -d /tmp/agentjail-slurm.XXXXXX)
chmod 0755 "$scratch"
pids=() made_slice=0 lo_addr=""
# shellcheck disable=SC2317 # invoked by the trap
cleanup() {
    local p d
    trap - EXIT
    ((${#pids[@]} == 0)) || kill -TERM "${pids[@]}" 2>/dev/null
    for p in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null
    done
    # slurmstepds outlive slurmd for a moment: everything left in Slurm's scope.
    if [[ -d $cg/system.slice/n1_slurmstepd.scope ]]; then
        echo 1 >"$cg/system.slice/n1_slurmstepd.scope/cgroup.kill" 2>/dev/null
        for _ in $(seq 50); do
            grep -q '^populated 0' "$cg/system.slice/n1_slurmstepd.scope/cgroup.events" && break
            sleep 0.1
        done
        find "$cg/system.slice/n1_slurmstepd.scope" -depth -type d -exec rmdir {} \; 2>/dev/null
        [[ ! -d $cg/system.slice/n1_slurmstepd.scope ]] || say "FAIL slurm.teardown could not remove $cg/system.slice/n1_slurmstepd.scope"
    fi
    ((made_slice == 0)) || rmdir "$cg/system.slice" 2>/dev/null
    [[ -z "$lo_addr" ]] || ip addr del "$lo_addr" dev lo 2>/dev/null
    rm -rf -- "$scratch"
}
trap cleanup EXIT

# ---- the cluster ----
# glibc's getaddrinfo(AI_ADDRCONFIG), which Slurm uses, answers nothing for
# "localhost" on a machine with no IPv4 address but loopback ones: give lo one more.
lo_addr=10.254.254.1/32
ip addr add "$lo_addr" dev lo || { lo_addr=""; skip_all "cannot add an address to lo"; }
# Slurm's cgroup/v2 without systemd (IgnoreSystemd) makes its scope below system.slice,
# which must exist and pass the controllers down, as systemd's would.
if [[ ! -d $cg/system.slice ]]; then
    mkdir "$cg/system.slice" && made_slice=1
fi
echo "+cpuset +cpu +memory +pids" >"$cg/system.slice/cgroup.subtree_control" ||
    skip_all "cannot enable the controllers in $cg/system.slice"

mkdir -p "$scratch"/{etc,state,log,run,spool/n1,munge,msock,work,records}
chmod 0700 "$scratch/munge"
mungekey -c -k "$scratch/munge/munge.key"
socket=$scratch/msock/munge.socket
munged -F -S "$socket" --key-file="$scratch/munge/munge.key" --pid-file="$scratch/run/munged.pid" \
    --seed-file="$scratch/munge/seed" --log-file="$scratch/log/munged.log" >/dev/null 2>&1 &
pids+=($!)
conf=$scratch/etc/slurm.conf
# shellcheck source=tests/slurm/slurm-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../slurm/slurm-common.sh"
write_slurm_conf "$conf" ajvm "$scratch" "$socket" 6817 tests/vm/guest-slurm.sh <<EOF
SlurmdPort=6818
NodeName=n1 NodeHostname=localhost CPUs=2 RealMemory=1500 State=UNKNOWN
PartitionName=test Nodes=n1 Default=YES MaxTime=INFINITE State=UP
EOF
# IgnoreSystemd: Slurm 22.05's cgroup/v2 otherwise asks systemd (over D-Bus) for its
# scope; the guest runs no systemd.
cat >"$scratch/etc/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v2
IgnoreSystemd=yes
ConstrainRAMSpace=yes
ConstrainSwapSpace=yes
EOF
echo "required $slurm_dir/spank_agentjail.so wrapper=$slurm_dir/agentjail-slurm-task" >"$scratch/etc/plugstack.conf"
chmod -R a+rX "$scratch/etc"
export SLURM_CONF=$conf

for _ in $(seq 100); do [[ -S "$socket" ]] && break; sleep 0.2; done
[[ -S "$socket" ]] || { say "FAIL slurm.cluster munged did not start: $(tail -n 3 "$scratch/log/munged.log" | tr '\n' ' ')"; exit 1; }
slurmctld -D -i >"$scratch/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N n1 >"$scratch/log/slurmd.out" 2>&1 &
slurmd_pid=$!
pids+=("$slurmd_pid")
start=$SECONDS
until [[ "$(sinfo -h -o '%T' 2>/dev/null)" == idle ]]; do
    if ((SECONDS - start > 120)) || ! kill -0 "$slurmd_pid" 2>/dev/null; then
        say "FAIL slurm.cluster not idle after $((SECONDS - start)) s: $(grep -h 'error' "$scratch"/log/slurmd*.log "$scratch/log/slurmd.out" 2>/dev/null | grep -v pmix | tail -n 3 | tr '\n' ' ')"
        exit 1
    fi
    sleep 0.5
done
say "PASS slurm.cluster munged, slurmctld and slurmd (cgroup/v2) up in $((SECONDS - start)) s"

# ---- helpers ----
work=$scratch/work
hog='import sys; b = b"x" * (int(sys.argv[1]) << 20); print("allocated", len(b) >> 20, "MiB")'
printf 'extends = "default"\n[limits]\nmemory = "1G"\n' >"$work/mem.toml"
field() {
    python3 -c '
import json, sys
v = json.loads(sys.argv[1])
for k in sys.argv[2].split("."):
    v = v.get(k) if isinstance(v, dict) else None
print(v)' "$1" "$2"
}
record_of() {
    local f=$2/$1
    for _ in $(seq 50); do [[ -s "$f" ]] && break; sleep 0.1; done
    [[ -s "$f" ]] && cat "$f"
}
# srun as root in the workspace; the records go outside it, to $scratch/records (the
# library writes them there). A hung step cannot hold the guest past its deadline.
run() {
    (cd "$work" && env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root USER=root LANG=C.UTF-8 \
        SLURM_CONF="$conf" AGENTJAIL_SLURM_RESULT_DIR="$scratch/records" timeout 180 srun -N1 -n1 "$@" 2>&1)
}
result() { say "$1 slurm.$2 ${*:3}"; }

# ---- checks ----

# Control: under both limits (Slurm's 64M, the policy's 1G) 16 MiB run, in a group of
# agentjail's below the step's.
rc=0
out=$(run --mem=64M --agentjail=mem.toml sh -c 'echo "job $SLURM_JOB_ID"; exec python3 -c "$1" 16' sh "$hog") || rc=$?
job=$(sed -n 's/^job //p' <<<"$out")
rec=$(record_of "agentjail-$job.0.0.json" "$scratch/records" || true)
if ((rc == 0)) && grep -q 'allocated 16' <<<"$out" && [[ "$(field "$rec" status)" == OK ]] &&
    [[ "$(field "$rec" layers.cgroup) $(field "$rec" layers.cgroup_via)" == "v2 given-cgroup" ]]; then
    result PASS control-16M "status 0, record OK, agentjail's v2 group below the step's (given-cgroup)"
else
    result FAIL control-16M "status $rc, record '$rec': $out"
fi

# 256 MiB under --mem=64M: the kernel's OOM killer ends the command inside agentjail's
# group; memory.events counts the kill there and up the tree, in the step's group,
# which Slurm reads.
rc=0
out=$(run --mem=64M --agentjail=mem.toml sh -c 'echo "job $SLURM_JOB_ID"; exec python3 -c "$1" 256' sh "$hog") || rc=$?
job=$(sed -n 's/^job //p' <<<"$out")
state=$(final_state "$job")
rec=$(record_of "agentjail-$job.0.0.json" "$scratch/records" || true)
if [[ "$state" == OUT_OF_MEMORY ]]; then
    result PASS slurm-state "job $job OUT_OF_MEMORY in scontrol show job (srun status $rc)"
else
    result FAIL slurm-state "job $job state '$state', srun status $rc: $out"
fi
if grep -q "JobId=$job .*JobState=OUT_OF_MEMORY" "$scratch/log/jobcomp.txt" 2>/dev/null; then
    result PASS slurm-jobcomp "the job completion log says OUT_OF_MEMORY"
else
    result FAIL slurm-jobcomp "$(grep "JobId=$job " "$scratch/log/jobcomp.txt" 2>/dev/null)"
fi
if grep -q "oom-kill event" <<<"$out"; then
    result PASS slurm-srun "srun relays slurmstepd's '$(grep -o 'Detected [0-9]* oom-kill event(s) in StepId=[0-9.]*' <<<"$out" | head -n1)'"
else
    result FAIL slurm-srun "no oom-kill event in srun's output: $out"
fi
if [[ -n "$rec" ]] && [[ "$(field "$rec" status) $(field "$rec" exit_status)" == "ML 137" ]] &&
    (($(field "$rec" oom_kill_count) >= 1)) && [[ "$(field "$rec" layers.cgroup_via)" == given-cgroup ]]; then
    result PASS record-ML "status ML, exit status 137, oom_kill_count $(field "$rec" oom_kill_count), in $(field "$rec" layers.cgroup)"
else
    result FAIL record-ML "record of job $job: '$rec'"
fi

# The default policy caps nothing, so agentjail makes no group of its own and has no
# OOM kill to count: Slurm says OUT_OF_MEMORY, the record a SIGKILL (docs/slurm.md).
rc=0
out=$(run --mem=64M --agentjail=default sh -c 'echo "job $SLURM_JOB_ID"; exec python3 -c "$1" 256' sh "$hog") || rc=$?
job=$(sed -n 's/^job //p' <<<"$out")
state=$(final_state "$job")
rec=$(record_of "agentjail-$job.0.0.json" "$scratch/records" || true)
if [[ "$state" == OUT_OF_MEMORY && -n "$rec" && "$(field "$rec" status) $(field "$rec" signal) $(field "$rec" exit_status)" == "SG 9 137" ]]; then
    result PASS default-policy "Slurm OUT_OF_MEMORY, the record SG, signal 9, 137 (no cap, no group of agentjail's)"
else
    result FAIL default-policy "job $job state '$state', srun status $rc, record '$rec': $out"
fi

# A task of another user: Slurm's step groups are root's, so agentjail's group cannot
# go below them; a policy with a cap is refused (125, fail closed), not run with less.
userwork=$scratch/userwork
install -d -o nobody -m 0755 "$userwork"
cp "$work/mem.toml" "$userwork/"
rc=0
out=$(cd "$userwork" && runuser -u nobody -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/nonexistent \
    LANG=C.UTF-8 SLURM_CONF="$conf" timeout 180 srun -N1 -n1 --mem=64M --agentjail=mem.toml touch ran 2>&1) || rc=$?
if ((rc == 125)) && [[ ! -e "$userwork/ran" ]] && grep -q 'not writable.*\[stage prepare, EPERM\]' <<<"$out"; then
    result PASS user-refused "nobody's capped task: 125, not run: $(grep -o 'the cgroup [^ ]* is not writable by uid [0-9]*' <<<"$out" | head -n1)"
else
    result FAIL user-refused "status $rc, ran: $([[ -e "$userwork/ran" ]] && echo yes || echo no): $out"
fi
exit 0
