// SPDX-License-Identifier: Apache-2.0
// The library's C++ API inside the project (the CLI, the tests, the C API over it):
// load a policy, override it, spawn a sandboxed command, wait for its result. Not
// installed and not exported: libagentjail.so's ABI is the C API alone
// (include/agentjail/agentjail.h), and embedders' C++ header is the header-only
// layer over it (include/agentjail/agentjail.hpp).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace agentjail {
namespace policy {
struct Policy;  // the library's internal policy data (lib/policy/policy.hpp)
}

// What went wrong, in the words a user needs; the kind picks the CLI exit status
// (invalid_input/unsupported/setup/internal -> 125, command_not_found -> 127,
// command_not_executable -> 126).
enum class ErrorKind {
    invalid_input,           // bad policy, bad flag, bad path: fix the input
    unsupported,             // the kernel or host lacks a feature the policy needs
    setup,                   // building the sandbox failed at run time
    command_not_found,       // execve: ENOENT on every candidate
    command_not_executable,  // execve: EACCES, ENOEXEC, ...
    internal,                // a bug in agentjail
};

// Where a run failed, for a caller that acts on it (the C API's aj_error_stage): the
// policy, the plan, the host-side preparation (cgroup, proxy, workspace), the clone and
// its id maps, the sandbox's own construction (mounts, pivot_root...), the command's
// execve, or waiting for the run.
enum class ErrorStage { none, policy, plan, prepare, launch, sandbox, exec, wait };

class Error {
public:
    Error(ErrorKind kind, int code, std::string message)
        : kind_(kind), code_(code), message_(std::move(message)) {}

    ErrorKind kind() const noexcept { return kind_; }
    // errno-style code (0 when there is none).
    int code() const noexcept { return code_; }
    const std::string& message() const noexcept { return message_; }
    ErrorStage stage() const noexcept { return stage_; }
    // Inside the sandbox stage: the step that failed, in words ("pivot_root"); static
    // storage, "" when none.
    const char* step() const noexcept { return step_; }

    // Says where the failure happened; the first (innermost) caller to say it wins.
    Error& at(ErrorStage stage, const char* step = "") {
        if (stage_ == ErrorStage::none) {
            stage_ = stage;
            step_ = step != nullptr ? step : "";
        }
        return *this;
    }

    // Adds context in front: "mount /proc: EPERM" -> "policy x.toml:3:1: mount /proc: EPERM".
    Error& wrap(const std::string& context) {
        message_ = context + ": " + message_;
        return *this;
    }

private:
    ErrorKind kind_;
    int code_;
    std::string message_;
    ErrorStage stage_ = ErrorStage::none;
    const char* step_ = "";
};

// A small carrier with std::expected's member names.
template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
    Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}

    bool has_value() const noexcept { return v_.index() == 0; }
    explicit operator bool() const noexcept { return has_value(); }
    T& value() & { return std::get<0>(v_); }
    const T& value() const& { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    Error& error() & { return std::get<1>(v_); }
    const Error& error() const& { return std::get<1>(v_); }
    Error&& error() && { return std::get<1>(std::move(v_)); }

private:
    std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error) : e_(std::move(error)) {}
    bool has_value() const noexcept { return !e_.has_value(); }
    explicit operator bool() const noexcept { return has_value(); }
    void value() const {}
    Error& error() & { return *e_; }
    const Error& error() const& { return *e_; }
    Error&& error() && { return std::move(*e_); }

private:
    std::optional<Error> e_;
};

// A loaded, merged and validated policy plus the overrides applied to it.
class Policy {
public:
    // A built-in name ("default", "minimal", ...) or a path to a TOML file.
    static Result<Policy> load(const std::string& name_or_path);
    // TOML text; name: what messages call it.
    static Result<Policy> load_text(const std::string& toml, const std::string& name);

    Policy(const Policy&);
    Policy(Policy&&) noexcept;
    Policy& operator=(const Policy&);
    Policy& operator=(Policy&&) noexcept;
    ~Policy();

