/* SPDX-License-Identifier: Apache-2.0 */
/* The public C API of libagentjail: load a policy, override it, spawn a sandboxed
 * command, wait for its result. Plain C11; compiles alone with -pedantic.
 *
 * Conventions (the same for every function):
 * - Functions that can fail return 0 on success or a negative AJ_E* code.
 * - Out-parameters come first; on failure they are left NULL.
 * - The last parameter `aj_error **err` may be NULL. When it is not, it receives a
 *   new error on failure (free it with aj_error_free) and NULL on success. There is
 *   no hidden thread-local error state.
 * - aj_*_free accept NULL.
 * - Strings passed in are copied; the library keeps no pointer to them.
 *
 * Threads: any function may be called from any thread. A handle is not locked: one
 * thread at a time uses a given aj_sandbox or aj_policy; aj_spawn only reads its
 * policy, so threads may spawn from one policy at once while none overrides it.
 * aj_error and aj_result are read-only. A sandbox does not depend on the thread
 * that spawned it.
 *
 * Fork: a handle belongs to the process that made it. In a child of fork(),
 * aj_sandbox_free only forgets the parent's sandbox (no kill, no wait), and
 * aj_sandbox_kill / aj_sandbox_wait on it fail with AJ_EINVAL (errno EPERM).
 *
 * Only the aj_* symbols are exported (libagentjail.so.1). docs/embedding.md has the
 * rules with examples: lifetime, threads, fork, identity, cgroup placement.
 *
 * Versions: the major is the ABI's (the SOVERSION) and changes only with a break; the
 * minor grows with every addition to this header (a function, a run options
 * version), marked "Since X.Y" where it is declared. A caller that may meet an older
 * library checks aj_version() before calling what it added.
 */
#ifndef AGENTJAIL_AGENTJAIL_H
#define AGENTJAIL_AGENTJAIL_H

#include <stddef.h>
#include <stdint.h>

#if defined(AGENTJAIL_BUILDING)
#define AJ_API __attribute__((visibility("default")))
#else
#define AJ_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes (negative returns). */
#define AJ_OK 0
#define AJ_EINVAL (-1)       /* bad policy, bad argument, bad path: fix the input */
#define AJ_EUNSUPPORTED (-2) /* the kernel or host lacks a feature the policy needs */
#define AJ_ESETUP (-3)       /* building the sandbox failed at run time */
#define AJ_ENOTFOUND (-4)    /* the command was not found inside the sandbox */
#define AJ_ENOEXEC (-5)      /* the command was found but could not be executed */
#define AJ_ENOMEM (-6)       /* out of memory */
#define AJ_EINTERNAL (-7)    /* a bug in agentjail */

typedef struct aj_policy aj_policy;
typedef struct aj_sandbox aj_sandbox;
typedef struct aj_result aj_result;
typedef struct aj_error aj_error;

/* The library's version, as numbers (each out-parameter may be NULL). Returns AJ_OK.
 * A caller built against one header may meet a newer library: compare at run time. */
AJ_API int aj_version(int *major, int *minor, int *patch);
/* The same as "X.Y.Z". Static storage: do not free. */
AJ_API const char *aj_version_string(void);

/* ---- errors ---- */

/* Where a failure happened (aj_error_stage). */
typedef enum aj_stage {
    AJ_STAGE_NONE = 0,    /* not in a run: a bad argument, a policy override */
    AJ_STAGE_POLICY = 1,  /* loading or validating the policy */
    AJ_STAGE_PLAN = 2,    /* turning the policy into a plan (paths, identity, network) */
    AJ_STAGE_PREPARE = 3, /* host-side work before clone: cgroup, proxy, workspace, stdio */
    AJ_STAGE_LAUNCH = 4,  /* clone, the id maps, handing the sandbox its sockets */
    AJ_STAGE_SANDBOX = 5, /* the sandbox building itself (mounts, pivot_root...): see aj_error_step */
    AJ_STAGE_EXEC = 6,    /* execve of the command (AJ_ENOTFOUND, AJ_ENOEXEC) */
    AJ_STAGE_WAIT = 7     /* waiting for the run */
} aj_stage;

