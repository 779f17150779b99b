/* SPDX-License-Identifier: Apache-2.0 */
/* agentjail-slurm-task: runs one Slurm task inside an agentjail sandbox through the
 * C API, writes its result record and exits with the status agentjail's CLI gives.
 *
 * slurmstepd executes it in the task program's place (spank_agentjail.so put it in
 * argv[0]), already as the job's user and group, in the task's working directory,
 * with the job's environment, its stdio and its cgroups; slurm/task_env.h names what
 * the plugin passes. This is the only file of the Slurm integration that calls the C
 * API.
 *
 * Exit status (README, "Exit status"): agentjail's for the run (aj_result_exit_status:
 * the command's own, 128+N for signal N, 124 when the policy's timeout ended it (TO),
 * 137 when agentjail's memory limit did (ML)); 125 when the sandbox could not be made
 * or the record not written, 126/127 when the command could not be executed / was not
 * found. Fail closed: on any error before the command started, it never runs, and
 * stderr gets one line saying why. */
/* strdup, getrandom, signalfd, strerrorname_np, PATH_MAX: POSIX and Linux, whatever
 * -std the build uses. */
#define _GNU_SOURCE
#include "task_env.h"

#include <agentjail/agentjail.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

enum { EXIT_SETUP = 125, EXIT_NOEXEC = 126, EXIT_NOTFOUND = 127 };

static const char prog[] = "agentjail-slurm-task";

/* printf-like, so the compiler checks every caller's format against its arguments. */
__attribute__((format(printf, 2, 3))) static int die(int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return status;
}

/* One line for a C API error, and the exit status its code stands for. The stage and
 * errno go at the end, in brackets: a site's log filter can tell a node's problem
 * (prepare, launch, sandbox: EBUSY, ENOMEM...) from the job's own (policy, plan, exec)
 * without parsing the message. */
static int die_aj(aj_error *err, const char *what) {
    int code = aj_error_code(err);
    int status = code == AJ_ENOTFOUND ? EXIT_NOTFOUND
                 : code == AJ_ENOEXEC ? EXIT_NOEXEC
                                      : EXIT_SETUP;
    int e = aj_error_errno(err);
    const char *ename = e != 0 ? strerrorname_np(e) : NULL;
    char errno_part[48] = "";
    if (e != 0) snprintf(errno_part, sizeof errno_part, ", %s", ename != NULL ? ename : "errno");
    if (e != 0 && ename == NULL) snprintf(errno_part, sizeof errno_part, ", errno %d", e);
    die(status, "%s: %s [stage %s%s]", what, aj_error_message(err),
        aj_stage_name(aj_error_stage(err)), errno_part);
    aj_error_free(err);
    return status;
}

/* The variable's value, copied, and removed from the environment: the sandbox's
 * environment is the job's as the policy filters it, and these are the plugin's. */
static char *take_env(const char *name) {
    const char *v = getenv(name);
    char *copy = v != NULL ? strdup(v) : NULL;
    unsetenv(name);
    return copy;
}

/* Slurm's own description of the task, which array tasks and MPI-style programs read
 * (which index am I, how many are we). None is a secret; the policy's environment
 * filter does not know them, so they are passed by name when set. */
static const char *const slurm_vars[] = {
    "SLURM_JOB_ID",           "SLURM_JOB_NAME",       "SLURM_ARRAY_JOB_ID",   "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX", "SLURM_STEP_ID",
    "SLURM_PROCID",           "SLURM_LOCALID",        "SLURM_NODEID",         "SLURM_NTASKS",
    "SLURM_NNODES",           "SLURM_CPUS_ON_NODE",   "SLURM_CPUS_PER_TASK",  "SLURM_MEM_PER_NODE",
    "SLURM_MEM_PER_CPU",      "SLURMD_NODENAME",      "SLURM_SUBMIT_DIR",     NULL};

/* SIGTERM from scancel or the time limit, SIGINT from srun's Ctrl-C and the rest go to
 * the command; this program stays to write the record. Blocked before aj_spawn so the
 * library's threads inherit the mask (the command unblocks everything before execve). */
static void forwarded_signals(sigset_t *set) {
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGQUIT);
    sigaddset(set, SIGUSR1);
    sigaddset(set, SIGUSR2);
}

