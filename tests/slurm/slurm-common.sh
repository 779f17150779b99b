# SPDX-License-Identifier: Apache-2.0
# Sourced by tests/slurm/slurm-test.sh (on this host) and tests/vm/guest-slurm.sh (in
# the cgroup v2 guest): the slurm.conf both throwaway clusters share, and how both
# read a job's state.
#
# write_slurm_conf FILE CLUSTER SCRATCH SOCKET CTLD_PORT ORIGIN < node-lines
#   FILE: where; CLUSTER: its name; SCRATCH: the directory of its state, spool, logs
#   and plugstack.conf; SOCKET: munged's; CTLD_PORT: slurmctld's; ORIGIN: the script,
#   for the header. The nodes and the partition (what differs) come on stdin.
write_slurm_conf() {
    local file=$1 cluster=$2 scratch=$3 socket=$4 port=$5 origin=$6
    {
        cat <<CONF
# A throwaway cluster of $origin.
ClusterName=$cluster
SlurmctldHost=localhost
SlurmctldPort=$port
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$scratch/state
SlurmdSpoolDir=$scratch/spool/%n
SlurmctldPidFile=$scratch/run/slurmctld.pid
SlurmdPidFile=$scratch/run/slurmd-%n.pid
SlurmctldLogFile=$scratch/log/slurmctld.log
SlurmdLogFile=$scratch/log/slurmd-%n.log
PlugStackConfig=$scratch/etc/plugstack.conf
# Memory as a consumable resource, enforced by task/cgroup (cgroup.conf beside this).
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=200
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
JobAcctGatherType=jobacct_gather/cgroup
JobAcctGatherFrequency=1
# No slurmdbd (sacct needs it): completed jobs, with their state (OUT_OF_MEMORY,
# TIMEOUT), go to a file.
JobCompType=jobcomp/filetxt
JobCompLoc=$scratch/log/jobcomp.txt
MpiDefault=none
SchedulerType=sched/builtin
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=5
OverTimeLimit=0
InactiveLimit=0
MinJobAge=600
CONF
        cat
    } >"$file"
}

# job_field JOB NAME: one field of `scontrol show job`.
job_field() { scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n1; }

# final_state JOB: the job's state once Slurm has finished with it (srun may return
# while it is still COMPLETING), after a wait of up to 20 s.
final_state() {
    local st
    for _ in $(seq 100); do
        st=$(job_field "$1" JobState)
        [[ "$st" == COMPLETING || "$st" == RUNNING ]] || break
        sleep 0.2
    done
    echo "$st"
}