/* The message, in the words a user needs (policy errors read FILE:LINE:COL: KEY: ...).
 * Owned by err; valid until aj_error_free(err). Returns "" for NULL. */
AJ_API const char *aj_error_message(const aj_error *err);
/* The error's class, the AJ_E* code the function returned (AJ_OK for NULL): what the
 * caller can do about it. */
AJ_API int aj_error_code(const aj_error *err);
/* The errno behind the failure (EPERM, ENOENT...), or 0 when there is none. */
AJ_API int aj_error_errno(const aj_error *err);
/* Where it happened (AJ_STAGE_NONE for NULL). */
AJ_API aj_stage aj_error_stage(const aj_error *err);
/* The stage's name: "none", "policy", "plan", "prepare", "launch", "sandbox", "exec",
 * "wait". Static storage. */
AJ_API const char *aj_stage_name(aj_stage stage);
/* Within AJ_STAGE_SANDBOX and AJ_STAGE_EXEC: the step that failed, in words
 * ("pivot_root", "mounting", "executing the command"); "" otherwise. Owned by err. */
AJ_API const char *aj_error_step(const aj_error *err);
AJ_API void aj_error_free(aj_error *err);

/* ---- policies ---- */

/* Loads a built-in policy ("default", "minimal", ...) or a TOML file by path.
 * *out: a new policy owned by the caller (aj_policy_free). */
AJ_API int aj_policy_load(aj_policy **out, const char *name_or_path, aj_error **err);
/* Loads a policy from TOML text (it may `extends` a built-in, or a file by absolute
 * path). name: what messages call it ("job.toml:3:1: ..."); NULL: "<text>". */
AJ_API int aj_policy_load_text(aj_policy **out, const char *toml, const char *name, aj_error **err);

/* Overrides, as the CLI flags of the same names. Paths are absolute or start with
 * "~" (the caller's home) or "{workspace}"; relative paths are AJ_EINVAL.
 * dst NULL: the same path inside the sandbox. */
AJ_API int aj_policy_add_ro(aj_policy *policy, const char *src, const char *dst, aj_error **err);
AJ_API int aj_policy_add_rw(aj_policy *policy, const char *src, const char *dst, aj_error **err);
/* Hides a path or glob; a hidden path stays hidden whatever else binds it. */
AJ_API int aj_policy_add_hide(aj_policy *policy, const char *path, aj_error **err);
/* Lets the command connect to the Unix socket at path (its path inside, no links on
 * the way); others in bound directories are refused unless a process inside listens
 * on them (docs/seccomp.md, "The socket gate"). */
AJ_API int aj_policy_add_socket(aj_policy *policy, const char *path, aj_error **err);
/* A fresh tmpfs at path; size 0: the built-in default size. */
AJ_API int aj_policy_add_tmpfs(aj_policy *policy, const char *path, uint64_t size, aj_error **err);
/* Sets NAME=VALUE in the command's environment. */
AJ_API int aj_policy_set_env(aj_policy *policy, const char *name, const char *value,
                             aj_error **err);
/* Passes the caller's NAME by exact name, even when it looks like a secret. */
AJ_API int aj_policy_pass_env(aj_policy *policy, const char *name, aj_error **err);
/* Passes nothing from the caller's environment: the command gets HOME, a default
 * PATH, the policy's [environment] set, and what aj_policy_set_env and
 * aj_policy_pass_env add afterwards. */
AJ_API int aj_policy_clear_env(aj_policy *policy, aj_error **err);
/* Sets the workspace explicitly (as -C does). */
AJ_API int aj_policy_set_workspace(aj_policy *policy, const char *dir, aj_error **err);
AJ_API int aj_policy_set_hostname(aj_policy *policy, const char *name, aj_error **err);
/* The command's working directory inside the sandbox. */
AJ_API int aj_policy_set_cwd(aj_policy *policy, const char *dir, aj_error **err);
/* Sets a resource limit, with the key and the spelling of a policy file's [limits]
 * and of the CLI flags: ("memory", "2G"), ("swap", "0"), ("cpus", "1.5"),
 * ("pids", "256"), ("timeout", "30m"), ("kill_grace", "5s"), ("cpu_time", "10m"),
 * ("nofile", "1024"), ("fsize", "1G"), ("tmpfs_size", "512M"); "max" lifts a limit.
 * ("allow_degraded", "true") runs with rlimits only where no cgroup can be made.
 * An unknown key or a bad value is AJ_EINVAL with a message that names it. */