/* Waits for the sandbox's end, passing on the signals Slurm sends meanwhile. */
static int wait_forwarding(aj_sandbox *sb, int sigfd) {
    struct pollfd fds[2] = {{aj_sandbox_pidfd(sb), POLLIN, 0}, {sigfd, POLLIN, 0}};
    for (;;) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        if (fds[0].revents != 0) return 0;
        struct signalfd_siginfo si;
        if (fds[1].revents != 0 && read(sigfd, &si, sizeof si) == (ssize_t)sizeof si)
            (void)aj_sandbox_kill(sb, (int)si.ssi_signo, NULL); /* fails only once it ended */
    }
}

/* Takes or drops the workspace's lock. agentjail's direct mode makes placeholders on
 * the host for protected names that do not exist yet (.claude/settings.json, ...)
 * and removes them after the run; sandboxes started at once in one workspace (an
 * array, srun -n N) race on them at setup and teardown (ENOENT when one run removes
 * a placeholder another is binding), so those two phases take turns here. The run
 * itself is not serialised: a placeholder another task removes meanwhile is guarded
 * again by this run's own guard watch. Best effort: where the filesystem has no
 * locks (NFS without a lock manager) the tasks go on unlocked, and a lost race fails
 * the launch closed, with its message. */
static void workspace_lock(int fd, int op) {
    while (fd >= 0 && flock(fd, op) != 0 && errno == EINTR) {
    }
}

/* Writes the record as DIR/NAME when it goes to the workspace, where the library's
 * result_path refuses it (a directory the sandbox can write). Into a fresh name first
 * (NAME.RANDOM.tmp), then renamed over NAME, so a reader never sees half a record, and
 * whatever the command left at NAME (a file, a link) is replaced, never written
 * through. Every process of the sandbox is gone by now, so nothing of it races this.
 * The fresh name starts like NAME, not with a dot: the default policy protects
 * .agentjail* at any depth, and another task's setup would plan a guard for a
 * dot-name about to go. */
static int write_record(int dirfd, const char *name, const char *record) {
    unsigned char rnd[8];
    char tmp[NAME_MAX + 1];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) return -errno;
    int n = snprintf(tmp, sizeof tmp, "%s.", name);
    for (size_t i = 0; n > 0 && (size_t)n + 2 < sizeof tmp && i < sizeof rnd; ++i)
        n += snprintf(tmp + n, sizeof tmp - (size_t)n, "%02x", rnd[i]);
    if (n < 0 || (size_t)n + sizeof ".tmp" > sizeof tmp) return -ENAMETOOLONG;
    memcpy(tmp + n, ".tmp", sizeof ".tmp");
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) return -errno;
    size_t len = strlen(record), off = 0;
    int rc = 0;
    while (rc == 0 && off < len) {
        ssize_t w = write(fd, record + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0)
            rc = w < 0 ? -errno : -EIO;
        else
            off += (size_t)w;
    }
    if (rc == 0 && write(fd, "\n", 1) != 1) rc = -EIO;
    if (close(fd) != 0 && rc == 0) rc = -errno;
    if (rc == 0 && renameat(dirfd, tmp, dirfd, name) != 0) rc = -errno;
    if (rc != 0) unlinkat(dirfd, tmp, 0);
    return rc;
}

/* 1 when the directory dirfd is wsfd's or lies below it, by identity: the walk goes
 * up through "..", so another spelling of the workspace's path is caught too. */
static int inside(int dirfd, int wsfd) {
    struct stat ws, cur, up;
    if (fstat(wsfd, &ws) != 0) return 0;
    int fd = dup(dirfd);
    for (int depth = 0; fd >= 0 && depth < 4096; ++depth) {
        int next = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
        int same_ws = fstat(fd, &cur) == 0 && cur.st_dev == ws.st_dev && cur.st_ino == ws.st_ino;
        int top = next < 0 ||
                  (fstat(next, &up) == 0 && up.st_dev == cur.st_dev && up.st_ino == cur.st_ino);
        close(fd);
        fd = next;
        if (same_ws || top) {
            if (fd >= 0) close(fd);
            return same_ws;
        }
    }
    if (fd >= 0) close(fd);
    return 0;
}

