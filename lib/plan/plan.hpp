// SPDX-License-Identifier: Apache-2.0
// The Plan: every step of a launch as plain data, built from a Policy, a command
// and facts about the host. `agentjail explain` prints it; launch only walks it.
#pragma once

#include "netrules/settings.hpp"
#include "plan/limits.hpp"
#include "policy/policy.hpp"
#include "seccomp/seccomp.hpp"
#include "sys/host_file.hpp"
#include "sys/scan.hpp"
#include "plan/view_rules.hpp"

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace agentjail::plan {

// What the planner needs to know about the caller; gathered once, injectable in tests.
struct HostFacts {
    uid_t uid = 0;
    gid_t gid = 0;
    std::string user;                  // login name (for USER/LOGNAME)
    std::string home;                  // the caller's home directory, canonical
    std::string cwd;                   // the caller's working directory, canonical
    std::vector<std::string> environ;  // NAME=VALUE of the caller
    // The caller's hard rlimits (RLIMIT_NOFILE, _FSIZE, _CPU), by resource; a limit
    // is capped at these, since nobody in the sandbox may raise them. Empty in tests.
    std::vector<std::pair<int, std::uint64_t>> rlimit_hard;
    // The launcher runs the command as uid/gid above rather than as itself (a root
    // embedder naming the job's identity): the sandbox switches to them before it
    // builds its root, with no supplementary group (run_as()).
    bool run_as = false;
    // The run id a clone or overlay run takes: the plan names the run's state
    // directory with it. Empty (as current() leaves it): build() draws one
    // (sys::new_run_id()) for a clone or overlay plan only.
    std::string run_id;
    // The kernel's Landlock ABI (1 and up), or -errno from asking it: -ENOSYS not
    // built in, -EOPNOTSUPP built in but not enabled. 0: not asked (tests' facts).
    long landlock_abi = 0;
    // A seccomp filter this process runs under holds the one notification listener
    // the kernel allows (sys::seccomp_listener_taken: WSL2's init).
    bool seccomp_listener_taken = false;

    static Result<HostFacts> current();
    // The facts of a run as uid/gid, started by this process: the user's name and home
    // from passwd unless home is given. Only root may name an identity not its own.
    Result<void> run_as_identity(uid_t uid, gid_t gid, const std::string& home);
};

enum class MountKind {
    bind,       // src (host, canonical) -> dst, recursive; read_only decides rw
    tmpfs,      // a fresh tmpfs at dst (size_bytes, mode)
    proc,       // a fresh procfs of the sandbox's pid namespace
    devpts,     // a new devpts instance (own ptmx)
    symlink,    // dst -> src (link text), e.g. /bin -> usr/bin
    mask_dir,   // an empty, read-only, mode-000 tmpfs over dst
    mask_file,  // an empty mode-000 file bound read-only over dst
    readonly,   // dst, already inside the sandbox (e.g. /proc/sys), bound over itself read-only
    // An overlayfs at dst: src (host, canonical) is the lower layer, seen but never
    // written; the writes go to upper, beside work (both in the run's state directory,
    // set by lib/workspace when the run starts: empty in a plan that was only built).
    overlay,
    // The workspace served through FUSE at dst by the supervisor from src (host,
    // canonical), each name judged by MountOp::view_rules as the sandbox asks for it
    // ([workspace] view = "fuse", launch/view_server.hpp).
    view,
};

struct MountOp {
    MountKind kind = MountKind::bind;
    std::string src;
    std::string dst;         // absolute, inside the sandbox
    bool read_only = true;
    bool is_dir = true;      // bind: what kind of mount point to create
    std::uint64_t size_bytes = 0;  // tmpfs
    unsigned mode = 0755;          // tmpfs root mode
    std::string upper;             // overlay: the upper layer's directory (host)
    std::string work;              // overlay: its work directory, on the same filesystem
    std::string why;         // origin, e.g. "default.toml:12:5 (filesystem.ro[0])"
    // mask_file: what the file shows instead of nothing (a project .env's view, each
    // value a placeholder: lib/plan/dotenv.cc); empty: an empty mode-000 file.
    std::string text;
    // bind: src does not exist at plan time; the launcher creates it (see
    // Guard::placeholder) before it clones the sources, and removes it after.
    bool placeholder = false;
    // The mount point lies inside a bind, an overlay or /proc: it is the host's (or
    // the kernel's) name, so the launcher must find it there and never create it.
    bool in_host_dir = false;
    // A directory bound over itself only so it cannot be renamed (the directories
    // above a hidden or protected name): one gone from the host since the plan looked
    // has nothing left to keep, and is skipped, by the plan and by the launcher.
    bool lock_only = false;
    // view: what the view hides, keeps read-only and shows instead.
    std::shared_ptr<const view::Rules> view_rules;
};

// A name in a host directory the sandbox sees that the plan masks (hidden) or binds
// read-only over itself (protected). The kernel drops a mount when its name is
// replaced on the host (an editor's atomic save, `git config`, `sed -i`), so the
// supervisor watches each one for the run and re-applies it, or stops the run.
struct Guard {
    enum class Kind { hidden, protected_ro };
    Kind kind = Kind::hidden;
    std::string host;    // canonical host path of the name
    std::string inside;  // the same name inside the sandbox
    bool is_dir = false;
    dev_t dev = 0;  // identity at plan time; 0/0 for a placeholder
    ino_t ino = 0;
    // The name did not exist: the launcher creates an empty file or directory there
    // before the run (so the read-only bind has a mount point) and removes it after,
    // if it is still the one it made.
    bool placeholder = false;
    // A placeholder for this name that is not a directory is a socket file with no
    // listener (mknod S_IFSOCK): git lists no socket (no `git status`, no `git add
    // -A`), reading one fails at once (ENXIO, never blocking), and it costs a file's
    // inode where a directory costs a directory's. Below a .git directory, where git
    // reads the name itself, it is an empty regular file. (A directory's name, one
    // with files below it, is a directory either way.)
    bool socket = false;
    std::string pattern;  // the rule that matched, as written
    std::string why;      // its origin
    std::string link_of;  // a hard link: the hidden or protected name it shares an inode with
};

// Landlock, the second wall behind the mounts (lib/plan/landlock.cc, docs/landlock.md).
// The command restricts itself to these rules on the final tree, after its rlimits and
// before the seccomp filter, then proves the kernel enforces them (probe_path).
struct Landlock {
    policy::LandlockMode mode = policy::LandlockMode::off;
    std::string origin;  // the policy line that chose the mode
    long abi = 0;        // HostFacts::landlock_abi
    bool apply = false;  // false: mode off, or missing says why not
    std::string missing;
    std::uint64_t handled_fs = 0;  // sys::landlock::fs_rights(abi)
    std::uint64_t scoped = 0;      // sys::landlock::scopes(abi)
    struct Rule {
        std::string path;  // inside the sandbox
        std::uint64_t access = 0;
        std::string why;
    };
    std::vector<Rule> rules;
    // What the command makes right after the restriction, to prove it holds; Landlock
    // refuses it with EACCES, and anything else (removed again if it was made) means
    // the rules are not in force, or could not be shown to be. Either a FIFO in /dev,
    // the sandbox's tmpfs that the command's own uid owns and that the rules keep
    // free of new names (probe_fifo), or else a character device in a world-writable
    // tmpfs, which without Landlock the missing CAP_MKNOD refuses with EPERM. ""
    // when the plan has neither.
    std::string probe_path;
    bool probe_fifo = false;
    // "a FIFO at /dev/.agentjail-landlock-probe": the probe in words, as explain and
    // the launch's messages name it.
    std::string probe_what() const;
};

// Something a run makes on the host before the sandbox is built. The planner only
// reads the host (through plan::HostView, which answers for these as if made) and
// lists them; lib/run carries them out in order (run/host_actions.cc) and
// `explain` shows them, so the plan explain prints is the one a run carries out.
struct HostAction {
    enum class Kind {
        // The agent's state directory `path`, <state home>/agentjail/NAME: what is
        // missing of the state home is made, the last two names without following a
        // link, the caller's own and closed to others (sys::open_own_state_dir).
        state_dir,
        // An empty directory (is_dir) or file at `path` below the state directory
        // (made by the state_dir action before it), every name below it opened
        // without following a link; whatever of another kind is in the way goes.
        mount_point,
        // `path`, directly in the state directory, replaced by `text` (mode 0600).
        file,
        // The per-user key of stable secret placeholders at `path`, made from the
        // 32 bytes in `text` unless another run made it meanwhile (its key then
        // serves the next runs; this run keeps the placeholders its plan has).
        // The bytes are never shown, and are wiped once the key is written.
        placeholder_key,
    };
    Kind kind = Kind::state_dir;
    std::string path;
    std::string base;  // state_dir, placeholder_key: the state home `path` lies under
    bool is_dir = false;
    std::string text;
    std::string why;  // what it is for, as explain shows it
};

// A resource limit applied to the command with prlimit before execve.
struct Rlimit {
    int resource = 0;  // RLIMIT_*
    std::uint64_t soft = 0;
    std::uint64_t hard = 0;  // RLIM_INFINITY allowed
    std::string why;
};

struct Plan {
    std::string policy_name;
    std::vector<std::string> layers;
    // Why this policy: "" when named (--policy, the API), or how the CLI chose it
    // ("the command's name, claude") for an agent preset.
    std::string policy_chosen_by;

    // [agent] as planned (lib/plan/agent.cc): the agent's name, its persistent state
    // directory (host path, bound read-write at the same path; "" when none), and the
    // git identity given to it ("Name <email>", "" when none). state_dir also scopes
    // the stable secret placeholders (lib/plan/placeholder.cc).
    std::string agent;
    std::string state_dir;
    std::string git_identity;
    // What the run makes on the host before the launch, in order (see HostAction).
    std::vector<HostAction> host_actions;

    std::vector<std::string> argv;
    // Absolute paths to try for argv[0], in order (a PATH search done here, with the
    // sandbox's PATH, so the child needs no allocation to find the command).
    std::vector<std::string> exec_candidates;
    std::vector<std::string> env;  // NAME=VALUE, what the command gets

    uid_t uid = 0;  // outside == inside: files written keep their owner
    gid_t gid = 0;
    std::string uid_map;  // "1000 1000 1\n"
    // HostFacts::run_as: the sandbox sets uid/gid itself (after the maps, before its
    // root), and setgroups stays allowed for it to drop every supplementary group.
    bool set_ids = false;
    // Descriptors of the caller the command gets at the same numbers (>= 3).
    std::vector<int> pass_fds;
    std::string gid_map;

    // CLONE_NEW* flags.
    std::uint64_t clone_flags = 0;
    std::string hostname;
    std::string workspace;  // empty when none
    // Started in a subdirectory of a git repository without -C: that directory (the
    // workspace is the repository's top, the command starts here); empty otherwise.
    std::string started_in;
    // [workspace] mode. In clone and overlay mode the sandbox sees the workspace at
    // its own path, but what is mounted there is the run's clone or overlay, made by
    // the launcher (lib/workspace), not the user's directory.
    policy::WorkspaceMode workspace_mode = policy::WorkspaceMode::direct;
    // Clone and overlay modes: the run's id and state directory (the runs root, its
    // existing part resolved, then the id). The plan says what is mounted from there
    // (the clone, the overlay's upper and work layers); lib/workspace makes exactly
    // that, and records this plan there (plan.json). Empty in direct mode.
    std::string run_id;
    std::string run_dir;
    std::string home;       // HOME inside
    std::string cwd;        // inside, absolute

    // In order: a mount point's parent mount always comes first; masks come last.
    std::vector<MountOp> mounts;
    bool die_with_parent = true;
    // Every hidden or protected name under a bound host directory (see Guard).
    std::vector<Guard> guards;
    // With [workspace] view = "fuse": those below the workspace, which the view judges
    // by their rules instead (nothing watched, no placeholder made); explain lists them.
    std::vector<Guard> view_guards;

    // Applied in the command before execve (RLIMIT_NOFILE, RLIMIT_FSIZE, RLIMIT_CORE...).
    std::vector<Rlimit> rlimits;
    // Wall clock: after timeout_s the supervisor sends SIGTERM to every process of the
    // sandbox, then SIGKILL after kill_grace_s. 0: no limit.
    double timeout_s = 0;
    double kill_grace_s = 5;
    // The launcher's wait for the sandbox's setup (from clone to the command's
    // execve): past it the sandbox is killed and the launch fails (limits.setup_timeout).
    double setup_timeout_s = 60;

    // The resolved [limits]: the cgroup's memory, swap, cpus and pids (the caller of
    // launch makes the cgroup from these), and what rlimits/timeout_s above came from.
    limits::Settings limits;

    // The compiled system-call filter (null: none), loaded last before execve, and
    // where refused calls are logged as JSON lines (empty: counted only).
    std::shared_ptr<const seccomp::Program> seccomp;
    std::string seccomp_log;
    // Why the filter is the one without a listener (seccomp::compile_without_listener:
    // HostFacts::seccomp_listener_taken); "" for the usual one.
    std::string seccomp_without_listener;
    // The socket gate's allowed Unix sockets ([filesystem] sockets), paths inside.
    std::vector<std::string> sockets;
    // What a file agentjail writes on the host (the logs, the result record) must
    // stay clear of: every read-write bind's source, unless [log] allow_in_sandbox.
    sys::HostFileRules host_files;
    // The plan's walk of the workspace (null when no rule needed one): direct mode's
    // check after the run reads again only the directories changed since it began.
    std::shared_ptr<const sys::Scan> workspace_scan;
    // Where the walk is kept from one run to the next, so that the next plan reads
    // again only the directories changed since (sys::ScanOptions::before):
    // <base>/agentjail/scans/<name>, written by the run at its end, hidden inside.
    // Empty name: not kept (no state home, or root with another user's HOME). The
    // plan's walk started from it when workspace_scan->reused > 0.
    struct KeptScan {
        std::string base;  // the state home
        std::string name;  // project_key() of the workspace
    } kept_scan;
    // [isolation] landlock as planned.
    Landlock landlock;
    // false: the sandbox's user namespace gets user.max_user_namespaces = 0, a second
    // lock (besides the filter) on nested user namespaces (CAP-04).
    bool allow_nested_userns = false;

    // Network proxy mode: the init opens a listening TCP socket on 127.0.0.1:proxy_port
    // inside the sandbox's network namespace and hands it to the supervisor, which
    // serves it from the host's network. 0: no proxy socket.
    std::uint16_t proxy_port = 0;
    // Published ports (--publish, [network] publish): the host's 127.0.0.1:host_port
    // relayed to 127.0.0.1:port inside; the init then serves sockets on request.
    std::vector<net::PublishPort> publish;

    // [network] as planned (lib/plan/network.cc): the mode, and in proxy mode what
    // the proxy enforces (null otherwise). Host mode leaves CLONE_NEWNET out.
    policy::NetMode net_mode = policy::NetMode::none;
    std::shared_ptr<const net::Settings> net;

    // Name patterns (the policy's environment deny list) whose values explain
    // shows as <set> instead of printing them.
    std::vector<std::string> env_redact;

    // Things a user should know: skipped optional paths, hidden paths not present.
    std::vector<std::string> notes;
    // What the user must be told even without -v, and the run still goes on (a
    // secret's token that has expired); the CLI says each on stderr before the run.
    std::vector<std::string> warnings;
};

// Builds the plan. Every user-visible failure (a missing required path, a bad
// workspace, a cwd outside the root) surfaces here, naming the policy line.
Result<Plan> build(const policy::Policy& policy, const std::vector<std::string>& argv,
                   const HostFacts& host);

// Human-readable and JSON forms, for `agentjail explain`.
std::string to_text(const Plan& plan);
std::string to_json(const Plan& plan);

}  // namespace agentjail::plan