AJ_API int aj_policy_set_limit(aj_policy *policy, const char *key, const char *value,
                               aj_error **err);
/* [workspace] mode: "direct", "clone" or "overlay" (docs/workspace.md). */
AJ_API int aj_policy_set_workspace_mode(aj_policy *policy, const char *mode, aj_error **err);
/* [workspace] view, for a writable workspace in direct mode: "fuse" (the default:
 * served by agentjail, judged per name) or "mounts" (masks and read-only binds over
 * the names found at start) (docs/workspace.md). */
AJ_API int aj_policy_set_workspace_view(aj_policy *policy, const char *view, aj_error **err);
/* A path under the workspace made read-only inside (** allowed), and one of the
 * policy's protected paths taken out, as --protect and --unprotect. */
AJ_API int aj_policy_add_protect(aj_policy *policy, const char *pattern, aj_error **err);
AJ_API int aj_policy_remove_protect(aj_policy *policy, const char *pattern, aj_error **err);
/* The network, as --net, --allow-host, --deny-host, --net-preset, --secret and
 * --net-log (docs/network.md): mode "none", "proxy" or "host"; a host pattern
 * ("*.npmjs.org", "github.com:22"); a preset's name; a secret's
 * "NAME=SOURCE[@HOSTS]" (a file source's path absolute); the proxy's log (absolute
 * or ~/...). */
AJ_API int aj_policy_set_net_mode(aj_policy *policy, const char *mode, aj_error **err);
AJ_API int aj_policy_allow_host(aj_policy *policy, const char *pattern, aj_error **err);
AJ_API int aj_policy_deny_host(aj_policy *policy, const char *pattern, aj_error **err);
AJ_API int aj_policy_net_preset(aj_policy *policy, const char *name, aj_error **err);
AJ_API int aj_policy_add_secret(aj_policy *policy, const char *spec, aj_error **err);
AJ_API int aj_policy_set_net_log(aj_policy *policy, const char *path, aj_error **err);
/* The seccomp denial log, as --seccomp-log (absolute or ~/...). */
AJ_API int aj_policy_set_seccomp_log(aj_policy *policy, const char *path, aj_error **err);
AJ_API void aj_policy_free(aj_policy *policy);

/* ---- running ---- */

/* Versioned options: initialise with aj_run_options_init (or, from C, the
 * AJ_RUN_OPTIONS_INIT macro). New fields are only ever added at the end, with a new
 * AJ_RUN_OPTIONS_VERSION; a library older than the caller's header refuses a version
 * it does not know, so a field is never silently ignored. */
#define AJ_RUN_OPTIONS_VERSION 4
/* aj_run_options.terminal */
#define AJ_TERMINAL_AUTO 0  /* a pty of the sandbox's own when one of the fds is a terminal */
#define AJ_TERMINAL_PIPES 1 /* pipes only: the command sees no terminal */
/* aj_run_options.cgroup: where the run's cgroup goes when a limit needs one
 * (docs/embedding.md). Without such a limit the run makes no cgroup and stays in the
 * caller's. The caller is never moved by the first two. */
#define AJ_CGROUP_CALLER 0 /* below the caller's own cgroup */
#define AJ_CGROUP_UNDER 1  /* below cgroup_parent */
#define AJ_CGROUP_AUTO 2   /* the CLI's routes: agentjail.slice as root (cgroup v2); as a
                              user a delegated cgroup (moving the caller into a leaf of
                              it) or a systemd user scope: outside the caller's cgroup */