    // Overrides, as the CLI flags of the same names. dst empty: same path inside.
    Result<void> add_ro(const std::string& src, const std::string& dst = {});
    Result<void> add_rw(const std::string& src, const std::string& dst = {});
    Result<void> add_hide(const std::string& path);
    Result<void> add_tmpfs(const std::string& path, std::uint64_t size_bytes = 0);
    // value empty and pass_through true: take NAME from the caller's environment.
    Result<void> set_env(const std::string& name, const std::string& value);
    Result<void> pass_env(const std::string& name);
    // Nothing of the caller's environment passes (the allow list emptied).
    Result<void> clear_env();
    Result<void> set_workspace(const std::string& dir);
    Result<void> set_hostname(const std::string& name);
    Result<void> set_cwd(const std::string& dir);
    // A [limits] key with its value spelt as in a policy file or on the command line:
    // "memory" "2G", "swap" "0", "cpus" "1.5", "pids" "256", "timeout" "30m",
    // "kill_grace" "5s", "cpu_time" "10m", "nofile" "1024", "fsize" "1G",
    // "tmpfs_size" "512M"; "max" lifts a limit; "allow_degraded" "true" runs with
    // rlimits only where no cgroup can be made (RunResult::degraded says so).
    Result<void> set_limit(const std::string& key, const std::string& value);
    // [workspace]: "direct", "clone" or "overlay" (docs/workspace.md); a path under the
    // workspace made read-only inside (** allowed); one of the policy's protected
    // paths taken out (an error if the policy has no such entry).
    Result<void> set_workspace_mode(const std::string& mode);
    Result<void> add_protect(const std::string& pattern);
    Result<void> remove_protect(const std::string& pattern);
    // The network and the logs, as the flags --net, --allow-host, --deny-host,
    // --net-preset, --secret, --net-log, --seccomp-log (paths absolute or ~/...).
    Result<void> set_net_mode(const std::string& mode);
    Result<void> allow_host(const std::string& pattern);
    Result<void> deny_host(const std::string& pattern);
    Result<void> net_preset(const std::string& name);
    Result<void> add_secret(const std::string& spec);
    Result<void> set_net_log(const std::string& path);
    Result<void> set_seccomp_log(const std::string& path);

    policy::Policy& raw();
    const policy::Policy& raw() const;

private:
    explicit Policy(std::unique_ptr<policy::Policy> p);
    std::unique_ptr<policy::Policy> p_;
};

// Where the command's 0, 1, 2 lead (-1: the caller's own 0, 1, 2). The command never
// holds these descriptors: it gets pipes, or a pty of the sandbox's own where one of
// them is a terminal, and a thread of agentjail copies between them and the caller's
// (the descriptors are duplicated: the caller may close its own after spawn()).
// Where a run's cgroup goes, when a limit needs one (docs/embedding.md).
enum class CgroupPlacement {
    // The CLI's routes: as root under agentjail.slice at the top of a v2 hierarchy; as
    // a user the caller's delegated cgroup (moving the caller into a leaf of it to
    // pass controllers down), its delegated parent, or a systemd user scope.
    automatic,
    // Below the caller's own cgroup, never moving the caller: a scheduler's accounting
    // and limits keep seeing the job. The C API's default.
    caller,
    // Below SpawnOptions::cgroup_parent, never moving the caller.
    under,
};

struct SpawnOptions {
    int stdin_fd = -1;
    int stdout_fd = -1;
    int stderr_fd = -1;
    enum class Terminal {
        automatic,  // a pty when any of the three is a terminal, pipes otherwise
        pipes,      // pipes only: the command sees no terminal
    };
    Terminal terminal = Terminal::automatic;
    // Pass every escape sequence to the terminal. By default the relay drops those
    // that act on the user's machine (OSC 52 clipboard, file:// links, title and
    // colour reports, DCS/APC passthrough).
    bool tty_raw = false;
    // Called during spawn(), before the sandbox starts and before the terminal is
    // touched, with each thing the caller's user must be told although the run goes
    // on (a secret's token that has expired, with what to do); one line each.
    std::function<void(const std::string&)> on_warning;
    // Called during spawn(), once the plan is built and before anything of it is
    // carried out, with the plan as `agentjail explain` prints it and its notes: the
    // plan this run carries out, not a second one built to be shown (the CLI's -v).
    std::function<void(const std::string& plan_text, const std::vector<std::string>& notes)> on_plan;