/* Where the run's cgroup goes, when the policy's limits need one (docs/slurm.md,
 * "Limits"). From the task's /proc/self/cgroup:
 * - cgroup v2 with Slurm's task group (".../job_J/step_S/user/task_T", task/cgroup's
 *   layout): below the step's "user" group, beside the task's own. The task's group
 *   holds this process, and a v2 group with a process cannot pass controllers down;
 *   its parent is the group Slurm enables them in for the tasks. Slurm's limits on the
 *   step and the job hold above the run's group, and an OOM kill in it counts in
 *   theirs (memory.events counts up the tree), so Slurm sees OUT_OF_MEMORY too.
 *   Slurm 22.05 makes these groups root's: a task of root's can use them; a task of
 *   another user is refused (AJ_EUNSUPPORTED, 125) unless the policy allows degraded
 *   limits.
 * - memory, cpu or pids in a cgroup v1 hierarchy (a v1 or a hybrid host, where the v2
 *   hierarchy cannot limit anything): AJ_CGROUP_CALLER, which in v1 is below the
 *   task's own group in each hierarchy (Slurm's .../task_T where task/cgroup made one):
 *   root only, since v1 cannot be delegated; for another user the library refuses, as
 *   above. Naming the v2 path there would put the run's v1 groups at that path in
 *   every v1 hierarchy, outside Slurm's.
 * - anything else (no task group of Slurm's): AJ_CGROUP_CALLER too, whose refusal
 *   says what is missing.
 * Returns the parent for AJ_CGROUP_UNDER (malloc'ed), or NULL for AJ_CGROUP_CALLER. */
static char *task_cgroup_parent(void) {
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (f == NULL) return NULL;
    char *line = NULL, *v2 = NULL;
    size_t cap = 0;
    int v1_limits = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        if (line[n - 1] == '\n') line[n - 1] = '\0';
        char *c1 = strchr(line, ':');
        char *c2 = c1 != NULL ? strchr(c1 + 1, ':') : NULL;
        if (c2 == NULL) continue;
        if (strncmp(line, "0::", 3) == 0) {
            free(v2);
            v2 = strdup(c2 + 1);
            continue;
        }
        *c2 = '\0';
        for (char *tok = strtok(c1 + 1, ","); tok != NULL; tok = strtok(NULL, ","))
            if (strcmp(tok, "memory") == 0 || strcmp(tok, "cpu") == 0 || strcmp(tok, "pids") == 0)
                v1_limits = 1;
    }
    free(line);
    fclose(f);
    char *slash = v2 != NULL ? strrchr(v2, '/') : NULL;
    unsigned long task;
    char rest;
    if (v1_limits || slash == NULL || slash == v2 ||
        sscanf(slash, "/task_%lu%c", &task, &rest) != 1) {
        free(v2);
        return NULL;
    }
    *slash = '\0';
    return v2;
}