/* aj_run_options.log's levels */
#define AJ_LOG_WARNING 1 /* the user must be told, the run goes on (an expired token) */
#define AJ_LOG_NOTE 2    /* what the plan decided and why (the CLI's -v) */
#define AJ_LOG_PLAN 3    /* the whole plan, as `agentjail explain` prints it */
typedef struct aj_run_options {
    unsigned int version;
    /* Where the command's 0, 1, 2 lead; -1: the caller's own 0, 1, 2. The command
     * never holds these descriptors: it gets pipes (or a pty) that a thread of the
     * library relays. The library duplicates them: the caller may close its own
     * after aj_spawn. */
    int stdin_fd;
    int stdout_fd;
    int stderr_fd;
    /* Since version 2. */
    int terminal; /* AJ_TERMINAL_AUTO or AJ_TERMINAL_PIPES */
    int tty_raw;  /* nonzero: pass every escape sequence to the terminal (no filter) */
    /* Since version 3. Pointers are read during aj_spawn only (copied). */
    /* The identity the command runs as; -1: the caller's. Both or neither. Only root
     * may name another; the command then has no supplementary group, and ~ and HOME
     * are that user's home from passwd (or `home`). A caller that is root must name
     * one (0/0 for root) unless the policy says [process] allow_root = true: the
     * command never runs as host root by accident. */
    int64_t uid;
    int64_t gid;
    /* NAME=VALUE strings, NULL-terminated: the environment the policy's allow list
     * passes names from. NULL: this process's environ. */
    const char *const *envp;
    /* The home directory (~ in paths, HOME inside). NULL: HOME, or passwd. */
    const char *home;
    /* The caller's directory: the workspace when the policy names none, and where
     * relative paths start. Absolute. NULL: this process's working directory. */
    const char *cwd;
    /* Descriptors (>= 3, open) the command gets at the same numbers. */
    const int *pass_fds;
    size_t n_pass_fds;
    /* AJ_CGROUP_CALLER (default), AJ_CGROUP_UNDER or AJ_CGROUP_AUTO. */
    int cgroup;
    /* AJ_CGROUP_UNDER: a cgroup path as /proc/self/cgroup shows it
     * ("/system.slice/job-42"); the run's group is made below it. */
    const char *cgroup_parent;
    /* Where aj_sandbox_wait writes the result record (JSON, docs/limits.md), renamed
     * into place; absolute, never where the sandbox can write; checked by aj_spawn.
     * When aj_spawn itself fails after that check, an XX record is written there. A
     * record that cannot be written is aj_sandbox_wait's error; a second call then
     * answers the result. NULL: none. */
    const char *result_path;
    /* Called during aj_spawn, on the calling thread, with the warnings the user must
     * be told, the plan's notes and the plan (AJ_LOG_*). message is valid during the
     * call only. NULL: nothing is reported. */
    void (*log)(void *payload, int level, const char *message);
    void *log_payload;
    /* Since version 4 (library 1.4). Nonzero: filter what the command writes to stdout and stderr
     * when they are pipes too, as the terminal is (OSC 52, file:// links, reports: see
     * docs/terminal.md), for a caller whose pipe ends on a terminal. 0 (default): a
     * pipe carries data, unchanged. Cannot be combined with tty_raw. */
    int filter_pipes;
} aj_run_options;
#define AJ_RUN_OPTIONS_INIT \
    { AJ_RUN_OPTIONS_VERSION, -1, -1, -1, AJ_TERMINAL_AUTO, 0, -1, -1, NULL, NULL, NULL, NULL, 0, \
      AJ_CGROUP_CALLER, NULL, NULL, NULL, NULL, 0 }
/* Fills opts with the defaults of `version` (pass AJ_RUN_OPTIONS_VERSION): the same
 * as AJ_RUN_OPTIONS_INIT, for callers that cannot use a macro (ctypes, cffi, other
 * languages). AJ_EINVAL for NULL or a version this library does not know. */
AJ_API int aj_run_options_init(aj_run_options *opts, unsigned int version);

/* Starts argv (NULL-terminated, argv[0] looked up in the sandbox's PATH) in a new
 * sandbox built from policy (not modified; may be freed afterwards). opts may be NULL.
 * Returns once the command has been executed, or fails with AJ_ENOTFOUND /
 * AJ_ENOEXEC when it could not be. *out: owned by the caller (aj_sandbox_free). */