    // The identity the command runs as (both or neither). Only root may name one
    // other than its own; the command then owns its files as that uid/gid, with no
    // supplementary group, and ~ and HOME are that user's (passwd) unless home says.
    std::optional<uid_t> uid;
    std::optional<gid_t> gid;
    // A root caller without uid/gid is refused unless the policy says
    // [process] allow_root (the C API sets this; the CLI, run by a person, does not).
    bool root_needs_identity = false;
    // The caller's side of the run, which the CLI takes from its own process: the
    // environment the policy's [environment] allow passes names from (NAME=VALUE;
    // nullopt: this process's), the home directory (~, HOME; empty: HOME or passwd),
    // the caller's directory (the workspace when the policy names none, and what
    // relative paths start from; empty: this process's).
    std::optional<std::vector<std::string>> environ;
    std::string home;
    std::string cwd;
    // Descriptors of the caller passed to the command at the same numbers (>= 3).
    std::vector<int> pass_fds;
    CgroupPlacement cgroup = CgroupPlacement::automatic;
    std::string cgroup_parent;  // under: a cgroup path as /proc/self/cgroup shows it
    // Where wait() writes the result record (as `agentjail --result-file`); empty: none.
    std::string result_file;
};

// The command stopped (job control) or went on.
struct JobChange {
    bool stopped = false;  // false: it continued
    int sig = 0;           // the signal that stopped it
    // The user typed the suspend character (^Z) just before: the stop is theirs to
    // act on. A stop the sandbox caused itself never sets this.
    bool by_user = false;
};

// The resource limits a run had (0: none), as the result record reports them.
struct RunLimits {
    std::uint64_t memory_bytes = 0;
    std::uint64_t swap_bytes = 0;  // with a memory limit: 0 means no swap at all
    double cpus = 0;
    std::uint64_t pids = 0;
    double timeout_s = 0;
    double kill_grace_s = 0;
    double cpu_time_s = 0;  // RLIMIT_CPU
    std::uint64_t nofile = 0;
    std::uint64_t fsize_bytes = 0;
};

// What a run did with the workspace (docs/workspace.md).
struct WorkspaceFinding {
    std::string path;    // relative to the workspace
    std::string what;    // e.g. "git config written during the run sets core.fsmonitor"
    std::string action;  // e.g. "renamed to config.agentjail-quarantined, mode 000", "flagged"
};
// Direct mode: each time the host replaced a hidden or protected name during the run
// and the supervisor put the mask or the read-only bind back.
struct WorkspaceReapplied {
    std::string name;    // the host path
    std::string why;     // what the host did: "replaced", "created", "removed", "moved away"
    std::string action;  // "mask" or "read-only bind" re-applied
    std::string when;    // ISO 8601 UTC, when the host change was noticed
    double window_ms = 0;  // from noticing the change to the protection being back
};
struct WorkspaceOutcome {
    std::string mode = "direct";  // "direct", "clone" or "overlay"
    // Clone and overlay modes: where the agent's work is, and the risky-change report.
    std::string run_id;     // "20261202-011500-ab12cd"
    std::string state_dir;  // the run's directory on the host
    std::string branch;     // clone: "agentjail/<run-id>" in the user's repository
    // As in run.json: "ok", "no-changes", "refused" (the sandbox tampered with what
    // agentjail needs; nothing came back), "failed" (agentjail could not finish).
    std::string status;
    std::string message;      // why, when status is not "ok"
    std::size_t flags = 0;    // changes that can run code later (the report's flags)
    std::string report_text;  // for people, every name escaped
    std::string report_json;  // a JSON object (docs/workspace.md)
    // Direct mode: the placeholders made for protected names that did not exist,
    // the guards re-applied after a host-side change (or why the run was stopped when
    // one could not be), and what the check after the run found and did.
    std::vector<std::string> placeholders_made;     // host paths created empty for the run
    std::vector<std::string> placeholders_removed;  // ... and removed after it
    std::vector<std::string> placeholders_kept;     // ... kept (filled in, or not ours), with why
    std::vector<WorkspaceReapplied> reapplied;      // the first 64
    std::uint64_t reapplied_count = 0;              // all of them
    std::string stopped;  // non-empty: a protection could not be re-applied and the run was stopped
    std::vector<WorkspaceFinding> audit;
};