int main(int argc, char **argv) {
    char *argv0 = take_env(AJ_SLURM_ENV_ARGV0);
    char *policy_name = take_env(AJ_SLURM_ENV_POLICY);
    char *record_name = take_env(AJ_SLURM_ENV_RECORD);
    char *result_dir = take_env(AJ_SLURM_ENV_RESULT_DIR);
    char *bind = take_env(AJ_SLURM_ENV_BIND_ARGV0);
    if (argv0 == NULL || argv0[0] == '\0' || policy_name == NULL || record_name == NULL ||
        strchr(record_name, '/') != NULL)
        return die(EXIT_SETUP,
                   "not started by spank_agentjail.so (%s, %s and %s are unset); "
                   "the task did not run",
                   AJ_SLURM_ENV_ARGV0, AJ_SLURM_ENV_POLICY, AJ_SLURM_ENV_RECORD);

    /* The record's directory, held open from now on: the command may rename or replace
     * names inside the workspace, but not the directory this descriptor is. */
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == NULL)
        return die(EXIT_SETUP, "cannot read the working directory: %s", strerror(errno));
    const char *dir = result_dir != NULL && result_dir[0] != '\0' ? result_dir : cwd;
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
        return die(EXIT_SETUP, "result directory %s: %s; the task did not run", dir,
                   strerror(errno));
    int wsfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    /* Outside the workspace (result_dir=), the library writes the record (result_path):
     * it refuses a path the sandbox can write or a link on the way, renames into place,
     * and writes an XX record when the sandbox cannot be started. In the workspace (the
     * default), which the sandbox writes and the library therefore refuses, this
     * program writes it itself, into the directory opened above. */
    char *record_path = NULL;
    if (wsfd < 0 || !inside(dirfd, wsfd)) {
        const char *base = dir[0] == '/' ? "" : cwd;
        size_t len = strlen(base) + strlen(dir) + strlen(record_name) + 3;
        record_path = malloc(len);
        if (record_path == NULL) return die(EXIT_SETUP, "out of memory; the task did not run");
        snprintf(record_path, len, "%s%s%s/%s", base, base[0] != '\0' ? "/" : "", dir, record_name);
    }

    aj_error *err = NULL;
    aj_policy *policy = NULL;
    /* The workspace is the working directory, chosen implicitly as the CLI does: a
     * task started in the home directory (or /) is refused, not given all of it. */
    if (aj_policy_load(&policy, policy_name, &err) != AJ_OK) return die_aj(err, "policy");
    for (const char *const *v = slurm_vars; *v != NULL; ++v)
        if (getenv(*v) != NULL && aj_policy_pass_env(policy, *v, &err) != AJ_OK)
            return die_aj(err, *v);
    if (bind != NULL && strcmp(bind, "1") == 0 && argv0[0] == '/' &&
        aj_policy_add_ro(policy, argv0, NULL, &err) != AJ_OK)
        return die_aj(err, "the batch script");

    /* argv[1..] are the task's arguments, NULL-terminated by the kernel. */
    argv[0] = argv0;
    sigset_t sigs;
    forwarded_signals(&sigs);
    int sigfd = -1, rc = 0;
    if (sigprocmask(SIG_BLOCK, &sigs, NULL) != 0 || (sigfd = signalfd(-1, &sigs, SFD_CLOEXEC)) < 0)
        return die(EXIT_SETUP, "signals: %s; the task did not run", strerror(errno));

    workspace_lock(wsfd, LOCK_EX);
    aj_run_options opts = AJ_RUN_OPTIONS_INIT;
    /* The C API runs nothing as root unless the caller names root: a task of root's own
     * job is root because slurmstepd made it so, so name it. Other tasks keep the
     * default (the caller's own identity). */
    if (getuid() == 0) {
        opts.uid = 0;
        opts.gid = (int64_t)getgid();
    }
    char *cgroup_parent = task_cgroup_parent();
    if (cgroup_parent != NULL) {
        opts.cgroup = AJ_CGROUP_UNDER;
        opts.cgroup_parent = cgroup_parent;
    }
    opts.result_path = record_path;
    aj_sandbox *sb = NULL;
    rc = aj_spawn(&sb, policy, (const char *const *)argv, &opts, &err);
    workspace_lock(wsfd, LOCK_UN);
    aj_policy_free(policy);
    free(cgroup_parent);
    if (rc != AJ_OK) return die_aj(err, "the sandbox could not be started; the task did not run");
    (void)argc;

    rc = wait_forwarding(sb, sigfd);
    if (rc < 0) {
        aj_sandbox_free(sb); /* kills the sandbox with everything in it */
        return die(EXIT_SETUP, "waiting for the sandbox: %s", strerror(-rc));
    }
    /* The teardown and the record (a name that comes and goes in the workspace when
     * the record goes there) under the lock, out of the way of other tasks' setups. */
    aj_result *res = NULL;
    workspace_lock(wsfd, LOCK_EX);
    rc = aj_sandbox_wait(&res, sb, &err);
    aj_sandbox_free(sb);
    if (rc != AJ_OK)
        return die_aj(err, record_path != NULL ? "waiting for the sandbox, or writing its record"
                                               : "waiting for the sandbox");

    int status = aj_result_exit_status(res);
    if (record_path != NULL) { /* written by aj_sandbox_wait */
        aj_result_free(res);
        workspace_lock(wsfd, LOCK_UN);
        return status;
    }
    char *record = NULL;
    if (aj_result_json(&record, res, &err) != AJ_OK) {
        aj_result_free(res);
        return die_aj(err, "the result record");
    }
    aj_result_free(res);
    rc = write_record(dirfd, record_name, record);
    workspace_lock(wsfd, LOCK_UN);
    aj_string_free(record);
    if (rc < 0) return die(EXIT_SETUP, "result record %s/%s: %s", dir, record_name, strerror(-rc));
    return status;
}