AJ_API int aj_spawn(aj_sandbox **out, const aj_policy *policy, const char *const *argv,
                    const aj_run_options *opts, aj_error **err);
/* The sandbox's init as a pid of the caller's pid namespace (-1 for NULL). */
AJ_API int aj_sandbox_pid(const aj_sandbox *sb);
/* A pidfd for the init, owned by sb, readable once the sandbox exited (-1 for NULL). */
AJ_API int aj_sandbox_pidfd(const aj_sandbox *sb);
/* Delivers sig to the command. */
AJ_API int aj_sandbox_kill(aj_sandbox *sb, int sig, aj_error **err);
/* Ends the run on time: sig to the command now, everything inside killed once the
 * policy's kill grace ([limits] kill_grace, default 5s) has passed; a second call
 * kills at once. The result's exit status is then 128+sig (the record's "stop" says
 * whether it came to a kill). Since 1.3. */
AJ_API int aj_sandbox_stop(aj_sandbox *sb, int sig, aj_error **err);
/* Waits for the command to end. *out: owned by the caller (aj_result_free). */
AJ_API int aj_sandbox_wait(aj_result **out, aj_sandbox *sb, aj_error **err);
/* Frees sb; a sandbox still running is killed, with everything inside it. In a
 * child of fork() it only forgets the parent's sandbox, which runs on. */
AJ_API void aj_sandbox_free(aj_sandbox *sb);

/* 1 when the command exited (see aj_result_exit_code), 0 when a signal killed it. */
AJ_API int aj_result_exited(const aj_result *res);
AJ_API int aj_result_exit_code(const aj_result *res);
/* The signal that killed the command, or 0. */
AJ_API int aj_result_signal(const aj_result *res);
/* Seconds from spawn to exit. */
AJ_API double aj_result_wall_time(const aj_result *res);
/* 1 when the wall-clock limit ended the run, else 0. */
AJ_API int aj_result_timed_out(const aj_result *res);
/* agentjail's exit status for the run, the one the CLI exits with and the result
 * record's "exit_status": 124 when the policy's timeout ended it (status TO), 137 when
 * the memory limit's OOM killer did (ML), 125 when agentjail's own supervision failed
 * (XX), 128+N when aj_sandbox_stop(N) ended it, else the command's own: its exit
 * code, or 128+N for signal N. 125 for NULL.
 * Since 1.2. */
AJ_API int aj_result_exit_status(const aj_result *res);

/* Counters of a run, read with aj_result_stat. Times are in microseconds. */
typedef enum aj_stat {
    AJ_STAT_MEMORY_PEAK_BYTES = 0,
    AJ_STAT_OOM_KILLS = 1,        /* processes the OOM killer ended inside */
    AJ_STAT_PIDS_PEAK = 2,
    AJ_STAT_PIDS_MAX_HITS = 3,    /* forks refused at the pids limit */
    AJ_STAT_CPU_USER_US = 4,
    AJ_STAT_CPU_SYSTEM_US = 5,
    AJ_STAT_CPU_THROTTLED_US = 6, /* time held back by the cpus limit */
    AJ_STAT_SECCOMP_DENIALS = 7,
    AJ_STAT_NETWORK_DENIALS = 8,
    AJ_STAT_NETWORK_ALLOWED = 9
} aj_stat;
/* *out: the counter (0 where it was not measured). AJ_EINVAL for an unknown stat. */
AJ_API int aj_result_stat(uint64_t *out, const aj_result *res, aj_stat stat, aj_error **err);
/* The result record as one JSON object on one line, as `agentjail --json` prints it
 * writes (status OK/RE/SG/TO/ML/PL, times, memory, limits, layers, denials).
 * *out: a NUL-terminated string owned by the caller (aj_string_free). */
AJ_API int aj_result_json(char **out, const aj_result *res, aj_error **err);
AJ_API void aj_string_free(char *s);
AJ_API void aj_result_free(aj_result *res);

#ifdef __cplusplus
}
#endif

#endif /* AGENTJAIL_AGENTJAIL_H */