struct RunResult {
    bool exited = false;     // true: exit_code is valid; false: killed by term_signal
    int exit_code = 0;
    int term_signal = 0;
    double wall_time_s = 0;
    bool timed_out = false;             // the wall-clock limit ended the run
    // The run was asked to end (Sandbox::stop: a signal to agentjail) with this
    // signal, and whether what was inside had to be killed after the kill grace.
    int stop_signal = 0;
    bool stop_killed = false;
    std::uint64_t seccomp_denials = 0;  // calls refused or recorded by the filter
    // Resource use, from the sandbox's cgroup (0 where it was not measured; without a
    // cgroup the cpu times and the peak come from getrusage of the reaped children).
    std::uint64_t memory_peak_bytes = 0;
    std::uint64_t oom_kill_count = 0;  // processes the OOM killer ended inside the sandbox
    std::uint64_t pids_peak = 0;
    std::uint64_t pids_max_hits = 0;  // forks refused at the pids limit
    double cpu_user_s = 0;
    double cpu_system_s = 0;
    std::uint64_t cpu_throttled_us = 0;  // time held back by the cpus limit
    std::uint64_t cpu_nr_throttled = 0;  // periods in which it was
    std::string cgroup = "none";         // "v2", "v2-delegated", "v1" or "none"
    std::vector<std::string> layers;     // isolation layers in force ("user-ns", "rlimits"...)
    std::vector<std::string> degraded;   // layers asked for but not in force, with why
    RunLimits limits;
    // Connections through the network proxy: refused (403, SOCKS5 refusal, over the
    // connection limit, malformed) and allowed, as in the --net-log lines.
    std::uint64_t network_denials = 0;
    std::uint64_t network_allowed = 0;
    // Where the cgroup's parent came from: "agentjail.slice" (root), "own-cgroup",
    // "parent-cgroup", "systemd-scope" (a transient scope of the user's systemd
    // manager, named in cgroup_unit); empty without a cgroup.
    std::string cgroup_via;
    std::string cgroup_unit;
    WorkspaceOutcome workspace;
    // Non-empty: agentjail's own work during the run failed (an exception on the
    // supervisor's or the relay's thread) and the sandbox was stopped; the record's
    // status is XX and the CLI exits 125. The caller's process is never terminated.
    std::string internal_error;
};

class Launched;

// A running sandbox. Destroying it before wait() kills the whole sandbox.
class Sandbox {
public:
    static Result<Sandbox> spawn(const Policy& policy, const std::vector<std::string>& argv,
                                 const SpawnOptions& options = {});
    Sandbox(Sandbox&&) noexcept;
    Sandbox& operator=(Sandbox&&) noexcept;
    ~Sandbox();

    // The sandbox's init, as a pid of the caller's pid namespace.
    pid_t pid() const noexcept;
    // A pidfd for the init, to poll beside other events; readable once it exited.
    int pidfd() const noexcept;
    // Delivers sig to the command (through the sandbox's init).
    Result<void> kill(int sig);
    // Ends the run on time: sig to the command now, and everything inside killed
    // once the policy's kill grace ([limits] kill_grace) has passed; a second stop()
    // kills at once. The result says which signal and whether it came to a kill.
    Result<void> stop(int sig);
    // Waits for the command; afterwards nothing of the sandbox is left (and all it
    // wrote has been copied to the caller's descriptors).
    Result<RunResult> wait();

    // Job control, for a caller that runs the sandbox from a terminal (the CLI):
    // job_fd() is readable when next_job_change() has news (-1: none to poll).
    int job_fd() const noexcept;
    std::optional<JobChange> next_job_change();
    // Whether the command runs on a pty of the sandbox's own.
    bool has_terminal() const noexcept;
    // The caller's terminal changed size: the pty follows (SIGWINCH inside).
    void terminal_resized();
    // Before the caller stops itself: every process of the sandbox is stopped, with
    // the user's terminal as it was before the run. false: the sandbox did not
    // confirm the stop (it is exiting).
    bool suspend();
    // After the caller was continued: raw mode again, the size re-read; the guarded
    // names are checked for what the host changed meanwhile, then the sandbox goes on.
    void resume();
    // Only the terminal, around a stop the caller did not choose (SIGSTOP: the
    // sandbox froze itself and thaws once the caller runs again).
    void suspend_terminal();
    void resume_terminal();

private:
    explicit Sandbox(std::unique_ptr<Launched> l);
    std::unique_ptr<Launched> l_;
};

const char* version() noexcept;

}  // namespace agentjail
