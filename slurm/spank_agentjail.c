/* SPDX-License-Identifier: Apache-2.0 */
/* spank_agentjail.so: the SPANK plugin behind `srun --agentjail=POLICY` and
 * `sbatch --agentjail=POLICY`, which makes slurmstepd's own exec of each task run
 * agentjail-slurm-task in the program's place.
 *
 * plugstack.conf:
 *   required /usr/lib/x86_64-linux-gnu/agentjail/slurm/spank_agentjail.so [wrapper=PATH]
 * [result_dir=DIR]
 *
 * Why argv[0] and not execve() from the plugin: Slurm 22.05's slurmstepd execs
 * S_JOB_ARGV after task_init, so replacing argv[0] keeps everything Slurm does around
 * the exec (task prologs, TMPDIR, PATH lookup, limits, later plugins) and the exit
 * status passes straight through (spank_prepend_task_argv() exists only from 23.02).
 * The array cannot grow: the original program travels in the environment
 * (slurm/task_env.h).
 *
 * Fail closed: when the plugin cannot hand the task to the wrapper it refuses the
 * task; it never lets the program run without the sandbox that was asked for.
 * The plugin is plain C against <slurm/spank.h> and <slurm/slurm.h> (for the step id
 * constants) and links nothing: slurmstepd provides the spank_* symbols. */
/* strdup, getrandom, signalfd, PATH_MAX: POSIX and Linux, whatever -std the build uses. */
#define _GNU_SOURCE
#include "task_env.h"

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* No semicolon: the macro ends in one, and ISO C (-pedantic) refuses an empty declaration. */
SPANK_PLUGIN(agentjail, 1)

#ifndef AJ_SLURM_WRAPPER_DEFAULT
#error "AJ_SLURM_WRAPPER_DEFAULT (the installed agentjail-slurm-task) must be defined"
#endif

/* Set by the option callback; NULL: the job did not ask for a sandbox. */
static char *opt_policy;
/* Plugin arguments (plugstack.conf). Static storage: the wrapper's path becomes the
 * task's argv[0], which must outlive task_init until slurmstepd's execve. */
static char wrapper[PATH_MAX] = AJ_SLURM_WRAPPER_DEFAULT;
static char result_dir[PATH_MAX];

/* A policy name or path as the option gives it: non-empty, of sane length, and with
 * no control character (it is printed in error lines and passed in the environment). */
static int policy_ok(const char *s) {
    size_t n = s != NULL ? strlen(s) : 0;
    if (n == 0 || n >= PATH_MAX) return 0;
    for (size_t i = 0; i < n; ++i)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) return 0;
    return 1;
}

static int opt_agentjail(int val, const char *arg, int remote) {
    (void)val;
    (void)remote;
    if (!policy_ok(arg)) {
        slurm_error(
            "agentjail: --agentjail needs a policy: a built-in name (default, ci, ...) "
            "or a policy file");
        return -1;
    }
    free(opt_policy);
    opt_policy = strdup(arg);
    return opt_policy != NULL ? 0 : -1;
}

static struct spank_option option = {
    "agentjail",
    "POLICY",
    "Run each task inside an agentjail sandbox built from POLICY (a built-in policy such as "
    "default or ci, or a policy file); the result record goes to the task's working directory.",
    1,
    0,
    opt_agentjail};

/* KEY=VALUE into buf; 0 when arg is not KEY=, -1 when the value does not fit. */
static int plugin_arg(const char *arg, const char *key, char *buf, size_t size) {
    size_t k = strlen(key);
    if (strncmp(arg, key, k) != 0 || arg[k] != '=') return 0;
    int n = snprintf(buf, size, "%s", arg + k + 1);
    return n >= 0 && (size_t)n < size ? 1 : -1;
}

int slurm_spank_init(spank_t sp, int ac, char **av) {
    for (int i = 0; i < ac; ++i) {
        int r = plugin_arg(av[i], "wrapper", wrapper, sizeof wrapper);
        if (r == 0) r = plugin_arg(av[i], "result_dir", result_dir, sizeof result_dir);
        if (r <= 0) {
            slurm_error(
                "agentjail: plugstack.conf: %s argument %s (known: wrapper=PATH, "
                "result_dir=DIR)",
                r < 0 ? "too long an" : "unknown", av[i]);
            return -1;
        }
    }
    /* Absolute paths only: slurmstepd would otherwise look the wrapper up in the job's
     * PATH, which the job controls. */
    if (wrapper[0] != '/' || (result_dir[0] != '\0' && result_dir[0] != '/')) {
        slurm_error("agentjail: plugstack.conf: wrapper= and result_dir= need absolute paths");
        return -1;
    }
    /* spank_option_register, not a spank_options table: only it reaches sbatch and
     * salloc (the allocator context) as well as srun. */
    if (spank_option_register(sp, &option) != ESPANK_SUCCESS) {
        slurm_error("agentjail: cannot register --agentjail");
        return -1;
    }
    return 0;
}

