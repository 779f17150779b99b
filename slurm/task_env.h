/* SPDX-License-Identifier: Apache-2.0 */
/* The environment variables through which spank_agentjail.so hands a task to
 * agentjail-slurm-task: the two programs' only interface, so both include it. */
#ifndef AGENTJAIL_SLURM_TASK_ENV_H
#define AGENTJAIL_SLURM_TASK_ENV_H

/* The task's own argv[0]: slurmstepd's argv array cannot grow, so the plugin puts the
 * wrapper in argv[0]'s place and the program it replaced travels here. */
#define AJ_SLURM_ENV_ARGV0 "AGENTJAIL_SLURM_ARGV0"
/* --agentjail=POLICY: a built-in policy name or a policy file. */
#define AJ_SLURM_ENV_POLICY "AGENTJAIL_SLURM_POLICY"
/* The directory the result record goes to: the plugin's result_dir= argument, else
 * the job's own value (the user's choice), else the task's working directory. */
#define AJ_SLURM_ENV_RESULT_DIR "AGENTJAIL_SLURM_RESULT_DIR"
/* The record's file name, made of the job, step and task ids by the plugin, which
 * has them as numbers (spank_get_item) rather than as strings the job could set. */
#define AJ_SLURM_ENV_RECORD "AGENTJAIL_SLURM_RECORD"
/* "1" for a batch script: the script lives in slurmd's spool directory, which the
 * sandbox does not otherwise see, so the wrapper binds it read-only. */
#define AJ_SLURM_ENV_BIND_ARGV0 "AGENTJAIL_SLURM_BIND_ARGV0"

#endif /* AGENTJAIL_SLURM_TASK_ENV_H */