/* Refuses the task: slurmstepd then ends it before its execve. */
static int refuse(const char *why, const char *what) {
    slurm_error("agentjail: the task was not started: %s%s", why, what != NULL ? what : "");
    return -1;
}

/* The record's file name from the ids slurmstepd holds: agentjail-JOB.STEP.TASK.json,
 * agentjail-ARRAYJOB_INDEX.STEP.TASK.json for an array task; STEP "batch" for the
 * batch script. */
static int record_name(spank_t sp, char *buf, size_t size, int *batch) {
    uint32_t job = 0, step = 0, task = 0, array_job = 0, array_task = 0;
    if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_TASK_GLOBAL_ID, &task) != ESPANK_SUCCESS)
        return -1;
    if (spank_get_item(sp, S_JOB_ARRAY_ID, &array_job) != ESPANK_SUCCESS) array_job = 0;
    if (spank_get_item(sp, S_JOB_ARRAY_TASK_ID, &array_task) != ESPANK_SUCCESS) array_task = 0;
    char step_s[16];
    *batch = step == SLURM_BATCH_SCRIPT;
    if (*batch)
        snprintf(step_s, sizeof step_s, "batch");
    else
        snprintf(step_s, sizeof step_s, "%u", step);
    /* 22.05 gives a job that is not an array its own id as S_JOB_ARRAY_ID and NO_VAL
     * as the task id, not the 0 spank.h promises. */
    int array = array_job != 0 && array_task != NO_VAL;
    int n = array ? snprintf(buf, size, "agentjail-%u_%u.%s.%u.json", array_job, array_task, step_s,
                             task)
                  : snprintf(buf, size, "agentjail-%u.%s.%u.json", job, step_s, task);
    return n >= 0 && (size_t)n < size ? 0 : -1;
}

/* Each task, in the task's own process, as the job's user, just before slurmstepd
 * execs S_JOB_ARGV. */
int slurm_spank_task_init(spank_t sp, int ac, char **av) {
    (void)ac;
    (void)av;
    if (!spank_remote(sp) || opt_policy == NULL) return 0;

    int argc = 0;
    char **argv = NULL;
    if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS || argc < 1 ||
        argv == NULL || argv[0] == NULL)
        return refuse("cannot read the task's command (S_JOB_ARGV)", NULL);
    /* Checked as the job's user, whom slurmstepd already switched to: a wrapper that
     * user cannot run would otherwise fail only at execve, with Slurm's message. */
    if (access(wrapper, X_OK) != 0) return refuse("cannot execute the sandbox's wrapper ", wrapper);

    char name[128];
    int batch = 0;
    if (record_name(sp, name, sizeof name, &batch) != 0)
        return refuse("cannot read the job, step and task ids", NULL);

    /* Overwrite: a job's own AGENTJAIL_SLURM_* must not choose the program or the
     * record's name; the wrapper takes these from this plugin only. */
    if (spank_setenv(sp, AJ_SLURM_ENV_ARGV0, argv[0], 1) != ESPANK_SUCCESS ||
        spank_setenv(sp, AJ_SLURM_ENV_POLICY, opt_policy, 1) != ESPANK_SUCCESS ||
        spank_setenv(sp, AJ_SLURM_ENV_RECORD, name, 1) != ESPANK_SUCCESS ||
        spank_setenv(sp, AJ_SLURM_ENV_BIND_ARGV0, batch ? "1" : "0", 1) != ESPANK_SUCCESS)
        return refuse("cannot set the task's environment", NULL);
    /* The site's result_dir= wins over the job's own AGENTJAIL_SLURM_RESULT_DIR, which
     * is the user's choice of a directory of theirs where the site set none. */
    if (result_dir[0] != '\0' &&
        spank_setenv(sp, AJ_SLURM_ENV_RESULT_DIR, result_dir, 1) != ESPANK_SUCCESS)
        return refuse("cannot set the task's environment", NULL);
    /* The old argv[0] is slurmstepd's and stays allocated; this process execs next. */
    argv[0] = wrapper;
    return 0;
}
